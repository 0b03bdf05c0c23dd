//! Command recording and submission: kernel launches (validation, grid splitting, push
//! constants, timestamps) and the [`Submitter`] every GPU operation goes through.
//!
//! All GPU work of a device runs on one queue through one reusable command buffer, one
//! fence and (when the queue supports timestamps) one two-entry query pool, serialized by
//! a mutex. Each submission is waited for with the device timeout; a submission that times
//! out stays *pending* and the next use of the submitter waits for it first, so the
//! command buffer is never re-recorded while the GPU may still execute it.

use std::sync::Arc;

use ash::vk;

use crate::adapter::{Limits, QueueFamily};
use crate::conv;
use crate::device::Device;
use crate::error::Error;
use crate::program::Program;

/// CUDA's grid limits: x up to 2^31 - 1, y and z up to 65535.
pub const CUDA_MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// One kernel launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid (x, y, z), each at least 1.
    pub grid: [u32; 3],
    /// Threads per block (x, y, z), each at least 1.
    pub block: [u32; 3],
    /// Total shared memory per block in bytes: static plus dynamic (`extern .shared`).
    pub shared_bytes: u32,
    /// Device address of the kernel's parameter block (push constant offset 0).
    pub param_address: u64,
    /// Device address of the module's constant block (push constant offset 8).
    pub const_address: u64,
}

impl Default for LaunchConfig {
    /// One block of one thread, no shared memory, null addresses.
    fn default() -> Self {
        LaunchConfig {
            grid: [1; 3],
            block: [1; 3],
            shared_bytes: 0,
            param_address: 0,
            const_address: 0,
        }
    }
}

/// What a launch measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LaunchStats {
    /// GPU time from before the first dispatch to after the last, in milliseconds
    /// (0.0 when the queue cannot write timestamps).
    pub kernel_ms: f64,
    /// Number of `vkCmdDispatch` calls the grid was split into.
    pub dispatches: u32,
}

/// Checks `cfg` against CUDA's rules and the device limits; the error names the offending
/// value and the limit.
pub(crate) fn validate(cfg: &LaunchConfig, limits: &Limits) -> Result<(), Error> {
    const AXES: [char; 3] = ['x', 'y', 'z'];
    for (what, dims) in [("grid", cfg.grid), ("block", cfg.block)] {
        if let Some(d) = dims.iter().position(|&n| n == 0) {
            return Err(Error::Launch(format!(
                "{what} dimension {} is 0; every grid and block dimension must be at least 1",
                AXES[d]
            )));
        }
    }
    for ((axis, &n), &max) in AXES.iter().zip(&cfg.block).zip(&limits.max_workgroup_size) {
        if n > max {
            return Err(Error::Launch(format!(
                "block dimension {axis} is {n}, the device allows at most {max} \
                 (maxComputeWorkGroupSize)"
            )));
        }
    }
    let threads: u64 = cfg.block.iter().map(|&n| u64::from(n)).product();
    if threads > u64::from(limits.max_workgroup_invocations) {
        return Err(Error::Launch(format!(
            "a block of {}x{}x{} = {threads} threads exceeds the device's limit of {} threads \
             per block (maxComputeWorkGroupInvocations)",
            cfg.block[0], cfg.block[1], cfg.block[2], limits.max_workgroup_invocations
        )));
    }
    if cfg.shared_bytes > limits.max_shared_memory_bytes {
        return Err(Error::Launch(format!(
            "{} bytes of shared memory per block exceed the device's limit of {} bytes \
             (maxComputeSharedMemorySize)",
            cfg.shared_bytes, limits.max_shared_memory_bytes
        )));
    }
    for ((axis, &n), &max) in AXES.iter().zip(&cfg.grid).zip(&CUDA_MAX_GRID) {
        if n > max {
            return Err(Error::Launch(format!(
                "grid dimension {axis} is {n}, CUDA allows at most {max}"
            )));
        }
    }
    Ok(())
}

impl Device {
    /// Runs `program` over `cfg.grid` blocks of `cfg.block` threads and waits for it.
    ///
    /// The configuration is validated before anything is recorded. A grid larger than the
    /// device's `maxComputeWorkGroupCount` is split into several dispatches in one command
    /// buffer, each told its block-index offset through the push constants. Writes of the
    /// kernel are visible to later launches and downloads when this returns.
    pub fn launch(&self, program: &Program, cfg: &LaunchConfig) -> Result<LaunchStats, Error> {
        if !Arc::ptr_eq(&program.shared, &self.shared) {
            return Err(Error::ForeignObject("program"));
        }
        let limits = &self.shared.info.limits;
        validate(cfg, limits)?;
        let pipeline = program.pipeline(cfg.block, conv::shared_words(cfg.shared_bytes))?;
        let chunks = conv::split_grid(cfg.grid, limits.max_workgroup_count);
        let dispatches = u32::try_from(chunks.len())
            .map_err(|_| Error::Launch(format!("the grid needs {} dispatches", chunks.len())))?;
        let layout = program.layout;
        let dev = &self.shared.raw;

        let mut submitter = self.shared.submitter();
        let timed = submitter.has_timestamps();
        submitter.execute(dev, self.shared.timeout_ms(), |cmd, queries| {
            // SAFETY: `cmd` is in the recording state (guaranteed by `execute`); the
            // pipeline and layout belong to this device and stay alive while `program` is
            // borrowed, which outlasts the wait in `execute`; the push-constant range
            // [0, 40) and stage match the layout; every dispatch count is within
            // maxComputeWorkGroupCount (`split_grid`); the query pool has two queries and is
            // reset before they are written.
            unsafe {
                if timed {
                    dev.cmd_reset_query_pool(cmd, queries, 0, 2);
                    dev.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, queries, 0);
                }
                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
                for chunk in &chunks {
                    let constants = conv::push_constants(
                        cfg.param_address,
                        cfg.const_address,
                        chunk.base,
                        cfg.grid,
                    );
                    dev.cmd_push_constants(
                        cmd,
                        layout,
                        vk::ShaderStageFlags::COMPUTE,
                        0,
                        &constants,
                    );
                    dev.cmd_dispatch(cmd, chunk.count[0], chunk.count[1], chunk.count[2]);
                }
                if timed {
                    dev.cmd_write_timestamp(
                        cmd,
                        vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                        queries,
                        1,
                    );
                }
            }
        })?;
        let kernel_ms = if timed {
            let [t0, t1] = submitter.read_timestamps(dev)?;
            conv::timestamp_ms(
                t0,
                t1,
                submitter.timestamp_valid_bits,
                self.shared.info.timestamp_period_ns,
            )
        } else {
            0.0
        };
        Ok(LaunchStats { kernel_ms, dispatches })
    }
}

/// The queue and the reusable recording objects of one device.
#[derive(Debug)]
pub(crate) struct Submitter {
    queue: vk::Queue,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    /// Two timestamp queries, or null when the queue cannot write timestamps.
    queries: vk::QueryPool,
    timestamp_valid_bits: u32,
    /// A submission has not been seen to complete (it timed out).
    pending: bool,
}

impl Submitter {
    /// Creates the command pool, command buffer, fence and (if `timestamps`) query pool
    /// for queue 0 of `family`. On failure, destroys what it created.
    pub(crate) fn new(
        dev: &ash::Device,
        family: QueueFamily,
        timestamps: bool,
    ) -> Result<Submitter, Error> {
        // SAFETY: queue 0 of `family` was requested at device creation.
        let queue = unsafe { dev.get_device_queue(family.index, 0) };
        let mut s = Submitter {
            queue,
            pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            queries: vk::QueryPool::null(),
            timestamp_valid_bits: if timestamps { family.timestamp_valid_bits } else { 0 },
            pending: false,
        };
        match s.create_objects(dev, family.index) {
            Ok(()) => Ok(s),
            Err(e) => {
                // SAFETY: nothing was submitted; null handles are ignored by vkDestroy*.
                unsafe { s.destroy(dev) };
                Err(e)
            }
        }
    }

    fn create_objects(&mut self, dev: &ash::Device, family: u32) -> Result<(), Error> {
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: the device is alive; the create info is valid and outlives the call (the
        // same holds for the calls below).
        self.pool = unsafe { dev.create_command_pool(&pool_info, None) }
            .map_err(Error::vk("vkCreateCommandPool"))?;
        let alloc_info = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: see above; `self.pool` is a live pool of this device.
        let buffers = unsafe { dev.allocate_command_buffers(&alloc_info) }
            .map_err(Error::vk("vkAllocateCommandBuffers"))?;
        self.cmd = buffers.first().copied().ok_or(Error::Vk {
            call: "vkAllocateCommandBuffers",
            result: vk::Result::ERROR_UNKNOWN,
        })?;
        // SAFETY: see above.
        self.fence = unsafe { dev.create_fence(&vk::FenceCreateInfo::default(), None) }
            .map_err(Error::vk("vkCreateFence"))?;
        if self.timestamp_valid_bits > 0 {
            let query_info = vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(2);
            // SAFETY: see above.
            self.queries = unsafe { dev.create_query_pool(&query_info, None) }
                .map_err(Error::vk("vkCreateQueryPool"))?;
        }
        Ok(())
    }

    /// Destroys the Vulkan objects (null handles are skipped by Vulkan).
    ///
    /// # Safety
    /// No submission may still be executing (`pending` false or waited for), and the
    /// submitter must not be used afterwards.
    pub(crate) unsafe fn destroy(&mut self, dev: &ash::Device) {
        // SAFETY: guaranteed by the caller; destroying the pool frees `cmd`.
        unsafe {
            dev.destroy_query_pool(self.queries, None);
            dev.destroy_fence(self.fence, None);
            dev.destroy_command_pool(self.pool, None);
        }
        self.queries = vk::QueryPool::null();
        self.fence = vk::Fence::null();
        self.pool = vk::CommandPool::null();
        self.cmd = vk::CommandBuffer::null();
    }

    pub(crate) fn has_timestamps(&self) -> bool {
        self.queries != vk::QueryPool::null()
    }

    /// Waits for an earlier submission that timed out, if any.
    fn wait_pending(&mut self, dev: &ash::Device, timeout_ms: u64) -> Result<(), Error> {
        if !self.pending {
            return Ok(());
        }
        // SAFETY: the fence is a live fence of this device.
        let waited = unsafe {
            dev.wait_for_fences(&[self.fence], true, timeout_ms.saturating_mul(1_000_000))
        };
        match waited {
            Ok(()) => {
                self.pending = false;
                Ok(())
            }
            Err(vk::Result::TIMEOUT) => Err(Error::Timeout { ms: timeout_ms }),
            Err(result) => Err(Error::Vk { call: "vkWaitForFences", result }),
        }
    }

    /// Whether objects the GPU might use can be destroyed now: true when nothing is pending
    /// (after waiting up to `timeout_ms`) or when the device is lost (lost devices execute
    /// nothing).
    pub(crate) fn wait_for_destroy(&mut self, dev: &ash::Device, timeout_ms: u64) -> bool {
        match self.wait_pending(dev, timeout_ms) {
            Ok(()) => true,
            Err(Error::Vk { result: vk::Result::ERROR_DEVICE_LOST, .. }) => true,
            Err(_) => false,
        }
    }

    /// Records one command buffer, framed by memory barriers, submits it and waits for it.
    ///
    /// `record` gets the command buffer in the recording state and the query pool (null
    /// without timestamps). The leading barrier makes all earlier transfer and shader
    /// writes (of this and earlier submissions) visible to this submission's transfers and
    /// shaders; the trailing one makes this submission's writes visible to the host.
    pub(crate) fn execute(
        &mut self,
        dev: &ash::Device,
        timeout_ms: u64,
        record: impl FnOnce(vk::CommandBuffer, vk::QueryPool),
    ) -> Result<(), Error> {
        self.wait_pending(dev, timeout_ms)?;
        let writes = vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE;
        let work = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER;
        let before = vk::MemoryBarrier::default().src_access_mask(writes).dst_access_mask(
            vk::AccessFlags::SHADER_READ
                | vk::AccessFlags::SHADER_WRITE
                | vk::AccessFlags::TRANSFER_READ
                | vk::AccessFlags::TRANSFER_WRITE,
        );
        let after = vk::MemoryBarrier::default()
            .src_access_mask(writes)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: no submission of `cmd` is pending (waited for above), so it may be reset
        // (its pool allows per-buffer reset) and re-recorded; the fence is unused by any
        // pending submission and may be reset.
        unsafe {
            dev.reset_fences(&[self.fence]).map_err(Error::vk("vkResetFences"))?;
            dev.reset_command_buffer(self.cmd, vk::CommandBufferResetFlags::empty())
                .map_err(Error::vk("vkResetCommandBuffer"))?;
            dev.begin_command_buffer(self.cmd, &begin)
                .map_err(Error::vk("vkBeginCommandBuffer"))?;
            dev.cmd_pipeline_barrier(
                self.cmd,
                work,
                work,
                vk::DependencyFlags::empty(),
                &[before],
                &[],
                &[],
            );
        }
        record(self.cmd, self.queries);
        let cmds = [self.cmd];
        let submit = vk::SubmitInfo::default().command_buffers(&cmds);
        // SAFETY: `cmd` is recording (begun above, `record` only appends commands); the
        // queue is externally synchronized by the mutex around this submitter; the fence was
        // reset above.
        unsafe {
            dev.cmd_pipeline_barrier(
                self.cmd,
                work,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[after],
                &[],
                &[],
            );
            dev.end_command_buffer(self.cmd).map_err(Error::vk("vkEndCommandBuffer"))?;
            dev.queue_submit(self.queue, &[submit], self.fence)
                .map_err(Error::vk("vkQueueSubmit"))?;
        }
        self.pending = true;
        self.wait_pending(dev, timeout_ms)
    }

    /// The two timestamps of the last completed submission that wrote them.
    pub(crate) fn read_timestamps(&self, dev: &ash::Device) -> Result<[u64; 2], Error> {
        let mut ticks = [0u64; 2];
        // SAFETY: the query pool holds two timestamp queries, both written by the last
        // submission, which has completed (the caller checked `execute` succeeded).
        unsafe {
            dev.get_query_pool_results(
                self.queries,
                0,
                &mut ticks,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(Error::vk("vkGetQueryPoolResults"))?;
        Ok(ticks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_workgroup_count: [65535; 3],
        max_workgroup_size: [1024, 1024, 64],
        max_workgroup_invocations: 1024,
        max_shared_memory_bytes: 32768,
        max_push_constants_size: 128,
    };

    fn check(cfg: LaunchConfig) -> Result<(), String> {
        validate(&cfg, &LIMITS).map_err(|e| e.to_string())
    }

    #[test]
    fn accepts_valid_launches() {
        assert_eq!(check(LaunchConfig::default()), Ok(()));
        let big = LaunchConfig {
            grid: [i32::MAX as u32, 65535, 65535],
            block: [1024, 1, 1],
            shared_bytes: 32768,
            ..LaunchConfig::default()
        };
        assert_eq!(check(big), Ok(()));
    }

    #[test]
    fn rejects_with_value_and_limit() {
        let base = LaunchConfig::default();
        let err = check(LaunchConfig { grid: [1, 0, 1], ..base }).expect_err("must be rejected");
        assert!(err.contains("grid dimension y is 0"), "{err}");
        let err = check(LaunchConfig { block: [0, 1, 1], ..base }).expect_err("must be rejected");
        assert!(err.contains("block dimension x is 0"), "{err}");
        let err = check(LaunchConfig { block: [1, 1, 65], ..base }).expect_err("must be rejected");
        assert!(err.contains("block dimension z is 65") && err.contains("at most 64"), "{err}");
        let err = check(LaunchConfig { block: [64, 32, 1], ..base }).expect_err("must be rejected");
        assert!(err.contains("2048 threads") && err.contains("1024"), "{err}");
        let err =
            check(LaunchConfig { shared_bytes: 32769, ..base }).expect_err("must be rejected");
        assert!(err.contains("32769") && err.contains("32768"), "{err}");
        let err =
            check(LaunchConfig { grid: [1 << 31, 1, 1], ..base }).expect_err("must be rejected");
        assert!(err.contains("2147483648") && err.contains("2147483647"), "{err}");
        let err =
            check(LaunchConfig { grid: [1, 1, 65536], ..base }).expect_err("must be rejected");
        assert!(err.contains("grid dimension z is 65536") && err.contains("65535"), "{err}");
    }
}
