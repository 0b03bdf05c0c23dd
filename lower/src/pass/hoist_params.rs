//! Pass: kernel parameter loads move to the start of the kernel's entry block.
//!
//! Compilers load a parameter where they use it: clang puts `ld.param` inside divergent
//! branches and loops, so a thread may load the same parameter many times, and the
//! loads sit in control flow that emulated warps must predicate. The parameter block
//! is read-only in a kernel (semantic analysis rejects `st.param` there) and every
//! offset in it is readable, so a load can run once, first, for every thread.
//!
//! Pre: CFG IR; `Param` loads have constant addresses (`Address { base: None, .. }`).
//!
//! Post: no block but the entry has a `Param` load. Each load elsewhere is replaced by
//! moves from registers that one load at the start of the entry block fills, one per
//! distinct offset, type and destination register types; the entry block's own loads
//! stay where they were.

use ptxvk_frontend::Diagnostic;

use super::Target;
use crate::ir::{Address, Inst, InstKind, Kernel, OpTy, RegId, RegTy, Space, Value};

/// What a hoisted load is shared by: offset, element type, destination register types.
type Key = (i64, OpTy, Vec<Option<RegTy>>);

/// Whether `kind` is a parameter load with a constant address, the loads this pass
/// moves.
pub fn is_param_load(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Load { space: Space::Param, addr: Address { base: None, .. }, .. })
}

/// Moves every parameter load out of the blocks but the entry, as the module doc says.
pub fn run(k: &mut Kernel, _target: &Target) -> Result<(), Diagnostic> {
    let entry = k.entry.index();
    let mut hoisted: Vec<(Key, Vec<Option<RegId>>)> = Vec::new();
    let mut at_entry: Vec<Inst> = Vec::new();
    for b in 0..k.blocks.len() {
        if b == entry || !k.blocks[b].insts.iter().any(|i| is_param_load(&i.kind)) {
            continue;
        }
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            let InstKind::Load { space: Space::Param, ty, dsts, addr } = &inst.kind else {
                out.push(inst);
                continue;
            };
            if addr.base.is_some() {
                out.push(inst);
                continue;
            }
            let key: Key =
                (addr.offset, *ty, dsts.iter().map(|d| d.map(|r| k.reg(r).ty)).collect());
            let temps = match hoisted.iter().find(|(k2, _)| *k2 == key) {
                Some((_, temps)) => temps.clone(),
                None => {
                    let temps: Vec<Option<RegId>> = key
                        .2
                        .iter()
                        .map(|t| t.map(|t| crate::ir::new_temp(&mut k.regs, t, inst.span)))
                        .collect();
                    let kind = InstKind::Load {
                        space: Space::Param,
                        ty: *ty,
                        dsts: temps.clone(),
                        addr: *addr,
                    };
                    at_entry.push(Inst { kind, span: inst.span });
                    hoisted.push((key, temps.clone()));
                    temps
                }
            };
            for (d, t) in dsts.iter().zip(&temps) {
                if let (Some(d), Some(t)) = (*d, *t) {
                    let ty = op_ty(k.reg(d).ty);
                    let kind = InstKind::Mov { ty, dst: d, src: Value::Reg(t) };
                    out.push(Inst { kind, span: inst.span });
                }
            }
        }
        k.blocks[b].insts = out;
    }
    let entry_insts = &mut k.blocks[entry].insts;
    entry_insts.splice(0..0, at_entry);
    Ok(())
}

/// The operation type of a whole register of type `ty`.
pub(super) fn op_ty(ty: RegTy) -> OpTy {
    match ty {
        RegTy::Pred => OpTy::Pred,
        RegTy::Int(b) => OpTy::U(b),
        RegTy::Float(b) => OpTy::F(b),
    }
}
