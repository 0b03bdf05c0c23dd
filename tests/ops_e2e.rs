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
#[path = "ops/expanded.rs"]
mod expanded;
#[path = "ops/formats.rs"]
mod formats;
#[path = "ops/video.rs"]
mod video;

use common::cases::{buf, val};
use common::float_ref::{self, Mode};
use common::*;
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

// ----- integer references ------------------------------------------------------------------

const fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// An integer instruction or conversion type (`.uN`/`.bN` or `.sN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Int {
    bits: u32,
    signed: bool,
}

const fn u(bits: u32) -> Int {
    Int { bits, signed: false }
}
const fn s(bits: u32) -> Int {
    Int { bits, signed: true }
}

/// Every integer type of `cvt`, in the order of the `cvt_int` kernel.
const INT_TYPES: [Int; 8] = [u(8), u(16), u(32), u(64), s(8), s(16), s(32), s(64)];

impl Int {
    fn name(self) -> String {
        format!("{}{}", if self.signed { 's' } else { 'u' }, self.bits)
    }
    /// The value of the low `bits` of `x` read at this type.
    fn read(self, x: u64) -> i128 {
        let v = x & mask(self.bits);
        if self.signed && v >> (self.bits - 1) & 1 == 1 {
            v as i128 - (1i128 << self.bits)
        } else {
            v as i128
        }
    }
    /// `v` modulo 2^bits, as bits.
    fn wrap(self, v: i128) -> u64 {
        (v as u64) & mask(self.bits)
    }
    fn min(self) -> i128 {
        if self.signed {
            -(1i128 << (self.bits - 1))
        } else {
            0
        }
    }
    fn max(self) -> i128 {
        if self.signed {
            (1i128 << (self.bits - 1)) - 1
        } else {
            (1i128 << self.bits) - 1
        }
    }
    /// `v` (in range) in a 64-bit destination register: "sign-extended to the destination
    /// register width for signed integers, and zero-extended ... for unsigned" (§9.7.9.21
    /// Notes, relaxed type-checking rules of §9.4.1).
    fn reg64(self, v: i128) -> u64 {
        let w = self.wrap(v);
        if self.signed {
            s(64).wrap(self.read(w))
        } else {
            w
        }
    }
}

fn bits(v: u64) -> Want {
    Want::Bits(v)
}

/// `add` (§9.7.1.1), `sub` (§9.7.1.2): `d = a ± b`, wrapping modulo 2^n.
fn add(t: Int, a: u64, b: u64) -> u64 {
    t.wrap(t.read(a) + t.read(b))
}
fn sub(t: Int, a: u64, b: u64) -> u64 {
    t.wrap(t.read(a) - t.read(b))
}

/// `mul` (§9.7.1.3): `t = a * b` with 2n bits; `.lo` is `t<n-1..0>`, `.hi` is
/// `t<2n-1..n>`, `.wide` is `t`.
fn mul_full(t: Int, a: u64, b: u64) -> u128 {
    if t.signed {
        (t.read(a) * t.read(b)) as u128
    } else {
        (a & mask(t.bits)) as u128 * (b & mask(t.bits)) as u128
    }
}
fn mul_lo(t: Int, a: u64, b: u64) -> u64 {
    mul_full(t, a, b) as u64 & mask(t.bits)
}
fn mul_hi(t: Int, a: u64, b: u64) -> u64 {
    (mul_full(t, a, b) >> t.bits) as u64 & mask(t.bits)
}
fn mul_wide(t: Int, a: u64, b: u64) -> u64 {
    mul_full(t, a, b) as u64 & mask(2 * t.bits)
}

/// `mad` (§9.7.1.4): `.lo`/`.hi` part of `a * b` plus `c` modulo 2^n; `.wide`: the whole
/// product plus the 2n-bit `c` modulo 2^2n.
fn mad_lo(t: Int, a: u64, b: u64, c: u64) -> u64 {
    mul_lo(t, a, b).wrapping_add(c) & mask(t.bits)
}
fn mad_hi(t: Int, a: u64, b: u64, c: u64) -> u64 {
    mul_hi(t, a, b).wrapping_add(c) & mask(t.bits)
}
fn mad_wide(t: Int, a: u64, b: u64, c: u64) -> u64 {
    mul_wide(t, a, b).wrapping_add(c) & mask(2 * t.bits)
}

/// `div` (§9.7.1.8): `d = a / b`, truncating. "Division by zero yields an unspecified,
/// machine-specific value", and so does the overflowing `INT_MIN / -1`; the reference is
/// ptxvk's documented choice (`ir::BinaryOp::Div`): all ones, and `INT_MIN`.
fn div(t: Int, a: u64, b: u64) -> u64 {
    let (x, y) = (t.read(a), t.read(b));
    match y {
        0 => mask(t.bits),
        -1 if x == t.min() && t.signed => t.wrap(x),
        _ => t.wrap(x / y),
    }
}

/// `rem` (§9.7.1.9): `d = a % b`. "The behavior for negative numbers is
/// machine-dependent" and division by zero is machine-specific: the reference is
/// ptxvk's documented choice (`ir::BinaryOp::Rem`): the sign of the dividend (C's `%`),
/// `x % 0 = x`, `INT_MIN % -1 = 0`.
fn rem(t: Int, a: u64, b: u64) -> u64 {
    let (x, y) = (t.read(a), t.read(b));
    match y {
        0 => t.wrap(x),
        _ => t.wrap(x % y),
    }
}

/// `min` (§9.7.1.12), `max` (§9.7.1.13): `(a < b) ? a : b`, signed and unsigned differ.
fn min(t: Int, a: u64, b: u64) -> u64 {
    t.wrap(t.read(a).min(t.read(b)))
}
fn max(t: Int, a: u64, b: u64) -> u64 {
    t.wrap(t.read(a).max(t.read(b)))
}

/// `abs` (§9.7.1.10): `d = |a|`; `|INT_MIN|` does not fit and wraps to `INT_MIN`
/// (two's complement, as documented on `ir::UnaryOp::Abs`).
fn abs(t: Int, a: u64) -> u64 {
    t.wrap(t.read(a).abs())
}

/// `neg` (§9.7.1.11): `d = -a` modulo 2^n.
fn neg(t: Int, a: u64) -> u64 {
    t.wrap(-t.read(a))
}

/// `not` (§9.7.8.4): `d = ~a`; `cnot` (§9.7.8.5): `d = (a == 0) ? 1 : 0`.
fn not(t: Int, a: u64) -> u64 {
    !a & mask(t.bits)
}
fn cnot(t: Int, a: u64) -> u64 {
    (a & mask(t.bits) == 0) as u64
}

/// `popc` (§9.7.1.14): the number of one bits, as a `.u32`.
fn popc(t: Int, a: u64) -> u64 {
    (a & mask(t.bits)).count_ones() as u64
}

/// `clz` (§9.7.1.15): leading zeros from the most significant bit; 0..=n.
fn clz(t: Int, a: u64) -> u64 {
    ((a & mask(t.bits)).leading_zeros() - (64 - t.bits)) as u64
}

/// `brev` (§9.7.1.18): `d[i] = a[msb-i]`.
fn brev(t: Int, a: u64) -> u64 {
    (0..t.bits).filter(|i| a >> i & 1 == 1).fold(0, |d, i| d | 1 << (t.bits - 1 - i))
}

/// `shl` (§9.7.8.8): "Shift amounts greater than the register width N are clamped to
/// N"; the amount is an unsigned 32-bit value.
fn shl(t: Int, a: u64, amount: u64) -> u64 {
    let n = (amount as u32).min(t.bits);
    if n == t.bits {
        0
    } else {
        (a << n) & mask(t.bits)
    }
}

/// `shr` (§9.7.8.9): signed shifts fill with the sign bit, unsigned and untyped shifts
/// with 0; amounts past the width are clamped to the width.
fn shr(t: Int, a: u64, amount: u64) -> u64 {
    let n = (amount as u32).min(t.bits);
    t.wrap(t.read(a) >> n)
}

/// `bfe` (§9.7.1.19), transcribed from the ISA's pseudo-code.
fn bfe(t: Int, a: u64, b: u64, c: u64) -> u64 {
    let msb = t.bits - 1;
    let pos = (b & 0xff) as u32;
    let len = (c & 0xff) as u32;
    let sbit = if !t.signed || len == 0 { 0 } else { a >> (pos + len - 1).min(msb) & 1 };
    let mut d = 0;
    for i in 0..=msb {
        let bit = if i < len && pos + i <= msb { a >> (pos + i) & 1 } else { sbit };
        d |= bit << i;
    }
    d
}

/// `bfi` (§9.7.1.20), transcribed from the ISA's pseudo-code.
fn bfi(t: Int, a: u64, b: u64, c: u64, d: u64) -> u64 {
    let msb = t.bits - 1;
    let pos = (c & 0xff) as u32;
    let len = (d & 0xff) as u32;
    let mut f = b & mask(t.bits);
    let mut i = 0;
    while i < len && pos + i <= msb {
        f = (f & !(1 << (pos + i))) | (a >> i & 1) << (pos + i);
        i += 1;
    }
    f
}

/// `setp` with an integer comparison (§9.7.6.2): `eq ne lt le gt ge` on the type's
/// values; `lo ls hi hs` are the unsigned `lt le gt ge`.
fn icmp(t: Int, cmp: &str, a: u64, b: u64) -> bool {
    let (x, y) = (t.read(a), t.read(b));
    match cmp {
        "eq" => x == y,
        "ne" => x != y,
        "lt" | "lo" => x < y,
        "le" | "ls" => x <= y,
        "gt" | "hi" => x > y,
        "ge" | "hs" => x >= y,
        _ => unreachable!("{cmp}"),
    }
}

/// `setp.CmpOp.BoolOp p|q, a, b, c` (§9.7.6.2): `p = BoolOp(t, c)`, `q = BoolOp(!t, c)`.
fn combine(op: &str, t: bool, c: bool) -> bool {
    match op {
        "and" => t && c,
        "or" => t || c,
        "xor" => t != c,
        _ => unreachable!("{op}"),
    }
}

/// `cvt` between integer types (§9.7.9.21): the low bits of the source read at its type;
/// `.sat` "limits the result to MININT..MAXINT for the size of the operation", otherwise
/// the value is truncated to the destination width; then extended to the 64-bit register.
fn cvt_int(dst: Int, src: Int, sat: bool, a: u64) -> u64 {
    let v = src.read(a);
    let v = if sat { v.clamp(dst.min(), dst.max()) } else { v };
    dst.reg64(v)
}

type Binary = fn(Int, u64, u64) -> u64;
type Ternary = fn(Int, u64, u64, u64) -> u64;

/// The slots shared by the 16-, 32- and 64-bit integer kernels, in their PTX order.
fn arith_slots(n: u32) -> Vec<Slot> {
    let (ut, st) = (u(n), s(n));
    let mut v = Vec::new();
    let binary = |v: &mut Vec<Slot>, ops: &[(&str, Binary)]| {
        for &(op, f) in ops {
            for t in [ut, st] {
                v.push(slot(format!("{op}.{} a, b", t.name()), move |x| bits(f(t, x.a, x.b))));
            }
        }
    };
    binary(&mut v, &[("add", add), ("sub", sub), ("mul.lo", mul_lo), ("mul.hi", mul_hi)]);
    for (op, f) in [("mad.lo", mad_lo as Ternary), ("mad.hi", mad_hi)] {
        for t in [ut, st] {
            let r = move |x: In| bits(f(t, x.a, x.b, x.c));
            v.push(slot(format!("{op}.{} a, b, c", t.name()), r));
        }
    }
    binary(&mut v, &[("div", div), ("rem", rem), ("min", min), ("max", max)]);
    v.push(slot(format!("abs.s{n} a"), move |x| bits(abs(st, x.a))));
    v.push(slot(format!("neg.s{n} a"), move |x| bits(neg(st, x.a))));
    // `and`, `or`, `xor` (§9.7.8.1-3): bitwise.
    v.push(slot(format!("and.b{n} a, b"), move |x| bits(x.a & x.b & mask(n))));
    v.push(slot(format!("or.b{n} a, b"), move |x| bits((x.a | x.b) & mask(n))));
    v.push(slot(format!("xor.b{n} a, b"), move |x| bits((x.a ^ x.b) & mask(n))));
    v.push(slot(format!("not.b{n} a"), move |x| bits(not(ut, x.a))));
    v.push(slot(format!("cnot.b{n} a"), move |x| bits(cnot(ut, x.a))));
    v
}

/// Edge values of an `n`-bit integer: 0, ±1, small values, the signed and unsigned
/// limits and their neighbours, a few bit patterns.
fn int_edges(n: u32) -> Vec<u64> {
    let m = mask(n);
    let top = 1u64 << (n - 1);
    let mut v = vec![0, 1, 2, 3, 7, top - 2, top - 1, top, top + 1, m - 1, m, m - 6];
    v.extend([0x5555_5555_5555_5555 & m, 0x0123_4567_89ab_cdef & m, 0xdead_beef_cafe_f00d & m]);
    if n > 16 {
        v.extend([0xffff, 0x1_0000, 0x7fff_ffff & m, 0x8000_0000 & m, 0xffff_ffff & m]);
    }
    if n > 32 {
        v.extend([0x1_0000_0000, 0xffff_ffff_8000_0000, 0x8000_0000_ffff_ffff]);
    }
    v
}

fn int_cases(n: u32, seed: u64) -> Vec<In> {
    let edges = int_edges(n);
    let mut v = pairs(&edges, &edges, &edges);
    v.extend(random(seed, 400, |r| In::new(random_int(r, n), random_int(r, n), random_int(r, n))));
    v
}

#[test]
fn integer_arithmetic_32_bit() {
    let t = u(32);
    let mut slots = arith_slots(32);
    slots.extend([
        slot("popc.b32 a", move |x| bits(popc(t, x.a))),
        slot("clz.b32 a", move |x| bits(clz(t, x.a))),
        slot("brev.b32 a", move |x| bits(brev(t, x.a))),
        // `selp` (§9.7.6.3): `d = (c == 1) ? a : b`.
        slot("selp.b32 a, b, c.bit0", |x| bits(if x.c & 1 == 1 { x.a } else { x.b })),
        slot("selp.b32 a, b, !c.bit0", |x| bits(if x.c & 1 == 0 { x.a } else { x.b })),
        slot("selp.s32 -5, a, c.bit0", |x| bits(if x.c & 1 == 1 { s(32).wrap(-5) } else { x.a })),
        slot("div.s32 a, -1", |x| bits(div(s(32), x.a, mask(32)))),
        slot("rem.s32 a, -1", |x| bits(rem(s(32), x.a, mask(32)))),
        slot("div.u32 a, 0", |x| bits(div(u(32), x.a, 0))),
        slot("mul.hi.u32 a, 0x80000001", |x| bits(mul_hi(u(32), x.a, 0x8000_0001))),
        slot("min.s32 a, -3", |x| bits(min(s(32), x.a, s(32).wrap(-3)))),
    ]);
    OpsKernel {
        name: "int32",
        inputs: &[Elem::B32, Elem::B32, Elem::B32],
        out: Elem::B32,
        slots,
        cases: int_cases(32, 32),
        pending: vec![],
        target: None,
    }
    .run();
}

#[test]
fn integer_arithmetic_64_bit_and_wide_multiplies() {
    let t = u(64);
    let mut slots = arith_slots(64);
    slots.extend([
        slot("brev.b64 a", move |x| bits(brev(t, x.a))),
        slot("popc.b64 a", move |x| bits(popc(t, x.a))),
        slot("clz.b64 a", move |x| bits(clz(t, x.a))),
        slot("mul.wide.u32 a.lo, b.lo", |x| bits(mul_wide(u(32), x.a, x.b))),
        slot("mul.wide.s32 a.lo, b.lo", |x| bits(mul_wide(s(32), x.a, x.b))),
        slot("mad.wide.u32 a.lo, b.lo, c", |x| bits(mad_wide(u(32), x.a, x.b, x.c))),
        slot("mad.wide.s32 a.lo, b.lo, c", |x| bits(mad_wide(s(32), x.a, x.b, x.c))),
        // `mov` (§9.7.9.3) packs `{lo, hi}` with the first element in the low bits.
        slot("mov.b64 {b.lo, a.hi}", |x| bits(lo32(x.b) | hi32(x.a) << 32)),
        slot("mov.b64 {a.h3, a.h2, a.h1, a.h0}", |x| {
            bits((0..4).fold(0, |d, i| d | (x.a >> (16 * i) & 0xffff) << (16 * (3 - i))))
        }),
        slot("selp.b64 a, b, c.bit0", |x| bits(if x.c & 1 == 1 { x.a } else { x.b })),
        slot("div.s64 a, -1", |x| bits(div(s(64), x.a, u64::MAX))),
        slot("rem.u64 a, 0", |x| bits(rem(u(64), x.a, 0))),
    ]);
    OpsKernel {
        name: "int64",
        inputs: &[Elem::B64, Elem::B64, Elem::B64],
        out: Elem::B64,
        slots,
        cases: int_cases(64, 64),
        pending: vec![],
        target: None,
    }
    .run();
}

#[test]
fn integer_arithmetic_16_bit() {
    let mut slots = arith_slots(16);
    // The wide addend is `c | b << 16` (packed with `mov.b32 {c, b}` in the kernel).
    let c32 = |x: In| x.c | x.b << 16;
    for t in [u(16), s(16)] {
        let name = t.name();
        slots.push(slot(format!("mul.wide.{name} a, b .lo"), move |x| {
            bits(mul_wide(t, x.a, x.b) & 0xffff)
        }));
        slots.push(slot(format!("mul.wide.{name} a, b .hi"), move |x| {
            bits(mul_wide(t, x.a, x.b) >> 16)
        }));
    }
    for t in [u(16), s(16)] {
        let name = t.name();
        slots.push(slot(format!("mad.wide.{name} a, b, c | b << 16 .lo"), move |x| {
            bits(mad_wide(t, x.a, x.b, c32(x)) & 0xffff)
        }));
        slots.push(slot(format!("mad.wide.{name} a, b, c | b << 16 .hi"), move |x| {
            bits(mad_wide(t, x.a, x.b, c32(x)) >> 16)
        }));
    }
    slots.extend([
        slot("shl.b16 a, b", |x| bits(shl(u(16), x.a, x.b))),
        slot("shr.b16 a, b", |x| bits(shr(u(16), x.a, x.b))),
        slot("shr.u16 a, b", |x| bits(shr(u(16), x.a, x.b))),
        slot("shr.s16 a, b", |x| bits(shr(s(16), x.a, x.b))),
    ]);
    for (cmp, t) in [("lt", s(16)), ("ge", s(16)), ("lo", u(16)), ("hs", u(16)), ("ne", u(16))] {
        let ty = if cmp == "ne" { "b16".to_string() } else { t.name() };
        slots.push(slot(format!("setp.{cmp}.{ty} a, b"), move |x| {
            bits(icmp(t, cmp, x.a, x.b) as u64)
        }));
    }
    slots.push(slot("selp.b16 a, b, c.bit0", |x| bits(if x.c & 1 == 1 { x.a } else { x.b })));
    let mut cases = int_cases(16, 16);
    // Shift amounts around the width.
    cases.extend(pairs(&int_edges(16), &[15, 16, 17, 31, 32, 255, 256], &[0, 1]));
    OpsKernel {
        name: "int16",
        inputs: &[Elem::B16, Elem::B16, Elem::B16],
        out: Elem::B16,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

#[test]
fn shifts_clamp_amounts_to_the_width() {
    let mut slots = Vec::new();
    for (op, t) in [("shl.b64", u(64)), ("shr.b64", u(64)), ("shr.u64", u(64)), ("shr.s64", s(64))]
    {
        let f = if op.starts_with("shl") { shl } else { shr };
        slots.push(slot(format!("{op} a, b"), move |x| bits(f(t, x.a, x.b))));
    }
    for (op, t) in [("shl.b32", u(32)), ("shr.b32", u(32)), ("shr.u32", u(32)), ("shr.s32", s(32))]
    {
        let f = if op.starts_with("shl") { shl } else { shr };
        slots.push(slot(format!("{op} c, b"), move |x| bits(f(t, x.c, x.b))));
    }
    slots.extend([
        slot("shl.b64 a, 64", |x| bits(shl(u(64), x.a, 64))),
        slot("shr.s64 a, 64", |x| bits(shr(s(64), x.a, 64))),
        slot("shr.u64 a, 63", |x| bits(shr(u(64), x.a, 63))),
        slot("shl.b32 c, 32", |x| bits(shl(u(32), x.c, 32))),
        slot("shr.s32 c, 255", |x| bits(shr(s(32), x.c, 255))),
        slot("shr.u32 c, 31", |x| bits(shr(u(32), x.c, 31))),
    ]);
    let mut amounts = vec![0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 255, 256, 257];
    amounts.extend([0x7fff_ffff, 0x8000_0000, 0xffff_ffff]);
    let mut cases = pairs(&int_edges(64), &amounts, &int_edges(32));
    cases.extend(random(5, 300, |r| {
        In::new(r.next_u64(), (r.next_u32() % 80) as u64, r.next_u32() as u64)
    }));
    OpsKernel {
        name: "shift",
        inputs: &[Elem::B64, Elem::B32, Elem::B32],
        out: Elem::B64,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

#[test]
fn bit_field_extract_and_insert() {
    // c = pos | len << 32.
    let (pos, len) = (|x: In| lo32(x.c), |x: In| hi32(x.c));
    let slots = vec![
        slot("bfe.u32 a.lo, pos, len", move |x| bits(bfe(u(32), x.a, pos(x), len(x)))),
        slot("bfe.s32 a.lo, pos, len", move |x| bits(bfe(s(32), x.a, pos(x), len(x)))),
        slot("bfe.u64 a, pos, len", move |x| bits(bfe(u(64), x.a, pos(x), len(x)))),
        slot("bfe.s64 a, pos, len", move |x| bits(bfe(s(64), x.a, pos(x), len(x)))),
        slot("bfi.b32 a.lo, b.lo, pos, len", move |x| bits(bfi(u(32), x.a, x.b, pos(x), len(x)))),
        slot("bfi.b64 a, b, pos, len", move |x| bits(bfi(u(64), x.a, x.b, pos(x), len(x)))),
        slot("bfe.s32 a.lo, 28, 8", |x| bits(bfe(s(32), x.a, 28, 8))),
        slot("bfe.s64 a, 56, 255", |x| bits(bfe(s(64), x.a, 56, 255))),
        slot("bfi.b64 a, b, 60, 8", |x| bits(bfi(u(64), x.a, x.b, 60, 8))),
    ];
    // Positions and lengths: 0, inside, the widths and past them, and values >= 256
    // (taken mod 256).
    let fields = [0, 1, 4, 8, 24, 31, 32, 33, 63, 64, 65, 200, 255, 256, 257, 0x104, 0xffff_ffff];
    let values = [
        0,
        u64::MAX,
        0x8000_0000_0000_0000,
        0x0123_4567_89ab_cdef,
        0xfedc_ba98_7654_3210,
        0x8000_0000,
        0x7fff_ffff,
    ];
    let mut cases = Vec::new();
    for (i, &a) in values.iter().enumerate() {
        for &p in &fields {
            for &l in &fields {
                let b = values[(i + 3) % values.len()];
                cases.push(In::new(a, b, p | l << 32));
            }
        }
    }
    cases.extend(random(6, 300, |r| {
        let (p, l) = (r.next_u32() % 70, r.next_u32() % 70);
        In::new(r.next_u64(), r.next_u64(), p as u64 | (l as u64) << 32)
    }));
    OpsKernel {
        name: "bitfield",
        inputs: &[Elem::B64, Elem::B64, Elem::B64],
        out: Elem::B64,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

#[test]
fn integer_setp_combine_and_predicate_logic() {
    let p = |v: bool| bits(v as u64);
    let (c0, c1) = (|x: In| x.c & 1 == 1, |x: In| x.c & 2 == 2);
    let mut slots = Vec::new();
    for (n, args) in [(32, "a.lo, b.lo"), (64, "a, b")] {
        for (ty, t, cmps) in [
            ("s", s(n), "eq ne lt le gt ge"),
            ("u", u(n), "eq ne lt le gt ge lo ls hi hs"),
            ("b", u(n), "eq ne"),
        ] {
            for cmp in cmps.split(' ') {
                let name = format!("setp.{cmp}.{ty}{n} {args}");
                slots.push(slot(name, move |x| p(icmp(t, cmp, x.a, x.b))));
            }
        }
    }
    for (cmp, ty, t) in [
        ("lt", "s16", s(16)),
        ("ge", "s16", s(16)),
        ("lo", "u16", u(16)),
        ("hs", "u16", u(16)),
        ("ne", "b16", u(16)),
    ] {
        slots.push(slot(format!("setp.{cmp}.{ty} a.h0, b.h0"), move |x| p(icmp(t, cmp, x.a, x.b))));
    }
    slots.extend([
        slot("setp.eq.s32 a.lo, -1", move |x| p(icmp(s(32), "eq", x.a, u64::MAX))),
        slot("setp.hi.u64 a, 0x8000000000000000", move |x| p(x.a > 1 << 63)),
        slot("setp.lt.and.s32 a.lo, b.lo, c.bit0", move |x| {
            p(combine("and", icmp(s(32), "lt", x.a, x.b), c0(x)))
        }),
        slot("setp.lt.or.s32 a.lo, b.lo, !c.bit0", move |x| {
            p(combine("or", icmp(s(32), "lt", x.a, x.b), !c0(x)))
        }),
        slot("setp.lt.xor.u32 a.lo, b.lo, c.bit0", move |x| {
            p(combine("xor", icmp(u(32), "lt", x.a, x.b), c0(x)))
        }),
        slot("setp.ge.and.s64 a, b, !c.bit0", move |x| {
            p(combine("and", icmp(s(64), "ge", x.a, x.b), !c0(x)))
        }),
        slot("setp.ne.xor.b64 a, b, !c.bit0", move |x| {
            p(combine("xor", icmp(u(64), "ne", x.a, x.b), !c0(x)))
        }),
        // Both destinations: `q = BoolOp(!t, c)`; without a BoolOp, `q = !t`.
        slot("setp.lt.s32 p|q, a.lo, b.lo .p", move |x| p(icmp(s(32), "lt", x.a, x.b))),
        slot("setp.lt.s32 p|q, a.lo, b.lo .q", move |x| p(!icmp(s(32), "lt", x.a, x.b))),
        slot("setp.hi.or.u64 p|q, a, b, c.bit0 .p", move |x| {
            p(combine("or", icmp(u(64), "hi", x.a, x.b), c0(x)))
        }),
        slot("setp.hi.or.u64 p|q, a, b, c.bit0 .q", move |x| {
            p(combine("or", !icmp(u(64), "hi", x.a, x.b), c0(x)))
        }),
        slot("setp.le.and.s64 p|q, a, b, !c.bit0 .p", move |x| {
            p(combine("and", icmp(s(64), "le", x.a, x.b), !c0(x)))
        }),
        slot("setp.le.and.s64 _|q, a, b, !c.bit0 .q", move |x| {
            p(combine("and", !icmp(s(64), "le", x.a, x.b), !c0(x)))
        }),
        slot("setp.gt.xor.s32 p|_, a.lo, b.lo, c.bit1", move |x| {
            p(combine("xor", icmp(s(32), "gt", x.a, x.b), c1(x)))
        }),
        // Predicate logic (§9.7.8.1-4 on `.pred`), x = a.lo < b.lo (signed).
        slot("and.pred x, c.bit1", move |x| p(icmp(s(32), "lt", x.a, x.b) && c1(x))),
        slot("or.pred x, c.bit1", move |x| p(icmp(s(32), "lt", x.a, x.b) || c1(x))),
        slot("xor.pred x, c.bit1", move |x| p(icmp(s(32), "lt", x.a, x.b) != c1(x))),
        slot("not.pred x", move |x| p(!icmp(s(32), "lt", x.a, x.b))),
    ]);
    let edges = int_edges(64);
    let mut cases = pairs(&edges, &edges, &[0, 1, 2, 3]);
    // Values close to each other, so that equal halves and small differences are common.
    cases.extend(random(7, 400, |r| {
        let a = random_int(r, 64);
        let b = if r.next_u32() % 2 == 0 { a ^ (1 << (r.next_u32() % 64)) } else { a };
        In::new(a, b, (r.next_u32() % 4) as u64)
    }));
    OpsKernel {
        name: "setp_int",
        inputs: &[Elem::B64, Elem::B64, Elem::B32],
        out: Elem::B32,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
}

#[test]
fn cvt_between_integer_types() {
    let mut slots = Vec::new();
    for dst in INT_TYPES {
        for src in INT_TYPES {
            if dst == src {
                continue;
            }
            let (d, sname) = (dst.name(), src.name());
            slots.push(slot(format!("cvt.{d}.{sname} a"), move |x| {
                bits(cvt_int(dst, src, false, x.a))
            }));
            // `.sat` is legal only where the destination range does not contain the
            // source range (§9.7.9.21).
            if dst.min() > src.min() || dst.max() < src.max() {
                slots.push(slot(format!("cvt.sat.{d}.{sname} a"), move |x| {
                    bits(cvt_int(dst, src, true, x.a))
                }));
            }
        }
    }
    // Every type's limits and their neighbours, as 64-bit patterns.
    let mut values: Vec<u64> = vec![0, 1, 2, u64::MAX, u64::MAX - 1, 0x0123_4567_89ab_cdef];
    for t in INT_TYPES {
        for v in [t.min() - 1, t.min(), t.min() + 1, t.max() - 1, t.max(), t.max() + 1] {
            values.push(v as u64);
        }
    }
    let mut cases: Vec<In> = values.iter().map(|&a| In::new(a, 0, 0)).collect();
    cases.extend(random(8, 300, |r| In::new(random_int(r, 64), 0, 0)));
    OpsKernel {
        name: "cvt_int",
        inputs: &[Elem::B64],
        out: Elem::B64,
        slots,
        cases,
        pending: vec![],
        target: None,
    }
    .run();
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

// ----- conversions involving floats ------------------------------------------------------

/// The integer rounding modifiers of `cvt` (§9.7.9.21, Integer Notes): `.rni` to the
/// nearest integer, ties to even; `.rzi` toward zero; `.rmi` toward negative infinity;
/// `.rpi` toward positive infinity.
const IRNDS: [(Mode, &str); 4] =
    [(Mode::Rn, "rni"), (Mode::Rz, "rzi"), (Mode::Rm, "rmi"), (Mode::Rp, "rpi")];

/// `cvt` float → integer (§9.7.9.21, [`float_ref::to_int`]: rounded, clamped, NaN as the
/// ISA says), extended to the 64-bit destination register.
fn cvt_f2i(dst: Int, src_f64: bool, mode: Mode, x: f64) -> u64 {
    dst.reg64(dst.read(float_ref::to_int(x, mode, dst.bits, dst.signed, src_f64)))
}

/// f32 inputs of the conversions: rounding ties and near-ties, the limits of every
/// integer type and their float neighbours, subnormals, infinities and NaN.
fn f32_cvt_values() -> Vec<u64> {
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
fn f64_cvt_values() -> Vec<u64> {
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
fn zip_cycle(a_values: &[u64], b_values: &[u64]) -> Vec<In> {
    let n = a_values.len().max(b_values.len());
    (0..n).map(|i| In::new(a_values[i % a_values.len()], b_values[i % b_values.len()], 0)).collect()
}

/// A random f32 between 2^-24 and 2^85 in magnitude (so across every integer range).
fn random_f32_bits(r: &mut Rng) -> u64 {
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
fn sat64(x: f64) -> Want {
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
