//! Conversions involving floats (`cvt`, PTX ISA 9.2 §9.7.9.21): float to integer, integer
//! to float and float to float with every rounding, their references and tests.

use super::*;

/// The integer rounding modifiers of `cvt` (§9.7.9.21, Integer Notes): `.rni` to the
/// nearest integer, ties to even; `.rzi` toward zero; `.rmi` toward negative infinity;
/// `.rpi` toward positive infinity.
pub(super) const IRNDS: [(Mode, &str); 4] =
    [(Mode::Rn, "rni"), (Mode::Rz, "rzi"), (Mode::Rm, "rmi"), (Mode::Rp, "rpi")];

/// `cvt` float → integer (§9.7.9.21, [`float_ref::to_int`]: rounded, clamped, NaN as the
/// ISA says), extended to the 64-bit destination register.
pub(super) fn cvt_f2i(dst: Int, src_f64: bool, mode: Mode, x: f64) -> u64 {
    dst.reg64(dst.read(float_ref::to_int(x, mode, dst.bits, dst.signed, src_f64)))
}

/// f32 inputs of the conversions: rounding ties and near-ties, the limits of every
/// integer type and their float neighbours, subnormals, infinities and NaN.
pub(super) fn f32_cvt_values() -> Vec<u64> {
    let positive: [f32; 29] = [
        0.0,
        0.5,
        1.5,
        2.5,
        0.499_999_97, // largest f32 below 0.5
        0.500_000_06, // smallest f32 above 0.5
        1.0,
        127.5,
        128.0,
        128.5,
        255.5,
        256.0,
        32767.5,
        32768.0,
        32768.5,
        65535.5,
        65536.0,
        8_388_607.5,                  // 2^23 - 0.5
        2_147_483_520.0,              // largest f32 below 2^31
        2_147_483_648.0,              // 2^31
        4_294_967_040.0,              // largest f32 below 2^32
        4_294_967_296.0,              // 2^32
        9_223_371_487_098_961_920.0,  // largest f32 below 2^63
        9_223_372_036_854_775_808.0,  // 2^63
        18_446_742_974_197_923_840.0, // largest f32 below 2^64
        18_446_744_073_709_551_616.0, // 2^64
        1e30,
        f32::MAX,
        f32::INFINITY,
    ];
    let mut v: Vec<u64> =
        positive.iter().flat_map(|&p| [p.to_bits() as u64, (-p).to_bits() as u64]).collect();
    // Subnormals (and `.ftz` flushing them), the smallest normal, a NaN.
    for b in [0x0000_0001u32, 0x0040_0000, 0x007f_ffff, 0x0080_0000, 0x7fc0_0000] {
        v.extend([b as u64, (b | 0x8000_0000) as u64]);
    }
    v
}

/// f64 inputs of the conversions, as [`f32_cvt_values`] at f64 precision.
pub(super) fn f64_cvt_values() -> Vec<u64> {
    let positive: [f64; 24] = [
        0.0,
        0.5,
        1.5,
        2.5,
        0.499_999_999_999_999_94,
        127.5,
        128.0,
        255.5,
        256.0,
        32767.5,
        32768.0,
        65535.5,
        65536.0,
        2_147_483_647.5,
        2_147_483_648.0,
        4_294_967_295.5,
        4_294_967_296.0,
        9_223_372_036_854_774_784.0,  // largest f64 below 2^63
        9_223_372_036_854_775_808.0,  // 2^63
        18_446_744_073_709_549_568.0, // largest f64 below 2^64
        18_446_744_073_709_551_616.0, // 2^64
        4_503_599_627_370_495.5,      // 2^52 - 0.5
        1e300,
        f64::INFINITY,
    ];
    let mut v: Vec<u64> = positive.iter().flat_map(|&p| [p.to_bits(), (-p).to_bits()]).collect();
    v.extend([1, 1 | 1 << 63, 0x0010_0000_0000_0000, 0x7ff8_0000_0000_0000]);
    v
}

/// Cases whose `a` and `b` cycle through `a_values` and `b_values` (as many as the longer
/// list has values).
pub(super) fn zip_cycle(a_values: &[u64], b_values: &[u64]) -> Vec<In> {
    let n = a_values.len().max(b_values.len());
    (0..n).map(|i| In::new(a_values[i % a_values.len()], b_values[i % b_values.len()], 0)).collect()
}

/// A random f32 between 2^-24 and 2^85 in magnitude (so across every integer range).
pub(super) fn random_f32_bits(r: &mut Rng) -> u64 {
    let x = r.normal_f32();
    let scale = 2f32.powi((r.next_u32() % 70) as i32 - 4);
    (x * scale).to_bits() as u64
}

#[test]
fn cvt_f32_to_narrow_integers() {
    let mut slots = Vec::new();
    for dst in [u(8), u(16), u(32), s(8), s(16), s(32)] {
        for (r, rn) in IRNDS {
            slots.push(slot(format!("cvt.{rn}.{}.f32 a", dst.name()), move |x| {
                bits(cvt_f2i(dst, false, r, x.fa().into()))
            }));
        }
    }
    // `.ftz`: "subnormal inputs are flushed to sign-preserving zero" (so `.rpi` of the
    // smallest subnormal is 0, not 1, and `.rmi` of its negative is 0, not -1).
    for dst in [s(32), u(32)] {
        for (r, rn) in [(Mode::Rp, "rpi"), (Mode::Rm, "rmi")] {
            slots.push(slot(format!("cvt.{rn}.ftz.{}.f32 a", dst.name()), move |x| {
                bits(cvt_f2i(dst, false, r, ftz(x.fa()).into()))
            }));
        }
    }
    // `.sat` is redundant for float → integer.
    slots.push(slot("cvt.rni.sat.s16.f32 a", |x| {
        bits(cvt_f2i(s(16), false, Mode::Rn, x.fa().into()))
    }));
    let mut cases = zip_cycle(&f32_cvt_values(), &[0]);
    cases.extend(random(12, 300, |r| In::new(random_f32_bits(r), 0, 0)));
    OpsKernel {
        name: "cvt_f2i",
        inputs: &[Elem::F32],
        out: Elem::B64,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

#[test]
fn cvt_f32_to_64_bit_and_f64_to_integers() {
    let mut slots = Vec::new();
    for dst in [u(64), s(64)] {
        for (r, rn) in IRNDS {
            slots.push(slot(format!("cvt.{rn}.{}.f32 a", dst.name()), move |x| {
                bits(cvt_f2i(dst, false, r, x.fa().into()))
            }));
        }
    }
    for dst in INT_TYPES {
        for (r, rn) in IRNDS {
            slots.push(slot(format!("cvt.{rn}.{}.f64 b", dst.name()), move |x| {
                bits(cvt_f2i(dst, true, r, x.db()))
            }));
        }
    }
    let mut cases = zip_cycle(&f32_cvt_values(), &f64_cvt_values());
    cases.extend(random(13, 300, |r| {
        let b = (f32::from_bits(random_f32_bits(r) as u32) as f64 * 1.000_000_1).to_bits();
        In::new(random_f32_bits(r), b, 0)
    }));
    OpsKernel {
        name: "cvt_f2i_wide",
        inputs: &[Elem::F32, Elem::F64],
        out: Elem::B64,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

#[test]
fn cvt_integers_to_floats() {
    // `cvt.rn` integer → float (§9.7.9.21): round to nearest, ties to even (Rust's `as`
    // rounds integer → float to nearest, ties to even).
    let mut slots = Vec::new();
    for src in INT_TYPES {
        slots.push(slot(format!("cvt.rn.f32.{} a", src.name()), move |x| {
            f32w(src.read(x.a) as f32)
        }));
    }
    for src in INT_TYPES {
        slots.push(slot(format!("cvt.rn.f64.{} a", src.name()), move |x| {
            f64w(src.read(x.a) as f64)
        }));
    }
    let p = |e: u32| 1u64 << e;
    let mut values = vec![
        0,
        1,
        u64::MAX,
        p(24) + 1, // ties at f32 precision
        p(24) + 3,
        p(24) - 1,
        p(25) + 2,
        p(53) + 1, // ties at f64 precision
        p(53) + 3,
        p(54) + 2,
        p(63) - 1,
        p(63),
        p(63) + 1,
        u64::MAX - 1024,
        0x7fff_ffff,
        0x8000_0001,
        0xffff_ffff,
        0xffff_ff7f, // rounds down to 2^32 - 256 as u32, -129 as s32
        0x7fff_ffff_ffff_fdff,
        (p(24) + 1).wrapping_neg(),
        (p(53) + 1).wrapping_neg(),
        0x0123_4567_89ab_cdef,
    ];
    for t in INT_TYPES {
        values.extend([t.min() as u64, t.max() as u64]);
    }
    let mut cases: Vec<In> = values.iter().map(|&a| In::new(a, 0, 0)).collect();
    cases.extend(random(14, 300, |r| In::new(random_int(r, 64), 0, 0)));
    OpsKernel {
        name: "cvt_i2f",
        inputs: &[Elem::B64],
        out: Elem::B64,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

/// `.sat` on an f64 result (§9.7.9.21, Saturation modifier): "limits the result to the
/// range [0.0, 1.0]. NaN results are flushed to positive zero."
pub(super) fn sat64(x: f64) -> Want {
    if x.is_nan() || x < 0.0 {
        Want::Bits(0)
    } else if x == 0.0 && x.is_sign_negative() {
        Want::ZeroF64
    } else {
        f64w(x.min(1.0))
    }
}

#[test]
fn cvt_between_f32_and_f64_and_to_integral_values() {
    // f32 results are in the low half of the 64-bit slot.
    let slots = vec![
        // f32 → f64 is exact; `.ftz` flushes a subnormal f32 input.
        slot("cvt.f64.f32 a", |x| f64w(x.fa().into())),
        slot("cvt.ftz.f64.f32 a", |x| f64w(ftz(x.fa()).into())),
        slot("cvt.sat.f64.f32 a", |x| sat64(f64::from(x.fa()))),
        // f64 → f32 `.rn`: round to nearest even (Rust's `as` does), overflowing to ±inf;
        // `.ftz` flushes a subnormal f32 result.
        slot("cvt.rn.f32.f64 b", |x| f32w(x.db() as f32)),
        slot("cvt.rn.ftz.f32.f64 b", |x| f32w(ftz(x.db() as f32))),
        slot("cvt.rn.sat.f32.f64 b", |x| sat(x.db() as f32)),
        // Float → same float with an integer rounding: "The result is an integral value,
        // stored in floating-point format" (§9.7.9.21, Floating Point Notes).
        slot("cvt.rni.f32.f32 a", |x| f32w(x.fa().round_ties_even())),
        slot("cvt.rzi.f32.f32 a", |x| f32w(x.fa().trunc())),
        slot("cvt.rmi.f32.f32 a", |x| f32w(x.fa().floor())),
        slot("cvt.rpi.f32.f32 a", |x| f32w(x.fa().ceil())),
        slot("cvt.rni.ftz.f32.f32 a", |x| f32w(ftz(x.fa()).round_ties_even())),
        slot("cvt.rpi.sat.f32.f32 a", |x| sat(x.fa().ceil())),
        slot("cvt.rni.f64.f64 b", |x| f64w(x.db().round_ties_even())),
        slot("cvt.rzi.f64.f64 b", |x| f64w(x.db().trunc())),
        slot("cvt.rmi.f64.f64 b", |x| f64w(x.db().floor())),
        slot("cvt.rpi.f64.f64 b", |x| f64w(x.db().ceil())),
        slot("cvt.rzi.sat.f64.f64 b", |x| sat64(x.db().trunc())),
        // Same size without a rounding modifier: only `.ftz`/`.sat` apply (§9.7.9.21);
        // nvcc emits `cvt.sat.f32.f32` for `__saturatef`.
        slot("cvt.f32.f32 a", |x| f32w(x.fa())),
        slot("cvt.ftz.f32.f32 a", |x| f32w(ftz(x.fa()))),
        slot("cvt.sat.f32.f32 a", |x| sat(x.fa())),
        slot("cvt.sat.f64.f64 b", |x| sat64(x.db())),
    ];
    let p = |e: i32| 2f64.powi(e);
    let mut b_values: Vec<u64> = f64_cvt_values();
    for v in [
        1.0 + p(-24),                 // tie: rounds to 1
        1.0 + 3.0 * p(-24),           // tie: rounds up to even
        1.0 + p(-24) + p(-60),        // just above a tie
        1.0 - p(-25),                 // tie below 1
        f64::from(f32::MAX),          // exact
        f64::from(f32::MAX) + p(103), // tie at the top: rounds to even = overflow to inf
        f64::from(f32::MAX) + p(102), // below the tie: stays finite
        1e39,                         // overflow
        p(-149),                      // smallest f32 subnormal
        p(-150),                      // tie: rounds to even = 0
        p(-150) + p(-200),            // just above: smallest subnormal
        3.0 * p(-150),                // tie: rounds up to even
        p(-126) - p(-151),            // rounds to the smallest normal
        p(-127),                      // f32 subnormal result (flushed by .ftz)
        1e-50,                        // underflow to 0
        0.3,
        1e-310, // f64 subnormal
        0.7,
    ] {
        b_values.extend([v.to_bits(), (-v).to_bits()]);
    }
    let mut a_values = f32_cvt_values();
    a_values.extend(
        [0.4f32, 0.6, 0.7, 1e-40].iter().flat_map(|&v| [v.to_bits() as u64, (-v).to_bits() as u64]),
    );
    let mut cases = zip_cycle(&a_values, &b_values);
    cases.extend(random(15, 300, |r| {
        let b = f64::from(f32::from_bits(random_f32_bits(r) as u32)) * (1.0 + p(-30));
        In::new(random_f32_bits(r), b.to_bits(), 0)
    }));
    OpsKernel {
        name: "cvt_f2f",
        inputs: &[Elem::F32, Elem::F64],
        out: Elem::B64,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

/// `div.rn.f32`, `sqrt.rn.f32` and `rcp.rn.f32` against Rust's `/` and `sqrt`, which are
/// IEEE 754 correctly rounded (PTX ISA 9.2 §9.7.3.8, §9.7.3.10, §9.7.3.9: the `.rn` forms
/// are IEEE 754 compliant). A NaN result only has to be a NaN (Vulkan fixes no payload);
/// `.ftz` flushes subnormal inputs and the result to a zero of the same sign.
#[test]
fn div_sqrt_rcp_rn_f32_are_correctly_rounded() {
    let Some(device) = device() else { return };
    let mut rng = Rng(47);
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        3.0,
        10.0,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        1e-40,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.1,
        1.0 + f32::EPSILON,
        16_777_215.0,
    ];
    let mut a = Vec::new();
    let mut b = Vec::new();
    for &x in &specials {
        for &y in &specials {
            a.push(x);
            b.push(y);
        }
    }
    // Random operands of every magnitude, including results that overflow, underflow to
    // subnormals, and land near rounding ties.
    for _ in 0..20_000 {
        let x = f32::from_bits(rng.next_u32());
        let y = f32::from_bits(rng.next_u32());
        a.push(if x.is_nan() { 1.5 } else { x });
        b.push(if y.is_nan() { 0.75 } else { y });
    }
    for _ in 0..4_000 {
        // Quotients just beside a representable value: q*y with q of 24 bits.
        let q = (rng.next_u32() >> 8 | 1) as f32;
        let y = (rng.next_u32() >> 8 | 1) as f32;
        a.push(q * y);
        b.push(y);
    }
    let n = a.len();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let case = Case {
        grid: [n.div_ceil(128) as u32, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
        args: vec![
            SpecArg::Buffer { ty: ElemType::F32, bytes: bytes(&a) },
            SpecArg::Buffer { ty: ElemType::F32, bytes: bytes(&b) },
            SpecArg::Buffer { ty: ElemType::F32, bytes: vec![0; 24 * n] },
            SpecArg::Value((n as u32).to_le_bytes().to_vec()),
        ],
        expected: vec![],
    };
    let path = repo().join("tests/ptx/ops/div_f32.ptx");
    let (_, api) = run_api(&device, &path, "div_f32", &case);
    let cli = run_cli(&path, "div_f32", &case);
    for (what, got) in [("Rust API", &api), ("ptxvk run --spec", &cli)] {
        let out = &got.iter().find(|(arg, _)| *arg == 2).expect("output buffer").1;
        for i in 0..n {
            let word =
                |j: usize| f32::from_le_bytes(out[4 * j..4 * j + 4].try_into().expect("4 bytes"));
            let (x, y) = (a[i], b[i]);
            let wants = [
                ("div.rn", x / y),
                ("div.rn.ftz", ftz(ftz(x) / ftz(y))),
                ("sqrt.rn", x.sqrt()),
                ("sqrt.rn.ftz", ftz(ftz(x).sqrt())),
                ("rcp.rn", 1.0 / y),
                ("rcp.rn.ftz", ftz(1.0 / ftz(y))),
            ];
            for (k, (name, want)) in wants.into_iter().enumerate() {
                let have = word(6 * i + k);
                let ok =
                    if want.is_nan() { have.is_nan() } else { have.to_bits() == want.to_bits() };
                assert!(
                    ok,
                    "{what}: {name}.f32 of a = {x:e} [{:#010x}], b = {y:e} [{:#010x}] gave {have:e} [{:#010x}], expected {want:e} [{:#010x}]",
                    x.to_bits(),
                    y.to_bits(),
                    have.to_bits(),
                    want.to_bits()
                );
            }
        }
    }
}
