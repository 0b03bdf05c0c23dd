//! The core lowerings: instructions of one thread on registers and memory that map to
//! one IR operation or a few (PTX ISA 9.2 §9.7.1-9.7.9), reached from
//! [`Resolver::operation`] when no lowering of a specific concern takes the instruction.

use super::{
    ast, float_mode, formats, md, unsupported, Diagnostic, Modifier, Mods, Opcode, Operand,
    Resolver, Span, StateSpace,
};
use crate::ir::{
    BinaryOp, BoolOp, CmpOp, CvtaSpace, FloatMode, InstKind, IntegerInst, IntegerOp, IsSpaceInst,
    OpTy, SpaceTest, UnaryOp, Value,
};

impl Resolver<'_> {
    /// The core lowering of `mov` (PTX ISA 9.2 §9.7.9.1): between registers, vectors
    /// of registers (`.v2`, `.v4`) and the elements of packed registers.
    pub(super) fn mov(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let ops = i.operands.as_slice();
        // The instruction table gives `mov` and `selp` no modifiers but types and
        // `mov`'s vector (`ptxvk_frontend::instructions`).
        let ty = self.bits_type(i, m)?;
        let elements = |o: &Operand| match o {
            Operand::Vector(v, _) => v.clone(),
            other => vec![other.clone()],
        };
        let (d, s) = (elements(&ops[0]), elements(&ops[1]));
        // The elements of registers that hold several (§9.7.9.1): of one register
        // (`mov.b64 {lo, hi}, %rd`), or of each register that holds a group of a vector's
        // elements (`mov.v8.u16 {h0, …, h7}, %q`, as `mov.b128 {…}, %q` moves them; a
        // `.b128` register is a pair of `.b64` here, `ptxvk_frontend::vectors`): the
        // element type, the packed one, the elements, the registers holding them, and
        // whether they are unpacked.
        let packing = match (m.vector.map(|n| n as usize), &ops[0], &ops[1]) {
            (Some(n), ..) => {
                let split = if d.len() == n && s.len() < n {
                    Some((&d, &s, true))
                } else if s.len() == n && d.len() < n {
                    Some((&s, &d, false))
                } else {
                    None
                };
                let split =
                    split.filter(|(_, few, _)| !few.is_empty() && n.is_multiple_of(few.len()));
                split.map(|(many, few, unpack)| {
                    let packed = OpTy::U((ty.bits() as usize * n / few.len()) as u8);
                    (ty, packed, many.as_slice(), few.as_slice(), unpack)
                })
            }
            (None, Operand::Vector(v, vs), whole) => {
                let elem = self.pack_elem(ty, v.len(), *vs)?;
                Some((elem, ty, v.as_slice(), std::slice::from_ref(whole), true))
            }
            (None, whole, Operand::Vector(v, vs)) => {
                let elem = self.pack_elem(ty, v.len(), *vs)?;
                Some((elem, ty, v.as_slice(), std::slice::from_ref(whole), false))
            }
            _ => None,
        };
        if let Some((elem, packed, many, few, unpack)) = packing {
            for (whole, parts) in few.iter().zip(many.chunks(many.len() / few.len())) {
                if unpack {
                    let dsts =
                        parts.iter().map(|e| self.opt_dst(e, elem)).collect::<Result<_, _>>()?;
                    let src = self.src(whole, packed, false, span)?;
                    self.push(InstKind::Unpack { elem, dsts, src }, span);
                } else {
                    let dst = self.dst(whole, packed, false)?;
                    let srcs = parts
                        .iter()
                        .map(|e| self.src(e, elem, false, span))
                        .collect::<Result<_, _>>()?;
                    self.push(InstKind::Pack { elem, dst, srcs }, span);
                }
            }
            return Ok(());
        }
        // `mov.v2`/`.v4` (§9.7.9.1): a move per element between vectors of registers (a
        // vector register is one, `ptxvk_frontend::vectors`).
        if let Some(n) = m.vector {
            let (Operand::Vector(d, _), Operand::Vector(s, _)) = (&ops[0], &ops[1]) else {
                return Err(Diagnostic::error(span, format!("`mov.v{n}` moves vectors")));
            };
            if d.len() != n as usize || s.len() != n as usize {
                return Err(Diagnostic::error(
                    span,
                    format!("`mov.v{n}` moves vectors of {n} elements"),
                ));
            }
            // Every source is read before any destination is written (`mov.v2
            // {a, b}, {b, a}` swaps).
            let mut srcs = Vec::new();
            for e in s {
                let v = self.src(e, ty, false, span)?;
                let t = self.temp(ty.storage(), span);
                self.push(InstKind::Mov { ty, dst: t, src: v }, span);
                srcs.push(Value::Reg(t));
            }
            for (d, src) in d.iter().zip(srcs) {
                if let Some(dst) = self.opt_dst(d, ty)? {
                    self.push(InstKind::Mov { ty, dst, src }, span);
                }
            }
            return Ok(());
        }
        let dst = self.dst(&ops[0], ty, false)?;
        let src = self.src(&ops[1], ty, ty.bits() < 32, span)?;
        self.push(InstKind::Mov { ty, dst, src }, span);
        Ok(())
    }

    /// `selp.type d, a, b, {!}c` (PTX ISA 9.2 §9.7.7): `c ? a : b`.
    pub(super) fn selp(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let ty = self.bits_type(i, m)?;
        let ops = i.operands.as_slice();
        let dst = self.dst(&ops[0], ty, false)?;
        let a = self.src(&ops[1], ty, false, i.span)?;
        let b = self.src(&ops[2], ty, false, i.span)?;
        let (cond, negate) = self.pred(&ops[3])?;
        self.push(InstKind::Select { ty, dst, a, b, cond, negate }, i.span);
        Ok(())
    }

    /// `cvta` (PTX ISA 9.2 §9.7.9.19): one [`InstKind::Cvta`], which `pass::infer_spaces`
    /// reads as the provenance of generic addresses and writes out in the windows of the
    /// launch ABI. Generic addresses are 64-bit, or 32-bit in a module with 32-bit ones.
    pub(super) fn cvta(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        // The form is checked (`ptxvk_frontend::forms`): it has one of the spaces.
        let ty = self.one_type(i, m)?;
        let narrow = ty.bits() == 32 && self.kernel.address_size == 32;
        if !narrow && ty.bits() != 64 {
            return Err(unsupported(
                i.span,
                "`cvta` with 32-bit generic addresses in a module with 64-bit addresses",
                "generic addresses are 64-bit there",
            ));
        }
        let (dst, [src]) = self.fixed_args(i, m)?;
        let space = match m.space.as_ref().map(|s| s.value) {
            Some(StateSpace::Global | StateSpace::Const) => CvtaSpace::Global,
            Some(StateSpace::Shared) => CvtaSpace::Shared,
            Some(StateSpace::Local) => CvtaSpace::Local,
            Some(StateSpace::Param) if self.in_device_function() => CvtaSpace::CallParam,
            _ => CvtaSpace::Param,
        };
        let to = m.has(Modifier::Conversion(md::Conversion::To));
        self.push(InstKind::Cvta { space, to, ty, dst, src }, i.span);
        Ok(())
    }

    /// `isspacep.space p, a` (PTX ISA 9.2 §9.7.9.18): one [`InstKind::IsSpace`], which
    /// `pass::expand_isspace` writes out in the windows of the launch ABI. A generic
    /// address is 64-bit, or 32-bit in a module with 32-bit addresses.
    pub(super) fn isspacep(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let ops = i.operands.as_slice();
        let dst = self.dst(&ops[0], OpTy::Pred, false)?;
        let narrow = self.kernel.address_size == 32;
        let ty = OpTy::U(if narrow { 32 } else { 64 });
        let addr = self.address_value(&ops[1], ty.bits(), span)?;
        // The form is checked (`ptxvk_frontend::forms`): one of the spaces of `cvta`.
        let const_bytes = self.module.data.const_bytes;
        let space = match m.space.as_ref().map(|s| s.value) {
            Some(StateSpace::Const) => SpaceTest::Const { const_bytes },
            Some(StateSpace::Shared) => SpaceTest::Shared,
            Some(StateSpace::Local) => SpaceTest::Local,
            // A device function's parameters are local memory; with 64-bit addresses a
            // generic address there is its kernel's parameter (libcu++'s
            // `__isGridConstant`), whose block is global memory.
            Some(StateSpace::Param) if !(narrow && self.in_device_function()) => {
                SpaceTest::Param { bytes: self.kernel.abi.size }
            }
            Some(StateSpace::Param) => {
                let s = m.space.as_ref().map_or(span, |s| s.span);
                return Err(Diagnostic::error(
                    s,
                    "`isspacep` in a module with 32-bit addresses takes `.global`, \
                     `.const`, `.shared`, `.local` or (in a kernel) `.param`",
                ));
            }
            _ => SpaceTest::Global { const_bytes },
        };
        self.push(InstKind::IsSpace(IsSpaceInst { space, ty, dst, addr }), span);
        Ok(())
    }

    /// The lowering of the opcodes of [`ONE_OPERATION`]: the one IR operation its row
    /// names, of the instruction's type and the operands its form's shapes resolve
    /// ([`Resolver::args`]); `None` for another opcode.
    pub(super) fn one_operation(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        let &(_, operation, takes) = ONE_OPERATION.iter().find(|(o, ..)| *o == op)?;
        Some(self.one_operation_of(operation, takes, i, m))
    }

    fn one_operation_of(
        &mut self,
        operation: OneOperation,
        takes: Takes,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let ty = self.one_type(i, m)?;
        let mode = match takes {
            Takes::FloatMode => float_mode(m),
            Takes::Ftz => FloatMode { ftz: m.ftz, ..FloatMode::default() },
            Takes::Nothing => FloatMode::default(),
        };
        let kind = match operation {
            OneOperation::Binary(op) => match predicate_logic(op).filter(|_| ty == OpTy::Pred) {
                Some(op) => {
                    let ops = i.operands.as_slice();
                    let dst = self.dst(&ops[0], ty, false)?;
                    let (lhs, _) = self.reg_operand(&ops[1])?;
                    let (rhs, _) = self.reg_operand(&ops[2])?;
                    self.check_width(lhs, ops[1].span(), ty, false)?;
                    self.check_width(rhs, ops[2].span(), ty, false)?;
                    InstKind::PredLogic { op, dst, lhs, rhs }
                }
                None => {
                    // `mul`'s product half (`.lo`, `.hi`, `.wide`) is its operation.
                    let op = match (op, &m.mul_part) {
                        (BinaryOp::Mul, Some(part)) => part.value,
                        _ => op,
                    };
                    let (dst, [lhs, rhs]) = self.fixed_args(i, m)?;
                    InstKind::Binary { op, ty, mode, dst, lhs, rhs }
                }
            },
            // A bit operation on a predicate is its negation.
            OneOperation::Unary(_) if ty == OpTy::Pred && takes != Takes::FloatMode => {
                let ops = i.operands.as_slice();
                let dst = self.dst(&ops[0], ty, false)?;
                let (src, _) = self.reg_operand(&ops[1])?;
                self.check_width(src, ops[1].span(), ty, false)?;
                InstKind::PredNot { dst, src }
            }
            OneOperation::Unary(op) => {
                let (dst, [src]) = self.fixed_args(i, m)?;
                InstKind::Unary { op, ty, mode, dst, src }
            }
            OneOperation::MulAdd => {
                let (dst, [a, b, c]) = self.fixed_args(i, m)?;
                if m.truncated_mad {
                    let op = IntegerOp::TruncatedMad { sat: m.sat };
                    let mad = IntegerInst { op, dst: Some(dst), srcs: vec![a, b, c] };
                    InstKind::Integer(Box::new(mad))
                } else if ty.is_float() {
                    InstKind::Fma { ty, mode, dst, a, b, c }
                } else {
                    let part = m.mul_part.as_ref().map_or(BinaryOp::Mul, |p| p.value);
                    InstKind::Mad { part, ty, dst, a, b, c }
                }
            }
            OneOperation::Bfe => {
                let (dst, [a, pos, len]) = self.fixed_args(i, m)?;
                InstKind::Bfe { ty, dst, a, pos, len }
            }
            OneOperation::Bfi => {
                let (dst, [a, b, pos, len]) = self.fixed_args(i, m)?;
                InstKind::Bfi { ty, dst, a, b, pos, len }
            }
        };
        self.push(kind, span);
        Ok(())
    }

    /// `setp.CmpOp{.BoolOp}{.ftz}.type p{|q}, a, b{, {!}c}` (PTX ISA 9.2 §9.7.7.2): one
    /// [`InstKind::Setp`], or for half types (§9.7.4.6, which compare as their exact f32
    /// values) one [`IntegerOp::HalfSetp`].
    pub(super) fn setp(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let ops = i.operands.as_slice();
        // Half types compare as their exact f32 values (§9.7.4.6).
        let half = formats::half_type(m);
        // The form is checked (`ptxvk_frontend::forms`): `.bf16` takes no `.ftz`.
        let ty = if half.is_some() { OpTy::F(32) } else { self.one_type(i, m)? };
        // The form has a comparison of the type's kind (`ptxvk_frontend::forms`).
        let cmp = m.cmp.unwrap_or(CmpOp::Eq);
        let (dst, dst_not) = match &ops[0] {
            Operand::Pair(a, b, _) => (self.opt_dst(a, OpTy::Pred)?, self.opt_dst(b, OpTy::Pred)?),
            d => (self.opt_dst(d, OpTy::Pred)?, None),
        };
        let combine = self.combined_with(i, m, 3)?;
        // Half lanes (§9.7.7.2): `p` is the lower lane and `q` the upper of an
        // x2 comparison (the form is checked: it writes `p|q`); a scalar one writes `p`
        // (and `q` is its negation). One `IntegerOp::HalfSetp`, which
        // `pass::expand_integer` writes out.
        if let Some((format, lanes)) = half {
            let a = self.src(&ops[1], OpTy::U((16 * lanes) as u8), false, span)?;
            let b = self.src(&ops[2], OpTy::U((16 * lanes) as u8), false, span)?;
            let (lanes, ftz) = (lanes as u8, m.ftz);
            let op = IntegerOp::HalfSetp { cmp, format, lanes, ftz, combine, q: dst_not };
            let srcs = vec![a, b];
            self.push(InstKind::Integer(Box::new(IntegerInst { op, dst, srcs })), span);
            return Ok(());
        }
        let (lhs, rhs, ftz) = {
            let a = self.src(&ops[1], ty, false, span)?;
            (a, self.src(&ops[2], ty, false, span)?, m.ftz)
        };
        let combine = combine.map(|c| (c.op, c.pred, c.negate));
        self.push(InstKind::Setp { cmp, ty, ftz, dst, dst_not, lhs, rhs, combine }, span);
        Ok(())
    }

    /// `membar` and `fence` (PTX ISA 9.2 §9.7.13.4, the form checked by
    /// `ptxvk_frontend::forms`): one [`InstKind::Fence`], at device scope for `.gl`,
    /// `.gpu` and `.sys`. `.cluster` is `.cta`: every cluster is one CTA
    /// (`sema::cluster`), so `fence.mbarrier_init.release.cluster` and the
    /// `.sync_restrict` fences are CTA fences. Proxy fences order accesses between the
    /// generic proxy and the async, alias or tensormap proxies (§8.6); every ptxvk access
    /// is a generic-proxy access, so they have nothing to order.
    pub(super) fn fence(&mut self, m: &Mods, span: Span) {
        use md::Scope as S;
        if m.has(Modifier::FenceForm(md::FenceForm::Proxy)) {
            return;
        }
        let device =
            m.details.iter().any(|d| matches!(d.value, Modifier::Scope(S::Gl | S::Gpu | S::Sys)));
        self.push(InstKind::Fence { device_scope: device }, span);
    }
}

/// The IR operation of an opcode in [`ONE_OPERATION`].
#[derive(Clone, Copy)]
enum OneOperation {
    /// `op d, a, b`.
    Binary(BinaryOp),
    /// `op d, a`.
    Unary(UnaryOp),
    /// `mad`/`fma d, a, b, c`: [`InstKind::Fma`] on floats, [`InstKind::Mad`] of the
    /// product half on integers; a PTX ISA 1.x `mad.f32` is [`IntegerOp::TruncatedMad`],
    /// which `pass::expand_integer` writes out.
    MulAdd,
    /// `bfe d, a, pos, len`.
    Bfe,
    /// `bfi d, a, b, pos, len`.
    Bfi,
}

/// Which modifiers of the instruction an operation of [`ONE_OPERATION`] takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Takes {
    /// Its rounding, `.ftz` and `.sat` ([`float_mode`]).
    FloatMode,
    /// `.ftz` only: `abs.ftz`/`neg.ftz` flush a subnormal input to a zero of its sign
    /// (§9.7.3.6-7; `pass::float_modifiers` writes the flush out), as the approximate
    /// functions flush their input and result.
    Ftz,
    Nothing,
}

/// The opcodes whose remaining forms (once the formats, half functions, `div.approx`
/// and expansions of `sema::formats` and `sema::expand` took theirs) are each one IR
/// operation of the same shape (PTX ISA 9.2 §9.7.1-9.7.3, §9.7.8): the operation, and
/// the modifiers it takes (with `mad`, `fma`, `bfe` and `bfi`, of three or four
/// sources). `mul`'s product half replaces its operation; `and`, `or` and
/// `xor` of predicates are [`InstKind::PredLogic`], the unary ones but `sqrt` and `rcp`
/// of a predicate [`InstKind::PredNot`].
const ONE_OPERATION: &[(Opcode, OneOperation, Takes)] = {
    use OneOperation::{Bfe, Bfi, Binary, MulAdd, Unary};
    use Takes::{FloatMode as F, Ftz, Nothing as N};
    &[
        (Opcode::Add, Binary(BinaryOp::Add), F),
        (Opcode::Sub, Binary(BinaryOp::Sub), F),
        (Opcode::Mul, Binary(BinaryOp::Mul), F),
        (Opcode::Div, Binary(BinaryOp::Div), F),
        (Opcode::Rem, Binary(BinaryOp::Rem), F),
        (Opcode::Min, Binary(BinaryOp::Min), F),
        (Opcode::Max, Binary(BinaryOp::Max), F),
        (Opcode::And, Binary(BinaryOp::And), F),
        (Opcode::Or, Binary(BinaryOp::Or), F),
        (Opcode::Xor, Binary(BinaryOp::Xor), F),
        (Opcode::Shl, Binary(BinaryOp::Shl), N),
        (Opcode::Shr, Binary(BinaryOp::Shr), N),
        (Opcode::Sqrt, Unary(UnaryOp::Sqrt), F),
        (Opcode::Rcp, Unary(UnaryOp::Rcp), F),
        // The approximate functions (§9.7.3.17-22), computed in f64 by the backend
        // (`rsqrt.approx.f64` by `pass::expand_formats`).
        (Opcode::Ex2, Unary(UnaryOp::Ex2), Ftz),
        (Opcode::Lg2, Unary(UnaryOp::Lg2), Ftz),
        (Opcode::Sin, Unary(UnaryOp::Sin), Ftz),
        (Opcode::Cos, Unary(UnaryOp::Cos), Ftz),
        (Opcode::Rsqrt, Unary(UnaryOp::Rsqrt), Ftz),
        (Opcode::Tanh, Unary(UnaryOp::Tanh), Ftz),
        (Opcode::Not, Unary(UnaryOp::Not), N),
        (Opcode::Cnot, Unary(UnaryOp::Cnot), N),
        (Opcode::Neg, Unary(UnaryOp::Neg), Ftz),
        (Opcode::Abs, Unary(UnaryOp::Abs), Ftz),
        (Opcode::Popc, Unary(UnaryOp::Popc), N),
        (Opcode::Clz, Unary(UnaryOp::Clz), N),
        (Opcode::Brev, Unary(UnaryOp::Brev), N),
        (Opcode::Mad, MulAdd, F),
        (Opcode::Fma, MulAdd, F),
        (Opcode::Bfe, Bfe, N),
        (Opcode::Bfi, Bfi, N),
    ]
};

/// The predicate operation of a bitwise one (`and.pred`).
fn predicate_logic(op: BinaryOp) -> Option<BoolOp> {
    match op {
        BinaryOp::And => Some(BoolOp::And),
        BinaryOp::Or => Some(BoolOp::Or),
        BinaryOp::Xor => Some(BoolOp::Xor),
        _ => None,
    }
}
