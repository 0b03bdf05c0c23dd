//! Floating-point formats and rounding modes that Vulkan devices lack, lowered to exact
//! integer and f64 arithmetic (PTX ISA 9.2 §9.7.3, §9.7.4, §9.7.9.21):
//!
//! * `.f16`, `.bf16`, `.f16x2`, `.bf16x2` arithmetic (`add`, `sub`, `mul`, `fma`,
//!   `neg`, `abs`, `min`, `max`, and `ex2.approx`, `tanh.approx` through their f32
//!   functions): checked and resolved into one `InstKind::Half`, which
//!   `pass::expand_formats` computes lane by lane (widened to f32 exactly, computed
//!   exactly and rounded to odd in f64, rounded once to the format) with no f16 support
//!   needed;
//! * `cvt` to and from `.f16`, `.bf16`, `.tf32` and the FP8/FP6/FP4 pairs
//!   (`.e4m3x2`, `.e5m2x2`, …) with every rounding mode, `.relu` and `.satfinite`, and
//!   to and from the UE8M0 scale factors `.ue8m0x2`: checked and resolved into one
//!   `InstKind::HalfConvert` (its semantics are documented there), which
//!   `pass::expand_formats` writes out;
//!
//! Directed rounding (`.rz`, `.rm`, `.rp`) of `add`, `sub`, `mul`, `fma`/`mad` on
//! `.f32`/`.f64` is the core lowering's float mode (`sema::core_ops`), which
//! `pass::legalize_floats` applies.

use ptxvk_frontend::ast::{self, ScalarType};
use ptxvk_frontend::forms::formats::{self, CvtType};
use ptxvk_frontend::forms::media::to_ue8m0;
use ptxvk_frontend::modifier::{ConvertRounding, FloatOption, Format, Modifier};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span, Spanned};

use super::{unsupported, Mods, Resolver};
use crate::ir::{
    CvtRefusal, CvtSide, FloatFormat, HalfArith, HalfConvert, HalfConvertOp, HalfOp, InstKind,
    NarrowCvt, OpTy, RegId, Rounding, Value,
};

const F32: OpTy = OpTy::F(32);

/// The half type (format) of a comparison's source type, when it is one: `setp` and `set`
/// on `.f16`/`.bf16` (PTX ISA 9.2 §9.7.4.6-7). `None` for other types.
pub(super) fn half_source(t: ScalarType) -> Option<(FloatFormat, u32)> {
    formats::half_source(t)
}

const RELU: Modifier = Modifier::FloatOption(FloatOption::Relu);
const NAN: Modifier = Modifier::FloatOption(FloatOption::NaN);
const SATFINITE: Modifier = Modifier::FloatOption(FloatOption::Satfinite);
const UE8M0X2: Modifier = Modifier::Format(Format::Ue8m0x2);

/// The half type of an arithmetic instruction with exactly one type.
pub(super) fn half_type(m: &Mods) -> Option<(FloatFormat, u32)> {
    match m.types.as_slice() {
        [t] => formats::half_source(t.value),
        _ => None,
    }
}

/// The opcodes of half-precision arithmetic (§9.7.4.1-4, §9.7.4.8-11).
const HALF_OPS: &[(Opcode, HalfArith)] = &[
    (Opcode::Add, HalfArith::Add),
    (Opcode::Sub, HalfArith::Sub),
    (Opcode::Mul, HalfArith::Mul),
    (Opcode::Fma, HalfArith::Fma),
    (Opcode::Neg, HalfArith::Neg),
    (Opcode::Abs, HalfArith::Abs),
    (Opcode::Min, HalfArith::Min),
    (Opcode::Max, HalfArith::Max),
    // `ex2.approx` and `tanh.approx` on half types (§9.7.4.8-9), computed through f32.
    (Opcode::Ex2, HalfArith::Ex2),
    (Opcode::Tanh, HalfArith::Tanh),
];

impl Resolver<'_> {
    /// Lowers `i` if it needs a narrow format or a directed rounding; `None` leaves it
    /// to the other lowerings.
    pub(super) fn float_formats(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        let half = HALF_OPS.iter().find(|h| h.0 == op).zip(half_type(m));
        if let Some((&(_, arith), (format, lanes))) = half {
            return Some(self.half_arith(arith, format, lanes, i, m));
        }
        match op {
            Opcode::Cvt if m.has(UE8M0X2) => Some(self.ue8m0_cvt(i, m)),
            Opcode::Cvt if formats::is_narrow_cvt(&m.details, &m.types) => {
                Some(self.narrow_cvt(i, m))
            }
            _ => None,
        }
    }

    /// `.f16`/`.bf16`/`.f16x2`/`.bf16x2` arithmetic: one [`InstKind::Half`], which
    /// `pass::expand_formats` computes lane by lane. Its modifiers and operand count are
    /// checked by `ptxvk_frontend::forms::media`.
    fn half_arith(
        &mut self,
        op: HalfArith,
        format: FloatFormat,
        lanes: u32,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let relu = m.has(RELU);
        let nan_mode = m.has(NAN);
        let rounding = m.rounding.as_ref().map_or(Rounding::Nearest, |r| r.value.0);
        let width = OpTy::U((16 * lanes) as u8);
        let dst = self.dst(&i.operands[0], width, false)?;
        let srcs = self.sources(&i.operands[1..], width, span)?;
        let lanes = lanes as u8;
        // `ex2.approx.ftz.bf16` flushes subnormal inputs and results (§9.7.4.10; the
        // forms allow `.ftz` on no other half function).
        let (ftz, sat) = (m.ftz, m.sat);
        let half = HalfOp { op, format, lanes, dst, srcs, rounding, ftz, sat, relu, nan: nan_mode };
        self.push(InstKind::Half(Box::new(half)), span);
        Ok(())
    }

    /// `cvt` to and from `.ue8m0x2` (PTX ISA 9.2 §9.7.9.21, §5.2.5): two f32 sources or
    /// the two halves of a `.bf16x2` to a pair of scale factors (the first source, or
    /// the upper half, in the upper byte), or a pair back to `.bf16x2`.
    fn ue8m0_cvt(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        // Its form is checked by `ptxvk_frontend::forms::media` (`Check::Ue8m0`).
        if !to_ue8m0(&m.details, &m.types) {
            // cvt.rn.bf16x2.ue8m0x2 d, a: each byte to the bf16 2^(e - 127), NaN kept.
            let dst = self.dst(&i.operands[0], OpTy::U(32), false)?;
            let a = self.src(&i.operands[1], OpTy::U(16), false, span)?;
            self.half_convert(HalfConvertOp::FromUe8m0, dst, vec![a], span);
            return Ok(());
        }
        let satfinite = m.has(SATFINITE);
        let up = m.rounding.as_ref().is_some_and(|r| r.value.0 == Rounding::Up);
        let dst = self.dst(&i.operands[0], OpTy::U(16), false)?;
        let bf16x2 = m.types.iter().any(|t| t.value == ScalarType::Bf16x2);
        let srcs = if bf16x2 {
            vec![self.src(&i.operands[1], OpTy::U(32), false, span)?]
        } else {
            self.sources(&i.operands[1..], F32, span)?
        };
        self.half_convert(HalfConvertOp::ToUe8m0 { bf16x2, up, satfinite }, dst, srcs, span);
        Ok(())
    }

    /// Appends one [`InstKind::HalfConvert`].
    fn half_convert(&mut self, op: HalfConvertOp, dst: RegId, srcs: Vec<Value>, span: Span) {
        self.push(InstKind::HalfConvert(Box::new(HalfConvert { op, dst, srcs })), span);
    }

    /// `cvt` with a narrow format on either side (PTX ISA 9.2 §9.7.9.21).
    fn narrow_cvt(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let side = |t: &Spanned<CvtType>| match t.value {
            CvtType::Register(r) => super::op_ty(&Spanned::new(r, t.span)).map(CvtSide::Op),
            CvtType::Narrow(f, n) => Ok(CvtSide::Narrow(f, n)),
        };
        let types = formats::cvt_types(&m.details, &m.types);
        let types = types.iter().map(side).collect::<Result<Vec<_>, _>>()?;
        let &[to, from] = types.as_slice() else {
            return Err(Diagnostic::error(span, "`cvt` needs a destination and a source type"));
        };
        // Its modifiers, `.sat`, its formats and its sources from `.f32`/`.f64` are
        // checked by `ptxvk_frontend::forms::media` (`.rs` refused there).
        let rna = Modifier::ConvertRounding(ConvertRounding::Rna);
        let relu = m.has(RELU);
        let satfinite = m.has(SATFINITE);
        let float_rounding = if m.has(rna) {
            Some(Rounding::NearestAway)
        } else {
            m.rounding.as_ref().filter(|r| !r.value.1).map(|r| r.value.0)
        };
        let integral = m.rounding.as_ref().filter(|r| r.value.1).map(|r| r.value.0);
        let srcs = &i.operands[1..];
        let int_dst = matches!(to, CvtSide::Op(t) if !t.is_float());
        // PTX ISA 9.2 §5.2.2: `cvt` operands may be wider than the instruction type (an
        // f16 in a 32-bit register): the low bits are converted, and a narrow result is
        // zero-extended into its register (`pass::expand_formats`).
        let to_bits = to.bits();
        let wider = self.wider_register(&i.operands[0], to_bits).filter(|_| !int_dst);
        let dst = match wider {
            Some(register) => register,
            None => self.dst(&i.operands[0], OpTy::U(to_bits as u8), true)?,
        };
        let read = |l: &mut Resolver<'_>, t: CvtSide, k: usize| -> Result<Value, Diagnostic> {
            let (ty, bits_only) = match t {
                CvtSide::Op(o) => (o, o.is_float()),
                CvtSide::Narrow(..) => (OpTy::U(t.bits() as u8), true),
            };
            let op =
                srcs.get(k).ok_or_else(|| Diagnostic::error(span, "`cvt` is missing a source"))?;
            l.relaxed_src(op, ty, bits_only, span)
        };
        let cvt = NarrowCvt {
            to,
            from,
            rounding: integral.or(float_rounding),
            integral: integral.is_some(),
            relu,
            satfinite,
            ftz: m.ftz,
        };
        match cvt.refusal() {
            Some(CvtRefusal::Invalid(why)) => return Err(Diagnostic::error(span, why)),
            Some(CvtRefusal::NotImplemented) => {
                return Err(unsupported(span, "this `cvt` form", "not implemented yet"))
            }
            None => {}
        }
        let mut vals = Vec::new();
        for k in 0..cvt.arity() {
            vals.push(read(self, from, k)?);
        }
        self.half_convert(HalfConvertOp::Narrow(cvt), dst, vals, span);
        Ok(())
    }
}
