//! CUDA graphs and stream capture (CUDA Programming Guide, "CUDA Graphs"; driver API
//! "Graph Management" and "Stream Management").
//!
//! # Graphs
//!
//! A graph (`CUgraph`) is a DAG of nodes: kernel launches, copies (`CUDA_MEMCPY3D`),
//! memsets, host functions, event records and waits, and empty nodes. Nodes are built one
//! by one (`cuGraphAdd*Node`, `cuGraphAddDependencies`) or captured from streams. Node
//! parameters are copied when given, as CUDA specifies: a kernel node's parameter block is
//! assembled from `kernelParams`/`extra` when the node is added or its parameters are set,
//! so the client's argument storage may change afterwards; copies and memsets keep the
//! addresses they were given and read or write that memory when they run.
//!
//! `cuGraphInstantiate*` copies the graph into an executable graph (`CUgraphExec`) and fixes
//! its order of execution: a topological order that, among the nodes ready at each step,
//! takes the one added first (so captured work runs in capture order, and the order never
//! depends on handle values or hash iteration). A cycle fails instantiation. `cuGraphLaunch`
//! enqueues the nodes in that order on one stream, so each node runs after every node before
//! it, which satisfies every dependency (ptxvk runs a graph's independent branches one after
//! another, never concurrently). A copy from host memory that follows other work of the same
//! launch waits for that work first, so it reads what a host node or a kernel wrote.
//! Device-to-host copies wait for their data as `cuMemcpyDtoHAsync` does here.
//!
//! Executable graphs are changed node by node (`cuGraphExec*SetParams`, `cuGraphNodeSetEnabled`)
//! or from a graph of the same topology (`cuGraphExecUpdate`: nodes are paired in the order they
//! were added, and each pair must have the same type and the same dependencies).
//!
//! # Stream capture
//!
//! `cuStreamBeginCapture` puts a created stream into capture: kernel launches, copies, memsets,
//! host functions (`cuLaunchHostFunc`) and event waits with `CU_EVENT_WAIT_EXTERNAL` (event
//! records with `CU_EVENT_RECORD_EXTERNAL`) on it become nodes of the capture's graph, each
//! depending on the stream's previous ones, instead of running. An ordinary `cuEventRecord`
//! on a capturing stream marks the point it was recorded at; another stream that waits for
//! that event joins the capture (fork), and a capturing stream that waits for an event
//! recorded in the same capture depends on its point (join). `cuStreamEndCapture` on the
//! stream that began the capture returns the graph; every stream that joined must have been
//! joined back (`CUDA_ERROR_STREAM_CAPTURE_UNJOINED` otherwise).
//!
//! What cannot be captured (a synchronize or query of the capturing stream, `cuStreamAddCallback`,
//! a graph launch, waiting for an event outside the capture without `CU_EVENT_WAIT_EXTERNAL`)
//! fails, says why on stderr, and invalidates the capture, so `cuStreamEndCapture` then fails
//! with `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` rather than returning a graph that silently
//! lacks work. The default streams cannot capture. Capture modes are accepted but not
//! enforced (calls CUDA forbids during a global-mode capture, such as `cuMemAlloc`, are
//! allowed).
//!
//! Not implemented: child-graph, memory-allocation, external-semaphore, batch-mem-op and
//! conditional nodes (`cuGraphAddChildGraphNode`, … answer `CUDA_ERROR_NOT_FOUND` through
//! `cuGetProcAddress`), the generic `cuGraphAddNode`/`cuGraphNodeSetParams`, and capturing a
//! graph launch as a child graph.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use cudarc::driver::sys::CUresult;
use ptxvk::vk::Pattern;

use crate::memory::Memcpy3d;
use crate::module::Function;
use crate::state::{driver, Driver};
use crate::stream::{stream_of, StreamEntry, StreamRef};
use crate::{arg, entry, out};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// Node operations.

/// A kernel launch with its parameter block (copied when the node was made).
pub(crate) struct KernelOp {
    pub(crate) func: Arc<Function>,
    /// The `CUfunction` (or `CUkernel`: one kind of handle here) the client named.
    pub(crate) handle: usize,
    pub(crate) grid: [c_uint; 3],
    pub(crate) block: [c_uint; 3],
    pub(crate) shared: c_uint,
    pub(crate) params: Vec<u8>,
    /// The allocations the parameters point at, alive while the node is.
    pub(crate) keep: Vec<ptxvk::vk::Buffer>,
    /// `kernelParams` as `cuGraphKernelNodeGetParams` hands it out: the address of each
    /// parameter in `params` (whose heap storage does not move while the node lives).
    args: Vec<usize>,
}

impl KernelOp {
    pub(crate) fn new(
        func: Arc<Function>,
        handle: usize,
        grid: [c_uint; 3],
        block: [c_uint; 3],
        shared: c_uint,
        params: Vec<u8>,
        keep: Vec<ptxvk::vk::Buffer>,
    ) -> Result<KernelOp, CUresult> {
        let base = params.as_ptr() as usize;
        let offsets = func.kernel()?.info().abi.params.iter().map(|p| p.offset as usize);
        let args = offsets.map(|offset| base + offset).collect();
        Ok(KernelOp { func, handle, grid, block, shared, params, keep, args })
    }

    /// Enqueues the launch on `stream`.
    fn run_on(&self, stream: &ptxvk::Stream) -> Result<(), CUresult> {
        self.func
            .kernel()?
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

impl Clone for KernelOp {
    /// A copy with its own parameter block (and `args` pointing into it).
    fn clone(&self) -> KernelOp {
        let params = self.params.clone();
        let (old, new) = (self.params.as_ptr() as usize, params.as_ptr() as usize);
        KernelOp {
            func: self.func.clone(),
            handle: self.handle,
            grid: self.grid,
            block: self.block,
            shared: self.shared,
            keep: self.keep.clone(),
            args: self.args.iter().map(|&a| a - old + new).collect(),
            params,
        }
    }
}

/// A copy node's `CUDA_MEMCPY3D`.
#[derive(Clone, Copy)]
pub(crate) struct CopyOp(pub(crate) Memcpy3d);

// SAFETY: the descriptor's pointers are addresses the client gave, only dereferenced when the
// node runs, under the client's contract that they are then valid (as for any async copy);
// holding or moving the numbers between threads is harmless.
unsafe impl Send for CopyOp {}
// SAFETY: as above; shared references only read the numbers.
unsafe impl Sync for CopyOp {}

/// `CUDA_MEMSET_NODE_PARAMS` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemsetParams {
    pub(crate) dst: u64,
    pub(crate) pitch: usize,
    pub(crate) value: c_uint,
    pub(crate) element_size: c_uint,
    pub(crate) width: usize,
    pub(crate) height: usize,
}

const _: () = assert!(
    std::mem::size_of::<MemsetParams>()
        == std::mem::size_of::<cudarc::driver::sys::CUDA_MEMSET_NODE_PARAMS>()
);

impl MemsetParams {
    /// A memset of `height` rows of `width` elements of `pattern`, `pitch` bytes apart.
    pub(crate) fn new(
        dst: u64,
        pitch: usize,
        pattern: Pattern,
        width: usize,
        height: usize,
    ) -> MemsetParams {
        let (value, element_size) = match pattern {
            Pattern::U8(v) => (c_uint::from(v), 1),
            Pattern::U16(v) => (c_uint::from(v), 2),
            Pattern::U32(v) => (v, 4),
        };
        MemsetParams { dst, pitch, value, element_size, width, height }
    }

    /// The fill pattern; an element size other than 1, 2 or 4 is `CUDA_ERROR_INVALID_VALUE`.
    fn pattern(&self) -> Result<Pattern, CUresult> {
        match self.element_size {
            1 => Ok(Pattern::U8(self.value as u8)),
            2 => Ok(Pattern::U16(self.value as u16)),
            4 => Ok(Pattern::U32(self.value)),
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
    }

    /// Checks what CUDA checks when the node is made: the element size, the pitch of a
    /// multi-row memset, and that the first row lies in an allocation.
    fn check(&self, d: &Driver) -> Result<(), CUresult> {
        let pattern = self.pattern()?;
        let row = self
            .width
            .checked_mul(pattern.size() as usize)
            .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        if self.height > 1 && self.pitch < row {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        crate::memory::resolve(d, self.dst).map(drop)
    }
}

/// `CUDA_HOST_NODE_PARAMS` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostParams {
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
}

/// A host node's function and argument.
#[derive(Clone, Copy)]
pub(crate) struct HostOp {
    pub(crate) f: unsafe extern "C" fn(*mut c_void),
    pub(crate) data: usize,
}

impl HostOp {
    fn from_params(p: HostParams) -> Result<HostOp, CUresult> {
        let f = p.f.ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        Ok(HostOp { f, data: p.data as usize })
    }

    fn params(&self) -> HostParams {
        HostParams { f: Some(self.f), data: self.data as *mut c_void }
    }
}

/// What a node does.
#[derive(Clone)]
pub(crate) enum Op {
    Empty,
    Kernel(KernelOp),
    Memcpy(CopyOp),
    Memset(MemsetParams),
    Host(HostOp),
    /// `cuEventRecord` of this event handle.
    EventRecord(usize),
    /// `cuStreamWaitEvent` on this event handle.
    EventWait(usize),
}

/// `CUgraphNodeType`.
const NODE_KERNEL: c_int = 0;
const NODE_MEMCPY: c_int = 1;
const NODE_MEMSET: c_int = 2;
const NODE_HOST: c_int = 3;
const NODE_EMPTY: c_int = 5;
const NODE_WAIT_EVENT: c_int = 6;
const NODE_EVENT_RECORD: c_int = 7;

impl Op {
    fn node_type(&self) -> c_int {
        match self {
            Op::Kernel(_) => NODE_KERNEL,
            Op::Memcpy(_) => NODE_MEMCPY,
            Op::Memset(_) => NODE_MEMSET,
            Op::Host(_) => NODE_HOST,
            Op::Empty => NODE_EMPTY,
            Op::EventWait(_) => NODE_WAIT_EVENT,
            Op::EventRecord(_) => NODE_EVENT_RECORD,
        }
    }
}

// Graphs.

/// One node of a graph.
#[derive(Clone)]
struct Node {
    op: Op,
    /// The nodes it depends on, in the order the dependencies were added.
    deps: Vec<usize>,
    /// Disabled nodes of an executable graph do nothing (`cuGraphNodeSetEnabled`).
    enabled: bool,
    /// The node this one was cloned from (`cuGraphNodeFindInClone`); itself otherwise.
    origin: usize,
}

/// A graph's nodes by handle. Handles grow with every node made, so the map's order is the
/// order the nodes were added in.
#[derive(Clone, Default)]
struct Body {
    nodes: BTreeMap<usize, Node>,
}

impl Body {
    fn node(&self, h: usize) -> Result<&Node, CUresult> {
        self.nodes.get(&h).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
    }

    fn node_mut(&mut self, h: usize) -> Result<&mut Node, CUresult> {
        self.nodes.get_mut(&h).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)
    }

    /// The nodes that depend on `h`, in the order they were added.
    fn dependents(&self, h: usize) -> Vec<usize> {
        self.nodes.iter().filter(|(_, n)| n.deps.contains(&h)).map(|(&k, _)| k).collect()
    }

    /// Dependencies `deps` for a new node: nodes of this graph, each named once.
    fn check_deps(&self, deps: &[usize]) -> Result<(), CUresult> {
        let distinct: BTreeSet<_> = deps.iter().collect();
        if distinct.len() != deps.len() || deps.iter().any(|h| !self.nodes.contains_key(h)) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        Ok(())
    }

    /// The order of execution (module doc); `None` for a cycle.
    fn order(&self) -> Option<Vec<usize>> {
        let mut waiting: BTreeMap<usize, usize> =
            self.nodes.iter().map(|(&h, n)| (h, n.deps.len())).collect();
        let mut dependents: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (&h, n) in &self.nodes {
            for &dep in &n.deps {
                dependents.entry(dep).or_default().push(h);
            }
        }
        let mut ready: BTreeSet<usize> =
            waiting.iter().filter(|(_, &w)| w == 0).map(|(&h, _)| h).collect();
        let mut order = Vec::with_capacity(self.nodes.len());
        while let Some(h) = ready.pop_first() {
            order.push(h);
            for &next in dependents.get(&h).map_or(&[][..], Vec::as_slice) {
                let w = waiting.get_mut(&next)?;
                *w -= 1;
                if *w == 0 {
                    ready.insert(next);
                }
            }
        }
        (order.len() == self.nodes.len()).then_some(order)
    }

    /// Every node `roots` depend on, directly or not, and the roots themselves.
    fn ancestors(&self, roots: &[usize]) -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut todo = roots.to_vec();
        while let Some(h) = todo.pop() {
            if seen.insert(h) {
                if let Some(n) = self.nodes.get(&h) {
                    todo.extend(&n.deps);
                }
            }
        }
        seen
    }
}

/// References a graph holds on user objects, released when it is dropped.
#[derive(Default)]
struct Held(Mutex<Vec<(usize, c_uint)>>);

impl Held {
    /// A copy of the references, retained again (for an executable graph or a clone).
    fn retained(&self) -> Result<Held, CUresult> {
        let held = lock(&self.0).clone();
        for &(object, count) in &held {
            retain_user_object(object, count)?;
        }
        Ok(Held(Mutex::new(held)))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let held = std::mem::take(&mut *lock(&self.0));
        for (object, count) in held {
            let _ = release_user_object(object, count);
        }
    }
}

/// A graph (`CUgraph`).
#[derive(Default)]
pub(crate) struct Graph {
    body: Mutex<Body>,
    held: Held,
}

/// An executable graph (`CUgraphExec`): a copy of a graph's nodes, keyed by the graph's node
/// handles (which `cuGraphExec*SetParams` name), and its order of execution.
pub(crate) struct Exec {
    body: Mutex<Body>,
    order: Vec<usize>,
    flags: u64,
    /// Its own references to the graph's user objects, released when it is destroyed.
    _held: Held,
}

fn graph_of(d: &Driver, graph: usize) -> Result<Arc<Graph>, CUresult> {
    d.graphs.get(graph).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
}

fn exec_of(d: &Driver, exec: usize) -> Result<Arc<Exec>, CUresult> {
    d.graph_execs.get(exec).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
}

/// The graph node `node` belongs to.
fn owner(d: &Driver, node: usize) -> Result<Arc<Graph>, CUresult> {
    let graph = d.graph_nodes.get(node).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    graph_of(d, *graph)
}

/// Adds a node doing `op` after `deps` to graph `graph` (`g`).
fn add_node(
    d: &Driver,
    graph: usize,
    g: &Graph,
    deps: &[usize],
    op: Op,
) -> Result<usize, CUresult> {
    let mut body = lock(&g.body);
    body.check_deps(deps)?;
    let h = d.graph_nodes.insert(graph);
    body.nodes.insert(h, Node { op, deps: deps.to_vec(), enabled: true, origin: h });
    Ok(h)
}

/// `n` handles at `p` (null when `n` is 0).
///
/// # Safety
/// `p` is null or readable for `n` handles.
unsafe fn handles<'a>(p: *const usize, n: usize) -> Result<&'a [usize], CUresult> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: readable for `n` handles (function contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Writes a list as CUDA's node queries do: with `list` null, its length to `count`;
/// otherwise up to `*count` entries, nulls after the end, and how many were written.
///
/// # Safety
/// `count` is null or read-writable; `list` is null or writable for `*count` handles.
unsafe fn write_list(items: &[usize], list: *mut usize, count: *mut usize) -> Result<(), CUresult> {
    if count.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    if list.is_null() {
        // SAFETY: non-null and writable (function contract).
        unsafe { count.write(items.len()) };
        return Ok(());
    }
    // SAFETY: non-null and readable (function contract).
    let room = unsafe { count.read() };
    for i in 0..room {
        // SAFETY: `list` has room for `room` handles (function contract).
        unsafe { list.add(i).write(items.get(i).copied().unwrap_or(0)) };
    }
    // SAFETY: as above.
    unsafe { count.write(room.min(items.len())) };
    Ok(())
}

/// `CUgraphEdgeData`: ports and type of an edge, all zero for the ordinary edges ptxvk has.
const EDGE_DATA_BYTES: usize = 8;

/// Zeroes `n` `CUgraphEdgeData` entries at `p` when it is not null.
///
/// # Safety
/// `p` is null or writable for `n` entries.
unsafe fn zero_edges(p: *mut c_void, n: usize) {
    if !p.is_null() {
        // SAFETY: writable for `n` 8-byte entries (function contract).
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, n * EDGE_DATA_BYTES) };
    }
}

/// Checks edge data given with dependencies: null, or every edge ordinary (all zero).
///
/// # Safety
/// `p` is null or readable for `n` entries.
unsafe fn check_edges(p: *const c_void, n: usize) -> Result<(), CUresult> {
    if p.is_null() || n == 0 {
        return Ok(());
    }
    // SAFETY: readable for `n` 8-byte entries (function contract).
    let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n * EDGE_DATA_BYTES) };
    if bytes.iter().any(|&b| b != 0) {
        eprintln!("ptxvk libcuda: only ordinary graph edges are supported (no ports or types)");
        return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
    }
    Ok(())
}

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
unsafe fn read_op(
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

fn event_node(d: &Driver, event: usize, wait: bool) -> Result<Op, CUresult> {
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
    let marker = d.device.create_event(false).map_err(crate::code)?;
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

// User objects.

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
    let mut refs = lock(&o.refs);
    *refs = refs.checked_add(count).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
    Ok(())
}

/// Drops `count` references; the last one calls the destructor (on the calling thread,
/// after every lock is released; CUDA forbids destructors to call the API).
fn release_user_object(object: usize, count: c_uint) -> Result<(), CUresult> {
    let d = driver()?;
    let o = d.user_objects.get(object).ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
    let last = {
        let mut refs = lock(&o.refs);
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
        lock(&g.held.0).push((object, count));
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
            let mut held = lock(&g.held.0);
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

// Stream capture.

/// One capture: the graph it records into and the streams taking part.
pub(crate) struct Session {
    graph: usize,
    g: Arc<Graph>,
    /// The stream that began the capture (and must end it).
    origin: usize,
    /// Something that cannot be captured was enqueued on one of its streams.
    invalid: AtomicBool,
    /// Streams that joined by waiting for an event of the capture.
    joined: Mutex<Vec<Weak<StreamEntry>>>,
    /// Begun by `cuStreamBeginCaptureToGraph`: the graph is the client's, kept on failure.
    client_graph: bool,
}

/// A stream's capture state.
#[derive(Default)]
pub(crate) enum Capture {
    #[default]
    Idle,
    /// Capturing: the nodes the stream's next node depends on.
    Active { session: Arc<Session>, deps: Vec<usize> },
}

/// A stream's capture state behind its lock (`StreamEntry::capture`).
pub(crate) type CaptureCell = Mutex<Capture>;

/// Where a `cuEventRecord` on a capturing stream was made (`Driver::captured_events`).
pub(crate) struct CapturedEvent {
    session: Weak<Session>,
    deps: Vec<usize>,
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
