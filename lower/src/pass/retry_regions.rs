//! Pass: retry regions. The exact f64 `fma.rn` and `div.rn` of a run of register
//! arithmetic (calls of [`Routine::NearestF64`], which [`super::emulate`] makes on a
//! target with f64) share one call of each integer routine, in place of one per
//! instruction.
//!
//! Why: Mesa inlines every `OpFunctionCall` (NIR's `nir_inline_functions`), so each
//! `NearestF64`'s branch to [`Routine::FmaF64`] (416 instructions) or
//! [`Routine::DivF64`] (641) becomes a copy of the routine in the driver's compile: a
//! numba ufunc kernel of 108 `fma.rn.f64` took lavapipe's LLVM 15-20 s, nearly all of
//! it those copies (docs/benchmarks.md, *Compile speed and SPIR-V size*).
//!
//! How: a *retry region* is a run of instructions of one block that only compute
//! registers from registers (no memory, no special registers, no other thread: each
//! gives the same result when run again on the same registers; [`reruns`]) and that
//! reads no register it writes before writing it, so that running the run again from
//! its start recomputes the same values. With two or more sites (`NearestF64` calls) in
//! it, the run becomes a loop. Each pass calls every site's fast path
//! ([`Routine::FastF64`], [`F64Op::FAILED`] where its guard fails); a site whose
//! routine result is known from an earlier pass takes it instead. The first site whose
//! guard fails without a known result records its operands; the pass's end calls the
//! routine once for them (the one call of each routine in the region) and, if a site
//! was recorded, runs the region again. A pass with no site recorded wrote every
//! register from fast paths whose guard held or from routine results: the same values
//! the instructions give one by one, so the choice is invisible (the fast paths and the
//! routines are both correctly rounded). Sites after a recorded one may compute from
//! wrong operands in that pass; they write only registers, which the next pass writes
//! again. A region of k sites runs at most k + 1 passes, and one where no guard fails
//! (almost all operands) one; on a SIMD device the call is skipped unless some
//! invocation recorded a site. As blocks (`j` each site, `op` its operation):
//!
//! ```text
//! before: the block's instructions before the run; known_j = false, value_j = 0
//! pass:   site = NONE, div = 0, a = b = c = 0
//!         the run, each site j (dst = NearestF64(op)(x)) as
//!             fast = FastF64(op)(x); failed = fast == FAILED
//!             record = failed && !known_j && site == NONE
//!             site, div, a, b, c = record ? j, op is div, x : site, div, a, b, c
//!             dst = known_j ? value_j : fast
//!         branch site != NONE ? retry : after
//! retry:  slow = FmaF64(a, b, c) or DivF64(a, b) (by div where the run has both)
//!         each j: hit = site == j; value_j = hit ? slow : value_j; known_j |= hit
//!         jump pass
//! after:  the block's instructions after the run, its terminator
//! ```
//!
//! `crate::pass::structurize` makes `pass` a loop header and `retry`'s jump its back
//! edge.
//!
//! Pre: CFG IR after [`super::emulate`].
//!
//! Post: no run of instructions that [`reruns`] in a block holds two `NearestF64`
//! calls; each run that did is a loop of at most one pass per site and one, its calls
//! of [`Routine::FastF64`], [`Routine::FmaF64`] and [`Routine::DivF64`] (all
//! `NearestF64`'s callees, functions of the kernel).

use std::collections::BTreeSet;

use ptxvk_frontend::Span;

use crate::build::{Build, Builder};
use crate::ir::{
    Block, BlockId, BoolOp, CmpOp, F64Op, Inst, InstKind, Kernel, OpTy, RegId, Routine, Terminator,
    Value,
};
use crate::verify::inst_defs_uses;

const U64: OpTy = OpTy::U(64);
const U32: OpTy = OpTy::U(32);
/// "No site recorded" in a pass's recorded-site index.
const NONE: u64 = u32::MAX as u64;

/// Makes every retry region of the kernel's blocks a loop (module doc).
pub fn run(k: &mut Kernel) {
    // The blocks a region's split adds (the rest of its block last) are visited too.
    let mut b = 0;
    while b < k.blocks.len() {
        if let Some((start, end)) = first_region(k, &k.blocks[b].insts) {
            split(k, b, start, end);
        }
        b += 1;
    }
}

/// Whether running `inst` again on the same registers gives the same registers:
/// register arithmetic and calls of the emulation routines (pure functions). Also the
/// test of what [`super::exact_runs`] may run again.
pub fn reruns(k: &Kernel, kind: &InstKind) -> bool {
    match kind {
        InstKind::Call { callee, .. } => {
            k.functions.get(callee.index()).is_some_and(|f| f.routine.is_some())
        }
        kind => kind.is_register_arithmetic(),
    }
}

/// How many of the kernel's blocks hold a retry region (none after [`run`]).
pub fn count(k: &Kernel) -> usize {
    k.blocks.iter().filter(|b| first_region(k, &b.insts).is_some()).count()
}

/// The site `inst` is: a call of the f64 `fma.rn` or `div.rn` by its fast path.
fn site(k: &Kernel, inst: &Inst) -> Option<F64Op> {
    let InstKind::Call { callee, args, results } = &inst.kind else {
        return None;
    };
    match k.functions.get(callee.index()).and_then(|f| f.routine)? {
        Routine::NearestF64(op) if args.len() == op.arity() && results.len() == 1 => Some(op),
        _ => None,
    }
}

/// The first retry region of a block as an `(start, end)` instruction range: a maximal
/// run that may run again (module doc) holding at least two sites.
fn first_region(k: &Kernel, insts: &[Inst]) -> Option<(usize, usize)> {
    let mut run = Run::default();
    for (i, inst) in insts.iter().enumerate() {
        if !reruns(k, &inst.kind) {
            if let Some(region) = run.close(i) {
                return Some(region);
            }
            continue;
        }
        let site = site(k, inst).is_some();
        if !run.admits(inst, i, site) {
            if let Some(region) = run.close(i) {
                return Some(region);
            }
            if !run.admits(inst, i, site) {
                // It reads what it writes: it runs once, outside any region.
                run = Run::default();
            }
        }
    }
    run.close(insts.len())
}

/// The loop-carried registers of a region (module doc).
struct Carried {
    /// Per site: whether its routine result is known, and the result.
    known: Vec<RegId>,
    value: Vec<RegId>,
    /// The recorded site's index (or [`NONE`]), whether it is a division (0 or 1), and
    /// its operands.
    site: RegId,
    div: RegId,
    ops: [RegId; 3],
}

/// Makes instructions `start..end` of block `b`, a retry region, the loop of the module
/// doc.
fn split(k: &mut Kernel, b: usize, start: usize, end: usize) {
    let (span, term_span) = (k.blocks[b].span, k.blocks[b].term_span);
    let mut insts = std::mem::take(&mut k.blocks[b].insts);
    let after = insts.split_off(end);
    let run = insts.split_off(start);
    let term = std::mem::replace(&mut k.blocks[b].term, Terminator::Return);
    let ops: Vec<F64Op> = run.iter().filter_map(|i| site(k, i)).collect();
    let both = ops.contains(&F64Op::Fma) && ops.contains(&F64Op::Div);
    // The new blocks, after the kernel's: pass, retry, (fma, div, join,) after.
    let first = k.blocks.len() as u32;
    let (pass, retry) = (BlockId(first), BlockId(first + 1));
    let after_id = BlockId(first + if both { 5 } else { 2 });
    let mut e = Builder::new(k, span);
    let c = Carried {
        known: ops.iter().map(|_| e.temp(OpTy::Pred)).collect(),
        value: ops.iter().map(|_| e.temp(U64)).collect(),
        site: e.temp(U32),
        div: e.temp(U32),
        ops: [e.temp(U64), e.temp(U64), e.temp(U64)],
    };
    for (&known, &value) in c.known.iter().zip(&c.value) {
        e.mov(OpTy::Pred, known, Value::Imm(0));
        e.mov(U64, value, Value::Imm(0));
    }
    insts.append(&mut e.insts);
    k.blocks[b].insts = insts;
    k.blocks[b].term = Terminator::Jump(pass);
    // pass: the run, its sites' fast paths, the recorded site.
    let mut e = Builder::new(k, span);
    e.mov(U32, c.site, Value::Imm(NONE));
    e.mov(U32, c.div, Value::Imm(0));
    for &r in &c.ops {
        e.mov(U64, r, Value::Imm(0));
    }
    let mut j = 0;
    for inst in run {
        let is_site = site(e.kernel, &inst).is_some();
        match inst.kind {
            InstKind::Call { args, results, .. } if is_site => {
                e.span = inst.span;
                pass_site(&mut e, &c, j, ops[j], args, results[0]);
                j += 1;
            }
            _ => e.insts.push(inst),
        }
    }
    e.span = span;
    let any = e.cmp(CmpOp::Ne, U32, Value::Reg(c.site), Value::Imm(NONE));
    let insts = std::mem::take(&mut e.insts);
    let branch =
        Terminator::Branch { cond: any, negate: false, if_true: retry, if_false: after_id };
    push_block(e.kernel, span, insts, branch, term_span);
    // retry: one call of each routine, for the recorded site.
    let slow = e.temp(U64);
    let operands = |op: F64Op| c.ops[..op.arity()].iter().map(|&r| Value::Reg(r)).collect();
    if both {
        let is_div = e.cmp(CmpOp::Ne, U32, Value::Reg(c.div), Value::Imm(0));
        let (fma_b, div_b, join) = (BlockId(first + 2), BlockId(first + 3), BlockId(first + 4));
        let insts = std::mem::take(&mut e.insts);
        let branch =
            Terminator::Branch { cond: is_div, negate: false, if_true: div_b, if_false: fma_b };
        push_block(e.kernel, span, insts, branch, term_span);
        for op in [F64Op::Fma, F64Op::Div] {
            call(&mut e, op.exact(), operands(op), slow);
            let insts = std::mem::take(&mut e.insts);
            push_block(e.kernel, span, insts, Terminator::Jump(join), term_span);
        }
    } else {
        call(&mut e, ops[0].exact(), operands(ops[0]), slow);
    }
    for (j, (&known, &value)) in c.known.iter().zip(&c.value).enumerate() {
        let hit = e.cmp(CmpOp::Eq, U32, Value::Reg(c.site), Value::Imm(j as u64));
        let (a, b) = (Value::Reg(slow), Value::Reg(value));
        e.push(InstKind::Select { ty: U64, dst: value, a, b, cond: hit, negate: false });
        e.push(InstKind::PredLogic { op: BoolOp::Or, dst: known, lhs: known, rhs: hit });
    }
    let insts = std::mem::take(&mut e.insts);
    push_block(e.kernel, span, insts, Terminator::Jump(pass), term_span);
    // after: the rest of the block.
    debug_assert_eq!(k.blocks.len() as u32, after_id.0);
    push_block(k, span, after, term, term_span);
}

/// Site `j` (`dst = NearestF64(op)(args)`) in a pass (module doc).
fn pass_site(e: &mut Builder<'_>, c: &Carried, j: usize, op: F64Op, args: Vec<Value>, dst: RegId) {
    let fast = e.temp(U64);
    call(e, Routine::FastF64(op), args.clone(), fast);
    let failed = e.cmp(CmpOp::Eq, U64, Value::Reg(fast), Value::Imm(F64Op::FAILED));
    let known = c.known[j];
    let unknown = e.temp(OpTy::Pred);
    e.push(InstKind::PredNot { dst: unknown, src: known });
    let free = e.cmp(CmpOp::Eq, U32, Value::Reg(c.site), Value::Imm(NONE));
    let record = e.pred_and(failed, unknown);
    let record = e.pred_and(record, free);
    let select = |e: &mut Builder<'_>, ty, dst: RegId, a| {
        e.push(InstKind::Select { ty, dst, a, b: Value::Reg(dst), cond: record, negate: false })
    };
    select(e, U32, c.site, Value::Imm(j as u64));
    select(e, U32, c.div, Value::Imm(u64::from(op == F64Op::Div)));
    for (&r, a) in c.ops.iter().zip(args) {
        select(e, U64, r, a);
    }
    // Last: `dst` may be one of the operands recorded above.
    let (a, b) = (Value::Reg(c.value[j]), Value::Reg(fast));
    e.push(InstKind::Select { ty: U64, dst, a, b, cond: known, negate: false });
}

/// A call of routine `r` (a function of the kernel, or added) on `args` into `dst`.
fn call(e: &mut Builder<'_>, r: Routine, args: Vec<Value>, dst: RegId) {
    let callee = crate::routines::get(e.kernel, r);
    e.push(InstKind::Call { callee, args, results: vec![dst] });
}

fn push_block(k: &mut Kernel, span: Span, insts: Vec<Inst>, term: Terminator, term_span: Span) {
    k.blocks.push(Block { label: None, span, insts, term, term_span });
}

/// A run of instructions being grown into a retry region.
#[derive(Default)]
struct Run {
    start: usize,
    len: usize,
    sites: usize,
    written: BTreeSet<RegId>,
    /// Registers the run reads before writing them (its inputs).
    inputs: BTreeSet<RegId>,
}

impl Run {
    /// Adds `inst` (at `i`) unless it would write one of the run's inputs (then the
    /// run could not run again); a refused one leaves the run as it was.
    fn admits(&mut self, inst: &Inst, i: usize, site: bool) -> bool {
        let (mut defs, mut uses) = (Vec::new(), Vec::new());
        inst_defs_uses(&inst.kind, &mut defs, &mut uses);
        let new_inputs: Vec<RegId> =
            uses.into_iter().filter(|u| !self.written.contains(u)).collect();
        if defs.iter().any(|d| self.inputs.contains(d) || new_inputs.contains(d)) {
            return false;
        }
        if self.len == 0 {
            self.start = i;
        }
        self.inputs.extend(new_inputs);
        self.written.extend(defs);
        self.len += 1;
        self.sites += usize::from(site);
        true
    }

    /// Ends the run before `i`: the region `(start, i)` if it holds two sites or more;
    /// starts an empty run.
    fn close(&mut self, i: usize) -> Option<(usize, usize)> {
        let region = (self.sites >= 2).then_some((self.start, i));
        *self = Run::default();
        region
    }
}
