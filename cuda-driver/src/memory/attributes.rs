//! Pointer attributes (`cuPointerGetAttribute`, `cuPointerGetAttributes`).

use super::*;

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
pub(super) fn locate(d: &Driver, ptr: u64) -> Option<(Buffer, u64)> {
    resolve(d, ptr).ok().or_else(|| host_allocation(d, ptr as usize))
}

/// `CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL`, new in CUDA 13 (not in `cudarc`).
pub(super) const CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL: i32 = 22;

/// Writes `attribute` of the allocation `found` (or its default for an unknown
/// address) to `data`.
///
/// # Safety
/// `data` is null or writable for the attribute's type.
pub(super) unsafe fn pointer_attribute(
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
