//! `memcpy`: controller and coprocessor threads in one process. The coprocessor opens a port
//! under its session key; a controller finds it by that key, allocates its ring on the heap,
//! and hands it over; the server serves each controller on a thread of its own. Replies are
//! written in place, over their requests ([`backline_wire::IN_PLACE_REPLY_FLAG`]). No fabric:
//! a round is one cache line moved there and back.
//!
//! A coprocessor that serves rings of its own (a GPU kernel polling mapped host memory, see
//! [`backline_ring::RingServer`]) takes the port over instead: the controller then attaches to
//! those rings and writes where the kernel polls, with no thread in between.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use backline_ring::{CachePadded, HeapRing, RingServer, WaitPolicy};
use backline_wire::{Geometry, RejectReason};

use crate::link::{
    Accepted, Admission, AdmitGuard, Listener, RingController, RingCoprocessor, RingPair, StopFlag,
};
use crate::{Error, Result};

/// A controller's ring on its way to the server.
struct Attach {
    ring: Arc<HeapRing>,
    bye: Arc<CachePadded<AtomicBool>>,
    guard: AdmitGuard,
    /// Set by the server when it took the ring.
    taken: Arc<AtomicBool>,
}

#[derive(Default)]
struct PortState {
    pending: VecDeque<Attach>,
    /// A coprocessor serving its own rings; controllers attach to it directly.
    external: Option<Arc<dyn RingServer>>,
}

/// One in-process coprocessor endpoint.
pub(crate) struct Port {
    key: String,
    geometry: Geometry,
    admission: Arc<Admission>,
    state: Mutex<PortState>,
    cv: Condvar,
    sessions: AtomicU64,
}

fn ports() -> &'static Mutex<HashMap<String, Arc<Port>>> {
    static PORTS: OnceLock<Mutex<HashMap<String, Arc<Port>>>> = OnceLock::new();
    PORTS.get_or_init(Default::default)
}

/// The coprocessor side: owns the port's registration.
pub(crate) struct MemcpyListener {
    port: Arc<Port>,
}

impl MemcpyListener {
    /// Opens the port `key`; fails if another coprocessor in this process holds it.
    pub(crate) fn open(
        key: &str,
        geometry: Geometry,
        admission: Arc<Admission>,
    ) -> Result<MemcpyListener> {
        let mut map = ports().lock().unwrap_or_else(|p| p.into_inner());
        if map.contains_key(key) {
            return Err(Error::InUse(format!("memcpy port `{key}`")));
        }
        let port = Arc::new(Port {
            key: key.to_string(),
            geometry,
            admission,
            state: Mutex::default(),
            cv: Condvar::new(),
            sessions: AtomicU64::new(0),
        });
        map.insert(key.to_string(), port.clone());
        Ok(MemcpyListener { port })
    }
}

impl Drop for MemcpyListener {
    fn drop(&mut self) {
        let mut map = ports().lock().unwrap_or_else(|p| p.into_inner());
        if map
            .get(&self.port.key)
            .is_some_and(|p| Arc::ptr_eq(p, &self.port))
        {
            map.remove(&self.port.key);
        }
    }
}

impl Listener for MemcpyListener {
    fn accept(&mut self, _wait: &WaitPolicy, stop: &StopFlag) -> Result<Option<Accepted>> {
        let mut st = self.port.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if stop.is_set() {
                return Ok(None);
            }
            if let Some(a) = st.pending.pop_front() {
                // Release: the controller waiting for this hand-over sees it (pairs with its
                // Acquire load under the same lock).
                a.taken.store(true, Ordering::Release);
                self.port.cv.notify_all();
                let n = self.port.sessions.fetch_add(1, Ordering::Relaxed) + 1;
                let (bye, stop) = (a.bye, stop.clone());
                return Ok(Some(Accepted {
                    link: Box::new(RingCoprocessor {
                        rings: in_place(a.ring),
                        ended: Box::new(move || bye.load(Ordering::Relaxed) || stop.is_set()),
                        peer: format!("memcpy:{}#{n}", self.port.key),
                        polls: 0,
                    }),
                    guard: a.guard,
                }));
            }
            st = self
                .port
                .cv
                .wait_timeout(st, Duration::from_millis(20))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn address(&self) -> String {
        format!("memcpy:{}", self.port.key)
    }

    fn peer_address(&self) -> String {
        self.port.key.clone()
    }

    fn serve_externally(&mut self, server: Arc<dyn RingServer>) -> bool {
        let mut st = self.port.state.lock().unwrap_or_else(|p| p.into_inner());
        st.external = Some(server);
        true
    }
}

/// Requests and, written over them, their replies in one heap ring.
fn in_place(ring: Arc<HeapRing>) -> RingPair {
    RingPair {
        req: ring.view(),
        rep: ring.replies_view(),
        _keep: Box::new(ring),
    }
}

/// Finds the coprocessor port `key` in this process.
pub(crate) fn find(key: &str) -> Result<Arc<Port>> {
    ports()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(key)
        .cloned()
        .ok_or_else(|| {
            Error::NoPeer(format!(
                "memcpy:{key} (no coprocessor session with this key in this process)"
            ))
        })
}

/// Checks the geometry against the port's.
pub(crate) fn exchange(port: &Port, geometry: Geometry) -> Result<()> {
    if port.geometry != geometry {
        return Err(Error::GeometryMismatch {
            local: geometry,
            peer: port.geometry,
        });
    }
    Ok(())
}

/// Allocates the ring, hands it to the port's server and waits (up to `timeout`) until the
/// server has taken it, so that round 0 does not include the server's wake-up.
pub(crate) fn attach(
    port: Arc<Port>,
    geometry: Geometry,
    timeout: Duration,
) -> Result<RingController> {
    exchange(&port, geometry)?;
    let mut st = port.state.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(server) = st.external.clone() {
        drop(st);
        return attach_external(&port, server, geometry);
    }
    let guard = port
        .admission
        .try_admit()
        .ok_or(Error::Rejected(RejectReason::Full))?;
    let ring = Arc::new(HeapRing::new(geometry)?);
    let bye = Arc::new(CachePadded(AtomicBool::new(false)));
    let taken = Arc::new(AtomicBool::new(false));
    st.pending.push_back(Attach {
        ring: ring.clone(),
        bye: bye.clone(),
        guard,
        taken: taken.clone(),
    });
    port.cv.notify_all();
    let t0 = std::time::Instant::now();
    while !taken.load(Ordering::Acquire) {
        let left = timeout.saturating_sub(t0.elapsed());
        if left.is_zero() {
            st.pending.retain(|a| !Arc::ptr_eq(&a.taken, &taken));
            return Err(Error::Timeout {
                what: format!(
                    "the coprocessor memcpy:{} to take the session (is it started?)",
                    port.key
                ),
                waited: t0.elapsed(),
            });
        }
        st = port
            .cv
            .wait_timeout(st, left.min(Duration::from_millis(20)))
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    drop(st);
    let weak = Arc::downgrade(&port);
    Ok(RingController::new(
        in_place(ring),
        format!("memcpy:{}", port.key),
        Box::new(move || bye.store(true, Ordering::Relaxed)),
        Box::new(move || {
            weak.upgrade().is_some_and(|p| {
                ports()
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&p.key)
                    .is_some_and(|q| Arc::ptr_eq(q, &p))
            })
        }),
    ))
}

/// Attaches a controller to the rings of a coprocessor that serves its own.
fn attach_external(
    port: &Arc<Port>,
    server: Arc<dyn RingServer>,
    geometry: Geometry,
) -> Result<RingController> {
    let rings = server.attach(geometry).map_err(|e| match e {
        backline_ring::AttachError::Busy => Error::Rejected(RejectReason::Busy),
        e => Error::Failed(format!("{}: {e}", server.describe())),
    })?;
    let (bye, alive) = (server.clone(), server.clone());
    Ok(RingController::new(
        RingPair {
            req: rings.req,
            rep: rings.rep,
            // The rings belong to the server: keep it alive while they are used.
            _keep: Box::new(ServerRef(server)),
        },
        format!("memcpy:{} ({})", port.key, alive.describe()),
        Box::new(move || bye.detach()),
        Box::new(move || alive.alive()),
    ))
}

/// Keeps a ring server alive (its rings are in use).
struct ServerRef(#[allow(dead_code)] Arc<dyn RingServer>);
