//! The interface between a transport and the coprocessor functions it serves.
//!
//! A [`Responder`] turns a request payload into a reply payload. A [`ResponderTable`] maps
//! each `decoder_id` to one responder; [`ResponderTable::dispatch`] runs it behind a panic
//! boundary and turns every failure into a reply status, so a failing function never takes
//! the server down. Transports (`backline-transport`) depend on this crate only: which
//! functions exist — echo, Steane, C symbols, BP+OSD, streaming decoders, GPU kernels — is
//! the business of `backline-responder` and `backline-gpu`, above it.
//!
//! ```
//! use std::sync::Arc;
//! use backline_responder_api::{Echo, ResponderTable};
//! use backline_wire::Status;
//!
//! let table = ResponderTable::single(Arc::new(Echo));
//! let mut out = [0u8; 8];
//! assert_eq!(table.dispatch(0, b"hi", &mut out), (Status::Ok, 2));
//! assert_eq!(table.dispatch(1, b"hi", &mut out), (Status::UnknownDecoder, 0));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod table;

use std::any::Any;
use std::sync::Arc;

use backline_wire::{DecoderId, Status};

pub use table::ResponderTable;

/// Coprocessor functions with the decoder ids they serve.
pub type Functions = Vec<(DecoderId, Arc<dyn Responder>)>;

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
    fn ring_server(&self) -> Option<Arc<dyn backline_ring::RingServer>> {
        None
    }
    /// A line for the shutdown report of a server (counters, hop times), if it keeps any.
    fn report(&self) -> Option<String> {
        None
    }
    /// The function as its concrete type, for servers that call more of it than
    /// [`Responder::respond`] (the CUQR server calls a streaming decoder's operations).
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
}

/// The functions a [`ResponderTable`] runs inline, without a virtual call or a panic boundary
/// (they cannot panic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// The reply is the request ([`Echo`]).
    Echo,
    /// The reply is one byte, the table's entry for the request's first byte (a lookup
    /// decoder such as the Steane code's, whose 3-bit syndrome indexes it).
    ByteMap(&'static [u8; 256]),
}

impl Builtin {
    /// Serves one message: the status and the reply's length.
    #[inline(always)]
    pub fn respond(self, input: &[u8], out: &mut [u8]) -> (Status, usize) {
        match self {
            Builtin::Echo => match out.get_mut(..input.len()) {
                Some(o) => {
                    o.copy_from_slice(input);
                    (Status::Ok, input.len())
                }
                None => (Status::BadLength, 0),
            },
            Builtin::ByteMap(table) => match (input.first(), out.first_mut()) {
                (Some(&s), Some(o)) => {
                    *o = table[usize::from(s)];
                    (Status::Ok, 1)
                }
                (None, _) => (Status::BadLength, 0),
                (_, None) => (Status::DecoderFailed, 0),
            },
        }
    }
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
        assert_eq!(
            Builtin::Echo.respond(b"abcde", &mut out),
            (Status::BadLength, 0)
        );
        assert_eq!(Builtin::Echo.respond(b"ab", &mut out), (Status::Ok, 2));
    }

    #[test]
    fn a_byte_map_answers_its_entry_and_refuses_empty_requests() {
        static SQUARES: [u8; 256] = {
            let mut t = [0u8; 256];
            let mut i = 0;
            while i < 256 {
                t[i] = (i * i) as u8;
                i += 1;
            }
            t
        };
        let b = Builtin::ByteMap(&SQUARES);
        let mut out = [0u8; 2];
        assert_eq!(b.respond(&[7, 99], &mut out), (Status::Ok, 1));
        assert_eq!(out[0], 49);
        assert_eq!(b.respond(&[], &mut out), (Status::BadLength, 0));
        assert_eq!(b.respond(&[1], &mut []), (Status::DecoderFailed, 0));
    }
}
