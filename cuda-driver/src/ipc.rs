//! CUDA IPC between processes of one machine: `cuIpcGetMemHandle`, `cuIpcOpenMemHandle`,
//! `cuIpcCloseMemHandle`, `cuIpcGetEventHandle`, `cuIpcOpenEventHandle`.
//!
//! # Memory
//!
//! On a device that can share memory as opaque file descriptors
//! (`VK_KHR_external_memory_fd`; lavapipe backs each such allocation with a memfd), every
//! `cuMemAlloc` allocation is made exportable, as CUDA lets any of them be exported
//! later (see [`exportable_by_default`] for when and what it costs). `cuIpcGetMemHandle`
//! asks Vulkan for a descriptor of the allocation's memory object, keeps it open until
//! `cuMemFree`, and writes a 64-byte handle naming this process, that descriptor's
//! number and inode, and what an importer must allocate ([`MemHandle`]). The opening
//! process reopens the descriptor through `/proc/<pid>/fd/<n>` (the memfd's file), or
//! duplicates it with `pidfd_getfd` (any descriptor kind, needs ptrace permission),
//! checks the inode, and imports it into its own device at an address of its own.
//!
//! # Events
//!
//! An event created with `CU_EVENT_INTERPROCESS` gets a page of shared memory (a memfd)
//! holding two counters, records made and records completed. Recording it (in any
//! process) counts a record and enqueues a host function that marks it complete when the
//! stream reaches it; `cuEventQuery`, `cuEventSynchronize` and `cuStreamWaitEvent` on it
//! compare the counters, so each process sees the other's records complete.

use std::collections::BTreeMap;
use std::ffi::{c_uint, c_void};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUresult;
use ptxvk::vk::{Buffer, ExportedMemory};

use crate::objects::StreamRef;
use crate::state::{driver, Allocation, Driver};
use crate::{entry, out};

/// Size of `CUipcMemHandle` and `CUipcEventHandle` (`CU_IPC_HANDLE_SIZE`).
pub(crate) const HANDLE_SIZE: usize = 64;

/// `CUipcMemHandle` / `CUipcEventHandle`, passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IpcHandle {
    pub reserved: [u8; HANDLE_SIZE],
}

/// First bytes of every handle this library writes.
const MAGIC: [u8; 8] = *b"ptxvkIPC";
const KIND_MEMORY: u32 = 1;
const KIND_EVENT: u32 = 2;

/// `CU_EVENT_DISABLE_TIMING` and `CU_EVENT_INTERPROCESS` (`CUevent_flags`).
const CU_EVENT_DISABLE_TIMING: c_uint = 2;
const CU_EVENT_INTERPROCESS: c_uint = 4;
/// `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`: the one flag of `cuIpcOpenMemHandle`. With one
/// device there are no peers to enable.
const CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: c_uint = 1;

/// Environment variable choosing whether `cuMemAlloc` allocations are exportable: `1`
/// always (where the device can), `0` never; unset, see [`exportable_by_default`].
pub const ENV_IPC: &str = "PTXVK_IPC";

/// Why an IPC call failed, before it becomes a result code.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IpcError {
    #[error("not an IPC handle of this library")]
    NotAHandle,
    #[error("the handle was exported by this process; CUDA opens handles of other processes only")]
    SameProcess,
    #[error("cannot reach descriptor {fd} of process {pid} (exited, or not permitted): {source}")]
    Unreachable { pid: u32, fd: RawFd, source: std::io::Error },
    #[error("descriptor {fd} of process {pid} is no longer the exported memory")]
    Stale { pid: u32, fd: RawFd },
    #[error("the allocation is not exportable: {0}")]
    NotExportable(String),
    #[error("the event was not created with CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING")]
    NotInterprocess,
    #[error("shared event page: {0}")]
    Page(std::io::Error),
    #[error(transparent)]
    Runtime(#[from] ptxvk::vk::Error),
}

impl IpcError {
    /// The CUDA result code, with the reason on standard error where CUDA's code alone
    /// would not tell the user what is missing.
    fn code(self) -> CUresult {
        match self {
            IpcError::NotAHandle | IpcError::NotInterprocess => CUresult::CUDA_ERROR_INVALID_VALUE,
            IpcError::SameProcess => CUresult::CUDA_ERROR_INVALID_CONTEXT,
            IpcError::Runtime(e) => crate::vk_code(e),
            e @ IpcError::NotExportable(_) => {
                eprintln!("ptxvk libcuda: {e}");
                CUresult::CUDA_ERROR_NOT_SUPPORTED
            }
            e @ (IpcError::Unreachable { .. } | IpcError::Stale { .. }) => {
                eprintln!("ptxvk libcuda: {e}");
                CUresult::CUDA_ERROR_INVALID_VALUE
            }
            e @ IpcError::Page(_) => {
                eprintln!("ptxvk libcuda: {e}");
                CUresult::CUDA_ERROR_OPERATING_SYSTEM
            }
        }
    }
}

/// A descriptor of another process: `pid`, its number there, and the inode it had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RemoteFd {
    pid: u32,
    fd: RawFd,
    inode: u64,
}

/// What a memory handle says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MemHandle {
    source: RemoteFd,
    exported: ExportedMemory,
}

/// Handle layout (little-endian): magic 0..8, kind 8..12, pid 12..16, fd 16..20,
/// memory type 20..24, inode 24..32, allocation size 32..40, size 40..48,
/// deviceUUID 48..64. An event handle has the first 32 bytes only.
fn write_common(kind: u32, source: RemoteFd) -> [u8; HANDLE_SIZE] {
    let mut h = [0u8; HANDLE_SIZE];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&kind.to_le_bytes());
    h[12..16].copy_from_slice(&source.pid.to_le_bytes());
    h[16..20].copy_from_slice(&source.fd.to_le_bytes());
    h[24..32].copy_from_slice(&source.inode.to_le_bytes());
    h
}

fn u32_at(h: &[u8; HANDLE_SIZE], at: usize) -> u32 {
    u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]])
}

fn u64_at(h: &[u8; HANDLE_SIZE], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The source descriptor of a handle of `kind`; [`IpcError::SameProcess`] for one this
/// process wrote.
fn read_common(h: &[u8; HANDLE_SIZE], kind: u32) -> Result<RemoteFd, IpcError> {
    if h[0..8] != MAGIC || u32_at(h, 8) != kind {
        return Err(IpcError::NotAHandle);
    }
    let source = RemoteFd { pid: u32_at(h, 12), fd: u32_at(h, 16) as RawFd, inode: u64_at(h, 24) };
    if source.pid == std::process::id() {
        return Err(IpcError::SameProcess);
    }
    if source.pid == 0 || source.fd < 0 {
        return Err(IpcError::NotAHandle);
    }
    Ok(source)
}

impl MemHandle {
    fn encode(&self) -> [u8; HANDLE_SIZE] {
        let mut h = write_common(KIND_MEMORY, self.source);
        h[20..24].copy_from_slice(&self.exported.memory_type_index.to_le_bytes());
        h[32..40].copy_from_slice(&self.exported.allocation_size.to_le_bytes());
        h[40..48].copy_from_slice(&self.exported.size.to_le_bytes());
        h[48..64].copy_from_slice(&self.exported.device_uuid);
        h
    }

    fn decode(h: &[u8; HANDLE_SIZE]) -> Result<MemHandle, IpcError> {
        let source = read_common(h, KIND_MEMORY)?;
        let mut device_uuid = [0u8; 16];
        device_uuid.copy_from_slice(&h[48..64]);
        let exported = ExportedMemory {
            memory_type_index: u32_at(h, 20),
            allocation_size: u64_at(h, 32),
            size: u64_at(h, 40),
            device_uuid,
        };
        Ok(MemHandle { source, exported })
    }
}

/// A descriptor of this process named in a handle, kept open for importers.
fn local_fd(fd: OwnedFd) -> Result<(OwnedFd, RemoteFd), IpcError> {
    let stat = rustix::fs::fstat(&fd).map_err(|e| IpcError::Page(e.into()))?;
    let source = RemoteFd { pid: std::process::id(), fd: fd.as_raw_fd(), inode: stat.st_ino };
    Ok((fd, source))
}

/// Gets hold of another process's descriptor: reopens its file through `/proc` (what a
/// memfd allows, with the same permission as reading the process's memory maps), else
/// duplicates it with `pidfd_getfd` (any descriptor, needs ptrace-attach permission).
/// Either way the inode must still be the one exported, so a reused descriptor number
/// or process id is refused.
fn reach(source: RemoteFd) -> Result<OwnedFd, IpcError> {
    let path = format!("/proc/{}/fd/{}", source.pid, source.fd);
    let fd = match std::fs::OpenOptions::new().read(true).write(true).open(&path) {
        Ok(file) => OwnedFd::from(file),
        Err(reopen) => duplicate(source).map_err(|_| IpcError::Unreachable {
            pid: source.pid,
            fd: source.fd,
            source: reopen,
        })?,
    };
    let inode = std::fs::File::from(fd.try_clone().map_err(IpcError::Page)?)
        .metadata()
        .map_err(IpcError::Page)?
        .ino();
    if inode != source.inode {
        return Err(IpcError::Stale { pid: source.pid, fd: source.fd });
    }
    Ok(fd)
}

fn duplicate(source: RemoteFd) -> std::io::Result<OwnedFd> {
    let pid = rustix::process::Pid::from_raw(source.pid as i32)
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?;
    Ok(rustix::process::pidfd_getfd(&pidfd, source.fd, rustix::process::PidfdGetfdFlags::empty())?)
}

// Memory.

/// The IPC state of this process.
#[derive(Default)]
struct State {
    /// Exported allocations by base address: the descriptor importers reach, and the
    /// handle (the same for every call, as CUDA's).
    exported: BTreeMap<u64, (OwnedFd, [u8; HANDLE_SIZE])>,
    /// Opened handles by the address they were mapped at: the buffer and how many opens
    /// are not closed yet.
    opened: BTreeMap<u64, (Buffer, RemoteFd, usize)>,
    /// Interprocess events by event handle.
    events: BTreeMap<usize, Arc<SharedEvent>>,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(Mutex::default);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `cuMemAlloc` makes exportable allocations when [`ENV_IPC`] is unset: on
/// unified-memory devices (lavapipe, integrated GPUs) that can export. There each
/// allocation becomes a memory object of its own (on lavapipe a memfd, one descriptor
/// while it lives) instead of a sub-allocation: measured on lavapipe, 34 µs instead of
/// 0.6 µs for a small allocation and 0.5 ms instead of 22 µs for 1 MiB (fresh pages).
/// Discrete GPUs keep sub-allocating: they may allow as few as 4096 memory objects
/// (`maxMemoryAllocationCount`); `PTXVK_IPC=1` makes them exportable there too.
fn exportable_by_default(device: &ptxvk::vk::Device) -> bool {
    device.unified_memory()
}

/// Whether this process's `cuMemAlloc` allocations are exportable.
fn allocations_exportable(device: &ptxvk::vk::Device) -> bool {
    static EXPORTABLE: LazyLock<Mutex<Option<bool>>> = LazyLock::new(Mutex::default);
    let mut cached = EXPORTABLE.lock().unwrap_or_else(PoisonError::into_inner);
    *cached.get_or_insert_with(|| {
        let wanted = match std::env::var(ENV_IPC).as_deref().map(str::trim) {
            Ok("1") => true,
            Ok("0") => false,
            _ => exportable_by_default(device),
        };
        let exportable = wanted && device.can_export_memory();
        if exportable {
            raise_descriptor_limit();
        }
        exportable
    })
}

/// Exportable allocations hold a descriptor each (lavapipe's memfd): the soft limit on
/// open descriptors (often 1024) is raised to the hard one, as Go's runtime does, so
/// that programs with many live allocations do not run out.
fn raise_descriptor_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        // Best effort: a process that cannot raise it keeps its limit.
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// A `cuMemAlloc` allocation of `size` bytes: exportable when this process's
/// allocations are ([`allocations_exportable`]). If the exportable allocation fails (no
/// descriptors left, say) the allocation is made as usual, and only exporting it fails.
pub(crate) fn alloc(device: &ptxvk::vk::Device, size: u64) -> Result<Buffer, ptxvk::vk::Error> {
    if allocations_exportable(device) {
        if let Ok(buffer) = device.alloc_exportable(size) {
            return Ok(buffer);
        }
    }
    device.alloc(size)
}

/// `cuMemFree` of `address`: its exported descriptor is closed (importers that opened it
/// keep their own).
pub(crate) fn forget_allocation(address: u64) {
    state().exported.remove(&address);
}

fn get_mem_handle(d: &Driver, address: u64) -> Result<[u8; HANDLE_SIZE], IpcError> {
    let mut st = state();
    if let Some((_, handle)) = st.exported.get(&address) {
        return Ok(*handle);
    }
    // Only a whole cuMemAlloc allocation, named by its base, can be exported.
    let buffer = match d.allocations().get(&address) {
        Some(Allocation { buffer, managed: false }) => buffer.clone(),
        _ => return Err(IpcError::NotAHandle),
    };
    let (fd, exported) = buffer.export_fd().map_err(|e| match e {
        ptxvk::vk::Error::InvalidUse(_) | ptxvk::vk::Error::MissingFeatures { .. } => {
            IpcError::NotExportable(not_exportable_reason(d.device().vk()))
        }
        e => IpcError::Runtime(e),
    })?;
    let (fd, source) = local_fd(fd)?;
    let handle = MemHandle { source, exported }.encode();
    st.exported.insert(address, (fd, handle));
    Ok(handle)
}

fn not_exportable_reason(device: &ptxvk::vk::Device) -> String {
    if !device.can_export_memory() {
        format!(
            "{} cannot share memory between processes (it lacks VK_KHR_external_memory_fd \
             with exportable opaque-fd buffers)",
            device.info().name
        )
    } else if !allocations_exportable(device) {
        format!(
            "cuMemAlloc allocations are not exportable on {} unless {ENV_IPC}=1",
            device.info().name
        )
    } else {
        "it was allocated before, or without, an exportable memory object".into()
    }
}

fn open_mem_handle(d: &Driver, handle: &IpcHandle, flags: c_uint) -> Result<u64, IpcError> {
    if flags & !CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS != 0 {
        return Err(IpcError::NotAHandle);
    }
    let decoded = MemHandle::decode(&handle.reserved)?;
    let mut st = state();
    // Opened before: the same address, one more reference (cuIpcOpenMemHandle).
    if let Some((&address, entry)) =
        st.opened.iter_mut().find(|(_, (_, source, _))| *source == decoded.source)
    {
        entry.2 += 1;
        return Ok(address);
    }
    let fd = reach(decoded.source)?;
    let buffer = d.device().vk().import_memory(fd, &decoded.exported)?;
    let address = buffer.address();
    // In the allocation table like any device memory (copies, pointer queries), but
    // freed by cuIpcCloseMemHandle, not cuMemFree.
    st.opened.insert(address, (buffer, decoded.source, 1));
    Ok(address)
}

fn close_mem_handle(d: &Driver, address: u64) -> Result<(), CUresult> {
    let mut st = state();
    let Some(entry) = st.opened.get_mut(&address) else {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    };
    entry.2 -= 1;
    if entry.2 == 0 {
        // Work queued on the memory must finish before it is unmapped; the buffer's
        // pending uses hold it anyway, this keeps cuMemFree's ordering.
        d.device().synchronize().map_err(crate::code)?;
        st.opened.remove(&address);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcGetMemHandle(handle: *mut IpcHandle, dptr: u64) -> CUresult {
    entry(|| {
        let d = driver()?;
        let reserved = get_mem_handle(d, dptr).map_err(IpcError::code)?;
        // SAFETY: `handle` is null or writable (CUDA's contract).
        unsafe { out(handle, IpcHandle { reserved }) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcOpenMemHandle(
    dptr: *mut u64,
    handle: IpcHandle,
    flags: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        if dptr.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let address = open_mem_handle(d, &handle, flags).map_err(IpcError::code)?;
        // SAFETY: non-null and writable (CUDA's contract).
        unsafe { out(dptr, address) }
    })
}

/// `cuIpcOpenMemHandle_v2` (CUDA 11): the same arguments and meaning.
#[no_mangle]
pub unsafe extern "C" fn cuIpcOpenMemHandle_v2(
    dptr: *mut u64,
    handle: IpcHandle,
    flags: c_uint,
) -> CUresult {
    // SAFETY: forwarded under the same contract.
    unsafe { cuIpcOpenMemHandle(dptr, handle, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcCloseMemHandle(dptr: u64) -> CUresult {
    entry(|| close_mem_handle(driver()?, dptr))
}

// Events.

/// The two counters of an interprocess event, in memory every process sharing the event
/// maps.
#[repr(C)]
struct Counters {
    /// Records made (in any process).
    recorded: AtomicU64,
    /// The highest record whose stream has passed it.
    completed: AtomicU64,
}

/// One page of shared memory holding [`Counters`], and the memfd behind it.
pub(crate) struct SharedEvent {
    counters: NonNull<Counters>,
    /// Kept open while the event lives: importers reach the page through it.
    _fd: OwnedFd,
    source: RemoteFd,
}

// SAFETY: the mapping lives as long as the value and is only accessed through atomics.
unsafe impl Send for SharedEvent {}
// SAFETY: as above.
unsafe impl Sync for SharedEvent {}

const PAGE: usize = 4096;

impl SharedEvent {
    /// A new event page (zeroed: nothing recorded).
    fn create() -> Result<SharedEvent, IpcError> {
        let page = |e: rustix::io::Errno| IpcError::Page(e.into());
        let fd = rustix::fs::memfd_create("ptxvk-ipc-event", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(page)?;
        rustix::fs::ftruncate(&fd, PAGE as u64).map_err(page)?;
        let (fd, source) = local_fd(fd)?;
        Self::map(fd, source)
    }

    /// Maps the page of `fd` (this process's or another's, [`reach`]ed).
    fn map(fd: OwnedFd, source: RemoteFd) -> Result<SharedEvent, IpcError> {
        use rustix::mm::{mmap, MapFlags, ProtFlags};
        let size = rustix::fs::fstat(&fd).map_err(|e| IpcError::Page(e.into()))?.st_size;
        if size < PAGE as i64 {
            return Err(IpcError::NotAHandle);
        }
        // SAFETY: a new shared mapping of one page of the file, placed by the kernel
        // (nothing existing is replaced); the file is at least a page long.
        let ptr = unsafe {
            mmap(
                std::ptr::null_mut(),
                PAGE,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd.as_fd(),
                0,
            )
        }
        .map_err(|e| IpcError::Page(e.into()))?;
        let counters = NonNull::new(ptr.cast::<Counters>()).ok_or(IpcError::NotAHandle)?;
        Ok(SharedEvent { counters, _fd: fd, source })
    }

    fn counters(&self) -> &Counters {
        // SAFETY: the page is mapped while `self` lives, page-aligned (so aligned for
        // `Counters`), and only ever accessed through these atomics, here and in every
        // other process mapping it.
        unsafe { self.counters.as_ref() }
    }

    /// Whether every record made so far has completed.
    fn is_complete(&self) -> bool {
        self.complete_up_to(self.counters().recorded.load(Ordering::Acquire))
    }

    fn complete_up_to(&self, record: u64) -> bool {
        self.counters().completed.load(Ordering::Acquire) >= record
    }

    /// Waits until record `target` has completed, for at most `timeout`.
    fn wait_for(&self, target: u64, timeout: Duration) -> Result<(), CUresult> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(10);
        while !self.complete_up_to(target) {
            if start.elapsed() > timeout {
                return Err(CUresult::CUDA_ERROR_LAUNCH_TIMEOUT);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(1));
        }
        Ok(())
    }
}

impl Drop for SharedEvent {
    fn drop(&mut self) {
        // SAFETY: the page was mapped by `map` and nothing refers to it any more.
        let _ = unsafe { rustix::mm::munmap(self.counters.as_ptr().cast::<c_void>(), PAGE) };
    }
}

fn shared_event(handle: usize) -> Option<Arc<SharedEvent>> {
    state().events.get(&handle).cloned()
}

/// `cuEventCreate` with `flags`, after the event `handle` was made: an interprocess event
/// gets its shared page. CUDA requires `CU_EVENT_DISABLE_TIMING` with
/// `CU_EVENT_INTERPROCESS` (`CUevent_flags`).
pub(crate) fn event_created(handle: usize, flags: c_uint) -> Result<(), CUresult> {
    if flags & CU_EVENT_INTERPROCESS == 0 {
        return Ok(());
    }
    if flags & CU_EVENT_DISABLE_TIMING == 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let page = SharedEvent::create().map_err(IpcError::code)?;
    state().events.insert(handle, Arc::new(page));
    Ok(())
}

/// `cuEventDestroy` of `handle`.
pub(crate) fn event_destroyed(handle: usize) {
    state().events.remove(&handle);
}

/// After `cuEventRecord` of `handle` on `stream`: for an interprocess event, counts the
/// record and marks it complete when the stream passes it.
pub(crate) fn event_recorded(handle: usize, stream: &StreamRef) -> Result<(), CUresult> {
    let Some(event) = shared_event(handle) else { return Ok(()) };
    let record = event.counters().recorded.fetch_add(1, Ordering::AcqRel) + 1;
    stream
        .get()
        .launch_host_func(Box::new(move || {
            event.counters().completed.fetch_max(record, Ordering::AcqRel);
        }))
        .map_err(crate::vk_code)
}

/// `cuEventQuery` of an interprocess event: `None` for other events.
pub(crate) fn event_query(handle: usize) -> Option<Result<(), CUresult>> {
    let event = shared_event(handle)?;
    Some(if event.is_complete() { Ok(()) } else { Err(CUresult::CUDA_ERROR_NOT_READY) })
}

/// `cuEventSynchronize` of an interprocess event: `None` for other events.
pub(crate) fn event_synchronize(d: &Driver, handle: usize) -> Option<Result<(), CUresult>> {
    let event = shared_event(handle)?;
    let target = event.counters().recorded.load(Ordering::Acquire);
    Some(event.wait_for(target, d.device().vk().timeout()))
}

/// `cuStreamWaitEvent` on an interprocess event: the stream's later work waits (in a
/// host function) for the records made so far. `None` for other events.
pub(crate) fn stream_wait_event(
    d: &Driver,
    stream: &StreamRef,
    handle: usize,
) -> Option<Result<(), CUresult>> {
    let event = shared_event(handle)?;
    let target = event.counters().recorded.load(Ordering::Acquire);
    let timeout = d.device().vk().timeout();
    Some(
        stream
            .get()
            .launch_host_func(Box::new(move || {
                // A timeout lets the stream go on, as a lost record in the other process
                // would otherwise stall it forever; the waiter sees no error here.
                let _ = event.wait_for(target, timeout);
            }))
            .map_err(crate::vk_code),
    )
}

fn get_event_handle(handle: usize) -> Result<[u8; HANDLE_SIZE], IpcError> {
    let event = shared_event(handle).ok_or(IpcError::NotInterprocess)?;
    Ok(write_common(KIND_EVENT, event.source))
}

fn open_event_handle(d: &Driver, handle: &IpcHandle) -> Result<usize, IpcError> {
    let source = read_common(&handle.reserved, KIND_EVENT)?;
    let fd = reach(source)?;
    let page = SharedEvent::map(fd, source)?;
    // A local event stands behind the handle so every event call accepts it; the shared
    // counters decide its state.
    let local = d.device().create_event(false).map_err(|e| match e {
        ptxvk::Error::Runtime(e) => IpcError::Runtime(e),
        e => IpcError::NotExportable(e.to_string()),
    })?;
    let event_handle = d.events.insert(local);
    state().events.insert(event_handle, Arc::new(page));
    Ok(event_handle)
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcGetEventHandle(handle: *mut IpcHandle, event: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        if d.events.get(event).is_none() {
            return Err(CUresult::CUDA_ERROR_INVALID_HANDLE);
        }
        let reserved = get_event_handle(event).map_err(IpcError::code)?;
        // SAFETY: `handle` is null or writable (CUDA's contract).
        unsafe { out(handle, IpcHandle { reserved }) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuIpcOpenEventHandle(event: *mut usize, handle: IpcHandle) -> CUresult {
    entry(|| {
        let d = driver()?;
        if event.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let opened = open_event_handle(d, &handle).map_err(IpcError::code)?;
        // SAFETY: non-null and writable (CUDA's contract).
        unsafe { out(event, opened) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_handles_round_trip_and_refuse_this_process() {
        let remote = MemHandle {
            source: RemoteFd { pid: std::process::id() + 1, fd: 42, inode: 0x1234_5678_9abc },
            exported: ExportedMemory {
                allocation_size: 8192,
                memory_type_index: 3,
                size: 8000,
                device_uuid: *b"0123456789abcdef",
            },
        };
        assert_eq!(MemHandle::decode(&remote.encode()).ok(), Some(remote));
        let local =
            MemHandle { source: RemoteFd { pid: std::process::id(), ..remote.source }, ..remote };
        assert!(matches!(MemHandle::decode(&local.encode()), Err(IpcError::SameProcess)));
        assert!(matches!(MemHandle::decode(&[0; HANDLE_SIZE]), Err(IpcError::NotAHandle)));
        // An event handle is not a memory handle.
        let event = write_common(KIND_EVENT, remote.source);
        assert!(matches!(MemHandle::decode(&event), Err(IpcError::NotAHandle)));
    }

    #[test]
    fn event_pages_count_records() {
        let page = SharedEvent::create().expect("event page");
        assert!(page.is_complete());
        page.counters().recorded.fetch_add(1, Ordering::AcqRel);
        assert!(!page.is_complete());
        assert_eq!(
            page.wait_for(1, Duration::from_millis(5)),
            Err(CUresult::CUDA_ERROR_LAUNCH_TIMEOUT)
        );
        page.counters().completed.fetch_max(1, Ordering::AcqRel);
        assert!(page.is_complete());
        assert_eq!(page.wait_for(1, Duration::from_millis(5)), Ok(()));
    }
}
