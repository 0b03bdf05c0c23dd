//! Stream capture (`cuStreamBeginCapture`, `cuStreamEndCapture`): work enqueued on a
//! capturing stream becomes nodes of the capture's graph (see the parent module).

use super::*;
use crate::objects::{Capture, CapturedEvent, Session};

// Stream capture.

/// `CUstreamCaptureStatus`.
const CAPTURE_STATUS_NONE: c_int = 0;
const CAPTURE_STATUS_ACTIVE: c_int = 1;
const CAPTURE_STATUS_INVALIDATED: c_int = 2;

/// Writes an optional output: nothing where `p` is null.
///
/// # Safety
/// `p` is null or valid for a write of `T`.
pub(super) unsafe fn out_if<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: non-null and writable (function contract).
        unsafe { p.write(value) };
    }
}

fn state(e: &StreamEntry) -> MutexGuard<'_, Capture> {
    lock(&e.capture)
}

/// Records the operation `op` makes as a node if `stream` is capturing (`Ok(true)`);
/// `Ok(false)`: run it.
pub(crate) fn record(stream: &StreamRef, op: impl FnOnce() -> Op) -> Result<bool, CUresult> {
    record_with(stream, || Ok(op()))
}

/// [`record`] of an operation that may fail to be made.
pub(crate) fn record_with(
    stream: &StreamRef,
    op: impl FnOnce() -> Result<Op, CUresult>,
) -> Result<bool, CUresult> {
    let StreamRef::Created(e) = stream else { return Ok(false) };
    let mut capture = state(e);
    let Capture::Active { session, deps } = &mut *capture else { return Ok(false) };
    if session.invalid.load(Ordering::Acquire) {
        return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    let h = add_node(driver()?, session.graph, &session.g, deps, op()?)?;
    *deps = vec![h];
    Ok(true)
}

/// Refuses work that cannot be captured on a capturing stream, invalidating the capture
/// (module doc).
pub(crate) fn refuse_during_capture(stream: &StreamRef) -> Result<(), CUresult> {
    let StreamRef::Created(e) = stream else { return Ok(()) };
    let capture = state(e);
    match &*capture {
        Capture::Idle => Ok(()),
        Capture::Active { session, .. } => {
            if session.invalid.swap(true, Ordering::AcqRel) {
                return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            }
            eprintln!(
                "ptxvk libcuda: this call cannot be captured; it fails and invalidates the \
                 stream's capture"
            );
            Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        }
    }
}

/// `CU_EVENT_RECORD_EXTERNAL` / `CU_EVENT_WAIT_EXTERNAL`.
pub(crate) const EVENT_EXTERNAL: c_uint = 1;

/// `cuEventRecord` on a capturing stream: an event record node when `external`, else the
/// capture point a later wait joins (`Ok(true)`); `Ok(false)` outside capture (the
/// event is no longer a capture point).
pub(crate) fn record_event(
    d: &Driver,
    stream: &StreamRef,
    event: usize,
    external: bool,
) -> Result<bool, CUresult> {
    if external {
        return record(stream, || Op::EventRecord(event));
    }
    let mut events = lock(&d.captured_events);
    let StreamRef::Created(e) = stream else {
        events.remove(&event);
        return Ok(false);
    };
    let capture = state(e);
    let Capture::Active { session, deps } = &*capture else {
        events.remove(&event);
        return Ok(false);
    };
    if session.invalid.load(Ordering::Acquire) {
        return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    events.insert(event, CapturedEvent { session: Arc::downgrade(session), deps: deps.clone() });
    Ok(true)
}

/// `cuStreamWaitEvent` where capture is involved (module doc): a join of the capture the
/// event was recorded in, or an event wait node with `CU_EVENT_WAIT_EXTERNAL` (`Ok(true)`);
/// `Ok(false)`: an ordinary wait.
pub(crate) fn wait_event(
    d: &Driver,
    stream: &StreamRef,
    event: usize,
    flags: c_uint,
) -> Result<bool, CUresult> {
    let point = lock(&d.captured_events).get(&event).and_then(|c| {
        let session = c.session.upgrade()?;
        Some((session, c.deps.clone()))
    });
    let StreamRef::Created(e) = stream else {
        return match point {
            Some((session, _)) => {
                session.invalid.store(true, Ordering::Release);
                eprintln!("ptxvk libcuda: a default stream cannot join a stream capture");
                Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
            }
            None if flags & EVENT_EXTERNAL != 0 => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
            None => Ok(false),
        };
    };
    let mut capture = state(e);
    match (&mut *capture, point) {
        (Capture::Idle, None) if flags & EVENT_EXTERNAL != 0 => {
            Err(CUresult::CUDA_ERROR_INVALID_VALUE)
        }
        (Capture::Idle, None) => Ok(false),
        (Capture::Idle, Some((session, deps))) => {
            // Fork: the stream joins the capture after the event's point.
            lock(&session.joined).push(Arc::downgrade(e));
            *capture = Capture::Active { session, deps };
            Ok(true)
        }
        (Capture::Active { session, .. }, _) if session.invalid.load(Ordering::Acquire) => {
            Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        }
        (Capture::Active { session, deps }, Some((other, more)))
            if Arc::ptr_eq(session, &other) =>
        {
            // Join: the stream's next node also waits for the event's point.
            for h in more {
                if !deps.contains(&h) {
                    deps.push(h);
                }
            }
            Ok(true)
        }
        (Capture::Active { session, deps }, None) if flags & EVENT_EXTERNAL != 0 => {
            d.events.get(event).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
            let h = add_node(d, session.graph, &session.g, deps, Op::EventWait(event))?;
            *deps = vec![h];
            Ok(true)
        }
        (Capture::Active { session, .. }, _) => {
            session.invalid.store(true, Ordering::Release);
            eprintln!(
                "ptxvk libcuda: a capturing stream can wait only for events recorded in its \
                 own capture (or with CU_EVENT_WAIT_EXTERNAL)"
            );
            Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_ISOLATION)
        }
    }
}

/// The capture status of `stream` (`CUstreamCaptureStatus`).
pub(crate) fn status(stream: &StreamRef) -> c_int {
    let StreamRef::Created(e) = stream else { return CAPTURE_STATUS_NONE };
    match &*state(e) {
        Capture::Idle => CAPTURE_STATUS_NONE,
        Capture::Active { session, .. } if session.invalid.load(Ordering::Acquire) => {
            CAPTURE_STATUS_INVALIDATED
        }
        Capture::Active { .. } => CAPTURE_STATUS_ACTIVE,
    }
}

/// Begins a capture on stream `handle`, into a new graph or (`into`) a client's graph
/// after `deps`.
fn begin_capture(
    handle: usize,
    per_thread: bool,
    into: Option<(usize, &[usize])>,
) -> Result<(), CUresult> {
    let d = driver()?;
    let StreamRef::Created(e) = stream_of(d, handle, per_thread)? else {
        eprintln!("ptxvk libcuda: the default streams cannot capture (create a stream)");
        return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    };
    let mut capture = state(&e);
    if !matches!(*capture, Capture::Idle) {
        return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
    }
    let (graph, g, deps) = match into {
        Some((graph, deps)) => {
            let g = graph_of(d, graph)?;
            lock(&g.body).check_deps(deps)?;
            (graph, g, deps.to_vec())
        }
        None => {
            let g = Arc::new(Graph::default());
            (d.graphs.insert_arc(g.clone()), g, Vec::new())
        }
    };
    let session = Arc::new(Session {
        graph,
        g,
        origin: handle,
        invalid: AtomicBool::new(false),
        joined: Mutex::default(),
        client_graph: into.is_some(),
    });
    *capture = Capture::Active { session, deps };
    Ok(())
}

macro_rules! begin_capture {
    ($($name:ident($($mode:ident)?), $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(handle: usize $(, $mode: c_int)?) -> CUresult {
            $(let _ = $mode;)?
            entry(|| begin_capture(handle, $pt, None))
        }
    )*};
}

begin_capture! {
    cuStreamBeginCapture(), false;
    cuStreamBeginCapture_ptsz(), true;
    cuStreamBeginCapture_v2(mode), false;
    cuStreamBeginCapture_v2_ptsz(mode), true;
}

macro_rules! begin_capture_to_graph {
    ($($name:ident, $pt:expr;)*) => {$(
        /// `cuStreamBeginCaptureToGraph`: capture into an existing graph, after `deps`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            handle: usize,
            graph: usize,
            deps: *const usize,
            edges: *const c_void,
            n: usize,
            _mode: c_int,
        ) -> CUresult {
            entry(|| {
                // SAFETY: CUDA's contract for the array.
                let deps = unsafe { handles(deps, n) }?;
                // SAFETY: as above.
                unsafe { check_edges(edges, n) }?;
                begin_capture(handle, $pt, Some((graph, deps)))
            })
        }
    )*};
}

begin_capture_to_graph! {
    cuStreamBeginCaptureToGraph, false;
    cuStreamBeginCaptureToGraph_ptsz, true;
}

/// Forgets a failed capture's graph (unless it is the client's).
fn discard(d: &Driver, session: &Session) {
    if !session.client_graph {
        if let Some(g) = d.graphs.remove(session.graph) {
            for h in lock(&g.body).nodes.keys() {
                d.graph_nodes.remove(*h);
            }
        }
    }
}

fn end_capture(handle: usize, graph: *mut usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    if graph.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let StreamRef::Created(e) = stream_of(d, handle, per_thread)? else {
        return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
    };
    let (session, deps) = {
        let mut capture = state(&e);
        let Capture::Active { session, deps } = &*capture else {
            return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
        };
        if session.origin != handle {
            // Only the stream that began a capture ends it.
            session.invalid.store(true, Ordering::Release);
            return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
        }
        let ended = (session.clone(), deps.clone());
        *capture = Capture::Idle;
        ended
    };
    // Every stream that joined leaves the capture; its last nodes must be joined back
    // into the origin's.
    let joined_back = lock(&session.g.body).ancestors(&deps);
    let mut unjoined = false;
    for stream in std::mem::take(&mut *lock(&session.joined)) {
        let Some(s) = stream.upgrade() else { continue };
        let mut capture = state(&s);
        if let Capture::Active { session: other, deps } = &*capture {
            if Arc::ptr_eq(other, &session) {
                unjoined |= deps.iter().any(|h| !joined_back.contains(h));
                *capture = Capture::Idle;
            }
        }
    }
    if session.invalid.load(Ordering::Acquire) {
        discard(d, &session);
        return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    if unjoined {
        eprintln!("ptxvk libcuda: a stream that joined the capture was not joined back");
        discard(d, &session);
        return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    }
    // SAFETY: non-null and writable (CUDA's contract).
    unsafe { out(graph, session.graph) }
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamEndCapture(handle: usize, graph: *mut usize) -> CUresult {
    entry(|| end_capture(handle, graph, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamEndCapture_ptsz(handle: usize, graph: *mut usize) -> CUresult {
    entry(|| end_capture(handle, graph, true))
}

/// `cuStreamGetCaptureInfo` (all versions): the status, a capture id (the id of the
/// stream that began it), the graph being captured and the nodes the stream's next node
/// will depend on (an array valid until the stream's capture state next changes). Every
/// output may be null.
///
/// # Safety
/// Each output is null or writable for its type (CUDA's contract).
unsafe fn capture_info(
    handle: usize,
    status_out: *mut c_int,
    id: *mut u64,
    graph: *mut usize,
    deps_out: *mut *const usize,
    count: *mut usize,
    per_thread: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    let s = stream_of(d, handle, per_thread)?;
    let (origin, captured, deps, n) = match &s {
        StreamRef::Created(e) => match &*state(e) {
            Capture::Active { session, deps } => {
                (session.origin, session.graph, deps.as_ptr(), deps.len())
            }
            Capture::Idle => (0, 0, std::ptr::null(), 0),
        },
        StreamRef::Default(_) => (0, 0, std::ptr::null(), 0),
    };
    // SAFETY: (all) null or writable (function contract).
    unsafe {
        out_if(status_out, status(&s));
        if origin != 0 {
            out_if(id, origin as u64);
        }
        out_if(graph, captured);
        out_if(deps_out, if n == 0 { std::ptr::null() } else { deps });
        out_if(count, n);
    }
    Ok(())
}

macro_rules! capture_info_v1 {
    ($($name:ident, $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(handle: usize, status: *mut c_int, id: *mut u64) -> CUresult {
            use std::ptr::null_mut as none;
            // SAFETY: CUDA's contract.
            entry(|| unsafe { capture_info(handle, status, id, none(), none(), none(), $pt) })
        }
    )*};
}

capture_info_v1! {
    cuStreamGetCaptureInfo, false;
    cuStreamGetCaptureInfo_ptsz, true;
}

macro_rules! capture_info_v2 {
    ($($name:ident($($edges:ident)?), $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            handle: usize,
            status: *mut c_int,
            id: *mut u64,
            graph: *mut usize,
            deps: *mut *const usize,
            $($edges: *mut *const c_void,)?
            count: *mut usize,
        ) -> CUresult {
            // SAFETY: CUDA's contract. Null edge data: every edge is an ordinary one.
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

/// `CU_STREAM_ADD_CAPTURE_DEPENDENCIES` / `CU_STREAM_SET_CAPTURE_DEPENDENCIES`.
const ADD_CAPTURE_DEPENDENCIES: c_uint = 0;
const SET_CAPTURE_DEPENDENCIES: c_uint = 1;

/// `cuStreamUpdateCaptureDependencies(_v2)`: adds to or replaces the nodes a capturing
/// stream's next node depends on.
///
/// # Safety
/// `deps` is null or readable for `n` handles, `edges` for `n` edge data.
unsafe fn update_capture_deps(
    handle: usize,
    deps: *const usize,
    edges: *const c_void,
    n: usize,
    flags: c_uint,
    per_thread: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    // SAFETY: function contract.
    let given = unsafe { handles(deps, n) }?;
    // SAFETY: function contract.
    unsafe { check_edges(edges, n) }?;
    let StreamRef::Created(e) = stream_of(d, handle, per_thread)? else {
        return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
    };
    let mut capture = state(&e);
    let Capture::Active { session, deps } = &mut *capture else {
        return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
    };
    lock(&session.g.body).check_deps(given)?;
    match flags {
        ADD_CAPTURE_DEPENDENCIES => {
            for h in given {
                if !deps.contains(h) {
                    deps.push(*h);
                }
            }
        }
        SET_CAPTURE_DEPENDENCIES => *deps = given.to_vec(),
        _ => return Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
    Ok(())
}

macro_rules! update_capture_deps {
    ($($name:ident($($edges:ident)?), $pt:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            handle: usize,
            deps: *const usize,
            $($edges: *const c_void,)?
            n: usize,
            flags: c_uint,
        ) -> CUresult {
            let edge_data: *const c_void = arg_or_null!($($edges)?);
            // SAFETY: CUDA's contract.
            entry(|| unsafe { update_capture_deps(handle, deps, edge_data, n, flags, $pt) })
        }
    )*};
}

update_capture_deps! {
    cuStreamUpdateCaptureDependencies(), false;
    cuStreamUpdateCaptureDependencies_ptsz(), true;
    cuStreamUpdateCaptureDependencies_v2(edges), false;
    cuStreamUpdateCaptureDependencies_v2_ptsz(edges), true;
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
