//! The event queue of the flooder and of the path search, in PyMatching's order: queued
//! `(time, tracker)` entries, and per tracker (a detector node, or a region's shrinking) the
//! time it wants to be looked at and the time of its one live entry.
//!
//! # Order
//!
//! PyMatching queues its entries in a monotone radix heap: times 32-bit cyclic (the clock,
//! [`Queue::now`], is an `i64` widened from them; no entry is ever due more than 2³¹ after
//! it), an entry in bucket `bit_width(time ^ now)`, entries out of bucket 0 last in, first
//! out, an empty bucket 0 refilled from the lowest non-empty bucket (bucket 1 taken whole,
//! the clock stepped once; a higher one's entries spread over the empty lower buckets in the
//! order they were queued, the clock moved to their earliest time). Each bucket so stays
//! ordered newest entry first, and bucket 0 holds exactly the entries due now: entries come
//! out by time, and among entries due at one time the newest first. That order, which is
//! what makes PyMatching's choice among equally light matchings ours, is kept here by two
//! structures that give it alike:
//!
//! - while at most [`SMALL`] entries are queued (a decode of a few detection events), an
//!   array sorted by time, latest first, newest last among equal times: an entry is
//!   inserted after those due at its time or later, the last entry comes out;
//! - past that, until the queue is reset, that radix heap, the array's entries moved into
//!   it oldest first.
//!
//! # Trackers
//!
//! A tracker asks to be looked at ([`Queue::want`]) or no longer ([`Queue::unwant`]). Only
//! its newest entry is live: a new time is queued only when earlier than the live entry's,
//! and a live entry that comes out earlier than the time now wanted is queued again at that
//! time; entries that are not live are dropped as they come out. [`Queue::pop`] returns only
//! the entries to act on.
//!
//! Buckets are stacks threaded through one pool of entries, so nothing allocates once the
//! pool has room for the most entries a decode queues at once (it starts with room for one
//! per tracker and a few more — a decode's trackers are mostly idle, and a tracker's entries
//! past its live one are rare — and grows if a decode needs more). The pool's
//! first [`BUCKETS`] entries stand for the buckets' heads (so that moving an entry to a
//! bucket's bottom needs no branch), and each bucket but 0 keeps its earliest time (so that
//! a refill walks its bucket once).

/// No entry.
const NIL: u32 = u32::MAX;
/// Entries the sorted array holds (see the module doc).
const SMALL: usize = 32;
/// Buckets: `bit_width` of a 32-bit time difference, 0 to 32.
const BUCKETS: usize = 33;
/// [`Tracker::flags`]: wants to be looked at, at [`Tracker::want`].
const WANTS: u8 = 1;
/// [`Tracker::flags`]: has a live entry, at [`Tracker::queued`].
const QUEUED: u8 = 2;

/// One queued `(time, tracker)`; `next` is the entry below it in its bucket (or the next
/// free entry).
#[derive(Debug, Clone, Copy)]
struct Entry {
    time: u32,
    id: u32,
    next: u32,
}

/// What one tracker wants and has queued (times cyclic, valid under the flags).
#[derive(Debug, Clone, Copy, Default)]
struct Tracker {
    want: u32,
    queued: u32,
    flags: u8,
}

/// The queue over tracker ids `0..n`.
#[derive(Debug, Clone)]
pub(crate) struct Queue {
    /// Whether the entries are in the radix heap (else in the sorted array).
    radix: bool,
    /// The sorted array: times (absolute) latest first, `small_len` of them; the trackers
    /// beside.
    small_time: [i64; SMALL],
    small_id: [u32; SMALL],
    small_len: usize,
    /// Bit `b` set when bucket `b` is not empty.
    occupied: u64,
    /// Each bucket's earliest time (bucket 0's unused; `u32::MAX` when empty). Times in one
    /// bucket share their bits above the bucket's, so they compare as plain integers.
    earliest: [u32; BUCKETS],
    /// Entry `b < BUCKETS` is bucket `b`'s head: its `next` is the bucket's newest entry
    /// (`NIL` when empty); queued entries follow.
    entries: Vec<Entry>,
    /// Entries never used start at `fresh`; freed ones are stacked from `free`.
    fresh: u32,
    free: u32,
    len: usize,
    now: i64,
    trackers: Vec<Tracker>,
}

/// Whether cyclic time `a` comes after `b` (fewer steps from `b` to `a` than back).
#[inline]
fn cyclic_after(a: u32, b: u32) -> bool {
    a.wrapping_sub(b).wrapping_sub(1) < (1u32 << 31) - 1
}

impl Queue {
    /// An empty queue for tracker ids `0..trackers`, at time 0.
    pub(crate) fn new(trackers: usize) -> Queue {
        Queue {
            radix: false,
            small_time: [i64::MAX; SMALL],
            small_id: [NIL; SMALL],
            small_len: 0,
            occupied: 0,
            earliest: [u32::MAX; BUCKETS],
            entries: vec![
                Entry {
                    time: 0,
                    id: NIL,
                    next: NIL
                };
                BUCKETS + trackers + 16
            ],
            fresh: BUCKETS as u32,
            free: NIL,
            len: 0,
            now: 0,
            trackers: vec![Tracker::default(); trackers],
        }
    }

    /// The current time: that of the last entry out (0 after a reset).
    #[inline]
    pub(crate) fn now(&self) -> i64 {
        self.now
    }

    /// Entries queued, live or not.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len + self.small_len
    }

    /// Queues tracker `id` at time `t` (not before now).
    #[inline]
    fn push(&mut self, id: u32, t: i64) {
        debug_assert!(t >= self.now, "queued in the past: {t} < {}", self.now);
        if !self.radix {
            let len = self.small_len;
            if len < SMALL {
                // After every entry due at `t` or later: the entries due sooner, the array's
                // last ones (few: most entries are queued for now or soon), move up one.
                let mut at = len;
                while at > 0 && self.small_time[at - 1] < t {
                    self.small_time[at] = self.small_time[at - 1];
                    self.small_id[at] = self.small_id[at - 1];
                    at -= 1;
                }
                self.small_time[at] = t;
                self.small_id[at] = id;
                self.small_len = len + 1;
                return;
            }
            self.spill();
        }
        self.push_radix(id, t as u32);
    }

    /// Moves the sorted array's entries into the radix heap, oldest first (latest time
    /// first, and among equal times in the order they were queued), for the same order out.
    #[cold]
    fn spill(&mut self) {
        self.radix = true;
        for i in 0..self.small_len {
            self.push_radix(self.small_id[i], self.small_time[i] as u32);
        }
        self.small_len = 0;
    }

    #[inline]
    fn bucket(&self, t: u32) -> usize {
        (32 - (t ^ self.now as u32).leading_zeros()) as usize
    }

    #[inline]
    fn push_radix(&mut self, id: u32, t: u32) {
        debug_assert!(
            !cyclic_after(self.now as u32, t),
            "queued in the past: {t} < {}",
            self.now
        );
        let e = if self.free != NIL {
            let e = self.free;
            self.free = self.entries[e as usize].next;
            e
        } else {
            if self.fresh as usize == self.entries.len() {
                self.entries.push(Entry {
                    time: 0,
                    id: NIL,
                    next: NIL,
                });
            }
            self.fresh += 1;
            self.fresh - 1
        };
        let b = self.bucket(t);
        self.entries[e as usize] = Entry {
            time: t,
            id,
            next: self.entries[b].next,
        };
        self.entries[b].next = e;
        self.earliest[b] = self.earliest[b].min(t);
        self.occupied |= 1 << b;
        self.len += 1;
    }

    /// Takes the next entry out, live or not, advancing the clock to its time.
    #[inline]
    fn pop_any(&mut self) -> Option<Entry> {
        if !self.radix {
            if self.small_len == 0 {
                return None;
            }
            self.small_len -= 1;
            let i = self.small_len;
            self.now = self.small_time[i];
            return Some(Entry {
                time: self.now as u32,
                id: self.small_id[i],
                next: NIL,
            });
        }
        if self.len == 0 {
            return None;
        }
        if self.occupied & 1 == 0 {
            let b = self.occupied.trailing_zeros() as usize;
            if b == 1 {
                self.entries[0].next = std::mem::replace(&mut self.entries[1].next, NIL);
                self.earliest[1] = u32::MAX;
                self.occupied ^= 0b11;
                self.now += 1;
            } else {
                self.refill(b);
            }
        }
        let e = self.entries[0].next;
        let entry = self.entries[e as usize];
        self.entries[0].next = entry.next;
        self.occupied &= !((entry.next == NIL) as u64);
        self.entries[e as usize].next = self.free;
        self.free = e;
        self.len -= 1;
        Some(entry)
    }

    /// Moves the clock to bucket `b`'s earliest time and spreads the bucket over the lower
    /// (empty) buckets, oldest entry first: walking it newest first and appending each entry
    /// at its new bucket's bottom gives the same stacks.
    fn refill(&mut self, b: usize) {
        let min = std::mem::replace(&mut self.earliest[b], u32::MAX);
        // The earliest time, widened near the clock (it never lies behind it).
        self.now += min.wrapping_sub(self.now as u32) as i64;
        // Each lower bucket's bottom entry: its head while it is empty.
        let mut tail: [u32; BUCKETS] = std::array::from_fn(|c| c as u32);
        let mut e = std::mem::replace(&mut self.entries[b].next, NIL);
        self.occupied &= !(1 << b);
        while e != NIL {
            let Entry { time, next, .. } = self.entries[e as usize];
            let c = self.bucket(time);
            self.entries[tail[c] as usize].next = e;
            tail[c] = e;
            self.earliest[c] = self.earliest[c].min(time);
            self.occupied |= 1 << c;
            e = next;
        }
        // The buckets below `b` were empty: those now occupied are those it filled.
        let mut filled = self.occupied & ((1 << b) - 1);
        while filled != 0 {
            let c = filled.trailing_zeros() as usize;
            self.entries[tail[c] as usize].next = NIL;
            filled &= filled - 1;
        }
    }

    /// Tracker `id` wants to be looked at at time `t` (not before now): queued unless its
    /// live entry is as early.
    #[inline]
    pub(crate) fn want(&mut self, id: u32, t: i64) {
        let t32 = t as u32;
        let tr = &mut self.trackers[id as usize];
        tr.want = t32;
        let f = tr.flags;
        tr.flags = f | WANTS | QUEUED;
        if f & QUEUED == 0 || cyclic_after(tr.queued, t32) {
            tr.queued = t32;
            self.push(id, t);
        }
    }

    /// Tracker `id` no longer wants to be looked at (its entry, if any, is dropped when it
    /// comes out).
    #[inline]
    pub(crate) fn unwant(&mut self, id: u32) {
        self.trackers[id as usize].flags &= !WANTS;
    }

    /// Tracker `id` starts afresh (a new region in a reused slot): no wish, no live entry;
    /// entries still queued for its former self are dropped, unless one falls due when it
    /// has queued one at the same time (PyMatching's order too).
    #[inline]
    pub(crate) fn forget(&mut self, id: u32) {
        self.trackers[id as usize].flags = 0;
    }

    /// Whether the entry just out is to be acted on: only a tracker's live entry counts, and
    /// only while the tracker wants that time (a live entry earlier than wanted is queued
    /// again at the time wanted).
    #[inline]
    fn take(&mut self, e: Entry) -> bool {
        let tr = &mut self.trackers[e.id as usize];
        let f = tr.flags;
        if f & QUEUED == 0 || tr.queued != e.time {
            return false;
        }
        if f & WANTS == 0 {
            tr.flags = 0;
            return false;
        }
        if tr.want != e.time {
            let t = tr.want;
            tr.queued = t;
            // The time wanted, widened near the clock (it never lies behind it).
            self.push(e.id, self.now + t.wrapping_sub(self.now as u32) as i64);
            return false;
        }
        tr.flags = 0;
        true
    }

    /// The next tracker to look at, with the time (the clock, advanced to it); `None` when
    /// the queue is empty.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u32, i64)> {
        while let Some(e) = self.pop_any() {
            if self.take(e) {
                return Some((e.id, self.now));
            }
        }
        None
    }

    /// Empties the queue, forgets every tracker's wish and sets the clock to 0.
    pub(crate) fn reset(&mut self) {
        for i in 0..self.small_len {
            self.trackers[self.small_id[i] as usize].flags = 0;
        }
        self.small_len = 0;
        if !self.radix {
            self.now = 0;
            return;
        }
        self.radix = false;
        // A tracker with a wish or a live entry has its live entry queued.
        while self.occupied != 0 {
            let b = self.occupied.trailing_zeros() as usize;
            let mut e = std::mem::replace(&mut self.entries[b].next, NIL);
            while e != NIL {
                let entry = self.entries[e as usize];
                self.trackers[entry.id as usize].flags = 0;
                e = entry.next;
            }
            self.occupied &= !(1 << b);
        }
        self.earliest = [u32::MAX; BUCKETS];
        self.fresh = BUCKETS as u32;
        self.free = NIL;
        self.len = 0;
        self.now = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_last_in_first_out() {
        let mut q = Queue::new(8);
        for (x, t) in [(0, 6), (1, 4), (2, 6), (3, 5), (4, 4), (5, 100)] {
            q.want(x, t);
        }
        let mut got = Vec::new();
        while let Some((x, t)) = q.pop() {
            got.push((x, t));
            if x == 3 {
                // Wanted at the current time: next out.
                q.want(6, 5);
            }
        }
        // Equal times come out newest first; bucket moves keep the order of queueing.
        assert_eq!(
            got,
            [(4, 4), (1, 4), (3, 5), (6, 5), (2, 6), (0, 6), (5, 100)]
        );
        assert_eq!(q.now(), 100);
        q.reset();
        assert_eq!((q.pop(), q.now()), (None, 0));
    }

    #[test]
    fn trackers_keep_one_live_entry() {
        let mut q = Queue::new(4);
        // Earlier wishes queue again; later ones wait for the live entry.
        q.want(0, 10);
        q.want(0, 3);
        q.want(0, 7);
        q.want(1, 5);
        q.unwant(1);
        q.want(2, 8);
        q.forget(2);
        q.want(3, 9);
        assert_eq!(q.len(), 5);
        // 0's entry at 3 comes out early and is queued again at 7; the stale one at 10 and
        // the unwanted and forgotten ones are dropped.
        assert_eq!(q.pop(), Some((0, 7)));
        assert_eq!(q.pop(), Some((3, 9)));
        assert_eq!(q.pop(), None);
        assert_eq!(q.now(), 10);
    }

    /// PyMatching's queue as its source describes it, written plainly: a radix heap of
    /// vectors (bucket `bit_width(time ^ now)`, bucket 0 last in first out, a refill moving
    /// the clock to the lowest bucket's earliest time and spreading it in order) under a
    /// tracker per id. The reference for [`Queue`]'s order, in both of its structures.
    struct Reference {
        buckets: Vec<Vec<(u32, u32)>>,
        now: i64,
        /// Per id: `(wants, want, queued, queued at)`.
        trackers: Vec<(bool, u32, bool, u32)>,
    }

    impl Reference {
        fn bucket(&self, t: u32) -> usize {
            (32 - (t ^ self.now as u32).leading_zeros()) as usize
        }
        fn enqueue(&mut self, id: u32, t: u32) {
            let b = self.bucket(t);
            self.buckets[b].push((t, id));
        }
        fn dequeue(&mut self) -> Option<(u32, u32)> {
            let b = (0..BUCKETS).find(|&b| !self.buckets[b].is_empty())?;
            if b == 1 {
                self.buckets.swap(0, 1);
                self.now += 1;
            } else if b > 1 {
                let min = self.buckets[b].iter().map(|e| e.0).min().unwrap_or(0);
                self.now += min.wrapping_sub(self.now as u32) as i64;
                for e in std::mem::take(&mut self.buckets[b]) {
                    let c = self.bucket(e.0);
                    self.buckets[c].push(e);
                }
            }
            self.buckets[0].pop()
        }
        fn want(&mut self, id: u32, t: i64) {
            let t = t as u32;
            let tr = &mut self.trackers[id as usize];
            tr.0 = true;
            tr.1 = t;
            if !tr.2 || cyclic_after(tr.3, t) {
                tr.2 = true;
                tr.3 = t;
                self.enqueue(id, t);
            }
        }
        fn pop(&mut self) -> Option<(u32, i64)> {
            loop {
                let (t, id) = self.dequeue()?;
                let tr = &mut self.trackers[id as usize];
                if !tr.2 || tr.3 != t {
                    continue;
                }
                tr.2 = false;
                if !tr.0 {
                    continue;
                }
                if tr.1 != t {
                    tr.2 = true;
                    tr.3 = tr.1;
                    let w = tr.1;
                    self.enqueue(id, w);
                    continue;
                }
                tr.0 = false;
                return Some((id, self.now));
            }
        }
    }

    #[test]
    fn the_order_is_pymatchings_radix_heap_order_with_few_entries_and_many() {
        for (trackers, spread) in [(8u32, 6u64), (24, 40), (200, 12), (200, 1 << 20)] {
            let mut state = 11u64 + trackers as u64;
            let mut rand = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            let mut q = Queue::new(trackers as usize);
            let mut r = Reference {
                buckets: vec![Vec::new(); BUCKETS],
                now: 0,
                trackers: vec![(false, 0, false, 0); trackers as usize],
            };
            let mut popped = 0;
            for step in 0..40_000 {
                let id = (rand() % trackers as u64) as u32;
                // Many trackers: a burst of wishes first (past the sorted array).
                let op = if trackers > 24 && step < 100 {
                    2
                } else {
                    rand() % 8
                };
                match op {
                    0 => {
                        q.unwant(id);
                        r.trackers[id as usize].0 = false;
                    }
                    1 if step % 5 == 0 => {
                        // A region slot reused: its former entries stay queued.
                        q.forget(id);
                        r.trackers[id as usize] = (false, 0, false, 0);
                    }
                    2..=4 => {
                        let t = q.now() + (rand() % spread) as i64;
                        q.want(id, t);
                        r.want(id, t);
                    }
                    _ => {
                        let got = q.pop();
                        assert_eq!(got, r.pop(), "pop {popped}");
                        popped += got.is_some() as usize;
                    }
                }
                assert_eq!(q.now(), r.now);
            }
            // The radix heap took over in the larger cases (and the array did in the
            // smaller).
            assert_eq!(q.radix, trackers > 24, "{trackers}");
            while let Some(x) = q.pop() {
                assert_eq!(Some(x), r.pop());
            }
            assert_eq!(r.pop(), None);
            q.reset();
            assert_eq!((q.now(), q.pop(), q.len()), (0, None, 0));
        }
    }

    #[test]
    fn random_wishes_pop_like_a_sorted_list() {
        let mut state = 7u64;
        let mut rand = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut q = Queue::new(64);
        let mut want: Vec<Option<i64>> = vec![None; 64];
        for _ in 0..20_000 {
            let id = (rand() % 64) as u32;
            match rand() % 4 {
                0 => {
                    q.unwant(id);
                    want[id as usize] = None;
                }
                1 | 2 => {
                    let t = q.now() + (rand() % 300) as i64;
                    q.want(id, t);
                    want[id as usize] = Some(t);
                }
                _ => {
                    let min = want.iter().flatten().min().copied();
                    match q.pop() {
                        Some((id, t)) => {
                            assert_eq!(Some(t), min);
                            assert_eq!(want[id as usize], Some(t));
                            want[id as usize] = None;
                        }
                        None => assert_eq!(min, None),
                    }
                }
            }
        }
        q.reset();
        assert_eq!((q.now(), q.pop()), (0, None));
    }
}
