//! Checks of the workspace's shape, run by `cargo test -p backline-structure`.
//!
//! The code inside a crate is checked by its own tests; this crate checks the house around
//! them, read from the files themselves:
//!
//! * [`layers`] — every crate sits in one layer of the README's layer table, and depends only
//!   on crates of its own layer or below (read from `cargo metadata`);
//! * [`functions`] — no function of the workspace is longer than a limit (150 lines), but
//!   for the exceptions it names, each with its own ceiling;
//! * [`generated`] — every file that says it is generated is marked so in `.gitattributes`.
//!
//! Each check is a pure function from text to a list of findings, so that its own unit tests
//! can seed a violation and see it reported.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod functions;
pub mod generated;
pub mod layers;

use std::path::{Path, PathBuf};

/// Why a check could not read what it checks.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `cargo metadata` failed or printed something that is not its JSON.
    #[error("cargo metadata: {0}")]
    Metadata(String),
    /// The README has no layer table, or a row of it is malformed.
    #[error("README layer table: {0}")]
    LayerTable(String),
    /// A Rust file does not parse.
    #[error("parsing {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What syn said.
        message: String,
    },
}

/// The workspace's root: two folders above this crate's manifest.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// Reads a file to a string, naming it in the error.
pub fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// The files git tracks under `root` (relative paths), or, outside a git checkout, every file
/// below it but for `target/` and hidden folders.
pub fn tracked_files(root: &Path) -> Vec<PathBuf> {
    let out = std::process::Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output();
    if let Ok(out) = out
        && out.status.success()
    {
        return out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
            .filter(|p| root.join(p).is_file())
            .collect();
    }
    let mut files = Vec::new();
    walk(root, Path::new(""), &mut files);
    files
}

fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        let p = rel.join(&*name);
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(root, &p, out);
        } else {
            out.push(p);
        }
    }
}
