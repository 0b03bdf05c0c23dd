//! ptxvk's middle end: semantic analysis of the PTX AST into the CFG IR, and the
//! passes that lower it for a device into the structured IR the SPIR-V backend
//! consumes.
//!
//! * [`sema::run`] — AST → CFG IR ([`ir`], whose module doc is the IR specification),
//!   the same for every device;
//! * [`pass::run`] — the passes, one file each under [`pass`], for a [`pass::Target`]:
//!   check (checked launches only), hoist parameter loads, schedule polling kernels,
//!   legalize atomics, floats and warps, structurize (with its CFG passes), predicate,
//!   guard loops (drivers that cut them short), legalize memory; the order and each
//!   pass's contract are in [`pass`]'s module doc;
//! * [`verify`] checks the IR's invariants (handles, predicates, the equal-width rule,
//!   the structured tree) between passes; [`text`] prints the IR and parses it back,
//!   for `--emit` and for pass and snapshot tests.
//!
//! A verifier failure is a ptxvk bug: an internal error at the offending construct
//! (`Diagnostic::internal`), never a rejection of the PTX.
#![forbid(unsafe_code)]
// The middle end is documented for the people who change it: its module docs link the
// private items that implement what they describe (`cargo doc --document-private-items`).
#![allow(rustdoc::private_intra_doc_links)]

pub mod abi;
pub mod build;
pub mod cfg;
pub mod coverage;
pub mod dispatch;
pub mod globals;
pub mod interp;
pub mod ir;
pub mod merges;
pub mod pass;
pub mod pressure;
pub mod random_cfg;
pub mod routines;
pub mod sema;
pub mod text;
pub mod uniformity;
pub mod verify;

// The layouts the host shares with the kernels are the launch ABI's (`ptxvk-abi`).
pub(crate) use ptxvk_abi::{device_launch, system};

use ptxvk_frontend::{ast, Diagnostics};

/// A kernel ready for code generation: its CFG IR and its structured form.
#[derive(Clone, Debug)]
pub struct LoweredKernel {
    pub kernel: ir::Kernel,
    pub body: Vec<ir::Node>,
}

/// Runs every pass of the middle end over a parsed module, for
/// [`pass::Target::portable`].
pub fn lower(module: &ast::Module) -> Result<Vec<LoweredKernel>, Diagnostics> {
    lower_with(module, &pass::Target::portable())
}

/// [`lower`] for `target`.
pub fn lower_with(
    module: &ast::Module,
    target: &pass::Target,
) -> Result<Vec<LoweredKernel>, Diagnostics> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for k in lower_each(module, target)? {
        match k.result {
            Ok(k) => out.push(k),
            Err(mut e) => errors.append(&mut e.0),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(Diagnostics(errors).once())
    }
}

/// One kernel through the middle end: lowered, or its own diagnostics.
#[derive(Clone, Debug)]
pub struct KernelOutcome {
    pub name: String,
    pub result: Result<LoweredKernel, Diagnostics>,
}

/// Lowers kernel `name` of a prepared module for `target` (the passes included);
/// `None` when there is no such kernel.
pub fn lower_one(
    module: &sema::PreparedModule<'_>,
    name: &str,
    target: &pass::Target,
) -> Option<Result<LoweredKernel, Diagnostics>> {
    let kernel = module.lower(name)?;
    Some(kernel.and_then(|kernel| pass::run(kernel, target).map_err(Diagnostics)))
}

/// Like [`lower_with`], but each kernel succeeds or fails alone; the error is the
/// module's only for what its kernels share ([`sema::run_each`]).
pub fn lower_each(
    module: &ast::Module,
    target: &pass::Target,
) -> Result<Vec<KernelOutcome>, Diagnostics> {
    let each = sema::run_each(module)?;
    Ok(each
        .kernels
        .into_iter()
        .map(|k| KernelOutcome {
            name: k.name,
            result: k.result.and_then(|kernel| pass::run(kernel, target).map_err(Diagnostics)),
        })
        .collect())
}

/// The first kernel of `ptx` (under an sm_80, 64-bit header), lowered: for unit tests.
#[cfg(test)]
pub(crate) fn first_kernel(ptx: &str) -> ir::Kernel {
    let header = ".version 8.0\n.target sm_80\n.address_size 64\n";
    let module = ptxvk_frontend::parse(&format!("{header}{ptx}")).expect("parses");
    sema::run(&module).expect("lowers").kernels.remove(0)
}
