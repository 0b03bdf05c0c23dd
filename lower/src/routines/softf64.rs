//! Exact f64 `fma`, `div` and `sqrt` in every rounding, on bit patterns in 64-bit
//! integers: Vulkan requires neither a fused `Fma` nor any rounding but to nearest,
//! and a device may have no f64 at all. Each forms its result exactly (the product in
//! 128 bits, the quotient and root digit by digit with the remainder as a sticky bit)
//! and rounds once ([`Wide::round_to_f64`]; PTX ISA 9.2 §9.7.3.6, §9.7.3.8, §9.7.3.10;
//! IEEE 754 §5.4.1, §6.3 for the signs of zeros).

use super::wide::{k, Wide, INF, S64};
use crate::ir::{BinaryOp, CmpOp, RegId, Rounding, Value};

const SIGN: u64 = 1 << 63;
/// The NaN results are: the IR's (`FloatFormat::nan`, all ones but the sign, as PTX's
/// canonical NaN).
const QNAN: u64 = 0x7fff_ffff_ffff_ffff;
const FRAC: u64 = (1 << 52) - 1;
const HIDDEN: u64 = 1 << 52;
/// The exponent a zero operand gets, below any other's by more than 128 bits.
const VERY_LOW: u64 = (-100_000i64) as u64;

/// An operand's fields: sign (0 or 1), magnitude bits, significand (with the hidden bit
/// when normal) and the exponent of the significand's last bit (max(e, 1) - 1075).
struct Parts {
    sign: Value,
    mag: Value,
    sig: Value,
    exp: Value,
    is_sub: RegId,
    with_hidden: Value,
}

fn parts(b: &mut impl Wide, x: Value) -> Parts {
    let sign = b.shr64(x, k(63));
    let mag = b.and64(x, k(!SIGN));
    let ef = b.shr64(mag, k(52));
    let frac = b.and64(mag, k(FRAC));
    let is_sub = b.eq64(ef, k(0));
    let with_hidden = b.or64(frac, k(HIDDEN));
    let sig = b.sel64(is_sub, frac, with_hidden);
    let ef = b.sel64(is_sub, k(1), ef);
    let exp = b.sub64(ef, k(1075));
    Parts { sign, mag, sig, exp, is_sub, with_hidden }
}

/// The fields with the significand normalized to leading bit 52 (a zero's is any
/// normalized value: its results are selected by the callers).
fn unpack(b: &mut impl Wide, x: Value) -> (Value, Value, Value, Value) {
    let p = parts(b, x);
    let sig_or_one = b.sel64(p.is_sub, p.with_hidden, p.sig);
    let is_zero = b.eq64(p.mag, k(0));
    let sig = b.sel64(is_zero, sig_or_one, p.sig);
    let lz = b.clz64(sig);
    let shift = b.sub64(lz, k(11));
    let shift32 = b.amount(shift);
    let sig = b.shl64(sig, shift32);
    let exp = b.sub64(p.exp, shift);
    (p.sign, p.mag, sig, exp)
}

/// `a · b + c` rounded once by `rounding` (to odd with `odd`, see
/// [`Wide::round_to_f64`]), on the bit patterns `x = [a, b, c]`.
pub(super) fn fma(b: &mut impl Wide, x: &[Value], rounding: Rounding, odd: bool) -> Value {
    let (pa, pb, pc) = (parts(b, x[0]), parts(b, x[1]), parts(b, x[2]));
    let c = x[2];
    let sign_p = b.xor64(pa.sign, pb.sign);

    // Special operands.
    let a_nan = b.gt64(pa.mag, k(INF));
    let b_nan = b.gt64(pb.mag, k(INF));
    let c_nan = b.gt64(pc.mag, k(INF));
    let a_inf = b.eq64(pa.mag, k(INF));
    let b_inf = b.eq64(pb.mag, k(INF));
    let c_inf = b.eq64(pc.mag, k(INF));
    let a_zero = b.eq64(pa.mag, k(0));
    let b_zero = b.eq64(pb.mag, k(0));
    let c_zero = b.eq64(pc.mag, k(0));
    let any_nan = b.pred_or(a_nan, b_nan);
    let any_nan = b.pred_or(any_nan, c_nan);
    let inf_zero1 = b.pred_and(a_inf, b_zero);
    let inf_zero2 = b.pred_and(a_zero, b_inf);
    let p_inf = b.pred_or(a_inf, b_inf);
    let signs_differ = b.ne64(sign_p, pc.sign);
    let inf_minus_inf = b.pred_and(p_inf, c_inf);
    let inf_minus_inf = b.pred_and(inf_minus_inf, signs_differ);
    let nan = b.pred_or(any_nan, inf_zero1);
    let nan = b.pred_or(nan, inf_zero2);
    let nan = b.pred_or(nan, inf_minus_inf);
    let p_zero = b.pred_or(a_zero, b_zero);

    // The exact product normalized to bit 127, the addend to bit 127, then both two
    // bits lower (headroom for the sum; the product has at most 106 significant bits,
    // the addend 53, so nothing is lost).
    let (ph, pl) = b.mul53(pa.sig, pb.sig);
    let exp_p = b.add64(pa.exp, pb.exp);
    let lz_p = b.clz128(ph, pl);
    let lz_p = b.umin(lz_p, 127);
    let (ph, pl) = b.shl128(ph, pl, lz_p);
    let exp_p = b.sub64(exp_p, lz_p);
    let lz_c = b.clz64(pc.sig);
    let lz_c = b.umin(lz_c, 63);
    let lz_c32 = b.amount(lz_c);
    let ch = b.shl64(pc.sig, lz_c32);
    let exp_c = b.sub64(pc.exp, k(64));
    let exp_c = b.sub64(exp_c, lz_c);
    let (ph, pl) = b.shr128_by(ph, pl, 2);
    let (ch, cl) = b.shr128_by(ch, k(0), 2);
    let exp_p = b.add64(exp_p, k(2));
    let exp_c = b.add64(exp_c, k(2));
    // A zero addend (or product) contributes nothing: the lowest exponent.
    let exp_c = b.sel64(c_zero, k(VERY_LOW), exp_c);
    let exp_p = b.sel64(p_zero, k(VERY_LOW), exp_p);
    let ch = b.sel64(c_zero, k(0), ch);
    let cl = b.sel64(c_zero, k(0), cl);
    let ph = b.sel64(p_zero, k(0), ph);
    let pl = b.sel64(p_zero, k(0), pl);

    // The larger magnitude is `big`; the smaller is aligned to it, with sticky bits.
    let p_exp_gt = b.cmp(CmpOp::Gt, S64, exp_p, exp_c);
    let exp_eq = b.eq64(exp_p, exp_c);
    let h_gt = b.gt64(ph, ch);
    let h_eq = b.eq64(ph, ch);
    let l_ge = b.ge64(pl, cl);
    let x_ge = b.pred_and(h_eq, l_ge);
    let x_ge = b.pred_or(h_gt, x_ge);
    let p_ge = b.pred_and(exp_eq, x_ge);
    let p_big = b.pred_or(p_exp_gt, p_ge);
    let (bh, bl) = (b.sel64(p_big, ph, ch), b.sel64(p_big, pl, cl));
    let (sh, sl) = (b.sel64(p_big, ch, ph), b.sel64(p_big, cl, pl));
    let exp_big = b.sel64(p_big, exp_p, exp_c);
    let exp_small = b.sel64(p_big, exp_c, exp_p);
    let sign_big = b.sel64(p_big, sign_p, pc.sign);
    let d = b.sub64(exp_big, exp_small);
    let (sh, sl, lost) = b.shr128_sticky(sh, sl, d);
    let sticky = b.ne64(lost, k(0));

    // Sum or difference; a sticky remainder of the small operand is a fraction of a
    // unit: subtracting it borrows one unit and keeps the sticky bit.
    let lo_sum = b.add64(bl, sl);
    let carry = b.lt64(lo_sum, bl);
    let carry = b.bit(carry);
    let hi_sum = b.add64(bh, sh);
    let hi_sum = b.add64(hi_sum, carry);
    let borrow_in = b.bit(sticky);
    let sl_b = b.add64(sl, borrow_in);
    let wrap = b.lt64(sl_b, sl);
    let wrap = b.bit(wrap);
    let sh_b = b.add64(sh, wrap);
    let lo_diff = b.sub64(bl, sl_b);
    let borrow = b.lt64(bl, sl_b);
    let borrow = b.bit(borrow);
    let hi_diff = b.sub64(bh, sh_b);
    let hi_diff = b.sub64(hi_diff, borrow);
    let xh = b.sel64(signs_differ, hi_diff, hi_sum);
    let xl = b.sel64(signs_differ, lo_diff, lo_sum);

    let any = b.or64(xh, xl);
    let any = b.or64(any, lost);
    let exact_zero = b.eq64(any, k(0));
    let r = b.round_to_f64((xh, xl), exp_big, lost, sign_big, rounding, odd);

    // An exact zero: the sign of the addends when they agree, else +0 (-0 when
    // rounding down) (IEEE 754 §6.3).
    let differ_neg = k(u64::from(rounding == Rounding::Down));
    let zero_neg = b.sel64(signs_differ, differ_neg, sign_p);
    let signed_zero = b.shl64(zero_neg, k(63));
    let r = b.sel64(exact_zero, signed_zero, r);

    // A zero product leaves the addend (rounding cannot change a representable value);
    // zero sums were handled above.
    let c_nonzero = b.ne64(pc.mag, k(0));
    let keep_c = b.pred_and(p_zero, c_nonzero);
    let r = b.sel64(keep_c, c, r);
    // Infinities and NaN.
    let p_sign_bit = b.shl64(sign_p, k(63));
    let p_inf_bits = b.or64(p_sign_bit, k(INF));
    let r = b.sel64(c_inf, c, r);
    let r = b.sel64(p_inf, p_inf_bits, r);
    b.sel64(nan, k(QNAN), r)
}

/// `a / b` rounded by `rounding`: the significands' quotient to 55 bits by restoring
/// division (each step a compare and a subtract on 54-bit remainders), the remainder
/// as the sticky bit. IEEE special cases are selected.
pub(super) fn div(b: &mut impl Wide, a: Value, d: Value, rounding: Rounding) -> Value {
    let (sa, ma, xa, ea) = unpack(b, a);
    let (sb, mb, xb, eb) = unpack(b, d);
    let sign = b.xor64(sa, sb);
    // x/y in [1, 2): double x when it is below y.
    let below = b.lt64(xa, xb);
    let x2 = b.shl64(xa, k(1));
    let mut rem = b.sel64(below, x2, xa);
    let dec = b.bit(below);
    let mut q = k(0);
    for _ in 0..55 {
        let fits = b.ge64(rem, xb);
        let less = b.sub64(rem, xb);
        rem = b.sel64(fits, less, rem);
        // Doublings as additions: a constant shift costs the emitter a clamp.
        let q2 = b.add64(q, q);
        let bit = b.bit(fits);
        q = b.or64(q2, bit);
        rem = b.add64(rem, rem);
    }
    // a/b = q · 2^(ea - dec - eb - 54).
    let e = b.sub64(ea, eb);
    let e = b.sub64(e, dec);
    let e = b.sub64(e, k(54));
    let r = b.round_to_f64((k(0), q), e, rem, sign, rounding, false);
    // NaN operands, 0/0 and inf/inf give NaN; x/0 and inf/y give inf; 0/y and x/inf
    // give 0 (with the sign of the quotient).
    let a_nan = b.gt64(ma, k(INF));
    let b_nan = b.gt64(mb, k(INF));
    let a_inf = b.eq64(ma, k(INF));
    let b_inf = b.eq64(mb, k(INF));
    let a_zero = b.eq64(ma, k(0));
    let b_zero = b.eq64(mb, k(0));
    let nan = b.pred_or(a_nan, b_nan);
    let zz = b.pred_and(a_zero, b_zero);
    let ii = b.pred_and(a_inf, b_inf);
    let nan = b.pred_or(nan, zz);
    let nan = b.pred_or(nan, ii);
    let to_inf = b.pred_or(a_inf, b_zero);
    let to_zero = b.pred_or(a_zero, b_inf);
    let sign_bit = b.shl64(sign, k(63));
    let signed_inf = b.or64(sign_bit, k(INF));
    let r = b.sel64(to_zero, sign_bit, r);
    let r = b.sel64(to_inf, signed_inf, r);
    b.sel64(nan, k(QNAN), r)
}

/// `sqrt(a)` rounded by `rounding`: the integer square root of the significand scaled
/// to an even exponent and 109-110 bits, two bits per step (digit by digit), the
/// remainder as the sticky bit.
pub(super) fn sqrt(b: &mut impl Wide, a: Value, rounding: Rounding) -> Value {
    let (sa, ma, xa, ea) = unpack(b, a);
    // An even exponent: m in [2^52, 2^54).
    let odd = b.and64(ea, k(1));
    let is_odd = b.eq64(odd, k(1));
    let m2 = b.shl64(xa, k(1));
    let m = b.sel64(is_odd, m2, xa);
    let e = b.sub64(ea, odd);
    // M = m · 2^56 (hi = m >> 8, lo = m << 56): 110 bits, consumed two at a time.
    let mh = b.shr64(m, k(8));
    let ml = b.shl64(m, k(56));
    let (mut q, mut rem) = (k(0), k(0));
    for step in 0..55u64 {
        // Bits 109 - 2·step and 108 - 2·step of M.
        let pos = 108 - 2 * step;
        let s = if pos >= 64 { b.shr64(mh, k(pos - 64)) } else { b.shr64(ml, k(pos)) };
        let pair = b.and64(s, k(3));
        let r2 = b.add64(rem, rem);
        let r4 = b.add64(r2, r2);
        rem = b.or64(r4, pair);
        let q2 = b.add64(q, q);
        let q4 = b.add64(q2, q2);
        let trial = b.or64(q4, k(1));
        let fits = b.ge64(rem, trial);
        let less = b.sub64(rem, trial);
        rem = b.sel64(fits, less, rem);
        let bit = b.bit(fits);
        q = b.or64(q2, bit);
    }
    // sqrt(m · 2^e) = sqrt(M) · 2^((e - 56) / 2).
    let e = b.sub64(e, k(56));
    let e = b.bin(BinaryOp::Shr, S64, e, k(1));
    let r = b.round_to_f64((k(0), q), e, rem, k(0), rounding, false);
    // sqrt(±0) = ±0, sqrt(+inf) = +inf, negative and NaN give NaN.
    let is_zero = b.eq64(ma, k(0));
    let is_inf = b.eq64(ma, k(INF));
    let is_nan = b.gt64(ma, k(INF));
    let neg = b.eq64(sa, k(1));
    let nonzero = b.ne64(ma, k(0));
    let neg_nonzero = b.pred_and(neg, nonzero);
    let r = b.sel64(is_inf, k(INF), r);
    let r = b.sel64(is_zero, a, r);
    let bad = b.pred_or(is_nan, neg_nonzero);
    b.sel64(bad, k(QNAN), r)
}
