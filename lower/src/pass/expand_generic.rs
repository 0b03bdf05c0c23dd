//! Pass: the accesses of generic addresses ([`Space::Generic`], whose rules are its
//! doc) become a test of the address's window and one direct access per space
//! (CFG → CFG).
//!
//! The address's upper half picks the space (the launch ABI's windows, `ir`'s module
//! doc, *Memory*): a shared-window address is the shared access at its lower half, a
//! local-window address the local access at its lower half, any other the global
//! access at the address itself. Each space gets its own block, and the three join
//! after them. A strong `ld`/`st` (an `Atomic` load or store) is an atomic in global
//! and shared memory (`pass::expand_strong`'s rule), a plain access in local memory;
//! any other atomic on local memory fails the launch as `trap`.
//!
//! Pre: CFG IR after `pass::inline`, whose generic accesses semantic analysis made
//! (`sema::memory`, `sema::atomic`) and `pass::infer_spaces` did not prove, or
//! `pass::expand_runtime` made, with 64-bit addresses
//! (modules with 32-bit addresses widen theirs in sema). Runs before `pass::expand_system`,
//! which writes out the failure of a local atomic.
//!
//! Post: no access of [`Space::Generic`] is left; each became its dispatch, with its
//! span, in blocks appended to the kernel; the instructions after it move to the join.

use ptxvk_frontend::Diagnostic;

use super::expand_strong::{native, plain, Data, Plain};
use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{
    Address, AtomicOp, BinaryOp, CmpOp, Failure, FloatMode, InstKind, Kernel, OpTy, Space,
    SystemInst, Terminator, Value, LOCAL_WINDOW, SHARED_WINDOW,
};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Whether `kind` is an access of a generic address (`pass::leftover`).
pub fn is_generic(kind: &InstKind) -> bool {
    matches!(
        kind,
        InstKind::Load { space: Space::Generic, .. }
            | InstKind::Store { space: Space::Generic, .. }
            | InstKind::Atomic { space: Space::Generic, .. }
    )
}

/// Expands every generic access of `k` as the module doc says.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    expander::each(k, is_generic, |k, cur, span, kind| {
        let mut e = Expand { k, cur, span };
        e.dispatch(&kind);
        Ok(e.cur)
    })
}

/// The access `kind` (generic) in `space` at `addr`: the instructions of that space's
/// access, pushed by `b`. A local atomic other than a load or store ends the block
/// with the failure (`true`: the block is closed).
pub(crate) fn access_in(
    b: &mut impl Build,
    kind: &InstKind,
    space: Space,
    addr: Address,
    wide_window: bool,
) -> bool {
    match kind.clone() {
        InstKind::Load { ty, dsts, .. } => b.push(InstKind::Load { space, ty, dsts, addr }),
        InstKind::Store { ty, srcs, .. } => b.push(InstKind::Store { space, ty, srcs, addr }),
        InstKind::Atomic { op, ty, scope, order, dst, src, cmp, .. } => {
            // A strong `ld`/`st`: `pass::expand_strong`'s rule, in `space`.
            let load = op == AtomicOp::Load;
            if (load || op == AtomicOp::Store) && !native(space, ty, wide_window) {
                let data = if load { Data::Load(vec![dst]) } else { Data::Store(vec![src]) };
                plain(Plain { space, ty, scope, order, addr, data })
                    .into_iter()
                    .for_each(|k| b.push(k));
                return false;
            }
            if space == Space::Local {
                // PTX ISA 9.2 §9.7.13.5: a generic atomic on local memory is undefined.
                let fail = Failure { status: sys::STATUS_TRAP, details: Vec::new() };
                b.push(InstKind::System(Box::new(SystemInst::Fail(fail))));
                return true;
            }
            // `.ftz` of a float add is global memory's (§9.7.13.5).
            let op = match op {
                AtomicOp::FloatAdd { ftz } => {
                    AtomicOp::FloatAdd { ftz: ftz && space == Space::Global }
                }
                op => op,
            };
            b.push(InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp });
        }
        _ => {}
    }
    false
}

expander::expansion!(
    /// Builds the expansion of one instruction from block `cur` on.
    struct Expand
);

impl Expand<'_> {
    /// The access `kind` for the shared window, the local window, or global memory,
    /// chosen by the address's upper half (the windows' offsets are the lower half).
    fn dispatch(&mut self, kind: &InstKind) {
        let address = match kind {
            InstKind::Load { addr, .. }
            | InstKind::Store { addr, .. }
            | InstKind::Atomic { addr, .. } => *addr,
            _ => return,
        };
        let wide = self.k.shared.wide();
        let mode = FloatMode::default();
        let full = self.temp(U64);
        let base = address.base.map_or(Value::Imm(0), Value::Reg);
        let (lhs, rhs) = (base, Value::Imm(address.offset as u64));
        self.push(InstKind::Binary { op: BinaryOp::Add, ty: U64, mode, dst: full, lhs, rhs });
        let (hi, low) = (self.temp(U64), self.temp(U32));
        let (lhs, rhs) = (Value::Reg(full), Value::Imm(32));
        self.push(InstKind::Binary { op: BinaryOp::Shr, ty: U64, mode, dst: hi, lhs, rhs });
        let src = Value::Reg(full);
        self.push(InstKind::Convert { to: U32, from: U64, rounding: None, mode, dst: low, src });
        let is_shared = self.temp(OpTy::Pred);
        let is_local = self.temp(OpTy::Pred);
        for (d, w) in [(is_shared, SHARED_WINDOW), (is_local, LOCAL_WINDOW)] {
            self.cmp_into(d, CmpOp::Eq, U64, Value::Reg(hi), Value::Imm(w >> 32));
        }
        let join = self.new_block();
        for (cond, space) in [(is_shared, Space::Shared), (is_local, Space::Local)] {
            let then = self.new_block();
            let next = self.new_block();
            let branch = Terminator::Branch { cond, negate: false, if_true: then, if_false: next };
            self.end_block(branch, then);
            let closed = access_in(self, kind, space, Address { base: Some(low), offset: 0 }, wide);
            let term = if closed { Terminator::Return } else { Terminator::Jump(join) };
            self.end_block(term, next);
        }
        access_in(self, kind, Space::Global, Address { base: Some(full), offset: 0 }, wide);
        self.end_block(Terminator::Jump(join), join);
    }
}
