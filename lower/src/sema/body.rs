//! The body being resolved: a kernel's, or a device function's (`sema::calls`), whose
//! resolution interrupts its caller's at its first call. Each body has its own arenas
//! of registers and blocks (the IR's) and its own resolution state, [`Body`]: the
//! current block, labels, scopes, declared variables and the per-body registers (the
//! carry flag, the stack pointer as the body sees it). The kernel's variables, shared
//! window and functions are shared.

use std::collections::BTreeMap;

use ptxvk_frontend::{ast, Name, Span};

use super::{Resolver, Symbol};
use crate::ir::{Block, BlockId, Inst, InstKind, RegId, RegInfo, Terminator, VarId};

/// What an indirect call may call: a `.calltargets` list or a `.callprototype`.
#[derive(Clone, Debug)]
pub(super) enum CallSet {
    Targets(Vec<ptxvk_frontend::Ident>),
    Prototype { returns: Vec<ast::Param>, params: Vec<ast::Param> },
}

/// The resolution state of the body being resolved, beyond its arenas of registers
/// and blocks (which are the IR's, `Kernel::regs` and `Kernel::blocks`): where code
/// goes, the names in scope, and the body's own registers.
#[derive(Debug)]
pub(super) struct Body {
    /// The block instructions are appended to.
    pub(super) cur: BlockId,
    /// `cur` has been terminated; further code goes to a fresh block.
    pub(super) closed: bool,
    /// The body's labels (every one made a block before the first instruction).
    pub(super) labels: BTreeMap<Name, BlockId>,
    /// `.branchtargets` tables of `brx.idx`, by their label.
    pub(super) branch_tables: BTreeMap<Name, Vec<ptxvk_frontend::Ident>>,
    /// `.calltargets` and `.callprototype` of indirect calls, by their label.
    pub(super) call_sets: BTreeMap<Name, CallSet>,
    /// The names in scope, outermost first (a name resolves in the innermost scope
    /// that declares it).
    pub(super) scopes: Vec<BTreeMap<Name, Symbol>>,
    /// The `{ }` blocks being resolved, outermost first (a variable's
    /// [`Variable::scope`](crate::ir::Variable::scope)).
    pub(super) scope_path: Vec<u32>,
    /// The `.local` and `.param` variables the body declared (a device function's are
    /// owned by it, [`Variable::owner`](crate::ir::Variable::owner)).
    pub(super) variables: Vec<VarId>,
    /// The carry flag of `.cc` instructions, once one is used (`expand::carry_flag`).
    pub(super) carry: Option<RegId>,
    /// The stack pointer of `alloca` (`sema::stack`), when the kernel uses the stack.
    pub(super) stack_pointer: Option<RegId>,
    /// The body is a device function's: `ret` returns to its caller, and ending the
    /// thread ends its callers too.
    pub(super) in_function: bool,
    /// The registers of variables' addresses made so far (`Resolver::variable_address`).
    pub(super) addresses: u32,
}

impl Body {
    /// An empty body (one empty scope) whose code starts in block `entry`, a device
    /// function's when `in_function`.
    pub(super) fn new(entry: BlockId, in_function: bool) -> Body {
        Body {
            cur: entry,
            closed: false,
            labels: BTreeMap::new(),
            branch_tables: BTreeMap::new(),
            call_sets: BTreeMap::new(),
            scopes: vec![BTreeMap::new()],
            scope_path: Vec::new(),
            variables: Vec::new(),
            carry: None,
            stack_pointer: None,
            in_function,
            addresses: 0,
        }
    }
}

/// The body whose resolution a device function's interrupts (at its first call),
/// restored after it ([`Resolver::enter_body`]).
pub(super) struct CallerBody {
    regs: Vec<RegInfo>,
    blocks: Vec<Block>,
    entry: BlockId,
    pub(super) body: Body,
}

/// A device function's body once resolved ([`Resolver::leave_body`]).
pub(super) struct FunctionBody {
    pub(super) regs: Vec<RegInfo>,
    pub(super) blocks: Vec<Block>,
    pub(super) entry: BlockId,
    /// The `.local` and `.param` variables it declared.
    pub(super) variables: Vec<VarId>,
}

impl Resolver<'_> {
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

    /// Starts the body of a device function: the current body is saved (and given
    /// back by [`Self::leave_body`]), and the function gets empty arenas, an entry
    /// block and no labels, scopes or per-body registers.
    pub(super) fn enter_body(&mut self, span: Span) -> CallerBody {
        use std::mem::take;
        let caller = CallerBody {
            regs: take(&mut self.kernel.regs),
            blocks: take(&mut self.kernel.blocks),
            entry: self.kernel.entry,
            body: std::mem::replace(&mut self.body, Body::new(BlockId(0), true)),
        };
        self.kernel.entry = self.new_block(None, span);
        self.body.cur = self.kernel.entry;
        caller
    }

    /// Ends a device function's body: the caller's back, the function's out.
    pub(super) fn leave_body(&mut self, caller: CallerBody) -> FunctionBody {
        use std::mem::replace;
        let body = replace(&mut self.body, caller.body);
        FunctionBody {
            regs: replace(&mut self.kernel.regs, caller.regs),
            blocks: replace(&mut self.kernel.blocks, caller.blocks),
            entry: replace(&mut self.kernel.entry, caller.entry),
            variables: body.variables,
        }
    }
}
