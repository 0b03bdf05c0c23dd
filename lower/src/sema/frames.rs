//! Frames of recursive device functions. PTX allows recursion (PTX ISA 9.2
//! §9.7.12.4); a function on a **call cycle** of the kernel's call graph (direct calls,
//! and the candidates of indirect ones, as `pass::recursion::cycles` finds them in the
//! IR of a first lowering that assumed none, `sema::lower_kernel`) may have several
//! activations at once, so its `.local` and call `.param` variables cannot have the
//! static slots of the local window that other functions' have (`sema::calls`). Each
//! activation allocates a **frame** on the thread's stack (`sema::stack`) at its entry,
//! as `alloca` does, and addresses them from its frame pointer; the stack pointer is a
//! parameter passed by value, so the frame is freed when the activation returns. The
//! push is one [`StackInst::Frame`] (`pass::expand_stack` writes it out: a push that
//! does not fit ends the launch with `crate::system::STATUS_STACK`).
//!
//! Everything else about recursion is a pass: semantic analysis lowers a recursive
//! function like any other, into an IR function with `Call`s, and `pass::recursion`
//! turns the calls into a cycle into a machine over an explicit stack (SPIR-V 2.16.1
//! forbids recursion).

use ptxvk_frontend::Span;

use super::expand::Emit;
use super::{Lowerer, Symbol};
use crate::build::Build;
use crate::ir::{BlockId, OpTy, RegId, StackInst, Terminator, Value};
use crate::pass::recursion::RECURSION_STACK_BYTES;

const U32: OpTy = OpTy::U(32);

/// The frame of the recursive function being lowered.
#[derive(Clone, Copy, Debug)]
pub(super) struct Frame {
    /// The frame pointer (a local-window offset).
    fp: RegId,
    /// The block the body starts in, after the push.
    body: BlockId,
    /// The frame's size (the most its variables take at once), its alignment, and
    /// where the next variable goes (the variables of a `{ }` block are freed after
    /// it, as ptxas reuses call sequences' `.param` space).
    bytes: u32,
    align: u32,
    top: u32,
    /// A variable was placed (perhaps of 0 bytes): the frame pointer is read.
    used: bool,
}

impl Lowerer<'_> {
    /// The kernel's stack size (`sema::stack`): larger in a kernel with recursion.
    pub(super) fn stack_bytes(&self) -> u32 {
        if self.recursive.is_empty() {
            super::stack::STACK_BYTES
        } else {
            RECURSION_STACK_BYTES
        }
    }

    /// At the entry of a recursive function: a frame pointer, and the block its body
    /// starts in (the entry pushes the frame once its size is known, [`Self::push_frame`]).
    pub(super) fn open_frame(&mut self, span: Span) {
        let fp = self.temp(U32.storage(), span);
        let body = self.new_block(None, span);
        self.frame = Some(Frame { fp, body, bytes: 0, align: 8, top: 0, used: false });
        self.cur = body;
        self.closed = false;
    }

    /// Fills the entry block of the recursive function just lowered: the push of its
    /// frame (one [`StackInst::Frame`], which `pass::expand_stack` writes out), then its
    /// body.
    pub(super) fn push_frame(&mut self, span: Span) {
        let (Some(frame), Some(sp)) = (self.frame.take(), self.stack_pointer) else { return };
        self.cur = self.kernel.entry;
        self.closed = false;
        let size = frame.bytes.next_multiple_of(8);
        if size > 0 || frame.used {
            let (align, stack) = (frame.align.max(8), self.stack_bytes());
            self.push_stack(StackInst::Frame { fp: frame.fp, sp, size, align, stack }, span);
        }
        self.terminate(Terminator::Jump(frame.body), span);
    }

    /// The slot of a `.local` or `.param` variable of `size` bytes declared by the
    /// recursive function being lowered, in its frame; `None` elsewhere.
    pub(super) fn frame_slot(&mut self, size: u32, align: u32) -> Option<Symbol> {
        let f = self.frame.as_mut()?;
        let offset = f.top.next_multiple_of(align);
        f.top = offset.saturating_add(size);
        f.bytes = f.bytes.max(f.top);
        f.align = f.align.max(align);
        f.used = true;
        Some(Symbol::Framed(f.fp, offset))
    }

    /// Where the frame is filled to, before a `{ }` block; [`Self::release_frame`]
    /// frees the block's variables after it.
    pub(super) fn frame_mark(&self) -> Option<u32> {
        Some(self.frame.as_ref()?.top)
    }

    pub(super) fn release_frame(&mut self, mark: Option<u32>) {
        if let (Some(f), Some(mark)) = (self.frame.as_mut(), mark) {
            f.top = mark;
        }
    }

    /// The address `base + offset` in the local window, as a `ty` (32 or 64 bits).
    pub(super) fn framed_address(
        &mut self,
        base: RegId,
        offset: u32,
        ty: OpTy,
        span: Span,
    ) -> Value {
        let mut e = Emit { l: self, span };
        let ty = ty.as_unsigned();
        let base =
            if ty.bits() == 64 { e.cvt(ty, U32, Value::Reg(base)) } else { Value::Reg(base) };
        if offset == 0 {
            base
        } else {
            e.add(ty, base, Value::Imm(u64::from(offset)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{InstKind, Kernel, Space};

    const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

    /// The functions of the kernel lowered from `ptx` that push a frame.
    fn framed(ptx: &str) -> Vec<String> {
        let module = ptxvk_frontend::parse(&format!("{HEADER}{ptx}")).expect("parses");
        let k: Kernel = crate::sema::run(&module).expect("lowers").kernels.remove(0);
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        let pushes = |f: &crate::ir::Function| {
            let mut insts = f.blocks.iter().flat_map(|b| &b.insts);
            insts.any(
                |i| matches!(&i.kind, InstKind::Stack(s) if matches!(**s, StackInst::Frame { .. })),
            )
        };
        k.functions.iter().filter(|f| pushes(f)).map(|f| f.name.clone()).collect()
    }

    #[test]
    fn functions_on_direct_mutual_and_indirect_cycles_get_frames() {
        let mut found = framed(
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
        found.sort();
        // `r` is on the cycle p → r → q → p, which the first lowering meets as a call
        // of `q` after `q` was lowered.
        assert_eq!(found, ["a", "b", "c", "h", "k", "m", "p", "q", "r"]);
    }

    #[test]
    fn a_call_into_a_cycle_that_fails_to_lower_is_reported_once() {
        // `f`'s call of `g` is refused after `g` (which calls `f` back) was lowered: no
        // `Call` of `g` in `f`, but `f` and `g` are still lowered as recursive.
        let module = ptxvk_frontend::parse(&format!(
            "{HEADER}.func f(.param .b32 n)\n{{\n .reg .b32 %r1;\n call.uni g, (%r1);\n ret;\n}}\n\
             .func g(.param .b32 m)\n{{\n {{ .param .b32 b;\n call.uni f, (b); }}\n ret;\n}}\n\
             .entry k()\n{{\n {{ .param .b32 a;\n call.uni f, (a); }}\n ret;\n}}\n"
        ))
        .expect("parses");
        let errors = crate::sema::run(&module).expect_err("refused").0;
        let messages: Vec<&str> = errors.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, ["a `.param` parameter takes a `.param` variable of the caller"]);
    }

    #[test]
    fn activations_address_their_variables_from_a_frame_pointer() {
        // `buf` of the recursive function is frame-relative; the kernel's `keep` is not.
        let module = ptxvk_frontend::parse(&format!(
            "{HEADER}.func f(.param .b32 n)\n{{\n .local .align 4 .b8 buf[8];\n\
             .reg .pred %p1;\n .reg .b32 %r<3>;\n ld.param.u32 %r1, [n];\n\
             st.local.u32 [buf+4], %r1;\n setp.eq.u32 %p1, %r1, 0;\n @%p1 ret;\n\
             add.u32 %r2, %r1, -1;\n {{ .param .b32 a;\n st.param.b32 [a], %r2;\n\
             call.uni f, (a); }}\n ret;\n}}\n\
             .entry k(.param .u32 p)\n{{\n .local .align 4 .b8 keep[4];\n .reg .b32 %r<2>;\n\
             ld.param.u32 %r1, [p];\n st.local.u32 [keep], %r1;\n\
             {{ .param .b32 a;\n st.param.b32 [a], %r1;\n call.uni f, (a); }}\n ret;\n}}\n"
        ))
        .expect("parses");
        let mut k: Kernel = crate::sema::run(&module).expect("lowers").kernels.remove(0);
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        // The kernel's variables in their places.
        crate::pass::layout_memory::run(&mut k);
        let stores = |blocks: &[crate::ir::Block], regs: &[crate::ir::RegInfo]| {
            let mut out = Vec::new();
            for i in blocks.iter().flat_map(|b| &b.insts) {
                if let InstKind::Store { space: Space::Local, srcs, addr, .. } = &i.kind {
                    if matches!(srcs.as_slice(), [Value::Reg(r)] if regs[r.index()].name == "%r1") {
                        out.push((addr.base.is_some(), addr.offset));
                    }
                }
            }
            out
        };
        // The kernel's `keep` and its argument `a` after the 4 KiB stack; the function's
        // `buf+4` from its frame pointer, and the function has a stack pointer.
        assert!(stores(&k.blocks, &k.regs).contains(&(false, 4096)));
        let f = &k.functions[0];
        assert!(stores(&f.blocks, &f.regs).contains(&(true, 4)));
        assert!(f.stack_pointer.is_some());
        assert_eq!(k.local_bytes, RECURSION_STACK_BYTES + 8);
    }
}
