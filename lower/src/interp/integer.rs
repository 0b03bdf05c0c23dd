//! The integer and bit-level operations ([`InstKind::Integer`](crate::ir::InstKind::Integer))
//! modelled directly from the pseudocode and the prose of PTX ISA 9.2 (§9.7.1-3,
//! §9.7.7-8), in 128-bit integers, bit loops and the host's floats, independently of
//! their expansion (`pass::expand_integer`, which uses the core IR's `clz`, `popc`,
//! 64-bit shifts and selects): the pass file tests compare the two.

use crate::ir::{
    BoolOp, CarryOp, CmpOp, FloatFormat, FloatTest, IntegerInst, IntegerOp, PackedOp, PrmtMode,
    RegId, SetSource, Value,
};

/// The registers `i` writes and their values; `read(v, bits)` gives a source's low
/// `bits` bits, `pred` a predicate register.
pub fn eval(
    i: &IntegerInst,
    read: impl Fn(Value, u32) -> u64,
    pred: impl Fn(RegId) -> bool,
) -> Vec<(RegId, u64)> {
    let tys = i.src_tys();
    let x: Vec<u64> = i.srcs.iter().zip(&tys).map(|(&v, t)| read(v, t.bits())).collect();
    let arg = |k: usize| x.get(k).copied().unwrap_or(0);
    let (a, b, c) = (arg(0), arg(1), arg(2));
    let mut out = Vec::new();
    let value = match i.op {
        IntegerOp::AddSat { sub } => {
            let (p, q) = (i64::from(a as u32 as i32), i64::from(b as u32 as i32));
            clamp_s32(if sub { p - q } else { p + q })
        }
        IntegerOp::Relu { max } => {
            let (p, q) = (a as u32 as i32, b as u32 as i32);
            u64::from((if max { p.max(q) } else { p.min(q) }).max(0) as u32)
        }
        IntegerOp::Packed { op, signed, relu } => packed(op, signed, relu, a, b),
        IntegerOp::Carry { op, ty, carry_in, carry_out } => {
            let cin = carry_in.map(|r| read(Value::Reg(r), 32) & 1);
            let (d, cf) = carry(op, ty.bits(), ty.is_signed(), [a, b, c], cin);
            if let Some(r) = carry_out {
                out.push((r, cf));
            }
            d
        }
        IntegerOp::MadHiSat { mul24 } => {
            let (p, q) =
                if mul24 { (sext(a, 24), sext(b, 24)) } else { (sext(a, 32), sext(b, 32)) };
            let product = p * q;
            let high = if mul24 { product >> 16 } else { product >> 32 };
            // The high part is read as an s32 (for mul24, bits 47..16).
            let high = sext(high as u64, 32);
            clamp_s32((high + sext(c, 32)) as i64)
        }
        IntegerOp::Mul24 { signed, hi, mad } => {
            let ext = |v: u64| if signed { sext(v, 24) } else { i128::from(v & 0xff_ffff) };
            let product = ext(a) * ext(b);
            let part = if hi { product >> 16 } else { product };
            let add = if mad { i128::from(c) } else { 0 };
            ((part + add) as u64) & 0xffff_ffff
        }
        IntegerOp::Sad { ty } => {
            let w = ty.bits();
            let (p, q) =
                if ty.is_signed() { (sext(a, w), sext(b, w)) } else { (a as i128, b as i128) };
            (((p - q).unsigned_abs() + c as u128) as u64) & mask(w)
        }
        IntegerOp::Bfind { ty, shiftamt } => bfind(ty.bits(), ty.is_signed(), shiftamt, a),
        IntegerOp::Fns => fns(a as u32, b as u32, a_s32(c)),
        IntegerOp::Bmsk { clamp } => {
            let (start, count) = if clamp { (a.min(32), b.min(32)) } else { (a & 31, b & 31) };
            (start..(start + count).min(32)).fold(0, |m, bit| m | 1 << bit)
        }
        IntegerOp::Szext { clamp, signed } => {
            let n = if clamp { b.min(32) } else { b & 31 };
            match n {
                0 => 0,
                32 => a,
                n if signed => (sext(a, n as u32) as u64) & 0xffff_ffff,
                n => a & mask(n as u32),
            }
        }
        IntegerOp::Prmt { mode } => prmt(mode, a as u32, b as u32, c as u32),
        IntegerOp::Shf { left, clamp } => {
            let n = if clamp { c.min(32) } else { c & 31 };
            let (lo, hi) = (a & 0xffff_ffff, b & 0xffff_ffff);
            let r = match (left, n) {
                (true, 0) => hi,
                (false, 0) => lo,
                (true, 32) => lo,
                (false, 32) => hi,
                (true, n) => (hi << n) | (lo >> (32 - n)),
                (false, n) => (lo >> n) | (hi << (32 - n)),
            };
            r & 0xffff_ffff
        }
        IntegerOp::Lop3 { lut, combine } => {
            let mut d = 0u64;
            for bit in 0..32 {
                let index = ((a >> bit & 1) << 2) | ((b >> bit & 1) << 1) | (c >> bit & 1);
                d |= u64::from(lut >> index & 1) << bit;
            }
            if let Some(cb) = combine {
                let q = pred(cb.with.pred) != cb.with.negate;
                let p = bool_op(cb.with.op, d != 0, q);
                if let Some(r) = cb.dst {
                    out.push((r, u64::from(p)));
                }
            }
            d
        }
        IntegerOp::Dot { pairs, hi, a_signed, b_signed } => {
            let elem = |v: u64, bits: u32, k: u32, signed: bool| {
                let raw = (v >> (bits * k)) & mask(bits);
                if signed {
                    sext(raw, bits)
                } else {
                    i128::from(raw)
                }
            };
            let (a_bits, first) = if pairs == 4 { (8, 0) } else { (16, if hi { 2 } else { 0 }) };
            let sum: i128 = (0..u32::from(pairs))
                .map(|k| elem(a, a_bits, k, a_signed) * elem(b, 8, first + k, b_signed))
                .sum();
            ((sum + i128::from(c)) as u64) & 0xffff_ffff
        }
        IntegerOp::FloatMinMax { max, ftz, nan, abs, xorsign } => {
            float_min_max([max, ftz, nan, abs, xorsign], &x)
        }
        IntegerOp::Copysign { ty } => {
            let sign = 1u64 << (ty.bits() - 1);
            (a & sign) | (b & !sign & mask(ty.bits()))
        }
        IntegerOp::Testp { test, ty } => u64::from(testp(test, ty.bits(), a)),
        IntegerOp::Set { cmp, source, ftz, truth, combine } => {
            let (lanes, lane_bits) = (source.lanes(), truth.lane_bits());
            let mut d = 0u64;
            for k in 0..lanes {
                let holds = match source {
                    SetSource::Scalar(t) => compare_scalar(cmp, t, ftz, a, b),
                    SetSource::Half { format, lanes } => {
                        let lane = |v: u64| {
                            let h = if lanes == 2 { v >> (16 * k) & 0xffff } else { v & 0xffff };
                            half_to_f64(format, ftz, h)
                        };
                        compare_f64(cmp, lane(a), lane(b))
                    }
                };
                let holds = match combine {
                    Some(s) => bool_op(s.op, holds, pred(s.pred) != s.negate),
                    None => holds,
                };
                if holds {
                    d |= truth.value() << (lane_bits * k);
                }
            }
            d
        }
        IntegerOp::HalfSetp { cmp, format, lanes, ftz, combine, q } => {
            let lane = |v: u64, k: u32| {
                let h = if lanes == 2 { v >> (16 * k) & 0xffff } else { v & 0xffff };
                half_to_f64(format, ftz, h)
            };
            let fold = |holds: bool| match combine {
                Some(s) => bool_op(s.op, holds, pred(s.pred) != s.negate),
                None => holds,
            };
            let first = compare_f64(cmp, lane(a, 0), lane(b, 0));
            let second = if lanes == 2 { compare_f64(cmp, lane(a, 1), lane(b, 1)) } else { !first };
            if let Some(r) = q {
                out.push((r, u64::from(fold(second))));
            }
            u64::from(fold(first))
        }
        IntegerOp::Slct { ty, float, ftz } => {
            let pick_a = if float {
                let v = f32::from_bits(c as u32);
                let v = if ftz && v.is_subnormal() { 0.0 } else { v };
                v >= 0.0
            } else {
                c as u32 as i32 >= 0
            };
            (if pick_a { a } else { b }) & mask(ty.bits())
        }
        IntegerOp::CvtPack { bits, signed } => {
            let bits = u32::from(bits);
            let (lo, hi) = if signed {
                (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
            } else {
                (0, (1i64 << bits) - 1)
            };
            let field = |v: u64| (i64::from(v as u32 as i32).clamp(lo, hi) as u64) & mask(bits);
            let mut d = field(b) | field(a) << bits;
            if x.len() == 3 {
                d |= c << (2 * bits);
            }
            d & 0xffff_ffff
        }
        IntegerOp::ApproxDiv { ftz } => approx_div(ftz, a as u32, b as u32),
        IntegerOp::TruncatedMad { sat } => truncated_mad(sat, a, b, c),
    };
    if let Some(d) = i.dst {
        out.insert(0, (d, value & mask(i.op.dst_ty().bits())));
    }
    out
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The low `bits` bits of `v` as a signed integer.
fn sext(v: u64, bits: u32) -> i128 {
    let v = i128::from(v & mask(bits));
    if v >> (bits - 1) & 1 == 1 {
        v - (1i128 << bits)
    } else {
        v
    }
}

fn a_s32(v: u64) -> i64 {
    i64::from(v as u32 as i32)
}

fn clamp_s32(v: i64) -> u64 {
    u64::from(v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32)
}

fn bool_op(op: BoolOp, a: bool, b: bool) -> bool {
    match op {
        BoolOp::And => a & b,
        BoolOp::Or => a | b,
        BoolOp::Xor => a ^ b,
    }
}

/// Each 16-bit lane: the sum wraps, `min`/`max` compare by the element type.
fn packed(op: PackedOp, signed: bool, relu: bool, a: u64, b: u64) -> u64 {
    let mut d = 0;
    for k in 0..2 {
        let lane = |v: u64| {
            let h = v >> (16 * k) & 0xffff;
            if signed {
                sext(h, 16)
            } else {
                i128::from(h)
            }
        };
        let (p, q) = (lane(a), lane(b));
        let mut r = match op {
            PackedOp::Add => p + q,
            PackedOp::Min => p.min(q),
            PackedOp::Max => p.max(q),
        };
        if relu {
            r = r.max(0);
        }
        d |= ((r as u64) & 0xffff) << (16 * k);
    }
    d
}

/// §9.7.2: the exact sum of the two addends and the carry, in 128 bits; the result is
/// its low `w` bits and the carry out bit `w`.
fn carry(op: CarryOp, w: u32, signed: bool, [a, b, c]: [u64; 3], cin: Option<u64>) -> (u64, u64) {
    let product = || {
        if signed {
            (sext(a, w) * sext(b, w)) as u128
        } else {
            u128::from(a & mask(w)) * u128::from(b & mask(w))
        }
    };
    let (x, y) = match op {
        CarryOp::Add | CarryOp::Sub => (u128::from(a & mask(w)), b & mask(w)),
        CarryOp::MadLo => (product() & u128::from(mask(w)), c & mask(w)),
        CarryOp::MadHi => ((product() >> w) & u128::from(mask(w)), c & mask(w)),
    };
    // A subtraction adds the complement and 1 (or CF when it is `subc`).
    let (y, cin) = match op {
        CarryOp::Sub => (!y & mask(w), cin.unwrap_or(1)),
        _ => (y, cin.unwrap_or(0)),
    };
    let sum = x + u128::from(y) + u128::from(cin);
    ((sum as u64) & mask(w), (sum >> w) as u64 & 1)
}

/// §9.7.1.16, bit by bit from the top.
fn bfind(w: u32, signed: bool, shiftamt: bool, a: u64) -> u64 {
    let negative = signed && a >> (w - 1) & 1 == 1;
    let x = if negative { !a & mask(w) } else { a & mask(w) };
    match (0..w).rev().find(|&bit| x >> bit & 1 == 1) {
        Some(pos) if shiftamt => u64::from(w - 1 - pos),
        Some(pos) => u64::from(pos),
        None => 0xffff_ffff,
    }
}

/// §9.7.1.18's pseudocode: a walk from `base`, counting set bits.
fn fns(mask: u32, base: u32, offset: i64) -> u64 {
    let none = 0xffff_ffff;
    if base >= 32 {
        return none;
    }
    if offset == 0 {
        return if mask >> base & 1 == 1 { u64::from(base) } else { none };
    }
    let mut remaining = offset.unsigned_abs();
    let mut pos = i64::from(base);
    while (0..32).contains(&pos) {
        if mask >> pos & 1 == 1 {
            remaining -= 1;
            if remaining == 0 {
                return pos as u64;
            }
        }
        pos += offset.signum();
    }
    none
}

/// §9.7.8.7: the byte index of each result byte, from `c`'s nibbles or the mode's rule.
fn prmt(mode: Option<PrmtMode>, a: u32, b: u32, c: u32) -> u64 {
    let bytes = u64::from(a) | u64::from(b) << 32;
    let byte = |index: u32| (bytes >> (8 * (index & 7)) & 0xff) as u32;
    let ctl = c & 3;
    let mut d = 0u32;
    for k in 0..4u32 {
        let v = match mode {
            None => {
                let sel = c >> (4 * k) & 0xf;
                let v = byte(sel & 7);
                // Bit 3: the byte's sign bit replicated.
                if sel & 8 != 0 {
                    if v & 0x80 != 0 {
                        0xff
                    } else {
                        0
                    }
                } else {
                    v
                }
            }
            Some(PrmtMode::F4e) => byte(ctl + k),
            Some(PrmtMode::B4e) => byte((ctl + 8 - k) % 8),
            Some(PrmtMode::Rc8) => byte(ctl),
            Some(PrmtMode::Ecl) => byte(k.max(ctl)),
            Some(PrmtMode::Ecr) => byte(k.min(ctl)),
            Some(PrmtMode::Rc16) => byte(2 * (ctl & 1) + (k & 1)),
        };
        d |= v << (8 * k);
    }
    u64::from(d)
}

/// §9.7.3.11-12 on host floats: `.abs`, then the minimum or maximum (a NaN gives the
/// other operand, two give the canonical NaN, -0 is below +0), then `.NaN` and
/// `.xorsign`.
fn float_min_max([max, ftz, nan, abs, xorsign]: [bool; 5], x: &[u64]) -> u64 {
    const SIGN: u32 = 1 << 31;
    let load = |v: u64| {
        let bits = if abs { v as u32 & !SIGN } else { v as u32 };
        let f = f32::from_bits(bits);
        if ftz && f.is_subnormal() {
            bits & SIGN
        } else {
            bits
        }
    };
    let pick = |p: u32, q: u32| -> u32 {
        let (fp, fq) = (f32::from_bits(p), f32::from_bits(q));
        match (fp.is_nan(), fq.is_nan()) {
            (true, true) => 0x7fff_ffff,
            (true, false) => q,
            (false, true) => p,
            _ => {
                // Order with -0 below +0: compare values, then signs.
                let p_first = fp < fq || (fp == fq && p & SIGN != 0);
                if p_first != max {
                    p
                } else {
                    q
                }
            }
        }
    };
    let mut r = x.iter().map(|&v| load(v)).reduce(pick).unwrap_or(0);
    if nan && x.iter().any(|&v| f32::from_bits(v as u32).is_nan()) {
        r = 0x7fff_ffff;
    }
    if xorsign {
        let (a, b) = (x.first().copied().unwrap_or(0), x.get(1).copied().unwrap_or(0));
        r |= (a ^ b) as u32 & SIGN;
    }
    u64::from(r)
}

/// `div.approx{.ftz}.f32` (§9.7.3.8): the quotient, correctly rounded (the
/// interpreter's exact model), but for a finite |b| above 2^126: a zero of the sign of
/// `a * b`, or the canonical NaN when `a` is infinite.
fn approx_div(ftz: bool, a: u32, b: u32) -> u64 {
    let divisor = f32::from_bits(b).abs();
    if divisor > 2f32.powi(126) && divisor.is_finite() {
        return match f32::from_bits(a) {
            x if x.is_infinite() => 0x7fc0_0000,
            _ => u64::from((a ^ b) & 0x8000_0000),
        };
    }
    let mode = crate::ir::FloatMode { ftz, ..crate::ir::FloatMode::default() };
    super::arith::binary(crate::ir::BinaryOp::Div, crate::ir::OpTy::F(32), mode, a.into(), b.into())
}

/// PTX ISA 1.x `mad{.sat}.f32` (§9.7.3.6, sm_1x): the product rounded toward zero, then
/// the sum rounded to nearest, both flushing subnormals (the interpreter's exact model
/// of each step).
fn truncated_mad(sat: bool, a: u64, b: u64, c: u64) -> u64 {
    use crate::ir::{BinaryOp, FloatMode, OpTy, Rounding};
    let f32t = OpTy::F(32);
    let product = FloatMode { ftz: true, rounding: Rounding::Zero, ..FloatMode::default() };
    let p = super::arith::binary(BinaryOp::Mul, f32t, product, a, b);
    let sum = FloatMode { ftz: true, sat, rounding: Rounding::Nearest, ..FloatMode::default() };
    super::arith::binary(BinaryOp::Add, f32t, sum, p, c)
}

/// §9.7.3.3 by the host's classification.
fn testp(test: FloatTest, bits: u32, a: u64) -> bool {
    let (finite, infinite, nan, normal, subnormal) = if bits == 32 {
        let f = f32::from_bits(a as u32);
        (f.is_finite(), f.is_infinite(), f.is_nan(), f.is_normal(), f.is_subnormal())
    } else {
        let f = f64::from_bits(a);
        (f.is_finite(), f.is_infinite(), f.is_nan(), f.is_normal(), f.is_subnormal())
    };
    match test {
        FloatTest::Finite => finite,
        FloatTest::Infinite => infinite,
        FloatTest::Number => !nan,
        FloatTest::NotANumber => nan,
        // Zero counts as normal (§9.7.3.3).
        FloatTest::Normal => normal || (finite && !subnormal),
        FloatTest::Subnormal => subnormal,
    }
}

/// `setp`'s comparison (§9.7.7.1) of two scalars of `t`.
fn compare_scalar(cmp: CmpOp, t: crate::ir::OpTy, ftz: bool, a: u64, b: u64) -> bool {
    match t {
        crate::ir::OpTy::F(32) => {
            let f = |v: u64| {
                let x = f32::from_bits(v as u32);
                f64::from(if ftz && x.is_subnormal() { 0.0 } else { x })
            };
            compare_f64(cmp, f(a), f(b))
        }
        crate::ir::OpTy::F(_) => compare_f64(cmp, f64::from_bits(a), f64::from_bits(b)),
        t => {
            let w = t.bits();
            let (p, q) =
                if t.is_signed() { (sext(a, w), sext(b, w)) } else { (a as i128, b as i128) };
            match cmp {
                CmpOp::Eq | CmpOp::Equ => p == q,
                CmpOp::Ne | CmpOp::Neu => p != q,
                CmpOp::Lt | CmpOp::Ltu => p < q,
                CmpOp::Le | CmpOp::Leu => p <= q,
                CmpOp::Gt | CmpOp::Gtu => p > q,
                CmpOp::Ge | CmpOp::Geu => p >= q,
                CmpOp::Num => true,
                CmpOp::Nan => false,
            }
        }
    }
}

/// A comparison of two doubles: the `u` forms are true when either is NaN.
fn compare_f64(cmp: CmpOp, a: f64, b: f64) -> bool {
    let unordered = a.is_nan() || b.is_nan();
    match cmp {
        CmpOp::Eq => a == b,
        CmpOp::Ne => !unordered && a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::Equ => unordered || a == b,
        CmpOp::Neu => a != b,
        CmpOp::Ltu => unordered || a < b,
        CmpOp::Leu => unordered || a <= b,
        CmpOp::Gtu => unordered || a > b,
        CmpOp::Geu => unordered || a >= b,
        CmpOp::Num => !unordered,
        CmpOp::Nan => unordered,
    }
}

/// The value of an f16 or bf16 (after `.ftz`), exactly.
fn half_to_f64(format: FloatFormat, ftz: bool, h: u64) -> f64 {
    let neg = h & 0x8000 != 0;
    let (e_bits, m_bits) = if format == FloatFormat::Bf16 { (8, 7) } else { (5, 10) };
    let e = (h >> m_bits) & ((1 << e_bits) - 1);
    let m = h & ((1 << m_bits) - 1);
    let bias = (1i32 << (e_bits - 1)) - 1;
    let magnitude = if e == (1 << e_bits) - 1 {
        if m == 0 {
            f64::INFINITY
        } else {
            f64::NAN
        }
    } else if e == 0 {
        if ftz {
            0.0
        } else {
            m as f64 * 2f64.powi(1 - bias - m_bits)
        }
    } else {
        (m as f64 + (1u64 << m_bits) as f64) * 2f64.powi(e as i32 - bias - m_bits)
    };
    if neg {
        -magnitude
    } else {
        magnitude
    }
}
