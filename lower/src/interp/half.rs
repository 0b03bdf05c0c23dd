//! Half arithmetic ([`InstKind::Half`](crate::ir::InstKind::Half)) modelled directly
//! from PTX ISA 9.2 §9.7.4: each lane decoded to its exact value and the operation
//! correctly rounded once to the format by [`super::float`], independently of its
//! expansion (`pass::expand_formats`: widened to f32, rounded to odd in f64, narrowed),
//! which the pass file tests compare it with.

mod narrow;

use std::cmp::Ordering;

use super::float::{self, Exact, Mode, Num};
use crate::ir::{FloatFormat, HalfArith, HalfConvert, HalfConvertOp, HalfOp, UnaryOp, Value};

/// The result of `op`, whose sources `read` gives as `16 * lanes`-bit words.
pub fn eval(op: &HalfOp, read: impl Fn(Value) -> u64) -> u64 {
    let srcs: Vec<u64> = op.srcs.iter().map(|&v| read(v)).collect();
    (0..u32::from(op.lanes)).fold(0, |acc, k| {
        let lane: Vec<u64> = srcs.iter().map(|s| (s >> (16 * k)) & 0xffff).collect();
        acc | lane_result(op, &lane) << (16 * k)
    })
}

/// One lane of the result.
fn lane_result(op: &HalfOp, x: &[u64]) -> u64 {
    let fmt = op.format;
    let arg = |i: usize| {
        let bits = x.get(i).copied().unwrap_or(0);
        if op.ftz {
            float::flush(fmt, bits)
        } else {
            bits
        }
    };
    let sign = 0x8000;
    let mode = Mode::from(op.rounding);
    let num = |i: usize| float::decode(fmt, arg(i));
    let rounded = |mode: Mode| match op.op {
        HalfArith::Add => float::add_num(num(0), num(1), fmt, mode),
        HalfArith::Sub => float::add_num(num(0), float::neg_num(num(1)), fmt, mode),
        HalfArith::Mul => float::round_num(float::mul_num(num(0), num(1)), fmt, mode, false),
        _ => float::fma_num(num(0), num(1), num(2), fmt, mode),
    };
    let r = match op.op {
        HalfArith::Ex2 | HalfArith::Tanh => return approx(op, num(0)),
        HalfArith::Neg => return arg(0) ^ sign,
        HalfArith::Abs => return arg(0) & !sign,
        HalfArith::Min | HalfArith::Max => return min_max(op, arg(0), arg(1)),
        _ => rounded(mode),
    };
    // An exact zero sum has the sign it has rounding to nearest, in every direction
    // (`HalfOp::rounding`).
    let nearest = rounded(Mode::Nearest);
    let r = if r & !sign == 0 && nearest & !sign == 0 { nearest } else { r };
    let is_nan = matches!(float::decode(fmt, r), Num::Nan);
    let negative = r & sign != 0;
    let r = if op.relu && negative && !is_nan { 0 } else { r };
    let r = if op.sat { saturate(fmt, r) } else { r };
    if op.ftz {
        float::flush(fmt, r)
    } else {
        r
    }
}

/// `ex2.approx` and `tanh.approx` of one lane (§9.7.4.8-9): the f32 function of its
/// value (within the ISA's bound, as the interpreter computes `.approx.f32`, §9.7.3),
/// rounded to nearest to the format; `.ftz` flushes the result.
fn approx(op: &HalfOp, x: Num) -> u64 {
    let f = if op.op == HalfArith::Ex2 { UnaryOp::Ex2 } else { UnaryOp::Tanh };
    let r = super::arith::approx(f, FloatFormat::F32, x);
    let r = float::round_num(float::decode(FloatFormat::F32, r), op.format, Mode::Nearest, false);
    if op.ftz {
        float::flush(op.format, r)
    } else {
        r
    }
}

/// `.sat`: clamped to [0.0, 1.0], NaN (and -0) to +0.
fn saturate(fmt: FloatFormat, r: u64) -> u64 {
    let one = float::Num::Fin(Exact { neg: false, mant: 1, exp: 0 });
    let one = float::round_num(one, fmt, Mode::Nearest, false);
    match float::decode(fmt, r) {
        Num::Nan => 0,
        Num::Inf(true) => 0,
        Num::Inf(false) => one,
        Num::Fin(x) if x.neg => 0,
        Num::Fin(x) if compare(x, Exact { neg: false, mant: 1, exp: 0 }) == Ordering::Greater => {
            one
        }
        Num::Fin(_) => r,
    }
}

/// Compares finite exact values (zeros equal whatever their signs).
fn compare(a: Exact, b: Exact) -> Ordering {
    match (a.mant == 0 || !a.neg, b.mant == 0 || !b.neg) {
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (true, _) => magnitude(a, b),
        (false, false) => magnitude(b, a),
    }
}

/// Compares the magnitudes of finite exact values.
fn magnitude(a: Exact, b: Exact) -> Ordering {
    match (a.mant == 0, b.mant == 0) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => {
            let top = |x: Exact| (128 - x.mant.leading_zeros()) as i32 + x.exp;
            top(a).cmp(&top(b)).then_with(|| {
                // Equal tops: the exponents differ by less than the mantissas' widths.
                let e = a.exp.min(b.exp);
                (a.mant << (a.exp - e)).cmp(&(b.mant << (b.exp - e)))
            })
        }
    }
}

/// `min`/`max` (§9.7.4.10-11): a NaN operand gives the other, two NaNs (or any NaN
/// under `.NaN`) the canonical NaN; -0 is below +0.
fn min_max(op: &HalfOp, a: u64, b: u64) -> u64 {
    let fmt = op.format;
    match (float::decode(fmt, a), float::decode(fmt, b)) {
        (Num::Nan, Num::Nan) => fmt.nan(),
        (Num::Nan, _) | (_, Num::Nan) if op.nan => fmt.nan(),
        (Num::Nan, _) => b,
        (_, Num::Nan) => a,
        (x, y) => {
            let order = order(x, y).then_with(|| {
                // -0 below +0.
                let (sa, sb) = (a & 0x8000 != 0, b & 0x8000 != 0);
                sb.cmp(&sa)
            });
            let a_first = if op.op == HalfArith::Max {
                order != Ordering::Less
            } else {
                order != Ordering::Greater
            };
            if a_first {
                a
            } else {
                b
            }
        }
    }
}

/// The order of two non-NaN values.
fn order(x: Num, y: Num) -> Ordering {
    let rank = |n: Num| match n {
        Num::Inf(true) => 0,
        Num::Fin(_) => 1,
        _ => 2,
    };
    match (x, y) {
        (Num::Fin(a), Num::Fin(b)) => compare(a, b),
        _ => rank(x).cmp(&rank(y)),
    }
}

/// A narrow-format conversion ([`HalfConvert`]) modelled from its definition on the
/// values (the host's floats and a search for the exponent), independently of its
/// expansion (`pass::expand_formats`, shifts and masks of the exponent field);
/// `read(v, bits)` gives a source's low `bits` bits.
pub fn convert(c: &HalfConvert, read: impl Fn(Value, u32) -> u64) -> u64 {
    let x: Vec<u64> = c.srcs.iter().zip(c.op.src_bits()).map(|(&v, bits)| read(v, bits)).collect();
    let arg = |k: usize| x.get(k).copied().unwrap_or(0);
    match c.op {
        HalfConvertOp::Narrow(n) => narrow::convert(n, &x),
        HalfConvertOp::FromUe8m0 => (0..2).fold(0, |acc, k| {
            let e = (arg(0) >> (8 * k)) & 0xff;
            // 2^(e - 127) as an f32 (subnormal for e = 0), whose upper half is the bf16.
            let lane = if e == 0xff {
                0x7fff
            } else {
                u64::from(2f32.powi(e as i32 - 127).to_bits() >> 16)
            };
            acc | lane << (16 * k)
        }),
        HalfConvertOp::ToUe8m0 { bf16x2, up, satfinite } => {
            let values: Vec<f32> = if bf16x2 {
                let lane = |k: u64| f32::from_bits(((arg(0) >> (16 * k)) as u32 & 0xffff) << 16);
                vec![lane(1), lane(0)]
            } else {
                vec![f32::from_bits(arg(0) as u32), f32::from_bits(arg(1) as u32)]
            };
            let scale = |v: f32| -> u64 {
                let m = f64::from(v.abs());
                if m.is_nan() {
                    return 0xff;
                }
                if m.is_infinite() {
                    return if satfinite { 0xfe } else { 0xff };
                }
                // The largest e with 2^e <= |v|; nothing below 2^-127 (biased 0).
                let mut e = -127i32;
                while e < 128 && 2f64.powi(e + 1) <= m {
                    e += 1;
                }
                if up && m > 2f64.powi(e) {
                    e += 1;
                }
                let biased = (e + 127) as u64;
                match biased {
                    0..=0xfe => biased,
                    _ if satfinite => 0xfe,
                    _ => 0xff,
                }
            };
            scale(values[0]) << 8 | scale(values[1])
        }
    }
}
