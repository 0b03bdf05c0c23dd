//! The `.approx` and `.full` floating-point instructions (PTX ISA 9.2 §9.7.3.8-22,
//! §9.7.4.8-9): `ex2`, `lg2`, `sin`, `cos`, `rsqrt`, `tanh` (IR `UnaryOp`s computed in
//! f64 by the backend), `sqrt.approx`, `rcp.approx`, `div.approx`, `div.full` (the
//! correctly rounded forms, which are within every documented bound), and `ex2`/`tanh`
//! on `.f16`/`.bf16` (one [`InstKind::Half`] each, which `pass::expand_formats` computes
//! through f32).

use ptxvk_frontend::ast;
use ptxvk_frontend::modifier::{Modifier, Precision};
use ptxvk_frontend::Diagnostic;
use ptxvk_frontend::Opcode;

use super::expand::Emit;
use super::formats::half_type;
use super::{Lowerer, Mods};
use crate::build::Build;
use crate::ir::{
    BinaryOp, CmpOp, FloatMode, HalfArith, HalfOp, InstKind, OpTy, Rounding, UnaryOp, Value,
};

const APPROX: Modifier = Modifier::Precision(Precision::Approx);
const FULL: Modifier = Modifier::Precision(Precision::Full);

const F32: OpTy = OpTy::F(32);

/// The transcendental instructions, one [`UnaryOp`] each (§9.7.3.17-22, §9.7.4.8-9).
const TRANSCENDENTAL: &[(Opcode, UnaryOp)] = &[
    (Opcode::Ex2, UnaryOp::Ex2),
    (Opcode::Lg2, UnaryOp::Lg2),
    (Opcode::Sin, UnaryOp::Sin),
    (Opcode::Cos, UnaryOp::Cos),
    (Opcode::Rsqrt, UnaryOp::Rsqrt),
    (Opcode::Tanh, UnaryOp::Tanh),
];

impl Lowerer<'_> {
    /// Lowers `i` if it is an approximate instruction; `None` leaves it to the others.
    pub(super) fn approx(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        let approx = m.has(APPROX);
        if let Some(&(_, uop)) = TRANSCENDENTAL.iter().find(|t| t.0 == op) {
            return Some(self.transcendental(uop, i, m));
        }
        match op {
            Opcode::Sqrt | Opcode::Rcp if approx => Some(self.approx_unary(op, i, m)),
            Opcode::Div if approx || m.has(FULL) => Some(self.approx_div(i, m)),
            _ => None,
        }
    }

    fn transcendental(
        &mut self,
        uop: UnaryOp,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        // `ex2` and `tanh` also take half types (§9.7.4.8-9).
        let half = half_type(m).filter(|_| matches!(uop, UnaryOp::Ex2 | UnaryOp::Tanh));
        if let Some((format, lanes)) = half {
            // One half operation, which `pass::expand_formats` computes through f32.
            let width = OpTy::U((16 * lanes) as u8);
            let dst = self.dst(&i.operands[0], width, false)?;
            let src = self.src(&i.operands[1], width, false, span)?;
            let op = if uop == UnaryOp::Ex2 { HalfArith::Ex2 } else { HalfArith::Tanh };
            let half = HalfOp {
                op,
                format,
                lanes: lanes as u8,
                dst,
                srcs: vec![src],
                rounding: Rounding::Nearest,
                ftz: false,
                sat: false,
                relu: false,
                nan: false,
            };
            self.push(InstKind::Half(Box::new(half)), span);
            return Ok(());
        }
        let ty = self.one_type(i, m)?;
        if ty == OpTy::F(64) && uop == UnaryOp::Rsqrt {
            // `rsqrt.approx{.ftz}.f64`: the exact square root and reciprocal (two
            // roundings, within one ulp).
            return self.approx_f64(UnaryOp::Rsqrt, i, m);
        }
        let mode = FloatMode { ftz: m.ftz, sat: false, ..FloatMode::default() };
        let dst = self.dst(&i.operands[0], F32, false)?;
        let src = self.src(&i.operands[1], F32, false, span)?;
        self.push(InstKind::Unary { op: uop, ty: F32, mode, dst, src }, span);
        Ok(())
    }

    /// `sqrt.approx.f32` and `rcp.approx.f32` are lowered as their correctly rounded
    /// forms, which meet the documented bounds (relative error 2^-23, 1 ulp).
    fn approx_unary(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let ty = self.one_type(i, m)?;
        if ty == OpTy::F(64) {
            // `rcp.approx.ftz.f64`, with its `.ftz` (`ptxvk_frontend::forms`).
            return self.approx_f64(UnaryOp::Rcp, i, m);
        }
        let dst = self.dst(&i.operands[0], F32, false)?;
        let src = self.src(&i.operands[1], F32, false, span)?;
        let uop = if op == Opcode::Sqrt { UnaryOp::Sqrt } else { UnaryOp::Rcp };
        let mode = FloatMode { ftz: m.ftz, sat: false, ..FloatMode::default() };
        self.push(InstKind::Unary { op: uop, ty: F32, mode, dst, src }, span);
        Ok(())
    }

    /// `rcp.approx.ftz.f64` and `rsqrt.approx{.ftz}.f64` (§9.7.3.9, §9.7.3.16): one f64
    /// `Unary` with its `.ftz`, which `pass::expand_formats` writes out as the exactly
    /// rounded reciprocal (of the exactly rounded square root).
    fn approx_f64(
        &mut self,
        op: UnaryOp,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let f64t = OpTy::F(64);
        let dst = self.dst(&i.operands[0], f64t, false)?;
        let src = self.src(&i.operands[1], f64t, false, span)?;
        let mode = FloatMode { ftz: m.ftz, ..FloatMode::default() };
        self.push(InstKind::Unary { op, ty: f64t, mode, dst, src }, span);
        Ok(())
    }

    /// `div.approx.f32` and `div.full.f32`: the correctly rounded quotient (within their
    /// 2-ulp bounds), except that `div.approx` gives 0 (NaN for an infinite dividend)
    /// for 2^126 < |b| < 2^128, as the ISA specifies.
    fn approx_div(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let approx = m.has(APPROX);
        let dst = self.dst(&i.operands[0], F32, false)?;
        let a = self.src(&i.operands[1], F32, false, span)?;
        let b = self.src(&i.operands[2], F32, false, span)?;
        let mode = FloatMode { ftz: m.ftz, sat: false, ..FloatMode::default() };
        let mut e = Emit { l: self, span };
        let q = e.temp(F32);
        e.push(InstKind::Binary { op: BinaryOp::Div, ty: F32, mode, dst: q, lhs: a, rhs: b });
        let mut r = Value::Reg(q);
        if approx {
            let u32t = OpTy::U(32);
            let mag_b = e.and(u32t, b, Value::Imm(0x7fff_ffff));
            let above = e.cmp(CmpOp::Gt, u32t, mag_b, Value::Imm(0x7e80_0000));
            let finite = e.cmp(CmpOp::Lt, u32t, mag_b, Value::Imm(0x7f80_0000));
            let huge = e.temp(OpTy::Pred);
            e.push(InstKind::PredLogic {
                op: crate::ir::BoolOp::And,
                dst: huge,
                lhs: above,
                rhs: finite,
            });
            let sign = e.bin(BinaryOp::Xor, u32t, a, b);
            let sign = e.and(u32t, sign, Value::Imm(0x8000_0000));
            let mag_a = e.and(u32t, a, Value::Imm(0x7fff_ffff));
            let a_inf = e.cmp(CmpOp::Eq, u32t, mag_a, Value::Imm(0x7f80_0000));
            let special = e.sel(u32t, a_inf, Value::Imm(0x7fc0_0000), sign);
            r = e.sel(u32t, huge, special, r);
        }
        e.mov(F32, dst, r);
        Ok(())
    }
}
