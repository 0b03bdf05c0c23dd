//! `ld`, `st` and `ldu` (PTX ISA 9.2 §9.7.9.8-10): strength, state spaces, vectors,
//! and generic addresses dispatched on the window they point into.

use super::{
    ast, is_cache_hint, md, unsupported, unsupported_modifier, Diagnostic, Lowerer, Modifier, Mods,
    Opcode, Operand, RegId, Span, StateSpace,
};
use crate::ir::{Address, AtomicOp, InstKind, OpTy, Order, Scope, Space, Value};

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
        // A strong access (PTX ISA 9.2 §8.4) is an atomic load or store where SPIR-V has
        // one: a scalar 32/64-bit word of global memory or a 32-bit one of shared memory
        // into a register of its width. Others (local memory has no other observer;
        // sub-word and vector accesses) are plain accesses, after an acquiring load's
        // fence or before a releasing store's.
        let one_word = match &data {
            Data::Store(srcs) => srcs.len() == 1,
            Data::Load(dsts) => {
                dsts.len() == 1 && dsts[0].is_none_or(|d| self.kernel.reg(d).ty.bits() == ty.bits())
            }
        };
        // A wide shared window (`SharedLayout::wide`) has atomics of 64 bits only; a
        // strong narrower store there is an atomic store that `pass::legalize_atomics`
        // makes a compare-and-swap loop (`store_in_wide_word`).
        let shared_atomic_bits = if self.kernel.shared.wide() { 64 } else { 32 };
        let access = |space: Space, addr: Address| -> (InstKind, Option<(Order, Scope)>) {
            // A generic access is atomic when its space's is (`pass::expand_generic`).
            let atomic_width = matches!((space, ty.bits()), (Space::Global, 32 | 64))
                || (space == Space::Shared && ty.bits() == shared_atomic_bits)
                || space == Space::Generic;
            let native = strength.filter(|_| atomic_width && one_word);
            match (&data, native) {
                (data, Some((order, scope))) => {
                    let (op, dst, src) = match data {
                        Data::Store(srcs) => (AtomicOp::Store, None, srcs[0]),
                        Data::Load(dsts) => (AtomicOp::Load, dsts[0], Value::Imm(0)),
                    };
                    let cmp = Value::Imm(0);
                    (InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp }, None)
                }
                (Data::Store(srcs), _) => {
                    (InstKind::Store { space, ty, srcs: srcs.clone(), addr }, strength)
                }
                (Data::Load(dsts), _) => {
                    (InstKind::Load { space, ty, dsts: dsts.clone(), addr }, strength)
                }
            }
        };
        let access = |l: &mut Self, space: Space, addr: Address| {
            if let (Data::Store(srcs), Some((order, scope)), Space::Shared, true) =
                (&data, strength, space, l.kernel.shared.wide() && ty.bits() < 64)
            {
                if let [src] = srcs.as_slice() {
                    l.store_in_wide_word(ty, order, scope, addr, *src, span);
                    return;
                }
            }
            let (inst, fence) = access(space, addr);
            let fence = fence.filter(|(o, _)| *o != Order::Relaxed && space != Space::Local);
            let fence =
                fence.map(|(_, scope)| InstKind::Fence { device_scope: scope != Scope::Cta });
            if let (Some(f), InstKind::Store { .. }) = (&fence, &inst) {
                l.push(f.clone(), span);
            }
            let is_load = matches!(inst, InstKind::Load { .. });
            l.push(inst, span);
            if let (Some(f), true) = (fence, is_load) {
                l.push(f, span);
            }
        };
        if ir_space == Space::Local || (generic && self.generic_windows) {
            // A local access needs a window even when the kernel declares no `.local`
            // variable (its addresses are then out of range, which PTX leaves undefined).
            self.kernel.local_bytes = self.kernel.local_bytes.max(4);
        }
        if !(generic && self.generic_windows) {
            access(self, ir_space, address);
            return Ok(());
        }
        // One generic access (of a 32-bit address in a module with 32-bit addresses, which
        // `pass::widen_generic` widens): `pass::infer_spaces` makes it a direct one where
        // it proves the space, `pass::expand_generic` a test of the address's window
        // where not.
        access(self, Space::Generic, address);
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
