//! Opening a device: selection, logical-device creation, the pipeline cache (memory and
//! disk), the per-device timeout, and orderly teardown.
//!
//! A [`Device`] is an `Arc` around [`DeviceShared`], which owns every device-level Vulkan
//! object. [`Buffer`](crate::Buffer)s and [`Program`](crate::Program)s hold the same `Arc`,
//! so the device outlives everything created from it. Teardown order (in
//! `DeviceShared::drop`): wait for outstanding GPU work, save the pipeline cache, destroy it,
//! drop the allocator (it frees its memory blocks through the device), destroy the command
//! pool, fence and query pool, the device, and finally the instance.

use std::fmt;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use gpu_allocator::{AllocationSizes, AllocatorDebugSettings};

use crate::adapter::Adapter;
use crate::conv;
use crate::error::Error;
use crate::event::Event;
use crate::instance::Instance;
use crate::objects::{AddressMap, Device, DeviceShared, Gpu, Grave, HostCallback, StreamCore};
use crate::stream;
use crate::types::DeviceInfo;
use crate::types::StreamKind;

/// Ids for [`DeviceShared::id`].
static NEXT_DEVICE_ID: AtomicU64 = AtomicU64::new(1);

/// Default for how long any wait for the GPU may take (`PTXVK_TIMEOUT_MS` overrides it).
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// Environment variable selecting the device (an index or a name substring).
pub const ENV_DEVICE: &str = "PTXVK_DEVICE";
/// Environment variable overriding [`DEFAULT_TIMEOUT_MS`].
pub const ENV_TIMEOUT_MS: &str = "PTXVK_TIMEOUT_MS";
/// Environment variable setting how long a wait for the GPU spins (yielding) before it
/// blocks, in microseconds ([`DEFAULT_SPIN_US`] by default; 0 blocks at once).
pub const ENV_SPIN_US: &str = "PTXVK_SPIN_US";
/// Default of [`ENV_SPIN_US`].
pub const DEFAULT_SPIN_US: u64 = 100;

/// Environment variable that, set to `1`, disables the on-disk pipeline cache.
pub const ENV_NO_DISK_CACHE: &str = "PTXVK_NO_DISK_CACHE";

/// Which physical device [`Device::open`] uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceSelector {
    /// The first discrete GPU, else integrated, else virtual, else CPU (lavapipe), among
    /// the devices ptxvk can use.
    #[default]
    Default,
    /// The device at this position in Vulkan's enumeration order.
    Index(usize),
    /// The first usable device whose name contains this string, ignoring case.
    Name(String),
}

impl DeviceSelector {
    /// From a user string (`--device`): all digits gives [`DeviceSelector::Index`], anything
    /// else [`DeviceSelector::Name`] (a case-insensitive substring). Surrounding whitespace
    /// is ignored; an empty string gives [`DeviceSelector::Default`].
    pub fn parse(s: &str) -> Self {
        let s = s.trim();
        if s.is_empty() {
            DeviceSelector::Default
        } else if s.bytes().all(|b| b.is_ascii_digit()) {
            // Too many digits for an index cannot match a device anyway; keep the text so
            // the error message shows it.
            s.parse().map_or_else(|_| DeviceSelector::Name(s.to_owned()), DeviceSelector::Index)
        } else {
            DeviceSelector::Name(s.to_owned())
        }
    }

    /// [`DeviceSelector::Default`] unless the environment variable `PTXVK_DEVICE` is set,
    /// in which case its value is [parsed](DeviceSelector::parse).
    pub fn from_env() -> Self {
        std::env::var(ENV_DEVICE).map_or(DeviceSelector::Default, |s| DeviceSelector::parse(&s))
    }
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSelector::Default => f.write_str("default"),
            DeviceSelector::Index(i) => write!(f, "{i}"),
            DeviceSelector::Name(n) => f.write_str(n),
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("index", &self.shared.info.index)
            .field("name", &self.shared.info.name)
            .finish_non_exhaustive()
    }
}

impl Device {
    /// Opens the device `selector` picks.
    ///
    /// [`DeviceSelector::Default`] takes the first discrete GPU, else integrated, else
    /// virtual, else CPU (lavapipe), skipping devices below Vulkan 1.3 or without
    /// `bufferDeviceAddress`; an explicitly selected device that lacks them is an
    /// [`Error::Unsuitable`] naming what it lacks.
    ///
    /// Reads `PTXVK_TIMEOUT_MS` (fence-wait timeout, default 60 s) and
    /// `PTXVK_NO_DISK_CACHE`.
    pub fn open(selector: &DeviceSelector) -> Result<Device, Error> {
        Device::open_masked(selector, "")
    }

    /// [`Device::open`], with the features named in `mask` (Vulkan names, commas
    /// between) masked too, as `PTXVK_MASK_FEATURES` masks them for every device: the
    /// device looks as if it lacked them, and they are not enabled.
    pub fn open_masked(selector: &DeviceSelector, mask: &str) -> Result<Device, Error> {
        let timeout_ms = timeout_from_env()?;
        let spin_us = spin_from_env()?;
        let instance = Instance::new()?;
        let mut adapters = instance.adapters()?;
        let candidates: Vec<(&DeviceInfo, Option<String>)> =
            adapters.iter().map(|a| (&a.info, a.unsuitable_reason())).collect();
        let index = select(&candidates, selector)?;
        let mut adapter = adapters.swap_remove(index);
        adapter.mask(mask)?;
        let shared = DeviceShared::new(instance, adapter, timeout_ms, spin_us)?;
        Ok(Device { shared: Arc::new(shared) })
    }

    /// What this device is and offers.
    pub fn info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// The largest buffer the device can make: `maxBufferSize` and
    /// `maxMemoryAllocationSize`, whichever is smaller (at least 1 GiB in Vulkan).
    pub fn max_buffer_bytes(&self) -> u64 {
        self.shared.max_buffer_size
    }

    /// A file for facts about this device and driver that ptxvk measures once (the
    /// result of a probe kernel), beside the pipeline cache and named like it with
    /// `.NAME` appended; `None` when the disk cache is off (`PTXVK_NO_DISK_CACHE`).
    pub fn cache_file(&self, name: &str) -> Option<PathBuf> {
        let path = self.shared.cache_path.as_ref()?;
        let mut file = path.file_name()?.to_os_string();
        file.push(".");
        file.push(name);
        Some(path.with_file_name(file))
    }

    /// How long a wait for the GPU may take before it fails with [`Error::Timeout`].
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.shared.timeout_ms())
    }

    /// Whether the device was lost ([`Error::DeviceLost`]).
    pub fn is_lost(&self) -> bool {
        self.shared.is_lost()
    }

    /// Makes the device behave as if the driver had reported `VK_ERROR_DEVICE_LOST`: every
    /// later call fails with [`Error::DeviceLost`]. For testing clients' handling of device
    /// loss, which real drivers cannot be made to produce on demand.
    pub fn simulate_device_loss(&self) {
        self.shared.note(Error::DeviceLost);
    }

    /// Changes the timeout of [`Device::timeout`] for every clone of this device (whole
    /// milliseconds, at least 1 ms).
    pub fn set_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX).max(1);
        self.shared.timeout_ms.store(ms, Ordering::Relaxed);
    }
}

/// Picks the adapter for `selector` among `(info, reason it is unusable)` pairs.
fn select(
    candidates: &[(&DeviceInfo, Option<String>)],
    selector: &DeviceSelector,
) -> Result<usize, Error> {
    if candidates.is_empty() {
        return Err(Error::NoDevice);
    }
    let not_found = || Error::DeviceNotFound {
        selector: selector.to_string(),
        available: candidates
            .iter()
            .map(|(info, _)| format!("{}: {}", info.index, info.name))
            .collect(),
    };
    let unsuitable = |i: usize| {
        let (info, reason) = &candidates[i];
        Error::Unsuitable { device: info.name.clone(), reason: reason.clone().unwrap_or_default() }
    };
    match selector {
        DeviceSelector::Default => candidates
            .iter()
            .enumerate()
            .filter(|(_, (_, reason))| reason.is_none())
            .min_by_key(|(i, (info, _))| (conv::default_rank(info.device_type), *i))
            .map(|(i, _)| i)
            .ok_or_else(|| Error::NoSuitableDevice {
                rejected: candidates
                    .iter()
                    .map(|(info, reason)| {
                        format!(
                            "{} ({}): {}",
                            info.name,
                            info.index,
                            reason.as_deref().unwrap_or("")
                        )
                    })
                    .collect(),
            }),
        DeviceSelector::Index(index) => {
            let i = candidates
                .iter()
                .position(|(info, _)| info.index == *index)
                .ok_or_else(not_found)?;
            match candidates[i].1 {
                None => Ok(i),
                Some(_) => Err(unsuitable(i)),
            }
        }
        DeviceSelector::Name(name) => {
            let needle = name.to_lowercase();
            let matches: Vec<usize> = candidates
                .iter()
                .enumerate()
                .filter(|(_, (info, _))| info.name.to_lowercase().contains(&needle))
                .map(|(i, _)| i)
                .collect();
            let first = *matches.first().ok_or_else(not_found)?;
            matches
                .iter()
                .copied()
                .find(|&i| candidates[i].1.is_none())
                .ok_or_else(|| unsuitable(first))
        }
    }
}

/// `PTXVK_SPIN_US`, or the default when it is unset or empty.
fn spin_from_env() -> Result<u64, Error> {
    match std::env::var(ENV_SPIN_US) {
        Err(_) => Ok(DEFAULT_SPIN_US),
        Ok(value) if value.trim().is_empty() => Ok(DEFAULT_SPIN_US),
        Ok(value) => value.trim().parse::<u64>().map_err(|_| Error::Env {
            var: ENV_SPIN_US,
            value,
            reason: "expected a whole number of microseconds".into(),
        }),
    }
}

/// `PTXVK_TIMEOUT_MS`, or the default when it is unset or empty.
fn timeout_from_env() -> Result<u64, Error> {
    match std::env::var(ENV_TIMEOUT_MS) {
        Err(_) => Ok(DEFAULT_TIMEOUT_MS),
        Ok(value) if value.trim().is_empty() => Ok(DEFAULT_TIMEOUT_MS),
        Ok(value) => match value.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(ms),
            _ => Err(Error::Env {
                var: ENV_TIMEOUT_MS,
                value,
                reason: "expected a positive whole number of milliseconds".into(),
            }),
        },
    }
}

impl Gpu {
    /// Destroys a dropped stream's pool and semaphore once the queue has moved past them.
    ///
    /// Every batch that used them has completed, but lavapipe's queue thread still touches
    /// a semaphore for a moment after the host observed its signal (destroying it at once
    /// crashed about one run in ten). An empty submission with a fence, made now, completes
    /// only after the queue thread is done with everything submitted before it; the objects
    /// are destroyed when a later call finds that fence signalled, or at teardown.
    pub(crate) fn bury(&self, pool: vk::CommandPool, semaphore: vk::Semaphore) {
        // SAFETY: the device is alive.
        let fence = unsafe { self.raw.create_fence(&vk::FenceCreateInfo::default(), None) };
        let Ok(fence) = fence else {
            // Without a fence the objects cannot be destroyed safely: leak them.
            return;
        };
        let submitted = {
            let queue = self.queue();
            // SAFETY: an empty submission with an unsignalled fence; the queue is
            // externally synchronised by its mutex.
            unsafe { self.raw.queue_submit(*queue, &[], fence) }
        };
        let mut graves = self.graveyard.lock().unwrap_or_else(PoisonError::into_inner);
        if submitted.is_err() {
            // SAFETY: the fence was never submitted.
            unsafe { self.raw.destroy_fence(fence, None) };
            return;
        }
        graves.push(Grave { fence, pool, semaphore });
        graves.retain(|grave| {
            // SAFETY: the fence is alive.
            let done = unsafe { self.raw.get_fence_status(grave.fence) }.unwrap_or(false);
            if done {
                // SAFETY: the fence signalled, so the queue has finished everything
                // submitted before it, which includes every use of the pool and semaphore.
                unsafe { self.destroy_grave(grave) };
            }
            !done
        });
    }

    /// # Safety
    /// Nothing may use the grave's objects any more.
    unsafe fn destroy_grave(&self, grave: &Grave) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            self.raw.destroy_command_pool(grave.pool, None);
            self.raw.destroy_semaphore(grave.semaphore, None);
            self.raw.destroy_fence(grave.fence, None);
        }
    }

    /// The queue, for the duration of one submission.
    pub(crate) fn queue(&self) -> MutexGuard<'_, vk::Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The allocator. A panic in another thread while it held the lock does not make the
    /// allocator's bookkeeping unusable, so poisoning is ignored.
    pub(crate) fn allocator(&self) -> MutexGuard<'_, Allocator> {
        self.allocator.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        if *self.leak.get_mut() {
            // A kernel is still running after the timeout. Destroying the device under it
            // is undefined behaviour; leaking the device, its memory and the instance is
            // the only safe choice.
            return;
        }
        // SAFETY: every object made from the device holds this structure (or the
        // `DeviceShared` that holds it), so all of them are destroyed, and no work is
        // pending (`leak` is false). The allocator's memory blocks go first, then the
        // device, then the instance; nothing is used afterwards.
        unsafe {
            // All work is complete; an idle device has also let go of its semaphores
            // (see `Gpu::bury`).
            let _ = self.raw.device_wait_idle();
            let graves =
                std::mem::take(self.graveyard.get_mut().unwrap_or_else(PoisonError::into_inner));
            for grave in &graves {
                self.destroy_grave(grave);
            }
            ManuallyDrop::drop(&mut self.allocator);
            self.raw.destroy_device(None);
            ManuallyDrop::drop(&mut self.instance);
        }
    }
}

impl DeviceShared {
    fn new(
        instance: Instance,
        adapter: Adapter,
        timeout_ms: u64,
        spin_us: u64,
    ) -> Result<DeviceShared, Error> {
        // `select` only returns adapters without an unsuitable reason, which have a queue.
        let family = adapter.queue_family.ok_or_else(|| Error::Unsuitable {
            device: adapter.info.name.clone(),
            reason: "it has no compute queue".into(),
        })?;

        let reservation = Self::reservation(&adapter)?;
        let mut extensions = Vec::new();
        if adapter.extensions.shader_clock {
            extensions.push(ash::khr::shader_clock::NAME.as_ptr());
        }
        if adapter.extensions.shader_atomic_float {
            extensions.push(ash::ext::shader_atomic_float::NAME.as_ptr());
        }
        if adapter.extensions.portability_subset {
            extensions.push(ash::khr::portability_subset::NAME.as_ptr());
        }
        if adapter.extensions.external_memory_host {
            extensions.push(ash::ext::external_memory_host::NAME.as_ptr());
        }
        if adapter.extensions.external_memory_fd {
            extensions.push(ash::khr::external_memory_fd::NAME.as_ptr());
        }

        let mut enable = adapter.features_to_enable();
        let mut features2 = vk::PhysicalDeviceFeatures2::default()
            .features(enable.core)
            .push_next(&mut enable.v11)
            .push_next(&mut enable.v12)
            .push_next(&mut enable.v13);
        if adapter.extensions.shader_clock {
            features2 = features2.push_next(&mut enable.clock);
        }
        if adapter.extensions.shader_atomic_float {
            features2 = features2.push_next(&mut enable.atomic_float);
        }
        let priorities = [1.0f32];
        let queue_infos = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family.index)
            .queue_priorities(&priorities)];
        let create_info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_infos)
            .enabled_extension_names(&extensions)
            .push_next(&mut features2);
        // SAFETY: `adapter.raw` belongs to `instance`; every feature enabled was reported
        // as supported by the device and every extension as available; the create info and
        // everything it points to outlive the call.
        let raw = unsafe { instance.raw().create_device(adapter.raw, &create_info, None) }
            .map_err(Error::vk("vkCreateDevice"))?;
        // SAFETY: the device was created with one queue in this family.
        let queue = unsafe { raw.get_device_queue(family.index, 0) };

        match Self::create_objects(&instance, &adapter, &raw) {
            Ok((pipeline_cache, allocator, cache_path)) => {
                let external_memory_host = adapter
                    .extensions
                    .external_memory_host
                    .then(|| ash::ext::external_memory_host::Device::new(instance.raw(), &raw));
                let external_memory_fd = adapter
                    .extensions
                    .external_memory_fd
                    .then(|| ash::khr::external_memory_fd::Device::new(instance.raw(), &raw));
                let gpu = Arc::new(Gpu {
                    raw: raw.clone(),
                    allocator: ManuallyDrop::new(Mutex::new(allocator)),
                    instance: ManuallyDrop::new(instance),
                    leak: AtomicBool::new(false),
                    queue: Mutex::new(queue),
                    graveyard: Mutex::new(Vec::new()),
                });
                // Dropping the core destroys its objects (it has no work yet), and
                // dropping `gpu` the device.
                let legacy = match stream::new_core(&gpu, family.index, StreamKind::Legacy) {
                    Ok(core) => core,
                    Err(e) => {
                        // SAFETY: the cache was just created and is unused.
                        unsafe { raw.destroy_pipeline_cache(pipeline_cache, None) };
                        return Err(e);
                    }
                };
                Ok(DeviceShared {
                    id: NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed),
                    external_memory_host,
                    reservation,
                    external_memory_fd,
                    device_uuid: adapter.device_uuid,
                    external_memory_fd_dedicated: adapter.extensions.external_memory_fd_dedicated,
                    memory_properties: adapter.memory_properties,
                    raw,
                    info: adapter.info,
                    max_buffer_size: adapter.max_buffer_size,
                    queue_family: family.index,
                    timestamp_valid_bits: family.timestamp_valid_bits,
                    unified_memory: adapter.unified_memory,
                    host_pointer_alignment: adapter.host_pointer_alignment,
                    pipeline_cache,
                    pipeline_cache_dirty: AtomicBool::new(false),
                    cache_path,
                    pipeline_cache_uuid: adapter.pipeline_cache_uuid,
                    timeout_ms: AtomicU64::new(timeout_ms),
                    spin_us,
                    lost: AtomicBool::new(false),
                    track_writes: AtomicBool::new(false),
                    gpu,
                    legacy,
                    blocking: Mutex::new(Vec::new()),
                    per_thread: Mutex::new(Vec::new()),
                    default_pool: Arc::default(),
                    addresses: AddressMap::default(),
                    timers: Mutex::new(Vec::new()),
                    callbacks: Mutex::new(None),
                })
            }
            Err(e) => {
                // SAFETY: `create_objects` destroyed everything it created before failing,
                // so the device has no child objects and no work.
                unsafe { raw.destroy_device(None) };
                Err(e)
            }
        }
    }

    /// The confinement reservation of a device whose kernels run in this process
    /// (`crate::reservation`): as large as its memory heap. Without
    /// `VK_EXT_external_memory_host` there is none, and the device says so on stderr,
    /// once: its unchecked kernels can reach any memory of the process.
    fn reservation(
        adapter: &Adapter,
    ) -> Result<Option<Arc<crate::reservation::Reservation>>, Error> {
        if !crate::reservation::wanted(adapter.info.device_type)? {
            return Ok(None);
        }
        if !adapter.extensions.external_memory_host || adapter.host_pointer_alignment == 0 {
            eprintln!(
                "ptxvk: warning: {} runs kernels inside this process but lacks \
                 VK_EXT_external_memory_host, so ptxvk cannot confine them to their memory; \
                 run untrusted kernels with PTXVK_CHECK=memcheck",
                adapter.info.name
            );
            return Ok(None);
        }
        let size = adapter.info.memory_bytes.max(1 << 30);
        let reservation =
            crate::reservation::Reservation::new(size, adapter.host_pointer_alignment)?;
        Ok(Some(Arc::new(reservation)))
    }

    /// Creates the device's child objects; on failure destroys the ones it created.
    fn create_objects(
        instance: &Instance,
        adapter: &Adapter,
        raw: &ash::Device,
    ) -> Result<(vk::PipelineCache, Allocator, Option<PathBuf>), Error> {
        let cache_path = disk_cache_path(adapter);
        let pipeline_cache = create_pipeline_cache(raw, adapter, cache_path.as_deref())?;
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: instance.raw().clone(),
            device: raw.clone(),
            physical_device: adapter.raw,
            debug_settings: AllocatorDebugSettings::default(),
            buffer_device_address: true,
            allocation_sizes: AllocationSizes::default(),
        });
        match allocator {
            Ok(allocator) => Ok((pipeline_cache, allocator, cache_path)),
            Err(e) => {
                // SAFETY: the cache was just created and is unused.
                unsafe { raw.destroy_pipeline_cache(pipeline_cache, None) };
                Err(e.into())
            }
        }
    }

    pub(crate) fn timeout_ms(&self) -> u64 {
        self.timeout_ms.load(Ordering::Relaxed)
    }

    /// The allocator (see [`Gpu::allocator`]).
    pub(crate) fn allocator(&self) -> MutexGuard<'_, Allocator> {
        self.gpu.allocator()
    }

    /// [`Error::DeviceLost`] once the device is lost.
    pub(crate) fn check_alive(&self) -> Result<(), Error> {
        if self.is_lost() {
            Err(Error::DeviceLost)
        } else {
            Ok(())
        }
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Passes `error` through, remembering a device loss for every later call.
    pub(crate) fn note(&self, error: Error) -> Error {
        if matches!(error, Error::DeviceLost) {
            self.lost.store(true, Ordering::Release);
        }
        error
    }

    /// Enters a blocking stream in the legacy stream's registry.
    pub(crate) fn register_stream(&self, core: &Arc<StreamCore>) {
        let mut list = self.blocking.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(core));
    }

    /// Removes a stream from the registry (its handle is being dropped).
    pub(crate) fn forget_stream(&self, core: &Arc<StreamCore>) {
        let mut list = self.blocking.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), Arc::as_ptr(core)));
    }

    /// Every live blocking stream, per-thread default streams included.
    pub(crate) fn blocking_streams(&self) -> Vec<Arc<StreamCore>> {
        let mut cores: Vec<Arc<StreamCore>> = self
            .blocking
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        let per_thread = self.per_thread.lock().unwrap_or_else(PoisonError::into_inner);
        cores.extend(per_thread.iter().map(|(_, core)| Arc::clone(core)));
        cores
    }

    /// Every stream of the device: the legacy stream first.
    pub(crate) fn all_streams(&self) -> Vec<Arc<StreamCore>> {
        let mut cores = vec![Arc::clone(&self.legacy)];
        cores.extend(self.blocking_streams());
        cores
    }

    /// The calling thread's default stream, created on first use.
    pub(crate) fn per_thread_core(&self) -> Result<Arc<StreamCore>, Error> {
        self.check_alive()?;
        let me = std::thread::current().id();
        let mut list = self.per_thread.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, core)) = list.iter().find(|(id, _)| *id == me) {
            return Ok(Arc::clone(core));
        }
        let core = stream::new_core(&self.gpu, self.queue_family, StreamKind::Blocking)?;
        list.push((me, Arc::clone(&core)));
        Ok(core)
    }

    /// Two timing events for a timed launch, reused when possible.
    pub(crate) fn take_timers(self: &Arc<Self>) -> Result<(Event, Event), Error> {
        let device = Device { shared: Arc::clone(self) };
        let mut pool = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut take = || match pool.pop() {
            Some(inner) => Ok(Event { shared: Arc::clone(self), inner }),
            None => device.create_event(true),
        };
        Ok((take()?, take()?))
    }

    /// Returns the events of [`DeviceShared::take_timers`].
    pub(crate) fn give_back_timers(&self, (start, end): (Event, Event)) {
        let mut pool = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
        pool.extend([start.inner, end.inner]);
    }

    /// Hands a host function to the device's callback thread: it runs `f` once `core`'s
    /// timeline reaches `after`, then signals `signal` on it from the host.
    pub(crate) fn run_host_callback(
        self: &Arc<Self>,
        core: Arc<StreamCore>,
        after: u64,
        signal: u64,
        f: Box<dyn FnOnce() + Send>,
    ) -> Result<(), Error> {
        let job = HostCallback { shared: Arc::clone(self), core, after, signal, f };
        let mut inbox = self.callbacks.lock().unwrap_or_else(PoisonError::into_inner);
        let job = match inbox.as_ref() {
            Some(tx) => match tx.send(job) {
                Ok(()) => return Ok(()),
                // The thread has ended (it never does while the device lives): restart it.
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let (tx, rx) = mpsc::channel::<HostCallback>();
        std::thread::Builder::new()
            .name("ptxvk host callbacks".into())
            .spawn(move || {
                for job in rx {
                    job.run();
                }
            })
            .map_err(|e| {
                Error::InvalidUse(format!("cannot start the host-callback thread: {e}"))
            })?;
        let _ = tx.send(job);
        *inbox = Some(tx);
        Ok(())
    }

    /// Writes the pipeline cache to disk if it changed. IO errors are ignored: the disk
    /// cache is an optimisation only.
    fn save_pipeline_cache(&self) {
        let Some(path) = &self.cache_path else { return };
        if !self.pipeline_cache_dirty.load(Ordering::Relaxed) {
            return;
        }
        // Another process (or Device) may have saved pipelines since this one started:
        // merge them in so the file keeps both.
        let on_disk = read_cache_file(path, &self.info, &self.pipeline_cache_uuid);
        if !on_disk.is_empty() {
            let info = vk::PipelineCacheCreateInfo::default().initial_data(&on_disk);
            // SAFETY: the device is alive; the data starts with a header for this device.
            if let Ok(other) = unsafe { self.raw.create_pipeline_cache(&info, None) } {
                // SAFETY: both caches are alive, distinct, and no other thread can use
                // `self.pipeline_cache` (this runs in `drop`); `other` is destroyed once.
                unsafe {
                    let _ = self.raw.merge_pipeline_caches(self.pipeline_cache, &[other]);
                    self.raw.destroy_pipeline_cache(other, None);
                }
            }
        }
        // SAFETY: the cache is alive; the call only reads it.
        let Ok(data) = (unsafe { self.raw.get_pipeline_cache_data(self.pipeline_cache) }) else {
            return;
        };
        let _ = write_atomically(path, &data);
    }
}

impl HostCallback {
    /// Waits for the stream, runs the function, and releases the stream's later work.
    fn run(self) {
        let HostCallback { shared, core, after, signal, f } = self;
        loop {
            match core.wait_for(&shared, after) {
                Ok(()) => break,
                // Slow work is not an error here: keep waiting.
                Err(Error::Timeout { .. }) => continue,
                // A lost device runs nothing; waiters see the loss themselves.
                Err(_) => return,
            }
        }
        // A panicking callback must not stall the stream forever: its later work runs.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let info = vk::SemaphoreSignalInfo::default().semaphore(core.timeline).value(signal);
        // SAFETY: the semaphore is alive (`core` is held); `signal` is greater than the
        // timeline's current value (`after` was reached and nothing else signals between
        // `after` and `signal`) and smaller than any pending signal of later batches.
        if let Err(r) = unsafe { shared.raw.signal_semaphore(&info) } {
            shared.note(Error::from_vk("vkSignalSemaphore", r));
        }
    }
}

impl Drop for DeviceShared {
    fn drop(&mut self) {
        // Every user stream, buffer, program and event holds an `Arc` to this structure,
        // so only the default streams can still have work.
        let mut idle = stream::drain(self, &self.legacy);
        let per_thread =
            std::mem::take(self.per_thread.get_mut().unwrap_or_else(PoisonError::into_inner));
        for (_, core) in &per_thread {
            idle &= stream::drain(self, core);
        }
        if !idle {
            self.gpu.leak.store(true, Ordering::Release);
            return;
        }
        self.save_pipeline_cache();
        self.default_pool.close(&self.gpu);
        // SAFETY: no work is pending (drained above) and every pipeline was destroyed with
        // its program (each holds an `Arc` to this structure). The device itself is
        // destroyed by `Gpu::drop` once the default streams (fields dropped after this)
        // are gone.
        unsafe { self.raw.destroy_pipeline_cache(self.pipeline_cache, None) };
    }
}

/// The disk-cache file for `adapter`, or `None` when disabled (`PTXVK_NO_DISK_CACHE`) or
/// when no cache directory is known.
fn disk_cache_path(adapter: &Adapter) -> Option<PathBuf> {
    if std::env::var(ENV_NO_DISK_CACHE).is_ok_and(|v| !matches!(v.trim(), "" | "0")) {
        return None;
    }
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache")))?;
    let name = conv::cache_file_name(
        adapter.info.vendor_id,
        adapter.info.device_id,
        adapter.driver_version,
        &adapter.pipeline_cache_uuid,
    );
    Some(base.join("ptxvk").join(name))
}

/// Creates the device's pipeline cache, seeded from `path` when that file holds a cache
/// for exactly this device and driver.
fn create_pipeline_cache(
    raw: &ash::Device,
    adapter: &Adapter,
    path: Option<&Path>,
) -> Result<vk::PipelineCache, Error> {
    let initial = path
        .map(|p| read_cache_file(p, &adapter.info, &adapter.pipeline_cache_uuid))
        .unwrap_or_default();
    let create = |data: &[u8]| {
        let info = vk::PipelineCacheCreateInfo::default().initial_data(data);
        // SAFETY: the device is alive; `data` is empty or starts with a header that matches
        // this device, which is what vkCreatePipelineCache requires of initial data.
        unsafe { raw.create_pipeline_cache(&info, None) }
    };
    match create(&initial) {
        Ok(cache) => Ok(cache),
        // A driver that rejects its own old data: start empty.
        Err(_) if !initial.is_empty() => create(&[]).map_err(Error::vk("vkCreatePipelineCache")),
        Err(result) => Err(Error::Vk { call: "vkCreatePipelineCache", result }),
    }
}

/// The pipeline-cache data in `path` if it was written for exactly this device and driver
/// build, else nothing.
fn read_cache_file(path: &Path, info: &DeviceInfo, uuid: &[u8; vk::UUID_SIZE]) -> Vec<u8> {
    std::fs::read(path)
        .ok()
        .filter(|data| conv::cache_header_matches(data, info.vendor_id, info.device_id, uuid))
        .unwrap_or_default()
}

/// Writes `data` to `path` through a temporary file and a rename, so a concurrent reader
/// never sees a half-written cache.
fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{DeviceType, Features, Limits};

    fn info(index: usize, name: &str, device_type: DeviceType) -> DeviceInfo {
        DeviceInfo {
            index,
            name: name.into(),
            device_type,
            api_version: (1, 3, 0),
            driver_name: String::new(),
            driver_info: String::new(),
            vendor_id: 0,
            device_id: 0,
            subgroup_size: 32,
            required_subgroup_sizes: None,
            timestamp_period_ns: 1.0,
            timestamps: true,
            memory_bytes: 1 << 30,
            limits: Limits {
                max_workgroup_count: [65535; 3],
                max_workgroup_size: [1024, 1024, 64],
                max_workgroup_invocations: 1024,
                max_shared_memory_bytes: 49152,
                max_push_constants_size: 128,
            },
            features: Features::default(),
            resident_workgroups: 1,
        }
    }

    #[test]
    fn parse_selector() {
        assert_eq!(DeviceSelector::parse("0"), DeviceSelector::Index(0));
        assert_eq!(DeviceSelector::parse(" 12 "), DeviceSelector::Index(12));
        assert_eq!(DeviceSelector::parse("llvmpipe"), DeviceSelector::Name("llvmpipe".into()));
        assert_eq!(DeviceSelector::parse("RTX 4090"), DeviceSelector::Name("RTX 4090".into()));
        assert_eq!(DeviceSelector::parse("1a"), DeviceSelector::Name("1a".into()));
        assert_eq!(DeviceSelector::parse(""), DeviceSelector::Default);
        let huge = "99999999999999999999999999";
        assert_eq!(DeviceSelector::parse(huge), DeviceSelector::Name(huge.into()));
    }

    #[test]
    fn default_prefers_discrete_then_integrated_then_cpu() {
        let cpu = info(0, "llvmpipe", DeviceType::Cpu);
        let igpu = info(1, "Intel UHD", DeviceType::Integrated);
        let dgpu = info(2, "Radeon", DeviceType::Discrete);
        let all = [(&cpu, None), (&igpu, None), (&dgpu, None)];
        assert_eq!(select(&all, &DeviceSelector::Default).ok(), Some(2));
        let no_discrete = [(&cpu, None), (&igpu, None), (&dgpu, Some("old".to_owned()))];
        assert_eq!(select(&no_discrete, &DeviceSelector::Default).ok(), Some(1));
        let none = [(&cpu, Some("too old".to_owned()))];
        let err = select(&none, &DeviceSelector::Default).expect_err("must be rejected");
        assert!(matches!(err, Error::NoSuitableDevice { .. }), "{err}");
        assert!(err.to_string().contains("too old"), "{err}");
        assert!(matches!(select(&[], &DeviceSelector::Default), Err(Error::NoDevice)));
    }

    #[test]
    fn explicit_selection() {
        let cpu = info(0, "llvmpipe (LLVM 15)", DeviceType::Cpu);
        let old = info(1, "Old GPU", DeviceType::Discrete);
        let list = [(&cpu, None), (&old, Some("it supports Vulkan 1.1.0".to_owned()))];
        assert_eq!(select(&list, &DeviceSelector::Index(0)).ok(), Some(0));
        assert_eq!(select(&list, &DeviceSelector::Name("LLVMPIPE".into())).ok(), Some(0));
        let err = select(&list, &DeviceSelector::Index(1)).expect_err("must be rejected");
        assert!(matches!(&err, Error::Unsuitable { device, .. } if device == "Old GPU"), "{err}");
        assert!(err.to_string().contains("Vulkan 1.1.0"), "{err}");
        let err = select(&list, &DeviceSelector::Index(7)).expect_err("must be rejected");
        match err {
            Error::DeviceNotFound { selector, available } => {
                assert_eq!(selector, "7");
                assert_eq!(available, ["0: llvmpipe (LLVM 15)", "1: Old GPU"]);
            }
            other => panic!("unexpected {other}"),
        }
        let err =
            select(&list, &DeviceSelector::Name("nvidia".into())).expect_err("must be rejected");
        assert!(matches!(err, Error::DeviceNotFound { .. }), "{err}");
    }
}
