//! What `split_grid` needs to know of the CFG: cooperative groups' inline grid
//! barriers (made `GridSync`s here), the registers live into blocks, and whether a
//! block is on a cycle.

use crate::ir::{
    Address, AtomicOp, BinaryOp, BlockId, Inst, InstKind, Kernel, OpTy, Order, RegId, SystemInst,
    Terminator, Value,
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
    // The arrivals' addresses: an inline barrier's spin reads the word it added to
    // (in a debug build the workspace's address goes through local memory, so the
    // address register need not be computed from `%envreg1/2` in registers).
    let defs = unique_defs(k);
    let root = |addr: &Address| addr.base.map(|r| root(&defs, r, addr.offset));
    let arrivals: Vec<(RegId, i64)> = k
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| match &i.kind {
            // `atom.add.release.gpu`, as the headers write it.
            InstKind::Atomic { op: AtomicOp::Add, order: Order::Release, addr, .. } => root(addr),
            _ => None,
        })
        .collect();
    let on_word = |addr: &Address| {
        addr.base.is_some_and(|r| tainted[r.index()])
            || root(addr).is_some_and(|w| arrivals.contains(&w))
    };
    let on = |i: &Inst| -> bool {
        match &i.kind {
            InstKind::Load { addr, .. } => on_word(addr),
            InstKind::Atomic { op: AtomicOp::Load, addr, .. } => on_word(addr),
            _ => false,
        }
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
        InstKind::Atomic { op, addr, .. } => *op != AtomicOp::Load && on_word(addr),
        _ => false,
    };
    let mut blocks = std::mem::take(&mut k.blocks);
    for b in &mut blocks {
        b.insts.retain(|i| !arrival(i) || matches!(i.kind, InstKind::Atomic { dst: Some(_), .. }));
        for i in &mut b.insts {
            if let (true, InstKind::Atomic { dst: Some(dst), ty, .. }) = (arrival(i), &i.kind) {
                let (dst, ty): (RegId, OpTy) = (*dst, *ty);
                i.kind = InstKind::Mov { ty, dst, src: Value::Imm(0) };
            }
        }
    }
    k.blocks = blocks;
}

/// Each register's defining instruction, where it has exactly one.
fn unique_defs(k: &Kernel) -> Vec<Option<InstKind>> {
    let mut count = vec![0u32; k.regs.len()];
    let mut def: Vec<Option<InstKind>> = vec![None; k.regs.len()];
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    for i in k.blocks.iter().flat_map(|b| &b.insts) {
        defs.clear();
        inst_defs_uses(&i.kind, &mut defs, &mut uses);
        for d in &defs {
            count[d.index()] += 1;
            def[d.index()] = Some(i.kind.clone());
        }
    }
    for (d, &c) in def.iter_mut().zip(&count) {
        if c != 1 {
            *d = None;
        }
    }
    def
}

/// The register and offset an address `r + offset` is computed from through moves,
/// conversions and additions of constants (a generic access's window dispatch makes
/// several such copies of one address).
fn root(defs: &[Option<InstKind>], mut r: RegId, mut offset: i64) -> (RegId, i64) {
    for _ in 0..MAX_WALK {
        match &defs[r.index()] {
            Some(InstKind::Mov { src: Value::Reg(s), .. })
            | Some(InstKind::Convert { src: Value::Reg(s), .. }) => r = *s,
            Some(InstKind::Binary {
                op: BinaryOp::Add,
                lhs: Value::Reg(s),
                rhs: Value::Imm(i),
                ..
            }) => {
                offset = offset.wrapping_add(*i as i64);
                r = *s;
            }
            _ => break,
        }
    }
    (r, offset)
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

/// The one edge (from, to) that leaves the cycle `b` is on among the blocks without a
/// block barrier, where `from` ends in a branch; `None` when `b` is on no such cycle or
/// the cycle has other exits.
fn loop_exit(k: &Kernel, preds: &[Vec<BlockId>], b: BlockId) -> Option<(BlockId, BlockId)> {
    let n = k.blocks.len();
    // The spin loop holds no block barrier; a loop around the whole grid barrier does.
    let free = |x: &BlockId| !k.blocks[x.index()].insts.iter().any(|i| i.kind == InstKind::Barrier);
    let fwd =
        reach(n, b, |x| k.blocks[x.index()].term.successors().into_iter().filter(free).collect());
    let back = reach(n, b, |x| preds[x.index()].iter().copied().filter(free).collect());
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
