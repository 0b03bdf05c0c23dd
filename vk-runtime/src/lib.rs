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
//! The contract with the SPIR-V backend is the `ptxvk-abi` crate (re-exported as
//! [`abi`]): the 56-byte push-constant block ([`abi::PushConstants`]: the parameter and
//! constant-data addresses, the dispatch's first block index `ctaid_base`, CUDA's `grid`;
//! `%ctaid = WorkgroupId + ctaid_base`, `%nctaid = grid`, not `NumWorkgroups`, which
//! describes one dispatch of a split grid) and the specialization constants
//! ([`abi::spec_ids`]: block size, shared words, dynamic shared bytes).
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
//! - `PTXVK_LOG=timing`: a line on stderr per pipeline created and per kernel compiled
//!   ([`timing`]).
//!
//! # Modules
//!
//! `instance` (loader, enumeration, validation messages), `adapter` (feature and limit
//! probing), `objects` (what an open device owns and holds, types only, below every
//! file that operates on them), `device` (selection, creation, pipeline cache,
//! teardown, host callbacks),
//! `memory` (allocations, host memory, the address map), `external` (memory shared
//! with other processes), `pool` (stream-ordered pools),
//! `stream` (streams; its `copies` the copies and memsets, its `arena` their staging
//! memory; `region` the pitched regions of 3-D copies),
//! `event`, `program` (shader module, layout, specialized pipelines), `launch_config`
//! (the launch configuration and its validation), `launch` (timed launches), `conv`
//! (pure mapping helpers), `error`, and `types`, the plain data the files share (device
//! info and limits, pipeline keys, stream and memset kinds), which imports none of
//! them. The client of NVIDIA's CUDA driver for comparisons is a crate of
//! its own (`ptxvk-native-cuda`).

// Every `unsafe` block must say why it is sound (`docs/architecture.md`, *The crates*).
#![deny(clippy::undocumented_unsafe_blocks)]

mod adapter;
mod conv;
mod device;
mod error;
mod event;
mod external;
mod instance;
mod launch;
mod launch_config;
mod memory;
mod objects;
mod pool;
mod program;
mod ranges;
mod region;
mod reservation;
mod shadow;
mod stream;
pub mod timing;
mod types;
mod window;

pub use device::{
    DeviceSelector, DEFAULT_SPIN_US, DEFAULT_TIMEOUT_MS, ENV_DEVICE, ENV_NO_DISK_CACHE,
    ENV_SPIN_US, ENV_TIMEOUT_MS,
};
pub use error::Error;
pub use event::Event;
pub use external::ExportedMemory;
pub use instance::{enumerate_devices, validation_messages, ENV_VALIDATION_ABORT};
pub use launch::LaunchStats;
pub use launch_config::{LaunchConfig, CUDA_MAX_BLOCK, CUDA_MAX_GRID, CUDA_MAX_SHARED_PER_BLOCK};
pub use memory::{Buffer, Resolved, BUFFER_ALIGNMENT};
pub use objects::{Device, Hook, MemoryKind, Range};
pub use pool::MemPool;
pub use program::Program;
pub use region::{BufferRegion, Extent3d, HostLayout};
pub use stream::{Stream, MAX_BATCH_OPS};
pub use types::{
    DeviceInfo, DeviceType, Features, Limits, Pattern, PipelineKey, StreamKind, SubgroupSizes,
};
pub use window::{Window, MAX_WINDOW_BYTES};

pub use ptxvk_abi as abi;

/// Size in bytes of the push-constant block every kernel receives.
pub const PUSH_CONSTANT_SIZE: u32 = abi::PushConstants::SIZE;

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
