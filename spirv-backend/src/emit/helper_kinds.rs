//! The emulation routines a module may call, as values: what a use asks for
//! (`FnEmitter::call`) and what the type cache keys their functions by
//! (`TypeCache::helpers`). Their signatures, names and bodies are in `helpers.rs`.

use ptxvk_lower::ir::Routine;

/// A routine and the variant of it a use needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Helper {
    /// An emulation routine of the IR (`ptxvk_lower::routines`): the function of the
    /// kernels that call it, or built alone for the emitter's own uses (the f32 fast
    /// paths and exact runs, `exact_runs.rs`).
    Routine(Routine),
}
