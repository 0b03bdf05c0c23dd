//! `libcuda.so.1` on ptxvk: the CUDA driver API on any Vulkan device, so that unmodified
//! clients (numba-cuda, cuda-python's `cuda.bindings`/`cuda.core`, programs that call the
//! driver API) run their kernels through ptxvk's compiler and runtime.
//!
//! # Shape
//!
//! One file per area of the API, as in ZLUDA: `device.rs` (devices, contexts),
//! `memory.rs` (allocations, copies, memsets, pointers, pools), `module.rs` (modules,
//! libraries, functions, globals, the JIT linker), `stream.rs` (streams, events, host
//! functions), `ipc.rs` (memory and events shared between processes), `graph.rs` (stream capture, graphs, user objects), `launch.rs` (launches,
//! occupancy), `tensor_map.rs` (tensor maps), `texture.rs`
//! (arrays, texture and surface objects) and `proc.rs`
//! (`cuGetProcAddress` and the export table). Every exported function is a thin `extern "C"` shim over a Rust
//! function returning `Result<T, CUresult>`; `entry` turns that (and any panic) into the
//! C result code.
//!
//! # Safety
//!
//! Every exported function is `unsafe extern "C"`: its caller must pass pointers as the
//! CUDA driver API documents (out-pointers writable, strings NUL-terminated, host ranges
//! readable or writable for their length). Within that contract nothing here is undefined
//! behaviour: null pointers, unknown handles, freed memory and wrong sizes are error codes.
//! Handles are numbers checked against tables, never dereferenced.
//!
//! # Model
//!
//! There is one CUDA device, ptxvk's default Vulkan device (`PTXVK_DEVICE` selects
//! another). Every context of it shares one address space and one set of streams.
#![allow(non_snake_case)]
#![allow(clippy::missing_safety_doc)] // The contract is CUDA's, stated once above.
#![deny(clippy::undocumented_unsafe_blocks)]

/// In a macro that writes an entry point with and without an argument a later CUDA added
/// (`$($arg:ident)?`): that argument, or a null pointer for the form without it.
macro_rules! arg_or_null {
    () => {
        std::ptr::null_mut()
    };
    ($arg:ident) => {
        $arg
    };
}

mod context_storage;
mod device;
mod export_table;
mod fatbin;
mod graph;
mod handles;
mod ipc;
mod launch;
mod memory;
mod module;
mod objects;
mod proc;
mod proc_table;
mod state;
mod stream;
mod tensor_map;
mod texture;
mod trace;

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

pub use cudarc::driver::sys::CUresult;

/// The driver version reported by `cuDriverGetVersion` unless `PTXVK_CUDA_DRIVER_VERSION`
/// says otherwise: CUDA 13.3, the newest driver API whose entry points this library
/// serves in their current forms (13.4 changed `cuGraphAddNode` and
/// `cuGraphNodeSetParams`). NVIDIA's runtime refuses a driver older than its own major
/// version, and NVRTC's PTX is accepted by clients that compare versions.
pub const DRIVER_VERSION: c_int = 13030;

/// The environment variable overriding [`DRIVER_VERSION`] (`13020`, or `12.9`).
pub const ENV_DRIVER_VERSION: &str = "PTXVK_CUDA_DRIVER_VERSION";

/// The version `cuDriverGetVersion` reports: [`ENV_DRIVER_VERSION`] when it holds a
/// version (`12090` or `12.9`), else [`DRIVER_VERSION`].
pub fn driver_version() -> c_int {
    std::env::var(ENV_DRIVER_VERSION).ok().and_then(|v| parse_version(&v)).unwrap_or(DRIVER_VERSION)
}

/// `12090` or `12.9` as 12090; anything else (or a version before CUDA 2.0) is `None`.
fn parse_version(text: &str) -> Option<c_int> {
    let text = text.trim();
    let v = match text.split_once('.') {
        Some((major, minor)) => {
            let (major, minor): (c_int, c_int) = (major.parse().ok()?, minor.parse().ok()?);
            if !(0..100).contains(&minor) {
                return None;
            }
            major.checked_mul(1000)?.checked_add(minor * 10)?
        }
        None => text.parse().ok()?,
    };
    (2000..1_000_000).contains(&v).then_some(v)
}

/// Runs an API function: its error, or a panic (a ptxvk bug), becomes the result code.
/// With `PTXVK_LOG=driver`, every failing call is logged with the place in this
/// library's source that answered it.
#[track_caller]
pub(crate) fn entry(f: impl FnOnce() -> Result<(), CUresult>) -> CUresult {
    let at = std::panic::Location::caller();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => CUresult::CUDA_SUCCESS,
        Ok(Err(e)) => {
            trace::trace!("{e:?} from {}:{}", at.file(), at.line());
            e
        }
        Err(_) => {
            eprintln!("ptxvk libcuda: internal error (a panic) in a driver API call");
            CUresult::CUDA_ERROR_UNKNOWN
        }
    }
}

/// Writes `value` through an out-pointer; null is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `p` is null or valid for a write of `T`.
pub(crate) unsafe fn out<T>(p: *mut T, value: T) -> Result<(), CUresult> {
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: non-null and writable by the caller's contract.
    unsafe { p.write(value) };
    Ok(())
}

/// Reads an argument passed by pointer (a copy descriptor); null is
/// `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `p` is null or valid for a read of `T`.
pub(crate) unsafe fn arg<T: Copy>(p: *const T) -> Result<T, CUresult> {
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: non-null and readable by the caller's contract.
    Ok(unsafe { p.read() })
}

/// A NUL-terminated string argument; null or non-UTF-8 is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn c_str<'a>(p: *const c_char) -> Result<&'a str, CUresult> {
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)
}

/// `len` bytes of host memory at `p` (empty when `len` is 0, even for null).
///
/// # Safety
/// `p` is readable for `len` bytes for `'a`.
pub(crate) unsafe fn host_bytes<'a>(p: *const c_void, len: usize) -> Result<&'a [u8], CUresult> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: readable for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `len` writable bytes of host memory at `p`.
///
/// # Safety
/// `p` is writable for `len` bytes for `'a` and not otherwise referenced meanwhile.
pub(crate) unsafe fn host_bytes_mut<'a>(
    p: *mut c_void,
    len: usize,
) -> Result<&'a mut [u8], CUresult> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: writable for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// The CUDA result code for a ptxvk error, printing the message to standard error so the
/// user sees why (the driver API has no other channel for most calls).
pub(crate) fn code(e: ptxvk::Error) -> CUresult {
    use ptxvk::vk::Error as Vk;
    // A kernel that faulted while it ran leaves its context unusable (`device`, *Sticky
    // errors*); a launch refused before it ran, or races alone, do not.
    let faulted = match &e {
        ptxvk::Error::KernelFailed { .. } => true,
        ptxvk::Error::CheckFailed { report, .. } => report.count > 0,
        _ => false,
    };
    let result = match &e {
        // CUDA's meaning of INVALID_PTX is "a PTX JIT compilation failed", which an
        // internal compiler error is too; the message says which.
        ptxvk::Error::Ptx { .. } | ptxvk::Error::Internal { .. } => {
            CUresult::CUDA_ERROR_INVALID_PTX
        }
        ptxvk::Error::Backend(_) => CUresult::CUDA_ERROR_INVALID_PTX,
        ptxvk::Error::NoSuchKernel { .. } => CUresult::CUDA_ERROR_NOT_FOUND,
        ptxvk::Error::KernelNotNamed { .. } | ptxvk::Error::Launch(_) => {
            CUresult::CUDA_ERROR_INVALID_VALUE
        }
        // A bad setting (`PTXVK_FLOAT`) stops the device from opening, as a missing
        // driver would.
        ptxvk::Error::Config(_) => CUresult::CUDA_ERROR_NOT_INITIALIZED,
        ptxvk::Error::KernelFailed { message, .. } if message.contains("Assertion") => {
            CUresult::CUDA_ERROR_ASSERT
        }
        ptxvk::Error::KernelFailed { .. } => CUresult::CUDA_ERROR_LAUNCH_FAILED,
        // A launch refused on a driver that computes it wrongly (the message says how
        // to get a fixed one): it did not run.
        ptxvk::Error::DriverBug(_) => CUresult::CUDA_ERROR_LAUNCH_FAILED,
        // The library's calls never run another CUDA driver.
        ptxvk::Error::NativeCuda(_) => CUresult::CUDA_ERROR_UNKNOWN,
        // What CUDA reports for the same faults (a checked launch's report says which).
        ptxvk::Error::CheckFailed { report, .. }
            if report.violations.first().is_some_and(|v| v.misaligned) =>
        {
            CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
        }
        // Races alone (racecheck): the accesses happened, the results are suspect.
        ptxvk::Error::CheckFailed { report, .. } if report.count == 0 => {
            CUresult::CUDA_ERROR_LAUNCH_FAILED
        }
        ptxvk::Error::CheckFailed { .. } => CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
        ptxvk::Error::Runtime(r) => match r {
            Vk::OutOfMemory(_) | Vk::BufferTooLarge { .. } => CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            // Every later call says the same (`state`, *Device loss*).
            Vk::DeviceLost => CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE,
            Vk::Timeout { .. } => CUresult::CUDA_ERROR_LAUNCH_TIMEOUT,
            Vk::NotReady => return CUresult::CUDA_ERROR_NOT_READY,
            Vk::MissingFeatures { .. } => CUresult::CUDA_ERROR_NOT_SUPPORTED,
            Vk::Launch(_) => CUresult::CUDA_ERROR_INVALID_VALUE,
            Vk::OutOfBounds { .. } | Vk::InvalidUse(_) | Vk::ForeignObject(_) => {
                CUresult::CUDA_ERROR_INVALID_VALUE
            }
            Vk::NoVulkan(_) | Vk::NoDevice | Vk::NoSuitableDevice { .. } => {
                CUresult::CUDA_ERROR_NO_DEVICE
            }
            _ => CUresult::CUDA_ERROR_UNKNOWN,
        },
    };
    eprintln!("ptxvk libcuda: {e}");
    if faulted {
        state::make_sticky(result);
    }
    result
}

/// [`code`] for runtime errors.
pub(crate) fn vk_code(e: ptxvk::vk::Error) -> CUresult {
    code(ptxvk::Error::from(e))
}

/// `cuInit`: opens the Vulkan device. Later calls return the first call's result.
#[no_mangle]
pub unsafe extern "C" fn cuInit(flags: c_uint) -> CUresult {
    entry(|| {
        if flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        state::init().map(|_| ())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    // SAFETY: `version` is null or writable (CUDA's contract).
    entry(|| unsafe { out(version, driver_version()) })
}

/// Not CUDA's: marks this library as ptxvk's, so that a client wanting NVIDIA's driver
/// (`ptxvk compare --cuda`, `ptxvk_native_cuda`) can tell it apart. Returns
/// ptxvk's version.
#[no_mangle]
pub extern "C" fn ptxvk_driver_library() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// `cuProfilerStart`: enables collection by an attached profiling tool. None can attach
/// to this library, so, as CUDA's does without a profiler, it succeeds and does
/// nothing (it still needs `cuInit`).
#[no_mangle]
pub unsafe extern "C" fn cuProfilerStart() -> CUresult {
    entry(|| state::driver().map(|_| ()))
}

/// `cuProfilerStop`: see [`cuProfilerStart`].
#[no_mangle]
pub unsafe extern "C" fn cuProfilerStop() -> CUresult {
    entry(|| state::driver().map(|_| ()))
}

/// `ERRORS`' entries from `CODE => c"description"`: the name is the code's own.
macro_rules! error_table {
    ($($code:ident => $text:literal,)*) => {
        &[$((
            CUresult::$code,
            // Evaluated at compile time; `stringify!` of an identifier holds no NUL.
            match CStr::from_bytes_with_nul(concat!(stringify!($code), "\0").as_bytes()) {
                Ok(name) => name,
                Err(_) => panic!("an error name with a NUL"),
            },
            $text,
        )),*]
    };
}

/// Name and description of every result code this library returns (and the common
/// others), for `cuGetErrorName` and `cuGetErrorString`.
const ERRORS: &[(CUresult, &CStr, &CStr)] = error_table! {
    CUDA_SUCCESS => c"no error",
    CUDA_ERROR_INVALID_VALUE => c"invalid argument",
    CUDA_ERROR_OUT_OF_MEMORY => c"out of memory",
    CUDA_ERROR_NOT_INITIALIZED => c"initialization error",
    CUDA_ERROR_DEINITIALIZED => c"driver shutting down",
    CUDA_ERROR_NO_DEVICE => c"no CUDA-capable device is detected",
    CUDA_ERROR_INVALID_DEVICE => c"invalid device ordinal",
    CUDA_ERROR_INVALID_IMAGE => c"device kernel image is invalid",
    CUDA_ERROR_INVALID_CONTEXT => c"invalid device context",
    CUDA_ERROR_CONTEXT_ALREADY_CURRENT => c"context already current",
    CUDA_ERROR_NO_BINARY_FOR_GPU => c"no kernel image is available for execution on the device",
    CUDA_ERROR_INVALID_PTX => c"a PTX JIT compilation failed",
    CUDA_ERROR_INVALID_SOURCE => c"device kernel image is invalid",
    CUDA_ERROR_FILE_NOT_FOUND => c"file not found",
    CUDA_ERROR_INVALID_HANDLE => c"invalid resource handle",
    CUDA_ERROR_NOT_FOUND => c"named symbol not found",
    CUDA_ERROR_NOT_READY => c"device not ready",
    CUDA_ERROR_ILLEGAL_ADDRESS => c"an illegal memory access was encountered",
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => c"too many resources requested for launch",
    CUDA_ERROR_LAUNCH_TIMEOUT => c"the launch timed out and was terminated",
    CUDA_ERROR_ASSERT => c"device-side assert triggered",
    CUDA_ERROR_LAUNCH_FAILED => c"unspecified launch failure",
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE => c"too many blocks in cooperative launch",
    CUDA_ERROR_NOT_PERMITTED => c"operation not permitted",
    CUDA_ERROR_NOT_SUPPORTED => c"operation not supported",
    CUDA_ERROR_UNSUPPORTED_LIMIT => c"limit is not supported on this architecture",
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED => c"peer access is not supported between these two devices",
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => c"peer access is already enabled",
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED => c"peer access has not been enabled",
    CUDA_ERROR_ILLEGAL_STATE => c"the operation cannot be performed in the present state",
    CUDA_ERROR_OPERATING_SYSTEM => c"OS call failed or operation not supported on this OS",
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED => c"operation not permitted when stream is capturing",
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED => c"operation failed due to a previous error during capture",
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED => c"capture was not initiated in this stream",
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED => c"capturing stream has unjoined work",
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION => c"dependency created on uncaptured work in another stream",
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT => c"operation would make the legacy stream depend on a capturing blocking stream",
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => c"the graph update was not performed because it included changes which violated constraints specific to instantiated graph update",
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => c"part or all of the requested memory range is already mapped",
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED => c"pointer does not correspond to a registered memory region",
    CUDA_ERROR_UNKNOWN => c"unknown error",
};

fn error_entry(error: c_int) -> Option<&'static (CUresult, &'static CStr, &'static CStr)> {
    ERRORS.iter().find(|(code, _, _)| *code as c_int == error)
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(error: c_int, name: *mut *const c_char) -> CUresult {
    entry(|| {
        let (_, n, _) = error_entry(error).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: `name` is null or writable (CUDA's contract).
        unsafe { out(name, n.as_ptr()) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(error: c_int, text: *mut *const c_char) -> CUresult {
    entry(|| {
        let (_, _, s) = error_entry(error).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: `text` is null or writable (CUDA's contract).
        unsafe { out(text, s.as_ptr()) }
    })
}

pub use export_table::cuGetExportTable;

#[cfg(test)]
mod tests {
    #[test]
    fn driver_versions_parse_as_numbers_or_major_minor() {
        use super::parse_version;
        assert_eq!(parse_version("13020"), Some(13020));
        assert_eq!(parse_version(" 12.9 "), Some(12090));
        assert_eq!(parse_version("13.10"), Some(13100));
        for bad in ["", "x", "13.", "1.0", "13.100", "-5", "12.-1"] {
            assert_eq!(parse_version(bad), None, "{bad}");
        }
    }
}
