//! Launches (`cuLaunchKernel`, `cuLaunchKernelEx`) and occupancy queries.
//!
//! The parameter block is assembled from `kernelParams` (one pointer per parameter, each
//! parameter's bytes copied to its ABI offset) or taken whole from `extra`
//! (`CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`; any size from the end of the last parameter
//! up is accepted, as CUDA does). Every 8-byte-aligned word of the block that
//! is the address of a live allocation keeps that allocation alive until the launch has
//! run, so freeing memory right after enqueueing a launch that uses it is safe.

use std::ffi::{c_int, c_uint, c_void};

use cudarc::driver::sys::{CUlaunchConfig, CUresult};

use crate::objects::Function;
use crate::state::stream_of;
use crate::state::{driver, Driver};
use crate::{entry, out};

const CU_LAUNCH_PARAM_END: usize = 0;
const CU_LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
const CU_LAUNCH_PARAM_BUFFER_SIZE: usize = 2;

/// The parameter block of a launch of `f`.
///
/// # Safety
/// `params` is null or holds one readable pointer per kernel parameter, each readable for
/// the parameter's size; `extra` is null or a `CU_LAUNCH_PARAM_END`-terminated list as
/// CUDA documents.
pub(crate) unsafe fn param_block(
    f: &Function,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<Vec<u8>, CUresult> {
    let kernel = f.kernel()?;
    let abi = &kernel.info().abi;
    let mut block = vec![0u8; abi.size as usize];
    if !params.is_null() {
        for (i, p) in abi.params.iter().enumerate() {
            // SAFETY: one pointer per parameter (function contract).
            let src = unsafe { *params.add(i) };
            // SAFETY: readable for the parameter's size (function contract).
            let bytes = unsafe { crate::host_bytes(src, p.size as usize) }?;
            block[p.offset as usize..(p.offset + p.size) as usize].copy_from_slice(bytes);
        }
        return Ok(block);
    }
    if extra.is_null() {
        return if abi.params.is_empty() {
            Ok(block)
        } else {
            Err(CUresult::CUDA_ERROR_INVALID_VALUE)
        };
    }
    let (mut buffer, mut size) = (std::ptr::null::<c_void>(), None);
    for i in (0..).step_by(2) {
        // SAFETY: key/value pairs until CU_LAUNCH_PARAM_END (function contract).
        let key = unsafe { *extra.add(i) } as usize;
        match key {
            CU_LAUNCH_PARAM_END => break,
            CU_LAUNCH_PARAM_BUFFER_POINTER => {
                // SAFETY: as above: the value follows its key.
                buffer = unsafe { *extra.add(i + 1) };
            }
            CU_LAUNCH_PARAM_BUFFER_SIZE => {
                // SAFETY: the value points to a size_t (CUDA's documentation).
                size = Some(unsafe { *(*extra.add(i + 1)).cast::<usize>() });
            }
            _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
    }
    // CUDA takes any size that covers the last parameter: a client packing
    // `u64, u64, s32` passes 20, not the block's 24 rounded up to its alignment.
    let end = abi.params.iter().map(|p| (p.offset + p.size) as usize).max().unwrap_or(0);
    match size {
        Some(n) if n >= end => {
            let len = n.min(block.len());
            // SAFETY: the buffer is readable for its stated size, so for `len <= n`
            // bytes (function contract).
            block[..len].copy_from_slice(unsafe { crate::host_bytes(buffer, len) }?);
            Ok(block)
        }
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

/// The allocations the parameter block points at.
pub(crate) fn pointed_at(d: &Driver, block: &[u8]) -> Vec<ptxvk::vk::Buffer> {
    block
        .chunks_exact(8)
        .filter_map(|w| {
            let value = u64::from_le_bytes(w.try_into().ok()?);
            (value != 0).then(|| d.device().vk().resolve(value)).flatten().map(|r| r.buffer)
        })
        .collect()
}

/// One launch, whichever entry point it came through.
///
/// # Safety
/// As [`param_block`].
#[allow(clippy::too_many_arguments)]
unsafe fn launch(
    f: usize,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: usize,
    per_thread: bool,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<(), CUresult> {
    let d = driver()?;
    let func = crate::module::function_of(d, f)?;
    // SAFETY: forwarded (function contract).
    let bytes = unsafe { param_block(&func, params, extra) }?;
    let keep = pointed_at(d, &bytes);
    let s = stream_of(d, stream, per_thread)?;
    // A capturing stream records the launch (`crate::graph`).
    let recorded = crate::graph::record_with(&s, || {
        let op = crate::objects::KernelOp::new(
            func.clone(),
            f,
            grid,
            block,
            shared,
            bytes.clone(),
            keep.clone(),
        )?;
        Ok(crate::objects::Op::Kernel(op))
    })?;
    if recorded {
        return Ok(());
    }
    func.kernel()?.launch_params_on(s.get(), grid, block, shared, bytes, &keep).map_err(crate::code)
}

macro_rules! launch_kernel {
    ($($name:ident, $pt:expr;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            f: usize,
            gx: c_uint, gy: c_uint, gz: c_uint,
            bx: c_uint, by: c_uint, bz: c_uint,
            shared: c_uint,
            stream: usize,
            params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) -> CUresult {
            // SAFETY: `params`/`extra` as CUDA documents.
            entry(|| unsafe { launch(f, [gx, gy, gz], [bx, by, bz], shared, stream, $pt, params, extra) })
        }
    )*};
}

launch_kernel! {
    cuLaunchKernel, false;
    cuLaunchKernel_ptsz, true;
}

/// `CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE`.
const CU_LAUNCH_ATTRIBUTE_COOPERATIVE: u32 = 2;

/// A cooperative launch: CUDA wants every block resident at once, so that blocks can
/// wait for each other at `this_grid().sync()`. ptxvk runs a kernel's grid barriers as
/// consecutive dispatches (`ptxvk_lower::pass::split_grid`), so a grid of any size
/// synchronizes and a cooperative launch is an ordinary one: nothing to refuse.
fn check_cooperative(_grid: [c_uint; 3]) -> Result<(), CUresult> {
    driver().map(|_| ())
}

/// `CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`.
const CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: u32 = 4;

/// `cuLaunchKernelEx`; the cooperative attribute is checked, and a cluster shape of
/// more than one CTA is refused (ptxvk runs every cluster as one CTA, which the
/// compiler makes exact: `lower::sema::cluster`); other attributes are accepted and
/// ignored.
unsafe fn launch_ex(
    config: *const CUlaunchConfig,
    f: usize,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    per_thread: bool,
) -> Result<(), CUresult> {
    if config.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: non-null and readable (CUDA's contract).
    let c = unsafe { &*config };
    let grid = [c.gridDimX, c.gridDimY, c.gridDimZ];
    let block = [c.blockDimX, c.blockDimY, c.blockDimZ];
    if c.numAttrs > 0 && c.attrs.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    for i in 0..c.numAttrs as usize {
        // SAFETY: `attrs` holds `numAttrs` entries (CUDA's contract).
        let attr = unsafe { &*c.attrs.add(i) };
        if attr.id as u32 == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {
            // SAFETY: the value of a CLUSTER_DIMENSION attribute is its `clusterDim`.
            let dims = unsafe { attr.value.clusterDim };
            let ctas = u64::from(dims.x) * u64::from(dims.y) * u64::from(dims.z);
            if ctas > 1 {
                eprintln!(
                    "ptxvk libcuda: clusters of {ctas} CTAs are not supported (ptxvk runs \
                     every thread-block cluster as one CTA)"
                );
                return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
            }
            continue;
        }
        if attr.id as u32 != CU_LAUNCH_ATTRIBUTE_COOPERATIVE {
            continue;
        }
        // SAFETY: the value of a COOPERATIVE attribute is its `cooperative` int.
        let cooperative = unsafe { attr.value.cooperative };
        if cooperative != 0 {
            check_cooperative(grid)?;
        }
    }
    // SAFETY: forwarded.
    unsafe {
        launch(f, grid, block, c.sharedMemBytes, c.hStream as usize, per_thread, params, extra)
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const CUlaunchConfig,
    f: usize,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { launch_ex(config, f, params, extra, false) })
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernelEx_ptsz(
    config: *const CUlaunchConfig,
    f: usize,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { launch_ex(config, f, params, extra, true) })
}

macro_rules! launch_cooperative {
    ($($name:ident, $pt:expr;)*) => {$(
        /// `cuLaunchKernel` of a grid whose blocks may synchronize
        /// ([`check_cooperative`]: any size).
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            f: usize,
            gx: c_uint, gy: c_uint, gz: c_uint,
            bx: c_uint, by: c_uint, bz: c_uint,
            shared: c_uint,
            stream: usize,
            params: *mut *mut c_void,
        ) -> CUresult {
            entry(|| {
                check_cooperative([gx, gy, gz])?;
                // SAFETY: `params` as CUDA documents.
                unsafe {
                    launch(f, [gx, gy, gz], [bx, by, bz], shared, stream, $pt, params, std::ptr::null_mut())
                }
            })
        }
    )*};
}

launch_cooperative! {
    cuLaunchCooperativeKernel, false;
    cuLaunchCooperativeKernel_ptsz, true;
}

/// The bytes of grid save area ([`ptxvk_abi::system::GridSave`]) by which the occupancy
/// of a kernel with grid barriers is counted ([`occupancy`]).
const GRID_SAVE_BUDGET: u64 = 16 << 20;

/// The most blocks of one grid the runtime reports for a kernel with grid barriers:
/// Vulkan's minimum `maxComputeWorkGroupCount[0]`, one dispatch of a phase.
const GRID_SYNC_BLOCKS: u64 = 65_535;

/// Blocks of `block_size` threads active at once on one "multiprocessor", the figure
/// clients multiply by `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT` to size grids and to
/// bound cooperative launches (CUDA Programming Guide, *Grid Synchronization*).
///
/// - A kernel without grid barriers: the blocks resident together (2,048 threads, 32
///   blocks, the device's shared memory).
/// - A kernel with grid barriers runs them as phases (`ptxvk_lower::pass::split_grid`):
///   at a barrier each block is saved to the launch's grid save area and ends, so its
///   blocks need not be resident together, and what bounds the blocks that take part in
///   one barrier is the memory that holds them. The figure is the blocks whose save
///   fits [`GRID_SAVE_BUDGET`] (at least the resident figure, at most
///   [`GRID_SYNC_BLOCKS`]). Clients that refuse or shrink cooperative grids beyond
///   occupancy x multiprocessors (cuda.core, hence numba-cuda; CuPy) then accept the
///   grids ptxvk runs; a larger cooperative grid still runs, memory permitting.
fn occupancy(
    d: &Driver,
    f: &Function,
    block_size: c_int,
    dynamic_shared: usize,
) -> Result<c_int, CUresult> {
    let resident = resident_blocks(d, f, block_size, dynamic_shared)?;
    let kernel = f.kernel()?;
    let info = kernel.info();
    let Some(phases) = info.grid_phases else { return Ok(resident) };
    let saved = ptxvk_abi::system::GridSave::blocks_within(
        GRID_SAVE_BUDGET,
        block_size as u64,
        u64::from(info.static_shared_bytes) + dynamic_shared as u64,
        u64::from(phases.record_bytes),
    );
    let sms = crate::device::MULTIPROCESSORS as u64;
    Ok((saved / sms).clamp(resident as u64, GRID_SYNC_BLOCKS / sms) as c_int)
}

/// Blocks of `block_size` threads resident together on one "multiprocessor": 2,048
/// threads, 32 blocks, the device's shared memory.
fn resident_blocks(
    d: &Driver,
    f: &Function,
    block_size: c_int,
    dynamic_shared: usize,
) -> Result<c_int, CUresult> {
    let block = u32::try_from(block_size)
        .ok()
        .filter(|&b| b > 0)
        .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    let kernel = f.kernel()?;
    let info = kernel.info();
    let shared = u64::from(info.static_shared_bytes) + dynamic_shared as u64;
    let limit = u64::from(d.device().info().limits.max_shared_memory_bytes);
    let by_threads = 2048 / u64::from(block);
    // A window in device memory takes no on-chip memory.
    let by_shared = if info.shared_in_device_memory {
        u64::MAX
    } else {
        limit.checked_div(shared).unwrap_or(u64::MAX)
    };
    Ok(by_threads.min(by_shared).min(32) as c_int)
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    blocks: *mut c_int,
    f: usize,
    block_size: c_int,
    dynamic_shared: usize,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let func = crate::module::function_of(d, f)?;
        // SAFETY: `blocks` is null or writable (CUDA's contract).
        unsafe { out(blocks, occupancy(d, &func, block_size, dynamic_shared)?) }
    })
}

/// `cuOccupancyAvailableDynamicSMemPerBlock`: the dynamic shared memory each of
/// `blocks` blocks of `block_size` threads can have with all of them resident, by the
/// occupancy model of [`occupancy`] (0 when that many blocks cannot be resident).
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyAvailableDynamicSMemPerBlock(
    bytes: *mut usize,
    f: usize,
    blocks: c_int,
    block_size: c_int,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let func = crate::module::function_of(d, f)?;
        if blocks <= 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let info = func.kernel()?.info();
        let limit = u64::from(crate::module::shared_limit(d, info));
        let fixed = u64::from(info.static_shared_bytes);
        let available = if info.grid_phases.is_some() {
            // Blocks are saved, not resident (`occupancy`): the largest dynamic size
            // (occupancy falls as it grows) with which `blocks` still count.
            let fits = |dynamic: u64| {
                occupancy(d, &func, block_size, dynamic as usize).map(|n| n >= blocks)
            };
            let (mut fit, mut unfit) = (0, limit.saturating_sub(fixed) + 1);
            if !fits(0)? {
                unfit = 0;
            }
            while fit + 1 < unfit {
                let mid = fit + (unfit - fit) / 2;
                if fits(mid)? {
                    fit = mid;
                } else {
                    unfit = mid;
                }
            }
            fit
        } else if blocks > occupancy(d, &func, block_size, 0)? {
            0
        } else {
            (limit / blocks as u64).saturating_sub(fixed)
        };
        // SAFETY: `bytes` is null or writable (CUDA's contract).
        unsafe { out(bytes, available as usize) }
    })
}

/// `cuOccupancyMaxPotentialBlockSize`: the block size (a multiple of the warp size, up
/// to the kernel's limit and `block_limit` when non-zero) with the most resident
/// threads by [`resident_blocks`] (grid barriers do not change what is resident), the
/// largest such on ties, and the grid that fills the device with it. The dynamic
/// shared memory of a block size comes from `smem_of` when given, else is
/// `dynamic_shared`.
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSize(
    min_grid: *mut c_int,
    block: *mut c_int,
    f: usize,
    smem_of: Option<unsafe extern "C" fn(c_int) -> usize>,
    dynamic_shared: usize,
    block_limit: c_int,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let func = crate::module::function_of(d, f)?;
        let max = crate::module::max_threads_per_block(d, &func)?;
        let limit = if block_limit > 0 { max.min(block_limit as u32) } else { max };
        // Resident blocks at one block size, with its dynamic shared memory.
        let resident = |size: c_int| {
            // SAFETY: the callback takes a block size and returns bytes (CUDA's contract).
            let smem = smem_of.map_or(dynamic_shared, |cb| unsafe { cb(size) });
            resident_blocks(d, &func, size, smem).map(|blocks| (blocks, size))
        };
        // Whole warps, largest first, so that ties keep the larger block.
        let mut best = (0 as c_int, 0 as c_int);
        for size in (1..=limit / 32).rev().map(|w| (w * 32) as c_int) {
            let (blocks, size) = resident(size)?;
            if i64::from(blocks) * i64::from(size) > i64::from(best.0) * i64::from(best.1) {
                best = (blocks, size);
            }
        }
        if best.1 == 0 {
            // No whole warp fits (a limit below one warp): the limit itself.
            best = resident(limit.max(1) as c_int)?;
        }
        let sms = crate::device::MULTIPROCESSORS;
        // SAFETY: both are null or writable (CUDA's contract).
        unsafe {
            out(min_grid, best.0 * sms)?;
            out(block, best.1)
        }
    })
}

/// `cuOccupancyMaxPotentialBlockSizeWithFlags`: the flags only concern caching
/// preferences on NVIDIA hardware.
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxPotentialBlockSizeWithFlags(
    min_grid: *mut c_int,
    block: *mut c_int,
    f: usize,
    smem_of: Option<unsafe extern "C" fn(c_int) -> usize>,
    dynamic_shared: usize,
    block_limit: c_int,
    _flags: c_uint,
) -> CUresult {
    // SAFETY: forwarded under the same contract.
    unsafe {
        cuOccupancyMaxPotentialBlockSize(min_grid, block, f, smem_of, dynamic_shared, block_limit)
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    blocks: *mut c_int,
    f: usize,
    block_size: c_int,
    dynamic_shared: usize,
    _flags: c_uint,
) -> CUresult {
    // SAFETY: forwarded.
    unsafe { cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, block_size, dynamic_shared) }
}
