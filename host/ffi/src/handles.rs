//! Session handles: opaque tokens `(generation << 32) | (slot + 1)` cast to a pointer type.
//! The library never dereferences them, so a NULL, stale or forged handle is detected by
//! looking it up, never by touching memory.

use std::sync::{LazyLock, Mutex};

use backline_transport::{Role, SessionRef};

use crate::{Fail, backline_session, backline_status};

struct Slot {
    generation: u32,
    entry: Option<(Role, String, SessionRef)>,
    /// The session was created for target "gpu" (a coprocessor whose functions run on a GPU).
    gpu: bool,
}

/// The process-wide handle table.
pub(crate) struct Handles {
    slots: Mutex<Vec<Slot>>,
}

pub(crate) static HANDLES: LazyLock<Handles> = LazyLock::new(|| Handles {
    slots: Mutex::new(Vec::new()),
});

fn encode(index: usize, generation: u32) -> *mut backline_session {
    (((generation as u64) << 32) | (index as u64 + 1)) as usize as *mut backline_session
}

fn decode(h: *mut backline_session) -> Option<(usize, u32)> {
    let v = h as usize as u64;
    let low = (v & 0xFFFF_FFFF) as usize;
    (low != 0).then(|| (low - 1, (v >> 32) as u32))
}

impl Handles {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Issues a handle for a new session (`gpu`: created for target "gpu").
    pub(crate) fn insert(
        &self,
        role: Role,
        key: &str,
        s: SessionRef,
        gpu: bool,
    ) -> *mut backline_session {
        let mut slots = self.lock();
        let entry = Some((role, key.to_string(), s));
        let i = match slots.iter().position(|s| s.entry.is_none()) {
            Some(i) => {
                slots[i].generation = slots[i].generation.wrapping_add(1);
                slots[i].entry = entry;
                slots[i].gpu = gpu;
                i
            }
            None => {
                slots.push(Slot {
                    generation: 1,
                    entry,
                    gpu,
                });
                slots.len() - 1
            }
        };
        encode(i, slots[i].generation)
    }

    fn check(slots: &[Slot], h: *mut backline_session) -> Result<usize, Fail> {
        if h.is_null() {
            return Err(Fail::Status(
                backline_status::BACKLINE_STATUS_NULL_HANDLE,
                "session handle is NULL".into(),
            ));
        }
        let stale = || {
            Fail::Status(
                backline_status::BACKLINE_STATUS_STALE_HANDLE,
                "session handle is stale (destroyed) or was never issued".into(),
            )
        };
        let (i, g) = decode(h).ok_or_else(stale)?;
        match slots.get(i) {
            Some(s) if s.generation == g && s.entry.is_some() => Ok(i),
            _ => Err(stale()),
        }
    }

    /// The session behind a handle.
    pub(crate) fn get(&self, h: *mut backline_session) -> Result<SessionRef, Fail> {
        let slots = self.lock();
        let i = Self::check(&slots, h)?;
        Ok(slots[i].entry.as_ref().expect("checked").2.clone())
    }

    /// Whether the session behind a handle was created for target "gpu".
    pub(crate) fn is_gpu(&self, h: *mut backline_session) -> Result<bool, Fail> {
        let slots = self.lock();
        let i = Self::check(&slots, h)?;
        Ok(slots[i].gpu)
    }

    /// The live handle of (role, key).
    pub(crate) fn find(&self, role: Role, key: &str) -> Option<*mut backline_session> {
        let slots = self.lock();
        slots.iter().enumerate().find_map(|(i, s)| match &s.entry {
            Some((r, k, _)) if *r == role && k == key => Some(encode(i, s.generation)),
            _ => None,
        })
    }

    /// Invalidates a handle and returns its session.
    pub(crate) fn remove(
        &self,
        h: *mut backline_session,
    ) -> Result<(Role, String, SessionRef), Fail> {
        let mut slots = self.lock();
        let i = Self::check(&slots, h)?;
        Ok(slots[i].entry.take().expect("checked"))
    }
}
