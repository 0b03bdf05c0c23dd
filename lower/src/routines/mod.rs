//! The emulation routines (`crate::ir`'s module doc, *Emulation routines*), each written
//! once with the one IR builder ([`Build`]) as a [`Function`] of core integer
//! operations: [`wide`] has the 128-bit arithmetic they share, [`softf64`] the exact f64
//! `fma`, `div` and `sqrt`; [`soft_f32`] the f32 `fma`, `div`, `sqrt` and round-to-odd
//! arithmetic of a target without f64, which call those; [`approx`] the `.approx`
//! functions in f64 arithmetic, but `sin` and `cos`, which are [`trig`]'s; [`convert`]
//! the conversions of the narrow float formats; [`newton`] `div.rn` and `sqrt.rn` by
//! Newton steps on a fused `Fma`; [`exact_f32`] the exact f32 arithmetic of a target
//! with f64 in f64 arithmetic: round to odd (built per target: its form for a driver
//! that was not probed repairs the sign of a zero sum), `fma.rn` from it, and `div`
//! and `sqrt` in every rounding by exact residuals; [`fast_f32`] the fast paths of
//! f32 `fma.rn`, `div.rn` and `sqrt.rn` on that target, and those operations by them
//! with the exact routines where their test fails; [`fast_f64`] the fast paths of f64
//! `fma.rn` and `div.rn` on a target with f64 (error-free transformations, and the
//! device's quotient proved by an exact residual), and those operations by them with
//! the integer routines where their guard fails; [`allocation_table`] the search of
//! a checked launch's allocation table (`crate::pass::check` calls it), the one loop
//! of every target's routines, whose loads read the table.
//!
//! A routine is a CFG like a kernel's ([`FnBuilder::end_block`]), which
//! `crate::pass::run` structures with the kernel; most are one block of straight-line
//! code (comparisons and selects, loops unrolled; the table's search is a loop). The integer routines are the same IR
//! on every target, so that one body per module serves every kernel, and the
//! interpreter and the pass file tests check them against the ISA's arithmetic like any
//! code. The `.approx` routines are built in f64 arithmetic, and the Newton routines'
//! exact path in the operation it replaces, which [`crate::pass::emulate`] legalizes
//! for the target when it adds them; for a target
//! without f64 the argument reduction of `sin` and `cos` is a loop instead of unrolled
//! ([`build_with`]).
//!
//! A routine whose body calls routines ([`Routine::callees`]) is built calling them as
//! the functions of their indices in that list, as in a kernel of its own (the form
//! `crate::pass::routine` structures); [`get`] adds the callees to a kernel first and
//! renumbers the calls.

mod allocation_table;
mod approx;
mod convert;
mod exact_f32;
mod fast_f32;
mod fast_f64;
mod newton;
mod soft_f32;
mod softf64;
mod trig;
mod wide;

use std::collections::BTreeMap;
use std::sync::Mutex;

use ptxvk_frontend::Span;

/// `cvt.f64.f32` on bit patterns, written out: [`crate::pass::soft_f64`]'s, and the body
/// of [`Routine::F32ToF64`].
pub(crate) use soft_f32::widen as f32_to_f64;

use crate::build::Build;
use crate::ir::{
    Block, BlockId, FloatMode, FloatPath, Function, FunctionId, Inst, InstKind, Kernel, OpTy,
    RegId, Rounding, Routine, Terminator, UnaryOp, Value,
};

/// The device's own float operation (`.native`, rounding to nearest): in the `.approx`
/// routines Vulkan's f64 `div` and `sqrt`, in the Newton ones its `Fma` (fused on such a
/// device), division and reciprocal square root, in `exact_f32` the candidates of f64
/// `div` and `sqrt`.
const NATIVE: FloatMode = FloatMode {
    ftz: false,
    sat: false,
    rounding: Rounding::Nearest,
    path: FloatPath::Native,
    visible: false,
};

/// Builds a routine's body: registers into the function, instructions into its current
/// block, the blocks in the order they are ended.
struct FnBuilder {
    f: Function,
    insts: Vec<Inst>,
    /// The routines the body may call ([`Routine::callees`]), by function index.
    callees: Vec<Routine>,
}

impl FnBuilder {
    /// The block the next instructions go into (the targets of the blocks that follow
    /// it are the ids after it).
    fn current(&self) -> BlockId {
        BlockId(self.f.blocks.len() as u32)
    }

    /// Ends the current block with `term`; the next instructions start a new block.
    fn end_block(&mut self, term: Terminator) {
        let (span, insts) = (self.f.span, std::mem::take(&mut self.insts));
        self.f.blocks.push(Block { label: None, span, insts, term, term_span: span });
    }
}

impl Build for FnBuilder {
    fn temp(&mut self, ty: OpTy) -> RegId {
        crate::ir::new_temp(&mut self.f.regs, ty.storage(), self.f.span)
    }

    fn push(&mut self, kind: InstKind) {
        self.insts.push(Inst { kind, span: self.f.span });
    }
}

/// The function of routine `r`, its CFG, as [`crate::pass::emulate`] adds it to a
/// kernel for a target with f64. Its instructions have an empty span: they are no PTX's.
pub fn build(r: Routine) -> Function {
    build_with(r, false)
}

/// The function of routine `r`; with `loops`, the form for a target without f64, whose
/// f64 arithmetic becomes calls of integer routines: the argument reduction of `sin` and
/// `cos` is then a loop of [`Routine::loop_iterations`] iterations (`trig`), not a
/// dozen calls per unrolled step, which drivers that inline every call (Mesa) compile
/// for about a minute. Both forms compute the same bits.
pub fn build_with(r: Routine, loops: bool) -> Function {
    match BUILT.lookup((r, loops)) {
        Ok(f) => f,
        Err(again) => {
            let f = construct(r, loops);
            if again {
                BUILT.keep((r, loops), f.clone());
            }
            f
        }
    }
}

/// The routines built in this process, by routine and form ([`build_with`]'s `loops`),
/// of which a body is a function: the kernels of a module, and the modules a process
/// compiles, use the same few.
static BUILT: Memo<(Routine, bool), Function> = Memo::new();

/// Values of a function of their keys alone, kept for the process, each from its second
/// computation on: a process that computes each once (a module of one kernel) copies
/// none.
pub(crate) struct Memo<K, V>(Mutex<BTreeMap<K, Option<V>>>);

impl<K: Ord, V: Clone> Memo<K, V> {
    pub(crate) const fn new() -> Self {
        Memo(Mutex::new(BTreeMap::new()))
    }

    /// The value kept for `key`, or whether it was asked for before (then the caller
    /// computes it and [`Self::keep`]s it).
    pub(crate) fn lookup(&self, key: K) -> Result<V, bool> {
        let Ok(mut kept) = self.0.lock() else { return Err(false) };
        match kept.get(&key) {
            Some(Some(v)) => Ok(v.clone()),
            Some(None) => Err(true),
            None => {
                kept.insert(key, None);
                Err(false)
            }
        }
    }

    /// Keeps `v` as the value for `key`.
    pub(crate) fn keep(&self, key: K, v: V) {
        if let Ok(mut kept) = self.0.lock() {
            kept.insert(key, Some(v));
        }
    }

    /// Forgets every value and request (the next computation of each is its first).
    #[cfg(test)]
    pub(crate) fn forget(&self) {
        if let Ok(mut kept) = self.0.lock() {
            kept.clear();
        }
    }
}

/// Forgets the routines built so far ([`BUILT`]).
#[cfg(test)]
pub(crate) fn forget_built() {
    BUILT.forget();
}

/// [`build_with`]'s body, built.
fn construct(r: Routine, loops: bool) -> Function {
    let span = Span::default();
    let mut b =
        FnBuilder { f: Function::of_routine(r, span), insts: Vec::new(), callees: r.callees() };
    let ty = OpTy::U(r.param_bits() as u8);
    let params: Vec<Value> = (0..r.arity())
        .map(|_| {
            let p = b.temp(ty);
            b.f.params.push((p, ty));
            Value::Reg(p)
        })
        .collect();
    let result = match r {
        Routine::FmaF64(rounding) => softf64::fma(&mut b, &params, rounding, false),
        Routine::FmaF64Odd => softf64::fma(&mut b, &params, crate::ir::Rounding::Zero, true),
        Routine::DivF64(rounding) => softf64::div(&mut b, params[0], params[1], rounding),
        Routine::SqrtF64(rounding) => softf64::sqrt(&mut b, params[0], rounding),
        Routine::Approx(op @ (UnaryOp::Sin | UnaryOp::Cos)) => {
            trig::sin_cos(&mut b, op == UnaryOp::Sin, params[0], loops)
        }
        Routine::Approx(op) => approx::build(&mut b, op, params[0]),
        Routine::Narrow { to, from_bits, rounding, satfinite, relu } => {
            convert::narrow(&mut b, params[0], (to, from_bits), rounding, satfinite, relu)
        }
        Routine::IntToFloat { to, from, rounding } => {
            convert::int_to_float(&mut b, params[0], to, from, rounding)
        }
        Routine::Widen(from) => convert::widen(&mut b, params[0], from),
        Routine::F32ToF64 => soft_f32::widen(&mut b, params[0]),
        Routine::FmaF32(_) | Routine::DivF32(_) | Routine::SqrtF32(_) => {
            soft_f32::f32_op(&mut b, &params)
        }
        Routine::OddF32(op) => soft_f32::odd(&mut b, op, &params),
        Routine::OddF32InF64 { op, repaired } => exact_f32::odd(&mut b, op, repaired, &params),
        Routine::DivF32InF64(rounding) => exact_f32::div(&mut b, rounding, params[0], params[1]),
        Routine::SqrtF32InF64(rounding) => exact_f32::sqrt(&mut b, rounding, params[0]),
        Routine::FmaF32InF64 { repaired } => exact_f32::fma(&mut b, repaired, &params),
        Routine::FastF32(op) => fast_f32::fast(&mut b, op, &params),
        Routine::NearestF32(op) => fast_f32::nearest(&mut b, op, &params),
        Routine::FastF64(op) => fast_f64::fast(&mut b, op, &params),
        Routine::NearestF64(op) => fast_f64::nearest(&mut b, op, &params),
        Routine::Newton { op, bits, soft } => newton::build(&mut b, op, bits, soft, &params),
        Routine::InAllocation { write } => allocation_table::in_allocation(&mut b, &params, write),
        Routine::ShadowWord => allocation_table::shadow_word(&mut b, &params),
    };
    let ty = OpTy::U(r.result_bits() as u8);
    let ret = b.temp(ty);
    b.mov(ty, ret, result);
    b.end_block(Terminator::Return);
    let mut f = b.f;
    f.returns.push((ret, ty));
    f.entry = BlockId(0);
    f
}

/// The function of `k` that is routine `r`, added (built) on its first use, after the
/// routines it calls, its calls renumbered for `k`'s functions.
pub fn get(k: &mut Kernel, r: Routine) -> FunctionId {
    if let Some(i) = k.functions.iter().position(|f| f.routine == Some(r)) {
        return FunctionId(i as u32);
    }
    let ids: Vec<FunctionId> = r.callees().into_iter().map(|c| get(k, c)).collect();
    place(k, build(r), &ids)
}

/// Adds function `f` to `k`, its calls, which are of the functions of its callee list
/// by index, renumbered to `ids`, their indices in `k`.
pub(crate) fn place(k: &mut Kernel, mut f: Function, ids: &[FunctionId]) -> FunctionId {
    for inst in f.blocks.iter_mut().flat_map(|b| &mut b.insts) {
        if let InstKind::Call { callee, .. } = &mut inst.kind {
            *callee = ids.get(callee.index()).copied().unwrap_or(FunctionId(u32::MAX));
        }
    }
    k.functions.push(f);
    FunctionId(k.functions.len() as u32 - 1)
}

#[cfg(test)]
mod tests;
