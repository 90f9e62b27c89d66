//! Shortest paths inside a window of the graph, for the few matches a sliding window must cut
//! at its commit line: Dijkstra from one detection event to another (or to the boundary) over
//! the window's nodes, with preallocated arrays (no allocation per search).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::graph::{BOUNDARY, MatchingGraph};
use super::queue::Queue;

/// The nodes a search may use, and which edges leaving them lead to the boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) lo: u32,
    pub(crate) hi: u32,
    pub(crate) past_is_boundary: bool,
    pub(crate) future_is_boundary: bool,
}

impl Span {
    #[inline]
    pub(crate) fn inside(&self, x: u32) -> bool {
        x != BOUNDARY && x >= self.lo && x < self.hi
    }
    /// Whether an edge to `x` (outside the span) leads to the boundary.
    #[inline]
    pub(crate) fn leads_to_boundary(&self, x: u32) -> bool {
        x == BOUNDARY
            || (x < self.lo && self.past_is_boundary)
            || (x >= self.hi && self.future_is_boundary)
    }
}

/// Dijkstra's scratch for one graph: one [`Side`] over the nodes and a virtual boundary node
/// at index `n`, and the last path.
#[derive(Debug)]
pub(crate) struct PathSearch {
    side: Side,
    /// The last path: adjacency slots from the source.
    pub(crate) slots: Vec<u32>,
}

impl Clone for PathSearch {
    fn clone(&self) -> PathSearch {
        PathSearch {
            side: self.side.clone(),
            slots: Vec::with_capacity(self.slots.capacity()),
        }
    }
}

impl PathSearch {
    pub(crate) fn new(g: &MatchingGraph) -> PathSearch {
        let n = g.num_nodes();
        PathSearch {
            side: Side::new(n + 1, g),
            slots: Vec::with_capacity(n + 1),
        }
    }

    /// A shortest path inside `span` from `source` to `target` (a node, or [`BOUNDARY`] for
    /// any edge leading to the boundary), left in `self.slots` as the adjacency slots taken
    /// from `source`. Returns whether one was found.
    pub(crate) fn search(
        &mut self,
        g: &MatchingGraph,
        span: Span,
        source: u32,
        target: u32,
    ) -> bool {
        let n = g.num_nodes() as u32;
        let goal = if target == BOUNDARY { n } else { target };
        let side = &mut self.side;
        side.relax(source, 0, u32::MAX, u32::MAX);
        let mut found = false;
        while let Some(Reverse((d, x))) = side.heap.pop() {
            if d > side.dist[x as usize] {
                continue;
            }
            if x == goal {
                found = true;
                break;
            }
            if x == n {
                continue;
            }
            let (lo, hi) = (
                g.start[x as usize] as usize,
                g.start[x as usize + 1] as usize,
            );
            for slot in lo..hi {
                let a = g.adj[slot];
                let nd = d + a.weight as i64;
                if span.inside(a.to) {
                    side.relax(a.to, nd, slot as u32, x);
                } else if target == BOUNDARY && span.leads_to_boundary(a.to) {
                    side.relax(n, nd, slot as u32, x);
                }
            }
        }
        self.slots.clear();
        if found {
            let mut y = goal;
            while side.via[y as usize] != u32::MAX {
                self.slots.push(side.via[y as usize]);
                y = side.from[y as usize];
            }
            self.slots.reverse();
        }
        side.reset();
        found
    }
}

/// One Dijkstra search's state: distances, the slot each node was reached over (and from
/// which node), the nodes touched (reset after each search), the heap.
#[derive(Debug)]
struct Side {
    dist: Vec<i64>,
    via: Vec<u32>,
    from: Vec<u32>,
    touched: Vec<u32>,
    heap: BinaryHeap<Reverse<(i64, u32)>>,
}

impl Side {
    /// Room for `n` nodes of `g` (each relaxation pushes at most once per directed edge,
    /// plus the source).
    fn new(n: usize, g: &MatchingGraph) -> Side {
        Side {
            dist: vec![i64::MAX; n],
            via: vec![u32::MAX; n],
            from: vec![u32::MAX; n],
            touched: Vec::with_capacity(n),
            heap: BinaryHeap::with_capacity(g.adj.len() + 2),
        }
    }

    fn relax(&mut self, node: u32, d: i64, via: u32, from: u32) {
        let i = node as usize;
        if d < self.dist[i] {
            if self.dist[i] == i64::MAX {
                self.touched.push(node);
            }
            self.dist[i] = d;
            self.via[i] = via;
            self.from[i] = from;
            self.heap.push(Reverse((d, node)));
        }
    }

    fn top(&self) -> Option<i64> {
        self.heap.peek().map(|r| r.0.0)
    }

    fn reset(&mut self) {
        for &t in &self.touched {
            self.dist[t as usize] = i64::MAX;
            self.via[t as usize] = u32::MAX;
            self.from[t as usize] = u32::MAX;
        }
        self.touched.clear();
        self.heap.clear();
    }
}

impl Clone for Side {
    fn clone(&self) -> Side {
        Side {
            dist: self.dist.clone(),
            via: self.via.clone(),
            from: self.from.clone(),
            touched: Vec::with_capacity(self.touched.capacity()),
            heap: BinaryHeap::with_capacity(self.heap.capacity()),
        }
    }
}

/// Bidirectional Dijkstra between two nodes, for the edges of a shortest path (correlated
/// matching's first pass): the two searches grow from both ends until the lightest frontier
/// pair cannot beat the best meeting found, so a path of `k` edges explores two balls of
/// radius about `k/2` instead of one of radius `k`. Preallocated: no allocation per search.
#[derive(Debug)]
pub(crate) struct PairSearch {
    fwd: Side,
    bwd: Side,
    /// The last path's edges (indices into the graph's edges), in no particular order.
    pub(crate) edges: Vec<u32>,
}

impl Clone for PairSearch {
    fn clone(&self) -> PairSearch {
        PairSearch {
            fwd: self.fwd.clone(),
            bwd: self.bwd.clone(),
            edges: Vec::with_capacity(self.edges.capacity()),
        }
    }
}

impl PairSearch {
    pub(crate) fn new(g: &MatchingGraph) -> PairSearch {
        PairSearch {
            fwd: Side::new(g.num_nodes(), g),
            bwd: Side::new(g.num_nodes(), g),
            edges: Vec::with_capacity(g.num_nodes() + 1),
        }
    }

    /// The edges of a shortest path inside `span` between nodes `s` and `t`, left in
    /// `self.edges`. Returns whether one was found.
    pub(crate) fn search(&mut self, g: &MatchingGraph, span: Span, s: u32, t: u32) -> bool {
        self.edges.clear();
        if s == t {
            return true;
        }
        self.fwd.relax(s, 0, u32::MAX, u32::MAX);
        self.bwd.relax(t, 0, u32::MAX, u32::MAX);
        let (mut best, mut meet) = (i64::MAX, u32::MAX);
        while let (Some(f), Some(b)) = (self.fwd.top(), self.bwd.top()) {
            if f.saturating_add(b) >= best {
                break;
            }
            let (side, other) = if f <= b {
                (&mut self.fwd, &self.bwd)
            } else {
                (&mut self.bwd, &self.fwd)
            };
            let Some(Reverse((d, x))) = side.heap.pop() else {
                break;
            };
            if d > side.dist[x as usize] {
                continue;
            }
            let (lo, hi) = (
                g.start[x as usize] as usize,
                g.start[x as usize + 1] as usize,
            );
            for slot in lo..hi {
                let a = g.adj[slot];
                if !span.inside(a.to) {
                    continue;
                }
                side.relax(a.to, d + a.weight as i64, slot as u32, x);
                let o = other.dist[a.to as usize];
                if o != i64::MAX {
                    let through = side.dist[a.to as usize] + o;
                    if through < best {
                        best = through;
                        meet = a.to;
                    }
                }
            }
        }
        let found = meet != u32::MAX;
        if found {
            for side in [&self.fwd, &self.bwd] {
                let mut y = meet;
                while side.via[y as usize] != u32::MAX {
                    self.edges.push(g.adj_edge[side.via[y as usize] as usize]);
                    y = side.from[y as usize];
                }
            }
        }
        self.fwd.reset();
        self.bwd.reset();
        found
    }
}

/// Not a node or slot.
const NIL: u32 = u32::MAX;

/// A shortest path between two detection events, or one and the boundary, chosen among equally
/// short ones as PyMatching's path search chooses it (its `SearchFlooder`, read and not copied):
/// what `decode_to_edges` lists and what correlated matching's first pass lowers weights by
/// must be PyMatching's path, not just one as short.
///
/// The search floods from both ends at once (from the one end for the boundary): every node
/// reached holds its distance from its end and the adjacency slot back towards it; a reached
/// node is looked at when its next edge is due — an empty neighbour reached at `distance +
/// weight`, a neighbour reached from the other end met halfway, the boundary (index 0 of the
/// adjacency) at `distance + weight` — and the first meeting ends the search. Ties fall as
/// they fall there: among a node's edges due at once the first in adjacency order wins, and
/// the nodes due at one time come out of the flooder's radix heap ([`Queue`]) in its order,
/// with each node's look-at requests deduplicated as PyMatching's event tracker does. The
/// path is traced back from the meeting edge's two ends, then the meeting edge itself.
/// Preallocated: no allocation per search.
#[derive(Debug)]
pub(crate) struct FloodSearch {
    /// Per node: 0 unreached, 1 reached from the far end, 2 from the near end.
    end: Vec<u8>,
    /// Per reached node: its adjacency slot back towards its end (`NIL` at an end).
    back: Vec<u32>,
    /// Per reached node: its distance from its end.
    dist: Vec<i64>,
    /// The nodes reached (reset after each search).
    reached: Vec<u32>,
    /// When each node is to be looked at next.
    queue: Queue,
    /// The last path's edges, each as `(node, slot)`: the edge at adjacency slot `slot` of
    /// `node`, in PyMatching's order (back from the meeting edge's first end, back from its
    /// other end, the meeting edge) and orientation.
    pub(crate) path: Vec<(u32, u32)>,
}

impl Clone for FloodSearch {
    /// A clean search of the same size (between searches the state is clean; the scratch
    /// keeps its room, so that a clone does not allocate either).
    fn clone(&self) -> FloodSearch {
        FloodSearch {
            end: self.end.clone(),
            back: self.back.clone(),
            dist: self.dist.clone(),
            reached: Vec::with_capacity(self.reached.capacity()),
            queue: self.queue.clone(),
            path: Vec::with_capacity(self.path.capacity()),
        }
    }
}

impl FloodSearch {
    pub(crate) fn new(g: &MatchingGraph) -> FloodSearch {
        let n = g.num_nodes();
        FloodSearch {
            end: vec![0; n],
            back: vec![NIL; n],
            dist: vec![0; n],
            reached: Vec::with_capacity(n),
            queue: Queue::new(n),
            path: Vec::with_capacity(n + 1),
        }
    }

    /// A shortest path inside `span` from `source` to `target` (a node, or [`BOUNDARY`] for
    /// any edge leading to the boundary), left in `self.path`. Returns whether one was found.
    pub(crate) fn search(
        &mut self,
        g: &MatchingGraph,
        span: Span,
        source: u32,
        target: u32,
    ) -> bool {
        self.path.clear();
        if source == target {
            return true;
        }
        let to_boundary = target == BOUNDARY;
        if !to_boundary {
            self.seed(g, span, to_boundary, target, 1);
        }
        self.seed(g, span, to_boundary, source, 2);
        let mut meeting = None;
        while let Some((x, _)) = self.queue.pop() {
            if let Some(slot) = self.look(g, span, to_boundary, x) {
                meeting = Some((x, slot));
                break;
            }
        }
        if let Some((x, slot)) = meeting {
            self.trace(g, x);
            let y = g.adj[slot as usize].to;
            if span.inside(y) {
                self.trace(g, y);
            }
            self.path.push((x, slot));
        }
        for &x in &self.reached {
            self.end[x as usize] = 0;
            self.back[x as usize] = NIL;
        }
        self.reached.clear();
        self.queue.reset();
        meeting.is_some()
    }

    /// Appends the edges from `x` back to its end.
    fn trace(&mut self, g: &MatchingGraph, mut x: u32) {
        while self.back[x as usize] != NIL {
            let slot = self.back[x as usize];
            self.path.push((x, slot));
            x = g.adj[slot as usize].to;
        }
    }

    fn seed(&mut self, g: &MatchingGraph, span: Span, to_boundary: bool, x: u32, end: u8) {
        self.end[x as usize] = end;
        self.back[x as usize] = NIL;
        self.dist[x as usize] = 0;
        self.reached.push(x);
        self.reschedule(g, span, to_boundary, x);
    }

    /// Node `x`'s next edge due: `(slot, time)`, slot `NIL` when none.
    fn next_edge(&self, g: &MatchingGraph, span: Span, to_boundary: bool, x: u32) -> (u32, i64) {
        let now = self.queue.now();
        let (end, dist) = (self.end[x as usize], self.dist[x as usize]);
        let mut best = (NIL, i64::MAX);
        for slot in g.start[x as usize]..g.start[x as usize + 1] {
            let a = g.adj[slot as usize];
            let w = a.weight as i64;
            let t = if !span.inside(a.to) {
                if !(to_boundary && span.leads_to_boundary(a.to)) {
                    continue;
                }
                dist + w
            } else {
                let e = self.end[a.to as usize];
                if e == end {
                    continue;
                }
                if e == 0 {
                    dist + w
                } else {
                    // Both ends' floods cover the edge from either side: they meet halfway
                    // (all weights and distances are even).
                    let covered = (now - dist) + (now - self.dist[a.to as usize]);
                    now + (w - covered) / 2
                }
            };
            if t < best.1 {
                best = (slot, t);
            }
        }
        best
    }

    fn reschedule(&mut self, g: &MatchingGraph, span: Span, to_boundary: bool, x: u32) {
        let (slot, t) = self.next_edge(g, span, to_boundary, x);
        if slot == NIL {
            self.queue.unwant(x);
        } else {
            self.queue.want(x, t);
        }
    }

    /// Looks at node `x`: the meeting slot when its next edge due now meets the other end or
    /// the boundary; an empty neighbour due now is reached (and `x` looked at again now).
    fn look(&mut self, g: &MatchingGraph, span: Span, to_boundary: bool, x: u32) -> Option<u32> {
        let (slot, t) = self.next_edge(g, span, to_boundary, x);
        let now = self.queue.now();
        if t == now {
            let a = g.adj[slot as usize];
            if !span.inside(a.to) || self.end[a.to as usize] != 0 {
                return Some(slot);
            }
            let y = a.to;
            let (lo, hi) = (g.start[y as usize], g.start[y as usize + 1]);
            let back = (lo..hi).find(|&s| g.adj[s as usize].to == x).unwrap_or(NIL);
            self.end[y as usize] = self.end[x as usize];
            self.back[y as usize] = back;
            self.dist[y as usize] = self.dist[x as usize] + a.weight as i64;
            self.reached.push(y);
            self.reschedule(g, span, to_boundary, y);
            self.queue.want(x, now);
        } else if slot != NIL {
            self.queue.want(x, t);
        }
        None
    }
}
