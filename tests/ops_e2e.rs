//! Instruction semantics end to end: the hand-written kernels of `tests/ptx/ops/` run
//! every instruction variant ptxvk lowers on edge cases and random inputs, on the
//! default Vulkan device through the Rust API and through `ptxvk run --spec`, and every
//! result is compared with a CPU reference written from the PTX ISA (chapter 9 of the
//! PTX ISA 9.2 documentation; the section is cited beside each reference), not from
//! ptxvk's output.
//!
//! Every kernel has the same shape: thread `i < n` reads `a[i]` (and `b[i]`, `c[i]`)
//! and writes one result per *slot* to `out[K*i + k]`. A slot is one instruction
//! variant; its name is the `// [k] name` comment above it in the PTX file, and the
//! tables below must list the same names in the same order (checked). Adding a case is
//! one line in a table (and one slot in the PTX) or one value in an input list.
//!
//! * NaN results: Vulkan does not fix NaN payloads and the ISA leaves f32 NaN payloads
//!   unspecified (§9.7.3), so where the reference result is a NaN the slot only has to
//!   hold some NaN ([`Want::NanF32`], [`Want::NanF64`]).
//! * Machine-specific results: integer division by zero, `INT_MIN / -1` and the
//!   remainder of negative numbers are left to the machine by the ISA (§9.7.1.8-9);
//!   there the reference is ptxvk's documented choice (`lower/src/ir.rs`,
//!   `BinaryOp::Div` and `BinaryOp::Rem`).

#[path = "ops/approx.rs"]
mod approx;
mod common;
#[path = "ops/conversions.rs"]
mod conversions;
#[path = "ops/expanded.rs"]
mod expanded;
#[path = "ops/formats.rs"]
mod formats;
#[path = "ops/integer.rs"]
mod integer;
#[path = "ops/video.rs"]
mod video;

use common::cases::{buf, val};
use common::float_ref::{self, Mode};
use common::*;
use conversions::*;
use integer::*;
use ptxvk::spec::{ElemType, SpecArg};

// ----- kernels, slots and expectations -------------------------------------------------

/// The element type of a kernel input or output buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    B16,
    B32,
    B64,
    F32,
    F64,
}

impl Elem {
    fn bytes(self) -> usize {
        match self {
            Elem::B16 => 2,
            Elem::B32 | Elem::F32 => 4,
            Elem::B64 | Elem::F64 => 8,
        }
    }

    fn buffer_type(self) -> ElemType {
        match self {
            Elem::B16 => ElemType::U16,
            Elem::B32 => ElemType::U32,
            Elem::B64 => ElemType::U64,
            Elem::F32 => ElemType::F32,
            Elem::F64 => ElemType::F64,
        }
    }

    /// `bits` for a failure message: hex, and the value for floats.
    fn show(self, bits: u64) -> String {
        match self {
            Elem::F32 => format!("{bits:#x} ({:e})", f32::from_bits(bits as u32)),
            Elem::F64 => format!("{bits:#x} ({:e})", f64::from_bits(bits)),
            _ => format!("{bits:#x}"),
        }
    }
}

/// The inputs of one thread as raw bits, zero-extended to 64 (unused inputs are 0).
#[derive(Clone, Copy, Debug, Default)]
struct In {
    a: u64,
    b: u64,
    c: u64,
}

impl In {
    fn new(a: u64, b: u64, c: u64) -> In {
        In { a, b, c }
    }
    fn fa(self) -> f32 {
        f32::from_bits(self.a as u32)
    }
    fn fb(self) -> f32 {
        f32::from_bits(self.b as u32)
    }
    fn fc(self) -> f32 {
        f32::from_bits(self.c as u32)
    }
    fn da(self) -> f64 {
        f64::from_bits(self.a)
    }
    fn db(self) -> f64 {
        f64::from_bits(self.b)
    }
}

fn lo32(x: u64) -> u64 {
    x & 0xffff_ffff
}

fn hi32(x: u64) -> u64 {
    x >> 32
}

/// What a slot must hold after the kernel.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// Exactly these bits (zero-extended from the slot width).
    Bits(u64),
    /// Any f32 NaN in the low 32 bits (upper bits of a 64-bit slot zero).
    NanF32,
    /// Any f64 NaN.
    NanF64,
    /// +0.0 or -0.0 as an f32: the ISA says `.sat` clamps to [0.0, 1.0] but not whether
    /// a -0.0 result keeps its sign.
    ZeroF32,
    /// +0.0 or -0.0 as an f64, for the same reason.
    ZeroF64,
    /// A NaN of a narrow format: all of `exp` set and some of `man`, any sign, nothing
    /// above.
    NanIn { exp: u64, man: u64 },
    /// Either of two bit patterns (e.g. a zero whose sign the ISA leaves open).
    Either(u64, u64),
    /// An f32 within one ulp (at the exact value's magnitude) of the exact value given
    /// as f64 bits, for the `.approx` instructions; infinities and NaN exactly.
    NearF32(u64),
    /// The same for an f16 result.
    NearF16(u64),
    /// The same for a bf16 result.
    NearBf16(u64),
    /// Any result the predicate accepts (e.g. a flushed zero of either sign).
    Check(fn(u64) -> bool),
}

/// Whether `got` is within one ulp of `exact` in a format with `m` mantissa bits and
/// minimum normal exponent `emin` (NaN and infinities must match exactly).
fn near(got: f64, exact: f64, m: i32, emin: i32) -> bool {
    if exact.is_nan() || got.is_nan() {
        return exact.is_nan() && got.is_nan();
    }
    if exact.is_infinite() || got.is_infinite() {
        return got == exact;
    }
    let e = if exact == 0.0 { emin } else { (exact.abs().log2().floor() as i32).max(emin) };
    (got - exact).abs() <= 2f64.powi(e - m)
}

impl Want {
    fn matches(self, got: u64) -> bool {
        match self {
            Want::Bits(b) => got == b,
            Want::NanF32 => got >> 32 == 0 && f32::from_bits(got as u32).is_nan(),
            Want::NanF64 => f64::from_bits(got).is_nan(),
            Want::ZeroF32 => got == 0 || got == 0x8000_0000,
            Want::ZeroF64 => got == 0 || got == 1 << 63,
            Want::NanIn { exp, man } => {
                // The sign bit is the one above the exponent.
                let sign = (exp | man) + 1;
                got & !(exp | man | sign) == 0 && got & exp == exp && got & man != 0
            }
            Want::Either(x, y) => got == x || got == y,
            Want::NearF32(exact) => {
                got >> 32 == 0
                    && near(f32::from_bits(got as u32).into(), f64::from_bits(exact), 23, -126)
            }
            Want::NearF16(exact) => {
                got >> 16 == 0
                    && near(
                        half::f16::from_bits(got as u16).to_f64(),
                        f64::from_bits(exact),
                        10,
                        -14,
                    )
            }
            Want::NearBf16(exact) => {
                got >> 16 == 0
                    && near(
                        half::bf16::from_bits(got as u16).to_f64(),
                        f64::from_bits(exact),
                        7,
                        -126,
                    )
            }
            Want::Check(f) => f(got),
        }
    }

    /// The bits written into the expected buffer of the [`Case`].
    fn representative(self) -> u64 {
        match self {
            Want::Bits(b) => b,
            Want::NanF32 => 0x7fc0_0000,
            Want::NanF64 => 0x7ff8_0000_0000_0000,
            Want::ZeroF32 | Want::ZeroF64 => 0,
            Want::NanIn { exp, man } => exp | man,
            Want::Either(x, _) => x,
            Want::NearF32(exact) => u64::from((f64::from_bits(exact) as f32).to_bits()),
            Want::NearF16(exact) => u64::from(half::f16::from_f64(f64::from_bits(exact)).to_bits()),
            Want::NearBf16(exact) => {
                u64::from(half::bf16::from_f64(f64::from_bits(exact)).to_bits())
            }
            Want::Check(_) => 0,
        }
    }
}

/// One instruction variant: the name of its slot and its CPU reference.
struct Slot {
    name: String,
    reference: Box<dyn Fn(In) -> Want>,
}

fn slot(name: impl Into<String>, reference: impl Fn(In) -> Want + 'static) -> Slot {
    Slot { name: name.into(), reference: Box::new(reference) }
}

/// A sub-case taken out of the check until a reported discrepancy is fixed: the results
/// of the slots whose name satisfies `slots`, for the inputs where `when` holds. `why`
/// names the discrepancy; restoring the sub-case is deleting its entry.
struct Pending {
    slots: fn(&str) -> bool,
    when: fn(In) -> bool,
    why: &'static str,
}

// A discrepancy that is not fixed yet is listed in the `pending` field of its kernel,
// with the reason; none is pending now.

/// One kernel of `tests/ptx/ops/`: its file stem (also its entry name), the element
/// types of its inputs and its output slots, the slots, the inputs of each thread, and
/// the sub-cases not checked yet.
struct OpsKernel {
    name: &'static str,
    inputs: &'static [Elem],
    out: Elem,
    slots: Vec<Slot>,
    cases: Vec<In>,
    pending: Vec<Pending>,
    /// The target to compile for instead of the device's own (then only through the
    /// Rust API: `ptxvk run` compiles for the device).
    target: Option<ptxvk::compile::Target>,
}

/// Bytes every output slot starts with; the row past `n` must keep them.
const SENTINEL: u8 = 0xa5;

impl OpsKernel {
    fn path(&self) -> std::path::PathBuf {
        repo().join("tests/ptx/ops").join(format!("{}.ptx", self.name))
    }

    fn expected(&self) -> Vec<Want> {
        self.cases.iter().flat_map(|x| self.slots.iter().map(|s| (s.reference)(*x))).collect()
    }

    fn launch(&self, expected: &[Want]) -> Case {
        let n = self.cases.len();
        let k = self.slots.len();
        let ow = self.out.bytes();
        let mut args = Vec::new();
        for (j, e) in self.inputs.iter().enumerate() {
            let bytes = self
                .cases
                .iter()
                .flat_map(|x| [x.a, x.b, x.c][j].to_le_bytes()[..e.bytes()].to_vec())
                .collect();
            args.push(buf(e.buffer_type(), bytes));
        }
        let out_init = vec![SENTINEL; (n + 1) * k * ow];
        let mut out_expected: Vec<u8> =
            expected.iter().flat_map(|w| w.representative().to_le_bytes()[..ow].to_vec()).collect();
        out_expected.extend(std::iter::repeat_n(SENTINEL, k * ow));
        let out_arg = args.len();
        args.push(buf(self.out.buffer_type(), out_init));
        args.push(val(n as u32));
        Case {
            grid: [n.div_ceil(64) as u32, 1, 1],
            block: [64, 1, 1],
            shared_bytes: 0,
            args,
            expected: vec![(out_arg, out_expected)],
        }
    }

    /// Compares the output buffer slot by slot and panics listing every mismatch; returns
    /// how many results each `pending` entry took out of the check.
    fn compare(
        &self,
        how: &str,
        case: &Case,
        expected: &[Want],
        got: &[(usize, Vec<u8>)],
    ) -> Vec<usize> {
        let (arg, want_bytes) = &case.expected[0];
        let Some((_, out)) = got.iter().find(|(a, _)| a == arg) else {
            panic!("{} ({how}): no output buffer", self.name)
        };
        assert_eq!(out.len(), want_bytes.len(), "{} ({how}): output size", self.name);
        let ow = self.out.bytes();
        let k = self.slots.len();
        // Per slot: the number of mismatches and the first few of them.
        let mut failures: Vec<(usize, Vec<String>)> = vec![(0, Vec::new()); k];
        let mut unchecked = vec![0; self.pending.len()];
        for (idx, (want, chunk)) in expected.iter().zip(out.chunks(ow)).enumerate() {
            let mut raw = [0u8; 8];
            raw[..ow].copy_from_slice(chunk);
            let got = u64::from_le_bytes(raw);
            let (count, examples) = &mut failures[idx % k];
            let (x, name) = (self.cases[idx / k], self.slots[idx % k].name.as_str());
            if let Some(p) = self.pending.iter().position(|p| (p.slots)(name) && (p.when)(x)) {
                unchecked[p] += 1;
            } else if !want.matches(got) {
                *count += 1;
                if examples.len() < 3 {
                    let inputs: Vec<String> = self
                        .inputs
                        .iter()
                        .zip(["a", "b", "c"])
                        .zip([x.a, x.b, x.c])
                        .map(|((e, name), v)| format!("{name}={}", e.show(v)))
                        .collect();
                    examples.push(format!("{}: got {got:#x}, want {want:x?}", inputs.join(" ")));
                }
            }
        }
        let mut report = Vec::new();
        for (slot, (count, examples)) in self.slots.iter().zip(&failures) {
            if *count > 0 {
                report.push(format!("  {} ({count} of {} cases):", slot.name, self.cases.len()));
                report.extend(examples.iter().map(|e| format!("      {e}")));
            }
        }
        if out[expected.len() * ow..] != want_bytes[expected.len() * ow..] {
            report.push("  threads past n wrote to the output".to_string());
        }
        if !report.is_empty() {
            let total: usize = failures.iter().map(|f| f.0).sum();
            panic!(
                "{} ({how}): {total} of {} results differ from the PTX ISA reference:\n{}",
                self.name,
                expected.len(),
                report.join("\n")
            );
        }
        unchecked
    }

    /// The slot names in the PTX file (`// [k] name`) must be the table's, in order.
    fn check_slot_names(&self) {
        let text = std::fs::read_to_string(self.path()).expect("read PTX");
        let in_file: Vec<String> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("// ["))
            .map(|l| l.split_once("] ").map_or(l, |(_, name)| name).trim().to_string())
            .collect();
        let in_table: Vec<&str> = self.slots.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(in_file, in_table, "{}: PTX slots and the reference table differ", self.name);
    }

    fn run(self) {
        self.check_slot_names();
        let Some(device) = device() else { return };
        let path = self.path();
        let expected = self.expected();
        let case = self.launch(&expected);
        let unchecked = if let Some(target) = self.target {
            if !target.float64 {
                // Soft f64 routines are large once inlined; lavapipe compiles them slowly.
                device.vk().set_timeout(std::time::Duration::from_secs(600));
            }
            let (_, got) = run_api_for(&device, &path, self.name, &case, target);
            self.compare("Rust API (fixed target)", &case, &expected, &got)
        } else {
            let (_, got) = run_api(&device, &path, self.name, &case);
            let unchecked = self.compare("Rust API", &case, &expected, &got);
            let got = run_cli(&path, self.name, &case);
            self.compare("ptxvk run --spec", &case, &expected, &got);
            unchecked
        };
        for (p, n) in self.pending.iter().zip(unchecked) {
            assert!(n > 0, "{}: a pending entry matches no result: {}", self.name, p.why);
            eprintln!("note: {}: {n} results not checked yet: {}", self.name, p.why);
        }
    }
}

/// Every pair of `a_values` × `b_values`, with `c` cycling through `c_values`.
fn pairs(a_values: &[u64], b_values: &[u64], c_values: &[u64]) -> Vec<In> {
    let mut v = Vec::new();
    for &a in a_values {
        for &b in b_values {
            let c = c_values[v.len() % c_values.len()];
            v.push(In::new(a, b, c));
        }
    }
    v
}

/// `count` random cases from `f`.
fn random(seed: u64, count: usize, mut f: impl FnMut(&mut Rng) -> In) -> Vec<In> {
    let mut rng = Rng(seed);
    (0..count).map(|_| f(&mut rng)).collect()
}

/// A random value with a random number of significant bits (small values matter for
/// division and shifts), in `bits` bits, sign-extended half of the time.
fn random_int(rng: &mut Rng, bits: u32) -> u64 {
    let v = rng.next_u64() >> (rng.next_u32() % 64);
    let v = if rng.next_u32().is_multiple_of(2) { v } else { !v };
    v & mask(bits)
}

// ----- floating-point references --------------------------------------------------------

fn f32w(x: f32) -> Want {
    if x.is_nan() {
        Want::NanF32
    } else {
        Want::Bits(x.to_bits() as u64)
    }
}

fn f64w(x: f64) -> Want {
    if x.is_nan() {
        Want::NanF64
    } else {
        Want::Bits(x.to_bits())
    }
}

/// `.ftz` (§9.7.3): "flushing subnormal inputs and results to sign-preserving zero".
fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        0f32.copysign(x)
    } else {
        x
    }
}

/// `.sat` on an f32 result (§9.7.3.3): "clamps the result to [0.0, 1.0]. NaN results are
/// flushed to +0.0f".
fn sat(x: f32) -> Want {
    if x.is_nan() || x < 0.0 {
        Want::Bits(0)
    } else if x == 0.0 {
        if x.is_sign_negative() {
            Want::ZeroF32
        } else {
            Want::Bits(0)
        }
    } else {
        f32w(x.min(1.0))
    }
}

/// Applies the `.ftz` (inputs and result) and `.sat` modifiers around `op`.
fn modified(ftz_on: bool, sat_on: bool, op: impl Fn(f32, f32, f32) -> f32) -> impl Fn(In) -> Want {
    move |x: In| {
        let f = |v: f32| if ftz_on { ftz(v) } else { v };
        let r = f(op(f(x.fa()), f(x.fb()), f(x.fc())));
        if sat_on {
            sat(r)
        } else {
            f32w(r)
        }
    }
}

/// `min` (§9.7.3.11) without `.NaN`: a NaN operand is ignored (both NaN: NaN); otherwise
/// `(a < b) ? a : b`, where "If values of both inputs are 0.0, then +0.0 > -0.0".
fn fmin(a: f64, b: f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, _) => b,
        (_, true) => a,
        _ if a == 0.0 && b == 0.0 => {
            if a.is_sign_negative() {
                a
            } else {
                b
            }
        }
        _ => a.min(b),
    }
}

/// `max` (§9.7.3.12): as [`fmin`], with `+0.0 > -0.0`.
fn fmax(a: f64, b: f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, _) => b,
        (_, true) => a,
        _ if a == 0.0 && b == 0.0 => {
            if a.is_sign_positive() {
                a
            } else {
                b
            }
        }
        _ => a.max(b),
    }
}

/// `setp` with a float comparison (§9.7.6.2): the ordered comparisons are false when an
/// operand is NaN, the unordered ones (`equ` … `geu`) true; `num`: neither is NaN;
/// `nan`: either is.
fn fcmp(cmp: &str, a: f64, b: f64) -> bool {
    let nan = a.is_nan() || b.is_nan();
    let ordered = match cmp.trim_end_matches('u') {
        "eq" => a == b,
        "ne" => a != b && !nan,
        "lt" => a < b,
        "le" => a <= b,
        "gt" => a > b,
        "ge" => a >= b,
        "num" => !nan,
        "nan" => nan,
        other => unreachable!("{other}"),
    };
    if cmp.len() == 3 && cmp.ends_with('u') {
        ordered || nan
    } else {
        ordered
    }
}

const FLOAT_CMPS: [&str; 14] =
    ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"];

/// Edge values of f32: zeros, subnormals, the normal limits, values around 1, the
/// largest finite value, infinities and a NaN, with both signs.
fn f32_edges() -> Vec<u64> {
    let positive: [u32; 16] = [
        0x0000_0000, // 0
        0x0000_0001, // smallest subnormal
        0x0040_0000, // subnormal
        0x007f_ffff, // largest subnormal
        0x0080_0000, // smallest normal
        0x3f00_0000, // 0.5
        0x3f7f_ffff, // 1 - 2^-24
        0x3f80_0000, // 1
        0x3f80_0001, // 1 + 2^-23
        0x3fc0_0000, // 1.5
        0x4040_0000, // 3
        0x3dcc_cccd, // 0.1
        0x3380_0000, // 2^-24
        0x7f7f_ffff, // largest finite
        0x7f80_0000, // infinity
        0x7fc0_0000, // NaN
    ];
    positive.iter().flat_map(|&p| [p as u64, (p | 0x8000_0000) as u64]).collect()
}

/// Triples for `fma` where an unfused multiply-add or a wrong final rounding shows:
/// exact ties after the product, ties broken by a tiny addend, cancellation, products
/// that underflow into subnormals, sums near overflow, infinities and invalid products.
fn fma_edges() -> Vec<In> {
    let f = |v: f32| v.to_bits() as u64;
    let p2 = |e: i32| 2f32.powi(e);
    let one_p12 = 1.0 + p2(-12); // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: a tie at 1.0
    let mut v = vec![
        In::new(f(one_p12), f(one_p12), f(0.0)),
        In::new(f(one_p12), f(one_p12), f(p2(-50))),
        In::new(f(one_p12), f(one_p12), f(-p2(-50))),
        In::new(f(one_p12), f(-one_p12), f(p2(-50))),
        In::new(f(1.0 + p2(-23)), f(1.0 + p2(-23)), f(-1.0)),
        In::new(f(1.0 + p2(-23)), f(1.0 - p2(-24)), f(-1.0)),
        In::new(f(1.0 - p2(-24)), f(1.0 - p2(-24)), f(-1.0)),
        In::new(f(p2(-70)), f(p2(-70)), f(0.0)),
        In::new(f(1.5 * p2(-75)), f(1.0 + p2(-23)), f(p2(-60))),
        In::new(f(1.5 * p2(-75)), f(1.25 * p2(-75)), f(-p2(-149))),
        In::new(f(p2(-100)), f(p2(-40)), f(-p2(-126))),
        In::new(f(f32::MAX), f(1.0), f(p2(103))),
        In::new(f(f32::MAX), f(1.0), f(p2(103) * (1.0 - p2(-23)))),
        In::new(f(f32::MAX), f(-1.0), f(-p2(103))),
        In::new(f(p2(64)), f(p2(64)), f(f32::NEG_INFINITY)),
        In::new(f(p2(100)), f(p2(100)), f(-f32::MAX)),
        In::new(f(f32::INFINITY), f(0.0), f(1.0)),
        In::new(f(f32::INFINITY), f(1.0), f(f32::NEG_INFINITY)),
        In::new(f(0.0), f(-1.0), f(0.0)),
        In::new(f(-0.0), f(0.0), f(-0.0)),
        In::new(f(3.0), f(1.0 / 3.0), f(-1.0)),
        In::new(f(0.1), f(10.0), f(-1.0)),
    ];
    // fma(a, b, -round(a*b)) is the exact rounding error of the product.
    v.extend(random(9, 200, |r| {
        let (a, b) = (r.normal_f32(), r.normal_f32());
        In::new(f(a), f(b), f(-(a * b)))
    }));
    v
}

#[test]
fn f32_arithmetic_fma_min_max_and_setp() {
    let add = |a: f32, b: f32, _: f32| a + b;
    let sub = |a: f32, b: f32, _: f32| a - b;
    let mul = |a: f32, b: f32, _: f32| a * b;
    // `fma.rn` (§9.7.3.6) rounds a*b+c once; `mad.rn.f32` is the same (§9.7.3.7).
    let fma = |a: f32, b: f32, c: f32| a.mul_add(b, c);
    // `add`/`sub`/`mul` (§9.7.3.3-5): IEEE 754 round to nearest even (also without a
    // rounding modifier, which defaults to `.rn`); `.ftz` and `.sat` as in §9.7.3.
    let mut slots = vec![
        slot("add.rn.f32 a, b", modified(false, false, add)),
        slot("sub.rn.f32 a, b", modified(false, false, sub)),
        slot("mul.rn.f32 a, b", modified(false, false, mul)),
        slot("add.f32 a, b", modified(false, false, add)),
        slot("sub.f32 a, b", modified(false, false, sub)),
        slot("mul.f32 a, b", modified(false, false, mul)),
        slot("add.rn.ftz.f32 a, b", modified(true, false, add)),
        slot("sub.rn.ftz.f32 a, b", modified(true, false, sub)),
        slot("mul.rn.ftz.f32 a, b", modified(true, false, mul)),
        slot("add.rn.sat.f32 a, b", modified(false, true, add)),
        slot("sub.rn.sat.f32 a, b", modified(false, true, sub)),
        slot("mul.rn.sat.f32 a, b", modified(false, true, mul)),
        slot("mul.rn.ftz.sat.f32 a, b", modified(true, true, mul)),
        slot("fma.rn.f32 a, b, c", modified(false, false, fma)),
        slot("fma.rn.ftz.f32 a, b, c", modified(true, false, fma)),
        slot("fma.rn.sat.f32 a, b, c", modified(false, true, fma)),
        slot("fma.rn.ftz.sat.f32 a, b, c", modified(true, true, fma)),
        slot("mad.rn.f32 a, b, c", modified(false, false, fma)),
        slot("mad.rn.ftz.f32 a, b, c", modified(true, false, fma)),
        slot("min.f32 a, b", modified(false, false, |a, b, _| fmin(a.into(), b.into()) as f32)),
        slot("max.f32 a, b", modified(false, false, |a, b, _| fmax(a.into(), b.into()) as f32)),
        slot("min.ftz.f32 a, b", modified(true, false, |a, b, _| fmin(a.into(), b.into()) as f32)),
        slot("max.ftz.f32 a, b", modified(true, false, |a, b, _| fmax(a.into(), b.into()) as f32)),
        // `abs`/`neg` (§9.7.3.9-10): |a| and -a; "NaN input yields unspecified NaN".
        slot("abs.f32 a", |x| f32w(x.fa().abs())),
        slot("neg.f32 a", |x| f32w(-x.fa())),
    ];
    for cmp in FLOAT_CMPS {
        slots.push(slot(format!("setp.{cmp}.f32 a, b"), move |x| {
            bits(fcmp(cmp, x.fa().into(), x.fb().into()) as u64)
        }));
    }
    // `setp.ftz` "flushes subnormal inputs to sign-preserving zero".
    for cmp in ["eq", "lt", "gtu"] {
        slots.push(slot(format!("setp.{cmp}.ftz.f32 a, b"), move |x| {
            bits(fcmp(cmp, ftz(x.fa()).into(), ftz(x.fb()).into()) as u64)
        }));
    }
    let edges = f32_edges();
    let mut cases = pairs(&edges, &edges, &edges);
    cases.extend(fma_edges());
    cases.extend(random(10, 300, |r| {
        let f = |v: f32| v.to_bits() as u64;
        In::new(f(r.normal_f32()), f(r.normal_f32()), f(r.normal_f32()))
    }));
    OpsKernel {
        name: "float32",
        inputs: &[Elem::F32, Elem::F32, Elem::F32],
        out: Elem::B32,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

/// Edge values of f64, with both signs.
fn f64_edges() -> Vec<u64> {
    let positive: [u64; 14] = [
        0,                     // 0
        1,                     // smallest subnormal
        0x000f_ffff_ffff_ffff, // largest subnormal
        0x0010_0000_0000_0000, // smallest normal
        0x3fe0_0000_0000_0000, // 0.5
        0x3fef_ffff_ffff_ffff, // 1 - 2^-53
        0x3ff0_0000_0000_0000, // 1
        0x3ff0_0000_0000_0001, // 1 + 2^-52
        0x4008_0000_0000_0000, // 3
        0x3fb9_9999_9999_999a, // 0.1
        0x3ca0_0000_0000_0000, // 2^-53
        0x7fef_ffff_ffff_ffff, // largest finite
        0x7ff0_0000_0000_0000, // infinity
        0x7ff8_0000_0000_0000, // NaN
    ];
    positive.iter().flat_map(|&p| [p, p | 1 << 63]).collect()
}

#[test]
fn f64_arithmetic_min_max_and_setp() {
    let mut slots = vec![
        slot("add.rn.f64 a, b", |x| f64w(x.da() + x.db())),
        slot("sub.rn.f64 a, b", |x| f64w(x.da() - x.db())),
        slot("mul.rn.f64 a, b", |x| f64w(x.da() * x.db())),
        slot("add.f64 a, b", |x| f64w(x.da() + x.db())),
        slot("min.f64 a, b", |x| f64w(fmin(x.da(), x.db()))),
        slot("max.f64 a, b", |x| f64w(fmax(x.da(), x.db()))),
        slot("abs.f64 a", |x| f64w(x.da().abs())),
        slot("neg.f64 a", |x| f64w(-x.da())),
    ];
    for cmp in FLOAT_CMPS {
        slots.push(slot(format!("setp.{cmp}.f64 a, b"), move |x| {
            bits(fcmp(cmp, x.da(), x.db()) as u64)
        }));
    }
    let edges = f64_edges();
    let mut cases = pairs(&edges, &edges, &[0]);
    cases.extend(random(11, 300, |r| {
        let f = |r: &mut Rng| {
            let e = 1023 - 60 + (r.next_u32() % 121) as u64;
            (r.next_u64() & ((1 << 63) | ((1 << 52) - 1))) | e << 52
        };
        In::new(f(r), f(r), 0)
    }));
    OpsKernel {
        name: "float64",
        inputs: &[Elem::F64, Elem::F64],
        out: Elem::B64,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

// ----- generated kernels --------------------------------------------------------------------

/// A kernel generated from its slot table: each slot's name is the PTX that computes it,
/// over the registers the generated kernel declares:
///
/// * inputs `%a64 %b64 %c64` (the thread's `a[i]`, `b[i]`, `c[i]`), their low halves
///   `%a32 %b32 %c32`, low quarters `%a16 %b16 %c16`, and `%ap %bp %cp` (bit 0 set);
///   `%u64` is `a[0]`, loaded with `ldu` (the same address in every thread);
/// * one destination per width, `%d8 %d16 %d32 %d64 %dp`, whose value is the slot's
///   result (zero-extended to 64 bits; `%dp` stores 1 or 0). A slot must write exactly
///   one of them; instructions are separated by `; `;
/// * scratch `%e16 %e32 %e64 %ep` and `%t8 %t16 %t32 %t64 %tp`.
///
/// All buffers are `.b64`. The PTX is checked in as `tests/ptx/ops/NAME.ptx` so that it
/// can be read and assembled with ptxas; the test fails if it is stale and `BLESS=1`
/// rewrites it.
fn generated(name: &'static str, slots: Vec<Slot>, cases: Vec<In>) -> OpsKernel {
    generated_for("8.5", "sm_90", name, slots, cases)
}

/// [`generated`] for instructions that need a newer PTX version and target.
fn generated_for(
    version: &str,
    target: &str,
    name: &'static str,
    slots: Vec<Slot>,
    cases: Vec<In>,
) -> OpsKernel {
    let kernel = OpsKernel {
        name,
        inputs: &[Elem::B64, Elem::B64, Elem::B64],
        out: Elem::B64,
        slots,
        cases,
        pending: vec![],
        target: None,
    };
    let text = generate_ptx(version, target, name, &kernel.slots);
    let path = kernel.path();
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &text).expect("write generated PTX");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == text,
        "{} is stale: run `BLESS=1 cargo test --test ops_e2e` and commit it",
        path.display()
    );
    kernel
}

/// The destination register a generated slot writes, and how to widen it to 64 bits.
fn slot_destination(slot: &str) -> (&'static str, &'static str) {
    let dests = [
        ("%d16", "cvt.u64.u16     %x4, %d16;"),
        ("%d32", "cvt.u64.u32     %x4, %d32;"),
        ("%d64", "mov.b64         %x4, %d64;"),
        ("%dp", "selp.b64        %x4, 1, 0, %dp;"),
        ("%d8", "cvt.u64.u8      %x4, %d8;"),
    ];
    let written: Vec<_> = dests
        .iter()
        .filter(|(reg, _)| {
            slot.match_indices(reg).any(|(i, _)| {
                !slot[i + reg.len()..].starts_with(|c: char| c.is_ascii_alphanumeric())
            })
        })
        .collect();
    assert_eq!(written.len(), 1, "slot `{slot}` must write exactly one of %d8/%d16/%d32/%d64/%dp");
    *written[0]
}

fn generate_ptx(version: &str, target: &str, name: &str, slots: &[Slot]) -> String {
    use std::fmt::Write;
    let k = slots.len();
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(
        w,
        "// Generated by tests/ops_e2e.rs from its slot table; `BLESS=1 cargo test --test"
    );
    let _ = writeln!(
        w,
        "// ops_e2e` rewrites it. Thread i < n reads a[i], b[i], c[i] (.b64) and writes"
    );
    let _ = writeln!(w, "// result k, zero-extended to 64 bits, to out[{k}*i + k].");
    let _ = writeln!(w, "\n.version {version}\n.target {target}\n.address_size 64\n");
    let _ = writeln!(w, ".visible .entry {name}(");
    for p in ["a", "b", "c", "out"] {
        let _ = writeln!(w, "    .param .u64 {name}_{p},");
    }
    let _ = writeln!(w, "    .param .u32 {name}_n\n)\n{{");
    let _ = writeln!(w, "    .reg .pred %p1;\n    .reg .b32 %i<4>;\n    .reg .b64 %x<6>, %u64;");
    let _ = writeln!(w, "    .reg .b8 %d8, %t8;");
    for (ty, suffix) in [(".pred", "p"), (".b16", "16"), (".b32", "32"), (".b64", "64")] {
        let regs: Vec<String> =
            ["a", "b", "c", "d", "e", "t"].iter().map(|r| format!("%{r}{suffix}")).collect();
        let _ = writeln!(w, "    .reg {ty} {};", regs.join(", "));
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "    ld.param.u32    %i1, [{name}_n];");
    let _ = writeln!(w, "    mov.u32         %i2, %ctaid.x;");
    let _ = writeln!(w, "    mov.u32         %i3, %ntid.x;");
    let _ = writeln!(w, "    mov.u32         %i0, %tid.x;");
    let _ = writeln!(w, "    mad.lo.s32      %i0, %i2, %i3, %i0;");
    let _ = writeln!(w, "    setp.ge.u32     %p1, %i0, %i1;");
    let _ = writeln!(w, "    @%p1 bra        $L__done;");
    let _ = writeln!(w, "    mul.wide.u32    %x0, %i0, 8;");
    // `a[0]`, the same address in every thread, through `ldu`.
    let _ = writeln!(w, "    ld.param.u64    %x1, [{name}_a];");
    let _ = writeln!(w, "    ldu.global.b64  %u64, [%x1];");
    for r in ["a", "b", "c"] {
        let _ = writeln!(w, "    ld.param.u64    %x1, [{name}_{r}];");
        let _ = writeln!(w, "    add.s64         %x1, %x1, %x0;");
        let _ = writeln!(w, "    ld.global.b64   %{r}64, [%x1];");
        let _ = writeln!(w, "    cvt.u32.u64     %{r}32, %{r}64;");
        let _ = writeln!(w, "    cvt.u16.u64     %{r}16, %{r}64;");
        let _ = writeln!(w, "    and.b64         %x2, %{r}64, 1;");
        let _ = writeln!(w, "    setp.ne.b64     %{r}p, %x2, 0;");
    }
    let _ = writeln!(w, "    mul.wide.u32    %x0, %i0, {};", 8 * k);
    let _ = writeln!(w, "    ld.param.u64    %x3, [{name}_out];");
    let _ = writeln!(w, "    add.s64         %x3, %x3, %x0;");
    for (i, slot) in slots.iter().enumerate() {
        let (_, widen) = slot_destination(&slot.name);
        let _ = writeln!(w, "\n    // [{i}] {}", slot.name);
        for inst in slot.name.split("; ") {
            let (op, rest) = inst.split_once(' ').unwrap_or((inst, ""));
            let _ = writeln!(w, "    {op:<15} {rest};");
        }
        let _ = writeln!(w, "    {widen}");
        let _ = writeln!(w, "    st.global.b64   [%x3+{}], %x4;", 8 * i);
    }
    let _ = writeln!(w, "\n$L__done:\n    ret;\n}}");
    s
}

/// Signed zeros survive arithmetic the Vulkan compiler could fold (the shader declares
/// `SignedZeroInfNanPreserve`): every result of `tests/ptx/ops/signed_zero.ptx` has the
/// bits Rust's IEEE f32 arithmetic gives.
#[test]
fn signed_zeros_survive_constant_operands() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/ops/signed_zero.ptx"));
    let mut init = [0u32; 15];
    init[0] = 0x8000_0000;
    let out = device.buffer_from(&init).expect("buffer");
    let kernel = module.kernel("signed_zero").expect("kernel");
    kernel.launch(1, 1, 0, &[ptxvk::Arg::from(&out)]).expect("launch");
    let (nz, pz, c) = (-0.0f32, 0.0f32, f32::from_bits(0xBE2A_AAA8));
    let want = [
        c.mul_add(pz, nz),
        pz.mul_add(nz, pz),
        nz * pz,
        nz + nz,
        nz * 1.0,
        pz.mul_add(nz, nz),
        -pz,
        nz * 1.0,
        c.mul_add(pz, nz),
        nz + 0.0,
        nz - 0.0,
        pz - 0.0,
        -0.0 + nz,
        pz.mul_add(nz, 0.0),
        c.mul_add((nz * nz).mul_add(nz, 0.0), nz),
    ]
    .map(f32::to_bits);
    assert_eq!(out.to_vec().expect("read"), want);
}

/// Every `setp` comparison on `.f16` (with and without `.ftz`) and `.bf16`,
/// `set.lt.u32.f16`, and the x2 forms (lane 0 in bits 0-15, `p` for lane 0 and `q` for
/// lane 1), over pairs of interesting bit patterns (`tests/ptx/ops/half_compare.ptx`),
/// against IEEE comparisons of the exact values: ordered comparisons are false and
/// unordered ones true when either operand is NaN; `.ftz` compares f16 subnormals as
/// zeros of their sign.
#[test]
fn half_comparisons_match_ieee_on_the_exact_values() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/ops/half_compare.ptx"));
    let kernel = module.kernel("half_compare").expect("kernel");
    let values: [u16; 14] = [
        0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x3c00, 0xbc00, 0x7bff, 0x7c00, 0xfc00, 0x7e00,
        0x3f80, 0x4000, 0x0400,
    ];
    let (a, b): (Vec<u16>, Vec<u16>) =
        values.iter().flat_map(|&x| values.iter().map(move |&y| (x, y))).unzip();
    let n = a.len();
    let (da, db) = (device.buffer_from(&a).expect("a"), device.buffer_from(&b).expect("b"));
    let out = device.zeroed::<u32>(7 * n).expect("out");
    let args = [
        ptxvk::Arg::from(&da),
        ptxvk::Arg::from(&db),
        ptxvk::Arg::from(&out),
        ptxvk::Arg::from(n as u32),
    ];
    kernel.launch((n as u32).div_ceil(64), 64, 0, &args).expect("launch");
    let got = out.to_vec().expect("read");
    // The 14 comparisons in the kernel's bit order.
    let mask = |x: f32, y: f32| -> u32 {
        let un = x.is_nan() || y.is_nan();
        [
            x == y,
            !un && x != y,
            x < y,
            x <= y,
            x > y,
            x >= y,
            un || x == y,
            x != y,
            un || x < y,
            un || x <= y,
            un || x > y,
            un || x >= y,
            !un,
            un,
        ]
        .iter()
        .enumerate()
        .map(|(k, &c)| u32::from(c) << k)
        .sum()
    };
    let f16 = |v: u16| half::f16::from_bits(v).to_f32();
    let ftz = |v: u16| if v & 0x7c00 == 0 { f16(v & 0x8000) } else { f16(v) };
    let bf16 = |v: u16| half::bf16::from_bits(v).to_f32();
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let (lt, gt) = (f16(x) < f16(y), f16(y) < f16(x));
        let lanes = |t: u32| (u32::from(lt) * t) | ((u32::from(gt) * t) << 16);
        let want = [
            mask(f16(x), f16(y)) | mask(ftz(x), ftz(y)) << 16,
            mask(bf16(x), bf16(y)),
            if lt { u32::MAX } else { 0 },
            u32::from(lt) | u32::from(gt) << 1,
            lanes(0x3c00),
            lanes(0xffff),
            if lt { 0x3c00 } else { 0 },
        ];
        assert_eq!(got[7 * i..7 * i + 7], want, "a = {x:#06x}, b = {y:#06x}");
    }
}

/// `cvt.rn.f16.s8`/`.u8` of the low byte of a 16-bit register (PTX ISA §5.2.2).
#[test]
fn cvt_converts_the_low_bits_of_a_wider_source_register() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/ops/cvt_wide_source.ptx"));
    let input: Vec<u16> = (0..64u16).map(|k| k.wrapping_mul(0x9e37) ^ 0x5a00).collect();
    let din = device.buffer_from(&input).expect("in");
    let out = device.zeroed::<u16>(2 * input.len()).expect("out");
    let kernel = module.kernel("cvt_wide_source").expect("kernel");
    kernel.launch(1, 64, 0, &[ptxvk::Arg::from(&din), ptxvk::Arg::from(&out)]).expect("launch");
    let want: Vec<u16> = input
        .iter()
        .flat_map(|&v| {
            let low = v as u8;
            [f32::from(low as i8), f32::from(low)].map(|x| half::f16::from_f32(x).to_bits())
        })
        .collect();
    assert_eq!(out.to_vec().expect("read"), want);
}

/// Runs each of `entries` (kernels of `tests/ptx/ops/f32_chain.ptx` or `f64_chain.ptx`)
/// on the operands `abc`, one thread per element, and returns each one's eight results
/// per element, as bits `R` of the operands' width.
fn run_chains<T: ptxvk::Pod, R: ptxvk::Pod>(
    device: &ptxvk::Device,
    module: &ptxvk::Module,
    entries: [&str; 2],
    abc: [&[T]; 3],
) -> Vec<Vec<R>> {
    let n = abc[0].len();
    let inputs = abc.map(|v| device.buffer_from(v).expect("operands"));
    let mut results = Vec::new();
    for entry in entries {
        let out = device.zeroed::<R>(8 * n).expect("out");
        let args = [
            ptxvk::Arg::from(&inputs[0]),
            ptxvk::Arg::from(&inputs[1]),
            ptxvk::Arg::from(&inputs[2]),
            ptxvk::Arg::from(&out),
            ptxvk::Arg::from(n as u32),
        ];
        let kernel = module.kernel(entry).expect("kernel");
        kernel.launch((n as u32).div_ceil(64), 64, 0, &args).expect("launch");
        results.push(out.to_vec().expect("read"));
    }
    results
}

/// Exact f32 `fma.rn`, `div.rn`, `sqrt.rn` and `rcp.rn` chained in one block with stores
/// and loads among them (`tests/ptx/ops/f32_chain.ptx`: one exact run,
/// `lower/src/pass/exact_runs.rs`, whose second pass restores a register the
/// chain reads and then writes, and which defers two stores to one address that a load
/// of the run reads back in odd threads), on operands that take the exact paths at one
/// site, several or none (zeros, subnormals, infinities, NaNs, sums on f32 breakpoints,
/// extreme and random exponents, mixed within each subgroup): against Rust's arithmetic
/// (`f32::mul_add`; f64 division and square root rounded to f32, correctly rounded
/// since 53 ≥ 2·24 + 2), as is the same chain with a volatile store after each
/// operation, where no run forms.
#[test]
fn f32_chains_share_one_exact_branch_and_stay_exact() {
    let Some(device) = device() else { return };
    let path = repo().join("tests/ptx/ops/f32_chain.ptx");
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        f32::MIN_POSITIVE,
        1e-45,
        -3e-40,
        f32::MAX,
        -1e30,
        1e-30,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        3.0,
    ];
    let mut rng = Rng(3802);
    let pick = |rng: &mut Rng| -> f32 {
        match rng.next_u64() % 4 {
            0 => specials[(rng.next_u64() % specials.len() as u64) as usize],
            1 => f32::from_bits(rng.next_u64() as u32),
            // Moderate magnitudes: the fast paths.
            _ => (rng.next_u64() >> 40) as f32 * 2f32.powi(-21) - 4.0,
        }
    };
    let n = 8192;
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let (x, y) = (pick(&mut rng), pick(&mut rng));
        // Every eighth: `x·y + z` on an f32 breakpoint (`(1 + 2^-11)^2 + 3` is
        // 4 + 2^-10 + 2^-22, a tie in [4, 8)), where the first `fma`'s fast path fails.
        let tie = 1.0 + 2f32.powi(-11);
        let (x, y, z) = if i % 8 == 5 { (tie, tie, 3.0) } else { (x, y, pick(&mut rng)) };
        a.push(x);
        b.push(y);
        c.push(z);
    }
    // As the device compiles (on lavapipe confined: the confinement's tests around each
    // access split the run), and unconfined (one run, its stores deferred).
    let unconfined = ptxvk::compile::Target { confine: false, ..device.target() };
    let mut results: Vec<Vec<u32>> = Vec::new();
    for target in [device.target(), unconfined] {
        let module = load_for(&device, &path, target);
        results.extend(run_chains(
            &device,
            &module,
            ["f32_chain", "f32_chain_split"],
            [&a, &b, &c],
        ));
    }
    let key = |x: f32| if x.is_nan() { u32::MAX } else { x.to_bits() };
    let div = |p: f32, q: f32| (f64::from(p) / f64::from(q)) as f32;
    let sqrt = |p: f32| f64::from(p).sqrt() as f32;
    for i in 0..n {
        let (x, y, z) = (a[i], b[i], c[i]);
        let t1 = x.mul_add(y, z);
        let t2 = div(t1, z);
        let t3 = sqrt(t2);
        let t4 = div(1.0, t3);
        let t8 = z.mul_add(y, t4);
        // The load of the run: out[8*i] (the latest store, y) in odd threads, else a[i].
        let w = if i % 2 == 1 { y } else { x };
        let t5 = t4.mul_add(w, t1);
        let t6 = div(x, t5);
        let t7 = div((t6 + t8).mul_add(z, t2), y);
        let want = [t1, t2, t3, t4, t5, t6, t7, t8].map(key);
        for (k, r) in results.iter().enumerate() {
            let got: Vec<u32> =
                r[8 * i..8 * i + 8].iter().map(|&g| key(f32::from_bits(g))).collect();
            let kernel = [
                "chain, as the device compiles",
                "split",
                "chain, unconfined",
                "split, unconfined",
            ][k];
            assert_eq!(got, want, "{kernel}: element {i}: x = {x:e}, y = {y:e}, z = {z:e}");
        }
    }
}

/// Exact f64 `fma.rn` and `div.rn` chained in one block (`tests/ptx/ops/f64_chain.ptx`,
/// two retry regions around an instruction that reads what it writes:
/// `lower/src/pass/retry_regions.rs`), on operands that take the routines at one site,
/// several or none (zeros, subnormals, infinities, NaNs, extreme and random
/// exponents, mixed within each subgroup): against Rust's f64 arithmetic (`mul_add`,
/// `/`: correctly rounded), and bit for bit against the same chain with a store after
/// each operation, where no region forms.
#[test]
fn f64_chains_share_one_routine_call_and_stay_exact() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/ops/f64_chain.ptx"));
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        f64::MIN_POSITIVE,
        5e-324,
        -2.5e-310,
        f64::MAX,
        -1e300,
        1e-300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        3.0,
    ];
    let mut rng = Rng(3801);
    let pick = |rng: &mut Rng| -> f64 {
        match rng.next_u64() % 4 {
            0 => specials[(rng.next_u64() % specials.len() as u64) as usize],
            1 => f64::from_bits(rng.next_u64()),
            // Moderate magnitudes: the fast paths.
            _ => (rng.next_u64() >> 11) as f64 * 2f64.powi(-50) - 4.0,
        }
    };
    let n = 8192;
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        a.push(pick(&mut rng));
        b.push(pick(&mut rng));
        c.push(pick(&mut rng));
    }
    let results: Vec<Vec<u64>> =
        run_chains(&device, &module, ["f64_chain", "f64_chain_split"], [&a, &b, &c]);
    let key = |x: f64| if x.is_nan() { u64::MAX } else { x.to_bits() };
    for i in 0..n {
        let (x, y, z) = (a[i], b[i], c[i]);
        let t1 = x.mul_add(y, z);
        let t2 = t1.mul_add(x, y);
        let t3 = t2 / z;
        let t4 = t3.mul_add(t3, x);
        let t5 = x / t4;
        let t8 = z.mul_add(y, t5);
        let t6 = t5.mul_add(y, t1);
        let t7 = (t6 + t8).mul_add(z, t2) / y;
        let want = [t1, t2, t3, t4, t5, t6, t7, t8].map(key);
        let got: Vec<u64> =
            results[0][8 * i..8 * i + 8].iter().map(|&g| key(f64::from_bits(g))).collect();
        assert_eq!(got, want, "element {i}: x = {x:e}, y = {y:e}, z = {z:e}");
        assert_eq!(results[0][8 * i..8 * i + 8], results[1][8 * i..8 * i + 8], "element {i}");
    }
}
