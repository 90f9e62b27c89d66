//! Compiles the kernel sources as host C++ (the host emulation: the same persistent kernel run
//! by CPU threads) into a static library linked into the crate. Needs only a C++17 compiler
//! with `std::atomic` (`CXX` overrides it); no GPU toolkit is involved. Only with the `emu`
//! feature.
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("kernels");
    for f in [
        "port.h",
        "backline_gpu.h",
        "bposd.cuh",
        "persistent.cu",
        "emu.cpp",
        "triton.cu",
    ] {
        println!("cargo::rerun-if-changed={}", dir.join(f).display());
    }
    if std::env::var_os("CARGO_FEATURE_EMU").is_none() {
        return;
    }
    cc::Build::new()
        .cpp(true)
        .file(dir.join("emu.cpp"))
        .include(&dir)
        .std("c++17")
        // The emulation is test infrastructure for bit-exact decoders: always optimised, and
        // never contracting a*b+c into an FMA (the Rust decoders do not either).
        .opt_level(2)
        .flag("-ffp-contract=off")
        .flag("-pthread")
        .warnings(true)
        .extra_warnings(true)
        .flag_if_supported("-Wno-unused-parameter")
        .compile("backline_gpu_emu");
    println!("cargo::rustc-link-lib=stdc++");
}
