//! The thread's stack in the CFG IR before `pass::expand_stack`
//! ([`crate::ir::InstKind::Stack`]): `alloca`, `stacksave` and `stackrestore` (PTX ISA
//! 9.2 §9.7.17), one operation each, as semantic analysis resolves them, and the push
//! of a recursive function's frame, which `pass::layout_memory` lays out.
//!
//! # Specification
//!
//! The stack is the first `stack` bytes of the thread's local window, growing down from
//! its top; `sp` is the stack pointer register of the body (u32, a local-window offset:
//! the kernel's, set to the top at its entry, or a device function's copy of its
//! caller's, [`crate::ir::Function::stack_pointer`]). The memory below `sp` is free.
//!
//! * [`StackInst::Alloca`]: `size` (read at `ty`, u32 or u64) bytes aligned to `align`
//!   (a power of 2, at least 8): when `size` (as a u64) is at most `sp`, `sp` becomes
//!   `(sp - size) & -align` and `dst` (`ty`) gets it; otherwise the launch fails with
//!   `crate::system::STATUS_STACK` (details: 0, `stack`, `size`, as
//!   [`crate::ir::SystemInst::Fail`] records them) and the thread ends, from any call
//!   depth.
//! * [`StackInst::Save`] (`stacksave`): `dst` (`ty`) gets `sp`, zero-extended.
//! * [`StackInst::Restore`] (`stackrestore`): `sp` becomes the low 32 bits of `src`
//!   (`ty`).
//! * [`StackInst::Frame`]: the frame of a recursive function's activation, at its
//!   entry: `size` bytes (a multiple of 8) aligned to `align` (a power of 2, at least
//!   8). With `size` 0, `fp` gets `sp`. Otherwise, when `size + align - 8` is at most
//!   `sp`, `sp` and `fp` become `(sp - size) & -align`; else the launch fails with
//!   `STATUS_STACK` (details: 0, `stack`, `size`, 1, the function field marking a call
//!   frame) and the thread ends.
//!
//! `pass::expand_stack` writes each out in core integer operations and, for a push that
//! does not fit, a [`crate::ir::SystemInst::Fail`] and the thread's end.

use super::{OpTy, RegId, Value};

/// A stack operation (module doc).
#[derive(Clone, Debug, PartialEq)]
pub enum StackInst {
    Alloca { ty: OpTy, dst: RegId, sp: RegId, size: Value, align: u64, stack: u32 },
    Save { ty: OpTy, dst: RegId, sp: RegId },
    Restore { ty: OpTy, sp: RegId, src: Value },
    Frame { fp: RegId, sp: RegId, size: u32, align: u32, stack: u32 },
}

impl StackInst {
    /// Every register it names, for renaming (`pass::inline`).
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        match self {
            StackInst::Alloca { dst, sp, size, .. } => {
                f(dst);
                f(sp);
                if let Value::Reg(r) = size {
                    f(r);
                }
            }
            StackInst::Save { dst, sp, .. } => {
                f(dst);
                f(sp);
            }
            StackInst::Restore { sp, src, .. } => {
                f(sp);
                if let Value::Reg(r) = src {
                    f(r);
                }
            }
            StackInst::Frame { fp, sp, .. } => {
                f(fp);
                f(sp);
            }
        }
    }

    /// The registers it writes, with their widths in bits.
    pub fn defs(&self) -> Vec<(RegId, u32)> {
        match *self {
            StackInst::Alloca { ty, dst, sp, .. } => vec![(dst, ty.bits()), (sp, 32)],
            StackInst::Save { ty, dst, .. } => vec![(dst, ty.bits())],
            StackInst::Restore { sp, .. } => vec![(sp, 32)],
            StackInst::Frame { fp, sp, size, .. } if size > 0 => vec![(fp, 32), (sp, 32)],
            StackInst::Frame { fp, .. } => vec![(fp, 32)],
        }
    }

    /// The values it reads, with their widths in bits.
    pub fn uses(&self) -> Vec<(Value, u32)> {
        match *self {
            StackInst::Alloca { ty, sp, size, .. } => {
                vec![(Value::Reg(sp), 32), (size, ty.bits())]
            }
            StackInst::Save { sp, .. } | StackInst::Frame { sp, .. } => vec![(Value::Reg(sp), 32)],
            StackInst::Restore { ty, src, .. } => vec![(src, ty.bits())],
        }
    }

    /// What makes it malformed, if anything: an integer type other than 32 or 64 bits,
    /// an alignment that is not a power of 2 of at least 8, a frame size that is not a
    /// multiple of 8 (or with its alignment past 32 bits).
    pub fn malformed(&self) -> Option<&'static str> {
        let int = |ty: OpTy| matches!(ty, OpTy::U(32 | 64) | OpTy::S(32 | 64));
        match *self {
            StackInst::Alloca { ty, .. }
            | StackInst::Save { ty, .. }
            | StackInst::Restore { ty, .. }
                if !int(ty) =>
            {
                Some("a stack operation not at a 32- or 64-bit integer type")
            }
            StackInst::Alloca { align, .. } if !align.is_power_of_two() || align < 8 => {
                Some("an `alloca` alignment that is not a power of 2 of at least 8")
            }
            StackInst::Frame { size, align, .. }
                if size % 8 != 0
                    || !align.is_power_of_two()
                    || align < 8
                    || size.checked_add(align).is_none() =>
            {
                Some("a frame that is not a multiple of 8 bytes at a power-of-2 alignment")
            }
            _ => None,
        }
    }
}
