//! Pass: the asynchronous copies ([`InstKind::Copy`], whose specification is
//! [`CopyInst`]'s module doc) become the loads and stores they perform, by the issuing
//! thread, where they are issued (CFG → CFG).
//!
//! `cp.async` (PTX ISA 9.2 §9.7.9.25.3.1) of `size` bytes reads the source into
//! `size / 4` 32-bit registers and stores them to the shared destination in one
//! `Store`: all of them in one `Load`; with a `src-size` count, the registers zeroed,
//! then one `Load` where the count covers the copy, else each byte below the count
//! loaded alone and merged into its word (so that no byte past the count is read);
//! with an `ignore-src` predicate, the registers zeroed and one `Load` where the
//! predicate does not hold.
//!
//! Pre: CFG IR after `pass::inline`, whose copies semantic analysis resolved and
//! checked (`sema::async_copy`).
//!
//! Post: no [`InstKind::Copy`] is left. Each became loads and stores with its span,
//! which `pass::check` then instruments as the program's own accesses (so this pass
//! runs before it), and the blocks of its conditions, appended to the kernel; the
//! instructions after it move to the last of them.

use ptxvk_frontend::{Diagnostic, Span};

use crate::build::Build;
use crate::ir::{
    Address, AsyncCopy, BinaryOp, Block, BlockId, CmpOp, CopyInst, CopyRead, Inst, InstKind,
    Kernel, OpTy, RegId, RegInfo, Space, Terminator, Value,
};

const U8: OpTy = OpTy::U(8);
const U32: OpTy = OpTy::U(32);

/// Whether `kind` is an instruction this pass expands (`pass::leftover`).
pub fn is_copy(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Copy(_))
}

/// Expands every asynchronous copy of `k` as the module doc says. One whose shape is
/// wrong (`CopyInst::malformed`) is an internal error.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    // The blocks that take the instructions after an expansion are appended, so they
    // are visited too.
    let mut b = 0;
    while b < k.blocks.len() {
        let found = k.blocks[b].insts.iter().position(|i| is_copy(&i.kind));
        let Some(at) = found else {
            b += 1;
            continue;
        };
        let mut insts = std::mem::take(&mut k.blocks[b].insts);
        let rest = insts.split_off(at + 1);
        let Some(Inst { kind: InstKind::Copy(c), span }) = insts.pop() else { continue };
        if let Some(what) = c.malformed() {
            return Err(Diagnostic::internal(span, what));
        }
        k.blocks[b].insts = insts;
        let term = std::mem::replace(&mut k.blocks[b].term, Terminator::Return);
        let term_span = k.blocks[b].term_span;
        let mut e = Expand { k, cur: BlockId(b as u32), span };
        match c.as_ref() {
            CopyInst::Async(a) => e.async_copy(a),
        }
        let last = e.cur.index();
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

/// Builds the expansion of one instruction from block `cur` on: instructions go to the
/// current block, branches end it and continue in new blocks, all with `span`.
struct Expand<'k> {
    k: &'k mut Kernel,
    cur: BlockId,
    span: Span,
}

impl Build for Expand<'_> {
    fn temp(&mut self, ty: OpTy) -> RegId {
        let id = RegId(self.k.regs.len() as u32);
        let (ty, span) = (ty.storage(), self.span);
        self.k.regs.push(RegInfo { name: format!("$t{}", id.0), ty, span });
        id
    }

    fn push(&mut self, kind: InstKind) {
        let span = self.span;
        self.k.blocks[self.cur.index()].insts.push(Inst { kind, span });
    }
}

impl Expand<'_> {
    fn new_block(&mut self) -> BlockId {
        let id = BlockId(self.k.blocks.len() as u32);
        let span = self.span;
        let term = Terminator::Return;
        self.k.blocks.push(Block { label: None, span, insts: Vec::new(), term, term_span: span });
        id
    }

    /// Ends the current block with `term` and goes on in `next`.
    fn end_block(&mut self, term: Terminator, next: BlockId) {
        let span = self.span;
        let block = &mut self.k.blocks[self.cur.index()];
        block.term = term;
        block.term_span = span;
        self.cur = next;
    }

    /// Runs `body` only where predicate `cond` (negated if `negate`) holds.
    fn guarded(&mut self, cond: RegId, negate: bool, body: impl FnOnce(&mut Self)) {
        let then = self.new_block();
        let join = self.new_block();
        self.end_block(Terminator::Branch { cond, negate, if_true: then, if_false: join }, then);
        body(self);
        self.end_block(Terminator::Jump(join), join);
    }

    /// `cp.async` (module doc).
    fn async_copy(&mut self, a: &AsyncCopy) {
        let (size, from) = (a.size, a.src);
        let regs: Vec<RegId> = (0..size / 4).map(|_| self.temp(U32)).collect();
        let zero = |e: &mut Self| {
            for &r in &regs {
                e.mov(U32, r, Value::Imm(0));
            }
        };
        let load_all = |e: &mut Self| {
            let dsts = regs.iter().map(|&r| Some(r)).collect();
            e.push(InstKind::Load { space: Space::Global, ty: U32, dsts, addr: from });
        };
        match a.read {
            CopyRead::All => load_all(self),
            CopyRead::IgnoreSrc { pred, negate } => {
                zero(self);
                // Read where the ignore-src predicate is false.
                self.guarded(pred, !negate, load_all);
            }
            CopyRead::Count(count) => {
                zero(self);
                let full = self.cmp(CmpOp::Ge, U32, count, Value::Imm(size.into()));
                self.guarded(full, false, load_all);
                // Fewer bytes: each one below the count, into its word.
                self.guarded(full, true, |e| {
                    for byte in 0..size {
                        let inside = e.cmp(CmpOp::Lt, U32, Value::Imm(byte.into()), count);
                        let word = regs[(byte / 4) as usize];
                        e.guarded(inside, false, |e| {
                            let b = e.temp(U32);
                            let addr =
                                Address { base: from.base, offset: from.offset + i64::from(byte) };
                            let dsts = vec![Some(b)];
                            e.push(InstKind::Load { space: Space::Global, ty: U8, dsts, addr });
                            let shifted = e.bin(
                                BinaryOp::Shl,
                                U32,
                                Value::Reg(b),
                                Value::Imm(u64::from(8 * (byte % 4))),
                            );
                            let merged = e.or(U32, Value::Reg(word), shifted);
                            e.mov(U32, word, merged);
                        });
                    }
                });
            }
        }
        let srcs = regs.iter().map(|&r| Value::Reg(r)).collect();
        self.push(InstKind::Store { space: Space::Shared, ty: U32, srcs, addr: a.dst });
    }
}
