//! Pass: the addresses of the module data and of the parameter block
//! ([`InstKind::DataAddress`], specified in `crate::ir::data_address`'s doc) become
//! the arithmetic on their bases:
//!
//! - a module-data address is [`SpecialReg::ModuleData`] plus its offset;
//! - its offset in the 32-bit address window (a module with `.address_size 32`) is
//!   that address minus [`SpecialReg::WindowBase`], truncated to 32 bits;
//! - a parameter-block address is [`SpecialReg::ParamBlock`] plus its offset register,
//!   zero-extended when it is 32-bit.
//!
//! Pre: CFG IR from semantic analysis (the kernel's body and its functions').
//!
//! Post: no [`InstKind::DataAddress`] is left; each became instructions with its span
//! that write its register.

use crate::build::{Build, Builder};
use crate::ir::{
    BinaryOp, DataAddress, FloatMode, Inst, InstKind, Kernel, OpTy, RegId, SpecialReg, Value,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Whether `kind` is an address this pass writes out (`pass::leftover`).
pub fn is_data_address(kind: &InstKind) -> bool {
    matches!(kind, InstKind::DataAddress(_))
}

/// Writes out every data address of the kernel and of its functions.
pub fn run(k: &mut Kernel) {
    rewrite_body(k);
    let has = |inst: &Inst| is_data_address(&inst.kind);
    for f in &mut k.functions {
        if f.blocks.iter().any(|b| b.insts.iter().any(has)) {
            f.rewrite_in_shell(rewrite_body);
        }
    }
}

fn rewrite_body(k: &mut Kernel) {
    super::expander::each_in_block(k, is_data_address, |e, kind| {
        if let InstKind::DataAddress(a) = kind {
            write_out(e, a);
        }
    });
}

/// The instructions of one address (module doc).
fn write_out(e: &mut Builder<'_>, a: DataAddress) {
    match a {
        DataAddress::Module { dst, offset } => module_address(e, dst, offset),
        DataAddress::ModuleWindow { dst, offset } => {
            let address = e.temp(U64);
            module_address(e, address, offset);
            let base = e.special(SpecialReg::WindowBase);
            let offset = e.bin(BinaryOp::Sub, U64, Value::Reg(address), base);
            convert(e, U32, U64, dst, offset);
        }
        DataAddress::Param { dst, ty, offset } => {
            let base = e.special(SpecialReg::ParamBlock);
            let offset = match ty.bits() {
                64 => Value::Reg(offset),
                _ => e.cvt(U64, U32, Value::Reg(offset)),
            };
            binary(e, BinaryOp::Add, dst, base, offset);
        }
    }
}

/// `dst` = the module data's address plus `offset`.
fn module_address(e: &mut Builder<'_>, dst: RegId, offset: u32) {
    if offset == 0 {
        return e.push(InstKind::Special { dst, reg: SpecialReg::ModuleData });
    }
    let base = e.special(SpecialReg::ModuleData);
    binary(e, BinaryOp::Add, dst, base, Value::Imm(u64::from(offset)));
}

/// `dst = lhs op rhs` on 64-bit integers.
fn binary(e: &mut Builder<'_>, op: BinaryOp, dst: RegId, lhs: Value, rhs: Value) {
    e.push(InstKind::Binary { op, ty: U64, mode: FloatMode::default(), dst, lhs, rhs });
}

/// `dst = cvt.to.from src` (an integer conversion).
fn convert(e: &mut Builder<'_>, to: OpTy, from: OpTy, dst: RegId, src: Value) {
    let mode = FloatMode::default();
    e.push(InstKind::Convert { to, from, rounding: None, mode, dst, src });
}
