//! The simulated board: the HWHS engine's generated Verilog (`bitstreams/rtl/hwhs.v`)
//! verilated by Verilator 5 and driven from Rust cycle by cycle, with a model of the ERNIC's
//! data path and of the remote side it talks to ([`model`]) — an in-simulation responder, or
//! a real backline coprocessor over a real transport through the [`bridge`] — plus whole
//! runs as `backline sim` does them ([`run`], with request payloads and expected replies from
//! [`workload`]) and the board as a process: the register-level ERNIC model, the socket
//! server and its protocol ([`board`], which `backline-apu sim-board` serves and the control
//! plane's `sim:` backend talks to).
//!
//! The simulator reaches the engine only through its ports: the AXI4-Lite slave (register
//! reads and writes by address, [`HwhsSim::axi_read`] / [`HwhsSim::axi_write`]) and the
//! ERNIC-side ports (SQ writes, doorbell, completion, inbound reply writes, request reads),
//! which the model drives. Time advances by whole cycles of the 200 MHz engine clock; cycles
//! in which neither side does anything run inside the C++ shim without a round trip to Rust.
//!
//! ```no_run
//! use backline_regmap as rm;
//! use backline_sim::{HwhsSim, ModelConfig};
//!
//! let mut sim = HwhsSim::new(ModelConfig::default())?;
//! assert_eq!(sim.axi_read(rm::VERSION)?, rm::VERSION_VALUE);
//! sim.axi_write(rm::CTRL, rm::CTRL_START.bits(1))?; // one sw-loop round
//! sim.run_cycles(1_000);
//! assert_eq!(sim.axi_read(rm::ROUND_COUNT)?, 1);
//! # Ok::<(), backline_sim::SimError>(())
//! ```
//!
//! The crate builds without Verilator (the build script detects it, and looks again on the
//! next build once Verilator is installed); [`HwhsSim::new`] then returns
//! [`SimError::NoVerilator`], [`AVAILABLE`] is false and [`BUILD`] says why.
#![deny(missing_docs)]

mod backend;
pub mod board;
pub mod bridge;
pub mod fabric;
pub mod model;
pub mod run;

use backline_regmap as rm;

pub use backend::{Inputs, Outputs};
pub use backline_board::workload;
pub use bridge::{Bridge, BridgeConfig, BridgeError, CoprocessorAddr, Loss};
pub use model::{ErnicModel, ModelConfig, ModelStats, Responder, RoundRecord, RoundSplit};
pub use run::{LossPolicy, Mode, RunConfig, RunReport};

/// True when this build contains the verilated engine.
pub const AVAILABLE: bool = backend::Backend::AVAILABLE;

/// How this build got its engine model, for `--version` lines: `Verilator 5.006` or why it
/// has none.
pub const BUILD: &str = env!("BACKLINE_SIM_BUILD");

/// The one command that gives a build without Verilator its simulator.
pub const FIX: &str = "sudo apt-get install verilator";

/// What a binary's help says about this build's simulator: how its engine model was built,
/// or why it has none and the command that fixes it.
pub fn build_note() -> String {
    if AVAILABLE {
        format!("Simulator: {BUILD}.")
    } else {
        format!("Simulator: {BUILD}. Install it with `{FIX}`; the next build picks it up.")
    }
}

/// `ns` in engine cycles (the one clock of `backline-regmap`), rounded to the nearest.
pub(crate) fn ns_to_cycles(ns: u64) -> u64 {
    rm::ns_to_cycles(ns)
}

/// Cycles an AXI4-Lite transaction may take before it counts as hung.
pub const AXI_TIMEOUT_CYCLES: u32 = 64;

/// Which AXI4-Lite transaction failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxiOp {
    /// A read.
    Read,
    /// A write.
    Write,
}

impl std::fmt::Display for AxiOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AxiOp::Read => "read",
            AxiOp::Write => "write",
        })
    }
}

/// A failed AXI4-Lite transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AxiError {
    /// The slave answered SLVERR (unmapped offset, or a write to a read-only register).
    #[error("AXI4-Lite {op} at offset {addr:#06x}: SLVERR{}", describe(*addr))]
    SlvErr {
        /// Read or write.
        op: AxiOp,
        /// Byte offset.
        addr: u32,
    },
    /// The slave answered DECERR.
    #[error("AXI4-Lite {op} at offset {addr:#06x}: DECERR")]
    DecErr {
        /// Read or write.
        op: AxiOp,
        /// Byte offset.
        addr: u32,
    },
    /// No response within [`AXI_TIMEOUT_CYCLES`].
    #[error("AXI4-Lite {op} at offset {addr:#06x}: no response in {AXI_TIMEOUT_CYCLES} cycles")]
    Timeout {
        /// Read or write.
        op: AxiOp,
        /// Byte offset.
        addr: u32,
    },
}

fn describe(addr: u32) -> String {
    match rm::lookup(addr) {
        Some(r) => format!(" ({} is {})", r.name, r.access.short()),
        None => " (no register there)".into(),
    }
}

/// Why the simulator could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The crate was built on a machine without Verilator.
    #[error(
        "this build has no simulator ({BUILD}); fix: `{FIX}`, then run the same cargo \
         command again (the build looks for Verilator again by itself)"
    )]
    NoVerilator,
    /// The C++ model could not be allocated.
    #[error("the Verilator model could not be allocated")]
    OutOfMemory,
    /// A register access failed.
    #[error(transparent)]
    Axi(#[from] AxiError),
    /// Bad run settings.
    #[error("{0}")]
    Config(String),
    /// The engine did not finish in time.
    #[error("the engine did not finish: {0}")]
    Stuck(String),
    /// The bridge to a real coprocessor could not be set up.
    #[error(transparent)]
    Bridge(#[from] BridgeError),
    /// A real coprocessor lost a round (it stopped answering or went away) and the run
    /// stops at the first lost round.
    #[error("{0}")]
    CoprocessorLost(String),
    /// A real coprocessor does not serve the run's decoder id.
    #[error("{0}")]
    Unserved(String),
    /// The run was asked to stop (a signal) after this many rounds.
    #[error("interrupted after {0} rounds")]
    Interrupted(u64),
}

/// The verilated engine with its ERNIC and responder models attached.
pub struct HwhsSim {
    be: backend::Backend,
    out: Outputs,
    now: u64,
    model: ErnicModel,
}

impl std::fmt::Debug for HwhsSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HwhsSim")
            .field("cycle", &self.now)
            .field("model", &self.model.stats())
            .finish()
    }
}

impl HwhsSim {
    /// A powered-up engine (registers at their reset values) and models with `config`.
    pub fn new(config: ModelConfig) -> Result<HwhsSim, SimError> {
        let mut out = Outputs::default();
        let be = backend::Backend::new(&mut out)?;
        Ok(HwhsSim {
            be,
            out,
            now: 0,
            model: ErnicModel::new(config),
        })
    }

    /// Cycles simulated since power-up.
    pub fn cycle(&self) -> u64 {
        self.now
    }

    /// The ERNIC/responder model.
    pub fn model(&self) -> &ErnicModel {
        &self.model
    }

    /// The ERNIC/responder model, to change its settings between rounds.
    pub fn model_mut(&mut self) -> &mut ErnicModel {
        &mut self.model
    }

    /// The engine's outputs in the current cycle.
    pub fn outputs(&self) -> &Outputs {
        &self.out
    }

    /// One cycle with `inp` on the AXI port; the models drive the ERNIC side.
    fn step(&mut self, mut inp: Inputs) {
        self.model.cycle(self.now, &self.out, &mut inp);
        self.be.tick(&inp, &mut self.out);
        self.now += 1;
    }

    fn engine_event(&self) -> bool {
        let o = &self.out;
        (o.sq_wr_en | o.db_valid | o.tx_valid | o.axi_bvalid | o.axi_rvalid) != 0
    }

    /// Advances `n` cycles with the AXI port idle.
    pub fn run_cycles(&mut self, n: u64) {
        let end = self.now + n;
        let idle = Inputs::default();
        while self.now < end {
            if self.engine_event() || self.model.busy_at(self.now) {
                self.step(idle);
                continue;
            }
            let until = self.model.next_event().unwrap_or(end).min(end);
            let ran = self.be.run_idle(&idle, &mut self.out, until - self.now);
            self.now += ran;
            if ran == 0 {
                self.step(idle);
            }
        }
    }

    /// Writes `data` to the register at byte offset `addr`.
    pub fn axi_write(&mut self, addr: u32, data: u32) -> Result<(), AxiError> {
        let (mut aw, mut w) = (false, false);
        for _ in 0..AXI_TIMEOUT_CYCLES {
            let o = self.out;
            if aw && w && o.axi_bvalid != 0 {
                self.step(Inputs {
                    axi_bready: 1,
                    ..Inputs::default()
                });
                return resp(o.axi_bresp, AxiOp::Write, addr);
            }
            let inp = Inputs {
                axi_awaddr: addr,
                axi_awvalid: u32::from(!aw),
                axi_wdata: data,
                axi_wvalid: u32::from(!w),
                axi_bready: 0,
                ..Inputs::default()
            };
            self.step(inp);
            aw |= o.axi_awready != 0;
            w |= o.axi_wready != 0;
        }
        Err(AxiError::Timeout {
            op: AxiOp::Write,
            addr,
        })
    }

    /// Reads the register at byte offset `addr`.
    pub fn axi_read(&mut self, addr: u32) -> Result<u32, AxiError> {
        let mut ar = false;
        for _ in 0..AXI_TIMEOUT_CYCLES {
            let o = self.out;
            if ar && o.axi_rvalid != 0 {
                self.step(Inputs {
                    axi_rready: 1,
                    ..Inputs::default()
                });
                return resp(o.axi_rresp, AxiOp::Read, addr).map(|()| o.axi_rdata);
            }
            self.step(Inputs {
                axi_araddr: addr,
                axi_arvalid: u32::from(!ar),
                ..Inputs::default()
            });
            ar |= o.axi_arready != 0;
        }
        Err(AxiError::Timeout {
            op: AxiOp::Read,
            addr,
        })
    }
}

fn resp(code: u32, op: AxiOp, addr: u32) -> Result<(), AxiError> {
    match code {
        0 | 1 => Ok(()),
        2 => Err(AxiError::SlvErr { op, addr }),
        _ => Err(AxiError::DecErr { op, addr }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_to_do() {
        let e = SimError::NoVerilator.to_string();
        assert!(
            e.contains("sudo apt-get install verilator") && e.contains("again"),
            "{e}"
        );
        let e = AxiError::SlvErr {
            op: AxiOp::Write,
            addr: rm::STATUS,
        }
        .to_string();
        assert_eq!(
            e,
            "AXI4-Lite write at offset 0x0004: SLVERR (STATUS is RO-pure)"
        );
        let e = AxiError::SlvErr {
            op: AxiOp::Read,
            addr: 0xFC,
        }
        .to_string();
        assert!(e.ends_with("(no register there)"), "{e}");
    }

    #[test]
    fn construction_matches_the_build() {
        let available = AVAILABLE;
        match HwhsSim::new(ModelConfig::default()) {
            Ok(_) => assert!(available),
            Err(SimError::NoVerilator) => assert!(!available),
            Err(e) => panic!("{e}"),
        }
    }
}
