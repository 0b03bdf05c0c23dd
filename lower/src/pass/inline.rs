//! Inlining: every [`InstKind::Call`] of a kernel is replaced by a copy of its callee's
//! body, so that every later pass, the structurizer and the emitter see one body per
//! kernel (SPIR-V could call functions, but PTX's calls carry their frames in the
//! local window and the passes after this one work on one CFG).
//!
//! A call at instruction `i` of block `b` becomes:
//!
//! * `b` keeps the instructions before the call, then copies each argument into a fresh
//!   register of the kernel that stands for the callee's parameter (a `mov` at the
//!   parameter's type), and jumps to the copy of the callee's entry block;
//! * the callee's blocks are copied after the kernel's last block, every register of
//!   the callee renamed to a fresh register of the kernel (with the callee's type, span
//!   and name, but a temporary `$tN` named by its new id), every block renamed to its
//!   copy; each `return` becomes a jump to the continuation;
//! * the continuation, a new block, starts by copying each return register into the
//!   call's result register (a `mov` at the return type), then has the instructions
//!   after the call and `b`'s old terminator.
//!
//! A parameter the callee never writes and whose argument is an immediate is also
//! folded into the addresses based on it (`[%p+4]` becomes `[20]` for `%p = 16`): this
//! is how a `.param` parameter, passed as the local-window address of the caller's
//! variable, gets back the constant address the caller's variable has
//! (`sema::calls`). Copies may contain calls (the callee's own, already a copy): the
//! scan goes on through them, so calls nested at any depth are inlined.
//!
//! A call copies only what it can run: an immediate argument of a `.reg` parameter, or
//! an immediate the caller stored in the `.param` variable a folded parameter addresses
//! just before the call (nothing between may write it), is the value of the callee's
//! entry-block read of it; integer `setp.eq`/`.ne` of such values and the entry block's
//! branch on one are decided, and only the blocks reachable from the entry (and the
//! registers they name) are copied (`Specialized`). numba's runtime functions are
//! called mostly with null pointers, on which they return at once.
//!
//! A call of a function on a call cycle (recursion, which cannot be inlined) is replaced
//! by `pass::recursion`'s machine, a copy of the cycle's functions over an explicit
//! stack; its calls out of the cycle are then inlined as any other. So this ends.
//!
//! Calls of emulation routines (`Function::routine`) stay, and the routines stay the
//! kernel's functions, renumbered in order.
//!
//! Pre: the kernel verifies and has no indirect call (`pass::expand_indirect_calls`
//! ran). Post: no `Call` of a device function is left and
//! [`Kernel::functions`] holds only routines; the kernel computes what it computed, with the same spans on the callee's
//! instructions (`pass::check` and the memory-instruction lists find them by span).

use std::collections::BTreeMap;

use ptxvk_frontend::{Diagnostic, Span};

use super::copy_body::{copy_blocks, Specialized};
use super::recursion;
use crate::ir::{
    Address, Block, BlockId, CmpOp, Function, FunctionId, Inst, InstKind, Kernel, OpTy, RegId,
    Space, Terminator, Value,
};
use crate::verify::inst_defs_uses;

/// Inlining may grow a kernel to at most this many instructions (calls that fan out at
/// every level grow it exponentially).
const MAX_INSTRUCTIONS: usize = 1 << 22;

/// Inlines every call of `k` (module doc).
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    if k.functions.iter().all(|f| f.routine.is_some()) {
        return Ok(());
    }
    let functions = std::mem::take(&mut k.functions);
    let cycle_of = recursion::cycles(&functions);
    let mut total: usize = k.blocks.iter().map(|b| b.insts.len()).sum();
    let mut b = 0;
    while b < k.blocks.len() {
        let found = k.blocks[b].insts.iter().position(|i| match i.kind {
            InstKind::Call { callee, .. } => {
                functions.get(callee.index()).is_none_or(|f| f.routine.is_none())
            }
            _ => false,
        });
        let Some(i) = found else {
            b += 1;
            continue;
        };
        let call = k.blocks[b].insts[i].clone();
        let InstKind::Call { callee, args, results } = call.kind else { continue };
        let Some(f) = functions.get(callee.index()) else {
            return Err(Diagnostic::internal(call.span, format!("a call of fn{}", callee.0)));
        };
        let cycle = cycle_of.get(callee.index()).copied().flatten();
        let copied = functions.iter().enumerate().filter(|(g, _)| match cycle {
            Some(c) => cycle_of[*g] == Some(c),
            None => *g == callee.index(),
        });
        total += copied.flat_map(|(_, g)| &g.blocks).map(|b| b.insts.len() + 2).sum::<usize>();
        if total > MAX_INSTRUCTIONS {
            return Err(Diagnostic::error(
                call.span,
                format!(
                    "calls of `{}` inline into more than {MAX_INSTRUCTIONS} instructions",
                    f.name
                ),
            ));
        }
        let at = (BlockId(b as u32), i);
        match cycle {
            Some(_) => recursion::machine(k, at, &functions, &cycle_of)?,
            None => inline_call(k, at, f, &args, &results, call.span),
        }
        // The block now ends at the call: the scan goes on in the callee's copy and in
        // the continuation, which come after it.
        b += 1;
    }
    keep_routines(k, functions);
    Ok(())
}

/// Keeps the emulation routines of `functions` as the kernel's functions, renumbered,
/// and their calls with them.
fn keep_routines(k: &mut Kernel, functions: Vec<Function>) {
    let mut new_id = vec![None; functions.len()];
    for (i, f) in functions.into_iter().enumerate() {
        if f.routine.is_some() {
            new_id[i] = Some(FunctionId(k.functions.len() as u32));
            k.functions.push(f);
        }
    }
    for inst in k.blocks.iter_mut().flat_map(|b| &mut b.insts) {
        if let InstKind::Call { callee, .. } = &mut inst.kind {
            if let Some(Some(id)) = new_id.get(callee.index()) {
                *callee = *id;
            }
        }
    }
}

/// Replaces the call at instruction `at` of block `b` by a copy of `f`'s body (its
/// arguments and results match `f`'s parameters and returns: the verifier checked).
fn inline_call(
    k: &mut Kernel,
    (b, at): (BlockId, usize),
    f: &Function,
    args: &[Value],
    results: &[RegId],
    span: Span,
) {
    // Registers: the callee's, renamed; blocks: after the kernel's (those this call can
    // reach), and the continuation.
    let folded = folded_params(f, args);
    let run = Specialized::new(f, args, &folded, &k.blocks[b.index()].insts[..at]);
    let live = run.live.iter().filter(|l| **l).count();
    let continuation = BlockId((k.blocks.len() + live) as u32);
    let (copy, entry) = copy_blocks(k, f, &folded, continuation, &run);
    let reg = |r: RegId| copy.get(r.index()).copied().unwrap_or(r);
    // The continuation: results, the rest of the block, its terminator.
    let caller = &mut k.blocks[b.index()];
    let rest = caller.insts.split_off(at + 1);
    caller.insts.pop();
    let old_term = std::mem::replace(&mut caller.term, Terminator::Jump(entry));
    let old_term_span = std::mem::replace(&mut caller.term_span, span);
    for (&(p, ty), &arg) in f.params.iter().zip(args) {
        caller.insts.push(Inst { kind: InstKind::Mov { ty, dst: reg(p), src: arg }, span });
    }
    let mut insts: Vec<Inst> = f
        .returns
        .iter()
        .zip(results)
        .map(|(&(r, ty), &dst)| Inst {
            kind: InstKind::Mov { ty, dst, src: Value::Reg(reg(r)) },
            span,
        })
        .collect();
    insts.extend(rest);
    k.blocks.push(Block { label: None, span, insts, term: old_term, term_span: old_term_span });
}

impl Specialized {
    /// `f` called with `args` (`folded`: its parameters that address the caller's
    /// `.param` variables) after the caller's instructions `before`.
    fn new(
        f: &Function,
        args: &[Value],
        folded: &BTreeMap<RegId, u64>,
        before: &[Inst],
    ) -> Specialized {
        let Some(entry) = f.blocks.get(f.entry.index()) else { return Specialized::whole(f) };
        // The entry block runs once per call only if nothing jumps back to it.
        if f.blocks.iter().any(|b| b.term.successors().contains(&f.entry)) {
            return Specialized::whole(f);
        }
        let mut known: BTreeMap<RegId, u64> = f
            .params
            .iter()
            .zip(args)
            .filter_map(|(&(p, ty), &a)| match a {
                Value::Imm(c) if !ty.is_float() => Some((p, c & mask(ty.bits()))),
                _ => None,
            })
            .collect();
        // Whether the local window is still as the caller left it.
        let mut unwritten = true;
        let mut insts = Vec::with_capacity(entry.insts.len());
        for inst in &entry.insts {
            let kind = match &inst.kind {
                InstKind::Load { space: Space::Local, ty, dsts, addr }
                    if unwritten && !ty.is_float() && dsts.len() == 1 =>
                {
                    let at = match addr.base {
                        Some(p) => folded.get(&p).map(|&c| addr.offset.wrapping_add(c as i64)),
                        None => Some(addr.offset),
                    };
                    let value = at.and_then(|at| stored_before(before, at, *ty));
                    match (value, dsts[0]) {
                        (Some(v), Some(dst))
                            if f.regs
                                .get(dst.index())
                                .is_some_and(|r| r.ty.bits() == ty.bits()) =>
                        {
                            InstKind::Mov { ty: *ty, dst, src: Value::Imm(v) }
                        }
                        _ => inst.kind.clone(),
                    }
                }
                kind => kind.clone(),
            };
            unwritten &= !may_write_local(&kind);
            fold(&kind, &mut known);
            insts.push(Inst { kind, span: inst.span });
        }
        let term = match entry.term {
            Terminator::Branch { cond, negate, if_true, if_false } => match known.get(&cond) {
                Some(&v) => Terminator::Jump(if (v != 0) != negate { if_true } else { if_false }),
                None => entry.term.clone(),
            },
            ref other => other.clone(),
        };
        let mut live = vec![false; f.blocks.len()];
        let mut work = vec![f.entry];
        while let Some(b) = work.pop() {
            if std::mem::replace(&mut live[b.index()], true) {
                continue;
            }
            let successors = if b == f.entry {
                term.successors()
            } else {
                f.blocks[b.index()].term.successors()
            };
            work.extend(successors);
        }
        Specialized { entry: Some((insts, term)), live }
    }
}

/// The low `bits` bits.
fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// What `known` registers (constant values, by register) are after `kind`: a `mov` of a
/// constant and an integer `setp.eq`/`.ne` of constants make theirs known; any other
/// write makes its registers unknown.
fn fold(kind: &InstKind, known: &mut BTreeMap<RegId, u64>) {
    let value = |v: &Value, known: &BTreeMap<RegId, u64>| match v {
        Value::Imm(c) => Some(*c),
        Value::Reg(r) => known.get(r).copied(),
    };
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    inst_defs_uses(kind, &mut defs, &mut uses);
    let mut results: Vec<(RegId, u64)> = Vec::new();
    match kind {
        InstKind::Mov { ty, dst, src } if !ty.is_float() => {
            if let Some(v) = value(src, known) {
                results.push((*dst, v & mask(ty.bits())));
            }
        }
        InstKind::Setp { cmp, ty, ftz: false, dst, dst_not, lhs, rhs, combine: None }
            if !ty.is_float() && matches!(cmp, CmpOp::Eq | CmpOp::Ne) =>
        {
            let m = mask(ty.bits());
            if let (Some(a), Some(b)) = (value(lhs, known), value(rhs, known)) {
                let holds = ((a & m) == (b & m)) == (*cmp == CmpOp::Eq);
                results.extend(dst.map(|d| (d, holds as u64)));
                results.extend(dst_not.map(|d| (d, !holds as u64)));
            }
        }
        _ => {}
    }
    for d in defs {
        known.remove(&d);
    }
    known.extend(results);
}

/// The immediate the last of `insts` that writes the local window's bytes at `at` of
/// type `ty` stored there, if it is such a store of exactly those bytes and nothing
/// between it and the end of `insts` may have written them.
fn stored_before(insts: &[Inst], at: i64, ty: OpTy) -> Option<u64> {
    let bytes = i64::from(ty.bits() / 8);
    for inst in insts.iter().rev() {
        match &inst.kind {
            InstKind::Store {
                space: Space::Local,
                ty: t,
                srcs,
                addr: Address { base: None, offset },
            } => {
                let len = i64::from(t.bits() / 8) * srcs.len() as i64;
                if *offset + len <= at || at + bytes <= *offset {
                    continue;
                }
                return match srcs.as_slice() {
                    [Value::Imm(v)] if *offset == at && *t == ty => Some(v & mask(ty.bits())),
                    _ => None,
                };
            }
            kind if may_write_local(kind) => return None,
            _ => {}
        }
    }
    None
}

/// Whether `kind` may write the thread's local window: anything but register
/// arithmetic, special registers, loads, and stores to other spaces.
fn may_write_local(kind: &InstKind) -> bool {
    !(kind.is_register_arithmetic()
        || matches!(
            kind,
            InstKind::Special { .. }
                | InstKind::Load { .. }
                | InstKind::Store { space: Space::Global | Space::Shared, .. }
        ))
}

/// The parameters of `f` that it never writes and whose argument is an immediate, by
/// register, with the immediate.
fn folded_params(f: &Function, args: &[Value]) -> BTreeMap<RegId, u64> {
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    for i in f.blocks.iter().flat_map(|b| &b.insts) {
        inst_defs_uses(&i.kind, &mut defs, &mut uses);
    }
    f.params
        .iter()
        .zip(args)
        .filter_map(|(&(p, _), &a)| match a {
            Value::Imm(c) if !defs.contains(&p) => Some((p, c)),
            _ => None,
        })
        .collect()
}

/// Whether `kind` is a call of a device function of `k`, which no pass after this one
/// expects (calls of emulation routines stay).
pub fn is_call(k: &Kernel, kind: &InstKind) -> bool {
    match kind {
        InstKind::Call { callee, .. } => {
            k.functions.get(callee.index()).is_none_or(|f| f.routine.is_none())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::interp::{self, check, memory::Region, Launch};
    use crate::ir::{InstKind, Kernel};

    fn kernel(ptx: &str) -> Kernel {
        let mut k = crate::first_kernel(ptx);
        // As `pass::run` gives it to inline: its variables placed.
        crate::pass::layout_memory::run(&mut k);
        k
    }

    /// A launch of one block of `threads` threads whose parameter points at a buffer of
    /// `bytes` bytes of 0xee per thread.
    fn one_block(threads: u32, bytes: usize) -> Launch {
        let base = check::BUFFER_STRIDE;
        Launch {
            grid: [1, 1, 1],
            block: [threads, 1, 1],
            params: base.to_le_bytes().to_vec(),
            buffers: vec![Region { base, bytes: vec![0xee; bytes * threads as usize] }],
            dynamic_shared: 0,
            step_limit: 100_000,
        }
    }

    fn calls(k: &Kernel) -> usize {
        k.all_insts().filter(|i| matches!(i.kind, InstKind::Call { .. })).count()
    }

    /// numba's reference counting: `release` (`NRT_decref`) returns at once for a null
    /// object, else decrements its count and at zero calls its destructor through a
    /// pointer (a `.callprototype` call). `dtor` and `other` match the prototype; only
    /// `dtor`'s address is taken. The kernel releases null 24 times, its object once.
    const RELEASES: &str = "\
.func release(.param .b64 obj)\n{\n .reg .pred %p<3>;\n .reg .b64 %rd<5>;\n\
 ld.param.u64 %rd1, [obj];\n setp.eq.s64 %p1, %rd1, 0;\n @%p1 bra DONE;\n\
 ld.global.u64 %rd2, [%rd1];\n add.s64 %rd2, %rd2, -1;\n st.global.u64 [%rd1], %rd2;\n\
 setp.ne.s64 %p2, %rd2, 0;\n @%p2 bra DONE;\n\
 ld.global.u64 %rd3, [%rd1+8];\n ld.global.u64 %rd4, [%rd1+16];\n\
 { .param .b64 a0; .param .b64 a1; .param .b64 a2;\n\
   st.param.b64 [a0], %rd4;\n st.param.b64 [a1], %rd1;\n st.param.b64 [a2], 0;\n\
   proto: .callprototype _ (.param .b64 _, .param .b64 _, .param .b64 _);\n\
   call %rd3, (a0, a1, a2), proto; }\n\
DONE:\n ret;\n}\n\
.func dtor(.param .b64 a, .param .b64 b, .param .b64 c)\n{\n .reg .b64 %rd<3>;\n\
 ld.param.u64 %rd1, [a];\n ld.param.u64 %rd2, [b];\n st.global.u64 [%rd2+24], %rd1;\n ret;\n}\n\
.func other(.param .b64 a, .param .b64 b, .param .b64 c)\n{\n .reg .b64 %rd<3>;\n\
 ld.param.u64 %rd1, [a];\n ld.param.u64 %rd2, [b];\n add.u64 %rd1, %rd1, 1000;\n\
 st.global.u64 [%rd2+24], %rd1;\n ret;\n}\n\
.entry k(.param .u64 p)\n{\n .reg .b32 %r<2>;\n .reg .b64 %rd<8>;\n\
 ld.param.u64 %rd1, [p];\n mov.u32 %r1, %tid.x;\n\
 mul.wide.u32 %rd2, %r1, 32;\n add.u64 %rd3, %rd1, %rd2;\n\
 st.global.u64 [%rd3], 1;\n mov.u64 %rd4, dtor;\n st.global.u64 [%rd3+8], %rd4;\n\
 cvt.u64.u32 %rd5, %r1;\n add.u64 %rd5, %rd5, 7;\n st.global.u64 [%rd3+16], %rd5;\n\
 st.global.u64 [%rd3+24], 0;\n\
 { .param .b64 o0; .param .b64 o1; .param .b64 o2;\n\
   st.param.b64 [o0], 0;\n st.param.b64 [o1], %rd3;\n st.param.b64 [o2], 0;\n\
   call.uni other, (o0, o1, o2); }\n\
 NULLS\
 { .param .b64 q;\n st.param.b64 [q], %rd3;\n call.uni release, (q); }\n\
 ret;\n}\n";

    /// Each release of null copies `release`'s entry block only, and `release`'s
    /// indirect call tests `dtor` only (`other` is only called directly): the kernel
    /// after inlining is at most its own instructions plus, per call, the moves of its
    /// arguments and results and what it runs (for null the entry block, for the object
    /// `release`'s body and `dtor`'s), whatever the number of calls.
    #[test]
    fn calls_with_constant_arguments_copy_what_they_run() {
        let null = " { .param .b64 z;\n st.param.b64 [z], 0;\n call.uni release, (z); }\n";
        let k = kernel(&RELEASES.replace("NULLS", &null.repeat(24)));
        let function = |name: &str| {
            k.functions.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{name}"))
        };
        let size =
            |blocks: &[crate::ir::Block]| blocks.iter().map(|b| b.insts.len()).sum::<usize>();
        let moves = |f: &crate::ir::Function| f.params.len() + f.returns.len();
        let (release, dtor, other) = (function("release"), function("dtor"), function("other"));
        let entry = release.blocks[release.entry.index()].insts.len();
        let bound = size(&k.blocks)
            + 24 * (moves(release) + entry)
            + (moves(release) + size(&release.blocks))
            + (moves(dtor) + size(&dtor.blocks))
            + (moves(other) + size(&other.blocks));
        let mut inlined = k.clone();
        crate::pass::expand_indirect_calls::run(&mut inlined).expect("expands");
        crate::pass::inline::run(&mut inlined).expect("inlines");
        assert_eq!(calls(&inlined), 0);
        let total = size(&inlined.blocks);
        assert!(total <= bound, "{total} instructions after inlining, bound {bound}");
        // Each thread's object: count 0, its payload written by `dtor` (7 + t), not by
        // `other` (1000); `other`'s direct call wrote 1000 first.
        let threads = 4u32;
        let launch = one_block(threads, 32);
        for program in [&k, &inlined] {
            let out = interp::run(program, None, &launch).expect("runs");
            let word = |i: usize| u64::from_le_bytes(out.buffers[0][i..i + 8].try_into().unwrap());
            for t in 0..threads as usize {
                assert_eq!((word(32 * t), word(32 * t + 24)), (0, 7 + t as u64), "thread {t}");
            }
        }
    }

    /// `apply` calls through a pointer with its own prototype: looking for call cycles,
    /// `pass::layout_memory` counts `apply` itself as a candidate and gives it a frame, but
    /// only `twice`'s address is taken, so the calls form no cycle and are inlined as
    /// any other, the frame with them.
    #[test]
    fn a_framed_function_off_any_cycle_is_inlined() {
        let k = kernel(
            "\
.func (.param .b32 r) apply(.param .b64 fp, .param .b32 x)\n{\n\
 .reg .b32 %r<3>;\n .reg .b64 %rd<2>;\n\
 ld.param.u64 %rd1, [fp];\n ld.param.u32 %r1, [x];\n\
 { .param .b64 a0; .param .b32 a1; .param .b32 a2;\n\
   st.param.b64 [a0], 0;\n st.param.b32 [a1], %r1;\n\
   proto: .callprototype (.param .b32 _) _ (.param .b64 _, .param .b32 _);\n\
   call (a2), %rd1, (a0, a1), proto;\n ld.param.b32 %r2, [a2]; }\n\
 st.param.b32 [r], %r2;\n ret;\n}\n\
.func (.param .b32 r) twice(.param .b64 fp, .param .b32 x)\n{\n\
 .reg .b32 %r<3>;\n ld.param.u32 %r1, [x];\n add.u32 %r2, %r1, %r1;\n\
 st.param.b32 [r], %r2;\n ret;\n}\n\
.entry k(.param .u64 p)\n{\n .reg .b32 %r<3>;\n .reg .b64 %rd<5>;\n\
 ld.param.u64 %rd1, [p];\n mov.u32 %r1, %tid.x;\n mov.u64 %rd4, twice;\n\
 { .param .b64 b0; .param .b32 b1; .param .b32 b2;\n\
   st.param.b64 [b0], %rd4;\n st.param.b32 [b1], %r1;\n\
   call.uni (b2), apply, (b0, b1);\n ld.param.b32 %r2, [b2]; }\n\
 mul.wide.u32 %rd2, %r1, 4;\n add.u64 %rd3, %rd1, %rd2;\n st.global.u32 [%rd3], %r2;\n ret;\n}\n",
        );
        let mut inlined = k.clone();
        crate::pass::expand_indirect_calls::run(&mut inlined).expect("expands");
        super::run(&mut inlined).expect("inlines");
        assert_eq!(calls(&inlined), 0);
        let threads = 4u32;
        let launch = one_block(threads, 4);
        for program in [&k, &inlined] {
            let out = interp::run(program, None, &launch).expect("runs");
            for t in 0..threads as usize {
                let word = u32::from_le_bytes(out.buffers[0][4 * t..4 * t + 4].try_into().unwrap());
                assert_eq!(word, 2 * t as u32, "thread {t}");
            }
        }
    }
}
