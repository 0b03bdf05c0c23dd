//! Pass: `isspacep` ([`InstKind::IsSpace`]) written out in the window tests of the launch
//! ABI (`ir`'s module doc, *Memory*; PTX ISA 9.2 §9.7.9.18).
//!
//! A 64-bit generic address is in the shared or local space when its upper word is that
//! window's ([`SHARED_WINDOW`], [`LOCAL_WINDOW`]), in a kernel's parameter block when
//! its offset from the block's address is below the block's size, in `.const` when its
//! offset from the module data is below the `.const` variables' bytes, and global when
//! it is below both windows and not `.const`. A 32-bit one is in a window of the top of
//! the 32-bit range ([`PARAM_WINDOW_32`], [`LOCAL_WINDOW_32`], [`SHARED_WINDOW_32`]), or
//! below them the offset of a global address from the window base.
//!
//! Pre: CFG IR from semantic analysis, with its functions (first of the passes).
//!
//! Post: no `IsSpace` is left.

use crate::build::{Build, Builder};
use crate::ir::{
    BinaryOp, CmpOp, Inst, InstKind, IsSpaceInst, Kernel, OpTy, RegId, SpaceTest, SpecialReg,
    Value, LOCAL_WINDOW, LOCAL_WINDOW_32, PARAM_WINDOW_32, SHARED_WINDOW, SHARED_WINDOW_32,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Writes out every `IsSpace` of the kernel and of its functions.
pub fn run(k: &mut Kernel) {
    rewrite_body(k);
    let has = |inst: &Inst| matches!(inst.kind, InstKind::IsSpace(_));
    for f in &mut k.functions {
        if f.blocks.iter().any(|b| b.insts.iter().any(has)) {
            f.rewrite_in_shell(rewrite_body);
        }
    }
}

fn rewrite_body(k: &mut Kernel) {
    for b in 0..k.blocks.len() {
        if !k.blocks[b].insts.iter().any(|i| matches!(i.kind, InstKind::IsSpace(_))) {
            continue;
        }
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            match inst.kind {
                InstKind::IsSpace(IsSpaceInst { space, ty, dst, addr }) => {
                    let mut e = Builder::new(k, inst.span);
                    write_out(&mut e, space, ty.bits() == 32, dst, addr);
                    out.append(&mut e.insts);
                }
                _ => out.push(inst),
            }
        }
        k.blocks[b].insts = out;
    }
}

/// `dst = isspacep.space a` for a 32-bit (`narrow`) or 64-bit generic address `a`.
fn write_out(e: &mut Builder<'_>, space: SpaceTest, narrow: bool, dst: RegId, a: Value) {
    // The window of a 64-bit generic address is its upper word.
    let hi = if narrow { Value::Imm(0) } else { e.bin(BinaryOp::Shr, U64, a, Value::Imm(32)) };
    let r = match space {
        SpaceTest::Global { const_bytes } | SpaceTest::Const { const_bytes } if narrow => {
            // The global address of the offset (the window's base plus it).
            let base = e.temp(U64);
            e.push(InstKind::Special { dst: base, reg: SpecialReg::WindowBase });
            let wide = e.cvt(U64, U32, a);
            let global = e.add(U64, Value::Reg(base), wide);
            let below = e.cmp(CmpOp::Lt, U32, a, Value::Imm(u64::from(PARAM_WINDOW_32)));
            let is_const = matches!(space, SpaceTest::Const { .. });
            let c = const_test(e, global, const_bytes, is_const);
            if is_const {
                c
            } else {
                e.pred_and(below, c)
            }
        }
        SpaceTest::Shared | SpaceTest::Local | SpaceTest::Param { .. } if narrow => {
            let (lo, hi) = match space {
                SpaceTest::Shared => (SHARED_WINDOW_32, u32::MAX),
                SpaceTest::Local => (LOCAL_WINDOW_32, SHARED_WINDOW_32 - 1),
                _ => (PARAM_WINDOW_32, LOCAL_WINDOW_32 - 1),
            };
            let above = e.cmp(CmpOp::Ge, U32, a, Value::Imm(u64::from(lo)));
            let below = e.cmp(CmpOp::Le, U32, a, Value::Imm(u64::from(hi)));
            e.pred_and(above, below)
        }
        // Constant memory: the `.const` variables at the start of the module data.
        SpaceTest::Const { const_bytes } => const_test(e, a, const_bytes, true),
        SpaceTest::Param { bytes } => {
            let base = e.temp(U64);
            e.push(InstKind::Special { dst: base, reg: SpecialReg::ParamBlock });
            let off = e.bin(BinaryOp::Sub, U64, a, Value::Reg(base));
            e.cmp(CmpOp::Lt, U64, off, Value::Imm(u64::from(bytes)))
        }
        SpaceTest::Shared | SpaceTest::Local => {
            let w = if space == SpaceTest::Shared { SHARED_WINDOW } else { LOCAL_WINDOW };
            e.cmp_into(dst, CmpOp::Eq, U64, hi, Value::Imm(w >> 32));
            return;
        }
        // Global: below both windows, and not the `.const` variables.
        SpaceTest::Global { const_bytes } => {
            let below = e.cmp(CmpOp::Lt, U64, hi, Value::Imm(LOCAL_WINDOW >> 32));
            let not_const = const_test(e, a, const_bytes, false);
            e.pred_and(below, not_const)
        }
    };
    e.mov(OpTy::Pred, dst, Value::Reg(r));
}

/// Whether 64-bit generic address `a` points at a `.const` variable (the first
/// `const_bytes` of the module data), or with `inside` false whether it does not.
fn const_test(e: &mut Builder<'_>, a: Value, const_bytes: u32, inside: bool) -> RegId {
    let base = e.temp(U64);
    e.push(InstKind::Special { dst: base, reg: SpecialReg::ModuleData });
    let off = e.bin(BinaryOp::Sub, U64, a, Value::Reg(base));
    let cmp = if inside { CmpOp::Lt } else { CmpOp::Ge };
    e.cmp(cmp, U64, off, Value::Imm(u64::from(const_bytes)))
}
