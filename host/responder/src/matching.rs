//! Minimum-weight perfect matching from a CSS code's checks as coprocessor functions (the
//! code-capacity twin of [`crate::bposd_functions`]): decoder id `base` matches the X checks
//! (Hx, Z errors), `base + 1` the Z checks (Hz, X errors), each with
//! [`backline_decoders::matching::CheckMatching`].
//!
//! Spec strings: `matching:CODE` with CODE a library code whose every qubit is in at most two
//! checks of each type (`surface3`, `surface5`, …; `hgp13`) or `HX_FILE+HZ_FILE`. A code with
//! a qubit in three checks (the bivariate-bicycle codes, Steane) is refused, naming the qubit.
//!
//! Payloads as `bposd:`'s: the syndrome bit-packed LSB-first, exactly ⌈m/8⌉ bytes with its
//! padding bits zero; the reply is the correction bit-packed LSB-first, ⌈n/8⌉ bytes.

use std::sync::{Arc, Mutex};

use backline_decoders::codes::CssCode;
use backline_decoders::matching::CheckMatching;

use crate::{Responder, ResponderError};

/// Why a `matching:` spec was refused.
#[derive(Debug, thiserror::Error)]
#[error("matching spec `{spec}`: {msg}")]
pub struct MatchingSpecError {
    /// The spec.
    pub spec: String,
    /// What is wrong.
    pub msg: String,
}

/// The code of a `matching:CODE` spec (for a caller that samples its syndromes: the bench).
pub fn matching_code(spec: &str) -> Result<CssCode, MatchingSpecError> {
    let bad = |msg: String| MatchingSpecError {
        spec: spec.to_string(),
        msg,
    };
    let code = spec
        .strip_prefix("matching:")
        .ok_or_else(|| bad("expected matching:CODE".into()))?;
    if code.contains('=') {
        return Err(bad("matching takes no settings".into()));
    }
    crate::bposd::load_code(code).map_err(bad)
}

/// The two decoders of a code, one per check type, each behind its own lock.
struct Halves {
    checks: [Mutex<Scratch>; 2],
}

struct Scratch {
    decoder: CheckMatching,
    syndrome: Vec<u8>,
    correction: Vec<u8>,
}

/// One check type of a `matching:` function.
pub struct MatchingHalf {
    name: String,
    half: usize,
    shared: Arc<Halves>,
}

impl Responder for MatchingHalf {
    fn name(&self) -> &str {
        &self.name
    }

    fn respond(&self, input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
        let mut g = self.shared.checks[self.half]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let s = &mut *g;
        let (m, n) = (s.decoder.checks(), s.decoder.cols());
        let bad = ResponderError::BadLength {
            got: input.len(),
            expected: "the syndrome bit-packed, ceil(checks/8) bytes, padding bits zero",
        };
        if input.len() != m.div_ceil(8) || (m % 8 != 0 && input[m / 8] >> (m % 8) != 0) {
            return Err(bad);
        }
        let nb = n.div_ceil(8);
        let Some(out) = out.get_mut(..nb) else {
            return Err(ResponderError::Failed(
                "the correction does not fit the reply slot",
            ));
        };
        for (i, b) in s.syndrome.iter_mut().enumerate() {
            *b = input[i / 8] >> (i % 8) & 1;
        }
        s.decoder
            .decode(&s.syndrome, &mut s.correction)
            .map_err(|_| ResponderError::Failed("no matching explains the syndrome"))?;
        out.fill(0);
        for (j, &c) in s.correction.iter().enumerate() {
            out[j / 8] |= c << (j % 8);
        }
        Ok(nb)
    }
}

/// Builds the two halves of a `matching:` spec, for decoder ids `base` and `base + 1`.
pub fn matching_functions(spec: &str, base: u32) -> Result<crate::Functions, MatchingSpecError> {
    let code = matching_code(spec)?;
    let half = |h: &backline_decoders::BitMatrix, what: &str| {
        let decoder = CheckMatching::new(h, &format!("{spec} ({what} checks)")).map_err(|e| {
            MatchingSpecError {
                spec: spec.to_string(),
                msg: format!("{what} checks: {e}"),
            }
        })?;
        Ok::<_, MatchingSpecError>(Mutex::new(Scratch {
            syndrome: vec![0; decoder.checks()],
            correction: vec![0; decoder.cols()],
            decoder,
        }))
    };
    let shared = Arc::new(Halves {
        checks: [half(&code.hx, "X")?, half(&code.hz, "Z")?],
    });
    Ok((0..2)
        .map(|k| {
            let r: Arc<dyn Responder> = Arc::new(MatchingHalf {
                name: format!("{spec} ({} checks)", if k == 0 { "X" } else { "Z" }),
                half: k,
                shared: shared.clone(),
            });
            (base + k as u32, r)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface5_corrects_single_errors_on_both_check_types() {
        let f = matching_functions("matching:surface5", 3).unwrap();
        assert_eq!(f.iter().map(|e| e.0).collect::<Vec<_>>(), vec![3, 4]);
        let code = CssCode::rotated_surface(5).unwrap();
        for (id, r) in &f {
            let h = if *id == 3 { &code.hx } else { &code.hz };
            for q in 0..25 {
                let mut syn = vec![0u8; h.rows().div_ceil(8)];
                for row in 0..h.rows() {
                    if h.get(row, q) {
                        syn[row / 8] |= 1 << (row % 8);
                    }
                }
                let mut out = [0u8; 16];
                let nb = r.respond(&syn, &mut out).unwrap();
                assert_eq!(nb, 4);
                let corr: Vec<u8> = (0..25).map(|j| out[j / 8] >> (j % 8) & 1).collect();
                // The correction reproduces the syndrome, and with the error it makes no
                // logical (two boundary qubits of one check are both right answers).
                let mut check = vec![0u8; h.rows()];
                h.mul_bytes(&corr, &mut check);
                for (row, &c) in check.iter().enumerate() {
                    assert_eq!(c, syn[row / 8] >> (row % 8) & 1, "{id} qubit {q}");
                }
                let mut residual = corr.clone();
                residual[q] ^= 1;
                let logical = if *id == 3 {
                    code.is_logical_z_error(&residual)
                } else {
                    code.is_logical_x_error(&residual)
                };
                assert!(!logical, "{id} qubit {q}: {corr:?}");
            }
            assert!(matches!(
                r.respond(&[0; 5], &mut [0; 16]),
                Err(ResponderError::BadLength { .. })
            ));
            assert!(r.respond(&[0; 2], &mut [0; 2]).is_err());
        }
    }

    #[test]
    fn bad_specs_say_why() {
        for (spec, needle) in [
            ("matching:nosuchcode", "matching:nosuchcode"),
            ("matching:bb72", "X checks: column"),
            ("matching:surface5:error_rate=0.1", "takes no settings"),
            ("matching:/nope/hx.alist+/nope/hz.alist", "/nope/hx.alist"),
        ] {
            let e = matching_functions(spec, 0).err().unwrap().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }
}
