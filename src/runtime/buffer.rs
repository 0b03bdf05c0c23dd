//! Device memory in the API: typed buffers and slices of them, kernel arguments, and
//! texture and sampler objects.

use std::marker::PhantomData;

use bytemuck::Pod;

use ptxvk_vk::Stream;

use crate::Error;

use super::Device;

/// A typed device buffer of `len` elements of `T` (any [`Pod`] type: integers, floats,
/// [`half::f16`], [`half::bf16`], arrays and `#[repr(C)]` structs of them). It carries its
/// device, and launches keep its memory alive until they complete, so dropping it while a
/// launch is pending is safe.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    pub(super) buf: ptxvk_vk::Buffer,
    pub(super) device: Device,
    pub(super) len: usize,
    pub(super) _t: PhantomData<T>,
}

impl<T: Pod> DeviceBuffer<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address a kernel's pointer parameter receives.
    pub fn address(&self) -> u64 {
        self.buf.address()
    }

    /// The untyped buffer underneath.
    pub fn raw(&self) -> &ptxvk_vk::Buffer {
        &self.buf
    }

    /// The device the buffer lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Elements `range` of the buffer, for kernel arguments and copies.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Result<DeviceSlice<'_, T>, Error> {
        if range.start > range.end || range.end > self.len {
            return Err(Error::Launch(format!(
                "slice {}..{} of a buffer of {} elements",
                range.start, range.end, self.len
            )));
        }
        Ok(DeviceSlice { buffer: self, start: range.start, len: range.end - range.start })
    }

    /// The whole buffer as a slice.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice { buffer: self, start: 0, len: self.len }
    }

    /// Copies the buffer back to the host after the default stream's work.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        let mut out = vec![T::zeroed(); self.len];
        self.as_slice().copy_to(&mut out)?;
        Ok(out)
    }

    /// Overwrites the buffer's first `data.len()` elements, after the default stream's
    /// work.
    pub fn copy_from(&self, data: &[T]) -> Result<(), Error> {
        self.as_slice().copy_from(data)
    }
}

/// A range of elements of a [`DeviceBuffer`].
#[derive(Debug)]
pub struct DeviceSlice<'a, T> {
    pub(super) buffer: &'a DeviceBuffer<T>,
    pub(super) start: usize,
    pub(super) len: usize,
}

impl<T> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceSlice<'_, T> {}

impl<T: Pod> DeviceSlice<'_, T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn byte_offset(&self) -> u64 {
        (self.start * std::mem::size_of::<T>()) as u64
    }

    pub(super) fn check_len(&self, n: usize) -> Result<(), Error> {
        if n > self.len {
            return Err(Error::Launch(format!(
                "{n} elements do not fit a slice of {} elements",
                self.len
            )));
        }
        Ok(())
    }

    /// The device address of the slice's first element.
    pub fn address(&self) -> u64 {
        self.buffer.address() + self.byte_offset()
    }

    /// Copies the slice's first `out.len()` elements to the host after the default
    /// stream's work.
    pub fn copy_to(&self, out: &mut [T]) -> Result<(), Error> {
        self.check_len(out.len())?;
        let stream = self.buffer.device.default_stream();
        let bytes = bytemuck::cast_slice_mut(out);
        Ok(stream.copy_from_buffer(&self.buffer.buf, self.byte_offset(), bytes)?)
    }

    /// Overwrites the slice's first `data.len()` elements after the default stream's
    /// work, and waits.
    pub fn copy_from(&self, data: &[T]) -> Result<(), Error> {
        self.check_len(data.len())?;
        let stream = self.buffer.device.default_stream();
        let bytes = bytemuck::cast_slice(data);
        Ok(stream.copy_to_buffer_sync(&self.buffer.buf, self.byte_offset(), bytes)?)
    }

    /// Enqueues a copy of `data` into the slice on `stream`; the data is staged at once,
    /// so it may be reused when this returns.
    pub fn copy_from_async(&self, stream: &Stream, data: &[T]) -> Result<(), Error> {
        self.check_len(data.len())?;
        Ok(stream.copy_to_buffer(
            &self.buffer.buf,
            self.byte_offset(),
            bytemuck::cast_slice(data),
        )?)
    }

    /// Enqueues a device-to-device copy of the slice into `dst` (of the same length) on
    /// `stream`.
    pub fn copy_to_device(&self, stream: &Stream, dst: &DeviceSlice<'_, T>) -> Result<(), Error> {
        if dst.len != self.len {
            return Err(Error::Launch(format!(
                "copy of {} elements into a slice of {}",
                self.len, dst.len
            )));
        }
        let bytes = (self.len * std::mem::size_of::<T>()) as u64;
        Ok(stream.copy_buffer(
            &self.buffer.buf,
            self.byte_offset(),
            &dst.buffer.buf,
            dst.byte_offset(),
            bytes,
        )?)
    }
}

/// One kernel argument: a pointer into a buffer, or raw by-value bytes. A pointer
/// argument borrows its buffer for the call only; the launch keeps the memory alive until
/// the kernel has run, so the buffer may be dropped at once.
#[derive(Clone, Debug)]
pub enum Arg<'a> {
    /// The device address `offset` bytes into `buffer`, for `.u64` pointer parameters.
    Pointer { buffer: &'a ptxvk_vk::Buffer, offset: u64 },
    /// By-value bytes: a scalar, or a struct or array parameter.
    Bytes(Vec<u8>),
}

impl Arg<'_> {
    /// A by-value argument from any plain-old-data value (little-endian hosts, as every
    /// Vulkan host ptxvk supports).
    pub fn value<T: Pod>(v: T) -> Arg<'static> {
        Arg::Bytes(bytemuck::bytes_of(&v).to_vec())
    }
}

impl<'a, T: Pod> From<&'a DeviceBuffer<T>> for Arg<'a> {
    fn from(b: &'a DeviceBuffer<T>) -> Arg<'a> {
        Arg::Pointer { buffer: &b.buf, offset: 0 }
    }
}

impl<'a, T: Pod> From<DeviceSlice<'a, T>> for Arg<'a> {
    fn from(s: DeviceSlice<'a, T>) -> Arg<'a> {
        Arg::Pointer { buffer: &s.buffer.buf, offset: s.byte_offset() }
    }
}

impl<'a> From<&'a ptxvk_vk::Buffer> for Arg<'a> {
    fn from(b: &'a ptxvk_vk::Buffer) -> Arg<'a> {
        Arg::Pointer { buffer: b, offset: 0 }
    }
}

/// A texture or surface object (`cudaTextureObject_t`/`cudaSurfaceObject_t`): ptxvk's
/// descriptor ([`ptxvk_abi::texture`]) in device memory, whose address is the 64-bit
/// handle a kernel receives (`Arg::from(&object)`). The texels stay where
/// [`TextureDesc::address`] points: keep that memory alive while kernels use the object.
pub struct TextureObject {
    pub(super) descriptor: DeviceBuffer<u8>,
}

/// A separate sampler (`.samplerref`, PTX's independent texture mode).
pub use ptxvk_abi::texture::Sampler as SamplerDesc;
/// The description of a texture or surface: ptxvk's [`ptxvk_abi::texture::Texture`].
pub use ptxvk_abi::texture::Texture as TextureDesc;
pub use ptxvk_abi::texture::{AddressMode, ChannelKind};

impl std::fmt::Debug for TextureObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TextureObject({:#x})", self.handle())
    }
}

impl TextureObject {
    /// The 64-bit handle kernels receive.
    pub fn handle(&self) -> u64 {
        self.descriptor.address()
    }
}

impl Device {
    /// A texture or surface object for `desc`, which must describe texels this device
    /// can read (the CUDA driver API's rules for texture objects, [`TextureDesc::encode`]).
    pub fn texture_object(&self, desc: &TextureDesc) -> Result<TextureObject, Error> {
        let bytes = desc.encode_object().map_err(Error::Launch)?;
        Ok(TextureObject { descriptor: self.buffer_from(&bytes)? })
    }

    /// A separate sampler: a handle for `.samplerref` parameters and variables
    /// (`tex` of the form `[texture, sampler, coordinates]`), which has no texels.
    pub fn sampler_object(&self, desc: &SamplerDesc) -> Result<TextureObject, Error> {
        Ok(TextureObject { descriptor: self.buffer_from(&desc.encode())? })
    }
}

impl From<&TextureObject> for Arg<'_> {
    fn from(t: &TextureObject) -> Self {
        Arg::value(t.handle())
    }
}

macro_rules! value_arg {
    ($($t:ty),*) => {$(
        impl From<$t> for Arg<'_> {
            fn from(v: $t) -> Self {
                Arg::value(v)
            }
        }
    )*};
}
value_arg!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, half::f16, half::bf16);
