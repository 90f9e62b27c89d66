//! BP+OSD: belief propagation, and ordered-statistics decoding when BP does not converge
//! (Phys. Rev. Research 2, 043423, 2020), with `ldpc`'s parameter names.
//!
//! ```
//! use backline_decoders::{BitMatrix, BpOsdConfig, BpOsdDecoder, OsdMethod};
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
use crate::bp::{BpDecoder, BpMethod, BpSettings, Precision, Schedule};
use crate::decoder::{MechanismDecoder, MechanismsToObservables, ObservableDecoder, ShotInfo};
use crate::dem::DetectorErrorModel;
use crate::error::{DecoderError, SettingError, parse_bounded, parse_flag, parse_value};
use crate::registry::{DecoderConfig, Entry, Profile, Setting, ValueType, config_any};

/// What `max_iter` takes, as its setting errors say.
const MAX_ITER_SETTING: &str = "a non-negative integer in 0..=1048576 (0: the number of bits)";
use crate::osd::{Osd, OsdInit, OsdMethod};
use crate::sparse::SparseMatrix;

/// Settings of [`BpOsdDecoder`], named and defaulted as `ldpc`'s `BpOsdDecoder`.
#[derive(Debug, Clone, PartialEq)]
pub struct BpOsdConfig {
    /// Every bit's error probability, in (0, 0.5). Ignored when `error_channel` is given.
    pub error_rate: f64,
    /// Per-bit error probabilities, each in (0, 0.5); overrides `error_rate`.
    pub error_channel: Option<Vec<f64>>,
    /// Check-node rule (default min-sum).
    pub bp_method: BpMethod,
    /// Maximum BP iterations, at most [`crate::bp::MAX_ITER`]; 0 (default) means `n` (capped at
    /// [`crate::bp::MAX_ITER`]).
    pub max_iter: usize,
    /// Min-sum scaling factor (default 1.0); 0 selects `1 − 2^−it`.
    pub ms_scaling_factor: f64,
    /// BP schedule (default parallel).
    pub schedule: Schedule,
    /// Post-processing when BP does not converge (default OSD-0).
    pub osd_method: OsdMethod,
    /// Combination-sweep order for `OsdCs` (default 0, which is OSD-0), at most
    /// [`crate::osd::MAX_OSD_ORDER`]. An order above the
    /// number of free columns `n − rank(H)` is clamped to it (the effective order,
    /// [`BpOsdDecoder::osd_order`]; one warning per process). Ignored unless `osd_method` is
    /// `OsdCs`.
    pub osd_order: usize,
    /// What OSD orders the columns by (default BP's last soft output; `MinLlr`: each bit's
    /// least LLR over its prior and BP's iterations, NVIDIA's `min_llr`). Not an `ldpc`
    /// setting.
    pub osd_init: OsdInit,
    /// Run OSD on shots where BP converged too, and answer with OSD's correction (default
    /// false: BP's converged answer stands, as in `ldpc`; ldpc issue #104 asks for this). Not
    /// an `ldpc` setting.
    pub osd_on_converged: bool,
    /// BP's arithmetic (default `f64`, `ldpc`'s bit for bit; `f32`: the SIMD kernel of
    /// [`crate::bp32`] for min-sum flooding). Not an `ldpc` setting.
    pub precision: Precision,
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
            osd_init: OsdInit::Soft,
            osd_on_converged: false,
            precision: Precision::F64,
        }
    }
}

impl BpOsdConfig {
    /// The setting names [`BpOsdConfig::set`] takes (`ldpc`'s).
    pub const KEYS: &'static str = "error_rate, bp_method, max_iter, ms_scaling_factor, \
                                    schedule, osd_method, osd_order, osd_init, \
                                    osd_on_converged, precision";

    /// Sets one setting by its `ldpc` name from text: `error_rate`, `bp_method`
    /// (`minimum_sum`/`product_sum`, …), `max_iter`, `ms_scaling_factor`, `schedule`
    /// (`parallel`/`serial`), `osd_method` (`osd0`/`osd_cs`/`off`), `osd_order`, and two of
    /// backline's own: `osd_init` (`soft`/`min_llr`) and `osd_on_converged` (`0`/`1`). The upper
    /// bounds of `max_iter` and `osd_order` are checked here, the other ranges when the
    /// decoder is built.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        match key.trim() {
            "error_rate" => self.error_rate = parse_value(key, value, "a number")?,
            "ms_scaling_factor" => self.ms_scaling_factor = parse_value(key, value, "a number")?,
            "max_iter" => {
                self.max_iter = parse_bounded(key, value, crate::bp::MAX_ITER, MAX_ITER_SETTING)?
            }
            "osd_order" => {
                self.osd_order = parse_bounded(
                    key,
                    value,
                    crate::osd::MAX_OSD_ORDER,
                    crate::osd::OSD_ORDER_RANGE,
                )?
            }
            "bp_method" => {
                self.bp_method = value
                    .trim()
                    .parse()
                    .map_err(|_| SettingError::value(key, value, "minimum_sum or product_sum"))?
            }
            "schedule" => {
                self.schedule = value
                    .trim()
                    .parse()
                    .map_err(|_| SettingError::value(key, value, "parallel or serial"))?
            }
            "osd_method" => {
                self.osd_method = value
                    .trim()
                    .parse()
                    .map_err(|_| SettingError::value(key, value, "osd0, osd_cs or off"))?
            }
            "osd_init" => {
                self.osd_init = value
                    .trim()
                    .parse()
                    .map_err(|_| SettingError::value(key, value, "soft or min_llr"))?
            }
            "osd_on_converged" => self.osd_on_converged = parse_flag(key, value)?,
            "precision" => {
                self.precision = value
                    .trim()
                    .parse()
                    .map_err(|_| SettingError::value(key, value, "f64 or f32"))?
            }
            other => return Err(SettingError::unknown(other, Self::KEYS)),
        }
        Ok(())
    }

    /// The BP part of the settings.
    pub fn bp_settings(&self) -> BpSettings {
        BpSettings {
            bp_method: self.bp_method,
            max_iter: self.max_iter,
            ms_scaling_factor: self.ms_scaling_factor,
            schedule: self.schedule,
            precision: self.precision,
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
    init: OsdInit,
    on_converged: bool,
    m: usize,
    n: usize,
}

impl BpOsdDecoder {
    /// A decoder for checks `h`. Errors on an error rate outside (0, 0.5) or a bad channel or
    /// scaling factor. An OSD order above the number of free columns is clamped (see
    /// [`BpOsdDecoder::osd_order`]).
    pub fn new(h: &BitMatrix, config: &BpOsdConfig) -> Result<BpOsdDecoder, DecoderError> {
        BpOsdDecoder::from_sparse(&SparseMatrix::from_dense(h), config)
    }

    /// [`BpOsdDecoder::new`] for checks in sparse form: the same decoder (the same corrections),
    /// built without a dense copy of the checks except for the rank.
    pub fn from_sparse(
        h: &SparseMatrix,
        config: &BpOsdConfig,
    ) -> Result<BpOsdDecoder, DecoderError> {
        if config.osd_method == OsdMethod::OsdCs {
            crate::osd::check_order(config.osd_order)?;
        }
        let mut bp = BpDecoder::from_sparse(
            h,
            config.error_rate,
            config.error_channel.as_deref(),
            config.bp_settings(),
        )?;
        let osd_on = config.osd_method != OsdMethod::Off;
        bp.track_min_llr(osd_on && config.osd_init == OsdInit::MinLlr);
        let order = match config.osd_method {
            OsdMethod::OsdCs => config.osd_order,
            _ => 0,
        };
        let osd = match config.osd_method {
            OsdMethod::Off => None,
            _ => Some(Osd::from_sparse(h, bp.channel(), order)?),
        };
        Ok(BpOsdDecoder {
            bp,
            osd,
            method: config.osd_method,
            init: config.osd_init,
            on_converged: config.osd_on_converged,
            m: h.rows(),
            n: h.cols(),
        })
    }

    /// The effective OSD-CS order: `min(osd_order, n − rank(H))` for `OsdMethod::OsdCs`, 0 for
    /// OSD-0 and when OSD is off. This is the order the combination sweep runs with; a GPU or
    /// other implementation that must give the same corrections uses this number.
    pub fn osd_order(&self) -> usize {
        self.osd.as_ref().map_or(0, Osd::order)
    }

    /// The OSD engine, when OSD is on.
    pub fn osd(&self) -> Option<&Osd> {
        self.osd.as_ref()
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

    /// What OSD orders the columns by.
    pub fn osd_init(&self) -> OsdInit {
        self.init
    }

    /// Whether OSD runs on converged shots too.
    pub fn osd_on_converged(&self) -> bool {
        self.on_converged
    }

    /// The BP stage (soft output, iterations, hard decision of the last decode).
    pub fn bp(&self) -> &BpDecoder {
        &self.bp
    }

    /// A deadline for the following decodes (`None`: none): BP stops iterating at it, and a
    /// decode that reached it skips OSD and answers with BP's last hard decision
    /// ([`BpDecoder::deadline_hit`] says so; the answer may not reproduce the syndrome).
    pub fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.bp.set_deadline(deadline);
    }

    /// Decodes a syndrome (0/1 per check; any non-zero byte is 1) into `correction` (0/1 per
    /// bit). A zero syndrome gives the zero correction without running BP.
    pub fn decode(
        &mut self,
        syndrome: &[u8],
        correction: &mut [u8],
    ) -> Result<DecodeInfo, DecoderError> {
        crate::error::check_lengths(syndrome.len(), self.m, correction.len(), self.n)?;
        if syndrome.iter().all(|&s| s == 0) {
            correction.fill(0);
            return Ok(DecodeInfo {
                converged: true,
                iterations: 0,
                osd_used: false,
            });
        }
        self.bp.decode(syndrome)?;
        let (osd, init, on_converged) = (&mut self.osd, self.init, self.on_converged);
        Ok(finish(
            &self.bp,
            syndrome,
            osd,
            init,
            on_converged,
            correction,
        ))
    }

    /// Decodes shots `0..shots` as [`BpOsdDecoder::decode`] decodes each, with the same
    /// corrections: `syndrome(shot, buffer)` writes shot `shot`'s syndrome (0/1 per check; any
    /// non-zero byte is 1) into a buffer of [`BpOsdDecoder::checks`] bytes; `answer(shot,
    /// correction, info)` takes each shot's answer once, in the order the shots finish (see
    /// [`BpDecoder::decode_many`]: at `precision = f32`, BP runs several shots at once, one
    /// per lane). Memory is the model's whatever `shots` is. The first error of a callback
    /// ends the call.
    pub fn decode_many<E: From<DecoderError>>(
        &mut self,
        shots: usize,
        mut syndrome: impl FnMut(usize, &mut [u8]) -> Result<(), E>,
        mut answer: impl FnMut(usize, &[u8], ShotInfo) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut correction = vec![0u8; self.n];
        let zero = vec![0u8; self.n];
        let (osd, init, on_converged) = (&mut self.osd, self.init, self.on_converged);
        self.bp.decode_many(
            shots,
            |shot, s| {
                syndrome(shot, s)?;
                Ok(s.iter().any(|&x| x != 0))
            },
            |shot, result| {
                let Some((bp, syndrome)) = result else {
                    // A zero syndrome: the zero correction without BP, as `decode` answers it.
                    let info = ShotInfo {
                        converged: true,
                        ..ShotInfo::default()
                    };
                    return answer(shot, &zero, info);
                };
                let i = finish(bp, syndrome, osd, init, on_converged, &mut correction);
                let info = ShotInfo {
                    converged: i.converged,
                    iterations: i.iterations,
                    osd_used: i.osd_used,
                    legs: 0,
                    deadline_hit: bp.deadline_hit(),
                };
                answer(shot, &correction, info)
            },
        )
    }
}

/// What follows BP's decode of `syndrome` (in `bp`): OSD where BP did not converge (or always,
/// with `on_converged`) unless BP stopped at its deadline, ordered by `init`, its correction
/// into `correction`; else BP's hard decision.
fn finish(
    bp: &BpDecoder,
    syndrome: &[u8],
    osd: &mut Option<Osd>,
    init: OsdInit,
    on_converged: bool,
    correction: &mut [u8],
) -> DecodeInfo {
    let converged = bp.converged();
    let iterations = bp.iterations() as u32;
    // Past a deadline OSD is skipped: BP's hard decision is the best answer so far.
    let late = bp.deadline_hit();
    let wanted = !converged || on_converged;
    match osd {
        Some(osd) if wanted && !late => {
            let order = match init {
                OsdInit::Soft => bp.log_prob_ratios(),
                OsdInit::MinLlr => bp.min_log_prob_ratios(),
            };
            osd.decode(syndrome, order, correction);
            DecodeInfo {
                converged,
                iterations,
                osd_used: true,
            }
        }
        _ => {
            correction.copy_from_slice(bp.decoding());
            DecodeInfo {
                converged,
                iterations,
                osd_used: false,
            }
        }
    }
}

impl BpOsdConfig {
    /// The settings of `profile`: `ldpc`'s defaults offline; in real time 5 min-sum
    /// iterations with α = 0.625 on the `f32` kernel, then OSD-0 — a bounded cost per window, where `ldpc`'s
    /// offline default (as many iterations as mechanisms) lets a window's BP run for
    /// milliseconds, and where more iterations gave OSD no better soft output on stim's
    /// surface-code models (docs/decoders.md, "Deadlines and real-time defaults"). The
    /// registry's table ([`ENTRY`]) states both.
    pub fn for_profile(profile: Profile) -> BpOsdConfig {
        match profile {
            Profile::Offline => BpOsdConfig::default(),
            Profile::Realtime => BpOsdConfig {
                max_iter: 5,
                ms_scaling_factor: 0.625,
                precision: Precision::F32,
                ..BpOsdConfig::default()
            },
        }
    }
}

impl MechanismDecoder for BpOsdDecoder {
    fn checks(&self) -> usize {
        self.m
    }

    fn bits(&self) -> usize {
        self.n
    }

    fn decode_mechanisms(
        &mut self,
        syndrome: &[u8],
        correction: &mut [u8],
    ) -> Result<ShotInfo, DecoderError> {
        let i = self.decode(syndrome, correction)?;
        Ok(ShotInfo {
            converged: i.converged,
            iterations: i.iterations,
            osd_used: i.osd_used,
            legs: 0,
            deadline_hit: self.bp.deadline_hit(),
        })
    }

    fn decode_mechanisms_many(
        &mut self,
        shots: usize,
        syndrome: &crate::decoder::SyndromeOf<'_>,
        answer: &mut dyn FnMut(usize, &[u8], ShotInfo),
    ) -> Result<(), DecoderError> {
        self.decode_many(shots, syndrome, |shot, correction, info| {
            answer(shot, correction, info);
            Ok::<(), DecoderError>(())
        })
    }

    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        BpOsdDecoder::set_deadline(self, deadline);
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl DecoderConfig for BpOsdConfig {
    fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        BpOsdConfig::set(self, key, value)
    }

    fn get(&self, key: &str) -> Option<String> {
        Some(match key {
            "bp_method" => self.bp_method.to_string(),
            "max_iter" => self.max_iter.to_string(),
            "ms_scaling_factor" => self.ms_scaling_factor.to_string(),
            "schedule" => self.schedule.to_string(),
            "osd_method" => self.osd_method.to_string(),
            "osd_order" => self.osd_order.to_string(),
            "osd_init" => self.osd_init.to_string(),
            "osd_on_converged" => u8::from(self.osd_on_converged).to_string(),
            "precision" => self.precision.to_string(),
            _ => return None,
        })
    }

    fn notes(&self) -> Vec<(&'static str, String)> {
        let mut notes = Vec::new();
        if self.osd_order != 0 && self.osd_method != OsdMethod::OsdCs {
            let why = format!(
                "{} applies to osd_method osd_cs only; ignored",
                self.osd_order
            );
            notes.push(("osd_order", why));
        }
        if self.precision == Precision::F32 && !self.bp_settings().runs_f32() {
            notes.push((
                "precision",
                "f32 runs min-sum with the parallel schedule; this BP runs at f64".to_string(),
            ));
        }
        if self.osd_method == OsdMethod::Off {
            if self.osd_init != OsdInit::Soft {
                notes.push(("osd_init", "osd_method is off; ignored".to_string()));
            }
            if self.osd_on_converged {
                notes.push(("osd_on_converged", "osd_method is off; ignored".to_string()));
            }
        }
        notes
    }

    fn build(&self, dem: &DetectorErrorModel) -> Result<Box<dyn ObservableDecoder>, DecoderError> {
        let d = MechanismsToObservables::new(dem, |h, priors| {
            let config = BpOsdConfig {
                error_channel: Some(priors),
                ..self.clone()
            };
            BpOsdDecoder::from_sparse(h, &config)
        })?;
        Ok(Box::new(d))
    }

    config_any!();
}

impl From<BpOsdConfig> for crate::registry::DecoderSettings {
    /// These settings as the registry's entry of their decoder.
    fn from(c: BpOsdConfig) -> crate::registry::DecoderSettings {
        crate::registry::DecoderSettings::of(&ENTRY, Box::new(c))
    }
}

fn bposd_config(profile: Profile) -> Box<dyn DecoderConfig> {
    Box::new(BpOsdConfig::for_profile(profile))
}

/// BP+OSD in the decoder registry, with `ldpc`'s names (`error_rate` and `error_channel` are
/// not settings on a model: each mechanism's prior is its channel).
pub static ENTRY: Entry = Entry {
    name: "bposd",
    title: "BP+OSD",
    summary: "belief propagation, then ordered-statistics decoding where BP does not converge; \
              ldpc's BpOsdDecoder names and defaults",
    settings: &[
        Setting {
            key: "bp_method",
            value: ValueType::Choice(&["minimum_sum", "product_sum"]),
            range: "minimum_sum (ms, min_sum) or product_sum (ps, prod_sum)",
            offline: "minimum_sum",
            realtime: "minimum_sum",
            help: "BP's check-node rule",
        },
        Setting {
            key: "max_iter",
            value: ValueType::Integer,
            range: MAX_ITER_SETTING,
            offline: "0",
            realtime: "5",
            help: "BP iterations at most (0: the number of mechanisms)",
        },
        Setting {
            key: "ms_scaling_factor",
            value: ValueType::Number,
            range: "finite and ≥ 0 (0: the adaptive 1 - 2^-iteration)",
            offline: "1",
            realtime: "0.625",
            help: "min-sum scaling factor",
        },
        Setting {
            key: "schedule",
            value: ValueType::Choice(&["parallel", "serial"]),
            range: "parallel or serial",
            offline: "parallel",
            realtime: "parallel",
            help: "BP's update schedule",
        },
        Setting {
            key: "osd_method",
            value: ValueType::Choice(&["osd0", "osd_cs", "off"]),
            range: "osd0, osd_cs or off",
            offline: "osd0",
            realtime: "osd0",
            help: "post-processing where BP does not converge",
        },
        Setting {
            key: "osd_order",
            value: ValueType::Integer,
            range: crate::osd::OSD_ORDER_RANGE,
            offline: "0",
            realtime: "0",
            help: "combination-sweep order of osd_cs (clamped to n - rank)",
        },
        Setting {
            key: "precision",
            value: ValueType::Choice(&["f64", "f32"]),
            range: "f64 (ldpc's messages bit for bit) or f32 (the SIMD min-sum kernel; \
                    min-sum flooding only)",
            offline: "f64",
            realtime: "f32",
            help: "BP's arithmetic",
        },
        Setting {
            key: "osd_init",
            value: ValueType::Choice(&["soft", "min_llr"]),
            range: "soft (BP's last soft output) or min_llr (each bit's least LLR over its \
                    prior and BP's iterations, NVIDIA's)",
            offline: "soft",
            realtime: "soft",
            help: "what OSD orders the columns by",
        },
        Setting {
            key: "osd_on_converged",
            value: ValueType::Flag,
            range: "0 or 1",
            offline: "0",
            realtime: "0",
            help: "run OSD on shots where BP converged too, answering with OSD's correction",
        },
    ],
    config: bposd_config,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dem_decoder::{DemDecoder, decode_batch};
    use crate::noise::DemNoise;
    use crate::shots::ShotTable;

    fn model() -> DetectorErrorModel {
        DetectorErrorModel::parse(
            include_str!("../tests/data/dem/surface_d3_r8_p0.01.dem"),
            "surface_d3_r8_p0.01.dem",
        )
        .unwrap()
    }

    /// Syndromes of `dem`'s usable mechanisms: sampled shots (some without a detection event),
    /// and every fifth one random bits.
    fn syndromes(dem: &DetectorErrorModel, count: usize) -> Vec<Vec<u8>> {
        let mut noise = DemNoise::new(dem, 17);
        let mut obs = vec![0u8; dem.num_observables()];
        let mut state = 99u64;
        (0..count)
            .map(|i| {
                let mut dets = vec![0u8; dem.num_detectors()];
                noise.sample(&mut dets, &mut obs);
                if i % 5 == 4 {
                    for d in &mut dets {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        *d = (state >> 62) as u8 & 1;
                    }
                }
                dets
            })
            .collect()
    }

    #[test]
    fn many_shots_at_f32_are_answered_as_one_at_a_time() {
        let dem = model();
        let syns = syndromes(&dem, 300);
        let kept = crate::decoder::usable_mechanisms(&dem).unwrap();
        let h = dem.check_matrix().select_columns(&kept);
        let priors: Vec<f64> = kept
            .iter()
            .map(|&k| crate::decoder::bp_prior(dem.priors()[k as usize]))
            .collect();
        let base = BpOsdConfig {
            error_channel: Some(priors),
            max_iter: 12,
            ms_scaling_factor: 0.625,
            precision: Precision::F32,
            ..BpOsdConfig::default()
        };
        let configs = [
            base.clone(),
            BpOsdConfig {
                osd_method: OsdMethod::OsdCs,
                osd_order: 3,
                osd_init: OsdInit::MinLlr,
                ms_scaling_factor: 0.0,
                ..base.clone()
            },
            BpOsdConfig {
                osd_on_converged: true,
                ..base.clone()
            },
            BpOsdConfig {
                osd_method: OsdMethod::Off,
                ..base
            },
        ];
        for config in &configs {
            let mut one = BpOsdDecoder::from_sparse(&h, config).unwrap();
            let mut correction = vec![0u8; h.cols()];
            let want: Vec<(Vec<u8>, DecodeInfo)> = syns
                .iter()
                .map(|s| {
                    let info = one.decode(s, &mut correction).unwrap();
                    (correction.clone(), info)
                })
                .collect();
            // Both kinds of shot are there.
            let converged = want.iter().filter(|w| w.1.converged).count();
            assert!(converged > 0 && converged < syns.len(), "{converged}");
            if config.osd_method != OsdMethod::Off {
                assert!(want.iter().any(|w| w.1.osd_used));
            }
            let mut many = BpOsdDecoder::from_sparse(&h, config).unwrap();
            // Batches of 300, of sizes no multiple of 8, of 8, of one.
            for batch in [300, 61, 8, 5, 1] {
                let mut seen = vec![false; syns.len()];
                for first in (0..syns.len()).step_by(batch) {
                    let count = batch.min(syns.len() - first);
                    many.decode_many(
                        count,
                        |s, out| {
                            out.copy_from_slice(&syns[first + s]);
                            Ok::<(), DecoderError>(())
                        },
                        |s, c, info| {
                            let i = first + s;
                            assert!(!std::mem::replace(&mut seen[i], true), "{i} twice");
                            assert_eq!(c, &want[i].0[..], "{config:?} shot {i}");
                            let w = want[i].1;
                            assert_eq!(
                                (info.converged, info.iterations, info.osd_used),
                                (w.converged, w.iterations, w.osd_used),
                                "{config:?} shot {i}"
                            );
                            Ok(())
                        },
                    )
                    .unwrap();
                }
                assert!(seen.iter().all(|&x| x));
            }
        }
    }

    #[test]
    fn an_untimed_batch_on_the_lanes_predicts_as_a_timed_one_shot_at_a_time() {
        let dem = model();
        let syns = syndromes(&dem, 203);
        let mut t = ShotTable::zeros(syns.len(), dem.num_detectors());
        for (s, d) in syns.iter().enumerate() {
            crate::shots::pack_into(d, t.row_mut(s));
        }
        let mut settings = crate::registry::settings("bposd", Profile::Realtime).unwrap();
        settings.set("max_iter", "15").unwrap();
        let dec = DemDecoder::new(&dem, &settings).unwrap();
        let timed = decode_batch(&dec, &t, 1, true).unwrap();
        for threads in [1, 3] {
            let lanes = decode_batch(&dec, &t, threads, false).unwrap();
            assert_eq!(lanes.predictions, timed.predictions, "{threads}");
            assert_eq!(lanes.converged, timed.converged, "{threads}");
        }
        assert!(timed.converged > 0 && timed.converged < syns.len() as u64);
    }
}
