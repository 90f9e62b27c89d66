//! Shortest paths inside a window of the graph, for the few matches a sliding window must cut
//! at its commit line: Dijkstra from one detection event to another (or to the boundary) over
//! the window's nodes, with preallocated arrays (no allocation per search).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::graph::{BOUNDARY, MatchingGraph};

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
