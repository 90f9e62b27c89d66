//! The files a run leaves behind, settled before its first round: one CSV trace per run (and
//! per floor), its plots, and the CCDF of all runs together. [`Outputs::plan`] names every
//! file (names never collide: a second `echo` run is `echo #2`, its files `…-echo-2.csv`);
//! [`Outputs::check`] creates the directory and proves each file writable, so that a bad path
//! fails before the run and not after it; [`Outputs::write`] writes them all in one call.

use std::path::{Path, PathBuf};

use crate::Trace;

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The output directory could not be created.
    #[error("creating the output directory {path}: {source}")]
    Dir {
        /// The directory.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file of the run cannot be written (checked before the run, or when writing).
    #[error("{flag} {path}: {source}")]
    File {
        /// The flag that chose the path (`--csv`, `--out-dir`).
        flag: &'static str,
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Writing a trace failed.
    #[error(transparent)]
    Trace(#[from] crate::TraceError),
}

/// One run's files.
#[derive(Debug, Clone)]
pub struct PlannedRun {
    /// The run's label, unique among the runs (`echo`, `echo #2`).
    pub label: String,
    /// Its CSV trace, if one is written.
    pub csv: Option<PathBuf>,
    /// Whether the path of `csv` was given by the user (`--csv`) rather than made up.
    csv_given: bool,
    /// Its RTT-by-round and distribution plots, if drawn.
    plots: Option<(PathBuf, PathBuf)>,
}

/// What a run (or a floor) is called and where its trace goes when the user said so.
#[derive(Debug, Clone)]
pub struct RunName {
    /// The label (need not be unique; [`Outputs::plan`] makes it so).
    pub label: String,
    /// The trace path given by the user (`--csv`), if any.
    pub csv: Option<PathBuf>,
    /// The file-name part, when not made from the label (`floor` for `floor (cache line)`).
    pub stem: Option<String>,
}

/// Every file of a run, named before the run.
#[derive(Debug, Clone)]
pub struct Outputs {
    dir: Option<PathBuf>,
    runs: Vec<PlannedRun>,
    ccdf: Option<PathBuf>,
}

/// A file-name part of a label: letters, digits and `-`, everything else `_`; of a
/// `LIB:SYMBOL` spec whose library exists, the symbol alone.
pub fn file_stem(label: &str) -> String {
    let base = match label.rsplit_once(':') {
        Some((lib, sym)) if Path::new(lib).exists() => sym,
        _ => label,
    };
    let base = Path::new(base)
        .file_name()
        .map_or_else(|| base.to_string(), |n| n.to_string_lossy().into_owned());
    base.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `names` made unique by a suffix on each repeat: `sep` then 2, 3, … (`echo`, `echo-2`).
fn unique(names: impl IntoIterator<Item = String>, sep: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let mut candidate = n.clone();
        let mut k = 2;
        while out.contains(&candidate) {
            candidate = format!("{n}{sep}{k}");
            k += 1;
        }
        out.push(candidate);
    }
    out
}

impl Outputs {
    /// Names the files of `runs` (in order; floors too). Traces without a user-given path, and
    /// plots when `plots` is set, go into `dir` as `PREFIX-STEM.csv`, `PREFIX-STEM-rtt.svg`,
    /// …; with `dir` `None`, only user-given traces are written.
    pub fn plan(dir: Option<PathBuf>, prefix: &str, plots: bool, runs: &[RunName]) -> Outputs {
        let plots = plots && dir.is_some() && cfg!(feature = "plots");
        let labels = unique(runs.iter().map(|r| r.label.clone()), " #");
        let stems = unique(
            runs.iter()
                .map(|r| r.stem.clone().unwrap_or_else(|| file_stem(&r.label))),
            "-",
        );
        let in_dir = |stem: &str, ext: &str| {
            dir.as_ref()
                .map(|d| d.join(format!("{prefix}-{stem}{ext}")))
        };
        let planned = runs
            .iter()
            .zip(labels)
            .zip(&stems)
            .map(|((r, label), stem)| PlannedRun {
                label,
                csv: r.csv.clone().or_else(|| in_dir(stem, ".csv")),
                csv_given: r.csv.is_some(),
                plots: if plots {
                    in_dir(&format!("{stem}-rtt"), "").zip(in_dir(&format!("{stem}-hist"), ""))
                } else {
                    None
                },
            })
            .collect();
        let ccdf = if plots {
            let stem = unique(stems.iter().cloned().chain(["ccdf".into()]), "-")
                .pop()
                .unwrap_or_default();
            in_dir(&stem, "")
        } else {
            None
        };
        Outputs {
            dir,
            runs: planned,
            ccdf,
        }
    }

    /// The runs' unique labels and files, in the order given to [`Outputs::plan`].
    pub fn runs(&self) -> &[PlannedRun] {
        &self.runs
    }

    /// Every file this plan writes.
    pub fn files(&self) -> Vec<(&'static str, PathBuf)> {
        let mut v: Vec<(&'static str, PathBuf)> = Vec::new();
        for r in &self.runs {
            if let Some(p) = &r.csv {
                v.push((if r.csv_given { "--csv" } else { "--out-dir" }, p.clone()));
            }
            if let Some((a, b)) = &r.plots {
                v.extend(plot_files(a).into_iter().map(|p| ("--out-dir", p)));
                v.extend(plot_files(b).into_iter().map(|p| ("--out-dir", p)));
            }
        }
        if let Some(p) = &self.ccdf {
            v.extend(plot_files(p).into_iter().map(|p| ("--out-dir", p)));
        }
        v
    }

    /// Creates the directory (when a file goes into it) and proves every file writable: an
    /// existing file is opened for writing (not truncated), a new one created and removed.
    pub fn check(&self) -> Result<(), OutputError> {
        let files = self.files();
        if let Some(d) = &self.dir
            && files.iter().any(|(_, p)| p.starts_with(d))
        {
            std::fs::create_dir_all(d).map_err(|source| OutputError::Dir {
                path: backline_decoders::io::excerpt_path(d),
                source,
            })?;
        }
        for (flag, p) in &files {
            let (flag, p) = (*flag, p.as_path());
            let err = |source| OutputError::File {
                flag,
                path: backline_decoders::io::excerpt_path(p),
                source,
            };
            if p.exists() {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .map_err(err)?;
            } else {
                std::fs::File::create(p).map_err(err)?;
                let _ = std::fs::remove_file(p);
            }
        }
        Ok(())
    }

    /// Writes each run's trace and plots (`traces` in the order of the plan; a `None`, a run
    /// that never ran, is skipped) and the CCDF of them all, titled `what` (`memcpy`, `udp`).
    /// Returns the files written. A plot that cannot be drawn is a warning, not an error: the
    /// trace is the data.
    pub fn write(
        &self,
        traces: &[Option<&Trace>],
        what: &str,
    ) -> Result<Vec<PathBuf>, OutputError> {
        let mut written = Vec::new();
        let ran = || {
            self.runs
                .iter()
                .zip(traces)
                .filter_map(|(r, t)| t.map(|t| (r, t)))
        };
        for (r, t) in ran() {
            if let Some(p) = &r.csv {
                t.save(p)?;
                written.push(p.clone());
            }
            #[cfg(feature = "plots")]
            if let Some((rtt, hist)) = &r.plots {
                let rows: Vec<(u64, f64)> = t
                    .rows
                    .iter()
                    .filter(|x| !x.cold && x.status == crate::trace::RoundStatus::Ok)
                    .map(|x| (x.round, x.rtt_ns))
                    .collect();
                let round0 = t.cold_rows().next().map(|x| x.rtt_ns);
                let title = format!("{} over {what}: RTT by round", r.label);
                note(
                    crate::plot::rtt_vs_round(&rows, round0, rtt, &title),
                    rtt,
                    &mut written,
                );
                let v: Vec<f64> = rows.iter().map(|x| x.1).collect();
                let title = format!("{} over {what}: distribution", r.label);
                note(crate::plot::histogram(&v, hist, &title), hist, &mut written);
            }
        }
        #[cfg(feature = "plots")]
        if let Some(p) = &self.ccdf {
            let series: Vec<(String, Vec<f64>)> = ran()
                .map(|(r, t)| (r.label.clone(), t.warm_ok_rtts_ns()))
                .collect();
            let refs: Vec<(&str, &[f64])> =
                series.iter().map(|(n, v)| (n.as_str(), &v[..])).collect();
            note(
                crate::plot::ccdf(&refs, p, &format!("RTT CCDF over {what}")),
                p,
                &mut written,
            );
        }
        #[cfg(not(feature = "plots"))]
        let _ = what;
        Ok(written)
    }
}

/// The files of a plot stem (`.svg` and `.png`; none without the plots feature).
fn plot_files(stem: &Path) -> Vec<PathBuf> {
    #[cfg(feature = "plots")]
    return crate::plot::files_of(stem).to_vec();
    #[cfg(not(feature = "plots"))]
    {
        let _ = stem;
        Vec::new()
    }
}

/// Keeps a drawn plot's files; warns about one that could not be drawn.
#[cfg(feature = "plots")]
fn note<E: std::fmt::Display>(r: Result<(), E>, stem: &Path, written: &mut Vec<PathBuf>) {
    match r {
        Ok(()) => written.extend(plot_files(stem)),
        Err(e) => log::warn!("plot {}: {e}", stem.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(l: &str) -> RunName {
        RunName {
            label: l.into(),
            csv: None,
            stem: None,
        }
    }

    #[test]
    fn repeated_labels_get_a_suffix_and_files_never_collide() {
        let o = Outputs::plan(
            Some("out".into()),
            "bench-memcpy",
            true,
            &[
                name("echo"),
                name("echo"),
                name("a:b"),
                name("a_b"),
                name("floor"),
            ],
        );
        let labels: Vec<&str> = o.runs().iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["echo", "echo #2", "a:b", "a_b", "floor"]);
        let files: Vec<PathBuf> = o.files().into_iter().map(|(_, p)| p).collect();
        let mut dedup = files.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), files.len(), "{files:?}");
        assert_eq!(
            o.runs()[1].csv.as_deref(),
            Some(Path::new("out/bench-memcpy-echo-2.csv"))
        );
    }

    #[test]
    fn without_a_directory_only_given_traces_are_written() {
        let o = Outputs::plan(
            None,
            "bench-memcpy",
            true,
            &[
                RunName {
                    label: "echo".into(),
                    csv: Some("/dev/null".into()),
                    stem: None,
                },
                name("floor"),
            ],
        );
        let files = o.files();
        assert_eq!(files, [("--csv", PathBuf::from("/dev/null"))]);
        o.check().unwrap();
    }

    #[test]
    fn an_unwritable_path_fails_the_check_naming_its_flag() {
        let o = Outputs::plan(
            None,
            "x",
            false,
            &[RunName {
                label: "echo".into(),
                csv: Some("/nonexistent-dir/run.csv".into()),
                stem: None,
            }],
        );
        let e = o.check().unwrap_err().to_string();
        assert!(e.starts_with("--csv /nonexistent-dir/run.csv"), "{e}");
    }
}
