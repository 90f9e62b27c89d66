//! Fuzz targets for every parser of untrusted input and for the C ABI: each is a function of
//! arbitrary bytes that must return normally for every input — no panic, no abort, no hang —
//! and that asserts what must hold of what it parsed (a record that decodes re-encodes to the
//! same bytes, a message never reaches outside its slot, a status is always a known one).
//!
//! The same functions run three ways: under AFL++ (`scripts/fuzz.sh`, the `afl` feature's
//! harness in `src/bin/fuzz.rs`), over the checked-in corpora and every crash ever found
//! (`tests/corpus.rs`, part of the ordinary test suite), and over seeded random inputs there.

use std::path::{Path, PathBuf};

mod abi;
mod parsers;

/// A fuzz target: its name (the corpus directory and the harness argument) and its function.
pub struct Target {
    /// Name, e.g. `handshake`.
    pub name: &'static str,
    /// What it feeds the bytes to.
    pub what: &'static str,
    /// The function under test.
    pub run: fn(&[u8]),
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "wire-message",
        what: "backline_wire::decode_message and SlotHeader (a slot's header and payload)",
        run: parsers::wire_message,
    },
    Target {
        name: "handshake",
        what: "backline_wire::Handshake::decode (the set-up record of udp, shm, rdma)",
        run: parsers::handshake,
    },
    Target {
        name: "ring-slots",
        what: "backline_ring::RingView::poll over ring memory a corrupt peer wrote",
        run: parsers::ring_slots,
    },
    Target {
        name: "pacer",
        what: "backline_pacer: cadence, parse_setting, PacerConfig::validate, Pacer",
        run: parsers::pacer,
    },
    Target {
        name: "matrix",
        what: "backline_decoders alist, dense and syndrome readers",
        run: parsers::matrix,
    },
    Target {
        name: "dem",
        what: "backline_decoders::dem::DetectorErrorModel::parse (stim detector error models)",
        run: parsers::dem,
    },
    Target {
        name: "dem-limits",
        what: "DetectorErrorModel::parse_with under small DemLimits (expansion memory bounded)",
        run: parsers::dem_limits,
    },
    Target {
        name: "dem-print",
        what: "DetectorErrorModel's Display: a model that parses prints back to the same model",
        run: parsers::dem_print,
    },
    Target {
        name: "mobius",
        what: "the Möbius colour-code decoder built on any model, then decoding shots",
        run: parsers::mobius,
    },
    Target {
        name: "stream-settings",
        what: "stream: spec settings (windows, iterations, streams) and the decoder they build",
        run: parsers::stream_settings,
    },
    Target {
        name: "stream-model",
        what: "models read for streaming (rolled when their rounds repeat) and their streams",
        run: parsers::rolled_stream,
    },
    Target {
        name: "responder-spec",
        what: "responder specs: bposd:CODE[:SETTINGS] codes and settings, built-in names",
        run: parsers::responder_spec,
    },
    Target {
        name: "cuqr-frame",
        what: "backline_wire::cuqr request and response frames (NVIDIA's realtime RPC)",
        run: parsers::cuqr_frame,
    },
    Target {
        name: "stream-op",
        what: "backline_wire::stream payloads (enqueue, get_corrections, reset, replies)",
        run: parsers::stream_op,
    },
    Target {
        name: "board-config",
        what: "backline_apu::config::Config::from_toml (the board's TOML configuration)",
        run: parsers::board_config,
    },
    Target {
        name: "c-abi",
        what: "sequences of backline_* C calls with arbitrary arguments",
        run: abi::calls,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The checked-in corpus directory of `name`: seeds, and every input that ever crashed it.
pub fn corpus_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name)
}

/// Reads fuzz bytes as a stream of small decisions; past the end every read is zero, so any
/// prefix of an input is an input.
pub(crate) struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Bytes<'a> {
        Bytes { data, pos: 0 }
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }
    pub(crate) fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub(crate) fn u64(&mut self) -> u64 {
        (self.u32() as u64) | (self.u32() as u64) << 32
    }
    /// Up to `max` bytes, its length the next byte.
    pub(crate) fn bytes(&mut self, max: usize) -> &'a [u8] {
        let n = (self.u8() as usize).min(max);
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos = start + n;
        &self.data[start..end]
    }
    /// Everything not read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        self.pos = self.data.len();
        &self.data[start..]
    }
}
