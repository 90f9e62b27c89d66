//! Every kernel source compiles for real, with no GPU present: CUDA with NVRTC to PTX for
//! `compute_80` and `compute_90` and `ptxas` to SASS for sm_80 and sm_90 (registers, spills and
//! stack printed), HIP with hipcc and with hiprtc for gfx90a; and the PTX the crate ships is
//! what NVRTC makes of today's sources.
//!
//! The compilers come from pip wheels and Debian (`scripts/deps.d/gpu.sh`): NVRTC is found
//! through `BACKLINE_NVRTC` or the library path, `ptxas` through `BACKLINE_PTXAS` or `PATH`,
//! `hipcc` through `PATH`. A missing compiler skips its test with a message, unless
//! `BACKLINE_REQUIRE_GPU_COMPILERS=1` (set by the CI suite), which makes it a failure.

use std::path::PathBuf;
use std::process::Command;

fn required() -> bool {
    std::env::var_os("BACKLINE_REQUIRE_GPU_COMPILERS").is_some_and(|v| v != "0")
}

fn skip(what: &str) {
    assert!(
        !required(),
        "{what} is missing and BACKLINE_REQUIRE_GPU_COMPILERS is set"
    );
    eprintln!("skipped: {what} not found");
}

fn tool(env: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Writes `ptx/SOURCES` for today's kernels, beside a blessed PTX file.
#[cfg(feature = "cuda")]
fn bless_sources() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/ptx/SOURCES");
    std::fs::write(path, backline_gpu::source::ptx_sources_record()).unwrap();
}

/// A user kernel as a user would write one: the Steane lookup as a device function.
const USER_STEANE: &str = r#"
BL_USER_FUNCTION bl_u32 steane_user(const bl_u8 *in, bl_u32 in_len, bl_u8 *out,
                                    bl_u32 out_cap, bl_u32 decoder_id) {
    (void)decoder_id;
    if (in_len < 1 || out_cap < 1) return BL_USER_FAILED;
    const bl_u8 table[8] = {15, 0, 1, 2, 3, 4, 5, 6};
    if (bl_tid() == 0) out[0] = table[in[0] & 7];
    return 1;
}
"#;

fn sources() -> Vec<(&'static str, String)> {
    vec![
        ("persistent.cu", backline_gpu::source::builtin()),
        (
            "user_steane.cu",
            backline_gpu::source::with_user(
                "steane_user",
                std::path::Path::new("user_steane.cu"),
                USER_STEANE,
                false,
            ),
        ),
    ]
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_kernels_compile_to_ptx_and_sass_for_sm80_and_sm90() {
    let Some((major, minor)) = backline_gpu::nvrtc_version() else {
        return skip("NVRTC (libnvrtc.so.12)");
    };
    eprintln!("NVRTC {major}.{minor}");
    let ptxas = tool("BACKLINE_PTXAS", "ptxas");
    if ptxas.is_none() {
        skip("ptxas");
    }
    let dir = std::env::temp_dir().join(format!("backline-gpu-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, src) in sources() {
        for (arch, sm) in [("compute_80", "sm_80"), ("compute_90", "sm_90")] {
            let ptx = backline_gpu::nvrtc_compile(&src, name, arch)
                .unwrap_or_else(|e| panic!("{name} for {arch}: {e}"));
            assert!(ptx.contains(".entry bl_persistent"), "{name}");
            assert!(ptx.contains(".entry bl_floor"), "{name}");
            // The mailbox uses the memory-model operations, not plain loads.
            assert!(ptx.contains("ld.acquire.sys"), "{name}: acquire poll");
            assert!(ptx.contains("st.release.sys"), "{name}: release publish");
            let Some(ptxas) = &ptxas else { continue };
            let file = dir.join(format!("{name}.{arch}.ptx"));
            std::fs::write(&file, &ptx).unwrap();
            let out = Command::new(ptxas)
                .args(["-v", "-arch", sm, "-o"])
                .arg(dir.join(format!("{name}.{sm}.cubin")))
                .arg(&file)
                .output()
                .expect("running ptxas");
            let log = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "ptxas {sm} {name}:\n{log}");
            // ptxas -v: "Used N registers, ... bytes stack frame, ... spill stores".
            for line in log
                .lines()
                .filter(|l| l.contains("Used") || l.contains("spill"))
            {
                eprintln!("{name} {sm}: {}", line.trim());
            }
            assert!(log.contains("bl_persistent"), "{log}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "cuda")]
#[test]
fn shipped_ptx_is_what_nvrtc_makes_of_the_sources() {
    let Some(version) = backline_gpu::nvrtc_version() else {
        return skip("NVRTC (libnvrtc.so.12)");
    };
    let (arch, shipped) = backline_gpu::builtin_ptx();
    let fresh =
        backline_gpu::nvrtc_compile(&backline_gpu::source::builtin(), "persistent.cu", arch)
            .expect("the built-in kernels compile");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/ptx/persistent.ptx");
    if std::env::var_os("BACKLINE_BLESS").is_some() {
        std::fs::write(path, &fresh).unwrap();
        bless_sources();
        return;
    }
    // PTX text depends on the NVRTC release: compare only with the one CI pins.
    if version != PINNED_NVRTC {
        eprintln!(
            "skipped: NVRTC {version:?} is not the pinned {PINNED_NVRTC:?}; the PTX compiles but is not compared"
        );
        return;
    }
    assert!(
        shipped == fresh,
        "gpu-responder/ptx/persistent.ptx is stale: run `BACKLINE_BLESS=1 cargo test -p backline-gpu --test compile` with NVRTC {PINNED_NVRTC:?}"
    );
}

#[cfg(feature = "cuda")]
#[test]
fn shipped_triton_template_is_what_nvrtc_makes_of_the_sources() {
    let Some(version) = backline_gpu::nvrtc_version() else {
        return skip("NVRTC (libnvrtc.so.12)");
    };
    let fresh = backline_gpu::nvrtc_compile_with(
        &backline_gpu::source::triton_template(),
        "triton.cu",
        "compute_80",
        &["-rdc=true"],
    )
    .expect("the Triton template compiles");
    assert!(
        fresh.contains(".extern .func bl_triton_decode"),
        "declares the Triton function"
    );
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/ptx/persistent_triton.ptx");
    if std::env::var_os("BACKLINE_BLESS").is_some() {
        std::fs::write(path, &fresh).unwrap();
        bless_sources();
        return;
    }
    if version != PINNED_NVRTC {
        eprintln!("skipped: NVRTC {version:?} is not the pinned {PINNED_NVRTC:?}");
        return;
    }
    assert!(
        backline_gpu::triton_template_ptx() == fresh,
        "gpu-responder/ptx/persistent_triton.ptx is stale: run `BACKLINE_BLESS=1 cargo test -p backline-gpu --test compile` with NVRTC {PINNED_NVRTC:?}"
    );
}

/// The Steane decoder of `examples/steane_triton.py` as Triton 3.9 compiles it
/// (`scripts/dev/triton_fixture.py` writes it), linked into the shipped template: ptxas must
/// accept the whole for sm_80 and sm_90.
#[cfg(feature = "cuda")]
#[test]
fn a_triton_decoder_links_into_the_template_and_ptxas_accepts_it() {
    let Some(ptxas) = tool("BACKLINE_PTXAS", "ptxas") else {
        return skip("ptxas");
    };
    let fixture = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/steane_triton.ptx"
    ));
    let decoder = backline_gpu::triton::TritonDecoder::read(fixture).unwrap();
    assert_eq!(
        (decoder.kernel.as_str(), decoder.num_warps),
        ("steane_decode", 1)
    );
    let linked = backline_gpu::triton::link(
        backline_gpu::triton_template_ptx(),
        &decoder.ptx,
        &decoder.kernel,
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("backline-gpu-triton-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("linked.ptx");
    std::fs::write(&file, &linked).unwrap();
    for sm in ["sm_80", "sm_90"] {
        let out = Command::new(&ptxas)
            .args(["-v", "-arch", sm, "-o"])
            .arg(dir.join(format!("linked.{sm}.cubin")))
            .arg(&file)
            .output()
            .expect("running ptxas");
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "ptxas {sm} rejects the linked module:\n{log}"
        );
        assert!(log.contains("bl_persistent"), "{log}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The NVRTC release `scripts/deps.d/gpu.sh` installs (`nvidia-cuda-nvrtc-cu12==12.9.86`).
#[cfg(feature = "cuda")]
const PINNED_NVRTC: (i32, i32) = (12, 9);

#[test]
fn hip_kernels_compile_for_gfx90a_with_hipcc() {
    let Some(hipcc) = tool("HIPCC", "hipcc") else {
        return skip("hipcc");
    };
    let dir = std::env::temp_dir().join(format!("backline-gpu-hip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, src) in sources() {
        let file = dir.join(name.replace(".cu", ".hip"));
        std::fs::write(&file, &src).unwrap();
        let out = Command::new(&hipcc)
            .args([
                "--offload-arch=gfx90a",
                "--genco",
                "-ffp-contract=off",
                "-O3",
                "-o",
            ])
            .arg(dir.join(format!("{name}.hsaco")))
            .arg(&file)
            .output()
            .expect("running hipcc");
        assert!(
            out.status.success(),
            "hipcc gfx90a {name}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let size = std::fs::metadata(dir.join(format!("{name}.hsaco")))
            .unwrap()
            .len();
        eprintln!("{name} gfx90a: code object of {size} bytes");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "hip")]
#[test]
fn hip_kernels_compile_for_gfx90a_with_hiprtc() {
    match backline_gpu::hiprtc_compile(&backline_gpu::source::builtin(), "persistent.cu", "gfx90a")
    {
        Ok(code) => {
            assert!(code.len() > 1000, "a code object, {} bytes", code.len());
            eprintln!("hiprtc gfx90a: {} bytes", code.len());
        }
        Err(backline_gpu::Error::NoDriver(what)) => skip(&what),
        Err(e) => panic!("hiprtc: {e}"),
    }
}

#[cfg(feature = "cuda")]
#[test]
fn compile_errors_name_the_users_file_and_line() {
    if backline_gpu::nvrtc_version().is_none() {
        return skip("NVRTC (libnvrtc.so.12)");
    }
    let bad = "BL_USER_FUNCTION bl_u32 f(const bl_u8 *in, bl_u32 n, bl_u8 *out, bl_u32 cap, bl_u32 id) {\n    return undefined_name;\n}\n";
    let src = backline_gpu::source::with_user("f", std::path::Path::new("my/dec.cu"), bad, false);
    let e = backline_gpu::nvrtc_compile(&src, "my/dec.cu", "compute_80").unwrap_err();
    let text = e.to_string();
    assert!(text.contains("my/dec.cu(2)"), "{text}");
    assert!(text.contains("undefined_name"), "{text}");
}
