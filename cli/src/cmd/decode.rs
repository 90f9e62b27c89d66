//! `backline decode`: decode shots from files and report per-shot decode times, in one of two
//! modes.
//!
//! **Code capacity** (`--checks FILE`): BP+OSD for a parity-check matrix (MacKay alist or dense
//! 0/1 text, detected, or `--format`), `--syndromes FILE` (one syndrome per line as `0`/`1`
//! characters; blank lines and `#` comments are skipped), `--output FILE` (one correction per
//! line, in input order; `-` for stdout), `--error-rate P`.
//!
//! **Circuit level** (`--dem FILE`): a stim detector error model, `--dets FILE` (detection
//! events, stim's `01` or `b8`), `--obs-out FILE` (predicted observable flips), `--obs FILE`
//! (the true flips, to count logical errors), `--decoder bposd|relay-bp`, `--threads K`
//! (0 = every core), `--shots N` (the first N). File formats follow the extension (`.b8` is
//! b8, anything else 01) unless `--dets-format` / `--obs-format` say otherwise
//! (`--obs-format` covers both `--obs-out` and `--obs`).
//!
//! Decoder settings carry `ldpc`'s names for BP+OSD (`--bp-method`, `--ms-scaling-factor`,
//! `--max-iter`, `--schedule`, `--osd-method`, `--osd-order`) and `relay-bp`'s for Relay-BP
//! (`--gamma0`, `--pre-iter`, `--num-sets`, `--set-max-iter`, `--gamma-dist-interval LO,HI`,
//! `--stop-nconv`, `--alpha`, `--seed`); a setting of the other decoder is an error.
//!
//! The flags ([`Args`]) first become a validated [`DecodeConfig`] (the other mode's flags
//! refused, every input read, the decoder built), and the run works from that alone; the
//! code-capacity loop is [`backline_decoders::dem_decoder::decode_syndromes`].
//!
//! `--json` prints exactly one JSON object on stdout ([`JsonSummary`] or [`DemSummary`]).
//! Without it a short human summary goes to stdout (to stderr when the corrections go to
//! stdout).
//!
//! Exit status: 0 on success; in code-capacity mode 1 when some correction does not reproduce
//! its syndrome (the syndrome is outside the column space of the checks, or BP alone was asked
//! for and did not converge); 2 on an error.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use backline_bench::Summary;
use backline_bench::progress::{Progress, Show};
use backline_bench::stats::wilson_interval;
use backline_decoders::bp::MAX_ITER;
use backline_decoders::dem::{DemLimits, DetectorErrorModel};
use backline_decoders::dem_decoder::{
    DemDecoder, DemDecoderSettings, MAX_THREADS, decode_batch_counted, decode_syndromes,
};
use backline_decoders::io::{self as dio, MatrixFormat, excerpt};
use backline_decoders::osd::MAX_OSD_ORDER;
use backline_decoders::relay::RelayConfig;
use backline_decoders::shots::{ShotFormat, ShotTable};
use backline_decoders::{
    BitMatrix, BpMethod, BpOsdConfig, BpOsdDecoder, DecoderError, OsdMethod, Schedule,
};
use serde::Serialize;

/// Flags of `backline decode`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Code capacity: parity-check matrix, MacKay alist or dense 0/1 text (one row per line).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "dem",
        conflicts_with = "dem"
    )]
    pub checks: Option<PathBuf>,
    /// Circuit level: a stim detector error model (.dem text).
    #[arg(long, value_name = "FILE")]
    pub dem: Option<PathBuf>,
    /// Bounds on what the model may expand to, repeat blocks unrolled: targets=N,coords=N,
    /// mechanisms=N, each a positive integer (defaults 16777216, 16777216, 4194304).
    #[arg(long, value_name = "SPEC", env = "BACKLINE_DEM_LIMITS", value_parser = parse_dem_limits)]
    pub dem_limits: Option<DemLimits>,
    /// Layout of --checks: auto (by extension, then content), alist or dense.
    #[arg(long, value_enum, default_value = "auto")]
    pub format: FormatArg,
    /// Syndromes, one per line as 0/1 characters, each as long as --checks has rows.
    #[arg(long, value_name = "FILE")]
    pub syndromes: Option<PathBuf>,
    /// Physical error rate of every bit, in (0, 0.5) (code capacity).
    #[arg(long, value_name = "P")]
    pub error_rate: Option<f64>,
    /// Where to write the corrections, one per line in input order ("-": stdout).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Detection events of the shots (stim 01 or b8), one record per shot.
    #[arg(long, value_name = "FILE")]
    pub dets: Option<PathBuf>,
    /// Format of --dets: 01 or b8 (default: b8 for a .b8 file, else 01).
    #[arg(long, value_parser = parse_shot_format)]
    pub dets_format: Option<ShotFormat>,
    /// Where to write the predicted observable flips.
    #[arg(long, value_name = "FILE")]
    pub obs_out: Option<PathBuf>,
    /// Format of --obs-out and --obs: 01 or b8 (default: by each file's extension).
    #[arg(long, value_parser = parse_shot_format)]
    pub obs_format: Option<ShotFormat>,
    /// The shots' true observable flips, to count logical errors.
    #[arg(long, value_name = "FILE")]
    pub obs: Option<PathBuf>,
    /// The decoder on the model: bposd, relay-bp or matching.
    #[arg(long, value_enum, default_value = "bposd")]
    pub decoder: DecoderArg,
    /// Decode only the first N shots.
    #[arg(long, value_name = "N")]
    pub shots: Option<usize>,
    /// Decoding threads, 0..=1024 (0: every core).
    #[arg(long, default_value_t = 0, value_parser = at_most::<{ MAX_THREADS }>)]
    pub threads: usize,

    /// BP+OSD: check-node rule, minimum_sum or product_sum [default: minimum_sum].
    #[arg(long, value_parser = parse_bp_method)]
    pub bp_method: Option<BpMethod>,
    /// BP+OSD: min-sum scaling factor; 0 selects the adaptive factor 1 - 2^-iteration [default: 1].
    #[arg(long)]
    pub ms_scaling_factor: Option<f64>,
    /// BP+OSD: maximum BP iterations, 0..=1048576; 0 means the number of bits (at most
    /// 1048576) [default: 0].
    #[arg(long, value_parser = at_most::<{ MAX_ITER }>)]
    pub max_iter: Option<usize>,
    /// BP+OSD: BP schedule, parallel or serial [default: parallel].
    #[arg(long, value_parser = parse_schedule)]
    pub schedule: Option<Schedule>,
    /// BP+OSD: post-processing when BP does not converge, osd0, osd_cs or off [default: osd0].
    #[arg(long, value_parser = parse_osd_method)]
    pub osd_method: Option<OsdMethod>,
    /// BP+OSD: combination-sweep order for osd_cs, 0..=1024; above n - rank it is clamped to
    /// n - rank (with a warning) [default: 0].
    #[arg(long, value_parser = at_most::<{ MAX_OSD_ORDER }>)]
    pub osd_order: Option<usize>,

    /// Relay-BP: memory strength of the first leg [default: 0.1].
    #[arg(long)]
    pub gamma0: Option<f64>,
    /// Relay-BP: iteration limit of the first leg, 0..=1048576 [default: 60]. The legs
    /// together run at most 1048576 iterations (pre-iter + num-sets × set-max-iter).
    #[arg(long, value_parser = at_most::<{ MAX_ITER }>)]
    pub pre_iter: Option<usize>,
    /// Relay-BP: relay legs after the first, 0..=1048576 [default: 60].
    #[arg(long, value_parser = at_most::<{ MAX_ITER }>)]
    pub num_sets: Option<usize>,
    /// Relay-BP: iteration limit of each relay leg, 0..=1048576 [default: 60].
    #[arg(long, value_parser = at_most::<{ MAX_ITER }>)]
    pub set_max_iter: Option<usize>,
    /// Relay-BP: interval of the relay legs' memory strengths, LO,HI [default: -0.24,0.66].
    #[arg(long, value_name = "LO,HI", value_parser = parse_interval, allow_hyphen_values = true)]
    pub gamma_dist_interval: Option<(f64, f64)>,
    /// Relay-BP: solutions to find before stopping, 0..=1048576 [default: 5].
    #[arg(long, value_parser = at_most::<{ MAX_ITER }>)]
    pub stop_nconv: Option<usize>,
    /// Relay-BP: check-message scaling (0: the ramp 1 - 2^-iteration) [default: none, i.e. 1].
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Relay-BP: seed of the relay legs' memory strengths [default: 0].
    #[arg(long)]
    pub seed: Option<u64>,

    /// Untimed decodes before the timed pass (cycling through the shots), 0..=1000000.
    #[arg(long, default_value_t = 100, value_parser = at_most::<{ MAX_WARMUP }>)]
    pub warmup: usize,
    /// Print exactly one JSON object (see the module docs for its fields).
    #[arg(long)]
    pub json: bool,
}

/// `--format`: the layout of `--checks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    // By the file's extension, then its content.
    Auto,
    // MacKay's alist.
    Alist,
    // Dense 0/1 text, a row per line.
    Dense,
}

/// `--decoder`: the decoder on a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DecoderArg {
    // BP+OSD.
    Bposd,
    // Relay-BP.
    RelayBp,
    // Minimum-weight perfect matching (sparse blossom).
    Matching,
}

impl DecoderArg {
    /// The name the flag takes, as the JSON's `decoder` says it.
    fn name(self) -> &'static str {
        match self {
            DecoderArg::Bposd => "bposd",
            DecoderArg::RelayBp => "relay-bp",
            DecoderArg::Matching => "matching",
        }
    }
}

fn parse_bp_method(s: &str) -> Result<BpMethod, String> {
    s.parse()
}

fn parse_schedule(s: &str) -> Result<Schedule, String> {
    s.parse()
}

fn parse_osd_method(s: &str) -> Result<OsdMethod, String> {
    s.parse()
}

fn parse_shot_format(s: &str) -> Result<ShotFormat, String> {
    s.parse()
}

fn parse_interval(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("\"{}\" is not LO,HI", excerpt(s)))?;
    let num = |t: &str| {
        t.trim()
            .parse::<f64>()
            .map_err(|_| format!("\"{}\" is not a number", excerpt(t)))
    };
    Ok((num(a)?, num(b)?))
}

fn parse_dem_limits(s: &str) -> Result<DemLimits, String> {
    DemLimits::parse(s).map_err(|e| e.to_string())
}

/// The most untimed decodes `--warmup` takes.
const MAX_WARMUP: usize = 1_000_000;

/// An integer flag in `0..=MAX`, the range in its error.
fn at_most<const MAX: usize>(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| n <= MAX)
        .ok_or_else(|| format!("expected an integer in 0..={MAX}"))
}

/// The `--json` object of code-capacity mode, one line on stdout.
///
/// - `shots`: syndromes decoded (timed);
/// - `median_ns`, `p99_ns`, `mean_ns`: per-shot decode time (one call of the decoder, timed
///   around the call with the monotonic clock), nearest-rank percentiles;
/// - `throughput_per_s`: shots divided by the wall time of the timed loop (which includes
///   the clock reads and the check of each correction);
/// - `bp_converged_rate`: fraction of shots where BP's hard decision reproduced the syndrome
///   (a zero syndrome counts as converged, as in `ldpc`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JsonSummary {
    /// Syndromes decoded.
    pub shots: u64,
    /// Median per-shot decode time.
    pub median_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// Mean.
    pub mean_ns: f64,
    /// Shots per second of the timed loop.
    pub throughput_per_s: f64,
    /// Fraction of shots where BP converged.
    pub bp_converged_rate: f64,
}

/// The `--json` object of circuit-level mode (`--dem`), one line on stdout.
///
/// - `decoder` (`bposd`, `relay-bp` or `matching`), `detectors`, `observables`, `mechanisms` (those the
///   decoder works on), `threads`;
/// - `shots`: shots decoded;
/// - `logical_errors`: shots whose predicted observable flips differ from `--obs` in any
///   observable; `logical_error_rate` their fraction, `ler_low`/`ler_high` its 95 % Wilson
///   interval (all `null` without `--obs`);
/// - `median_ns`, `p99_ns`, `mean_ns`: per-shot decode time (one decoder call on one thread,
///   monotonic clock around it), nearest-rank percentiles;
/// - `throughput_per_s`: shots divided by the wall time of the whole batch on all threads;
/// - `batch_mean_ns`: with `--threads 1`, a second pass decodes every shot again on one
///   thread without timing each call: its wall time divided by the shots (else `null`);
/// - `converged_rate`: shots where BP (BP+OSD) or some leg (Relay-BP) reproduced the
///   detection events;
/// - `osd_order`: the effective OSD-CS order (BP+OSD only, else `null`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DemSummary {
    /// `bposd` or `relay-bp`.
    pub decoder: String,
    /// Detectors of the model.
    pub detectors: usize,
    /// Observables of the model.
    pub observables: usize,
    /// Mechanisms the decoder works on.
    pub mechanisms: usize,
    /// Decoding threads.
    pub threads: usize,
    /// Shots decoded.
    pub shots: u64,
    /// Shots predicted wrong (with `--obs`).
    pub logical_errors: Option<u64>,
    /// `logical_errors / shots`.
    pub logical_error_rate: Option<f64>,
    /// 95 % Wilson interval, low end.
    pub ler_low: Option<f64>,
    /// 95 % Wilson interval, high end.
    pub ler_high: Option<f64>,
    /// Median per-shot decode time.
    pub median_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// Mean.
    pub mean_ns: f64,
    /// Shots per second over all threads.
    pub throughput_per_s: f64,
    /// With `--threads 1`: the wall time of a second, untimed pass over the shots on one
    /// thread divided by the shots (what a batch costs per shot without the clock reads).
    pub batch_mean_ns: Option<f64>,
    /// Fraction of shots whose decode converged.
    pub converged_rate: f64,
    /// Effective OSD-CS order (BP+OSD).
    pub osd_order: Option<usize>,
}

/// A decode, validated: every file read, the decoder built; what [`run_checks`] and
/// [`run_dem`] work from.
pub enum DecodeConfig {
    /// `--checks`: code capacity.
    Checks(Box<ChecksConfig>),
    /// `--dem`: circuit level.
    Dem(Box<DemConfig>),
}

/// Code capacity, validated.
pub struct ChecksConfig {
    /// `--checks`, as errors and the summary name it.
    checks_name: String,
    /// The parity-check matrix.
    h: BitMatrix,
    /// BP+OSD for `h`.
    decoder: BpOsdDecoder,
    /// `--syndromes`, as messages name it.
    syndromes_name: String,
    /// The line of each syndrome in its file.
    lines: Vec<usize>,
    /// The syndromes (at least one), 0/1 per check.
    syndromes: Vec<Vec<u8>>,
    /// `--output`, when given (`-`: stdout).
    output: Option<PathBuf>,
    /// Untimed decodes first.
    warmup: usize,
    /// One JSON object instead of the summary line.
    json: bool,
}

/// Circuit level, validated.
pub struct DemConfig {
    /// `--dem`, as the summary names it.
    dem_name: String,
    /// The model.
    dem: DetectorErrorModel,
    /// The decoder on it.
    decoder: DemDecoder,
    /// Which decoder.
    kind: DecoderArg,
    /// The shots' detection events (at least one shot; `--shots` applied).
    dets: ShotTable,
    /// Their true observable flips (`--obs`), at least as many shots.
    truth: Option<ShotTable>,
    /// `--obs-out` and its format.
    obs_out: Option<(PathBuf, ShotFormat)>,
    /// `--threads`.
    threads: usize,
    /// Untimed decodes first.
    warmup: usize,
    /// One JSON object instead of the summary line.
    json: bool,
}

/// Runs `backline decode`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    backline_decoders::osd::report_clamp_myself();
    match DecodeConfig::from_args(&args)? {
        DecodeConfig::Checks(c) => run_checks(&c),
        DecodeConfig::Dem(c) => run_dem(&c),
    }
}

impl DecodeConfig {
    /// Validates the flags of one mode, refusing those of the other, reads the inputs and
    /// builds the decoder: every error of the input is said before the first decode.
    pub fn from_args(a: &Args) -> anyhow::Result<DecodeConfig> {
        match (&a.checks, &a.dem) {
            (Some(checks), _) => Ok(DecodeConfig::Checks(Box::new(ChecksConfig::from_args(
                a, checks,
            )?))),
            (None, Some(dem)) => Ok(DecodeConfig::Dem(Box::new(DemConfig::from_args(a, dem)?))),
            (None, None) => bail!("give --checks (code capacity) or --dem (circuit level)"),
        }
    }
}

/// The BP+OSD settings of the flags (defaults as `ldpc`'s), with `error_rate`.
/// Called once per run: it warns about an --osd-order that does not apply.
fn bposd_config(a: &Args, error_rate: f64) -> BpOsdConfig {
    let d = BpOsdConfig::default();
    if let Some(k) = a.osd_order
        && a.osd_method.unwrap_or(d.osd_method) != OsdMethod::OsdCs
    {
        eprintln!(
            "backline: warning: --osd-order {k} applies to --osd-method osd_cs only; ignored"
        );
    }
    BpOsdConfig {
        error_rate,
        error_channel: None,
        bp_method: a.bp_method.unwrap_or(d.bp_method),
        max_iter: a.max_iter.unwrap_or(d.max_iter),
        ms_scaling_factor: a.ms_scaling_factor.unwrap_or(d.ms_scaling_factor),
        schedule: a.schedule.unwrap_or(d.schedule),
        osd_method: a.osd_method.unwrap_or(d.osd_method),
        osd_order: a.osd_order.unwrap_or(d.osd_order),
    }
}

/// The Relay-BP flags given, by name.
fn relay_flags(a: &Args) -> Vec<&'static str> {
    let mut v = Vec::new();
    let mut add = |given: bool, name| {
        if given {
            v.push(name)
        }
    };
    add(a.gamma0.is_some(), "--gamma0");
    add(a.pre_iter.is_some(), "--pre-iter");
    add(a.num_sets.is_some(), "--num-sets");
    add(a.set_max_iter.is_some(), "--set-max-iter");
    add(a.gamma_dist_interval.is_some(), "--gamma-dist-interval");
    add(a.stop_nconv.is_some(), "--stop-nconv");
    add(a.alpha.is_some(), "--alpha");
    add(a.seed.is_some(), "--seed");
    v
}

/// The BP+OSD flags given, by name.
fn bposd_flags(a: &Args) -> Vec<&'static str> {
    let mut v = Vec::new();
    let mut add = |given: bool, name| {
        if given {
            v.push(name)
        }
    };
    add(a.bp_method.is_some(), "--bp-method");
    add(a.ms_scaling_factor.is_some(), "--ms-scaling-factor");
    add(a.max_iter.is_some(), "--max-iter");
    add(a.schedule.is_some(), "--schedule");
    add(a.osd_method.is_some(), "--osd-method");
    add(a.osd_order.is_some(), "--osd-order");
    v
}

/// Says once, on stderr, that the OSD order was clamped (in place of the library's log line,
/// which cannot name the file).
fn warn_clamp(decoder: &BpOsdDecoder, what: &str) {
    if let Some(osd) = decoder.osd()
        && osd.order() < osd.requested_order()
    {
        eprintln!(
            "backline: warning: --osd-order {} is above the {} free columns of {what} \
             (n - rank = {} - {}): using order {}",
            osd.requested_order(),
            decoder.bits() - osd.rank(),
            decoder.bits(),
            osd.rank(),
            osd.order()
        );
    }
}

impl ChecksConfig {
    fn from_args(args: &Args, checks: &Path) -> anyhow::Result<ChecksConfig> {
        let checks_name = checks.display().to_string();
        if let Some(f) = relay_flags(args).first() {
            bail!("{f} is a Relay-BP setting, for --dem with --decoder relay-bp");
        }
        for (given, flag) in [
            (args.dets.is_some(), "--dets"),
            (args.dets_format.is_some(), "--dets-format"),
            (args.obs_out.is_some(), "--obs-out"),
            (args.obs_format.is_some(), "--obs-format"),
            (args.obs.is_some(), "--obs"),
            (args.shots.is_some(), "--shots"),
            (args.decoder != DecoderArg::Bposd, "--decoder"),
            (args.threads != 0, "--threads"),
        ] {
            if given {
                bail!("{flag} is for --dem (circuit-level decoding)");
            }
        }
        let Some(syndromes) = args.syndromes.as_deref() else {
            bail!("--checks needs --syndromes FILE");
        };
        let Some(error_rate) = args.error_rate else {
            bail!("--checks needs --error-rate P");
        };
        let format = match args.format {
            FormatArg::Alist => Some(MatrixFormat::Alist),
            FormatArg::Dense => Some(MatrixFormat::Dense),
            FormatArg::Auto => None,
        };
        let h = dio::load_matrix(checks, format).context("reading the checks")?;
        let config = bposd_config(args, error_rate);
        let decoder = BpOsdDecoder::new(&h, &config).map_err(|e| match e {
            DecoderError::ErrorRate(_) => anyhow::anyhow!("--error-rate {error_rate}: {e}"),
            DecoderError::ScalingFactor(_) => {
                anyhow::anyhow!("--ms-scaling-factor {}: {e}", config.ms_scaling_factor)
            }
            e => anyhow::anyhow!("{checks_name}: {e}"),
        })?;
        warn_clamp(&decoder, &checks_name);

        let syndromes_name = syndromes.display().to_string();
        let text = dio::read_text(syndromes)
            .with_context(|| format!("reading the syndromes: {syndromes_name}"))?;
        let shots = dio::parse_bit_lines(&text, &syndromes_name, Some(h.rows())).map_err(|e| {
            anyhow::anyhow!("{e} (the checks in {checks_name} have {} rows)", h.rows())
        })?;
        drop(text);
        if shots.is_empty() {
            bail!("{syndromes_name}: no syndromes");
        }
        let (lines, syndromes) = shots.into_iter().unzip();
        Ok(ChecksConfig {
            checks_name,
            h,
            decoder,
            syndromes_name,
            lines,
            syndromes,
            output: args.output.clone(),
            warmup: args.warmup,
            json: args.json,
        })
    }

    /// Whether the corrections go to stdout (`--output -`), the summary then to stderr.
    fn to_stdout(&self) -> bool {
        self.output.as_deref().is_some_and(|p| p.as_os_str() == "-")
    }
}

/// Code capacity: every syndrome decoded, timed and checked ([`decode_syndromes`]), the
/// corrections written as they come; exit 1 when some correction does not reproduce its
/// syndrome.
fn run_checks(c: &ChecksConfig) -> anyhow::Result<ExitCode> {
    let to_stdout = c.to_stdout();
    let mut out: Option<Box<dyn Write>> = match &c.output {
        None => None,
        Some(_) if to_stdout => Some(Box::new(BufWriter::new(std::io::stdout().lock()))),
        Some(p) => Some(Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        ))),
    };
    let shots = c.syndromes.len();
    let progress = Progress::start(
        "backline decode",
        "shots",
        shots as u64,
        Show::unless(c.json),
    );
    let mut decoder = c.decoder.clone();
    let mut line = Vec::with_capacity(c.h.cols() + 1);
    let batch = decode_syndromes(
        &mut decoder,
        &c.h,
        &c.syndromes,
        c.warmup,
        &progress.counter(),
        |correction| -> anyhow::Result<()> {
            if let Some(w) = out.as_mut() {
                line.clear();
                line.extend(correction.iter().map(|&b| b'0' + b));
                line.push(b'\n');
                w.write_all(&line).context("writing the corrections")?;
            }
            Ok(())
        },
    );
    progress.finish();
    let batch = batch?;
    if let Some(mut w) = out.take() {
        w.flush().context("writing the corrections")?;
    }

    let times_ns: Vec<f64> = batch.times_ns.iter().map(|&t| t as f64).collect();
    let stats = Summary::of(&times_ns).expect("at least one shot");
    let summary = JsonSummary {
        shots: shots as u64,
        median_ns: stats.median_ns,
        p99_ns: stats.p99_ns,
        mean_ns: stats.mean_ns,
        throughput_per_s: shots as f64 / batch.wall.as_secs_f64(),
        bp_converged_rate: batch.converged as f64 / shots as f64,
    };
    if c.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        let text = format!(
            "{} shots of {} ({}x{}): median {:.0} ns, p99 {:.0} ns, mean {:.0} ns, \
             {:.0} shots/s, BP converged {:.2}%\n",
            summary.shots,
            c.checks_name,
            c.h.rows(),
            c.h.cols(),
            summary.median_ns,
            summary.p99_ns,
            summary.mean_ns,
            summary.throughput_per_s,
            100.0 * summary.bp_converged_rate
        );
        if to_stdout {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
    if let Some(&first) = batch.unsatisfied.first() {
        eprintln!(
            "backline: warning: {} of {} corrections do not reproduce their syndrome \
             (first: {}:{})",
            batch.unsatisfied.len(),
            shots,
            c.syndromes_name,
            c.lines[first]
        );
        return Ok(ExitCode::from(backline_bench::exit::FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// The format of `path`: `given`, else b8 for a `.b8` file, else 01.
fn format_of(path: &Path, given: Option<ShotFormat>) -> ShotFormat {
    given.unwrap_or(match path.extension().and_then(|e| e.to_str()) {
        Some("b8") => ShotFormat::B8,
        _ => ShotFormat::Ascii01,
    })
}

/// Reads a shot file of `bits`-bit records.
fn read_shots(
    path: &Path,
    format: ShotFormat,
    bits: usize,
    what: &str,
) -> anyhow::Result<ShotTable> {
    let name = path.display().to_string();
    let bytes = dio::read_capped(path, dio::MAX_SHOT_FILE_BYTES)
        .with_context(|| format!("reading the {what}: {name}"))?;
    ShotTable::read(&bytes, format, bits, &name).map_err(|e| {
        anyhow::anyhow!(
            "{e} (the model has {bits} {what} per shot; --{}-format {format})",
            { if what == "detectors" { "dets" } else { "obs" } }
        )
    })
}

/// The settings of `--decoder` from the flags, refusing the other decoder's flags.
fn dem_settings(a: &Args) -> anyhow::Result<DemDecoderSettings> {
    match a.decoder {
        DecoderArg::RelayBp => {
            if let Some(f) = bposd_flags(a).first() {
                bail!(
                    "{f} is a BP+OSD setting; --decoder relay-bp takes --gamma0, --pre-iter, --num-sets, --set-max-iter, --gamma-dist-interval, --stop-nconv, --alpha, --seed"
                );
            }
            let d = RelayConfig::default();
            Ok(DemDecoderSettings::RelayBp(RelayConfig {
                gamma0: a.gamma0.unwrap_or(d.gamma0),
                pre_iter: a.pre_iter.unwrap_or(d.pre_iter),
                num_sets: a.num_sets.unwrap_or(d.num_sets),
                set_max_iter: a.set_max_iter.unwrap_or(d.set_max_iter),
                gamma_dist_interval: a.gamma_dist_interval.unwrap_or(d.gamma_dist_interval),
                stop_nconv: a.stop_nconv.unwrap_or(d.stop_nconv),
                alpha: a.alpha,
                seed: a.seed.unwrap_or(d.seed),
                ..d
            }))
        }
        DecoderArg::Matching => {
            if let Some(f) = bposd_flags(a).first().or(relay_flags(a).first()) {
                bail!("{f} is a setting of another decoder; --decoder matching has none");
            }
            Ok(DemDecoderSettings::Matching)
        }
        DecoderArg::Bposd => {
            if let Some(f) = relay_flags(a).first() {
                bail!("{f} is a Relay-BP setting; give --decoder relay-bp");
            }
            // The error rate is replaced by the model's priors.
            Ok(DemDecoderSettings::BpOsd(bposd_config(a, 0.01)))
        }
    }
}

impl DemConfig {
    fn from_args(args: &Args, dem_path: &Path) -> anyhow::Result<DemConfig> {
        let dem_name = dem_path.display().to_string();
        let Some(dets_path) = args.dets.as_deref() else {
            bail!("--dem needs --dets FILE (the shots' detection events)");
        };
        for (given, flag) in [
            (args.syndromes.is_some(), "--syndromes"),
            (args.error_rate.is_some(), "--error-rate"),
            (args.output.is_some(), "--output"),
            (args.format != FormatArg::Auto, "--format"),
        ] {
            if given {
                bail!(
                    "{flag} is for --checks; with --dem the model gives each mechanism's probability"
                );
            }
        }
        let settings = dem_settings(args)?;
        let text = backline_decoders::io::read_text(dem_path)
            .with_context(|| format!("reading the detector error model: {dem_name}"))?;
        let limits = args.dem_limits.unwrap_or_default();
        let dem = DetectorErrorModel::parse_with(&text, &dem_name, &limits)?;
        drop(text);
        let decoder = DemDecoder::new(&dem, &settings).map_err(|e| match e {
            DecoderError::Setting { .. } => anyhow::anyhow!("--{}", flag_of(&e)),
            e => anyhow::anyhow!("{e}"),
        })?;
        if let Some(d) = decoder.bposd() {
            warn_clamp(d, &dem_name);
        }
        let mut dets = read_shots(
            dets_path,
            format_of(dets_path, args.dets_format),
            dem.num_detectors(),
            "detectors",
        )?;
        let truth = match args.obs.as_deref() {
            Some(p) => {
                let format = format_of(p, args.obs_format);
                let t = read_shots(p, format, dem.num_observables(), "observables")?;
                // A b8 file of zero-bit records is empty, as stim writes it: it says nothing
                // about the number of shots, so it matches the detection events' (a `01` one
                // has an empty line per shot and is counted).
                Some(if t.bits() == 0 && format == ShotFormat::B8 {
                    ShotTable::zeros(dets.shots(), 0)
                } else {
                    t
                })
            }
            None => None,
        };
        cut_to_shots(args.shots, dets_path, &mut dets)?;
        if let Some(t) = &truth
            && t.shots() < dets.shots()
        {
            bail!(
                "{} holds {} shots, {} holds {}: the files do not match",
                args.obs.as_deref().expect("truth").display(),
                t.shots(),
                dets_path.display(),
                dets.shots()
            );
        }
        Ok(DemConfig {
            dem_name,
            dem,
            decoder,
            kind: args.decoder,
            dets,
            truth,
            obs_out: args
                .obs_out
                .as_ref()
                .map(|p| (p.clone(), format_of(p, args.obs_format))),
            threads: args.threads,
            warmup: args.warmup,
            json: args.json,
        })
    }
}

/// Cuts the detection events of `dets_path` to `--shots`; at least one shot must remain.
fn cut_to_shots(
    shots: Option<usize>,
    dets_path: &Path,
    dets: &mut ShotTable,
) -> anyhow::Result<()> {
    if let Some(n) = shots {
        if n > dets.shots() {
            bail!(
                "--shots {n}: {} holds only {} shots",
                dets_path.display(),
                dets.shots()
            );
        }
        dets.truncate(n);
    }
    if dets.shots() == 0 {
        bail!("{}: no shots", dets_path.display());
    }
    Ok(())
}

/// Circuit level: a warm-up on the decoder, then the shots decoded in a batch on the
/// threads; the predictions written, the logical errors counted.
fn run_dem(c: &DemConfig) -> anyhow::Result<ExitCode> {
    let (dem, dets) = (&c.dem, &c.dets);
    // Warm-up on the prototype (its clones start warm in memory, not in cache).
    let mut warm = c.decoder.clone();
    let mut out = vec![0u8; dem.num_observables().div_ceil(8)];
    for i in 0..c.warmup.min(dets.shots()) {
        warm.decode_packed(dets.row(i), &mut out)?;
    }
    drop(warm);

    let threads = backline_decoders::dem_decoder::threads_for(c.threads);
    let total = dets.shots() as u64;
    let progress = Progress::start("backline decode", "shots", total, Show::unless(c.json));
    let done = progress.counter();
    let start = Instant::now();
    let batch = decode_batch_counted(&c.decoder, dets, threads, true, &done);
    let wall = start.elapsed();
    progress.finish();
    let batch = batch?;
    let batch_mean_ns = if threads == 1 {
        let start = Instant::now();
        let again = decode_batch_counted(&c.decoder, dets, 1, false, &done)?;
        let ns = start.elapsed().as_nanos() as f64 / dets.shots() as f64;
        debug_assert_eq!(again.predictions, batch.predictions);
        Some(ns)
    } else {
        None
    };

    if let Some((p, format)) = &c.obs_out {
        std::fs::write(p, batch.predictions.to_bytes(*format))
            .with_context(|| format!("writing the predictions: {}", p.display()))?;
    }
    let shots = dets.shots() as u64;
    let logical_errors = c.truth.as_ref().map(|t| {
        (0..dets.shots())
            .filter(|&s| batch.predictions.row(s) != t.row(s))
            .count() as u64
    });
    let ler = logical_errors.map(|k| k as f64 / shots as f64);
    let interval = logical_errors.map(|k| wilson_interval(k, shots, 1.96));
    let times: Vec<f64> = batch.times_ns.iter().map(|&t| t as f64).collect();
    let stats = Summary::of(&times).expect("at least one shot");
    let summary = DemSummary {
        decoder: c.kind.name().to_string(),
        detectors: dem.num_detectors(),
        observables: dem.num_observables(),
        mechanisms: c.decoder.mechanisms().len(),
        threads: threads.min(dets.shots()),
        shots,
        logical_errors,
        logical_error_rate: ler,
        ler_low: interval.map(|i| i.0),
        ler_high: interval.map(|i| i.1),
        median_ns: stats.median_ns,
        p99_ns: stats.p99_ns,
        mean_ns: stats.mean_ns,
        throughput_per_s: shots as f64 / wall.as_secs_f64(),
        batch_mean_ns,
        converged_rate: batch.converged as f64 / shots as f64,
        osd_order: c.decoder.bposd().map(BpOsdDecoder::osd_order),
    };
    if c.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        let errors = match (logical_errors, ler, interval) {
            (Some(k), Some(r), Some((lo, hi))) => {
                format!(", {k} logical errors (LER {r:.3e}, 95% [{lo:.3e}, {hi:.3e}])")
            }
            _ => String::new(),
        };
        println!(
            "{shots} shots of {} ({} detectors, {} mechanisms) with {} on {} threads: \
             median {:.0} ns, p99 {:.0} ns, {:.0} shots/s, converged {:.2}%{errors}",
            c.dem_name,
            summary.detectors,
            summary.mechanisms,
            summary.decoder,
            summary.threads,
            summary.median_ns,
            summary.p99_ns,
            summary.throughput_per_s,
            100.0 * summary.converged_rate
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `name-with-dashes: message` for a setting error.
fn flag_of(e: &DecoderError) -> String {
    match e {
        DecoderError::Setting { name, .. } => format!("{}: {e}", name.replace('_', "-")),
        e => e.to_string(),
    }
}
