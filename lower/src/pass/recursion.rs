//! Recursion: the calls into a **call cycle** (a strongly connected component of the
//! kernel's call graph with a cycle: PTX ISA 9.2 §9.7.12.4 allows recursion, SPIR-V
//! 2.16.1 does not, "no function can call itself") become a small machine over an
//! explicit per-thread stack. `pass::inline` runs it for each call into a cycle it
//! meets (and inlines every other call, those the machine's copies make included).
//!
//! A call into a cycle (the **outer call**) is replaced by a copy of every function of
//! the cycle, after the kernel's blocks, each with fresh registers (`pass::copy_body`):
//!
//! * each function gets an **entry block**, which keeps the stack pointer it was called
//!   with (`osp`, [`Function::stack_pointer`]) and goes to its body, and a **return
//!   block**, where its `return`s go;
//! * a call from the cycle into the cycle (a **call site**) pushes a **save area**
//!   below the stack pointer it passes (the free stack, `crate::ir`): a continuation id
//!   naming the site, then the caller's registers that are live after the call
//!   (backward liveness over the machine, a call leading to its resume point as the
//!   caller sees it); it binds the callee's parameters (its stack pointer to the save
//!   area's address) and jumps to the callee's entry block;
//! * the return block of the function the outer call called leaves the machine when
//!   its `osp` is the outer call's stack pointer (the outermost activation), to a
//!   continuation that takes the results; otherwise every return block switches on the
//!   continuation id at its `osp` to the site's **resume block**, which takes the
//!   callee's results, restores the saved registers from the save area and goes on
//!   after the call.
//!
//! The frames of the activations are `pass::layout_memory`'s (each
//! activation pushes one at its entry, below its stack pointer, a
//! `crate::ir::StackInst::Frame` that `pass::expand_stack` writes out after this
//! machine is built), so activations never alias. The stack is [`RECURSION_STACK_BYTES`] per thread in a kernel with recursion:
//!
//! ```text
//!   higher addresses   caller's frame and allocas
//!                      save area:       [sa+0] continuation id (u32)
//!                                       [sa+4..] live 8/16/32-bit registers and predicates (4 bytes each)
//!                                       then live 64-bit registers (8-byte aligned)
//!                      callee's frame   (its stack pointer is sa)
//!   lower addresses    ...
//! ```
//!
//! A save area that does not fit ends the launch with `crate::system::STATUS_STACK`
//! (the function field 1 marks a call frame, the file field holds the stack size), as a
//! frame that does not fit does. Every save area is a multiple of 8 bytes, so the stack
//! pointer stays 8-byte aligned. The CFG the machine makes may be irreducible (a
//! function entered from several sites, resumed from its return block); the
//! structurizer's dispatchers handle that.
//!
//! Pre: the call at the given place calls a function on a cycle, every function of the
//! cycle has a stack pointer. Post: the call is gone; the machine's copies may contain
//! calls out of the cycle, which `pass::inline` goes on to inline; the kernel computes
//! what it computed, until a save area does not fit.

use std::collections::BTreeSet;

use ptxvk_frontend::{Diagnostic, Span};

use super::copy_body::copy_body;
use crate::build::{Build, Builder};
use crate::ir::{
    Address, BinaryOp, Block, BlockId, CmpOp, FloatMode, Function, Inst, InstKind, Kernel, OpTy,
    RegId, RegTy, Space, Terminator, Value,
};
use crate::system as sys;
use crate::verify::inst_defs_uses;

/// Bytes of stack per thread in a kernel with recursion: 4 KiB, four times CUDA's
/// default 1 KiB (`cudaLimitStackSize`), since ptxvk's save areas hold every register
/// live across a call where ptxas saves only callee-saved ones. An activation of
/// nvcc's `fib` takes 32 bytes (about 120 levels fit), one of numba-cuda's about 100
/// (about 40 levels). The stack is a per-invocation array, which Vulkan drivers keep
/// in scratch memory: its size times the invocations in flight.
pub const RECURSION_STACK_BYTES: u32 = 4 * 1024;

const U32: OpTy = OpTy::U(32);

/// The call cycle of each function, by the index of its first function (`None` for a
/// function on none): `f` and `g` share one when each reaches the other by calls.
pub fn cycles(functions: &[Function]) -> Vec<Option<usize>> {
    let n = functions.len();
    let callees: Vec<BTreeSet<usize>> = functions
        .iter()
        .map(|f| {
            let insts = f.blocks.iter().flat_map(|b| &b.insts);
            // The arms of indirect calls too (`pass::layout_memory` asks before they are
            // calls).
            let callees = insts.flat_map(|i| i.kind.callees()).map(|c| c.index());
            callees.filter(|&c| c < n).collect()
        })
        .collect();
    let reach: Vec<BTreeSet<usize>> = (0..n)
        .map(|f| {
            let mut seen = BTreeSet::new();
            let mut work: Vec<usize> = callees[f].iter().copied().collect();
            while let Some(g) = work.pop() {
                if seen.insert(g) {
                    work.extend(callees[g].iter().copied());
                }
            }
            seen
        })
        .collect();
    (0..n)
        .map(|f| {
            let on = reach[f].contains(&f);
            on.then(|| (0..n).find(|&g| reach[f].contains(&g) && reach[g].contains(&f))).flatten()
        })
        .collect()
}

/// One function of the cycle, as copied.
struct Member {
    /// The function's index.
    index: usize,
    /// Its first register in the kernel.
    first_reg: u32,
    entry: BlockId,
    ret: BlockId,
    /// The stack pointer it was called with: its save area's address (a copy).
    osp: RegId,
}

impl Member {
    fn reg(&self, r: RegId) -> RegId {
        RegId(self.first_reg + r.0)
    }
}

/// A call from the cycle into the cycle.
struct Site {
    /// The callee, as an index into the members.
    callee: usize,
    /// Holds the call until the machine is finished; then pushes the save area.
    save: BlockId,
    /// What follows the call.
    resume: BlockId,
    args: Vec<Value>,
    results: Vec<RegId>,
    span: Span,
}

/// Replaces the call at instruction `at` of block `b` (a call of a function on a cycle of
/// `cycle_of`, [`cycles`]) by the machine (module doc).
pub fn machine(
    k: &mut Kernel,
    (b, at): (BlockId, usize),
    functions: &[Function],
    cycle_of: &[Option<usize>],
) -> Result<(), Diagnostic> {
    let call = k.blocks[b.index()].insts[at].clone();
    let (span, InstKind::Call { callee, args, results }) = (call.span, call.kind) else {
        return Err(Diagnostic::internal(call.span, "a recursive call that is no call"));
    };
    let cycle = cycle_of.get(callee.index()).copied().flatten();
    let indices: Vec<usize> =
        (0..functions.len()).filter(|&g| cycle.is_some() && cycle_of[g] == cycle).collect();
    let first_reg = k.regs.len();
    let first_block = k.blocks.len();
    let mut members = Vec::new();
    for &index in &indices {
        let f = &functions[index];
        if f.stack_pointer.is_none() {
            return Err(Diagnostic::internal(
                f.span,
                format!("recursive `{}` has no stack", f.name),
            ));
        }
        let ret = BlockId((k.blocks.len() + f.blocks.len()) as u32);
        let (first, copy) = copy_body(k, f, &Default::default(), ret);
        k.blocks.push(empty_block(Terminator::Return, f.span));
        let osp = Builder::new(k, f.span).temp(U32);
        let m = Member { index, first_reg: first, entry: BlockId(k.blocks.len() as u32), ret, osp };
        let sp = f.stack_pointer.map(|r| m.reg(r)).unwrap_or(osp);
        let keep = InstKind::Mov { ty: U32, dst: osp, src: Value::Reg(sp) };
        let entry = empty_block(Terminator::Jump(BlockId(copy + f.entry.0)), f.span);
        k.blocks.push(Block { insts: vec![Inst { kind: keep, span: f.span }], ..entry });
        members.push(m);
    }
    let Some(entered) = indices.iter().position(|&g| g == callee.index()) else {
        return Err(Diagnostic::internal(span, "a call into a cycle it is not on"));
    };
    let sites = split_sites(k, first_block, &indices);
    let live = live_into(k, first_reg, first_block, &members, functions);
    let mut overflow = None;
    for (id, site) in sites.iter().enumerate() {
        let saved = live[site.resume.index() - first_block]
            .regs()
            .into_iter()
            .filter(|r| !site.results.contains(r))
            .collect();
        let saved = save_layout(k, saved);
        let fail = *overflow.get_or_insert_with(|| overflow_block(k, span));
        save(k, site, id as u32, &saved, (&members, functions), fail.0, fail.1);
        resume(k, site, &saved, &members[site.callee], &functions[members[site.callee].index]);
    }
    // The outer call: bind the parameters, enter; the continuation takes the results.
    let f = &functions[callee.index()];
    let m = &members[entered];
    let caller = &mut k.blocks[b.index()];
    let rest = caller.insts.split_off(at + 1);
    caller.insts.pop();
    let old_term = std::mem::replace(&mut caller.term, Terminator::Jump(m.entry));
    let old_term_span = std::mem::replace(&mut caller.term_span, span);
    let mut outer_sp = Value::Imm(0);
    for (&(p, ty), &arg) in f.params.iter().zip(&args) {
        caller.insts.push(Inst { kind: InstKind::Mov { ty, dst: m.reg(p), src: arg }, span });
        if f.stack_pointer == Some(p) {
            outer_sp = arg;
        }
    }
    let mut insts: Vec<Inst> = f
        .returns
        .iter()
        .zip(&results)
        .map(|(&(r, ty), &dst)| Inst {
            kind: InstKind::Mov { ty, dst, src: Value::Reg(m.reg(r)) },
            span,
        })
        .collect();
    insts.extend(rest);
    let exit = BlockId(k.blocks.len() as u32);
    k.blocks.push(Block { label: None, span, insts, term: old_term, term_span: old_term_span });
    for (i, m) in members.iter().enumerate() {
        let cases: Vec<(u32, BlockId)> = sites
            .iter()
            .enumerate()
            .filter(|(_, s)| s.callee == i)
            .map(|(id, s)| (id as u32, s.resume))
            .collect();
        let top = (i == entered).then_some((outer_sp, exit));
        return_block(k, m, &cases, top, exit, span);
    }
    Ok(())
}

fn empty_block(term: Terminator, span: Span) -> Block {
    Block { label: None, span, insts: Vec::new(), term, term_span: span }
}

/// Splits every block of the machine (from `first_block`) at each call into the cycle
/// (`indices`, the members' function indices): the call alone in a block of its own (the
/// site's save block), what follows in another (its resume block).
fn split_sites(k: &mut Kernel, first_block: usize, indices: &[usize]) -> Vec<Site> {
    let mut sites = Vec::new();
    let mut b = first_block;
    while b < k.blocks.len() {
        // A save block holds its call until the machine is finished.
        let held = sites.iter().any(|s: &Site| s.save.index() == b);
        let found = k.blocks[b].insts.iter().position(|i| match &i.kind {
            _ if held => false,
            InstKind::Call { callee, .. } => indices.contains(&callee.index()),
            _ => false,
        });
        let Some(at) = found else {
            b += 1;
            continue;
        };
        let save = BlockId(k.blocks.len() as u32);
        let resume = BlockId(save.0 + 1);
        let block = &mut k.blocks[b];
        let rest = block.insts.split_off(at + 1);
        let Some(call) = block.insts.pop() else { continue };
        let term = std::mem::replace(&mut block.term, Terminator::Jump(save));
        let term_span = std::mem::replace(&mut block.term_span, call.span);
        let InstKind::Call { callee, args, results } = call.kind.clone() else { continue };
        let Some(callee) = indices.iter().position(|&g| g == callee.index()) else { continue };
        sites.push(Site { callee, save, resume, args, results, span: call.span });
        let call_span = call.span;
        let mut held = empty_block(Terminator::Jump(resume), call_span);
        held.insts.push(call);
        k.blocks.push(held);
        k.blocks.push(Block { label: None, span: call_span, insts: rest, term, term_span });
        // The rest of the block is the resume block, scanned in its turn.
        b += 1;
    }
    sites
}

/// The shared block where a save area that does not fit ends the launch: the bytes it
/// needed in its register, then the failure record ([`crate::system`]) and the end of the
/// thread.
fn overflow_block(k: &mut Kernel, span: Span) -> (BlockId, RegId) {
    // A zero-width span: `pass::check` instruments the accesses with the program's
    // memory instructions' spans, and these are the system area's.
    let span = Span::new(span.start, span.start);
    k.system = true;
    let param_bytes = k.abi.size;
    let mut e = Builder::new(k, span);
    let need = e.temp(U32);
    let area = e.system_area(param_bytes);
    let first = e.claim_failure(area, Value::Imm(u64::from(sys::STATUS_STACK)));
    let insts = std::mem::take(&mut e.insts);
    let stack = Value::Imm(u64::from(RECURSION_STACK_BYTES));
    e.store_failure(area, &[Value::Imm(0), stack, Value::Reg(need), Value::Imm(1)]);
    let record = std::mem::take(&mut e.insts);
    let at = k.blocks.len() as u32;
    let (fail, rec, end) = (BlockId(at), BlockId(at + 1), BlockId(at + 2));
    let branch = Terminator::Branch { cond: first, negate: false, if_true: rec, if_false: end };
    k.blocks.push(Block { insts, ..empty_block(branch, span) });
    k.blocks.push(Block { insts: record, ..empty_block(Terminator::Jump(end), span) });
    k.blocks.push(empty_block(Terminator::Return, span));
    (fail, need)
}

/// Fills a site's save block: the test that its save area fits, then (a new block) the
/// push of the continuation id and the saved registers, the callee's parameters, and
/// the jump to its entry.
fn save(
    k: &mut Kernel,
    site: &Site,
    id: u32,
    saved: &SaveLayout,
    (members, functions): (&[Member], &[Function]),
    fail: BlockId,
    need: RegId,
) {
    let m = &members[site.callee];
    let f = &functions[m.index];
    let sp_arg = f
        .params
        .iter()
        .zip(&site.args)
        .find(|((p, _), _)| f.stack_pointer == Some(*p))
        .map_or(Value::Imm(0), |(_, &a)| a);
    let span = site.span;
    let bytes = Value::Imm(u64::from(saved.bytes));
    let push = BlockId(k.blocks.len() as u32);
    let mut e = Builder::new(k, span);
    let room = e.cmp(CmpOp::Le, U32, bytes, sp_arg);
    e.mov(U32, need, bytes);
    let test = std::mem::take(&mut e.insts);
    let sa = e.temp(U32);
    let mode = FloatMode::default();
    e.push(InstKind::Binary { op: BinaryOp::Sub, ty: U32, mode, dst: sa, lhs: sp_arg, rhs: bytes });
    let at = |offset: u32| Address { base: Some(sa), offset: i64::from(offset) };
    let id = vec![Value::Imm(u64::from(id))];
    e.push(InstKind::Store { space: Space::Local, ty: U32, srcs: id, addr: at(0) });
    for &(r, offset) in &saved.slots {
        let (ty, v) = match e.kernel.reg(r).ty {
            RegTy::Pred => (U32, e.sel(U32, r, Value::Imm(1), Value::Imm(0))),
            ty => (OpTy::U(ty.bits() as u8), Value::Reg(r)),
        };
        e.push(InstKind::Store { space: Space::Local, ty, srcs: vec![v], addr: at(offset) });
    }
    // The parameters, read before any is written (a function calling itself passes its
    // own parameters around).
    let params: Vec<RegId> = f.params.iter().map(|&(p, _)| m.reg(p)).collect();
    let values: Vec<Value> = f
        .params
        .iter()
        .zip(&site.args)
        .map(|(&(p, ty), &a)| match a {
            _ if f.stack_pointer == Some(p) => Value::Reg(sa),
            Value::Reg(r) if params.contains(&r) => {
                let t = e.temp(ty);
                e.mov(ty, t, a);
                Value::Reg(t)
            }
            a => a,
        })
        .collect();
    for (&(p, ty), v) in f.params.iter().zip(values) {
        e.mov(ty, m.reg(p), v);
    }
    let pushed = std::mem::take(&mut e.insts);
    let block = &mut k.blocks[site.save.index()];
    block.insts = test;
    block.term = Terminator::Branch { cond: room, negate: false, if_true: push, if_false: fail };
    k.blocks.push(Block { insts: pushed, ..empty_block(Terminator::Jump(m.entry), span) });
}

/// Starts a site's resume block: the callee's results (read before the restores, which
/// may overwrite the callee's registers when it is the caller), the saved registers
/// from the save area at the callee's `osp`, then the results into the call's.
fn resume(k: &mut Kernel, site: &Site, saved: &SaveLayout, m: &Member, f: &Function) {
    let span = site.span;
    let mut e = Builder::new(k, span);
    let returns: Vec<(RegId, OpTy)> = f.returns.iter().map(|&(r, ty)| (m.reg(r), ty)).collect();
    let restored = |r: RegId| saved.slots.iter().any(|&(s, _)| s == r);
    let clobbered = returns.iter().any(|&(r, _)| restored(r) || site.results.contains(&r));
    let values: Vec<(Value, OpTy)> = returns
        .iter()
        .map(|&(r, ty)| {
            if clobbered {
                let t = e.temp(ty);
                e.mov(ty, t, Value::Reg(r));
                (Value::Reg(t), ty)
            } else {
                (Value::Reg(r), ty)
            }
        })
        .collect();
    let base = if restored(m.osp) {
        let t = e.temp(U32);
        e.mov(U32, t, Value::Reg(m.osp));
        t
    } else {
        m.osp
    };
    let at = |offset: u32| Address { base: Some(base), offset: i64::from(offset) };
    for &(r, offset) in &saved.slots {
        match e.kernel.reg(r).ty {
            RegTy::Pred => {
                let t = e.temp(U32);
                let dsts = vec![Some(t)];
                e.push(InstKind::Load { space: Space::Local, ty: U32, dsts, addr: at(offset) });
                e.push(InstKind::Setp {
                    cmp: CmpOp::Ne,
                    ty: U32,
                    ftz: false,
                    dst: Some(r),
                    dst_not: None,
                    lhs: Value::Reg(t),
                    rhs: Value::Imm(0),
                    combine: None,
                });
            }
            ty => {
                let ty = OpTy::U(ty.bits() as u8);
                let dsts = vec![Some(r)];
                e.push(InstKind::Load { space: Space::Local, ty, dsts, addr: at(offset) });
            }
        }
    }
    for (&dst, (v, ty)) in site.results.iter().zip(values) {
        e.mov(ty, dst, v);
    }
    let mut insts = std::mem::take(&mut e.insts);
    let block = &mut k.blocks[site.resume.index()];
    insts.append(&mut block.insts);
    block.insts = insts;
}

/// Fills a member's return block: at the outer call's stack pointer (`top`, for the
/// function the outer call called) it leaves the machine; otherwise it resumes the site
/// whose continuation id is at its `osp`.
fn return_block(
    k: &mut Kernel,
    m: &Member,
    cases: &[(u32, BlockId)],
    top: Option<(Value, BlockId)>,
    exit: BlockId,
    span: Span,
) {
    let mut at = m.ret;
    if let Some((outer_sp, exit)) = top {
        let mut e = Builder::new(k, span);
        let outermost = e.cmp(CmpOp::Eq, U32, Value::Reg(m.osp), outer_sp);
        let insts = std::mem::take(&mut e.insts);
        let inner = BlockId(k.blocks.len() as u32);
        k.blocks.push(empty_block(Terminator::Return, span));
        let block = &mut k.blocks[at.index()];
        block.insts = insts;
        block.term =
            Terminator::Branch { cond: outermost, negate: false, if_true: exit, if_false: inner };
        at = inner;
    }
    let mut e = Builder::new(k, span);
    let term = match cases {
        [] => Terminator::Jump(exit),
        [(_, only)] => Terminator::Jump(*only),
        [rest @ .., (_, last)] => {
            let id = e.temp(U32);
            let addr = Address { base: Some(m.osp), offset: 0 };
            e.push(InstKind::Load { space: Space::Local, ty: U32, dsts: vec![Some(id)], addr });
            Terminator::Switch { selector: id, cases: rest.to_vec(), default: *last }
        }
    };
    let insts = std::mem::take(&mut e.insts);
    let block = &mut k.blocks[at.index()];
    block.insts = insts;
    block.term = term;
}

/// A set of the machine's registers (indices from its first).
#[derive(Clone, PartialEq, Eq)]
struct RegSet {
    first: usize,
    bits: Vec<u64>,
}

impl RegSet {
    fn new(first: usize, n: usize) -> RegSet {
        RegSet { first, bits: vec![0; n.div_ceil(64)] }
    }
    fn index(&self, r: RegId) -> Option<usize> {
        let i = r.index().checked_sub(self.first)?;
        (i < self.bits.len() * 64).then_some(i)
    }
    fn insert(&mut self, r: RegId) {
        if let Some(i) = self.index(r) {
            self.bits[i / 64] |= 1 << (i % 64);
        }
    }
    fn remove(&mut self, r: RegId) {
        if let Some(i) = self.index(r) {
            self.bits[i / 64] &= !(1 << (i % 64));
        }
    }
    fn regs(&self) -> Vec<RegId> {
        let mut out = Vec::new();
        for (w, &bits) in self.bits.iter().enumerate() {
            for b in 0..64 {
                if bits & (1 << b) != 0 {
                    out.push(RegId((self.first + w * 64 + b) as u32));
                }
            }
        }
        out
    }
}

/// The machine's registers live into each of its blocks (indexed from `first_block`),
/// by backward liveness over its blocks as they are before the sites are filled: a
/// site's save block holds the call and goes to its resume block (the call as the
/// caller sees it), and a member's return block reads the member's results and `osp`
/// and goes nowhere.
fn live_into(
    k: &Kernel,
    first_reg: usize,
    first_block: usize,
    members: &[Member],
    functions: &[Function],
) -> Vec<RegSet> {
    let n = k.regs.len() - first_reg;
    let blocks = &k.blocks[first_block..];
    let mut gen = Vec::with_capacity(blocks.len());
    let mut kill = Vec::with_capacity(blocks.len());
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    for (i, b) in blocks.iter().enumerate() {
        let mut g = RegSet::new(first_reg, n);
        let mut d = RegSet::new(first_reg, n);
        match &b.term {
            Terminator::Branch { cond, .. } => g.insert(*cond),
            Terminator::Switch { selector, .. } => g.insert(*selector),
            Terminator::Jump(_) | Terminator::Return => {}
        }
        let id = BlockId((first_block + i) as u32);
        for m in members.iter().filter(|m| m.ret == id) {
            g.insert(m.osp);
            functions[m.index].returns.iter().for_each(|&(r, _)| g.insert(m.reg(r)));
        }
        for inst in b.insts.iter().rev() {
            defs.clear();
            uses.clear();
            inst_defs_uses(&inst.kind, &mut defs, &mut uses);
            for &r in &defs {
                g.remove(r);
                d.insert(r);
            }
            for &r in &uses {
                g.insert(r);
            }
        }
        gen.push(g);
        kill.push(d);
    }
    let mut live: Vec<RegSet> = gen.clone();
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..blocks.len()).rev() {
            let mut new = gen[i].clone();
            for s in blocks[i].term.successors() {
                let Some(l) = s.index().checked_sub(first_block).and_then(|j| live.get(j)) else {
                    continue;
                };
                // in = gen ∪ (out − kill)
                for (w, (o, k)) in l.bits.iter().zip(&kill[i].bits).enumerate() {
                    new.bits[w] |= o & !k;
                }
            }
            if new != live[i] {
                live[i] = new;
                changed = true;
            }
        }
    }
    live
}

/// Where a save area keeps its registers: (register, byte offset), and its size.
struct SaveLayout {
    slots: Vec<(RegId, u32)>,
    bytes: u32,
}

/// The continuation id at 0, then a 4-byte slot per register of at most 32 bits (a
/// predicate as 0 or 1), then 8-byte slots; a multiple of 8 bytes.
fn save_layout(k: &Kernel, regs: Vec<RegId>) -> SaveLayout {
    let (slots, end) = register_slots(k, regs, 4);
    SaveLayout { slots, bytes: end }
}

/// Byte offsets from `start` for saving `regs` to memory: a 4-byte slot per register of
/// at most 32 bits (a predicate as 0 or 1), then 8-byte slots, 8-byte aligned; with the
/// end, a multiple of 8 (also `pass::split_grid`'s records).
pub(super) fn register_slots(k: &Kernel, regs: Vec<RegId>, start: u32) -> (Vec<(RegId, u32)>, u32) {
    let (wide, narrow): (Vec<RegId>, Vec<RegId>) =
        regs.into_iter().partition(|&r| k.reg(r).ty.bits() == 64);
    let mut slots = Vec::new();
    let mut at = start;
    for r in narrow {
        slots.push((r, at));
        at += 4;
    }
    at = at.next_multiple_of(8);
    for r in wide {
        slots.push((r, at));
        at += 8;
    }
    (slots, at.next_multiple_of(8))
}

#[cfg(test)]
mod tests {
    use crate::ir::{InstKind, Space, Value};

    /// `f` computes ten values before calling itself; only `%r10` (and the stack
    /// pointer it was called with, which its return block reads) is live after.
    const LIVE: &str = "\
kernel k {
    params size 8 align 8
    param out .u64 x1 @0 size 8 align 8
    shared 0
    local 4096
    entry bb0
    reg i32 %sp %n %r
    reg i64 %out
bb0:
    %sp = mov.u32 4096
    %out = load.param.u64 [0]
    %n = special.tid.x
    %r = call.fn0 %n, %sp
    store.global.u32 [%out], %r
    return
function fn0 f {
    entry bb0
    reg pred %p
    reg i32 %n %sp %r %r1 %r2 %r3 %r4 %r5 %r6 %r7 %r8 %r9 %r10 %m
    param u32 %n
    param u32 %sp
    return u32 %r
    stack %sp
bb0:
    %r = mov.u32 0
    %p, _ = setp.eq.u32 %n, 0
    branch %p, bb1, bb2
bb1:
    return
bb2:
    %r1 = add.u32 %n, 1
    %r2 = mul.u32 %r1, %r1
    %r3 = add.u32 %r2, %r1
    %r4 = mul.u32 %r3, %r2
    %r5 = add.u32 %r4, %r3
    %r6 = mul.u32 %r5, %r4
    %r7 = add.u32 %r6, %r5
    %r8 = mul.u32 %r7, %r6
    %r9 = add.u32 %r8, %r7
    %r10 = add.u32 %r9, %r1
    %m = sub.u32 %n, 1
    %r = call.fn0 %m, %sp
    %r = add.u32 %r, %r10
    return
}
}
";

    #[test]
    fn a_call_saves_only_the_registers_live_after_it() {
        let mut k = crate::text::parse(LIVE).expect("parses").remove(0);
        crate::pass::inline::run(&mut k).expect("runs");
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        let saved: Vec<String> = k
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter_map(|i| match &i.kind {
                InstKind::Store { space: Space::Local, srcs, .. } => match srcs.as_slice() {
                    [Value::Reg(r)] => Some(k.reg(*r).name.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        // The continuation id is an immediate; %r10 and the save area's own address.
        assert_eq!(saved.len(), 2, "saved: {saved:?}");
        assert!(saved.contains(&"%r10".to_string()), "saved: {saved:?}");
    }
}
