//! `backline plot`: SVG and PNG plots from any number of CSV traces written by `bench`, `sim`
//! or `backline-apu trace`: per trace the RTT by round and the distribution, and one CCDF with
//! all traces overlaid (e.g. b2b and random-delayed).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use backline_bench::trace::RoundStatus;
use backline_bench::{Trace, plot};

/// Flags of `backline plot`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// CSV traces (one or more).
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// Where to write the plots (each as .svg and .png).
    #[arg(long, default_value = "backline-out")]
    pub out_dir: PathBuf,
    /// Title of the overlaid CCDF.
    #[arg(long, default_value = "RTT CCDF")]
    pub title: String,
}

/// Runs `backline plot`.
pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&a.out_dir)
        .with_context(|| format!("creating {}", a.out_dir.display()))?;
    let mut series = Vec::new();
    for path in &a.traces {
        let t = Trace::load(path)?;
        let stem = path
            .file_stem()
            .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
        let name = match (t.meta("responder"), t.meta("cadence")) {
            (Some(r), Some(c)) => format!("{r} {}", c.split_whitespace().next().unwrap_or(c)),
            _ => stem.clone(),
        };
        let rows: Vec<(u64, f64)> = t
            .rows
            .iter()
            .filter(|r| !r.cold && r.status == RoundStatus::Ok)
            .map(|r| (r.round, r.rtt_ns))
            .collect();
        let cold = t.cold_rows().next().map(|r| r.rtt_ns);
        plot::rtt_vs_round(&rows, cold, &a.out_dir.join(format!("{stem}-rtt")), &name)
            .with_context(|| format!("plotting {}", path.display()))?;
        let v: Vec<f64> = rows.iter().map(|r| r.1).collect();
        plot::histogram(&v, &a.out_dir.join(format!("{stem}-hist")), &name)?;
        series.push((name, v));
    }
    let refs: Vec<(&str, &[f64])> = series.iter().map(|(n, v)| (n.as_str(), &v[..])).collect();
    let out = a.out_dir.join("ccdf");
    plot::ccdf(&refs, &out, &a.title)?;
    eprintln!("wrote plots to {}", a.out_dir.display());
    Ok(ExitCode::SUCCESS)
}
