//! Streams, events and host functions.
//!
//! `CUstream` 0 is the default stream: the legacy stream, or the calling thread's own
//! stream in the `_ptsz`/`_ptds` entry points; `CU_STREAM_LEGACY` (1) and
//! `CU_STREAM_PER_THREAD` (2) name them explicitly.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::Arc;

use cudarc::driver::sys::CUresult;
use ptxvk::{Event, Stream, StreamKind};

use crate::objects::{StreamEntry, StreamRef};
use crate::state::{driver, stream_of, Driver, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD};
use crate::{entry, out, vk_code};

const CU_STREAM_NON_BLOCKING: c_uint = 1;

impl StreamRef {
    pub(crate) fn get(&self) -> &Stream {
        match self {
            StreamRef::Created(e) => &e.stream,
            StreamRef::Default(s) => s,
        }
    }
}

/// The stream `handle` names, to enqueue work that cannot be captured on: a capturing
/// stream refuses it (`crate::graph`).
pub(crate) fn work_stream(
    d: &Driver,
    handle: usize,
    per_thread: bool,
) -> Result<StreamRef, CUresult> {
    let s = stream_of(d, handle, per_thread)?;
    crate::graph::refuse_during_capture(&s)?;
    Ok(s)
}

fn create(handle: *mut usize, flags: c_uint, priority: c_int) -> Result<(), CUresult> {
    let d = driver()?;
    crate::device::current()?;
    if flags & !CU_STREAM_NON_BLOCKING != 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let kind = if flags & CU_STREAM_NON_BLOCKING != 0 {
        StreamKind::NonBlocking
    } else {
        StreamKind::Blocking
    };
    let stream = d.device().vk().create_stream(kind, priority).map_err(vk_code)?;
    let h = d.streams.insert(StreamEntry { stream, flags, priority, capture: Default::default() });
    // SAFETY: `handle` is null or writable (CUDA's contract).
    unsafe { out(handle, h) }
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(handle: *mut usize, flags: c_uint) -> CUresult {
    entry(|| create(handle, flags, 0))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    handle: *mut usize,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    entry(|| create(handle, flags, priority))
}

/// Destroying a stream with pending work lets the work finish first (CUDA's semantics).
#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy_v2(handle: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        d.streams.remove(handle).map(drop).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
    })
}

macro_rules! stream_fns {
    ($($name:ident, $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(handle: usize) -> CUresult {
            entry(|| stream_fns!(@body $name handle $pt))
        }
    )*};
    (@body cuStreamSynchronize $h:ident $pt:expr) => { synchronize($h, $pt) };
    (@body cuStreamSynchronize_ptsz $h:ident $pt:expr) => { synchronize($h, $pt) };
    (@body cuStreamQuery $h:ident $pt:expr) => { query($h, $pt) };
    (@body cuStreamQuery_ptsz $h:ident $pt:expr) => { query($h, $pt) };
}

fn synchronize(handle: usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    work_stream(d, handle, per_thread)?.get().synchronize().map_err(vk_code)
}

fn query(handle: usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    match work_stream(d, handle, per_thread)?.get().query().map_err(vk_code)? {
        true => Ok(()),
        false => Err(CUresult::CUDA_ERROR_NOT_READY),
    }
}

stream_fns! {
    cuStreamSynchronize, false;
    cuStreamSynchronize_ptsz, true;
    cuStreamQuery, false;
    cuStreamQuery_ptsz, true;
}

/// `cuStreamWaitEvent`; on a capturing stream, or for an event recorded in a capture, a
/// join, fork or event wait node (`crate::graph::wait_event`).
fn wait_event(
    handle: usize,
    event: usize,
    flags: c_uint,
    per_thread: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    let e = d.events.get(event).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    if flags & !crate::graph::EVENT_EXTERNAL != 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let s = stream_of(d, handle, per_thread)?;
    if crate::graph::wait_event(d, &s, event, flags)? {
        return Ok(());
    }
    if let Some(result) = crate::ipc::stream_wait_event(d, &s, event) {
        return result;
    }
    s.get().wait_event(&e).map_err(vk_code)
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitEvent(handle: usize, event: usize, flags: c_uint) -> CUresult {
    entry(|| wait_event(handle, event, flags, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamWaitEvent_ptsz(
    handle: usize,
    event: usize,
    flags: c_uint,
) -> CUresult {
    entry(|| wait_event(handle, event, flags, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCtx(handle: usize, ctx: *mut usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        stream_of(d, handle, false)?;
        let primary = d.primary.lock().unwrap_or_else(std::sync::PoisonError::into_inner).handle;
        let c = crate::device::current()
            .ok()
            .or(primary)
            .ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)?;
        // SAFETY: `ctx` is null or writable (CUDA's contract).
        unsafe { out(ctx, c) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetFlags(handle: usize, flags: *mut c_uint) -> CUresult {
    entry(|| {
        let d = driver()?;
        let f = match stream_of(d, handle, false)? {
            StreamRef::Created(e) => e.flags,
            StreamRef::Default(_) => 0,
        };
        // SAFETY: `flags` is null or writable (CUDA's contract).
        unsafe { out(flags, f) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetPriority(handle: usize, priority: *mut c_int) -> CUresult {
    entry(|| {
        let d = driver()?;
        let p = match stream_of(d, handle, false)? {
            StreamRef::Created(e) => e.priority,
            StreamRef::Default(_) => 0,
        };
        // SAFETY: `priority` is null or writable (CUDA's contract).
        unsafe { out(priority, p) }
    })
}

fn is_capturing(handle: usize, status: *mut c_int, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    let s = stream_of(d, handle, per_thread)?;
    // SAFETY: `status` is null or writable (CUDA's contract).
    unsafe { out(status, crate::graph::status(&s)) }
}

/// Whether the stream is capturing (`crate::graph`).
#[no_mangle]
pub unsafe extern "C" fn cuStreamIsCapturing(handle: usize, status: *mut c_int) -> CUresult {
    entry(|| is_capturing(handle, status, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamIsCapturing_ptsz(handle: usize, status: *mut c_int) -> CUresult {
    entry(|| is_capturing(handle, status, true))
}

/// Enqueues a host function (a `cuLaunchHostFunc` or a graph's host node) on `s`.
pub(crate) fn enqueue_host(s: &StreamRef, call: crate::objects::HostOp) -> Result<(), CUresult> {
    s.get()
        .launch_host_func(Box::new(move || {
            let crate::objects::HostOp { f, data } = call;
            // SAFETY: the client's function with its own argument, called once on a thread
            // of the driver, as `cuLaunchHostFunc` documents.
            unsafe { f(data as *mut c_void) }
        }))
        .map_err(vk_code)
}

/// `cuLaunchHostFunc`; a host node when the stream is capturing.
fn host_func(
    handle: usize,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
    per_thread: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    let f = f.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    let call = crate::objects::HostOp { f, data: data as usize };
    let s = stream_of(d, handle, per_thread)?;
    if crate::graph::record(&s, || crate::objects::Op::Host(call))? {
        return Ok(());
    }
    enqueue_host(&s, call)
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchHostFunc(
    handle: usize,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
) -> CUresult {
    entry(|| host_func(handle, f, data, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchHostFunc_ptsz(
    handle: usize,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
) -> CUresult {
    entry(|| host_func(handle, f, data, true))
}

/// `CU_HOST_TASK_BLOCKING` / `CU_HOST_TASK_SPINWAIT`: how the thread running host
/// functions waits for them; either is met by the runtime's callback thread.
const HOST_TASK_SYNC_MODES: std::ops::RangeInclusive<c_uint> = 0..=1;

/// CUDA 13.1's `cuLaunchHostFunc_v2`: a synchronization mode besides.
#[no_mangle]
pub unsafe extern "C" fn cuLaunchHostFunc_v2(
    handle: usize,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
    sync_mode: c_uint,
) -> CUresult {
    entry(|| host_func_with_sync_mode(handle, f, data, sync_mode, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchHostFunc_v2_ptsz(
    handle: usize,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
    sync_mode: c_uint,
) -> CUresult {
    entry(|| host_func_with_sync_mode(handle, f, data, sync_mode, true))
}

/// The `_v2` forms: [`host_func`] once the synchronization mode is one CUDA names.
fn host_func_with_sync_mode(
    handle: usize,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
    sync_mode: c_uint,
    per_thread: bool,
) -> Result<(), CUresult> {
    if !HOST_TASK_SYNC_MODES.contains(&sync_mode) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    host_func(handle, f, data, per_thread)
}

/// A stream callback and its arguments.
struct Callback {
    f: unsafe extern "C" fn(usize, CUresult, *mut c_void),
    stream: usize,
    data: usize,
}

/// `cuStreamAddCallback`: not capturable (CUDA's rule too).
fn add_callback(
    handle: usize,
    f: Option<unsafe extern "C" fn(usize, CUresult, *mut c_void)>,
    data: *mut c_void,
    flags: c_uint,
    per_thread: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    if flags != 0 {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let f = f.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    let call = Callback { f, stream: handle, data: data as usize };
    work_stream(d, handle, per_thread)?
        .get()
        .launch_host_func(Box::new(move || {
            let Callback { f, stream, data } = call;
            // SAFETY: the client's callback with its stream, a status and its argument,
            // as `cuStreamAddCallback` documents.
            unsafe { f(stream, CUresult::CUDA_SUCCESS, data as *mut c_void) }
        }))
        .map_err(vk_code)
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamAddCallback(
    handle: usize,
    f: Option<unsafe extern "C" fn(usize, CUresult, *mut c_void)>,
    data: *mut c_void,
    flags: c_uint,
) -> CUresult {
    entry(|| add_callback(handle, f, data, flags, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamAddCallback_ptsz(
    handle: usize,
    f: Option<unsafe extern "C" fn(usize, CUresult, *mut c_void)>,
    data: *mut c_void,
    flags: c_uint,
) -> CUresult {
    entry(|| add_callback(handle, f, data, flags, true))
}

// Events.

const CU_EVENT_DISABLE_TIMING: c_uint = 2;

#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(handle: *mut usize, flags: c_uint) -> CUresult {
    entry(|| {
        let d = driver()?;
        let timing = flags & CU_EVENT_DISABLE_TIMING == 0;
        let e = d.device().create_event(timing).map_err(crate::code)?;
        let created = d.events.insert(e);
        if let Err(e) = crate::ipc::event_created(created, flags) {
            d.events.remove(created);
            return Err(e);
        }
        // SAFETY: `handle` is null or writable (CUDA's contract).
        unsafe { out(handle, created) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventDestroy_v2(handle: usize) -> CUresult {
    entry(|| {
        driver()?.events.remove(handle).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        crate::ipc::event_destroyed(handle);
        Ok(())
    })
}

fn event(d: &Driver, handle: usize) -> Result<Arc<Event>, CUresult> {
    d.events.get(handle).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
}

/// `cuEventRecord`; on a capturing stream, a capture point or (`external`) an event
/// record node (`crate::graph::record_event`).
fn record(handle: usize, stream: usize, per_thread: bool, external: bool) -> Result<(), CUresult> {
    let d = driver()?;
    let e = event(d, handle)?;
    let s = stream_of(d, stream, per_thread)?;
    if crate::graph::record_event(d, &s, handle, external)? {
        return Ok(());
    }
    s.get().record(&e).map_err(vk_code)?;
    crate::ipc::event_recorded(handle, &s)
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecord(handle: usize, stream: usize) -> CUresult {
    entry(|| record(handle, stream, false, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecord_ptsz(handle: usize, stream: usize) -> CUresult {
    entry(|| record(handle, stream, true, false))
}

/// `cuEventRecordWithFlags`: `CU_EVENT_RECORD_DEFAULT` (0) records as
/// [`cuEventRecord`]; `CU_EVENT_RECORD_EXTERNAL` (1) makes an event record node when the
/// stream is capturing.
fn record_with_flags(
    handle: usize,
    stream: usize,
    flags: c_uint,
    per_thread: bool,
) -> Result<(), CUresult> {
    match flags {
        0 | 1 => record(handle, stream, per_thread, flags == crate::graph::EVENT_EXTERNAL),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecordWithFlags(
    handle: usize,
    stream: usize,
    flags: c_uint,
) -> CUresult {
    entry(|| record_with_flags(handle, stream, flags, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventRecordWithFlags_ptsz(
    handle: usize,
    stream: usize,
    flags: c_uint,
) -> CUresult {
    entry(|| record_with_flags(handle, stream, flags, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventQuery(handle: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        if let Some(result) = crate::ipc::event_query(handle) {
            return result;
        }
        match event(d, handle)?.query().map_err(vk_code)? {
            true => Ok(()),
            false => Err(CUresult::CUDA_ERROR_NOT_READY),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventSynchronize(handle: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        if let Some(result) = crate::ipc::event_synchronize(d, handle) {
            return result;
        }
        event(d, handle)?.synchronize().map_err(vk_code)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(ms: *mut f32, start: usize, end: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        let (s, e) = (event(d, start)?, event(d, end)?);
        let t = Event::elapsed_ms(&s, &e).map_err(|err| match err {
            ptxvk::vk::Error::NotReady => CUresult::CUDA_ERROR_NOT_READY,
            ptxvk::vk::Error::InvalidUse(_) => CUresult::CUDA_ERROR_INVALID_HANDLE,
            err => vk_code(err),
        })?;
        // SAFETY: `ms` is null or writable (CUDA's contract).
        unsafe { out(ms, t as f32) }
    })
}

/// The CUDA 12.8 variant of [`cuEventElapsedTime`], with the same meaning here.
#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime_v2(ms: *mut f32, start: usize, end: usize) -> CUresult {
    // SAFETY: forwarded under the same contract.
    unsafe { cuEventElapsedTime(ms, start, end) }
}

/// `cuStreamGetId`: a number unique to the stream (its handle; the legacy and
/// per-thread default streams are 1 and 2, their `CU_STREAM_LEGACY`/`_PER_THREAD`
/// handles).
fn stream_id(handle: usize, id: *mut u64, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    stream_of(d, handle, per_thread)?;
    let value = match handle {
        0 if per_thread => CU_STREAM_PER_THREAD,
        0 => CU_STREAM_LEGACY,
        h => h,
    };
    // SAFETY: `id` is null or writable (CUDA's contract).
    unsafe { out(id, value as u64) }
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetId(stream: usize, id: *mut u64) -> CUresult {
    entry(|| stream_id(stream, id, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetId_ptsz(stream: usize, id: *mut u64) -> CUresult {
    entry(|| stream_id(stream, id, true))
}

/// `cuStreamGetDevice`: device 0, the only one.
fn stream_device(handle: usize, dev: *mut c_int, per_thread: bool) -> Result<(), CUresult> {
    stream_of(driver()?, handle, per_thread)?;
    // SAFETY: `dev` is null or writable (CUDA's contract).
    unsafe { out(dev, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetDevice(stream: usize, dev: *mut c_int) -> CUresult {
    entry(|| stream_device(stream, dev, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetDevice_ptsz(stream: usize, dev: *mut c_int) -> CUresult {
    entry(|| stream_device(stream, dev, true))
}
