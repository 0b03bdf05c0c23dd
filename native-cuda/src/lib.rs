//! A client of NVIDIA's CUDA driver (`libcuda.so.1`), for running the same PTX natively
//! and comparing (`ptxvk compare --cuda`, issue #18).
//!
//! The library is loaded with `libloading` and its entry points are resolved by name,
//! with the driver API's types from `cudarc`; nothing is linked, so ptxvk builds and runs
//! where there is no NVIDIA driver, and this client fails with [`CudaError::NoLibrary`].
//! It is a crate of its own, apart from the Vulkan runtime: only `ptxvk compare` uses
//! it, and it is, like `ash`, a foreign interface to a GPU driver, so its `unsafe` code
//! lives here, each block with a `// SAFETY:` comment.
//!
//! Two things keep a comparison honest:
//! - [`CudaLibrary::System`] loads `libcuda.so.1` as the CUDA runtime does and refuses
//!   ptxvk's own driver library ([`CudaError::NotNvidia`]), which answers to the same
//!   name under `ptxvk exec` or a stray `LD_LIBRARY_PATH`: ptxvk compared with itself
//!   would agree and prove nothing. [`CudaLibrary::Path`] loads the file named, whatever
//!   it is (tests run this client against ptxvk's library that way).
//! - [`DriverInfo::library`] is the file the loader actually mapped (from
//!   `/proc/self/maps`), so reports say which driver computed the outputs.
//!
//! Arguments are checked against the kernel's parameters with `cuFuncGetParamInfo`
//! (CUDA 12.4): a value of the wrong size would make the driver read past it.

// Every `unsafe` block must say why it is sound (`docs/architecture.md`, *The crates*).
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::mem::ManuallyDrop;
use std::path::PathBuf;

use cudarc::driver::sys::{
    CUDA_RESOURCE_DESC_st__bindgen_ty_1, CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1,
    CUaddress_mode, CUarray, CUarray_format, CUcontext, CUdevice, CUdevice_attribute, CUdeviceptr,
    CUevent, CUfilter_mode, CUfunction, CUfunction_attribute, CUjitInputType, CUjit_option,
    CUlinkState, CUmemorytype, CUmodule, CUresourcetype, CUstream, CUsurfObject, CUtexObject,
    CUDA_ARRAY3D_DESCRIPTOR, CUDA_MEMCPY3D, CUDA_RESOURCE_DESC, CUDA_RESOURCE_VIEW_DESC,
    CUDA_TEXTURE_DESC,
};
use libloading::Library;
use ptxvk_abi::texture::{AddressMode, ChannelKind, Texture};

/// Which driver library to load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CudaLibrary {
    /// `libcuda.so.1` from the loader's search path, as NVIDIA's CUDA runtime loads it;
    /// ptxvk's own driver library is refused.
    System,
    /// This file, whatever driver it is.
    Path(PathBuf),
}

/// The soname NVIDIA's driver installs and the CUDA runtime loads.
pub const SYSTEM_LIBRARY: &str = "libcuda.so.1";

/// The symbol only ptxvk's driver library exports.
const PTXVK_MARKER: &[u8] = b"ptxvk_driver_library\0";

/// What failed on the CUDA side.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// The library cannot be loaded (on Linux: no NVIDIA driver installed).
    #[error("cannot load {library} (NVIDIA's CUDA driver): {reason}")]
    NoLibrary { library: String, reason: String },
    /// `libcuda.so.1` is ptxvk's own driver library.
    #[error(
        "{SYSTEM_LIBRARY} resolved to ptxvk's own driver library ({library}), not NVIDIA's: \
         comparing ptxvk with itself proves nothing (is this running under `ptxvk exec`, \
         or does LD_LIBRARY_PATH name ptxvk's folder?)"
    )]
    NotNvidia { library: String },
    /// An entry point the client needs is missing (a driver older than it supports).
    #[error("{library} has no `{symbol}`: the driver is older than CUDA {since}")]
    MissingEntryPoint { library: String, symbol: &'static str, since: &'static str },
    /// A driver call failed.
    #[error("{function} failed: {name} ({description}){}", if log.is_empty() { String::new() } else { format!("\n{log}") })]
    Call {
        function: &'static str,
        code: i32,
        name: String,
        description: String,
        /// The JIT compiler's error log, for module loads.
        log: String,
    },
    /// The launch's arguments do not fit the kernel's parameters, or its PTX has a NUL.
    #[error("{0}")]
    Launch(String),
}

/// The driver and device that ran the kernels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverInfo {
    /// The library file the loader mapped.
    pub library: String,
    /// Whether it is ptxvk's own driver library (only with [`CudaLibrary::Path`]).
    pub ptxvk: bool,
    /// `cuDriverGetVersion`: 1000 × major + 10 × minor.
    pub version: i32,
    pub device: String,
    /// `(major, minor)`: sm_XY.
    pub compute_capability: (i32, i32),
}

impl DriverInfo {
    /// `12.4`.
    pub fn version_text(&self) -> String {
        format!("{}.{}", self.version / 1000, self.version % 1000 / 10)
    }
}

/// One kernel argument of [`NativeCuda::run`].
#[derive(Clone, Debug)]
pub enum NativeArg<'a> {
    /// A device buffer with these contents; the parameter gets its address.
    Buffer(&'a [u8]),
    /// A device buffer of this many bytes, not written before the launch.
    Uninitialized(u64),
    /// The parameter's bytes.
    Value(&'a [u8]),
    /// A texture or surface: a CUDA array of `desc`'s shape and format holding `texels`
    /// (packed rows, slices or layers), and a texture object with `desc`'s sampler state
    /// or, with `surface`, a surface object; the parameter gets the object, and the
    /// texels are read back like a buffer.
    Texture { texels: &'a [u8], desc: Texture, surface: bool },
}

/// What a launch left: its time on the GPU and the buffers' bytes, in argument order.
#[derive(Clone, Debug, PartialEq)]
pub struct NativeRun {
    pub kernel_ms: f64,
    pub buffers: Vec<Vec<u8>>,
}

type Res = c_int;
const SUCCESS: Res = 0;
/// CUDA_ERROR_INVALID_VALUE: what `cuFuncGetParamInfo` says past the last parameter.
const INVALID_VALUE: Res = 1;
/// CUDA_ERROR_NO_DEVICE.
const NO_DEVICE: Res = 100;

/// The entry points, by their exported names (the `_v2` ones where CUDA has them).
struct Api {
    init: unsafe extern "C" fn(c_uint) -> Res,
    driver_get_version: unsafe extern "C" fn(*mut c_int) -> Res,
    device_get_count: unsafe extern "C" fn(*mut c_int) -> Res,
    device_get: unsafe extern "C" fn(*mut CUdevice, c_int) -> Res,
    device_get_name: unsafe extern "C" fn(*mut c_char, c_int, CUdevice) -> Res,
    device_get_attribute: unsafe extern "C" fn(*mut c_int, CUdevice_attribute, CUdevice) -> Res,
    primary_ctx_retain: unsafe extern "C" fn(*mut CUcontext, CUdevice) -> Res,
    primary_ctx_release: unsafe extern "C" fn(CUdevice) -> Res,
    ctx_set_current: unsafe extern "C" fn(CUcontext) -> Res,
    ctx_synchronize: unsafe extern "C" fn() -> Res,
    module_load_data_ex: unsafe extern "C" fn(
        *mut CUmodule,
        *const c_void,
        c_uint,
        *mut CUjit_option,
        *mut *mut c_void,
    ) -> Res,
    module_unload: unsafe extern "C" fn(CUmodule) -> Res,
    module_get_function: unsafe extern "C" fn(*mut CUfunction, CUmodule, *const c_char) -> Res,
    func_get_param_info: unsafe extern "C" fn(CUfunction, usize, *mut usize, *mut usize) -> Res,
    func_set_attribute: unsafe extern "C" fn(CUfunction, CUfunction_attribute, c_int) -> Res,
    link_create:
        unsafe extern "C" fn(c_uint, *mut CUjit_option, *mut *mut c_void, *mut CUlinkState) -> Res,
    link_add_data: unsafe extern "C" fn(
        CUlinkState,
        CUjitInputType,
        *mut c_void,
        usize,
        *const c_char,
        c_uint,
        *mut CUjit_option,
        *mut *mut c_void,
    ) -> Res,
    link_complete: unsafe extern "C" fn(CUlinkState, *mut *mut c_void, *mut usize) -> Res,
    link_destroy: unsafe extern "C" fn(CUlinkState) -> Res,
    mem_alloc: unsafe extern "C" fn(*mut CUdeviceptr, usize) -> Res,
    mem_free: unsafe extern "C" fn(CUdeviceptr) -> Res,
    memcpy_htod: unsafe extern "C" fn(CUdeviceptr, *const c_void, usize) -> Res,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, CUdeviceptr, usize) -> Res,
    #[allow(clippy::type_complexity)]
    launch_kernel: unsafe extern "C" fn(
        CUfunction,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        CUstream,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> Res,
    event_create: unsafe extern "C" fn(*mut CUevent, c_uint) -> Res,
    event_record: unsafe extern "C" fn(CUevent, CUstream) -> Res,
    event_synchronize: unsafe extern "C" fn(CUevent) -> Res,
    event_elapsed_time: unsafe extern "C" fn(*mut f32, CUevent, CUevent) -> Res,
    event_destroy: unsafe extern "C" fn(CUevent) -> Res,
    get_error_name: unsafe extern "C" fn(Res, *mut *const c_char) -> Res,
    get_error_string: unsafe extern "C" fn(Res, *mut *const c_char) -> Res,
    array_3d_create: unsafe extern "C" fn(*mut CUarray, *const CUDA_ARRAY3D_DESCRIPTOR) -> Res,
    array_destroy: unsafe extern "C" fn(CUarray) -> Res,
    memcpy_3d: unsafe extern "C" fn(*const CUDA_MEMCPY3D) -> Res,
    tex_object_create: unsafe extern "C" fn(
        *mut CUtexObject,
        *const CUDA_RESOURCE_DESC,
        *const CUDA_TEXTURE_DESC,
        *const CUDA_RESOURCE_VIEW_DESC,
    ) -> Res,
    tex_object_destroy: unsafe extern "C" fn(CUtexObject) -> Res,
    surf_object_create: unsafe extern "C" fn(*mut CUsurfObject, *const CUDA_RESOURCE_DESC) -> Res,
    surf_object_destroy: unsafe extern "C" fn(CUsurfObject) -> Res,
}

/// NVIDIA's driver (or the library named), initialised, with the primary context of one
/// device current on the calling thread while it runs a launch.
pub struct NativeCuda {
    api: Api,
    device: CUdevice,
    context: CUcontext,
    info: DriverInfo,
    /// Never unloaded: drivers keep threads and exit handlers in the process (cudarc
    /// keeps its library for the process's life too). Declared last: `api` points
    /// into it.
    _library: ManuallyDrop<Library>,
}

impl std::fmt::Debug for NativeCuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeCuda").field("info", &self.info).finish_non_exhaustive()
    }
}

/// The file mapped at `address` in this process, from `/proc/self/maps`.
fn mapped_file(address: usize) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) =
            (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
        let path = fields.nth(4)?;
        (start <= address && address < end && path.starts_with('/')).then(|| path.to_string())
    })
}

impl NativeCuda {
    /// Loads `library`, initialises it and retains the primary context of device
    /// `ordinal`.
    pub fn open(library: &CudaLibrary, ordinal: i32) -> Result<NativeCuda, CudaError> {
        let name = match library {
            CudaLibrary::System => PathBuf::from(SYSTEM_LIBRARY),
            CudaLibrary::Path(p) => p.clone(),
        };
        let shown = name.display().to_string();
        // SAFETY: loading a CUDA driver library runs its initialisers, which NVIDIA's
        // (and ptxvk's) keep to themselves; this is what every CUDA program does.
        let lib = unsafe { Library::new(&name) }
            .map_err(|e| CudaError::NoLibrary { library: shown.clone(), reason: e.to_string() })?;
        let api = Api::resolve(&lib, &shown)?;
        // SAFETY: looking a symbol up; its value is not used, only whether it exists.
        let ptxvk = unsafe { lib.get::<*const c_void>(PTXVK_MARKER) }.is_ok();
        let mapped = mapped_file(api.init as usize).unwrap_or_else(|| shown.clone());
        if ptxvk && *library == CudaLibrary::System {
            return Err(CudaError::NotNvidia { library: mapped });
        }
        let mut cuda = NativeCuda {
            api,
            device: 0,
            context: std::ptr::null_mut(),
            info: DriverInfo {
                library: mapped,
                ptxvk,
                version: 0,
                device: String::new(),
                compute_capability: (0, 0),
            },
            _library: ManuallyDrop::new(lib),
        };
        cuda.start(ordinal)?;
        Ok(cuda)
    }

    /// `cuInit`, the device, its name, capability and primary context.
    fn start(&mut self, ordinal: i32) -> Result<(), CudaError> {
        let api = &self.api;
        let (mut version, mut count, mut device) = (0, 0, 0);
        let mut context: CUcontext = std::ptr::null_mut();
        let mut name = [0 as c_char; 256];
        let attribute = |a, device| {
            let mut v = 0;
            // SAFETY: a writable local and a device the driver returned.
            let code = unsafe { (api.device_get_attribute)(&mut v, a, device) };
            self.check("cuDeviceGetAttribute", code).map(|()| v)
        };
        // SAFETY: each call gets writable locals of the types CUDA's documentation
        // gives, and the device it returned.
        unsafe {
            self.check("cuInit", (api.init)(0))?;
            self.check("cuDriverGetVersion", (api.driver_get_version)(&mut version))?;
            self.check("cuDeviceGetCount", (api.device_get_count)(&mut count))?;
            if ordinal < 0 || ordinal >= count {
                return Err(self.failure("cuDeviceGet", NO_DEVICE));
            }
            self.check("cuDeviceGet", (api.device_get)(&mut device, ordinal))?;
            let size = name.len() as c_int - 1;
            self.check("cuDeviceGetName", (api.device_get_name)(name.as_mut_ptr(), size, device))?;
        }
        use CUdevice_attribute as A;
        let compute_capability = (
            attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)?,
            attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)?,
        );
        // SAFETY: a writable local and the device.
        let code = unsafe { (api.primary_ctx_retain)(&mut context, device) };
        self.check("cuDevicePrimaryCtxRetain", code)?;
        // The last byte of `name` stays 0 (the driver was given one less).
        let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        let device_name: Vec<u8> = name[..end].iter().map(|&c| c as u8).collect();
        self.info.version = version;
        self.info.device = String::from_utf8_lossy(&device_name).into_owned();
        self.info.compute_capability = compute_capability;
        (self.device, self.context) = (device, context);
        Ok(())
    }

    pub fn info(&self) -> &DriverInfo {
        &self.info
    }

    /// The driver's name and description of result `code`.
    fn failure(&self, function: &'static str, code: Res) -> CudaError {
        let text = |f: unsafe extern "C" fn(Res, *mut *const c_char) -> Res| {
            let mut p: *const c_char = std::ptr::null();
            // SAFETY: `p` is writable; on success the driver points it at a static
            // NUL-terminated string.
            let ok = unsafe { f(code, &mut p) } == SUCCESS && !p.is_null();
            // SAFETY: as above.
            ok.then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        CudaError::Call {
            function,
            code,
            name: text(self.api.get_error_name).unwrap_or_else(|| format!("CUDA error {code}")),
            description: text(self.api.get_error_string).unwrap_or_default(),
            log: String::new(),
        }
    }

    fn check(&self, function: &'static str, code: Res) -> Result<(), CudaError> {
        if code == SUCCESS {
            Ok(())
        } else {
            Err(self.failure(function, code))
        }
    }

    /// Loads the PTX files (linked when there are several), launches kernel `entry` with
    /// `args` on the default stream, waits, and reads every buffer back.
    pub fn run(
        &self,
        ptx: &[&str],
        entry: &str,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        args: &[NativeArg<'_>],
    ) -> Result<NativeRun, CudaError> {
        let api = &self.api;
        let entry_c = CString::new(entry)
            .map_err(|_| CudaError::Launch(format!("kernel name `{entry}` has a NUL")))?;
        // SAFETY: the primary context retained in `open` stays alive until drop.
        self.check("cuCtxSetCurrent", unsafe { (api.ctx_set_current)(self.context) })?;
        let mut resources = Resources::new(self);
        resources.module = self.load(ptx)?;
        let mut function: CUfunction = std::ptr::null_mut();
        // SAFETY: a module this client loaded and a NUL-terminated name.
        self.check("cuModuleGetFunction", unsafe {
            (api.module_get_function)(&mut function, resources.module, entry_c.as_ptr())
        })?;
        let params = self.parameters(function, entry)?;
        if params.len() != args.len() {
            return Err(CudaError::Launch(format!(
                "kernel `{entry}` takes {} argument(s), {} given",
                params.len(),
                args.len()
            )));
        }
        // Each argument's bytes, at least 8-aligned: buffers get their device address.
        let mut values: Vec<Vec<u64>> = Vec::with_capacity(args.len());
        let mut buffers: Vec<Readback<'_>> = Vec::new();
        for (i, (arg, &size)) in args.iter().zip(&params).enumerate() {
            let bytes: Vec<u8> = match arg {
                NativeArg::Buffer(_) | NativeArg::Uninitialized(_) => {
                    if size != 8 {
                        return Err(CudaError::Launch(format!(
                            "argument {i} of `{entry}` is a buffer, but its parameter has {size} \
                             bytes, not a 64-bit pointer's 8"
                        )));
                    }
                    let len = match *arg {
                        NativeArg::Uninitialized(n) => usize::try_from(n).map_err(|_| {
                            CudaError::Launch(format!("argument {i}: {n} bytes do not fit"))
                        })?,
                        NativeArg::Buffer(b) | NativeArg::Value(b) => b.len(),
                        NativeArg::Texture { texels, .. } => texels.len(),
                    };
                    let mut address: CUdeviceptr = 0;
                    // SAFETY: `address` is writable; CUDA refuses zero bytes, hence max(1).
                    self.check("cuMemAlloc", unsafe { (api.mem_alloc)(&mut address, len.max(1)) })?;
                    resources.allocations.push(address);
                    if let NativeArg::Buffer(b) = *arg {
                        // SAFETY: the allocation holds at least `b.len()` bytes.
                        self.check("cuMemcpyHtoD", unsafe {
                            (api.memcpy_htod)(address, b.as_ptr().cast(), b.len())
                        })?;
                    }
                    buffers.push(Readback::Buffer(address, len));
                    address.to_le_bytes().to_vec()
                }
                NativeArg::Texture { texels, desc, surface } => {
                    if size != 8 {
                        return Err(CudaError::Launch(format!(
                            "argument {i} of `{entry}` is a texture, but its parameter has \
                             {size} bytes, not a 64-bit object's 8"
                        )));
                    }
                    let (object, array) = self.texture(&mut resources, texels, desc, *surface)?;
                    buffers.push(Readback::Array(array, desc, texels.len()));
                    object.to_le_bytes().to_vec()
                }
                NativeArg::Value(v) if v.len() == size => v.to_vec(),
                NativeArg::Value(v) => {
                    return Err(CudaError::Launch(format!(
                        "argument {i} of `{entry}` has {} bytes, its parameter {size}",
                        v.len()
                    )))
                }
            };
            values.push(to_words(&bytes));
        }
        let mut pointers: Vec<*mut c_void> =
            values.iter_mut().map(|v| v.as_mut_ptr().cast::<c_void>()).collect();
        if shared_bytes > 48 * 1024 {
            // CUDA needs the opt-in above 48 KiB of dynamic shared memory.
            // SAFETY: a function of the loaded module.
            self.check("cuFuncSetAttribute", unsafe {
                (api.func_set_attribute)(
                    function,
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared_bytes as c_int,
                )
            })?;
        }
        let (start, end) = (resources.event()?, resources.event()?);
        let stream: CUstream = std::ptr::null_mut();
        // SAFETY: `pointers` holds one pointer per parameter to at least its size in
        // bytes (checked above with cuFuncGetParamInfo), alive until the launch returns
        // (the driver copies them); the events are this context's.
        unsafe {
            self.check("cuEventRecord", (api.event_record)(start, stream))?;
            self.check(
                "cuLaunchKernel",
                (api.launch_kernel)(
                    function,
                    grid[0],
                    grid[1],
                    grid[2],
                    block[0],
                    block[1],
                    block[2],
                    shared_bytes,
                    stream,
                    pointers.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            )?;
            self.check("cuEventRecord", (api.event_record)(end, stream))?;
            self.check("cuEventSynchronize", (api.event_synchronize)(end))?;
            self.check("cuCtxSynchronize", (api.ctx_synchronize)())?;
        }
        let mut ms = 0f32;
        // SAFETY: two completed events of this context.
        self.check("cuEventElapsedTime", unsafe { (api.event_elapsed_time)(&mut ms, start, end) })?;
        let mut outputs = Vec::with_capacity(buffers.len());
        for readback in buffers {
            let bytes = match readback {
                Readback::Buffer(address, len) => {
                    let mut bytes = vec![0u8; len];
                    // SAFETY: `bytes` is writable for `len` bytes, the allocation as long.
                    self.check("cuMemcpyDtoH", unsafe {
                        (api.memcpy_dtoh)(bytes.as_mut_ptr().cast(), address, len)
                    })?;
                    bytes
                }
                Readback::Array(array, desc, len) => {
                    let mut bytes = vec![0u8; len];
                    let copy = array_copy(desc, array, Host::Out(bytes.as_mut_ptr()));
                    // SAFETY: `bytes` holds the array's texels packed (`len` bytes).
                    self.check("cuMemcpy3D", unsafe { (api.memcpy_3d)(&copy) })?;
                    bytes
                }
            };
            outputs.push(bytes);
        }
        Ok(NativeRun { kernel_ms: f64::from(ms), buffers: outputs })
    }

    /// A CUDA array holding `texels` in `desc`'s shape and format (surface-capable), and
    /// a texture object with `desc`'s sampler state or a surface object over it.
    fn texture(
        &self,
        resources: &mut Resources<'_>,
        texels: &[u8],
        desc: &Texture,
        surface: bool,
    ) -> Result<(u64, CUarray), CudaError> {
        let api = &self.api;
        let format = array_format(desc.kind, desc.channel_bytes).ok_or_else(|| {
            CudaError::Launch(format!(
                "CUDA arrays have no {}-byte {:?} channels",
                desc.channel_bytes, desc.kind
            ))
        })?;
        let one_d = desc.height <= 1 && desc.depth <= 1 && desc.layers == 0;
        let array_desc = CUDA_ARRAY3D_DESCRIPTOR {
            Width: desc.width as usize,
            Height: if one_d { 0 } else { desc.height as usize },
            Depth: if desc.layers > 0 {
                desc.layers as usize
            } else if desc.depth > 1 {
                desc.depth as usize
            } else {
                0
            },
            Format: format,
            NumChannels: desc.channels,
            // CUDA_ARRAY3D_LAYERED, CUDA_ARRAY3D_SURFACE_LDST.
            Flags: u32::from(desc.layers > 0) | 2,
        };
        let mut array: CUarray = std::ptr::null_mut();
        // SAFETY: a writable local and a complete descriptor.
        self.check("cuArray3DCreate", unsafe { (api.array_3d_create)(&mut array, &array_desc) })?;
        resources.arrays.push(array);
        let copy = array_copy(desc, array, Host::In(texels.as_ptr()));
        // SAFETY: `texels` holds the array's texels packed (checked by the spec).
        self.check("cuMemcpy3D", unsafe { (api.memcpy_3d)(&copy) })?;
        let res = CUDA_RESOURCE_DESC {
            resType: CUresourcetype::CU_RESOURCE_TYPE_ARRAY,
            res: CUDA_RESOURCE_DESC_st__bindgen_ty_1 {
                array: CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 { hArray: array },
            },
            flags: 0,
        };
        if surface {
            let mut object: CUsurfObject = 0;
            // SAFETY: a writable local and a resource of this context's array.
            self.check("cuSurfObjectCreate", unsafe {
                (api.surf_object_create)(&mut object, &res)
            })?;
            resources.surfaces.push(object);
            return Ok((object, array));
        }
        let mode = |m: AddressMode| match m {
            AddressMode::Wrap => CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
            AddressMode::Clamp => CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
            AddressMode::Mirror => CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
            AddressMode::Border => CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
        };
        // CU_TRSF_READ_AS_INTEGER (the driver API reads 8/16-bit integers as normalized
        // floats without it), CU_TRSF_NORMALIZED_COORDINATES, CU_TRSF_SRGB.
        let flags = u32::from(!desc.read_normalized)
            | (u32::from(desc.normalized_coords) << 1)
            | (u32::from(desc.srgb) << 4);
        let filter = if desc.linear_filter {
            CUfilter_mode::CU_TR_FILTER_MODE_LINEAR
        } else {
            CUfilter_mode::CU_TR_FILTER_MODE_POINT
        };
        let tex = CUDA_TEXTURE_DESC {
            addressMode: desc.address_modes.map(mode),
            filterMode: filter,
            flags,
            maxAnisotropy: 0,
            mipmapFilterMode: CUfilter_mode::CU_TR_FILTER_MODE_POINT,
            mipmapLevelBias: 0.0,
            minMipmapLevelClamp: 0.0,
            maxMipmapLevelClamp: 0.0,
            borderColor: desc.border,
            reserved: [0; 12],
        };
        let mut object: CUtexObject = 0;
        // SAFETY: a writable local, complete descriptors, no resource view.
        self.check("cuTexObjectCreate", unsafe {
            (api.tex_object_create)(&mut object, &res, &tex, std::ptr::null())
        })?;
        resources.textures.push(object);
        Ok((object, array))
    }

    /// The sizes of `function`'s parameters, in order.
    fn parameters(&self, function: CUfunction, entry: &str) -> Result<Vec<usize>, CudaError> {
        let mut sizes = Vec::new();
        loop {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: a loaded function and two writable locals.
            let code = unsafe {
                (self.api.func_get_param_info)(function, sizes.len(), &mut offset, &mut size)
            };
            match code {
                SUCCESS => sizes.push(size),
                INVALID_VALUE => return Ok(sizes),
                _ => return Err(self.failure("cuFuncGetParamInfo", code)),
            }
            if sizes.len() > 4096 {
                return Err(CudaError::Launch(format!("kernel `{entry}`: too many parameters")));
            }
        }
    }

    /// A module of the PTX files: loaded directly when there is one, else linked.
    fn load(&self, ptx: &[&str]) -> Result<CUmodule, CudaError> {
        let api = &self.api;
        let texts = ptx
            .iter()
            .map(|t| CString::new(*t))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| CudaError::Launch("the PTX has a NUL byte".into()))?;
        let mut log = vec![0u8; 16 * 1024];
        let mut options = [
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The log's size travels in the pointer-sized option value (CUDA's convention).
        let mut values: [*mut c_void; 2] =
            [log.as_mut_ptr().cast(), std::ptr::without_provenance_mut(log.len())];
        let with_log = |e: CudaError, log: &[u8]| match e {
            CudaError::Call { function, code, name, description, .. } => {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let log = String::from_utf8_lossy(&log[..end]).trim().to_string();
                CudaError::Call { function, code, name, description, log }
            }
            e => e,
        };
        let mut module: CUmodule = std::ptr::null_mut();
        if let [one] = texts.as_slice() {
            // SAFETY: a NUL-terminated image, two options with their values, the log
            // buffer writable for the size given.
            let code = unsafe {
                (api.module_load_data_ex)(
                    &mut module,
                    one.as_ptr().cast(),
                    options.len() as c_uint,
                    options.as_mut_ptr(),
                    values.as_mut_ptr(),
                )
            };
            return self
                .check("cuModuleLoadDataEx", code)
                .map(|()| module)
                .map_err(|e| with_log(e, &log));
        }
        let mut state: CUlinkState = std::ptr::null_mut();
        // SAFETY: as for the module load; the link state is destroyed below.
        self.check("cuLinkCreate", unsafe {
            (api.link_create)(
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut state,
            )
        })?;
        let linked = (|| {
            for (i, text) in texts.iter().enumerate() {
                let name = CString::new(format!("ptx{i}")).unwrap_or_default();
                // SAFETY: the PTX with its NUL (CUDA's size includes it), no options.
                self.check("cuLinkAddData", unsafe {
                    (api.link_add_data)(
                        state,
                        CUjitInputType::CU_JIT_INPUT_PTX,
                        text.as_ptr().cast_mut().cast(),
                        text.as_bytes_with_nul().len(),
                        name.as_ptr(),
                        0,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    )
                })?;
            }
            let (mut image, mut size): (*mut c_void, usize) = (std::ptr::null_mut(), 0);
            // SAFETY: the image belongs to the link state, alive until it is destroyed.
            self.check("cuLinkComplete", unsafe {
                (api.link_complete)(state, &mut image, &mut size)
            })?;
            // SAFETY: the linked image, no options.
            self.check("cuModuleLoadDataEx", unsafe {
                (api.module_load_data_ex)(
                    &mut module,
                    image,
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            })
        })();
        // SAFETY: the state created above, destroyed once.
        unsafe { (api.link_destroy)(state) };
        linked.map(|()| module).map_err(|e| with_log(e, &log))
    }
}

/// `bytes` in 8-aligned storage (the driver reads a parameter's value as it would a
/// variable of its type), zero-padded to whole words.
fn to_words(bytes: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)];
    for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut a = [0u8; 8];
        a[..chunk.len()].copy_from_slice(chunk);
        *w = u64::from_le_bytes(a);
    }
    words
}

/// What a launch reads back, in argument order: a buffer (address, bytes) or a texture's
/// array (its description, bytes).
enum Readback<'a> {
    Buffer(CUdeviceptr, usize),
    Array(CUarray, &'a Texture, usize),
}

/// The CUDA array format of channels of `kind` and `bytes`.
fn array_format(kind: ChannelKind, bytes: u32) -> Option<CUarray_format> {
    use CUarray_format::*;
    Some(match (kind, bytes) {
        (ChannelKind::Unsigned, 1) => CU_AD_FORMAT_UNSIGNED_INT8,
        (ChannelKind::Unsigned, 2) => CU_AD_FORMAT_UNSIGNED_INT16,
        (ChannelKind::Unsigned, 4) => CU_AD_FORMAT_UNSIGNED_INT32,
        (ChannelKind::Signed, 1) => CU_AD_FORMAT_SIGNED_INT8,
        (ChannelKind::Signed, 2) => CU_AD_FORMAT_SIGNED_INT16,
        (ChannelKind::Signed, 4) => CU_AD_FORMAT_SIGNED_INT32,
        (ChannelKind::Float, 2) => CU_AD_FORMAT_HALF,
        (ChannelKind::Float, 4) => CU_AD_FORMAT_FLOAT,
        _ => return None,
    })
}

/// The host side of an array copy.
enum Host {
    In(*const u8),
    Out(*mut u8),
}

/// `cuMemcpy3D` of a whole array from or to packed host texels.
fn array_copy(desc: &Texture, array: CUarray, host: Host) -> CUDA_MEMCPY3D {
    let row = desc.width as usize * desc.texel_bytes() as usize;
    let height = desc.height.max(1) as usize;
    let slices = if desc.layers > 0 { desc.layers } else { desc.depth.max(1) } as usize;
    use CUmemorytype::{CU_MEMORYTYPE_ARRAY as ARRAY, CU_MEMORYTYPE_HOST as HOST};
    let (src_host, dst_host, src_type, dst_type, src_array, dst_array) = match host {
        Host::In(p) => (p.cast(), std::ptr::null_mut(), HOST, ARRAY, std::ptr::null_mut(), array),
        Host::Out(p) => (std::ptr::null(), p.cast(), ARRAY, HOST, array, std::ptr::null_mut()),
    };
    CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: src_type,
        srcHost: src_host,
        srcDevice: 0,
        srcArray: src_array,
        reserved0: std::ptr::null_mut(),
        srcPitch: row,
        srcHeight: height,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: 0,
        dstArray: dst_array,
        reserved1: std::ptr::null_mut(),
        dstPitch: row,
        dstHeight: height,
        WidthInBytes: row,
        Height: height,
        Depth: slices,
    }
}

/// What one launch created, released on every path out of [`NativeCuda::run`].
struct Resources<'c> {
    cuda: &'c NativeCuda,
    module: CUmodule,
    allocations: Vec<CUdeviceptr>,
    events: Vec<CUevent>,
    arrays: Vec<CUarray>,
    textures: Vec<CUtexObject>,
    surfaces: Vec<CUsurfObject>,
}

impl<'c> Resources<'c> {
    fn new(cuda: &'c NativeCuda) -> Resources<'c> {
        Resources {
            cuda,
            module: std::ptr::null_mut(),
            allocations: Vec::new(),
            events: Vec::new(),
            arrays: Vec::new(),
            textures: Vec::new(),
            surfaces: Vec::new(),
        }
    }

    fn event(&mut self) -> Result<CUevent, CudaError> {
        let mut event: CUevent = std::ptr::null_mut();
        // SAFETY: a writable local; flags 0 (timing on).
        self.cuda.check("cuEventCreate", unsafe { (self.cuda.api.event_create)(&mut event, 0) })?;
        self.events.push(event);
        Ok(event)
    }
}

impl Drop for Resources<'_> {
    fn drop(&mut self) {
        let api = &self.cuda.api;
        // SAFETY: handles this launch created, each released once; errors (a context
        // a failed kernel left unusable) change nothing here.
        unsafe {
            for &e in &self.events {
                (api.event_destroy)(e);
            }
            for &a in &self.allocations {
                (api.mem_free)(a);
            }
            for &t in &self.textures {
                (api.tex_object_destroy)(t);
            }
            for &t in &self.surfaces {
                (api.surf_object_destroy)(t);
            }
            for &a in &self.arrays {
                (api.array_destroy)(a);
            }
            if !self.module.is_null() {
                (api.module_unload)(self.module);
            }
        }
    }
}

impl Drop for NativeCuda {
    fn drop(&mut self) {
        if !self.context.is_null() {
            // SAFETY: the primary context retained in `open`, released once.
            unsafe { (self.api.primary_ctx_release)(self.device) };
        }
    }
}

impl Api {
    fn resolve(lib: &Library, library: &str) -> Result<Api, CudaError> {
        /// Looks `name` up as a function of type `T`.
        fn get<T: Copy>(
            lib: &Library,
            library: &str,
            name: &'static str,
            since: &'static str,
        ) -> Result<T, CudaError> {
            let symbol = format!("{name}\0");
            // SAFETY: `T` is the entry point's type in CUDA's `cuda.h` (the field's
            // type); the pointer is used only while the library stays loaded, which is
            // forever (`NativeCuda::_library`).
            unsafe { lib.get::<T>(symbol.as_bytes()) }.map(|s| *s).map_err(|_| {
                CudaError::MissingEntryPoint { library: library.into(), symbol: name, since }
            })
        }
        macro_rules! get {
            ($name:literal, $since:literal) => {
                get(lib, library, $name, $since)?
            };
        }
        Ok(Api {
            init: get!("cuInit", "2.0"),
            driver_get_version: get!("cuDriverGetVersion", "2.2"),
            device_get_count: get!("cuDeviceGetCount", "2.0"),
            device_get: get!("cuDeviceGet", "2.0"),
            device_get_name: get!("cuDeviceGetName", "2.0"),
            device_get_attribute: get!("cuDeviceGetAttribute", "2.0"),
            primary_ctx_retain: get!("cuDevicePrimaryCtxRetain", "7.0"),
            primary_ctx_release: get!("cuDevicePrimaryCtxRelease_v2", "11.0"),
            ctx_set_current: get!("cuCtxSetCurrent", "4.0"),
            ctx_synchronize: get!("cuCtxSynchronize", "2.0"),
            module_load_data_ex: get!("cuModuleLoadDataEx", "2.1"),
            module_unload: get!("cuModuleUnload", "2.0"),
            module_get_function: get!("cuModuleGetFunction", "2.0"),
            func_get_param_info: get!("cuFuncGetParamInfo", "12.4"),
            func_set_attribute: get!("cuFuncSetAttribute", "9.0"),
            link_create: get!("cuLinkCreate_v2", "6.5"),
            link_add_data: get!("cuLinkAddData_v2", "6.5"),
            link_complete: get!("cuLinkComplete", "5.5"),
            link_destroy: get!("cuLinkDestroy", "5.5"),
            mem_alloc: get!("cuMemAlloc_v2", "3.2"),
            mem_free: get!("cuMemFree_v2", "3.2"),
            memcpy_htod: get!("cuMemcpyHtoD_v2", "3.2"),
            memcpy_dtoh: get!("cuMemcpyDtoH_v2", "3.2"),
            launch_kernel: get!("cuLaunchKernel", "4.0"),
            event_create: get!("cuEventCreate", "2.0"),
            event_record: get!("cuEventRecord", "2.0"),
            event_synchronize: get!("cuEventSynchronize", "2.0"),
            event_elapsed_time: get!("cuEventElapsedTime", "2.0"),
            event_destroy: get!("cuEventDestroy_v2", "4.0"),
            get_error_name: get!("cuGetErrorName", "6.0"),
            get_error_string: get!("cuGetErrorString", "6.0"),
            array_3d_create: get!("cuArray3DCreate_v2", "3.2"),
            array_destroy: get!("cuArrayDestroy", "2.0"),
            memcpy_3d: get!("cuMemcpy3D_v2", "3.2"),
            tex_object_create: get!("cuTexObjectCreate", "5.0"),
            tex_object_destroy: get!("cuTexObjectDestroy", "5.0"),
            surf_object_create: get!("cuSurfObjectCreate", "5.0"),
            surf_object_destroy: get!("cuSurfObjectDestroy", "5.0"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_missing_library_is_an_error_naming_it() {
        let path = Path::new("/nonexistent/libcuda.so.1");
        let e = NativeCuda::open(&CudaLibrary::Path(path.into()), 0).unwrap_err();
        assert!(
            matches!(&e, CudaError::NoLibrary { library, .. } if library == "/nonexistent/libcuda.so.1"),
            "{e}"
        );
        assert!(e.to_string().contains("NVIDIA's CUDA driver"), "{e}");
    }

    #[test]
    fn the_mapped_file_of_code_is_found() {
        // This test's own code is mapped from the test executable.
        let exe = std::env::current_exe().unwrap().canonicalize().unwrap();
        let here = mapped_file(to_words as *const () as usize).map(PathBuf::from);
        assert_eq!(here.and_then(|p| p.canonicalize().ok()), Some(exe));
        assert_eq!(mapped_file(0), None);
    }
}
