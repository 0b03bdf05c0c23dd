//! Linear copies and memsets (`cuMemcpy*`, `cuMemsetD*`): where each side lives, and
//! copying between host and device memory through the stream.

use super::*;

/// Classifies a unified-addressing pointer (`cuMemcpy`): an allocation of the device, or
/// host memory.
pub(super) fn place(d: &Driver, ptr: u64) -> Place {
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
pub(super) unsafe fn copy(
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
pub(super) enum Kinds {
    Given { dst_device: bool, src_device: bool },
    Unified,
}

/// One copy entry point: `dst`/`src` classified by `kinds`, on `stream`.
///
/// # Safety
/// As [`copy()`].
pub(super) unsafe fn memcpy(
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
pub(super) fn memset(
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
