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

use crate::graph::{CopyOp, MemsetParams, Op};
use crate::state::{driver, Allocation, Driver};
use crate::stream::{stream_of, work_stream, StreamRef};
use crate::{entry, host_bytes, host_bytes_mut, out, vk_code};

/// The allocation holding device address `ptr` and the offset into it; any live
/// allocation counts (module globals too). Unknown addresses are
/// `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn resolve(d: &Driver, ptr: u64) -> Result<(Buffer, u64), CUresult> {
    d.device
        .vk()
        .resolve(ptr)
        .map(|r| (r.buffer, r.offset))
        .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
}

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
        let buffer = crate::ipc::alloc(d.device.vk(), size as u64).map_err(vk_code)?;
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
        let buffer = d.device.vk().alloc(size as u64).map_err(vk_code)?;
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
        d.device.synchronize().map_err(crate::code)?;
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
    let buffer = d.device.vk().alloc_host(size as u64).map_err(vk_code)?;
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
    d.device.synchronize().map_err(crate::code)?;
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
        let buffer = unsafe { d.device.vk().register_host(p.cast(), size) }.map_err(vk_code)?;
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
        let buffer = d.device.vk().alloc_managed(size as u64).map_err(vk_code)?;
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

/// Classifies a unified-addressing pointer (`cuMemcpy`): an allocation of the device, or
/// host memory.
fn place(d: &Driver, ptr: u64) -> Place {
    match resolve(d, ptr) {
        Ok((buffer, offset)) => Place::Device(buffer, offset),
        Err(_) => Place::Host(ptr as usize),
    }
}

/// Copies `len` bytes between any two places in `stream`'s order. Copies to or from host
/// memory wait for the stream (host data is staged at once for uploads).
///
/// # Safety
/// Host places are readable (source) or writable (destination) for `len` bytes.
unsafe fn copy(
    dst: Place,
    src: Place,
    len: usize,
    stream: &StreamRef,
    wait: bool,
) -> Result<(), CUresult> {
    let s = stream.get();
    match (dst, src) {
        (Place::Device(db, doff), Place::Device(sb, soff)) => {
            if doff + len as u64 > db.size() || soff + len as u64 > sb.size() {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            s.copy_buffer(&sb, soff, &db, doff, len as u64).map_err(vk_code)?;
            if wait {
                s.synchronize().map_err(vk_code)?;
            }
            Ok(())
        }
        (Place::Device(db, doff), Place::Host(h)) => {
            // SAFETY: readable for `len` bytes (function contract).
            let data = unsafe { host_bytes(h as *const c_void, len) }?;
            let result = if wait {
                s.copy_to_buffer_sync(&db, doff, data)
            } else {
                s.copy_to_buffer(&db, doff, data)
            };
            result.map_err(vk_code)
        }
        (Place::Host(h), Place::Device(sb, soff)) => {
            // SAFETY: writable for `len` bytes (function contract).
            let data = unsafe { host_bytes_mut(h as *mut c_void, len) }?;
            s.copy_from_buffer(&sb, soff, data).map_err(vk_code)
        }
        (Place::Host(dh), Place::Host(sh)) => {
            s.synchronize().map_err(vk_code)?;
            // SAFETY: both ranges valid for `len` bytes (function contract); `copy`
            // allows overlap.
            unsafe { std::ptr::copy(sh as *const u8, dh as *mut u8, len) };
            Ok(())
        }
    }
}

/// Which side of a copy is device memory: as the entry point says (`cuMemcpyHtoD`, …), or
/// found from the address (`cuMemcpy`, unified addressing).
#[derive(Clone, Copy)]
enum Kinds {
    Given { dst_device: bool, src_device: bool },
    Unified,
}

/// One copy entry point: `dst`/`src` classified by `kinds`, on `stream`.
///
/// # Safety
/// As [`copy`].
unsafe fn memcpy(
    dst: u64,
    src: u64,
    len: usize,
    kinds: Kinds,
    stream: usize,
    per_thread: bool,
    wait: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    if len == 0 {
        return Ok(());
    }
    let s = stream_of(d, stream, per_thread)?;
    let side = |ptr: u64, device: Option<bool>| -> Result<Place, CUresult> {
        match device {
            Some(true) => {
                let (b, o) = resolve_range(d, ptr, len)?;
                Ok(Place::Device(b, o))
            }
            Some(false) => Ok(Place::Host(ptr as usize)),
            None => Ok(place(d, ptr)),
        }
    };
    let (dst_device, src_device) = match kinds {
        Kinds::Given { dst_device, src_device } => (Some(dst_device), Some(src_device)),
        Kinds::Unified => (None, None),
    };
    let (to, from) = (side(dst, dst_device)?, side(src, src_device)?);
    // A capturing stream records the copy, to run against the memory as it is then.
    let linear = || Memcpy3d::linear(dst, dst_device, src, src_device, len);
    if crate::graph::record(&s, || Op::Memcpy(CopyOp(linear())))? {
        return Ok(());
    }
    // SAFETY: forwarded (function contract).
    unsafe { copy(to, from, len, &s, wait) }
}

macro_rules! copies {
    ($($name:ident($dst:ident: $dt:ty, $src:ident: $st:ty) => ($dd:expr, $sd:expr), $wait:expr, $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($dst: $dt, $src: $st, len: usize) -> CUresult {
            // SAFETY: host ranges valid for `len` bytes (CUDA's contract).
            entry(|| unsafe {
                memcpy($dst as u64, $src as u64, len, Kinds::Given { dst_device: $dd, src_device: $sd }, 0, $pt, $wait)
            })
        }
    )*};
}

macro_rules! async_copies {
    ($($name:ident($dst:ident: $dt:ty, $src:ident: $st:ty) => ($dd:expr, $sd:expr), $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($dst: $dt, $src: $st, len: usize, stream: usize) -> CUresult {
            // SAFETY: host ranges valid for `len` bytes (CUDA's contract).
            entry(|| unsafe {
                memcpy($dst as u64, $src as u64, len, Kinds::Given { dst_device: $dd, src_device: $sd }, stream, $pt, false)
            })
        }
    )*};
}

copies! {
    cuMemcpyHtoD_v2(dst: u64, src: *const c_void) => (true, false), true, false;
    cuMemcpyDtoH_v2(dst: *mut c_void, src: u64) => (false, true), true, false;
    cuMemcpyDtoD_v2(dst: u64, src: u64) => (true, true), false, false;
    cuMemcpyHtoD_v2_ptds(dst: u64, src: *const c_void) => (true, false), true, true;
    cuMemcpyDtoH_v2_ptds(dst: *mut c_void, src: u64) => (false, true), true, true;
    cuMemcpyDtoD_v2_ptds(dst: u64, src: u64) => (true, true), false, true;
}

async_copies! {
    cuMemcpyHtoDAsync_v2(dst: u64, src: *const c_void) => (true, false), false;
    cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: u64) => (false, true), false;
    cuMemcpyDtoDAsync_v2(dst: u64, src: u64) => (true, true), false;
    cuMemcpyHtoDAsync_v2_ptsz(dst: u64, src: *const c_void) => (true, false), true;
    cuMemcpyDtoHAsync_v2_ptsz(dst: *mut c_void, src: u64) => (false, true), true;
    cuMemcpyDtoDAsync_v2_ptsz(dst: u64, src: u64) => (true, true), true;
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpy(dst: u64, src: u64, len: usize) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { memcpy(dst, src, len, Kinds::Unified, 0, false, true) })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpy_ptds(dst: u64, src: u64, len: usize) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { memcpy(dst, src, len, Kinds::Unified, 0, true, true) })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyAsync(dst: u64, src: u64, len: usize, stream: usize) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { memcpy(dst, src, len, Kinds::Unified, stream, false, false) })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyAsync_ptsz(
    dst: u64,
    src: u64,
    len: usize,
    stream: usize,
) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { memcpy(dst, src, len, Kinds::Unified, stream, true, false) })
}

/// A memset in stream order. The synchronous forms (`wait`) return once it is done when the
/// target is host memory (pinned, registered or managed), as CUDA's do.
fn memset(
    dptr: u64,
    pattern: Pattern,
    count: usize,
    stream: usize,
    per_thread: bool,
    wait: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    let bytes =
        count.checked_mul(pattern.size() as usize).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    if bytes == 0 {
        return Ok(());
    }
    let (buffer, offset) = resolve_range(d, dptr, bytes)?;
    let s = stream_of(d, stream, per_thread)?;
    if crate::graph::record(&s, || Op::Memset(MemsetParams::new(dptr, 0, pattern, count, 1)))? {
        return Ok(());
    }
    s.get().memset(&buffer, offset, bytes as u64, pattern).map_err(vk_code)?;
    if wait && buffer.kind() != ptxvk::vk::MemoryKind::Device {
        s.get().synchronize().map_err(vk_code)?;
    }
    Ok(())
}

macro_rules! memsets {
    ($($name:ident($t:ty) => $pattern:ident, $async:tt, $pt:expr;)*) => {$(
        memsets!(@one $name [$t] $pattern $async $pt);
    )*};
    (@one $name:ident [$t:ty] $pattern:ident sync $pt:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dptr: u64, value: $t, count: usize) -> CUresult {
            entry(|| memset(dptr, Pattern::$pattern(value), count, 0, $pt, true))
        }
    };
    (@one $name:ident [$t:ty] $pattern:ident async $pt:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dptr: u64, value: $t, count: usize, stream: usize) -> CUresult {
            entry(|| memset(dptr, Pattern::$pattern(value), count, stream, $pt, false))
        }
    };
}

memsets! {
    cuMemsetD8_v2(u8) => U8, sync, false;
    cuMemsetD16_v2(u16) => U16, sync, false;
    cuMemsetD32_v2(u32) => U32, sync, false;
    cuMemsetD8Async(u8) => U8, async, false;
    cuMemsetD16Async(u16) => U16, async, false;
    cuMemsetD32Async(u32) => U32, async, false;
    cuMemsetD8_v2_ptds(u8) => U8, sync, true;
    cuMemsetD16_v2_ptds(u16) => U16, sync, true;
    cuMemsetD32_v2_ptds(u32) => U32, sync, true;
    cuMemsetD8Async_ptsz(u8) => U8, async, true;
    cuMemsetD16Async_ptsz(u16) => U16, async, true;
    cuMemsetD32Async_ptsz(u32) => U32, async, true;
}

/// `cuPointerGetAttribute` for device, managed, pinned and registered memory.
#[no_mangle]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attribute: i32,
    ptr: u64,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let found = locate(d, ptr).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: `data` is null or writable for the attribute's type (CUDA's contract).
        unsafe { pointer_attribute(d, data, attribute, Some(&found)) }
    })
}

/// `cuPointerGetAttributes`: several attributes at once. Unlike the single form, an
/// address this driver did not make is no error: its attributes take CUDA's
/// documented defaults (no context, memory type 0, null pointers, not managed, device
/// ordinal -2).
#[no_mangle]
pub unsafe extern "C" fn cuPointerGetAttributes(
    count: c_uint,
    attributes: *const i32,
    data: *mut *mut c_void,
    ptr: u64,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        if count > 0 && (attributes.is_null() || data.is_null()) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let found = locate(d, ptr);
        for i in 0..count as usize {
            // SAFETY: both arrays hold `count` elements, and each `data[i]` is writable
            // for `attributes[i]`'s type (CUDA's contract).
            unsafe {
                let attribute = *attributes.add(i);
                pointer_attribute(d, *data.add(i), attribute, found.as_ref())?;
            }
        }
        Ok(())
    })
}

/// The allocation holding `ptr` (device, managed, pool, pinned or registered host
/// memory) and the offset in it.
fn locate(d: &Driver, ptr: u64) -> Option<(Buffer, u64)> {
    resolve(d, ptr).ok().or_else(|| host_allocation(d, ptr as usize))
}

/// `CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL`, new in CUDA 13 (not in `cudarc`).
const CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL: i32 = 22;

/// Writes `attribute` of the allocation `found` (or its default for an unknown
/// address) to `data`.
///
/// # Safety
/// `data` is null or writable for the attribute's type.
unsafe fn pointer_attribute(
    d: &Driver,
    data: *mut c_void,
    attribute: i32,
    found: Option<&(Buffer, u64)>,
) -> Result<(), CUresult> {
    use cudarc::driver::sys::CUmemorytype as M;
    use cudarc::driver::sys::CUpointer_attribute as P;
    let managed =
        found.is_some_and(|(b, _)| d.allocations().get(&b.address()).is_some_and(|a| a.managed));
    let host = found.is_some_and(|(b, _)| b.kind() != ptxvk::vk::MemoryKind::Device) && !managed;
    let primary = d.primary.lock().unwrap_or_else(std::sync::PoisonError::into_inner).handle;
    let address = found.map_or(0, |(b, offset)| b.address() + offset);
    // SAFETY: in every arm, `data` is null or writable for the attribute's type (the
    // caller's contract).
    unsafe {
        match attribute {
            a if a == P::CU_POINTER_ATTRIBUTE_CONTEXT as i32 => {
                let context = crate::device::current().ok().or(primary).unwrap_or(0);
                out(data.cast::<usize>(), if found.is_some() { context } else { 0 })
            }
            a if a == P::CU_POINTER_ATTRIBUTE_MEMORY_TYPE as i32 => {
                // Managed memory is device memory that is also managed
                // (CU_POINTER_ATTRIBUTE_IS_MANAGED): NVIDIA's runtime reports
                // cudaMemoryTypeManaged from that pair and rejects CU_MEMORYTYPE_UNIFIED.
                let t = match found {
                    None => 0,
                    Some(_) if host => M::CU_MEMORYTYPE_HOST as c_uint,
                    Some(_) => M::CU_MEMORYTYPE_DEVICE as c_uint,
                };
                out(data.cast::<c_uint>(), t)
            }
            a if a == P::CU_POINTER_ATTRIBUTE_DEVICE_POINTER as i32 => {
                out(data.cast::<u64>(), address)
            }
            a if a == P::CU_POINTER_ATTRIBUTE_HOST_POINTER as i32 => {
                let p = match found {
                    None => std::ptr::null_mut(),
                    Some((b, offset)) => {
                        let p = b.host_ptr().ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
                        p.wrapping_add(*offset as usize).cast::<c_void>()
                    }
                };
                out(data.cast::<*mut c_void>(), p)
            }
            a if a == P::CU_POINTER_ATTRIBUTE_IS_MANAGED as i32 => {
                out(data.cast::<c_uint>(), c_uint::from(managed))
            }
            a if a == P::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL as i32 => {
                out(data.cast::<i32>(), if found.is_some() { 0 } else { -2 })
            }
            a if a == P::CU_POINTER_ATTRIBUTE_BUFFER_ID as i32 => {
                out(data.cast::<u64>(), found.map_or(0, |(b, _)| b.address()))
            }
            a if a == P::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR as i32 => {
                out(data.cast::<u64>(), found.map_or(0, |(b, _)| b.address()))
            }
            a if a == P::CU_POINTER_ATTRIBUTE_RANGE_SIZE as i32 => {
                out(data.cast::<usize>(), found.map_or(0, |(b, _)| b.size() as usize))
            }
            a if a == P::CU_POINTER_ATTRIBUTE_MAPPED as i32 => {
                out(data.cast::<c_uint>(), c_uint::from(found.is_some()))
            }
            // CUDA 13's CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL (cuda.h): -1 for an
            // allocation not localized to a locality domain, as none is here. The
            // runtime's cudaPointerGetAttributes asks for it of managed memory.
            CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL => out(data.cast::<i32>(), -1),
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetDefaultMemPool(pool: *mut usize, dev: i32) -> CUresult {
    entry(|| {
        let d = crate::device::check_device(dev)?;
        // SAFETY: `pool` is null or writable (CUDA's contract).
        unsafe { out(pool, d.default_pool) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetMemPool(pool: *mut usize, dev: i32) -> CUresult {
    // SAFETY: forwarded; the current pool is always the default one.
    unsafe { cuDeviceGetDefaultMemPool(pool, dev) }
}

fn pool(d: &Driver, handle: usize) -> Result<std::sync::Arc<ptxvk::vk::MemPool>, CUresult> {
    d.pools.get(handle).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolCreate(handle: *mut usize, _props: *const c_void) -> CUresult {
    entry(|| {
        let d = driver()?;
        let p = d.device.vk().create_pool().map_err(vk_code)?;
        // SAFETY: `handle` is null or writable (CUDA's contract).
        unsafe { out(handle, d.pools.insert(p)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolDestroy(handle: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        if handle == d.default_pool || d.pools.remove(handle).is_none() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolTrimTo(handle: usize, keep: usize) -> CUresult {
    entry(|| {
        pool(driver()?, handle)?.trim_to(keep as u64);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolGetAttribute(
    handle: usize,
    attr: i32,
    value: *mut c_void,
) -> CUresult {
    use cudarc::driver::sys::CUmemPool_attribute as A;
    entry(|| {
        let p = pool(driver()?, handle)?;
        let v64 = match attr {
            a if a == A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD as i32 => p.release_threshold(),
            a if a == A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT as i32 => p.reserved_bytes(),
            a if a == A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH as i32 => p.reserved_high_bytes(),
            a if a == A::CU_MEMPOOL_ATTR_USED_MEM_CURRENT as i32 => p.used_bytes(),
            a if a == A::CU_MEMPOOL_ATTR_USED_MEM_HIGH as i32 => p.used_high_bytes(),
            a if (1..=3).contains(&a) => {
                // The reuse policies: int attributes, all behave as enabled.
                // SAFETY: `value` is null or writable for an int (CUDA's contract).
                return unsafe { out(value.cast::<i32>(), 1) };
            }
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        };
        // SAFETY: `value` is null or writable for a cuuint64_t (CUDA's contract).
        unsafe { out(value.cast::<u64>(), v64) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolSetAttribute(
    handle: usize,
    attr: i32,
    value: *mut c_void,
) -> CUresult {
    use cudarc::driver::sys::CUmemPool_attribute as A;
    entry(|| {
        let p = pool(driver()?, handle)?;
        if value.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        match attr {
            a if a == A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD as i32 => {
                // SAFETY: non-null and readable as a cuuint64_t (CUDA's contract).
                p.set_release_threshold(unsafe { value.cast::<u64>().read() });
                Ok(())
            }
            // Reuse policies (accepted; the pool always reuses memory only in stream
            // order) and the resettable high-water marks.
            a if (1..=3).contains(&a)
                || a == A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH as i32
                || a == A::CU_MEMPOOL_ATTR_USED_MEM_HIGH as i32 =>
            {
                Ok(())
            }
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
    })
}

fn alloc_async(
    dptr: *mut u64,
    size: usize,
    pool_handle: Option<usize>,
    stream: usize,
    per_thread: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    if size == 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let s = work_stream(d, stream, per_thread)?;
    let p = pool(d, pool_handle.unwrap_or(d.default_pool))?;
    let buffer = s.get().alloc_async(size as u64, Some(&p)).map_err(vk_code)?;
    // SAFETY: `dptr` is null or writable (CUDA's contract).
    unsafe { out(dptr, remember(d, buffer, false)) }
}

fn free_async(dptr: u64, stream: usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    let s = work_stream(d, stream, per_thread)?;
    let allocation = d.allocations().remove(&dptr).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    s.get().free_async(allocation.buffer).map_err(vk_code)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync(dptr: *mut u64, size: usize, stream: usize) -> CUresult {
    entry(|| alloc_async(dptr, size, None, stream, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync_ptsz(
    dptr: *mut u64,
    size: usize,
    stream: usize,
) -> CUresult {
    entry(|| alloc_async(dptr, size, None, stream, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync(
    dptr: *mut u64,
    size: usize,
    pool: usize,
    stream: usize,
) -> CUresult {
    entry(|| alloc_async(dptr, size, Some(pool), stream, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemAllocFromPoolAsync_ptsz(
    dptr: *mut u64,
    size: usize,
    pool: usize,
    stream: usize,
) -> CUresult {
    entry(|| alloc_async(dptr, size, Some(pool), stream, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeAsync(dptr: u64, stream: usize) -> CUresult {
    entry(|| free_async(dptr, stream, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeAsync_ptsz(dptr: u64, stream: usize) -> CUresult {
    entry(|| free_async(dptr, stream, true))
}

/// The managed allocation range `[ptr, ptr + count)` lies in, or INVALID_VALUE.
fn managed_range(d: &Driver, ptr: u64, count: usize) -> Result<(), CUresult> {
    let (buffer, _) = resolve_range(d, ptr, count)?;
    match d.allocations().get(&buffer.address()) {
        Some(a) if a.managed => Ok(()),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

/// `cuMemAdvise`: advice on managed memory. Managed memory here is one allocation that
/// host and device both reach (host-visible device memory, or host memory the device
/// maps), so no advice changes where it lives; the range and the advice are checked.
#[no_mangle]
pub unsafe extern "C" fn cuMemAdvise(
    ptr: u64,
    count: usize,
    advice: c_int,
    _device: c_int,
) -> CUresult {
    entry(|| advise(ptr, count, advice))
}

/// `cuMemAdvise_v2` (a `CUmemLocation` instead of a device ordinal).
#[no_mangle]
pub unsafe extern "C" fn cuMemAdvise_v2(
    ptr: u64,
    count: usize,
    advice: c_int,
    _location: MemLocation,
) -> CUresult {
    entry(|| advise(ptr, count, advice))
}

/// `CUmemLocation`, passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MemLocation {
    pub kind: c_int,
    pub id: c_int,
}

fn advise(ptr: u64, count: usize, advice: c_int) -> Result<(), CUresult> {
    // CU_MEM_ADVISE_SET_READ_MOSTLY (1) to CU_MEM_ADVISE_UNSET_ACCESSED_BY (6).
    if !(1..=6).contains(&advice) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    managed_range(driver()?, ptr, count)
}

/// `cuMemPrefetchAsync`: a managed range is already where both host and device reach it
/// (see [`cuMemAdvise`]); the range and the stream are checked, nothing is moved.
fn prefetch(ptr: u64, count: usize, stream: usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    crate::stream::work_stream(d, stream, per_thread)?;
    managed_range(d, ptr, count)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPrefetchAsync(
    ptr: u64,
    count: usize,
    _device: c_int,
    stream: usize,
) -> CUresult {
    entry(|| prefetch(ptr, count, stream, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPrefetchAsync_ptsz(
    ptr: u64,
    count: usize,
    _device: c_int,
    stream: usize,
) -> CUresult {
    entry(|| prefetch(ptr, count, stream, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPrefetchAsync_v2(
    ptr: u64,
    count: usize,
    _location: MemLocation,
    _flags: c_uint,
    stream: usize,
) -> CUresult {
    entry(|| prefetch(ptr, count, stream, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPrefetchAsync_v2_ptsz(
    ptr: u64,
    count: usize,
    _location: MemLocation,
    _flags: c_uint,
    stream: usize,
) -> CUresult {
    entry(|| prefetch(ptr, count, stream, true))
}

/// `CUDA_MEMCPY2D` (cuda.h), with the memory types read as plain integers: a client's
/// out-of-range value must be an error, not an invalid Rust enum.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Memcpy2d {
    src_x_bytes: usize,
    src_y: usize,
    src_type: c_uint,
    src_host: *const c_void,
    src_device: u64,
    src_array: usize,
    src_pitch: usize,
    dst_x_bytes: usize,
    dst_y: usize,
    dst_type: c_uint,
    dst_host: *mut c_void,
    dst_device: u64,
    dst_array: usize,
    dst_pitch: usize,
    width_bytes: usize,
    height: usize,
}

const _: () = assert!(
    std::mem::size_of::<Memcpy2d>() == std::mem::size_of::<cudarc::driver::sys::CUDA_MEMCPY2D>()
);

/// `CUmemorytype` values.
const CU_MEMORYTYPE_HOST: c_uint = 1;
const CU_MEMORYTYPE_DEVICE: c_uint = 2;
const CU_MEMORYTYPE_ARRAY: c_uint = 3;
const CU_MEMORYTYPE_UNIFIED: c_uint = 4;

/// One side of a pitched (2-D or 3-D) copy: where its memory is and the position and
/// layout of the region in it.
#[derive(Clone, Copy)]
struct Side {
    kind: c_uint,
    host: usize,
    device: u64,
    x_bytes: usize,
    y: usize,
    z: usize,
    pitch: usize,
    /// Rows from one slice to the next (3-D copies).
    slice_rows: usize,
    /// The `CUarray` of an array side, whose own layout replaces the pitches.
    array: usize,
}

impl Side {
    /// An array side with its array's memory, pitch and rows per slice (CUDA ignores
    /// the pitches given for arrays); other sides as they are.
    fn resolved(self) -> Result<Side, CUresult> {
        if self.kind != CU_MEMORYTYPE_ARRAY {
            return Ok(self);
        }
        let a = crate::texture::array(driver()?, self.array)?;
        let (device, pitch, slice_rows) = a.layout();
        Ok(Side { device, pitch, slice_rows, ..self })
    }

    /// The address of row `row` of slice `slice` of the region, and whether it is
    /// device memory (`None`: unified, found from the address).
    fn row(&self, slice: usize, row: usize) -> Result<(u64, Option<bool>), CUresult> {
        let (base, is_device) = match self.kind {
            CU_MEMORYTYPE_HOST => (self.host as u64, Some(false)),
            // An array side has its memory and layout after `resolved`.
            CU_MEMORYTYPE_DEVICE | CU_MEMORYTYPE_ARRAY => (self.device, Some(true)),
            CU_MEMORYTYPE_UNIFIED => (self.device, None),
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        };
        let offset = (self.z + slice)
            .checked_mul(self.slice_rows)
            .and_then(|r| r.checked_add(self.y + row))
            .and_then(|r| r.checked_mul(self.pitch))
            .and_then(|o| o.checked_add(self.x_bytes))
            .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        Ok((base.wrapping_add(offset as u64), is_device))
    }
}

/// A pitched copy of `depth` slices of `height` rows of `width` bytes: each row a copy
/// in stream order; the synchronous forms wait for the last.
///
/// # Safety
/// The host sides are valid for the rows they describe (CUDA's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn copy_pitched(
    src: Side,
    dst: Side,
    [width, height, depth]: [usize; 3],
    stream: usize,
    per_thread: bool,
    wait: bool,
) -> Result<(), CUresult> {
    let (src, dst) = (src.resolved()?, dst.resolved()?);
    let spans_rows = height > 1 || depth > 1;
    if spans_rows && (src.pitch < width || dst.pitch < width) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    if depth > 1 && (src.slice_rows < height || dst.slice_rows < height) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    for slice in 0..depth {
        for row in 0..height {
            let (from, src_device) = src.row(slice, row)?;
            let (to, dst_device) = dst.row(slice, row)?;
            let kinds = match (dst_device, src_device) {
                (Some(dst_device), Some(src_device)) => Kinds::Given { dst_device, src_device },
                _ => Kinds::Unified,
            };
            let last = slice + 1 == depth && row + 1 == height;
            // SAFETY: the rows lie in the ranges the caller vouches for.
            unsafe { memcpy(to, from, width, kinds, stream, per_thread, wait && last) }?;
        }
    }
    Ok(())
}

/// A 2-D copy ([`copy_pitched`] of one slice).
///
/// # Safety
/// `p` is null or a readable `CUDA_MEMCPY2D` whose host sides are valid for the rows
/// it describes (CUDA's contract).
unsafe fn memcpy_2d(
    p: *const Memcpy2d,
    stream: usize,
    per_thread: bool,
    wait: bool,
) -> Result<(), CUresult> {
    // SAFETY: null or readable (function contract).
    let c = unsafe { crate::arg(p) }?;
    let as_3d = Memcpy3d {
        src_x_bytes: c.src_x_bytes,
        src_y: c.src_y,
        src_z: 0,
        src_lod: 0,
        src_type: c.src_type,
        src_host: c.src_host,
        src_device: c.src_device,
        src_array: c.src_array,
        reserved0: std::ptr::null_mut(),
        src_pitch: c.src_pitch,
        src_height: 0,
        dst_x_bytes: c.dst_x_bytes,
        dst_y: c.dst_y,
        dst_z: 0,
        dst_lod: 0,
        dst_type: c.dst_type,
        dst_host: c.dst_host,
        dst_device: c.dst_device,
        dst_array: c.dst_array,
        reserved1: std::ptr::null_mut(),
        dst_pitch: c.dst_pitch,
        dst_height: 0,
        width_bytes: c.width_bytes,
        height: c.height,
        depth: 1,
    };
    // SAFETY: forwarded (function contract).
    unsafe { copy_3d(as_3d, stream, per_thread, wait) }
}

/// `CUDA_MEMCPY3D` (cuda.h), memory types as plain integers (see [`Memcpy2d`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Memcpy3d {
    src_x_bytes: usize,
    src_y: usize,
    src_z: usize,
    src_lod: usize,
    src_type: c_uint,
    src_host: *const c_void,
    src_device: u64,
    src_array: usize,
    reserved0: *mut c_void,
    src_pitch: usize,
    src_height: usize,
    dst_x_bytes: usize,
    dst_y: usize,
    dst_z: usize,
    dst_lod: usize,
    dst_type: c_uint,
    dst_host: *mut c_void,
    dst_device: u64,
    dst_array: usize,
    reserved1: *mut c_void,
    dst_pitch: usize,
    dst_height: usize,
    width_bytes: usize,
    height: usize,
    depth: usize,
}

const _: () = assert!(
    std::mem::size_of::<Memcpy3d>() == std::mem::size_of::<cudarc::driver::sys::CUDA_MEMCPY3D>()
);

/// A 3-D copy.
///
/// # Safety
/// As [`memcpy_2d`], for a `CUDA_MEMCPY3D`.
unsafe fn memcpy_3d(
    p: *const Memcpy3d,
    stream: usize,
    per_thread: bool,
    wait: bool,
) -> Result<(), CUresult> {
    // SAFETY: null or readable (function contract).
    let c = unsafe { crate::arg(p) }?;
    // SAFETY: forwarded (function contract).
    unsafe { copy_3d(c, stream, per_thread, wait) }
}

/// Memory types of a copy descriptor that CUDA knows.
fn known_type(kind: c_uint) -> bool {
    (CU_MEMORYTYPE_HOST..=CU_MEMORYTYPE_UNIFIED).contains(&kind)
}

/// Checks what a copy node's descriptor must be when the node is made: known memory
/// types.
pub(crate) fn check_memcpy_3d(c: &Memcpy3d) -> Result<(), CUresult> {
    if !known_type(c.src_type) || !known_type(c.dst_type) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    Ok(())
}

/// Whether a copy may read host memory (host or unified source).
pub(crate) fn reads_host(c: &Memcpy3d) -> bool {
    matches!(c.src_type, CU_MEMORYTYPE_HOST | CU_MEMORYTYPE_UNIFIED)
}

/// Runs a copy node on `stream` (which is not capturing).
///
/// # Safety
/// The descriptor's host sides are valid for the rows they describe.
pub(crate) unsafe fn run_memcpy_3d(
    c: &Memcpy3d,
    stream: usize,
    per_thread: bool,
) -> Result<(), CUresult> {
    // SAFETY: forwarded (function contract).
    unsafe { copy_3d(*c, stream, per_thread, false) }
}

impl Memcpy3d {
    /// A copy of `len` bytes between two pointers, each device memory, host memory or
    /// (`None`) found from its address.
    fn linear(
        dst: u64,
        dst_device: Option<bool>,
        src: u64,
        src_device: Option<bool>,
        len: usize,
    ) -> Memcpy3d {
        let kind = |device: Option<bool>| match device {
            Some(true) => CU_MEMORYTYPE_DEVICE,
            Some(false) => CU_MEMORYTYPE_HOST,
            None => CU_MEMORYTYPE_UNIFIED,
        };
        let host = |ptr: u64, device: Option<bool>| {
            if device == Some(false) {
                ptr as usize
            } else {
                0
            }
        };
        let device = |ptr: u64, device: Option<bool>| if device == Some(false) { 0 } else { ptr };
        Memcpy3d {
            src_x_bytes: 0,
            src_y: 0,
            src_z: 0,
            src_lod: 0,
            src_type: kind(src_device),
            src_host: host(src, src_device) as *const c_void,
            src_device: device(src, src_device),
            src_array: 0,
            reserved0: std::ptr::null_mut(),
            src_pitch: 0,
            src_height: 0,
            dst_x_bytes: 0,
            dst_y: 0,
            dst_z: 0,
            dst_lod: 0,
            dst_type: kind(dst_device),
            dst_host: host(dst, dst_device) as *mut c_void,
            dst_device: device(dst, dst_device),
            dst_array: 0,
            reserved1: std::ptr::null_mut(),
            dst_pitch: 0,
            dst_height: 0,
            width_bytes: len,
            height: 1,
            depth: 1,
        }
    }
}

/// A 3-D copy by descriptor, or its node when `stream` is capturing.
///
/// # Safety
/// As [`memcpy_3d`].
unsafe fn copy_3d(
    c: Memcpy3d,
    stream: usize,
    per_thread: bool,
    wait: bool,
) -> Result<(), CUresult> {
    check_memcpy_3d(&c)?;
    let s = stream_of(driver()?, stream, per_thread)?;
    if crate::graph::record(&s, || Op::Memcpy(CopyOp(c)))? {
        return Ok(());
    }
    let src = Side {
        kind: c.src_type,
        host: c.src_host as usize,
        device: c.src_device,
        x_bytes: c.src_x_bytes,
        y: c.src_y,
        z: c.src_z,
        pitch: c.src_pitch,
        slice_rows: c.src_height,
        array: c.src_array,
    };
    let dst = Side {
        kind: c.dst_type,
        host: c.dst_host as usize,
        device: c.dst_device,
        x_bytes: c.dst_x_bytes,
        y: c.dst_y,
        z: c.dst_z,
        pitch: c.dst_pitch,
        slice_rows: c.dst_height,
        array: c.dst_array,
    };
    let extent = [c.width_bytes, c.height, c.depth];
    // SAFETY: forwarded (function contract).
    unsafe { copy_pitched(src, dst, extent, stream, per_thread, wait) }
}

macro_rules! pitched_copies {
    ($($name:ident($desc:ty) => $copy:ident, $form:tt, $pt:expr;)*) => {$(
        pitched_copies!(@one $name [$desc] $copy $form $pt);
    )*};
    (@one $name:ident [$desc:ty] $copy:ident sync $pt:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(p: *const $desc) -> CUresult {
            // SAFETY: CUDA's contract for the descriptor and the memory it describes.
            entry(|| unsafe { $copy(p, 0, $pt, true) })
        }
    };
    (@one $name:ident [$desc:ty] $copy:ident async $pt:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(p: *const $desc, stream: usize) -> CUresult {
            // SAFETY: as above.
            entry(|| unsafe { $copy(p, stream, $pt, false) })
        }
    };
}

pitched_copies! {
    cuMemcpy2D_v2(Memcpy2d) => memcpy_2d, sync, false;
    cuMemcpy2DUnaligned_v2(Memcpy2d) => memcpy_2d, sync, false;
    cuMemcpy2DUnaligned_v2_ptds(Memcpy2d) => memcpy_2d, sync, true;
    cuMemcpy2DAsync_v2(Memcpy2d) => memcpy_2d, async, false;
    cuMemcpy2DAsync_v2_ptsz(Memcpy2d) => memcpy_2d, async, true;
    cuMemcpy3D_v2(Memcpy3d) => memcpy_3d, sync, false;
    cuMemcpy3D_v2_ptds(Memcpy3d) => memcpy_3d, sync, true;
    cuMemcpy3DAsync_v2(Memcpy3d) => memcpy_3d, async, false;
    cuMemcpy3DAsync_v2_ptsz(Memcpy3d) => memcpy_3d, async, true;
}

/// A 2-D memset: `height` rows of `width` elements, `pitch` bytes apart (one node when
/// captured).
#[allow(clippy::too_many_arguments)]
pub(crate) fn memset_2d(
    dptr: u64,
    pitch: usize,
    pattern: Pattern,
    width: usize,
    height: usize,
    stream: usize,
    per_thread: bool,
    wait: bool,
) -> Result<(), CUresult> {
    let row_bytes = width.checked_mul(pattern.size() as usize);
    if height > 1 && row_bytes.is_none_or(|b| pitch < b) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let d = driver()?;
    let s = stream_of(d, stream, per_thread)?;
    if height > 0 && width > 0 {
        resolve(d, dptr)?;
    }
    let node = || Op::Memset(MemsetParams::new(dptr, pitch, pattern, width, height));
    if crate::graph::record(&s, node)? {
        return Ok(());
    }
    for row in 0..height {
        let at = dptr.wrapping_add((row * pitch) as u64);
        memset(at, pattern, width, stream, per_thread, wait && row + 1 == height)?;
    }
    Ok(())
}

macro_rules! memsets_2d {
    ($($name:ident($t:ty) => $pattern:ident, $async:tt, $pt:expr;)*) => {$(
        memsets_2d!(@one $name [$t] $pattern $async $pt);
    )*};
    (@one $name:ident [$t:ty] $pattern:ident sync $pt:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dptr: u64, pitch: usize, value: $t, width: usize, height: usize) -> CUresult {
            entry(|| memset_2d(dptr, pitch, Pattern::$pattern(value), width, height, 0, $pt, true))
        }
    };
    (@one $name:ident [$t:ty] $pattern:ident async $pt:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dptr: u64, pitch: usize, value: $t, width: usize, height: usize, stream: usize,
        ) -> CUresult {
            entry(|| memset_2d(dptr, pitch, Pattern::$pattern(value), width, height, stream, $pt, false))
        }
    };
}

memsets_2d! {
    cuMemsetD2D8_v2(u8) => U8, sync, false;
    cuMemsetD2D16_v2(u16) => U16, sync, false;
    cuMemsetD2D32_v2(u32) => U32, sync, false;
    cuMemsetD2D8Async(u8) => U8, async, false;
    cuMemsetD2D16Async(u16) => U16, async, false;
    cuMemsetD2D32Async(u32) => U32, async, false;
    cuMemsetD2D8_v2_ptds(u8) => U8, sync, true;
    cuMemsetD2D8Async_ptsz(u8) => U8, async, true;
}

/// `cuStreamWriteValue32`: writes `value` to the 4-byte word at `addr` in stream order
/// (a one-word fill, which Vulkan writes as a whole dword). Flag 1
/// (`CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER`) only relaxes ordering, so it is accepted.
fn write_value32(
    stream: usize,
    addr: u64,
    value: u32,
    flags: c_uint,
    per_thread: bool,
) -> Result<(), CUresult> {
    if flags > 1 || !addr.is_multiple_of(4) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    memset(addr, Pattern::U32(value), 1, stream, per_thread, false)
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWriteValue32(
    stream: usize,
    addr: u64,
    value: u32,
    flags: c_uint,
) -> CUresult {
    entry(|| write_value32(stream, addr, value, flags, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWriteValue32_v2(
    stream: usize,
    addr: u64,
    value: u32,
    flags: c_uint,
) -> CUresult {
    entry(|| write_value32(stream, addr, value, flags, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWriteValue32_ptsz(
    stream: usize,
    addr: u64,
    value: u32,
    flags: c_uint,
) -> CUresult {
    entry(|| write_value32(stream, addr, value, flags, true))
}

// Peer copies: every context is on the one device, so a peer copy is a device-to-device
// copy once both contexts are checked.

/// Checks the contexts of a peer copy.
fn peer_contexts(d: &Driver, contexts: [usize; 2]) -> Result<(), CUresult> {
    if contexts.iter().any(|&c| d.contexts.get(c).is_none()) {
        return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn memcpy_peer(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
    stream: usize,
    per_thread: bool,
) -> Result<(), CUresult> {
    peer_contexts(driver()?, [dst_ctx, src_ctx])?;
    let kinds = Kinds::Given { dst_device: true, src_device: true };
    // SAFETY: both sides are device memory, checked against their allocations.
    unsafe { memcpy(dst, src, len, kinds, stream, per_thread, false) }
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeer(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
) -> CUresult {
    entry(|| memcpy_peer(dst, dst_ctx, src, src_ctx, len, 0, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeer_ptds(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
) -> CUresult {
    entry(|| memcpy_peer(dst, dst_ctx, src, src_ctx, len, 0, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeerAsync(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
    stream: usize,
) -> CUresult {
    entry(|| memcpy_peer(dst, dst_ctx, src, src_ctx, len, stream, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyPeerAsync_ptsz(
    dst: u64,
    dst_ctx: usize,
    src: u64,
    src_ctx: usize,
    len: usize,
    stream: usize,
) -> CUresult {
    entry(|| memcpy_peer(dst, dst_ctx, src, src_ctx, len, stream, true))
}

const _: () = assert!(
    std::mem::size_of::<Memcpy3d>()
        == std::mem::size_of::<cudarc::driver::sys::CUDA_MEMCPY3D_PEER>()
);

/// `cuMemcpy3DPeer`: a `CUDA_MEMCPY3D_PEER` is a `CUDA_MEMCPY3D` whose two reserved
/// pointers are the source and destination contexts.
///
/// # Safety
/// As [`memcpy_3d`].
unsafe fn memcpy_3d_peer(
    p: *const Memcpy3d,
    stream: usize,
    per_thread: bool,
    wait: bool,
) -> Result<(), CUresult> {
    // SAFETY: null or readable (function contract).
    let c = unsafe { crate::arg(p) }?;
    peer_contexts(driver()?, [c.reserved0 as usize, c.reserved1 as usize])?;
    // SAFETY: forwarded (function contract).
    unsafe { copy_3d(c, stream, per_thread, wait) }
}

pitched_copies! {
    cuMemcpy3DPeer(Memcpy3d) => memcpy_3d_peer, sync, false;
    cuMemcpy3DPeer_ptds(Memcpy3d) => memcpy_3d_peer, sync, true;
    cuMemcpy3DPeerAsync(Memcpy3d) => memcpy_3d_peer, async, false;
    cuMemcpy3DPeerAsync_ptsz(Memcpy3d) => memcpy_3d_peer, async, true;
}

// Batched copies (CUDA 12.8).

/// `CUmemcpyAttributes` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MemcpyAttributes {
    src_access_order: c_int,
    src_location_hint: MemLocation,
    dst_location_hint: MemLocation,
    flags: c_uint,
}

const _: () = assert!(
    std::mem::size_of::<MemcpyAttributes>()
        == std::mem::size_of::<cudarc::driver::sys::CUmemcpyAttributes_st>()
);

/// `CU_MEMCPY_SRC_ACCESS_ORDER_STREAM` to `_ANY`: the valid source access orders. Each is
/// met by copying in stream order, with host sources staged during the call.
const SRC_ACCESS_ORDERS: std::ops::RangeInclusive<c_int> = 1..=3;
/// `CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE`, a hint.
const MEMCPY_FLAGS: c_uint = 1;

/// `n` items at `p` (none when `n` is 0); null otherwise is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `p` is null or readable for `n` items.
unsafe fn items<'a, T>(p: *const T, n: usize) -> Result<&'a [T], CUresult> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: readable for `n` items (function contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `cuMemcpyBatchAsync`: `count` copies between unified-addressing pointers, in stream
/// order as a whole (here, one after another). Everything is checked before any copy is
/// enqueued; an error in one copy names it (`Some(index)`).
///
/// # Safety
/// The arrays are readable for their lengths; each copy's host memory is valid for its
/// size (CUDA's contract).
#[allow(clippy::too_many_arguments)]
unsafe fn memcpy_batch(
    dsts: *const u64,
    srcs: *const u64,
    sizes: *const usize,
    count: usize,
    attrs: *const MemcpyAttributes,
    attr_starts: *const usize,
    num_attrs: usize,
    stream: usize,
    per_thread: bool,
) -> Result<(), (Option<usize>, CUresult)> {
    let invalid = |i| (i, CUresult::CUDA_ERROR_INVALID_VALUE);
    let d = driver().map_err(|e| (None, e))?;
    // "Must not be legacy NULL stream."
    if stream == 1 || (stream == 0 && !per_thread) {
        return Err(invalid(None));
    }
    stream_of(d, stream, per_thread).map_err(|e| (None, e))?;
    if count == 0 || num_attrs == 0 || num_attrs > count {
        return Err(invalid(None));
    }
    // SAFETY: (all) readable for their lengths (function contract).
    let (dsts, srcs, sizes, attrs, starts) = unsafe {
        let read = |e| (None, e);
        (
            items(dsts, count).map_err(read)?,
            items(srcs, count).map_err(read)?,
            items(sizes, count).map_err(read)?,
            items(attrs, num_attrs).map_err(read)?,
            items(attr_starts, num_attrs).map_err(read)?,
        )
    };
    if starts[0] != 0 || starts.windows(2).any(|w| w[0] >= w[1]) || starts[num_attrs - 1] >= count {
        return Err(invalid(None));
    }
    for (k, a) in attrs.iter().enumerate() {
        if !SRC_ACCESS_ORDERS.contains(&a.src_access_order) || a.flags & !MEMCPY_FLAGS != 0 {
            return Err(invalid(Some(starts[k])));
        }
    }
    // Device sides lie inside their allocations.
    for i in 0..count {
        for ptr in [dsts[i], srcs[i]] {
            if let Place::Device(buffer, offset) = place(d, ptr) {
                if offset + sizes[i] as u64 > buffer.size() {
                    return Err(invalid(Some(i)));
                }
            }
        }
    }
    for i in 0..count {
        // SAFETY: host sides valid for the copy's size (function contract).
        unsafe { memcpy(dsts[i], srcs[i], sizes[i], Kinds::Unified, stream, per_thread, false) }
            .map_err(|e| (Some(i), e))?;
    }
    Ok(())
}

/// A batch copy's error, and for CUDA 12.8's forms (a non-null `fail_index`) which copy
/// or operation failed (`SIZE_MAX`: none in particular).
///
/// # Safety
/// `fail_index` is null or writable.
unsafe fn report_failed_copy(
    fail_index: *mut usize,
    (index, error): (Option<usize>, CUresult),
) -> CUresult {
    if !fail_index.is_null() {
        // SAFETY: non-null and writable (function contract).
        unsafe { fail_index.write(index.unwrap_or(usize::MAX)) };
    }
    error
}

macro_rules! batch_copies {
    ($($name:ident($($fail:ident)?), $pt:expr;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            dsts: *const u64,
            srcs: *const u64,
            sizes: *const usize,
            count: usize,
            attrs: *const MemcpyAttributes,
            attr_starts: *const usize,
            num_attrs: usize,
            $($fail: *mut usize,)?
            stream: usize,
        ) -> CUresult {
            entry(|| {
                // SAFETY: CUDA's contract for the arrays and the memory they name.
                let result = unsafe {
                    memcpy_batch(dsts, srcs, sizes, count, attrs, attr_starts, num_attrs, stream, $pt)
                };
                let fail_index: *mut usize = arg_or_null!($($fail)?);
                // SAFETY: `fail_index` is null or writable (CUDA's contract).
                result.map_err(|failure| unsafe { report_failed_copy(fail_index, failure) })
            })
        }
    )*};
}

batch_copies! {
    cuMemcpyBatchAsync(fail_index), false;
    cuMemcpyBatchAsync_ptsz(fail_index), true;
    cuMemcpyBatchAsync_v2(), false;
    cuMemcpyBatchAsync_v2_ptsz(), true;
}

// Batched 3-D copies (CUDA 12.8).

/// `CUmemcpy3DOperand` (cuda.h): a type, then a union of a pointer operand (`ptr`,
/// `rowLength`, `layerHeight`, a location hint) and an array operand (`array`, offset
/// `x`, `y`, `z`), read as four words.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Memcpy3dOperand {
    kind: c_int,
    op: [u64; 4],
}

/// `CUDA_MEMCPY3D_BATCH_OP` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Memcpy3dBatchOp {
    src: Memcpy3dOperand,
    dst: Memcpy3dOperand,
    extent: [usize; 3],
    src_access_order: c_int,
    flags: c_uint,
}

const _: () = assert!(
    std::mem::size_of::<Memcpy3dBatchOp>()
        == std::mem::size_of::<cudarc::driver::sys::CUDA_MEMCPY3D_BATCH_OP_st>()
);

/// `CU_MEMCPY_OPERAND_TYPE_POINTER` / `_ARRAY`.
const OPERAND_POINTER: c_int = 1;
const OPERAND_ARRAY: c_int = 2;

impl Memcpy3dBatchOp {
    /// The copy as a `CUDA_MEMCPY3D`: extents in elements (bytes between pointers, the
    /// array's element size when an array is involved), pointer operands found from
    /// their addresses, tightly packed where `rowLength`/`layerHeight` are 0.
    fn descriptor(&self, d: &Driver) -> Result<Memcpy3d, CUresult> {
        let [width, height, depth] = self.extent;
        if width == 0 || height == 0 || depth == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        if !SRC_ACCESS_ORDERS.contains(&self.src_access_order) || self.flags & !MEMCPY_FLAGS != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let element = |o: &Memcpy3dOperand| match o.kind {
            OPERAND_POINTER => Ok(None),
            OPERAND_ARRAY => Ok(Some(crate::texture::array(d, o.op[0] as usize)?.element_bytes())),
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        };
        let elem = match (element(&self.src)?, element(&self.dst)?) {
            (Some(a), Some(b)) if a != b => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => 1,
        };
        let bytes =
            |n: u64| (n as usize).checked_mul(elem).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE);
        let side = |o: &Memcpy3dOperand| -> Result<Side, CUresult> {
            if o.kind == OPERAND_ARRAY {
                return Ok(Side {
                    kind: CU_MEMORYTYPE_ARRAY,
                    host: 0,
                    device: 0,
                    x_bytes: bytes(o.op[1])?,
                    y: o.op[2] as usize,
                    z: o.op[3] as usize,
                    pitch: 0,
                    slice_rows: 0,
                    array: o.op[0] as usize,
                });
            }
            let (row_length, layer_height) = (o.op[1] as usize, o.op[2] as usize);
            if (row_length != 0 && row_length < width)
                || (layer_height != 0 && layer_height < height)
            {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            let row = if row_length == 0 { width } else { row_length };
            Ok(Side {
                kind: CU_MEMORYTYPE_UNIFIED,
                host: 0,
                device: o.op[0],
                x_bytes: 0,
                y: 0,
                z: 0,
                pitch: bytes(row as u64)?,
                slice_rows: if layer_height == 0 { height } else { layer_height },
                array: 0,
            })
        };
        let (s, t) = (side(&self.src)?, side(&self.dst)?);
        Ok(Memcpy3d {
            src_x_bytes: s.x_bytes,
            src_y: s.y,
            src_z: s.z,
            src_lod: 0,
            src_type: s.kind,
            src_host: std::ptr::null(),
            src_device: s.device,
            src_array: s.array,
            reserved0: std::ptr::null_mut(),
            src_pitch: s.pitch,
            src_height: s.slice_rows,
            dst_x_bytes: t.x_bytes,
            dst_y: t.y,
            dst_z: t.z,
            dst_lod: 0,
            dst_type: t.kind,
            dst_host: std::ptr::null_mut(),
            dst_device: t.device,
            dst_array: t.array,
            reserved1: std::ptr::null_mut(),
            dst_pitch: t.pitch,
            dst_height: t.slice_rows,
            width_bytes: bytes(width as u64)?,
            height,
            depth,
        })
    }
}

/// `cuMemcpy3DBatchAsync`: each operation as a 3-D copy, one after another in stream
/// order. Every operation is checked before any is enqueued.
///
/// # Safety
/// `ops` is readable for `count` operations whose host memory is valid (CUDA's contract).
unsafe fn memcpy_3d_batch(
    count: usize,
    ops: *const Memcpy3dBatchOp,
    flags: u64,
    stream: usize,
    per_thread: bool,
) -> Result<(), (Option<usize>, CUresult)> {
    let invalid = |i| (i, CUresult::CUDA_ERROR_INVALID_VALUE);
    let d = driver().map_err(|e| (None, e))?;
    if stream == 1 || (stream == 0 && !per_thread) || flags != 0 || count == 0 {
        return Err(invalid(None));
    }
    stream_of(d, stream, per_thread).map_err(|e| (None, e))?;
    // SAFETY: readable for `count` operations (function contract).
    let ops = unsafe { items(ops, count) }.map_err(|e| (None, e))?;
    let descriptors = ops
        .iter()
        .enumerate()
        .map(|(i, op)| op.descriptor(d).map_err(|e| (Some(i), e)))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, c) in descriptors.into_iter().enumerate() {
        // SAFETY: the operands' memory is valid (function contract).
        unsafe { copy_3d(c, stream, per_thread, false) }.map_err(|e| (Some(i), e))?;
    }
    Ok(())
}

macro_rules! batch_3d_copies {
    ($($name:ident($($fail:ident)?), $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            count: usize,
            ops: *const Memcpy3dBatchOp,
            $($fail: *mut usize,)?
            flags: u64,
            stream: usize,
        ) -> CUresult {
            entry(|| {
                // SAFETY: CUDA's contract for the operations and the memory they name.
                let result = unsafe { memcpy_3d_batch(count, ops, flags, stream, $pt) };
                let fail_index: *mut usize = arg_or_null!($($fail)?);
                // SAFETY: `fail_index` is null or writable (CUDA's contract).
                result.map_err(|failure| unsafe { report_failed_copy(fail_index, failure) })
            })
        }
    )*};
}

batch_3d_copies! {
    cuMemcpy3DBatchAsync(fail_index), false;
    cuMemcpy3DBatchAsync_ptsz(fail_index), true;
    cuMemcpy3DBatchAsync_v2(), false;
    cuMemcpy3DBatchAsync_v2_ptsz(), true;
}
