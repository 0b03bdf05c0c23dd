//! Pass: the system calls, failures, grid barriers and device-side launches
//! ([`InstKind::System`], [`InstKind::DeviceLaunch`], whose specification is
//! [`SystemInst`]'s module doc) become the accesses of the system area
//! ([`crate::system`]) and the launch arena ([`crate::device_launch`]) that report them
//! to the host (CFG → CFG).
//!
//! * A failure: a compare-and-swap of the status word from 0, and where it was 0, the
//!   stores of the thread and the details (their span zero-width, so that `pass::check`
//!   does not take them for the program's accesses).
//! * `vprintf`: the record's size from the argument buffer's place in the local window,
//!   an atomic add reserving it, and where it fits the header's stores and a loop that
//!   copies the buffer a word at a time.
//! * `malloc`: the heap's address from the area, an atomic add of the rounded size on
//!   its counter, and the selects that make a request that does not fit 0.
//! * The grid barriers are `pass::split_grid`'s, which runs before: one left here is an
//!   internal error.
//! * The grid workspace's address: the area's address plus
//!   [`crate::system::GRID_WORKSPACE`], a half of it.
//! * The device-side launches: `launch`'s doc.
//!
//! Pre: CFG IR after `pass::inline` and `pass::split_grid`, whose system and launch operations semantic
//! analysis resolved and checked (`sema::system`) or `pass::expand_runtime` wrote.
//!
//! Post: no [`InstKind::System`] or [`InstKind::DeviceLaunch`] is left; the kernel has
//! a system area ([`Kernel::system`]) if it had any. Each became core operations with
//! its span and the blocks of its conditions and loops, appended to the kernel; the
//! instructions after it move to the last of them. It runs before `pass::check` and
//! `pass::schedule`, which see its accesses and loops as semantic analysis wrote them
//! before this pass existed.

use ptxvk_frontend::{Diagnostic, Span};

use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{
    Address, BinaryOp, BlockId, CmpOp, Failure, InstKind, Kernel, OpTy, RegId, Space, SystemInst,
    Terminator, Value, LOCAL_WINDOW,
};
use crate::system as sys;

mod launch;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Whether `kind` is an instruction this pass expands (`pass::leftover`).
pub fn is_system(kind: &InstKind) -> bool {
    matches!(kind, InstKind::System(_) | InstKind::DeviceLaunch(_))
}

/// Expands every system and launch operation of `k` as the module doc says. One whose
/// shape is wrong (`SystemInst::malformed`) is an internal error.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    expander::each(k, is_system, |k, cur, span, kind| {
        let mut e = Expand { k, cur, span };
        match kind {
            InstKind::System(s) => {
                if let Some(what) = s.malformed() {
                    return Err(Diagnostic::internal(span, what));
                }
                match *s {
                    SystemInst::Fail(f) => e.record_failure(&f),
                    SystemInst::Printf { format, arguments } => e.printf(format, arguments),
                    SystemInst::Malloc { dst, size } => e.malloc(dst, size),
                    // `pass::split_grid` runs first and leaves none.
                    SystemInst::GridSync => {
                        return Err(Diagnostic::internal(span, "a grid barrier after split_grid"));
                    }
                    SystemInst::GridWorkspace { dst, high } => e.grid_workspace(dst, high),
                    // `pass::expand_runtime` runs first and leaves none.
                    SystemInst::Call(_) => {
                        return Err(Diagnostic::internal(
                            span,
                            "a runtime call after expand_runtime",
                        ));
                    }
                }
            }
            InstKind::DeviceLaunch(l) => e.device_launch(&l),
            _ => {}
        }
        Ok(e.cur)
    })
}

expander::expansion!(
    /// Builds the expansion of one instruction from block `cur` on: instructions go to the
    /// current block, branches end it and continue in new blocks, all with `span`.
    struct Expand
);

impl Expand<'_> {
    /// The device address of the system area; the kernel has one.
    fn area(&mut self) -> RegId {
        self.k.system = true;
        let param_bytes = self.k.abi.size;
        self.system_area(param_bytes)
    }

    fn store_global(&mut self, ty: OpTy, addr: Address, v: Value) {
        self.push(InstKind::Store { space: Space::Global, ty, srcs: vec![v], addr });
    }

    /// `dst = cond ? a : b`.
    fn select_into(&mut self, ty: OpTy, dst: RegId, cond: RegId, a: Value, b: Value) {
        self.push(InstKind::Select { ty, dst, a, b, cond, negate: false });
    }

    /// A branch on `cond` to a new block, made current, or `otherwise`.
    fn branch(&mut self, cond: RegId, otherwise: BlockId) {
        let then = self.new_block();
        let term = Terminator::Branch { cond, negate: false, if_true: then, if_false: otherwise };
        self.end_block(term, then);
    }

    /// A failure record (module doc); the thread goes on.
    fn record_failure(&mut self, f: &Failure) {
        // A zero-width span at the instruction: memcheck (`pass::check`) tests the
        // accesses whose span is a memory instruction's, and these are the system
        // area's, not the program's (an `mbarrier` or tensor copy may fail).
        let span = self.span;
        self.span = Span::new(span.start, span.start);
        let area = self.area();
        let first = self.claim_failure(area, Value::Imm(u64::from(f.status)));
        let end = self.new_block();
        self.branch(first, end);
        self.store_failure(area, &f.details);
        self.end_block(Terminator::Jump(end), end);
        self.span = span;
    }

    /// `%envreg2` or `%envreg1` (module doc).
    fn grid_workspace(&mut self, dst: RegId, high: bool) {
        let area = self.area();
        let workspace = self.add(U64, Value::Reg(area), Value::Imm(u64::from(sys::GRID_WORKSPACE)));
        let half =
            if high { self.bin(BinaryOp::Shr, U64, workspace, Value::Imm(32)) } else { workspace };
        let (rounding, mode) = (None, crate::ir::FloatMode::default());
        let kind = InstKind::Convert { to: U32, from: U64, rounding, mode, dst, src: half };
        self.push(kind);
    }

    /// `malloc` (module doc).
    fn malloc(&mut self, dst: RegId, size: Value) {
        let area = self.area();
        let heap = self.temp(U64);
        let addr = Address { base: Some(area), offset: i64::from(sys::HEAP) };
        self.push(InstKind::Load { space: Space::Global, ty: U64, dsts: vec![Some(heap)], addr });
        let rounded = self.add(U64, size, Value::Imm(15));
        let rounded = self.and(U64, rounded, Value::Imm(!15));
        // A request larger than the whole heap fails without taking anything (also
        // keeping `used + rounded` below 2^64); the others take their bytes, and fail
        // if they pass the end, which only wastes the heap's unused tail.
        let room = sys::HEAP_BYTES - sys::HEAP_START;
        let small = self.cmp(CmpOp::Le, U64, rounded, Value::Imm(room));
        let take = self.sel(U64, small, rounded, Value::Imm(0));
        let used = self.atomic_add_global(U64, Address { base: Some(heap), offset: 0 }, take);
        let left = self.bin(BinaryOp::Sub, U64, Value::Imm(room), rounded);
        let below = self.cmp(CmpOp::Le, U64, Value::Reg(used), left);
        let fits = self.pred_and(small, below);
        let start = self.add(U64, Value::Reg(heap), Value::Imm(sys::HEAP_START));
        let ptr = self.add(U64, start, Value::Reg(used));
        self.select_into(U64, dst, fits, ptr, Value::Imm(0));
    }

    /// `vprintf` (module doc).
    fn printf(&mut self, format: Value, arguments: Value) {
        let local_bytes = self.k.local_bytes;
        let area = self.area();
        // The argument buffer's offset in the local window, and how many bytes of the
        // window follow it (at most 256); nothing when it is not local memory.
        let hi = self.bin(BinaryOp::Shr, U64, arguments, Value::Imm(32));
        let is_local = self.cmp(CmpOp::Eq, U64, hi, Value::Imm(LOCAL_WINDOW >> 32));
        let low = self.lo32(arguments);
        let inside = self.cmp(CmpOp::Lt, U32, low, Value::Imm(u64::from(local_bytes)));
        let rest = self.bin(BinaryOp::Sub, U32, Value::Imm(u64::from(local_bytes)), low);
        let rest = self.sel(U32, inside, rest, Value::Imm(0));
        let max = Value::Imm(u64::from(sys::MAX_ARGUMENT_BYTES));
        let capped = self.cmp(CmpOp::Lt, U32, rest, max);
        let n = self.sel(U32, capped, rest, max);
        let n = self.sel(U32, is_local, n, Value::Imm(0));
        // A null buffer (no arguments) is complete; another non-local one is missing.
        let null = self.cmp(CmpOp::Eq, U64, arguments, Value::Imm(0));
        let present = self.pred_or(is_local, null);
        let missing = Value::Imm(u64::from(sys::ARGUMENTS_MISSING));
        let flag = self.sel(U32, present, Value::Imm(0), missing);
        let described = self.or(U32, n, flag);
        let padded = self.add(U32, n, Value::Imm(7));
        let padded = self.and(U32, padded, Value::Imm(!7u32 as u64));
        let size = self.add(U32, padded, Value::Imm(u64::from(sys::RECORD_HEADER)));
        let used = Address { base: Some(area), offset: i64::from(sys::PRINTF_USED) };
        let start = self.atomic_add_global(U32, used, size);
        // Only a record that fits entirely is written; `start + size` cannot wrap
        // before the count passes 4 GiB of attempted output.
        let end = self.add(U32, Value::Reg(start), size);
        let fits = self.cmp(CmpOp::Le, U32, end, Value::Imm(u64::from(sys::PRINTF_CAPACITY)));
        let start64 = self.cvt(U64, U32, Value::Reg(start));
        let rec = self.add(U64, Value::Reg(area), start64);
        let rec = self.add(U64, rec, Value::Imm(u64::from(sys::HEADER)));
        let rec_reg = self.temp(U64);
        self.mov(U64, rec_reg, rec);
        let done = self.new_block();
        self.branch(fits, done);
        let at = |off: u32| Address { base: Some(rec_reg), offset: i64::from(off) };
        self.store_global(U32, at(0), size);
        self.store_global(U32, at(4), described);
        self.store_global(U64, at(8), format);
        self.store_thread(rec_reg, 16);
        // Copy the argument buffer a word at a time: for k in (0..n).step_by(4).
        let k = self.temp(U32);
        self.mov(U32, k, Value::Imm(0));
        let head = self.new_block();
        let body = self.new_block();
        self.end_block(Terminator::Jump(head), head);
        let more = self.cmp(CmpOp::Lt, U32, Value::Reg(k), n);
        let branch =
            Terminator::Branch { cond: more, negate: false, if_true: body, if_false: done };
        self.end_block(branch, body);
        let src = self.add(U32, low, Value::Reg(k));
        let src_reg = self.temp(U32);
        self.mov(U32, src_reg, src);
        let word = self.temp(U32);
        self.push(InstKind::Load {
            space: Space::Local,
            ty: U32,
            dsts: vec![Some(word)],
            addr: Address { base: Some(src_reg), offset: 0 },
        });
        let k64 = self.cvt(U64, U32, Value::Reg(k));
        let dst = self.add(U64, Value::Reg(rec_reg), k64);
        let dst_reg = self.temp(U64);
        self.mov(U64, dst_reg, dst);
        let next = self.add(U32, Value::Reg(k), Value::Imm(4));
        self.mov(U32, k, next);
        let addr = Address { base: Some(dst_reg), offset: i64::from(sys::RECORD_HEADER) };
        self.store_global(U32, addr, Value::Reg(word));
        self.end_block(Terminator::Jump(head), done);
    }
}
