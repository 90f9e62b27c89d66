//! Integration tests of backline-apu: one binary, modules by topic.
//!
//! * `bad_input` — every bad input of the issue is refused before any register is written
//!   (fake backend, fake TCP peers; no simulator needed).
//! * `sim_chain` — the whole chain on the simulated board, through the library: the
//!   documented write order as the board recorded it, rounds, runs, traces, tear-down and
//!   recovery (skipped without Verilator).
//! * `cli` — the `backline-apu` binary against a `sim-board` process: setup, 10,000-round
//!   sw-loop and hw-loop runs, trace read-out, reset, signals (skipped without Verilator).
//! * `layers` — no import circle between the crate's modules; no path to the Verilator
//!   model but through the `sim` feature.

mod apu {
    pub mod util;

    mod bad_input;
    #[cfg(feature = "sim")]
    mod cli;
    mod layers;
    #[cfg(feature = "sim")]
    mod sim_chain;
}
