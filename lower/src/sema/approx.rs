//! The `.approx` and `.full` floating-point instructions (PTX ISA 9.2 §9.7.3.8-22,
//! §9.7.4.8-9): `ex2`, `lg2`, `sin`, `cos`, `rsqrt`, `tanh` (IR `UnaryOp`s computed in
//! f64 by the backend), `sqrt.approx`, `rcp.approx` (the correctly rounded forms, which
//! are within every documented bound), `div.approx` (one
//! [`IntegerOp::ApproxDiv`], which `pass::expand_integer` writes out), and `ex2`/`tanh`
//! on `.f16`/`.bf16` (one [`InstKind::Half`] each, which `pass::expand_formats` computes
//! through f32).

use ptxvk_frontend::ast;
use ptxvk_frontend::modifier::{Modifier, Precision};
use ptxvk_frontend::Diagnostic;
use ptxvk_frontend::Opcode;

use super::formats::half_type;
use super::{Lowerer, Mods};
use crate::ir::{
    FloatMode, HalfArith, HalfOp, InstKind, IntegerInst, IntegerOp, OpTy, Rounding, UnaryOp,
};

const APPROX: Modifier = Modifier::Precision(Precision::Approx);

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
            // `div.full.f32` is the correctly rounded quotient (within its 2-ulp bound),
            // the core lowering's.
            Opcode::Div if approx => Some(self.approx_div(i, m)),
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

    /// `div.approx{.ftz}.f32`: one [`IntegerOp::ApproxDiv`], which
    /// `pass::expand_integer` writes out.
    fn approx_div(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let (dst, [a, b]) = self.fixed_args(i, m)?;
        let op = IntegerOp::ApproxDiv { ftz: m.ftz };
        let div = IntegerInst { op, dst: Some(dst), srcs: vec![a, b] };
        self.push(InstKind::Integer(Box::new(div)), i.span);
        Ok(())
    }
}
