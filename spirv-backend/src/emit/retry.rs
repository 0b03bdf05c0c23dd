//! Retry regions: the exact f64 `fma.rn` and `div.rn` of a run of register arithmetic
//! (calls of [`Routine::NearestF64`]) share one call of their integer routine, in place
//! of one call per instruction.
//!
//! Why: Mesa inlines every `OpFunctionCall` (NIR's `nir_inline_functions`), so each
//! `NearestF64`'s branch to [`Routine::FmaF64`] (416 instructions) or
//! [`Routine::DivF64`] (641) becomes a copy of the routine in the driver's compile: a
//! numba ufunc kernel of 108 `fma.rn.f64` took lavapipe's LLVM 15-20 s, nearly all of
//! it those copies (docs/benchmarks.md, *Compile speed and SPIR-V size*).
//!
//! How: a *retry region* is a run of instructions of one block that only compute
//! registers from registers (no memory, no special registers, no other thread: each
//! gives the same result when run again on the same registers) and that reads no
//! register it writes before writing it, so that running the run again from its start
//! recomputes the same values. With two or more fast-path sites in it, the run becomes a
//! loop. Each pass calls every site's fast path ([`Routine::FastF64`], a NaN where its
//! guard fails: `lower/src/routines/fast_f64.rs`); a site whose routine result is known
//! from an earlier pass takes it instead. The first site whose guard
//! fails without a known result records its operands; the pass's end calls the routine
//! once for them (the one call site of the region) and, if a site was recorded, runs
//! the region again. A pass with no site recorded wrote every register from fast paths
//! whose guard held or from routine results: the same values the instructions give one
//! by one, so the choice is invisible (the fast paths and the routines are both
//! correctly rounded). Sites after a recorded one may compute from wrong operands in
//! that pass; they write only registers, which the next pass writes again. A region
//! of k sites runs at most k + 1 passes, and one where no guard fails (almost all
//! operands) one; on a SIMD device the pass's end is skipped unless some invocation
//! recorded a site.

use std::collections::BTreeSet;

use rspirv::spirv::{LoopControl, SelectionControl, Word};

use ptxvk_lower::ir::{F64Op, Inst, InstKind, RegId, Routine};
use ptxvk_lower::verify::inst_defs_uses;

use super::helpers::Helper;
use super::{FnEmitter, R};
use crate::types::Scalar;

/// "No site recorded" in a pass's recorded-site index.
const NONE: u64 = u32::MAX as u64;

impl FnEmitter<'_> {
    /// The instructions of one block, with their retry regions (module doc) and, between
    /// them, their exact f32 runs (`exact_runs.rs`).
    pub(super) fn code(&mut self, insts: &[Inst]) -> R<()> {
        let regions = if self.values.is_none() && self.g.float64 {
            self.retry_regions(insts)
        } else {
            Vec::new()
        };
        let mut at = 0;
        for (start, end) in regions {
            self.code_with_runs(&insts[at..start])?;
            self.retry_region(&insts[start..end])?;
            at = end;
        }
        self.code_with_runs(&insts[at..])
    }

    /// The site `inst` is: a call of the f64 `fma.rn` or `div.rn` by its fast path.
    fn fast_site(&self, inst: &Inst) -> Option<F64Op> {
        let InstKind::Call { callee, args, results } = &inst.kind else {
            return None;
        };
        let routine = self.k.functions.get(callee.index()).and_then(|f| f.routine)?;
        match routine {
            Routine::NearestF64(op) if args.len() == op.arity() && results.len() == 1 => Some(op),
            _ => None,
        }
    }

    /// Whether running `inst` again on the same registers gives the same registers:
    /// register arithmetic and calls of the emulation routines (pure functions).
    pub(super) fn reruns(&self, inst: &Inst) -> bool {
        match &inst.kind {
            InstKind::Call { callee, .. } => {
                self.k.functions.get(callee.index()).is_some_and(|f| f.routine.is_some())
            }
            kind => kind.is_register_arithmetic(),
        }
    }

    /// The retry regions of a block as `(start, end)` instruction ranges: maximal runs
    /// that may run again (module doc) holding at least two sites.
    fn retry_regions(&self, insts: &[Inst]) -> Vec<(usize, usize)> {
        let mut regions = Vec::new();
        let mut run = Run::default();
        for (i, inst) in insts.iter().enumerate() {
            if !self.reruns(inst) {
                run.close(i, &mut regions);
                continue;
            }
            let site = self.fast_site(inst).is_some();
            if !run.admits(inst, i, site) {
                run.close(i, &mut regions);
                if !run.admits(inst, i, site) {
                    // It reads what it writes: it runs once, outside any region.
                    run = Run::default();
                }
            }
        }
        run.close(insts.len(), &mut regions);
        regions
    }

    /// Emits `insts`, a retry region, as the loop of the module doc.
    fn retry_region(&mut self, insts: &[Inst]) -> R<()> {
        let (i32s, i64s) = (Scalar::Int(32), Scalar::Int(64));
        let (lt, bt) = (self.ty(i64s), self.ty(Scalar::Bool));
        let sites: Vec<F64Op> = insts.iter().filter_map(|i| self.fast_site(i)).collect();
        let (no, zero, none) =
            (self.konst(Scalar::Bool, 0), self.konst(i64s, 0), self.konst(i32s, NONE));
        let (pre, header, body, cont, merge) =
            (self.b.id(), self.b.id(), self.b.id(), self.b.id(), self.b.id());
        self.b.branch(pre)?;
        self.b.begin_block(Some(pre))?;
        self.b.branch(header)?;
        // Per site: whether its routine result is known, and the result.
        self.b.begin_block(Some(header))?;
        let next: Vec<(Word, Word)> = sites.iter().map(|_| (self.b.id(), self.b.id())).collect();
        let mut known = Vec::new();
        for &(known_next, value_next) in &next {
            let k = self.b.phi(bt, None, [(no, pre), (known_next, cont)])?;
            let v = self.b.phi(lt, None, [(zero, pre), (value_next, cont)])?;
            known.push((k, v));
        }
        self.b.loop_merge(merge, cont, LoopControl::NONE, [])?;
        self.t.used.loops = true;
        self.b.branch(body)?;
        self.b.begin_block(Some(body))?;
        // The recorded site and its operands.
        let mut rec = Recorded { site: none, kind_div: no, ops: [zero; 3] };
        let mut j = 0;
        for inst in insts {
            let Some(site) = self.fast_site(inst) else {
                self.inst(inst).map_err(|e| e.at(inst.span))?;
                continue;
            };
            let r = self.retry_site(inst, site, j, known[j], &mut rec)?;
            let InstKind::Call { results, .. } = &inst.kind else { continue };
            self.write(results[0], r, i64s, false)?;
            j += 1;
        }
        // The pass's end: the one call of each routine, for the recorded site.
        let any = self.b.i_not_equal(bt, None, rec.site, none)?;
        let slow = self.retry_call(&sites, any, &rec)?;
        self.b.branch(cont)?;
        self.b.begin_block(Some(cont))?;
        for (j, (&(known_next, value_next), &(k, v))) in next.iter().zip(&known).enumerate() {
            let jj = self.konst(i32s, j as u64);
            let hit = self.b.i_equal(bt, None, rec.site, jj)?;
            self.b.select(lt, Some(value_next), hit, slow, v)?;
            self.b.logical_or(bt, Some(known_next), k, hit)?;
        }
        self.b.branch_conditional(any, header, merge, [])?;
        self.b.begin_block(Some(merge))?;
        Ok(())
    }

    /// One site of a pass: its fast path, or its known routine result; records it
    /// when its guard fails, its result is unknown and no site is recorded yet.
    fn retry_site(
        &mut self,
        inst: &Inst,
        site: F64Op,
        j: usize,
        (known, value): (Word, Word),
        rec: &mut Recorded,
    ) -> R<Word> {
        let (i32s, i64s) = (Scalar::Int(32), Scalar::Int(64));
        let (it, lt, bt) = (self.ty(i32s), self.ty(i64s), self.ty(Scalar::Bool));
        let InstKind::Call { args, .. } = &inst.kind else {
            return Err(crate::Error::Internal("a retry site that is no call".into()));
        };
        let ops = args.iter().map(|&a| self.read(a, i64s)).collect::<R<Vec<_>>>()?;
        let fast = self.call(Helper::Routine(Routine::FastF64(site)), &ops)?;
        // Its NaN: the guard failed.
        let failed = self.konst(i64s, F64Op::FAILED);
        let bad = self.b.i_equal(bt, None, fast, failed)?;
        let r = self.b.select(lt, None, known, value, fast)?;
        let none = self.konst(i32s, NONE);
        let free = self.b.i_equal(bt, None, rec.site, none)?;
        let unknown = self.b.logical_not(bt, None, known)?;
        let need = self.b.logical_and(bt, None, bad, unknown)?;
        let need = self.b.logical_and(bt, None, need, free)?;
        let jj = self.konst(i32s, j as u64);
        rec.site = self.b.select(it, None, need, jj, rec.site)?;
        let div = self.konst(Scalar::Bool, u64::from(site == F64Op::Div));
        rec.kind_div = self.b.select(bt, None, need, div, rec.kind_div)?;
        for (slot, &op) in rec.ops.iter_mut().zip(&ops) {
            *slot = self.b.select(lt, None, need, op, *slot)?;
        }
        Ok(r)
    }

    /// The routine's result for the recorded site, where `any` (a phi of 0 elsewhere):
    /// one call of each routine the region's sites use.
    fn retry_call(&mut self, sites: &[F64Op], any: Word, rec: &Recorded) -> R<Word> {
        let lt = self.ty(Scalar::Int(64));
        let zero = self.konst(Scalar::Int(64), 0);
        let (fma, div) = (sites.contains(&F64Op::Fma), sites.contains(&F64Op::Div));
        let (call_l, merge) = (self.b.id(), self.b.id());
        let entry = self.current_label()?;
        self.b.selection_merge(merge, SelectionControl::NONE)?;
        self.b.branch_conditional(any, call_l, merge, [])?;
        self.b.begin_block(Some(call_l))?;
        let [a, b, c] = rec.ops;
        let call =
            |e: &mut Self, s: F64Op| e.call(Helper::Routine(s.exact()), &[a, b, c][..s.arity()]);
        let r = match (fma, div) {
            (true, true) => {
                let kind = rec.kind_div;
                self.fast_unless(kind, lt, |e| call(e, F64Op::Fma), |e| call(e, F64Op::Div))?
            }
            (false, true) => call(self, F64Op::Div)?,
            _ => call(self, F64Op::Fma)?,
        };
        let end = self.current_label()?;
        self.b.branch(merge)?;
        self.b.begin_block(Some(merge))?;
        Ok(self.b.phi(lt, None, [(r, end), (zero, entry)])?)
    }

    /// `exact(self)` where `slow` holds, else `fast(self)`, as a selection (values of
    /// type `ty`): on a SIMD device such as lavapipe an arm that no invocation of a
    /// group takes is skipped. Neither arm may branch.
    fn fast_unless(
        &mut self,
        slow: Word,
        ty: Word,
        fast: impl FnOnce(&mut Self) -> R<Word>,
        exact: impl FnOnce(&mut Self) -> R<Word>,
    ) -> R<Word> {
        let (fast_l, slow_l, merge) = (self.b.id(), self.b.id(), self.b.id());
        self.b.selection_merge(merge, SelectionControl::NONE)?;
        self.b.branch_conditional(slow, slow_l, fast_l, [])?;
        self.b.begin_block(Some(fast_l))?;
        let quick = fast(self)?;
        self.b.branch(merge)?;
        self.b.begin_block(Some(slow_l))?;
        let careful = exact(self)?;
        self.b.branch(merge)?;
        self.b.begin_block(Some(merge))?;
        Ok(self.b.phi(ty, None, [(quick, fast_l), (careful, slow_l)])?)
    }

    /// The label of the block being written.
    pub(super) fn current_label(&self) -> R<Word> {
        let (f, at) = (self.b.selected_function(), self.b.selected_block());
        f.zip(at)
            .and_then(|(f, at)| self.b.module_ref().functions.get(f)?.blocks.get(at))
            .and_then(|b| b.label.as_ref())
            .and_then(|l| l.result_id)
            .ok_or_else(|| crate::Error::Internal("no block is being written".into()))
    }
}

/// A pass's recorded site (its index, or [`NONE`]), whether it is a division, and its
/// operands, as SSA values along the pass.
struct Recorded {
    site: Word,
    kind_div: Word,
    ops: [Word; 3],
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

    /// Ends the run before `i`, keeping it as a region if it holds two sites or more,
    /// and starts an empty one.
    fn close(&mut self, i: usize, regions: &mut Vec<(usize, usize)>) {
        if self.sites >= 2 {
            regions.push((self.start, i));
        }
        *self = Run::default();
    }
}
