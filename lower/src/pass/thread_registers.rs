//! Thread registers: a device function's registers that stand for registers of the
//! kernel ([`crate::ir::Function::thread_regs`], the module-scope `.reg` variables
//! every function of a module names, PTX ISA 9.2 §5.1.1) become parameters and returns,
//! as a function can pass them: each function gets and gives back its thread registers
//! (after its own parameters and returns), and each call passes the caller's registers
//! for them, its own in a function, the kernel's in the kernel (`crate::ir::call`'s doc,
//! *Thread registers*, specifies the operation).
//!
//! Pre: the kernel verifies, and every function that calls one with thread registers
//! has its own for them (semantic analysis gives every function one for each
//! module-scope `.reg` variable). Post: no function has thread registers; the kernel
//! computes what it computed.

use ptxvk_frontend::Diagnostic;

use crate::ir::{Function, InstKind, Kernel, OpTy, RegId, RegTy, Value};

/// Passes every thread register of `k`'s functions through its calls (module doc).
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    let thread: Vec<Vec<(RegId, RegId)>> =
        k.functions.iter().map(|f| f.thread_regs.clone()).collect();
    pass_at_calls(k, &thread, None)?;
    let mut functions = std::mem::take(&mut k.functions);
    for (i, f) in functions.iter_mut().enumerate() {
        f.rewrite_in_shell(|shell| pass_at_calls(shell, &thread, Some(&thread[i])))?;
        for (own, _) in std::mem::take(&mut f.thread_regs) {
            let ty = passed_type(f, own);
            f.params.push((own, ty));
            f.returns.push((own, ty));
        }
    }
    k.functions = functions;
    Ok(())
}

/// In one body (the kernel's, or a function's with its thread registers `own`): each
/// call passes the body's registers for its callee's thread registers, in and out.
fn pass_at_calls(
    k: &mut Kernel,
    thread: &[Vec<(RegId, RegId)>],
    own: Option<&[(RegId, RegId)]>,
) -> Result<(), Diagnostic> {
    let mine = |kernel_reg: RegId| match own {
        None => Some(kernel_reg),
        Some(own) => own.iter().find(|t| t.1 == kernel_reg).map(|t| t.0),
    };
    for inst in k.blocks.iter_mut().flat_map(|b| &mut b.insts) {
        let span = inst.span;
        let mut operands = Vec::new();
        match &mut inst.kind {
            InstKind::Call { callee, args, results } => operands.push((*callee, args, results)),
            InstKind::CallIndirect { arms, .. } => {
                operands.extend(arms.iter_mut().map(|a| (a.callee, &mut a.args, &mut a.results)))
            }
            _ => {}
        }
        for (callee, args, results) in operands {
            for &(_, kernel_reg) in thread.get(callee.index()).into_iter().flatten() {
                let Some(r) = mine(kernel_reg) else {
                    let msg = "a call from a body without its callee's thread registers";
                    return Err(Diagnostic::internal(span, msg));
                };
                args.push(Value::Reg(r));
                results.push(r);
            }
        }
    }
    Ok(())
}

/// The type a thread register of `f` is passed at: its storage type, unsigned.
fn passed_type(f: &Function, r: RegId) -> OpTy {
    match f.regs[r.index()].ty {
        RegTy::Pred => OpTy::Pred,
        RegTy::Int(b) => OpTy::U(b),
        RegTy::Float(b) => OpTy::F(b),
    }
}
