//! The thread's stack (PTX ISA 9.2 §9.7.17: `alloca`, `stacksave`, `stackrestore`):
//! the first [`STACK_BYTES`] of the local window (a larger one in a kernel with
//! recursion, whose frames live there too, `sema::frames`), growing down from its top. The
//! stack pointer is a register set at kernel entry; a device function gets a copy of
//! it (`sema::calls`), so what the function allocated is freed when it returns
//! (§9.7.17.1). An `alloca`
//! that does not fit ends the launch with an error (`crate::system::STATUS_STACK`)
//! instead of corrupting other local memory.

use ptxvk_frontend::ast;
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span};

use super::expand::Emit;
use super::{Lowerer, Mods};
use crate::build::Build;
use crate::ir::{BinaryOp, CmpOp, OpTy, RegId, Value};
use crate::system as sys;

/// Bytes of stack per thread (CUDA's default stack size), in a kernel without recursion
/// (`pass::recursion::RECURSION_STACK_BYTES` with).
pub(super) const STACK_BYTES: u32 = 1024;

/// `alloca` aligns to at least this (the ISA's "minimum guaranteed alignment").
const FRAME_ALIGN: u64 = 8;

const U32: OpTy = OpTy::U(32);

/// Whether `i` uses the stack.
pub(super) fn uses_stack(i: &ast::Instruction) -> bool {
    matches!(i.op, Some(Opcode::Alloca | Opcode::Stacksave | Opcode::Stackrestore))
}

impl Lowerer<'_> {
    /// Creates the stack pointer at the top of the stack (at kernel entry).
    pub(super) fn init_stack(&mut self, span: Span) {
        let sp = self.temp(U32.storage(), span);
        let top = u64::from(self.stack_bytes());
        Emit { l: self, span }.mov(U32, sp, Value::Imm(top));
        self.stack_pointer = Some(sp);
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
        let Some(sp) = self.stack_pointer else {
            return Err(Diagnostic::internal(span, "no stack pointer"));
        };
        let args = self.args(i, m)?;
        match (op, args.dst, args.srcs.as_slice()) {
            (Opcode::Stacksave, Some(d), []) => {
                let mut e = Emit { l: self, span };
                let v = e.cvt(ty, U32, Value::Reg(sp));
                e.mov(ty, d, v);
            }
            (Opcode::Stackrestore, None, [a]) => {
                let mut e = Emit { l: self, span };
                let v = e.cvt(U32, ty, *a);
                e.mov(U32, sp, v);
            }
            (Opcode::Alloca, Some(d), [size, align @ ..]) => {
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
                self.alloca(sp, d, ty, *size, align, span);
            }
            _ => return Err(Diagnostic::error(span, format!("wrong operands for `{op}`"))),
        }
        Ok(())
    }

    /// `sp = (sp - size) & -align`, failing the launch when that passes the bottom.
    fn alloca(&mut self, sp: RegId, d: RegId, ty: OpTy, size: Value, align: u64, span: Span) {
        let mut e = Emit { l: self, span };
        // In 64 bits, so that no size wraps around.
        let u64t = OpTy::U(64);
        let size = e.cvt(u64t, ty, size);
        let top = e.cvt(u64t, U32, Value::Reg(sp));
        let room = e.cmp(CmpOp::Le, u64t, size, top);
        let lower = e.bin(BinaryOp::Sub, u64t, top, size);
        let aligned = e.and(u64t, lower, Value::Imm(!(align - 1)));
        let stack = Value::Imm(u64::from(self.stack_bytes()));
        self.fail_if(room, true, sys::STATUS_STACK, &[Value::Imm(0), stack, size], span);
        let mut e = Emit { l: self, span };
        let new_sp = e.cvt(U32, u64t, aligned);
        e.mov(U32, sp, new_sp);
        let ptr = e.cvt(ty, U32, Value::Reg(sp));
        e.mov(ty, d, ptr);
    }
}
