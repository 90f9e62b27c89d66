//! Coprocessor functions and their dispatch: what a coprocessor runs for each message.
//!
//! A [`Responder`] turns a request payload into a reply payload; the trait, its errors and
//! the [`ResponderTable`] that dispatches by `decoder_id` behind a panic boundary are
//! `backline-responder-api`'s, re-exported here. This crate holds the functions: [`Echo`],
//! [`Steane`] (the Hamming lookup of SPEC §5), [`CSymbol`] (any C function in a shared
//! library loaded at run time), BP+OSD and matching from a CSS code ([`bposd_functions`],
//! [`matching_functions`]), streaming
//! decoders of a detector error model ([`stream`]: `stream:FILE.dem…`, one stream per decoder
//! id) and, with the feature `gpu`, the GPU functions of `backline-gpu` (`gpu:echo`,
//! `gpu:steane`, `gpu:bposd:…`, `gpu:FILE:FUNCTION`). [`functions_of`] turns a spec into
//! functions. [`cuqr`] serves the streams to clients of NVIDIA's realtime RPC frames over UDP.
#![deny(missing_docs)]

mod bposd;
mod csym;
pub mod cuqr;
#[cfg(feature = "gpu")]
mod gpu;
mod matching;
mod spec;
pub mod stream;

pub use backline_responder_api::{
    Builtin, Echo, Functions, Responder, ResponderError, ResponderTable,
};
pub use bposd::{BpOsdSpecError, CssHalf, bposd_code, bposd_functions};
pub use csym::{CSymbol, CoprocessorFn};
#[cfg(feature = "gpu")]
pub use gpu::{GpuResponder, GpuSpecError, gpu_functions};
pub use matching::{MatchingHalf, MatchingSpecError, matching_code, matching_functions};
pub use spec::{SpecContext, SpecError, functions_of, functions_of_with, parse_spec, spec_width};
pub use stream::{StreamFunction, StreamSpecError, as_stream, stream_functions};

/// True when this build has the GPU functions (`gpu:` specs; feature `gpu`).
pub const GPU: bool = cfg!(feature = "gpu");

/// The Steane [[7,1,3]] lookup: byte 0 of the request is a 3-bit syndrome (bit i = Hamming
/// check row i, higher bits ignored); the reply is one byte, the qubit to flip (0–6) or
/// `0x0F` for none. Further request bytes are ignored, so an 8-byte little-endian `u64`
/// request (the reference system's format) works unchanged.
#[derive(Debug, Default, Clone, Copy)]
pub struct Steane;

/// [`Steane`]'s answer to every first byte of a request, for the table's inline dispatch.
static STEANE_MAP: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut s = 0;
    while s < 256 {
        t[s] = backline_decoders::steane::decode(s as u8);
        s += 1;
    }
    t
};

impl Responder for Steane {
    fn name(&self) -> &str {
        "steane"
    }
    fn builtin(&self) -> Option<Builtin> {
        Some(Builtin::ByteMap(&STEANE_MAP))
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
        *o = backline_decoders::steane::decode(s);
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
        "steane" => out.push(backline_decoders::steane::decode(*request.first()?)),
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use backline_wire::Status;

    #[test]
    fn steane_answers_the_lookup() {
        let mut out = [0u8; 8];
        for s in 0u8..8 {
            assert_eq!(Steane.respond(&[s, 0xAA, 0, 0], &mut out), Ok(1));
            assert_eq!(out[0], backline_decoders::steane::decode(s));
        }
        assert_eq!(out[0], 6, "syndrome 7 flips qubit 6");
        // The table's inline path answers as the function does, for every first byte.
        let table = ResponderTable::single(std::sync::Arc::new(Steane));
        for s in 0..=255u8 {
            let mut inline = [0u8; 1];
            assert_eq!(table.dispatch(0, &[s], &mut inline), (Status::Ok, 1));
            Steane.respond(&[s], &mut out).unwrap();
            assert_eq!(inline[0], out[0], "syndrome byte {s}");
        }
        assert_eq!(
            Steane.respond(&[], &mut out).unwrap_err().status(),
            Status::BadLength
        );
    }
}
