//! From a matching of the Möbius graph back to the observables: the tables built once (each
//! detector's representative rainbow error, the charge graph and the *drag* table: what moving
//! a charge along an atom's edge flips), the cycles of a shot's matched edges, and the walk
//! that carries charges around each cycle and discharges them on its detection events.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::model::{Atom, Charge, NEUTRAL, NONE, Split, next_colour, weight};

/// A detector's representative error: a rainbow triplet (or smaller) containing it, each
/// colour's detector (or [`NONE`]) and the observables it flips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rep {
    /// Red, green and blue's detectors.
    nodes: [u32; 3],
    obs: u64,
}

impl Rep {
    const EMPTY: Rep = Rep {
        nodes: [NONE; 3],
        obs: 0,
    };

    fn weight(&self) -> usize {
        weight(&self.nodes)
    }

    /// The detector of colour `c` (none for the neutral charge).
    fn node(&self, c: Charge) -> u32 {
        if c == NEUTRAL {
            NONE
        } else {
            self.nodes[c as usize - 1]
        }
    }
}

/// Each detector's representative: the first heaviest atom (in atom order) that contains it
/// with one detector of each of its colours; a detector in none borrows its same-colour
/// partner's through the pair atom that joins them.
fn choose_reps(s: &Split, n: usize) -> Vec<Rep> {
    let mut reps = vec![Rep::EMPTY; n];
    for (a, &obs) in &s.atoms {
        let mut rep = Rep {
            nodes: [NONE; 3],
            obs,
        };
        let w = weight(a);
        for &d in a.iter().filter(|&&d| d != NONE) {
            rep.nodes[s.colour[d as usize] as usize - 1] = d;
        }
        if rep.weight() != w {
            continue;
        }
        for &d in a.iter().filter(|&&d| d != NONE) {
            if w > reps[d as usize].weight() {
                reps[d as usize] = rep;
            }
        }
    }
    for (a, &obs) in &s.atoms {
        if weight(a) != 2 {
            continue;
        }
        let [d1, d2, _] = *a;
        let c = s.colour[d1 as usize];
        if c != s.colour[d2 as usize] {
            continue;
        }
        for (to, from) in [(d1, d2), (d2, d1)] {
            let (wt, wf) = (reps[to as usize].weight(), reps[from as usize].weight());
            if wt == 0 && wf > 0 {
                let mut r = reps[from as usize];
                r.nodes[c as usize - 1] = to;
                r.obs ^= obs;
                reps[to as usize] = r;
            }
        }
    }
    reps
}

/// The charge graph: which detectors a charge moves between by one atom, or by the
/// difference of two atoms that share a detector, and what that flips. Edges to the boundary
/// are kept under [`NONE`].
struct ChargeGraph {
    /// Ordered, so that searches (and so the tables) do not depend on a hash's order.
    neighbours: Vec<BTreeMap<u32, u64>>,
}

impl ChargeGraph {
    fn add(&mut self, a: u32, b: u32, obs: u64) {
        if a != NONE {
            self.neighbours[a as usize].insert(b, obs);
        }
        if b != NONE {
            self.neighbours[b as usize].insert(a, obs);
        }
    }

    fn new(s: &Split, n: usize) -> ChargeGraph {
        let mut g = ChargeGraph {
            neighbours: (0..n as u32).map(|d| BTreeMap::from([(d, 0)])).collect(),
        };
        for (a, &obs) in &s.atoms {
            if a[2] == NONE {
                g.add(a[0], a[1], obs);
            }
        }
        let mut by_node: Vec<Vec<(&Atom, u64)>> = vec![Vec::new(); n];
        for (a, &obs) in &s.atoms {
            for &d in a.iter().filter(|&&d| d != NONE) {
                by_node[d as usize].push((a, obs));
            }
        }
        let mut x = Vec::with_capacity(6);
        for list in &by_node {
            for (i, &(e1, o1)) in list.iter().enumerate() {
                for &(e2, o2) in &list[i + 1..] {
                    if weight(e1) < 3 && weight(e2) < 3 {
                        continue;
                    }
                    x.clear();
                    x.extend_from_slice(e1);
                    x.extend_from_slice(e2);
                    xor_sort(&mut x);
                    let (a, b) = match x[..] {
                        [a] => (a, NONE),
                        [a, b] | [a, b, NONE] => (a, b),
                        _ => continue,
                    };
                    g.add(a, b, o1 ^ o2);
                }
            }
        }
        g
    }

    /// What the shortest path (in steps, fewer than `max` of them) from `src` to `dst` flips,
    /// when there is one.
    fn path_flip(&self, src: u32, dst: u32, max: usize, seen: &mut Vec<u32>) -> Option<u64> {
        if src == dst {
            return Some(0);
        }
        if let Some(&f) = self.neighbours[src as usize].get(&dst) {
            return Some(f);
        }
        seen.clear();
        let mut cur = vec![(src, 0u64)];
        let mut next = Vec::new();
        for _ in 0..max {
            for &(n, flip) in &cur {
                for (&m, &f) in &self.neighbours[n as usize] {
                    if m == dst {
                        return Some(flip ^ f);
                    }
                    if m == NONE || seen.contains(&m) {
                        continue;
                    }
                    seen.push(m);
                    next.push((m, flip ^ f));
                }
            }
            std::mem::swap(&mut cur, &mut next);
            next.clear();
            if cur.is_empty() {
                break;
            }
        }
        None
    }
}

/// Sorts `x` and removes equal pairs.
fn xor_sort(x: &mut Vec<u32>) {
    x.sort_unstable();
    super::super::matching::dedup_pairs(x);
}

/// What carrying charge `c1` at one detector to charge `c2` at another flips, for every
/// pair of detectors joined by an atom: `flips[c1][c2]`, present when `has` bit `4·c1 + c2`.
#[derive(Debug, Clone, Copy, Default)]
struct Drag {
    flips: [[u64; 4]; 4],
    has: u16,
}

/// The tables the lift reads, built once per model.
#[derive(Debug, Clone)]
pub(crate) struct Lift {
    colour: Vec<Charge>,
    reps: Vec<Rep>,
    /// Key `(a << 32) | b` → index into `drags`.
    index: HashMap<u64, u32, Fx>,
    drags: Vec<Drag>,
}

impl Lift {
    /// The tables of a split model of `n` detectors.
    pub(crate) fn new(s: &Split, n: usize) -> Lift {
        const MAX_COST: usize = 2;
        let reps = choose_reps(s, n);
        let g = ChargeGraph::new(s, n);
        let mut lift = Lift {
            colour: s.colour.clone(),
            reps,
            index: HashMap::default(),
            drags: Vec::new(),
        };
        let mut seen = Vec::new();
        let mut pairs = BTreeSet::new();
        for (a, &obs) in &s.atoms {
            match weight(a) {
                3 => {
                    let [x, y, z] = *a;
                    pairs.extend([(x, y), (x, z), (y, z)]);
                }
                2 => {
                    let [x, y, _] = *a;
                    let (cx, cy) = (s.colour[x as usize], s.colour[y as usize]);
                    let p = g.neighbours[x as usize][&y];
                    lift.add(x, y, cx, cy, p);
                    lift.add(x, y, NEUTRAL, NEUTRAL, 0);
                    for (u, v) in [(x, y), (y, x)] {
                        // A charge dumped into the boundary by this pair's edge.
                        let r = lift.reps[u as usize];
                        let (cu, cv) = (s.colour[u as usize], s.colour[v as usize]);
                        if r.weight() != 3 || cu ^ cv == NEUTRAL {
                            continue;
                        }
                        let f1 = g.path_flip(r.node(cu), u, MAX_COST, &mut seen);
                        let f2 = g.path_flip(r.node(cv), v, MAX_COST, &mut seen);
                        if let (Some(f1), Some(f2)) = (f1, f2) {
                            lift.add(u, v, cu ^ cv, NEUTRAL, f1 ^ f2 ^ r.obs ^ obs);
                        }
                    }
                    pairs.insert((x, y));
                }
                _ => {
                    let d = a[0];
                    let c = s.colour[d as usize];
                    lift.add(d, d, c, NEUTRAL, obs);
                    lift.add(d, d, NEUTRAL, NEUTRAL, 0);
                    let r = lift.reps[d as usize];
                    if r.weight() == 3 {
                        let c1 = next_colour(c);
                        lift.add(d, d, c1, next_colour(c1), r.obs ^ obs);
                    }
                }
            }
        }
        for (x, y) in pairs {
            let (r1, r2) = (lift.reps[x as usize], lift.reps[y as usize]);
            for c in 1..4 {
                let (a, b) = (r1.node(c), r2.node(c));
                if a != NONE
                    && b != NONE
                    && let Some(f) = g.path_flip(a, b, MAX_COST, &mut seen)
                {
                    lift.add(x, y, c, c, f);
                }
            }
            lift.add(x, y, NEUTRAL, NEUTRAL, 0);
        }
        lift
    }

    /// Records (both ways) that carrying `c1` at `a` to `c2` at `b` flips `obs`; a later
    /// record replaces an earlier one.
    fn add(&mut self, a: u32, b: u32, c1: Charge, c2: Charge, obs: u64) {
        for (a, b, c1, c2) in [(a, b, c1, c2), (b, a, c2, c1)] {
            let key = (u64::from(a) << 32) | u64::from(b);
            let next = self.drags.len() as u32;
            let i = *self.index.entry(key).or_insert(next);
            if i == next {
                self.drags.push(Drag::default());
            }
            let d = &mut self.drags[i as usize];
            d.flips[c1 as usize][c2 as usize] = obs;
            d.has |= 1 << (4 * c1 + c2);
        }
    }

    /// The observables that explain the detection events on one cycle of matched edges
    /// (`cycle[k]` Möbius nodes, the last joined to the first), `None` when no assignment of
    /// charges closes it. `events` is the shot's (packed), `used` scratch.
    pub(crate) fn discharge(
        &self,
        cycle: &[u32],
        fired: impl Fn(u32) -> bool,
        used: &mut Vec<u32>,
    ) -> Option<u64> {
        (0..4).find_map(|start| self.discharge_from(cycle, start, &fired, used))
    }

    fn discharge_from(
        &self,
        cycle: &[u32],
        start: Charge,
        fired: &impl Fn(u32) -> bool,
        used: &mut Vec<u32>,
    ) -> Option<u64> {
        used.clear();
        let mut states: [Option<u64>; 4] = [None; 4];
        states[start as usize] = Some(0);
        let mut cur = *cycle.last()? >> 1;
        for &node in cycle {
            let next = node >> 1;
            let mut after: [Option<u64>; 4] = [None; 4];
            if next == cur && fired(cur) && !used.contains(&cur) {
                // The detection event here: its charge joins the one carried.
                used.push(cur);
                let c = self.colour[cur as usize];
                after[c as usize] = states[NEUTRAL as usize];
                after[NEUTRAL as usize] = states[c as usize];
                let r = self.reps[cur as usize];
                if r.weight() == 3 {
                    let c1 = next_colour(c);
                    let c2 = next_colour(c1);
                    if let Some(f) = states[c1 as usize] {
                        after[c2 as usize] = Some(f ^ r.obs);
                    }
                    if let Some(f) = states[c2 as usize] {
                        after[c1 as usize] = Some(f ^ r.obs);
                    }
                }
            } else {
                let key = (u64::from(cur) << 32) | u64::from(next);
                if let Some(&i) = self.index.get(&key) {
                    let d = &self.drags[i as usize];
                    for (c1, s) in states.iter().enumerate() {
                        let Some(f) = *s else { continue };
                        for (c2, a) in after.iter_mut().enumerate() {
                            if d.has & (1 << (4 * c1 + c2)) != 0 {
                                *a = Some(f ^ d.flips[c1][c2]);
                            }
                        }
                    }
                }
            }
            states = after;
            cur = next;
        }
        states[start as usize]
    }
}

/// A multiplicative hasher for the drag table's `u64` keys (the standard one is several
/// times slower on a lookup per step of every cycle).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fx;

impl std::hash::BuildHasher for Fx {
    type Hasher = FxHasher;
    fn build_hasher(&self) -> FxHasher {
        FxHasher(0)
    }
}

/// The hasher [`Fx`] builds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// The closed walks of a shot's edges: Euler circuits of each connected part of a graph in
/// which every node has even degree. Reused across shots; allocates only to grow.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tours {
    /// Per node: the first of its half-edges, or `NONE`.
    head: Vec<u32>,
    /// Per half-edge (two per edge): the next of its node's, and where it leads.
    next: Vec<u32>,
    to: Vec<u32>,
    used: Vec<bool>,
    touched: Vec<u32>,
    stack: Vec<(u32, u32)>,
    /// The last circuit found.
    pub(crate) cycle: Vec<u32>,
}

impl Tours {
    /// Room for `nodes` nodes.
    pub(crate) fn new(nodes: usize) -> Tours {
        Tours {
            head: vec![NONE; nodes],
            ..Tours::default()
        }
    }

    /// Clears the edges of the last shot.
    pub(crate) fn clear(&mut self) {
        for &n in &self.touched {
            self.head[n as usize] = NONE;
        }
        self.touched.clear();
        self.next.clear();
        self.to.clear();
        self.used.clear();
    }

    /// Adds the edge `a`–`b`.
    pub(crate) fn add(&mut self, a: u32, b: u32) {
        for (from, to) in [(a, b), (b, a)] {
            let h = &mut self.head[from as usize];
            if *h == NONE {
                self.touched.push(from);
            }
            self.next.push(*h);
            self.to.push(to);
            *h = self.next.len() as u32 - 1;
        }
        self.used.push(false);
    }

    /// Calls `each` with every circuit (the nodes in order, the last joined to the first);
    /// `false` when some node had odd degree (no circuit closes).
    pub(crate) fn each(&mut self, mut each: impl FnMut(&[u32])) -> bool {
        for t in 0..self.touched.len() {
            let s = self.touched[t];
            if self.head[s as usize] == NONE {
                continue;
            }
            // Hierholzer: walk unused edges; a node with none left closes into the circuit.
            self.cycle.clear();
            self.stack.clear();
            self.stack.push((s, NONE));
            while let Some(&(v, _)) = self.stack.last() {
                let mut h = self.head[v as usize];
                while h != NONE && self.used[h as usize / 2] {
                    h = self.next[h as usize];
                }
                self.head[v as usize] = h;
                if h == NONE {
                    self.stack.pop();
                    self.cycle.push(v);
                } else {
                    self.used[h as usize / 2] = true;
                    self.stack.push((self.to[h as usize], h));
                }
            }
            if self.cycle.first() != self.cycle.last() {
                return false;
            }
            self.cycle.pop();
            if !self.cycle.is_empty() {
                each(&self.cycle);
            }
        }
        true
    }
}
