//! `ld`, `st` and `ldu` (PTX ISA 9.2 §9.7.9.8-10): strength, state spaces, vectors,
//! and generic addresses dispatched on the window they point into.

use super::{
    ast, is_cache_hint, md, unsupported, unsupported_modifier, Diagnostic, Lowerer, Modifier, Mods,
    Opcode, Operand, RegId, Span, StateSpace,
};
use crate::ir::{AtomicOp, InstKind, OpTy, Order, Scope, Space, Value, VectorAtomic};

impl Lowerer<'_> {
    pub(super) fn memory(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let ty = self.bits_type(i, m)?;
        let strength = memory_order(op, span, m)?;
        if m.has(Modifier::MemoryOrder(md::MemoryOrder::Volatile)) {
            self.kernel.volatile_accesses.push(span);
        }
        if op == Opcode::Ld && strength.is_some() {
            self.kernel.polling_reads.push(span);
        }
        if ty == OpTy::Pred {
            return Err(Diagnostic::error(span, format!("`{op}` cannot move predicates")));
        }
        // Generic addresses are global addresses unless the kernel makes generic
        // addresses of shared or local memory; then they dispatch on the window.
        let ops = &i.operands;
        let addr_operand = if op == Opcode::St { ops.first() } else { ops.get(1) };
        // A generic access through a variable's name (`st.u64 [local_x], …`) is an access
        // of the variable's space: its generic address lies in that space's window.
        let named = match m.space {
            None => addr_operand.and_then(|a| self.variable_space(a)),
            Some(_) => None,
        };
        let generic = m.space.is_none() && named.is_none();
        let space = m.space.as_ref().map(|s| s.value).or(named).unwrap_or(StateSpace::Global);
        if ty.bits() > 64 {
            return Err(unsupported(span, "128-bit memory accesses", "not implemented yet"));
        }
        let n = m.vector.unwrap_or(1);
        // Vectors of up to 128 bits; 256-bit `.v8` (32-bit elements) and `.v4` (64-bit
        // ones) on global memory (PTX ISA 9.2 §9.7.9.8, sm_100).
        let wide = space == StateSpace::Global && n * ty.bits() == 256 && ty.bits() >= 32;
        // `.v8` of 8- and 16-bit elements: ptxas takes them as it takes `.v4` (64 and
        // 128 bits).
        let small_v8 = n == 8 && ty.bits() <= 16;
        if !(matches!(n, 1 | 2 | 4) && n * ty.bits() <= 128 || wide || small_v8) {
            return Err(Diagnostic::error(
                span,
                format!("`.v{n}` of {}-bit elements is not a valid vector here", ty.bits()),
            ));
        }
        // `.L2::cache_hint` adds a cache-policy operand, which is only a hint.
        let hinted = m.has(Modifier::CacheHint(md::CacheHint::L2CacheHint));
        if !(ops.len() == 2 || (hinted && ops.len() == 3)) {
            return Err(Diagnostic::error(span, format!("`{op}` takes 2 operands")));
        }
        let (data, addr) = if op == Opcode::St { (&ops[1], &ops[0]) } else { (&ops[0], &ops[1]) };
        let (ir_space, address) = self.address(addr, space)?;
        if op == Opcode::St && ir_space == Space::Param {
            return Err(Diagnostic::error(span, "kernel parameters are read-only"));
        }
        let elems = vector_elements(data, n)?;
        // A float access of a wider bit-size register moves the same bits as the
        // bit-size access of its width (§5.2.2's relaxed rules: the low bits, and zeros
        // above them).
        let ty = if elems.iter().any(|e| self.float_in_wider_register(e, ty)) {
            OpTy::U(ty.bits() as u8)
        } else {
            ty
        };
        let data = if op == Opcode::St {
            let srcs: Vec<Value> =
                elems.iter().map(|e| self.src(e, ty, true, span)).collect::<Result<_, _>>()?;
            Data::Store(srcs)
        } else {
            let dsts: Vec<Option<RegId>> = elems
                .iter()
                .map(|e| match e {
                    Operand::Sink(_) => Ok(None),
                    e => self.dst(e, ty, true).map(Some),
                })
                .collect::<Result<_, _>>()?;
            Data::Load(dsts)
        };
        let generic = generic && self.generic_windows;
        if ir_space == Space::Local || generic {
            // A local access needs a window even when the kernel declares no `.local`
            // variable (its addresses are then out of range, which PTX leaves undefined).
            self.kernel.local_bytes = self.kernel.local_bytes.max(4);
        }
        // A generic access (of a 32-bit address in a module with 32-bit addresses, which
        // `pass::widen_generic` widens): `pass::infer_spaces` makes it a direct one where
        // it proves the space, `pass::expand_generic` a test of the address's window
        // where not.
        let space = if generic { Space::Generic } else { ir_space };
        let addr = address;
        let inst = match (data, strength) {
            (Data::Load(dsts), None) => InstKind::Load { space, ty, dsts, addr },
            (Data::Store(srcs), None) => InstKind::Store { space, ty, srcs, addr },
            // A strong access (PTX ISA 9.2 §8.4): an atomic load or store, which
            // `pass::expand_strong` makes a plain access and a fence where SPIR-V has no
            // atomic of its width.
            (data, Some((order, scope))) => {
                let (op, srcs, dsts) = match data {
                    Data::Load(d) => (AtomicOp::Load, vec![Value::Imm(0); d.len()], d),
                    Data::Store(s) => {
                        let dsts = vec![None; s.len()];
                        (AtomicOp::Store, s, dsts)
                    }
                };
                let cmp = Value::Imm(0);
                let a = VectorAtomic { op, space, ty, scope, order, dsts, addr, srcs, cmp };
                match a.srcs.len() {
                    1 => a.element(0),
                    _ => InstKind::VectorAtomic(Box::new(a)),
                }
            }
        };
        self.push(inst, span);
        Ok(())
    }
}

/// The data of an access: the values a store writes, or the registers a load fills
/// (`None` for a sink).
enum Data {
    Store(Vec<Value>),
    Load(Vec<Option<RegId>>),
}

/// The strength of an `ld`/`st` (PTX ISA 9.2 §8.4, §9.7.9.8-9): `None` for a weak
/// access, else the order and scope of a strong one. `.volatile` is `.relaxed.sys`;
/// `.mmio` accesses are strong too (Vulkan has no memory-mapped I/O to distinguish).
pub(super) fn memory_order(
    op: Opcode,
    span: Span,
    m: &Mods,
) -> Result<Option<(Order, Scope)>, Diagnostic> {
    use md::{CacheOp, MemoryOrder as O, Scope as S};
    let mut order = None;
    let mut scope = None;
    for d in &m.details {
        match d.value {
            Modifier::MemoryOrder(O::Weak | O::Mmio) | Modifier::CacheOp(CacheOp::Nc) => {}
            Modifier::MemoryOrder(O::Volatile | O::Relaxed) => order = Some(Order::Relaxed),
            Modifier::MemoryOrder(O::Acquire) if op == Opcode::Ld => order = Some(Order::Acquire),
            Modifier::MemoryOrder(O::Release) if op == Opcode::St => order = Some(Order::Release),
            Modifier::Scope(S::Cta) => scope = Some(Scope::Cta),
            Modifier::Scope(S::Gpu) => scope = Some(Scope::Gpu),
            Modifier::Scope(S::Sys) => scope = Some(Scope::Sys),
            // Every cluster is one CTA (`sema::cluster`).
            Modifier::Scope(S::Cluster) => scope = Some(Scope::Cta),
            d if is_cache_hint(d) => {}
            _ => return Err(unsupported_modifier(d, op)),
        }
    }
    if order.is_some() && scope.is_none() && !m.has(Modifier::MemoryOrder(O::Volatile)) {
        return Err(Diagnostic::error(span, format!("a `.relaxed`, `.acquire` or `.release` `{op}` needs a scope (`.cta`, `.gpu`, `.sys`)")));
    }
    Ok(order.map(|o| (o, scope.unwrap_or(Scope::Sys))))
}

/// The element operands of an access of `n` elements: `{a, b, …}` for a vector.
fn vector_elements(data: &Operand, n: u32) -> Result<Vec<&Operand>, Diagnostic> {
    Ok(match (data, n) {
        (Operand::Vector(v, vs), n) => {
            if v.len() as u32 != n || n == 1 {
                return Err(Diagnostic::error(
                    *vs,
                    format!("expected {n} vector elements for `.v{n}`"),
                ));
            }
            v.iter().collect()
        }
        (d, 1) => vec![d],
        (d, _) => return Err(Diagnostic::error(d.span(), "a vector access needs a `{…}` operand")),
    })
}
