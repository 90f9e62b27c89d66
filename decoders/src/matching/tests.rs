//! Exactness: the engine's matching weight against brute force, on every syndrome of small
//! random graphs (negative, zero and tied weights included) and on random syndromes of stim's
//! surface-code models; bad input.

use super::*;

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// For every syndrome of a graph of `n ≤ 12` nodes and `edges.len() ≤ 16` edges: the least
/// total weight of a set of edges with that boundary (`None` if no set has it), and the
/// observable masks (bit set per mask value < 64) of the sets achieving it.
fn subset_table(n: usize, edges: &[(u32, u32, i64, u64)]) -> Vec<(Option<i64>, u64)> {
    let mut best: Vec<(Option<i64>, u64)> = vec![(None, 0); 1 << n];
    for set in 0u32..(1 << edges.len()) {
        let (mut syn, mut w, mut obs) = (0usize, 0i64, 0u64);
        for (i, e) in edges.iter().enumerate() {
            if set >> i & 1 == 1 {
                syn ^= 1 << e.0;
                if e.1 != BOUNDARY {
                    syn ^= 1 << e.1;
                }
                w += e.2;
                obs ^= e.3;
            }
        }
        let b = &mut best[syn];
        match b.0 {
            Some(x) if x < w => {}
            Some(x) if x == w => b.1 |= 1 << obs,
            _ => *b = (Some(w), 1 << obs),
        }
    }
    best
}

/// A random graph: `n` nodes, `m` edges with integer weights in `-2..=6` (some boundary),
/// observables in two bits.
fn random_graph(rng: &mut Rng, n: usize, m: usize, boundary: bool) -> Vec<(u32, u32, i64, u64)> {
    let mut edges = Vec::new();
    while edges.len() < m {
        let a = rng.below(n as u64) as u32;
        let b = if boundary && rng.below(4) == 0 {
            BOUNDARY
        } else {
            rng.below(n as u64) as u32
        };
        if a == b
            || edges
                .iter()
                .any(|e: &(u32, u32, i64, u64)| (e.0, e.1) == (a, b) || (e.0, e.1) == (b, a))
        {
            continue;
        }
        let w = rng.below(9) as i64 - 2;
        edges.push((a, b, w, rng.below(4)));
    }
    edges
}

fn graph_of(n: usize, edges: &[(u32, u32, i64, u64)]) -> MatchingGraph {
    let raw: Vec<(u32, u32, f64, u64)> =
        edges.iter().map(|e| (e.0, e.1, e.2 as f64, e.3)).collect();
    MatchingGraph::from_weights("random", n, 2, &raw)
}

#[test]
fn every_syndrome_of_small_random_graphs_matches_brute_force() {
    let mut rng = Rng(0x5eed);
    let mut checked = 0;
    // MATCHING_STRESS=N runs N graphs of up to 12 nodes instead (release builds).
    let (trials, max_n) = match std::env::var("MATCHING_STRESS") {
        Ok(v) => (v.parse().unwrap_or(400), 11),
        Err(_) => (400, 8),
    };
    for trial in 0..trials {
        let n = 2 + rng.below(max_n) as usize;
        let boundary = trial % 5 != 0;
        let possible = n * (n - 1) / 2 + if boundary { n } else { 0 };
        let m = (n + rng.below(n as u64 + 4) as usize).min(16).min(possible);
        let edges = random_graph(&mut rng, n, m, boundary);
        let g = graph_of(n, &edges);
        // Integer weights: scale 1, doubled.
        assert_eq!(g.scale(), 2.0);
        let table = subset_table(n, &edges);
        let mut dec = MatchingDecoder::from_graph(Arc::new(g));
        for (syn, want) in table.iter().enumerate() {
            let fired: Vec<u32> = (0..n as u32).filter(|&d| syn >> d & 1 == 1).collect();
            let got = dec.decode_events(&fired);
            match (want.0, got) {
                (Some(w), Ok(m)) => {
                    assert_eq!(m.weight, 2 * w, "trial {trial} syndrome {syn:b}: {edges:?}");
                    assert!(
                        want.1 >> m.observables & 1 == 1,
                        "trial {trial} syndrome {syn:b}: observables {} not of a lightest set",
                        m.observables
                    );
                    checked += 1;
                }
                (None, Err(MatchFault::NoPerfectMatching(d) | MatchFault::IsolatedDetector(d))) => {
                    assert!(d < n as u32);
                }
                (want, got) => panic!("trial {trial} syndrome {syn:b}: {want:?} vs {got:?}"),
            }
        }
    }
    assert!(checked > 20_000, "{checked}");
}

/// Shortest distances between every pair of nodes and to the boundary (Bellman-Ford style
/// relaxation over the non-negative integer graph).
fn distances(g: &MatchingGraph) -> (Vec<Vec<i64>>, Vec<i64>) {
    let n = g.num_nodes();
    let inf = i64::MAX / 4;
    let mut d = vec![vec![inf; n]; n];
    let mut b = vec![inf; n];
    for s in 0..n {
        let dist = &mut d[s];
        dist[s] = 0;
        // Dijkstra with a simple O(n²) scan: the graphs are small.
        let mut done = vec![false; n];
        for _ in 0..n {
            let Some(u) = (0..n).filter(|&u| !done[u]).min_by_key(|&u| dist[u]) else {
                break;
            };
            if dist[u] >= inf {
                break;
            }
            done[u] = true;
            for (v, w, _) in g.neighbours(u) {
                if v == BOUNDARY {
                    b[s] = b[s].min(dist[u] + w as i64);
                } else if dist[u] + (w as i64) < dist[v as usize] {
                    dist[v as usize] = dist[u] + w as i64;
                }
            }
        }
    }
    (d, b)
}

/// The least weight of a perfect matching of `events` (pairs, or one to the boundary), by
/// dynamic programming over subsets.
fn dp_matching(events: &[u32], d: &[Vec<i64>], b: &[i64]) -> i64 {
    let k = events.len();
    let inf = i64::MAX / 4;
    let mut best = vec![inf; 1 << k];
    best[0] = 0;
    for mask in 1usize..(1 << k) {
        let i = mask.trailing_zeros() as usize;
        let rest = mask & !(1 << i);
        let ei = events[i] as usize;
        let mut v = best[rest].saturating_add(b[ei]);
        let mut r = rest;
        while r != 0 {
            let j = r.trailing_zeros() as usize;
            r &= r - 1;
            let c = best[rest & !(1 << j)].saturating_add(d[ei][events[j] as usize]);
            v = v.min(c);
        }
        best[mask] = v.min(inf);
    }
    best[(1 << k) - 1]
}

fn fixture(name: &str) -> DetectorErrorModel {
    let path = format!("{}/tests/data/dem/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    DetectorErrorModel::parse(&text, name).unwrap()
}

#[test]
fn random_syndromes_of_surface_code_models_match_the_reference() {
    let mut rng = Rng(42);
    for name in ["surface_d3_r8_p0.01.dem", "surface_d5_r5_p0.001.dem"] {
        let dem = fixture(name);
        let mut dec = MatchingDecoder::new(&dem).unwrap();
        let g = dec.graph().clone();
        assert!(g.negative_events().is_empty());
        let (d, b) = distances(&g);
        let n = g.num_nodes() as u64;
        for trial in 0..300 {
            let k = 1 + rng.below(11) as usize;
            let mut events: Vec<u32> = Vec::new();
            while events.len() < k {
                let e = rng.below(n) as u32;
                if !events.contains(&e) {
                    events.push(e);
                }
            }
            // Clustered syndromes too: neighbours of the first event.
            if trial % 3 == 0 {
                for (v, _, _) in g.neighbours(events[0] as usize) {
                    if v != BOUNDARY && !events.contains(&v) && events.len() < 12 {
                        events.push(v);
                    }
                }
            }
            let m = dec.decode_events(&events).unwrap();
            assert_eq!(m.weight, dp_matching(&events, &d, &b), "{name} {events:?}");
        }
    }
}

#[test]
fn single_mechanisms_are_decoded_to_their_observables() {
    let dem = fixture("surface_d3_r8_p0.01.dem");
    let mut dec = MatchingDecoder::new(&dem).unwrap();
    for e in dem.graphlike_edges() {
        let mut fired = vec![e.detectors.0];
        if e.detectors.1 != u32::MAX {
            fired.push(e.detectors.1);
        }
        let m = dec.decode_events(&fired).unwrap();
        let want = e.observables.iter().fold(0u64, |m, &l| m | 1 << l);
        // A single edge is a lightest explanation (its weight is at most any other path's).
        let w = (((1.0 - e.p) / e.p).ln() * dec.graph().scale() / 2.0).round() as i64 * 2;
        assert!(m.weight <= w, "{e:?}: {} > {w}", m.weight);
        if m.weight == w && m.observables != want {
            // A tie between the edge and a path crossing other observables: allowed.
            continue;
        }
        assert_eq!(m.observables, want, "{e:?}");
    }
    assert_eq!(dec.decode_events(&[]).unwrap(), Matched::default());
}

#[test]
fn bad_models_and_shots_are_errors_naming_what_is_wrong() {
    let parse = |t: &str| DetectorErrorModel::parse(t, "m.dem").unwrap();
    let e = MatchingDecoder::new(&parse("error(0.1) D0 D1\nerror(0.1) D0 D1 D2 ^ D3\n"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("m.dem:2: this error has a part that flips 3 detectors (D0 D1 D2)"),
        "{e}"
    );
    // Decomposed with `^`: fine.
    assert!(MatchingDecoder::new(&parse("error(0.1) D0 D1 ^ D2\n")).is_ok());
    let e = MatchingDecoder::new(&parse("error(0.1) D0\nerror(1) D0 D1\n"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "m.dem:2: an error of probability 1 cannot be matched (it always happens)"
    );
    let e = MatchingDecoder::new(&parse("error(0) D0 D1\nerror(0.1) L0\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nothing to match"), "{e}");
    let e = MatchingDecoder::new(&parse("error(0.1) D0 L64\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("65 observables"), "{e}");

    // p = 0 parts are left out; a detector with no edge is an error when it fires.
    let mut dec =
        MatchingDecoder::new(&parse("error(0.1) D0\nerror(0) D1 D2\ndetector D3\n")).unwrap();
    assert_eq!(dec.num_detectors(), 4);
    assert_eq!(
        dec.decode_events(&[3]),
        Err(MatchFault::IsolatedDetector(3))
    );
    assert_eq!(
        dec.decode_events(&[1]).unwrap_err().to_string(),
        "detector D1 fired, and no error of the model flips it"
    );
    assert_eq!(dec.decode_events(&[0]).unwrap().observables, 0);
    assert_eq!(
        dec.decode_events(&[9]),
        Err(MatchFault::Detector {
            index: 9,
            detectors: 4
        })
    );
    assert!(matches!(
        dec.decode_mask(&[0, 0]),
        Err(MatchFault::Length {
            expected: 1,
            found: 2,
            ..
        })
    ));
    assert!(matches!(
        dec.decode_packed(&[0], &mut [0]),
        Err(MatchFault::Length { .. })
    ));

    // A ring without a boundary: an odd number of events has no perfect matching. The
    // decoder stays usable.
    let mut ring = MatchingDecoder::new(&parse(
        "error(0.1) D0 D1\nerror(0.1) D1 D2\nerror(0.1) D2 D0\nerror(0.1) D3\n",
    ))
    .unwrap();
    let e = ring.decode_events(&[0, 1, 2]).unwrap_err();
    assert!(matches!(e, MatchFault::NoPerfectMatching(0..=2)), "{e:?}");
    assert!(e.to_string().contains("odd number of them and no boundary"));
    assert_eq!(
        ring.decode_events(&[0, 2]).unwrap().weight,
        ring.decode_events(&[1, 2]).unwrap().weight
    );
    assert!(ring.decode_events(&[0, 3]).is_err());
    assert_eq!(ring.decode_events(&[3]).unwrap().observables, 0);
}

#[test]
fn negative_and_half_probabilities_are_handled() {
    // D0 — D1 with p = 0.9 (negative weight), boundary edges with L0 on D0.
    let dem = DetectorErrorModel::parse(
        "error(0.9) D0 D1\nerror(0.1) D0 L0\nerror(0.1) D1\nerror(0.5) D1 D2\nerror(0.2) D2\n",
        "neg.dem",
    )
    .unwrap();
    let mut dec = MatchingDecoder::new(&dem).unwrap();
    assert_eq!(dec.graph().negative_events(), &[0, 1]);
    // Nothing fired: the likeliest explanation is the p = 0.9 edge plus both boundaries,
    // (0.9 edge) + (D0 L0) + (D1): weight −w9 + w1 + w1 > −w9? No: with D0, D1 unfired the
    // negative edge alone would fire them, so either leave everything (weight 0) or take the
    // negative edge and two boundary edges. ln(9) ≈ 2.2 < 2·ln(9): nothing is lighter.
    let none = dec.decode_events(&[]).unwrap();
    assert_eq!(none.observables, 0);
    assert_eq!(none.weight, 0);
    // D0 and D1 fired: the negative edge explains them with negative weight.
    let both = dec.decode_events(&[0, 1]).unwrap();
    assert!(both.weight < 0, "{both:?}");
    assert_eq!(both.observables, 0);
    // D0 alone: the negative edge plus D1's boundary beats D0's boundary with L0.
    let one = dec.decode_events(&[0]).unwrap();
    assert_eq!(one.observables, 0, "{one:?}");
    assert_eq!(dec.decode_packed(&[0b011], &mut [0]).unwrap(), both);
    // The p = 0.5 edge weighs nothing.
    let free = dec.decode_events(&[1, 2]).unwrap();
    assert_eq!(free.weight, 0);
}

#[test]
fn the_model_graph_keeps_decompositions_and_merges_parts() {
    let dem = DetectorErrorModel::parse(
        "error(0.1) D0 D1 ^ D2 L0\nerror(0.2) D1 D0\nerror(0.05) D2 L1\nerror(0.3) L0\n",
        "g.dem",
    )
    .unwrap();
    let g = MatchingGraph::from_dem(&dem).unwrap();
    assert_eq!(g.edges().len(), 2);
    let e = dem.graphlike_edges();
    assert_eq!(e[0].detectors, (0, 1));
    assert!((e[0].p - (0.1 * 0.8 + 0.2 * 0.9)).abs() < 1e-15);
    assert_eq!(e[1].detectors, (2, u32::MAX));
    // The first part's observables are kept.
    assert_eq!(e[1].observables, vec![0]);
    assert!((e[1].p - (0.1 * 0.95 + 0.05 * 0.9)).abs() < 1e-15);
    assert!(g.has_boundary(2) && !g.has_boundary(0));
    // The largest |weight| maps to 2·(2^24 − 1).
    let max = g.edges().iter().map(|e| e.weight).max().unwrap();
    assert_eq!(max, 2 * ((1 << 24) - 1));
}

/// `MDEM=model.dem MDETS=dets.b8 cargo test --release -p backline-decoders --lib
/// file_against_reference -- --ignored`: every shot of a file against the subset-DP reference
/// (shots of at most 16 detection events), through a clone and through `DemDecoder`.
#[test]
#[ignore]
fn file_against_reference() {
    let dem_path = std::env::var("MDEM").unwrap();
    let text = std::fs::read_to_string(&dem_path).unwrap();
    let dem = DetectorErrorModel::parse(&text, &dem_path).unwrap();
    let bytes = std::fs::read(std::env::var("MDETS").unwrap()).unwrap();
    let mut dec = MatchingDecoder::new(&dem).unwrap().clone();
    let (d, b) = distances(dec.graph());
    let mut dd = crate::dem_decoder::DemDecoder::new(
        &dem,
        &crate::dem_decoder::DemDecoderSettings::from(crate::matching::MatchingConfig::default()),
    )
    .unwrap();
    let w = dem.num_detectors().div_ceil(8);
    let mut o = vec![0u8; dem.num_observables().div_ceil(8)];
    for (s, row) in bytes.chunks(w).enumerate() {
        let events: Vec<u32> = (0..dem.num_detectors() as u32)
            .filter(|&i| row[i as usize / 8] >> (i % 8) & 1 == 1)
            .collect();
        let got = dec.decode_mask(row).unwrap();
        dd.decode_packed(row, &mut o).unwrap();
        assert_eq!(o[0] & 1, (got.observables & 1) as u8);
        if events.len() <= 16 {
            assert_eq!(
                got.weight,
                dp_matching(&events, &d, &b),
                "shot {s}: {events:?}"
            );
        }
    }
}

#[test]
fn a_clone_decodes_like_the_original() {
    let dem = fixture("surface_d5_r5_p0.001.dem");
    let mut a = MatchingDecoder::new(&dem).unwrap();
    let mut b = a.clone();
    let mut rng = Rng(3);
    for _ in 0..200 {
        let events: Vec<u32> = (0..4).map(|_| rng.below(120) as u32).collect();
        assert_eq!(a.decode_events(&events), b.decode_events(&events));
        b = b.clone();
    }
}

/// The model with its first mechanism's probability `p`: `D0 L0` at `p`, `D0 D1` and
/// `D1` at 0.1. The shot `D0` fired: the likeliest explanation is `D0 D1` + `D1` (no
/// observable) when `p` is tiny.
fn tiny_model(p: &str) -> DetectorErrorModel {
    let text = format!("error({p}) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1\n");
    DetectorErrorModel::parse(&text, "tiny.dem").unwrap()
}

#[test]
fn probabilities_too_small_to_weigh_are_refused_naming_line_and_p() {
    for (p, shown) in [("1e-310", "1e-310"), ("5e-324", "5e-324")] {
        let e = MatchingDecoder::new(&tiny_model(p)).unwrap_err();
        assert!(
            matches!(e, MatchingBuildError::TooSmall { line: 1, .. }),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "tiny.dem:1: an error of probability {shown} is too small to weigh"
            )),
            "{msg}"
        );
        assert!(msg.contains("5.57e-309") && msg.len() < 300, "{msg}");
        // On a later line too.
        let dem = DetectorErrorModel::parse(
            &format!("error(0.1) D0 D1\nerror(0.1) D1\nerror({p}) D0 L0\n"),
            "late.dem",
        )
        .unwrap();
        assert!(matches!(
            MatchingDecoder::new(&dem),
            Err(MatchingBuildError::TooSmall { line: 3, .. })
        ));
    }
    // The threshold stated in the message is weighable.
    assert!(((1.0 - MIN_WEIGHABLE_P) / MIN_WEIGHABLE_P).ln().is_finite());
}

#[test]
fn the_smallest_normal_and_nearly_half_probabilities_decode_right() {
    // f64::MIN_POSITIVE weighs ln((1 − p)/p) ≈ 708: finite, matched as any other.
    let p = format!("{:e}", f64::MIN_POSITIVE);
    let mut dec = MatchingDecoder::new(&tiny_model(&p)).unwrap();
    assert!(dec.graph().edges().iter().all(|e| e.weight > 0));
    assert_eq!(dec.decode_events(&[0]).unwrap().observables, 0);
    assert_eq!(dec.decode_events(&[1]).unwrap().observables, 0);
    // A weight as small as p = 0.5 − ε gives: an edge that weighs (nearly) nothing is taken.
    let half = format!("{:e}", 0.5 - f64::EPSILON);
    let mut dec = MatchingDecoder::new(&tiny_model(&half)).unwrap();
    assert_eq!(dec.decode_events(&[0]).unwrap().observables, 1);
    // D1 alone: its boundary (ln 9) and D0 D1 + the free edge (ln 9 + ~0) tie.
    assert_eq!(
        dec.decode_events(&[1]).unwrap().weight,
        dec.decode_events(&[]).unwrap().weight
            + 2 * (9f64.ln() * dec.graph().scale() / 2.0).round() as i64
    );
    assert!(dec.graph().edges().iter().all(|e| e.weight % 2 == 0));
}

/// A model where the correlation decides: `D0` goes to the boundary over `D0 L0` (p = 0.05,
/// weight ln 19 ≈ 2.94) rather than over `D0 D1` + `D1` (≈ 1.57 + 2.20) — unless `D2` fired,
/// which only the split error `D0 D1 ^ D2` explains: then `D0 D1` happened with probability
/// min(½, 0.09/0.09), weighs 0, and `D0 D1` + `D1` (≈ 2.20) wins.
fn correlated_model() -> DetectorErrorModel {
    DetectorErrorModel::parse(
        "error(0.05) D0 L0\nerror(0.1) D0 D1\nerror(0.1) D1\nerror(0.09) D0 D1 ^ D2\n",
        "corr.dem",
    )
    .unwrap()
}

#[test]
fn correlations_condition_the_second_matching_on_the_first() {
    let dem = correlated_model();
    let mut plain = MatchingDecoder::new(&dem).unwrap();
    let mut corr = MatchingDecoder::new_correlated(&dem).unwrap();
    assert!(corr.correlations() && !plain.correlations());
    assert_eq!(plain.decode_events(&[0, 2]).unwrap().observables, 1);
    assert_eq!(corr.decode_events(&[0, 2]).unwrap().observables, 0);
    // Without D2 the rule never fires: both agree.
    assert_eq!(corr.decode_events(&[0]).unwrap().observables, 1);
    // The weights were put back: the same shot again, and a plain one after it.
    assert_eq!(corr.decode_events(&[0, 2]).unwrap().observables, 0);
    assert_eq!(
        corr.decode_events(&[0]).unwrap(),
        plain.decode_events(&[0]).unwrap()
    );
    // Switched off, it matches plainly; a plain decoder cannot switch on.
    corr.set_correlations(false).unwrap();
    assert_eq!(corr.decode_events(&[0, 2]).unwrap().observables, 1);
    assert_eq!(
        plain.set_correlations(true),
        Err(CorrelationsError::NotBuilt)
    );
    plain.set_correlations(false).unwrap();
    // Clones carry the rules.
    corr.set_correlations(true).unwrap();
    let mut c2 = corr.clone();
    assert_eq!(c2.decode_events(&[0, 2]).unwrap().observables, 0);
}

#[test]
fn correlation_rules_follow_the_joint_probabilities() {
    // Two split errors share the pair (D0 D1, D2): their joint probabilities combine as
    // independent events; D2's own probability is both of theirs.
    let dem = DetectorErrorModel::parse(
        "error(0.01) D0 D1 ^ D2\nerror(0.02) D0 D1 ^ D2\nerror(0.03) D0 D1\nerror(0.1) D3 D4\n",
        "rules.dem",
    )
    .unwrap();
    let g = MatchingGraph::from_dem_correlated(&dem).unwrap();
    let rules = g.rules.as_ref().unwrap();
    let x = |a: f64, b: f64| a * (1.0 - b) + b * (1.0 - a);
    let joint = x(0.01, 0.02);
    let (p01, p2) = (x(joint, 0.03), joint);
    let int = |q: f64| (((1.0 - q) / q).ln() * g.scale() / 2.0).round() as u32 * 2;
    // Edge 0 is D0 D1, edge 1 is D2 (the boundary), edge 2 is D3 D4.
    assert_eq!(rules.of(0).collect::<Vec<_>>(), [(1, int(joint / p01))]);
    assert_eq!(
        rules.of(1).collect::<Vec<_>>(),
        [(0, int((joint / p2).min(0.5)))]
    );
    assert_eq!(rules.of(2).count(), 0);
    // A plain graph has none, and its weights are the same (no rule outweighs an edge here).
    let plain = MatchingGraph::from_dem(&dem).unwrap();
    assert!(plain.rules.is_none() && !plain.has_correlations());
    assert_eq!(plain.edges(), g.edges());
}

#[test]
fn correlations_refuse_an_undetectable_part_and_take_p_above_half() {
    let bad = |text: &str| {
        let dem = DetectorErrorModel::parse(text, "bad.dem").unwrap();
        MatchingDecoder::new_correlated(&dem).unwrap_err()
    };
    let e = bad("error(0.1) D0 D1\nerror(0.1) D0 ^ L0\n");
    assert!(
        matches!(
            e,
            MatchingBuildError::CorrelatedUndetectablePart { line: 2, .. }
        ),
        "{e:?}"
    );
    let e = bad("error(0.1) D0 D1 D2\n");
    assert!(matches!(e, MatchingBuildError::Hyperedge { .. }), "{e:?}");
    // Plain matching ignores the part.
    let dem =
        DetectorErrorModel::parse("error(0.1) D0 D1\nerror(0.1) D0 ^ L0\n", "ok.dem").unwrap();
    MatchingDecoder::new(&dem).unwrap();
    // p > ½ (refused by PyMatching with correlations; sinter's contract has it): flipped in
    // advance as plain matching does, no rule to or from it.
    let dem = DetectorErrorModel::parse(
        "error(0.6) D0 D1 ^ D2\nerror(0.1) D0\nerror(0.1) D1\nerror(0.1) D2\n",
        "neg.dem",
    )
    .unwrap();
    let mut corr = MatchingDecoder::new_correlated(&dem).unwrap();
    let mut plain = MatchingDecoder::new(&dem).unwrap();
    assert!(corr.graph().rules.as_ref().unwrap().to.is_empty());
    for shot in [&[][..], &[0, 1], &[2], &[0, 1, 2], &[1]] {
        assert_eq!(
            corr.decode_events(shot).unwrap(),
            plain.decode_events(shot).unwrap()
        );
    }
}

#[test]
fn correlated_matching_is_a_registry_setting() {
    let dem = correlated_model();
    let mut s = crate::registry::settings("matching", crate::registry::Profile::Offline).unwrap();
    assert_eq!(s.get("correlations").as_deref(), Some("0"));
    s.set("correlations", "1").unwrap();
    let mut dec = crate::dem_decoder::DemDecoder::new(&dem, &s).unwrap();
    let mut out = [0u8; 1];
    dec.decode_packed(&[0b101], &mut out).unwrap();
    assert_eq!(out, [0]);
    s.set("correlations", "false").unwrap();
    let mut dec = crate::dem_decoder::DemDecoder::new(&dem, &s).unwrap();
    dec.decode_packed(&[0b101], &mut out).unwrap();
    assert_eq!(out, [1]);
    let e = s.set("correlations", "yes").unwrap_err().to_string();
    assert!(e.starts_with("correlations") && e.contains("0 or 1"), "{e}");
}

#[test]
fn paths_from_both_ends_are_shortest_paths() {
    for name in ["surface_d3_r8_p0.01.dem", "surface_d5_r5_p0.001.dem"] {
        let g = MatchingGraph::from_dem(&fixture(name)).unwrap();
        let n = g.num_nodes() as u32;
        let span = path::Span {
            lo: 0,
            hi: n,
            past_is_boundary: false,
            future_is_boundary: false,
        };
        let (mut one, mut two) = (path::PathSearch::new(&g), path::PairSearch::new(&g));
        let mut rng = Rng(0x5eed ^ n as u64);
        let mut joined = 0;
        for _ in 0..300 {
            let (s, t) = (rng.below(n as u64) as u32, rng.below(n as u64) as u32);
            // (Two detectors may be joined only through the boundary: no path then.)
            let found = one.search(&g, span, s, t);
            assert_eq!(two.search(&g, span, s, t), found, "{name}: D{s} to D{t}");
            if !found {
                continue;
            }
            joined += 1;
            let w1: u64 = one
                .slots
                .iter()
                .map(|&x| g.adj[x as usize].weight as u64)
                .sum();
            let w2: u64 = two
                .edges
                .iter()
                .map(|&e| g.edges()[e as usize].weight as u64)
                .sum();
            assert_eq!(w1, w2, "{name}: D{s} to D{t}");
            // The edges join s to t: every node but the two ends is touched an even number
            // of times.
            let mut odd = std::collections::BTreeSet::new();
            for &e in &two.edges {
                let e = g.edges()[e as usize];
                for x in [e.a, e.b] {
                    if !odd.remove(&x) {
                        odd.insert(x);
                    }
                }
            }
            let want: std::collections::BTreeSet<u32> =
                if s == t { [].into() } else { [s, t].into() };
            assert_eq!(odd, want, "{name}: D{s} to D{t}");
        }
        assert!(joined >= 100, "{name}: {joined} of 300 pairs joined");
    }
}

#[test]
fn decode_to_edges_gives_a_lightest_edge_set_with_the_syndrome_as_its_boundary() {
    let mut rng = Rng(0xed9e);
    let mut checked = 0;
    for trial in 0..200 {
        let n = 2 + rng.below(7) as usize;
        let boundary = trial % 4 != 0;
        let possible = n * (n - 1) / 2 + if boundary { n } else { 0 };
        let m = (n + rng.below(n as u64 + 4) as usize).min(14).min(possible);
        let edges = random_graph(&mut rng, n, m, boundary);
        let raw: Vec<(u32, u32, f64, u64)> =
            edges.iter().map(|e| (e.0, e.1, e.2 as f64, e.3)).collect();
        let g = MatchingGraph::from_edges("random", n, 2, &raw).unwrap();
        let table = subset_table(n, &edges);
        let mut dec = MatchingDecoder::from_graph(Arc::new(g));
        let mut parity = vec![0u8; edges.len()];
        for (syn, lightest) in table.iter().enumerate() {
            let fired: Vec<u32> = (0..n as u32).filter(|&d| syn >> d & 1 == 1).collect();
            parity.fill(0);
            let Ok(got) = dec.decode_to_edges(&fired, &mut parity) else {
                continue;
            };
            let (mut bound, mut w, mut obs) = (0usize, 0i64, 0u64);
            for (e, _) in edges.iter().zip(&parity).filter(|(_, p)| **p == 1) {
                bound ^= 1 << e.0;
                if e.1 != BOUNDARY {
                    bound ^= 1 << e.1;
                }
                w += e.2;
                obs ^= e.3;
            }
            assert_eq!(bound, syn, "trial {trial}: {edges:?} {parity:?}");
            assert_eq!(
                2 * w,
                got.weight,
                "trial {trial} syndrome {syn:b}: {edges:?}"
            );
            // Ties: the paths may be another lightest set than the one the engine's
            // observables follow, but always a lightest one.
            assert!(lightest.1 >> obs & 1 == 1, "trial {trial} syndrome {syn:b}");
            checked += 1;
        }
    }
    assert!(checked > 2_000, "{checked}");
    let mut dec = MatchingDecoder::from_graph(Arc::new(
        MatchingGraph::from_edges("g", 2, 0, &[(0, 1, 1.0, 0)]).unwrap(),
    ));
    assert!(matches!(
        dec.decode_to_edges(&[0, 1], &mut [0, 0]),
        Err(MatchFault::Length { .. })
    ));
}

#[test]
fn edges_given_by_weight_are_checked() {
    let bad = |nodes, obs, e: &[(u32, u32, f64, u64)]| {
        MatchingGraph::from_edges("h", nodes, obs, e)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        bad(2, 0, &[(0, 1, f64::NAN, 0)]),
        "h: edge 0: weight NaN is not a finite number"
    );
    assert!(bad(2, 0, &[(0, 1, 1.0, 0), (0, 2, 1.0, 0)]).contains("edge 1: node 2 is past"));
    assert!(bad(2, 1, &[(0, BOUNDARY, 1.0, 2)]).contains("observable past"));
    assert!(bad(2, 0, &[]).contains("nothing to match"));
    assert!(bad(2, 65, &[(0, 1, 1.0, 0)]).contains("at most 64"));
    let g = MatchingGraph::from_edges("h", 2, 0, &[(0, 1, -1.0, 0), (1, BOUNDARY, 1.0, 0)]);
    assert_eq!(g.unwrap().negative_edges(), &[0]);
}

#[test]
fn self_loops_are_never_matched_and_negative_ones_always_taken() {
    // PyMatching's `add_edge(n, n)`: 0-B (obs 0, weight 1), 0-1 (obs 1, weight 3), a
    // self-loop at 1 of weight -100 (obs 2) and one at 0 of weight 4 (obs 3, never taken).
    let raw = [
        (0, BOUNDARY, 1.0, 0b0001),
        (0, 1, 3.0, 0b0010),
        (1, 1, -100.0, 0b0100),
        (0, 0, 4.0, 0b1000),
    ];
    let g = MatchingGraph::from_edges("loops", 2, 4, &raw).unwrap();
    assert_eq!(g.edges().len(), 4);
    assert_eq!(g.negative_edges(), &[2]);
    assert!(g.negative_events().is_empty());
    assert_eq!(g.neighbours(0).count(), 2);
    assert_eq!(g.neighbours(1).count(), 1);
    let mut dec = MatchingDecoder::from_graph(Arc::new(g));
    let m = dec.decode_events(&[]).unwrap();
    assert_eq!((m.observables, m.weight), (0b0100, -200));
    let m = dec.decode_events(&[1]).unwrap();
    assert_eq!((m.observables, m.weight), (0b0111, 2 * (1 + 3 - 100)));
    let mut parity = [0u8; 4];
    dec.decode_to_edges(&[1], &mut parity).unwrap();
    assert_eq!(parity, [1, 1, 1, 0]);
    // A node whose only edge is a self-loop cannot be matched.
    let g = MatchingGraph::from_edges("loop", 2, 0, &[(0, 1, 1.0, 0), (1, 1, 1.0, 0)]);
    let mut dec = MatchingDecoder::from_graph(Arc::new(g.unwrap()));
    assert!(dec.decode_events(&[0, 1]).is_ok());
    let g = MatchingGraph::from_edges("alone", 1, 0, &[(0, 0, -2.0, 0)]).unwrap();
    let mut dec = MatchingDecoder::from_graph(Arc::new(g));
    assert_eq!(dec.decode_events(&[]).unwrap().weight, -4);
    assert!(matches!(
        dec.decode_events(&[0]),
        Err(MatchFault::IsolatedDetector(0))
    ));
}

#[test]
fn a_correlated_decodes_edges_are_those_of_its_second_matching() {
    let dem = correlated_model();
    let mut corr = MatchingDecoder::new_correlated(&dem).unwrap();
    let g = corr.graph().clone();
    let names = |parity: &[u8]| -> Vec<(u32, u32)> {
        g.edges()
            .iter()
            .zip(parity)
            .filter(|(_, p)| **p != 0)
            .map(|(e, _)| (e.a, e.b))
            .collect()
    };
    let mut parity = vec![0u8; g.edges().len()];
    corr.decode_to_edges(&[0, 2], &mut parity).unwrap();
    // D0 D1 and D1's boundary (not D0 L0), and D2's boundary.
    let mut got = names(&parity);
    got.sort();
    assert_eq!(got, [(0, 1), (1, BOUNDARY), (2, BOUNDARY)]);
    // The next decode puts the weights back: D0 alone goes over D0 L0 again, and a clone
    // taken between two decodes does too.
    let mut clone = corr.clone();
    parity.fill(0);
    corr.decode_to_edges(&[0], &mut parity).unwrap();
    assert_eq!(names(&parity), [(0, BOUNDARY)]);
    parity.fill(0);
    clone.decode_to_edges(&[0], &mut parity).unwrap();
    assert_eq!(names(&parity), [(0, BOUNDARY)]);
}

#[test]
fn paths_are_chosen_and_listed_as_pymatching_lists_them() {
    // A 3 × 4 grid of unit edges (node 4r + c; per node, the edge to the right, then the one
    // down), with a boundary edge at each node of column 0 (`edge_weight` 1) or at node 0
    // only (weight 10). Every pair below has several shortest paths; the lists are what
    // PyMatching 2.4's `decode_to_edges_array` returns for the same graph and syndrome.
    let grid = |boundary: &[(u32, f64)]| {
        let mut raw = Vec::new();
        for r in 0..3u32 {
            for c in 0..4u32 {
                let x = 4 * r + c;
                if c < 3 {
                    raw.push((x, x + 1, 1.0, 0));
                }
                if r < 2 {
                    raw.push((x, x + 4, 1.0, 0));
                }
            }
        }
        raw.extend(boundary.iter().map(|&(x, w)| (x, BOUNDARY, w, 0)));
        let g = MatchingGraph::from_edges("grid", 12, 0, &raw).unwrap();
        MatchingDecoder::from_graph(Arc::new(g))
    };
    const B: u32 = BOUNDARY;
    let mut dec = grid(&[(0, 10.0)]);
    type Case<'a> = (&'a [u32], &'a [(u32, u32)]);
    let cases: [Case<'_>; 4] = [
        (&[1, 11], &[(9, 10), (10, 11), (5, 1), (9, 5)]),
        (&[2, 8], &[(10, 9), (9, 8), (6, 2), (10, 6)]),
        (&[0, 10], &[(8, 9), (9, 10), (4, 0), (8, 4)]),
        (&[3, 8], &[(1, 2), (2, 3), (0, 4), (4, 8), (1, 0)]),
    ];
    let mut list = Vec::new();
    for (fired, want) in cases {
        list.clear();
        dec.decode_to_edge_list(fired, &mut list).unwrap();
        assert_eq!(list, want, "{fired:?}");
    }
    // To the boundary: the search floods from the event alone.
    let mut dec = grid(&[(0, 1.0), (4, 1.0), (8, 1.0)]);
    list.clear();
    dec.decode_to_edge_list(&[0, 11], &mut list).unwrap();
    assert_eq!(list, [(0, B), (8, 9), (9, 10), (10, 11), (8, B)]);
    // The parities agree with the list, and a second call finds the marks cleared.
    let mut parity = vec![0u8; dec.graph().edges().len()];
    dec.decode_to_edges(&[0, 11], &mut parity).unwrap();
    let mut from_list: Vec<u32> = list
        .iter()
        .map(|&(a, b)| dec.graph().edge_between(a, b))
        .collect();
    from_list.sort();
    let from_parity: Vec<u32> = (0..parity.len() as u32)
        .filter(|&k| parity[k as usize] == 1)
        .collect();
    assert_eq!(from_list, from_parity);
    list.clear();
    dec.decode_to_edge_list(&[0, 11], &mut list).unwrap();
    assert_eq!(list.len(), 5);
}

#[test]
fn the_pymatching_path_search_finds_shortest_paths() {
    for name in ["surface_d3_r8_p0.01.dem", "surface_d5_r5_p0.001.dem"] {
        let g = MatchingGraph::from_dem(&fixture(name)).unwrap();
        let n = g.num_nodes() as u32;
        let span = path::Span {
            lo: 0,
            hi: n,
            past_is_boundary: false,
            future_is_boundary: false,
        };
        let (mut one, mut flood) = (path::PathSearch::new(&g), path::FloodSearch::new(&g));
        let mut rng = Rng(0xf100d ^ n as u64);
        for _ in 0..300 {
            let s = rng.below(n as u64) as u32;
            let t = if rng.below(4) == 0 {
                BOUNDARY
            } else {
                rng.below(n as u64) as u32
            };
            let found = one.search(&g, span, s, t);
            assert_eq!(flood.search(&g, span, s, t), found, "{name}: D{s} to {t}");
            if !found || s == t {
                continue;
            }
            let weigh = |slots: &mut dyn Iterator<Item = u32>| -> u64 {
                slots.map(|x| g.adj[x as usize].weight as u64).sum()
            };
            assert_eq!(
                weigh(&mut one.slots.iter().copied()),
                weigh(&mut flood.path.iter().map(|p| p.1)),
                "{name}: D{s} to {t}"
            );
            // The edges join s to t (or s to the boundary).
            let mut odd = std::collections::BTreeSet::new();
            for &(x, slot) in &flood.path {
                for y in [x, g.adj[slot as usize].to] {
                    if !odd.remove(&y) {
                        odd.insert(y);
                    }
                }
            }
            assert_eq!(odd, [s, t].into(), "{name}: D{s} to {t}");
        }
    }
}

#[test]
fn ties_between_equally_light_matchings_fall_as_pymatchings_do() {
    // The grid of `paths_are_chosen_and_listed_as_pymatching_lists_them` (boundary edge at
    // node 0, weight 10): each syndrome has several matchings of the least weight; the lists
    // are what PyMatching 2.4's `decode_to_edges_array` returns — which matching its flooder
    // ends on (its queue's order among events due at once, its matcher's order of steps),
    // then its paths.
    let mut raw = Vec::new();
    for r in 0..3u32 {
        for c in 0..4u32 {
            let x = 4 * r + c;
            if c < 3 {
                raw.push((x, x + 1, 1.0, 0));
            }
            if r < 2 {
                raw.push((x, x + 4, 1.0, 0));
            }
        }
    }
    raw.push((0, BOUNDARY, 10.0, 0));
    let g = MatchingGraph::from_edges("grid", 12, 0, &raw).unwrap();
    let mut dec = MatchingDecoder::from_graph(Arc::new(g));
    type Case<'a> = (&'a [u32], &'a [(u32, u32)]);
    let cases: [Case<'_>; 6] = [
        (&[0, 1, 4, 5], &[(0, 4), (1, 5)]),
        (&[5, 6, 9, 10], &[(5, 9), (6, 10)]),
        (
            &[4, 5, 6, 7, 8, 9, 10, 11],
            &[(4, 8), (5, 9), (6, 10), (7, 11)],
        ),
        (&[1, 4, 6, 9], &[(8, 4), (8, 9), (5, 1), (5, 6)]),
        (
            &[0, 2, 5, 7, 8, 10],
            &[(4, 0), (4, 8), (9, 5), (9, 10), (6, 2), (6, 7)],
        ),
        (
            &[1, 3, 4, 6, 9, 11],
            &[(5, 1), (5, 4), (7, 3), (7, 6), (10, 11), (10, 9)],
        ),
    ];
    let mut list = Vec::new();
    for (fired, want) in cases {
        list.clear();
        dec.decode_to_edge_list(fired, &mut list).unwrap();
        assert_eq!(list, want, "{fired:?}");
    }
    // Correlated matching lowers the weights of the edges the first matching took: a tie
    // broken otherwise there changes the second matching's weight. Shots of the d = 3
    // fixture and the weights PyMatching 2.4 returns for them with correlations.
    let dem = fixture("surface_d3_r8_p0.01.dem");
    let mut corr = MatchingDecoder::new_correlated(&dem).unwrap();
    let shots: [(&[u32], f64); 3] = [
        (&[5, 8, 13, 16, 21, 28, 41, 56], 17.83758934897113),
        (&[8, 9, 11, 16, 24, 30, 55, 58], 17.55519398766007),
        (&[9, 13, 17, 20, 21, 28, 36, 47, 50], 17.409004313832863),
    ];
    let scale = corr.graph().scale();
    for (fired, want) in shots {
        let got = corr.decode_events(fired).unwrap().weight as f64 / scale;
        assert!(
            (got - want).abs() < 1e-6 * want,
            "{fired:?}: {got} against {want}"
        );
    }
}
