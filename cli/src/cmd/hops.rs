//! Hop probes of `backline bench`: the controller's stamps of each run merged with the
//! coprocessor's — from the serving threads of this process (memcpy), or from the CSV a
//! `backline serve` this bench started writes at its shutdown (shm, udp, rdma on one
//! machine: the same clock, so the hops between the processes are differences) — then
//! printed per hop and written as CSV.

use std::path::{Path, PathBuf};

use anyhow::Context;
use backline_probe::Table;

/// The hop options of a bench.
#[derive(Debug, Clone, Default)]
pub struct HopArgs {
    /// `--hop-stats`.
    pub stats: bool,
    /// `--hop-csv FILE`.
    pub csv: Option<PathBuf>,
}

impl HopArgs {
    /// Whether probes are on.
    pub fn on(&self) -> bool {
        self.stats || self.csv.is_some()
    }
}

/// The coprocessor's tables of the runs, in run order: its sessions that served rounds (a
/// floor session serves none).
pub fn server_tables(sessions: Vec<(u64, Table)>) -> Vec<Table> {
    sessions
        .into_iter()
        .filter(|(_, t)| {
            t.rows()
                .iter()
                .any(|r| r[backline_probe::Hop::RequestSeen as usize] != 0)
        })
        .map(|(_, t)| t)
        .collect()
}

/// The coprocessor's tables from a CSV `backline serve --hop-csv` wrote.
pub fn load_server(path: &Path) -> anyhow::Result<Vec<Table>> {
    let sessions = backline_probe::load_csv(path)
        .with_context(|| format!("reading the server's hop probes {}", path.display()))?;
    Ok(server_tables(sessions))
}

/// Prints and writes the runs' hops: `runs` is (label, merged table) per run.
pub fn report(
    args: &HopArgs,
    transport: &str,
    runs: &[(String, Table)],
    note: Option<&str>,
) -> anyhow::Result<()> {
    if args.stats {
        for (label, t) in runs {
            eprint!("{}", t.render(&format!("hops of {label} over {transport}")));
        }
        if let Some(n) = note {
            eprintln!("{n}");
        }
    }
    if let Some(p) = &args.csv {
        let tables: Vec<(u64, &Table)> = runs
            .iter()
            .enumerate()
            .map(|(i, (_, t))| (i as u64 + 1, t))
            .collect();
        backline_probe::save_csv(&tables, p)
            .with_context(|| format!("--hop-csv {}", p.display()))?;
    }
    Ok(())
}
