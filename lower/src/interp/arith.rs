//! The value semantics of the IR's arithmetic, as pure functions on bit patterns
//! (zero-extended to 64 bits): integer operations (PTX ISA 9.2 §9.7.1, §9.7.8), float
//! operations with their rounding, `.ftz` and `.sat` (§9.7.3), comparisons (§9.7.7)
//! and conversions (§9.7.9.21), each as [`crate::ir`] documents it.

use super::float::{self, Exact, Mode, Num, F32, F64};
use crate::ir::{BinaryOp, BoolOp, CmpOp, FloatFormat, FloatMode, OddOp, OpTy, Rounding, UnaryOp};

/// The mask of the low `bits` bits.
pub fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// `v`'s low `bits` bits, sign-extended to 64.
pub fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        let s = 64 - bits;
        ((v << s) as i64) >> s
    }
}

/// The format of a float operation type.
pub fn format(ty: OpTy) -> FloatFormat {
    if ty.bits() == 64 {
        F64
    } else {
        F32
    }
}

/// A float operand, flushed first when `ftz` (which applies to f32 only, §9.7.3).
fn operand(ty: OpTy, ftz: bool, bits: u64) -> Num {
    let f = format(ty);
    let bits = if ftz && f == F32 { float::flush(f, bits) } else { bits };
    float::decode(f, bits)
}

/// The result's `.ftz` and `.sat` (NaN to +0, clamp to [0, 1]).
fn finish(ty: OpTy, mode: FloatMode, bits: u64) -> u64 {
    let f = format(ty);
    let bits = if mode.ftz && f == F32 { float::flush(f, bits) } else { bits };
    if !mode.sat {
        return bits;
    }
    match float::decode(f, bits) {
        Num::Nan => 0,
        Num::Inf(true) => 0,
        Num::Fin(x) if x.neg || x.is_zero() => 0,
        Num::Inf(false) => one(f),
        Num::Fin(x) if x.compare(Exact::int(false, 1)).is_gt() => one(f),
        Num::Fin(_) => bits,
    }
}

fn one(f: FloatFormat) -> u64 {
    float::round(Exact::int(false, 1), f, Mode::Nearest, false)
}

/// The mode's rounding, which [`FloatMode::rounding`] gives for the operations that
/// carry one.
fn dir(mode: FloatMode) -> Mode {
    mode.rounding.into()
}

pub fn unary(op: UnaryOp, ty: OpTy, mode: FloatMode, a: u64) -> u64 {
    let bits = ty.bits();
    let m = mask(bits);
    if ty.is_float() {
        return float_unary(op, ty, mode, a);
    }
    let a = a & m;
    match op {
        UnaryOp::Not => !a & m,
        UnaryOp::Neg => a.wrapping_neg() & m,
        UnaryOp::Abs => (sext(a, bits).wrapping_abs() as u64) & m,
        UnaryOp::Popc => u64::from(a.count_ones()),
        UnaryOp::Clz => u64::from(a.leading_zeros() - (64 - bits)),
        UnaryOp::Brev => a.reverse_bits() >> (64 - bits),
        UnaryOp::Cnot => u64::from(a == 0),
        // Float-only operations on an integer type do not pass the verifier.
        _ => a,
    }
}

fn float_unary(op: UnaryOp, ty: OpTy, mode: FloatMode, a: u64) -> u64 {
    let f = format(ty);
    let sign = float::Fmt::of(f).sign_bit();
    // `.ftz` flushes f64 values in `rcp.approx.ftz.f64` and `rsqrt.approx.ftz.f64` only
    // (PTX ISA 9.2 §9.7.3.9, §9.7.3.16).
    let f64_ftz = mode.ftz && f == F64 && matches!(op, UnaryOp::Rcp | UnaryOp::Rsqrt);
    if f64_ftz {
        let r = float_unary(op, ty, FloatMode { ftz: false, ..mode }, float::flush(f, a));
        return float::flush(f, r);
    }
    let a = if mode.ftz && f == F32 { float::flush(f, a) } else { a };
    let x = float::decode(f, a);
    let r = match op {
        // Sign operations are exact on every pattern, NaNs too.
        UnaryOp::Neg => a ^ sign,
        UnaryOp::Abs => a & !sign,
        UnaryOp::Sqrt => float::sqrt_num(x, f, dir(mode)),
        UnaryOp::Rcp => float::div_num(float::decode(f, one(f)), x, f, dir(mode)),
        _ => approx(op, f, x),
    };
    finish(ty, mode, r)
}

/// The `.approx` functions, computed in f64 and rounded once (the ISA bounds their
/// error, §9.7.3.14-22; ptxvk computes them so).
pub(super) fn approx(op: UnaryOp, f: FloatFormat, x: Num) -> u64 {
    let v = float::to_host(x);
    let r = match op {
        UnaryOp::Ex2 => v.exp2(),
        UnaryOp::Lg2 => v.log2(),
        UnaryOp::Sin => v.sin(),
        UnaryOp::Cos => v.cos(),
        UnaryOp::Rsqrt => 1.0 / v.sqrt(),
        UnaryOp::Tanh => v.tanh(),
        _ => v,
    };
    float::round_num(float::from_host(r), f, Mode::Nearest, false)
}

/// A binary operation. `MulWide` gives the double-width product.
pub fn binary(op: BinaryOp, ty: OpTy, mode: FloatMode, a: u64, b: u64) -> u64 {
    if ty.is_float() {
        return float_binary(op, ty, mode, a, b);
    }
    let bits = ty.bits();
    let m = mask(bits);
    let (a, b) = (a & m, b & m);
    let signed = ty.is_signed();
    let (sa, sb) = (sext(a, bits), sext(b, bits));
    let r = match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::MulHi => (wide_product(signed, bits, a, b) >> bits) as u64,
        BinaryOp::MulWide => return wide_product(signed, bits, a, b) as u64 & mask(2 * bits),
        BinaryOp::Div => match (signed, b) {
            (_, 0) => m,
            (true, _) => sa.wrapping_div(sb) as u64,
            (false, _) => a / b,
        },
        BinaryOp::Rem => match (signed, b) {
            (_, 0) => a,
            (true, _) => sa.wrapping_rem(sb) as u64,
            (false, _) => a % b,
        },
        BinaryOp::Min if signed => sa.min(sb) as u64,
        BinaryOp::Max if signed => sa.max(sb) as u64,
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::And => a & b,
        BinaryOp::Or => a | b,
        BinaryOp::Xor => a ^ b,
        // Shift amounts are unsigned 32-bit values (§9.7.8.7-8).
        BinaryOp::Shl => {
            let n = b & 0xffff_ffff;
            if n >= u64::from(bits) {
                0
            } else {
                a << n
            }
        }
        BinaryOp::Shr => {
            let n = (b & 0xffff_ffff).min(u64::from(bits) - 1);
            let all = (b & 0xffff_ffff) >= u64::from(bits);
            match (signed, all) {
                (true, _) => (sa >> n) as u64,
                (false, true) => 0,
                (false, false) => a >> n,
            }
        }
    };
    r & m
}

/// The exact product of two `bits`-bit operands, as 128 bits.
fn wide_product(signed: bool, bits: u32, a: u64, b: u64) -> u128 {
    if signed {
        (i128::from(sext(a, bits)) * i128::from(sext(b, bits))) as u128
    } else {
        u128::from(a) * u128::from(b)
    }
}

fn float_binary(op: BinaryOp, ty: OpTy, mode: FloatMode, a: u64, b: u64) -> u64 {
    let f = format(ty);
    let (x, y) = (operand(ty, mode.ftz, a), operand(ty, mode.ftz, b));
    let r = match op {
        BinaryOp::Add => float::add_num(x, y, f, dir(mode)),
        BinaryOp::Sub => float::add_num(x, float::neg_num(y), f, dir(mode)),
        BinaryOp::Mul => float::round_num(float::mul_num(x, y), f, dir(mode), false),
        BinaryOp::Div => float::div_num(x, y, f, dir(mode)),
        BinaryOp::Min | BinaryOp::Max => min_max(op == BinaryOp::Max, f, x, y),
        _ => f.nan(),
    };
    finish(ty, mode, r)
}

/// `min`/`max` (§9.7.3.10-11): a NaN operand gives the other; -0 is below +0.
pub fn min_max(max: bool, f: FloatFormat, x: Num, y: Num) -> u64 {
    let key = |n: Num| match n {
        Num::Inf(neg) => (if neg { -2 } else { 2 }, None),
        Num::Fin(e) => (if e.neg { -1 } else { 1 }, Some(e)),
        Num::Nan => (0, None),
    };
    let less = |p: Num, q: Num| -> bool {
        let ((sp, ep), (sq, eq)) = (key(p), key(q));
        match (ep, eq) {
            (Some(a), Some(b)) if a.neg == b.neg => {
                let c = a.compare(b);
                c.is_lt() || (c.is_eq() && a.neg && !b.neg)
            }
            _ => sp < sq,
        }
    };
    let pick = match (x, y) {
        (Num::Nan, Num::Nan) => return f.nan(),
        (Num::Nan, _) => y,
        (_, Num::Nan) => x,
        _ if less(x, y) != max => x,
        _ => y,
    };
    float::round_num(pick, f, Mode::Nearest, false)
}

/// Integer `mad`: `(a*b).part + c`, `c` and the result twice as wide for `MulWide`.
pub fn mad(part: BinaryOp, ty: OpTy, a: u64, b: u64, c: u64) -> u64 {
    let product = binary(part, ty, FloatMode::default(), a, b);
    let width = if part == BinaryOp::MulWide { 2 * ty.bits() } else { ty.bits() };
    product.wrapping_add(c) & mask(width)
}

/// `bfe` (§9.7.8.16): `len` bits from `pos`, each taken mod 256; signed types fill with
/// the last extracted bit (the sign bit when `pos` is past it).
pub fn bfe(ty: OpTy, a: u64, pos: u64, len: u64) -> u64 {
    let bits = u64::from(ty.bits());
    let (pos, len) = (pos & 0xff, len & 0xff);
    let msb = bits - 1;
    let sbit = if ty.is_signed() && len != 0 { (a >> (pos + len - 1).min(msb)) & 1 } else { 0 };
    let mut d = 0u64;
    for i in 0..bits {
        let bit = if i < len && pos + i <= msb { (a >> (pos + i)) & 1 } else { sbit };
        d |= bit << i;
    }
    d
}

/// `bfi` (§9.7.8.17): the low `len` bits of `a` into `b` at `pos`.
pub fn bfi(ty: OpTy, a: u64, b: u64, pos: u64, len: u64) -> u64 {
    let bits = u64::from(ty.bits());
    let (pos, len) = (pos & 0xff, len & 0xff);
    let mut f = b & mask(ty.bits());
    for i in 0..len {
        if pos + i >= bits {
            break;
        }
        f = (f & !(1 << (pos + i))) | (((a >> i) & 1) << (pos + i));
    }
    f
}

pub fn fma(ty: OpTy, mode: FloatMode, a: u64, b: u64, c: u64) -> u64 {
    let f = format(ty);
    let (x, y, z) = (operand(ty, mode.ftz, a), operand(ty, mode.ftz, b), operand(ty, mode.ftz, c));
    finish(ty, mode, float::fma_num(x, y, z, f, dir(mode)))
}

/// The comparison of `setp` (§9.7.7.1-2): `u` variants are true when an operand is NaN.
pub fn compare(cmp: CmpOp, ty: OpTy, ftz: bool, a: u64, b: u64) -> bool {
    if !ty.is_float() {
        let bits = ty.bits();
        let ord = if ty.is_signed() {
            sext(a, bits).cmp(&sext(b, bits))
        } else {
            (a & mask(bits)).cmp(&(b & mask(bits)))
        };
        return ordered(cmp, ord).unwrap_or(cmp == CmpOp::Num);
    }
    let (x, y) = (operand(ty, ftz, a), operand(ty, ftz, b));
    let value = |n: Num| match n {
        Num::Inf(neg) => Some((if neg { -1 } else { 1 }, None)),
        Num::Fin(e) => Some((0, Some(e))),
        Num::Nan => None,
    };
    let ord = match (value(x), value(y)) {
        (Some((ix, ex)), Some((iy, ey))) => match (ex, ey) {
            (Some(p), Some(q)) => Some(p.compare(q)),
            _ => Some(ix.cmp(&iy)),
        },
        _ => None,
    };
    match (ord, cmp) {
        (None, CmpOp::Nan) => true,
        (None, CmpOp::Equ | CmpOp::Neu | CmpOp::Ltu | CmpOp::Leu | CmpOp::Gtu | CmpOp::Geu) => true,
        (None, _) => false,
        (Some(o), c) => ordered(c, o).unwrap_or(c == CmpOp::Num),
    }
}

/// An ordered comparison's result; `None` for `num`/`nan`.
fn ordered(cmp: CmpOp, o: std::cmp::Ordering) -> Option<bool> {
    Some(match cmp {
        CmpOp::Eq | CmpOp::Equ => o.is_eq(),
        CmpOp::Ne | CmpOp::Neu => o.is_ne(),
        CmpOp::Lt | CmpOp::Ltu => o.is_lt(),
        CmpOp::Le | CmpOp::Leu => o.is_le(),
        CmpOp::Gt | CmpOp::Gtu => o.is_gt(),
        CmpOp::Ge | CmpOp::Geu => o.is_ge(),
        CmpOp::Num | CmpOp::Nan => return None,
    })
}

pub fn bool_op(op: BoolOp, a: bool, b: bool) -> bool {
    match op {
        BoolOp::And => a && b,
        BoolOp::Or => a || b,
        BoolOp::Xor => a != b,
    }
}

/// The exact value of an integer of type `ty`.
fn int_value(ty: OpTy, v: u64) -> Exact {
    if ty.is_signed() {
        let s = sext(v, ty.bits());
        Exact::int(s < 0, u128::from(s.unsigned_abs()))
    } else {
        Exact::int(false, u128::from(v & mask(ty.bits())))
    }
}

/// `cvt` (§9.7.9.21), as [`crate::ir::InstKind::Convert`] documents it.
pub fn convert(to: OpTy, from: OpTy, rounding: Option<Rounding>, mode: FloatMode, v: u64) -> u64 {
    match (to.is_float(), from.is_float()) {
        (false, false) => int_to_int(to, from, mode.sat, v),
        (false, true) => float_to_int(to, from, rounding, mode.ftz, v),
        (true, false) => {
            let x = int_value(from, v);
            let mode_r = rounding.unwrap_or_default().into();
            finish(to, mode, float::round(x, format(to), mode_r, false))
        }
        // `cvt.ftz`/`cvt.sat` of a float to itself without a rounding only flushes and
        // clamps: the bits of a NaN pass unchanged, as the emitter's flush keeps them
        // (`pass::float_modifiers` makes these of every `.ftz` and `.sat`).
        (true, true) if to == from && rounding.is_none() => finish(to, mode, v & mask(to.bits())),
        (true, true) => {
            let x = operand(from, mode.ftz, v);
            let r = match rounding {
                Some(r) if to == from => float::round_integral(x, format(to), r.into()),
                r => float::round_num(x, format(to), r.unwrap_or_default().into(), false),
            };
            finish(to, mode, r)
        }
    }
}

fn int_to_int(to: OpTy, from: OpTy, sat: bool, v: u64) -> u64 {
    let x: i128 = if from.is_signed() {
        i128::from(sext(v, from.bits()))
    } else {
        i128::from(v & mask(from.bits()))
    };
    let bits = to.bits();
    if !sat {
        return (x as u64) & mask(bits);
    }
    let (lo, hi) = if to.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    (x.clamp(lo, hi) as u64) & mask(bits)
}

fn float_to_int(to: OpTy, from: OpTy, rounding: Option<Rounding>, ftz: bool, v: u64) -> u64 {
    let bits = to.bits();
    let (lo, hi) = if to.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let n = match operand(from, ftz, v) {
        Num::Nan => {
            return if from.bits() == 64 || bits == 64 { 1 << (bits - 1) } else { 0 };
        }
        Num::Inf(neg) => {
            if neg {
                lo
            } else {
                hi
            }
        }
        Num::Fin(x) => float::to_integer(x, rounding.unwrap_or(Rounding::Zero).into()),
    };
    (n.clamp(lo, hi) as u64) & mask(bits)
}

/// [`crate::ir::InstKind::Narrow`]: `relu` turns negative results (and -0) into +0.
pub fn narrow(
    to: FloatFormat,
    from: OpTy,
    rounding: Rounding,
    satfinite: bool,
    relu: bool,
    v: u64,
) -> u64 {
    let x = float::decode(format(from), v);
    let r = float::round_num(x, to, rounding.into(), satfinite);
    let f = float::Fmt::of(to);
    if relu && !matches!(x, Num::Nan) && r & f.sign_bit() != 0 {
        return 0;
    }
    if to == FloatFormat::Tf32 {
        // A TF32 result is an f32 pattern with 13 zero mantissa bits (the IR's
        // `Narrow`, as the emitter makes it), NaN the f32 NaN.
        return if matches!(x, Num::Nan) { 0x7fff_ffff } else { r << 13 };
    }
    r
}

/// [`crate::ir::InstKind::IntToFloat`].
pub fn int_to_float(to: FloatFormat, from: OpTy, rounding: Rounding, v: u64) -> u64 {
    float::round(int_value(from, v), to, rounding.into(), false)
}

/// [`crate::ir::InstKind::Widen`]: exact, a NaN the f32 NaN.
pub fn widen(from: FloatFormat, v: u64) -> u64 {
    // A TF32 source is an f32 pattern (the emitter's bitcast).
    let from = if from == FloatFormat::Tf32 { F32 } else { from };
    float::round_num(float::decode(from, v), F32, Mode::Nearest, false)
}

/// [`crate::ir::InstKind::RoundToOdd`]: the f32 operation rounded to odd in f64.
pub fn round_to_odd(op: OddOp, a: u64, b: u64, c: u64) -> u64 {
    let (x, y, z) = (float::decode(F32, a), float::decode(F32, b), float::decode(F32, c));
    match op {
        OddOp::Add => float::add_num(x, y, F64, Mode::Odd),
        OddOp::Sub => float::add_num(x, float::neg_num(y), F64, Mode::Odd),
        OddOp::Mul => float::round_num(float::mul_num(x, y), F64, Mode::Odd, false),
        OddOp::Fma => float::fma_num(x, y, z, F64, Mode::Odd),
    }
}

/// A 16-bit lane operation of the half atomics: `add` to nearest with subnormals kept,
/// or `min`/`max`.
pub fn half_lanes(format: FloatFormat, lanes: u32, old: u64, src: u64, op: Option<bool>) -> u64 {
    let mut out = 0;
    for l in 0..lanes {
        let (a, b) = ((old >> (16 * l)) & 0xffff, (src >> (16 * l)) & 0xffff);
        let (x, y) = (float::decode(format, a), float::decode(format, b));
        let r = match op {
            None => float::add_num(x, y, format, Mode::Nearest),
            Some(max) => min_max(max, format, x, y),
        };
        out |= (r & 0xffff) << (16 * l);
    }
    out
}

/// `atom.add.f32`/`.f64` to nearest; `ftz` flushes inputs and result.
pub fn float_add(ty: OpTy, ftz: bool, a: u64, b: u64) -> u64 {
    let mode = FloatMode { ftz, ..FloatMode::default() };
    float_binary(BinaryOp::Add, ty, mode, a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    const U32: OpTy = OpTy::U(32);
    const S32: OpTy = OpTy::S(32);

    #[test]
    fn integer_edge_cases_from_the_isa() {
        let d = FloatMode::default();
        assert_eq!(binary(BinaryOp::Div, U32, d, 7, 0), 0xffff_ffff);
        assert_eq!(binary(BinaryOp::Div, S32, d, 0x8000_0000, 0xffff_ffff), 0x8000_0000);
        assert_eq!(binary(BinaryOp::Rem, S32, d, 0x8000_0000, 0xffff_ffff), 0);
        assert_eq!(binary(BinaryOp::Rem, S32, d, (-7i32) as u32 as u64, 2), (-1i32) as u32 as u64);
        assert_eq!(binary(BinaryOp::Shr, S32, d, 0x8000_0000, 40), 0xffff_ffff);
        assert_eq!(binary(BinaryOp::Shl, U32, d, 1, 32), 0);
        assert_eq!(binary(BinaryOp::MulHi, S32, d, 0xffff_ffff, 0xffff_ffff), 0);
        assert_eq!(binary(BinaryOp::MulWide, S32, d, 0xffff_fffe, 3), (-6i64) as u64);
        assert_eq!(unary(UnaryOp::Abs, S32, d, 0x8000_0000), 0x8000_0000);
        assert_eq!(unary(UnaryOp::Clz, U32, d, 0), 32);
        assert_eq!(unary(UnaryOp::Brev, U32, d, 1), 0x8000_0000);
        // bfe.s32 of 0xf0 from bit 4, 4 bits: 0b1111 sign-extended.
        assert_eq!(bfe(S32, 0xf0, 4, 4), 0xffff_ffff);
        assert_eq!(bfe(U32, 0xf0, 4, 4), 0xf);
        assert_eq!(bfe(S32, 0x8000_0000, 40, 3), 0xffff_ffff);
        assert_eq!(bfi(U32, 0b101, 0xffff_0000, 2, 3), 0xffff_0014);
    }

    #[test]
    fn conversions_saturate_and_round() {
        let d = FloatMode::default();
        let f = |x: f32| u64::from(x.to_bits());
        assert_eq!(convert(S32, OpTy::F(32), Some(Rounding::Nearest), d, f(2.5)), 2);
        assert_eq!(
            convert(S32, OpTy::F(32), Some(Rounding::Down), d, f(-2.5)),
            (-3i32) as u32 as u64
        );
        assert_eq!(convert(U32, OpTy::F(32), Some(Rounding::Zero), d, f(-5.0)), 0);
        assert_eq!(convert(S32, OpTy::F(32), Some(Rounding::Zero), d, f(f32::NAN)), 0);
        assert_eq!(
            convert(S32, OpTy::F(64), Some(Rounding::Zero), d, f64::NAN.to_bits()),
            0x8000_0000
        );
        assert_eq!(convert(OpTy::U(8), S32, None, FloatMode { sat: true, ..d }, 300), 255);
        assert_eq!(convert(OpTy::F(32), OpTy::F(32), Some(Rounding::Nearest), d, f(2.5)), f(2.0));
        assert_eq!(convert(OpTy::F(32), OpTy::F(32), Some(Rounding::Up), d, f(-0.5)), f(-0.0));
        let sat = FloatMode { sat: true, ..d };
        assert_eq!(binary(BinaryOp::Add, OpTy::F(32), sat, f(0.75), f(0.5)), f(1.0));
        assert_eq!(binary(BinaryOp::Min, OpTy::F(32), d, f(f32::NAN), f(3.0)), f(3.0));
        assert_eq!(binary(BinaryOp::Min, OpTy::F(32), d, f(0.0), f(-0.0)), f(-0.0));
    }
}
