//! Responder specs: the text that names a coprocessor function on a command line, in a
//! configuration or through the C ABI (`echo`, `steane`, `bposd:CODE[:SETTINGS]`, `matching:CODE`,
//! `stream:FILE.dem[:DECODER[:SETTINGS]]`, `LIB:SYMBOL`, `gpu:…`), turned into functions.

use std::path::Path;
use std::sync::Arc;

use backline_wire::DecoderId;

use crate::{CSymbol, Echo, Responder, Steane, csym::LoadError};

/// Why a responder spec could not be turned into a responder.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// Not one of the known forms.
    #[error(
        "unknown responder `{0}` (expected echo, steane, bposd:CODE[:SETTINGS], matching:CODE, \
         stream:FILE.dem[:DECODER[:SETTINGS]], LIB:SYMBOL, or a GPU function: gpu:echo, \
         gpu:steane, gpu:bposd:CODE[:SETTINGS], gpu:FILE:FUNCTION)"
    )]
    Unknown(String),
    /// A `gpu:` spec was refused.
    #[cfg(feature = "gpu")]
    #[error(transparent)]
    Gpu(#[from] crate::GpuSpecError),
    /// A `BACKLINE_GPU_*` variable is malformed.
    #[cfg(feature = "gpu")]
    #[error(transparent)]
    GpuOptions(#[from] backline_gpu::Error),
    /// A `gpu:` spec, in a build without GPU functions.
    #[cfg(not(feature = "gpu"))]
    #[error(
        "`{0}` is a GPU function, and this build has none (backline-responder's feature `gpu`)"
    )]
    NoGpu(String),
    /// The C library or symbol could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A BP+OSD spec was refused.
    #[error(transparent)]
    BpOsd(#[from] crate::BpOsdSpecError),
    /// A streaming decoder spec was refused.
    #[error(transparent)]
    Stream(#[from] crate::StreamSpecError),
    /// A matching spec was refused.
    #[error(transparent)]
    Matching(#[from] crate::MatchingSpecError),
}

/// What specs need from their surroundings: where GPU kernels run.
#[derive(Debug, Clone, Default)]
pub struct SpecContext {
    /// Backend, device and kernel settings of `gpu:` specs.
    #[cfg(feature = "gpu")]
    pub gpu: backline_gpu::GpuOptions,
}

impl SpecContext {
    /// The defaults with the `BACKLINE_GPU_*` variables applied.
    pub fn from_env() -> Result<SpecContext, SpecError> {
        Ok(SpecContext {
            #[cfg(feature = "gpu")]
            gpu: backline_gpu::GpuOptions::from_env()?,
        })
    }
}

/// How many decoder ids a spec takes: two for BP+OSD and matching (`bposd:`, `gpu:bposd:`,
/// `matching:`), `streams` for a `stream:` spec, one otherwise.
pub fn spec_width(spec: &str) -> u32 {
    let s = spec.strip_prefix("gpu:").unwrap_or(spec);
    if s.starts_with("bposd:") || spec.starts_with("matching:") {
        2
    } else if spec.starts_with("stream:") {
        crate::stream::stream_width(spec)
    } else {
        1
    }
}

/// The functions a spec registers, starting at decoder id `base`: one for `echo`, `steane`,
/// C symbols and GPU functions; two for `bposd:` and `gpu:bposd:` (X checks at `base`, Z
/// checks at `base + 1`); `streams` for `stream:` (default 1). GPU settings come from the
/// `BACKLINE_GPU_*` variables.
pub fn functions_of(spec: &str, base: DecoderId) -> Result<crate::Functions, SpecError> {
    if spec.starts_with("gpu:") {
        return functions_of_with(spec, base, &SpecContext::from_env()?);
    }
    functions_of_with(spec, base, &SpecContext::default())
}

/// [`functions_of`] with explicit GPU settings.
pub fn functions_of_with(
    spec: &str,
    base: DecoderId,
    ctx: &SpecContext,
) -> Result<crate::Functions, SpecError> {
    if spec.starts_with("gpu:") {
        #[cfg(feature = "gpu")]
        return Ok(crate::gpu_functions(spec, base, &ctx.gpu)?);
        #[cfg(not(feature = "gpu"))]
        {
            let _ = ctx;
            return Err(SpecError::NoGpu(backline_decoders::io::excerpt(spec)));
        }
    }
    if spec.starts_with("bposd:") {
        return Ok(crate::bposd_functions(spec, base)?);
    }
    if spec.starts_with("stream:") {
        return Ok(crate::stream_functions(spec, base)?);
    }
    if spec.starts_with("matching:") {
        return Ok(crate::matching_functions(spec, base)?);
    }
    Ok(vec![(base, parse_spec(spec)?)])
}

/// Parses a responder spec: `echo`, `steane`, `bposd:CODE[:SETTINGS]` or `matching:CODE` (its
/// X-check half; use [`functions_of`] for both), `stream:FILE.dem[:DECODER[:SETTINGS]]` (its first stream),
/// or `LIB:SYMBOL` (a C function in a shared library; the last `:` separates the symbol).
pub fn parse_spec(spec: &str) -> Result<Arc<dyn Responder>, SpecError> {
    match spec {
        "echo" => Ok(Arc::new(Echo)),
        "steane" => Ok(Arc::new(Steane)),
        s if s.starts_with("bposd:") => Ok(crate::bposd_functions(s, 0)?.remove(0).1),
        s if s.starts_with("stream:") => Ok(crate::stream_functions(s, 0)?.remove(0).1),
        s if s.starts_with("matching:") => Ok(crate::matching_functions(s, 0)?.remove(0).1),
        s if s.starts_with("gpu:") => Ok(functions_of(s, 0)?.remove(0).1),
        _ => match spec.rsplit_once(':') {
            Some((lib, sym)) if !lib.is_empty() && !sym.is_empty() => {
                Ok(Arc::new(CSymbol::load(Path::new(lib), sym)?))
            }
            _ => Err(SpecError::Unknown(backline_decoders::io::excerpt(spec))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(parse_spec("echo").unwrap().name(), "echo");
        assert_eq!(parse_spec("steane").unwrap().name(), "steane");
        let e = parse_spec("bogus").err().unwrap().to_string();
        assert!(e.contains("unknown responder `bogus`"), "{e}");
        let e = parse_spec("/nonexistent/libx.so:fn")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("cannot load library /nonexistent/libx.so"),
            "{e}"
        );
    }

    #[cfg(not(feature = "gpu"))]
    #[test]
    fn no_gpu_functions_without_the_feature() {
        let e = functions_of("gpu:steane", 0).err().unwrap();
        assert!(matches!(e, SpecError::NoGpu(_)), "{e}");
        assert!(e.to_string().contains("this build has none"), "{e}");
    }
}
