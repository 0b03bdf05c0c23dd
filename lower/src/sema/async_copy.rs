//! Asynchronous copies of sm_80 (PTX ISA 9.2 §9.7.9.25.3): `cp.async` from global to
//! shared memory and its groups, `cp.async.commit_group`, `cp.async.wait_group` and
//! `cp.async.wait_all`.
//!
//! Each `cp.async` becomes one [`InstKind::Copy`] ([`CopyInst::Async`], whose module
//! doc is its specification), which `pass::expand_copies` writes out. A copy is
//! performed when it is issued, so every wait finds its group complete: committing and
//! waiting emit nothing.

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::modifier::{CacheHint, CacheOp, CopyForm, CopySpace, Modifier};
use ptxvk_frontend::{Diagnostic, Opcode};

use super::{Lowerer, Mods};
use crate::ir::{AsyncCopy, CopyInst, CopyRead, InstKind, OpTy, RegTy, Value};

/// The modifiers of `i` as written (`.async.bulk.…`), for messages.
pub(super) fn spelled(i: &ast::Instruction) -> String {
    i.modifiers.iter().map(|m| m.value.as_str()).collect()
}

pub(super) const ASYNC: Modifier = Modifier::CopyForm(CopyForm::Async);
pub(super) const BULK: Modifier = Modifier::CopyForm(CopyForm::Bulk);
const COMMIT_GROUP: Modifier = Modifier::CopyForm(CopyForm::CommitGroup);
const WAIT_ALL: Modifier = Modifier::CopyForm(CopyForm::WaitAll);
const WAIT_GROUP: Modifier = Modifier::CopyForm(CopyForm::WaitGroup);
const MBARRIER: Modifier = Modifier::CopyForm(CopyForm::Mbarrier);
const ARRIVE: Modifier = Modifier::CopyForm(CopyForm::Arrive);

const U32: OpTy = OpTy::U(32);

impl Lowerer<'_> {
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

    fn cp(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let names: Vec<Modifier> = m.details.iter().map(|d| d.value).collect();
        // The modifiers as written, for messages.
        let spelled = spelled(i);
        let unsupported =
            |what: &str| super::unsupported(span, &format!("`{what}`"), crate::coverage::ASYNC);
        match names.as_slice() {
            [ASYNC, COMMIT_GROUP] | [ASYNC, WAIT_ALL] => {
                return self.no_operands(i, 0);
            }
            [ASYNC, WAIT_GROUP] => return self.no_operands(i, 1),
            [ASYNC, MBARRIER, ARRIVE, ..] => return self.async_copy_arrive(i, m),
            [ASYNC, BULK, ..] => return self.bulk_copy(i, &names, &spelled),
            [ASYNC, ..] => {}
            _ => return Err(unsupported(&format!("cp{spelled}"))),
        }
        if let Some(t) = m.types.first() {
            let t = t.value.directive();
            return Err(unsupported(&format!("cp.async with `{t}`")));
        }
        let mut cache = None;
        let mut spaces = Vec::new();
        let mut hinted = false;
        for d in &m.details[1..] {
            match d.value {
                Modifier::CacheOp(c @ (CacheOp::Ca | CacheOp::Cg)) if cache.is_none() => {
                    cache = Some(c)
                }
                Modifier::CopySpace(s @ (CopySpace::Shared | CopySpace::SharedCta)) => {
                    spaces.push(Some(s))
                }
                Modifier::CopySpace(CopySpace::Global) => spaces.push(None),
                // Cache hints: `.L2::cache_hint` adds a cache-policy operand.
                Modifier::CacheHint(CacheHint::L2CacheHint) => hinted = true,
                Modifier::CacheHint(
                    CacheHint::L2Prefetch64B
                    | CacheHint::L2Prefetch128B
                    | CacheHint::L2Prefetch256B,
                ) => {}
                other => return Err(unsupported(&format!("cp.async with `{other}`"))),
            }
        }
        let Some(cache) = cache else {
            return Err(unsupported(&format!("cp{spelled}")));
        };
        // The destination in shared memory, the source global (`None`).
        if !matches!(spaces.as_slice(), [Some(_), None]) {
            return Err(Diagnostic::error(
                span,
                "`cp.async` copies from `.global` to `.shared` (`cp.async.ca.shared.global`)",
            ));
        }
        let ops = i.operands.as_slice();
        let ops = if hinted {
            match ops.split_last() {
                Some((_, rest)) => rest,
                None => ops,
            }
        } else {
            ops
        };
        let (dst, src, size, extra) = match ops {
            [d, s, n] => (d, s, n, None),
            [d, s, n, x] => (d, s, n, Some(x)),
            _ => {
                return Err(Diagnostic::error(
                    span,
                    "`cp.async` takes [dst], [src], cp-size and an optional src-size or \
                     ignore-src predicate",
                ))
            }
        };
        let size = match self.src(size, U32, false, span)? {
            Value::Imm(n @ (4 | 8 | 16)) if cache == CacheOp::Ca || n == 16 => n as u32,
            _ => {
                return Err(Diagnostic::error(
                    size.span(),
                    "cp-size is 4, 8 or 16 (`.cg`: 16), a constant",
                ))
            }
        };
        // How many source bytes to read: all, a count, or none where a predicate holds.
        let read = match extra {
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
        let (_, dst) = self.address(dst, StateSpace::Shared)?;
        let (_, src) = self.address(src, StateSpace::Global)?;
        let copy = CopyInst::Async(AsyncCopy { dst, src, size, read });
        self.push(InstKind::Copy(Box::new(copy)), span);
        Ok(())
    }

    /// `cp.async.commit_group`, `wait_group N`, `wait_all`: nothing to do (module doc).
    fn no_operands(&mut self, i: &ast::Instruction, count: usize) -> Result<(), Diagnostic> {
        if i.operands.len() != count {
            return Err(Diagnostic::error(
                i.span,
                format!("`cp{}` takes {count} operand(s)", spelled(i)),
            ));
        }
        Ok(())
    }
}
