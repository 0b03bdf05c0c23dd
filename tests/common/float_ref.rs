//! A reference model of binary floating-point formats and rounding, written for the
//! tests from IEEE 754 and the PTX ISA (§5.2.5, §9.7.9.21), independently of ptxvk's
//! bit-level lowering and of any floating-point hardware: values are exact integers
//! times powers of two, rounding finds the representable neighbours by integer division.
//!
//! Two views of the same model:
//! - bit patterns and [`Class`]es, for any [`Fmt`] (f16, bf16, tf32, f32, f64, e4m3,
//!   e5m2) and any [`Mode`], with `.satfinite` and `.relu` ([`round_class`],
//!   [`add_class`], [`fma_class`], [`div_class`], [`sqrt_class`], ...): the generated
//!   ops tests (`tests/ops/formats.rs`);
//! - f64 values ([`Fmt::add`], [`Fmt::cvt`], [`Fmt::value`], [`to_int`], ...; every
//!   value of these formats is an f64): the math kernels (`common/math_cases.rs`).
//!
//! `tests/math_kernels_e2e.rs` checks the model against Rust's IEEE f32 arithmetic,
//! `f32::mul_add`, the `half` crate and exact residuals.

use std::cmp::Ordering;

/// A binary format: exponent and mantissa bits; `ieee` formats have infinities and
/// NaNs in the all-ones exponent; of the others, E4M3 has only the NaN `S.1111.111`
/// (`nan`) and the FP6/FP4 formats have no NaN at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fmt {
    pub e: u32,
    pub m: u32,
    pub ieee: bool,
    pub nan: bool,
}

pub const F16: Fmt = Fmt { e: 5, m: 10, ieee: true, nan: true };
pub const BF16: Fmt = Fmt { e: 8, m: 7, ieee: true, nan: true };
pub const TF32: Fmt = Fmt { e: 8, m: 10, ieee: true, nan: true };
pub const F32: Fmt = Fmt { e: 8, m: 23, ieee: true, nan: true };
pub const F64: Fmt = Fmt { e: 11, m: 52, ieee: true, nan: true };
pub const E4M3: Fmt = Fmt { e: 4, m: 3, ieee: false, nan: true };
pub const E5M2: Fmt = Fmt { e: 5, m: 2, ieee: true, nan: true };
pub const E2M3: Fmt = Fmt { e: 2, m: 3, ieee: false, nan: false };
pub const E3M2: Fmt = Fmt { e: 3, m: 2, ieee: false, nan: false };
pub const E2M1: Fmt = Fmt { e: 2, m: 1, ieee: false, nan: false };

/// A PTX rounding modifier: `.rn` (IEEE 754 §4.3.1 roundTiesToEven), `.rna`
/// (roundTiesToAway, `cvt` to `.tf32`), and the directed roundings of §4.3.2: `.rz`
/// (toward zero), `.rm` (toward -inf), `.rp` (toward +inf). As the integer
/// modifiers of `cvt` (`.rni`, `.rzi`, `.rmi`, `.rpi`) in [`to_int`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Rn,
    Rna,
    Rz,
    Rm,
    Rp,
}

impl Fmt {
    pub fn bias(self) -> i32 {
        (1 << (self.e - 1)) - 1
    }
    /// The exponent of the smallest normal value.
    pub fn emin(self) -> i32 {
        1 - self.bias()
    }
    /// The largest finite value as (mantissa with hidden bit, exponent of its last bit).
    fn max_finite(self) -> (u128, i32) {
        let emax = if self.ieee {
            (1 << self.e) - 2 - self.bias()
        } else {
            (1 << self.e) - 1 - self.bias()
        };
        let mant = if self.ieee || !self.nan {
            (1u128 << (self.m + 1)) - 1
        } else {
            (1u128 << (self.m + 1)) - 2
        };
        (mant, emax - self.m as i32)
    }
    pub fn max_bits(self) -> u64 {
        if self.ieee {
            (((1u64 << self.e) - 1) << self.m) - 1
        } else if self.nan {
            (1u64 << (self.e + self.m)) - 2
        } else {
            (1u64 << (self.e + self.m)) - 1
        }
    }
    pub fn inf_bits(self) -> u64 {
        ((1u64 << self.e) - 1) << self.m
    }
    pub fn sign_bit(self) -> u64 {
        1 << (self.e + self.m)
    }
    /// The canonical quiet NaN (for E4M3, its one NaN).
    pub fn nan_bits(self) -> u64 {
        if self.ieee {
            self.inf_bits() | 1 << (self.m - 1)
        } else {
            self.sign_bit() - 1
        }
    }
}

// ---------------------------------------------------------------- exact values

/// An exact finite value `(-1)^neg · mant · 2^exp`.
#[derive(Clone, Copy, Debug)]
pub struct Exact {
    pub neg: bool,
    pub mant: u128,
    pub exp: i32,
}

impl Exact {
    /// The integer `v`.
    pub fn int(v: i128) -> Exact {
        Exact { neg: v < 0, mant: v.unsigned_abs(), exp: 0 }
    }
    pub fn is_zero(self) -> bool {
        self.mant == 0
    }
    pub fn neg(self) -> Exact {
        Exact { neg: !self.neg, ..self }
    }
    /// The sign of the value: `Equal` for a zero of either sign.
    pub fn sign(self) -> Ordering {
        if self.is_zero() {
            Ordering::Equal
        } else if self.neg {
            Ordering::Less
        } else {
            Ordering::Greater
        }
    }
    /// The same value with an odd mantissa (or zero).
    fn trimmed(self) -> Exact {
        if self.is_zero() {
            return self;
        }
        let t = self.mant.trailing_zeros();
        Exact { mant: self.mant >> t, exp: self.exp + t as i32, ..self }
    }
}

/// The number of significant bits of `m`.
fn width(m: u128) -> i32 {
    128 - m.leading_zeros() as i32
}

/// What a bit pattern of `f` holds.
#[derive(Clone, Copy, Debug)]
pub enum Class {
    Nan,
    Inf(bool),
    Finite(Exact),
}

pub fn decode(f: Fmt, bits: u64) -> Class {
    let neg = bits & f.sign_bit() != 0;
    let mag = bits & (f.sign_bit() - 1);
    let exp_field = (mag >> f.m) as i32;
    let frac = (mag & ((1 << f.m) - 1)) as u128;
    if f.ieee && exp_field == (1 << f.e) - 1 {
        return if frac == 0 { Class::Inf(neg) } else { Class::Nan };
    }
    if !f.ieee && f.nan && mag == (1 << (f.e + f.m)) - 1 {
        return Class::Nan;
    }
    let (mant, e) = if exp_field == 0 { (frac, 1) } else { (frac | 1 << f.m, exp_field) };
    Class::Finite(Exact { neg, mant, exp: e - f.bias() - f.m as i32 })
}

pub fn decode_f64(x: f64) -> Class {
    decode(F64, x.to_bits())
}

/// The value as an f64: exact for every value of the formats here, else rounded to
/// nearest.
pub fn to_f64(c: Class) -> f64 {
    match c {
        Class::Nan => f64::NAN,
        Class::Inf(n) => {
            if n {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        Class::Finite(x) => f64::from_bits(round(x, F64, Mode::Rn, false, false)),
    }
}

/// `a + b` exactly; an operand that is too small to matter beyond a sticky bit is
/// replaced by one (its magnitude far below the other's last bit), which keeps every
/// rounding of the sum correct.
pub fn add(a: Exact, b: Exact) -> Exact {
    if a.is_zero() {
        return b;
    }
    if b.is_zero() {
        return a;
    }
    let top = |x: Exact| width(x.mant) + x.exp;
    let (big, small) = if top(a) >= top(b) { (a, b) } else { (b, a) };
    // Keep 120 bits below the top of `big`.
    let floor = top(big) - 120;
    let norm = |x: Exact| -> Exact {
        if x.exp >= floor {
            x
        } else {
            let shift = floor - x.exp;
            if shift >= 128 || top(x) < floor {
                // Far below: a sticky unit at the floor.
                Exact { neg: x.neg, mant: 1, exp: floor - 1 }
            } else {
                let kept = x.mant >> shift;
                let lost = x.mant & ((1u128 << shift) - 1) != 0;
                // Keep one more bit as the sticky bit.
                Exact { neg: x.neg, mant: (kept << 1) | u128::from(lost), exp: floor - 1 }
            }
        }
    };
    let (x, y) = (norm(big), norm(small));
    let exp = x.exp.min(y.exp);
    let xm = x.mant << (x.exp - exp);
    let ym = y.mant << (y.exp - exp);
    let (xs, ys) = (
        if x.neg { -(xm as i128) } else { xm as i128 },
        if y.neg { -(ym as i128) } else { ym as i128 },
    );
    let s = xs + ys;
    Exact { neg: s < 0, mant: s.unsigned_abs(), exp }
}

pub fn mul(a: Exact, b: Exact) -> Exact {
    Exact { neg: a.neg != b.neg, mant: a.mant * b.mant, exp: a.exp + b.exp }
}

/// `a / b` (`b` nonzero) as the quotient truncated to at least 64 significant bits
/// with a sticky bit below them (set when the remainder is nonzero): it rounds as the
/// exact quotient does to any format of at most 62 significant bits. The operands'
/// odd parts must fit in 62 bits (values of any format here do).
pub fn div(a: Exact, b: Exact) -> Exact {
    assert!(!b.is_zero(), "division by zero");
    let neg = a.neg != b.neg;
    if a.is_zero() {
        return Exact { neg, mant: 0, exp: 0 };
    }
    let (a, b) = (a.trimmed(), b.trimmed());
    assert!(width(a.mant) <= 62 && width(b.mant) <= 62, "div of {a:?} by {b:?}");
    // The dividend gets 64 bits more than the divisor: a quotient of at least 64 bits.
    let sh = 64 + width(b.mant) - width(a.mant);
    let n = a.mant << sh;
    let (q, r) = (n / b.mant, n % b.mant);
    Exact { neg, mant: q << 1 | u128::from(r != 0), exp: a.exp - sh - b.exp - 1 }
}

/// `√a` (`a` not negative, or a zero) as the root truncated to at least 63 significant
/// bits with a sticky bit below them: it rounds as the exact root does to any format
/// of at most 61 significant bits. The odd part of `a` must fit in 120 bits.
pub fn sqrt(a: Exact) -> Exact {
    if a.is_zero() {
        return a;
    }
    assert!(!a.neg, "sqrt of {a:?}");
    let a = a.trimmed();
    assert!(width(a.mant) <= 120, "sqrt of {a:?}");
    // 125 or 126 bits with an even exponent: a root of 63 bits.
    let mut sh = 126 - width(a.mant);
    if (a.exp - sh).rem_euclid(2) != 0 {
        sh -= 1;
    }
    let n = a.mant << sh;
    let r = n.isqrt();
    Exact { neg: false, mant: r << 1 | u128::from(r * r != n), exp: (a.exp - sh) / 2 - 1 }
}

// ---------------------------------------------------------------- rounding

/// Rounds a finite exact value to `f`'s bit pattern. Overflow goes to the infinity, or
/// to the largest finite value when the rounding is toward zero from it (IEEE 754 §7.4);
/// `satfinite` (and formats without infinity) saturate every overflow to the largest
/// finite value; `relu` turns negative results into +0.
pub fn round(x: Exact, f: Fmt, mode: Mode, satfinite: bool, relu: bool) -> u64 {
    let sign = if x.neg { f.sign_bit() } else { 0 };
    if relu && x.neg {
        return 0;
    }
    if x.mant == 0 {
        return sign;
    }
    let top = width(x.mant) - 1 + x.exp; // exponent of the leading bit
    let q = top.max(f.emin()) - f.m as i32; // exponent of the last representable bit

    // k = floor(|x| / 2^q), with the remainder compared against half a unit.
    let (k, rem_cmp_half, exact) = if q <= x.exp {
        (x.mant << (x.exp - q), Ordering::Less, true)
    } else {
        let sh = (q - x.exp) as u32;
        let (k, rem) =
            if sh >= 128 { (0, x.mant) } else { (x.mant >> sh, x.mant & ((1u128 << sh) - 1)) };
        let half_cmp = if sh > 128 { Ordering::Less } else { rem.cmp(&(1u128 << (sh - 1))) };
        (k, half_cmp, rem == 0)
    };
    let up = match mode {
        Mode::Rz => false,
        Mode::Rp => !exact && !x.neg,
        Mode::Rm => !exact && x.neg,
        Mode::Rna => !exact && rem_cmp_half != Ordering::Less,
        Mode::Rn => match rem_cmp_half {
            Ordering::Greater => true,
            Ordering::Equal => k & 1 == 1,
            Ordering::Less => false,
        },
    };
    let k = k + u128::from(up);
    // Rounding up may carry into a new binade.
    let (k, q) = if k >> (f.m + 1) != 0 { (k >> 1, q + 1) } else { (k, q) };
    let (max_mant, max_exp) = f.max_finite();
    if q > max_exp || (q == max_exp && k > max_mant) {
        let toward_zero = match mode {
            Mode::Rz => true,
            Mode::Rm => !x.neg,
            Mode::Rp => x.neg,
            _ => false,
        };
        return sign
            | if satfinite || toward_zero || !f.ieee { f.max_bits() } else { f.inf_bits() };
    }
    // Encode k · 2^q.
    if k < 1 << f.m {
        return sign | k as u64; // subnormal (q == emin - m)
    }
    let exp_field = (q + f.m as i32 + f.bias()) as u64;
    sign | exp_field << f.m | (k as u64 & ((1 << f.m) - 1))
}

/// `round`, or the IEEE special results: NaN for a NaN, and infinities of the format
/// (or its largest finite value when saturating or without infinity).
pub fn round_class(c: Class, f: Fmt, mode: Mode, satfinite: bool, relu: bool) -> Option<u64> {
    match c {
        Class::Nan => None,
        Class::Inf(neg) => {
            if relu && neg {
                return Some(0);
            }
            let sign = if neg { f.sign_bit() } else { 0 };
            Some(sign | if satfinite || !f.ieee { f.max_bits() } else { f.inf_bits() })
        }
        Class::Finite(x) => Some(round(x, f, mode, satfinite, relu)),
    }
}

// ---------------------------------------------------------------- IEEE operations

/// The IEEE sum (or difference, with `b` negated by the caller) of two classes, rounded:
/// `None` for NaN (IEEE 754 §7.2: ∞ − ∞). An exact zero sum of nonzero operands is +0,
/// or -0 when rounding down; the sum of two zeros is -0 only when both are -0 (or,
/// rounding down, either is) (§6.3).
pub fn add_class(a: Class, b: Class, f: Fmt, mode: Mode, sat: bool, relu: bool) -> Option<u64> {
    match (a, b) {
        (Class::Nan, _) | (_, Class::Nan) => None,
        (Class::Inf(x), Class::Inf(y)) if x != y => None,
        (Class::Inf(x), _) | (_, Class::Inf(x)) => round_class(Class::Inf(x), f, mode, sat, relu),
        (Class::Finite(x), Class::Finite(y)) => {
            let s = add(x, y);
            if s.is_zero() {
                let neg = if x.is_zero() && y.is_zero() {
                    (x.neg && y.neg) || (mode == Mode::Rm && (x.neg || y.neg))
                } else {
                    mode == Mode::Rm
                };
                if relu {
                    return Some(0);
                }
                return Some(if neg { f.sign_bit() } else { 0 });
            }
            Some(round(s, f, mode, sat, relu))
        }
    }
}

/// The exact product (NaN for 0 · ∞, IEEE 754 §7.2).
pub fn mul_class(a: Class, b: Class) -> Class {
    match (a, b) {
        (Class::Nan, _) | (_, Class::Nan) => Class::Nan,
        (Class::Inf(x), Class::Inf(y)) => Class::Inf(x != y),
        (Class::Inf(x), Class::Finite(y)) | (Class::Finite(y), Class::Inf(x)) => {
            if y.is_zero() {
                Class::Nan
            } else {
                Class::Inf(x != y.neg)
            }
        }
        (Class::Finite(x), Class::Finite(y)) => Class::Finite(mul(x, y)),
    }
}

pub fn neg_class(c: Class) -> Class {
    match c {
        Class::Nan => Class::Nan,
        Class::Inf(n) => Class::Inf(!n),
        Class::Finite(x) => Class::Finite(x.neg()),
    }
}

/// `a * b + c` rounded once (`fma`): the product is exact; a zero product keeps its
/// sign for the zero-sum rule.
pub fn fma_class(a: Class, b: Class, c: Class, f: Fmt, mode: Mode, relu: bool) -> Option<u64> {
    add_class(mul_class(a, b), c, f, mode, false, relu)
}

/// `a / b` rounded: NaN for 0/0 and ∞/∞ (IEEE 754 §7.2), an exact infinity for a
/// nonzero finite dividend over zero (§7.3) and for ∞ over a finite divisor, a zero for
/// a zero dividend or an infinite divisor; the sign is always the exclusive or.
pub fn div_class(a: Class, b: Class, f: Fmt, mode: Mode) -> Option<u64> {
    let sign = |n: bool| if n { f.sign_bit() } else { 0 };
    match (a, b) {
        (Class::Nan, _) | (_, Class::Nan) | (Class::Inf(_), Class::Inf(_)) => None,
        (Class::Inf(x), Class::Finite(y)) => Some(sign(x != y.neg) | f.inf_bits()),
        (Class::Finite(x), Class::Inf(y)) => Some(sign(x.neg != y)),
        (Class::Finite(x), Class::Finite(y)) if y.is_zero() => {
            if x.is_zero() {
                None
            } else {
                Some(sign(x.neg != y.neg) | f.inf_bits())
            }
        }
        (Class::Finite(x), Class::Finite(y)) => Some(round(div(x, y), f, mode, false, false)),
    }
}

/// `√a` rounded: √-0 = -0, √+∞ = +∞, NaN below zero (IEEE 754 §5.4.1, §7.2).
pub fn sqrt_class(a: Class, f: Fmt, mode: Mode) -> Option<u64> {
    match a {
        Class::Nan | Class::Inf(true) => None,
        Class::Inf(false) => Some(f.inf_bits()),
        Class::Finite(x) if x.neg && !x.is_zero() => None,
        Class::Finite(x) => Some(round(sqrt(x), f, mode, false, false)),
    }
}

// ---------------------------------------------------------------- f64 values

/// 2^e, exactly (e in f64's range).
pub fn pow2(e: i32) -> f64 {
    assert!((-1074..=1023).contains(&e), "2^{e} is not an f64");
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

/// floor(log2(|x|)) of a finite non-zero f64.
fn exponent(x: f64) -> i32 {
    let b = x.abs().to_bits();
    let e = (b >> 52) as i32;
    if e == 0 {
        63 - b.leading_zeros() as i32 - 1074
    } else {
        e - 1023
    }
}

/// The format's IEEE operations on f64 values (every value of these formats is an
/// f64): the operands are exact, the results are the formats' values, NaN for NaN.
impl Fmt {
    /// The value of a bit pattern.
    pub fn value(self, bits: u64) -> f64 {
        to_f64(decode(self, bits))
    }

    fn value_of(self, r: Option<u64>) -> f64 {
        r.map_or(f64::NAN, |b| self.value(b))
    }

    /// The bits of a value of the format (NaN as [`Fmt::nan_bits`]).
    pub fn encode(self, x: f64) -> u64 {
        if x.is_nan() {
            return self.nan_bits();
        }
        let b = round_class(decode_f64(x), self, Mode::Rz, false, false).unwrap_or(0);
        let v = self.value(b);
        assert!(
            v == x && v.is_sign_negative() == x.is_sign_negative(),
            "{x:e} is not a value of {self:?}"
        );
        b
    }

    /// Whether `x` is exactly a value of the format (NaN is one).
    pub fn holds(self, x: f64) -> bool {
        x.is_nan() || self.cvt(Mode::Rz, x) == x
    }

    /// The largest finite value.
    pub fn max(self) -> f64 {
        self.value(self.max_bits())
    }

    /// The spacing of the format's values in the binade of |x|.
    pub fn quantum(self, x: f64) -> f64 {
        let e = if x == 0.0 { self.emin() } else { exponent(x).max(self.emin()) };
        pow2(e - self.m as i32)
    }

    /// The next format value above `x` (a format value or an infinity).
    pub fn next_up(self, x: f64) -> f64 {
        if x.is_nan() || x == f64::INFINITY {
            return x;
        }
        if x == f64::NEG_INFINITY {
            return -self.max();
        }
        if x == self.max() {
            return f64::INFINITY;
        }
        let b = self.encode(x);
        if x == 0.0 {
            self.value(1)
        } else if x > 0.0 {
            self.value(b + 1)
        } else {
            self.value(b - 1)
        }
    }

    /// The next format value below `x`.
    pub fn next_down(self, x: f64) -> f64 {
        -self.next_up(-x)
    }

    /// An f64 converted to the format (`cvt`).
    pub fn cvt(self, mode: Mode, a: f64) -> f64 {
        self.value_of(round_class(decode_f64(a), self, mode, false, false))
    }

    /// An integer converted to the format (`cvt` from `.s*`/`.u*`).
    pub fn cvt_int(self, mode: Mode, v: i128) -> f64 {
        self.value(round(Exact::int(v), self, mode, false, false))
    }

    /// a + b rounded.
    pub fn add(self, mode: Mode, a: f64, b: f64) -> f64 {
        self.value_of(add_class(decode_f64(a), decode_f64(b), self, mode, false, false))
    }

    /// a × b rounded.
    pub fn mul(self, mode: Mode, a: f64, b: f64) -> f64 {
        let p = mul_class(decode_f64(a), decode_f64(b));
        self.value_of(round_class(p, self, mode, false, false))
    }

    /// a × b + c with one rounding.
    pub fn fma(self, mode: Mode, a: f64, b: f64, c: f64) -> f64 {
        let [a, b, c] = [a, b, c].map(decode_f64);
        self.value_of(fma_class(a, b, c, self, mode, false))
    }

    /// a / b rounded.
    pub fn div(self, mode: Mode, a: f64, b: f64) -> f64 {
        self.value_of(div_class(decode_f64(a), decode_f64(b), self, mode))
    }

    /// √a rounded.
    pub fn sqrt(self, mode: Mode, a: f64) -> f64 {
        self.value_of(sqrt_class(decode_f64(a), self, mode))
    }
}

/// Float to integer (`cvt.rni/rzi/rmi/rpi.{s,u}{8,16,32,64}.{f16,f32,f64}`, PTX ISA
/// §9.7.9.21, Integer Notes): rounded by `mode`, then clamped to the destination range
/// ("For float-to-integer conversions, the result is clamped to the destination range
/// by default"). A NaN gives "Zero if source is not .f64 and destination is not .s64,
/// .u64. Otherwise 1 << (BitWidth(dst) - 1)". Returns the destination's bits,
/// zero-extended.
pub fn to_int(a: f64, mode: Mode, bits: u32, signed: bool, src_f64: bool) -> u64 {
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    if a.is_nan() {
        return if !src_f64 && bits < 64 { 0 } else { 1u64 << (bits - 1) };
    }
    let r = match mode {
        Mode::Rn => a.round_ties_even(),
        Mode::Rna => a.round(),
        Mode::Rz => a.trunc(),
        Mode::Rm => a.floor(),
        Mode::Rp => a.ceil(),
    };
    let (lo, hi): (i128, i128) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let v = if r <= lo as f64 {
        lo
    } else if r >= hi as f64 {
        hi
    } else {
        r as i128
    };
    (v as u64) & mask
}
