//! Thread ends in device functions: `exit`, `trap` and the failures end the thread
//! (PTX ISA 9.2 §9.7.12.6, §9.7.19.1), which in a device function is an
//! [`InstKind::EndThread`] (`crate::ir::call`'s doc). This pass writes each out in
//! returns, as a device function returning to its caller can:
//!
//! * a function that may end the thread (it has an `EndThread`, or calls one that may)
//!   returns one more predicate, its **ended flag**, last; where it ends the thread it
//!   sets the flag and returns, elsewhere the flag is false: set at its entry, or, in a
//!   function on a call cycle (`pass::recursion::cycles`), at each return, its `.reg`
//!   results 0 where it ends the thread, so that neither is live across a call and
//!   `pass::recursion` saves neither in its save areas;
//! * each call of such a function (each arm of an indirect call, whose flag is false
//!   where no arm is called) gets a new predicate of the caller for that result, and
//!   the caller's block is split after the call:
//!
//! ```text
//!   b:     ...  RESULTS, %ended = call.fnF ARGS   ; branch %ended, end, next
//!   end:   end_thread                             ; return
//!   next:  the instructions after the call, b's terminator
//! ```
//!
//! In the kernel's body an `EndThread` (and what follows it in its block) is a
//! `return`, which ends the thread.
//!
//! Pre: the kernel verifies. Post: no `EndThread` is left; the kernel computes what it
//! computed.

use ptxvk_frontend::Span;

use super::expander;
use super::recursion;
use crate::ir::{Block, BlockId, Function, Inst, InstKind, Kernel, OpTy, Terminator, Value};

/// Writes out every thread end of `k` and of its functions (module doc).
pub fn run(k: &mut Kernel) {
    let ends = may_end_thread(&k.functions);
    let on_cycles = recursion::cycles(&k.functions);
    branch_on_flags(k, &ends);
    // In the kernel's body, a thread end is a return.
    cut_at_ends(k);
    let mut functions = std::mem::take(&mut k.functions);
    for (f, (&ends_thread, cycle)) in functions.iter_mut().zip(ends.iter().zip(on_cycles)) {
        f.rewrite_in_shell(|shell| branch_on_flags(shell, &ends));
        if ends_thread {
            return_flag(f, cycle.is_some());
        }
    }
    k.functions = functions;
}

/// Whether each function may end the thread: it has an `EndThread` or calls one that
/// may (a fixpoint over the call graph, cycles included).
fn may_end_thread(functions: &[Function]) -> Vec<bool> {
    fn any(f: &Function, is: impl Fn(&InstKind) -> bool) -> bool {
        f.blocks.iter().flat_map(|b| &b.insts).any(|i| is(&i.kind))
    }
    let mut ends: Vec<bool> =
        functions.iter().map(|f| any(f, |i| matches!(i, InstKind::EndThread))).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for (i, f) in functions.iter().enumerate() {
            if !ends[i] && any(f, |i| calls_ending(i, &ends)) {
                ends[i] = true;
                changed = true;
            }
        }
    }
    ends
}

/// Whether `kind` is a call that may call a function that may end the thread.
fn calls_ending(kind: &InstKind, ends: &[bool]) -> bool {
    kind.callees().iter().any(|c| ends.get(c.index()).copied().unwrap_or(false))
}

/// In one body: each call of a function that may end the thread gets its flag as a
/// new result and a branch to a thread end after it (module doc).
fn branch_on_flags(k: &mut Kernel, ends: &[bool]) {
    let mut b = 0;
    while b < k.blocks.len() {
        let Some(at) = k.blocks[b].insts.iter().position(|i| calls_ending(&i.kind, ends)) else {
            b += 1;
            continue;
        };
        let span = k.blocks[b].insts[at].span;
        let flag = expander::temp(k, span, OpTy::Pred);
        let mut insts = std::mem::take(&mut k.blocks[b].insts);
        let rest = insts.split_off(at + 1);
        match &mut insts[at].kind {
            InstKind::Call { results, .. } => results.push(flag),
            InstKind::CallIndirect { arms, .. } => {
                for arm in arms.iter_mut().filter(|a| ends.get(a.callee.index()) == Some(&true)) {
                    arm.results.push(flag);
                }
                // No arm called: the thread goes on.
                let clear = InstKind::Mov { ty: OpTy::Pred, dst: flag, src: Value::Imm(0) };
                insts.insert(at, Inst { kind: clear, span });
            }
            _ => {}
        }
        k.blocks[b].insts = insts;
        let end = new_block(k, vec![Inst { kind: InstKind::EndThread, span }], None, span);
        let next = new_block(k, rest, Some(b), span);
        let branch = Terminator::Branch { cond: flag, negate: false, if_true: end, if_false: next };
        k.blocks[b].term = branch;
        k.blocks[b].term_span = span;
        b += 1;
    }
}

/// A new block of `k` with `insts`, and the terminator of block `from` (which gets
/// none of its own yet), or `return`.
fn new_block(k: &mut Kernel, insts: Vec<Inst>, from: Option<usize>, span: Span) -> BlockId {
    let id = BlockId(k.blocks.len() as u32);
    let (term, term_span) = match from {
        Some(b) => (k.blocks[b].term.clone(), k.blocks[b].term_span),
        None => (Terminator::Return, span),
    };
    k.blocks.push(Block { label: None, span, insts, term, term_span });
    id
}

/// Cuts each block of `k` at its first `EndThread` (which the block then lacks) and
/// makes it return; the `EndThread`s' spans.
fn cut_at_ends(k: &mut Kernel) -> Vec<(usize, Span)> {
    let mut cut = Vec::new();
    for (b, block) in k.blocks.iter_mut().enumerate() {
        let is_end = |i: &Inst| matches!(i.kind, InstKind::EndThread);
        if let Some(at) = block.insts.iter().position(is_end) {
            cut.push((b, block.insts[at].span));
            block.insts.truncate(at);
            block.term = Terminator::Return;
        }
    }
    cut
}

/// Function `f`, which may end the thread, returns its ended flag (module doc); on a
/// call cycle (`at_returns`), it is set at each return.
fn return_flag(f: &mut Function, at_returns: bool) {
    let results = f.returns.clone();
    let flag = f.rewrite_in_shell(|shell| {
        let flag = expander::temp(shell, shell.blocks[shell.entry.index()].span, OpTy::Pred);
        let set = |value: u64| InstKind::Mov { ty: OpTy::Pred, dst: flag, src: Value::Imm(value) };
        let ends = cut_at_ends(shell);
        for &(b, span) in &ends {
            let block = &mut shell.blocks[b].insts;
            if at_returns {
                for &(dst, ty) in &results {
                    block.push(Inst { kind: InstKind::Mov { ty, dst, src: Value::Imm(0) }, span });
                }
            }
            block.push(Inst { kind: set(1), span });
        }
        if at_returns {
            for (b, block) in shell.blocks.iter_mut().enumerate() {
                if block.term == Terminator::Return && !ends.iter().any(|e| e.0 == b) {
                    let span = block.term_span;
                    block.insts.push(Inst { kind: set(0), span });
                }
            }
        } else {
            let entry = &mut shell.blocks[shell.entry.index()];
            entry.insts.insert(0, Inst { kind: set(0), span: entry.span });
        }
        flag
    });
    f.returns.push((flag, OpTy::Pred));
}
