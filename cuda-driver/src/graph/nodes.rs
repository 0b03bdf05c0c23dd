//! Building graphs: creating and destroying them, adding nodes and edges, node parameters,
//! events, cloning and printing (`cuGraphCreate`, `cuGraphAdd*Node`, `cuGraph*NodeGetParams`, …).

use super::*;

#[no_mangle]
pub unsafe extern "C" fn cuGraphCreate(graph: *mut usize, flags: c_uint) -> CUresult {
    entry(|| {
        let d = driver()?;
        if flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        if graph.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let h = d.graphs.insert(Graph::default());
        // SAFETY: non-null and writable (CUDA's contract).
        unsafe { out(graph, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphDestroy(graph: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = d.graphs.remove(graph).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        for h in lock(&g.body).nodes.keys() {
            d.graph_nodes.remove(*h);
        }
        Ok(())
    })
}

/// Adds a node made by `make` (which checks its parameters) to `graph` after `deps`.
///
/// # Safety
/// `node` is null or writable; `deps` is null or readable for `n` handles.
unsafe fn add(
    node: *mut usize,
    graph: usize,
    deps: *const usize,
    n: usize,
    make: impl FnOnce(&'static Driver) -> Result<Op, CUresult>,
) -> Result<(), CUresult> {
    let d = driver()?;
    if node.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let g = graph_of(d, graph)?;
    // SAFETY: CUDA's contract (function contract).
    let deps = unsafe { handles(deps, n) }?;
    let h = add_node(d, graph, &g, deps, make(d)?)?;
    // SAFETY: non-null and writable (function contract).
    unsafe { out(node, h) }
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddEmptyNode(
    node: *mut usize,
    graph: usize,
    deps: *const usize,
    n: usize,
) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { add(node, graph, deps, n, |_| Ok(Op::Empty)) })
}

/// `CUDA_KERNEL_NODE_PARAMS_v1` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct KernelParams {
    func: usize,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

/// `CUDA_KERNEL_NODE_PARAMS_v2` (cuda.h): v1 and a `CUkernel` and `CUcontext`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct KernelParamsV2 {
    v1: KernelParams,
    kernel: usize,
    ctx: usize,
}

const _: () = assert!(
    std::mem::size_of::<KernelParams>()
        == std::mem::size_of::<cudarc::driver::sys::CUDA_KERNEL_NODE_PARAMS_v1>()
);
const _: () = assert!(
    std::mem::size_of::<KernelParamsV2>()
        == std::mem::size_of::<cudarc::driver::sys::CUDA_KERNEL_NODE_PARAMS_v2>()
);

/// A kernel node's operation from its parameters, the parameter block copied now.
/// `kernel` is v2's `CUkernel`, used when `func` is null.
///
/// # Safety
/// `kernelParams`/`extra` as for `cuLaunchKernel`.
unsafe fn kernel_op(d: &Driver, p: &KernelParams, kernel: usize) -> Result<Op, CUresult> {
    let handle = if p.func != 0 { p.func } else { kernel };
    let func =
        crate::module::function_of(d, handle).map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
    // SAFETY: forwarded (function contract).
    let params = unsafe { crate::launch::param_block(&func, p.params, p.extra) }?;
    let keep = crate::launch::pointed_at(d, &params);
    Ok(Op::Kernel(KernelOp::new(func, handle, p.grid, p.block, p.shared, params, keep)?))
}

/// The v1 prefix of v1 or v2 kernel parameters, and v2's `CUkernel` (0 for v1).
///
/// # Safety
/// `p` is null or readable for a v1 struct (`v2`: a v2 struct).
unsafe fn read_kernel_params(
    p: *const c_void,
    v2: bool,
) -> Result<(KernelParams, usize), CUresult> {
    if v2 {
        // SAFETY: function contract.
        let k = unsafe { arg(p.cast::<KernelParamsV2>()) }?;
        Ok((k.v1, k.kernel))
    } else {
        // SAFETY: function contract.
        Ok((unsafe { arg(p.cast::<KernelParams>()) }?, 0))
    }
}

/// Writes a kernel node's parameters as v1 or v2.
///
/// # Safety
/// `p` is null or writable for a v1 struct (`v2`: a v2 struct).
unsafe fn write_kernel_params(k: &KernelOp, p: *mut c_void, v2: bool) -> Result<(), CUresult> {
    let v1 = KernelParams {
        func: k.handle,
        grid: k.grid,
        block: k.block,
        shared: k.shared,
        params: k.args.as_ptr().cast_mut().cast(),
        extra: std::ptr::null_mut(),
    };
    if v2 {
        // SAFETY: function contract.
        unsafe { out(p.cast::<KernelParamsV2>(), KernelParamsV2 { v1, kernel: 0, ctx: 0 }) }
    } else {
        // SAFETY: function contract.
        unsafe { out(p.cast::<KernelParams>(), v1) }
    }
}

/// Reads the operation a `cu*SetParams`/`cuGraphAdd*Node` call describes, by node type.
///
/// # Safety
/// `p` is null or readable for the parameter struct of `node_type` (v2 for kernels when
/// `v2`).
pub(super) unsafe fn read_op(
    d: &Driver,
    node_type: c_int,
    p: *const c_void,
    v2: bool,
) -> Result<Op, CUresult> {
    match node_type {
        NODE_KERNEL => {
            // SAFETY: function contract.
            let (k, kernel) = unsafe { read_kernel_params(p, v2) }?;
            // SAFETY: the pointers in the parameters, by CUDA's contract.
            unsafe { kernel_op(d, &k, kernel) }
        }
        NODE_MEMCPY => {
            // SAFETY: function contract.
            let c = unsafe { arg(p.cast::<Memcpy3d>()) }?;
            crate::memory::check_memcpy_3d(&c)?;
            Ok(Op::Memcpy(CopyOp(c)))
        }
        NODE_MEMSET => {
            // SAFETY: function contract.
            let m = unsafe { arg(p.cast::<MemsetParams>()) }?;
            m.check(d)?;
            Ok(Op::Memset(m))
        }
        NODE_HOST => {
            // SAFETY: function contract.
            let h = unsafe { arg(p.cast::<HostParams>()) }?;
            Ok(Op::Host(HostOp::from_params(h)?))
        }
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

/// Writes the parameters of `op` in its type's struct.
///
/// # Safety
/// `p` is null or writable for that struct (v2 for kernels when `v2`).
unsafe fn write_op(op: &Op, node_type: c_int, p: *mut c_void, v2: bool) -> Result<(), CUresult> {
    if op.node_type() != node_type {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: (all) function contract.
    unsafe {
        match op {
            Op::Kernel(k) => write_kernel_params(k, p, v2),
            Op::Memcpy(c) => out(p.cast::<Memcpy3d>(), c.0),
            Op::Memset(m) => out(p.cast::<MemsetParams>(), *m),
            Op::Host(h) => out(p.cast::<HostParams>(), h.params()),
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
    }
}

/// `cuGraphAdd{Kernel,Memcpy,Memset,Host}Node`: the node's parameters by pointer (the
/// trailing `CUcontext` of the memcpy and memset forms is the one context there is).
macro_rules! add_nodes {
    ($($name:ident($params:ty $(, $ctx:ident)?) => $ty:expr, $v2:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            node: *mut usize,
            graph: usize,
            deps: *const usize,
            n: usize,
            params: *const $params,
            $($ctx: usize,)?
        ) -> CUresult {
            $(let _ = $ctx;)?
            // SAFETY: CUDA's contract for the parameters and what they point at.
            entry(|| unsafe {
                add(node, graph, deps, n, |d| read_op(d, $ty, params.cast(), $v2))
            })
        }
    )*};
}

add_nodes! {
    cuGraphAddKernelNode(KernelParams) => NODE_KERNEL, false;
    cuGraphAddKernelNode_v2(KernelParamsV2) => NODE_KERNEL, true;
    cuGraphAddMemcpyNode(Memcpy3d, _ctx) => NODE_MEMCPY, false;
    cuGraphAddMemsetNode(MemsetParams, _ctx) => NODE_MEMSET, false;
    cuGraphAddHostNode(HostParams) => NODE_HOST, false;
}

pub(super) fn event_node(d: &Driver, event: usize, wait: bool) -> Result<Op, CUresult> {
    d.events.get(event).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    Ok(if wait { Op::EventWait(event) } else { Op::EventRecord(event) })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddEventRecordNode(
    node: *mut usize,
    graph: usize,
    deps: *const usize,
    n: usize,
    event: usize,
) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { add(node, graph, deps, n, |d| event_node(d, event, false)) })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphAddEventWaitNode(
    node: *mut usize,
    graph: usize,
    deps: *const usize,
    n: usize,
    event: usize,
) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { add(node, graph, deps, n, |d| event_node(d, event, true)) })
}

/// `cuGraph{Add,Remove}Dependencies`: edges `from[i] -> to[i]` of one graph.
///
/// # Safety
/// `from` and `to` are null or readable for `n` handles; `edges` null or readable for `n`
/// edge data.
unsafe fn dependencies(
    graph: usize,
    from: *const usize,
    to: *const usize,
    edges: *const c_void,
    n: usize,
    add: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    let g = graph_of(d, graph)?;
    // SAFETY: (all) function contract.
    let (from, to) = unsafe { (handles(from, n)?, handles(to, n)?) };
    // SAFETY: function contract.
    unsafe { check_edges(edges, n) }?;
    let mut body = lock(&g.body);
    // Checked first, so that a bad edge changes nothing.
    let mut wanted: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (&a, &b) in from.iter().zip(to) {
        body.node(a)?;
        let node = body.node(b)?;
        let present = node.deps.contains(&a) || wanted.get(&b).is_some_and(|w| w.contains(&a));
        if a == b || present == add {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        wanted.entry(b).or_default().push(a);
    }
    for (b, list) in wanted {
        let node = body.node_mut(b)?;
        if add {
            node.deps.extend(list);
        } else {
            node.deps.retain(|h| !list.contains(h));
        }
    }
    Ok(())
}

macro_rules! dependency_fns {
    ($($name:ident($($edges:ident)?) => $add:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            graph: usize,
            from: *const usize,
            to: *const usize,
            $($edges: *const c_void,)?
            n: usize,
        ) -> CUresult {
            let edge_data: *const c_void = arg_or_null!($($edges)?);
            // SAFETY: CUDA's contract.
            entry(|| unsafe { dependencies(graph, from, to, edge_data, n, $add) })
        }
    )*};
}

dependency_fns! {
    cuGraphAddDependencies() => true;
    cuGraphAddDependencies_v2(edges) => true;
    cuGraphRemoveDependencies() => false;
    cuGraphRemoveDependencies_v2(edges) => false;
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphGetNodes(
    graph: usize,
    nodes: *mut usize,
    count: *mut usize,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = graph_of(d, graph)?;
        let list: Vec<usize> = lock(&g.body).nodes.keys().copied().collect();
        // SAFETY: CUDA's contract.
        unsafe { write_list(&list, nodes, count) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphGetRootNodes(
    graph: usize,
    nodes: *mut usize,
    count: *mut usize,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = graph_of(d, graph)?;
        let list: Vec<usize> = lock(&g.body)
            .nodes
            .iter()
            .filter(|(_, n)| n.deps.is_empty())
            .map(|(&h, _)| h)
            .collect();
        // SAFETY: CUDA's contract.
        unsafe { write_list(&list, nodes, count) }
    })
}

/// `cuGraphGetEdges(_v2)`: every edge, by the order its target node was added, then the
/// order of the target's dependencies.
///
/// # Safety
/// CUDA's contract for the arrays and the count.
unsafe fn get_edges(
    graph: usize,
    from: *mut usize,
    to: *mut usize,
    edges: *mut c_void,
    count: *mut usize,
) -> Result<(), CUresult> {
    let d = driver()?;
    let g = graph_of(d, graph)?;
    let pairs: Vec<(usize, usize)> = lock(&g.body)
        .nodes
        .iter()
        .flat_map(|(&h, n)| n.deps.iter().map(move |&dep| (dep, h)))
        .collect();
    if from.is_null() != to.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let froms: Vec<usize> = pairs.iter().map(|p| p.0).collect();
    let tos: Vec<usize> = pairs.iter().map(|p| p.1).collect();
    // SAFETY: (all) CUDA's contract (function contract).
    unsafe {
        if count.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let room = count.read();
        write_list(&froms, from, count)?;
        count.write(room);
        write_list(&tos, to, count)?;
        if !to.is_null() {
            zero_edges(edges, room);
        }
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphGetEdges(
    graph: usize,
    from: *mut usize,
    to: *mut usize,
    count: *mut usize,
) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { get_edges(graph, from, to, std::ptr::null_mut(), count) })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphGetEdges_v2(
    graph: usize,
    from: *mut usize,
    to: *mut usize,
    edges: *mut c_void,
    count: *mut usize,
) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { get_edges(graph, from, to, edges, count) })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeGetType(node: usize, node_type: *mut c_int) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = owner(d, node)?;
        let t = lock(&g.body).node(node)?.op.node_type();
        // SAFETY: CUDA's contract.
        unsafe { out(node_type, t) }
    })
}

/// `cuGraphNodeGet{Dependencies,DependentNodes}(_v2)`.
///
/// # Safety
/// CUDA's contract for the array, the edge data and the count.
unsafe fn node_links(
    node: usize,
    list: *mut usize,
    edges: *mut c_void,
    count: *mut usize,
    dependents: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    let g = owner(d, node)?;
    let items = {
        let body = lock(&g.body);
        if dependents {
            body.node(node)?;
            body.dependents(node)
        } else {
            body.node(node)?.deps.clone()
        }
    };
    // SAFETY: (all) function contract.
    unsafe {
        if !list.is_null() && !count.is_null() {
            zero_edges(edges, count.read());
        }
        write_list(&items, list, count)
    }
}

macro_rules! link_fns {
    ($($name:ident($($edges:ident)?) => $dependents:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            node: usize,
            list: *mut usize,
            $($edges: *mut c_void,)?
            count: *mut usize,
        ) -> CUresult {
            let edge_data: *mut c_void = arg_or_null!($($edges)?);
            // SAFETY: CUDA's contract.
            entry(|| unsafe { node_links(node, list, edge_data, count, $dependents) })
        }
    )*};
}

link_fns! {
    cuGraphNodeGetDependencies() => false;
    cuGraphNodeGetDependencies_v2(edges) => false;
    cuGraphNodeGetDependentNodes() => true;
    cuGraphNodeGetDependentNodes_v2(edges) => true;
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphDestroyNode(node: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = owner(d, node)?;
        let mut body = lock(&g.body);
        body.nodes.remove(&node).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        for n in body.nodes.values_mut() {
            n.deps.retain(|&h| h != node);
        }
        d.graph_nodes.remove(node);
        Ok(())
    })
}

/// `cuGraph*NodeGetParams`: the parameters of a graph's node of type `node_type`.
///
/// # Safety
/// `p` is null or writable for the type's parameter struct.
unsafe fn get_params(
    node: usize,
    node_type: c_int,
    p: *mut c_void,
    v2: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    let g = owner(d, node)?;
    let body = lock(&g.body);
    // SAFETY: function contract.
    unsafe { write_op(&body.node(node)?.op, node_type, p, v2) }
}

/// `cuGraph*NodeSetParams`: new parameters for a graph's node of type `node_type`.
///
/// # Safety
/// `p` is null or readable for the type's parameter struct, whose pointers follow CUDA's
/// contract.
unsafe fn set_params(
    node: usize,
    node_type: c_int,
    p: *const c_void,
    v2: bool,
) -> Result<(), CUresult> {
    let d = driver()?;
    let g = owner(d, node)?;
    // SAFETY: function contract.
    let op = unsafe { read_op(d, node_type, p, v2) }?;
    let mut body = lock(&g.body);
    let n = body.node_mut(node)?;
    if n.op.node_type() != node_type {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    n.op = op;
    Ok(())
}

macro_rules! node_params {
    ($($get:ident, $set:ident, $params:ty => $ty:expr, $v2:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $get(node: usize, params: *mut $params) -> CUresult {
            // SAFETY: CUDA's contract.
            entry(|| unsafe { get_params(node, $ty, params.cast(), $v2) })
        }

        #[no_mangle]
        pub unsafe extern "C" fn $set(node: usize, params: *const $params) -> CUresult {
            // SAFETY: CUDA's contract.
            entry(|| unsafe { set_params(node, $ty, params.cast(), $v2) })
        }
    )*};
}

node_params! {
    cuGraphKernelNodeGetParams, cuGraphKernelNodeSetParams, KernelParams => NODE_KERNEL, false;
    cuGraphKernelNodeGetParams_v2, cuGraphKernelNodeSetParams_v2, KernelParamsV2 => NODE_KERNEL, true;
    cuGraphMemcpyNodeGetParams, cuGraphMemcpyNodeSetParams, Memcpy3d => NODE_MEMCPY, false;
    cuGraphMemsetNodeGetParams, cuGraphMemsetNodeSetParams, MemsetParams => NODE_MEMSET, false;
    cuGraphHostNodeGetParams, cuGraphHostNodeSetParams, HostParams => NODE_HOST, false;
}

/// The event of an event record or wait node.
fn node_event(node: usize, wait: bool) -> Result<usize, CUresult> {
    let d = driver()?;
    let g = owner(d, node)?;
    let body = lock(&g.body);
    match (&body.node(node)?.op, wait) {
        (Op::EventRecord(e), false) | (Op::EventWait(e), true) => Ok(*e),
        _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
    }
}

fn set_node_event(node: usize, event: usize, wait: bool) -> Result<(), CUresult> {
    let d = driver()?;
    let g = owner(d, node)?;
    let op = event_node(d, event, wait)?;
    let mut body = lock(&g.body);
    let n = body.node_mut(node)?;
    if n.op.node_type() != op.node_type() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    n.op = op;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphEventRecordNodeGetEvent(
    node: usize,
    event: *mut usize,
) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { out(event, node_event(node, false)?) })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphEventWaitNodeGetEvent(node: usize, event: *mut usize) -> CUresult {
    // SAFETY: CUDA's contract.
    entry(|| unsafe { out(event, node_event(node, true)?) })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphEventRecordNodeSetEvent(node: usize, event: usize) -> CUresult {
    entry(|| set_node_event(node, event, false))
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphEventWaitNodeSetEvent(node: usize, event: usize) -> CUresult {
    entry(|| set_node_event(node, event, true))
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphClone(clone: *mut usize, original: usize) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = graph_of(d, original)?;
        if clone.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let copy = Arc::new(Graph { body: Mutex::default(), held: g.held.retained()? });
        let h = d.graphs.insert_arc(copy.clone());
        let source = lock(&g.body).clone();
        let renamed: BTreeMap<usize, usize> =
            source.nodes.keys().map(|&k| (k, d.graph_nodes.insert(h))).collect();
        let mut body = lock(&copy.body);
        for (k, node) in source.nodes {
            let new = renamed.get(&k).copied().ok_or(CUresult::CUDA_ERROR_UNKNOWN)?;
            let deps = node.deps.iter().filter_map(|dep| renamed.get(dep).copied()).collect();
            body.nodes.insert(new, Node { deps, origin: k, ..node });
        }
        // SAFETY: non-null and writable (CUDA's contract).
        unsafe { out(clone, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphNodeFindInClone(
    node: *mut usize,
    original: usize,
    cloned: usize,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = graph_of(d, cloned)?;
        let found = lock(&g.body)
            .nodes
            .iter()
            .find(|(_, n)| n.origin == original)
            .map(|(&h, _)| h)
            .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: CUDA's contract.
        unsafe { out(node, found) }
    })
}

/// `cuGraphDebugDotPrint`: the graph in Graphviz's DOT language (nodes by handle and
/// type, and the edges).
#[no_mangle]
pub unsafe extern "C" fn cuGraphDebugDotPrint(
    graph: usize,
    path: *const c_char,
    _flags: c_uint,
) -> CUresult {
    entry(|| {
        let d = driver()?;
        let g = graph_of(d, graph)?;
        // SAFETY: a NUL-terminated path (CUDA's contract).
        let path = unsafe { crate::c_str(path) }?;
        let mut text = String::from("digraph ptxvk {\n");
        for (h, n) in &lock(&g.body).nodes {
            let name = match &n.op {
                Op::Kernel(k) => format!("kernel {}", k.func.name.to_string_lossy()),
                Op::Memcpy(_) => "memcpy".into(),
                Op::Memset(_) => "memset".into(),
                Op::Host(_) => "host".into(),
                Op::Empty => "empty".into(),
                Op::EventRecord(_) => "event record".into(),
                Op::EventWait(_) => "event wait".into(),
            };
            text += &format!("  n{h:x} [label=\"{name}\"];\n");
            for dep in &n.deps {
                text += &format!("  n{dep:x} -> n{h:x};\n");
            }
        }
        text += "}\n";
        std::fs::write(path, text).map_err(|_| CUresult::CUDA_ERROR_OPERATING_SYSTEM)
    })
}
