//! Merges: where the arms of a branch or switch come together again, and the rewrite
//! that makes that one block.
//!
//! In a region that ends at `stop` (the merge of an enclosing construct), the arms of a
//! branch at `b` may share code (blocks two arms reach), may leave to `stop`, or may end
//! in `break`/`continue`/`return`. SPIR-V needs one merge block, so the points where
//! control continues after the construct — the entries of the shared code, and `stop`
//! when an arm reaches it directly — must be one. When they are several
//! (short-circuit conditions such as `if (a && b) X else Y`, where `Y` is reached from
//! both tests; gotos into the middle of shared code; an arm jumping straight to the
//! enclosing merge), a dispatcher ([`crate::dispatch`]) becomes the single entry: each
//! arm records where it was going and the dispatcher's switch goes there. No code is
//! copied, so a `bar.sync` stays one barrier and code cannot grow exponentially.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use crate::cfg::Cfg;
use crate::dispatch;
use crate::ir::{BlockId, Kernel};

/// The loop nesting of a reducible CFG: for each block its innermost loop header, for
/// each loop its enclosing loop and its exit (the one target outside it that is not an
/// empty `ret` block, after [`crate::pass::loop_exits`]). Membership is answered by walking
/// up the loop tree, so the forest takes memory proportional to the blocks.
#[derive(Debug)]
pub struct LoopForest {
    /// Innermost loop header containing each block (a header belongs to its own loop).
    pub innermost: Vec<Option<usize>>,
    /// The enclosing loop of each loop header.
    pub parent: BTreeMap<usize, Option<usize>>,
    pub exits: BTreeMap<usize, Option<usize>>,
}

impl LoopForest {
    pub fn new(k: &Kernel, cfg: &Cfg) -> LoopForest {
        let n = k.blocks.len();
        let mut loops: Vec<(usize, Vec<usize>)> = cfg.loops().into_iter().collect();
        // Outermost first, so that inner loops override `innermost`.
        loops.sort_by_key(|(h, body)| (std::cmp::Reverse(body.len()), *h));
        let mut innermost: Vec<Option<usize>> = vec![None; n];
        let mut parent = BTreeMap::new();
        for (h, body) in &loops {
            parent.insert(*h, innermost[*h]);
            for &b in body {
                innermost[b] = Some(*h);
            }
        }
        let mut forest = LoopForest { innermost, parent, exits: BTreeMap::new() };
        for (h, body) in &loops {
            let exit = body
                .iter()
                .flat_map(|&b| cfg.succs[b].iter().copied())
                .filter(|&s| !forest.contains(*h, s) && !crate::cfg::is_plain_return(k, s))
                .min_by_key(|&s| (cfg.rpo_index[s], s));
            forest.exits.insert(*h, exit);
        }
        forest
    }

    pub fn is_header(&self, b: usize) -> bool {
        self.parent.contains_key(&b)
    }

    /// Is block `x` in the body of the loop with header `h`?
    pub fn contains(&self, h: usize, x: usize) -> bool {
        let mut l = self.innermost.get(x).copied().flatten();
        while let Some(cur) = l {
            if cur == h {
                return true;
            }
            l = self.parent.get(&cur).copied().flatten();
        }
        false
    }

    /// Blocks that end a region inside loop `l` (or the kernel, for `None`): the loop's
    /// header (`continue`), anything outside its body (`break`, or an empty `ret`
    /// block), and empty `ret` blocks anywhere (`return`).
    pub fn is_terminal(&self, k: &Kernel, l: Option<usize>, x: usize) -> bool {
        if crate::cfg::is_plain_return(k, x) {
            return true;
        }
        match l {
            None => false,
            Some(h) => x == h || !self.contains(h, x),
        }
    }
}

/// The blocks where control continues after the construct at branch block `b`, in a
/// region ending at `stop`: the entries of the code that two or more distinct
/// successors of `b` reach inside `b`'s innermost loop (an entry is a shared block that
/// is a successor of `b` or has a reached predecessor that is not shared), with `stop`
/// counted as shared whenever an arm reaches it. Empty: every arm ends in
/// `break`/`continue`/`return`. One: the merge.
pub fn continuations(
    k: &Kernel,
    cfg: &Cfg,
    forest: &LoopForest,
    b: usize,
    stop: Option<usize>,
) -> Vec<usize> {
    let reach = arm_reach(k, cfg, forest, b, stop);
    let targets = &cfg.succs[b];
    let shared = |x: usize| reach.get(&x).is_some_and(|s| s.shared);
    let mut entries: Vec<usize> = reach
        .iter()
        .filter(|(_, s)| s.shared)
        .map(|(&x, _)| x)
        .filter(|&x| {
            targets.contains(&x)
                || cfg.preds[x].iter().any(|&p| reach.contains_key(&p) && !shared(p))
        })
        .collect();
    entries.sort_unstable_by_key(|&x| (cfg.rpo_index[x], x));
    entries
}

/// How the arms of a branch reach a block: from which arm first, and whether from two.
#[derive(Clone, Copy, Debug)]
struct Reach {
    arm: usize,
    shared: bool,
}

/// The blocks the arms of `b` reach inside its innermost loop (not past `stop`), with
/// whether each is shared. Blocks are visited in reverse post-order, so a block's
/// predecessors are merged before it passes its own state on. The walk ends once no new
/// continuation can appear: when no unshared block is pending, or (in a region
/// without a stop) when one arm alone is left with nothing shared pending. So the cost
/// is about the size of the construct, not of the rest of the kernel, also after early
/// returns.
fn arm_reach(
    k: &Kernel,
    cfg: &Cfg,
    forest: &LoopForest,
    b: usize,
    stop: Option<usize>,
) -> BTreeMap<usize, Reach> {
    let l = forest.innermost[b];
    let arms = cfg.succs[b].len();
    let mut w = ReachWalk {
        stop,
        reach: BTreeMap::new(),
        heap: BinaryHeap::new(),
        done: BTreeSet::new(),
        pending_by_arm: vec![0; arms],
        active_arms: 0,
        shared_pending: 0,
    };
    for (arm, &t) in cfg.succs[b].iter().enumerate() {
        if !forest.is_terminal(k, l, t) {
            w.merge(cfg, t, Reach { arm, shared: false });
        }
    }
    loop {
        // Nothing unshared pending: every later block is reached only through shared
        // code, so it is no entry. One arm alone (and no shared code pending) shares
        // nothing new, unless it can still reach the region's stop.
        if w.active_arms == 0 || (w.active_arms == 1 && w.shared_pending == 0 && stop.is_none()) {
            break;
        }
        let Some(Reverse((_, x))) = w.heap.pop() else { break };
        w.done.insert(x);
        let state = w.reach[&x];
        w.unpend(state);
        if Some(x) == stop {
            continue;
        }
        for &s in &cfg.succs[x] {
            if !forest.is_terminal(k, l, s) {
                w.merge(cfg, s, state);
            }
        }
    }
    w.reach
}

/// The state of [`arm_reach`]: blocks reached so far, the pending ones by reverse
/// post-order, and what is pending.
struct ReachWalk {
    stop: Option<usize>,
    reach: BTreeMap<usize, Reach>,
    heap: BinaryHeap<Reverse<(Option<usize>, usize)>>,
    done: BTreeSet<usize>,
    /// Unshared pending blocks of each arm, and how many arms have some.
    pending_by_arm: Vec<usize>,
    active_arms: usize,
    shared_pending: usize,
}

impl ReachWalk {
    fn pend(&mut self, r: Reach) {
        if r.shared {
            self.shared_pending += 1;
        } else {
            if self.pending_by_arm[r.arm] == 0 {
                self.active_arms += 1;
            }
            self.pending_by_arm[r.arm] += 1;
        }
    }

    fn unpend(&mut self, r: Reach) {
        if r.shared {
            self.shared_pending -= 1;
        } else {
            self.pending_by_arm[r.arm] -= 1;
            if self.pending_by_arm[r.arm] == 0 {
                self.active_arms -= 1;
            }
        }
    }

    /// Passes `from`'s state on to block `x`.
    fn merge(&mut self, cfg: &Cfg, x: usize, from: Reach) {
        match self.reach.get(&x).copied() {
            None => {
                let r = Reach { arm: from.arm, shared: from.shared || Some(x) == self.stop };
                self.reach.insert(x, r);
                self.pend(r);
                self.heap.push(Reverse((cfg.rpo_index[x], x)));
            }
            Some(r) if !r.shared && (from.shared || from.arm != r.arm) => {
                let now = Reach { arm: r.arm, shared: true };
                self.reach.insert(x, now);
                if !self.done.contains(&x) {
                    self.unpend(r);
                    self.pend(now);
                }
            }
            Some(_) => {}
        }
    }
}

/// Routes the arms of `b` into `conts` through a dispatcher, which becomes the single
/// continuation. Edges inside the shared code stay as they are.
/// Returns the dispatcher and the blocks whose edges were routed.
pub fn join(
    k: &mut Kernel,
    cfg: &Cfg,
    forest: &LoopForest,
    b: usize,
    stop: Option<usize>,
    conts: &[usize],
) -> (BlockId, Vec<usize>) {
    let reach = arm_reach(k, cfg, forest, b, stop);
    let from: Vec<usize> = std::iter::once(b)
        .chain(reach.iter().filter(|(_, r)| !r.shared).map(|(&x, _)| x))
        .collect();
    let targets: Vec<BlockId> = conts.iter().map(|&e| BlockId(e as u32)).collect();
    (dispatch::insert(k, &targets, &from), from)
}
