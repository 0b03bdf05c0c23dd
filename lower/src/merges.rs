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

use crate::cfg::Cfg;
use crate::dispatch;
use crate::ir::{BlockId, Kernel};

/// The loop nesting of a reducible CFG: for each block its innermost loop header, and
/// for each loop its body and its exit (the one target outside it that is not an empty
/// `ret` block, after [`crate::loop_exits`]).
#[derive(Debug)]
pub struct LoopForest {
    /// Innermost loop header containing each block (a header belongs to its own loop).
    pub innermost: Vec<Option<usize>>,
    pub bodies: std::collections::BTreeMap<usize, Vec<bool>>,
    pub exits: std::collections::BTreeMap<usize, Option<usize>>,
}

impl LoopForest {
    pub fn new(k: &Kernel, cfg: &Cfg) -> LoopForest {
        let n = k.blocks.len();
        let loops = cfg.loops();
        let mut innermost: Vec<Option<usize>> = vec![None; n];
        let mut size = vec![usize::MAX; n];
        let mut bodies = std::collections::BTreeMap::new();
        let mut exits = std::collections::BTreeMap::new();
        for (&h, body) in &loops {
            let mut in_body = vec![false; n];
            for &b in body {
                in_body[b] = true;
                if body.len() < size[b] {
                    size[b] = body.len();
                    innermost[b] = Some(h);
                }
            }
            let exit = body
                .iter()
                .flat_map(|&b| cfg.succs[b].iter().copied())
                .filter(|&s| !in_body[s] && !crate::cfg::is_plain_return(k, s))
                .min_by_key(|&s| cfg.rpo_index[s]);
            bodies.insert(h, in_body);
            exits.insert(h, exit);
        }
        LoopForest { innermost, bodies, exits }
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
            Some(h) => x == h || !self.bodies.get(&h).is_some_and(|b| b[x]),
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
    let (reached, shared) = arm_reach(k, cfg, forest, b, stop);
    let targets = &cfg.succs[b];
    let mut entries: Vec<usize> = (0..k.blocks.len())
        .filter(|&x| shared[x])
        .filter(|&x| targets.contains(&x) || cfg.preds[x].iter().any(|&p| reached[p] && !shared[p]))
        .collect();
    entries.sort_unstable_by_key(|&x| cfg.rpo_index[x]);
    entries
}

/// The blocks the arms of `b` reach (inside its innermost loop, not past `stop`), and
/// which of them are shared (see [`continuations`]).
fn arm_reach(
    k: &Kernel,
    cfg: &Cfg,
    forest: &LoopForest,
    b: usize,
    stop: Option<usize>,
) -> (Vec<bool>, Vec<bool>) {
    let n = k.blocks.len();
    let l = forest.innermost[b];
    let mut count = vec![0u8; n];
    let mut reached = vec![false; n];
    for &t in &cfg.succs[b] {
        let mut seen = vec![false; n];
        let mut stack = vec![t];
        while let Some(x) = stack.pop() {
            if seen[x] || forest.is_terminal(k, l, x) {
                continue;
            }
            seen[x] = true;
            reached[x] = true;
            count[x] = count[x].saturating_add(1);
            if Some(x) != stop {
                stack.extend(cfg.succs[x].iter().copied());
            }
        }
    }
    let shared = (0..n).map(|x| count[x] >= 2 || (Some(x) == stop && reached[x])).collect();
    (reached, shared)
}

/// Routes the arms of `b` into `conts` through a dispatcher, which becomes the single
/// continuation. Edges inside the shared code stay as they are.
pub fn join(
    k: &mut Kernel,
    cfg: &Cfg,
    forest: &LoopForest,
    b: usize,
    stop: Option<usize>,
    conts: &[usize],
) -> BlockId {
    let (reached, shared) = arm_reach(k, cfg, forest, b, stop);
    let from: Vec<bool> =
        (0..k.blocks.len()).map(|x| x == b || (reached[x] && !shared[x])).collect();
    let targets: Vec<BlockId> = conts.iter().map(|&e| BlockId(e as u32)).collect();
    dispatch::insert(k, &targets, |u| from.get(u.index()).copied().unwrap_or(false))
}
