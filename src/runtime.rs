//! The Rust API for running PTX kernels, close to what CUDA users know:
//! [`Device`] → [`Module::from_ptx`] → [`Kernel::launch`] with [`DeviceBuffer`]s.

use std::marker::PhantomData;

use ptxvk_frontend::ast::ScalarType;
use ptxvk_spirv::KernelInfo;
use ptxvk_vk::{DeviceInfo, DeviceSelector, Features, LaunchConfig};

use ptxvk_lower::system;

use crate::compile::{compile_with, Compiled, WarpMode};
use crate::printf;
use crate::Error;

/// The warp mode for a device: native when its subgroups are always 32 wide.
pub fn warp_mode_of(info: &DeviceInfo) -> WarpMode {
    const NVIDIA: u32 = 0x10de;
    if info.subgroup_size == 32 && info.vendor_id == NVIDIA {
        WarpMode::Native
    } else {
        WarpMode::Emulated
    }
}

/// Whether modules compiled for `mode` run correctly on a device described by `info`.
pub fn check_warp_mode(info: &DeviceInfo, mode: WarpMode) -> Result<(), Error> {
    match mode.subgroup_size() {
        Some(size) if size != info.subgroup_size => Err(Error::Launch(format!(
            "warp mode `{}` needs subgroups of {size} invocations; {} has {}",
            mode.name(),
            info.name,
            info.subgroup_size
        ))),
        _ => Ok(()),
    }
}

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

/// A Vulkan device that runs kernels.
#[derive(Clone, Debug)]
pub struct Device {
    inner: ptxvk_vk::Device,
}

impl Device {
    /// The device chosen by `PTXVK_DEVICE` (index or name substring), else the first
    /// discrete GPU, integrated GPU, virtual GPU, then CPU implementation (lavapipe).
    pub fn default_device() -> Result<Device, Error> {
        Self::open(&DeviceSelector::from_env())
    }

    pub fn open(selector: &DeviceSelector) -> Result<Device, Error> {
        Ok(Device { inner: ptxvk_vk::Device::open(selector)? })
    }

    /// The warp mode (DESIGN §7) modules get on this device: native where subgroups are
    /// always 32 wide (NVIDIA), emulated elsewhere. (Split and native on devices with
    /// several subgroup sizes need `VK_EXT_subgroup_size_control` in pipeline creation,
    /// which the runtime does not do yet.)
    pub fn warp_mode(&self) -> WarpMode {
        warp_mode_of(self.info())
    }

    /// The runtime device underneath, for launching hand-written SPIR-V under the same
    /// launch ABI (the benchmarks' baselines).
    pub fn vk(&self) -> &ptxvk_vk::Device {
        &self.inner
    }

    pub fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }

    /// A device buffer holding a copy of `data`.
    pub fn buffer_from<T: Element>(&self, data: &[T]) -> Result<DeviceBuffer<T>, Error> {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes_vec()).collect();
        let buf = self.buffer_from_bytes(&bytes)?;
        Ok(DeviceBuffer { buf, len: data.len(), _t: PhantomData })
    }

    /// A zero-filled device buffer of `len` elements.
    pub fn zeroed<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>, Error> {
        let size = (len as u64)
            .checked_mul(T::SIZE as u64)
            .ok_or_else(|| Error::Launch("buffer size overflows".into()))?;
        let buf = self.inner.alloc(size)?;
        Ok(DeviceBuffer { buf, len, _t: PhantomData })
    }

    /// An untyped device buffer holding `bytes`.
    pub fn buffer_from_bytes(&self, bytes: &[u8]) -> Result<ptxvk_vk::Buffer, Error> {
        let buf = self.inner.alloc(bytes.len() as u64)?;
        if !bytes.is_empty() {
            self.inner.upload(&buf, 0, bytes)?;
        }
        Ok(buf)
    }

    /// Reads a whole untyped buffer back.
    pub fn read_bytes(&self, buf: &ptxvk_vk::Buffer) -> Result<Vec<u8>, Error> {
        Ok(self.inner.download(buf, 0, buf.size())?)
    }
}

/// Element types of typed device buffers and scalar kernel arguments.
pub trait Element: Copy + 'static {
    const SIZE: usize;
    fn to_le_bytes_vec(&self) -> Vec<u8>;
    fn from_le_slice(b: &[u8]) -> Self;
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn to_le_bytes_vec(&self) -> Vec<u8> {
                self.to_le_bytes().to_vec()
            }
            fn from_le_slice(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..std::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(a)
            }
        }
        impl From<$t> for Arg {
            fn from(v: $t) -> Arg {
                Arg::Bytes(v.to_le_bytes().to_vec())
            }
        }
    )*};
}
element!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// A typed device buffer of `len` elements of `T`.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    buf: ptxvk_vk::Buffer,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> DeviceBuffer<T> {
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

    /// Copies the buffer back to the host.
    pub fn to_vec(&self, device: &Device) -> Result<Vec<T>, Error> {
        let bytes = device.inner.download(&self.buf, 0, (self.len * T::SIZE) as u64)?;
        Ok(bytes.chunks_exact(T::SIZE).map(T::from_le_slice).collect())
    }
}

/// One kernel argument: a pointer (a buffer's device address) or raw by-value bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A device address, for `.u64` pointer parameters.
    Ptr(u64),
    /// By-value bytes: a scalar, or a struct or array parameter.
    Bytes(Vec<u8>),
}

impl<T: Element> From<&DeviceBuffer<T>> for Arg {
    fn from(b: &DeviceBuffer<T>) -> Arg {
        Arg::Ptr(b.address())
    }
}

impl From<&ptxvk_vk::Buffer> for Arg {
    fn from(b: &ptxvk_vk::Buffer) -> Arg {
        Arg::Ptr(b.address())
    }
}

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
#[derive(Debug)]
pub struct Module {
    device: Device,
    compiled: Compiled,
    programs: Vec<ptxvk_vk::Program>,
    /// The module data (`.global`/`.const` variables), uploaded once when the module is
    /// loaded so that `.global` values persist across launches.
    data: Option<ptxvk_vk::Buffer>,
    /// The device heap of `malloc` (`ptxvk_lower::system`), when a kernel calls it;
    /// like module data it persists across launches.
    heap: Option<ptxvk_vk::Buffer>,
}

impl Module {
    /// Compiles `ptx` and creates its programs on `device`. Rejected PTX is
    /// [`Error::Ptx`] with rendered diagnostics; missing device features are
    /// [`Error::Runtime`] naming them.
    pub fn from_ptx(device: &Device, ptx: &str) -> Result<Module, Error> {
        Self::from_ptx_named(device, "<ptx>", ptx)
    }

    /// Like [`Module::from_ptx`], with the file name used in diagnostics.
    pub fn from_ptx_named(device: &Device, name: &str, ptx: &str) -> Result<Module, Error> {
        let compiled = compile_with(name, ptx, None, device.warp_mode())?;
        Self::from_compiled(device, compiled)
    }

    /// Loads an already compiled module (its warp mode must suit the device).
    pub fn from_compiled(device: &Device, compiled: Compiled) -> Result<Module, Error> {
        check_warp_mode(device.info(), compiled.warp_mode)?;
        let r = compiled.spirv.requirements;
        let needs = Features {
            int8: r.int8,
            int16: r.int16,
            int64: true,
            float64: r.float64,
            storage_buffer_8bit: r.storage_buffer_8bit,
            storage_buffer_16bit: r.storage_buffer_16bit,
            int64_atomics: r.int64_atomics,
            ..Features::default()
        };
        let programs = compiled
            .spirv
            .kernels
            .iter()
            .map(|k| device.inner.create_program(&compiled.spirv.words, &k.name, &needs))
            .collect::<Result<Vec<_>, _>>()?;
        // The module data, with the addresses of variables its initializers name
        // patched in once the buffer's address is known.
        let data = if compiled.data.image.is_empty() {
            None
        } else {
            let buf = device.inner.alloc(compiled.data.image.len() as u64)?;
            let mut image = compiled.data.image.clone();
            for r in &compiled.data.relocations {
                let at = r.at as usize;
                let addr = buf.address() + u64::from(r.target);
                image[at..at + 8].copy_from_slice(&addr.to_le_bytes());
            }
            device.inner.upload(&buf, 0, &image)?;
            Some(buf)
        };
        let heap = if compiled.spirv.kernels.iter().any(|k| k.heap) {
            Some(device.inner.alloc(system::HEAP_BYTES)?)
        } else {
            None
        };
        Ok(Module { device: device.clone(), compiled, programs, data, heap })
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

    fn global(
        &self,
        name: &str,
    ) -> Result<(&ptxvk_lower::globals::GlobalVar, &ptxvk_vk::Buffer), Error> {
        match (self.compiled.data.get(name), &self.data) {
            (Some(v), Some(b)) => Ok((v, b)),
            _ => Err(Error::Launch(format!(
                "the module has no `.global` or `.const` variable `{name}`"
            ))),
        }
    }

    pub fn compiled(&self) -> &Compiled {
        &self.compiled
    }

    /// Kernel names in source order.
    pub fn kernel_names(&self) -> Vec<&str> {
        self.compiled.spirv.kernels.iter().map(|k| k.name.as_str()).collect()
    }

    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>, Error> {
        let index =
            self.compiled.spirv.kernels.iter().position(|k| k.name == name).ok_or_else(|| {
                Error::NoSuchKernel {
                    name: name.to_string(),
                    available: self.kernel_names().iter().map(|s| s.to_string()).collect(),
                }
            })?;
        Ok(Kernel { module: self, index })
    }
}

/// One kernel of a [`Module`].
#[derive(Clone, Copy, Debug)]
pub struct Kernel<'m> {
    module: &'m Module,
    index: usize,
}

impl Kernel<'_> {
    pub fn info(&self) -> &KernelInfo {
        &self.module.compiled.spirv.kernels[self.index]
    }

    /// Lays out `args` in the kernel's parameter block, checking each against its
    /// parameter's size.
    pub fn param_block(&self, args: &[Arg]) -> Result<Vec<u8>, Error> {
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
        for (i, (arg, p)) in args.iter().zip(params).enumerate() {
            let bytes = match arg {
                Arg::Ptr(a) => {
                    if p.size != 8 || p.count != 1 {
                        return Err(Error::Launch(format!(
                            "argument {i} of `{}` is a buffer, but parameter `{}` is {} ({} bytes), not a 64-bit pointer",
                            info.name,
                            p.name,
                            describe(p.elem, p.count),
                            p.size
                        )));
                    }
                    a.to_le_bytes().to_vec()
                }
                Arg::Bytes(b) => b.clone(),
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
            block[off..off + bytes.len()].copy_from_slice(&bytes);
        }
        Ok(block)
    }

    /// Launches the kernel and waits for it: `grid` blocks of `block` threads, with
    /// `shared_bytes` of dynamic (`extern .shared`) memory.
    pub fn launch(
        &self,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: &[Arg],
    ) -> Result<LaunchStats, Error> {
        let (grid, block) = (grid.into().0, block.into().0);
        let info = self.info();
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
        let total_shared = if shared_bytes > 0 {
            info.dynamic_shared_offset
                .checked_add(shared_bytes)
                .ok_or_else(|| Error::Launch("shared memory size overflows".into()))?
        } else {
            info.static_shared_bytes
        };
        let mut params = self.param_block(args)?;
        let device = &self.module.device;
        // The system area (traps, assertions, printf) follows the parameter block: only
        // the block and the area's header are uploaded; the zero-filled allocation
        // covers the printf records.
        let system = info.system.then(|| system::offset(info.abi.size));
        let param_buf = match system {
            Some(off) => {
                params.resize((off + system::HEADER) as usize, 0);
                let heap = self.module.heap.as_ref().map_or(0, |h| h.address());
                let at = (off + system::HEAP) as usize;
                params[at..at + 8].copy_from_slice(&heap.to_le_bytes());
                let buf = device.inner.alloc(u64::from(off + system::SIZE))?;
                device.inner.upload(&buf, 0, &params)?;
                buf
            }
            None => device.buffer_from_bytes(&params)?,
        };
        let cfg = LaunchConfig {
            grid,
            block,
            shared_bytes: total_shared,
            param_address: param_buf.address(),
            const_address: self.module.data.as_ref().map_or(0, |b| b.address()),
        };
        let stats = device.inner.launch(&self.module.programs[self.index], &cfg)?;
        let mut stats = LaunchStats {
            kernel_ms: stats.kernel_ms,
            dispatches: stats.dispatches,
            ..Default::default()
        };
        if let Some(off) = system {
            self.report(&param_buf, off, &mut stats)?;
        }
        Ok(stats)
    }

    /// Reads the system area at `off` of `buf` after a launch: the printf output goes to
    /// `stats`; a trap or failed assertion is an error.
    fn report(
        &self,
        buf: &ptxvk_vk::Buffer,
        off: u32,
        stats: &mut LaunchStats,
    ) -> Result<(), Error> {
        let device = &self.module.device.inner;
        let mut area = device.download(buf, u64::from(off), u64::from(system::HEADER))?;
        let at = system::PRINTF_USED as usize;
        let used =
            area.get(at..at + 4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes);
        let records = used.min(system::PRINTF_CAPACITY);
        if records > 0 {
            let start = u64::from(off + system::HEADER);
            area.extend(device.download(buf, start, u64::from(records))?);
        }
        let report = system::decode(&area);
        let strings = printf::Strings {
            image: &self.module.compiled.data.image,
            base: self.module.data.as_ref().map_or(0, |b| b.address()),
        };
        stats.printf = printf::output(&report, &strings);
        match report.failure {
            Some(f) => Err(Error::KernelFailed {
                message: printf::failure_message(&self.info().name, &f, &strings),
                output: std::mem::take(&mut stats.printf),
            }),
            None => Ok(()),
        }
    }
}

fn describe(elem: ScalarType, count: u32) -> String {
    if count == 1 {
        format!("`{}`", elem.directive())
    } else {
        format!("`{}[{count}]`", elem.directive())
    }
}
