//! The C ABI under arbitrary call sequences: the bytes choose calls and their arguments —
//! handles that were issued, destroyed or made up, enum strings that are right, wrong or not
//! UTF-8, lengths of every size, NULL where a pointer is optional or not. Pointers that are
//! not NULL are always valid for what they are declared (the ABI cannot check that, and its
//! contract says so). Sessions use the in-process `memcpy` transport (and `rdma` names, which
//! fail at set-up on a machine without a device) with timeouts of at most 30 ms (the default
//! configuration, NULL, only for coprocessors, which never wait), so one input runs in
//! milliseconds. Each call must return a known status other than PANIC, a reply is
//! never longer than the reply size set, and every session is destroyed at the end.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char};
use std::sync::atomic::{AtomicU64, Ordering};

use backline::backline_status::{self, *};
use backline::*;

use crate::Bytes;

/// Keys of one input's sessions: fresh per input, so inputs never see each other's sessions.
static INPUT: AtomicU64 = AtomicU64::new(0);

const OPS_PER_INPUT: usize = 48;

struct Run {
    handles: Vec<*mut backline_session>,
    keys: [CString; 2],
    /// The reply size set on each controller handle.
    reply_caps: HashMap<usize, usize>,
    payload: Vec<u8>,
    last_error: Vec<u8>,
}

fn known(s: backline_status) -> backline_status {
    assert_ne!(
        s,
        BACKLINE_STATUS_PANIC,
        "a panic reached the boundary: {}",
        last_error()
    );
    if trace() {
        eprintln!(
            "  -> {s:?} {}",
            if s == BACKLINE_STATUS_OK {
                String::new()
            } else {
                last_error()
            }
        );
    }
    s
}

/// `BACKLINE_FUZZ_TRACE=1` prints every call and its status (to read what an input does).
fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("BACKLINE_FUZZ_TRACE").is_some())
}

fn last_error() -> String {
    let mut buf = vec![0u8; 512];
    // SAFETY: `buf` is writable for its length.
    unsafe { backline_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    CStr::from_bytes_until_nul(&buf)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl Run {
    fn string(&self, b: &mut Bytes<'_>, choices: &[&str]) -> Option<CString> {
        let c = b.u8() as usize;
        if c < 200 {
            Some(CString::new(choices[c % choices.len()]).expect("no NUL in the choices"))
        } else if c < 240 {
            // Bytes of the input, NULs dropped: garbage, often not UTF-8.
            let raw: Vec<u8> = b.bytes(24).iter().copied().filter(|&x| x != 0).collect();
            Some(CString::new(raw).expect("NULs were dropped"))
        } else {
            None
        }
    }

    fn handle(&self, b: &mut Bytes<'_>) -> *mut backline_session {
        let c = b.u8();
        match c {
            0..=199 if !self.handles.is_empty() => self.handles[c as usize % self.handles.len()],
            200..=219 => std::ptr::null_mut(),
            // A made-up handle: any bit pattern. The ABI never dereferences a handle.
            _ => b.u64() as usize as *mut backline_session,
        }
    }

    fn config(&self, b: &mut Bytes<'_>, transport: &CString) -> backline_config {
        let mut c = std::mem::MaybeUninit::<backline_config>::uninit();
        // SAFETY: `c` is writable for one config.
        known(unsafe { backline_config_default(c.as_mut_ptr()) });
        // SAFETY: `backline_config_default` returned OK (known() would have stopped a PANIC,
        // and it cannot fail with a valid pointer), so `c` is initialised.
        let mut c = unsafe { c.assume_init() };
        c.transport = transport.as_ptr();
        let geometry = |b: &mut Bytes<'_>, small: u32| match b.u8() % 4 {
            // Not a power of two (or 0): refused before anything is allocated.
            0 => b.u32() | 3,
            1 => 0,
            _ => small << (b.u8() % 4),
        };
        c.ring_depth = geometry(b, 1);
        c.slot_bytes = geometry(b, 64);
        c.in_flight = b.u8() as u32 % 12;
        c.spin_us = match b.u8() % 4 {
            0 => b.u64() as i64,
            1 => -1,
            2 => 0,
            _ => b.u8() as i64,
        };
        c.reply_timeout_ms = b.u8() as u32 % 30;
        c.setup_timeout_ms = b.u8() as u32 % 30;
        c.rdma_port = b.u8();
        c.rdma_gid_index = b.u16() as i16;
        c
    }

    fn check_reply(&self, h: *mut backline_session, r: &backline_reply) {
        if let Some(&cap) = self.reply_caps.get(&(h as usize)) {
            assert!(r.payload_len <= cap, "a reply longer than the reply size");
        }
    }

    fn call(&mut self, b: &mut Bytes<'_>) {
        let op = b.u8() % 18;
        if trace() {
            eprintln!("op {op} ({} sessions)", self.handles.len());
        }
        match op {
            0 | 1 => self.create(b),
            2 => self.get_session(b),
            3 => self.connect(b),
            4 => self.exchange_keys(b),
            5 => self.establish_channel(b),
            6 => self.set_message_sizes(b),
            7 => self.set_builtin(b),
            8 => self.start(b),
            9 => self.stage_payload(b),
            10 => self.post(b),
            11 | 12 => self.reply(b),
            13 => self.stop(b),
            14 => self.destroy(b),
            15 => self.status_name(b),
            16 => self.copy_last_error(b),
            _ => self.round_trip(b),
        }
    }

    /// `backline_session_create` with strings, a configuration and an out-pointer chosen by the bytes.
    fn create(&mut self, b: &mut Bytes<'_>) {
        let target = self.string(b, &["cpu", "cpu", "gpu", "fpga"]);
        let role = self.string(b, &["controller", "coprocessor"]);
        let key = self.keys[b.u8() as usize % 2].clone();
        let transport = self
            .string(b, &["memcpy", "memcpy", "memcpy", "rdma"])
            .unwrap_or_default();
        let config = self.config(b, &transport);
        // NULL means the defaults, whose timeouts are seconds: only a coprocessor,
        // which never waits on its own, gets it (a controller with the defaults
        // waited 5 s for a memcpy coprocessor that was never started).
        let is_coprocessor = role.as_deref() == Some(c"coprocessor");
        let with_config = !(b.u8().is_multiple_of(4) && is_coprocessor);
        let mut out: *mut backline_session = std::ptr::null_mut();
        let out_ptr = if b.u8().is_multiple_of(16) {
            std::ptr::null_mut()
        } else {
            &mut out as *mut _
        };
        let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        // SAFETY: every pointer is NULL or valid for the call.
        let s = known(unsafe {
            backline_session_create(
                ptr(&target),
                ptr(&role),
                key.as_ptr(),
                if with_config {
                    &config
                } else {
                    std::ptr::null()
                },
                out_ptr,
            )
        });
        if s == BACKLINE_STATUS_OK {
            assert!(!out.is_null());
            self.handles.push(out);
        }
    }

    /// `backline_get_session` by role and key.
    fn get_session(&mut self, b: &mut Bytes<'_>) {
        let role = self.string(b, &["controller", "coprocessor"]);
        let key = self.keys[b.u8() as usize % 2].clone();
        let mut out = std::ptr::null_mut();
        let role_ptr = role.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        // SAFETY: pointers are NULL or valid.
        known(unsafe { backline_get_session(role_ptr, key.as_ptr(), &mut out) });
    }

    /// `backline_session_connect` to a key, an empty peer or NULL.
    fn connect(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        let peer = match b.u8() % 4 {
            0 => None,
            1 => Some(CString::new("").expect("no NUL")),
            _ => Some(self.keys[b.u8() as usize % 2].clone()),
        };
        let port = b.u16();
        let p = peer.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        // SAFETY: `peer` is NULL or a C string.
        known(unsafe { backline_session_connect(h, p, port) });
    }

    /// `backline_session_exchange_keys`.
    fn exchange_keys(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        known(backline_session_exchange_keys(h));
    }

    /// `backline_session_establish_channel` naming a transport, garbage or NULL.
    fn establish_channel(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        let t = self.string(b, &["memcpy", "udp", "shm", "rdma"]);
        let p = t.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        // SAFETY: NULL or a C string.
        known(unsafe { backline_session_establish_channel(h, p) });
    }

    /// `backline_session_set_message_sizes`, small or any sizes; remembers the reply size set.
    fn set_message_sizes(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        let (req, rep) = match b.u8() % 3 {
            0 => (b.u64() as usize, b.u64() as usize),
            _ => (b.u16() as usize % 5000, b.u16() as usize % 5000),
        };
        if known(backline_session_set_message_sizes(h, req, rep)) == BACKLINE_STATUS_OK {
            self.reply_caps.insert(h as usize, rep);
        }
    }

    /// `backline_session_set_coprocessor_builtin` with a spec that is right, wrong or NULL.
    fn set_builtin(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        let id = match b.u8() % 4 {
            0 => b.u32(),
            _ => b.u8() as u32 % 4,
        };
        let spec = self.string(
            b,
            &[
                "echo",
                "steane",
                "gpu:echo",
                "bposd:nope",
                "bposd:steane",
                "x.so:f",
            ],
        );
        let p = spec.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        // SAFETY: NULL or a C string.
        known(unsafe { backline_session_set_coprocessor_builtin(h, id, p) });
    }

    /// `backline_session_start`.
    fn start(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        known(backline_session_start(h));
    }

    /// `backline_session_stage_payload` of any length, or NULL.
    fn stage_payload(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        let len = match b.u8() % 8 {
            0 => b.u16() as usize,
            _ => b.u8() as usize % 40,
        };
        let id = b.u8() as u32 % 3;
        self.payload.resize(len.max(self.payload.len()), 0xA5);
        let p = if b.u8().is_multiple_of(16) {
            std::ptr::null()
        } else {
            self.payload.as_ptr()
        };
        // SAFETY: `p` is NULL or valid for `len` bytes.
        known(unsafe { backline_session_stage_payload(h, p.cast(), len, id) });
    }

    /// `backline_session_post`, with or without the round out-pointer.
    fn post(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        let mut round = 0u64;
        let p = if b.u8().is_multiple_of(2) {
            std::ptr::null_mut()
        } else {
            &mut round as *mut u64
        };
        // SAFETY: NULL or valid.
        known(unsafe { backline_session_post(h, p) });
    }

    /// `backline_session_collect` or `backline_session_reply_slot`; an OK reply is checked.
    fn reply(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        let collect = b.u8().is_multiple_of(2);
        let mut reply = std::mem::MaybeUninit::<backline_reply>::uninit();
        let p = if b.u8().is_multiple_of(16) {
            std::ptr::null_mut()
        } else {
            reply.as_mut_ptr()
        };
        // SAFETY: NULL or valid for one reply.
        let s = known(unsafe {
            if collect {
                backline_session_collect(h, p)
            } else {
                backline_session_reply_slot(h, p)
            }
        });
        if s == BACKLINE_STATUS_OK {
            // SAFETY: an OK status wrote the reply.
            let r = unsafe { reply.assume_init() };
            self.check_reply(h, &r);
            assert!(r.payload_len == 0 || !r.payload.is_null());
        }
    }

    /// `backline_session_stop`.
    fn stop(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        known(backline_session_stop(h));
    }

    /// `backline_session_destroy`; a destroyed handle is forgotten.
    fn destroy(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        if known(backline_session_destroy(h)) == BACKLINE_STATUS_OK {
            self.handles.retain(|&x| x != h);
        }
    }

    /// `backline_status_name` of any number: "unknown status" exactly past the last status.
    fn status_name(&mut self, b: &mut Bytes<'_>) {
        let status = b.u32();
        let name = backline_status_name(status);
        assert!(!name.is_null());
        // SAFETY: the ABI returns static C strings.
        let name = unsafe { CStr::from_ptr(name) }
            .to_str()
            .expect("ASCII names");
        assert_eq!(
            name == "unknown status",
            status > BACKLINE_STATUS_NOT_ADMITTED as u32
        );
    }

    /// `backline_last_error` into a buffer of any size, or NULL.
    fn copy_last_error(&mut self, b: &mut Bytes<'_>) {
        let cap = b.u16() as usize % 300;
        self.last_error.resize(cap.max(1), 0);
        let null = b.u8().is_multiple_of(4);
        let p: *mut c_char = if null {
            std::ptr::null_mut()
        } else {
            self.last_error.as_mut_ptr().cast()
        };
        // SAFETY: NULL or writable for `cap` bytes.
        let n = unsafe { backline_last_error(p, if null { b.u64() as usize } else { cap }) };
        if !null && cap > 0 {
            let s = CStr::from_bytes_until_nul(&self.last_error[..cap])
                .expect("NUL-terminated within cap");
            assert!(s.to_bytes().len() <= n);
        }
    }

    /// A round trip on whatever handle the bytes pick: stage, post, collect.
    fn round_trip(&mut self, b: &mut Bytes<'_>) {
        let h = self.handle(b);
        let msg = b.bytes(32).to_vec();
        // SAFETY: valid pointers and lengths.
        unsafe {
            known(backline_session_stage_payload(
                h,
                msg.as_ptr().cast(),
                msg.len(),
                0,
            ));
            known(backline_session_post(h, std::ptr::null_mut()));
            let mut reply = std::mem::MaybeUninit::<backline_reply>::uninit();
            if known(backline_session_collect(h, reply.as_mut_ptr())) == BACKLINE_STATUS_OK {
                self.check_reply(h, &reply.assume_init());
            }
        }
    }
}

/// The target: up to 48 calls, then every session destroyed.
pub fn calls(data: &[u8]) {
    let n = INPUT.fetch_add(1, Ordering::Relaxed);
    let mut run = Run {
        handles: Vec::new(),
        keys: [
            CString::new(format!("fuzz-{}-{n}-a", std::process::id())).expect("no NUL"),
            CString::new(format!("fuzz-{}-{n}-b", std::process::id())).expect("no NUL"),
        ],
        reply_caps: HashMap::new(),
        payload: Vec::new(),
        last_error: Vec::new(),
    };
    let mut b = Bytes::new(data);
    for _ in 0..OPS_PER_INPUT {
        if b.is_empty() {
            break;
        }
        run.call(&mut b);
    }
    // Coprocessors last: a controller's stop says bye to a peer still serving.
    run.handles.reverse();
    for h in std::mem::take(&mut run.handles) {
        let s = known(backline_session_destroy(h));
        assert!(
            matches!(
                s,
                BACKLINE_STATUS_OK
                    | BACKLINE_STATUS_STUCK
                    | BACKLINE_STATUS_TIMEOUT
                    | BACKLINE_STATUS_ERROR
            ),
            "destroy of an issued handle: {s:?}: {}",
            last_error()
        );
        assert_eq!(backline_session_destroy(h), BACKLINE_STATUS_STALE_HANDLE);
    }
}
