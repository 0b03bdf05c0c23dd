//! The Rust API for running PTX kernels, close to what CUDA users know:
//! [`Device`] → [`Module::from_ptx`] → [`Kernel::launch`] with [`DeviceBuffer`]s.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bytemuck::Pod;

use ptxvk_frontend::ast::ScalarType;
use ptxvk_spirv::KernelInfo;
use ptxvk_vk::{DeviceInfo, DeviceSelector, Event, LaunchConfig, Stream, StreamKind};

use ptxvk_abi::system;

use crate::check::{CheckConfig, CheckContext, Region};
use crate::compile::{compile_module, Compiled, LazyModule, Target, WarpMode};
use crate::printf;
use crate::probes::Findings;
use crate::Error;
use ptxvk_frontend::SourceMap;

use crate::target::{check_warp_mode, required_subgroup_size, DeviceFacts, Options};

mod device_launch;

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

    /// Opens the device. Where [`warp_choice`] relies on a required subgroup size, a
    /// probe kernel first checks that warps come out as CUDA numbers them (lane = thread
    /// index mod 32, full and partial warps, shuffles within the warp); if they do not,
    /// the device gets emulated warps and [`Self::warp_reason`] says what the probe saw.
    pub fn open(selector: &DeviceSelector) -> Result<Device, Error> {
        Device::open_masked(selector, "")
    }

    /// [`Device::open`] with the Vulkan features named in `mask` (commas between)
    /// masked on this device only, as `PTXVK_MASK_FEATURES` masks them on every device
    /// (`ptxvk compare --on 0+mask=shaderFloat64`).
    pub fn open_masked(selector: &DeviceSelector, mask: &str) -> Result<Device, Error> {
        let inner = ptxvk_vk::Device::open_masked(selector, mask)?;
        let options = Options::from_env()?;
        let mut facts = DeviceFacts::unprobed(inner.info());
        // The probes below see no findings of their own yet.
        facts.findings = Some(Arc::default());
        let mut device = Device {
            inner,
            facts: Arc::new(facts),
            // The probes run unchecked.
            options: Options { check: CheckConfig::default(), ..options },
            window: Arc::default(),
            pending_launches: Arc::new(ptxvk_abi::device_launch::DEFAULT_PENDING_LIMIT.into()),
        };
        if required_subgroup_size(device.info(), device.warp_mode()).is_some() {
            if let Err(seen) = crate::probes::probe_warps(&device) {
                let why = format!("the warp probe failed with required subgroups: {seen}");
                let facts = Arc::make_mut(&mut device.facts);
                facts.warp_mode = WarpMode::Emulated;
                facts.warp_reason = why.into();
            }
        }
        // The driver-bug probes (or their cached answers). A probe that cannot run
        // leaves the default answer: no fused `Fma`, the f64 scheme where the device has
        // f64, repaired zero sums, no loop guard.
        let findings = crate::probes::findings(&device);
        Arc::make_mut(&mut device.facts).findings = Some(Arc::new(findings));
        device.set_check(options.check);
        Ok(device)
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

/// A typed device buffer of `len` elements of `T` (any [`Pod`] type: integers, floats,
/// [`half::f16`], [`half::bf16`], arrays and `#[repr(C)]` structs of them). It carries its
/// device, and launches keep its memory alive until they complete, so dropping it while a
/// launch is pending is safe.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    buf: ptxvk_vk::Buffer,
    device: Device,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Pod> DeviceBuffer<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address a kernel's pointer parameter receives.
    pub fn address(&self) -> u64 {
        self.buf.address()
    }

    /// The untyped buffer underneath.
    pub fn raw(&self) -> &ptxvk_vk::Buffer {
        &self.buf
    }

    /// The device the buffer lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Elements `range` of the buffer, for kernel arguments and copies.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Result<DeviceSlice<'_, T>, Error> {
        if range.start > range.end || range.end > self.len {
            return Err(Error::Launch(format!(
                "slice {}..{} of a buffer of {} elements",
                range.start, range.end, self.len
            )));
        }
        Ok(DeviceSlice { buffer: self, start: range.start, len: range.end - range.start })
    }

    /// The whole buffer as a slice.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice { buffer: self, start: 0, len: self.len }
    }

    /// Copies the buffer back to the host after the default stream's work.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        let mut out = vec![T::zeroed(); self.len];
        self.as_slice().copy_to(&mut out)?;
        Ok(out)
    }

    /// Overwrites the buffer's first `data.len()` elements, after the default stream's
    /// work.
    pub fn copy_from(&self, data: &[T]) -> Result<(), Error> {
        self.as_slice().copy_from(data)
    }
}

/// A range of elements of a [`DeviceBuffer`].
#[derive(Debug)]
pub struct DeviceSlice<'a, T> {
    buffer: &'a DeviceBuffer<T>,
    start: usize,
    len: usize,
}

impl<T> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceSlice<'_, T> {}

impl<T: Pod> DeviceSlice<'_, T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn byte_offset(&self) -> u64 {
        (self.start * std::mem::size_of::<T>()) as u64
    }

    fn check_len(&self, n: usize) -> Result<(), Error> {
        if n > self.len {
            return Err(Error::Launch(format!(
                "{n} elements do not fit a slice of {} elements",
                self.len
            )));
        }
        Ok(())
    }

    /// The device address of the slice's first element.
    pub fn address(&self) -> u64 {
        self.buffer.address() + self.byte_offset()
    }

    /// Copies the slice's first `out.len()` elements to the host after the default
    /// stream's work.
    pub fn copy_to(&self, out: &mut [T]) -> Result<(), Error> {
        self.check_len(out.len())?;
        let stream = self.buffer.device.default_stream();
        let bytes = bytemuck::cast_slice_mut(out);
        Ok(stream.copy_from_buffer(&self.buffer.buf, self.byte_offset(), bytes)?)
    }

    /// Overwrites the slice's first `data.len()` elements after the default stream's
    /// work, and waits.
    pub fn copy_from(&self, data: &[T]) -> Result<(), Error> {
        self.check_len(data.len())?;
        let stream = self.buffer.device.default_stream();
        let bytes = bytemuck::cast_slice(data);
        Ok(stream.copy_to_buffer_sync(&self.buffer.buf, self.byte_offset(), bytes)?)
    }

    /// Enqueues a copy of `data` into the slice on `stream`; the data is staged at once,
    /// so it may be reused when this returns.
    pub fn copy_from_async(&self, stream: &Stream, data: &[T]) -> Result<(), Error> {
        self.check_len(data.len())?;
        Ok(stream.copy_to_buffer(
            &self.buffer.buf,
            self.byte_offset(),
            bytemuck::cast_slice(data),
        )?)
    }

    /// Enqueues a device-to-device copy of the slice into `dst` (of the same length) on
    /// `stream`.
    pub fn copy_to_device(&self, stream: &Stream, dst: &DeviceSlice<'_, T>) -> Result<(), Error> {
        if dst.len != self.len {
            return Err(Error::Launch(format!(
                "copy of {} elements into a slice of {}",
                self.len, dst.len
            )));
        }
        let bytes = (self.len * std::mem::size_of::<T>()) as u64;
        Ok(stream.copy_buffer(
            &self.buffer.buf,
            self.byte_offset(),
            &dst.buffer.buf,
            dst.byte_offset(),
            bytes,
        )?)
    }
}

/// One kernel argument: a pointer into a buffer, or raw by-value bytes. A pointer
/// argument borrows its buffer for the call only; the launch keeps the memory alive until
/// the kernel has run, so the buffer may be dropped at once.
#[derive(Clone, Debug)]
pub enum Arg<'a> {
    /// The device address `offset` bytes into `buffer`, for `.u64` pointer parameters.
    Pointer { buffer: &'a ptxvk_vk::Buffer, offset: u64 },
    /// By-value bytes: a scalar, or a struct or array parameter.
    Bytes(Vec<u8>),
}

impl Arg<'_> {
    /// A by-value argument from any plain-old-data value (little-endian hosts, as every
    /// Vulkan host ptxvk supports).
    pub fn value<T: Pod>(v: T) -> Arg<'static> {
        Arg::Bytes(bytemuck::bytes_of(&v).to_vec())
    }
}

impl<'a, T: Pod> From<&'a DeviceBuffer<T>> for Arg<'a> {
    fn from(b: &'a DeviceBuffer<T>) -> Arg<'a> {
        Arg::Pointer { buffer: &b.buf, offset: 0 }
    }
}

impl<'a, T: Pod> From<DeviceSlice<'a, T>> for Arg<'a> {
    fn from(s: DeviceSlice<'a, T>) -> Arg<'a> {
        Arg::Pointer { buffer: &s.buffer.buf, offset: s.byte_offset() }
    }
}

impl<'a> From<&'a ptxvk_vk::Buffer> for Arg<'a> {
    fn from(b: &'a ptxvk_vk::Buffer) -> Arg<'a> {
        Arg::Pointer { buffer: b, offset: 0 }
    }
}

/// A texture or surface object (`cudaTextureObject_t`/`cudaSurfaceObject_t`): ptxvk's
/// descriptor ([`ptxvk_abi::texture`]) in device memory, whose address is the 64-bit
/// handle a kernel receives (`Arg::from(&object)`). The texels stay where
/// [`TextureDesc::address`] points: keep that memory alive while kernels use the object.
pub struct TextureObject {
    descriptor: DeviceBuffer<u8>,
}

/// A separate sampler (`.samplerref`, PTX's independent texture mode).
pub use ptxvk_abi::texture::Sampler as SamplerDesc;
/// The description of a texture or surface: ptxvk's [`ptxvk_abi::texture::Texture`].
pub use ptxvk_abi::texture::Texture as TextureDesc;
pub use ptxvk_abi::texture::{AddressMode, ChannelKind};

impl std::fmt::Debug for TextureObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TextureObject({:#x})", self.handle())
    }
}

impl TextureObject {
    /// The 64-bit handle kernels receive.
    pub fn handle(&self) -> u64 {
        self.descriptor.address()
    }
}

impl Device {
    /// A texture or surface object for `desc`, which must describe texels this device
    /// can read (the CUDA driver API's rules for texture objects, [`TextureDesc::encode`]).
    pub fn texture_object(&self, desc: &TextureDesc) -> Result<TextureObject, Error> {
        let bytes = desc.encode_object().map_err(Error::Launch)?;
        Ok(TextureObject { descriptor: self.buffer_from(&bytes)? })
    }

    /// A separate sampler: a handle for `.samplerref` parameters and variables
    /// (`tex` of the form `[texture, sampler, coordinates]`), which has no texels.
    pub fn sampler_object(&self, desc: &SamplerDesc) -> Result<TextureObject, Error> {
        Ok(TextureObject { descriptor: self.buffer_from(&desc.encode())? })
    }
}

impl From<&TextureObject> for Arg<'_> {
    fn from(t: &TextureObject) -> Self {
        Arg::value(t.handle())
    }
}

macro_rules! value_arg {
    ($($t:ty),*) => {$(
        impl From<$t> for Arg<'_> {
            fn from(v: $t) -> Self {
                Arg::value(v)
            }
        }
    )*};
}
value_arg!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, half::f16, half::bf16);

/// Grid and block dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3(pub [u32; 3]);

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3([x, 1, 1])
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3([x, y, 1])
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3([x, y, z])
    }
}
impl From<[u32; 3]> for Dim3 {
    fn from(d: [u32; 3]) -> Dim3 {
        Dim3(d)
    }
}

/// A PTX module loaded on a device: compiled once, one pipeline per block size.
///
/// Its kernels are compiled with it ([`Module::link`]), or each when it is first looked
/// up ([`Module::link_lazy`], CUDA's lazy loading).
#[derive(Debug)]
pub struct Module {
    device: Device,
    /// Where kernels not compiled yet come from; `None` when every kernel was compiled
    /// with the module.
    lazy: Option<LazyModule>,
    /// The kernels, in source order: those that compiled, for a module compiled whole.
    names: Vec<String>,
    /// Each kernel's code, once compiled.
    code: Vec<OnceLock<Code>>,
    /// Kernels of a module compiled whole that could not be compiled.
    failed: Vec<crate::compile::FailedKernel>,
    /// One kernel compiles at a time (`lazy`): a second lookup of the same kernel waits
    /// for the first instead of compiling it again.
    compiling: Mutex<()>,
    /// The layout of the module-scope `.global`/`.const` variables.
    layout: ptxvk_lower::globals::ModuleData,
    /// The module data (`.global`/`.const` variables), uploaded once when the module is
    /// loaded so that `.global` values persist across launches.
    data: Option<ptxvk_vk::Buffer>,
    /// The device's 32-bit address window, when the module has 32-bit addresses.
    window: Option<ptxvk_vk::Window>,
    /// The device heap of `malloc` (`ptxvk_abi::system`), made when the first kernel
    /// that calls it is compiled; like module data it persists across launches.
    heap: OnceLock<ptxvk_vk::Buffer>,
    /// System areas (parameter block + trap/assert/printf area) of kernels that have one,
    /// in host memory so the host reads them without a copy; reused once a launch's
    /// completion check has read its area.
    system_areas: Arc<Mutex<Vec<ptxvk_vk::Buffer>>>,
    /// Launch arenas of kernels that launch kernels (`device_launch`), reused.
    launch_arenas: Mutex<Vec<ptxvk_vk::Buffer>>,
    /// The module's data image, for formatting `printf` strings after launches that
    /// complete asynchronously.
    strings: Arc<Vec<u8>>,
}

/// A kernel's code: the compilation it came from (all of a module's kernels share one
/// when the module was compiled whole; a kernel compiled on first use has its own) and
/// its pipeline.
#[derive(Debug)]
struct Code {
    unit: Arc<Compiled>,
    /// Its index in `unit.spirv.kernels`.
    at: usize,
    program: ptxvk_vk::Program,
}

impl Code {
    fn info(&self) -> &KernelInfo {
        &self.unit.spirv.kernels[self.at]
    }
}

/// Creates the pipeline of kernel `at` of `compiled` on `device`.
fn program(device: &Device, compiled: &Arc<Compiled>, at: usize) -> Result<Code, Error> {
    check_warp_mode(device.info(), compiled.target.warp_mode)?;
    let needs = compiled.spirv.requirements.features();
    let subgroup_size = required_subgroup_size(device.info(), compiled.target.warp_mode);
    let name = &compiled.spirv.kernels[at].name;
    let words = &compiled.spirv.words;
    let program =
        device.inner.create_program_with_subgroup_size(words, name, &needs, subgroup_size)?;
    Ok(Code { unit: Arc::clone(compiled), at, program })
}

impl Module {
    /// Compiles `ptx` and creates its programs on `device`. Rejected PTX is
    /// [`Error::Ptx`] with rendered diagnostics; missing device features are
    /// [`Error::Runtime`] naming them. A kernel that cannot be compiled does not fail
    /// the module: looking it up ([`Module::kernel`]) returns its diagnostics.
    pub fn from_ptx(device: &Device, ptx: &str) -> Result<Module, Error> {
        Self::from_ptx_named(device, "<ptx>", ptx)
    }

    /// Like [`Module::from_ptx`], with the file name used in diagnostics.
    pub fn from_ptx_named(device: &Device, name: &str, ptx: &str) -> Result<Module, Error> {
        Self::link(device, &SourceMap::new([(name, ptx)]))
    }

    /// Compiles several PTX files linked into one program (the linker: `.extern`,
    /// `.weak` and `.common` symbols resolve across files, see
    /// [`ptxvk_frontend::link()`]) and creates its programs on `device`. A program may
    /// have no kernels (only device functions and variables).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), ptxvk::Error> {
    /// let device = ptxvk::Device::default_device()?;
    /// let main = std::fs::read_to_string("main.ptx").unwrap();
    /// let lib = std::fs::read_to_string("lib.ptx").unwrap();
    /// let sources = ptxvk::SourceMap::new([("main.ptx", &main), ("lib.ptx", &lib)]);
    /// let module = ptxvk::Module::link(&device, &sources)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn link(device: &Device, sources: &SourceMap) -> Result<Module, Error> {
        let compiled = compile_module(sources, device.target())?;
        Self::from_compiled(device, compiled)
    }

    /// Like [`Module::link`], but each kernel is compiled, and its pipeline created,
    /// when it is first looked up ([`Module::kernel`]): loading checks the program as a
    /// whole (syntax, module-scope variables) and a kernel's own errors come from its
    /// lookup. This is CUDA's lazy loading (`CUDA_MODULE_LOADING=LAZY`, CUDA 12.2's
    /// default), for libraries that ship hundreds of kernels of which a program uses
    /// a few ([`LazyModule`]).
    pub fn link_lazy(device: &Device, sources: SourceMap) -> Result<Module, Error> {
        let lazy = LazyModule::new(sources, device.target())?;
        check_warp_mode(device.info(), lazy.target().warp_mode)?;
        let names = lazy.kernel_names().to_vec();
        let layout = lazy.data().clone();
        let code = names.iter().map(|_| OnceLock::new()).collect();
        let needs_window = lazy.address_size() == 32 && !names.is_empty();
        Self::with_code(device, Some(lazy), names, code, Vec::new(), layout, needs_window)
    }

    /// Loads an already compiled module (its warp mode must suit the device).
    pub fn from_compiled(device: &Device, compiled: Compiled) -> Result<Module, Error> {
        let compiled = Arc::new(compiled);
        let code = (0..compiled.spirv.kernels.len())
            .map(|at| program(device, &compiled, at))
            .collect::<Result<Vec<_>, _>>()?;
        let names = compiled.spirv.kernels.iter().map(|k| k.name.clone()).collect();
        let needs_window = compiled.spirv.kernels.iter().any(|k| k.address_size == 32);
        let code = code.into_iter().map(OnceLock::from).collect();
        let failed = compiled.failed.clone();
        let layout = compiled.data.clone();
        let module = Self::with_code(device, None, names, code, failed, layout, needs_window)?;
        module.make_heap(&compiled)?;
        Ok(module)
    }

    fn with_code(
        device: &Device,
        lazy: Option<LazyModule>,
        names: Vec<String>,
        code: Vec<OnceLock<Code>>,
        failed: Vec<crate::compile::FailedKernel>,
        layout: ptxvk_lower::globals::ModuleData,
        needs_window: bool,
    ) -> Result<Module, Error> {
        // 32-bit addresses are offsets into the device's address window, where the
        // module's data and every later buffer go.
        let window = if needs_window { Some(device.address_window()?) } else { None };
        // The module data, with the addresses of variables its initializers name
        // patched in once the buffer's address is known.
        let data = if layout.image.is_empty() {
            None
        } else {
            let bytes = layout.image.len() as u64;
            // `__managed__` variables: the host uses their device addresses (CUDA's
            // runtime hands them to the program), so the data goes in managed memory.
            let buf = if layout.vars.iter().any(|v| v.managed) {
                device.inner.alloc_managed(bytes)?
            } else {
                device.alloc(bytes)?
            };
            let mut image = layout.image.clone();
            for r in &layout.relocations {
                let at = r.at as usize;
                let addr = buf.address() + u64::from(r.target);
                image[at..at + 8].copy_from_slice(&addr.to_le_bytes());
            }
            device.inner.upload(&buf, 0, &image)?;
            Some(buf)
        };
        let strings = Arc::new(layout.image.clone());
        Ok(Module {
            device: device.clone(),
            lazy,
            names,
            code,
            failed,
            compiling: Mutex::default(),
            layout,
            data,
            heap: OnceLock::new(),
            window,
            system_areas: Arc::default(),
            launch_arenas: Mutex::default(),
            strings,
        })
    }

    /// Makes the device heap when a kernel of `compiled` calls `malloc`.
    fn make_heap(&self, compiled: &Compiled) -> Result<(), Error> {
        if self.heap.get().is_none() && compiled.spirv.kernels.iter().any(|k| k.heap) {
            let _ = self.heap.set(self.device.alloc(system::HEAP_BYTES)?);
        }
        Ok(())
    }

    /// Kernel `index`'s code, compiled now if the module is lazy and it was not yet.
    fn code(&self, index: usize) -> Result<&Code, Error> {
        let slot = self.code.get(index).ok_or_else(|| Error::NoSuchKernel {
            name: format!("#{index}"),
            available: self.names.clone(),
        })?;
        if let Some(code) = slot.get() {
            return Ok(code);
        }
        let (Some(lazy), Some(name)) = (&self.lazy, self.names.get(index)) else {
            return Err(Error::Launch(format!("kernel #{index} of the module has no code")));
        };
        let _one_at_a_time = self.compiling.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(code) = slot.get() {
            return Ok(code);
        }
        let compiled = Arc::new(lazy.compile(name)?);
        self.make_heap(&compiled)?;
        // The unit holds the kernels a device-side launcher may launch too; each keeps
        // its own slot, compiled alone when first looked up.
        let at = compiled.spirv.kernels.iter().position(|k| k.name == *name);
        let at = at.ok_or_else(|| Error::Launch(format!("kernel `{name}` compiled to no code")))?;
        let code = program(&self.device, &compiled, at)?;
        Ok(slot.get_or_init(|| code))
    }

    /// Reads the current bytes of module-scope variable `name` (`.global` or `.const`).
    pub fn read_global(&self, name: &str) -> Result<Vec<u8>, Error> {
        let (var, buf) = self.global(name)?;
        Ok(self.device.inner.download(buf, u64::from(var.offset), u64::from(var.size))?)
    }

    /// Overwrites module-scope variable `name` with `bytes` (which must fit it); later
    /// launches see the new value.
    pub fn write_global(&self, name: &str, bytes: &[u8]) -> Result<(), Error> {
        let (var, buf) = self.global(name)?;
        if bytes.len() as u64 > u64::from(var.size) {
            return Err(Error::Launch(format!(
                "`{name}` holds {} bytes, not {}",
                var.size,
                bytes.len()
            )));
        }
        Ok(self.device.inner.upload(buf, u64::from(var.offset), bytes)?)
    }

    /// Binds a module's texture or surface reference (`.texref`, `.surfref`, or a
    /// variable of the deprecated `.tex` space) to `object`: the 8-byte variable of that
    /// name gets its handle, which later launches read (`sema::texture`).
    pub fn bind_texture(&self, name: &str, object: &TextureObject) -> Result<(), Error> {
        self.write_global(name, &object.handle().to_le_bytes())
    }

    fn global(
        &self,
        name: &str,
    ) -> Result<(&ptxvk_lower::globals::GlobalVar, &ptxvk_vk::Buffer), Error> {
        match (self.layout.get(name), &self.data) {
            (Some(v), Some(b)) => Ok((v, b)),
            _ => Err(Error::Launch(format!(
                "the module has no `.global` or `.const` variable `{name}`"
            ))),
        }
    }

    /// The layout of the module-scope `.global`/`.const` variables.
    pub fn data_layout(&self) -> &ptxvk_lower::globals::ModuleData {
        &self.layout
    }

    /// Whether the module data's device addresses are host pointers too (where its
    /// `__managed__` variables are, the host reads and writes them there).
    pub fn data_is_host_addressable(&self) -> bool {
        self.data.as_ref().is_some_and(|b| b.host_ptr().map(|p| p as u64) == Some(b.address()))
    }

    /// The SPIR-V and layout kernel `name` was compiled to (compiling it now in a lazy
    /// module): for a module compiled whole, the module's.
    pub fn compiled(&self, name: &str) -> Result<&Compiled, Error> {
        Ok(&self.kernel(name)?.code.unit)
    }

    /// Kernel names in source order (for a module compiled whole, those that compiled).
    pub fn kernel_names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    /// The kernel `name`, compiled now in a lazy module; a kernel of the module that
    /// could not be compiled is its diagnostics ([`Error::Ptx`]).
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>, Error> {
        if let Some(index) = self.names.iter().position(|k| k == name) {
            return self.kernel_at(index);
        }
        if let Some(failed) = self.failed.iter().find(|k| k.name == name) {
            return Err(failed.error());
        }
        Err(Error::NoSuchKernel {
            name: name.to_string(),
            available: self.kernel_names().iter().map(|s| s.to_string()).collect(),
        })
    }

    /// The kernels of a module compiled whole that could not be compiled, with their
    /// diagnostics (a lazy module's kernels report theirs when looked up).
    pub fn failed_kernels(&self) -> &[crate::compile::FailedKernel] {
        &self.failed
    }

    /// The kernel at `index` of [`Module::kernel_names`], compiled now in a lazy module.
    pub fn kernel_at(&self, index: usize) -> Result<Kernel<'_>, Error> {
        Ok(Kernel { module: self, index, code: self.code(index)? })
    }

    /// Whether the kernel at `index` has been compiled (always, for a module compiled
    /// whole): `cuFuncIsLoaded`.
    pub fn is_compiled(&self, index: usize) -> bool {
        self.code.get(index).is_some_and(|c| c.get().is_some())
    }

    /// The device address and size in bytes of module-scope variable `name` (`.global`
    /// or `.const`), as `cuModuleGetGlobal` reports them.
    pub fn global_address(&self, name: &str) -> Result<(u64, u32), Error> {
        let (var, buf) = self.global(name)?;
        Ok((buf.address() + u64::from(var.offset), var.size))
    }
}

/// One kernel of a [`Module`].
#[derive(Clone, Copy, Debug)]
pub struct Kernel<'m> {
    module: &'m Module,
    index: usize,
    code: &'m Code,
}

impl<'m> Kernel<'m> {
    pub fn info(&self) -> &'m KernelInfo {
        self.code.info()
    }

    /// Lays out `args` in the kernel's parameter block, checking each against its
    /// parameter's size.
    pub fn param_block(&self, args: &[Arg<'_>]) -> Result<Vec<u8>, Error> {
        let info = self.info();
        let params = &info.abi.params;
        if args.len() != params.len() {
            return Err(Error::Launch(format!(
                "kernel `{}` takes {} argument(s), {} given",
                info.name,
                params.len(),
                args.len()
            )));
        }
        let mut block = vec![0u8; info.abi.size as usize];
        let not_a_pointer = |i: usize, bits: u32| {
            let p = &params[i];
            Error::Launch(format!(
                "argument {i} of `{}` is a buffer, but parameter `{}` is {} ({} bytes), not a {bits}-bit pointer",
                info.name,
                p.name,
                describe(p.elem, p.count),
                p.size
            ))
        };
        for (i, (arg, p)) in args.iter().zip(params).enumerate() {
            let pointer;
            let pointer32;
            let bytes: &[u8] = match arg {
                // A module with 32-bit addresses takes the buffer's offset in the
                // address window (`Device::address_window`).
                Arg::Pointer { buffer, offset } if info.address_size == 32 => {
                    let address = buffer.address() + offset;
                    let window = self.module.window.as_ref();
                    // The whole buffer, not only the address: a buffer allocated
                    // outside may start right at the window's end (mmap places the
                    // window just below earlier allocations), where an address alone
                    // would pass as one past the window's last byte.
                    let inside =
                        |w: &&ptxvk_vk::Window| w.contains(buffer.address(), buffer.size());
                    let Some(w) = window.filter(inside) else {
                        return Err(Error::Launch(format!(
                            "argument {i} of `{}` is a buffer outside the 32-bit address window: \
                             a module with 32-bit addresses takes buffers allocated after it \
                             was loaded",
                            info.name
                        )));
                    };
                    if p.size != 4 || p.count != 1 {
                        return Err(not_a_pointer(i, 32));
                    }
                    pointer32 = ((address - w.base()) as u32).to_le_bytes();
                    &pointer32
                }
                Arg::Pointer { buffer, offset } => {
                    if p.size != 8 || p.count != 1 {
                        return Err(not_a_pointer(i, 64));
                    }
                    pointer = (buffer.address() + offset).to_le_bytes();
                    &pointer
                }
                Arg::Bytes(b) => b,
            };
            if bytes.len() != p.size as usize {
                return Err(Error::Launch(format!(
                    "argument {i} of `{}` has {} byte(s), but parameter `{}` is {} ({} bytes)",
                    info.name,
                    bytes.len(),
                    p.name,
                    describe(p.elem, p.count),
                    p.size
                )));
            }
            let off = p.offset as usize;
            block[off..off + bytes.len()].copy_from_slice(bytes);
        }
        Ok(block)
    }

    /// Launches the kernel on the default stream and waits for it: `grid` blocks of
    /// `block` threads, with `shared_bytes` of dynamic (`extern .shared`) memory.
    /// `kernel_ms` of the result is 0: [`Kernel::launch_timed`] measures it.
    pub fn launch(
        &self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: &[Arg<'_>],
    ) -> Result<LaunchStats, Error> {
        self.launch_and_wait(grid.into().0, block.into().0, shared_bytes, args, false)
    }

    /// [`Kernel::launch`], also measuring the kernel's GPU time with timestamps (slower:
    /// on lavapipe a timestamp waits for all earlier work).
    pub fn launch_timed(
        &self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: &[Arg<'_>],
    ) -> Result<LaunchStats, Error> {
        self.launch_and_wait(grid.into().0, block.into().0, shared_bytes, args, true)
    }

    fn launch_and_wait(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        args: &[Arg<'_>],
        timed: bool,
    ) -> Result<LaunchStats, Error> {
        let stream = self.module.device.default_stream();
        if self.launches_kernels() {
            let keep = Prepared::arguments(args);
            let run = device_launch::TreeRun { stream: &stream, timed, print: false, keep };
            return self.run_tree(&run, grid, block, shared_bytes, self.param_block(args)?);
        }
        let prepared = self.prepare(grid, block, shared_bytes, self.param_block(args)?)?;
        let keep = prepared.keep(args);
        let keep: Vec<&ptxvk_vk::Buffer> = keep.iter().collect();
        // Kernels with a system area find their parameters in it.
        let params = prepared.system.is_none().then_some(prepared.params.as_slice());
        let stats = stream.launch_and_wait(self.program(), &prepared.cfg, params, &keep, timed)?;
        let mut stats = LaunchStats {
            kernel_ms: stats.kernel_ms,
            dispatches: stats.dispatches,
            ..Default::default()
        };
        if let Some(area) = prepared.system {
            let report = area.read()?;
            self.module.system_areas_return(area.buffer);
            stats.printf.clone_from(&report.printf);
            if let Some(error) = report.error() {
                return Err(error);
            }
        }
        Ok(stats)
    }

    /// Enqueues the kernel on `stream` and returns at once. The buffers named by `args`
    /// stay alive until the kernel has run. A kernel's `printf` output is printed to
    /// standard output when it completes, and a failed `assert` or `trap` is reported by
    /// the stream's (or the device's) next `synchronize` as [`Error::KernelFailed`], as
    /// CUDA does.
    pub fn launch_on(
        &self,
        stream: &Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: &[Arg<'_>],
    ) -> Result<(), Error> {
        let (grid, block) = (grid.into().0, block.into().0);
        if self.launches_kernels() {
            let keep = Prepared::arguments(args);
            let run = device_launch::TreeRun { stream, timed: false, print: true, keep };
            self.run_tree(&run, grid, block, shared_bytes, self.param_block(args)?)?;
            return Ok(());
        }
        let prepared = self.prepare(grid, block, shared_bytes, self.param_block(args)?)?;
        let keep = prepared.keep(args);
        self.enqueue(stream, prepared, &keep)
    }

    /// [`Kernel::launch_on`] with a parameter block laid out by the caller (CUDA's
    /// `kernelParams` or `extra` forms): `params` must be exactly the kernel's
    /// parameter-block size. Buffers the block points to are not known to the launch: pass
    /// them in `keep` to keep them alive until it has run.
    pub fn launch_params_on(
        &self,
        stream: &Stream,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        params: Vec<u8>,
        keep: &[ptxvk_vk::Buffer],
    ) -> Result<(), Error> {
        let size = self.info().abi.size as usize;
        if params.len() != size {
            return Err(Error::Launch(format!(
                "kernel `{}` has a parameter block of {size} bytes, {} given",
                self.info().name,
                params.len()
            )));
        }
        let (grid, block) = (grid.into().0, block.into().0);
        if self.launches_kernels() {
            let run =
                device_launch::TreeRun { stream, timed: false, print: true, keep: keep.to_vec() };
            self.run_tree(&run, grid, block, shared_bytes, params)?;
            return Ok(());
        }
        let prepared = self.prepare(grid, block, shared_bytes, params)?;
        let mut all = prepared.keep(&[]);
        all.extend(keep.iter().cloned());
        self.enqueue(stream, prepared, &all)
    }

    fn enqueue(
        &self,
        stream: &Stream,
        prepared: Prepared<'_>,
        keep: &[ptxvk_vk::Buffer],
    ) -> Result<(), Error> {
        let keep: Vec<&ptxvk_vk::Buffer> = keep.iter().collect();
        match prepared.system {
            None => {
                stream.launch_with_params(self.program(), &prepared.cfg, &prepared.params, &keep)?
            }
            Some(area) => {
                stream.launch(self.program(), &prepared.cfg, &keep)?;
                let areas = Arc::clone(&self.module.system_areas);
                stream.on_complete(Box::new(move || {
                    let report = area.read();
                    areas.lock().unwrap_or_else(PoisonError::into_inner).push(area.buffer);
                    let report = report.map_err(|e| ptxvk_vk::Error::Deferred(Box::new(e)))?;
                    print!("{}", report.printf);
                    match report.error() {
                        Some(error) => Err(ptxvk_vk::Error::Deferred(Box::new(error))),
                        None => Ok(()),
                    }
                }))?;
            }
        }
        Ok(())
    }

    fn program(&self) -> &'m ptxvk_vk::Program {
        &self.code.program
    }

    /// Checks the launch shape against the kernel and lays out its parameters (and, for
    /// kernels with a system area, fills one).
    fn prepare(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        params: Vec<u8>,
    ) -> Result<Prepared<'m>, Error> {
        self.prepare_with(grid, block, shared_bytes, params, None)
    }

    /// [`Self::prepare`]; a checked launch may also access `arena` (the launch arena of
    /// a kernel that launches kernels, `device_launch`).
    fn prepare_with(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        params: Vec<u8>,
        arena: Option<&ptxvk_vk::Buffer>,
    ) -> Result<Prepared<'m>, Error> {
        let info = self.info();
        if let Some(refused) = self.module.device.refusal(&self.code.unit.spirv) {
            return Err(refused);
        }
        if let Some(req) = info.reqntid {
            if block != req {
                return Err(Error::Launch(format!(
                    "kernel `{}` requires block size {:?} (.reqntid), got {:?}",
                    info.name, req, block
                )));
            }
        }
        if let Some(max) = info.maxntid {
            let n = |d: [u32; 3]| d.iter().map(|&x| x as u64).product::<u64>();
            if n(block) > n(max) {
                return Err(Error::Launch(format!(
                    "kernel `{}` allows at most {} threads per block (.maxntid), got {}",
                    info.name,
                    n(max),
                    n(block)
                )));
            }
        }
        if info.grid_sync {
            let blocks: u64 = grid.iter().map(|&g| u64::from(g)).product();
            let resident = self.module.device.info().resident_workgroups;
            if blocks > u64::from(resident) {
                return Err(Error::Launch(format!(
                    "kernel `{}` synchronizes its grid (`grid.sync()`, `cudaCGSynchronize`), \
                     so all {blocks} blocks must run at once; this device guarantees \
                     {resident} (DeviceInfo::resident_workgroups)",
                    info.name
                )));
            }
        }
        let total_shared = if shared_bytes > 0 {
            info.dynamic_shared_offset
                .checked_add(shared_bytes)
                .ok_or_else(|| Error::Launch("shared memory size overflows".into()))?
        } else {
            info.static_shared_bytes
        };
        if info.race_shadow {
            self.racecheck_fits(total_shared)?;
        }
        let module = self.module;
        let mut cfg = LaunchConfig {
            grid,
            block,
            shared_bytes: total_shared,
            dynamic_shared_bytes: shared_bytes,
            param_address: 0,
            const_address: module.data.as_ref().map_or(0, |b| b.address()),
            window_base: module.window.as_ref().map_or(0, |w| w.base()),
            shared_in_device_memory: info.shared_in_device_memory,
        };
        let check = (!info.check_sites.is_empty()).then(|| {
            let dynamic =
                if shared_bytes > 0 { total_shared - info.dynamic_shared_offset } else { 0 };
            let mut regions = self.regions(&params);
            regions.extend(arena.map(|a| Region {
                range: ptxvk_vk::Range { start: a.address(), size: a.size() },
                name: "holding the device-side launches' parameter buffers".to_string(),
                // The kernel writes its parameter buffers there.
                internal: false,
                shadow: 0,
            }));
            Box::new(CheckContext {
                kernel: info.name.clone(),
                sites: info.check_sites.clone(),
                sources: self
                    .code
                    .unit
                    .check_sources
                    .get(self.code.at)
                    .cloned()
                    .unwrap_or_default(),
                param_ranges: self.param_ranges(&params, &regions),
                regions,
                freed: module.device.inner.freed_allocations(),
                shared: (total_shared - dynamic, dynamic),
                local_bytes: info.local_bytes,
                param_bytes: info.abi.size,
                limit: module.device.check().limit,
                block,
            })
        });
        let system = if info.system {
            let area = module.system_area(self.code, &params, check)?;
            cfg.param_address = area.buffer.address();
            Some(area)
        } else {
            None
        };
        Ok(Prepared { module, cfg, params, system })
    }

    /// Whether a racechecked launch with `total_shared` bytes of shared memory can keep
    /// its shadow (four words per word) in shared memory too.
    fn racecheck_fits(&self, total_shared: u32) -> Result<(), Error> {
        let info = self.module.device.info();
        let words = u64::from(ptxvk_vk::abi::shared_words(total_shared));
        let needed = u64::from(total_shared) + 16 * words;
        let max = u64::from(info.limits.max_shared_memory_bytes);
        if needed > max {
            return Err(Error::Launch(format!(
                "racecheck keeps a shadow of 16 bytes per 4 bytes of shared memory: kernel \
                 `{}`'s {total_shared} bytes need {needed} bytes in all, more than the \
                 device's {max} (maxComputeSharedMemorySize); run it with memcheck only",
                self.info().name
            )));
        }
        Ok(())
    }

    /// The pointer-sized parameters of the launch with parameter block `params`: their
    /// index and value as a device address (a window offset made one).
    fn pointer_arguments(&self, params: &[u8]) -> Vec<(usize, u64)> {
        let info = self.info();
        let pointer_bytes = if info.address_size == 32 { 4 } else { 8 };
        let window = self.module.window.as_ref().map_or(0, |w| w.base());
        info.abi
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.size == pointer_bytes && p.count == 1)
            .filter_map(|(i, p)| {
                let at = p.offset as usize;
                let bytes = params.get(at..at + pointer_bytes as usize)?;
                let mut value = [0u8; 8];
                value[..bytes.len()].copy_from_slice(bytes);
                let value = u64::from_le_bytes(value);
                Some((i, if pointer_bytes == 4 { window + value } else { value }))
            })
            .collect()
    }

    /// Per parameter, the allocation its pointer value points into, or (0, 0).
    fn param_ranges(&self, params: &[u8], regions: &[Region]) -> Vec<(u64, u64, u64)> {
        let mut ranges = vec![(0, 0, 0); self.info().abi.params.len()];
        for (i, value) in self.pointer_arguments(params) {
            let holder = regions
                .iter()
                .find(|r| (r.range.start..r.range.start + r.range.size).contains(&value));
            if let Some(r) = holder {
                ranges[i] = (r.range.start, r.range.start + r.range.size, r.shadow);
            }
        }
        ranges
    }

    /// What a checked launch with parameter block `params` may access, named for its
    /// report: every live allocation (the parameter block is added with its buffer).
    fn regions(&self, params: &[u8]) -> Vec<Region> {
        let module = self.module;
        let arguments = self.pointer_arguments(params);
        let data = module.data.as_ref().map(|b| b.address());
        let heap = module.heap.get().map(|b| b.address());
        let vk = &module.device.inner;
        let initcheck = module.device.check().initcheck;
        vk.live_allocations()
            .into_iter()
            .map(|range| {
                let inside = |a: u64| (range.start..range.start + range.size.max(1)).contains(&a);
                let name = if let Some((i, _)) = arguments.iter().find(|(_, a)| inside(*a)) {
                    format!("passed as argument {i}")
                } else if data == Some(range.start) {
                    "of the module's `.global`/`.const` variables".to_string()
                } else if heap == Some(range.start) {
                    "of the device heap (`malloc`)".to_string()
                } else {
                    "not passed to this launch".to_string()
                };
                let shadow = if initcheck { vk.shadow_of(range.start) } else { 0 };
                Region { range, name, internal: false, shadow }
            })
            .collect()
    }
}

/// A launch ready to enqueue.
struct Prepared<'m> {
    module: &'m Module,
    cfg: LaunchConfig,
    params: Vec<u8>,
    system: Option<SystemArea>,
}

impl Prepared<'_> {
    /// The buffers the launch uses: its arguments', the module data and heap, and the
    /// system area.
    fn keep(&self, args: &[Arg<'_>]) -> Vec<ptxvk_vk::Buffer> {
        let mut keep = Self::arguments(args);
        keep.extend(self.module.data.iter().chain(self.module.heap.get()).cloned());
        keep.extend(self.system.as_ref().map(|s| s.buffer.clone()));
        keep
    }
}

impl Prepared<'_> {
    /// The buffers `args` pass.
    fn arguments(args: &[Arg<'_>]) -> Vec<ptxvk_vk::Buffer> {
        args.iter()
            .filter_map(|a| match a {
                Arg::Pointer { buffer, .. } => Some((*buffer).clone()),
                Arg::Bytes(_) => None,
            })
            .collect()
    }
}

/// A launch's parameter block followed by its system area (traps, assertions, printf),
/// in host memory.
struct SystemArea {
    buffer: ptxvk_vk::Buffer,
    /// Offset of the system area (after the parameter block).
    offset: u32,
    kernel: String,
    strings: Arc<Vec<u8>>,
    data_base: u64,
    /// A checked launch's context for its report.
    check: Option<Box<CheckContext>>,
    /// Where the kernel's guarded loops are, for a loop-limit failure.
    loops: Vec<crate::check::SiteSource>,
    /// Where the kernel's wait sites are, for a stuck block's failure.
    waits: Vec<crate::check::SiteSource>,
}

/// What a system area reported.
struct SystemReport {
    printf: String,
    failure: Option<String>,
    /// A checked launch's report of the accesses it refused.
    violations: Option<crate::check::CheckReport>,
}

impl SystemReport {
    /// The error the launch fails with, if any: a refused access comes first, since
    /// what follows it (a trap, say) may be its consequence.
    fn error(self) -> Option<Error> {
        let output = self.printf;
        match (self.violations, self.failure) {
            (Some(report), _) => Some(Error::CheckFailed { report: Box::new(report), output }),
            (None, Some(message)) => Some(Error::KernelFailed { message, output }),
            (None, None) => None,
        }
    }
}

impl SystemArea {
    /// Decodes the area after the launch completed.
    fn read(&self) -> Result<SystemReport, Error> {
        let mut area = vec![0u8; system::HEADER as usize];
        self.buffer.read_mapped(u64::from(self.offset), &mut area)?;
        let at = system::PRINTF_USED as usize;
        let used =
            area.get(at..at + 4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes);
        let records = used.min(system::PRINTF_CAPACITY) as usize;
        if records > 0 {
            let start = area.len();
            area.resize(start + records, 0);
            self.buffer.read_mapped(u64::from(self.offset + system::HEADER), &mut area[start..])?;
        }
        let report = system::decode(&area);
        let strings = printf::Strings { image: &self.strings, base: self.data_base };
        let violations = match &self.check {
            Some(check) => self.violations(check)?,
            None => None,
        };
        Ok(SystemReport {
            printf: printf::output(&report, &strings),
            failure: report.failure.map(|f| {
                printf::failure_message(&self.kernel, &f, &strings, &self.loops, &self.waits)
            }),
            violations,
        })
    }

    /// The report of the accesses a checked launch refused, if it refused any.
    fn violations(&self, check: &CheckContext) -> Result<Option<crate::check::CheckReport>, Error> {
        // The violation count, then the record count (`ptxvk_abi::system`).
        const _: () = assert!(system::CHECK_SLOTS == system::CHECK_COUNT + 4);
        let mut counts = [0u8; 8];
        self.buffer.read_mapped(u64::from(self.offset + system::CHECK_COUNT), &mut counts)?;
        let [c0, c1, c2, c3, s0, s1, s2, s3] = counts;
        if u32::from_le_bytes([c0, c1, c2, c3]) == 0 {
            return Ok(None);
        }
        let kept = u32::from_le_bytes([s0, s1, s2, s3]).min(system::CHECK_CAPACITY);
        let end = system::CHECK_RECORDS + kept * system::CHECK_RECORD;
        let mut area = vec![0u8; end as usize];
        self.buffer.read_mapped(u64::from(self.offset), &mut area)?;
        let (count, records) = system::decode_violations(&area);
        Ok(crate::check::report(check, count, &records))
    }
}

impl Module {
    /// A system area holding `params`, its header zeroed but for the heap address; for
    /// a checked launch, with its allocation table (the parameter block added).
    fn system_area(
        &self,
        code: &Code,
        params: &[u8],
        mut check: Option<Box<CheckContext>>,
    ) -> Result<SystemArea, Error> {
        let kernel = &code.info().name;
        let offset = system::offset(params.len() as u32);
        // A checked launch's table goes after its records; it lists the regions and
        // the parameter block (one more entry).
        let table_at = offset + system::CHECKED_SIZE;
        let table_bytes = check.as_ref().map_or(0, |c| {
            // The regions, the parameter block, the grid workspace, the (0, 0) entry.
            let own = 2 + u64::from(code.info().grid_sync);
            16 + 24 * (c.regions.len() as u64 + own) + 24 * c.param_ranges.len() as u64
        });
        let size = if check.is_some() {
            u64::from(table_at) + table_bytes
        } else {
            u64::from(offset + system::SIZE)
        };
        let reused = {
            let mut areas = self.system_areas.lock().unwrap_or_else(PoisonError::into_inner);
            areas.iter().position(|b| b.size() >= size).map(|i| areas.swap_remove(i))
        };
        let buffer = match reused {
            Some(b) => b,
            None => {
                let b = self.device.inner.alloc_host(size)?;
                b.set_internal();
                b
            }
        };
        let mut head = params.to_vec();
        head.resize((offset + system::HEADER) as usize, 0);
        let heap = self.heap.get().map_or(0, |h| h.address());
        let at = (offset + system::HEAP) as usize;
        head[at..at + 8].copy_from_slice(&heap.to_le_bytes());
        if let Some(check) = check.as_mut() {
            check.regions.push(Region {
                range: ptxvk_vk::Range { start: buffer.address(), size: params.len() as u64 },
                name: "holding the kernel's parameters".to_string(),
                internal: true,
                shadow: 0,
            });
            // The inline grid barrier of cooperative groups counts arrivals in the
            // workspace `%envreg1/2` point at, in this area's header: the kernel writes it.
            if code.info().grid_sync {
                let start = buffer.address() + u64::from(offset + system::GRID_WORKSPACE);
                check.regions.push(Region {
                    range: ptxvk_vk::Range { start, size: 8 },
                    name: "of the grid workspace (cooperative groups' grid barrier)".to_string(),
                    internal: false,
                    shadow: 0,
                });
            }
            let table = crate::check::table(&check.regions);
            buffer.write_mapped(u64::from(table_at), &table)?;
            let at = (offset + system::CHECK_TABLE) as usize;
            let address = buffer.address() + u64::from(table_at);
            head[at..at + 8].copy_from_slice(&address.to_le_bytes());
            // The parameter ranges follow the table.
            let ranges_at = u64::from(table_at) + table.len() as u64;
            // The parameter ranges, then their shadows (`ptxvk_abi::system`).
            let ranges: Vec<u8> = check
                .param_ranges
                .iter()
                .flat_map(|(s, e, _)| s.to_le_bytes().into_iter().chain(e.to_le_bytes()))
                .chain(check.param_ranges.iter().flat_map(|(_, _, shadow)| shadow.to_le_bytes()))
                .collect();
            let at = (offset + system::ALL_WRITTEN) as usize;
            head[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            buffer.write_mapped(ranges_at, &ranges)?;
            let at = (offset + system::CHECK_PARAMS) as usize;
            let address = buffer.address() + ranges_at;
            head[at..at + 8].copy_from_slice(&address.to_le_bytes());
        }
        // The buffer is ours alone: fresh, or returned after its launch completed.
        buffer.write_mapped(0, &head)?;
        Ok(SystemArea {
            buffer,
            offset,
            kernel: kernel.to_owned(),
            strings: Arc::clone(&self.strings),
            data_base: self.data.as_ref().map_or(0, |b| b.address()),
            check,
            loops: code.unit.loop_sources.get(code.at).cloned().unwrap_or_default(),
            waits: code.unit.wait_sources.get(code.at).cloned().unwrap_or_default(),
        })
    }

    fn system_areas_return(&self, buffer: ptxvk_vk::Buffer) {
        self.system_areas.lock().unwrap_or_else(PoisonError::into_inner).push(buffer);
    }
}

fn describe(elem: ScalarType, count: u32) -> String {
    if count == 1 {
        format!("`{}`", elem.directive())
    } else {
        format!("`{}[{count}]`", elem.directive())
    }
}
