//! Warp-level instructions (PTX ISA 9.2 §9.7.8.6-11, §9.7.13.4-6), independent of the
//! device's warp mode (`docs/architecture.md`, *Warp modes*). A PTX warp is 32
//! consecutive linear thread ids of the block, whatever the device's subgroup size. Every
//! collective is an *exchange*:
//!
//! ```text
//! warp_publish value; warp_read / warp_ballot of the lanes needed; warp_sync
//! ```
//!
//! `pass::legalize_warps` makes the exchange subgroup operations (native and split
//! modes) or scratch words in shared memory between workgroup barriers (emulated
//! mode). Reductions and `match` read the 32 lanes in a loop; ballots are one
//! instruction. A partial last warp has fewer lanes, which `activemask`, ballots and
//! reductions account for.
//!
//! Special registers: `%laneid` = linear tid mod 32, `%warpid` = linear tid / 32,
//! `%nwarpid` = the block's warps, `%lanemask_*` from `%laneid`.
//!
//! # Member masks and lanes that do not arrive
//!
//! A `.sync` collective operates over the lanes of its member mask that execute it
//! (*arrive*). Lanes that exited are not members (PTX ISA 9.2 on `shfl.sync`,
//! `vote.sync`, `match.sync`, `redux.sync`: "non-exited threads in membermask"), nor
//! are lanes past a partial last warp's end. A lane that is alive but on another path is waited for where `pass::schedule`
//! runs the kernel (it polls); elsewhere the collective completes among the lanes that
//! arrive, as if the others had exited. A lane that does not arrive publishes nothing:
//! it is in no ballot and a read of its word gives 0 (`ir::InstKind::WarpRead`). So:
//!
//! - `vote.all` holds when no arriving member votes false (`vote.all` of 1 is true);
//!   `.any` when one votes true; `.uni` when all arriving members vote alike;
//!   `.ballot` has the arriving members that vote true;
//! - `redux` reduces the arriving members' values: each operation is published in a
//!   form whose identity is 0 (`.min` as the maximum of complements, …);
//! - `match` compares among the arriving members, `match.all`'s `d` is their mask;
//! - `elect` elects the lowest arriving member;
//! - `shfl` from a source lane outside the member mask or that does not arrive gives 0
//!   (the ISA leaves it undefined); `p` is the ISA's range test alone;
//! - `bar.warp.sync` waits for nothing more than the lanes that arrive.
//!
//! The executing lane itself should be in the member mask (undefined in the ISA when
//! not); a lane outside it gets the result over the arriving members, itself excluded.

use ptxvk_frontend::ast::{self, Operand};
use ptxvk_frontend::modifier::{
    BarrierForm, Convergence, FloatOption, Modifier, Reduction, Shuffle, Vote,
};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::Spanned;
use ptxvk_frontend::{Diagnostic, Span};

use super::expand::Emit;
use super::{Lowerer, Mods};
use crate::build::Build;
use crate::ir::{BinaryOp, CmpOp, InstKind, OpTy, SyncPoint, Terminator, UnaryOp, Value};

const SYNC: Modifier = Modifier::Convergence(Convergence::Sync);
const ALIGNED: Modifier = Modifier::Convergence(Convergence::Aligned);
const WARP: Modifier = Modifier::BarrierForm(BarrierForm::Warp);
const MIN: Modifier = Modifier::Reduction(Reduction::Min);
const MAX: Modifier = Modifier::Reduction(Reduction::Max);

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);

/// How a loop over the lanes of the warp combines their published words.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Combine {
    /// Bit k set when lane k's word equals this thread's value.
    Equal(Value),
    Reduce(BinaryOp, OpTy),
}

/// The member mask operand of a warp collective of the `.sync` forms (none for the
/// deprecated forms without it, for `activemask`, and for a wrong operand count, which
/// the instruction's own lowering reports).
fn member_mask<'i>(op: Opcode, i: &'i ast::Instruction, m: &Mods) -> Option<&'i Operand> {
    let sync = m.has(SYNC);
    let index = match op {
        Opcode::Shfl if sync => 4,
        Opcode::Vote if sync => 2,
        Opcode::Match | Opcode::Redux => 2,
        Opcode::Elect => 1,
        Opcode::Bar if m.has(WARP) => 0,
        _ => return None,
    };
    i.operands.get(index)
}

impl Lowerer<'_> {
    /// Warp instructions and special registers; `None` for other instructions.
    pub(super) fn warp(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        if let Some(members) = member_mask(op, i, m) {
            // Every lane of the member mask must reach a `.sync` collective before any
            // goes on (independent thread scheduling): where other threads may be
            // polling, `pass::schedule` makes this a wait.
            let members = match self.src(members, U32, false, i.span) {
                Ok(v) => v,
                Err(d) => return Some(Err(d)),
            };
            self.warp_sync_point(i, members);
        }
        let result = match op {
            Opcode::Shfl => self.shfl(i, m),
            Opcode::Vote => self.vote(i, m),
            Opcode::Match => self.match_(i, m),
            Opcode::Redux => self.redux(i, m),
            Opcode::Activemask => self.activemask(i, m),
            Opcode::Elect => self.elect(i),
            Opcode::Bar if m.has(WARP) => {
                // `bar.warp.sync`: every lane of the warp is already converged in
                // block-uniform code; a workgroup barrier orders their memory.
                let r = m.allow(&[WARP, SYNC]);
                r.map(|()| self.end_exchange(i.span))
            }
            _ => return None,
        };
        Some(result)
    }

    /// A special register of the warp model, when `name` is one.
    pub(super) fn warp_register(&mut self, name: &str, span: Span) -> Option<Value> {
        let mut e = Emit { l: self, span };
        Some(match name {
            "%laneid" => {
                let t = e.l.linear_tid(span);
                e.and(U32, t, Value::Imm(31))
            }
            "%warpid" => {
                let t = e.l.linear_tid(span);
                e.bin(BinaryOp::Shr, U32, t, Value::Imm(5))
            }
            "%nwarpid" => {
                let n = e.l.block_threads(span);
                let n = e.add(U32, n, Value::Imm(31));
                e.bin(BinaryOp::Shr, U32, n, Value::Imm(5))
            }
            "%lanemask_eq" | "%lanemask_lt" | "%lanemask_le" | "%lanemask_gt" | "%lanemask_ge" => {
                let t = e.l.linear_tid(span);
                let lane = e.and(U32, t, Value::Imm(31));
                let eq = e.bin(BinaryOp::Shl, U32, Value::Imm(1), lane);
                let lt = e.bin(BinaryOp::Sub, U32, eq, Value::Imm(1));
                let le = e.or(U32, lt, eq);
                match name {
                    "%lanemask_eq" => eq,
                    "%lanemask_lt" => lt,
                    "%lanemask_le" => le,
                    "%lanemask_gt" => e.not(U32, le),
                    _ => e.not(U32, lt),
                }
            }
            _ => return None,
        })
    }

    /// The sync point before collective `i` of the lanes of `members`. Its kind is the
    /// instruction's opcode and modifiers: a `.sync` collective waits for the lanes of
    /// its member mask to execute one "with the same qualifiers" (PTX ISA 9.2
    /// §9.7.8.6), not necessarily the same instruction.
    fn warp_sync_point(&mut self, i: &ast::Instruction, members: Value) {
        let signature: String = std::iter::once(i.opcode.value.as_str())
            .chain(i.modifiers.iter().map(|m| m.value.as_str()))
            .collect();
        let kind = match self.collective_kinds.iter().position(|k| *k == signature) {
            Some(k) => k,
            None => {
                self.collective_kinds.push(signature);
                self.collective_kinds.len() - 1
            }
        } as u32;
        self.push(InstKind::SyncPoint { point: SyncPoint::Warp { members, kind } }, i.span);
    }

    /// The sync point of a `.sync.aligned` matrix instruction (`mma`, `ldmatrix`,
    /// `wmma`, …), which every lane of the warp executes together.
    pub(super) fn whole_warp_sync_point(&mut self, i: &ast::Instruction) {
        self.warp_sync_point(i, Value::Imm(0xffff_ffff));
    }

    /// `%tid.x + %ntid.x * (%tid.y + %ntid.y * %tid.z)`: warps are formed from it.
    pub(super) fn linear_tid(&mut self, span: Span) -> Value {
        Emit { l: self, span }.linear_tid()
    }

    /// The lanes of this thread's warp that exist (all 32 but in a partial last warp).
    fn warp_lanes(&mut self, t: Value, span: Span) -> Value {
        let mut e = Emit { l: self, span };
        let total = e.block_threads();
        e.warp_lanes(t, total)
    }

    /// Publishes this thread's 32-bit `value`: afterwards [`Self::read_lane`] sees the
    /// warp's values. How is the warp mode's business (`pass::legalize_warps`).
    pub(super) fn publish(&mut self, value: Value, span: Span) {
        self.push(InstKind::WarpPublish { value }, span);
        self.exchanged = Some(value);
    }

    /// Ends an exchange, before the next one may overwrite it.
    pub(super) fn end_exchange(&mut self, span: Span) {
        self.push(InstKind::WarpSync, span);
    }

    /// The linear thread id of lane 0 of this thread's warp.
    fn warp_base(&mut self, t: Value, span: Span) -> Value {
        Emit { l: self, span }.and(U32, t, Value::Imm(!31u32 as u64))
    }

    /// Lane `lane`'s published word (of this thread's warp).
    pub(super) fn read_lane(&mut self, t: Value, lane: Value, span: Span) -> Value {
        let warp_base = self.warp_base(t, span);
        let value = self.exchanged.unwrap_or(Value::Imm(0));
        let dst = self.temp(U32.storage(), span);
        self.push(InstKind::WarpRead { dst, value, lane, warp_base }, span);
        Value::Reg(dst)
    }

    /// Bit k set when lane k is in `lanes` (a mask) and published a non-zero word.
    fn ballot(&mut self, t: Value, lanes: Value, span: Span) -> Value {
        let warp_base = self.warp_base(t, span);
        let value = self.exchanged.unwrap_or(Value::Imm(0));
        let dst = self.temp(U32.storage(), span);
        self.push(InstKind::WarpBallot { dst, value, lanes, warp_base }, span);
        Value::Reg(dst)
    }

    /// Combines the published words of the lanes in `lanes` (a mask) by `how`, starting
    /// from `init`, in a loop over the 32 lanes.
    fn over_lanes(
        &mut self,
        t: Value,
        lanes: Value,
        how: Combine,
        init: Value,
        span: Span,
    ) -> Value {
        let acc_ty = match how {
            Combine::Reduce(_, ty) => ty,
            Combine::Equal(_) => U32,
        };
        let acc = self.temp(acc_ty.storage(), span);
        let k = self.temp(U32.storage(), span);
        let mut e = Emit { l: self, span };
        e.mov(acc_ty, acc, init);
        e.mov(U32, k, Value::Imm(0));
        let head = self.new_block(None, span);
        let body = self.new_block(None, span);
        let done = self.new_block(None, span);
        self.terminate(Terminator::Jump(head), span);
        self.cur = head;
        self.closed = false;
        let more = Emit { l: self, span }.cmp(CmpOp::Lt, U32, Value::Reg(k), Value::Imm(32));
        self.terminate(
            Terminator::Branch { cond: more, negate: false, if_true: body, if_false: done },
            span,
        );
        self.cur = body;
        self.closed = false;
        let word = self.read_lane(t, Value::Reg(k), span);
        let mut e = Emit { l: self, span };
        let bit = e.bin(BinaryOp::Shl, U32, Value::Imm(1), Value::Reg(k));
        let member = e.and(U32, lanes, bit);
        let take = e.cmp(CmpOp::Ne, U32, member, Value::Imm(0));
        let next = match how {
            Combine::Equal(mine) => {
                let same = e.cmp(CmpOp::Eq, U32, word, mine);
                let b = e.sel(U32, same, bit, Value::Imm(0));
                e.or(U32, Value::Reg(acc), b)
            }
            Combine::Reduce(op, ty) => e.bin(op, ty, Value::Reg(acc), word),
        };
        let next = e.sel(acc_ty, take, next, Value::Reg(acc));
        e.mov(acc_ty, acc, next);
        let k1 = e.add(U32, Value::Reg(k), Value::Imm(1));
        e.mov(U32, k, k1);
        self.terminate(Terminator::Jump(head), span);
        self.cur = done;
        self.closed = false;
        Value::Reg(acc)
    }

    /// The member mask operand (`.sync` forms) intersected with the existing lanes.
    fn participants(
        &mut self,
        t: Value,
        mask: Option<&Operand>,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let lanes = self.warp_lanes(t, span);
        Ok(match mask {
            Some(m) => {
                let m = self.src(m, U32, false, span)?;
                Emit { l: self, span }.and(U32, m, lanes)
            }
            None => lanes,
        })
    }

    /// The lanes of `members` that arrive at this collective (see the module doc): a
    /// ballot of 1, which a lane that exited or is on another path does not publish.
    fn arriving(&mut self, t: Value, members: Value, span: Span) -> Value {
        self.publish(Value::Imm(1), span);
        let arrived = self.ballot(t, members, span);
        self.end_exchange(span);
        arrived
    }

    /// `shfl{.sync}.mode.b32 d[|p], a, b, c{, membermask}` (§9.7.8.6-7).
    fn shfl(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let sync = m.has(SYNC);
        let mode = m.find(|d| match d {
            Modifier::Shuffle(s) => Some(s),
            _ => None,
        });
        let Some(Spanned { value: mode, .. }) = mode else {
            return Err(Diagnostic::error(span, "`shfl` needs `.up`, `.down`, `.bfly` or `.idx`"));
        };
        if self.one_type(i, m)?.bits() != 32 {
            return Err(Diagnostic::error(span, "`shfl` takes `.b32`"));
        }
        let ops = i.operands.as_slice();
        let want = if sync { 5 } else { 4 };
        if ops.len() != want {
            return Err(Diagnostic::error(span, format!("`shfl` takes {want} operands")));
        }
        let (d, p) = match &ops[0] {
            Operand::Pair(d, p, _) => {
                (self.dst(d, U32, false)?, Some(self.dst(p, OpTy::Pred, false)?))
            }
            d => (self.dst(d, U32, false)?, None),
        };
        let a = self.src(&ops[1], U32, false, span)?;
        let b = self.src(&ops[2], U32, false, span)?;
        let c = self.src(&ops[3], U32, false, span)?;
        let t = self.linear_tid(span);
        let members = self.participants(t, ops.get(4).filter(|_| sync), span)?;
        self.publish(a, span);
        let mut e = Emit { l: self, span };
        let lane = e.and(U32, t, Value::Imm(31));
        let bval = e.and(U32, b, Value::Imm(31));
        let cval = e.and(U32, c, Value::Imm(31));
        let seg = e.bin(BinaryOp::Shr, U32, c, Value::Imm(8));
        let seg = e.and(U32, seg, Value::Imm(31));
        let not_seg = e.not(U32, seg);
        let min_lane = e.and(U32, lane, seg);
        let clamp = e.and(U32, cval, not_seg);
        let max_lane = e.or(U32, min_lane, clamp);
        let (j, ok) = match mode {
            Shuffle::Up => {
                let j = e.bin(BinaryOp::Sub, S32, lane, bval);
                (j, e.cmp(CmpOp::Ge, S32, j, max_lane))
            }
            Shuffle::Down => {
                let j = e.add(U32, lane, bval);
                (j, e.cmp(CmpOp::Le, U32, j, max_lane))
            }
            Shuffle::Bfly => {
                let j = e.bin(BinaryOp::Xor, U32, lane, bval);
                (j, e.cmp(CmpOp::Le, U32, j, max_lane))
            }
            Shuffle::Idx => {
                let off = e.and(U32, bval, not_seg);
                let j = e.or(U32, min_lane, off);
                (j, e.cmp(CmpOp::Le, U32, j, max_lane))
            }
        };
        let src_lane = e.sel(U32, ok, j, lane);
        let value = self.read_lane(t, src_lane, span);
        self.end_exchange(span);
        // A source lane outside the member mask (or the block) gives 0, as one that does
        // not arrive does (the ISA leaves both undefined).
        let mut e = Emit { l: self, span };
        let bit = e.bin(BinaryOp::Shr, U32, members, src_lane);
        let bit = e.and(U32, bit, Value::Imm(1));
        let member = e.cmp(CmpOp::Ne, U32, bit, Value::Imm(0));
        let value = e.sel(U32, member, value, Value::Imm(0));
        e.mov(U32, d, value);
        if let Some(p) = p {
            e.mov(OpTy::Pred, p, Value::Reg(ok));
        }
        Ok(())
    }

    /// `vote{.sync}.{all,any,uni}.pred d, {!}a{, membermask}` and `.ballot.b32`.
    fn vote(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let sync = m.has(SYNC);
        let ops = i.operands.as_slice();
        let want = if sync { 3 } else { 2 };
        if ops.len() != want {
            return Err(Diagnostic::error(span, format!("`vote` takes {want} operands")));
        }
        let ballot = m.has(Modifier::Vote(Vote::Ballot));
        let d = self.dst(&ops[0], if ballot { U32 } else { OpTy::Pred }, false)?;
        let (a, negate) = self.pred(&ops[1])?;
        let t = self.linear_tid(span);
        let members = self.participants(t, ops.get(2).filter(|_| sync), span)?;
        // Ballots count only the members that arrive, so `.all` asks whether one of them
        // votes false rather than whether every member votes true (`vote.sync` is over
        // the non-exited threads of membermask).
        let votes = |l: &mut Self, truth: bool| {
            let mut e = Emit { l, span };
            let (yes, no) = (u64::from(truth != negate), u64::from(truth == negate));
            let value = e.sel(U32, a, Value::Imm(yes), Value::Imm(no));
            l.publish(value, span);
            let votes = l.ballot(t, members, span);
            l.end_exchange(span);
            votes
        };
        if ballot {
            let ones = votes(self, true);
            Emit { l: self, span }.mov(U32, d, ones);
            return Ok(());
        }
        let r = if m.has(Modifier::Vote(Vote::Any)) {
            let ones = votes(self, true);
            Emit { l: self, span }.cmp(CmpOp::Ne, U32, ones, Value::Imm(0))
        } else if m.has(Modifier::Vote(Vote::All)) {
            let zeros = votes(self, false);
            Emit { l: self, span }.cmp(CmpOp::Eq, U32, zeros, Value::Imm(0))
        } else {
            let ones = votes(self, true);
            let zeros = votes(self, false);
            let mut e = Emit { l: self, span };
            let all = e.cmp(CmpOp::Eq, U32, zeros, Value::Imm(0));
            let none = e.cmp(CmpOp::Eq, U32, ones, Value::Imm(0));
            e.pred_or(all, none)
        };
        Emit { l: self, span }.mov(OpTy::Pred, d, Value::Reg(r));
        Ok(())
    }

    /// `match.{any,all}.sync.b32/.b64 d[|p], a, membermask` (§9.7.13.5 of PTX 9.2).
    fn match_(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        m.allow(&[Modifier::Vote(Vote::Any), Modifier::Vote(Vote::All), SYNC, ALIGNED])?;
        let ty = self.one_type(i, m)?;
        if !matches!(ty.bits(), 32 | 64) || ty == OpTy::Pred {
            return Err(Diagnostic::error(span, "`match` takes `.b32` or `.b64`"));
        }
        let ops = i.operands.as_slice();
        let all = m.has(Modifier::Vote(Vote::All));
        let (d, p) = match &ops[0] {
            Operand::Pair(d, p, _) if all => {
                (self.dst(d, U32, false)?, Some(self.dst(p, OpTy::Pred, false)?))
            }
            d => (self.dst(d, U32, false)?, None),
        };
        let wide = OpTy::U(ty.bits() as u8);
        let a = self.src(&ops[1], wide, false, span)?;
        let t = self.linear_tid(span);
        let members = self.participants(t, Some(&ops[2]), span)?;
        // Compared among the members that arrive (a lane that does not reads as 0).
        let members = self.arriving(t, members, span);
        // One round per 32-bit half: the lanes equal in every half.
        let halves = if ty.bits() == 64 { 2 } else { 1 };
        let mut same = members;
        for h in 0..halves {
            let mut e = Emit { l: self, span };
            let part = if ty.bits() == 64 {
                let shifted = e.bin(BinaryOp::Shr, wide, a, Value::Imm(32 * h));
                e.cvt(U32, wide, shifted)
            } else {
                a
            };
            self.publish(part, span);
            let eq = self.over_lanes(t, members, Combine::Equal(part), Value::Imm(0), span);
            self.end_exchange(span);
            same = Emit { l: self, span }.and(U32, same, eq);
        }
        let mut e = Emit { l: self, span };
        if all {
            let equal = e.cmp(CmpOp::Eq, U32, same, members);
            let r = e.sel(U32, equal, members, Value::Imm(0));
            e.mov(U32, d, r);
            if let Some(p) = p {
                e.mov(OpTy::Pred, p, Value::Reg(equal));
            }
        } else {
            e.mov(U32, d, same);
        }
        Ok(())
    }

    /// `redux.sync.op.type d, a, membermask` for integer operations (§9.7.13.6).
    fn redux(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let op = m.find(|d| match d {
            Modifier::Reduction(r) => Some(r),
            _ => None,
        });
        let op = op.map(|r| r.value);
        let bool_op = m.bool_op;
        let ty = self.one_type(i, m)?;
        if ty.is_float() {
            return self.redux_f32(i, m, op);
        }
        m.allow(&[SYNC, ALIGNED, Modifier::Reduction(Reduction::Add), MIN, MAX])?;
        if ty.bits() != 32 {
            return Err(Diagnostic::error(span, "`redux.sync` takes 32-bit types"));
        }
        // Each operation as one whose identity is 0, the word of a lane that does not
        // arrive: published as `a ^ flip`, reduced, the result `^ flip` again (`.and` is
        // the complement of the `.or` of complements, `.min` of the `.max` of them;
        // signed order is unsigned order with the sign bit flipped).
        let signed = ty.is_signed();
        let (bop, flip) = match (op, bool_op) {
            (Some(Reduction::Add), None) => (BinaryOp::Add, 0),
            (Some(Reduction::Max), None) => (BinaryOp::Max, if signed { 0x8000_0000 } else { 0 }),
            (Some(Reduction::Min), None) => {
                (BinaryOp::Max, if signed { 0x7fff_ffff } else { 0xffff_ffff })
            }
            (None, Some(crate::ir::BoolOp::And)) => (BinaryOp::Or, 0xffff_ffff),
            (None, Some(crate::ir::BoolOp::Or)) => (BinaryOp::Or, 0),
            (None, Some(crate::ir::BoolOp::Xor)) => (BinaryOp::Xor, 0),
            _ => {
                return Err(Diagnostic::error(
                    span,
                    "`redux.sync` takes one of `.add .min .max .and .or .xor`",
                ))
            }
        };
        let ops = i.operands.as_slice();
        let d = self.dst(&ops[0], ty, false)?;
        let a = self.src(&ops[1], ty, false, span)?;
        let t = self.linear_tid(span);
        let members = self.participants(t, Some(&ops[2]), span)?;
        let word = Emit { l: self, span }.bin(BinaryOp::Xor, U32, a, Value::Imm(flip));
        self.publish(word, span);
        let r = self.over_lanes(t, members, Combine::Reduce(bop, U32), Value::Imm(0), span);
        self.end_exchange(span);
        let mut e = Emit { l: self, span };
        let r = e.bin(BinaryOp::Xor, U32, r, Value::Imm(flip));
        e.mov(ty, d, r);
        Ok(())
    }

    /// `redux.sync.{min,max}{.abs}{.NaN}.f32 d, a, membermask` (PTX ISA 9.2 §9.7.13.7):
    /// reduced as unsigned integer keys that order floats totally (-0 below +0), with a
    /// NaN lane mapped to the identity (ignored) or, under `.NaN`, to the absorbing end;
    /// only NaNs map to either end, so a result there is the canonical NaN 0x7fffffff
    /// (all lanes NaN, or any under `.NaN`).
    fn redux_f32(
        &mut self,
        i: &ast::Instruction,
        m: &Mods,
        op: Option<Reduction>,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let abs = Modifier::FloatOption(FloatOption::Abs);
        let nan = Modifier::FloatOption(FloatOption::NaN);
        m.allow(&[SYNC, MIN, MAX, ALIGNED, abs, nan])?;
        let ty = self.one_type(i, m)?;
        let min = match op {
            Some(Reduction::Min) if ty == OpTy::F(32) => true,
            Some(Reduction::Max) if ty == OpTy::F(32) => false,
            _ => {
                return Err(Diagnostic::error(
                    span,
                    "`redux.sync` on floats is `.min` or `.max` on `.f32`",
                ))
            }
        };
        let (abs, nan) = (m.has(abs), m.has(nan));
        let [d, a, mask] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, "`redux.sync` takes 3 operands"));
        };
        let d = self.dst(d, U32, false)?;
        let a = self.src(a, U32, false, span)?;
        let t = self.linear_tid(span);
        let members = self.participants(t, Some(mask), span)?;
        let (identity, absorbing) = if min { (u32::MAX, 0) } else { (0, u32::MAX) };
        let mut e = Emit { l: self, span };
        let bits = if abs { e.and(U32, a, Value::Imm(0x7fff_ffff)) } else { a };
        // key = bits ^ 0x8000_0000 for a clear sign bit, !bits for a set one.
        let sign = e.bin(BinaryOp::Shr, S32, bits, Value::Imm(31));
        let flip = e.or(U32, sign, Value::Imm(0x8000_0000));
        let key = e.bin(BinaryOp::Xor, U32, bits, flip);
        let magnitude = e.and(U32, bits, Value::Imm(0x7fff_ffff));
        let is_nan = e.cmp(CmpOp::Gt, U32, magnitude, Value::Imm(0x7f80_0000));
        let nan_key = if nan { absorbing } else { identity };
        let key = e.sel(U32, is_nan, Value::Imm(u64::from(nan_key)), key);
        // The maximum of the keys or, for `.min`, of their complements: identity 0, the
        // word of a lane that does not arrive.
        let flip = u64::from(identity);
        let word = e.bin(BinaryOp::Xor, U32, key, Value::Imm(flip));
        self.publish(word, span);
        let r =
            self.over_lanes(t, members, Combine::Reduce(BinaryOp::Max, U32), Value::Imm(0), span);
        self.end_exchange(span);
        let mut e = Emit { l: self, span };
        let r = e.bin(BinaryOp::Xor, U32, r, Value::Imm(flip));
        let positive = e.and(U32, r, Value::Imm(0x8000_0000));
        let positive = e.cmp(CmpOp::Ne, U32, positive, Value::Imm(0));
        let from_positive = e.bin(BinaryOp::Xor, U32, r, Value::Imm(0x8000_0000));
        let from_negative = e.not(U32, r);
        let value = e.sel(U32, positive, from_positive, from_negative);
        let low_end = e.cmp(CmpOp::Eq, U32, r, Value::Imm(0));
        let high_end = e.cmp(CmpOp::Eq, U32, r, Value::Imm(u64::from(u32::MAX)));
        let ends = e.pred_or(low_end, high_end);
        let result = e.sel(U32, ends, Value::Imm(0x7fff_ffff), value);
        e.mov(U32, d, result);
        Ok(())
    }

    /// `activemask.b32 d`: the lanes of the warp that execute it.
    fn activemask(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        m.allow(&[])?;
        let [d] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, "`activemask` takes 1 operand"));
        };
        let d = self.dst(d, U32, false)?;
        // A ballot of 1 over the existing lanes: under predication (`crate::pass::predicate`)
        // inactive lanes publish 0.
        let t = self.linear_tid(span);
        let lanes = self.warp_lanes(t, span);
        let active = self.arriving(t, lanes, span);
        Emit { l: self, span }.mov(U32, d, active);
        Ok(())
    }

    /// `elect.sync d|p, membermask`: the lowest member that arrives is the leader (the
    /// ISA elects an active thread; an exited one cannot lead).
    fn elect(&mut self, i: &ast::Instruction) -> Result<(), Diagnostic> {
        let span = i.span;

        let [dp, mask] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, "`elect.sync` takes `d|p` and a member mask"));
        };
        let (d, p) = match dp {
            Operand::Pair(d, p, _) => {
                let d = match d.as_ref() {
                    Operand::Sink(_) => None,
                    d => Some(self.dst(d, U32, false)?),
                };
                (d, self.dst(p, OpTy::Pred, false)?)
            }
            other => return Err(Diagnostic::error(other.span(), "expected `d|p`")),
        };
        let t = self.linear_tid(span);
        let members = self.participants(t, Some(mask), span)?;
        let members = self.arriving(t, members, span);
        let mut e = Emit { l: self, span };
        // The lowest set bit's position: the bit count below it.
        let minus = e.bin(BinaryOp::Sub, U32, members, Value::Imm(1));
        let not_members = e.not(U32, members);
        let below = e.and(U32, not_members, minus);
        let leader = e.un(UnaryOp::Popc, U32, below);
        let lane = e.and(U32, t, Value::Imm(31));
        let me = e.cmp(CmpOp::Eq, U32, lane, leader);
        let some = e.cmp(CmpOp::Ne, U32, members, Value::Imm(0));
        let is = e.pred_and(me, some);
        e.mov(OpTy::Pred, p, Value::Reg(is));
        if let Some(d) = d {
            e.mov(U32, d, leader);
        }
        Ok(())
    }
}
