//! A registered decoder on a detector error model: detection events in, predicted observable
//! flips out, one shot at a time or in batches on threads.
//!
//! [`DemDecoder`] is whatever decoder the registry ([`crate::registry`]) builds from a
//! [`DemDecoderSettings`]: an observable decoder ([`crate::decoder::ObservableDecoder`]) such
//! as matching, or a mechanism decoder (BP+OSD, Relay-BP) behind
//! [`crate::decoder::MechanismsToObservables`]. It checks the lengths of every call and keeps
//! the scratch of the unpacked call, so nothing here depends on which decoder it holds.
//!
//! [`decode_batch`] decodes a table of shots on several threads, each with its own copy of the
//! decoder; each shot's answer is the same whatever the thread count (Relay-BP's memory
//! strengths are fixed per leg, see [`crate::relay`]). Untimed, a thread hands its shots to the
//! decoder all at once ([`ObservableDecoder::decode_packed_many`]): BP+OSD at `precision = f32`
//! runs BP, and Relay-BP on its `simd` kernel its legs, on eight shots at a time
//! ([`crate::bp32_lanes`]), each answered as one at a time. Beside it, [`decode_syndromes`] is the
//! code-capacity batch: syndromes of a parity-check matrix, decoded one by one with
//! [`BpOsdDecoder`], each timed and its correction checked against its syndrome.
//!
//! ```
//! use backline_decoders::dem::DetectorErrorModel;
//! use backline_decoders::dem_decoder::DemDecoder;
//! use backline_decoders::registry::{self, Profile};
//! let dem = DetectorErrorModel::parse(
//!     "error(0.1) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1\n",
//!     "chain.dem",
//! )
//! .unwrap();
//! let settings = registry::settings("relay-bp", Profile::Offline).unwrap();
//! let mut dec = DemDecoder::new(&dem, &settings).unwrap();
//! let mut obs = [0u8; 1];
//! // Detector 0 alone fired: the mechanism on the boundary with L0 explains it.
//! dec.decode_packed(&[0b01], &mut obs).unwrap();
//! assert_eq!(obs, [1]);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::bitmat::BitMatrix;
use crate::bposd::BpOsdDecoder;
use crate::decoder::ObservableDecoder;
pub use crate::decoder::ShotInfo;
use crate::dem::DetectorErrorModel;
use crate::error::DecoderError;
use crate::shots::ShotTable;

/// Which decoder, with its settings: a registry entry and its values
/// ([`crate::registry::settings`] makes one by name).
pub type DemDecoderSettings = crate::registry::DecoderSettings;

/// A decoder built from a detector error model. Built once; the decode calls do not allocate.
#[derive(Debug)]
pub struct DemDecoder {
    inner: Box<dyn ObservableDecoder>,
    name: &'static str,
    /// Scratch of [`DemDecoder::decode`]: the shot packed, the prediction packed.
    packed_in: Vec<u8>,
    packed_out: Vec<u8>,
}

impl Clone for DemDecoder {
    fn clone(&self) -> DemDecoder {
        DemDecoder {
            inner: self.inner.clone_box(),
            name: self.name,
            packed_in: self.packed_in.clone(),
            packed_out: self.packed_out.clone(),
        }
    }
}

impl DemDecoder {
    /// The decoder for `dem` with `settings` (the registry entry's constructor).
    ///
    /// Errors: the decoder's own — for BP+OSD and Relay-BP
    /// [`DecoderError::MechanismPrior`] for a mechanism with `p ≥ 0.5` (naming its line) and
    /// [`DecoderError::NothingToDecode`] when no mechanism is left; for matching
    /// [`DecoderError::MatchingModel`] — and the settings' range errors.
    pub fn new(
        dem: &DetectorErrorModel,
        settings: &DemDecoderSettings,
    ) -> Result<DemDecoder, DecoderError> {
        let inner = settings.build(dem)?;
        Ok(DemDecoder {
            packed_in: vec![0; inner.num_detectors().div_ceil(8)],
            packed_out: vec![0; inner.num_observables().div_ceil(8)],
            inner,
            name: settings.name(),
        })
    }

    /// Answer detection events no usable mechanism explains as best the decoder can, instead
    /// of refusing the shot ([`ObservableDecoder::allow_unexplained`]): for a stream's window.
    pub fn allow_unexplained(&mut self) {
        self.inner.allow_unexplained();
    }

    /// The registry name of the decoder inside (`bposd`, `relay-bp`, `matching`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Detectors of the model (bits per detection-event record).
    pub fn num_detectors(&self) -> usize {
        self.inner.num_detectors()
    }

    /// Observables of the model (bits per prediction record).
    pub fn num_observables(&self) -> usize {
        self.inner.num_observables()
    }

    /// The model's mechanisms the decoder works on, ascending: decoder column `j` is mechanism
    /// `mechanisms()[j]`. Empty for a decoder of observables (matching), which works on the
    /// graphlike decomposition.
    pub fn mechanisms(&self) -> &[u32] {
        self.inner.mechanisms()
    }

    /// The last decode's answer over [`DemDecoder::mechanisms`], one 0/1 byte per column
    /// (empty for a decoder of observables).
    pub fn correction(&self) -> &[u8] {
        self.inner.correction()
    }

    /// The decoder inside, if it is a `T` (`BpOsdDecoder`, `RelayBpDecoder`,
    /// `MatchingDecoder`): for a front end that reports a decoder's own figures.
    pub fn decoder<T: 'static>(&self) -> Option<&T> {
        self.inner.as_any().downcast_ref()
    }

    /// Decodes detection events, one 0/1 byte per detector (any non-zero byte is 1), into
    /// observable flips, one 0/1 byte per observable.
    pub fn decode(
        &mut self,
        detectors: &[u8],
        observables: &mut [u8],
    ) -> Result<ShotInfo, DecoderError> {
        crate::error::check_lengths(
            detectors.len(),
            self.num_detectors(),
            observables.len(),
            self.num_observables(),
        )?;
        self.packed_in.fill(0);
        for (i, &d) in detectors.iter().enumerate() {
            self.packed_in[i / 8] |= ((d != 0) as u8) << (i % 8);
        }
        let info = self
            .inner
            .decode_packed(&self.packed_in, &mut self.packed_out)?;
        for (l, o) in observables.iter_mut().enumerate() {
            *o = self.packed_out[l / 8] >> (l % 8) & 1;
        }
        Ok(info)
    }

    /// [`DemDecoder::decode`] with a deadline (`None`: none): BP+OSD and Relay-BP stop at it
    /// with the best answer they have ([`ShotInfo::deadline_hit`]); matching, which has no
    /// partial answer, always finishes (the caller can time it).
    pub fn decode_until(
        &mut self,
        detectors: &[u8],
        observables: &mut [u8],
        deadline: Option<Instant>,
    ) -> Result<ShotInfo, DecoderError> {
        self.inner.set_deadline(deadline);
        let r = self.decode(detectors, observables);
        self.inner.set_deadline(None);
        r
    }

    /// Decodes one shot in stim's `b8` layout: `⌈detectors/8⌉` bytes in, `⌈observables/8⌉`
    /// bytes out (bit `i` = bit `i % 8` of byte `i / 8`; padding bits of the input are
    /// ignored, those of the output written zero).
    pub fn decode_packed(
        &mut self,
        detectors: &[u8],
        observables: &mut [u8],
    ) -> Result<ShotInfo, DecoderError> {
        let (din, dout) = (
            self.num_detectors().div_ceil(8),
            self.num_observables().div_ceil(8),
        );
        if detectors.len() != din {
            return Err(DecoderError::PackedLength {
                what: "detection events",
                expected: din,
                found: detectors.len(),
            });
        }
        if observables.len() != dout {
            return Err(DecoderError::PackedLength {
                what: "observable flips",
                expected: dout,
                found: observables.len(),
            });
        }
        self.inner.decode_packed(detectors, observables)
    }
}

/// What [`decode_batch`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// One prediction record (observable flips, `b8` layout) per shot.
    pub predictions: ShotTable,
    /// Per-shot decode time in nanoseconds (monotonic clock around each decode call), in
    /// shot order; empty unless timing was asked for.
    pub times_ns: Vec<u64>,
    /// Shots whose decode converged.
    pub converged: u64,
}

/// The most decoding threads a batch takes (1024). Each holds its own copy of the decoder.
pub const MAX_THREADS: usize = 1024;

/// The number of threads `threads` asks for: itself, or every core when 0 (at most
/// [`MAX_THREADS`] either way).
pub fn threads_for(threads: usize) -> usize {
    if threads == 0 {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS)
    } else {
        threads
    }
}

/// Checks a thread count against [`MAX_THREADS`]: [`DecoderError::Setting`] naming the range.
pub fn check_threads(threads: usize) -> Result<(), DecoderError> {
    if threads > MAX_THREADS {
        return Err(DecoderError::Setting {
            name: "threads",
            value: threads as f64,
            expected: "0 (every core) or 1..=1024",
        });
    }
    Ok(())
}

/// Decodes every shot of `detectors` (records of `decoder.num_detectors()` bits) on `threads`
/// threads (0: every core; at most [`MAX_THREADS`]), each with its own clone of `decoder`,
/// splitting the shots into contiguous runs. With `time`, each decode call is timed.
///
/// Errors: [`DecoderError::Setting`] for more than [`MAX_THREADS`] threads,
/// [`DecoderError::Thread`] when the system refuses a thread (the threads already started
/// finish their shots first), [`DecoderError::Memory`] when the predictions or the times do
/// not fit in memory.
pub fn decode_batch(
    decoder: &DemDecoder,
    detectors: &ShotTable,
    threads: usize,
    time: bool,
) -> Result<Batch, DecoderError> {
    decode_batch_counted(decoder, detectors, threads, time, &AtomicU64::new(0))
}

/// [`decode_batch`], adding 1 to `done` after every shot (for a progress display on another
/// thread; `Relaxed`, as nothing else is published through it).
pub fn decode_batch_counted(
    decoder: &DemDecoder,
    detectors: &ShotTable,
    threads: usize,
    time: bool,
    done: &AtomicU64,
) -> Result<Batch, DecoderError> {
    if detectors.bits() != decoder.num_detectors() {
        return Err(DecoderError::SyndromeLength {
            expected: decoder.num_detectors(),
            found: detectors.bits(),
        });
    }
    check_threads(threads)?;
    let shots = detectors.shots();
    let mut predictions = ShotTable::try_zeros(shots, decoder.num_observables())
        .map_err(|e| DecoderError::Memory(e.to_string()))?;
    let mut times_ns = Vec::new();
    if time {
        times_ns
            .try_reserve_exact(shots)
            .map_err(|_| DecoderError::Memory(format!("the times of {shots} shots do not fit")))?;
        times_ns.resize(shots, 0u64);
    }
    let threads = threads_for(threads).clamp(1, shots.max(1));
    let per = shots.div_ceil(threads).max(1);
    let out_bytes = predictions.bytes_per_shot();
    let in_bytes = detectors.bytes_per_shot();
    // Started threads wait for every other to start before they decode: a thread's start
    // (its stack, its signal stack) then never races the others' allocations for the last
    // memory, so a system out of threads refuses the next spawn, an error, rather than
    // aborting a thread that has just started.
    let go = (std::sync::Mutex::new(false), std::sync::Condvar::new());
    let go = &go;
    let converged = std::thread::scope(|scope| -> Result<u64, DecoderError> {
        // Lets the threads go when dropped: after the last spawn, or while unwinding.
        let start = Go(go);
        let mut handles = Vec::with_capacity(threads);
        let mut refused = None;
        let mut preds_left = predictions.as_bytes_mut();
        let mut times_left = &mut times_ns[..];
        let mut first = 0;
        while first < shots {
            let count = per.min(shots - first);
            let (preds, rest) = preds_left.split_at_mut(count * out_bytes);
            preds_left = rest;
            let times = if time {
                let (t, rest) = times_left.split_at_mut(count);
                times_left = rest;
                Some(t)
            } else {
                None
            };
            let input = &detectors.as_bytes()[first * in_bytes..(first + count) * in_bytes];
            let mut dec = decoder.clone();
            let spawned = std::thread::Builder::new()
                .name("decode".into())
                .spawn_scoped(scope, move || -> Result<u64, DecoderError> {
                    let mut ready = go.0.lock().unwrap_or_else(|e| e.into_inner());
                    while !*ready {
                        ready = go.1.wait(ready).unwrap_or_else(|e| e.into_inner());
                    }
                    drop(ready);
                    decode_run(&mut dec, input, in_bytes, preds, out_bytes, times, done)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    refused = Some(DecoderError::Thread {
                        started: handles.len(),
                        asked: threads,
                        why: e.to_string(),
                    });
                    break;
                }
            }
            first += count;
        }
        drop(start);
        let mut total = 0;
        for h in handles {
            total += h
                .join()
                .map_err(|_| DecoderError::Matrix("a decoding thread panicked".to_string()))??;
        }
        refused.map_or(Ok(total), Err)
    })?;
    Ok(Batch {
        predictions,
        times_ns,
        converged,
    })
}

/// Sets its flag and wakes its waiters when dropped.
struct Go<'a>(&'a (std::sync::Mutex<bool>, std::sync::Condvar));

impl Drop for Go<'_> {
    fn drop(&mut self) {
        *self.0.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.0.1.notify_all();
    }
}

fn decode_run(
    dec: &mut DemDecoder,
    input: &[u8],
    in_bytes: usize,
    preds: &mut [u8],
    out_bytes: usize,
    mut times: Option<&mut [u64]>,
    done: &AtomicU64,
) -> Result<u64, DecoderError> {
    let mut converged = 0;
    let shots = input.len() / in_bytes.max(1);
    if times.is_none() {
        // Untimed, the decoder may take the shots several at a time (BP's lanes across
        // shots), answering them in any order.
        dec.inner
            .decode_packed_many(shots, input, preds, &mut |info| {
                converged += info.converged as u64;
                done.fetch_add(1, Ordering::Relaxed);
            })?;
        return Ok(converged);
    }
    for s in 0..shots {
        let row = &input[s * in_bytes..(s + 1) * in_bytes];
        let out = &mut preds[s * out_bytes..(s + 1) * out_bytes];
        let info = match times.as_deref_mut() {
            Some(t) => {
                let t0 = Instant::now();
                let info = dec.decode_packed(row, out)?;
                t[s] = t0.elapsed().as_nanos() as u64;
                info
            }
            None => dec.decode_packed(row, out)?,
        };
        converged += info.converged as u64;
        done.fetch_add(1, Ordering::Relaxed);
    }
    Ok(converged)
}

/// What [`decode_syndromes`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyndromeBatch {
    /// Per-syndrome decode time in nanoseconds (monotonic clock around each decode call), in
    /// syndrome order.
    pub times_ns: Vec<u64>,
    /// Syndromes on which BP converged (a zero syndrome counts, as in `ldpc`).
    pub converged: u64,
    /// Indices of the syndromes whose correction does not reproduce them (`h · c ≠ s`: the
    /// syndrome is outside the column space of `h`, or BP alone did not converge), ascending.
    pub unsatisfied: Vec<usize>,
    /// Wall time of the timed pass: the decodes, the clock reads, the checks and `each`.
    pub wall: Duration,
}

/// Code capacity: decodes `syndromes` (0/1 per check of `h`) with `decoder` (built for `h`)
/// on this thread. First `warmup` untimed decodes, cycling through the syndromes; then each
/// syndrome once, in order: its decode timed, its correction checked against it and handed to
/// `each` (to write it out), and 1 added to `done` (`Relaxed`, for a progress display on
/// another thread). The first error, of a decode or of `each`, ends the pass. An `h` of
/// other dimensions than the decoder's is a [`DecoderError::SyndromeLength`] or
/// [`DecoderError::OutputLength`].
pub fn decode_syndromes<S: AsRef<[u8]>, E: From<DecoderError>>(
    decoder: &mut BpOsdDecoder,
    h: &BitMatrix,
    syndromes: &[S],
    warmup: usize,
    done: &AtomicU64,
    mut each: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<SyndromeBatch, E> {
    crate::error::check_lengths(h.rows(), decoder.checks(), h.cols(), decoder.bits())?;
    let mut correction = vec![0u8; h.cols()];
    if !syndromes.is_empty() {
        for i in 0..warmup {
            decoder.decode(syndromes[i % syndromes.len()].as_ref(), &mut correction)?;
        }
    }
    let mut batch = SyndromeBatch {
        times_ns: Vec::with_capacity(syndromes.len()),
        converged: 0,
        unsatisfied: Vec::new(),
        wall: Duration::ZERO,
    };
    let mut check = vec![0u8; h.rows()];
    let start = Instant::now();
    for (k, s) in syndromes.iter().enumerate() {
        let s = s.as_ref();
        let t0 = Instant::now();
        let info = decoder.decode(s, &mut correction)?;
        batch.times_ns.push(t0.elapsed().as_nanos() as u64);
        batch.converged += u64::from(info.converged);
        h.mul_bytes(&correction, &mut check);
        if check != s {
            batch.unsatisfied.push(k);
        }
        each(&correction)?;
        done.fetch_add(1, Ordering::Relaxed);
    }
    batch.wall = start.elapsed();
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bposd::BpOsdConfig;
    use crate::registry::{self, Profile};

    /// A distance-5 repetition code over 3 rounds with measurement errors, as stim would
    /// write it.
    fn rep_dem() -> DetectorErrorModel {
        DetectorErrorModel::parse(
            "error(0.02) D0 L0\n\
             repeat 3 {\n\
             \x20 error(0.02) D0 D1\n error(0.02) D1 D2\n error(0.02) D2 D3\n error(0.02) D3\n\
             \x20 error(0.01) D0 D4\n error(0.01) D1 D5\n error(0.01) D2 D6\n error(0.01) D3 D7\n\
             \x20 shift_detectors 4\n\
             }\n\
             error(0.02) D0 L0\n error(0.02) D0 D1\n error(0.02) D1 D2\n error(0.02) D2 D3\n\
             error(0.02) D3\nerror(0) D1 D2 L0\nerror(0.3) L0\n",
            "rep.dem",
        )
        .unwrap()
    }

    fn settings() -> Vec<DemDecoderSettings> {
        let mut bposd = registry::settings("bposd", Profile::Offline).unwrap();
        for (k, v) in [
            ("max_iter", "20"),
            ("osd_method", "osd_cs"),
            ("osd_order", "4"),
        ] {
            bposd.set(k, v).unwrap();
        }
        vec![
            bposd,
            registry::settings("relay-bp", Profile::Offline).unwrap(),
        ]
    }

    #[test]
    fn single_mechanisms_are_decoded_to_their_observables() {
        let dem = rep_dem();
        for s in settings() {
            let mut dec = DemDecoder::new(&dem, &s).unwrap();
            // `error(0)` and the detector-less `error(0.3) L0` are left out.
            assert_eq!(dec.mechanisms().len(), dem.num_mechanisms() - 2);
            for k in dec.mechanisms().to_vec() {
                let mech = dem.mechanism(k as usize);
                let mut dets = vec![0u8; dem.num_detectors()];
                let mut want = vec![0u8; dem.num_observables()];
                dem.apply_mechanisms([k], &mut dets, &mut want);
                let mut got = vec![9u8; dem.num_observables()];
                let info = dec.decode(&dets, &mut got).unwrap();
                assert!(info.converged, "{s:?} {mech:?}");
                assert_eq!(got, want, "{s:?} mechanism {k}");
                // The packed path agrees.
                let mut packed = vec![0u8; dem.num_detectors().div_ceil(8)];
                crate::shots::pack_into(&dets, &mut packed);
                let mut out = [0xffu8; 1];
                dec.decode_packed(&packed, &mut out).unwrap();
                assert_eq!(out[0], want[0]);
            }
        }
    }

    #[test]
    fn batches_are_the_same_on_any_thread_count() {
        let dem = rep_dem();
        let mut t = ShotTable::zeros(50, dem.num_detectors());
        let mut state = 12345u64;
        for s in 0..50 {
            let mut dets = vec![0u8; dem.num_detectors()];
            let mut obs = vec![0u8; 1];
            for k in 0..dem.num_mechanisms() as u32 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if ((state >> 33) as f64 / (1u64 << 31) as f64) < 3.0 * dem.priors()[k as usize] {
                    dem.apply_mechanisms([k], &mut dets, &mut obs);
                }
            }
            crate::shots::pack_into(&dets, t.row_mut(s));
        }
        for s in settings() {
            let dec = DemDecoder::new(&dem, &s).unwrap();
            let one = decode_batch(&dec, &t, 1, false).unwrap();
            for threads in [2, 3, 7, 64] {
                let b = decode_batch(&dec, &t, threads, true).unwrap();
                assert_eq!(b.predictions, one.predictions, "{threads}");
                assert_eq!(b.times_ns.len(), 50);
                assert_eq!(b.converged, one.converged);
            }
            assert!(one.times_ns.is_empty());
            let empty =
                decode_batch(&dec, &ShotTable::zeros(0, dem.num_detectors()), 4, true).unwrap();
            assert_eq!(empty.predictions.shots(), 0);
        }
    }

    #[test]
    fn a_syndrome_batch_checks_and_hands_out_every_correction() {
        let code = crate::codes::CssCode::steane();
        let h = &code.hz;
        let config = BpOsdConfig {
            error_rate: 0.05,
            ..BpOsdConfig::default()
        };
        let mut dec = BpOsdDecoder::new(h, &config).unwrap();
        // Every single-bit error's syndrome, and the zero syndrome.
        let mut syndromes: Vec<Vec<u8>> = (0..h.cols())
            .map(|bit| {
                let mut e = vec![0u8; h.cols()];
                e[bit] = 1;
                let mut s = vec![0u8; h.rows()];
                h.mul_bytes(&e, &mut s);
                s
            })
            .collect();
        syndromes.push(vec![0u8; h.rows()]);
        let done = AtomicU64::new(0);
        let mut out = Vec::new();
        let b = decode_syndromes(&mut dec, h, &syndromes, 20, &done, |c| {
            out.push(c.to_vec());
            Ok::<(), DecoderError>(())
        })
        .unwrap();
        assert_eq!(b.times_ns.len(), syndromes.len());
        assert_eq!(done.load(Ordering::Relaxed), syndromes.len() as u64);
        assert!(b.unsatisfied.is_empty(), "{:?}", b.unsatisfied);
        let mut c = vec![0u8; h.cols()];
        let converged = syndromes
            .iter()
            .filter(|s| dec.decode(s, &mut c).unwrap().converged)
            .count();
        assert_eq!(b.converged, converged as u64);
        // Single-bit errors are corrected exactly; the zero syndrome gets the zero correction.
        for (bit, c) in out.iter().take(h.cols()).enumerate() {
            let want: Vec<u8> = (0..h.cols()).map(|j| u8::from(j == bit)).collect();
            assert_eq!(c, &want, "bit {bit}");
        }
        assert!(out.last().unwrap().iter().all(|&x| x == 0));

        // Two equal checks: syndrome 1. is outside their column space. Its correction is
        // counted as not reproducing it, and BP does not converge on it; neither is an error.
        let twins = BitMatrix::from_picture("11.\n11.\n").unwrap();
        let mut d = BpOsdDecoder::new(&twins, &config).unwrap();
        let odd = [[1u8, 0], [0, 0]];
        let b = decode_syndromes(&mut d, &twins, &odd, 3, &done, |_| {
            Ok::<(), DecoderError>(())
        })
        .unwrap();
        assert_eq!((b.unsatisfied, b.converged), (vec![0], 1));

        // The first error of `each` ends the pass; a syndrome of the wrong length is an error,
        // and so is a matrix that is not the decoder's.
        #[derive(Debug, PartialEq)]
        enum Stop {
            Decode(DecoderError),
            DiskFull,
        }
        impl From<DecoderError> for Stop {
            fn from(e: DecoderError) -> Stop {
                Stop::Decode(e)
            }
        }
        let mut handed = 0;
        let r = decode_syndromes(&mut dec, h, &syndromes, 0, &done, |_| {
            handed += 1;
            if handed == 2 {
                Err(Stop::DiskFull)
            } else {
                Ok(())
            }
        });
        assert_eq!(r.unwrap_err(), Stop::DiskFull);
        assert_eq!(handed, 2);
        let short = [vec![0u8; h.rows() - 1]];
        let e = decode_syndromes(&mut dec, h, &short, 0, &done, |_| Ok::<(), Stop>(()));
        assert!(
            matches!(e, Err(Stop::Decode(DecoderError::SyndromeLength { .. }))),
            "{e:?}"
        );
        let e = decode_syndromes(&mut dec, &twins, &odd, 0, &done, |_| Ok::<(), Stop>(()));
        assert!(matches!(e, Err(Stop::Decode(_))), "{e:?}");
    }

    /// sinter's contract: every model decodes. No detectors (or none that a mechanism with
    /// `p > 0` flips): constant predictions for every shot such a model can give — one without
    /// detection events; a detection event there has no explanation and is refused (issue 39,
    /// as PyMatching refuses it); mechanisms with `p ≥ ½`: BP takes them with a prior of about
    /// ½ and the syndrome decides, matching weighs them negatively.
    #[test]
    fn degenerate_models_decode_as_sinter_expects() {
        let all = || {
            let mut v = settings();
            v.push(registry::settings("matching", Profile::Offline).unwrap());
            v
        };
        for text in [
            "",
            "error(0.1) L0\n",
            "error(0) D0\nerror(0.1) L0\n",
            "detector D3\n",
        ] {
            let dem = DetectorErrorModel::parse(text, "z.dem").unwrap();
            for s in all() {
                let mut d = DemDecoder::new(&dem, &s).unwrap();
                let (nd, no) = (dem.num_detectors(), dem.num_observables());
                let mut out = vec![9u8; no.div_ceil(8)];
                let info = d.decode_packed(&vec![0; nd.div_ceil(8)], &mut out).unwrap();
                assert!(
                    out.iter().all(|&b| b == 0) && info.converged,
                    "{text:?} {s:?}"
                );
                assert!(d.mechanisms().is_empty());
                if nd > 0 {
                    let last = nd as u32 - 1;
                    let mut fired = vec![0u8; nd.div_ceil(8)];
                    fired[last as usize / 8] = 1 << (last % 8);
                    assert_eq!(
                        d.decode_packed(&fired, &mut out),
                        Err(DecoderError::Unexplained(last)),
                        "{text:?} {s:?}"
                    );
                    // Padding bits past the last detector are not events.
                    let mut pad = vec![0u8; nd.div_ceil(8)];
                    if nd % 8 != 0 {
                        pad[nd / 8] = !((1u8 << (nd % 8)) - 1);
                        assert!(d.decode_packed(&pad, &mut out).is_ok(), "{text:?}");
                    }
                }
            }
        }
        // sinter's post-selection model: D0 (p = 0.6) and D1 (p = 0.5) each flip L0.
        let dem = DetectorErrorModel::parse(
            "error(0.6) D0 L0\nerror(0.5) D1 L0\nerror(0.1) L0\n",
            "post.dem",
        )
        .unwrap();
        for s in all() {
            let mut d = DemDecoder::new(&dem, &s).unwrap();
            for (dets, want) in [([0u8, 0], 0u8), ([1, 0], 1), ([0, 1], 1), ([1, 1], 0)] {
                let mut out = [9u8];
                d.decode(&dets, &mut out).unwrap();
                assert_eq!(out[0], want, "{s:?} {dets:?}");
            }
        }
    }

    /// A detector that only `p = 0` mechanisms flip, in a model other mechanisms make
    /// decodable: an event there is refused by BP+OSD and Relay-BP (matching refuses it as an
    /// isolated detector); an event elsewhere decodes.
    #[test]
    fn an_event_no_usable_mechanism_explains_is_refused() {
        let dem = DetectorErrorModel::parse("error(0) D0 L0\nerror(0.1) D1 L0\n", "e.dem").unwrap();
        for s in settings() {
            let mut d = DemDecoder::new(&dem, &s).unwrap();
            let mut out = [9u8];
            assert_eq!(
                d.decode_packed(&[0b01], &mut out),
                Err(DecoderError::Unexplained(0)),
                "{s:?}"
            );
            d.decode_packed(&[0b10], &mut out).unwrap();
            assert_eq!(out, [1], "{s:?}");
            // A stream's window answers it as best it can.
            d.allow_unexplained();
            assert!(d.decode_packed(&[0b01], &mut out).is_ok(), "{s:?}");
        }
    }

    #[test]
    fn bad_models_and_shots_are_errors() {
        let dem = rep_dem();
        let mut dec = DemDecoder::new(&dem, &settings()[1]).unwrap();
        assert!(matches!(
            dec.decode_packed(&[0], &mut [0]),
            Err(DecoderError::PackedLength {
                expected: 2,
                found: 1,
                ..
            })
        ));
        assert!(matches!(
            dec.decode_packed(&[0, 0], &mut [0, 0]),
            Err(DecoderError::PackedLength {
                expected: 1,
                found: 2,
                ..
            })
        ));
        let t = ShotTable::zeros(3, 15);
        assert!(decode_batch(&dec, &t, 2, false).is_err());
    }
}
