//! `atom` and `red` (PTX ISA 9.2 §9.7.13.5-6) as `InstKind::Atomic`: the integer and
//! bit operations are native atomics; `.inc`, `.dec`, the float additions and 16-bit
//! elements become compare-and-swap loops in `pass::legalize_atomics`, so that they
//! are exact on every device (Vulkan has no wrapping increment, and f64 atomics are
//! optional). `ptxvk_frontend::forms::atomic` decodes the operation, scope, order,
//! type and space and checks the operand count; this resolves the operands.

use ptxvk_frontend::ast::{self, Operand, ScalarType::*, StateSpace};
use ptxvk_frontend::decode;
use ptxvk_frontend::forms::atomic;
use ptxvk_frontend::Diagnostic;
use ptxvk_frontend::Opcode;

use super::{Mods, Resolver};
use crate::ir::{AtomicOp, InstKind, OpTy, Space, Value, VectorAtomic};

/// Whether `i` is a 64-bit `atom`/`red` that may reach shared memory: on `.shared`, or
/// on a generic address in a kernel that makes generic shared addresses. Such a kernel
/// gets a window of 64-bit words (`SharedLayout::wide`).
pub(super) fn may_be_wide_shared(i: &ast::Instruction, generic_windows: bool) -> bool {
    if !matches!(i.op, Some(Opcode::Atom | Opcode::Red)) {
        return false;
    }
    let Ok(Some(m)) = decode::decode(i) else { return false };
    let bits64 = m.types.iter().any(|t| matches!(t.value, B64 | U64 | S64 | F64));
    let space = m.space.as_ref().map(|s| s.value);
    bits64
        && match space {
            Some(StateSpace::Shared) => true,
            None => generic_windows,
            Some(_) => false,
        }
}

impl Resolver<'_> {
    /// Lowers `atom` and `red`; `None` for other instructions.
    pub(super) fn atomic(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        match op {
            Opcode::Atom | Opcode::Red => Some(self.lower_atomic(op == Opcode::Red, i, m)),
            _ => None,
        }
    }

    fn lower_atomic(
        &mut self,
        red: bool,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let op = if red { Opcode::Red } else { Opcode::Atom };
        let decoded =
            atomic::decode(i, op, &m.details, &m.types, m.space.clone(), m.vector, m.bool_op);
        let Some(a) = decoded.transpose()? else {
            return Err(Diagnostic::internal(span, "not an atomic"));
        };
        let ty = super::op_ty(&a.ty)?;
        let (ir_space, addr) = self.address(a.addr, a.space)?;
        let wide_window = self.kernel.shared.wide();
        if ir_space == Space::Shared && ty.bits() == 64 && !wide_window {
            return Err(Diagnostic::internal(
                span,
                "a 64-bit shared atomic in a kernel without a 64-bit window",
            ));
        }
        if ir_space == Space::Param {
            return Err(Diagnostic::error(span, "kernel parameters are read-only"));
        }
        // A generic atomic in a kernel with generic shared/local addresses: a generic
        // atomic (`ir::Space::Generic`), direct where `pass::infer_spaces` proves its
        // space, else dispatched on the address's window by `pass::expand_generic`.
        let space = if a.generic && self.facts.generic_windows { Space::Generic } else { ir_space };
        let mut op = a.op;
        // atom.add.f32 on global memory flushes subnormal inputs and results
        // (§9.7.13.5, "current implementation"); on shared memory it does not (a
        // generic one flushes where its address is global, `ir::Space::Generic`).
        if let AtomicOp::FloatAdd { ftz } = &mut op {
            *ftz = ty == OpTy::F(32) && matches!(space, Space::Global | Space::Generic) && !a.noftz;
        }
        // One destination and value per element (of a scalar, one).
        let (dst_ops, src_ops): (Vec<Option<&Operand>>, Vec<&Operand>) = match &a.vector {
            Some((ds, bs)) => {
                ((0..bs.len()).map(|k| ds.as_ref().map(|d| &d[k])).collect(), bs.iter().collect())
            }
            None => (vec![a.dst], vec![&a.values[0]]),
        };
        let dst = |l: &mut Self, d: Option<&Operand>| match d {
            Some(Operand::Sink(_)) | None => Ok(None),
            Some(d) => l.dst(d, ty, false).map(Some),
        };
        let dsts: Vec<_> = dst_ops.into_iter().map(|d| dst(self, d)).collect::<Result<_, _>>()?;
        let srcs: Vec<Value> =
            src_ops.iter().map(|s| self.src(s, ty, false, span)).collect::<Result<_, _>>()?;
        let cas = op == AtomicOp::Cas;
        let cmp = if cas { self.src(&a.values[1], ty, false, span)? } else { Value::Imm(0) };
        let (scope, order) = (a.scope, a.order);
        if a.vector.is_some() {
            let a = VectorAtomic { op, space, ty, scope, order, dsts, addr, srcs, cmp };
            self.push(InstKind::VectorAtomic(Box::new(a)), span);
            return Ok(());
        }
        let (dst, src) = (dsts[0], srcs[0]);
        // `cas(r, s, t)`: `src` is the new value and `cmp` the comparand.
        let (src, cmp) = if cas { (cmp, src) } else { (src, cmp) };
        self.push(InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp }, span);
        Ok(())
    }
}
