//! The `.approx` instructions that are not one core operation (PTX ISA 9.2 §9.7.3.8,
//! §9.7.4.8-9): `div.approx.f32` (one [`IntegerOp::ApproxDiv`], which
//! `pass::expand_integer` writes out) and `ex2`/`tanh` on `.f16`/`.bf16` (one
//! [`InstKind::Half`] each, which `pass::expand_formats` computes through f32). The
//! other `.approx` and `.full` forms are the core lowering's one operation each
//! (`sema::core_ops`): `ex2`, `lg2`, `sin`, `cos`, `rsqrt`, `tanh` IR `UnaryOp`s that
//! the backend computes in f64, `sqrt.approx`, `rcp.approx` and `div.full` as the
//! correctly rounded forms, which are within every documented bound.

use ptxvk_frontend::ast;
use ptxvk_frontend::modifier::{Modifier, Precision};
use ptxvk_frontend::Diagnostic;
use ptxvk_frontend::Opcode;

use super::formats::half_type;
use super::{Lowerer, Mods};
use crate::ir::{FloatFormat, HalfArith, HalfOp, InstKind, IntegerInst, IntegerOp, OpTy, Rounding};

const APPROX: Modifier = Modifier::Precision(Precision::Approx);

impl Lowerer<'_> {
    /// Lowers `i` if it is `ex2`/`tanh` on a half type or `div.approx`; `None` leaves
    /// it to the others.
    pub(super) fn approx(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        match op {
            // `ex2` and `tanh` also take half types (§9.7.4.8-9).
            Opcode::Ex2 | Opcode::Tanh => {
                let (format, lanes) = half_type(m)?;
                let op = if op == Opcode::Ex2 { HalfArith::Ex2 } else { HalfArith::Tanh };
                Some(self.half_function(op, format, lanes, i))
            }
            // `div.full.f32` is the correctly rounded quotient (within its 2-ulp bound),
            // the core lowering's.
            Opcode::Div if m.has(APPROX) => Some(self.approx_div(i, m)),
            _ => None,
        }
    }

    /// `ex2.approx` or `tanh.approx` on `.f16`, `.bf16` or their pairs: one half
    /// operation, which `pass::expand_formats` computes through f32.
    fn half_function(
        &mut self,
        op: HalfArith,
        format: FloatFormat,
        lanes: u32,
        i: &ast::Instruction,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let width = OpTy::U((16 * lanes) as u8);
        let dst = self.dst(&i.operands[0], width, false)?;
        let src = self.src(&i.operands[1], width, false, span)?;
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
