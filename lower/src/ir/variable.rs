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
//! * A variable's [`VariableRole`] says whether the PTX declared it or semantic
//!   analysis made it for the kernel (the thread's stack, `bar.red`'s word, the reserved
//!   area); passes find those by their role, never by name (a PTX name may start with
//!   `$`, PTX ISA 9.2 §4.4). A kernel has at most one variable of each made role, of
//!   no function, the stack in the local window and the others in the shared one.

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
    /// The PTX name (for the IR text; `$stack`, `$bar.red`, `$reserved` for the
    /// variables of the made roles).
    pub name: String,
    pub role: VariableRole,
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

/// Whether the PTX declared a variable or semantic analysis made it (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariableRole {
    /// A `.local`, `.shared` or call `.param` variable of the PTX.
    Declared,
    /// The thread's stack (`sema::stack`; the frames of `pass::layout_memory`).
    Stack,
    /// The scratch word of `bar.red` (`sema::barrier`).
    ReductionWord,
    /// The reserved shared-memory area (`sema::reserved`).
    Reserved,
}

impl VariableRole {
    /// Its name in the IR text (where `Declared` is left out).
    pub fn name(self) -> &'static str {
        match self {
            VariableRole::Declared => "declared",
            VariableRole::Stack => "stack",
            VariableRole::ReductionWord => "reduction_word",
            VariableRole::Reserved => "reserved",
        }
    }

    /// The role of an IR text name.
    pub fn parse(name: &str) -> Option<VariableRole> {
        let roles = [VariableRole::Stack, VariableRole::ReductionWord, VariableRole::Reserved];
        std::iter::once(VariableRole::Declared).chain(roles).find(|r| r.name() == name)
    }

    /// The window of a made role's variable (`None`: `Declared`, any).
    fn space(self) -> Option<Space> {
        match self {
            VariableRole::Declared => None,
            VariableRole::Stack => Some(Space::Local),
            VariableRole::ReductionWord | VariableRole::Reserved => Some(Space::Shared),
        }
    }
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
        let role = VariableRole::Declared;
        Variable { name, role, space, size, align, owner: None, scope: Vec::new() }
    }

    /// The kernel's variable of a made `role` (module doc).
    pub fn made(role: VariableRole, name: &str, space: Space, size: u32, align: u32) -> Variable {
        Variable { role, ..Variable::new(name.to_string(), space, size, align) }
    }

    /// What makes it malformed, if anything: a space other than the local and shared
    /// windows, an alignment that is not a power of 2, a made role's variable of a
    /// function or outside its window.
    pub fn malformed(&self) -> Option<&'static str> {
        let role_space = self.role.space();
        if !matches!(self.space, Space::Local | Space::Shared) {
            Some("a variable outside the local and shared windows")
        } else if !self.align.is_power_of_two() {
            Some("a variable whose alignment is not a power of 2")
        } else if role_space.is_some_and(|s| s != self.space || self.owner.is_some()) {
            Some("a made variable of a function or outside its role's window")
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
