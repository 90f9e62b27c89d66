//! Where a round's time goes, layer by layer, against the same-run floor: the one-cache-line
//! bounce, a bare ring ping-pong (publish/wait on two `backline-ring` rings, no session), and
//! a full memcpy session (stage/post/collect to the Steane responder), for each ring depth
//! given on the command line. Five interleaved repetitions, medians in ns and ratios to the
//! floor measured just before.
//!
//! ```text
//! cargo run --release -p backline-bench --example probe -- 1 8 64 256
//! ```

use backline_ring::{HeapRing, WaitPolicy};
use backline_wire::{Geometry, Kind, Seq};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn med(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ring(depth: u32, n: u64) -> f64 {
    let g = Geometry {
        depth,
        slot_bytes: 64,
    };
    let req = Arc::new(HeapRing::new(g).unwrap());
    let rep = Arc::new(HeapRing::new(g).unwrap());
    let (r2, p2) = (req.clone(), rep.clone());
    let pol = WaitPolicy::from_micros(-1).unwrap();
    let t = std::thread::spawn(move || {
        let (rq, rp) = (r2.view(), p2.view());
        let mut out = [0u8; 1];
        for r in 0..n {
            let s = Seq::of_round(r);
            let m = rq.wait(s, &pol, Duration::from_secs(5), None).unwrap();
            out[0] = m.payload[0];
            rp.publish(s, Kind::Reply, 0, 0, &out).unwrap();
        }
    });
    let (rq, rp) = (req.view(), rep.view());
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
    med(v)
}

fn main() {
    let depths: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let n = 50_000u64;
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    for _ in 0..reps {
        let f =
            med(backline_transport::floor::memcpy_floor(n, None, Duration::from_secs(5)).unwrap());
        let mut line = format!("floor {f:.0}");
        for &d in &depths {
            let r = ring(d, n);
            let q = session(d, n);
            line += &format!(
                "  d{d} ring {r:.0} ({:.2}x) sess {q:.0} ({:.2}x)",
                r / f,
                q / f
            );
        }
        println!("{line}");
    }
}

fn session(depth: u32, n: u64) -> f64 {
    use backline_transport::*;
    use std::sync::Arc;
    let mut cfg = SessionConfig::new(TransportKind::Memcpy);
    cfg.geometry.depth = depth;
    cfg.wait = WaitPolicy::from_micros(-1).unwrap();
    let key = format!("p{depth}-{n}");
    let table = backline_responder::ResponderTable::single(Arc::new(backline_responder::Steane));
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
    med(v)
}
