//! Pass: float arithmetic and conversions with directed rounding, which SPIR-V cannot
//! express per instruction (PTX ISA 9.2 §9.7.3: `.rz`, `.rm`, `.rp` on `add`, `sub`,
//! `mul`, `fma`, `mad`; §9.7.9.21 on `cvt` to a float).
//!
//! Pre: CFG IR; `Binary` `add`/`sub`/`mul` and `Fma` on `.f32` or `.f64` may carry a
//! directed [`FloatMode::rounding`], and `Convert` to `.f32` from `.f64` or an integer,
//! or to `.f64` from an integer, a directed `rounding`.
//!
//! Post: only `.f64` `Fma` carries one (the emitter's exact fused multiply-add rounds
//! in every direction), and `div`/`rcp`/`sqrt`, which the emitter rounds itself.
//! Conversions become `Narrow` (from f64, after `.sat`'s clamp) or `IntToFloat`.
//! * **f32**: the operation is computed exactly and rounded to odd in f64
//!   ([`InstKind::RoundToOdd`]), then rounded once to f32 in the wanted direction
//!   ([`InstKind::Narrow`]); correct by Boldo and Melquiond's round-to-odd theorem.
//!   `.ftz` flushes the inputs and the result, `.sat` clamps the f64 value (which
//!   commutes with the final rounding, the bounds being f32 values).
//! * **f64**: `a + b` is `fma(a, 1, b)`, `a - b` is `fma(a, 1, -b)`, `a * b` is
//!   `fma(a, b, ∓0)` with the zero that keeps the sign of a zero product.
//!
//! Vulkan's float controls set rounding per shader, not per instruction, so every
//! device needs this.
//!
//! **A target without f64** ([`Target::float64`] false) gets no f64 for f32 code:
//! * f32 `fma`, `div`, `rcp` and `sqrt` in every rounding become `.soft`
//!   ([`FloatPath::Integer`]): `pass::emulate` makes them calls of routines that compute
//!   them exactly in integer arithmetic, instead of the emitter correcting an f64
//!   candidate with exact f64 residuals (the `.approx`
//!   functions are routines, whose f64 arithmetic `pass::emulate` legalizes);
//! * f32 directed `add`, `sub` and `mul` become such an `fma`, as f64 ones do above
//!   (`a + b` = `fma(a, 1, b)`, …), instead of round-to-odd f64 arithmetic;
//! * `RoundToOdd` (half-precision arithmetic) becomes `.soft`, its result register a
//!   64-bit integer holding the f64 bit pattern, which `Narrow` reads (a call of a
//!   routine after `pass::emulate`).
//!
//! Post (without f64): every f32 `fma`, `div`, `rcp` and `sqrt`, and every `RoundToOdd`,
//! is `.soft` or `.fused.soft`, but `fma.rn` that is `.fused`.
//!
//! **`--float native`** ([`Target::native_float`]): `fma`, `div`, `rcp` and `sqrt` to
//! nearest become `.native`, Vulkan's own operations (not exact); directed roundings
//! stay exact.
//!
//! **A device whose `Fma` is fused** ([`Target::fused_fma`], found by a probe): `fma.rn`
//! of that width becomes `.fused`, the device's `Fma`, which is then exact; `div.rn`,
//! `rcp.rn` and `sqrt.rn` of that width become `.fused` too (f32 ones `.fused.soft`
//! without f64):
//! Newton steps on that `Fma` with an exact final rounding, and a fallback to the exact
//! f64 (or integer) path for operands outside the steps' range ([`FloatPath::Fused`]).

use ptxvk_frontend::Diagnostic;

use super::Target;
use crate::build::{Build, Builder};
use crate::ir::{
    BinaryOp, CmpOp, FloatFormat, FloatMode, FloatPath, InstKind, Kernel, OddOp, OpTy, RegId,
    RegTy, Rounding, UnaryOp, Value,
};

const F32: OpTy = OpTy::F(32);
const F64: OpTy = OpTy::F(64);

/// A directed-rounding instruction, taken apart.
enum Directed {
    /// `op` on `ty` operands (`c` only for `fma`).
    Arith { op: OddOp, ty: OpTy, mode: FloatMode, dst: RegId, x: [Value; 3] },
    /// A conversion to f32 (from f64 or an integer) or to f64 (from an integer).
    Convert { to: OpTy, from: OpTy, rounding: Rounding, mode: FloatMode, dst: RegId, src: Value },
}

fn is_directed_rounding(r: Rounding) -> bool {
    matches!(r, Rounding::Zero | Rounding::Down | Rounding::Up)
}

fn directed(kind: &InstKind) -> Option<Directed> {
    let zero = Value::Imm(0);
    match *kind {
        InstKind::Binary { op, ty, mode, dst, lhs, rhs }
            if ty.is_float() && mode.rounding != Rounding::Nearest =>
        {
            let op = match op {
                BinaryOp::Add => OddOp::Add,
                BinaryOp::Sub => OddOp::Sub,
                BinaryOp::Mul => OddOp::Mul,
                _ => return None,
            };
            Some(Directed::Arith { op, ty, mode, dst, x: [lhs, rhs, zero] })
        }
        InstKind::Fma { ty: F32, mode, dst, a, b, c }
            if mode.rounding != Rounding::Nearest && mode.path == FloatPath::F64 =>
        {
            Some(Directed::Arith { op: OddOp::Fma, ty: F32, mode, dst, x: [a, b, c] })
        }
        InstKind::Convert { to, from, rounding: Some(rounding), mode, dst, src }
            if is_directed_rounding(rounding)
                && ((to == F32 && (from == F64 || !from.is_float()))
                    || (to == F64 && !from.is_float())) =>
        {
            Some(Directed::Convert { to, from, rounding, mode, dst, src })
        }
        _ => None,
    }
}

/// The float mode of an `fma`, `div`, `rcp` or `sqrt` to nearest, f32 or f64, which
/// `--float native` gives to Vulkan.
fn native_candidate(kind: &mut InstKind) -> Option<&mut FloatMode> {
    let mode = match kind {
        InstKind::Fma { mode, .. }
        | InstKind::Binary { op: BinaryOp::Div, ty: F32 | F64, mode, .. }
        | InstKind::Unary { op: UnaryOp::Sqrt | UnaryOp::Rcp, ty: F32 | F64, mode, .. } => mode,
        _ => return None,
    };
    (mode.rounding == Rounding::Nearest).then_some(mode)
}

/// The width of a float `div`, `rcp` or `sqrt` (Newton steps where `Fma` is fused).
fn newton_width(kind: &InstKind) -> Option<u32> {
    match kind {
        InstKind::Binary { op: BinaryOp::Div, ty: ty @ (F32 | F64), .. }
        | InstKind::Unary { op: UnaryOp::Sqrt | UnaryOp::Rcp, ty: ty @ (F32 | F64), .. } => {
            Some(ty.bits())
        }
        _ => None,
    }
}

/// The float mode of an f32 operation that needs f64 unless computed in integers.
fn f64_assisted(kind: &mut InstKind) -> Option<&mut FloatMode> {
    match kind {
        InstKind::Fma { ty: F32, mode, .. }
        | InstKind::Binary { op: BinaryOp::Div, ty: F32, mode, .. }
        | InstKind::Unary { op: UnaryOp::Sqrt | UnaryOp::Rcp, ty: F32, mode, .. } => Some(mode),
        _ => None,
    }
}

/// Chooses how `kind` is computed for `target` (module doc), in this order:
/// `--float native`, a fused `Fma`, integer arithmetic without f64. Returns the result
/// register of a `RoundToOdd` made `.soft`, which must become a 64-bit integer.
fn choose_path(kind: &mut InstKind, target: &Target) -> Option<RegId> {
    if let InstKind::RoundToOdd { soft, dst, .. } = kind {
        if target.float64 {
            return None;
        }
        *soft = true;
        return Some(*dst);
    }
    if target.native_float {
        if let Some(mode) = native_candidate(kind) {
            mode.path = FloatPath::Native;
            return None;
        }
    }
    // `fma.rn` where the device's `Fma` is fused: one instruction, exact; f32 `div`,
    // `rcp` and `sqrt` to nearest: Newton steps on it, with a fallback.
    if let InstKind::Fma { ty, mode, .. } = kind {
        let fused = if *ty == F32 { target.fused_fma.f32 } else { target.fused_fma.f64 };
        if fused && mode.rounding == Rounding::Nearest {
            mode.path = FloatPath::Fused { soft: false };
            return None;
        }
    }
    let newton = match newton_width(kind) {
        Some(32) => target.fused_fma.f32,
        Some(_) => target.fused_fma.f64,
        None => false,
    };
    if newton {
        if let Some(mode) = native_candidate(kind).filter(|m| m.path == FloatPath::F64) {
            mode.path = FloatPath::Fused { soft: !target.float64 };
            return None;
        }
    }
    if !target.float64 {
        if let Some(mode) = f64_assisted(kind).filter(|m| m.path == FloatPath::F64) {
            mode.path = FloatPath::Integer;
        }
    }
    None
}

/// Rewrites every directed-rounding instruction as the module doc describes.
pub fn run(k: &mut Kernel, target: &Target) -> Result<(), Diagnostic> {
    for b in 0..k.blocks.len() {
        let mut odd_results = Vec::new();
        for inst in &mut k.blocks[b].insts {
            odd_results.extend(choose_path(&mut inst.kind, target));
        }
        // The f64 bit pattern lives in an integer register: `Narrow` reads bits.
        for r in odd_results {
            k.regs[r.index()].ty = RegTy::Int(64);
        }
        if !k.blocks[b].insts.iter().any(|i| directed(&i.kind).is_some()) {
            continue;
        }
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            let Some(d) = directed(&inst.kind) else {
                out.push(inst);
                continue;
            };
            let mut e = Builder::new(k, inst.span);
            match d {
                Directed::Arith { op, ty: F32, mode, dst, x } if target.float64 => {
                    f32_directed(&mut e, op, mode, dst, x)
                }
                Directed::Arith { op, ty, mode, dst, x } => {
                    let path = if ty == F32 { FloatPath::Integer } else { mode.path };
                    as_fma(&mut e, op, ty, FloatMode { path, ..mode }, dst, x)
                }
                Directed::Convert { to, from, rounding, mode, dst, src } => {
                    convert_directed(&mut e, to, from, rounding, mode, dst, src)
                }
            }
            out.append(&mut e.insts);
        }
        k.blocks[b].insts = out;
    }
    Ok(())
}

/// A conversion rounded by `rounding`: from f64 by `Narrow` (after `.sat`'s clamp),
/// from an integer by `IntToFloat` (then `.sat`); `.ftz` flushes an f32 result.
fn convert_directed(
    e: &mut Builder<'_>,
    to: OpTy,
    from: OpTy,
    rounding: Rounding,
    mode: FloatMode,
    dst: RegId,
    src: Value,
) {
    let format = if to == F32 { FloatFormat::F32 } else { FloatFormat::F64 };
    let r = if from.is_float() {
        let d = if mode.sat { e.saturate64(src) } else { src };
        e.narrow(format, F64, rounding, false, false, d)
    } else {
        let r = e.int_to_float(format, from, rounding, src);
        if mode.sat {
            // `.sat` on an integer source: clamp the (exactly rounded) result.
            e.convert(to, to, None, FloatMode { sat: true, ..FloatMode::default() }, r)
        } else {
            r
        }
    };
    let r = if mode.ftz && to == F32 { e.flush32(r) } else { r };
    e.mov(to, dst, r);
}

/// `op` on f32 `x` rounded by `mode.rounding`, into `dst`.
fn f32_directed(e: &mut Builder<'_>, op: OddOp, mode: FloatMode, dst: RegId, x: [Value; 3]) {
    // Only `fma` reads the third operand.
    let used = if op == OddOp::Fma { 3 } else { 2 };
    let mut x = x;
    if mode.ftz {
        for v in &mut x[..used] {
            *v = e.flush32(*v);
        }
    }
    let c = if op == OddOp::Fma { x[2] } else { Value::Imm(0) };
    let mut v = e.odd(op, x[0], x[1], c);
    if mode.sat {
        v = e.saturate64(v);
    }
    let rounding = mode.rounding;
    let mut r = e.narrow(FloatFormat::F32, F64, rounding, false, false, v);
    if rounding == Rounding::Down && op != OddOp::Mul && !mode.sat {
        // An exact zero sum rounds to -0 downward unless both addends are +0 (IEEE 754
        // §6.3); the f64 sum above was rounded to nearest, which gives +0.
        let (p, q) = match op {
            OddOp::Fma => (
                e.odd(OddOp::Mul, x[0], x[1], Value::Imm(0)),
                e.convert(F64, F32, None, FloatMode::default(), x[2]),
            ),
            _ => {
                let p = e.convert(F64, F32, None, FloatMode::default(), x[0]);
                let q = e.convert(F64, F32, None, FloatMode::default(), x[1]);
                let q = if op == OddOp::Sub { e.un(UnaryOp::Neg, F64, q) } else { q };
                (p, q)
            }
        };
        let u64t = OpTy::U(64);
        let both = e.or(u64t, p, q);
        let both_plus_zero = e.cmp(CmpOp::Eq, u64t, both, Value::Imm(0));
        let zero_sum = e.cmp(CmpOp::Eq, F64, v, Value::Imm(0));
        let minus_zero = e.sel(OpTy::U(32), both_plus_zero, r, Value::Imm(0x8000_0000));
        r = e.sel(OpTy::U(32), zero_sum, minus_zero, r);
    }
    let r = if mode.ftz { e.flush32(r) } else { r };
    e.mov(F32, dst, r);
}

/// `add`, `sub`, `mul` (and `fma`) on `ty` as the exact fused multiply-add of the
/// backend, rounded by `mode` (f64 always; f32 on a target without f64, `.soft`, where
/// the backend also applies `.ftz` and `.sat`).
fn as_fma(e: &mut Builder<'_>, op: OddOp, ty: OpTy, mode: FloatMode, dst: RegId, x: [Value; 3]) {
    let (one, sign) =
        if ty == F32 { (1f32.to_bits().into(), 1 << 31) } else { (1f64.to_bits(), 1 << 63) };
    let (a, b, c) = match op {
        OddOp::Add => (x[0], Value::Imm(one), x[1]),
        OddOp::Sub => (x[0], Value::Imm(one), e.un(UnaryOp::Neg, ty, x[1])),
        // x·y + (-0) is x·y for every rounding but toward -inf, where +0 is neutral.
        OddOp::Mul => {
            let zero = if mode.rounding == Rounding::Down { 0 } else { sign };
            (x[0], x[1], Value::Imm(zero))
        }
        OddOp::Fma => (x[0], x[1], x[2]),
    };
    let t = e.temp(ty);
    e.push(InstKind::Fma { ty, mode, dst: t, a, b, c });
    e.mov(ty, dst, Value::Reg(t));
}

/// Whether an instruction is one this pass removes (the emitter's check).
pub fn is_directed(kind: &InstKind) -> bool {
    directed(kind).is_some()
}

/// Whether an instruction of f32 (or half) arithmetic would need f64, which this pass
/// removes for a target without it: f32 `fma`, `div`, `rcp`, `sqrt`, the `.approx`
/// functions and `RoundToOdd` that are not `.soft`.
pub fn needs_f64(kind: &InstKind) -> bool {
    match kind {
        InstKind::RoundToOdd { soft, .. } => !soft,
        InstKind::Fma { ty: F32, mode, .. }
        | InstKind::Binary { op: BinaryOp::Div, ty: F32, mode, .. }
        | InstKind::Unary { op: UnaryOp::Sqrt | UnaryOp::Rcp, ty: F32, mode, .. } => {
            // A fused `fma` needs nothing; Newton steps fall back to f64 unless `soft`.
            mode.path == FloatPath::F64
                || mode.path == FloatPath::Fused { soft: false } && newton_width(kind).is_some()
        }
        _ => false,
    }
}
