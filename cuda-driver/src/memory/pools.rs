//! Stream-ordered allocation: memory pools and `cuMemAllocAsync`/`cuMemFreeAsync`.

use super::*;

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

pub(super) fn pool(
    d: &Driver,
    handle: usize,
) -> Result<std::sync::Arc<ptxvk::vk::MemPool>, CUresult> {
    d.pools.get(handle).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
}

#[no_mangle]
pub unsafe extern "C" fn cuMemPoolCreate(handle: *mut usize, _props: *const c_void) -> CUresult {
    entry(|| {
        let d = driver()?;
        let p = d.device().vk().create_pool().map_err(vk_code)?;
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

pub(super) fn alloc_async(
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

pub(super) fn free_async(dptr: u64, stream: usize, per_thread: bool) -> Result<(), CUresult> {
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
