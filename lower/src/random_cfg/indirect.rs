//! Random indirect calls: [`outline`](super::outline())'s functions called through a
//! function address, to fuzz `pass::expand_indirect_calls` (and `pass::inline` after
//! it) against the interpreter's model of [`InstKind::CallIndirect`].

use ptxvk_frontend::Span;

use super::outline::{function, waits};
use super::Rng;
use crate::ir::*;

/// `k` with about one in two of its first `sites` blocks' instructions moved into a
/// function (as [`outline`](super::outline()) does) that the block calls indirectly:
/// one [`InstKind::CallIndirect`] whose arms are the function, a decoy of the same
/// signature that adds a constant to each integer it returns, and (in a kernel without
/// warp collectives, barriers or sync points) a function that ends the thread, in a
/// random order, sometimes with one more arm at an address already taken (which the
/// first arm wins). The address comes from a counter of the block's visits and the
/// thread (its warp, with the block, in a kernel with warp collectives, so that every
/// lane of a warp calls the same function), among four consecutive ones: the arms' and
/// one or two that no arm has (no call: the results keep their values), and every
/// visit the next one, so that loops still end. `sites` is to cover the blocks of
/// [`program`](super::program())'s control flow, not its preamble and barrier.
pub fn outline_indirect(k: &Kernel, seed: u64, sites: usize) -> Kernel {
    let mut rng = Rng(seed ^ 0x1d1e_c7ca_11ed_0042);
    let mut out = k.clone();
    let collective = k.all_insts().any(|i| waits(&i.kind));
    let mut init = Vec::new();
    for b in 0..sites.min(out.blocks.len()) {
        let insts = &out.blocks[b].insts;
        if BlockId(b as u32) == out.entry
            || insts.is_empty()
            || insts.iter().any(|i| waits(&i.kind))
            || rng.below(2) == 0
        {
            continue;
        }
        let insts = std::mem::take(&mut out.blocks[b].insts);
        let span = out.blocks[b].span;
        let InstKind::Call { callee, args, results } =
            function(&out.regs, &insts, &mut out.functions, &mut rng, span)
        else {
            continue;
        };
        let seen = reg(&mut out, &format!("%visits{b}"), RegTy::Int(32));
        init.push(Inst { kind: mov(OpTy::U(32), seen, 0), span });
        let ends = !collective && rng.below(2) == 0;
        let site = Site { callee, args, results, seen, span, ends, collective };
        site.build(&mut out, b, &mut rng);
    }
    let entry = out.entry.index();
    init.append(&mut out.blocks[entry].insts);
    out.blocks[entry].insts = init;
    out
}

/// One indirect call site: the outlined function's call it replaces.
struct Site {
    callee: FunctionId,
    args: Vec<Value>,
    results: Vec<RegId>,
    /// The counter of the block's visits.
    seen: RegId,
    span: Span,
    /// Whether one arm ends the thread.
    ends: bool,
    /// Whether the address is to be the same in every lane of a warp.
    collective: bool,
}

impl Site {
    /// Makes block `b` of `k` the indirect call, its decoy and ending functions.
    fn build(self, k: &mut Kernel, b: usize, rng: &mut Rng) {
        let span = self.span;
        let f = &k.functions[self.callee.index()];
        // The outlined function is the last one: the others get the next addresses.
        let base = FUNCTION_WINDOW + 1 + self.callee.0 as u64;
        let mut decoy = same_signature(f, "decoy");
        let mut tweaks = Vec::new();
        for (i, &(r, ty)) in f.returns.iter().enumerate() {
            if let OpTy::U(w) = ty {
                let imm = Value::Imm(3 + i as u64);
                let add = bin(BinaryOp::Add, OpTy::U(w), r, Value::Reg(r), imm);
                tweaks.push(Inst { kind: add, span });
            }
        }
        decoy.blocks.push(block(tweaks, Terminator::Return, span));
        let decoy_id = FunctionId(k.functions.len() as u32);
        let mut arms = vec![
            arm(base, self.callee, &self.args, &self.results),
            arm(base + 1, decoy_id, &self.args, &self.results),
        ];
        let flag = self.ends.then(|| reg(k, &format!("%ended{b}"), RegTy::Pred));
        if let Some(flag) = flag {
            let f = &k.functions[self.callee.index()];
            let mut end = same_signature(f, "end");
            let mine = RegId(end.regs.len() as u32);
            end.regs.push(RegInfo { name: "%ends".into(), ty: RegTy::Pred, span });
            end.returns.push((mine, OpTy::Pred));
            end.blocks.push(block(
                vec![Inst { kind: mov(OpTy::Pred, mine, 1), span }],
                Terminator::Return,
                span,
            ));
            let mut results = self.results.clone();
            results.push(flag);
            arms.push(arm(base + 2, FunctionId(decoy_id.0 + 1), &self.args, &results));
            k.functions.push(decoy);
            k.functions.push(end);
        } else {
            k.functions.push(decoy);
        }
        for i in (1..arms.len()).rev() {
            arms.swap(i, rng.below(i as u64 + 1) as usize);
        }
        // One more arm at a taken address: the first arm there is the call.
        if rng.below(2) == 0 {
            let (at, callee) = match rng.below(2) {
                0 => (base, decoy_id),
                _ => (base + 1, self.callee),
            };
            arms.push(arm(at, callee, &self.args, &self.results));
        }
        let insts = self.target(k, base, flag, arms);
        k.blocks[b].insts = insts;
        if let Some(flag) = flag {
            let (rest, end) = (BlockId(k.blocks.len() as u32), BlockId(k.blocks.len() as u32 + 1));
            let term = std::mem::replace(
                &mut k.blocks[b].term,
                Terminator::Branch { cond: flag, negate: false, if_true: end, if_false: rest },
            );
            k.blocks.push(block(Vec::new(), term, span));
            k.blocks.push(block(Vec::new(), Terminator::Return, span));
        }
    }

    /// The instructions of the call: its address (`base` plus the thread's, or warp's,
    /// and the visit's choice among four), the ending flag cleared, the call.
    fn target(
        &self,
        k: &mut Kernel,
        base: u64,
        flag: Option<RegId>,
        arms: Vec<CallArm>,
    ) -> Vec<Inst> {
        let u32t = OpTy::U(32);
        let val = Value::Reg;
        // Named after the visit counter's register: unique in the kernel.
        let b = self.seen.0;
        let pick = reg(k, &format!("%pick{b}"), RegTy::Int(32));
        let target = reg(k, &format!("%target{b}"), RegTy::Int(64));
        let mut v = vec![InstKind::Special { dst: pick, reg: SpecialReg::Tid(Dim::X) }];
        if self.collective {
            let cta = reg(k, &format!("%cta{b}"), RegTy::Int(32));
            v.push(bin(BinaryOp::Shr, u32t, pick, val(pick), Value::Imm(5)));
            v.push(InstKind::Special { dst: cta, reg: SpecialReg::Ctaid(Dim::X) });
            v.push(bin(BinaryOp::Add, u32t, pick, val(pick), val(cta)));
        }
        v.extend([
            bin(BinaryOp::Add, u32t, pick, val(pick), val(self.seen)),
            bin(BinaryOp::And, u32t, pick, val(pick), Value::Imm(3)),
            bin(BinaryOp::Add, u32t, self.seen, val(self.seen), Value::Imm(1)),
            bin(BinaryOp::MulWide, u32t, target, val(pick), Value::Imm(1)),
            bin(BinaryOp::Add, OpTy::U(64), target, val(target), Value::Imm(base)),
        ]);
        if let Some(flag) = flag {
            v.push(mov(OpTy::Pred, flag, 0));
        }
        v.push(InstKind::CallIndirect { target: val(target), arms });
        v.into_iter().map(|kind| Inst { kind, span: self.span }).collect()
    }
}

/// A function without blocks whose registers, parameters and returns are `f`'s.
fn same_signature(f: &Function, suffix: &str) -> Function {
    let mut out = Function::new(format!("{}_{suffix}", f.name), f.span);
    (out.regs, out.params, out.returns) = (f.regs.clone(), f.params.clone(), f.returns.clone());
    out
}

/// A new register of `k`.
fn reg(k: &mut Kernel, name: &str, ty: RegTy) -> RegId {
    k.regs.push(RegInfo { name: name.into(), ty, span: Span::default() });
    RegId(k.regs.len() as u32 - 1)
}

fn arm(address: u64, callee: FunctionId, args: &[Value], results: &[RegId]) -> CallArm {
    CallArm { address, callee, args: args.to_vec(), results: results.to_vec() }
}

fn mov(ty: OpTy, dst: RegId, imm: u64) -> InstKind {
    InstKind::Mov { ty, dst, src: Value::Imm(imm) }
}

fn bin(op: BinaryOp, ty: OpTy, dst: RegId, lhs: Value, rhs: Value) -> InstKind {
    InstKind::Binary { op, ty, mode: FloatMode::default(), dst, lhs, rhs }
}

fn block(insts: Vec<Inst>, term: Terminator, span: Span) -> Block {
    Block { label: None, span, insts, term, term_span: span }
}
