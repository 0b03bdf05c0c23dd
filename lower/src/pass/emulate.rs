//! Pass: operations that the emitter would otherwise build out of many instructions
//! become calls of emulation routines (`crate::ir`'s module doc, *Emulation
//! routines*), each routine added to the kernel once ([`crate::routines::get`]).
//!
//! Today: exact f64 arithmetic. An f64 `fma`, `div`, `rcp` or `sqrt` computed neither
//! by the device's fused `Fma` (`.fused`, below) nor by Vulkan's own operations
//! (`.native`) becomes a `Call` of the routine for its
//! rounding, on the operands' bit patterns: [`Routine::FmaF64`],
//! [`Routine::DivF64`] (`rcp` as `1.0 / x`), [`Routine::SqrtF64`] (PTX ISA 9.2
//! §9.7.3.6-10). On a target with f64, `fma`, `div` and `rcp` to nearest become calls
//! of [`Routine::NearestF64`] instead ([`for_target`]): their fast paths in the device's
//! f64 arithmetic ([`Routine::FastF64`]), which call `FmaF64` and `DivF64` where their
//! guard fails (`crate::routines`' `fast_f64`). So do the exact paths of the Newton
//! routines' f64 `div` when this pass legalizes them; the integer routines' own
//! callees stay as [`Routine::callees`] names them.
//!
//! Without f64 (`legalize_floats`' `.soft`, [`FloatPath::Integer`]): an f32 `fma`,
//! `div`, `rcp` or `sqrt` becomes a `Call` of [`Routine::FmaF32`], [`Routine::DivF32`]
//! (`rcp` as `1.0 / x`) or [`Routine::SqrtF32`] for its rounding, on the operands' bit
//! patterns, and a `RoundToOdd` `.soft` one of [`Routine::OddF32`]: routines that widen
//! their operands to f64 patterns and call the f64 routines above
//! ([`Routine::callees`]).
//!
//! With f64, a `RoundToOdd` becomes a call of [`Routine::OddF32InF64`], f64 arithmetic
//! in its form for the target (the sign of a zero sum repaired where the driver was not
//! probed, `FloatConstants::Repaired`), emitted with the hiding of any f64 arithmetic;
//! and an f32 `div`, `rcp` or `sqrt` with a directed rounding ([`FloatPath::F64`])
//! becomes a call of [`Routine::DivF32InF64`] (`rcp` as `1.0 / x`) or
//! [`Routine::SqrtF32InF64`] for its rounding, on the bit patterns. To nearest they, and
//! f32 `fma` (whose rounding `legalize_floats` left to nearest), become calls of
//! [`Routine::NearestF32`] (`rcp` as `1.0 / x`; `fma` in its form for the target): the
//! fast path, and those routines (and [`Routine::FmaF32InF64`] for `fma`) where the fast
//! path's test fails. [`super::exact_runs`] then groups several in a block into runs.
//!
//! The `.approx` functions `ex2`, `lg2`, `rsqrt`, `tanh`, `sin` and `cos`
//! ([`Routine::APPROX`]) of f32 become calls of [`Routine::Approx`] on the bit patterns.
//! Their bodies are f64 arithmetic, legalized here when the routine is added as a
//! program's would be: on a target without f64 by [`super::soft_f64`] first (in the
//! form whose reductions are loops, [`routines::build_with`]), then their `fma`, `div`
//! and `sqrt` become calls of the routines above (so these routines call routines).
//!
//! An f32 or f64 `div`, `rcp` or `sqrt` on the device's fused `Fma` (`.fused`, to
//! nearest) becomes a call of [`Routine::Newton`] on the bit patterns (`rcp` as
//! `1 / x`): Newton steps on the device's `.native` `fma`, `div` and `rsqrt`, and on
//! operands outside their range the same operation on the exact path (`.fused.soft`:
//! the integer one), which is legalized here when the routine is added as a program's
//! would be (f64 and f32 without f64: the calls of the routines above).
//!
//! The conversions of the narrow float formats (`InstKind::Narrow`, `IntToFloat` and
//! `Widen`) become calls of [`Routine::Narrow`], [`Routine::IntToFloat`] and
//! [`Routine::Widen`] on the source's bit pattern, in the kernel and in the `.approx`
//! routines, which round their f64 result to f32 with a `Narrow`.
//!
//! Pre: CFG IR after [`super::float_modifiers`] (no `.ftz` or `.sat` on f64 arithmetic,
//! `.soft` f32 arithmetic or the `.approx` functions) and [`super::inline`] (no call but
//! of routines).
//!
//! Post: no f64 `fma`, `div`, `rcp` or `sqrt` on the exact paths, none `.fused` but
//! `fma`, no `.soft` f32 `fma`, `div`, `rcp` or `sqrt`, no f32 `fma`, `div`, `rcp` or
//! `sqrt` on the f64 path ([`FloatPath::F64`]), no `RoundToOdd`, no `.approx`
//! function of [`Routine::APPROX`] and no `Narrow`, `IntToFloat` or `Widen`
//! ([`emulated`] holds for none), in the kernel or its
//! routines; [`crate::ir::Kernel::functions`] holds each routine called, once.

use ptxvk_frontend::{Diagnostic, Span};

use super::{FloatConstants, Target};
use crate::build::{Build, Builder};
use crate::ir::{
    BinaryOp, F32Op, F64Op, FloatMode, FloatPath, Function, FunctionId, Inst, InstKind, Kernel,
    NewtonOp, OddOp, OpTy, RegId, Rounding, Routine, UnaryOp, Value,
};
use crate::routines;

const F64: OpTy = OpTy::F(64);
const F32: OpTy = OpTy::F(32);

/// Whether an f64 operation in `mode` is exact in integer arithmetic (neither fused nor
/// native).
fn exact(ty: OpTy, mode: &FloatMode) -> bool {
    ty == F64 && !matches!(mode.path, FloatPath::Fused { .. } | FloatPath::Native)
}

/// Whether an f32 `div`, `rcp` or `sqrt` in `mode` has a directed rounding on the f64
/// path (to nearest [`Routine::NearestF32`] calls the routine only where its fast path
/// fails).
fn directed_f64(mode: &FloatMode) -> bool {
    mode.path == FloatPath::F64 && mode.rounding != Rounding::Nearest
}

/// Whether an f32 `fma`, `div`, `rcp` or `sqrt` in `mode` is to nearest on the f64 path:
/// its fast path, [`Routine::NearestF32`].
fn nearest_f64(mode: &FloatMode) -> bool {
    mode.path == FloatPath::F64 && mode.rounding == Rounding::Nearest
}

/// Whether `mode` is the Newton steps' (`.fused`; `pass::legalize_floats` gives it to
/// `div`, `rcp` and `sqrt` to nearest only).
fn is_fused(mode: &FloatMode) -> bool {
    matches!(mode.path, FloatPath::Fused { .. })
}

/// The Newton routine of `op` on `bits`-wide floats in `mode` (`.fused`, `.fused.soft`).
fn newton(op: NewtonOp, bits: u8, mode: &FloatMode) -> Routine {
    let soft = mode.path == FloatPath::Fused { soft: true };
    Routine::Newton { op, bits, soft }
}

/// The routine that computes `kind`, with its arguments and result, if one does (in
/// its form for a driver that was not probed: [`for_target`] picks the target's).
pub fn emulated(kind: &InstKind) -> Option<(Routine, Vec<Value>, RegId)> {
    match kind {
        InstKind::Fma { ty, mode, dst, a, b, c } if exact(*ty, mode) => {
            Some((Routine::FmaF64(mode.rounding), vec![*a, *b, *c], *dst))
        }
        InstKind::Binary { op: BinaryOp::Div, ty, mode, dst, lhs, rhs } if exact(*ty, mode) => {
            Some((Routine::DivF64(mode.rounding), vec![*lhs, *rhs], *dst))
        }
        InstKind::Unary { op: UnaryOp::Sqrt, ty, mode, dst, src } if exact(*ty, mode) => {
            Some((Routine::SqrtF64(mode.rounding), vec![*src], *dst))
        }
        InstKind::Unary { op: UnaryOp::Rcp, ty, mode, dst, src } if exact(*ty, mode) => {
            let one = Value::Imm(1f64.to_bits());
            Some((Routine::DivF64(mode.rounding), vec![one, *src], *dst))
        }
        InstKind::Fma { ty: F32, mode, dst, a, b, c } if mode.path == FloatPath::Integer => {
            Some((Routine::FmaF32(mode.rounding), vec![*a, *b, *c], *dst))
        }
        InstKind::Binary { op: BinaryOp::Div, ty: F32, mode, dst, lhs, rhs }
            if mode.path == FloatPath::Integer =>
        {
            Some((Routine::DivF32(mode.rounding), vec![*lhs, *rhs], *dst))
        }
        InstKind::Unary { op: UnaryOp::Sqrt, ty: F32, mode, dst, src }
            if mode.path == FloatPath::Integer =>
        {
            Some((Routine::SqrtF32(mode.rounding), vec![*src], *dst))
        }
        InstKind::Unary { op: UnaryOp::Rcp, ty: F32, mode, dst, src }
            if mode.path == FloatPath::Integer =>
        {
            let one = Value::Imm(1f32.to_bits().into());
            Some((Routine::DivF32(mode.rounding), vec![one, *src], *dst))
        }
        InstKind::Binary { op: BinaryOp::Div, ty: F32, mode, dst, lhs, rhs }
            if directed_f64(mode) =>
        {
            Some((Routine::DivF32InF64(mode.rounding), vec![*lhs, *rhs], *dst))
        }
        InstKind::Unary { op: UnaryOp::Sqrt, ty: F32, mode, dst, src } if directed_f64(mode) => {
            Some((Routine::SqrtF32InF64(mode.rounding), vec![*src], *dst))
        }
        InstKind::Unary { op: UnaryOp::Rcp, ty: F32, mode, dst, src } if directed_f64(mode) => {
            let one = Value::Imm(1f32.to_bits().into());
            Some((Routine::DivF32InF64(mode.rounding), vec![one, *src], *dst))
        }
        // The fast paths to nearest (`fma`'s rounding is to nearest: `legalize_floats`
        // made the others `RoundToOdd`).
        InstKind::Fma { ty: F32, mode, dst, a, b, c } if mode.path == FloatPath::F64 => {
            let fma = F32Op::Fma { repaired: true };
            Some((Routine::NearestF32(fma), vec![*a, *b, *c], *dst))
        }
        InstKind::Binary { op: BinaryOp::Div, ty: F32, mode, dst, lhs, rhs }
            if nearest_f64(mode) =>
        {
            Some((Routine::NearestF32(F32Op::Div), vec![*lhs, *rhs], *dst))
        }
        InstKind::Unary { op: UnaryOp::Sqrt, ty: F32, mode, dst, src } if nearest_f64(mode) => {
            Some((Routine::NearestF32(F32Op::Sqrt), vec![*src], *dst))
        }
        InstKind::Unary { op: UnaryOp::Rcp, ty: F32, mode, dst, src } if nearest_f64(mode) => {
            let one = Value::Imm(1f32.to_bits().into());
            Some((Routine::NearestF32(F32Op::Div), vec![one, *src], *dst))
        }
        &InstKind::RoundToOdd { op, soft: true, dst, a, b, c } => {
            let args = if op == OddOp::Fma { vec![a, b, c] } else { vec![a, b] };
            Some((Routine::OddF32(op), args, dst))
        }
        &InstKind::RoundToOdd { op, soft: false, dst, a, b, c } => {
            let args = if op == OddOp::Fma { vec![a, b, c] } else { vec![a, b] };
            Some((Routine::OddF32InF64 { op, repaired: true }, args, dst))
        }
        // Newton steps on the device's fused `Fma` (`.fused`), `rcp` as `1 / x`.
        InstKind::Binary { op: BinaryOp::Div, ty: OpTy::F(bits), mode, dst, lhs, rhs }
            if is_fused(mode) =>
        {
            Some((newton(NewtonOp::Div, *bits, mode), vec![*lhs, *rhs], *dst))
        }
        InstKind::Unary { op: UnaryOp::Sqrt, ty: OpTy::F(bits), mode, dst, src }
            if is_fused(mode) =>
        {
            Some((newton(NewtonOp::Sqrt, *bits, mode), vec![*src], *dst))
        }
        InstKind::Unary { op: UnaryOp::Rcp, ty: OpTy::F(bits), mode, dst, src }
            if is_fused(mode) =>
        {
            let one = if *bits == 32 { 1f32.to_bits().into() } else { 1f64.to_bits() };
            Some((newton(NewtonOp::Div, *bits, mode), vec![Value::Imm(one), *src], *dst))
        }
        // The device's own `rsqrt` (`.native`, in the Newton routines) is no routine.
        InstKind::Unary { op, ty: OpTy::F(32), mode, dst, src, .. }
            if Routine::APPROX.contains(op) && mode.path != FloatPath::Native =>
        {
            Some((Routine::Approx(*op), vec![*src], *dst))
        }
        &InstKind::Narrow { to, from, rounding, satfinite, relu, dst, src } => {
            let from_bits = from.bits() as u8;
            Some((Routine::Narrow { to, from_bits, rounding, satfinite, relu }, vec![src], dst))
        }
        &InstKind::IntToFloat { to, from, rounding, dst, src } => {
            Some((Routine::IntToFloat { to, from, rounding }, vec![src], dst))
        }
        &InstKind::Widen { from, dst, src } => Some((Routine::Widen(from), vec![src], dst)),
        _ => None,
    }
}

/// Routine `r` in its form for `target`: [`Routine::OddF32InF64`],
/// [`Routine::FmaF32InF64`] and `fma`'s [`Routine::NearestF32`] repair the sign of a
/// zero sum only for a driver that was not probed (`FloatConstants::Repaired`); with
/// f64, the f64 `fma` and `div` to nearest are [`Routine::NearestF64`], their fast
/// paths (module doc).
pub fn for_target(r: Routine, target: &Target) -> Routine {
    let repaired = target.float_constants == FloatConstants::Repaired;
    match r {
        Routine::OddF32InF64 { op, .. } => Routine::OddF32InF64 { op, repaired },
        Routine::FmaF32InF64 { .. } => Routine::FmaF32InF64 { repaired },
        Routine::NearestF32(F32Op::Fma { .. }) => Routine::NearestF32(F32Op::Fma { repaired }),
        Routine::FmaF64(Rounding::Nearest) if target.float64 => Routine::NearestF64(F64Op::Fma),
        Routine::DivF64(Rounding::Nearest) if target.float64 => Routine::NearestF64(F64Op::Div),
        r => r,
    }
}

/// Replaces every operation [`emulated`] names by a call of its routine.
pub fn run(k: &mut Kernel, target: &Target) -> Result<(), Diagnostic> {
    rewrite(k, None, target)
}

/// Replaces every operation [`emulated`] names in `body`'s blocks by a call of its
/// routine, a function of `home` (`body` itself when `None`).
fn rewrite(
    body: &mut Kernel,
    mut home: Option<&mut Kernel>,
    target: &Target,
) -> Result<(), Diagnostic> {
    for b in 0..body.blocks.len() {
        let insts = std::mem::take(&mut body.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            let Some((routine, args, dst)) = emulated(&inst.kind) else {
                out.push(inst);
                continue;
            };
            let routine = for_target(routine, target);
            let callee = match home.as_deref_mut() {
                Some(home) => add(home, routine, target)?,
                None => add(body, routine, target)?,
            };
            out.extend(call(body, routine, callee, args, dst, inst.span));
        }
        body.blocks[b].insts = out;
    }
    Ok(())
}

/// The call of routine `r`, the function `callee`, on `args` into `dst`, with registers
/// in `k`: a source register wider than the routine's parameters is truncated first (a
/// `cvt` reads the low bits of a wider source, PTX ISA 9.2 §5.2.2), and a wider `dst`
/// receives the result zero-extended.
fn call(
    k: &mut Kernel,
    r: Routine,
    callee: FunctionId,
    args: Vec<Value>,
    dst: RegId,
    span: Span,
) -> Vec<Inst> {
    let mut e = Builder::new(k, span);
    let (param, result) = (r.param_bits(), r.result_bits());
    let args = args
        .into_iter()
        .map(|a| match a {
            Value::Reg(x) if e.kernel.reg(x).ty.bits() > param => {
                let wide = e.kernel.reg(x).ty.bits();
                e.cvt(OpTy::U(param as u8), OpTy::U(wide as u8), a)
            }
            a => a,
        })
        .collect();
    let wide = e.kernel.reg(dst).ty.bits();
    if wide > result {
        let t = e.temp(OpTy::U(result as u8));
        e.push(InstKind::Call { callee, args, results: vec![t] });
        let (to, from) = (OpTy::U(wide as u8), OpTy::U(result as u8));
        let mode = FloatMode::default();
        e.push(InstKind::Convert { to, from, rounding: None, mode, dst, src: Value::Reg(t) });
    } else {
        e.push(InstKind::Call { callee, args, results: vec![dst] });
    }
    e.insts
}

/// The function of `k` that is routine `r`, added on its first use: an `.approx` or
/// Newton routine's arithmetic legalized for `target` (module doc).
pub fn add(k: &mut Kernel, r: Routine, target: &Target) -> Result<FunctionId, Diagnostic> {
    if !r.legalized() {
        return Ok(routines::get(k, r));
    }
    if let Some(i) = k.functions.iter().position(|f| f.routine == Some(r)) {
        return Ok(FunctionId(i as u32));
    }
    let key = (r, target.float64, target.float_constants == FloatConstants::Repaired);
    let again = match LEGALIZED.lookup(key) {
        Ok((f, callees)) => {
            let ids: Vec<_> =
                callees.into_iter().map(|c| add(k, c, target)).collect::<Result<_, _>>()?;
            return Ok(routines::place(k, f, &ids));
        }
        Err(again) => again,
    };
    let mut f = routines::build_with(r, !target.float64);
    f.rewrite_in_shell(|shell| {
        if !target.float64 {
            super::soft_f64::run(shell)?;
        }
        rewrite(shell, Some(k), target)
    })?;
    if let Some(entry) = again.then(|| by_routine(k, &f)).flatten() {
        LEGALIZED.keep(key, entry);
    }
    k.functions.push(f);
    Ok(FunctionId(k.functions.len() as u32 - 1))
}

/// The routines [`add`] legalized in this process, by routine, whether the target has
/// f64 and whether its float constants are repaired ([`for_target`]; all that their
/// legalization reads of the target): each body with its calls
/// numbered by the list beside it, the routines it calls in the order of their first
/// calls. Adding the callees in that order adds the same functions in the same order as
/// the legalization did, so a kernel gets the same functions either way.
static LEGALIZED: routines::Memo<(Routine, bool, bool), (Function, Vec<Routine>)> =
    routines::Memo::new();

/// Forgets the routines built and legalized so far ([`LEGALIZED`], `routines`').
#[cfg(test)]
pub(crate) fn forget_kept() {
    routines::forget_built();
    LEGALIZED.forget();
}

/// Routine `f` of `k` as [`LEGALIZED`] keeps it, if it calls only routines.
fn by_routine(k: &Kernel, f: &Function) -> Option<(Function, Vec<Routine>)> {
    let (mut f, mut callees) = (f.clone(), Vec::new());
    for inst in f.blocks.iter_mut().flat_map(|b| &mut b.insts) {
        if let InstKind::Call { callee, .. } = &mut inst.kind {
            let r = k.functions.get(callee.index())?.routine?;
            let i = callees.iter().position(|&c| c == r).unwrap_or_else(|| {
                callees.push(r);
                callees.len() - 1
            });
            *callee = FunctionId(i as u32);
        }
    }
    Some((f, callees))
}
