//! Streams: in-order queues of launches, copies, memsets, event records, waits on other
//! streams' events and host callbacks. Enqueueing returns at once.
//!
//! # Model
//!
//! Each stream owns a command pool, a timeline semaphore and a ring of host-visible memory
//! for parameter blocks and staged uploads (the *arena*). Operations are recorded into the
//! stream's open *batch* (one command buffer); a batch is submitted when the GPU has
//! finished the stream's earlier batches (so an idle device starts work at once), when it
//! holds [`MAX_BATCH_OPS`] operations, or when anything waits for the stream. Each batch
//! signals the next value of the stream's timeline; it waits for the stream's previous
//! value (in-order execution), for the values of other streams' events it was told to wait
//! for, and for the value a preceding host callback signals from the host.
//!
//! Consecutive operations inside a batch are separated by a full compute/transfer memory
//! barrier, so each sees the writes of the ones before it. Every batch ends with a barrier
//! that makes its writes visible to the host.
//!
//! A batch holds a handle to everything its commands use (buffers, programs, arena chunks,
//! events, other streams' semaphores) until the timeline passes its value; the stream
//! *reclaims* completed batches (dropping those handles and running their completion
//! hooks) whenever it is used.
//!
//! # Locks
//!
//! Each stream has its own mutex; the only device-wide lock on the enqueue path is the
//! queue's, held for the `vkQueueSubmit` call alone. A stream never holds its own lock
//! while taking another stream's.
//!
//! # Default streams
//!
//! The legacy default stream ([`Device::default_stream`]) follows CUDA's legacy semantics:
//! an operation on it waits for all work enqueued before it on every *blocking* stream, and
//! an operation on a blocking stream waits for all work enqueued before it on the legacy
//! stream. Non-blocking streams ([`StreamKind::NonBlocking`]) take part in neither.
//! [`Device::per_thread_stream`] gives each thread its own blocking stream
//! (`CU_STREAM_PER_THREAD`).
//!
//! Copies and memsets are in `stream/copies.rs`, the arena in `stream/arena.rs`.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ash::vk;

use crate::conv::{self, SharedWindows};
use crate::error::Error;
use crate::event::Event;
use crate::launch_config::{validate, LaunchConfig};
use crate::memory::Buffer;
use crate::objects::{Arena, Batch, Device, DeviceShared, Gpu, Hook, StreamCore, StreamState};
use crate::pool::MemPool;
use crate::program::Program;
use crate::types::{PipelineKey, StreamKind, Submit};

mod arena;
mod copies;

/// Operations a batch collects before it is submitted even though the GPU is busy.
pub const MAX_BATCH_OPS: u32 = 64;

/// Parameter blocks start on this alignment in the arena (covers every `.param` alignment
/// and matches [`crate::BUFFER_ALIGNMENT`]).
const PARAM_ALIGN: u64 = crate::BUFFER_ALIGNMENT;

/// Device memory a stream gives the shared windows of one dispatch of a kernel that
/// keeps them in device memory; a larger grid is cut into dispatches of as many blocks
/// as fit, with a barrier between them (they reuse the area).
const SHARED_WINDOWS_BYTES: u64 = 16 << 20;

impl fmt::Debug for StreamCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream").field("kind", &self.kind).finish_non_exhaustive()
    }
}

impl StreamCore {
    pub(crate) fn new(
        gpu: &Arc<Gpu>,
        queue_family: u32,
        kind: StreamKind,
        priority: i32,
    ) -> Result<StreamCore, Error> {
        let mut timeline_info = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut timeline_info);
        // SAFETY: the device is alive and has timelineSemaphore enabled.
        let timeline = unsafe { gpu.raw.create_semaphore(&info, None) }
            .map_err(Error::vk("vkCreateSemaphore"))?;
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: the device is alive; the family index is the one the queue came from.
        let pool = match unsafe { gpu.raw.create_command_pool(&pool_info, None) } {
            Ok(pool) => pool,
            Err(result) => {
                // SAFETY: the semaphore was just created and is unused.
                unsafe { gpu.raw.destroy_semaphore(timeline, None) };
                return Err(Error::from_vk("vkCreateCommandPool", result));
            }
        };
        Ok(StreamCore {
            gpu: Arc::clone(gpu),
            kind,
            priority,
            timeline,
            last: AtomicU64::new(0),
            legacy_seen: AtomicU64::new(0),
            seen_by_legacy: AtomicU64::new(0),
            state: Mutex::new(StreamState {
                pool,
                spare: Vec::new(),
                open: None,
                in_flight: VecDeque::new(),
                host_wait: None,
                error: None,
                arena: Arena::default(),
                destroyed: false,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, StreamState> {
        // Every method re-establishes the state's invariants before it can panic (none of
        // them panics on input), so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The highest value this stream's scheduled work will signal.
    pub(crate) fn last(&self) -> u64 {
        self.last.load(Ordering::Acquire)
    }

    /// The value the timeline has reached.
    fn completed(&self, shared: &DeviceShared) -> Result<u64, Error> {
        // SAFETY: the semaphore is a live timeline semaphore of this device.
        unsafe { self.gpu.raw.get_semaphore_counter_value(self.timeline) }
            .map_err(|r| shared.note(Error::from_vk("vkGetSemaphoreCounterValue", r)))
    }

    /// Waits until the timeline reaches `value`, with the device timeout.
    pub(crate) fn wait_for(&self, shared: &DeviceShared, value: u64) -> Result<(), Error> {
        shared.check_alive()?;
        // Spin, yielding, before blocking: a blocked thread takes tens of microseconds to
        // wake, as long as a short kernel runs (CUDA's default scheduling does the same;
        // `PTXVK_SPIN_US` sets the time, 0 blocks at once).
        let spin = std::time::Duration::from_micros(shared.spin_us);
        let start = std::time::Instant::now();
        while start.elapsed() < spin {
            if self.completed(shared)? >= value {
                return Ok(());
            }
            std::thread::yield_now();
        }
        let semaphores = [self.timeline];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
        let ms = shared.timeout_ms();
        // SAFETY: the semaphore is alive (this core is borrowed) and a timeline semaphore.
        match unsafe { self.gpu.raw.wait_semaphores(&info, ms.saturating_mul(1_000_000)) } {
            Ok(()) => Ok(()),
            Err(vk::Result::TIMEOUT) => Err(Error::Timeout { ms }),
            Err(r) => Err(shared.note(Error::from_vk("vkWaitSemaphores", r))),
        }
    }

    /// Submits the open batch if its value is at most `value` (so that a wait for `value`
    /// can be submitted behind it).
    pub(crate) fn flush_through(&self, shared: &DeviceShared, value: u64) -> Result<(), Error> {
        let mut st = self.lock();
        if st.open.as_ref().is_some_and(|b| b.value <= value) {
            self.submit(shared, &mut st)?;
        }
        Ok(())
    }

    /// Submits the open batch, if any.
    fn submit(&self, shared: &DeviceShared, st: &mut StreamState) -> Result<(), Error> {
        let Some(batch) = st.open.take() else { return Ok(()) };
        let dev = &self.gpu.raw;
        let host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ | vk::AccessFlags::HOST_WRITE);
        // SAFETY: `batch.cmd` is in the recording state (begun in `open_batch`, only
        // commands appended since).
        let ended = unsafe {
            dev.cmd_pipeline_barrier(
                batch.cmd,
                conv::WORK_STAGES,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[host],
                &[],
                &[],
            );
            dev.end_command_buffer(batch.cmd)
        };
        if let Err(r) = ended {
            st.spare.push(batch.cmd);
            return Err(shared.note(Error::from_vk("vkEndCommandBuffer", r)));
        }
        let mut wait_semaphores = Vec::with_capacity(batch.waits.len() + 2);
        let mut wait_values = Vec::with_capacity(batch.waits.len() + 2);
        // In order after this stream's previous batch or host callback.
        let previous = st.host_wait.take().unwrap_or(batch.value - 1);
        if previous > 0 {
            wait_semaphores.push(self.timeline);
            wait_values.push(previous);
        }
        for (core, value) in &batch.waits {
            wait_semaphores.push(core.timeline);
            wait_values.push(*value);
        }
        let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; wait_semaphores.len()];
        let signal = [self.timeline];
        let signal_values = [batch.value];
        let mut timeline = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let cmds = [batch.cmd];
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&wait_semaphores)
            .wait_dst_stage_mask(&stages)
            .command_buffers(&cmds)
            .signal_semaphores(&signal)
            .push_next(&mut timeline);
        let submitted = {
            let queue = self.gpu.queue();
            // SAFETY: the command buffer is executable; every semaphore is alive (this
            // stream's, or owned by a core the batch keeps); the signal value is greater
            // than every value signalled or waited for on this timeline before (values
            // are handed out in increasing order); the queue is externally synchronised
            // by its mutex.
            unsafe { dev.queue_submit(*queue, &[submit], vk::Fence::null()) }
        };
        match submitted {
            Ok(()) => {
                st.in_flight.push_back(batch);
                Ok(())
            }
            Err(r) => {
                st.spare.push(batch.cmd);
                Err(shared.note(Error::from_vk("vkQueueSubmit", r)))
            }
        }
    }

    /// Drops the resources of completed batches and runs their hooks.
    fn reclaim(&self, shared: &DeviceShared, st: &mut StreamState) -> Result<(), Error> {
        if st.in_flight.is_empty() {
            return Ok(());
        }
        let done = self.completed(shared)?;
        while st.in_flight.front().is_some_and(|b| b.value <= done) {
            let Some(batch) = st.in_flight.pop_front() else { break };
            st.spare.push(batch.cmd);
            for hook in batch.hooks {
                if let Err(e) = hook() {
                    st.error.get_or_insert(e);
                }
            }
        }
        Ok(())
    }

    /// The open batch, beginning one if there is none.
    fn open_batch<'s>(
        &self,
        shared: &DeviceShared,
        st: &'s mut StreamState,
    ) -> Result<&'s mut Batch, Error> {
        if st.open.is_none() {
            let cmd = match st.spare.pop() {
                Some(cmd) => cmd,
                None => {
                    let info = vk::CommandBufferAllocateInfo::default()
                        .command_pool(st.pool)
                        .level(vk::CommandBufferLevel::PRIMARY)
                        .command_buffer_count(1);
                    // SAFETY: the pool is alive and only used under this stream's lock.
                    let list = unsafe { self.gpu.raw.allocate_command_buffers(&info) }
                        .map_err(|r| shared.note(Error::from_vk("vkAllocateCommandBuffers", r)))?;
                    list.first().copied().ok_or(Error::Vk {
                        call: "vkAllocateCommandBuffers",
                        result: vk::Result::ERROR_UNKNOWN,
                    })?
                }
            };
            let begin = vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            // SAFETY: `cmd` is new or was reclaimed after its submission completed; the
            // pool allows resetting single buffers and is used under this stream's lock.
            let begun = unsafe {
                self.gpu
                    .raw
                    .reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                    .and_then(|()| self.gpu.raw.begin_command_buffer(cmd, &begin))
            };
            if let Err(r) = begun {
                st.spare.push(cmd);
                return Err(shared.note(Error::from_vk("vkBeginCommandBuffer", r)));
            }
            let value = self.last.fetch_add(1, Ordering::AcqRel) + 1;
            st.open = Some(Batch {
                cmd,
                value,
                waits: Vec::new(),
                keep: Vec::new(),
                hooks: Vec::new(),
                ops: 0,
                dirty: false,
                bound: vk::Pipeline::null(),
            });
        }
        st.open.as_mut().ok_or(Error::Vk { call: "internal", result: vk::Result::ERROR_UNKNOWN })
    }

    /// Submits the open batch when the stream's earlier work is done (so the GPU does not
    /// idle) or the batch is full.
    fn maybe_submit(&self, shared: &DeviceShared, st: &mut StreamState) -> Result<(), Error> {
        self.reclaim(shared, st)?;
        let full = st.open.as_ref().is_some_and(|b| b.ops >= MAX_BATCH_OPS);
        if full || (st.in_flight.is_empty() && st.host_wait.is_none()) {
            self.submit(shared, st)?;
        }
        Ok(())
    }

    /// Destroys the Vulkan objects once nothing is pending; leaks them otherwise. Later
    /// calls do nothing.
    pub(crate) fn destroy(&self) {
        let mut st = self.lock();
        if st.destroyed || st.open.is_some() || !st.in_flight.is_empty() {
            // Work may still run (the stream's owner timed out waiting for it): leaking
            // the pool and semaphore is the only safe choice.
            return;
        }
        st.arena = Arena::default();
        st.destroyed = true;
        self.gpu.bury(st.pool, self.timeline);
    }
}

impl Drop for StreamCore {
    fn drop(&mut self) {
        self.destroy();
    }
}

/// A recorded dependency on another stream: wait for `value` on its timeline.
type Dependency = (Arc<StreamCore>, u64);

/// An in-order queue of GPU work on one device. See the module docs.
///
/// Streams made by [`Device::create_stream`] are synchronised when dropped (their work
/// completes first). The default streams belong to the device.
pub struct Stream {
    pub(crate) shared: Arc<DeviceShared>,
    pub(crate) core: Arc<StreamCore>,
    owned: bool,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("kind", &self.core.kind)
            .field("priority", &self.core.priority)
            .finish_non_exhaustive()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.owned {
            // Errors cannot be reported from a destructor; a timed-out stream is leaked by
            // `StreamCore::destroy`.
            let _ = self.flush_and_wait();
            self.shared.forget_stream(&self.core);
        }
    }
}

impl Device {
    /// A new stream (`cuStreamCreateWithPriority`). `priority` is recorded and reported;
    /// all streams share the device's one compute queue.
    pub fn create_stream(&self, kind: StreamKind, priority: i32) -> Result<Stream, Error> {
        self.shared.check_alive()?;
        if kind == StreamKind::Legacy {
            return Err(Error::InvalidUse(
                "the legacy default stream exists once per device: use Device::default_stream"
                    .into(),
            ));
        }
        let core =
            Arc::new(StreamCore::new(&self.shared.gpu, self.shared.queue_family, kind, priority)?);
        if kind == StreamKind::Blocking {
            self.shared.register_stream(&core);
        }
        Ok(Stream { shared: Arc::clone(&self.shared), core, owned: true })
    }

    /// The legacy default stream (CUDA's stream 0 / `CU_STREAM_LEGACY`).
    pub fn default_stream(&self) -> Stream {
        Stream {
            shared: Arc::clone(&self.shared),
            core: Arc::clone(&self.shared.legacy),
            owned: false,
        }
    }

    /// The calling thread's default stream (`CU_STREAM_PER_THREAD`): a blocking stream of
    /// its own, created on first use and kept for the device's life.
    pub fn per_thread_stream(&self) -> Result<Stream, Error> {
        let core = self.shared.per_thread_core()?;
        Ok(Stream { shared: Arc::clone(&self.shared), core, owned: false })
    }

    /// Waits for all work on every stream of the device (`cuCtxSynchronize`), then reports
    /// the first deferred error of any of them.
    pub fn synchronize(&self) -> Result<(), Error> {
        let mut first = None;
        for core in self.shared.all_streams() {
            let stream = Stream { shared: Arc::clone(&self.shared), core, owned: false };
            if let Err(e) = stream.synchronize() {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Stream {
    /// Which kind of stream this is.
    pub fn kind(&self) -> StreamKind {
        self.core.kind
    }

    /// The priority it was created with (0 for default streams).
    pub fn priority(&self) -> i32 {
        self.core.priority
    }

    /// The device this stream belongs to.
    pub fn device(&self) -> Device {
        Device { shared: Arc::clone(&self.shared) }
    }

    /// Whether `self` and `other` are the same stream.
    pub fn same_stream(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }

    fn check_device(&self, device_id: u64, what: &'static str) -> Result<(), Error> {
        if self.shared.id == device_id {
            Ok(())
        } else {
            Err(Error::ForeignObject(what))
        }
    }

    /// The other streams' work this stream's next operation must wait for under the legacy
    /// default stream's rules; their open batches are submitted first.
    fn legacy_dependencies(&self) -> Result<Vec<Dependency>, Error> {
        let shared = &self.shared;
        let mut deps = Vec::new();
        match self.core.kind {
            StreamKind::NonBlocking => {}
            StreamKind::Blocking => {
                let legacy = &shared.legacy;
                let value = legacy.last();
                if value > self.core.legacy_seen.load(Ordering::Acquire) {
                    legacy.flush_through(shared, value)?;
                    deps.push((Arc::clone(legacy), value));
                }
            }
            StreamKind::Legacy => {
                for core in shared.blocking_streams() {
                    let value = core.last();
                    if value > core.seen_by_legacy.load(Ordering::Acquire) {
                        core.flush_through(shared, value)?;
                        deps.push((core, value));
                    }
                }
            }
        }
        Ok(deps)
    }

    /// Notes that `deps` are now waited for, so later operations need not wait again.
    fn note_dependencies(&self, deps: &[Dependency]) {
        for (core, value) in deps {
            match self.core.kind {
                StreamKind::Blocking => self.core.legacy_seen.fetch_max(*value, Ordering::AcqRel),
                _ => core.seen_by_legacy.fetch_max(*value, Ordering::AcqRel),
            };
        }
    }

    /// Records one operation: opens a batch, adds the legacy dependencies, a barrier after
    /// earlier operations, then `record`, then maybe submits.
    fn enqueue(
        &self,
        record: impl FnOnce(&ash::Device, &mut Batch, &mut Arena) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.enqueue_with(Submit::WhenIdle, record)
    }

    /// [`Stream::enqueue`], with `Submit::Later` leaving the batch open for operations that
    /// follow at once (a timed launch's events), so they share one submission.
    fn enqueue_with(
        &self,
        submit: Submit,
        record: impl FnOnce(&ash::Device, &mut Batch, &mut Arena) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.shared.check_alive()?;
        let deps = self.legacy_dependencies()?;
        let shared = &self.shared;
        let mut guard = self.core.lock();
        let st = &mut *guard;
        self.core.open_batch(shared, st)?;
        let StreamState { open: Some(batch), arena, .. } = st else {
            return Err(Error::InvalidUse("internal: no open batch".into()));
        };
        batch.waits.extend(deps.iter().cloned());
        if batch.dirty {
            barrier(&self.core.gpu.raw, batch.cmd);
            batch.dirty = false;
        }
        let recorded = record(&self.core.gpu.raw, batch, arena);
        batch.ops += 1;
        batch.dirty = true;
        self.note_dependencies(&deps);
        // A failed `record` has recorded nothing harmful: the batch stays valid.
        recorded?;
        match submit {
            Submit::WhenIdle => self.core.maybe_submit(shared, st),
            Submit::Later => Ok(()),
        }
    }

    /// Launches `program` with its parameter block at `cfg.param_address`. Nothing in the
    /// parameter block is kept alive: pass the buffers it points to in `keep`.
    pub fn launch(
        &self,
        program: &Program,
        cfg: &LaunchConfig,
        keep: &[&Buffer],
    ) -> Result<(), Error> {
        self.launch_inner(program, cfg, None, keep, Submit::WhenIdle)
    }

    /// Launches `program` with `params` as its parameter block: the bytes are copied into
    /// the stream's arena now (`cfg.param_address` is ignored), so the caller may reuse
    /// them at once. The buffers in `keep` stay alive until the launch completes.
    pub fn launch_with_params(
        &self,
        program: &Program,
        cfg: &LaunchConfig,
        params: &[u8],
        keep: &[&Buffer],
    ) -> Result<(), Error> {
        self.launch_inner(program, cfg, Some(params), keep, Submit::WhenIdle)
    }

    pub(crate) fn launch_inner(
        &self,
        program: &Program,
        cfg: &LaunchConfig,
        params: Option<&[u8]>,
        keep: &[&Buffer],
        submit: Submit,
    ) -> Result<(), Error> {
        self.check_device(program.inner.device_id, "program")?;
        for b in keep {
            self.check_device(b.device_id(), "buffer")?;
        }
        let limits = &self.shared.info.limits;
        validate(cfg, limits)?;
        let key = PipelineKey::of(cfg);
        let pipeline = program.inner.pipeline(&self.shared, key)?;
        let first_dispatch = program.inner.first_dispatch(key).then(std::time::Instant::now);
        let limit = self.dispatch_limit(cfg);
        let chunks = conv::split_grid(cfg.grid, limit);
        let stride = ptxvk_abi::shared_stride(cfg.shared_bytes);
        let area_bytes = limit.iter().map(|&n| u64::from(n)).product::<u64>() * stride;
        let layout = program.inner.layout;
        let (shared, gpu) = (&self.shared, &self.shared.gpu);
        self.enqueue_with(submit, |dev, batch, arena| {
            let param_address = match params {
                Some(bytes) => {
                    let (chunk, offset) = arena.put(gpu, shared, bytes, PARAM_ALIGN)?;
                    let address = chunk.memory().address + offset;
                    batch.keep.push(chunk);
                    address
                }
                None => cfg.param_address,
            };
            let windows = if cfg.shared_in_device_memory {
                let area = arena.shared_windows(gpu, shared, area_bytes)?;
                let address = area.memory().address;
                batch.keep.push(area);
                SharedWindows { address, stride }
            } else {
                SharedWindows::default()
            };
            // SAFETY: `batch.cmd` is recording; pipeline and layout belong to this device
            // and stay alive while the batch keeps the program; the push-constant range
            // and stage match the layout; every dispatch count is within
            // maxComputeWorkGroupCount (`split_grid`).
            unsafe {
                if batch.bound != pipeline {
                    dev.cmd_bind_pipeline(batch.cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
                    batch.bound = pipeline;
                }
                // Phase-major: all of a phase's dispatches, a barrier, the next phase.
                let phases =
                    (0..cfg.phases.max(1)).flat_map(|p| chunks.iter().map(move |c| (p, c)));
                for (i, (phase, chunk)) in phases.enumerate() {
                    // Dispatches that share the windows' area run one after the other.
                    let first_of_phase = std::ptr::eq(chunk, &chunks[0]);
                    if i > 0 && (cfg.shared_in_device_memory || (phase > 0 && first_of_phase)) {
                        barrier(dev, batch.cmd);
                    }
                    let constants = conv::push_constants(param_address, cfg, chunk.base, windows);
                    dev.cmd_push_constants(
                        batch.cmd,
                        layout,
                        vk::ShaderStageFlags::COMPUTE,
                        0,
                        &constants,
                    );
                    dev.cmd_dispatch(batch.cmd, chunk.count[0], chunk.count[1], chunk.count[2]);
                }
            }
            batch.keep.push(Arc::clone(&program.inner) as Arc<dyn Any + Send + Sync>);
            for buffer in keep {
                self::keep(batch, buffer);
            }
            Ok(())
        })?;
        if first_dispatch.is_some() {
            let name = program.entry().to_owned();
            let record = move || {
                crate::timing::record(first_dispatch, "first-dispatch", &name, "");
                Ok(())
            };
            self.on_complete(Box::new(record))?;
        }
        Ok(())
    }

    /// The most workgroups per dimension of one dispatch of `cfg`: the device's
    /// `maxComputeWorkGroupCount`, and for a kernel whose shared windows are in device
    /// memory, no more blocks than [`SHARED_WINDOWS_BYTES`] has windows for.
    pub(crate) fn dispatch_limit(&self, cfg: &LaunchConfig) -> [u32; 3] {
        let max = self.shared.info.limits.max_workgroup_count;
        if !cfg.shared_in_device_memory {
            return max;
        }
        let blocks = SHARED_WINDOWS_BYTES / ptxvk_abi::shared_stride(cfg.shared_bytes);
        conv::dispatch_limit(cfg.grid, max, blocks)
    }

    /// Runs `hook` on the host once everything enqueued so far has completed, without
    /// blocking the stream (used to read a launch's results, e.g. its `printf` area). An
    /// error it returns is reported by the next synchronisation.
    pub fn on_complete(&self, hook: Hook) -> Result<(), Error> {
        self.shared.check_alive()?;
        let mut st = self.core.lock();
        match st.open.as_mut() {
            Some(batch) => batch.hooks.push(hook),
            None => match st.in_flight.back_mut() {
                Some(batch) => batch.hooks.push(hook),
                // Nothing pending: the work before it is complete.
                None => {
                    drop(st);
                    return hook();
                }
            },
        }
        Ok(())
    }

    /// Keeps `buffer` alive until the stream has passed everything enqueued so far.
    pub fn keep_alive(&self, buffer: &Buffer) -> Result<(), Error> {
        let inner = Arc::clone(&buffer.inner);
        self.on_complete(Box::new(move || {
            drop(inner);
            Ok(())
        }))
    }

    /// Waits for everything this stream's next operation would wait for: its own work and
    /// its legacy-stream dependencies.
    fn wait_all_before(&self) -> Result<(), Error> {
        for (core, value) in self.legacy_dependencies()? {
            core.wait_for(&self.shared, value)?;
        }
        self.flush_and_wait()
    }

    /// Records `event` at this point of the stream (`cuEventRecord`): it completes when
    /// everything enqueued before it has, and with timing, takes a GPU timestamp.
    pub fn record(&self, event: &Event) -> Result<(), Error> {
        self.record_with(event, Submit::WhenIdle)
    }

    pub(crate) fn record_with(&self, event: &Event, submit: Submit) -> Result<(), Error> {
        self.check_device(event.shared.id, "event")?;
        let inner = &event.inner;
        let mut value = 0;
        self.enqueue_with(submit, |dev, batch, _| {
            if inner.queries != vk::QueryPool::null() {
                // SAFETY: `batch.cmd` is recording outside a render pass; the pool has
                // one timestamp query, reset before it is written; the batch keeps it.
                unsafe {
                    dev.cmd_reset_query_pool(batch.cmd, inner.queries, 0, 1);
                    dev.cmd_write_timestamp(
                        batch.cmd,
                        vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                        inner.queries,
                        0,
                    );
                }
            }
            value = batch.value;
            batch.keep.push(Arc::clone(inner) as Arc<dyn Any + Send + Sync>);
            Ok(())
        })?;
        inner.set_recorded(Arc::clone(&self.core), value);
        Ok(())
    }

    /// Makes all later work of this stream wait until `event` completes
    /// (`cuStreamWaitEvent`). An event never recorded is complete.
    pub fn wait_event(&self, event: &Event) -> Result<(), Error> {
        self.check_device(event.shared.id, "event")?;
        let Some((core, value)) = event.inner.recorded() else { return Ok(()) };
        if Arc::ptr_eq(&core, &self.core) {
            // In-order already.
            return Ok(());
        }
        // Submit the event's batch first: a batch may only wait for submitted signals.
        core.flush_through(&self.shared, value)?;
        let shared = &self.shared;
        let mut guard = self.core.lock();
        let st = &mut *guard;
        let batch = self.core.open_batch(shared, st)?;
        batch.waits.push((core, value));
        self.core.maybe_submit(shared, st)
    }

    /// Runs `f` on a host thread once everything enqueued so far has completed; work
    /// enqueued after it waits until `f` returns (`cuLaunchHostFunc`). `f` must not wait
    /// for this stream.
    pub fn launch_host_func(&self, f: Box<dyn FnOnce() + Send>) -> Result<(), Error> {
        self.shared.check_alive()?;
        let deps = self.legacy_dependencies()?;
        let shared = &self.shared;
        let (after, signal) = {
            let mut guard = self.core.lock();
            let st = &mut *guard;
            if !deps.is_empty() {
                self.core.open_batch(shared, st)?.waits.extend(deps.iter().cloned());
            }
            self.core.submit(shared, st)?;
            let after = self.core.last();
            let signal = self.core.last.fetch_add(1, Ordering::AcqRel) + 1;
            st.host_wait = Some(signal);
            (after, signal)
        };
        self.note_dependencies(&deps);
        shared.run_host_callback(Arc::clone(&self.core), after, signal, f)
    }

    /// Whether everything enqueued has completed (`cuStreamQuery`); submits pending work.
    pub fn query(&self) -> Result<bool, Error> {
        self.shared.check_alive()?;
        let mut st = self.core.lock();
        self.core.submit(&self.shared, &mut st)?;
        self.core.reclaim(&self.shared, &mut st)?;
        Ok(self.core.completed(&self.shared)? >= self.core.last())
    }

    /// Submits what is recorded so far, without waiting.
    pub fn flush(&self) -> Result<(), Error> {
        self.shared.check_alive()?;
        let mut st = self.core.lock();
        self.core.submit(&self.shared, &mut st)
    }

    /// Submits and waits for everything enqueued so far, then reclaims.
    fn flush_and_wait(&self) -> Result<(), Error> {
        let target = {
            let mut st = self.core.lock();
            self.core.submit(&self.shared, &mut st)?;
            self.core.last()
        };
        self.core.wait_for(&self.shared, target)?;
        let mut st = self.core.lock();
        self.core.reclaim(&self.shared, &mut st)
    }

    /// Waits for everything enqueued so far (`cuStreamSynchronize`), then reports the
    /// first error a completion check reported since the last synchronisation (a failed
    /// `assert` or `trap`, for example).
    pub fn synchronize(&self) -> Result<(), Error> {
        self.flush_and_wait()?;
        self.shared.default_pool.trim_to_threshold(&self.shared.gpu);
        match self.core.lock().error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Allocates `size` bytes from `pool` (the device's default pool when `None`) for use
    /// in stream order (`cuMemAllocFromPoolAsync`). The memory is not zeroed.
    pub fn alloc_async(&self, size: u64, pool: Option<&MemPool>) -> Result<Buffer, Error> {
        match pool {
            Some(pool) => {
                self.check_device(pool.shared.id, "memory pool")?;
                pool.allocate(size)
            }
            None => self.device().default_pool().allocate(size),
        }
    }

    /// Frees `buffer` in stream order (`cuMemFreeAsync`): its memory returns to its pool
    /// (or the device) once the stream has passed everything enqueued so far and no other
    /// pending work uses it.
    pub fn free_async(&self, buffer: Buffer) -> Result<(), Error> {
        self.check_device(buffer.device_id(), "buffer")?;
        self.keep_alive(&buffer)
    }
}

/// A full memory dependency between consecutive operations of a batch.
fn barrier(dev: &ash::Device, cmd: vk::CommandBuffer) {
    let all = vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(
            vk::AccessFlags::SHADER_READ
                | vk::AccessFlags::SHADER_WRITE
                | vk::AccessFlags::TRANSFER_READ
                | vk::AccessFlags::TRANSFER_WRITE,
        );
    // SAFETY: `cmd` is recording outside a render pass (the caller's batch).
    unsafe {
        dev.cmd_pipeline_barrier(
            cmd,
            conv::WORK_STAGES,
            conv::WORK_STAGES,
            vk::DependencyFlags::empty(),
            &[all],
            &[],
            &[],
        )
    };
}

/// Keeps `buffer` alive until `batch` completes.
fn keep(batch: &mut Batch, buffer: &Buffer) {
    batch.keep.push(Arc::clone(&buffer.inner) as Arc<dyn Any + Send + Sync>);
}

/// The core of a default stream, for [`DeviceShared`]'s registry.
pub(crate) fn new_core(
    gpu: &Arc<Gpu>,
    queue_family: u32,
    kind: StreamKind,
) -> Result<Arc<StreamCore>, Error> {
    StreamCore::new(gpu, queue_family, kind, 0).map(Arc::new)
}

/// Waits for a default stream's work during device teardown; false if it timed out.
pub(crate) fn drain(shared: &DeviceShared, core: &StreamCore) -> bool {
    let target = {
        let mut st = core.lock();
        if core.submit(shared, &mut st).is_err() {
            return st.in_flight.is_empty();
        }
        core.last()
    };
    let waited = core.wait_for(shared, target);
    let mut st = core.lock();
    match waited {
        Ok(()) => core.reclaim(shared, &mut st).is_ok() || shared.is_lost(),
        Err(Error::DeviceLost) => {
            // A lost device executes nothing any more.
            st.in_flight.clear();
            true
        }
        Err(_) => false,
    }
}
