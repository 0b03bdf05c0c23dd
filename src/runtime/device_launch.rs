//! Running device-side launches (CUDA Dynamic Parallelism, CUDA 12 semantics): a
//! kernel that launches kernels records each launch in its launch arena
//! (`ptxvk_abi::device_launch`); when its grid has completed, the runtime reads the
//! arena and runs the launches, recursively, before anything enqueued after the parent
//! on its stream.
//!
//! Order (CUDA Programming Guide, "CUDA Dynamic Parallelism", "Streams" and "Tail
//! launch"): the launches of a grid run after it, in the order their threads claimed
//! slots, which keeps each thread's program order and so each device stream's order
//! (NULL stream, fire-and-forget, streams from `cudaStreamCreateWithFlags`): every
//! launch into any of them runs, with all its own launches, before the next. Launches
//! into `cudaStreamTailLaunch` run after all of those, in their order, so a tail
//! launch sees the parent's writes and those of all its other children and their
//! descendants. Running everything one after another is one schedule CUDA allows;
//! device code cannot wait for a child in CUDA 12, so no schedule can deadlock.
//!
//! Limits: a grid at depth `MAX_DEPTH` (24) cannot launch
//! (`cudaErrorLaunchMaxDepthExceeded`), and at most the device's pending-launch limit
//! ([`Device::set_pending_launch_limit`](crate::Device::set_pending_launch_limit), `cudaLimitDevRuntimePendingLaunchCount`,
//! 2048 by default) launches are pending at once: the launches a grid may make are the
//! limit less those recorded by its ancestors and not yet run; past it a launch returns
//! `cudaErrorLaunchPendingCountExceeded` to the device code.
//!
//! A launch of such a kernel waits for its whole tree, also when it was enqueued on a
//! stream ([`Kernel::launch_on`]): the host must read each grid's arena before the
//! stream moves on. Its printf output and failures are those of every grid of the tree.

use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use ptxvk_abi::device_launch as dl;
use ptxvk_abi::system;
use ptxvk_vk::Stream;

use super::prepared::Prepared;
use super::{Kernel, LaunchStats, Module};
use crate::Error;

/// One grid of a launch tree.
struct Grid {
    index: usize,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    params: Vec<u8>,
    depth: u32,
}

/// How a tree runs: on which stream, whether timed, whether printf output goes to
/// standard output as each grid completes (asynchronous launches) or into the stats.
pub(super) struct TreeRun<'s> {
    pub(super) stream: &'s Stream,
    pub(super) timed: bool,
    pub(super) print: bool,
    /// Buffers the top-level launch uses (its arguments).
    pub(super) keep: Vec<ptxvk_vk::Buffer>,
}

impl Kernel<'_> {
    /// Data bytes per launch slot: room for the largest parameter block of the kernels
    /// this one may launch (compiled with it: `compile::LazyModule::compile`).
    fn slot_bytes(&self) -> u32 {
        let kernels = &self.code.unit.spirv.kernels;
        dl::slot_bytes(kernels.iter().map(|k| k.abi.size).max().unwrap_or(0))
    }

    /// Whether the kernel launches kernels from the device.
    pub(super) fn launches_kernels(&self) -> bool {
        !self.info().device_launches.is_empty()
    }

    /// Runs this kernel with parameter block `params`, and every grid it launches,
    /// recursively, waiting for all of them.
    pub(super) fn run_tree(
        &self,
        run: &TreeRun<'_>,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        params: Vec<u8>,
    ) -> Result<LaunchStats, Error> {
        let mut stats = LaunchStats::default();
        let top = Grid { index: self.index, grid, block, shared_bytes, params, depth: 0 };
        self.module.run_grids(run, vec![top], 0, &mut stats)?;
        Ok(stats)
    }
}

impl Module {
    /// The device's pending-launch limit, at least 1.
    fn pending_limit(&self) -> u32 {
        self.device.pending_launches.load(Ordering::Relaxed).max(1)
    }

    /// Runs `grids` one after another on the run's stream, each with its launches
    /// after it; `outstanding` launches of their ancestors wait after them. Grids that
    /// launch nothing are enqueued together and waited for once.
    fn run_grids(
        &self,
        run: &TreeRun<'_>,
        grids: Vec<Grid>,
        outstanding: u32,
        stats: &mut LaunchStats,
    ) -> Result<(), Error> {
        let mut batch = Vec::new();
        let mut left = grids.len() as u32;
        for g in grids {
            left -= 1;
            let kernel = self.kernel_at(g.index)?;
            if kernel.launches_kernels() || run.timed {
                self.finish_batch(run, &mut batch, stats)?;
                self.run_launching(run, g, outstanding + left, stats)?;
            } else {
                let prepared = kernel.prepare(g.grid, g.block, g.shared_bytes, g.params)?;
                self.enqueue_plain(run, &kernel, &prepared)?;
                batch.push(prepared);
            }
        }
        self.finish_batch(run, &mut batch, stats)
    }

    /// Enqueues a grid without launches (no wait).
    fn enqueue_plain(
        &self,
        run: &TreeRun<'_>,
        kernel: &Kernel<'_>,
        prepared: &Prepared<'_>,
    ) -> Result<(), Error> {
        let mut keep = prepared.keep(&[]);
        keep.extend(run.keep.iter().cloned());
        let keep: Vec<&ptxvk_vk::Buffer> = keep.iter().collect();
        match &prepared.system {
            None => run.stream.launch_with_params(
                kernel.program(),
                &prepared.cfg,
                &prepared.params,
                &keep,
            )?,
            Some(_) => run.stream.launch(kernel.program(), &prepared.cfg, &keep)?,
        }
        Ok(())
    }

    /// Waits for the enqueued grids of `batch` and reads their system areas.
    fn finish_batch(
        &self,
        run: &TreeRun<'_>,
        batch: &mut Vec<Prepared<'_>>,
        stats: &mut LaunchStats,
    ) -> Result<(), Error> {
        if batch.is_empty() {
            return Ok(());
        }
        let waited = run.stream.synchronize();
        let mut first_error = waited.err().map(Error::from);
        for prepared in batch.drain(..) {
            stats.dispatches += dispatches_of(self, &prepared.cfg);
            if let Some(area) = prepared.system {
                let report = area.read();
                self.system_areas_return(area.buffer);
                match report {
                    Ok(report) => {
                        self.emit_printf(run, stats, &report.printf);
                        if let Some(e) = report.error() {
                            first_error.get_or_insert(e);
                        }
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn emit_printf(&self, run: &TreeRun<'_>, stats: &mut LaunchStats, out: &str) {
        if run.print {
            print!("{out}");
        } else {
            stats.printf.push_str(out);
        }
    }

    /// Runs grid `g`, which may launch, waits for it, and then runs its launches;
    /// `outstanding` launches of its ancestors are pending after it.
    fn run_launching(
        &self,
        run: &TreeRun<'_>,
        g: Grid,
        outstanding: u32,
        stats: &mut LaunchStats,
    ) -> Result<(), Error> {
        let kernel = self.kernel_at(g.index)?;
        let info = kernel.info();
        let slots = self.pending_limit();
        let per_slot = kernel.slot_bytes();
        let arena = self.launch_arena(dl::arena_bytes(slots, per_slot))?;
        let prepared = kernel.prepare_with(g.grid, g.block, g.shared_bytes, g.params, Some(&arena));
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                self.launch_arenas.lock().unwrap_or_else(PoisonError::into_inner).push(arena);
                return Err(e);
            }
        };
        let arena = match &prepared.system {
            Some(area) => {
                let room = slots.saturating_sub(outstanding);
                arena.write_mapped(0, &dl::arena_header(slots, per_slot, room, g.depth))?;
                let at = u64::from(area.offset + system::LAUNCH_ARENA);
                area.buffer.write_mapped(at, &arena.address().to_le_bytes())?;
                Some((arena, slots))
            }
            // Only timed launches without launches of their own come here.
            None => {
                self.launch_arenas.lock().unwrap_or_else(PoisonError::into_inner).push(arena);
                None
            }
        };
        let mut keep = prepared.keep(&[]);
        keep.extend(run.keep.iter().cloned());
        keep.extend(arena.iter().map(|(a, _)| a.clone()));
        let keep: Vec<&ptxvk_vk::Buffer> = keep.iter().collect();
        let params = prepared.system.is_none().then_some(prepared.params.as_slice());
        let launched =
            run.stream.launch_and_wait(kernel.program(), &prepared.cfg, params, &keep, run.timed);
        let read = launched.map_err(Error::from).and_then(|s| {
            stats.kernel_ms += s.kernel_ms;
            stats.dispatches += s.dispatches;
            match &prepared.system {
                Some(area) => area.read().map(Some),
                None => Ok(None),
            }
        });
        if let Some(area) = prepared.system {
            self.system_areas_return(area.buffer);
        }
        let recorded = match (read, &arena) {
            (Err(e), _) => Err(e),
            (Ok(report), arena) => {
                let mut failed = None;
                if let Some(report) = report {
                    self.emit_printf(run, stats, &report.printf);
                    failed = report.error();
                }
                match (failed, arena) {
                    (Some(e), _) => Err(e),
                    (None, Some((arena, slots))) => read_arena(arena, *slots, info),
                    (None, None) => Ok(Vec::new()),
                }
            }
        };
        if let Some((arena, _)) = arena {
            self.launch_arenas.lock().unwrap_or_else(PoisonError::into_inner).push(arena);
        }
        let recorded = recorded?;
        // The launches' grids: the ordinary streams' in slot order, then the tail
        // launches in theirs.
        let mut children = Vec::new();
        let mut tails = Vec::new();
        for r in recorded {
            let name = &info.device_launches[r.kernel];
            let child = self.kernel(name).map_err(|e| {
                Error::Launch(format!(
                    "kernel `{}` launched `{name}` from the device, which cannot run: {e}",
                    info.name
                ))
            })?;
            let size = child.info().abi.size as usize;
            let at = r.params_at as usize;
            let params = r.params.get(at..at + size).map(<[u8]>::to_vec).ok_or_else(|| {
                Error::Launch(format!(
                    "kernel `{}` launched `{name}` with a parameter buffer past its arena",
                    info.name
                ))
            })?;
            let grid = Grid {
                index: child.index,
                grid: r.grid,
                block: r.block,
                shared_bytes: r.shared_bytes,
                params,
                depth: g.depth + 1,
            };
            if r.tail {
                tails.push(grid)
            } else {
                children.push(grid)
            }
        }
        children.append(&mut tails);
        self.run_grids(run, children, outstanding, stats)
    }

    /// A launch arena of `size` bytes, from the module's pool or new.
    fn launch_arena(&self, size: u64) -> Result<ptxvk_vk::Buffer, Error> {
        let reused = {
            let mut arenas = self.launch_arenas.lock().unwrap_or_else(PoisonError::into_inner);
            arenas.iter().position(|b| b.size() >= size).map(|i| arenas.swap_remove(i))
        };
        match reused {
            Some(b) => Ok(b),
            None => {
                let b = self.device.inner.alloc_host(size)?;
                b.set_internal();
                Ok(b)
            }
        }
    }
}

/// A recorded launch with the arena bytes its parameters are in.
struct Launch {
    kernel: usize,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    tail: bool,
    params_at: u32,
    params: std::sync::Arc<Vec<u8>>,
}

/// The launches a grid recorded in `arena` (of `slots` slots).
fn read_arena(
    arena: &ptxvk_vk::Buffer,
    slots: u32,
    info: &ptxvk_spirv::KernelInfo,
) -> Result<Vec<Launch>, Error> {
    let start = dl::data_start(slots);
    let mut head = vec![0u8; start as usize];
    arena.read_mapped(0, &mut head)?;
    let used = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let data = u64::from(used).min(arena.size() - u64::from(start));
    let mut bytes = head;
    bytes.resize(start as usize + data as usize, 0);
    arena.read_mapped(u64::from(start), &mut bytes[start as usize..])?;
    let recorded = dl::decode(&bytes, info.device_launches.len()).map_err(|e| {
        Error::Launch(format!("kernel `{}`'s device-side launches: {e}", info.name))
    })?;
    let bytes = std::sync::Arc::new(bytes);
    Ok(recorded
        .into_iter()
        .map(|r| Launch {
            kernel: r.kernel,
            grid: r.grid,
            block: r.block,
            shared_bytes: r.shared_bytes,
            tail: r.is_tail(),
            params_at: r.params_at,
            params: std::sync::Arc::clone(&bytes),
        })
        .collect())
}

/// The dispatches a grid of `cfg` is split into on this module's device (as the
/// stream splits it).
fn dispatches_of(module: &Module, cfg: &ptxvk_vk::LaunchConfig) -> u32 {
    let max = module.device.info().limits.max_workgroup_count;
    (0..3).map(|d| cfg.grid[d].div_ceil(max[d].max(1))).product()
}
