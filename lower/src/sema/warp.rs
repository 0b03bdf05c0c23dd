//! Warp-level instructions (PTX ISA 9.2 §9.7.8.6-7, §9.7.13.3-10), independent of the
//! device's warp mode (`docs/architecture.md`, *Warp modes*): each collective (`shfl`,
//! `vote`, `match`, `redux`, `activemask`, `elect`, `bar.warp.sync`) is checked and
//! resolved into one [`InstKind::Warp`], whose semantics (member masks, lanes that do
//! not arrive) `crate::ir::warp`'s doc specifies and which `pass::expand_warp` writes
//! out in warp exchanges. A `.sync` collective comes after a sync point of its warp
//! ([`SyncPoint::Warp`]).

use ptxvk_frontend::ast::{self, Operand};
use ptxvk_frontend::modifier::{
    BarrierForm, Convergence, FloatOption, Modifier, Reduction, Shuffle, Vote,
};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span};

use super::{Lowerer, Mods};
use crate::ir::{
    BoolOp, InstKind, OpTy, ShuffleMode, SyncPoint, Value, VoteMode, WarpInst, WarpOp,
    WarpReduction,
};

const SYNC: Modifier = Modifier::Convergence(Convergence::Sync);
const WARP: Modifier = Modifier::BarrierForm(BarrierForm::Warp);

const U32: OpTy = OpTy::U(32);

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
            self.warp_sync_point(i, m, members);
        }
        let result = match op {
            Opcode::Shfl => self.shfl(i, m),
            Opcode::Vote => self.vote(i, m),
            Opcode::Match => self.match_(i, m),
            Opcode::Redux => self.redux(i, m),
            Opcode::Activemask => self.activemask(i),
            Opcode::Elect => self.elect(i),
            Opcode::Bar if m.has(WARP) => self.collective(WarpOp::Sync, i.operands.first(), i.span),
            _ => return None,
        };
        Some(result)
    }

    /// The sync point before collective `i` of the lanes of `members`. Its kind is the
    /// instruction's opcode and decoded modifiers (`decode::Qualifiers`): a `.sync`
    /// collective waits for the lanes of its member mask to execute one "with the same
    /// qualifiers" (PTX ISA 9.2 §9.7.8.6), not necessarily the same instruction.
    fn warp_sync_point(&mut self, i: &ast::Instruction, m: &Mods, members: Value) {
        let kind = match self.collective_kinds.iter().position(|k| *k == m.qualifiers) {
            Some(k) => k,
            None => {
                self.collective_kinds.push(m.qualifiers.clone());
                self.collective_kinds.len() - 1
            }
        } as u32;
        self.push(InstKind::SyncPoint { point: SyncPoint::Warp { members, kind } }, i.span);
    }

    /// The sync point of a `.sync.aligned` matrix instruction (`mma`, `ldmatrix`,
    /// `wmma`, …), which every lane of the warp executes together.
    pub(super) fn whole_warp_sync_point(&mut self, i: &ast::Instruction, m: &Mods) {
        self.warp_sync_point(i, m, Value::Imm(0xffff_ffff));
    }

    /// Pushes collective `op` with member mask operand `members` (none for the forms
    /// without one).
    fn collective(
        &mut self,
        op: WarpOp,
        members: Option<&Operand>,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let members = members.map(|m| self.src(m, U32, false, span)).transpose()?;
        self.push(InstKind::Warp(Box::new(WarpInst { op, members })), span);
        Ok(())
    }

    /// `shfl{.sync}.mode.b32 d[|p], a, b, c{, membermask}` (§9.7.8.6-7).
    fn shfl(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let sync = m.has(SYNC);
        let mode = m.find(|d| match d {
            Modifier::Shuffle(s) => Some(s),
            _ => None,
        });
        let ops = i.operands.as_slice();
        let (dst, pred) = match &ops[0] {
            Operand::Pair(d, p, _) => {
                (self.dst(d, U32, false)?, Some(self.dst(p, OpTy::Pred, false)?))
            }
            d => (self.dst(d, U32, false)?, None),
        };
        let value = self.src(&ops[1], U32, false, span)?;
        let lane = self.src(&ops[2], U32, false, span)?;
        let clamp = self.src(&ops[3], U32, false, span)?;
        let mode = match mode.map(|s| s.value) {
            Some(Shuffle::Up) => ShuffleMode::Up,
            Some(Shuffle::Down) => ShuffleMode::Down,
            Some(Shuffle::Bfly) => ShuffleMode::Bfly,
            _ => ShuffleMode::Idx,
        };
        let op = WarpOp::Shuffle { mode, dst, pred, value, lane, clamp };
        self.collective(op, ops.get(4).filter(|_| sync), span)
    }

    /// `vote{.sync}.{all,any,uni}.pred d, {!}a{, membermask}` and `.ballot.b32`.
    fn vote(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let sync = m.has(SYNC);
        let ops = i.operands.as_slice();
        let mode = if m.has(Modifier::Vote(Vote::Ballot)) {
            VoteMode::Ballot
        } else if m.has(Modifier::Vote(Vote::Any)) {
            VoteMode::Any
        } else if m.has(Modifier::Vote(Vote::All)) {
            VoteMode::All
        } else {
            VoteMode::Uni
        };
        let ty = if mode == VoteMode::Ballot { U32 } else { OpTy::Pred };
        let dst = self.dst(&ops[0], ty, false)?;
        let (src, negate) = self.pred(&ops[1])?;
        let op = WarpOp::Vote { mode, dst, src, negate };
        self.collective(op, ops.get(2).filter(|_| sync), span)
    }

    /// `match.{any,all}.sync.b32/.b64 d[|p], a, membermask` (§9.7.13.5 of PTX 9.2).
    fn match_(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let ty = self.one_type(i, m)?;
        let ops = i.operands.as_slice();
        let all = m.has(Modifier::Vote(Vote::All));
        let (dst, pred) = match &ops[0] {
            Operand::Pair(d, p, _) if all => {
                (self.dst(d, U32, false)?, Some(self.dst(p, OpTy::Pred, false)?))
            }
            d => (self.dst(d, U32, false)?, None),
        };
        let wide = ty.bits() == 64;
        let value = self.src(&ops[1], OpTy::U(ty.bits() as u8), false, span)?;
        self.collective(WarpOp::Match { all, wide, dst, pred, value }, Some(&ops[2]), span)
    }

    /// `redux.sync.op.type d, a, membermask` for integer operations (§9.7.13.6).
    fn redux(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        // The form is checked (`ptxvk_frontend::forms`): one operation, `.abs` and
        // `.NaN` on `.f32` only.
        let span = i.span;
        let op = m.find(|d| match d {
            Modifier::Reduction(Reduction::Add) => Some(WarpReduction::Add),
            Modifier::Reduction(Reduction::Min) => Some(WarpReduction::Min),
            Modifier::Reduction(Reduction::Max) => Some(WarpReduction::Max),
            _ => None,
        });
        let op = match (op, m.bool_op) {
            (Some(op), _) => op.value,
            (None, Some(BoolOp::And)) => WarpReduction::And,
            (None, Some(BoolOp::Or)) => WarpReduction::Or,
            (None, _) => WarpReduction::Xor,
        };
        let ty = self.one_type(i, m)?;
        let abs = m.has(Modifier::FloatOption(FloatOption::Abs));
        let nan = m.has(Modifier::FloatOption(FloatOption::NaN));
        let ops = i.operands.as_slice();
        // A float is read and written as its bits.
        let bits = if ty.is_float() { U32 } else { ty };
        let dst = self.dst(&ops[0], bits, false)?;
        let value = self.src(&ops[1], bits, false, span)?;
        let op = WarpOp::Reduce { op, ty, abs, nan, dst, value };
        self.collective(op, Some(&ops[2]), span)
    }

    /// `activemask.b32 d`: the lanes of the warp that execute it.
    fn activemask(&mut self, i: &ast::Instruction) -> Result<(), Diagnostic> {
        let span = i.span;
        let dst = self.dst(&i.operands[0], U32, false)?;
        self.collective(WarpOp::ActiveMask { dst }, None, span)
    }

    /// `elect.sync d|p, membermask`.
    fn elect(&mut self, i: &ast::Instruction) -> Result<(), Diagnostic> {
        let span = i.span;
        let [dp, mask] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, "`elect.sync` takes `d|p` and a member mask"));
        };
        let (dst, pred) = match dp {
            Operand::Pair(d, p, _) => {
                let d = match d.as_ref() {
                    Operand::Sink(_) => None,
                    d => Some(self.dst(d, U32, false)?),
                };
                (d, self.dst(p, OpTy::Pred, false)?)
            }
            other => return Err(Diagnostic::error(other.span(), "expected `d|p`")),
        };
        self.collective(WarpOp::Elect { dst, pred }, Some(mask), span)
    }
}
