//! Pass: the strong `ld`/`st` (`.relaxed`, `.acquire`, `.release`, `.volatile`; PTX ISA
//! 9.2 §8.4, §9.7.9.8-9), which semantic analysis makes atomic loads and stores
//! ([`AtomicOp::Load`], [`AtomicOp::Store`]; [`crate::ir::VectorAtomic`]s of them for vectors),
//! stay atomics in global and shared memory ([`native`]): those narrower than their
//! space's atomic word too, which `pass::legalize_atomics` makes an atomic load of the
//! containing word or a compare-and-swap loop on it, so that every scalar strong access
//! there is single-copy atomic (§8.4-8.6). They become plain accesses elsewhere: after
//! an acquiring load's fence or before a releasing store's, and without a fence in local
//! memory, which no other thread observes. Vectors are always plain accesses (SPIR-V
//! has no vector atomics). An atomic access through a register wider than the access
//! (PTX ISA 9.2 §5.2.2: a load extends into it, a store writes its low bits) goes
//! through a temporary of the access's width (SPIR-V's atomics move one value of their
//! own width): a store truncates the register into it first, a load extends it into the
//! register after, so that the access stays one single-copy atomic access (§8.4-8.6).
//!
//! Pre: CFG IR from semantic analysis, with its functions (first of the passes: the
//! others see the accesses as the program's own).
//!
//! Post: no vector load or store atomic is left, and every [`InstKind::Atomic`] load or
//! store is [`native`] with registers of its width ([`remains`]); a generic one
//! (`ir::Space::Generic`) is decided in its space by `pass::expand_generic`, with the
//! same rule.

use ptxvk_frontend::Span;

use crate::ir::{
    Address, AtomicOp, Block, FloatMode, Inst, InstKind, Kernel, OpTy, Order, RegId, RegInfo,
    RegTy, Scope, Space, Value,
};

/// Whether a strong access of `ty` in `space` is an atomic: in global memory up to 64
/// bits, in shared memory up to the window's word ([`crate::ir::SharedLayout::word`]: 32
/// bits, or 64 in a wide window; `pass::legalize_atomics` makes a narrower one an
/// atomic load of the containing word or a compare-and-swap loop on it), and generic
/// ones until `pass::expand_generic` knows their space.
pub fn native(space: Space, ty: OpTy, wide_window: bool) -> bool {
    let word = match space {
        Space::Global => 64,
        Space::Shared if wide_window => 64,
        Space::Shared => 32,
        Space::Generic => return true,
        Space::Param | Space::Local => return false,
    };
    ty.bits() <= word
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
fn made_plain(kind: &InstKind, wide_window: bool) -> Option<Plain> {
    match kind {
        &InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, .. }
            if matches!(op, AtomicOp::Load | AtomicOp::Store) =>
        {
            if native(space, ty, wide_window) {
                return None;
            }
            let load = op == AtomicOp::Load;
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

/// The register wider than the access that the strong atomic load or store `kind`
/// moves its value through, and its width (module doc).
fn wider_register(kind: &InstKind, regs: &[RegInfo]) -> Option<(RegId, u8)> {
    let &InstKind::Atomic { op, ty, dst, src, .. } = kind else { return None };
    let reg = match (op, src) {
        (AtomicOp::Load, _) => dst?,
        (AtomicOp::Store, Value::Reg(r)) => r,
        _ => return None,
    };
    match regs.get(reg.index())?.ty {
        RegTy::Int(bits) if u32::from(bits) > ty.bits() => Some((reg, bits)),
        _ => None,
    }
}

/// The atomic `kind` through a new register of its width (a temporary in `regs`) instead
/// of the wider register `wide` of `bits` bits: the truncation before a store, the
/// extension after a load (by the access's signedness, as a `Load` extends).
fn through_temporary(
    kind: InstKind,
    (wide, bits): (RegId, u8),
    regs: &mut Vec<RegInfo>,
    span: Span,
) -> Vec<InstKind> {
    let InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp } = kind else {
        return vec![kind];
    };
    let narrow = crate::ir::new_temp(regs, ty.storage(), span);
    let convert = |to, from, dst, src| InstKind::Convert {
        to,
        from,
        rounding: None,
        mode: FloatMode::default(),
        dst,
        src: Value::Reg(src),
    };
    let access = |dst, src| InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp };
    if op == AtomicOp::Store {
        let (to, from) = (OpTy::U(ty.bits() as u8), OpTy::U(bits));
        return vec![convert(to, from, narrow, wide), access(dst, Value::Reg(narrow))];
    }
    let to = if ty.is_signed() { OpTy::S(bits) } else { OpTy::U(bits) };
    vec![access(Some(narrow), src), convert(to, ty, wide, narrow)]
}

/// Whether `kind` is a strong access this pass rewrites, into a plain access or through
/// a register of its width (its postcondition: none is left).
pub fn remains(k: &Kernel, kind: &InstKind) -> bool {
    made_plain(kind, k.shared.wide()).is_some() || wider_register(kind, &k.regs).is_some()
}

/// Rewrites the strong accesses of the kernel and of its functions.
pub fn run(k: &mut Kernel) {
    let wide_window = k.shared.wide();
    rewrite(&mut k.blocks, &mut k.regs, wide_window);
    for f in &mut k.functions {
        rewrite(&mut f.blocks, &mut f.regs, wide_window);
    }
}

fn rewrite(blocks: &mut [Block], regs: &mut Vec<RegInfo>, wide_window: bool) {
    for b in blocks {
        let rewritten = |i: &Inst| {
            made_plain(&i.kind, wide_window).is_some() || wider_register(&i.kind, regs).is_some()
        };
        if !b.insts.iter().any(rewritten) {
            continue;
        }
        for Inst { kind, span } in std::mem::take(&mut b.insts) {
            let kinds = match (made_plain(&kind, wide_window), wider_register(&kind, regs)) {
                (Some(access), _) => plain(access),
                (None, Some(wide)) => through_temporary(kind, wide, regs, span),
                (None, None) => vec![kind],
            };
            b.insts.extend(kinds.into_iter().map(|kind| Inst { kind, span }));
        }
    }
}
