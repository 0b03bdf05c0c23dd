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
use rspirv::spirv::{FunctionControl, Word};

use ptxvk_lower::ir::{Function, Routine};
use ptxvk_lower::LoweredKernel;

// What a use asks for: plain data below the type cache, which keys the functions by it.
pub(crate) use super::helper_kinds::Helper;
use super::{FnEmitter, R};
use crate::module::Globals;
use crate::types::{Scalar, TypeCache};

impl Helper {
    /// Parameter types and result type.
    fn signature(self) -> (Vec<Scalar>, Scalar) {
        let i64s = Scalar::Int(64);
        match self {
            Helper::Routine(r) => {
                let bits = |b: u32| Scalar::Int(b as u8);
                (vec![bits(r.param_bits()); r.arity()], bits(r.result_bits()))
            }
            Helper::FmaF64 => (vec![i64s; 3], i64s),
            Helper::DivF64 => (vec![i64s; 2], i64s),
        }
    }

    /// The function's name in disassembly, e.g. `ptxvk.div.f64.rn`.
    fn name(self) -> String {
        match self {
            Helper::Routine(x) => x.name(),
            Helper::FmaF64 => "ptxvk.fma.f64.rn.fast".to_string(),
            Helper::DivF64 => "ptxvk.div.f64.rn.fast".to_string(),
        }
    }
}

impl FnEmitter<'_> {
    /// A call of `h` with `args`; its function is written by [`emit_helpers`].
    pub(super) fn call(&mut self, h: Helper, args: &[Word]) -> R<Word> {
        let b = &mut *self.b;
        let id = *self.t.helpers.entry(h).or_insert_with(|| b.id());
        let result = self.ty(h.signature().1);
        Ok(self.b.function_call(result, None, id, args.iter().copied())?)
    }

    /// The body of `h`, from its parameters.
    fn helper_body(&mut self, h: Helper, p: &[Word]) -> R<Word> {
        match h {
            Helper::Routine(r) => Err(crate::Error::Internal(format!("{r:?} has no body here"))),
            Helper::FmaF64 => self.fma_f64_fast(p[0], p[1], p[2]),
            Helper::DivF64 => self.div_f64_fast(p[0], p[1]),
        }
    }
}

/// Writes the function of every routine asked for so far, and of those their bodies
/// ask for, in a fixed order. `kernels` are the module's: a [`Helper::Routine`] is the
/// function of the first that has it (each kernel's is the same IR), or built
/// (`ptxvk_lower::pass::routine`) when only other helpers use it; the other bodies
/// read nothing of `kernels[0]` (an emitter needs one).
pub(crate) fn emit_helpers(
    b: &mut Builder,
    t: &mut TypeCache,
    g: &Globals,
    kernels: &[LoweredKernel],
) -> R<()> {
    let Some(k) = kernels.first().map(|lk| &lk.kernel) else { return Ok(()) };
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
            if let Helper::Routine(r) = h {
                emit_routine(b, t, g, kernels, r, id)?;
                continue;
            }
            let (params, result) = h.signature();
            let result = t.scalar(b, result);
            let param_types: Vec<Word> = params.iter().map(|&s| t.scalar(b, s)).collect();
            let fn_ty = b.type_function(result, param_types.clone());
            b.begin_function(result, Some(id), FunctionControl::NONE, fn_ty)?;
            b.name(id, h.name());
            let args = param_types
                .iter()
                .map(|&pt| b.function_parameter(pt))
                .collect::<Result<Vec<_>, _>>()?;
            b.begin_block(None)?;
            let mut e = FnEmitter::new(b, t, g, k);
            let r = e.helper_body(h, &args)?;
            e.b.ret_value(r)?;
            e.b.end_function()?;
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
