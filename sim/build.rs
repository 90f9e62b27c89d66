//! Verilates `bitstreams/rtl/hwhs.v` and compiles it with the C++ shim into a static library.
//!
//! Without `verilator` on the PATH (or with `BACKLINE_SIM_NO_VERILATOR=1`) the crate still
//! builds: the `backline_verilator` cfg stays off, `BACKLINE_SIM_BUILD` says why (the
//! binaries print it in `--version` and `sim --help`), and `HwhsSim::new` returns an error
//! that names the command that fixes it. Such a build watches every directory of `PATH`, so
//! the first build after Verilator is installed runs this script again and picks it up —
//! no `cargo clean`. `VERILATOR` and `CXX` override the tools.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The verilator binary the build would run: `$VERILATOR`, else `verilator` on the PATH.
fn find_verilator() -> Option<PathBuf> {
    if let Some(v) = env::var_os("VERILATOR") {
        return Some(PathBuf::from(v));
    }
    env::split_paths(&env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("verilator"))
        .find(|p| p.is_file())
}

/// Re-runs this script when anything on the PATH changes (a tool installed or removed).
fn watch_path() {
    for d in env::split_paths(&env::var_os("PATH").unwrap_or_default()) {
        if d.is_dir() {
            println!("cargo::rerun-if-changed={}", d.display());
        }
    }
}

fn without(why: &str) {
    println!("cargo::rustc-env=BACKLINE_SIM_BUILD=built without Verilator: {why}");
    println!("cargo::warning=backline-sim built without the engine model: {why}");
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(backline_verilator)");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let rtl = manifest.join("../bitstreams/rtl/hwhs.v");
    let shim = manifest.join("shim/shim.cpp");
    println!("cargo::rerun-if-changed={}", rtl.display());
    println!("cargo::rerun-if-changed={}", shim.display());
    println!("cargo::rerun-if-env-changed=BACKLINE_SIM_NO_VERILATOR");
    println!("cargo::rerun-if-env-changed=VERILATOR");
    println!("cargo::rerun-if-env-changed=CXX");
    println!("cargo::rerun-if-env-changed=PATH");
    if env::var_os("BACKLINE_SIM_NO_VERILATOR").is_some_and(|v| v != "0") {
        without("BACKLINE_SIM_NO_VERILATOR is set");
        return;
    }
    let Some(verilator) = find_verilator() else {
        watch_path();
        without("no `verilator` on the PATH at build time");
        return;
    };
    println!("cargo::rerun-if-changed={}", verilator.display());
    let root = match Command::new(&verilator)
        .arg("--getenv")
        .arg("VERILATOR_ROOT")
        .output()
    {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => {
            watch_path();
            without(&format!(
                "`{} --getenv VERILATOR_ROOT` failed",
                verilator.display()
            ));
            return;
        }
    };
    let version = Command::new(&verilator)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let version = version
        .split(" 20")
        .next()
        .unwrap_or("Verilator")
        .to_string();
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let mdir = out.join("vl");
    let _ = std::fs::remove_dir_all(&mdir);
    run(Command::new(&verilator)
        .args([
            "--cc",
            "--top-module",
            "top",
            "-Wno-WIDTH",
            "-O3",
            "--x-assign",
            "fast",
        ])
        .args(["--x-initial", "fast", "--noassert", "--Mdir"])
        .arg(&mdir)
        .arg(&rtl));
    run(Command::new("make").arg("-C").arg(&mdir).args([
        "-f",
        "Vtop.mk",
        "-j2",
        "OPT_FAST=-O2",
        "OPT_SLOW=-O1",
        // Position-independent, so that the model's thread-locals use the dynamic TLS
        // model: a shared library that links it (the Python extension) can then be loaded
        // with dlopen, which refuses initial-exec TLS of this size.
        "OPT=-fPIC",
        "Vtop__ALL.a",
    ]));
    let cxx = env::var("CXX").unwrap_or_else(|_| "g++".into());
    let include = root.join("include");
    let mut objs = Vec::new();
    for (src, opt) in [
        (shim.clone(), "-O2"),
        (include.join("verilated.cpp"), "-O1"),
        (include.join("verilated_threads.cpp"), "-O1"),
    ] {
        let obj = out.join(src.file_stem().unwrap()).with_extension("o");
        run(Command::new(&cxx)
            .args(["-c", "-std=c++17", "-fPIC", opt, "-w"])
            .arg("-I")
            .arg(&mdir)
            .arg("-I")
            .arg(&include)
            .arg("-I")
            .arg(include.join("vltstd"))
            .arg(&src)
            .arg("-o")
            .arg(&obj));
        objs.push(obj);
    }
    let lib = out.join("libbacklinesim.a");
    let _ = std::fs::remove_file(&lib);
    run(Command::new("ar")
        .arg("crs")
        .arg(&lib)
        .args(&objs)
        .arg(mdir.join("Vtop__ALL.o")));
    println!("cargo::rustc-link-search=native={}", out.display());
    println!("cargo::rustc-link-lib=static=backlinesim");
    println!("cargo::rustc-link-lib=dylib=stdc++");
    println!("cargo::rustc-link-lib=dylib=pthread");
    println!("cargo::rustc-cfg=backline_verilator");
    println!("cargo::rustc-env=BACKLINE_SIM_BUILD=engine model built with {version}");
    let _ = Path::new(&rtl);
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
