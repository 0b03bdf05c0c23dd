//! The model of [`InstKind::Stack`](crate::ir::InstKind::Stack) before
//! `pass::expand_stack`, from `crate::ir::StackInst`'s specification (PTX ISA 9.2
//! §9.7.17): the stack pointer moves down by the size and to the alignment; a push past
//! the bottom records the stack failure (`crate::system::STATUS_STACK`) and ends the
//! thread, from any call depth.

use ptxvk_frontend::Span;

use super::sext;
use super::{Ctx, Error, State, Thread};
use crate::ir::{OpTy, StackInst, Value};
use crate::system as sys;

impl Thread<'_> {
    /// Runs a stack operation.
    pub(super) fn exec_stack(
        &mut self,
        cx: &mut Ctx<'_>,
        s: &StackInst,
        span: Span,
    ) -> Result<(), Error> {
        let k = cx.k;
        match *s {
            StackInst::Alloca { ty, dst, sp, size, align, stack } => {
                let size = match ty {
                    OpTy::S(b) => sext(self.get(size), u32::from(b)) as u64,
                    _ => self.at_bits(size, ty.bits()),
                };
                let top = self.at_bits(Value::Reg(sp), 32);
                if size > top {
                    return self.stack_failure(cx, &[0, u64::from(stack), size], span);
                }
                let new_sp = (top - size) & !(align - 1);
                self.set(k, sp, new_sp);
                self.set(k, dst, new_sp);
            }
            StackInst::Save { dst, sp, .. } => self.set(k, dst, self.at_bits(Value::Reg(sp), 32)),
            StackInst::Restore { ty, sp, src } => self.set(k, sp, self.at_bits(src, ty.bits())),
            StackInst::Frame { fp, sp, size: 0, .. } => {
                self.set(k, fp, self.at_bits(Value::Reg(sp), 32))
            }
            StackInst::Frame { fp, sp, size, align, stack } => {
                let top = self.at_bits(Value::Reg(sp), 32);
                if u64::from(size) + u64::from(align) - 8 > top {
                    let details = [0, u64::from(stack), u64::from(size), 1];
                    return self.stack_failure(cx, &details, span);
                }
                let new_sp = (top - u64::from(size)) & !u64::from(align - 1);
                self.set(k, fp, new_sp);
                self.set(k, sp, new_sp);
            }
        }
        Ok(())
    }

    /// A push that does not fit: the failure, and the end of the thread (the calls it
    /// was in included).
    fn stack_failure(
        &mut self,
        cx: &mut Ctx<'_>,
        details: &[u64],
        span: Span,
    ) -> Result<(), Error> {
        self.record_failure(cx, sys::STATUS_STACK, details, span)?;
        if let Some(outer) = self.calls.drain(..).next() {
            self.regs = outer.regs;
            self.function = outer.function;
        }
        self.at = None;
        self.frames.clear();
        self.state = State::Exited;
        Ok(())
    }
}
