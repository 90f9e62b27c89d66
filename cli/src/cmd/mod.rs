//! One module per subcommand.

pub mod bench;
mod bench_stream;
mod common;
pub mod decode;
pub mod hops;
pub mod origin;
pub mod plot;
pub mod serve;
pub mod sim;
