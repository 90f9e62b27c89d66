//! The event queue of the flooder: a monotone radix heap whose entries are intrusive, one per
//! *tracker* (a detector node or a region), so that rescheduling a tracker moves its one entry
//! instead of queueing another, and the queue never allocates after it is built.
//!
//! Times are absolute (`i64`, the flooder's clock). An entry of time `t` lives in bucket
//! `bit_width(t ^ now)`: bucket 0 holds the entries due now, bucket `k ≥ 1` those whose time
//! first differs from `now` in bit `k − 1`. Popping takes from bucket 0; when it is empty the
//! lowest non-empty bucket is scanned for its minimum, the clock advances to it, and the
//! bucket's entries are redistributed into lower buckets (each entry only ever moves down,
//! so each is touched at most 64 times between its scheduling and its pop).
//!
//! Each bucket is a doubly linked list threaded through [`Link`]s indexed by tracker id:
//! scheduling, cancelling and moving an entry are O(1).

/// No tracker / no link.
const NIL: u32 = u32::MAX;
/// Buckets: `bit_width` of a 64-bit difference is 0..=64.
const BUCKETS: usize = 65;

/// One tracker's place in the queue.
#[derive(Debug, Clone, Copy)]
struct Link {
    /// The time it is due (meaningful while queued).
    time: i64,
    prev: u32,
    next: u32,
    /// Its bucket, or `u8::MAX` when not queued.
    bucket: u8,
}

const UNQUEUED: Link = Link {
    time: 0,
    prev: NIL,
    next: NIL,
    bucket: u8::MAX,
};

/// The radix heap over `trackers` ids `0..n`.
#[derive(Debug, Clone)]
pub(crate) struct Queue {
    links: Vec<Link>,
    heads: [u32; BUCKETS],
    now: i64,
    len: usize,
}

impl Queue {
    /// An empty queue for tracker ids `0..trackers`, at time 0.
    pub(crate) fn new(trackers: usize) -> Queue {
        Queue {
            links: vec![UNQUEUED; trackers],
            heads: [NIL; BUCKETS],
            now: 0,
            len: 0,
        }
    }

    /// The current time: that of the last pop (0 after a reset).
    #[inline]
    pub(crate) fn now(&self) -> i64 {
        self.now
    }

    /// Entries queued.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn bucket_of(&self, time: i64) -> u8 {
        (64 - ((time ^ self.now) as u64).leading_zeros()) as u8
    }

    #[inline]
    fn unlink(&mut self, id: u32) {
        let l = self.links[id as usize];
        if l.prev == NIL {
            self.heads[l.bucket as usize] = l.next;
        } else {
            self.links[l.prev as usize].next = l.next;
        }
        if l.next != NIL {
            self.links[l.next as usize].prev = l.prev;
        }
    }

    #[inline]
    fn link(&mut self, id: u32, bucket: u8) {
        let head = self.heads[bucket as usize];
        let l = &mut self.links[id as usize];
        l.bucket = bucket;
        l.prev = NIL;
        l.next = head;
        if head != NIL {
            self.links[head as usize].prev = id;
        }
        self.heads[bucket as usize] = id;
    }

    /// Schedules tracker `id` at `time` (moving it if it is queued). A time in the past is
    /// taken as now (the flooder never asks for one; clamping keeps a bug from looping).
    #[inline]
    pub(crate) fn schedule(&mut self, id: u32, time: i64) {
        debug_assert!(
            time >= self.now,
            "scheduled in the past: {time} < {}",
            self.now
        );
        let time = time.max(self.now);
        let bucket = self.bucket_of(time);
        let old = self.links[id as usize];
        if old.bucket != u8::MAX {
            if old.bucket == bucket && old.time == time {
                return;
            }
            self.unlink(id);
        } else {
            self.len += 1;
        }
        self.links[id as usize].time = time;
        self.link(id, bucket);
    }

    /// Removes tracker `id` from the queue, if it is queued.
    #[inline]
    pub(crate) fn cancel(&mut self, id: u32) {
        if self.links[id as usize].bucket != u8::MAX {
            self.unlink(id);
            self.links[id as usize].bucket = u8::MAX;
            self.len -= 1;
        }
    }

    /// Takes the entry due soonest (the latest scheduled among those due at once), advancing
    /// the clock to its time; `None` when the queue is empty.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u32, i64)> {
        if self.len == 0 {
            return None;
        }
        if self.heads[0] == NIL {
            self.refill();
        }
        let id = self.heads[0];
        self.unlink(id);
        self.links[id as usize].bucket = u8::MAX;
        self.len -= 1;
        Some((id, self.now))
    }

    /// Advances the clock to the earliest entry and moves the lowest non-empty bucket's
    /// entries down (the earliest ones into bucket 0).
    fn refill(&mut self) {
        let Some(b) = (1..BUCKETS).find(|&b| self.heads[b] != NIL) else {
            return;
        };
        let mut min = i64::MAX;
        let mut id = self.heads[b];
        while id != NIL {
            let l = self.links[id as usize];
            min = min.min(l.time);
            id = l.next;
        }
        self.now = min;
        let mut id = std::mem::replace(&mut self.heads[b], NIL);
        while id != NIL {
            let next = self.links[id as usize].next;
            let bucket = self.bucket_of(self.links[id as usize].time);
            self.link(id, bucket);
            id = next;
        }
    }

    /// Empties the queue and sets the clock to 0.
    pub(crate) fn reset(&mut self) {
        if self.len > 0 {
            for b in 0..BUCKETS {
                let mut id = std::mem::replace(&mut self.heads[b], NIL);
                while id != NIL {
                    let next = self.links[id as usize].next;
                    self.links[id as usize] = UNQUEUED;
                    id = next;
                }
            }
        }
        self.len = 0;
        self.now = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order_and_moves_entries() {
        let mut q = Queue::new(10);
        for (id, t) in [(0, 17), (1, 3), (2, 1000), (3, 3), (4, 64), (5, 0)] {
            q.schedule(id, t);
        }
        // Moving entries: 2 earlier, 4 later, 5 cancelled, 1 rescheduled at the same time.
        q.schedule(2, 5);
        q.schedule(4, 1 << 40);
        q.cancel(5);
        q.schedule(1, 3);
        assert_eq!(q.len(), 5);
        let mut got = Vec::new();
        while let Some((id, t)) = q.pop() {
            got.push((id, t));
            if id == 0 {
                // Scheduling "now" from inside the loop comes back at once.
                q.schedule(7, t);
            }
        }
        assert_eq!(got[0].1, 3);
        assert_eq!(got[1].1, 3);
        assert_eq!(&got[2..], &[(2, 5), (0, 17), (7, 17), (4, 1 << 40)]);
        assert_eq!(q.len(), 0);
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn random_schedules_pop_like_a_sorted_list() {
        let mut state = 7u64;
        let mut rand = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut q = Queue::new(64);
        let mut want: Vec<Option<i64>> = vec![None; 64];
        let mut now = 0;
        for _ in 0..20_000 {
            let id = (rand() % 64) as u32;
            match rand() % 4 {
                0 => {
                    q.cancel(id);
                    want[id as usize] = None;
                }
                1 | 2 => {
                    let t = now + (rand() % 300) as i64;
                    q.schedule(id, t);
                    want[id as usize] = Some(t);
                }
                _ => {
                    let min = want.iter().flatten().min().copied();
                    match q.pop() {
                        Some((id, t)) => {
                            assert_eq!(Some(t), min);
                            assert_eq!(want[id as usize], Some(t));
                            want[id as usize] = None;
                            now = t;
                        }
                        None => assert_eq!(min, None),
                    }
                }
            }
        }
        q.reset();
        assert_eq!((q.len(), q.now(), q.pop()), (0, 0, None));
    }
}
