//! The simulator backend: a client of the simulated board (`backline-apu sim-board`, or a
//! `backline_sim::board::SimBoard` in any process) over its Unix socket, speaking the one
//! protocol definition of `backline_sim::board::protocol`. Register accesses become
//! requests; [`Mmio::wait`] advances the simulated clock by the same device time (cycles of
//! the engine clock), so the drivers' poll loops behave as on the board. Every request has
//! a timeout: a sim-board that stops answering is an error, not a hang.

use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::{Access, Block, FabricSplits, Mmio, MmioError, Op};
use backline_sim::board::protocol::{self as p, Request, SimState, Status, op};

/// How long one request may take (a full trace read-out of 2^20 entries included).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// A connection to a simulated board.
#[derive(Debug)]
pub struct SimMmio {
    stream: UnixStream,
    path: String,
}

impl SimMmio {
    /// Connects to the sim-board at `path` and checks the protocol version.
    pub fn connect(path: &str) -> Result<SimMmio, MmioError> {
        let stream = UnixStream::connect(path).map_err(|source| MmioError::Io {
            what: format!(
                "connecting to the simulated board at {path} (is `backline-apu sim-board \
                 --socket {path}` running?)"
            ),
            source,
        })?;
        let io = |source| MmioError::Io {
            what: format!("setting up {path}"),
            source,
        };
        stream.set_read_timeout(Some(REQUEST_TIMEOUT)).map_err(io)?;
        stream
            .set_write_timeout(Some(REQUEST_TIMEOUT))
            .map_err(io)?;
        let mut s = SimMmio {
            stream,
            path: path.into(),
        };
        let payload = s.call(
            Request::bare(op::HELLO, u64::from(p::PROTOCOL_VERSION)),
            None,
        )?;
        let server = payload
            .get(0..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| MmioError::Protocol("short hello answer".into()))?;
        if server != p::PROTOCOL_VERSION {
            return Err(MmioError::Protocol(format!(
                "the sim-board at {path} speaks protocol {server}, this build {}",
                p::PROTOCOL_VERSION
            )));
        }
        Ok(s)
    }

    /// One request/response; `reg` is the register an error refers to.
    fn call(&mut self, req: Request, reg: Option<(Block, u32, Op)>) -> Result<Vec<u8>, MmioError> {
        use std::io::Write;
        let path = self.path.clone();
        let io = |source: std::io::Error| MmioError::Io {
            what: format!("talking to the simulated board at {path}"),
            source,
        };
        self.stream.write_all(&req.encode()).map_err(io)?;
        let (status, payload) = p::read_response(&mut self.stream).map_err(io)?;
        let text = || String::from_utf8_lossy(&payload).into_owned();
        match (Status::from_u8(status), reg) {
            (Some(Status::Ok), _) => Ok(payload),
            (Some(Status::Bus), Some((block, offset, op))) => Err(MmioError::Bus {
                block,
                offset,
                op,
                detail: text(),
            }),
            (Some(Status::Refused), Some((block, offset, op))) => Err(MmioError::Refused {
                block,
                offset,
                op,
                reason: text(),
            }),
            _ => Err(MmioError::Protocol(text())),
        }
    }

    fn word(payload: &[u8]) -> Result<u32, MmioError> {
        payload
            .get(0..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| MmioError::Protocol("short read answer".into()))
    }

    /// The simulated board's state (cycle, peer, port-model counters, …).
    pub fn state(&mut self) -> Result<SimState, MmioError> {
        let payload = self.call(Request::bare(op::STATE, 0), None)?;
        serde_json::from_slice(&payload).map_err(|e| MmioError::Protocol(format!("state: {e}")))
    }

    /// Every logged access (all writes, and ERNIC reads) since the board started or the log
    /// was cleared.
    pub fn log(&mut self) -> Result<Vec<Access>, MmioError> {
        let mut out = Vec::new();
        loop {
            let payload = self.call(Request::bare(op::LOG, out.len() as u64), None)?;
            let n = payload.len() / p::LOG_ENTRY_BYTES;
            for c in payload.chunks_exact(p::LOG_ENTRY_BYTES) {
                out.push(
                    p::decode_access(c)
                        .ok_or_else(|| MmioError::Protocol("bad log entry".into()))?,
                );
            }
            if n < p::LOG_CHUNK {
                return Ok(out);
            }
        }
    }

    /// Empties the access log.
    pub fn clear_log(&mut self) -> Result<(), MmioError> {
        self.call(Request::bare(op::CLEAR_LOG, 0), None).map(|_| ())
    }

    /// Accesses the ERNIC model refused, with the rule each broke.
    pub fn violations(&mut self) -> Result<Vec<String>, MmioError> {
        let payload = self.call(Request::bare(op::VIOLATIONS, 0), None)?;
        Ok(String::from_utf8_lossy(&payload)
            .lines()
            .map(str::to_string)
            .collect())
    }

    /// Puts QP `qpn` into the fatal state (as a NAK or exhausted retries would).
    pub fn inject_qp_fatal(&mut self, qpn: u32) -> Result<(), MmioError> {
        self.call(
            Request {
                op: op::INJECT,
                block: 0,
                offset: qpn,
                arg: p::fault::QP_FATAL,
            },
            None,
        )
        .map(|_| ())
    }

    /// Asks the sim-board process to exit.
    pub fn shutdown(mut self) -> Result<(), MmioError> {
        self.call(Request::bare(op::SHUTDOWN, 0), None).map(|_| ())
    }
}

impl Mmio for SimMmio {
    fn read32(&mut self, block: Block, offset: u32) -> Result<u32, MmioError> {
        let payload = self.call(
            Request::reg(op::READ, block, offset, 0),
            Some((block, offset, Op::Read)),
        )?;
        Self::word(&payload)
    }

    fn write32(&mut self, block: Block, offset: u32, value: u32) -> Result<(), MmioError> {
        self.call(
            Request::reg(op::WRITE, block, offset, u64::from(value)),
            Some((block, offset, Op::Write)),
        )
        .map(|_| ())
    }

    fn read_repeat(&mut self, block: Block, offset: u32, out: &mut [u32]) -> Result<(), MmioError> {
        for chunk in out.chunks_mut(p::MAX_REPEAT as usize) {
            let payload = self.call(
                Request::reg(op::READ_REPEAT, block, offset, chunk.len() as u64),
                Some((block, offset, Op::Read)),
            )?;
            if payload.len() != 4 * chunk.len() {
                return Err(MmioError::Protocol(format!(
                    "read-repeat of {} words answered {} bytes",
                    chunk.len(),
                    payload.len()
                )));
            }
            for (v, b) in chunk.iter_mut().zip(payload.chunks_exact(4)) {
                *v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Ok(())
    }

    fn barrier(&mut self) {
        // Requests are served one at a time in order: nothing to do.
    }

    fn wait(&mut self, d: Duration) -> Result<(), MmioError> {
        let cycles = backline_regmap::ns_to_cycles_ceil(d.as_nanos() as u64);
        if cycles > 0 {
            self.call(Request::bare(op::WAIT, cycles), None)?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("sim:{}", self.path)
    }

    fn fabric_splits(&mut self) -> Result<Option<FabricSplits>, MmioError> {
        let st = self.state()?;
        let mut out = Vec::new();
        loop {
            let payload = self.call(Request::bare(op::SPLITS, out.len() as u64), None)?;
            for c in payload.chunks_exact(p::SPLIT_ENTRY_BYTES) {
                let w =
                    |i: usize| u64::from(u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]));
                out.push((w(0), w(4)));
            }
            if payload.len() / p::SPLIT_ENTRY_BYTES < p::SPLIT_CHUNK {
                return Ok(Some(FabricSplits {
                    parts: out,
                    fabric_latency_cycles: st.fabric_latency_cycles,
                    service: match &st.bridge {
                        Some(b) => format!("measured: the coprocessor at {}", b.coprocessor),
                        None => format!("modelled: {}, {} cycles", st.responder, st.service_cycles),
                    },
                }));
            }
        }
    }

    fn is_simulated(&self) -> bool {
        true
    }
}
