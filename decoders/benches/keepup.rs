//! Does streaming matching keep up with a machine that produces a round every microsecond?
//! The compute of a stream, without a transport: shots sampled from a model's mechanisms
//! (seeded), streamed round by round into
//!
//! - `sliding`: [`StreamDecoder`] with matching windows on this thread (`--window`,
//!   `--commit`; default one window over the shot), and
//! - `sandwich`: [`SandwichStream`] with `--threads` workers (`--core`, `--buffer`),
//!
//! first as fast as they take rounds (the sustained rate: rounds / wall time, `finish`
//! included), then paced: round `k` of the run is handed over at `k · --cycle-ns` (the thread
//! spins until then, or hands it over late if the decoder held it up) and each shot is
//! finished after its last round. The lag of the last answer behind the last round's due time
//! is the backlog at the end, in rounds (and its maximum over the shots). Every prediction is
//! checked against the whole-history matching decoder's (shots that differ printed).
//!
//! ```text
//! cargo bench -p backline-decoders --bench keepup -- MODEL.dem [--rounds N] [--cycle-ns 1000]
//!     [--window W --commit C] [--core C --buffer B --threads K] [--seed S]
//! ```
//!
//! `--rounds N` (default 100,000): streamed rounds in all, whole shots of the model's rounds.

use std::time::{Duration, Instant};

use backline_decoders::dem::DemLimits;
use backline_decoders::dem_decoder::{DemDecoder, DemDecoderSettings};
use backline_decoders::sandwich::{SandwichSettings, SandwichStream};
use backline_decoders::stream::{StreamDecoder, StreamModel, StreamSettings};

struct Args {
    model: String,
    rounds: usize,
    cycle_ns: u64,
    window: Option<usize>,
    commit: Option<usize>,
    sandwich: SandwichSettings,
    seed: u64,
}

fn args() -> Args {
    let mut a = Args {
        model: String::new(),
        rounds: 100_000,
        cycle_ns: 1000,
        window: None,
        commit: None,
        sandwich: SandwichSettings {
            core: 8,
            buffer: 4,
            threads: 2,
        },
        seed: 1,
    };
    let mut it = std::env::args().skip(1).filter(|s| s != "--bench");
    while let Some(k) = it.next() {
        let mut num = || -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| fail(format!("{k} takes a non-negative integer")))
        };
        match k.as_str() {
            "--rounds" => a.rounds = num(),
            "--cycle-ns" => a.cycle_ns = num() as u64,
            "--window" => a.window = Some(num()),
            "--commit" => a.commit = Some(num()),
            "--core" => a.sandwich.core = num(),
            "--buffer" => a.sandwich.buffer = num(),
            "--threads" => a.sandwich.threads = num(),
            "--seed" => a.seed = num() as u64,
            m if !m.starts_with("--") => a.model = m.to_string(),
            other => fail(format!("unknown flag {other}")),
        }
    }
    if a.model.is_empty() {
        fail("give a model: keepup MODEL.dem [flags]");
    }
    a
}

/// A stream under test: rounds in, a shot's answer out.
trait Stream {
    fn rounds(&self) -> usize;
    fn detectors(&self, r: usize) -> std::ops::Range<usize>;
    fn reset(&mut self);
    fn push(&mut self, r: usize, bits: &[u8]);
    fn finish(&mut self, out: &mut [u8]);
}

impl Stream for StreamDecoder {
    fn rounds(&self) -> usize {
        StreamDecoder::rounds(self)
    }
    fn detectors(&self, r: usize) -> std::ops::Range<usize> {
        self.round_detectors(r)
    }
    fn reset(&mut self) {
        StreamDecoder::reset(self);
    }
    fn push(&mut self, r: usize, bits: &[u8]) {
        if self.push_round(r as u32, bits).unwrap() {
            self.decode_ready().unwrap();
        }
    }
    fn finish(&mut self, out: &mut [u8]) {
        StreamDecoder::finish(self).unwrap();
        out.copy_from_slice(self.observables());
    }
}

impl Stream for SandwichStream {
    fn rounds(&self) -> usize {
        SandwichStream::rounds(self)
    }
    fn detectors(&self, r: usize) -> std::ops::Range<usize> {
        self.round_detectors(r)
    }
    fn reset(&mut self) {
        SandwichStream::reset(self);
    }
    fn push(&mut self, r: usize, bits: &[u8]) {
        self.push_round(r as u32, bits).unwrap();
    }
    fn finish(&mut self, out: &mut [u8]) {
        out.copy_from_slice(SandwichStream::finish(self).unwrap());
    }
}

/// The shots, each round bit-packed.
struct Shots {
    rounds: Vec<Vec<Vec<u8>>>,
    whole: Vec<u8>,
}

/// `shots` shots of `model`, with the whole-history decoder's answers when the model
/// expanded is within `limits` (else none: nothing is compared).
fn sample(
    model: &StreamModel,
    limits: &DemLimits,
    s: &dyn Stream,
    shots: usize,
    seed: u64,
) -> Shots {
    let mut noise = model.noise(seed);
    let mut whole = match model.expanded(limits) {
        Ok(dem) => Some(
            DemDecoder::new(
                &dem,
                &DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
            )
            .unwrap_or_else(|e| fail(e)),
        ),
        Err(e) => {
            println!("no whole-history comparison: {e}");
            None
        }
    };
    let mut events = vec![0u8; model.num_detectors()];
    let mut truth = vec![0u8; model.num_observables()];
    let mut out = vec![0u8; model.num_observables()];
    let mut all = Shots {
        rounds: Vec::with_capacity(shots),
        whole: Vec::with_capacity(shots * out.len()),
    };
    for _ in 0..shots {
        noise.sample(&mut events, &mut truth);
        if let Some(w) = whole.as_mut() {
            w.decode(&events, &mut out).unwrap();
            all.whole.extend_from_slice(&out);
        }
        all.rounds.push(
            (0..s.rounds())
                .map(|r| {
                    let d = &events[s.detectors(r)];
                    let mut p = vec![0u8; d.len().div_ceil(8)];
                    for (i, &b) in d.iter().enumerate() {
                        p[i / 8] |= b << (i % 8);
                    }
                    p
                })
                .collect(),
        );
    }
    all
}

/// Streams every shot; with a cycle, round `k` is handed over no earlier than `k · cycle`.
/// Returns (wall time, shots that differ from the whole history, lag at the end in rounds,
/// largest lag at a shot's end in rounds).
fn run(
    s: &mut dyn Stream,
    shots: &Shots,
    k: usize,
    cycle_ns: Option<u64>,
) -> (Duration, u32, f64, f64) {
    let mut out = vec![0u8; k];
    let (mut differ, mut max_lag, mut lag) = (0u32, 0.0f64, 0.0f64);
    let t0 = Instant::now();
    let mut index = 0u64;
    for (shot, rounds) in shots.rounds.iter().enumerate() {
        s.reset();
        for (r, bits) in rounds.iter().enumerate() {
            if let Some(c) = cycle_ns {
                let due = Duration::from_nanos(index * c);
                while t0.elapsed() < due {
                    std::hint::spin_loop();
                }
            }
            s.push(r, bits);
            index += 1;
        }
        s.finish(&mut out);
        if let Some(c) = cycle_ns {
            let due = (index - 1) as f64 * c as f64;
            lag = (t0.elapsed().as_nanos() as f64 - due) / c as f64;
            max_lag = max_lag.max(lag);
        }
        if let Some(w) = shots.whole.get(shot * k..(shot + 1) * k) {
            differ += (out != w) as u32;
        }
    }
    (t0.elapsed(), differ, lag, max_lag)
}

fn report(name: &str, s: &mut dyn Stream, shots: &Shots, k: usize, cycle_ns: u64) {
    let rounds = (shots.rounds.len() * s.rounds()) as f64;
    // Warm up on the first shots, then the two runs.
    let warm = Shots {
        rounds: shots.rounds.iter().take(200).cloned().collect(),
        whole: shots.whole[..(200 * k).min(shots.whole.len())].to_vec(),
    };
    run(s, &warm, k, None);
    let (wall, differ, _, _) = run(s, shots, k, None);
    let (pwall, pdiffer, lag, max_lag) = run(s, shots, k, Some(cycle_ns));
    println!(
        "{name}: unpaced {:.0} rounds/s ({:.3} µs/round); paced at {cycle_ns} ns: {:.0} rounds/s, \
         lag after the last round {lag:.1} rounds (largest at a shot's end {max_lag:.1}); \
         differ from the whole history: {}",
        rounds / wall.as_secs_f64(),
        wall.as_secs_f64() * 1e6 / rounds,
        rounds / pwall.as_secs_f64(),
        if shots.whole.is_empty() {
            "not compared".to_string()
        } else {
            format!("{differ} and {pdiffer} shots")
        }
    );
}

/// Ends the bench with one line saying why (a bad model or setting is an answer, not a panic).
fn fail(what: impl std::fmt::Display) -> ! {
    eprintln!("keepup: {what}");
    std::process::exit(2)
}

fn main() {
    let a = args();
    let text =
        std::fs::read_to_string(&a.model).unwrap_or_else(|e| fail(format!("{}: {e}", a.model)));
    // The limits are the environment's (BACKLINE_DEM_LIMITS): a model past them is refused
    // naming the limit and how to raise it.
    let limits = backline_decoders::dem::DemLimits::from_env().unwrap_or_else(|e| fail(e));
    // A model whose rounds repeat is kept rolled, as `stream:` specs keep it.
    let t0 = Instant::now();
    let model = StreamModel::read(&text, &a.model, &limits).unwrap_or_else(|e| fail(e));
    let settings = StreamSettings {
        window: a.window,
        commit: a.commit,
        decoder: DemDecoderSettings::from(backline_decoders::matching::MatchingConfig::default()),
        limits,
        ..StreamSettings::default()
    };
    let mut sliding = StreamDecoder::of_model(&model, &settings).unwrap_or_else(|e| fail(e));
    println!(
        "stream built in {:.1} ms ({}; {} entries in its windows' decoders)",
        t0.elapsed().as_secs_f64() * 1e3,
        match &model {
            StreamModel::Whole(_) => "the model whole",
            StreamModel::Rolled(_) => "the model rolled",
        },
        sliding.entries()
    );
    let shots_n = a.rounds.div_ceil(sliding.rounds()).max(1);
    let shots = sample(&model, &limits, &sliding, shots_n, a.seed);
    let k = model.num_observables();
    println!(
        "{}: {} detectors in {} rounds; {} shots = {} rounds; cycle {} ns",
        a.model,
        model.num_detectors(),
        sliding.rounds(),
        shots_n,
        shots_n * sliding.rounds(),
        a.cycle_ns
    );
    let w = a.window.map_or("whole shot".to_string(), |w| {
        format!("W = {w}, C = {:?}", a.commit)
    });
    report(
        &format!("sliding ({w}), 1 thread"),
        &mut sliding,
        &shots,
        k,
        a.cycle_ns,
    );
    let expanded = model.expanded(&limits);
    match expanded
        .as_ref()
        .map_err(|e| e.to_string())
        .and_then(|dem| SandwichStream::new(dem, &a.sandwich).map_err(|e| e.to_string()))
    {
        Ok(mut s) => report(
            &format!(
                "sandwich (core {}, buffer {}), {} workers",
                a.sandwich.core, a.sandwich.buffer, a.sandwich.threads
            ),
            &mut s,
            &shots,
            k,
            a.cycle_ns,
        ),
        Err(e) => println!("sandwich: {e}"),
    }
}
