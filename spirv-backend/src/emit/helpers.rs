//! Emulation routines as SPIR-V functions, emitted once per module and called from
//! every use, as naga emits its polyfills: exact f64 fma, division and square root in
//! integer arithmetic, exactly rounded f32 fma, division and square root in every
//! rounding mode, the `.approx` functions, and conversions to and from the narrow float
//! formats. Inline, each use of one of them copied
//! hundreds of instructions (one `div.rn.f64` about 3,700 words); as a call it costs a
//! few words per use.
//!
//! A use asks for its routine with [`FnEmitter::call`], which names the function by an
//! id reserved on first use; [`emit_helpers`] writes the bodies after the kernels (a
//! body may ask for other routines; they are written too). The routines are pure
//! functions of their arguments: they read no register, memory (but the allocation
//! table of `Routine::InAllocation` and `Routine::ShadowWord`, at an address passed in)
//! or kernel state, so one body serves every kernel of the module. Drivers inline them again when they compile
//! the module (Mesa does so for every call); what shrinks is the SPIR-V to store,
//! validate and parse.

use std::collections::BTreeSet;

use rspirv::dr::Builder;
use rspirv::spirv::Word;

use ptxvk_lower::ir::{Function, Routine};
use ptxvk_lower::LoweredKernel;

// What a use asks for: plain data below the type cache, which keys the functions by it.
pub(crate) use super::helper_kinds::Helper;
use super::{FnEmitter, R};
use crate::module::Globals;
use crate::types::{Scalar, TypeCache};

impl Helper {
    /// The result type.
    fn result(self) -> Scalar {
        let Helper::Routine(r) = self;
        Scalar::Int(r.result_bits() as u8)
    }
}

impl FnEmitter<'_> {
    /// A call of `h` with `args`; its function is written by [`emit_helpers`].
    pub(super) fn call(&mut self, h: Helper, args: &[Word]) -> R<Word> {
        let b = &mut *self.b;
        let id = *self.t.helpers.entry(h).or_insert_with(|| b.id());
        let result = self.ty(h.result());
        Ok(self.b.function_call(result, None, id, args.iter().copied())?)
    }
}

/// Writes the function of every routine asked for so far, and of those their bodies
/// ask for, in a fixed order. `kernels` are the module's: a [`Helper::Routine`] is the
/// function of the first that has it (each kernel's is the same IR), or built
/// (`ptxvk_lower::pass::routine`) when only other routines or the emitter's own uses
/// call it.
pub(crate) fn emit_helpers(
    b: &mut Builder,
    t: &mut TypeCache,
    g: &Globals,
    kernels: &[LoweredKernel],
) -> R<()> {
    if kernels.is_empty() {
        return Ok(());
    }
    let mut written = BTreeSet::new();
    loop {
        let pending: Vec<(Helper, Word)> = t
            .helpers
            .iter()
            .filter(|(h, _)| !written.contains(*h))
            .map(|(h, id)| (*h, *id))
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        for (h, id) in pending {
            written.insert(h);
            let Helper::Routine(r) = h;
            emit_routine(b, t, g, kernels, r, id)?;
        }
    }
}

/// Function `f` without its body: its name and what routine it is.
fn stub(f: &Function) -> Function {
    Function { name: f.name.clone(), routine: f.routine, ..Function::new(String::new(), f.span) }
}

/// Writes routine `r` as the function `id`, from the IR (`FnEmitter::routine`).
fn emit_routine(
    b: &mut Builder,
    t: &mut TypeCache,
    g: &Globals,
    kernels: &[LoweredKernel],
    r: Routine,
    id: Word,
) -> R<()> {
    let of_kernels = kernels.iter().find_map(|lk| {
        let f = lk.kernel.functions.iter().find(|f| f.routine == Some(r))?;
        Some((f, &lk.kernel.functions))
    });
    let built;
    let (f, functions) = match of_kernels {
        // Only what each is (`Function::routine`): the callees' bodies are theirs to
        // emit.
        Some((f, functions)) => (f, functions.iter().map(stub).collect()),
        // Built alone: its calls are of its callees, by index (`Routine::callees`).
        None => {
            built = ptxvk_lower::pass::routine(r)
                .map_err(|d| crate::Error::Internal(format!("routine {r:?}: {d:?}")))?;
            let callees = r.callees().into_iter();
            (&built, callees.map(|c| Function::of_routine(c, built.span)).collect())
        }
    };
    // The kernel's functions: the routines this one calls (`.approx` ones do).
    let shell = ptxvk_lower::ir::Kernel { functions, ..f.shell() };
    FnEmitter::new(b, t, g, &shell).routine(f, id)
}
