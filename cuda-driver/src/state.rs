//! The driver's global state: the device, opened by `cuInit`, and the handle tables.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use cudarc::driver::sys::CUresult;

use crate::handles::Table;

/// One allocation made through the API, by its device address.
#[derive(Debug)]
pub(crate) struct Allocation {
    pub(crate) buffer: ptxvk::vk::Buffer,
    /// Made by `cuMemAllocManaged`.
    pub(crate) managed: bool,
}

/// Everything the driver owns.
pub(crate) struct Driver {
    pub(crate) device: ptxvk::Device,
    pub(crate) contexts: Table<crate::device::Context>,
    pub(crate) primary: Mutex<crate::device::Primary>,
    pub(crate) modules: Table<crate::module::LoadedModule>,
    pub(crate) functions: Table<crate::module::Function>,
    pub(crate) streams: Table<crate::stream::StreamEntry>,
    pub(crate) events: Table<ptxvk::Event>,
    pub(crate) links: Table<Mutex<crate::module::Link>>,
    pub(crate) pools: Table<ptxvk::vk::MemPool>,
    pub(crate) arrays: Table<crate::texture::Array>,
    /// Graphs and executable graphs (`crate::graph`).
    pub(crate) graphs: Table<crate::graph::Graph>,
    pub(crate) graph_execs: Table<crate::graph::Exec>,
    /// Graph nodes: the handle of the graph each belongs to.
    pub(crate) graph_nodes: Table<usize>,
    /// Events recorded on capturing streams, by event handle (`crate::graph`).
    pub(crate) captured_events: Mutex<BTreeMap<usize, crate::graph::CapturedEvent>>,
    pub(crate) user_objects: Table<crate::graph::UserObject>,
    pub(crate) mipmapped: Table<crate::texture::Mipmapped>,
    /// Texture and surface references (`cuModuleGetTexRef`).
    pub(crate) references: Table<crate::texture::Reference>,
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
            let device = ptxvk::Device::default_device().map_err(|e| {
                eprintln!("ptxvk libcuda: cuInit found no usable Vulkan device: {e}");
                CUresult::CUDA_ERROR_NO_DEVICE
            })?;
            // CUDA kernels have no run-time limit (KERNEL_EXEC_TIMEOUT reports 0), so the
            // library waits far longer than the runtime's default minute: a day, unless
            // PTXVK_TIMEOUT_MS says otherwise.
            if std::env::var_os(ptxvk::vk::ENV_TIMEOUT_MS).is_none() {
                device.vk().set_timeout(DRIVER_TIMEOUT);
            }
            let pools = Table::default();
            let default_pool = pools.insert(device.vk().default_pool());
            Ok(Driver {
                device,
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

/// `d`, unless this is a child forked after `cuInit`.
fn same_process(d: &'static Driver) -> Result<&'static Driver, CUresult> {
    if d.pid == std::process::id() {
        Ok(d)
    } else {
        Err(CUresult::CUDA_ERROR_NOT_INITIALIZED)
    }
}

/// The driver, for a call that needs a usable context: `CUDA_ERROR_NOT_INITIALIZED`
/// before `cuInit`, and the sticky error of the calling thread's current context where
/// a kernel faulted in it (`crate::device`, *Sticky errors*).
pub(crate) fn driver() -> Result<&'static Driver, CUresult> {
    let d = driver_in_any_state()?;
    match crate::device::sticky_error(d) {
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

impl Driver {
    /// The device memory the driver reports (`cuDeviceTotalMem`, `cuMemGetInfo`): the
    /// device's heap, but no more than its largest buffer. Lavapipe's heap is the host's
    /// memory (Mesa 25: 24 GiB here) while one buffer holds at most 2 GiB; clients size
    /// single allocations by the total (numba's managed-memory tests allocate a tenth of
    /// it, memory pools a share), and those must succeed. Several allocations may
    /// together exceed the figure.
    pub(crate) fn memory_bytes(&self) -> u64 {
        let info = self.device.info();
        info.memory_bytes.min(self.device.vk().max_buffer_bytes())
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
