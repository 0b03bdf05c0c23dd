//! Arithmetic on the half formats (PTX ISA 9.2 §9.7.4: `.f16`, `.bf16`, `.f16x2`,
//! `.bf16x2`) as one IR operation each, [`super::InstKind::Half`]: what semantic
//! analysis resolved, before `pass::expand_formats` computes each lane exactly in f32
//! and f64 (`Widen`, `RoundToOdd`, `Narrow`), which needs no half support on the device.

use super::{FloatFormat, RegId, Rounding, Value};

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
}

impl HalfArith {
    /// The number of sources.
    pub fn arity(self) -> usize {
        match self {
            HalfArith::Neg | HalfArith::Abs => 1,
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
