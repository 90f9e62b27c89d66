//! The per-coprocessor table of functions, keyed by `decoder_id`, and the panic boundary.
//!
//! A function that panics is answered with [`Status::DecoderFailed`]; the panic is counted
//! ([`ResponderTable::panics`], and a line of [`ResponderTable::reports`]) and its first
//! message logged once (`log::error!`) — the default hook's message and backtrace are not
//! printed for it, so a function that panics on every round does not flood the terminal.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use backline_wire::{DecoderId, Status};

use crate::{Builtin, Responder};

/// Ids below this are looked up by index; others by binary search.
const DIRECT: usize = 64;

/// `decoder_id` → responder. Built before a server starts and read-only afterwards, so
/// several rings may dispatch through one table without locks.
#[derive(Clone, Default)]
pub struct ResponderTable {
    direct: Vec<Option<Arc<dyn Responder>>>,
    /// `builtin()` of each direct entry, cached so dispatch can run built-ins inline.
    direct_kind: Vec<Option<Builtin>>,
    sparse: Vec<(DecoderId, Arc<dyn Responder>)>,
    /// Panics of the functions, shared by the table's clones (one per serving thread).
    panics: Arc<Panics>,
}

/// The panics of one table's functions.
#[derive(Debug, Default)]
struct Panics {
    count: AtomicU64,
    /// The first: decoder id, function name, message.
    first: Mutex<Option<(DecoderId, String, String)>>,
}

thread_local! {
    /// Set while this thread runs a registered function: its panics are ours to report.
    static IN_FUNCTION: Cell<bool> = const { Cell::new(false) };
    /// The message of the last panic caught in a function on this thread.
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Installs (once per process) a panic hook that keeps the message of a panic inside a
/// registered function for the table to report, and hands every other panic to the hook that
/// was there before.
fn install_panic_hook() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_FUNCTION.with(Cell::get) {
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".into());
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = format!("{msg}{at}"));
            } else {
                previous(info);
            }
        }));
    });
}

impl std::fmt::Debug for ResponderTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.entries().map(|(id, r)| (id, r.name().to_string())))
            .finish()
    }
}

impl ResponderTable {
    /// An empty table.
    pub fn new() -> ResponderTable {
        ResponderTable::default()
    }

    /// A table with one responder under `decoder_id` 0.
    pub fn single(r: Arc<dyn Responder>) -> ResponderTable {
        let mut t = ResponderTable::new();
        t.insert(0, r);
        t
    }

    /// Registers `r` under `id`, replacing what was there; returns the old one.
    pub fn insert(&mut self, id: DecoderId, r: Arc<dyn Responder>) -> Option<Arc<dyn Responder>> {
        install_panic_hook();
        if (id as usize) < DIRECT {
            let i = id as usize;
            if self.direct.len() <= i {
                self.direct.resize(i + 1, None);
                self.direct_kind.resize(i + 1, None);
            }
            self.direct_kind[i] = r.builtin();
            self.direct[i].replace(r)
        } else {
            match self.sparse.binary_search_by_key(&id, |e| e.0) {
                Ok(i) => Some(std::mem::replace(&mut self.sparse[i].1, r)),
                Err(i) => {
                    self.sparse.insert(i, (id, r));
                    None
                }
            }
        }
    }

    /// The responder of `id`.
    #[inline]
    pub fn get(&self, id: DecoderId) -> Option<&Arc<dyn Responder>> {
        if (id as usize) < DIRECT {
            self.direct.get(id as usize)?.as_ref()
        } else {
            self.sparse
                .binary_search_by_key(&id, |e| e.0)
                .ok()
                .map(|i| &self.sparse[i].1)
        }
    }

    /// All entries in id order.
    pub fn entries(&self) -> impl Iterator<Item = (DecoderId, &Arc<dyn Responder>)> {
        self.direct
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|r| (i as DecoderId, r)))
            .chain(self.sparse.iter().map(|(i, r)| (*i, r)))
    }

    /// Number of registered functions.
    pub fn len(&self) -> usize {
        self.entries().count()
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The one coprocessor that serves every entry from its own rings, if there is one (all
    /// entries are functions of the same GPU kernel).
    pub fn common_ring_server(&self) -> Option<Arc<dyn backline_ring::RingServer>> {
        let mut common: Option<Arc<dyn backline_ring::RingServer>> = None;
        for (_, r) in self.entries() {
            let s = r.ring_server()?;
            match &common {
                Some(c) if !Arc::ptr_eq(c, &s) => return None,
                Some(_) => {}
                None => common = Some(s),
            }
        }
        common
    }

    /// The shutdown report lines of the entries that keep one, and one about panics if any
    /// function panicked.
    pub fn reports(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.entries().filter_map(|(_, r)| r.report()).collect();
        let n = self.panics();
        if n > 0 {
            let first = self.panics.first.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((id, name, msg)) = first.as_ref() {
                lines.push(format!(
                    "{n} round(s) answered decoder-failed because a function panicked (first: \
                     decoder {id}, `{name}`: {msg})"
                ));
            }
        }
        lines
    }

    /// How many calls of the table's functions panicked (each answered decoder-failed).
    pub fn panics(&self) -> u64 {
        self.panics.count.load(Ordering::Relaxed)
    }

    /// Counts a panic of `id`'s function `name`; the first is logged, with its message.
    #[cold]
    fn record_panic(&self, id: DecoderId, name: &str) {
        let msg = LAST_PANIC.with(|p| std::mem::take(&mut *p.borrow_mut()));
        // Relaxed: a statistic, read after the serving threads are joined.
        self.panics.count.fetch_add(1, Ordering::Relaxed);
        let mut first = self.panics.first.lock().unwrap_or_else(|p| p.into_inner());
        if first.is_none() {
            log::error!(
                "coprocessor function `{name}` (decoder {id}) panicked: {msg}; the round is \
                 answered decoder-failed, and later panics are counted, not logged"
            );
            *first = Some((id, name.to_string(), msg));
        }
    }

    /// Runs the responder of `id` on `input`, writing into `out`. Never panics: an unknown
    /// id, a rejected length, a failure or a panic in the function each become a status with
    /// an empty reply.
    #[inline(always)]
    pub fn dispatch(&self, id: DecoderId, input: &[u8], out: &mut [u8]) -> (Status, usize) {
        // Built-ins inline: no virtual call, nothing that can panic.
        if let Some(Some(b)) = self.direct_kind.get(id as usize) {
            return b.respond(input, out);
        }
        self.dispatch_dyn(id, input, out)
    }

    /// The general case of [`ResponderTable::dispatch`]: a registered function behind the panic
    /// boundary. Kept out of line so the built-in path stays small.
    #[inline(never)]
    fn dispatch_dyn(&self, id: DecoderId, input: &[u8], out: &mut [u8]) -> (Status, usize) {
        let Some(r) = self.get(id) else {
            return (Status::UnknownDecoder, 0);
        };
        let cap = out.len();
        IN_FUNCTION.with(|f| f.set(true));
        let result = catch_unwind(AssertUnwindSafe(|| r.respond(input, out)));
        IN_FUNCTION.with(|f| f.set(false));
        match result {
            Ok(Ok(n)) if n <= cap => (Status::Ok, n),
            Ok(Ok(_)) => (Status::DecoderFailed, 0),
            Ok(Err(e)) => (e.status(), 0),
            Err(_) => {
                self.record_panic(id, r.name());
                (Status::DecoderFailed, 0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Echo, ResponderError};

    static IDENTITY: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = i as u8;
            i += 1;
        }
        t
    };

    struct Lookup;
    impl Responder for Lookup {
        fn name(&self) -> &str {
            "lookup"
        }
        fn builtin(&self) -> Option<Builtin> {
            Some(Builtin::ByteMap(&IDENTITY))
        }
        fn respond(&self, input: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
            out[0] = input[0];
            Ok(1)
        }
    }

    struct Panics;
    impl Responder for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        fn respond(&self, _: &[u8], _: &mut [u8]) -> Result<usize, ResponderError> {
            panic!("decoder bug")
        }
    }

    struct Lies;
    impl Responder for Lies {
        fn name(&self) -> &str {
            "lies"
        }
        fn respond(&self, _: &[u8], out: &mut [u8]) -> Result<usize, ResponderError> {
            Ok(out.len() + 1)
        }
    }

    #[test]
    fn dispatch_by_id_and_statuses() {
        let mut t = ResponderTable::new();
        t.insert(0, Arc::new(Echo));
        t.insert(1, Arc::new(Lookup));
        t.insert(1000, Arc::new(Panics));
        t.insert(7, Arc::new(Lies));
        let mut out = [0u8; 48];
        assert_eq!(t.dispatch(0, b"hi", &mut out), (Status::Ok, 2));
        assert_eq!(t.dispatch(1, &[3], &mut out), (Status::Ok, 1));
        assert_eq!(out[0], 3);
        assert_eq!(t.dispatch(2, b"x", &mut out), (Status::UnknownDecoder, 0));
        assert_eq!(t.dispatch(1, &[], &mut out), (Status::BadLength, 0));
        assert_eq!(t.dispatch(1000, b"x", &mut out), (Status::DecoderFailed, 0));
        assert_eq!(t.dispatch(7, b"x", &mut out), (Status::DecoderFailed, 0));
        // The table still serves after a panic.
        assert_eq!(t.dispatch(0, b"ok", &mut out), (Status::Ok, 2));
        assert_eq!(t.len(), 4);
        assert_eq!(
            t.entries().map(|e| e.0).collect::<Vec<_>>(),
            [0, 1, 7, 1000]
        );
    }
}
