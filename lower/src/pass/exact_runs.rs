//! Pass: exact runs. The exact f32 `fma.rn`, `div.rn`, `rcp.rn` and `sqrt.rn` of a run
//! of register arithmetic and loads share one branch to their exact paths, in place of
//! one branch per instruction.
//!
//! Why: each f32 fast path ([`Routine::NearestF32`], `crate::routines`' `fast_f32`)
//! selects between its result and the exact path with a branch. On Mesa 25's lavapipe
//! each such branch costs even when no lane takes it: gallivm's divergent `if` pushes
//! and pops the execution mask, tests whether any lane is active, and merges the
//! values written in the arm. One branch per run took `matmul_naive` from 0.65 to 0.75
//! of its GLSL and `matmul_tiled` from 0.77 to 0.87 (`docs/benchmarks.md`, *Where the
//! exact float time goes*).
//!
//! How: a *site* is a call of [`Routine::NearestF32`] ([`super::emulate`] makes every
//! exact f32 operation to nearest one). A *run* is a stretch of one block's instructions
//! that compute registers from registers and memory (register arithmetic, calls of
//! emulation routines, and weak loads) and store to global memory, from its first site
//! to its last, holding at least two sites. The block is split around it:
//! 1. the run's registers that it reads before writing them and writes later (its
//!    overwritten inputs) are copied to fresh registers;
//! 2. the run follows with each site's fast path in place of the site (a call of
//!    [`Routine::FastF32`]): its candidate is written to the site's register, and its
//!    test's failure is ORed into one predicate, the flag; its stores are deferred
//!    (below); the block ends with a branch on the flag;
//! 3. where the flag holds, a new block restores the copied inputs and runs the whole
//!    run again with each site's exact path (a call of its routine, [`F32Op::exact`]),
//!    in program order, so that later sites and every other instruction recompute from
//!    exact operands;
//! 4. both paths go on in a new block that makes the deferred stores, in program order,
//!    then holds the rest of the block and its terminator. `structurize` makes the
//!    branch an `if`.
//!
//! Anything else ends a run: an atomic, fence or barrier, a call that is not an emulation
//! routine, a special register, control flow (so also the tests that checked and confined
//! launches put around memory accesses, [`super::check`]). Only the kernel's blocks have
//! runs, not its routines'.
//!
//! Running a run again gives the values it would have given had it run once, at the
//! time of the second pass: it has no atomic, fence, barrier or special register, its
//! stores are not made before the second pass is over, and a weak load run again may
//! read a newer value, as the same load made at that later time could (PTX ISA 9.2 §8:
//! weak loads are ordered by nothing but the fences, barriers and strong operations
//! that end a run); every register the run writes is written again from those values.
//!
//! *Stores.* A store between the run's sites would make a result that a second pass
//! may replace visible to other threads (a racing load must read a value some store
//! wrote, PTX ISA 9.2 §8.7.2 and §8.10), so a run defers its stores to its end: each
//! pass writes each stored element's address and value to registers of its own, the
//! same registers in both passes, and a later load of the run takes, for each element,
//! the value of the latest deferred store at the same address instead of memory's
//! (selects after the load). That is the value the thread's own program order gives;
//! the only stores delayed are weak ones, past weak loads and register arithmetic,
//! which no other thread can tell from the order written (no fence, barrier or strong
//! operation lies between). So that an address compares as equal exactly where the
//! accesses overlap, a run defers only global stores of 32 or 64 bits and holds no
//! global load of another width after one (PTX ISA 9.2 §6.4.1: addresses are naturally
//! aligned), no global access whose address has another form after one (a 32-bit
//! offset into the address window of a module with 32-bit addresses, or a 64-bit
//! address, [`AddressForm`]), and no parameter load after one; shared and local memory
//! are other memories than global, and a global location has one address (PTX ISA 9.2
//! §8.2.2 allows aliases; ptxvk's global memory is Vulkan buffer device addresses, one
//! per byte, and maps no allocation twice).
//!
//! Where no test fails, every site's fast result is the correctly rounded one
//! (`fast_f32`'s module doc), so the run wrote what the instructions give one by one;
//! where one fails, the second pass writes that. Both paths are correctly rounded, so
//! which one an invocation takes is invisible. On a SIMD device the second pass is
//! skipped unless some invocation of the group needs it, which is as rare as a single
//! site's exact path (almost never on lavapipe, whose f32 division and square root are
//! correctly rounded).
//!
//! The registers the passes share (the copies, the flag, the deferred addresses and
//! values) are the emitter's `Function` variables, which the driver promotes to SSA
//! values (Mesa's `nir_lower_vars_to_ssa`): the merge block's reads of the deferred
//! stores become phis of the two passes' values.
//!
//! Pre: CFG IR after [`super::emulate`] (every exact f32 operation to nearest is a call
//! of [`Routine::NearestF32`], each routine a function of the kernel).
//!
//! Post: the same, with each run's sites calls of [`Routine::FastF32`] and of the
//! exact routines in two blocks as above; every other block unchanged.

use std::collections::BTreeSet;

use ptxvk_frontend::Span;

use super::hoist_params::op_ty;
use crate::build::{Build, Builder};
use crate::ir::{
    Address, BinaryOp, Block, BlockId, BoolOp, CmpOp, F32Op, FloatMode, FunctionId, Inst, InstKind,
    Kernel, OpTy, RegId, Routine, Space, Terminator, Value,
};
use crate::routines;
use crate::verify::inst_defs_uses;

const U64: OpTy = OpTy::U(64);
const U32: OpTy = OpTy::U(32);

/// Groups the exact runs of every block of the kernel (module doc).
pub fn run(k: &mut Kernel) {
    for b in 0..k.blocks.len() {
        let runs = exact_runs(k, &k.blocks[b].insts);
        let (mut block, mut at) = (BlockId(b as u32), 0);
        for (start, end) in runs {
            block = split(k, block, start - at, end - at);
            at = end;
        }
    }
}

/// How many runs the kernel's blocks hold (none after [`run`]).
pub fn count(k: &Kernel) -> usize {
    k.blocks.iter().map(|b| exact_runs(k, &b.insts).len()).sum()
}

/// The operation of `kind` if it is a site: a call of [`Routine::NearestF32`].
fn site(k: &Kernel, kind: &InstKind) -> Option<F32Op> {
    let InstKind::Call { callee, results, .. } = kind else { return None };
    match k.functions.get(callee.index()).and_then(|f| f.routine) {
        Some(Routine::NearestF32(op)) if results.len() == 1 => Some(op),
        _ => None,
    }
}

/// How a global address is compared (module doc, *Stores*): the type of the value
/// [`address_into`] computes for it, a 32-bit offset into the address window (a
/// module with 32-bit addresses and an address of none or a 32-bit register, as the
/// emitter adds the window's base to it) or a 64-bit address.
type AddressForm = OpTy;

fn address_form(k: &Kernel, addr: &Address) -> AddressForm {
    let narrow = addr.base.is_none_or(|r| k.reg(r).ty.bits() == 32);
    if k.address_size == 32 && narrow {
        U32
    } else {
        U64
    }
}

/// The runs of `insts` as `(start, end)` ranges: each stretch of instructions that
/// may run again, from its first site to its last, where it holds two or more.
fn exact_runs(k: &Kernel, insts: &[Inst]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut stretch = Stretch::default();
    for (i, inst) in insts.iter().enumerate() {
        if !stretch.admits(k, &inst.kind) {
            stretch.close(&mut runs);
            if !stretch.admits(k, &inst.kind) {
                continue;
            }
        }
        if site(k, &inst.kind).is_some() {
            stretch.sites = Some(match stretch.sites {
                Some((first, _, n)) => (first, i, n + 1),
                None => (i, i, 1),
            });
        }
    }
    stretch.close(&mut runs);
    runs
}

/// A stretch of instructions being grown into a run ([`exact_runs`]).
#[derive(Default)]
struct Stretch {
    /// Its first site, last site and number of sites.
    sites: Option<(usize, usize, usize)>,
    /// The width and address form of the global stores it defers (after its first
    /// site), if any.
    stores: Option<(u32, AddressForm)>,
}

impl Stretch {
    /// Whether `kind` may join the stretch (module doc, *Stores*): an instruction that
    /// may run again, a load that no deferred store can overlap in part, or a store
    /// the run can defer. Adds a deferred store's width and address form.
    fn admits(&mut self, k: &Kernel, kind: &InstKind) -> bool {
        match kind {
            InstKind::Load { space: Space::Global, ty, addr, .. } => {
                self.stores.is_none_or(|s| s == (ty.bits(), address_form(k, addr)))
            }
            InstKind::Load { space: Space::Param, .. } => self.stores.is_none(),
            InstKind::Load { space, .. } => *space != Space::Generic,
            InstKind::Store { space: Space::Global, ty, addr, .. }
                if self.sites.is_some() && matches!(ty.bits(), 32 | 64) =>
            {
                let store = (ty.bits(), address_form(k, addr));
                let fits = self.stores.is_none_or(|s| s == store);
                if fits {
                    self.stores = Some(store);
                }
                fits
            }
            kind => super::retry_regions::reruns(k, kind),
        }
    }

    /// Ends the stretch, keeping it from its first site to its last as a run if it
    /// holds two sites or more, and starts an empty one.
    fn close(&mut self, runs: &mut Vec<(usize, usize)>) {
        if let Some((first, last, n)) = self.sites {
            if n >= 2 {
                runs.push((first, last + 1));
            }
        }
        *self = Stretch::default();
    }
}

/// The registers `insts` read before writing them and write later: what running them
/// again needs restored.
fn overwritten_inputs(insts: &[Inst]) -> BTreeSet<RegId> {
    let (mut written, mut inputs) = (BTreeSet::new(), BTreeSet::new());
    for inst in insts {
        let (mut defs, mut uses) = (Vec::new(), Vec::new());
        inst_defs_uses(&inst.kind, &mut defs, &mut uses);
        inputs.extend(uses.into_iter().filter(|u| !written.contains(u)));
        written.extend(defs);
    }
    inputs.retain(|r| written.contains(r));
    inputs
}

/// A store a run defers: its type, address form, the registers of its address and
/// value, and the store's span.
#[derive(Clone, Copy)]
struct Deferred {
    ty: OpTy,
    form: AddressForm,
    addr: RegId,
    value: RegId,
    span: Span,
}

/// Which pass of a run is being written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// The fast paths, their failures ORed into the flag.
    Fast { flag: RegId },
    /// The exact paths.
    Exact,
}

/// The functions a run's sites call in either pass, by operation.
struct Callees(Vec<(F32Op, FunctionId, FunctionId)>);

impl Callees {
    /// [`Routine::FastF32`]'s function or the exact routine's, for `op`.
    fn of(&self, op: F32Op, pass: Pass) -> Option<FunctionId> {
        let &(_, fast, exact) = self.0.iter().find(|c| c.0 == op)?;
        Some(if pass == Pass::Exact { exact } else { fast })
    }
}

/// Splits the run `start..end` of `block`'s instructions out as the module doc says.
/// Returns the block after it, which holds the rest of `block`.
fn split(k: &mut Kernel, block: BlockId, start: usize, end: usize) -> BlockId {
    let mut insts = std::mem::take(&mut k.blocks[block.index()].insts);
    let rest = insts.split_off(end);
    let run = insts.split_off(start);
    let span = run[0].span;
    let mut callees = Callees(Vec::new());
    let ops: Vec<F32Op> = run.iter().filter_map(|i| site(k, &i.kind)).collect();
    for op in ops {
        if callees.of(op, Pass::Exact).is_none() {
            let fast = routines::get(k, Routine::FastF32(op));
            callees.0.push((op, fast, routines::get(k, op.exact())));
        }
    }
    let mut e = Builder::new(k, span);
    let saved: Vec<(RegId, RegId)> = overwritten_inputs(&run)
        .into_iter()
        .map(|r| {
            let ty = op_ty(e.kernel.reg(r).ty);
            let copy = e.temp(ty);
            e.mov(ty, copy, Value::Reg(r));
            (r, copy)
        })
        .collect();
    let deferred = deferred_registers(&mut e, &run);
    let flag = e.temp(OpTy::Pred);
    insts.append(&mut e.insts);
    insts.extend(rewritten(k, &run, Pass::Fast { flag }, &callees, &deferred));
    let mut again = Builder::new(k, span);
    for &(r, copy) in &saved {
        again.mov(op_ty(again.kernel.reg(r).ty), r, Value::Reg(copy));
    }
    let mut again = again.insts;
    again.extend(rewritten(k, &run, Pass::Exact, &callees, &deferred));
    let mut stores: Vec<Inst> = deferred
        .iter()
        .map(|d| {
            let addr = Address { base: Some(d.addr), offset: 0 };
            let srcs = vec![Value::Reg(d.value)];
            let kind = InstKind::Store { space: Space::Global, ty: d.ty, srcs, addr };
            Inst { kind, span: d.span }
        })
        .collect();
    stores.extend(rest);
    let (exact, merge) = (BlockId(k.blocks.len() as u32), BlockId(k.blocks.len() as u32 + 1));
    let b = &mut k.blocks[block.index()];
    b.insts = insts;
    let branch = Terminator::Branch { cond: flag, negate: false, if_true: exact, if_false: merge };
    let (term, term_span) = (std::mem::replace(&mut b.term, branch), b.term_span);
    b.term_span = span;
    let new_block = |insts, term, term_span| Block { label: None, span, insts, term, term_span };
    k.blocks.push(new_block(again, Terminator::Jump(merge), span));
    k.blocks.push(new_block(stores, term, term_span));
    merge
}

/// The registers of the stores `run` defers, one per stored element, in program order.
fn deferred_registers(e: &mut Builder<'_>, run: &[Inst]) -> Vec<Deferred> {
    let mut deferred = Vec::new();
    for inst in run {
        if let InstKind::Store { ty, srcs, addr, .. } = &inst.kind {
            let form = address_form(e.kernel, addr);
            for _ in srcs {
                let (addr, value) = (e.temp(form), e.temp(*ty));
                deferred.push(Deferred { ty: *ty, form, addr, value, span: inst.span });
            }
        }
    }
    deferred
}

/// `run` written for `pass`: its sites as the pass computes them, its global stores
/// deferred into the registers `deferred`, and its global loads after one taking the
/// latest deferred value at their address (module doc).
fn rewritten(
    k: &mut Kernel,
    run: &[Inst],
    pass: Pass,
    callees: &Callees,
    deferred: &[Deferred],
) -> Vec<Inst> {
    let (mut out, mut stored, mut first) = (Vec::new(), 0, true);
    for inst in run {
        let op = site(k, &inst.kind);
        let mut e = Builder::new(k, inst.span);
        match (&inst.kind, op.and_then(|op| callees.of(op, pass))) {
            (InstKind::Call { args, results, .. }, Some(callee)) => {
                let args = args.clone();
                match pass {
                    Pass::Exact => {
                        e.push(InstKind::Call { callee, args, results: results.clone() })
                    }
                    Pass::Fast { flag } => {
                        fast_site(&mut e, callee, args, results[0], flag, first);
                        first = false;
                    }
                }
            }
            (InstKind::Store { ty, srcs, addr, .. }, _) => {
                for (i, &src) in srcs.iter().enumerate() {
                    let d = deferred[stored];
                    address_into(&mut e, d.form, addr, element_offset(*ty, i), d.addr);
                    e.mov(*ty, d.value, src);
                    stored += 1;
                }
            }
            (InstKind::Load { space: Space::Global, ty, dsts, addr }, _) if stored > 0 => {
                let form = address_form(e.kernel, addr);
                let at: Vec<(RegId, RegId)> = (dsts.iter().enumerate())
                    .filter_map(|(i, d)| {
                        let d = (*d)?;
                        let a = e.temp(form);
                        address_into(&mut e, form, addr, element_offset(*ty, i), a);
                        Some((d, a))
                    })
                    .collect();
                e.push(inst.kind.clone());
                for (dst, a) in at {
                    for d in &deferred[..stored] {
                        let same = e.cmp(CmpOp::Eq, form, Value::Reg(a), Value::Reg(d.addr));
                        let (a, b) = (Value::Reg(d.value), Value::Reg(dst));
                        e.push(InstKind::Select { ty: *ty, dst, a, b, cond: same, negate: false });
                    }
                }
            }
            (kind, _) => e.push(kind.clone()),
        }
        out.append(&mut e.insts);
    }
    out
}

/// A site's fast path: `FastF32`'s result (the function `callee`) on `args`, its low
/// word into `dst` and its failure (the high word not zero) into `flag`, ORed with the
/// failures before unless it is the `first` site.
fn fast_site(
    e: &mut Builder<'_>,
    callee: FunctionId,
    args: Vec<Value>,
    dst: RegId,
    flag: RegId,
    first: bool,
) {
    let packed = e.temp(U64);
    e.push(InstKind::Call { callee, args, results: vec![packed] });
    let (rounding, mode, src) = (None, FloatMode::default(), Value::Reg(packed));
    e.push(InstKind::Convert { to: U32, from: U64, rounding, mode, dst, src });
    // The high word compared with zero, not the whole result with 2^32: the driver
    // inlines `FastF32`, whose result is `u64(q) | (failed ? 2^32 : 0)`, and folds the
    // high word back to `failed`; the 64-bit compare made `matmul_naive` 10% slower
    // on Mesa 25's lavapipe (`cargo bench --bench suite`).
    let high = e.bin(BinaryOp::Shr, U64, src, Value::Imm(32));
    if first {
        e.cmp_into(flag, CmpOp::Ne, U64, high, Value::Imm(0));
    } else {
        let failed = e.cmp(CmpOp::Ne, U64, high, Value::Imm(0));
        e.push(InstKind::PredLogic { op: BoolOp::Or, dst: flag, lhs: flag, rhs: failed });
    }
}

/// The byte offset of element `i` of a vector access of `ty`.
fn element_offset(ty: OpTy, i: usize) -> i64 {
    i as i64 * i64::from(ty.bits() / 8)
}

/// `dst = addr + extra` in `form` ([`AddressForm`]): the value the emitter makes the
/// access's address of, but for the window's base.
fn address_into(e: &mut Builder<'_>, form: AddressForm, addr: &Address, extra: i64, dst: RegId) {
    let offset = addr.offset.wrapping_add(extra) as u64 & (u64::MAX >> (64 - form.bits()));
    let base = match addr.base {
        Some(r) if e.kernel.reg(r).ty.bits() < form.bits() => e.cvt(form, U32, Value::Reg(r)),
        base => base.map(Value::Reg).unwrap_or(Value::Imm(0)),
    };
    let mode = FloatMode::default();
    let (lhs, rhs) = (base, Value::Imm(offset));
    e.push(InstKind::Binary { op: BinaryOp::Add, ty: form, mode, dst, lhs, rhs });
}
