//! Pass: address-space inference (CFG with functions → CFG with functions). Which state
//! space the generic addresses each register holds can point into, so that a generic
//! `ld`/`st`/`atom`/`red`/`wmma.load`/`wmma.store` whose space is provable becomes a
//! direct access instead of a run-time test of the address's window
//! (`pass::expand_generic`); and every `cvta` ([`InstKind::Cvta`]) written out in the
//! window arithmetic of the launch ABI (`ir`'s module doc, *Memory*).
//!
//! The analysis is flow-insensitive and runs over one body's instructions until nothing
//! changes: the kernel's, and each device function's separately (its registers are its
//! own). Each register gets a `Provenance`: `Plain` (an integer that is no generic
//! pointer: immediates, special registers, arithmetic other than `mov`, `add`, `sub`,
//! `and`, `or`, `mad`, `selp` and `cvt`), one space (a `cvta` to the generic space of a
//! `.global`/`.const`, `.shared` or `.local` address, a kernel parameter loaded at a
//! constant offset, and that pointer arithmetic on such values), or `Unknown` (a loaded
//! value, an atomic's old value, a call's result, a device function's parameters and
//! returns, the `cvta` of a `.param` address, or a mix of spaces). A plain value used as
//! an address is a global address.
//!
//! A `cvta` is an operation of its own until here because its result is a seed of the
//! analysis that the window arithmetic does not show: `cvta.global` is a `mov`, which
//! would pass on its operand's provenance; `cvta.to.shared` an `and`, which would keep
//! the window; a device function's `cvta.param` the local window's `or`, which would
//! prove a space the call's caller decides.
//!
//! A proven access is its space's, as `pass::expand_generic` writes it in that space's
//! branch (`expand_generic::access_in`); a shared or local one at the low half of the
//! address (a `cvt` to 32 bits); a strong `ld`/`st` of more than one word, which sema
//! made a plain access and its fence, loses the fence on local memory, which has no
//! other observer. An atomic other than a strong `ld`/`st` stays generic
//! on local memory, where `expand_generic` fails the launch. A `wmma` access whose
//! space is not proven may take the local window, which the kernel then has.
//!
//! Pre: CFG IR from semantic analysis, with its functions (before `pass::inline`);
//! generic accesses of 64-bit addresses (`pass::widen_generic` widens those of modules
//! with 32-bit addresses, keeping their provenance: the widening is pointer arithmetic).
//!
//! Post: no `Cvta` is left; every generic access left is one whose space is not proven.

use super::expand_generic;
use crate::build::{Build, Builder};
use crate::ir::{
    Address, AtomicOp, BinaryOp, CvtaSpace, FloatMode, Inst, InstKind, Kernel, MatrixInst, OpTy,
    RegId, Space, SpecialReg, Value, WmmaSpace, LOCAL_WINDOW, LOCAL_WINDOW_32, PARAM_WINDOW_32,
    SHARED_WINDOW, SHARED_WINDOW_32,
};

/// Where a register's generic addresses may point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Provenance {
    Plain,
    Global,
    Shared,
    Local,
    Unknown,
}

impl Provenance {
    fn join(self, other: Provenance) -> Provenance {
        match (self, other) {
            (Provenance::Plain, x) | (x, Provenance::Plain) => x,
            (a, b) if a == b => a,
            _ => Provenance::Unknown,
        }
    }
}

/// Infers the spaces of `k`'s bodies and rewrites them as the module doc says.
pub fn run(k: &mut Kernel) {
    let wide = k.shared.wide();
    let mut generic_wmma = rewrite_body(k, &[], false, wide);
    for f in k.functions.iter_mut().filter(|f| f.routine.is_none()) {
        // A device function's parameters and returns may be any pointer its callers
        // pass (its stack pointer is the local window's offset).
        let passed = f.params.iter().chain(&f.returns).map(|(r, _)| *r);
        let seeds: Vec<RegId> = passed.filter(|r| Some(*r) != f.stack_pointer).collect();
        generic_wmma |= f.rewrite_in_shell(|shell| rewrite_body(shell, &seeds, true, wide));
    }
    if generic_wmma {
        k.local_bytes = k.local_bytes.max(4);
    }
}

/// Rewrites the body of `k` (the kernel's, or a function's shell), whose registers
/// `seeds` hold any pointer; whether a generic `wmma` access is left.
fn rewrite_body(k: &mut Kernel, seeds: &[RegId], in_function: bool, wide: bool) -> bool {
    let provenance = infer(k, seeds, in_function);
    let mut generic_wmma = false;
    for b in 0..k.blocks.len() {
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out: Vec<Inst> = Vec::with_capacity(insts.len());
        let mut fence_of_local_load = None;
        for inst in insts {
            if matches!(inst.kind, InstKind::Fence { .. }) && fence_of_local_load == Some(inst.span)
            {
                continue;
            }
            fence_of_local_load = None;
            if let Some(local) = local_access(&inst.kind, &provenance) {
                // The fence sema puts after a strong load or before a strong store of
                // more than one word (`sema::memory`): none on local memory, which has
                // no other observer.
                if local == Access::Load {
                    fence_of_local_load = Some(inst.span);
                } else if out.last().is_some_and(|f| {
                    matches!(f.kind, InstKind::Fence { .. }) && f.span == inst.span
                }) {
                    out.pop();
                }
            }
            let mut bld = Builder::new(k, inst.span);
            generic_wmma |= rewrite(&mut bld, inst.kind, &provenance, wide);
            out.append(&mut bld.insts);
        }
        k.blocks[b].insts = out;
    }
    generic_wmma
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Load,
    Store,
}

/// Whether `kind` is a weak generic load or store proven local.
fn local_access(kind: &InstKind, p: &[Provenance]) -> Option<Access> {
    let (access, addr) = match kind {
        InstKind::Load { space: Space::Generic, addr, .. } => (Access::Load, addr),
        InstKind::Store { space: Space::Generic, addr, .. } => (Access::Store, addr),
        _ => return None,
    };
    (base_provenance(addr, p) == Provenance::Local).then_some(access)
}

/// The provenance of every register of `k`.
fn infer(k: &Kernel, seeds: &[RegId], in_function: bool) -> Vec<Provenance> {
    let mut p = vec![Provenance::Plain; k.regs.len()];
    for r in seeds {
        p[r.index()] = Provenance::Unknown;
    }
    loop {
        let mut changed = false;
        for inst in k.blocks.iter().flat_map(|b| &b.insts) {
            for (dst, value) in definitions(&inst.kind, &p, in_function) {
                let old = p[dst.index()];
                let new = old.join(value);
                if new != old {
                    p[dst.index()] = new;
                    changed = true;
                }
            }
        }
        if !changed {
            return p;
        }
    }
}

/// The registers `kind` writes with a provenance other than plain, and that provenance.
fn definitions(kind: &InstKind, p: &[Provenance], in_function: bool) -> Vec<(RegId, Provenance)> {
    let of = |v: &Value| match v {
        Value::Reg(r) => p[r.index()],
        Value::Imm(_) => Provenance::Plain,
    };
    let joined = |vs: &[&Value]| vs.iter().fold(Provenance::Plain, |a, v| a.join(of(v)));
    match kind {
        InstKind::Cvta { to: true, .. } => Vec::new(),
        InstKind::Cvta { space, dst, .. } => {
            let value = match space {
                CvtaSpace::Global => Provenance::Global,
                CvtaSpace::Shared => Provenance::Shared,
                CvtaSpace::Local => Provenance::Local,
                CvtaSpace::Param | CvtaSpace::CallParam => Provenance::Unknown,
            };
            vec![(*dst, value)]
        }
        // Kernel parameters hold global pointers (or plain values).
        InstKind::Load { space: Space::Param, dsts, addr: Address { base: None, .. }, .. }
            if !in_function =>
        {
            dsts.iter().flatten().map(|d| (*d, Provenance::Global)).collect()
        }
        // A value loaded from memory, or a callee's result, may be any pointer.
        InstKind::Load { dsts, .. } => {
            dsts.iter().flatten().map(|d| (*d, Provenance::Unknown)).collect()
        }
        InstKind::Atomic { dst, .. } => dst.iter().map(|d| (*d, Provenance::Unknown)).collect(),
        InstKind::Call { results, .. } => {
            results.iter().map(|d| (*d, Provenance::Unknown)).collect()
        }
        InstKind::CallIndirect { arms, .. } => {
            arms.iter().flat_map(|a| &a.results).map(|d| (*d, Provenance::Unknown)).collect()
        }
        // Pointer arithmetic keeps the space of its pointer operand.
        InstKind::Mov { dst, src, .. } | InstKind::Convert { dst, src, .. } => {
            vec![(*dst, of(src))]
        }
        InstKind::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::And | BinaryOp::Or,
            dst,
            lhs,
            rhs,
            ..
        } => vec![(*dst, joined(&[lhs, rhs]))],
        InstKind::Mad { dst, a, b, c, .. } => vec![(*dst, joined(&[a, b, c]))],
        InstKind::Select { dst, a, b, .. } => vec![(*dst, joined(&[a, b]))],
        _ => Vec::new(),
    }
}

/// The provenance of an address's base register (none: a plain address).
fn base_provenance(a: &Address, p: &[Provenance]) -> Provenance {
    a.base.map_or(Provenance::Plain, |r| p[r.index()])
}

/// Pushes `kind` rewritten into `b`; whether it is a `wmma` access left generic.
fn rewrite(b: &mut Builder<'_>, kind: InstKind, p: &[Provenance], wide: bool) -> bool {
    match kind {
        InstKind::Cvta { space, to, ty, dst, src } => write_out_cvta(b, space, to, ty, dst, src),
        InstKind::Load { space: Space::Generic, addr, .. }
        | InstKind::Store { space: Space::Generic, addr, .. }
        | InstKind::Atomic { space: Space::Generic, addr, .. } => {
            // An atomic read-modify-write of local memory fails the launch.
            let strong_or_access = match &kind {
                InstKind::Atomic { op, .. } => matches!(op, AtomicOp::Load | AtomicOp::Store),
                _ => true,
            };
            match base_provenance(&addr, p) {
                Provenance::Plain | Provenance::Global => {
                    expand_generic::access_in(b, &kind, Space::Global, addr, wide);
                }
                Provenance::Shared => {
                    let low = window_offset(b, addr);
                    expand_generic::access_in(b, &kind, Space::Shared, low, wide);
                }
                Provenance::Local if strong_or_access => {
                    let low = window_offset(b, addr);
                    expand_generic::access_in(b, &kind, Space::Local, low, wide);
                }
                Provenance::Local | Provenance::Unknown => b.push(kind),
            }
        }
        InstKind::Matrix(mut m) => {
            let access = match m.as_mut() {
                MatrixInst::WmmaLoad(a, _) | MatrixInst::WmmaStore(a, _) => Some(a),
                _ => None,
            };
            let mut generic = false;
            if let Some(a) = access.filter(|a| a.space == WmmaSpace::Generic) {
                a.space = match base_provenance(&a.addr, p) {
                    Provenance::Plain | Provenance::Global => WmmaSpace::In(Space::Global),
                    Provenance::Shared => WmmaSpace::Window(Space::Shared),
                    Provenance::Local => WmmaSpace::Window(Space::Local),
                    Provenance::Unknown => WmmaSpace::Generic,
                };
                generic = a.space == WmmaSpace::Generic;
            }
            b.push(InstKind::Matrix(m));
            return generic;
        }
        kind => b.push(kind),
    }
    false
}

/// A generic shared or local address as an address in its space: the low 32 bits of
/// the base register (the window's offset), plus the constant offset.
fn window_offset(b: &mut Builder<'_>, addr: Address) -> Address {
    let Some(base) = addr.base else { return addr };
    let from = OpTy::U(b.kernel.reg(base).ty.bits() as u8);
    let (to, mode) = (OpTy::U(32), FloatMode::default());
    let dst = b.temp(to);
    b.push(InstKind::Convert { to, from, rounding: None, mode, dst, src: Value::Reg(base) });
    Address { base: Some(dst), offset: addr.offset }
}

/// `cvta` (PTX ISA 9.2 §9.7.9.19) in the launch ABI's windows: generic and global (and
/// constant) addresses coincide; shared and local addresses move in and out of their
/// generic windows (`SHARED_WINDOW`, `LOCAL_WINDOW`), a call parameter's as the
/// caller's local frame's. With 32-bit addresses, generic and global addresses are the
/// same window offsets, and the others move in and out of the top windows of the
/// 32-bit range (`SHARED_WINDOW_32`, `LOCAL_WINDOW_32`, `PARAM_WINDOW_32` for the
/// kernel's parameter block); with 64-bit ones the parameter block is global memory,
/// and its generic address is the block's address plus the offset.
fn write_out_cvta(
    b: &mut Builder<'_>,
    space: CvtaSpace,
    to: bool,
    ty: OpTy,
    dst: RegId,
    src: Value,
) {
    let narrow = ty.bits() == 32;
    let mode = FloatMode::default();
    let window = match space {
        CvtaSpace::Global => return b.push(InstKind::Mov { ty, dst, src }),
        CvtaSpace::Shared if narrow => u64::from(SHARED_WINDOW_32),
        CvtaSpace::Local | CvtaSpace::CallParam if narrow => u64::from(LOCAL_WINDOW_32),
        CvtaSpace::Param if narrow => u64::from(PARAM_WINDOW_32),
        CvtaSpace::Shared => SHARED_WINDOW,
        CvtaSpace::Local | CvtaSpace::CallParam => LOCAL_WINDOW,
        CvtaSpace::Param => {
            let base = b.temp(OpTy::U(64));
            b.push(InstKind::Special { dst: base, reg: SpecialReg::ParamBlock });
            let op = if to { BinaryOp::Sub } else { BinaryOp::Add };
            let (ty, lhs, rhs) = (OpTy::U(64), src, Value::Reg(base));
            return b.push(InstKind::Binary { op, ty, mode, dst, lhs, rhs });
        }
    };
    let (op, ty, rhs) = match (narrow, to) {
        (true, _) => (if to { BinaryOp::Sub } else { BinaryOp::Add }, OpTy::U(32), window),
        (false, true) => (BinaryOp::And, OpTy::U(64), 0xffff_ffff),
        (false, false) => (BinaryOp::Or, OpTy::U(64), window),
    };
    b.push(InstKind::Binary { op, ty, mode, dst, lhs: src, rhs: Value::Imm(rhs) });
}
