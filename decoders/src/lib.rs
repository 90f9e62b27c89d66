//! QEC decoders for the coprocessor's hot path, and the CSS codes they decode.
//!
//! - [`steane`]: the Steane [[7,1,3]] lookup (syndrome → qubit), a `const` table.
//! - [`LookupDecoder`]: a minimum-weight lookup table for any small code.
//! - [`BpDecoder`]: belief propagation (product-sum, scaled min-sum; parallel or serial).
//! - [`BpOsdDecoder`]: BP followed by ordered-statistics decoding (OSD-0, OSD-CS of order w)
//!   with real GF(2) elimination on bit-packed rows. Parameters carry the names of the `ldpc`
//!   package's `BpOsdDecoder` (`error_rate`, `bp_method`, `max_iter`, `ms_scaling_factor`,
//!   `schedule`, `osd_method`, `osd_order`) and its update rules are reproduced exactly, so
//!   the same settings give the same corrections.
//! - [`CssDecoder`]: BP+OSD for both check types of a CSS code behind one coprocessor
//!   function, [`CssDecoder::respond`], selected by `decoder_id` (0 = X checks, 1 = Z checks)
//!   with bit-packed payloads.
//! - [`codes`]: Steane, hypergraph products, rotated surface codes, bivariate-bicycle codes,
//!   with logical operators from [`gf2`] linear algebra; [`io`]: alist and dense 0/1 files;
//!   [`noise`]: seeded code-capacity shots.
//! - Circuit level: [`dem`] reads stim's detector error models (checks, observables, priors,
//!   coordinates, windows), [`shots`] stim's `01`/`b8` shot files, [`relay`] is Relay-BP
//!   (arXiv 2506.01779) with `relay-bp`'s parameter names, and [`dem_decoder`] runs BP+OSD or
//!   Relay-BP on a model, detection events in, observable flips out, batches on threads
//!   (and code-capacity batches of syndromes, [`dem_decoder::decode_syndromes`]);
//!   [`sparse`] holds the compressed-column matrices they share; [`stream`] decodes a
//!   model's rounds as they arrive, in sliding windows; [`noise`] also samples a model's shots.
//!
//! - [`decoder`]: the trait pair every decoder implements — a decoder of error mechanisms
//!   (BP+OSD, Relay-BP) and a decoder of observables (matching, and any mechanism decoder
//!   through one adaptor) — and [`registry`], the one table of decoders: names, settings
//!   with their offline and real-time defaults, constructors. Every front end reads it.
//!
//! Every decoder is built once and then decodes without allocating: all scratch is owned by
//! the decoder and the correction is written into the caller's buffer.
//!
//! ```
//! use backline_decoders::{BpOsdConfig, BpOsdDecoder, OsdMethod, codes::CssCode};
//! let code = CssCode::rotated_surface(5).unwrap();
//! let config = BpOsdConfig {
//!     error_rate: 0.05,
//!     max_iter: 25,
//!     ms_scaling_factor: 0.625,
//!     osd_method: OsdMethod::OsdCs,
//!     osd_order: 7,
//!     ..BpOsdConfig::default()
//! };
//! let mut decoder = BpOsdDecoder::new(&code.hz, &config).unwrap();
//! // An X error on qubit 12 (the centre): its Z-check syndrome, then the correction.
//! let mut error = vec![0u8; 25];
//! error[12] = 1;
//! let mut syndrome = vec![0u8; code.hz.rows()];
//! code.hz.mul_bytes(&error, &mut syndrome);
//! let mut correction = vec![0u8; 25];
//! decoder.decode(&syndrome, &mut correction).unwrap();
//! assert_eq!(correction, error);
//! ```
// `unsafe` lives in one module, `simd` (run-time dispatch of the SIMD kernels), which allows
// it; everywhere else it is an error.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod bitmat;
pub mod bp;
pub mod bp32;
pub mod bp32_lanes;
pub mod bposd;
pub mod codes;
pub mod coprocessor;
pub mod decoder;
pub mod dem;
pub mod dem_decoder;
mod error;
pub mod gf2;
pub mod io;
pub mod lookup;
pub mod matching;
pub mod mobius;
pub mod noise;
pub mod osd;
pub mod registry;
pub mod relay;
pub mod sandwich;
pub mod shots;
pub mod simd;
pub mod sparse;
pub mod steane;
pub mod stream;

pub use bitmat::BitMatrix;
pub use bp::{BpDecoder, BpMethod, BpSettings, Precision, Schedule};
pub use bposd::{BpOsdConfig, BpOsdDecoder, DecodeInfo};
pub use coprocessor::{CssDecoder, CssDecoderError, RespondError};
pub use error::{DecoderError, SettingError};
pub use lookup::LookupDecoder;
pub use osd::{Osd, OsdInit, OsdMethod};
