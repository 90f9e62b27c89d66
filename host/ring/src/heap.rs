//! A ring on the heap, for the in-process `memcpy` transport and for local staging copies.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

use backline_wire::{Geometry, GeometryError};

use crate::{CachePadded, Doorbell, RingView};

/// Why a heap ring could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// A geometry out of bounds.
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    /// The allocator refused the ring's bytes.
    #[error("cannot allocate a ring of {0} bytes")]
    OutOfMemory(usize),
}

/// Heap memory for one ring (zeroed and pre-faulted) plus its doorbells. Hand out
/// [`RingView`]s with [`HeapRing::view`] (and, for replies written over the requests,
/// [`HeapRing::replies_view`]); keep the `HeapRing` alive (e.g. in an `Arc`) while they are
/// used.
#[derive(Debug)]
pub struct HeapRing {
    ptr: NonNull<u8>,
    layout: Layout,
    geometry: Geometry,
    doorbell: Box<CachePadded<Doorbell>>,
    /// The reply reader's, for [`HeapRing::replies_view`].
    replies_doorbell: Box<CachePadded<Doorbell>>,
}

// SAFETY: the allocation is owned uniquely by this value; access to it goes through
// RingView, whose protocol makes concurrent use data-race free.
unsafe impl Send for HeapRing {}
// SAFETY: `&HeapRing` only gives out RingViews (see above).
unsafe impl Sync for HeapRing {}

impl HeapRing {
    /// Allocates a zeroed ring of `geometry`, touching every page so that round 0 does not
    /// page-fault. A ring the allocator cannot give is an error, not an abort.
    pub fn new(geometry: Geometry) -> Result<HeapRing, RingError> {
        let geometry = geometry.validate()?;
        let layout = Layout::from_size_align(geometry.ring_bytes(), 4096)
            .expect("ring size is bounded by the wire format");
        // SAFETY: layout has non-zero size (depth ≥ 1, slot ≥ 64).
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            return Err(RingError::OutOfMemory(layout.size()));
        };
        // Pre-fault: zeroed pages from mmap are mapped copy-on-write to the zero page; a
        // write per page gives each its own frame now rather than at round 0.
        for off in (0..layout.size()).step_by(4096) {
            // SAFETY: within the fresh allocation; a volatile write of the value already
            // there so the compiler cannot drop it.
            unsafe { ptr.as_ptr().add(off).write_volatile(0) };
        }
        Ok(HeapRing {
            ptr,
            layout,
            geometry,
            doorbell: Box::default(),
            replies_doorbell: Box::default(),
        })
    }

    /// The ring's shape.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// A view of the ring, valid while `self` lives.
    pub fn view(&self) -> RingView {
        let doorbell = NonNull::from(&self.doorbell.0);
        // SAFETY: the allocation is 4096-aligned, `ring_bytes` long and lives as long as
        // `self`; so does the boxed doorbell. Callers keep `self` alive while using the view
        // (documented on the type).
        unsafe { RingView::new(self.ptr, self.geometry, Some(doorbell)) }
            .expect("geometry validated in new")
    }

    /// A view of the same slots for the replies to [`HeapRing::view`]'s requests, written in
    /// place ([`RingView::replies_in_place`]), with a doorbell of its own. Writers of the
    /// two views take turns on a slot as `replies_in_place` says (a session does).
    pub fn replies_view(&self) -> RingView {
        let doorbell = NonNull::from(&self.replies_doorbell.0);
        // SAFETY: the doorbell is boxed in `self`, which callers keep alive while the view is
        // used; the turn-taking is the caller's part of the ring protocol, as for `view`.
        unsafe { self.view().replies_in_place(Some(doorbell)) }
    }
}

impl Drop for HeapRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{WaitError, WaitPolicy};
    use backline_wire::{Kind, Seq, Status};
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    fn g(depth: u32, slot_bytes: u32) -> Geometry {
        Geometry { depth, slot_bytes }
    }

    #[test]
    fn publish_then_poll_same_message() {
        let r = HeapRing::new(g(4, 64)).unwrap();
        let v = r.view();
        assert!(
            v.poll(Seq::of_round(0)).is_none(),
            "zeroed ring holds nothing"
        );
        v.publish(Seq::of_round(0), Kind::Request, 7, 0, b"abc")
            .unwrap();
        let m = v.poll(Seq::of_round(0)).unwrap();
        assert_eq!(m.payload, b"abc");
        assert_eq!(m.header.decoder_id, 7);
        assert_eq!(m.header.kind, Kind::Request as u8);
        assert!(v.poll(Seq::of_round(1)).is_none());
        // The message ends at the slot's end: last four bytes are seq.
        // SAFETY: no writer is active while we look.
        let bytes = unsafe { v.bytes() };
        assert_eq!(&bytes[60..64], &1u32.to_le_bytes());
        assert_eq!(&bytes[64 - 16 - 3..64 - 16], b"abc");
    }

    #[test]
    fn small_copies_of_every_length() {
        for n in 0..=40usize {
            let src: Vec<u8> = (0..n as u8).map(|b| b.wrapping_mul(37) ^ 0x5A).collect();
            let mut dst = vec![0xEEu8; n + 3];
            crate::copy_small(&mut dst, &src);
            assert_eq!(&dst[..n], &src[..], "length {n}");
            assert!(
                dst[n..].iter().all(|&b| b == 0xEE),
                "length {n} wrote past the end"
            );
        }
    }

    #[test]
    fn header_fields_survive_the_packed_write() {
        let r = HeapRing::new(g(2, 128)).unwrap();
        let v = r.view();
        v.publish(
            Seq(77),
            Kind::Reply,
            0xA1B2_C3D4,
            Status::DecoderFailed as u16,
            &[1, 2, 3, 4, 5],
        )
        .unwrap();
        let m = v.poll(Seq(77)).unwrap();
        assert_eq!(m.header.decoder_id, 0xA1B2_C3D4);
        assert_eq!(m.header.status, Status::DecoderFailed as u16);
        assert_eq!(m.header.kind, Kind::Reply as u8);
        assert_eq!(m.header.version, backline_wire::WIRE_VERSION);
        assert_eq!(m.header.payload_len, 5);
        assert_eq!(m.payload, &[1, 2, 3, 4, 5]);
    }

    #[test]
    fn capacity_one_and_wrap_around() {
        let r = HeapRing::new(g(1, 64)).unwrap();
        let v = r.view();
        for round in 0..10u64 {
            let s = Seq::of_round(round);
            v.publish(s, Kind::Reply, 0, Status::Ok as u16, &round.to_le_bytes())
                .unwrap();
            let m = v.poll(s).unwrap();
            assert_eq!(m.payload, round.to_le_bytes());
            // The previous round's seq is gone from the only slot.
            if round > 0 {
                assert!(v.poll(Seq::of_round(round - 1)).is_none());
            }
        }
    }

    #[test]
    fn full_capacity_payload_fits_and_one_more_byte_does_not() {
        let r = HeapRing::new(g(2, 128)).unwrap();
        let v = r.view();
        let big = vec![0xAB; 112];
        v.publish(Seq::of_round(1), Kind::Request, 0, 0, &big)
            .unwrap();
        assert_eq!(v.poll(Seq::of_round(1)).unwrap().payload, &big[..]);
        assert!(
            v.publish(Seq::of_round(0), Kind::Request, 0, 0, &[0; 113])
                .is_err()
        );
        // The failed publish did not touch slot 0.
        assert!(v.poll(Seq::of_round(0)).is_none());
    }

    #[test]
    fn seq_wraps_at_u32() {
        let r = HeapRing::new(g(4, 64)).unwrap();
        let v = r.view();
        let round = u32::MAX as u64; // seq 0
        let s = Seq::of_round(round);
        assert_eq!(s.0, 0);
        // A zeroed slot 3 reads as seq 0: round 2^32-1 is never confused with an empty
        // slot in practice because the slot held seq 2^32-4 before; emulate that history.
        v.publish(Seq::of_round(round - 4), Kind::Request, 0, 0, b"old")
            .unwrap();
        assert!(v.poll(s).is_none());
        v.publish(s, Kind::Request, 0, 0, b"new").unwrap();
        assert_eq!(v.poll(s).unwrap().payload, b"new");
        let s2 = Seq::of_round(round + 1);
        assert_eq!(s2, Seq(1));
        v.publish(s2, Kind::Request, 0, 0, b"next").unwrap();
        assert_eq!(v.poll(s2).unwrap().payload, b"next");
    }

    #[test]
    fn corrupt_length_is_clamped_to_the_slot() {
        let r = HeapRing::new(g(1, 64)).unwrap();
        let v = r.view();
        v.publish(Seq(1), Kind::Request, 0, 0, b"x").unwrap();
        // Overwrite payload_len with garbage, as a broken peer might.
        // SAFETY: offset 48 is the payload_len field of slot 0, inside the ring; no reader
        // is active.
        unsafe { v.base().as_ptr().add(48).cast::<u32>().write(0xFFFF_FFFF) };
        assert_eq!(v.poll(Seq(1)).unwrap().payload.len(), 48);
    }

    #[test]
    fn wait_times_out_and_stops() {
        let r = HeapRing::new(g(2, 64)).unwrap();
        let v = r.view();
        for us in [0, -1, 100] {
            let p = WaitPolicy::from_micros(us).unwrap();
            let t0 = Instant::now();
            let e = v
                .wait(Seq(1), &p, Duration::from_millis(30), None)
                .unwrap_err();
            assert!(matches!(e, WaitError::Timeout { seq: 1, .. }));
            assert!(t0.elapsed() >= Duration::from_millis(30));
        }
        let e = v
            .wait(
                Seq(1),
                &WaitPolicy::default(),
                Duration::from_secs(5),
                Some(&|| true),
            )
            .unwrap_err();
        assert_eq!(e, WaitError::Stopped { seq: 1 });
    }

    #[test]
    fn a_reply_in_place_and_its_request_are_never_taken_for_each_other() {
        let r = HeapRing::new(g(2, 64)).unwrap();
        let (rq, rp) = (r.view(), r.replies_view());
        let s = Seq::of_round(0);
        rq.publish(s, Kind::Request, 7, 0, b"ask").unwrap();
        assert!(rp.poll(s).is_none(), "the request is not its own reply");
        let m = rq.poll(s).unwrap();
        assert_eq!(
            (m.payload, m.header.kind),
            (&b"ask"[..], Kind::Request as u8)
        );
        rp.publish(s, Kind::Reply, 7, 0, b"answer").unwrap();
        assert!(rq.poll(s).is_none(), "the reply is not the request");
        let next_lap = Seq::of_round(2); // the same slot, one lap later
        assert!(rq.poll(next_lap).is_none() && rp.poll(next_lap).is_none());
        let m = rp.poll(s).unwrap();
        assert_eq!(
            (m.payload, m.header.kind),
            (&b"answer"[..], Kind::Reply as u8)
        );
        // A wait for a reply that does not come names the round's seq, not its flag.
        let e = rp
            .wait(
                Seq::of_round(1),
                &WaitPolicy::default(),
                Duration::from_millis(5),
                None,
            )
            .unwrap_err();
        assert!(matches!(e, WaitError::Timeout { seq: 2, .. }), "{e}");
    }

    #[test]
    fn blocked_reader_is_woken_by_the_writer() {
        // Always-block policy on both sides of a ping-pong: each side sleeps on the futex at
        // once, so every round needs a wake-up; a lost one would hit the 10 s deadline. Both
        // with two rings and with the replies written over the requests (one ring, two
        // doorbells: each side sleeps on the same words).
        let req = Arc::new(HeapRing::new(g(8, 64)).unwrap());
        let rep = Arc::new(HeapRing::new(g(8, 64)).unwrap());
        blocked_ping_pong(move || (req.view(), rep.view()));
        let one = Arc::new(HeapRing::new(g(8, 64)).unwrap());
        blocked_ping_pong(move || (one.view(), one.replies_view()));
    }

    /// Pins the calling thread to CPU 0.
    fn pin_to_cpu0() {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes within it; the
        // call reads it for the calling thread only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
        }
    }

    /// A ping-pong of two threads on one CPU: the most sleepers the coprocessor side saw on
    /// the reply doorbell when it answered.
    fn sleepers_seen_on_one_cpu(policy: WaitPolicy) -> u32 {
        let ring = Arc::new(HeapRing::new(g(8, 64)).unwrap());
        let r2 = ring.clone();
        let deadline = Duration::from_secs(10);
        let server = std::thread::spawn(move || {
            pin_to_cpu0();
            let (rq, rp) = (r2.view(), r2.replies_view());
            let mut most = 0;
            for round in 0..400u64 {
                let s = Seq::of_round(round);
                rq.wait(s, &policy, deadline, None).unwrap();
                most = most.max(r2.replies_doorbell.0.sleepers.load(Ordering::Relaxed));
                rp.publish(s, Kind::Reply, 0, 0, &[1]).unwrap();
            }
            most
        });
        pin_to_cpu0();
        let (rq, rp) = (ring.view(), ring.replies_view());
        for round in 0..400u64 {
            let s = Seq::of_round(round);
            rq.publish(s, Kind::Request, 0, 0, &[0]).unwrap();
            rp.wait(s, &policy, deadline, None).unwrap();
        }
        server.join().unwrap()
    }

    #[test]
    fn a_waiter_that_shares_its_cpu_with_its_peer_blocks_unless_told_never_to() {
        // On one CPU the peer runs only when the waiter gives the CPU up. A waiter whose
        // yields ran another thread twice in a row blocks in its next long wait, so that the
        // peer's wake-up can place it on a free CPU; the sleeping controller is what the
        // server sees here.
        let t = std::thread::spawn(|| {
            (
                sleepers_seen_on_one_cpu(WaitPolicy::default()),
                sleepers_seen_on_one_cpu(WaitPolicy::from_micros(-1).unwrap()),
            )
        });
        let (default, never) = t.join().unwrap();
        assert!(default > 0, "the controller never blocked");
        assert_eq!(never, 0, "a never-block waiter blocked");
    }

    /// 300 rounds of an always-blocking ping-pong over the views `views` makes (the closure
    /// owns the rings).
    fn blocked_ping_pong(views: impl Fn() -> (RingView, RingView) + Send + Clone + 'static) {
        let p = WaitPolicy::from_micros(0).unwrap();
        let deadline = || Duration::from_secs(10);
        let v2 = views.clone();
        let server = std::thread::spawn(move || {
            let (rq, rp) = v2();
            for round in 0..300u64 {
                let s = Seq::of_round(round);
                let m = rq.wait(s, &p, deadline(), None).unwrap();
                let v = u64::from_le_bytes(m.payload.try_into().unwrap());
                rp.publish(s, Kind::Reply, 0, 0, &(v * 2).to_le_bytes())
                    .unwrap();
            }
        });
        let (rq, rp) = views();
        for round in 0..300u64 {
            let s = Seq::of_round(round);
            if round % 100 == 0 {
                // Let the server fall asleep first.
                std::thread::sleep(Duration::from_millis(2));
            }
            rq.publish(s, Kind::Request, 0, 0, &round.to_le_bytes())
                .unwrap();
            let m = rp.wait(s, &p, deadline(), None).unwrap();
            assert_eq!(m.payload, (round * 2).to_le_bytes());
        }
        server.join().unwrap();
    }
}
