//! BP+OSD: belief propagation, and ordered-statistics decoding when BP does not converge
//! (Phys. Rev. Research 2, 043423, 2020), with `ldpc`'s parameter names.
//!
//! ```
//! use backline_decode::{BitMatrix, BpOsdConfig, BpOsdDecoder, OsdMethod};
//! let h = BitMatrix::from_picture("1.1.1.1\n.11..11\n...1111").unwrap();
//! let config = BpOsdConfig {
//!     error_rate: 0.05,
//!     max_iter: 10,
//!     osd_method: OsdMethod::OsdCs,
//!     osd_order: 2,
//!     ..BpOsdConfig::default()
//! };
//! let mut decoder = BpOsdDecoder::new(&h, &config).unwrap();
//! let mut correction = [0u8; 7];
//! let info = decoder.decode(&[1, 0, 1], &mut correction).unwrap();
//! assert_eq!(correction, [0, 0, 0, 0, 1, 0, 0]);
//! assert!(info.converged);
//! ```

use crate::bitmat::BitMatrix;
use crate::bp::{BpDecoder, BpMethod, BpSettings, Schedule};
use crate::error::DecoderError;
use crate::osd::{Osd, OsdMethod};

/// Settings of [`BpOsdDecoder`], named and defaulted as `ldpc`'s `BpOsdDecoder`.
#[derive(Debug, Clone, PartialEq)]
pub struct BpOsdConfig {
    /// Every bit's error probability, in (0, 0.5). Ignored when `error_channel` is given.
    pub error_rate: f64,
    /// Per-bit error probabilities, each in (0, 0.5); overrides `error_rate`.
    pub error_channel: Option<Vec<f64>>,
    /// Check-node rule (default min-sum).
    pub bp_method: BpMethod,
    /// Maximum BP iterations; 0 (default) means `n`.
    pub max_iter: usize,
    /// Min-sum scaling factor (default 1.0); 0 selects `1 − 2^−it`.
    pub ms_scaling_factor: f64,
    /// BP schedule (default parallel).
    pub schedule: Schedule,
    /// Post-processing when BP does not converge (default OSD-0).
    pub osd_method: OsdMethod,
    /// Combination-sweep order for `OsdCs` (default 0, which is OSD-0). Must not exceed the
    /// number of free columns `n − rank(H)`. Ignored unless `osd_method` is `OsdCs`.
    pub osd_order: usize,
}

impl Default for BpOsdConfig {
    fn default() -> BpOsdConfig {
        BpOsdConfig {
            error_rate: 0.01,
            error_channel: None,
            bp_method: BpMethod::MinimumSum,
            max_iter: 0,
            ms_scaling_factor: 1.0,
            schedule: Schedule::Parallel,
            osd_method: OsdMethod::Osd0,
            osd_order: 0,
        }
    }
}

impl BpOsdConfig {
    /// The BP part of the settings.
    pub fn bp_settings(&self) -> BpSettings {
        BpSettings {
            bp_method: self.bp_method,
            max_iter: self.max_iter,
            ms_scaling_factor: self.ms_scaling_factor,
            schedule: self.schedule,
        }
    }
}

/// What one decode did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DecodeInfo {
    /// BP's hard decision reproduced the syndrome (true for a zero syndrome, as in `ldpc`).
    pub converged: bool,
    /// BP iterations run (0 for a zero syndrome).
    pub iterations: u32,
    /// OSD produced the correction.
    pub osd_used: bool,
}

/// BP+OSD for one parity-check matrix. Built once; [`BpOsdDecoder::decode`] does not allocate.
#[derive(Debug, Clone)]
pub struct BpOsdDecoder {
    bp: BpDecoder,
    osd: Option<Osd>,
    method: OsdMethod,
    m: usize,
    n: usize,
}

impl BpOsdDecoder {
    /// A decoder for checks `h`. Errors on an error rate outside (0, 0.5), a bad channel or
    /// scaling factor, or an OSD order above the number of free columns.
    pub fn new(h: &BitMatrix, config: &BpOsdConfig) -> Result<BpOsdDecoder, DecoderError> {
        let bp = BpDecoder::new(
            h,
            config.error_rate,
            config.error_channel.as_deref(),
            config.bp_settings(),
        )?;
        let order = match config.osd_method {
            OsdMethod::OsdCs => config.osd_order,
            _ => 0,
        };
        let osd = match config.osd_method {
            OsdMethod::Off => None,
            _ => Some(Osd::new(h, bp.channel(), order)?),
        };
        Ok(BpOsdDecoder {
            bp,
            osd,
            method: config.osd_method,
            m: h.rows(),
            n: h.cols(),
        })
    }

    /// Number of checks (syndrome bits).
    pub fn checks(&self) -> usize {
        self.m
    }

    /// Number of bits (correction length).
    pub fn bits(&self) -> usize {
        self.n
    }

    /// The OSD method in force.
    pub fn osd_method(&self) -> OsdMethod {
        self.method
    }

    /// The BP stage (soft output, iterations, hard decision of the last decode).
    pub fn bp(&self) -> &BpDecoder {
        &self.bp
    }

    /// Decodes a syndrome (0/1 per check; any non-zero byte is 1) into `correction` (0/1 per
    /// bit). A zero syndrome gives the zero correction without running BP.
    pub fn decode(
        &mut self,
        syndrome: &[u8],
        correction: &mut [u8],
    ) -> Result<DecodeInfo, DecoderError> {
        if syndrome.len() != self.m {
            return Err(DecoderError::SyndromeLength {
                expected: self.m,
                found: syndrome.len(),
            });
        }
        if correction.len() != self.n {
            return Err(DecoderError::OutputLength {
                expected: self.n,
                found: correction.len(),
            });
        }
        if syndrome.iter().all(|&s| s == 0) {
            correction.fill(0);
            return Ok(DecodeInfo {
                converged: true,
                iterations: 0,
                osd_used: false,
            });
        }
        self.bp.decode(syndrome)?;
        let converged = self.bp.converged();
        let iterations = self.bp.iterations() as u32;
        match (&mut self.osd, converged) {
            (Some(osd), false) => {
                osd.decode(syndrome, self.bp.log_prob_ratios(), correction);
                Ok(DecodeInfo {
                    converged,
                    iterations,
                    osd_used: true,
                })
            }
            _ => {
                correction.copy_from_slice(self.bp.decoding());
                Ok(DecodeInfo {
                    converged,
                    iterations,
                    osd_used: false,
                })
            }
        }
    }
}
