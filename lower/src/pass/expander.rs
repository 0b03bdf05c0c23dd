//! What the expansion passes share ([`super::expand_texture`], [`super::expand_matrix`],
//! [`super::expand_copies`], [`super::expand_mbarrier`]): finding each instruction they
//! expand and splitting its block around the expansion ([`each`]), and building control
//! flow from the block the expansion has reached ([`Blocks`]: new blocks, guarded code,
//! counted loops, traps and other launch failures).

use ptxvk_frontend::{Diagnostic, Span};

use crate::build::{Build, Builder};
use crate::ir::{
    BinaryOp, Block, BlockId, CmpOp, Inst, InstKind, Kernel, OpTy, RegId, Terminator, Value,
};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);

/// Expands every instruction of `k` that `is` picks: its block keeps what comes before
/// it, `expand` builds the expansion from that block on (given the kernel, the block,
/// the instruction's span and the instruction) and returns the block it ended in, which
/// gets the instructions after it and the old terminator. The blocks an expansion
/// appends are visited too.
pub(crate) fn each(
    k: &mut Kernel,
    is: fn(&InstKind) -> bool,
    mut expand: impl FnMut(&mut Kernel, BlockId, Span, InstKind) -> Result<BlockId, Diagnostic>,
) -> Result<(), Diagnostic> {
    let mut b = 0;
    while b < k.blocks.len() {
        let found = k.blocks[b].insts.iter().position(|i| is(&i.kind));
        let Some(at) = found else {
            b += 1;
            continue;
        };
        let mut insts = std::mem::take(&mut k.blocks[b].insts);
        let rest = insts.split_off(at + 1);
        let Some(Inst { kind, span }) = insts.pop() else { continue };
        k.blocks[b].insts = insts;
        let term = std::mem::replace(&mut k.blocks[b].term, Terminator::Return);
        let term_span = k.blocks[b].term_span;
        let last = expand(k, BlockId(b as u32), span, kind)?.index();
        let block = &mut k.blocks[last];
        block.insts.extend(rest);
        block.term = term;
        block.term_span = term_span;
        // The block's later instructions are in a block after it, unless nothing
        // branched.
        if last != b {
            b += 1;
        }
    }
    Ok(())
}

/// Replaces every instruction of `k`'s blocks that `is` picks by the instructions
/// `expand` builds for it, with its span, in its block (an expansion without control
/// flow).
pub(crate) fn each_in_block(
    k: &mut Kernel,
    is: fn(&InstKind) -> bool,
    mut expand: impl FnMut(&mut Builder<'_>, InstKind),
) {
    for b in 0..k.blocks.len() {
        if !k.blocks[b].insts.iter().any(|i| is(&i.kind)) {
            continue;
        }
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            if is(&inst.kind) {
                let mut e = Builder::new(k, inst.span);
                expand(&mut e, inst.kind);
                out.append(&mut e.insts);
            } else {
                out.push(inst);
            }
        }
        k.blocks[b].insts = out;
    }
}

/// [`Build::temp`] of an expansion: a new register of `k`.
pub(crate) fn temp(k: &mut Kernel, span: Span, ty: OpTy) -> RegId {
    crate::ir::new_temp(&mut k.regs, ty.storage(), span)
}

/// [`Build::push`] of an expansion: an instruction at the end of block `cur`.
pub(crate) fn push(k: &mut Kernel, cur: BlockId, span: Span, kind: InstKind) {
    k.blocks[cur.index()].insts.push(Inst { kind, span });
}

/// `Build` and [`Blocks`] for an expansion type with fields `k: &mut Kernel`,
/// `cur: BlockId` and `span: Span`; with `struct`, also the type itself, with just those
/// fields (each pass's own type, so that its methods' names stay its own).
macro_rules! expansion {
    ($(#[$doc:meta])* struct $ty:ident) => {
        $(#[$doc])*
        struct $ty<'k> {
            k: &'k mut $crate::ir::Kernel,
            cur: $crate::ir::BlockId,
            span: ptxvk_frontend::Span,
        }

        $crate::pass::expander::expansion!($ty);
    };
    ($ty:ident) => {
        impl $crate::build::Build for $ty<'_> {
            fn temp(&mut self, ty: $crate::ir::OpTy) -> $crate::ir::RegId {
                $crate::pass::expander::temp(self.k, self.span, ty)
            }

            fn push(&mut self, kind: $crate::ir::InstKind) {
                $crate::pass::expander::push(self.k, self.cur, self.span, kind)
            }
        }

        impl $crate::pass::expander::Blocks for $ty<'_> {
            fn kernel(&mut self) -> &mut $crate::ir::Kernel {
                self.k
            }

            fn current(&mut self) -> &mut $crate::ir::BlockId {
                &mut self.cur
            }

            fn span(&self) -> ptxvk_frontend::Span {
                self.span
            }

            fn set_span(&mut self, span: ptxvk_frontend::Span) {
                self.span = span;
            }
        }
    };
}
pub(crate) use expansion;

/// An expansion under construction: instructions go to its current block, branches end
/// it and continue in new blocks, all with its span.
pub(crate) trait Blocks: Build + Sized {
    fn kernel(&mut self) -> &mut Kernel;
    fn current(&mut self) -> &mut BlockId;
    fn span(&self) -> Span;
    fn set_span(&mut self, span: Span);

    /// A new, empty block (its terminator to be set by [`Blocks::end_block`]).
    fn new_block(&mut self) -> BlockId {
        let span = self.span();
        let k = self.kernel();
        let id = BlockId(k.blocks.len() as u32);
        let term = Terminator::Return;
        k.blocks.push(Block { label: None, span, insts: Vec::new(), term, term_span: span });
        id
    }

    /// Ends the current block with `term` and goes on in `next`.
    fn end_block(&mut self, term: Terminator, next: BlockId) {
        let span = self.span();
        let cur = *self.current();
        let block = &mut self.kernel().blocks[cur.index()];
        block.term = term;
        block.term_span = span;
        *self.current() = next;
    }

    /// Runs `body` only where predicate `cond` (negated if `negate`) holds.
    fn guarded(&mut self, cond: RegId, negate: bool, body: impl FnOnce(&mut Self)) {
        let then = self.new_block();
        let join = self.new_block();
        self.end_block(Terminator::Branch { cond, negate, if_true: then, if_false: join }, then);
        body(self);
        self.end_block(Terminator::Jump(join), join);
    }

    /// Runs `body` with offsets 0, `step`, 2 `step`, … below `count` (u32 values).
    fn counted_loop(&mut self, count: Value, step: u64, body: impl FnOnce(&mut Self, Value)) {
        let offset = self.temp(U32);
        self.mov(U32, offset, Value::Imm(0));
        let head = self.new_block();
        let inside = self.new_block();
        let done = self.new_block();
        self.end_block(Terminator::Jump(head), head);
        let more = self.cmp(CmpOp::Lt, U32, Value::Reg(offset), count);
        let branch =
            Terminator::Branch { cond: more, negate: false, if_true: inside, if_false: done };
        self.end_block(branch, inside);
        body(self, Value::Reg(offset));
        let next = self.bin(BinaryOp::Add, U32, Value::Reg(offset), Value::Imm(step));
        self.mov(U32, offset, next);
        self.end_block(Terminator::Jump(head), done);
    }

    /// Fails the launch with `.trap`'s status where predicate `cond` holds: the first
    /// failing thread records it in the system area ([`crate::system`]), and the thread
    /// ends; the code after runs where it does not hold.
    fn trap_if(&mut self, cond: RegId) {
        self.fail_if(cond, sys::STATUS_TRAP, &[]);
    }

    /// Fails the launch with `status` and its `details` where predicate `cond` holds,
    /// as [`Blocks::trap_if`] does.
    fn fail_if(&mut self, cond: RegId, status: u32, details: &[Value]) {
        let failing = self.new_block();
        let ok = self.new_block();
        let branch = Terminator::Branch { cond, negate: false, if_true: failing, if_false: ok };
        self.end_block(branch, failing);
        // A zero-width span at the instruction: `pass::check` instruments the accesses
        // with the instruction's span, and these are the system area's.
        let span = self.span();
        self.set_span(Span::new(span.start, span.start));
        self.kernel().system = true;
        let param_bytes = self.kernel().abi.size;
        let area = self.system_area(param_bytes);
        let first = self.claim_failure(area, Value::Imm(u64::from(status)));
        let record = self.new_block();
        let end = self.new_block();
        let branch =
            Terminator::Branch { cond: first, negate: false, if_true: record, if_false: end };
        self.end_block(branch, record);
        self.store_failure(area, details);
        self.end_block(Terminator::Jump(end), end);
        self.set_span(span);
        self.end_block(Terminator::Return, ok);
    }
}
