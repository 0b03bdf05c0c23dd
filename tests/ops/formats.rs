//! Half precision, narrow conversions and directed rounding (`lower/src/sema/formats.rs`)
//! against the exact reference model of `common/float_ref.rs`: `.f16`/`.bf16` (and `x2`)
//! arithmetic (PTX ISA 9.2 §9.7.4), `cvt` to and from `.f16`, `.bf16`, `.tf32`,
//! `.e4m3x2`, `.e5m2x2` (§9.7.9.21), and `.rz`/`.rm`/`.rp` f32 arithmetic and
//! conversions (§9.7.3).

use super::common::float_ref::{self as fr, Class, Fmt, Mode};
use super::*;

fn nan_of(f: Fmt) -> Want {
    let exp = ((1u64 << f.e) - 1) << f.m;
    let man = (1u64 << f.m) - 1;
    if !f.nan {
        // No NaN in the format: ptxvk saturates a NaN to the largest finite value.
        bits(f.max_bits())
    } else if f.ieee {
        Want::NanIn { exp, man }
    } else {
        // E4M3: the one NaN pattern, either sign.
        Want::Either(exp | man, (exp | man) | f.sign_bit())
    }
}

fn want(f: Fmt, r: Option<u64>) -> Want {
    match r {
        Some(b) => bits(b),
        None => nan_of(f),
    }
}

fn h(x: u64) -> Class {
    fr::decode(fr::F16, x & 0xffff)
}
fn bf(x: u64) -> Class {
    fr::decode(fr::BF16, x & 0xffff)
}
fn hi16(x: u64) -> u64 {
    x >> 16 & 0xffff
}
fn f32c(x: u64) -> Class {
    fr::decode(fr::F32, x & 0xffff_ffff)
}

/// `.ftz` on a half value: subnormals become zeros of their sign.
fn ftz16(f: Fmt, c: Class) -> Class {
    match c {
        Class::Finite(x) if x.mant != 0 && x.mant < 1 << f.m => {
            Class::Finite(fr::Exact { mant: 0, ..x })
        }
        other => other,
    }
}

/// `.sat` (§9.7.4): clamp to [0, 1], NaN to +0.
fn sat_class(c: Class) -> Class {
    let v = fr::to_f64(c);
    if v.is_nan() || v <= 0.0 {
        Class::Finite(fr::Exact { neg: false, mant: 0, exp: 0 })
    } else if v >= 1.0 {
        Class::Finite(fr::Exact { neg: false, mant: 1, exp: 0 })
    } else {
        c
    }
}

/// The exact result of `op` as a class (before rounding); `None` for NaN.
fn exact_op(op: &str, a: Class, b: Class, c: Class) -> Option<Class> {
    let sum = |x: Class, y: Class| -> Option<Class> {
        match (x, y) {
            (Class::Nan, _) | (_, Class::Nan) => None,
            (Class::Inf(p), Class::Inf(q)) if p != q => None,
            (Class::Inf(p), _) | (_, Class::Inf(p)) => Some(Class::Inf(p)),
            (Class::Finite(p), Class::Finite(q)) => Some(Class::Finite(fr::add(p, q))),
        }
    };
    match op {
        "add" => sum(a, b),
        "sub" => sum(a, fr::neg_class(b)),
        "mul" => match fr::mul_class(a, b) {
            Class::Nan => None,
            other => Some(other),
        },
        _ => match fr::mul_class(a, b) {
            Class::Nan => None,
            p => sum(p, c),
        },
    }
}

/// A rounded arithmetic result with IEEE zero signs (via `float_ref`'s `add_class`),
/// `.sat` and `.relu`.
fn arith(
    op: &str,
    f: Fmt,
    mode: Mode,
    sat: bool,
    relu: bool,
    [a, b, c]: [Class; 3],
) -> Option<u64> {
    if sat {
        let exact = exact_op(op, a, b, c);
        let clamped = sat_class(exact.unwrap_or(Class::Nan));
        return fr::round_class(clamped, f, mode, false, false);
    }
    match op {
        "add" => fr::add_class(a, b, f, mode, false, relu),
        "sub" => fr::add_class(a, fr::neg_class(b), f, mode, false, relu),
        "mul" => fr::round_class(fr::mul_class(a, b), f, mode, false, relu),
        _ => fr::fma_class(a, b, c, f, mode, relu),
    }
}

fn half_edges() -> Vec<u64> {
    let positive: [u64; 14] = [
        0x0000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x3c01, 0x3555, 0x3bff, 0x7bff, 0x7bfe, 0x7c00,
        0x7e00, 0x5640, 0x1000,
    ];
    positive.iter().flat_map(|&p| [p, p | 0x8000]).collect()
}

fn half_cases() -> Vec<In> {
    let edges = half_edges();
    let mut v = Vec::new();
    for (i, &a) in edges.iter().enumerate() {
        for (j, &b) in edges.iter().enumerate() {
            let hi_a = edges[(i + j) % edges.len()];
            let hi_b = edges[(i * 7 + j) % edges.len()];
            let c = edges[(i * 3 + j * 5) % edges.len()] | edges[(i + 2 * j) % edges.len()] << 16;
            v.push(In::new(a | hi_a << 16, b | hi_b << 16, c));
        }
    }
    // Random bit patterns, and products/sums landing near halfway points.
    v.extend(random(71, 1500, |r| In::new(r.next_u64(), r.next_u64(), r.next_u64())));
    v.extend(random(72, 500, |r| {
        let f = |r: &mut Rng| {
            u64::from(r.next_u32() % 0x1000 + 0x3800) | u64::from(r.next_u32() & 0x8000)
        };
        In::new(f(r) | f(r) << 16, f(r) | f(r) << 16, f(r) | f(r) << 16)
    }));
    v
}

type Lane = fn(u64) -> Class;

#[test]
fn half_precision_arithmetic() {
    let mut slots = Vec::new();
    let fmts: [(&str, Fmt, Lane); 2] = [("f16", fr::F16, h), ("bf16", fr::BF16, bf)];
    for (name, f, dec) in fmts {
        for op in ["add", "sub", "mul"] {
            let spelled =
                if name == "f16" { format!("{op}.{name}") } else { format!("{op}.rn.{name}") };
            slots.push(slot(format!("{spelled} %d16, %a16, %b16"), move |x| {
                want(f, arith(op, f, Mode::Rn, false, false, [dec(x.a), dec(x.b), dec(x.c)]))
            }));
            // The upper lane of the x2 form.
            slots.push(slot(
                format!("{spelled}x2 %e32, %a32, %b32; mov.b32 {{%t16, %d16}}, %e32"),
                move |x| {
                    want(
                        f,
                        arith(
                            op,
                            f,
                            Mode::Rn,
                            false,
                            false,
                            [dec(hi16(x.a)), dec(hi16(x.b)), Class::Nan],
                        ),
                    )
                },
            ));
        }
        slots.push(slot(format!("fma.rn.{name} %d16, %a16, %b16, %c16"), move |x| {
            want(f, arith("fma", f, Mode::Rn, false, false, [dec(x.a), dec(x.b), dec(x.c)]))
        }));
        slots.push(slot(format!("fma.rn.relu.{name} %d16, %a16, %b16, %c16"), move |x| {
            want(f, arith("fma", f, Mode::Rn, false, true, [dec(x.a), dec(x.b), dec(x.c)]))
        }));
        slots.push(slot(
            format!("fma.rn.{name}x2 %e32, %a32, %b32, %c32; mov.b32 {{%d16, %t16}}, %e32"),
            move |x| {
                want(f, arith("fma", f, Mode::Rn, false, false, [dec(x.a), dec(x.b), dec(x.c)]))
            },
        ));
        slots.push(slot(format!("neg.{name} %d16, %a16"), move |x| bits(x.a & 0xffff ^ 0x8000)));
        slots.push(slot(format!("abs.{name} %d16, %a16"), move |x| bits(x.a & 0x7fff)));
        for op in ["min", "max"] {
            slots.push(slot(format!("{op}.{name} %d16, %a16, %b16"), move |x| {
                let (a, b) = (fr::to_f64(dec(x.a)), fr::to_f64(dec(x.b)));
                // NaN operands are ignored; +0 > -0 (§9.7.4.10-11).
                let r = if op == "min" { fmin(a, b) } else { fmax(a, b) };
                // One of the operands: a value of the format.
                if r.is_nan() {
                    nan_of(f)
                } else {
                    bits(f.encode(r))
                }
            }));
        }
    }
    // f16-only modifiers: .ftz, .sat, .NaN.
    slots.extend([
        slot("add.ftz.f16 %d16, %a16, %b16", |x| {
            let r = arith(
                "add",
                fr::F16,
                Mode::Rn,
                false,
                false,
                [ftz16(fr::F16, h(x.a)), ftz16(fr::F16, h(x.b)), Class::Nan],
            );
            want(fr::F16, r.map(|b| if b & 0x7c00 == 0 { b & 0x8000 } else { b }))
        }),
        slot("mul.sat.f16 %d16, %a16, %b16", |x| {
            want(
                fr::F16,
                arith("mul", fr::F16, Mode::Rn, true, false, [h(x.a), h(x.b), Class::Nan]),
            )
        }),
        slot("fma.rn.sat.f16 %d16, %a16, %b16, %c16", |x| {
            want(fr::F16, arith("fma", fr::F16, Mode::Rn, true, false, [h(x.a), h(x.b), h(x.c)]))
        }),
        slot("max.NaN.f16 %d16, %a16, %b16", |x| {
            let (a, b) = (fr::to_f64(h(x.a)), fr::to_f64(h(x.b)));
            if a.is_nan() || b.is_nan() {
                nan_of(fr::F16)
            } else {
                bits(fr::F16.encode(fmax(a, b)))
            }
        }),
    ]);
    generated("half", slots, half_cases()).run();
}

/// `add`, `sub`, `mul` and `fma` on f32 rounded by `rnd`, against the model.
fn f32_arith_slots(rnd: &'static str) -> Vec<Slot> {
    let mode = mode_of(rnd);
    let mut slots: Vec<Slot> = ["add", "sub", "mul"]
        .into_iter()
        .map(|op| {
            slot(format!("{op}.{rnd}.f32 %d32, %a32, %b32"), move |x| {
                want(
                    fr::F32,
                    arith(op, fr::F32, mode, false, false, [f32c(x.a), f32c(x.b), Class::Nan]),
                )
            })
        })
        .collect();
    slots.push(slot(format!("fma.{rnd}.f32 %d32, %a32, %b32, %c32"), move |x| {
        want(fr::F32, arith("fma", fr::F32, mode, false, false, [f32c(x.a), f32c(x.b), f32c(x.c)]))
    }));
    slots
}

/// `div`, `rcp` and `sqrt` on f32 rounded by `rnd`, against the model.
fn f32_quotient_slots(rnd: &'static str) -> Vec<Slot> {
    let mode = mode_of(rnd);
    vec![
        slot(format!("div.{rnd}.f32 %d32, %a32, %b32"), move |x| {
            want(fr::F32, fr::div_class(f32c(x.a), f32c(x.b), fr::F32, mode))
        }),
        slot(format!("rcp.{rnd}.f32 %d32, %b32"), move |x| {
            want(fr::F32, fr::div_class(f32c(0x3f80_0000), f32c(x.b), fr::F32, mode))
        }),
        slot(format!("sqrt.{rnd}.f32 %d32, %b32"), move |x| {
            want(fr::F32, fr::sqrt_class(f32c(x.b), fr::F32, mode))
        }),
    ]
}

/// An f32 (as bits) with a random 24-bit significand and sign and exponent `e`.
fn random_f32(r: &mut Rng, e: i32) -> u64 {
    let m = 1.0 + f64::from(r.next_u32() >> 8) / 2f64.powi(24);
    let s = if r.next_u32().is_multiple_of(2) { 1.0 } else { -1.0 };
    u64::from(((s * m * 2f64.powi(e)) as f32).to_bits())
}

/// The expected result of a `.sat` f32 operation: `.sat` may leave a zero of either
/// sign (see `Want::ZeroF32`).
fn saturated_f32(r: Option<u64>) -> Want {
    match r {
        Some(0) | Some(0x8000_0000) => Want::ZeroF32,
        other => want(fr::F32, other),
    }
}

fn mode_of(s: &str) -> Mode {
    match s {
        "rn" => Mode::Rn,
        "rz" => Mode::Rz,
        "rm" => Mode::Rm,
        "rp" => Mode::Rp,
        "rna" => Mode::Rna,
        _ => unreachable!("{s}"),
    }
}

fn conversion_cases() -> Vec<In> {
    let p = |e: i32| 2f32.powi(e);
    let mut f32s: Vec<f32> = vec![
        0.0,
        1.0,
        1.0 + p(-11),
        1.0 + 3.0 * p(-11),
        1.0 + p(-11) + p(-20),
        65504.0,
        65520.0,
        65519.0,
        1e5,
        p(-24),
        p(-25),
        p(-25) + p(-40),
        3.0 * p(-25),
        p(-14),
        p(-15),
        1e-8,
        0.1,
        1.0 + p(-8),
        1.0 + 3.0 * p(-8),
        3.4e38,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        448.0,
        464.0,
        57344.0,
        61440.0,
        240.0,
        p(-9),
        p(-10),
        p(-7) * 1.5,
        1.0 + p(-4),
        1.0 + 3.0 * p(-4),
        f32::INFINITY,
        f32::NAN,
        1.0 + p(-12),
        1.0 + p(-13) + p(-14),
    ];
    f32s.extend(f32s.clone().iter().map(|x| -x));
    let mut v: Vec<In> = Vec::new();
    for (i, &x) in f32s.iter().enumerate() {
        let y = f32s[(i * 7 + 3) % f32s.len()];
        let d = f64::from(x) * (1.0 + 2f64.powi(-30));
        v.push(In::new(
            u64::from(x.to_bits()) | u64::from(y.to_bits()) << 32,
            d.to_bits(),
            (i as u64 * 0x9e37) & 0xffff,
        ));
    }
    v.extend(random(73, 1500, |r| {
        let x = f32::from_bits(r.next_u32());
        let s = (r.next_u32() % 40) as i32 - 20;
        let y = (f64::from(r.next_u32()) / 4e9 - 0.5) * 2f64.powi(s);
        In::new(u64::from(x.to_bits()) | u64::from(r.next_u32()) << 32, y.to_bits(), r.next_u64())
    }));
    v
}

#[test]
fn conversions_to_and_from_narrow_formats() {
    let mut slots = Vec::new();
    for rnd in ["rn", "rz", "rm", "rp"] {
        let mode = mode_of(rnd);
        slots.push(slot(format!("cvt.{rnd}.f16.f32 %d16, %a32"), move |x| {
            want(fr::F16, fr::round_class(f32c(x.a), fr::F16, mode, false, false))
        }));
        slots.push(slot(format!("cvt.{rnd}.bf16.f32 %d16, %a32"), move |x| {
            want(fr::BF16, fr::round_class(f32c(x.a), fr::BF16, mode, false, false))
        }));
        slots.push(slot(format!("cvt.{rnd}.f16.f64 %d16, %b64"), move |x| {
            want(
                fr::F16,
                fr::round_class(fr::decode_f64(f64::from_bits(x.b)), fr::F16, mode, false, false),
            )
        }));
    }
    slots.extend([
        slot("cvt.rn.relu.f16.f32 %d16, %a32", |x| {
            want(fr::F16, fr::round_class(f32c(x.a), fr::F16, Mode::Rn, false, true))
        }),
        slot("cvt.rn.satfinite.f16.f32 %d16, %a32", |x| {
            want(fr::F16, fr::round_class(f32c(x.a), fr::F16, Mode::Rn, true, false))
        }),
        slot("cvt.rn.bf16.f64 %d16, %b64", |x| {
            want(
                fr::BF16,
                fr::round_class(
                    fr::decode_f64(f64::from_bits(x.b)),
                    fr::BF16,
                    Mode::Rn,
                    false,
                    false,
                ),
            )
        }),
        // Widening is exact.
        slot("cvt.f32.f16 %d32, %c16", |x| f32w(fr::to_f64(h(x.c)) as f32)),
        slot("cvt.f64.f16 %d64, %c16", |x| f64w(fr::to_f64(h(x.c)))),
        slot("cvt.f32.bf16 %d32, %c16", |x| f32w(fr::to_f64(bf(x.c)) as f32)),
        // Pairs: the first source goes to the upper half.
        slot("mov.b32 %t32, 0; cvt.rn.f16x2.f32 %d32, %a32, %t32", |x| {
            let lo = fr::round_class(f32c(0), fr::F16, Mode::Rn, false, false);
            let hi = fr::round_class(f32c(x.a), fr::F16, Mode::Rn, false, false);
            match (hi, lo) {
                (Some(hi), Some(lo)) => bits(hi << 16 | lo),
                _ => Want::NanIn { exp: 0x7c00 << 16, man: 0x3ff << 16 },
            }
        }),
        slot(
            "mov.b32 %t32, 0; cvt.rn.relu.bf16x2.f32 %d32, %t32, %a32",
            |x| match fr::round_class(f32c(x.a), fr::BF16, Mode::Rn, false, true) {
                Some(lo) => bits(lo),
                None => Want::NanIn { exp: 0x7f80, man: 0x7f },
            },
        ),
        // TF32: an f32 pattern with 13 zero mantissa bits.
        slot("cvt.rna.tf32.f32 %d32, %a32", |x| {
            match fr::round_class(f32c(x.a), fr::TF32, Mode::Rna, false, false) {
                Some(b) => bits(b << 13),
                None => Want::NanIn { exp: 0x7f80_0000, man: 0x7f_ffff },
            }
        }),
        slot("mov.b32 %t32, 0; cvt.rn.satfinite.e4m3x2.f32 %d16, %a32, %t32", |x| {
            let hi = fr::round_class(f32c(x.a), fr::E4M3, Mode::Rn, true, false);
            let lo = fr::round_class(f32c(0), fr::E4M3, Mode::Rn, true, false).unwrap_or(0);
            match hi {
                Some(b) => bits(b << 8 | lo),
                None => Want::Either(0x7f00, 0xff00),
            }
        }),
        slot("mov.b32 %t32, 0; cvt.rn.satfinite.e5m2x2.f32 %d16, %t32, %a32", |x| {
            want(fr::E5M2, fr::round_class(f32c(x.a), fr::E5M2, Mode::Rn, true, false))
        }),
        slot("mov.b32 %t32, 0; cvt.rn.satfinite.relu.e4m3x2.f32 %d16, %t32, %a32", |x| {
            match fr::round_class(f32c(x.a), fr::E4M3, Mode::Rn, true, true) {
                Some(b) => bits(b),
                None => Want::Either(0x7f, 0xff),
            }
        }),
        // FP8 pairs widen exactly to f16x2 (low byte to the low half).
        slot("cvt.rn.f16x2.e4m3x2 %e32, %c16; mov.b32 {%d16, %t16}, %e32", |x| {
            let c = fr::decode(fr::E4M3, x.c & 0xff);
            want(fr::F16, fr::round_class(c, fr::F16, Mode::Rn, false, false))
        }),
        slot("cvt.rn.f16x2.e5m2x2 %e32, %c16; mov.b32 {%t16, %d16}, %e32", |x| {
            let c = fr::decode(fr::E5M2, x.c >> 8 & 0xff);
            want(fr::F16, fr::round_class(c, fr::F16, Mode::Rn, false, false))
        }),
        slot("cvt.rn.satfinite.e4m3x2.f16x2 %d16, %c32", |x| {
            let lane =
                |k: u64| fr::round_class(h(x.c >> (16 * k)), fr::E4M3, Mode::Rn, true, false);
            match (lane(1), lane(0)) {
                (Some(hi), Some(lo)) => bits(hi << 8 | lo),
                (None, Some(lo)) => Want::Either(0x7f00 | lo, 0xff00 | lo),
                (Some(hi), None) => Want::Either(hi << 8 | 0x7f, hi << 8 | 0xff),
                (None, None) => Want::Either(0x7f7f, 0xffff),
            }
        }),
        // Integers: through the exact value.
        slot("cvt.rni.s32.f16 %d32, %c16", |x| {
            let v = fr::to_f64(h(x.c));
            bits(cvt_f2i(s(32), false, Mode::Rn, v) & 0xffff_ffff)
        }),
        slot("cvt.rzi.u16.bf16 %d16, %c16", |x| {
            let v = fr::to_f64(bf(x.c));
            bits(cvt_f2i(u(16), false, Mode::Rz, v) & 0xffff)
        }),
        slot("cvt.rmi.u8.f16 %d16, %c16", |x| {
            let v = fr::to_f64(h(x.c));
            bits(cvt_f2i(u(8), false, Mode::Rm, v) & 0xffff)
        }),
        slot("cvt.rn.f16.s32 %d16, %c32", |x| {
            let e = fr::Exact::int(i128::from(x.c as u32 as i32));
            bits(fr::round(e, fr::F16, Mode::Rn, false, false))
        }),
        slot("cvt.rz.bf16.u32 %d16, %c32", |x| {
            let e = fr::Exact::int(i128::from(x.c as u32));
            bits(fr::round(e, fr::BF16, Mode::Rz, false, false))
        }),
        slot("cvt.rni.f16.f16 %d16, %c16", |x| {
            let v = fr::to_f64(h(x.c));
            if v.is_nan() {
                nan_of(fr::F16)
            } else {
                // An integral f16 value (or an infinity) is an f16.
                bits(fr::F16.encode(v.round_ties_even()))
            }
        }),
    ]);
    generated("narrow_cvt", slots, conversion_cases()).run();
}

#[test]
fn directed_rounding_of_f32_arithmetic_and_conversions() {
    let mut slots = Vec::new();
    for rnd in ["rz", "rm", "rp"] {
        let mode = mode_of(rnd);
        slots.extend(f32_arith_slots(rnd));
        slots.push(slot(format!("cvt.{rnd}.f32.f64 %d32, %a64"), move |x| {
            want(
                fr::F32,
                fr::round_class(fr::decode_f64(f64::from_bits(x.a)), fr::F32, mode, false, false),
            )
        }));
        slots.push(slot(format!("cvt.{rnd}.f32.s32 %d32, %b32"), move |x| {
            let v = x.b as u32 as i32;
            let e = fr::Exact::int(v.into());
            bits(fr::round(e, fr::F32, mode, false, false))
        }));
        slots.push(slot(format!("cvt.{rnd}.f32.u32 %d32, %b32"), move |x| {
            let e = fr::Exact::int(i128::from(x.b as u32));
            bits(fr::round(e, fr::F32, mode, false, false))
        }));
    }
    for rnd in ["rz", "rm", "rp"] {
        let mode = mode_of(rnd);
        slots.extend(f32_quotient_slots(rnd));
        // 64-bit integers, rounded once.
        slots.push(slot(format!("cvt.{rnd}.f32.s64 %d32, %c64"), move |x| {
            let v = x.c as i64;
            let e = fr::Exact::int(v.into());
            bits(fr::round(e, fr::F32, mode, false, false))
        }));
        slots.push(slot(format!("cvt.{rnd}.f32.u64 %d32, %c64"), move |x| {
            let e = fr::Exact::int(x.c.into());
            bits(fr::round(e, fr::F32, mode, false, false))
        }));
        slots.push(slot(format!("cvt.{rnd}.f64.s64 %d64, %c64"), move |x| {
            let v = x.c as i64;
            let e = fr::Exact::int(v.into());
            bits(fr::round(e, fr::F64, mode, false, false))
        }));
        slots.push(slot(format!("cvt.{rnd}.f64.u64 %d64, %c64"), move |x| {
            let e = fr::Exact::int(x.c.into());
            bits(fr::round(e, fr::F64, mode, false, false))
        }));
    }
    slots.extend([
        slot("cvt.rn.f16.s64 %d16, %c64", |x| {
            let v = x.c as i64;
            let e = fr::Exact::int(v.into());
            bits(fr::round(e, fr::F16, Mode::Rn, false, false))
        }),
        slot("cvt.rn.bf16.u64 %d16, %c64", |x| {
            let e = fr::Exact::int(x.c.into());
            bits(fr::round(e, fr::BF16, Mode::Rn, false, false))
        }),
        slot("cvt.rm.f16.s16 %d16, %c16", |x| {
            let v = x.c as u16 as i16;
            let e = fr::Exact::int(v.into());
            bits(fr::round(e, fr::F16, Mode::Rm, false, false))
        }),
        slot("mad.rp.f32 %d32, %a32, %b32, %c32", |x| {
            want(
                fr::F32,
                arith("fma", fr::F32, Mode::Rp, false, false, [f32c(x.a), f32c(x.b), f32c(x.c)]),
            )
        }),
        slot("add.rz.ftz.f32 %d32, %a32, %b32", |x| {
            let f = |c: Class| match c {
                Class::Finite(e) if e.mant != 0 && e.mant < 1 << 23 => {
                    Class::Finite(fr::Exact { mant: 0, ..e })
                }
                other => other,
            };
            let r = arith(
                "add",
                fr::F32,
                Mode::Rz,
                false,
                false,
                [f(f32c(x.a)), f(f32c(x.b)), Class::Nan],
            );
            want(fr::F32, r.map(|b| if b & 0x7f80_0000 == 0 { b & 0x8000_0000 } else { b }))
        }),
        slot("mul.rm.sat.f32 %d32, %a32, %b32", |x| {
            let r =
                arith("mul", fr::F32, Mode::Rm, true, false, [f32c(x.a), f32c(x.b), Class::Nan]);
            saturated_f32(r)
        }),
    ]);
    let mut cases = conversion_cases();
    // f32 operands whose sums and products are inexact in every interesting way.
    cases.extend(random(74, 2000, |r| {
        let e = |r: &mut Rng| (r.next_u32() % 60) as i32 - 30;
        let f = random_f32;
        let ea = e(r);
        let eb = ea + (r.next_u32() % 30) as i32 - 15;
        let ec = ea + eb + (r.next_u32() % 50) as i32 - 25;
        let b = f(r, eb);
        In::new(f(r, ea) | b << 32, b, f(r, ec.clamp(-140, 120)))
    }));
    cases.extend(fma_edges());
    // 64-bit integers near rounding boundaries of f32, f64 and f16.
    cases.extend(random(75, 600, |r| {
        let shift = r.next_u32() % 64;
        let v = (r.next_u64() >> shift) | 1 << (63 - shift);
        let v = if r.next_u32() % 2 == 0 { v } else { v.wrapping_neg() };
        In::new(r.next_u64(), u64::from(r.next_u32()), v)
    }));
    for v in
        [0u64, 1, 65504, 65519, 65520, 1 << 53, (1 << 53) + 1, (1 << 54) + 2, u64::MAX, 1 << 63]
    {
        cases.push(In::new(0x3f80_0000, 0x4000_0000, v));
        cases.push(In::new(0x3f80_0000, 0x4000_0000, v.wrapping_neg()));
    }
    generated("directed_f32", slots, cases).run();
}

/// f32 `add`, `sub`, `mul`, `fma`, `div`, `rcp` and `sqrt` in every rounding, with
/// `.ftz` and `.sat`, compiled for a device without f64 (`Target::float64` false): the
/// SPIR-V needs no `shaderFloat64` (checked when loading) and every result is exactly
/// the model's (`pass::legalize_floats`, the routines of `lower/src/routines/soft_f32.rs`).
#[test]
fn f32_arithmetic_without_f64() {
    // `.ftz`: a subnormal operand or result becomes a zero of its sign.
    fn flush(c: Class) -> Class {
        match c {
            Class::Finite(e) if e.mant != 0 && e.mant < 1 << 23 => {
                Class::Finite(fr::Exact { mant: 0, ..e })
            }
            other => other,
        }
    }
    fn flushed(r: Option<u64>) -> Option<u64> {
        r.map(|b| if b & 0x7f80_0000 == 0 { b & 0x8000_0000 } else { b })
    }
    let mut slots = Vec::new();
    for rnd in ["rn", "rz", "rm", "rp"] {
        slots.extend(f32_arith_slots(rnd));
        slots.extend(f32_quotient_slots(rnd));
    }
    slots.extend([
        slot("fma.rn.ftz.f32 %d32, %a32, %b32, %c32", |x| {
            let (a, b, c) = (flush(f32c(x.a)), flush(f32c(x.b)), flush(f32c(x.c)));
            want(fr::F32, flushed(arith("fma", fr::F32, Mode::Rn, false, false, [a, b, c])))
        }),
        slot("div.rn.ftz.f32 %d32, %a32, %b32", |x| {
            let r = fr::div_class(flush(f32c(x.a)), flush(f32c(x.b)), fr::F32, Mode::Rn);
            want(fr::F32, flushed(r))
        }),
        slot("sqrt.rz.ftz.f32 %d32, %b32", |x| {
            want(fr::F32, flushed(fr::sqrt_class(flush(f32c(x.b)), fr::F32, Mode::Rz)))
        }),
        slot("mul.rp.ftz.f32 %d32, %a32, %b32", |x| {
            let (a, b) = (flush(f32c(x.a)), flush(f32c(x.b)));
            want(
                fr::F32,
                flushed(arith("mul", fr::F32, Mode::Rp, false, false, [a, b, Class::Nan])),
            )
        }),
        slot("fma.rm.sat.f32 %d32, %a32, %b32, %c32", |x| {
            let r = arith("fma", fr::F32, Mode::Rm, true, false, [f32c(x.a), f32c(x.b), f32c(x.c)]);
            saturated_f32(r)
        }),
    ]);
    let mut cases = conversion_cases();
    // Operands whose sums, products and quotients are inexact in every interesting way,
    // across the whole exponent range (subnormal results and overflow included).
    cases.extend(random(76, 3000, |r| {
        let e = |r: &mut Rng| (r.next_u32() % 300) as i32 - 150;
        let f = random_f32;
        let ea = e(r);
        let eb = (ea + (r.next_u32() % 40) as i32 - 20).clamp(-149, 127);
        let ec = (ea + eb + (r.next_u32() % 60) as i32 - 30).clamp(-149, 127);
        let b = f(r, eb);
        In::new(f(r, ea.clamp(-149, 127)) | b << 32, b, f(r, ec))
    }));
    cases.extend(random(77, 1000, |r| In::new(r.next_u64(), r.next_u64(), r.next_u64())));
    // Products exactly halfway between two f32 (a = 1 + m/2^12, b = 1 + n/2^12 with m, n
    // odd: bit 2^-24 set) plus a tiny c that decides the rounding: an fma that rounded
    // to nearest in f64 first would lose c and round the tie to even.
    cases.extend(random(78, 400, |r| {
        let m = u64::from(r.next_u32() % 2048) * 2 + 1;
        let n = u64::from(r.next_u32() % 2048) * 2 + 1;
        let (a, b) = (0x3f80_0000 | m << 11, 0x3f80_0000 | n << 11);
        let sign = if r.next_u32().is_multiple_of(2) { 0 } else { 0x8000_0000 };
        let tiny = u64::from(27 + r.next_u32() % 60) << 23 | sign;
        In::new(a | b << 32, b, tiny)
    }));
    cases.extend(fma_edges());
    let mut kernel = generated("soft_f32", slots, cases);
    kernel.target = Some(ptxvk::compile::Target { float64: false, ..Default::default() });
    kernel.run();
}

fn f64c(x: u64) -> Class {
    fr::decode(fr::F64, x)
}

/// `fma.f64` (all four roundings) and `add`/`sub`/`mul` `.f64` with directed rounding,
/// exact on every device (`lower/src/routines/softf64.rs`), against the exact model.
#[test]
fn exact_f64_fma_and_directed_rounding() {
    let mut slots = Vec::new();
    for rnd in ["rn", "rz", "rm", "rp"] {
        let mode = mode_of(rnd);
        slots.push(slot(format!("fma.{rnd}.f64 %d64, %a64, %b64, %c64"), move |x| {
            want(
                fr::F64,
                arith("fma", fr::F64, mode, false, false, [f64c(x.a), f64c(x.b), f64c(x.c)]),
            )
        }));
        if rnd != "rn" {
            for op in ["add", "sub", "mul"] {
                slots.push(slot(format!("{op}.{rnd}.f64 %d64, %a64, %b64"), move |x| {
                    want(
                        fr::F64,
                        arith(op, fr::F64, mode, false, false, [f64c(x.a), f64c(x.b), Class::Nan]),
                    )
                }));
            }
        }
    }
    // Division, reciprocal and square root (§9.7.3.8-10), every rounding.
    for rnd in ["rn", "rz", "rm", "rp"] {
        let mode = mode_of(rnd);
        slots.push(slot(format!("div.{rnd}.f64 %d64, %a64, %b64"), move |x| {
            want(fr::F64, fr::div_class(f64c(x.a), f64c(x.b), fr::F64, mode))
        }));
        slots.push(slot(format!("rcp.{rnd}.f64 %d64, %b64"), move |x| {
            want(fr::F64, fr::div_class(f64c(1f64.to_bits()), f64c(x.b), fr::F64, mode))
        }));
        slots.push(slot(format!("sqrt.{rnd}.f64 %d64, %c64"), move |x| {
            want(fr::F64, fr::sqrt_class(f64c(x.c), fr::F64, mode))
        }));
    }
    // `rcp.approx.ftz.f64`: ptxvk gives the correctly rounded reciprocal, subnormal
    // inputs and results flushed; `rsqrt.approx.f64`: the correctly rounded reciprocal
    // of the correctly rounded square root (both inside the ISA's bounds).
    slots.push(slot("rcp.approx.ftz.f64 %d64, %b64", |x| {
        let flush = |b: u64| if b & 0x7ff0_0000_0000_0000 == 0 { b & 1 << 63 } else { b };
        let r = fr::div_class(f64c(1f64.to_bits()), f64c(flush(x.b)), fr::F64, Mode::Rn);
        want(fr::F64, r.map(flush))
    }));
    slots.push(slot("rsqrt.approx.f64 %d64, %c64", |x| {
        let s = fr::sqrt_class(f64c(x.c), fr::F64, Mode::Rn);
        want(
            fr::F64,
            s.and_then(|s| fr::div_class(f64c(1f64.to_bits()), f64c(s), fr::F64, Mode::Rn)),
        )
    }));
    slots.push(slot("mad.rn.f64 %d64, %a64, %b64, %c64", |x| {
        want(
            fr::F64,
            arith("fma", fr::F64, Mode::Rn, false, false, [f64c(x.a), f64c(x.b), f64c(x.c)]),
        )
    }));
    let edges = f64_edges();
    let mut cases = Vec::new();
    for (i, &a) in edges.iter().enumerate() {
        for (j, &b) in edges.iter().enumerate() {
            cases.push(In::new(a, b, edges[(i * 7 + j * 3) % edges.len()]));
        }
    }
    // Products that cancel against the addend, round near ties, overflow, or land in
    // the subnormal range.
    cases.extend(random(76, 3000, |r| {
        let f = |r: &mut Rng, e: i32| {
            let m = 1.0 + (r.next_u64() >> 12) as f64 / 2f64.powi(52);
            let s = if r.next_u32().is_multiple_of(2) { 1.0 } else { -1.0 };
            (s * m * 2f64.powi(e)).to_bits()
        };
        let (ea, eb) = ((r.next_u32() % 1200) as i32 - 600, (r.next_u32() % 1200) as i32 - 600);
        let (a, b) = (f(r, ea), f(r, eb));
        let p = f64::from_bits(a) * f64::from_bits(b);
        let c = match r.next_u32() % 4 {
            // -p plus a few ulps: massive cancellation.
            0 => (-p).to_bits().wrapping_add(u64::from(r.next_u32() % 5)),
            1 => {
                let e = ea + eb + (r.next_u32() % 120) as i32 - 60;
                f(r, e)
            }
            2 => r.next_u64(),
            _ => {
                let e = (r.next_u32() % 2100) as i32 - 1074;
                f(r, e)
            }
        };
        In::new(a, b, c)
    }));
    generated("f64_exact", slots, cases).run();
}

/// FP6 (`.e2m3x2`, `.e3m2x2`) and FP4 (`.e2m1x2`) conversions (PTX ISA 8.6, sm_100a;
/// §9.7.9.21): no infinities and no NaN in these formats, `.satfinite` required.
#[test]
fn fp6_and_fp4_conversions() {
    let slots = vec![
        // FP6 and FP4 (no infinities, no NaN): the first source in the upper lane.
        slot("mov.b32 %t32, 0; cvt.rn.satfinite.e2m3x2.f32 %d16, %a32, %t32", |x| {
            // A NaN saturates to the largest value (ptxvk's choice: the format has no NaN).
            let r = fr::round_class(f32c(x.a), fr::E2M3, Mode::Rn, true, false);
            bits(r.unwrap_or(fr::E2M3.max_bits()) << 8)
        }),
        slot("mov.b32 %t32, 0; cvt.rn.satfinite.relu.e3m2x2.f32 %d16, %t32, %a32", |x| {
            want(fr::E3M2, fr::round_class(f32c(x.a), fr::E3M2, Mode::Rn, true, true))
        }),
        slot("mov.b32 %t32, 0; cvt.rn.satfinite.e2m1x2.f32 %d8, %a32, %t32", |x| {
            let r = fr::round_class(f32c(x.a), fr::E2M1, Mode::Rn, true, false);
            bits(r.unwrap_or(fr::E2M1.max_bits()) << 4)
        }),
        slot("cvt.u8.u16 %t8, %c16; cvt.rn.f16x2.e2m1x2 %e32, %t8; mov.b32 {%d16, %t16}, %e32", |x| {
            let c = fr::decode(fr::E2M1, x.c & 0xf);
            want(fr::F16, fr::round_class(c, fr::F16, Mode::Rn, false, false))
        }),
        slot("and.b16 %t16, %c16, 0x3f3f; cvt.rn.f16x2.e3m2x2 %e32, %t16; mov.b32 {%t16, %d16}, %e32", |x| {
            let c = fr::decode(fr::E3M2, x.c >> 8 & 0x3f);
            want(fr::F16, fr::round_class(c, fr::F16, Mode::Rn, false, false))
        }),
    ];
    generated_for("8.8", "sm_100a", "fp6_fp4_cvt", slots, conversion_cases()).run();
}

/// UE8M0 (PTX ISA 9.2 §5.2.5: 8 exponent bits, bias 127, no sign, zero or infinity;
/// NaN is 0xff) of `|x|`, rounded toward zero or up (§9.7.9.21, `.frnd3`): values below
/// 2^-127 give 2^-127 (0), results above 2^127 and infinities give NaN or, with
/// `.satfinite`, 2^127 — the behaviour CUDA's `cuda_fp8.hpp` emulates on the host.
fn ue8m0(x: f32, up: bool, satfinite: bool) -> u64 {
    if x.is_nan() {
        return 0xff;
    }
    let r = if x.is_infinite() {
        0xff
    } else if x == 0.0 {
        0
    } else {
        // |x| = f * 2^k with 1 <= f < 2, exactly, in f64.
        let d = f64::from(x.abs());
        let k = ((d.to_bits() >> 52) as i64) - 1023;
        let power = d == 2f64.powi(k as i32);
        let e = if up && !power { k + 1 } else { k };
        (e + 127).clamp(0, 0xff) as u64
    };
    if satfinite && !x.is_nan() {
        r.min(0xfe)
    } else {
        r
    }
}

/// `.ue8m0x2` conversions (PTX ISA 8.6, sm_100a): to scale factors from f32 pairs and
/// `.bf16x2`, and back to `.bf16x2` (2^(e - 127), 0xff a NaN).
#[test]
fn ue8m0_scale_factor_conversions() {
    let mut slots = Vec::new();
    for (mode, up) in [("rz", false), ("rp", true)] {
        for satfinite in [false, true] {
            let sat = if satfinite { ".satfinite" } else { "" };
            slots.push(slot(format!("cvt.{mode}{sat}.ue8m0x2.f32 %d16, %a32, %b32"), move |x| {
                let (a, b) = (f32::from_bits(x.a as u32), f32::from_bits(x.b as u32));
                bits(ue8m0(a, up, satfinite) << 8 | ue8m0(b, up, satfinite))
            }));
            slots.push(slot(format!("cvt.{mode}{sat}.ue8m0x2.bf16x2 %d16, %b32"), move |x| {
                let bf16 = |h: u64| f32::from_bits((h as u32 & 0xffff) << 16);
                bits(ue8m0(bf16(x.b >> 16), up, satfinite) << 8 | ue8m0(bf16(x.b), up, satfinite))
            }));
        }
    }
    slots.push(slot("cvt.rn.bf16x2.ue8m0x2 %d32, %c16", |x| {
        let lane = |e: u64| -> u64 {
            if e == 0xff {
                0x7fff
            } else {
                // 2^(e - 127) is exact in f32 (subnormal for e = 0); bf16 is its top half.
                u64::from(2f32.powi(e as i32 - 127).to_bits() >> 16)
            }
        };
        bits(lane(x.c >> 8 & 0xff) << 16 | lane(x.c & 0xff))
    }));
    let p = |e: i32| 2f32.powi(e);
    let edges = [
        0.0,
        p(-127),
        p(-127) * 1.5,
        p(-126),
        p(-126) * (1.0 + f32::EPSILON),
        p(-149),
        p(-128),
        1.0,
        1.0 + f32::EPSILON,
        3.0,
        p(127),
        p(127) * (1.0 + f32::EPSILON),
        f32::MAX,
        f32::INFINITY,
        f32::NAN,
        f32::from_bits(0x7f80_0001),
        0.75,
    ];
    let mut cases = conversion_cases();
    for (i, &x) in edges.iter().enumerate() {
        for s in [1.0f32, -1.0] {
            let y = edges[(i * 5 + 2) % edges.len()];
            // b: an f32 pattern and, read as bf16x2, the top halves of two patterns.
            let b = u64::from((x * s).to_bits() & 0xffff_0000 | (y.to_bits() >> 16));
            cases.push(In::new(u64::from((x * s).to_bits()), b, i as u64 * 0x0101 + 0xfe00));
        }
    }
    cases.extend((0..=255).map(|e| In::new(0, 0, e << 8 | (255 - e))));
    generated_for("8.8", "sm_100a", "ue8m0_cvt", slots, cases).run();
}

/// The fused-fma probe of `Device::open` against the behaviour it predicts: `fma.rn.f32`
/// compiled to the device's `Fma` (`.fused`) on products exactly halfway between two
/// f32 plus a tiny addend is exactly the model's for every case if and only if the
/// probe found the device's `Fma` fused (on lavapipe it is not, and the forced path
/// then rounds some ties the wrong way, which is why ptxvk does not trust `Fma`).
#[test]
fn the_fused_fma_path_is_exact_exactly_when_the_probe_says_fused() {
    let Some(device) = device() else { return };
    let probe = ptxvk::probes::probe_fused_fma(&device).expect("probe runs");
    const PTX: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\
        .visible .entry fmas(.param .u64 io, .param .u32 n)\n{\n\
        .reg .pred %p1;\n.reg .b32 %r<4>;\n.reg .f32 %f<5>;\n.reg .b64 %rd<4>;\n\
        mov.u32 %r1, %tid.x;\nld.param.u32 %r2, [n];\nsetp.ge.u32 %p1, %r1, %r2;\n\
        @%p1 bra DONE;\nld.param.u64 %rd1, [io];\nmul.wide.u32 %rd2, %r1, 16;\n\
        add.s64 %rd3, %rd1, %rd2;\nld.global.f32 %f1, [%rd3];\nld.global.f32 %f2, [%rd3+4];\n\
        ld.global.f32 %f3, [%rd3+8];\nfma.rn.f32 %f4, %f1, %f2, %f3;\n\
        st.global.f32 [%rd3+12], %f4;\nDONE:\nret;\n}\n";
    let mut rng = Rng(79);
    let mut io = Vec::new();
    let mut want = Vec::new();
    for _ in 0..256 {
        let m = (rng.next_u32() % 2048) * 2 + 1;
        let n = (rng.next_u32() % 2048) * 2 + 1;
        let a = f32::from_bits(0x3f80_0000 | m << 11);
        let b = f32::from_bits(0x3f80_0000 | n << 11);
        let sign = if rng.next_u32().is_multiple_of(2) { 0 } else { 0x8000_0000 };
        let c = f32::from_bits((27 + rng.next_u32() % 60) << 23 | sign);
        io.extend([a, b, c, 0.0]);
        want.push(a.mul_add(b, c));
    }
    let target = ptxvk::compile::Target {
        fused_fma: ptxvk::lower::pass::FusedFma { f32: true, f64: false },
        ..device.target()
    };
    let compiled = ptxvk::compile::compile_with("fmas.ptx", PTX, None, target).expect("compiles");
    ptxvk::spirv::validate(&compiled.spirv.words).expect("valid SPIR-V");
    let module = ptxvk::Module::from_compiled(&device, compiled).expect("module");
    let buf = device.buffer_from(&io).expect("buffer");
    let n = want.len() as u32;
    module
        .kernel("fmas")
        .expect("kernel")
        .launch(1, n, 0, &[ptxvk::Arg::from(&buf), ptxvk::Arg::from(n)])
        .expect("launch");
    let got = buf.to_vec().expect("read");
    let exact = (0..want.len()).all(|k| got[4 * k + 3].to_bits() == want[k].to_bits());
    assert_eq!(
        exact, probe.f32,
        "the probe says fused = {}, the forced `Fma` path is exact on every tie: {exact}",
        probe.f32
    );
}

/// `div.rn`, `rcp.rn` and `sqrt.rn` (f32 and f64) compiled for a fused `Fma` (`.fused`:
/// Newton steps, the IR routine of `lower/src/routines/newton.rs`, whose CPU model and
/// interpreted body have their own unit tests), forced on this device: operands outside the steps' range (zeros, subnormals,
/// infinities, NaNs, extreme exponents) take the exact path and match the correctly
/// rounded results bit for bit; inside it, the results are exact if the probe found the
/// device's `Fma` fused and within one ulp otherwise (lavapipe's is not fused, so this
/// checks the wiring of the steps, and the model their rounding).
#[test]
fn newton_division_and_square_root_on_a_fused_fma() {
    let Some(device) = device() else { return };
    let probe = ptxvk::probes::probe_fused_fma(&device).expect("probe runs");
    newton_case(&device, 32, probe.f32);
    if device.info().features.float64 {
        newton_case(&device, 64, probe.f64);
    }
}

/// One width of [`newton_division_and_square_root_on_a_fused_fma`].
fn newton_case(device: &ptxvk::Device, bits: u32, fused: bool) {
    let size = bits / 8;
    let ptx = format!(
        ".version 7.0\n.target sm_70\n.address_size 64\n\
        .visible .entry quotients(.param .u64 io, .param .u32 n)\n{{\n\
        .reg .pred %p1;\n.reg .b32 %r<4>;\n.reg .f{bits} %f<6>;\n.reg .b64 %rd<4>;\n\
        mov.u32 %r1, %tid.x;\nld.param.u32 %r2, [n];\nsetp.ge.u32 %p1, %r1, %r2;\n\
        @%p1 bra DONE;\nld.param.u64 %rd1, [io];\nmul.wide.u32 %rd2, %r1, {stride};\n\
        add.s64 %rd3, %rd1, %rd2;\nld.global.f{bits} %f1, [%rd3];\n\
        ld.global.f{bits} %f2, [%rd3+{s1}];\ndiv.rn.f{bits} %f3, %f1, %f2;\n\
        rcp.rn.f{bits} %f4, %f2;\nsqrt.rn.f{bits} %f5, %f1;\n\
        st.global.f{bits} [%rd3+{s2}], %f3;\nst.global.f{bits} [%rd3+{s3}], %f4;\n\
        st.global.f{bits} [%rd3+{s4}], %f5;\nDONE:\nret;\n}}\n",
        stride = 5 * size,
        s1 = size,
        s2 = 2 * size,
        s3 = 3 * size,
        s4 = 4 * size,
    );
    // The format: significand bits, exponent mask, bias; the Newton steps' range
    // (routines/newton.rs): normal operands, a dividend of biased exponent at least `min`, the
    // quotient's exponent in [2, max - 4] (biased), or a zero dividend; the same bound
    // for a square root.
    let (m, mask, min): (u32, u64, i64) = if bits == 32 { (23, 0xff, 32) } else { (52, 0x7ff, 64) };
    let (bias, max) = ((mask >> 1) as i64, mask as i64 - 1);
    let exp = |v: u64| (v >> m & mask) as i64;
    let magnitude = |v: u64| v & (u64::MAX >> (65 - bits));
    let div_steps = |a: u64, b: u64| {
        let (ea, eb) = (exp(a), exp(b));
        let dividend =
            (min..=max).contains(&ea) && (2 - bias..=max - 4 - bias).contains(&(ea - eb));
        (dividend || magnitude(a) == 0) && (1..=max - 2).contains(&eb)
    };
    let sqrt_steps = |x: u64| ((min as u64) << m..mask << m).contains(&x);
    let one = if bits == 32 { 1f32.to_bits().into() } else { 1f64.to_bits() };
    let sign = 1u64 << (bits - 1);
    let edges = [
        0,
        sign,
        1,
        (1 << m) - 1,
        1 << m,
        mask << m,
        sign | mask << m,
        (mask << m) | 1 << (m - 1),
        (max as u64) << m | ((1 << m) - 1),
        2 << m | 1,
        one,
        sign | one,
    ];
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    for &a in &edges {
        for &b in &edges {
            pairs.push((a, b));
        }
    }
    // One block of 1024 threads: the 144 edge pairs and 880 random ones.
    let mut rng = Rng(0x5eed);
    let mut random = |e: i64| {
        let x = (rng.next_u32() as u64) << 32 | rng.next_u32() as u64;
        (x & sign) | ((bias + e) as u64) << m | (x & ((1 << m) - 1))
    };
    for i in 0..880 {
        pairs.push((random((i % 64) - 32), random((i / 64) * 4 - 32)));
    }
    let as_f64 =
        |v: u64| if bits == 32 { f64::from(f32::from_bits(v as u32)) } else { f64::from_bits(v) };
    let round = |v: f64| if bits == 32 { u64::from((v as f32).to_bits()) } else { v.to_bits() };
    let target = ptxvk::compile::Target {
        fused_fma: ptxvk::lower::pass::FusedFma { f32: bits == 32, f64: bits == 64 },
        ..device.target()
    };
    let compiled =
        ptxvk::compile::compile_with("quotients.ptx", &ptx, None, target).expect("compiles");
    ptxvk::spirv::validate(&compiled.spirv.words).expect("valid SPIR-V");
    let text = ptxvk::spirv::disassemble(&compiled.spirv.words).expect("disassembles");
    for op in ["div", "sqrt"] {
        let helper = format!("ptxvk.{op}.f{bits}.rn.fused");
        assert!(text.contains(&helper), "{helper} is called");
    }
    let module = ptxvk::Module::from_compiled(device, compiled).expect("module");
    let io: Vec<u64> = pairs.iter().flat_map(|&(a, b)| [a, b, 0, 0, 0]).collect();
    let bytes: Vec<u8> = if bits == 32 {
        io.iter().flat_map(|&v| (v as u32).to_le_bytes()).collect()
    } else {
        io.iter().flat_map(|&v| v.to_le_bytes()).collect()
    };
    let buf = device.buffer_from(&bytes).expect("buffer");
    let n = pairs.len() as u32;
    let args = [ptxvk::Arg::from(&buf), ptxvk::Arg::from(n)];
    module.kernel("quotients").expect("kernel").launch(1, n, 0, &args).expect("launch");
    let out = buf.to_vec().expect("read");
    let got: Vec<u64> = out
        .chunks_exact(size as usize)
        .map(|c| c.iter().rev().fold(0u64, |v, &b| v << 8 | u64::from(b)))
        .collect();
    // Distance in ulps, on the sign-magnitude order.
    let key = |v: u64| if v & sign == 0 { v as i128 } else { -(magnitude(v) as i128) };
    for (k, &(a, b)) in pairs.iter().enumerate() {
        let (x, y) = (as_f64(a), as_f64(b));
        let steps = [div_steps(a, b), div_steps(one, b), sqrt_steps(a)];
        let want = [round(x / y), round(1.0 / y), round(x.sqrt())];
        for (j, w) in want.into_iter().enumerate() {
            let g = got[5 * k + 2 + j];
            let what =
                format!("{} f{bits} {a:#x} {b:#x}: {g:#x}, want {w:#x}", ["div", "rcp", "sqrt"][j]);
            if as_f64(w).is_nan() {
                assert!(as_f64(g).is_nan(), "{what}");
            } else if steps[j] && !fused {
                assert!((key(g) - key(w)).abs() <= 1, "{what}");
            } else {
                assert_eq!(g, w, "{what}");
            }
        }
    }
}

/// The measurement behind the exact-f32 scheme of a device with f64
/// (`probes::probe_float_scheme`): the same kernel of `fma.rn`, `div.rn` and `sqrt.rn`
/// compiled with the f64 scheme and with the integer one, both timed, and the device's
/// target uses f64 for f32 code exactly when the cached choice says so.
#[test]
fn the_float_scheme_is_chosen_by_measurement() {
    let Some(device) = device() else { return };
    if !device.info().features.float64 {
        assert!(!device.target().float64, "no f64 device uses f64");
        return;
    }
    let fused = device.target().fused_fma;
    let (f64_ms, integer_ms) =
        ptxvk::probes::probe_float_scheme(&device, fused).expect("probe runs");
    eprintln!("float scheme probe: f64 {f64_ms:.3} ms, integer {integer_ms:.3} ms");
    assert!(f64_ms > 0.0 && integer_ms > 0.0, "both timed: {f64_ms} {integer_ms}");
    assert_eq!(device.target().float64, !device.findings().integer_float);
}
