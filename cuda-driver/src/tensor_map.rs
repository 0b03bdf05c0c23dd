//! Tensor maps (CUDA Driver API §6.29, "Tensor Map Object Management"):
//! `cuTensorMapEncodeTiled` writes ptxvk's layout of the 128-byte `CUtensorMap`
//! (`ptxvk_abi::tensor_map`), which the bulk tensor copies of the compiled kernels read;
//! `cuTensorMapReplaceAddress` changes its address. The im2col encodings are
//! `CUDA_ERROR_NOT_SUPPORTED`: ptxvk's copies implement the tiled mode only.

use cudarc::driver::sys::CUresult;
use ptxvk_abi::tensor_map::{offset, TensorMap, TensorMapError, MAGIC, MAX_RANK, SIZE};

use crate::entry;

fn error(e: TensorMapError) -> CUresult {
    eprintln!("ptxvk libcuda: {e}");
    match e {
        TensorMapError::Invalid(_) => CUresult::CUDA_ERROR_INVALID_VALUE,
        TensorMapError::NotSupported(_) => CUresult::CUDA_ERROR_NOT_SUPPORTED,
    }
}

/// The `n` values at `p`, or `CUDA_ERROR_INVALID_VALUE` for a null `p` with `n > 0`.
///
/// # Safety
/// A non-null `p` points at `n` readable values (CUDA's contract).
unsafe fn values<T: Copy>(p: *const T, n: usize) -> Result<Vec<T>, CUresult> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: non-null and `n` values long (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) }.to_vec())
}

/// `cuTensorMapEncodeTiled`. Enumerations arrive as their C `int` values, which are
/// checked rather than trusted to be valid Rust enums.
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapEncodeTiled(
    tensor_map: *mut u8,
    data_type: u32,
    rank: u32,
    global_address: u64,
    global_dim: *const u64,
    global_strides: *const u64,
    box_dim: *const u32,
    element_strides: *const u32,
    interleave: u32,
    swizzle: u32,
    l2_promotion: u32,
    oob_fill: u32,
) -> CUresult {
    entry(|| {
        let rank = rank as usize;
        if tensor_map.is_null() || !(1..=MAX_RANK).contains(&rank) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: each array holds `rank` (strides: `rank - 1`) values (CUDA's contract).
        let map = unsafe {
            TensorMap {
                data_type,
                address: global_address,
                dims: values(global_dim, rank)?,
                strides: values(global_strides, rank - 1)?,
                box_dims: values(box_dim, rank)?,
                element_strides: values(element_strides, rank)?,
                interleave,
                swizzle,
                l2_promotion,
                oob_fill,
            }
        };
        let bytes = map.encode().map_err(error)?;
        // SAFETY: `tensor_map` points at a writable `CUtensorMap` of `SIZE` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), tensor_map, SIZE) };
        Ok(())
    })
}

/// `cuTensorMapReplaceAddress`: a new 16-byte aligned address in a map ptxvk encoded.
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapReplaceAddress(tensor_map: *mut u8, address: u64) -> CUresult {
    entry(|| {
        if tensor_map.is_null() || !address.is_multiple_of(16) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let mut bytes = [0u8; SIZE];
        // SAFETY: `tensor_map` points at a readable and writable `CUtensorMap`.
        unsafe { std::ptr::copy_nonoverlapping(tensor_map, bytes.as_mut_ptr(), SIZE) };
        let magic = offset::MAGIC as usize;
        if bytes[magic..magic + 4] != MAGIC.to_le_bytes() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let at = offset::ADDRESS as usize;
        bytes[at..at + 8].copy_from_slice(&address.to_le_bytes());
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), tensor_map, SIZE) };
        Ok(())
    })
}

/// `cuTensorMapEncodeIm2col`: not implemented (module doc).
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapEncodeIm2col() -> CUresult {
    eprintln!("ptxvk libcuda: im2col tensor maps are not supported (tiled ones are)");
    CUresult::CUDA_ERROR_NOT_SUPPORTED
}

/// `cuTensorMapEncodeIm2colWide`: not implemented (module doc).
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapEncodeIm2colWide() -> CUresult {
    eprintln!("ptxvk libcuda: im2col tensor maps are not supported (tiled ones are)");
    CUresult::CUDA_ERROR_NOT_SUPPORTED
}
