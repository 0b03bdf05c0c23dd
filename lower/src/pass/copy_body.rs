//! Copies of a device function's body in its kernel, which `pass::inline` makes for a
//! call and `pass::recursion` for each function of a call cycle: the function's
//! registers renamed to fresh ones of the kernel, its blocks after the kernel's, each
//! `return` a jump to a given block, and addresses based on a parameter whose argument
//! is a known local-window offset made absolute. Both passes use it, and it uses
//! neither.

use std::collections::BTreeMap;

use crate::ir::{
    Address, Block, BlockId, Function, Inst, InstKind, Kernel, RegId, RegInfo, Terminator, Value,
};

/// Appends a copy of `f`'s body to the kernel: its registers renamed to fresh ones (with
/// the callee's type, span and name, but a temporary `$tN` named by its new id), its
/// blocks after the kernel's, each `return` a jump to `ret`, and addresses based on a
/// `folded` parameter made absolute. The first register and block of the copy.
pub(crate) fn copy_body(
    k: &mut Kernel,
    f: &Function,
    folded: &BTreeMap<RegId, u64>,
    ret: BlockId,
) -> (u32, u32) {
    let (first_reg, first_block) = (k.regs.len() as u32, k.blocks.len() as u32);
    copy_blocks(k, f, folded, ret, &Specialized::whole(f));
    (first_reg, first_block)
}

/// [`copy_body`] of the blocks of `f` that `run` reaches, in order, with `run`'s entry
/// block, and of the registers they, `f`'s parameters and its returns name, in order
/// (every register for [`Specialized::whole`]). Each of `f`'s registers' copy (those
/// not copied keep their id, unused) and the copy's entry block.
pub(super) fn copy_blocks(
    k: &mut Kernel,
    f: &Function,
    folded: &BTreeMap<RegId, u64>,
    ret: BlockId,
    run: &Specialized,
) -> (Vec<RegId>, BlockId) {
    let body = |b: usize| match &run.entry {
        Some((insts, term)) if b == f.entry.index() => (insts, term),
        _ => (&f.blocks[b].insts, &f.blocks[b].term),
    };
    let live = || (0..f.blocks.len()).filter(|b| run.live[*b]);
    let mut used = vec![run.entry.is_none(); f.regs.len()];
    let mut mark = |r: &mut RegId| {
        if let Some(u) = used.get_mut(r.index()) {
            *u = true;
        }
    };
    for (mut r, _) in f.params.iter().chain(&f.returns).copied() {
        mark(&mut r);
    }
    for (insts, term) in live().map(body) {
        for i in insts {
            for_each_reg(&mut i.kind.clone(), &mut mark);
        }
        if let Terminator::Branch { mut cond, .. } | Terminator::Switch { selector: mut cond, .. } =
            term
        {
            mark(&mut cond);
        }
    }
    // A temporary is named by its index (`$tN`): the copy is a new temporary.
    let mut copy = Vec::with_capacity(f.regs.len());
    for (i, r) in f.regs.iter().enumerate() {
        if !used[i] {
            copy.push(RegId(i as u32));
            continue;
        }
        let id = k.regs.len();
        let temp = r.name.strip_prefix("$t").is_some_and(|n| n.bytes().all(|c| c.is_ascii_digit()));
        let name = if temp { String::new() } else { r.name.clone() };
        k.regs.push(RegInfo { name, ..r.clone() });
        copy.push(RegId(id as u32));
    }
    let reg = |r: RegId| copy.get(r.index()).copied().unwrap_or(r);
    // Each live block's copy, numbered in order after the kernel's blocks (every target
    // of a live block is live).
    let mut copy_of = vec![BlockId(u32::MAX); f.blocks.len()];
    for (n, b) in live().enumerate() {
        copy_of[b] = BlockId((k.blocks.len() + n) as u32);
    }
    let copies: Vec<Block> = live()
        .map(|b| {
            let (insts, term) = body(b);
            let insts =
                insts.iter().map(|i| Inst { kind: renamed(&i.kind, &reg, folded), span: i.span });
            let mut term = term.clone();
            for t in term.targets_mut() {
                *t = copy_of[t.index()];
            }
            match &mut term {
                Terminator::Return => term = Terminator::Jump(ret),
                Terminator::Branch { cond, .. } => *cond = reg(*cond),
                Terminator::Switch { selector, .. } => *selector = reg(*selector),
                Terminator::Jump(_) => {}
            }
            let block = &f.blocks[b];
            Block {
                label: None,
                span: block.span,
                insts: insts.collect(),
                term,
                term_span: block.term_span,
            }
        })
        .collect();
    k.blocks.extend(copies);
    (copy, copy_of[f.entry.index()])
}

/// A callee's body as one call runs it: the call's immediate arguments (a `.reg`
/// parameter's, or the immediate the caller stored in the `.param` variable a folded
/// parameter addresses, just before the call) make some of its entry block's loads and
/// tests constants, and the entry block's branch then goes one way. numba's runtime
/// functions are called mostly with null pointers (`NRT_decref(NULL)` returns at once),
/// so a call copies the blocks it can reach, not the whole body.
pub(super) struct Specialized {
    /// The entry block's instructions and terminator, when they changed.
    pub(super) entry: Option<(Vec<Inst>, Terminator)>,
    /// The blocks the call can reach, by the callee's block index.
    pub(super) live: Vec<bool>,
}

impl Specialized {
    /// Every block, unchanged.
    pub(super) fn whole(f: &Function) -> Specialized {
        Specialized { entry: None, live: vec![true; f.blocks.len()] }
    }
}

/// `kind` with every register renamed by `reg`, every call's callee kept, and addresses
/// based on a folded parameter made absolute.
fn renamed(
    kind: &InstKind,
    reg: &impl Fn(RegId) -> RegId,
    folded: &BTreeMap<RegId, u64>,
) -> InstKind {
    let mut kind = kind.clone();
    // Addresses first, while their bases are the callee's registers.
    if let Some(addr) = address_mut(&mut kind) {
        if let Some(&c) = addr.base.and_then(|b| folded.get(&b)) {
            *addr = Address { base: None, offset: addr.offset.wrapping_add(c as i64) };
        }
    }
    for_each_reg(&mut kind, &mut |r: &mut RegId| *r = reg(*r));
    kind
}

/// The address of a memory instruction.
fn address_mut(kind: &mut InstKind) -> Option<&mut Address> {
    match kind {
        InstKind::Load { addr, .. }
        | InstKind::Store { addr, .. }
        | InstKind::Atomic { addr, .. } => Some(addr),
        _ => None,
    }
}

/// Calls `f` on every register `kind` names, to rewrite it.
pub(crate) fn for_each_reg(kind: &mut InstKind, f: &mut dyn FnMut(&mut RegId)) {
    let v = |x: &mut Value, f: &mut dyn FnMut(&mut RegId)| {
        if let Value::Reg(r) = x {
            f(r)
        }
    };
    match kind {
        InstKind::Mov { dst, src, .. } | InstKind::Cvta { dst, src, .. } => {
            f(dst);
            v(src, f);
        }
        InstKind::IsSpace(i) => {
            f(&mut i.dst);
            v(&mut i.addr, f);
        }
        InstKind::Pack { dst, srcs, .. } => {
            f(dst);
            srcs.iter_mut().for_each(|s| v(s, f));
        }
        InstKind::Unpack { dsts, src, .. } => {
            dsts.iter_mut().flatten().for_each(&mut *f);
            v(src, f);
        }
        InstKind::Special { dst, .. } | InstKind::LoopCount { dst, .. } => f(dst),
        InstKind::Unary { dst, src, .. }
        | InstKind::Convert { dst, src, .. }
        | InstKind::Narrow { dst, src, .. }
        | InstKind::IntToFloat { dst, src, .. }
        | InstKind::Widen { dst, src, .. } => {
            f(dst);
            v(src, f);
        }
        InstKind::Binary { dst, lhs, rhs, .. } => {
            f(dst);
            v(lhs, f);
            v(rhs, f);
        }
        InstKind::Bfe { dst, a, pos: b, len: c, .. }
        | InstKind::RoundToOdd { dst, a, b, c, .. }
        | InstKind::Mad { dst, a, b, c, .. }
        | InstKind::Fma { dst, a, b, c, .. } => {
            f(dst);
            [a, b, c].into_iter().for_each(|x| v(x, f));
        }
        InstKind::Bfi { dst, a, b, pos, len, .. } => {
            f(dst);
            [a, b, pos, len].into_iter().for_each(|x| v(x, f));
        }
        InstKind::Setp { dst, dst_not, lhs, rhs, combine, .. } => {
            dst.iter_mut().chain(dst_not.iter_mut()).for_each(&mut *f);
            v(lhs, f);
            v(rhs, f);
            if let Some((_, r, _)) = combine {
                f(r);
            }
        }
        InstKind::Select { dst, a, b, cond, .. } => {
            f(dst);
            v(a, f);
            v(b, f);
            f(cond);
        }
        InstKind::PredLogic { dst, lhs, rhs, .. } => {
            f(dst);
            f(lhs);
            f(rhs);
        }
        InstKind::PredNot { dst, src } => {
            f(dst);
            f(src);
        }
        InstKind::Load { dsts, addr, .. } => {
            dsts.iter_mut().flatten().for_each(&mut *f);
            addr.base.iter_mut().for_each(&mut *f);
        }
        InstKind::Store { srcs, addr, .. } => {
            srcs.iter_mut().for_each(|s| v(s, f));
            addr.base.iter_mut().for_each(&mut *f);
        }
        InstKind::Atomic { dst, addr, src, cmp, .. } => {
            dst.iter_mut().for_each(&mut *f);
            addr.base.iter_mut().for_each(&mut *f);
            v(src, f);
            v(cmp, f);
        }
        InstKind::VectorAtomic(a) => {
            a.dsts.iter_mut().flatten().for_each(&mut *f);
            a.addr.base.iter_mut().for_each(&mut *f);
            a.srcs.iter_mut().for_each(|s| v(s, f));
            v(&mut a.cmp, f);
        }
        InstKind::Subgroup { dst, value, lane, .. } => {
            f(dst);
            v(value, f);
            v(lane, f);
        }
        InstKind::WarpBarrier { publish } => publish.iter_mut().for_each(|p| v(p, f)),
        InstKind::WarpPublish { value } => v(value, f),
        InstKind::WarpRead { dst, value, lane: a, warp_base }
        | InstKind::WarpBallot { dst, value, lanes: a, warp_base } => {
            f(dst);
            [value, a, warp_base].into_iter().for_each(|x| v(x, f));
        }
        InstKind::RaceShadow { dst, word, swap } => {
            f(dst);
            v(word, f);
            swap.iter_mut().for_each(|s| v(s, f));
        }
        InstKind::SyncPoint { point: crate::ir::SyncPoint::Warp { members, .. } } => v(members, f),
        InstKind::Call { args, results, .. } => {
            args.iter_mut().for_each(|a| v(a, f));
            results.iter_mut().for_each(&mut *f);
        }
        InstKind::CallIndirect { target, arms } => {
            v(target, f);
            for arm in arms {
                arm.args.iter_mut().for_each(|a| v(a, f));
                arm.results.iter_mut().for_each(&mut *f);
            }
        }
        InstKind::Video(op) => op.for_each_reg(f),
        InstKind::Half(op) => {
            f(&mut op.dst);
            op.srcs.iter_mut().for_each(|s| v(s, f));
        }
        InstKind::Texture(t) => t.for_each_reg(f),
        InstKind::Matrix(m) => m.for_each_reg(f),
        InstKind::Warp(w) => w.for_each_reg(f),
        InstKind::BarrierReduce { dst, cond, .. } => {
            f(dst);
            f(cond);
        }
        InstKind::Copy(c) => c.for_each_reg(f),
        InstKind::Mbarrier(m) => m.for_each_reg(f),
        InstKind::System(s) => s.for_each_reg(f),
        InstKind::DeviceLaunch(l) => l.for_each_reg(f),
        InstKind::Stack(s) => s.for_each_reg(f),
        InstKind::VariableAddress(a) => f(&mut a.dst),
        InstKind::DataAddress(a) => a.for_each_reg(f),
        InstKind::Integer(op) => op.for_each_reg(f),
        InstKind::HalfConvert(c) => {
            f(&mut c.dst);
            c.srcs.iter_mut().for_each(|s| v(s, f));
        }
        InstKind::Barrier
        | InstKind::EndThread
        | InstKind::Fence { .. }
        | InstKind::WarpSync
        | InstKind::SyncPoint { .. } => {}
    }
}
