//! ptxvk's middle end: semantic analysis of the PTX AST into the CFG IR, analyses and
//! passes over it, and the structurizer that produces the structured IR the SPIR-V
//! backend consumes.
//!
//! The pipeline is a short list of passes, one file each:
//!
//! 1. [`sema::run`] — AST → CFG IR ([`ir`], whose module doc is the IR specification);
//! 2. [`verify::run`] — invariants of the IR (handles, predicates, the equal-width
//!    rule);
//! 3. [`structurize::run`] — CFG → structured [`structurize::Node`] trees, after the
//!    CFG passes [`reducible`], [`loop_exits`] and [`merges`] (which share
//!    [`dispatch`]); then [`verify::run`] and [`verify::structured`] again;
//! 4. [`uniformity::check`] — emulated warp collectives are in block-uniform control
//!    flow, or [`predicate::run`] makes them so (verified again after it).
//!
//! [`text`] prints the IR (and the structured tree) and parses it back, for `--emit`
//! and for pass and snapshot tests.
//!
//! A verifier failure is a ptxvk bug: an internal error at the offending construct
//! (`Diagnostic::internal`), never a rejection of the PTX.
#![forbid(unsafe_code)]

pub mod abi;
pub mod cfg;
pub mod coverage;
pub mod dispatch;
pub mod globals;
pub mod interp;
pub mod ir;
pub mod loop_exits;
pub mod merges;
pub mod predicate;
pub mod pressure;
pub mod random_cfg;
pub mod reducible;
pub mod sema;
pub mod structurize;
pub mod system;
pub mod text;
pub mod uniformity;
pub mod verify;

use ptxvk_frontend::{ast, Diagnostic, Diagnostics};

/// A kernel ready for code generation: its CFG IR and its structured form.
#[derive(Clone, Debug)]
pub struct LoweredKernel {
    pub kernel: ir::Kernel,
    pub body: Vec<structurize::Node>,
}

/// Makes every emulated warp collective block-uniform: as it is, or by predicating the
/// divergent control flow around it (then checked again).
fn uniform_collectives(
    kernel: &mut ir::Kernel,
    body: Vec<structurize::Node>,
) -> Result<Vec<structurize::Node>, Vec<Diagnostic>> {
    verify::structured(kernel, &body)?;
    if uniformity::check(kernel, &body).is_ok() {
        return Ok(body);
    }
    let body = predicate::run(kernel, body).map_err(|d| vec![d])?;
    verify::run(kernel)?;
    verify::structured(kernel, &body)?;
    uniformity::check(kernel, &body)?;
    Ok(body)
}

/// Runs every pass of the middle end over a parsed module (warps emulated).
pub fn lower(module: &ast::Module) -> Result<Vec<LoweredKernel>, Diagnostics> {
    lower_with(module, ir::WarpMode::Emulated)
}

/// [`lower`] with warp collectives for `warp_mode`.
pub fn lower_with(
    module: &ast::Module,
    warp_mode: ir::WarpMode,
) -> Result<Vec<LoweredKernel>, Diagnostics> {
    let ir = sema::run_with(module, warp_mode)?;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for kernel in ir.kernels {
        match lower_kernel(kernel) {
            Ok(k) => out.push(k),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(Diagnostics(errors))
    }
}

/// Runs the passes after semantic analysis over one kernel of CFG IR (from sema, or
/// parsed from [`text`]): verify, structurize, verify, make collectives uniform.
pub fn lower_kernel(mut kernel: ir::Kernel) -> Result<LoweredKernel, Vec<Diagnostic>> {
    verify::run(&kernel)?;
    let body = structurize::run(&mut kernel).map_err(|d| vec![d])?;
    verify::run(&kernel)?;
    let body = uniform_collectives(&mut kernel, body)?;
    Ok(LoweredKernel { kernel, body })
}
