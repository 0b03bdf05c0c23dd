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
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cudarc::driver::sys::CUresult;
use ptxvk::vk::Pattern;

use crate::objects::Function;
use crate::objects::Memcpy3d;
use crate::objects::{Body, CopyOp, Exec, Graph, Held, HostOp, KernelOp, MemsetParams, Node, Op};
use crate::objects::{StreamEntry, StreamRef};
use crate::state::stream_of;
use crate::state::{driver, Driver};
use crate::{arg, entry, out};

mod capture;
mod exec;
mod nodes;
mod user_objects;

pub(crate) use capture::*;
pub use exec::*;
pub use nodes::*;
pub use user_objects::*;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// Node operations.

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

// SAFETY: the descriptor's pointers are addresses the client gave, only dereferenced when the
// node runs, under the client's contract that they are then valid (as for any async copy);
// holding or moving the numbers between threads is harmless.
unsafe impl Send for CopyOp {}
// SAFETY: as above; shared references only read the numbers.
unsafe impl Sync for CopyOp {}

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
        crate::state::resolve(d, self.dst).map(drop)
    }
}

/// `CUDA_HOST_NODE_PARAMS` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostParams {
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
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
