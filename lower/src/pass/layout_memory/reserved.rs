//! The reserved shared area's initialisation (`sema::reserved` declares the area, a
//! [`VariableRole::Reserved`] variable, for a kernel that names one of its registers):
//! at the kernel's entry, where every thread is, thread 0 zeroes the area's first
//! words (cooperative groups' barrier words and the 12 bytes after them, which
//! `cooperative_groups/details/memory.h` relies on starting at zero, as the hardware
//! leaves them), then the block waits for it.

use crate::build::Build;
use crate::ir::{
    Address, BlockId, CmpOp, Dim, InstKind, Kernel, OpTy, Space, SpecialReg, Terminator, Value,
    VarId, VariableAddress, VariableRole,
};
use crate::pass::expander::{self, Blocks};

const U32: OpTy = OpTy::U(32);

/// The bytes zeroed at the start, in 32-bit words.
const ZEROED_WORDS: u32 = 8;

expander::expansion!(
    /// The initialisation, built from the entry block on.
    struct Init
);

/// Puts the initialisation at the start of `k`'s entry block when `k` has the area.
pub(super) fn init(k: &mut Kernel) {
    let Some(var) = k.variables.iter().position(|v| v.role == VariableRole::Reserved) else {
        return;
    };
    let entry = k.entry;
    let span = k.blocks[entry.index()].span;
    let insts = std::mem::take(&mut k.blocks[entry.index()].insts);
    let term = std::mem::replace(&mut k.blocks[entry.index()].term, Terminator::Return);
    let term_span = k.blocks[entry.index()].term_span;
    let appended = k.blocks.len();
    let mut e = Init { k: &mut *k, cur: entry, span };
    let mut bits = Value::Imm(0);
    for d in [Dim::X, Dim::Y, Dim::Z] {
        let t = e.special(SpecialReg::Tid(d));
        bits = e.or(U32, bits, t);
    }
    let first = e.cmp(CmpOp::Eq, U32, bits, Value::Imm(0));
    e.guarded(first, false, |e| {
        for w in 0..ZEROED_WORDS {
            let base = e.temp(U32);
            let address = VariableAddress { ty: U32, dst: base, var: VarId(var as u32), offset: 0 };
            e.push(InstKind::VariableAddress(address));
            let addr = Address { base: Some(base), offset: i64::from(4 * w) };
            let srcs = vec![Value::Imm(0)];
            e.push(InstKind::Store { space: Space::Shared, ty: U32, srcs, addr });
        }
    });
    e.push(InstKind::Barrier);
    let last = e.cur.index();
    let block = &mut k.blocks[last];
    block.insts.extend(insts);
    block.term = term;
    block.term_span = term_span;
    after_entry(k, appended);
}

/// Moves the blocks from `from` on to just after the entry, where the kernel's code
/// after the entry block keeps its blocks' order.
fn after_entry(k: &mut Kernel, from: usize) {
    let at = k.entry.index() + 1;
    let moved = k.blocks.len() - from;
    let map = |b: BlockId| {
        let i = b.index();
        let i = if i >= from {
            at + i - from
        } else if i >= at {
            i + moved
        } else {
            i
        };
        BlockId(i as u32)
    };
    for block in &mut k.blocks {
        for target in block.term.targets_mut() {
            *target = map(*target);
        }
    }
    k.entry = map(k.entry);
    let tail = k.blocks.split_off(from);
    k.blocks.splice(at..at, tail);
}
