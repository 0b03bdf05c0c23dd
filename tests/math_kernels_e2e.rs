//! The math kernels of `tests/kernels/` (`math_fast.cu`, `convert.cu`, `half_math.cu`;
//! nvcc 13 sm_75/80/90, NVRTC 12 compute_52/70, clang 14 sm_70) run on the default
//! Vulkan device through the Rust API and through `ptxvk run --spec`, checked element by
//! element against the CPU references of `common/math_cases.rs`: exact bits for IEEE
//! operations and conversions in every rounding mode, the PTX ISA's error bounds for the
//! `.approx` instructions, any NaN where the result is NaN.
//!
//! The last tests need no device: they check the references themselves against Rust's
//! IEEE arithmetic, the `half` crate, and brute force.

mod common;

use common::float_ref::{self as fr, Mode, BF16, F16, F32, F64};
use common::math_cases;
use common::Rng;
use std::cmp::Ordering;

#[test]
fn math_fast_approx_intrinsics_and_rounding_modes() {
    math_cases::run(&math_cases::math_fast());
}

#[test]
fn convert_intrinsics_in_every_rounding_mode() {
    math_cases::run(&math_cases::convert());
}

#[test]
fn half_math_f16_and_bf16_arithmetic_and_conversions() {
    math_cases::run(&math_cases::half_math());
}

/// Bits of an f64 result of the reference, NaN as one pattern.
fn key(x: f64) -> u64 {
    if x.is_nan() {
        u64::MAX
    } else {
        x.to_bits()
    }
}

fn f32_key(x: f32) -> u64 {
    key(x as f64)
}

/// Random f32 operand pairs: specials, all bit patterns, and close magnitudes.
fn operand_pairs(rng: &mut Rng) -> Vec<(f32, f32)> {
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        3.0,
        0.1,
        f32::MAX,
        -f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        1e-40,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0 + f32::EPSILON,
        16_777_215.0,
        f32::from_bits(0x3380_0000),
    ];
    let mut v = Vec::new();
    for &a in &specials {
        for &b in &specials {
            v.push((a, b));
        }
    }
    for _ in 0..100_000 {
        let a = f32::from_bits(rng.next_u32());
        let b = if rng.next_u64() & 1 == 0 {
            f32::from_bits(rng.next_u32())
        } else {
            let k = 1.0 + (rng.next_u32() % 1024) as f32 / 1023.0;
            let e = (rng.next_u32() % 64) as i32 - 32;
            -a * k * 2f32.powi(e)
        };
        v.push((a, b));
    }
    v
}

/// Round-to-nearest results of the reference equal Rust's IEEE f32 arithmetic, and
/// the directed modes bracket the exact result, checked by the sign of an exact
/// residual: rm <= exact <= rp, adjacent, equal when the result is exact; rz and rn
/// among them.
#[test]
fn reference_rounding_agrees_with_ieee_f32() {
    let mut rng = Rng(201);
    for (a, b) in operand_pairs(&mut rng) {
        let (x, y) = (a as f64, b as f64);
        let ctx =
            || format!("a = {a:e} (0x{:08x}), b = {b:e} (0x{:08x})", a.to_bits(), b.to_bits());
        assert_eq!(key(F32.add(Mode::Rn, x, y)), f32_key(a + b), "add {}", ctx());
        assert_eq!(key(F32.mul(Mode::Rn, x, y)), f32_key(a * b), "mul {}", ctx());
        assert_eq!(key(F32.div(Mode::Rn, x, y)), f32_key(a / b), "div {}", ctx());
        assert_eq!(key(F32.sqrt(Mode::Rn, x)), f32_key(a.sqrt()), "sqrt {}", ctx());
        assert_eq!(key(F32.fma(Mode::Rn, x, y, x)), f32_key(a.mul_add(b, a)), "fma {}", ctx());
        // Each op, the sign of (exact result - r) for a finite r, and whether that
        // exact result is finite (finite operands, a nonzero divisor).
        let e = |v: f64| match fr::decode_f64(v) {
            fr::Class::Finite(e) => e,
            c => panic!("{v:e} is {c:?}"),
        };
        let finite = x.is_finite() && y.is_finite();
        type Op<'a> = &'a dyn Fn(Mode) -> f64;
        type Residual<'a> = &'a dyn Fn(f64) -> Ordering;
        let ops: [(&str, Op<'_>, Residual<'_>, bool); 5] = [
            ("add", &|m| F32.add(m, x, y), &|r| fr::add(fr::add(e(x), e(y)), e(-r)).sign(), finite),
            ("mul", &|m| F32.mul(m, x, y), &|r| fr::add(fr::mul(e(x), e(y)), e(-r)).sign(), finite),
            (
                "div",
                &|m| F32.div(m, x, y),
                &|r| {
                    let s = fr::add(e(x), fr::mul(e(r), e(y)).neg()).sign();
                    if y < 0.0 {
                        s.reverse()
                    } else {
                        s
                    }
                },
                finite && y != 0.0,
            ),
            (
                "fma",
                &|m| F32.fma(m, x, y, -x),
                &|r| fr::add(fr::add(fr::mul(e(x), e(y)), e(-x)), e(-r)).sign(),
                finite,
            ),
            (
                "sqrt",
                &|m| F32.sqrt(m, x),
                &|r| fr::add(e(x), fr::mul(e(r), e(r)).neg()).sign(),
                x.is_finite(),
            ),
        ];
        for (name, op, residual, exact_finite) in ops {
            let (rn, rz, rm, rp) = (op(Mode::Rn), op(Mode::Rz), op(Mode::Rm), op(Mode::Rp));
            if rn.is_nan() {
                assert!(rz.is_nan() && rm.is_nan() && rp.is_nan(), "{name} {}", ctx());
                continue;
            }
            assert!(rm <= rp, "{name} {}: rm {rm:e} > rp {rp:e}", ctx());
            assert!(rm == rp || F32.next_up(rm) == rp, "{name} {}: rm, rp not adjacent", ctx());
            assert!(rn == rm || rn == rp, "{name} {}", ctx());
            assert!(rz == if rm < 0.0 { rp } else { rm }, "{name} {}: rz", ctx());
            for r in [rn, rz, rm, rp] {
                assert!(F32.holds(r), "{name} {}: {r:e} is not an f32", ctx());
            }
            if exact_finite {
                // The exact result against a candidate; beyond the range it is finite.
                let cmp = |r: f64| match r {
                    f64::INFINITY => Ordering::Less,
                    f64::NEG_INFINITY => Ordering::Greater,
                    _ => residual(r),
                };
                let (lo, hi) = (cmp(rm), cmp(rp));
                assert!(lo != Ordering::Less, "{name} {}: rm {rm:e} above", ctx());
                assert!(hi != Ordering::Greater, "{name} {}: rp {rp:e} below", ctx());
                if lo == Ordering::Equal || hi == Ordering::Equal {
                    assert!(rm == rp, "{name} {}: exact, but rm {rm:e} != rp {rp:e}", ctx());
                }
            }
        }
        // Where the exact sum is an f64, the directed modes are plain rounding of it.
        let s = x + y;
        if s.is_finite() && s - x == y && s - y == x {
            for m in [Mode::Rz, Mode::Rm, Mode::Rp] {
                if s != 0.0 {
                    assert_eq!(F32.add(m, x, y), F32.cvt(m, s), "add {m:?} {}", ctx());
                }
            }
        }
        let p = x * y;
        for m in [Mode::Rz, Mode::Rm, Mode::Rp] {
            assert_eq!(key(F32.mul(m, x, y)), key(F32.cvt(m, p)), "mul {m:?} {}", ctx());
        }
    }
    // Signs of exact zeros, overflow and underflow in the directed modes.
    assert!(F32.add(Mode::Rm, 1.0, -1.0).is_sign_negative());
    assert!(F32.add(Mode::Rp, 1.0, -1.0).is_sign_positive());
    assert!(F32.add(Mode::Rz, -0.0, -0.0).is_sign_negative());
    assert!(F32.fma(Mode::Rm, 2.0, 1.0, -2.0).is_sign_negative());
    assert!(F32.fma(Mode::Rm, 0.0, 1.0, 0.0).is_sign_positive());
    let max = f32::MAX as f64;
    assert_eq!(F32.add(Mode::Rz, max, max), max);
    assert_eq!(F32.add(Mode::Rp, max, 1.0), f64::INFINITY);
    assert_eq!(F32.mul(Mode::Rm, -max, 2.0), f64::NEG_INFINITY);
    assert_eq!(F32.mul(Mode::Rz, -max, 2.0), -max);
    let tiny = f32::from_bits(1) as f64;
    assert_eq!(F32.mul(Mode::Rp, tiny, 0.5), tiny);
    assert_eq!(F32.mul(Mode::Rn, tiny, 0.5), 0.0);
    assert_eq!(F32.mul(Mode::Rm, -tiny, 0.5), -tiny);
    assert!(F32.mul(Mode::Rz, -tiny, 0.5).is_sign_negative());
}

/// The model is not limited to narrow formats: in f64 it is Rust's IEEE f64
/// arithmetic (`f64::mul_add` for the fma), subnormals, overflow and specials included.
#[test]
fn reference_rounding_agrees_with_ieee_f64() {
    let mut rng = Rng(204);
    let specials =
        [0.0, -0.0, 1.0, -3.0, f64::MAX, f64::MIN_POSITIVE, 5e-324, f64::INFINITY, f64::NAN];
    let mut v: Vec<(f64, f64)> =
        specials.iter().flat_map(|&a| specials.iter().map(move |&b| (a, b))).collect();
    for _ in 0..100_000 {
        let a = f64::from_bits(rng.next_u64());
        let b = if rng.next_u64() & 1 == 0 {
            f64::from_bits(rng.next_u64())
        } else {
            // Close magnitudes: cancellation, and quotients and products near 1.
            -a * (1.0 + (rng.next_u64() >> 11) as f64 * fr::pow2(-60))
        };
        v.push((a, b));
    }
    for (x, y) in v {
        let ctx =
            || format!("x = {x:e} (0x{:016x}), y = {y:e} (0x{:016x})", x.to_bits(), y.to_bits());
        assert_eq!(key(F64.add(Mode::Rn, x, y)), key(x + y), "add {}", ctx());
        assert_eq!(key(F64.mul(Mode::Rn, x, y)), key(x * y), "mul {}", ctx());
        assert_eq!(key(F64.div(Mode::Rn, x, y)), key(x / y), "div {}", ctx());
        assert_eq!(key(F64.sqrt(Mode::Rn, x)), key(x.sqrt()), "sqrt {}", ctx());
        assert_eq!(key(F64.fma(Mode::Rn, x, y, x)), key(x.mul_add(y, x)), "fma {}", ctx());
        assert_eq!(key(F64.cvt(Mode::Rz, x)), key(x), "cvt {}", ctx());
        assert_eq!(key(F32.cvt(Mode::Rn, x)), key(x as f32 as f64), "cvt.f32 {}", ctx());
    }
}

/// Conversions: f64 -> f32 to nearest is Rust's `as`, directed ones bracket the
/// value; f32 -> f16/bf16 to nearest is the `half` crate's; f16/bf16 encode and
/// decode round-trip every pattern; integer conversions on edge cases.
#[test]
fn reference_conversions_agree_with_rust_and_half() {
    let mut rng = Rng(202);
    for _ in 0..200_000 {
        let g = f64::from_bits(rng.next_u64());
        if g.is_nan() {
            continue;
        }
        assert_eq!(F32.cvt(Mode::Rn, g).to_bits(), ((g as f32) as f64).to_bits(), "{g:e}");
        let (rm, rp) = (F32.cvt(Mode::Rm, g), F32.cvt(Mode::Rp, g));
        assert!((rm..=rp).contains(&g) && (rm == rp || F32.next_up(rm) == rp), "{g:e}");
        let f = f32::from_bits(rng.next_u32());
        if f.is_nan() {
            continue;
        }
        let h = half::f16::from_f32(f).to_f64();
        assert_eq!(key(F16.cvt(Mode::Rn, f as f64)), key(h), "f16 {f:e}");
        let b = half::bf16::from_f32(f).to_f64();
        assert_eq!(key(BF16.cvt(Mode::Rn, f as f64)), key(b), "bf16 {f:e}");
        if f.is_finite() {
            let rz = F16.cvt(Mode::Rz, f as f64);
            assert!(rz.abs() <= (f as f64).abs() && F16.holds(rz), "f16 rz {f:e}");
            assert!(F16.next_up(rz.abs()) > (f as f64).abs(), "f16 rz {f:e}");
        }
    }
    for bits in 0u64..=0xffff {
        for fmt in [F16, BF16] {
            let v = fmt.value(bits);
            if !v.is_nan() {
                assert_eq!(fmt.encode(v), bits, "{fmt:?} 0x{bits:04x}");
            }
        }
        assert_eq!(
            key(BF16.value(bits)),
            key(f32::from_bits((bits as u32) << 16) as f64),
            "0x{bits:04x}"
        );
        assert_eq!(key(F16.value(bits)), key(half::f16::from_bits(bits as u16).to_f64()));
    }
    for _ in 0..100_000 {
        let v = (rng.next_u64() as i64) >> (rng.next_u32() % 64);
        assert_eq!(F32.cvt_int(Mode::Rn, v as i128), (v as f32) as f64, "{v}");
        assert_eq!(F32.cvt_int(Mode::Rn, v as u64 as i128), (v as u64 as f32) as f64);
        let (rm, rp) = (F32.cvt_int(Mode::Rm, v as i128), F32.cvt_int(Mode::Rp, v as i128));
        assert!((rm as i128..=rp as i128).contains(&(v as i128)), "{v}");
        // The f64 neighbours: dz the truncation, dp the smallest f64 >= v.
        let (dz, dp) = (F64.cvt_int(Mode::Rz, v as i128), F64.cvt_int(Mode::Rp, v as i128));
        let w = v as i128;
        let away = |x: f64| f64::from_bits(x.to_bits() + 1);
        let exact = |x: f64| x as i128 == w;
        // (Inexact only beyond 2^53, where every f64 is an integer.)
        assert!(exact(dz) || ((dz.abs() as i128) < w.abs() && away(dz).abs() as i128 > w.abs()));
        let below = if dp > 0.0 { f64::from_bits(dp.to_bits() - 1) } else { away(dp) };
        assert!(exact(dp) || (dp as i128 > w && (below as i128) < w), "{v}");
    }
    assert_eq!(F32.cvt_int(Mode::Rz, 16_777_217), 16_777_216.0);
    assert_eq!(F32.cvt_int(Mode::Rp, 16_777_217), 16_777_218.0);
    assert_eq!(F32.cvt_int(Mode::Rm, -16_777_217), -16_777_218.0);
    assert_eq!(F32.cvt_int(Mode::Rp, u64::MAX as i128), 18_446_744_073_709_551_616.0);
    assert_eq!(F64.cvt_int(Mode::Rz, i64::MAX as i128), 9_223_372_036_854_774_784.0);
    assert_eq!(F64.cvt_int(Mode::Rz, -(1i128 << 53) - 1), -9_007_199_254_740_992.0);
    assert_eq!(F64.cvt_int(Mode::Rp, (1i128 << 53) + 1), 9_007_199_254_740_994.0);
    // cvt to integers: rounding, clamping, and NaN (0, or 1 << (bits-1) from f64 or to
    // 64 bits).
    assert_eq!(fr::to_int(f64::NAN, Mode::Rn, 32, true, false), 0);
    assert_eq!(fr::to_int(f64::NAN, Mode::Rn, 32, false, false), 0);
    assert_eq!(fr::to_int(f64::NAN, Mode::Rn, 32, true, true), 0x8000_0000);
    assert_eq!(fr::to_int(f64::NAN, Mode::Rm, 64, true, false), 1 << 63);
    assert_eq!(fr::to_int(2.5, Mode::Rn, 32, true, false), 2);
    assert_eq!(fr::to_int(-2.5, Mode::Rn, 32, true, false), (-2i32) as u32 as u64);
    assert_eq!(fr::to_int(-0.5, Mode::Rp, 32, false, true), 0);
    assert_eq!(fr::to_int(3e9, Mode::Rn, 32, true, false), 0x7fff_ffff);
    assert_eq!(fr::to_int(f64::NEG_INFINITY, Mode::Rn, 32, true, false), 0x8000_0000);
    assert_eq!(fr::to_int(1e30, Mode::Rz, 64, false, false), u64::MAX);
    assert_eq!(fr::to_int(9.3e18, Mode::Rn, 64, true, false), i64::MAX as u64);
}

/// half_math.cu computes the f16 fma itself where the target has no f16 arithmetic
/// (NVRTC compute_52): f32 TwoSum, round to odd, round to f16. This is that code on
/// the CPU, checked against the exact reference on random triples and near-ties, where
/// the plain f32 fma followed by a rounding to f16 is often wrong.
#[test]
fn half_math_fma_fallback_is_correctly_rounded() {
    fn fallback(a: f32, b: f32, c: f32) -> f64 {
        let p = a * b;
        let s = p + c;
        let bp = s - c;
        let e = (p - bp) + (c - (s - bp));
        let mut u = s.to_bits();
        if (u & 0x7f80_0000) != 0x7f80_0000 && e != 0.0 && (u & 1) == 0 {
            u = if (e > 0.0) == (s > 0.0) { u + 1 } else { u - 1 };
        }
        F16.cvt(Mode::Rn, f32::from_bits(u) as f64)
    }
    let mut rng = Rng(203);
    let mut naive_wrong = 0;
    for i in 0..400_000 {
        let (a, b, c) = if i % 2 == 0 {
            let mut r = || F16.value(rng.next_u64() & 0xffff);
            (r(), r(), r())
        } else {
            let c = F16.value((rng.next_u64() & 0x7bff) | (rng.next_u64() & 0x8000));
            let a = F16.value((rng.next_u64() & 0x3ff) | 0x3c00);
            let b = F16.cvt(Mode::Rn, F16.quantum(c) / 2.0 / a);
            let b = if rng.next_u64() & 1 == 0 { F16.next_up(b) } else { F16.next_down(b) };
            (a, b, c)
        };
        let want = key(F16.fma(Mode::Rn, a, b, c));
        assert_eq!(key(fallback(a as f32, b as f32, c as f32)), want, "{a:e} {b:e} {c:e}");
        let naive = F16.cvt(Mode::Rn, (a as f32).mul_add(b as f32, c as f32) as f64);
        naive_wrong += (key(naive) != want) as usize;
    }
    assert!(naive_wrong > 0, "the near-ties should defeat the naive f32 fma");
}

/// The references of the kernels are total: every input of every case gets one
/// expectation per output element, and exactly representable ones.
#[test]
fn math_case_references_cover_every_element() {
    for mc in [math_cases::math_fast(), math_cases::convert(), math_cases::half_math()] {
        for o in &mc.outputs {
            let arg = &mc.case.args[o.arg];
            let ptxvk::spec::SpecArg::Buffer { bytes, .. } = arg else {
                panic!("{}: argument {} is not a buffer", mc.kernel, o.arg)
            };
            assert_eq!(bytes.len(), o.wants.len() * o.num.size(), "{}: arg {}", mc.kernel, o.arg);
        }
    }
}
