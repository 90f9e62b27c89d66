//! One module per subcommand.

pub mod bench;
pub mod decode;
pub mod plot;
pub mod serve;
pub mod sim;
