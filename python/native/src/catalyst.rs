//! backline.qubit as a device of Catalyst's runtime: the qubits and decodes behind
//! `catalyst.qjit`. Catalyst calls its device one gate and one measurement at a time (through
//! the C++ class of `cpp/catalyst_device.cpp`, which forwards every call to [`Device`]). Each
//! gate becomes a small program of backline's own compiler — with a code, the gate applied
//! transversally to Steane blocks and followed by a correction cycle whose two decodes are
//! rounds through the placement's transport — and runs on a [`Stepper`], the stabilizer VM
//! whose qubits live on between programs.
//!
//! The placement (endpoints, code, pipeline, noise, seed) arrives in Catalyst's device
//! keyword string ([`Settings::from_kwargs`]). Catalyst makes a device for every run of a
//! compiled program, so what is worth keeping — the open sessions and the compiled gate
//! programs — lives in a process-wide [`Placement`] per settings.
//!
//! Samples equal those of the non-compiled path for the same seed: a run's programs,
//! concatenated, are the program the front end compiles for the whole circuit, and the
//! stepper of shot `k` draws from `shot_seed(seed, k)` as the VM's shot `k` does. (A block
//! measured mid-circuit and used again is re-encoded when next used, not right after the
//! measurement as the whole-program compiler does; such circuits agree in distribution.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use backline_compiler::ir::{Block, Code, Gate, Module, Op};
use backline_compiler::{CompileError, NoiseDefaults, PassManager};
use backline_stabvm::{Endpoint, Program, Rounds, SessionRounds, Stepper, VmError, shot_seed};

use crate::placement::{self, PlacementError};

/// An excerpt of input as an error quotes it (80 characters, then `…`: the workspace's
/// [`backline_decoders::io::excerpt`]), so that a tampered 10 MB entry is one short line.
fn q(text: &str) -> String {
    backline_decoders::io::excerpt(text)
}

#[cfg(feature = "python")]
pub(crate) mod ffi;

/// The name of the device's factory: Catalyst calls `<name>Factory`.
pub const DEVICE_NAME: &str = "BacklineQubit";

/// Why the device refused a call. The C++ side throws it, so Catalyst's compiled function
/// raises it in Python.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The keyword string is not one `backline.qubit` wrote.
    #[error("device kwargs: {0}")]
    Kwargs(String),
    /// A coprocessor's endpoint could not be set up.
    #[error("{0}")]
    Placement(#[from] PlacementError),
    /// A gate the device does not run.
    #[error("{0}")]
    Gate(String),
    /// A call out of order or out of range.
    #[error("{0}")]
    Usage(String),
    /// A gate's program did not compile.
    #[error("compiling {what}: {source}")]
    Compile {
        /// The gate or measurement.
        what: String,
        /// Why.
        source: CompileError,
    },
    /// The VM or a round failed.
    #[error("{0}")]
    Run(String),
}

/// The placement as the Python device writes it into Catalyst's device kwargs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The coprocessors (index = coprocessor number).
    pub endpoints: Vec<Endpoint>,
    /// Every wire a Steane block.
    pub qec: bool,
    /// The device's pipeline.
    pub pipeline: String,
    /// Noise after every gate.
    pub noise: NoiseDefaults,
    /// The seed of runs made before the front end names one.
    pub seed: u64,
}

/// The kwarg that carries the settings: `{'backline': '<hex of the settings' lines>'}`.
const KWARG: &str = "'backline': '";

/// The hex of the settings in Catalyst's kwargs string.
pub fn settings_hex(kwargs: &str) -> Result<&str, DeviceError> {
    let start = kwargs.find(KWARG).ok_or_else(|| {
        DeviceError::Kwargs(format!(
            "no `backline` entry in \"{}\": this library is loaded by backline.qubit's get_c_interface()", q(kwargs)
        ))
    })? + KWARG.len();
    Ok(kwargs[start..].split('\'').next().unwrap_or_default())
}

/// Lowercase hex of `text` (what the Python device writes: no quote or comma can reach
/// Catalyst's kwargs string).
pub fn to_hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(hex: &str) -> Option<String> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

impl Settings {
    /// Reads Catalyst's kwargs string (the repr of the device's `device_kwargs`). The
    /// settings are lines `key=value`: `qec=steane|none`, `pipeline=…`, `noise=P CHANNEL`,
    /// `seed=N` and one `endpoint=TRANSPORT KEY PEER PAYLOAD_BYTES REPLY_S SETUP_S` per
    /// coprocessor.
    pub fn from_kwargs(kwargs: &str) -> Result<Settings, DeviceError> {
        Settings::from_hex(settings_hex(kwargs)?)
    }

    /// Reads the hex of the settings' lines.
    pub fn from_hex(hex: &str) -> Result<Settings, DeviceError> {
        let bad = |m: String| DeviceError::Kwargs(m);
        let text = from_hex(hex)
            .ok_or_else(|| bad(format!("`backline` entry \"{}\" is not hex text", q(hex))))?;
        let mut s = Settings {
            endpoints: Vec::new(),
            qec: false,
            pipeline: String::new(),
            noise: NoiseDefaults::default(),
            seed: 0,
        };
        for line in text.lines() {
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| bad(format!("line \"{}\": not key=value", q(line))))?;
            match key {
                "qec" => s.qec = value == "steane",
                "pipeline" => s.pipeline = value.to_string(),
                "seed" => {
                    s.seed = value
                        .parse()
                        .map_err(|_| bad(format!("seed \"{}\"", q(value))))?
                }
                "noise" => {
                    let (p, channel) = value
                        .split_once(' ')
                        .ok_or_else(|| bad(format!("noise \"{}\"", q(value))))?;
                    s.noise = NoiseDefaults {
                        p: p.parse()
                            .map_err(|_| bad(format!("noise p \"{}\"", q(p))))?,
                        channel: channel.to_string(),
                    };
                }
                "endpoint" => s.endpoints.push(endpoint_of(value).map_err(|e| match e {
                    DeviceError::Kwargs(m) => bad(m),
                    e => e,
                })?),
                _ => return Err(bad(format!("unknown setting \"{}\"", q(key)))),
            }
        }
        if s.pipeline.is_empty() {
            return Err(bad("no pipeline".into()));
        }
        Ok(s)
    }
}

fn endpoint_of(value: &str) -> Result<Endpoint, DeviceError> {
    let f: Vec<&str> = value.split(' ').collect();
    let [transport, key, peer, payload, reply, setup] = f[..] else {
        return Err(DeviceError::Kwargs(format!(
            "endpoint \"{}\": six fields",
            q(value)
        )));
    };
    let num = |what: &str, s: &str| -> Result<std::time::Duration, DeviceError> {
        let x = s.parse::<f64>().map_err(|_| {
            DeviceError::Kwargs(format!(
                "endpoint \"{}\": {what} \"{}\" is not a number",
                q(value),
                q(s)
            ))
        })?;
        placement::timeout_secs(what, x)
            .map_err(|e| DeviceError::Kwargs(format!("endpoint \"{}\": {e}", q(value))))
    };
    let payload = payload.parse().map_err(|_| {
        DeviceError::Kwargs(format!(
            "endpoint \"{}\": payload bytes \"{}\"",
            q(value),
            q(payload)
        ))
    })?;
    let config = placement::session_config(
        placement::transport_of(transport)?,
        payload,
        num("reply_timeout", reply)?,
        num("setup_timeout", setup)?,
    )?;
    Ok(Endpoint {
        key: key.to_string(),
        peer: peer.to_string(),
        config,
    })
}

/// What one small program does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Piece {
    /// Encodes every block (the start of a run; with no code, nothing).
    Start,
    /// One gate on these wires (with a code: transversally, then a correction cycle each).
    Gate(&'static str, Vec<u32>),
    /// Measures a wire (with a code: the block's data, decoded) into the program's output.
    Measure(u32),
    /// Re-encodes a measured block, flipped to `|1>` when it read 1.
    Reencode(u32, bool),
    /// A Pauli channel (`bit_flip`, `phase_flip`, `depolarize`; the probability's bits) on a
    /// wire (with a code: on every data qubit of its block).
    Noise(&'static str, u64, u32),
}

/// The open sessions and compiled pieces of one placement, shared by its devices.
pub struct Placement {
    settings: Settings,
    /// Opened on first use; dropped after a failed round, so the next run reconnects.
    rounds: Mutex<Option<SessionRounds>>,
    pieces: Mutex<HashMap<(u32, Piece), Arc<Program>>>,
    /// `(seed, next shot)` of the runs: the front end names the seed of each call.
    shots: Mutex<(u64, u64)>,
    /// Rounds done (the sessions' round times are dropped as they come: a long-lived
    /// placement does not grow).
    rounds_done: std::sync::atomic::AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn placements() -> &'static Mutex<HashMap<String, Arc<Placement>>> {
    static ALL: OnceLock<Mutex<HashMap<String, Arc<Placement>>>> = OnceLock::new();
    ALL.get_or_init(Default::default)
}

impl Placement {
    /// The placement of these settings (the hex the Python device writes; made on first
    /// use).
    pub fn of(hex: &str) -> Result<Arc<Placement>, DeviceError> {
        let mut all = lock(placements());
        if let Some(p) = all.get(hex) {
            return Ok(p.clone());
        }
        let settings = Settings::from_hex(hex)?;
        let seed = settings.seed;
        let p = Arc::new(Placement {
            settings,
            rounds: Mutex::new(None),
            pieces: Mutex::new(HashMap::new()),
            shots: Mutex::new((seed, 0)),
            rounds_done: Default::default(),
        });
        all.insert(hex.to_string(), p.clone());
        Ok(p)
    }

    /// Closes the sessions of these settings and forgets them (the Python device's
    /// coprocessors are stopping); false if there were none.
    pub fn forget(hex: &str) -> bool {
        let p = lock(placements()).remove(hex);
        p.map(|p| p.disconnect()).is_some()
    }

    /// Starts a call of the compiled function: its shots are numbered from 0 and seeded
    /// from `seed`, as one execution of the non-compiled path.
    pub fn begin(&self, seed: u64) {
        *lock(&self.shots) = (seed, 0);
    }

    /// The seeds of the next `n` shots.
    fn take_shots(&self, n: u64) -> (u64, u64) {
        let mut s = lock(&self.shots);
        let k = s.1;
        s.1 += n;
        (s.0, k)
    }

    /// Closes the sessions (the next run opens them again).
    pub fn disconnect(&self) {
        if let Some(mut r) = lock(&self.rounds).take() {
            for s in 0..self.settings.endpoints.len() as u32 {
                let _ = r.close(s);
            }
        }
    }

    fn program(&self, wires: u32, piece: &Piece) -> Result<Arc<Program>, DeviceError> {
        let key = (wires, piece.clone());
        if let Some(p) = lock(&self.pieces).get(&key) {
            return Ok(p.clone());
        }
        let p = Arc::new(self.compile(wires, piece)?);
        lock(&self.pieces).insert(key, p.clone());
        Ok(p)
    }

    /// The program of one piece over `wires` wires: a module as the front end's compiler
    /// sees it after `logical-to-blocks` (with a code) and the rest of the pipeline.
    fn compile(&self, wires: u32, piece: &Piece) -> Result<Program, DeviceError> {
        let mut m = Module::new(&format!("{piece:?}"), wires);
        m.coprocessors = (0..self.settings.endpoints.len())
            .map(|c| format!("coprocessor {c}"))
            .collect();
        let gate = |name: &str| Gate::parse(name).expect("a VM gate name");
        if self.settings.qec {
            m.qec_code = Some(Code::Steane);
            m.blocks = (0..wires)
                .map(|q| Block {
                    code: Code::Steane,
                    logical: q,
                    data: vec![],
                    ancilla: None,
                })
                .collect();
            match piece {
                Piece::Start => {
                    m.body = (0..wires)
                        .map(|b| Op::LBlock {
                            block: b,
                            code: Code::Steane,
                        })
                        .collect()
                }
                Piece::Gate(g, ws) => {
                    m.body.push(Op::LGate {
                        gate: gate(g),
                        blocks: ws.clone(),
                    });
                    m.body.extend(ws.iter().map(|&b| Op::LCycle { block: b }));
                }
                Piece::Measure(b) => {
                    let bit = m.new_bit();
                    m.body = vec![
                        Op::LMeasure { block: *b, bit },
                        Op::Output { bits: vec![bit] },
                    ];
                }
                Piece::Reencode(b, one) => {
                    m.body.push(Op::LReset { block: *b });
                    if *one {
                        m.body.push(Op::PTransversal {
                            gate: Gate::X,
                            blocks: vec![*b],
                        });
                    }
                }
                Piece::Noise(c, p, b) => m.body.push(Op::LNoise {
                    channel: channel(c, f64::from_bits(*p)),
                    block: *b,
                }),
            }
        } else {
            match piece {
                Piece::Start | Piece::Reencode(..) => {}
                Piece::Gate(g, ws) => m.gate(gate(g), ws),
                Piece::Measure(q) => {
                    let bit = m.measure(*q);
                    m.body.push(Op::Output { bits: vec![bit] });
                }
                Piece::Noise(c, p, q) => m.body.push(Op::Noise {
                    channel: channel(c, f64::from_bits(*p)),
                    qubit: *q,
                }),
            }
        }
        let what = || format!("{piece:?}");
        let pipeline: Vec<&str> = self
            .settings
            .pipeline
            .split(',')
            .filter(|p| p.trim() != "logical-to-blocks")
            .collect();
        let pm =
            PassManager::parse(&pipeline.join(","), &self.settings.noise).map_err(|source| {
                DeviceError::Compile {
                    what: what(),
                    source,
                }
            })?;
        pm.run(&mut m, |_, _| {})
            .map_err(|source| DeviceError::Compile {
                what: what(),
                source,
            })?;
        backline_compiler::lower(&m).map_err(|source| DeviceError::Compile {
            what: what(),
            source,
        })
    }

    /// Runs `program` on `vm`, opening the sessions first if they are not open.
    fn step(&self, vm: &mut Stepper, program: &Program) -> Result<Vec<bool>, DeviceError> {
        let mut guard = lock(&self.rounds);
        if guard.is_none() && program.num_sessions > 0 {
            let mut r = SessionRounds::new(self.settings.endpoints.clone());
            for c in 0..self.settings.endpoints.len() as u32 {
                r.open(c, c).map_err(|e| {
                    DeviceError::Run(format!(
                        "connecting to coprocessor {c} ({}): {e}",
                        self.describe(c)
                    ))
                })?;
            }
            *guard = Some(r);
        }
        let mut none = NoRounds;
        let rounds: &mut dyn Rounds = match guard.as_mut() {
            Some(r) => r,
            None => &mut none,
        };
        let out = vm.step(program, rounds);
        if let Some(r) = guard.as_mut() {
            // Relaxed: a statistic, read after the run by the same or a joined thread.
            self.rounds_done
                .fetch_add(r.rtts_ns.len() as u64, std::sync::atomic::Ordering::Relaxed);
            r.rtts_ns.clear();
        }
        out.map_err(|e| {
            let msg = match &e {
                VmError::Round { .. } => {
                    // The session is in an unknown state: the next run reconnects.
                    *guard = None;
                    format!(
                        "a decode round to coprocessor 0 ({}) failed: {e}",
                        self.describe(0)
                    )
                }
                _ => e.to_string(),
            };
            DeviceError::Run(msg)
        })
    }

    fn describe(&self, c: u32) -> String {
        match self.settings.endpoints.get(c as usize) {
            Some(e) => format!("{} at {}", e.config.transport, e.peer),
            None => "none configured".into(),
        }
    }

    /// Decode rounds done on this placement's sessions (for tests and reports).
    pub fn rounds_done(&self) -> u64 {
        self.rounds_done.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A channel of a piece (its name one the device mapped from PennyLane's).
fn channel(name: &str, p: f64) -> backline_stabvm::Channel {
    backline_stabvm::Channel::named(name, p).expect("a channel name of Device::channel")
}

/// The rounds of programs without decodes.
struct NoRounds;

impl Rounds for NoRounds {
    fn open(&mut self, s: u32, _: u32) -> Result<(), backline_stabvm::RoundError> {
        Err(backline_stabvm::RoundError::NotOpen(s))
    }
    fn stage(&mut self, s: u32, _: u32, _: &[u8]) -> Result<(), backline_stabvm::RoundError> {
        Err(backline_stabvm::RoundError::NotOpen(s))
    }
    fn post(&mut self, s: u32) -> Result<(), backline_stabvm::RoundError> {
        Err(backline_stabvm::RoundError::NotOpen(s))
    }
    fn collect(&mut self, s: u32) -> Result<u64, backline_stabvm::RoundError> {
        Err(backline_stabvm::RoundError::NotOpen(s))
    }
    fn close(&mut self, _: u32) -> Result<(), backline_stabvm::RoundError> {
        Ok(())
    }
}

/// The VM gates of a Catalyst gate, as the Python front end maps the same PennyLane
/// operation (`backline/_clifford.py`): `inverse` reverses the sequence and swaps `s`/`sdg`.
pub fn gate_sequence(
    name: &str,
    params: &[f64],
    wires: &[u32],
    inverse: bool,
) -> Result<Vec<(&'static str, Vec<u32>)>, DeviceError> {
    let one = |g: &'static str| vec![(g, wires.to_vec())];
    let arity = |n: usize| {
        if wires.len() == n {
            Ok(())
        } else {
            Err(DeviceError::Gate(format!(
                "{name} on {} wires: it acts on {n}",
                wires.len()
            )))
        }
    };
    let quarter = || -> Result<usize, DeviceError> {
        let a = params.first().copied().unwrap_or(f64::NAN);
        let k = a / std::f64::consts::FRAC_PI_2;
        if (k - k.round()).abs() > 1e-9 || !k.is_finite() {
            return Err(DeviceError::Gate(format!(
                "{name}({a}) is not a Clifford gate: backline.qubit runs rotations by multiples of π/2 only"
            )));
        }
        Ok(k.round().rem_euclid(4.0) as usize)
    };
    let rz = |k: usize, w: u32| -> Vec<(&'static str, Vec<u32>)> {
        if k < 3 {
            vec![("s", vec![w]); k]
        } else {
            vec![("sdg", vec![w])]
        }
    };
    let seq = match name {
        "Identity" => vec![],
        "Hadamard" | "S" | "PauliX" | "PauliY" | "PauliZ" | "SX" | "RX" | "RY" | "RZ"
        | "PhaseShift" => {
            arity(1)?;
            let w = wires[0];
            match name {
                "Hadamard" => one("h"),
                "S" => one("s"),
                "PauliX" => one("x"),
                "PauliY" => one("y"),
                "PauliZ" => one("z"),
                "SX" => vec![("h", vec![w]), ("s", vec![w]), ("h", vec![w])],
                "RZ" | "PhaseShift" => rz(quarter()?, w),
                "RX" => [
                    vec![("h", vec![w])],
                    rz(quarter()?, w),
                    vec![("h", vec![w])],
                ]
                .concat(),
                _ => [
                    vec![("sdg", vec![w]), ("h", vec![w])],
                    rz(quarter()?, w),
                    vec![("h", vec![w]), ("s", vec![w])],
                ]
                .concat(),
            }
        }
        "CNOT" | "CZ" | "SWAP" | "CY" => {
            arity(2)?;
            if wires[0] == wires[1] {
                return Err(DeviceError::Gate(format!(
                    "{name} on wires {wires:?}: two distinct wires"
                )));
            }
            match name {
                "CNOT" => one("cnot"),
                "CZ" => one("cz"),
                "SWAP" => one("swap"),
                _ => vec![
                    ("sdg", vec![wires[1]]),
                    ("cnot", wires.to_vec()),
                    ("s", vec![wires[1]]),
                ],
            }
        }
        _ => {
            return Err(DeviceError::Gate(format!(
                "{name} is not a gate backline.qubit runs: its qubits are a stabilizer VM, which runs \
                 Clifford gates (Hadamard, S, SX, Paulis, CNOT, CZ, CY, SWAP and rotations by multiples of π/2)"
            )));
        }
    };
    Ok(if inverse {
        seq.into_iter()
            .rev()
            .map(|(g, w)| {
                (
                    match g {
                        "s" => "sdg",
                        "sdg" => "s",
                        g => g,
                    },
                    w,
                )
            })
            .collect()
    } else {
        seq
    })
}

/// One run of a compiled function: the qubits of one shot (more shots replay the run's
/// gates when it measured nothing mid-circuit).
pub struct Device {
    placement: Arc<Placement>,
    shots: u64,
    wires: u32,
    vm: Option<Stepper>,
    /// The pieces run so far (replayed for the other shots of a sample).
    trace: Vec<Piece>,
    /// A block measured and not yet re-encoded: its value.
    measured: Vec<Option<bool>>,
    mid_circuit: bool,
    /// `(seed, shot)` of the live shot.
    seed: (u64, u64),
}

impl Device {
    /// The device of a run on the placement named by `kwargs`.
    pub fn new(kwargs: &str) -> Result<Device, DeviceError> {
        Ok(Device {
            placement: Placement::of(settings_hex(kwargs)?)?,
            shots: 1,
            wires: 0,
            vm: None,
            trace: Vec::new(),
            measured: Vec::new(),
            mid_circuit: false,
            seed: (0, 0),
        })
    }

    /// Allocates `n` wires (Steane blocks with a code) and encodes them.
    pub fn allocate(&mut self, n: u64) -> Result<(), DeviceError> {
        if self.vm.is_some() {
            return Err(DeviceError::Usage(
                "backline.qubit allocates its wires once per run (no dynamic qubit allocation)"
                    .into(),
            ));
        }
        let per = if self.placement.settings.qec { 8 } else { 1 };
        let n32 = u32::try_from(n).map_err(|_| DeviceError::Usage(format!("{n} qubits")))?;
        let physical = n32
            .checked_mul(per)
            .ok_or_else(|| DeviceError::Usage(format!("{n} qubits")))?;
        placement::tableau_fits(physical).map_err(DeviceError::Usage)?;
        let seed = self.placement.take_shots(self.shots.max(1));
        let vm = Stepper::new(physical, shot_seed(seed.0, seed.1)).map_err(|e| match e {
            VmError::Limits(l) => DeviceError::Usage(format!(
                "{n} wires{}: {l}",
                if per == 8 {
                    " (Steane blocks of 8 qubits)"
                } else {
                    ""
                }
            )),
            e => DeviceError::Run(e.to_string()),
        })?;
        self.seed = seed;
        self.wires = n32;
        self.measured = vec![None; n32 as usize];
        self.vm = Some(vm);
        self.run(Piece::Start).map(drop)
    }

    /// Releases the wires (the end of the run).
    pub fn release(&mut self) {
        self.vm = None;
        self.trace.clear();
    }

    /// Wires allocated.
    pub fn num_qubits(&self) -> u64 {
        self.wires as u64
    }

    /// Shots of the run (Catalyst sets them at device init).
    pub fn set_shots(&mut self, shots: u64) {
        self.shots = shots;
    }

    /// Shots of the run.
    pub fn shots(&self) -> u64 {
        self.shots
    }

    fn check_wire(&self, w: i64) -> Result<u32, DeviceError> {
        u32::try_from(w)
            .ok()
            .filter(|&w| w < self.wires)
            .ok_or_else(|| {
                DeviceError::Usage(format!("wire {w}: the run has wires 0..{}", self.wires))
            })
    }

    fn run(&mut self, piece: Piece) -> Result<Vec<bool>, DeviceError> {
        let program = self.placement.program(self.wires, &piece)?;
        let vm = self
            .vm
            .as_mut()
            .ok_or_else(|| DeviceError::Usage("no wires allocated".into()))?;
        let out = self.placement.step(vm, &program)?;
        self.trace.push(piece);
        Ok(out)
    }

    /// Re-encodes a block measured earlier before a gate uses it.
    fn ready(&mut self, w: u32) -> Result<(), DeviceError> {
        if let Some(one) = self.measured[w as usize].take() {
            self.run(Piece::Reencode(w, one))?;
        }
        Ok(())
    }

    /// Applies a named gate.
    pub fn gate(
        &mut self,
        name: &str,
        params: &[f64],
        wires: &[i64],
        inverse: bool,
        controls: usize,
    ) -> Result<(), DeviceError> {
        if controls > 0 {
            return Err(DeviceError::Gate(format!(
                "controlled {name}: backline.qubit runs no control modifiers (use CNOT, CZ or CY)"
            )));
        }
        let ws = wires
            .iter()
            .map(|&w| self.check_wire(w))
            .collect::<Result<Vec<_>, _>>()?;
        for (g, gw) in gate_sequence(name, params, &ws, inverse)? {
            for &w in &gw {
                self.ready(w)?;
            }
            self.run(Piece::Gate(g, gw))?;
        }
        Ok(())
    }

    /// A PennyLane Pauli channel (`BitFlip`, `PhaseFlip`, `DepolarizingChannel`) with
    /// probability `p` on a wire: with a code on every data qubit of its block, as the
    /// front end lowers the same operation.
    pub fn channel(&mut self, name: &str, p: f64, wire: i64) -> Result<(), DeviceError> {
        let c = match name {
            "BitFlip" => "bit_flip",
            "PhaseFlip" => "phase_flip",
            "DepolarizingChannel" => "depolarize",
            _ => {
                return Err(DeviceError::Gate(format!(
                    "{name}: not a channel backline.qubit runs"
                )));
            }
        };
        if !(0.0..=1.0).contains(&p) {
            return Err(DeviceError::Gate(format!(
                "{name}({p}): a probability in [0, 1]"
            )));
        }
        let w = self.check_wire(wire)?;
        self.ready(w)?;
        self.run(Piece::Noise(c, p.to_bits(), w)).map(drop)
    }

    /// Measures a wire (with a code, a decoded logical measurement).
    pub fn measure(&mut self, wire: i64, postselect: Option<i32>) -> Result<bool, DeviceError> {
        if postselect.is_some() {
            return Err(DeviceError::Usage(
                "postselect: backline.qubit samples every shot; filter the samples instead".into(),
            ));
        }
        let w = self.check_wire(wire)?;
        self.mid_circuit = true;
        self.measure_wire(w)
    }

    fn measure_wire(&mut self, w: u32) -> Result<bool, DeviceError> {
        if let Some(v) = self.measured[w as usize] {
            return Ok(v);
        }
        let v = self.run(Piece::Measure(w))?[0];
        if self.placement.settings.qec {
            self.measured[w as usize] = Some(v);
        }
        Ok(v)
    }

    /// `shots × wires` samples of `wires` (in the computational basis), row-major. The live
    /// shot is the first row; the others replay the run's gates (a run that measured
    /// mid-circuit has one shot: Catalyst's `mcm_method="one-shot"`).
    pub fn sample(&mut self, wires: &[i64]) -> Result<Vec<bool>, DeviceError> {
        let ws = wires
            .iter()
            .map(|&w| self.check_wire(w))
            .collect::<Result<Vec<_>, _>>()?;
        let shots = self.shots.max(1);
        if shots > 1 && self.mid_circuit {
            return Err(DeviceError::Usage(format!(
                "{shots} shots of a run that measured mid-circuit: backline.qubit runs such circuits shot by shot (mcm_method=\"one-shot\")"
            )));
        }
        // Catalyst's buffer for the samples is `shots × wires` already; ours is allocated
        // fallibly, so that a count past memory is an error, not an abort.
        let mut out = Vec::new();
        usize::try_from(shots)
            .ok()
            .and_then(|s| s.checked_mul(ws.len()))
            .and_then(|n| out.try_reserve_exact(n).ok())
            .ok_or_else(|| {
                DeviceError::Usage(format!(
                    "{shots} shots of {} wires: the samples do not fit in memory",
                    ws.len()
                ))
            })?;
        for &w in &ws {
            out.push(self.measure_wire(w)?);
        }
        let gates: Vec<Piece> = self
            .trace
            .iter()
            .filter(|p| !matches!(p, Piece::Measure(_)))
            .cloned()
            .collect();
        for k in 1..shots {
            let mut vm = Stepper::new(
                self.wires * if self.placement.settings.qec { 8 } else { 1 },
                shot_seed(self.seed.0, self.seed.1 + k),
            )
            .map_err(|e| DeviceError::Run(e.to_string()))?;
            for piece in &gates {
                let p = self.placement.program(self.wires, piece)?;
                self.placement.step(&mut vm, &p)?;
            }
            for &w in &ws {
                let p = self.placement.program(self.wires, &Piece::Measure(w))?;
                out.push(self.placement.step(&mut vm, &p)?[0]);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kwargs(lines: &str) -> String {
        format!("{{'backline': '{}'}}", to_hex(lines))
    }

    #[test]
    fn a_steane_run_decodes_every_cycle_through_the_placement_and_reports_a_dead_coprocessor() {
        use crate::placement::{Server, session_config, transport_of};
        use std::time::Duration;
        let t = transport_of("memcpy").unwrap();
        let config = session_config(t, 48, Duration::from_secs(1), Duration::from_secs(2)).unwrap();
        let fns = [(0, "steane".to_string()), (1, "steane".to_string())];
        let mut server = Server::start(config, "", "catalyst-unit-steane", &fns, None).unwrap();
        let kw = kwargs(&format!(
            "qec=steane\npipeline={}\nnoise=0.01 depolarize\nseed=9\nendpoint=memcpy catalyst-unit-ctl {} 48 1.0 2.0",
            backline_compiler::passes::IMPLICIT_QEC,
            server.peer()
        ));
        let shots = 30;
        let mut ones = 0;
        for _ in 0..shots {
            let mut d = Device::new(&kw).unwrap();
            d.allocate(3).unwrap();
            d.gate("Hadamard", &[], &[0], false, 0).unwrap();
            d.gate("CNOT", &[], &[0, 1], false, 0).unwrap();
            d.gate("CNOT", &[], &[1, 2], false, 0).unwrap();
            let m: Vec<bool> = (0..3).map(|w| d.measure(w, None).unwrap()).collect();
            assert!(m[0] == m[1] && m[1] == m[2], "{m:?}");
            ones += m[0] as usize;
            d.release();
        }
        assert!(ones > 0 && ones < shots, "{ones}");
        // A correction cycle (2 decodes) per block of each gate (1 + 2 + 2), one decode per
        // block measured (3).
        assert_eq!(server.stats().1, shots as u64 * 13);
        let p = Placement::of(settings_hex(&kw).unwrap()).unwrap();
        assert_eq!(p.rounds_done(), shots as u64 * 13);
        server.stop().unwrap();
        let mut d = Device::new(&kw).unwrap();
        d.allocate(1).unwrap();
        let e = d
            .gate("Hadamard", &[], &[0], false, 0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("coprocessor 0 (memcpy at catalyst-unit-steane)"),
            "{e}"
        );
        assert!(Placement::forget(settings_hex(&kw).unwrap()));
    }

    #[test]
    fn the_kwargs_round_trip_and_bad_ones_are_named() {
        let s = Settings::from_kwargs(&kwargs(
            "qec=steane\npipeline=logical-to-blocks,inject-noise\nnoise=0.01 bit_flip\nseed=7\nendpoint=memcpy k p 48 1.0 5.0",
        ))
        .unwrap();
        assert!(s.qec);
        assert_eq!(s.seed, 7);
        assert_eq!(s.noise.channel, "bit_flip");
        assert_eq!(s.endpoints.len(), 1);
        assert_eq!(s.endpoints[0].peer, "p");
        for (bad, says) in [
            ("{}".to_string(), "no `backline` entry"),
            ("{'backline': 'zz'}".to_string(), "not hex"),
            (
                kwargs("pipeline=x\nendpoint=memcpy k p 48 1.0"),
                "six fields",
            ),
            (
                kwargs("pipeline=x\nendpoint=carrier k p 48 1.0 5.0"),
                "unknown transport",
            ),
            (kwargs("pipeline=x\nendpoint=udp k p 48 -1 5.0"), "positive"),
            (
                kwargs("pipeline=x\nendpoint=udp k p 48 1e20 5.0"),
                "reply_timeout 100000000000000000000 s: must be a positive number",
            ),
            (
                kwargs("pipeline=x\nendpoint=udp k p 48 1 NaN"),
                "setup_timeout NaN s",
            ),
            (kwargs("pipeline=x\nwhat=1"), "unknown setting"),
            (kwargs("seed=1"), "no pipeline"),
        ] {
            let e = Settings::from_kwargs(&bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // A tampered 10 MB entry is quoted as an excerpt (issue 39), not whole.
        let e = Settings::from_kwargs(&format!("{{'backline': '{}'}}", "z".repeat(10_000_000)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not hex") && e.len() < 300, "{} chars", e.len());
    }

    #[test]
    fn gates_map_as_the_front_end_maps_them() {
        let g = |n: &str, p: &[f64], w: &[u32], inv: bool| {
            gate_sequence(n, p, w, inv)
                .unwrap()
                .into_iter()
                .map(|(g, w)| format!("{g}{w:?}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(g("S", &[], &[0], true), "sdg[0]");
        assert_eq!(g("CY", &[], &[0, 1], false), "sdg[1] cnot[0, 1] s[1]");
        assert_eq!(g("CY", &[], &[0, 1], true), "sdg[1] cnot[0, 1] s[1]");
        assert_eq!(g("RZ", &[std::f64::consts::PI], &[2], false), "s[2] s[2]");
        assert_eq!(
            g("RX", &[-std::f64::consts::FRAC_PI_2], &[0], false),
            "h[0] sdg[0] h[0]"
        );
        assert_eq!(g("Identity", &[], &[0], false), "");
        for (n, p, w, says) in [
            ("T", &[][..], &[0u32][..], "not a gate"),
            ("RZ", &[0.3][..], &[0][..], "not a Clifford gate"),
            ("CNOT", &[][..], &[0][..], "acts on 2"),
            ("CNOT", &[][..], &[1, 1][..], "distinct"),
        ] {
            let e = gate_sequence(n, p, w, false).unwrap_err().to_string();
            assert!(e.contains(says), "{n}: {e}");
        }
    }

    #[test]
    fn a_run_without_a_code_samples_ghz_and_refuses_what_it_cannot_run() {
        let kw = kwargs("qec=none\npipeline=inject-noise,insert-sessions,lower-decode\nseed=3");
        let mut parity_ones = 0;
        for _ in 0..40 {
            let mut d = Device::new(&kw).unwrap();
            d.set_shots(5);
            d.allocate(3).unwrap();
            d.gate("Hadamard", &[], &[0], false, 0).unwrap();
            d.gate("CNOT", &[], &[0, 1], false, 0).unwrap();
            d.gate("CNOT", &[], &[1, 2], false, 0).unwrap();
            let s = d.sample(&[0, 1, 2]).unwrap();
            assert_eq!(s.len(), 15);
            for row in s.chunks(3) {
                assert!(row[0] == row[1] && row[1] == row[2], "{row:?}");
                parity_ones += row[0] as usize;
            }
            d.release();
        }
        assert!((40..160).contains(&parity_ones), "{parity_ones} of 200");
        let mut d = Device::new(&kw).unwrap();
        d.allocate(2).unwrap();
        assert!(d.gate("T", &[], &[0], false, 0).is_err());
        assert!(
            d.gate("PauliX", &[], &[0], false, 1)
                .unwrap_err()
                .to_string()
                .contains("control")
        );
        assert!(
            d.gate("PauliX", &[], &[5], false, 0)
                .unwrap_err()
                .to_string()
                .contains("wire 5")
        );
        assert!(d.measure(0, Some(1)).is_err());
        assert!(d.allocate(2).is_err(), "allocated twice");
        let mut big = Device::new(&kw).unwrap();
        assert!(big.allocate(1 << 40).is_err());
    }
}
