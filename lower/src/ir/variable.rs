//! Variables of the kernel's memory windows before `pass::layout_memory`
//! ([`crate::ir::Kernel::variables`], [`crate::ir::InstKind::VariableAddress`]):
//! Cranelift's stack slots, naga's local variables.
//!
//! # Specification
//!
//! * A [`Variable`] is `size` bytes of the thread's local window ([`Space::Local`]: a
//!   `.local` variable, a call's `.param` variable, the thread's stack) or of the
//!   block's shared window ([`Space::Shared`]: a static `.shared` variable, `bar.red`'s
//!   word, the reserved area) aligned to `align` (a power of 2). The kernel owns one
//!   arena of them, indexed by [`VarId`] in declaration order (the order semantic
//!   analysis meets the declarations, the kernel's and its functions' interleaved as
//!   their bodies are lowered), which the kernel's body and its functions' bodies name
//!   alike.
//! * [`VariableAddress`] (`dst = address.ty var+offset`) sets `dst` (`ty`: u32 or
//!   u64, its register as wide) to the variable's offset in its window plus `offset`
//!   (PTX's `var+4` operands), modulo 2^`ty`'s bits; the register is written by no
//!   other instruction. Variables do not overlap, and each lies inside its window
//!   ([`crate::ir::Kernel::local_bytes`], the static part of
//!   [`crate::ir::Kernel::shared`], once placed).
//! * `pass::layout_memory` places every variable (each at the next offset of its
//!   alignment after the variables of its window declared before it, from offset 0;
//!   the shared ones listed in [`crate::ir::SharedLayout::variables`]) and replaces
//!   each address by its offset, folded into the instructions that read it; after it
//!   the arena is empty and no `VariableAddress` remains.
//! * A variable of a device function ([`Variable::owner`]) on a call cycle has one
//!   instance per activation: `pass::layout_memory` places it in the activation's
//!   **frame** on the thread's stack instead (`crate::ir::StackInst::Frame`, pushed at
//!   the function's entry), where the variables of a `{ }` block ([`Variable::scope`])
//!   may reuse the bytes of a sibling block's, as ptxas reuses call sequences' `.param`
//!   space. Its address is then the frame pointer plus its offset in the frame.

use super::{FunctionId, OpTy, RegId, Space};

/// A variable's handle: its index in [`crate::ir::Kernel::variables`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VarId(pub u32);

impl VarId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A variable of a memory window (module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// The PTX name (for the IR text; `$stack` for the thread's stack).
    pub name: String,
    pub space: Space,
    pub size: u32,
    pub align: u32,
    /// The device function that declared it (`None`: the kernel, or a variable of the
    /// whole CTA or thread).
    pub owner: Option<FunctionId>,
    /// The `{ }` blocks it is declared in, outermost first, each by an id unique in the
    /// kernel (empty: the body's top scope).
    pub scope: Vec<u32>,
}

/// `dst = address.ty var+offset`: the offset of `var` in its window plus `offset`
/// (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariableAddress {
    pub ty: OpTy,
    pub dst: RegId,
    pub var: VarId,
    pub offset: u64,
}

impl Variable {
    /// A variable of the kernel's windows that no function owns.
    pub fn new(name: String, space: Space, size: u32, align: u32) -> Variable {
        Variable { name, space, size, align, owner: None, scope: Vec::new() }
    }

    /// What makes it malformed, if anything: a space other than the local and shared
    /// windows, an alignment that is not a power of 2.
    pub fn malformed(&self) -> Option<&'static str> {
        if !matches!(self.space, Space::Local | Space::Shared) {
            Some("a variable outside the local and shared windows")
        } else if !self.align.is_power_of_two() {
            Some("a variable whose alignment is not a power of 2")
        } else {
            None
        }
    }
}

impl VariableAddress {
    /// What makes it malformed, if anything: a type other than u32 and u64.
    pub fn malformed(&self) -> Option<&'static str> {
        (!matches!(self.ty, OpTy::U(32 | 64)))
            .then_some("a variable address that is not u32 or u64")
    }
}
