//! The fast paths of exact f64 `fma.rn` and `div.rn` on a device with f64 but an
//! unfused `Fma` (`FloatPath::F64`, which `pass::emulate` turns into calls of the
//! integer routines `Routine::FmaF64` and `Routine::DivF64`): for `fma`, error-free
//! transformations in the device's f64 arithmetic (about 100 SPIR-V instructions
//! with hidden operands, where the routine runs 416); for `div`, the device's quotient
//! proved by an exact residual (about 65, where the routine runs 641).
//! Each holds for almost all finite operands; the others (zeros, subnormals,
//! infinities, NaN, extreme exponents, results near the subnormal range) call the
//! routine behind a branch ([`FnEmitter::fast_unless`], which a SIMD device such as
//! lavapipe skips when no invocation takes it). Both are correctly rounded, so they
//! give the same bits and the choice is invisible.
//!
//! What Vulkan guarantees (as `lower/src/routines/fast_f32.rs`): `OpFAdd`, `OpFSub`,
//! `OpFMul` of f64 are correctly rounded to nearest even (`NoContraction`); `OpFDiv`
//! only gives `div`'s candidate, whose accuracy nothing relies on, and nothing uses
//! `Fma`.
//!
//! *Driver folding*: both fast paths show their operands to the driver
//! ([`FnEmitter::unhidden`]) even where it folds operations with known operands
//! (`FloatConstants::Hidden`; the foldings are listed in
//! `lower/src/routines/fast_f32.rs`, *Driver folding*). Each folding gives the right
//! value for finite operands, at worst with
//! the wrong sign of a zero, and the value of a correctly rounded sum, difference or
//! product of finite operands does not depend on the signs of zero operands (IEEE 754
//! §6.3 only fixes the sign of a zero result). So, by induction over the operations,
//! every value of a fast path whose guard holds (every operand and intermediate
//! finite: the guards below exclude overflow) is right, and only a zero may carry the
//! wrong sign. No zero's sign reaches the result: `fma`'s result `RN(s + v)` has
//! `s ≠ 0` (the guard), and so its sign and bits follow from the values; `v`'s rounding
//! to odd reads the last bit of a sum (0 for both zeros), whether its error is zero,
//! and the signs of sum and error by ordered comparisons with 0, which treat both zeros
//! alike, and steps only a non-zero sum. `div`'s test compares `|residual|` with a
//! positive bound. The device's quotient is a candidate: folded or not, the test
//! decides. Where a guard fails the fast result is not used. This saves two integer
//! ORs per operation on lavapipe (about 60 for `fma`, 30 for `div`).
//!
//! The scheme, with `RN` the f64 rounding to nearest even and `x = a·b + c`:
//! 1. `a·b = p + e` exactly: Veltkamp's split of `a` and `b` into 26- and 27-bit
//!    halves (`γ = (2^27 + 1)·a`, `a_hi = γ - (γ - a)`, `a_lo = a - a_hi`) and
//!    Dekker's product `p = RN(a·b)`, `e = ((a_hi·b_hi - p) + a_hi·b_lo + a_lo·b_hi) +
//!    a_lo·b_lo` (Dekker, "A floating-point technique for extending the available
//!    precision", Numer. Math. 18, 1971, Theorem 5.7 with 4.7; Boldo, "Pitfalls of a
//!    full floating-point proof: example on the formal proof of the Veltkamp/Dekker
//!    algorithms", IJCAR 2006, for radix 2 and odd precision). It needs no overflow
//!    (`γ` and `a_hi·b_hi`) and no underflow (every partial product a multiple of
//!    2^-1074): the guard takes normal `a`, `b` with unbiased exponents `e_a, e_b ≤ 995`
//!    (`|γ| < 2^1024`), `-960 ≤ e_a + e_b ≤ 1021` (`|a·b| < 2^1023`, and the partial
//!    products are multiples of `2^(e_a + e_b - 104) ≥ 2^-1064`).
//! 2. `c + p = s + t` exactly, `s = RN(c + p)` (Knuth's TwoSum, which holds for all
//!    finite operands barring overflow: the guard takes `|c| < 2^1022`, so
//!    `|c + p| < 1.5·2^1023`).
//! 3. `v = RO(t + e)`, rounding to odd: `RN(t + e)` stepped one ulp toward the exact
//!    sum when it is inexact (its TwoSum error non-zero) and even (`odd_sum_unhidden`).
//! 4. `r = RN(s + v) = RN(x)`: Boldo & Melquiond, "Emulation of FMA and correctly
//!    rounded sums: proved algorithms using rounding to odd", IEEE Trans. Computers
//!    57(4), 2008, Section 5.3 (the emulated FMA, this very sequence, proved for any
//!    precision ≥ 5 without underflow). Underflow: the guard also sends to the routine
//!    every `s` below 2^-969 in magnitude (zero included), so `r` is normal; `t + e`
//!    may still be subnormal, but then it is exact (a sum that underflows is exact:
//!    Hauser, "Handling floating-point exceptions in numeric programs", TOPLAS 1996,
//!    Theorem 3.4.1), so `v = t + e` and `r = RN(s + t + e)` directly.
//!
//! A zero `c` is inside the guard and needs no case of its own: `s = p`, `t = ±0`,
//! `v = e`, `r = RN(p + e) = p`, whose sign is the product's (non-zero) one.
//!
//! *div.rn.f64* ([`FnEmitter::div_f64_fast`], also `rcp.rn.f64` as `1.0 / x`): the
//! device's quotient `q0 = OpFDiv(a, b)`, of any accuracy, is `RN(a/b)` iff
//! `|a/b - q0| < h`, `h` the distance from `q0` to the midpoint on the side of `a/b`:
//! half an ulp, `2^(e_q - 53)`, taken as a quarter, `2^(e_q - 54)`, on both sides when
//! `q0` is a power of two (the grid below it is finer), which only sends more to the
//! routine. A quotient is never a midpoint (`a = m·b` with `m` of 54 significant bits
//! would need `a` to have more than 53), so `<` loses nothing. Scaled by `|b|`:
//! `|a - q0·b| < |b|·h`. With `q0·b = p + e` exactly (step 1's product, under the same
//! guard on `q0` and `b`, and `e_q ≥ -968` so that `h` and `|b|·h` are normal and
//! exact), `a - q0·b = (a - p) - e`: where `p` lies within a factor 2 of `a`, `a - p`
//! is exact (Sterbenz's lemma), `RN((a - p) - e)` is one monotone rounding and `|b|·h`
//! an f64, so the rounded residual is below the bound only if the exact one is; where
//! it does not, `|a - p| ≥ |p|/2` while `|b|·h ≤ |p|·2^-52`, so the test fails, as it
//! does for a NaN or infinite `q0`, residual or operand. The other operands (zero or
//! subnormal `b` or quotient, extreme exponents) and quotients the test cannot prove
//! take [`Routine::DivF64`]: none on lavapipe, whose `OpFDiv` is the CPU's correctly
//! rounded division, but for those.

use rspirv::spirv::{SelectionControl, Word};

use ptxvk_lower::ir::{BinaryOp, Rounding, Routine};

use super::helpers::Helper;
use super::{FnEmitter, R};
use crate::types::Scalar;

/// Veltkamp's splitting constant for 53 bits, 2^27 + 1.
const SPLIT: f64 = 134_217_729.0;

/// The guard of the module doc on biased exponent fields (unbiased + 1023), as
/// `(low, count)`: the field is inside when `field - low < count`, unsigned.
/// `a` and `b`: normal, unbiased exponent at most 995.
const FACTOR: (u32, u32) = (1, 2018);
/// `e_a + e_b` in [-960, 1021]: the sum of the fields in [1086, 3067].
const PRODUCT: (u32, u32) = (1086, 1982);
/// `c`: below 2^1022 in magnitude (zeros and subnormals included).
const ADDEND: (u32, u32) = (0, 2045);
/// `s`: at least 2^-969 in magnitude, finite.
const SUM: (u32, u32) = (54, 1993);
/// The quotient `q0` of `div.rn`: a factor (as `a` above) whose half ulp is normal.
const QUOTIENT: (u32, u32) = (55, 1964);

impl FnEmitter<'_> {
    /// `exact(self)` where `slow` holds, else `fast(self)`, as a selection (values of
    /// type `ty`): on a SIMD device such as lavapipe an arm that no invocation of a
    /// group takes is skipped, so the rare exact path costs little. Neither arm may
    /// branch.
    pub(super) fn fast_unless(
        &mut self,
        slow: Word,
        ty: Word,
        fast: impl FnOnce(&mut Self) -> R<Word>,
        exact: impl FnOnce(&mut Self) -> R<Word>,
    ) -> R<Word> {
        let (fast_l, slow_l, merge) = (self.b.id(), self.b.id(), self.b.id());
        self.b.selection_merge(merge, SelectionControl::NONE)?;
        self.b.branch_conditional(slow, slow_l, fast_l, [])?;
        self.b.begin_block(Some(fast_l))?;
        let quick = fast(self)?;
        self.b.branch(merge)?;
        self.b.begin_block(Some(slow_l))?;
        let careful = exact(self)?;
        self.b.branch(merge)?;
        self.b.begin_block(Some(merge))?;
        Ok(self.b.phi(ty, None, [(quick, fast_l), (careful, slow_l)])?)
    }
}

impl FnEmitter<'_> {
    /// The biased exponent field of the f64 bit pattern `bits` (a 64-bit integer), as
    /// a 32-bit integer: the high word's bits 20..31 less the sign.
    fn f64_exponent_field(&mut self, bits: Word) -> R<Word> {
        let (i64s, i32s) = (Scalar::Int(64), Scalar::Int(32));
        let (lt, it) = (self.ty(i64s), self.ty(i32s));
        let k32 = self.konst(i64s, 32);
        let high = self.b.shift_right_logical(lt, None, bits, k32)?;
        let high = self.b.u_convert(it, None, high)?;
        let k20 = self.konst(i32s, 20);
        let field = self.b.shift_right_logical(it, None, high, k20)?;
        let mask = self.konst(i32s, 0x7ff);
        Ok(self.b.bitwise_and(it, None, field, mask)?)
    }

    /// Whether the 32-bit `field` lies outside `(low, count)` (the constants above).
    fn outside(&mut self, field: Word, (low, count): (u32, u32)) -> R<Word> {
        let i32s = Scalar::Int(32);
        let (it, bt) = (self.ty(i32s), self.ty(Scalar::Bool));
        let low = self.konst(i32s, u64::from(low));
        let off = self.b.i_sub(it, None, field, low)?;
        let count = self.konst(i32s, u64::from(count));
        Ok(self.b.u_greater_than_equal(bt, None, off, count)?)
    }

    /// Veltkamp's split of the f64 `x` into `(hi, lo)`, `x = hi + lo` exactly, each
    /// with at most 26 significant bits (module doc, step 1).
    fn veltkamp(&mut self, x: Word) -> R<(Word, Word)> {
        let f64s = Scalar::Float(64);
        let dt = self.ty(f64s);
        let k = self.konst(f64s, SPLIT.to_bits());
        let g = self.unhidden(BinaryOp::Mul, dt, k, x)?;
        let d = self.unhidden(BinaryOp::Sub, dt, g, x)?;
        let hi = self.unhidden(BinaryOp::Sub, dt, g, d)?;
        let lo = self.unhidden(BinaryOp::Sub, dt, x, hi)?;
        Ok((hi, lo))
    }

    /// Dekker's product of the f64 `x` and `y`: `(p, e)` with `p = RN(x·y)` and
    /// `x·y = p + e` exactly, under the guard of the module doc (step 1).
    fn two_product(&mut self, x: Word, y: Word) -> R<(Word, Word)> {
        let dt = self.ty(Scalar::Float(64));
        let (xh, xl) = self.veltkamp(x)?;
        let (yh, yl) = self.veltkamp(y)?;
        let p = self.unhidden(BinaryOp::Mul, dt, x, y)?;
        let hh = self.unhidden(BinaryOp::Mul, dt, xh, yh)?;
        let e = self.unhidden(BinaryOp::Sub, dt, hh, p)?;
        let hl = self.unhidden(BinaryOp::Mul, dt, xh, yl)?;
        let e = self.unhidden(BinaryOp::Add, dt, e, hl)?;
        let lh = self.unhidden(BinaryOp::Mul, dt, xl, yh)?;
        let e = self.unhidden(BinaryOp::Add, dt, e, lh)?;
        let ll = self.unhidden(BinaryOp::Mul, dt, xl, yl)?;
        let e = self.unhidden(BinaryOp::Add, dt, e, ll)?;
        Ok((p, e))
    }

    /// `fma.rn.f64` of the bit patterns `a`, `b`, `c` (64-bit integers, as the routine
    /// takes them), returning the result's bit pattern: the scheme of the module doc
    /// where its guard holds, else [`Routine::FmaF64`].
    pub(super) fn fma_f64_fast(&mut self, a: Word, b: Word, c: Word) -> R<Word> {
        let (r, bad) = self.fma_f64_parts(a, b, c)?;
        let lt = self.ty(Scalar::Int(64));
        self.fast_unless(
            bad,
            lt,
            |_| Ok(r),
            |e| e.call(Helper::Routine(Routine::FmaF64(Rounding::Nearest)), &[a, b, c]),
        )
    }

    /// The fast path of [`Self::fma_f64_fast`] without its branch: the scheme's result
    /// and whether the guard fails (then the result is meaningless).
    pub(super) fn fma_f64_parts(&mut self, a: Word, b: Word, c: Word) -> R<(Word, Word)> {
        let (i64s, f64s) = (Scalar::Int(64), Scalar::Float(64));
        let (lt, dt, bt) = (self.ty(i64s), self.ty(f64s), self.ty(Scalar::Bool));
        let it = self.ty(Scalar::Int(32));
        // The guard on the operands.
        let (ea, eb, ec) =
            (self.f64_exponent_field(a)?, self.f64_exponent_field(b)?, self.f64_exponent_field(c)?);
        let bad_a = self.outside(ea, FACTOR)?;
        let bad_b = self.outside(eb, FACTOR)?;
        let eab = self.b.i_add(it, None, ea, eb)?;
        let bad_ab = self.outside(eab, PRODUCT)?;
        let bad_c = self.outside(ec, ADDEND)?;
        // 1. a·b = p + e (Veltkamp, Dekker).
        let (fa, fb, fc) = (
            self.b.bitcast(dt, None, a)?,
            self.b.bitcast(dt, None, b)?,
            self.b.bitcast(dt, None, c)?,
        );
        let (p, e) = self.two_product(fa, fb)?;
        // 2. c + p = s + t (TwoSum).
        let s = self.unhidden(BinaryOp::Add, dt, fc, p)?;
        let bb = self.unhidden(BinaryOp::Sub, dt, s, fc)?;
        let sbb = self.unhidden(BinaryOp::Sub, dt, s, bb)?;
        let t1 = self.unhidden(BinaryOp::Sub, dt, fc, sbb)?;
        let t2 = self.unhidden(BinaryOp::Sub, dt, p, bb)?;
        let t = self.unhidden(BinaryOp::Add, dt, t1, t2)?;
        // 3. v = RO(t + e); 4. r = RN(s + v).
        let v = self.odd_sum_unhidden(t, e)?;
        let r = self.unhidden(BinaryOp::Add, dt, s, v)?;
        let r = self.b.bitcast(lt, None, r)?;
        // The guard on s.
        let s_bits = self.b.bitcast(lt, None, s)?;
        let es = self.f64_exponent_field(s_bits)?;
        let bad_s = self.outside(es, SUM)?;
        let bad = self.b.logical_or(bt, None, bad_a, bad_b)?;
        let bad = self.b.logical_or(bt, None, bad, bad_ab)?;
        let bad = self.b.logical_or(bt, None, bad, bad_c)?;
        let bad = self.b.logical_or(bt, None, bad, bad_s)?;
        Ok((r, bad))
    }
}

impl FnEmitter<'_> {
    /// `div.rn.f64` of the bit patterns `a`, `b` (64-bit integers), returning the
    /// result's bit pattern: the device's quotient where the test of the module doc
    /// (*div.rn.f64*) proves it correctly rounded, else [`Routine::DivF64`].
    pub(super) fn div_f64_fast(&mut self, a: Word, b: Word) -> R<Word> {
        let (q_bits, slow) = self.div_f64_parts(a, b)?;
        let lt = self.ty(Scalar::Int(64));
        self.fast_unless(
            slow,
            lt,
            |_| Ok(q_bits),
            |e| e.call(Helper::Routine(Routine::DivF64(Rounding::Nearest)), &[a, b]),
        )
    }

    /// The fast path of [`Self::div_f64_fast`] without its branch: the device's
    /// quotient and whether the test fails to prove it (then the routine decides).
    pub(super) fn div_f64_parts(&mut self, a: Word, b: Word) -> R<(Word, Word)> {
        let (i64s, i32s, f64s) = (Scalar::Int(64), Scalar::Int(32), Scalar::Float(64));
        let (lt, it, dt) = (self.ty(i64s), self.ty(i32s), self.ty(f64s));
        let bt = self.ty(Scalar::Bool);
        let (fa, fb) = (self.b.bitcast(dt, None, a)?, self.b.bitcast(dt, None, b)?);
        let q0 = self.b.f_div(dt, None, fa, fb)?;
        let q_bits = self.b.bitcast(lt, None, q0)?;
        // The guard: q0 and b as the factors of an exact product, and h normal.
        let (eq, eb) = (self.f64_exponent_field(q_bits)?, self.f64_exponent_field(b)?);
        let bad_q = self.outside(eq, QUOTIENT)?;
        let bad_b = self.outside(eb, FACTOR)?;
        let eqb = self.b.i_add(it, None, eq, eb)?;
        let bad_qb = self.outside(eqb, PRODUCT)?;
        // h = 2^(e_q - 53), half q0's ulp, or 2^(e_q - 54) when q0 is a power of two
        // (the grid below it is twice as fine).
        let frac_mask = self.konst(i64s, (1 << 52) - 1);
        let frac = self.b.bitwise_and(lt, None, q_bits, frac_mask)?;
        let zero = self.konst(i64s, 0);
        let power = self.b.i_equal(bt, None, frac, zero)?;
        let (half, quarter) = (self.konst(i32s, 53), self.konst(i32s, 54));
        let down = self.b.select(it, None, power, quarter, half)?;
        let h_field = self.b.i_sub(it, None, eq, down)?;
        let h_bits = self.b.u_convert(lt, None, h_field)?;
        let k52 = self.konst(i64s, 52);
        let h_bits = self.b.shift_left_logical(lt, None, h_bits, k52)?;
        let h = self.b.bitcast(dt, None, h_bits)?;
        // |a - q0·b| < |b|·h, with q0·b = p + e exactly.
        let (p, e) = self.two_product(q0, fb)?;
        let d = self.unhidden(BinaryOp::Sub, dt, fa, p)?;
        let r = self.unhidden(BinaryOp::Sub, dt, d, e)?;
        let r = self.glsl1(dt, super::glsl::FABS, r)?;
        let abs_b = self.glsl1(dt, super::glsl::FABS, fb)?;
        let bound = self.unhidden(BinaryOp::Mul, dt, abs_b, h)?;
        let rounded = self.b.f_ord_less_than(bt, None, r, bound)?;
        let bad = self.b.logical_or(bt, None, bad_q, bad_b)?;
        let bad = self.b.logical_or(bt, None, bad, bad_qb)?;
        let unproved = self.b.logical_not(bt, None, rounded)?;
        let slow = self.b.logical_or(bt, None, bad, unproved)?;
        Ok((q_bits, slow))
    }
}

/// A CPU model of [`FnEmitter::fma_f64_fast`] in Rust's IEEE f64 arithmetic (as
/// Vulkan's `OpFAdd`, `OpFSub`, `OpFMul`), against the interpreter's exact model
/// (`ptxvk_lower::interp::float`, exact rationals rounded once) and the host's
/// `f64::mul_add`. `PTXVK_ROUTINE_CASES` sets the number of cases (default 20,000).
#[cfg(test)]
mod tests {
    use super::super::fast_inputs::{cases, Rng, F64};
    use super::{ADDEND, FACTOR, PRODUCT, QUOTIENT, SPLIT, SUM};
    use ptxvk_lower::interp::float::{decode_f64, div_num, fma_num, Mode};
    use ptxvk_lower::ir::FloatFormat;

    fn field(x: f64) -> u32 {
        (x.to_bits() >> 52) as u32 & 0x7ff
    }

    fn outside(f: u32, (low, count): (u32, u32)) -> bool {
        f.wrapping_sub(low) >= count
    }

    fn split(x: f64) -> (f64, f64) {
        let g = SPLIT * x;
        let d = g - x;
        let hi = g - d;
        (hi, x - hi)
    }

    fn two_sum(a: f64, b: f64) -> (f64, f64) {
        let s = a + b;
        let bb = s - a;
        (s, (a - (s - bb)) + (b - bb))
    }

    /// `math.rs`'s `odd_sum_unhidden`.
    fn odd_sum(x: f64, y: f64) -> f64 {
        let (h, l) = two_sum(x, y);
        if l != 0.0 && h.to_bits() & 1 == 0 {
            let same = (h < 0.0) == (l < 0.0);
            f64::from_bits(if same { h.to_bits() + 1 } else { h.to_bits() - 1 })
        } else {
            h
        }
    }

    /// The fast path, `None` where it defers to the routine.
    fn fma_fast(a: f64, b: f64, c: f64) -> Option<f64> {
        let (ea, eb, ec) = (field(a), field(b), field(c));
        let bad = outside(ea, FACTOR)
            || outside(eb, FACTOR)
            || outside(ea + eb, PRODUCT)
            || outside(ec, ADDEND);
        let ((ah, al), (bh, bl)) = (split(a), split(b));
        let p = a * b;
        let e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
        let (s, t) = two_sum(c, p);
        let v = odd_sum(t, e);
        let r = s + v;
        (!bad && !outside(field(s), SUM)).then_some(r)
    }

    fn two_product(x: f64, y: f64) -> (f64, f64) {
        let ((xh, xl), (yh, yl)) = (split(x), split(y));
        let p = x * y;
        (p, (((xh * yh - p) + xh * yl) + xl * yh) + xl * yl)
    }

    /// [`super::FnEmitter::div_f64_fast`]'s test of the device's quotient `q0`.
    fn quotient_ok(a: f64, b: f64, q0: f64) -> bool {
        let (eq, eb) = (field(q0), field(b));
        let bad = outside(eq, QUOTIENT) || outside(eb, FACTOR) || outside(eq + eb, PRODUCT);
        let down = if q0.to_bits() & ((1 << 52) - 1) == 0 { 54 } else { 53 };
        let h = f64::from_bits(u64::from(eq.wrapping_sub(down)) << 52);
        let (p, e) = two_product(q0, b);
        let r = ((a - p) - e).abs();
        !bad && r < b.abs() * h
    }

    fn exact_div(a: f64, b: f64) -> u64 {
        div_num(decode_f64(a.to_bits()), decode_f64(b.to_bits()), FloatFormat::F64, Mode::Nearest)
    }

    fn exact_fma(a: f64, b: f64, c: f64) -> u64 {
        let n = |x: f64| decode_f64(x.to_bits());
        fma_num(n(a), n(b), n(c), FloatFormat::F64, Mode::Nearest)
    }

    /// Operands of f64 (`fast_inputs`).
    trait Draw {
        fn f64(&mut self) -> f64;
        fn moderate(&mut self) -> f64;
    }

    impl Draw for Rng {
        fn f64(&mut self) -> f64 {
            f64::from_bits(self.bits(F64))
        }

        fn moderate(&mut self) -> f64 {
            let x = self.bits(F64);
            f64::from_bits(self.moderate_bits(F64, x, 1000, 48))
        }
    }

    /// The f64 halfway between `x` and its successor in magnitude.
    fn midpoint_past(x: f64) -> (f64, f64) {
        let up = f64::from_bits(x.abs().to_bits() + 1);
        (x.abs(), (up - x.abs()) / 2.0)
    }

    #[test]
    fn fma_fast_path_rounds_correctly() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut fast, mut deferred) = (0u64, 0u64);
        for i in 0..cases() {
            let (a, b) =
                if i % 2 == 0 { (rng.f64(), rng.f64()) } else { (rng.moderate(), rng.moderate()) };
            let p = a * b;
            let c = match i % 5 {
                // Cancellation: c is -p, or -p a few ulps off, so that the result is
                // the product's rounding error.
                0 if p.is_finite() => {
                    -f64::from_bits(p.to_bits().wrapping_add(rng.next() % 5).wrapping_sub(2))
                }
                // Near a halfway point: c puts the sum just on, above or below the
                // midpoint past some value near p.
                1 if p.is_finite() && p != 0.0 => {
                    let (near, half) = midpoint_past(p * (1.0 + (rng.next() % 1024) as f64));
                    let m = (near + half).copysign(p);
                    let nudge = match rng.next() % 3 {
                        0 => 0.0,
                        1 => m * 2f64.powi(-60 - (rng.next() % 40) as i32),
                        _ => -m * 2f64.powi(-60 - (rng.next() % 40) as i32),
                    };
                    let (hi, _) = two_sum(m, -p);
                    hi + nudge
                }
                // Results near and in the subnormal range.
                2 => (rng.next() % 3) as f64 * 2f64.powi(-1000 - (rng.next() % 70) as i32) - p,
                3 => rng.moderate(),
                _ => rng.f64(),
            };
            let want = exact_fma(a, b, c);
            let host = a.mul_add(b, c).to_bits();
            assert!(
                want == host || f64::from_bits(want).is_nan() && a.mul_add(b, c).is_nan(),
                "models disagree on fma({a:e}, {b:e}, {c:e})"
            );
            if let Some(got) = fma_fast(a, b, c) {
                assert_eq!(
                    got.to_bits(),
                    want,
                    "fma({a:e}, {b:e}, {c:e}) = {:e}, fast path {got:e}",
                    f64::from_bits(want)
                );
                fast += 1;
            } else {
                deferred += 1;
            }
        }
        assert!(fast > cases() / 3, "{fast} fast of {}", cases());
        eprintln!("fma.f64: {fast} on the fast path, {deferred} deferred");
    }

    #[test]
    fn division_test_accepts_only_the_rounded_quotient() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut fast = 0u64;
        for i in 0..cases() {
            let (a, b) =
                if i % 2 == 0 { (rng.f64(), rng.f64()) } else { (rng.moderate(), rng.moderate()) };
            // Every fourth case: `a` a product of `b`, so the quotient is exact or short
            // (powers of two among them).
            let a = if i % 4 == 1 && b.is_finite() {
                b * f64::from((rng.next() % 9) as u32 + 1) * 2f64.powi((rng.next() % 7) as i32 - 3)
            } else {
                a
            };
            let want = exact_div(a, b);
            assert!(
                want == (a / b).to_bits() || (a / b).is_nan(),
                "models disagree on {a:e} / {b:e}"
            );
            // The device's quotient: right, a few ulps off, or anything.
            let q0 = match i % 8 {
                0..=3 => a / b,
                4..=6 => f64::from_bits(want.wrapping_add(rng.next() % 7).wrapping_sub(3)),
                _ => rng.f64(),
            };
            if quotient_ok(a, b, q0) {
                assert_eq!(q0.to_bits(), want, "{a:e} / {b:e}: accepted {q0:e}");
                fast += 1;
            }
        }
        assert!(fast > cases() / 4, "{fast} fast of {}", cases());
        eprintln!("div.f64: {fast} of {} accepted", cases());
    }
}
