//! C functions as coprocessor functions: the pre-compiled route of SPEC §3.
//!
//! The C signature (also in `include/backline.h` and README):
//!
//! ```c
//! size_t fn(const void *in, size_t in_len, void *out, size_t out_cap, void *ctx);
//! ```
//!
//! It reads `in_len` bytes at `in`, writes at most `out_cap` bytes at `out`, and returns the
//! number of bytes written. Returning `SIZE_MAX` (`(size_t)-1`) reports a failure; so does any
//! value above `out_cap`. Either yields a `decoder_failed` reply and the server carries on.
//! `ctx` is the pointer given when the function was registered (NULL when loaded by name).

use backline_decoders::io::{PATH_EXCERPT_CHARS, excerpt, excerpt_path, excerpt_to};
use std::ffi::c_void;
use std::path::Path;
use std::sync::Arc;

use crate::{Responder, ResponderError};

/// The C signature of a coprocessor function.
pub type CoprocessorFn = unsafe extern "C" fn(
    input: *const c_void,
    in_len: usize,
    out: *mut c_void,
    out_cap: usize,
    ctx: *mut c_void,
) -> usize;

/// Why a C function could not be loaded. Paths, symbols and the loader's message (which
/// repeats the path) are quoted as excerpts ([`backline_decoders::io::excerpt`]).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// `dlopen` failed.
    #[error("cannot load library {path}: {why}")]
    Library {
        /// The library path.
        path: String,
        /// The loader's message.
        why: String,
    },
    /// The library has no such symbol.
    #[error("symbol `{symbol}` not found in {path}")]
    Symbol {
        /// The symbol.
        symbol: String,
        /// The library path.
        path: String,
    },
}

/// A C function, with the library that holds it kept loaded.
pub struct CSymbol {
    name: String,
    func: CoprocessorFn,
    ctx: *mut c_void,
    _lib: Option<Arc<libloading::Library>>,
}

impl std::fmt::Debug for CSymbol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CSymbol").field("name", &self.name).finish()
    }
}

// SAFETY: the function pointer and the library handle may be used from any thread; `ctx` is
// only passed back to the function, whose author promises (documented contract) that it is
// safe to call from the transport's thread.
unsafe impl Send for CSymbol {}
// SAFETY: as above; calls through `&CSymbol` only pass `ctx` to the C function.
unsafe impl Sync for CSymbol {}

impl CSymbol {
    /// Loads `symbol` from the shared library at `path`.
    pub fn load(path: &Path, symbol: &str) -> Result<CSymbol, LoadError> {
        // SAFETY: loading a library runs its initialisers; the user asked for this library by
        // name, which is the documented contract of the pre-compiled route.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| LoadError::Library {
            path: excerpt_path(path),
            why: excerpt_to(&e.to_string(), PATH_EXCERPT_CHARS + 160),
        })?;
        // SAFETY: the symbol is declared with the documented C signature; a library that
        // exports something else under this name breaks that contract.
        let func: CoprocessorFn = unsafe { lib.get::<CoprocessorFn>(symbol.as_bytes()) }
            .map(|s| *s)
            .map_err(|_| LoadError::Symbol {
                symbol: excerpt(symbol),
                path: excerpt_path(path),
            })?;
        Ok(CSymbol {
            name: format!("{}:{symbol}", path.display()),
            func,
            ctx: std::ptr::null_mut(),
            _lib: Some(Arc::new(lib)),
        })
    }

    /// Wraps a function pointer given through the C ABI.
    ///
    /// # Safety
    /// `func` must follow the documented contract and, with `ctx`, stay valid and callable
    /// from the transport's thread for as long as the `CSymbol` is registered.
    pub unsafe fn from_raw(name: &str, func: CoprocessorFn, ctx: *mut c_void) -> CSymbol {
        CSymbol {
            name: name.to_string(),
            func,
            ctx,
            _lib: None,
        }
    }
}

impl Responder for CSymbol {
    fn name(&self) -> &str {
        &self.name
    }

    fn respond(&self, input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
        // SAFETY: the pointers and lengths describe live slices for the duration of the call;
        // the function's contract bounds its writes by `out_cap`.
        let n = unsafe {
            (self.func)(
                input.as_ptr().cast(),
                input.len(),
                out.as_mut_ptr().cast(),
                out.len(),
                self.ctx,
            )
        };
        if n == usize::MAX {
            Err(ResponderError::Failed("the C function returned SIZE_MAX"))
        } else if n > out.len() {
            Err(ResponderError::Failed(
                "the C function claimed more bytes than out_cap",
            ))
        } else {
            Ok(n)
        }
    }
}
