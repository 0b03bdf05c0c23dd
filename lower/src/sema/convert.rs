//! `cvt` (PTX ISA 9.2 §9.7.9.21) between integer and float types of register width,
//! and the relaxed register widths of moves and conversions.

use super::{ast, op_ty, Diagnostic, Mods, Operand, RegId, Resolved, Resolver, Span};
use crate::ir::{FloatMode, InstKind, OpTy, RegTy, Value};

impl Resolver<'_> {
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
        // A float side may be a wider integer register (§5.2.2), which
        // `pass::expand_formats` chops or zero-extends into.
        let dst = match self.wider_register(&ops[0], to_t.bits()).filter(|_| to_t.is_float()) {
            Some(register) => register,
            None => self.dst(&ops[0], to_t, !to_t.is_float())?,
        };
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

    /// A source of `cvt` at type `ty` in a register that may be wider (§5.2.2).
    /// Integer types read it as they are (the instruction takes its low bits); with
    /// `bits_only` (a float type or a narrow format) the register itself, whose low bits
    /// `pass::expand_formats` reads out.
    pub(super) fn relaxed_src(
        &mut self,
        op: &Operand,
        ty: OpTy,
        bits_only: bool,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match self.wider_register(op, ty.bits()).filter(|_| bits_only) {
            Some(r) => Ok(Value::Reg(r)),
            None => self.src(op, ty, !ty.is_float(), span),
        }
    }
}
