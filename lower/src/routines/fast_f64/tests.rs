//! The f64 fast paths against independent models: the interpreter's exact one
//! (`interp::float`, exact rationals rounded once) and the host's `f64::mul_add` and
//! `/` (correctly rounded, IEEE 754), which must agree. Each `FastF64` runs with the
//! interpreter's semantics of each operation (`routines::tests`' evaluator); `div`'s
//! device quotient is also taken as an argument: right, a few ulps off, or anything.
//! Where the guard holds the result must be the model's, and a normal number; it must
//! hold for most moderate operands; and it must hold exactly on the operands the module
//! doc's proof admits (the bounds written here from the doc's exponents, so that a
//! changed guard constant fails). `PTXVK_ROUTINE_CASES` sets the number of cases of
//! each (default 20,000).

use super::super::tests::{eval, float_arithmetic, with_candidate_argument, Rng};
use crate::interp::float::{decode_f64, div_num, fma_num, Mode};
use crate::ir::{
    BinaryOp, F64Op, FloatFormat, FloatPath, Function, InstKind, OpTy, Routine, Value,
};

fn cases() -> u64 {
    std::env::var("PTXVK_ROUTINE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
}

fn exact_fma(a: f64, b: f64, c: f64) -> u64 {
    let n = |x: f64| decode_f64(x.to_bits());
    fma_num(n(a), n(b), n(c), FloatFormat::F64, Mode::Nearest)
}

fn exact_div(a: f64, b: f64) -> u64 {
    div_num(decode_f64(a.to_bits()), decode_f64(b.to_bits()), FloatFormat::F64, Mode::Nearest)
}

/// `FastF64(op)` on `x`: its result, or `None` where it returned a NaN (the guard
/// failed).
fn fast(f: &Function, x: &[f64]) -> Option<f64> {
    let args: Vec<u64> = x.iter().map(|v| v.to_bits()).collect();
    let r = eval(f, &args);
    assert!(!f64::from_bits(r).is_nan() || r == F64Op::FAILED, "{x:?}: {r:#x}");
    Some(f64::from_bits(r)).filter(|r| !r.is_nan())
}

/// `FastF64(Div)` with its `.native` quotient replaced by a new last argument.
fn div_with_candidate() -> Function {
    let (f, candidates) =
        with_candidate_argument(Routine::FastF64(F64Op::Div), OpTy::U(64), |dst, k| {
            InstKind::Mov { ty: OpTy::U(64), dst, src: Value::Reg(k) }
        });
    assert_eq!(candidates, 1);
    f
}

/// The bits of an f64 of any kind: mostly finite with a significand that is often a
/// hard one (zero, one, all ones, short), an exponent anywhere (subnormals included),
/// sometimes ±0, ±inf, NaN, the smallest and largest subnormals and normals.
fn any(rng: &mut Rng) -> f64 {
    const ALL: u64 = (1 << 52) - 1;
    const SPECIAL: [u64; 7] =
        [0, 0x7ff0 << 48, 0x7ff8 << 48, 1, ALL, 0x7fef_ffff_ffff_ffff, 1 << 52];
    let v = rng.next();
    let sign = v & (1 << 63);
    if v.is_multiple_of(64) {
        return f64::from_bits(sign | SPECIAL[(v >> 8) as usize % SPECIAL.len()]);
    }
    let e = (v >> 8) % 2047;
    let w = rng.next();
    let significand = match (v >> 20) % 8 {
        0 => 0,
        1 => 1,
        2 => ALL,
        3 => ALL - 1,
        // Short significands: exact products and sums, ties.
        4 => (w & ((1 << 26) - 1)) << 26,
        5 => (w & ((1 << 8) - 1)) << 44,
        _ => w & ALL,
    };
    f64::from_bits(sign | e << 52 | significand)
}

/// `any`, moved to an unbiased exponent in [-23, 24] where it is finite and non-zero,
/// so that results are mostly normal.
fn moderate(rng: &mut Rng) -> f64 {
    let x = any(rng);
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let e = 1000 + rng.next() % 48;
    f64::from_bits(x.to_bits() & !(0x7ff << 52) | e << 52)
}

/// The f64 halfway between `|x|` and its successor, as `(|x|, half the gap)`.
fn midpoint_past(x: f64) -> (f64, f64) {
    let up = f64::from_bits(x.abs().to_bits() + 1);
    (x.abs(), (up - x.abs()) / 2.0)
}

/// `fma`'s operands, half of them moderate; `c` cancels the product, puts the sum on or
/// next to a midpoint, makes the result subnormal or tiny, or is anything.
fn fma_operands(rng: &mut Rng, i: u64) -> [f64; 3] {
    let (a, b) =
        if i.is_multiple_of(2) { (any(rng), any(rng)) } else { (moderate(rng), moderate(rng)) };
    let p = a * b;
    let c = match i % 5 {
        // Cancellation: c is -p, or -p a few ulps off, so that the result is the
        // product's rounding error.
        0 if p.is_finite() => {
            -f64::from_bits(p.to_bits().wrapping_add(rng.next() % 5).wrapping_sub(2))
        }
        // Near a halfway point: c puts the sum just on, above or below the midpoint past
        // some value near p.
        1 if p.is_finite() && p != 0.0 => {
            let (near, half) = midpoint_past(p * (1.0 + (rng.next() % 1024) as f64));
            let m = (near + half).copysign(p);
            let nudge = match rng.next() % 3 {
                0 => 0.0,
                1 => m * 2f64.powi(-60 - (rng.next() % 40) as i32),
                _ => -m * 2f64.powi(-60 - (rng.next() % 40) as i32),
            };
            (m - p) + nudge
        }
        // Results near and in the subnormal range.
        2 => (rng.next() % 3) as f64 * 2f64.powi(-1000 - (rng.next() % 70) as i32) - p,
        3 => moderate(rng),
        _ => any(rng),
    };
    [a, b, c]
}

#[test]
fn fma_fast_path_rounds_correctly() {
    let f = crate::routines::build(Routine::FastF64(F64Op::Fma));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut fast_ones, mut wrong) = (0, Vec::new());
    for i in 0..cases() {
        let [a, b, c] = fma_operands(&mut rng, i);
        let want = exact_fma(a, b, c);
        let host = a.mul_add(b, c);
        assert!(
            want == host.to_bits() || f64::from_bits(want).is_nan() && host.is_nan(),
            "models disagree on fma({a:e}, {b:e}, {c:e})"
        );
        if let Some(got) = fast(&f, &[a, b, c]) {
            fast_ones += 1;
            if got.to_bits() != want || !got.is_normal() {
                wrong.push(format!("fma({a:e}, {b:e}, {c:e}) = {host:e}, fast path {got:e}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong, e.g. {:?}", wrong.len(), &wrong[..1]);
    assert!(fast_ones > cases() / 3, "{fast_ones} fast of {}", cases());
    eprintln!("fma.f64: {fast_ones} of {} on the fast path", cases());
}

#[test]
fn division_test_accepts_only_the_rounded_quotient() {
    let built = crate::routines::build(Routine::FastF64(F64Op::Div));
    let given = div_with_candidate();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut fast_ones, mut wrong) = (0, Vec::new());
    for i in 0..cases() {
        let (a, b) = if i.is_multiple_of(2) {
            (any(&mut rng), any(&mut rng))
        } else {
            (moderate(&mut rng), moderate(&mut rng))
        };
        // Every fourth case: `a` a product of `b`, so the quotient is exact or short
        // (powers of two among them).
        let a = if i % 4 == 1 && b.is_finite() {
            b * f64::from((rng.next() % 9) as u32 + 1) * 2f64.powi((rng.next() % 7) as i32 - 3)
        } else {
            a
        };
        let want = exact_div(a, b);
        assert!(want == (a / b).to_bits() || (a / b).is_nan(), "models disagree on {a:e} / {b:e}");
        // The interpreter's quotient (correctly rounded, as lavapipe's), then the
        // device's: right, a few ulps off, or anything.
        let q0 = match i % 8 {
            0..=3 => a / b,
            4..=6 => f64::from_bits(want.wrapping_add(rng.next() % 7).wrapping_sub(3)),
            _ => any(&mut rng),
        };
        for got in [fast(&built, &[a, b]), fast(&given, &[a, b, q0])].into_iter().flatten() {
            fast_ones += 1;
            if got.to_bits() != want || !got.is_normal() {
                wrong.push(format!("{a:e} / {b:e}: accepted {got:e}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong, e.g. {:?}", wrong.len(), &wrong[..1]);
    assert!(fast_ones > cases() / 2, "{fast_ones} fast of {}", 2 * cases());
    eprintln!("div.f64: {fast_ones} of {} accepted", 2 * cases());
}

/// 2^e times `m` (exact for the values below).
fn pow(m: f64, e: i32) -> f64 {
    m * 2f64.powi(e)
}

/// The guards admit exactly the operands of the module doc's proof, at each bound:
/// `fma`'s `a`, `b` normal with exponents at most 995, `-960 ≤ e_a + e_b ≤ 1021`,
/// `|c| < 2^1022`, `|s| ≥ 2^-969`; `div`'s `q0` normal with exponent in [-968, 995], `b`
/// as a factor and `e_q + e_b` as for `fma`. Each row: operands, and whether the fast
/// path takes them.
#[test]
fn guards_admit_the_operands_of_the_proof() {
    let fma = crate::routines::build(Routine::FastF64(F64Op::Fma));
    let rows: [([f64; 3], bool); 16] = [
        // e_a at most 995, and normal.
        ([pow(1.5, 995), pow(1.0, -100), 1.0], true),
        ([pow(1.5, 996), pow(1.0, -100), 1.0], false),
        ([pow(1.0, -1022), pow(1.0, 100), 0.0], true),
        ([pow(1.0, -1023), pow(1.0, 101), 0.0], false),
        ([pow(1.0, -100), pow(1.5, 995), 1.0], true),
        ([pow(1.0, -100), pow(1.5, 996), 1.0], false),
        // e_a + e_b in [-960, 1021].
        ([pow(1.5, -480), pow(1.25, -480), 0.0], true),
        ([pow(1.5, -480), pow(1.25, -481), 0.0], false),
        ([pow(1.5, 511), pow(1.25, 510), 0.0], true),
        ([pow(1.5, 511), pow(1.25, 511), 0.0], false),
        // |c| below 2^1022.
        ([1.5, 1.25, pow(1.999, 1021)], true),
        ([1.5, 1.25, pow(1.0, 1022)], false),
        ([1.5, 1.25, f64::MIN_POSITIVE / 4.0], true),
        // |s| at least 2^-969: p = 2^-960 + 2^-969 or + 2^-970, c = -2^-960.
        ([pow(1.0 + pow(1.0, -9), -480), pow(1.0, -480), -pow(1.0, -960)], true),
        ([pow(1.0 + pow(1.0, -10), -480), pow(1.0, -480), -pow(1.0, -960)], false),
        ([f64::INFINITY, 1.0, 1.0], false),
    ];
    for ([a, b, c], taken) in rows {
        let got = fast(&fma, &[a, b, c]);
        assert_eq!(got.is_some(), taken, "fma({a:e}, {b:e}, {c:e}): {got:?}");
        if let Some(got) = got {
            assert_eq!(got.to_bits(), exact_fma(a, b, c), "fma({a:e}, {b:e}, {c:e})");
        }
    }
    let div = crate::routines::build(Routine::FastF64(F64Op::Div));
    let rows: [([f64; 2], bool); 12] = [
        // e_q in [-968, 995] (e_q + e_b = -959, -960: inside; not powers of two, whose
        // bound is a quarter ulp).
        ([pow(1.5, -959), pow(1.0, 9)], true),
        ([pow(1.5, -960), pow(1.0, 9)], false),
        ([pow(1.0, 995), 1.0], true),
        ([pow(1.0, 996), 1.0], false),
        // b normal with exponent at most 995.
        ([pow(1.0, 995), pow(1.0, 995)], true),
        ([pow(1.0, 996), pow(1.0, 996)], false),
        ([pow(1.0, -27), pow(1.0, -1022)], true),
        ([pow(1.0, -28), pow(1.0, -1023)], false),
        // e_q + e_b in [-960, 1021].
        ([pow(1.0, 1021), pow(1.0, 510)], true),
        ([pow(1.0, 1022), pow(1.0, 511)], false),
        ([pow(1.0, -960), pow(1.0, -860)], true),
        ([pow(1.0, -961), pow(1.0, -861)], false),
    ];
    for ([a, b], taken) in rows {
        let got = fast(&div, &[a, b]);
        assert_eq!(got.is_some(), taken, "{a:e} / {b:e}: {got:?}");
        if let Some(got) = got {
            assert_eq!(got.to_bits(), exact_div(a, b), "{a:e} / {b:e}");
        }
    }
}

/// Each builds alone (`float_arithmetic`); every float operation of the fast paths is
/// `.visible`, and `div`'s one division is the device's (`.native`) candidate.
#[test]
fn the_fast_paths_build_alone() {
    for op in F64Op::ALL {
        for r in [Routine::FastF64(op), Routine::NearestF64(op)] {
            // Binary ones: `div`'s residual test takes an `abs`, which no driver folds.
            let float: Vec<_> =
                float_arithmetic(r).into_iter().filter(|(op, _, _)| op.is_some()).collect();
            assert!(float.iter().all(|(_, _, mode)| mode.visible), "{}: {float:?}", r.name());
            let divisions = float.iter().filter(|(op, _, _)| *op == Some(BinaryOp::Div));
            let native = divisions.filter(|(_, _, m)| m.path == FloatPath::Native);
            let fast_div = r == Routine::FastF64(F64Op::Div);
            assert_eq!(native.count(), usize::from(fast_div), "{}", r.name());
            assert_eq!(float.is_empty(), matches!(r, Routine::NearestF64(_)), "{}", r.name());
        }
    }
}
