//! The process-wide session registry, keyed by (role, key), safe to use from any thread.

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

/// Sessions by (role, key).
#[derive(Debug, Default)]
pub struct Registry {
    map: Mutex<HashMap<(Role, String), SessionRef>>,
}

impl Registry {
    /// The process-wide registry.
    pub fn global() -> &'static Registry {
        static R: OnceLock<Registry> = OnceLock::new();
        R.get_or_init(Registry::default)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Role, String), SessionRef>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `create(target, role, key, config)`: a new session in state created.
    pub fn create(&self, role: Role, key: &str, config: SessionConfig) -> Result<SessionRef> {
        let mut map = self.lock();
        if map.contains_key(&(role, key.to_string())) {
            return Err(Error::DuplicateKey {
                role: role.name(),
                key: key.to_string(),
            });
        }
        let s = match role {
            Role::Controller => SessionRef::Controller(Arc::new(Mutex::new(
                ControllerSession::create(key, config)?,
            ))),
            Role::Coprocessor => SessionRef::Coprocessor(Arc::new(Mutex::new(
                CoprocessorSession::create(key, config)?,
            ))),
        };
        map.insert((role, key.to_string()), s.clone());
        Ok(s)
    }

    /// `get_session(role, key)`.
    pub fn get_session(&self, role: Role, key: &str) -> Option<SessionRef> {
        self.lock().get(&(role, key.to_string())).cloned()
    }

    /// Removes a session from the registry (it is stopped when its last reference drops).
    pub fn remove(&self, role: Role, key: &str) -> Option<SessionRef> {
        self.lock().remove(&(role, key.to_string()))
    }

    /// Keys registered for `role`, sorted.
    pub fn keys(&self, role: Role) -> Vec<String> {
        let mut v: Vec<String> = self
            .lock()
            .keys()
            .filter(|(r, _)| *r == role)
            .map(|(_, k)| k.clone())
            .collect();
        v.sort();
        v
    }
}
