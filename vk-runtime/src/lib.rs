//! ptxvk's Vulkan runtime: devices, memory, streams, events, programs and launches.
//!
//! Built on `ash` and `gpu-allocator`. With the driver library it is the only ptxvk crate
//! with `unsafe` code; every `unsafe` block states why it is sound in a `// SAFETY:`
//! comment.
//!
//! ```text
//! enumerate_devices() ─► Vec<DeviceInfo>
//! Device::open(&DeviceSelector) ─► Device ─┬─ alloc / alloc_host / alloc_managed / register_host ─► Buffer
//!                                          ├─ create_pool ─► MemPool, create_event ─► Event
//!                                          ├─ create_program(spirv, entry, needs) ─► Program
//!                                          ├─ create_stream / default_stream / per_thread_stream ─► Stream
//!                                          │     launch, copies, memset, record, wait_event,
//!                                          │     launch_host_func, alloc_async, synchronize
//!                                          └─ launch(&Program, &LaunchConfig) ─► LaunchStats (synchronous)
//! ```
//!
//! The stream model is specified in `stream.rs`'s module documentation.
//!
//! # Launch ABI
//!
//! The contract with the SPIR-V backend; every kernel module follows it.
//!
//! **Push constants**, [`PUSH_CONSTANT_SIZE`] = 40 bytes, little endian, one range for the
//! compute stage, no descriptor sets:
//!
//! | offset | type | value |
//! |---|---|---|
//! | 0 | `u64` | `param_address`: device address of the kernel's `.param` block |
//! | 8 | `u64` | `const_address`: device address of the module's `.const` block |
//! | 16, 20, 24 | `u32` ×3 | `ctaid_base` x, y, z: block index of this dispatch's first block |
//! | 28, 32, 36 | `u32` ×3 | `grid` x, y, z: the whole CUDA grid (`%nctaid`) |
//!
//! `%ctaid = WorkgroupId + ctaid_base`; `%nctaid = grid` (not `NumWorkgroups`, which
//! describes one dispatch of a split grid).
//!
//! **Specialization constants** (32-bit, always all four provided): ids 0, 1, 2 = block size
//! x, y, z (used through `LocalSizeId`); id 3 = shared memory in 32-bit words,
//! `max(1, ceil(shared_bytes / 4))`.
//!
//! **Launch**: grid and block components are at least 1; blocks fit
//! `maxComputeWorkGroupSize` and `maxComputeWorkGroupInvocations`; shared memory fits
//! `maxComputeSharedMemorySize`; grids fit CUDA's limits (x < 2^31, y and z ≤ 65535).
//! Violations are [`Error::Launch`] before anything is recorded. Grids larger than
//! `maxComputeWorkGroupCount` are split into several dispatches (z, then y, then x chunks)
//! in one command buffer. Every wait for the GPU has a timeout (default 60 s,
//! `PTXVK_TIMEOUT_MS`); expiry is [`Error::Timeout`], never a hang.
//!
//! # Environment
//!
//! - `PTXVK_DEVICE`: device index or name substring ([`DeviceSelector::from_env`]).
//! - `PTXVK_TIMEOUT_MS`: timeout of every wait for the GPU, in milliseconds.
//! - `PTXVK_SPIN_US`: how long a wait spins (yielding) before it blocks (default 100).
//! - `PTXVK_VALIDATION_ABORT=1`: abort on any validation-layer message (tests).
//! - `PTXVK_NO_DISK_CACHE=1`: do not load or save the pipeline cache under
//!   `$XDG_CACHE_HOME/ptxvk/` (or `~/.cache/ptxvk/`).
//!
//! # Modules
//!
//! `instance` (loader, enumeration, validation messages), `adapter` (feature and limit
//! probing), `device` (selection, creation, pipeline cache, teardown, host callbacks),
//! `memory` (allocations, host memory, the address map), `pool` (stream-ordered pools),
//! `stream` (streams, copies, memsets), `event`, `program` (shader module, layout,
//! specialized pipelines), `launch` (validation, timed launches), `conv` (pure mapping
//! helpers), `error`.

// Every `unsafe` block must say why it is sound (DESIGN.md §1).
#![deny(clippy::undocumented_unsafe_blocks)]

mod adapter;
mod conv;
mod device;
mod error;
mod event;
mod instance;
mod launch;
mod memory;
mod pool;
mod program;
mod stream;

pub use adapter::{DeviceInfo, DeviceType, Features, Limits};
pub use device::{
    Device, DeviceSelector, DEFAULT_SPIN_US, DEFAULT_TIMEOUT_MS, ENV_DEVICE, ENV_NO_DISK_CACHE,
    ENV_SPIN_US, ENV_TIMEOUT_MS,
};
pub use error::Error;
pub use event::Event;
pub use instance::{enumerate_devices, validation_messages, ENV_VALIDATION_ABORT};
pub use launch::{LaunchConfig, LaunchStats, CUDA_MAX_GRID};
pub use memory::{Buffer, MemoryKind, Resolved, BUFFER_ALIGNMENT};
pub use pool::MemPool;
pub use program::{PipelineKey, Program};
pub use stream::{
    BufferRegion, Extent3d, Hook, HostLayout, Pattern, Stream, StreamKind, MAX_BATCH_OPS,
};

/// Size in bytes of the push-constant block every kernel receives (see "Launch ABI").
pub const PUSH_CONSTANT_SIZE: u32 = 40;

/// Push-constant byte offsets of the launch ABI, for the SPIR-V backend's `Offset`
/// decorations.
pub mod push_offsets {
    /// `u64` device address of the parameter block.
    pub const PARAM_ADDRESS: u32 = 0;
    /// `u64` device address of the constant block.
    pub const CONST_ADDRESS: u32 = 8;
    /// `u32[3]` block-index offset of the dispatch.
    pub const CTAID_BASE: u32 = 16;
    /// `u32[3]` CUDA grid size.
    pub const GRID: u32 = 28;
}

/// Specialization constant ids of the launch ABI.
pub mod spec_ids {
    /// Block size x; y and z are `BLOCK_X + 1` and `BLOCK_X + 2`.
    pub const BLOCK_X: u32 = 0;
    /// Block size y.
    pub const BLOCK_Y: u32 = 1;
    /// Block size z.
    pub const BLOCK_Z: u32 = 2;
    /// Shared memory size in 32-bit words.
    pub const SHARED_WORDS: u32 = 3;
}

#[cfg(test)]
mod tests {
    /// Handles are shared between threads (the CLI and tests launch from several).
    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<crate::Device>();
        check::<crate::Buffer>();
        check::<crate::Program>();
        check::<crate::Error>();
    }
}
