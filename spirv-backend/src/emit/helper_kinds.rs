//! The emulation routines a module may call, as values: what a use asks for
//! (`FnEmitter::call`) and what the type cache keys their functions by
//! (`TypeCache::helpers`). Their signatures, names and bodies are in `helpers.rs`.

use ptxvk_lower::ir::{Rounding, Routine};

/// The exactly rounded f32 operations of [`Helper::ExactF32`] and `FnEmitter::exact_f32`.
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
    /// kernels that call it, or built for the routines below that use it.
    Routine(Routine),
    /// `fma.rn.f32`, exactly rounded (`fma_f32`).
    FmaF32,
    /// `fma.rn.f64` on bit patterns with f64 arithmetic: the fast path of `f64fast.rs`,
    /// else [`Routine::FmaF64`] (`fma_f64_fast`).
    FmaF64,
    /// `div.rn.f64` on bit patterns with f64 arithmetic: the device's quotient where
    /// an exact residual proves it, else [`Routine::DivF64`] (`div_f64_fast`).
    DivF64,
    /// `div.f32` with a rounding (`div_f32`).
    DivF32(Rounding),
    /// `sqrt.f32` with a rounding (`sqrt_f32`).
    SqrtF32(Rounding),
    /// `fma.rn`, `div.rn` or `sqrt.rn` on f32 by the exact path alone, without the fast
    /// path (`fma_f32_exact`, `div_f32_exact`, `sqrt_f32_exact`): the second pass of an
    /// exact run (`exact_runs.rs`).
    ExactF32(SoftOp),
}
