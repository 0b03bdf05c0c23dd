//! The thread's stack: every stack operation ([`InstKind::Stack`]: `alloca`,
//! `stacksave`, `stackrestore`, and the frame push of a recursive function's
//! activation, whose specification is `crate::ir::StackInst`'s module doc) becomes
//! integer arithmetic on its stack pointer register, and a push that does not fit a
//! [`SystemInst::Fail`] with `crate::system::STATUS_STACK` and the thread's end (PTX
//! ISA 9.2 §9.7.17.1: `alloca` on a stack that is too small is undefined; ptxvk ends
//! the launch with an error instead of corrupting other local memory).
//!
//! It runs after `pass::inline` (and `pass::recursion`, which the frames' pushes let
//! allocate each activation's variables below its stack pointer): every body is then
//! the kernel's, so the thread ends at a `return`, from any call depth the program had.
//! Semantic analysis places the stack at the start of the local window and threads its
//! pointer through calls by value (`sema::stack`, `sema::calls`), so what a callee
//! allocated is freed when it returns; this pass only writes the arithmetic:
//!
//! * `alloca`, in 64 bits so that no size wraps around: `room = size <= sp`; where it
//!   fails, the failure (details: 0, the stack's bytes, the size); else
//!   `sp = (sp - size) & -align` and the result is `sp` at the instruction's type;
//! * `stacksave` and `stackrestore`: a conversion between the stack pointer (u32) and
//!   the instruction's type;
//! * a frame: `fp = sp` when it is empty; else `room = size + align - 8 <= sp`, the
//!   failure (details: 0, the stack's bytes, the size, 1 for a call frame), then
//!   `sp = fp = (sp - size) & -align`.
//!
//! Pre: the kernel has no `Call` of a device function. Post: no [`InstKind::Stack`] is
//! left; the failure records are [`SystemInst::Fail`]s, which `pass::expand_system`
//! writes out.

use ptxvk_frontend::Diagnostic;

use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{
    BinaryOp, CmpOp, Failure, InstKind, Kernel, OpTy, RegId, StackInst, SystemInst, Terminator,
    Value,
};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Whether `kind` is an instruction this pass expands (`pass::leftover`).
pub fn is_stack(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Stack(_))
}

/// Expands every stack operation of `k` as the module doc says. One whose shape is
/// wrong (`StackInst::malformed`) is an internal error.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    expander::each(k, is_stack, |k, cur, span, kind| {
        let InstKind::Stack(s) = kind else { return Ok(cur) };
        if let Some(what) = s.malformed() {
            return Err(Diagnostic::internal(span, what));
        }
        let mut e = Expand { k, cur, span };
        match *s {
            StackInst::Alloca { ty, dst, sp, size, align, stack } => {
                let size = e.cvt(U64, ty, size);
                let top = e.cvt(U64, U32, Value::Reg(sp));
                let room = e.cmp(CmpOp::Le, U64, size, top);
                let lower = e.bin(BinaryOp::Sub, U64, top, size);
                let aligned = e.and(U64, lower, Value::Imm(!(align - 1)));
                e.fail_unless(room, &[Value::Imm(0), Value::Imm(u64::from(stack)), size]);
                let new_sp = e.cvt(U32, U64, aligned);
                e.mov(U32, sp, new_sp);
                let ptr = e.cvt(ty, U32, Value::Reg(sp));
                e.mov(ty, dst, ptr);
            }
            StackInst::Save { ty, dst, sp } => {
                let v = e.cvt(ty, U32, Value::Reg(sp));
                e.mov(ty, dst, v);
            }
            StackInst::Restore { ty, sp, src } => {
                let v = e.cvt(U32, ty, src);
                e.mov(U32, sp, v);
            }
            StackInst::Frame { fp, sp, size: 0, .. } => e.mov(U32, fp, Value::Reg(sp)),
            StackInst::Frame { fp, sp, size, align, stack } => {
                let sp_v = Value::Reg(sp);
                let room = e.cmp(CmpOp::Le, U32, Value::Imm(u64::from(size + align - 8)), sp_v);
                let details = [0, stack, size, 1].map(|v| Value::Imm(u64::from(v)));
                e.fail_unless(room, &details);
                let low = e.bin(BinaryOp::Sub, U32, sp_v, Value::Imm(u64::from(size)));
                let aligned = e.and(U32, low, Value::Imm(u64::from(!(align - 1))));
                e.mov(U32, fp, aligned);
                e.mov(U32, sp, Value::Reg(fp));
            }
        }
        Ok(e.cur)
    })
}

expander::expansion!(
    /// Builds the expansion of one stack operation from block `cur` on.
    struct Expand
);

impl Expand<'_> {
    /// Where predicate `room` does not hold, the stack failure with `details` and the
    /// thread's end; the code after runs where it holds.
    fn fail_unless(&mut self, room: RegId, details: &[Value]) {
        let failing = self.new_block();
        let ok = self.new_block();
        let branch =
            Terminator::Branch { cond: room, negate: true, if_true: failing, if_false: ok };
        self.end_block(branch, failing);
        let fail = Failure { status: sys::STATUS_STACK, details: details.to_vec() };
        self.push(InstKind::System(Box::new(SystemInst::Fail(fail))));
        self.end_block(Terminator::Return, ok);
    }
}
