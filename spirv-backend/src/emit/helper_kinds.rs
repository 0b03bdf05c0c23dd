//! The emulation routines a module may call, as values: what a use asks for
//! (`FnEmitter::call`) and what the type cache keys their functions by
//! (`TypeCache::helpers`). Their signatures, names and bodies are in `helpers.rs`.

use ptxvk_lower::ir::Routine;

/// A routine and the variant of it a use needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Helper {
    /// An emulation routine of the IR (`ptxvk_lower::routines`): the function of the
    /// kernels that call it, or built alone for the emitter's own uses (the routines
    /// below).
    Routine(Routine),
    /// `fma.rn.f64` on bit patterns with f64 arithmetic: the fast path of `f64fast.rs`,
    /// else [`Routine::FmaF64`] (`fma_f64_fast`).
    FmaF64,
    /// `div.rn.f64` on bit patterns with f64 arithmetic: the device's quotient where
    /// an exact residual proves it, else [`Routine::DivF64`] (`div_f64_fast`).
    DivF64,
}
