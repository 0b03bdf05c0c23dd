//! The driver's global state: the device, opened by `cuInit`, the handle tables (of the
//! objects of `objects.rs`), the calling thread's context stack with the contexts' sticky
//! errors, and the lookups every call makes (a stream handle, a device address). It
//! stands below every file of API calls and imports none of them.
//!
//! # Device loss
//!
//! Once the Vulkan device is lost (`VK_ERROR_DEVICE_LOST`, or the runtime's simulated
//! loss, [`ptxvk_simulate_device_loss`]), every call that needs the device returns
//! `CUDA_ERROR_DEVICE_UNAVAILABLE` at once instead of waiting for it ([`driver`]).
//! `cuDevicePrimaryCtxReset` then opens the device again ([`Driver::reopen`]): every
//! object of the lost one (allocations, modules, streams, events, graphs, textures) is
//! forgotten, as a reset context's are in CUDA, and their handles become invalid ones.
//! Device queries and context management work throughout.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError, RwLock};

use cudarc::driver::sys::CUresult;
use ptxvk::vk::Buffer;

use crate::handles::Table;
use crate::objects::StreamRef;
use crate::vk_code;

/// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`: the legacy and the per-thread default
/// streams named explicitly (cuda.h).
pub(crate) const CU_STREAM_LEGACY: usize = 1;
pub(crate) const CU_STREAM_PER_THREAD: usize = 2;

/// One allocation made through the API, by its device address.
#[derive(Debug)]
pub(crate) struct Allocation {
    pub(crate) buffer: ptxvk::vk::Buffer,
    /// Made by `cuMemAllocManaged`.
    pub(crate) managed: bool,
}

/// Everything the driver owns.
pub(crate) struct Driver {
    /// The device; replaced by a newly opened one when a lost one is reset.
    device: RwLock<ptxvk::Device>,
    pub(crate) contexts: Table<crate::objects::Context>,
    pub(crate) primary: Mutex<crate::objects::Primary>,
    pub(crate) modules: Table<crate::objects::LoadedModule>,
    pub(crate) functions: Table<crate::objects::Function>,
    pub(crate) streams: Table<crate::objects::StreamEntry>,
    pub(crate) events: Table<ptxvk::Event>,
    pub(crate) links: Table<Mutex<crate::objects::Link>>,
    pub(crate) pools: Table<ptxvk::vk::MemPool>,
    pub(crate) arrays: Table<crate::objects::Array>,
    /// Graphs and executable graphs (`crate::graph`).
    pub(crate) graphs: Table<crate::objects::Graph>,
    pub(crate) graph_execs: Table<crate::objects::Exec>,
    /// Graph nodes: the handle of the graph each belongs to.
    pub(crate) graph_nodes: Table<usize>,
    /// Events recorded on capturing streams, by event handle (`crate::graph`).
    pub(crate) captured_events: Mutex<BTreeMap<usize, crate::objects::CapturedEvent>>,
    pub(crate) user_objects: Table<crate::objects::UserObject>,
    pub(crate) mipmapped: Table<crate::objects::Mipmapped>,
    /// Texture and surface references (`cuModuleGetTexRef`).
    pub(crate) references: Table<crate::objects::Reference>,
    /// Texture and surface objects by handle (their descriptor's device address).
    pub(crate) texture_objects: Mutex<BTreeMap<u64, ptxvk::TextureObject>>,
    /// Device, managed and pool allocations by device address.
    pub(crate) allocations: Mutex<BTreeMap<u64, Allocation>>,
    /// Pinned (`cuMemHostAlloc`) and registered host memory by host address.
    pub(crate) host: Mutex<BTreeMap<usize, ptxvk::vk::Buffer>>,
    /// The default pool's handle (`cuDeviceGetDefaultMemPool`).
    pub(crate) default_pool: usize,
    /// The process that called `cuInit`. A child forked after it shares none of the
    /// Vulkan device, so every call there fails, as CUDA's do (CUDA C++ Programming
    /// Guide, "CUDA is not fork-safe"): with CUDA_ERROR_NOT_INITIALIZED, which is how
    /// numba-cuda detects the fork.
    pid: u32,
}

static DRIVER: OnceLock<Result<Driver, CUresult>> = OnceLock::new();

/// How long a wait for the GPU may take in the driver library by default.
const DRIVER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Opens the device on the first call (`cuInit`).
pub(crate) fn init() -> Result<&'static Driver, CUresult> {
    DRIVER
        .get_or_init(|| {
            let device = open("cuInit")?;
            let pools = Table::default();
            let default_pool = pools.insert(device.vk().default_pool());
            Ok(Driver {
                device: RwLock::new(device),
                contexts: Table::default(),
                primary: Mutex::default(),
                modules: Table::default(),
                functions: Table::default(),
                streams: Table::default(),
                events: Table::default(),
                links: Table::default(),
                pools,
                arrays: Table::default(),
                graphs: Table::default(),
                graph_execs: Table::default(),
                graph_nodes: Table::default(),
                captured_events: Mutex::default(),
                user_objects: Table::default(),
                mipmapped: Table::default(),
                references: Table::default(),
                texture_objects: Mutex::default(),
                allocations: Mutex::default(),
                host: Mutex::default(),
                default_pool,
                pid: std::process::id(),
            })
        })
        .as_ref()
        .map_err(|e| *e)
        .and_then(same_process)
}

/// The default Vulkan device, opened for the library (by `call`).
fn open(call: &str) -> Result<ptxvk::Device, CUresult> {
    let device = ptxvk::Device::default_device().map_err(|e| {
        eprintln!("ptxvk libcuda: {call} found no usable Vulkan device: {e}");
        CUresult::CUDA_ERROR_NO_DEVICE
    })?;
    // CUDA kernels have no run-time limit (KERNEL_EXEC_TIMEOUT reports 0), so the
    // library waits far longer than the runtime's default minute: a day, unless
    // PTXVK_TIMEOUT_MS says otherwise.
    if std::env::var_os(ptxvk::vk::ENV_TIMEOUT_MS).is_none() {
        device.vk().set_timeout(DRIVER_TIMEOUT);
    }
    Ok(device)
}

/// `d`, unless this is a child forked after `cuInit`.
fn same_process(d: &'static Driver) -> Result<&'static Driver, CUresult> {
    if d.pid == std::process::id() {
        Ok(d)
    } else {
        Err(CUresult::CUDA_ERROR_NOT_INITIALIZED)
    }
}

/// The driver, for a call that needs a usable context: `CUDA_ERROR_NOT_INITIALIZED`
/// before `cuInit`, `CUDA_ERROR_DEVICE_UNAVAILABLE` once the device is lost (*Device
/// loss* above), and the sticky error of the calling thread's current context where
/// a kernel faulted in it (`crate::device`, *Sticky errors*).
pub(crate) fn driver() -> Result<&'static Driver, CUresult> {
    let d = driver_in_any_state()?;
    if d.device_lost() {
        return Err(CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE);
    }
    match sticky_error(d) {
        Some(error) => Err(error),
        None => Ok(d),
    }
}

/// The driver, for a call that works whatever the state of the current context (device
/// queries, context management), or `CUDA_ERROR_NOT_INITIALIZED` before `cuInit`.
pub(crate) fn driver_in_any_state() -> Result<&'static Driver, CUresult> {
    match DRIVER.get() {
        Some(Ok(d)) => same_process(d),
        Some(Err(e)) => Err(*e),
        None => Err(CUresult::CUDA_ERROR_NOT_INITIALIZED),
    }
}

thread_local! {
    /// The calling thread's context stack; the last is current.
    pub(crate) static CURRENT: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Set once any context has held a sticky error: until then no call looks one up.
static ANY_STICKY: AtomicBool = AtomicBool::new(false);

/// The sticky error of the calling thread's current context, if it has one.
pub(crate) fn sticky_error(d: &Driver) -> Option<CUresult> {
    if !ANY_STICKY.load(Ordering::Acquire) {
        return None;
    }
    let handle = CURRENT.with(|c| c.borrow().last().copied())?;
    let context = d.contexts.get(handle)?;
    let error = *context.sticky();
    error
}

/// Makes `error`, a kernel's fault just reported, the sticky error of the calling
/// thread's current context, or of the primary context when none is current.
pub(crate) fn make_sticky(error: CUresult) {
    let Ok(d) = driver_in_any_state() else { return };
    let current = CURRENT.with(|c| c.borrow().last().copied());
    let handle =
        current.or_else(|| d.primary.lock().unwrap_or_else(PoisonError::into_inner).handle);
    if let Some(context) = handle.and_then(|h| d.contexts.get(h)) {
        ANY_STICKY.store(true, Ordering::Release);
        context.sticky().get_or_insert(error);
    }
}

/// The stream `handle` names; `per_thread` makes 0 the thread's own stream.
pub(crate) fn stream_of(
    d: &Driver,
    handle: usize,
    per_thread: bool,
) -> Result<StreamRef, CUresult> {
    let device = d.device();
    let vk = device.vk();
    match handle {
        0 if per_thread => vk.per_thread_stream().map(StreamRef::Default).map_err(vk_code),
        0 | CU_STREAM_LEGACY => Ok(StreamRef::Default(vk.default_stream())),
        CU_STREAM_PER_THREAD => vk.per_thread_stream().map(StreamRef::Default).map_err(vk_code),
        h => d.streams.get(h).map(StreamRef::Created).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE),
    }
}

/// The allocation holding device address `ptr` and the offset into it; any live
/// allocation counts (module globals too). Unknown addresses are
/// `CUDA_ERROR_INVALID_VALUE`.
pub(crate) fn resolve(d: &Driver, ptr: u64) -> Result<(Buffer, u64), CUresult> {
    d.device()
        .vk()
        .resolve(ptr)
        .map(|r| (r.buffer, r.offset))
        .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
}

impl Driver {
    /// The device (a handle: a clone shares it).
    pub(crate) fn device(&self) -> ptxvk::Device {
        self.device.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Whether the device is lost (*Device loss* above).
    pub(crate) fn device_lost(&self) -> bool {
        self.device.read().unwrap_or_else(PoisonError::into_inner).vk().is_lost()
    }

    /// Opens the device again after it was lost and forgets every object of the lost
    /// one (`cuDevicePrimaryCtxReset`); the default pool keeps its handle.
    pub(crate) fn reopen(&self) -> Result<(), CUresult> {
        let device = open("cuDevicePrimaryCtxReset")?;
        self.pools.replace(self.default_pool, device.vk().default_pool());
        let lost = std::mem::replace(
            &mut *self.device.write().unwrap_or_else(PoisonError::into_inner),
            device,
        );
        self.pools.retain(|h| h == self.default_pool);
        self.modules.clear();
        self.functions.clear();
        self.streams.clear();
        self.events.clear();
        self.links.clear();
        self.arrays.clear();
        self.graphs.clear();
        self.graph_execs.clear();
        self.graph_nodes.clear();
        self.user_objects.clear();
        self.mipmapped.clear();
        self.references.clear();
        self.captured_events.lock().unwrap_or_else(PoisonError::into_inner).clear();
        self.texture_objects().clear();
        self.allocations().clear();
        self.host().clear();
        drop(lost);
        Ok(())
    }

    /// The device memory the driver reports (`cuDeviceTotalMem`, `cuMemGetInfo`): the
    /// device's heap, but no more than its largest buffer. Lavapipe's heap is the host's
    /// memory (Mesa 25: 24 GiB here) while one buffer holds at most 2 GiB; clients size
    /// single allocations by the total (numba's managed-memory tests allocate a tenth of
    /// it, memory pools a share), and those must succeed. Several allocations may
    /// together exceed the figure.
    pub(crate) fn memory_bytes(&self) -> u64 {
        let device = self.device();
        let info = device.info();
        info.memory_bytes.min(device.vk().max_buffer_bytes())
    }

    pub(crate) fn allocations(&self) -> MutexGuard<'_, BTreeMap<u64, Allocation>> {
        self.allocations.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn texture_objects(&self) -> MutexGuard<'_, BTreeMap<u64, ptxvk::TextureObject>> {
        self.texture_objects.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn host(&self) -> MutexGuard<'_, BTreeMap<usize, ptxvk::vk::Buffer>> {
        self.host.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Not CUDA's: makes the device behave as if the Vulkan driver had reported it lost, for
/// testing clients' handling of device loss (*Device loss* above). Returns 0, or
/// `CUDA_ERROR_NOT_INITIALIZED` before `cuInit`.
#[no_mangle]
pub extern "C" fn ptxvk_simulate_device_loss() -> CUresult {
    match driver_in_any_state() {
        Ok(d) => {
            d.device().vk().simulate_device_loss();
            CUresult::CUDA_SUCCESS
        }
        Err(e) => e,
    }
}
