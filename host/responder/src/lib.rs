//! Coprocessor functions and their dispatch: what a coprocessor runs for each message.
//!
//! A [`Responder`] turns a request payload into a reply payload. Built in: [`Echo`],
//! [`Steane`] (the Hamming lookup of SPEC §5), [`CSymbol`] (any C function in a shared
//! library loaded at run time), BP+OSD from a CSS code ([`bposd_functions`]) and the GPU
//! functions of `backline-gpu` ([`gpu_functions`]: `gpu:echo`, `gpu:steane`, `gpu:bposd:…`,
//! `gpu:FILE:FUNCTION`) and streaming decoders of a detector error model ([`stream`]:
//! `stream:FILE.dem…`, one stream per decoder id). A [`ResponderTable`] maps each `decoder_id`
//! to one responder; [`ResponderTable::dispatch`] runs it behind a panic boundary and turns
//! every failure into a reply status, so a failing function never takes the server down.
//! [`cuqr`] serves the streams to clients of NVIDIA's realtime RPC frames over UDP.
#![deny(missing_docs)]

mod bposd;
mod csym;
pub mod cuqr;
mod gpu;
pub mod stream;
mod table;

use backline_wire::{DecoderId, Status};

/// Coprocessor functions with the decoder ids they serve.
pub type Functions = Vec<(DecoderId, std::sync::Arc<dyn Responder>)>;

pub use bposd::{BpOsdSpecError, CssHalf, bposd_code, bposd_functions};
pub use csym::{CSymbol, CoprocessorFn};
pub use gpu::{GpuResponder, GpuSpecError, gpu_functions};
pub use stream::{StreamFunction, StreamSpecError, stream_functions};
pub use table::{
    ResponderTable, SpecContext, SpecError, functions_of, functions_of_with, parse_spec, spec_width,
};

/// Why a responder produced no reply payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponderError {
    /// The request payload has a length the function does not accept.
    #[error("request of {got} bytes rejected: {expected}")]
    BadLength {
        /// Received length.
        got: usize,
        /// What the function expects.
        expected: &'static str,
    },
    /// The function ran and failed.
    #[error("coprocessor function failed: {0}")]
    Failed(&'static str),
}

impl ResponderError {
    /// The reply status this error is reported as.
    pub fn status(&self) -> Status {
        match self {
            ResponderError::BadLength { .. } => Status::BadLength,
            ResponderError::Failed(_) => Status::DecoderFailed,
        }
    }
}

/// A coprocessor function: reads the request payload, writes the reply payload into `out`
/// (whose length is the slot's payload capacity) and returns the bytes written.
///
/// Called on the transport's own thread, once per message, with no allocation expected on
/// the way. A function registered on several sessions must tolerate concurrent calls.
pub trait Responder: Send + Sync {
    /// A short name for tables and errors.
    fn name(&self) -> &str;
    /// Serves one message.
    fn respond(&self, input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError>;
    /// For the built-in functions: which one, so a table can run it without a virtual call.
    fn builtin(&self) -> Option<Builtin> {
        None
    }
    /// A coprocessor that serves its own rings (a GPU kernel): a controller in this process
    /// may attach to it directly instead of going through a serving thread.
    fn ring_server(&self) -> Option<std::sync::Arc<dyn backline_ring::RingServer>> {
        None
    }
    /// A line for the shutdown report of a server (counters, hop times), if it keeps any.
    fn report(&self) -> Option<String> {
        None
    }
    /// A streaming decoder ([`stream`]), for servers that call its operations directly (the
    /// CUQR server).
    fn as_stream(&self) -> Option<&StreamFunction> {
        None
    }
}

/// The built-in functions a [`ResponderTable`] dispatches inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// [`Echo`].
    Echo,
    /// [`Steane`].
    Steane,
}

/// Replies with the request's bytes.
#[derive(Debug, Default, Clone, Copy)]
pub struct Echo;

impl Responder for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn builtin(&self) -> Option<Builtin> {
        Some(Builtin::Echo)
    }
    fn respond(&self, input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
        let out = out
            .get_mut(..input.len())
            .ok_or(ResponderError::BadLength {
                got: input.len(),
                expected: "at most the reply slot's capacity",
            })?;
        out.copy_from_slice(input);
        Ok(input.len())
    }
}

/// The Steane [[7,1,3]] lookup: byte 0 of the request is a 3-bit syndrome (bit i = Hamming
/// check row i, higher bits ignored); the reply is one byte, the qubit to flip (0–6) or
/// `0x0F` for none. Further request bytes are ignored, so an 8-byte little-endian `u64`
/// request (the reference system's format) works unchanged.
#[derive(Debug, Default, Clone, Copy)]
pub struct Steane;

impl Responder for Steane {
    fn name(&self) -> &str {
        "steane"
    }
    fn builtin(&self) -> Option<Builtin> {
        Some(Builtin::Steane)
    }
    #[inline]
    fn respond(&self, input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
        let (&s, _) = input.split_first().ok_or(ResponderError::BadLength {
            got: 0,
            expected: "at least 1 byte (the syndrome)",
        })?;
        let o = out
            .first_mut()
            .ok_or(ResponderError::Failed("no room for the reply"))?;
        *o = backline_decode::steane::decode(s);
        Ok(1)
    }
}

/// The reply a correct coprocessor gives to `request` under the named built-in responder, for
/// end-to-end checks: `None` for responders this crate cannot predict (C symbols). The GPU
/// versions of the built-ins (`gpu:echo`, `gpu:steane`) answer as they do.
pub fn expected_reply(responder: &str, request: &[u8], out: &mut Vec<u8>) -> Option<()> {
    out.clear();
    match responder.strip_prefix("gpu:").unwrap_or(responder) {
        "echo" => out.extend_from_slice(request),
        "steane" => out.push(backline_decode::steane::decode(*request.first()?)),
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_copies_and_refuses_overflow() {
        let mut out = [0u8; 4];
        assert_eq!(Echo.respond(b"abc", &mut out), Ok(3));
        assert_eq!(&out[..3], b"abc");
        assert!(matches!(
            Echo.respond(b"abcde", &mut out),
            Err(ResponderError::BadLength { got: 5, .. })
        ));
    }

    #[test]
    fn steane_answers_the_lookup() {
        let mut out = [0u8; 8];
        for s in 0u8..8 {
            assert_eq!(Steane.respond(&[s, 0xAA, 0, 0], &mut out), Ok(1));
            assert_eq!(out[0], backline_decode::steane::decode(s));
        }
        assert_eq!(out[0], 6, "syndrome 7 flips qubit 6");
        assert_eq!(
            Steane.respond(&[], &mut out).unwrap_err().status(),
            Status::BadLength
        );
    }
}
