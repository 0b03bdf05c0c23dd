//! The IR verifier: checks the invariants stated in [`crate::ir`] that later passes
//! rely on. Runs after semantic analysis in debug builds and in tests; a failure is a
//! bug in ptxvk, reported with the offending instruction's span.

use ptxvk_frontend::Diagnostic;

use crate::ir::*;

/// Checks that every register and block handle is in range, that registers written as
/// predicates are predicates, and that the entry block exists.
pub fn run(k: &Kernel) -> Result<(), Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let nregs = k.regs.len();
    let nblocks = k.blocks.len();
    let bug = |span, what: String| Diagnostic::internal(span, format!("IR verifier: {what}"));
    if k.entry.index() >= nblocks {
        errors.push(bug(k.span, "entry block out of range".into()));
    }
    for b in &k.blocks {
        for inst in &b.insts {
            let mut regs = Vec::new();
            inst_regs(&inst.kind, &mut regs);
            for r in regs {
                if r.index() >= nregs {
                    errors.push(bug(inst.span, format!("register %{} out of range", r.0)));
                }
            }
            if let InstKind::Setp { dst, dst_not, .. } = &inst.kind {
                for d in dst.iter().chain(dst_not.iter()) {
                    if k.regs.get(d.index()).is_some_and(|r| r.ty != RegTy::Pred) {
                        errors.push(bug(inst.span, "setp writes a non-predicate".into()));
                    }
                }
            }
        }
        for s in b.term.successors() {
            if s.index() >= nblocks {
                errors.push(bug(b.term_span, "branch target out of range".into()));
            }
        }
        match b.term {
            Terminator::Branch { cond, .. }
                if k.regs.get(cond.index()).map(|r| r.ty) != Some(RegTy::Pred) =>
            {
                errors.push(bug(b.term_span, "branch on a non-predicate".into()));
            }
            Terminator::Switch { selector, .. }
                if k.regs.get(selector.index()).map(|r| r.ty) != Some(RegTy::Int(32)) =>
            {
                errors.push(bug(b.term_span, "switch on a register that is not 32-bit".into()));
            }
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Every register an instruction mentions.
pub fn inst_regs(kind: &InstKind, out: &mut Vec<RegId>) {
    let mut uses = Vec::new();
    inst_defs_uses(kind, out, &mut uses);
    out.append(&mut uses);
}

/// The registers an instruction writes (`defs`) and reads (`uses`).
pub fn inst_defs_uses(kind: &InstKind, defs: &mut Vec<RegId>, uses: &mut Vec<RegId>) {
    let v = |x: &Value, uses: &mut Vec<RegId>| {
        if let Value::Reg(r) = x {
            uses.push(*r)
        }
    };
    match kind {
        InstKind::Mov { dst, src, .. } => {
            defs.push(*dst);
            v(src, uses);
        }
        InstKind::Pack { dst, srcs, .. } => {
            defs.push(*dst);
            srcs.iter().for_each(|s| v(s, uses));
        }
        InstKind::Unpack { dsts, src, .. } => {
            defs.extend(dsts.iter().flatten());
            v(src, uses);
        }
        InstKind::Special { dst, .. } => defs.push(*dst),
        InstKind::Unary { dst, src, .. } => {
            defs.push(*dst);
            v(src, uses);
        }
        InstKind::Binary { dst, lhs, rhs, .. } => {
            defs.push(*dst);
            v(lhs, uses);
            v(rhs, uses);
        }
        InstKind::Bfe { dst, a, pos: b, len: c, .. }
        | InstKind::RoundToOdd { dst, a, b, c, .. }
        | InstKind::Mad { dst, a, b, c, .. }
        | InstKind::Fma { dst, a, b, c, .. } => {
            defs.push(*dst);
            v(a, uses);
            v(b, uses);
            v(c, uses);
        }
        InstKind::Bfi { dst, a, b, pos, len, .. } => {
            defs.push(*dst);
            [a, b, pos, len].into_iter().for_each(|x| v(x, uses));
        }
        InstKind::Setp { dst, dst_not, lhs, rhs, combine, .. } => {
            defs.extend(dst.iter().chain(dst_not.iter()));
            v(lhs, uses);
            v(rhs, uses);
            if let Some((_, r, _)) = combine {
                uses.push(*r);
            }
        }
        InstKind::Select { dst, a, b, cond, .. } => {
            defs.push(*dst);
            v(a, uses);
            v(b, uses);
            uses.push(*cond);
        }
        InstKind::PredLogic { dst, lhs, rhs, .. } => {
            defs.push(*dst);
            uses.extend([*lhs, *rhs]);
        }
        InstKind::PredNot { dst, src } => {
            defs.push(*dst);
            uses.push(*src);
        }
        InstKind::Convert { dst, src, .. }
        | InstKind::Narrow { dst, src, .. }
        | InstKind::IntToFloat { dst, src, .. }
        | InstKind::Widen { dst, src, .. } => {
            defs.push(*dst);
            v(src, uses);
        }
        InstKind::Load { dsts, addr, .. } => {
            defs.extend(dsts.iter().flatten());
            uses.extend(addr.base);
        }
        InstKind::Store { srcs, addr, .. } => {
            srcs.iter().for_each(|s| v(s, uses));
            uses.extend(addr.base);
        }
        InstKind::Atomic { dst, addr, src, cmp, .. } => {
            defs.extend(dst.iter());
            uses.extend(addr.base);
            v(src, uses);
            v(cmp, uses);
        }
        InstKind::Subgroup { dst, value, lane, .. } => {
            defs.push(*dst);
            v(value, uses);
            v(lane, uses);
        }
        InstKind::WarpBarrier { publish } => {
            if let Some(value) = publish {
                v(value, uses);
            }
        }
        InstKind::Barrier | InstKind::Fence { .. } => {}
    }
}
