//! The emulation routines a module may call, as values: what a use asks for
//! (`FnEmitter::call`) and what the type cache keys their functions by
//! (`TypeCache::helpers`). Their signatures, names and bodies are in `helpers.rs`.

use ptxvk_lower::ir::Routine;

/// The exactly rounded f32 operations of `FnEmitter::exact_f32` (their routines:
/// `FnEmitter::exact_f32_routine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SoftOp {
    Fma,
    Div,
    Sqrt,
}

/// A routine and the variant of it a use needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Helper {
    /// An emulation routine of the IR (`ptxvk_lower::routines`): the function of the
    /// kernels that call it, or built alone for the emitter's own uses (the routines
    /// below, the second pass of an exact run, `exact_runs.rs`).
    Routine(Routine),
    /// `fma.rn.f32`, exactly rounded: the fast path of `f32fast.rs`, else
    /// [`Routine::FmaF32InF64`] (`fma_f32`).
    FmaF32,
    /// `fma.rn.f64` on bit patterns with f64 arithmetic: the fast path of `f64fast.rs`,
    /// else [`Routine::FmaF64`] (`fma_f64_fast`).
    FmaF64,
    /// `div.rn.f64` on bit patterns with f64 arithmetic: the device's quotient where
    /// an exact residual proves it, else [`Routine::DivF64`] (`div_f64_fast`).
    DivF64,
    /// `div.rn.f32`: the fast path of `f32fast.rs`, else [`Routine::DivF32InF64`]
    /// (`div_f32`).
    DivF32,
    /// `sqrt.rn.f32`: the fast path of `f32fast.rs`, else [`Routine::SqrtF32InF64`]
    /// (`sqrt_f32`).
    SqrtF32,
}
