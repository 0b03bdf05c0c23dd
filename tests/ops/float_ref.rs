//! A reference model of binary floating-point formats and rounding, written for the
//! tests from IEEE 754 and the PTX ISA (§5.2.5, §9.7.9.21), independently of ptxvk's
//! bit-level lowering: values are exact integers times powers of two, rounding finds
//! the representable neighbours by integer division.

/// A binary format: exponent and mantissa bits; `ieee` formats have infinities and
/// NaNs in the all-ones exponent; E4M3 has only the NaN `S.1111.111`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fmt {
    pub e: u32,
    pub m: u32,
    pub ieee: bool,
}

pub const F16: Fmt = Fmt { e: 5, m: 10, ieee: true };
pub const BF16: Fmt = Fmt { e: 8, m: 7, ieee: true };
pub const TF32: Fmt = Fmt { e: 8, m: 10, ieee: true };
pub const F32: Fmt = Fmt { e: 8, m: 23, ieee: true };
pub const F64: Fmt = Fmt { e: 11, m: 52, ieee: true };
pub const E4M3: Fmt = Fmt { e: 4, m: 3, ieee: false };
pub const E5M2: Fmt = Fmt { e: 5, m: 2, ieee: true };

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
    /// The largest finite value as (mantissa with hidden bit, exponent of its last bit).
    fn max_finite(self) -> (u128, i32) {
        let emax = if self.ieee {
            (1 << self.e) - 2 - self.bias()
        } else {
            (1 << self.e) - 1 - self.bias()
        };
        let mant =
            if self.ieee { (1u128 << (self.m + 1)) - 1 } else { (1u128 << (self.m + 1)) - 2 };
        (mant, emax - self.m as i32)
    }
    pub fn max_bits(self) -> u64 {
        if self.ieee {
            (((1u64 << self.e) - 1) << self.m) - 1
        } else {
            (1u64 << (self.e + self.m)) - 2
        }
    }
    pub fn inf_bits(self) -> u64 {
        ((1u64 << self.e) - 1) << self.m
    }
    pub fn sign_bit(self) -> u64 {
        1 << (self.e + self.m)
    }
}

/// An exact finite value `(-1)^neg · mant · 2^exp`.
#[derive(Clone, Copy, Debug)]
pub struct Exact {
    pub neg: bool,
    pub mant: u128,
    pub exp: i32,
}

impl Exact {
    pub fn is_zero(self) -> bool {
        self.mant == 0
    }
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
    if !f.ieee && mag == (1 << (f.e + f.m)) - 1 {
        return Class::Nan;
    }
    let (mant, e) = if exp_field == 0 { (frac, 1) } else { (frac | 1 << f.m, exp_field) };
    Class::Finite(Exact { neg, mant, exp: e - f.bias() - f.m as i32 })
}

pub fn decode_f64(x: f64) -> Class {
    if x.is_nan() {
        return Class::Nan;
    }
    if x.is_infinite() {
        return Class::Inf(x < 0.0);
    }
    let bits = x.to_bits();
    let neg = bits >> 63 == 1;
    let e = ((bits >> 52) & 0x7ff) as i32;
    let frac = u128::from(bits & ((1 << 52) - 1));
    let (mant, e) = if e == 0 { (frac, 1) } else { (frac | 1 << 52, e) };
    Class::Finite(Exact { neg, mant, exp: e - 1023 - 52 })
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
    let top = |x: Exact| 128 - x.mant.leading_zeros() as i32 + x.exp;
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

/// Rounds a finite exact value to `f`'s bit pattern. `satfinite` (and formats without
/// infinity) saturate overflow to the largest finite value; `relu` turns negative
/// results into +0.
pub fn round(x: Exact, f: Fmt, mode: Mode, satfinite: bool, relu: bool) -> u64 {
    let sign = if x.neg { f.sign_bit() } else { 0 };
    if relu && x.neg {
        return 0;
    }
    if x.mant == 0 {
        return sign;
    }
    let top = 127 - x.mant.leading_zeros() as i32 + x.exp; // exponent of the leading bit
    let emin = 1 - f.bias();
    let q = top.max(emin) - f.m as i32; // exponent of the last representable bit
                                        // k = floor(|x| / 2^q), with the remainder compared against half a unit.
    let (k, rem_cmp_half, exact) = if q <= x.exp {
        (x.mant << (x.exp - q), std::cmp::Ordering::Less, true)
    } else {
        let sh = (q - x.exp) as u32;
        if sh >= 127 {
            (0, std::cmp::Ordering::Less, false)
        } else {
            let k = x.mant >> sh;
            let rem = x.mant & ((1u128 << sh) - 1);
            let half = 1u128 << (sh - 1);
            (k, rem.cmp(&half), rem == 0)
        }
    };
    let up = match mode {
        Mode::Rz => false,
        Mode::Rp => !exact && !x.neg,
        Mode::Rm => !exact && x.neg,
        Mode::Rna => !exact && rem_cmp_half != std::cmp::Ordering::Less,
        Mode::Rn => match rem_cmp_half {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => k & 1 == 1,
            std::cmp::Ordering::Less => false,
        },
    };
    let k = k + u128::from(up);
    // Overflow?
    let (max_mant, max_exp) = f.max_finite();
    let over = (k as f64) * 2f64.powi(q) > (max_mant as f64) * 2f64.powi(max_exp);
    if over {
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
    let (k, q) = if k >> (f.m + 1) != 0 { (k >> 1, q + 1) } else { (k, q) };
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

/// The IEEE sum (or difference, with `b` negated by the caller) of two classes, rounded:
/// `None` for NaN. An exact zero sum of nonzero operands is +0, or -0 when rounding down;
/// the sum of two zeros is -0 only when both are -0 (or, rounding down, either is).
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
        Class::Finite(x) => Class::Finite(Exact { neg: !x.neg, ..x }),
    }
}

/// `a * b + c` rounded once (`fma`): the product is exact; a zero product keeps its
/// sign for the zero-sum rule.
pub fn fma_class(a: Class, b: Class, c: Class, f: Fmt, mode: Mode, relu: bool) -> Option<u64> {
    add_class(mul_class(a, b), c, f, mode, false, relu)
}

/// The value as an f64 (exact for every format here), for comparisons.
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
        Class::Finite(x) => {
            let v = x.mant as f64 * 2f64.powi(x.exp);
            if x.neg {
                -v
            } else {
                v
            }
        }
    }
}

pub fn from_f32(x: f32) -> Class {
    decode(F32, u64::from(x.to_bits()))
}

/// Where the exact value lies relative to a candidate `q`, from the sign of an exact
/// residual; `Equal` when it is `q`.
pub fn side(residual: Exact, flip: bool) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    if residual.is_zero() {
        Equal
    } else if residual.neg != flip {
        Less
    } else {
        Greater
    }
}

/// The next f32 toward +inf (`f32::next_up`, which is newer than the crate's MSRV).
fn next_up(q: f32) -> f32 {
    if q.is_nan() || q == f32::INFINITY {
        return q;
    }
    let b = q.to_bits();
    f32::from_bits(if q == 0.0 {
        1
    } else if b >> 31 == 0 {
        b + 1
    } else {
        b - 1
    })
}

fn next_down(q: f32) -> f32 {
    -next_up(-q)
}

/// The directed rounding of an exact value that lies on `side` of its round-to-nearest
/// f32 `q` (IEEE 754 §4.3.2: toward zero, toward -inf, toward +inf).
pub fn direct(q: f32, side: std::cmp::Ordering, mode: Mode) -> f32 {
    use std::cmp::Ordering::*;
    match (mode, side) {
        (_, Equal) | (Mode::Rn, _) | (Mode::Rna, _) => q,
        (Mode::Rz, Less) if q > 0.0 => next_down(q),
        (Mode::Rz, Greater) if q < 0.0 => next_up(q),
        (Mode::Rm, Less) => next_down(q),
        (Mode::Rp, Greater) => next_up(q),
        _ => q,
    }
}

/// `a / b` rounded by `mode`: IEEE special cases, else the nearest quotient moved by
/// the sign of the exact residual `a - q·b`.
pub fn div_f32(a: f32, b: f32, mode: Mode) -> f32 {
    let q = a / b;
    if a.is_nan() || b.is_nan() || a.is_infinite() || b == 0.0 || b.is_infinite() {
        return q;
    }
    if q.is_infinite() {
        // Overflow of a finite quotient: the exact value is below |q|.
        let s = if q > 0.0 { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater };
        return direct(q, s, mode);
    }
    let (Class::Finite(ae), Class::Finite(qe), Class::Finite(be)) =
        (from_f32(a), from_f32(q), from_f32(b))
    else {
        unreachable!()
    };
    let qb = mul(qe, be);
    let residual = add(ae, Exact { neg: !qb.neg, ..qb });
    direct(q, side(residual, b < 0.0), mode)
}

/// `sqrt(a)` rounded by `mode`, by the residual `a - q·q`.
pub fn sqrt_f32(a: f32, mode: Mode) -> f32 {
    let q = a.sqrt();
    if !q.is_finite() || q == 0.0 {
        return q;
    }
    let (Class::Finite(ae), Class::Finite(qe)) = (from_f32(a), from_f32(q)) else { unreachable!() };
    let qq = mul(qe, qe);
    let residual = add(ae, Exact { neg: !qq.neg, ..qq });
    direct(q, side(residual, false), mode)
}
