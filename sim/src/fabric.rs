//! The fabric between the board's ERNIC and the host, as named parts: what the simulated
//! clock adds between a request leaving the ERNIC model and its reply arriving at it.
//!
//! The engine's cycles (the RTL, the ERNIC model's WQE fetch and request read) are simulated;
//! the coprocessor's service is measured (a bridge) or modelled (`--service-ns`); the rest of
//! a round trip is this model: each leg's Ethernet MAC and PCS, FEC, serialization, cable and
//! switch, and the host NIC's work on each side of the host's memory. Each part carries its
//! value and where the value comes from ([`Source`]); docs/firmware.md tabulates them.
//!
//! Two parts — the host NIC's receive path (into host memory) and its send path (from the
//! host's doorbell) — have no published figure for the reference's ConnectX-7. They are
//! *calibrated*: they share what is left of the reference's measured round trip (2.305 µs
//! median, FPGA → CPU echo over RoCE v2, SPEC §9) once the other parts, the engine's own
//! cycles and the default in-simulation service are taken out. So with the defaults the model
//! reproduces the reference by construction; what it predicts is the change a different
//! fabric makes (a switch, a longer cable, no FEC, a slower link), part by part.
//!
//! The simulation applies the model as one latency per leg, half the round trip each (the
//! ERNIC model delays both directions alike); the parts say where that time goes.

use backline_regmap as rm;

/// The reference's measured FPGA → CPU echo round trip, ns (median, SPEC §9).
pub const REFERENCE_RTT_NS: u64 = 2305;

/// The in-simulation responder's default service, ns (`--service-ns`).
pub const DEFAULT_SERVICE_NS: u64 = 200;

/// Bytes of one request or reply on the wire at the defaults: Ethernet header 14, IPv4 20,
/// UDP 8, BTH 12, RETH 16, the 32-byte message image (16 payload + 16 header), ICRC 4,
/// FCS 4, plus preamble 8 and the minimum inter-packet gap 12.
pub const FRAME_WIRE_BYTES: u64 = 14 + 20 + 8 + 12 + 16 + 32 + 4 + 4 + 8 + 12;

/// Where a part's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Arithmetic from a physical quantity (bytes at the line rate, metres at the speed of
    /// signals in the cable).
    Physics,
    /// A stated estimate, with the reasoning in docs/firmware.md (no published figure for the
    /// reference's parts).
    Estimate,
    /// Set so that the default model matches the reference's measured round trip.
    Calibrated,
    /// Given on the command line.
    Flag,
}

impl Source {
    /// Its name in the summary and the JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Source::Physics => "physics",
            Source::Estimate => "estimate",
            Source::Calibrated => "calibrated",
            Source::Flag => "flag",
        }
    }
}

/// Which way a part carries the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    /// The request, board → host.
    Request,
    /// The reply, host → board.
    Reply,
}

impl Leg {
    /// Its name in the summary and the JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Leg::Request => "request",
            Leg::Reply => "reply",
        }
    }
}

/// One part of the fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// What it is.
    pub name: &'static str,
    /// Which leg.
    pub leg: Leg,
    /// Its latency, ns.
    pub ns: u64,
    /// Where the value comes from.
    pub source: Source,
}

/// Forward error correction on the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fec {
    /// None (a short link that needs none).
    None,
    /// RS(528,514), IEEE 802.3 clause 91 (what 100GBASE-CR4 links use).
    Rs528,
}

/// The settings a user changes (`backline sim` flags); [`FabricSettings::REFERENCE`] is the
/// reference board's link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FabricSettings {
    /// Line rate, Gb/s (10, 25, 50 or 100).
    pub link_gbps: u32,
    /// Cable length, m (each way), 0–1000.
    pub cable_m: f64,
    /// A switch's latency each way, ns (0: a direct cable), at most 100 µs.
    pub switch_ns: u64,
    /// Forward error correction.
    pub fec: Fec,
    /// The host NIC's receive and send paths each, ns, instead of the calibrated values.
    pub host_nic_ns: Option<u64>,
}

impl FabricSettings {
    /// The reference's link: 100 Gb/s, a 1 m direct-attach cable, RS-FEC, no switch.
    pub const REFERENCE: FabricSettings = FabricSettings {
        link_gbps: 100,
        cable_m: 1.0,
        switch_ns: 0,
        fec: Fec::Rs528,
        host_nic_ns: None,
    };
}

/// A setting the model cannot take.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FabricError {
    /// Out of its range.
    #[error("--{flag} {value}: {range}")]
    Range {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What it takes.
        range: &'static str,
    },
}

/// The MAC, PCS and transceiver of one end, one way (Versal MRMAC, cut-through).
const MAC_NS: u64 = 60;
/// RS(528,514) encode at one end and decode at the other.
const FEC_NS: u64 = 100;
/// ns per metre of cable (signals at about two thirds of the speed of light).
const CABLE_NS_PER_M: f64 = 5.0;
/// The host core seeing the request's cache line after the NIC wrote it (one line from the
/// last-level cache).
const HOST_POLL_NS: u64 = 70;
/// The engine's own simulated cycles in a round (the RTL and the ERNIC model's WQE fetch and
/// request read: 16 cycles of 5 ns, as `backline sim --mode hw-loop` splits its rounds), part
/// of every recorded round trip.
const ENGINE_NS: u64 = 80;

/// The fabric model: its parts, both legs.
#[derive(Debug, Clone, PartialEq)]
pub struct FabricModel {
    parts: Vec<Part>,
}

impl FabricModel {
    /// The model for `s`: the fixed parts from `s`, the host NIC's two paths calibrated to the
    /// reference (or `s.host_nic_ns`).
    pub fn new(s: &FabricSettings) -> Result<FabricModel, FabricError> {
        let range = |flag, value: String, range| FabricError::Range { flag, value, range };
        if ![10, 25, 50, 100].contains(&s.link_gbps) {
            return Err(range(
                "link-gbps",
                s.link_gbps.to_string(),
                "10, 25, 50 or 100",
            ));
        }
        if !(0.0..=1000.0).contains(&s.cable_m) {
            return Err(range("cable-m", s.cable_m.to_string(), "metres, 0 to 1000"));
        }
        if s.switch_ns > 100_000 {
            return Err(range(
                "switch-ns",
                s.switch_ns.to_string(),
                "ns, 0 to 100000",
            ));
        }
        if s.host_nic_ns.is_some_and(|n| n > 100_000) {
            return Err(range(
                "host-nic-ns",
                s.host_nic_ns.unwrap_or(0).to_string(),
                "ns, 0 to 100000",
            ));
        }
        let wire = Self::wire_parts(s);
        let nic = s.host_nic_ns.unwrap_or_else(Self::calibrated_nic_ns);
        let nic_source = if s.host_nic_ns.is_some() {
            Source::Flag
        } else {
            Source::Calibrated
        };
        let mut parts = Vec::with_capacity(2 * wire.len() + 3);
        for p in &wire {
            parts.push(Part {
                leg: Leg::Request,
                ..p.clone()
            });
        }
        parts.push(Part {
            name: "host NIC receive: parse, QP look-up, PCIe write into host memory",
            leg: Leg::Request,
            ns: nic,
            source: nic_source,
        });
        parts.push(Part {
            name: "host core sees the written line",
            leg: Leg::Request,
            ns: HOST_POLL_NS,
            source: Source::Estimate,
        });
        parts.push(Part {
            name: "host NIC send: doorbell over PCIe, WQE and data, transmit pipeline",
            leg: Leg::Reply,
            ns: nic,
            source: nic_source,
        });
        for p in &wire {
            parts.push(Part {
                leg: Leg::Reply,
                ..p.clone()
            });
        }
        Ok(FabricModel { parts })
    }

    /// The parts of one leg's link (MACs, FEC, serialization, cable, switch), leg unset.
    fn wire_parts(s: &FabricSettings) -> Vec<Part> {
        let mut v = vec![Part {
            name: "MAC, PCS and transceiver at both ends",
            leg: Leg::Request,
            ns: 2 * MAC_NS,
            source: Source::Estimate,
        }];
        if s.fec == Fec::Rs528 {
            v.push(Part {
                name: "RS(528,514) FEC encode and decode",
                leg: Leg::Request,
                ns: FEC_NS,
                source: Source::Estimate,
            });
        }
        v.push(Part {
            name: "serialization of the frame",
            leg: Leg::Request,
            ns: (FRAME_WIRE_BYTES * 8).div_ceil(u64::from(s.link_gbps)),
            source: Source::Physics,
        });
        v.push(Part {
            name: "cable",
            leg: Leg::Request,
            ns: (s.cable_m * CABLE_NS_PER_M).round() as u64,
            source: Source::Physics,
        });
        if s.switch_ns > 0 {
            v.push(Part {
                name: "switch",
                leg: Leg::Request,
                ns: s.switch_ns,
                source: Source::Flag,
            });
        }
        v
    }

    /// Each host NIC path's share of the reference's round trip once everything else of the
    /// default model is taken out.
    fn calibrated_nic_ns() -> u64 {
        let wire: u64 = Self::wire_parts(&FabricSettings::REFERENCE)
            .iter()
            .map(|p| p.ns)
            .sum();
        let rest = 2 * wire + HOST_POLL_NS + ENGINE_NS + DEFAULT_SERVICE_NS;
        REFERENCE_RTT_NS.saturating_sub(rest) / 2
    }

    /// The parts, request leg first.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The fabric's round trip, ns (both legs).
    pub fn round_trip_ns(&self) -> u64 {
        self.parts.iter().map(|p| p.ns).sum()
    }

    /// The latency the simulation applies to each leg, cycles of the engine's clock: half the
    /// round trip.
    pub fn one_way_cycles(&self) -> u64 {
        rm::ns_to_cycles(self.round_trip_ns().div_ceil(2))
    }

    /// The round trip the model predicts for a round of the in-simulation echo with the
    /// default service: the engine's cycles + fabric + service, ns.
    pub fn predicted_rtt_ns(&self) -> u64 {
        ENGINE_NS + self.round_trip_ns() + DEFAULT_SERVICE_NS
    }

    /// The summary's lines: one per part, and the total.
    pub fn lines(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .parts
            .iter()
            .map(|p| {
                format!(
                    "  {:7} {:>5} ns  {} ({})",
                    p.leg.name(),
                    p.ns,
                    p.name,
                    p.source.name()
                )
            })
            .collect();
        v.push(format!(
            "  fabric round trip {} ns = {} cycles each way; with the engine's 80 ns and a 200 ns echo: {} ns (the reference measured {} ns)",
            self.round_trip_ns(),
            self.one_way_cycles(),
            self.predicted_rtt_ns(),
            REFERENCE_RTT_NS
        ));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_model_is_calibrated_to_the_reference_and_keeps_its_one_way_latency() {
        let m = FabricModel::new(&FabricSettings::REFERENCE).unwrap();
        let rtt = m.predicted_rtt_ns();
        assert!(rtt.abs_diff(REFERENCE_RTT_NS) <= 1, "{rtt}");
        // Each leg shorter than half the reference (1,152 ns): the engine and the echo are
        // counted apart now.
        assert!(m.one_way_cycles() < 230, "{}", m.one_way_cycles());
        let calibrated: Vec<_> = m
            .parts()
            .iter()
            .filter(|p| p.source == Source::Calibrated)
            .collect();
        assert_eq!(calibrated.len(), 2);
        assert!(calibrated.iter().all(|p| p.ns > 0 && p.ns < 1000));
    }

    #[test]
    fn the_reference_one_way_constant_is_the_default_models_leg() {
        let m = FabricModel::new(&FabricSettings::REFERENCE).unwrap();
        assert_eq!(
            crate::model::REFERENCE_ONE_WAY_NS,
            m.round_trip_ns().div_ceil(2)
        );
        assert_eq!(
            m.one_way_cycles(),
            rm::ns_to_cycles(crate::model::REFERENCE_ONE_WAY_NS)
        );
    }

    #[test]
    fn a_different_fabric_changes_the_parts_it_names() {
        let base = FabricModel::new(&FabricSettings::REFERENCE).unwrap();
        let switched = FabricModel::new(&FabricSettings {
            switch_ns: 300,
            cable_m: 11.0,
            fec: Fec::None,
            ..FabricSettings::REFERENCE
        })
        .unwrap();
        // Two legs: +300 switch, +50 cable, −100 FEC each.
        assert_eq!(
            switched.round_trip_ns() as i64 - base.round_trip_ns() as i64,
            2 * (300 + 50 - 100)
        );
        let slow = FabricModel::new(&FabricSettings {
            link_gbps: 10,
            ..FabricSettings::REFERENCE
        })
        .unwrap();
        let ser = |m: &FabricModel| {
            m.parts()
                .iter()
                .find(|p| p.name.starts_with("serialization"))
                .unwrap()
                .ns
        };
        assert_eq!(ser(&base), 11);
        assert_eq!(ser(&slow), 104);
        let nic = FabricModel::new(&FabricSettings {
            host_nic_ns: Some(0),
            ..FabricSettings::REFERENCE
        })
        .unwrap();
        assert!(nic.parts().iter().all(|p| p.source != Source::Calibrated));
    }

    #[test]
    fn settings_out_of_range_name_their_flag() {
        for (s, flag) in [
            (
                FabricSettings {
                    link_gbps: 40,
                    ..FabricSettings::REFERENCE
                },
                "--link-gbps 40",
            ),
            (
                FabricSettings {
                    cable_m: -1.0,
                    ..FabricSettings::REFERENCE
                },
                "--cable-m -1",
            ),
            (
                FabricSettings {
                    cable_m: f64::NAN,
                    ..FabricSettings::REFERENCE
                },
                "--cable-m NaN",
            ),
            (
                FabricSettings {
                    switch_ns: 1 << 40,
                    ..FabricSettings::REFERENCE
                },
                "--switch-ns",
            ),
            (
                FabricSettings {
                    host_nic_ns: Some(200_000),
                    ..FabricSettings::REFERENCE
                },
                "--host-nic-ns 200000",
            ),
        ] {
            let e = FabricModel::new(&s).unwrap_err().to_string();
            assert!(e.starts_with(flag), "{e}");
        }
    }
}
