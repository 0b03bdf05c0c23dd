//! Exact float arithmetic in software for the interpreter: every format of
//! [`FloatFormat`] decoded to an exact value, the IEEE 754 operations computed exactly
//! (or with a sticky bit far below the last place, which rounds the same), and one
//! rounding to a format in any direction (PTX ISA 9.2 §9.7.3, §9.7.9.21; IEEE 754
//! §4.3, §7). The host's float unit is never asked to round, so the interpreter is
//! independent of it, and of the emitter's f64 residual tricks it checks.

use std::cmp::Ordering;

use crate::ir::{FloatFormat, Rounding};

/// A rounding direction: PTX's, and round-to-odd (Boldo & Melquiond 2008), which
/// [`crate::ir::InstKind::RoundToOdd`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Nearest,
    Zero,
    Down,
    Up,
    NearestAway,
    Odd,
}

impl From<Rounding> for Mode {
    fn from(r: Rounding) -> Mode {
        match r {
            Rounding::Nearest => Mode::Nearest,
            Rounding::Zero => Mode::Zero,
            Rounding::Down => Mode::Down,
            Rounding::Up => Mode::Up,
            Rounding::NearestAway => Mode::NearestAway,
        }
    }
}

/// An exact finite value `(-1)^neg · mant · 2^exp` (zeros keep their sign).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exact {
    pub neg: bool,
    pub mant: u128,
    pub exp: i32,
}

/// What a bit pattern holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Num {
    Nan,
    Inf(bool),
    Fin(Exact),
}

fn width(m: u128) -> i32 {
    128 - m.leading_zeros() as i32
}

impl Exact {
    pub fn zero(neg: bool) -> Exact {
        Exact { neg, mant: 0, exp: 0 }
    }

    pub fn int(neg: bool, magnitude: u128) -> Exact {
        Exact { neg, mant: magnitude, exp: 0 }
    }

    pub fn is_zero(self) -> bool {
        self.mant == 0
    }

    /// The exponent of the leading bit (meaningless for zero).
    fn top(self) -> i32 {
        width(self.mant) - 1 + self.exp
    }

    /// The same value with an odd mantissa (or zero).
    fn trimmed(self) -> Exact {
        if self.mant == 0 {
            return self;
        }
        let t = self.mant.trailing_zeros();
        Exact { mant: self.mant >> t, exp: self.exp + t as i32, ..self }
    }

    /// Compares magnitudes.
    fn cmp_abs(self, other: Exact) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        let (a, b) = (self.trimmed(), other.trimmed());
        a.top().cmp(&b.top()).then_with(|| {
            let e = a.exp.min(b.exp);
            (a.mant << (a.exp - e)).cmp(&(b.mant << (b.exp - e)))
        })
    }

    /// Compares values (-0 equals +0).
    pub fn compare(self, other: Exact) -> Ordering {
        let sign = |x: Exact| {
            if x.is_zero() {
                0
            } else if x.neg {
                -1
            } else {
                1
            }
        };
        match (sign(self), sign(other)) {
            (a, b) if a != b => a.cmp(&b),
            (0, _) => Ordering::Equal,
            (1, _) => self.cmp_abs(other),
            _ => other.cmp_abs(self),
        }
    }
}

/// The layout facts of a format that decoding and rounding need.
#[derive(Clone, Copy, Debug)]
pub struct Fmt {
    pub e: u32,
    pub m: u32,
    pub format: FloatFormat,
}

impl Fmt {
    pub fn of(format: FloatFormat) -> Fmt {
        let (e, m) = format.layout();
        Fmt { e, m, format }
    }

    pub fn sign_bit(self) -> u64 {
        1 << (self.e + self.m)
    }

    fn bias(self) -> i32 {
        self.format.bias() as i32
    }

    /// The exponent of the last bit of a subnormal.
    fn emin(self) -> i32 {
        1 - self.bias()
    }

    pub fn inf(self, neg: bool) -> u64 {
        let sign = if neg { self.sign_bit() } else { 0 };
        sign | ((1u64 << self.e) - 1) << self.m
    }
}

pub const F32: FloatFormat = FloatFormat::F32;
pub const F64: FloatFormat = FloatFormat::F64;

/// Decodes a bit pattern of `format`.
pub fn decode(format: FloatFormat, bits: u64) -> Num {
    let f = Fmt::of(format);
    let neg = bits & f.sign_bit() != 0;
    let mag = bits & (f.sign_bit() - 1);
    let field = (mag >> f.m) as i32;
    let frac = u128::from(mag & ((1 << f.m) - 1));
    if format.has_infinity() && field == (1 << f.e) - 1 {
        return if frac == 0 { Num::Inf(neg) } else { Num::Nan };
    }
    if format.has_nan() && !format.has_infinity() && mag == (1 << (f.e + f.m)) - 1 {
        return Num::Nan;
    }
    let (mant, e) = if field == 0 { (frac, 1) } else { (frac | 1 << f.m, field) };
    Num::Fin(Exact { neg, mant, exp: e - f.bias() - f.m as i32 })
}

/// Whether `bits` is a subnormal of `format`.
pub fn is_subnormal(format: FloatFormat, bits: u64) -> bool {
    let f = Fmt::of(format);
    let mag = bits & (f.sign_bit() - 1);
    mag != 0 && mag >> f.m == 0
}

/// `.ftz`: a subnormal becomes the zero of its sign (PTX ISA 9.2 §9.7.3).
pub fn flush(format: FloatFormat, bits: u64) -> u64 {
    if is_subnormal(format, bits) {
        bits & Fmt::of(format).sign_bit()
    } else {
        bits
    }
}

/// Rounds a finite exact value to `format`. Past the largest finite value: infinity,
/// or the largest finite value when `satfinite`, when the format has no infinity, or
/// when the direction goes toward zero for the sign (IEEE 754 §7.4).
pub fn round(x: Exact, format: FloatFormat, mode: Mode, satfinite: bool) -> u64 {
    let f = Fmt::of(format);
    let sign = if x.neg { f.sign_bit() } else { 0 };
    if x.mant == 0 {
        return sign;
    }
    // The exponent of the last representable bit at x's magnitude.
    let q = x.top().max(f.emin()) - f.m as i32;
    let (k, half, exact) = if q <= x.exp {
        (x.mant << (x.exp - q), Ordering::Less, true)
    } else {
        let sh = (q - x.exp) as u32;
        let (k, rem) =
            if sh >= 128 { (0, x.mant) } else { (x.mant >> sh, x.mant & ((1u128 << sh) - 1)) };
        let half = if sh > 128 { Ordering::Less } else { rem.cmp(&(1u128 << (sh - 1))) };
        (k, half, rem == 0)
    };
    let (k, up) = match mode {
        Mode::Zero => (k, false),
        Mode::Up => (k, !exact && !x.neg),
        Mode::Down => (k, !exact && x.neg),
        Mode::NearestAway => (k, !exact && half != Ordering::Less),
        Mode::Nearest => (k, half == Ordering::Greater || (half == Ordering::Equal && k & 1 == 1)),
        Mode::Odd => (if exact { k } else { k | 1 }, false),
    };
    let k = k + u128::from(up);
    let (k, q) = if k >> (f.m + 1) != 0 { (k >> 1, q + 1) } else { (k, q) };
    let max = u128::from(format.max_finite());
    let max_q = (max >> f.m) as i32 - f.bias() - f.m as i32;
    let max_k = (max & ((1 << f.m) - 1)) | 1 << f.m;
    if q > max_q || (q == max_q && k > max_k) {
        let toward_zero = match mode {
            Mode::Zero | Mode::Odd => true,
            Mode::Down => !x.neg,
            Mode::Up => x.neg,
            _ => false,
        };
        return sign
            | if satfinite || toward_zero || !format.has_infinity() {
                format.max_finite()
            } else {
                f.inf(false)
            };
    }
    if k < 1 << f.m {
        return sign | k as u64;
    }
    let field = (q + f.m as i32 + f.bias()) as u64;
    sign | field << f.m | (k as u64 & ((1 << f.m) - 1))
}

/// Rounds any value: NaN gives the format's NaN ([`FloatFormat::nan`]), infinities
/// saturate in formats without them, or under `satfinite`.
pub fn round_num(n: Num, format: FloatFormat, mode: Mode, satfinite: bool) -> u64 {
    match n {
        Num::Nan => format.nan(),
        Num::Inf(neg) => {
            let sign = if neg { Fmt::of(format).sign_bit() } else { 0 };
            if satfinite || !format.has_infinity() {
                sign | format.max_finite()
            } else {
                Fmt::of(format).inf(neg)
            }
        }
        Num::Fin(x) => round(x, format, mode, satfinite),
    }
}

/// `a + b` exactly, an operand far below the other's last place replaced by a sticky
/// unit, which keeps every rounding to a format of at most 64 bits correct. An exact
/// zero sum of operands of opposite signs is +0 (-0 when rounding down, IEEE 754 §6.3).
pub fn add(a: Exact, b: Exact, mode: Mode) -> Exact {
    if a.is_zero() && b.is_zero() {
        let neg = if a.neg == b.neg { a.neg } else { mode == Mode::Down };
        return Exact::zero(neg);
    }
    if a.is_zero() {
        return b;
    }
    if b.is_zero() {
        return a;
    }
    let (big, small) = if a.top() >= b.top() { (a, b) } else { (b, a) };
    let floor = big.top() - 120;
    let norm = |x: Exact| -> Exact {
        if x.exp >= floor {
            x
        } else if x.top() < floor {
            Exact { neg: x.neg, mant: 1, exp: floor - 1 }
        } else {
            let shift = (floor - x.exp) as u32;
            let lost = x.mant & ((1u128 << shift) - 1) != 0;
            Exact { neg: x.neg, mant: (x.mant >> shift) << 1 | u128::from(lost), exp: floor - 1 }
        }
    };
    let (x, y) = (norm(big), norm(small));
    let exp = x.exp.min(y.exp);
    let signed = |v: Exact| {
        let m = (v.mant << (v.exp - exp)) as i128;
        if v.neg {
            -m
        } else {
            m
        }
    };
    let s = signed(x) + signed(y);
    if s == 0 {
        return Exact::zero(mode == Mode::Down);
    }
    Exact { neg: s < 0, mant: s.unsigned_abs(), exp }
}

/// `a · b`, exact for operands of at most 64 significant bits.
pub fn mul(a: Exact, b: Exact) -> Exact {
    let (a, b) = (a.trimmed(), b.trimmed());
    Exact { neg: a.neg != b.neg, mant: a.mant * b.mant, exp: a.exp + b.exp }
}

/// `a / b` (`b` nonzero) truncated to at least 64 significant bits with a sticky bit
/// below them, which rounds as the exact quotient does to any format of at most 62
/// bits. Operands of formats up to f64.
pub fn div(a: Exact, b: Exact) -> Exact {
    let neg = a.neg != b.neg;
    if a.is_zero() {
        return Exact::zero(neg);
    }
    let (a, b) = (a.trimmed(), b.trimmed());
    let sh = 64 + width(b.mant) - width(a.mant);
    let n = a.mant << sh;
    let (q, r) = (n / b.mant, n % b.mant);
    Exact { neg, mant: q << 1 | u128::from(r != 0), exp: a.exp - sh - b.exp - 1 }
}

/// `√a` (`a` positive) truncated to at least 63 significant bits with a sticky bit.
pub fn sqrt(a: Exact) -> Exact {
    if a.is_zero() {
        return a;
    }
    let a = a.trimmed();
    let mut sh = 126 - width(a.mant);
    if (a.exp - sh).rem_euclid(2) != 0 {
        sh -= 1;
    }
    let n = a.mant << sh;
    let r = n.isqrt();
    Exact { neg: false, mant: r << 1 | u128::from(r * r != n), exp: (a.exp - sh) / 2 - 1 }
}

// ------------------------------------------------------------ IEEE operations

/// `a + b` rounded (IEEE 754 §6.1, §7.2: ∞ − ∞ is NaN).
pub fn add_num(a: Num, b: Num, format: FloatFormat, mode: Mode) -> u64 {
    let n = match (a, b) {
        (Num::Nan, _) | (_, Num::Nan) => Num::Nan,
        (Num::Inf(x), Num::Inf(y)) if x != y => Num::Nan,
        (Num::Inf(x), _) | (_, Num::Inf(x)) => Num::Inf(x),
        (Num::Fin(x), Num::Fin(y)) => Num::Fin(add(x, y, mode)),
    };
    round_num(n, format, mode, false)
}

pub fn neg_num(a: Num) -> Num {
    match a {
        Num::Nan => Num::Nan,
        Num::Inf(n) => Num::Inf(!n),
        Num::Fin(x) => Num::Fin(Exact { neg: !x.neg, ..x }),
    }
}

/// The exact product (0 · ∞ is NaN).
pub fn mul_num(a: Num, b: Num) -> Num {
    match (a, b) {
        (Num::Nan, _) | (_, Num::Nan) => Num::Nan,
        (Num::Inf(x), Num::Inf(y)) => Num::Inf(x != y),
        (Num::Inf(x), Num::Fin(f)) | (Num::Fin(f), Num::Inf(x)) => {
            if f.is_zero() {
                Num::Nan
            } else {
                Num::Inf(x != f.neg)
            }
        }
        (Num::Fin(x), Num::Fin(y)) => Num::Fin(mul(x, y)),
    }
}

/// `a · b + c` with one rounding.
pub fn fma_num(a: Num, b: Num, c: Num, format: FloatFormat, mode: Mode) -> u64 {
    add_num(mul_num(a, b), c, format, mode)
}

/// `a / b` rounded (0/0 and ∞/∞ are NaN; x/0 is an infinity).
pub fn div_num(a: Num, b: Num, format: FloatFormat, mode: Mode) -> u64 {
    let n = match (a, b) {
        (Num::Nan, _) | (_, Num::Nan) | (Num::Inf(_), Num::Inf(_)) => Num::Nan,
        (Num::Inf(x), Num::Fin(f)) => Num::Inf(x != f.neg),
        (Num::Fin(f), Num::Inf(x)) => Num::Fin(Exact::zero(x != f.neg)),
        (Num::Fin(x), Num::Fin(y)) if y.is_zero() => {
            if x.is_zero() {
                Num::Nan
            } else {
                Num::Inf(x.neg != y.neg)
            }
        }
        (Num::Fin(x), Num::Fin(y)) => Num::Fin(div(x, y)),
    };
    round_num(n, format, mode, false)
}

/// `√a` rounded (√-0 = -0, NaN below zero).
pub fn sqrt_num(a: Num, format: FloatFormat, mode: Mode) -> u64 {
    let n = match a {
        Num::Nan | Num::Inf(true) => Num::Nan,
        Num::Inf(false) => Num::Inf(false),
        Num::Fin(x) if x.is_zero() => Num::Fin(x),
        Num::Fin(x) if x.neg => Num::Nan,
        Num::Fin(x) => Num::Fin(sqrt(x)),
    };
    round_num(n, format, mode, false)
}

/// Rounds `x` to an integral value of the same format (`cvt.rni` and friends).
pub fn round_integral(a: Num, format: FloatFormat, mode: Mode) -> u64 {
    let Num::Fin(x) = a else { return round_num(a, format, mode, false) };
    if x.exp >= 0 || x.is_zero() {
        return round(x, format, mode, false);
    }
    let int = to_integer(x, mode);
    let mag = int.unsigned_abs();
    // A zero keeps the operand's sign (IEEE 754 §5.9).
    round(Exact { neg: x.neg, mant: mag, exp: 0 }, format, mode, false)
}

/// `x` rounded to an integer in `mode` (magnitudes below 2^126).
pub fn to_integer(x: Exact, mode: Mode) -> i128 {
    let (int, frac_cmp, exact) = if x.exp >= 0 {
        if x.top() >= 126 {
            return if x.neg { i128::MIN } else { i128::MAX };
        }
        (x.mant << x.exp, Ordering::Less, true)
    } else {
        let sh = (-x.exp) as u32;
        if sh >= 128 {
            (0, if sh == 128 { x.mant.cmp(&(1u128 << 127)) } else { Ordering::Less }, x.mant == 0)
        } else {
            let rem = x.mant & ((1u128 << sh) - 1);
            (x.mant >> sh, rem.cmp(&(1u128 << (sh - 1))), rem == 0)
        }
    };
    let up = match mode {
        Mode::Zero => false,
        Mode::Up => !exact && !x.neg,
        Mode::Down => !exact && x.neg,
        Mode::NearestAway => !exact && frac_cmp != Ordering::Less,
        Mode::Nearest => {
            frac_cmp == Ordering::Greater || (frac_cmp == Ordering::Equal && int & 1 == 1)
        }
        Mode::Odd => !exact && int & 1 == 0,
    };
    let mag = (int + u128::from(up)) as i128;
    if x.neg {
        -mag
    } else {
        mag
    }
}

/// The exact value of `f64` bits, as an `Exact` if finite.
pub fn decode_f64(bits: u64) -> Num {
    decode(F64, bits)
}

/// An f64 approximation of a value (NaN for NaN), for the `.approx` functions.
pub fn to_host(n: Num) -> f64 {
    match n {
        Num::Nan => f64::NAN,
        Num::Inf(neg) => {
            if neg {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        Num::Fin(x) => f64::from_bits(round(x, F64, Mode::Nearest, false)),
    }
}

/// The exact value of a host f64 (NaN for NaN).
pub fn from_host(x: f64) -> Num {
    decode_f64(x.to_bits())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_of(x: f32) -> Num {
        decode(F32, u64::from(x.to_bits()))
    }

    #[test]
    fn rounding_directions_bracket_a_third() {
        // 1/3 in f32: nearest is 0x3eaaaaab, toward zero and down 0x3eaaaaaa.
        let (one, three) = (f32_of(1.0), f32_of(3.0));
        assert_eq!(div_num(one, three, F32, Mode::Nearest), 0x3eaa_aaab);
        assert_eq!(div_num(one, three, F32, Mode::Zero), 0x3eaa_aaaa);
        assert_eq!(div_num(one, three, F32, Mode::Down), 0x3eaa_aaaa);
        assert_eq!(div_num(one, three, F32, Mode::Up), 0x3eaa_aaab);
        // -1/3 mirrored.
        let m = neg_num(one);
        assert_eq!(div_num(m, three, F32, Mode::Down), 0xbeaa_aaab);
        assert_eq!(div_num(m, three, F32, Mode::Up), 0xbeaa_aaaa);
    }

    #[test]
    fn fma_rounds_once() {
        // (1 + 2^-23) * (1 - 2^-23) - 1 = -2^-46 exactly; a separate product rounds it
        // to 1 and gives 0.
        let a = f32_of(1.0 + f32::EPSILON);
        let b = f32_of(1.0 - f32::EPSILON);
        let c = f32_of(-1.0);
        assert_eq!(fma_num(a, b, c, F32, Mode::Nearest), (-(2f32.powi(-46))).to_bits().into());
    }

    #[test]
    fn specials_and_signed_zeros() {
        let (pz, nz) = (f32_of(0.0), f32_of(-0.0));
        assert_eq!(add_num(pz, nz, F32, Mode::Nearest), 0);
        assert_eq!(add_num(pz, nz, F32, Mode::Down), 0x8000_0000);
        assert_eq!(add_num(nz, nz, F32, Mode::Nearest), 0x8000_0000);
        let inf = f32_of(f32::INFINITY);
        assert_eq!(add_num(inf, neg_num(inf), F32, Mode::Nearest), 0x7fff_ffff);
        assert_eq!(sqrt_num(nz, F32, Mode::Nearest), 0x8000_0000);
        assert_eq!(div_num(f32_of(1.0), nz, F32, Mode::Nearest), 0xff80_0000);
        // Overflow toward zero saturates.
        let big = f32_of(f32::MAX);
        assert_eq!(add_num(big, big, F32, Mode::Zero), u64::from(f32::MAX.to_bits()));
        assert_eq!(add_num(big, big, F32, Mode::Nearest), 0x7f80_0000);
    }

    #[test]
    fn agrees_with_the_host_to_nearest() {
        // The host's f64 arithmetic is IEEE round-to-nearest: an independent check.
        let mut s = 0x1234_5678_9abc_def0u64;
        for _ in 0..2000 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let a = f64::from_bits(s >> 2 ^ 0x3ff0_0000_0000_0000 ^ (s & 1 << 63));
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let b = f64::from_bits((s >> 3) ^ 0x3fe0_0000_0000_0000);
            let (na, nb) = (from_host(a), from_host(b));
            assert_eq!(add_num(na, nb, F64, Mode::Nearest), (a + b).to_bits(), "{a} + {b}");
            assert_eq!(round_num(mul_num(na, nb), F64, Mode::Nearest, false), (a * b).to_bits());
            assert_eq!(div_num(na, nb, F64, Mode::Nearest), (a / b).to_bits(), "{a} / {b}");
            assert_eq!(sqrt_num(nb, F64, Mode::Nearest), b.sqrt().to_bits(), "sqrt {b}");
            let c = f64::from_bits(s.rotate_left(17) >> 2);
            let want = a.mul_add(b, c).to_bits();
            assert_eq!(fma_num(na, nb, from_host(c), F64, Mode::Nearest), want);
            assert_eq!(round_num(na, F32, Mode::Nearest, false), u64::from((a as f32).to_bits()));
        }
    }

    #[test]
    fn half_formats_match_the_half_crate_to_nearest() {
        for bits in (0u32..=0xffff).step_by(7) {
            let x = f32::from_bits(bits.wrapping_mul(0x9e37_79b9));
            let n = decode(F32, u64::from(x.to_bits()));
            let h = half::f16::from_f32(x);
            let got = round_num(n, FloatFormat::F16, Mode::Nearest, false);
            if !x.is_nan() {
                assert_eq!(got, u64::from(h.to_bits()), "{x}");
                let bf = half::bf16::from_f32(x);
                assert_eq!(
                    round_num(n, FloatFormat::Bf16, Mode::Nearest, false),
                    u64::from(bf.to_bits())
                );
            }
        }
    }
}
