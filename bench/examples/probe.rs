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
    for _ in 0..5 {
        let f =
            med(backline_transport::floor::memcpy_floor(n, None, Duration::from_secs(5)).unwrap());
        let mut line = format!("floor {f:.0}");
        for &d in &depths {
            let r = ring(d, n);
            line += &format!("  d{d} {r:.0} ({:.2}x)", r / f);
        }
        println!("{line}");
    }
}
