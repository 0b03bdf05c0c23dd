//! Device memory: buffers with device addresses, and host<->device copies through
//! host-visible staging buffers.
//!
//! Every [`Buffer`] is device-local, usable as a storage buffer, a transfer source and
//! destination, and through its device address (`PhysicalStorageBuffer64` pointers in the
//! shader). Buffers are zero-filled on creation and aligned to [`BUFFER_ALIGNMENT`] bytes
//! like `cudaMalloc`'s, so any naturally aligned PTX access (up to `.v4.b64`, 32 bytes) to
//! an aligned offset is aligned in device memory too.

use std::fmt;
use std::sync::Arc;

use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use gpu_allocator::{AllocationError, MemoryLocation};

use crate::device::{Device, DeviceShared};
use crate::error::Error;

/// Alignment of every buffer's device address, in bytes (as `cudaMalloc` guarantees).
pub const BUFFER_ALIGNMENT: u64 = 256;

/// Smallest buffer created internally; also what a zero-sized buffer really occupies.
const MIN_INTERNAL_SIZE: u64 = 16;

/// Largest staging buffer; longer copies are done in pieces of this size.
const STAGING_CHUNK: u64 = 16 << 20;

/// A device-local buffer. Owns its `VkBuffer` and memory; freed on drop (after waiting for
/// running GPU work). Keeps its device alive.
pub struct Buffer {
    shared: Arc<DeviceShared>,
    raw: vk::Buffer,
    allocation: Allocation,
    size: u64,
    address: u64,
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("size", &self.size)
            .field("address", &format_args!("{:#x}", self.address))
            .finish_non_exhaustive()
    }
}

impl Buffer {
    /// The buffer's device address (what a kernel parameter pointing at it holds), or 0
    /// for internal staging buffers.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// The size the buffer was created with, in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Creates a buffer of `size` bytes (at least [`MIN_INTERNAL_SIZE`] internally,
    /// rounded up to a multiple of 4 so it can be filled as a whole).
    fn new(
        shared: &Arc<DeviceShared>,
        size: u64,
        usage: vk::BufferUsageFlags,
        location: MemoryLocation,
        name: &str,
    ) -> Result<Buffer, Error> {
        let max = shared.max_buffer_size;
        let internal = size
            .max(MIN_INTERNAL_SIZE)
            .checked_next_multiple_of(4)
            .filter(|&n| n <= max)
            .ok_or(Error::BufferTooLarge { size, max })?;
        let dev = &shared.raw;
        let info = vk::BufferCreateInfo::default()
            .size(internal)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: the device is alive; the size is non-zero and within maxBufferSize.
        let raw = unsafe { dev.create_buffer(&info, None) }.map_err(Error::vk("vkCreateBuffer"))?;
        // SAFETY: `raw` is a live buffer of this device.
        let mut requirements = unsafe { dev.get_buffer_memory_requirements(raw) };
        if usage.contains(vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS) {
            requirements.alignment = requirements.alignment.max(BUFFER_ALIGNMENT);
        }
        let allocated = shared.allocator().allocate(&AllocationCreateDesc {
            name,
            requirements,
            location,
            linear: true,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        });
        let allocation = match allocated {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: the buffer was just created and is unused.
                unsafe { dev.destroy_buffer(raw, None) };
                return Err(e.into());
            }
        };
        // SAFETY: the allocation satisfies the buffer's requirements (size, alignment,
        // memory type bits) and is bound exactly once.
        let bound =
            unsafe { dev.bind_buffer_memory(raw, allocation.memory(), allocation.offset()) };
        if let Err(result) = bound {
            // Best effort: the allocator's bookkeeping error cannot be reported together
            // with the Vulkan error, and the memory is unused either way.
            let _ = shared.allocator().free(allocation);
            // SAFETY: the buffer was just created and is unused.
            unsafe { dev.destroy_buffer(raw, None) };
            return Err(Error::Vk { call: "vkBindBufferMemory", result });
        }
        let address = if usage.contains(vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS) {
            let info = vk::BufferDeviceAddressInfo::default().buffer(raw);
            // SAFETY: the buffer was created with SHADER_DEVICE_ADDRESS usage on a device
            // with bufferDeviceAddress enabled, and is bound to memory allocated with the
            // device-address flag (gpu-allocator's `buffer_device_address`).
            unsafe { dev.get_buffer_device_address(&info) }
        } else {
            0
        };
        Ok(Buffer { shared: Arc::clone(shared), raw, allocation, size, address })
    }

    /// A host-visible, coherent buffer for copies, mapped for its whole life.
    fn staging(shared: &Arc<DeviceShared>, size: u64, to_device: bool) -> Result<Buffer, Error> {
        let (usage, location, name) = if to_device {
            (vk::BufferUsageFlags::TRANSFER_SRC, MemoryLocation::CpuToGpu, "ptxvk upload staging")
        } else {
            (vk::BufferUsageFlags::TRANSFER_DST, MemoryLocation::GpuToCpu, "ptxvk download staging")
        };
        let buffer = Buffer::new(shared, size, usage, location, name)?;
        if buffer.allocation.mapped_ptr().is_none() {
            return Err(Error::Alloc(AllocationError::FailedToMap(
                "staging memory is not host-visible".into(),
            )));
        }
        Ok(buffer)
    }

    fn check_range(&self, op: &'static str, offset: u64, len: u64) -> Result<(), Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::OutOfBounds { op, offset, len, size: self.size }),
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if !self.shared.idle_for_destroy() {
            // A kernel or copy using this buffer may still run: leak the memory rather than
            // free it under the GPU.
            return;
        }
        let allocation = std::mem::take(&mut self.allocation);
        // SAFETY: the GPU is idle, so no pending command uses the buffer; it is destroyed
        // once, and its memory is returned to the allocator after it.
        unsafe { self.shared.raw.destroy_buffer(self.raw, None) };
        // A failure here only means the allocator's bookkeeping is off; nothing to report
        // from a destructor.
        let _ = self.shared.allocator().free(allocation);
    }
}

impl Device {
    /// A device-local buffer of `size` bytes with storage, transfer and device-address
    /// usage, zero-filled. Size 0 is allowed (a 16-byte buffer is created internally; the
    /// reported size is 0). The address is aligned to [`BUFFER_ALIGNMENT`].
    pub fn alloc(&self, size: u64) -> Result<Buffer, Error> {
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS;
        let buffer =
            Buffer::new(&self.shared, size, usage, MemoryLocation::GpuOnly, "ptxvk buffer")?;
        let dev = &self.shared.raw;
        // The submitter lock is released before `buffer` could be dropped on error
        // (dropping a buffer takes the lock).
        let filled = self.shared.submitter().execute(dev, self.shared.timeout_ms(), |cmd, _| {
            // SAFETY: `cmd` is recording; the buffer is live, was created with TRANSFER_DST
            // and its internal size is a multiple of 4, so WHOLE_SIZE fills all of it.
            unsafe { dev.cmd_fill_buffer(cmd, buffer.raw, 0, vk::WHOLE_SIZE, 0) };
        });
        filled.map(|()| buffer)
    }

    /// Copies `data` into `buf` at byte `offset`. Ranges outside the buffer are an
    /// [`Error::OutOfBounds`]; nothing is copied then.
    pub fn upload(&self, buf: &Buffer, offset: u64, data: &[u8]) -> Result<(), Error> {
        if !Arc::ptr_eq(&buf.shared, &self.shared) {
            return Err(Error::ForeignObject("buffer"));
        }
        let len = data.len() as u64;
        buf.check_range("upload", offset, len)?;
        if data.is_empty() {
            return Ok(());
        }
        let mut staging = Buffer::staging(&self.shared, len.min(STAGING_CHUNK), true)?;
        let dev = &self.shared.raw;
        let chunk_len = usize::try_from(STAGING_CHUNK).unwrap_or(usize::MAX);
        for (i, piece) in data.chunks(chunk_len).enumerate() {
            let mapped = staging.allocation.mapped_slice_mut().ok_or_else(|| {
                Error::Alloc(AllocationError::FailedToMap("staging memory is not mapped".into()))
            })?;
            // `staging` holds at least min(len, STAGING_CHUNK) bytes, `piece` at most that.
            let dst = mapped.get_mut(..piece.len()).ok_or_else(|| {
                Error::Alloc(AllocationError::Internal("staging buffer too small".into()))
            })?;
            dst.copy_from_slice(piece);
            let region = vk::BufferCopy {
                src_offset: 0,
                dst_offset: offset + i as u64 * STAGING_CHUNK,
                size: piece.len() as u64,
            };
            let copied =
                self.shared.submitter().execute(dev, self.shared.timeout_ms(), |cmd, _| {
                    // SAFETY: `cmd` is recording; both buffers are live with TRANSFER usage;
                    // the region lies inside both (bounds checked above); host writes to the
                    // coherent staging memory are made visible by the queue submission.
                    unsafe { dev.cmd_copy_buffer(cmd, staging.raw, buf.raw, &[region]) };
                });
            copied?;
        }
        Ok(())
    }

    /// Reads `len` bytes of `buf` starting at byte `offset`. Ranges outside the buffer are
    /// an [`Error::OutOfBounds`].
    pub fn download(&self, buf: &Buffer, offset: u64, len: u64) -> Result<Vec<u8>, Error> {
        if !Arc::ptr_eq(&buf.shared, &self.shared) {
            return Err(Error::ForeignObject("buffer"));
        }
        buf.check_range("download", offset, len)?;
        let out_len = usize::try_from(len).map_err(|_| Error::OutOfBounds {
            op: "download",
            offset,
            len,
            size: buf.size,
        })?;
        let mut out = Vec::with_capacity(out_len);
        if len == 0 {
            return Ok(out);
        }
        let staging = Buffer::staging(&self.shared, len.min(STAGING_CHUNK), false)?;
        let dev = &self.shared.raw;
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(STAGING_CHUNK);
            let region = vk::BufferCopy { src_offset: offset + done, dst_offset: 0, size: n };
            let copied =
                self.shared.submitter().execute(dev, self.shared.timeout_ms(), |cmd, _| {
                    // SAFETY: `cmd` is recording; both buffers are live with TRANSFER usage;
                    // the region lies inside both (bounds checked above). `execute` ends with a
                    // transfer->host barrier and waits, so the host read below sees the data.
                    unsafe { dev.cmd_copy_buffer(cmd, buf.raw, staging.raw, &[region]) };
                });
            copied?;
            let mapped = staging.allocation.mapped_slice().ok_or_else(|| {
                Error::Alloc(AllocationError::FailedToMap("staging memory is not mapped".into()))
            })?;
            let piece = usize::try_from(n).ok().and_then(|n| mapped.get(..n)).ok_or_else(|| {
                Error::Alloc(AllocationError::Internal("staging buffer too small".into()))
            })?;
            out.extend_from_slice(piece);
            done += n;
        }
        Ok(out)
    }
}
