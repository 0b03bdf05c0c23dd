//! The narrow-format `cvt` ([`NarrowCvt`], PTX ISA 9.2 §9.7.9.21) modelled on exact
//! values, independently of its expansion (`Widen`, `Narrow` and `IntToFloat`, whose
//! model is `interp::arith`/`interp::float`): each source is decoded from its format's
//! definition into a sign and an exact magnitude (an f64 holds every value of the narrow
//! formats, of f32 and of f64; integers are kept as integers), and the result is found by
//! a binary search over the target format's codes, which the format's values follow in
//! order, then chosen between the two neighbours by the rounding.

use std::cmp::Ordering;

use crate::ir::{packed_bits, CvtSide, FloatFormat, NarrowCvt, OpTy, Rounding};

/// A magnitude: NaN, infinity, a finite float value, or an integer.
#[derive(Clone, Copy, Debug)]
enum Mag {
    Nan,
    Inf,
    F(f64),
    I(u128),
}

/// A signed exact value.
#[derive(Clone, Copy, Debug)]
struct Exact {
    neg: bool,
    mag: Mag,
}

/// The code layout of `f` as this model reads it: (exponent bits, mantissa bits, bias,
/// where the code sits in the bit pattern). `.tf32` is the upper 19 bits of an f32.
fn shape(f: FloatFormat) -> (u32, u32, i32, u32) {
    match f {
        FloatFormat::F16 => (5, 10, 15, 0),
        FloatFormat::Bf16 => (8, 7, 127, 0),
        FloatFormat::Tf32 => (8, 10, 127, 13),
        FloatFormat::E4m3 => (4, 3, 7, 0),
        FloatFormat::E5m2 => (5, 2, 15, 0),
        FloatFormat::E2m3 => (2, 3, 1, 0),
        FloatFormat::E3m2 => (3, 2, 3, 0),
        FloatFormat::E2m1 => (2, 1, 1, 0),
        FloatFormat::F32 => (8, 23, 127, 0),
        FloatFormat::F64 => (11, 52, 1023, 0),
    }
}

/// Whether the all-ones exponent of `f` means infinity (mantissa 0) or NaN (§5.2.5).
fn ieee_like(f: FloatFormat) -> bool {
    matches!(f, FloatFormat::F16 | FloatFormat::Bf16 | FloatFormat::Tf32 | FloatFormat::E5m2)
}

/// The value of the magnitude code `c` (sign bit excluded) of `f`, NaN and infinity
/// included.
fn code_value(f: FloatFormat, c: u64) -> Mag {
    let (eb, mb, bias, _) = shape(f);
    let (exp, man) = ((c >> mb) as i32, c & ((1 << mb) - 1));
    let top = (1i32 << eb) - 1;
    if ieee_like(f) && exp == top {
        return if man == 0 { Mag::Inf } else { Mag::Nan };
    }
    if f == FloatFormat::E4m3 && exp == top && man == (1 << mb) - 1 {
        return Mag::Nan;
    }
    let (sig, e) = if exp == 0 { (man, 1 - bias) } else { (man | 1 << mb, exp - bias) };
    Mag::F(sig as f64 * 2f64.powi(e - mb as i32))
}

/// The largest finite magnitude code of `f`: found by walking down from the top code.
fn max_code(f: FloatFormat) -> u64 {
    let (eb, mb, _, _) = shape(f);
    let mut c = (1u64 << (eb + mb)) - 1;
    while !matches!(code_value(f, c), Mag::F(_)) {
        c -= 1;
    }
    c
}

/// Decodes the bit pattern `v` of `f` (its low bits; `.tf32` an f32 pattern).
fn decode(f: FloatFormat, v: u64) -> Exact {
    if f == FloatFormat::Tf32 || f == FloatFormat::F32 {
        return from_f64(f64::from(f32::from_bits(v as u32)));
    }
    if f == FloatFormat::F64 {
        return from_f64(f64::from_bits(v));
    }
    let (eb, mb, _, _) = shape(f);
    let neg = (v >> (eb + mb)) & 1 == 1;
    Exact { neg, mag: code_value(f, v & ((1 << (eb + mb)) - 1)) }
}

fn from_f64(x: f64) -> Exact {
    let mag = if x.is_nan() {
        Mag::Nan
    } else if x.is_infinite() {
        Mag::Inf
    } else {
        Mag::F(x.abs())
    };
    Exact { neg: x.is_sign_negative(), mag }
}

/// The finite magnitude `m` against the finite value `t`, exactly.
fn cmp(m: Mag, t: f64) -> Ordering {
    match m {
        Mag::F(x) => x.partial_cmp(&t).unwrap_or(Ordering::Equal),
        Mag::I(n) => {
            if t >= 2f64.powi(120) {
                return Ordering::Less;
            }
            let floor = t.floor();
            match n.cmp(&(floor as u128)) {
                Ordering::Equal if floor < t => Ordering::Less,
                o => o,
            }
        }
        Mag::Inf => Ordering::Greater,
        Mag::Nan => Ordering::Equal,
    }
}

/// `x` rounded to `f` by `r` as `f`'s bit pattern.
fn round_to(f: FloatFormat, x: Exact, r: Rounding, satfinite: bool, relu: bool) -> u64 {
    let (eb, mb, _, at) = shape(f);
    let max = max_code(f);
    let sign = if x.neg { 1u64 << (eb + mb) } else { 0 };
    let value = |c: u64| match code_value(f, c) {
        Mag::F(v) => v,
        _ => 0.0,
    };
    let code = match x.mag {
        // The format's NaN; a TF32 result is an f32 pattern, so the f32 NaN.
        Mag::Nan if f == FloatFormat::Tf32 => return 0x7fff_ffff,
        Mag::Nan => return f.nan(),
        Mag::Inf if ieee_like(f) && !satfinite => max + 1,
        Mag::Inf => max,
        m => {
            // The largest code whose value is at most |x|.
            let (mut lo, mut hi) = (0u64, max);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if cmp(m, value(mid)) == Ordering::Less {
                    hi = mid - 1;
                } else {
                    lo = mid;
                }
            }
            let below = value(lo);
            // The next value up; past the largest, one more step of the top binade.
            let above = if lo < max { value(lo + 1) } else { 2.0 * below - value(lo - 1) };
            let up = match cmp(m, below) {
                Ordering::Equal => false,
                _ => match r {
                    Rounding::Zero => false,
                    Rounding::Up => !x.neg,
                    Rounding::Down => x.neg,
                    Rounding::Nearest | Rounding::NearestAway => {
                        match cmp(m, below + (above - below) / 2.0) {
                            Ordering::Less => false,
                            Ordering::Greater => true,
                            Ordering::Equal => r == Rounding::NearestAway || lo % 2 == 1,
                        }
                    }
                },
            };
            let c = lo + u64::from(up);
            if c > max && (!ieee_like(f) || satfinite) {
                max
            } else {
                c
            }
        }
    };
    if relu && x.neg {
        return 0;
    }
    (code | sign) << at
}

/// `x` rounded to an integral value by `r` (sign kept).
fn integral(x: f64, r: Rounding) -> f64 {
    match r {
        Rounding::Zero => x.trunc(),
        Rounding::Up => x.ceil(),
        Rounding::Down => x.floor(),
        Rounding::NearestAway => x.round(),
        _ => x.round_ties_even(),
    }
}

/// `.ftz` on a value that is an f32: a subnormal becomes a zero of its sign.
fn flush(x: Exact, ftz: bool) -> Exact {
    match x.mag {
        Mag::F(m) if ftz && m != 0.0 && m < 2f64.powi(-126) => {
            Exact { neg: x.neg, mag: Mag::F(0.0) }
        }
        _ => x,
    }
}

fn signed_f64(x: Exact) -> f64 {
    let m = match x.mag {
        Mag::F(m) => m,
        Mag::I(n) => n as f64,
        Mag::Inf => f64::INFINITY,
        Mag::Nan => return f64::NAN,
    };
    if x.neg {
        -m
    } else {
        m
    }
}

/// An integer source of type `t`.
fn int_source(t: OpTy, v: u64) -> Exact {
    let bits = t.bits();
    let v = if bits == 64 { v } else { v & ((1 << bits) - 1) };
    if t.is_signed() && bits > 0 && (v >> (bits - 1)) & 1 == 1 {
        let neg = (1u128 << bits) - u128::from(v);
        Exact { neg: true, mag: Mag::I(neg) }
    } else {
        Exact { neg: false, mag: Mag::I(u128::from(v)) }
    }
}

/// The conversion `n` of the sources `x` (each as wide as the form says).
pub fn convert(n: NarrowCvt, x: &[u64]) -> u64 {
    let arg = |k: usize| x.get(k).copied().unwrap_or(0);
    let r = n.rounding.unwrap_or(Rounding::Nearest);
    let (sat, relu) = (n.satfinite, n.relu);
    match (n.to, n.from) {
        (CvtSide::Narrow(f, lanes), CvtSide::Op(t)) if t.is_float() => {
            // The first source is the upper lane.
            (0..usize::from(lanes)).fold(0, |acc, k| {
                let v = if t.bits() == 32 {
                    flush(decode(FloatFormat::F32, arg(k)), n.ftz)
                } else {
                    decode(FloatFormat::F64, arg(k))
                };
                let lane = usize::from(lanes) - 1 - k;
                acc | round_to(f, v, r, sat, relu) << (packed_bits(f) as usize * lane)
            })
        }
        (CvtSide::Narrow(f, 2), CvtSide::Narrow(g, 2)) => (0..2).fold(0, |acc, k| {
            let v = decode(g, arg(0) >> (packed_bits(g) * k));
            acc | round_to(f, v, r, sat, relu) << (packed_bits(f) * k)
        }),
        (CvtSide::Op(t), CvtSide::Narrow(g, _)) if t.is_float() => {
            let v = signed_f64(flush(decode(g, arg(0)), n.ftz));
            match (t.bits(), v.is_nan()) {
                (32, true) => 0x7fff_ffff,
                (32, false) => u64::from((v as f32).to_bits()),
                (_, true) => 0x7fff_ffff_ffff_ffff,
                (_, false) => v.to_bits(),
            }
        }
        (CvtSide::Narrow(f, _), CvtSide::Narrow(g, _)) => {
            let v = decode(g, arg(0));
            if !n.integral {
                return round_to(f, v, r, sat, relu);
            }
            let v = from_f64(integral(signed_f64(flush(v, n.ftz)), r));
            round_to(f, v, Rounding::Nearest, sat, relu)
        }
        (CvtSide::Op(t), CvtSide::Narrow(g, _)) => {
            // Clamped to the integer's range; NaN gives 0, or 2^63 for a 64-bit integer
            // (what the GPUs give; the ISA leaves it open).
            let v = signed_f64(flush(decode(g, arg(0)), n.ftz));
            if v.is_nan() {
                return if t.bits() == 64 { 1 << 63 } else { 0 };
            }
            let bits = t.bits() as i32;
            let (lo, hi) = if t.is_signed() {
                (-(2f64.powi(bits - 1)), 2f64.powi(bits - 1) - 1.0)
            } else {
                (0.0, 2f64.powi(bits) - 1.0)
            };
            let i = integral(v, r).clamp(lo, hi);
            if t.is_signed() {
                i as i64 as u64
            } else {
                i as u64
            }
        }
        (CvtSide::Narrow(f, _), CvtSide::Op(t)) => round_to(f, int_source(t, arg(0)), r, sat, relu),
        (CvtSide::Op(_), CvtSide::Op(_)) => 0,
    }
}
