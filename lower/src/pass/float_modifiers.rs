//! Pass: `.ftz` and `.sat` become instructions of their own, so that the emitter maps
//! each arithmetic instruction to SPIR-V without them.
//!
//! `.ftz` flushes a subnormal f32 input or result to a zero of its sign, and `.sat`
//! clamps a float result to [0.0, 1.0], NaN to +0.0 (PTX ISA 9.2 §9.7.3). Both are
//! what `cvt.ftz.f32.f32` and `cvt.sat.f32.f32` do to one value (§9.7.9.21, float to
//! the same float without a rounding), so each becomes such a [`InstKind::Convert`]:
//! one per flushed input (an immediate is flushed here), and one for the result that
//! flushes it, then clamps it. The arithmetic in between runs without either modifier,
//! into a temporary. `abs.ftz` and `neg.ftz` (§9.7.3.6-7) only have their input
//! flushed: the sign operations of a flushed value are never subnormal.
//!
//! Pre: CFG IR after [`super::legalize_floats`] (whose instructions may carry the
//! modifiers of the ones they replace). `Unary`, `Binary` and `Fma` may carry `.ftz`
//! (f32) and `.sat` in their [`FloatMode`], and `Setp` `.ftz`.
//!
//! Post: only `Convert` carries `.ftz` or `.sat` ([`remains`] holds for no instruction).
//! `cvt` is PTX's own instruction for them, and the emitter's one place that applies
//! them.

use crate::build::{Build, Builder};
use crate::ir::{FloatMode, InstKind, Kernel, OpTy, RegId, UnaryOp, Value};

const F32: OpTy = OpTy::F(32);

/// Whether `kind` still carries a `.ftz` or `.sat` that this pass takes off.
pub fn remains(kind: &InstKind) -> bool {
    match kind {
        InstKind::Unary { ty, mode, .. }
        | InstKind::Binary { ty, mode, .. }
        | InstKind::Fma { ty, mode, .. } => ty.is_float() && (mode.ftz || mode.sat),
        InstKind::Setp { ty, ftz, .. } => ty.is_float() && *ftz,
        _ => false,
    }
}

/// Takes every `.ftz` and `.sat` off arithmetic, as the module doc describes.
pub fn run(k: &mut Kernel) {
    super::expander::each_in_block(k, remains, peel);
}

/// Instruction `kind` without its modifiers, between the conversions that apply them.
fn peel(e: &mut Builder<'_>, mut kind: InstKind) {
    match &mut kind {
        InstKind::Unary { op, ty, mode, src, .. } => {
            let result = take(mode);
            flush_inputs(e, *ty, result, [src]);
            // `abs.ftz`/`neg.ftz` (§9.7.3.6-7) flush their input only: the sign
            // operations of a flushed value are never subnormal.
            if matches!(op, UnaryOp::Abs | UnaryOp::Neg) && !result.sat {
                return e.push(kind);
            }
            finish(e, kind, result);
        }
        InstKind::Binary { ty, mode, lhs, rhs, .. } => {
            let result = take(mode);
            flush_inputs(e, *ty, result, [lhs, rhs]);
            finish(e, kind, result);
        }
        InstKind::Fma { ty, mode, a, b, c, .. } => {
            let result = take(mode);
            flush_inputs(e, *ty, result, [a, b, c]);
            finish(e, kind, result);
        }
        InstKind::Setp { ty, ftz, lhs, rhs, .. } => {
            let flush = FloatMode { ftz: std::mem::take(ftz), ..FloatMode::default() };
            flush_inputs(e, *ty, flush, [lhs, rhs]);
            e.push(kind);
        }
        _ => e.push(kind),
    }
}

/// The modifiers of `mode`, which it loses, as the mode of the conversion that applies
/// them to the result.
fn take(mode: &mut FloatMode) -> FloatMode {
    let result = FloatMode { ftz: mode.ftz, sat: mode.sat, ..FloatMode::default() };
    mode.ftz = false;
    mode.sat = false;
    result
}

/// Replaces each f32 input by its flushed value, where `mode` flushes.
fn flush_inputs<const N: usize>(
    e: &mut Builder<'_>,
    ty: OpTy,
    mode: FloatMode,
    inputs: [&mut Value; N],
) {
    if !(mode.ftz && ty == F32) {
        return;
    }
    let flush = FloatMode { ftz: true, ..FloatMode::default() };
    for input in inputs {
        *input = match *input {
            Value::Imm(bits) => Value::Imm(flushed_f32(bits)),
            reg => convert_same(e, F32, flush, reg),
        };
    }
}

/// The f32 bit pattern `bits` flushed: a subnormal is the zero of its sign.
fn flushed_f32(bits: u64) -> u64 {
    const MIN_NORMAL: u64 = 0x0080_0000;
    if bits & 0x7fff_ffff < MIN_NORMAL {
        bits & 0x8000_0000
    } else {
        bits
    }
}

/// Emits `kind` into a temporary, then the conversion of that temporary into the
/// instruction's destination that applies `mode` (flush, then clamp).
fn finish(e: &mut Builder<'_>, mut kind: InstKind, mode: FloatMode) {
    let (ty, dst) = match &mut kind {
        InstKind::Unary { ty, dst, .. }
        | InstKind::Binary { ty, dst, .. }
        | InstKind::Fma { ty, dst, .. } => (*ty, dst),
        _ => return e.push(kind),
    };
    let mode = FloatMode { ftz: mode.ftz && ty == F32, ..mode };
    if !(mode.ftz || mode.sat) {
        return e.push(kind);
    }
    let result = *dst;
    let temp = e.temp(ty);
    *dst = temp;
    e.push(kind);
    convert_into(e, ty, mode, result, Value::Reg(temp));
}

/// `cvt` of `src` from `ty` to itself under `mode`, into a new register.
fn convert_same(e: &mut Builder<'_>, ty: OpTy, mode: FloatMode, src: Value) -> Value {
    let dst = e.temp(ty);
    convert_into(e, ty, mode, dst, src);
    Value::Reg(dst)
}

fn convert_into(e: &mut Builder<'_>, ty: OpTy, mode: FloatMode, dst: RegId, src: Value) {
    e.push(InstKind::Convert { to: ty, from: ty, rounding: None, mode, dst, src });
}
