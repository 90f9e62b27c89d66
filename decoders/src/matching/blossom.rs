//! The sparse-blossom engine: regions that grow from detection events over the detector
//! graph, and the alternating trees, matches and blossoms they form when they collide
//! (Higgott & Gidney, arXiv 2303.15933). Written for this crate from the paper's description;
//! PyMatching 2's source was read, not copied.
//!
//! # State
//!
//! Everything lives in flat arrays indexed by `u32` (no pointers, no per-decode allocation):
//!
//! - a [`NodeState`] per detector: the region that reached it and the top-level region above
//!   that one, the detection event it was reached from (its *source*) and the observables
//!   crossed on the way, the region's radius when it arrived, and the link to the node that
//!   arrived in the same region before it (a region's *shell* is a stack threaded through its
//!   nodes), and one more node that stands for the boundary (never reached);
//! - a [`Region`] per live region, from a pool: its radius as a function of time
//!   ([`Varying`], in an array of its own, with one more radius, the empty region's, that an
//!   empty node reads), its blossom parent and top-level ancestor, its alternating-tree node,
//!   its match, and — for a blossom — the cycle of its children, threaded through the
//!   children (`next_sibling`, with the compressed edge from each child to the next);
//! - an [`AltNode`] per alternating-tree node, from a pool: an inner (shrinking) and an outer
//!   (growing) region, the edge between them, its parent with the edge to it, and its children
//!   as a doubly linked list;
//! - the [`Queue`] of tentative events, in PyMatching's order, with a tracker per node (when
//!   to look at it next) and per region (when a shrinking one's outermost node leaves, or it
//!   reaches radius zero): a node's or region's wish is queued only when sooner than its
//!   queued entry, and stale entries are dropped as they come out, as PyMatching's trackers
//!   do.
//!
//! A *compressed edge* is a shortest path between two detection events (or one and the
//! boundary) summarised by its ends and the observables it crosses; matching and blossom
//! cycles are made of them. The matching's weight is the sum of every region's radius at the
//! end (the dual equals the primal at the optimum), which the tests compare with a brute-force
//! minimum-weight perfect matching.
//!
//! # Time
//!
//! A region's radius is `y + s·t` with `s` ∈ {+1 growing, 0 frozen, −1 shrinking}. A node's
//! *local radius* is its top region's radius plus the growth of the frozen regions between
//! (cached as `wrapped`, minus the radius at which its own region arrived). Two growing local
//! radii meet across an edge of weight `w` at `t = (w − y₁ − y₂)/2`, a growing one meets a
//! frozen one or an empty node at `t = w − y₁ − y₂`, and the boundary at `t = w − y₁`.

use super::graph::{Adj, BOUNDARY, MatchingGraph};
use super::queue::Queue;
use std::hint::select_unpredictable;

/// No node, region or tree node.
pub(crate) const NONE: u32 = u32::MAX;

/// A value that changes linearly with time: `y + slope·t`, `slope` ∈ {−1, 0, 1}.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Varying {
    pub(crate) y: i64,
    pub(crate) slope: i64,
}

impl Varying {
    const ZERO: Varying = Varying { y: 0, slope: 0 };

    #[inline]
    fn at(self, t: i64) -> i64 {
        self.y + self.slope * t
    }
    #[inline]
    fn then(self, t: i64, slope: i64) -> Varying {
        Varying {
            y: self.at(t) - slope * t,
            slope,
        }
    }
    #[inline]
    fn plus(self, c: i64) -> Varying {
        Varying {
            y: self.y + c,
            slope: self.slope,
        }
    }
}

/// A path between two detection events (`to` = [`NONE`] for the boundary), by its ends and
/// the observables it crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CEdge {
    pub(crate) from: u32,
    pub(crate) to: u32,
    pub(crate) obs: u64,
}

impl CEdge {
    const EMPTY: CEdge = CEdge {
        from: NONE,
        to: NONE,
        obs: 0,
    };
    #[inline]
    fn rev(self) -> CEdge {
        CEdge {
            from: self.to,
            to: self.from,
            obs: self.obs,
        }
    }
}

/// A detector's state during a decode (all `NONE`/0 when no region has reached it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeState {
    /// The region that reached it.
    arrived: u32,
    /// The top-level region containing `arrived`.
    top: u32,
    /// The detection event its region's growth reached it from.
    source: u32,
    /// The node that joined `arrived`'s shell before it.
    shell_prev: u32,
    /// Radius growth of the frozen regions from `arrived` up to `top`, minus `arrival`.
    wrapped: i64,
    /// `arrived`'s radius when it reached the node.
    arrival: i64,
    /// Observables crossed from `source` to here.
    obs: u64,
}

const EMPTY_NODE: NodeState = NodeState {
    arrived: NONE,
    top: NONE,
    source: NONE,
    shell_prev: NONE,
    wrapped: 0,
    arrival: 0,
    obs: 0,
};

/// A region: a detection event's, or a blossom of regions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Region {
    /// The blossom it is a child of.
    parent: u32,
    /// Its top-level ancestor (itself when top-level).
    top: u32,
    /// Its alternating-tree node (top-level regions in a tree).
    alt: u32,
    /// The last node of its shell.
    shell: u32,
    /// The region it is matched to; `NONE` with `match_edge.from != NONE` is the boundary.
    match_region: u32,
    match_edge: CEdge,
    /// A blossom's first child.
    first_child: u32,
    /// The next child in its parent's cycle, and the edge to it.
    next_sibling: u32,
    sibling_edge: CEdge,
}

const FRESH_REGION: Region = Region {
    parent: NONE,
    top: NONE,
    alt: NONE,
    shell: NONE,
    match_region: NONE,
    match_edge: CEdge::EMPTY,
    first_child: NONE,
    next_sibling: NONE,
    sibling_edge: CEdge::EMPTY,
};

/// An alternating-tree node: an outer region, and (except at the root) the inner region
/// through which it hangs from its parent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AltNode {
    inner: u32,
    outer: u32,
    inner_to_outer: CEdge,
    parent: u32,
    /// From `inner` to the parent's outer region.
    parent_edge: CEdge,
    /// Its children, a doubly linked list in PyMatching's order (a child is added at the
    /// end; one taken out is replaced by the last).
    first_child: u32,
    last_child: u32,
    next_sib: u32,
    prev_sib: u32,
    visited: bool,
}

const FRESH_ALT: AltNode = AltNode {
    inner: NONE,
    outer: NONE,
    inner_to_outer: CEdge::EMPTY,
    parent: NONE,
    parent_edge: CEdge::EMPTY,
    first_child: NONE,
    last_child: NONE,
    next_sib: NONE,
    prev_sib: NONE,
    visited: false,
};

/// What the flooder tells the matcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    RegionHitRegion {
        r1: u32,
        r2: u32,
        edge: CEdge,
    },
    RegionHitBoundary {
        region: u32,
        edge: CEdge,
    },
    BlossomShatter {
        blossom: u32,
        in_parent: u32,
        in_child: u32,
    },
}

/// Why a decode failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The flooding ended with this detection event's region unmatched.
    Unmatched(u32),
    /// The event budget ran out (a bug; never a hang).
    Budget,
}

/// A fixed pool of indices `0..cap` with a free stack (`free[..nfree]`, a full-length array
/// so that a clone keeps its room).
#[derive(Debug, Clone)]
struct Pool {
    next: u32,
    free: Vec<u32>,
    nfree: usize,
}

impl Pool {
    fn new(cap: usize) -> Pool {
        Pool {
            next: 0,
            free: vec![0; cap],
            nfree: 0,
        }
    }
    #[inline]
    fn alloc(&mut self) -> u32 {
        if self.nfree > 0 {
            self.nfree -= 1;
            return self.free[self.nfree];
        }
        debug_assert!((self.next as usize) < self.free.len(), "pool exhausted");
        self.next += 1;
        self.next - 1
    }
    #[inline]
    fn release(&mut self, i: u32) {
        self.free[self.nfree] = i;
        self.nfree += 1;
    }
    fn live(&self) -> usize {
        self.next as usize - self.nfree
    }
    fn reset(&mut self) {
        self.next = 0;
        self.nfree = 0;
    }
}

/// An empty vector with the capacity of `v` (a clone's scratch keeps its room, so a cloned
/// decoder does not allocate either).
pub(crate) fn room_of<T>(v: &Vec<T>) -> Vec<T> {
    Vec::with_capacity(v.capacity())
}

/// Per-decode totals: the observables of the matching's paths and its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Totals {
    pub(crate) obs: u64,
    pub(crate) weight: i64,
}

/// The engine's state and scratch, sized for one graph.
#[derive(Debug)]
pub(crate) struct Blossom {
    n: u32,
    nodes: Vec<NodeState>,
    regions: Vec<Region>,
    /// Each region's radius (beside the regions: the flooder's inner loop reads only these),
    /// and one more, the empty region's (0, frozen), which no region takes.
    radius: Vec<Varying>,
    /// Regions growing (all top-level): none, and no frozen or empty node has an event.
    growing: u32,
    alts: Vec<AltNode>,
    region_pool: Pool,
    alt_pool: Pool,
    queue: Queue,
    /// Scratch stacks (capacities fixed at construction).
    stack: Vec<u32>,
    /// The regions left to break into matches ([`Blossom::decode`]'s last step).
    extract_stack: Vec<u32>,
    path: Vec<u32>,
    cycle: Vec<(u32, CEdge)>,
    cycle2: Vec<(u32, CEdge)>,
    orphans: Vec<u32>,
    /// Events processed in this decode, against `budget`.
    events: u64,
    budget: u64,
    /// The nodes this decode floods: `lo .. lo + span` ([`Blossom::set_window`]).
    lo: u32,
    span: u32,
    /// Whether an edge to a node below `lo` / at or above `lo + span` counts as an edge to
    /// the boundary (else it is ignored).
    past_is_boundary: bool,
    future_is_boundary: bool,
    /// Whether the window is the whole graph (every neighbour but [`BOUNDARY`] inside it):
    /// [`Blossom::next_node_event`]'s fast path.
    whole: bool,
    /// Collect the matches' compressed edges into `matches` (windows need them).
    collect: bool,
    pub(crate) matches: Vec<CEdge>,
}

impl Clone for Blossom {
    /// A clean engine of the same size (between decodes the state is clean; the scratch
    /// keeps its capacity).
    fn clone(&self) -> Blossom {
        Blossom {
            n: self.n,
            nodes: self.nodes.clone(),
            regions: self.regions.clone(),
            radius: self.radius.clone(),
            growing: 0,
            alts: self.alts.clone(),
            region_pool: self.region_pool.clone(),
            alt_pool: self.alt_pool.clone(),
            queue: self.queue.clone(),
            stack: room_of(&self.stack),
            extract_stack: room_of(&self.extract_stack),
            path: room_of(&self.path),
            cycle: room_of(&self.cycle),
            cycle2: room_of(&self.cycle2),
            orphans: room_of(&self.orphans),
            events: 0,
            budget: self.budget,
            lo: self.lo,
            span: self.span,
            past_is_boundary: self.past_is_boundary,
            future_is_boundary: self.future_is_boundary,
            whole: self.whole,
            collect: self.collect,
            matches: room_of(&self.matches),
        }
    }
}

impl Blossom {
    /// State for `graph`.
    pub(crate) fn new(graph: &MatchingGraph) -> Blossom {
        let n = graph.num_nodes();
        let regions = 2 * n + 2;
        // One more node and region, never reached nor allocated: the boundary as a node and
        // the empty region ([`Blossom::next_node_event`]).
        Blossom {
            n: n as u32,
            nodes: vec![EMPTY_NODE; n + 1],
            regions: vec![FRESH_REGION; regions],
            radius: vec![Varying::ZERO; regions + 1],
            growing: 0,
            alts: vec![FRESH_ALT; n + 1],
            region_pool: Pool::new(regions),
            alt_pool: Pool::new(n + 1),
            queue: Queue::new(n + regions),
            stack: Vec::with_capacity(regions + n),
            extract_stack: Vec::with_capacity(regions + n),
            path: Vec::with_capacity(n + 1),
            cycle: Vec::with_capacity(regions),
            cycle2: Vec::with_capacity(regions),
            orphans: Vec::with_capacity(n + 1),
            events: 0,
            budget: 1_000_000 + 64 * (n as u64 + 1) * (graph.edges().len() as u64 + 1),
            lo: 0,
            span: n as u32,
            past_is_boundary: false,
            future_is_boundary: false,
            whole: true,
            collect: false,
            matches: Vec::with_capacity(n),
        }
    }

    /// Restricts the following decodes to the nodes `lo..hi`; edges to nodes below `lo`
    /// (above `hi`) lead to the boundary when `past_is_boundary` (`future_is_boundary`), else
    /// they are ignored. With `collect`, each decode leaves its matches in `matches`.
    pub(crate) fn set_window(
        &mut self,
        lo: u32,
        hi: u32,
        past_is_boundary: bool,
        future_is_boundary: bool,
        collect: bool,
    ) {
        self.lo = lo;
        self.span = hi - lo;
        self.past_is_boundary = past_is_boundary;
        self.future_is_boundary = future_is_boundary;
        self.whole = lo == 0 && hi == self.n;
        self.collect = collect;
    }

    /// Whether each decode leaves its matches in `matches`.
    pub(crate) fn collects(&self) -> bool {
        self.collect
    }

    /// Makes each decode leave its matches in `matches` (or not), the window kept.
    pub(crate) fn set_collect(&mut self, collect: bool) {
        self.collect = collect;
    }

    /// The window as a path search sees it.
    pub(crate) fn span(&self) -> crate::matching::path::Span {
        crate::matching::path::Span {
            lo: self.lo,
            hi: self.lo + self.span,
            past_is_boundary: self.past_is_boundary,
            future_is_boundary: self.future_is_boundary,
        }
    }

    /// Whether node (or [`BOUNDARY`]) `x` is inside the window.
    #[inline]
    pub(crate) fn inside(&self, x: u32) -> bool {
        x.wrapping_sub(self.lo) < self.span
    }

    /// Whether an edge to `x`, outside the window, leads to the boundary.
    #[inline]
    fn outside_is_boundary(&self, x: u32) -> bool {
        if x == BOUNDARY {
            true
        } else if x < self.lo {
            self.past_is_boundary
        } else {
            self.future_is_boundary
        }
    }

    // ---- node radii and event times -------------------------------------------------------

    #[inline]
    fn local_radius(&self, n: u32) -> Varying {
        let s = &self.nodes[n as usize];
        if s.top == NONE {
            Varying::ZERO
        } else {
            self.radius[s.top as usize].plus(s.wrapped)
        }
    }

    /// The next interaction of node `n` along one of its edges: `(slot, time)`, slot
    /// [`NONE`] when there is none. Among edges due at once the first in adjacency order wins.
    #[inline]
    fn next_node_event(&self, g: &MatchingGraph, n: u32) -> (u32, i64) {
        let lo = g.start[n as usize];
        let adj = &g.adj[lo as usize..g.start[n as usize + 1] as usize];
        let s = &self.nodes[n as usize];
        let (i, t) = if s.top == NONE {
            // An empty node (radius 0, frozen): growing neighbours reach it.
            if self.growing == 0 {
                (NONE, i64::MAX)
            } else if self.whole {
                self.next_event_frozen_whole(adj, 0)
            } else {
                self.next_event_frozen(adj, 0)
            }
        } else {
            let rad1 = self.radius[s.top as usize].plus(s.wrapped);
            match rad1.slope {
                1 if self.whole => self.next_event_growing_whole(adj, s.top, rad1.y),
                1 => self.next_event_growing(adj, s.top, rad1.y),
                0 if self.growing == 0 => (NONE, i64::MAX),
                0 if self.whole => self.next_event_frozen_whole(adj, rad1.y),
                0 => self.next_event_frozen(adj, rad1.y),
                _ => (NONE, i64::MAX),
            }
        };
        (if i == NONE { NONE } else { lo + i }, t)
    }

    /// [`Blossom::next_node_event`] of detection event `n` as it is created: at time 0 every
    /// region is a detection event's, growing from radius 0, so an edge of weight `w` is due
    /// at `w` (to the boundary or an empty node) or `w / 2` (to an earlier event), and no
    /// region's radius needs reading.
    #[inline]
    fn first_node_event(&self, g: &MatchingGraph, n: u32) -> (u32, i64) {
        debug_assert_eq!(self.queue.now(), 0);
        let lo = g.start[n as usize];
        let adj = &g.adj[lo as usize..g.start[n as usize + 1] as usize];
        let (mut best, mut best_t) = (NONE, i64::MAX);
        if self.whole {
            // The boundary reads as an empty node.
            for (i, a) in adj.iter().enumerate() {
                let nb = &self.nodes[(a.to as usize).min(self.nodes.len() - 1)];
                let t = (a.weight >> (nb.top != NONE) as u32) as i64;
                let sooner = t < best_t;
                best = select_unpredictable(sooner, i as u32, best);
                best_t = select_unpredictable(sooner, t, best_t);
            }
        } else {
            for (i, a) in adj.iter().enumerate() {
                let (inside, open) = self.edge_in_window(a.to);
                let nb = &self.nodes[(a.to as usize).min(self.nodes.len() - 1)];
                let t = (a.weight >> (inside & (nb.top != NONE)) as u32) as i64;
                let t = select_unpredictable(inside | open, t, i64::MAX);
                let sooner = t < best_t;
                best = select_unpredictable(sooner, i as u32, best);
                best_t = select_unpredictable(sooner, t, best_t);
            }
        }
        (if best == NONE { NONE } else { lo + best }, best_t)
    }

    /// The radius of the top region of the node at `to` (an adjacency entry's `to`) and the
    /// node's wrapped radius. The boundary reads as an empty node (its extra node), an empty
    /// node as one in the empty region (the extra region: radius 0, frozen) — no branch.
    #[inline(always)]
    fn neighbour(&self, to: u32) -> (u32, Varying, i64) {
        let nb = &self.nodes[(to as usize).min(self.nodes.len() - 1)];
        let r = self.radius[(nb.top as usize).min(self.radius.len() - 1)];
        (nb.top, r, nb.wrapped)
    }

    /// [`Blossom::next_node_event`] of a node in growing top region `top` at local radius
    /// `y + t`, the window being the whole graph: `(index into adj, time)`. Branch-free per
    /// edge: the boundary and an empty neighbour are reached when this radius covers the
    /// edge, a frozen region's node likewise, a growing one's halfway; a neighbour in `top`
    /// or in a shrinking region never.
    #[inline]
    fn next_event_growing_whole(&self, adj: &[Adj], top: u32, y: i64) -> (u32, i64) {
        let (mut best, mut best_t) = (NONE, i64::MAX);
        for (i, a) in adj.iter().enumerate() {
            let (top2, rad2, wrapped2) = self.neighbour(a.to);
            let gap = a.weight as i64 - y - (rad2.y + wrapped2);
            // Slope 1: halfway (even weights and radii keep it exact); 0: the whole gap.
            let t = gap >> (rad2.slope & 1);
            let never = (top2 == top) | (rad2.slope < 0);
            let t = select_unpredictable(never, i64::MAX, t);
            let sooner = t < best_t;
            best = select_unpredictable(sooner, i as u32, best);
            best_t = select_unpredictable(sooner, t, best_t);
        }
        (best, best_t)
    }

    /// [`Blossom::next_event_frozen`] with the window the whole graph, branch-free per edge
    /// (the boundary and empty neighbours read as frozen, never growing).
    #[inline]
    fn next_event_frozen_whole(&self, adj: &[Adj], y: i64) -> (u32, i64) {
        let (mut best, mut best_t) = (NONE, i64::MAX);
        for (i, a) in adj.iter().enumerate() {
            let (_, rad2, wrapped2) = self.neighbour(a.to);
            let t = a.weight as i64 - y - (rad2.y + wrapped2);
            let t = select_unpredictable(rad2.slope == 1, t, i64::MAX);
            let sooner = t < best_t;
            best = select_unpredictable(sooner, i as u32, best);
            best_t = select_unpredictable(sooner, t, best_t);
        }
        (best, best_t)
    }

    /// Whether an edge to `to` leads somewhere inside the window (`(inside, open)`: inside
    /// it, or else to the boundary), branch-free.
    #[inline(always)]
    fn edge_in_window(&self, to: u32) -> (bool, bool) {
        let inside = self.inside(to);
        let open =
            select_unpredictable(to < self.lo, self.past_is_boundary, self.future_is_boundary)
                | (to == BOUNDARY);
        (inside, open)
    }

    /// [`Blossom::next_event_growing_whole`] inside a window: an edge leaving it reads as
    /// one to the boundary when that side is (an empty node, reached when this radius covers
    /// the edge), else it is never due.
    #[inline]
    fn next_event_growing(&self, adj: &[Adj], top: u32, y: i64) -> (u32, i64) {
        let (mut best, mut best_t) = (NONE, i64::MAX);
        for (i, a) in adj.iter().enumerate() {
            let to = if self.inside(a.to) {
                a.to
            } else if self.outside_is_boundary(a.to) {
                BOUNDARY
            } else {
                continue;
            };
            let (top2, rad2, wrapped2) = self.neighbour(to);
            let gap = a.weight as i64 - y - (rad2.y + wrapped2);
            let t = gap >> (rad2.slope & 1);
            let never = (top2 == top) | (rad2.slope < 0);
            let t = select_unpredictable(never, i64::MAX, t);
            let sooner = t < best_t;
            best = select_unpredictable(sooner, i as u32, best);
            best_t = select_unpredictable(sooner, t, best_t);
        }
        (best, best_t)
    }

    /// [`Blossom::next_node_event`] of a node whose local radius is frozen at `y`: growing
    /// neighbours reach it (a node outside the window never grows). `(index into adj, time)`.
    #[inline]
    fn next_event_frozen(&self, adj: &[Adj], y: i64) -> (u32, i64) {
        let (mut best, mut best_t) = (NONE, i64::MAX);
        for (i, a) in adj.iter().enumerate() {
            if !self.inside(a.to) {
                continue;
            }
            let (_, rad2, wrapped2) = self.neighbour(a.to);
            let t = a.weight as i64 - y - (rad2.y + wrapped2);
            let t = select_unpredictable(rad2.slope == 1, t, i64::MAX);
            let sooner = t < best_t;
            best = select_unpredictable(sooner, i as u32, best);
            best_t = select_unpredictable(sooner, t, best_t);
        }
        (best, best_t)
    }

    #[inline]
    fn reschedule_node(&mut self, g: &MatchingGraph, n: u32) {
        let (slot, t) = self.next_node_event(g, n);
        if slot == NONE {
            self.queue.unwant(n);
        } else {
            self.queue.want(n, t);
        }
    }

    fn schedule_shrink(&mut self, r: u32) {
        let reg = &self.regions[r as usize];
        let t = if reg.shell == NONE {
            self.radius[r as usize].y
        } else {
            self.local_radius(reg.shell).y
        };
        self.queue.want(self.n + r, t);
    }

    fn wrapped_radius(&self, n: u32) -> i64 {
        let s = &self.nodes[n as usize];
        if s.source == NONE {
            return 0;
        }
        let mut total = 0;
        let mut r = s.arrived;
        while r != s.top && r != NONE {
            total += self.radius[r as usize].y;
            r = self.regions[r as usize].parent;
        }
        total - s.arrival
    }

    // ---- walking regions ------------------------------------------------------------------

    /// Calls `f` on `r` and every region inside it, depth first, a blossom's children in
    /// cycle order (PyMatching's order: the order in which [`Blossom::for_each_node`] visits
    /// nodes decides the order of their entries in the queue).
    fn for_each_descendant(&mut self, r: u32, mut f: impl FnMut(&mut Blossom, u32)) {
        let mut stack = std::mem::take(&mut self.stack);
        let base = stack.len();
        stack.push(r);
        while stack.len() > base {
            let x = stack.pop().unwrap_or(NONE);
            f(self, x);
            let first = self.regions[x as usize].first_child;
            let mut c = first;
            let mark = stack.len();
            while c != NONE {
                stack.push(c);
                c = self.regions[c as usize].next_sibling;
                if c == first {
                    break;
                }
            }
            stack[mark..].reverse();
        }
        self.stack = stack;
    }

    /// Calls `f` on every node in `r`'s area (its shell, newest node first, then its
    /// descendants' shells in [`Blossom::for_each_descendant`]'s order).
    fn for_each_node(&mut self, r: u32, mut f: impl FnMut(&mut Blossom, u32)) {
        self.for_each_descendant(r, |b, x| {
            let mut n = b.regions[x as usize].shell;
            while n != NONE {
                let prev = b.nodes[n as usize].shell_prev;
                f(b, n);
                n = prev;
            }
        });
    }

    fn reschedule_area(&mut self, g: &MatchingGraph, r: u32) {
        self.for_each_node(r, |b, n| b.reschedule_node(g, n));
    }

    /// Makes `top` the top-level region of `r` and everything inside it, recomputing the
    /// nodes' wrapped radii when `rewrap`.
    fn set_top(&mut self, r: u32, top: u32, rewrap: bool) {
        self.for_each_descendant(r, |b, x| {
            b.regions[x as usize].top = top;
            let mut n = b.regions[x as usize].shell;
            while n != NONE {
                b.nodes[n as usize].top = top;
                if rewrap {
                    b.nodes[n as usize].wrapped = b.wrapped_radius(n);
                }
                n = b.nodes[n as usize].shell_prev;
            }
        });
    }

    // ---- region motion --------------------------------------------------------------------

    /// Region `r`'s radius changes slope at `now`; [`Blossom::growing`] counts it.
    #[inline]
    pub(crate) fn set_slope(&mut self, r: u32, now: i64, slope: i64) {
        let old = self.radius[r as usize];
        self.growing += (slope == 1) as u32;
        self.growing -= (old.slope == 1) as u32;
        self.radius[r as usize] = old.then(now, slope);
    }

    /// A new region (a detection event's, or a blossom) growing from `y` at time 0.
    #[inline]
    pub(crate) fn start_growing(&mut self, r: u32, y: i64) {
        self.radius[r as usize] = Varying { y, slope: 1 };
        self.growing += 1;
    }

    fn set_growing(&mut self, g: &MatchingGraph, r: u32) {
        let now = self.queue.now();
        self.set_slope(r, now, 1);
        self.queue.unwant(self.n + r);
        self.reschedule_area(g, r);
    }

    fn set_frozen(&mut self, g: &MatchingGraph, r: u32) {
        let now = self.queue.now();
        let was_shrinking = self.radius[r as usize].slope == -1;
        self.set_slope(r, now, 0);
        self.queue.unwant(self.n + r);
        if was_shrinking {
            self.reschedule_area(g, r);
        }
    }

    fn set_shrinking(&mut self, r: u32) {
        let now = self.queue.now();
        self.set_slope(r, now, -1);
        self.schedule_shrink(r);
        self.for_each_node(r, |b, n| b.queue.unwant(n));
    }

    // ---- flooder events -------------------------------------------------------------------

    /// Node `n`'s turn: the interaction due now along its soonest edge (an arrival at an
    /// empty node is done here; a collision is returned for the matcher, and the node looks
    /// again once it is handled), or its next one scheduled.
    fn look_at_node(&mut self, g: &MatchingGraph, n: u32) -> Option<Event> {
        let (slot, t) = self.next_node_event(g, n);
        let now = self.queue.now();
        if t != now {
            if slot != NONE {
                self.queue.want(n, t);
            }
            return None;
        }
        // Look again once this interaction is handled: another edge may be due now too.
        self.queue.want(n, now);
        let a = g.adj[slot as usize];
        let obs = g.adj_obs[slot as usize];
        let src = self.nodes[n as usize];
        if !self.inside(a.to) {
            return Some(Event::RegionHitBoundary {
                region: src.top,
                edge: CEdge {
                    from: src.source,
                    to: NONE,
                    obs: src.obs ^ obs,
                },
            });
        }
        let dst = self.nodes[a.to as usize];
        if src.arrived != NONE && dst.arrived == NONE {
            self.arrive(g, src.top, a.to, n, obs);
            None
        } else if dst.arrived != NONE && src.arrived == NONE {
            self.arrive(g, dst.top, n, a.to, obs);
            None
        } else {
            Some(Event::RegionHitRegion {
                r1: src.top,
                r2: dst.top,
                edge: CEdge {
                    from: src.source,
                    to: dst.source,
                    obs: src.obs ^ dst.obs ^ obs,
                },
            })
        }
    }

    /// Top-level region `r` reaches the empty node `empty` from `from` over an edge crossing
    /// `obs`.
    fn arrive(&mut self, g: &MatchingGraph, r: u32, empty: u32, from: u32, obs: u64) {
        let now = self.queue.now();
        let f = self.nodes[from as usize];
        let arrival = self.radius[r as usize].at(now);
        self.nodes[empty as usize] = NodeState {
            arrived: r,
            top: r,
            source: f.source,
            shell_prev: self.regions[r as usize].shell,
            wrapped: -arrival,
            arrival,
            obs: f.obs ^ obs,
        };
        self.regions[r as usize].shell = empty;
        self.reschedule_node(g, empty);
    }

    fn region_shrinking(&mut self, g: &MatchingGraph, r: u32) -> Option<Event> {
        let reg = self.regions[r as usize];
        if reg.shell == NONE {
            let alt = self.alts[reg.alt as usize];
            return Some(Event::BlossomShatter {
                blossom: r,
                in_parent: self.heir(alt.parent_edge.from),
                in_child: self.heir(alt.inner_to_outer.from),
            });
        }
        if self.nodes[reg.shell as usize].shell_prev == NONE && reg.first_child == NONE {
            // A single detection event shrank to nothing: the outer regions on either side of
            // it touch through it.
            let alt = self.alts[reg.alt as usize];
            let parent = self.alts[alt.parent as usize];
            return Some(Event::RegionHitRegion {
                r1: parent.outer,
                r2: alt.outer,
                edge: CEdge {
                    from: alt.parent_edge.to,
                    to: alt.inner_to_outer.to,
                    obs: alt.inner_to_outer.obs ^ alt.parent_edge.obs,
                },
            });
        }
        let leaving = reg.shell;
        self.regions[r as usize].shell = self.nodes[leaving as usize].shell_prev;
        self.nodes[leaving as usize] = EMPTY_NODE;
        self.reschedule_node(g, leaving);
        self.schedule_shrink(r);
        None
    }

    /// The child of `n`'s top-level blossom that contains `n`.
    fn heir(&self, n: u32) -> u32 {
        let s = &self.nodes[n as usize];
        let mut r = s.arrived;
        loop {
            let p = self.regions[r as usize].parent;
            if p == s.top || p == NONE {
                return r;
            }
            r = p;
        }
    }

    fn next_event(&mut self, g: &MatchingGraph) -> Result<Option<Event>, Failure> {
        while let Some((id, _)) = self.queue.pop() {
            self.events += 1;
            if self.events > self.budget {
                return Err(Failure::Budget);
            }
            let ev = if id < self.n {
                self.look_at_node(g, id)
            } else {
                self.region_shrinking(g, id - self.n)
            };
            if ev.is_some() {
                return Ok(ev);
            }
        }
        Ok(None)
    }
}

mod matcher;
