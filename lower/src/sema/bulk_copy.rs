//! Bulk asynchronous copies of sm_90 (PTX ISA 9.2 §9.7.9.25.4): `cp.async.bulk` from
//! global to shared memory completing on an mbarrier, from shared memory to global
//! memory in bulk groups, and between shared memory of the cluster; the groups'
//! `cp.async.bulk.commit_group`/`wait_group{.read}`; `cp.async.bulk.prefetch.L2`.
//!
//! A global/shared copy becomes one [`InstKind::Copy`] ([`CopyInst::Bulk`], whose
//! module doc is its specification: performed when it is issued, by the issuing
//! thread, 16 bytes at a time), which `pass::expand_copies` writes out. A copy that
//! completes on an mbarrier is followed by the `complete_tx` of its size on it, an
//! `MbarrierOp::CompleteTx` (`sema::mbarrier`); bulk groups complete at once,
//! so committing and waiting emit nothing, and prefetching does nothing. The accesses
//! are the program's own, which checked launches test. `.multicast::cluster` copies
//! into the one CTA of the cluster when its bit is in the mask (`sema::cluster`). The
//! form is `ptxvk_frontend::forms::copy`'s, checked before; this resolves its operands.

use ptxvk_frontend::ast::{self, StateSpace};
use ptxvk_frontend::Diagnostic;

use super::Resolver;
use crate::ir::{BulkCopy, CopyInst, InstKind, OpTy, Space};

const U32: OpTy = OpTy::U(32);

impl Resolver<'_> {
    /// `cp.async.bulk [dst], [src], size{, [mbar]}{, ctaMask}` between the spaces
    /// `shared` says (destination, source), completing on the mbarrier of operand 3 or
    /// in a bulk group, multicast with the mask of operand 4.
    pub(super) fn bulk_copy(
        &mut self,
        i: &ast::Instruction,
        shared: [bool; 2],
        mbarrier: bool,
        multicast: bool,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let ops = i.operands.as_slice();
        let [to, from] = shared.map(|s| if s { Space::Shared } else { Space::Global });
        let (_, dst) = self.address(&ops[0], space_of(to))?;
        let (_, src) = self.address(&ops[1], space_of(from))?;
        let size = self.src(&ops[2], U32, false, span)?;
        let mask = match multicast {
            true => Some(self.src(&ops[4], OpTy::U(16), false, span)?),
            false => None,
        };
        let copy = BulkCopy { dst_space: to, dst, src_space: from, src, size, mask };
        self.push(InstKind::Copy(Box::new(CopyInst::Bulk(copy))), span);
        // The copy's completion, after it (`crate::ir::CopyInst`).
        if mbarrier {
            let at = self.mbarrier_operand(&ops[3])?;
            self.complete_tx(at, size, span);
        }
        Ok(())
    }
}

/// The PTX state space of an IR space of a bulk copy.
fn space_of(space: Space) -> StateSpace {
    if space == Space::Shared {
        StateSpace::Shared
    } else {
        StateSpace::Global
    }
}
