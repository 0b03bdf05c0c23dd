//! `cvt` (PTX ISA 9.2 §9.7.9.21) between integer and float types of register width,
//! and the relaxed register widths of moves and conversions.

use super::{ast, expand, op_ty, Diagnostic, Lowerer, Mods, Operand, RegId, Resolved, Span};
use crate::build::Build;
use crate::ir::{FloatMode, InstKind, OpTy, RegTy, Value};

impl Lowerer<'_> {
    pub(super) fn convert(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        // The form is checked (`ptxvk_frontend::forms`): two register types, and the
        // rounding §9.7.9.21 gives the conversion; `pass::legalize_floats` applies a
        // directed one (`.rz`, `.rm`, `.rp`).
        let span = i.span;
        let [to, from] = m.types.as_slice() else {
            return Err(Diagnostic::internal(span, "`cvt` without its two types"));
        };
        let (to_t, from_t) = (op_ty(to)?, op_ty(from)?);
        let rounding = m.rounding.as_ref().map(|r| r.value.0);
        let ops = &i.operands;
        let (dst, widened) = self.relaxed_dst(&ops[0], to_t, to_t.is_float())?;
        let src = self.relaxed_src(&ops[1], from_t, from_t.is_float(), span)?;
        self.push(
            InstKind::Convert {
                to: to_t,
                from: from_t,
                rounding,
                mode: FloatMode { ftz: m.ftz, sat: m.sat, ..FloatMode::default() },
                dst,
                src,
            },
            span,
        );
        if let Some(register) = widened {
            self.zero_extend_into(register, dst, span);
        }
        Ok(())
    }

    /// The integer register `op` names when it is wider than `bits`: PTX ISA 9.2 §5.2.2
    /// lets `ld`, `st` and `cvt` hold narrow values in wide registers, and its relaxed
    /// type-checking rules give a float's (or a narrow format's) value in a wider `.b`
    /// register the low bits: chopped as a source, zero-extended as a destination.
    pub(super) fn wider_register(&self, op: &Operand, bits: u32) -> Option<RegId> {
        let Operand::Name { name, component: None } = op else { return None };
        match self.lookup(&name.value) {
            Some(Resolved::Reg(r)) => {
                matches!(self.kernel.reg(r).ty, RegTy::Int(b) if u32::from(b) > bits).then_some(r)
            }
            _ => None,
        }
    }

    pub(super) fn float_in_wider_register(&self, op: &Operand, ty: OpTy) -> bool {
        ty.is_float() && self.wider_register(op, ty.bits()).is_some()
    }

    /// A source of `ld`, `st` and `cvt` at type `ty` in a register that may be wider
    /// (§5.2.2). Integer types read it as they are (the instruction takes its low bits);
    /// with `bits_only` (a float type or a narrow format) the low bits are read out.
    pub(super) fn relaxed_src(
        &mut self,
        op: &Operand,
        ty: OpTy,
        bits_only: bool,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let wide = if bits_only { self.wider_register(op, ty.bits()) } else { None };
        let Some(r) = wide else {
            return self.src(op, ty, !ty.is_float(), span);
        };
        let from = OpTy::U(self.kernel.reg(r).ty.bits() as u8);
        Ok(expand::Emit { l: self, span }.cvt(ty.as_unsigned(), from, Value::Reg(r)))
    }

    /// A destination of `ld` and `cvt` at type `ty` in a register that may be wider
    /// (§5.2.2): with `bits_only`, a temporary of the type's width and the register to
    /// zero-extend it into ([`Self::zero_extend_into`]).
    pub(super) fn relaxed_dst(
        &mut self,
        op: &Operand,
        ty: OpTy,
        bits_only: bool,
    ) -> Result<(RegId, Option<RegId>), Diagnostic> {
        let wide = if bits_only { self.wider_register(op, ty.bits()) } else { None };
        let Some(register) = wide else {
            return Ok((self.dst(op, ty, !ty.is_float())?, None));
        };
        Ok((self.temp(RegTy::Int(ty.bits() as u8), op.span()), Some(register)))
    }

    /// `register = zext(value)`.
    pub(super) fn zero_extend_into(&mut self, register: RegId, value: RegId, span: Span) {
        let wide = OpTy::U(self.kernel.reg(register).ty.bits() as u8);
        let narrow = OpTy::U(self.kernel.reg(value).ty.bits() as u8);
        let mut e = expand::Emit { l: self, span };
        let extended = e.cvt(wide, narrow, Value::Reg(value));
        e.mov(wide, register, extended);
    }
}
