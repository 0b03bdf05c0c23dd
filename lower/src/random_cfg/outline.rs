//! Random calls: a kernel's straight-line blocks moved into functions that it calls,
//! to fuzz `pass::inline` (and everything after it) against the kernel as it was.

use std::collections::BTreeMap;

use super::Rng;
use crate::ir::*;
use crate::pass::copy_body::for_each_reg;

/// `k` with some of its blocks' instructions (about one in two, chosen by `seed`) moved
/// into functions of their own: each such block becomes one call, whose arguments are
/// the registers the instructions mention and whose results are those they write. A
/// function moves the second half of its instructions into a function of its own in
/// turn about one time in two, so calls nest. Blocks with warp collectives, barriers or
/// sync points stay (the interpreter does not run collectives in called functions).
pub fn outline(k: &Kernel, seed: u64) -> Kernel {
    let mut rng = Rng(seed ^ 0x0c41_1ed0_f00d_cafe);
    let mut out = k.clone();
    for b in 0..out.blocks.len() {
        let insts = &out.blocks[b].insts;
        if insts.is_empty() || insts.iter().any(|i| waits(&i.kind)) || rng.below(2) == 0 {
            continue;
        }
        let insts = std::mem::take(&mut out.blocks[b].insts);
        let span = out.blocks[b].span;
        let call = function(&out.regs, &insts, &mut out.functions, &mut rng, span);
        out.blocks[b].insts = vec![Inst { kind: call, span }];
    }
    out
}

/// Whether `kind` waits for other threads or exchanges with them.
pub(super) fn waits(kind: &InstKind) -> bool {
    matches!(
        kind,
        InstKind::Barrier
            | InstKind::WarpBarrier { .. }
            | InstKind::WarpPublish { .. }
            | InstKind::WarpRead { .. }
            | InstKind::WarpBallot { .. }
            | InstKind::WarpSync
            | InstKind::Subgroup { .. }
            | InstKind::SyncPoint { .. }
    )
}

/// A new function of `functions` that runs `insts` (whose registers are `regs`), and
/// the call that stands for them: every register they mention is a parameter, every
/// one they write also a return.
pub(super) fn function(
    regs: &[RegInfo],
    insts: &[Inst],
    functions: &mut Vec<Function>,
    rng: &mut Rng,
    span: ptxvk_frontend::Span,
) -> InstKind {
    let mut own: BTreeMap<RegId, RegId> = BTreeMap::new();
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    let mut body: Vec<Inst> = insts
        .iter()
        .map(|inst| {
            crate::verify::inst_defs_uses(&inst.kind, &mut defs, &mut uses);
            let mut kind = inst.kind.clone();
            for_each_reg(&mut kind, &mut |r: &mut RegId| {
                let next = RegId(own.len() as u32);
                *r = *own.entry(*r).or_insert(next);
            });
            Inst { kind, span: inst.span }
        })
        .collect();
    let mut mapped: Vec<(RegId, RegId)> = own.into_iter().collect();
    mapped.sort_by_key(|&(_, mine)| mine);
    let mut f = Function::new(format!("outlined{}", functions.len()), span);
    f.regs = mapped.iter().map(|&(r, _)| regs[r.index()].clone()).collect();
    let (mut args, mut results) = (Vec::new(), Vec::new());
    for &(r, mine) in &mapped {
        let ty = match regs[r.index()].ty {
            RegTy::Pred => OpTy::Pred,
            RegTy::Int(w) => OpTy::U(w),
            RegTy::Float(w) => OpTy::F(w),
        };
        f.params.push((mine, ty));
        args.push(Value::Reg(r));
        if defs.contains(&r) {
            f.returns.push((mine, ty));
            results.push(r);
        }
    }
    // The second half, one level down.
    if body.len() >= 2 && rng.below(2) == 0 {
        let tail = body.split_off(body.len() / 2);
        let call = function(&f.regs, &tail, functions, rng, span);
        body.push(Inst { kind: call, span });
    }
    f.blocks.push(Block {
        label: None,
        span,
        insts: body,
        term: Terminator::Return,
        term_span: span,
    });
    let callee = FunctionId(functions.len() as u32);
    functions.push(f);
    InstKind::Call { callee, args, results }
}
