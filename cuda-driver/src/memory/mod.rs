//! Memory: device, pinned, registered and managed allocations; copies and memsets;
//! pointer queries; stream-ordered pools.
//!
//! Device pointers are Vulkan buffer device addresses. Every allocation made here is kept
//! in the driver's table until freed; `cuMemFree` waits for the device first (as CUDA's
//! does in practice), since a launch's parameters may point at the memory in ways the
//! runtime cannot see.

use std::ffi::{c_int, c_uint, c_void};

use cudarc::driver::sys::CUresult;
use ptxvk::vk::{Buffer, Pattern};

use crate::objects::{CopyOp, Memcpy3d, MemsetParams, Op, StreamRef};
use crate::state::{driver, resolve, stream_of, Allocation, Driver};
use crate::stream::work_stream;
use crate::{entry, host_bytes, host_bytes_mut, out, vk_code};

mod attributes;
mod batch;
mod copy;
mod managed;
mod peer;
mod pitched;
mod pools;

pub use attributes::*;
pub use batch::*;
pub use copy::*;
pub use managed::*;
pub use peer::*;
pub use pitched::*;
pub use pools::*;

/// Like [`resolve`], checking that `len` bytes from `ptr` lie inside the allocation.
fn resolve_range(d: &Driver, ptr: u64, len: usize) -> Result<(Buffer, u64), CUresult> {
    let (buffer, offset) = resolve(d, ptr)?;
    if offset + len as u64 > buffer.size() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    Ok((buffer, offset))
}

fn remember(d: &Driver, buffer: Buffer, managed: bool) -> u64 {
    let address = buffer.address();
    d.allocations().insert(address, Allocation { buffer, managed });
    address
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut u64, size: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        if size == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // Exportable where CUDA IPC can share it (`crate::ipc`).
        let buffer = crate::ipc::alloc(d.device().vk(), size as u64).map_err(vk_code)?;
        // SAFETY: `dptr` is null or writable (CUDA's contract).
        unsafe { out(dptr, remember(d, buffer, false)) }
    })
}

/// The row pitch `cuMemAllocPitch` gives: rows start on 512-byte boundaries, NVIDIA's
/// texture alignment (`CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT`), which is also a multiple
/// of the pitch alignment a pitched 2-D texture needs.
const PITCH_ALIGNMENT: usize = 512;

/// `cuMemAllocPitch`: `height` rows of `width_bytes`, each row starting a pitch after the
/// last. CUDA documents `element_size_bytes` as 4, 8 or 16 (the widest access to the
/// rows), `CUDA_ERROR_INVALID_VALUE` otherwise.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocPitch_v2(
    dptr: *mut u64,
    pitch: *mut usize,
    width_bytes: usize,
    height: usize,
    element_size_bytes: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        if ![4, 8, 16].contains(&element_size_bytes) || width_bytes == 0 || height == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let row = width_bytes
            .checked_next_multiple_of(PITCH_ALIGNMENT)
            .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let size = row.checked_mul(height).ok_or(CUresult::CUDA_ERROR_OUT_OF_MEMORY)?;
        if pitch.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let buffer = d.device().vk().alloc(size as u64).map_err(vk_code)?;
        let address = remember(d, buffer, false);
        // SAFETY: both are writable (CUDA's contract); `pitch` is checked above, and a
        // null `dptr` fails before anything is returned.
        unsafe {
            out(dptr, address).inspect_err(|_| {
                d.allocations().remove(&address);
            })?;
            out(pitch, row)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFree_v2(dptr: u64) -> CUresult {
    entry(|| {
        let d = driver()?;
        if dptr == 0 {
            return Ok(());
        }
        if !d.allocations().contains_key(&dptr) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        d.device().synchronize().map_err(crate::code)?;
        d.allocations().remove(&dptr);
        crate::ipc::forget_allocation(dptr);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        let total_bytes = d.memory_bytes();
        let used: u64 = d.allocations().values().map(|a| a.buffer.size()).sum();
        // SAFETY: both are null or writable (CUDA's contract).
        unsafe {
            out(free, total_bytes.saturating_sub(used) as usize)?;
            out(total, total_bytes as usize)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetAddressRange_v2(
    base: *mut u64,
    size: *mut usize,
    dptr: u64,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let (buffer, _) = resolve(d, dptr)?;
        // Either may be null (CUDA's documentation).
        if !base.is_null() {
            // SAFETY: non-null and writable (CUDA's contract).
            unsafe { out(base, buffer.address())? };
        }
        if !size.is_null() {
            // SAFETY: as above.
            unsafe { out(size, buffer.size() as usize)? };
        }
        Ok(())
    })
}

/// Pinned host memory: its host pointer is what the client sees.
fn alloc_host(d: &Driver, size: usize) -> Result<*mut c_void, CUresult> {
    let buffer = d.device().vk().alloc_host(size as u64).map_err(vk_code)?;
    let ptr = buffer.host_ptr().ok_or(CUresult::CUDA_ERROR_OUT_OF_MEMORY)?;
    d.host().insert(ptr as usize, buffer);
    Ok(ptr.cast())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, size: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: `pp` is null or writable (CUDA's contract).
        unsafe { out(pp, alloc_host(d, size)?) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    size: usize,
    _flags: c_uint,
) -> CUresult {
    // SAFETY: forwarded under the same contract; every flag's memory is mapped.
    unsafe { cuMemAllocHost_v2(pp, size) }
}

/// Drops the pinned or registered host memory at `p` once the device is idle; `missing`
/// when there is none.
fn release_host(p: *mut c_void, missing: CUresult) -> Result<(), CUresult> {
    let d = driver()?;
    if !d.host().contains_key(&(p as usize)) {
        return Err(missing);
    }
    d.device().synchronize().map_err(crate::code)?;
    d.host().remove(&(p as usize));
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    entry(|| release_host(p, CUresult::CUDA_ERROR_INVALID_VALUE))
}

/// The pinned or registered host allocation holding `p`, and the offset into it.
fn host_allocation(d: &Driver, p: usize) -> Option<(Buffer, u64)> {
    let host = d.host();
    let (&base, buffer) = host.range(..=p).next_back()?;
    let offset = (p - base) as u64;
    (offset < buffer.size().max(1)).then(|| (buffer.clone(), offset))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    dptr: *mut u64,
    p: *mut c_void,
    flags: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        if flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let (buffer, offset) =
            host_allocation(d, p as usize).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: `dptr` is null or writable (CUDA's contract).
        unsafe { out(dptr, buffer.address() + offset) }
    })
}

/// `cuMemHostGetFlags` of memory from `cuMemAllocHost`/`cuMemHostAlloc`: every pinned
/// allocation here is reachable from every context and mapped into the device's address
/// space whatever flags it was allocated with, so it reports `CU_MEMHOSTALLOC_PORTABLE`
/// and `CU_MEMHOSTALLOC_DEVICEMAP` (it is never write-combined). Registered memory is
/// not an allocation: `CUDA_ERROR_INVALID_VALUE`, as for any other pointer.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostGetFlags(flags: *mut c_uint, p: *mut c_void) -> CUresult {
    const CU_MEMHOSTALLOC_PORTABLE: c_uint = 0x01;
    const CU_MEMHOSTALLOC_DEVICEMAP: c_uint = 0x02;
    entry(|| {
        let d = driver()?;
        match host_allocation(d, p as usize) {
            Some((buffer, _)) if buffer.kind() == ptxvk::vk::MemoryKind::Host => {
                // SAFETY: `flags` is null or writable (CUDA's contract).
                unsafe { out(flags, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) }
            }
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostRegister_v2(
    p: *mut c_void,
    size: usize,
    _flags: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        if p.is_null() || size == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        if host_allocation(d, p as usize).is_some() {
            return Err(CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
        }
        // SAFETY: the client keeps the memory allocated until cuMemHostUnregister (CUDA's
        // contract), which waits for the device before the registration is dropped.
        let buffer = unsafe { d.device().vk().register_host(p.cast(), size) }.map_err(vk_code)?;
        d.host().insert(p as usize, buffer);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CUresult {
    entry(|| release_host(p, CUresult::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED))
}

/// Managed memory needs one address for the host and the device: available where the
/// device's addresses of host-visible memory are host pointers (lavapipe), else
/// `CUDA_ERROR_NOT_SUPPORTED`.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocManaged(
    dptr: *mut u64,
    size: usize,
    _flags: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        if size == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let buffer = d.device().vk().alloc_managed(size as u64).map_err(vk_code)?;
        if buffer.host_ptr().map(|p| p as u64) != Some(buffer.address()) {
            eprintln!(
                "ptxvk libcuda: managed memory needs device addresses that are host pointers; \
                 this device's are not"
            );
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        // SAFETY: `dptr` is null or writable (CUDA's contract).
        unsafe { out(dptr, remember(d, buffer, true)) }
    })
}

/// Where a pointer of a copy lives.
enum Place {
    Device(Buffer, u64),
    Host(usize),
}
