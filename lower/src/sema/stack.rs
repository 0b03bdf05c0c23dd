//! The thread's stack (PTX ISA 9.2 §9.7.17: `alloca`, `stacksave`, `stackrestore`):
//! the variable [`STACK`], first in the local window (`pass::layout_memory` makes it
//! larger in a kernel with recursion, whose frames live there too), growing down from
//! its top. The stack pointer is a register set at kernel entry; a device function gets a copy of
//! it (`sema::calls`), so what the function allocated is freed when it returns
//! (§9.7.17.1). Each instruction is one [`StackInst`] on the body's stack pointer;
//! `pass::expand_stack` writes out its arithmetic and the failure of an `alloca` that
//! does not fit.

use ptxvk_frontend::ast;
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span};

use super::expand::Emit;
use super::{Mods, Resolver};
use crate::build::Build;
use crate::ir::{InstKind, OpTy, StackInst, Value, VariableRole};

/// Bytes of stack per thread (CUDA's default stack size), in a kernel without recursion
/// (`pass::recursion::RECURSION_STACK_BYTES` with).
pub(super) const STACK_BYTES: u32 = 1024;

/// The name of the stack's variable.
pub(super) const STACK: &str = "$stack";

/// `alloca` aligns to at least this (the ISA's "minimum guaranteed alignment").
const FRAME_ALIGN: u64 = 8;

const U32: OpTy = OpTy::U(32);

/// Whether `i` uses the stack.
pub(super) fn uses_stack(i: &ast::Instruction) -> bool {
    matches!(i.op, Some(Opcode::Alloca | Opcode::Stacksave | Opcode::Stackrestore))
}

impl Resolver<'_> {
    /// Creates the stack pointer at the top of the stack (at kernel entry): the end of
    /// its variable, as `pass::layout_memory` sizes it.
    pub(super) fn init_stack(&mut self, span: Span) {
        let Some(var) = self.made_variable(VariableRole::Stack) else {
            self.errors.push(Diagnostic::internal(span, "the stack was not declared"));
            return;
        };
        let sp = self.temp(U32.storage(), span);
        let top = self.variable_address(var, U32, span);
        self.offset_variable_address(top, u64::from(STACK_BYTES));
        Emit { resolver: self, span }.mov(U32, sp, Value::Reg(top));
        self.body.stack_pointer = Some(sp);
    }

    /// `alloca`, `stacksave` and `stackrestore`; `None` for other instructions.
    pub(super) fn stack(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        if !matches!(op, Opcode::Alloca | Opcode::Stacksave | Opcode::Stackrestore) {
            return None;
        }
        Some(self.lower_stack(op, i, m))
    }

    /// The stack instruction `op`, whose form and operands are checked
    /// (`ptxvk_frontend::forms`).
    fn lower_stack(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let ty = self.one_type(i, m)?;
        let Some(sp) = self.body.stack_pointer else {
            return Err(Diagnostic::internal(span, "no stack pointer"));
        };
        let args = self.args(i, m)?;
        match (op, args.dst, args.srcs.as_slice()) {
            (Opcode::Stacksave, Some(dst), []) => {
                self.push_stack(StackInst::Save { ty, dst, sp }, span)
            }
            (Opcode::Stackrestore, None, [src]) => {
                self.push_stack(StackInst::Restore { ty, sp, src: *src }, span)
            }
            (Opcode::Alloca, Some(dst), [size, align @ ..]) => {
                let align = match (align, i.operands.get(2)) {
                    ([Value::Imm(v)], _) if v.is_power_of_two() && *v <= 1 << 23 => *v,
                    ([], _) => FRAME_ALIGN,
                    (_, at) => {
                        return Err(Diagnostic::error(
                            at.map_or(span, |a| a.span()),
                            "the alignment of `alloca` is a power of 2 up to 2^23",
                        ))
                    }
                }
                .max(FRAME_ALIGN);
                let stack = STACK_BYTES;
                self.push_stack(StackInst::Alloca { ty, dst, sp, size: *size, align, stack }, span)
            }
            _ => return Err(Diagnostic::error(span, format!("wrong operands for `{op}`"))),
        }
        Ok(())
    }

    /// One stack operation (`crate::ir::StackInst`), which `pass::expand_stack` writes out.
    pub(super) fn push_stack(&mut self, s: StackInst, span: Span) {
        self.push(InstKind::Stack(Box::new(s)), span);
    }
}
