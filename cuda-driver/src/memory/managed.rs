//! Managed memory hints: `cuMemAdvise` and `cuMemPrefetchAsync` (one device: checked, then
//! nothing to move).

use super::*;

/// The managed allocation range `[ptr, ptr + count)` lies in, or INVALID_VALUE.
pub(super) fn managed_range(d: &Driver, ptr: u64, count: usize) -> Result<(), CUresult> {
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

pub(super) fn advise(ptr: u64, count: usize, advice: c_int) -> Result<(), CUresult> {
    // CU_MEM_ADVISE_SET_READ_MOSTLY (1) to CU_MEM_ADVISE_UNSET_ACCESSED_BY (6).
    if !(1..=6).contains(&advice) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    managed_range(driver()?, ptr, count)
}

/// `cuMemPrefetchAsync`: a managed range is already where both host and device reach it
/// (see [`cuMemAdvise`]); the range and the stream are checked, nothing is moved.
pub(super) fn prefetch(
    ptr: u64,
    count: usize,
    stream: usize,
    per_thread: bool,
) -> Result<(), CUresult> {
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
