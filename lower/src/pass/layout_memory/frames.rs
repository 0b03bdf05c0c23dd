//! The frames of the functions on call cycles (`crate::ir::Variable`'s module doc):
//! PTX allows recursion (PTX ISA 9.2 §9.7.12.4), so a function on a cycle of the
//! kernel's call graph (direct calls and the arms of indirect ones,
//! [`recursion::cycles`]) may have several activations at once, and its `.local` and
//! call `.param` variables cannot have static places. Each activation pushes a frame on
//! the thread's stack at its entry, one [`StackInst::Frame`] (`pass::expand_stack`
//! writes it out: a push that does not fit ends the launch with
//! `crate::system::STATUS_STACK`), and addresses its variables from the frame pointer;
//! the stack pointer is a parameter passed by value, so the frame is freed when the
//! activation returns.
//!
//! A kernel with recursion has a stack of [`RECURSION_STACK_BYTES`] (the frames and
//! `pass::recursion`'s save areas live there): the stack's variable grows to that size
//! (or is made, first in the local window), and where no body has a stack pointer yet
//! (no `alloca`), the kernel gets one, set to the stack's top at its entry, and every
//! function one more parameter, its copy, which every call passes last.

use std::collections::BTreeMap;

use crate::ir::{
    Address, BinaryOp, Block, FloatMode, Function, FunctionId, Inst, InstKind, Kernel, OpTy, RegId,
    RegInfo, RegTy, Space, StackInst, Terminator, Value, VarId, Variable, VariableAddress,
    VariableRole,
};
use crate::pass::copy_body::for_each_reg;
use crate::pass::recursion::{self, RECURSION_STACK_BYTES};

/// The name of the thread stack's variable in the IR text (`sema::stack`'s; the pass
/// finds it by its role).
const STACK: &str = "$stack";

const U32: OpTy = OpTy::U(32);

/// Gives the functions on call cycles of `k` their frames and the stack its recursion
/// size (module doc); the variables they own keep no bytes of the static layout.
pub(super) fn place(k: &mut Kernel) {
    let on_cycle: Vec<bool> = recursion::cycles(&k.functions).iter().map(Option::is_some).collect();
    if !on_cycle.contains(&true) {
        return;
    }
    grow_stack(k);
    for (index, f) in k.functions.iter_mut().enumerate() {
        if on_cycle[index] {
            push_frame(f, FunctionId(index as u32), &mut k.variables);
        }
    }
    for v in &mut k.variables {
        if v.owner.is_some_and(|f| on_cycle[f.index()]) {
            v.size = 0;
            v.align = 1;
        }
    }
}

/// The stack at [`RECURSION_STACK_BYTES`], and a stack pointer in every body.
fn grow_stack(k: &mut Kernel) {
    let stack = k.variables.iter().position(|v| v.role == VariableRole::Stack);
    let Some(stack) = stack else {
        add_stack(k);
        return;
    };
    let old = std::mem::replace(&mut k.variables[stack].size, RECURSION_STACK_BYTES);
    let bodies =
        std::iter::once(&mut k.blocks).chain(k.functions.iter_mut().map(|f| &mut f.blocks));
    for i in bodies.flat_map(|b| b.iter_mut()).flat_map(|b| &mut b.insts) {
        match &mut i.kind {
            // The stack pointer's start, the stack's top (`sema::stack`).
            InstKind::VariableAddress(a)
                if a.var.index() == stack && a.offset == u64::from(old) =>
            {
                a.offset = u64::from(RECURSION_STACK_BYTES)
            }
            InstKind::Stack(s) => {
                if let StackInst::Alloca { stack, .. } = &mut **s {
                    *stack = RECURSION_STACK_BYTES;
                }
            }
            _ => {}
        }
    }
}

/// A stack first in the local window and a stack pointer in every body, in a kernel
/// without one.
fn add_stack(k: &mut Kernel) {
    let stack = Variable::made(VariableRole::Stack, STACK, Space::Local, RECURSION_STACK_BYTES, 8);
    k.variables.insert(0, stack);
    let bodies =
        std::iter::once(&mut k.blocks).chain(k.functions.iter_mut().map(|f| &mut f.blocks));
    for i in bodies.flat_map(|b| b.iter_mut()).flat_map(|b| &mut b.insts) {
        if let InstKind::VariableAddress(a) = &mut i.kind {
            a.var = VarId(a.var.0 + 1);
        }
    }
    let span = k.span;
    let sp = new_reg(&mut k.regs, "$sp", span);
    let top = new_reg(&mut k.regs, "$stack_top", span);
    let address =
        VariableAddress { ty: U32, dst: top, var: VarId(0), offset: RECURSION_STACK_BYTES.into() };
    let init = [
        InstKind::VariableAddress(address),
        InstKind::Mov { ty: U32, dst: sp, src: Value::Reg(top) },
    ];
    let entry = &mut k.blocks[k.entry.index()].insts;
    entry.splice(0..0, init.map(|kind| Inst { kind, span }));
    pass_stack_pointer(&mut k.blocks, sp);
    for f in &mut k.functions {
        let own = new_reg(&mut f.regs, "$sp", f.span);
        f.params.push((own, U32));
        f.stack_pointer = Some(own);
        pass_stack_pointer(&mut f.blocks, own);
    }
}

/// Every call of `blocks` passes `sp` last.
fn pass_stack_pointer(blocks: &mut [Block], sp: RegId) {
    for i in blocks.iter_mut().flat_map(|b| &mut b.insts) {
        match &mut i.kind {
            InstKind::Call { args, .. } => args.push(Value::Reg(sp)),
            InstKind::CallIndirect { arms, .. } => {
                arms.iter_mut().for_each(|arm| arm.args.push(Value::Reg(sp)))
            }
            _ => {}
        }
    }
}

fn new_reg(regs: &mut Vec<RegInfo>, name: &str, span: ptxvk_frontend::Span) -> RegId {
    regs.push(RegInfo { name: name.into(), ty: RegTy::Int(32), span });
    RegId(regs.len() as u32 - 1)
}

/// The frame of function `f` (`id`): its variables' offsets in it (those of a `{ }`
/// block reuse the bytes of the sibling blocks before it), a frame pointer, the push
/// in a new entry block, and the variables' addresses from the frame pointer.
fn push_frame(f: &mut Function, id: FunctionId, variables: &mut [Variable]) {
    let mut offsets: Vec<Option<u32>> = vec![None; variables.len()];
    // The frame's end so far, and the blocks entered with where it ended then.
    let (mut top, mut bytes, mut align) = (0u32, 0u32, 8u32);
    let mut entered: Vec<(u32, u32)> = Vec::new();
    for (v, offset) in variables.iter().zip(&mut offsets) {
        if v.owner != Some(id) {
            continue;
        }
        let common = entered.iter().zip(&v.scope).take_while(|(e, s)| e.0 == **s).count();
        if let Some(&(_, mark)) = entered.get(common) {
            top = mark;
            entered.truncate(common);
        }
        entered.extend(v.scope[common..].iter().map(|&s| (s, top)));
        let at = top.next_multiple_of(v.align.max(1));
        top = at.saturating_add(v.size);
        bytes = bytes.max(top);
        align = align.max(v.align);
        *offset = Some(at);
    }
    let Some(sp) = f.stack_pointer else { return };
    if offsets.iter().all(Option::is_none) {
        return;
    }
    let fp = new_reg(&mut f.regs, "$fp", f.span);
    let size = bytes.next_multiple_of(8);
    let frame = StackInst::Frame { fp, sp, size, align, stack: RECURSION_STACK_BYTES };
    let push = Inst { kind: InstKind::Stack(Box::new(frame)), span: f.span };
    let old_entry = f.entry;
    f.entry = crate::ir::BlockId(f.blocks.len() as u32);
    f.blocks.push(Block {
        label: None,
        span: f.span,
        insts: vec![push],
        term: Terminator::Jump(old_entry),
        term_span: f.span,
    });
    // The 32-bit addresses are `fp` plus a constant, folded into the address operands
    // based on them (and `fp` itself where it is a value); they stay where some
    // instruction still reads them.
    let mut framed: BTreeMap<RegId, u64> = BTreeMap::new();
    for i in f.blocks.iter().flat_map(|b| &b.insts) {
        if let InstKind::VariableAddress(a) = i.kind {
            if let (Some(at), true) = (offsets[a.var.index()], a.ty == U32) {
                framed.insert(a.dst, u64::from(at).wrapping_add(a.offset) & u64::from(u32::MAX));
            }
        }
    }
    let mut read = vec![false; f.regs.len()];
    for i in f.blocks.iter_mut().flat_map(|b| &mut b.insts) {
        if matches!(i.kind, InstKind::VariableAddress(_)) {
            continue;
        }
        let value = &mut |v: &mut Value| {
            if let Value::Reg(r) = *v {
                if framed.get(&r) == Some(&0) {
                    *v = Value::Reg(fp);
                }
            }
        };
        let addr = &mut |a: &mut Address| {
            if let Some(&offset) = a.base.and_then(|b| framed.get(&b)) {
                *a = Address { base: Some(fp), offset: a.offset.wrapping_add(offset as i64) };
            }
        };
        super::fold_with(&mut i.kind, value, addr);
        for_each_reg(&mut i.kind, &mut |r: &mut RegId| read[r.index()] = true);
    }
    for b in &mut f.blocks {
        let insts = std::mem::take(&mut b.insts);
        for i in insts {
            match i.kind {
                InstKind::VariableAddress(a) if offsets[a.var.index()].is_some() => {
                    if framed.contains_key(&a.dst) && !read[a.dst.index()] {
                        continue;
                    }
                    let at = offsets[a.var.index()].unwrap_or(0);
                    for kind in framed_address(a, fp, at) {
                        b.insts.push(Inst { kind, span: i.span });
                    }
                }
                _ => b.insts.push(i),
            }
        }
    }
    let removed: Vec<RegId> = framed.keys().copied().filter(|r| !read[r.index()]).collect();
    let Function { regs, blocks, params, returns, stack_pointer, .. } = f;
    super::remove_regs(regs, blocks, Some((params, returns, stack_pointer)), &removed);
}

/// `a`'s address, its variable at `at` in the frame at `fp`: `fp + at + offset`.
fn framed_address(a: VariableAddress, fp: RegId, at: u32) -> Vec<InstKind> {
    let mask = if a.ty.bits() >= 64 { u64::MAX } else { (1 << a.ty.bits()) - 1 };
    let offset = u64::from(at).wrapping_add(a.offset) & mask;
    let mut out = Vec::new();
    let base = if a.ty.bits() == 64 {
        let (to, from, rounding, mode) = (a.ty, U32, None, FloatMode::default());
        out.push(InstKind::Convert { to, from, rounding, mode, dst: a.dst, src: Value::Reg(fp) });
        Value::Reg(a.dst)
    } else {
        Value::Reg(fp)
    };
    if offset != 0 {
        let (op, mode) = (BinaryOp::Add, FloatMode::default());
        let rhs = Value::Imm(offset);
        out.push(InstKind::Binary { op, ty: a.ty, mode, dst: a.dst, lhs: base, rhs });
    } else if a.ty.bits() != 64 {
        out.push(InstKind::Mov { ty: a.ty, dst: a.dst, src: base });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Kernel;

    /// The kernel of `ptx`, its variables placed.
    fn placed(ptx: &str) -> Kernel {
        let mut k = crate::first_kernel(ptx);
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        super::super::run(&mut k);
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        k
    }

    /// The frame pointer function `f` pushes, if it pushes a frame.
    fn frame_pointer(f: &Function) -> Option<RegId> {
        f.blocks.iter().flat_map(|b| &b.insts).find_map(|i| match &i.kind {
            InstKind::Stack(s) => match **s {
                StackInst::Frame { fp, .. } => Some(fp),
                _ => None,
            },
            _ => None,
        })
    }

    #[test]
    fn functions_on_direct_mutual_and_indirect_cycles_get_frames() {
        let k = placed(
            ".func a() { .local .b32 x; call.uni a; ret; }\n\
             .func b() { .local .b32 x; call.uni c; ret; }\n\
             .func c() { .local .b32 x; call.uni b; ret; }\n\
             .func d() { .local .b32 x; call.uni e; ret; }\n\
             .func e() { .local .b32 x; ret; }\n\
             .func g() { .local .b32 x; call.uni a; call.uni d; ret; }\n\
             .func (.param .b32 r) h(.param .b32 x)\n\
             { .reg .b64 %rd1; .param .b32 p; .param .b32 q;\n\
               mov.u64 %rd1, h;\n\
               P: .callprototype (.param .b32 _) _ (.param .b32 _);\n\
               call (q), %rd1, (p), P; ret; }\n\
             .func k() { .local .b32 x; .reg .b64 %rd1; T: .calltargets m; call %rd1, T; ret; }\n\
             .func m() { .local .b32 x; call.uni k; ret; }\n\
             .func p() { .local .b32 x; call.uni q; call.uni r; ret; }\n\
             .func q() { .local .b32 x; call.uni p; ret; }\n\
             .func r() { .local .b32 x; call.uni q; ret; }\n\
             .entry main() { .param .b32 a0; .param .b32 r0;\n\
               call.uni g; call.uni b; call.uni (r0), h, (a0); call.uni k; call.uni p; ret; }\n",
        );
        let mut framed: Vec<&str> = k
            .functions
            .iter()
            .filter(|f| frame_pointer(f).is_some())
            .map(|f| f.name.as_str())
            .collect();
        framed.sort();
        // `r` is on the cycle p → r → q → p, which lowering meets as a call of `q` after
        // `q` was lowered.
        assert_eq!(framed, ["a", "b", "c", "h", "k", "m", "p", "q", "r"]);
        // Every function has a stack pointer (no `alloca` made one), the stack is first.
        assert!(k.functions.iter().all(|f| f.stack_pointer.is_some()));
        // The static variables: `d`, `e` and `g`'s `x`, `main`'s `a0` and `r0`.
        assert_eq!(k.local_bytes, RECURSION_STACK_BYTES + 20);
    }

    #[test]
    fn a_variable_named_stack_is_not_the_stack() {
        // The kernel's `$stack` (PTX ISA 9.2 §4.4: names may start with `$`) is no
        // stack: the pass makes the stack first in the window, the 4 bytes after it.
        let k = placed(
            ".version 8.0\n.target sm_80\n.address_size 64\n\
             .func f() { call.uni f; ret; }\n\
             .entry k() { .local .b32 $stack; .reg .b32 %r1;\n\
               st.local.u32 [$stack], %r1; call.uni f; ret; }\n",
        );
        assert_eq!(k.local_bytes, RECURSION_STACK_BYTES + 4);
        let store = k.blocks.iter().flat_map(|b| &b.insts).find_map(|i| match &i.kind {
            InstKind::Store { addr, .. } => Some(*addr),
            _ => None,
        });
        assert_eq!(store, Some(Address { base: None, offset: i64::from(RECURSION_STACK_BYTES) }));
        assert!(k.functions[0].stack_pointer.is_some());
    }

    #[test]
    fn a_call_into_a_cycle_that_fails_to_lower_is_reported_once() {
        // `f`'s call of `g` is refused after `g` (which calls `f` back) was lowered.
        let module = ptxvk_frontend::parse(
            ".version 8.0\n.target sm_80\n.address_size 64\n\
             .func f(.param .b32 n)\n{\n .reg .b32 %r1;\n call.uni g, (%r1);\n ret;\n}\n\
             .func g(.param .b32 m)\n{\n { .param .b32 b;\n call.uni f, (b); }\n ret;\n}\n\
             .entry k()\n{\n { .param .b32 a;\n call.uni f, (a); }\n ret;\n}\n",
        )
        .expect("parses");
        let errors = crate::sema::run(&module).expect_err("refused").0;
        let messages: Vec<&str> = errors.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, ["a `.param` parameter takes a `.param` variable of the caller"]);
    }

    #[test]
    fn activations_address_their_variables_from_a_frame_pointer() {
        // `buf` of the recursive function is frame-relative, and its call's `a` in a
        // block reuses the bytes after it; the kernel's `keep` is static.
        let k = placed(
            ".func f(.param .b32 n)\n{\n .local .align 4 .b8 buf[8];\n\
             .reg .pred %p1;\n .reg .b32 %r<3>;\n ld.param.u32 %r1, [n];\n\
             st.local.u32 [buf+4], %r1;\n setp.eq.u32 %p1, %r1, 0;\n @%p1 ret;\n\
             add.u32 %r2, %r1, -1;\n { .param .b32 a;\n st.param.b32 [a], %r2;\n\
             call.uni f, (a); }\n { .param .b32 b;\n st.param.b32 [b], %r2; }\n ret;\n}\n\
             .entry k(.param .u32 p)\n{\n .local .align 4 .b8 keep[4];\n .reg .b32 %r<2>;\n\
             ld.param.u32 %r1, [p];\n st.local.u32 [keep], %r1;\n\
             {\n .param .b32 a;\n st.param.b32 [a], %r1;\n call.uni f, (a); }\n ret;\n}\n",
        );
        let stores = |blocks: &[Block], regs: &[RegInfo], name: &str| {
            let mut out = Vec::new();
            for i in blocks.iter().flat_map(|b| &b.insts) {
                if let InstKind::Store { space: Space::Local, srcs, addr, .. } = &i.kind {
                    if matches!(srcs.as_slice(), [Value::Reg(r)] if regs[r.index()].name == name) {
                        out.push(*addr);
                    }
                }
            }
            out
        };
        // The kernel's `keep` after the 4 KiB stack, its `a` after it.
        let kernel_stores = stores(&k.blocks, &k.regs, "%r1");
        assert_eq!(kernel_stores[0], Address { base: None, offset: 4096 });
        assert_eq!(k.local_bytes, RECURSION_STACK_BYTES + 8);
        // The function's `buf+4`, `a` and `b` from its frame pointer: 4, 8 and 8 (`b`'s
        // block after `a`'s).
        let f = &k.functions[0];
        let fp = frame_pointer(f).expect("a frame");
        let from_fp = |addr: Address| {
            let base = addr.base.expect("a register base");
            let def =
                f.blocks.iter().flat_map(|b| &b.insts).find_map(|i| match i.kind {
                    InstKind::Binary {
                        op: BinaryOp::Add, dst, lhs, rhs: Value::Imm(at), ..
                    } if dst == base && lhs == Value::Reg(fp) => Some(at),
                    _ => None,
                });
            let at = if base == fp { Some(0) } else { def };
            at.expect("fp plus an offset") as i64 + addr.offset
        };
        let at: Vec<i64> = stores(&f.blocks, &f.regs, "%r1").into_iter().map(from_fp).collect();
        assert_eq!(at, [4]);
        let at: Vec<i64> = stores(&f.blocks, &f.regs, "%r2").into_iter().map(from_fp).collect();
        assert_eq!(at, [8, 8]);
        let size = f.blocks.iter().flat_map(|b| &b.insts).find_map(|i| match &i.kind {
            InstKind::Stack(s) => match **s {
                StackInst::Frame { size, .. } => Some(size),
                _ => None,
            },
            _ => None,
        });
        assert_eq!(size, Some(16));
        assert!(f.stack_pointer.is_some());
    }
}
