//! Pass: the generic addresses of a module with 32-bit addresses widened to the 64-bit
//! form every later pass works with (CFG with functions → CFG with functions).
//!
//! A 32-bit generic address (PTX ISA 9.2 §6.4.1.1, `.address_size 32`) is an offset in
//! the address window, but for the top windows of the 32-bit range: the shared window
//! ([`SHARED_WINDOW_32`]), the local window ([`LOCAL_WINDOW_32`]) and below them the
//! kernel's parameter block ([`PARAM_WINDOW_32`]). Its 64-bit form is `SHARED_WINDOW |
//! offset` or `LOCAL_WINDOW | offset` for the first two, the parameter block's address
//! plus the offset for the third, else the global address (the address window's base
//! plus the offset). The 32-bit sum of the base register and the constant offset wraps,
//! as PTX's 32-bit address arithmetic does.
//!
//! The widening is pointer arithmetic (adds, ors, selects), so `pass::infer_spaces`,
//! which runs next, still finds the space of the address it came from.
//!
//! Pre: CFG IR from semantic analysis, with its functions; in a module with 32-bit
//! addresses, a generic `Load`, `Store` or `Atomic` ([`Space::Generic`]) or generic
//! `wmma` access ([`WmmaSpace::Generic`]) may have a 32-bit base register (or none).
//!
//! Post: every generic access has a 64-bit base register, or none in a module with
//! 64-bit addresses.

use crate::build::{Build, Builder};
use crate::ir::{
    Address, BinaryOp, CmpOp, Inst, InstKind, Kernel, MatrixInst, OpTy, Space, SpecialReg, Value,
    WmmaSpace, LOCAL_WINDOW, LOCAL_WINDOW_32, PARAM_WINDOW_32, SHARED_WINDOW, SHARED_WINDOW_32,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Widens the generic addresses of the kernel's body and of its functions'.
pub fn run(k: &mut Kernel) {
    if k.address_size != 32 {
        return;
    }
    rewrite_body(k);
    for f in k.functions.iter_mut().filter(|f| f.routine.is_none()) {
        f.rewrite_in_shell(rewrite_body);
    }
}

fn rewrite_body(k: &mut Kernel) {
    for b in 0..k.blocks.len() {
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out: Vec<Inst> = Vec::with_capacity(insts.len());
        for mut inst in insts {
            let Some(addr) = generic_address(&mut inst.kind).filter(|a| narrow(k, a)) else {
                out.push(inst);
                continue;
            };
            let mut e = Builder::new(k, inst.span);
            *addr = widen(&mut e, *addr);
            // Before the fence that sema puts before a strong store
            // (`sema::memory`), which belongs to the store.
            let fence = matches!(inst.kind, InstKind::Store { .. })
                && out.last().is_some_and(|f| {
                    matches!(f.kind, InstKind::Fence { .. }) && f.span == inst.span
                });
            let fence = fence.then(|| out.pop()).flatten();
            out.append(&mut e.insts);
            out.extend(fence);
            out.push(inst);
        }
        k.blocks[b].insts = out;
    }
}

/// Whether `kind` is a generic access of a 32-bit address in the body `k` of a module
/// with 32-bit addresses: one this pass widens.
pub fn is_narrow_generic(k: &Kernel, kind: &InstKind) -> bool {
    let mut kind = kind.clone();
    k.address_size == 32 && generic_address(&mut kind).is_some_and(|a| narrow(k, a))
}

/// Whether `address`'s base register is 32-bit (or it has none).
fn narrow(k: &Kernel, address: &Address) -> bool {
    address.base.is_none_or(|r| k.reg(r).ty.bits() == 32)
}

/// The generic address of a generic access.
fn generic_address(kind: &mut InstKind) -> Option<&mut Address> {
    match kind {
        InstKind::Load { space: Space::Generic, addr, .. }
        | InstKind::Store { space: Space::Generic, addr, .. }
        | InstKind::Atomic { space: Space::Generic, addr, .. } => Some(addr),
        InstKind::Matrix(m) => match m.as_mut() {
            MatrixInst::WmmaLoad(a, _) | MatrixInst::WmmaStore(a, _)
                if a.space == WmmaSpace::Generic =>
            {
                Some(&mut a.addr)
            }
            _ => None,
        },
        _ => None,
    }
}

/// The 64-bit generic address of the 32-bit generic address `address` (the module
/// doc's form), in a new register.
fn widen(e: &mut Builder<'_>, address: Address) -> Address {
    let base = address.base.map_or(Value::Imm(0), Value::Reg);
    let window_base = e.temp(U64);
    e.push(InstKind::Special { dst: window_base, reg: SpecialReg::WindowBase });
    let x = e.add(U32, base, Value::Imm(address.offset as u64 & 0xffff_ffff));
    let wide = e.cvt(U64, U32, x);
    let global = e.add(U64, Value::Reg(window_base), wide);
    let in_window = |e: &mut Builder<'_>, start: u32, tag: u64| {
        let off = e.bin(BinaryOp::Sub, U32, x, Value::Imm(u64::from(start)));
        let off = e.cvt(U64, U32, off);
        e.or(U64, off, Value::Imm(tag))
    };
    let shared = in_window(e, SHARED_WINDOW_32, SHARED_WINDOW);
    let local = in_window(e, LOCAL_WINDOW_32, LOCAL_WINDOW);
    let is_shared = e.cmp(CmpOp::Ge, U32, x, Value::Imm(u64::from(SHARED_WINDOW_32)));
    let is_local = e.cmp(CmpOp::Ge, U32, x, Value::Imm(u64::from(LOCAL_WINDOW_32)));
    let is_param = e.cmp(CmpOp::Ge, U32, x, Value::Imm(u64::from(PARAM_WINDOW_32)));
    let param_off = e.bin(BinaryOp::Sub, U32, x, Value::Imm(u64::from(PARAM_WINDOW_32)));
    let param_off = e.cvt(U64, U32, param_off);
    let block = e.temp(U64);
    e.push(InstKind::Special { dst: block, reg: SpecialReg::ParamBlock });
    let param = e.add(U64, Value::Reg(block), param_off);
    let not_local = e.sel(U64, is_param, param, global);
    let not_shared = e.sel(U64, is_local, local, not_local);
    let g = e.sel(U64, is_shared, shared, not_shared);
    let r = e.temp(U64);
    e.mov(U64, r, g);
    Address { base: Some(r), offset: 0 }
}
