//! Pitched 2-D and 3-D copies (`CUDA_MEMCPY2D`, `CUDA_MEMCPY3D`), 2-D memsets and
//! `cuStreamWriteValue32`.

use super::*;
use crate::objects::Memcpy3d;

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
pub(super) const CU_MEMORYTYPE_HOST: c_uint = 1;
pub(super) const CU_MEMORYTYPE_DEVICE: c_uint = 2;
pub(super) const CU_MEMORYTYPE_ARRAY: c_uint = 3;
pub(super) const CU_MEMORYTYPE_UNIFIED: c_uint = 4;

/// One side of a pitched (2-D or 3-D) copy: where its memory is and the position and
/// layout of the region in it.
#[derive(Clone, Copy)]
pub(super) struct Side {
    pub(super) kind: c_uint,
    pub(super) host: usize,
    pub(super) device: u64,
    pub(super) x_bytes: usize,
    pub(super) y: usize,
    pub(super) z: usize,
    pub(super) pitch: usize,
    /// Rows from one slice to the next (3-D copies).
    pub(super) slice_rows: usize,
    /// The `CUarray` of an array side, whose own layout replaces the pitches.
    pub(super) array: usize,
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
pub(super) unsafe fn copy_pitched(
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
pub(super) unsafe fn memcpy_2d(
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

const _: () = assert!(
    std::mem::size_of::<Memcpy3d>() == std::mem::size_of::<cudarc::driver::sys::CUDA_MEMCPY3D>()
);

/// A 3-D copy.
///
/// # Safety
/// As [`memcpy_2d`], for a `CUDA_MEMCPY3D`.
pub(super) unsafe fn memcpy_3d(
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
pub(super) fn known_type(kind: c_uint) -> bool {
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
    pub(super) fn linear(
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
pub(super) unsafe fn copy_3d(
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

pub(super) use pitched_copies;

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
pub(super) fn write_value32(
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
