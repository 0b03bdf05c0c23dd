//! The warp collectives (PTX ISA 9.2 §9.7.8.6-7, §9.7.13.3-10) decoded ([`decode`]):
//! what each one does, from its opcode and modifiers, and its operands split into
//! the destination, the predicate of a `d|p` destination, the sources and the member
//! mask of the `.sync` forms ([`Collective`]). Their types, operations and operand
//! counts are the rows of `super`'s table; `elect`'s `d|p` is checked here.
//!
//! The operation types ([`ShuffleMode`], [`VoteMode`], [`WarpReduction`]) are also the
//! IR's (`ptxvk_lower::ir::warp` re-exports them).

use crate::ast::{Instruction, Operand};
use crate::decode::BoolOp;
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode;
use crate::modifier::{BarrierForm, Convergence, FloatOption, Modifier, Reduction, Shuffle, Vote};
use crate::span::Spanned;

/// `shfl`'s mode (PTX ISA 9.2 §9.7.8.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShuffleMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `vote`'s mode (§9.7.13.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// `redux.sync`'s operation (§9.7.13.6-7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarpReduction {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// What a warp collective does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectiveKind {
    /// `shfl{.sync}.mode.b32 d[|p], a, b, c{, membermask}`: the sources `a, b, c`.
    Shuffle(ShuffleMode),
    /// `vote{.sync}.{all,any,uni}.pred d, {!}a{, membermask}` and `.ballot.b32`.
    Vote(VoteMode),
    /// `match.{any,all}.sync.type d[|p], a, membermask`; `d|p` only with `.all`.
    Match { all: bool },
    /// `redux.sync.op{.abs}{.NaN}.type d, a, membermask`.
    Reduce { op: WarpReduction, abs: bool, nan: bool },
    /// `activemask.b32 d`.
    ActiveMask,
    /// `elect.sync d|p, membermask`; `d` may be `_`.
    Elect,
    /// `bar.warp.sync membermask`.
    WarpSync,
}

/// A warp collective decoded: its operation and its operands.
#[derive(Clone, Copy, Debug)]
pub struct Collective<'i> {
    pub kind: CollectiveKind,
    /// The destination (`d` of `d|p`); none for `bar.warp.sync` and `elect`'s `_|p`.
    pub dst: Option<&'i Operand>,
    /// The predicate `p` of a `d|p` destination.
    pub pred: Option<&'i Operand>,
    /// The source operands, without the member mask.
    pub sources: &'i [Operand],
    /// The member mask of the `.sync` forms (none for the deprecated forms without it
    /// and for `activemask`).
    pub members: Option<&'i Operand>,
}

const SYNC: Modifier = Modifier::Convergence(Convergence::Sync);

/// Decodes warp collective `i` of opcode `op`, modifiers `details` and bitwise
/// operation `bool_op`, whose form the table has checked; `None` for the other
/// instructions (and `bar` without `.warp`), an error for an `elect` without `d|p`
/// and a member mask.
pub fn decode<'i>(
    i: &'i Instruction,
    op: Opcode,
    details: &[Spanned<Modifier>],
    bool_op: Option<BoolOp>,
) -> Option<Result<Collective<'i>, Diagnostic>> {
    let has = |d: Modifier| details.iter().any(|x| x.value == d);
    let ops = i.operands.as_slice();
    let sync = has(SYNC);
    // The operands from `k` on, and the member mask at `mask`.
    let from = |k: usize, mask: Option<usize>| {
        let end = mask.map_or(ops.len(), |m| m.min(ops.len()));
        (ops.get(k..end.max(k)).unwrap_or_default(), mask.and_then(|m| ops.get(m)))
    };
    // `d|p` split, when `pair` allows it.
    let split = |pair: bool| match ops.first() {
        Some(Operand::Pair(d, p, _)) if pair => (Some(d.as_ref()), Some(p.as_ref())),
        d => (d, None),
    };
    let (kind, (dst, pred), (sources, members)) = match op {
        Opcode::Shfl => {
            let mode = match find(details, |d| match d {
                Modifier::Shuffle(s) => Some(s),
                _ => None,
            }) {
                Some(Shuffle::Up) => ShuffleMode::Up,
                Some(Shuffle::Down) => ShuffleMode::Down,
                Some(Shuffle::Bfly) => ShuffleMode::Bfly,
                _ => ShuffleMode::Idx,
            };
            (CollectiveKind::Shuffle(mode), split(true), from(1, Some(4).filter(|_| sync)))
        }
        Opcode::Vote => {
            let mode = if has(Modifier::Vote(Vote::Ballot)) {
                VoteMode::Ballot
            } else if has(Modifier::Vote(Vote::Any)) {
                VoteMode::Any
            } else if has(Modifier::Vote(Vote::All)) {
                VoteMode::All
            } else {
                VoteMode::Uni
            };
            (CollectiveKind::Vote(mode), split(false), from(1, Some(2).filter(|_| sync)))
        }
        Opcode::Match => {
            let all = has(Modifier::Vote(Vote::All));
            (CollectiveKind::Match { all }, split(all), from(1, Some(2)))
        }
        Opcode::Redux => {
            let op = find(details, |d| match d {
                Modifier::Reduction(Reduction::Add) => Some(WarpReduction::Add),
                Modifier::Reduction(Reduction::Min) => Some(WarpReduction::Min),
                Modifier::Reduction(Reduction::Max) => Some(WarpReduction::Max),
                _ => None,
            });
            let op = match (op, bool_op) {
                (Some(op), _) => op,
                (None, Some(BoolOp::And)) => WarpReduction::And,
                (None, Some(BoolOp::Or)) => WarpReduction::Or,
                (None, _) => WarpReduction::Xor,
            };
            let abs = has(Modifier::FloatOption(FloatOption::Abs));
            let nan = has(Modifier::FloatOption(FloatOption::NaN));
            (CollectiveKind::Reduce { op, abs, nan }, split(false), from(1, Some(2)))
        }
        Opcode::Activemask => (CollectiveKind::ActiveMask, split(false), from(1, None)),
        Opcode::Elect => {
            let span = i.span;
            let [dp, _] = ops else {
                return Some(Err(Diagnostic::error(
                    span,
                    "`elect.sync` takes `d|p` and a member mask",
                )));
            };
            let Operand::Pair(d, p, _) = dp else {
                return Some(Err(Diagnostic::error(dp.span(), "expected `d|p`")));
            };
            let d = Some(d.as_ref()).filter(|d| !matches!(d, Operand::Sink(_)));
            (CollectiveKind::Elect, (d, Some(p.as_ref())), from(1, Some(1)))
        }
        Opcode::Bar if has(Modifier::BarrierForm(BarrierForm::Warp)) => {
            (CollectiveKind::WarpSync, (None, None), from(0, Some(0)))
        }
        _ => return None,
    };
    Some(Ok(Collective { kind, dst, pred, sources, members }))
}

/// The first modifier of `details` that `f` picks out.
fn find<T>(details: &[Spanned<Modifier>], f: impl Fn(Modifier) -> Option<T>) -> Option<T> {
    details.iter().find_map(|d| f(d.value))
}
