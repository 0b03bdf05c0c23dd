//! Pass: the strong `ld`/`st` (`.relaxed`, `.acquire`, `.release`, `.volatile`; PTX ISA
//! 9.2 §8.4, §9.7.9.8-9), which semantic analysis makes atomic loads and stores
//! ([`AtomicOp::Load`], [`AtomicOp::Store`]; [`crate::ir::VectorAtomic`]s of them for vectors),
//! stay atomics where SPIR-V has an atomic of their width in their space ([`native`]),
//! and become plain accesses elsewhere: after an acquiring load's fence or before a
//! releasing store's, and without a fence in local memory, which no other thread
//! observes. Vectors, and accesses through a register wider than the access (PTX ISA
//! 9.2 §5.2.2: a load extends into it, a store writes its low bits), are always plain
//! accesses (SPIR-V's atomics move one value of their own width).
//!
//! Pre: CFG IR from semantic analysis, with its functions (first of the passes: the
//! others see the accesses as the program's own).
//!
//! Post: no vector load or store atomic is left, and every [`InstKind::Atomic`] load or
//! store is [`native`] with registers of its width ([`remains`]); a generic one
//! (`ir::Space::Generic`) is decided in its space by `pass::expand_generic`, with the
//! same rule.

use crate::ir::{
    Address, AtomicOp, Block, Inst, InstKind, Kernel, OpTy, Order, RegId, RegInfo, Scope, Space,
    Value,
};

/// Whether a strong access of `ty` in `space` is an atomic: in global memory of 32 or
/// 64 bits, in shared memory of the window's word ([`crate::ir::SharedLayout::word`]; a
/// narrower store into a wide window is an atomic store too, which
/// `pass::legalize_atomics` makes a compare-and-swap on the containing word), and
/// generic ones until `pass::expand_generic` knows their space.
pub fn native(space: Space, ty: OpTy, load: bool, wide_window: bool) -> bool {
    let shared_word = if wide_window { 64 } else { 32 };
    match space {
        Space::Global => matches!(ty.bits(), 32 | 64),
        Space::Shared => ty.bits() == shared_word || (!load && wide_window && ty.bits() < 64),
        Space::Generic => true,
        Space::Param | Space::Local => false,
    }
}

/// A strong access to make plain: a load's destinations or a store's values.
pub(crate) struct Plain {
    pub space: Space,
    pub ty: OpTy,
    pub scope: Scope,
    pub order: Order,
    pub addr: Address,
    pub data: Data,
}

/// What a plain access moves.
pub(crate) enum Data {
    Load(Vec<Option<RegId>>),
    Store(Vec<Value>),
}

/// `a` as a plain access, ordered by a fence (module doc).
pub(crate) fn plain(a: Plain) -> Vec<InstKind> {
    let Plain { space, ty, scope, order, addr, data } = a;
    let fence = (order != Order::Relaxed && space != Space::Local)
        .then_some(InstKind::Fence { device_scope: scope != Scope::Cta });
    match data {
        Data::Load(dsts) => {
            [InstKind::Load { space, ty, dsts, addr }].into_iter().chain(fence).collect()
        }
        Data::Store(srcs) => {
            fence.into_iter().chain([InstKind::Store { space, ty, srcs, addr }]).collect()
        }
    }
}

/// The strong access `kind` as a plain access, where the module doc makes it one.
fn made_plain(kind: &InstKind, regs: &[RegInfo], wide_window: bool) -> Option<Plain> {
    let fits = |d: Option<RegId>, ty: OpTy| {
        d.and_then(|d| regs.get(d.index())).is_none_or(|r| r.ty.bits() == ty.bits())
    };
    match kind {
        &InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, .. }
            if matches!(op, AtomicOp::Load | AtomicOp::Store) =>
        {
            let load = op == AtomicOp::Load;
            let value = match src {
                Value::Reg(r) => Some(r),
                Value::Imm(_) => None,
            };
            if native(space, ty, load, wide_window) && fits(dst, ty) && fits(value, ty) {
                return None;
            }
            let data = if load { Data::Load(vec![dst]) } else { Data::Store(vec![src]) };
            Some(Plain { space, ty, scope, order, addr, data })
        }
        InstKind::VectorAtomic(a) if matches!(a.op, AtomicOp::Load | AtomicOp::Store) => {
            let data = match a.op {
                AtomicOp::Load => Data::Load(a.dsts.clone()),
                _ => Data::Store(a.srcs.clone()),
            };
            let (space, ty, scope, order, addr) = (a.space, a.ty, a.scope, a.order, a.addr);
            Some(Plain { space, ty, scope, order, addr, data })
        }
        _ => None,
    }
}

/// Whether `kind` is a strong access this pass makes plain (its postcondition).
pub fn remains(k: &Kernel, kind: &InstKind) -> bool {
    made_plain(kind, &k.regs, k.shared.wide()).is_some()
}

/// Rewrites the strong accesses of the kernel and of its functions.
pub fn run(k: &mut Kernel) {
    let wide_window = k.shared.wide();
    rewrite(&mut k.blocks, &k.regs, wide_window);
    for f in &mut k.functions {
        rewrite(&mut f.blocks, &f.regs, wide_window);
    }
}

fn rewrite(blocks: &mut [Block], regs: &[RegInfo], wide_window: bool) {
    for b in blocks {
        if !b.insts.iter().any(|i| made_plain(&i.kind, regs, wide_window).is_some()) {
            continue;
        }
        for inst in std::mem::take(&mut b.insts) {
            let Some(access) = made_plain(&inst.kind, regs, wide_window) else {
                b.insts.push(inst);
                continue;
            };
            let span = inst.span;
            b.insts.extend(plain(access).into_iter().map(|kind| Inst { kind, span }));
        }
    }
}
