//! The fast paths of exact f32 `fma.rn`, `div.rn` and `sqrt.rn` on a target with f64
//! (`FloatPath::F64`): [`Routine::FastF32`], a cheap result and a cheap test that proves
//! it correctly rounded for all but a few operands, and [`Routine::NearestF32`], which
//! takes that result where the test holds and calls the exact routine elsewhere
//! (`exact_f32`: round-to-odd for `fma`, exact residuals at both midpoints for `div` and
//! `sqrt`). Both paths give the same bits for every input, each being correctly
//! rounded, so the choice is invisible. `NearestF32` selects between them with a branch:
//! a SIMD device such as lavapipe skips an arm that no invocation takes, so the exact
//! paths, 2-3 times the cost when taken, are almost never run. What a kernel pays is
//! the tests: on Mesa 25's lavapipe `normalize` runs at 0.63 of its GLSL as built and at
//! 0.83 with the tests and arms dead, of which the branch and its arm are about 5%
//! (`docs/benchmarks.md`, *Where the exact float time goes*), so the tests below are
//! kept cheap, take every common operand (zeros too), and the arms small. Exact runs
//! (`pass::exact_runs`) call `FastF32` for each of their sites and share one branch.
//!
//! `FastF32`'s result is 64 bits: the f32 result's bits in the low word, and in the
//! high word 1 where the test fails (the low word then meaningless), else 0. Drivers
//! inline the call (Mesa does every call), and the packing folds away.
//!
//! What Vulkan guarantees (Vulkan specification, appendix *Vulkan Environment for
//! SPIR-V*, *Precision and Operation of SPIR-V Instructions*, whose table holds for
//! double precision too): `OpFAdd`, `OpFSub`, `OpFMul` and "conversions between types"
//! are correctly rounded, to nearest even; `OpFDiv` is only 2.5 ulp and `Sqrt`
//! "inherited from 1.0 / inversesqrt()", so the schemes below take only candidates
//! from those two (`.native`) and never rely on their accuracy. No f64 value below is
//! subnormal (products of f32 are at least 2^-298), so no flushing matters.
//!
//! A *breakpoint* is a real number where rounding to f32 (to nearest) changes: the
//! midpoint of two consecutive f32 values, the one between `f32::MAX` and 2^128
//! included. Each has at most 25 significant bits and an exponent of at least -150, so
//! it is an f64. In a binade [2^e, 2^(e+1)) of f64 values with e ≥ -126 the
//! breakpoints are exactly the values whose 29 low significand bits are `0x1000_0000`
//! (the f32 grid there is 2^(e-23), and its midpoints lie 2^(e-24) past a grid point).
//!
//! * `fma.rn.f32` ([`fma`]): `P = a·b` is exact in f64 (48 bits, an exponent within
//!   [-298, 256]), and `S = RN64(P + c)`. If `RN32(S) ≠ RN32(P + c)`, rounding being
//!   monotone, a breakpoint `m` lies between `P + c` and `S`, both included; `m` is an
//!   f64, so unless `m = S` it would be nearer to `P + c` than `S` is. So `RN32(S)` is
//!   correct unless `S` is a breakpoint (29 low bits `0x1000_0000`) or lies in
//!   (0, 2^-126), where f32's grid is the subnormal one and the bit test does not apply
//!   ([`breakpoint_or_tiny`]); those take round-to-odd (Boldo & Melquiond, "Emulation
//!   of FMA and correctly rounded sums: proved algorithms using rounding to odd", IEEE
//!   Trans. Computers 57(4), 2008, Theorem 1: rounding to odd in 53 ≥ 2·24 + 2 bits,
//!   then to nearest in 24, is correct). `S = 0` is exact (an f64 sum that rounds to
//!   zero is zero, with IEEE's sign, as the exact path's), and an `S` below 2^-1022
//!   gives a zero of the right sign either way; infinities and NaN convert as the exact
//!   path converts them. The product and the sum are a program's arithmetic, hidden
//!   from a driver that folds known operands (`FloatConstants::Hidden`), and in the
//!   `repaired` form (a driver that was not probed) the sign of a zero sum is set from
//!   the addends' bits, as `OddF32InF64`'s (`exact_f32`'s module doc).
//! * *Breakpoints by bits* ([`breakpoints`]): for an f32 `q > 0` that is not infinite,
//!   let `Q` be the bit pattern of its f64 value, whose 29 low bits are zero, and `lo`,
//!   `hi` the f64 values of the bit patterns `Q - 2^28` and `Q + 2^28`. Where `q` is a
//!   normal f32 that is not a power of two, `hi = q + h` and `lo = q - h` with
//!   `h = 2^(e-24)` half its ulp (bit 28 of an f64 significand is worth `2^(e-24)` in
//!   the binade of `q`, the subtraction borrowing from bit 29, the f32's last bit): the
//!   two breakpoints around `q`. At a power of two the borrow crosses into the binade
//!   below, and `lo` is `q - 2^(e-25)`, the breakpoint below, on the grid twice as fine;
//!   at `f32::MAX`, `hi` is `2^128 - 2^103`, where rounding goes to infinity. For a
//!   subnormal `q` its f64 exponent is below -126, so `q ± 2^(e-24)` lies strictly
//!   inside `q ± 2^-150`, the breakpoints of the subnormal grid. So always `(lo, hi)`
//!   is inside the interval of reals that round to `q` (endpoints, the ties, excluded),
//!   and is that interval where `q` is normal and above 2^-126 (at 2^-126 the grid
//!   below is not finer, and `lo` is nearer than the breakpoint). `lo` and `hi` have at
//!   most 25 significant bits. For `q = 0` the bit pattern `Q - 2^28` is a NaN, and for
//!   `q = inf` or NaN `Q + 2^28` is one: every comparison with them fails.
//! * `div.rn.f32` ([`div`]): the device's f32 quotient `q0` is only a candidate. With
//!   `q = |q0|` and its `(lo, hi)`, `|a/b|` rounds to `q` if `lo < |a/b| < hi`, that is
//!   `lo·|b| < |a| < hi·|b|` for finite non-zero `b`: the products have at most 25 + 24
//!   bits and lie within [2^-300, 2^257], so they are exact in f64, and the comparison
//!   is the exact one. The result is `q` with the sign of `a` xor `b` (so a candidate
//!   of the wrong sign costs nothing). A zero `a` over a finite non-zero `b` gives that
//!   sign on a zero (IEEE 754 §6.3), decided on the bits: zero numerators are common
//!   (sparse data), and the exact path behind a branch costs every SIMD group that has
//!   one. Other special operands fail the test by themselves: `a = ±0` (`lo·|b| < 0` is
//!   false), `b = ±0` (`|a| < 0`), `b = ±inf` (`inf < |a|`), `a = ±inf`
//!   (`inf < hi·|b|`), NaN anywhere; an infinite or NaN `q0` makes `hi` a NaN. Those
//!   take the exact path, as do quotients the test cannot prove.
//! * `sqrt.rn.f32` ([`sqrt`]): as for division, `q = |q0|` is `sqrt(x)` rounded to
//!   nearest if `lo² < x < hi²`, both squares exact (50 bits, within [2^-254, 2^257]);
//!   `x = ±0` gives `x` (IEEE 754 §5.4.1). Negative `x` fails (`lo² < x`), `x = +inf`
//!   (`x < hi²` with `hi²` finite or NaN) and NaN too, and so does every `q0` that is
//!   zero, infinite or NaN.
//! * *Driver folding* (`FloatConstants::Hidden`, `docs/status.md`, *Drivers*): lavapipe
//!   replaces a float add, sub or mul by its result when it knows an operand (gallivm's
//!   `lp_build_add`: `x + 0` and `0 + x` give `x`; `lp_build_sub`: `x - 0` gives `x`,
//!   `x - x` zero, and `0 - x` gives `-x`; Mesa 22.3's `lp_build_mul`: `x · 0` and
//!   `0 · x` give 0, `x · 1` and `1 · x` give `x`). For finite operands each of these
//!   gives the right value, with at worst the wrong sign of a zero. The products of the
//!   `div` and `sqrt` tests are never zero (`lo`, `hi` and `|a|`, `|b|` of a passing
//!   test are positive and finite) except `lo·|b|`, `hi·|b|` for `b = ±0`, which may
//!   fold to `+0` instead of NaN: `|a| < +0` is false all the same. A folded candidate
//!   `q0` is a candidate like any other. So the tests' products and candidates are
//!   `.visible` ([`crate::ir::FloatMode::visible`]).
//!
//! So the fast paths are exact on every device; how often they are taken depends on
//! the device's f32 division and square root (always on lavapipe, whose are correctly
//! rounded), and for `fma` on about 2^-29 of sums besides f32-subnormal ones.
//!
//! [`Routine::FastF32`]: crate::ir::Routine::FastF32
//! [`Routine::NearestF32`]: crate::ir::Routine::NearestF32

use super::exact_f32::{shown, wide, zero_sign_of_sum, CANDIDATE};
use super::FnBuilder;
use crate::build::Build;
use crate::ir::{
    BinaryOp, BlockId, CmpOp, F32Op, FloatMode, InstKind, OpTy, RegId, Rounding, Routine,
    Terminator, UnaryOp, Value,
};

const F64: OpTy = OpTy::F(64);
const F32: OpTy = OpTy::F(32);
const U64: OpTy = OpTy::U(64);
const U32: OpTy = OpTy::U(32);

/// The 29 low significand bits of an f64 that is an f32 breakpoint (module doc).
const BREAKPOINT: u64 = 0x1000_0000;
const LOW29: u64 = 0x1fff_ffff;
/// The bits of 2^-126 as f64, the smallest normal f32.
const MIN_NORMAL_F32_AS_F64: u64 = 897 << 52;
/// Half an ulp of an f32 in the bit pattern of its f64 value: bit 28, the highest of
/// the 29 significand bits an f64 has beyond an f32's.
const HALF_F32_ULP_IN_F64: u64 = 1 << 28;
const MAGNITUDE32: u64 = 0x7fff_ffff;
const SIGN32: u64 = 0x8000_0000;
/// `FastF32`'s high word where its test fails (module doc).
const FAILED: u64 = 1 << 32;

/// The body of `FastF32(op)` on the f32 patterns `x`: the result and whether the test
/// failed, packed (module doc).
pub(super) fn fast(b: &mut FnBuilder, op: F32Op, x: &[Value]) -> Value {
    let (failed, q) = match op {
        F32Op::Fma { repaired } => {
            let (unsure, q) = fma(b, repaired, x);
            (b.sel(U64, unsure, Value::Imm(FAILED), Value::Imm(0)), q)
        }
        F32Op::Div | F32Op::Sqrt => {
            let (proved, q) = if op == F32Op::Div { div(b, x[0], x[1]) } else { sqrt(b, x[0]) };
            (b.sel(U64, proved, Value::Imm(0), Value::Imm(FAILED)), q)
        }
    };
    let q = b.cvt(U64, U32, q);
    b.or(U64, q, failed)
}

/// The body of `NearestF32(op)` on the f32 patterns `x`: `FastF32(op)`'s result where
/// its test holds, else the exact routine's (its callees, in that order). Ends the
/// entry block with the branch to the exact path; the block after is the current one.
pub(super) fn nearest(b: &mut FnBuilder, op: F32Op, x: &[Value]) -> Value {
    let packed = b.call(Routine::FastF32(op), x.to_vec());
    let result = b.temp(U32);
    let q = b.lo32(packed);
    b.mov(U32, result, q);
    let high = b.bin(BinaryOp::Shr, U64, packed, Value::Imm(32));
    let failed = b.cmp(CmpOp::Ne, U64, high, Value::Imm(0));
    or_exact(b, U32, result, failed, op.exact(), x)
}

/// `result` (a register of type `ty` holding a fast path's result) where `failed` is
/// false, else `exact` on `x` written into it, behind a branch (`NearestF32`'s and
/// `NearestF64`'s). Ends the current block with the branch to the exact path; the block
/// after is the current one.
pub(super) fn or_exact(
    b: &mut FnBuilder,
    ty: OpTy,
    result: RegId,
    failed: RegId,
    exact: Routine,
    x: &[Value],
) -> Value {
    let exact_block = b.current().0 + 1;
    let (exact_block, join) = (BlockId(exact_block), BlockId(exact_block + 1));
    let branch =
        Terminator::Branch { cond: failed, negate: false, if_true: exact_block, if_false: join };
    b.end_block(branch);
    let r = b.call(exact, x.to_vec());
    b.mov(ty, result, r);
    b.end_block(Terminator::Jump(join));
    Value::Reg(result)
}

/// `fma.rn.f32` (module doc): whether `RN32(S)` might be wrong, and its bits.
fn fma(b: &mut FnBuilder, repaired: bool, x: &[Value]) -> (RegId, Value) {
    let (ad, bd, cd) = (wide(b, x[0]), wide(b, x[1]), wide(b, x[2]));
    let p = b.bin(BinaryOp::Mul, F64, ad, bd);
    let s = b.bin(BinaryOp::Add, F64, p, cd);
    let s = if repaired { zero_sign_of_sum(b, p, cd, s) } else { s };
    let unsure = breakpoint_or_tiny(b, s);
    (unsure, b.convert(F32, F64, Some(Rounding::Nearest), FloatMode::default(), s))
}

/// Whether rounding the f64 `s`, the nearest f64 of some real value, to f32 might not
/// round that value correctly (module doc): `s` is an f32 breakpoint, or lies in
/// (0, 2^-126) in magnitude. In 32-bit words, which a SIMD device handles twice as
/// wide as 64-bit ones.
fn breakpoint_or_tiny(b: &mut FnBuilder, s: Value) -> RegId {
    let low = b.lo32(s);
    let low = b.and(U32, low, Value::Imm(LOW29));
    let near = b.cmp(CmpOp::Eq, U32, low, Value::Imm(BREAKPOINT));
    // 0 < |s| < 2^-126 on the high word, as one unsigned comparison of its magnitude
    // less 1 (an f64 whose high word is zero is 0 or below 2^-1022, where the f32
    // result is a zero of the right sign either way).
    let high = b.bin(BinaryOp::Shr, U64, s, Value::Imm(32));
    let high = b.lo32(high);
    let magnitude = b.and(U32, high, Value::Imm(MAGNITUDE32));
    let less_one = b.add(U32, magnitude, Value::Imm(u64::from(u32::MAX)));
    let limit = Value::Imm((MIN_NORMAL_F32_AS_F64 >> 32) - 1);
    let tiny = b.cmp(CmpOp::Lt, U32, less_one, limit);
    b.pred_or(near, tiny)
}

/// The f64 breakpoints `(lo, hi)` around the f32 candidate whose magnitude's bits are
/// `q_abs` (module doc, *Breakpoints by bits*): its f64 bit pattern less and plus 2^28.
fn breakpoints(b: &mut FnBuilder, q_abs: Value) -> (Value, Value) {
    let q = wide(b, q_abs);
    let lo = b.add(U64, q, Value::Imm(HALF_F32_ULP_IN_F64.wrapping_neg()));
    (lo, b.add(U64, q, Value::Imm(HALF_F32_ULP_IN_F64)))
}

/// Whether `low < v < high` (f64 values; false where any is NaN).
fn between(b: &mut FnBuilder, low: Value, v: Value, high: Value) -> RegId {
    let above = b.cmp(CmpOp::Lt, F64, low, v);
    let below = b.cmp(CmpOp::Lt, F64, v, high);
    b.pred_and(above, below)
}

/// The bits of the magnitude of the f32 whose bits are `v`, and its value as f64.
fn magnitude(b: &mut FnBuilder, v: Value) -> (Value, Value) {
    let abs = b.and(U32, v, Value::Imm(MAGNITUDE32));
    (abs, wide(b, abs))
}

/// `div.rn.f32` (module doc): whether `a / b` is correctly rounded by the magnitude of
/// the device's f32 quotient with the quotient's sign, and that value: proved by two
/// exact f64 products for finite non-zero `a` and `b`, and `±0` for `a = ±0` and
/// finite non-zero `b`. Not proved for every other operand.
fn div(b: &mut FnBuilder, a: Value, d: Value) -> (RegId, Value) {
    let q0 = b.temp(F32);
    let op = BinaryOp::Div;
    b.push(InstKind::Binary { op, ty: F32, mode: CANDIDATE, dst: q0, lhs: a, rhs: d });
    let q_abs = b.and(U32, Value::Reg(q0), Value::Imm(MAGNITUDE32));
    let (lo, hi) = breakpoints(b, q_abs);
    let ((a_abs, ad), (d_abs, dd)) = (magnitude(b, a), magnitude(b, d));
    // lo·|b| < |a| < hi·|b|: both products exact (25 by 24 bits), and no driver
    // folding can make the test pass (module doc, *Driver folding*).
    let low = shown(b, BinaryOp::Mul, lo, dd);
    let high = shown(b, BinaryOp::Mul, hi, dd);
    let proved = between(b, low, ad, high);
    // A zero `a` over a finite non-zero `b`: |b|'s bits less 1 below 0x7f7f_ffff.
    let a_zero = b.cmp(CmpOp::Eq, U32, a_abs, Value::Imm(0));
    let d_less = b.add(U32, d_abs, Value::Imm(u64::from(u32::MAX)));
    let d_regular = b.cmp(CmpOp::Lt, U32, d_less, Value::Imm(0x7f7f_ffff));
    let zero_quotient = b.pred_and(a_zero, d_regular);
    let ok = b.pred_or(proved, zero_quotient);
    let magnitude = b.sel(U32, a_zero, Value::Imm(0), q_abs);
    let signs = b.bin(BinaryOp::Xor, U32, a, d);
    let sign = b.and(U32, signs, Value::Imm(SIGN32));
    (ok, b.or(U32, magnitude, sign))
}

/// `sqrt.rn.f32` (module doc): whether `sqrt(x)` is correctly rounded by the magnitude
/// of the device's f32 root, and that value: proved by two exact f64 squares, and `x`
/// itself for `x = ±0`. Not proved for negative, infinite and NaN `x`.
fn sqrt(b: &mut FnBuilder, x: Value) -> (RegId, Value) {
    let q0 = b.temp(F32);
    b.push(InstKind::Unary { op: UnaryOp::Sqrt, ty: F32, mode: CANDIDATE, dst: q0, src: x });
    let q_abs = b.and(U32, Value::Reg(q0), Value::Imm(MAGNITUDE32));
    let (lo, hi) = breakpoints(b, q_abs);
    let xd = wide(b, x);
    // lo² < x < hi²: both squares exact (25 bits each).
    let low = shown(b, BinaryOp::Mul, lo, lo);
    let high = shown(b, BinaryOp::Mul, hi, hi);
    let proved = between(b, low, xd, high);
    // sqrt(±0) = ±0 (IEEE 754 §5.4.1).
    let x_zero = b.cmp(CmpOp::Eq, F64, xd, Value::Imm(0));
    let ok = b.pred_or(proved, x_zero);
    (ok, b.sel(U32, x_zero, x, q_abs))
}

/// The fast paths against an independent model: Rust's f32 `mul_add`, `/` and `sqrt`
/// (correctly rounded to nearest, IEEE 754). Each `FastF32` runs with the interpreter's
/// semantics of each operation (`routines::tests`' evaluator) and the device's
/// candidate quotient or root taken as an argument: the right one, a few ulps off, of
/// the other sign, at the other side of a power of two, or anything. Where the test
/// holds its result must be the model's; it must hold for most operands. The operands
/// put `fma`'s sum on or next to a breakpoint, and quotients and roots at or next to
/// powers of two and exact ones. `PTXVK_ROUTINE_CASES` sets the number of cases of
/// each (default 20,000).
#[cfg(test)]
mod tests {
    use super::super::tests::{eval, f32_operand, float_arithmetic, with_candidate_argument, Rng};
    use crate::ir::{F32Op, Function, InstKind, OpTy, Routine, Value};

    fn cases() -> u64 {
        std::env::var("PTXVK_ROUTINE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
    }

    /// `FastF32(op)` with its `.native` candidate replaced by a new last argument.
    fn with_candidate(op: F32Op) -> Function {
        let (f, candidates) =
            with_candidate_argument(Routine::FastF32(op), OpTy::U(32), |dst, k| InstKind::Mov {
                ty: OpTy::U(32),
                dst,
                src: Value::Reg(k),
            });
        assert_eq!(candidates, usize::from(!matches!(op, F32Op::Fma { .. })), "{op:?}");
        f
    }

    /// An f32 of any exponent, or (`moderate`) of one within 2^±30.
    fn operand(rng: &mut Rng, moderate: bool) -> f32 {
        let e =
            if moderate { (rng.next() % 61) as i64 - 30 } else { (rng.next() % 300) as i64 - 160 };
        f32::from_bits(f32_operand(rng, e) as u32)
    }

    fn neighbour(x: f32, ulps: i32) -> f32 {
        f32::from_bits(x.to_bits().wrapping_add_signed(ulps))
    }

    /// `fma`'s operands; every third case `c` puts the sum on or next to an f32
    /// breakpoint, and every sixth `a·b` puts it within 2^-70 of the breakpoint next to
    /// `c` (so that the f64 sum is the breakpoint, and only the exact path rounds it
    /// right).
    fn fma_operands(rng: &mut Rng, i: u64) -> Vec<f32> {
        if i.is_multiple_of(6) {
            return tie_operands(rng);
        }
        let (a, b) = (operand(rng, i % 2 == 1), operand(rng, i % 2 == 1));
        let p = f64::from(a) * f64::from(b);
        let c = if i.is_multiple_of(3) && p.is_finite() && p != 0.0 {
            // The breakpoint just past the f32 nearest `p`, give or take 2^-40..2^-60
            // of it: `c` is then often exact, and the sum often rounds onto it.
            let near = p as f32;
            let up = neighbour(near.abs(), 1);
            let half_ulp = (f64::from(up) - f64::from(near.abs())) / 2.0;
            let m = f64::from(near) + half_ulp.copysign(p);
            let nudge = m * 2f64.powi(-40 - (rng.next() % 21) as i32);
            let target = if i.is_multiple_of(2) { m + nudge } else { m - nudge };
            (target - p) as f32
        } else {
            operand(rng, false)
        };
        vec![a, b, c]
    }

    /// `a`, `b`, `c` with `a·b = ±h·(1 - j²·2^-46)` for `h` half the ulp of `c`
    /// (`a = 1 + j·2^-23`, `b = 1 - j·2^-23`, scaled): the exact sum lies just inside a
    /// breakpoint next to `c`, nearer than half an f64 ulp, and rounds to `c`. Half of
    /// the time `c` is a subnormal of 23 significant bits, where the breakpoints are
    /// those of the subnormal grid (the module doc's *tiny* sums).
    fn tie_operands(rng: &mut Rng) -> Vec<f32> {
        let subnormal = rng.next().is_multiple_of(2);
        let ec = if subnormal { -127 } else { (rng.next() % 161) as i32 - 80 };
        // Odd, so that the breakpoint's tie goes to the even neighbour, not to `c`.
        let low = rng.next() as u32 & 0x807f_ffff | 1;
        let c = if subnormal { low | 0x0040_0000 } else { ((ec + 127) as u32) << 23 | low };
        let half_ulp = if subnormal { -150 } else { ec - 24 };
        let j = (1 + rng.next() % 200) as f32;
        let (sa, sb) = (half_ulp / 2, half_ulp - half_ulp / 2);
        let a = (1.0 + j * 2f32.powi(-23)) * 2f32.powi(sa);
        let b = (1.0 - j * 2f32.powi(-23)) * 2f32.powi(sb);
        let b = if rng.next().is_multiple_of(2) { b } else { -b };
        vec![a, b, f32::from_bits(c)]
    }

    /// `div`'s operands; every fourth case a quotient at or next to a power of two, or
    /// exact.
    fn div_operands(rng: &mut Rng, i: u64) -> Vec<f32> {
        match i % 4 {
            0 | 1 => vec![operand(rng, false), operand(rng, false)],
            2 => vec![operand(rng, true), operand(rng, true)],
            _ => {
                let b = operand(rng, true);
                let q = f32::from_bits(operand(rng, true).to_bits() & 0xff80_0000);
                vec![neighbour(q * b, (rng.next() % 3) as i32 - 1), b]
            }
        }
    }

    /// `sqrt`'s operand; every fourth case a square of an f32 or next to one, half of
    /// them of a power of two.
    fn sqrt_operands(rng: &mut Rng, i: u64) -> Vec<f32> {
        vec![match i % 4 {
            0 | 1 => operand(rng, false),
            2 => operand(rng, true),
            _ => {
                let r = operand(rng, true);
                let r = if i % 8 == 3 { f32::from_bits(r.to_bits() & 0xff80_0000) } else { r };
                neighbour(r * r, (rng.next() % 3) as i32 - 1)
            }
        }]
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
            _ => f32::from_bits(rng.next() as u32),
        }
    }

    fn same(x: f32, y: f32) -> bool {
        x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan()
    }

    #[test]
    fn fast_paths_accept_only_the_rounded_result() {
        for op in F32Op::ALL {
            let f = with_candidate(op);
            let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ op.arity() as u64);
            let (mut fast, mut wrong) = (0, Vec::new());
            for i in 0..cases() {
                let (x, want) = match op {
                    F32Op::Fma { .. } => {
                        let x = fma_operands(&mut rng, i);
                        let want = x[0].mul_add(x[1], x[2]);
                        (x, want)
                    }
                    F32Op::Div => {
                        let x = div_operands(&mut rng, i);
                        let want = x[0] / x[1];
                        (x, want)
                    }
                    F32Op::Sqrt => {
                        let x = sqrt_operands(&mut rng, i);
                        let want = x[0].sqrt();
                        (x, want)
                    }
                };
                let mut args: Vec<u64> = x.iter().map(|v| u64::from(v.to_bits())).collect();
                args.push(u64::from(candidate(&mut rng, i, want).to_bits()));
                let packed = eval(&f, &args);
                assert!(packed >> 32 <= 1, "{op:?} {x:?}: {packed:#x}");
                let got = f32::from_bits(packed as u32);
                if packed >> 32 == 0 {
                    fast += 1;
                    if !same(got, want) {
                        wrong.push(format!("{x:?} candidate {:#x}: {got:e}", args[x.len()]));
                    }
                }
            }
            assert!(wrong.is_empty(), "{op:?}: {} wrong, e.g. {:?}", wrong.len(), &wrong[..1]);
            // Most operands take the fast path (for `div` and `sqrt` given a right
            // candidate, 7 of 16 cases).
            assert!(fast > cases() / 4, "{op:?}: {fast} fast of {}", cases());
            eprintln!("{op:?}: {fast} of {} on the fast path", cases());
        }
    }

    /// Each builds alone (`float_arithmetic`); the products of `div`'s and `sqrt`'s tests
    /// and their candidates are `.visible`, `fma`'s product and sum hidden as a program's.
    #[test]
    fn the_fast_paths_build_alone() {
        for op in F32Op::ALL {
            for r in [Routine::FastF32(op), Routine::NearestF32(op)] {
                let visible: Vec<bool> =
                    float_arithmetic(r).iter().map(|(_, _, mode)| mode.visible).collect();
                let fma = matches!(op, F32Op::Fma { .. });
                let want = match r {
                    Routine::NearestF32(_) => 0,
                    _ if fma => 2,
                    _ => 3,
                };
                assert_eq!(visible.len(), want, "{}", r.name());
                assert!(visible.iter().all(|&v| v != fma), "{}: {visible:?}", r.name());
            }
        }
    }
}
