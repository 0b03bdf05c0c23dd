//! What a kernel knows of CUDA's device runtime for launches (CUDA Programming Guide,
//! "CUDA Dynamic Parallelism", "Device-side Launch from PTX"): the module's kernels,
//! whose addresses launches name, and the size of a V2 parameter buffer. The calls
//! themselves (`cudaGetParameterBuffer[V2]`, `cudaLaunchDevice[V2]`, the last error,
//! streams, `cudaGetDevice`; nvcc 12's `__cudaCDP2…` names too) are resolved by name
//! like every function CUDA provides (`sema::system`); `crate::ir::SystemInst`'s module
//! doc specifies them, recorded in the grid's launch arena (`crate::device_launch`) for
//! the runtime to run after the grid, each stream's work in launch order like every
//! other launch (CUDA orders work only within a stream, so one order serves all).
//!
//! A kernel's address (`mov.u64 %rd, kernel;`) is `device_launch::KERNEL_WINDOW` plus
//! one plus the kernel's index among the module's kernels in name order; a launch
//! checks it against that table and returns `cudaErrorInvalidDeviceFunction` for
//! anything else.

use ptxvk_frontend::ast::{self, ScalarType};
use ptxvk_frontend::Name;

use super::Resolver;
use crate::abi::Layout as _;
use crate::device_launch as dl;

/// What the kernel being lowered knows of the device runtime.
#[derive(Clone, Debug, Default)]
pub(super) struct DeviceRuntime {
    /// The module's kernels (with bodies) in name order: the launch targets.
    kernels: Vec<Name>,
    /// Bytes of the largest parameter block among them: what a V2 buffer holds.
    max_params: u32,
}

impl DeviceRuntime {
    /// The device runtime of a module with `kernels` (with bodies), whose parameter
    /// blocks have at most `max_params` bytes.
    pub(super) fn new(kernels: Vec<Name>, max_params: u32) -> DeviceRuntime {
        DeviceRuntime { kernels, max_params }
    }

    /// The address of kernel `name`, if the module has such a kernel.
    pub(super) fn kernel_address(&self, name: &str) -> Option<u64> {
        let i = self.kernels.iter().position(|k| k.as_str() == name)?;
        Some(dl::KERNEL_WINDOW + 1 + i as u64)
    }

    /// Bytes of the module's largest parameter block.
    pub(super) fn max_params(&self) -> u32 {
        self.max_params
    }
}

/// Bytes of kernel `f`'s parameter block as `crate::abi` lays it out (0 where it
/// cannot, which lowering the kernel reports).
pub(super) fn param_bytes(f: &ast::Function) -> u32 {
    let params = f.params.iter().flat_map(|p| {
        let ty = p.ty.value.scalar().unwrap_or(ScalarType::U64);
        let align = p.align.as_ref().map(|a| a.value);
        p.names.iter().map(move |n| {
            let count: u64 = n.dims.iter().map(|d| d.unwrap_or(0)).product();
            let count = if n.dims.is_empty() { 1 } else { u32::try_from(count).unwrap_or(0) };
            (n.name.value.as_str(), ty, count, align)
        })
    });
    crate::abi::KernelAbi::layout(params).map_or(0, |a| a.size)
}

impl Resolver<'_> {
    /// Marks the kernel as one that launches (its launch targets).
    pub(super) fn mark_launches(&mut self) {
        if self.kernel.device_launches.is_empty() {
            self.kernel.device_launches =
                self.module.device_runtime.kernels.iter().map(|k| k.to_string()).collect();
            // An empty table still needs the flag: a placeholder no address reaches.
            if self.kernel.device_launches.is_empty() {
                self.kernel.device_launches.push(String::new());
            }
        }
    }
}
