//! What the driver library's tests and benches share: loading `libcuda.so` as a client
//! does (with `libloading`, entry points through `cuGetProcAddress_v2`), the entry-point
//! types they use, and a current context.
#![allow(dead_code)]

pub mod nvcc;

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::PathBuf;

use libloading::{Library, Symbol};

pub type R = c_int;
pub const SUCCESS: R = 0;
pub const INVALID_VALUE: R = 1;
pub const NO_DEVICE: R = 100;
pub const INVALID_IMAGE: R = 200;
pub const NO_BINARY_FOR_GPU: R = 209;
pub const INVALID_IMAGE_OR_PTX: [R; 2] = [INVALID_IMAGE, 218];
pub const INVALID_HANDLE: R = 400;
pub const NOT_FOUND: R = 500;

pub type Load = unsafe extern "C" fn(*mut usize, *const c_void) -> R;
pub type GetFunction = unsafe extern "C" fn(*mut usize, usize, *const c_char) -> R;
pub type Alloc = unsafe extern "C" fn(*mut u64, usize) -> R;
pub type CopyToDevice = unsafe extern "C" fn(u64, *const c_void, usize) -> R;
pub type CopyToHost = unsafe extern "C" fn(*mut c_void, u64, usize) -> R;
/// `cuLaunchKernel`.
pub type Launch = unsafe extern "C" fn(
    usize,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    usize,
    *mut *mut c_void,
    *mut *mut c_void,
) -> R;

/// `cuLaunchCooperativeKernel` (`cuLaunchKernel` without `extra`).
pub type LaunchCooperative = unsafe extern "C" fn(
    usize,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    usize,
    *mut *mut c_void,
) -> R;

/// `cuCtxSynchronize`.
pub type Synchronize = unsafe extern "C" fn() -> R;

/// The entry points a test needs to load a module, move data and run a kernel; tests
/// destructure it (`let KernelCalls { load, launch, .. } = KernelCalls::new(&lib);`).
#[derive(Clone, Copy)]
pub struct KernelCalls {
    /// `cuModuleLoadData`.
    pub load: Load,
    /// `cuModuleGetFunction`.
    pub get_function: GetFunction,
    /// `cuMemAlloc`.
    pub alloc: Alloc,
    /// `cuMemcpyHtoD`.
    pub htod: CopyToDevice,
    /// `cuMemcpyDtoH`.
    pub dtoh: CopyToHost,
    /// `cuLaunchKernel`.
    pub launch: Launch,
    /// `cuCtxSynchronize`.
    pub sync: Synchronize,
}

impl KernelCalls {
    pub fn new(lib: &Library) -> Self {
        Self {
            load: proc(lib, "cuModuleLoadData"),
            get_function: proc(lib, "cuModuleGetFunction"),
            alloc: proc(lib, "cuMemAlloc"),
            htod: proc(lib, "cuMemcpyHtoD"),
            dtoh: proc(lib, "cuMemcpyDtoH"),
            launch: proc(lib, "cuLaunchKernel"),
            sync: proc(lib, "cuCtxSynchronize"),
        }
    }
}

/// A kernel parameter as `cuLaunchKernel`'s `kernelParams` holds it: a pointer to the
/// value (the library only reads through it).
pub fn arg<T>(value: &T) -> *mut c_void {
    (value as *const T).cast_mut().cast()
}

/// The file at `path` (relative to the repository root) with a NUL appended, as
/// `cuModuleLoadData` takes PTX text.
pub fn nul_terminated(path: &str) -> Vec<u8> {
    let full = format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read(&full).unwrap_or_else(|e| panic!("reading {full}: {e}"));
    text.push(0);
    text
}

/// The path of the library Cargo built next to the test or bench.
pub fn library_path() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    exe.parent().expect("deps dir").join("libcuda.so")
}

/// The library Cargo built next to the test or bench (target/<profile>/deps/; it is
/// copied to target/<profile>/ only by `cargo build`).
pub fn library() -> Library {
    let path = library_path();
    // SAFETY: loading ptxvk's own driver library, whose initialisers are Rust's.
    unsafe { Library::new(&path) }.unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

/// The library with `PTXVK_CHECK=tools` and a current context, for a checked-launch
/// test binary (the setting is read once, when the library's device opens); `None`
/// without a Vulkan device.
pub fn checked_library(tools: &str) -> Option<Library> {
    // SAFETY: set before anything in this process reads the environment concurrently
    // (each checked test binary has one test, and the library is loaded below).
    unsafe { std::env::set_var("PTXVK_CHECK", tools) };
    library_with_context()
}

/// The library with the primary context current; `None` without a Vulkan device (see
/// [`init_context`]).
pub fn library_with_context() -> Option<Library> {
    let lib = library();
    init_context(&lib).then_some(lib)
}

/// The fault kernels of `tests/ptx/check/faults.ptx` as a module (`cuModuleLoadData`).
pub fn fault_module(lib: &Library) -> usize {
    let load: Load = proc(lib, "cuModuleLoadData");
    let text = nul_terminated("tests/ptx/check/faults.ptx");
    let mut module = 0;
    // SAFETY: a NUL-terminated image and a valid out-pointer.
    assert_eq!(unsafe { load(&mut module, text.as_ptr().cast()) }, SUCCESS);
    module
}

/// Looks `name` up as clients do: `cuGetProcAddress_v2(name, &pfn, 12090, 0, &status)`.
pub fn proc<T: Copy>(lib: &Library, name: &str) -> T {
    type GetProc =
        unsafe extern "C" fn(*const c_char, *mut *const c_void, c_int, u64, *mut c_int) -> R;
    // SAFETY: the symbol has this signature.
    let get: Symbol<'_, GetProc> =
        unsafe { lib.get(b"cuGetProcAddress_v2") }.expect("cuGetProcAddress_v2");
    let cname = std::ffi::CString::new(name).expect("name");
    let mut pfn = std::ptr::null();
    let mut status = -1;
    // SAFETY: valid string and out-pointers.
    let r = unsafe { get(cname.as_ptr(), &mut pfn, 12090, 0, &mut status) };
    assert_eq!((r, status), (SUCCESS, 0), "cuGetProcAddress_v2({name})");
    assert!(!pfn.is_null());
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*const c_void>());
    // SAFETY: a function pointer of the type the caller names for this entry point.
    unsafe { std::mem::transmute_copy(&pfn) }
}

/// `cuInit` and the primary context made current; `false` (after a loud message) when
/// the machine has no Vulkan device.
pub fn init_context(lib: &Library) -> bool {
    let init: unsafe extern "C" fn(c_uint) -> R = proc(lib, "cuInit");
    let retain: unsafe extern "C" fn(*mut usize, c_int) -> R =
        proc(lib, "cuDevicePrimaryCtxRetain");
    let set_current: unsafe extern "C" fn(usize) -> R = proc(lib, "cuCtxSetCurrent");
    // SAFETY: valid arguments and out-pointers.
    unsafe {
        if init(0) == NO_DEVICE {
            assert!(std::env::var_os("CI").is_none(), "CI must have a Vulkan device (lavapipe)");
            // Straight to the stderr handle: libtest hides a passing test's eprintln!.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: no Vulkan device: cuInit returned CUDA_ERROR_NO_DEVICE"
            );
            return false;
        }
        let mut ctx = 0;
        assert_eq!(retain(&mut ctx, 0), SUCCESS);
        assert_eq!(set_current(ctx), SUCCESS);
    }
    true
}

/// What follows a kernel's fault, reported as `fault` in the primary context (current),
/// as CUDA's sticky errors: a call that needs the context returns `fault` again; a new
/// context works, and `in_new_context` runs in it (contexts share the device's memory
/// here, so it can read what the faulting kernel's other threads wrote); the primary
/// context is still unusable after it, and usable again after `cuDevicePrimaryCtxReset`.
pub fn after_sticky_fault(lib: &Library, fault: R, in_new_context: impl FnOnce()) {
    let alloc: Alloc = proc(lib, "cuMemAlloc");
    let free: unsafe extern "C" fn(u64) -> R = proc(lib, "cuMemFree");
    let sync: Synchronize = proc(lib, "cuCtxSynchronize");
    // CUDA 12.5's form (`cuCtxCreate_v4`), with no creation parameters.
    let create: unsafe extern "C" fn(*mut usize, *const c_void, c_uint, c_int) -> R =
        proc(lib, "cuCtxCreate");
    let destroy: unsafe extern "C" fn(usize) -> R = proc(lib, "cuCtxDestroy");
    let reset: unsafe extern "C" fn(c_int) -> R = proc(lib, "cuDevicePrimaryCtxReset");
    let count: unsafe extern "C" fn(*mut c_int) -> R = proc(lib, "cuDeviceGetCount");
    // SAFETY: valid arguments and out-pointers.
    unsafe {
        let mut p = 0u64;
        assert_eq!(alloc(&mut p, 4), fault, "an allocation in the faulted context");
        assert_eq!(sync(), fault, "a synchronization of the faulted context");
        let mut n = 0;
        assert_eq!(count(&mut n), SUCCESS, "a device query needs no usable context");
        let mut ctx = 0;
        assert_eq!(create(&mut ctx, std::ptr::null(), 0, 0), SUCCESS, "a new context");
        assert_eq!(alloc(&mut p, 4), SUCCESS, "an allocation in the new context");
        assert_eq!(free(p), SUCCESS);
        in_new_context();
        assert_eq!(destroy(ctx), SUCCESS);
        assert_eq!(alloc(&mut p, 4), fault, "the primary context is still unusable");
        assert_eq!(reset(0), SUCCESS, "cuDevicePrimaryCtxReset");
        assert_eq!(alloc(&mut p, 4), SUCCESS, "an allocation after the reset");
        assert_eq!(free(p), SUCCESS);
    }
}
