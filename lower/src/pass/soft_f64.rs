//! Pass: f64 arithmetic as integer code on f64 bit patterns, for a target without f64
//! ([`super::Target::float64`] false). Today it legalizes the `.approx` routines'
//! bodies (`crate::routines`' `approx`, added by [`super::emulate`], which runs this
//! on them); a program's own f64 code still needs `shaderFloat64`.
//!
//! * `add`, `sub` and `mul` to nearest become `fma` to nearest, which
//!   [`super::emulate`] then makes calls of the exact routine: `a + b` is
//!   `fma(a, 1, b)`, `a - b` is `fma(b, -1, a)`, `a · b` is `fma(a, b, -0)` (`x·y + -0`
//!   keeps the sign of a zero product), so the results are the same bits as the f64
//!   operations' (PTX ISA 9.2 §9.7.3.1-6); `div` and `sqrt` stay for it too, Vulkan's
//!   own (`.native`) made the exact ones.
//! * `abs` and `neg` clear and flip the sign bit; `mov` and `selp` move the bits.
//! * `setp` `.eq`, `.lt`, `.gt` and `.nan` compare the bit patterns: a pattern's order
//!   key (negative patterns inverted, positive ones above them) orders the non-NaN
//!   values, ±0 compare equal, and a NaN compares false (§9.7.3.21's `setp`).
//! * `cvt.f64.f32` rebiases the exponent (a subnormal f32 is normalized);
//!   `cvt.rmi.f64.f64` clears the fraction bits (`floor`); `cvt.rzi.s64.f64` shifts
//!   the significand, saturating, NaN to 2^63 (§9.7.9.21); `cvt.f64.s64` becomes the
//!   integer conversion [`InstKind::IntToFloat`].
//!
//! Pre: CFG IR of plain operations (no `.ftz`, `.sat` or directed rounding on f64:
//! after [`super::float_modifiers`]). Post: no f64 operation but exact `fma`, `div` and
//! `sqrt` to nearest, and `Narrow` from f64 bits; no f64 register (64-bit integers).
//! Any other f64 operation is a ptxvk bug, reported.

use ptxvk_frontend::Diagnostic;

use crate::build::{Build, Builder};
use crate::ir::{
    BinaryOp, BoolOp, CmpOp, FloatFormat, FloatMode, FloatPath, InstKind, Kernel, OpTy, RegId,
    RegTy, Rounding, UnaryOp, Value,
};

const F64: OpTy = OpTy::F(64);
const F32: OpTy = OpTy::F(32);
const S64: OpTy = OpTy::S(64);
const U64: OpTy = OpTy::U(64);
const U32: OpTy = OpTy::U(32);
const SIGN: u64 = 1 << 63;
const INF: u64 = 0x7ff0_0000_0000_0000;
/// The IR's f64 NaN (`FloatFormat::nan`), which its conversions give for any NaN.
const QNAN: u64 = 0x7fff_ffff_ffff_ffff;

const fn k(v: u64) -> Value {
    Value::Imm(v)
}

/// Rewrites every f64 operation of `k` (module doc).
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    for b in 0..k.blocks.len() {
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            let mut e = Builder::new(k, inst.span);
            if !rewrite(&mut e, &inst.kind) {
                if touches_f64(&inst.kind) {
                    return Err(Diagnostic::internal(inst.span, "f64 operation left by soft_f64"));
                }
                out.push(inst);
                continue;
            }
            out.append(&mut e.insts);
        }
        k.blocks[b].insts = out;
    }
    for r in &mut k.regs {
        if r.ty == RegTy::Float(64) {
            r.ty = RegTy::Int(64);
        }
    }
    Ok(())
}

/// Whether `kind` is an f64 operation that must not stay (module doc, *Post*).
pub fn touches_f64(kind: &InstKind) -> bool {
    match kind {
        InstKind::Binary { op: BinaryOp::Div, ty: F64, mode, .. }
        | InstKind::Unary { op: UnaryOp::Sqrt, ty: F64, mode, .. }
        | InstKind::Fma { ty: F64, mode, .. } => {
            mode.rounding != Rounding::Nearest || mode.path == FloatPath::Native
        }
        InstKind::Binary { ty, .. }
        | InstKind::Unary { ty, .. }
        | InstKind::Setp { ty, .. }
        | InstKind::Select { ty, .. }
        | InstKind::Mov { ty, .. } => *ty == F64,
        InstKind::Convert { to, from, .. } => *to == F64 || *from == F64,
        _ => false,
    }
}

/// Writes `kind`'s integer form into `e`, if it is an f64 operation this pass rewrites.
fn rewrite(e: &mut Builder<'_>, kind: &InstKind) -> bool {
    let nearest = |m: &FloatMode| *m == FloatMode::default();
    match *kind {
        // Vulkan's `div` and `sqrt` need f64: the exact ones (the routines).
        InstKind::Binary { op: BinaryOp::Div, ty: F64, mode, dst, lhs, rhs }
            if mode.path == FloatPath::Native =>
        {
            let mode = FloatMode { path: FloatPath::F64, ..mode };
            e.push(InstKind::Binary { op: BinaryOp::Div, ty: F64, mode, dst, lhs, rhs });
        }
        InstKind::Unary { op: UnaryOp::Sqrt, ty: F64, mode, dst, src }
            if mode.path == FloatPath::Native =>
        {
            let mode = FloatMode { path: FloatPath::F64, ..mode };
            e.push(InstKind::Unary { op: UnaryOp::Sqrt, ty: F64, mode, dst, src });
        }
        InstKind::Binary { op, ty: F64, ref mode, dst, lhs, rhs } if nearest(mode) => {
            let (a, b, c) = match op {
                BinaryOp::Add => (lhs, k(1f64.to_bits()), rhs),
                BinaryOp::Sub => (rhs, k((-1f64).to_bits()), lhs),
                BinaryOp::Mul => (lhs, rhs, k(SIGN)),
                _ => return false,
            };
            e.push(InstKind::Fma { ty: F64, mode: FloatMode::default(), dst, a, b, c });
        }
        InstKind::Unary { op: op @ (UnaryOp::Abs | UnaryOp::Neg), ty: F64, dst, src, .. } => {
            let r = if op == UnaryOp::Abs {
                e.and(U64, src, k(!SIGN))
            } else {
                e.bin(BinaryOp::Xor, U64, src, k(SIGN))
            };
            e.mov(U64, dst, r);
        }
        InstKind::Mov { ty: F64, dst, src } => e.mov(U64, dst, src),
        InstKind::Select { ty: F64, dst, a, b, cond, negate } => {
            e.push(InstKind::Select { ty: U64, dst, a, b, cond, negate });
        }
        InstKind::Setp {
            cmp,
            ty: F64,
            ftz: false,
            dst: Some(dst),
            dst_not: None,
            lhs,
            rhs,
            combine: None,
        } => {
            let r = match cmp {
                CmpOp::Eq => equal(e, lhs, rhs),
                CmpOp::Lt => less(e, lhs, rhs),
                CmpOp::Gt => less(e, rhs, lhs),
                CmpOp::Nan => {
                    let (na, nb) = (is_nan(e, lhs), is_nan(e, rhs));
                    e.pred_or(na, nb)
                }
                _ => return false,
            };
            e.push(InstKind::PredLogic { op: BoolOp::And, dst, lhs: r, rhs: r });
        }
        InstKind::Convert { to, from, rounding, ref mode, dst, src } if nearest(mode) => {
            let r = match (to, from, rounding) {
                (F64, F32, None) => crate::routines::f32_to_f64(e, src),
                (F64, F64, Some(Rounding::Down)) => floor(e, src),
                (S64, F64, Some(Rounding::Zero)) => truncate(e, src),
                (F64, S64, rounding) => {
                    let rounding = rounding.unwrap_or_default();
                    let to = FloatFormat::F64;
                    e.push(InstKind::IntToFloat { to, from, rounding, dst, src });
                    return true;
                }
                _ => return false,
            };
            e.mov(U64, dst, r);
        }
        _ => return false,
    }
    true
}

fn not(e: &mut Builder<'_>, p: RegId) -> RegId {
    let dst = e.temp(OpTy::Pred);
    e.push(InstKind::PredNot { dst, src: p });
    dst
}

fn is_nan(e: &mut Builder<'_>, a: Value) -> RegId {
    let mag = e.and(U64, a, k(!SIGN));
    e.cmp(CmpOp::Gt, U64, mag, k(INF))
}

/// Whether the sign bit of `a` is set.
fn negative(e: &mut Builder<'_>, a: Value) -> RegId {
    let bit = e.and(U64, a, k(SIGN));
    e.cmp(CmpOp::Ne, U64, bit, k(0))
}

/// Whether both of `a` and `b` are zeros (of either sign).
fn both_zero(e: &mut Builder<'_>, a: Value, b: Value) -> RegId {
    let both = e.or(U64, a, b);
    let both = e.and(U64, both, k(!SIGN));
    e.cmp(CmpOp::Eq, U64, both, k(0))
}

/// `a == b`: the same non-NaN pattern, or two zeros.
fn equal(e: &mut Builder<'_>, a: Value, b: Value) -> RegId {
    let nan = is_nan(e, a);
    let same = e.cmp(CmpOp::Eq, U64, a, b);
    let not_nan = not(e, nan);
    let same = e.pred_and(same, not_nan);
    let zeros = both_zero(e, a, b);
    e.pred_or(same, zeros)
}

/// A pattern's position in the order of f64 values (module doc).
fn order_key(e: &mut Builder<'_>, a: Value) -> Value {
    let neg = negative(e, a);
    let inverted = e.not(U64, a);
    let raised = e.or(U64, a, k(SIGN));
    e.sel(U64, neg, inverted, raised)
}

/// `a < b`: false when either is NaN or both are zeros.
fn less(e: &mut Builder<'_>, a: Value, b: Value) -> RegId {
    let (na, nb) = (is_nan(e, a), is_nan(e, b));
    let either = e.pred_or(na, nb);
    let zeros = both_zero(e, a, b);
    let excluded = e.pred_or(either, zeros);
    let (ka, kb) = (order_key(e, a), order_key(e, b));
    let lt = e.cmp(CmpOp::Lt, U64, ka, kb);
    let kept = not(e, excluded);
    e.pred_and(lt, kept)
}

/// `floor(a)`: an integral magnitude (±inf, |a| ≥ 2^52) stays, a NaN is the canonical
/// NaN; else the
/// fraction bits are cleared, and a negative value with a fraction moves one unit away
/// from zero (the carry into the exponent is as it must be); |a| < 1 gives ±0 or -1.
fn floor(e: &mut Builder<'_>, a: Value) -> Value {
    let neg = negative(e, a);
    let mag = e.and(U64, a, k(!SIGN));
    let ef = e.bin(BinaryOp::Shr, U64, mag, k(52));
    // Fraction bits of a value with biased exponent ef in [1023, 1074]: 1075 - ef.
    let frac_bits = e.bin(BinaryOp::Sub, U64, k(1075), ef);
    let frac_bits = e.and(U64, frac_bits, k(63));
    let frac_bits = e.cvt(U32, U64, frac_bits);
    let unit = e.bin(BinaryOp::Shl, U64, k(1), frac_bits);
    let mask = e.bin(BinaryOp::Sub, U64, unit, k(1));
    let fraction = e.and(U64, a, mask);
    let has_fraction = e.cmp(CmpOp::Ne, U64, fraction, k(0));
    let not_mask = e.not(U64, mask);
    let trunc = e.and(U64, a, not_mask);
    let away = e.add(U64, trunc, unit);
    let step = e.pred_and(neg, has_fraction);
    let mid = e.sel(U64, step, away, trunc);
    // |a| < 1: ±0 for a ≥ 0 or -0, -1 for a < 0.
    let below_one = e.cmp(CmpOp::Lt, U64, ef, k(1023));
    let nonzero = e.cmp(CmpOp::Ne, U64, mag, k(0));
    let neg_nonzero = e.pred_and(neg, nonzero);
    let sign = e.and(U64, a, k(SIGN));
    let small = e.sel(U64, neg_nonzero, k((-1f64).to_bits()), sign);
    let r = e.sel(U64, below_one, small, mid);
    let integral = e.cmp(CmpOp::Ge, U64, ef, k(1075));
    let r = e.sel(U64, integral, a, r);
    let nan = is_nan(e, a);
    e.sel(U64, nan, k(QNAN), r)
}

/// `cvt.rzi.s64.f64`: the significand shifted by the exponent, negated for a negative
/// value; |a| ≥ 2^63 saturates, NaN gives 2^63 (PTX ISA 9.2 §9.7.9.21).
fn truncate(e: &mut Builder<'_>, a: Value) -> Value {
    let mag = e.and(U64, a, k(!SIGN));
    let ef = e.bin(BinaryOp::Shr, U64, mag, k(52));
    let frac = e.and(U64, mag, k((1 << 52) - 1));
    let sig = e.or(U64, frac, k(1 << 52));
    // value = sig >> (1075 - ef) for ef ≤ 1075, sig << (ef - 1075) above.
    let right = e.bin(BinaryOp::Sub, U64, k(1075), ef);
    let right = e.and(U64, right, k(63));
    let right = e.cvt(U32, U64, right);
    let down = e.bin(BinaryOp::Shr, U64, sig, right);
    let left = e.bin(BinaryOp::Sub, U64, ef, k(1075));
    let left = e.and(U64, left, k(63));
    let left = e.cvt(U32, U64, left);
    let up = e.bin(BinaryOp::Shl, U64, sig, left);
    let is_up = e.cmp(CmpOp::Gt, U64, ef, k(1075));
    let n = e.sel(U64, is_up, up, down);
    let below_one = e.cmp(CmpOp::Lt, U64, ef, k(1023));
    let n = e.sel(U64, below_one, k(0), n);
    let minus = e.un(UnaryOp::Neg, S64, n);
    let neg = negative(e, a);
    let n = e.sel(U64, neg, minus, n);
    let too_big = e.cmp(CmpOp::Ge, U64, ef, k(1023 + 63));
    let limit = e.sel(U64, neg, k(SIGN), k(SIGN - 1));
    let n = e.sel(U64, too_big, limit, n);
    let nan = is_nan(e, a);
    e.sel(U64, nan, k(SIGN), n)
}
