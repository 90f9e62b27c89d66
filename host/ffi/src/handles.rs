//! Session handles of the C ABI: the registry's [`Handle`]s (a slot index and a generation)
//! cast to the opaque `backline_session *`. The library never dereferences them, so a NULL,
//! stale or forged handle is detected by looking it up in the registry, never by touching
//! memory. There is no table here: the registry is the one table.

use backline_transport::{Entry, Error, Handle, Registry};

use crate::{Fail, backline_session, backline_status};

/// The pointer a C caller holds for `h`.
pub(crate) fn to_ptr(h: Handle) -> *mut backline_session {
    h.0 as usize as *mut backline_session
}

/// The registered session of a pointer a C caller passed.
pub(crate) fn lookup(p: *mut backline_session) -> Result<Entry, Fail> {
    if p.is_null() {
        return Err(Fail::Status(
            backline_status::BACKLINE_STATUS_NULL_HANDLE,
            "session handle is NULL".into(),
        ));
    }
    Registry::global()
        .get(Handle(p as usize as u64))
        .map_err(stale)
}

/// Unregisters the session of a pointer.
pub(crate) fn remove(p: *mut backline_session) -> Result<Entry, Fail> {
    if p.is_null() {
        return Err(Fail::Status(
            backline_status::BACKLINE_STATUS_NULL_HANDLE,
            "session handle is NULL".into(),
        ));
    }
    Registry::global()
        .remove(Handle(p as usize as u64))
        .map_err(stale)
}

fn stale(e: Error) -> Fail {
    Fail::Status(backline_status::BACKLINE_STATUS_STALE_HANDLE, e.to_string())
}
