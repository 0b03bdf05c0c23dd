//! Predication of block-divergent control flow around workgroup barriers: emulated warp
//! collectives and `bar.sync` (`docs/architecture.md`, *Warp modes*;
//! `docs/design-notes.md`, *Emulated warps*).
//!
//! An emulated collective synchronizes the whole block ([`InstKind::WarpBarrier`]), and
//! so does `bar.sync` ([`InstKind::Barrier`]), so every thread must reach it, also
//! threads whose PTX control flow would not: CUDA lets threads that have exited miss a
//! `bar.sync`, SPIR-V does not (`crate::uniformity`). When
//! [`crate::uniformity`] finds a barrier in divergent control flow, this pass
//! rewrites the kernel's structured body so that every thread walks every path that
//! contains a collective, with a per-thread *execution mask* saying whether it really
//! executes there:
//!
//! * code without collectives and without exits runs as before, inside `if mask`;
//! * a block with collectives is split at its barriers: the barriers run
//!   unconditionally (an inactive thread publishes 0, so it is in no ballot), the code
//!   between them inside `if mask`;
//! * `if c {A} else {B}` becomes `mask = m ∧ c; A'; mask = m ∧ ¬c; B'; mask = the threads
//!   still running after either arm`;
//! * a loop runs while *any* thread of the block still iterates (a block-wide vote in a
//!   shared word: three barriers per iteration), each thread's iterations under its
//!   mask; `break` and `continue` clear the mask of the thread for the loop or the
//!   iteration, `return` for the rest of the kernel;
//! * a `switch` becomes one predicated arm per case.
//!
//! Kernels whose collectives are all in uniform control flow are not touched.

use ptxvk_frontend::{Diagnostic, Span};

use crate::ir::{
    Address, BoolOp, CmpOp, Dim, Inst, InstKind, Kernel, OpTy, RegId, RegInfo, RegTy, Space,
    SpecialReg, Terminator, Value,
};
use crate::ir::{Node, SwitchCase};

/// Rewrites `body` as the module doc describes.
pub fn run(kernel: &mut Kernel, body: Vec<Node>) -> Result<Vec<Node>, Diagnostic> {
    let span = kernel.span;
    // A kernel with `bar.sync` alone has no vote word yet (`legalize_warps` reserves it
    // for collectives).
    if kernel.block_vote.is_none() {
        super::legalize_warps::reserve_vote(kernel);
    }
    let Some(vote) = kernel.block_vote else {
        return Err(Diagnostic::internal(span, "no block-vote word for predication"));
    };
    let mut p = Predicator { kernel, vote, span };
    let alive = p.reg(RegTy::Pred);
    let mask = p.reg(RegTy::Pred);
    let mut out = vec![p.code(vec![mov_pred(alive, true), mov_pred(mask, true)])];
    let ctx = Ctx { mask, alive, in_loop: None };
    p.sequence(&body, &ctx, &mut out);
    Ok(out)
}

struct Predicator<'k> {
    kernel: &'k mut Kernel,
    /// The shared byte offset of the block-vote word.
    vote: u32,
    span: Span,
}

/// The masks in scope: `mask` is the current execution mask (updated in place),
/// `alive` clears on `return`, `in_loop` (of the innermost predicated loop) on `break`.
struct Ctx {
    mask: RegId,
    alive: RegId,
    in_loop: Option<RegId>,
}

fn mov_pred(dst: RegId, v: bool) -> InstKind {
    InstKind::Mov { ty: OpTy::Pred, dst, src: Value::Imm(u64::from(v)) }
}

fn and(dst: RegId, lhs: RegId, rhs: RegId) -> InstKind {
    InstKind::PredLogic { op: BoolOp::And, dst, lhs, rhs }
}

fn or(dst: RegId, lhs: RegId, rhs: RegId) -> InstKind {
    InstKind::PredLogic { op: BoolOp::Or, dst, lhs, rhs }
}

fn not(dst: RegId, src: RegId) -> InstKind {
    InstKind::PredNot { dst, src }
}

/// Whether `nodes` hold a block barrier ([`InstKind::is_block_barrier`]).
fn has_collective(kernel: &Kernel, nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match n {
        Node::Code(b) => kernel.blocks[b.index()].insts.iter().any(|i| i.kind.is_block_barrier()),
        Node::If { then, otherwise, .. } => {
            has_collective(kernel, then) || has_collective(kernel, otherwise)
        }
        Node::Switch { cases, .. } => cases.iter().any(|c| has_collective(kernel, &c.body)),
        Node::Loop { body, .. } => has_collective(kernel, body),
        Node::Break | Node::Continue | Node::Return => false,
    })
}

/// Whether `nodes` may leave themselves other than by falling through: a `return`, or a
/// `break`/`continue` (at `depth` 0) of a loop outside them.
fn exits(nodes: &[Node], depth: usize) -> bool {
    nodes.iter().any(|n| match n {
        Node::Code(_) => false,
        Node::If { then, otherwise, .. } => exits(then, depth) || exits(otherwise, depth),
        Node::Switch { cases, .. } => cases.iter().any(|c| exits(&c.body, depth)),
        Node::Loop { body, .. } => exits(body, depth + 1),
        Node::Break | Node::Continue => depth == 0,
        Node::Return => true,
    })
}

impl Predicator<'_> {
    fn reg(&mut self, ty: RegTy) -> RegId {
        let id = RegId(self.kernel.regs.len() as u32);
        self.kernel.regs.push(RegInfo { name: format!("$mask{}", id.0), ty, span: self.span });
        id
    }

    /// A new block of `insts`, as a node.
    fn code(&mut self, insts: Vec<InstKind>) -> Node {
        let span = self.span;
        let id = crate::ir::BlockId(self.kernel.blocks.len() as u32);
        self.kernel.blocks.push(crate::ir::Block {
            label: None,
            span,
            insts: insts.into_iter().map(|kind| Inst { kind, span }).collect(),
            term: Terminator::Return,
            term_span: span,
        });
        Node::Code(id)
    }

    fn guarded(&self, mask: RegId, nodes: Vec<Node>) -> Node {
        Node::If { cond: mask, negate: false, then: nodes, otherwise: Vec::new(), span: self.span }
    }

    fn sequence(&mut self, nodes: &[Node], ctx: &Ctx, out: &mut Vec<Node>) {
        for n in nodes {
            self.node(n, ctx, out);
        }
    }

    fn node(&mut self, node: &Node, ctx: &Ctx, out: &mut Vec<Node>) {
        let simple = !has_collective(self.kernel, std::slice::from_ref(node))
            && !exits(std::slice::from_ref(node), 0);
        if simple {
            out.push(self.guarded(ctx.mask, vec![node.clone()]));
            return;
        }
        match node {
            Node::Code(b) => self.block(*b, ctx, out),
            Node::If { cond, negate, then, otherwise, .. } => {
                self.branch(*cond, *negate, then, otherwise, ctx, out)
            }
            Node::Switch { selector, cases, .. } => self.switch(*selector, cases, ctx, out),
            Node::Loop { body, .. } => self.looped(body, ctx, out),
            Node::Break => {
                // This thread leaves the loop: not in it, and not running until it ends.
                let Some(in_loop) = ctx.in_loop else { return };
                let off = self.reg(RegTy::Pred);
                out.push(self.code(vec![
                    not(off, ctx.mask),
                    and(in_loop, in_loop, off),
                    mov_pred(ctx.mask, false),
                ]));
            }
            Node::Continue => out.push(self.code(vec![mov_pred(ctx.mask, false)])),
            Node::Return => {
                let off = self.reg(RegTy::Pred);
                let mut insts = vec![not(off, ctx.mask), and(ctx.alive, ctx.alive, off)];
                if let Some(in_loop) = ctx.in_loop {
                    insts.push(and(in_loop, in_loop, off));
                }
                insts.push(mov_pred(ctx.mask, false));
                out.push(self.code(insts));
            }
        }
    }

    /// A block with collectives: split at the barriers, which every thread runs.
    fn block(&mut self, b: crate::ir::BlockId, ctx: &Ctx, out: &mut Vec<Node>) {
        let insts = self.kernel.blocks[b.index()].insts.clone();
        let mut run = Vec::new();
        for inst in insts {
            match inst.kind {
                InstKind::WarpBarrier { publish } => {
                    if !run.is_empty() {
                        let n = self.code(std::mem::take(&mut run));
                        out.push(self.guarded(ctx.mask, vec![n]));
                    }
                    // An inactive thread publishes 0.
                    let publish = match publish {
                        Some(value) => {
                            let v = self.reg(RegTy::Int(32));
                            out.push(self.code(vec![InstKind::Select {
                                ty: OpTy::U(32),
                                dst: v,
                                a: value,
                                b: Value::Imm(0),
                                cond: ctx.mask,
                                negate: false,
                            }]));
                            Some(Value::Reg(v))
                        }
                        None => None,
                    };
                    out.push(self.code(vec![InstKind::WarpBarrier { publish }]));
                }
                InstKind::Barrier => {
                    if !run.is_empty() {
                        let n = self.code(std::mem::take(&mut run));
                        out.push(self.guarded(ctx.mask, vec![n]));
                    }
                    out.push(self.code(vec![InstKind::Barrier]));
                }
                kind => run.push(kind),
            }
        }
        if !run.is_empty() {
            let n = self.code(run);
            out.push(self.guarded(ctx.mask, vec![n]));
        }
    }

    /// `if c {then} else {otherwise}` under the mask.
    fn branch(
        &mut self,
        cond: RegId,
        negate: bool,
        then: &[Node],
        otherwise: &[Node],
        ctx: &Ctx,
        out: &mut Vec<Node>,
    ) {
        let entry = self.reg(RegTy::Pred);
        let after_then = self.reg(RegTy::Pred);
        let (c, not_c) = (self.reg(RegTy::Pred), self.reg(RegTy::Pred));
        let (first, second) = if negate { (not_c, c) } else { (c, not_c) };
        out.push(self.code(vec![
            InstKind::Mov { ty: OpTy::Pred, dst: entry, src: Value::Reg(ctx.mask) },
            InstKind::Mov { ty: OpTy::Pred, dst: c, src: Value::Reg(cond) },
            not(not_c, cond),
            and(ctx.mask, entry, first),
        ]));
        self.sequence(then, ctx, out);
        out.push(self.code(vec![
            InstKind::Mov { ty: OpTy::Pred, dst: after_then, src: Value::Reg(ctx.mask) },
            and(ctx.mask, entry, second),
        ]));
        self.sequence(otherwise, ctx, out);
        // Running on: whoever is still running at the end of the arm it took.
        out.push(self.code(vec![or(ctx.mask, ctx.mask, after_then)]));
    }

    /// A `switch` as one predicated arm per case, the default last. The selector is
    /// read once, before the arms, as a switch reads it: an arm may set the register
    /// (a dispatcher's selector, a scheduled kernel's resume point).
    fn switch(&mut self, selector: RegId, cases: &[SwitchCase], ctx: &Ctx, out: &mut Vec<Node>) {
        let entry = self.reg(RegTy::Pred);
        let running = self.reg(RegTy::Pred);
        let unmatched = self.reg(RegTy::Pred);
        let chosen = self.reg(RegTy::Int(32));
        out.push(self.code(vec![
            InstKind::Mov { ty: OpTy::Pred, dst: entry, src: Value::Reg(ctx.mask) },
            mov_pred(running, false),
            mov_pred(unmatched, true),
            InstKind::Mov { ty: OpTy::U(32), dst: chosen, src: Value::Reg(selector) },
        ]));
        let selector = chosen;
        let ordered =
            cases.iter().filter(|c| !c.is_default).chain(cases.iter().filter(|c| c.is_default));
        for case in ordered {
            let hit = self.reg(RegTy::Pred);
            let mut insts = Vec::new();
            if case.is_default {
                insts.push(InstKind::Mov { ty: OpTy::Pred, dst: hit, src: Value::Reg(unmatched) });
            } else {
                insts.push(mov_pred(hit, false));
                for &v in &case.values {
                    let eq = self.reg(RegTy::Pred);
                    insts.push(InstKind::Setp {
                        cmp: CmpOp::Eq,
                        ty: OpTy::U(32),
                        ftz: false,
                        dst: Some(eq),
                        dst_not: None,
                        lhs: Value::Reg(selector),
                        rhs: Value::Imm(u64::from(v)),
                        combine: None,
                    });
                    insts.push(or(hit, hit, eq));
                }
                let miss = self.reg(RegTy::Pred);
                insts.push(not(miss, hit));
                insts.push(and(unmatched, unmatched, miss));
            }
            insts.push(and(ctx.mask, entry, hit));
            out.push(self.code(insts));
            self.sequence(&case.body, ctx, out);
            out.push(self.code(vec![or(running, running, ctx.mask)]));
        }
        out.push(self.code(vec![InstKind::Mov {
            ty: OpTy::Pred,
            dst: ctx.mask,
            src: Value::Reg(running),
        }]));
    }

    /// A loop that runs while any thread of the block still iterates.
    fn looped(&mut self, body: &[Node], ctx: &Ctx, out: &mut Vec<Node>) {
        let in_loop = self.reg(RegTy::Pred);
        let entry = self.reg(RegTy::Pred);
        out.push(self.code(vec![
            InstKind::Mov { ty: OpTy::Pred, dst: in_loop, src: Value::Reg(ctx.mask) },
            InstKind::Mov { ty: OpTy::Pred, dst: entry, src: Value::Reg(ctx.mask) },
        ]));
        let inner = Ctx { mask: ctx.mask, alive: ctx.alive, in_loop: Some(in_loop) };
        let mut lbody = vec![self.code(vec![InstKind::Mov {
            ty: OpTy::Pred,
            dst: ctx.mask,
            src: Value::Reg(in_loop),
        }])];
        let any = self.block_any(in_loop, &mut lbody);
        lbody.push(Node::If {
            cond: any,
            negate: true,
            then: vec![Node::Break],
            otherwise: Vec::new(),
            span: self.span,
        });
        self.sequence(body, &inner, &mut lbody);
        out.push(Node::Loop { body: lbody, span: self.span });
        // After the loop: the threads that were running before it and did not return.
        out.push(self.code(vec![and(ctx.mask, entry, ctx.alive)]));
    }

    /// Whether `p` holds for some thread of the block: thread 0 clears the vote word,
    /// barrier, every thread with `p` sets it, barrier, all read it, barrier.
    fn block_any(&mut self, p: RegId, out: &mut Vec<Node>) -> RegId {
        let u32t = OpTy::U(32);
        let word = Address { base: None, offset: i64::from(self.vote) };
        let mut tid = Vec::new();
        let mut insts = Vec::new();
        for d in [Dim::X, Dim::Y, Dim::Z] {
            let r = self.reg(RegTy::Int(32));
            insts.push(InstKind::Special { dst: r, reg: SpecialReg::Tid(d) });
            tid.push(r);
        }
        let bits = self.reg(RegTy::Int(32));
        let bits2 = self.reg(RegTy::Int(32));
        insts.push(InstKind::Binary {
            op: crate::ir::BinaryOp::Or,
            ty: u32t,
            mode: Default::default(),
            dst: bits,
            lhs: Value::Reg(tid[0]),
            rhs: Value::Reg(tid[1]),
        });
        insts.push(InstKind::Binary {
            op: crate::ir::BinaryOp::Or,
            ty: u32t,
            mode: Default::default(),
            dst: bits2,
            lhs: Value::Reg(bits),
            rhs: Value::Reg(tid[2]),
        });
        let first = self.reg(RegTy::Pred);
        insts.push(InstKind::Setp {
            cmp: CmpOp::Eq,
            ty: u32t,
            ftz: false,
            dst: Some(first),
            dst_not: None,
            lhs: Value::Reg(bits2),
            rhs: Value::Imm(0),
            combine: None,
        });
        out.push(self.code(insts));
        let clear = self.code(vec![InstKind::Store {
            space: Space::Shared,
            ty: u32t,
            srcs: vec![Value::Imm(0)],
            addr: word,
        }]);
        out.push(self.guarded(first, vec![clear]));
        out.push(self.code(vec![InstKind::Barrier]));
        let set = self.code(vec![InstKind::Store {
            space: Space::Shared,
            ty: u32t,
            srcs: vec![Value::Imm(1)],
            addr: word,
        }]);
        out.push(self.guarded(p, vec![set]));
        out.push(self.code(vec![InstKind::Barrier]));
        let v = self.reg(RegTy::Int(32));
        let any = self.reg(RegTy::Pred);
        out.push(self.code(vec![
            InstKind::Load { space: Space::Shared, ty: u32t, dsts: vec![Some(v)], addr: word },
            InstKind::Barrier,
            InstKind::Setp {
                cmp: CmpOp::Ne,
                ty: u32t,
                ftz: false,
                dst: Some(any),
                dst_not: None,
                lhs: Value::Reg(v),
                rhs: Value::Imm(0),
                combine: None,
            },
        ]));
        any
    }
}
