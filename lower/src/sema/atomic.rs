//! `atom` and `red` (PTX ISA 9.2 §9.7.13.5-6) as `InstKind::Atomic`: the integer and
//! bit operations are native atomics; `.inc`, `.dec`, the float additions and 16-bit
//! elements become compare-and-swap loops in `pass::legalize_atomics`, so that they
//! are exact on every device (Vulkan has no wrapping increment, and f64 atomics are
//! optional).

use ptxvk_frontend::ast::{self, Operand, ScalarType::*, StateSpace};
use ptxvk_frontend::decode;
use ptxvk_frontend::modifier::{self as md, FloatOption, Modifier, Reduction};
use ptxvk_frontend::Diagnostic;
use ptxvk_frontend::Opcode;

use super::{Lowerer, Mods};
use crate::ir::{AtomicOp, FloatFormat, InstKind, OpTy, Order, Scope, Space, Value, VectorAtomic};

const NOFTZ: Modifier = Modifier::FloatOption(FloatOption::NoFtz);

/// The element operands of a vector `atom`/`red`: destinations (`None` for `red`) and
/// values.
type VectorOperands = (Option<Vec<Operand>>, Vec<Operand>);

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

impl Lowerer<'_> {
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
        let opname = m.opcode;
        let (op, scope, order) = operation_and_strength(m)?;
        if red && matches!(order, Order::Acquire | Order::AcqRel) {
            return Err(Diagnostic::error(span, "`red` takes `.relaxed` or `.release`"));
        }
        // A vector's elements (`.v2`/`.v4`/`.v8`), resolved with the rest below.
        let vector = match m.vector.filter(|&n| n > 1) {
            Some(n) => Some(self.vector_elements(red, i, n)?),
            None => None,
        };
        // Half precision: the bits of one or two lanes, added by a compare-and-swap
        // loop (on the containing 32-bit word for one 16-bit lane).
        let half = super::formats::half_type(m)
            .filter(|(f, _)| matches!(f, FloatFormat::F16 | FloatFormat::Bf16));
        let (op, ty) = match half {
            Some((format, lanes)) => {
                if !m.has(NOFTZ) {
                    return Err(Diagnostic::error(
                        span,
                        "half-precision atomics are `.add`, `.min` or `.max` with `.noftz`",
                    ));
                }
                let op =
                    match op {
                        Some(AtomicOp::Add) => AtomicOp::HalfAdd { format, lanes },
                        // PTX has these in vector forms only (`atom.v2.min.noftz.f16`).
                        Some(op @ (AtomicOp::Min | AtomicOp::Max)) if m.vector.is_some() => {
                            AtomicOp::HalfMinMax { max: op == AtomicOp::Max, format, lanes }
                        }
                        _ => return Err(Diagnostic::error(
                            span,
                            "half-precision atomics are `.add`, or `.min`/`.max` in vector forms",
                        )),
                    };
                (Some(op), OpTy::U((16 * lanes) as u8))
            }
            None => (op, self.one_type(i, m)?),
        };
        let Some(mut op) = op else {
            return Err(Diagnostic::error(
                span,
                format!("`{opname}` needs an operation such as `.add`"),
            ));
        };
        if ty.is_float() {
            if op != AtomicOp::Add {
                return Err(Diagnostic::error(span, format!("`{opname}` on floats takes `.add`")));
            }
            // Its flushing depends on the space (below).
            op = AtomicOp::FloatAdd { ftz: false };
        }
        if matches!(op, AtomicOp::Inc | AtomicOp::Dec) && ty != OpTy::U(32) {
            return Err(Diagnostic::error(span, format!("`{opname}.inc`/`.dec` take `.u32`")));
        }
        // A 16-bit `cas`: `pass::legalize_atomics` swaps the containing word.
        let sub_word = matches!(
            op,
            AtomicOp::HalfAdd { lanes: 1, .. } | AtomicOp::HalfMinMax { lanes: 1, .. }
        ) || (op == AtomicOp::Cas && ty.bits() == 16);
        if !(matches!(ty.bits(), 32 | 64) || sub_word) {
            return Err(super::unsupported(
                span,
                &format!("{}-bit atomics", ty.bits()),
                "only 32- and 64-bit atomics are implemented",
            ));
        }
        // A generic atomic in a kernel with generic shared/local addresses: a generic
        // atomic (`ir::Space::Generic`), direct where `pass::infer_spaces` proves its
        // space, else dispatched on the address's window by `pass::expand_generic`.
        let dispatch = m.space.is_none() && self.generic_windows;
        let space = match m.space.as_ref().map(|s| s.value) {
            // Without a space the address is generic, which is global memory for now.
            None | Some(StateSpace::Global) => StateSpace::Global,
            Some(StateSpace::Shared) => StateSpace::Shared,
            Some(other) => {
                return Err(Diagnostic::error(
                    m.space.as_ref().map_or(span, |s| s.span),
                    format!("atomics are not allowed on `{}`", other.directive()),
                ))
            }
        };
        let ops = i.operands.as_slice();
        let cas = op == AtomicOp::Cas;
        let (dst_op, addr_op, rest) = if red {
            match ops {
                [a, rest @ ..] => (None, a, rest),
                [] => return Err(Diagnostic::error(span, "`red` takes an address and a value")),
            }
        } else {
            match ops {
                [d, a, rest @ ..] => (Some(d), a, rest),
                _ => {
                    return Err(Diagnostic::error(
                        span,
                        "`atom` takes a destination, an address and a value",
                    ))
                }
            }
        };
        let want = if cas { 2 } else { 1 };
        // A trailing cache-policy operand is allowed with `.L2::cache_hint`.
        let hinted = m.find(|d| matches!(d, Modifier::CacheHint(_)).then_some(())).is_some();
        if !(rest.len() == want || (hinted && rest.len() == want + 1)) {
            return Err(Diagnostic::error(
                span,
                format!("`{opname}` takes {want} value operand(s)"),
            ));
        }
        let (ir_space, addr) = self.address(addr_op, space)?;
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
        let space = if dispatch { Space::Generic } else { ir_space };
        // atom.add.f32 on global memory flushes subnormal inputs and results
        // (§9.7.13.5, "current implementation"); on shared memory it does not (a
        // generic one flushes where its address is global, `ir::Space::Generic`).
        if let AtomicOp::FloatAdd { ftz } = &mut op {
            *ftz = ty == OpTy::F(32)
                && matches!(space, Space::Global | Space::Generic)
                && !m.has(NOFTZ);
        }
        // One destination and value per element (of a scalar, one).
        let (dst_ops, src_ops): (Vec<Option<&Operand>>, Vec<&Operand>) = match &vector {
            Some((ds, bs)) => {
                ((0..bs.len()).map(|k| ds.as_ref().map(|d| &d[k])).collect(), bs.iter().collect())
            }
            None => (vec![dst_op], vec![&rest[0]]),
        };
        let dst = |l: &mut Self, d: Option<&Operand>| match d {
            Some(Operand::Sink(_)) | None => Ok(None),
            Some(d) => l.dst(d, ty, false).map(Some),
        };
        let dsts: Vec<_> = dst_ops.into_iter().map(|d| dst(self, d)).collect::<Result<_, _>>()?;
        let srcs: Vec<Value> =
            src_ops.iter().map(|s| self.src(s, ty, false, span)).collect::<Result<_, _>>()?;
        let cmp = if cas { self.src(&rest[1], ty, false, span)? } else { Value::Imm(0) };
        if vector.is_some() {
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

    /// The element operands of `atom`/`red` on a vector, `n` each (its form, one of
    /// PTX ISA 9.2 §9.7.13.5's three on global memory, `ptxvk_frontend::forms` has
    /// checked); one `InstKind::VectorAtomic` that `pass::expand_vector_atomics` splits.
    fn vector_elements(
        &mut self,
        red: bool,
        i: &ast::Instruction,
        n: u32,
    ) -> Result<VectorOperands, Diagnostic> {
        let span = i.span;
        let (d, a, rest) = match (red, i.operands.as_slice()) {
            (true, [a, rest @ ..]) => (None, a, rest),
            (false, [d, a, rest @ ..]) => (Some(d), a, rest),
            _ => return Err(Diagnostic::error(span, "`atom` takes a destination and an address")),
        };
        let (Operand::Address(_), Some(b)) = (a, rest.first()) else {
            return Err(Diagnostic::error(span, "`atom` takes an address and a value"));
        };
        let elems = |o: &ast::Operand| match o {
            Operand::Vector(v, _) if v.len() == n as usize => Ok(v.clone()),
            other => Err(Diagnostic::error(
                other.span(),
                format!("a `.v{n}` atomic takes vectors of {n} elements in braces"),
            )),
        };
        Ok((d.map(elems).transpose()?, elems(b)?))
    }
}

/// The operation, scope and order of an `atom`/`red` (defaults: `.relaxed.gpu`).
fn operation_and_strength(m: &Mods) -> Result<(Option<AtomicOp>, Scope, Order), Diagnostic> {
    let opname = m.opcode;
    let mut op = m.bool_op.map(|b| match b {
        crate::ir::BoolOp::And => AtomicOp::And,
        crate::ir::BoolOp::Or => AtomicOp::Or,
        crate::ir::BoolOp::Xor => AtomicOp::Xor,
    });
    let mut scope = Scope::Gpu;
    let mut order = Order::Relaxed;
    for d in &m.details {
        if let Modifier::Reduction(r) = d.value {
            if op.is_some() {
                return Err(Diagnostic::error(d.span, format!("`{opname}` takes one operation")));
            }
            op = Some(match r {
                Reduction::Add => AtomicOp::Add,
                Reduction::Min => AtomicOp::Min,
                Reduction::Max => AtomicOp::Max,
                Reduction::Exch => AtomicOp::Exch,
                Reduction::Cas => AtomicOp::Cas,
                Reduction::Inc => AtomicOp::Inc,
                Reduction::Dec => AtomicOp::Dec,
            });
            continue;
        }
        match d.value {
            Modifier::Scope(md::Scope::Cta) => scope = Scope::Cta,
            Modifier::Scope(md::Scope::Gpu) => scope = Scope::Gpu,
            Modifier::Scope(md::Scope::Sys) => scope = Scope::Sys,
            Modifier::MemoryOrder(md::MemoryOrder::Relaxed) => order = Order::Relaxed,
            Modifier::MemoryOrder(md::MemoryOrder::Acquire) => order = Order::Acquire,
            Modifier::MemoryOrder(md::MemoryOrder::Release) => order = Order::Release,
            Modifier::MemoryOrder(md::MemoryOrder::AcqRel) => order = Order::AcqRel,
            // Every cluster is one CTA (`sema::cluster`).
            Modifier::Scope(md::Scope::Cluster) => scope = Scope::Cta,
            // `.noftz` and cache hints (`ptxvk_frontend::forms` has checked the rest).
            _ => {}
        }
    }
    Ok((op, scope, order))
}
