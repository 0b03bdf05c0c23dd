//! Pass: warp exchanges for the target's warp mode (`docs/architecture.md`, *Warp modes*).
//!
//! Pre: CFG IR from semantic analysis, whose warp collectives are exchanges
//! ([`InstKind::WarpPublish`], [`InstKind::WarpRead`], [`InstKind::WarpBallot`],
//! [`InstKind::WarpSync`]; `crate::sema::warp`) and which has no
//! [`InstKind::Subgroup`] but the narrow shuffles of `pass::warp_trees` (emulated mode,
//! which stay as they are), and no [`InstKind::WarpBarrier`] but the block collectives
//! of `crate::sema::mbarrier` (its waits), for which the kernel gets the vote word of
//! `predicate` in every mode.
//!
//! Post: no exchange instruction is left.
//! * **Native and split** (subgroups of 32, or 64 holding two warps): a read is a
//!   subgroup shuffle of the thread's own value, a ballot a subgroup ballot masked by
//!   the lanes asked for; publishing and ending an exchange need nothing. A read of a
//!   lane that is not active (exited, on another path, past the block's end) gives 0,
//!   as in emulated mode, where such a lane publishes 0: a subgroup shuffle from an
//!   inactive invocation is undefined (SPIR-V `OpGroupNonUniformShuffle`), so the read
//!   tests the lane's bit in a ballot of the active invocations.
//! * **Emulated** (any other subgroup size): the kernel gets a warp scratch at the end
//!   of its static shared variables, one word per thread of the largest block plus the
//!   word `predicate` votes in ([`Kernel::warp_scratch`], [`Kernel::block_vote`]). A
//!   publish is a [`InstKind::WarpBarrier`] that stores the thread's word first, the end
//!   of an exchange a plain one, a read a shared load of word `warp_base + lane`, and a
//!   ballot a loop over the 32 lanes (new blocks). The barriers must then be reached in
//!   block-uniform control flow, which `predicate` ensures.
//!
//! The dynamic shared region follows the static variables; semantic analysis addresses
//! it through `SpecialReg::DynamicSharedBase`, so growing the static part here moves
//! it safely.

use ptxvk_frontend::{Diagnostic, Span};

use super::Target;
use crate::build::{Build, Builder};
use crate::ir::{
    Address, BinaryOp, Block, BlockId, CmpOp, FloatMode, Inst, InstKind, Kernel, OpTy, RegId,
    Space, SubgroupOp, Terminator, Value, WarpMode,
};

/// Scratch words reserved for emulated warp exchanges: one per thread of the largest
/// block (CUDA's limit of 1,024 threads).
pub const SCRATCH_WORDS: u32 = 1024;

const U32: OpTy = OpTy::U(32);

/// Whether `kind` is a warp exchange, which this pass removes.
pub fn is_exchange(kind: &InstKind) -> bool {
    matches!(
        kind,
        InstKind::WarpPublish { .. }
            | InstKind::WarpRead { .. }
            | InstKind::WarpBallot { .. }
            | InstKind::WarpSync
    )
}

/// Rewrites the kernel's warp exchanges as the module doc describes.
pub fn run(k: &mut Kernel, target: &Target) -> Result<(), Diagnostic> {
    if !k.blocks.iter().any(|b| b.insts.iter().any(|i| is_exchange(&i.kind))) {
        // Block collectives of semantic analysis (mbarrier waits) need the vote word
        // where `predicate` runs their loops.
        if k.block_vote.is_none() && has_block_collective(k) {
            reserve_vote(k);
        }
        return Ok(());
    }
    let mode = target.warp_mode;
    if mode == WarpMode::Emulated {
        reserve_scratch(k);
    } else if has_block_collective(k) {
        reserve_vote(k);
    }
    let split = mode == WarpMode::Split;
    // Blocks split by a ballot loop are appended, so they are visited too.
    let mut b = 0;
    while b < k.blocks.len() {
        if !k.blocks[b].insts.iter().any(|i| is_exchange(&i.kind)) {
            b += 1;
            continue;
        }
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        let mut rest = insts.into_iter();
        while let Some(inst) = rest.next() {
            if !is_exchange(&inst.kind) {
                out.push(inst);
                continue;
            }
            let mut e = Builder::new(k, inst.span);
            let mut ballot_loop_at = None;
            match (mode, inst.kind) {
                (WarpMode::Native | WarpMode::Split, InstKind::WarpPublish { .. })
                | (WarpMode::Native | WarpMode::Split, InstKind::WarpSync) => {}
                (_, InstKind::WarpRead { dst, value, lane, .. }) if mode != WarpMode::Emulated => {
                    let (shuffled, active) = (e.temp(U32), e.temp(U32));
                    let op = SubgroupOp::Shuffle;
                    e.push(InstKind::Subgroup { op, split, dst: shuffled, value, lane });
                    let (op, one, none) = (SubgroupOp::Ballot, Value::Imm(1), Value::Imm(0));
                    e.push(InstKind::Subgroup { op, split, dst: active, value: one, lane: none });
                    let bit = e.bin(BinaryOp::Shr, U32, Value::Reg(active), lane);
                    let bit = e.and(U32, bit, Value::Imm(1));
                    let there = e.cmp(CmpOp::Ne, U32, bit, Value::Imm(0));
                    let (a, b) = (Value::Reg(shuffled), Value::Imm(0));
                    e.push(InstKind::Select { ty: U32, dst, a, b, cond: there, negate: false });
                }
                (_, InstKind::WarpBallot { dst, value, lanes, .. })
                    if mode != WarpMode::Emulated =>
                {
                    let votes = e.temp(U32);
                    let (op, lane) = (SubgroupOp::Ballot, Value::Imm(0));
                    e.push(InstKind::Subgroup { op, split, dst: votes, value, lane });
                    e.push(binary(BinaryOp::And, dst, Value::Reg(votes), lanes));
                }
                (_, InstKind::WarpPublish { value }) => {
                    e.push(InstKind::WarpBarrier { publish: Some(value) });
                }
                (_, InstKind::WarpSync) => e.push(InstKind::WarpBarrier { publish: None }),
                (_, InstKind::WarpRead { dst, lane, warp_base, .. }) => {
                    scratch_load(&mut e, dst, warp_base, lane);
                }
                (_, InstKind::WarpBallot { dst, lanes, warp_base, .. }) => {
                    ballot_loop_at = Some((dst, lanes, warp_base));
                }
                (_, kind) => e.push(kind),
            }
            let span = e.span;
            out.append(&mut e.insts);
            if let Some((dst, lanes, warp_base)) = ballot_loop_at {
                // The rest of the block runs after the loop.
                let done = ballot_loop(k, b, dst, lanes, warp_base, span, &mut out);
                k.blocks[done.index()].insts.extend(rest.by_ref());
                break;
            }
        }
        k.blocks[b].insts = out;
        b += 1;
    }
    Ok(())
}

/// Whether semantic analysis made block collectives ([`InstKind::WarpBarrier`]s: the
/// waits of `sema::mbarrier`).
fn has_block_collective(k: &Kernel) -> bool {
    k.blocks.iter().any(|b| b.insts.iter().any(|i| matches!(i.kind, InstKind::WarpBarrier { .. })))
}

/// Places the vote word of `predicate` after the static variables.
pub(crate) fn reserve_vote(k: &mut Kernel) {
    let offset = k.shared.static_bytes.next_multiple_of(4);
    k.shared.static_bytes = offset + 4;
    k.shared.variables.push(("$vote".to_string(), offset, 4));
    k.block_vote = Some(offset);
}

/// Places the scratch (and the vote word after it) after the static variables.
fn reserve_scratch(k: &mut Kernel) {
    let offset = k.shared.static_bytes.next_multiple_of(4);
    let bytes = 4 * (SCRATCH_WORDS + 1);
    k.shared.static_bytes = offset + bytes;
    k.shared.variables.push(("$warp".to_string(), offset, bytes));
    k.warp_scratch = Some(offset);
    k.block_vote = Some(offset + 4 * SCRATCH_WORDS);
}

fn binary(op: BinaryOp, dst: RegId, lhs: Value, rhs: Value) -> InstKind {
    InstKind::Binary { op, ty: U32, mode: FloatMode::default(), dst, lhs, rhs }
}

/// Loads scratch word `warp_base + lane` into `dst`.
fn scratch_load(e: &mut Builder<'_>, dst: RegId, warp_base: Value, lane: Value) {
    let scratch = e.kernel.warp_scratch.unwrap_or(0);
    let index = e.add(U32, warp_base, lane);
    let bytes = e.temp(U32);
    e.push(binary(BinaryOp::Shl, bytes, index, Value::Imm(2)));
    let addr = Address { base: Some(bytes), offset: i64::from(scratch) };
    e.push(InstKind::Load { space: Space::Shared, ty: U32, dsts: vec![Some(dst)], addr });
}

/// Ends block `b` with a loop over the 32 lanes that sets bit k of `dst` when lane k is
/// in `lanes` and its scratch word is non-zero; returns the block after the loop,
/// which takes over `b`'s terminator. `out` holds `b`'s instructions so far.
fn ballot_loop(
    k: &mut Kernel,
    b: usize,
    dst: RegId,
    lanes: Value,
    warp_base: Value,
    span: Span,
    out: &mut Vec<Inst>,
) -> BlockId {
    let (acc, lane) = {
        let mut e = Builder::new(k, span);
        let (acc, lane) = (e.temp(U32), e.temp(U32));
        e.mov(U32, acc, Value::Imm(0));
        e.mov(U32, lane, Value::Imm(0));
        out.append(&mut e.insts);
        (acc, lane)
    };
    let term = std::mem::replace(&mut k.blocks[b].term, Terminator::Jump(BlockId(0)));
    // done: dst = acc, then the rest of `b`; head: lane < 32 ? body : done;
    // body: fold lane's word into acc, lane += 1, back to head.
    let done = BlockId(k.blocks.len() as u32);
    let (head, body) = (BlockId(done.0 + 1), BlockId(done.0 + 2));
    let mov = InstKind::Mov { ty: U32, dst, src: Value::Reg(acc) };
    let block = |insts: Vec<Inst>, term| Block { label: None, span, insts, term, term_span: span };
    k.blocks.push(block(vec![Inst { kind: mov, span }], term));
    k.blocks[b].term = Terminator::Jump(head);

    let mut e = Builder::new(k, span);
    let more = e.cmp(CmpOp::Lt, U32, Value::Reg(lane), Value::Imm(32));
    let test = std::mem::take(&mut e.insts);
    let (acc_v, lane_v) = (Value::Reg(acc), Value::Reg(lane));
    let word = e.temp(U32);
    scratch_load(&mut e, word, warp_base, lane_v);
    let bit = e.bin(BinaryOp::Shl, U32, Value::Imm(1), lane_v);
    let member = e.and(U32, lanes, bit);
    let take = e.cmp(CmpOp::Ne, U32, member, Value::Imm(0));
    let set = e.cmp(CmpOp::Ne, U32, Value::Reg(word), Value::Imm(0));
    let vote = e.sel(U32, set, bit, Value::Imm(0));
    let next = e.or(U32, acc_v, vote);
    let folded = e.sel(U32, take, next, acc_v);
    e.mov(U32, acc, folded);
    let next_lane = e.add(U32, lane_v, Value::Imm(1));
    e.mov(U32, lane, next_lane);
    let fold = std::mem::take(&mut e.insts);
    k.blocks.push(block(
        test,
        Terminator::Branch { cond: more, negate: false, if_true: body, if_false: done },
    ));
    k.blocks.push(block(fold, Terminator::Jump(head)));
    done
}
