//! ptxvk runs NVIDIA PTX on any Vulkan GPU: it compiles PTX to SPIR-V compute shaders
//! and launches them through its own Vulkan runtime.
//!
//! ```no_run
//! use ptxvk::{Arg, Device, Module};
//!
//! # fn main() -> Result<(), ptxvk::Error> {
//! let ptx = std::fs::read_to_string("tests/kernels/vector_add.nvcc.sm_80.ptx").unwrap();
//! let device = Device::default_device()?;
//! let module = Module::from_ptx(&device, &ptx)?;
//! let n = 1000u32;
//! let a = device.buffer_from(&vec![1.0f32; n as usize])?;
//! let b = device.buffer_from(&vec![2.0f32; n as usize])?;
//! let c = device.zeroed::<f32>(n as usize)?;
//! module.kernel("vector_add")?.launch(
//!     n.div_ceil(256), 256, 0,
//!     &[Arg::from(&a), Arg::from(&b), Arg::from(&c), Arg::from(n)],
//! )?;
//! assert!(c.to_vec()?.iter().all(|&x| x == 3.0));
//! # Ok(())
//! # }
//! ```
//!
//! The stages are separate crates: `ptxvk-frontend` (PTX → AST), `ptxvk-lower`
//! (AST → IR → structured IR), `ptxvk-spirv` (→ SPIR-V) and `ptxvk-vk` (Vulkan).
#![forbid(unsafe_code)]

pub mod check;
pub mod compare;
pub mod compile;
mod error;
pub mod printf;
pub mod probes;
pub mod run;
pub mod runtime;
pub mod spec;
pub mod target;

pub use bytemuck::{self, Pod};
pub use error::Error;
pub use half;
pub use ptxvk_abi::tensor_map::{TensorMap, TensorMapError};
pub use ptxvk_frontend::source::decode as decode_ptx;
pub use ptxvk_frontend::{Diagnostics, SourceMap};
pub use ptxvk_vk::{Event, Stream, StreamKind};
pub use runtime::{
    AddressMode, Arg, ChannelKind, Device, DeviceBuffer, DeviceSlice, Dim3, Kernel, LaunchStats,
    Module, SamplerDesc, TextureDesc, TextureObject,
};

/// The README's Rust example is compiled as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub use ptxvk_frontend as frontend;
pub use ptxvk_lower as lower;
pub use ptxvk_native_cuda as native_cuda;
pub use ptxvk_spirv as spirv;
pub use ptxvk_vk as vk;
