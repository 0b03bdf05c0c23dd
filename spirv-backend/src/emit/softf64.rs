//! Exact f64 fused multiply-add in every rounding mode, with integer arithmetic
//! (`InstKind::Fma` on `.f64`): Vulkan does not require `Fma` to be fused, nor any
//! rounding mode but round-to-nearest, so the product of the significands is formed
//! exactly in 128 bits (from 32-bit limbs), the addend is aligned to it with a sticky
//! bit, and the sum is rounded once (PTX ISA 9.2 §9.7.3.6; IEEE 754 §5.4.1).
//!
//! 128-bit values are `(hi, lo)` pairs of 64-bit integers. SPIR-V leaves shifts by the
//! full width undefined, so every variable shift below is clamped and selected.

use rspirv::dr::Operand;
use rspirv::spirv::Word;

use ptxvk_lower::ir::{FloatFormat, OddOp, Rounding, Value};

use super::helpers::{Helper, SoftOp};
use super::{glsl, FnEmitter, R};
use crate::types::Scalar;

const U64: Scalar = Scalar::Int(64);
const U32: Scalar = Scalar::Int(32);

impl FnEmitter<'_> {
    fn sel(&mut self, c: Word, a: Word, b: Word) -> R<Word> {
        let it = self.ty(U64);
        Ok(self.b.select(it, None, c, a, b)?)
    }

    /// min(x, limit) for unsigned 64-bit x.
    fn umin(&mut self, x: Word, limit: u64) -> R<Word> {
        let bt = self.ty(Scalar::Bool);
        let k = self.k64(limit);
        let over = self.b.u_greater_than(bt, None, x, k)?;
        self.sel(over, k, x)
    }

    /// Leading zeros of a 64-bit value (64 for 0).
    fn clz64(&mut self, x: Word) -> R<Word> {
        let it = self.ty(U64);
        let ut = self.ty(U32);
        let bt = self.ty(Scalar::Bool);
        let k32 = self.k64(32);
        let hi = self.b.shift_right_logical(it, None, x, k32)?;
        let hi32 = self.b.u_convert(ut, None, hi)?;
        let lo32 = self.b.u_convert(ut, None, x)?;
        let msb = |e: &mut Self, v: Word| -> R<Word> {
            Ok(e.b.ext_inst(ut, None, e.g.glsl, glsl::FIND_UMSB, [Operand::IdRef(v)])?)
        };
        // FindUMsb(0) = -1, so 31 - msb is 32 for a zero half (modulo 2^32).
        let k31 = self.konst(U32, 31);
        let mh = msb(self, hi32)?;
        let ml = msb(self, lo32)?;
        let zh = self.b.i_sub(ut, None, k31, mh)?;
        let zl = self.b.i_sub(ut, None, k31, ml)?;
        let zh = self.b.u_convert(it, None, zh)?;
        let zl = self.b.u_convert(it, None, zl)?;
        let zl = self.b.i_add(it, None, zl, k32)?;
        let zero = self.k64(0);
        let hi_zero = self.b.i_equal(bt, None, hi, zero)?;
        self.sel(hi_zero, zl, zh)
    }

    fn clz128(&mut self, h: Word, l: Word) -> R<Word> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let zh = self.clz64(h)?;
        let zl = self.clz64(l)?;
        let k64 = self.k64(64);
        let zl = self.b.i_add(it, None, zl, k64)?;
        let zero = self.k64(0);
        let h_zero = self.b.i_equal(bt, None, h, zero)?;
        self.sel(h_zero, zl, zh)
    }

    /// `(h, l) << n` for n in [0, 127].
    fn shl128(&mut self, h: Word, l: Word, n: Word) -> R<(Word, Word)> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let k64 = self.k64(64);
        let zero = self.k64(0);
        let small = self.b.u_less_than(bt, None, n, k64)?;
        let na = self.umin(n, 63)?;
        let inv = self.b.i_sub(it, None, k64, na)?;
        let inv = self.umin(inv, 63)?;
        let h1 = self.b.shift_left_logical(it, None, h, na)?;
        let carry = self.b.shift_right_logical(it, None, l, inv)?;
        let n_zero = self.b.i_equal(bt, None, n, zero)?;
        let carry = self.sel(n_zero, zero, carry)?;
        let h_a = self.b.bitwise_or(it, None, h1, carry)?;
        let l_a = self.b.shift_left_logical(it, None, l, na)?;
        let nb = self.b.i_sub(it, None, n, k64)?;
        let nb = self.umin(nb, 63)?;
        let h_b = self.b.shift_left_logical(it, None, l, nb)?;
        Ok((self.sel(small, h_a, h_b)?, self.sel(small, l_a, zero)?))
    }

    /// `(h, l) >> n` for any n, and whether any bit shifted out was set.
    fn shr128_sticky(&mut self, h: Word, l: Word, n: Word) -> R<(Word, Word, Word)> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let k64 = self.k64(64);
        let k128 = self.k64(128);
        let zero = self.k64(0);
        let one = self.k64(1);
        // n < 64.
        let na = self.umin(n, 63)?;
        let inv = self.b.i_sub(it, None, k64, na)?;
        let inv = self.umin(inv, 63)?;
        let l1 = self.b.shift_right_logical(it, None, l, na)?;
        let carry = self.b.shift_left_logical(it, None, h, inv)?;
        let n_zero = self.b.i_equal(bt, None, n, zero)?;
        let carry = self.sel(n_zero, zero, carry)?;
        let l_a = self.b.bitwise_or(it, None, l1, carry)?;
        let h_a = self.b.shift_right_logical(it, None, h, na)?;
        let unit = self.b.shift_left_logical(it, None, one, na)?;
        let mask_a = self.b.i_sub(it, None, unit, one)?;
        let lost_a = self.b.bitwise_and(it, None, l, mask_a)?;
        // 64 <= n < 128.
        let nb = self.b.i_sub(it, None, n, k64)?;
        let nb = self.umin(nb, 63)?;
        let l_b = self.b.shift_right_logical(it, None, h, nb)?;
        let unit_b = self.b.shift_left_logical(it, None, one, nb)?;
        let mask_b = self.b.i_sub(it, None, unit_b, one)?;
        let hl = self.b.bitwise_and(it, None, h, mask_b)?;
        let lost_b = self.b.bitwise_or(it, None, l, hl)?;
        // n >= 128: everything is lost.
        let lost_c = self.b.bitwise_or(it, None, h, l)?;
        let lt64 = self.b.u_less_than(bt, None, n, k64)?;
        let lt128 = self.b.u_less_than(bt, None, n, k128)?;
        let l_bc = self.sel(lt128, l_b, zero)?;
        let lost_bc = self.sel(lt128, lost_b, lost_c)?;
        let hr = self.sel(lt64, h_a, zero)?;
        let lr = self.sel(lt64, l_a, l_bc)?;
        let lost = self.sel(lt64, lost_a, lost_bc)?;
        let sticky = self.b.i_not_equal(bt, None, lost, zero)?;
        Ok((hr, lr, sticky))
    }

    /// The 106-bit product of two significands below 2^53, from 32-bit limbs.
    fn mul53(&mut self, a: Word, b: Word) -> R<(Word, Word)> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let k32 = self.k64(32);
        let m32 = self.k64(0xffff_ffff);
        let ah = self.b.shift_right_logical(it, None, a, k32)?;
        let al = self.b.bitwise_and(it, None, a, m32)?;
        let bh = self.b.shift_right_logical(it, None, b, k32)?;
        let bl = self.b.bitwise_and(it, None, b, m32)?;
        let ll = self.b.i_mul(it, None, al, bl)?;
        let lh = self.b.i_mul(it, None, al, bh)?;
        let hl = self.b.i_mul(it, None, ah, bl)?;
        let hh = self.b.i_mul(it, None, ah, bh)?;
        let mid = self.b.i_add(it, None, lh, hl)?;
        let mid_lo = self.b.shift_left_logical(it, None, mid, k32)?;
        let lo = self.b.i_add(it, None, ll, mid_lo)?;
        let carry = self.b.u_less_than(bt, None, lo, ll)?;
        let one = self.k64(1);
        let zero = self.k64(0);
        let carry = self.sel(carry, one, zero)?;
        let mid_hi = self.b.shift_right_logical(it, None, mid, k32)?;
        let hi = self.b.i_add(it, None, hh, mid_hi)?;
        let hi = self.b.i_add(it, None, hi, carry)?;
        Ok((hi, lo))
    }

    /// Rounds `(xh, xl) · 2^exp` (nonzero, or zero with only the sticky bit) plus a
    /// sticky fraction below its last bit to an f64 of sign `sign` (0 or 1) by
    /// `rounding`: normalized to bit 127, rounded at 53 bits (or fewer, for subnormal
    /// results), overflowing to infinity or the largest finite value. With `odd` (and
    /// `rounding` toward zero) it rounds to odd: truncated, the last bit set when
    /// anything was cut off (Boldo & Melquiond 2008).
    #[allow(clippy::too_many_arguments)]
    fn round_to_f64(
        &mut self,
        xh: Word,
        xl: Word,
        exp: Word,
        sticky: Word,
        sign: Word,
        rounding: Rounding,
        odd: bool,
    ) -> R<Word> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let zero = self.k64(0);
        let one = self.k64(1);
        let inf = self.k64(0x7ff0_0000_0000_0000);
        let k52 = self.k64(52);
        let k63 = self.k64(63);
        let lz = self.clz128(xh, xl)?;
        let lz = self.umin(lz, 127)?;
        let (xh, xl) = self.shl128(xh, xl, lz)?;
        let exp = self.b.i_sub(it, None, exp, lz)?;
        // Biased exponent of the leading bit: exp + 127 + 1023.
        let k1150 = self.k64(1150);
        let biased = self.b.i_add(it, None, exp, k1150)?;
        let under = self.b.i_sub(it, None, one, biased)?;
        let under_pos = self.b.s_greater_than(bt, None, under, zero)?;
        let under = self.sel(under_pos, under, zero)?;
        let k75 = self.k64(75);
        let t = self.b.i_add(it, None, k75, under)?;
        let (_, q, _) = self.shr128_sticky(xh, xl, t)?;
        // The rounding bit is bit t-1; the rest below it and the earlier sticky bit.
        let t1 = self.b.i_sub(it, None, t, one)?;
        let (_, rl, below) = self.shr128_sticky(xh, xl, t1)?;
        let round_bit = self.b.bitwise_and(it, None, rl, one)?;
        let round_bit = self.b.i_equal(bt, None, round_bit, one)?;
        let rest = self.b.logical_or(bt, None, below, sticky)?;
        let negative = self.b.i_equal(bt, None, sign, one)?;
        let inc = self.round_increment(rounding, q, round_bit, rest, negative)?;
        let normal = self.b.s_greater_than(bt, None, biased, zero)?;
        let b1 = self.b.i_sub(it, None, biased, one)?;
        let field = self.sel(normal, b1, zero)?;
        let field = self.b.shift_left_logical(it, None, field, k52)?;
        let r = self.b.i_add(it, None, field, q)?;
        let r = self.b.i_add(it, None, r, inc)?;
        let r = if odd {
            let inexact = self.b.logical_or(bt, None, round_bit, rest)?;
            let low = self.sel(inexact, one, zero)?;
            self.b.bitwise_or(it, None, r, low)?
        } else {
            r
        };
        // Overflow: infinity, or the largest finite value when rounding toward zero.
        let max = self.k64(0x7fef_ffff_ffff_ffff);
        let huge = self.b.u_greater_than(bt, None, r, max)?;
        let over = self.overflow_value(rounding, negative, max, inf)?;
        let r = self.sel(huge, over, r)?;
        let sign_bit = self.b.shift_left_logical(it, None, sign, k63)?;
        let r = self.b.bitwise_or(it, None, r, sign_bit)?;

        Ok(r)
    }

    /// `a * b + c` on f64 bit patterns (64-bit integers), rounded once by `rounding`
    /// (to odd with `odd`, see [`Self::round_to_f64`]).
    pub(super) fn soft_fma_f64(
        &mut self,
        a: Word,
        b: Word,
        c: Word,
        rounding: Rounding,
        odd: bool,
    ) -> R<Word> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let zero = self.k64(0);
        let one = self.k64(1);
        let abs_mask = self.k64(!(1u64 << 63));
        let inf = self.k64(0x7ff0_0000_0000_0000);
        let k52 = self.k64(52);
        let k63 = self.k64(63);
        let frac_mask = self.k64((1 << 52) - 1);
        let hidden = self.k64(1 << 52);

        // Fields: sign, magnitude, significand (with the hidden bit when normal) and the
        // unbiased exponent of the significand's last bit (max(e, 1) - 1075).
        struct Parts {
            sign: Word,
            mag: Word,
            sig: Word,
            exp: Word,
        }
        let parts = |e: &mut Self, x: Word| -> R<Parts> {
            let sign = e.b.shift_right_logical(it, None, x, k63)?;
            let mag = e.b.bitwise_and(it, None, x, abs_mask)?;
            let ef = e.b.shift_right_logical(it, None, mag, k52)?;
            let frac = e.b.bitwise_and(it, None, mag, frac_mask)?;
            let is_sub = e.b.i_equal(bt, None, ef, zero)?;
            let with_hidden = e.b.bitwise_or(it, None, frac, hidden)?;
            let sig = e.sel(is_sub, frac, with_hidden)?;
            let ef = e.sel(is_sub, one, ef)?;
            let bias = e.k64(1075);
            let exp = e.b.i_sub(it, None, ef, bias)?;
            Ok(Parts { sign, mag, sig, exp })
        };
        let pa = parts(self, a)?;
        let pb = parts(self, b)?;
        let pc = parts(self, c)?;
        let sign_p = self.b.bitwise_xor(it, None, pa.sign, pb.sign)?;

        // Special operands.
        let nan_of = |e: &mut Self, p: &Parts| e.b.u_greater_than(bt, None, p.mag, inf);
        let inf_of = |e: &mut Self, p: &Parts| e.b.i_equal(bt, None, p.mag, inf);
        let zero_of = |e: &mut Self, p: &Parts| e.b.i_equal(bt, None, p.mag, zero);
        let (a_nan, b_nan, c_nan) = (nan_of(self, &pa)?, nan_of(self, &pb)?, nan_of(self, &pc)?);
        let (a_inf, b_inf, c_inf) = (inf_of(self, &pa)?, inf_of(self, &pb)?, inf_of(self, &pc)?);
        let (a_zero, b_zero, c_zero) =
            (zero_of(self, &pa)?, zero_of(self, &pb)?, zero_of(self, &pc)?);
        let any_nan = self.b.logical_or(bt, None, a_nan, b_nan)?;
        let any_nan = self.b.logical_or(bt, None, any_nan, c_nan)?;
        let inf_zero1 = self.b.logical_and(bt, None, a_inf, b_zero)?;
        let inf_zero2 = self.b.logical_and(bt, None, a_zero, b_inf)?;
        let p_inf = self.b.logical_or(bt, None, a_inf, b_inf)?;
        let signs_differ = self.b.i_not_equal(bt, None, sign_p, pc.sign)?;
        let inf_minus_inf = self.b.logical_and(bt, None, p_inf, c_inf)?;
        let inf_minus_inf = self.b.logical_and(bt, None, inf_minus_inf, signs_differ)?;
        let nan = self.b.logical_or(bt, None, any_nan, inf_zero1)?;
        let nan = self.b.logical_or(bt, None, nan, inf_zero2)?;
        let nan = self.b.logical_or(bt, None, nan, inf_minus_inf)?;
        let p_zero = self.b.logical_or(bt, None, a_zero, b_zero)?;

        // The exact product, normalized to bit 127, then both operands at bit 125.
        let (ph, pl) = self.mul53(pa.sig, pb.sig)?;
        let exp_p = self.b.i_add(it, None, pa.exp, pb.exp)?;
        let lz_p = self.clz128(ph, pl)?;
        let lz_p = self.umin(lz_p, 127)?;
        let (ph, pl) = self.shl128(ph, pl, lz_p)?;
        let exp_p = self.b.i_sub(it, None, exp_p, lz_p)?;
        let lz_c = self.clz64(pc.sig)?;
        let lz_c = self.umin(lz_c, 63)?;
        let ch = self.b.shift_left_logical(it, None, pc.sig, lz_c)?;
        let cl = zero;
        let k64 = self.k64(64);
        let exp_c = self.b.i_sub(it, None, pc.exp, k64)?;
        let exp_c = self.b.i_sub(it, None, exp_c, lz_c)?;
        // Two bits of headroom: the low bits are zero (at most 106 significant bits).
        let two = self.k64(2);
        let (ph, pl, _) = self.shr128_sticky(ph, pl, two)?;
        let (ch, cl, _) = self.shr128_sticky(ch, cl, two)?;
        let exp_p = self.b.i_add(it, None, exp_p, two)?;
        let exp_c = self.b.i_add(it, None, exp_c, two)?;
        // A zero addend (or product) contributes nothing: give it the lowest exponent.
        let very_low = self.k64((-100_000i64) as u64);
        let exp_c = self.sel(c_zero, very_low, exp_c)?;
        let exp_p = self.sel(p_zero, very_low, exp_p)?;
        let ch = self.sel(c_zero, zero, ch)?;
        let ph = self.sel(p_zero, zero, ph)?;
        let pl = self.sel(p_zero, zero, pl)?;

        // The larger magnitude is `big`.
        let p_exp_gt = self.b.s_greater_than(bt, None, exp_p, exp_c)?;
        let exp_eq = self.b.i_equal(bt, None, exp_p, exp_c)?;
        let h_gt = self.b.u_greater_than(bt, None, ph, ch)?;
        let h_eq = self.b.i_equal(bt, None, ph, ch)?;
        let l_ge = self.b.u_greater_than_equal(bt, None, pl, cl)?;
        let x_ge = self.b.logical_and(bt, None, h_eq, l_ge)?;
        let x_ge = self.b.logical_or(bt, None, h_gt, x_ge)?;
        let p_ge = self.b.logical_and(bt, None, exp_eq, x_ge)?;
        let p_big = self.b.logical_or(bt, None, p_exp_gt, p_ge)?;
        let (bh, bl) = (self.sel(p_big, ph, ch)?, self.sel(p_big, pl, cl)?);
        let (sh, sl) = (self.sel(p_big, ch, ph)?, self.sel(p_big, cl, pl)?);
        let exp_big = self.sel(p_big, exp_p, exp_c)?;
        let exp_small = self.sel(p_big, exp_c, exp_p)?;
        let sign_big = self.sel(p_big, sign_p, pc.sign)?;
        let d = self.b.i_sub(it, None, exp_big, exp_small)?;
        let (sh, sl, sticky) = self.shr128_sticky(sh, sl, d)?;

        // Sum or difference; a sticky remainder of the small operand is a fraction of a
        // unit: subtracting it borrows one unit and keeps the sticky bit.
        let lo_sum = self.b.i_add(it, None, bl, sl)?;
        let carry = self.b.u_less_than(bt, None, lo_sum, bl)?;
        let carry = self.sel(carry, one, zero)?;
        let hi_sum = self.b.i_add(it, None, bh, sh)?;
        let hi_sum = self.b.i_add(it, None, hi_sum, carry)?;
        let borrow_in = self.sel(sticky, one, zero)?;
        let sl_b = self.b.i_add(it, None, sl, borrow_in)?;
        let wrap = self.b.u_less_than(bt, None, sl_b, sl)?;
        let wrap = self.sel(wrap, one, zero)?;
        let sh_b = self.b.i_add(it, None, sh, wrap)?;
        let lo_diff = self.b.i_sub(it, None, bl, sl_b)?;
        let borrow = self.b.u_less_than(bt, None, bl, sl_b)?;
        let borrow = self.sel(borrow, one, zero)?;
        let hi_diff = self.b.i_sub(it, None, bh, sh_b)?;
        let hi_diff = self.b.i_sub(it, None, hi_diff, borrow)?;
        let (xh, xl) =
            (self.sel(signs_differ, hi_diff, hi_sum)?, self.sel(signs_differ, lo_diff, lo_sum)?);
        let sign = sign_big;

        let is_zero_h = self.b.i_equal(bt, None, xh, zero)?;
        let is_zero_l = self.b.i_equal(bt, None, xl, zero)?;
        let exact_zero = self.b.logical_and(bt, None, is_zero_h, is_zero_l)?;
        let not_sticky = self.b.logical_not(bt, None, sticky)?;
        let exact_zero = self.b.logical_and(bt, None, exact_zero, not_sticky)?;
        let r = self.round_to_f64(xh, xl, exp_big, sticky, sign, rounding, odd)?;

        // An exact zero: the sign of the addends when they agree, else +0 (-0 when
        // rounding down) (IEEE 754 §6.3).
        let p_neg = self.b.i_equal(bt, None, sign_p, one)?;
        let differ_neg = if rounding == Rounding::Down {
            self.b.constant_true(bt)
        } else {
            self.b.constant_false(bt)
        };
        let zero_neg = self.b.select(bt, None, signs_differ, differ_neg, p_neg)?;
        let neg_zero = self.k64(1 << 63);
        let signed_zero = self.sel(zero_neg, neg_zero, zero)?;
        let r = self.sel(exact_zero, signed_zero, r)?;

        // A zero product leaves the addend (rounding cannot change a representable
        // value); zero sums were handled above.
        let c_nonzero = self.b.logical_not(bt, None, c_zero)?;
        let keep_c = self.b.logical_and(bt, None, p_zero, c_nonzero)?;
        let r = self.sel(keep_c, c, r)?;
        // Infinities and NaN.
        let p_sign_bit = self.b.shift_left_logical(it, None, sign_p, k63)?;
        let p_inf_bits = self.b.bitwise_or(it, None, p_sign_bit, inf)?;
        let r = self.sel(c_inf, c, r)?;
        let r = self.sel(p_inf, p_inf_bits, r)?;
        let qnan = self.k64(0x7ff8_0000_0000_0000);
        self.sel(nan, qnan, r)
    }
}

impl FnEmitter<'_> {
    /// Normalizes a nonzero significand below 2^53 so that its leading bit is bit 52;
    /// returns it and the exponent decrease.
    fn normalize53(&mut self, sig: Word) -> R<(Word, Word)> {
        let it = self.ty(U64);
        let lz = self.clz64(sig)?;
        let k11 = self.k64(11);
        let shift = self.b.i_sub(it, None, lz, k11)?;
        let shift = self.umin(shift, 63)?;
        Ok((self.b.shift_left_logical(it, None, sig, shift)?, shift))
    }

    /// Sign, magnitude bits, normalized significand (leading bit 52) and the exponent
    /// of its last bit, of an f64 bit pattern.
    fn unpack_f64(&mut self, x: Word) -> R<(Word, Word, Word, Word)> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let k52 = self.k64(52);
        let k63 = self.k64(63);
        let zero = self.k64(0);
        let one = self.k64(1);
        let sign = self.b.shift_right_logical(it, None, x, k63)?;
        let abs_mask = self.k64(!(1u64 << 63));
        let mag = self.b.bitwise_and(it, None, x, abs_mask)?;
        let ef = self.b.shift_right_logical(it, None, mag, k52)?;
        let frac_mask = self.k64((1 << 52) - 1);
        let frac = self.b.bitwise_and(it, None, mag, frac_mask)?;
        let is_sub = self.b.i_equal(bt, None, ef, zero)?;
        let hidden = self.k64(1 << 52);
        let with_hidden = self.b.bitwise_or(it, None, frac, hidden)?;
        let sig = self.sel(is_sub, frac, with_hidden)?;
        let ef = self.sel(is_sub, one, ef)?;
        let bias = self.k64(1075);
        let exp = self.b.i_sub(it, None, ef, bias)?;
        // Zero significands stay zero (their results are selected by the callers).
        let sig_or_one = self.sel(is_sub, with_hidden, sig)?;
        let is_zero = self.b.i_equal(bt, None, mag, zero)?;
        let sig_nz = self.sel(is_zero, sig_or_one, sig)?;
        let (sig_n, shift) = self.normalize53(sig_nz)?;
        let exp = self.b.i_sub(it, None, exp, shift)?;
        Ok((sign, mag, sig_n, exp))
    }

    /// `div.{rn,rz,rm,rp}.f64` exactly (PTX ISA 9.2 §9.7.3.8): the significands'
    /// quotient to 55 bits by restoring division (each step a compare and a subtract
    /// on 54-bit remainders), the remainder as the sticky bit, one rounding. IEEE
    /// special cases are selected.
    pub(super) fn soft_div_f64(&mut self, a: Word, b: Word, rounding: Rounding) -> R<Word> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let zero = self.k64(0);
        let one = self.k64(1);
        let inf = self.k64(0x7ff0_0000_0000_0000);
        let (sa, ma, xa, ea) = self.unpack_f64(a)?;
        let (sb, mb, xb, eb) = self.unpack_f64(b)?;
        let sign = self.b.bitwise_xor(it, None, sa, sb)?;
        // x/y in [1, 2): double x when it is below y.
        let below = self.b.u_less_than(bt, None, xa, xb)?;
        let x2 = self.b.shift_left_logical(it, None, xa, one)?;
        let mut rem = self.sel(below, x2, xa)?;
        let dec = self.sel(below, one, zero)?;
        let mut q = zero;
        for _ in 0..55 {
            let fits = self.b.u_greater_than_equal(bt, None, rem, xb)?;
            let less = self.b.i_sub(it, None, rem, xb)?;
            rem = self.sel(fits, less, rem)?;
            let q2 = self.b.shift_left_logical(it, None, q, one)?;
            let bit = self.sel(fits, one, zero)?;
            q = self.b.bitwise_or(it, None, q2, bit)?;
            rem = self.b.shift_left_logical(it, None, rem, one)?;
        }
        let sticky = self.b.i_not_equal(bt, None, rem, zero)?;
        // a/b = q · 2^(ea - dec - eb - 54).
        let e = self.b.i_sub(it, None, ea, eb)?;
        let e = self.b.i_sub(it, None, e, dec)?;
        let k54 = self.k64(54);
        let e = self.b.i_sub(it, None, e, k54)?;
        let r = self.round_to_f64(zero, q, e, sticky, sign, rounding, false)?;
        // NaN operands, 0/0 and inf/inf give NaN; x/0 and inf/y give inf; 0/y and x/inf
        // give 0 (with the sign of the quotient).
        let a_nan = self.b.u_greater_than(bt, None, ma, inf)?;
        let b_nan = self.b.u_greater_than(bt, None, mb, inf)?;
        let a_inf = self.b.i_equal(bt, None, ma, inf)?;
        let b_inf = self.b.i_equal(bt, None, mb, inf)?;
        let a_zero = self.b.i_equal(bt, None, ma, zero)?;
        let b_zero = self.b.i_equal(bt, None, mb, zero)?;
        let nan = self.b.logical_or(bt, None, a_nan, b_nan)?;
        let zz = self.b.logical_and(bt, None, a_zero, b_zero)?;
        let ii = self.b.logical_and(bt, None, a_inf, b_inf)?;
        let nan = self.b.logical_or(bt, None, nan, zz)?;
        let nan = self.b.logical_or(bt, None, nan, ii)?;
        let to_inf = self.b.logical_or(bt, None, a_inf, b_zero)?;
        let to_zero = self.b.logical_or(bt, None, a_zero, b_inf)?;
        let k63 = self.k64(63);
        let sign_bit = self.b.shift_left_logical(it, None, sign, k63)?;
        let signed_inf = self.b.bitwise_or(it, None, sign_bit, inf)?;
        let r = self.sel(to_zero, sign_bit, r)?;
        let r = self.sel(to_inf, signed_inf, r)?;
        let qnan = self.k64(0x7ff8_0000_0000_0000);
        self.sel(nan, qnan, r)
    }

    /// `sqrt.{rn,rz,rm,rp}.f64` exactly (§9.7.3.10): the integer square root of the
    /// significand scaled to an even exponent and 109-110 bits, two bits per step
    /// (digit-by-digit), the remainder as the sticky bit, one rounding.
    pub(super) fn soft_sqrt_f64(&mut self, a: Word, rounding: Rounding) -> R<Word> {
        let it = self.ty(U64);
        let bt = self.ty(Scalar::Bool);
        let zero = self.k64(0);
        let one = self.k64(1);
        let two = self.k64(2);
        let three = self.k64(3);
        let inf = self.k64(0x7ff0_0000_0000_0000);
        let (sa, ma, xa, ea) = self.unpack_f64(a)?;
        // An even exponent: m in [2^52, 2^54).
        let odd = self.b.bitwise_and(it, None, ea, one)?;
        let is_odd = self.b.i_equal(bt, None, odd, one)?;
        let m2 = self.b.shift_left_logical(it, None, xa, one)?;
        let m = self.sel(is_odd, m2, xa)?;
        let e = self.b.i_sub(it, None, ea, odd)?;
        // M = m · 2^56 (hi = m >> 8, lo = m << 56): 110 bits, consumed two at a time.
        let k8 = self.k64(8);
        let k56 = self.k64(56);
        let mh = self.b.shift_right_logical(it, None, m, k8)?;
        let ml = self.b.shift_left_logical(it, None, m, k56)?;
        let mut q = zero;
        let mut rem = zero;
        for step in 0..55u32 {
            // Bits 109-2·step and 108-2·step of M.
            let pos = 108 - 2 * step;
            let pair = if pos >= 64 {
                let k = self.k64(u64::from(pos - 64));
                let s = self.b.shift_right_logical(it, None, mh, k)?;
                self.b.bitwise_and(it, None, s, three)?
            } else {
                let k = self.k64(u64::from(pos));
                let s = self.b.shift_right_logical(it, None, ml, k)?;
                self.b.bitwise_and(it, None, s, three)?
            };
            let r4 = self.b.shift_left_logical(it, None, rem, two)?;
            rem = self.b.bitwise_or(it, None, r4, pair)?;
            let q4 = self.b.shift_left_logical(it, None, q, two)?;
            let trial = self.b.bitwise_or(it, None, q4, one)?;
            let fits = self.b.u_greater_than_equal(bt, None, rem, trial)?;
            let less = self.b.i_sub(it, None, rem, trial)?;
            rem = self.sel(fits, less, rem)?;
            let q2 = self.b.shift_left_logical(it, None, q, one)?;
            let bit = self.sel(fits, one, zero)?;
            q = self.b.bitwise_or(it, None, q2, bit)?;
        }
        let sticky = self.b.i_not_equal(bt, None, rem, zero)?;
        // sqrt(m · 2^e) = sqrt(M) · 2^((e - 56) / 2).
        let e = self.b.i_sub(it, None, e, k56)?;
        let e = self.b.shift_right_arithmetic(it, None, e, one)?;
        let r = self.round_to_f64(zero, q, e, sticky, zero, rounding, false)?;
        // sqrt(±0) = ±0, sqrt(+inf) = +inf, negative and NaN give NaN.
        let is_zero = self.b.i_equal(bt, None, ma, zero)?;
        let is_inf = self.b.i_equal(bt, None, ma, inf)?;
        let is_nan = self.b.u_greater_than(bt, None, ma, inf)?;
        let neg = self.b.i_equal(bt, None, sa, one)?;
        let nonzero = self.b.logical_not(bt, None, is_zero)?;
        let neg_nonzero = self.b.logical_and(bt, None, neg, nonzero)?;
        let r = self.sel(is_inf, inf, r)?;
        let r = self.sel(is_zero, a, r)?;
        let bad = self.b.logical_or(bt, None, is_nan, neg_nonzero)?;
        let qnan = self.k64(0x7ff8_0000_0000_0000);
        self.sel(bad, qnan, r)
    }
}

impl FnEmitter<'_> {
    /// The f64 bit pattern (a 64-bit integer) of the f32 whose bits are `x`, exactly,
    /// in integer arithmetic: normal numbers rebias their exponent, subnormals (normal
    /// in f64) are normalized, infinities and NaNs keep their payload.
    pub(super) fn f32_bits_to_f64_bits(&mut self, x: Word) -> R<Word> {
        let it = self.ty(U64);
        let ut = self.ty(U32);
        let bt = self.ty(Scalar::Bool);
        let x = self.b.u_convert(it, None, x)?;
        let (k23, k29, k31, k52, k63) =
            (self.k64(23), self.k64(29), self.k64(31), self.k64(52), self.k64(63));
        let zero = self.k64(0);
        let sign = self.b.shift_right_logical(it, None, x, k31)?;
        let sign = self.b.shift_left_logical(it, None, sign, k63)?;
        let ef = self.b.shift_right_logical(it, None, x, k23)?;
        let exp_mask = self.k64(0xff);
        let ef = self.b.bitwise_and(it, None, ef, exp_mask)?;
        let frac_mask = self.k64((1 << 23) - 1);
        let frac = self.b.bitwise_and(it, None, x, frac_mask)?;
        let frac52 = self.b.shift_left_logical(it, None, frac, k29)?;
        // Normal: the exponent rebiased by 1023 - 127.
        let rebias = self.k64(1023 - 127);
        let e64 = self.b.i_add(it, None, ef, rebias)?;
        let e64 = self.b.shift_left_logical(it, None, e64, k52)?;
        let normal = self.b.bitwise_or(it, None, e64, frac52)?;
        // Subnormal: frac · 2^-149 with its leading bit at p is 2^(p - 149) · 1.f, so
        // the exponent field is p + 874 and the fraction is frac shifted to bit 52.
        let frac32 = self.b.u_convert(ut, None, frac)?;
        let glsl_set = self.g.glsl;
        let msb = self.b.ext_inst(ut, None, glsl_set, glsl::FIND_UMSB, [Operand::IdRef(frac32)])?;
        let msb = self.b.u_convert(it, None, msb)?;
        let k874 = self.k64(874);
        let se = self.b.i_add(it, None, msb, k874)?;
        let se = self.b.shift_left_logical(it, None, se, k52)?;
        let shift = self.b.i_sub(it, None, k52, msb)?;
        // Only meaningful for a nonzero fraction; keep the shift in range otherwise.
        let k63_mask = self.k64(63);
        let shift = self.b.bitwise_and(it, None, shift, k63_mask)?;
        let sf = self.b.shift_left_logical(it, None, frac, shift)?;
        let fmask52 = self.k64((1 << 52) - 1);
        let sf = self.b.bitwise_and(it, None, sf, fmask52)?;
        let subnormal = self.b.bitwise_or(it, None, se, sf)?;
        let exp_zero = self.b.i_equal(bt, None, ef, zero)?;
        let frac_zero = self.b.i_equal(bt, None, frac, zero)?;
        let frac_nonzero = self.b.logical_not(bt, None, frac_zero)?;
        let is_sub = self.b.logical_and(bt, None, exp_zero, frac_nonzero)?;
        let r = self.sel(is_sub, subnormal, normal)?;
        let is_zero = self.b.logical_and(bt, None, exp_zero, frac_zero)?;
        let r = self.sel(is_zero, zero, r)?;
        // Infinities and NaNs: the all-ones exponent, the payload moved up.
        let all_ones = self.k64(0xff);
        let special = self.b.i_equal(bt, None, ef, all_ones)?;
        let inf = self.k64(0x7ff0_0000_0000_0000);
        let inf_nan = self.b.bitwise_or(it, None, inf, frac52)?;
        let r = self.sel(special, inf_nan, r)?;
        Ok(self.b.bitwise_or(it, None, r, sign)?)
    }

    /// `Helper::SoftF32`: an f32 `fma`, `div` or `sqrt` exactly rounded by `rounding`,
    /// with integer arithmetic only. The operands widen exactly to f64 bit patterns and
    /// the soft f64 routine rounds once; rounding that to f32 is then exact:
    /// * `div`, `sqrt`: a second rounding to nearest is innocuous for 53 ≥ 2·24 + 2
    ///   bits (Figueroa 1995), and two directed roundings the same way equal one (the
    ///   f32 values are f64 values);
    /// * `fma` to nearest: the f64 result is rounded to odd first, which makes the
    ///   second rounding exact for 53 ≥ 24 + 2 (Boldo & Melquiond 2008); directed
    ///   `fma` as above.
    pub(super) fn soft_f32(&mut self, op: SoftOp, rounding: Rounding, p: &[Word]) -> R<Word> {
        let ut = self.ty(U32);
        let ft = self.ty(Scalar::Float(32));
        let mut wide = Vec::with_capacity(p.len());
        for &x in p {
            let bits = self.b.bitcast(ut, None, x)?;
            wide.push(self.f32_bits_to_f64_bits(bits)?);
        }
        let nearest = rounding == Rounding::Nearest;
        let r = match op {
            SoftOp::Fma if nearest => self.call(Helper::FmaF64Odd, &wide)?,
            SoftOp::Fma => self.call(Helper::FmaF64(rounding), &wide)?,
            SoftOp::Div => self.call(Helper::DivF64(rounding), &wide)?,
            SoftOp::Sqrt => self.call(Helper::SqrtF64(rounding), &wide)?,
        };
        let narrow = Helper::Narrow {
            to: FloatFormat::F32,
            from_bits: 64,
            rounding,
            satfinite: false,
            relu: false,
        };
        let bits = self.call(narrow, &[r])?;
        Ok(self.b.bitcast(ft, None, bits)?)
    }

    /// `InstKind::RoundToOdd` with `soft`: the f32 operands widened exactly to f64 bit
    /// patterns and the integer fused multiply-add rounded to odd, `a + b` as
    /// `fma(a, 1, b)` and `a · b` as `fma(a, b, -0)` (which keeps the sign of a zero
    /// product). The result is the f64 bit pattern, as a 64-bit integer.
    pub(super) fn soft_round_to_odd(&mut self, op: OddOp, a: Value, b: Value, c: Value) -> R<Word> {
        let it = self.ty(U64);
        let wide = |e: &mut Self, v: Value| -> R<Word> {
            let bits = e.read(v, U32)?;
            e.f32_bits_to_f64_bits(bits)
        };
        let wa = wide(self, a)?;
        let wb = wide(self, b)?;
        let one = self.k64(1f64.to_bits());
        let sign = self.k64(1 << 63);
        let (x, y, z) = match op {
            OddOp::Add => (wa, one, wb),
            OddOp::Sub => (wa, one, self.b.bitwise_xor(it, None, wb, sign)?),
            OddOp::Mul => (wa, wb, sign),
            OddOp::Fma => (wa, wb, wide(self, c)?),
        };
        self.call(Helper::FmaF64Odd, &[x, y, z])
    }
}
