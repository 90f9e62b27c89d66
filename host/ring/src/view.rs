//! A view of one ring in memory owned elsewhere.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use backline_wire::{
    DecoderId, Geometry, GeometryError, HEADER_BYTES, IN_PLACE_REPLY_FLAG, Kind, SLOT_ALIGN, Seq,
    SlotHeader, WIRE_VERSION,
};

use crate::protocol;
use crate::wait::{self, Doorbell, WaitError, WaitPolicy};

/// Copies `src` to `dst` without a library call for the small payloads of the hot path
/// (overlapping word moves for up to 16 bytes), with `copy_nonoverlapping` beyond.
///
/// # Safety
/// `dst` is valid for writing `src.len()` bytes and does not overlap `src`.
#[inline(always)]
unsafe fn small_copy(src: &[u8], dst: *mut u8) {
    let n = src.len();
    let s = src.as_ptr();
    // SAFETY: in every branch the reads stay within `src` and the writes within `dst[..n]`
    // (the caller's contract); unaligned accesses are explicit.
    unsafe {
        match n {
            0 => {}
            1..=3 => {
                dst.write(*s);
                dst.add(n / 2).write(*s.add(n / 2));
                dst.add(n - 1).write(*s.add(n - 1));
            }
            4..=7 => {
                dst.cast::<u32>()
                    .write_unaligned(s.cast::<u32>().read_unaligned());
                dst.add(n - 4)
                    .cast::<u32>()
                    .write_unaligned(s.add(n - 4).cast::<u32>().read_unaligned());
            }
            8..=16 => {
                dst.cast::<u64>()
                    .write_unaligned(s.cast::<u64>().read_unaligned());
                dst.add(n - 8)
                    .cast::<u64>()
                    .write_unaligned(s.add(n - 8).cast::<u64>().read_unaligned());
            }
            _ => std::ptr::copy_nonoverlapping(s, dst, n),
        }
    }
}

/// Copies `src` into the front of `dst` (which must be at least as long) the way the ring
/// does: without a library call for small payloads.
#[inline]
pub fn copy_small(dst: &mut [u8], src: &[u8]) {
    assert!(dst.len() >= src.len(), "copy_small: destination too short");
    // SAFETY: `dst` holds at least `src.len()` bytes and a `&mut` cannot overlap `src`.
    unsafe { small_copy(src, dst.as_mut_ptr()) }
}

/// A message found in a slot: its header and a borrow of its payload in place.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// The header, read after the `seq` that announced it.
    pub header: SlotHeader,
    /// The payload, in the ring.
    pub payload: &'a [u8],
}

/// A ring of `geometry.depth` slots at `base`, with an optional doorbell for blocking waits.
///
/// `RingView` is a plain pointer pair: copies of it may live on both sides of a ring (in one
/// process for `memcpy`, in two for `shm`). Whoever creates it promises, through
/// [`RingView::new`], that the memory outlives every copy and that the writer/reader protocol
/// of the crate docs is followed.
///
/// A view made by [`RingView::replies_in_place`] carries the replies to another view's
/// requests in the same slots; its arrival flags are the requests' with
/// [`IN_PLACE_REPLY_FLAG`] flipped.
#[derive(Debug, Clone, Copy)]
pub struct RingView {
    base: NonNull<u8>,
    geometry: Geometry,
    doorbell: Option<NonNull<Doorbell>>,
    /// XORed into a message's `seq` to make its arrival flag: 0, or [`IN_PLACE_REPLY_FLAG`].
    flag: u32,
}

// SAFETY: a RingView only hands out access that the protocol makes data-race free: atomics
// for `seq`, and plain slot bytes that exactly one side writes between two publications.
unsafe impl Send for RingView {}
// SAFETY: as above; `&RingView` allows the same operations as a copy.
unsafe impl Sync for RingView {}

impl RingView {
    /// A view of the ring at `base`.
    ///
    /// # Safety
    /// - `base` is aligned to 64 bytes and valid for reads and writes of
    ///   `geometry.ring_bytes()` bytes for as long as any copy of the view is used;
    /// - `doorbell`, if given, points to a live [`Doorbell`] for as long;
    /// - writers and readers follow the crate's protocol: a slot is written only by its one
    ///   writer, and only after the reader is done with the slot's previous message.
    pub unsafe fn new(
        base: NonNull<u8>,
        geometry: Geometry,
        doorbell: Option<NonNull<Doorbell>>,
    ) -> Result<RingView, GeometryError> {
        let geometry = geometry.validate()?;
        assert_eq!(
            base.as_ptr() as usize % SLOT_ALIGN,
            0,
            "ring base must be 64-byte aligned"
        );
        Ok(RingView {
            base,
            geometry,
            doorbell,
            flag: 0,
        })
    }

    /// A view of this ring's slots for the replies to its requests, written in place: the
    /// reply to `seq` over the request of `seq`, flagged `seq ^ IN_PLACE_REPLY_FLAG`, with
    /// `doorbell` for the reply reader's blocking waits. A round then moves one cache line
    /// between the two sides instead of two (see [`IN_PLACE_REPLY_FLAG`]).
    ///
    /// # Safety
    /// As for [`RingView::new`] for `doorbell`; and the two writers of a slot take turns: the
    /// reply to `seq` is written only after the request of `seq` has been read to its end
    /// (the coprocessor answers from a scratch buffer), and the request of `seq + depth` only
    /// after the reply to `seq` has been read (a controller has at most `depth` rounds out).
    pub unsafe fn replies_in_place(&self, doorbell: Option<NonNull<Doorbell>>) -> RingView {
        RingView {
            doorbell,
            flag: self.flag ^ IN_PLACE_REPLY_FLAG,
            ..*self
        }
    }

    /// The value the `seq` word of a message of `seq` holds in this view.
    #[inline(always)]
    fn flag_of(&self, seq: Seq) -> u32 {
        seq.0 ^ self.flag
    }

    /// The ring's shape.
    #[inline]
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Base address (for RDMA registration and remote addressing).
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    #[inline]
    fn slot_end(&self, seq: Seq) -> *mut u8 {
        let off = self.geometry.slot_offset(seq) + self.geometry.slot_bytes as usize;
        // SAFETY: `slot_offset < ring_bytes`, so the slot's end is within or one past the
        // ring, which `new`'s contract makes a valid allocation.
        unsafe { self.base.as_ptr().add(off) }
    }

    #[inline]
    fn seq_word(&self, seq: Seq) -> &AtomicU32 {
        // SAFETY: the last four bytes of the slot are 4-aligned (slots are 64-aligned and
        // ≥ 64 bytes) and live as long as `self` (contract of `new`); they are only ever
        // accessed atomically.
        unsafe { AtomicU32::from_ptr(self.slot_end(seq).sub(4).cast()) }
    }

    fn doorbell(&self) -> Option<&Doorbell> {
        // SAFETY: `new`'s contract keeps the doorbell alive as long as the view.
        self.doorbell.map(|d| unsafe { d.as_ref() })
    }

    /// Writes a message into the slot of `seq` and publishes it: payload and header fields
    /// first, then `seq` ([`protocol::publish`]), then wakes a sleeping reader if there is one.
    #[inline]
    pub fn publish(
        &self,
        seq: Seq,
        kind: Kind,
        decoder_id: DecoderId,
        status: u16,
        payload: &[u8],
    ) -> Result<(), GeometryError> {
        self.write(seq, kind, decoder_id, status, payload)?;
        self.publish_written(seq);
        Ok(())
    }

    /// Writes payload and header fields of the slot of `seq` without publishing it (the RDMA
    /// path sends this image with one WRITE; `seq` is part of the written bytes).
    #[inline]
    pub fn write(
        &self,
        seq: Seq,
        kind: Kind,
        decoder_id: DecoderId,
        status: u16,
        payload: &[u8],
    ) -> Result<(), GeometryError> {
        self.geometry.check_payload(payload.len())?;
        let end = self.slot_end(seq);
        // Header bytes 0..12 as one little-endian u64 and one u32 (layout pinned in
        // backline-wire): payload_len, decoder_id | status, kind, version.
        let lo = payload.len() as u64 | (decoder_id as u64) << 32;
        let hi = status as u32 | (kind as u32) << 16 | (WIRE_VERSION as u32) << 24;
        // SAFETY: payload + header fit the slot (checked above) and end at its end; the slot
        // is ours to write (protocol). The seq word (last 4 bytes) is not touched here.
        unsafe {
            let hdr = end.sub(HEADER_BYTES);
            small_copy(payload, hdr.sub(payload.len()));
            hdr.cast::<u64>().write_unaligned(lo.to_le());
            hdr.add(8).cast::<u32>().write_unaligned(hi.to_le());
        }
        Ok(())
    }

    /// Publishes `seq` in its slot ([`protocol::publish`]) and wakes a sleeping reader. The
    /// slot must have been filled by [`RingView::write`].
    #[inline]
    pub fn publish_written(&self, seq: Seq) {
        let word = self.seq_word(seq);
        let sleepers = self.doorbell().map(|db| &db.sleepers);
        protocol::publish(word, self.flag_of(seq), sleepers, || wait::futex_wake(word));
    }

    /// The contiguous bytes of the slot of `seq` that a message of `payload_len` occupies
    /// (payload, header, seq last): what an RDMA WRITE sends. Returns (offset from base, len).
    pub fn message_range(&self, seq: Seq, payload_len: usize) -> (usize, usize) {
        self.geometry.message_range(seq, payload_len)
    }

    /// Stores `seq` into the slot image without publishing semantics (used to prepare a local
    /// staging image that is then sent by RDMA).
    pub fn stamp(&self, seq: Seq) {
        self.seq_word(seq)
            .store(self.flag_of(seq), Ordering::Relaxed);
    }

    /// The message of `seq` if it has arrived (`Acquire`), else `None`.
    ///
    /// A header whose length exceeds the slot is clamped to the slot's capacity: a corrupt
    /// peer cannot make us read outside the ring.
    #[inline]
    pub fn poll(&self, seq: Seq) -> Option<Message<'_>> {
        protocol::arrived(self.seq_word(seq), self.flag_of(seq)).then(|| self.read(seq))
    }

    /// Reads the message in the slot of `seq` (after its arrival was observed).
    #[inline(always)]
    fn read(&self, seq: Seq) -> Message<'_> {
        let end = self.slot_end(seq);
        let mut hb = [0u8; HEADER_BYTES];
        // SAFETY: the header lies within the slot; the Acquire load in `poll` ordered these
        // reads after the writer's stores, and the writer does not touch the slot again until
        // we release it (protocol).
        unsafe {
            std::ptr::copy_nonoverlapping(end.sub(HEADER_BYTES), hb.as_mut_ptr(), HEADER_BYTES);
        }
        let header = SlotHeader::from_bytes(&hb);
        let len = (header.payload_len as usize).min(self.geometry.payload_capacity());
        // SAFETY: `len` ≤ capacity, so the payload lies within the slot; same ordering
        // argument as above; the borrow is tied to `self`.
        let payload =
            unsafe { std::slice::from_raw_parts(end.sub(HEADER_BYTES + len).cast_const(), len) };
        Message { header, payload }
    }

    /// Waits for the message of `seq`: spins for the policy's budget, then blocks, for at most
    /// `timeout`. `stop` is asked now and then (every 64 polls, and after each nap of at
    /// most 20 ms); when it says `true` the wait ends with [`WaitError::Stopped`].
    #[inline]
    pub fn wait(
        &self,
        seq: Seq,
        policy: &WaitPolicy,
        timeout: Duration,
        stop: Option<&dyn Fn() -> bool>,
    ) -> Result<Message<'_>, WaitError> {
        let word = self.seq_word(seq);
        let flag = self.flag_of(seq);
        if protocol::arrived(word, flag) {
            return Ok(self.read(seq));
        }
        wait::wait_on(word, self.doorbell(), policy, timeout, stop, flag, || {
            protocol::arrived(word, flag).then_some(())
        })
        .map_err(|e| e.of_seq(seq))?;
        Ok(self.read(seq))
    }

    /// The raw bytes of the whole ring (for staging copies and tests).
    ///
    /// # Safety
    /// No slot of the ring may be written while the returned slice is alive.
    pub unsafe fn bytes(&self) -> &[u8] {
        // SAFETY: the caller upholds the no-writer condition; the range is the ring.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.geometry.ring_bytes()) }
    }
}
