//! f32 `div.rn` and `sqrt.rn` from Newton steps on a fused `Fma` ([`Helper::FusedF32`],
//! `FloatPath::Fused`), for devices whose `Fma` a probe found fused: no f64, a dozen
//! instructions on the common path.
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
//! guarantees: `|b|` and `1/|b|` normal, `|a| ≥ 2^-95`, the quotient's exponent in
//! `[2^-125, 2^123]`, or `a = ±0`; `x ≥ 2^-95` for the square root. Other operands (zeros,
//! subnormals, infinities, NaNs, extreme exponents) take the exact f64 path, or the
//! integer one without f64. A CPU model of these steps, with the device's initial
//! approximations off by up to 64 ulps, is checked against correctly rounded results
//! in `tests/ops/formats.rs`.

use rspirv::dr::Operand;
use rspirv::spirv::{SelectionControl, Word};

use super::helpers::{Helper, SoftOp};
use super::{glsl, FnEmitter, R};
use crate::types::Scalar;
use ptxvk_lower::ir::Rounding;

/// The biased-exponent bounds of the operands on the Newton path (module doc).
const MIN_DIVIDEND_EXP: u32 = 32;
const MAX_DIVISOR_EXP: u32 = 252;
const QUOTIENT_EXP: (i32, i32) = (2, 250);
const MIN_RADICAND_EXP: u32 = 32;

/// GLSL.std.450 `InverseSqrt`.
const INVERSE_SQRT: u32 = 32;

impl FnEmitter<'_> {
    /// The body of [`Helper::FusedF32`]: `op` (`Div` on `p[0]`, `p[1]`, or `Sqrt` on
    /// `p[0]`), by Newton steps where the operands allow and by the exact f64 path (or
    /// with `soft` the integer one) elsewhere.
    pub(super) fn fused_f32(&mut self, op: SoftOp, soft: bool, p: &[Word]) -> R<Word> {
        let (s32, f32s) = (Scalar::Int(32), Scalar::Float(32));
        let (it, ft, bt) = (self.ty(s32), self.ty(f32s), self.ty(Scalar::Bool));
        let exponent = |e: &mut Self, x: Word| -> R<Word> {
            let bits = e.b.bitcast(it, None, x)?;
            let k23 = e.konst(s32, 23);
            let shifted = e.b.shift_right_logical(it, None, bits, k23)?;
            let ff = e.konst(s32, 0xff);
            Ok(e.b.bitwise_and(it, None, shifted, ff)?)
        };
        let in_range = |e: &mut Self, v: Word, lo: i64, hi: i64| -> R<Word> {
            let lo_c = e.konst(s32, lo as u64 & 0xffff_ffff);
            let hi_c = e.konst(s32, hi as u64 & 0xffff_ffff);
            let ge = e.b.s_greater_than_equal(bt, None, v, lo_c)?;
            let le = e.b.s_less_than_equal(bt, None, v, hi_c)?;
            Ok(e.b.logical_and(bt, None, ge, le)?)
        };
        let fast = match op {
            SoftOp::Div => {
                let (ea, eb) = (exponent(self, p[0])?, exponent(self, p[1])?);
                let a_ok = in_range(self, ea, MIN_DIVIDEND_EXP.into(), 254)?;
                let b_ok = in_range(self, eb, 1, MAX_DIVISOR_EXP.into())?;
                let diff = self.b.i_sub(it, None, ea, eb)?;
                let (lo, hi) = QUOTIENT_EXP;
                let q_ok = in_range(self, diff, i64::from(lo) - 127, i64::from(hi) - 127)?;
                let aq = self.b.logical_and(bt, None, a_ok, q_ok)?;
                // A zero dividend takes the steps too: every residual is zero, and the
                // result the zero of the quotient's sign.
                let zero = self.konst(s32, 0);
                let a_zero = self.b.i_equal(bt, None, ea, zero)?;
                let a_bits = self.b.bitcast(it, None, p[0])?;
                let two = self.konst(s32, 2);
                let doubled = self.b.shift_left_logical(it, None, a_bits, two)?;
                let no_mantissa = self.b.i_equal(bt, None, doubled, zero)?;
                let a_is_zero = self.b.logical_and(bt, None, a_zero, no_mantissa)?;
                let dividend = self.b.logical_or(bt, None, aq, a_is_zero)?;
                self.b.logical_and(bt, None, dividend, b_ok)?
            }
            _ => {
                // Positive (sign bit clear) and in range.
                let bits = self.b.bitcast(it, None, p[0])?;
                let lo = self.konst(s32, u64::from(MIN_RADICAND_EXP) << 23);
                let hi = self.konst(s32, 0x7f80_0000);
                let ge = self.b.s_greater_than_equal(bt, None, bits, lo)?;
                let lt = self.b.s_less_than(bt, None, bits, hi)?;
                self.b.logical_and(bt, None, ge, lt)?
            }
        };
        let (fast_l, slow_l, merge) = (self.b.id(), self.b.id(), self.b.id());
        self.b.selection_merge(merge, SelectionControl::NONE)?;
        self.b.branch_conditional(fast, fast_l, slow_l, [])?;
        self.b.begin_block(Some(fast_l))?;
        let quick = match op {
            SoftOp::Div => self.newton_div(p[0], p[1])?,
            _ => self.newton_sqrt(p[0])?,
        };
        self.b.branch(merge)?;
        self.b.begin_block(Some(slow_l))?;
        let slow = match (op, soft) {
            (SoftOp::Div, false) => self.call(Helper::DivF32(Rounding::Nearest), &p[..2])?,
            (_, false) => self.call(Helper::SqrtF32(Rounding::Nearest), &p[..1])?,
            (op, true) => self.call(Helper::SoftF32(op, Rounding::Nearest), p)?,
        };
        self.b.branch(merge)?;
        self.b.begin_block(Some(merge))?;
        Ok(self.b.phi(ft, None, [(quick, fast_l), (slow, slow_l)])?)
    }

    /// The device's (fused) `Fma` on f32.
    fn fma32(&mut self, a: Word, b: Word, c: Word) -> R<Word> {
        let ft = self.ty(Scalar::Float(32));
        let ops = [a, b, c].map(Operand::IdRef);
        Ok(self.b.ext_inst(ft, None, self.g.glsl, glsl::FMA, ops)?)
    }

    /// The float whose bits are `x`'s plus `delta` (a neighbour of a positive float).
    fn bits_step(&mut self, x: Word, delta: i32) -> R<Word> {
        let s32 = Scalar::Int(32);
        let (it, ft) = (self.ty(s32), self.ty(Scalar::Float(32)));
        let bits = self.b.bitcast(it, None, x)?;
        let d = self.konst(s32, delta as u32 as u64);
        let moved = self.b.i_add(it, None, bits, d)?;
        Ok(self.b.bitcast(ft, None, moved)?)
    }

    /// `(t1, t2, g)`: the float at or below the exact value whose candidate is `q` and
    /// whose residual (exact value minus candidate, in sign) is `r`, the next float, and
    /// their distance.
    fn bracket(&mut self, q: Word, r: Word) -> R<(Word, Word, Word)> {
        let f32s = Scalar::Float(32);
        let (ft, bt) = (self.ty(f32s), self.ty(Scalar::Bool));
        let zero = self.konst(f32s, 0);
        let below = self.b.f_ord_less_than(bt, None, r, zero)?;
        let prev = self.bits_step(q, -1)?;
        let t1 = self.b.select(ft, None, below, prev, q)?;
        let t2 = self.bits_step(t1, 1)?;
        let g = self.b.f_sub(ft, None, t2, t1)?;
        Ok((t1, t2, g))
    }

    /// `a / b` to nearest on the Newton path (module doc).
    fn newton_div(&mut self, a: Word, b: Word) -> R<Word> {
        let (s32, f32s) = (Scalar::Int(32), Scalar::Float(32));
        let (it, ft, bt) = (self.ty(s32), self.ty(f32s), self.ty(Scalar::Bool));
        let (x, y) = (self.glsl1(ft, glsl::FABS, a)?, self.glsl1(ft, glsl::FABS, b)?);
        let neg_y = self.b.f_negate(ft, None, y)?;
        let one = self.konst(f32s, 1f32.to_bits().into());
        let half = self.konst(f32s, 0.5f32.to_bits().into());
        // 1/|b| to Vulkan's precision, then one Newton step.
        let y0 = self.b.f_div(ft, None, one, y)?;
        let e = self.fma32(neg_y, y0, one)?;
        let y1 = self.fma32(y0, e, y0)?;
        let q0 = self.b.f_mul(ft, None, x, y1)?;
        let r0 = self.fma32(neg_y, q0, x)?;
        let q = self.fma32(r0, y1, q0)?;
        let r = self.fma32(neg_y, q, x)?;
        let (t1, t2, g) = self.bracket(q, r)?;
        // Above the midpoint: |a| - |b|·t1 > |b|·g/2; a tie goes to the even one.
        let r1 = self.fma32(neg_y, t1, x)?;
        let yg = self.b.f_mul(ft, None, y, g)?;
        let h = self.b.f_mul(ft, None, yg, half)?;
        let above = self.b.f_ord_greater_than(bt, None, r1, h)?;
        let tie = self.b.f_ord_equal(bt, None, r1, h)?;
        let t1_bits = self.b.bitcast(it, None, t1)?;
        let one_i = self.konst(s32, 1);
        let low = self.b.bitwise_and(it, None, t1_bits, one_i)?;
        let odd = self.b.i_equal(bt, None, low, one_i)?;
        let tie_up = self.b.logical_and(bt, None, tie, odd)?;
        let up = self.b.logical_or(bt, None, above, tie_up)?;
        let mag = self.b.select(ft, None, up, t2, t1)?;
        // The sign of the quotient: sign(a) xor sign(b).
        let (ai, bi) = (self.b.bitcast(it, None, a)?, self.b.bitcast(it, None, b)?);
        let sx = self.b.bitwise_xor(it, None, ai, bi)?;
        let sign_mask = self.konst(s32, 0x8000_0000);
        let sign = self.b.bitwise_and(it, None, sx, sign_mask)?;
        let mag_bits = self.b.bitcast(it, None, mag)?;
        let signed = self.b.bitwise_or(it, None, mag_bits, sign)?;
        Ok(self.b.bitcast(ft, None, signed)?)
    }

    /// `sqrt(x)` to nearest on the Newton path (module doc).
    fn newton_sqrt(&mut self, x: Word) -> R<Word> {
        let f32s = Scalar::Float(32);
        let (ft, bt) = (self.ty(f32s), self.ty(Scalar::Bool));
        let half = self.konst(f32s, 0.5f32.to_bits().into());
        let zero = self.konst(f32s, 0);
        // 1/sqrt(x) to Vulkan's precision, then one coupled (Goldschmidt) step for
        // sqrt(x) (`s`) and 1/(2 sqrt(x)) (`h`), and a correction of `s`.
        let y0 = self.glsl1(ft, INVERSE_SQRT, x)?;
        let s0 = self.b.f_mul(ft, None, x, y0)?;
        let h0 = self.b.f_mul(ft, None, half, y0)?;
        let neg_s0 = self.b.f_negate(ft, None, s0)?;
        let e = self.fma32(neg_s0, h0, half)?;
        let s1 = self.fma32(s0, e, s0)?;
        let h1 = self.fma32(h0, e, h0)?;
        let neg_s1 = self.b.f_negate(ft, None, s1)?;
        let d = self.fma32(neg_s1, s1, x)?;
        let s = self.fma32(d, h1, s1)?;
        let neg_s = self.b.f_negate(ft, None, s)?;
        let r = self.fma32(neg_s, s, x)?;
        let (t1, t2, g) = self.bracket(s, r)?;
        // Above the midpoint: (x - t1²) - g·t1 > 0.
        let neg_t1 = self.b.f_negate(ft, None, t1)?;
        let r1 = self.fma32(neg_t1, t1, x)?;
        let neg_g = self.b.f_negate(ft, None, g)?;
        let v = self.fma32(neg_g, t1, r1)?;
        let up = self.b.f_ord_greater_than(bt, None, v, zero)?;
        Ok(self.b.select(ft, None, up, t2, t1)?)
    }
}

/// A CPU model of the steps above, on Rust's fused `mul_add`, with the device's initial
/// approximations (`1/b`, `1/sqrt(x)`) off by up to 64 ulps (Vulkan allows 2.5 and 2),
/// against correctly rounded results (f64's quotient and square root of f32 operands,
/// rounded once more to f32, which is innocuous: 53 ≥ 2·24 + 2).
#[cfg(test)]
mod tests {
    use super::*;

    fn off_by(x: f32, ulps: i32) -> f32 {
        f32::from_bits(x.to_bits().wrapping_add_signed(ulps))
    }

    fn bracket(q: f32, r: f32) -> (f32, f32, f32) {
        let t1 = if r < 0.0 { off_by(q, -1) } else { q };
        let t2 = off_by(t1, 1);
        (t1, t2, t2 - t1)
    }

    fn div(a: f32, b: f32, y0: f32) -> f32 {
        let (x, y) = (a.abs(), b.abs());
        let e = (-y).mul_add(y0, 1.0);
        let y1 = y0.mul_add(e, y0);
        let q0 = x * y1;
        let q = (-y).mul_add(q0, x).mul_add(y1, q0);
        let (t1, t2, g) = bracket(q, (-y).mul_add(q, x));
        let r1 = (-y).mul_add(t1, x);
        let h = y * g * 0.5;
        let up = r1 > h || (r1 == h && t1.to_bits() & 1 == 1);
        let mag = if up { t2 } else { t1 };
        f32::from_bits(mag.to_bits() | ((a.to_bits() ^ b.to_bits()) & 0x8000_0000))
    }

    fn sqrt(x: f32, y0: f32) -> f32 {
        let (s0, h0) = (x * y0, 0.5 * y0);
        let e = (-s0).mul_add(h0, 0.5);
        let (s1, h1) = (s0.mul_add(e, s0), h0.mul_add(e, h0));
        let s = (-s1).mul_add(s1, x).mul_add(h1, s1);
        let (t1, t2, g) = bracket(s, (-s).mul_add(s, x));
        let v = (-g).mul_add(t1, (-t1).mul_add(t1, x));
        if v > 0.0 {
            t2
        } else {
            t1
        }
    }

    /// The emitted range test, on the biased exponents.
    fn div_in_range(a: f32, b: f32) -> bool {
        let exp = |v: f32| (v.to_bits() >> 23 & 0xff) as i32;
        let (ea, eb) = (exp(a), exp(b));
        let dividend = (MIN_DIVIDEND_EXP as i32..=254).contains(&ea)
            && (QUOTIENT_EXP.0 - 127..=QUOTIENT_EXP.1 - 127).contains(&(ea - eb));
        (dividend || a == 0.0) && (1..=MAX_DIVISOR_EXP as i32).contains(&eb)
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// A mantissa, often one of the hard ones (0, 1, all ones, all ones but one).
        fn mantissa(&mut self) -> u32 {
            let v = self.next();
            match v % 8 {
                0 => 0,
                1 => 1,
                2 => 0x7f_ffff,
                3 => 0x7f_fffe,
                4 => (v >> 8) as u32 & 0x7f,
                _ => (v >> 8) as u32 & 0x7f_ffff,
            }
        }
    }

    #[test]
    fn newton_division_and_square_root_round_correctly_in_their_range() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut divs, mut sqrts) = (0, 0);
        for i in 0..2_000_000u32 {
            let ulps = (i % 129) as i32 - 64;
            let ea = MIN_DIVIDEND_EXP + (rng.next() % u64::from(255 - MIN_DIVIDEND_EXP)) as u32;
            let eb = 1 + (rng.next() % u64::from(MAX_DIVISOR_EXP)) as u32;
            let sign = (rng.next() as u32) & 0x8000_0000;
            let a = match i % 1000 {
                0 => f32::from_bits(sign),
                _ => f32::from_bits(sign | ea << 23 | rng.mantissa()),
            };
            let b = f32::from_bits((rng.next() as u32 & 0x8000_0000) | eb << 23 | rng.mantissa());
            if div_in_range(a, b) {
                let want = (f64::from(a) / f64::from(b)) as f32;
                let got = div(a, b, off_by(1.0 / b.abs(), ulps));
                assert_eq!(got.to_bits(), want.to_bits(), "{a:e} / {b:e}");
                divs += 1;
            }
            let ex = MIN_RADICAND_EXP + (rng.next() % u64::from(255 - MIN_RADICAND_EXP)) as u32;
            let x = f32::from_bits(ex << 23 | rng.mantissa());
            let want = f64::from(x).sqrt() as f32;
            let got = sqrt(x, off_by(1.0 / x.sqrt(), ulps));
            assert_eq!(got.to_bits(), want.to_bits(), "sqrt {x:e}");
            sqrts += 1;
        }
        assert!(divs > 1_000_000 && sqrts == 2_000_000, "{divs} divisions, {sqrts} roots");
    }
}
