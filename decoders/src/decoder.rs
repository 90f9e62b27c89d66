//! The trait pair every decoder implements, and the adaptor between them.
//!
//! - A [`MechanismDecoder`] answers a syndrome of its checks with the error *mechanisms* that
//!   explain it (BP+OSD, Relay-BP): one 0/1 byte per column of its check matrix.
//! - An [`ObservableDecoder`] answers a shot's detection events with the *observables* they
//!   flip (matching, whose paths never name a mechanism), in stim's `b8` layout.
//! - [`MechanismsToObservables`] makes any mechanism decoder an observable decoder on a
//!   detector error model: it keeps the model's usable mechanisms as columns, decodes, and
//!   folds the chosen mechanisms' observables together.
//!
//! Everything that works on whole models (batches over threads, the streams, the front ends)
//! is written once against [`ObservableDecoder`]; nothing outside a decoder's own module asks
//! which decoder it has. Both traits are object safe, and each decoder can copy itself
//! ([`ObservableDecoder::clone_box`]) so that a batch gives every thread its own scratch.
//!
//! Decoding does not allocate: every buffer the adaptor needs is sized when it is built.

use std::any::Any;
use std::time::Instant;

use crate::bitmat::words_for;
use crate::dem::DetectorErrorModel;
use crate::error::DecoderError;
use crate::sparse::SparseMatrix;

/// What one shot's decode did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShotInfo {
    /// BP (BP+OSD), or some leg (Relay-BP), reproduced the detection events; a matching
    /// always does.
    pub converged: bool,
    /// BP iterations (over all legs for Relay-BP; 0 for matching).
    pub iterations: u32,
    /// OSD made the answer (BP+OSD).
    pub osd_used: bool,
    /// Legs run (Relay-BP; 0 otherwise).
    pub legs: u32,
    /// The decode stopped at its deadline ([`ObservableDecoder::set_deadline`]) with the best
    /// answer it had (BP's last hard decision, OSD skipped; Relay-BP's best solution so far).
    pub deadline_hit: bool,
}

/// Writes shot `shot`'s syndrome (0/1 per check) into a buffer
/// ([`MechanismDecoder::decode_mechanisms_many`]), or says why the shot cannot be decoded.
pub type SyndromeOf<'a> = dyn Fn(usize, &mut [u8]) -> Result<(), DecoderError> + 'a;

/// A decoder of error mechanisms: syndrome in (one 0/1 byte per check), the mechanisms that
/// explain it out (one 0/1 byte per column).
pub trait MechanismDecoder: std::fmt::Debug + Send + Sync + 'static {
    /// Rows of the check matrix (bits of a syndrome).
    fn checks(&self) -> usize;
    /// Columns of the check matrix (entries of a correction).
    fn bits(&self) -> usize;
    /// Decodes `syndrome` into `correction`. Lengths are the caller's to get right
    /// ([`MechanismsToObservables`] sizes them once); a decoder still refuses wrong ones.
    fn decode_mechanisms(
        &mut self,
        syndrome: &[u8],
        correction: &mut [u8],
    ) -> Result<ShotInfo, DecoderError>;
    /// Decodes `shots` syndromes: `syndrome(shot, buffer)` writes shot `shot`'s (0/1 per check)
    /// into a buffer of [`MechanismDecoder::checks`] bytes, `answer(shot, correction, info)`
    /// takes each shot's answer once, in any order; the first error ends the call. By default
    /// one by one, in order, through [`MechanismDecoder::decode_mechanisms`]; a decoder with a
    /// faster way through many shots (BP+OSD's lanes across shots) overrides it. Memory is
    /// the model's whatever `shots` is.
    fn decode_mechanisms_many(
        &mut self,
        shots: usize,
        syndrome: &SyndromeOf<'_>,
        answer: &mut dyn FnMut(usize, &[u8], ShotInfo),
    ) -> Result<(), DecoderError> {
        let mut s = vec![0u8; self.checks()];
        let mut c = vec![0u8; self.bits()];
        for shot in 0..shots {
            syndrome(shot, &mut s)?;
            let info = self.decode_mechanisms(&s, &mut c)?;
            answer(shot, &c, info);
        }
        Ok(())
    }
    /// Sets (or, with `None`, clears) the deadline of the next decodes.
    fn set_deadline(&mut self, deadline: Option<Instant>);
    /// The decoder as `Any`, for a front end that reports a decoder's own figures.
    fn as_any(&self) -> &dyn Any;
}

/// A decoder of observables: one shot's detection events in stim's `b8` layout
/// (`⌈detectors/8⌉` bytes) in, its observable flips (`⌈observables/8⌉` bytes, padding bits
/// zero) out.
pub trait ObservableDecoder: std::fmt::Debug + Send + Sync + 'static {
    /// Detectors of the model.
    fn num_detectors(&self) -> usize;
    /// Observables of the model.
    fn num_observables(&self) -> usize;
    /// Decodes one shot. The lengths have been checked by the caller
    /// ([`crate::dem_decoder::DemDecoder`] does).
    fn decode_packed(
        &mut self,
        detectors: &[u8],
        observables: &mut [u8],
    ) -> Result<ShotInfo, DecoderError>;
    /// Decodes `shots` shots packed back to back (`detectors`: `shots` records of
    /// `⌈detectors/8⌉` bytes, `observables`: `shots` records of `⌈observables/8⌉` bytes),
    /// calling `each` once per shot as it is answered, in any order; the first error ends the
    /// call. By default one by one through [`ObservableDecoder::decode_packed`]; a decoder
    /// with a faster way through many shots overrides it. The lengths have been checked by
    /// the caller.
    fn decode_packed_many(
        &mut self,
        shots: usize,
        detectors: &[u8],
        observables: &mut [u8],
        each: &mut dyn FnMut(ShotInfo),
    ) -> Result<(), DecoderError> {
        let (din, dout) = (
            self.num_detectors().div_ceil(8),
            self.num_observables().div_ceil(8),
        );
        for s in 0..shots {
            let out = &mut observables[s * dout..(s + 1) * dout];
            each(self.decode_packed(&detectors[s * din..(s + 1) * din], out)?);
        }
        Ok(())
    }
    /// Sets (or clears) a deadline for the next decodes; a decoder without a partial answer
    /// (matching) ignores it and always finishes.
    fn set_deadline(&mut self, _deadline: Option<Instant>) {}
    /// Answer detection events that no usable mechanism explains as best the decoder can,
    /// instead of refusing the shot ([`DecoderError::Unexplained`]): for the cut model of a
    /// stream's window, whose detectors may be flipped only by mechanisms committed in an
    /// earlier window. A decoder that never refuses them ignores it.
    fn allow_unexplained(&mut self) {}
    /// The model's mechanisms the decoder works on, ascending (decoder column `j` is
    /// mechanism `mechanisms()[j]`); empty for a decoder that does not name mechanisms.
    fn mechanisms(&self) -> &[u32] {
        &[]
    }
    /// The last decode's answer over [`ObservableDecoder::mechanisms`], one 0/1 byte each
    /// (empty for a decoder that does not name mechanisms).
    fn correction(&self) -> &[u8] {
        &[]
    }
    /// A copy with its own scratch (one per decoding thread).
    fn clone_box(&self) -> Box<dyn ObservableDecoder>;
    /// The decoder as `Any`: the adaptor answers with its mechanism decoder, so that a front
    /// end can report a decoder's own figures (BP+OSD's effective OSD order, say).
    fn as_any(&self) -> &dyn Any;
}

/// A mechanism decoder on a detector error model, answering with observables.
///
/// The columns are the model's mechanisms that some decoder could flip: those with `p > 0`
/// that flip at least one detector (no decoder would choose the others). The observables of
/// each column are kept packed, so that folding a correction into observable flips is one XOR
/// of words per chosen column.
#[derive(Debug, Clone)]
pub struct MechanismsToObservables<D> {
    inner: D,
    num_detectors: usize,
    num_observables: usize,
    /// Decoder column → model mechanism.
    kept: Vec<u32>,
    /// Observable words per column, and each column's observables packed.
    obs_words: usize,
    obs_masks: Vec<u64>,
    syndrome: Vec<u8>,
    correction: Vec<u8>,
    obs_acc: Vec<u64>,
    /// Detectors no kept mechanism flips, packed as the shots are (empty when there is none);
    /// a shot with an event there is refused ([`DecoderError::Unexplained`]) unless `refuse`
    /// is off.
    silent: Vec<u8>,
    refuse: bool,
}

/// The observables of [`MechanismsToObservables`]' columns, packed, and how to fold a
/// correction into observable flips.
struct Folding<'a> {
    /// Each column's observables, `words` words a column.
    masks: &'a [u64],
    words: usize,
    /// Observables of the model.
    observables: usize,
}

impl Folding<'_> {
    /// The observables `correction` (0/1 per column) flips, XORed together in `acc` (`words`
    /// words), into `out` in the `b8` layout (padding bits zero).
    fn fold(&self, correction: &[u8], acc: &mut [u64], out: &mut [u8]) {
        acc.fill(0);
        let w = self.words;
        for (j, &c) in correction.iter().enumerate() {
            if c != 0 {
                for (a, m) in acc.iter_mut().zip(&self.masks[j * w..(j + 1) * w]) {
                    *a ^= m;
                }
            }
        }
        for (k, o) in out.iter_mut().enumerate() {
            *o = (acc[k / 8] >> (8 * (k % 8)) & 0xff) as u8;
        }
        if !self.observables.is_multiple_of(8)
            && let Some(last) = out.last_mut()
        {
            *last &= (1u8 << (self.observables % 8)) - 1;
        }
    }
}

/// The largest prior a mechanism enters BP with: a mechanism with `p ≥ ½` (more likely to have
/// happened than not) enters with `½ − 2⁻³⁰`, a prior that says nothing either way, so that the
/// syndrome alone decides whether it is chosen. (BP's messages assume priors below ½, and
/// `ldpc` refuses a channel of ½; matching weighs such an edge negatively instead, as
/// PyMatching does.)
pub const MAX_BP_PRIOR: f64 = 0.5 - 1.0 / (1u64 << 30) as f64;

/// Whether some mechanism of `dem` with `p > 0` flips a detector: whether a decoder can infer
/// anything from a shot's detection events. A model without one (no detectors, or mechanisms
/// that flip only observables) is answered by [`ConstantDecoder`].
pub fn has_evidence(dem: &DetectorErrorModel) -> bool {
    (0..dem.num_mechanisms()).any(|k| {
        let m = dem.mechanism(k);
        m.p > 0.0 && !m.detectors.is_empty()
    })
}

/// The first detection event of `detectors` (a packed shot) on a detector set in `mask` (packed
/// the same way; a shorter mask ends the search): the detector no usable mechanism explains,
/// as [`DecoderError::Unexplained`]. One byte compare per 8 detectors; no allocation.
fn unexplained(detectors: &[u8], mask: &[u8]) -> Result<(), DecoderError> {
    match detectors
        .iter()
        .zip(mask)
        .enumerate()
        .find(|(_, (d, m))| **d & **m != 0)
    {
        Some((i, (d, m))) => Err(DecoderError::Unexplained(
            (8 * i) as u32 + (d & m).trailing_zeros(),
        )),
        None => Ok(()),
    }
}

/// The usable mechanisms of `dem` (see [`MechanismsToObservables`]); a prior of `p ≥ ½` is
/// used as [`MAX_BP_PRIOR`] (see [`bp_prior`]).
pub fn usable_mechanisms(dem: &DetectorErrorModel) -> Result<Vec<u32>, DecoderError> {
    let mut kept = Vec::new();
    for k in 0..dem.num_mechanisms() {
        let mech = dem.mechanism(k);
        if mech.p <= 0.0 || mech.p.is_nan() || mech.detectors.is_empty() {
            continue;
        }
        kept.push(k as u32);
    }
    if kept.is_empty() {
        return Err(DecoderError::NothingToDecode(dem.name().to_string()));
    }
    Ok(kept)
}

/// The prior a mechanism of probability `p` enters BP with: `p`, or [`MAX_BP_PRIOR`] for
/// `p ≥ ½`.
pub fn bp_prior(p: f64) -> f64 {
    p.min(MAX_BP_PRIOR)
}

/// The decoder of a model from which nothing can be inferred (no mechanism with `p > 0` flips
/// a detector: an empty circuit's model, one without detectors): every shot without detection
/// events is predicted to flip no observable, as PyMatching predicts for such a model. A shot
/// with a detection event has no explanation in such a model (no error that can happen flips
/// a detector): it is refused with [`DecoderError::Unexplained`], as PyMatching refuses it. Built by the registry for any
/// decoder ([`crate::registry::DecoderSettings::build`]), so that every decoder keeps sinter's
/// contract for degenerate models.
#[derive(Debug, Clone)]
pub struct ConstantDecoder {
    num_detectors: usize,
    num_observables: usize,
    /// Every detector, packed (padding bits clear): an event on any is unexplained.
    all: Vec<u8>,
}

impl ConstantDecoder {
    /// The constant decoder of `dem`'s shape.
    pub fn new(dem: &DetectorErrorModel) -> ConstantDecoder {
        let n = dem.num_detectors();
        let mut all = vec![0xFF; n.div_ceil(8)];
        if !n.is_multiple_of(8)
            && let Some(last) = all.last_mut()
        {
            *last = (1u8 << (n % 8)) - 1;
        }
        ConstantDecoder {
            num_detectors: n,
            num_observables: dem.num_observables(),
            all,
        }
    }
}

impl ObservableDecoder for ConstantDecoder {
    fn num_detectors(&self) -> usize {
        self.num_detectors
    }

    fn num_observables(&self) -> usize {
        self.num_observables
    }

    fn decode_packed(
        &mut self,
        detectors: &[u8],
        observables: &mut [u8],
    ) -> Result<ShotInfo, DecoderError> {
        observables.fill(0);
        // Bits past the detector count are padding, not events (`all` has them clear).
        unexplained(detectors, &self.all)?;
        Ok(ShotInfo {
            converged: true,
            ..ShotInfo::default()
        })
    }

    fn clone_box(&self) -> Box<dyn ObservableDecoder> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl<D: MechanismDecoder + Clone> MechanismsToObservables<D> {
    /// Keeps `dem`'s usable mechanisms and builds the decoder with `build(checks, priors)`
    /// over them.
    ///
    /// Errors: [`DecoderError::NothingToDecode`] when no mechanism is usable (the registry
    /// answers such a model with a [`ConstantDecoder`] before it gets here), and `build`'s
    /// own.
    pub fn new(
        dem: &DetectorErrorModel,
        build: impl FnOnce(&SparseMatrix, Vec<f64>) -> Result<D, DecoderError>,
    ) -> Result<MechanismsToObservables<D>, DecoderError> {
        let kept = usable_mechanisms(dem)?;
        let h: SparseMatrix = dem.check_matrix().select_columns(&kept);
        let priors: Vec<f64> = kept
            .iter()
            .map(|&k| bp_prior(dem.priors()[k as usize]))
            .collect();
        let inner = build(&h, priors)?;
        let num_observables = dem.num_observables();
        let obs_words = words_for(num_observables).max(1);
        let mut obs_masks = vec![0u64; kept.len() * obs_words];
        for (j, &k) in kept.iter().enumerate() {
            for &l in dem.observable_matrix().col(k as usize) {
                obs_masks[j * obs_words + l as usize / 64] |= 1 << (l % 64);
            }
        }
        let mut silent = vec![0u8; dem.num_detectors().div_ceil(8)];
        for (r, &w) in h.row_weights().iter().enumerate() {
            if w == 0 {
                silent[r / 8] |= 1 << (r % 8);
            }
        }
        if silent.iter().all(|&b| b == 0) {
            silent.clear(); // nothing to check per shot
        }
        Ok(MechanismsToObservables {
            inner,
            silent,
            refuse: true,
            num_detectors: dem.num_detectors(),
            num_observables,
            correction: vec![0; kept.len()],
            kept,
            obs_words,
            obs_masks,
            syndrome: vec![0; dem.num_detectors()],
            obs_acc: vec![0; obs_words],
        })
    }

    /// The mechanism decoder inside.
    pub fn inner(&self) -> &D {
        &self.inner
    }
}

impl<D: MechanismDecoder + Clone> ObservableDecoder for MechanismsToObservables<D> {
    fn num_detectors(&self) -> usize {
        self.num_detectors
    }

    fn num_observables(&self) -> usize {
        self.num_observables
    }

    fn decode_packed(
        &mut self,
        detectors: &[u8],
        observables: &mut [u8],
    ) -> Result<ShotInfo, DecoderError> {
        if self.refuse {
            unexplained(detectors, &self.silent)?;
        }
        for (i, s) in self.syndrome.iter_mut().enumerate() {
            *s = detectors[i / 8] >> (i % 8) & 1;
        }
        let info = self
            .inner
            .decode_mechanisms(&self.syndrome, &mut self.correction)?;
        let folding = Folding {
            masks: &self.obs_masks,
            words: self.obs_words,
            observables: self.num_observables,
        };
        folding.fold(&self.correction, &mut self.obs_acc, observables);
        Ok(info)
    }

    fn decode_packed_many(
        &mut self,
        shots: usize,
        detectors: &[u8],
        observables: &mut [u8],
        each: &mut dyn FnMut(ShotInfo),
    ) -> Result<(), DecoderError> {
        let (din, dout) = (
            self.num_detectors.div_ceil(8),
            self.num_observables.div_ceil(8),
        );
        let folding = Folding {
            masks: &self.obs_masks,
            words: self.obs_words,
            observables: self.num_observables,
        };
        let (silent, refuse, acc) = (&self.silent[..], self.refuse, &mut self.obs_acc);
        self.inner.decode_mechanisms_many(
            shots,
            &|shot, syndrome| {
                let row = &detectors[shot * din..(shot + 1) * din];
                if refuse {
                    unexplained(row, silent)?;
                }
                for (i, s) in syndrome.iter_mut().enumerate() {
                    *s = row[i / 8] >> (i % 8) & 1;
                }
                Ok(())
            },
            &mut |shot, correction, info| {
                folding.fold(
                    correction,
                    acc,
                    &mut observables[shot * dout..(shot + 1) * dout],
                );
                each(info);
            },
        )
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.inner.set_deadline(deadline);
    }

    fn allow_unexplained(&mut self) {
        self.refuse = false;
    }

    fn mechanisms(&self) -> &[u32] {
        &self.kept
    }

    fn correction(&self) -> &[u8] {
        &self.correction
    }

    fn clone_box(&self) -> Box<dyn ObservableDecoder> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self.inner.as_any()
    }
}
