//! `Controller(hardware="fpga")`: the decode rounds of a run go through the HWHS engine of a
//! board instead of a host session. With no board present, the board is the simulated one of
//! backline-apu (the HWHS's Verilator model plus the ERNIC register model), brought up with
//! the same code as a real board; its modelled coprocessor computes the Steane lookup or
//! echoes — it cannot call a coprocessor function of this process.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use backline_apu::simboard::{SimBoard, SimBoardOptions};
use backline_apu::{Board, Config, mmio::sim::SimMmio};
use backline_sim::Responder as ModelResponder;
use backline_stabvm::{RoundError, Rounds};

use crate::placement::Fabric;

/// Why the board could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FpgaError {
    /// The modelled coprocessor cannot compute this function.
    #[error(
        "the simulated board's coprocessor model computes only `steane` or `echo`, not `{0}` (a real board reaches any coprocessor over RDMA)"
    )]
    Function(String),
    /// The simulated board did not start (e.g. built without Verilator).
    #[error("the simulated board did not start: {0}")]
    Start(String),
    /// The bring-up failed.
    #[error("board bring-up: {0}")]
    Setup(#[from] backline_apu::Error),
}

/// A simulated board, set up for single rounds.
pub struct FpgaBoard {
    _sim: SimBoard,
    board: Board<SimMmio>,
    responder: ModelResponder,
    socket: PathBuf,
    payload_words: usize,
    rtts_ns: Vec<f64>,
    staged: Option<Vec<u8>>,
    reply: Option<u64>,
}

impl std::fmt::Debug for FpgaBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FpgaBoard")
            .field("socket", &self.socket)
            .field("responder", &self.responder.name())
            .finish()
    }
}

impl FpgaBoard {
    /// Starts a simulated board whose coprocessor model computes `function` (`steane` or
    /// `echo`), brings it up with the shipped sim-board configuration and readies it for
    /// single rounds.
    pub fn simulated(function: &str, reply_timeout_us: Option<u32>) -> Result<Self, FpgaError> {
        let responder = match function {
            "steane" => ModelResponder::Steane,
            "echo" => ModelResponder::Echo,
            other => return Err(FpgaError::Function(other.to_string())),
        };
        static N: AtomicU64 = AtomicU64::new(0);
        let socket = std::env::temp_dir().join(format!(
            "backline-py-board-{}-{}.sock",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let mut opts = SimBoardOptions::new(&socket);
        opts.responder = responder;
        let sim = SimBoard::spawn(opts).map_err(|e| FpgaError::Start(e.to_string()))?;
        let mut cfg = Config::sim_example();
        cfg.peer.address = sim
            .peer_address()
            .ok_or_else(|| FpgaError::Start("the board has no peer listener".into()))?
            .to_string();
        if let Some(t) = reply_timeout_us {
            cfg.hwhs.timeout_us = t;
        }
        let mmio = sim.connect().map_err(|e| FpgaError::Start(e.to_string()))?;
        let mut board = Board::open(mmio)?;
        board.setup(&cfg)?;
        board.begin_rounds()?;
        Ok(FpgaBoard {
            payload_words: (cfg.hwhs.payload_bytes as usize / 4).clamp(1, 4),
            _sim: sim,
            board,
            responder,
            socket,
            rtts_ns: Vec::new(),
            staged: None,
            reply: None,
        })
    }

    /// Forgets the timings of earlier runs.
    pub fn clear(&mut self) {
        self.rtts_ns.clear();
    }

    /// The function the modelled coprocessor computes.
    pub fn function(&self) -> &'static str {
        self.responder.name()
    }
}

impl Rounds for FpgaBoard {
    fn open(&mut self, _session: u32, coprocessor: u32) -> Result<(), RoundError> {
        if coprocessor != 0 {
            return Err(RoundError::NoCoprocessor(coprocessor));
        }
        Ok(())
    }

    fn stage(&mut self, _: u32, _decoder_id: u32, payload: &[u8]) -> Result<(), RoundError> {
        self.staged = Some(payload.to_vec());
        Ok(())
    }

    fn post(&mut self, session: u32) -> Result<(), RoundError> {
        let p = self.staged.take().ok_or(RoundError::NotStaged(session))?;
        // The engine carries the configured number of 32-bit payload words.
        let n = self.payload_words;
        if p.len() > 4 * n {
            return Err(RoundError::Transport(
                backline_transport::Error::MessageTooLarge {
                    size: p.len(),
                    capacity: 4 * n,
                },
            ));
        }
        let mut words = [0u32; 4];
        for (i, b) in p.iter().enumerate() {
            words[i / 4] |= u32::from(*b) << (8 * (i % 4));
        }
        let r = self.board.round(&words[..n]).map_err(|e| {
            RoundError::Transport(backline_transport::Error::Invalid(format!(
                "board round: {e}"
            )))
        })?;
        if r.timed_out {
            return Err(RoundError::Transport(backline_transport::Error::Timeout {
                what: "the board's reply (HWHS reply timeout)".into(),
                waited: std::time::Duration::from_secs_f64(
                    f64::from(r.rtt_cycles) / (backline_regmap::CLOCK_MHZ * 1e6),
                ),
            }));
        }
        self.rtts_ns
            .push(f64::from(r.rtt_cycles) * 1e3 / backline_regmap::CLOCK_MHZ);
        self.reply = Some(match self.responder {
            // The board's Steane model replies with the correction as a bit mask (bit q: flip
            // qubit q; 0: none); the host's Steane function with the qubit's index or 0x0F.
            // The program expects the latter.
            ModelResponder::Steane => match r.reply & 0x7F {
                0 => u64::from(backline_decode::steane::NO_ERROR),
                m if m.is_power_of_two() => u64::from(m.trailing_zeros()),
                m => {
                    return Err(RoundError::Transport(backline_transport::Error::Protocol(
                        format!("the board's Steane reply {m:#x} flips more than one qubit"),
                    )));
                }
            },
            _ => u64::from(r.reply),
        });
        Ok(())
    }

    fn collect(&mut self, session: u32) -> Result<u64, RoundError> {
        self.reply.take().ok_or(RoundError::NotStaged(session))
    }

    fn close(&mut self, _: u32) -> Result<(), RoundError> {
        Ok(())
    }
}

impl Fabric for FpgaBoard {
    fn rtts_ns(&self) -> &[f64] {
        &self.rtts_ns
    }
    fn peer(&self, _: u32) -> String {
        format!("the simulated board at {}", self.socket.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Header, OpSpec, build, compile};

    #[test]
    fn ghz_through_the_simulated_board() {
        let mut board = match FpgaBoard::simulated("steane", None) {
            Ok(b) => b,
            Err(FpgaError::Start(why)) => {
                eprintln!("skipped: {why}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let h = Header {
            name: "ghz".into(),
            num_qubits: 3,
            num_bits: 3,
            qec_code: Some("steane".into()),
            coprocessors: vec!["steane".into()],
            ..Default::default()
        };
        let op = |tag: &str, ints: &[u64]| OpSpec {
            tag: tag.into(),
            ints: ints.to_vec(),
            p: 0.0,
        };
        let ops = vec![
            op("h", &[0]),
            op("cnot", &[0, 1]),
            op("cnot", &[1, 2]),
            op("measure", &[0, 0]),
            op("measure", &[1, 1]),
            op("measure", &[2, 2]),
            op("output", &[0, 1, 2]),
        ];
        let c = compile(
            build(&h, &ops).unwrap(),
            None,
            &backline_compiler::NoiseDefaults {
                p: 0.01,
                ..Default::default()
            },
            false,
        )
        .unwrap();
        let out = crate::placement::run(&c.program, 20, 3, &mut board, &mut |_| true).unwrap();
        assert_eq!(out.rtts_ns.len(), 20 * 13);
        assert!(out.rtts_ns.iter().all(|&t| t > 0.0));
        // The board's Steane model answers as the host's Steane function does: the same
        // program gives the same samples through the board as over memcpy.
        let cfg = crate::placement::session_config(
            backline_transport::TransportKind::Memcpy,
            48,
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(2),
        )
        .unwrap();
        let fns = [(0, "steane".to_string()), (1, "steane".to_string())];
        let s =
            crate::placement::Server::start(cfg.clone(), "", "fpga-vs-memcpy", &fns, None).unwrap();
        let mut f = crate::placement::session_rounds(vec![backline_stabvm::Endpoint {
            key: "ctl".into(),
            peer: s.peer().into(),
            config: cfg,
        }]);
        let host = crate::placement::run(&c.program, 20, 3, &mut f, &mut |_| true).unwrap();
        assert_eq!(host.bits, out.bits);
        assert!(FpgaBoard::simulated("bposd:hgp13", None).is_err());
    }
}
