//! `backline-hdl`: writes the engine's generated Verilog and reports its resource estimate.
//!
//! * `backline-hdl generate [--out DIR]` — writes `hwhs.v` and `hwhs_ernic_adapter.v`
//!   (default `bitstreams/rtl/`);
//! * `backline-hdl resources [--rtl FILE] [--adapter FILE] [--check]` — runs yosys
//!   `synth_xilinx` on the checked-in engine and adapter and prints their LUTs and FFs, and
//!   their sum next to the reference engine's; `--check` exits 1 when the sum exceeds the
//!   reference.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

fn usage() -> ExitCode {
    eprintln!(
        "usage: backline-hdl generate [--out DIR]\n       backline-hdl resources [--rtl FILE] [--adapter FILE] [--check]"
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
            for (name, text) in [
                ("hwhs.v", backline_hdl::verilog()),
                ("hwhs_ernic_adapter.v", backline_hdl::adapter::verilog()),
            ] {
                let path = dir.join(name);
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
                println!("wrote {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Some("resources") => {
            let rtl = value("--rtl").unwrap_or_else(|| repo.join(backline_hdl::RTL_PATH));
            let adapter =
                value("--adapter").unwrap_or_else(|| repo.join(backline_hdl::adapter::RTL_PATH));
            let d =
                backline_hdl::resources::estimate_design(&rtl, &adapter).with_context(|| {
                    format!("estimating {} and {}", rtl.display(), adapter.display())
                })?;
            print!("{}", d.report());
            if args.iter().any(|a| a == "--check") && !d.within_reference() {
                eprintln!(
                    "backline-hdl: the engine and the adapter together exceed the reference \
                     engine's resources"
                );
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
