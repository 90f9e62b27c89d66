//! `backline decode`: decode a file of syndromes with BP+OSD for a parity-check matrix, write
//! the corrections, and report per-shot decode times.
//!
//! Input: `--checks FILE` (MacKay alist or dense 0/1 text, detected, or `--format`),
//! `--syndromes FILE` (one syndrome per line as `0`/`1` characters; blank lines and `#`
//! comments are skipped). Output: `--output FILE` (one correction per line, in input order;
//! `-` for stdout). Decoder settings carry `ldpc`'s names and defaults.
//!
//! `--json` prints exactly one JSON object on stdout (see [`JsonSummary`]). Without it a short
//! human summary goes to stdout (to stderr when the corrections go to stdout).
//!
//! Exit status: 0 when every correction reproduces its syndrome; 1 when some do not (the
//! syndrome is outside the column space of the checks, or BP alone was asked for and did not
//! converge); 2 on an error.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use backline_bench::Summary;
use backline_decode::io::{self as dio, MatrixFormat};
use backline_decode::{
    BitMatrix, BpMethod, BpOsdConfig, BpOsdDecoder, DecoderError, OsdMethod, Schedule,
};
use serde::Serialize;

/// Flags of `backline decode`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Parity-check matrix: MacKay alist or dense 0/1 text (one row per line).
    #[arg(long, value_name = "FILE")]
    pub checks: PathBuf,
    /// Layout of --checks: auto (by extension, then content), alist or dense.
    #[arg(long, default_value = "auto", value_parser = ["auto", "alist", "dense"])]
    pub format: String,
    /// Syndromes, one per line as 0/1 characters, each as long as --checks has rows.
    #[arg(long, value_name = "FILE")]
    pub syndromes: PathBuf,
    /// Physical error rate of every bit, in (0, 0.5).
    #[arg(long, value_name = "P")]
    pub error_rate: f64,
    /// Check-node rule: minimum_sum or product_sum.
    #[arg(long, default_value = "minimum_sum", value_parser = parse_bp_method)]
    pub bp_method: BpMethod,
    /// Min-sum scaling factor; 0 selects the adaptive factor 1 - 2^-iteration.
    #[arg(long, default_value_t = 1.0)]
    pub ms_scaling_factor: f64,
    /// Maximum BP iterations; 0 means the number of bits.
    #[arg(long, default_value_t = 0)]
    pub max_iter: usize,
    /// BP schedule: parallel or serial.
    #[arg(long, default_value = "parallel", value_parser = parse_schedule)]
    pub schedule: Schedule,
    /// Post-processing when BP does not converge: osd0, osd_cs or off.
    #[arg(long, default_value = "osd0", value_parser = parse_osd_method)]
    pub osd_method: OsdMethod,
    /// Combination-sweep order for osd_cs (at most the number of free columns, n - rank).
    #[arg(long, default_value_t = 0)]
    pub osd_order: usize,
    /// Where to write the corrections, one per line in input order ("-": stdout).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Untimed decodes before the timed pass (cycling through the syndromes).
    #[arg(long, default_value_t = 100)]
    pub warmup: usize,
    /// Print exactly one JSON object: shots, median_ns, p99_ns, mean_ns, throughput_per_s,
    /// bp_converged_rate.
    #[arg(long)]
    pub json: bool,
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

/// The `--json` object, one line on stdout.
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

/// Runs `backline decode`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let checks_name = args.checks.display().to_string();
    let format = match args.format.as_str() {
        "alist" => Some(MatrixFormat::Alist),
        "dense" => Some(MatrixFormat::Dense),
        _ => None,
    };
    let h = dio::load_matrix(&args.checks, format).context("reading the checks")?;
    let config = BpOsdConfig {
        error_rate: args.error_rate,
        error_channel: None,
        bp_method: args.bp_method,
        max_iter: args.max_iter,
        ms_scaling_factor: args.ms_scaling_factor,
        schedule: args.schedule,
        osd_method: args.osd_method,
        osd_order: args.osd_order,
    };
    let mut decoder = BpOsdDecoder::new(&h, &config).map_err(|e| match e {
        DecoderError::ErrorRate(_) => anyhow::anyhow!("--error-rate {}: {e}", args.error_rate),
        DecoderError::ScalingFactor(_) => {
            anyhow::anyhow!("--ms-scaling-factor {}: {e}", args.ms_scaling_factor)
        }
        DecoderError::OsdOrderTooLarge { .. } => {
            anyhow::anyhow!("--osd-order {} for {checks_name}: {e}", args.osd_order)
        }
        e => anyhow::anyhow!("{checks_name}: {e}"),
    })?;

    let syn_name = args.syndromes.display().to_string();
    let text = std::fs::read_to_string(&args.syndromes)
        .with_context(|| format!("reading the syndromes: {syn_name}"))?;
    let shots = dio::parse_bit_lines(&text, &syn_name, Some(h.rows()))
        .map_err(|e| anyhow::anyhow!("{e} (the checks in {checks_name} have {} rows)", h.rows()))?;
    drop(text);
    if shots.is_empty() {
        bail!("{syn_name}: no syndromes");
    }

    let to_stdout = args.output.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let mut out: Option<Box<dyn Write>> = match &args.output {
        None => None,
        Some(_) if to_stdout => Some(Box::new(BufWriter::new(std::io::stdout().lock()))),
        Some(p) => Some(Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        ))),
    };

    let n = h.cols();
    let mut correction = vec![0u8; n];
    for i in 0..args.warmup {
        let (_, s) = &shots[i % shots.len()];
        decoder.decode(s, &mut correction)?;
    }

    let progress = std::io::stderr().is_terminal() && !args.json;
    let mut times_ns = Vec::with_capacity(shots.len());
    let mut converged = 0u64;
    let mut unsatisfied: Vec<usize> = Vec::new();
    let mut check = vec![0u8; h.rows()];
    let mut line = Vec::with_capacity(n + 1);
    let mut last_progress = Instant::now();
    let loop_start = Instant::now();
    for (k, (lineno, s)) in shots.iter().enumerate() {
        let t0 = Instant::now();
        let info = decoder.decode(s, &mut correction)?;
        let dt = t0.elapsed();
        times_ns.push(dt.as_nanos() as f64);
        converged += info.converged as u64;
        if !reproduces(&h, &correction, s, &mut check) {
            unsatisfied.push(*lineno);
        }
        if let Some(w) = out.as_mut() {
            line.clear();
            line.extend(correction.iter().map(|&c| b'0' + c));
            line.push(b'\n');
            w.write_all(&line).context("writing the corrections")?;
        }
        if progress && last_progress.elapsed() > Duration::from_secs(1) {
            eprint!("\rdecoded {}/{}", k + 1, shots.len());
            last_progress = Instant::now();
        }
    }
    let wall = loop_start.elapsed();
    if progress && wall > Duration::from_secs(1) {
        eprintln!("\rdecoded {}/{}", shots.len(), shots.len());
    }
    if let Some(mut w) = out.take() {
        w.flush().context("writing the corrections")?;
    }

    let stats = Summary::of(&times_ns).expect("at least one shot");
    let summary = JsonSummary {
        shots: shots.len() as u64,
        median_ns: stats.median_ns,
        p99_ns: stats.p99_ns,
        mean_ns: stats.mean_ns,
        throughput_per_s: shots.len() as f64 / wall.as_secs_f64(),
        bp_converged_rate: converged as f64 / shots.len() as f64,
    };
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        let text = format!(
            "{} shots of {} ({}x{}): median {:.0} ns, p99 {:.0} ns, mean {:.0} ns, \
             {:.0} shots/s, BP converged {:.2}%\n",
            summary.shots,
            checks_name,
            h.rows(),
            n,
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
    if let Some(&first) = unsatisfied.first() {
        eprintln!(
            "backline: warning: {} of {} corrections do not reproduce their syndrome \
             (first: {syn_name}:{first})",
            unsatisfied.len(),
            shots.len()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `h · correction == syndrome`.
fn reproduces(h: &BitMatrix, correction: &[u8], syndrome: &[u8], scratch: &mut [u8]) -> bool {
    h.mul_bytes(correction, scratch);
    scratch == syndrome
}
