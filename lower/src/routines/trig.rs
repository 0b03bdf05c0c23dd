//! `sin.approx` and `cos.approx` ([`Routine::Approx`] of `UnaryOp::{Sin, Cos}`) of an
//! f32 bit pattern, computed in f64 with an exact argument reduction and polynomials
//! and rounded once to f32.
//!
//! Vulkan's own `sin` and `cos` are allowed errors far larger than PTX documents for
//! these instructions (an absolute error of 2^-11, against PTX's 2^-20.5 on [-2π, 2π]),
//! so ptxvk does not use them: f64 addition and multiplication are correctly rounded on
//! every Vulkan device, and the polynomials below are accurate to about 1e-16 on their
//! reduced ranges. The results are therefore within one ulp of the exact value, for
//! every input (the argument is reduced exactly). Special values follow the PTX ISA
//! tables (§9.7.3.18-19); the NaN of ±inf and NaN is the canonical NaN, as the other
//! routines' (the SPIR-V the emitter built before gave `0x7fc00000`).
//!
//! As the other `.approx` routines (`approx.rs`), the body is f64 IR that
//! [`crate::pass::soft_f64`] makes integer code on a target without f64; that form
//! reduces the argument in a loop ([`super::build_with`]).
//!
//! [`Routine::Approx`]: crate::ir::Routine::Approx

use super::approx::{kf, F64Ops, NAN32};
use super::FnBuilder;
use crate::build::Build;
use crate::ir::{
    BinaryOp, BlockId, CmpOp, FloatMode, OpTy, RegId, Rounding, Terminator, UnaryOp, Value,
};

const F64: OpTy = OpTy::F(64);
const F32: OpTy = OpTy::F(32);
const S64: OpTy = OpTy::S(64);
const U32: OpTy = OpTy::U(32);

/// 2/π in 24-bit pieces: `2/π = Σ TWO_OVER_PI_24[i] · 2^(-24(i+1))` to 288 bits (the
/// table of fdlibm's `k_rem_pio2.c`, recomputed from π).
const TWO_OVER_PI_24: [u32; 12] = [
    0xa2f983, 0x6e4e44, 0x1529fc, 0x2757d1, 0xf534dd, 0xc0db62, 0x95993c, 0x439041, 0xfe5163,
    0xabdebb, 0xc561b7, 0x246e3a,
];

/// The iterations of the reduction loop: one per piece of 2/π after the first, as the
/// IR states them ([`crate::ir::Routine::loop_iterations`]).
pub(super) const REDUCTION_ITERATIONS: u32 = crate::ir::SIN_COS_REDUCTION_ITERATIONS;
const _: () = assert!(TWO_OVER_PI_24.len() as u32 - 1 == REDUCTION_ITERATIONS);

/// Piece `i` of 2/π: `TWO_OVER_PI_24[i] · 2^(-24(i+1))`, exact in f64.
fn two_over_pi_piece(i: usize) -> Value {
    kf(f64::from(TWO_OVER_PI_24[i]) * 2f64.powi(-24 * (i as i32 + 1)))
}

/// `x·c - 4·round(x·c/4)`, in [-2, 2]: exact (a multiple of the product's ulp of at
/// most 47 bits, or 0), and small remainders stay small.
fn remainder_mod4(b: &mut impl Build, xd: Value, c: Value) -> Value {
    let p = b.fop(BinaryOp::Mul, xd, c);
    let pq = b.fop(BinaryOp::Mul, p, kf(0.25));
    let pq = b.fop(BinaryOp::Add, pq, kf(0.5));
    let fl = b.floor(pq);
    let whole = b.fop(BinaryOp::Mul, fl, kf(4.0));
    b.fop(BinaryOp::Sub, p, whole)
}

/// `(s, e)` with `s + e = x + y` exactly (Knuth's TwoSum).
fn two_sum(b: &mut impl Build, x: Value, y: Value) -> (Value, Value) {
    let s = b.fop(BinaryOp::Add, x, y);
    let yy = b.fop(BinaryOp::Sub, s, x);
    let syy = b.fop(BinaryOp::Sub, s, yy);
    let e1 = b.fop(BinaryOp::Sub, x, syy);
    let e2 = b.fop(BinaryOp::Sub, y, yy);
    (s, b.fop(BinaryOp::Add, e1, e2))
}

/// `(s, e) + m` in double-double arithmetic.
fn accumulate(b: &mut impl Build, s: Value, e: Value, m: Value) -> (Value, Value) {
    let (s, t) = two_sum(b, s, m);
    (s, b.fop(BinaryOp::Add, e, t))
}

/// The sum of [`remainder_mod4`] over the pieces of 2/π, in double-double arithmetic:
/// unrolled, or (`looped`) as a loop whose step `i` selects piece `i` from the
/// constants by comparisons (the same operations in the same order).
fn reduce(b: &mut FnBuilder, xd: Value, looped: bool) -> (Value, Value) {
    let first = remainder_mod4(b, xd, two_over_pi_piece(0));
    if !looped {
        let mut acc = (first, kf(0.0));
        for i in 1..TWO_OVER_PI_24.len() {
            let m = remainder_mod4(b, xd, two_over_pi_piece(i));
            acc = accumulate(b, acc.0, acc.1, m);
        }
        return acc;
    }
    let (s, e, i) = (b.temp(F64), b.temp(F64), b.temp(U32));
    b.mov(F64, s, first);
    b.mov(F64, e, kf(0.0));
    b.mov(U32, i, Value::Imm(1));
    // This block jumps to the loop's, which branches back to itself or to the next.
    let step = BlockId(b.current().0 + 1);
    let exit = BlockId(step.0 + 1);
    b.end_block(Terminator::Jump(step));
    let mut c = two_over_pi_piece(1);
    for k in 2..TWO_OVER_PI_24.len() {
        let is_k = b.cmp(CmpOp::Eq, U32, Value::Reg(i), Value::Imm(k as u64));
        c = b.fsel(is_k, two_over_pi_piece(k), c);
    }
    let m = remainder_mod4(b, xd, c);
    let (s_next, e_next) = accumulate(b, Value::Reg(s), Value::Reg(e), m);
    b.mov(F64, s, s_next);
    b.mov(F64, e, e_next);
    let i_next = b.add(U32, Value::Reg(i), Value::Imm(1));
    b.mov(U32, i, i_next);
    let count = Value::Imm(TWO_OVER_PI_24.len() as u64);
    let more = b.cmp(CmpOp::Lt, U32, Value::Reg(i), count);
    b.end_block(Terminator::Branch { cond: more, negate: false, if_true: step, if_false: exit });
    (Value::Reg(s), Value::Reg(e))
}

/// Taylor coefficients (-1)^j / (2j + first)!, j < `terms`, highest power first.
fn taylor(terms: u32, first: u32) -> Vec<f64> {
    (0..terms)
        .rev()
        .map(|j| {
            let f: f64 = (1..=2 * j + first).map(f64::from).product();
            if j % 2 == 0 {
                1.0 / f
            } else {
                -1.0 / f
            }
        })
        .collect()
}

/// `sin.approx` (`is_sin`) or `cos.approx` of the f32 bit pattern `x`: x = k π/2 + r
/// with |r| ≤ π/4, reduced exactly for every f32 (a Payne-Hanek reduction in floating
/// point): 2/π is a sum of 24-bit pieces C_i, so each x·C_i is exact in f64 and so is
/// its symmetric remainder modulo 4; the remainders are summed in double-double
/// arithmetic. Then the Taylor series of sin or cos on r, chosen and signed by k mod 4.
pub(super) fn sin_cos(b: &mut FnBuilder, is_sin: bool, x: Value, looped: bool) -> Value {
    let xd = b.convert(F64, F32, None, FloatMode::default(), x);
    let (s, e) = reduce(b, xd, looped);
    let sh = b.fop(BinaryOp::Add, s, kf(0.5));
    let k = b.floor(sh);
    let f = b.fop(BinaryOp::Sub, s, k);
    let (f, f_lo) = two_sum(b, f, e);
    let pio2_hi = kf(std::f64::consts::FRAC_PI_2);
    let main = b.fop(BinaryOp::Mul, f, pio2_hi);
    let c1 = b.fop(BinaryOp::Mul, f, kf(6.123_233_995_736_766e-17));
    let c2 = b.fop(BinaryOp::Mul, f_lo, pio2_hi);
    let corr = b.fop(BinaryOp::Add, c1, c2);
    let r = b.fop(BinaryOp::Add, main, corr);
    // k mod 4 (k is a small integer, or NaN for ±inf/NaN inputs).
    let kq = b.fop(BinaryOp::Mul, k, kf(0.25));
    let kq = b.floor(kq);
    let k4 = b.fop(BinaryOp::Mul, kq, kf(4.0));
    let q = b.fop(BinaryOp::Sub, k, k4);
    let q_nan = b.is_nan(q);
    let q = b.fsel(q_nan, kf(0.0), q);
    let q = b.convert(S64, F64, Some(Rounding::Zero), FloatMode::default(), q);
    let r2 = b.fop(BinaryOp::Mul, r, r);
    // sin r = r (1 - r^2/3! + r^4/5! - …), cos r = 1 - r^2/2! + r^4/4! - …
    let sp = b.horner(r2, &taylor(9, 1));
    let s = b.fop(BinaryOp::Mul, r, sp);
    let c = b.horner(r2, &taylor(10, 0));
    let ns = b.un(UnaryOp::Neg, F64, s);
    let nc = b.un(UnaryOp::Neg, F64, c);
    // sin: [s, c, -s, -c][q]; cos: [c, -s, -c, s][q].
    let table = if is_sin { [s, c, ns, nc] } else { [c, ns, nc, s] };
    let mut v = table[3];
    for (i, &t) in table.iter().enumerate().take(3).rev() {
        let is: RegId = b.cmp(CmpOp::Eq, S64, q, Value::Imm(i as u64));
        v = b.fsel(is, t, v);
    }
    let r = b.round_to_f32(v);
    // sin(±0) = ±0 (the reduction above loses the sign of zero): the f32 of ±0 itself.
    let r = if is_sin {
        let is_zero = b.fcmp(CmpOp::Eq, xd, kf(0.0));
        let x32 = b.round_to_f32(xd);
        b.sel(U32, is_zero, x32, r)
    } else {
        r
    };
    // sin/cos of ±inf or NaN is NaN.
    let ax = b.un(UnaryOp::Abs, F64, xd);
    let finite = b.fcmp(CmpOp::Lt, ax, kf(f64::INFINITY));
    b.sel(U32, finite, r, Value::Imm(NAN32))
}
