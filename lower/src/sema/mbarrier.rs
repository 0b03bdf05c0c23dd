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
//! [`MbarrierOp::CompleteTx`] after the copy ([`Resolver::complete_tx`]).

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::forms::copy::{mbarrier_form, MbarrierShape as Shape};
use ptxvk_frontend::{Diagnostic, Opcode, Span};

use super::{Mods, Resolver};
use crate::ir::{
    Address, CvtaSpace, FloatMode, InstKind, MbarrierOp, MbarrierWait, OpTy, RegId, RegTy, Value,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

impl Resolver<'_> {
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

    /// The operation of an `mbarrier` of the form `ptxvk_frontend::forms::copy` checked.
    fn resolve_mbarrier(
        &mut self,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<MbarrierOp, Diagnostic> {
        let span = i.span;
        let ops = i.operands.as_slice();
        let shared = m.space.is_some();
        Ok(match mbarrier_form(i, &m.details, m.space.as_ref())? {
            Shape::PendingCount => {
                let dst = self.dst(&ops[0], U32, false)?;
                let state = self.src(&ops[1], U64, false, span)?;
                MbarrierOp::PendingCount { dst, state }
            }
            Shape::Init => {
                let at = self.shared_address(&ops[0], shared)?;
                let count = self.src(&ops[1], U32, false, span)?;
                MbarrierOp::Init { at, count }
            }
            Shape::Inval => MbarrierOp::Inval { at: self.shared_address(&ops[0], shared)? },
            Shape::Wait { try_wait, parity } => {
                let dst = self.dst(&ops[0], OpTy::Pred, false)?;
                let at = self.shared_address(&ops[1], shared)?;
                let waited = self.src(&ops[2], if parity { U32 } else { U64 }, false, span)?;
                // An optional suspend-time hint follows the state (`try_wait`).
                if let Some(hint) = ops.get(3) {
                    self.src(hint, U32, false, span)?;
                }
                let w = MbarrierWait { dst, at, parity, waited };
                if try_wait {
                    MbarrierOp::TryWait(w)
                } else {
                    MbarrierOp::TestWait(w)
                }
            }
            Shape::Tx { complete } => {
                let at = self.shared_address(&ops[0], shared)?;
                let tx = self.src(&ops[1], U32, false, span)?;
                if complete {
                    MbarrierOp::CompleteTx { at, tx }
                } else {
                    MbarrierOp::ExpectTx { at, tx }
                }
            }
            Shape::ArriveTx { complete, drop } => {
                let at = self.shared_address(&ops[1], shared)?;
                let tx = self.src(&ops[2], U32, false, span)?;
                let state = self.state_result(&ops[0])?;
                // `.arrive.complete_tx`: the tx update, then a plain arrive.
                if complete {
                    self.push_mbarrier(MbarrierOp::CompleteTx { at, tx }, span);
                }
                let (count, no_complete, expect_tx) =
                    (Value::Imm(1), false, (!complete).then_some(tx));
                MbarrierOp::Arrive { state, at, count, expect_tx, no_complete, drop }
            }
            Shape::Arrive { drop, no_complete } => {
                let at = self.shared_address(&ops[1], shared)?;
                let count = match ops.get(2) {
                    Some(c) => self.src(c, U32, false, span)?,
                    None => Value::Imm(1),
                };
                let state = self.state_result(&ops[0])?;
                MbarrierOp::Arrive { state, at, count, expect_tx: None, no_complete, drop }
            }
        })
    }

    /// `cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr]`
    /// ([`MbarrierOp::CpAsyncArrive`]), in `.shared` memory or generic.
    pub(super) fn async_copy_arrive(
        &mut self,
        i: &ast::Instruction,
        shared: bool,
        noinc: bool,
    ) -> Result<(), Diagnostic> {
        let at = self.shared_address(&i.operands[0], shared)?;
        self.push_mbarrier(MbarrierOp::CpAsyncArrive { at, noinc }, i.span);
        Ok(())
    }

    /// The mbarrier operand of a bulk copy (`[mbar]`, in `.shared::cluster`, which is
    /// the CTA's `.shared`).
    pub(super) fn mbarrier_operand(&mut self, op: &Operand) -> Result<Address, Diagnostic> {
        self.shared_address(op, true)
    }

    /// The completion of a copy of `bytes` (a u32 value) on the mbarrier at `at`: its
    /// `complete_tx`, after the copy ([`crate::ir::CopyInst`]).
    pub(super) fn complete_tx(&mut self, at: Address, bytes: Value, span: Span) {
        self.push_mbarrier(MbarrierOp::CompleteTx { at, tx: bytes }, span);
    }

    /// The shared address of an mbarrier operand: in `.shared` (also `::cta` and
    /// `::cluster`) or a generic address, which PTX requires to point into it.
    fn shared_address(&mut self, op: &Operand, shared: bool) -> Result<Address, Diagnostic> {
        let span = op.span();
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
