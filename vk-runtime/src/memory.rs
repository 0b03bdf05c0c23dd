//! Memory: device allocations, host memory that kernels reach directly (pinned, registered,
//! managed), and the map from device addresses back to allocations.
//!
//! Every [`Buffer`] is a cheap handle (`Arc`) to one allocation. Work recorded on a
//! [`Stream`](crate::Stream) keeps a handle to every buffer it names until the stream has
//! passed it, so dropping the last user handle while a launch or copy is pending never
//! frees memory under the GPU: the memory is released when the stream's last use
//! completes (or returned to its [`MemPool`](crate::MemPool)).
//!
//! Every buffer is usable as a storage buffer, a transfer source and destination, and
//! through its device address (`PhysicalStorageBuffer64` pointers in the shader).
//! Addresses are aligned to [`BUFFER_ALIGNMENT`] bytes like `cudaMalloc`'s, so any
//! naturally aligned PTX access (up to `.v4.b64`, 32 bytes) to an aligned offset is aligned
//! in device memory too.
//!
//! On devices with unified memory (CPU devices such as lavapipe, integrated GPUs: see
//! `conv::unified_memory`) device allocations are host-visible and mapped, and host copies
//! read and write them directly instead of going through staging buffers.

use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Weak};

use ash::vk;
use gpu_allocator::vulkan::{AllocationCreateDesc, AllocationScheme};
use gpu_allocator::MemoryLocation;

use crate::conv;
use crate::error::Error;
use crate::objects::{
    AddressMap, Backing, BufferInner, Device, DeviceShared, Entry, Gpu, Mapped, Memory, MemoryKind,
    PoolInner, Range, SharedMemory, WindowInner,
};

/// Alignment of every buffer's device address, in bytes (as `cudaMalloc` guarantees).
pub const BUFFER_ALIGNMENT: u64 = 256;

/// Smallest buffer created internally; also what a zero-sized buffer really occupies.
const MIN_INTERNAL_SIZE: u64 = 16;

impl Memory {
    /// Bytes `offset..offset + len` of this memory as memory of their own, sharing its
    /// `VkBuffer` (a [`crate::Window`]'s sub-allocation).
    pub(crate) fn window_range(&self, window: Arc<WindowInner>, offset: u64, len: u64) -> Memory {
        Memory {
            raw: self.raw,
            backing: Backing::Window { window, offset, len },
            raw_offset: self.raw_offset + offset,
            capacity: len,
            address: self.address + offset,
            // SAFETY: `offset + len` is within this memory's capacity (the window's
            // allocator hands out ranges of it only), so the pointer stays inside the
            // mapping.
            mapped: self.mapped.map(|Mapped(p)| Mapped(unsafe { p.add(offset as usize) })),
            kind: self.kind,
        }
    }

    /// The bytes from this memory's start that no other allocation and no host data can
    /// occupy, for a buffer of `size` bytes: up to the end of the last page for a memory
    /// object of its own that the host maps from a page boundary (an exportable
    /// allocation: on lavapipe its own memfd mapping), `size` otherwise (host memory
    /// imported around the range is the program's; a sub-allocation's neighbours are
    /// other allocations). A confined kernel may touch these bytes, as a kernel on a CUDA
    /// GPU may run a little past a small allocation without a fault: CUDA rounds
    /// allocations up (`cudaMalloc` pointers are aligned to at least 256 bytes, CUDA
    /// Programming Guide, *Device Memory Accesses*), and numba-cuda's own tests rely on it.
    pub(crate) fn reach(&self, size: u64) -> u64 {
        const PAGE: u64 = 4096;
        let mapped_here =
            self.mapped.as_ref().is_some_and(|Mapped(p)| p.as_ptr() as u64 == self.address);
        match &self.backing {
            Backing::Shared(_) if mapped_here && self.address.is_multiple_of(PAGE) => {
                let end = self.address.saturating_add(self.capacity.max(size));
                end.checked_next_multiple_of(PAGE).unwrap_or(end) - self.address
            }
            _ => size,
        }
    }

    /// Creates a buffer of at least `size` bytes (rounded up to a multiple of 4 so it can
    /// be filled as a whole) in `location`.
    pub(crate) fn allocate(
        shared: &DeviceShared,
        size: u64,
        location: MemoryLocation,
        kind: MemoryKind,
        name: &str,
    ) -> Result<Memory, Error> {
        let max = shared.max_buffer_size;
        let capacity = size
            .max(MIN_INTERNAL_SIZE)
            .checked_next_multiple_of(4)
            .filter(|&n| n <= max)
            .ok_or(Error::BufferTooLarge { size, max })?;
        if let Some(reservation) = &shared.reservation {
            return Memory::allocate_reserved(shared, reservation, capacity, kind);
        }
        let dev = &shared.raw;
        let info = vk::BufferCreateInfo::default()
            .size(capacity)
            .usage(conv::buffer_usage())
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: the device is alive; the size is non-zero and within maxBufferSize.
        let raw = unsafe { dev.create_buffer(&info, None) }.map_err(Error::vk("vkCreateBuffer"))?;
        // SAFETY: `raw` is a live buffer of this device.
        let mut requirements = unsafe { dev.get_buffer_memory_requirements(raw) };
        requirements.alignment = requirements.alignment.max(BUFFER_ALIGNMENT);
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
        let mapped = allocation.mapped_ptr().map(|p| Mapped(p.cast()));
        let memory = Memory {
            raw,
            backing: Backing::Allocated(allocation),
            raw_offset: 0,
            capacity,
            address: 0,
            mapped,
            kind,
        };
        if let Err(result) = bound {
            memory.destroy(&shared.gpu);
            return Err(Error::from_vk("vkBindBufferMemory", result));
        }
        if location != MemoryLocation::GpuOnly && memory.mapped.is_none() {
            memory.destroy(&shared.gpu);
            return Err(Error::Alloc(gpu_allocator::AllocationError::FailedToMap(
                "host-visible memory is not mapped".into(),
            )));
        }
        Ok(Memory { address: buffer_address(dev, raw), ..memory })
    }

    /// Imports `len` bytes of host memory at `ptr` (`VK_EXT_external_memory_host`). The
    /// import covers whole pages of the device's import alignment around the range.
    ///
    /// # Safety
    /// `ptr..ptr + len` must be host memory that stays allocated, and is not freed or
    /// unmapped, until the returned memory is destroyed.
    unsafe fn import_host(shared: &DeviceShared, ptr: *mut u8, len: u64) -> Result<Memory, Error> {
        let align = shared.host_pointer_alignment;
        let Some(ext) = (align > 0).then_some(()).and(shared.external_memory_host.as_ref()) else {
            return Err(Error::MissingFeatures {
                device: shared.info.name.clone(),
                missing: vec!["VK_EXT_external_memory_host"],
            });
        };
        let addr = ptr as u64;
        let base = addr / align * align;
        let end = addr
            .checked_add(len.max(1))
            .and_then(|e| e.checked_next_multiple_of(align))
            .ok_or_else(|| Error::InvalidUse("the host range wraps around".into()))?;
        let (raw_offset, import_size) = (addr - base, end - base);
        if import_size > shared.max_buffer_size {
            return Err(Error::BufferTooLarge { size: len, max: shared.max_buffer_size });
        }
        // SAFETY: `base..end` is aligned host memory the caller keeps allocated.
        let (raw, memory) = unsafe { import_pages(shared, ext, base, import_size) }?;
        let dev = &shared.raw;
        Ok(Memory {
            raw,
            backing: Backing::Imported(memory),
            raw_offset,
            capacity: len,
            address: buffer_address(dev, raw) + raw_offset,
            mapped: NonNull::new(ptr).map(Mapped),
            kind: MemoryKind::Registered,
        })
    }

    /// [`Memory::allocate`] on a device that confines kernels: a piece of its
    /// reservation (`crate::reservation`), imported as memory of its own. Mapped, as
    /// all memory of such a (CPU) device is; zero until written.
    fn allocate_reserved(
        shared: &DeviceShared,
        reservation: &Arc<crate::reservation::Reservation>,
        capacity: u64,
        kind: MemoryKind,
    ) -> Result<Memory, Error> {
        let Some(ext) = shared.external_memory_host.as_ref() else {
            return Err(Error::MissingFeatures {
                device: shared.info.name.clone(),
                missing: vec!["VK_EXT_external_memory_host"],
            });
        };
        let (piece, len) = reservation.take(capacity).ok_or_else(|| {
            Error::OutOfMemory(format!(
                "the {} bytes that kernels are confined to have no free piece of {capacity} \
                 bytes",
                reservation.size()
            ))
        })?;
        // SAFETY: the piece is mapped read-write for the reservation's life, which the
        // memory's backing extends, and is freed (`destroy`) before it returns.
        let imported = unsafe { import_pages(shared, ext, piece.as_ptr() as u64, len) };
        let (raw, memory) = match imported {
            Ok(m) => m,
            Err(e) => {
                // SAFETY: nothing imported the piece.
                unsafe { reservation.release(piece, len) };
                return Err(e);
            }
        };
        Ok(Memory {
            raw,
            backing: Backing::Reserved {
                memory,
                reservation: Arc::clone(reservation),
                piece: Mapped(piece),
                len,
            },
            raw_offset: 0,
            capacity,
            address: buffer_address(&shared.raw, raw),
            mapped: Some(Mapped(piece)),
            kind,
        })
    }

    /// Destroys the buffer and releases its memory. The GPU must not use it any more.
    pub(crate) fn destroy(self, gpu: &Gpu) {
        if let Backing::Window { window, offset, len } = self.backing {
            // The window's buffer stays; its range becomes free again.
            window.release(offset, len);
            return;
        }
        // SAFETY: the caller guarantees no pending work uses the buffer (every recorded use
        // holds a handle, see the module docs); it is destroyed once, its memory after it.
        unsafe { gpu.raw.destroy_buffer(self.raw, None) };
        match self.backing {
            Backing::Window { .. } => {}
            Backing::Reserved { memory, reservation, piece, len } => {
                // SAFETY: the memory was imported by this device and its buffer is
                // destroyed; then nothing uses the piece, which goes back to the
                // reservation.
                unsafe {
                    gpu.raw.free_memory(memory, None);
                    reservation.release(piece.0, len);
                }
            }
            // A failure here only means the allocator's bookkeeping is off; nothing to
            // report from a destructor.
            Backing::Allocated(a) => drop(gpu.allocator().free(a)),
            Backing::Imported(m) | Backing::Shared(SharedMemory { memory: m, .. }) => {
                // SAFETY: the memory was allocated by this device and its buffer is
                // destroyed (freeing memory also unmaps it).
                unsafe { gpu.raw.free_memory(m, None) }
            }
        }
    }

    /// The host pointer of byte `offset` for `len` bytes, or `None` when the memory is
    /// not host-visible. Errors when the range is outside `capacity`.
    pub(crate) fn mapped_range(
        &self,
        op: &'static str,
        offset: u64,
        len: u64,
    ) -> Result<Option<*mut u8>, Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.capacity => {}
            _ => return Err(Error::OutOfBounds { op, offset, len, size: self.capacity }),
        }
        let Some(Mapped(base)) = self.mapped else { return Ok(None) };
        // In bounds (checked above) of a mapping at least `capacity` bytes long.
        Ok(Some(base.as_ptr().wrapping_add(offset as usize)))
    }

    /// See [`Buffer::read_mapped`].
    pub(crate) fn read_mapped(&self, offset: u64, out: &mut [u8]) -> Result<(), Error> {
        let src = self.mapped_range("read", offset, out.len() as u64)?.ok_or_else(not_mapped)?;
        // SAFETY: `src..src + out.len()` lies inside the live mapping (range checked);
        // `out` is a distinct host slice. Concurrent GPU writes can only make the bytes
        // stale, which the documentation tells the caller to avoid by synchronising.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// See [`Buffer::write_mapped`].
    pub(crate) fn write_mapped(&self, offset: u64, data: &[u8]) -> Result<(), Error> {
        let dst = self.mapped_range("write", offset, data.len() as u64)?.ok_or_else(not_mapped)?;
        // SAFETY: as in `read_mapped`, with the roles swapped.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    /// Zero-fills the first `len` bytes of host-visible memory; false when the memory is
    /// not host-visible.
    pub(crate) fn zero_mapped(&self, len: u64) -> Result<bool, Error> {
        let Some(ptr) = self.mapped_range("zero", 0, len)? else { return Ok(false) };
        // SAFETY: the range is inside the live mapping; the caller guarantees no GPU work
        // uses the memory yet.
        unsafe { std::ptr::write_bytes(ptr, 0, len as usize) };
        Ok(true)
    }
}

/// A buffer of `size` bytes (non-zero, within `maxBufferSize`) whose memory will be
/// external memory of `handle` type: imported host memory or an exportable fd.
pub(crate) fn create_external_buffer(
    dev: &ash::Device,
    size: u64,
    handle: vk::ExternalMemoryHandleTypeFlags,
) -> Result<vk::Buffer, Error> {
    let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(conv::buffer_usage())
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .push_next(&mut external);
    // SAFETY: the device is alive; the caller gives a non-zero size within maxBufferSize.
    unsafe { dev.create_buffer(&info, None) }.map_err(Error::vk("vkCreateBuffer"))
}

pub(crate) fn buffer_address(dev: &ash::Device, raw: vk::Buffer) -> u64 {
    let info = vk::BufferDeviceAddressInfo::default().buffer(raw);
    // SAFETY: the buffer was created with SHADER_DEVICE_ADDRESS usage on a device with
    // bufferDeviceAddress enabled, and is bound to memory allocated with the device-address
    // flag (gpu-allocator's `buffer_device_address`, or the import's allocate flags).
    unsafe { dev.get_buffer_device_address(&info) }
}

impl Drop for BufferInner {
    fn drop(&mut self) {
        if let Some(shadow) = self.shadow.take() {
            shadow.memory.destroy(&self.gpu);
        }
        let Some(memory) = self.memory.take() else { return };
        if let Some(device) = self.device.upgrade() {
            device.addresses.remove(memory.address);
        }
        match &self.pool {
            Some(pool) => pool.give_back(memory, &self.gpu),
            None => memory.destroy(&self.gpu),
        }
    }
}

/// A handle to one allocation: device memory, pinned or registered host memory, or managed
/// memory. Cloning is cheap and shares the allocation; it is freed when the last handle,
/// including those held by pending stream work, is gone.
#[derive(Clone)]
pub struct Buffer {
    pub(crate) inner: Arc<BufferInner>,
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("kind", &self.kind())
            .field("size", &self.size())
            .field("address", &format_args!("{:#x}", self.address()))
            .finish_non_exhaustive()
    }
}

impl Buffer {
    /// Wraps `memory` in a handle and enters it in the device's address map.
    pub(crate) fn wrap(
        shared: &Arc<DeviceShared>,
        memory: Memory,
        size: u64,
        pool: Option<Arc<PoolInner>>,
    ) -> Buffer {
        let address = memory.address;
        let reach = memory.reach(size);
        let inner = Arc::new(BufferInner {
            gpu: Arc::clone(&shared.gpu),
            device: Arc::downgrade(shared),
            device_id: shared.id,
            memory: Some(memory),
            size,
            pool,
            shadow: std::sync::OnceLock::new(),
        });
        shared.addresses.insert(address, size, reach, Arc::downgrade(&inner));
        Buffer { inner }
    }

    pub(crate) fn memory(&self) -> &Memory {
        // Only `BufferInner::drop` takes the memory out.
        self.inner.memory.as_ref().unwrap_or_else(|| unreachable!("buffer memory taken"))
    }

    /// The buffer's device address (what a kernel parameter pointing at it holds).
    pub fn address(&self) -> u64 {
        self.memory().address
    }

    /// The size the buffer was created with, in bytes.
    pub fn size(&self) -> u64 {
        self.inner.size
    }

    /// Where the memory lives.
    pub fn kind(&self) -> MemoryKind {
        self.memory().kind
    }

    /// Whether the host can read and write the memory directly ([`Buffer::read_mapped`]):
    /// host, registered and managed memory always, device memory on unified-memory
    /// devices.
    pub fn is_host_visible(&self) -> bool {
        self.memory().mapped.is_some()
    }

    /// The host address of the buffer's first byte when the host can reach the memory
    /// directly ([`Buffer::is_host_visible`]): for pinned and managed memory what
    /// `cuMemHostAlloc` and `cuMemAllocManaged` hand out. Using it is up to the caller.
    pub fn host_ptr(&self) -> Option<*mut u8> {
        self.memory().mapped.map(|Mapped(p)| p.as_ptr())
    }

    /// Whether `self` and `other` are handles to the same allocation.
    /// Marks the buffer as the runtime's own memory (a launch's system area, for
    /// example), which [`Device::live_allocations`] leaves out.
    pub fn set_internal(&self) {
        if let Some(device) = self.inner.device.upgrade() {
            device.addresses.set_internal(self.address());
        }
    }

    pub fn same_allocation(&self, other: &Buffer) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The buffer's device, unless it is gone.
    pub(crate) fn device_shared(&self) -> Option<Arc<DeviceShared>> {
        self.inner.device.upgrade()
    }

    /// The id of the device the buffer belongs to.
    pub(crate) fn device_id(&self) -> u64 {
        self.inner.device_id
    }

    pub(crate) fn check_range(&self, op: &'static str, offset: u64, len: u64) -> Result<(), Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size() => Ok(()),
            _ => Err(Error::OutOfBounds { op, offset, len, size: self.size() }),
        }
    }

    /// Copies `out.len()` bytes at `offset` straight from host-visible memory, with no GPU
    /// work and no synchronisation: call it once the work that wrote the bytes is complete
    /// (a stream or event synchronised). [`Error::InvalidUse`] when the memory is not
    /// host-visible ([`Buffer::is_host_visible`]).
    pub fn read_mapped(&self, offset: u64, out: &mut [u8]) -> Result<(), Error> {
        self.check_range("read", offset, out.len() as u64)?;
        self.memory().read_mapped(offset, out)
    }

    /// Copies `data` to `offset` straight into host-visible memory, with no GPU work and no
    /// synchronisation (see [`Buffer::read_mapped`]).
    pub fn write_mapped(&self, offset: u64, data: &[u8]) -> Result<(), Error> {
        self.check_range("write", offset, data.len() as u64)?;
        self.memory().write_mapped(offset, data)?;
        self.mark_written(offset, data.len() as u64);
        Ok(())
    }
}

fn not_mapped() -> Error {
    Error::InvalidUse("the buffer is device memory the host cannot map; copy it instead".into())
}

/// What [`Device::resolve`] found for an address.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The allocation holding the address.
    pub buffer: Buffer,
    /// The address's offset from the allocation's start.
    pub offset: u64,
}

/// How many freed allocations [`Device::freed_allocations`] remembers.
const FREED_REMEMBERED: usize = 256;

impl AddressMap {
    fn insert(&self, address: u64, size: u64, reach: u64, inner: Weak<BufferInner>) {
        let mut map = self.map.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.insert(address, Entry { size, reach, inner, internal: false });
        // A range reused is live again, not freed.
        let mut freed = self.freed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        freed.retain(|f| f.start != address);
    }

    fn remove(&self, address: u64) {
        let mut map = self.map.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = map.remove(&address).filter(|e| !e.internal) {
            let mut freed = self.freed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if freed.len() == FREED_REMEMBERED {
                freed.pop_front();
            }
            freed.push_back(Range { start: address, size: e.size });
        }
    }

    fn set_internal(&self, address: u64) {
        let mut map = self.map.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = map.get_mut(&address) {
            e.internal = true;
        }
    }

    fn live(&self) -> Vec<Range> {
        let map = self.map.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.iter()
            .filter(|(_, e)| !e.internal)
            .map(|(&start, e)| Range { start, size: e.size })
            .collect()
    }

    /// The live allocations (the runtime's own excluded) below `start` or from `end` on,
    /// each with its reach.
    fn live_outside(&self, start: u64, end: u64) -> Vec<Range> {
        let map = self.map.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.range(..start)
            .chain(map.range(end..))
            .filter(|(_, e)| !e.internal)
            .map(|(&start, e)| Range { start, size: e.reach })
            .collect()
    }

    fn freed(&self) -> Vec<Range> {
        let freed = self.freed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        freed.iter().copied().collect()
    }

    fn find(&self, address: u64) -> Option<Resolved> {
        let map = self.map.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (&base, Entry { size, inner, .. }) = map.range(..=address).next_back()?;
        // A zero-sized allocation still owns its first byte's address.
        let offset = address - base;
        (offset < (*size).max(1))
            .then(|| inner.upgrade())
            .flatten()
            .map(|inner| Resolved { buffer: Buffer { inner }, offset })
    }
}

impl Device {
    /// A device buffer of `size` bytes, zero-filled. Size 0 is allowed (a 16-byte buffer
    /// is created internally; the reported size is 0). The address is aligned to
    /// [`BUFFER_ALIGNMENT`].
    pub fn alloc(&self, size: u64) -> Result<Buffer, Error> {
        let memory = self.allocate_device_memory(size)?;
        let buffer = Buffer::wrap(&self.shared, memory, size, None);
        self.zero(&buffer)?;
        // After the zero fill, which is not the program's write.
        self.maybe_track(&buffer)?;
        Ok(buffer)
    }

    /// Device memory of `size` bytes, not zeroed: mapped on unified-memory devices.
    pub(crate) fn allocate_device_memory(&self, size: u64) -> Result<Memory, Error> {
        self.shared.check_alive()?;
        let location = if self.shared.unified_memory {
            MemoryLocation::CpuToGpu
        } else {
            MemoryLocation::GpuOnly
        };
        Memory::allocate(&self.shared, size, location, MemoryKind::Device, "ptxvk buffer")
    }

    /// Zero-fills a buffer nothing else uses yet: directly when it is host-visible, else
    /// with a fill on the legacy default stream that is waited for.
    pub(crate) fn zero(&self, buffer: &Buffer) -> Result<(), Error> {
        if buffer.memory().zero_mapped(buffer.size())? {
            return Ok(());
        }
        let stream = self.default_stream();
        stream.memset(buffer, 0, buffer.size(), crate::types::Pattern::U8(0))?;
        stream.synchronize()
    }

    /// Pinned host memory of `size` bytes, zero-filled, that kernels read and write through
    /// its device address and the host through [`Buffer::read_mapped`] /
    /// [`Buffer::write_mapped`] (`cuMemHostAlloc`).
    pub fn alloc_host(&self, size: u64) -> Result<Buffer, Error> {
        self.alloc_mapped(size, MemoryLocation::GpuToCpu, MemoryKind::Host, "ptxvk host memory")
    }

    /// Managed memory of `size` bytes, zero-filled: host-visible and coherent, used by the
    /// host and kernels directly (`cuMemAllocManaged`). On discrete GPUs it is host memory
    /// that kernels reach over the bus, slower than [`Device::alloc`].
    pub fn alloc_managed(&self, size: u64) -> Result<Buffer, Error> {
        self.alloc_mapped(size, MemoryLocation::CpuToGpu, MemoryKind::Managed, "ptxvk managed")
    }

    fn alloc_mapped(
        &self,
        size: u64,
        location: MemoryLocation,
        kind: MemoryKind,
        name: &str,
    ) -> Result<Buffer, Error> {
        self.shared.check_alive()?;
        let memory = Memory::allocate(&self.shared, size, location, kind, name)?;
        let buffer = Buffer::wrap(&self.shared, memory, size, None);
        self.zero(&buffer)?;
        Ok(buffer)
    }

    /// Registers `len` bytes of existing host memory at `ptr` so kernels can read and
    /// write it through the returned buffer's address (`cuMemHostRegister`), through
    /// `VK_EXT_external_memory_host`. Devices without the extension give
    /// [`Error::MissingFeatures`].
    ///
    /// # Safety
    /// The memory must stay allocated until the returned buffer and every clone of it are
    /// dropped and the work using it is complete (a synchronised stream or device).
    pub unsafe fn register_host(&self, ptr: *mut u8, len: usize) -> Result<Buffer, Error> {
        self.shared.check_alive()?;
        if ptr.is_null() {
            return Err(Error::InvalidUse("cannot register a null host pointer".into()));
        }
        // SAFETY: the caller keeps the memory alive (function contract).
        let memory = unsafe { Memory::import_host(&self.shared, ptr, len as u64) }?;
        Ok(Buffer::wrap(&self.shared, memory, len as u64, None))
    }

    /// Whether [`Device::register_host`] can work on this device.
    pub fn can_register_host(&self) -> bool {
        self.shared.external_memory_host.is_some() && self.shared.host_pointer_alignment > 0
    }

    /// Whether device memory is host-visible here, so host copies need no staging.
    pub fn unified_memory(&self) -> bool {
        self.shared.unified_memory
    }

    /// The address range every allocation of this device lies in when it confines
    /// kernels to their memory (a CPU device, `PTXVK_CONFINE` not 0): what an
    /// unchecked kernel's global accesses are tested against.
    pub fn confinement(&self) -> Option<Range> {
        let r = self.shared.reservation.as_ref()?;
        Some(Range { start: r.start(), size: r.size() })
    }

    /// The live allocations outside [`Device::confinement`] (registered host memory,
    /// memory imported from another process): the only ones a confined kernel's
    /// accesses outside the range may reach. Empty when the device does not confine.
    pub fn allocations_outside_confinement(&self) -> Vec<Range> {
        match &self.shared.reservation {
            Some(r) => self.shared.addresses.live_outside(r.start(), r.start() + r.size()),
            None => Vec::new(),
        }
    }

    /// The live allocation holding `address` and the offset into it, if any
    /// (`cuMemGetAddressRange`, `cuPointerGetAttribute`).
    pub fn resolve(&self, address: u64) -> Option<Resolved> {
        self.shared.addresses.find(address)
    }

    /// Every live allocation but the runtime's own ([`Buffer::set_internal`]), by
    /// address: what a checked launch may access.
    pub fn live_allocations(&self) -> Vec<Range> {
        self.shared.addresses.live()
    }

    /// The last allocations freed (up to 256) whose addresses are not live again, oldest
    /// first: what a checked launch's report names as freed memory.
    pub fn freed_allocations(&self) -> Vec<Range> {
        self.shared.addresses.freed()
    }

    /// Copies `data` into `buf` at byte `offset` and waits for it, ordered after all work
    /// of the legacy default stream and the streams it waits for (`cuMemcpyHtoD`).
    pub fn upload(&self, buf: &Buffer, offset: u64, data: &[u8]) -> Result<(), Error> {
        self.default_stream().copy_to_buffer_sync(buf, offset, data)
    }

    /// Reads `len` bytes of `buf` from byte `offset` after all work of the legacy default
    /// stream (`cuMemcpyDtoH`).
    pub fn download(&self, buf: &Buffer, offset: u64, len: u64) -> Result<Vec<u8>, Error> {
        let len = usize::try_from(len).map_err(|_| Error::OutOfBounds {
            op: "download",
            offset,
            len,
            size: buf.size(),
        })?;
        buf.check_range("download", offset, len as u64)?;
        let mut out = vec![0u8; len];
        self.default_stream().copy_from_buffer(buf, offset, &mut out)?;
        Ok(out)
    }
}

/// Imports the `size` bytes of host memory at `base` (aligned to the device's import
/// alignment) as a new `VkDeviceMemory` bound to a new buffer of the same size.
///
/// # Safety
/// `base..base + size` must be host memory that stays allocated until the memory is
/// freed.
unsafe fn import_pages(
    shared: &DeviceShared,
    ext: &ash::ext::external_memory_host::Device,
    base: u64,
    import_size: u64,
) -> Result<(vk::Buffer, vk::DeviceMemory), Error> {
    let dev = &shared.raw;
    let handle = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
    let mut props = vk::MemoryHostPointerPropertiesEXT::default();
    // SAFETY: `base` is aligned to minImportedHostPointerAlignment and points into host
    // memory the caller keeps allocated (function contract).
    unsafe {
        (ext.fp().get_memory_host_pointer_properties_ext)(
            ext.device(),
            handle,
            base as *const std::ffi::c_void,
            &mut props,
        )
    }
    .result()
    .map_err(Error::vk("vkGetMemoryHostPointerPropertiesEXT"))?;
    let raw = create_external_buffer(dev, import_size, handle)?;
    // SAFETY: `raw` is a live buffer of this device.
    let requirements = unsafe { dev.get_buffer_memory_requirements(raw) };
    let type_bits = requirements.memory_type_bits & props.memory_type_bits;
    let Some(type_index) = (0..32).find(|i| type_bits & (1 << i) != 0) else {
        // SAFETY: the buffer was just created and is unused.
        unsafe { dev.destroy_buffer(raw, None) };
        return Err(Error::InvalidUse(
            "the device cannot import this host memory into a buffer".into(),
        ));
    };
    let mut import =
        vk::ImportMemoryHostPointerInfoEXT::default().handle_type(handle).host_pointer(
            // The import API takes a mutable void pointer.
            base as *mut std::ffi::c_void,
        );
    let mut flags =
        vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
    let alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(import_size)
        .memory_type_index(type_index)
        .push_next(&mut import)
        .push_next(&mut flags);
    // SAFETY: the pointer and size are aligned to the import alignment, the memory type
    // is one the pointer's properties allow, and the caller keeps the memory alive.
    let memory = match unsafe { dev.allocate_memory(&alloc, None) } {
        Ok(m) => m,
        Err(result) => {
            // SAFETY: the buffer was just created and is unused.
            unsafe { dev.destroy_buffer(raw, None) };
            return Err(Error::from_vk("vkAllocateMemory", result));
        }
    };
    // SAFETY: the memory is as large as the buffer, of an allowed type, bound once.
    if let Err(result) = unsafe { dev.bind_buffer_memory(raw, memory, 0) } {
        // SAFETY: both objects were just created and are unused.
        unsafe {
            dev.destroy_buffer(raw, None);
            dev.free_memory(memory, None);
        }
        return Err(Error::from_vk("vkBindBufferMemory", result));
    }
    Ok((raw, memory))
}
