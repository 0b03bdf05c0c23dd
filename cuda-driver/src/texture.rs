//! CUDA arrays, texture objects and surface objects (CUDA Driver API §6.22, §6.27-28).
//!
//! A `CUarray` is device memory holding its texels row after row (the pitch is a row's
//! bytes), then slice after slice or layer after layer, with its format; `cuMemcpy2D`/
//! `cuMemcpy3D` copy to and from it through that layout (`memory.rs`). A `CUtexObject`
//! or `CUsurfObject` is the device address of ptxvk's descriptor (`ptxvk_abi::texture`)
//! for an array, linear memory or pitched 2-D memory, which the kernels read at run
//! time (`ptxvk_lower`'s `pass::expand_texture`). A mipmapped array keeps its levels
//! packed in one allocation, level after level. Not implemented
//! (`CUDA_ERROR_NOT_SUPPORTED`): resource views and the newer array formats.

use std::ffi::{c_int, c_uint};

use cudarc::driver::sys::CUresult;
use ptxvk::{AddressMode, ChannelKind, TextureDesc};

use crate::objects::{Array, Array3dDescriptor, Mipmapped, Reference};
use crate::state::{driver, Driver};
use crate::{arg, entry, out, vk_code};

impl Array {
    fn pitch(&self) -> usize {
        self.desc.width * self.channel_bytes as usize * self.desc.channels as usize
    }

    /// Bytes per element (all channels of one texel).
    pub(crate) fn element_bytes(&self) -> usize {
        self.channel_bytes as usize * self.desc.channels as usize
    }

    /// The device address, row pitch and rows per slice of the array's memory, for
    /// pitched copies.
    pub(crate) fn layout(&self) -> (u64, usize, usize) {
        (self.buffer.address() + self.offset, self.pitch(), self.desc.height.max(1))
    }

    /// The texture over the array's texels (no sampler state).
    fn texture(&self) -> TextureDesc {
        let a = &self.desc;
        let layered = a.flags & (LAYERED | CUBEMAP) != 0;
        let (address, pitch, rows) = self.layout();
        TextureDesc {
            address,
            width: a.width as u32,
            height: a.height.max(1) as u32,
            depth: if layered { 1 } else { a.depth.max(1) as u32 },
            layers: if layered { a.depth as u32 } else { 0 },
            row_pitch: pitch as u64,
            slice_pitch: (pitch * rows) as u64,
            kind: self.kind,
            channel_bytes: self.channel_bytes,
            channels: a.channels,
            ..TextureDesc::default()
        }
    }
}

/// `CUDA_ARRAY3D_LAYERED`, `CUDA_ARRAY3D_SURFACE_LDST`, `CUDA_ARRAY3D_CUBEMAP`.
const LAYERED: c_uint = 1;
const SURFACE_LDST: c_uint = 2;
const CUBEMAP: c_uint = 4;
const TEXTURE_GATHER: c_uint = 8;

/// The channel kind and bytes of `CUarray_format` value `f`.
fn channel_format(f: c_uint) -> Result<(ChannelKind, u32), CUresult> {
    Ok(match f {
        0x01 => (ChannelKind::Unsigned, 1),
        0x02 => (ChannelKind::Unsigned, 2),
        0x03 => (ChannelKind::Unsigned, 4),
        0x08 => (ChannelKind::Signed, 1),
        0x09 => (ChannelKind::Signed, 2),
        0x0a => (ChannelKind::Signed, 4),
        0x10 => (ChannelKind::Float, 2),
        0x20 => (ChannelKind::Float, 4),
        // The block-compressed, NV12 and packed UNORM/SNORM formats of CUDA 11.5+.
        _ => return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED),
    })
}

/// `CUDA_ARRAY_DESCRIPTOR`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ArrayDescriptor {
    width: usize,
    height: usize,
    format: c_uint,
    channels: c_uint,
}

const _: () = assert!(
    std::mem::size_of::<Array3dDescriptor>()
        == std::mem::size_of::<cudarc::driver::sys::CUDA_ARRAY3D_DESCRIPTOR>()
);

/// The channel kind and bytes of a valid array description.
fn checked(a: &Array3dDescriptor) -> Result<(ChannelKind, u32), CUresult> {
    let (kind, channel_bytes) = channel_format(a.format)?;
    if ![1, 2, 4].contains(&a.channels) || a.width == 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    if a.flags & !(LAYERED | SURFACE_LDST | CUBEMAP | TEXTURE_GATHER) != 0 {
        return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
    }
    // A cube map is six square layers (a layered one, six per cube).
    if a.flags & CUBEMAP != 0 && (a.width != a.height || a.depth == 0 || !a.depth.is_multiple_of(6))
    {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    if a.height == 0 && a.depth != 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    Ok((kind, channel_bytes))
}

/// Level `k` of an array description: sizes halved (at least 1), layers kept.
fn level_of(a: &Array3dDescriptor, k: u32) -> Array3dDescriptor {
    let half = |n: usize| if n == 0 { 0 } else { (n >> k).max(1) };
    let layered = a.flags & (LAYERED | CUBEMAP) != 0;
    Array3dDescriptor {
        width: half(a.width),
        height: half(a.height),
        depth: if layered { a.depth } else { half(a.depth) },
        ..*a
    }
}

/// The bytes of an array's texels.
fn bytes_of(a: &Array3dDescriptor, channel_bytes: u32) -> Result<usize, CUresult> {
    let texel = channel_bytes as usize * a.channels as usize;
    a.width
        .checked_mul(texel)
        .and_then(|b| b.checked_mul(a.height.max(1)))
        .and_then(|b| b.checked_mul(a.depth.max(1)))
        .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
}

/// The array for `a` at `offset` in `buffer`.
fn array_in(
    buffer: std::sync::Arc<ptxvk::vk::Buffer>,
    offset: u64,
    a: &Array3dDescriptor,
    kind: ChannelKind,
    channel_bytes: u32,
) -> Array {
    Array { buffer, offset, desc: *a, kind, channel_bytes }
}

fn create_array(d: &Driver, a: Array3dDescriptor) -> Result<usize, CUresult> {
    let (kind, channel_bytes) = checked(&a)?;
    let bytes = bytes_of(&a, channel_bytes)?;
    let buffer = std::sync::Arc::new(d.device().vk().alloc(bytes as u64).map_err(vk_code)?);
    Ok(d.arrays.insert(array_in(buffer, 0, &a, kind, channel_bytes)))
}

impl Mipmapped {
    /// The byte offset of level `k`.
    fn offset(&self, k: u32) -> Result<u64, CUresult> {
        let a = &self.base;
        (0..k).try_fold(0u64, |at, j| {
            Ok(at + bytes_of(&level_of(&a.desc, j), a.channel_bytes)? as u64)
        })
    }
}

/// The array of handle `h`.
pub(crate) fn array(d: &Driver, h: usize) -> Result<std::sync::Arc<Array>, CUresult> {
    d.arrays.get(h).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn cuArrayCreate_v2(
    handle: *mut usize,
    desc: *const ArrayDescriptor,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: null or readable (CUDA's contract).
        let a = unsafe { arg(desc) }?;
        let three = Array3dDescriptor {
            width: a.width,
            height: a.height,
            depth: 0,
            format: a.format,
            channels: a.channels,
            flags: 0,
        };
        let h = create_array(d, three)?;
        // SAFETY: null or writable (CUDA's contract).
        unsafe { out(handle, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuArray3DCreate_v2(
    handle: *mut usize,
    desc: *const Array3dDescriptor,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: null or readable (CUDA's contract).
        let a = unsafe { arg(desc) }?;
        let h = create_array(d, a)?;
        // SAFETY: null or writable (CUDA's contract).
        unsafe { out(handle, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuArrayDestroy(handle: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        d.device().synchronize().map_err(crate::code)?;
        d.arrays.remove(handle).map(drop).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuArrayGetDescriptor_v2(
    desc: *mut ArrayDescriptor,
    handle: usize,
) -> CUresult {
    entry(|| {
        let a = array(driver()?, handle)?.desc;
        if a.depth != 0 || a.flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let v = ArrayDescriptor {
            width: a.width,
            height: a.height,
            format: a.format,
            channels: a.channels,
        };
        // SAFETY: null or writable (CUDA's contract).
        unsafe { out(desc, v) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuArray3DGetDescriptor_v2(
    desc: *mut Array3dDescriptor,
    handle: usize,
) -> CUresult {
    entry(|| {
        let v = array(driver()?, handle)?.desc;
        // SAFETY: null or writable (CUDA's contract).
        unsafe { out(desc, v) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMipmappedArrayCreate(
    handle: *mut usize,
    desc: *const Array3dDescriptor,
    levels: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: null or readable (CUDA's contract).
        let a = unsafe { arg(desc) }?;
        let (kind, channel_bytes) = checked(&a)?;
        if !(1..=16).contains(&levels) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let mut total = 0u64;
        for k in 0..levels {
            total += bytes_of(&level_of(&a, k), channel_bytes)? as u64;
        }
        let buffer = std::sync::Arc::new(d.device().vk().alloc(total).map_err(vk_code)?);
        let m = Mipmapped {
            base: array_in(buffer, 0, &a, kind, channel_bytes),
            levels,
            level_arrays: std::sync::Mutex::default(),
        };
        let h = d.mipmapped.insert(m);
        // SAFETY: null or writable (CUDA's contract).
        unsafe { out(handle, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMipmappedArrayGetLevel(
    level_array: *mut usize,
    handle: usize,
    level: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let m = d.mipmapped.get(handle).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        if level >= m.levels {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let b = &m.base;
        let a = level_of(&b.desc, level);
        let view = array_in(b.buffer.clone(), m.offset(level)?, &a, b.kind, b.channel_bytes);
        let h = d.arrays.insert(view);
        m.level_arrays.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(h);
        // SAFETY: null or writable (CUDA's contract).
        unsafe { out(level_array, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMipmappedArrayDestroy(handle: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        d.device().synchronize().map_err(crate::code)?;
        let m = d.mipmapped.remove(handle).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        for h in m.level_arrays.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter() {
            d.arrays.remove(*h);
        }
        Ok(())
    })
}

/// `CUDA_RESOURCE_DESC`: the resource type, a 128-byte union, flags.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ResourceDesc {
    kind: c_uint,
    res: [u64; 16],
    flags: c_uint,
}

const _: () = assert!(
    std::mem::size_of::<ResourceDesc>()
        == std::mem::size_of::<cudarc::driver::sys::CUDA_RESOURCE_DESC>()
);

/// `CUDA_TEXTURE_DESC`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TextureDescriptor {
    address_mode: [c_uint; 3],
    filter_mode: c_uint,
    flags: c_uint,
    max_anisotropy: c_uint,
    mipmap_filter_mode: c_uint,
    mipmap_level_bias: f32,
    min_mipmap_level_clamp: f32,
    max_mipmap_level_clamp: f32,
    border_color: [f32; 4],
    reserved: [i32; 12],
}

const _: () = assert!(
    std::mem::size_of::<TextureDescriptor>()
        == std::mem::size_of::<cudarc::driver::sys::CUDA_TEXTURE_DESC>()
);

/// `CU_TRSF_READ_AS_INTEGER`, `CU_TRSF_NORMALIZED_COORDINATES`, `CU_TRSF_SRGB`,
/// `CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION`, `CU_TRSF_SEAMLESS_CUBEMAP`.
const READ_AS_INTEGER: c_uint = 1;
const NORMALIZED_COORDINATES: c_uint = 2;
const SRGB: c_uint = 0x10;
const DISABLE_TRILINEAR_OPTIMIZATION: c_uint = 0x20;
const SEAMLESS_CUBEMAP: c_uint = 0x40;

/// Applies the `CU_TRSF_*` flags to `desc`: coordinates, read mode, sRGB. Trilinear
/// filtering is always exact (ptxvk has no optimization to disable); seamless cube maps
/// (filtering across faces) are not implemented, and unknown flags are invalid.
fn apply_flags(desc: &mut TextureDesc, flags: c_uint) -> Result<(), CUresult> {
    let known = READ_AS_INTEGER | NORMALIZED_COORDINATES | SRGB | DISABLE_TRILINEAR_OPTIMIZATION;
    if flags & SEAMLESS_CUBEMAP != 0 {
        eprintln!("ptxvk libcuda: seamless cube maps (CU_TRSF_SEAMLESS_CUBEMAP) are not supported");
        return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
    }
    if flags & !known != 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    desc.normalized_coords = flags & NORMALIZED_COORDINATES != 0;
    // The driver API reads 8- and 16-bit integers as normalized floats unless asked for
    // integers.
    desc.read_normalized =
        flags & READ_AS_INTEGER == 0 && desc.kind != ChannelKind::Float && desc.channel_bytes < 4;
    desc.srgb = flags & SRGB != 0;
    Ok(())
}

/// The texels a resource description names, as a texture description without sampler
/// state; `surface` requires an array made for surface access.
fn resource(d: &Driver, r: &ResourceDesc, surface: bool) -> Result<TextureDesc, CUresult> {
    let word = |i: usize| r.res[i];
    let layout = |address: u64, format: u64, channels: u64, w: u64, h: u64, pitch: u64| {
        let (kind, channel_bytes) = channel_format(format as c_uint)?;
        Ok(TextureDesc {
            address,
            width: u32::try_from(w).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?,
            height: h as u32,
            depth: 1,
            row_pitch: pitch,
            slice_pitch: pitch * h,
            kind,
            channel_bytes,
            channels: channels as u32,
            ..TextureDesc::default()
        })
    };
    match r.kind {
        // CU_RESOURCE_TYPE_ARRAY
        0 => {
            let a = array(d, word(0) as usize)?;
            if surface && a.desc.flags & SURFACE_LDST == 0 {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            Ok(a.texture())
        }
        // CU_RESOURCE_TYPE_LINEAR: devPtr, format (c_uint) and channels, size in bytes.
        2 if !surface => {
            let (format, channels) = (word(1) & 0xffff_ffff, word(1) >> 32);
            let (_, channel_bytes) = channel_format(format as c_uint)?;
            let texel = u64::from(channel_bytes) * channels;
            if texel == 0 {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            let width = word(2) / texel;
            layout(word(0), format, channels, width, 1, word(2))
        }
        // CU_RESOURCE_TYPE_PITCH2D: devPtr, format, channels, width, height, pitch.
        3 if !surface => {
            let (format, channels) = (word(1) & 0xffff_ffff, word(1) >> 32);
            layout(word(0), format, channels, word(2), word(3), word(4))
        }
        // CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
        1 if !surface => {
            let m = d.mipmapped.get(word(0) as usize).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
            Ok(TextureDesc { levels: m.levels, ..m.base.texture() })
        }
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

/// Writes the descriptor to device memory and returns its address, the object's handle.
fn create_object(d: &Driver, desc: &TextureDesc) -> Result<u64, CUresult> {
    let object = d.device().texture_object(desc).map_err(|e| {
        eprintln!("ptxvk libcuda: {e}");
        CUresult::CUDA_ERROR_INVALID_VALUE
    })?;
    let handle = object.handle();
    d.texture_objects().insert(handle, object);
    Ok(handle)
}

#[no_mangle]
pub unsafe extern "C" fn cuTexObjectCreate(
    object: *mut u64,
    res: *const ResourceDesc,
    tex: *const TextureDescriptor,
    view: *const u8,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        if !view.is_null() {
            eprintln!("ptxvk libcuda: resource views are not supported");
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        // SAFETY: null or readable (CUDA's contract).
        let (r, t) = unsafe { (arg(res)?, arg(tex)?) };
        let mut desc = resource(d, &r, false)?;
        for (k, &m) in t.address_mode.iter().enumerate() {
            desc.address_modes[k] =
                AddressMode::from_cuda(m).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        }
        desc.linear_filter = match t.filter_mode {
            0 => false,
            1 => true,
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        };
        apply_flags(&mut desc, t.flags)?;
        // NVIDIA's anisotropic filter is undocumented; ptxvk's `.grad` fetches take the
        // level of detail of the longer gradient (isotropic). Other fetches are the same.
        if t.max_anisotropy > 1 {
            eprintln!(
                "ptxvk libcuda: maxAnisotropy {} is ignored: gradient fetches filter isotropically",
                t.max_anisotropy
            );
        }
        desc.border = t.border_color;
        desc.mip_linear = match t.mipmap_filter_mode {
            0 => false,
            1 => true,
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        };
        desc.level_bias = t.mipmap_level_bias;
        desc.min_level = t.min_mipmap_level_clamp;
        desc.max_level = t.max_mipmap_level_clamp;
        let handle = create_object(d, &desc)?;
        // SAFETY: null or writable (CUDA's contract).
        unsafe { out(object, handle) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuSurfObjectCreate(
    object: *mut u64,
    res: *const ResourceDesc,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        // SAFETY: null or readable (CUDA's contract).
        let r = unsafe { arg(res) }?;
        let desc = resource(d, &r, true)?;
        let handle = create_object(d, &desc)?;
        // SAFETY: null or writable (CUDA's contract).
        unsafe { out(object, handle) }
    })
}

fn destroy_object(handle: u64) -> Result<(), CUresult> {
    let d = driver()?;
    d.device().synchronize().map_err(crate::code)?;
    d.texture_objects().remove(&handle).map(drop).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
}

#[no_mangle]
pub unsafe extern "C" fn cuTexObjectDestroy(object: u64) -> CUresult {
    entry(|| destroy_object(object))
}

#[no_mangle]
pub unsafe extern "C" fn cuSurfObjectDestroy(object: u64) -> CUresult {
    entry(|| destroy_object(object))
}

impl Reference {
    /// Applies `change` to the state (with the `CU_TRSF_*` flags) and, once memory is
    /// bound, rebinds the reference to a new object.
    fn update(
        &self,
        d: &Driver,
        change: impl FnOnce(&mut TextureDesc, &mut c_uint),
    ) -> Result<(), CUresult> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (desc, flags, object) = &mut *state;
        let mut new_desc = desc.clone();
        let mut new_flags = *flags;
        change(&mut new_desc, &mut new_flags);
        apply_flags(&mut new_desc, new_flags)?;
        (*desc, *flags) = (new_desc, new_flags);
        if desc.address == 0 {
            return Ok(());
        }
        let new = d.device().texture_object(desc).map_err(|e| {
            eprintln!("ptxvk libcuda: texture reference `{}`: {e}", self.name);
            CUresult::CUDA_ERROR_INVALID_VALUE
        })?;
        // Launches already queued read the old descriptor: wait for them first.
        d.device().synchronize().map_err(crate::code)?;
        self.module.bind_texture(&self.name, &new).map_err(crate::code)?;
        *object = Some(new);
        Ok(())
    }
}

fn reference(handle: usize) -> Result<(&'static Driver, std::sync::Arc<Reference>), CUresult> {
    let d = driver()?;
    let r = d.references.get(handle).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    Ok((d, r))
}

fn get_reference(
    out_ref: *mut usize,
    module: usize,
    name: *const std::ffi::c_char,
) -> Result<(), CUresult> {
    let d = driver()?;
    let m = d.modules.get(module).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    // SAFETY: a NUL-terminated string (CUDA's contract).
    let name = unsafe { crate::c_str(name) }?;
    let (_, size) = m.module.global_address(name).map_err(|_| CUresult::CUDA_ERROR_NOT_FOUND)?;
    if size != 8 {
        return Err(CUresult::CUDA_ERROR_NOT_FOUND);
    }
    let desc = TextureDesc { height: 1, depth: 1, ..TextureDesc::default() };
    let r = Reference {
        module: m.module.clone(),
        name: name.to_string(),
        state: std::sync::Mutex::new((desc, 0, None)),
    };
    let h = d.references.insert(r);
    // SAFETY: null or writable (CUDA's contract).
    unsafe { out(out_ref, h) }
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetTexRef(
    r: *mut usize,
    module: usize,
    name: *const std::ffi::c_char,
) -> CUresult {
    entry(|| get_reference(r, module, name))
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetSurfRef(
    r: *mut usize,
    module: usize,
    name: *const std::ffi::c_char,
) -> CUresult {
    entry(|| get_reference(r, module, name))
}

/// Binds a reference to array `array` (its layout and format); a surface reference
/// needs an array made for surface access.
fn set_array(handle: usize, array_handle: usize, surface: bool) -> Result<(), CUresult> {
    let (d, r) = reference(handle)?;
    let mut res = ResourceDesc { kind: 0, res: [0; 16], flags: 0 };
    res.res[0] = array_handle as u64;
    let bound = resource(d, &res, surface)?;
    r.update(d, |desc, _| {
        let sampler = (desc.address_modes, desc.linear_filter, desc.border);
        *desc = bound;
        (desc.address_modes, desc.linear_filter, desc.border) = sampler;
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuTexRefSetArray(handle: usize, array: usize, _flags: c_uint) -> CUresult {
    entry(|| set_array(handle, array, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuSurfRefSetArray(
    handle: usize,
    array: usize,
    _flags: c_uint,
) -> CUresult {
    entry(|| set_array(handle, array, true))
}

/// `cuTexRefSetAddress`: linear memory of `bytes` bytes, in the reference's format
/// (`cuTexRefSetFormat`); the offset to apply is 0 (any 16-byte aligned address works).
#[no_mangle]
pub unsafe extern "C" fn cuTexRefSetAddress_v2(
    offset: *mut usize,
    handle: usize,
    dptr: u64,
    bytes: usize,
) -> CUresult {
    entry(|| {
        let (d, r) = reference(handle)?;
        r.update(d, |desc, _| {
            let texel = u64::from(desc.channel_bytes.max(1)) * u64::from(desc.channels.max(1));
            desc.address = dptr;
            desc.width = (bytes as u64 / texel) as u32;
            desc.height = 1;
            desc.depth = 1;
            desc.layers = 0;
            desc.row_pitch = bytes as u64;
            desc.slice_pitch = bytes as u64;
        })?;
        if !offset.is_null() {
            // SAFETY: non-null and writable (CUDA's contract).
            unsafe { out(offset, 0)? };
        }
        Ok(())
    })
}

/// `CUDA_ARRAY_DESCRIPTOR` of a pitched 2-D binding.
#[no_mangle]
pub unsafe extern "C" fn cuTexRefSetAddress2D_v3(
    handle: usize,
    layout: *const ArrayDescriptor,
    dptr: u64,
    pitch: usize,
) -> CUresult {
    entry(|| {
        let (d, r) = reference(handle)?;
        // SAFETY: null or readable (CUDA's contract).
        let a = unsafe { arg(layout) }?;
        let (kind, channel_bytes) = channel_format(a.format)?;
        r.update(d, |desc, _| {
            desc.address = dptr;
            desc.width = a.width as u32;
            desc.height = a.height as u32;
            desc.depth = 1;
            desc.layers = 0;
            desc.row_pitch = pitch as u64;
            desc.slice_pitch = (pitch * a.height) as u64;
            desc.kind = kind;
            desc.channel_bytes = channel_bytes;
            desc.channels = a.channels;
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuTexRefSetFormat(
    handle: usize,
    format: c_uint,
    channels: c_int,
) -> CUresult {
    entry(|| {
        let (d, r) = reference(handle)?;
        let (kind, channel_bytes) = channel_format(format)?;
        let channels = u32::try_from(channels).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
        r.update(d, |desc, _| {
            desc.kind = kind;
            desc.channel_bytes = channel_bytes;
            desc.channels = channels;
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuTexRefSetAddressMode(
    handle: usize,
    dim: c_int,
    mode: c_uint,
) -> CUresult {
    entry(|| {
        let (d, r) = reference(handle)?;
        let mode = AddressMode::from_cuda(mode).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let dim = usize::try_from(dim)
            .ok()
            .filter(|&k| k < 3)
            .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        r.update(d, |desc, _| desc.address_modes[dim] = mode)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuTexRefSetFilterMode(handle: usize, mode: c_uint) -> CUresult {
    entry(|| {
        let (d, r) = reference(handle)?;
        if mode > 1 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        r.update(d, |desc, _| desc.linear_filter = mode == 1)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuTexRefSetFlags(handle: usize, flags: c_uint) -> CUresult {
    entry(|| {
        let (d, r) = reference(handle)?;
        r.update(d, |_, f| *f = flags)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuTexRefSetBorderColor(handle: usize, color: *const f32) -> CUresult {
    entry(|| {
        let (d, r) = reference(handle)?;
        // SAFETY: null or four readable floats (CUDA's contract).
        let color = unsafe { arg(color.cast::<[f32; 4]>()) }?;
        r.update(d, |desc, _| desc.border = color)
    })
}
