//! The body being lowered: a kernel's, or a device function's (`sema::calls`), which
//! interrupts its caller's at its first call. Each body has its own arenas of registers
//! and blocks, labels, scopes and per-body registers (the carry flag, the warp
//! exchange and the stack pointer as the body sees them); the
//! kernel's layout and flags are shared.

use std::collections::BTreeMap;

use ptxvk_frontend::{ast, Name, Span};

use super::{Lowerer, Symbol};
use crate::ir::{Block, BlockId, Inst, InstKind, RegId, RegInfo, Terminator};

/// What an indirect call may call: a `.calltargets` list or a `.callprototype`.
#[derive(Clone, Debug)]
pub(super) enum CallSet {
    Targets(Vec<ptxvk_frontend::Ident>),
    Prototype { returns: Vec<ast::Param>, params: Vec<ast::Param> },
}

/// What the lowering of the current body knows beyond its arenas.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BodyContext {
    /// The body is a device function's: `ret` returns to its caller, and ending the
    /// thread ends its callers too.
    pub(super) in_function: bool,
    /// The registers of variables' addresses made so far (`Lowerer::variable_address`).
    pub(super) addresses: u32,
}

/// The state of the body whose lowering a device function's interrupts (at its first
/// call), restored after it ([`Lowerer::enter_body`]).
pub(super) struct CallerBody {
    pub(super) regs: Vec<RegInfo>,
    blocks: Vec<Block>,
    entry: BlockId,
    cur: BlockId,
    closed: bool,
    labels: BTreeMap<Name, BlockId>,
    branch_tables: BTreeMap<Name, Vec<ptxvk_frontend::Ident>>,
    call_sets: BTreeMap<Name, CallSet>,
    scopes: Vec<BTreeMap<Name, Symbol>>,
    carry: Option<RegId>,
    pub(super) stack_pointer: Option<RegId>,
    body: BodyContext,
}

impl Lowerer<'_> {
    /// Whether the code being lowered is a device function's: its `.param` variables
    /// are in the local window.
    pub(super) fn in_device_function(&self) -> bool {
        self.body.in_function
    }

    /// How the thread ends here (`exit`, `trap`, a failure): in the kernel, it
    /// returns; in a device function, a block with an [`InstKind::EndThread`], which
    /// `pass::thread_ends` writes out.
    pub(super) fn thread_end(&mut self, span: Span) -> Terminator {
        if !self.body.in_function {
            return Terminator::Return;
        }
        let end = self.new_block(None, span);
        self.kernel.blocks[end.index()].insts.push(Inst { kind: InstKind::EndThread, span });
        Terminator::Jump(end)
    }

    /// Starts the body of a device function: the current body's state is saved (and
    /// given back by [`Self::leave_body`]), and the function gets empty arenas, an entry
    /// block and no labels, scopes or per-body registers.
    pub(super) fn enter_body(&mut self, span: Span) -> CallerBody {
        use std::mem::take;
        let body = BodyContext { in_function: true, ..BodyContext::default() };
        let caller = CallerBody {
            regs: take(&mut self.kernel.regs),
            blocks: take(&mut self.kernel.blocks),
            entry: self.kernel.entry,
            cur: self.cur,
            closed: self.closed,
            labels: take(&mut self.labels),
            branch_tables: take(&mut self.branch_tables),
            call_sets: take(&mut self.call_sets),
            scopes: take(&mut self.scopes),
            carry: self.carry.take(),
            stack_pointer: self.stack_pointer.take(),
            body: std::mem::replace(&mut self.body, body),
        };
        self.kernel.entry = self.new_block(None, span);
        self.cur = self.kernel.entry;
        self.closed = false;
        caller
    }

    /// Ends a device function's body: the caller's state back, the function's
    /// registers, blocks and entry out.
    pub(super) fn leave_body(&mut self, caller: CallerBody) -> (Vec<RegInfo>, Vec<Block>, BlockId) {
        use std::mem::replace;
        let regs = replace(&mut self.kernel.regs, caller.regs);
        let blocks = replace(&mut self.kernel.blocks, caller.blocks);
        let entry = replace(&mut self.kernel.entry, caller.entry);
        self.cur = caller.cur;
        self.closed = caller.closed;
        self.labels = caller.labels;
        self.branch_tables = caller.branch_tables;
        self.call_sets = caller.call_sets;
        self.scopes = caller.scopes;
        self.carry = caller.carry;
        self.stack_pointer = caller.stack_pointer;
        self.body = caller.body;
        (regs, blocks, entry)
    }
}
