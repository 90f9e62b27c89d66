//! Builds the C example and the C error test with the system C compiler against the cdylib,
//! and runs them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where cargo put libbackline.so: next to this test (target/<profile>/deps) during
/// `cargo test`, or one level up after a plain build.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    if deps.join("libbackline.so").exists() {
        deps
    } else {
        deps.parent().unwrap().to_path_buf()
    }
}

fn build_and_run(src: &Path, name: &str) -> String {
    build_and_run_with(src, name, &[])
}

fn build_and_run_with(src: &Path, name: &str, env: &[(&str, &str)]) -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let lib = lib_dir();
    assert!(
        lib.join("libbackline.so").exists(),
        "libbackline.so not found in {}",
        lib.display()
    );
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-I"])
        .arg(format!("{dir}/include"))
        .arg(src)
        .arg("-o")
        .arg(&out)
        .arg(format!("-L{}", lib.display()))
        .arg("-lbackline")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(st.success(), "compiling {}", src.display());
    let o = Command::new(&out)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

#[test]
fn c_example_runs_1000_checked_rounds() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let out = build_and_run(
        Path::new(&format!("{dir}/examples/c/memcpy_rounds.c")),
        "memcpy_rounds",
    );
    assert!(out.contains("1000 rounds ok"), "{out}");
}

#[test]
fn bad_calls_return_their_status_codes() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let out = build_and_run(
        Path::new(&format!("{dir}/tests/c/abi_errors.c")),
        "abi_errors",
    );
    assert!(out.contains("abi errors ok"), "{out}");
}

#[test]
fn a_gpu_coprocessor_serves_c_controllers_through_its_rings() {
    if !backline_responder::GPU {
        // The default build of the C ABI has no GPU functions (feature `gpu-emu` for this
        // test); `no_gpu_functions_without_the_feature` in backline-responder covers it.
        eprintln!("skipped: this build of the C ABI has no GPU functions (feature gpu-emu)");
        return;
    }
    let dir = env!("CARGO_MANIFEST_DIR");
    let out = build_and_run_with(
        Path::new(&format!("{dir}/tests/c/gpu_rounds.c")),
        "gpu_rounds",
        &[("BACKLINE_GPU_BACKEND", "emu")],
    );
    assert!(out.contains("1000 gpu rounds ok"), "{out}");
}

#[test]
fn several_controllers_share_one_coprocessor() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let out = build_and_run(
        Path::new(&format!("{dir}/tests/c/many_controllers.c")),
        "many_controllers",
    );
    assert!(out.contains("many controllers ok"), "{out}");
}

#[test]
fn one_round_fans_out_to_several_coprocessors() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let out = build_and_run(Path::new(&format!("{dir}/tests/c/fanout.c")), "fanout");
    assert!(out.contains("fan-out ok"), "{out}");
}
