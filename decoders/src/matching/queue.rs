//! The event queue of the flooder: an indexed binary min-heap of trackers (a detector node or
//! a region), one entry per tracker, so that rescheduling a tracker moves its one entry
//! instead of queueing another, and the queue never allocates after it is built.
//!
//! Times are absolute (`i64`, the flooder's clock). The heap holds `(time, tracker)` pairs in
//! one array; `pos[tracker]` is the tracker's index in it (`NIL` when not queued). Schedule,
//! cancel and pop are O(log q) for `q` queued trackers — a few dozen in a decode, so the
//! whole heap stays in a few cache lines. Among entries due at the same time the order is the
//! heap's (any order gives a minimum-weight matching; ties between equally light matchings
//! may be broken differently).

/// Not queued.
const NIL: u32 = u32::MAX;

/// The min-heap over tracker ids `0..n`.
#[derive(Debug, Clone)]
pub(crate) struct Queue {
    /// `(time, tracker)`, a binary min-heap on time; `heap[..len]` is live.
    heap: Vec<(i64, u32)>,
    len: usize,
    /// Each tracker's index in `heap`, or `NIL`.
    pos: Vec<u32>,
    now: i64,
}

impl Queue {
    /// An empty queue for tracker ids `0..trackers`, at time 0.
    pub(crate) fn new(trackers: usize) -> Queue {
        Queue {
            heap: vec![(0, NIL); trackers],
            len: 0,
            pos: vec![NIL; trackers],
            now: 0,
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
    fn place(&mut self, i: usize, e: (i64, u32)) {
        self.heap[i] = e;
        self.pos[e.1 as usize] = i as u32;
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize, e: (i64, u32)) {
        while i > 0 {
            let p = (i - 1) / 2;
            let pe = self.heap[p];
            if pe.0 <= e.0 {
                break;
            }
            self.place(i, pe);
            i = p;
        }
        self.place(i, e);
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize, e: (i64, u32)) {
        let len = self.len;
        loop {
            let l = 2 * i + 1;
            if l >= len {
                break;
            }
            let r = l + 1;
            let c = if r < len && self.heap[r].0 < self.heap[l].0 {
                r
            } else {
                l
            };
            let ce = self.heap[c];
            if ce.0 >= e.0 {
                break;
            }
            self.place(i, ce);
            i = c;
        }
        self.place(i, e);
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
        let p = self.pos[id as usize];
        if p == NIL {
            let i = self.len;
            self.len += 1;
            self.sift_up(i, (time, id));
            return;
        }
        let i = p as usize;
        let old = self.heap[i].0;
        if time < old {
            self.sift_up(i, (time, id));
        } else if time > old {
            self.sift_down(i, (time, id));
        }
    }

    /// Removes tracker `id` from the queue, if it is queued.
    #[inline]
    pub(crate) fn cancel(&mut self, id: u32) {
        let p = self.pos[id as usize];
        if p == NIL {
            return;
        }
        self.pos[id as usize] = NIL;
        self.len -= 1;
        let i = p as usize;
        if i == self.len {
            return;
        }
        let last = self.heap[self.len];
        if last.0 < self.heap[i].0 {
            self.sift_up(i, last);
        } else {
            self.sift_down(i, last);
        }
    }

    /// Takes the entry due soonest, advancing the clock to its time; `None` when the queue is
    /// empty.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u32, i64)> {
        if self.len == 0 {
            return None;
        }
        let (t, id) = self.heap[0];
        self.pos[id as usize] = NIL;
        self.len -= 1;
        if self.len > 0 {
            let last = self.heap[self.len];
            self.sift_down(0, last);
        }
        self.now = t;
        Some((id, t))
    }

    /// Empties the queue and sets the clock to 0.
    pub(crate) fn reset(&mut self) {
        for i in 0..self.len {
            let id = self.heap[i].1;
            self.pos[id as usize] = NIL;
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
