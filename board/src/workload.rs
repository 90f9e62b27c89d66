//! What a run of the HWHS engine sends and what it expects back — on the board or in the
//! simulator: the request payloads the engine's reference memory holds (one per entry, round
//! `r` uses entry `r mod entries`), the decoder id of every request, and the reply word the
//! engine compares each answer with ([`Workload::hwhs_writes`] loads it). Feature
//! `workload`.
//!
//! For a real coprocessor ([`Workload::for_function`]) the payloads are syndromes of sampled
//! errors — of the CSS code of a `bposd:` function (X checks for decoder id 0, Z checks for
//! 1), or of the Steane code for everything else (`steane`, `LIB:SYMBOL` functions of the
//! Steane lookup's signature) — or random words for `echo`; errors come from
//! `backline-decoders`'s seeded code-capacity noise. The expected replies are what the same
//! function answers when run here, in this process, on the same syndrome: "every reply
//! equals the CPU decoder's answer for the same syndrome" is then the engine's own mismatch
//! counter at 0. Fixed tables (the simulator's in-simulation responders with their eight
//! 3-bit syndromes) are [`Workload::table`].

use backline_decoders::noise::CodeCapacity;
use backline_regmap as rm;

/// Reference entries the engine holds (`REF_ADDR` is 8 bits).
pub const MAX_ENTRIES: usize = 1 << rm::REF_ADDR_BITS;

/// Largest request payload whose every byte changes from round to round: the reference
/// memory holds payload word 0; words 1 ..= 3 (`PAYLOAD1..3`) are the same every round.
pub const VARYING_PAYLOAD_BYTES: usize = 4;

/// Why a workload could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// The function spec could not be loaded or built.
    #[error("coprocessor function `{spec}`: {why}")]
    Function {
        /// The spec.
        spec: String,
        /// Why.
        why: String,
    },
    /// The function serves no such decoder id.
    #[error("`{spec}` serves decoder ids {served:?}, not {decoder_id}")]
    DecoderId {
        /// The spec.
        spec: String,
        /// The id asked for.
        decoder_id: u32,
        /// The ids it serves.
        served: Vec<u32>,
    },
    /// The syndromes are longer than the engine can vary per round.
    #[error(
        "`{spec}` has {checks} checks for decoder id {decoder_id}: syndromes of {bytes} bytes, \
         but the engine's reference memory varies {VARYING_PAYLOAD_BYTES} bytes per round"
    )]
    TooLong {
        /// The spec.
        spec: String,
        /// The decoder id.
        decoder_id: u32,
        /// Checks of that half.
        checks: usize,
        /// Bytes of a syndrome.
        bytes: usize,
    },
    /// The function answered a sampled syndrome with an error.
    #[error("`{spec}` refused a sampled syndrome here: {why}")]
    Refused {
        /// The spec.
        spec: String,
        /// Why.
        why: String,
    },
}

/// Payloads and expected replies of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// What answers (a function spec or an in-simulation responder's name).
    pub name: String,
    /// `decoder_id` of every request.
    pub decoder_id: u32,
    /// Request payload bytes (1 ..= 16).
    pub payload_len: u32,
    /// Reply payload bytes expected (1 ..= 48).
    pub reply_len: u32,
    /// Payload words 1 ..= 3, the same every round.
    pub fixed_words: [u32; 3],
    /// `(payload word 0, expected reply word 0)` per reference entry.
    pub entries: Vec<(u32, u32)>,
}

fn le_word(bytes: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    let n = bytes.len().min(4);
    w[..n].copy_from_slice(&bytes[..n]);
    u32::from_le_bytes(w)
}

fn pack(bits: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        out[i / 8] |= (b & 1) << (i % 8);
    }
    out
}

impl Workload {
    /// A fixed table: 4-byte payloads to decoder 0, `(payload word 0, expected reply word 0)`
    /// per entry.
    pub fn table(name: &str, reply_len: u32, entries: Vec<(u32, u32)>) -> Workload {
        Workload {
            name: name.into(),
            decoder_id: 0,
            payload_len: 4,
            reply_len,
            fixed_words: [0; 3],
            entries,
        }
    }

    /// Checks the lengths and the entry count against what the engine takes.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=rm::MAX_PAYLOAD_BYTES).contains(&self.payload_len) {
            return Err(format!(
                "request payload of {} bytes: the engine sends 1 ..= {}",
                self.payload_len,
                rm::MAX_PAYLOAD_BYTES
            ));
        }
        if !(1..=rm::MAX_REPLY_BYTES).contains(&self.reply_len) {
            return Err(format!(
                "reply of {} bytes: the engine takes 1 ..= {}",
                self.reply_len,
                rm::MAX_REPLY_BYTES
            ));
        }
        if self.entries.is_empty() || self.entries.len() > MAX_ENTRIES {
            return Err(format!(
                "{} reference entries: the engine holds 1 ..= {MAX_ENTRIES}",
                self.entries.len()
            ));
        }
        Ok(())
    }

    /// The HWHS register writes that load this workload, in order: lengths, decoder id,
    /// fixed payload words, then the reference memory (`REF_ADDR` = 0, `REF_SYN`/`REF_EXP`
    /// per entry, `REF_LEN`). `FLAGS` (use_ref, check) is the caller's.
    pub fn hwhs_writes(&self) -> Vec<(u32, u32)> {
        let mut w = vec![
            (rm::PAY_LEN, self.payload_len),
            (rm::RPL_LEN, self.reply_len),
            (rm::DECODER_ID, self.decoder_id),
            (rm::PAYLOAD1, self.fixed_words[0]),
            (rm::PAYLOAD2, self.fixed_words[1]),
            (rm::PAYLOAD3, self.fixed_words[2]),
            (rm::REF_ADDR, 0),
        ];
        for &(payload, expect) in &self.entries {
            w.push((rm::REF_SYN, payload));
            w.push((rm::REF_EXP, expect));
        }
        w.push((rm::REF_LEN, self.entries.len() as u32));
        w
    }

    /// The workload of a real coprocessor serving `spec` for `decoder_id`: `entries`
    /// payloads (≤ 256) sampled with flip probability `p` from `seed`, and what `spec`
    /// answers each here.
    pub fn for_function(
        spec: &str,
        decoder_id: u32,
        entries: usize,
        p: f64,
        seed: u64,
    ) -> Result<Workload, WorkloadError> {
        let entries = entries.clamp(1, MAX_ENTRIES);
        let err = |why: String| WorkloadError::Function {
            spec: spec.to_string(),
            why,
        };
        let base = if spec.starts_with("bposd:") {
            decoder_id & !1
        } else {
            decoder_id
        };
        let table = backline_responder::functions_of(spec, base).map_err(|e| err(e.to_string()))?;
        let served: Vec<u32> = table.iter().map(|(id, _)| *id).collect();
        let f = table
            .iter()
            .find(|(id, _)| *id == decoder_id)
            .map(|(_, f)| f.clone())
            .ok_or_else(|| WorkloadError::DecoderId {
                spec: spec.to_string(),
                decoder_id,
                served: served.clone(),
            })?;
        let mut noise = CodeCapacity::new(p, seed);
        let mut payloads: Vec<Vec<u8>> = Vec::with_capacity(entries);
        if spec == "echo" {
            for _ in 0..entries {
                let w = (noise.uniform() * f64::from(u32::MAX)) as u32;
                payloads.push(w.to_le_bytes().to_vec());
            }
        } else if let Some(rest) = spec.strip_prefix("bposd:") {
            let code_name = match rest.rsplit_once(':') {
                Some((c, s)) if s.contains('=') => c,
                _ => rest,
            };
            let (hx, hz) = match code_name.split_once('+') {
                Some((a, b)) => {
                    let load = |p: &str| {
                        backline_decoders::io::load_matrix(std::path::Path::new(p), None)
                            .map_err(|e| err(e.to_string()))
                    };
                    (load(a)?, load(b)?)
                }
                None => {
                    let c = backline_decoders::codes::CssCode::by_name(code_name)
                        .map_err(|e| err(e.to_string()))?;
                    (c.hx, c.hz)
                }
            };
            let h = if decoder_id & 1 == 0 { hx } else { hz };
            let bytes = h.rows().div_ceil(8);
            if bytes > VARYING_PAYLOAD_BYTES {
                return Err(WorkloadError::TooLong {
                    spec: spec.to_string(),
                    decoder_id,
                    checks: h.rows(),
                    bytes,
                });
            }
            let n = h.cols();
            let mut e = vec![0u8; n];
            for _ in 0..entries {
                noise.sample(&mut e);
                let bits: Vec<u8> = (0..h.rows())
                    .map(|i| (0..n).filter(|&j| h.get(i, j) && e[j] == 1).count() as u8 & 1)
                    .collect();
                payloads.push(pack(&bits));
            }
        } else {
            let mut e = [0u8; backline_decoders::steane::N];
            for _ in 0..entries {
                noise.sample(&mut e);
                let pattern = e
                    .iter()
                    .enumerate()
                    .fold(0u8, |acc, (j, &b)| acc | (b << j));
                payloads.push(vec![backline_decoders::steane::syndrome_of(pattern)]);
            }
        }
        let mut out = [0u8; rm::SLOT_BYTES as usize - backline_wire::HEADER_BYTES];
        let mut list = Vec::with_capacity(entries);
        let mut reply_len = None;
        for pl in &payloads {
            let n = f
                .respond(pl, &mut out)
                .map_err(|e| WorkloadError::Refused {
                    spec: spec.to_string(),
                    why: e.to_string(),
                })?;
            reply_len.get_or_insert(n);
            list.push((le_word(pl), le_word(&out[..n])));
        }
        Ok(Workload {
            name: spec.to_string(),
            decoder_id,
            payload_len: payloads[0].len() as u32,
            reply_len: reply_len.unwrap_or(0).max(1) as u32,
            fixed_words: [0; 3],
            entries: list,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bposd_payloads_are_syndromes_and_expectations_the_decoder() {
        let w = Workload::for_function("bposd:hgp13", 0, 256, 0.05, 7).unwrap();
        assert_eq!((w.payload_len, w.reply_len, w.entries.len()), (1, 2, 256));
        // Syndromes of sampled errors: not a counter, several distinct, 6 checks wide.
        let distinct: std::collections::BTreeSet<u32> = w.entries.iter().map(|e| e.0).collect();
        assert!(
            distinct.len() > 5 && distinct.iter().all(|&s| s < 64),
            "{distinct:?}"
        );
        assert!(w.entries.iter().any(|e| e.0 == 0) && w.entries.iter().any(|e| e.1 != 0));
        // The same seed gives the same workload; the Z half is different.
        assert_eq!(
            w,
            Workload::for_function("bposd:hgp13", 0, 256, 0.05, 7).unwrap()
        );
        let z = Workload::for_function("bposd:hgp13", 1, 256, 0.05, 7).unwrap();
        assert_eq!(z.decoder_id, 1);
        assert_ne!(z.entries, w.entries);
    }

    #[test]
    fn the_writes_load_lengths_then_the_reference_memory() {
        let w = Workload::for_function("bposd:hgp13", 1, 3, 0.1, 2).unwrap();
        w.validate().unwrap();
        let writes = w.hwhs_writes();
        assert_eq!(writes[0], (rm::PAY_LEN, 1));
        assert_eq!(writes[2], (rm::DECODER_ID, 1));
        assert_eq!(writes[6], (rm::REF_ADDR, 0));
        assert_eq!(writes[7], (rm::REF_SYN, w.entries[0].0));
        assert_eq!(writes[8], (rm::REF_EXP, w.entries[0].1));
        assert_eq!(*writes.last().unwrap(), (rm::REF_LEN, 3));
        let mut bad = w.clone();
        bad.reply_len = 49;
        assert!(bad.validate().unwrap_err().contains("1 ..= 48"));
        bad.reply_len = 2;
        bad.entries.clear();
        assert!(bad.validate().is_err());
    }

    #[test]
    fn steane_and_echo_workloads() {
        let s = Workload::for_function("steane", 0, 64, 0.1, 1).unwrap();
        assert_eq!((s.payload_len, s.reply_len), (1, 1));
        for (syn, exp) in &s.entries {
            assert!(*syn < 8);
            assert_eq!(
                *exp,
                u32::from(backline_decoders::steane::decode(*syn as u8))
            );
        }
        let e = Workload::for_function("echo", 3, 16, 0.1, 1).unwrap();
        assert!(e.entries.iter().all(|(a, b)| a == b));
        assert_eq!(e.decoder_id, 3);
    }

    #[test]
    fn bad_functions_are_named() {
        // A bposd: function's halves follow the id's parity wherever it is served.
        let w2 = Workload::for_function("bposd:hgp13", 2, 8, 0.1, 1).unwrap();
        assert_eq!(
            w2.entries,
            Workload::for_function("bposd:hgp13", 0, 8, 0.1, 1)
                .unwrap()
                .entries
        );
        let e = Workload::for_function("bposd:bb72", 0, 8, 0.1, 1).unwrap_err();
        assert!(e.to_string().contains("36 checks"), "{e}");
        let e = Workload::for_function("./nope.so:f", 0, 8, 0.1, 1).unwrap_err();
        assert!(e.to_string().contains("nope.so"), "{e}");
    }
}
