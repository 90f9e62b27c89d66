//! The ring's synchronisation, written once over an abstract atomic word so that the same
//! functions run on the data path (over `std` atomics in ring memory) and under the `loom`
//! model checker (over `loom` atomics, in `tests/loom.rs`). Every memory ordering of the data
//! path is chosen here, and argued where it is chosen.

use std::sync::atomic::Ordering;

/// The atomic operations the protocol uses on a 32-bit word.
pub trait Word {
    /// `load(order)`.
    fn load(&self, order: Ordering) -> u32;
    /// `store(value, order)`.
    fn store(&self, value: u32, order: Ordering);
    /// `swap(value, order)`.
    fn swap(&self, value: u32, order: Ordering) -> u32;
    /// `fetch_add(value, order)`.
    fn fetch_add(&self, value: u32, order: Ordering) -> u32;
    /// `fetch_sub(value, order)`.
    fn fetch_sub(&self, value: u32, order: Ordering) -> u32;
    /// A sequentially consistent fence of the same memory model as the word.
    fn fence_seq_cst();
}

impl Word for std::sync::atomic::AtomicU32 {
    #[inline(always)]
    fn load(&self, order: Ordering) -> u32 {
        std::sync::atomic::AtomicU32::load(self, order)
    }
    #[inline(always)]
    fn store(&self, value: u32, order: Ordering) {
        std::sync::atomic::AtomicU32::store(self, value, order)
    }
    #[inline(always)]
    fn swap(&self, value: u32, order: Ordering) -> u32 {
        std::sync::atomic::AtomicU32::swap(self, value, order)
    }
    #[inline(always)]
    fn fetch_add(&self, value: u32, order: Ordering) -> u32 {
        std::sync::atomic::AtomicU32::fetch_add(self, value, order)
    }
    #[inline(always)]
    fn fetch_sub(&self, value: u32, order: Ordering) -> u32 {
        std::sync::atomic::AtomicU32::fetch_sub(self, value, order)
    }
    #[inline(always)]
    fn fence_seq_cst() {
        std::sync::atomic::fence(Ordering::SeqCst)
    }
}

/// Publishes `seq` in its slot's `seq` word after the slot's bytes were written.
///
/// The store is `Release`: every byte written into the slot before it is visible to a reader
/// whose `Acquire` load (in [`arrived`]) returns this value. Without a doorbell nobody can
/// sleep on the word and that is all. With a doorbell a reader may be about to sleep, and the
/// store must be ordered before our look at the sleeper count: a `SeqCst` fence between the
/// two, paired with the one in [`sleep_once`] between the sleeper's count and its look at the
/// word. Of two `SeqCst` fences one precedes the other in their single total order: if ours
/// does, the sleeper's look sees `seq`; if its does, our look sees the sleeper and `wake` is
/// called. (A `SeqCst` swap followed by a `SeqCst` load is as correct in the language's model
/// and costs the same locked instruction on x86-64, but the fence form is the one `loom`
/// models exactly — it treats `SeqCst` loads and stores as acquire/release — so it is the
/// form whose every interleaving `tests/loom.rs` checks.)
#[inline(always)]
pub fn publish<W: Word>(word: &W, seq: u32, sleepers: Option<&W>, wake: impl FnOnce()) {
    word.store(seq, Ordering::Release);
    if let Some(sleepers) = sleepers {
        W::fence_seq_cst();
        if sleepers.load(Ordering::Relaxed) != 0 {
            wake();
        }
    }
}

/// Whether `seq` has been published in its word. `Acquire`: when it has, the slot's bytes
/// written before the publication are visible to the reads that follow.
#[inline(always)]
pub fn arrived<W: Word>(word: &W, seq: u32) -> bool {
    word.load(Ordering::Acquire) == seq
}

/// One blocking step of a reader waiting for `want`: count ourselves a sleeper, look at the
/// word once more, and `sleep(seen)` only if `want` is still not there. `sleep` must return
/// at once when the word no longer holds `seen` (a futex wait does this check atomically with
/// going to sleep), so a publication between our look and our sleep is never missed. The
/// caller re-checks with [`arrived`] afterwards (a sleep may end spuriously or by timeout).
///
/// The count is incremented before a `SeqCst` fence and the word read after it: the fence
/// pairs with the one in [`publish`] (see there), so either this look sees the publication or
/// the publisher sees the count. The orderings of the count and the look themselves need not
/// be stronger than `Relaxed`; the count's increment is `SeqCst` and the look `Acquire` only so
/// that nothing else can move across them.
#[inline]
pub fn sleep_once<W: Word>(word: &W, sleepers: &W, want: u32, sleep: impl FnOnce(u32)) {
    sleepers.fetch_add(1, Ordering::SeqCst);
    W::fence_seq_cst();
    let seen = word.load(Ordering::Acquire);
    if seen != want {
        sleep(seen);
    }
    sleepers.fetch_sub(1, Ordering::SeqCst);
}
