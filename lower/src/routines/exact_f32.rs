//! The exact f32 arithmetic of a target with f64, built of f64 arithmetic:
//! [`Routine::OddF32InF64`], `RoundToOdd` (not `.soft`); [`Routine::DivF32InF64`] and
//! [`Routine::SqrtF32InF64`], `div`, `rcp` and `sqrt` in every rounding; and
//! [`Routine::FmaF32InF64`], `fma.rn`.
//!
//! *Round to odd.* The f32 operands widen exactly to f64, where a product of two is
//! exact; a sum is rounded to nearest and then to odd with its exact error (TwoSum,
//! Knuth; it needs round-to-nearest f64 addition, which Vulkan guarantees for
//! `OpFAdd`): the sum is stepped one ulp toward the exact value when it is inexact and
//! its last mantissa bit is even. `fma.rn.f32` is the f64 `fma` rounded to odd, then
//! to f32: correct, rounding to odd in 53 ≥ 2·24 + 2 bits and then to nearest in 24
//! (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
//! using rounding to odd", IEEE Trans. Computers 57(4), 2008, Theorem 1).
//!
//! The f64 `add`, `sub` and `mul` of round to odd are a program's: the backend emits
//! each as one uncontracted operation, its operands hidden from a driver that folds
//! known operands (`FloatConstants::Hidden`), the same hiding as any f64 arithmetic.
//! With `repaired` (`FloatConstants::Repaired`: a driver that was not probed) the sign
//! of a zero sum to nearest is set from the addends' bits (IEEE 754 §6.3: -0 only when
//! both are -0), since such a driver may fold the sum with a constant `+ 0.0` addend to
//! the other addend once it has inlined the call; the backend repairs only sums with an
//! immediate zero operand, and a routine's operands are parameters.
//!
//! *Division and square root by residuals.* Vulkan's f64 `OpFDiv` is only 2.5 ulp
//! accurate and its `Sqrt` inherits `InverseSqrt`'s precision (Vulkan specification,
//! *Precision and Operation of SPIR-V Instructions*), so the device's f64 quotient or
//! root (`.native`) rounded to f32 is only a candidate `q0` within one ulp of the
//! result. For a midpoint `m` between two f32 neighbours (25 significant bits, an
//! f64), `m·|b|` (25 + 24 bits) and `m·m` (50 bits) are exact in f64, so the sign of
//! `|a| - m·|b|` or `x - m·m` says on which side of `m` the exact value lies
//! ([`round_by_midpoints`]); a quotient's tie goes to the even neighbour, and a
//! midpoint is never the root of an f32. Past `f32::MAX` the next neighbour is 2^128.
//! A directed rounding then moves the magnitude rounded to nearest one ulp down where
//! the exact value lies below it (toward zero), or up where it lies above and the
//! rounding goes away from zero for the result's sign ([`direct_magnitude`]), by the
//! sign of the exact residual `|a| - q·|b|` or `x - q·q`; an overflow to infinity
//! truncates to `f32::MAX` the same way. The special operands (NaN, infinities,
//! zeros, negative radicands) take results selected from their bits.
//!
//! Their f64 arithmetic is `.visible` ([`crate::ir::FloatMode::visible`]): a driver's
//! folding of known operands (lavapipe's gallivm: `x + 0`, `0 + x`, `x - 0`, `0 - x`,
//! `x - x`, `x · 0`, `0 · x`, `x · 1`, `1 · x`) changes a value only for an infinite or
//! NaN operand of a product with a known zero or of a difference with itself, or the
//! sign of a zero. The special operands' results are selected from the bits, so the
//! arithmetic counts only for finite non-zero operands, where no known zero meets an
//! infinity (a zero divisor or radicand is a special operand; a midpoint past
//! `f32::MAX` is 2^128, and one next to an infinite candidate is masked), and every
//! residual is only compared with zero. The candidates are only candidates.
//!
//! [`Routine::OddF32InF64`]: crate::ir::Routine::OddF32InF64
//! [`Routine::DivF32InF64`]: crate::ir::Routine::DivF32InF64
//! [`Routine::SqrtF32InF64`]: crate::ir::Routine::SqrtF32InF64
//! [`Routine::FmaF32InF64`]: crate::ir::Routine::FmaF32InF64

use super::{FnBuilder, NATIVE};
use crate::build::Build;
use crate::ir::{
    BinaryOp, BoolOp, CmpOp, FloatMode, FloatPath, InstKind, OddOp, OpTy, RegId, Rounding, Routine,
    UnaryOp, Value,
};

const F64: OpTy = OpTy::F(64);
const F32: OpTy = OpTy::F(32);
const U64: OpTy = OpTy::U(64);
const U32: OpTy = OpTy::U(32);
const SIGN: u64 = 1 << 63;
const SIGN32: u64 = 0x8000_0000;
const INF32: u64 = 0x7f80_0000;
/// The IR's f32 NaN (`FloatFormat::nan`, PTX's canonical NaN).
const NAN32: u64 = 0x7fff_ffff;

/// The device's f64 division and square root, for the candidates, shown to the
/// driver (module doc).
pub(super) const CANDIDATE: FloatMode = FloatMode { visible: true, ..NATIVE };
/// The f64 arithmetic of `div` and `sqrt`, shown to the driver (module doc).
pub(super) const VISIBLE: FloatMode = FloatMode { path: FloatPath::F64, ..CANDIDATE };

/// The body of `OddF32InF64 { op, repaired }` on the f32 patterns `x`: the f64 pattern
/// of `op` rounded to odd (module doc).
pub(super) fn odd(b: &mut FnBuilder, op: OddOp, repaired: bool, x: &[Value]) -> Value {
    let wide: Vec<Value> = x.iter().map(|&v| b.cvt(F64, OpTy::F(32), v)).collect();
    match op {
        OddOp::Mul => b.bin(BinaryOp::Mul, F64, wide[0], wide[1]),
        OddOp::Add => odd_sum(b, HIDDEN, repaired, wide[0], wide[1]),
        OddOp::Sub => {
            let negated = b.un(UnaryOp::Neg, F64, wide[1]);
            odd_sum(b, HIDDEN, repaired, wide[0], negated)
        }
        OddOp::Fma => {
            let product = b.bin(BinaryOp::Mul, F64, wide[0], wide[1]);
            odd_sum(b, HIDDEN, repaired, product, wide[2])
        }
    }
}

/// The f64 arithmetic of round to odd in `OddF32InF64`: a program's, hidden from the
/// driver (module doc).
const HIDDEN: FloatMode = FloatMode { visible: false, ..VISIBLE };

/// `p + c` rounded to odd (module doc), its f64 arithmetic in `mode` (a program's, or
/// `.visible` in the f64 fast path of `fma`, `fast_f64`).
pub(super) fn odd_sum(
    b: &mut impl Build,
    mode: FloatMode,
    repaired: bool,
    p: Value,
    c: Value,
) -> Value {
    let s = arith(b, mode, BinaryOp::Add, p, c);
    let s = if repaired { zero_sign_of_sum(b, p, c, s) } else { s };
    let err = two_sum_error(b, mode, p, c, s);
    let zero = Value::Imm(0);
    let inexact = b.cmp(CmpOp::Ne, F64, err, zero);
    let low = b.and(U64, s, Value::Imm(1));
    let even = b.cmp(CmpOp::Eq, U64, low, zero);
    let adjust = b.pred_and(inexact, even);
    // Toward err: away from zero (bits + 1) when err has the sign of s, else toward
    // zero (bits - 1). s ≠ 0 whenever err ≠ 0.
    let s_neg = b.cmp(CmpOp::Lt, F64, s, zero);
    let e_neg = b.cmp(CmpOp::Lt, F64, err, zero);
    let differ = b.pred_logic(BoolOp::Xor, s_neg, e_neg);
    let up = b.add(U64, s, Value::Imm(1));
    let down = b.add(U64, s, Value::Imm(u64::MAX));
    let stepped = b.sel(U64, differ, down, up);
    b.sel(U64, adjust, stepped, s)
}

/// The error of `s = RN(x + y)` (f64), exact for finite operands barring overflow
/// (Knuth's TwoSum): `(x - (s - bb)) + (y - bb)` with `bb = s - x`, in `mode`.
pub(super) fn two_sum_error(
    b: &mut impl Build,
    mode: FloatMode,
    x: Value,
    y: Value,
    s: Value,
) -> Value {
    let bb = arith(b, mode, BinaryOp::Sub, s, x);
    let sbb = arith(b, mode, BinaryOp::Sub, s, bb);
    let e1 = arith(b, mode, BinaryOp::Sub, x, sbb);
    let e2 = arith(b, mode, BinaryOp::Sub, y, bb);
    arith(b, mode, BinaryOp::Add, e1, e2)
}

/// The sum `s` of `p` and `c` to nearest with the sign of a zero result from the
/// addends' bits: -0 only when both are -0 (module doc).
pub(super) fn zero_sign_of_sum(b: &mut impl Build, p: Value, c: Value, s: Value) -> Value {
    let magnitude = b.and(U64, s, Value::Imm(SIGN - 1));
    let is_zero = b.cmp(CmpOp::Eq, U64, magnitude, Value::Imm(0));
    let p_neg_zero = b.cmp(CmpOp::Eq, U64, p, Value::Imm(SIGN));
    let c_neg_zero = b.cmp(CmpOp::Eq, U64, c, Value::Imm(SIGN));
    let both = b.pred_and(p_neg_zero, c_neg_zero);
    let zero = b.sel(U64, both, Value::Imm(SIGN), Value::Imm(0));
    b.sel(U64, is_zero, zero, s)
}

/// The body of `FmaF32InF64 { repaired }` on the f32 patterns `x`: `fma` rounded to
/// odd in f64 (its one callee, `OddF32InF64 { op: Fma, repaired }`), then to f32.
pub(super) fn fma(b: &mut FnBuilder, repaired: bool, x: &[Value]) -> Value {
    let odd = b.call(Routine::OddF32InF64 { op: OddOp::Fma, repaired }, x.to_vec());
    b.convert(F32, F64, Some(Rounding::Nearest), FloatMode::default(), odd)
}

/// `op` on f64 `x` and `y`, shown to the driver.
pub(super) fn shown(b: &mut impl Build, op: BinaryOp, x: Value, y: Value) -> Value {
    arith(b, VISIBLE, op, x, y)
}

/// `op` on f64 `x` and `y` in `mode`.
fn arith(b: &mut impl Build, mode: FloatMode, op: BinaryOp, x: Value, y: Value) -> Value {
    let dst = b.temp(F64);
    b.push(InstKind::Binary { op, ty: F64, mode, dst, lhs: x, rhs: y });
    Value::Reg(dst)
}

/// The f64 value of the f32 pattern `v`.
pub(super) fn wide(b: &mut impl Build, v: Value) -> Value {
    b.cvt(F64, F32, v)
}

/// The body of `DivF32InF64(rounding)` on the f32 patterns `a` and `d` (module doc).
pub(super) fn div(b: &mut FnBuilder, rounding: Rounding, a: Value, d: Value) -> Value {
    let xa = b.and(U32, a, Value::Imm(NAN32));
    let xb = b.and(U32, d, Value::Imm(NAN32));
    let signs = b.bin(BinaryOp::Xor, U32, a, d);
    let sign = b.and(U32, signs, Value::Imm(SIGN32));
    // The magnitude of the quotient of the magnitudes, as bits.
    let (x, y) = (wide(b, xa), wide(b, xb));
    let candidate = b.temp(F64);
    let kind = InstKind::Binary {
        op: BinaryOp::Div,
        ty: F64,
        mode: CANDIDATE,
        dst: candidate,
        lhs: x,
        rhs: y,
    };
    b.push(kind);
    let q0 =
        b.convert(F32, F64, Some(Rounding::Nearest), FloatMode::default(), Value::Reg(candidate));
    // sign(|a| - q·|b|), exactly: q·|b| has at most 25 + 24 significant bits.
    let residual = |b: &mut FnBuilder, q: Value| {
        let p = shown(b, BinaryOp::Mul, q, y);
        shown(b, BinaryOp::Sub, x, p)
    };
    let mag = round_by_midpoints(b, q0, &residual);
    let mag = direct_magnitude(b, mag, Some(sign), rounding, &residual);
    // Special cases: NaN operands, 0/0 and inf/inf give NaN; x/0 and inf/y give inf;
    // 0/y and x/inf give 0.
    let a_nan = b.cmp(CmpOp::Gt, U32, xa, Value::Imm(INF32));
    let b_nan = b.cmp(CmpOp::Gt, U32, xb, Value::Imm(INF32));
    let a_inf = b.cmp(CmpOp::Eq, U32, xa, Value::Imm(INF32));
    let b_inf = b.cmp(CmpOp::Eq, U32, xb, Value::Imm(INF32));
    let a_zero = b.cmp(CmpOp::Eq, U32, xa, Value::Imm(0));
    let b_zero = b.cmp(CmpOp::Eq, U32, xb, Value::Imm(0));
    let both_zero = b.pred_and(a_zero, b_zero);
    let both_inf = b.pred_and(a_inf, b_inf);
    let nan = b.pred_or(a_nan, b_nan);
    let nan = b.pred_or(nan, both_zero);
    let nan = b.pred_or(nan, both_inf);
    let to_inf = b.pred_or(a_inf, b_zero);
    let to_zero = b.pred_or(a_zero, b_inf);
    let r = b.sel(U32, to_zero, Value::Imm(0), mag);
    let r = b.sel(U32, to_inf, Value::Imm(INF32), r);
    let signed = b.or(U32, r, sign);
    b.sel(U32, nan, Value::Imm(NAN32), signed)
}

/// The body of `SqrtF32InF64(rounding)` on the f32 pattern `x` (module doc).
pub(super) fn sqrt(b: &mut FnBuilder, rounding: Rounding, x: Value) -> Value {
    let xd = wide(b, x);
    let root = b.temp(F64);
    b.push(InstKind::Unary { op: UnaryOp::Sqrt, ty: F64, mode: CANDIDATE, dst: root, src: xd });
    let q0 = b.convert(F32, F64, Some(Rounding::Nearest), FloatMode::default(), Value::Reg(root));
    // sign(x - q·q), exactly: q·q has at most 50 significant bits.
    let residual = |b: &mut FnBuilder, q: Value| {
        let square = shown(b, BinaryOp::Mul, q, q);
        shown(b, BinaryOp::Sub, xd, square)
    };
    let corrected = round_by_midpoints(b, q0, &residual);
    let corrected = direct_magnitude(b, corrected, None, rounding, &residual);
    // Only positive, finite, non-zero inputs are corrected; the others are selected:
    // +inf and NaN the candidate, negatives NaN, ±0 itself (IEEE 754 §5.4.1).
    let positive = b.cmp(CmpOp::Gt, F32, x, Value::Imm(0));
    let finite = b.cmp(CmpOp::Lt, F32, x, Value::Imm(INF32));
    let regular = b.pred_and(positive, finite);
    let r = b.sel(U32, regular, corrected, q0);
    let negative = b.cmp(CmpOp::Lt, F32, x, Value::Imm(0));
    let zero = b.cmp(CmpOp::Eq, F32, x, Value::Imm(0));
    let r = b.sel(U32, negative, Value::Imm(NAN32), r);
    b.sel(U32, zero, x, r)
}

/// Rounds to nearest even, exactly, given `q0`: the bits of a non-negative f32
/// candidate within one ulp of the result (`+inf` standing for values past
/// `f32::MAX`). `residual(m)` is an exact f64 whose sign tells whether the exact value
/// lies above (> 0), on (= 0) or below (< 0) the f64 midpoint `m` (module doc).
fn round_by_midpoints(
    b: &mut FnBuilder,
    q0: Value,
    residual: &dyn Fn(&mut FnBuilder, Value) -> Value,
) -> Value {
    // The f64 value of f32 bits, 2^128 for +inf.
    let as_f64 = |b: &mut FnBuilder, bits: Value| {
        let is_inf = b.cmp(CmpOp::Eq, U32, bits, Value::Imm(INF32));
        let d = b.cvt(F64, F32, bits);
        b.sel(U64, is_inf, Value::Imm(2f64.powi(128).to_bits()), d)
    };
    let up = b.add(U32, q0, Value::Imm(1));
    let down = b.add(U32, q0, Value::Imm(u64::from(u32::MAX)));
    let (q0d, upd, downd) = (as_f64(b, q0), as_f64(b, up), as_f64(b, down));
    let low = b.and(U32, q0, Value::Imm(1));
    let odd_q0 = b.cmp(CmpOp::Ne, U32, low, Value::Imm(0));
    // Whether the value lies past the midpoint of `lo` and `hi` (above it for `upward`,
    // below it otherwise), a tie counting when q0 is odd; only where `allowed`.
    let past = |b: &mut FnBuilder, lo: Value, hi: Value, upward: bool, allowed: RegId| {
        let sum = shown(b, BinaryOp::Add, lo, hi);
        let m = shown(b, BinaryOp::Mul, sum, Value::Imm(0.5f64.to_bits()));
        let r = residual(b, m);
        let side = if upward { CmpOp::Gt } else { CmpOp::Lt };
        let beyond = b.cmp(side, F64, r, Value::Imm(0));
        let tie = b.cmp(CmpOp::Eq, F64, r, Value::Imm(0));
        let tie_moves = b.pred_and(tie, odd_q0);
        let go = b.pred_or(beyond, tie_moves);
        b.pred_and(go, allowed)
    };
    let below_inf = b.cmp(CmpOp::Lt, U32, q0, Value::Imm(INF32));
    let above_zero = b.cmp(CmpOp::Ne, U32, q0, Value::Imm(0));
    let go_up = past(b, q0d, upd, true, below_inf);
    let go_down = past(b, downd, q0d, false, above_zero);
    let r = b.sel(U32, go_up, up, q0);
    b.sel(U32, go_down, down, r)
}

/// Whether a directed rounding goes away from zero: never, always, or where a
/// predicate holds (by the result's sign).
enum Away {
    Never,
    Always,
    Where(RegId),
}

/// Applies a directed rounding to `mag`, the bits of a non-negative f32 rounded to
/// nearest (+inf for overflow) of an exact magnitude `v`; `sign` is the bits of the
/// result's sign bit (0 or `SIGN32`), `None` for a positive result, and `residual(q)`
/// an exact f64 whose sign is that of `v - q` for the f64 value `q` of `mag`.
fn direct_magnitude(
    b: &mut FnBuilder,
    mag: Value,
    sign: Option<Value>,
    rounding: Rounding,
    residual: &dyn Fn(&mut FnBuilder, Value) -> Value,
) -> Value {
    let away = match (rounding, sign) {
        (Rounding::Zero, _) | (Rounding::Down, None) => Away::Never,
        (Rounding::Up, None) => Away::Always,
        (Rounding::Up, Some(s)) => Away::Where(b.cmp(CmpOp::Eq, U32, s, Value::Imm(0))),
        (Rounding::Down, Some(s)) => Away::Where(b.cmp(CmpOp::Ne, U32, s, Value::Imm(0))),
        (Rounding::Nearest | Rounding::NearestAway, _) => return mag,
    };
    let q = wide(b, mag);
    let res = residual(b, q);
    let below = b.cmp(CmpOp::Lt, F64, res, Value::Imm(0));
    let above = b.cmp(CmpOp::Gt, F64, res, Value::Imm(0));
    let down = b.add(U32, mag, Value::Imm(u64::from(u32::MAX)));
    let up = b.add(U32, mag, Value::Imm(1));
    // Toward zero when the exact value is below (whatever the direction, the magnitude
    // never rounds past it); away from zero only when asked and above.
    match away {
        Away::Never => b.sel(U32, below, down, mag),
        Away::Always => b.sel(U32, above, up, mag),
        Away::Where(away) => {
            let toward = b.temp(OpTy::Pred);
            b.push(InstKind::PredNot { dst: toward, src: away });
            let truncate = b.pred_and(toward, below);
            let grow = b.pred_and(away, above);
            let r = b.sel(U32, truncate, down, mag);
            b.sel(U32, grow, up, r)
        }
    }
}

/// The routines of `div`, `sqrt` and `fma.rn` against an independent model: Rust's
/// f32 `/`, `sqrt` and `mul_add` (correctly rounded to nearest, IEEE 754), and for a
/// directed rounding the neighbour of that result on the side of the exact value,
/// which an exact f64 comparison tells (`|a|` with `n·|b|`, `x` with `n·n`, both
/// products exact). The routines run with the interpreter's semantics of each
/// operation (`routines::tests`' evaluator), their `.native` f64 candidate moved by up
/// to 2^27 f64 ulps (a quarter of an f32 ulp; Vulkan allows 2.5 f64 ulps) where the
/// operands are finite, on edge values, subnormals, random bits, quotients and roots
/// next to f32 values and midpoints, subnormal quotients that are midpoints (ties),
/// and overflow and underflow.
#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::super::tests::{eval, float_arithmetic, with_candidate_argument, Rng, F32_EDGES};
    use crate::ir::{BinaryOp, Function, InstKind, OpTy, Rounding, Routine, Value};

    /// The routine with its `.native` candidate moved by its last argument (a new one,
    /// added to the f64 bits).
    fn perturbed(r: Routine) -> Function {
        let (f, candidates) = with_candidate_argument(r, OpTy::U(64), |dst, k| {
            let (lhs, rhs) = (Value::Reg(dst), Value::Reg(k));
            let (op, ty, mode) = (BinaryOp::Add, OpTy::U(64), Default::default());
            InstKind::Binary { op, ty, mode, dst, lhs, rhs }
        });
        let want = usize::from(!matches!(r, Routine::FmaF32InF64 { .. }));
        assert_eq!(candidates, want, "{}", r.name());
        f
    }

    /// `n`, the quotient or root rounded to nearest, rounded instead by `rounding`,
    /// given how the exact magnitude compares with `|n|` and the result's sign.
    fn directed(n: f32, exact: Ordering, negative: bool, rounding: Rounding) -> f32 {
        let away = match rounding {
            Rounding::Up => !negative,
            Rounding::Down => negative,
            Rounding::Zero => false,
            _ => return n,
        };
        let magnitude = match exact {
            Ordering::Less if !away => n.abs().next_down(),
            Ordering::Greater if away => n.abs().next_up(),
            _ => n.abs(),
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// The model of `r` on f32 `x` (module doc).
    fn model(r: Routine, x: &[f32]) -> f32 {
        let regular = |v: f32| v.is_finite() && v != 0.0;
        match r {
            Routine::FmaF32InF64 { .. } => x[0].mul_add(x[1], x[2]),
            Routine::DivF32InF64(rounding) => {
                let (a, b) = (x[0], x[1]);
                let n = a / b;
                if !(regular(a) && regular(b)) {
                    return n;
                }
                let product = f64::from(n.abs()) * f64::from(b.abs());
                let exact = product.partial_cmp(&f64::from(a.abs())).map(Ordering::reverse);
                let negative = (a.to_bits() ^ b.to_bits()) >> 31 == 1;
                directed(n, exact.unwrap_or(Ordering::Equal), negative, rounding)
            }
            Routine::SqrtF32InF64(rounding) => {
                let n = x[0].sqrt();
                if !(regular(x[0]) && x[0] > 0.0) {
                    return n;
                }
                let square = f64::from(n) * f64::from(n);
                let exact = square.partial_cmp(&f64::from(x[0])).map(Ordering::reverse);
                directed(n, exact.unwrap_or(Ordering::Equal), false, rounding)
            }
            other => panic!("{other:?} has another test"),
        }
    }

    /// Operands and moves (`Rng` is `routines::tests`' xorshift64*).
    trait Draw {
        fn f32(&mut self, e: i32) -> f32;
        fn near(&mut self, v: f32) -> f32;
        fn ulps(&mut self) -> u64;
    }

    impl Draw for Rng {
        /// Edge values, subnormals, random bits, or a value of binary exponent near
        /// `e`, either sign.
        fn f32(&mut self, e: i32) -> f32 {
            match self.next() % 8 {
                0 => F32_EDGES[(self.next() % F32_EDGES.len() as u64) as usize],
                1 => f32::from_bits(self.next() as u32 & 0x807f_ffff),
                2 => f32::from_bits(self.next() as u32),
                _ => {
                    let field = (e + (self.next() % 9) as i32 - 4 + 127).clamp(0, 254) as u32;
                    let bits = (self.next() as u32 & 0x807f_ffff) | field << 23;
                    f32::from_bits(bits)
                }
            }
        }

        /// An f32 near `v` (within two ulps).
        fn near(&mut self, v: f32) -> f32 {
            f32::from_bits(v.to_bits().wrapping_add((self.next() % 5) as u32).wrapping_sub(2))
        }

        /// A move of the candidate: none, a few f64 ulps, or up to 2^27 either way.
        fn ulps(&mut self) -> u64 {
            let m = match self.next() % 4 {
                0 => 0,
                1 => self.next() % 8,
                2 => 1 << 27,
                _ => self.next() % (1 << 27),
            };
            if self.next().is_multiple_of(2) {
                m
            } else {
                m.wrapping_neg()
            }
        }
    }

    /// Operands of `r`: any, or a quotient, root or product next to an f32 value or
    /// a midpoint (`b` times or the square of a value with a 25-bit significand).
    fn operands(r: Routine, rng: &mut Rng) -> Vec<f32> {
        let e = |rng: &mut Rng| (rng.next() % 320) as i32 - 160;
        let (e1, e2) = (e(rng) / 2, e(rng) / 2);
        let (x, y) = (rng.f32(e1), rng.f32(e2));
        // A value of 25 significant bits: an f32, or the midpoint of two.
        let midpoint =
            |rng: &mut Rng, v: f32| f64::from(v) * (1.0 + (rng.next() % 2) as f64 * 2f64.powi(-24));
        match (r, rng.next() % 3) {
            (Routine::FmaF32InF64 { .. }, 0) => vec![x, y, rng.near(-(x * y))],
            (Routine::FmaF32InF64 { .. }, _) => {
                let e3 = e(rng);
                vec![x, y, rng.f32(e3)]
            }
            (Routine::DivF32InF64(_), 0) => {
                let q = midpoint(rng, x) * f64::from(y);
                vec![rng.near(q as f32), y]
            }
            // A subnormal over a power of two: a tie where the bits shifted out are
            // 1 and then zeros (a quotient of f32 is a midpoint only below 2^-126).
            (Routine::DivF32InF64(_), 1) => {
                let power = f32::from_bits((128 + (rng.next() % 24) as u32) << 23);
                let a = f32::from_bits(rng.next() as u32 & 0x807f_ffff);
                vec![a, if rng.next().is_multiple_of(2) { power } else { -power }]
            }
            (Routine::DivF32InF64(_), _) => vec![x, y],
            (_, 0) => {
                let m = midpoint(rng, x.abs());
                vec![rng.near((m * m) as f32)]
            }
            _ => vec![x.abs()],
        }
    }

    /// Each routine builds alone (`float_arithmetic`); the f64 arithmetic of `div` and
    /// `sqrt` is all `.visible`, and `fma`'s is its callee's (hidden as a program's).
    #[test]
    fn the_routines_build_alone_with_their_arithmetic_visible() {
        for r in Routine::all().into_iter().filter(|r| {
            matches!(
                r,
                Routine::DivF32InF64(_) | Routine::SqrtF32InF64(_) | Routine::FmaF32InF64 { .. }
            )
        }) {
            let float_ops: Vec<bool> = float_arithmetic(r)
                .into_iter()
                .filter_map(|(op, ty, mode)| match op? {
                    BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul if ty == OpTy::F(64) => {
                        Some(mode.visible)
                    }
                    _ => None,
                })
                .collect();
            let fma = matches!(r, Routine::FmaF32InF64 { .. });
            assert_eq!(float_ops.is_empty(), fma, "{}", r.name());
            assert!(float_ops.iter().all(|&v| v), "{}: {float_ops:?}", r.name());
        }
    }

    #[test]
    fn exact_f32_routines_round_as_the_ieee_model_with_moved_candidates() {
        let cases: usize = std::env::var("PTXVK_ROUTINE_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000);
        let exact = Routine::all().into_iter().filter(|r| {
            matches!(
                r,
                Routine::DivF32InF64(_) | Routine::SqrtF32InF64(_) | Routine::FmaF32InF64 { .. }
            )
        });
        let mut checked = 0;
        for r in exact {
            let f = perturbed(r);
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ r.name().len() as u64);
            let mut wrong = Vec::new();
            for _ in 0..cases {
                let x = operands(r, &mut rng);
                let mut args: Vec<u64> = x.iter().map(|v| u64::from(v.to_bits())).collect();
                // Infinite and NaN operands keep the device's candidate exact: `sqrt`
                // returns it for +inf and NaN, as Vulkan's `Sqrt` gives those exactly.
                let ulps = rng.ulps();
                args.push(if x.iter().all(|v| v.is_finite()) { ulps } else { 0 });
                let got = f32::from_bits(eval(&f, &args) as u32);
                let want = model(r, &x);
                if got.to_bits() != want.to_bits() && !(got.is_nan() && want.is_nan()) {
                    wrong.push(format!("{x:?} moved {:#x}: {got:e}, want {want:e}", args[x.len()]));
                }
            }
            assert!(
                wrong.is_empty(),
                "{}: {} of {cases} wrong, e.g. {:?}",
                r.name(),
                wrong.len(),
                &wrong[..wrong.len().min(4)]
            );
            checked += cases;
        }
        eprintln!("{checked} cases of the exact f32 routines agree with the IEEE model");
    }
}
