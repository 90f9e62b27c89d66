//! QEC decoders for the coprocessor's hot path: the Steane lookup, and (growing) belief
//! propagation, ordered-statistics decoding and a CSS code library. No allocation on the
//! decode path after construction.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod steane;
