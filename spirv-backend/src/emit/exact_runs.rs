//! Exact runs: the exact f32 `fma.rn`, `div.rn`, `rcp.rn` and `sqrt.rn` of a run of
//! register arithmetic and loads share one branch to their exact paths, in place of one
//! branch per instruction.
//!
//! Why: each f32 fast path (`Routine::NearestF32`, `lower/src/routines/fast_f32.rs`)
//! selects between its result and the exact path with a branch. On Mesa 25's lavapipe
//! each such branch costs even when no lane takes it: gallivm's divergent `if` pushes
//! and pops the execution mask, tests whether any lane is active, and merges the
//! values written in the arm. One branch per run took `matmul_naive` from 0.65 to 0.75
//! of its GLSL and `matmul_tiled` from 0.77 to 0.87 (`docs/benchmarks.md`, *Where the
//! exact float time goes*).
//!
//! How: a *run* is a stretch of one block's instructions that compute registers from
//! registers and memory ([`FnEmitter::reruns`], and weak loads) and store to global
//! memory, from its first site to its last, holding at least two sites. So:
//! 1. the run's registers that it reads before writing them and writes later (its
//!    overwritten inputs) are saved;
//! 2. the run is emitted with each site's fast path in place of the site (a call of
//!    `Routine::FastF32`): its candidate is written to the site's register, and its
//!    test's failure is ORed into one flag; its stores are deferred (below);
//! 3. one selection on the flag restores the saved inputs and runs the whole run
//!    again with each site's exact path (a call of its routine, `F32Op::exact`), in
//!    program order,
//!    so that later sites and every other instruction recompute from exact operands;
//! 4. after the selection, the deferred stores of the pass the invocation took are
//!    made, in program order.
//!
//! Anything else ends a run: an atomic, fence or barrier, a call that is not an emulation
//! routine, a special register, control flow (so also the tests that checked and confined
//! launches put around memory accesses, `pass::check`).
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
//! wrote, PTX ISA 9.2 §8.7.2 and §8.10), so a run defers its stores to its end: the
//! pass keeps each stored element's address and value, and a later load of the run
//! reads, for each element, the value of the latest deferred store at the same address
//! instead of memory's. That is the value the thread's own program order gives; the
//! only stores delayed are weak ones, past weak loads and register arithmetic, which
//! no other thread can tell from the order written (no fence, barrier or strong
//! operation lies between). So that an address compares as equal exactly where the
//! accesses overlap, a run defers only global stores of 32 or 64 bits and holds
//! no global load of another width after one (PTX ISA 9.2 §6.4.1: addresses are naturally
//! aligned), and no parameter load after one; shared and local memory are other
//! memories than global, and a global location has one address (PTX ISA 9.2 §8.2.2
//! allows aliases; ptxvk's global memory is Vulkan buffer device addresses, one per
//! byte, and maps no allocation twice).
//!
//! Where no test fails, every site's fast result is the correctly rounded one
//! (`lower/src/routines/fast_f32.rs`), so the run wrote what the instructions give one
//! by one; where one fails, the second pass writes that. Both paths are correctly
//! rounded, so which one an invocation takes is invisible. On a SIMD device the second
//! pass is skipped unless some invocation of the group needs it, which is as rare as a
//! single site's exact path (almost never on lavapipe, whose f32 division and square
//! root are correctly rounded).

use std::collections::BTreeSet;

use rspirv::dr::Operand;
use rspirv::spirv::{MemoryAccess, SelectionControl, Word};

use ptxvk_lower::ir::{
    Address, BinaryOp, F32Op, FloatPath, Inst, InstKind, OpTy, RegId, Rounding, Routine, Space,
    UnaryOp, Value,
};
use ptxvk_lower::pass::FloatConstants;
use ptxvk_lower::verify::inst_defs_uses;

use super::helpers::Helper;
use super::{FnEmitter, R};
use crate::types::Scalar;

/// A store a run defers: its type, 64-bit address and value.
pub(super) type Deferred = (OpTy, Word, Word);

/// How the sites of the run being emitted are computed.
#[derive(Clone, Copy, Debug)]
pub(super) enum RunPass {
    /// The fast paths; the OR of their tests' failures so far (`None` before the
    /// first site).
    Fast(Option<Word>),
    /// The exact paths.
    Exact,
}

impl FnEmitter<'_> {
    /// The instructions of a stretch of a block outside the f64 retry regions, with
    /// their exact runs (module doc).
    pub(super) fn code_with_runs(&mut self, insts: &[Inst]) -> R<()> {
        let runs = if self.values.is_none() { self.exact_runs(insts) } else { Vec::new() };
        let mut at = 0;
        for (start, end) in runs {
            for inst in &insts[at..start] {
                self.inst(inst).map_err(|e| e.at(inst.span))?;
            }
            self.exact_run(&insts[start..end])?;
            at = end;
        }
        for inst in &insts[at..] {
            self.inst(inst).map_err(|e| e.at(inst.span))?;
        }
        Ok(())
    }

    /// `fma.rn.f32`'s [`F32Op`] on this target: with the sign of a zero sum repaired
    /// for a driver that was not probed (`FloatConstants::Repaired`).
    pub(super) fn fma_f32_op(&self) -> F32Op {
        F32Op::Fma { repaired: self.g.float_constants == FloatConstants::Repaired }
    }

    /// An exact f32 operation to nearest (`op` on `args`): a call of its routine
    /// ([`Routine::NearestF32`]: its fast path, else its exact routine), or inside a run
    /// the pass's path (module doc). `pass::emulate` made those with a directed
    /// `rounding` calls of routines.
    pub(super) fn exact_f32(&mut self, op: F32Op, rounding: Rounding, args: &[Word]) -> R<Word> {
        if rounding != Rounding::Nearest {
            return Err(crate::Error::Internal(format!("{op:?} {rounding:?} left by emulate")));
        }
        if args.len() != op.arity() {
            return Err(crate::Error::Internal(format!("{op:?} of {} operands", args.len())));
        }
        let before = match self.run {
            None => return self.f32_routine(Routine::NearestF32(op), args),
            Some(RunPass::Exact) => return self.f32_routine(op.exact(), args),
            Some(RunPass::Fast(before)) => before,
        };
        // The fast path's result and failure, unpacked (`Routine::FastF32`).
        let (i64s, it) = (Scalar::Int(64), self.ty(Scalar::Int(32)));
        let (lt, ft, bt) = (self.ty(i64s), self.ty(Scalar::Float(32)), self.ty(Scalar::Bool));
        let packed = self.call_on_bits(Routine::FastF32(op), args)?;
        let low = self.b.u_convert(it, None, packed)?;
        let fast = self.b.bitcast(ft, None, low)?;
        let k32 = self.konst(Scalar::Int(32), 32);
        let high = self.b.shift_right_logical(lt, None, packed, k32)?;
        let zero = self.konst(i64s, 0);
        let slow = self.b.i_not_equal(bt, None, high, zero)?;
        let failed = match before {
            Some(before) => self.b.logical_or(bt, None, before, slow)?,
            None => slow,
        };
        self.run = Some(RunPass::Fast(Some(failed)));
        Ok(fast)
    }

    /// A call of the f32 routine `r` (f32 bit patterns in and out) on the f32 values
    /// `args`.
    fn f32_routine(&mut self, r: Routine, args: &[Word]) -> R<Word> {
        let ft = self.ty(Scalar::Float(32));
        let r = self.call_on_bits(r, args)?;
        Ok(self.b.bitcast(ft, None, r)?)
    }

    /// A call of routine `r` on the bit patterns of the f32 values `args`.
    fn call_on_bits(&mut self, r: Routine, args: &[Word]) -> R<Word> {
        let it = self.ty(Scalar::Int(32));
        let bits =
            args.iter().map(|&a| self.b.bitcast(it, None, a)).collect::<Result<Vec<_>, _>>()?;
        self.call(Helper::Routine(r), &bits)
    }

    /// A load of `dsts.len()` consecutive elements. In a run, a global element at the
    /// address of a store the run defers takes that store's value, the latest one's
    /// (module doc, *Stores*).
    pub(super) fn load(
        &mut self,
        space: Space,
        ty: OpTy,
        dsts: &[Option<RegId>],
        addr: &Address,
    ) -> R<()> {
        let s = Scalar::of_op(ty);
        for (i, d) in dsts.iter().enumerate() {
            let off = i as i64 * (ty.bits() / 8) as i64;
            let mut v = self.load_mem(space, ty, addr, off)?;
            if space == Space::Global && !self.deferred.is_empty() {
                let (vt, bt) = (self.ty(s), self.ty(Scalar::Bool));
                let a = self.address64(space, addr, off)?;
                for k in 0..self.deferred.len() {
                    let (dty, da, dv) = self.deferred[k];
                    if dty.bits() != ty.bits() {
                        return Err(crate::Error::Internal("a run's load of another width".into()));
                    }
                    let same = self.b.i_equal(bt, None, a, da)?;
                    let dv =
                        if Scalar::of_op(dty) == s { dv } else { self.b.bitcast(vt, None, dv)? };
                    v = self.b.select(vt, None, same, dv, v)?;
                }
            }
            if let Some(d) = d {
                self.write_op(*d, v, ty)?;
            }
        }
        Ok(())
    }

    /// A store in a run: its addresses and values, kept for the end of the run (module
    /// doc, *Stores*).
    pub(super) fn run_store(
        &mut self,
        space: Space,
        ty: OpTy,
        srcs: &[Value],
        addr: &Address,
    ) -> R<()> {
        if space != Space::Global {
            return Err(crate::Error::Internal("a run's store outside global memory".into()));
        }
        for (i, s) in srcs.iter().enumerate() {
            let off = i as i64 * (ty.bits() / 8) as i64;
            let a = self.address64(space, addr, off)?;
            let v = self.read_op(*s, ty)?;
            self.deferred.push((ty, a, v));
        }
        Ok(())
    }

    /// Whether `inst` is a site: an f32 operation that [`Self::exact_f32`] computes to
    /// nearest by a fast path (`Routine::FastF32`).
    fn f32_site(inst: &Inst) -> bool {
        let f64_path = |path| path == FloatPath::F64;
        match &inst.kind {
            InstKind::Fma { ty: OpTy::F(32), mode, .. } => f64_path(mode.path),
            InstKind::Binary { op: BinaryOp::Div, ty: OpTy::F(32), mode, .. }
            | InstKind::Unary { op: UnaryOp::Sqrt | UnaryOp::Rcp, ty: OpTy::F(32), mode, .. } => {
                f64_path(mode.path) && mode.rounding == Rounding::Nearest
            }
            _ => false,
        }
    }

    /// The runs of `insts` as `(start, end)` ranges: each stretch of instructions that
    /// may run again, from its first site to its last, where it holds two or more.
    fn exact_runs(&self, insts: &[Inst]) -> Vec<(usize, usize)> {
        let mut runs = Vec::new();
        let mut stretch = Stretch::default();
        for (i, inst) in insts.iter().enumerate() {
            if !stretch.admits(self, inst) {
                stretch.close(&mut runs);
                if !stretch.admits(self, inst) {
                    continue;
                }
            }
            if Self::f32_site(inst) {
                stretch.sites = Some(match stretch.sites {
                    Some((first, _, n)) => (first, i, n + 1),
                    None => (i, i, 1),
                });
            }
        }
        stretch.close(&mut runs);
        runs
    }

    /// Emits `insts`, a run, as the module doc says.
    fn exact_run(&mut self, insts: &[Inst]) -> R<()> {
        let saved = overwritten_inputs(insts)
            .into_iter()
            .map(|r| Ok((r, self.load_reg(r)?.0)))
            .collect::<R<Vec<_>>>()?;
        let fast = self.run_pass(RunPass::Fast(None), insts)?;
        let Some(RunPass::Fast(Some(failed))) = fast.0 else {
            return Err(crate::Error::Internal("an exact run without a site".into()));
        };
        let (first, again, merge) = (self.current_label()?, self.b.id(), self.b.id());
        self.b.selection_merge(merge, SelectionControl::NONE)?;
        self.b.branch_conditional(failed, again, merge, [])?;
        self.b.begin_block(Some(again))?;
        for (r, v) in saved {
            self.b.store(self.vars[r.index()], v, None, [])?;
        }
        let exact = self.run_pass(RunPass::Exact, insts)?;
        let second = self.current_label()?;
        self.b.branch(merge)?;
        self.b.begin_block(Some(merge))?;
        // The deferred stores, in program order, of the pass each invocation took (the
        // phis first: SPIR-V §2.4 puts them at the start of their block).
        let lt = self.ty(Scalar::Int(64));
        let mut stores = Vec::new();
        for (&(ty, a1, v1), &(_, a2, v2)) in fast.1.iter().zip(&exact.1) {
            let vt = self.ty(Scalar::of_op(ty));
            let a = self.b.phi(lt, None, [(a1, first), (a2, second)])?;
            let v = self.b.phi(vt, None, [(v1, first), (v2, second)])?;
            stores.push((ty, a, v));
        }
        for (ty, a, v) in stores {
            let (p, _) = self.psb_pointer(ty, a)?;
            let align = Operand::LiteralBit32(ty.bits() / 8);
            self.b.store(p, v, Some(MemoryAccess::ALIGNED), [align])?;
        }
        Ok(())
    }

    /// One pass of a run: `insts` emitted with the sites computed as `pass` says. Returns
    /// the pass's state at its end and its deferred stores.
    fn run_pass(&mut self, pass: RunPass, insts: &[Inst]) -> R<(Option<RunPass>, Vec<Deferred>)> {
        self.run = Some(pass);
        let emitted =
            insts.iter().try_for_each(|inst| self.inst(inst).map_err(|e| e.at(inst.span)));
        let end = self.run.take();
        let deferred = std::mem::take(&mut self.deferred);
        emitted?;
        Ok((end, deferred))
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

/// A stretch of instructions being grown into a run ([`FnEmitter::exact_runs`]).
#[derive(Default)]
struct Stretch {
    /// Its first site, last site and number of sites.
    sites: Option<(usize, usize, usize)>,
    /// The width of the global stores it defers (after its first site), if any.
    stores: Option<u32>,
}

impl Stretch {
    /// Whether `inst` may join the stretch (module doc, *Stores*): an instruction that
    /// may run again, a load that no deferred store can overlap in part, or a store
    /// the run can defer. Adds a deferred store's width.
    fn admits(&mut self, e: &FnEmitter<'_>, inst: &Inst) -> bool {
        match &inst.kind {
            InstKind::Load { space: Space::Global, ty, .. } => {
                self.stores.is_none_or(|w| w == ty.bits())
            }
            InstKind::Load { space: Space::Param, .. } => self.stores.is_none(),
            InstKind::Load { space, .. } => *space != Space::Generic,
            InstKind::Store { space: Space::Global, ty, .. }
                if self.sites.is_some() && matches!(ty.bits(), 32 | 64) =>
            {
                let fits = self.stores.is_none_or(|w| w == ty.bits());
                if fits {
                    self.stores = Some(ty.bits());
                }
                fits
            }
            _ => e.reruns(inst),
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
