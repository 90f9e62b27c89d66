//! `backline-apu`: the board's Arm control plane. It brings up the ERNIC RDMA engine
//! (global configuration, a memory region, a data queue pair) and configures and drives the
//! HWHS engine over AXI4-Lite MMIO, hand-shakes with the host peer over TCP, and reads the
//! trace RAM out into `backline bench`'s CSV format.
//!
//! The same code runs on three backends of one [`Mmio`] trait: the real board (UIO or
//! `/dev/mem` through memmap2 and safe-mmio), the simulated board (`sim:SOCKET`, a client of
//! the socket protocol of `backline_sim::board`, which `backline-apu sim-board` serves;
//! feature `sim`, host-only), and an in-memory fake for unit tests.
//!
//! Main types: [`Board`] (info, setup, run, trace, single rounds, reset, recovery),
//! [`Config`] (the TOML board configuration), [`RunSpec`], [`BackendSpec`].
//!
//! ```no_run
//! # #[cfg(feature = "sim")] {
//! use backline_apu::{Board, Config, Mode, RunSpec};
//! use backline_sim::board::{SimBoard, SimBoardOptions};
//!
//! // A simulated board in this process, with its modelled peer on an ephemeral port.
//! let sim = SimBoard::spawn(SimBoardOptions::new("/tmp/board.sock"))?;
//! let mut cfg = Config::sim_example(); // firmware/examples/sim-board.toml
//! cfg.peer.address = sim.peer_address().unwrap().to_string();
//! let mut board = Board::connect("sim:/tmp/board.sock")?;
//! board.setup(&cfg)?;
//! board.run(&RunSpec::b2b(Mode::SwLoop, 10_000), &mut |_, _| {})?;
//! board.read_trace()?.save("trace.csv".as_ref())?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Register offsets: the HWHS's come from `backline-regmap` (the one register map of the
//! RTL); the ERNIC's from `backline_board::ernic` (checked against AMD's PG332; re-exported
//! as [`ernic`]). `unsafe` code lives only in [`mmio::board`].
//!
//! Module layers, each using only those below it (a test reads the sources and checks):
//! [`config`] → [`mmio`] (the backends) → [`peer`] (the handshake) → [`error`] → [`regs`]
//! (register reads, writes and polls that name the register in errors) → [`bringup`] and
//! [`hwhs`] → [`board`].
#![deny(missing_docs)]

pub mod board;
pub mod bringup;
pub mod config;
pub mod error;
pub mod hwhs;
pub mod mmio;
pub mod peer;
pub mod regs;

pub use backline_board::{Access, Block, Op, PeerInfo, ernic};
pub use board::{Board, Info, SetupReport};
pub use config::Config;
pub use error::Error;
pub use hwhs::{Expect, Mode, RoundOutcome, RunReport, RunSpec};
pub use mmio::{BackendSpec, Mmio, MmioError};
