//! `backline-hdl`: writes the engine's generated Verilog and reports its resource estimate.
//!
//! * `backline-hdl generate [--out DIR]` — writes `hwhs.v` (default `bitstreams/rtl/`);
//! * `backline-hdl resources [--rtl FILE] [--check]` — runs yosys `synth_xilinx` on the
//!   checked-in RTL and prints LUTs and FFs next to the reference engine's; `--check` exits 1
//!   when the estimate exceeds the reference.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

fn usage() -> ExitCode {
    eprintln!(
        "usage: backline-hdl generate [--out DIR]\n       backline-hdl resources [--rtl FILE] [--check]"
    );
    ExitCode::from(2)
}

fn run() -> anyhow::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
    };
    match args.first().map(String::as_str) {
        Some("generate") => {
            let dir = value("--out").unwrap_or_else(|| repo.join("bitstreams/rtl"));
            std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
            let path = dir.join("hwhs.v");
            std::fs::write(&path, backline_hdl::verilog())
                .with_context(|| format!("writing {}", path.display()))?;
            println!("wrote {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Some("resources") => {
            let rtl = value("--rtl").unwrap_or_else(|| repo.join(backline_hdl::RTL_PATH));
            let e = backline_hdl::resources::estimate(&rtl)
                .with_context(|| format!("estimating {}", rtl.display()))?;
            print!("{}", e.report());
            if args.iter().any(|a| a == "--check") && !e.within_reference() {
                eprintln!("backline-hdl: estimate exceeds the reference engine's resources");
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        _ => Ok(usage()),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("backline-hdl: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
