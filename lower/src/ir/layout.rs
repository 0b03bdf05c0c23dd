//! What a kernel's launch needs to know of its memory besides its code: the layout of
//! its shared-memory window ([`SharedLayout`]) and, for checked launches, where each
//! instrumented access is ([`CheckSite`]).

use super::Space;
use ptxvk_frontend::Span;

/// One instrumented access of a checked kernel (`pass::check`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckSite {
    /// The PTX instruction.
    pub span: Span,
    pub space: Space,
    pub access: AccessKind,
    /// Bytes accessed (a vector's total).
    pub size: u32,
}

/// What an access does, as a checked launch reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    Read,
    Write,
    /// A read-modify-write (`atom`, `red`).
    Atomic,
}

impl AccessKind {
    pub fn name(self) -> &'static str {
        match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
            AccessKind::Atomic => "atomic",
        }
    }
}

/// The kernel's shared-memory window (`docs/architecture.md`, *The launch ABI*): static
/// variables, then the dynamic (`extern .shared`) region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedLayout {
    /// Bytes of static `.shared` variables (the dynamic region starts here, aligned).
    pub static_bytes: u32,
    /// Alignment of the dynamic region, when the kernel declares `extern .shared`.
    pub dynamic_align: Option<u32>,
    /// Static variables in the window: name, offset, size in bytes.
    pub variables: Vec<(String, u32, u32)>,
    /// The window's element. 32-bit words by default. 64-bit words when the kernel has
    /// 64-bit shared atomics, which SPIR-V performs on 64-bit elements only (Vulkan 1.3
    /// devices need `VK_KHR_workgroup_memory_explicit_layout` to alias element types,
    /// which lavapipe and many others lack); narrower atomics on such a window are
    /// compare-and-swap loops on the containing 64-bit word (`sema::atomic`). Bytes or
    /// halves when `pass::legalize_memory` finds that typed sub-word stores beat the
    /// atomics a word window needs for them.
    pub word: SharedWord,
    /// Whether the window is in device memory rather than in the workgroup's on-chip
    /// memory, because the kernel's static shared variables alone exceed the device's
    /// `maxComputeSharedMemorySize` (`pass::shared_in_memory`): every block then has a
    /// slice of a launch-wide area ([`super::SpecialReg::SharedWindowAddress`]) and the kernel
    /// has no `Space::Shared` accesses left.
    pub in_device_memory: bool,
}

/// The element type of the shared window ([`SharedLayout::word`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum SharedWord {
    U8,
    U16,
    #[default]
    U32,
    U64,
}

impl SharedWord {
    pub fn bits(self) -> u32 {
        match self {
            SharedWord::U8 => 8,
            SharedWord::U16 => 16,
            SharedWord::U32 => 32,
            SharedWord::U64 => 64,
        }
    }

    /// The element of `bits` bits, if a window can have it.
    pub fn of_bits(bits: u32) -> Option<SharedWord> {
        match bits {
            8 => Some(SharedWord::U8),
            16 => Some(SharedWord::U16),
            32 => Some(SharedWord::U32),
            64 => Some(SharedWord::U64),
            _ => None,
        }
    }
}

impl SharedLayout {
    /// Whether the window is of 64-bit words (the kernel has 64-bit shared atomics).
    pub fn wide(&self) -> bool {
        self.word == SharedWord::U64
    }

    /// Offset of dynamic shared memory.
    pub fn dynamic_offset(&self) -> u32 {
        let align = self.dynamic_align.unwrap_or(1).max(1);
        self.static_bytes.div_ceil(align) * align
    }
}
