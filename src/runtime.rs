//! The Rust API for running PTX kernels, close to what CUDA users know:
//! [`Device`] → [`Module::from_ptx`] → [`Kernel::launch`] with [`DeviceBuffer`]s.
//!
//! This file is the device: opening it (the warp probe and the driver-bug probes,
//! whose facts [`crate::target`] turns into what modules are compiled for), its streams
//! and its memory. The rest is one file per concern: `buffer` (typed buffers,
//! arguments, texture objects), `module` (modules compiled whole or lazily, their data
//! and pipelines), `launch` (kernels and their launches), `system_area` (the area
//! filled before a launch and read back after it), `device_launch` (launch trees).

use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bytemuck::Pod;

use ptxvk_vk::{DeviceInfo, DeviceSelector, Event, Stream, StreamKind};

use crate::check::CheckConfig;
use crate::compile::{Target, WarpMode};
use crate::probes::findings::Findings;
use crate::target::{check_warp_mode, DeviceFacts, Options};
use crate::Error;

mod buffer;
mod device_launch;
mod launch;
mod module;
mod open;
mod prepared;
mod system_area;

pub use buffer::{
    AddressMode, Arg, ChannelKind, DeviceBuffer, DeviceSlice, SamplerDesc, TextureDesc,
    TextureObject,
};
pub use launch::Dim3;
pub use module::{Kernel, Module};

/// What a finished launch reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaunchStats {
    /// GPU time from before the first dispatch to after the last, in milliseconds
    /// (0.0 when the queue cannot write timestamps).
    pub kernel_ms: f64,
    /// Number of `vkCmdDispatch` calls the grid was split into.
    pub dispatches: u32,
    /// The kernel's `printf` output, formatted as CUDA would print it (records in the
    /// order threads wrote them; each thread's in program order).
    pub printf: String,
}

/// A Vulkan device that runs kernels. Cheap to clone; clones share the device.
#[derive(Clone, Debug)]
pub struct Device {
    pub(crate) inner: ptxvk_vk::Device,
    /// What the device is: its features and limits, its warp mode and why (after the
    /// probe of [`Device::open`]), and what the driver-bug probes found when it opened
    /// (`crate::probes`): whether its `Fma` is fused, the faster exact scheme for f32,
    /// how its float arithmetic with known operands and its loops must be compiled, and
    /// what it computes wrongly beyond repair.
    facts: Arc<DeviceFacts>,
    /// What modules loaded from now on are compiled under: `PTXVK_FLOAT`, and the checks
    /// (`PTXVK_CHECK`, [`Device::set_check`]). No warp mode is forced here.
    options: Options,
    /// The 32-bit address window ([`Device::address_window`]), once a module with 32-bit
    /// addresses has been loaded: every buffer allocated after that lies inside it.
    window: Arc<Mutex<Option<ptxvk_vk::Window>>>,
    /// `cudaLimitDevRuntimePendingLaunchCount` ([`Device::set_pending_launch_limit`]).
    pending_launches: Arc<std::sync::atomic::AtomicU32>,
}

/// The environment variable that sets the size of the 32-bit address window in MiB
/// (default 256, at most [`MAX_WINDOW_MB`]).
pub const ENV_WINDOW_MB: &str = "PTXVK_WINDOW_MB";

/// The largest address window: 32-bit generic addresses above it are the parameter,
/// local and shared windows (`ptxvk_abi::window::PARAM_WINDOW_32`).
pub const MAX_WINDOW_MB: u64 = (ptxvk_abi::window::PARAM_WINDOW_32 as u64) >> 20;

impl Device {
    /// The device chosen by `PTXVK_DEVICE` (index or name substring), else the first
    /// discrete GPU, integrated GPU, virtual GPU, then CPU implementation (lavapipe).
    pub fn default_device() -> Result<Device, Error> {
        Self::open(&DeviceSelector::from_env())
    }

    /// Checks the launches of modules loaded on this handle from now on (as
    /// `PTXVK_CHECK` does for a whole process): with memcheck, every access of the
    /// program's memory instructions is tested, one that fails does not happen, and the
    /// launch fails with [`Error::CheckFailed`] listing the first `config.limit`.
    pub fn set_check(&mut self, config: CheckConfig) {
        self.options.check = config;
        // Initcheck needs the write shadows of the allocations made from now on.
        self.inner.set_track_writes(config.initcheck);
    }

    /// Sets how many device-side launches may be pending at once on this device and
    /// its clones (`cudaLimitDevRuntimePendingLaunchCount`, 2048 by default; at least 1):
    /// launches past it return `cudaErrorLaunchPendingCountExceeded` to the device code.
    pub fn set_pending_launch_limit(&self, launches: u32) {
        self.pending_launches.store(launches.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// The pending-launch limit ([`Device::set_pending_launch_limit`]).
    pub fn pending_launch_limit(&self) -> u32 {
        self.pending_launches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The checks launches get ([`Device::set_check`]).
    pub fn check(&self) -> CheckConfig {
        self.options.check
    }

    /// The warp mode (`docs/architecture.md`, *Warp modes*) modules get on this device
    /// ([`warp_choice`](crate::target::warp_choice), confirmed by the probe of
    /// [`Self::open`]).
    pub fn warp_mode(&self) -> WarpMode {
        self.facts.warp_mode
    }

    /// Why the device has its [`Self::warp_mode`], in words.
    pub fn warp_reason(&self) -> &str {
        &self.facts.warp_reason
    }

    /// What the device is: what Vulkan reports, its warp mode, what the probes found.
    pub fn facts(&self) -> &DeviceFacts {
        &self.facts
    }

    /// The options modules loaded on this device are compiled under (`PTXVK_FLOAT`, the
    /// checks of [`Self::set_check`]).
    pub fn options(&self) -> Options {
        self.options
    }

    /// What modules are compiled for on this device: its facts under its options
    /// ([`crate::target::target`]).
    pub fn target(&self) -> Target {
        crate::target::target(Some(&self.facts), &self.options)
    }

    /// What a module is compiled for on this device under `options` (`ptxvk run
    /// --warp-mode`, `compare`'s `warp=`): a forced warp mode must be one the device
    /// runs.
    pub fn target_with(&self, options: &Options) -> Result<Target, Error> {
        if let Some(mode) = options.warp_mode {
            check_warp_mode(self.info(), mode)?;
        }
        Ok(crate::target::target(Some(&self.facts), options))
    }

    /// What the driver-bug probes found when the device opened (`ptxvk devices` lists
    /// them).
    pub fn findings(&self) -> &Findings {
        static NONE: OnceLock<Findings> = OnceLock::new();
        // Every opened device has findings (its probes run in `open`).
        self.facts.findings.as_deref().unwrap_or_else(|| NONE.get_or_init(Findings::default))
    }

    /// Why a launch of a module of `spirv` is refused on this device: a probe found the
    /// driver computing wrongly what the module needs (floats, loops) with no exact
    /// way around it.
    fn refusal(&self, spirv: &ptxvk_spirv::SpirvModule) -> Option<Error> {
        let f = self.findings();
        let why = match (f.integer_refusal(), f.float_refusal(), f.loop_refusal()) {
            (Some(why), _, _) => why,
            (_, Some(why), _) if spirv.uses_floats && !self.options.native_float => why,
            (_, _, Some(why)) if spirv.has_loops => why,
            _ => match f.scheduler_refusal() {
                Some(why) if spirv.scheduled => why,
                _ => return None,
            },
        };
        let info = self.info();
        let fix = if info.driver_name.contains("llvmpipe") || info.name.contains("llvmpipe") {
            "Mesa 25's lavapipe computes it right: on Debian 12, `apt-get install -t \
             bookworm-backports mesa-vulkan-drivers` (or run `scripts/setup`)"
        } else {
            "a newer driver may compute it right"
        };
        Some(Error::DriverBug(format!(
            "{} ({} {}) computes {why}; a probe found this when the device opened (`ptxvk \
             devices` lists them), so ptxvk refuses the launch rather than compute a wrong \
             result. {fix}",
            info.name, info.driver_name, info.driver_info
        )))
    }

    /// The runtime device underneath: streams, events, pools, host memory, and launches
    /// of hand-written SPIR-V under the same launch ABI (the benchmarks' baselines).
    pub fn vk(&self) -> &ptxvk_vk::Device {
        &self.inner
    }

    pub fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }

    /// The legacy default stream (CUDA's stream 0): synchronous launches and copies use
    /// it.
    pub fn default_stream(&self) -> Stream {
        self.inner.default_stream()
    }

    /// A new stream; `NonBlocking` ones do not synchronise with the default stream.
    pub fn create_stream(&self, kind: StreamKind) -> Result<Stream, Error> {
        Ok(self.inner.create_stream(kind, 0)?)
    }

    /// A new event; with `timing`, records take GPU timestamps.
    pub fn create_event(&self, timing: bool) -> Result<Event, Error> {
        Ok(self.inner.create_event(timing)?)
    }

    /// Waits for all work on every stream, then reports the first deferred error (a
    /// failed `assert` or `trap` of an asynchronous launch, for example).
    pub fn synchronize(&self) -> Result<(), Error> {
        Ok(self.inner.synchronize()?)
    }

    /// A device buffer holding a copy of `data`.
    pub fn buffer_from<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>, Error> {
        let buf = self.buffer_from_bytes(bytemuck::cast_slice(data))?;
        Ok(DeviceBuffer { buf, device: self.clone(), len: data.len(), _t: PhantomData })
    }

    /// A zero-filled device buffer of `len` elements.
    pub fn zeroed<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>, Error> {
        let size = (len as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| Error::Launch("buffer size overflows".into()))?;
        let buf = self.alloc(size)?;
        Ok(DeviceBuffer { buf, device: self.clone(), len, _t: PhantomData })
    }

    /// A zero-filled untyped buffer of `size` bytes: in the 32-bit address window once a
    /// module with 32-bit addresses has been loaded on this device, else anywhere.
    /// Initcheck counts its zeros as written.
    pub fn alloc(&self, size: u64) -> Result<ptxvk_vk::Buffer, Error> {
        let buffer = self.alloc_uninitialized(size)?;
        buffer.mark_written(0, size);
        Ok(buffer)
    }

    /// A buffer of `size` bytes as `cudaMalloc` gives one: its contents are undefined to
    /// the program (zeros here), so that initcheck reports reads of what neither the host
    /// nor a kernel has written since. Placed as [`Device::alloc`]'s.
    pub fn alloc_uninitialized(&self, size: u64) -> Result<ptxvk_vk::Buffer, Error> {
        let window = self.window.lock().unwrap_or_else(PoisonError::into_inner).clone();
        Ok(match window {
            Some(w) => self.inner.alloc_in(&w, size)?,
            None => self.inner.alloc(size)?,
        })
    }

    /// The 32-bit address window of this device, created on first use with the size
    /// `PTXVK_WINDOW_MB` gives (256 MiB by default). Modules with 32-bit addresses
    /// (`.address_size 32`, or none) see global memory as offsets into it, so from the
    /// first such module on, every buffer is allocated inside it ([`Device::alloc`]);
    /// buffers allocated before cannot be their arguments.
    pub fn address_window(&self) -> Result<ptxvk_vk::Window, Error> {
        let mut slot = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = slot.as_ref() {
            return Ok(w.clone());
        }
        let mib = match std::env::var(ENV_WINDOW_MB) {
            Err(_) => 256,
            Ok(v) => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&m| (1..=MAX_WINDOW_MB).contains(&m))
                .ok_or_else(|| {
                    Error::Config(format!(
                        "{ENV_WINDOW_MB}={v}: expected MiB from 1 to {MAX_WINDOW_MB}"
                    ))
                })?,
        };
        let w = self.inner.create_window(mib << 20)?;
        *slot = Some(w.clone());
        Ok(w)
    }

    /// An untyped device buffer holding `bytes`.
    pub fn buffer_from_bytes(&self, bytes: &[u8]) -> Result<ptxvk_vk::Buffer, Error> {
        let buf = self.alloc(bytes.len() as u64)?;
        if !bytes.is_empty() {
            self.inner.upload(&buf, 0, bytes)?;
        }
        Ok(buf)
    }

    /// Reads a whole untyped buffer back (after the default stream's work).
    pub fn read_bytes(&self, buf: &ptxvk_vk::Buffer) -> Result<Vec<u8>, Error> {
        Ok(self.inner.download(buf, 0, buf.size())?)
    }
}
