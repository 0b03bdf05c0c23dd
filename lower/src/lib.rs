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
pub mod uniformity;
pub mod verify;

use ptxvk_frontend::{ast, Diagnostics};

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
) -> Result<Vec<structurize::Node>, Vec<ptxvk_frontend::Diagnostic>> {
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
    for mut kernel in ir.kernels {
        if let Err(mut e) = verify::run(&kernel) {
            errors.append(&mut e);
            continue;
        }
        match structurize::run(&mut kernel) {
            Ok(body) => {
                match verify::run(&kernel).and_then(|()| uniform_collectives(&mut kernel, body)) {
                    Ok(body) => out.push(LoweredKernel { kernel, body }),
                    Err(mut e) => errors.append(&mut e),
                }
            }
            Err(d) => errors.push(d),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(Diagnostics(errors))
    }
}
