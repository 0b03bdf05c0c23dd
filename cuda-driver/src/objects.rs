//! The objects the driver's handles name: what each table of the driver's state
//! (`state::Driver`) holds, and the types those are made of. Their operations are with their API calls
//! (`device.rs`, `module.rs`, `stream.rs`, `texture.rs`, `memory/`, `graph/`); this
//! file only describes them, so that the state below every call imports none of the
//! calls.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_uint, c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};
use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::sys::CUresult;
use ptxvk::vk::Stream;
use ptxvk::{ChannelKind, TextureDesc};

// Contexts and the primary context (`device.rs`).

/// A context handle's object.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) flags: c_uint,
    pub(crate) primary: bool,
    /// The fault that made the context unusable (*Sticky errors* above).
    pub(crate) sticky: Mutex<Option<CUresult>>,
}

/// The primary context's state.
#[derive(Debug, Default)]
pub(crate) struct Primary {
    pub(crate) handle: Option<usize>,
    pub(crate) refs: u32,
    pub(crate) flags: c_uint,
}

// Modules, functions and JIT links (`module.rs`).

/// A module handle's object: the compiled module (shared with its functions) and the
/// handles of its functions.
pub(crate) struct LoadedModule {
    pub(crate) module: Arc<ptxvk::Module>,
    pub(crate) functions: Vec<(String, usize)>,
}

/// A function handle's object.
pub(crate) struct Function {
    pub(crate) module: Arc<ptxvk::Module>,
    pub(crate) index: usize,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` as set by the client.
    pub(crate) max_dynamic_shared: AtomicU32,
    /// `CU_JIT_MAX_REGISTERS` of the load, which caps the reported register count.
    pub(crate) max_registers: Option<u32>,
    /// The architecture of the module's PTX (`.target sm_100` is 100), which
    /// `CU_FUNC_ATTRIBUTE_PTX_VERSION` reports.
    pub(crate) ptx_arch: Option<u32>,
    /// The kernel's name, NUL-terminated (`cuFuncGetName` hands out a pointer to it).
    pub(crate) name: CString,
    /// The handle of the module (library) it belongs to, set once that is inserted.
    pub(crate) module_handle: AtomicUsize,
}

/// A JIT link in progress: the PTX files added so far (name and text) and the linked
/// result.
#[derive(Default)]
pub(crate) struct Link {
    pub(crate) ptx: Vec<(String, String)>,
    pub(crate) output: Vec<u8>,
    pub(crate) options: JitOptions,
}

/// The JIT options ptxvk acts on: where to write the error log
/// (`CU_JIT_ERROR_LOG_BUFFER` and its size) and `CU_JIT_MAX_REGISTERS`.
#[derive(Clone, Copy, Default)]
pub(crate) struct JitOptions {
    pub(crate) buffer: usize,
    pub(crate) size: usize,
    pub(crate) max_registers: Option<u32>,
}

// Streams (`stream.rs`).

/// A stream handle's object.
pub(crate) struct StreamEntry {
    pub(crate) stream: Stream,
    pub(crate) flags: c_uint,
    pub(crate) priority: c_int,
    /// Stream capture (`crate::graph`).
    pub(crate) capture: CaptureCell,
}

/// A stream an API call works on.
pub(crate) enum StreamRef {
    Created(Arc<StreamEntry>),
    Default(Stream),
}

// Arrays, mipmapped arrays and texture references (`texture.rs`).

/// A CUDA array: its memory and layout.
pub(crate) struct Array {
    /// The memory (shared by the levels of a mipmapped array) and where this array's
    /// texels start in it.
    pub(crate) buffer: std::sync::Arc<ptxvk::vk::Buffer>,
    pub(crate) offset: u64,
    /// Its description (`depth`: slices of a 3-D array or layers; 0 for 1-D and 2-D).
    pub(crate) desc: Array3dDescriptor,
    pub(crate) kind: ChannelKind,
    pub(crate) channel_bytes: u32,
}

/// `CUDA_ARRAY3D_DESCRIPTOR`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Array3dDescriptor {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
    pub(crate) format: c_uint,
    pub(crate) channels: c_uint,
    pub(crate) flags: c_uint,
}

/// A mipmapped array: its levels packed level after level in one allocation, and the
/// level arrays handed out (`cuMipmappedArrayGetLevel`), freed with it.
pub(crate) struct Mipmapped {
    /// Level 0, at the start of the allocation.
    pub(crate) base: Array,
    pub(crate) levels: u32,
    pub(crate) level_arrays: std::sync::Mutex<Vec<usize>>,
}

/// A texture or surface reference of a module (`cuModuleGetTexRef`): the sampler state
/// and memory the host sets, bound by writing a texture object's handle into the
/// module's 8-byte variable of that name (`ptxvk::Module::bind_texture`).
pub(crate) struct Reference {
    pub(crate) module: std::sync::Arc<ptxvk::Module>,
    pub(crate) name: String,
    pub(crate) state: std::sync::Mutex<(TextureDesc, c_uint, Option<ptxvk::TextureObject>)>,
}

// Copies (`memory/`).

/// `CUDA_MEMCPY3D` (cuda.h), memory types as plain integers (see [`Memcpy2d`](crate::memory::Memcpy2d)).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Memcpy3d {
    pub(crate) src_x_bytes: usize,
    pub(crate) src_y: usize,
    pub(crate) src_z: usize,
    pub(crate) src_lod: usize,
    pub(crate) src_type: c_uint,
    pub(crate) src_host: *const c_void,
    pub(crate) src_device: u64,
    pub(crate) src_array: usize,
    pub(crate) reserved0: *mut c_void,
    pub(crate) src_pitch: usize,
    pub(crate) src_height: usize,
    pub(crate) dst_x_bytes: usize,
    pub(crate) dst_y: usize,
    pub(crate) dst_z: usize,
    pub(crate) dst_lod: usize,
    pub(crate) dst_type: c_uint,
    pub(crate) dst_host: *mut c_void,
    pub(crate) dst_device: u64,
    pub(crate) dst_array: usize,
    pub(crate) reserved1: *mut c_void,
    pub(crate) dst_pitch: usize,
    pub(crate) dst_height: usize,
    pub(crate) width_bytes: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
}

// Graphs and their nodes (`graph/`).

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
    pub(crate) args: Vec<usize>,
}

/// A copy node's `CUDA_MEMCPY3D`.
#[derive(Clone, Copy)]
pub(crate) struct CopyOp(pub(crate) Memcpy3d);

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

/// A host node's function and argument.
#[derive(Clone, Copy)]
pub(crate) struct HostOp {
    pub(crate) f: unsafe extern "C" fn(*mut c_void),
    pub(crate) data: usize,
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

/// One node of a graph.
#[derive(Clone)]
pub(crate) struct Node {
    pub(crate) op: Op,
    /// The nodes it depends on, in the order the dependencies were added.
    pub(crate) deps: Vec<usize>,
    /// Disabled nodes of an executable graph do nothing (`cuGraphNodeSetEnabled`).
    pub(crate) enabled: bool,
    /// The node this one was cloned from (`cuGraphNodeFindInClone`); itself otherwise.
    pub(crate) origin: usize,
}

/// A graph's nodes by handle. Handles grow with every node made, so the map's order is the
/// order the nodes were added in.
#[derive(Clone, Default)]
pub(crate) struct Body {
    pub(crate) nodes: BTreeMap<usize, Node>,
}

/// References a graph holds on user objects, released when it is dropped.
#[derive(Default)]
pub(crate) struct Held(pub(crate) Mutex<Vec<(usize, c_uint)>>);

/// A graph (`CUgraph`).
#[derive(Default)]
pub(crate) struct Graph {
    pub(crate) body: Mutex<Body>,
    pub(crate) held: Held,
}

/// An executable graph (`CUgraphExec`): a copy of a graph's nodes, keyed by the graph's node
/// handles (which `cuGraphExec*SetParams` name), and its order of execution.
pub(crate) struct Exec {
    pub(crate) body: Mutex<Body>,
    pub(crate) order: Vec<usize>,
    pub(crate) flags: u64,
    /// Its own references to the graph's user objects, released when it is destroyed.
    pub(crate) _held: Held,
}

// Stream capture (`graph/capture.rs`).

/// One capture: the graph it records into and the streams taking part.
pub(crate) struct Session {
    pub(crate) graph: usize,
    pub(crate) g: Arc<Graph>,
    /// The stream that began the capture (and must end it).
    pub(crate) origin: usize,
    /// Something that cannot be captured was enqueued on one of its streams.
    pub(crate) invalid: AtomicBool,
    /// Streams that joined by waiting for an event of the capture.
    pub(crate) joined: Mutex<Vec<Weak<StreamEntry>>>,
    /// Begun by `cuStreamBeginCaptureToGraph`: the graph is the client's, kept on failure.
    pub(crate) client_graph: bool,
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
    pub(crate) session: Weak<Session>,
    pub(crate) deps: Vec<usize>,
}

// User objects (`graph/user_objects.rs`).

/// A user object (`CUuserObject`): a pointer and its destructor, called once the last
/// reference (the caller's or a graph's) is released.
pub(crate) struct UserObject {
    pub(crate) ptr: usize,
    pub(crate) destroy: unsafe extern "C" fn(*mut c_void),
    pub(crate) refs: Mutex<c_uint>,
}
