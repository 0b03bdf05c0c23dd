//! CUDA's system calls (ABI guide §4) and `trap`, reported to the host through the
//! kernel's system area (`crate::system`, which gives the layout):
//!
//! * `trap` and `__assertfail(message, file, line, function, char_size)`: the first
//!   failing thread records itself (a compare-and-swap of the status from 0); the
//!   thread then ends. The host turns the status into an error naming the kernel, the
//!   thread and, for assertions, the message, file, line and function.
//! * `vprintf(format, arguments)`: the thread reserves a record with an atomic add and
//!   copies the format address, its ids and up to 256 bytes of the argument buffer
//!   (which CUDA compilers build in local memory); the host formats the records after
//!   the launch. `vprintf` returns 0.
//! * `malloc(size)` and `free(ptr)`: the module's bump-allocated device heap.

use ptxvk_frontend::ast::Operand;
use ptxvk_frontend::{Diagnostic, Span};

use super::expand::Emit;
use super::{Lowerer, Resolved};
use crate::build::Build;
use crate::ir::{
    Address, AtomicOp, CmpOp, Dim, InstKind, OpTy, Order, RegId, Scope, Space, SpecialReg,
    Terminator, Value, LOCAL_WINDOW,
};
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
    /// synchronizes its grid: the runtime refuses grids whose blocks cannot all be
    /// resident, as for `cudaCGSynchronize`.
    pub(super) fn grid_workspace_half(&mut self, high: bool, span: Span) -> Value {
        self.kernel.grid_sync = true;
        let area = self.system_area(span);
        let mut e = Emit { l: self, span };
        let workspace = e.add(U64, Value::Reg(area), Value::Imm(u64::from(sys::GRID_WORKSPACE)));
        let half = if high {
            e.bin(crate::ir::BinaryOp::Shr, U64, workspace, Value::Imm(32))
        } else {
            workspace
        };
        e.cvt(U32, U64, half)
    }

    /// `malloc(size)`: `size` bytes (rounded up to 16) from the module's heap, or 0.
    fn malloc(&mut self, size: &Operand, ret: &Operand, span: Span) -> Result<(), Diagnostic> {
        let size = self.param_value(size, U64)?;
        let ret = self.param_slot(ret)?;
        self.kernel.heap = true;
        let area = self.system_area(span);
        let heap = self.temp(U64.storage(), span);
        let addr = Address { base: Some(area), offset: i64::from(sys::HEAP) };
        self.push(
            InstKind::Load { space: Space::Global, ty: U64, dsts: vec![Some(heap)], addr },
            span,
        );
        let mut e = Emit { l: self, span };
        let rounded = e.add(U64, size, Value::Imm(15));
        let rounded = e.and(U64, rounded, Value::Imm(!15));
        // A request larger than the whole heap fails without taking anything (also
        // keeping `used + rounded` below 2^64); the others take their bytes, and fail
        // if they pass the end, which only wastes the heap's unused tail.
        let room = sys::HEAP_BYTES - sys::HEAP_START;
        let small = e.cmp(CmpOp::Le, U64, rounded, Value::Imm(room));
        let take = e.sel(U64, small, rounded, Value::Imm(0));
        let used = e.atomic_add_global(U64, Address { base: Some(heap), offset: 0 }, take);
        let left = e.bin(crate::ir::BinaryOp::Sub, U64, Value::Imm(room), rounded);
        let below = e.cmp(CmpOp::Le, U64, Value::Reg(used), left);
        let fits = e.pred_and(small, below);
        let start = e.add(U64, Value::Reg(heap), Value::Imm(sys::HEAP_START));
        let ptr = e.add(U64, start, Value::Reg(used));
        let result = e.sel(U64, fits, ptr, Value::Imm(0));
        self.push(
            InstKind::Store { space: Space::Local, ty: U64, srcs: vec![result], addr: ret },
            span,
        );
        Ok(())
    }

    /// `cudaCGSynchronize`: a barrier across the whole grid (CUDA Programming Guide,
    /// "Grid Synchronization"). A block barrier, then thread 0 of each block arrives at
    /// the launch's counter in the system area; the last to arrive resets it and bumps
    /// the generation, the others spin until the generation changes; a block barrier
    /// again. Correct only when every block is resident at once, which the runtime
    /// checks before launching ([`crate::ir::Kernel::grid_sync`]). The wait is two nested
    /// loops of 65,535 rounds (lavapipe ends any one loop after 65,535 iterations);
    /// running out of both fails the launch instead of going on unsynchronized.
    fn grid_sync(&mut self, span: Span) {
        const ROUNDS: u64 = 65_535;
        self.kernel.grid_sync = true;
        let area = self.system_area(span);
        let at = |offset: u32| Address { base: Some(area), offset: i64::from(offset) };
        self.push(InstKind::Barrier, span);
        self.push(InstKind::Fence { device_scope: true }, span);
        let t = self.linear_tid(span);
        let mut e = Emit { l: self, span };
        let leader = e.cmp(CmpOp::Eq, U32, t, Value::Imm(0));
        let lead = self.new_block(None, span);
        let join = self.new_block(None, span);
        self.terminate(
            Terminator::Branch { cond: leader, negate: false, if_true: lead, if_false: join },
            span,
        );
        self.cur = lead;
        self.closed = false;
        let mut blocks = Value::Imm(1);
        for d in [Dim::X, Dim::Y, Dim::Z] {
            let n = self.temp(U32.storage(), span);
            self.push(InstKind::Special { dst: n, reg: SpecialReg::Nctaid(d) }, span);
            blocks =
                Emit { l: self, span }.bin(crate::ir::BinaryOp::Mul, U32, blocks, Value::Reg(n));
        }
        let atomic = |l: &mut Self, op, order, offset, src| {
            let dst = l.temp(U32.storage(), span);
            let kind = InstKind::Atomic {
                op,
                space: Space::Global,
                ty: U32,
                scope: Scope::Gpu,
                order,
                dst: Some(dst),
                addr: at(offset),
                src,
                cmp: Value::Imm(0),
            };
            l.push(kind, span);
            Value::Reg(dst)
        };
        let generation =
            atomic(self, AtomicOp::Load, Order::Acquire, sys::GRID_GENERATION, Value::Imm(0));
        let arrived = atomic(self, AtomicOp::Add, Order::AcqRel, sys::GRID_ARRIVED, Value::Imm(1));
        let mut e = Emit { l: self, span };
        let all_but_one = e.bin(crate::ir::BinaryOp::Sub, U32, blocks, Value::Imm(1));
        let last = e.cmp(CmpOp::Eq, U32, arrived, all_but_one);
        let release = self.new_block(None, span);
        let wait = self.new_block(None, span);
        self.terminate(
            Terminator::Branch { cond: last, negate: false, if_true: release, if_false: wait },
            span,
        );
        // The last block: reset the count for the next synchronization, then release.
        self.cur = release;
        self.closed = false;
        atomic(self, AtomicOp::Exch, Order::Relaxed, sys::GRID_ARRIVED, Value::Imm(0));
        atomic(self, AtomicOp::Add, Order::Release, sys::GRID_GENERATION, Value::Imm(1));
        self.terminate(Terminator::Jump(join), span);
        // The others: spin (outer × inner rounds) until the generation moves on.
        let (outer, inner) = (self.temp(U32.storage(), span), self.temp(U32.storage(), span));
        self.cur = wait;
        self.closed = false;
        Emit { l: self, span }.mov(U32, outer, Value::Imm(0));
        let outer_head = self.new_block(None, span);
        self.terminate(Terminator::Jump(outer_head), span);
        self.cur = outer_head;
        self.closed = false;
        Emit { l: self, span }.mov(U32, inner, Value::Imm(0));
        let inner_head = self.new_block(None, span);
        self.terminate(Terminator::Jump(inner_head), span);
        self.cur = inner_head;
        self.closed = false;
        // Relaxed: on lavapipe an acquire in the loop is a suspension point that lets the
        // block's other subgroups past the closing barrier (docs/status.md, *Devices*);
        // the fence after the loop orders what the other blocks wrote.
        let now = atomic(self, AtomicOp::Load, Order::Relaxed, sys::GRID_GENERATION, Value::Imm(0));
        let moved = Emit { l: self, span }.cmp(CmpOp::Ne, U32, now, generation);
        let inner_latch = self.new_block(None, span);
        self.terminate(
            Terminator::Branch { cond: moved, negate: false, if_true: join, if_false: inner_latch },
            span,
        );
        self.cur = inner_latch;
        self.closed = false;
        let mut e = Emit { l: self, span };
        let i = e.add(U32, Value::Reg(inner), Value::Imm(1));
        e.mov(U32, inner, i);
        let more = e.cmp(CmpOp::Lt, U32, Value::Reg(inner), Value::Imm(ROUNDS));
        let outer_latch = self.new_block(None, span);
        self.terminate(
            Terminator::Branch {
                cond: more,
                negate: false,
                if_true: inner_head,
                if_false: outer_latch,
            },
            span,
        );
        self.cur = outer_latch;
        self.closed = false;
        let mut e = Emit { l: self, span };
        let o = e.add(U32, Value::Reg(outer), Value::Imm(1));
        e.mov(U32, outer, o);
        let more = e.cmp(CmpOp::Lt, U32, Value::Reg(outer), Value::Imm(ROUNDS));
        let timed_out = self.new_block(None, span);
        self.terminate(
            Terminator::Branch {
                cond: more,
                negate: false,
                if_true: outer_head,
                if_false: timed_out,
            },
            span,
        );
        self.cur = timed_out;
        self.closed = false;
        self.record_failure(sys::STATUS_GRID_SYNC, &[], span);
        self.terminate(Terminator::Jump(join), span);
        self.cur = join;
        self.closed = false;
        self.push(InstKind::Fence { device_scope: true }, span);
        self.push(InstKind::Barrier, span);
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

    /// The device address of the system area.
    pub(super) fn system_area(&mut self, span: Span) -> RegId {
        self.kernel.system = true;
        let param_bytes = self.kernel.abi.size;
        Emit { l: self, span }.system_area(param_bytes)
    }

    pub(super) fn store_global(&mut self, ty: OpTy, addr: Address, v: Value, span: Span) {
        self.push(InstKind::Store { space: Space::Global, ty, srcs: vec![v], addr }, span);
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
        self.record_failure(status, details, span);
        let end = self.thread_end(span);
        self.terminate(end, span);
    }

    /// Records `status` and `details` as the launch's failure if it is the first; the
    /// thread goes on.
    fn record_failure(&mut self, status: u32, details: &[Value], span: Span) {
        // A zero-width span at the instruction: memcheck (`pass::check`) tests the
        // accesses whose span is a memory instruction's, and these are the system
        // area's, not the program's (an `mbarrier` or tensor copy may fail).
        let span = Span::new(span.start, span.start);
        let area = self.system_area(span);
        let first = Emit { l: self, span }.claim_failure(area, Value::Imm(u64::from(status)));
        let record = self.new_block(None, span);
        let end = self.new_block(None, span);
        self.terminate(
            Terminator::Branch { cond: first, negate: false, if_true: record, if_false: end },
            span,
        );
        self.cur = record;
        self.closed = false;
        Emit { l: self, span }.store_failure(area, details);
        self.terminate(Terminator::Jump(end), span);
        self.cur = end;
        self.closed = false;
    }

    /// `vprintf(format, arguments)`: appends a printf record (see the module doc).
    fn vprintf(
        &mut self,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let format = self.param_value(&args[0], U64)?;
        let arguments = self.param_value(&args[1], U64)?;
        let local_bytes = self.kernel.local_bytes;
        let area = self.system_area(span);
        let mut e = Emit { l: self, span };
        // The argument buffer's offset in the local window, and how many bytes of the
        // window follow it (at most 256); nothing when it is not local memory.
        let hi = e.bin(crate::ir::BinaryOp::Shr, U64, arguments, Value::Imm(32));
        let is_local = e.cmp(CmpOp::Eq, U64, hi, Value::Imm(LOCAL_WINDOW >> 32));
        let low = e.lo32(arguments);
        let inside = e.cmp(CmpOp::Lt, U32, low, Value::Imm(u64::from(local_bytes)));
        let rest = e.bin(crate::ir::BinaryOp::Sub, U32, Value::Imm(u64::from(local_bytes)), low);
        let rest = e.sel(U32, inside, rest, Value::Imm(0));
        let capped = e.cmp(CmpOp::Lt, U32, rest, Value::Imm(u64::from(sys::MAX_ARGUMENT_BYTES)));
        let n = e.sel(U32, capped, rest, Value::Imm(u64::from(sys::MAX_ARGUMENT_BYTES)));
        let n = e.sel(U32, is_local, n, Value::Imm(0));
        // A null buffer (no arguments) is complete; another non-local one is missing.
        let null = e.cmp(CmpOp::Eq, U64, arguments, Value::Imm(0));
        let present = e.pred_or(is_local, null);
        let flag =
            e.sel(U32, present, Value::Imm(0), Value::Imm(u64::from(sys::ARGUMENTS_MISSING)));
        let described = e.or(U32, n, flag);
        let padded = e.add(U32, n, Value::Imm(7));
        let padded = e.and(U32, padded, Value::Imm(!7u32 as u64));
        let size = e.add(U32, padded, Value::Imm(u64::from(sys::RECORD_HEADER)));
        let used = Address { base: Some(area), offset: i64::from(sys::PRINTF_USED) };
        let start = e.atomic_add_global(U32, used, size);
        // Only a record that fits entirely is written; `start + size` cannot wrap
        // before the count passes 4 GiB of attempted output.
        let end = e.add(U32, Value::Reg(start), size);
        let fits = e.cmp(CmpOp::Le, U32, end, Value::Imm(u64::from(sys::PRINTF_CAPACITY)));
        let start64 = e.cvt(U64, U32, Value::Reg(start));
        let rec = e.add(U64, Value::Reg(area), start64);
        let rec = e.add(U64, rec, Value::Imm(u64::from(sys::HEADER)));
        let rec_reg = e.temp(U64);
        e.mov(U64, rec_reg, rec);
        let write = self.new_block(None, span);
        let done = self.new_block(None, span);
        self.terminate(
            Terminator::Branch { cond: fits, negate: false, if_true: write, if_false: done },
            span,
        );
        self.cur = write;
        self.closed = false;
        let at = |off: u32| Address { base: Some(rec_reg), offset: i64::from(off) };
        self.store_global(U32, at(0), size, span);
        self.store_global(U32, at(4), described, span);
        self.store_global(U64, at(8), format, span);
        Emit { l: self, span }.store_thread(rec_reg, 16);
        // Copy the argument buffer a word at a time: for k in (0..n).step_by(4).
        let k = self.temp(U32.storage(), span);
        Emit { l: self, span }.mov(U32, k, Value::Imm(0));
        let head = self.new_block(None, span);
        let body = self.new_block(None, span);
        self.terminate(Terminator::Jump(head), span);
        self.cur = head;
        self.closed = false;
        let more = Emit { l: self, span }.cmp(CmpOp::Lt, U32, Value::Reg(k), n);
        self.terminate(
            Terminator::Branch { cond: more, negate: false, if_true: body, if_false: done },
            span,
        );
        self.cur = body;
        self.closed = false;
        let mut e = Emit { l: self, span };
        let src = e.add(U32, low, Value::Reg(k));
        let src_reg = e.temp(U32);
        e.mov(U32, src_reg, src);
        let word = e.temp(U32);
        e.push(InstKind::Load {
            space: Space::Local,
            ty: U32,
            dsts: vec![Some(word)],
            addr: Address { base: Some(src_reg), offset: 0 },
        });
        let k64 = e.cvt(U64, U32, Value::Reg(k));
        let dst = e.add(U64, Value::Reg(rec_reg), k64);
        let dst_reg = e.temp(U64);
        e.mov(U64, dst_reg, dst);
        let next = e.add(U32, Value::Reg(k), Value::Imm(4));
        e.mov(U32, k, next);
        let addr = Address { base: Some(dst_reg), offset: i64::from(sys::RECORD_HEADER) };
        self.store_global(U32, addr, Value::Reg(word), span);
        self.terminate(Terminator::Jump(head), span);
        self.cur = done;
        self.closed = false;
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
