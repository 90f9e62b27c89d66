//! Cache-line padding.

use core::ops::{Deref, DerefMut};

/// Aligns and pads `T` to 128 bytes, so that two `CachePadded` values never share a cache line
/// nor an adjacent-line prefetch pair (x86-64 prefetches lines in pairs; big aarch64 cores use
/// 128-byte lines). `repr(C)` keeps `T` at offset 0.
#[derive(Debug, Default)]
#[repr(C, align(128))]
pub struct CachePadded<T>(pub T);

impl<T> Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for CachePadded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

const _: () = assert!(core::mem::align_of::<CachePadded<u8>>() == 128);
