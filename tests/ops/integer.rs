//! Integer instructions (PTX ISA 9.2 §9.7.1, §9.7.7, §9.7.9.21 integer `cvt`): their CPU
//! references and the tests that run their kernels.

use super::*;

pub(super) const fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// An integer instruction or conversion type (`.uN`/`.bN` or `.sN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Int {
    pub(super) bits: u32,
    pub(super) signed: bool,
}

pub(super) const fn u(bits: u32) -> Int {
    Int { bits, signed: false }
}
pub(super) const fn s(bits: u32) -> Int {
    Int { bits, signed: true }
}

/// Every integer type of `cvt`, in the order of the `cvt_int` kernel.
pub(super) const INT_TYPES: [Int; 8] = [u(8), u(16), u(32), u(64), s(8), s(16), s(32), s(64)];

impl Int {
    pub(super) fn name(self) -> String {
        format!("{}{}", if self.signed { 's' } else { 'u' }, self.bits)
    }
    /// The value of the low `bits` of `x` read at this type.
    pub(super) fn read(self, x: u64) -> i128 {
        let v = x & mask(self.bits);
        if self.signed && v >> (self.bits - 1) & 1 == 1 {
            v as i128 - (1i128 << self.bits)
        } else {
            v as i128
        }
    }
    /// `v` modulo 2^bits, as bits.
    pub(super) fn wrap(self, v: i128) -> u64 {
        (v as u64) & mask(self.bits)
    }
    pub(super) fn min(self) -> i128 {
        if self.signed {
            -(1i128 << (self.bits - 1))
        } else {
            0
        }
    }
    pub(super) fn max(self) -> i128 {
        if self.signed {
            (1i128 << (self.bits - 1)) - 1
        } else {
            (1i128 << self.bits) - 1
        }
    }
    /// `v` (in range) in a 64-bit destination register: "sign-extended to the destination
    /// register width for signed integers, and zero-extended ... for unsigned" (§9.7.9.21
    /// Notes, relaxed type-checking rules of §9.4.1).
    pub(super) fn reg64(self, v: i128) -> u64 {
        let w = self.wrap(v);
        if self.signed {
            s(64).wrap(self.read(w))
        } else {
            w
        }
    }
}

pub(super) fn bits(v: u64) -> Want {
    Want::Bits(v)
}

/// `add` (§9.7.1.1), `sub` (§9.7.1.2): `d = a ± b`, wrapping modulo 2^n.
pub(super) fn add(t: Int, a: u64, b: u64) -> u64 {
    t.wrap(t.read(a) + t.read(b))
}
pub(super) fn sub(t: Int, a: u64, b: u64) -> u64 {
    t.wrap(t.read(a) - t.read(b))
}

/// `mul` (§9.7.1.3): `t = a * b` with 2n bits; `.lo` is `t<n-1..0>`, `.hi` is
/// `t<2n-1..n>`, `.wide` is `t`.
pub(super) fn mul_full(t: Int, a: u64, b: u64) -> u128 {
    if t.signed {
        (t.read(a) * t.read(b)) as u128
    } else {
        (a & mask(t.bits)) as u128 * (b & mask(t.bits)) as u128
    }
}
pub(super) fn mul_lo(t: Int, a: u64, b: u64) -> u64 {
    mul_full(t, a, b) as u64 & mask(t.bits)
}
pub(super) fn mul_hi(t: Int, a: u64, b: u64) -> u64 {
    (mul_full(t, a, b) >> t.bits) as u64 & mask(t.bits)
}
pub(super) fn mul_wide(t: Int, a: u64, b: u64) -> u64 {
    mul_full(t, a, b) as u64 & mask(2 * t.bits)
}

/// `mad` (§9.7.1.4): `.lo`/`.hi` part of `a * b` plus `c` modulo 2^n; `.wide`: the whole
/// product plus the 2n-bit `c` modulo 2^2n.
pub(super) fn mad_lo(t: Int, a: u64, b: u64, c: u64) -> u64 {
    mul_lo(t, a, b).wrapping_add(c) & mask(t.bits)
}
pub(super) fn mad_hi(t: Int, a: u64, b: u64, c: u64) -> u64 {
    mul_hi(t, a, b).wrapping_add(c) & mask(t.bits)
}
pub(super) fn mad_wide(t: Int, a: u64, b: u64, c: u64) -> u64 {
    mul_wide(t, a, b).wrapping_add(c) & mask(2 * t.bits)
}

/// `div` (§9.7.1.8): `d = a / b`, truncating. "Division by zero yields an unspecified,
/// machine-specific value", and so does the overflowing `INT_MIN / -1`; the reference is
/// ptxvk's documented choice (`ir::BinaryOp::Div`): all ones, and `INT_MIN`.
pub(super) fn div(t: Int, a: u64, b: u64) -> u64 {
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
pub(super) fn rem(t: Int, a: u64, b: u64) -> u64 {
    let (x, y) = (t.read(a), t.read(b));
    match y {
        0 => t.wrap(x),
        _ => t.wrap(x % y),
    }
}

/// `min` (§9.7.1.12), `max` (§9.7.1.13): `(a < b) ? a : b`, signed and unsigned differ.
pub(super) fn min(t: Int, a: u64, b: u64) -> u64 {
    t.wrap(t.read(a).min(t.read(b)))
}
pub(super) fn max(t: Int, a: u64, b: u64) -> u64 {
    t.wrap(t.read(a).max(t.read(b)))
}

/// `abs` (§9.7.1.10): `d = |a|`; `|INT_MIN|` does not fit and wraps to `INT_MIN`
/// (two's complement, as documented on `ir::UnaryOp::Abs`).
pub(super) fn abs(t: Int, a: u64) -> u64 {
    t.wrap(t.read(a).abs())
}

/// `neg` (§9.7.1.11): `d = -a` modulo 2^n.
pub(super) fn neg(t: Int, a: u64) -> u64 {
    t.wrap(-t.read(a))
}

/// `not` (§9.7.8.4): `d = ~a`; `cnot` (§9.7.8.5): `d = (a == 0) ? 1 : 0`.
pub(super) fn not(t: Int, a: u64) -> u64 {
    !a & mask(t.bits)
}
pub(super) fn cnot(t: Int, a: u64) -> u64 {
    (a & mask(t.bits) == 0) as u64
}

/// `popc` (§9.7.1.14): the number of one bits, as a `.u32`.
pub(super) fn popc(t: Int, a: u64) -> u64 {
    (a & mask(t.bits)).count_ones() as u64
}

/// `clz` (§9.7.1.15): leading zeros from the most significant bit; 0..=n.
pub(super) fn clz(t: Int, a: u64) -> u64 {
    ((a & mask(t.bits)).leading_zeros() - (64 - t.bits)) as u64
}

/// `brev` (§9.7.1.18): `d[i] = a[msb-i]`.
pub(super) fn brev(t: Int, a: u64) -> u64 {
    (0..t.bits).filter(|i| a >> i & 1 == 1).fold(0, |d, i| d | 1 << (t.bits - 1 - i))
}

/// `shl` (§9.7.8.8): "Shift amounts greater than the register width N are clamped to
/// N"; the amount is an unsigned 32-bit value.
pub(super) fn shl(t: Int, a: u64, amount: u64) -> u64 {
    let n = (amount as u32).min(t.bits);
    if n == t.bits {
        0
    } else {
        (a << n) & mask(t.bits)
    }
}

/// `shr` (§9.7.8.9): signed shifts fill with the sign bit, unsigned and untyped shifts
/// with 0; amounts past the width are clamped to the width.
pub(super) fn shr(t: Int, a: u64, amount: u64) -> u64 {
    let n = (amount as u32).min(t.bits);
    t.wrap(t.read(a) >> n)
}

/// `bfe` (§9.7.1.19), transcribed from the ISA's pseudo-code.
pub(super) fn bfe(t: Int, a: u64, b: u64, c: u64) -> u64 {
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
pub(super) fn bfi(t: Int, a: u64, b: u64, c: u64, d: u64) -> u64 {
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
pub(super) fn icmp(t: Int, cmp: &str, a: u64, b: u64) -> bool {
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
pub(super) fn combine(op: &str, t: bool, c: bool) -> bool {
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
pub(super) fn cvt_int(dst: Int, src: Int, sat: bool, a: u64) -> u64 {
    let v = src.read(a);
    let v = if sat { v.clamp(dst.min(), dst.max()) } else { v };
    dst.reg64(v)
}

type Binary = fn(Int, u64, u64) -> u64;
type Ternary = fn(Int, u64, u64, u64) -> u64;

/// The slots shared by the 16-, 32- and 64-bit integer kernels, in their PTX order.
pub(super) fn arith_slots(n: u32) -> Vec<Slot> {
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
pub(super) fn int_edges(n: u32) -> Vec<u64> {
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

pub(super) fn int_cases(n: u32, seed: u64) -> Vec<In> {
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
