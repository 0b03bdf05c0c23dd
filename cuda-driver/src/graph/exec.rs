//! Executable graphs: instantiation, launch and upload, and changes to an instantiated graph
//! (`cuGraphInstantiate*`, `cuGraphLaunch`, `cuGraphExec*SetParams`, `cuGraphExecUpdate`).

use super::*;

// Executable graphs.

/// `CUgraphInstantiateResult`.
const INSTANTIATE_SUCCESS: c_int = 0;
const INSTANTIATE_INVALID_STRUCTURE: c_int = 2;
/// Every `CUgraphInstantiate_flags` bit (auto-free, upload, device launch and node
/// priority change nothing here: no memory nodes, nothing to upload, no device launch,
/// one queue).
const INSTANTIATE_FLAGS: u64 = 1 | 2 | 4 | 8;

/// Why an instantiation failed, for the forms that report it.
struct Refusal {
    code: CUresult,
    result: c_int,
    message: &'static str,
}

fn instantiate(exec: *mut usize, graph: usize, flags: u64) -> Result<(), Refusal> {
    let fail = |code| Refusal { code, result: 1, message: "" };
    let d = driver().map_err(fail)?;
    let g = graph_of(d, graph).map_err(fail)?;
    if flags & !INSTANTIATE_FLAGS != 0 || exec.is_null() {
        return Err(fail(CUresult::CUDA_ERROR_INVALID_VALUE));
    }
    let body = lock(&g.body).clone();
    let order = body.order().ok_or(Refusal {
        code: CUresult::CUDA_ERROR_INVALID_VALUE,
        result: INSTANTIATE_INVALID_STRUCTURE,
        message: "the graph has a cycle",
    })?;
    let held = g.held.retained().map_err(fail)?;
    let h = d.graph_execs.insert(Exec { body: Mutex::new(body), order, flags, _held: held });
    // SAFETY: non-null and writable (CUDA's contract).
    unsafe { out(exec, h) }.map_err(fail)
}

/// `cuGraphInstantiate` (CUDA 10 and 11: an error node and a log buffer, which receives
/// the reason of a failure).
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiate(
    exec: *mut usize,
    graph: usize,
    error_node: *mut usize,
    log: *mut c_char,
    log_size: usize,
) -> CUresult {
    entry(|| {
        instantiate(exec, graph, 0).map_err(|r| {
            // SAFETY: null or writable (CUDA's contract).
            unsafe { out_if(error_node, 0) };
            if !log.is_null() && log_size > 0 {
                let n = r.message.len().min(log_size - 1);
                // SAFETY: `log` is writable for `log_size` bytes (CUDA's contract).
                unsafe {
                    std::ptr::copy_nonoverlapping(r.message.as_ptr(), log.cast::<u8>(), n);
                    log.add(n).write(0);
                }
            }
            r.code
        })
    })
}

/// CUDA 11's `cuGraphInstantiate_v2`, the same arguments as CUDA 10's.
#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiate_v2(
    exec: *mut usize,
    graph: usize,
    error_node: *mut usize,
    log: *mut c_char,
    log_size: usize,
) -> CUresult {
    // SAFETY: forwarded.
    unsafe { cuGraphInstantiate(exec, graph, error_node, log, log_size) }
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    exec: *mut usize,
    graph: usize,
    flags: u64,
) -> CUresult {
    entry(|| instantiate(exec, graph, flags).map_err(|r| r.code))
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
        if params.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: non-null and read-writable (CUDA's contract).
        let p = unsafe { &mut *params };
        match instantiate(exec, graph, p.flags) {
            Ok(()) => {
                p.result = INSTANTIATE_SUCCESS;
                Ok(())
            }
            Err(r) => {
                p.result = r.result;
                p.error_node = 0;
                Err(r.code)
            }
        }
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

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecGetFlags(exec: usize, flags: *mut u64) -> CUresult {
    entry(|| {
        let d = driver()?;
        let e = exec_of(d, exec)?;
        // SAFETY: CUDA's contract.
        unsafe { out(flags, e.flags) }
    })
}

/// Waits until `s` has done everything enqueued on it so far, without taking its errors
/// (they stay for the client's next synchronisation).
fn drain(d: &Driver, s: &StreamRef) -> Result<(), CUresult> {
    let marker = d.device().create_event(false).map_err(crate::code)?;
    s.get().record(&marker).map_err(crate::vk_code)?;
    marker.synchronize().map_err(crate::vk_code)
}

/// Runs an executable graph's nodes in its order on a stream (module doc).
fn graph_launch(exec: usize, stream: usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    let e = exec_of(d, exec)?;
    let s = stream_of(d, stream, per_thread)?;
    // A graph launched into a capture would be a child graph: not captured here.
    refuse_during_capture(&s)?;
    let body = lock(&e.body).clone();
    let mut pending = false;
    for h in &e.order {
        let Some(node) = body.nodes.get(h).filter(|n| n.enabled) else { continue };
        match &node.op {
            Op::Empty => continue,
            Op::Kernel(k) => k.run_on(s.get())?,
            Op::Memcpy(c) => {
                // Host memory is read when the copy runs: after the work before it.
                if pending && crate::memory::reads_host(&c.0) {
                    drain(d, &s)?;
                }
                // SAFETY: the node's addresses, valid now by the client's contract.
                unsafe { crate::memory::run_memcpy_3d(&c.0, stream, per_thread) }?;
            }
            Op::Memset(m) => crate::memory::memset_2d(
                m.dst,
                m.pitch,
                m.pattern()?,
                m.width,
                m.height,
                stream,
                per_thread,
                false,
            )?,
            Op::Host(f) => crate::stream::enqueue_host(&s, *f)?,
            Op::EventRecord(ev) => {
                let event = d.events.get(*ev).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
                s.get().record(&event).map_err(crate::vk_code)?;
            }
            Op::EventWait(ev) => {
                let event = d.events.get(*ev).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
                s.get().wait_event(&event).map_err(crate::vk_code)?;
            }
        }
        pending = true;
    }
    Ok(())
}

/// `cuGraphUpload`: nothing to upload ahead (launches copy their parameters when run).
fn upload(exec: usize, stream: usize, per_thread: bool) -> Result<(), CUresult> {
    let d = driver()?;
    exec_of(d, exec)?;
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

/// Replaces the operation of `node` in an executable graph with one of the same type.
fn exec_set(exec: usize, node: usize, op: Op) -> Result<(), CUresult> {
    let d = driver()?;
    let e = exec_of(d, exec)?;
    let mut body = lock(&e.body);
    let n = body.node_mut(node)?;
    if n.op.node_type() != op.node_type() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    n.op = op;
    Ok(())
}

/// `cuGraphExec{Kernel,Memcpy,Memset,Host}NodeSetParams`.
macro_rules! exec_node_params {
    ($($name:ident($params:ty $(, $ctx:ident)?) => $ty:expr, $v2:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            exec: usize,
            node: usize,
            params: *const $params,
            $($ctx: usize,)?
        ) -> CUresult {
            $(let _ = $ctx;)?
            entry(|| {
                let d = driver()?;
                // SAFETY: CUDA's contract for the parameters and what they point at.
                let op = unsafe { read_op(d, $ty, params.cast(), $v2) }?;
                exec_set(exec, node, op)
            })
        }
    )*};
}

exec_node_params! {
    cuGraphExecKernelNodeSetParams(KernelParams) => NODE_KERNEL, false;
    cuGraphExecKernelNodeSetParams_v2(KernelParamsV2) => NODE_KERNEL, true;
    cuGraphExecMemcpyNodeSetParams(Memcpy3d, _ctx) => NODE_MEMCPY, false;
    cuGraphExecMemsetNodeSetParams(MemsetParams, _ctx) => NODE_MEMSET, false;
    cuGraphExecHostNodeSetParams(HostParams) => NODE_HOST, false;
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecEventRecordNodeSetEvent(
    exec: usize,
    node: usize,
    event: usize,
) -> CUresult {
    entry(|| exec_set(exec, node, event_node(driver()?, event, false)?))
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecEventWaitNodeSetEvent(
    exec: usize,
    node: usize,
    event: usize,
) -> CUresult {
    entry(|| exec_set(exec, node, event_node(driver()?, event, true)?))
}

/// `cuGraphNodeSetEnabled`: kernel, copy and memset nodes of an executable graph may be
/// turned off and on.
#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeSetEnabled(
    exec: usize,
    node: usize,
    enabled: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let e = exec_of(d, exec)?;
        let mut body = lock(&e.body);
        let n = body.node_mut(node)?;
        if !matches!(n.op, Op::Kernel(_) | Op::Memcpy(_) | Op::Memset(_)) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        n.enabled = enabled != 0;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetEnabled(
    exec: usize,
    node: usize,
    enabled: *mut c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let e = exec_of(d, exec)?;
        let body = lock(&e.body);
        let n = body.node(node)?;
        if !matches!(n.op, Op::Kernel(_) | Op::Memcpy(_) | Op::Memset(_)) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: CUDA's contract.
        unsafe { out(enabled, c_uint::from(n.enabled)) }
    })
}

/// `CUgraphExecUpdateResult`.
const UPDATE_SUCCESS: c_int = 0;
const UPDATE_ERROR: c_int = 1;
const UPDATE_TOPOLOGY_CHANGED: c_int = 2;
const UPDATE_NODE_TYPE_CHANGED: c_int = 3;

/// `CUgraphExecUpdateResultInfo`.
#[repr(C)]
pub struct UpdateResultInfo {
    result: c_int,
    error_node: usize,
    error_from_node: usize,
}

/// `cuGraphExecUpdate`: the graph's parameters into the executable graph, if their
/// topologies match (module doc); the result, the node at fault and (for an edge) the node
/// the edge comes from.
fn exec_update(exec: usize, graph: usize) -> Result<(), (CUresult, UpdateResultInfo)> {
    let fail =
        |code, result| (code, UpdateResultInfo { result, error_node: 0, error_from_node: 0 });
    let d = driver().map_err(|c| fail(c, UPDATE_ERROR))?;
    let e = exec_of(d, exec).map_err(|c| fail(c, UPDATE_ERROR))?;
    let g = graph_of(d, graph).map_err(|c| fail(c, UPDATE_ERROR))?;
    let source = lock(&g.body).clone();
    let mut target = lock(&e.body);
    let refuse = |result, node, from| {
        (
            CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
            UpdateResultInfo { result, error_node: node, error_from_node: from },
        )
    };
    if source.nodes.len() != target.nodes.len() {
        return Err(refuse(UPDATE_TOPOLOGY_CHANGED, 0, 0));
    }
    // Nodes paired in the order they were added.
    let pairs: BTreeMap<usize, usize> =
        source.nodes.keys().copied().zip(target.nodes.keys().copied()).collect();
    for (s, t) in &pairs {
        let (Some(sn), Some(tn)) = (source.nodes.get(s), target.nodes.get(t)) else {
            return Err(fail(CUresult::CUDA_ERROR_UNKNOWN, UPDATE_ERROR));
        };
        if sn.op.node_type() != tn.op.node_type() {
            return Err(refuse(UPDATE_NODE_TYPE_CHANGED, *s, 0));
        }
        let mapped: BTreeSet<usize> =
            sn.deps.iter().filter_map(|dep| pairs.get(dep).copied()).collect();
        let have: BTreeSet<usize> = tn.deps.iter().copied().collect();
        if mapped != have {
            let from = sn.deps.iter().find(|dep| !pairs.get(dep).is_some_and(|t| have.contains(t)));
            return Err(refuse(UPDATE_TOPOLOGY_CHANGED, *s, from.copied().unwrap_or(0)));
        }
    }
    for (s, t) in pairs {
        if let (Some(sn), Some(tn)) = (source.nodes.get(&s), target.nodes.get_mut(&t)) {
            tn.op = sn.op.clone();
        }
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphExecUpdate_v2(
    exec: usize,
    graph: usize,
    info: *mut UpdateResultInfo,
) -> CUresult {
    entry(|| {
        if info.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let (code, result) = match exec_update(exec, graph) {
            Ok(()) => (
                Ok(()),
                UpdateResultInfo { result: UPDATE_SUCCESS, error_node: 0, error_from_node: 0 },
            ),
            Err((code, result)) => (Err(code), result),
        };
        // SAFETY: non-null and writable (CUDA's contract).
        unsafe { info.write(result) };
        code
    })
}

/// CUDA 11's `cuGraphExecUpdate`: the error node and result by separate pointers.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecUpdate(
    exec: usize,
    graph: usize,
    error_node: *mut usize,
    result: *mut c_int,
) -> CUresult {
    entry(|| {
        if error_node.is_null() || result.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let (code, info) = match exec_update(exec, graph) {
            Ok(()) => (
                Ok(()),
                UpdateResultInfo { result: UPDATE_SUCCESS, error_node: 0, error_from_node: 0 },
            ),
            Err((code, info)) => (Err(code), info),
        };
        // SAFETY: (both) non-null and writable (CUDA's contract).
        unsafe {
            error_node.write(info.error_node);
            result.write(info.result);
        }
        code
    })
}
