//! The decoder from a Tanner graph (SPEC §3, third route): a coprocessor function that decodes
//! each syndrome with BP+OSD on the X or Z checks of a CSS code, chosen by `decoder_id`.
//!
//! # Payload format
//!
//! | `decoder_id` | checks | syndrome in | correction out |
//! |---|---|---|---|
//! | [`DECODER_X_CHECKS`] = 0 | `hx` (`mx × n`; they detect Z errors) | `⌈mx/8⌉` bytes | `⌈n/8⌉` bytes: a Z correction |
//! | [`DECODER_Z_CHECKS`] = 1 | `hz` (`mz × n`; they detect X errors) | `⌈mz/8⌉` bytes | `⌈n/8⌉` bytes: an X correction |
//!
//! Both directions are bit-packed LSB-first: bit `i` (syndrome bit `i` = check row `i`, or
//! correction bit `i` = qubit `i`) is bit `i % 8` of byte `i / 8`. The request is `⌈m/8⌉`
//! bytes, or more when every byte after them is zero (a message of a fixed size, as the
//! reference's `PACKED_BYTES`); its padding bits (past `m`) must be zero; the reply's padding
//! bits are zero. [`CssDecoder::respond`] returns the reply length `⌈n/8⌉`.
//!
//! ```
//! use backline_decoders::{BpOsdConfig, CssDecoder, codes::CssCode};
//! let code = CssCode::steane();
//! let mut dec = CssDecoder::from_code(&code, &BpOsdConfig { error_rate: 0.05, ..Default::default() }).unwrap();
//! let mut out = [0u8; 1];
//! // Z checks 0 and 2 fire (syndrome 0b101): the X error is on qubit 4.
//! let len = dec.respond(1, &[0b101], &mut out).unwrap();
//! assert_eq!((len, out[0]), (1, 1 << 4));
//! ```

use crate::bitmat::BitMatrix;
use crate::bposd::{BpOsdConfig, BpOsdDecoder, DecodeInfo};
use crate::codes::CssCode;
use crate::error::DecoderError;

/// `decoder_id` of the X checks (`hx`).
pub const DECODER_X_CHECKS: u32 = 0;
/// `decoder_id` of the Z checks (`hz`).
pub const DECODER_Z_CHECKS: u32 = 1;

/// Why [`CssDecoder::respond`] refused a request. `Copy` and allocation-free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RespondError {
    /// A `decoder_id` other than 0 and 1.
    #[error("unknown decoder_id {0} (0 = X checks, 1 = Z checks)")]
    UnknownDecoder(u32),
    /// The syndrome is shorter than `⌈m/8⌉` bytes.
    #[error("decoder {decoder_id}: syndrome is {found} bytes, expected {expected}")]
    SyndromeLength {
        /// The decoder.
        decoder_id: u32,
        /// `⌈m/8⌉`.
        expected: usize,
        /// Bytes given.
        found: usize,
    },
    /// Bits past `m` are set: in the syndrome's last byte, or in the zero bytes after it that
    /// a fixed-size message (the reference's `PACKED_BYTES`) carries.
    #[error("decoder {decoder_id}: syndrome padding bits past bit {checks} are set")]
    SyndromePadding {
        /// The decoder.
        decoder_id: u32,
        /// `m`.
        checks: usize,
    },
    /// The output buffer is shorter than `⌈n/8⌉` bytes.
    #[error("output buffer holds {capacity} bytes, the correction needs {needed}")]
    OutputTooSmall {
        /// `⌈n/8⌉`.
        needed: usize,
        /// Bytes available.
        capacity: usize,
    },
}

/// Errors building a [`CssDecoder`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CssDecoderError {
    /// `hx` and `hz` differ in length or do not commute.
    #[error(transparent)]
    Code(#[from] crate::codes::CodeError),
    /// The decoder for `hx` (decoder 0) could not be built.
    #[error("X checks (decoder 0): {0}")]
    X(DecoderError),
    /// The decoder for `hz` (decoder 1) could not be built.
    #[error("Z checks (decoder 1): {0}")]
    Z(DecoderError),
}

/// BP+OSD decoders for both check types of a CSS code, served per message by `decoder_id`.
///
/// Built once; [`CssDecoder::respond`] does not allocate, lock or log.
#[derive(Debug, Clone)]
pub struct CssDecoder {
    decoders: [BpOsdDecoder; 2],
    n: usize,
    syndrome: Vec<u8>,
    correction: Vec<u8>,
    last: DecodeInfo,
}

impl CssDecoder {
    /// Decoders for X checks `hx` and Z checks `hz` (same number of columns, commuting), both
    /// with `config`.
    pub fn new(
        hx: &BitMatrix,
        hz: &BitMatrix,
        config: &BpOsdConfig,
    ) -> Result<CssDecoder, CssDecoderError> {
        crate::codes::check_css(hx, hz)?;
        let x = BpOsdDecoder::new(hx, config).map_err(CssDecoderError::X)?;
        let z = BpOsdDecoder::new(hz, config).map_err(CssDecoderError::Z)?;
        let n = hx.cols();
        Ok(CssDecoder {
            syndrome: vec![0; hx.rows().max(hz.rows())],
            correction: vec![0; n],
            decoders: [x, z],
            n,
            last: DecodeInfo::default(),
        })
    }

    /// Decoders for a code from the library.
    pub fn from_code(code: &CssCode, config: &BpOsdConfig) -> Result<CssDecoder, CssDecoderError> {
        CssDecoder::new(&code.hx, &code.hz, config)
    }

    /// Syndrome bytes that `decoder_id` expects (`⌈m/8⌉`), or `None` for an unknown id.
    pub fn syndrome_bytes(&self, decoder_id: u32) -> Option<usize> {
        self.decoder(decoder_id).map(|d| d.checks().div_ceil(8))
    }

    /// Correction bytes written by every decoder (`⌈n/8⌉`).
    pub fn correction_bytes(&self) -> usize {
        self.n.div_ceil(8)
    }

    /// What the last successful [`CssDecoder::respond`] did.
    pub fn last_info(&self) -> DecodeInfo {
        self.last
    }

    /// The decoder behind `decoder_id`.
    pub fn decoder(&self, decoder_id: u32) -> Option<&BpOsdDecoder> {
        self.decoders.get(decoder_id as usize)
    }

    /// Decodes one bit-packed syndrome with decoder `decoder_id` (0 = X checks, 1 = Z checks)
    /// and writes the bit-packed correction to the front of `out`; returns its length in bytes.
    /// See the [module docs](self) for the payload format.
    pub fn respond(
        &mut self,
        decoder_id: u32,
        syndrome: &[u8],
        out: &mut [u8],
    ) -> Result<usize, RespondError> {
        let dec = self
            .decoders
            .get_mut(decoder_id as usize)
            .ok_or(RespondError::UnknownDecoder(decoder_id))?;
        let m = dec.checks();
        let expected = m.div_ceil(8);
        if syndrome.len() < expected {
            return Err(RespondError::SyndromeLength {
                decoder_id,
                expected,
                found: syndrome.len(),
            });
        }
        let (syndrome, padding) = syndrome.split_at(expected);
        if padding.iter().any(|&b| b != 0) || m % 8 != 0 && syndrome[expected - 1] >> (m % 8) != 0 {
            return Err(RespondError::SyndromePadding {
                decoder_id,
                checks: m,
            });
        }
        let needed = self.n.div_ceil(8);
        if out.len() < needed {
            return Err(RespondError::OutputTooSmall {
                needed,
                capacity: out.len(),
            });
        }
        let syn = &mut self.syndrome[..m];
        for (i, s) in syn.iter_mut().enumerate() {
            *s = syndrome[i / 8] >> (i % 8) & 1;
        }
        // Lengths were checked above, so the decoder cannot refuse.
        self.last = dec.decode(syn, &mut self.correction).unwrap_or_default();
        let out = &mut out[..needed];
        out.fill(0);
        for (i, &c) in self.correction.iter().enumerate() {
            out[i / 8] |= c << (i % 8);
        }
        Ok(needed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steane() -> CssDecoder {
        let config = BpOsdConfig {
            error_rate: 0.05,
            ..Default::default()
        };
        CssDecoder::from_code(&CssCode::steane(), &config).unwrap()
    }

    #[test]
    fn every_single_qubit_error_both_decoders() {
        let mut dec = steane();
        let mut out = [0xFFu8; 4];
        for id in [DECODER_X_CHECKS, DECODER_Z_CHECKS] {
            for q in 0..7 {
                let s = crate::steane::syndrome_of(1 << q);
                let len = dec.respond(id, &[s], &mut out).unwrap();
                assert_eq!(len, 1);
                assert_eq!(out[0], 1 << q, "decoder {id} qubit {q}");
                assert_eq!(out[1], 0xFF, "bytes past the reply are untouched");
            }
        }
    }

    #[test]
    fn bad_requests_are_typed_errors() {
        let mut dec = steane();
        let mut out = [0u8; 1];
        assert_eq!(
            dec.respond(2, &[1], &mut out),
            Err(RespondError::UnknownDecoder(2))
        );
        assert_eq!(
            dec.respond(0, &[], &mut out),
            Err(RespondError::SyndromeLength {
                decoder_id: 0,
                expected: 1,
                found: 0
            })
        );
        // A fixed-size message's zero bytes after the syndrome are padding; set bits there
        // are refused like set padding bits of the last byte.
        assert!(dec.respond(0, &[1, 0], &mut out).is_ok());
        assert_eq!(
            dec.respond(0, &[1, 1], &mut out),
            Err(RespondError::SyndromePadding {
                decoder_id: 0,
                checks: 3
            })
        );
        assert_eq!(
            dec.respond(1, &[0b1000], &mut out),
            Err(RespondError::SyndromePadding {
                decoder_id: 1,
                checks: 3
            })
        );
        assert_eq!(
            dec.respond(0, &[1], &mut []),
            Err(RespondError::OutputTooSmall {
                needed: 1,
                capacity: 0
            })
        );
        assert_eq!(dec.syndrome_bytes(0), Some(1));
        assert_eq!(dec.syndrome_bytes(7), None);
        assert_eq!(dec.correction_bytes(), 1);
    }

    #[test]
    fn multi_byte_payloads_on_bb72() {
        let code = CssCode::bb72();
        let config = BpOsdConfig {
            error_rate: 0.02,
            max_iter: 20,
            ..Default::default()
        };
        let mut dec = CssDecoder::from_code(&code, &config).unwrap();
        assert_eq!(dec.syndrome_bytes(1), Some(5));
        assert_eq!(dec.correction_bytes(), 9);
        // X error on qubits 3 and 40: syndrome from hz, packed LSB-first.
        let mut e = vec![0u8; 72];
        e[3] = 1;
        e[40] = 1;
        let mut s = vec![0u8; 36];
        code.hz.mul_bytes(&e, &mut s);
        let mut packed = [0u8; 5];
        for (i, &b) in s.iter().enumerate() {
            packed[i / 8] |= b << (i % 8);
        }
        let mut out = [0u8; 9];
        assert_eq!(dec.respond(1, &packed, &mut out).unwrap(), 9);
        let c: Vec<u8> = (0..72).map(|i| out[i / 8] >> (i % 8) & 1).collect();
        let mut s2 = vec![0u8; 36];
        code.hz.mul_bytes(&c, &mut s2);
        assert_eq!(s2, s, "the correction reproduces the syndrome");
        let residual: Vec<u8> = e.iter().zip(&c).map(|(a, b)| a ^ b).collect();
        assert!(!code.is_logical_x_error(&residual));
    }

    #[test]
    fn construction_errors() {
        let h = BitMatrix::from_picture("11").unwrap();
        let g = BitMatrix::from_picture("1.").unwrap();
        let config = BpOsdConfig::default();
        assert!(matches!(
            CssDecoder::new(&h, &g, &config),
            Err(CssDecoderError::Code(_))
        ));
        let code = CssCode::steane();
        let bad = BpOsdConfig {
            error_rate: 0.7,
            ..Default::default()
        };
        assert_eq!(
            CssDecoder::from_code(&code, &bad).unwrap_err().to_string(),
            "X checks (decoder 0): error rate 0.7 is outside (0, 0.5)"
        );
    }
}
