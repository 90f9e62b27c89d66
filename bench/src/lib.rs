//! What a benchmark run produces, defined once for every source of round-trip times: the host
//! sw-loop (`backline bench`), the cycle-accurate FPGA simulation (`backline sim`) and the
//! board's trace RAM read-out (`backline-apu trace`). Statistics with the cold first round kept
//! apart, the self-describing CSV trace, the printed table, the JSON object and the SVG/PNG plots, progress and exit statuses;
//! what the two binaries do alike at their edges ([`cli`]: the flag-error line, a closed
//! stdout, the JSON summary of an engine's trace); and the drivers of the host runs: the
//! sw-loop (`swloop`) and the streaming-decoder run (`stream`: rounds of sampled shots to a
//! `stream:` function or a CUQR server).
#![deny(missing_docs)]

pub mod cli;
pub mod exit;
pub mod memory;
pub mod outputs;
#[cfg(feature = "plots")]
pub mod plot;
pub mod progress;
pub mod report;
pub mod sampler;
pub mod stats;
#[cfg(feature = "swloop")]
pub mod stream;
#[cfg(feature = "swloop")]
pub mod swloop;
pub mod trace;

pub use outputs::{OutputError, Outputs, RunName};
pub use report::{JsonReport, Table};
pub use stats::Summary;
pub use trace::{Clock, CycleSplit, SplitMedians, Trace, TraceError, TraceRow};
