//! `div.rn`, `rcp.rn` and `sqrt.rn` (f32 and f64) from Newton steps on a fused `Fma`
//! ([`Routine::Newton`], `FloatPath::Fused`), for devices whose `Fma` a probe found
//! fused: a dozen float instructions on the common path instead of the f64 residuals
//! (f32) or the integer routines (f64, and f32 without f64). The steps use the
//! device's own operations (`.native` `fma`, which is then fused, `div` for the first
//! reciprocal and `rsqrt`, GLSL's `InverseSqrt`, for the first reciprocal square root);
//! `pass::emulate` adds the routine where `pass::legalize_floats` chose `.fused`.
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
//! NaNs, extreme exponents) take the exact path, the same operation on
//! [`FloatPath::F64`] (for f32 the backend's f64 residuals, for f64 the integer routine
//! `pass::emulate` calls) or with `soft` on [`FloatPath::Integer`] (f32 without f64):
//! the routine is a branch between the two. A CPU model of these steps, with the
//! device's initial approximations off by up to 64 ulps, is checked against correctly
//! rounded results, and so is the routine itself, run with the interpreter's semantics
//! and its approximations perturbed the same way (the unit tests below).
//!
//! [`Routine::Newton`]: crate::ir::Routine::Newton

use super::{FnBuilder, NATIVE};
use crate::build::Build;
use crate::ir::{
    BinaryOp, BlockId, CmpOp, FloatMode, FloatPath, InstKind, NewtonOp, OpTy, RegId, Terminator,
    UnaryOp, Value,
};

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

    fn int(self) -> OpTy {
        OpTy::U(self.bits as u8)
    }

    fn signed(self) -> OpTy {
        OpTy::S(self.bits as u8)
    }

    fn float(self) -> OpTy {
        OpTy::F(self.bits as u8)
    }

    /// An integer of the format's width, two's complement.
    fn imm(self, v: i64) -> Value {
        Value::Imm(v as u64 & (u64::MAX >> (64 - self.bits)))
    }

    /// The constant `v` of the format.
    fn konst(self, v: f64) -> Value {
        Value::Imm(if self.bits == 32 { u64::from((v as f32).to_bits()) } else { v.to_bits() })
    }
}

/// The body of [`crate::ir::Routine::Newton`]: `op` on the bit patterns `p` (`a`, `b`
/// for a division, `x` for a square root), by Newton steps where the operands allow and
/// on the exact path elsewhere (module doc). Ends the entry block with the branch
/// between the two; the block both jump to is the current one after.
pub(super) fn build(b: &mut FnBuilder, op: NewtonOp, bits: u8, soft: bool, p: &[Value]) -> Value {
    let f = Format { bits: bits.into() };
    let fast = match op {
        NewtonOp::Div => div_in_range(b, f, p[0], p[1]),
        NewtonOp::Sqrt => sqrt_in_range(b, f, p[0]),
    };
    let result = b.temp(f.int());
    let steps = b.current().0 + 1;
    let (exact, join) = (BlockId(steps + 1), BlockId(steps + 2));
    let steps = BlockId(steps);
    b.end_block(Terminator::Branch { cond: fast, negate: false, if_true: steps, if_false: exact });
    let q = match op {
        NewtonOp::Div => div(b, f, p[0], p[1]),
        NewtonOp::Sqrt => sqrt(b, f, p[0]),
    };
    b.mov(f.int(), result, q);
    b.end_block(Terminator::Jump(join));
    // The exact path, legalized as a program's (`pass::emulate`).
    let path = if soft { FloatPath::Integer } else { FloatPath::F64 };
    let (ty, mode, dst) = (f.float(), FloatMode { path, ..NATIVE }, b.temp(f.float()));
    b.push(match op {
        NewtonOp::Div => {
            InstKind::Binary { op: BinaryOp::Div, ty, mode, dst, lhs: p[0], rhs: p[1] }
        }
        NewtonOp::Sqrt => InstKind::Unary { op: UnaryOp::Sqrt, ty, mode, dst, src: p[0] },
    });
    b.mov(f.int(), result, Value::Reg(dst));
    b.end_block(Terminator::Jump(join));
    Value::Reg(result)
}

/// The biased exponent of `v`.
fn exponent(b: &mut impl Build, f: Format, v: Value) -> Value {
    let shifted = b.bin(BinaryOp::Shr, f.int(), v, Value::Imm(f.significand_bits().into()));
    b.and(f.int(), shifted, Value::Imm(f.exponent_mask()))
}

/// Whether `lo <= v <= hi`, signed.
fn in_range(b: &mut impl Build, f: Format, v: Value, lo: i64, hi: i64) -> RegId {
    let ge = b.cmp(CmpOp::Ge, f.signed(), v, f.imm(lo));
    let le = b.cmp(CmpOp::Le, f.signed(), v, f.imm(hi));
    b.pred_and(ge, le)
}

/// Whether `a / b` takes the steps (module doc, [`Format`]).
fn div_in_range(b: &mut impl Build, f: Format, a: Value, d: Value) -> RegId {
    let (ea, eb) = (exponent(b, f, a), exponent(b, f, d));
    let a_ok = in_range(b, f, ea, f.min_operand_exponent(), f.max_exponent());
    let b_ok = in_range(b, f, eb, 1, f.max_divisor_exponent());
    let diff = b.bin(BinaryOp::Sub, f.int(), ea, eb);
    let (lo, hi) = f.quotient_exponents();
    let q_ok = in_range(b, f, diff, lo - f.bias(), hi - f.bias());
    let aq = b.pred_and(a_ok, q_ok);
    // A zero dividend takes the steps too: every residual is zero, and the result the
    // zero of the quotient's sign.
    let magnitude = b.bin(BinaryOp::Shl, f.int(), a, Value::Imm(1));
    let a_is_zero = b.cmp(CmpOp::Eq, f.int(), magnitude, Value::Imm(0));
    let dividend = b.pred_or(aq, a_is_zero);
    b.pred_and(dividend, b_ok)
}

/// Whether `sqrt(x)` takes the steps: positive (sign bit clear), at least the smallest
/// exponent, finite.
fn sqrt_in_range(b: &mut impl Build, f: Format, x: Value) -> RegId {
    let sh = f.significand_bits();
    let lo = Value::Imm((f.min_operand_exponent() as u64) << sh);
    let ge = b.cmp(CmpOp::Ge, f.signed(), x, lo);
    let lt = b.cmp(CmpOp::Lt, f.signed(), x, Value::Imm(f.exponent_mask() << sh));
    b.pred_and(ge, lt)
}

/// The device's (fused) `Fma`: `a * c + d`.
fn fma(b: &mut impl Build, f: Format, a: Value, c: Value, d: Value) -> Value {
    let (ty, dst) = (f.float(), b.temp(f.float()));
    b.push(InstKind::Fma { ty, mode: NATIVE, dst, a, b: c, c: d });
    Value::Reg(dst)
}

fn fop(b: &mut impl Build, f: Format, op: BinaryOp, x: Value, y: Value) -> Value {
    b.bin(op, f.float(), x, y)
}

fn neg(b: &mut impl Build, f: Format, x: Value) -> Value {
    b.un(UnaryOp::Neg, f.float(), x)
}

/// `(t1, t2, g)`: the float at or below the exact value whose candidate is `q` and
/// whose residual (exact value minus candidate, in sign) is `r`, the next float, and
/// their distance.
fn bracket(b: &mut impl Build, f: Format, q: Value, r: Value) -> (Value, Value, Value) {
    let below = b.cmp(CmpOp::Lt, f.float(), r, f.konst(0.0));
    let prev = b.add(f.int(), q, f.imm(-1));
    let t1 = b.sel(f.int(), below, prev, q);
    let t2 = b.add(f.int(), t1, Value::Imm(1));
    let g = fop(b, f, BinaryOp::Sub, t2, t1);
    (t1, t2, g)
}

/// `a / d` to nearest on the Newton path (module doc).
fn div(b: &mut impl Build, f: Format, a: Value, d: Value) -> Value {
    let (x, y) = (b.un(UnaryOp::Abs, f.float(), a), b.un(UnaryOp::Abs, f.float(), d));
    let neg_y = neg(b, f, y);
    let one = f.konst(1.0);
    // 1/|d| to the device's precision, then one Newton step.
    let (y0, ty) = (b.temp(f.float()), f.float());
    b.push(InstKind::Binary { op: BinaryOp::Div, ty, mode: NATIVE, dst: y0, lhs: one, rhs: y });
    let y0 = Value::Reg(y0);
    let e = fma(b, f, neg_y, y0, one);
    let y1 = fma(b, f, y0, e, y0);
    let q0 = fop(b, f, BinaryOp::Mul, x, y1);
    let r0 = fma(b, f, neg_y, q0, x);
    let q = fma(b, f, r0, y1, q0);
    let r = fma(b, f, neg_y, q, x);
    let (t1, t2, g) = bracket(b, f, q, r);
    // Above the midpoint: |a| - |d|·t1 > |d|·g/2; a tie goes to the even one.
    let r1 = fma(b, f, neg_y, t1, x);
    let yg = fop(b, f, BinaryOp::Mul, y, g);
    let h = fop(b, f, BinaryOp::Mul, yg, f.konst(0.5));
    let above = b.cmp(CmpOp::Gt, f.float(), r1, h);
    let tie = b.cmp(CmpOp::Eq, f.float(), r1, h);
    let low = b.and(f.int(), t1, Value::Imm(1));
    let odd = b.cmp(CmpOp::Eq, f.int(), low, Value::Imm(1));
    let tie_up = b.pred_and(tie, odd);
    let up = b.pred_or(above, tie_up);
    let mag = b.sel(f.int(), up, t2, t1);
    // The sign of the quotient: sign(a) xor sign(d).
    let sx = b.bin(BinaryOp::Xor, f.int(), a, d);
    let sign = b.and(f.int(), sx, Value::Imm(1 << (f.bits - 1)));
    b.or(f.int(), mag, sign)
}

/// `sqrt(x)` to nearest on the Newton path (module doc).
fn sqrt(b: &mut impl Build, f: Format, x: Value) -> Value {
    let half = f.konst(0.5);
    // 1/sqrt(x) to the device's precision, then one coupled (Goldschmidt) step for
    // sqrt(x) (`s`) and 1/(2 sqrt(x)) (`h`), and a correction of `s`.
    let (y0, ty) = (b.temp(f.float()), f.float());
    b.push(InstKind::Unary { op: UnaryOp::Rsqrt, ty, mode: NATIVE, dst: y0, src: x });
    let y0 = Value::Reg(y0);
    let s0 = fop(b, f, BinaryOp::Mul, x, y0);
    let h0 = fop(b, f, BinaryOp::Mul, half, y0);
    let neg_s0 = neg(b, f, s0);
    let e = fma(b, f, neg_s0, h0, half);
    let s1 = fma(b, f, s0, e, s0);
    let h1 = fma(b, f, h0, e, h0);
    let neg_s1 = neg(b, f, s1);
    let d = fma(b, f, neg_s1, s1, x);
    let s = fma(b, f, d, h1, s1);
    let neg_s = neg(b, f, s);
    let r = fma(b, f, neg_s, s, x);
    let (t1, t2, g) = bracket(b, f, s, r);
    // Above the midpoint: (x - t1²) - g·t1 > 0.
    let neg_t1 = neg(b, f, t1);
    let r1 = fma(b, f, neg_t1, t1, x);
    let neg_g = neg(b, f, g);
    let v = fma(b, f, neg_g, t1, r1);
    let up = b.cmp(CmpOp::Gt, f.float(), v, f.konst(0.0));
    b.sel(f.int(), up, t2, t1)
}

/// A CPU model of the steps above, on Rust's fused `mul_add`, with the device's initial
/// approximations (`1/b`, `1/sqrt(x)`) off by up to 64 ulps (Vulkan allows 2.5 and 2),
/// against correctly rounded results: Rust's own f64 division and square root, and for
/// f32 those of f64 rounded once more to f32, which is innocuous (53 ≥ 2·24 + 2).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::arith;
    use crate::ir::{Function, Routine};
    use crate::routines::tests::{eval, with_candidate_argument};
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

    /// The routine with its `.native` approximations (`div`, `rsqrt`) moved by the number
    /// of ulps its last argument (a new one) gives.
    fn perturbed(r: Routine) -> Function {
        let ty = OpTy::U(r.param_bits() as u8);
        let (f, approximations) = with_candidate_argument(r, ty, |dst, k| {
            let (lhs, rhs, mode) = (Value::Reg(dst), Value::Reg(k), FloatMode::default());
            InstKind::Binary { op: BinaryOp::Add, ty, mode, dst, lhs, rhs }
        });
        assert_eq!(approximations, 1, "{}: one approximation, moved", r.name());
        f
    }

    /// The routine itself ([`super::build`]), run with the interpreter's semantics of
    /// each operation (`routines::tests`' evaluator), its approximations off by up to
    /// 64 ulps, against the interpreter's correctly rounded `div.rn` and `sqrt.rn`:
    /// operands in the steps' range as [`check`] draws them, and any bits (mostly the
    /// exact path: zeros, subnormals, infinities, NaNs, extreme exponents).
    #[test]
    fn the_routine_rounds_as_the_interpreter_with_perturbed_approximations() {
        let cases: u32 = std::env::var("PTXVK_ROUTINE_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000);
        let routines = Routine::all().into_iter().filter(|r| matches!(r, Routine::Newton { .. }));
        for r in routines {
            let Routine::Newton { op, bits, .. } = r else { continue };
            let (f, ty) = (perturbed(r), OpTy::F(bits));
            let fmt = Format { bits: bits.into() };
            let (mask, mode) = (u64::MAX >> (64 - bits), FloatMode::default());
            let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ u64::from(bits));
            let mut wrong = Vec::new();
            for i in 0..cases {
                let ulps = (i64::from(i % 129) - 64) as u64 & mask;
                let (a, b) = if i % 2 == 0 {
                    let lo = fmt.min_operand_exponent();
                    let a = if bits == 32 {
                        rng.float::<f32>(lo, fmt.max_exponent()).bits()
                    } else {
                        rng.float::<f64>(lo, fmt.max_exponent()).bits()
                    };
                    let b = if bits == 32 {
                        rng.float::<f32>(1, fmt.max_divisor_exponent()).bits()
                    } else {
                        rng.float::<f64>(1, fmt.max_divisor_exponent()).bits()
                    };
                    (a, b)
                } else {
                    (rng.next() & mask, rng.next() & mask)
                };
                let (got, want) = match op {
                    NewtonOp::Div => {
                        (eval(&f, &[a, b, ulps]), arith::binary(BinaryOp::Div, ty, mode, a, b))
                    }
                    NewtonOp::Sqrt => {
                        let x = a & (mask >> 1);
                        (eval(&f, &[x, ulps]), arith::unary(UnaryOp::Sqrt, ty, mode, x))
                    }
                };
                if got != want {
                    wrong.push(format!("{a:#x} {b:#x} ({ulps} ulps): {got:#x}, want {want:#x}"));
                }
            }
            assert!(
                wrong.is_empty(),
                "{}: {} wrong, e.g. {:?}",
                r.name(),
                wrong.len(),
                &wrong[..wrong.len().min(4)]
            );
        }
    }
}
