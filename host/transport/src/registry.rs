//! The process-wide session registry: every session by (role, key), and by a handle — an
//! opaque token of a slot index and a generation, never a pointer — so that a stale or forged
//! handle is detected by looking it up, never by touching memory. The C ABI hands these
//! handles out as its session pointers; it keeps no table of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::{ControllerSession, CoprocessorSession, Error, Result, Role, SessionConfig};

/// A registered session. Each is behind its own mutex, so sessions do not contend.
#[derive(Clone, Debug)]
pub enum SessionRef {
    /// A controller.
    Controller(Arc<Mutex<ControllerSession>>),
    /// A coprocessor.
    Coprocessor(Arc<Mutex<CoprocessorSession>>),
}

impl SessionRef {
    /// The role.
    pub fn role(&self) -> Role {
        match self {
            SessionRef::Controller(_) => Role::Controller,
            SessionRef::Coprocessor(_) => Role::Coprocessor,
        }
    }
}

/// The hardware a session's node runs on (SPEC §3's `create(target, …)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hardware {
    /// This process's CPU.
    Cpu,
    /// A GPU: a coprocessor whose functions are persistent-kernel functions (`gpu:` specs).
    Gpu,
}

/// A session's handle: `(generation << 32) | (slot + 1)`; 0 is never issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(pub u64);

impl Handle {
    fn new(slot: usize, generation: u32) -> Handle {
        Handle(((generation as u64) << 32) | (slot as u64 + 1))
    }
    fn slot(self) -> Option<(usize, u32)> {
        let low = (self.0 & 0xFFFF_FFFF) as usize;
        (low != 0).then(|| (low - 1, (self.0 >> 32) as u32))
    }
}

/// A registered session and what it was created as.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its role.
    pub role: Role,
    /// Its key.
    pub key: String,
    /// What it runs on.
    pub hardware: Hardware,
    /// The session.
    pub session: SessionRef,
}

#[derive(Debug, Default)]
struct Inner {
    slots: Vec<(u32, Option<Entry>)>,
    by_key: HashMap<(Role, String), usize>,
}

/// Sessions by handle and by (role, key).
#[derive(Debug, Default)]
pub struct Registry {
    inner: Mutex<Inner>,
}

impl Registry {
    /// The process-wide registry.
    pub fn global() -> &'static Registry {
        static R: OnceLock<Registry> = OnceLock::new();
        R.get_or_init(Registry::default)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `create(target, role, key, config)`: a new session in state created.
    pub fn create(
        &self,
        hardware: Hardware,
        role: Role,
        key: &str,
        config: SessionConfig,
    ) -> Result<(Handle, SessionRef)> {
        let mut inner = self.lock();
        if inner.by_key.contains_key(&(role, key.to_string())) {
            return Err(Error::DuplicateKey {
                role: role.name(),
                key: key.to_string(),
            });
        }
        let session = match role {
            Role::Controller => SessionRef::Controller(Arc::new(Mutex::new(
                ControllerSession::create(key, config)?,
            ))),
            Role::Coprocessor => SessionRef::Coprocessor(Arc::new(Mutex::new(
                CoprocessorSession::create(key, config)?,
            ))),
        };
        let entry = Some(Entry {
            role,
            key: key.to_string(),
            hardware,
            session: session.clone(),
        });
        let i = match inner.slots.iter().position(|s| s.1.is_none()) {
            Some(i) => {
                let s = &mut inner.slots[i];
                s.0 = s.0.wrapping_add(1);
                s.1 = entry;
                i
            }
            None => {
                inner.slots.push((1, entry));
                inner.slots.len() - 1
            }
        };
        inner.by_key.insert((role, key.to_string()), i);
        Ok((Handle::new(i, inner.slots[i].0), session))
    }

    fn check(inner: &Inner, h: Handle) -> Result<usize> {
        let (i, g) = h.slot().ok_or(Error::StaleHandle)?;
        match inner.slots.get(i) {
            Some((gen_, Some(_))) if *gen_ == g => Ok(i),
            _ => Err(Error::StaleHandle),
        }
    }

    /// The session of a handle.
    pub fn get(&self, h: Handle) -> Result<Entry> {
        let inner = self.lock();
        let i = Self::check(&inner, h)?;
        Ok(inner.slots[i].1.clone().expect("checked"))
    }

    /// The handle of (role, key).
    pub fn find(&self, role: Role, key: &str) -> Option<Handle> {
        let inner = self.lock();
        let i = *inner.by_key.get(&(role, key.to_string()))?;
        Some(Handle::new(i, inner.slots[i].0))
    }

    /// `get_session(role, key)`.
    pub fn get_session(&self, role: Role, key: &str) -> Option<SessionRef> {
        let inner = self.lock();
        let i = *inner.by_key.get(&(role, key.to_string()))?;
        inner.slots[i].1.as_ref().map(|e| e.session.clone())
    }

    /// Unregisters a session and invalidates its handle (the session is stopped when its last
    /// reference drops).
    pub fn remove(&self, h: Handle) -> Result<Entry> {
        let mut inner = self.lock();
        let i = Self::check(&inner, h)?;
        let e = inner.slots[i].1.take().expect("checked");
        inner.by_key.remove(&(e.role, e.key.clone()));
        Ok(e)
    }

    /// Keys registered for `role`, sorted.
    pub fn keys(&self, role: Role) -> Vec<String> {
        let mut v: Vec<String> = self
            .lock()
            .by_key
            .keys()
            .filter(|(r, _)| *r == role)
            .map(|(_, k)| k.clone())
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TransportKind;

    #[test]
    fn handles_are_checked_and_never_reused_for_another_session() {
        let r = Registry::default();
        let cfg = SessionConfig::new(TransportKind::Memcpy);
        let (h, _) = r
            .create(Hardware::Cpu, Role::Controller, "a", cfg.clone())
            .unwrap();
        assert!(r.get(h).is_ok());
        assert_eq!(r.find(Role::Controller, "a"), Some(h));
        assert!(matches!(
            r.create(Hardware::Cpu, Role::Controller, "a", cfg.clone()),
            Err(Error::DuplicateKey { .. })
        ));
        r.remove(h).unwrap();
        assert!(matches!(r.get(h), Err(Error::StaleHandle)));
        assert!(matches!(r.remove(h), Err(Error::StaleHandle)));
        // The slot is reused with a new generation: the old handle stays stale.
        let (h2, _) = r
            .create(Hardware::Gpu, Role::Coprocessor, "b", cfg)
            .unwrap();
        assert_ne!(h, h2);
        assert!(matches!(r.get(h), Err(Error::StaleHandle)));
        assert_eq!(r.get(h2).unwrap().hardware, Hardware::Gpu);
        assert!(matches!(r.get(Handle(0)), Err(Error::StaleHandle)));
        assert!(matches!(
            r.get(Handle(0xdead_beef)),
            Err(Error::StaleHandle)
        ));
        assert_eq!(r.keys(Role::Coprocessor), ["b"]);
    }
}
