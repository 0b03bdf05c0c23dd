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
//! `cp.async.bulk` (§9.7.9.25.4.1) is a loop over the size, 16 bytes a turn: a `Load`
//! of four 32-bit words at the source plus the offset and a `Store` of them at the
//! destination plus the offset; with a multicast mask, behind the test of its bit 0.
//!
//! `cp.async.bulk.tensor` (§9.7.9.25.5.1) reads the tensor map's fields (trapping on a
//! null map or one without ptxvk's magic word: the failure recorded in the system
//! area, [`Kernel::system`], then the thread's end), computes the box's bytes into
//! `bytes`, and moves the box element by element in a loop (`sema::tensor_copy`'s
//! module doc has the traversal, the fill and the swizzle), each element's access
//! behind the test of the element's size and, for the tensor's side, of its being
//! inside the tensor; with a multicast mask, the loop behind the test of its bit 0.
//!
//! Pre: CFG IR after `pass::inline`, whose copies semantic analysis resolved and
//! checked (`sema::async_copy`).
//!
//! Post: no [`InstKind::Copy`] is left. Each became loads and stores with its span,
//! which `pass::check` then instruments as the program's own accesses (so this pass
//! runs before it), and the blocks of its conditions, appended to the kernel; the
//! instructions after it move to the last of them.

use ptxvk_abi::tensor_map::{mode, offset, MAGIC};
use ptxvk_frontend::Diagnostic;

use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{
    Address, AsyncCopy, BinaryOp, BulkCopy, CmpOp, CopyInst, CopyRead, InstKind, Kernel, OpTy,
    RegId, Space, TensorCopy, Value,
};

mod tensor;

const U8: OpTy = OpTy::U(8);
const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Whether `kind` is an instruction this pass expands (`pass::leftover`).
pub fn is_copy(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Copy(_))
}

/// Expands every asynchronous copy of `k` as the module doc says. One whose shape is
/// wrong (`CopyInst::malformed`) is an internal error.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    expander::each(k, is_copy, |k, cur, span, kind| {
        let InstKind::Copy(c) = kind else { return Ok(cur) };
        if let Some(what) = c.malformed() {
            return Err(Diagnostic::internal(span, what));
        }
        let mut e = Expand { k, cur, span };
        match c.as_ref() {
            CopyInst::Async(a) => e.async_copy(a),
            CopyInst::Bulk(c) => e.bulk_copy(c),
            CopyInst::Tensor(t) => e.tensor_copy(t),
        }
        Ok(e.cur)
    })
}

expander::expansion!(
    /// Builds the expansion of one instruction from block `cur` on: instructions go to the
    /// current block, branches end it and continue in new blocks, all with `span`.
    struct Expand
);

impl Expand<'_> {
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

    /// `cp.async.bulk` (module doc).
    fn bulk_copy(&mut self, c: &BulkCopy) {
        let copy = |e: &mut Self| {
            e.counted_loop(c.size, 16, |e, offset| {
                let (from, to) = (e.offset_address(c.src, offset), e.offset_address(c.dst, offset));
                let words: Vec<RegId> = (0..4).map(|_| e.temp(U32)).collect();
                let dsts = words.iter().map(|&w| Some(w)).collect();
                e.push(InstKind::Load { space: c.src_space, ty: U32, dsts, addr: from });
                let srcs = words.iter().map(|&w| Value::Reg(w)).collect();
                e.push(InstKind::Store { space: c.dst_space, ty: U32, srcs, addr: to });
            });
        };
        self.copy_to_own_cta(c.mask, copy);
    }

    /// Runs `copy`, for a `.multicast::cluster` copy with CTA `mask` only where the mask
    /// names the cluster's one CTA: rank 0, whose bit is bit 0 (`sema::cluster`).
    fn copy_to_own_cta(&mut self, mask: Option<Value>, copy: impl FnOnce(&mut Self)) {
        let Some(mask) = mask else {
            copy(self);
            return;
        };
        let mask = self.cvt(U32, OpTy::U(16), mask);
        let bit = self.and(U32, mask, Value::Imm(1));
        let mine = self.cmp(CmpOp::Ne, U32, bit, Value::Imm(0));
        self.guarded(mine, false, copy);
    }

    /// `a` plus the byte offset `offset` (a u32 value), in a new register as wide as
    /// `a`'s base.
    fn offset_address(&mut self, a: Address, offset: Value) -> Address {
        let wide = a.base.is_some_and(|b| self.k.regs[b.index()].ty.bits() == 64);
        let base = a.base.map_or(Value::Imm(0), Value::Reg);
        let (ty, sum) = if wide {
            let offset = self.cvt(U64, U32, offset);
            (U64, self.add(U64, base, offset))
        } else {
            (U32, self.add(U32, base, offset))
        };
        let r = self.temp(ty);
        self.mov(ty, r, sum);
        Address { base: Some(r), offset: a.offset }
    }
}
