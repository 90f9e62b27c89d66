//! The board configuration (`setup --config FILE`): a TOML file with the ERNIC's own
//! addresses and buffers, the memory region the peer writes replies into, the data QP, the
//! HWHS settings and the peer to hand-shake with. Every field is required (a typo or a
//! missing field is an error, never a silent default), and [`Config::validate`] checks every
//! range before anything touches a register.
//!
//! Numbers may be written in decimal or as TOML hex literals (`0xA402_0000`).
//! `firmware/examples/sim-board.toml` is a complete example that matches the simulated
//! board's memory map.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::Path;

use serde::Deserialize;

use backline_board::{ernic, mac_is_unicast};

/// The text of `firmware/examples/sim-board.toml`.
pub const SIM_EXAMPLE: &str = include_str!("../examples/sim-board.toml");

/// A config value that is out of range, named by its TOML path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config {field} = {value}: {reason}")]
pub struct ConfigError {
    /// Dotted TOML path (`qp.number`).
    pub field: String,
    /// The value as written.
    pub value: String,
    /// What is wrong and what is allowed.
    pub reason: String,
}

fn bad(field: &str, value: impl fmt::Display, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// A MAC address written `02:0a:35:00:00:01`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl<'de> Deserialize<'de> for Mac {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Mac, D::Error> {
        let s = String::deserialize(d)?;
        parse_mac(&s).map(Mac).ok_or_else(|| {
            serde::de::Error::custom(format!("`{s}` is not a MAC address (aa:bb:cc:dd:ee:ff)"))
        })
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&backline_board::fmt_mac(self.0))
    }
}

/// Parses `aa:bb:cc:dd:ee:ff` (or with `-`).
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut mac = [0u8; 6];
    for (o, p) in mac.iter_mut().zip(parts) {
        if p.len() != 2 {
            return None;
        }
        *o = u8::from_str_radix(p, 16).ok()?;
    }
    Some(mac)
}

/// Parses a decimal or `0x` hexadecimal number, `_` allowed.
pub fn parse_u64(s: &str) -> Option<u64> {
    let t = s.trim().replace('_', "");
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => t.parse().ok(),
    }
}

/// `[ernic]`: the engine's own identity and its global buffers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErnicConfig {
    /// Own MAC address.
    pub mac: Mac,
    /// Own IPv4 address.
    pub ip: Ipv4Addr,
    /// UDP source port of outgoing RoCE v2 packets.
    pub udp_source_port: u16,
    /// QPs the ERNIC enables, QP 1 included (`XRNICCONF.num_qps`, 2 ..= 255).
    pub qps: u32,
    /// Error buffer base (bus address, 64-byte aligned).
    pub error_buffer_base: u64,
    /// Error buffers.
    pub error_buffer_count: u32,
    /// Bytes per error buffer.
    pub error_buffer_bytes: u32,
    /// Incoming-packet error status queue base (`IPKTERRQBA`; 64-byte aligned).
    pub incoming_error_queue_base: u64,
    /// Entries of that queue (`IPKTERRQSZ`).
    pub incoming_error_queue_entries: u32,
    /// Incoming data buffer base (64-byte aligned).
    pub data_buffer_base: u64,
    /// Data buffers.
    pub data_buffer_count: u32,
    /// Bytes per data buffer.
    pub data_buffer_bytes: u32,
    /// Response-error packet buffer base (64-byte aligned).
    pub resp_error_buffer_base: u64,
    /// Response-error buffers.
    pub resp_error_buffer_count: u32,
    /// Bytes per response-error buffer.
    pub resp_error_buffer_bytes: u32,
    /// Where the IP writes its response-error write pointer (`RESPERRBUFWPTR`; 4-byte
    /// aligned).
    pub resp_error_write_pointer: u64,
}

/// `[memory_region]`: the HWHS reply ring, registered so that the peer can write into it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionConfig {
    /// Protection domain (and table entry) of the region and of the QP, 0 ..= 255.
    pub pd: u32,
    /// The region's 8-bit key (the rkey the peer uses).
    pub key: u32,
    /// Virtual address the peer writes to (64-byte aligned).
    pub va: u64,
    /// Bus address of the HWHS reply memory (4 KiB aligned).
    pub phys: u64,
    /// Length in bytes (a multiple of 64 covering the reply ring).
    pub length: u32,
}

/// `[qp]`: the data queue pair.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QpConfig {
    /// QP number, 2 ..= `ernic.qps` (QP 1 is management).
    pub number: u32,
    /// First PSN this QP sends (24 bits).
    pub psn: u32,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096.
    pub pmtu: u32,
    /// SQ base (bus address of the SQ memory the HWHS writes WQEs into; 32-byte aligned,
    /// below 4 GiB because the HWHS's `SQ_BASE` is 32 bits).
    pub sq_base: u64,
    /// SQ depth in WQEs, a power of two 1 ..= 32768.
    pub sq_depth: u32,
    /// RQ base (256-byte aligned).
    pub rq_base: u64,
    /// RQ depth in buffers, 1 ..= 65535.
    pub rq_depth: u32,
    /// Bytes per RQ buffer, a multiple of 256 (`QPCONF.rq_buf_size` counts 256-byte units).
    pub rq_buffer_bytes: u32,
    /// CQ base (32-byte aligned).
    pub cq_base: u64,
    /// Where the ERNIC writes the CQ head (4-byte aligned).
    pub cq_doorbell: u64,
    /// Where the ERNIC writes the RQ write pointer (4-byte aligned).
    pub rq_doorbell: u64,
    /// Ack timeout exponent: 4.096 µs × 2^n, 0 ..= 31 (`TIMEOUTCONF` holds 6 bits; the
    /// InfiniBand range is 0 ..= 31).
    pub ack_timeout: u32,
    /// Retransmissions before the QP goes fatal, 0 ..= 7.
    pub retry_count: u32,
    /// RNR retries, 0 ..= 7.
    pub rnr_retry_count: u32,
}

/// `[hwhs]`: the engine's round settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HwhsConfig {
    /// Request payload bytes, 1 ..= 16.
    pub payload_bytes: u32,
    /// Reply payload bytes expected, 1 ..= 48.
    pub reply_bytes: u32,
    /// `decoder_id` of every request.
    pub decoder_id: u32,
    /// Slots of the request and reply rings (64-byte slots), a power of two 1 ..= 64.
    pub ring_depth: u32,
    /// Bus address of the engine's 32-byte request buffer as the ERNIC reads it (64-byte
    /// aligned).
    pub request_buffer: u64,
    /// Reply timeout in µs (1 ..= 21,474,836: the 32-bit cycle counter at 200 MHz).
    pub timeout_us: u32,
    /// Record one RTT per round in the trace RAM.
    pub trace: bool,
}

/// `[peer]`: the host to hand-shake with over TCP.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerConfig {
    /// `host:port` of the peer's out-of-band listener.
    pub address: String,
    /// Connect and answer timeout, ms (1 ..= 600,000).
    pub timeout_ms: u64,
    /// The peer's MAC, used when its handshake carries none (a host NIC's transport sends
    /// zeros there). Optional.
    #[serde(default)]
    pub mac: Option<Mac>,
}

/// The whole board configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// ERNIC global settings.
    pub ernic: ErnicConfig,
    /// The reply ring's memory region.
    pub memory_region: RegionConfig,
    /// The data QP.
    pub qp: QpConfig,
    /// The HWHS engine.
    pub hwhs: HwhsConfig,
    /// The host peer.
    pub peer: PeerConfig,
}

/// Why a config file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Not valid TOML, a field is missing, unknown or of the wrong type.
    #[error("{path}: {msg}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message (names the field and the line).
        msg: String,
    },
    /// A value is out of range.
    #[error("{path}: {source}")]
    Invalid {
        /// The file.
        path: String,
        /// The field.
        source: ConfigError,
    },
}

fn aligned(field: &str, v: u64, align: u64) -> Result<(), ConfigError> {
    if !v.is_multiple_of(align) {
        return Err(bad(
            field,
            format!("{v:#x}"),
            format!("must be {align}-byte aligned"),
        ));
    }
    Ok(())
}

fn range(field: &str, v: u64, lo: u64, hi: u64) -> Result<(), ConfigError> {
    if !(lo..=hi).contains(&v) {
        return Err(bad(field, v, format!("must be {lo} ..= {hi}")));
    }
    Ok(())
}

fn bytes(field: &str, v: u32, max: u32) -> Result<(), ConfigError> {
    if !(1..=max).contains(&v) {
        return Err(bad(field, v, format!("the HWHS takes 1 ..= {max} bytes")));
    }
    Ok(())
}

impl Config {
    /// Parses and validates TOML text; `name` labels errors.
    pub fn from_toml(text: &str, name: &str) -> Result<Config, LoadError> {
        let cfg: Config = toml::from_str(text).map_err(|e| LoadError::Parse {
            path: name.into(),
            msg: e.to_string().trim_end().replace('\n', "\n  "),
        })?;
        cfg.validate().map_err(|source| LoadError::Invalid {
            path: name.into(),
            source,
        })?;
        Ok(cfg)
    }

    /// The configuration shipped for the simulated board (`firmware/examples/sim-board.toml`),
    /// whose addresses match its memory map; set `peer.address` to the sim-board's peer.
    pub fn sim_example() -> Config {
        Config::from_toml(SIM_EXAMPLE, "sim-board.toml").expect("the shipped example is valid")
    }

    /// Reads, parses and validates a file.
    pub fn load(path: &Path) -> Result<Config, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Config::from_toml(&text, &path.display().to_string())
    }

    /// Checks every range and alignment, section by section in the order of the file's
    /// dependencies: the ERNIC, the reply ring's depth (which the memory region must cover),
    /// the region, the QP (numbered within the ERNIC's QPs), the rest of the engine, the
    /// peer. The first value out of range is the error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.ernic.validate()?;
        self.hwhs.validate_ring_depth()?;
        self.memory_region.validate(self.hwhs.ring_depth)?;
        self.qp.validate(self.ernic.qps)?;
        self.hwhs.validate()?;
        self.peer.validate()
    }

    /// The reply timeout in engine cycles.
    pub fn timeout_cycles(&self) -> u32 {
        (u64::from(self.hwhs.timeout_us) * backline_regmap::CYCLES_PER_US) as u32
    }
}

impl ErnicConfig {
    /// Own addresses, the QP count and the global buffers.
    fn validate(&self) -> Result<(), ConfigError> {
        let e = self;
        if !mac_is_unicast(e.mac.0) {
            return Err(bad(
                "ernic.mac",
                e.mac,
                "must be a unicast address (not zero, not multicast)",
            ));
        }
        if e.ip.is_unspecified() || e.ip.is_broadcast() || e.ip.is_multicast() {
            return Err(bad("ernic.ip", e.ip, "must be a unicast IPv4 address"));
        }
        if e.udp_source_port == 0 {
            return Err(bad("ernic.udp_source_port", 0, "must be 1 ..= 65535"));
        }
        range("ernic.qps", e.qps.into(), 2, ernic::MAX_QPN.into())?;
        for (name, base, count, bytes) in [
            (
                "error_buffer",
                e.error_buffer_base,
                e.error_buffer_count,
                e.error_buffer_bytes,
            ),
            (
                "data_buffer",
                e.data_buffer_base,
                e.data_buffer_count,
                e.data_buffer_bytes,
            ),
            (
                "resp_error_buffer",
                e.resp_error_buffer_base,
                e.resp_error_buffer_count,
                e.resp_error_buffer_bytes,
            ),
        ] {
            aligned(
                &format!("ernic.{name}_base"),
                base,
                ernic::BUFFER_BASE_ALIGN,
            )?;
            range(&format!("ernic.{name}_count"), count.into(), 1, 0xFFFF)?;
            range(&format!("ernic.{name}_bytes"), bytes.into(), 1, 0xFFFF)?;
        }
        aligned(
            "ernic.incoming_error_queue_base",
            e.incoming_error_queue_base,
            ernic::BUFFER_BASE_ALIGN,
        )?;
        range(
            "ernic.incoming_error_queue_entries",
            e.incoming_error_queue_entries.into(),
            1,
            0xFFFF,
        )?;
        aligned(
            "ernic.resp_error_write_pointer",
            e.resp_error_write_pointer,
            ernic::DOORBELL_ALIGN,
        )
    }
}

impl RegionConfig {
    /// Its table entry, key and alignments, and a length that covers a reply ring of
    /// `ring_depth` slots.
    fn validate(&self, ring_depth: u32) -> Result<(), ConfigError> {
        let r = self;
        range(
            "memory_region.pd",
            r.pd.into(),
            0,
            u64::from(ernic::MR_ENTRIES) - 1,
        )?;
        range("memory_region.key", r.key.into(), 0, 0xFF)?;
        aligned("memory_region.va", r.va, ernic::MR_VA_ALIGN)?;
        aligned("memory_region.phys", r.phys, ernic::MR_PHYS_ALIGN)?;
        let ring = u64::from(ring_depth) * u64::from(backline_regmap::SLOT_BYTES);
        if r.length == 0 || !r.length.is_multiple_of(64) || u64::from(r.length) < ring {
            return Err(bad(
                "memory_region.length",
                r.length,
                format!("must be a multiple of 64 covering the reply ring ({ring} bytes)"),
            ));
        }
        if r.va.checked_add(u64::from(r.length)).is_none() {
            return Err(bad(
                "memory_region.va",
                format!("{:#x}", r.va),
                "va + length overflows",
            ));
        }
        Ok(())
    }
}

impl QpConfig {
    /// Its number among the ERNIC's `qps` QPs, PSN, path MTU, and its queues' bases, depths
    /// and doorbells.
    fn validate(&self, qps: u32) -> Result<(), ConfigError> {
        let q = self;
        if q.number == ernic::MANAGEMENT_QPN {
            return Err(bad(
                "qp.number",
                1,
                "QP 1 is the management QP (GSI), set up by the ERNIC itself; data QPs start at 2",
            ));
        }
        range(
            "qp.number",
            q.number.into(),
            ernic::FIRST_DATA_QPN.into(),
            qps.into(),
        )
        .map_err(|mut err| {
            err.reason = format!("{} (ernic.qps = {qps} QPs, QP 1 included)", err.reason);
            err
        })?;
        range("qp.psn", q.psn.into(), 0, 0xFF_FFFF)?;
        if !ernic::PMTU_BYTES.contains(&q.pmtu) {
            return Err(bad(
                "qp.pmtu",
                q.pmtu,
                "must be 256, 512, 1024, 2048 or 4096",
            ));
        }
        q.validate_queues()?;
        range("qp.ack_timeout", q.ack_timeout.into(), 0, 31)?;
        range("qp.retry_count", q.retry_count.into(), 0, 7)?;
        range("qp.rnr_retry_count", q.rnr_retry_count.into(), 0, 7)
    }

    /// The send, receive and completion queues: bases, depths, buffer size, doorbells.
    fn validate_queues(&self) -> Result<(), ConfigError> {
        let q = self;
        aligned("qp.sq_base", q.sq_base, ernic::SQ_BASE_ALIGN)?;
        if q.sq_base > u64::from(u32::MAX) {
            return Err(bad(
                "qp.sq_base",
                format!("{:#x}", q.sq_base),
                "must be below 4 GiB (the HWHS's SQ_BASE is a 32-bit bus address)",
            ));
        }
        if !q.sq_depth.is_power_of_two() || q.sq_depth > 1 << 15 {
            return Err(bad(
                "qp.sq_depth",
                q.sq_depth,
                "must be a power of two 1 ..= 32768",
            ));
        }
        aligned("qp.rq_base", q.rq_base, ernic::RQ_BASE_ALIGN)?;
        range("qp.rq_depth", q.rq_depth.into(), 1, 0xFFFF)?;
        if q.rq_buffer_bytes == 0 || !q.rq_buffer_bytes.is_multiple_of(ernic::RQ_BUF_UNIT) {
            return Err(bad(
                "qp.rq_buffer_bytes",
                q.rq_buffer_bytes,
                format!(
                    "must be a non-zero multiple of {} (QPCONF.rq_buf_size counts {}-byte units)",
                    ernic::RQ_BUF_UNIT,
                    ernic::RQ_BUF_UNIT
                ),
            ));
        }
        aligned("qp.cq_base", q.cq_base, ernic::CQ_BASE_ALIGN)?;
        aligned("qp.cq_doorbell", q.cq_doorbell, ernic::DOORBELL_ALIGN)?;
        aligned("qp.rq_doorbell", q.rq_doorbell, ernic::DOORBELL_ALIGN)
    }
}

impl HwhsConfig {
    /// The ring depth, checked first: the memory region must cover the ring.
    fn validate_ring_depth(&self) -> Result<(), ConfigError> {
        if !self.ring_depth.is_power_of_two() || self.ring_depth > backline_regmap::MAX_RING_DEPTH {
            return Err(bad(
                "hwhs.ring_depth",
                self.ring_depth,
                format!(
                    "must be a power of two 1 ..= {}",
                    backline_regmap::MAX_RING_DEPTH
                ),
            ));
        }
        Ok(())
    }

    /// The round settings other than the ring depth: payload and reply sizes, the request
    /// buffer's alignment, the reply timeout.
    fn validate(&self) -> Result<(), ConfigError> {
        let h = self;
        bytes(
            "hwhs.payload_bytes",
            h.payload_bytes,
            backline_regmap::MAX_PAYLOAD_BYTES,
        )?;
        bytes(
            "hwhs.reply_bytes",
            h.reply_bytes,
            backline_regmap::MAX_REPLY_BYTES,
        )?;
        aligned("hwhs.request_buffer", h.request_buffer, 64)?;
        range(
            "hwhs.timeout_us",
            h.timeout_us.into(),
            1,
            u64::from(u32::MAX) / backline_regmap::CYCLES_PER_US,
        )
    }
}

impl PeerConfig {
    /// `host:port`, the timeout, and a unicast MAC when one is given.
    fn validate(&self) -> Result<(), ConfigError> {
        let p = self;
        if p.address
            .rsplit_once(':')
            .is_none_or(|(host, port)| host.is_empty() || port.parse::<u16>().is_err())
        {
            return Err(bad(
                "peer.address",
                format!("{:?}", p.address),
                "must be host:port",
            ));
        }
        range("peer.timeout_ms", p.timeout_ms, 1, 600_000)?;
        if let Some(mac) = p.mac
            && !mac_is_unicast(mac.0)
        {
            return Err(bad("peer.mac", mac, "must be a unicast address"));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub const EXAMPLE: &str = SIM_EXAMPLE;

    pub fn example() -> Config {
        Config::sim_example()
    }

    fn with(edit: &str, to: &str) -> String {
        let mut hit = false;
        let out: Vec<String> = EXAMPLE
            .lines()
            .map(|l| {
                if l.split('=').next().map(str::trim) == Some(edit) && !hit {
                    hit = true;
                    to.to_string()
                } else {
                    l.to_string()
                }
            })
            .collect();
        assert!(hit, "no line `{edit} = …` in the example");
        out.join("\n")
    }

    fn err(text: &str) -> String {
        Config::from_toml(text, "t.toml").unwrap_err().to_string()
    }

    #[test]
    fn the_example_is_valid() {
        let c = example();
        assert_eq!(c.qp.number, 2);
        assert_eq!(c.timeout_cycles(), c.hwhs.timeout_us * 200);
        assert_eq!(c.qp.rq_buffer_bytes % 256, 0);
    }

    #[test]
    fn missing_unknown_and_mistyped_fields_are_named() {
        let e = err(&with("psn", ""));
        assert!(e.contains("missing field `psn`"), "{e}");
        let e = err(&format!("{EXAMPLE}\n[extra]\nx = 1\n"));
        assert!(e.contains("unknown field `extra`"), "{e}");
        let e = err(&with("number", "numbr = 2"));
        assert!(e.contains("numbr"), "{e}");
        let e = err(&with("mac", "mac = \"02:00:00\""));
        assert!(e.contains("not a MAC address"), "{e}");
        let e = err(&with("ip", "ip = \"10.0.0.300\""));
        assert!(e.contains("ip"), "{e}");
        let e = err(&with("udp_source_port", "udp_source_port = 70000"));
        assert!(e.contains("udp_source_port"), "{e}");
    }

    #[test]
    fn out_of_range_values_are_named_with_their_value() {
        for (line, want) in [
            (
                "number = 1",
                "config qp.number = 1: QP 1 is the management QP",
            ),
            ("number = 0", "config qp.number = 0: must be 2 ..="),
            (
                "number = 9",
                "config qp.number = 9: must be 2 ..= 4 (ernic.qps = 4",
            ),
            (
                "sq_base = 0xA402_0010",
                "config qp.sq_base = 0xa4020010: must be 32-byte aligned",
            ),
            (
                "rq_base = 0x7003_0040",
                "config qp.rq_base = 0x70030040: must be 256-byte aligned",
            ),
            (
                "rq_buffer_bytes = 320",
                "config qp.rq_buffer_bytes = 320: must be a non-zero multiple of 256",
            ),
            ("sq_base = 0x1_0000_0000", "must be below 4 GiB"),
            (
                "cq_doorbell = 0x7005_0002",
                "config qp.cq_doorbell = 0x70050002: must be 4-byte aligned",
            ),
            (
                "phys = 0xA401_0040",
                "config memory_region.phys = 0xa4010040: must be 4096-byte aligned",
            ),
            (
                "sq_depth = 12",
                "config qp.sq_depth = 12: must be a power of two",
            ),
            ("pmtu = 1500", "config qp.pmtu = 1500"),
            (
                "psn = 0x1000000",
                "config qp.psn = 16777216: must be 0 ..= 16777215",
            ),
            ("key = 256", "config memory_region.key = 256"),
            (
                "payload_bytes = 17",
                "config hwhs.payload_bytes = 17: the HWHS takes 1 ..= 16",
            ),
            (
                "reply_bytes = 49",
                "config hwhs.reply_bytes = 49: the HWHS takes 1 ..= 48",
            ),
            ("ring_depth = 128", "config hwhs.ring_depth = 128"),
            ("timeout_us = 0", "config hwhs.timeout_us = 0"),
            (
                "mac = \"01:00:5e:00:00:01\"",
                "config ernic.mac = 01:00:5e:00:00:01: must be a unicast",
            ),
            (
                "address = \"nohost\"",
                "config peer.address = \"nohost\": must be host:port",
            ),
            ("timeout_ms = 0", "config peer.timeout_ms = 0"),
            (
                "length = 1024",
                "config memory_region.length = 1024: must be a multiple of 64 covering",
            ),
        ] {
            let key = line.split('=').next().unwrap().trim();
            let e = err(&with(key, line));
            assert!(e.contains(want), "{line}: {e}");
        }
    }
}
