//! The emulation routines (`crate::ir`'s module doc, *Emulation routines*), each written
//! once with the one IR builder ([`Build`]) as a [`Function`] of core integer
//! operations: [`wide`] has the 128-bit arithmetic they share, [`softf64`] the exact f64
//! `fma`, `div` and `sqrt`; [`approx`] the `.approx` functions in f64 arithmetic, but
//! `sin` and `cos`, which are [`trig`]'s; [`convert`] the conversions of the narrow float
//! formats; [`newton`] `div.rn` and `sqrt.rn` by Newton steps on a fused `Fma`.
//!
//! A routine is a CFG like a kernel's ([`FnBuilder::end_block`]), which
//! `crate::pass::run` structures with the kernel; most are one block of straight-line
//! code (comparisons and selects, loops unrolled). The integer routines are the same IR
//! on every target, so that one body per module serves every kernel, and the
//! interpreter and the pass file tests check them against the ISA's arithmetic like any
//! code. The `.approx` routines are built in f64 arithmetic, and the Newton routines'
//! exact path in the operation it replaces, which [`crate::pass::emulate`] legalizes
//! for the target when it adds them; for a target
//! without f64 the argument reduction of `sin` and `cos` is a loop instead of unrolled
//! ([`build_with`]).

mod approx;
mod convert;
mod newton;
mod softf64;
mod trig;
mod wide;

use ptxvk_frontend::Span;

use crate::build::Build;
use crate::ir::{
    Block, BlockId, Function, FunctionId, Inst, InstKind, Kernel, OpTy, RegId, RegInfo, Routine,
    Terminator, UnaryOp, Value,
};

/// Builds a routine's body: registers into the function, instructions into its current
/// block, the blocks in the order they are ended.
struct FnBuilder {
    f: Function,
    insts: Vec<Inst>,
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
        let id = RegId(self.f.regs.len() as u32);
        let span = self.f.span;
        self.f.regs.push(RegInfo { name: format!("$t{}", id.0), ty: ty.storage(), span });
        id
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
    let span = Span::default();
    let mut b = FnBuilder { f: Function::new(r.name(), span), insts: Vec::new() };
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
        Routine::Newton { op, bits, soft } => newton::build(&mut b, op, bits, soft, &params),
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

/// The function of `k` that is routine `r`, added (built) on its first use.
pub fn get(k: &mut Kernel, r: Routine) -> FunctionId {
    if let Some(i) = k.functions.iter().position(|f| f.routine == Some(r)) {
        return FunctionId(i as u32);
    }
    k.functions.push(build(r));
    FunctionId(k.functions.len() as u32 - 1)
}

#[cfg(test)]
mod tests;
