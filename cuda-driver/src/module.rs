//! Modules, libraries, functions, globals and the JIT linker.
//!
//! Code arrives as PTX text. Loading parses and checks it as a whole; each kernel is
//! compiled when it is first looked up or launched (CUDA's lazy loading;
//! `CUDA_MODULE_LOADING=EAGER` compiles the whole module at load). A `CUlibrary` is the
//! same object as a `CUmodule`, and a `CUkernel` the same as a `CUfunction` (CUDA lets
//! clients use one where the other is expected). A fatbin container (or its
//! `__fatBinC_Wrapper_t`) loads its newest PTX entry, older ones where the newest does
//! not load ([`ptx_of_fatbin`]: ptxvk is not bound by SM versions); cubins (ELF), and
//! fatbins without PTX, are `CUDA_ERROR_NO_BINARY_FOR_GPU`.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys::CUresult;

use crate::objects::{Function, JitOptions, Link, LoadedModule};
use crate::state::{driver, Driver};
use crate::{c_str, entry, out};

impl Function {
    /// The kernel, compiled now when its module is loaded lazily and this is its first
    /// use; a kernel that cannot be compiled reports why on stderr and is
    /// CUDA_ERROR_INVALID_PTX (a JIT failure).
    pub(crate) fn kernel(&self) -> Result<ptxvk::Kernel<'_>, CUresult> {
        self.module.kernel_at(self.index).map_err(|e| {
            let name = self.name.to_string_lossy();
            eprintln!("ptxvk libcuda: kernel `{name}` could not be compiled:\n{e}");
            crate::code(e)
        })
    }
}

/// What a module image is.
enum Image {
    /// The text ([`ptxvk::decode_ptx`]: bytes that are not UTF-8 in comments and
    /// strings are `?`).
    Ptx(String),
    Cubin,
    /// A fatbin container, or the wrapper that points at one.
    Fatbin,
}

const ELF_MAGIC: &[u8] = b"\x7fELF";

/// Classifies a module image: ELF, a fatbin (or its wrapper), else NUL-terminated PTX.
///
/// # Safety
/// `image` points to a module image as `cuModuleLoadData` documents: ELF or fatbin
/// headers, or NUL-terminated text.
unsafe fn classify(image: *const c_void) -> Result<Image, CUresult> {
    if image.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: every image kind starts with at least 4 readable bytes (ELF and fatbin
    // headers are longer; the shortest PTX text is longer than that).
    let head = unsafe { std::slice::from_raw_parts(image.cast::<u8>(), 4) };
    let word = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    if head == ELF_MAGIC {
        return Ok(Image::Cubin);
    }
    if word == crate::fatbin::MAGIC || word == crate::fatbin::WRAPPER_MAGIC {
        return Ok(Image::Fatbin);
    }
    // SAFETY: not ELF or fatbin, so NUL-terminated PTX (function contract).
    let bytes = unsafe { std::ffi::CStr::from_ptr(image.cast::<c_char>()) }.to_bytes();
    ptx_text("the module image", bytes).map(Image::Ptx)
}

/// PTX source bytes as text; bytes that are not UTF-8 outside comments and strings are
/// `CUDA_ERROR_INVALID_PTX`, reported on stderr with their offset.
fn ptx_text(what: &str, bytes: &[u8]) -> Result<String, CUresult> {
    match ptxvk::decode_ptx(bytes) {
        (text, None) => Ok(text),
        (_, Some(error)) => {
            eprintln!("ptxvk libcuda: {what}: {}", error.message);
            Err(CUresult::CUDA_ERROR_INVALID_PTX)
        }
    }
}

/// `CUjit_option` values (CUDA driver API).
const CU_JIT_MAX_REGISTERS: c_int = 0;
const CU_JIT_ERROR_LOG_BUFFER: c_int = 5;
const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;

impl JitOptions {
    /// Reads a JIT option list.
    ///
    /// # Safety
    /// `options` and `values` hold `n` entries each (or are null when `n` is 0).
    unsafe fn from_options(
        n: c_uint,
        options: *const c_int,
        values: *const *mut c_void,
    ) -> JitOptions {
        let mut o = JitOptions::default();
        if n == 0 || options.is_null() || values.is_null() {
            return o;
        }
        for i in 0..n as usize {
            // SAFETY: both arrays have `n` entries (function contract).
            let (option, value) = unsafe { (*options.add(i), *values.add(i)) };
            // Scalar options are passed in the pointer-sized slot itself.
            match option {
                CU_JIT_ERROR_LOG_BUFFER => o.buffer = value as usize,
                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES => o.size = value as usize,
                CU_JIT_MAX_REGISTERS => o.max_registers = Some(value as usize as u32),
                _ => {}
            }
        }
        o
    }

    /// Writes `text` (truncated, NUL-terminated) to the log buffer, if there is one.
    ///
    /// # Safety
    /// The buffer named by the options is writable for its size.
    unsafe fn write(&self, text: &str) {
        if self.buffer == 0 || self.size == 0 {
            return;
        }
        let n = text.len().min(self.size - 1);
        // SAFETY: writable for `size` bytes (function contract); n + 1 <= size.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), self.buffer as *mut u8, n);
            (self.buffer as *mut u8).add(n).write(0);
        }
    }
}

/// Whether modules compile whole when they load (`CUDA_MODULE_LOADING=EAGER`) rather
/// than each kernel on first use (`LAZY`, CUDA 12.2's default, and ptxvk's): the CUDA
/// environment variable, read once.
fn eager_loading() -> bool {
    static EAGER: OnceLock<bool> = OnceLock::new();
    *EAGER.get_or_init(|| {
        std::env::var("CUDA_MODULE_LOADING").is_ok_and(|v| v.trim().eq_ignore_ascii_case("EAGER"))
    })
}

/// `cuModuleGetLoadingMode`: `CU_MODULE_LAZY_LOADING` unless
/// `CUDA_MODULE_LOADING=EAGER`. NVIDIA's runtime asks, and with lazy loading it looks
/// up a kernel's function when the kernel is first launched, not every registered
/// kernel when the module loads.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetLoadingMode(mode: *mut c_int) -> CUresult {
    // CUmoduleLoadingMode: CU_MODULE_EAGER_LOADING = 1, CU_MODULE_LAZY_LOADING = 2.
    const EAGER: c_int = 1;
    const LAZY: c_int = 2;
    // SAFETY: `mode` is null or writable (CUDA's contract).
    entry(|| unsafe { out(mode, if eager_loading() { EAGER } else { LAZY }) })
}

/// Compiles and loads PTX, registering the module and its functions. Loading checks
/// the program as a whole; each kernel compiles when first looked up
/// (`cuModuleGetFunction`, `cuKernelGetFunction`) or launched, or all of them now with
/// `CUDA_MODULE_LOADING=EAGER`.
fn load_ptx(d: &Driver, text: &str, options: JitOptions) -> Result<usize, CUresult> {
    dump_ptx(text);
    let log = options;
    let loaded = if eager_loading() {
        ptxvk::Module::from_ptx(&d.device(), text)
    } else {
        ptxvk::Module::link_lazy(&d.device(), ptxvk::SourceMap::new([("<ptx>", text)]))
    };
    let module = loaded.map_err(|e| {
        // SAFETY: the client's log buffer, writable for its size (CUDA's contract).
        unsafe { log.write(&e.to_string()) };
        crate::code(e)
    })?;
    let names: Vec<String> = module.kernel_names().iter().map(|s| s.to_string()).collect();
    let ptx_arch = ptx_target_arch(text);
    let module = Arc::new(module);
    let functions = names
        .into_iter()
        .enumerate()
        .map(|(index, name)| {
            let f = Function {
                module: Arc::clone(&module),
                index,
                max_dynamic_shared: AtomicU32::new(0),
                max_registers: options.max_registers,
                ptx_arch,
                // PTX names have no NUL.
                name: CString::new(name.as_str()).unwrap_or_default(),
                module_handle: AtomicUsize::new(0),
            };
            (name, d.functions.insert(f))
        })
        .collect::<Vec<_>>();
    let handles: Vec<usize> = functions.iter().map(|(_, h)| *h).collect();
    let module = d.modules.insert(LoadedModule { module, functions });
    for h in handles {
        if let Some(f) = d.functions.get(h) {
            f.module_handle.store(module, Ordering::Relaxed);
        }
    }
    Ok(module)
}

/// The architecture a PTX text targets: `XX` of its `.target sm_XX` (with any `a`/`f`
/// suffix dropped), from the module's header (PTX ISA §11.1.3: before any function).
fn ptx_target_arch(text: &str) -> Option<u32> {
    let header = text.split(".entry").next().unwrap_or(text);
    let header = header.split(".func").next().unwrap_or(header);
    let (_, rest) = header.split_once(".target")?;
    let options = rest.lines().next()?;
    options.split([',', ' ', '\t']).find_map(|option| {
        let digits = option.trim().strip_prefix("sm_")?;
        digits.trim_end_matches(['a', 'f']).parse().ok()
    })
}

/// With `PTXVK_DUMP_PTX=DIR`, writes each PTX text the driver compiles to
/// `DIR/module-PID-N.ptx` (N counts loads in the process), to look at what a client's
/// runtime or JIT handed over. A write that fails is reported and does not fail the load.
fn dump_ptx(text: &str) {
    static LOADS: AtomicUsize = AtomicUsize::new(0);
    let Some(dir) = std::env::var_os("PTXVK_DUMP_PTX").filter(|d| !d.is_empty()) else {
        return;
    };
    let n = LOADS.fetch_add(1, Ordering::Relaxed);
    let path = std::path::Path::new(&dir).join(format!("module-{}-{n}.ptx", std::process::id()));
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text)) {
        Ok(()) => crate::trace::trace!("PTX written to {}", path.display()),
        Err(e) => eprintln!("ptxvk libcuda: PTXVK_DUMP_PTX: cannot write {}: {e}", path.display()),
    }
}

/// Loads a module image of any kind (a fatbin's wrapper or header, PTX, a cubin) into
/// the current context: the runtime's fatbins (`crate::export_table`).
///
/// # Safety
/// As [`classify`].
pub(crate) unsafe fn load_image(image: *const c_void) -> Result<usize, CUresult> {
    let d = driver()?;
    // SAFETY: forwarded (function contract).
    unsafe { load(d, image, JitOptions::default()) }
}

/// Loads a module image of any kind.
///
/// # Safety
/// As [`classify`]; `log` as [`JitOptions::write`].
unsafe fn load(d: &Driver, image: *const c_void, log: JitOptions) -> Result<usize, CUresult> {
    crate::device::current()?;
    // SAFETY: forwarded (function contract).
    match unsafe { classify(image) }? {
        Image::Ptx(text) => load_ptx(d, &text, log),
        Image::Cubin => {
            let message = "the module is a cubin (SASS for NVIDIA GPUs): ptxvk needs PTX; build \
                           with -gencode arch=compute_XX,code=compute_XX to embed it";
            eprintln!("ptxvk libcuda: {message}");
            // SAFETY: as above.
            unsafe { log.write(message) };
            Err(CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU)
        }
        Image::Fatbin => {
            // SAFETY: `classify` found a fatbin header or wrapper; the fatbin is readable
            // for the length its header gives (CUDA's contract for module images).
            let bytes = unsafe { crate::fatbin::image_bytes(image.cast()) };
            let ptx = bytes
                .map_err(|e| (CUresult::CUDA_ERROR_INVALID_IMAGE, format!("malformed fatbin: {e}")))
                .and_then(|bytes| ptx_of_fatbin(bytes, compute_capability()));
            match ptx {
                // The newest PTX that compiles; the log gets the last failure only.
                Ok(texts) => {
                    let last = texts.len().saturating_sub(1);
                    let quiet = JitOptions { buffer: 0, size: 0, ..log };
                    let mut first_error = CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU;
                    for (k, text) in texts.iter().enumerate() {
                        match load_ptx(d, text, if k == last { log } else { quiet }) {
                            Ok(module) => return Ok(module),
                            Err(e) if k == 0 => first_error = e,
                            Err(_) => {}
                        }
                    }
                    Err(first_error)
                }
                Err((code, message)) => {
                    eprintln!("ptxvk libcuda: {message}");
                    // SAFETY: as above.
                    unsafe { log.write(&message) };
                    Err(code)
                }
            }
        }
    }
}

/// The device's compute capability as one number (8.6 is 86), for picking fatbin PTX.
fn compute_capability() -> u32 {
    let (major, minor) = crate::device::compute_capability();
    major
        .checked_mul(10)
        .and_then(|m| m.checked_add(minor))
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0)
}

/// The PTX of a fatbin to try, in order (`fatbin::ptx_in_load_order`): the newest not
/// above the compute capability `cc` ptxvk reports (86 for 8.6) first, as CUDA's JIT
/// picks, then the rest. ptxvk is not bound by SM versions, so PTX whose target is above
/// `cc` still compiles when ptxvk supports every instruction in it (CuPy ships CUB as
/// compute_100 PTX only); the loader falls back to the next PTX when one fails. Otherwise
/// the error code (`CUDA_ERROR_INVALID_IMAGE` for a malformed fatbin,
/// `CUDA_ERROR_NO_BINARY_FOR_GPU` when there is no PTX, SASS only) and a message saying
/// how to rebuild.
pub(crate) fn ptx_of_fatbin(bytes: &[u8], cc: u32) -> Result<Vec<String>, (CUresult, String)> {
    use crate::fatbin::Kind;
    let malformed = |e| (CUresult::CUDA_ERROR_INVALID_IMAGE, format!("malformed fatbin: {e}"));
    let entries = crate::fatbin::parse(bytes).map_err(malformed)?;
    let ptx = crate::fatbin::ptx_in_load_order(&entries, cc);
    if !ptx.is_empty() {
        return ptx.into_iter().map(|e| e.ptx().map_err(malformed)).collect();
    }
    let found: Vec<String> = entries
        .iter()
        .map(|e| match e.kind {
            Kind::Ptx => format!("compute_{} PTX", e.arch),
            Kind::Elf => format!("sm_{} SASS", e.arch),
            Kind::Other(kind) => format!("an entry of kind {kind:#x} for arch {}", e.arch),
        })
        .collect();
    let found = if found.is_empty() { "no entries".to_owned() } else { found.join(", ") };
    let message = format!(
        "the fatbin has no PTX (it holds {found}): ptxvk needs PTX; build with -gencode \
         arch=compute_XX,code=compute_XX (XX at most {cc}, the compute capability ptxvk \
         reports) to embed it"
    );
    Err((CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU, message))
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut usize, image: *const c_void) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: `image` is a module image and `module` null or writable (CUDA's contract).
        unsafe { out(module, load(d, image, JitOptions::default())?) }
    })
}

/// A fatbin (or its wrapper), as `cuModuleLoadData` loads any image.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadFatBinary(
    module: *mut usize,
    fat_cubin: *const c_void,
) -> CUresult {
    // SAFETY: forwarded (CUDA's contract for the image and the out-pointer).
    unsafe { cuModuleLoadData(module, fat_cubin) }
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut usize,
    image: *const c_void,
    n: c_uint,
    options: *const c_int,
    values: *const *mut c_void,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: CUDA's contract for the image, the option arrays and the out-pointer.
        unsafe {
            let log = JitOptions::from_options(n, options, values);
            out(module, load(d, image, log)?)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoad(module: *mut usize, path: *const c_char) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: `path` is a NUL-terminated string (CUDA's contract).
        let path = unsafe { c_str(path) }?;
        let mut bytes = std::fs::read(path).map_err(|_| CUresult::CUDA_ERROR_FILE_NOT_FOUND)?;
        bytes.push(0);
        // SAFETY: `bytes` is a NUL-terminated image we own; `module` null or writable.
        unsafe { out(module, load(d, bytes.as_ptr().cast(), JitOptions::default())?) }
    })
}

fn unload(d: &Driver, handle: usize) -> Result<(), CUresult> {
    let m = d.modules.remove(handle).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    // Launches keep what they use alive; the handles go now.
    for (_, f) in &m.functions {
        d.functions.remove(*f);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleUnload(module: usize) -> CUresult {
    entry(|| unload(driver()?, module))
}

fn function(d: &Driver, module: usize, name: *const c_char) -> Result<usize, CUresult> {
    let m = d.modules.get(module).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    // SAFETY: `name` is a NUL-terminated string (CUDA's contract).
    let name = unsafe { c_str(name) }?;
    if let Some((_, h)) = m.functions.iter().find(|(n, _)| n == name) {
        // CUDA's lazy loading loads a function when it is looked up.
        function_of(d, *h)?.kernel()?;
        return Ok(*h);
    }
    // A kernel of the module that ptxvk could not compile: the module loaded without
    // it, and its lookup reports why (CUDA would have failed the whole module).
    if let Some(failed) = m.module.failed_kernels().iter().find(|k| k.name == name) {
        eprintln!("ptxvk libcuda: kernel `{name}` could not be compiled:\n{}", failed.rendered);
        return Err(CUresult::CUDA_ERROR_INVALID_PTX);
    }
    Err(CUresult::CUDA_ERROR_NOT_FOUND)
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    f: *mut usize,
    module: usize,
    name: *const c_char,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: `f` is null or writable (CUDA's contract).
        unsafe { out(f, function(d, module, name)?) }
    })
}

/// Which module-scope variables a lookup finds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variables {
    /// Any `.global` or `.const` variable (`cuModuleGetGlobal`).
    All,
    /// `__managed__` ones only (`cuLibraryGetManaged`).
    Managed,
}

fn global(
    d: &Driver,
    module: usize,
    dptr: *mut u64,
    bytes: *mut usize,
    name: *const c_char,
    which: Variables,
) -> Result<(), CUresult> {
    let m = d.modules.get(module).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    // SAFETY: `name` is a NUL-terminated string (CUDA's contract).
    let name = unsafe { c_str(name) }?;
    let var = m.module.data_layout().get(name).ok_or(CUresult::CUDA_ERROR_NOT_FOUND)?;
    if which == Variables::Managed && !var.managed {
        return Err(CUresult::CUDA_ERROR_NOT_FOUND);
    }
    let (address, size) =
        m.module.global_address(name).map_err(|_| CUresult::CUDA_ERROR_NOT_FOUND)?;
    if var.managed && !m.module.data_is_host_addressable() {
        eprintln!(
            "ptxvk libcuda: `__managed__` variable `{name}` needs device addresses that are \
             host pointers; this device's are not"
        );
        return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
    }
    // Either may be null (CUDA's documentation).
    if !dptr.is_null() {
        // SAFETY: non-null and writable (CUDA's contract).
        unsafe { out(dptr, address)? };
    }
    if !bytes.is_null() {
        // SAFETY: as above.
        unsafe { out(bytes, size as usize)? };
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut u64,
    bytes: *mut usize,
    module: usize,
    name: *const c_char,
) -> CUresult {
    entry(|| global(driver()?, module, dptr, bytes, name, Variables::All))
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadData(
    library: *mut usize,
    code: *const c_void,
    jit_options: *const c_int,
    jit_values: *const *mut c_void,
    n_jit: c_uint,
    _library_options: *const c_int,
    _library_values: *const *mut c_void,
    _n_library: c_uint,
) -> CUresult {
    // SAFETY: forwarded under the same contract; library options have no effect here.
    unsafe { cuModuleLoadDataEx(library, code, n_jit, jit_options, jit_values) }
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryUnload(library: usize) -> CUresult {
    entry(|| unload(driver()?, library))
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetKernel(
    kernel: *mut usize,
    library: usize,
    name: *const c_char,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let m = d.modules.get(library).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        // SAFETY: `name` is a NUL-terminated string (CUDA's contract).
        let name = unsafe { c_str(name) }?;
        // A library's kernel is not loaded until a function is asked of it (CUDA's lazy
        // loading): the runtime asks for every registered kernel up front.
        let found = m.functions.iter().find(|(n, _)| n == name).map(|(_, h)| *h);
        // SAFETY: `kernel` is null or writable (CUDA's contract).
        unsafe { out(kernel, found.ok_or(CUresult::CUDA_ERROR_NOT_FOUND)?) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetModule(module: *mut usize, library: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        d.modules.get(library).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        // SAFETY: `module` is null or writable (CUDA's contract).
        unsafe { out(module, library) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetGlobal(
    dptr: *mut u64,
    bytes: *mut usize,
    library: usize,
    name: *const c_char,
) -> CUresult {
    entry(|| global(driver()?, library, dptr, bytes, name, Variables::All))
}

/// `cuLibraryGetManaged`: the address and size of a `__managed__` variable, which the
/// host reads and writes at that address (NVIDIA's runtime points the program's
/// variable there).
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetManaged(
    dptr: *mut u64,
    bytes: *mut usize,
    library: usize,
    name: *const c_char,
) -> CUresult {
    entry(|| global(driver()?, library, dptr, bytes, name, Variables::Managed))
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelGetFunction(f: *mut usize, kernel: usize) -> CUresult {
    entry(|| {
        function_of(driver()?, kernel)?.kernel()?;
        // SAFETY: `f` is null or writable (CUDA's contract).
        unsafe { out(f, kernel) }
    })
}

/// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: the device's limit, or the kernel's
/// `.maxntid`/`.reqntid` when smaller.
pub(crate) fn max_threads_per_block(d: &Driver, f: &Function) -> Result<u32, CUresult> {
    let info = f.kernel()?.info();
    let limit = d.device().info().limits.max_workgroup_invocations;
    let threads = |b: [u32; 3]| b.iter().map(|&x| u64::from(x)).product::<u64>();
    Ok(info.maxntid.or(info.reqntid).map_or(u64::from(limit), threads).min(u64::from(limit)) as u32)
}

/// The most shared memory (static and dynamic) a block of `info`'s kernel may have:
/// the device's on-chip limit, or CUDA's for a kernel whose window is in device memory
/// (`ptxvk_lower::pass::shared_in_memory`).
pub(crate) fn shared_limit(d: &Driver, info: &ptxvk::spirv::KernelInfo) -> u32 {
    if info.shared_in_device_memory {
        ptxvk::vk::CUDA_MAX_SHARED_PER_BLOCK
    } else {
        d.device().info().limits.max_shared_memory_bytes
    }
}

/// The last `CUfunction_attribute` of CUDA 13's `cuda.h` that
/// [`function_attribute`] answers.
const LAST_FUNCTION_ATTRIBUTE: c_int = 17;

/// `cuFuncGetAttribute`'s values from what the compiler knows of the kernel.
fn function_attribute(d: &Driver, f: &Function, attrib: c_int) -> Result<c_int, CUresult> {
    use cudarc::driver::sys::CUfunction_attribute as A;
    let info = f.kernel()?.info().clone();
    let max_threads = max_threads_per_block(d, f)?;
    let value = match attrib {
        a if a == A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK as c_int => max_threads as c_int,
        a if a == A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES as c_int => {
            info.static_shared_bytes as c_int
        }
        // The module's `.const` variables (CUDA counts the module's, not the kernel's).
        a if a == A::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES as c_int => {
            let vars = &f.module.data_layout().vars;
            let bytes: u64 = vars
                .iter()
                .filter(|v| v.space == ptxvk::frontend::ast::StateSpace::Const)
                .map(|v| u64::from(v.size))
                .sum();
            bytes.min(c_int::MAX as u64) as c_int
        }
        a if a == A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES as c_int => info.local_bytes as c_int,
        // Vulkan does not report register use: the compiler's estimate of the most
        // 32-bit registers live at once, capped by CU_JIT_MAX_REGISTERS.
        a if a == A::CU_FUNC_ATTRIBUTE_NUM_REGS as c_int => {
            let regs = f.max_registers.map_or(info.registers, |cap| info.registers.min(cap.max(1)));
            regs.min(255) as c_int
        }
        // The virtual architecture the kernel was compiled from, as CUDA reports it:
        // libraries pick launch shapes by it (CUB's tuning policies, through
        // `cudaFuncGetAttributes(...).ptxVersion`), which must match the policy the
        // kernel's own code was built with, or tiles do not fit their blocks.
        a if a == A::CU_FUNC_ATTRIBUTE_PTX_VERSION as c_int => {
            let (major, minor) = crate::device::compute_capability();
            f.ptx_arch.map_or(major * 10 + minor, |arch| arch.min(c_int::MAX as u32) as c_int)
        }
        a if a == A::CU_FUNC_ATTRIBUTE_BINARY_VERSION as c_int => {
            let (major, minor) = crate::device::compute_capability();
            major * 10 + minor
        }
        a if a == A::CU_FUNC_ATTRIBUTE_CACHE_MODE_CA as c_int => 0,
        a if a == A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as c_int => {
            let set = f.max_dynamic_shared.load(Ordering::Relaxed);
            let available = shared_limit(d, &info).saturating_sub(info.static_shared_bytes);
            (if set == 0 { available } else { set }) as c_int
        }
        a if a == A::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT as c_int => -1,
        // The cluster attributes, and those newer than cudarc's table: 16
        // (`CU_FUNC_ATTRIBUTE_DEVICE_NODE_UPDATE_SUPPORTED`, no device-side graph
        // updates here) and 17, which CUDA 13's runtime asks for in
        // `cudaFuncGetAttributes`: an error there failed the whole query, and CUB's
        // host code, missing the kernel's PTX version, tuned for another architecture.
        a if (0..=LAST_FUNCTION_ATTRIBUTE).contains(&a) => 0,
        _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    };
    Ok(value)
}

fn get_attribute(value: *mut c_int, attrib: c_int, f: usize) -> Result<(), CUresult> {
    let d = driver()?;
    let func = function_of(d, f)?;
    // SAFETY: `value` is null or writable (CUDA's contract).
    unsafe { out(value, function_attribute(d, &func, attrib)?) }
}

fn set_attribute(attrib: c_int, value: c_int, f: usize) -> Result<(), CUresult> {
    use cudarc::driver::sys::CUfunction_attribute as A;
    let d = driver()?;
    let func = function_of(d, f)?;
    match attrib {
        a if a == A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as c_int => {
            let info = func.kernel()?.info();
            let (limit, fixed) = (shared_limit(d, info), info.static_shared_bytes);
            let total = u32::try_from(value).ok().and_then(|v| v.checked_add(fixed));
            match total {
                Some(t) if t <= limit => {
                    func.max_dynamic_shared.store(value as u32, Ordering::Relaxed);
                    Ok(())
                }
                _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            }
        }
        // A preference only.
        a if a == A::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT as c_int => Ok(()),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncGetAttribute(
    value: *mut c_int,
    attrib: c_int,
    f: usize,
) -> CUresult {
    entry(|| get_attribute(value, attrib, f))
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncSetAttribute(f: usize, attrib: c_int, value: c_int) -> CUresult {
    entry(|| set_attribute(attrib, value, f))
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelGetAttribute(
    value: *mut c_int,
    attrib: c_int,
    kernel: usize,
    dev: c_int,
) -> CUresult {
    entry(|| {
        crate::device::check_device(dev)?;
        get_attribute(value, attrib, kernel)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelSetAttribute(
    attrib: c_int,
    value: c_int,
    kernel: usize,
    dev: c_int,
) -> CUresult {
    entry(|| {
        crate::device::check_device(dev)?;
        set_attribute(attrib, value, kernel)
    })
}

/// Cache configuration is a preference; every setting is accepted.
#[no_mangle]
pub unsafe extern "C" fn cuFuncSetCacheConfig(f: usize, _config: c_int) -> CUresult {
    entry(|| function_of(driver()?, f).map(drop))
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelSetCacheConfig(
    kernel: usize,
    config: c_int,
    _dev: c_int,
) -> CUresult {
    // SAFETY: forwarded.
    unsafe { cuFuncSetCacheConfig(kernel, config) }
}

/// `CUjitInputType` values (CUDA driver API, `cuLinkAddData`).
const CU_JIT_INPUT_PTX: c_int = 1;
const CU_JIT_INPUT_LIBRARY: c_int = 4;

#[no_mangle]
pub unsafe extern "C" fn cuLinkCreate_v2(
    n: c_uint,
    options: *const c_int,
    values: *const *mut c_void,
    state: *mut usize,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: the option arrays hold `n` entries (CUDA's contract).
        let options = unsafe { JitOptions::from_options(n, options, values) };
        let h = d.links.insert(std::sync::Mutex::new(Link { options, ..Link::default() }));
        // SAFETY: `state` is null or writable (CUDA's contract).
        unsafe { out(state, h) }
    })
}

fn add_input(state: usize, kind: c_int, bytes: &[u8], name: &str) -> Result<(), CUresult> {
    let d = driver()?;
    let link = d.links.get(state).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    // libcudadevrt provides the cooperative-groups grid functions, which ptxvk builds
    // in (`cudaCGGetIntrinsicHandle`, `cudaCGSynchronize`): nothing to add.
    let file = name.rsplit('/').next().unwrap_or(name);
    if kind == CU_JIT_INPUT_LIBRARY && file.starts_with("libcudadevrt") {
        return Ok(());
    }
    if kind != CU_JIT_INPUT_PTX {
        eprintln!("ptxvk libcuda: cuLinkAddData of `{name}`: only PTX inputs are supported (input kind {kind})");
        return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
    }
    let text = ptx_text(name, bytes)?;
    let text = text.trim_end_matches('\0').to_owned();
    let mut l = link.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let name =
        if name.is_empty() { format!("<link input {}>", l.ptx.len()) } else { name.to_owned() };
    l.ptx.push((name, text));
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkAddData_v2(
    state: usize,
    kind: c_int,
    data: *mut c_void,
    size: usize,
    name: *const c_char,
    _n: c_uint,
    _options: *const c_int,
    _values: *const *mut c_void,
) -> CUresult {
    entry(|| {
        // SAFETY: `data` is readable for `size` bytes; `name` is null or a string.
        let (bytes, name) = unsafe { (crate::host_bytes(data, size)?, c_str(name).unwrap_or("")) };
        add_input(state, kind, bytes, name)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkAddFile_v2(
    state: usize,
    kind: c_int,
    path: *const c_char,
    _n: c_uint,
    _options: *const c_int,
    _values: *const *mut c_void,
) -> CUresult {
    entry(|| {
        // SAFETY: `path` is a NUL-terminated string (CUDA's contract).
        let path = unsafe { c_str(path) }?;
        let bytes = std::fs::read(path).map_err(|_| CUresult::CUDA_ERROR_FILE_NOT_FOUND)?;
        add_input(state, kind, &bytes, path)
    })
}

/// Completes the link: the PTX inputs linked into one PTX module
/// ([`ptxvk::compile::link_to_ptx`]: `.extern`/`.weak`/`.common` symbols resolved,
/// internal names kept apart), which `cuModuleLoadData` compiles later. Link errors
/// (duplicate or undefined symbols) go to the error log.
#[no_mangle]
pub unsafe extern "C" fn cuLinkComplete(
    state: usize,
    out_image: *mut *mut c_void,
    out_size: *mut usize,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let link = d.links.get(state).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        let mut l = link.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let max_registers = l.options.max_registers;
        let linked = match l.ptx.as_slice() {
            [] => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            [(_, one)] if max_registers.is_none() => one.clone(),
            inputs => {
                let sources = ptxvk::SourceMap::new(inputs.iter().map(|(n, t)| (n.as_str(), t)));
                // CU_JIT_MAX_REGISTERS becomes each kernel's `.maxnreg`.
                ptxvk::compile::link_to_ptx(&sources, max_registers).map_err(|e| {
                    eprintln!("ptxvk libcuda: cuLinkComplete: {e}");
                    // SAFETY: the client's log buffer (CUDA's contract).
                    unsafe { l.options.write(&e.to_string()) };
                    crate::code(e)
                })?
            }
        };
        let mut image = linked.into_bytes();
        image.push(0);
        l.output = image;
        // SAFETY: both are null or writable (CUDA's contract); the image lives until
        // cuLinkDestroy, as CUDA documents.
        unsafe {
            out(out_image, l.output.as_mut_ptr().cast())?;
            out(out_size, l.output.len())
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkDestroy(state: usize) -> CUresult {
    entry(|| driver()?.links.remove(state).map(drop).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE))
}

/// The function (kernel) behind handle `f`.
pub(crate) fn function_of(d: &Driver, f: usize) -> Result<Arc<Function>, CUresult> {
    d.functions.get(f).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
}

/// `cuFuncGetName`: the kernel's name, valid while its module is loaded.
#[no_mangle]
pub unsafe extern "C" fn cuFuncGetName(name: *mut *const c_char, f: usize) -> CUresult {
    entry(|| {
        let func = function_of(driver()?, f)?;
        // SAFETY: `name` is null or writable (CUDA's contract); the string lives in the
        // function object, which the handle table keeps until the module is unloaded.
        unsafe { out(name, func.name.as_ptr()) }
    })
}

/// `cuKernelGetName`: as [`cuFuncGetName`] (kernel and function handles are one here).
#[no_mangle]
pub unsafe extern "C" fn cuKernelGetName(name: *mut *const c_char, kernel: usize) -> CUresult {
    // SAFETY: forwarded under the same contract.
    unsafe { cuFuncGetName(name, kernel) }
}

/// `cuFuncGetModule`: the module the function was loaded from.
#[no_mangle]
pub unsafe extern "C" fn cuFuncGetModule(module: *mut usize, f: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        let handle = function_of(d, f)?.module_handle.load(Ordering::Relaxed);
        d.modules.get(handle).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        // SAFETY: `module` is null or writable (CUDA's contract).
        unsafe { out(module, handle) }
    })
}

/// `cuKernelGetLibrary`: as [`cuFuncGetModule`] (libraries and modules are one here).
#[no_mangle]
pub unsafe extern "C" fn cuKernelGetLibrary(library: *mut usize, kernel: usize) -> CUresult {
    // SAFETY: forwarded under the same contract.
    unsafe { cuFuncGetModule(library, kernel) }
}

/// `cuModuleGetFunctionCount`: how many kernels the module has.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunctionCount(count: *mut c_uint, module: usize) -> CUresult {
    entry(|| {
        let m = driver()?.modules.get(module).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        // SAFETY: `count` is null or writable (CUDA's contract).
        unsafe { out(count, m.functions.len() as c_uint) }
    })
}

/// `cuLibraryGetKernelCount`: as [`cuModuleGetFunctionCount`].
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetKernelCount(count: *mut c_uint, library: usize) -> CUresult {
    // SAFETY: forwarded under the same contract.
    unsafe { cuModuleGetFunctionCount(count, library) }
}

/// `cuModuleEnumerateFunctions`: up to `n` of the module's kernel handles, in source
/// order.
#[no_mangle]
pub unsafe extern "C" fn cuModuleEnumerateFunctions(
    functions: *mut usize,
    n: c_uint,
    module: usize,
) -> CUresult {
    entry(|| {
        let m = driver()?.modules.get(module).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        if functions.is_null() && n > 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        for (i, (_, h)) in m.functions.iter().take(n as usize).enumerate() {
            // SAFETY: `functions` holds `n` handles (CUDA's contract).
            unsafe { functions.add(i).write(*h) };
        }
        Ok(())
    })
}

/// `cuLibraryEnumerateKernels`: as [`cuModuleEnumerateFunctions`].
#[no_mangle]
pub unsafe extern "C" fn cuLibraryEnumerateKernels(
    kernels: *mut usize,
    n: c_uint,
    library: usize,
) -> CUresult {
    // SAFETY: forwarded under the same contract.
    unsafe { cuModuleEnumerateFunctions(kernels, n, library) }
}

/// `cuLibraryLoadFromFile`: [`cuLibraryLoadData`] of a file's contents.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    library: *mut usize,
    path: *const c_char,
    jit_options: *const c_int,
    jit_values: *const *mut c_void,
    n_jit: c_uint,
    _library_options: *const c_int,
    _library_values: *const *mut c_void,
    _n_library: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: `path` is a NUL-terminated string (CUDA's contract).
        let path = unsafe { c_str(path) }?;
        let mut bytes = std::fs::read(path).map_err(|_| CUresult::CUDA_ERROR_FILE_NOT_FOUND)?;
        bytes.push(0);
        // SAFETY: the option arrays hold `n_jit` entries (CUDA's contract).
        let options = unsafe { JitOptions::from_options(n_jit, jit_options, jit_values) };
        // SAFETY: `bytes` is a NUL-terminated image we own; `library` null or writable.
        unsafe { out(library, load(d, bytes.as_ptr().cast(), options)?) }
    })
}

/// `cuFuncIsLoaded`: whether the kernel has been compiled.
#[no_mangle]
pub unsafe extern "C" fn cuFuncIsLoaded(state: *mut c_int, f: usize) -> CUresult {
    // CUfunctionLoadingState: CU_FUNCTION_LOADING_STATE_UNLOADED, _LOADED.
    const UNLOADED: c_int = 0;
    const LOADED: c_int = 1;
    entry(|| {
        let f = function_of(driver()?, f)?;
        let state_now = if f.module.is_compiled(f.index) { LOADED } else { UNLOADED };
        // SAFETY: `state` is null or writable (CUDA's contract).
        unsafe { out(state, state_now) }
    })
}

/// `cuFuncLoad`: compiles the kernel now.
#[no_mangle]
pub unsafe extern "C" fn cuFuncLoad(f: usize) -> CUresult {
    entry(|| function_of(driver()?, f)?.kernel().map(|_| ()))
}

/// `cuFuncGetParamInfo`: offset and size of parameter `index` in the kernel's parameter
/// block (the CUDA ABI layout of its `.param` list); past the last one,
/// CUDA_ERROR_INVALID_VALUE.
#[no_mangle]
pub unsafe extern "C" fn cuFuncGetParamInfo(
    f: usize,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    entry(|| {
        let func = function_of(driver()?, f)?;
        let kernel = func.kernel()?;
        let slot = kernel.info().abi.params.get(index).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        // Either may be null (CUDA's documentation).
        if !offset.is_null() {
            // SAFETY: non-null and writable (CUDA's contract).
            unsafe { offset.write(slot.offset as usize) };
        }
        if !size.is_null() {
            // SAFETY: as above.
            unsafe { size.write(slot.size as usize) };
        }
        Ok(())
    })
}

/// `cuKernelGetParamInfo`: as [`cuFuncGetParamInfo`].
#[no_mangle]
pub unsafe extern "C" fn cuKernelGetParamInfo(
    kernel: usize,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    // SAFETY: forwarded under the same contract.
    unsafe { cuFuncGetParamInfo(kernel, index, offset, size) }
}

#[cfg(test)]
mod tests {
    use super::ptx_target_arch;

    #[test]
    fn the_ptx_target_is_read_from_the_module_header() {
        let ptx = |target: &str| {
            format!(".version 8.8\n{target}\n.address_size 64\n.entry k() {{ ret; }}")
        };
        assert_eq!(ptx_target_arch(&ptx(".target sm_100")), Some(100));
        assert_eq!(ptx_target_arch(&ptx(".target sm_90a")), Some(90));
        assert_eq!(ptx_target_arch(&ptx(".target sm_52, texmode_independent")), Some(52));
        assert_eq!(ptx_target_arch(&ptx(".target debug, sm_75")), Some(75));
        // A `.target` inside a function is not the module's.
        assert_eq!(ptx_target_arch(".version 8.8\n.entry k() { ret; }\n// .target sm_80"), None);
    }
}
