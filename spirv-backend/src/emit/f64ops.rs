//! f64 arithmetic for `sin.approx` and `cos.approx` (`approx.rs`), in one of two forms chosen
//! by [`FnEmitter::soft_f64`]:
//!
//! * **native**: f64 SPIR-V values and operations; addition, subtraction,
//!   multiplication and division are correctly rounded on every Vulkan device that has
//!   `shaderFloat64` (`NoContraction` keeps them apart);
//! * **soft**: f64 *bit patterns* in 64-bit integers, for devices without f64. Each
//!   operation calls the exact integer routines of `softf64.rs` (`a + b` is
//!   `fma(a, 1, b)`, `a - b` is `fma(b, -1, a)`, `a · b` is `fma(a, b, -0)`, all to
//!   nearest), so the results are the same bits as the native form's; comparisons,
//!   `floor` and conversions are integer code on the bit patterns.
//!
//! The soft form is slow (a few hundred instructions per operation) but needs nothing
//! of the device beyond `shaderInt64`.

use rspirv::dr::Operand;
use rspirv::spirv::Word;

use ptxvk_lower::ir::{BinaryOp, Rounding, Routine};

use super::helpers::Helper;
use super::{glsl, FnEmitter, R};
use crate::types::Scalar;

const F64: Scalar = Scalar::Float(64);
const I64: Scalar = Scalar::Int(64);
const SIGN: u64 = 1 << 63;
const EXP_ONES: u64 = 0x7ff0_0000_0000_0000;

impl FnEmitter<'_> {
    /// The type of f64 values: f64, or the 64-bit integer of the bit patterns.
    pub(super) fn f64_ty(&mut self) -> Word {
        self.ty(if self.soft_f64 { I64 } else { F64 })
    }

    /// The f64 constant `v`.
    pub(super) fn kf(&mut self, v: f64) -> Word {
        self.konst(if self.soft_f64 { I64 } else { F64 }, v.to_bits())
    }

    fn soft_fma(&mut self, a: Word, b: Word, c: Word) -> R<Word> {
        self.call(Helper::Routine(Routine::FmaF64(Rounding::Nearest)), &[a, b, c])
    }

    fn native(&mut self, op: BinaryOp, a: Word, b: Word) -> R<Word> {
        let dt = self.ty(F64);
        self.exact(op, dt, a, b)
    }

    pub(super) fn fadd(&mut self, a: Word, b: Word) -> R<Word> {
        if self.soft_f64 {
            let one = self.kf(1.0);
            self.soft_fma(a, one, b)
        } else {
            self.native(BinaryOp::Add, a, b)
        }
    }

    pub(super) fn fsub(&mut self, a: Word, b: Word) -> R<Word> {
        if self.soft_f64 {
            let minus_one = self.kf(-1.0);
            self.soft_fma(b, minus_one, a)
        } else {
            self.native(BinaryOp::Sub, a, b)
        }
    }

    pub(super) fn fmul(&mut self, a: Word, b: Word) -> R<Word> {
        if self.soft_f64 {
            // x·y + (-0) is x·y to nearest, zeros included.
            let minus_zero = self.kf(-0.0);
            self.soft_fma(a, b, minus_zero)
        } else {
            self.native(BinaryOp::Mul, a, b)
        }
    }

    pub(super) fn fabs(&mut self, a: Word) -> R<Word> {
        if self.soft_f64 {
            let it = self.ty(I64);
            let mask = self.konst(I64, !SIGN);
            Ok(self.b.bitwise_and(it, None, a, mask)?)
        } else {
            let dt = self.ty(F64);
            self.glsl1(dt, glsl::FABS, a)
        }
    }

    pub(super) fn fneg(&mut self, a: Word) -> R<Word> {
        if self.soft_f64 {
            let it = self.ty(I64);
            let sign = self.konst(I64, SIGN);
            Ok(self.b.bitwise_xor(it, None, a, sign)?)
        } else {
            let dt = self.ty(F64);
            Ok(self.b.f_negate(dt, None, a)?)
        }
    }

    /// `cond ? a : b` on f64 values.
    pub(super) fn sel64(&mut self, cond: Word, a: Word, b: Word) -> R<Word> {
        let t = self.f64_ty();
        Ok(self.b.select(t, None, cond, a, b)?)
    }

    pub(super) fn fisnan(&mut self, a: Word) -> R<Word> {
        let bt = self.ty(Scalar::Bool);
        if self.soft_f64 {
            let mag = self.fabs(a)?;
            let inf = self.konst(I64, EXP_ONES);
            Ok(self.b.u_greater_than(bt, None, mag, inf)?)
        } else {
            Ok(self.b.is_nan(bt, None, a)?)
        }
    }

    /// A bit pattern's position in the order of f64 values (for non-NaN values, with
    /// -0 just below +0): negative patterns inverted, positive ones above them.
    fn order_key(&mut self, a: Word) -> R<Word> {
        let (it, bt) = (self.ty(I64), self.ty(Scalar::Bool));
        let sign = self.konst(I64, SIGN);
        let neg_bit = self.b.bitwise_and(it, None, a, sign)?;
        let zero = self.konst(I64, 0);
        let negative = self.b.i_not_equal(bt, None, neg_bit, zero)?;
        let inverted = self.b.not(it, None, a)?;
        let raised = self.b.bitwise_or(it, None, a, sign)?;
        Ok(self.b.select(it, None, negative, inverted, raised)?)
    }

    /// Whether neither is NaN and they are not both zeros (±0 compare equal).
    fn ordered_nonzero_pair(&mut self, a: Word, b: Word) -> R<Word> {
        let (it, bt) = (self.ty(I64), self.ty(Scalar::Bool));
        let na = self.fisnan(a)?;
        let nb = self.fisnan(b)?;
        let either = self.b.logical_or(bt, None, na, nb)?;
        let ordered = self.b.logical_not(bt, None, either)?;
        let both = self.b.bitwise_or(it, None, a, b)?;
        let mag = self.konst(I64, !SIGN);
        let both = self.b.bitwise_and(it, None, both, mag)?;
        let zero = self.konst(I64, 0);
        let not_zeros = self.b.i_not_equal(bt, None, both, zero)?;
        Ok(self.b.logical_and(bt, None, ordered, not_zeros)?)
    }

    /// `a < b` (false when either is NaN).
    pub(super) fn flt(&mut self, a: Word, b: Word) -> R<Word> {
        let bt = self.ty(Scalar::Bool);
        if !self.soft_f64 {
            return Ok(self.b.f_ord_less_than(bt, None, a, b)?);
        }
        let ok = self.ordered_nonzero_pair(a, b)?;
        let (ka, kb) = (self.order_key(a)?, self.order_key(b)?);
        let less = self.b.u_less_than(bt, None, ka, kb)?;
        Ok(self.b.logical_and(bt, None, ok, less)?)
    }

    /// `a == b` (false when either is NaN; ±0 are equal).
    pub(super) fn feq(&mut self, a: Word, b: Word) -> R<Word> {
        let bt = self.ty(Scalar::Bool);
        if !self.soft_f64 {
            return Ok(self.b.f_ord_equal(bt, None, a, b)?);
        }
        let it = self.ty(I64);
        let na = self.fisnan(a)?;
        let not_nan = self.b.logical_not(bt, None, na)?;
        let same = self.b.i_equal(bt, None, a, b)?;
        let same = self.b.logical_and(bt, None, same, not_nan)?;
        let both = self.b.bitwise_or(it, None, a, b)?;
        let mag = self.konst(I64, !SIGN);
        let both = self.b.bitwise_and(it, None, both, mag)?;
        let zero = self.konst(I64, 0);
        let zeros = self.b.i_equal(bt, None, both, zero)?;
        Ok(self.b.logical_or(bt, None, same, zeros)?)
    }

    /// `floor(a)`. Soft: an integral magnitude (or NaN, ±inf, |a| ≥ 2^52) stays; else
    /// the fraction bits are cleared, and a negative value with a fraction moves one
    /// unit away from zero (adding the unit to the magnitude carries into the
    /// exponent as it must); |a| < 1 gives ±0 or -1.
    pub(super) fn floor64(&mut self, a: Word) -> R<Word> {
        if !self.soft_f64 {
            let dt = self.ty(F64);
            return Ok(self.b.ext_inst(dt, None, self.g.glsl, glsl::FLOOR, [Operand::IdRef(a)])?);
        }
        let (it, bt) = (self.ty(I64), self.ty(Scalar::Bool));
        let k = |e: &mut Self, v: u64| e.konst(I64, v);
        let (k52, zero, one) = (k(self, 52), k(self, 0), k(self, 1));
        let sign = k(self, SIGN);
        let neg_bit = self.b.bitwise_and(it, None, a, sign)?;
        let negative = self.b.i_not_equal(bt, None, neg_bit, zero)?;
        let mag = self.fabs(a)?;
        let ef = self.b.shift_right_logical(it, None, mag, k52)?;
        // Fraction bits of a value with biased exponent ef in [1023, 1074]: 1075 - ef.
        let k1075 = k(self, 1075);
        let frac_bits = self.b.i_sub(it, None, k1075, ef)?;
        let k63 = k(self, 63);
        let frac_bits = self.b.bitwise_and(it, None, frac_bits, k63)?;
        let unit = self.b.shift_left_logical(it, None, one, frac_bits)?;
        let mask = self.b.i_sub(it, None, unit, one)?;
        let fraction = self.b.bitwise_and(it, None, a, mask)?;
        let has_fraction = self.b.i_not_equal(bt, None, fraction, zero)?;
        let not_mask = self.b.not(it, None, mask)?;
        let trunc = self.b.bitwise_and(it, None, a, not_mask)?;
        let away = self.b.i_add(it, None, trunc, unit)?;
        let step = self.b.logical_and(bt, None, negative, has_fraction)?;
        let mid = self.b.select(it, None, step, away, trunc)?;
        // |a| < 1: +0 for a ≥ 0 (the sign of a zero kept), -1 for a < 0 but -0.
        let k1023 = k(self, 1023);
        let below_one = self.b.u_less_than(bt, None, ef, k1023)?;
        let mag_zero = self.b.i_equal(bt, None, mag, zero)?;
        let nonzero = self.b.logical_not(bt, None, mag_zero)?;
        let neg_nonzero = self.b.logical_and(bt, None, negative, nonzero)?;
        let minus_one = k(self, (-1.0f64).to_bits());
        let small = self.b.select(it, None, neg_nonzero, minus_one, neg_bit)?;
        let r = self.b.select(it, None, below_one, small, mid)?;
        // |a| ≥ 2^52 (integral), ±inf and NaN stay.
        let integral = self.b.u_greater_than_equal(bt, None, ef, k1075)?;
        Ok(self.b.select(it, None, integral, a, r)?)
    }

    /// The f64 of an f32 value (exact).
    pub(super) fn f64_from_f32(&mut self, x: Word) -> R<Word> {
        if self.soft_f64 {
            let ut = self.ty(Scalar::Int(32));
            let bits = self.b.bitcast(ut, None, x)?;
            self.f32_bits_to_f64_bits(bits)
        } else {
            let dt = self.ty(F64);
            Ok(self.b.f_convert(dt, None, x)?)
        }
    }

    /// The bit pattern of an f64 value, as a 64-bit integer.
    pub(super) fn f64_bits(&mut self, v: Word) -> R<Word> {
        if self.soft_f64 {
            Ok(v)
        } else {
            let it = self.ty(I64);
            Ok(self.b.bitcast(it, None, v)?)
        }
    }

    /// The 64-bit integer of an integral f64 `v` with |v| < 2^52 (0 for ±0).
    pub(super) fn f64_to_i64(&mut self, v: Word) -> R<Word> {
        let it = self.ty(I64);
        if !self.soft_f64 {
            return Ok(self.b.convert_f_to_s(it, None, v)?);
        }
        let bt = self.ty(Scalar::Bool);
        let k = |e: &mut Self, x: u64| e.konst(I64, x);
        let (k52, zero) = (k(self, 52), k(self, 0));
        let mag = self.fabs(v)?;
        let ef = self.b.shift_right_logical(it, None, mag, k52)?;
        let frac_mask = k(self, (1 << 52) - 1);
        let frac = self.b.bitwise_and(it, None, mag, frac_mask)?;
        let hidden = k(self, 1 << 52);
        let sig = self.b.bitwise_or(it, None, frac, hidden)?;
        // value = sig >> (1075 - ef) for ef in [1023, 1075].
        let k1075 = k(self, 1075);
        let shift = self.b.i_sub(it, None, k1075, ef)?;
        let k63 = k(self, 63);
        let shift = self.b.bitwise_and(it, None, shift, k63)?;
        let n = self.b.shift_right_logical(it, None, sig, shift)?;
        let k1023 = k(self, 1023);
        let below_one = self.b.u_less_than(bt, None, ef, k1023)?;
        let n = self.b.select(it, None, below_one, zero, n)?;
        let neg = self.b.s_negate(it, None, n)?;
        let sign = k(self, SIGN);
        let neg_bit = self.b.bitwise_and(it, None, v, sign)?;
        let negative = self.b.i_not_equal(bt, None, neg_bit, zero)?;
        Ok(self.b.select(it, None, negative, neg, n)?)
    }
}
