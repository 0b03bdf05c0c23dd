//! The fast paths of exact f32 `fma.rn`, `div.rn` and `sqrt.rn` on a device with f64 but
//! an unfused `Fma` (`FloatPath::F64`): a cheap result, and a cheap test that proves it
//! correctly rounded for all but a few operands; those take the exact paths, calls of
//! the IR's routines (`Routine::FmaF32InF64`: round-to-odd for `fma`;
//! `Routine::DivF32InF64`, `Routine::SqrtF32InF64`: exact residuals at both midpoints
//! for `div` and `sqrt`; `lower/src/routines/exact_f32.rs`). Both paths give the same bits for every input, each being correctly
//! rounded, so the choice is invisible. The test selects between them with a branch
//! ([`FnEmitter::fast_unless`]): a SIMD device such as lavapipe skips an arm that no
//! invocation takes, so the exact paths, 2-3 times the cost when taken, are almost never
//! run. What a kernel pays is the tests: on Mesa 25's lavapipe `normalize` runs at 0.63
//! of its GLSL as built and at 0.83 with the tests and arms dead, of which the branch and
//! its arm are about 5% (`docs/benchmarks.md`, *Where the exact float time goes*), so the
//! tests below are kept cheap, take every common operand (zeros too), and the arms small.
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
//! * *Breakpoints by bits* ([`FnEmitter::breakpoints`]): for an f32 `q > 0` that is
//!   not infinite, let `Q` be the bit pattern of its f64 value, whose 29 low bits are
//!   zero, and `lo`, `hi` the f64 values of the bit patterns `Q - 2^28` and `Q + 2^28`.
//!   Where `q` is a normal f32 that is not a power of two, `hi = q + h` and `lo = q - h`
//!   with `h = 2^(e-24)` half its ulp (bit 28 of an f64 significand is worth
//!   `2^(e-24)` in the binade of `q`, the subtraction borrowing from bit 29, the f32's
//!   last bit): the two breakpoints around `q`. At a power of two the borrow crosses
//!   into the binade below, and `lo` is `q - 2^(e-25)`, the breakpoint below, on the
//!   grid twice as fine; at `f32::MAX`, `hi` is `2^128 - 2^103`, where rounding goes
//!   to infinity. For a subnormal `q` its f64 exponent is below -126, so `q ± 2^(e-24)`
//!   lies strictly inside `q ± 2^-150`, the breakpoints of the subnormal grid. So
//!   always `(lo, hi)` is inside the interval of reals that round to `q` (endpoints,
//!   the ties, excluded), and is that interval where `q` is normal and above 2^-126
//!   (at 2^-126 the grid below is not finer, and `lo` is nearer than the breakpoint).
//!   `lo` and `hi` have at most 25 significant bits. For `q = 0` the bit pattern
//!   `Q - 2^28` is a NaN, and for `q = inf` or NaN `Q + 2^28` is one: every comparison
//!   with them fails.
//! * `div.rn.f32` ([`FnEmitter::rounded_quotient`]): the device's f32 quotient `q0` is
//!   only a candidate. With `q = |q0|` and its `(lo, hi)`, `|a/b|` rounds to `q` if
//!   `lo < |a/b| < hi`, that is `lo·|b| < |a| < hi·|b|` for finite non-zero `b`: the
//!   products have at most 25 + 24 bits and lie within [2^-300, 2^257], so they are
//!   exact in f64, and the comparison is the exact one. The result is `q` with the
//!   sign of `a` xor `b` (so a candidate of the wrong sign costs nothing). A zero `a`
//!   over a finite non-zero `b` gives that sign on a zero (IEEE 754 §6.3), decided on
//!   the bits: zero numerators are common (sparse data), and the exact path behind a
//!   branch costs every SIMD group that has one. Other special operands fail the test
//!   by themselves: `a = ±0` (`lo·|b| < 0` is false), `b = ±0` (`|a| < 0`), `b = ±inf`
//!   (`inf < |a|`), `a = ±inf` (`inf < hi·|b|`), NaN anywhere; an infinite or NaN `q0`
//!   makes `hi` a NaN. Those take the exact path, as do quotients the test cannot
//!   prove. Two f64 products and two comparisons, where the residual test this
//!   replaces took three f64 operations and an exponent and fraction split of `q0`.
//! * `sqrt.rn.f32` ([`FnEmitter::rounded_root`]): as for division, `q = |q0|` is
//!   `sqrt(x)` rounded to nearest if `lo² < x < hi²`, both squares exact (50 bits,
//!   within [2^-254, 2^257]); `x = ±0` gives `x` (IEEE 754 §5.4.1). Negative `x`
//!   fails (`lo² < x`), `x = +inf` (`x < hi²` with `hi²` finite or NaN) and NaN too,
//!   and so does every `q0` that is zero, infinite or NaN.
//! * *Driver folding* (`FloatConstants::Hidden`, `docs/status.md`, *Drivers*): lavapipe
//!   replaces a float add, sub or mul by its result when it knows an operand (gallivm's
//!   `lp_build_add`: `x + 0` and `0 + x` give `x`; `lp_build_sub`: `x - 0` gives `x`,
//!   `x - x` zero, and `0 - x` gives `-x`; Mesa 22.3's `lp_build_mul`: `x · 0` and
//!   `0 · x` give 0, `x · 1` and `1 · x` give `x`). For finite operands each of these
//!   gives the right value, with at worst the wrong sign of a zero. The products of the
//!   two tests above are never zero (`lo`, `hi` and `|a|`, `|b|` of a passing test are
//!   positive and finite) except `lo·|b|`, `hi·|b|` for `b = ±0`, which may fold to
//!   `+0` instead of NaN: `|a| < +0` is false all the same. A folded candidate `q0` is
//!   a candidate like any other. So the tests' products and candidates are emitted
//!   with their operands visible to the driver ([`FnEmitter::unhidden`]).
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
/// Half an ulp of an f32 in the bit pattern of its f64 value: bit 28, the highest of
/// the 29 significand bits an f64 has beyond an f32's.
const HALF_F32_ULP_IN_F64: u64 = 1 << 28;

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
    /// The f64 breakpoints `(lo, hi)` around the f32 candidate whose magnitude's bits
    /// are `q_abs` (module doc, *Breakpoints by bits*): its f64 bit pattern less and
    /// plus 2^28.
    fn breakpoints(&mut self, q_abs: Word) -> R<(Word, Word)> {
        let (i64s, ft) = (Scalar::Int(64), self.ty(Scalar::Float(32)));
        let (dt, lt) = (self.ty(Scalar::Float(64)), self.ty(i64s));
        let q = self.b.bitcast(ft, None, q_abs)?;
        let qd = self.b.f_convert(dt, None, q)?;
        let bits = self.b.bitcast(lt, None, qd)?;
        let half = self.konst(i64s, HALF_F32_ULP_IN_F64);
        let lo = self.b.i_sub(lt, None, bits, half)?;
        let hi = self.b.i_add(lt, None, bits, half)?;
        Ok((self.b.bitcast(dt, None, lo)?, self.b.bitcast(dt, None, hi)?))
    }

    /// Whether `low < v < high` (f64 values; false where any is NaN).
    fn between(&mut self, low: Word, v: Word, high: Word) -> R<Word> {
        let bt = self.ty(Scalar::Bool);
        let above = self.b.f_ord_less_than(bt, None, low, v)?;
        let below = self.b.f_ord_less_than(bt, None, v, high)?;
        Ok(self.b.logical_and(bt, None, above, below)?)
    }

    /// The bits of the magnitude of the f32 whose bits are `vi` (an i32), and its
    /// value as f64.
    fn magnitude_f64(&mut self, vi: Word) -> R<(Word, Word)> {
        let i32s = Scalar::Int(32);
        let (it, ft, dt) = (self.ty(i32s), self.ty(Scalar::Float(32)), self.ty(Scalar::Float(64)));
        let mask = self.konst(i32s, 0x7fff_ffff);
        let abs = self.b.bitwise_and(it, None, vi, mask)?;
        let value = self.b.bitcast(ft, None, abs)?;
        Ok((abs, self.b.f_convert(dt, None, value)?))
    }

    /// Whether `a / b` is correctly rounded by the magnitude of the f32 `q0` with the
    /// quotient's sign, and that value (module doc, *div.rn.f32*): proved by two exact
    /// f64 products for finite non-zero `a` and `b`, and `±0` for `a = ±0` and finite
    /// non-zero `b`. False for every other operand.
    pub(super) fn rounded_quotient(&mut self, a: Word, b: Word, q0: Word) -> R<(Word, Word)> {
        let i32s = Scalar::Int(32);
        let (it, ft, bt) = (self.ty(i32s), self.ty(Scalar::Float(32)), self.ty(Scalar::Bool));
        let (ai, bi, qi) = (
            self.b.bitcast(it, None, a)?,
            self.b.bitcast(it, None, b)?,
            self.b.bitcast(it, None, q0)?,
        );
        let mask = self.konst(i32s, 0x7fff_ffff);
        let q_abs = self.b.bitwise_and(it, None, qi, mask)?;
        let (lo, hi) = self.breakpoints(q_abs)?;
        let ((a_abs, ad), (b_abs, bd)) = (self.magnitude_f64(ai)?, self.magnitude_f64(bi)?);
        // lo·|b| < |a| < hi·|b|: both products exact (25 by 24 bits), and no driver
        // folding can make the test pass (module doc, *Driver folding*).
        let dt = self.ty(Scalar::Float(64));
        let low = self.unhidden(BinaryOp::Mul, dt, lo, bd)?;
        let high = self.unhidden(BinaryOp::Mul, dt, hi, bd)?;
        let proved = self.between(low, ad, high)?;
        // A zero `a` over a finite non-zero `b`: |b|'s bits less 1 below 0x7f7f_ffff.
        let zero = self.konst(i32s, 0);
        let a_zero = self.b.i_equal(bt, None, a_abs, zero)?;
        let one = self.konst(i32s, 1);
        let b_less = self.b.i_sub(it, None, b_abs, one)?;
        let finite = self.konst(i32s, 0x7f7f_ffff);
        let b_regular = self.b.u_less_than(bt, None, b_less, finite)?;
        let zero_quotient = self.b.logical_and(bt, None, a_zero, b_regular)?;
        let ok = self.b.logical_or(bt, None, proved, zero_quotient)?;
        let magnitude = self.b.select(it, None, a_zero, zero, q_abs)?;
        let signs = self.b.bitwise_xor(it, None, ai, bi)?;
        let sign_mask = self.konst(i32s, 0x8000_0000);
        let sign = self.b.bitwise_and(it, None, signs, sign_mask)?;
        let q = self.b.bitwise_or(it, None, magnitude, sign)?;
        Ok((ok, self.b.bitcast(ft, None, q)?))
    }

    /// Whether `sqrt(x)` is correctly rounded by the magnitude of the f32 `q0`, and
    /// that value (module doc, *sqrt.rn.f32*): proved by two exact f64 squares, and
    /// `x` itself for `x = ±0`. False for negative, infinite and NaN `x`.
    pub(super) fn rounded_root(&mut self, x: Word, q0: Word) -> R<(Word, Word)> {
        let i32s = Scalar::Int(32);
        let (it, ft, bt) = (self.ty(i32s), self.ty(Scalar::Float(32)), self.ty(Scalar::Bool));
        let dt = self.ty(Scalar::Float(64));
        let qi = self.b.bitcast(it, None, q0)?;
        let mask = self.konst(i32s, 0x7fff_ffff);
        let q_abs = self.b.bitwise_and(it, None, qi, mask)?;
        let (lo, hi) = self.breakpoints(q_abs)?;
        let xd = self.b.f_convert(dt, None, x)?;
        // lo² < x < hi²: both squares exact (25 bits each).
        let low = self.unhidden(BinaryOp::Mul, dt, lo, lo)?;
        let high = self.unhidden(BinaryOp::Mul, dt, hi, hi)?;
        let proved = self.between(low, xd, high)?;
        // sqrt(±0) = ±0 (IEEE 754 §5.4.1).
        let zero = self.konst(Scalar::Float(64), 0);
        let x_zero = self.b.f_ord_equal(bt, None, xd, zero)?;
        let ok = self.b.logical_or(bt, None, proved, x_zero)?;
        let xi = self.b.bitcast(it, None, x)?;
        let q = self.b.select(it, None, x_zero, xi, q_abs)?;
        Ok((ok, self.b.bitcast(ft, None, q)?))
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
    use super::{BREAKPOINT, HALF_F32_ULP_IN_F64, LOW29, MIN_NORMAL_F32_AS_F64};

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

    /// [`super::FnEmitter::breakpoints`] of the f32 magnitude `q`.
    fn breakpoints(q: f32) -> (f64, f64) {
        let bits = f64::from(q).to_bits();
        let lo = f64::from_bits(bits.wrapping_sub(HALF_F32_ULP_IN_F64));
        (lo, f64::from_bits(bits.wrapping_add(HALF_F32_ULP_IN_F64)))
    }

    /// [`super::FnEmitter::rounded_quotient`]: the result where the test proves it.
    fn quotient(a: f32, b: f32, q0: f32) -> Option<f32> {
        let (lo, hi) = breakpoints(q0.abs());
        let (ad, bd) = (f64::from(a.abs()), f64::from(b.abs()));
        let sign = (a.to_bits() ^ b.to_bits()) & 0x8000_0000;
        let a_zero = a.abs().to_bits() == 0;
        let b_regular = b.abs().to_bits().wrapping_sub(1) < 0x7f7f_ffff;
        let magnitude = if a_zero { 0 } else { q0.abs().to_bits() };
        let q = f32::from_bits(magnitude | sign);
        (lo * bd < ad && ad < hi * bd || a_zero && b_regular).then_some(q)
    }

    /// [`super::FnEmitter::rounded_root`]: the result where the test proves it.
    fn root(x: f32, q0: f32) -> Option<f32> {
        let (lo, hi) = breakpoints(q0.abs());
        let xd = f64::from(x);
        let q = if xd == 0.0 { x } else { q0.abs() };
        (lo * lo < xd && xd < hi * hi || xd == 0.0).then_some(q)
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

    /// The device's candidate for `want`: right, a few ulps off, of the other sign, at
    /// the other side of a power of two, or anything.
    fn candidate(rng: &mut Rng, i: u64, want: f32) -> f32 {
        match i % 16 {
            0..=6 => want,
            7..=11 => neighbour(want, (rng.next() % 7) as i32 - 3),
            12 => -want,
            13 => f32::from_bits(want.to_bits() & 0xff80_0000),
            14 => neighbour(f32::from_bits(want.to_bits() & 0xff80_0000), -1),
            _ => rng.f32(),
        }
    }

    #[test]
    fn division_test_accepts_only_the_rounded_quotient() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut fast = 0u64;
        for i in 0..cases() {
            let (a, b) = match i % 4 {
                0 | 1 => (rng.f32(), rng.f32()),
                2 => (rng.moderate(), rng.moderate()),
                // Quotients at or next to a power of two, and exact ones.
                _ => {
                    let b = rng.moderate();
                    let q = f32::from_bits(rng.moderate().to_bits() & 0xff80_0000);
                    (neighbour(q * b, (rng.next() % 3) as i32 - 1), b)
                }
            };
            let want = (f64::from(a) / f64::from(b)) as f32;
            let q0 = candidate(&mut rng, i, want);
            if let Some(got) = quotient(a, b, q0) {
                assert!(same(got, want), "{a:e} / {b:e} = {want:e}, accepted {q0:e} as {got:e}");
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
            let x = match i % 4 {
                0 | 1 => rng.f32(),
                2 => rng.moderate(),
                // Squares of f32 and their neighbours, and roots near powers of two.
                _ => {
                    let r = rng.moderate();
                    let r = if i % 8 == 3 { f32::from_bits(r.to_bits() & 0xff80_0000) } else { r };
                    neighbour(r * r, (rng.next() % 3) as i32 - 1)
                }
            };
            let want = f64::from(x).sqrt() as f32;
            let q0 = candidate(&mut rng, i, want);
            if let Some(got) = root(x, q0) {
                assert!(same(got, want), "sqrt({x:e}) = {want:e}, accepted {q0:e} as {got:e}");
                fast += 1;
            }
        }
        assert!(fast > cases() / 8, "{fast} fast of {}", cases());
        eprintln!("sqrt: {fast} of {} accepted", cases());
    }
}
