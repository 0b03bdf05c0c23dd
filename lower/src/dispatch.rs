//! Dispatchers: the one CFG rewrite the structurizer's passes share.
//!
//! A dispatcher is a new block that switches on a new 32-bit selector register. Routing
//! the edges into a set of targets through it gives those targets a single entry: each
//! routed predecessor sets the selector to the index of the target it was going to
//! (right before its terminator, where the branch condition is final) and jumps to the
//! dispatcher instead. Control reaches the same blocks in the same order; only the
//! dispatcher's switch runs in between. This is how irreducible cycles get one header,
//! loops get one exit, and shared code gets one entry, without duplicating any code.

use ptxvk_frontend::Span;

use crate::ir::*;

/// Adds a 32-bit selector register.
fn selector(k: &mut Kernel, span: Span) -> RegId {
    let id = RegId(k.regs.len() as u32);
    k.regs.push(RegInfo { name: format!("$sel{}", id.0), ty: RegTy::Int(32), span });
    id
}

/// Routes every edge from a block of `from` into one of `targets` through a new
/// dispatcher block, and returns it. `targets` must be distinct; the dispatcher's
/// switch sends selector value `i` to `targets[i]`.
pub fn insert(k: &mut Kernel, targets: &[BlockId], from: &[usize]) -> BlockId {
    let span = targets.first().map_or(k.span, |t| k.blocks[t.index()].span);
    let sel = selector(k, span);
    let d = BlockId(k.blocks.len() as u32);
    let cases: Vec<(u32, BlockId)> =
        targets.iter().enumerate().map(|(i, t)| (i as u32, *t)).collect();
    let default = targets.first().copied().unwrap_or(k.entry);
    k.blocks.push(Block {
        label: None,
        span,
        insts: Vec::new(),
        term: Terminator::Switch { selector: sel, cases, default },
        term_span: span,
    });
    for &u in from {
        if u < d.index() {
            route(k, BlockId(u as u32), targets, d, sel);
        }
    }
    d
}

/// Makes block `u` set `sel` to the index (in `targets`) of the target it takes, and
/// jump to `via` instead of to any of `targets`.
fn route(k: &mut Kernel, u: BlockId, targets: &[BlockId], via: BlockId, sel: RegId) {
    let index = |b: BlockId| targets.iter().position(|t| *t == b).map(|i| i as u64);
    let block = &k.blocks[u.index()];
    if !block.term.successors().iter().any(|t| index(*t).is_some()) {
        return;
    }
    let span = block.term_span;
    let mov = |v: u64| Inst {
        kind: InstKind::Mov { ty: OpTy::U(32), dst: sel, src: Value::Imm(v) },
        span,
    };
    match block.term.clone() {
        Terminator::Return => {}
        Terminator::Jump(t) => {
            if let Some(i) = index(t) {
                let b = &mut k.blocks[u.index()];
                b.insts.push(mov(i));
                b.term = Terminator::Jump(via);
            }
        }
        Terminator::Branch { cond, negate, if_true, if_false } => {
            let (it, jf) = (index(if_true), index(if_false));
            let b = &mut k.blocks[u.index()];
            match (it, jf) {
                (Some(i), Some(j)) if i == j => {
                    b.insts.push(mov(i));
                    b.term = Terminator::Jump(via);
                }
                (Some(i), Some(j)) => {
                    b.insts.push(Inst {
                        kind: InstKind::Select {
                            ty: OpTy::U(32),
                            dst: sel,
                            a: Value::Imm(i),
                            b: Value::Imm(j),
                            cond,
                            negate,
                        },
                        span,
                    });
                    b.term = Terminator::Jump(via);
                }
                // Setting the selector on the other path too is harmless: it is only
                // read by the dispatcher, and every routed edge sets it first.
                (Some(i), None) => {
                    b.insts.push(mov(i));
                    b.term = Terminator::Branch { cond, negate, if_true: via, if_false };
                }
                (None, Some(j)) => {
                    b.insts.push(mov(j));
                    b.term = Terminator::Branch { cond, negate, if_true, if_false: via };
                }
                (None, None) => {}
            }
        }
        Terminator::Switch { selector: s, cases, default } => {
            // sel = index of the taken target: start from the default's, then let each
            // routed case override it when the selector equals its value.
            let p = RegId(k.regs.len() as u32);
            k.regs.push(RegInfo { name: format!("$selp{}", p.0), ty: RegTy::Pred, span });
            let mut insts = vec![mov(index(default).unwrap_or(0))];
            for (v, t) in &cases {
                if let Some(i) = index(*t) {
                    insts.push(Inst {
                        kind: InstKind::Setp {
                            cmp: CmpOp::Eq,
                            ty: OpTy::U(32),
                            ftz: false,
                            dst: Some(p),
                            dst_not: None,
                            lhs: Value::Reg(s),
                            rhs: Value::Imm(*v as u64),
                            combine: None,
                        },
                        span,
                    });
                    insts.push(Inst {
                        kind: InstKind::Select {
                            ty: OpTy::U(32),
                            dst: sel,
                            a: Value::Imm(i),
                            b: Value::Reg(sel),
                            cond: p,
                            negate: false,
                        },
                        span,
                    });
                }
            }
            let b = &mut k.blocks[u.index()];
            b.insts.extend(insts);
            for t in b.term.targets_mut() {
                if index(*t).is_some() {
                    *t = via;
                }
            }
        }
    }
}
