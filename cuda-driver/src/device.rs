//! Devices and contexts.
//!
//! There is one device (ordinal 0), ptxvk's default Vulkan device. Contexts are tokens:
//! every context shares the device's memory and streams (CUDA would give each its own
//! address space); the primary context is reference-counted as CUDA's. Each thread has a
//! stack of current contexts.
//!
//! # Sticky errors
//!
//! A kernel that faults (an illegal or misaligned address, a trap, a failed `assert`)
//! leaves its context unusable, as CUDA's do ("sticky" errors, CUDA C++ Programming
//! Guide, *Error Checking*): the call that reports the fault marks the calling thread's
//! current context (or the primary context when none is current), and every later call
//! made in it returns the same code (`state::driver`) until the context is
//! destroyed or, for the primary context, reset (`cuDevicePrimaryCtxReset`). What does
//! not need a usable context still works: device queries, creating, destroying and
//! switching contexts, and the error strings. Another context is unaffected.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::{Mutex, MutexGuard, PoisonError};

use cudarc::driver::sys::{CUctxCreateParams, CUresult};

use crate::objects::{Context, Primary};
use crate::state::{driver, driver_in_any_state, Driver, CURRENT};
use crate::{entry, out};

/// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`: a Vulkan device is one multiprocessor
/// here (the occupancy model's unit; Vulkan does not say how many workgroups run at
/// once).
pub(crate) const MULTIPROCESSORS: c_int = 1;

impl Context {
    fn new(flags: c_uint, primary: bool) -> Context {
        Context { flags, primary, sticky: Mutex::new(None) }
    }

    pub(crate) fn sticky(&self) -> MutexGuard<'_, Option<CUresult>> {
        self.sticky.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Primary {
    /// The primary context's handle, created in `contexts` if it does not exist yet;
    /// and whether it was created now.
    fn get_or_create(&mut self, contexts: &crate::handles::Table<Context>) -> (usize, bool) {
        match self.handle {
            Some(h) => (h, false),
            None => {
                let h = contexts.insert(Context::new(self.flags, true));
                self.handle = Some(h);
                (h, true)
            }
        }
    }
}

/// The compute capability reported (`PTXVK_CUDA_CC=MAJOR.MINOR`, default 8.0: what the
/// PTX that clients generate for it can use is what ptxvk compiles).
pub(crate) fn compute_capability() -> (c_int, c_int) {
    std::env::var("PTXVK_CUDA_CC")
        .ok()
        .and_then(|v| {
            let (major, minor) = v.trim().split_once('.')?;
            Some((major.parse().ok()?, minor.parse().ok()?))
        })
        .unwrap_or((8, 0))
}

/// The most threads a block may have along `axis`: the device's limit, capped at
/// CUDA's (`ptxvk::vk::CUDA_MAX_BLOCK`), which launches enforce too.
fn block_limit(limits: &ptxvk::vk::Limits, axis: usize) -> c_int {
    let most = limits.max_workgroup_size[axis].min(ptxvk::vk::CUDA_MAX_BLOCK[axis]);
    c_int::try_from(most).unwrap_or(c_int::MAX)
}

/// The driver, checking that `dev` is the one device.
pub(crate) fn check_device(dev: c_int) -> Result<&'static Driver, CUresult> {
    let d = driver_in_any_state()?;
    if dev != 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_DEVICE);
    }
    Ok(d)
}

/// The current context's handle, or `CUDA_ERROR_INVALID_CONTEXT` when none is current
/// (calls that need a context).
pub(crate) fn current() -> Result<usize, CUresult> {
    let d = driver_in_any_state()?;
    let handle = CURRENT.with(|c| c.borrow().last().copied());
    match handle {
        Some(h) if d.contexts.get(h).is_some() => Ok(h),
        _ => Err(CUresult::CUDA_ERROR_INVALID_CONTEXT),
    }
}

/// Makes the primary context (retained once, for the whole process) current on the
/// calling thread: what NVIDIA's runtime does before its first call that needs one.
pub(crate) fn make_primary_current() -> Result<usize, CUresult> {
    let d = check_device(0)?;
    let mut p = d.primary.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // Retained once for the whole process: a reference only when it is created.
    let (handle, created) = p.get_or_create(&d.contexts);
    if created {
        p.refs += 1;
    }
    drop(p);
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        match c.last_mut() {
            Some(top) => *top = handle,
            None => c.push(handle),
        }
    });
    Ok(handle)
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    // SAFETY: `count` is null or writable (CUDA's contract).
    entry(|| unsafe { out(count, driver_in_any_state().map(|_| 1)?) })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CUresult {
    entry(|| {
        check_device(ordinal)?;
        // SAFETY: `device` is null or writable (CUDA's contract).
        unsafe { out(device, 0) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: c_int) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        let len = usize::try_from(len).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if name.is_null() || len == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let text = format!("ptxvk on {}", d.device().info().name);
        let bytes = text.as_bytes();
        let n = bytes.len().min(len - 1);
        // SAFETY: `name` is writable for `len` bytes (CUDA's contract); n + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), name.cast::<u8>(), n);
            name.add(n).write(0);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: c_int) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        // SAFETY: `bytes` is null or writable (CUDA's contract).
        unsafe { out(bytes, d.memory_bytes() as usize) }
    })
}

/// A UUID for the device: stable for one device and driver, made from its PCI ids and
/// name (Vulkan's `deviceUUID` is not queried).
pub(crate) fn uuid(d: &Driver) -> [u8; 16] {
    let device = d.device();
    let info = device.info();
    let mut bytes = [0u8; 16];
    bytes[..4].copy_from_slice(&info.vendor_id.to_le_bytes());
    bytes[4..8].copy_from_slice(&info.device_id.to_le_bytes());
    // FNV-1a of the name.
    let hash = info
        .name
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    bytes[8..].copy_from_slice(&hash.to_le_bytes());
    bytes
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid(id: *mut [u8; 16], dev: c_int) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        // SAFETY: `id` is null or writable for 16 bytes (CUDA's contract).
        unsafe { out(id, uuid(d)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(id: *mut [u8; 16], dev: c_int) -> CUresult {
    // SAFETY: forwarded under the same contract.
    unsafe { cuDeviceGetUuid(id, dev) }
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceComputeCapability(
    major: *mut c_int,
    minor: *mut c_int,
    dev: c_int,
) -> CUresult {
    entry(|| {
        check_device(dev)?;
        let (ma, mi) = compute_capability();
        // SAFETY: both are null or writable (CUDA's contract).
        unsafe {
            out(major, ma)?;
            out(minor, mi)
        }
    })
}

/// `cuDeviceGetAttribute`: Vulkan limits where they correspond, else the documented
/// constants of a CUDA 8.0 device with one multiprocessor per Vulkan device.
pub(crate) fn attribute(d: &Driver, attrib: c_int) -> Result<c_int, CUresult> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let device = d.device();
    let info = device.info();
    let limits = &info.limits;
    let clamp = |v: u64| c_int::try_from(v).unwrap_or(c_int::MAX);
    let (major, minor) = compute_capability();
    let value = match attrib {
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK as c_int => {
            clamp(limits.max_workgroup_invocations.into())
        }
        // The device's limits, and never more than CUDA's (z is at most 64).
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X as c_int => block_limit(limits, 0),
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y as c_int => block_limit(limits, 1),
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z as c_int => block_limit(limits, 2),
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X as c_int => c_int::MAX,
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y as c_int => 65535,
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z as c_int => 65535,
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK as c_int
            || a == A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as c_int
            || a == A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR as c_int =>
        {
            clamp(limits.max_shared_memory_bytes.into())
        }
        a if a == A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY as c_int => 65536,
        a if a == A::CU_DEVICE_ATTRIBUTE_WARP_SIZE as c_int => 32,
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_PITCH as c_int => c_int::MAX,
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK as c_int
            || a == A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR as c_int =>
        {
            65536
        }
        a if a == A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE as c_int => 1_000_000,
        a if a == A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE as c_int => 1_000_000,
        a if a == A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH as c_int => 64,
        a if a == A::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT as c_int => 512,
        a if a == A::CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT as c_int => 32,
        a if a == A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT as c_int => MULTIPROCESSORS,
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR as c_int => 2048,
        a if a == A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR as c_int => 32,
        a if a == A::CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT as c_int => 0,
        a if a == A::CU_DEVICE_ATTRIBUTE_INTEGRATED as c_int => {
            c_int::from(d.device().vk().unified_memory())
        }
        a if a == A::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY as c_int => 1,
        a if a == A::CU_DEVICE_ATTRIBUTE_COMPUTE_MODE as c_int => 0,
        a if a == A::CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS as c_int => 1,
        a if a == A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID as c_int => 0,
        a if a == A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID as c_int => 0,
        a if a == A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID as c_int => 0,
        a if a == A::CU_DEVICE_ATTRIBUTE_TCC_DRIVER as c_int => 0,
        a if a == A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT as c_int => 1,
        a if a == A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING as c_int => 1,
        a if a == A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as c_int => major,
        a if a == A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as c_int => minor,
        a if a == A::CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED as c_int => 0,
        a if a == A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY as c_int => 1,
        a if a == A::CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO as c_int => 2,
        // Grids of any size (`launch::check_cooperative`).
        a if a == A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH as c_int => 1,
        a if a == A::CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED as c_int => {
            c_int::from(d.device().vk().can_register_host())
        }
        a if a == A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED as c_int => 1,
        a if a == A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE as c_int => 4 << 20,
        a if a == A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK as c_int => 0,
        a if (0..A::CU_DEVICE_ATTRIBUTE_MAX as c_int).contains(&a) => 0,
        _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    };
    Ok(value)
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attrib: c_int,
    dev: c_int,
) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        // SAFETY: `value` is null or writable (CUDA's contract).
        unsafe { out(value, attribute(d, attrib)?) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut usize, dev: c_int) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        let mut p = d.primary.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (handle, _) = p.get_or_create(&d.contexts);
        p.refs += 1;
        // SAFETY: `ctx` is null or writable (CUDA's contract).
        unsafe { out(ctx, handle) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: c_int) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        let mut p = d.primary.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if p.refs == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        // The primary context stays usable (its handle valid) after the last release, as
        // numba and cuda-python release and re-retain it; its resources are the device's.
        p.refs -= 1;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxSetFlags_v2(dev: c_int, flags: c_uint) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        d.primary.lock().unwrap_or_else(std::sync::PoisonError::into_inner).flags = flags;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    dev: c_int,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        let p = d.primary.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // SAFETY: both are null or writable (CUDA's contract).
        unsafe {
            out(flags, p.flags)?;
            out(active, c_int::from(p.refs > 0))
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxReset_v2(dev: c_int) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        let primary = d.primary.lock().unwrap_or_else(std::sync::PoisonError::into_inner).handle;
        let context = primary.and_then(|h| d.contexts.get(h));
        let faulted = context.as_ref().is_some_and(|c| c.sticky().is_some());
        if d.device_lost() {
            // A lost device has nothing left to wait for: a new one replaces it
            // (`crate::state`, *Device loss*).
            d.reopen()?;
        } else if !faulted {
            // The fault's own launches have ended (the report came from waiting for
            // them); waiting again would report the work of other contexts' streams here.
            d.device().synchronize().map_err(crate::code)?;
        }
        if let Some(h) = primary {
            crate::context_storage::context_gone(h);
        }
        if let Some(context) = context {
            *context.sticky() = None;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v2(ctx: *mut usize, flags: c_uint, dev: c_int) -> CUresult {
    entry(|| {
        let d = check_device(dev)?;
        let handle = d.contexts.insert(Context::new(flags, false));
        CURRENT.with(|c| c.borrow_mut().push(handle));
        // SAFETY: `ctx` is null or writable (CUDA's contract).
        unsafe { out(ctx, handle) }
    })
}

/// `cuCtxCreate_v3`: with execution-affinity parameters, which no device here supports
/// (`cuDeviceGetExecAffinitySupport` reports none).
#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v3(
    ctx: *mut usize,
    affinity: *const c_void,
    count: c_int,
    flags: c_uint,
    dev: c_int,
) -> CUresult {
    if count < 0 || (count > 0 && affinity.is_null()) {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    if count > 0 {
        return CUresult::CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { cuCtxCreate_v2(ctx, flags, dev) }
}

/// `cuCtxCreate_v4` (CUDA 12.5): `params` may be null; execution affinity and CUDA in
/// graphics contexts (`cigParams`) are not supported.
#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v4(
    ctx: *mut usize,
    params: *const CUctxCreateParams,
    flags: c_uint,
    dev: c_int,
) -> CUresult {
    if !params.is_null() {
        // SAFETY: non-null, so readable by the caller's contract.
        let p = unsafe { params.read() };
        if p.numExecAffinityParams < 0 {
            return CUresult::CUDA_ERROR_INVALID_VALUE;
        }
        if p.numExecAffinityParams > 0 {
            return CUresult::CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
        }
        if !p.cigParams.is_null() {
            return CUresult::CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { cuCtxCreate_v2(ctx, flags, dev) }
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxDestroy_v2(ctx: usize) -> CUresult {
    entry(|| {
        let d = driver_in_any_state()?;
        match d.contexts.get(ctx) {
            Some(c) if !c.primary => {
                d.device().synchronize().map_err(crate::code)?;
                d.contexts.remove(ctx);
                crate::context_storage::context_gone(ctx);
                CURRENT.with(|c| c.borrow_mut().retain(|&h| h != ctx));
                Ok(())
            }
            _ => Err(CUresult::CUDA_ERROR_INVALID_CONTEXT),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut usize) -> CUresult {
    entry(|| {
        driver_in_any_state()?;
        let handle = CURRENT.with(|c| c.borrow().last().copied()).unwrap_or(0);
        // SAFETY: `ctx` is null or writable (CUDA's contract).
        unsafe { out(ctx, handle) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: usize) -> CUresult {
    entry(|| {
        let d = driver_in_any_state()?;
        if ctx != 0 && d.contexts.get(ctx).is_none() {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        CURRENT.with(|c| {
            let mut stack = c.borrow_mut();
            stack.pop();
            if ctx != 0 {
                stack.push(ctx);
            }
        });
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(ctx: usize) -> CUresult {
    entry(|| {
        let d = driver_in_any_state()?;
        if d.contexts.get(ctx).is_none() {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        CURRENT.with(|c| c.borrow_mut().push(ctx));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(ctx: *mut usize) -> CUresult {
    entry(|| {
        driver_in_any_state()?;
        let popped =
            CURRENT.with(|c| c.borrow_mut().pop()).ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)?;
        if !ctx.is_null() {
            // SAFETY: `ctx` is writable (CUDA's contract).
            unsafe { out(ctx, popped)? };
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice(dev: *mut c_int) -> CUresult {
    entry(|| {
        current()?;
        // SAFETY: `dev` is null or writable (CUDA's contract).
        unsafe { out(dev, 0) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetFlags(flags: *mut c_uint) -> CUresult {
    entry(|| {
        let h = current()?;
        let f = driver_in_any_state()?.contexts.get(h).map_or(0, |c| c.flags);
        // SAFETY: `flags` is null or writable (CUDA's contract).
        unsafe { out(flags, f) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetApiVersion(ctx: usize, version: *mut c_uint) -> CUresult {
    entry(|| {
        let d = driver_in_any_state()?;
        if ctx != 0 && d.contexts.get(ctx).is_none() {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        // SAFETY: `version` is null or writable (CUDA's contract).
        unsafe { out(version, crate::driver_version() as c_uint) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxSynchronize() -> CUresult {
    entry(|| {
        current()?;
        driver()?.device().synchronize().map_err(crate::code)
    })
}

/// Priorities are accepted but not honoured (one queue): the range is `[0, 0]`.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetStreamPriorityRange(
    least: *mut c_int,
    greatest: *mut c_int,
) -> CUresult {
    entry(|| {
        driver_in_any_state()?;
        // Either may be null (CUDA's documentation).
        for p in [least, greatest] {
            if !p.is_null() {
                // SAFETY: non-null and writable (CUDA's contract).
                unsafe { out(p, 0)? };
            }
        }
        Ok(())
    })
}

/// `cuCtxGetId`: a number unique to the context for the process's lifetime (its handle;
/// handles are never reused). `ctx` 0 is the current context.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetId(ctx: usize, id: *mut u64) -> CUresult {
    entry(|| {
        let d = driver_in_any_state()?;
        let h = if ctx == 0 { current()? } else { ctx };
        d.contexts.get(h).ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)?;
        // SAFETY: `id` is null or writable (CUDA's contract).
        unsafe { out(id, h as u64) }
    })
}

/// `cuCtxGetCacheConfig`: no preference (`CU_FUNC_CACHE_PREFER_NONE`); Vulkan exposes
/// no split between L1 and shared memory.
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCacheConfig(config: *mut c_int) -> CUresult {
    entry(|| {
        current()?;
        // SAFETY: `config` is null or writable (CUDA's contract).
        unsafe { out(config, 0) }
    })
}

/// `cuCtxSetCacheConfig`: accepted and without effect (see [`cuCtxGetCacheConfig`]), as
/// CUDA documents for devices with a fixed split.
#[no_mangle]
pub unsafe extern "C" fn cuCtxSetCacheConfig(config: c_int) -> CUresult {
    entry(|| {
        current()?;
        // CU_FUNC_CACHE_PREFER_NONE, _SHARED, _L1, _EQUAL.
        if (0..=3).contains(&config) {
            Ok(())
        } else {
            Err(CUresult::CUDA_ERROR_INVALID_VALUE)
        }
    })
}

/// `cuDeviceGetPCIBusId`: `domain:bus:device.function` from the PCI attributes, as
/// CUDA formats it (`0000:00:00.0` where Vulkan reports no PCI location).
#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(
    buffer: *mut c_char,
    len: c_int,
    dev: c_int,
) -> CUresult {
    use cudarc::driver::sys::CUdevice_attribute as A;
    entry(|| {
        let d = check_device(dev)?;
        let get = |a: A| attribute(d, a as c_int);
        let id = format!(
            "{:04x}:{:02x}:{:02x}.0",
            get(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            get(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            get(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
        );
        let len = usize::try_from(len).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if buffer.is_null() || len == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // Truncated to `len` bytes with its NUL, as strncpy-like CUDA calls do.
        let bytes = id.as_bytes();
        let n = bytes.len().min(len - 1);
        // SAFETY: `buffer` holds `len` bytes (CUDA's contract), and `n + 1 <= len`.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buffer, n);
            buffer.add(n).write(0);
        }
        Ok(())
    })
}

/// `CUlimit` values (cuda.h).
const CU_LIMIT_STACK_SIZE: c_int = 0;
const CU_LIMIT_PRINTF_FIFO_SIZE: c_int = 1;
const CU_LIMIT_MALLOC_HEAP_SIZE: c_int = 2;
const CU_LIMIT_MAX_L2_FETCH_GRANULARITY: c_int = 5;
const CU_LIMIT_PERSISTING_L2_CACHE_SIZE: c_int = 6;

/// The size behind a limit: ptxvk's are fixed at compile time (the recursion stack per
/// thread, the printf buffer and the device heap of `malloc`); the L2 limits are hints
/// without an equivalent (0). Device-side launches have no limits to give.
fn limit_value(limit: c_int) -> Result<usize, CUresult> {
    use ptxvk::lower::sema::RECURSION_STACK_BYTES;
    use ptxvk_abi::system;
    Ok(match limit {
        CU_LIMIT_STACK_SIZE => RECURSION_STACK_BYTES as usize,
        CU_LIMIT_PRINTF_FIFO_SIZE => system::PRINTF_CAPACITY as usize,
        CU_LIMIT_MALLOC_HEAP_SIZE => system::HEAP_BYTES as usize,
        CU_LIMIT_MAX_L2_FETCH_GRANULARITY | CU_LIMIT_PERSISTING_L2_CACHE_SIZE => 0,
        _ => return Err(CUresult::CUDA_ERROR_UNSUPPORTED_LIMIT),
    })
}

/// `cuCtxGetLimit`: see [`limit_value`].
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetLimit(value: *mut usize, limit: c_int) -> CUresult {
    entry(|| {
        current()?;
        // SAFETY: `value` is null or writable (CUDA's contract).
        unsafe { out(value, limit_value(limit)?) }
    })
}

/// `cuCtxSetLimit`: ptxvk's sizes are fixed, so a request up to the fixed size is met
/// (kernels get at least what was asked for) and a larger one is
/// CUDA_ERROR_NOT_SUPPORTED, with a message naming the size there is. The L2 hints are
/// accepted.
#[no_mangle]
pub unsafe extern "C" fn cuCtxSetLimit(limit: c_int, value: usize) -> CUresult {
    entry(|| {
        current()?;
        let have = limit_value(limit)?;
        let hint =
            matches!(limit, CU_LIMIT_MAX_L2_FETCH_GRANULARITY | CU_LIMIT_PERSISTING_L2_CACHE_SIZE);
        if hint || value <= have {
            return Ok(());
        }
        eprintln!(
            "ptxvk libcuda: cuCtxSetLimit asked for {value} bytes of limit {limit}; ptxvk's is \
             fixed at {have} bytes"
        );
        Err(CUresult::CUDA_ERROR_NOT_SUPPORTED)
    })
}

/// CUDA 13's `cuCtxGetDevice_v2`: the device of `ctx` (0: the current context).
#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice_v2(dev: *mut c_int, ctx: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        let h = if ctx == 0 { current()? } else { ctx };
        d.contexts.get(h).ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)?;
        // SAFETY: `dev` is null or writable (CUDA's contract).
        unsafe { out(dev, 0) }
    })
}

/// CUDA 13's `cuCtxSynchronize_v2`: waits for the work of `ctx` (0: the current context);
/// every context shares the device's streams, so for all of it.
#[no_mangle]
pub unsafe extern "C" fn cuCtxSynchronize_v2(ctx: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        let h = if ctx == 0 { current()? } else { ctx };
        d.contexts.get(h).ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)?;
        d.device().synchronize().map_err(crate::code)
    })
}

// Peer access. The library has one device, and CUDA defines peer access between two
// different devices: a device is not its own peer (`cuDeviceCanAccessPeer` answers 0,
// `cuDeviceGetP2PAttribute` CUDA_ERROR_INVALID_DEVICE), so peer access cannot be enabled
// between contexts (all of them on that device). Peer copies (`cuMemcpyPeer*`,
// `crate::memory`) work between any two contexts: they are device-to-device copies.

#[no_mangle]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(
    can_access: *mut c_int,
    dev: c_int,
    peer: c_int,
) -> CUresult {
    entry(|| {
        check_device(dev)?;
        check_device(peer)?;
        // SAFETY: `can_access` is null or writable (CUDA's contract).
        unsafe { out(can_access, c_int::from(dev != peer)) }
    })
}

/// `CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK` to `_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED`.
const P2P_ATTRIBUTES: std::ops::RangeInclusive<c_int> = 1..=5;

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetP2PAttribute(
    value: *mut c_int,
    attrib: c_int,
    src: c_int,
    dst: c_int,
) -> CUresult {
    entry(|| {
        check_device(src)?;
        check_device(dst)?;
        if value.is_null() || !P2P_ATTRIBUTES.contains(&attrib) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // Two valid devices are the same device here: no link to describe.
        Err(CUresult::CUDA_ERROR_INVALID_DEVICE)
    })
}

/// The current context and `peer`, both valid and different (CUDA's checks).
fn peer_context(peer: usize) -> Result<(), CUresult> {
    let d = driver_in_any_state()?;
    let own = current()?;
    if own == peer || d.contexts.get(peer).is_none() {
        return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
    }
    Ok(())
}

/// `cuCtxEnablePeerAccess`: the peer context is on the same device, which
/// `cuDeviceCanAccessPeer` says cannot be its own peer.
#[no_mangle]
pub unsafe extern "C" fn cuCtxEnablePeerAccess(peer: usize, flags: c_uint) -> CUresult {
    entry(|| {
        peer_context(peer)?;
        if flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        Err(CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
    })
}

/// `cuCtxDisablePeerAccess`: peer access is never enabled (see [`cuCtxEnablePeerAccess`]).
#[no_mangle]
pub unsafe extern "C" fn cuCtxDisablePeerAccess(peer: usize) -> CUresult {
    entry(|| {
        peer_context(peer)?;
        Err(CUresult::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
    })
}
