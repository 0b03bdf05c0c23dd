//! An indirect call in the CFG IR before `pass::expand_indirect_calls`
//! ([`crate::ir::InstKind::CallIndirect`]): `call` through a register (PTX ISA 9.2
//! §9.7.12.4) with the functions it may call, as semantic analysis resolves them from
//! its `.calltargets` list or `.callprototype` (the functions of that signature whose
//! address the kernel takes).
//!
//! # Specification
//!
//! `target` is a function address, read as a u64: a device function's address is
//! [`crate::ir::FUNCTION_WINDOW`] plus its position among the module's device functions
//! (counting from 1), so that it survives being stored and loaded. Each [`CallArm`]
//! names one possible callee at its address, with the arguments and results of a
//! [`crate::ir::InstKind::Call`] of it (a function that may end the thread returns one
//! more predicate, as at a direct call). When `target` is an arm's address, the
//! operation is the call of the first arm at that address; when it is none (undefined
//! behaviour in PTX), it does nothing, and every result keeps its value.
//!
//! `pass::expand_indirect_calls` writes each out in a test of `target` against each
//! arm's address and a `Call` where it holds, before `pass::inline`.
//!
//! # Thread registers
//!
//! A function may name registers of the kernel (module-scope `.reg` variables, per-thread
//! storage that every function of a module names, PTX ISA 9.2 §5.1.1) through registers
//! of its own, [`crate::ir::Function::thread_regs`]: each pairs one of its registers
//! with the kernel's it stands for. A call copies the caller's view of each kernel
//! register (the register itself in the kernel, the caller's own for it in a function,
//! which must have one) into the callee's own after its parameters, and copies the
//! callee's own back into the caller's view when it returns (after its returns), as if
//! each were a parameter and a return. `pass::thread_registers` makes them exactly that,
//! so that none is left after it.
//!
//! # Thread ends
//!
//! [`crate::ir::InstKind::EndThread`] ends the thread where it stands (`exit`, `trap`,
//! a failure: PTX ISA 9.2 §9.7.12.6, §9.7.19.1): the rest of its block does not run,
//! nor the rest of any call active, and the thread's registers are not copied back to
//! any caller. Semantic analysis makes it in device functions only, alone in a block
//! that returns (in a kernel, a thread end is a `return`). Before `pass::thread_ends`
//! the kernel and its functions may contain it; that pass writes it out in an ended
//! flag that each function that may end the thread returns last (a predicate, a
//! `Call`'s or an ending arm's last result) and a branch to a return after each call of
//! one, so that none is left after it.

use super::{FunctionId, InstKind, RegId, Value};

/// One possible callee of an indirect call (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct CallArm {
    /// The function's address (module doc).
    pub address: u64,
    pub callee: FunctionId,
    pub args: Vec<Value>,
    pub results: Vec<RegId>,
}

impl InstKind {
    /// The functions a call or an indirect call may call.
    pub fn callees(&self) -> Vec<FunctionId> {
        match self {
            InstKind::Call { callee, .. } => vec![*callee],
            InstKind::CallIndirect { arms, .. } => arms.iter().map(|a| a.callee).collect(),
            _ => Vec::new(),
        }
    }

    /// The same functions, to rename them.
    pub fn callees_mut(&mut self) -> Vec<&mut FunctionId> {
        match self {
            InstKind::Call { callee, .. } => vec![callee],
            InstKind::CallIndirect { arms, .. } => arms.iter_mut().map(|a| &mut a.callee).collect(),
            _ => Vec::new(),
        }
    }
}
