//! The ring protocol under the `loom` model checker: every interleaving (up to loom's
//! preemption bound) of one writer and one reader, over the very functions the data path
//! calls ([`backline_ring::protocol`]), with loom's atomics in place of the ring's words and a
//! model of the futex. Slot bytes are loom cells, so a read that could overlap a write of the
//! same slot — an ordering too weak, a slot reused too early — fails the model; a lost
//! wake-up leaves every thread asleep, which loom reports as a deadlock.
//!
//! The rounds run over a request ring and a reply ring, and over one ring with the replies
//! written in place (`RingView::replies_in_place`: the same slot cells, the reply's flag
//! `seq ^ IN_PLACE_REPLY_FLAG`, a doorbell of its own), where the cells also check that the
//! two writers of a slot take turns.
//!
//! Four negative controls show the checker catches what it is meant to: a `Relaxed`
//! publication, a reader that sleeps without counting itself, and a writer that reuses a slot
//! before its reader is done with it, with two rings and in place.

use std::sync::atomic::Ordering;

use backline_ring::protocol::{self, Word};
use backline_wire::IN_PLACE_REPLY_FLAG;
use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicU32;
use loom::sync::{Arc, Condvar, Mutex};

/// A loom word standing in for a `seq` word or a doorbell's sleeper count.
#[derive(Default)]
struct LoomWord(AtomicU32);

impl Word for LoomWord {
    fn load(&self, order: Ordering) -> u32 {
        self.0.load(order)
    }
    fn store(&self, value: u32, order: Ordering) {
        self.0.store(value, order)
    }
    fn swap(&self, value: u32, order: Ordering) -> u32 {
        self.0.swap(value, order)
    }
    fn fetch_add(&self, value: u32, order: Ordering) -> u32 {
        self.0.fetch_add(value, order)
    }
    fn fetch_sub(&self, value: u32, order: Ordering) -> u32 {
        self.0.fetch_sub(value, order)
    }
    fn fence_seq_cst() {
        loom::sync::atomic::fence(Ordering::SeqCst)
    }
}

/// The futex of one word, modelled: `wait` sleeps only if the word still holds the value the
/// caller saw, checked under the lock `wake` takes (the kernel's hash-bucket lock), and has no
/// timeout — a missed wake-up is a deadlock here, where the real wait would stall for a nap.
#[derive(Default)]
struct Futex {
    lock: Mutex<()>,
    cv: Condvar,
}

impl Futex {
    fn wait(&self, word: &LoomWord, seen: u32) {
        let guard = self.lock.lock().unwrap();
        if word.0.load(Ordering::SeqCst) == seen {
            drop(self.cv.wait(guard).unwrap());
        }
    }
    fn wake(&self) {
        let _guard = self.lock.lock().unwrap();
        self.cv.notify_all();
    }
}

/// One slot: its payload (a loom cell) and its `seq` word with that word's futex.
#[derive(Default)]
struct Slot {
    payload: UnsafeCell<u32>,
    seq: LoomWord,
    futex: Futex,
}

/// A view of a ring of slots, with its doorbell and the flag XORed into its `seq` values.
struct Ring {
    slots: Arc<Vec<Slot>>,
    sleepers: LoomWord,
    doorbell: bool,
    flag: u32,
}

impl Ring {
    fn new(depth: usize, doorbell: bool) -> Ring {
        Ring {
            slots: Arc::new((0..depth).map(|_| Slot::default()).collect()),
            sleepers: LoomWord::default(),
            doorbell,
            flag: 0,
        }
    }

    /// The view of the same slots for the replies written in place (`replies_in_place`).
    fn replies_in_place(&self) -> Ring {
        Ring {
            slots: self.slots.clone(),
            sleepers: LoomWord::default(),
            doorbell: self.doorbell,
            flag: self.flag ^ IN_PLACE_REPLY_FLAG,
        }
    }

    fn slot(&self, round: u32) -> &Slot {
        &self.slots[round as usize % self.slots.len()]
    }

    /// The writer's side of `RingView::publish`: plain write of the slot, then publish.
    fn publish(&self, round: u32, value: u32) {
        let slot = self.slot(round);
        // SAFETY: loom's cell checks that no access of the other thread overlaps this one.
        slot.payload.with_mut(|p| unsafe { *p = value });
        let sleepers = self.doorbell.then_some(&self.sleepers);
        protocol::publish(&slot.seq, (round + 1) ^ self.flag, sleepers, || {
            slot.futex.wake()
        });
    }

    /// The reader's side of `RingView::wait` once its spin budget is spent: the blocking
    /// loop of `wait_on` (without a doorbell, a spin that yields).
    fn wait(&self, round: u32) -> u32 {
        let slot = self.slot(round);
        let want = (round + 1) ^ self.flag;
        while !protocol::arrived(&slot.seq, want) {
            if self.doorbell {
                protocol::sleep_once(&slot.seq, &self.sleepers, want, |seen| {
                    slot.futex.wait(&slot.seq, seen)
                });
            } else {
                loom::thread::yield_now();
            }
        }
        // SAFETY: as in `publish`: loom checks the access.
        slot.payload.with(|p| unsafe { *p })
    }
}

/// Checks `f` in every interleaving up to loom's preemption bound (3 unless `LOOM_MAX_PREEMPTIONS`
/// says otherwise: the bugs the negative controls plant need at most 2), and says how many
/// executions that was (`--nocapture` shows it).
fn model(f: impl Fn() + Sync + Send + 'static) {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    RUNS.store(0, Ordering::Relaxed);
    builder.check(move || {
        RUNS.fetch_add(1, Ordering::Relaxed);
        f()
    });
    eprintln!("explored {} executions", RUNS.load(Ordering::Relaxed));
}

#[test]
fn a_published_slot_is_read_whole_without_a_doorbell() {
    model(|| {
        let ring = Arc::new(Ring::new(1, false));
        let w = ring.clone();
        let writer = loom::thread::spawn(move || w.publish(0, 0xB0B));
        assert_eq!(ring.wait(0), 0xB0B);
        writer.join().unwrap();
    });
}

#[test]
fn a_sleeping_reader_is_always_woken() {
    model(|| {
        let ring = Arc::new(Ring::new(1, true));
        let w = ring.clone();
        let writer = loom::thread::spawn(move || w.publish(0, 7));
        assert_eq!(ring.wait(0), 7);
        writer.join().unwrap();
        assert_eq!(ring.sleepers.0.load(Ordering::SeqCst), 0);
    });
}

/// A controller with up to `depth` rounds in flight and an echoing coprocessor, over a
/// request ring and a reply ring (or, `in_place`, one ring carrying both): slots are reused
/// (rounds > depth) only under the session's rule — a request slot after its reply was
/// collected, a reply slot after the next request for it arrived. Both sides block with
/// doorbells, or spin without. `ahead` is how many rounds the controller lets be
/// outstanding: the session's rule is `depth`.
fn rounds_in_flight(depth: usize, rounds: u32, ahead: usize, doorbell: bool, in_place: bool) {
    model(move || {
        let req = Arc::new(Ring::new(depth, doorbell));
        let rep = Arc::new(if in_place {
            req.replies_in_place()
        } else {
            Ring::new(depth, doorbell)
        });
        let (creq, crep) = (req.clone(), rep.clone());
        let coprocessor = loom::thread::spawn(move || {
            for r in 0..rounds {
                let x = creq.wait(r);
                crep.publish(r, x + 1000);
            }
        });
        let mut collected = 0;
        for r in 0..rounds {
            if r as usize >= ahead {
                assert_eq!(rep.wait(collected), collected + 1000);
                collected += 1;
            }
            req.publish(r, r);
        }
        while collected < rounds {
            assert_eq!(rep.wait(collected), collected + 1000);
            collected += 1;
        }
        coprocessor.join().unwrap();
    });
}

#[test]
fn one_round_in_flight_reuses_its_slot_safely() {
    rounds_in_flight(1, 2, 1, true, false);
}

#[test]
fn spinning_sides_reuse_slots_safely() {
    rounds_in_flight(2, 3, 2, false, false);
}

#[test]
fn two_rounds_in_flight_reuse_slots_safely() {
    rounds_in_flight(2, 3, 2, true, false);
}

#[test]
fn replies_in_place_take_turns_with_their_requests() {
    rounds_in_flight(1, 2, 1, true, true);
}

#[test]
fn two_rounds_in_flight_with_replies_in_place_reuse_slots_safely() {
    rounds_in_flight(2, 3, 2, true, true);
}

#[test]
fn spinning_sides_with_replies_in_place_reuse_slots_safely() {
    rounds_in_flight(2, 3, 2, false, true);
}

#[test]
#[should_panic]
fn negative_control_a_relaxed_publication_is_a_data_race() {
    model(|| {
        let slot = Arc::new(Slot::default());
        let w = slot.clone();
        let writer = loom::thread::spawn(move || {
            // SAFETY: loom checks the access (and finds the race this control plants).
            w.payload.with_mut(|p| unsafe { *p = 1 });
            w.seq.store(1, Ordering::Relaxed);
        });
        while slot.seq.load(Ordering::Acquire) != 1 {
            loom::thread::yield_now();
        }
        // SAFETY: as above.
        slot.payload.with(|p| unsafe { *p });
        writer.join().unwrap();
    });
}

#[test]
#[should_panic]
fn negative_control_an_uncounted_sleeper_misses_its_wake_up() {
    model(|| {
        let ring = Arc::new(Ring::new(1, true));
        let w = ring.clone();
        let writer = loom::thread::spawn(move || w.publish(0, 7));
        let slot = ring.slot(0);
        // Sleeps on the word without announcing itself in the doorbell: the writer sees no
        // sleeper and does not wake it.
        while !protocol::arrived(&slot.seq, 1) {
            let seen = slot.seq.load(Ordering::SeqCst);
            if seen != 1 {
                slot.futex.wait(&slot.seq, seen);
            }
        }
        writer.join().unwrap();
    });
}

#[test]
#[should_panic]
fn negative_control_a_slot_reused_too_early_is_a_data_race() {
    // Two rounds outstanding on a ring of one slot: round 1's request overwrites the slot
    // while the coprocessor may still be reading round 0's. (Spinning readers: a planted
    // bug that ends in a futex deadlock aborts loom's clean-up instead of panicking.)
    rounds_in_flight(1, 2, 2, false, false);
}

#[test]
#[should_panic]
fn negative_control_a_request_over_an_unread_reply_in_place_is_a_data_race() {
    // The same planted bug with the replies in place: round 1's request overwrites the slot
    // while the coprocessor may still be writing round 0's reply there.
    rounds_in_flight(1, 2, 2, false, true);
}
