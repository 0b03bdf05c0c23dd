//! The fast paths of exact f64 `fma.rn` and `div.rn` on a target with f64 but an
//! unfused `Fma` (`FloatPath::F64`, whose f64 `fma`, `div` and `rcp` `pass::emulate`
//! makes calls of the integer routines [`Routine::FmaF64`] and [`Routine::DivF64`]):
//! [`Routine::FastF64`] computes `fma` by error-free transformations in the device's f64
//! arithmetic (about 100 SPIR-V instructions, where the routine runs 416) and proves
//! the device's quotient by an exact residual for `div` (about 65, where the routine
//! runs 641). Each holds for almost all finite operands; for the others (zeros,
//! subnormals, infinities, NaN, extreme exponents, results near the subnormal range)
//! a guard on the exponent fields fails and `FastF64` returns a NaN instead of its
//! result ([`F64Op::FAILED`]). [`Routine::NearestF64`] takes `FastF64`'s result where it
//! is not that NaN and calls
//! the integer routine behind a branch elsewhere (which a SIMD device such as lavapipe
//! skips when no invocation takes it). Both are correctly rounded, so they give the
//! same bits and the choice is invisible.
//!
//! *A NaN is never a fast result*: the guards admit only normal `a` and `b` (and `q0`
//! for `div`), a finite `c` below 2^1022 and products below 2^1023 (so `fma`'s every
//! intermediate is finite, and its result `RN(s + v)` lies within a factor 2 of `s`,
//! which is normal: step 4), and `div` returns `q0` itself, a normal number by its
//! guard. So a NaN says only that the guard failed (or, for `div`, that the test could
//! not prove `q0`).
//!
//! What Vulkan guarantees (as `fast_f32`'s module doc): `OpFAdd`, `OpFSub`, `OpFMul` of
//! f64 are correctly rounded to nearest even (`NoContraction`); `OpFDiv` only gives
//! `div`'s candidate (`.native`), whose accuracy nothing relies on, and nothing uses
//! `Fma`.
//!
//! *Driver folding*: the arithmetic of both shows its operands to the driver
//! (`.visible`, [`crate::ir::FloatMode::visible`]) even where it folds operations with
//! known operands (`FloatConstants::Hidden`; the foldings are listed in `fast_f32`'s
//! module doc, *Driver folding*). Each folding gives the right value for finite
//! operands, at worst with the wrong sign of a zero, and the value of a correctly
//! rounded sum, difference or product of finite operands does not depend on the signs
//! of zero operands (IEEE 754 §6.3 only fixes the sign of a zero result). So, by
//! induction over the operations, every value of a fast path whose guard holds (every
//! operand and intermediate finite: the guards below exclude overflow) is right, and
//! only a zero may carry the wrong sign. No zero's sign reaches the result: `fma`'s
//! result `RN(s + v)` has `s ≠ 0` (the guard), and so its sign and bits follow from the
//! values; `v`'s rounding to odd reads the last bit of a sum (0 for both zeros), whether
//! its error is zero, and the signs of sum and error by ordered comparisons with 0,
//! which treat both zeros alike, and steps only a non-zero sum. `div`'s test compares
//! `|residual|` with a positive bound. The device's quotient is a candidate: folded or
//! not, the test decides. Where a guard fails the fast result is not used. This saves
//! two integer ORs per operation on lavapipe (about 60 for `fma`, 30 for `div`).
//!
//! The scheme of `fma.rn.f64` ([`fma`]), with `RN` the f64 rounding to nearest even and
//! `x = a·b + c`:
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
//!    sum when it is inexact (its TwoSum error non-zero) and even (`exact_f32`'s
//!    `odd_sum`, here `.visible`).
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
//! *div.rn.f64* ([`div`], also `rcp.rn.f64` as `1.0 / x`): the device's quotient
//! `q0 = OpFDiv(a, b)`, of any accuracy, is `RN(a/b)` iff `|a/b - q0| < h`, `h` the
//! distance from `q0` to the midpoint on the side of `a/b`: half an ulp,
//! `2^(e_q - 53)`, taken as a quarter, `2^(e_q - 54)`, on both sides when `q0` is a
//! power of two (the grid below it is finer), which only sends more to the routine. A
//! quotient is never a midpoint (`a = m·b` with `m` of 54 significant bits would need
//! `a` to have more than 53), so `<` loses nothing. Scaled by `|b|`:
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
//!
//! [`Routine::FmaF64`]: crate::ir::Routine::FmaF64
//! [`Routine::DivF64`]: crate::ir::Routine::DivF64
//! [`Routine::FastF64`]: crate::ir::Routine::FastF64
//! [`Routine::NearestF64`]: crate::ir::Routine::NearestF64
//! [`F64Op::FAILED`]: crate::ir::F64Op::FAILED

use super::exact_f32::{odd_sum, shown, two_sum_error, CANDIDATE, VISIBLE};
use super::fast_f32::or_exact;
use super::FnBuilder;
use crate::build::Build;
use crate::ir::{BinaryOp, CmpOp, F64Op, InstKind, OpTy, RegId, Routine, Value};

const F64: OpTy = OpTy::F(64);
const U64: OpTy = OpTy::U(64);
const U32: OpTy = OpTy::U(32);

/// Veltkamp's splitting constant for 53 bits, 2^27 + 1.
const SPLIT: f64 = 134_217_729.0;

/// The guard of the module doc on biased exponent fields (unbiased + 1023), as
/// `(low, count)`: the field is inside when `field - low < count`, unsigned.
/// `a` and `b`: normal, unbiased exponent at most 995.
const FACTOR: (u64, u64) = (1, 2018);
/// `e_a + e_b` in [-960, 1021]: the sum of the fields in [1086, 3067].
const PRODUCT: (u64, u64) = (1086, 1982);
/// `c`: below 2^1022 in magnitude (zeros and subnormals included).
const ADDEND: (u64, u64) = (0, 2045);
/// `s`: at least 2^-969 in magnitude, finite.
const SUM: (u64, u64) = (54, 1993);
/// The quotient `q0` of `div.rn`: a factor (as `a` above) whose half ulp is normal.
const QUOTIENT: (u64, u64) = (55, 1964);

const FAILED: u64 = F64Op::FAILED;
const MAGNITUDE: u64 = !(1 << 63);
const FRACTION: u64 = (1 << 52) - 1;

/// The body of `FastF64(op)` on the f64 patterns `x`: the result where the guard
/// holds, else a NaN (module doc).
pub(super) fn fast(b: &mut FnBuilder, op: F64Op, x: &[Value]) -> Value {
    let (ok, r) = match op {
        F64Op::Fma => fma(b, x[0], x[1], x[2]),
        F64Op::Div => div(b, x[0], x[1]),
    };
    b.sel(U64, ok, r, Value::Imm(FAILED))
}

/// The body of `NearestF64(op)` on the f64 patterns `x`: `FastF64(op)`'s result where it
/// is not its NaN ([`F64Op::FAILED`]), else the integer routine's (its callees, in that
/// order). Ends the entry block with the branch to the exact path; the block after is
/// the current one.
pub(super) fn nearest(b: &mut FnBuilder, op: F64Op, x: &[Value]) -> Value {
    let result = b.temp(U64);
    let fast = b.call(Routine::FastF64(op), x.to_vec());
    b.mov(U64, result, fast);
    let failed = b.cmp(CmpOp::Eq, U64, fast, Value::Imm(FAILED));
    or_exact(b, U64, result, failed, op.exact(), x)
}

/// The biased exponent field of the f64 pattern `v`, as a 32-bit integer.
fn exponent_field(b: &mut FnBuilder, v: Value) -> Value {
    let high = b.bin(BinaryOp::Shr, U64, v, Value::Imm(52));
    let high = b.lo32(high);
    b.and(U32, high, Value::Imm(0x7ff))
}

/// Whether the 32-bit `field` lies inside `(low, count)` (the constants above).
fn inside(b: &mut FnBuilder, field: Value, (low, count): (u64, u64)) -> RegId {
    let offset = b.bin(BinaryOp::Sub, U32, field, Value::Imm(low));
    b.cmp(CmpOp::Lt, U32, offset, Value::Imm(count))
}

/// Whether every one of `all` holds.
fn all(b: &mut FnBuilder, all: &[RegId]) -> RegId {
    all[1..].iter().fold(all[0], |acc, &p| b.pred_and(acc, p))
}

/// Veltkamp's split of the f64 `x` into `(hi, lo)`, `x = hi + lo` exactly, each with
/// at most 26 significant bits (module doc, step 1).
fn veltkamp(b: &mut FnBuilder, x: Value) -> (Value, Value) {
    let g = shown(b, BinaryOp::Mul, Value::Imm(SPLIT.to_bits()), x);
    let d = shown(b, BinaryOp::Sub, g, x);
    let hi = shown(b, BinaryOp::Sub, g, d);
    let lo = shown(b, BinaryOp::Sub, x, hi);
    (hi, lo)
}

/// Dekker's product of the f64 `x` and `y`: `(p, e)` with `p = RN(x·y)` and
/// `x·y = p + e` exactly, under the guard of the module doc (step 1).
fn two_product(b: &mut FnBuilder, x: Value, y: Value) -> (Value, Value) {
    let (xh, xl) = veltkamp(b, x);
    let (yh, yl) = veltkamp(b, y);
    let p = shown(b, BinaryOp::Mul, x, y);
    let hh = shown(b, BinaryOp::Mul, xh, yh);
    let e = shown(b, BinaryOp::Sub, hh, p);
    let hl = shown(b, BinaryOp::Mul, xh, yl);
    let e = shown(b, BinaryOp::Add, e, hl);
    let lh = shown(b, BinaryOp::Mul, xl, yh);
    let e = shown(b, BinaryOp::Add, e, lh);
    let ll = shown(b, BinaryOp::Mul, xl, yl);
    let e = shown(b, BinaryOp::Add, e, ll);
    (p, e)
}

/// `fma.rn.f64` of the patterns `x`, `y`, `c`, `x·y + c` (module doc, with `a`, `b` for
/// `x`, `y`): whether the guard holds, and the scheme's result (meaningless where it
/// does not).
fn fma(b: &mut FnBuilder, x: Value, y: Value, c: Value) -> (RegId, Value) {
    // The guard on the operands.
    let (ex, ey, ec) = (exponent_field(b, x), exponent_field(b, y), exponent_field(b, c));
    let x_in = inside(b, ex, FACTOR);
    let y_in = inside(b, ey, FACTOR);
    let exy = b.add(U32, ex, ey);
    let xy_in = inside(b, exy, PRODUCT);
    let c_in = inside(b, ec, ADDEND);
    // 1. x·y = p + e (Veltkamp, Dekker).
    let (p, e) = two_product(b, x, y);
    // 2. c + p = s + t (TwoSum).
    let s = shown(b, BinaryOp::Add, c, p);
    let t = two_sum_error(b, VISIBLE, c, p, s);
    // 3. v = RO(t + e); 4. r = RN(s + v).
    let v = odd_sum(b, VISIBLE, false, t, e);
    let r = shown(b, BinaryOp::Add, s, v);
    // The guard on s.
    let es = exponent_field(b, s);
    let s_in = inside(b, es, SUM);
    (all(b, &[x_in, y_in, xy_in, c_in, s_in]), r)
}

/// `div.rn.f64` of the patterns `a`, `d` (module doc, *div.rn.f64*): whether the test
/// proves the device's quotient correctly rounded, and that quotient.
fn div(b: &mut FnBuilder, a: Value, d: Value) -> (RegId, Value) {
    let q0 = b.temp(F64);
    let op = BinaryOp::Div;
    b.push(InstKind::Binary { op, ty: F64, mode: CANDIDATE, dst: q0, lhs: a, rhs: d });
    let q0 = Value::Reg(q0);
    // The guard: q0 and d as the factors of an exact product, and h normal.
    let (eq, ed) = (exponent_field(b, q0), exponent_field(b, d));
    let q_in = inside(b, eq, QUOTIENT);
    let d_in = inside(b, ed, FACTOR);
    let eqd = b.add(U32, eq, ed);
    let qd_in = inside(b, eqd, PRODUCT);
    // h = 2^(e_q - 53), half q0's ulp, or 2^(e_q - 54) when q0 is a power of two (the
    // grid below it is twice as fine): its biased exponent field is the quotient's less
    // 53 or 54.
    let fraction = b.and(U64, q0, Value::Imm(FRACTION));
    let power = b.cmp(CmpOp::Eq, U64, fraction, Value::Imm(0));
    let down = b.sel(U32, power, Value::Imm(54), Value::Imm(53));
    let h_field = b.bin(BinaryOp::Sub, U32, eq, down);
    let h = b.cvt(U64, U32, h_field);
    let h = b.bin(BinaryOp::Shl, U64, h, Value::Imm(52));
    // |a - q0·d| < |d|·h, with q0·d = p + e exactly.
    let (p, e) = two_product(b, q0, d);
    let diff = shown(b, BinaryOp::Sub, a, p);
    let residual = shown(b, BinaryOp::Sub, diff, e);
    let residual = b.and(U64, residual, Value::Imm(MAGNITUDE));
    let d_abs = b.and(U64, d, Value::Imm(MAGNITUDE));
    let bound = shown(b, BinaryOp::Mul, d_abs, h);
    let proved = b.cmp(CmpOp::Lt, F64, residual, bound);
    (all(b, &[q_in, d_in, qd_in, proved]), q0)
}

#[cfg(test)]
mod tests;
