//! Memory shared between processes (CUDA IPC): device memory allocated exportable as an
//! opaque file descriptor (`VK_KHR_external_memory_fd`), and the import of such a
//! descriptor into another process's device.
//!
//! Each shared allocation is its own `VkDeviceMemory` (an exported handle names a whole
//! memory object, so it cannot be one of gpu-allocator's sub-allocations). The importer
//! must allocate with the same size and memory type and, when the device demands it, as
//! a dedicated allocation like the exporter's (Vulkan spec, "Importing memory from a file
//! descriptor", `VUID-VkMemoryAllocateInfo-allocationSize-01742` and
//! `VUID-VkMemoryAllocateInfo-memoryTypeIndex-00648`); both sit in [`ExportedMemory`].

use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::ptr::NonNull;

use ash::vk;

use crate::error::Error;
use crate::memory::{buffer_address, create_external_buffer, Buffer};
use crate::objects::{Backing, Device, DeviceShared, Mapped, Memory, MemoryKind, SharedMemory};

const HANDLE_TYPE: vk::ExternalMemoryHandleTypeFlags = vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;

/// What another process needs, besides the file descriptor, to import a buffer's memory
/// ([`Buffer::export_fd`], [`Device::import_memory`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportedMemory {
    /// The size of the memory object (at least the buffer's size).
    pub allocation_size: u64,
    pub memory_type_index: u32,
    /// The buffer's size, in bytes.
    pub size: u64,
    /// The exporting device's `deviceUUID`: only a device with the same one can import.
    pub device_uuid: [u8; vk::UUID_SIZE],
}

impl Device {
    /// Whether this device can make buffers other processes import
    /// ([`Device::alloc_exportable`]): it offers `VK_KHR_external_memory_fd` with
    /// exportable and importable opaque fds for buffers.
    pub fn can_export_memory(&self) -> bool {
        self.shared.external_memory_fd.is_some()
    }

    /// The device's `deviceUUID`.
    pub fn device_uuid(&self) -> [u8; vk::UUID_SIZE] {
        self.shared.device_uuid
    }

    /// Device memory of `size` bytes, zero-filled, like [`Device::alloc`] but in a memory
    /// object of its own that [`Buffer::export_fd`] can share with other processes.
    /// [`Error::MissingFeatures`] when the device cannot ([`Device::can_export_memory`]).
    pub fn alloc_exportable(&self, size: u64) -> Result<Buffer, Error> {
        self.shared.check_alive()?;
        let memory = allocate_shared(&self.shared, size, None)?;
        let buffer = Buffer::wrap(&self.shared, memory, size, None);
        self.zero(&buffer)?;
        // After the zero fill, as in `Device::alloc` (initcheck's write shadows).
        self.maybe_track(&buffer)?;
        Ok(buffer)
    }

    /// Imports memory another process exported ([`Buffer::export_fd`]) as a buffer of
    /// `exported.size` bytes at a device address of this device. The descriptor is
    /// consumed. [`Error::InvalidUse`] when the memory comes from another device.
    pub fn import_memory(&self, fd: OwnedFd, exported: &ExportedMemory) -> Result<Buffer, Error> {
        self.shared.check_alive()?;
        if exported.device_uuid != self.shared.device_uuid {
            return Err(Error::InvalidUse(
                "the memory was exported by another device (deviceUUID differs)".into(),
            ));
        }
        if exported.size > exported.allocation_size {
            return Err(Error::InvalidUse("the exported size exceeds its memory object".into()));
        }
        let memory = allocate_shared(&self.shared, exported.size, Some((fd, exported)))?;
        Ok(Buffer::wrap(&self.shared, memory, exported.size, None))
    }
}

impl Buffer {
    /// A new file descriptor for the buffer's memory object, and what an importer needs
    /// with it (`vkGetMemoryFdKHR`). [`Error::InvalidUse`] unless the buffer came from
    /// [`Device::alloc_exportable`] or [`Device::import_memory`].
    pub fn export_fd(&self) -> Result<(OwnedFd, ExportedMemory), Error> {
        let Backing::Shared(shared_memory) = &self.memory().backing else {
            return Err(Error::InvalidUse("the buffer was not allocated exportable".into()));
        };
        let device = self
            .device_shared()
            .ok_or_else(|| Error::InvalidUse("the buffer's device is gone".into()))?;
        let ext = device.external_memory_fd.as_ref().ok_or_else(|| missing(&device))?;
        let info =
            vk::MemoryGetFdInfoKHR::default().memory(shared_memory.memory).handle_type(HANDLE_TYPE);
        // SAFETY: the memory is alive (this buffer holds it) and was allocated with
        // opaque-fd export (or imported from one, which may be exported again).
        let raw = unsafe { ext.get_memory_fd(&info) }.map_err(Error::vk("vkGetMemoryFdKHR"))?;
        // SAFETY: vkGetMemoryFdKHR returns a new descriptor the caller owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let exported = ExportedMemory {
            allocation_size: shared_memory.allocation_size,
            memory_type_index: shared_memory.memory_type_index,
            size: self.size(),
            device_uuid: device.device_uuid,
        };
        Ok((fd, exported))
    }
}

fn missing(shared: &DeviceShared) -> Error {
    Error::MissingFeatures {
        device: shared.info.name.clone(),
        missing: vec!["VK_KHR_external_memory_fd (opaque fd buffers)"],
    }
}

/// The memory type an exportable allocation uses: one `type_bits` allows, device-local,
/// and host-visible and coherent on unified-memory devices (so the host maps it, as it
/// does [`Device::alloc`]'s memory there).
fn exportable_type(shared: &DeviceShared, type_bits: u32) -> Option<u32> {
    let props = &shared.memory_properties;
    let count = (props.memory_type_count as usize).min(props.memory_types.len());
    let wanted = if shared.unified_memory {
        vk::MemoryPropertyFlags::DEVICE_LOCAL
            | vk::MemoryPropertyFlags::HOST_VISIBLE
            | vk::MemoryPropertyFlags::HOST_COHERENT
    } else {
        vk::MemoryPropertyFlags::DEVICE_LOCAL
    };
    let allowed = |i: &usize| type_bits & (1 << i) != 0;
    (0..count)
        .filter(allowed)
        .find(|&i| props.memory_types[i].property_flags.contains(wanted))
        .or_else(|| (0..count).find(allowed))
        .map(|i| i as u32)
}

/// An exportable allocation of `size` bytes, or (`import`) the import of an exported one.
fn allocate_shared(
    shared: &DeviceShared,
    size: u64,
    import: Option<(OwnedFd, &ExportedMemory)>,
) -> Result<Memory, Error> {
    if shared.external_memory_fd.is_none() {
        return Err(missing(shared));
    }
    let max = shared.max_buffer_size;
    let capacity = size
        .max(16)
        .checked_next_multiple_of(4)
        .filter(|&n| n <= max)
        .ok_or(Error::BufferTooLarge { size, max })?;
    let dev = &shared.raw;
    let raw = create_external_buffer(dev, capacity, HANDLE_TYPE)?;
    let destroy_buffer = || {
        // SAFETY: the buffer was created above and nothing uses it.
        unsafe { dev.destroy_buffer(raw, None) }
    };
    // SAFETY: `raw` is a live buffer of this device.
    let requirements = unsafe { dev.get_buffer_memory_requirements(raw) };
    let (allocation_size, memory_type_index) = match &import {
        Some((_, exported)) => {
            let fits = exported.allocation_size >= requirements.size
                && exported.memory_type_index < 32
                && requirements.memory_type_bits & (1 << exported.memory_type_index) != 0;
            if !fits {
                destroy_buffer();
                return Err(Error::InvalidUse(
                    "the exported memory cannot back a buffer of its size here".into(),
                ));
            }
            (exported.allocation_size, exported.memory_type_index)
        }
        None => match exportable_type(shared, requirements.memory_type_bits) {
            Some(index) => (requirements.size, index),
            None => {
                destroy_buffer();
                return Err(missing(shared));
            }
        },
    };
    let mut flags =
        vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
    let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(HANDLE_TYPE);
    let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(raw);
    let raw_fd = import.as_ref().map(|(fd, _)| std::os::fd::AsRawFd::as_raw_fd(fd));
    let mut import_info =
        vk::ImportMemoryFdInfoKHR::default().handle_type(HANDLE_TYPE).fd(raw_fd.unwrap_or(-1));
    let mut alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(allocation_size)
        .memory_type_index(memory_type_index)
        .push_next(&mut flags);
    alloc = match raw_fd {
        Some(_) => alloc.push_next(&mut import_info),
        None => alloc.push_next(&mut export),
    };
    if shared.external_memory_fd_dedicated {
        alloc = alloc.push_next(&mut dedicated);
    }
    // SAFETY: the device is alive; size and type satisfy the buffer's requirements (an
    // import's were the exporter's, checked against this buffer above); an imported fd is
    // an opaque fd of a device with this deviceUUID (the caller compared them).
    let memory = match unsafe { dev.allocate_memory(&alloc, None) } {
        Ok(m) => m,
        Err(result) => {
            destroy_buffer();
            return Err(Error::from_vk("vkAllocateMemory", result));
        }
    };
    // A successful import owns the descriptor (VK_KHR_external_memory_fd): it must not
    // be closed here.
    if let Some((fd, _)) = import {
        let _ = fd.into_raw_fd();
    }
    let free = || {
        // SAFETY: both objects were created above and nothing uses them.
        unsafe {
            dev.destroy_buffer(raw, None);
            dev.free_memory(memory, None);
        }
    };
    // SAFETY: the memory is large enough, of an allowed type, and bound once.
    if let Err(result) = unsafe { dev.bind_buffer_memory(raw, memory, 0) } {
        free();
        return Err(Error::from_vk("vkBindBufferMemory", result));
    }
    // Only coherent memory is mapped: host copies then need no flushes (as for
    // gpu-allocator's mapped memory on unified-memory devices).
    let host_visible = shared.memory_properties.memory_types[memory_type_index as usize]
        .property_flags
        .contains(vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT);
    let mapped = if host_visible {
        // SAFETY: the memory is host-visible, not mapped yet, and the whole range is
        // mapped once for its life (freeing it unmaps it).
        match unsafe { dev.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) } {
            Ok(p) => NonNull::new(p.cast::<u8>()).map(Mapped),
            Err(result) => {
                free();
                return Err(Error::from_vk("vkMapMemory", result));
            }
        }
    } else {
        None
    };
    Ok(Memory {
        raw,
        backing: Backing::Shared(SharedMemory { memory, allocation_size, memory_type_index }),
        raw_offset: 0,
        capacity,
        address: buffer_address(dev, raw),
        mapped,
        kind: MemoryKind::Device,
    })
}
