//! A function that panics on every call: each round is answered decoder-failed, every panic is
//! counted, the first message is kept for the report — and none reaches the panic hook that
//! prints messages and backtraces (a bench run of 175 panicking rounds printed 175 of them).
//! Its own test binary: the hook is process-wide, and this test installs one first to count
//! what gets through.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use backline_responder::{Echo, Responder, ResponderError, ResponderTable};
use backline_wire::Status;

struct Panicky;

impl Responder for Panicky {
    fn name(&self) -> &str {
        "panicky"
    }
    fn respond(&self, input: &[u8], _out: &mut [u8]) -> Result<usize, ResponderError> {
        panic!("index {} out of range", input.len() + 100);
    }
}

static PRINTED: AtomicUsize = AtomicUsize::new(0);

#[test]
fn a_panicking_function_is_counted_reported_once_and_answered() {
    std::panic::set_hook(Box::new(|_| {
        PRINTED.fetch_add(1, Ordering::SeqCst);
    }));
    let mut t = ResponderTable::new();
    t.insert(3, Arc::new(Panicky));
    t.insert(4, Arc::new(Echo));
    let mut out = [0u8; 64];
    // Clones serve other threads: they share the count.
    let t2 = t.clone();
    std::thread::spawn(move || {
        for _ in 0..75 {
            assert_eq!(
                t2.dispatch(3, b"xy", &mut [0u8; 8]),
                (Status::DecoderFailed, 0)
            );
        }
    })
    .join()
    .unwrap();
    for _ in 0..100 {
        assert_eq!(t.dispatch(3, b"abc", &mut out), (Status::DecoderFailed, 0));
        // The table keeps serving the other functions.
        assert_eq!(t.dispatch(4, b"abc", &mut out), (Status::Ok, 3));
    }
    assert_eq!(t.panics(), 175);
    let reports = t.reports();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(
        reports[0].starts_with("175 round(s) answered decoder-failed")
            && reports[0].contains("decoder 3, `panicky`: index 102 out of range at "),
        "{}",
        reports[0]
    );
    assert_eq!(
        PRINTED.load(Ordering::SeqCst),
        0,
        "responder panics reached the hook"
    );
    // A panic elsewhere still reaches the hook that was there.
    let _ = std::panic::catch_unwind(|| panic!("not in a function"));
    assert_eq!(PRINTED.load(Ordering::SeqCst), 1);
}
