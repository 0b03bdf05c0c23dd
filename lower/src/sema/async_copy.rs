//! Asynchronous copies of sm_80 (PTX ISA 9.2 §9.7.9.25.3): `cp.async` from global to
//! shared memory and its groups, `cp.async.commit_group`, `cp.async.wait_group` and
//! `cp.async.wait_all`.
//!
//! Each `cp.async` becomes one [`InstKind::Copy`] ([`CopyInst::Async`], whose module
//! doc is its specification), which `pass::expand_copies` writes out. A copy is
//! performed when it is issued, so every wait finds its group complete: committing and
//! waiting emit nothing. The form (modifiers, operand counts, the constant cp-size) is
//! `ptxvk_frontend::forms::copy`'s, checked before; this resolves its operands.

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::forms::copy::{copy_form, CopyShape};
use ptxvk_frontend::{Diagnostic, Opcode};

use super::{Mods, Resolver};
use crate::ir::{AsyncCopy, CopyInst, CopyRead, InstKind, OpTy, RegTy, Value};

const U32: OpTy = OpTy::U(32);

impl Resolver<'_> {
    /// `cp.async…`; `None` for other instructions.
    pub(super) fn async_copy(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        if op != Opcode::Cp {
            return None;
        }
        Some(self.cp(i, m))
    }

    /// A `cp` of the form `ptxvk_frontend::forms::copy` checked.
    fn cp(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        match copy_form(i, &m.details, m.types.first())? {
            CopyShape::Nothing => Ok(()),
            CopyShape::Arrive { shared, noinc } => self.async_copy_arrive(i, shared, noinc),
            CopyShape::Async { size, read } => self.async_copy_of(i, size, read),
            CopyShape::Bulk { to_shared, from_shared, mbarrier, multicast } => {
                self.bulk_copy(i, [to_shared, from_shared], mbarrier, multicast)
            }
            CopyShape::Tensor { rank: _, load, multicast } => self.tensor_copy(i, load, multicast),
        }
    }

    /// `cp.async [dst], [src], cp-size{, src-size | ignore-src}` of `size` bytes;
    /// `read` when operand 3 says how many bytes to read.
    fn async_copy_of(
        &mut self,
        i: &ast::Instruction,
        size: u32,
        read: bool,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let ops = i.operands.as_slice();
        // How many source bytes to read: all, a count, or none where a predicate holds.
        let read = match ops.get(3).filter(|_| read) {
            None => CopyRead::All,
            Some(x) => {
                let predicate = match x {
                    Operand::Not(..) => true,
                    Operand::Name { name, .. } => matches!(
                        self.lookup(&name.value),
                        Some(super::Resolved::Reg(r)) if self.kernel.reg(r).ty == RegTy::Pred
                    ),
                    _ => false,
                };
                if predicate {
                    let (pred, negate) = self.pred(x)?;
                    CopyRead::IgnoreSrc { pred, negate }
                } else {
                    match self.src(x, U32, false, span)? {
                        // A constant that covers the copy (`cp.async … 4, 4`).
                        Value::Imm(n) if n >= u64::from(size) => CopyRead::All,
                        count => CopyRead::Count(count),
                    }
                }
            }
        };
        let (_, dst) = self.address(&ops[0], StateSpace::Shared)?;
        let (_, src) = self.address(&ops[1], StateSpace::Global)?;
        let copy = CopyInst::Async(AsyncCopy { dst, src, size, read });
        self.push(InstKind::Copy(Box::new(copy)), span);
        Ok(())
    }
}
