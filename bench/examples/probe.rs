//! Where a round's time goes, layer by layer, against the floor measured around it, in each
//! vCPU placement the run lands in.
//!
//! Layers, for each ring depth given on the command line: the one-cache-line bounce (the
//! floor); a bare ring ping-pong (publish/wait on `backline-ring` views, no session) with the
//! replies in a ring of their own (`split`) and written over the requests as the sessions do
//! (`ring`); the session's controller half alone (`client`, attached to a bare ring server);
//! and a full memcpy session (`sess`, stage/post/collect to the Steane responder).
//!
//! The host moves this machine's two vCPUs between placements every few seconds, and the
//! floor differs between them by 4×, so one ratio over a long run mixes placements. Here a
//! run is many short repetitions: floor, every layer, floor again. A repetition whose two
//! floors differ by more than 15 % saw a placement change and is left out (and counted). The
//! others are grouped by their floor median (a new group where the sorted floors jump by more
//! than 20 %), and each group gets a row: how many repetitions, the floor median, and per
//! layer the median of the per-repetition ratios to the floor of the median and of P99.9.
//!
//! ```text
//! cargo run --release -p backline-bench --example probe -- 1 8
//! REPS=200 ROUNDS=20000 cargo run --release -p backline-bench --example probe -- 8
//! ONLY=sess perf record -e cpu-clock target/release/examples/probe 8   # one layer, long
//! ```

use backline_ring::{HeapRing, RingView, WaitPolicy};
use backline_wire::{Geometry, Kind, Seq};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Median and P99.9 of one chunk's round trips (ns).
#[derive(Clone, Copy)]
struct Chunk {
    median: f64,
    p999: f64,
}

impl Chunk {
    /// Leaves out the first tenth of the rounds: a thread just started may share a CPU with
    /// its partner until the scheduler moves it.
    fn of(mut v: Vec<f64>) -> Chunk {
        v.drain(..v.len() / 10);
        v.sort_by(f64::total_cmp);
        Chunk {
            median: v[v.len() / 2],
            p999: v[(v.len() as f64 * 0.999) as usize],
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Request and reply views: of two rings, or of one with the replies in place.
fn views(req: &HeapRing, rep: &HeapRing, in_place: bool) -> (RingView, RingView) {
    if in_place {
        (req.view(), req.replies_view())
    } else {
        (req.view(), rep.view())
    }
}

fn ring(depth: u32, n: u64, in_place: bool) -> Chunk {
    let g = Geometry {
        depth,
        slot_bytes: 64,
    };
    let req = Arc::new(HeapRing::new(g).unwrap());
    let rep = Arc::new(HeapRing::new(g).unwrap());
    let (r2, p2) = (req.clone(), rep.clone());
    let pol = WaitPolicy::from_micros(-1).unwrap();
    let t = std::thread::spawn(move || {
        let (rq, rp) = views(&r2, &p2, in_place);
        let mut out = [0u8; 1];
        for r in 0..n {
            let s = Seq::of_round(r);
            let m = rq.wait(s, &pol, Duration::from_secs(5), None).unwrap();
            out[0] = m.payload[0];
            rp.publish(s, Kind::Reply, 0, 0, &out).unwrap();
        }
    });
    let (rq, rp) = views(&req, &rep, in_place);
    let mut v = Vec::with_capacity(n as usize);
    for r in 0..n {
        let s = Seq::of_round(r);
        let t0 = Instant::now();
        rq.publish(s, Kind::Request, 0, 0, &r.to_le_bytes())
            .unwrap();
        rp.wait(s, &pol, Duration::from_secs(5), None).unwrap();
        v.push(t0.elapsed().as_nanos() as f64);
    }
    t.join().unwrap();
    Chunk::of(v)
}

/// A memcpy session's rounds: to the Steane responder through the serving thread, or (`bare`)
/// to a [`BareServer`].
fn session(depth: u32, n: u64, bare: bool) -> Chunk {
    use backline_transport::*;
    static KEYS: AtomicU64 = AtomicU64::new(0);
    let mut cfg = SessionConfig::new(TransportKind::Memcpy);
    cfg.geometry.depth = depth;
    cfg.wait = WaitPolicy::from_micros(-1).unwrap();
    // Relaxed: a counter for unique names, no data behind it.
    let key = format!("probe-{}", KEYS.fetch_add(1, Ordering::Relaxed));
    let table = if bare {
        backline_responder::ResponderTable::single(Arc::new(BareResponder(Arc::new(BareServer {
            geometry: cfg.geometry,
            rings: Default::default(),
            rounds: n,
        }))))
    } else {
        backline_responder::ResponderTable::single(Arc::new(backline_responder::Steane))
    };
    let _srv = CoprocessorSession::open(&key, cfg.clone(), "", 0, &table, ServeOptions::default())
        .unwrap();
    let mut c = ControllerSession::open(&key, cfg, &key, 0).unwrap();
    let mut v = Vec::with_capacity(n as usize);
    let p = [3u8, 0, 0, 0, 0, 0, 0, 0];
    for _ in 0..n {
        let t0 = Instant::now();
        c.stage_payload(&p, 0).unwrap();
        c.post().unwrap();
        let r = c.collect().unwrap();
        std::hint::black_box(r.payload[0]);
        v.push(t0.elapsed().as_nanos() as f64);
    }
    Chunk::of(v)
}

/// A CPU thread serving bare rings (publish/wait, the Steane table, nothing else) behind the
/// session API's external-server door: a controller session attaches to it directly, so the
/// `client` layer is the session's controller half alone.
struct BareServer {
    geometry: Geometry,
    rings: std::sync::Mutex<Option<Arc<HeapRing>>>,
    rounds: u64,
}

impl backline_ring::RingServer for BareServer {
    fn describe(&self) -> String {
        "bare ring server".into()
    }
    fn attach(
        &self,
        geometry: Geometry,
    ) -> Result<backline_ring::AttachedRings, backline_ring::AttachError> {
        assert_eq!(geometry, self.geometry);
        let ring = Arc::new(HeapRing::new(geometry).unwrap());
        let (r2, n) = (ring.clone(), self.rounds);
        std::thread::spawn(move || {
            let pol = WaitPolicy::from_micros(-1).unwrap();
            let (rq, rp) = (r2.view(), r2.replies_view());
            let mut out = [0u8; 1];
            for r in 0..n {
                let s = Seq::of_round(r);
                let m = rq.wait(s, &pol, Duration::from_secs(5), None).unwrap();
                out[0] = backline_decoders::steane::decode(m.payload[0]);
                rp.publish(s, Kind::Reply, m.header.decoder_id, 0, &out)
                    .unwrap();
            }
        });
        let rings = backline_ring::AttachedRings {
            req: ring.view(),
            rep: ring.replies_view(),
        };
        *self.rings.lock().unwrap() = Some(ring);
        Ok(rings)
    }
    fn detach(&self) {}
    fn alive(&self) -> bool {
        true
    }
}

/// [`BareServer`] as the one entry of a responder table.
struct BareResponder(Arc<BareServer>);

impl backline_responder::Responder for BareResponder {
    fn name(&self) -> &str {
        "bare"
    }
    fn respond(&self, _: &[u8], _: &mut [u8]) -> Result<usize, backline_responder::ResponderError> {
        unreachable!("served by its own thread")
    }
    fn ring_server(&self) -> Option<Arc<dyn backline_ring::RingServer>> {
        Some(self.0.clone())
    }
}

fn floor(n: u64) -> Chunk {
    Chunk::of(backline_transport::floor::memcpy_floor(n, None, Duration::from_secs(5)).unwrap())
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One repetition: its floor median and the chunk of every layer.
struct Rep {
    floor: f64,
    floor_p999: f64,
    layers: Vec<Chunk>,
}

fn main() {
    let depths: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("ring depths are numbers (powers of two)"))
        .collect();
    let depths = if depths.is_empty() { vec![8] } else { depths };
    let (reps, n) = (env("REPS", 60), env("ROUNDS", 20_000));
    if let Ok(layer) = std::env::var("ONLY") {
        // One long run of one layer, for a profiler.
        let n = env("ROUNDS", 3_000_000);
        let c = match layer.as_str() {
            "ring" => ring(depths[0], n, true),
            "split" => ring(depths[0], n, false),
            "sess" => session(depths[0], n, false),
            "client" => session(depths[0], n, true),
            _ => floor(n),
        };
        println!("{layer} d{}: median {:.0} ns", depths[0], c.median);
        return;
    }
    let mut names = Vec::new();
    for d in &depths {
        names.push(format!("d{d} split"));
        names.push(format!("d{d} ring"));
        names.push(format!("d{d} client"));
        names.push(format!("d{d} sess"));
    }
    let mut kept = Vec::new();
    let mut mixed = 0;
    for _ in 0..reps {
        let before = floor(n / 2);
        let mut layers = Vec::new();
        for &d in &depths {
            layers.push(ring(d, n, false));
            layers.push(ring(d, n, true));
            layers.push(session(d, n, true));
            layers.push(session(d, n, false));
        }
        let after = floor(n / 2);
        let (lo, hi) = (
            before.median.min(after.median),
            before.median.max(after.median),
        );
        if hi > 1.15 * lo {
            mixed += 1;
            continue;
        }
        kept.push(Rep {
            floor: (before.median + after.median) / 2.0,
            floor_p999: (before.p999 + after.p999) / 2.0,
            layers,
        });
    }
    kept.sort_by(|a, b| a.floor.total_cmp(&b.floor));
    let mut groups: Vec<Vec<&Rep>> = Vec::new();
    for r in &kept {
        match groups.last_mut() {
            Some(g) if r.floor <= 1.2 * g.last().unwrap().floor => g.push(r),
            _ => groups.push(vec![r]),
        }
    }
    println!(
        "{reps} repetitions of {n} rounds per layer; {mixed} saw a placement change and are left out"
    );
    let mut head = format!("{:<10} {:>5} {:>9}", "placement", "reps", "floor ns");
    for name in &names {
        head += &format!(" {:>18}", format!("{name} med|p99.9"));
    }
    println!("{head}");
    for (i, g) in groups.iter().enumerate() {
        let fl = median(g.iter().map(|r| r.floor).collect());
        let mut line = format!("{:<10} {:>5} {:>9.0}", format!("#{}", i + 1), g.len(), fl);
        for l in 0..names.len() {
            let m = median(g.iter().map(|r| r.layers[l].median / r.floor).collect());
            let p = median(g.iter().map(|r| r.layers[l].p999 / r.floor_p999).collect());
            line += &format!(" {:>18}", format!("{m:.2}x|{p:.2}x"));
        }
        println!("{line}");
    }
}
