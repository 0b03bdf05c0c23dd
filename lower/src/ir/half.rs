//! Arithmetic on the half formats (PTX ISA 9.2 §9.7.4: `.f16`, `.bf16`, `.f16x2`,
//! `.bf16x2`) as one IR operation each, [`super::InstKind::Half`]: what semantic
//! analysis resolved, before `pass::expand_formats` computes each lane exactly in f32
//! and f64 (`Widen`, `RoundToOdd`, `Narrow`), which needs no half support on the device;
//! and the conversions of narrow formats that are not one core operation,
//! [`super::InstKind::HalfConvert`], which the same pass writes out.

use super::{FloatFormat, OpTy, RegId, Rounding, Value};

/// The operation of a [`HalfOp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalfArith {
    Add,
    Sub,
    Mul,
    /// `a * b + c`, rounded once.
    Fma,
    /// The sign bit flipped (NaNs too).
    Neg,
    /// The sign bit cleared (NaNs too).
    Abs,
    /// A NaN operand gives the other (two give the canonical NaN); -0 is below +0.
    Min,
    Max,
    /// `ex2.approx` (PTX ISA 9.2 §9.7.4.8): 2^x of the lane, computed in f32 (the f32
    /// operation, [`super::UnaryOp::Ex2`]) and rounded to nearest to the format.
    Ex2,
    /// `tanh.approx` (§9.7.4.9), likewise through [`super::UnaryOp::Tanh`].
    Tanh,
}

impl HalfArith {
    /// The number of sources.
    pub fn arity(self) -> usize {
        match self {
            HalfArith::Neg | HalfArith::Abs | HalfArith::Ex2 | HalfArith::Tanh => 1,
            HalfArith::Fma => 3,
            _ => 2,
        }
    }

    /// Whether the result is rounded (`rounding` applies).
    pub fn rounds(self) -> bool {
        matches!(self, HalfArith::Add | HalfArith::Sub | HalfArith::Mul | HalfArith::Fma)
    }
}

impl HalfOp {
    /// What is wrong with the operation's fields, if anything (the verifier's check):
    /// a half format, one or two lanes, as many sources as the operation takes.
    pub fn malformed(&self) -> Option<&'static str> {
        let format = matches!(self.format, FloatFormat::F16 | FloatFormat::Bf16);
        let ok = format && matches!(self.lanes, 1 | 2) && self.srcs.len() == self.op.arity();
        (!ok).then_some("half arithmetic on a format, lane count or operands it does not have")
    }
}

/// `op` on each of `lanes` (1 or 2) 16-bit lanes of `format` ([`FloatFormat::F16`] or
/// [`FloatFormat::Bf16`]; lane 0 in the low bits) of its sources, each `16 * lanes`
/// bits wide, as is `dst`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HalfOp {
    pub op: HalfArith,
    pub format: FloatFormat,
    pub lanes: u8,
    pub dst: RegId,
    pub srcs: Vec<Value>,
    /// The rounding of `add`, `sub`, `mul` and `fma` (to nearest for the others). PTX
    /// has only `.rn` for them; in the other directions, which semantic analysis
    /// accepts, an exact zero sum has its sign under rounding to nearest (+0 for
    /// operands of opposite signs, also when rounding down, where IEEE 754 §6.3 has -0).
    pub rounding: Rounding,
    /// `.ftz`: subnormal inputs and (rounded) results become zeros of their sign.
    pub ftz: bool,
    /// `.sat` (rounded `.f16` operations): the result clamped to [0, 1], NaN to +0.
    pub sat: bool,
    /// `.relu` (`fma`): a negative result (and -0) becomes +0; NaN stays.
    pub relu: bool,
    /// `.NaN` (`min`, `max`): a NaN operand gives the canonical NaN.
    pub nan: bool,
}

/// A conversion of the narrow formats (PTX ISA 9.2 §9.7.9.21) as one IR operation,
/// [`super::InstKind::HalfConvert`]: what semantic analysis resolved, before
/// `pass::expand_formats` writes it out in integer operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HalfConvert {
    pub op: HalfConvertOp,
    /// A narrow `cvt`'s may be a wider integer register (PTX ISA 9.2 §5.2.2): an
    /// integer result is extended into it as its type says, any other zero-extended.
    pub dst: RegId,
    /// The sources, [`HalfConvertOp::src_bits`] wide each; a narrow `cvt`'s may be
    /// wider integer registers (§5.2.2), read as an integer type says or, for a float
    /// or narrow format, their low bits.
    pub srcs: Vec<Value>,
}

/// The conversions. UE8M0 (`.ue8m0x2`, §5.2.5) is a pair of scale factors, each 8
/// exponent bits with bias 127: no sign, no zero, no infinity, NaN 0xff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalfConvertOp {
    /// `cvt.{rz,rp}{.satfinite}.ue8m0x2.f32 d, a, b` (`bf16x2`: `.bf16x2 d, a`, its
    /// upper half as `a`): the exponent of `|a|` in the upper byte of the 16-bit `d`,
    /// of `|b|` in the lower; `up` (`.rp`) rounds up when the value is not a power of
    /// two. Values up to 2^-127 give 2^-127 (0); infinities and results past 2^127
    /// give NaN, or 2^127 (0xfe) with `satfinite`; NaN gives NaN. The behaviour of the
    /// host emulation in CUDA's `cuda_fp8.hpp`.
    ToUe8m0 { bf16x2: bool, up: bool, satfinite: bool },
    /// `cvt.rn.bf16x2.ue8m0x2 d, a`: each byte `e` of the 16-bit `a` to the bf16
    /// 2^(e - 127) in the same lane of the 32-bit `d` (2^-127 is subnormal), NaN kept.
    FromUe8m0,
    /// `cvt` with a narrow format on either side (`.f16`, `.bf16`, `.tf32`, the FP8,
    /// FP6 and FP4 pairs), [`NarrowCvt`].
    Narrow(NarrowCvt),
}

/// One side of a narrow-format `cvt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvtSide {
    /// `.f32`, `.f64` or an integer type.
    Op(OpTy),
    /// A narrow format with 1 or 2 lanes (`.f16x2`, `.e4m3x2`, …): lane 0 in the low
    /// bits, [`packed_bits`] each.
    Narrow(FloatFormat, u8),
}

/// The width of one lane of a packed narrow pair: 4 bits for FP4, a byte for FP6 (two
/// zero bits on top) and FP8, 16 bits for the half types, 32 for `.tf32`.
pub fn packed_bits(f: FloatFormat) -> u32 {
    if f == FloatFormat::E2m1 {
        4
    } else {
        f.bits()
    }
}

impl CvtSide {
    /// The width of the whole value.
    pub fn bits(self) -> u32 {
        match self {
            CvtSide::Op(t) => t.bits(),
            CvtSide::Narrow(f, n) => packed_bits(f) * u32::from(n),
        }
    }
}

/// `cvt` with a narrow format on either side (PTX ISA 9.2 §9.7.9.21). The forms, each
/// value converted exactly and rounded once:
///
/// * to a narrow format from `.f32`/`.f64`, one source per lane, the first source in
///   the upper lane; `ftz` flushes an f32 subnormal source to a zero of its sign;
/// * between a pair of FP8/FP6/FP4 and `.f16x2` (either way), lane by lane;
/// * to `.f32`/`.f64` from a scalar narrow format (exact; no rounding, `relu` or
///   `satfinite`), `ftz` flushing an f32-subnormal result;
/// * between scalar narrow formats; with an `integral` rounding (`.rni`…), from a format
///   to itself: rounded to an integer value (`ftz` flushing a subnormal first), then to
///   nearest into the format;
/// * to an integer from a scalar narrow format, with an `integral` rounding: clamped to
///   the integer's range, NaN giving 0 (2^63 for a 64-bit integer, as GPUs do; `ftz`
///   as above); a wider destination register receives it sign- or zero-extended;
/// * to a scalar narrow format (not `.tf32`) from an integer.
///
/// Rounding to a narrow format: NaN gives the format's NaN (the FP6/FP4 formats have
/// none: their largest value; `.tf32`, an f32 pattern with 13 zero mantissa bits, the
/// f32 NaN `0x7fffffff`); a value past the largest finite one (rounded with the
/// format's precision and an unbounded exponent) gives infinity, or the largest finite
/// value with the sign when `satfinite`, when the format has no infinity, or when the
/// rounding goes toward zero for the sign; an infinity stays one unless `satfinite` or
/// the format has none; `relu` makes a negative result (and -0) +0, NaN kept.
/// `rounding` is `None` only for the exact widenings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NarrowCvt {
    pub to: CvtSide,
    pub from: CvtSide,
    pub rounding: Option<Rounding>,
    /// The rounding is to an integral value (`.rni`, `.rzi`, `.rmi`, `.rpi`).
    pub integral: bool,
    pub relu: bool,
    pub satfinite: bool,
    pub ftz: bool,
}

impl NarrowCvt {
    /// How many sources the conversion takes: one per lane from f32/f64, else one.
    pub fn arity(self) -> usize {
        match (self.to, self.from) {
            (CvtSide::Narrow(_, n), CvtSide::Op(_)) => usize::from(n),
            _ => 1,
        }
    }

    /// Why the form is refused, if it is (semantic analysis's diagnostics; the
    /// verifier refuses the same forms).
    pub fn refusal(self) -> Option<CvtRefusal> {
        use CvtRefusal::Invalid;
        let float = |t: OpTy| matches!(t, OpTy::F(32) | OpTy::F(64));
        let integer = |t: OpTy| matches!(t, OpTy::U(_) | OpTy::S(_));
        let rounded = self.rounding.is_some() && !self.integral;
        let needs = "this `cvt` needs `.rn`, `.rz`, `.rm` or `.rp`";
        let fp8 = |f: FloatFormat| f.bits() == 8 && !self.satfinite;
        let refused = match (self.to, self.from) {
            (CvtSide::Narrow(f, _), CvtSide::Op(t)) if float(t) && fp8(f) => {
                Invalid("conversions to FP8 need `.satfinite`")
            }
            (CvtSide::Narrow(f, 2), CvtSide::Narrow(g, 2)) if f.bits() != g.bits() && fp8(f) => {
                Invalid("conversions to FP8 need `.satfinite`")
            }
            (CvtSide::Narrow(_, _), CvtSide::Op(t)) if float(t) && !rounded => Invalid(needs),
            (CvtSide::Narrow(f, 2), CvtSide::Narrow(g, 2)) if f.bits() != g.bits() && !rounded => {
                Invalid(needs)
            }
            (CvtSide::Op(t), CvtSide::Narrow(_, 1))
                if float(t) && (self.rounding.is_some() || self.relu || self.satfinite) =>
            {
                Invalid("widening `cvt` takes no rounding, `.relu` or `.satfinite`")
            }
            (CvtSide::Narrow(f, 1), CvtSide::Narrow(g, 1)) if self.integral && f != g => {
                Invalid("an integral rounding needs the same source and destination type")
            }
            (CvtSide::Narrow(_, 1), CvtSide::Narrow(_, 1)) if self.rounding.is_none() => {
                Invalid(needs)
            }
            (CvtSide::Op(t), CvtSide::Narrow(_, 1)) if integer(t) && !self.integral => {
                Invalid("a float-to-integer `cvt` needs `.rni`, `.rzi`, `.rmi` or `.rpi`")
            }
            (CvtSide::Narrow(FloatFormat::Tf32, 1), CvtSide::Op(t)) if integer(t) => {
                Invalid("`.tf32` converts from `.f32` only")
            }
            (CvtSide::Narrow(_, 1), CvtSide::Op(t)) if integer(t) && !rounded => Invalid(needs),
            (CvtSide::Narrow(_, 1), CvtSide::Op(t))
                if integer(t) && (self.relu || self.satfinite) =>
            {
                Invalid("integer sources take no `.relu` or `.satfinite`")
            }
            (CvtSide::Narrow(_, 1..=2), CvtSide::Op(t)) if float(t) => return None,
            (CvtSide::Narrow(f, 2), CvtSide::Narrow(g, 2)) if f.bits() != g.bits() => return None,
            (CvtSide::Narrow(_, 1), CvtSide::Narrow(_, 1)) => return None,
            (CvtSide::Op(t), CvtSide::Narrow(_, 1)) if float(t) || integer(t) => return None,
            (CvtSide::Narrow(_, 1), CvtSide::Op(t)) if integer(t) => return None,
            _ => CvtRefusal::NotImplemented,
        };
        Some(refused)
    }
}

/// Why a narrow `cvt` form is refused ([`NarrowCvt::refusal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvtRefusal {
    /// Not a valid form; what is wrong.
    Invalid(&'static str),
    /// A combination of types with no conversion here.
    NotImplemented,
}

impl HalfConvertOp {
    /// The widths of the sources.
    pub fn src_bits(self) -> Vec<u32> {
        match self {
            HalfConvertOp::ToUe8m0 { bf16x2: false, .. } => vec![32, 32],
            HalfConvertOp::ToUe8m0 { bf16x2: true, .. } => vec![32],
            HalfConvertOp::FromUe8m0 => vec![16],
            HalfConvertOp::Narrow(n) => vec![n.from.bits(); n.arity()],
        }
    }

    /// The width of the destination.
    pub fn dst_bits(self) -> u32 {
        match self {
            HalfConvertOp::ToUe8m0 { .. } => 16,
            HalfConvertOp::FromUe8m0 => 32,
            HalfConvertOp::Narrow(n) => n.to.bits(),
        }
    }
}

impl HalfConvert {
    /// What is wrong with the conversion's fields, if anything (the verifier's check).
    pub fn malformed(&self) -> Option<&'static str> {
        if self.srcs.len() != self.op.src_bits().len() {
            return Some("a narrow-format conversion with operands it does not have");
        }
        match self.op {
            HalfConvertOp::Narrow(n) => {
                n.refusal().map(|_| "a narrow-format `cvt` of a form that does not exist")
            }
            _ => None,
        }
    }
}
