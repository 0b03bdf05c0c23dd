//! 64- and 128-bit integer arithmetic for the routines, on top of [`Build`]: a 128-bit
//! value is a `(hi, lo)` pair of 64-bit values. Shift amounts are 32-bit (the IR's
//! shifts give 0 for amounts at or past the width, so no amount needs clamping but
//! the one that could pass 2^32).

use crate::build::Build;
use crate::ir::{BinaryOp, CmpOp, OpTy, RegId, Rounding, UnaryOp, Value};

pub(super) const U64: OpTy = OpTy::U(64);
pub(super) const S64: OpTy = OpTy::S(64);
const U32: OpTy = OpTy::U(32);

pub(super) const fn k(v: u64) -> Value {
    Value::Imm(v)
}

/// Operations on 64-bit values and predicates, and the 128-bit ones.
pub(super) trait Wide: Build {
    fn add64(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Add, U64, a, b)
    }

    fn sub64(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Sub, U64, a, b)
    }

    fn and64(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::And, U64, a, b)
    }

    fn or64(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Or, U64, a, b)
    }

    fn xor64(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Xor, U64, a, b)
    }

    /// `a << n` (`n` a 32-bit amount, or a constant).
    fn shl64(&mut self, a: Value, n: Value) -> Value {
        self.bin(BinaryOp::Shl, U64, a, n)
    }

    /// `a >> n`, logical.
    fn shr64(&mut self, a: Value, n: Value) -> Value {
        self.bin(BinaryOp::Shr, U64, a, n)
    }

    fn eq64(&mut self, a: Value, b: Value) -> RegId {
        self.cmp(CmpOp::Eq, U64, a, b)
    }

    fn ne64(&mut self, a: Value, b: Value) -> RegId {
        self.cmp(CmpOp::Ne, U64, a, b)
    }

    /// Unsigned `a < b`.
    fn lt64(&mut self, a: Value, b: Value) -> RegId {
        self.cmp(CmpOp::Lt, U64, a, b)
    }

    /// Unsigned `a > b`.
    fn gt64(&mut self, a: Value, b: Value) -> RegId {
        self.cmp(CmpOp::Gt, U64, a, b)
    }

    /// Unsigned `a >= b`.
    fn ge64(&mut self, a: Value, b: Value) -> RegId {
        self.cmp(CmpOp::Ge, U64, a, b)
    }

    /// `c ? a : b` on 64-bit values.
    fn sel64(&mut self, c: RegId, a: Value, b: Value) -> Value {
        self.sel(U64, c, a, b)
    }

    /// 1 or 0.
    fn bit(&mut self, c: RegId) -> Value {
        self.sel64(c, k(1), k(0))
    }

    /// min(a, b), unsigned.
    fn umin(&mut self, a: Value, b: u64) -> Value {
        self.bin(BinaryOp::Min, U64, a, k(b))
    }

    /// The 32-bit shift amount of a 64-bit value below 2^32.
    fn amount(&mut self, n: Value) -> Value {
        self.cvt(U32, U64, n)
    }

    /// Leading zeros of a 64-bit value (64 for 0), as a 64-bit value.
    fn clz64(&mut self, x: Value) -> Value {
        let z = self.un(UnaryOp::Clz, U64, x);
        self.cvt(U64, U32, z)
    }

    /// Leading zeros of a 128-bit value (128 for 0).
    fn clz128(&mut self, h: Value, l: Value) -> Value {
        let zh = self.clz64(h);
        let zl = self.clz64(l);
        let zl = self.add64(zl, k(64));
        let h_zero = self.eq64(h, k(0));
        self.sel64(h_zero, zl, zh)
    }

    /// `(h, l) << n` for n in [0, 127]: bits move from `l` to `h` by `64 - n` (n ≤ 64)
    /// or `n - 64` (n ≥ 64); the other of the two amounts is past the width.
    fn shl128(&mut self, h: Value, l: Value, n: Value) -> (Value, Value) {
        let n = self.amount(n);
        let m = self.bin(BinaryOp::Sub, U32, k(64), n);
        let j = self.bin(BinaryOp::Sub, U32, n, k(64));
        let hn = self.shl64(h, n);
        let lm = self.shr64(l, m);
        let lj = self.shl64(l, j);
        let hi = self.or64(hn, lm);
        let hi = self.or64(hi, lj);
        (hi, self.shl64(l, n))
    }

    /// `(h, l) >> n` for a constant n in [1, 63].
    fn shr128_by(&mut self, h: Value, l: Value, n: u64) -> (Value, Value) {
        let ln = self.shr64(l, k(n));
        let hm = self.shl64(h, k(64 - n));
        (self.shr64(h, k(n)), self.or64(ln, hm))
    }

    /// `(h, l) >> n` for any n (as 64 bits), and the bits shifted out, ORed together
    /// (zero exactly when nothing set was lost).
    fn shr128_sticky(&mut self, h: Value, l: Value, n: Value) -> (Value, Value, Value) {
        let n = self.umin(n, 128);
        let n = self.amount(n);
        let m = self.bin(BinaryOp::Sub, U32, k(64), n);
        let j = self.bin(BinaryOp::Sub, U32, n, k(64));
        let i = self.bin(BinaryOp::Sub, U32, k(128), n);
        let ln = self.shr64(l, n);
        let hm = self.shl64(h, m);
        let hj = self.shr64(h, j);
        let lo = self.or64(ln, hm);
        let lo = self.or64(lo, hj);
        let hi = self.shr64(h, n);
        // Lost: the low n bits of l (all of it from n = 64), and of h the low n - 64
        // bits, moved to the top (nothing for n ≤ 64, all of it at 128).
        let unit = self.shl64(k(1), n);
        let mask = self.sub64(unit, k(1));
        let lost_l = self.and64(l, mask);
        let lost_h = self.shl64(h, i);
        (hi, lo, self.or64(lost_l, lost_h))
    }

    /// The 106-bit product of two significands below 2^53.
    fn mul53(&mut self, a: Value, b: Value) -> (Value, Value) {
        let hi = self.bin(BinaryOp::MulHi, U64, a, b);
        (hi, self.bin(BinaryOp::Mul, U64, a, b))
    }

    /// Rounds `(xh, xl) · 2^exp` (a signed 64-bit exponent; nonzero, or zero with only
    /// the sticky bits `lost`) plus the sticky fraction `lost` (nonzero when something
    /// below its last bit was cut off) to an f64 of sign `sign` (0 or 1) by `rounding`:
    /// normalized to bit 127, rounded at 53 bits (fewer for subnormal results),
    /// overflowing to infinity or the largest finite value (IEEE 754 §7.4). With `odd`
    /// (and `rounding` toward zero) it rounds to odd: truncated, the last bit set when
    /// anything was cut off (Boldo & Melquiond 2008).
    #[allow(clippy::too_many_arguments)]
    fn round_to_f64(
        &mut self,
        (xh, xl): (Value, Value),
        exp: Value,
        lost: Value,
        sign: Value,
        rounding: Rounding,
        odd: bool,
    ) -> Value {
        let lz = self.clz128(xh, xl);
        let lz = self.umin(lz, 127);
        let (xh, xl) = self.shl128(xh, xl, lz);
        let exp = self.sub64(exp, lz);
        // Biased exponent of the leading bit: exp + 127 + 1023; below 1, the result is
        // subnormal and keeps 1 - biased fewer bits.
        let biased = self.add64(exp, k(1150));
        let under = self.sub64(k(1), biased);
        let under = self.bin(BinaryOp::Max, S64, under, k(0));
        let t = self.add64(under, k(75));
        let (_, q, _) = self.shr128_sticky(xh, xl, t);
        // The rounding bit is bit t - 1; the rest below it and the earlier sticky bits.
        let t1 = self.sub64(t, k(1));
        let (_, rl, below) = self.shr128_sticky(xh, xl, t1);
        let rb = self.and64(rl, k(1));
        let round_bit = self.eq64(rb, k(1));
        let rest = self.or64(below, lost);
        let rest = self.ne64(rest, k(0));
        let inc = self.round_increment(rounding, q, round_bit, rest, sign);
        let normal = self.cmp(CmpOp::Gt, S64, biased, k(0));
        let b1 = self.sub64(biased, k(1));
        let field = self.sel64(normal, b1, k(0));
        let field = self.shl64(field, k(52));
        let r = self.add64(field, q);
        let mut r = self.add64(r, inc);
        if odd {
            let inexact = self.pred_or(round_bit, rest);
            let low = self.bit(inexact);
            r = self.or64(r, low);
        }
        // Past the largest finite value: infinity, or that value when rounding toward zero.
        const MAX: u64 = 0x7fef_ffff_ffff_ffff;
        let huge = self.gt64(r, k(MAX));
        let negative = self.eq64(sign, k(1));
        let over = match rounding {
            Rounding::Zero => k(MAX),
            Rounding::Down => self.sel64(negative, k(INF), k(MAX)),
            Rounding::Up => self.sel64(negative, k(MAX), k(INF)),
            Rounding::Nearest | Rounding::NearestAway => k(INF),
        };
        let r = self.sel64(huge, over, r);
        let sign_bit = self.shl64(sign, k(63));
        self.or64(r, sign_bit)
    }

    /// 1 when `q` (truncated) must move one unit away from zero: by its round bit and
    /// whether anything below it is set (`rest`), for a result of sign `sign`.
    fn round_increment(
        &mut self,
        rounding: Rounding,
        q: Value,
        round_bit: RegId,
        rest: RegId,
        sign: Value,
    ) -> Value {
        let inc = match rounding {
            // Up from above the midpoint, and from the midpoint to an even result.
            Rounding::Nearest => {
                let q_low = self.and64(q, k(1));
                let q_odd = self.eq64(q_low, k(1));
                let above_or_odd = self.pred_or(rest, q_odd);
                self.pred_and(round_bit, above_or_odd)
            }
            Rounding::NearestAway => round_bit,
            Rounding::Zero => return k(0),
            Rounding::Up | Rounding::Down => {
                let toward = self.eq64(sign, k(u64::from(rounding == Rounding::Down)));
                let inexact = self.pred_or(round_bit, rest);
                self.pred_and(toward, inexact)
            }
        };
        self.bit(inc)
    }
}

impl<B: Build> Wide for B {}

/// The bits of +infinity.
pub(super) const INF: u64 = 0x7ff0_0000_0000_0000;
