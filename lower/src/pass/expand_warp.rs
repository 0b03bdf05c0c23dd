//! Pass: the warp collectives ([`InstKind::Warp`], specified in `crate::ir::warp`'s
//! doc) become warp *exchanges*, independent of the device's warp mode:
//!
//! ```text
//! warp_publish value; warp_read / warp_ballot of the lanes needed; warp_sync
//! ```
//!
//! `pass::legalize_warps` then makes each exchange subgroup operations (native and
//! split modes) or scratch words in shared memory between workgroup barriers (emulated
//! mode). A lane that does not arrive publishes nothing: it is in no ballot and a read
//! of its word gives 0 ([`InstKind::WarpRead`]). So:
//!
//! - the lanes that arrive are a ballot of 1 over the members (`match`, `elect`,
//!   `activemask`);
//! - `vote` is one ballot of the votes (`.all` asks whether a member votes false,
//!   `.uni` both);
//! - `redux` reads the 32 lanes in a loop, each operation published in a form whose
//!   identity is 0, the word of a lane that does not arrive (`.min` as the maximum of
//!   complements, `.and` as the `.or` of complements, signed order as unsigned order
//!   with the sign bit flipped; `.f32` as unsigned keys that order floats totally);
//! - `match` compares the 32 lanes' words with its own in a loop, one round per 32-bit
//!   half;
//! - `shfl` reads its source lane and keeps the word only when that lane is a member;
//! - `elect`'s leader is the lowest lane of the arriving members (their bit count
//!   below it).
//!
//! `bar.red` ([`InstKind::BarrierReduce`]) counts the threads whose predicate holds in
//! its shared scratch word: thread 0 clears it, a barrier, an atomic add by every
//! thread where it holds, a barrier, every thread reads the count, and a final barrier
//! so that no thread clears it again (in the next `bar.red`) before all have read it.
//! `.and` is "count == the block's threads", `.or` "count != 0".
//!
//! The warp model's special registers (`%laneid`, `%warpid`, `%nwarpid`,
//! `%lanemask_*`, [`WarpReg`]'s doc) become arithmetic on the linear thread
//! id and the block's size.
//!
//! Pre: CFG IR after `pass::inline`, whose [`InstKind::Warp`] instructions semantic
//! analysis resolved and checked (`sema::warp`), each `.sync` one after its warp's sync
//! point.
//!
//! Post: no [`InstKind::Warp`], [`InstKind::BarrierReduce`] or special register of the
//! warp model is left. Each became
//! instructions with its span; `match` and `redux` add a loop's blocks, `bar.red` two
//! guarded blocks (appended to the kernel), and the instructions after
//! them move to the last of those.

use ptxvk_frontend::{Diagnostic, Span};

use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{
    Address, AtomicOp, BarrierReduction, BinaryOp, BlockId, CmpOp, Dim, FloatMode, InstKind,
    Kernel, OpTy, Order, RegId, Scope, ShuffleMode, Space, SpecialReg, UnaryOp, Value, VoteMode,
    WarpInst, WarpOp, WarpReduction, WarpReg,
};

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);

/// Whether `kind` is an instruction this pass expands (`pass::leftover`): a warp
/// collective, a `bar.red` or a special register of the warp model.
pub fn is_collective(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Warp(_) | InstKind::BarrierReduce { .. })
        || matches!(kind, InstKind::Special { reg: SpecialReg::Warp(_), .. })
}

/// Expands every warp collective of `k` as the module doc says. One whose shape is
/// wrong (`WarpInst::malformed`) is an internal error.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    expander::each(k, is_collective, |k, cur, span, kind| {
        let mut e = Expand { k, cur, span, exchanged: None };
        match kind {
            InstKind::Warp(w) => {
                if let Some(what) = w.malformed() {
                    return Err(Diagnostic::internal(span, what));
                }
                e.inst(&w);
            }
            InstKind::BarrierReduce { op, dst, cond, negate, word } => {
                e.barrier_reduce(op, dst, (cond, negate), word)
            }
            InstKind::Special { dst, reg: SpecialReg::Warp(reg) } => e.warp_register(reg, dst),
            _ => {}
        }
        Ok(e.cur)
    })
}

/// `dst = lhs op rhs` on 32-bit words.
fn binary(op: BinaryOp, dst: RegId, lhs: Value, rhs: Value) -> InstKind {
    InstKind::Binary { op, ty: U32, mode: FloatMode::default(), dst, lhs, rhs }
}

/// How a loop over the lanes of the warp combines their published words.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Combine {
    /// Bit k set when lane k's word equals this thread's value.
    Equal(Value),
    Reduce(BinaryOp, OpTy),
}

/// Builds the expansion of one instruction from block `cur` on.
struct Expand<'k> {
    k: &'k mut Kernel,
    cur: BlockId,
    span: Span,
    /// The word of the exchange in progress, which its reads name.
    exchanged: Option<Value>,
}

expander::expansion!(Expand);

impl Expand<'_> {
    fn inst(&mut self, w: &WarpInst) {
        let members = w.members;
        match w.op {
            WarpOp::Shuffle { mode, dst, pred, value, lane, clamp } => {
                self.shuffle(mode, (dst, pred), [value, lane, clamp], members)
            }
            WarpOp::Vote { mode, dst, src, negate } => self.vote(mode, dst, src, negate, members),
            WarpOp::Match { all, wide, dst, pred, value } => {
                self.match_(all, wide, (dst, pred), value, members)
            }
            WarpOp::Reduce { op, ty: OpTy::F(_), abs, nan, dst, value } => {
                self.reduce_f32(op == WarpReduction::Min, abs, nan, dst, value, members)
            }
            WarpOp::Reduce { op, ty, dst, value, .. } => self.reduce(op, ty, dst, value, members),
            WarpOp::ActiveMask { dst } => {
                let t = self.linear_tid();
                let lanes = self.existing_lanes(t);
                let active = self.arriving(t, lanes);
                self.mov(U32, dst, active);
            }
            WarpOp::Elect { dst, pred } => self.elect(dst, pred, members),
            // Every lane of the warp is already converged in block-uniform code; the
            // exchanges' end orders their memory.
            WarpOp::Sync => self.end_exchange(),
        }
    }

    /// Special register `reg` of the warp model into `dst`, as
    /// [`WarpReg`]'s doc specifies, from the linear thread id.
    fn warp_register(&mut self, reg: WarpReg, dst: RegId) {
        let last = match reg {
            WarpReg::Nwarpid => {
                let n = self.block_threads();
                let n = self.add(U32, n, Value::Imm(31));
                binary(BinaryOp::Shr, dst, n, Value::Imm(5))
            }
            WarpReg::LaneId => {
                let t = self.linear_tid();
                binary(BinaryOp::And, dst, t, Value::Imm(31))
            }
            WarpReg::WarpId => {
                let t = self.linear_tid();
                binary(BinaryOp::Shr, dst, t, Value::Imm(5))
            }
            mask => self.lane_mask(mask, dst),
        };
        self.push(last);
    }

    /// The last instruction of `%lanemask_*` `mask` into `dst`, after those before it.
    fn lane_mask(&mut self, mask: WarpReg, dst: RegId) -> InstKind {
        let t = self.linear_tid();
        let lane = self.and(U32, t, Value::Imm(31));
        let one = Value::Imm(1);
        if mask == WarpReg::LanemaskEq {
            return binary(BinaryOp::Shl, dst, one, lane);
        }
        let eq = self.bin(BinaryOp::Shl, U32, one, lane);
        if mask == WarpReg::LanemaskLt {
            return binary(BinaryOp::Sub, dst, eq, one);
        }
        let lt = self.bin(BinaryOp::Sub, U32, eq, one);
        let not = |src| InstKind::Unary {
            op: UnaryOp::Not,
            ty: U32,
            mode: FloatMode::default(),
            dst,
            src,
        };
        match mask {
            WarpReg::LanemaskGe => not(lt),
            WarpReg::LanemaskLe => binary(BinaryOp::Or, dst, lt, eq),
            _ => not(self.or(U32, lt, eq)),
        }
    }

    /// Publishes this thread's 32-bit `value`: afterwards [`Self::read_lane`] sees the
    /// warp's values (`pass::legalize_warps` decides how).
    fn publish(&mut self, value: Value) {
        self.push(InstKind::WarpPublish { value });
        self.exchanged = Some(value);
    }

    /// Ends an exchange, before the next one may overwrite it.
    fn end_exchange(&mut self) {
        self.push(InstKind::WarpSync);
    }

    /// The linear thread id of lane 0 of the warp of linear thread `t`.
    fn warp_base(&mut self, t: Value) -> Value {
        self.and(U32, t, Value::Imm(u64::from(!31u32)))
    }

    /// Lane `lane`'s published word (of the warp of linear thread `t`).
    fn read_lane(&mut self, t: Value, lane: Value) -> Value {
        let warp_base = self.warp_base(t);
        let value = self.exchanged.unwrap_or(Value::Imm(0));
        let dst = self.temp(U32);
        self.push(InstKind::WarpRead { dst, value, lane, warp_base });
        Value::Reg(dst)
    }

    /// Bit k set when lane k is in `lanes` (a mask) and published a non-zero word.
    fn ballot(&mut self, t: Value, lanes: Value) -> Value {
        let warp_base = self.warp_base(t);
        let value = self.exchanged.unwrap_or(Value::Imm(0));
        let dst = self.temp(U32);
        self.push(InstKind::WarpBallot { dst, value, lanes, warp_base });
        Value::Reg(dst)
    }

    /// The lanes of the warp of linear thread `t` that exist (all 32 but in a partial
    /// last warp).
    fn existing_lanes(&mut self, t: Value) -> Value {
        let total = self.block_threads();
        self.warp_lanes(t, total)
    }

    /// The member mask (the whole warp when `None`) intersected with the existing lanes.
    fn participants(&mut self, t: Value, members: Option<Value>) -> Value {
        let lanes = self.existing_lanes(t);
        match members {
            Some(m) => self.and(U32, m, lanes),
            None => lanes,
        }
    }

    /// The lanes of `members` that arrive at this collective: a ballot of 1, which a
    /// lane that exited or is on another path does not publish.
    fn arriving(&mut self, t: Value, members: Value) -> Value {
        self.publish(Value::Imm(1));
        let arrived = self.ballot(t, members);
        self.end_exchange();
        arrived
    }

    /// Combines the published words of the lanes in `lanes` (a mask) by `how`, starting
    /// from `init`, in a loop over the 32 lanes.
    fn over_lanes(&mut self, t: Value, lanes: Value, how: Combine, init: Value) -> Value {
        let acc_ty = match how {
            Combine::Reduce(_, ty) => ty,
            Combine::Equal(_) => U32,
        };
        let acc = self.temp(acc_ty);
        self.mov(acc_ty, acc, init);
        self.counted_loop(Value::Imm(32), 1, |e, k| {
            let word = e.read_lane(t, k);
            let bit = e.bin(BinaryOp::Shl, U32, Value::Imm(1), k);
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
        });
        Value::Reg(acc)
    }

    /// `shfl`: the source lane and range test of PTX ISA 9.2 §9.7.8.6.
    fn shuffle(
        &mut self,
        mode: ShuffleMode,
        (d, p): (RegId, Option<RegId>),
        [a, b, c]: [Value; 3],
        members: Option<Value>,
    ) {
        let t = self.linear_tid();
        let members = self.participants(t, members);
        self.publish(a);
        let lane = self.and(U32, t, Value::Imm(31));
        let bval = self.and(U32, b, Value::Imm(31));
        let cval = self.and(U32, c, Value::Imm(31));
        let seg = self.bin(BinaryOp::Shr, U32, c, Value::Imm(8));
        let seg = self.and(U32, seg, Value::Imm(31));
        let not_seg = self.not(U32, seg);
        let min_lane = self.and(U32, lane, seg);
        let clamp = self.and(U32, cval, not_seg);
        let max_lane = self.or(U32, min_lane, clamp);
        let (j, ok) = match mode {
            ShuffleMode::Up => {
                let j = self.bin(BinaryOp::Sub, S32, lane, bval);
                (j, self.cmp(CmpOp::Ge, S32, j, max_lane))
            }
            ShuffleMode::Down => {
                let j = self.add(U32, lane, bval);
                (j, self.cmp(CmpOp::Le, U32, j, max_lane))
            }
            ShuffleMode::Bfly => {
                let j = self.bin(BinaryOp::Xor, U32, lane, bval);
                (j, self.cmp(CmpOp::Le, U32, j, max_lane))
            }
            ShuffleMode::Idx => {
                let off = self.and(U32, bval, not_seg);
                let j = self.or(U32, min_lane, off);
                (j, self.cmp(CmpOp::Le, U32, j, max_lane))
            }
        };
        let src_lane = self.sel(U32, ok, j, lane);
        let value = self.read_lane(t, src_lane);
        self.end_exchange();
        // A source lane outside the member mask (or the block) gives 0, as one that does
        // not arrive does.
        let bit = self.bin(BinaryOp::Shr, U32, members, src_lane);
        let bit = self.and(U32, bit, Value::Imm(1));
        let member = self.cmp(CmpOp::Ne, U32, bit, Value::Imm(0));
        let value = self.sel(U32, member, value, Value::Imm(0));
        self.mov(U32, d, value);
        if let Some(p) = p {
            self.mov(OpTy::Pred, p, Value::Reg(ok));
        }
    }

    /// The ballot of the members' votes of `truth` (predicate `a`, negated when
    /// `negate`), in one exchange.
    fn votes(
        &mut self,
        t: Value,
        members: Value,
        (a, negate): (RegId, bool),
        truth: bool,
    ) -> Value {
        let (yes, no) = (u64::from(truth != negate), u64::from(truth == negate));
        let value = self.sel(U32, a, Value::Imm(yes), Value::Imm(no));
        self.publish(value);
        let votes = self.ballot(t, members);
        self.end_exchange();
        votes
    }

    /// `vote`: ballots count only the members that arrive, so `.all` asks whether one
    /// of them votes false rather than whether every member votes true.
    fn vote(&mut self, mode: VoteMode, d: RegId, a: RegId, negate: bool, members: Option<Value>) {
        let t = self.linear_tid();
        let members = self.participants(t, members);
        let r = match mode {
            VoteMode::Ballot => {
                let ones = self.votes(t, members, (a, negate), true);
                self.mov(U32, d, ones);
                return;
            }
            VoteMode::Any => {
                let ones = self.votes(t, members, (a, negate), true);
                self.cmp(CmpOp::Ne, U32, ones, Value::Imm(0))
            }
            VoteMode::All => {
                let zeros = self.votes(t, members, (a, negate), false);
                self.cmp(CmpOp::Eq, U32, zeros, Value::Imm(0))
            }
            VoteMode::Uni => {
                let ones = self.votes(t, members, (a, negate), true);
                let zeros = self.votes(t, members, (a, negate), false);
                let all = self.cmp(CmpOp::Eq, U32, zeros, Value::Imm(0));
                let none = self.cmp(CmpOp::Eq, U32, ones, Value::Imm(0));
                self.pred_or(all, none)
            }
        };
        self.mov(OpTy::Pred, d, Value::Reg(r));
    }

    /// `match`: compared among the members that arrive, one round per 32-bit half.
    fn match_(
        &mut self,
        all: bool,
        wide: bool,
        (d, p): (RegId, Option<RegId>),
        a: Value,
        members: Option<Value>,
    ) {
        let t = self.linear_tid();
        let members = self.participants(t, members);
        let members = self.arriving(t, members);
        let (halves, ty) = if wide { (2, OpTy::U(64)) } else { (1, U32) };
        let mut same = members;
        for h in 0..halves {
            let part = if wide {
                let shifted = self.bin(BinaryOp::Shr, ty, a, Value::Imm(32 * h));
                self.cvt(U32, ty, shifted)
            } else {
                a
            };
            self.publish(part);
            let eq = self.over_lanes(t, members, Combine::Equal(part), Value::Imm(0));
            self.end_exchange();
            same = self.and(U32, same, eq);
        }
        if all {
            let equal = self.cmp(CmpOp::Eq, U32, same, members);
            let r = self.sel(U32, equal, members, Value::Imm(0));
            self.mov(U32, d, r);
            if let Some(p) = p {
                self.mov(OpTy::Pred, p, Value::Reg(equal));
            }
        } else {
            self.mov(U32, d, same);
        }
    }

    /// Integer `redux`: each operation as one whose identity is 0, the word of a lane
    /// that does not arrive, published as `a ^ flip`, reduced, the result `^ flip`
    /// again.
    fn reduce(&mut self, op: WarpReduction, ty: OpTy, d: RegId, a: Value, members: Option<Value>) {
        let signed = ty.is_signed();
        let (bop, flip) = match op {
            WarpReduction::Add => (BinaryOp::Add, 0),
            WarpReduction::Max => (BinaryOp::Max, if signed { 0x8000_0000 } else { 0 }),
            WarpReduction::Min => (BinaryOp::Max, if signed { 0x7fff_ffff } else { 0xffff_ffff }),
            WarpReduction::And => (BinaryOp::Or, 0xffff_ffff),
            WarpReduction::Or => (BinaryOp::Or, 0),
            WarpReduction::Xor => (BinaryOp::Xor, 0),
        };
        let t = self.linear_tid();
        let members = self.participants(t, members);
        let word = self.bin(BinaryOp::Xor, U32, a, Value::Imm(flip));
        self.publish(word);
        let r = self.over_lanes(t, members, Combine::Reduce(bop, U32), Value::Imm(0));
        self.end_exchange();
        let r = self.bin(BinaryOp::Xor, U32, r, Value::Imm(flip));
        self.mov(ty, d, r);
    }

    /// `.f32` `redux`: reduced as unsigned integer keys that order floats totally (-0
    /// below +0), with a NaN lane mapped to the identity (ignored) or, under `.NaN`, to
    /// the absorbing end; only NaNs map to either end, so a result there is the
    /// canonical NaN 0x7fffffff.
    fn reduce_f32(
        &mut self,
        min: bool,
        abs: bool,
        nan: bool,
        d: RegId,
        a: Value,
        members: Option<Value>,
    ) {
        let t = self.linear_tid();
        let members = self.participants(t, members);
        let (identity, absorbing) = if min { (u32::MAX, 0) } else { (0, u32::MAX) };
        let bits = if abs { self.and(U32, a, Value::Imm(0x7fff_ffff)) } else { a };
        // key = bits ^ 0x8000_0000 for a clear sign bit, !bits for a set one.
        let sign = self.bin(BinaryOp::Shr, S32, bits, Value::Imm(31));
        let flip = self.or(U32, sign, Value::Imm(0x8000_0000));
        let key = self.bin(BinaryOp::Xor, U32, bits, flip);
        let magnitude = self.and(U32, bits, Value::Imm(0x7fff_ffff));
        let is_nan = self.cmp(CmpOp::Gt, U32, magnitude, Value::Imm(0x7f80_0000));
        let nan_key = if nan { absorbing } else { identity };
        let key = self.sel(U32, is_nan, Value::Imm(u64::from(nan_key)), key);
        // The maximum of the keys or, for `.min`, of their complements: identity 0, the
        // word of a lane that does not arrive.
        let flip = u64::from(identity);
        let word = self.bin(BinaryOp::Xor, U32, key, Value::Imm(flip));
        self.publish(word);
        let r = self.over_lanes(t, members, Combine::Reduce(BinaryOp::Max, U32), Value::Imm(0));
        self.end_exchange();
        let r = self.bin(BinaryOp::Xor, U32, r, Value::Imm(flip));
        let positive = self.and(U32, r, Value::Imm(0x8000_0000));
        let positive = self.cmp(CmpOp::Ne, U32, positive, Value::Imm(0));
        let from_positive = self.bin(BinaryOp::Xor, U32, r, Value::Imm(0x8000_0000));
        let from_negative = self.not(U32, r);
        let value = self.sel(U32, positive, from_positive, from_negative);
        let low_end = self.cmp(CmpOp::Eq, U32, r, Value::Imm(0));
        let high_end = self.cmp(CmpOp::Eq, U32, r, Value::Imm(u64::from(u32::MAX)));
        let ends = self.pred_or(low_end, high_end);
        let result = self.sel(U32, ends, Value::Imm(0x7fff_ffff), value);
        self.mov(U32, d, result);
    }

    /// `elect`: the lowest member that arrives leads, its lane the bit count below it.
    fn elect(&mut self, d: Option<RegId>, p: RegId, members: Option<Value>) {
        let t = self.linear_tid();
        let members = self.participants(t, members);
        let members = self.arriving(t, members);
        let minus = self.bin(BinaryOp::Sub, U32, members, Value::Imm(1));
        let not_members = self.not(U32, members);
        let below = self.and(U32, not_members, minus);
        let leader = self.un(UnaryOp::Popc, U32, below);
        let lane = self.and(U32, t, Value::Imm(31));
        let me = self.cmp(CmpOp::Eq, U32, lane, leader);
        let some = self.cmp(CmpOp::Ne, U32, members, Value::Imm(0));
        let is = self.pred_and(me, some);
        self.mov(OpTy::Pred, p, Value::Reg(is));
        if let Some(d) = d {
            self.mov(U32, d, leader);
        }
    }

    /// `bar.red` (see the module doc): `word` is the scratch word's shared offset.
    fn barrier_reduce(
        &mut self,
        op: BarrierReduction,
        dst: RegId,
        (cond, negate): (RegId, bool),
        word: u32,
    ) {
        let addr = Address { base: None, offset: i64::from(word) };
        // A 64-bit word of a wide window (`SharedLayout::wide`), whose low half
        // (little-endian) is then read.
        let counter = if self.k.shared.wide() { OpTy::U(64) } else { U32 };
        let mut bits = Value::Imm(0);
        for d in [Dim::X, Dim::Y, Dim::Z] {
            let t = self.special(SpecialReg::Tid(d));
            bits = self.or(U32, bits, t);
        }
        let first = self.cmp(CmpOp::Eq, U32, bits, Value::Imm(0));
        self.guarded(first, false, |e| {
            let srcs = vec![Value::Imm(0)];
            e.push(InstKind::Store { space: Space::Shared, ty: counter, srcs, addr });
        });
        self.push(InstKind::Barrier);
        self.guarded(cond, negate, |e| {
            e.push(InstKind::Atomic {
                op: AtomicOp::Add,
                space: Space::Shared,
                ty: counter,
                scope: Scope::Cta,
                order: Order::Relaxed,
                dst: None,
                addr,
                src: Value::Imm(1),
                cmp: Value::Imm(0),
            });
        });
        self.push(InstKind::Barrier);
        let count = self.temp(U32);
        self.push(InstKind::Load { space: Space::Shared, ty: U32, dsts: vec![Some(count)], addr });
        self.push(InstKind::Barrier);
        let count = Value::Reg(count);
        match op {
            BarrierReduction::Popc => self.mov(U32, dst, count),
            BarrierReduction::Or => {
                let any = self.cmp(CmpOp::Ne, U32, count, Value::Imm(0));
                self.mov(OpTy::Pred, dst, Value::Reg(any));
            }
            BarrierReduction::And => {
                let threads = self.block_threads();
                let all = self.cmp(CmpOp::Eq, U32, count, threads);
                self.mov(OpTy::Pred, dst, Value::Reg(all));
            }
        }
    }
}
