//! The matcher half of the engine: alternating trees, matches and blossoms, driven by the
//! flooder's events, and the final walk that turns the regions into matches.

use super::{
    AltNode, Blossom, CEdge, EMPTY_NODE, Event, FRESH_ALT, FRESH_REGION, Failure, NONE, NodeState,
    Totals,
};
use crate::matching::graph::MatchingGraph;

impl Blossom {
    // ---- pools ----------------------------------------------------------------------------

    fn new_region(&mut self) -> u32 {
        let r = self.region_pool.alloc();
        self.regions[r as usize] = FRESH_REGION;
        self.regions[r as usize].top = r;
        self.queue.forget(self.n + r);
        r
    }

    fn free_region(&mut self, r: u32) {
        self.region_pool.release(r);
    }

    fn new_alt(&mut self, inner: u32, outer: u32, inner_to_outer: CEdge) -> u32 {
        let a = self.alt_pool.alloc();
        self.alts[a as usize] = AltNode {
            inner,
            outer,
            inner_to_outer,
            ..FRESH_ALT
        };
        if inner != NONE {
            self.regions[inner as usize].alt = a;
        }
        self.regions[outer as usize].alt = a;
        a
    }

    fn free_alt(&mut self, a: u32) {
        self.alt_pool.release(a);
    }

    // ---- the driver -----------------------------------------------------------------------

    /// Matches the detection events `events` (distinct detectors, each with an edge) on `g`,
    /// returning the observables crossed and the weight. The state is clean afterwards,
    /// whatever the outcome.
    pub(crate) fn decode(&mut self, g: &MatchingGraph, events: &[u32]) -> Result<Totals, Failure> {
        self.events = 0;
        self.matches.clear();
        for &d in events {
            self.create_detection_event(g, d);
        }
        loop {
            match self.next_event(g) {
                Ok(Some(ev)) => self.process(g, ev),
                Ok(None) => break,
                Err(f) => {
                    self.clear();
                    return Err(f);
                }
            }
        }
        if self.alt_pool.live() > 0 {
            let unmatched = events
                .iter()
                .copied()
                .find(|&d| {
                    let top = self.nodes[d as usize].top;
                    top != NONE && self.regions[top as usize].alt != NONE
                })
                .unwrap_or(events[0]);
            self.clear();
            return Err(Failure::Unmatched(unmatched));
        }
        let mut totals = Totals::default();
        for &d in events {
            let top = self.nodes[d as usize].top;
            if self.nodes[d as usize].arrived != NONE {
                self.extract(top, &mut totals);
            }
        }
        debug_assert_eq!(self.region_pool.live(), 0, "regions left after extraction");
        debug_assert_eq!(self.growing, 0, "regions growing after the flooding");
        self.region_pool.reset();
        self.alt_pool.reset();
        self.queue.reset();
        Ok(totals)
    }

    /// Forgets everything (after a failure: every node, the queue, the pools).
    fn clear(&mut self) {
        self.nodes.fill(EMPTY_NODE);
        self.growing = 0;
        self.queue.reset();
        self.region_pool.reset();
        self.alt_pool.reset();
        self.stack.clear();
        self.extract_stack.clear();
        self.path.clear();
        self.cycle.clear();
        self.cycle2.clear();
        self.orphans.clear();
    }

    fn create_detection_event(&mut self, g: &MatchingGraph, d: u32) {
        let r = self.new_region();
        self.start_growing(r, 0);
        self.new_alt(NONE, r, CEdge::EMPTY);
        self.nodes[d as usize] = NodeState {
            arrived: r,
            top: r,
            source: d,
            shell_prev: NONE,
            wrapped: 0,
            arrival: 0,
            obs: 0,
        };
        self.regions[r as usize].shell = d;
        let (slot, t) = self.first_node_event(g, d);
        debug_assert_eq!((slot, t), self.next_node_event(g, d));
        if slot != NONE {
            self.queue.want(d, t);
        }
    }

    fn process(&mut self, g: &MatchingGraph, ev: Event) {
        match ev {
            Event::RegionHitRegion { r1, r2, edge } => self.region_hit_region(g, r1, r2, edge),
            Event::RegionHitBoundary { region, edge } => {
                let a = self.regions[region as usize].alt;
                self.become_root(a);
                self.shatter_descendants(g, a);
                self.regions[region as usize].match_region = NONE;
                self.regions[region as usize].match_edge = edge;
                self.set_frozen(g, region);
            }
            Event::BlossomShatter {
                blossom,
                in_parent,
                in_child,
            } => self.shatter_blossom(g, blossom, in_parent, in_child),
        }
    }

    fn region_hit_region(&mut self, g: &MatchingGraph, r1: u32, r2: u32, edge: CEdge) {
        let (a1, a2) = (self.regions[r1 as usize].alt, self.regions[r2 as usize].alt);
        match (a1 != NONE, a2 != NONE) {
            (true, true) => match self.common_ancestor(a1, a2) {
                NONE => {
                    self.become_root(a1);
                    self.become_root(a2);
                    self.shatter_descendants(g, a1);
                    self.shatter_descendants(g, a2);
                    self.add_match(r1, r2, edge);
                    self.set_frozen(g, r1);
                    self.set_frozen(g, r2);
                }
                ca => self.tree_hit_self(g, r1, r2, edge, ca),
            },
            (true, false) => self.tree_hit_frozen(g, r1, r2, edge),
            (false, true) => self.tree_hit_frozen(g, r2, r1, edge.rev()),
            // Two frozen regions never move towards each other.
            (false, false) => debug_assert!(false, "two frozen regions collided"),
        }
    }

    /// A tree's growing region `grower` reaches the frozen, matched region `frozen`.
    fn tree_hit_frozen(&mut self, g: &MatchingGraph, grower: u32, frozen: u32, edge: CEdge) {
        let other = self.regions[frozen as usize].match_region;
        if other != NONE {
            // The matched pair joins the tree: `frozen` inner, its partner outer.
            let a = self.regions[grower as usize].alt;
            let i2o = self.regions[frozen as usize].match_edge;
            let child = self.new_alt(frozen, other, i2o);
            self.add_child(a, child, edge);
            self.regions[frozen as usize].match_region = NONE;
            self.regions[frozen as usize].match_edge = CEdge::EMPTY;
            self.regions[other as usize].match_region = NONE;
            self.regions[other as usize].match_edge = CEdge::EMPTY;
            self.set_shrinking(frozen);
            self.set_growing(g, other);
        } else {
            // `frozen` was matched to the boundary: an augmenting path.
            let a = self.regions[grower as usize].alt;
            self.add_match(grower, frozen, edge);
            self.set_frozen(g, grower);
            self.become_root(a);
            self.shatter_descendants(g, a);
        }
    }

    fn add_match(&mut self, r1: u32, r2: u32, edge: CEdge) {
        self.regions[r1 as usize].match_region = r2;
        self.regions[r1 as usize].match_edge = edge;
        self.regions[r2 as usize].match_region = r1;
        self.regions[r2 as usize].match_edge = edge.rev();
    }

    // ---- alternating trees ----------------------------------------------------------------

    /// Hangs `child` below `parent`, its last child; `edge` runs from the parent's outer
    /// region to the child's inner region.
    fn add_child(&mut self, parent: u32, child: u32, edge: CEdge) {
        let last = self.alts[parent as usize].last_child;
        let c = &mut self.alts[child as usize];
        c.parent = parent;
        c.parent_edge = edge.rev();
        c.prev_sib = last;
        c.next_sib = NONE;
        if last == NONE {
            self.alts[parent as usize].first_child = child;
        } else {
            self.alts[last as usize].next_sib = child;
        }
        self.alts[parent as usize].last_child = child;
    }

    /// Takes `child` out of its parent's children, the last child taking its place
    /// (PyMatching's order of children: a vector, erased from by swapping with the last).
    fn unlink_child(&mut self, child: u32) {
        let c = self.alts[child as usize];
        if c.parent == NONE {
            return;
        }
        let p = c.parent;
        let last = self.alts[p as usize].last_child;
        // Unlink the last child.
        let before = self.alts[last as usize].prev_sib;
        if before == NONE {
            self.alts[p as usize].first_child = NONE;
        } else {
            self.alts[before as usize].next_sib = NONE;
        }
        self.alts[p as usize].last_child = before;
        if last != child {
            // It takes `child`'s place.
            let c = self.alts[child as usize];
            self.alts[last as usize].prev_sib = c.prev_sib;
            self.alts[last as usize].next_sib = c.next_sib;
            if c.prev_sib == NONE {
                self.alts[p as usize].first_child = last;
            } else {
                self.alts[c.prev_sib as usize].next_sib = last;
            }
            if c.next_sib == NONE {
                self.alts[p as usize].last_child = last;
            } else {
                self.alts[c.next_sib as usize].prev_sib = last;
            }
        }
        let c = &mut self.alts[child as usize];
        c.parent = NONE;
        c.next_sib = NONE;
        c.prev_sib = NONE;
    }

    /// Rotates `a`'s tree so that `a` is its root.
    fn become_root(&mut self, a: u32) {
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let mut x = a;
        while x != NONE {
            path.push(x);
            x = self.alts[x as usize].parent;
        }
        for i in (0..path.len().saturating_sub(1)).rev() {
            let (x, old) = (path[i], path[i + 1]);
            let xi = self.alts[x as usize];
            self.unlink_child(x);
            let o = &mut self.alts[old as usize];
            o.inner = xi.inner;
            o.inner_to_outer = xi.parent_edge;
            if xi.inner != NONE {
                self.regions[xi.inner as usize].alt = old;
            }
            self.alts[x as usize].inner = NONE;
            self.alts[x as usize].inner_to_outer = CEdge::EMPTY;
            self.add_child(x, old, xi.inner_to_outer.rev());
        }
        self.path = path;
    }

    /// The nearest common ancestor of two tree nodes, `NONE` when they are in different trees.
    fn common_ancestor(&mut self, a1: u32, a2: u32) -> u32 {
        let (mut x, mut y) = (a1, a2);
        self.alts[x as usize].visited = true;
        self.alts[y as usize].visited = true;
        let found = loop {
            let (px, py) = (self.alts[x as usize].parent, self.alts[y as usize].parent);
            if px == NONE && py == NONE {
                break NONE;
            }
            if px != NONE {
                x = px;
                if self.alts[x as usize].visited {
                    break x;
                }
                self.alts[x as usize].visited = true;
            }
            if py != NONE {
                y = py;
                if self.alts[y as usize].visited {
                    break y;
                }
                self.alts[y as usize].visited = true;
            }
        };
        // Clear the marks: both walks, up to their roots.
        for start in [a1, a2] {
            let mut z = start;
            while z != NONE && self.alts[z as usize].visited {
                self.alts[z as usize].visited = false;
                z = self.alts[z as usize].parent;
            }
        }
        found
    }

    /// Turns every tree node below and including `a` into matches (inner with outer),
    /// freezing them, and frees the tree nodes; children before their parent, in order
    /// (PyMatching's order, which decides the order of the nodes' entries in the queue).
    fn shatter_descendants(&mut self, g: &MatchingGraph, a: u32) {
        if self.alts[a as usize].first_child == NONE {
            // A lone node (most trees): no order to work out.
            self.shatter_node(g, a);
            return;
        }
        // The nodes in reverse post-order: depth first, each node before its children, the
        // children last to first.
        let mut order = std::mem::take(&mut self.orphans);
        let mut stack = std::mem::take(&mut self.path);
        order.clear();
        stack.clear();
        stack.push(a);
        while let Some(x) = stack.pop() {
            order.push(x);
            let mut c = self.alts[x as usize].first_child;
            while c != NONE {
                stack.push(c);
                c = self.alts[c as usize].next_sib;
            }
        }
        self.path = stack;
        for &x in order.iter().rev() {
            self.shatter_node(g, x);
        }
        order.clear();
        self.orphans = order;
    }

    /// [`Blossom::shatter_descendants`]'s step for one tree node: its inner and outer regions
    /// matched and frozen, the node freed.
    #[inline]
    fn shatter_node(&mut self, g: &MatchingGraph, x: u32) {
        let AltNode {
            inner,
            outer,
            inner_to_outer,
            ..
        } = self.alts[x as usize];
        if inner != NONE {
            self.add_match(inner, outer, inner_to_outer);
            self.set_frozen(g, inner);
            self.set_frozen(g, outer);
            self.regions[inner as usize].alt = NONE;
        }
        if outer != NONE {
            self.regions[outer as usize].alt = NONE;
        }
        self.free_alt(x);
    }

    /// Removes the tree path from `a` up to (not including) `stop`, appending its regions and
    /// edges to `out` (downwards order when `back`, else upwards) and its other children to
    /// `self.orphans`.
    fn prune_path(&mut self, a: u32, stop: u32, back: bool, out: &mut Vec<(u32, CEdge)>) {
        let mut x = a;
        while x != stop && x != NONE {
            let mut c = self.alts[x as usize].first_child;
            while c != NONE {
                let next = self.alts[c as usize].next_sib;
                self.orphans.push(c);
                c = next;
            }
            self.alts[x as usize].first_child = NONE;
            self.alts[x as usize].last_child = NONE;
            let node = self.alts[x as usize];
            let parent_outer = self.alts[node.parent as usize].outer;
            if back {
                out.push((node.inner, node.inner_to_outer));
                out.push((parent_outer, node.parent_edge.rev()));
            } else {
                out.push((node.outer, node.inner_to_outer.rev()));
                out.push((node.inner, node.parent_edge));
            }
            self.unlink_child(x);
            self.regions[node.outer as usize].alt = NONE;
            self.regions[node.inner as usize].alt = NONE;
            self.free_alt(x);
            x = node.parent;
        }
    }

    /// Two regions of one tree collide: the cycle through their common ancestor becomes a
    /// blossom, the ancestor's new outer region.
    fn tree_hit_self(&mut self, g: &MatchingGraph, r1: u32, r2: u32, edge: CEdge, ca: u32) {
        let (a1, a2) = (self.regions[r1 as usize].alt, self.regions[r2 as usize].alt);
        self.orphans.clear();
        let mut cycle = std::mem::take(&mut self.cycle);
        let mut up = std::mem::take(&mut self.cycle2);
        cycle.clear();
        up.clear();
        self.prune_path(a1, ca, true, &mut up);
        self.prune_path(a2, ca, false, &mut cycle);
        cycle.extend(up.iter().rev());
        cycle.push((r1, edge));
        let outer = self.alts[ca as usize].outer;
        self.regions[outer as usize].alt = NONE;
        let b = self.create_blossom(g, &cycle);
        self.alts[ca as usize].outer = b;
        self.regions[b as usize].alt = ca;
        let mut orphans = std::mem::take(&mut self.orphans);
        for &o in &orphans {
            let edge = self.alts[o as usize].parent_edge.rev();
            self.add_child(ca, o, edge);
        }
        orphans.clear();
        self.orphans = orphans;
        self.cycle = cycle;
        self.cycle2 = up;
    }

    /// A growing blossom of the regions of `cycle` (each with the edge to the next).
    fn create_blossom(&mut self, g: &MatchingGraph, cycle: &[(u32, CEdge)]) -> u32 {
        let now = self.queue.now();
        let b = self.new_region();
        self.start_growing(b, -now);
        self.regions[b as usize].first_child = cycle[0].0;
        for (i, &(r, e)) in cycle.iter().enumerate() {
            let reg = &mut self.regions[r as usize];
            reg.next_sibling = cycle[(i + 1) % cycle.len()].0;
            reg.sibling_edge = e;
            reg.parent = b;
            self.set_slope(r, now, 0);
            self.set_top(r, b, true);
            self.queue.unwant(self.n + r);
        }
        self.reschedule_area(g, b);
        b
    }

    /// An inner blossom shrank to radius zero: its cycle splits into the odd path that stays
    /// in the tree (from the child towards the tree's parent to the child towards the tree's
    /// child) and matched pairs.
    fn shatter_blossom(&mut self, g: &MatchingGraph, b: u32, in_parent: u32, in_child: u32) {
        let mut cyc = std::mem::take(&mut self.cycle);
        cyc.clear();
        let first = self.regions[b as usize].first_child;
        let mut c = first;
        loop {
            let reg = self.regions[c as usize];
            cyc.push((c, reg.sibling_edge));
            c = reg.next_sibling;
            if c == first || c == NONE {
                break;
            }
        }
        for &(r, _) in cyc.iter() {
            self.regions[r as usize].parent = NONE;
            self.regions[r as usize].next_sibling = NONE;
            self.set_top(r, r, true);
        }
        let k = cyc.len();
        let pi = cyc.iter().position(|e| e.0 == in_parent).unwrap_or(0);
        let ci = cyc.iter().position(|e| e.0 == in_child).unwrap_or(0);
        let gap = (ci + k - pi) % k;
        let balt = self.regions[b as usize].alt;
        let mut cur = self.alts[balt as usize].parent;
        let mut child_edge = self.alts[balt as usize].parent_edge.rev();
        self.unlink_child(balt);
        let (evens_start, evens_end);
        if gap.is_multiple_of(2) {
            evens_start = ci + 1;
            evens_end = ci + k - gap;
            for i in (pi..pi + gap).step_by(2) {
                let (inner, outer) = (cyc[i % k], cyc[(i + 1) % k]);
                let x = self.new_alt(inner.0, outer.0, inner.1);
                self.add_child(cur, x, child_edge);
                cur = x;
                child_edge = outer.1;
                self.set_shrinking(inner.0);
                self.set_growing(g, outer.0);
            }
        } else {
            evens_start = pi + 1;
            evens_end = pi + gap;
            for i in (0..k - gap).step_by(2) {
                let k1 = (pi + k - i) % k;
                let k2 = (pi + k - i - 1) % k;
                let k3 = (pi + k - i - 2) % k;
                let x = self.new_alt(cyc[k1].0, cyc[k2].0, cyc[k2].1.rev());
                self.add_child(cur, x, child_edge);
                cur = x;
                child_edge = cyc[k3].1.rev();
                self.set_shrinking(cyc[k1].0);
                self.set_growing(g, cyc[k2].0);
            }
        }
        for j in (evens_start..evens_end).step_by(2) {
            let (r1, r2) = (cyc[j % k], cyc[(j + 1) % k]);
            self.add_match(r1.0, r2.0, r1.1);
            self.reschedule_area(g, r1.0);
            self.reschedule_area(g, r2.0);
        }
        let inner = cyc[ci].0;
        self.alts[balt as usize].inner = inner;
        self.regions[inner as usize].alt = balt;
        self.set_shrinking(inner);
        self.add_child(cur, balt, child_edge);
        self.free_region(b);
        self.cycle = cyc;
    }

    // ---- the answer -----------------------------------------------------------------------

    /// Empties a region's shell, resetting its nodes.
    fn clean_shell(&mut self, r: u32) {
        let mut n = std::mem::replace(&mut self.regions[r as usize].shell, NONE);
        while n != NONE {
            let prev = self.nodes[n as usize].shell_prev;
            self.nodes[n as usize] = EMPTY_NODE;
            n = prev;
        }
    }

    /// Adds the matches of top-level region `root` (and of its partner) to `totals`, breaking
    /// blossoms into matches of their children, and frees the regions. Matches are collected
    /// in PyMatching's order (depth first: the pairs a blossom's split makes, each broken up
    /// whole, in cycle order from the child after the one that keeps the match; then those
    /// of the partner's split; then the match itself, broken up the same way), so that the
    /// paths listed from them come in its order.
    fn extract(&mut self, root: u32, totals: &mut Totals) {
        let mut stack = std::mem::take(&mut self.extract_stack);
        stack.clear();
        stack.push(root);
        while let Some(r) = stack.pop() {
            self.clean_shell(r);
            let reg = self.regions[r as usize];
            let m = reg.match_region;
            if m != NONE {
                self.clean_shell(m);
                let mreg = self.regions[m as usize];
                if reg.first_child == NONE && mreg.first_child == NONE {
                    if self.collect {
                        self.matches.push(reg.match_edge);
                    }
                    totals.obs ^= reg.match_edge.obs;
                    totals.weight += self.radius[r as usize].y + self.radius[m as usize].y;
                    self.free_region(m);
                    self.free_region(r);
                    continue;
                }
            } else if reg.first_child == NONE {
                if self.collect {
                    self.matches.push(reg.match_edge);
                }
                totals.obs ^= reg.match_edge.obs;
                totals.weight += self.radius[r as usize].y;
                self.free_region(r);
                continue;
            }
            // The region that keeps the match goes under the pairs the splits make, which are
            // taken in the order they were made.
            let base = stack.len();
            stack.push(r);
            let mut r = r;
            if reg.first_child != NONE {
                r = self.split_matched_blossom(r, totals, &mut stack);
            }
            let m = self.regions[r as usize].match_region;
            if m != NONE && self.regions[m as usize].first_child != NONE {
                self.split_matched_blossom(m, totals, &mut stack);
            }
            stack[base] = r;
            stack[base + 1..].reverse();
        }
        self.extract_stack = stack;
    }

    /// Replaces a matched blossom by its child that holds the match's end (returned, now
    /// carrying the match) and pairs the other children along the cycle (pushed on `stack`
    /// to be extracted).
    fn split_matched_blossom(&mut self, b: u32, totals: &mut Totals, stack: &mut Vec<u32>) -> u32 {
        let reg = self.regions[b as usize];
        let first = reg.first_child;
        let mut c = first;
        loop {
            self.regions[c as usize].parent = NONE;
            self.set_top(c, c, false);
            c = self.regions[c as usize].next_sibling;
            if c == first || c == NONE {
                break;
            }
        }
        let sub = self.nodes[reg.match_edge.from as usize].top;
        self.regions[sub as usize].match_region = reg.match_region;
        self.regions[sub as usize].match_edge = reg.match_edge;
        if reg.match_region != NONE {
            self.regions[reg.match_region as usize].match_region = sub;
        }
        totals.weight += self.radius[b as usize].y;
        let mut x = self.regions[sub as usize].next_sibling;
        while x != sub && x != NONE {
            let y = self.regions[x as usize].next_sibling;
            let e = self.regions[x as usize].sibling_edge;
            self.add_match(x, y, e);
            stack.push(x);
            x = self.regions[y as usize].next_sibling;
        }
        self.free_region(b);
        sub
    }
}
