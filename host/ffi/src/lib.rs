//! The C ABI of backline's session life cycle (SPEC §4): `create → connect → exchange_keys →
//! establish_channel → set_message_sizes | set_coprocessor_fn → start → rounds → stop →
//! destroy`, each a function returning a [`backline_status`].
//!
//! Nothing crosses the boundary but status codes and plain data: every function runs behind a
//! panic boundary, and a session handle is an opaque token (slot index and generation), never
//! a pointer the library dereferences, so a NULL, stale or made-up handle is an error code, not
//! a crash. The message of the last failure on the calling thread is available through
//! [`backline_last_error`].
//!
//! The header `include/backline.h` is generated from this file by cbindgen and checked in; a
//! test fails when it is out of date.
#![allow(non_camel_case_types)]

mod handles;

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use backline_responder::{CSymbol, CoprocessorFn, Responder};
use backline_transport::{
    Controller as _, Coprocessor as _, Error, Hardware, Registry, Role, Session as _,
    SessionConfig, SessionRef, TransportKind, WaitPolicy,
};
use backline_wire::Geometry;

/// Result of every call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum backline_status {
    /// Success.
    BACKLINE_STATUS_OK = 0,
    /// A failure not covered below; see `backline_last_error`.
    BACKLINE_STATUS_ERROR = 1,
    /// An allocation failed.
    BACKLINE_STATUS_OUT_OF_MEMORY = 2,
    /// A wait ran past its timeout (reply, handshake).
    BACKLINE_STATUS_TIMEOUT = 3,
    /// The session cannot go on: an earlier round was lost or the peer went away. Stop and
    /// destroy it.
    BACKLINE_STATUS_STUCK = 4,
    /// The handle argument is NULL.
    BACKLINE_STATUS_NULL_HANDLE = 5,
    /// The handle was destroyed, or never issued.
    BACKLINE_STATUS_STALE_HANDLE = 6,
    /// The call came at the wrong point of the life cycle.
    BACKLINE_STATUS_OUT_OF_ORDER = 7,
    /// A pointer, string or value argument is unusable.
    BACKLINE_STATUS_INVALID_ARGUMENT = 8,
    /// `reply_slot`: the reply has not arrived yet.
    BACKLINE_STATUS_NOT_READY = 9,
    /// `in_flight` rounds are outstanding: collect one first.
    BACKLINE_STATUS_BACKPRESSURE = 10,
    /// A panic inside the library was caught; the session may be unusable.
    BACKLINE_STATUS_PANIC = 11,
    /// The coprocessor answered nothing to our hello: it admits only controllers that hold
    /// its key (`config.token_file`), and ours was missing or another (or nothing serves at
    /// the address).
    BACKLINE_STATUS_NOT_ADMITTED = 12,
}

use backline_status::*;

/// Opaque session handle. Never dereferenced: it encodes a slot and a generation.
pub struct backline_session {
    _private: [u8; 0],
}

/// Settings of a session. Initialise with `backline_config_default`, then change fields.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct backline_config {
    /// "memcpy", "shm", "udp" or "rdma" (NUL-terminated; NULL = "memcpy").
    pub transport: *const c_char,
    /// Slots per ring, a power of two.
    pub ring_depth: u32,
    /// Bytes per slot, a power of two ≥ 64.
    pub slot_bytes: u32,
    /// Rounds a controller may have outstanding (1 ..= ring_depth).
    pub in_flight: u32,
    /// Spin budget in µs before blocking: 0 = always block, -1 = never block.
    pub spin_us: i64,
    /// Longest wait for one reply, ms.
    pub reply_timeout_ms: u32,
    /// Longest wait for connection set-up, ms.
    pub setup_timeout_ms: u32,
    /// rdma: the device name, e.g. "rxe0" or "mlx5_0" (NUL-terminated; NULL = the first one).
    pub rdma_device: *const c_char,
    /// rdma: the device's port (1-based).
    pub rdma_port: u8,
    /// rdma: index into the port's GID table, or -1 for the first RoCE v2 GID holding an
    /// IPv4 address (RoCE v2 is index 1 on Soft-RoCE).
    pub rdma_gid_index: i16,
    /// udp, rdma: a token file holding the pre-shared key of admission (NUL-terminated path;
    /// NULL = none). A controller proves it holds the key in its hello; a coprocessor answers
    /// only controllers that do. The file must be private to its owner (mode 0600).
    pub token_file: *const c_char,
}

/// A reply. `payload` points into the session's ring and stays valid until the next
/// `stage_payload`, `post`, `stop` or `destroy` on the session.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct backline_reply {
    /// The round (0-based) this answers.
    pub round: u64,
    /// Its wire sequence number.
    pub seq: u32,
    /// The request's decoder id, echoed.
    pub decoder_id: u32,
    /// 0 ok, 1 unknown decoder, 2 bad length, 3 decoder failed.
    pub status: u16,
    /// Reply bytes.
    pub payload: *const u8,
    /// Number of reply bytes.
    pub payload_len: usize,
}

/// A coprocessor function, as in SPEC §3: returns the bytes written to `out` (at most
/// `out_cap`), or `SIZE_MAX` on failure.
pub type backline_coprocessor_fn = Option<
    unsafe extern "C" fn(
        input: *const c_void,
        in_len: usize,
        out: *mut c_void,
        out_cap: usize,
        ctx: *mut c_void,
    ) -> usize,
>;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn set_error(msg: String) {
    LAST_ERROR.with(|e| *e.borrow_mut() = msg);
}

/// Failures inside the ABI layer, before they become a status.
enum Fail {
    Status(backline_status, String),
    Session(Error),
}

impl Fail {
    /// Its status and message.
    fn parts(self) -> (backline_status, String) {
        match self {
            Fail::Status(s, m) => (s, m),
            Fail::Session(e) => (status_of(&e), e.to_string()),
        }
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Session(e)
    }
}

fn invalid(msg: impl Into<String>) -> Fail {
    Fail::Status(BACKLINE_STATUS_INVALID_ARGUMENT, msg.into())
}

/// The status of a session error: every variant named (no catch-all), so a new variant of
/// `backline_transport::Error` does not build until it has a status here.
fn status_of(e: &Error) -> backline_status {
    match e {
        Error::OutOfOrder { .. } | Error::NothingStaged | Error::NothingInFlight => {
            BACKLINE_STATUS_OUT_OF_ORDER
        }
        Error::Timeout { .. } => BACKLINE_STATUS_TIMEOUT,
        Error::NotAdmitted { .. } => BACKLINE_STATUS_NOT_ADMITTED,
        Error::Failed(_) | Error::PeerGone(_) | Error::Stopped { .. } | Error::Panicked { .. } => {
            BACKLINE_STATUS_STUCK
        }
        Error::Backpressure(_) => BACKLINE_STATUS_BACKPRESSURE,
        // Hop probes fail only for want of memory (and the ABI does not enable them).
        Error::OutOfMemory { .. } | Error::Probes(_) => BACKLINE_STATUS_OUT_OF_MEMORY,
        Error::StaleHandle => BACKLINE_STATUS_STALE_HANDLE,
        Error::Invalid(_)
        | Error::UnknownTransport(_)
        | Error::MessageTooLarge { .. }
        | Error::TokenFile { .. }
        | Error::Geometry(_) => BACKLINE_STATUS_INVALID_ARGUMENT,
        Error::Unsupported(_)
        | Error::DuplicateKey { .. }
        | Error::NoPeer(_)
        | Error::InUse(_)
        | Error::GeometryMismatch { .. }
        | Error::Rejected(_)
        | Error::Handshake(_)
        | Error::BadReply { .. }
        | Error::Protocol(_)
        | Error::NotBackline { .. }
        | Error::Io { .. } => BACKLINE_STATUS_ERROR,
    }
}

/// Runs `f` behind the panic boundary and maps its outcome to a status, recording a message
/// for `backline_last_error`.
fn boundary(f: impl FnOnce() -> Result<(), Fail>) -> backline_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => BACKLINE_STATUS_OK,
        Ok(Err(fail)) => {
            let (s, msg) = fail.parts();
            set_error(msg);
            s
        }
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_error(format!("internal panic: {msg}"));
            BACKLINE_STATUS_PANIC
        }
    }
}

/// A NUL-terminated string argument, or an error naming the parameter.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that lives for the call.
unsafe fn cstr<'a>(p: *const c_char, what: &str) -> Result<&'a str, Fail> {
    if p.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-null, NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| invalid(format!("{what} is not UTF-8")))
}

/// Writes the defaults (memcpy, 8 × 64-byte slots, 1 in flight, 200 µs spin, 1 s reply
/// timeout, 5 s set-up timeout) into `*out`.
///
/// # Safety
/// `out` is NULL or valid for writing one `backline_config`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_config_default(out: *mut backline_config) -> backline_status {
    boundary(|| {
        if out.is_null() {
            return Err(invalid("out is NULL"));
        }
        let d = SessionConfig::default();
        // SAFETY: non-null and writable by contract.
        unsafe {
            out.write(backline_config {
                transport: c"memcpy".as_ptr(),
                ring_depth: d.geometry.depth,
                slot_bytes: d.geometry.slot_bytes,
                in_flight: d.in_flight,
                spin_us: d.wait.as_micros(),
                reply_timeout_ms: d.reply_timeout.as_millis() as u32,
                setup_timeout_ms: d.setup_timeout.as_millis() as u32,
                rdma_device: std::ptr::null(),
                rdma_port: d.rdma.port,
                rdma_gid_index: -1,
                token_file: std::ptr::null(),
            })
        };
        Ok(())
    })
}

fn session_config(c: &backline_config) -> Result<SessionConfig, Fail> {
    let transport = if c.transport.is_null() {
        TransportKind::Memcpy
    } else {
        // SAFETY: non-null, NUL-terminated by the caller's contract for config strings.
        unsafe { cstr(c.transport, "config.transport") }?.parse()?
    };
    let wait = WaitPolicy::from_micros(c.spin_us).map_err(invalid)?;
    let config = SessionConfig {
        transport,
        geometry: Geometry {
            depth: c.ring_depth,
            slot_bytes: c.slot_bytes,
        },
        in_flight: c.in_flight,
        wait,
        reply_timeout: std::time::Duration::from_millis(c.reply_timeout_ms as u64),
        setup_timeout: std::time::Duration::from_millis(c.setup_timeout_ms as u64),
        pin_cpu: None,
        rdma: backline_transport::RdmaOptions {
            device: if c.rdma_device.is_null() {
                None
            } else {
                // SAFETY: non-null, NUL-terminated by the caller's contract for config strings.
                Some(unsafe { cstr(c.rdma_device, "config.rdma_device") }?.to_string())
            },
            port: c.rdma_port,
            gid_index: match c.rdma_gid_index {
                -1 => None,
                i @ 0..=255 => Some(i as u8),
                i => {
                    return Err(invalid(format!(
                        "config.rdma_gid_index {i}: 0 to 255, or -1 for automatic"
                    )));
                }
            },
        },
        key: if c.token_file.is_null() {
            None
        } else {
            // SAFETY: non-null, NUL-terminated by the caller's contract for config strings.
            let path = unsafe { cstr(c.token_file, "config.token_file") }?;
            Some(backline_transport::AdmissionKey::from_file(
                std::path::Path::new(path),
            )?)
        },
    };
    config.validate()?;
    Ok(config)
}

fn parse_role(s: &str) -> Result<Role, Fail> {
    match s {
        "controller" => Ok(Role::Controller),
        "coprocessor" => Ok(Role::Coprocessor),
        _ => Err(invalid(format!(
            "role `{s}`: expected \"controller\" or \"coprocessor\""
        ))),
    }
}

/// `create(target, role, key, config)`: a new session in state created, registered under
/// (role, key). `target` is the node's hardware: "cpu", or "gpu" for a coprocessor whose
/// functions run on a GPU (`gpu:` specs; see `backline_session_set_coprocessor_builtin`).
/// FPGA controllers are driven by `backline-apu` / `backline sim`, not by this library.
/// `config` NULL means the defaults.
///
/// # Safety
/// String arguments are NUL-terminated; `config` is NULL or valid; `out` is valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_session_create(
    target: *const c_char,
    role: *const c_char,
    key: *const c_char,
    config: *const backline_config,
    out: *mut *mut backline_session,
) -> backline_status {
    boundary(|| {
        if out.is_null() {
            return Err(invalid("out is NULL"));
        }
        // SAFETY: contract of this function.
        let (target, role, key) = unsafe {
            (
                cstr(target, "target")?,
                cstr(role, "role")?,
                cstr(key, "key")?,
            )
        };
        let role = parse_role(role)?;
        let hardware = match (target, role) {
            ("cpu", _) => Hardware::Cpu,
            ("gpu", Role::Coprocessor) => Hardware::Gpu,
            ("gpu", Role::Controller) => {
                return Err(invalid(
                    "target `gpu`: a GPU node is a coprocessor; controllers run on a cpu (or an fpga)",
                ));
            }
            _ => {
                return Err(invalid(format!(
                    "target `{target}`: expected \"cpu\" or \"gpu\" (FPGA controllers are driven by backline-apu and backline sim)"
                )));
            }
        };
        let config = if config.is_null() {
            SessionConfig::default()
        } else {
            // SAFETY: non-null and valid by contract.
            session_config(unsafe { &*config })?
        };
        let (h, _) = Registry::global().create(hardware, role, key, config)?;
        // SAFETY: `out` is non-null and writable by contract.
        unsafe { out.write(handles::to_ptr(h)) };
        Ok(())
    })
}

/// `get_session(role, key)`: the handle of a registered session.
///
/// # Safety
/// String arguments are NUL-terminated; `out` is valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_get_session(
    role: *const c_char,
    key: *const c_char,
    out: *mut *mut backline_session,
) -> backline_status {
    boundary(|| {
        if out.is_null() {
            return Err(invalid("out is NULL"));
        }
        // SAFETY: contract of this function.
        let (role, key) = unsafe { (cstr(role, "role")?, cstr(key, "key")?) };
        let role = parse_role(role)?;
        let h = Registry::global()
            .find(role, key)
            .ok_or_else(|| invalid(format!("no {} session with key `{key}`", role.name())))?;
        // SAFETY: non-null and writable by contract.
        unsafe { out.write(handles::to_ptr(h)) };
        Ok(())
    })
}

fn with_session(
    h: *mut backline_session,
    f: impl FnOnce(&SessionRef) -> Result<(), Fail>,
) -> backline_status {
    boundary(|| {
        let e = handles::lookup(h)?;
        f(&e.session)
    })
}

macro_rules! lock {
    ($m:expr) => {
        $m.lock().unwrap_or_else(|p| p.into_inner())
    };
}

fn common(
    h: *mut backline_session,
    f: impl FnOnce(&mut dyn backline_transport::Session) -> Result<(), Error>,
) -> backline_status {
    with_session(h, |s| {
        match s {
            SessionRef::Controller(c) => f(&mut *lock!(c))?,
            SessionRef::Coprocessor(c) => f(&mut *lock!(c))?,
        }
        Ok(())
    })
}

fn controller(
    h: *mut backline_session,
    call: &'static str,
    f: impl FnOnce(&mut backline_transport::ControllerSession) -> Result<(), Fail>,
) -> backline_status {
    with_session(h, |s| match s {
        SessionRef::Controller(c) => f(&mut lock!(c)),
        SessionRef::Coprocessor(_) => Err(Fail::Status(
            BACKLINE_STATUS_OUT_OF_ORDER,
            format!("{call} is a controller call; this is a coprocessor session"),
        )),
    })
}

fn coprocessor(
    h: *mut backline_session,
    call: &'static str,
    f: impl FnOnce(&mut backline_transport::CoprocessorSession) -> Result<(), Fail>,
) -> backline_status {
    with_session(h, |s| match s {
        SessionRef::Coprocessor(c) => f(&mut lock!(c)),
        SessionRef::Controller(_) => Err(Fail::Status(
            BACKLINE_STATUS_OUT_OF_ORDER,
            format!("{call} is a coprocessor call; this is a controller session"),
        )),
    })
}

/// `connect(peer, oob_port)`: names the coprocessor to reach (controller) or the address to
/// serve on (coprocessor). memcpy: a session key (empty = this session's key); shm: a segment
/// name; udp: `host[:port]`, `oob_port` used when no port is given.
///
/// # Safety
/// `peer` is NULL (= empty) or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_session_connect(
    session: *mut backline_session,
    peer: *const c_char,
    oob_port: u16,
) -> backline_status {
    let peer = if peer.is_null() {
        Ok("")
    } else {
        // SAFETY: NUL-terminated by contract.
        unsafe { cstr(peer, "peer") }
    };
    match peer {
        Ok(p) => common(session, |s| s.connect(p, oob_port)),
        Err(e) => boundary(|| Err(e)),
    }
}

/// `exchange_keys`: agrees the ring geometry with the peer.
#[unsafe(no_mangle)]
pub extern "C" fn backline_session_exchange_keys(
    session: *mut backline_session,
) -> backline_status {
    common(session, |s| s.exchange_keys())
}

/// `establish_channel(transport)`: sets up the rings. `transport` must name the session's
/// transport (or be NULL).
///
/// # Safety
/// `transport` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_session_establish_channel(
    session: *mut backline_session,
    transport: *const c_char,
) -> backline_status {
    let named = if transport.is_null() {
        Ok(None)
    } else {
        // SAFETY: NUL-terminated by contract.
        unsafe { cstr(transport, "transport") }
            .and_then(|t| t.parse::<TransportKind>().map(Some).map_err(Fail::Session))
    };
    match named {
        Ok(t) => common(session, |s| {
            if let Some(t) = t
                && t != s.config().transport
            {
                return Err(Error::Invalid(format!(
                    "establish_channel({t}) on a session created for {}",
                    s.config().transport
                )));
            }
            s.establish_channel()
        }),
        Err(e) => boundary(|| Err(e)),
    }
}

/// Controller role setup: the largest request and reply payloads.
#[unsafe(no_mangle)]
pub extern "C" fn backline_session_set_message_sizes(
    session: *mut backline_session,
    request_bytes: usize,
    reply_bytes: usize,
) -> backline_status {
    controller(session, "set_message_sizes", |c| {
        Ok(c.set_message_sizes(request_bytes, reply_bytes)?)
    })
}

/// Coprocessor role setup: registers a C function under `decoder_id`. `ctx` is passed to
/// every call.
///
/// # Safety
/// `func` follows the coprocessor-function contract and is safe to call from the session's
/// serving thread; `ctx` stays valid until the session is destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_session_set_coprocessor_fn(
    session: *mut backline_session,
    decoder_id: u32,
    func: backline_coprocessor_fn,
    ctx: *mut c_void,
) -> backline_status {
    let gpu = handles::lookup(session).map(|e| e.hardware == Hardware::Gpu);
    coprocessor(session, "set_coprocessor_fn", |c| {
        if gpu? {
            return Err(invalid(
                "a GPU coprocessor runs GPU functions: register a gpu: spec with set_coprocessor_builtin",
            ));
        }
        let Some(func) = func else {
            return Err(invalid("func is NULL"));
        };
        let f: CoprocessorFn = func;
        // SAFETY: the caller registers a function that follows the documented contract and
        // keeps `ctx` valid while the session lives.
        let r = unsafe { CSymbol::from_raw(&format!("c-fn-{decoder_id}"), f, ctx) };
        Ok(c.set_coprocessor_fn(decoder_id, Arc::new(r))?)
    })
}

/// Coprocessor role setup: registers the functions of a spec from `decoder_id` on: a built-in
/// (`"echo"`, `"steane"`), a C symbol by name (`"path/to/lib.so:symbol"`), BP+OSD from a CSS
/// code (`"bposd:CODE[:SETTINGS]"`: X checks on `decoder_id`, Z checks on `decoder_id + 1`), or
/// on a session of target "gpu" the GPU functions (`"gpu:echo"`, `"gpu:steane"`,
/// `"gpu:bposd:…"`, `"gpu:FILE.cu:FUNCTION"`; the `gpu:` prefix may be left out there). GPU
/// functions run where `BACKLINE_GPU_BACKEND` / `BACKLINE_GPU_DEVICE` say (default: the first
/// CUDA, else HIP, device; `emu` runs the kernels on CPU threads).
///
/// # Safety
/// `spec` is NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_session_set_coprocessor_builtin(
    session: *mut backline_session,
    decoder_id: u32,
    spec: *const c_char,
) -> backline_status {
    // SAFETY: NUL-terminated by contract.
    let spec = unsafe { cstr(spec, "spec") };
    let gpu = handles::lookup(session).map(|e| e.hardware == Hardware::Gpu);
    coprocessor(session, "set_coprocessor_builtin", |c| {
        let spec = spec?;
        let spec = match (gpu?, spec.starts_with("gpu:")) {
            (true, true) | (false, false) => spec.to_string(),
            (true, false) => format!("gpu:{spec}"),
            (false, true) => {
                return Err(invalid(format!(
                    "`{spec}` runs on a GPU: create the coprocessor session with target \"gpu\""
                )));
            }
        };
        let functions = backline_responder::functions_of(&spec, decoder_id)
            .map_err(|e| invalid(e.to_string()))?;
        for (id, r) in functions {
            let r: Arc<dyn Responder> = r;
            c.set_coprocessor_fn(id, r)?;
        }
        Ok(())
    })
}

/// `start`: rounds may flow (a coprocessor starts serving).
#[unsafe(no_mangle)]
pub extern "C" fn backline_session_start(session: *mut backline_session) -> backline_status {
    common(session, |s| s.start())
}

/// Copies `len` bytes at `payload` into the next round's request slot, for `decoder_id`.
///
/// # Safety
/// `payload` is valid for reading `len` bytes (may be NULL when `len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_session_stage_payload(
    session: *mut backline_session,
    payload: *const c_void,
    len: usize,
    decoder_id: u32,
) -> backline_status {
    controller(session, "stage_payload", |c| {
        // SAFETY: `payload` is valid for `len` bytes by this function's contract.
        let bytes = unsafe { payload_bytes(payload, len) }?;
        Ok(c.stage_payload(bytes, decoder_id)?)
    })
}

/// The `len` bytes at `payload` (none when `len` is 0, whatever `payload` is).
///
/// # Safety
/// `payload` is valid for reading `len` bytes when `len` is not 0, for the lifetime chosen.
unsafe fn payload_bytes<'a>(payload: *const c_void, len: usize) -> Result<&'a [u8], Fail> {
    if len == 0 {
        Ok(&[])
    } else if payload.is_null() {
        Err(invalid("payload is NULL"))
    } else {
        // SAFETY: non-null and valid for `len` bytes by the caller's contract.
        Ok(unsafe { std::slice::from_raw_parts(payload.cast(), len) })
    }
}

/// Publishes the staged request; writes its round number to `*round` when not NULL.
///
/// # Safety
/// `round` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_session_post(
    session: *mut backline_session,
    round: *mut u64,
) -> backline_status {
    controller(session, "post", |c| {
        let r = c.post()?;
        if !round.is_null() {
            // SAFETY: non-null and writable by contract.
            unsafe { round.write(r) };
        }
        Ok(())
    })
}

fn write_reply(out: *mut backline_reply, r: &backline_transport::Reply<'_>) -> Result<(), Fail> {
    if out.is_null() {
        return Err(invalid("out is NULL"));
    }
    // SAFETY: non-null and writable by the caller's contract.
    unsafe {
        out.write(backline_reply {
            round: r.round,
            seq: r.seq.0,
            decoder_id: r.decoder_id,
            status: r.status as u16,
            payload: r.payload.as_ptr(),
            payload_len: r.payload.len(),
        })
    };
    Ok(())
}

/// The oldest outstanding reply if it has arrived (`BACKLINE_STATUS_NOT_READY` otherwise),
/// without consuming it.
///
/// # Safety
/// `out` is valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_session_reply_slot(
    session: *mut backline_session,
    out: *mut backline_reply,
) -> backline_status {
    controller(session, "reply_slot", |c| match c.reply_slot()? {
        Some(r) => write_reply(out, &r),
        None => Err(Fail::Status(
            BACKLINE_STATUS_NOT_READY,
            "the reply has not arrived yet".into(),
        )),
    })
}

/// Waits (up to the reply timeout) for the oldest outstanding reply and consumes it.
///
/// # Safety
/// `out` is valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_session_collect(
    session: *mut backline_session,
    out: *mut backline_reply,
) -> backline_status {
    controller(session, "collect", |c| {
        if out.is_null() {
            return Err(invalid("out is NULL"));
        }
        let r = c.collect()?;
        write_reply(out, &r)
    })
}

/// One request of a fan-out round (`backline_post_all`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct backline_request {
    /// Payload bytes (may be NULL when `len` is 0).
    pub payload: *const c_void,
    /// Number of payload bytes.
    pub len: usize,
    /// The decoder id of the coprocessor function that answers it.
    pub decoder_id: u32,
}

/// The most sessions one fan-out round takes.
pub const BACKLINE_MAX_FANOUT: usize = 1024;

/// The controller sessions of a fan-out call, each looked up once: `sessions[0..n]`, distinct.
///
/// # Safety
/// `sessions` is valid for reading `n` handles.
unsafe fn fanout_sessions(
    sessions: *const *mut backline_session,
    n: usize,
    call: &str,
) -> Result<Vec<Arc<std::sync::Mutex<backline_transport::ControllerSession>>>, Fail> {
    if sessions.is_null() {
        return Err(invalid("sessions is NULL"));
    }
    if n == 0 || n > BACKLINE_MAX_FANOUT {
        return Err(invalid(format!(
            "n = {n}: a fan-out round takes 1..={BACKLINE_MAX_FANOUT} sessions"
        )));
    }
    // SAFETY: valid for `n` handles by contract.
    let handles = unsafe { std::slice::from_raw_parts(sessions, n) };
    let mut out = Vec::with_capacity(n);
    for (i, &h) in handles.iter().enumerate() {
        if handles[..i].contains(&h) {
            return Err(invalid(format!(
                "sessions[{i}] is sessions[{}] again: one request per session and round",
                handles[..i].iter().position(|&x| x == h).unwrap_or(0)
            )));
        }
        let at = |e: Fail| {
            let (s, m) = e.parts();
            Fail::Status(s, format!("sessions[{i}]: {m}"))
        };
        match handles::lookup(h).map_err(at)?.session {
            SessionRef::Controller(c) => out.push(c),
            SessionRef::Coprocessor(_) => {
                return Err(Fail::Status(
                    BACKLINE_STATUS_OUT_OF_ORDER,
                    format!(
                        "sessions[{i}]: {call} is a controller call; this is a coprocessor session"
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// The outcome of a fan-out call: `statuses[i]` for each session, and the first failure with
/// every failing session named in the message.
fn fanout_outcome(
    failed: Vec<(usize, backline_status, String)>,
    statuses: *mut backline_status,
    n: usize,
) -> Result<(), Fail> {
    if !statuses.is_null() {
        for i in 0..n {
            let s = failed
                .iter()
                .find(|f| f.0 == i)
                .map_or(BACKLINE_STATUS_OK, |f| f.1);
            // SAFETY: valid for writing `n` statuses by contract.
            unsafe { statuses.add(i).write(s) };
        }
    }
    match failed.first() {
        None => Ok(()),
        Some(&(_, first, _)) => {
            let msg: Vec<String> = failed
                .iter()
                .map(|(i, _, m)| format!("sessions[{i}]: {m}"))
                .collect();
            Err(Fail::Status(first, msg.join("; ")))
        }
    }
}

/// Fan-out, first half: stages `requests[i]` on `sessions[i]` and posts it, for every `i < n`
/// (distinct controller sessions, 1 ≤ n ≤ `BACKLINE_MAX_FANOUT`). A session that refuses is
/// named; the others are posted all the same. `statuses` (NULL, or room for `n`) receives
/// each session's status; the return value is the first failure's (its message names every
/// failing session).
///
/// # Safety
/// `sessions` and `requests` are valid for reading `n` elements, each request's payload for
/// its `len` bytes; `statuses` is NULL or valid for writing `n`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_post_all(
    sessions: *const *mut backline_session,
    n: usize,
    requests: *const backline_request,
    statuses: *mut backline_status,
) -> backline_status {
    boundary(|| {
        // SAFETY: by this function's contract.
        let list = unsafe { fanout_sessions(sessions, n, "post_all") }?;
        if requests.is_null() {
            return Err(invalid("requests is NULL"));
        }
        // SAFETY: valid for `n` requests by contract.
        let requests = unsafe { std::slice::from_raw_parts(requests, n) };
        let mut failed = Vec::new();
        for (i, (c, r)) in list.iter().zip(requests).enumerate() {
            // SAFETY: each request's payload is valid for its `len` bytes by contract.
            let bytes = match unsafe { payload_bytes(r.payload, r.len) } {
                Ok(b) => b,
                Err(e) => {
                    let (s, m) = e.parts();
                    failed.push((i, s, m));
                    continue;
                }
            };
            let mut c = lock!(c);
            if let Err(e) = c
                .stage_payload(bytes, r.decoder_id)
                .and_then(|()| c.post().map(drop))
            {
                failed.push((i, status_of(&e), e.to_string()));
            }
        }
        fanout_outcome(failed, statuses, n)
    })
}

/// Fan-out, second half: collects one reply from each of `sessions[0..n]` (the oldest
/// outstanding on each), writing it to `replies[i]` as it arrives: the sessions are polled in
/// turn, and when none has answered, the first one still out is waited for as
/// `backline_session_collect` waits. Each reply's payload stays valid until the next call on
/// its session. A session whose reply does not come within its reply timeout, or that fails,
/// is named, with its status in `statuses[i]`; the others' replies are all collected.
///
/// # Safety
/// `sessions` is valid for reading `n` handles, `replies` for writing `n` replies, `statuses`
/// NULL or valid for writing `n`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_collect_all(
    sessions: *const *mut backline_session,
    n: usize,
    replies: *mut backline_reply,
    statuses: *mut backline_status,
) -> backline_status {
    boundary(|| {
        // SAFETY: by this function's contract.
        let list = unsafe { fanout_sessions(sessions, n, "collect_all") }?;
        if replies.is_null() {
            return Err(invalid("replies is NULL"));
        }
        // The sessions are distinct, so their locks are taken once each.
        let mut guards: Vec<_> = list.iter().map(|c| lock!(c)).collect();
        let mut posted = vec![true; n];
        let mut failed = Vec::new();
        let r = backline_transport::collect_posted(&mut guards, &mut posted, |i, reply, _| {
            // SAFETY: `i < n`; `replies` is valid for writing `n` by contract.
            if let Err(e) = write_reply(unsafe { replies.add(i) }, &reply) {
                let (s, m) = e.parts();
                failed.push((i, s, m));
            }
        });
        if let Err(e) = r {
            failed.extend(
                e.failed
                    .into_iter()
                    .map(|(i, _, e)| (i, status_of(&e), e.to_string())),
            );
        }
        failed.sort_by_key(|f| f.0);
        fanout_outcome(failed, statuses, n)
    })
}

/// `stop`: ends the session with its peer. Allowed in any state.
#[unsafe(no_mangle)]
pub extern "C" fn backline_session_stop(session: *mut backline_session) -> backline_status {
    common(session, |s| s.stop())
}

/// `destroy`: stops the session if needed, unregisters it and invalidates the handle.
#[unsafe(no_mangle)]
pub extern "C" fn backline_session_destroy(session: *mut backline_session) -> backline_status {
    boundary(|| {
        let s = handles::remove(session)?.session;
        let r = match &s {
            SessionRef::Controller(c) => lock!(c).stop(),
            SessionRef::Coprocessor(c) => lock!(c).stop(),
        };
        Ok(r?)
    })
}

/// Copies the message of the last failed call on this thread into `buf` (NUL-terminated,
/// truncated to `cap`), and returns its full length. `buf` may be NULL to ask the length.
///
/// # Safety
/// `buf` is NULL or valid for writing `cap` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn backline_last_error(buf: *mut c_char, cap: usize) -> usize {
    catch_unwind(|| {
        LAST_ERROR.with(|e| {
            let e = e.borrow();
            if !buf.is_null() && cap > 0 {
                let n = e.len().min(cap - 1);
                // SAFETY: `buf` is writable for `cap` bytes and `n + 1 ≤ cap`.
                unsafe {
                    std::ptr::copy_nonoverlapping(e.as_ptr(), buf.cast(), n);
                    buf.add(n).write(0);
                }
            }
            e.len()
        })
    })
    .unwrap_or(0)
}

/// A static, NUL-terminated name of a status ("ok", "timeout", …); `"unknown status"` for a
/// value that is not a `backline_status`. (The argument is the status's number: a C caller
/// may pass any integer, which a Rust enum could not hold.)
#[unsafe(no_mangle)]
pub extern "C" fn backline_status_name(status: u32) -> *const c_char {
    let s: &'static CStr = match status {
        0 => c"ok",
        1 => c"error",
        2 => c"out of memory",
        3 => c"timeout",
        4 => c"stuck",
        5 => c"null handle",
        6 => c"stale handle",
        7 => c"out of order",
        8 => c"invalid argument",
        9 => c"not ready",
        10 => c"backpressure",
        11 => c"panic",
        12 => c"not admitted",
        _ => c"unknown status",
    };
    s.as_ptr()
}

// The numbers `backline_status_name` knows are the enum's.
const _: () = {
    assert!(BACKLINE_STATUS_OK as u32 == 0 && BACKLINE_STATUS_ERROR as u32 == 1);
    assert!(BACKLINE_STATUS_OUT_OF_MEMORY as u32 == 2 && BACKLINE_STATUS_TIMEOUT as u32 == 3);
    assert!(BACKLINE_STATUS_STUCK as u32 == 4 && BACKLINE_STATUS_NULL_HANDLE as u32 == 5);
    assert!(BACKLINE_STATUS_STALE_HANDLE as u32 == 6 && BACKLINE_STATUS_OUT_OF_ORDER as u32 == 7);
    assert!(BACKLINE_STATUS_INVALID_ARGUMENT as u32 == 8 && BACKLINE_STATUS_NOT_READY as u32 == 9);
    assert!(BACKLINE_STATUS_BACKPRESSURE as u32 == 10 && BACKLINE_STATUS_PANIC as u32 == 11);
    assert!(BACKLINE_STATUS_NOT_ADMITTED as u32 == 12);
};

#[cfg(test)]
mod tests {
    use super::*;
    use backline_transport::{ReplyProblem, State};
    use backline_wire::{GeometryError, HandshakeError, RejectReason};

    /// Each variant's place in the list below; no catch-all, so a new variant does not build
    /// until it has one (and then `every_error_has_its_status` fails until it has a case).
    fn ordinal(e: &Error) -> usize {
        match e {
            Error::OutOfOrder { .. } => 0,
            Error::UnknownTransport(_) => 1,
            Error::Unsupported(_) => 2,
            Error::DuplicateKey { .. } => 3,
            Error::NoPeer(_) => 4,
            Error::OutOfMemory { .. } => 5,
            Error::StaleHandle => 6,
            Error::InUse(_) => 7,
            Error::Invalid(_) => 8,
            Error::GeometryMismatch { .. } => 9,
            Error::Geometry(_) => 10,
            Error::MessageTooLarge { .. } => 11,
            Error::Rejected(_) => 12,
            Error::Handshake(_) => 13,
            Error::Timeout { .. } => 14,
            Error::Backpressure(_) => 15,
            Error::NothingStaged => 16,
            Error::NothingInFlight => 17,
            Error::BadReply { .. } => 18,
            Error::Protocol(_) => 19,
            Error::Failed(_) => 20,
            Error::Stopped { .. } => 21,
            Error::Panicked { .. } => 22,
            Error::Probes(_) => 23,
            Error::PeerGone(_) => 24,
            Error::Io { .. } => 25,
            Error::NotBackline { .. } => 26,
            Error::NotAdmitted { .. } => 27,
            Error::TokenFile { .. } => 28,
        }
    }
    const VARIANTS: usize = 29;

    #[test]
    fn every_error_has_its_status() {
        let text = || String::from("x");
        let geometry = Geometry::default();
        let cases = [
            (
                Error::OutOfOrder {
                    call: "post",
                    state: State::Created,
                    expected: "started",
                },
                BACKLINE_STATUS_OUT_OF_ORDER,
            ),
            (
                Error::UnknownTransport(text()),
                BACKLINE_STATUS_INVALID_ARGUMENT,
            ),
            (Error::Unsupported(text()), BACKLINE_STATUS_ERROR),
            (
                Error::DuplicateKey {
                    role: "controller",
                    key: text(),
                },
                BACKLINE_STATUS_ERROR,
            ),
            (Error::NoPeer(text()), BACKLINE_STATUS_ERROR),
            (
                Error::OutOfMemory {
                    what: text(),
                    bytes: 1,
                },
                BACKLINE_STATUS_OUT_OF_MEMORY,
            ),
            (Error::StaleHandle, BACKLINE_STATUS_STALE_HANDLE),
            (Error::InUse(text()), BACKLINE_STATUS_ERROR),
            (Error::Invalid(text()), BACKLINE_STATUS_INVALID_ARGUMENT),
            (
                Error::GeometryMismatch {
                    local: geometry,
                    peer: geometry,
                },
                BACKLINE_STATUS_ERROR,
            ),
            (
                Error::Geometry(GeometryError::BadDepth(3)),
                BACKLINE_STATUS_INVALID_ARGUMENT,
            ),
            (
                Error::MessageTooLarge {
                    size: 2,
                    capacity: 1,
                },
                BACKLINE_STATUS_INVALID_ARGUMENT,
            ),
            (Error::Rejected(RejectReason::Busy), BACKLINE_STATUS_ERROR),
            (
                Error::Handshake(HandshakeError::Magic),
                BACKLINE_STATUS_ERROR,
            ),
            (
                Error::Timeout {
                    what: text(),
                    waited: std::time::Duration::from_millis(1),
                },
                BACKLINE_STATUS_TIMEOUT,
            ),
            (Error::Backpressure(1), BACKLINE_STATUS_BACKPRESSURE),
            (Error::NothingStaged, BACKLINE_STATUS_OUT_OF_ORDER),
            (Error::NothingInFlight, BACKLINE_STATUS_OUT_OF_ORDER),
            (
                Error::BadReply {
                    round: 0,
                    problem: ReplyProblem::UnknownStatus(9),
                },
                BACKLINE_STATUS_ERROR,
            ),
            (Error::Protocol(text()), BACKLINE_STATUS_ERROR),
            (
                Error::NotBackline {
                    peer: text(),
                    what: "hello",
                    answer: text(),
                },
                BACKLINE_STATUS_ERROR,
            ),
            (
                Error::NotAdmitted {
                    peer: text(),
                    keyed: true,
                    waited: std::time::Duration::from_secs(5),
                    closed: false,
                },
                BACKLINE_STATUS_NOT_ADMITTED,
            ),
            (
                Error::TokenFile {
                    path: text().into(),
                    problem: backline_transport::TokenFileError::Empty,
                },
                BACKLINE_STATUS_INVALID_ARGUMENT,
            ),
            (Error::Failed(text()), BACKLINE_STATUS_STUCK),
            (Error::Stopped { seq: 1 }, BACKLINE_STATUS_STUCK),
            (Error::Panicked { thread: "server" }, BACKLINE_STATUS_STUCK),
            (probes_error(), BACKLINE_STATUS_OUT_OF_MEMORY),
            (Error::PeerGone(text()), BACKLINE_STATUS_STUCK),
            (
                Error::Io {
                    what: text(),
                    source: std::io::Error::other("x"),
                },
                BACKLINE_STATUS_ERROR,
            ),
        ];
        let mut seen = [false; VARIANTS];
        for (e, want) in &cases {
            assert_eq!(status_of(e), *want, "{e:?}");
            seen[ordinal(e)] = true;
        }
        let missing: Vec<usize> = (0..VARIANTS).filter(|&i| !seen[i]).collect();
        assert!(missing.is_empty(), "variants without a case: {missing:?}");
    }

    /// The error of hop probes that cannot be allocated.
    fn probes_error() -> Error {
        let mut c = backline_transport::ControllerSession::create(
            "ffi-probes-error",
            SessionConfig::default(),
        )
        .unwrap();
        let e = c.enable_probes(u64::MAX).unwrap_err();
        assert!(matches!(e, Error::Probes(_)), "{e}");
        e
    }
}
