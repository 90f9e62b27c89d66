//! The kernel sources, embedded, and the one translation unit each compiler is given.
//!
//! The files under `kernels/` are included textually (`#include "…"` lines replaced by the
//! file, between `#line` directives), so that NVRTC and hiprtc need no include path and every
//! diagnostic still names the original file and line. A user kernel (`gpu:FILE.cu:FUNCTION`)
//! is appended to the persistent template with `#define BL_USER_FN FUNCTION`, after a
//! `#line 1 "FILE"`, so its errors cite the user's file:line.

use std::fmt::Write;
use std::path::Path;

/// The kernel files by name, as committed.
pub const FILES: &[(&str, &str)] = &[
    ("port.h", include_str!("../kernels/port.h")),
    ("backline_gpu.h", include_str!("../kernels/backline_gpu.h")),
    ("bposd.cuh", include_str!("../kernels/bposd.cuh")),
    ("persistent.cu", include_str!("../kernels/persistent.cu")),
    ("emu.cpp", include_str!("../kernels/emu.cpp")),
    ("triton.cu", include_str!("../kernels/triton.cu")),
];

/// The directory the `#line` directives name.
pub const KERNEL_DIR: &str = "gpu-responder/kernels";

fn file(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Appends `name` with its local includes expanded (each file at most once, like a header
/// guard would).
fn expand(out: &mut String, name: &str, seen: &mut Vec<String>) {
    if seen.iter().any(|s| s == name) {
        return;
    }
    seen.push(name.to_string());
    let text = file(name).unwrap_or_else(|| panic!("kernel file {name} is not embedded"));
    let _ = writeln!(out, "#line 1 \"{KERNEL_DIR}/{name}\"");
    for (i, line) in text.lines().enumerate() {
        let inc = line
            .trim_start()
            .strip_prefix("#include \"")
            .and_then(|r| r.strip_suffix('"'));
        match inc.filter(|n| file(n).is_some()) {
            Some(n) => {
                expand(out, n, seen);
                let _ = writeln!(out, "#line {} \"{KERNEL_DIR}/{name}\"", i + 2);
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
}

/// The built-in kernels (persistent loop with echo, Steane and BP+OSD; the floor) as one
/// translation unit for NVRTC or hiprtc.
pub fn builtin() -> String {
    let mut s = String::new();
    expand(&mut s, "persistent.cu", &mut Vec::new());
    s
}

/// The persistent template with a user device function `function` from `user_source`
/// (shown as `user_path` in diagnostics), for NVRTC or hiprtc; with `host`, also the host
/// emulation's launcher, for a host C++ compiler.
pub fn with_user(function: &str, user_path: &Path, user_source: &str, host: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "#define BL_USER_FN {function}");
    let mut seen = Vec::new();
    expand(&mut s, "persistent.cu", &mut seen);
    let _ = writeln!(s, "#line 1 \"{}\"", user_path.display());
    s.push_str(user_source);
    s.push('\n');
    if host {
        expand(&mut s, "emu.cpp", &mut seen);
    }
    s
}

/// The persistent template with the Triton adapter (`kernels/triton.cu`), for NVRTC with
/// relocatable device code: its PTX declares `bl_triton_decode`, which the Triton linker
/// supplies.
pub fn triton_template() -> String {
    with_user(
        "bl_triton_user",
        Path::new(&format!("{KERNEL_DIR}/triton.cu")),
        file("triton.cu").expect("embedded"),
        false,
    )
}

/// Whether `name` is a C identifier (a user function must be one).
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// FNV-1a, 64-bit (offset basis `0xCBF2_9CE4_8422_2325`, prime `0x100_0000_01B3`) of a
/// translation unit: what `ptx/SOURCES` records for each shipped PTX file, so that a kernel
/// edit without a fresh PTX fails a test that needs no GPU compiler.
pub const fn fnv1a_64(text: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    let mut i = 0;
    while i < text.len() {
        h ^= text[i] as u64;
        h = h.wrapping_mul(0x100_0000_01B3);
        i += 1;
    }
    h
}

/// The shipped PTX files and the translation unit each is compiled from.
pub fn ptx_sources() -> [(&'static str, String); 2] {
    [
        ("persistent.ptx", builtin()),
        ("persistent_triton.ptx", triton_template()),
    ]
}

/// The text of `ptx/SOURCES` for today's kernel sources: one line per shipped PTX file with
/// the FNV-1a hash of its translation unit.
pub fn ptx_sources_record() -> String {
    let mut s = String::from(
        "# The FNV-1a (64-bit) hash of the translation unit each shipped PTX file was compiled\n\
         # from (backline_gpu::source::ptx_sources). Written with the PTX by\n\
         # `BACKLINE_BLESS=1 cargo test -p backline-gpu --test compile` (NVRTC 12.9); checked by\n\
         # tests/ptx_sources.rs, which needs no GPU compiler.\n",
    );
    for (ptx, unit) in ptx_sources() {
        let _ = writeln!(s, "{ptx} {:#018x}", fnv1a_64(unit.as_bytes()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_expanded_once_with_line_directives() {
        let s = builtin();
        assert_eq!(
            s.matches("#line 1 \"gpu-responder/kernels/port.h\"")
                .count(),
            1
        );
        assert!(s.contains("#line 1 \"gpu-responder/kernels/bposd.cuh\""));
        assert!(!s.contains("#include \"port.h\""));
        assert!(s.contains("BL_KERNEL void bl_persistent"));
        // After bposd.cuh the directive resumes persistent.cu at the line after its include.
        let resume = s
            .lines()
            .skip_while(|l| !l.starts_with("#line 1 \"gpu-responder/kernels/bposd.cuh\""))
            .find(|l| l.contains("kernels/persistent.cu"))
            .unwrap();
        let n: usize = resume.split_whitespace().nth(1).unwrap().parse().unwrap();
        let include_line = include_str!("../kernels/persistent.cu")
            .lines()
            .position(|l| l == "#include \"bposd.cuh\"")
            .unwrap();
        assert_eq!(n, include_line + 2);
    }

    #[test]
    fn user_source_follows_the_template_under_its_own_name() {
        let s = with_user(
            "my_fn",
            Path::new("dec.cu"),
            "BL_USER_FUNCTION bl_u32 my_fn() {}",
            true,
        );
        assert!(s.starts_with("#define BL_USER_FN my_fn\n"));
        let at = s.find("#line 1 \"dec.cu\"").unwrap();
        assert!(s[at..].contains("BL_USER_FUNCTION bl_u32 my_fn"));
        assert!(s[at..].contains("kernels/emu.cpp"));
        assert!(is_identifier("decode_z2") && !is_identifier("2x") && !is_identifier("a-b"));
    }

    #[test]
    fn fnv1a_64_known_values() {
        assert_eq!(fnv1a_64(b""), 0xCBF2_9CE4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xAF63_DC4C_8601_EC8C);
        assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_F739_67E8);
    }
}
