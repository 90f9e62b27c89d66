//! `Controller(hardware="fpga")`: the decode rounds of a run go through the HWHS engine of a
//! board instead of a host session. With no board present, the board is the simulated one
//! of `backline-sim` (the HWHS's Verilator model, the ERNIC models), brought up by
//! `backline-apu` with the same code as a real board; its ERNIC delivers every request
//! (payload and `decoder_id`) through the bridge to the placement's real coprocessor — a
//! server thread of this process, an executor process, or one on another host — over shm,
//! udp or rdma, so any coprocessor function answers (builtin, C symbol, BP+OSD).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use backline_apu::{Board, Config, mmio::sim::SimMmio};
use backline_regmap as rm;
use backline_sim::board::{SimBoard, SimBoardError, SimBoardOptions};
use backline_sim::{BridgeConfig, BridgeError, CoprocessorAddr};
use backline_stabvm::{RoundError, Rounds};
use backline_transport::{SessionConfig, TransportKind};
use backline_wire::Status;

use crate::placement::Fabric;

/// Why the board could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FpgaError {
    /// The simulated board did not start (built without Verilator, or its coprocessor does
    /// not answer).
    #[error("the simulated board did not start: {0}")]
    Start(String),
    /// The simulated board's bridge reaches no coprocessor at the placement's address.
    #[error("the simulated board did not start: {0}")]
    Unreachable(backline_sim::BridgeError),
    /// The bring-up failed.
    #[error("board bring-up: {0}")]
    Setup(#[from] backline_apu::Error),
}

/// A simulated board bridged to a coprocessor, set up for single rounds.
pub struct FpgaBoard {
    _sim: SimBoard,
    board: Board<SimMmio>,
    coprocessor: String,
    socket: PathBuf,
    rtts_ns: Vec<f64>,
    staged: Option<(u32, Vec<u8>)>,
    reply: Option<Result<u64, RoundError>>,
}

impl std::fmt::Debug for FpgaBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FpgaBoard")
            .field("socket", &self.socket)
            .field("coprocessor", &self.coprocessor)
            .finish()
    }
}

/// Bytes of a reply the engine hands back for a single round (`LAST_REPLY`).
pub const REPLY_WORD_BYTES: u32 = 4;

fn invalid(msg: String) -> RoundError {
    RoundError::Transport(backline_transport::Error::Invalid(msg))
}

impl FpgaBoard {
    /// Starts a simulated board whose ERNIC bridges every request to the coprocessor at
    /// `peer` over `transport`, with the session settings `session` (ring geometry and
    /// timeouts as the placement's own controllers use them), brings it up with the shipped
    /// sim-board configuration and readies it for single rounds. `reply_timeout_us`: the
    /// engine's reply timeout (default: the configuration's).
    pub fn simulated(
        transport: TransportKind,
        peer: &str,
        session: &SessionConfig,
        reply_timeout_us: Option<u32>,
    ) -> Result<Self, FpgaError> {
        let start = |e: &dyn std::fmt::Display| FpgaError::Start(e.to_string());
        let kind = match transport {
            TransportKind::Shm => "shm",
            TransportKind::Udp => "udp",
            TransportKind::Rdma => "rdma",
            TransportKind::Memcpy => {
                return Err(FpgaError::Start(
                    "the simulated board reaches its coprocessor over shm, udp or rdma, not \
                     memcpy"
                        .into(),
                ));
            }
        };
        let coprocessor = format!("{kind}:{peer}");
        let addr = CoprocessorAddr::parse(&coprocessor).map_err(|e| start(&e))?;
        static N: AtomicU64 = AtomicU64::new(0);
        let socket = std::env::temp_dir().join(format!(
            "backline-py-board-{}-{}.sock",
            std::process::id(),
            // Relaxed: a counter for unique names, ordering nothing else.
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let mut opts = SimBoardOptions::new(&socket);
        opts.coprocessor = Some(BridgeConfig::with_session(addr, session));
        let sim = SimBoard::spawn(opts).map_err(|e| match e {
            SimBoardError::Bridge(e @ BridgeError::Connect { .. }) => FpgaError::Unreachable(e),
            e => start(&e),
        })?;
        let mut cfg = Config::sim_example();
        cfg.peer.address = sim
            .peer_address()
            .ok_or_else(|| FpgaError::Start("the board has no peer listener".into()))?
            .to_string();
        // The engine waits for a bridged reply as long as the session would.
        let bridge_us = u32::try_from(session.reply_timeout.as_micros()).unwrap_or(u32::MAX);
        cfg.hwhs.timeout_us = reply_timeout_us.unwrap_or(bridge_us.max(cfg.hwhs.timeout_us));
        let mmio = SimMmio::connect(&socket.display().to_string()).map_err(|e| start(&e))?;
        let mut board = Board::open(mmio)?;
        board.setup(&cfg)?;
        board.begin_rounds()?;
        Ok(FpgaBoard {
            _sim: sim,
            board,
            coprocessor,
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

    /// The coprocessor the board's requests go to (`shm:NAME`, `udp:HOST:PORT`).
    pub fn coprocessor(&self) -> &str {
        &self.coprocessor
    }

    /// One round through the engine: the reply as the host sessions give it (its first
    /// bytes, little-endian), or why there is none.
    fn round(&mut self, decoder_id: u32, payload: &[u8]) -> Result<u64, RoundError> {
        if payload.is_empty() || payload.len() > rm::MAX_PAYLOAD_BYTES as usize {
            return Err(RoundError::Transport(
                backline_transport::Error::MessageTooLarge {
                    size: payload.len(),
                    capacity: rm::MAX_PAYLOAD_BYTES as usize,
                },
            ));
        }
        let r = self
            .board
            .round(payload, decoder_id)
            .map_err(|e| invalid(format!("board round: {e}")))?;
        if r.timed_out {
            return Err(RoundError::Transport(backline_transport::Error::Timeout {
                what: format!(
                    "the board's reply from {} (the HWHS reply timeout)",
                    self.coprocessor
                ),
                waited: std::time::Duration::from_nanos(rm::cycles_to_ns(u64::from(r.rtt_cycles))),
            }));
        }
        let status = (r.reply_status & 0xFFFF) as u16;
        if status != Status::Ok as u16 {
            return Err(RoundError::Status {
                decoder_id,
                status: Status::from_u16(status).map_or("unknown", |s| s.name()),
            });
        }
        let bytes = r.reply_bytes().ok_or_else(|| {
            invalid(format!(
                "the coprocessor answered decoder_id {decoder_id} with {} bytes; a single \
                 round through the board returns the first {REPLY_WORD_BYTES} (LAST_REPLY)",
                r.reply_len
            ))
        })?;
        self.rtts_ns
            .push(rm::cycles_to_ns(u64::from(r.rtt_cycles)) as f64);
        let mut w = [0u8; 8];
        w[..bytes.len()].copy_from_slice(&bytes);
        Ok(u64::from_le_bytes(w))
    }
}

impl Rounds for FpgaBoard {
    fn open(&mut self, _session: u32, coprocessor: u32) -> Result<(), RoundError> {
        if coprocessor != 0 {
            return Err(RoundError::NoCoprocessor(coprocessor));
        }
        Ok(())
    }

    fn stage(&mut self, _: u32, decoder_id: u32, payload: &[u8]) -> Result<(), RoundError> {
        self.staged = Some((decoder_id, payload.to_vec()));
        Ok(())
    }

    fn post(&mut self, session: u32) -> Result<(), RoundError> {
        let (id, p) = self.staged.take().ok_or(RoundError::NotStaged(session))?;
        self.reply = Some(self.round(id, &p));
        Ok(())
    }

    fn collect(&mut self, session: u32) -> Result<u64, RoundError> {
        self.reply.take().ok_or(RoundError::NotStaged(session))?
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
        format!(
            "the simulated board at {} (bridged to {})",
            self.socket.display(),
            self.coprocessor
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Header, OpSpec, build, compile};

    fn ghz() -> backline_stabvm::Program {
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
        compile(
            build(&h, &ops).unwrap(),
            None,
            &backline_compiler::NoiseDefaults {
                p: 0.01,
                ..Default::default()
            },
            false,
        )
        .unwrap()
        .program
    }

    fn cfg(t: TransportKind) -> SessionConfig {
        crate::placement::session_config(
            t,
            48,
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(2),
        )
        .unwrap()
    }

    #[test]
    fn ghz_through_the_simulated_board_and_a_real_coprocessor() {
        if !backline_sim::AVAILABLE {
            eprintln!("skipped: backline-sim was built without Verilator");
            return;
        }
        let program = ghz();
        let fns = [(0, "steane".to_string()), (1, "steane".to_string())];
        // The coprocessor: a server thread of this process, over shm.
        let name = format!("fpga-test-{}", std::process::id());
        let srv =
            crate::placement::Server::start(cfg(TransportKind::Shm), &name, "fpga-srv", &fns, None)
                .unwrap();
        let mut board = FpgaBoard::simulated(
            TransportKind::Shm,
            srv.peer(),
            &cfg(TransportKind::Shm),
            None,
        )
        .unwrap();
        let out = crate::placement::run(&program, 20, 3, &mut board, &mut |_| true).unwrap();
        assert_eq!(out.rtts_ns.len(), 20 * 13);
        assert!(out.rtts_ns.iter().all(|&t| t > 0.0));
        // The same program gives the same samples through the board as over memcpy.
        let m = crate::placement::Server::start(
            cfg(TransportKind::Memcpy),
            "",
            "fpga-vs-memcpy",
            &fns,
            None,
        )
        .unwrap();
        let mut f = crate::placement::session_rounds(vec![backline_stabvm::Endpoint {
            key: "ctl".into(),
            peer: m.peer().into(),
            config: cfg(TransportKind::Memcpy),
        }]);
        let host = crate::placement::run(&program, 20, 3, &mut f, &mut |_| true).unwrap();
        assert_eq!(host.bits, out.bits);
        // A coprocessor that is not there: a clear error before any round.
        let e = FpgaBoard::simulated(
            TransportKind::Udp,
            "127.0.0.1:9",
            &SessionConfig {
                setup_timeout: std::time::Duration::from_millis(300),
                ..cfg(TransportKind::Udp)
            },
            None,
        )
        .unwrap_err();
        assert!(matches!(e, FpgaError::Unreachable(_)), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("the coprocessor at udp:127.0.0.1:9 does not answer"),
            "{e}"
        );
    }
}
