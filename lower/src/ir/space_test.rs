//! `isspacep` (PTX ISA 9.2 §9.7.9.18) in the CFG IR as semantic analysis resolves it
//! ([`crate::ir::InstKind::IsSpace`]), until `pass::expand_isspace`, the first pass,
//! writes it out.

use super::{OpTy, RegId, Value};

/// `isspacep.space p, a`: the predicate `dst` is whether the generic address `addr`, at
/// `ty` (`.u64`, or `.u32` in a module with 32-bit addresses), is in `space`, as the
/// windows of the launch ABI lay the spaces out (`crate::ir`'s module doc, *Memory*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsSpaceInst {
    pub space: SpaceTest,
    pub ty: OpTy,
    pub dst: RegId,
    pub addr: Value,
}

/// The state space an [`IsSpaceInst`] tests, with the sizes semantic analysis resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpaceTest {
    /// `.global`: below the local and shared windows and not a `.const` variable (the
    /// first `const_bytes` of the module data, `globals::ModuleData::const_bytes`).
    Global {
        const_bytes: u32,
    },
    /// `.const`: the first `const_bytes` of the module data.
    Const {
        const_bytes: u32,
    },
    Shared,
    Local,
    /// `.param`: the kernel's parameter block of `bytes` bytes (also from a device
    /// function, which its kernel calls), or in a module with 32-bit addresses the
    /// parameter window.
    Param {
        bytes: u32,
    },
}

impl SpaceTest {
    pub fn name(self) -> &'static str {
        match self {
            SpaceTest::Global { .. } => "global",
            SpaceTest::Const { .. } => "const",
            SpaceTest::Shared => "shared",
            SpaceTest::Local => "local",
            SpaceTest::Param { .. } => "param",
        }
    }

    /// The size it carries: `.const` bytes, or the parameter block's.
    pub fn bytes(self) -> Option<u32> {
        match self {
            SpaceTest::Global { const_bytes } | SpaceTest::Const { const_bytes } => {
                Some(const_bytes)
            }
            SpaceTest::Param { bytes } => Some(bytes),
            SpaceTest::Shared | SpaceTest::Local => None,
        }
    }
}
