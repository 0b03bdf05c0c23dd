//! The objects of an open device: what the device's shared state ([`DeviceShared`])
//! holds, and the types those are made of: streams' cores and batches, events, pools,
//! allocations and the address map, memory shared with other processes, the address
//! window's buffer and write shadows. Their operations are with the rest of their
//! concern (the file named above each group: `device.rs`, `stream.rs`, `event.rs`,
//! `pool.rs`, `memory.rs`, `external.rs`, `window.rs`, `shadow.rs`); this file only
//! describes them, so that the state below every operation imports none of them.

use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{mpsc, Arc, Mutex, OnceLock, RwLock, Weak};
use std::thread::ThreadId;

use ash::vk;
use gpu_allocator::vulkan::{Allocation, Allocator};

use crate::error::Error;
use crate::instance::Instance;
use crate::ranges::FreeRanges;
use crate::reservation::Reservation;
use crate::types::{DeviceInfo, StreamKind};

// The device (`device.rs`).

/// An open Vulkan device: memory, programs and launches.
///
/// Cheap to clone (all clones share one device) and usable from several threads; GPU
/// submissions from different threads are serialized.
#[derive(Clone)]
pub struct Device {
    pub(crate) shared: Arc<DeviceShared>,
}

/// Everything one open device owns. See `device.rs` for the teardown order.
pub(crate) struct DeviceShared {
    /// Unique among the devices of this process (objects name their device by it).
    pub(crate) id: u64,
    pub(crate) raw: ash::Device,
    pub(crate) info: DeviceInfo,
    pub(crate) max_buffer_size: u64,
    pub(crate) queue_family: u32,
    pub(crate) timestamp_valid_bits: u32,
    pub(crate) unified_memory: bool,
    pub(crate) host_pointer_alignment: u64,
    pub(crate) external_memory_host: Option<ash::ext::external_memory_host::Device>,
    /// Where every allocation lives on a device that confines kernels
    /// (`crate::reservation`).
    pub(crate) reservation: Option<Arc<Reservation>>,
    /// `VK_KHR_external_memory_fd`, when buffers can be shared as opaque fds.
    pub(crate) external_memory_fd: Option<ash::khr::external_memory_fd::Device>,
    /// `deviceUUID`: imported memory must come from a device with the same one.
    pub(crate) device_uuid: [u8; vk::UUID_SIZE],
    /// Memory shared as opaque fds must be a dedicated allocation.
    pub(crate) external_memory_fd_dedicated: bool,
    pub(crate) memory_properties: vk::PhysicalDeviceMemoryProperties,
    /// Shared by every program of this device; internally synchronized by Vulkan.
    pub(crate) pipeline_cache: vk::PipelineCache,
    /// Set when a pipeline was created, so the cache is worth saving.
    pub(crate) pipeline_cache_dirty: AtomicBool,
    pub(crate) cache_path: Option<PathBuf>,
    pub(crate) pipeline_cache_uuid: [u8; vk::UUID_SIZE],
    pub(crate) timeout_ms: AtomicU64,
    /// How long waits spin before blocking (`PTXVK_SPIN_US`).
    pub(crate) spin_us: u64,
    /// Set once any call reported `VK_ERROR_DEVICE_LOST`.
    pub(crate) lost: AtomicBool,
    /// Whether new device allocations get write shadows (`crate::shadow`).
    pub(crate) track_writes: AtomicBool,
    /// The device, allocator and instance, which outlive every object made from them.
    pub(crate) gpu: Arc<Gpu>,
    /// The legacy default stream.
    pub(crate) legacy: Arc<StreamCore>,
    /// Blocking streams the legacy default stream synchronises with.
    pub(crate) blocking: Mutex<Vec<Weak<StreamCore>>>,
    /// Per-thread default streams, kept for the device's life.
    pub(crate) per_thread: Mutex<Vec<(ThreadId, Arc<StreamCore>)>>,
    pub(crate) default_pool: Arc<PoolInner>,
    pub(crate) addresses: AddressMap,
    /// Timing events of synchronous launches, for reuse (creating a query pool per launch
    /// costs more than the launch).
    pub(crate) timers: Mutex<Vec<Arc<EventInner>>>,
    /// The host-callback thread's inbox, started on first use.
    pub(crate) callbacks: Mutex<Option<mpsc::Sender<HostCallback>>>,
}

/// The Vulkan device, its allocator and the instance: what every object needs to be
/// destroyed. Stream cores, arena chunks and events hold it directly (not
/// [`DeviceShared`], which owns the default streams: that would be a cycle), so it is
/// destroyed last, when the last of them is gone.
pub(crate) struct Gpu {
    pub(crate) raw: ash::Device,
    /// `ManuallyDrop` so it is dropped before the device is destroyed.
    pub(crate) allocator: ManuallyDrop<Mutex<Allocator>>,
    /// `ManuallyDrop` so it is destroyed after the device (and not at all if the device
    /// has to be leaked).
    pub(crate) instance: ManuallyDrop<Instance>,
    /// Set when work may still run at teardown: the device is then leaked.
    pub(crate) leak: AtomicBool,
    /// The one queue; its lock is held only around `vkQueueSubmit`.
    pub(crate) queue: Mutex<vk::Queue>,
    /// Objects of dropped streams waiting to be destroyed (see [`Gpu::bury`]).
    pub(crate) graveyard: Mutex<Vec<Grave>>,
}

/// A dropped stream's command pool and semaphore, and a fence signalled by an empty
/// submission made after the stream's last batch.
pub(crate) struct Grave {
    pub(crate) fence: vk::Fence,
    pub(crate) pool: vk::CommandPool,
    pub(crate) semaphore: vk::Semaphore,
}

/// A host function waiting for its stream (see [`DeviceShared::run_host_callback`]).
pub(crate) struct HostCallback {
    pub(crate) shared: Arc<DeviceShared>,
    pub(crate) core: Arc<StreamCore>,
    pub(crate) after: u64,
    pub(crate) signal: u64,
    pub(crate) f: Box<dyn FnOnce() + Send>,
}

// Streams (`stream.rs`; the arena's operations in `stream/arena.rs`).

/// The shared part of a stream.
pub(crate) struct StreamCore {
    pub(crate) gpu: Arc<Gpu>,
    pub(crate) kind: StreamKind,
    pub(crate) priority: i32,
    pub(crate) timeline: vk::Semaphore,
    /// The highest value anything scheduled on this stream signals (open batch included).
    pub(crate) last: AtomicU64,
    /// For blocking streams: the legacy stream's value this stream already waits for.
    /// For the legacy stream: unused.
    pub(crate) legacy_seen: AtomicU64,
    /// For blocking streams: this stream's value the legacy stream already waits for.
    pub(crate) seen_by_legacy: AtomicU64,
    pub(crate) state: Mutex<StreamState>,
}

pub(crate) struct StreamState {
    pub(crate) pool: vk::CommandPool,
    pub(crate) spare: Vec<vk::CommandBuffer>,
    pub(crate) open: Option<Batch>,
    pub(crate) in_flight: VecDeque<Batch>,
    /// The value a host callback signals, which the next batch must wait for.
    pub(crate) host_wait: Option<u64>,
    /// The first error of a completion hook since the last synchronisation.
    pub(crate) error: Option<Error>,
    pub(crate) arena: Arena,
    /// The pool and semaphore are destroyed (device teardown).
    pub(crate) destroyed: bool,
}

/// One command buffer's worth of stream operations.
pub(crate) struct Batch {
    pub(crate) cmd: vk::CommandBuffer,
    /// The timeline value its submission signals.
    pub(crate) value: u64,
    /// Semaphore values it waits for, with the streams that own them (kept alive).
    pub(crate) waits: Vec<(Arc<StreamCore>, u64)>,
    /// Everything its commands use.
    pub(crate) keep: Vec<Arc<dyn Any + Send + Sync>>,
    pub(crate) hooks: Vec<Hook>,
    pub(crate) ops: u32,
    /// An operation was recorded since the last barrier.
    pub(crate) dirty: bool,
    pub(crate) bound: vk::Pipeline,
}

/// Completion work of a batch, run on the host once the GPU has finished it; an error is
/// reported by the stream's next synchronisation.
pub type Hook = Box<dyn FnOnce() -> Result<(), Error> + Send>;

/// Host-visible memory for parameter blocks and staged uploads, bump-allocated in chunks.
/// A full chunk is reused once no pending batch holds it.
#[derive(Default)]
pub(crate) struct Arena {
    pub(crate) current: Option<(Arc<Chunk>, u64)>,
    pub(crate) retired: Vec<Arc<Chunk>>,
    /// The area of shared windows in device memory, and its size.
    pub(crate) shared_windows: Option<(Arc<Chunk>, u64)>,
}

/// A piece of host-visible memory of the arena (or a one-off staging buffer). Holds the
/// [`Gpu`] rather than the device, so the default streams' arenas do not keep their
/// device alive.
pub(crate) struct Chunk {
    pub(crate) gpu: Arc<Gpu>,
    pub(crate) memory: Option<Memory>,
}

// Events (`event.rs`).

/// The shared part of an event; pending batches that write its timestamp keep it alive.
pub(crate) struct EventInner {
    pub(crate) gpu: Arc<Gpu>,
    /// One timestamp query, or null without timing.
    pub(crate) queries: vk::QueryPool,
    pub(crate) recorded: Mutex<Option<(Arc<StreamCore>, u64)>>,
}

// Pools (`pool.rs`).

/// The pool's state, shared by its handle and by every buffer allocated from it.
#[derive(Default)]
pub(crate) struct PoolInner {
    /// Memory ready for reuse.
    pub(crate) free: Mutex<Vec<Memory>>,
    pub(crate) release_threshold: AtomicU64,
    /// Bytes of memory out in buffers.
    pub(crate) used: AtomicU64,
    /// Bytes of memory the pool owns: out in buffers or held free.
    pub(crate) reserved: AtomicU64,
    pub(crate) reserved_high: AtomicU64,
    pub(crate) used_high: AtomicU64,
    /// Set when the pool's handle is gone: returned memory is then released.
    pub(crate) closed: AtomicBool,
}

// Allocations and the address map (`memory.rs`).

/// Every live allocation by address, for [`Device::resolve`] (`cuMemGetAddressRange`,
/// `cuPointerGetAttribute`), and the last allocations freed. Taken on allocation and free
/// only, and on the launch path only by checked launches, which copy the live ranges
/// into their allocation table.
#[derive(Default)]
pub(crate) struct AddressMap {
    pub(crate) map: RwLock<BTreeMap<u64, Entry>>,
    pub(crate) freed: Mutex<VecDeque<Range>>,
}

pub(crate) struct Entry {
    pub(crate) size: u64,
    /// The bytes from the allocation's start that are its own memory: its size, or
    /// up to the end of the last page of a memory object of its own ([`Memory::reach`]).
    pub(crate) reach: u64,
    pub(crate) inner: Weak<BufferInner>,
    /// The runtime's own memory
    /// ([`Buffer::set_internal`](crate::Buffer::set_internal)), which checked launches
    /// do not count as the program's.
    pub(crate) internal: bool,
}

/// A range of device addresses: an allocation's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Range {
    pub start: u64,
    pub size: u64,
}

/// The shared part of a [`Buffer`](crate::Buffer): frees (or returns to its pool) the
/// memory when the last handle, the user's or a pending stream operation's, is dropped.
pub(crate) struct BufferInner {
    /// What the memory is freed through; it outlives the device handle if need be.
    pub(crate) gpu: Arc<Gpu>,
    /// The device, for its address map (gone once the device is).
    pub(crate) device: Weak<DeviceShared>,
    pub(crate) device_id: u64,
    /// `None` only during drop.
    pub(crate) memory: Option<Memory>,
    pub(crate) size: u64,
    pub(crate) pool: Option<Arc<PoolInner>>,
    /// Which words have been written, when the device tracks writes (`crate::shadow`).
    pub(crate) shadow: OnceLock<Shadow>,
}

/// One Vulkan buffer and the memory bound to it.
pub(crate) struct Memory {
    pub(crate) raw: vk::Buffer,
    pub(crate) backing: Backing,
    /// Offset in `raw` of the buffer's byte 0 (non-zero for registered memory, whose
    /// import starts at the page below the registered pointer).
    pub(crate) raw_offset: u64,
    /// Bytes usable from byte 0 (at least the requested size).
    pub(crate) capacity: u64,
    pub(crate) address: u64,
    pub(crate) mapped: Option<Mapped>,
    pub(crate) kind: MemoryKind,
}

/// Where an allocation lives and who can reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Device memory (`cuMemAlloc`). Host-visible only on unified-memory devices.
    Device,
    /// Pinned host memory that kernels read and write directly (`cuMemHostAlloc`).
    Host,
    /// Existing host memory registered for kernels (`cuMemHostRegister`), imported through
    /// `VK_EXT_external_memory_host`.
    Registered,
    /// Memory both the host and kernels use directly, host-visible and coherent
    /// (`cuMemAllocManaged`). On discrete GPUs it lives in host memory, so kernels reach
    /// it over the bus: slower than device memory.
    Managed,
}

/// The memory behind a buffer.
pub(crate) enum Backing {
    /// Sub-allocated by gpu-allocator.
    Allocated(Allocation),
    /// A dedicated `VkDeviceMemory` importing host memory the caller owns.
    Imported(vk::DeviceMemory),
    /// A dedicated `VkDeviceMemory` other processes can share (`crate::external`):
    /// exportable as an opaque fd, or imported from one.
    Shared(SharedMemory),
    /// Bytes `offset..offset + len` of a [`crate::Window`]'s buffer, whose `VkBuffer`
    /// this memory shares.
    Window { window: Arc<WindowInner>, offset: u64, len: u64 },
    /// A piece of the device's confinement reservation (`crate::reservation`),
    /// imported as its own `VkDeviceMemory`.
    Reserved { memory: vk::DeviceMemory, reservation: Arc<Reservation>, piece: Mapped, len: u64 },
}

/// A host pointer to mapped memory.
#[derive(Clone, Copy)]
pub(crate) struct Mapped(pub(crate) NonNull<u8>);

// SAFETY: the pointer refers to memory mapped for the whole life of the allocation (or
// host memory the registrant keeps alive), not to thread-local data; every access goes
// through `Buffer` methods that copy bytes with no aliasing references.
unsafe impl Send for Mapped {}
// SAFETY: as above; shared access only copies bytes.
unsafe impl Sync for Mapped {}

// Memory shared with other processes (`external.rs`).

/// The memory object behind a shared buffer.
pub(crate) struct SharedMemory {
    pub(crate) memory: vk::DeviceMemory,
    pub(crate) allocation_size: u64,
    pub(crate) memory_type_index: u32,
}

// The 32-bit address window (`window.rs`).

pub(crate) struct WindowInner {
    pub(crate) gpu: Arc<Gpu>,
    /// The window's own buffer; `None` only during drop.
    pub(crate) memory: Option<Memory>,
    pub(crate) free: FreeRanges,
}

// Write shadows (`shadow.rs`).

/// An allocation's shadow ([`crate::shadow`]).
pub(crate) struct Shadow {
    pub(crate) memory: Memory,
}
