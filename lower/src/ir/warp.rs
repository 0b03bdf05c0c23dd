//! The warp collectives (`shfl`, `vote`, `match`, `redux`, `activemask`, `elect`,
//! `bar.warp.sync`; PTX ISA 9.2 §9.7.8.6-7, §9.7.13.4-7) as semantic analysis resolves
//! them: [`super::InstKind::Warp`], one [`WarpInst`] per PTX instruction, until
//! `pass::expand_warp` writes each out in warp exchanges ([`super::InstKind::WarpPublish`]
//! and the reads, ballots and syncs after it). This doc is their specification; the
//! interpreter (`interp::collective`) models it directly.
//!
//! # Warps, members and lanes that do not arrive
//!
//! A PTX warp is 32 consecutive linear thread ids of the block (`%tid.x + %ntid.x *
//! (%tid.y + %ntid.y * %tid.z)`), whatever the device's subgroup size; lane `l` of the
//! thread with linear id `t` is `t % 32`. A partial last warp has fewer lanes.
//!
//! A collective operates over the lanes of its *member mask* that execute it (*arrive*)
//! — for the thread that executes it, `M = members & arriving`:
//!
//! - `members` is the `.sync` form's 32-bit mask operand, read by each thread
//!   ([`WarpInst::members`]); the deprecated forms without one (`shfl`, `vote`) and
//!   `activemask` take the whole warp (`None`).
//! - `arriving` are the lanes of the warp that execute this instruction. Lanes that
//!   exited are not members (PTX ISA 9.2 on `shfl.sync`, `vote.sync`, `match.sync`,
//!   `redux.sync`: "non-exited threads in membermask"), nor are lanes past a partial
//!   last warp's end. A lane that is alive but on another path is waited for where
//!   `pass::schedule` runs the kernel (semantic analysis puts a
//!   [`super::SyncPoint::Warp`] before every `.sync` collective); elsewhere the
//!   collective completes among the lanes that arrive, as if the others had exited.
//! - The executing lane should be in its member mask (undefined in the ISA when not); a
//!   lane outside it gets the result over `M`, itself excluded.
//!
//! # The operations ([`WarpOp`])
//!
//! - [`WarpOp::Shuffle`] (`shfl{.sync}.mode.b32 d[|p], a, b, c{, membermask}`): with
//!   `lane = %laneid`, `bval = b & 31`, `cval = c & 31`, `seg = (c >> 8) & 31`,
//!   `minLane = lane & seg`, `maxLane = minLane | (cval & ~seg)`, the source lane `j` and
//!   the range test `p` are the ISA's (§9.7.8.6): `.up` `j = lane - bval`, `p = j >=
//!   maxLane` (signed); `.down` `j = lane + bval`, `p = j <= maxLane`; `.bfly` `j = lane ^
//!   bval`, `p = j <= maxLane`; `.idx` `j = minLane | (bval & ~seg)`, `p = j <= maxLane`;
//!   when `p` fails `j = lane`. `d = a` of lane `j` when `j` is in `M`, else 0 (the ISA
//!   leaves a source lane outside the member mask, or that does not arrive, undefined).
//!   The lane offset `b` and the clamp/segment word `c` are values, so that
//!   `pass::warp_trees` recognises reduction and scan trees (`shfl.down`/`.bfly` by
//!   constant offsets) on them.
//! - [`WarpOp::Vote`] (`vote{.sync}.mode d, {!}a{, membermask}`, §9.7.13.4), each lane
//!   voting `a` (negated under `!`): `.all` holds when no lane of `M` votes false (so it
//!   holds for an empty `M`); `.any` when one votes true; `.uni` when all lanes of `M`
//!   vote alike; `.ballot.b32` has bit `k` set for the lanes `k` of `M` that vote true.
//! - [`WarpOp::Match`] (`match.{any,all}.sync.{b32,b64} d[|p], a, membermask`,
//!   §9.7.13.5): `.any`'s `d` is the lanes of `M` whose `a` equals this lane's; `.all`'s
//!   `d` is `M` when every lane of `M` has this lane's `a`, else 0, and `p` whether it is.
//! - [`WarpOp::Reduce`] (`redux.sync.op.type d, a, membermask`, §9.7.13.6-7): the
//!   reduction over the `a` of the lanes of `M`; an empty `M` gives the operation's
//!   identity (`.add`, `.or`, `.xor`: 0; `.and`: all ones; `.min`/`.max`: the type's
//!   largest/smallest value). On `.f32` (`.min`/`.max` only), floats are ordered with
//!   -0 below +0, `.abs` takes each value's magnitude first, a NaN is ignored, and the
//!   result is the canonical NaN `0x7fffffff` when every value was NaN (or `M` is empty)
//!   or, under `.NaN`, when any was.
//! - [`WarpOp::ActiveMask`] (`activemask.b32 d`, §9.7.13.10): the lanes of the warp
//!   that arrive (the whole warp is the member set).
//! - [`WarpOp::Elect`] (`elect.sync d|p, membermask`, §9.7.13.8): the leader is the lowest
//!   lane of `M` (an exited lane cannot lead); `d` (when written) is its lane number, 32
//!   for an empty `M`, and `p` holds in the leader alone.
//! - [`WarpOp::Sync`] (`bar.warp.sync membermask`, §9.7.13.3): orders the warp's memory
//!   accesses; it waits for nothing more than the lanes that arrive.

use super::{OpTy, RegId, Value};

/// `shfl`'s mode, `vote`'s and `redux.sync`'s operation, as the front end decodes
/// them (`ptxvk_frontend::forms::warp`).
pub use ptxvk_frontend::forms::warp::{ShuffleMode, VoteMode, WarpReduction};

/// What a `bar.red` ([`super::InstKind::BarrierReduce`]) computes over the threads of
/// the block (PTX ISA 9.2 §9.7.13.1); a thread that exited holds no predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierReduction {
    /// `.popc.u32`: the number of threads whose predicate holds (`dst` 32-bit).
    Popc,
    /// `.and.pred`: whether it holds in every thread of the block.
    And,
    /// `.or.pred`: whether it holds in one.
    Or,
}

/// What a warp collective computes (the module doc specifies each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WarpOp {
    /// `d` (32-bit) and, when given, `p` (a predicate): `a` of the source lane and the
    /// range test; `lane` is PTX's `b`, `clamp` its `c`.
    Shuffle {
        mode: ShuffleMode,
        dst: RegId,
        pred: Option<RegId>,
        value: Value,
        lane: Value,
        clamp: Value,
    },
    /// `dst`: a predicate, or 32-bit for `.ballot`; the vote is predicate `src`,
    /// negated when `negate`.
    Vote {
        mode: VoteMode,
        dst: RegId,
        src: RegId,
        negate: bool,
    },
    /// `dst` (32-bit) and, for `.all` only, `pred`; `value` is 32-bit, or 64-bit when
    /// `wide`.
    Match {
        all: bool,
        wide: bool,
        dst: RegId,
        pred: Option<RegId>,
        value: Value,
    },
    /// `dst` and `value` at `ty`: `.u32`, `.s32` (`.b32` reads as `.u32`) or `.f32`;
    /// `abs` and `nan` (`.NaN`) only on `.f32`, whose operation is `.min` or `.max`.
    Reduce {
        op: WarpReduction,
        ty: OpTy,
        abs: bool,
        nan: bool,
        dst: RegId,
        value: Value,
    },
    /// `dst` (32-bit).
    ActiveMask {
        dst: RegId,
    },
    /// `dst` (32-bit) when written (`_` is none), `pred` (a predicate).
    Elect {
        dst: Option<RegId>,
        pred: RegId,
    },
    Sync,
}

/// A warp collective and its member mask (`None`: the whole warp).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarpInst {
    pub op: WarpOp,
    pub members: Option<Value>,
}

const U32: OpTy = OpTy::U(32);

impl WarpInst {
    /// Registers written, with their types.
    pub fn defs(&self) -> Vec<(RegId, OpTy)> {
        match &self.op {
            WarpOp::Shuffle { dst, pred, .. } | WarpOp::Match { dst, pred, .. } => {
                std::iter::once((*dst, U32)).chain(pred.map(|p| (p, OpTy::Pred))).collect()
            }
            WarpOp::Vote { mode, dst, .. } => {
                vec![(*dst, if *mode == VoteMode::Ballot { U32 } else { OpTy::Pred })]
            }
            WarpOp::Reduce { ty, dst, .. } => vec![(*dst, *ty)],
            WarpOp::ActiveMask { dst } => vec![(*dst, U32)],
            WarpOp::Elect { dst, pred } => {
                dst.map(|d| (d, U32)).into_iter().chain([(*pred, OpTy::Pred)]).collect()
            }
            WarpOp::Sync => Vec::new(),
        }
    }

    /// Values read, with their types (`Value::Reg` of a predicate for a vote).
    pub fn uses(&self) -> Vec<(Value, OpTy)> {
        let mut out: Vec<(Value, OpTy)> = self.members.map(|m| (m, U32)).into_iter().collect();
        match &self.op {
            WarpOp::Shuffle { value, lane, clamp, .. } => {
                out.extend([(*value, U32), (*lane, U32), (*clamp, U32)]);
            }
            WarpOp::Vote { src, .. } => out.push((Value::Reg(*src), OpTy::Pred)),
            WarpOp::Match { wide, value, .. } => {
                out.push((*value, OpTy::U(if *wide { 64 } else { 32 })));
            }
            WarpOp::Reduce { ty, value, .. } => out.push((*value, *ty)),
            WarpOp::ActiveMask { .. } | WarpOp::Elect { .. } | WarpOp::Sync => {}
        }
        out
    }

    /// Calls `f` on every register the instruction mentions.
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        let value = |v: &mut Value, f: &mut dyn FnMut(&mut RegId)| {
            if let Value::Reg(r) = v {
                f(r)
            }
        };
        if let Some(m) = &mut self.members {
            value(m, f);
        }
        match &mut self.op {
            WarpOp::Shuffle { dst, pred, value: a, lane, clamp, .. } => {
                [a, lane, clamp].into_iter().for_each(|x| value(x, f));
                f(dst);
                pred.iter_mut().for_each(&mut *f);
            }
            WarpOp::Vote { dst, src, .. } => {
                f(src);
                f(dst);
            }
            WarpOp::Match { dst, pred, value: a, .. } => {
                value(a, f);
                f(dst);
                pred.iter_mut().for_each(&mut *f);
            }
            WarpOp::Reduce { dst, value: a, .. } => {
                value(a, f);
                f(dst);
            }
            WarpOp::ActiveMask { dst } => f(dst),
            WarpOp::Elect { dst, pred } => {
                dst.iter_mut().for_each(&mut *f);
                f(pred);
            }
            WarpOp::Sync => {}
        }
    }

    /// What is wrong with the instruction's shape, if anything (the verifier's check).
    pub fn malformed(&self) -> Option<&'static str> {
        let sync_only =
            matches!(self.op, WarpOp::Match { .. } | WarpOp::Reduce { .. } | WarpOp::Elect { .. });
        if sync_only && self.members.is_none() {
            return Some("a `match`, `redux` or `elect` without a member mask");
        }
        match &self.op {
            WarpOp::ActiveMask { .. } if self.members.is_some() => {
                Some("an `activemask` with a member mask")
            }
            WarpOp::Match { all: false, pred: Some(_), .. } => {
                Some("a `match.any` with a predicate")
            }
            WarpOp::Reduce { op, ty, abs, nan, .. } => match ty {
                OpTy::F(32) if matches!(op, WarpReduction::Min | WarpReduction::Max) => None,
                OpTy::F(_) => Some("a float `redux` that is not `.min` or `.max` on `.f32`"),
                OpTy::U(32) | OpTy::S(32) if !abs && !nan => None,
                _ => Some("an integer `redux` that is not 32-bit or has `.abs`/`.NaN`"),
            },
            _ => None,
        }
    }
}

/// The warp model's special registers (PTX ISA 9.2 §10.3-5, §10.7-11), from the
/// thread's linear id `t` in its block (module doc): `%laneid` = `t % 32`, `%warpid` =
/// `t / 32`, `%nwarpid` = the block's warps (its threads plus 31, over 32), and
/// `%lanemask_eq/lt/le/gt/ge` the lanes of the warp equal to, below, at most, above and
/// at least `%laneid` (`1 << lane`, `(1 << lane) - 1`, …). Semantic analysis resolves
/// each into one [`super::SpecialReg::Warp`]; `pass::expand_warp` writes it out from
/// `%tid` and `%ntid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarpReg {
    LaneId,
    WarpId,
    Nwarpid,
    LanemaskEq,
    LanemaskLt,
    LanemaskLe,
    LanemaskGt,
    LanemaskGe,
}
