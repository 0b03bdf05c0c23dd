//! `div.rn`, `rcp.rn` and `sqrt.rn` (f32 and f64) from Newton steps on a fused `Fma`
//! ([`Helper::Newton`], `FloatPath::Fused`), for devices whose `Fma` a probe found
//! fused: a dozen float instructions on the common path instead of the f64 residuals
//! (f32) or the integer routines (f64, and f32 without f64).
//!
//! The steps give a candidate within one ulp of the exact result. Its final rounding is
//! then decided exactly, as libdevice's `__nv_fdiv_rn` and `__nv_fsqrt_rn` do with
//! their residual tests: with `t1` the float at or below the exact value and `t2` the
//! next one up (`g = t2 - t1`, a power of two), the exact value lies above the midpoint
//! of the two exactly when
//! * `a / b`: `a - b·t1 > b·g/2`, with a tie going to the even one;
//! * `sqrt(x)`: `x - t1² > g·t1 + g²/4`, that is (every term being a multiple of
//!   `ulp(t1)²`) `(x - t1²) - g·t1 > 0`; a square root is never a midpoint.
//!
//! Every residual is one `Fma`, exact when no term is subnormal, which the range test
//! ([`Format`]) guarantees: `|b|` and `1/|b|` normal, `|a|` at least 2^-95 (f32) or
//! 2^-959 (f64), the quotient's exponent well inside the normal range, or `a = ±0`; the
//! same bound for a square root's operand. Other operands (subnormals, infinities,
//! NaNs, extreme exponents) take the exact path: f64 residuals or the integer routine
//! for f32 (the integer one without f64), the integer routine for f64. A CPU model of
//! these steps, with the device's initial approximations off by up to 64 ulps, is
//! checked against correctly rounded results (the unit test below).

use rspirv::dr::Operand;
use rspirv::spirv::{SelectionControl, Word};

use super::helper_kinds::{Helper, SoftOp};
use super::{glsl, FnEmitter, R};
use crate::types::Scalar;
use ptxvk_lower::ir::{BinaryOp, Rounding, Routine};

/// GLSL.std.450 `InverseSqrt`.
const INVERSE_SQRT: u32 = 32;

/// The binary format of the operands: f32 or f64.
#[derive(Clone, Copy)]
pub(crate) struct Format {
    pub bits: u32,
}

impl Format {
    fn significand_bits(self) -> u32 {
        if self.bits == 32 {
            23
        } else {
            52
        }
    }

    fn exponent_mask(self) -> u64 {
        (1 << (self.bits - 1 - self.significand_bits())) - 1
    }

    /// The largest biased exponent of a finite value (254, 2046).
    fn max_exponent(self) -> i64 {
        self.exponent_mask() as i64 - 1
    }

    fn bias(self) -> i64 {
        (self.exponent_mask() >> 1) as i64
    }

    /// The smallest biased exponent of a dividend or radicand on the Newton path: every
    /// residual is a multiple of about 2^-2p of it, which must not be below the
    /// smallest subnormal (2^-149, 2^-1074), with a margin.
    pub fn min_operand_exponent(self) -> i64 {
        if self.bits == 32 {
            32
        } else {
            64
        }
    }

    /// The largest biased exponent of a divisor whose reciprocal is normal.
    pub fn max_divisor_exponent(self) -> i64 {
        self.max_exponent() - 2
    }

    /// The range of the quotient's biased exponent (`ea - eb + bias`).
    pub fn quotient_exponents(self) -> (i64, i64) {
        (2, self.max_exponent() - 4)
    }

    fn int(self) -> Scalar {
        Scalar::Int(self.bits as u8)
    }

    fn float(self) -> Scalar {
        Scalar::Float(self.bits as u8)
    }

    fn float_bits(self, v: f64) -> u64 {
        if self.bits == 32 {
            u64::from((v as f32).to_bits())
        } else {
            v.to_bits()
        }
    }
}

impl FnEmitter<'_> {
    /// The body of [`Helper::Newton`]: `op` (`Div` on `p[0]`, `p[1]`, or `Sqrt` on
    /// `p[0]`; f32 values, or f64 bit patterns), by Newton steps where the operands
    /// allow and by the exact f64 path (or with `soft` the integer one) elsewhere.
    pub(super) fn newton(&mut self, op: SoftOp, f: Format, soft: bool, p: &[Word]) -> R<Word> {
        let (int, float) = (f.int(), f.float());
        let (it, ft, bt) = (self.ty(int), self.ty(float), self.ty(Scalar::Bool));
        // f64 helpers take and return bit patterns, as the integer f64 routines do.
        let x: Vec<Word> = if f.bits == 64 {
            p.iter().map(|&v| self.b.bitcast(ft, None, v)).collect::<Result<_, _>>()?
        } else {
            p.to_vec()
        };
        let exponent = |e: &mut Self, v: Word| -> R<Word> {
            let bits = e.b.bitcast(it, None, v)?;
            let sh = e.konst(int, f.significand_bits().into());
            let shifted = e.b.shift_right_logical(it, None, bits, sh)?;
            let mask = e.konst(int, f.exponent_mask());
            Ok(e.b.bitwise_and(it, None, shifted, mask)?)
        };
        let in_range = |e: &mut Self, v: Word, lo: i64, hi: i64| -> R<Word> {
            let ones = u64::MAX >> (64 - f.bits);
            let (lo_c, hi_c) = (e.konst(int, lo as u64 & ones), e.konst(int, hi as u64 & ones));
            let ge = e.b.s_greater_than_equal(bt, None, v, lo_c)?;
            let le = e.b.s_less_than_equal(bt, None, v, hi_c)?;
            Ok(e.b.logical_and(bt, None, ge, le)?)
        };
        let fast = match op {
            SoftOp::Div => {
                let (ea, eb) = (exponent(self, x[0])?, exponent(self, x[1])?);
                let a_ok = in_range(self, ea, f.min_operand_exponent(), f.max_exponent())?;
                let b_ok = in_range(self, eb, 1, f.max_divisor_exponent())?;
                let diff = self.b.i_sub(it, None, ea, eb)?;
                let (lo, hi) = f.quotient_exponents();
                let q_ok = in_range(self, diff, lo - f.bias(), hi - f.bias())?;
                let aq = self.b.logical_and(bt, None, a_ok, q_ok)?;
                // A zero dividend takes the steps too: every residual is zero, and the
                // result the zero of the quotient's sign.
                let zero = self.konst(int, 0);
                let a_bits = self.b.bitcast(it, None, x[0])?;
                let one = self.konst(int, 1);
                let magnitude = self.b.shift_left_logical(it, None, a_bits, one)?;
                let a_is_zero = self.b.i_equal(bt, None, magnitude, zero)?;
                let dividend = self.b.logical_or(bt, None, aq, a_is_zero)?;
                self.b.logical_and(bt, None, dividend, b_ok)?
            }
            _ => {
                // Positive (sign bit clear), at least the smallest exponent, finite.
                let bits = self.b.bitcast(it, None, x[0])?;
                let sh = f.significand_bits();
                let lo = self.konst(int, (f.min_operand_exponent() as u64) << sh);
                let hi = self.konst(int, f.exponent_mask() << sh);
                let ge = self.b.s_greater_than_equal(bt, None, bits, lo)?;
                let lt = self.b.s_less_than(bt, None, bits, hi)?;
                self.b.logical_and(bt, None, ge, lt)?
            }
        };
        let (fast_l, slow_l, merge) = (self.b.id(), self.b.id(), self.b.id());
        let result_ty = if f.bits == 64 { it } else { ft };
        self.b.selection_merge(merge, SelectionControl::NONE)?;
        self.b.branch_conditional(fast, fast_l, slow_l, [])?;
        self.b.begin_block(Some(fast_l))?;
        let quick = match op {
            SoftOp::Div => self.newton_div(f, x[0], x[1])?,
            _ => self.newton_sqrt(f, x[0])?,
        };
        let quick = if f.bits == 64 { self.b.bitcast(it, None, quick)? } else { quick };
        self.b.branch(merge)?;
        self.b.begin_block(Some(slow_l))?;
        let rn = Rounding::Nearest;
        let slow = match (op, f.bits, soft) {
            (SoftOp::Div, 64, _) => self.call(Helper::Routine(Routine::DivF64(rn)), &p[..2])?,
            (_, 64, _) => self.call(Helper::Routine(Routine::SqrtF64(rn)), &p[..1])?,
            (SoftOp::Div, _, false) => self.call(Helper::DivF32(rn), &p[..2])?,
            (_, _, false) => self.call(Helper::SqrtF32(rn), &p[..1])?,
            (op, _, true) => {
                let r = if op == SoftOp::Div { Routine::DivF32(rn) } else { Routine::SqrtF32(rn) };
                let bits = p
                    .iter()
                    .map(|&x| self.b.bitcast(it, None, x))
                    .collect::<Result<Vec<_>, _>>()?;
                let r = self.call(Helper::Routine(r), &bits)?;
                self.b.bitcast(ft, None, r)?
            }
        };
        self.b.branch(merge)?;
        self.b.begin_block(Some(merge))?;
        Ok(self.b.phi(result_ty, None, [(quick, fast_l), (slow, slow_l)])?)
    }

    /// The device's (fused) `Fma`.
    fn fused_fma(&mut self, f: Format, a: Word, b: Word, c: Word) -> R<Word> {
        let ft = self.ty(f.float());
        let ops = [a, b, c].map(Operand::IdRef);
        Ok(self.b.ext_inst(ft, None, self.g.glsl, glsl::FMA, ops)?)
    }

    /// The float whose bits are `x`'s plus `delta` (a neighbour of a positive float).
    fn bits_step(&mut self, f: Format, x: Word, delta: i64) -> R<Word> {
        let (it, ft) = (self.ty(f.int()), self.ty(f.float()));
        let bits = self.b.bitcast(it, None, x)?;
        let d = self.konst(f.int(), delta as u64 & (u64::MAX >> (64 - f.bits)));
        let moved = self.b.i_add(it, None, bits, d)?;
        Ok(self.b.bitcast(ft, None, moved)?)
    }

    /// `(t1, t2, g)`: the float at or below the exact value whose candidate is `q` and
    /// whose residual (exact value minus candidate, in sign) is `r`, the next float, and
    /// their distance.
    fn bracket(&mut self, f: Format, q: Word, r: Word) -> R<(Word, Word, Word)> {
        let (ft, bt) = (self.ty(f.float()), self.ty(Scalar::Bool));
        let zero = self.konst(f.float(), 0);
        let below = self.b.f_ord_less_than(bt, None, r, zero)?;
        let prev = self.bits_step(f, q, -1)?;
        let t1 = self.b.select(ft, None, below, prev, q)?;
        let t2 = self.bits_step(f, t1, 1)?;
        let g = self.float_op(BinaryOp::Sub, ft, t2, t1)?;
        Ok((t1, t2, g))
    }

    /// `a / b` to nearest on the Newton path (module doc).
    fn newton_div(&mut self, f: Format, a: Word, b: Word) -> R<Word> {
        let (int, float) = (f.int(), f.float());
        let (it, ft, bt) = (self.ty(int), self.ty(float), self.ty(Scalar::Bool));
        let (x, y) = (self.glsl1(ft, glsl::FABS, a)?, self.glsl1(ft, glsl::FABS, b)?);
        let neg_y = self.b.f_negate(ft, None, y)?;
        let one = self.konst(float, f.float_bits(1.0));
        let half = self.konst(float, f.float_bits(0.5));
        // 1/|b| to Vulkan's precision, then one Newton step.
        let y0 = self.float_op(BinaryOp::Div, ft, one, y)?;
        let e = self.fused_fma(f, neg_y, y0, one)?;
        let y1 = self.fused_fma(f, y0, e, y0)?;
        let q0 = self.float_op(BinaryOp::Mul, ft, x, y1)?;
        let r0 = self.fused_fma(f, neg_y, q0, x)?;
        let q = self.fused_fma(f, r0, y1, q0)?;
        let r = self.fused_fma(f, neg_y, q, x)?;
        let (t1, t2, g) = self.bracket(f, q, r)?;
        // Above the midpoint: |a| - |b|·t1 > |b|·g/2; a tie goes to the even one.
        let r1 = self.fused_fma(f, neg_y, t1, x)?;
        let yg = self.float_op(BinaryOp::Mul, ft, y, g)?;
        let h = self.float_op(BinaryOp::Mul, ft, yg, half)?;
        let above = self.b.f_ord_greater_than(bt, None, r1, h)?;
        let tie = self.b.f_ord_equal(bt, None, r1, h)?;
        let t1_bits = self.b.bitcast(it, None, t1)?;
        let one_i = self.konst(int, 1);
        let low = self.b.bitwise_and(it, None, t1_bits, one_i)?;
        let odd = self.b.i_equal(bt, None, low, one_i)?;
        let tie_up = self.b.logical_and(bt, None, tie, odd)?;
        let up = self.b.logical_or(bt, None, above, tie_up)?;
        let mag = self.b.select(ft, None, up, t2, t1)?;
        // The sign of the quotient: sign(a) xor sign(b).
        let (ai, bi) = (self.b.bitcast(it, None, a)?, self.b.bitcast(it, None, b)?);
        let sx = self.b.bitwise_xor(it, None, ai, bi)?;
        let sign_mask = self.konst(int, 1 << (f.bits - 1));
        let sign = self.b.bitwise_and(it, None, sx, sign_mask)?;
        let mag_bits = self.b.bitcast(it, None, mag)?;
        let signed = self.b.bitwise_or(it, None, mag_bits, sign)?;
        Ok(self.b.bitcast(ft, None, signed)?)
    }

    /// `sqrt(x)` to nearest on the Newton path (module doc).
    fn newton_sqrt(&mut self, f: Format, x: Word) -> R<Word> {
        let float = f.float();
        let (ft, bt) = (self.ty(float), self.ty(Scalar::Bool));
        let half = self.konst(float, f.float_bits(0.5));
        let zero = self.konst(float, 0);
        // 1/sqrt(x) to Vulkan's precision, then one coupled (Goldschmidt) step for
        // sqrt(x) (`s`) and 1/(2 sqrt(x)) (`h`), and a correction of `s`.
        let y0 = self.glsl1(ft, INVERSE_SQRT, x)?;
        let s0 = self.float_op(BinaryOp::Mul, ft, x, y0)?;
        let h0 = self.float_op(BinaryOp::Mul, ft, half, y0)?;
        let neg_s0 = self.b.f_negate(ft, None, s0)?;
        let e = self.fused_fma(f, neg_s0, h0, half)?;
        let s1 = self.fused_fma(f, s0, e, s0)?;
        let h1 = self.fused_fma(f, h0, e, h0)?;
        let neg_s1 = self.b.f_negate(ft, None, s1)?;
        let d = self.fused_fma(f, neg_s1, s1, x)?;
        let s = self.fused_fma(f, d, h1, s1)?;
        let neg_s = self.b.f_negate(ft, None, s)?;
        let r = self.fused_fma(f, neg_s, s, x)?;
        let (t1, t2, g) = self.bracket(f, s, r)?;
        // Above the midpoint: (x - t1²) - g·t1 > 0.
        let neg_t1 = self.b.f_negate(ft, None, t1)?;
        let r1 = self.fused_fma(f, neg_t1, t1, x)?;
        let neg_g = self.b.f_negate(ft, None, g)?;
        let v = self.fused_fma(f, neg_g, t1, r1)?;
        let up = self.b.f_ord_greater_than(bt, None, v, zero)?;
        Ok(self.b.select(ft, None, up, t2, t1)?)
    }
}

/// A CPU model of the steps above, on Rust's fused `mul_add`, with the device's initial
/// approximations (`1/b`, `1/sqrt(x)`) off by up to 64 ulps (Vulkan allows 2.5 and 2),
/// against correctly rounded results: Rust's own f64 division and square root, and for
/// f32 those of f64 rounded once more to f32, which is innocuous (53 ≥ 2·24 + 2).
#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::{Mul, Neg, Sub};

    /// What the model needs of f32 and f64.
    trait Float:
        Copy + PartialOrd + Neg<Output = Self> + Mul<Output = Self> + Sub<Output = Self>
    {
        const FORMAT: Format;
        fn fma(self, b: Self, c: Self) -> Self;
        fn bits(self) -> u64;
        fn of_bits(b: u64) -> Self;
        fn of(v: f64) -> Self;
        fn abs(self) -> Self;
    }

    macro_rules! float {
        ($t:ty, $u:ty, $bits:expr) => {
            impl Float for $t {
                const FORMAT: Format = Format { bits: $bits };
                fn fma(self, b: Self, c: Self) -> Self {
                    self.mul_add(b, c)
                }
                fn bits(self) -> u64 {
                    self.to_bits().into()
                }
                fn of_bits(b: u64) -> Self {
                    <$t>::from_bits(b as $u)
                }
                fn of(v: f64) -> Self {
                    v as $t
                }
                fn abs(self) -> Self {
                    <$t>::abs(self)
                }
            }
        };
    }
    float!(f32, u32, 32);
    float!(f64, u64, 64);

    fn off_by<F: Float>(x: F, ulps: i64) -> F {
        F::of_bits(x.bits().wrapping_add_signed(ulps))
    }

    fn bracket<F: Float>(q: F, r: F) -> (F, F, F) {
        let t1 = if r < F::of(0.0) { off_by(q, -1) } else { q };
        let t2 = off_by(t1, 1);
        (t1, t2, t2 - t1)
    }

    fn div<F: Float>(a: F, b: F, y0: F) -> F {
        let (x, y, one) = (a.abs(), b.abs(), F::of(1.0));
        let e = (-y).fma(y0, one);
        let y1 = y0.fma(e, y0);
        let q0 = x * y1;
        let q = (-y).fma(q0, x).fma(y1, q0);
        let (t1, t2, g) = bracket(q, (-y).fma(q, x));
        let r1 = (-y).fma(t1, x);
        let h = y * g * F::of(0.5);
        let up = r1 > h || (r1 == h && t1.bits() & 1 == 1);
        let mag = if up { t2 } else { t1 };
        let sign = 1u64 << (F::FORMAT.bits - 1);
        F::of_bits(mag.bits() | ((a.bits() ^ b.bits()) & sign))
    }

    fn sqrt<F: Float>(x: F, y0: F) -> F {
        let half = F::of(0.5);
        let (s0, h0) = (x * y0, half * y0);
        let e = (-s0).fma(h0, half);
        let (s1, h1) = (s0.fma(e, s0), h0.fma(e, h0));
        let s = (-s1).fma(s1, x).fma(h1, s1);
        let (t1, t2, g) = bracket(s, (-s).fma(s, x));
        let v = (-g).fma(t1, (-t1).fma(t1, x));
        if v > F::of(0.0) {
            t2
        } else {
            t1
        }
    }

    fn exponent<F: Float>(v: F) -> i64 {
        let f = F::FORMAT;
        (v.bits() >> f.significand_bits() & f.exponent_mask()) as i64
    }

    /// The emitted range test, on the biased exponents.
    fn div_in_range<F: Float>(a: F, b: F) -> bool {
        let f = F::FORMAT;
        let (ea, eb) = (exponent(a), exponent(b));
        let (lo, hi) = f.quotient_exponents();
        let dividend = (f.min_operand_exponent()..=f.max_exponent()).contains(&ea)
            && (lo - f.bias()..=hi - f.bias()).contains(&(ea - eb));
        (dividend || a == F::of(0.0)) && (1..=f.max_divisor_exponent()).contains(&eb)
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// A float with a biased exponent in `lo..=hi` and a significand that is often
        /// one of the hard ones (0, 1, all ones, all ones but the last).
        fn float<F: Float>(&mut self, lo: i64, hi: i64) -> F {
            let e = lo + (self.next() % (hi - lo + 1) as u64) as i64;
            let m = F::FORMAT.significand_bits();
            let all = (1u64 << m) - 1;
            let v = self.next();
            let significand = match v % 8 {
                0 => 0,
                1 => 1,
                2 => all,
                3 => all - 1,
                4 => v >> 8 & 0x7f,
                _ => v >> 8 & all,
            };
            let sign = (self.next() & 1) << (F::FORMAT.bits - 1);
            F::of_bits(sign | (e as u64) << m | significand)
        }
    }

    fn check<F: Float + std::fmt::Debug>(
        cases: u32,
        want_div: impl Fn(F, F) -> F,
        want_sqrt: impl Fn(F) -> F,
    ) {
        let f = F::FORMAT;
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let lo = f.min_operand_exponent();

        let mut divs = 0;
        for i in 0..cases {
            let ulps = i64::from(i % 129) - 64;
            let a: F = match i % 1000 {
                0 => F::of(0.0),
                _ => rng.float(lo, f.max_exponent()),
            };
            let b: F = rng.float(1, f.max_divisor_exponent());
            if div_in_range(a, b) {
                let got = div(a, b, off_by(F::of(1.0 / f64_of(b.abs())), ulps));
                assert_eq!(got.bits(), want_div(a, b).bits(), "{a:?} / {b:?}");
                divs += 1;
            }
            let x: F = rng.float::<F>(lo, f.max_exponent()).abs();
            let got = sqrt(x, off_by(F::of(1.0 / f64_of(x).sqrt()), ulps));
            assert_eq!(got.bits(), want_sqrt(x).bits(), "sqrt {x:?}");
        }
        assert!(divs > cases / 2, "{divs} divisions of {cases}");
    }

    fn f64_of<F: Float>(v: F) -> f64 {
        if F::FORMAT.bits == 32 {
            f64::from(f32::from_bits(v.bits() as u32))
        } else {
            f64::from_bits(v.bits())
        }
    }

    #[test]
    fn newton_division_and_square_root_round_correctly_in_their_range() {
        check::<f32>(
            2_000_000,
            |a, b| (f64::from(a) / f64::from(b)) as f32,
            |x| f64::from(x).sqrt() as f32,
        );
        check::<f64>(2_000_000, |a, b| a / b, f64::sqrt);
    }
}
