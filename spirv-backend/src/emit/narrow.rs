//! Narrow floating-point formats as bit patterns (`InstKind::Narrow`, `Widen`,
//! `RoundToOdd`): conversions with exact integer arithmetic, so that `.f16`, `.bf16`,
//! `.tf32` and FP8 work, with every rounding mode, on devices without 16-bit or 8-bit
//! float support and without the device's (round-to-nearest only) float controls.

use rspirv::spirv::Word;

use ptxvk_lower::ir::{BinaryOp, FloatFormat, OddOp, OpTy, Rounding, Value};

use super::helpers::Helper;
use super::{glsl, FnEmitter, R};
use crate::types::Scalar;

const U64: Scalar = Scalar::Int(64);
const U32: Scalar = Scalar::Int(32);

impl FnEmitter<'_> {
    pub(super) fn k64(&mut self, v: u64) -> Word {
        self.konst(U64, v)
    }

    /// The increment (a 64-bit 0 or 1) that rounds a magnitude truncated to `q` by
    /// `rounding` (IEEE 754 §4.3): `round_bit` is whether the first bit shifted out is
    /// set, `rest` whether any bit below it is, `negative` the sign. Every rounding of
    /// this crate decides here: narrow formats, integers to floats, and soft f64.
    pub(super) fn round_increment(
        &mut self,
        rounding: Rounding,
        q: Word,
        round_bit: Word,
        rest: Word,
        negative: Word,
    ) -> R<Word> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let (zero, one) = (self.k64(0), self.k64(1));
        let inexact = self.b.logical_or(bt, None, round_bit, rest)?;
        let inc = match rounding {
            // Up from above the midpoint, and from the midpoint to an even result.
            Rounding::Nearest => {
                let q_low = self.b.bitwise_and(it, None, q, one)?;
                let odd = self.b.i_equal(bt, None, q_low, one)?;
                let above_or_odd = self.b.logical_or(bt, None, rest, odd)?;
                self.b.logical_and(bt, None, round_bit, above_or_odd)?
            }
            Rounding::NearestAway => round_bit,
            Rounding::Zero => self.b.constant_false(bt),
            Rounding::Up => {
                let positive = self.b.logical_not(bt, None, negative)?;
                self.b.logical_and(bt, None, positive, inexact)?
            }
            Rounding::Down => self.b.logical_and(bt, None, negative, inexact)?,
        };
        Ok(self.b.select(it, None, inc, one, zero)?)
    }

    /// What a result past the largest finite value `max` becomes when nothing clamps
    /// it: infinity (`inf`), or `max` when `rounding` goes toward zero for the sign.
    pub(super) fn overflow_value(
        &mut self,
        rounding: Rounding,
        negative: Word,
        max: Word,
        inf: Word,
    ) -> R<Word> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let toward_zero = match rounding {
            Rounding::Zero => self.b.constant_true(bt),
            Rounding::Down => self.b.logical_not(bt, None, negative)?,
            Rounding::Up => negative,
            Rounding::Nearest | Rounding::NearestAway => self.b.constant_false(bt),
        };
        Ok(self.b.select(it, None, toward_zero, max, inf)?)
    }

    /// The round bit and the bits below it of `rem`, the bits shifted out, whose first
    /// bit has the value `half` (at least 1): `rem >= half` and `rem & (half - 1) != 0`.
    fn split_remainder(&mut self, rem: Word, half: Word) -> R<(Word, Word)> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let (zero, one) = (self.k64(0), self.k64(1));
        let round_bit = self.b.u_greater_than_equal(bt, None, rem, half)?;
        let below_mask = self.b.i_sub(it, None, half, one)?;
        let below = self.b.bitwise_and(it, None, rem, below_mask)?;
        let rest = self.b.i_not_equal(bt, None, below, zero)?;
        Ok((round_bit, rest))
    }

    /// `InstKind::Narrow`: rounds the f32/f64 bit pattern `src` to `to`, with the
    /// mantissa shifted right by an amount that includes the subnormal range of the
    /// target, and the rounding increment decided from the bits shifted out. Returns
    /// the integer bit pattern, `to.bits()` wide.
    pub(super) fn narrow(
        &mut self,
        to: FloatFormat,
        from: OpTy,
        rounding: Rounding,
        satfinite: bool,
        relu: bool,
        src: Value,
    ) -> R<Word> {
        let it = self.ty(U64);
        let raw = self.read(src, Scalar::Int(from.bits() as u8))?;
        let x = if from.bits() == 32 { self.b.u_convert(it, None, raw)? } else { raw };
        let from_bits = from.bits() as u8;
        self.call(Helper::Narrow { to, from_bits, rounding, satfinite, relu }, &[x])
    }

    /// [`Self::narrow`] of the bit pattern `x` (an f32 pattern zero-extended, or an f64
    /// pattern, as a 64-bit integer) of a `from_bits`-wide float.
    pub(super) fn narrow_bits(
        &mut self,
        to: FloatFormat,
        from_bits: u32,
        rounding: Rounding,
        satfinite: bool,
        relu: bool,
        x: Word,
    ) -> R<Word> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let (es, ms, bias_s) = if from_bits == 32 { (8u32, 23u32, 127i64) } else { (11, 52, 1023) };
        let (et, mt) = to.layout();

        let sign_shift = self.k64(u64::from(es + ms));
        let sign = self.b.shift_right_logical(it, None, x, sign_shift)?;
        let mag_mask = self.k64((1u64 << (es + ms)) - 1);
        let mag = self.b.bitwise_and(it, None, x, mag_mask)?;
        let inf_s = self.k64(((1u64 << es) - 1) << ms);
        let is_nan = self.b.u_greater_than(bt, None, mag, inf_s)?;
        let is_inf = self.b.i_equal(bt, None, mag, inf_s)?;
        let ms_k = self.k64(u64::from(ms));
        let exp_s = self.b.shift_right_logical(it, None, mag, ms_k)?;
        let frac_mask = self.k64((1u64 << ms) - 1);
        let frac = self.b.bitwise_and(it, None, mag, frac_mask)?;
        let zero = self.k64(0);
        let one = self.k64(1);
        let is_sub = self.b.i_equal(bt, None, exp_s, zero)?;
        let hidden = self.k64(1u64 << ms);
        let with_hidden = self.b.bitwise_or(it, None, frac, hidden)?;
        let sig = self.b.select(it, None, is_sub, frac, with_hidden)?;
        let e = self.b.select(it, None, is_sub, one, exp_s)?;
        // The target's biased exponent (may be ≤ 0 for its subnormals, or huge).
        let rebias = self.k64((to.bias() - bias_s) as u64);
        let te = self.b.i_add(it, None, e, rebias)?;
        // Right shift of the significand: the mantissa difference, plus how far the
        // value lies below the target's normal range.
        let under = self.b.i_sub(it, None, one, te)?;
        let under_pos = self.b.s_greater_than(bt, None, under, zero)?;
        let under = self.b.select(it, None, under_pos, under, zero)?;
        let base_shift = self.k64(u64::from(ms - mt));
        let shift = self.b.i_add(it, None, base_shift, under)?;
        let max_shift = self.k64(63);
        let too_far = self.b.u_greater_than(bt, None, shift, max_shift)?;
        let shift = self.b.select(it, None, too_far, max_shift, shift)?;
        let normal = self.b.s_greater_than(bt, None, te, zero)?;
        let te1 = self.b.i_sub(it, None, te, one)?;
        let base = self.b.select(it, None, normal, te1, zero)?;

        let q = self.b.shift_right_logical(it, None, sig, shift)?;
        let unit = self.b.shift_left_logical(it, None, one, shift)?;
        let rem_mask = self.b.i_sub(it, None, unit, one)?;
        let rem = self.b.bitwise_and(it, None, sig, rem_mask)?;
        let shift1 = self.b.i_sub(it, None, shift, one)?;
        let half = self.b.shift_left_logical(it, None, one, shift1)?;
        let negative = self.b.i_equal(bt, None, sign, one)?;
        let (round_bit, rest) = self.split_remainder(rem, half)?;
        let inc = self.round_increment(rounding, q, round_bit, rest, negative)?;
        let mt_k = self.k64(u64::from(mt));
        let placed = self.b.shift_left_logical(it, None, base, mt_k)?;
        let r = self.b.i_add(it, None, placed, q)?;
        let r = self.b.i_add(it, None, r, inc)?;

        // Past the largest finite value: infinity, or the largest finite value when
        // saturating, when the format has no infinity, or when rounding toward zero.
        let max = to.max_finite();
        let max_k = self.k64(max);
        let inf_k = self.k64(max + 1);
        let overflow = self.b.u_greater_than(bt, None, r, max_k)?;
        let clamps = satfinite || !to.has_infinity();
        let over_value =
            if clamps { max_k } else { self.overflow_value(rounding, negative, max_k, inf_k)? };
        let r = self.b.select(it, None, overflow, over_value, r)?;
        let inf_value = if clamps { max_k } else { inf_k };
        let r = self.b.select(it, None, is_inf, inf_value, r)?;
        let sign_at = self.k64(u64::from(et + mt));
        let sign_bit = self.b.shift_left_logical(it, None, sign, sign_at)?;
        let mut r = self.b.bitwise_or(it, None, r, sign_bit)?;
        if relu {
            r = self.b.select(it, None, negative, zero, r)?;
        }
        let r = if to == FloatFormat::Tf32 {
            // The 19-bit pattern becomes an f32 pattern with 13 zero mantissa bits.
            let k13 = self.k64(13);
            self.b.shift_left_logical(it, None, r, k13)?
        } else {
            r
        };
        let nan = self.k64(if to == FloatFormat::Tf32 { 0x7fff_ffff } else { to.nan() });
        let r = self.b.select(it, None, is_nan, nan, r)?;
        let out_ty = self.ty(Scalar::Int(to.bits() as u8));
        Ok(self.b.u_convert(out_ty, None, r)?)
    }

    /// `InstKind::IntToFloat`: the integer's magnitude shifted so that its leading one
    /// becomes the hidden bit, rounded by the bits shifted out, with the exponent from
    /// the position of the leading one.
    pub(super) fn int_to_float(
        &mut self,
        to: FloatFormat,
        from: OpTy,
        rounding: Rounding,
        src: Value,
    ) -> R<Word> {
        let raw = self.read(src, Scalar::Int(from.bits() as u8))?;
        self.call(Helper::IntToFloat { to, from, rounding }, &[raw])
    }

    /// [`Self::int_to_float`] of the `from`-wide integer `raw`.
    pub(super) fn int_to_float_bits(
        &mut self,
        to: FloatFormat,
        from: OpTy,
        rounding: Rounding,
        raw: Word,
    ) -> R<Word> {
        let it = self.ty(U64);
        let ut = self.ty(U32);
        let bt = self.ty(Scalar::Bool);
        // Sign- or zero-extend to 64 bits, then take the magnitude.
        let x = if from.bits() == 64 {
            raw
        } else if from.is_signed() {
            self.sign_extend(it, raw)?
        } else {
            self.b.u_convert(it, None, raw)?
        };
        let zero = self.k64(0);
        let one = self.k64(1);
        // The sign is tested at the source width: lavapipe (Mesa 22.3) miscompiles a
        // signed compare of a sign-extended value against a constant.
        let negative = if from.is_signed() {
            let narrow_zero = self.konst(Scalar::Int(from.bits() as u8), 0);
            self.b.s_less_than(bt, None, raw, narrow_zero)?
        } else {
            self.b.constant_false(bt)
        };
        let neg_x = self.b.s_negate(it, None, x)?;
        let mag = self.b.select(it, None, negative, neg_x, x)?;
        // Position of the leading one: FindUMsb works on 32 bits.
        let k32 = self.k64(32);
        let hi = self.b.shift_right_logical(it, None, mag, k32)?;
        let hi32 = self.b.u_convert(ut, None, hi)?;
        let lo32 = self.b.u_convert(ut, None, mag)?;
        let msb_hi = self.b.ext_inst(
            ut,
            None,
            self.g.glsl,
            glsl::FIND_UMSB,
            [rspirv::dr::Operand::IdRef(hi32)],
        )?;
        let msb_lo = self.b.ext_inst(
            ut,
            None,
            self.g.glsl,
            glsl::FIND_UMSB,
            [rspirv::dr::Operand::IdRef(lo32)],
        )?;
        let hi_zero = self.b.i_equal(bt, None, hi, zero)?;
        let msb_hi = self.b.u_convert(it, None, msb_hi)?;
        let msb_hi = self.b.i_add(it, None, msb_hi, k32)?;
        let msb_lo = self.b.u_convert(it, None, msb_lo)?;
        let top = self.b.select(it, None, hi_zero, msb_lo, msb_hi)?;
        let (et, mt) = to.layout();
        let mt_k = self.k64(u64::from(mt));
        // top ≥ m: shift right by top - m and round; else shift left (exact).
        let wide = self.b.u_greater_than_equal(bt, None, top, mt_k)?;
        let rshift = self.b.i_sub(it, None, top, mt_k)?;
        let rshift = self.b.select(it, None, wide, rshift, zero)?;
        let lshift = self.b.i_sub(it, None, mt_k, top)?;
        let lshift = self.b.select(it, None, wide, zero, lshift)?;
        let q = self.b.shift_right_logical(it, None, mag, rshift)?;
        let q = self.b.shift_left_logical(it, None, q, lshift)?;
        let unit = self.b.shift_left_logical(it, None, one, rshift)?;
        let rem_mask = self.b.i_sub(it, None, unit, one)?;
        let rem = self.b.bitwise_and(it, None, mag, rem_mask)?;
        // half = 2^(rshift - 1), or 1 when nothing is shifted out (rem = 0 < 1).
        let has_rem = self.b.u_greater_than(bt, None, rshift, zero)?;
        let rs1 = self.b.i_sub(it, None, rshift, one)?;
        let rs1 = self.b.select(it, None, has_rem, rs1, zero)?;
        let half = self.b.shift_left_logical(it, None, one, rs1)?;
        let (round_bit, rest) = self.split_remainder(rem, half)?;
        let inc = self.round_increment(rounding, q, round_bit, rest, negative)?;
        // Biased exponent minus one, placed above the mantissa; q carries the hidden bit.
        let bias_m1 = self.k64((to.bias() - 1) as u64);
        let base = self.b.i_add(it, None, top, bias_m1)?;
        let base = self.b.shift_left_logical(it, None, base, mt_k)?;
        let r = self.b.i_add(it, None, base, q)?;
        let r = self.b.i_add(it, None, r, inc)?;
        let max = to.max_finite();
        let max_k = self.k64(max);
        let inf_k = self.k64(max + 1);
        let overflow = self.b.u_greater_than(bt, None, r, max_k)?;
        let over = self.overflow_value(rounding, negative, max_k, inf_k)?;
        let r = self.b.select(it, None, overflow, over, r)?;
        let is_zero = self.b.i_equal(bt, None, mag, zero)?;
        let r = self.b.select(it, None, is_zero, zero, r)?;
        let sign_at = self.k64(u64::from(et + mt));
        let sign_bit = self.b.shift_left_logical(it, None, one, sign_at)?;
        let sign = self.b.select(it, None, negative, sign_bit, zero)?;
        let r = self.b.bitwise_or(it, None, r, sign)?;
        if to.bits() == 64 {
            return Ok(r);
        }
        let out_ty = self.ty(Scalar::Int(to.bits() as u8));
        Ok(self.b.u_convert(out_ty, None, r)?)
    }

    /// `InstKind::Widen`: the exact f32 of a narrow bit pattern. Normal numbers move
    /// their exponent and mantissa fields; subnormals (normal in f32 for every format
    /// narrower in range than f32) are `mantissa · 2^(1 - bias - m)`, computed in f32
    /// exactly; infinities and NaNs keep their payload bits.
    pub(super) fn widen(&mut self, from: FloatFormat, src: Value) -> R<Word> {
        let ut = self.ty(U32);
        let ft = self.ty(Scalar::Float(32));
        let bt = self.ty(Scalar::Bool);
        let raw = self.read(src, Scalar::Int(from.bits() as u8))?;
        let x = if from.bits() == 32 { raw } else { self.b.u_convert(ut, None, raw)? };
        let k = |e: &mut Self, v: u64| e.konst(U32, v);
        match from {
            FloatFormat::F32 | FloatFormat::Tf32 => return Ok(self.b.bitcast(ft, None, x)?),
            FloatFormat::Bf16 => {
                let s16 = k(self, 16);
                let bits = self.b.shift_left_logical(ut, None, x, s16)?;
                return Ok(self.b.bitcast(ft, None, bits)?);
            }
            _ => {}
        }
        let (et, mt) = from.layout();
        let sign_at = k(self, u64::from(et + mt));
        let sign = self.b.shift_right_logical(ut, None, x, sign_at)?;
        let s31 = k(self, 31);
        let sign = self.b.shift_left_logical(ut, None, sign, s31)?;
        let mag_mask = k(self, (1u64 << (et + mt)) - 1);
        let mag = self.b.bitwise_and(ut, None, x, mag_mask)?;
        let mt_k = k(self, u64::from(mt));
        let exp = self.b.shift_right_logical(ut, None, mag, mt_k)?;
        let frac_mask = k(self, (1u64 << mt) - 1);
        let frac = self.b.bitwise_and(ut, None, mag, frac_mask)?;
        let frac_at = k(self, u64::from(23 - mt));
        let frac23 = self.b.shift_left_logical(ut, None, frac, frac_at)?;
        // Normal: rebias the exponent.
        let rebias = k(self, (127 - from.bias()) as u64);
        let exp32 = self.b.i_add(ut, None, exp, rebias)?;
        let s23 = k(self, 23);
        let exp32 = self.b.shift_left_logical(ut, None, exp32, s23)?;
        let normal = self.b.bitwise_or(ut, None, exp32, frac23)?;
        // Subnormal (and zero): frac · 2^(1 - bias - m), exact in f32.
        let frac_f = self.b.convert_u_to_f(ft, None, frac)?;
        let scale_exp = 1 - from.bias() - i64::from(mt);
        let scale = self.konst(Scalar::Float(32), u64::from(2f32.powi(scale_exp as i32).to_bits()));
        let sub_f = self.float_op(BinaryOp::Mul, ft, frac_f, scale)?;
        let sub = self.b.bitcast(ut, None, sub_f)?;
        let zero = k(self, 0);
        let is_sub = self.b.i_equal(bt, None, exp, zero)?;
        let mut r = self.b.select(ut, None, is_sub, sub, normal)?;
        let exp_ones = k(self, (1u64 << et) - 1);
        if from.has_infinity() {
            let special = self.b.i_equal(bt, None, exp, exp_ones)?;
            let inf = k(self, 0x7f80_0000);
            let inf_nan = self.b.bitwise_or(ut, None, inf, frac23)?;
            r = self.b.select(ut, None, special, inf_nan, r)?;
        } else if from.has_nan() {
            let nan_pattern = k(self, from.nan());
            let is_nan = self.b.i_equal(bt, None, mag, nan_pattern)?;
            let nan = k(self, 0x7fc0_0000);
            r = self.b.select(ut, None, is_nan, nan, r)?;
        }
        let r = self.b.bitwise_or(ut, None, r, sign)?;
        Ok(self.b.bitcast(ft, None, r)?)
    }

    /// `InstKind::RoundToOdd`: products of f32 are exact in f64; sums are rounded to
    /// odd with their exact TwoSum error.
    pub(super) fn round_to_odd(&mut self, op: OddOp, a: Value, b: Value, c: Value) -> R<Word> {
        let f32t = OpTy::F(32);
        let dt = self.ty(Scalar::Float(64));
        let av = self.read_op(a, f32t)?;
        let bv = self.read_op(b, f32t)?;
        let ad = self.b.f_convert(dt, None, av)?;
        let bd = self.b.f_convert(dt, None, bv)?;
        match op {
            OddOp::Mul => self.exact(BinaryOp::Mul, dt, ad, bd),
            OddOp::Add => self.odd_sum(ad, bd),
            OddOp::Sub => {
                let nb = self.b.f_negate(dt, None, bd)?;
                self.odd_sum(ad, nb)
            }
            OddOp::Fma => {
                let cv = self.read_op(c, f32t)?;
                let cd = self.b.f_convert(dt, None, cv)?;
                let p = self.exact(BinaryOp::Mul, dt, ad, bd)?;
                self.odd_sum(p, cd)
            }
        }
    }
}
