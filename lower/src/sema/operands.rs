//! Operands: registers, immediates, predicates and addresses, checked against the
//! types their instruction reads and writes (PTX ISA 9.2 §6.4, §9.7).

use super::{
    ast, calls, describe_op, describe_reg, expand, imm_bits, op_ty, reserved, symbol_plus_offset,
    undeclared, widen, Diagnostic, Mods, Operand, RegId, Resolved, Resolver, Span, Spanned,
    StateSpace,
};
use crate::build::Build;
use crate::ir::{
    ptx_register, Address, BinaryOp, DataAddress, Dim, InstKind, OpTy, RegTy, Space, SpecialLookup,
    SpecialWidth, Value,
};
use ptxvk_frontend::forms::operands::{OperandShape, OperandType};

/// The operands of an instruction resolved by its form's shapes
/// ([`OperandShape`], [`Resolver::args`]): its destination register and its sources in
/// order.
pub(super) struct Args {
    pub(super) dst: Option<RegId>,
    pub(super) srcs: Vec<Value>,
}

impl Resolver<'_> {
    /// Resolves every operand of `i` by the shapes of its form
    /// (`ptxvk_frontend::forms::operands`): first the type each shape names, then each
    /// operand in order, a destination as a register of exactly its type's width and a
    /// source as a value read at its type ([`Self::dst`], [`Self::src`]). A shape past
    /// the last operand is an optional operand the instruction does not have. This is
    /// the one step of operand resolution of every such form; the lowerings of the other
    /// sema families may call it for theirs once `forms::operands` has their rows.
    pub(super) fn args(&mut self, i: &ast::Instruction, m: &Mods) -> Result<Args, Diagnostic> {
        let types = m
            .shapes
            .iter()
            .map(|s| match s {
                OperandShape::Dst(t) | OperandShape::Src(t) => self.operand_type(*t, i, m),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut args = Args { dst: None, srcs: Vec::new() };
        for ((shape, ty), op) in m.shapes.iter().zip(types).zip(&i.operands) {
            match shape {
                OperandShape::Dst(_) => args.dst = Some(self.dst(op, ty, false)?),
                OperandShape::Src(_) => args.srcs.push(self.src(op, ty, false, i.span)?),
            }
        }
        Ok(args)
    }

    /// [`Self::args`] of a form with a destination and `N` sources (an internal error
    /// if its shapes say otherwise).
    pub(super) fn fixed_args<const N: usize>(
        &mut self,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(RegId, [Value; N]), Diagnostic> {
        let args = self.args(i, m)?;
        match (args.dst, <[Value; N]>::try_from(args.srcs)) {
            (Some(dst), Ok(srcs)) => Ok((dst, srcs)),
            _ => Err(Diagnostic::internal(
                i.span,
                format!(
                    "the operand shapes of `{}` are not a destination and {N} sources",
                    m.opcode
                ),
            )),
        }
    }

    /// The operation type an [`OperandType`] names for `i`.
    fn operand_type(
        &self,
        t: OperandType,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<OpTy, Diagnostic> {
        let nth = |k: usize| match m.types.get(k) {
            Some(t) => op_ty(t),
            None => Err(Diagnostic::internal(i.span, "an operand of a type the form lacks")),
        };
        Ok(match t {
            OperandType::Type => self.one_type(i, m)?,
            OperandType::First => nth(0)?,
            OperandType::Second => nth(1)?,
            OperandType::Product => {
                let ty = self.one_type(i, m)?;
                match &m.mul_part {
                    Some(p) if p.value == BinaryOp::MulWide => widen(ty, i.span)?,
                    _ => ty,
                }
            }
            OperandType::Bits => self.one_type(i, m)?.as_unsigned(),
            OperandType::Fixed(t) => op_ty(&Spanned::new(t, i.span))?,
        })
    }

    pub(super) fn reg_operand(&self, op: &Operand) -> Result<(RegId, Span), Diagnostic> {
        match op {
            Operand::Name { name, component: None } => match self.lookup(&name.value) {
                Some(Resolved::Reg(r)) => Ok((r, name.span)),
                Some(_) => {
                    Err(Diagnostic::error(name.span, format!("`{}` is not a register", name.value)))
                }
                None => Err(undeclared(name)),
            },
            other => Err(Diagnostic::error(other.span(), "expected a register")),
        }
    }

    /// A destination register of exactly the width of `ty` (or wider when `allow_wider`).
    pub(super) fn dst(
        &self,
        op: &Operand,
        ty: OpTy,
        allow_wider: bool,
    ) -> Result<RegId, Diagnostic> {
        let (r, span) = self.reg_operand(op)?;
        self.check_width(r, span, ty, allow_wider)?;
        Ok(r)
    }

    pub(super) fn check_width(
        &self,
        r: RegId,
        span: Span,
        ty: OpTy,
        allow_wider: bool,
    ) -> Result<(), Diagnostic> {
        let info = self.kernel.reg(r);
        let ok = match (info.ty, ty) {
            (RegTy::Pred, OpTy::Pred) => true,
            (RegTy::Pred, _) | (_, OpTy::Pred) => false,
            (rt, t) => {
                rt.bits() == t.bits()
                    || (allow_wider
                        && rt.bits() > t.bits()
                        && !t.is_float()
                        && matches!(rt, RegTy::Int(_)))
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Diagnostic::error(
                span,
                format!(
                    "register `{}` ({}) does not match the instruction type ({})",
                    info.name,
                    describe_reg(info.ty),
                    describe_op(ty)
                ),
            ))
        }
    }

    pub(super) fn pred(&mut self, op: &Operand) -> Result<(RegId, bool), Diagnostic> {
        let (inner, negate) = match op {
            Operand::Not(inner, _) => (inner.as_ref(), true),
            other => (other, false),
        };
        // An immediate predicate (`selp.b32 d, a, b, 0;`, `vote.all.pred p, 1, m`):
        // PTX ISA 9.2 §4.5 lets any integer constant stand for a predicate, nonzero
        // being true. It becomes a predicate register of that value.
        if let Operand::Imm(e) = inner {
            let value = imm_bits(e, OpTy::U(64))? != 0;
            let r = self.temp(OpTy::Pred.storage(), e.span);
            let src = Value::Imm(u64::from(value));
            self.push(InstKind::Mov { ty: OpTy::Pred, dst: r, src }, e.span);
            return Ok((r, negate));
        }
        let (r, span) = self.reg_operand(inner)?;
        self.check_width(r, span, OpTy::Pred, false)?;
        Ok((r, negate))
    }

    /// A source operand read at type `ty`: register, immediate, special register or the
    /// address of a shared variable.
    pub(super) fn src(
        &mut self,
        op: &Operand,
        ty: OpTy,
        allow_wider: bool,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match op {
            // `%r + 4`, `arr + 4`, `arr[1]`: a register or an address plus a constant
            // (PTX ISA 9.2 §6.4.2 lets `mov` take an array element's address; ptxas
            // takes `reg + imm` in any integer value position).
            Operand::Imm(e) => match symbol_plus_offset(e) {
                Some((name, offset)) => {
                    self.offset_operand(name, e.span, offset, ty, allow_wider, span)
                }
                None => Ok(Value::Imm(imm_bits(e, ty)?)),
            },
            Operand::Address(a) if !a.unified => match &a.base {
                Some(name) => {
                    self.offset_operand(&name.value, name.span, a.offset, ty, allow_wider, span)
                }
                None => Err(Diagnostic::error(a.span, "expected a register or an immediate")),
            },
            Operand::Name { name, component: Some(c) } => {
                if ty.bits() != 32 && !(allow_wider && ty.bits() < 32) {
                    return Err(Diagnostic::error(
                        op.span(),
                        format!("`{}{}` is a 32-bit special register", name.value, c.value),
                    ));
                }
                let dim = match c.value.as_str() {
                    ".x" => Dim::X,
                    ".y" => Dim::Y,
                    ".z" => Dim::Z,
                    _ => {
                        let msg = format!("`{}` has no component `{}`", name.value, c.value);
                        return Err(Diagnostic::error(c.span, msg));
                    }
                };
                let reg = match ptx_register(&name.value, Some(dim)) {
                    SpecialLookup::Reg(reg, _) => reg,
                    SpecialLookup::Unsupported => {
                        let msg = format!(
                            "special register `{}{}` is not supported yet",
                            name.value, c.value
                        );
                        return Err(Diagnostic::error(name.span, msg));
                    }
                    SpecialLookup::Unknown => {
                        let msg =
                            format!("`{}` is not a special register with components", name.value);
                        return Err(Diagnostic::error(name.span, msg));
                    }
                };
                let t = self.temp(RegTy::Int(32), span);
                self.push(InstKind::Special { dst: t, reg }, span);
                if ty.bits() < 32 {
                    // PTX ISA 1.x's special registers were 16-bit (`mov.u16 %rh, %tid.x`,
                    // still accepted): the low bits.
                    let narrow = OpTy::U(ty.bits() as u8);
                    return Ok(expand::Emit { resolver: self, span }.cvt(
                        narrow,
                        OpTy::U(32),
                        Value::Reg(t),
                    ));
                }
                Ok(Value::Reg(t))
            }
            Operand::Name { name, component: None } => self.named_src(name, ty, allow_wider, span),
            other => Err(Diagnostic::error(other.span(), "expected a register or an immediate")),
        }
    }

    /// A source operand that is a name: a register, or the address of a variable.
    fn named_src(
        &mut self,
        name: &ptxvk_frontend::Ident,
        ty: OpTy,
        allow_wider: bool,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match self.lookup(&name.value) {
            Some(Resolved::Reg(r)) => {
                self.check_width(r, name.span, ty, allow_wider)?;
                Ok(Value::Reg(r))
            }
            Some(Resolved::Shared(var)) => {
                address_width(ty, 0, name.span, "a shared variable")?;
                match var {
                    Some(var) => Ok(Value::Reg(self.variable_address(var, ty, span))),
                    None => {
                        let base = Value::Reg(self.dynamic_shared_base(span));
                        if ty.bits() == 32 {
                            return Ok(base);
                        }
                        Ok(expand::Emit { resolver: self, span }.cvt(
                            OpTy::U(64),
                            OpTy::U(32),
                            base,
                        ))
                    }
                }
            }
            Some(Resolved::Local(var)) => {
                address_width(ty, 0, name.span, "a local variable")?;
                Ok(Value::Reg(self.variable_address(var, ty, span)))
            }
            Some(Resolved::Framed(base, off)) => {
                address_width(ty, 0, name.span, "a local variable")?;
                Ok(self.framed_address(base, off, ty, span))
            }
            // In a module with 32-bit addresses, its offset in the address window.
            Some(Resolved::Global(off))
                if self.kernel.address_size == 32 && ty.bits() == 32 && !ty.is_float() =>
            {
                let make = |dst| DataAddress::ModuleWindow { dst, offset: off };
                Ok(Value::Reg(self.data_address(span, make)))
            }
            Some(Resolved::Global(off)) => {
                address_width(ty, 64, name.span, "a module variable")?;
                Ok(Value::Reg(self.module_address(off, span)))
            }
            // A kernel parameter's `.param` address: its offset in the block.
            Some(Resolved::Param(off)) => {
                address_width(ty, 0, name.span, "a kernel parameter")?;
                Ok(Value::Imm(u64::from(off)))
            }
            // A device function's address (`sema::calls::function_address`).
            None if self.module.functions.contains_key(&name.value) => {
                address_width(ty, 64, name.span, "a function")?;
                Ok(Value::Imm(calls::function_address(&self.module.functions, &name.value)))
            }
            // A kernel's address, for device-side launches (`sema::device_launch`).
            None if self.module.device_runtime.kernel_address(&name.value).is_some() => {
                address_width(ty, 64, name.span, "a kernel")?;
                Ok(Value::Imm(self.module.device_runtime.kernel_address(&name.value).unwrap_or(0)))
            }
            None if reserved::is_reserved_register(&name.value) => {
                self.reserved_register(&name.value, ty, name.span)
            }
            // PTX ISA 9.2 §10: one table names the IR register of each.
            None => match ptx_register(&name.value, None) {
                SpecialLookup::Reg(reg, width) => {
                    let (fits, what) = match width {
                        SpecialWidth::Pred => (ty == OpTy::Pred, "a `.pred`".to_string()),
                        SpecialWidth::Bits(b) => {
                            (!ty.is_float() && ty.bits() == b, format!("a {b}-bit"))
                        }
                    };
                    if !fits {
                        let msg = format!("`{}` is {what} register", name.value);
                        return Err(Diagnostic::error(name.span, msg));
                    }
                    let t = self.temp(ty.storage(), span);
                    self.push(InstKind::Special { dst: t, reg }, span);
                    Ok(Value::Reg(t))
                }
                SpecialLookup::Unsupported => Err(Diagnostic::error(
                    name.span,
                    format!("special register `{}` is not supported yet", name.value),
                )),
                SpecialLookup::Unknown => Err(undeclared(name)),
            },
        }
    }

    /// An address operand of either width read as a `bits`-bit address: PTX ISA 9.2
    /// §6.4.1 zero-extends a narrower address and truncates a wider one.
    pub(super) fn address_value(
        &mut self,
        op: &Operand,
        bits: u32,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let ty = OpTy::U(bits as u8);
        let width = match op {
            Operand::Name { name, component: None } => match self.lookup(&name.value) {
                Some(Resolved::Reg(r)) => Some(self.kernel.reg(r).ty),
                _ => None,
            },
            _ => None,
        };
        match width {
            Some(RegTy::Int(w @ (32 | 64))) if u32::from(w) != bits => {
                let from = OpTy::U(w);
                let v = self.src(op, from, false, span)?;
                Ok(expand::Emit { resolver: self, span }.cvt(ty, from, v))
            }
            _ => self.src(op, ty, false, span),
        }
    }

    /// The value of `name` (a register or a variable's address) plus `offset`, read at
    /// integer type `ty`.
    pub(super) fn offset_operand(
        &mut self,
        name: &str,
        name_span: Span,
        offset: i64,
        ty: OpTy,
        allow_wider: bool,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let named = Operand::Name { name: Spanned::new(name.into(), name_span), component: None };
        let base = self.src(&named, ty, allow_wider, span)?;
        if offset == 0 {
            return Ok(base);
        }
        if ty.is_float() || ty == OpTy::Pred {
            return Err(Diagnostic::error(
                name_span,
                format!("`{name}` plus an offset is an integer, not a {} operand", describe_op(ty)),
            ));
        }
        let mask = if ty.bits() >= 64 { u64::MAX } else { (1u64 << ty.bits()) - 1 };
        Ok(match base {
            Value::Imm(v) => Value::Imm(v.wrapping_add(offset as u64) & mask),
            Value::Reg(r) if self.offset_variable_address(r, offset as u64) => Value::Reg(r),
            base => {
                let int = OpTy::U(ty.bits() as u8);
                let rhs = Value::Imm(offset as u64 & mask);
                expand::Emit { resolver: self, span }.add(int, base, rhs)
            }
        })
    }

    /// A register holding the device address of parameter-block offset `off` (a
    /// 32- or 64-bit register): one [`DataAddress::Param`].
    pub(super) fn param_block_address(&mut self, off: RegId, span: Span) -> RegId {
        let ty = OpTy::U(self.kernel.reg(off).ty.bits() as u8);
        self.data_address(span, |dst| DataAddress::Param { dst, ty, offset: off })
    }

    /// A register holding the device address of module data offset `off`.
    pub(super) fn module_address(&mut self, off: u32, span: Span) -> RegId {
        self.data_address(span, |dst| DataAddress::Module { dst, offset: off })
    }

    /// A register of `make`'s address (64-bit, or 32 for a window offset).
    fn data_address(&mut self, span: Span, make: impl Fn(RegId) -> DataAddress) -> RegId {
        let ty = |bits: u32| RegTy::Int(bits as u8);
        let probe = make(RegId(0));
        let dst = self.temp(ty(probe.def().1), span);
        self.push(InstKind::DataAddress(make(dst)), span);
        dst
    }

    /// The state space of the variable an address operand names (`[local_x+8]`), when
    /// it is a `.local`, `.shared` or function-frame variable.
    pub(super) fn variable_space(&self, op: &Operand) -> Option<StateSpace> {
        let Operand::Address(ast::Address { base: Some(name), .. }) = op else { return None };
        match self.lookup(&name.value)? {
            Resolved::Local(_) | Resolved::Framed(..) => Some(StateSpace::Local),
            Resolved::Shared(_) => Some(StateSpace::Shared),
            _ => None,
        }
    }

    pub(super) fn address(
        &mut self,
        op: &Operand,
        space: StateSpace,
    ) -> Result<(Space, Address), Diagnostic> {
        let Operand::Address(a) = op else {
            return Err(Diagnostic::error(op.span(), "expected an address `[…]`"));
        };
        if a.unified {
            return Err(Diagnostic::error(a.span, "`.unified` addresses are not supported yet"));
        }
        let mut ir_space = match space {
            StateSpace::Global => Space::Global,
            StateSpace::Shared => Space::Shared,
            StateSpace::Param => Space::Param,
            StateSpace::Local => Space::Local,
            // `.const` addresses are device addresses into the module data.
            StateSpace::Const => Space::Global,
            other => {
                return Err(Diagnostic::error(
                    a.span,
                    format!("`{}` memory is not supported yet", other.directive()),
                ))
            }
        };
        let (base, offset) = match &a.base {
            None => (None, a.offset),
            Some(name) => match self.lookup(&name.value) {
                Some(Resolved::Reg(r)) => {
                    let bits = self.kernel.reg(r).ty;
                    if !matches!(bits, RegTy::Int(32 | 64)) {
                        return Err(Diagnostic::error(
                            name.span,
                            "an address register must be a 32- or 64-bit integer",
                        ));
                    }
                    if ir_space == Space::Param {
                        // A `.param` address in a register: in a device function, a
                        // call parameter's local offset; in the kernel, an offset in
                        // the parameter block, which is global memory.
                        if self.in_device_function() {
                            ir_space = Space::Local;
                        } else {
                            ir_space = Space::Global;
                            let base = self.param_block_address(r, a.span);
                            return Ok((ir_space, Address { base: Some(base), offset: a.offset }));
                        }
                    }
                    (Some(r), a.offset)
                }
                Some(Resolved::Param(off)) => {
                    if space != StateSpace::Param {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("kernel parameter `{}` is in the `.param` space", name.value),
                        ));
                    }
                    (None, off as i64 + a.offset)
                }
                Some(Resolved::Global(off)) => {
                    if !matches!(space, StateSpace::Global | StateSpace::Const) {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a module-scope variable", name.value),
                        ));
                    }
                    (Some(self.module_address(off, a.span)), a.offset)
                }
                Some(Resolved::Local(var)) => {
                    // `.param` variables of device-function calls are local memory.
                    if !matches!(space, StateSpace::Local | StateSpace::Param) {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a `.local` or call `.param` variable", name.value),
                        ));
                    }
                    ir_space = Space::Local;
                    (Some(self.variable_address(var, OpTy::U(32), name.span)), a.offset)
                }
                Some(Resolved::Framed(base, off)) => {
                    if !matches!(space, StateSpace::Local | StateSpace::Param) {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a `.local` or call `.param` variable", name.value),
                        ));
                    }
                    ir_space = Space::Local;
                    (Some(base), off as i64 + a.offset)
                }
                Some(Resolved::Shared(var)) => {
                    if space != StateSpace::Shared {
                        if space == StateSpace::Global {
                            return Err(Diagnostic::error(
                                name.span,
                                format!("`{}` is a `.shared` variable", name.value),
                            ));
                        }
                        ir_space = Space::Shared;
                    }
                    match var {
                        Some(var) => {
                            (Some(self.variable_address(var, OpTy::U(32), name.span)), a.offset)
                        }
                        None => (Some(self.dynamic_shared_base(name.span)), a.offset),
                    }
                }
                None => return Err(undeclared(name)),
            },
        };
        Ok((ir_space, Address { base, offset }))
    }
}

/// `Ok` when `ty` is an integer of `bits` bits (of 32 or 64 with `bits` 0), as the
/// address of `what` is, else the error saying so at `at`.
fn address_width(ty: OpTy, bits: u32, at: Span, what: &str) -> Result<(), Diagnostic> {
    let width = match bits {
        0 if !ty.is_float() && matches!(ty.bits(), 32 | 64) => return Ok(()),
        0 => "32- or 64".to_string(),
        _ if !ty.is_float() && ty.bits() == bits => return Ok(()),
        _ => bits.to_string(),
    };
    Err(Diagnostic::error(at, format!("the address of {what} is a {width}-bit integer")))
}
