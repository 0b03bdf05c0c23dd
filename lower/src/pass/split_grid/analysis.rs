//! What `split_grid` needs to know of the CFG: cooperative groups' inline grid
//! barriers (made `GridSync`s here), the registers live into blocks, and whether a
//! block is on a cycle.

use crate::ir::{
    AtomicOp, BlockId, Inst, InstKind, Kernel, OpTy, RegId, SystemInst, Terminator, Value,
};
use crate::verify::inst_defs_uses;

/// Blocks followed from a polling loop's exit to its closing block barrier, at most.
const MAX_WALK: usize = 64;

/// Makes each inline grid barrier of cooperative groups a `GridSync` (the pass's module
/// doc): only when every polling loop on the grid workspace is recognized, so that
/// none is left half rewritten.
pub(super) fn inline_barriers(k: &mut Kernel) {
    let tainted = workspace_registers(k);
    if !tainted.iter().any(|&t| t) {
        return;
    }
    let on = |i: &Inst| -> bool {
        let addr = match &i.kind {
            InstKind::Load { addr, .. } => addr,
            InstKind::Atomic { op: AtomicOp::Load, addr, .. } => addr,
            _ => return false,
        };
        addr.base.is_some_and(|r| tainted[r.index()])
    };
    let preds = predecessors(k);
    let mut found = Vec::new();
    for b in 0..k.blocks.len() {
        if !k.blocks[b].insts.iter().any(on) {
            continue;
        }
        let Some((from, exit)) = loop_exit(k, &preds, BlockId(b as u32)) else { return };
        let Some(barrier) = next_barrier(k, exit) else { return };
        found.push((from, exit, barrier));
    }
    for &(from, exit, (block, at)) in &found {
        k.blocks[from.index()].term = Terminator::Jump(exit);
        k.blocks[block.index()].insts[at].kind = InstKind::System(Box::new(SystemInst::GridSync));
    }
    // The arrivals: a move of 0 (the loop they fed is gone), or nothing.
    let arrival = |i: &Inst| match &i.kind {
        InstKind::Atomic { op, addr, .. } => {
            *op != AtomicOp::Load && addr.base.is_some_and(|r| tainted[r.index()])
        }
        _ => false,
    };
    for b in &mut k.blocks {
        b.insts.retain(|i| !arrival(i) || matches!(i.kind, InstKind::Atomic { dst: Some(_), .. }));
        for i in &mut b.insts {
            if let (true, InstKind::Atomic { dst: Some(dst), ty, .. }) = (arrival(i), &i.kind) {
                let (dst, ty): (RegId, OpTy) = (*dst, *ty);
                i.kind = InstKind::Mov { ty, dst, src: Value::Imm(0) };
            }
        }
    }
}

/// The registers computed from the grid workspace's address (flow-insensitive).
fn workspace_registers(k: &Kernel) -> Vec<bool> {
    let mut tainted = vec![false; k.regs.len()];
    for i in k.blocks.iter().flat_map(|b| &b.insts) {
        if let InstKind::System(s) = &i.kind {
            if let SystemInst::GridWorkspace { dst, .. } = **s {
                tainted[dst.index()] = true;
            }
        }
    }
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    let mut changed = tainted.iter().any(|&t| t);
    while changed {
        changed = false;
        for i in k.blocks.iter().flat_map(|b| &b.insts) {
            defs.clear();
            uses.clear();
            inst_defs_uses(&i.kind, &mut defs, &mut uses);
            if uses.iter().any(|u| tainted[u.index()]) {
                for d in &defs {
                    if !tainted[d.index()] {
                        tainted[d.index()] = true;
                        changed = true;
                    }
                }
            }
        }
    }
    tainted
}

fn predecessors(k: &Kernel) -> Vec<Vec<BlockId>> {
    let mut preds = vec![Vec::new(); k.blocks.len()];
    for (i, b) in k.blocks.iter().enumerate() {
        for s in b.term.successors() {
            preds[s.index()].push(BlockId(i as u32));
        }
    }
    preds
}

/// The blocks reachable from `from` along `next` (`from` itself only on a cycle).
fn reach(n: usize, from: BlockId, next: impl Fn(BlockId) -> Vec<BlockId>) -> Vec<bool> {
    let mut seen = vec![false; n];
    let mut stack = next(from);
    while let Some(b) = stack.pop() {
        if !seen[b.index()] {
            seen[b.index()] = true;
            stack.extend(next(b));
        }
    }
    seen
}

/// The one edge (from, to) that leaves the cycle `b` is on, where `from` ends in a
/// branch; `None` when `b` is on no cycle or the cycle has other exits.
fn loop_exit(k: &Kernel, preds: &[Vec<BlockId>], b: BlockId) -> Option<(BlockId, BlockId)> {
    let n = k.blocks.len();
    let fwd = reach(n, b, |x| k.blocks[x.index()].term.successors());
    let back = reach(n, b, |x| preds[x.index()].clone());
    if !fwd[b.index()] {
        return None;
    }
    let mut exits = Vec::new();
    for s in (0..n).filter(|&s| fwd[s] && back[s]) {
        for t in k.blocks[s].term.successors() {
            if !(fwd[t.index()] && back[t.index()]) {
                exits.push((BlockId(s as u32), t));
            }
        }
    }
    match exits.as_slice() {
        [(from, to)] if matches!(k.blocks[from.index()].term, Terminator::Branch { .. }) => {
            Some((*from, *to))
        }
        _ => None,
    }
}

/// The first block barrier from the start of `b` on, along jumps.
fn next_barrier(k: &Kernel, mut b: BlockId) -> Option<(BlockId, usize)> {
    for _ in 0..MAX_WALK {
        let block = &k.blocks[b.index()];
        if let Some(at) = block.insts.iter().position(|i| matches!(i.kind, InstKind::Barrier)) {
            return Some((b, at));
        }
        match block.term {
            Terminator::Jump(next) => b = next,
            _ => return None,
        }
    }
    None
}

/// Whether `b` is on a cycle of the CFG.
pub(super) fn on_cycle(k: &Kernel, b: BlockId) -> bool {
    reach(k.blocks.len(), b, |x| k.blocks[x.index()].term.successors())[b.index()]
}

/// The registers live into each block of `blocks` (backward liveness over the kernel).
pub(super) fn live_in(k: &Kernel, blocks: &[BlockId]) -> Vec<Vec<RegId>> {
    let n = k.regs.len();
    let words = n.div_ceil(64);
    let (mut gen, mut kill) = (Vec::new(), Vec::new());
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    for b in &k.blocks {
        let mut g = vec![0u64; words];
        let mut d = vec![0u64; words];
        let set = |s: &mut Vec<u64>, r: RegId| s[r.index() / 64] |= 1 << (r.index() % 64);
        let clear = |s: &mut Vec<u64>, r: RegId| s[r.index() / 64] &= !(1 << (r.index() % 64));
        match &b.term {
            Terminator::Branch { cond, .. } => set(&mut g, *cond),
            Terminator::Switch { selector, .. } => set(&mut g, *selector),
            Terminator::Jump(_) | Terminator::Return => {}
        }
        for inst in b.insts.iter().rev() {
            defs.clear();
            uses.clear();
            inst_defs_uses(&inst.kind, &mut defs, &mut uses);
            for &r in &defs {
                clear(&mut g, r);
                set(&mut d, r);
            }
            for &r in &uses {
                set(&mut g, r);
            }
        }
        gen.push(g);
        kill.push(d);
    }
    let mut live = gen.clone();
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..k.blocks.len()).rev() {
            let mut new = gen[i].clone();
            for s in k.blocks[i].term.successors() {
                for (w, (o, kl)) in live[s.index()].iter().zip(&kill[i]).enumerate() {
                    new[w] |= o & !kl;
                }
            }
            if new != live[i] {
                live[i] = new;
                changed = true;
            }
        }
    }
    blocks
        .iter()
        .map(|b| {
            let bits = &live[b.index()];
            (0..n)
                .filter(|&r| bits[r / 64] & (1 << (r % 64)) != 0)
                .map(|r| RegId(r as u32))
                .collect()
        })
        .collect()
}
