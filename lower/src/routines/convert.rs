//! The conversions to and from the narrow float formats as bit patterns
//! ([`Routine::Narrow`], [`Routine::IntToFloat`], [`Routine::Widen`]), with exact integer
//! arithmetic, so that `.f16`, `.bf16`, `.tf32` and FP8/FP6/FP4 work, in every rounding,
//! on devices without 16-bit or 8-bit float support and without float controls (PTX ISA
//! 9.2 §9.7.9.21). A rounding shifts the significand right and decides the increment
//! from the bits shifted out ([`Wide::round_increment`], IEEE 754 §4.3).
//!
//! [`Routine::Narrow`]: crate::ir::Routine::Narrow
//! [`Routine::IntToFloat`]: crate::ir::Routine::IntToFloat
//! [`Routine::Widen`]: crate::ir::Routine::Widen

use super::wide::{k, Wide, S64, U64};
use crate::ir::{BinaryOp, CmpOp, FloatFormat, OpTy, RegId, Rounding, UnaryOp, Value};

const U32: OpTy = OpTy::U(32);

/// The round bit of `rem`, the bits shifted out whose first has the value `half` (at
/// least 1), and whether any bit below it is set: `rem >= half`, `rem & (half - 1) != 0`.
fn split_remainder(b: &mut impl Wide, rem: Value, half: Value) -> (RegId, RegId) {
    let round_bit = b.ge64(rem, half);
    let below_mask = b.sub64(half, k(1));
    let below = b.and64(rem, below_mask);
    (round_bit, b.ne64(below, k(0)))
}

/// The rounded magnitude `r` of sign `sign` (0 or 1) past `to`'s largest finite value:
/// that value when `clamps` or when `rounding` goes toward zero for the sign, else
/// infinity (IEEE 754 §7.4).
fn past_max(
    b: &mut impl Wide,
    to: FloatFormat,
    rounding: Rounding,
    clamps: bool,
    sign: Value,
    r: Value,
) -> Value {
    let (max, inf) = (to.max_finite(), to.max_finite() + 1);
    let overflow = b.gt64(r, k(max));
    let over = match rounding {
        _ if clamps => k(max),
        Rounding::Zero => k(max),
        Rounding::Down | Rounding::Up => {
            let negative = b.eq64(sign, k(1));
            let (neg, pos) = if rounding == Rounding::Down { (inf, max) } else { (max, inf) };
            b.sel64(negative, k(neg), k(pos))
        }
        Rounding::Nearest | Rounding::NearestAway => k(inf),
    };
    b.sel64(overflow, over, r)
}

/// `InstKind::Narrow` of the f32 (`from_bits` 32) or f64 bit pattern `x`: the
/// significand shifted right by the mantissa difference plus how far the value lies
/// below `to`'s normal range, the increment decided from the bits shifted out. The
/// result is `to.bits()` wide.
pub(super) fn narrow(
    b: &mut impl Wide,
    x: Value,
    (to, from_bits): (FloatFormat, u8),
    rounding: Rounding,
    satfinite: bool,
    relu: bool,
) -> Value {
    let x = if from_bits == 32 { b.cvt(U64, U32, x) } else { x };
    let (es, ms, bias_s) = if from_bits == 32 { (8u32, 23u32, 127i64) } else { (11, 52, 1023) };
    let (et, mt) = to.layout();

    let sign = b.shr64(x, k(u64::from(es + ms)));
    let mag = b.and64(x, k((1u64 << (es + ms)) - 1));
    let inf_s = ((1u64 << es) - 1) << ms;
    let is_nan = b.gt64(mag, k(inf_s));
    let is_inf = b.eq64(mag, k(inf_s));
    let exp_s = b.shr64(mag, k(u64::from(ms)));
    let frac = b.and64(mag, k((1u64 << ms) - 1));
    let is_sub = b.eq64(exp_s, k(0));
    let with_hidden = b.or64(frac, k(1u64 << ms));
    let sig = b.sel64(is_sub, frac, with_hidden);
    let e = b.sel64(is_sub, k(1), exp_s);
    // The target's biased exponent (≤ 0 for its subnormals, or huge).
    let te = b.add64(e, k((to.bias() - bias_s) as u64));
    // The right shift: the mantissa difference, plus how far below the normal range.
    let under = b.sub64(k(1), te);
    let under = b.bin(BinaryOp::Max, S64, under, k(0));
    let shift = b.add64(under, k(u64::from(ms - mt)));
    let shift = b.umin(shift, 63);
    let normal = b.cmp(CmpOp::Gt, S64, te, k(0));
    let te1 = b.sub64(te, k(1));
    let base = b.sel64(normal, te1, k(0));

    let amount = b.amount(shift);
    let q = b.shr64(sig, amount);
    let unit = b.shl64(k(1), amount);
    let rem_mask = b.sub64(unit, k(1));
    let rem = b.and64(sig, rem_mask);
    let shift1 = b.sub64(shift, k(1));
    let shift1 = b.amount(shift1);
    let half = b.shl64(k(1), shift1);
    let (round_bit, rest) = split_remainder(b, rem, half);
    let inc = b.round_increment(rounding, q, round_bit, rest, sign);
    let placed = b.shl64(base, k(u64::from(mt)));
    let r = b.add64(placed, q);
    let r = b.add64(r, inc);

    // Past the largest finite value: infinity, or the largest finite value when
    // saturating, when the format has no infinity, or when rounding toward zero.
    let clamps = satfinite || !to.has_infinity();
    let r = past_max(b, to, rounding, clamps, sign, r);
    let max = to.max_finite();
    let r = b.sel64(is_inf, k(if clamps { max } else { max + 1 }), r);
    let sign_bit = b.shl64(sign, k(u64::from(et + mt)));
    let mut r = b.or64(r, sign_bit);
    if relu {
        let negative = b.eq64(sign, k(1));
        r = b.sel64(negative, k(0), r);
    }
    if to == FloatFormat::Tf32 {
        // The 19-bit pattern becomes an f32 pattern with 13 zero mantissa bits.
        r = b.shl64(r, k(13));
    }
    let nan = if to == FloatFormat::Tf32 { 0x7fff_ffff } else { to.nan() };
    let r = b.sel64(is_nan, k(nan), r);
    b.cvt(OpTy::U(to.bits() as u8), U64, r)
}

/// `InstKind::IntToFloat` of the `from` integer `raw`: its magnitude shifted so that its
/// leading one becomes the hidden bit, rounded by the bits shifted out, with the
/// exponent from the position of the leading one.
pub(super) fn int_to_float(
    b: &mut impl Wide,
    raw: Value,
    to: FloatFormat,
    from: OpTy,
    rounding: Rounding,
) -> Value {
    let x = if from.bits() == 64 { raw } else { b.cvt(U64, from, raw) };
    // The sign is tested at the source width: lavapipe (Mesa 22.3) miscompiles a
    // signed compare of a sign-extended value against a constant.
    let negative = from.is_signed().then(|| b.cmp(CmpOp::Lt, from, raw, k(0)));
    let (mag, sign) = match negative {
        Some(negative) => {
            let neg_x = b.sub64(k(0), x);
            (b.sel64(negative, neg_x, x), b.bit(negative))
        }
        None => (x, k(0)),
    };
    // The position of the leading one (any value for 0, whose result is selected).
    let lz = b.clz64(mag);
    let top = b.sub64(k(63), lz);
    let (et, mt) = to.layout();
    let mt_k = k(u64::from(mt));
    // top ≥ m: shift right by top - m and round; else shift left (exact).
    let wide = b.ge64(top, mt_k);
    let rshift = b.sub64(top, mt_k);
    let rshift = b.sel64(wide, rshift, k(0));
    let lshift = b.sub64(mt_k, top);
    let lshift = b.sel64(wide, k(0), lshift);
    let ra = b.amount(rshift);
    let la = b.amount(lshift);
    let q = b.shr64(mag, ra);
    let q = b.shl64(q, la);
    let unit = b.shl64(k(1), ra);
    let rem_mask = b.sub64(unit, k(1));
    let rem = b.and64(mag, rem_mask);
    // half = 2^(rshift - 1), or 1 when nothing is shifted out (rem = 0 < 1).
    let has_rem = b.gt64(rshift, k(0));
    let rs1 = b.sub64(rshift, k(1));
    let rs1 = b.sel64(has_rem, rs1, k(0));
    let rs1 = b.amount(rs1);
    let half = b.shl64(k(1), rs1);
    let (round_bit, rest) = split_remainder(b, rem, half);
    let inc = b.round_increment(rounding, q, round_bit, rest, sign);
    // Biased exponent minus one, placed above the mantissa; q carries the hidden bit.
    let base = b.add64(top, k((to.bias() - 1) as u64));
    let base = b.shl64(base, mt_k);
    let r = b.add64(base, q);
    let r = b.add64(r, inc);
    let r = past_max(b, to, rounding, !to.has_infinity(), sign, r);
    let is_zero = b.eq64(mag, k(0));
    let r = b.sel64(is_zero, k(0), r);
    let sign_bit = b.shl64(sign, k(u64::from(et + mt)));
    let r = b.or64(r, sign_bit);
    if to.bits() == 64 {
        return r;
    }
    b.cvt(OpTy::U(to.bits() as u8), U64, r)
}

/// `InstKind::Widen`: the f32 bit pattern of the exact value of the `from` pattern `x`.
/// Normal numbers move their exponent and mantissa fields; subnormals (normal in f32
/// for every format narrower in range) are normalized by their leading one;
/// infinities and NaNs keep their payload bits.
pub(super) fn widen(b: &mut impl Wide, x: Value, from: FloatFormat) -> Value {
    let x = if from.bits() == 32 { x } else { b.cvt(U32, OpTy::U(from.bits() as u8), x) };
    match from {
        FloatFormat::F32 | FloatFormat::Tf32 => return x,
        FloatFormat::Bf16 => return b.bin(BinaryOp::Shl, U32, x, k(16)),
        _ => {}
    }
    let (et, mt) = from.layout();
    let sign = b.bin(BinaryOp::Shr, U32, x, k(u64::from(et + mt)));
    let sign = b.bin(BinaryOp::Shl, U32, sign, k(31));
    let mag = b.bin(BinaryOp::And, U32, x, k((1u64 << (et + mt)) - 1));
    let exp = b.bin(BinaryOp::Shr, U32, mag, k(u64::from(mt)));
    let frac = b.bin(BinaryOp::And, U32, mag, k((1u64 << mt) - 1));
    let frac23 = b.bin(BinaryOp::Shl, U32, frac, k(u64::from(23 - mt)));
    // Normal: rebias the exponent.
    let exp32 = b.bin(BinaryOp::Add, U32, exp, k((127 - from.bias()) as u64));
    let exp32 = b.bin(BinaryOp::Shl, U32, exp32, k(23));
    let normal = b.bin(BinaryOp::Or, U32, exp32, frac23);
    // Subnormal: frac · 2^(1 - bias - m) with its leading one at p is
    // 2^(p + 1 - bias - m) · 1.f (any value for a zero fraction, selected below).
    let lz = b.un(UnaryOp::Clz, U32, frac);
    let p = b.bin(BinaryOp::Sub, U32, k(31), lz);
    let field = b.bin(BinaryOp::Add, U32, p, k((128 - from.bias() - i64::from(mt)) as u64));
    let field = b.bin(BinaryOp::Shl, U32, field, k(23));
    let up = b.bin(BinaryOp::Sub, U32, k(23), p);
    let moved = b.bin(BinaryOp::Shl, U32, frac, up);
    let moved = b.bin(BinaryOp::And, U32, moved, k((1 << 23) - 1));
    let sub = b.bin(BinaryOp::Or, U32, field, moved);
    let frac_zero = b.cmp(CmpOp::Eq, U32, frac, k(0));
    let sub = b.sel(U32, frac_zero, k(0), sub);
    let is_sub = b.cmp(CmpOp::Eq, U32, exp, k(0));
    let mut r = b.sel(U32, is_sub, sub, normal);
    if from.has_infinity() {
        let special = b.cmp(CmpOp::Eq, U32, exp, k((1u64 << et) - 1));
        let inf_nan = b.bin(BinaryOp::Or, U32, frac23, k(0x7f80_0000));
        r = b.sel(U32, special, inf_nan, r);
    } else if from.has_nan() {
        let is_nan = b.cmp(CmpOp::Eq, U32, mag, k(from.nan()));
        r = b.sel(U32, is_nan, k(0x7fc0_0000), r);
    }
    b.bin(BinaryOp::Or, U32, r, sign)
}
