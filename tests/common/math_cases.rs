//! CPU references for the math kernels of `tests/kernels/`: `math_fast.cu` (fast-math
//! intrinsics and IEEE rounding modes), `convert.cu` (cvt with every rounding mode) and
//! `half_math.cu` (f16 and bf16), written from the semantics in the PTX ISA and
//! independent of ptxvk and of any GPU output.
//!
//! Exactly defined results (IEEE add/mul/fma/div/sqrt/rcp with `.rn/.rz/.rm/.rp`, every
//! cvt) come from the exact model of [`float_ref`](super::float_ref), which rounds the
//! real result itself. NaN results may be any
//! NaN. The `.approx` instructions are checked against the bounds of the PTX ISA
//! (9.x, §9.7.3 "Floating Point Instructions"):
//!
//! | instruction | bound |
//! |---|---|
//! | `ex2.approx.f32` | 2 ulp from the correctly rounded result, full range |
//! | `lg2.approx.f32` | absolute 2^-22 for inputs in (0.5, 2), else relative 2^-22 |
//! | `sin/cos.approx.f32` | absolute 2^-20.5 in [-2π, 2π], 2^-14.7 in [-100π, 100π], none outside |
//! | `rsqrt.approx.f32` | relative 2^-22.9 over the positive finite range |
//! | `div.approx.f32` | 2 ulp for \|b\| in [2^-126, 2^126]; ±0 (NaN for infinite a) for 2^126 < \|b\| < 2^128 |
//!
//! `__expf(a)` is `ex2.approx(a ⊗ 0f3FB8AA3B)` and `__logf(a)` is
//! `lg2.approx(a) ⊗ 0f3F317218` (⊗: f32 multiply, round to nearest), as all six
//! compilations spell them, so their bounds are those of the composition. Outside the
//! documented ranges only the documented special values are checked (the tables of
//! the same sections: `ex2(-inf) = +0`, `lg2(±0) = -inf`, `sin(±inf) = NaN`, ...); an
//! input the ISA says nothing about accepts any result.
//!
//! The byte-exact `Case::expected` of `cases.rs` cannot say "within 2 ulp" or "any
//! NaN", so these cases carry one [`Want`] per output element and their own runner,
//! [`run`], which checks every compiler variant through the Rust API and the CLI and
//! reports every wrong element.

use ptxvk::spec::ElemType;

use super::cases::{buf, val};
use super::float_ref::{self as fr, Fmt, Mode, BF16, F16, F32, F64};
use super::{device, f32_bytes, run_api, run_cli, u32_bytes, u64_bytes, variants, Case, Rng};

// ---------------------------------------------------------------- checking

/// What one output element must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Want {
    /// Exactly these bits.
    Bits(u64),
    /// Either bit pattern (a zero whose sign the PTX ISA leaves open).
    Either(u64, u64),
    /// Any NaN.
    Nan,
    /// A float, not NaN, with lo <= value <= hi (so -0 and +0 both match 0).
    Range(f64, f64),
    /// Anything: the PTX ISA defines no result for this input.
    Any,
}

/// The element type of an output buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Num {
    F16,
    Bf16,
    F32,
    F64,
    I32,
    I64,
}

impl Num {
    pub fn size(self) -> usize {
        match self {
            Num::F16 | Num::Bf16 => 2,
            Num::F32 | Num::I32 => 4,
            Num::F64 | Num::I64 => 8,
        }
    }

    /// The value of a float element (NaN for integers, which have none).
    fn value(self, bits: u64) -> f64 {
        match self {
            Num::F16 => F16.value(bits),
            Num::Bf16 => BF16.value(bits),
            Num::F32 => f32::from_bits(bits as u32) as f64,
            Num::F64 => f64::from_bits(bits),
            Num::I32 | Num::I64 => f64::NAN,
        }
    }

    fn is_nan(self, bits: u64) -> bool {
        !matches!(self, Num::I32 | Num::I64) && self.value(bits).is_nan()
    }

    fn show(self, bits: u64) -> String {
        let hex = format!("0x{:0w$x}", bits, w = 2 * self.size());
        match self {
            Num::I32 => format!("{} ({hex})", bits as u32 as i32),
            Num::I64 => format!("{} ({hex})", bits as i64),
            _ => format!("{:e} ({hex})", self.value(bits)),
        }
    }
}

fn show_want(num: Num, w: Want) -> String {
    match w {
        Want::Bits(b) => num.show(b),
        Want::Either(a, b) => format!("{} or {}", num.show(a), num.show(b)),
        Want::Nan => "NaN".to_string(),
        Want::Range(lo, hi) => format!("a value in [{lo:e}, {hi:e}]"),
        Want::Any => "anything".to_string(),
    }
}

fn accepts(num: Num, w: Want, bits: u64) -> bool {
    match w {
        Want::Bits(b) => bits == b,
        Want::Either(a, b) => bits == a || bits == b,
        Want::Nan => num.is_nan(bits),
        Want::Range(lo, hi) => (lo..=hi).contains(&num.value(bits)), // NaN is in no range
        Want::Any => true,
    }
}

/// One output buffer of a launch and what each of its elements must be.
pub struct Output {
    /// The kernel argument (buffer) index.
    pub arg: usize,
    /// The element type (its size for every element).
    pub num: Num,
    /// The type of element `j` where elements differ (f16 and bf16 results in one
    /// buffer of 16-bit values); `num` otherwise.
    pub num_of: Option<fn(usize) -> Num>,
    pub wants: Vec<Want>,
    /// Names element `j` and the inputs it came from, for failure messages.
    pub describe: Box<dyn Fn(usize) -> String>,
}

/// A launch of one of the math kernels with per-element expectations.
pub struct MathCase {
    /// File stem in tests/kernels/.
    pub kernel: &'static str,
    pub entry: &'static str,
    /// The launch (`expected` is empty: `outputs` says what to check).
    pub case: Case,
    pub outputs: Vec<Output>,
}

/// Every element of the returned buffers that `mc` does not accept, one line each.
pub fn failures(mc: &MathCase, got: &[(usize, Vec<u8>)]) -> Vec<String> {
    let mut out = Vec::new();
    for o in &mc.outputs {
        let Some((_, bytes)) = got.iter().find(|(a, _)| *a == o.arg) else {
            out.push(format!("no buffer came back for argument {}", o.arg));
            continue;
        };
        let n = o.num.size();
        if bytes.len() != n * o.wants.len() {
            out.push(format!(
                "argument {}: {} bytes, expected {}",
                o.arg,
                bytes.len(),
                n * o.wants.len()
            ));
            continue;
        }
        for (j, (w, chunk)) in o.wants.iter().zip(bytes.chunks(n)).enumerate() {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(chunk);
            let bits = u64::from_le_bytes(b);
            let num = o.num_of.map_or(o.num, |f| f(j));
            if !accepts(num, *w, bits) {
                out.push(format!(
                    "{}: got {}, want {}",
                    (o.describe)(j),
                    num.show(bits),
                    show_want(num, *w)
                ));
            }
        }
    }
    out
}

/// Runs `mc` for every compiler variant of its kernel, through the Rust API and
/// through `ptxvk run --spec`, and fails listing the wrong elements of each.
pub fn run(mc: &MathCase) {
    let Some(device) = device() else { return };
    let mut report = Vec::new();
    for path in variants(mc.kernel) {
        let name = path.file_name().and_then(|f| f.to_str()).unwrap_or("?").to_string();
        let (_, api) = run_api(&device, &path, mc.entry, &mc.case);
        let cli = run_cli(&path, mc.entry, &mc.case);
        for (how, got) in [("Rust API", api), ("ptxvk run --spec", cli)] {
            let f = failures(mc, &got);
            if !f.is_empty() {
                report.push(format!(
                    "{name} ({how}): {} wrong element(s); the first:\n    {}",
                    f.len(),
                    f.iter().take(16).cloned().collect::<Vec<_>>().join("\n    ")
                ));
            }
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

// ---------------------------------------------------------------- helpers

/// The pattern output buffers start with; the element after the last input must
/// keep it (threads with i >= n write nothing).
const SENTINEL: u8 = 0xa5;

fn sentinel(num: Num) -> Want {
    let mut b = [0u8; 8];
    b[..num.size()].fill(SENTINEL);
    Want::Bits(u64::from_le_bytes(b))
}

fn u16_bytes(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A uniform f64 in [lo, hi).
fn uniform(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
}

/// The checks of `slots` results per input for inputs 0..n, then the sentinel
/// slots of input n.
fn with_sentinel(num: Num, slots: usize, mut wants: Vec<Want>) -> Vec<Want> {
    wants.extend(std::iter::repeat_n(sentinel(num), slots));
    wants
}

/// An exact result in `fmt` (any NaN if NaN).
fn exact(fmt: Fmt, x: f64) -> Want {
    if x.is_nan() {
        Want::Nan
    } else {
        Want::Bits(fmt.encode(x))
    }
}

fn exact32(x: f64) -> Want {
    exact(F32, x)
}

fn bits32(x: f32) -> Want {
    Want::Bits(x.to_bits() as u64)
}

/// Any f32 in [lo, hi] (real bounds), widened by `ulps` f32 steps on each side.
fn range32(lo: f64, hi: f64, ulps: u32) -> Want {
    let mut l = F32.cvt(Mode::Rm, lo);
    let mut h = F32.cvt(Mode::Rp, hi);
    for _ in 0..ulps {
        l = F32.next_down(l);
        h = F32.next_up(h);
    }
    Want::Range(l, h)
}

// ---------------------------------------------------------------- math_fast

/// log2(e) and ln(2) rounded to f32, the constants of __expf and __logf.
const LOG2E_F32: f32 = f32::from_bits(0x3fb8_aa3b);
const LN2_F32: f32 = f32::from_bits(0x3f31_7218);

/// Relative error of glibc's f64 exp2/log2/sin/cos/sqrt, generously: the
/// references widen their intervals by this much.
const LIBM_REL: f64 = 1.0 / (1u64 << 50) as f64;

pub const MATH_FAST_SLOTS: [&str; 20] = [
    "__expf(a)",
    "__logf(a)",
    "__log2f(a)",
    "__sinf(a)",
    "__cosf(a)",
    "__fdividef(a, b)",
    "rsqrtf(a)",
    "__saturatef(a)",
    "__frcp_rn(a)",
    "__fsqrt_rn(a)",
    "__fdiv_rn(a, b)",
    "__fmaf_rn(a, b, a)",
    "__fadd_rz(a, b)",
    "__fadd_ru(a, b)",
    "__fmul_rd(a, b)",
    "__fmul_ru(a, b)",
    "__fdiv_rz(a, b)",
    "__fsqrt_ru(a)",
    "__frcp_rd(a)",
    "__fmaf_rd(a, b, -a)",
];

/// ex2.approx.f32: 2 ulp from the correctly rounded 2^t over the full range;
/// ex2(-inf) = +0, ex2(±0) = +1, ex2(+inf) = +inf, NaN -> NaN.
fn ex2_approx(t: f32) -> Want {
    if t.is_nan() {
        return Want::Nan;
    }
    if t == f32::NEG_INFINITY {
        return bits32(0.0);
    }
    if t == f32::INFINITY {
        return bits32(f32::INFINITY);
    }
    if t == 0.0 {
        return bits32(1.0);
    }
    let v = (t as f64).exp2();
    match range32(v * (1.0 - LIBM_REL), v * (1.0 + LIBM_REL), 2) {
        // 2^t > 0: a result within 2 ulp of a tiny value is still not negative.
        Want::Range(lo, hi) => Want::Range(lo.max(0.0), hi),
        w => w,
    }
}

/// The real interval lg2.approx.f32 may return for a positive finite `a`:
/// absolute error 2^-22 in (0.5, 2), relative 2^-22 elsewhere.
fn lg2_interval(a: f32) -> (f64, f64) {
    let x = a as f64;
    let l = x.log2();
    let e = if x > 0.5 && x < 2.0 { fr::pow2(-22) } else { fr::pow2(-22) * l.abs() };
    let slack = l.abs() * LIBM_REL + fr::pow2(-80);
    (l - e - slack, l + e + slack)
}

/// lg2.approx.f32's special inputs (`None`: a positive finite input).
fn lg2_special(a: f32) -> Option<Want> {
    if a.is_nan() || a == f32::NEG_INFINITY {
        Some(Want::Nan)
    } else if a == 0.0 {
        Some(bits32(f32::NEG_INFINITY))
    } else if a == f32::INFINITY {
        Some(bits32(f32::INFINITY))
    } else if a < 0.0 {
        // The ISA's table says -normal -> NaN and is silent on -subnormal.
        Some(if a.is_normal() { Want::Nan } else { Want::Any })
    } else {
        None
    }
}

/// sin.approx.f32 / cos.approx.f32.
fn trig_approx(a: f32, sin: bool) -> Want {
    if !a.is_finite() {
        return Want::Nan;
    }
    if a == 0.0 {
        return if sin { bits32(a) } else { bits32(1.0) };
    }
    let x = a as f64;
    let v = if sin { x.sin() } else { x.cos() };
    let pi = std::f64::consts::PI;
    let e = if x.abs() <= 2.0 * pi {
        2f64.powf(-20.5)
    } else if x.abs() <= 100.0 * pi {
        2f64.powf(-14.7)
    } else {
        return Want::Any; // "only best effort ... no defined error guarantees"
    };
    let slack = fr::pow2(-50);
    range32(v - e - slack, v + e + slack, 0)
}

/// div.approx.f32.
fn div_approx(a: f32, b: f32) -> Want {
    if b.is_nan() {
        return Want::Nan;
    }
    let m = b.abs() as f64;
    if (fr::pow2(-126)..=fr::pow2(126)).contains(&m) {
        let q = a / b; // correctly rounded
        if q.is_nan() {
            return Want::Nan;
        }
        return range32(q as f64, q as f64, 2);
    }
    if m > fr::pow2(126) && b.is_finite() {
        if a.is_infinite() {
            return Want::Nan;
        }
        if a.is_nan() {
            // "Otherwise it returns a sign-preserving zero" -- but it is also
            // "computed as a * (1/b)", which is NaN: the ISA does not settle it.
            return Want::Any;
        }
        let neg = a.is_sign_negative() != b.is_sign_negative();
        return bits32(if neg { -0.0 } else { 0.0 });
    }
    Want::Any // |b| < 2^-126 or infinite: not specified
}

/// rsqrt.approx.f32.
fn rsqrt_approx(a: f32) -> Want {
    if a.is_nan() || a == f32::NEG_INFINITY {
        return Want::Nan;
    }
    if a == 0.0 {
        return bits32(if a.is_sign_negative() { f32::NEG_INFINITY } else { f32::INFINITY });
    }
    if a == f32::INFINITY {
        return bits32(0.0);
    }
    if a < 0.0 {
        // -normal -> NaN; the ISA's table says nothing about -subnormal.
        return if a.is_normal() { Want::Nan } else { Want::Any };
    }
    let r = 1.0 / (a as f64).sqrt();
    let e = 2f64.powf(-22.9) + 4.0 * LIBM_REL;
    range32(r * (1.0 - e), r * (1.0 + e), 0)
}

/// cvt.sat.f32.f32: clamp to [0, 1], NaN -> +0. For -0 the ISA does not say
/// whether the clamp gives +0 or keeps -0.
fn saturate(a: f32) -> Want {
    if a.is_nan() {
        bits32(0.0)
    } else if a == 0.0 && a.is_sign_negative() {
        Want::Either(0x8000_0000, 0)
    } else if a < 0.0 {
        bits32(0.0)
    } else if a > 1.0 {
        bits32(1.0)
    } else {
        bits32(a)
    }
}

/// What math_fast writes for inputs a, b (tests/kernels/math_fast.cu).
pub fn math_fast_reference(a: f32, b: f32) -> [Want; 20] {
    let (x, y) = (a as f64, b as f64);
    let logf = match lg2_special(a) {
        Some(Want::Bits(bits)) => bits32(f32::from_bits(bits as u32) * LN2_F32),
        Some(w) => w,
        None => {
            // Every f32 l in the lg2 interval, times ln2 rounded to nearest: the
            // map is monotonic, so its ends bound the result.
            let (lo, hi) = lg2_interval(a);
            let l1 = F32.cvt(Mode::Rm, lo) as f32;
            let l2 = F32.cvt(Mode::Rp, hi) as f32;
            Want::Range((l1 * LN2_F32) as f64, (l2 * LN2_F32) as f64)
        }
    };
    let log2f = lg2_special(a).unwrap_or_else(|| {
        let (lo, hi) = lg2_interval(a);
        range32(lo, hi, 0)
    });
    [
        ex2_approx(a * LOG2E_F32),
        logf,
        log2f,
        trig_approx(a, true),
        trig_approx(a, false),
        div_approx(a, b),
        rsqrt_approx(a),
        saturate(a),
        exact32(F32.div(Mode::Rn, 1.0, x)),
        exact32(F32.sqrt(Mode::Rn, x)),
        exact32(F32.div(Mode::Rn, x, y)),
        exact32(F32.fma(Mode::Rn, x, y, x)),
        exact32(F32.add(Mode::Rz, x, y)),
        exact32(F32.add(Mode::Rp, x, y)),
        exact32(F32.mul(Mode::Rm, x, y)),
        exact32(F32.mul(Mode::Rp, x, y)),
        exact32(F32.div(Mode::Rz, x, y)),
        exact32(F32.sqrt(Mode::Rp, x)),
        exact32(F32.div(Mode::Rm, 1.0, x)),
        exact32(F32.fma(Mode::Rm, x, y, -x)),
    ]
}

/// f32 inputs with every special class and the edges of each bound's range.
fn f32_specials() -> Vec<f32> {
    let pi = std::f32::consts::PI;
    let two_pi = 2.0 * pi; // rounds up: just outside [-2π, 2π]
    vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.0,
        1.5,
        0.75,
        3.0,
        -3.0,
        10.0,
        -7.25,
        100.0,
        1e-3,
        0.1,
        0.499_999_97,
        1.999_999_9,
        1.0 + f32::EPSILON,
        1.0 - f32::EPSILON / 2.0,
        16_777_215.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-40,
        -1e-40,
        f32::from_bits(1),
        f32::MAX,
        -f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        pi,
        two_pi,
        f32::from_bits(two_pi.to_bits() - 1),
        -f32::from_bits(two_pi.to_bits() - 1),
        100.0 * pi,
        f32::from_bits((100.0 * pi).to_bits() - 1),
        1000.0,
        fr::pow2(126) as f32,
        1.5 * fr::pow2(126) as f32,
        fr::pow2(127) as f32,
        fr::pow2(-126) as f32,
        88.0,
        88.72,
        89.0,
        -87.0,
        -88.0,
        -103.0,
        -104.0,
        -110.0,
        f32::from_bits(0x3380_0000), // 2^-24: ties for a + 1
    ]
}

fn math_fast_inputs() -> (Vec<f32>, Vec<f32>) {
    let mut rng = Rng(101);
    let s = f32_specials();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for &a in &s {
        for &b in &s {
            x.push(a);
            y.push(b);
        }
    }
    let mut push = |a: f32, b: f32| {
        x.push(a);
        y.push(b);
    };
    // Rounding ties and near-ties of the directed modes.
    for &(a, b) in &[
        (1.0f32, f32::from_bits(0x3380_0000)),
        (1.0, -f32::from_bits(0x3300_0000)),
        (1.0, f32::from_bits(0x3440_0000)),
        (f32::MAX, f32::MAX),
        (-f32::MAX, 2.0),
        (f32::from_bits(1), 0.5),
        (-f32::from_bits(1), 0.5),
        (f32::from_bits(3), 0.5),
        (f32::MIN_POSITIVE, -0.999_999_94),
        (3.0, 3.0),
        (1.0, 3.0),
        (2.0, 3.0),
    ] {
        push(a, b);
    }
    for _ in 0..1500 {
        push(f32::from_bits(rng.next_u32()), f32::from_bits(rng.next_u32()));
    }
    for _ in 0..800 {
        // Operands of close magnitude: cancellation and every rounding position.
        let a = f32::from_bits((rng.next_u32() & 0x7fff_ffff) | 0x0080_0000);
        let k = uniform(&mut rng, 0.25, 4.0) as f32;
        let sign = if rng.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
        push(a, sign * a * k);
    }
    let pi = std::f64::consts::PI;
    for (lo, hi) in [(-2.0 * pi, 2.0 * pi), (-100.0 * pi, 100.0 * pi), (0.5, 2.0), (-120.0, 100.0)]
    {
        for _ in 0..400 {
            let a = uniform(&mut rng, lo, hi) as f32;
            push(a, f32::from_bits(rng.next_u32()));
        }
    }
    for _ in 0..400 {
        // Positive values of every magnitude, subnormals included (lg2, rsqrt).
        let a = f32::from_bits(rng.next_u32() % 0x7f80_0000);
        push(a, f32::from_bits(rng.next_u32() % 0x7f80_0000));
    }
    (x, y)
}

fn describe_f32(v: f32) -> String {
    format!("{v:e} (0x{:08x})", v.to_bits())
}

/// math_fast over every special pair, random operands and each bound's range.
pub fn math_fast() -> MathCase {
    let (mut x, mut y) = math_fast_inputs();
    let n = x.len();
    let mut wants = Vec::with_capacity(20 * (n + 1));
    for (&a, &b) in x.iter().zip(&y) {
        wants.extend(math_fast_reference(a, b));
    }
    // One more input, past n: no thread may write its outputs.
    x.push(1.0);
    y.push(1.0);
    let wants = with_sentinel(Num::F32, 20, wants);
    let case = Case {
        grid: [(n + 1).div_ceil(128) as u32, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::F32, f32_bytes(&x)),
            buf(ElemType::F32, f32_bytes(&y)),
            buf(ElemType::F32, vec![SENTINEL; 4 * 20 * (n + 1)]),
            val(n as i32),
        ],
        expected: vec![],
    };
    let describe = Box::new(move |j: usize| {
        let (i, k) = (j / 20, j % 20);
        format!(
            "i = {i}, a = {}, b = {}: out[{j}] = {}",
            describe_f32(x[i]),
            describe_f32(y[i]),
            MATH_FAST_SLOTS[k]
        )
    });
    MathCase {
        kernel: "math_fast",
        entry: "math_fast",
        case,
        outputs: vec![Output { arg: 2, num: Num::F32, num_of: None, wants, describe }],
    }
}

// ---------------------------------------------------------------- convert

pub const CONVERT_INT_SLOTS: [&str; 8] = [
    "__float2int_rn(f)",
    "__float2int_rz(f)",
    "__float2int_rd(f)",
    "__float2int_ru(f)",
    "(int)__float2uint_rn(f)",
    "__double2int_rn(g)",
    "(int)__double2uint_ru(g)",
    "__float_as_int(f)",
];
pub const CONVERT_LL_SLOTS: [&str; 3] =
    ["__float2ll_rd(f)", "__double2ll_rn(g)", "(long long)__float2ull_rz(f)"];
pub const CONVERT_FLOAT_SLOTS: [&str; 10] = [
    "__double2float_rn(g)",
    "__double2float_rz(g)",
    "__double2float_ru(g)",
    "__double2float_rd(g)",
    "__int2float_rz(k)",
    "__int2float_rd(k)",
    "__int2float_ru(k)",
    "__uint2float_rd((unsigned)k)",
    "__ll2float_rn(l)",
    "__ull2float_ru((unsigned long long)l)",
];
pub const CONVERT_DOUBLE_SLOTS: [&str; 2] =
    ["__ll2double_rz(l)", "__ull2double_ru((unsigned long long)l)"];

/// What convert writes for inputs f, g, k, l: (oi, ol, of, od) slots.
pub fn convert_reference(
    f: f32,
    g: f64,
    k: i32,
    l: i64,
) -> ([Want; 8], [Want; 3], [Want; 10], [Want; 2]) {
    let x = f as f64;
    let int = Want::Bits;
    let oi = [
        int(fr::to_int(x, Mode::Rn, 32, true, false)),
        int(fr::to_int(x, Mode::Rz, 32, true, false)),
        int(fr::to_int(x, Mode::Rm, 32, true, false)),
        int(fr::to_int(x, Mode::Rp, 32, true, false)),
        int(fr::to_int(x, Mode::Rn, 32, false, false)),
        int(fr::to_int(g, Mode::Rn, 32, true, true)),
        int(fr::to_int(g, Mode::Rp, 32, false, true)),
        int(f.to_bits() as u64),
    ];
    let ol = [
        int(fr::to_int(x, Mode::Rm, 64, true, false)),
        int(fr::to_int(g, Mode::Rn, 64, true, true)),
        int(fr::to_int(x, Mode::Rz, 64, false, false)),
    ];
    let of = [
        exact32(F32.cvt(Mode::Rn, g)),
        exact32(F32.cvt(Mode::Rz, g)),
        exact32(F32.cvt(Mode::Rp, g)),
        exact32(F32.cvt(Mode::Rm, g)),
        exact32(F32.cvt_int(Mode::Rz, k as i128)),
        exact32(F32.cvt_int(Mode::Rm, k as i128)),
        exact32(F32.cvt_int(Mode::Rp, k as i128)),
        exact32(F32.cvt_int(Mode::Rm, k as u32 as i128)),
        exact32(F32.cvt_int(Mode::Rn, l as i128)),
        exact32(F32.cvt_int(Mode::Rp, l as u64 as i128)),
    ];
    let od = [
        Want::Bits(F64.cvt_int(Mode::Rz, l as i128).to_bits()),
        Want::Bits(F64.cvt_int(Mode::Rp, l as u64 as i128).to_bits()),
    ];
    (oi, ol, of, od)
}

fn convert_inputs() -> (Vec<f32>, Vec<f64>, Vec<i32>, Vec<i64>) {
    let mut rng = Rng(102);
    let p2 = fr::pow2;
    let mut f: Vec<f32> = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        -1.5,
        2.5,
        -2.5,
        3.5,
        -3.5,
        0.499_999_97,
        0.999_999_94,
        -0.999_999_94,
        8_388_608.0,
        8_388_607.5,
        -8_388_607.5,
        123.456,
        1e10,
        -1e10,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MIN_POSITIVE,
        2_147_483_520.0, // largest f32 below 2^31
        2_147_483_648.0,
        -2_147_483_648.0,
        -2_147_483_904.0,
        4_294_967_040.0, // largest f32 below 2^32
        4_294_967_296.0,
        p2(63) as f32,
        f32::from_bits((p2(63) as f32).to_bits() - 1),
        -(p2(63) as f32),
        -f32::from_bits((p2(63) as f32).to_bits() + 1),
        f32::from_bits((p2(64) as f32).to_bits() - 1),
        p2(64) as f32,
        f32::MAX,
        -f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0xffc0_0000),
    ];
    let max = f32::MAX as f64;
    let half_ulp_max = p2(103);
    let mut g: Vec<f64> = vec![
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        0.1,
        -0.1,
        1.0 / 3.0,
        std::f64::consts::PI,
        2_147_483_647.5,
        2_147_483_646.5,
        -2_147_483_648.5,
        -2_147_483_649.0,
        4_294_967_295.2,
        4_294_967_294.1,
        -0.7,
        -1.0,
        p2(63),
        -p2(63),
        9.3e18,
        -9.3e18,
        p2(53) + 1.0,
        1e300,
        -1e300,
        f64::from_bits(1),
        -f64::from_bits(1),
        f64::MIN_POSITIVE,
        max,
        max + half_ulp_max,             // tie: to nearest even is 2^128 -> inf
        max + half_ulp_max - p2(76),    // just below the tie
        -(max + half_ulp_max + p2(76)), // just above it, negative
        p2(-150),                       // tie between 0 and the smallest subnormal
        p2(-150) + p2(-200),
        -p2(-150),
        1.5 * p2(-149), // tie between subnormals 1 and 2
        p2(-126) - p2(-150),
        1.0 + p2(-24), // tie, to even: 1
        1.0 + p2(-24) + p2(-52),
        1.0 + 3.0 * p2(-24), // tie, to even: up
        -(1.0 + 3.0 * p2(-24)),
    ];
    let mut k: Vec<i32> = vec![
        0,
        1,
        -1,
        2,
        16_777_216,
        16_777_217,
        16_777_218,
        16_777_219,
        33_554_435,
        -16_777_217,
        -16_777_219,
        i32::MAX,
        i32::MIN,
        i32::MAX - 63,
        i32::MAX - 64,
        i32::MIN + 1,
        0x7fff_ff80,
        -0x7fff_ff80,
        0x4000_0001,
        -0x4000_0001,
    ];
    let mut l: Vec<i64> = vec![
        0,
        1,
        -1,
        (1 << 24) + 1,
        1 << 53,
        (1 << 53) + 1,
        (1 << 53) + 3,
        -(1 << 53) - 1,
        i64::MAX,
        i64::MIN,
        i64::MAX - 511,
        i64::MAX - 512,
        (1 << 62) + 1,
        -(1 << 62) - 1,
        0x7fff_ff80_0000_0000,
        0x7fff_ffc0_0000_0001,
        (1 << 40) + (1 << 16),
        -((1 << 40) + (1 << 16) + 1),
    ];
    let n = 1200;
    while f.len() < n {
        let r = rng.next_u32();
        f.push(if r.is_multiple_of(3) {
            uniform(&mut rng, -5e9, 5e9) as f32
        } else if r % 3 == 1 {
            (uniform(&mut rng, -40.0, 40.0) * 4.0).round() as f32 / 4.0 // halves and quarters
        } else {
            f32::from_bits(rng.next_u32())
        });
    }
    while g.len() < n {
        let r = rng.next_u32() % 4;
        g.push(match r {
            0 => f64::from_bits(rng.next_u64()),
            1 => {
                // An f32 value plus a little: every directed rounding differs.
                let a = f32::from_bits(rng.next_u32() & 0x7f7f_ffff) as f64;
                let d = a * uniform(&mut rng, -1.5, 1.5) * p2(-24);
                if rng.next_u64() & 1 == 0 {
                    a + d
                } else {
                    -(a + d)
                }
            }
            2 => uniform(&mut rng, -5e9, 5e9),
            _ => uniform(&mut rng, -2e19, 2e19),
        });
    }
    while k.len() < n {
        let r = rng.next_u32();
        k.push((r as i32) >> (rng.next_u32() % 16));
    }
    while l.len() < n {
        let r = rng.next_u64();
        l.push((r as i64) >> (rng.next_u32() % 48));
    }
    (f, g, k, l)
}

/// convert over special and random inputs (tests/kernels/convert.cu).
pub fn convert() -> MathCase {
    let (mut f, mut g, mut k, mut l) = convert_inputs();
    let n = f.len();
    let (mut wi, mut wl, mut wf, mut wd) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (((&fi, &gi), &ki), &li) in f.iter().zip(&g).zip(&k).zip(&l) {
        let (a, b, c, d) = convert_reference(fi, gi, ki, li);
        wi.extend(a);
        wl.extend(b);
        wf.extend(c);
        wd.extend(d);
    }
    f.push(0.0);
    g.push(0.0);
    k.push(0);
    l.push(0);
    let m = n + 1;
    let case = Case {
        grid: [m.div_ceil(128) as u32, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::F32, f32_bytes(&f)),
            buf(ElemType::F64, f64_bytes(&g)),
            buf(ElemType::S32, u32_bytes(&k.iter().map(|&v| v as u32).collect::<Vec<_>>())),
            buf(ElemType::S64, u64_bytes(&l.iter().map(|&v| v as u64).collect::<Vec<_>>())),
            buf(ElemType::S32, vec![SENTINEL; 4 * 8 * m]),
            buf(ElemType::S64, vec![SENTINEL; 8 * 3 * m]),
            buf(ElemType::F32, vec![SENTINEL; 4 * 10 * m]),
            buf(ElemType::F64, vec![SENTINEL; 8 * 2 * m]),
            val(n as i32),
        ],
        expected: vec![],
    };
    let inputs = move |i: usize| {
        format!(
            "i = {i}, f = {}, g = {:e} (0x{:016x}), k = {}, l = {}",
            describe_f32(f[i]),
            g[i],
            g[i].to_bits(),
            k[i],
            l[i]
        )
    };
    let inputs = std::rc::Rc::new(inputs);
    let describe = |names: &'static [&'static str]| -> Box<dyn Fn(usize) -> String> {
        let inputs = inputs.clone();
        Box::new(move |j| {
            let (i, s) = (j / names.len(), j % names.len());
            format!("{}: [{j}] = {}", inputs(i), names[s])
        })
    };
    let outputs = vec![
        Output {
            arg: 4,
            num: Num::I32,
            num_of: None,
            wants: with_sentinel(Num::I32, 8, wi),
            describe: describe(&CONVERT_INT_SLOTS),
        },
        Output {
            arg: 5,
            num: Num::I64,
            num_of: None,
            wants: with_sentinel(Num::I64, 3, wl),
            describe: describe(&CONVERT_LL_SLOTS),
        },
        Output {
            arg: 6,
            num: Num::F32,
            num_of: None,
            wants: with_sentinel(Num::F32, 10, wf),
            describe: describe(&CONVERT_FLOAT_SLOTS),
        },
        Output {
            arg: 7,
            num: Num::F64,
            num_of: None,
            wants: with_sentinel(Num::F64, 2, wd),
            describe: describe(&CONVERT_DOUBLE_SLOTS),
        },
    ];
    MathCase { kernel: "convert", entry: "convert", case, outputs }
}

// ---------------------------------------------------------------- half_math

pub const HALF_SLOTS: [&str; 20] = [
    "__hadd(a, b)",
    "__hsub(a, b)",
    "__hmul(a, b)",
    "__hfma(a, b, c)",
    "__hneg(a)",
    "__habs(a)",
    "__hmin(a, b)",
    "__hmax(a, b)",
    "__float2half_rn(f0)",
    "__float2half_rz(f0)",
    "__hadd2(..).x = a + c",
    "__hadd2(..).y = b + a",
    "__hfma2(..).x = a*b + c",
    "__hfma2(..).y = b*c + a",
    "__float22half2_rn(..).x = f16(f0)",
    "__float22half2_rn(..).y = f16(f1)",
    "__float2bfloat16_rn(f0)",
    "__hadd(bf a, bf b)",
    "__hmul(bf a, bf b)",
    "__hsub(bf a, bf b)",
];

/// min/max of PTX (and of __hmin/__hmax): a NaN operand loses to a number,
/// -0 < +0; NaN only if both are NaN.
fn min_max(a: f64, b: f64, max: bool) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => f64::NAN,
        (true, false) => b,
        (false, true) => a,
        _ => {
            if a == b {
                // Equal values differ only in the sign of a zero.
                if max == a.is_sign_negative() {
                    b
                } else {
                    a
                }
            } else if (a < b) != max {
                a
            } else {
                b
            }
        }
    }
}

/// What half_math writes for raw inputs A, B, C and floats f0, f1: (oh, of).
pub fn half_math_reference(ab: u16, bb: u16, cb: u16, f0: f32, f1: f32) -> ([Want; 20], [Want; 2]) {
    let (a, b, c) = (F16.value(ab as u64), F16.value(bb as u64), F16.value(cb as u64));
    let (ba, bbf) = (BF16.value(ab as u64), BF16.value(bb as u64));
    let h = |x: f64| exact(F16, x);
    let bf = |x: f64| exact(BF16, x);
    let rn = Mode::Rn;
    let neg = if a.is_nan() { Want::Nan } else { Want::Bits((ab ^ 0x8000) as u64) };
    let abs = if a.is_nan() { Want::Nan } else { Want::Bits((ab & 0x7fff) as u64) };
    let oh = [
        h(F16.add(rn, a, b)),
        h(F16.add(rn, a, -b)),
        h(F16.mul(rn, a, b)),
        h(F16.fma(rn, a, b, c)),
        neg,
        abs,
        h(min_max(a, b, false)),
        h(min_max(a, b, true)),
        h(F16.cvt(rn, f0 as f64)),
        h(F16.cvt(Mode::Rz, f0 as f64)),
        h(F16.add(rn, a, c)),
        h(F16.add(rn, b, a)),
        h(F16.fma(rn, a, b, c)),
        h(F16.fma(rn, b, c, a)),
        h(F16.cvt(rn, f0 as f64)),
        h(F16.cvt(rn, f1 as f64)),
        bf(BF16.cvt(rn, f0 as f64)),
        bf(BF16.add(rn, ba, bbf)),
        bf(BF16.mul(rn, ba, bbf)),
        bf(BF16.add(rn, ba, -bbf)),
    ];
    let of = [exact32(a), exact32(ba)];
    (oh, of)
}

/// Raw f16 patterns: zeros, subnormals, the normal range's ends, ties, infinities,
/// NaNs, and a few patterns that are interesting as bf16 (1.0, max, tiny).
const F16_SPECIALS: [u16; 30] = [
    0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x0401, 0x3c00, 0xbc00, 0x3c01, 0x3bff, 0x3800,
    0x4000, 0x4200, 0xc500, 0x7bff, 0xfbff, 0x7bfe, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x3f80,
    0xbf80, 0x7f7f, 0x0080, 0x1400, 0x5bff, 0x2e66,
];

fn half_inputs() -> (Vec<u16>, Vec<u16>, Vec<u16>, Vec<f32>) {
    let mut rng = Rng(103);
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    let s = &F16_SPECIALS;
    for (i, &x) in s.iter().enumerate() {
        for (j, &y) in s.iter().enumerate() {
            a.push(x);
            b.push(y);
            c.push(s[(7 * i + 3 * j) % s.len()]);
        }
    }
    for _ in 0..2000 {
        a.push(rng.next_u32() as u16);
        b.push(rng.next_u32() as u16);
        c.push(rng.next_u32() as u16);
    }
    // Near-ties of the f16 fma: a·b within a few ulp of half an ulp of c. Rounding
    // a·b + c to f32 first and then to f16 gets many of these wrong.
    for _ in 0..1000 {
        let cv = F16.value((rng.next_u64() & 0x7bff) | (rng.next_u64() & 0x8000));
        if cv == 0.0 || F16.quantum(cv) < fr::pow2(-20) {
            continue;
        }
        let av = F16.value((rng.next_u64() & 0x3ff) | 0x3c00 | ((rng.next_u64() % 8) << 10));
        let sign = if rng.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
        let mut bv = F16.cvt(Mode::Rn, sign * F16.quantum(cv) / 2.0 / av);
        for _ in 0..rng.below(3) {
            bv = F16.next_up(bv);
        }
        for _ in 0..rng.below(3) {
            bv = F16.next_down(bv);
        }
        let (x, y, z) = (F16.encode(av) as u16, F16.encode(bv) as u16, F16.encode(cv) as u16);
        // As (a, b, c) for __hfma and the low lane of __hfma2, rotated so that the
        // high lane (b·c + a) gets the same product and addend.
        a.extend([x, z]);
        b.extend([y, x]);
        c.extend([z, y]);
    }
    let p2 = fr::pow2;
    let fs: &[f32] = &[
        0.0,
        -0.0,
        1.0,
        65504.0,
        f32::from_bits(65520f32.to_bits() - 1),
        65520.0,
        65536.0,
        -65520.0,
        1e-8,
        p2(-24) as f32,
        p2(-25) as f32,
        (1.5 * p2(-24)) as f32,
        (2.5 * p2(-24)) as f32,
        (1.0 + p2(-11)) as f32,
        (1.0 + 3.0 * p2(-11)) as f32,
        (1.0 + p2(-11) + p2(-20)) as f32,
        p2(-14) as f32,
        f32::MAX,
        -f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        (1.0 + p2(-8)) as f32,
        (1.0 + 3.0 * p2(-8)) as f32,
        (1.0 + p2(-8) + p2(-23)) as f32,
        BF16.max() as f32,
        (BF16.max() + p2(119)) as f32,
        0.1,
        -2.75,
        1000.3,
    ];
    let n = a.len();
    let mut f = Vec::with_capacity(2 * n);
    for i in 0..n {
        for j in [i, 5 * i + 3] {
            f.push(if j < 4 * fs.len() {
                fs[j % fs.len()]
            } else if rng.next_u64() & 1 == 0 {
                // Inside f16's range, with random low bits.
                let m = uniform(&mut rng, -26.0, 17.0).exp2();
                (if rng.next_u64() & 1 == 0 { m } else { -m }) as f32
            } else {
                f32::from_bits(rng.next_u32())
            });
        }
    }
    (a, b, c, f)
}

/// half_math over special patterns, random bits and f16 fma near-ties.
pub fn half_math() -> MathCase {
    let (mut a, mut b, mut c, mut f) = half_inputs();
    let n = a.len();
    let (mut wh, mut wf) = (Vec::new(), Vec::new());
    for (((&x, &y), &z), fs) in a.iter().zip(&b).zip(&c).zip(f.chunks(2)) {
        let (h, o) = half_math_reference(x, y, z, fs[0], fs[1]);
        wh.extend(h);
        wf.extend(o);
    }
    a.push(0);
    b.push(0);
    c.push(0);
    f.extend([0.0, 0.0]);
    let m = n + 1;
    let case = Case {
        grid: [m.div_ceil(128) as u32, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::U16, u16_bytes(&a)),
            buf(ElemType::U16, u16_bytes(&b)),
            buf(ElemType::U16, u16_bytes(&c)),
            buf(ElemType::F32, f32_bytes(&f)),
            buf(ElemType::U16, vec![SENTINEL; 2 * 20 * m]),
            buf(ElemType::F32, vec![SENTINEL; 4 * 2 * m]),
            val(n as i32),
        ],
        expected: vec![],
    };
    let show16 = |x: u16| {
        format!("0x{x:04x} (f16 {:e}, bf16 {:e})", F16.value(x as u64), BF16.value(x as u64))
    };
    let inputs = std::rc::Rc::new(move |i: usize| {
        format!(
            "i = {i}, A = {}, B = {}, C = {}, f0 = {}, f1 = {}",
            show16(a[i]),
            show16(b[i]),
            show16(c[i]),
            describe_f32(f[2 * i]),
            describe_f32(f[2 * i + 1])
        )
    });
    let inputs2 = inputs.clone();
    let outputs = vec![
        Output {
            arg: 4,
            num: Num::F16,
            num_of: Some(|j| if j % 20 >= 16 { Num::Bf16 } else { Num::F16 }),
            wants: with_sentinel(Num::F16, 20, wh),
            describe: Box::new(move |j| {
                format!("{}: oh[{j}] = {}", inputs(j / 20), HALF_SLOTS[j % 20])
            }),
        },
        Output {
            arg: 5,
            num: Num::F32,
            num_of: None,
            wants: with_sentinel(Num::F32, 2, wf),
            describe: Box::new(move |j| {
                let what = ["__half2float(a)", "__bfloat162float(bf a)"][j % 2];
                format!("{}: of[{j}] = {what}", inputs2(j / 2))
            }),
        },
    ];
    MathCase { kernel: "half_math", entry: "half_math", case, outputs }
}
