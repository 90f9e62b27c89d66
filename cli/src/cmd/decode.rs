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
//! (the true flips, to count logical errors), `--decoder` (a registered decoder: bposd, relay-bp, matching), `--threads K`
//! (0 = every core), `--shots N` (the first N). File formats follow the extension (`.b8` is
//! b8, anything else 01) unless `--dets-format` / `--obs-format` say otherwise
//! (`--obs-format` covers both `--obs-out` and `--obs`).
//!
//! The decoder settings are flags generated from the decoder registry
//! ([`backline_decoders::registry`], [`DecoderFlags`]): one per setting of every registered
//! decoder, with the peer library's name (`ldpc`'s for BP+OSD: `--bp-method`, `--max-iter`, …;
//! `relay-bp`'s for Relay-BP: `--gamma0`, …, `--alpha-iteration-scaling-factor`), its range and
//! its offline default; a setting of another decoder than `--decoder` is an error naming whose
//! it is.
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
use backline_decoders::dem::{DemLimits, DetectorErrorModel};
use backline_decoders::dem_decoder::{
    DemDecoder, DemDecoderSettings, MAX_THREADS, decode_batch_counted, decode_syndromes,
};
use backline_decoders::io::{self as dio, MatrixFormat};
use backline_decoders::registry::{self, Profile, Setting, ValueType};
use backline_decoders::shots::{ShotFormat, ShotTable};
use backline_decoders::{BitMatrix, BpOsdConfig, BpOsdDecoder, DecoderError};
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
    /// mechanisms=N,detectors=N, each a positive integer (defaults 16777216, 16777216, 4194304,
    /// 4194304).
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
    /// The decoder on the model: a registered one (bposd, relay-bp, matching).
    #[arg(long, default_value = registry::DEFAULT_DECODER, value_parser = decoder_names())]
    pub decoder: String,
    /// Decode only the first N shots.
    #[arg(long, value_name = "N")]
    pub shots: Option<usize>,
    /// Decoding threads, 0..=1024 (0: every core).
    #[arg(long, default_value_t = 0, value_parser = at_most::<{ MAX_THREADS }>)]
    pub threads: usize,

    /// Every registered decoder's settings, one flag each, with its peer library's name.
    #[command(flatten)]
    pub settings: DecoderFlags,

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

fn parse_shot_format(s: &str) -> Result<ShotFormat, String> {
    s.parse()
}

fn parse_dem_limits(s: &str) -> Result<DemLimits, String> {
    DemLimits::parse(s).map_err(|e| e.to_string())
}

/// The decoder of code-capacity mode (`--checks`): BP+OSD on the parity-check matrix.
const CHECKS_DECODER: &str = backline_decoders::bposd::ENTRY.name;

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
    /// 99.9th percentile: the tail the real-time bounds are stated in.
    pub p999_ns: f64,
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
    /// Mechanisms of the model (merged as stim merges them).
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
    /// 99.9th percentile: the tail the real-time bounds are stated in.
    pub p999_ns: f64,
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

/// The decoder settings of `backline decode`: one flag per setting of every registered
/// decoder ([`registry::DECODERS`]), named as the setting with `-` for `_`, its help, range and
/// offline default from the registry. The values stay text until [`DecoderFlags::apply`]
/// hands them to the decoder's own parser, so a bad value gets the message it gets from a
/// `stream:` spec or from Python.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecoderFlags {
    /// The settings given, `(key, value)`, in the registry's order.
    pub given: Vec<(&'static str, String)>,
}

/// Every registered setting once (a key two decoders share gets one flag), with the decoders
/// that have it.
fn registered_settings() -> Vec<(&'static Setting, Vec<&'static registry::Entry>)> {
    let mut out: Vec<(&'static Setting, Vec<&'static registry::Entry>)> = Vec::new();
    for &e in registry::DECODERS {
        for st in e.settings {
            match out.iter_mut().find(|(s, _)| s.key == st.key) {
                Some((_, owners)) => owners.push(e),
                None => out.push((st, vec![e])),
            }
        }
    }
    out
}

/// `--decoder`'s values: the registry's names.
fn decoder_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(registry::DECODERS.iter().map(|e| e.name))
}

impl clap::FromArgMatches for DecoderFlags {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<DecoderFlags, clap::Error> {
        let given = registered_settings()
            .into_iter()
            .filter_map(|(st, _)| m.get_one::<String>(st.key).map(|v| (st.key, v.clone())))
            .collect();
        Ok(DecoderFlags { given })
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = DecoderFlags::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for DecoderFlags {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        for (st, owners) in registered_settings() {
            let titles: Vec<&str> = owners.iter().map(|e| e.title).collect();
            // clap keeps flag names as `&'static str`; these few are made once per process.
            let long: &'static str = Box::leak(st.key.replace('_', "-").into_boxed_str());
            let mut arg = clap::Arg::new(st.key)
                .long(long)
                .value_name(value_name(st.value))
                .allow_hyphen_values(true);
            if st.value == ValueType::Flag {
                // `--correlations` alone turns it on; `--correlations 0` says it.
                arg = arg
                    .num_args(0..=1)
                    .default_missing_value("1")
                    .allow_hyphen_values(false);
            }
            cmd = cmd.arg(arg.help(format!(
                "{}: {}; {} [default: {}]",
                titles.join(", "),
                st.help,
                st.range,
                st.offline
            )));
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        DecoderFlags::augment_args(cmd)
    }
}

/// A setting's value name in `--help`.
fn value_name(v: ValueType) -> &'static str {
    match v {
        ValueType::Integer => "N",
        ValueType::Number => "X",
        ValueType::OptionalNumber => "X|none",
        ValueType::Choice(_) => "WORD",
        ValueType::Interval => "LO,HI",
        ValueType::Flag => "0|1",
    }
}

impl DecoderFlags {
    /// The settings of the decoder named `name` at its offline defaults, with the flags
    /// applied; a flag of another decoder is refused, naming whose it is and what `name`
    /// takes.
    pub fn apply(&self, name: &str) -> anyhow::Result<DemDecoderSettings> {
        let mut s = registry::settings(name, Profile::Offline)?;
        for (key, value) in &self.given {
            let flag = format!("--{}", key.replace('_', "-"));
            let Some(_) = s.entry().setting(key) else {
                let owners: Vec<&str> = registry::DECODERS
                    .iter()
                    .filter(|e| e.setting(key).is_some())
                    .map(|e| e.title)
                    .collect();
                let takes = if s.entry().settings.is_empty() {
                    "has none".to_string()
                } else {
                    let flags: Vec<String> = s.entry().settings.iter().map(|t| t.flag()).collect();
                    format!("takes {}", flags.join(", "))
                };
                bail!(
                    "{flag} is a {} setting; --decoder {} {takes}",
                    owners.join(" and "),
                    s.name()
                );
            };
            // The flag, then the registry's message (the one a spec or Python gets).
            s.set(key, value)
                .map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
        }
        for (key, why) in s.notes() {
            eprintln!("backline: warning: --{} {why}", key.replace('_', "-"));
        }
        Ok(s)
    }
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
        for (given, flag) in [
            (args.dets.is_some(), "--dets"),
            (args.dets_format.is_some(), "--dets-format"),
            (args.obs_out.is_some(), "--obs-out"),
            (args.obs_format.is_some(), "--obs-format"),
            (args.obs.is_some(), "--obs"),
            (args.shots.is_some(), "--shots"),
            (args.decoder != CHECKS_DECODER, "--decoder"),
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
        // Code capacity is BP+OSD on the matrix: the registry's settings and flags, with the
        // error rate of every bit (on a model, each mechanism's prior takes its place).
        let settings = args.settings.apply(CHECKS_DECODER).map_err(|e| {
            anyhow::anyhow!("{e} (--checks decodes with BP+OSD; the other decoders take --dem)")
        })?;
        let config = BpOsdConfig {
            error_rate,
            ..settings
                .config::<BpOsdConfig>()
                .expect("the code-capacity decoder's settings are BP+OSD's")
                .clone()
        };
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
        p999_ns: stats.p999_ns,
        mean_ns: stats.mean_ns,
        throughput_per_s: shots as f64 / batch.wall.as_secs_f64(),
        bp_converged_rate: batch.converged as f64 / shots as f64,
    };
    if c.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        let text = format!(
            "{} shots of {} ({}x{}): median {:.0} ns, p99 {:.0} ns, p99.9 {:.0} ns, mean {:.0} ns, \
             {:.0} shots/s, BP converged {:.2}%\n",
            summary.shots,
            c.checks_name,
            c.h.rows(),
            c.h.cols(),
            summary.median_ns,
            summary.p99_ns,
            summary.p999_ns,
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
        let settings = args.settings.apply(&args.decoder)?;
        let text = backline_decoders::io::read_text(dem_path)
            .with_context(|| format!("reading the detector error model: {dem_name}"))?;
        let limits = args.dem_limits.unwrap_or_default();
        let dem = DetectorErrorModel::parse_with(&text, &dem_name, &limits)?;
        drop(text);
        let decoder = DemDecoder::new(&dem, &settings).map_err(|e| match e {
            DecoderError::Setting { .. } => anyhow::anyhow!("--{}", flag_of(&e)),
            e => anyhow::anyhow!("{e}"),
        })?;
        if let Some(d) = decoder.decoder::<BpOsdDecoder>() {
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
        decoder: c.decoder.name().to_string(),
        detectors: dem.num_detectors(),
        observables: dem.num_observables(),
        mechanisms: dem.num_mechanisms(),
        threads: threads.min(dets.shots()),
        shots,
        logical_errors,
        logical_error_rate: ler,
        ler_low: interval.map(|i| i.0),
        ler_high: interval.map(|i| i.1),
        median_ns: stats.median_ns,
        p99_ns: stats.p99_ns,
        p999_ns: stats.p999_ns,
        mean_ns: stats.mean_ns,
        throughput_per_s: shots as f64 / wall.as_secs_f64(),
        batch_mean_ns,
        converged_rate: batch.converged as f64 / shots as f64,
        osd_order: c
            .decoder
            .decoder::<BpOsdDecoder>()
            .map(BpOsdDecoder::osd_order),
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
             median {:.0} ns, p99 {:.0} ns, p99.9 {:.0} ns, {:.0} shots/s, converged {:.2}%{errors}",
            c.dem_name,
            summary.detectors,
            summary.mechanisms,
            summary.decoder,
            summary.threads,
            summary.median_ns,
            summary.p99_ns,
            summary.p999_ns,
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

#[cfg(test)]
mod tests {
    use clap::{Args as _, FromArgMatches as _};

    use super::*;

    /// `backline decode`'s arguments alone, as a command.
    fn command() -> clap::Command {
        Args::augment_args(clap::Command::new("decode"))
    }

    #[test]
    fn every_registered_setting_is_a_flag_with_its_offline_default() {
        let cmd = command();
        for e in registry::DECODERS {
            for st in e.settings {
                let arg = cmd
                    .get_arguments()
                    .find(|a| a.get_long() == Some(&st.flag()[2..]))
                    .unwrap_or_else(|| panic!("no flag for {} {}", e.name, st.key));
                let help = arg.get_help().unwrap().to_string();
                assert!(
                    help.contains(&format!("[default: {}]", st.offline)),
                    "{}: {help}",
                    st.key
                );
            }
        }
        // And every decoder is a value of --decoder.
        let names: Vec<String> = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some("decoder"))
            .unwrap()
            .get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect();
        let want: Vec<&str> = registry::DECODERS.iter().map(|e| e.name).collect();
        assert_eq!(names, want);
    }

    #[test]
    fn flags_reach_the_decoder_as_a_spec_would_give_them() {
        let m = command()
            .try_get_matches_from([
                "decode",
                "--dem",
                "x.dem",
                "--decoder",
                "relay-bp",
                "--alpha-iteration-scaling-factor",
                "2.5",
                "--gamma-dist-interval",
                "-0.5,0.5",
            ])
            .unwrap();
        let a = Args::from_arg_matches(&m).unwrap();
        let s = a.settings.apply(&a.decoder).unwrap();
        assert_eq!(s.get("alpha_iteration_scaling_factor").unwrap(), "2.5");
        assert_eq!(s.get("gamma_dist_interval").unwrap(), "-0.5,0.5");
        // The same bad value, the same message as the registry's (a spec, Python, sinter).
        let flags = DecoderFlags {
            given: vec![("max_iter", "2000000".into())],
        };
        let mut want = registry::settings("bposd", Profile::Offline).unwrap();
        let want = want.set("max_iter", "2000000").unwrap_err().to_string();
        assert_eq!(
            flags.apply("bposd").unwrap_err().to_string(),
            format!("--max-iter: {want}")
        );
        let e = flags.apply("matching").unwrap_err().to_string();
        assert_eq!(
            e,
            "--max-iter is a BP+OSD setting; --decoder matching takes --correlations"
        );
    }
}
