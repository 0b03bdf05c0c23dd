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
//! into the one CTA of the cluster when its bit is in the mask (`sema::cluster`).

use ptxvk_frontend::ast::{self, StateSpace};
use ptxvk_frontend::modifier::{CacheHint, CopyForm, CopySpace, Modifier};
use ptxvk_frontend::Diagnostic;

use super::async_copy::{ASYNC, BULK};
use super::Lowerer;
use crate::ir::{BulkCopy, CopyInst, InstKind, OpTy, Space};

/// The IR space of a `cp` state space modifier; `None` for other modifiers.
pub(super) fn copy_space(d: Modifier) -> Option<Space> {
    match d {
        Modifier::CopySpace(CopySpace::Global) => Some(Space::Global),
        Modifier::CopySpace(_) => Some(Space::Shared),
        _ => None,
    }
}

const GLOBAL: Modifier = Modifier::CopySpace(CopySpace::Global);
pub(super) const CACHE_HINT: Modifier = Modifier::CacheHint(CacheHint::L2CacheHint);
const COMMIT_GROUP: Modifier = Modifier::CopyForm(CopyForm::CommitGroup);
const WAIT_GROUP: Modifier = Modifier::CopyForm(CopyForm::WaitGroup);
const READ: Modifier = Modifier::CopyForm(CopyForm::Read);
const PREFETCH: Modifier = Modifier::CopyForm(CopyForm::Prefetch);
const L2: Modifier = Modifier::CopyForm(CopyForm::L2);
pub(super) const COMPLETE_TX: Modifier = Modifier::CopyForm(CopyForm::CompleteTxBytes);
pub(super) const BULK_GROUP: Modifier = Modifier::CopyForm(CopyForm::BulkGroup);
pub(super) const MULTICAST: Modifier = Modifier::CopyForm(CopyForm::MulticastCluster);
const TENSOR: Modifier = Modifier::CopyForm(CopyForm::Tensor);

const U32: OpTy = OpTy::U(32);

impl Lowerer<'_> {
    /// `cp.async.bulk…` and `cp.async.bulk.tensor…` (`sema::tensor_copy`).
    pub(super) fn bulk_copy(
        &mut self,
        i: &ast::Instruction,
        names: &[Modifier],
        spelled: &str,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let ops = i.operands.as_slice();
        let unsupported =
            |what: &str| super::unsupported(span, &format!("`{what}`"), crate::coverage::ASYNC);
        match names {
            [ASYNC, BULK, COMMIT_GROUP] => return self.copy_group_operands(i, 0),
            [ASYNC, BULK, WAIT_GROUP] | [ASYNC, BULK, WAIT_GROUP, READ] => {
                return self.copy_group_operands(i, 1)
            }
            [ASYNC, BULK, PREFETCH, L2, GLOBAL, rest @ ..] => {
                // `[src], size {, cache-policy}`: nothing to do but read the operands.
                if rest.iter().any(|r| *r != CACHE_HINT) || !(2..=3).contains(&ops.len()) {
                    return Err(unsupported(&format!("cp{spelled}")));
                }
                return Ok(());
            }
            [ASYNC, BULK, TENSOR, ..] => return self.tensor_copy(i, names, spelled),
            _ => {}
        }
        let mut dst_space = None;
        let mut src_space = None;
        let mut mbarrier = false;
        let mut multicast = false;
        let mut hinted = false;
        for n in &names[2..] {
            match (copy_space(*n), *n) {
                (Some(s), _) if dst_space.is_none() => dst_space = Some(s),
                (Some(s), _) if src_space.is_none() => src_space = Some(s),
                (None, COMPLETE_TX) => mbarrier = true,
                (None, BULK_GROUP) => {}
                (None, MULTICAST) => multicast = true,
                (None, CACHE_HINT) => hinted = true,
                _ => return Err(unsupported(&format!("cp.async.bulk with `{n}`"))),
            }
        }
        let (Some(to), Some(from)) = (dst_space, src_space) else {
            return Err(Diagnostic::error(
                span,
                "`cp.async.bulk` names a destination and a source state space",
            ));
        };
        // Copies into shared memory complete on an mbarrier, copies out of it in bulk groups.
        if (to == Space::Shared) != mbarrier || (to == Space::Global && from != Space::Shared) {
            return Err(Diagnostic::error(
                span,
                "`cp.async.bulk` copies into `.shared` on an mbarrier \
                 (`.mbarrier::complete_tx::bytes`) or from `.shared::cta` to `.global` in a \
                 bulk group (`.bulk_group`)",
            ));
        }
        // Only the copy from `.global` into `.shared::cluster` multicasts (its `ctaMask`
        // follows the mbarrier operand).
        if multicast && !mbarrier {
            return Err(Diagnostic::error(
                span,
                "`cp.async.bulk` multicasts (`.multicast::cluster`) only into `.shared::cluster` \
                 on an mbarrier",
            ));
        }
        let expected = 3 + usize::from(mbarrier) + usize::from(multicast) + usize::from(hinted);
        if ops.len() != expected {
            return Err(Diagnostic::error(
                span,
                format!("`cp{spelled}` takes {expected} operands, found {}", ops.len()),
            ));
        }
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

    /// `cp.async.bulk.commit_group` / `wait_group{.read} N` (module doc).
    fn copy_group_operands(
        &mut self,
        i: &ast::Instruction,
        count: usize,
    ) -> Result<(), Diagnostic> {
        if i.operands.len() != count {
            return Err(Diagnostic::error(
                i.span,
                format!("this instruction takes {count} operand(s)"),
            ));
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
