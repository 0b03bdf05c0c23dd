//! Batched copies (`cuMemcpyBatchAsync`, `cuMemcpy3DBatchAsync`, CUDA 12.8).

use super::*;

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
pub(super) const SRC_ACCESS_ORDERS: std::ops::RangeInclusive<c_int> = 1..=3;
/// `CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE`, a hint.
pub(super) const MEMCPY_FLAGS: c_uint = 1;

/// `n` items at `p` (none when `n` is 0); null otherwise is `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// `p` is null or readable for `n` items.
pub(super) unsafe fn items<'a, T>(p: *const T, n: usize) -> Result<&'a [T], CUresult> {
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
pub(super) unsafe fn memcpy_batch(
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
pub(super) unsafe fn report_failed_copy(
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
pub(super) const OPERAND_POINTER: c_int = 1;
pub(super) const OPERAND_ARRAY: c_int = 2;

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
pub(super) unsafe fn memcpy_3d_batch(
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
