//! The `.approx` functions `ex2`, `lg2`, `rsqrt` and `tanh` ([`Routine::Approx`]) of an
//! f32 bit pattern, computed in f64 with argument reduction and polynomials and rounded
//! once to f32 (`InstKind::Narrow`).
//!
//! Vulkan's own `exp2`, `log2` and `inversesqrt` are allowed errors far larger than PTX
//! documents for these instructions, so ptxvk does not use them: f64 addition and
//! multiplication are correctly rounded (the emitter keeps them apart with
//! `NoContraction`), f64 `div` and `sqrt` are Vulkan's (`.native`: errors of a few f64
//! ulps, far below an f32 ulp; without f64 the exact routines), and the polynomials
//! below are accurate to about 1e-16 on their reduced ranges. The results are
//! therefore within one ulp of the exact value, for every input. Special
//! values follow the PTX ISA tables (§9.7.3.15-22); a NaN result is the canonical NaN
//! (as `Narrow` gives for a NaN input).
//!
//! The body is f64 IR like a program's: on a target without f64,
//! [`crate::pass::soft_f64`] makes it integer code (the additions and multiplications
//! `fma` routines), which computes the same bits.
//!
//! [`Routine::Approx`]: crate::ir::Routine::Approx

use super::NATIVE;
use crate::build::Build;
use crate::ir::{
    BinaryOp, CmpOp, FloatFormat, FloatMode, InstKind, OpTy, RegId, Rounding, UnaryOp, Value,
};

const F64: OpTy = OpTy::F(64);
const F32: OpTy = OpTy::F(32);
const S64: OpTy = OpTy::S(64);
const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);
const SIGN32: u64 = 0x8000_0000;
const INF32: u64 = 0x7f80_0000;
/// The IR's f32 NaN (`FloatFormat::nan`, PTX's canonical NaN).
pub(super) const NAN32: u64 = 0x7fff_ffff;

/// 1/k! for k = 0..=13, highest first: e^y on |y| ≤ 0.35 to about 2e-17.
const EXP_TAYLOR: [f64; 14] = [
    1.0 / 6_227_020_800.0,
    1.0 / 479_001_600.0,
    1.0 / 39_916_800.0,
    1.0 / 3_628_800.0,
    1.0 / 362_880.0,
    1.0 / 40_320.0,
    1.0 / 5_040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
    1.0,
    1.0,
];

pub(super) fn kf(v: f64) -> Value {
    Value::Imm(v.to_bits())
}

/// f64 arithmetic to nearest on top of [`Build`].
pub(super) trait F64Ops: Build {
    fn fop(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        self.bin(op, F64, a, b)
    }

    /// Vulkan's f64 `a / b` (`.native`).
    fn fdiv(&mut self, lhs: Value, rhs: Value) -> Value {
        let (dst, mode) = (self.temp(F64), NATIVE);
        self.push(InstKind::Binary { op: BinaryOp::Div, ty: F64, mode, dst, lhs, rhs });
        Value::Reg(dst)
    }

    /// Vulkan's f64 `sqrt(a)` (`.native`).
    fn fsqrt(&mut self, src: Value) -> Value {
        let (dst, mode) = (self.temp(F64), NATIVE);
        self.push(InstKind::Unary { op: UnaryOp::Sqrt, ty: F64, mode, dst, src });
        Value::Reg(dst)
    }

    fn fcmp(&mut self, cmp: CmpOp, a: Value, b: Value) -> RegId {
        self.cmp(cmp, F64, a, b)
    }

    fn fsel(&mut self, c: RegId, a: Value, b: Value) -> Value {
        self.sel(F64, c, a, b)
    }

    fn is_nan(&mut self, a: Value) -> RegId {
        self.fcmp(CmpOp::Nan, a, a)
    }

    /// `c[0] x^(n-1) + … + c[n-1]` by Horner's rule (no multiply-add contracted).
    fn horner(&mut self, x: Value, coeffs: &[f64]) -> Value {
        let mut acc = kf(coeffs[0]);
        for &c in &coeffs[1..] {
            let p = self.fop(BinaryOp::Mul, acc, x);
            acc = self.fop(BinaryOp::Add, p, kf(c));
        }
        acc
    }

    /// 2^t for an f64 `t`, clamped to [-1000, 1000] (NaN stays NaN): t = n + f with n
    /// an integer and |f| ≤ 1/2, 2^f = e^(f ln 2) by its Taylor series, 2^n exactly by
    /// building the f64 exponent.
    fn exp2_f64(&mut self, t: Value) -> Value {
        let over = self.fcmp(CmpOp::Gt, t, kf(1000.0));
        let t = self.fsel(over, kf(1000.0), t);
        let under = self.fcmp(CmpOp::Lt, t, kf(-1000.0));
        let t = self.fsel(under, kf(-1000.0), t);
        let th = self.fop(BinaryOp::Add, t, kf(0.5));
        let n = self.floor(th);
        let f = self.fop(BinaryOp::Sub, t, n);
        let y = self.fop(BinaryOp::Mul, f, kf(std::f64::consts::LN_2));
        let p = self.horner(y, &EXP_TAYLOR);
        // A NaN `n` would convert to an integer of no use: 0 instead (p is NaN then).
        let nan = self.is_nan(n);
        let n = self.fsel(nan, kf(0.0), n);
        let ni = self.convert(S64, F64, Some(Rounding::Zero), FloatMode::default(), n);
        let biased = self.add(U64, ni, Value::Imm(1023));
        // 2^n for n in [-1000, 1000] is normal; the two factors keep it in range.
        let scale = self.bin(BinaryOp::Shl, U64, biased, Value::Imm(52));
        self.fop(BinaryOp::Mul, p, scale)
    }

    /// `floor(a)` (`cvt.rmi.f64.f64`).
    fn floor(&mut self, a: Value) -> Value {
        self.convert(F64, F64, Some(Rounding::Down), FloatMode::default(), a)
    }

    /// An f64 rounded to the f32 bit pattern to nearest (overflow and subnormals exact).
    fn round_to_f32(&mut self, v: Value) -> Value {
        self.narrow(FloatFormat::F32, F64, Rounding::Nearest, false, false, v)
    }
}

impl<B: Build> F64Ops for B {}

/// The routine's result, an f32 bit pattern, of the f32 bit pattern `x`.
pub(super) fn build(b: &mut impl Build, op: UnaryOp, x: Value) -> Value {
    let xd = b.convert(F64, F32, None, FloatMode::default(), x);
    match op {
        UnaryOp::Ex2 => {
            let r = b.exp2_f64(xd);
            b.round_to_f32(r)
        }
        UnaryOp::Lg2 => lg2(b, xd),
        UnaryOp::Rsqrt => rsqrt(b, x, xd),
        // `sin` and `cos` are `trig`'s.
        _ => tanh(b, x, xd),
    }
}

/// x = m · 2^e with m in [sqrt(1/2), sqrt(2)); log2 m = 2 atanh(s) / ln 2 with
/// s = (m - 1)/(m + 1), |s| ≤ 0.172, by its odd series.
fn lg2(b: &mut impl Build, xd: Value) -> Value {
    let exp_field = b.bin(BinaryOp::Shr, U64, xd, Value::Imm(52));
    let exp_field = b.and(U64, exp_field, Value::Imm(0x7ff));
    let e = b.bin(BinaryOp::Sub, U64, exp_field, Value::Imm(1023));
    let frac = b.and(U64, xd, Value::Imm((1 << 52) - 1));
    let m = b.or(U64, frac, Value::Imm(1f64.to_bits()));
    let big = b.fcmp(CmpOp::Gt, m, kf(std::f64::consts::SQRT_2));
    let m_half = b.fop(BinaryOp::Mul, m, kf(0.5));
    let m = b.fsel(big, m_half, m);
    let e1 = b.add(U64, e, Value::Imm(1));
    let e = b.sel(U64, big, e1, e);
    let num = b.fop(BinaryOp::Sub, m, kf(1.0));
    let den = b.fop(BinaryOp::Add, m, kf(1.0));
    let s = b.fdiv(num, den);
    let s2 = b.fop(BinaryOp::Mul, s, s);
    let series: Vec<f64> = (0..12).rev().map(|k| 1.0 / (2 * k + 1) as f64).collect();
    let p = b.horner(s2, &series);
    let atanh = b.fop(BinaryOp::Mul, s, p);
    let frac_log = b.fop(BinaryOp::Mul, atanh, kf(2.0 / std::f64::consts::LN_2));
    let ef = b.convert(F64, S64, Some(Rounding::Nearest), FloatMode::default(), e);
    let r = b.fop(BinaryOp::Add, ef, frac_log);
    let r = b.round_to_f32(r);
    // log2(±0) = -inf, log2(x < 0) = NaN, log2(+inf) = +inf, NaN stays NaN.
    let is_zero = b.fcmp(CmpOp::Eq, xd, kf(0.0));
    let neg = b.fcmp(CmpOp::Lt, xd, kf(0.0));
    let is_inf = b.fcmp(CmpOp::Eq, xd, kf(f64::INFINITY));
    let nan = b.is_nan(xd);
    let r = b.sel(U32, is_zero, Value::Imm(SIGN32 | INF32), r);
    let bad = b.pred_or(neg, nan);
    let r = b.sel(U32, bad, Value::Imm(NAN32), r);
    b.sel(U32, is_inf, Value::Imm(INF32), r)
}

/// 1/sqrt(x): rsqrt(±0) = ±inf, rsqrt(+inf) = +0, rsqrt(x < 0) = NaN.
fn rsqrt(b: &mut impl Build, x: Value, xd: Value) -> Value {
    let s = b.fsqrt(xd);
    let r = b.fdiv(kf(1.0), s);
    let r = b.round_to_f32(r);
    let is_zero = b.fcmp(CmpOp::Eq, xd, kf(0.0));
    let is_inf = b.fcmp(CmpOp::Eq, xd, kf(f64::INFINITY));
    let neg = b.fcmp(CmpOp::Lt, xd, kf(0.0));
    let nan = b.is_nan(xd);
    let sign = b.and(U32, x, Value::Imm(SIGN32));
    let signed_inf = b.or(U32, sign, Value::Imm(INF32));
    let r = b.sel(U32, is_zero, signed_inf, r);
    let r = b.sel(U32, is_inf, Value::Imm(0), r);
    let bad = b.pred_or(neg, nan);
    b.sel(U32, bad, Value::Imm(NAN32), r)
}

/// tanh |x| = 1 - 2/(e^(2|x|) + 1); below 2^-20 tanh x = x to 2^-40. The sign of x
/// (tanh is odd; ±0 stays ±0); NaN stays NaN.
fn tanh(b: &mut impl Build, x: Value, xd: Value) -> Value {
    let ax = b.un(UnaryOp::Abs, F64, xd);
    let t = b.fop(BinaryOp::Mul, ax, kf(2.0 * std::f64::consts::LOG2_E));
    let e = b.exp2_f64(t);
    let e1 = b.fop(BinaryOp::Add, e, kf(1.0));
    let q = b.fdiv(kf(2.0), e1);
    let th = b.fop(BinaryOp::Sub, kf(1.0), q);
    let small = b.fcmp(CmpOp::Lt, ax, kf(2f64.powi(-20)));
    let th = b.fsel(small, ax, th);
    let r = b.round_to_f32(th);
    let sign = b.and(U32, x, Value::Imm(SIGN32));
    b.or(U32, r, sign)
}
