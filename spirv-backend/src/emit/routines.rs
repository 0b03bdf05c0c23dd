//! Emulation routines as SPIR-V functions, emitted once per module and called from
//! every use, as naga emits its polyfills: exact f64 fma, division and square root in
//! integer arithmetic, exactly rounded f32 fma, division and square root in every
//! rounding mode, the `.approx` functions, and conversions to and from the narrow float
//! formats. Inline, each use of one of them copied
//! hundreds of instructions (one `div.rn.f64` about 3,700 words); as a call it costs a
//! few words per use.
//!
//! A use asks for its routine with [`FnEmitter::call`], which names the function by an
//! id reserved on first use; [`emit_routines`] writes the bodies after the kernels (a
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

use super::{FnEmitter, R};
use crate::module::Globals;
use crate::types::{Scalar, TypeCache};

impl FnEmitter<'_> {
    /// A call of routine `r` with `args`; its function is written by [`emit_routines`].
    pub(super) fn call(&mut self, r: Routine, args: &[Word]) -> R<Word> {
        let b = &mut *self.b;
        let id = *self.t.routines.entry(r).or_insert_with(|| b.id());
        let result = self.ty(Scalar::Int(r.result_bits() as u8));
        Ok(self.b.function_call(result, None, id, args.iter().copied())?)
    }
}

/// Writes the function of every routine asked for so far, and of those their bodies
/// ask for, in a fixed order. `kernels` are the module's: a routine is the function of
/// the first that has it (each kernel's is the same IR; `routines::get` adds a
/// routine's callees to the kernel with it).
pub(crate) fn emit_routines(
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
        let pending: Vec<(Routine, Word)> = t
            .routines
            .iter()
            .filter(|(r, _)| !written.contains(*r))
            .map(|(r, id)| (*r, *id))
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        for (r, id) in pending {
            written.insert(r);
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
    let (f, functions) = kernels
        .iter()
        .find_map(|lk| {
            let f = lk.kernel.functions.iter().find(|f| f.routine == Some(r))?;
            Some((f, &lk.kernel.functions))
        })
        .ok_or_else(|| crate::Error::Internal(format!("routine {r:?} in no kernel")))?;
    // Only what each is (`Function::routine`): the callees' bodies are theirs to emit.
    let functions = functions.iter().map(stub).collect();
    // The kernel's functions: the routines this one calls (`.approx` ones do).
    let shell = ptxvk_lower::ir::Kernel { functions, ..f.shell() };
    FnEmitter::new(b, t, g, &shell).routine(f, id)
}
