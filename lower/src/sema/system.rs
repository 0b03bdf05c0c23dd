//! CUDA's system calls (ABI guide §4) and `trap`, each resolved into one
//! [`SystemInst`] (whose module doc specifies them; `pass::expand_system` writes them
//! out in accesses of the system area, `crate::system`):
//!
//! * `trap` and `__assertfail(message, file, line, function, char_size)`: a
//!   [`SystemInst::Fail`], then the thread's end. The host turns the status into an
//!   error naming the kernel, the thread and, for assertions, the message, file, line
//!   and function.
//! * `vprintf(format, arguments)`: a [`SystemInst::Printf`]; `vprintf` returns 0.
//! * `malloc(size)`: a [`SystemInst::Malloc`]; `free(ptr)` does nothing (the heap is a
//!   bump allocator).
//! * `cudaCGSynchronize`: a [`SystemInst::GridSync`]; `%envreg1`/`%envreg2` a
//!   [`SystemInst::GridWorkspace`].

use ptxvk_frontend::ast::Operand;
use ptxvk_frontend::{Diagnostic, Span};

use super::{Lowerer, Resolved};
use crate::ir::{Address, Failure, InstKind, OpTy, RegId, Space, SystemInst, Terminator, Value};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// What `cudaCGGetIntrinsicHandle` returns: an opaque nonzero grid handle.
const GRID_HANDLE: u64 = 1;

impl Lowerer<'_> {
    /// A call of the declared (body-less) function `name`.
    pub(super) fn system_call(
        &mut self,
        name: &ptxvk_frontend::Ident,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        match name.value.as_str() {
            "vprintf" if args.len() == 2 && rets.len() <= 1 => self.vprintf(args, rets, span),
            "__assertfail" if args.len() == 5 && rets.is_empty() => {
                let mut details = Vec::new();
                for (k, ty) in [(0, U64), (1, U64), (2, U32), (3, U64)] {
                    details.push(self.param_value(&args[k], ty)?);
                }
                self.fail(sys::STATUS_ASSERT, &details, span);
                Ok(())
            }
            "vprintf" | "__assertfail" => Err(Diagnostic::error(
                span,
                format!("`{}` is called with the wrong number of arguments", name.value),
            )),
            "malloc" if args.len() == 1 && rets.len() == 1 => self.malloc(&args[0], &rets[0], span),
            // The bump allocator never reuses memory (`crate::system`).
            "free" if args.len() == 1 && rets.is_empty() => Ok(()),
            "malloc" | "free" => Err(Diagnostic::error(
                span,
                format!("`{}` is called with the wrong number of arguments", name.value),
            )),
            // libcudadevrt's cooperative-groups entry points (CUDA Programming Guide,
            // "Grid Synchronization"). The handle only names the grid; any nonzero
            // value does.
            "cudaCGGetIntrinsicHandle" if args.len() == 1 && rets.len() == 1 => {
                let addr = self.param_slot(&rets[0])?;
                let srcs = vec![Value::Imm(GRID_HANDLE)];
                self.push(InstKind::Store { space: Space::Local, ty: U64, srcs, addr }, span);
                Ok(())
            }
            "cudaCGSynchronize" if args.len() == 2 && rets.len() <= 1 => {
                self.grid_sync(span);
                // cudaError_t: success.
                if let Some(r) = rets.first() {
                    let addr = self.param_slot(r)?;
                    let srcs = vec![Value::Imm(0)];
                    self.push(InstKind::Store { space: Space::Local, ty: U32, srcs, addr }, span);
                }
                Ok(())
            }
            other => {
                // CUDA's device runtime (`sema::device_launch`).
                if let Some(done) = self.device_runtime_call(name, args, rets, span) {
                    return done;
                }
                Err(Diagnostic::error(name.span, format!("`{other}` is called but never defined"))
                    .with_note(
                        "only functions defined in the program (its modules, linked) and CUDA's \
                 `vprintf`, `__assertfail`, `malloc`, `free` and `cudaCGGetIntrinsicHandle` \
                 can be called",
                    ))
            }
        }
    }

    /// `%envreg2` (`high` false) or `%envreg1` (`high`): the low or high 32 bits of the
    /// launch's grid workspace address ([`sys::GRID_WORKSPACE`]); the headers pack them
    /// as `mov.b64 %0, {%%envreg2, %%envreg1}` (low half first). The environment
    /// registers are driver-defined (PTX ISA 9.2 §10.29); CUDA 12's cooperative groups
    /// (`cooperative_groups/details/sync.h`, CCCL's `__grid_workspace_ptr`) read these two
    /// as the workspace of `this_grid().sync()`, which spins on it, so the kernel
    /// synchronizes its grid: `pass::split_grid` makes that barrier a
    /// [`SystemInst::GridSync`].
    pub(super) fn grid_workspace_half(&mut self, high: bool, span: Span) -> Value {
        self.kernel.grid_sync = true;
        let dst = self.temp(OpTy::U(32).storage(), span);
        self.system(SystemInst::GridWorkspace { dst, high }, span);
        Value::Reg(dst)
    }

    fn system(&mut self, op: SystemInst, span: Span) {
        self.push(InstKind::System(Box::new(op)), span);
    }

    /// `malloc(size)`: `size` bytes (rounded up to 16) from the module's heap, or 0.
    fn malloc(&mut self, size: &Operand, ret: &Operand, span: Span) -> Result<(), Diagnostic> {
        let size = self.param_value(size, U64)?;
        let ret = self.param_slot(ret)?;
        self.kernel.heap = true;
        let dst = self.temp(U64.storage(), span);
        self.system(SystemInst::Malloc { dst, size }, span);
        let srcs = vec![Value::Reg(dst)];
        self.push(InstKind::Store { space: Space::Local, ty: U64, srcs, addr: ret }, span);
        Ok(())
    }

    /// `cudaCGSynchronize`: a barrier across the whole grid (CUDA Programming Guide,
    /// "Grid Synchronization"), which `pass::split_grid` cuts the kernel into phases at.
    fn grid_sync(&mut self, span: Span) {
        self.kernel.grid_sync = true;
        self.system(SystemInst::GridSync, span);
    }

    /// `trap`: the launch fails; this thread ends.
    pub(super) fn trap(&mut self, span: Span) {
        self.fail(sys::STATUS_TRAP, &[], span);
    }

    /// The local-window address of the caller's `.param` variable `op` (in a recursive
    /// function's frame, `sema::frames`, relative to its frame pointer).
    pub(super) fn param_slot(&self, op: &Operand) -> Result<Address, Diagnostic> {
        match op {
            Operand::Name { name, component: None } => match self.lookup(&name.value) {
                Some(Resolved::Local(off)) => Ok(Address { base: None, offset: i64::from(off) }),
                Some(Resolved::Framed(base, off)) => {
                    Ok(Address { base: Some(base), offset: i64::from(off) })
                }
                _ => {
                    Err(Diagnostic::error(name.span, "expected a `.param` variable of the caller"))
                }
            },
            other => {
                Err(Diagnostic::error(other.span(), "expected a `.param` variable of the caller"))
            }
        }
    }

    /// The value of the caller's `.param` variable `op` (an argument of a system call).
    pub(super) fn param_value(&mut self, op: &Operand, ty: OpTy) -> Result<Value, Diagnostic> {
        let addr = self.param_slot(op)?;
        let r = self.temp(ty.storage(), op.span());
        self.push(InstKind::Load { space: Space::Local, ty, dsts: vec![Some(r)], addr }, op.span());
        Ok(Value::Reg(r))
    }

    /// Fails the launch with `status` and `details` (as [`Self::fail`]) where predicate
    /// `cond` (negated when `negate`) holds; the code after runs where it does not.
    pub(super) fn fail_if(
        &mut self,
        cond: RegId,
        negate: bool,
        status: u32,
        details: &[Value],
        span: Span,
    ) {
        let failing = self.new_block(None, span);
        let ok = self.new_block(None, span);
        self.terminate(Terminator::Branch { cond, negate, if_true: failing, if_false: ok }, span);
        self.cur = failing;
        self.closed = false;
        self.fail(status, details, span);
        self.cur = ok;
        self.closed = false;
    }

    /// Records failure `status` (with the assertion's message, file, line and
    /// function in `details`) unless another thread did first, and ends the thread.
    pub(super) fn fail(&mut self, status: u32, details: &[Value], span: Span) {
        let details = details.to_vec();
        self.system(SystemInst::Fail(Failure { status, details }), span);
        let end = self.thread_end(span);
        self.terminate(end, span);
    }

    /// `vprintf(format, arguments)`: appends a printf record (`SystemInst::Printf`).
    fn vprintf(
        &mut self,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let format = self.param_value(&args[0], U64)?;
        let arguments = self.param_value(&args[1], U64)?;
        self.system(SystemInst::Printf { format, arguments }, span);
        if let Some(ret) = rets.first() {
            let addr = self.param_slot(ret)?;
            self.push(
                InstKind::Store { space: Space::Local, ty: U32, srcs: vec![Value::Imm(0)], addr },
                span,
            );
        }
        Ok(())
    }
}
