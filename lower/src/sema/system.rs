//! Calls of functions the program declares but does not define, which CUDA provides
//! (its system calls, ABI guide §4, and its device runtime's, `sema::device_launch`),
//! and `trap`. A call is resolved by name into one [`SystemInst::Call`]
//! ([`RuntimeFn`]): the local-window addresses of the caller's `.param` variables
//! it reads and of its result; `pass::expand_runtime` writes out what the function does
//! (`crate::ir::SystemInst`'s module doc). `__assertfail` and `trap` end the thread;
//! `trap` is a [`SystemInst::Fail`].

use ptxvk_frontend::ast::Operand;
use ptxvk_frontend::{Diagnostic, Span};

use super::{Resolved, Resolver};
use crate::ir::{
    Address, Failure, InstKind, OpTy, RegId, RuntimeCall, RuntimeFn, SystemInst, Terminator, Value,
};
use crate::system as sys;

impl Resolver<'_> {
    /// A call of the declared (body-less) function `name`.
    pub(super) fn system_call(
        &mut self,
        name: &ptxvk_frontend::Ident,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let mut func = match RuntimeFn::named(&name.value) {
            Some(f) if f.takes(args.len(), rets.len()) => f,
            // Cooperative groups' entry points are known by their signatures only.
            Some(RuntimeFn::CgGetIntrinsicHandle | RuntimeFn::CgSynchronize) | None => {
                return Err(undefined(name))
            }
            Some(_) => {
                return Err(Diagnostic::error(
                    span,
                    format!("`{}` is called with the wrong number of arguments", name.value),
                ))
            }
        };
        if let RuntimeFn::GetParameterBufferV2 { bytes } = &mut func {
            *bytes = self.module.device_runtime.max_params().max(8);
        }
        let args = args[..func.reads()].iter().map(|a| self.param_slot(a));
        let args = args.collect::<Result<Vec<_>, _>>()?;
        let result = rets.first().map(|r| self.param_slot(r)).transpose()?;
        // What the kernel has, which the runtime and the passes read.
        match func {
            RuntimeFn::Malloc => self.kernel.heap = true,
            RuntimeFn::CgSynchronize => self.kernel.grid_sync = true,
            RuntimeFn::GetParameterBuffer
            | RuntimeFn::GetParameterBufferV2 { .. }
            | RuntimeFn::LaunchDevice
            | RuntimeFn::LaunchDeviceV2 => self.mark_launches(),
            _ => {}
        }
        let call = SystemInst::Call(RuntimeCall { func, args, result });
        self.push(InstKind::System(Box::new(call)), span);
        if func == RuntimeFn::AssertFail {
            let end = self.thread_end(span);
            self.terminate(end, span);
        }
        Ok(())
    }

    /// `trap`: the launch fails; this thread ends.
    pub(super) fn trap(&mut self, span: Span) {
        self.fail(sys::STATUS_TRAP, &[], span);
    }

    /// The local-window address of the caller's `.param` variable `op` (a `.param`
    /// parameter's is relative to the register holding the caller's address).
    pub(super) fn param_slot(&mut self, op: &Operand) -> Result<Address, Diagnostic> {
        match op {
            Operand::Name { name, component: None } => match self.lookup(&name.value) {
                Some(Resolved::Local(var)) => {
                    let base = self.variable_address(var, OpTy::U(32), name.span);
                    Ok(Address { base: Some(base), offset: 0 })
                }
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
        self.body.cur = failing;
        self.body.closed = false;
        self.fail(status, details, span);
        self.body.cur = ok;
        self.body.closed = false;
    }

    /// Records failure `status` (with the assertion's message, file, line and
    /// function in `details`) unless another thread did first, and ends the thread.
    pub(super) fn fail(&mut self, status: u32, details: &[Value], span: Span) {
        let details = details.to_vec();
        let fail = SystemInst::Fail(Failure { status, details });
        self.push(InstKind::System(Box::new(fail)), span);
        let end = self.thread_end(span);
        self.terminate(end, span);
    }
}

/// The diagnostic of a call of a function that is neither defined nor CUDA's.
fn undefined(name: &ptxvk_frontend::Ident) -> Diagnostic {
    let n = name.value.as_str();
    let short = n.strip_prefix("__cudaCDP2").or_else(|| n.strip_prefix("cuda"));
    // CUDA 12 removed device-side synchronization (CUDA Programming Guide, "CUDA
    // Dynamic Parallelism", CDP2): a grid cannot wait for its children.
    if matches!(short, Some("DeviceSynchronize" | "DeviceSynchronizeDeprecationAvoidance")) {
        let what = if n == "cudaDeviceSynchronize" {
            format!("`{n}`")
        } else {
            format!("`{n}` (`cudaDeviceSynchronize`)")
        };
        return Diagnostic::error(
            name.span,
            format!(
                "{what} in device code was removed in CUDA 12: a grid cannot wait for the \
                 grids it launches"
            ),
        )
        .with_note(
            "launch the work that needs the children's results into `cudaStreamTailLaunch`: \
             it runs after this grid and all its other launches have completed",
        );
    }
    if n.starts_with("__cudaCDP2") {
        return Diagnostic::error(
            name.span,
            format!("the device runtime's `{n}` is not supported"),
        )
        .with_note(
            "device code may launch kernels (`cudaGetParameterBuffer`, `cudaLaunchDevice` \
                 and their V2 forms), create and destroy streams and read the last error",
        );
    }
    Diagnostic::error(name.span, format!("`{n}` is called but never defined")).with_note(
        "only functions defined in the program (its modules, linked) and CUDA's `vprintf`, \
         `__assertfail`, `malloc`, `free` and `cudaCGGetIntrinsicHandle` can be called",
    )
}
