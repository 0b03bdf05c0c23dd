//! Warp-level instructions (PTX ISA 9.2 §9.7.8.6-7, §9.7.13.3-10), independent of the
//! device's warp mode (`docs/architecture.md`, *Warp modes*): each collective (`shfl`,
//! `vote`, `match`, `redux`, `activemask`, `elect`, `bar.warp.sync`), which the front
//! end decodes (`ptxvk_frontend::forms::warp`), has its operands resolved into one
//! [`InstKind::Warp`], whose semantics (member masks, lanes that do not arrive)
//! `crate::ir::warp`'s doc specifies and which `pass::expand_warp` writes out in warp
//! exchanges. A `.sync` collective comes after a sync point of its warp
//! ([`SyncPoint::Warp`]).

use ptxvk_frontend::ast;
use ptxvk_frontend::forms::warp::{decode, Collective, CollectiveKind as Kind};
use ptxvk_frontend::{Diagnostic, Opcode};

use super::{Mods, Resolver};
use crate::ir::{InstKind, OpTy, SyncPoint, Value, VoteMode, WarpInst, WarpOp, WarpSyncKind};

const U32: OpTy = OpTy::U(32);

impl Resolver<'_> {
    /// Warp instructions, decoded by the front end (`forms::warp`); `None` for other
    /// instructions.
    pub(super) fn warp(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        let c = decode(i, op, &m.details, m.bool_op)?;
        Some(c.and_then(|c| self.collective(&c, i, m)))
    }

    /// The sync point before collective `i` of the lanes of `members`. Its kind is the
    /// instruction's opcode and decoded modifiers (`decode::Qualifiers`), spelled: a
    /// `.sync` collective waits for the lanes of its member mask to execute one "with
    /// the same qualifiers" (PTX ISA 9.2 §9.7.8.6), not necessarily the same instruction.
    fn warp_sync_point(&mut self, i: &ast::Instruction, m: &Mods, members: Value) {
        let kind = WarpSyncKind::new(m.qualifiers.to_string());
        self.push(InstKind::SyncPoint { point: SyncPoint::Warp { members, kind } }, i.span);
    }

    /// The sync point of a `.sync.aligned` matrix instruction (`mma`, `ldmatrix`,
    /// `wmma`, …), which every lane of the warp executes together.
    pub(super) fn whole_warp_sync_point(&mut self, i: &ast::Instruction, m: &Mods) {
        self.warp_sync_point(i, m, Value::Imm(0xffff_ffff));
    }

    /// Collective `c` (instruction `i`): the sync point of a `.sync` collective, then
    /// its operation.
    fn collective(
        &mut self,
        c: &Collective<'_>,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        if let Some(members) = c.members {
            // Every lane of the member mask must reach a `.sync` collective before any
            // goes on (independent thread scheduling): where other threads may be
            // polling, `pass::schedule` makes this a wait.
            let members = self.src(members, U32, false, span)?;
            self.warp_sync_point(i, m, members);
        }
        let dst = |s: &mut Self, ty| match c.dst {
            Some(d) => s.dst(d, ty, false),
            None => Err(Diagnostic::error(span, "expected a destination")),
        };
        let pred = |s: &mut Self| c.pred.map(|p| s.dst(p, OpTy::Pred, false)).transpose();
        let src = |s: &mut Self, k: usize, ty| s.src(&c.sources[k], ty, false, span);
        let op = match c.kind {
            // `shfl{.sync}.mode.b32 d[|p], a, b, c{, membermask}` (§9.7.8.6-7).
            Kind::Shuffle(mode) => {
                let (dst, pred) = (dst(self, U32)?, pred(self)?);
                let (value, lane) = (src(self, 0, U32)?, src(self, 1, U32)?);
                let clamp = src(self, 2, U32)?;
                WarpOp::Shuffle { mode, dst, pred, value, lane, clamp }
            }
            // `vote{.sync}.{all,any,uni}.pred d, {!}a{, membermask}` and `.ballot.b32`.
            Kind::Vote(mode) => {
                let dst = dst(self, if mode == VoteMode::Ballot { U32 } else { OpTy::Pred })?;
                let (src, negate) = self.pred(&c.sources[0])?;
                WarpOp::Vote { mode, dst, src, negate }
            }
            // `match.{any,all}.sync.b32/.b64 d[|p], a, membermask` (§9.7.13.5).
            Kind::Match { all } => {
                let ty = self.one_type(i, m)?;
                let (dst, pred) = (dst(self, U32)?, pred(self)?);
                let wide = ty.bits() == 64;
                let value = src(self, 0, OpTy::U(ty.bits() as u8))?;
                WarpOp::Match { all, wide, dst, pred, value }
            }
            // `redux.sync.op.type d, a, membermask` (§9.7.13.6); a float is read and
            // written as its bits.
            Kind::Reduce { op, abs, nan } => {
                let ty = self.one_type(i, m)?;
                let bits = if ty.is_float() { U32 } else { ty };
                let (dst, value) = (dst(self, bits)?, src(self, 0, bits)?);
                WarpOp::Reduce { op, ty, abs, nan, dst, value }
            }
            // `activemask.b32 d`: the lanes of the warp that execute it.
            Kind::ActiveMask => WarpOp::ActiveMask { dst: dst(self, U32)? },
            // `elect.sync d|p, membermask`.
            Kind::Elect => {
                let dst = c.dst.map(|d| self.dst(d, U32, false)).transpose()?;
                let pred = pred(self)?.ok_or_else(|| Diagnostic::error(span, "expected `d|p`"))?;
                WarpOp::Elect { dst, pred }
            }
            Kind::WarpSync => WarpOp::Sync,
        };
        let members = c.members.map(|m| self.src(m, U32, false, span)).transpose()?;
        self.push(InstKind::Warp(Box::new(WarpInst { op, members })), span);
        Ok(())
    }
}
