//! Pass: warp exchanges for the target's warp mode (DESIGN §7).
//!
//! Pre: CFG IR from semantic analysis, whose warp collectives are exchanges
//! ([`InstKind::WarpPublish`], [`InstKind::WarpRead`], [`InstKind::WarpBallot`],
//! [`InstKind::WarpSync`]; `crate::sema::warp`) and which has no
//! [`InstKind::Subgroup`] or [`InstKind::WarpBarrier`].
//!
//! Post: no exchange instruction is left.
//! * **Native and split** (subgroups of 32, or 64 holding two warps): a read is a
//!   subgroup shuffle of the thread's own value, a ballot a subgroup ballot masked by
//!   the lanes asked for; publishing and ending an exchange need nothing.
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
use crate::ir::{
    Address, BinaryOp, Block, BlockId, CmpOp, FloatMode, Inst, InstKind, Kernel, OpTy, RegId,
    RegInfo, RegTy, Space, SubgroupOp, Terminator, Value, WarpMode,
};

/// Scratch words reserved for emulated warp exchanges: one per thread of the largest
/// block (CUDA's limit of 1,024 threads).
pub const SCRATCH_WORDS: u32 = 1024;

const U32: OpTy = OpTy::U(32);

fn is_exchange(kind: &InstKind) -> bool {
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
        return Ok(());
    }
    let mode = target.warp_mode;
    if mode == WarpMode::Emulated {
        reserve_scratch(k);
    }
    // Blocks split by a ballot loop are appended, so they are visited too.
    let mut b = 0;
    while b < k.blocks.len() {
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        let mut rest = insts.into_iter();
        while let Some(inst) = rest.next() {
            let span = inst.span;
            match (mode, inst.kind) {
                (WarpMode::Native | WarpMode::Split, InstKind::WarpPublish { .. })
                | (WarpMode::Native | WarpMode::Split, InstKind::WarpSync) => {}
                (
                    WarpMode::Native | WarpMode::Split,
                    InstKind::WarpRead { dst, value, lane, .. },
                ) => {
                    let split = mode == WarpMode::Split;
                    let op = SubgroupOp::Shuffle;
                    out.push(Inst {
                        kind: InstKind::Subgroup { op, split, dst, value, lane },
                        span,
                    });
                }
                (
                    WarpMode::Native | WarpMode::Split,
                    InstKind::WarpBallot { dst, value, lanes, .. },
                ) => {
                    let votes = temp(k, span);
                    let (op, split, lane) =
                        (SubgroupOp::Ballot, mode == WarpMode::Split, Value::Imm(0));
                    out.push(Inst {
                        kind: InstKind::Subgroup { op, split, dst: votes, value, lane },
                        span,
                    });
                    out.push(Inst { kind: and(dst, Value::Reg(votes), lanes), span });
                }
                (WarpMode::Emulated, InstKind::WarpPublish { value }) => {
                    out.push(Inst { kind: InstKind::WarpBarrier { publish: Some(value) }, span });
                }
                (WarpMode::Emulated, InstKind::WarpSync) => {
                    out.push(Inst { kind: InstKind::WarpBarrier { publish: None }, span });
                }
                (WarpMode::Emulated, InstKind::WarpRead { dst, lane, warp_base, .. }) => {
                    let load = scratch_load(k, dst, warp_base, lane, span, &mut out);
                    out.push(load);
                }
                (WarpMode::Emulated, InstKind::WarpBallot { dst, lanes, warp_base, .. }) => {
                    // The rest of the block runs after the loop.
                    let done = ballot_loop(k, b, dst, lanes, warp_base, span, &mut out);
                    k.blocks[done.index()].insts.extend(rest.by_ref());
                    break;
                }
                (_, kind) => out.push(Inst { kind, span }),
            }
        }
        k.blocks[b].insts = out;
        b += 1;
    }
    Ok(())
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

fn temp(k: &mut Kernel, span: Span) -> RegId {
    let id = RegId(k.regs.len() as u32);
    k.regs.push(RegInfo { name: format!("$w{}", id.0), ty: RegTy::Int(32), span });
    id
}

fn and(dst: RegId, a: Value, b: Value) -> InstKind {
    let mode = FloatMode::default();
    InstKind::Binary { op: BinaryOp::And, ty: U32, mode, dst, lhs: a, rhs: b }
}

fn binary(op: BinaryOp, dst: RegId, lhs: Value, rhs: Value) -> InstKind {
    InstKind::Binary { op, ty: U32, mode: FloatMode::default(), dst, lhs, rhs }
}

/// Appends the address arithmetic of scratch word `warp_base + lane` to `out` and
/// returns the load of it into `dst`.
fn scratch_load(
    k: &mut Kernel,
    dst: RegId,
    warp_base: Value,
    lane: Value,
    span: Span,
    out: &mut Vec<Inst>,
) -> Inst {
    let scratch = k.warp_scratch.unwrap_or(0);
    let index = temp(k, span);
    let bytes = temp(k, span);
    out.push(Inst { kind: binary(BinaryOp::Add, index, warp_base, lane), span });
    out.push(Inst { kind: binary(BinaryOp::Shl, bytes, Value::Reg(index), Value::Imm(2)), span });
    let addr = Address { base: Some(bytes), offset: i64::from(scratch) };
    Inst {
        kind: InstKind::Load { space: Space::Shared, ty: U32, dsts: vec![Some(dst)], addr },
        span,
    }
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
    let reg = |k: &mut Kernel, ty: RegTy| {
        let r = temp(k, span);
        k.regs[r.index()].ty = ty;
        r
    };
    let (acc, lane) = (reg(k, RegTy::Int(32)), reg(k, RegTy::Int(32)));
    let (word, bit, member, vote, next) = (
        reg(k, RegTy::Int(32)),
        reg(k, RegTy::Int(32)),
        reg(k, RegTy::Int(32)),
        reg(k, RegTy::Int(32)),
        reg(k, RegTy::Int(32)),
    );
    let (more, take, set) = (reg(k, RegTy::Pred), reg(k, RegTy::Pred), reg(k, RegTy::Pred));
    let setp = |cmp, dst, lhs, rhs| InstKind::Setp {
        cmp,
        ty: U32,
        ftz: false,
        dst: Some(dst),
        dst_not: None,
        lhs,
        rhs,
        combine: None,
    };
    let mov = |dst, src| InstKind::Mov { ty: U32, dst, src };
    let select = |dst, a, b, cond| InstKind::Select { ty: U32, dst, a, b, cond, negate: false };
    let push_block = |k: &mut Kernel, insts: Vec<Inst>, term: Terminator| {
        let id = BlockId(k.blocks.len() as u32);
        k.blocks.push(Block { label: None, span, insts, term, term_span: span });
        id
    };
    let inst = |kind| Inst { kind, span };

    let term = std::mem::replace(&mut k.blocks[b].term, Terminator::Return);
    let done = push_block(k, vec![inst(mov(dst, Value::Reg(acc)))], term);
    let head = BlockId(k.blocks.len() as u32);
    let body_id = BlockId(head.0 + 1);
    let test = vec![inst(setp(CmpOp::Lt, more, Value::Reg(lane), Value::Imm(32)))];
    let branch = Terminator::Branch { cond: more, negate: false, if_true: body_id, if_false: done };
    push_block(k, test, branch);
    let mut body = Vec::new();
    let load = scratch_load(k, word, warp_base, Value::Reg(lane), span, &mut body);
    body.push(load);
    let (acc_v, lane_v) = (Value::Reg(acc), Value::Reg(lane));
    body.extend(
        [
            binary(BinaryOp::Shl, bit, Value::Imm(1), lane_v),
            and(member, lanes, Value::Reg(bit)),
            setp(CmpOp::Ne, take, Value::Reg(member), Value::Imm(0)),
            setp(CmpOp::Ne, set, Value::Reg(word), Value::Imm(0)),
            select(vote, Value::Reg(bit), Value::Imm(0), set),
            binary(BinaryOp::Or, next, acc_v, Value::Reg(vote)),
            select(acc, Value::Reg(next), acc_v, take),
            binary(BinaryOp::Add, lane, lane_v, Value::Imm(1)),
        ]
        .into_iter()
        .map(inst),
    );
    push_block(k, body, Terminator::Jump(head));
    out.push(inst(mov(acc, Value::Imm(0))));
    out.push(inst(mov(lane, Value::Imm(0))));
    k.blocks[b].term = Terminator::Jump(head);
    done
}
