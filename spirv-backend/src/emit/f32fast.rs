//! The fast paths of exact f32 `fma.rn`, `div.rn` and `sqrt.rn` on a device with f64 but
//! an unfused `Fma` (`FloatPath::F64`): a cheap result, and a cheap test that proves it
//! correctly rounded for all but a few operands; those take the exact paths of `math.rs`
//! (TwoSum and round-to-odd for `fma`, exact residuals at both midpoints for `div` and
//! `sqrt`). Both paths give the same bits for every input, each being correctly
//! rounded, so the choice is invisible. The test selects between them with a branch
//! ([`FnEmitter::fast_unless`]): a SIMD device such as lavapipe skips an arm that no
//! invocation takes, so the exact paths, 3-5 times the cost, are almost never run
//! (measured: `docs/benchmarks.md`, *Float schemes*).
//!
//! What Vulkan guarantees (Vulkan specification, appendix *Vulkan Environment for
//! SPIR-V*, *Precision and Operation of SPIR-V Instructions*, whose table holds for
//! double precision too): `OpFAdd`, `OpFSub`, `OpFMul` and "conversions between types"
//! are correctly rounded, to nearest even (`NoContraction` keeps them apart, and the
//! driver-bug workaround of hidden operands, `float_op`, applies to them); `OpFDiv` is
//! only 2.5 ulp and `Sqrt` "inherited from 1.0 / inversesqrt()", so the schemes below
//! take only candidates from those two and never rely on their accuracy. No f64 value
//! below is subnormal (products of f32 are at least 2^-298), so no flushing matters.
//!
//! A *breakpoint* is a real number where rounding to f32 (to nearest) changes: the
//! midpoint of two consecutive f32 values, the one between `f32::MAX` and 2^128
//! included. Each has at most 25 significant bits and an exponent of at least -150, so
//! it is an f64. In a binade [2^e, 2^(e+1)) of f64 values with e ≥ -126 the
//! breakpoints are exactly the values whose 29 low significand bits are `0x1000_0000`
//! (the f32 grid there is 2^(e-23), and its midpoints lie 2^(e-24) past a grid point).
//!
//! * `fma.rn.f32` ([`FnEmitter::fma_f32`]): `P = a·b` is exact in f64 (48 bits, an
//!   exponent within [-298, 256]), and `S = RN64(P + c)`. If `RN32(S) ≠ RN32(P + c)`,
//!   rounding being monotone, a breakpoint `m` lies between `P + c` and `S`, both
//!   included; `m` is an f64, so unless `m = S` it would be nearer to `P + c` than `S`
//!   is. So `RN32(S)` is correct unless `S` is a breakpoint (29 low bits `0x1000_0000`)
//!   or lies in (0, 2^-126), where f32's grid is the subnormal one and the bit test
//!   does not apply ([`FnEmitter::f32_breakpoint_or_tiny`]); those take round-to-odd
//!   (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
//!   using rounding to odd", IEEE Trans. Computers 57(4), 2008, Theorem 1: rounding to
//!   odd in 53 ≥ 2·24 + 2 bits, then to nearest in 24, is correct). `S = 0` is exact
//!   (an f64 sum that rounds to zero is zero, with IEEE's sign, as the exact path's),
//!   and an `S` below 2^-1022 gives a zero of the right sign either way; infinities and
//!   NaN convert as the exact path converts them.
//! * `div.rn.f32` ([`FnEmitter::is_rounded_quotient`]): the device's f32 quotient `q0`
//!   is correctly rounded iff `|a/b - q0| < h`, with `h` the distance from `q0` to the
//!   breakpoint on the side of `a/b` (half an ulp; a quarter below a power of two), a
//!   tie going to the exact path. Scaled by `|b|`: `|a - q0·b| < |b|·h` (`h` is taken
//!   as the smaller one below powers of two on both sides, which only sends more to
//!   the exact path). `q0·b` is exact in f64 (48 bits), `a - q0·b` one rounding, which
//!   is monotone, and `|b|·h` an f64, so the rounded residual is below the bound only
//!   if the exact one is. Special operands fail the test by themselves: `b = ±0` makes
//!   the bound 0, `b = ±inf` or a non-finite `q0` the residual infinite or NaN, `a = 0`
//!   the residual `|q0·b| ≥ |b|·h`; a `q0` whose `h` is not a normal f32 (below
//!   2^-101) gives `h ≤ 0` or NaN. IEEE infinities and NaN hold in f64 arithmetic
//!   (`SignedZeroInfNanPreserve`).
//! * `sqrt.rn.f32` ([`FnEmitter::is_rounded_root`]): the device's f32 root `q0` is
//!   correctly rounded iff `(q0 - h)² < x < (q0 + h)²` (`h` half its ulp; a root is
//!   never a breakpoint), that is `-2·q0·h + h² < x - q0² < 2·q0·h + h²`: `q0²` exact,
//!   `x - q0²` one monotone rounding, both bounds exact (`2·q0·h` is a multiple of
//!   `4h²`, so adding `h²` takes 26 bits). A power-of-two `q0` (finer grid below) takes
//!   the exact path, and so do negative, zero, infinite and NaN `x`, which fail the test.
//!
//! So the fast paths are exact on every device; how often they are taken depends on
//! the device's f32 division and square root (always on lavapipe, whose are correctly
//! rounded), and for `fma` on about 2^-29 of sums besides f32-subnormal ones.

use rspirv::spirv::{SelectionControl, Word};

use ptxvk_lower::ir::BinaryOp;

use super::{FnEmitter, R};
use crate::types::Scalar;

/// The 29 low significand bits of an f64 that is an f32 breakpoint (module doc).
const BREAKPOINT: u64 = 0x1000_0000;
const LOW29: u64 = 0x1fff_ffff;
/// The bits of 2^-126 as f64, the smallest normal f32.
const MIN_NORMAL_F32_AS_F64: u64 = 897 << 52;

impl FnEmitter<'_> {
    /// Whether rounding the f64 `s`, the nearest f64 of some real value, to f32 might not
    /// round that value correctly (module doc): `s` is an f32 breakpoint, or lies in
    /// (0, 2^-126) in magnitude.
    pub(super) fn f32_breakpoint_or_tiny(&mut self, s: Word) -> R<Word> {
        let (i64s, i32s) = (Scalar::Int(64), Scalar::Int(32));
        let (lt, it, bt) = (self.ty(i64s), self.ty(i32s), self.ty(Scalar::Bool));
        // In 32-bit words, which a SIMD device handles twice as wide as 64-bit ones.
        let bits = self.b.bitcast(lt, None, s)?;
        let low = self.b.u_convert(it, None, bits)?;
        let k32 = self.konst(i64s, 32);
        let high = self.b.shift_right_logical(lt, None, bits, k32)?;
        let high = self.b.u_convert(it, None, high)?;
        let low_mask = self.konst(i32s, LOW29);
        let low = self.b.bitwise_and(it, None, low, low_mask)?;
        let breakpoint = self.konst(i32s, BREAKPOINT);
        let near = self.b.i_equal(bt, None, low, breakpoint)?;
        // 0 < |s| < 2^-126 on the high word, as one unsigned comparison of its magnitude
        // less 1 (an f64 whose high word is zero is 0 or below 2^-1022, where the f32
        // result is a zero of the right sign either way).
        let magnitude_mask = self.konst(i32s, 0x7fff_ffff);
        let magnitude = self.b.bitwise_and(it, None, high, magnitude_mask)?;
        let one = self.konst(i32s, 1);
        let less_one = self.b.i_sub(it, None, magnitude, one)?;
        let limit = self.konst(i32s, (MIN_NORMAL_F32_AS_F64 >> 32) - 1);
        let tiny = self.b.u_less_than(bt, None, less_one, limit)?;
        Ok(self.b.logical_or(bt, None, near, tiny)?)
    }

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
    /// The types the candidate tests work in: i32, f32, f64 and bool.
    fn candidate_types(&mut self) -> (Word, Word, Word, Word) {
        let it = self.ty(Scalar::Int(32));
        let ft = self.ty(Scalar::Float(32));
        let dt = self.ty(Scalar::Float(64));
        (it, ft, dt, self.ty(Scalar::Bool))
    }

    /// The f32 `q0`'s biased exponent field (in place) and fraction field, and the
    /// constant 0, which both candidate tests start from.
    fn exponent_and_fraction(&mut self, q0: Word) -> R<(Word, Word, Word)> {
        let (i32s, it) = (Scalar::Int(32), self.ty(Scalar::Int(32)));
        let bits = self.b.bitcast(it, None, q0)?;
        let exp_mask = self.konst(i32s, 0x7f80_0000);
        let exp = self.b.bitwise_and(it, None, bits, exp_mask)?;
        let frac_mask = self.konst(i32s, 0x007f_ffff);
        let frac = self.b.bitwise_and(it, None, bits, frac_mask)?;
        Ok((exp, frac, self.konst(i32s, 0)))
    }
}

impl FnEmitter<'_> {
    /// Whether the f32 `q0` is `a / b` rounded to nearest, for finite non-zero f32 `a`,
    /// `b` (the caller tests them), decided by one exact f64 residual; false also where
    /// it cannot tell cheaply (module doc, *div.rn.f32*).
    pub(super) fn is_rounded_quotient(&mut self, a: Word, b: Word, q0: Word) -> R<Word> {
        let (i32s, (it, ft, dt, bt)) = (Scalar::Int(32), self.candidate_types());
        let k = |e: &mut Self, v: u32| e.konst(i32s, u64::from(v));
        let (exp, frac, zero) = self.exponent_and_fraction(q0)?;
        // h: the distance from q0 to the breakpoint below it, 2^(e-24), or 2^(e-25) when
        // q0 is a power of two (the grid below it is twice as fine).
        let power = self.b.i_equal(bt, None, frac, zero)?;
        let (half, quarter) = (k(self, 24 << 23), k(self, 25 << 23));
        let down = self.b.select(it, None, power, quarter, half)?;
        let h_bits = self.b.i_sub(it, None, exp, down)?;
        let h = self.b.bitcast(ft, None, h_bits)?;
        let hd = self.b.f_convert(dt, None, h)?;
        // |a - q0·b| < |b|·h, exactly: q0·b is exact (48 bits), `a - q0·b` is one
        // rounding, monotone, and |b|·h is an f64, so the rounded residual is below the
        // bound only if the exact one is.
        let (ad, bd, qd) = (
            self.b.f_convert(dt, None, a)?,
            self.b.f_convert(dt, None, b)?,
            self.b.f_convert(dt, None, q0)?,
        );
        let p = self.exact(BinaryOp::Mul, dt, qd, bd)?;
        let r = self.exact(BinaryOp::Sub, dt, ad, p)?;
        let r = self.glsl1(dt, super::glsl::FABS, r)?;
        let bd = self.glsl1(dt, super::glsl::FABS, bd)?;
        let bound = self.exact(BinaryOp::Mul, dt, bd, hd)?;
        Ok(self.b.f_ord_less_than(bt, None, r, bound)?)
    }
}

impl FnEmitter<'_> {
    /// Whether the f32 `q0` is `sqrt(x)` rounded to nearest for the f32 `x`, decided by
    /// one exact f64 residual; false also where it cannot tell cheaply (module doc,
    /// *sqrt.rn.f32*).
    pub(super) fn is_rounded_root(&mut self, x: Word, q0: Word) -> R<Word> {
        let (i32s, (it, ft, dt, bt)) = (Scalar::Int(32), self.candidate_types());
        let k = |e: &mut Self, v: u32| e.konst(i32s, u64::from(v));
        let (exp, frac, zero) = self.exponent_and_fraction(q0)?;
        // A power of two has a finer grid below it: left to the exact path.
        let not_power = self.b.i_not_equal(bt, None, frac, zero)?;
        // h = 2^(e-24), half q0's ulp.
        let half = k(self, 24 << 23);
        let h_bits = self.b.i_sub(it, None, exp, half)?;
        let h = self.b.bitcast(ft, None, h_bits)?;
        let (hd, xd, qd) = (
            self.b.f_convert(dt, None, h)?,
            self.b.f_convert(dt, None, x)?,
            self.b.f_convert(dt, None, q0)?,
        );
        // (q0 - h)² < x < (q0 + h)², that is -2·q0·h + h² < x - q0² < 2·q0·h + h²: q0²
        // is exact (48 bits), `x - q0²` one monotone rounding, and both bounds exact
        // (2·q0·h is a multiple of 4h², so adding h² takes 26 bits).
        let sq = self.exact(BinaryOp::Mul, dt, qd, qd)?;
        let d = self.exact(BinaryOp::Sub, dt, xd, sq)?;
        let t = self.exact(BinaryOp::Mul, dt, qd, hd)?;
        let t2 = self.exact(BinaryOp::Add, dt, t, t)?;
        let hh = self.exact(BinaryOp::Mul, dt, hd, hd)?;
        let upper = self.exact(BinaryOp::Add, dt, t2, hh)?;
        let lower = self.exact(BinaryOp::Sub, dt, hh, t2)?;
        let below = self.b.f_ord_less_than(bt, None, d, upper)?;
        let above = self.b.f_ord_greater_than(bt, None, d, lower)?;
        let inside = self.b.logical_and(bt, None, below, above)?;
        Ok(self.b.logical_and(bt, None, inside, not_power)?)
    }
}

/// A CPU model of the three tests, in Rust's IEEE f64 arithmetic (as Vulkan's `OpFAdd`,
/// `OpFSub`, `OpFMul` and conversions), with the device's f32 quotients and roots taken
/// anywhere within a few ulps of the correct ones (or arbitrary), against correctly
/// rounded results: `f32::mul_add`, and f64 division and square root rounded to f32,
/// which is innocuous (53 ≥ 2·24 + 2; Figueroa, "When is double rounding innocuous?",
/// SIGNUM 1995). `PTXVK_ROUTINE_CASES` sets the number of cases of each (default
/// 20,000; the offline run is 10^8).
#[cfg(test)]
mod tests {
    use super::super::fast_inputs::{cases, Rng, F32};
    use super::{BREAKPOINT, LOW29, MIN_NORMAL_F32_AS_F64};

    /// [`super::FnEmitter::f32_breakpoint_or_tiny`].
    fn breakpoint_or_tiny(s: f64) -> bool {
        let bits = s.to_bits();
        let (low, high) = (bits as u32 & LOW29 as u32, (bits >> 32) as u32);
        let tiny = (high & 0x7fff_ffff).wrapping_sub(1) < (MIN_NORMAL_F32_AS_F64 >> 32) as u32 - 1;
        low == BREAKPOINT as u32 || tiny
    }

    /// The fast path of [`super::FnEmitter::fma_f32`], `None` where it defers.
    fn fma_fast(a: f32, b: f32, c: f32) -> Option<f32> {
        let s = f64::from(a) * f64::from(b) + f64::from(c);
        (!breakpoint_or_tiny(s)).then_some(s as f32)
    }

    /// `h`'s f32 bits from `q0`'s exponent field `exp` less `down` (as the integer code).
    fn h_of(exp: u32, down: u32) -> f64 {
        f64::from(f32::from_bits(exp.wrapping_sub(down)))
    }

    /// [`super::FnEmitter::is_rounded_quotient`].
    fn quotient_ok(a: f32, b: f32, q0: f32) -> bool {
        let bits = q0.to_bits();
        let exp = bits & 0x7f80_0000;
        let down = if bits & 0x007f_ffff == 0 { 25 << 23 } else { 24 << 23 };
        let hd = h_of(exp, down);
        let (ad, bd, qd) = (f64::from(a), f64::from(b), f64::from(q0));
        let r = (ad - qd * bd).abs();
        r < bd.abs() * hd
    }

    /// [`super::FnEmitter::is_rounded_root`].
    fn root_ok(x: f32, q0: f32) -> bool {
        let bits = q0.to_bits();
        let exp = bits & 0x7f80_0000;
        let not_power = bits & 0x007f_ffff != 0;
        let hd = h_of(exp, 24 << 23);
        let (xd, qd) = (f64::from(x), f64::from(q0));
        let d = xd - qd * qd;
        let t2 = qd * hd + qd * hd;
        let hh = hd * hd;
        d < t2 + hh && d > hh - t2 && not_power
    }

    /// Operands of f32 (`fast_inputs`).
    trait Draw {
        fn f32(&mut self) -> f32;
        fn moderate(&mut self) -> f32;
    }

    impl Draw for Rng {
        fn f32(&mut self) -> f32 {
            f32::from_bits(self.bits(F32) as u32)
        }

        fn moderate(&mut self) -> f32 {
            let x = self.bits(F32);
            f32::from_bits(self.moderate_bits(F32, x, 100, 56) as u32)
        }
    }

    fn same(x: f32, y: f32) -> bool {
        x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan()
    }

    fn neighbour(x: f32, ulps: i32) -> f32 {
        f32::from_bits(x.to_bits().wrapping_add_signed(ulps))
    }

    #[test]
    fn fma_fast_path_rounds_correctly() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut fast, mut ties) = (0u64, 0u64);
        for i in 0..cases() {
            let (a, b) =
                if i % 2 == 0 { (rng.f32(), rng.f32()) } else { (rng.moderate(), rng.moderate()) };
            let p = f64::from(a) * f64::from(b);
            // Every third case: `c` puts the sum on or next to an f32 breakpoint.
            let c = if i % 3 == 0 && p.is_finite() && p != 0.0 {
                // The breakpoint just past the f32 nearest `p`, give or take 2^-40..2^-60
                // of it: `c` is then often exact, and the sum often rounds onto it.
                let near = p as f32;
                let up = neighbour(near.abs(), 1);
                let half_ulp = (f64::from(up) - f64::from(near.abs())) / 2.0;
                let m = f64::from(near) + half_ulp.copysign(p);
                let nudge = m * 2f64.powi(-40 - (rng.next() % 21) as i32);
                let target = if i % 2 == 0 { m + nudge } else { m - nudge };
                (target - p) as f32
            } else {
                rng.f32()
            };
            let want = a.mul_add(b, c);
            if let Some(got) = fma_fast(a, b, c) {
                assert!(same(got, want), "fma({a:e}, {b:e}, {c:e}) = {want:e}, fast path {got:e}");
                fast += 1;
            } else {
                ties += 1;
            }
        }
        assert!(fast > cases() / 2, "{fast} fast of {}", cases());
        eprintln!("fma: {fast} on the fast path, {ties} deferred");
    }

    #[test]
    fn division_test_accepts_only_the_rounded_quotient() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut fast = 0u64;
        for i in 0..cases() {
            let (a, b) =
                if i % 2 == 0 { (rng.f32(), rng.f32()) } else { (rng.moderate(), rng.moderate()) };
            let want = (f64::from(a) / f64::from(b)) as f32;
            // The device's quotient: right, a few ulps off, or anything.
            let q0 = match i % 8 {
                0..=3 => want,
                4..=6 => neighbour(want, (rng.next() % 7) as i32 - 3),
                _ => rng.f32(),
            };
            if quotient_ok(a, b, q0) {
                assert!(same(q0, want), "{a:e} / {b:e} = {want:e}, accepted {q0:e}");
                fast += 1;
            }
        }
        assert!(fast > cases() / 4, "{fast} fast of {}", cases());
        eprintln!("div: {fast} of {} accepted", cases());
    }

    #[test]
    fn root_test_accepts_only_the_rounded_root() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let mut fast = 0u64;
        for i in 0..cases() {
            let x = if i % 2 == 0 { rng.f32() } else { rng.moderate() };
            let want = f64::from(x).sqrt() as f32;
            let q0 = match i % 8 {
                0..=3 => want,
                4..=6 => neighbour(want, (rng.next() % 7) as i32 - 3),
                _ => rng.f32(),
            };
            if root_ok(x, q0) {
                assert!(same(q0, want), "sqrt({x:e}) = {want:e}, accepted {q0:e}");
                fast += 1;
            }
        }
        assert!(fast > cases() / 8, "{fast} fast of {}", cases());
        eprintln!("sqrt: {fast} of {} accepted", cases());
    }
}
