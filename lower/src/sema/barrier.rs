//! CTA barriers (PTX ISA 9.2 §9.7.13.1-2): `bar{.cta}.sync`, `barrier{.cta}.sync
//! {.aligned}`, and the reductions `bar{.cta}.red` / `barrier{.cta}.red` (`.popc.u32`,
//! `.and.pred`, `.or.pred`).
//!
//! Vulkan has one workgroup barrier (`OpControlBarrier`) that every invocation must
//! reach, so a barrier is a whole-block barrier. A thread count `b` (PTX: the number of
//! threads, a multiple of the warp size, that must arrive) is honoured when it covers
//! every warp of the block, which is what compilers emit for `__syncthreads()`-like
//! barriers; a smaller count (named barriers shared by a subset of warps) is checked at
//! run time and ends the launch with an error instead of deadlocking or silently
//! synchronizing too much. `bar.arrive` (arrival without waiting) has no Vulkan
//! equivalent and is rejected.
//!
//! `bar.red` is resolved into one [`InstKind::BarrierReduce`] with the kernel's shared
//! scratch word for it (a variable the kernel declares when `is_reduction` finds one,
//! `sema::facts`), which `pass::expand_warp` writes
//! out.

use ptxvk_frontend::ast::{self, Operand};
use ptxvk_frontend::decode;
use ptxvk_frontend::modifier::{BarrierForm, Modifier, Population};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span};

use super::expand::Emit;
use super::{unsupported, Mods, Resolver};
use crate::build::Build;
use crate::ir::{BarrierReduction, BoolOp, CmpOp, InstKind, OpTy, Value, VariableRole};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);

/// Whether `i` is a `bar.red`/`barrier.red`, which needs a shared scratch word.
pub(super) fn is_reduction(i: &ast::Instruction) -> bool {
    if !matches!(i.op, Some(Opcode::Bar | Opcode::Barrier)) {
        return false;
    }
    matches!(decode::decode(i), Ok(Some(m)) if m.has(RED))
}

const RED: Modifier = Modifier::BarrierForm(BarrierForm::Red);
const POPC: Modifier = Modifier::Population(Population::Popc);

impl Resolver<'_> {
    pub(super) fn barrier(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        if m.has(Modifier::BarrierForm(BarrierForm::Arrive)) {
            return Err(unsupported(
                span,
                &format!("`{op}.arrive`"),
                "Vulkan's only workgroup barrier makes every invocation wait; arriving \
                 without waiting (producer/consumer named barriers) has no equivalent",
            ));
        }
        if m.has(RED) {
            return self.barrier_reduction(op, i, m);
        }
        let ops = i.operands.as_slice();
        match ops {
            [_] => {}
            [_, count] => self.check_count(count, span)?,
            _ => {
                return Err(Diagnostic::error(
                    span,
                    format!("`{op}.sync` takes a barrier number and an optional thread count"),
                ))
            }
        }
        self.push(InstKind::Barrier, span);
        Ok(())
    }

    /// `bar.red.popc.u32 d, a{, b}, {!}c` and `.and`/`.or.pred`.
    fn barrier_reduction(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let kind = match (m.has(POPC), m.bool_op) {
            (true, _) => Some(BarrierReduction::Popc),
            (false, Some(BoolOp::And)) => Some(BarrierReduction::And),
            (false, Some(BoolOp::Or)) => Some(BarrierReduction::Or),
            _ => None,
        };
        // The kernel's word, declared before its instructions (`KernelFacts::bar_reduction`),
        // at the offset `pass::layout_memory` will give it.
        let word = self.made_variable(VariableRole::ReductionWord).map(|var| {
            crate::pass::layout_memory::layout(&self.kernel.variables).offsets[var.index()]
        });
        let (Some(kind), Some(scratch)) = (kind, word) else {
            return Err(Diagnostic::error(
                span,
                format!("`{op}.red` takes `.popc.u32`, `.and.pred` or `.or.pred`"),
            ));
        };
        let (want, name) =
            if kind == BarrierReduction::Popc { (U32, ".u32") } else { (OpTy::Pred, ".pred") };
        let ty = self.one_type(i, m)?;
        if ty != want {
            let spelled = match kind {
                BarrierReduction::Popc => "popc",
                BarrierReduction::And => "and",
                BarrierReduction::Or => "or",
            };
            return Err(Diagnostic::error(span, format!("`{op}.red.{spelled}` takes `{name}`")));
        }
        let ops = i.operands.as_slice();
        let (dst, pred) = match ops {
            [d, _, p] => (d, p),
            [d, _, count, p] => {
                self.check_count(count, span)?;
                (d, p)
            }
            _ => {
                return Err(Diagnostic::error(
                    span,
                    format!(
                    "`{op}.red` takes a destination, a barrier, an optional count and a predicate"
                ),
                ))
            }
        };
        let dst = self.dst(dst, ty, false)?;
        let (cond, negate) = self.pred(pred)?;
        self.push(InstKind::BarrierReduce { op: kind, dst, cond, negate, word: scratch }, span);
        Ok(())
    }

    /// A barrier's thread count must cover every warp of the block: else the launch
    /// fails (`crate::system::STATUS_BARRIER`), in every thread alike (PTX requires the
    /// count to be the same for all of them), so none waits at the barrier.
    fn check_count(&mut self, count: &Operand, span: Span) -> Result<(), Diagnostic> {
        let b = self.src(count, U32, false, span)?;
        let mut e = Emit { resolver: self, span };
        let threads = e.block_threads();
        let rounded = e.add(U32, threads, Value::Imm(31));
        let rounded = e.and(U32, rounded, Value::Imm(!31u32 as u64));
        let short = e.cmp(CmpOp::Lt, U32, b, rounded);
        self.fail_if(short, false, sys::STATUS_BARRIER, &[Value::Imm(0), Value::Imm(0), b], span);
        Ok(())
    }
}
