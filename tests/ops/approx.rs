//! The `.approx` and `.full` instructions (`lower/src/sema/formats.rs`,
//! `lower/src/sema/expand.rs`, `lower/src/routines/approx.rs`,
//! `lower/src/routines/trig.rs`) against Rust's f64 math
//! library: ptxvk computes
//! them in f64 and rounds once, so each result must be within one ulp of the exact
//! value, inside the bounds the PTX ISA documents (§9.7.3.14-22: e.g. 2 ulp for `ex2`,
//! an absolute error of 2^-20.5 for `sin`/`cos` on [-2π, 2π] and 2^-14.7 on
//! [-100π, 100π]); special values as the ISA's tables give them.

use super::*;

fn fa(x: In) -> f32 {
    f32::from_bits(x.a as u32)
}

/// Within one ulp of `v`; past the f32 range the result must be the infinity.
fn exact(v: f64) -> Want {
    let v = if (v as f32).is_infinite() { f64::INFINITY.copysign(v) } else { v };
    Want::NearF32(v.to_bits())
}

fn exact16(v: f64) -> Want {
    let v = if half::f16::from_f64(v).is_infinite() { f64::INFINITY.copysign(v) } else { v };
    Want::NearF16(v.to_bits())
}

/// `.ftz` on an f32 input.
fn ftz_in(x: f32) -> f64 {
    f64::from(ftz(x))
}

/// A result with `.ftz` on the input and the output: a subnormal result may flush.
fn exact_ftz(v: f64) -> Want {
    if v != 0.0 && v.abs() < f64::from(f32::MIN_POSITIVE) {
        Want::Check(|got| got & 0x7fff_ffff == 0)
    } else {
        exact(v)
    }
}

fn ex2(x: f64) -> f64 {
    x.exp2()
}

/// log2 with the ISA's specials: lg2(±0) = -inf, lg2(x < 0) = NaN.
fn lg2(x: f64) -> f64 {
    if x == 0.0 {
        f64::NEG_INFINITY
    } else {
        x.log2()
    }
}

/// rsqrt(±0) = ±inf; rsqrt(+inf) = +0; negative: NaN.
fn rsqrt(x: f64) -> f64 {
    if x == 0.0 {
        f64::INFINITY.copysign(x)
    } else {
        1.0 / x.sqrt()
    }
}

/// sin/cos of a finite argument, whatever its size (ptxvk reduces exactly, so this is
/// stricter than the ISA's bound on [-100π, 100π]); NaN for ±inf and NaN.
fn trig(x: f64, f: fn(f64) -> f64) -> Want {
    if x.is_finite() {
        exact(f(x))
    } else {
        Want::NanF32
    }
}

fn half_of(x: u64) -> f64 {
    half::f16::from_bits(x as u16).to_f64()
}

/// `ex2.approx.ftz.bf16` (PTX ISA 9.2 §9.7.4.10): subnormal inputs and results flushed
/// to zeros of their sign (a result is positive: +0), so -inf gives +0, ±subnormal and
/// ±0 give 1, +inf gives +inf and NaN a NaN; other results within one bf16 ulp of 2^a.
fn ex2_ftz_bf16(bits: u16) -> Want {
    let flushed = if bits & 0x7f80 == 0 { bits & 0x8000 } else { bits };
    let a = f64::from(half::bf16::from_bits(flushed).to_f32());
    if a.is_nan() {
        return Want::NanIn { exp: 0x7f80, man: 0x7f };
    }
    let r = a.exp2();
    if r < f64::from(f32::MIN_POSITIVE) {
        Want::Bits(0)
    } else if half::bf16::from_f64(r).is_infinite() {
        Want::NearBf16(f64::INFINITY.to_bits())
    } else {
        Want::NearBf16(r.to_bits())
    }
}

/// bf16 inputs for `ex2.approx.ftz.bf16` in the low 16 bits: results just below and at
/// the smallest normal (2^-126), subnormal and special inputs, results near overflow.
fn bf16_ex2_cases() -> Vec<In> {
    let values = [-130.0f32, -126.5, -126.0, -127.0, -133.0, -134.0, 1.0, 0.5, -0.0, 127.5, 128.0];
    let bits = values.iter().map(|v| half::bf16::from_f32(*v).to_bits());
    let specials = [0x0001u16, 0x8001, 0x007f, 0x807f, 0x7f80, 0xff80, 0x7fc0];
    bits.chain(specials).map(|b| In::new(u64::from(b), 0, 0)).collect()
}

fn approx_cases() -> Vec<In> {
    let mut values: Vec<f32> = vec![
        0.0,
        1.0,
        0.5,
        2.0,
        3.0,
        10.0,
        100.0,
        127.0,
        127.99,
        128.0,
        200.0,
        -126.0,
        -149.0,
        -149.5,
        -150.0,
        -160.0,
        1e-10,
        1e-40,
        1e-45,
        f32::MIN_POSITIVE,
        f32::MAX,
        1.0 + f32::EPSILON,
        1.0 - f32::EPSILON / 2.0,
        0.7,
        1.4,
        std::f32::consts::PI,
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::TAU,
        314.159_27,
        1e5,
        1e6,
        1e20,
        f32::INFINITY,
        f32::NAN,
        0.001,
        4.5,
        9.0,
        20.0,
        88.0,
        0.3,
    ];
    values.extend(values.clone().iter().map(|v| -v));
    let mut cases: Vec<In> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let b = values[(i * 5 + 1) % values.len()];
            In::new(u64::from(v.to_bits()), u64::from(b.to_bits()), 0)
        })
        .collect();
    cases.extend(random(81, 3000, |r| {
        let scale = 2f32.powi((r.next_u32() % 40) as i32 - 20);
        let v = (r.next_u32() as f32 / 4e9 - 0.5) * 2.0 * scale;
        let bits = if r.next_u32() % 4 == 0 { r.next_u32() } else { v.to_bits() };
        In::new(u64::from(bits), u64::from(r.next_u32()), r.next_u64())
    }));
    cases
}

#[test]
fn approximate_transcendentals_are_within_one_ulp() {
    approx_kernel().run();
}

/// The same on a device without f64: the `.approx` routines in soft f64 arithmetic
/// (`lower/src/pass/soft_f64.rs`) must be as exact, and the module must not need
/// `shaderFloat64` (checked when loading). One slot per routine and fewer cases:
/// lavapipe compiles the inlined soft routines slowly (`sin` about 8 s).
#[test]
fn approximate_transcendentals_without_f64() {
    let slots = vec![
        slot("ex2.approx.f32 %d32, %a32", |x| exact(ex2(fa(x).into()))),
        slot("lg2.approx.f32 %d32, %a32", |x| exact(lg2(fa(x).into()))),
        slot("sin.approx.f32 %d32, %a32", |x| trig(fa(x).into(), f64::sin)),
        slot("cos.approx.f32 %d32, %a32", |x| trig(fa(x).into(), f64::cos)),
        slot("rsqrt.approx.f32 %d32, %a32", |x| exact(rsqrt(fa(x).into()))),
        slot("tanh.approx.f32 %d32, %a32", |x| exact(f64::from(fa(x)).tanh())),
    ];
    let mut cases = approx_cases();
    cases.truncate(1000);
    let mut kernel = generated("approx_soft", slots, cases);
    kernel.target = Some(ptxvk::compile::Target { float64: false, ..Default::default() });
    kernel.run();
}

/// Every `.approx` and `.full` form against Rust's f64 math library.
fn approx_kernel() -> OpsKernel {
    let slots = vec![
        slot("ex2.approx.f32 %d32, %a32", |x| exact(ex2(fa(x).into()))),
        slot("ex2.approx.ftz.f32 %d32, %a32", |x| exact_ftz(ex2(ftz_in(fa(x))))),
        slot("lg2.approx.f32 %d32, %a32", |x| exact(lg2(fa(x).into()))),
        slot("lg2.approx.ftz.f32 %d32, %a32", |x| exact(lg2(ftz_in(fa(x))))),
        slot("sin.approx.f32 %d32, %a32", |x| trig(fa(x).into(), f64::sin)),
        slot("cos.approx.f32 %d32, %a32", |x| trig(fa(x).into(), f64::cos)),
        slot("sin.approx.ftz.f32 %d32, %a32", |x| {
            let r = trig(ftz_in(fa(x)), f64::sin);
            match r {
                Want::NearF32(v) => exact_ftz(f64::from_bits(v)),
                other => other,
            }
        }),
        slot("rsqrt.approx.f32 %d32, %a32", |x| exact(rsqrt(fa(x).into()))),
        slot("rsqrt.approx.ftz.f32 %d32, %a32", |x| exact(rsqrt(ftz_in(fa(x))))),
        slot("tanh.approx.f32 %d32, %a32", |x| exact(f64::from(fa(x)).tanh())),
        // Half precision, through f32: one f16 ulp.
        slot("ex2.approx.f16 %d16, %a16", |x| exact16(ex2(half_of(x.a)))),
        slot("tanh.approx.f16 %d16, %a16", |x| exact16(half_of(x.a).tanh())),
        // The correctly rounded forms, bit for bit.
        slot("sqrt.approx.f32 %d32, %a32", |x| f32w(fa(x).sqrt())),
        slot("rcp.approx.f32 %d32, %a32", |x| f32w(1.0 / fa(x))),
        slot("rcp.approx.ftz.f32 %d32, %a32", |x| f32w(ftz(1.0 / ftz(fa(x))))),
        slot("div.full.f32 %d32, %a32, %b32", |x| f32w(fa(x) / f32::from_bits(x.b as u32))),
        // div.approx: 0 (NaN for an infinite dividend) when 2^126 < |b| < 2^128.
        slot("div.approx.f32 %d32, %a32, %b32", |x| {
            let (a, b) = (fa(x), f32::from_bits(x.b as u32));
            if b.abs() > 2f32.powi(126) && b.is_finite() {
                if a.is_infinite() {
                    Want::NanF32
                } else {
                    Want::ZeroF32
                }
            } else {
                f32w(a / b)
            }
        }),
        slot("ex2.approx.ftz.bf16 %d16, %a16", |x| ex2_ftz_bf16(x.a as u16)),
    ];
    let mut cases = approx_cases();
    cases.extend(bf16_ex2_cases());
    generated("approx", slots, cases)
}
