//! mbarrier objects (PTX ISA 9.2 §9.7.13.15): `mbarrier.init`, `inval`, `arrive` (with
//! a count, `.expect_tx`, `.noComplete`), `arrive_drop`, `expect_tx`, `complete_tx`,
//! `test_wait` and `try_wait` (on a state or `.parity`), `pending_count`, and
//! `cp.async.mbarrier.arrive` (§9.7.9.25.3.4), each resolved into one
//! [`InstKind::Mbarrier`]: the object's shared address (a generic address converted
//! to its offset in the shared window; `.shared::cluster` addresses are the CTA's own,
//! `sema::cluster`) and the operands' values. [`MbarrierOp`]'s module doc specifies the
//! object and each operation; `pass::expand_mbarrier` writes them out.
//!
//! The `complete_tx` of a bulk or tensor copy into shared memory is an
//! [`MbarrierOp::CompleteTx`] after the copy ([`Lowerer::complete_tx`]).

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::modifier::{CopyForm, CopySpace, MbarrierForm as F, Modifier};
use ptxvk_frontend::{Diagnostic, Opcode, Span};

use super::{Lowerer, Mods};
use crate::ir::{
    Address, CvtaSpace, FloatMode, InstKind, MbarrierOp, MbarrierWait, OpTy, RegId, RegTy, Value,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

impl Lowerer<'_> {
    /// `mbarrier.*`; `None` for other instructions.
    pub(super) fn mbarrier(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        (op == Opcode::Mbarrier).then(|| {
            let op = self.resolve_mbarrier(i, m)?;
            self.push_mbarrier(op, i.span);
            Ok(())
        })
    }

    fn push_mbarrier(&mut self, op: MbarrierOp, span: Span) {
        self.push(InstKind::Mbarrier(Box::new(op)), span);
    }

    fn resolve_mbarrier(
        &mut self,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<MbarrierOp, Diagnostic> {
        let span = i.span;
        let form = |f: F| m.has(Modifier::MbarrierForm(f));
        let ops = i.operands.as_slice();
        let arity = |n: &[usize], what: &str| -> Result<(), Diagnostic> {
            if n.contains(&ops.len()) {
                Ok(())
            } else {
                Err(Diagnostic::error(span, format!("`mbarrier` {what}")))
            }
        };
        if form(F::PendingCount) {
            arity(&[2], "`.pending_count` takes a destination and a state")?;
            let dst = self.dst(&ops[0], U32, false)?;
            let state = self.src(&ops[1], U64, false, span)?;
            return Ok(MbarrierOp::PendingCount { dst, state });
        }
        if form(F::Init) {
            arity(&[2], "`.init` takes [addr] and a count")?;
            let at = self.mbarrier_address(&ops[0], m)?;
            let count = self.src(&ops[1], U32, false, span)?;
            return Ok(MbarrierOp::Init { at, count });
        }
        if form(F::Inval) {
            arity(&[1], "`.inval` takes [addr]")?;
            let at = self.mbarrier_address(&ops[0], m)?;
            return Ok(MbarrierOp::Inval { at });
        }
        if form(F::TestWait) || form(F::TryWait) {
            // An optional suspend-time hint follows the state (`try_wait`).
            arity(
                &[3, 4],
                "waits take a predicate, [addr], a state or parity, and an optional time hint",
            )?;
            let dst = self.dst(&ops[0], OpTy::Pred, false)?;
            let at = self.mbarrier_address(&ops[1], m)?;
            let parity = form(F::Parity);
            let waited = self.src(&ops[2], if parity { U32 } else { U64 }, false, span)?;
            if let Some(hint) = ops.get(3) {
                self.src(hint, U32, false, span)?;
            }
            let w = MbarrierWait { dst, at, parity, waited };
            return Ok(if form(F::TryWait) {
                MbarrierOp::TryWait(w)
            } else {
                MbarrierOp::TestWait(w)
            });
        }
        let arrive = form(F::Arrive) || form(F::ArriveDrop);
        let drop = form(F::ArriveDrop);
        if form(F::ExpectTx) || form(F::CompleteTx) {
            if arrive {
                arity(&[3], "`.arrive.expect_tx` takes a state, [addr] and a tx-count")?;
            } else {
                arity(&[2], "`.expect_tx`/`.complete_tx` take [addr] and a tx-count")?;
            }
            let (addr, tx) = if arrive { (&ops[1], &ops[2]) } else { (&ops[0], &ops[1]) };
            let at = self.mbarrier_address(addr, m)?;
            let tx = self.src(tx, U32, false, span)?;
            if !arrive {
                return Ok(if form(F::CompleteTx) {
                    MbarrierOp::CompleteTx { at, tx }
                } else {
                    MbarrierOp::ExpectTx { at, tx }
                });
            }
            let state = self.state_result(&ops[0])?;
            let (count, no_complete) = (Value::Imm(1), false);
            // `.arrive.complete_tx`: the tx update, then a plain arrive.
            let complete = form(F::CompleteTx);
            if complete {
                self.push_mbarrier(MbarrierOp::CompleteTx { at, tx }, span);
            }
            let expect_tx = (!complete).then_some(tx);
            return Ok(MbarrierOp::Arrive { state, at, count, expect_tx, no_complete, drop });
        }
        if arrive {
            arity(&[2, 3], "`.arrive` takes a state, [addr] and an optional count")?;
            let at = self.mbarrier_address(&ops[1], m)?;
            let count = match ops.get(2) {
                Some(c) => self.src(c, U32, false, span)?,
                None => Value::Imm(1),
            };
            let no_complete = form(F::NoComplete);
            let state = self.state_result(&ops[0])?;
            return Ok(MbarrierOp::Arrive { state, at, count, expect_tx: None, no_complete, drop });
        }
        Err(Diagnostic::error(
            span,
            "`mbarrier` takes `.init`, `.inval`, `.arrive`, `.arrive_drop`, `.expect_tx`, \
             `.complete_tx`, `.test_wait`, `.try_wait` or `.pending_count`",
        ))
    }

    /// `cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr]`
    /// ([`MbarrierOp::CpAsyncArrive`]).
    pub(super) fn async_copy_arrive(
        &mut self,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let [addr] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, "`cp.async.mbarrier.arrive` takes [addr]"));
        };
        let shared = m.details.iter().any(|d| {
            matches!(
                d.value,
                Modifier::CopySpace(
                    CopySpace::Shared | CopySpace::SharedCta | CopySpace::SharedCluster
                )
            )
        });
        let at = self.shared_address(addr, shared, span)?;
        let noinc = m.has(Modifier::CopyForm(CopyForm::NoInc));
        self.push_mbarrier(MbarrierOp::CpAsyncArrive { at, noinc }, span);
        Ok(())
    }

    /// The mbarrier operand of a bulk copy (`[mbar]`, in `.shared::cluster`, which is
    /// the CTA's `.shared`).
    pub(super) fn mbarrier_operand(&mut self, op: &Operand) -> Result<Address, Diagnostic> {
        self.shared_address(op, true, op.span())
    }

    /// The completion of a copy of `bytes` (a u32 value) on the mbarrier at `at`: its
    /// `complete_tx`, after the copy ([`crate::ir::CopyInst`]).
    pub(super) fn complete_tx(&mut self, at: Address, bytes: Value, span: Span) {
        self.push_mbarrier(MbarrierOp::CompleteTx { at, tx: bytes }, span);
    }

    /// The shared address of an mbarrier operand: in `.shared` (also `::cta` and
    /// `::cluster`) or a generic address, which PTX requires to point into it.
    fn mbarrier_address(&mut self, op: &Operand, m: &Mods) -> Result<Address, Diagnostic> {
        let shared = match m.space.as_ref().map(|s| s.value) {
            None => false,
            Some(StateSpace::Shared) => true,
            Some(other) => {
                return Err(Diagnostic::error(
                    op.span(),
                    format!("an mbarrier is in `.shared` memory, not `{}`", other.directive()),
                ))
            }
        };
        self.shared_address(op, shared, op.span())
    }

    fn shared_address(
        &mut self,
        op: &Operand,
        shared: bool,
        span: Span,
    ) -> Result<Address, Diagnostic> {
        let (_, at) = self.address(op, StateSpace::Shared)?;
        if shared {
            return Ok(at);
        }
        // A generic address: its offset in the shared window; of a 32-bit one, its
        // `cvta.to.shared` (the 32-bit shared window, `ir::SHARED_WINDOW_32`).
        let narrow = at.base.is_none_or(|b| self.kernel.reg(b).ty.bits() == 32);
        if self.kernel.address_size != 32 || !narrow {
            return Ok(self.window_offset(at, span));
        }
        let dst = self.temp(RegTy::Int(32), span);
        let src = at.base.map_or(Value::Imm(0), Value::Reg);
        let (space, ty) = (CvtaSpace::Shared, OpTy::U(32));
        self.push(InstKind::Cvta { space, to: true, ty, dst, src }, span);
        Ok(Address { base: Some(dst), offset: at.offset })
    }

    /// A generic shared address of 64 bits as a shared address: the low 32 bits of the base
    /// register (the window's offset), plus the constant offset.
    fn window_offset(&mut self, address: Address, span: Span) -> Address {
        let Some(base) = address.base else { return address };
        let low = self.temp(RegTy::Int(32), span);
        let from = OpTy::U(self.kernel.reg(base).ty.bits() as u8);
        self.push(
            InstKind::Convert {
                to: OpTy::U(32),
                from,
                rounding: None,
                mode: FloatMode::default(),
                dst: low,
                src: Value::Reg(base),
            },
            span,
        );
        Address { base: Some(low), offset: address.offset }
    }

    /// An arrive's state destination (64-bit), or `None` for `_`.
    fn state_result(&mut self, op: &Operand) -> Result<Option<RegId>, Diagnostic> {
        if matches!(op, Operand::Sink(_)) {
            return Ok(None);
        }
        self.dst(op, U64, false).map(Some)
    }
}
