//! Stream capture and CUDA graphs (CUDA Programming Guide, "CUDA Graphs"; driver API
//! "Stream Management" and "Graph Management"), as far as kernels go.
//!
//! `cuStreamBeginCapture` puts a created stream into capture: kernel launches on it
//! (`cuLaunchKernel`, `cuLaunchKernelEx`, cooperative launches) are recorded, with
//! their parameter blocks copied, instead of run. `cuStreamEndCapture` makes the
//! recording a graph, `cuGraphInstantiate*` an executable graph, and `cuGraphLaunch`
//! enqueues its launches, in capture order, on any stream.
//!
//! Anything else enqueued on a capturing stream (copies, memsets, event records and
//! waits, host functions, a synchronize or query) is not captured: the call fails with
//! `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, says why on stderr, and invalidates the
//! capture, so `cuStreamEndCapture` then fails with `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`
//! rather than returning a graph that silently lacks work. The default streams cannot
//! capture. Capture modes are accepted but not enforced (calls CUDA forbids during a
//! global-mode capture, such as `cuMemAlloc`, are allowed), and graphs built node by
//! node (`cuGraphCreate`, `cuGraphAdd*Node`) are not implemented.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::sys::CUresult;

use crate::module::Function;
use crate::state::driver;
use crate::stream::{stream_of, StreamEntry, StreamRef};
use crate::{entry, out};

/// A stream's capture state.
#[derive(Default)]
pub(crate) enum Capture {
    #[default]
    Idle,
    /// Capturing into the graph of this handle (which `cuStreamGetCaptureInfo`
    /// reports and `cuStreamEndCapture` returns).
    Active(usize, Arc<Graph>),
    /// Something that cannot be captured was enqueued.
    Invalidated,
}

/// One recorded kernel launch.
#[derive(Clone)]
pub(crate) struct Launch {
    pub(crate) func: Arc<Function>,
    pub(crate) grid: [c_uint; 3],
    pub(crate) block: [c_uint; 3],
    pub(crate) shared: c_uint,
    pub(crate) params: Vec<u8>,
    /// The allocations the parameters point at, alive while the graph is.
    pub(crate) keep: Vec<ptxvk::vk::Buffer>,
}

impl Launch {
    /// Enqueues the launch on `stream`.
    pub(crate) fn run_on(&self, stream: &ptxvk::Stream) -> Result<(), CUresult> {
        self.func
            .kernel()
            .launch_params_on(
                stream,
                self.grid,
                self.block,
                self.shared,
                self.params.clone(),
                &self.keep,
            )
            .map_err(crate::code)
    }
}

/// A captured graph (`CUgraph`) or an instantiated one (`CUgraphExec`): its launches,
/// and the references it holds to user objects (an instantiated graph holds its
/// graph's too).
#[derive(Default)]
pub(crate) struct Graph {
    launches: Mutex<Vec<Launch>>,
    user_objects: Mutex<Vec<(usize, c_uint)>>,
}

impl Graph {
    fn launches(&self) -> std::sync::MutexGuard<'_, Vec<Launch>> {
        self.launches.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn user_objects(&self) -> std::sync::MutexGuard<'_, Vec<(usize, c_uint)>> {
        self.user_objects.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Graph {
    /// A destroyed graph releases its references.
    fn drop(&mut self) {
        let held = std::mem::take(&mut *self.user_objects());
        for (object, count) in held {
            let _ = release_user_object(object, count);
        }
    }
}

/// A user object (`CUuserObject`): a pointer and its destructor, called once the last
/// reference (the caller's or a graph's) is released.
pub(crate) struct UserObject {
    ptr: usize,
    destroy: unsafe extern "C" fn(*mut c_void),
    refs: Mutex<c_uint>,
}

/// Adds `count` references to user object `object`.
fn retain_user_object(object: usize, count: c_uint) -> Result<(), CUresult> {
    let d = driver()?;
    let o = d.user_objects.get(object).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    let mut refs = o.refs.lock().unwrap_or_else(PoisonError::into_inner);
    *refs = refs.checked_add(count).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    Ok(())
}

/// Drops `count` references; the last one calls the destructor (on the calling thread,
/// after every lock is released; CUDA forbids destructors to call the API).
fn release_user_object(object: usize, count: c_uint) -> Result<(), CUresult> {
    let d = driver()?;
    let o = d.user_objects.get(object).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    let last = {
        let mut refs = o.refs.lock().unwrap_or_else(PoisonError::into_inner);
        *refs = refs.checked_sub(count).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        *refs == 0
    };
    if last {
        d.user_objects.remove(object);
        // SAFETY: the destructor and pointer the client gave `cuUserObjectCreate`.
        unsafe { (o.destroy)(o.ptr as *mut c_void) };
    }
    Ok(())
}

/// `CU_USER_OBJECT_NO_DESTRUCTOR_SYNC`, the one flag `cuUserObjectCreate` takes.
const USER_OBJECT_NO_DESTRUCTOR_SYNC: c_uint = 1;
/// `CU_GRAPH_USER_OBJECT_MOVE`: the graph takes over the caller's references.
const GRAPH_USER_OBJECT_MOVE: c_uint = 1;

#[no_mangle]
pub unsafe extern "C" fn cuUserObjectCreate(
    object: *mut usize,
    ptr: *mut c_void,
    destroy: Option<unsafe extern "C" fn(*mut c_void)>,
    initial: c_uint,
    flags: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let destroy = destroy.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if initial == 0 || flags != USER_OBJECT_NO_DESTRUCTOR_SYNC {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let h = d.user_objects.insert(UserObject {
            ptr: ptr as usize,
            destroy,
            refs: Mutex::new(initial),
        });
        // SAFETY: `object` is null or writable (CUDA's contract).
        unsafe { out(object, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuUserObjectRetain(object: usize, count: c_uint) -> CUresult {
    entry(|| retain_user_object(object, count))
}

#[no_mangle]
pub unsafe extern "C" fn cuUserObjectRelease(object: usize, count: c_uint) -> CUresult {
    entry(|| release_user_object(object, count))
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphRetainUserObject(
    graph: usize,
    object: usize,
    count: c_uint,
    flags: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = d.graphs.get(graph).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        if flags & !GRAPH_USER_OBJECT_MOVE != 0 || count == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // Moving takes the caller's references; otherwise the graph adds its own.
        if flags & GRAPH_USER_OBJECT_MOVE == 0 {
            retain_user_object(object, count)?;
        } else {
            d.user_objects.get(object).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        }
        g.user_objects().push((object, count));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphReleaseUserObject(
    graph: usize,
    object: usize,
    count: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = d.graphs.get(graph).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        {
            let mut held = g.user_objects();
            let total: c_uint = held.iter().filter(|(o, _)| *o == object).map(|(_, c)| c).sum();
            if total < count {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            held.retain(|(o, _)| *o != object);
            if total > count {
                held.push((object, total - count));
            }
        }
        release_user_object(object, count)
    })
}

/// `CUstreamCaptureStatus`.
const CAPTURE_STATUS_NONE: c_int = 0;
const CAPTURE_STATUS_ACTIVE: c_int = 1;
const CAPTURE_STATUS_INVALIDATED: c_int = 2;

/// Writes an optional output: nothing where `p` is null.
///
/// # Safety
/// `p` is null or valid for a write of `T`.
unsafe fn out_if<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: non-null and writable (function contract).
        unsafe { p.write(value) };
    }
}

fn state(e: &StreamEntry) -> std::sync::MutexGuard<'_, Capture> {
    e.capture.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Records `launch` if `stream` is capturing (`Ok(true)`); `Ok(false)`: run it.
pub(crate) fn record(
    stream: &StreamRef,
    launch: impl FnOnce() -> Launch,
) -> Result<bool, CUresult> {
    let StreamRef::Created(e) = stream else { return Ok(false) };
    match &mut *state(e) {
        Capture::Idle => Ok(false),
        Capture::Active(_, graph) => {
            graph.launches().push(launch());
            Ok(true)
        }
        Capture::Invalidated => Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
    }
}

/// Refuses work that cannot be captured on a capturing stream, invalidating the capture
/// (module doc).
pub(crate) fn refuse_during_capture(stream: &StreamRef) -> Result<(), CUresult> {
    let StreamRef::Created(e) = stream else { return Ok(()) };
    let mut capture = state(e);
    match &*capture {
        Capture::Idle => Ok(()),
        Capture::Active(..) => {
            eprintln!(
                "ptxvk libcuda: only kernel launches can be captured; this call fails and \
                 invalidates the stream's capture"
            );
            *capture = Capture::Invalidated;
            Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        }
        Capture::Invalidated => Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
    }
}

/// The capture status of `stream` (`CUstreamCaptureStatus`).
pub(crate) fn status(stream: &StreamRef) -> c_int {
    let StreamRef::Created(e) = stream else { return CAPTURE_STATUS_NONE };
    match &*state(e) {
        Capture::Idle => CAPTURE_STATUS_NONE,
        Capture::Active(..) => CAPTURE_STATUS_ACTIVE,
        Capture::Invalidated => CAPTURE_STATUS_INVALIDATED,
    }
}

fn begin_capture(handle: usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    let StreamRef::Created(e) = stream_of(d, handle, per_thread)? else {
        eprintln!("ptxvk libcuda: the default streams cannot capture (create a stream)");
        return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    };
    let mut capture = state(&e);
    if !matches!(*capture, Capture::Idle) {
        return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
    }
    let graph = Arc::new(Graph::default());
    *capture = Capture::Active(d.graphs.insert_arc(graph.clone()), graph);
    Ok(())
}

macro_rules! begin_capture {
    ($($name:ident($($mode:ident)?), $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(handle: usize $(, $mode: c_int)?) -> CUresult {
            $(let _ = $mode;)?
            entry(|| begin_capture(handle, $pt))
        }
    )*};
}

begin_capture! {
    cuStreamBeginCapture(), false;
    cuStreamBeginCapture_ptsz(), true;
    cuStreamBeginCapture_v2(mode), false;
    cuStreamBeginCapture_v2_ptsz(mode), true;
}

fn end_capture(handle: usize, graph: *mut usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    let StreamRef::Created(e) = stream_of(d, handle, per_thread)? else {
        return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
    };
    let ended = std::mem::take(&mut *state(&e));
    let h = match ended {
        Capture::Active(h, _) => h,
        Capture::Invalidated => return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
        Capture::Idle => return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE),
    };
    // SAFETY: `graph` is null or writable (CUDA's contract).
    unsafe { out(graph, h) }
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamEndCapture(handle: usize, graph: *mut usize) -> CUresult {
    entry(|| end_capture(handle, graph, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamEndCapture_ptsz(handle: usize, graph: *mut usize) -> CUresult {
    entry(|| end_capture(handle, graph, true))
}

/// `cuStreamGetCaptureInfo` (all versions): the status, a capture id (the stream
/// handle) and the graph being captured; ptxvk's graphs are sequences, not node sets, so
/// there are no dependency nodes (null, 0). Every output may be null.
///
/// # Safety
/// Each output is null or writable for its type (CUDA's contract).
unsafe fn capture_info(
    handle: usize,
    status_out: *mut c_int,
    id: *mut u64,
    graph: *mut usize,
    deps: *mut *const c_void,
    count: *mut usize,
    per_thread: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    let s = stream_of(d, handle, per_thread)?;
    let captured = match &s {
        StreamRef::Created(e) => match &*state(e) {
            Capture::Active(h, _) => *h,
            _ => 0,
        },
        StreamRef::Default(_) => 0,
    };
    // SAFETY: (all) null or writable (function contract).
    unsafe {
        out_if(status_out, status(&s));
        out_if(id, handle as u64);
        out_if(graph, captured);
        out_if(deps, std::ptr::null());
        out_if(count, 0usize);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCaptureInfo(
    handle: usize,
    status: *mut c_int,
    id: *mut u64,
) -> CUresult {
    use std::ptr::null_mut as none;
    // SAFETY: CUDA's contract.
    entry(|| unsafe { capture_info(handle, status, id, none(), none(), none(), false) })
}

macro_rules! capture_info_v2 {
    ($($name:ident($($edges:ident)?), $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            handle: usize,
            status: *mut c_int,
            id: *mut u64,
            graph: *mut usize,
            deps: *mut *const c_void,
            $($edges: *mut *const c_void,)?
            count: *mut usize,
        ) -> CUresult {
            // SAFETY: CUDA's contract.
            entry(|| unsafe {
                $(out_if($edges, std::ptr::null());)?
                capture_info(handle, status, id, graph, deps, count, $pt)
            })
        }
    )*};
}

capture_info_v2! {
    cuStreamGetCaptureInfo_v2(), false;
    cuStreamGetCaptureInfo_v2_ptsz(), true;
    cuStreamGetCaptureInfo_v3(edges), false;
    cuStreamGetCaptureInfo_v3_ptsz(edges), true;
}

/// `cuThreadExchangeStreamCaptureMode`: the thread's mode is kept and exchanged (modes
/// are not enforced, module doc).
#[no_mangle]
pub unsafe extern "C" fn cuThreadExchangeStreamCaptureMode(mode: *mut c_int) -> CUresult {
    thread_local!(static MODE: std::cell::Cell<c_int> = const { std::cell::Cell::new(0) });
    entry(|| {
        if mode.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-null and read-writable (CUDA's contract).
        unsafe { *mode = MODE.with(|m| m.replace(*mode)) };
        Ok(())
    })
}

fn instantiate(exec: *mut usize, graph: usize) -> Result<(), CUresult> {
    let d = driver()?;
    let g = d.graphs.get(graph).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    let launches = g.launches().clone();
    // The executable graph holds references of its own to the graph's user objects.
    let held = g.user_objects().clone();
    for &(object, count) in &held {
        retain_user_object(object, count)?;
    }
    let h = d
        .graph_execs
        .insert(Graph { launches: Mutex::new(launches), user_objects: Mutex::new(held) });
    // SAFETY: `exec` is null or writable (CUDA's contract).
    unsafe { out(exec, h) }
}

/// `cuGraphInstantiate` (CUDA 10: an error node and a log buffer, left untouched on
/// success).
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiate(
    exec: *mut usize,
    graph: usize,
    _error_node: *mut usize,
    _log: *mut c_void,
    _log_size: usize,
) -> CUresult {
    entry(|| instantiate(exec, graph))
}

/// `cuGraphInstantiateWithFlags` (flags: upload, auto-free and device launch change
/// nothing here).
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    exec: *mut usize,
    graph: usize,
    _flags: u64,
) -> CUresult {
    entry(|| instantiate(exec, graph))
}

/// CUDA 11's `cuGraphInstantiate_v2`, the same arguments as CUDA 10's.
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiate_v2(
    exec: *mut usize,
    graph: usize,
    _error_node: *mut usize,
    _log: *mut c_void,
    _log_size: usize,
) -> CUresult {
    entry(|| instantiate(exec, graph))
}

/// `CUDA_GRAPH_INSTANTIATE_PARAMS`: flags, upload stream, error node, result.
#[repr(C)]
pub struct InstantiateParams {
    flags: u64,
    upload_stream: usize,
    error_node: usize,
    result: c_int,
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithParams(
    exec: *mut usize,
    graph: usize,
    params: *mut InstantiateParams,
) -> CUresult {
    entry(|| {
        instantiate(exec, graph)?;
        if !params.is_null() {
            // SAFETY: non-null and writable (CUDA's contract); CUDA_GRAPH_INSTANTIATE_SUCCESS.
            unsafe { (*params).result = 0 };
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithParams_ptsz(
    exec: *mut usize,
    graph: usize,
    params: *mut InstantiateParams,
) -> CUresult {
    // SAFETY: forwarded.
    unsafe { cuGraphInstantiateWithParams(exec, graph, params) }
}

fn graph_launch(exec: usize, stream: usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    let g = d.graph_execs.get(exec).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    let s = stream_of(d, stream, per_thread)?;
    // A graph launched into a capture would be a child graph: not captured here.
    refuse_during_capture(&s)?;
    let launches = g.launches().clone();
    launches.iter().try_for_each(|l| l.run_on(s.get()))
}

/// `cuGraphUpload`: nothing to upload ahead (launches copy their parameters when run).
fn upload(exec: usize, stream: usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    d.graph_execs.get(exec).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    stream_of(d, stream, per_thread).map(drop)
}

/// The stream forms of an executable-graph call: default-stream and per-thread.
macro_rules! exec_on_stream {
    ($($name:ident => $f:ident, $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(exec: usize, stream: usize) -> CUresult {
            entry(|| $f(exec, stream, $pt))
        }
    )*};
}

exec_on_stream! {
    cuGraphLaunch => graph_launch, false;
    cuGraphLaunch_ptsz => graph_launch, true;
    cuGraphUpload => upload, false;
    cuGraphUpload_ptsz => upload, true;
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecDestroy(exec: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        d.graph_execs.remove(exec).map(drop).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphDestroy(graph: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        d.graphs.remove(graph).map(drop).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
    })
}

/// A stream's capture state behind its lock (`StreamEntry::capture`).
pub(crate) type CaptureCell = Mutex<Capture>;
