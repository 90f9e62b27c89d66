//! Decoders written in Triton (`@triton.jit`), compiled ahead of time to PTX by Python (no GPU
//! needed there) and linked here into the persistent template, so that no Python runs at run
//! time: the kernel's `.entry` becomes the device function `bl_triton_decode`, which the
//! template's adapter (`kernels/triton.cu`) calls for every message.
//!
//! The linking is textual and checked: the Triton kernel must have the adapter's signature
//! (six parameters, then Triton's two scratch pointers), use no shared memory, and be compiled
//! for `sm_80` (run by later GPUs through the driver's JIT). `ptxas` accepts the result in
//! the tests; on a GPU, the driver's JIT compiles it when the coprocessor starts.

use crate::{Error, Result};

/// The name the Triton function takes in the linked module.
pub const LINKED_NAME: &str = "bl_triton_decode";

/// Parameters of the adapter's signature: six of the decoder's own, two scratch pointers.
const PARAMS: usize = 8;

/// The PTX targets a decoder may be compiled for: the template's own (sm_80), and sm_90, for
/// which the linked module's target is raised to sm_90 (the template's sm_80 code is valid
/// there).
pub const LINKABLE_TARGETS: [&str; 2] = ["sm_80", "sm_90"];

/// The `.target` of a PTX module (`sm_80` when it names none).
fn target_of(ptx: &str) -> &str {
    ptx.lines()
        .find(|l| l.trim_start().starts_with(".target"))
        .and_then(|t| t.split_whitespace().nth(1))
        .map_or("sm_80", |a| a.trim_end_matches(','))
}

fn bad(msg: impl Into<String>) -> Error {
    Error::Unsupported(format!("Triton decoder: {}", msg.into()))
}

/// The function `kernel` of a Triton PTX module, rewritten as `.visible .func
/// bl_triton_decode`: entry-only directives and debug line info dropped, parameter attributes
/// of kernels (`.ptr .global .align N`) removed, parameter types as bit types.
pub fn function_of(triton_ptx: &str, kernel: &str) -> Result<String> {
    if let Some(l) = triton_ptx.lines().find(|l| {
        l.trim_start().starts_with(".extern .shared") || l.trim_start().starts_with(".shared")
    }) {
        return Err(bad(format!(
            "it uses shared memory (`{}`), which the persistent kernel keeps for itself",
            l.trim()
        )));
    }
    let arch = target_of(triton_ptx);
    if !LINKABLE_TARGETS.contains(&arch) {
        return Err(bad(format!(
            "compiled for {arch}; compile it for sm_80 (it runs on every later GPU) or sm_90"
        )));
    }
    let head = format!(".entry {kernel}(");
    let start = triton_ptx
        .find(&head)
        .ok_or_else(|| bad(format!("no kernel `{kernel}` in the PTX")))?;
    let start = triton_ptx[..start].rfind('\n').map_or(0, |i| i + 1);
    // The body ends at the brace that closes the first `{` after the parameter list.
    let params_end = triton_ptx[start..]
        .find(')')
        .map(|i| start + i)
        .ok_or_else(|| bad("unterminated parameter list"))?;
    let open = triton_ptx[params_end..]
        .find('{')
        .map(|i| params_end + i)
        .ok_or_else(|| bad("no function body"))?;
    let mut depth = 0i32;
    let mut end = None;
    for (i, c) in triton_ptx[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(open + i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let end = end.ok_or_else(|| bad("unbalanced braces in the function body"))?;
    let params: Vec<&str> = triton_ptx[start..params_end]
        .lines()
        .filter(|l| l.contains(".param"))
        .collect();
    if params.len() != PARAMS {
        return Err(bad(format!(
            "`{kernel}` has {} parameters; the decoder's signature is (in_ptr, in_len, out_ptr, \
             out_cap, decoder_id, len_ptr) plus Triton's two scratch pointers",
            params.len()
        )));
    }
    let mut out = String::new();
    out.push_str(&format!(".visible .func {LINKED_NAME}(\n"));
    for (i, p) in params.iter().enumerate() {
        let name = p
            .split_whitespace()
            .last()
            .ok_or_else(|| bad("a parameter without a name"))?
            .trim_end_matches(',');
        let ty = if p.contains(".u64") || p.contains(".b64") || p.contains(".s64") {
            ".b64"
        } else if p.contains(".u32") || p.contains(".b32") || p.contains(".s32") {
            ".b32"
        } else {
            return Err(bad(format!(
                "parameter `{}` has an unexpected type",
                p.trim()
            )));
        };
        let sep = if i + 1 < params.len() { "," } else { "" };
        out.push_str(&format!("\t.param {ty} {name}{sep}\n"));
    }
    out.push_str(")\n");
    for line in triton_ptx[params_end + 1..end].lines() {
        let t = line.trim_start();
        if t.starts_with(".reqntid")
            || t.starts_with(".maxntid")
            || t.starts_with(".maxnreg")
            || t.starts_with(".minnctapersm")
            || t.starts_with(".loc")
            || t.is_empty() && out.ends_with("\n\n")
        {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// A Triton decoder file as `backline.triton_decoder` writes it: the PTX with a first line
/// `// backline triton decoder: kernel=NAME num_warps=N`.
#[derive(Debug, Clone, PartialEq)]
pub struct TritonDecoder {
    /// The kernel's name in the PTX.
    pub kernel: String,
    /// Warps it was compiled for (the block has `32 × num_warps` threads).
    pub num_warps: u32,
    /// The PTX (or, for a HIP platform, Triton's AMDGCN assembly).
    pub ptx: String,
    /// The platform it was compiled for (`cuda:sm_80`, `cuda:sm_90`, `hip:gfx90a:64`); files
    /// that name none are `cuda:sm_80`.
    pub platform: String,
}

impl TritonDecoder {
    /// Reads a decoder file.
    pub fn read(path: &std::path::Path) -> Result<TritonDecoder> {
        let ptx =
            std::fs::read_to_string(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
        let first = ptx.lines().next().unwrap_or("");
        let meta = first
            .strip_prefix("// backline triton decoder:")
            .ok_or_else(|| {
                bad(format!(
                    "{}: not a file written by backline.triton_decoder (its first line names the kernel)",
                    path.display()
                ))
            })?;
        let (mut kernel, mut num_warps, mut platform) = (None, 1u32, "cuda:sm_80".to_string());
        for kv in meta.split_whitespace() {
            match kv.split_once('=') {
                Some(("kernel", k)) => kernel = Some(k.to_string()),
                Some(("platform", p)) => platform = p.to_string(),
                Some(("num_warps", n)) => {
                    num_warps = n
                        .parse()
                        .ok()
                        .filter(|&n| (1..=32).contains(&n))
                        .ok_or_else(|| bad(format!("num_warps={n}")))?
                }
                _ => {}
            }
        }
        let kernel = kernel.ok_or_else(|| bad("the file does not name its kernel"))?;
        Ok(TritonDecoder {
            kernel,
            num_warps,
            ptx,
            platform,
        })
    }

    /// Refuses a decoder compiled for another GPU family than `backend`'s, naming both.
    pub fn check_platform(&self, backend: crate::Backend) -> Result<()> {
        let family = self.platform.split(':').next().unwrap_or("");
        let ok = match backend {
            crate::Backend::Cuda => family == "cuda",
            crate::Backend::Hip => family == "hip",
            _ => false,
        };
        if ok {
            return Ok(());
        }
        Err(bad(format!(
            "`{}` was compiled for {}; the {backend} backend cannot run it",
            self.kernel, self.platform
        )))
    }
}

/// Links a Triton decoder into the template's PTX (`ptx/persistent_triton.ptx`): removes the
/// template's declaration of `bl_triton_decode` and puts the definition in its place.
pub fn link(template_ptx: &str, triton_ptx: &str, kernel: &str) -> Result<String> {
    let func = function_of(triton_ptx, kernel)?;
    let decl = template_ptx
        .find(&format!(".extern .func {LINKED_NAME}"))
        .ok_or_else(|| bad("the template does not declare the Triton function"))?;
    let decl_end = template_ptx[decl..]
        .find(';')
        .map(|i| decl + i + 1)
        .ok_or_else(|| bad("unterminated declaration in the template"))?;
    let mut out = String::with_capacity(template_ptx.len() + func.len());
    out.push_str(&template_ptx[..decl]);
    out.push_str(&func);
    out.push_str(&template_ptx[decl_end..]);
    let (theirs, ours) = (target_of(triton_ptx), target_of(template_ptx));
    if theirs != ours {
        out = out.replacen(&format!(".target {ours}"), &format!(".target {theirs}"), 1);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of Triton 3.9's PTX for a kernel of the decoder's signature.
    const TRITON: &str = "//\n.version 8.7\n.target sm_80\n.address_size 64\n\n\
        .visible .entry steane(\n\
        \t.param .u64 .ptr .global .align 1 steane_param_0,\n\
        \t.param .u32 steane_param_1,\n\
        \t.param .u64 .ptr .global .align 1 steane_param_2,\n\
        \t.param .u32 steane_param_3,\n\
        \t.param .u32 steane_param_4,\n\
        \t.param .u64 .ptr .global .align 1 steane_param_5,\n\
        \t.param .u64 .ptr .global .align 1 steane_param_6,\n\
        \t.param .u64 .ptr .global .align 1 steane_param_7\n)\n.reqntid 32\n{\n\
        \t.reg .b64 %rd<4>;\n\t.loc 1 6 0\n\tld.param.b64 %rd1, [steane_param_0];\n\
        \t{ // an inline-asm block\n\t}\n\tret;\n}\n\t.file 1 \"k.py\"\n";

    #[test]
    fn the_entry_becomes_a_device_function() {
        let f = function_of(TRITON, "steane").unwrap();
        assert!(f.starts_with(".visible .func bl_triton_decode(\n\t.param .b64 steane_param_0,\n"));
        assert!(f.contains("\t.param .b32 steane_param_1,\n"));
        assert!(f.contains("\t.param .b64 steane_param_7\n)\n"));
        assert!(!f.contains(".reqntid") && !f.contains(".loc") && !f.contains(".ptr"));
        assert!(f.contains("ld.param.b64 %rd1, [steane_param_0];"));
        assert!(f.trim_end().ends_with('}'));
        assert!(!f.contains(".file"));
    }

    #[test]
    fn what_cannot_be_linked_is_refused() {
        assert!(
            function_of(TRITON, "other")
                .unwrap_err()
                .to_string()
                .contains("no kernel")
        );
        let shared = TRITON.replace(
            ".address_size 64",
            ".address_size 64\n.extern .shared .align 16 .b8 global_smem[];",
        );
        assert!(
            function_of(&shared, "steane")
                .unwrap_err()
                .to_string()
                .contains("shared memory")
        );
        let sm90 = TRITON.replace(".target sm_80", ".target sm_90a");
        assert!(
            function_of(&sm90, "steane")
                .unwrap_err()
                .to_string()
                .contains("sm_80")
        );
        let fewer = TRITON.replace("\t.param .u64 .ptr .global .align 1 steane_param_7\n", "");
        assert!(
            function_of(&fewer, "steane")
                .unwrap_err()
                .to_string()
                .contains("parameters")
        );
    }

    #[test]
    fn linking_replaces_the_templates_declaration() {
        let template = ".version 8.8\n.target sm_80\n.address_size 64\n\n\
            .extern .func bl_triton_decode\n(\n\t.param .b64 a\n)\n;\n.visible .entry bl_persistent() { call bl_triton_decode; }\n";
        let linked = link(template, TRITON, "steane").unwrap();
        assert!(!linked.contains(".extern .func"));
        let def = linked.find(".visible .func bl_triton_decode(").unwrap();
        let user = linked.find(".visible .entry bl_persistent").unwrap();
        assert!(def < user, "defined before its use");
    }

    #[test]
    fn an_sm_90_decoder_raises_the_linked_module_to_sm_90_and_others_are_refused() {
        let template = ".version 8.7\n.target sm_80\n.address_size 64\n\
            .extern .func bl_triton_decode(.param .b64 a);\n";
        let sm90 = TRITON.replace(".target sm_80", ".target sm_90");
        let linked = link(template, &sm90, "steane").unwrap();
        assert!(
            linked.contains(".target sm_90") && !linked.contains(".target sm_80"),
            "{linked}"
        );
        let linked = link(template, TRITON, "steane").unwrap();
        assert!(linked.contains(".target sm_80"), "{linked}");
        let e =
            function_of(&TRITON.replace(".target sm_80", ".target sm_75"), "steane").unwrap_err();
        assert!(e.to_string().contains("compiled for sm_75"), "{e}");
    }

    #[test]
    fn a_decoder_runs_only_on_its_platform_family() {
        let d = |platform: &str| TritonDecoder {
            kernel: "k".into(),
            num_warps: 1,
            ptx: String::new(),
            platform: platform.into(),
        };
        assert!(d("cuda:sm_90").check_platform(crate::Backend::Cuda).is_ok());
        assert!(
            d("hip:gfx90a:64")
                .check_platform(crate::Backend::Hip)
                .is_ok()
        );
        let e = d("hip:gfx90a:64")
            .check_platform(crate::Backend::Cuda)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("compiled for hip:gfx90a:64; the cuda backend"),
            "{e}"
        );
        let e = d("cuda:sm_80")
            .check_platform(crate::Backend::Emu)
            .unwrap_err();
        assert!(
            e.to_string().contains("the emu backend cannot run it"),
            "{e}"
        );
    }
}
