//! Single-producer, single-consumer slot rings in the layout of `backline-wire`, over any
//! memory: the heap (in-process `memcpy` transport), a shared-memory mapping (`shm`), or a
//! registered RDMA region (`rdma`). Every atomic of the data path lives in this crate: the
//! release store that publishes a slot's `seq`, the acquire load that detects it, and the
//! spin-then-block wait with its futex wake-up.
//!
//! # The protocol
//!
//! A ring carries the messages of one direction. The message of round `r` goes into slot
//! `r % depth` with `seq = r + 1`. The writer fills the payload and the header fields with
//! plain stores, then stores `seq` with `Release`; the reader loads `seq` with `Acquire` and,
//! once it equals the round's value, reads the rest. A writer never reuses a slot before the
//! reader is done with it: the session above guarantees this by never having more than
//! `depth` rounds outstanding (a request slot is reused only after its reply was collected,
//! and a reply slot only after the next request for it arrived).
//!
//! Where both sides share memory (memcpy, shm) the replies travel in the requests' ring, each
//! written over its request ([`RingView::replies_in_place`]) and flagged `seq ^
//! IN_PLACE_REPLY_FLAG`, so that a round moves one cache line there and back instead of
//! two lines each with one writer. The writers of a slot then take turns: the reply after
//! its request was read, the next request after the reply was.
//!
//! # Waiting
//!
//! [`RingView::wait`] spins on the slot for a budget, then blocks on a futex on the `seq` word
//! itself (shared, not process-private, so it works across processes on a shared mapping).
//! A writer wakes sleepers only when the ring's [`Doorbell`] says someone sleeps, so the fast
//! path costs one fence and one load of a line nobody writes while rounds flow. The
//! orderings of both live in [`protocol`], which `tests/loom.rs` model-checks.
#![deny(missing_docs)]

mod heap;
mod padded;
pub mod protocol;
mod server;
mod view;
mod wait;

pub use heap::{HeapRing, RingError};
pub use padded::CachePadded;
pub use server::{AttachError, AttachedRings, RingServer};
pub use view::{Message, RingView, copy_small};
pub use wait::{
    Doorbell, MAX_NAP, SpinBudget, SpinPhase, WaitError, WaitPolicy, futex_wait, futex_wake,
};

#[cfg(not(target_endian = "little"))]
compile_error!("backline's wire format is little-endian and rings are accessed in place");
