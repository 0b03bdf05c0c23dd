//! Control-flow analyses over a kernel's blocks: reachability, reverse post-order,
//! dominators and post-dominators (Cooper, Harvey & Kennedy, "A Simple, Fast Dominance
//! Algorithm", 2001), back edges and natural loops.

use std::collections::BTreeMap;

use crate::ir::{BlockId, Kernel, Terminator};

/// Analyses of one kernel's CFG. Indices are block indices; `None` means unreachable
/// (or, for post-dominators, a block from which no return is reachable).
#[derive(Debug)]
pub struct Cfg {
    pub succs: Vec<Vec<usize>>,
    pub preds: Vec<Vec<usize>>,
    /// Reachable blocks in reverse post-order from the entry.
    pub rpo: Vec<usize>,
    /// Position of each block in `rpo`.
    pub rpo_index: Vec<Option<usize>>,
    pub idom: Vec<Option<usize>>,
    /// Immediate post-dominator; `Some(EXIT)` when it is the virtual exit.
    pub ipdom: Vec<Option<usize>>,
}

/// The virtual exit node every `Return` block flows to, in `ipdom`.
pub const EXIT: usize = usize::MAX;

impl Cfg {
    pub fn new(k: &Kernel) -> Cfg {
        let n = k.blocks.len();
        let succs: Vec<Vec<usize>> = k
            .blocks
            .iter()
            .map(|b| {
                let mut s: Vec<usize> = Vec::new();
                for t in b.term.successors() {
                    if !s.contains(&t.index()) {
                        s.push(t.index());
                    }
                }
                s
            })
            .collect();
        let mut preds = vec![Vec::new(); n];
        for (b, ss) in succs.iter().enumerate() {
            for &s in ss {
                preds[s].push(b);
            }
        }
        let rpo = reverse_post_order(n, k.entry.index(), |b| &succs[b]);
        let mut rpo_index = vec![None; n];
        for (i, &b) in rpo.iter().enumerate() {
            rpo_index[b] = Some(i);
        }
        let idom = dominators(n, &rpo, &rpo_index, |b| &preds[b]);

        // Post-dominators: dominators of the reversed graph rooted at a virtual exit
        // (index n) whose reversed successors are the returning blocks.
        let exits: Vec<usize> =
            (0..n).filter(|&b| rpo_index[b].is_some() && succs[b].is_empty()).collect();
        let rsuccs = |b: usize| -> &[usize] {
            if b == n {
                &exits
            } else {
                &preds[b]
            }
        };
        let rrpo = reverse_post_order(n + 1, n, rsuccs);
        let mut rrpo_index = vec![None; n + 1];
        for (i, &b) in rrpo.iter().enumerate() {
            rrpo_index[b] = Some(i);
        }
        let rpreds_of: Vec<Vec<usize>> = (0..=n)
            .map(|b| {
                if b == n {
                    Vec::new()
                } else if succs[b].is_empty() {
                    vec![n]
                } else {
                    succs[b].clone()
                }
            })
            .collect();
        let pdom = dominators(n + 1, &rrpo, &rrpo_index, |b| &rpreds_of[b]);
        let ipdom = (0..n)
            .map(|b| match pdom[b] {
                Some(p) if p == n => Some(EXIT),
                Some(p) if p != b => Some(p),
                _ => None,
            })
            .collect();
        Cfg { succs, preds, rpo, rpo_index, idom, ipdom }
    }

    pub fn reachable(&self, b: usize) -> bool {
        self.rpo_index[b].is_some()
    }

    /// Does `a` dominate `b`?
    pub fn dominates(&self, a: usize, mut b: usize) -> bool {
        loop {
            if a == b {
                return true;
            }
            match self.idom[b] {
                Some(d) if d != b => b = d,
                _ => return false,
            }
        }
    }

    /// Edges `u → v` that go to an earlier or the same block in reverse post-order.
    /// In a reducible CFG these are exactly the back edges (`v` dominates `u`).
    pub fn retreating_edges(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for &u in &self.rpo {
            for &v in &self.succs[u] {
                if self.rpo_index[v] <= self.rpo_index[u] {
                    out.push((u, v));
                }
            }
        }
        out
    }

    /// The natural loop of header `h`: `h` and every block that reaches one of its
    /// latches without passing through `h`. Sorted.
    pub fn loop_body(&self, h: usize, latches: &[usize]) -> Vec<usize> {
        let mut stamp = vec![usize::MAX; self.succs.len()];
        self.loop_body_with(h, latches, &mut stamp)
    }

    /// [`Cfg::loop_body`] with a caller's marker array: entries equal to `h` mean "in the
    /// body", so one array serves every header (bodies are sorted on return).
    fn loop_body_with(&self, h: usize, latches: &[usize], stamp: &mut [usize]) -> Vec<usize> {
        let mut body = vec![h];
        stamp[h] = h;
        let mut stack: Vec<usize> = latches.to_vec();
        while let Some(b) = stack.pop() {
            if stamp[b] == h || !self.reachable(b) {
                continue;
            }
            stamp[b] = h;
            body.push(b);
            stack.extend(self.preds[b].iter().copied());
        }
        body.sort_unstable();
        body
    }
}

fn reverse_post_order<'a>(
    n: usize,
    root: usize,
    succs: impl Fn(usize) -> &'a [usize],
) -> Vec<usize> {
    let mut visited = vec![false; n];
    let mut post = Vec::with_capacity(n);
    // Iterative DFS: (node, next successor index).
    let mut stack = vec![(root, 0usize)];
    visited[root] = true;
    while let Some(&mut (b, ref mut i)) = stack.last_mut() {
        let ss = succs(b);
        if *i < ss.len() {
            let s = ss[*i];
            *i += 1;
            if !visited[s] {
                visited[s] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
            stack.pop();
        }
    }
    post.reverse();
    post
}

fn dominators<'a>(
    n: usize,
    rpo: &[usize],
    rpo_index: &[Option<usize>],
    preds: impl Fn(usize) -> &'a [usize],
) -> Vec<Option<usize>> {
    let mut idom: Vec<Option<usize>> = vec![None; n];
    let Some(&root) = rpo.first() else { return idom };
    idom[root] = Some(root);
    let intersect = |idom: &[Option<usize>], mut a: usize, mut b: usize| -> usize {
        while a != b {
            while rpo_index[a] > rpo_index[b] {
                a = idom[a].unwrap_or(root);
            }
            while rpo_index[b] > rpo_index[a] {
                b = idom[b].unwrap_or(root);
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &b in rpo.iter().skip(1) {
            let mut new_idom: Option<usize> = None;
            for &p in preds(b) {
                if idom[p].is_none() || rpo_index[p].is_none() {
                    continue;
                }
                new_idom = Some(match new_idom {
                    None => p,
                    Some(cur) => intersect(&idom, p, cur),
                });
            }
            if new_idom.is_some() && idom[b] != new_idom {
                idom[b] = new_idom;
                changed = true;
            }
        }
    }
    idom
}

impl Cfg {
    pub fn block(b: usize) -> BlockId {
        BlockId(b as u32)
    }

    /// Updates the edges and the reverse post-order after dispatcher `d` was added
    /// ([`crate::dispatch::insert`]) with edges from `routed` into `targets` redirected
    /// to it. Dominators and post-dominators are not updated (`d` has none).
    pub fn add_dispatcher(&mut self, k: &Kernel, d: usize, routed: &[usize], targets: &[usize]) {
        let unique = |b: usize| -> Vec<usize> {
            let mut s: Vec<usize> = Vec::new();
            for t in k.blocks[b].term.successors() {
                if !s.contains(&t.index()) {
                    s.push(t.index());
                }
            }
            s
        };
        for &u in routed {
            self.succs[u] = unique(u);
        }
        self.succs.push(unique(d));
        self.preds.push(routed.iter().copied().filter(|&u| self.succs[u].contains(&d)).collect());
        for &t in targets {
            let succs = &self.succs;
            self.preds[t].retain(|&p| succs[p].contains(&t));
            self.preds[t].push(d);
        }
        let n = self.succs.len();
        let succs = &self.succs;
        self.rpo = reverse_post_order(n, k.entry.index(), |b| &succs[b]);
        self.rpo_index = vec![None; n];
        for (i, &b) in self.rpo.iter().enumerate() {
            self.rpo_index[b] = Some(i);
        }
        self.idom.push(None);
        self.ipdom.push(None);
    }

    /// Natural loops by header: the header and the blocks that reach one of its back
    /// edges (`u → h` with `h` dominating `u`) without passing through it. Sorted.
    /// Loops with the same header are one loop.
    pub fn loops(&self) -> BTreeMap<usize, Vec<usize>> {
        let mut latches: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (u, v) in self.retreating_edges() {
            if self.dominates(v, u) {
                latches.entry(v).or_default().push(u);
            }
        }
        let mut stamp = vec![usize::MAX; self.succs.len()];
        latches.into_iter().map(|(h, ls)| (h, self.loop_body_with(h, &ls, &mut stamp))).collect()
    }
}

/// Blocks reachable from the entry.
pub fn reachable(k: &Kernel) -> Vec<bool> {
    let mut seen = vec![false; k.blocks.len()];
    let mut stack = vec![k.entry.index()];
    while let Some(b) = stack.pop() {
        if seen[b] {
            continue;
        }
        seen[b] = true;
        stack.extend(k.blocks[b].term.successors().iter().map(|s| s.index()));
    }
    seen
}

/// Predecessors of every block, counting only edges from `from` blocks.
pub fn predecessors(k: &Kernel, from: &[bool]) -> Vec<Vec<usize>> {
    let mut preds = vec![Vec::new(); k.blocks.len()];
    for (u, b) in k.blocks.iter().enumerate() {
        if !from.get(u).copied().unwrap_or(false) {
            continue;
        }
        for s in b.term.successors() {
            if !preds[s.index()].contains(&u) {
                preds[s.index()].push(u);
            }
        }
    }
    preds
}

/// An empty block that returns: a jump to it is a `return` wherever it occurs.
pub fn is_plain_return(k: &Kernel, b: usize) -> bool {
    let blk = &k.blocks[b];
    blk.term == Terminator::Return && blk.insts.is_empty()
}

/// The strongly connected components of the subgraph induced by `nodes` that contain a
/// cycle (more than one block, or a block branching to itself), in a deterministic
/// order. Tarjan's algorithm, iterative so that deep graphs cannot exhaust the stack.
pub fn strongly_connected(k: &Kernel, nodes: &[usize]) -> Vec<Vec<usize>> {
    // Work in local indices (positions in sorted `nodes`), so that the cost is
    // proportional to the subgraph, not to the kernel: the structurizer calls this for
    // every nested cycle.
    let mut sorted = nodes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let n = sorted.len();
    let local = |b: usize| sorted.binary_search(&b).ok();
    let succs = |v: usize| -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for s in k.blocks[sorted[v]].term.successors() {
            if let Some(w) = local(s.index()) {
                if !out.contains(&w) {
                    out.push(w);
                }
            }
        }
        out
    };
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0usize;
    let mut out = Vec::new();
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, its successors, next successor position)
        let mut call: Vec<(usize, Vec<usize>, usize)> = vec![(root, succs(root), 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(frame) = call.last_mut() {
            let v = frame.0;
            if frame.2 < frame.1.len() {
                let w = frame.1[frame.2];
                frame.2 += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, succs(w), 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            call.pop();
            if let Some(parent) = call.last() {
                low[parent.0] = low[parent.0].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                let cyclic = comp.len() > 1 || succs(v).contains(&v);
                if cyclic {
                    let mut blocks: Vec<usize> = comp.into_iter().map(|w| sorted[w]).collect();
                    blocks.sort_unstable();
                    out.push(blocks);
                }
            }
        }
    }
    out
}
