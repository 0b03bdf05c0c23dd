//! The half-precision and narrow floating-point formats (PTX ISA 9.2 §5.2.5): the
//! formats the IR converts between as bit patterns ([`FloatFormat`], which
//! `ptxvk_lower::ir` re-exports), and the typed decoding of the instructions that name
//! them, whose forms `super::media` checks: the half type of an arithmetic instruction
//! ([`half_source`]) and the two sides of a narrow-format `cvt` ([`cvt_types`]).

use crate::ast::ScalarType;
use crate::modifier::{Format, Modifier};
use crate::span::Spanned;

/// Floating-point formats ptxvk keeps as bit patterns in integer registers and converts
/// with exact integer arithmetic, so that no device support for them is needed
/// (PTX ISA 9.2 §5.2.5, §9.7.9.21): every format is sign, exponent and mantissa bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FloatFormat {
    /// IEEE binary32, as the target of directed rounding from f64.
    F32,
    /// IEEE binary16 (`.f16`).
    F16,
    /// bfloat16 (`.bf16`): the top half of an f32.
    Bf16,
    /// TensorFloat-32 (`.tf32`): an f32 bit pattern whose low 13 mantissa bits are 0.
    Tf32,
    /// FP8 E4M3 (`.e4m3`): no infinities; `S.1111.111` is NaN; largest 448.
    E4m3,
    /// FP8 E5M2 (`.e5m2`): IEEE-like, with infinities and NaNs.
    E5m2,
    /// IEEE binary64, as the target of the IR's `InstKind::IntToFloat`.
    F64,
    /// FP6 E2M3 (`.e2m3`): no infinities or NaNs; largest 7.5. Kept in a byte.
    E2m3,
    /// FP6 E3M2 (`.e3m2`): no infinities or NaNs; largest 28. Kept in a byte.
    E3m2,
    /// FP4 E2M1 (`.e2m1`): no infinities or NaNs; largest 6. Kept in a byte.
    E2m1,
}

impl FloatFormat {
    /// (exponent bits, mantissa bits) of the format.
    pub fn layout(self) -> (u32, u32) {
        match self {
            FloatFormat::F32 => (8, 23),
            FloatFormat::F16 => (5, 10),
            FloatFormat::Bf16 => (8, 7),
            FloatFormat::Tf32 => (8, 10),
            FloatFormat::E4m3 => (4, 3),
            FloatFormat::E5m2 => (5, 2),
            FloatFormat::F64 => (11, 52),
            FloatFormat::E2m3 => (2, 3),
            FloatFormat::E3m2 => (3, 2),
            FloatFormat::E2m1 => (2, 1),
        }
    }

    pub fn bias(self) -> i64 {
        (1 << (self.layout().0 - 1)) - 1
    }

    /// The width of the bit pattern in a register.
    pub fn bits(self) -> u32 {
        match self {
            FloatFormat::F32 | FloatFormat::Tf32 => 32,
            FloatFormat::F16 | FloatFormat::Bf16 => 16,
            FloatFormat::E4m3
            | FloatFormat::E5m2
            | FloatFormat::E2m3
            | FloatFormat::E3m2
            | FloatFormat::E2m1 => 8,
            FloatFormat::F64 => 64,
        }
    }

    /// Whether the format has NaNs (the FP6 and FP4 formats have none).
    pub fn has_nan(self) -> bool {
        !matches!(self, FloatFormat::E2m3 | FloatFormat::E3m2 | FloatFormat::E2m1)
    }

    /// Whether the all-ones exponent encodes infinities and NaNs (IEEE-like).
    pub fn has_infinity(self) -> bool {
        self.has_nan() && self != FloatFormat::E4m3
    }

    /// The magnitude bits of the largest finite value.
    pub fn max_finite(self) -> u64 {
        let (e, m) = self.layout();
        if self.has_infinity() {
            (((1u64 << e) - 1) << m) - 1
        } else if self.has_nan() {
            // E4M3: the all-ones pattern is NaN, the one below it the largest value.
            (1u64 << (e + m)) - 2
        } else {
            (1u64 << (e + m)) - 1
        }
    }

    /// The NaN a conversion produces (positive, quiet). Formats without NaN get their
    /// largest finite value: a NaN converted with `.satfinite` saturates (ptxvk's
    /// choice; the ISA leaves it open).
    pub fn nan(self) -> u64 {
        let (e, m) = self.layout();
        if self.has_nan() {
            (1u64 << (e + m)) - 1
        } else {
            self.max_finite()
        }
    }
}

/// The half or narrow format and lane count of a register type: `.f16`, `.bf16`, their
/// pairs, `.tf32`.
fn narrow_scalar(t: ScalarType) -> Option<(FloatFormat, u32)> {
    Some(match t {
        ScalarType::F16 => (FloatFormat::F16, 1),
        ScalarType::F16x2 => (FloatFormat::F16, 2),
        ScalarType::Bf16 => (FloatFormat::Bf16, 1),
        ScalarType::Bf16x2 => (FloatFormat::Bf16, 2),
        ScalarType::Tf32 => (FloatFormat::Tf32, 1),
        _ => return None,
    })
}

/// The half format and lane count of an arithmetic or comparison type (`.f16`,
/// `.bf16`, `.f16x2`, `.bf16x2`; PTX ISA 9.2 §9.7.4): `None` for other types.
pub fn half_source(t: ScalarType) -> Option<(FloatFormat, u32)> {
    narrow_scalar(t).filter(|(f, _)| *f != FloatFormat::Tf32)
}

/// The FP8, FP6 and FP4 pair types of `cvt`, which no register has.
fn fp8_pair(f: Format) -> Option<FloatFormat> {
    match f {
        Format::E4m3x2 => Some(FloatFormat::E4m3),
        Format::E5m2x2 => Some(FloatFormat::E5m2),
        Format::E2m3x2 => Some(FloatFormat::E2m3),
        Format::E3m2x2 => Some(FloatFormat::E3m2),
        Format::E2m1x2 => Some(FloatFormat::E2m1),
        _ => None,
    }
}

/// One type of a `cvt` as written: a register type, or a narrow format with 1 or 2
/// lanes (`.f16x2`, `.e4m3x2`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvtType {
    Register(ScalarType),
    Narrow(FloatFormat, u8),
}

/// The FP8/FP6/FP4 pair formats among a `cvt`'s modifiers.
fn fp8_pairs(details: &[Spanned<Modifier>]) -> impl Iterator<Item = Spanned<FloatFormat>> + '_ {
    details.iter().filter_map(|d| match d.value {
        Modifier::Format(f) => fp8_pair(f).map(|p| Spanned::new(p, d.span)),
        _ => None,
    })
}

/// Whether a `cvt` names a half or narrow format on either side (PTX ISA 9.2
/// §9.7.9.21), so that it converts through the narrow-format conversion.
pub fn is_narrow_cvt(details: &[Spanned<Modifier>], types: &[Spanned<ScalarType>]) -> bool {
    types.iter().any(|t| narrow_scalar(t.value).is_some()) || fp8_pairs(details).next().is_some()
}

/// The types of a `cvt` in source order (the destination first), narrow ones
/// (the FP8/FP6/FP4 pairs are formats, not types) included.
pub fn cvt_types(
    details: &[Spanned<Modifier>],
    types: &[Spanned<ScalarType>],
) -> Vec<Spanned<CvtType>> {
    let pairs = fp8_pairs(details).map(|p| Spanned::new(CvtType::Narrow(p.value, 2), p.span));
    let types = types.iter().map(|t| {
        let ty = match narrow_scalar(t.value) {
            Some((f, n)) => CvtType::Narrow(f, n as u8),
            None => CvtType::Register(t.value),
        };
        Spanned::new(ty, t.span)
    });
    let mut out: Vec<_> = pairs.chain(types).collect();
    out.sort_by_key(|t| t.span.start);
    out
}

#[cfg(test)]
mod tests {
    use super::{cvt_types, is_narrow_cvt, CvtType, FloatFormat};
    use crate::ast::ScalarType;

    /// The sides [`cvt_types`] decodes from `line`, if it is a narrow `cvt`.
    fn sides(line: &str) -> Option<Vec<CvtType>> {
        let i = crate::decode::test_instruction(line).expect("parses");
        let m = crate::decode::decode(&i).expect("decodes").expect("a PTX instruction");
        is_narrow_cvt(&m.details, &m.types)
            .then(|| cvt_types(&m.details, &m.types).into_iter().map(|t| t.value).collect())
    }

    #[test]
    fn cvt_sides_in_source_order() {
        use CvtType::{Narrow, Register};
        let pair = sides("cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;");
        assert_eq!(pair, Some(vec![Narrow(FloatFormat::E4m3, 2), Register(ScalarType::F32)]));
        let widen = sides("cvt.f32.bf16 %f1, %h1;");
        assert_eq!(widen, Some(vec![Register(ScalarType::F32), Narrow(FloatFormat::Bf16, 1)]));
        let unpack = sides("cvt.rn.f16x2.e2m1x2 %r1, %h1;");
        assert_eq!(unpack, Some(vec![Narrow(FloatFormat::F16, 2), Narrow(FloatFormat::E2m1, 2)]));
        assert_eq!(sides("cvt.rn.f32.f64 %f1, %fd1;"), None);
    }
}
