//! Driver-API forms real programs use (issue #34 item 5), through the C ABI as a client
//! loads it: a packed parameter buffer smaller than the aligned block, graphs built node by
//! node and by stream capture, executable-graph updates, peer queries on one device, and
//! `cuMemcpyBatchAsync`. Kernels are hand-written PTX below; every expected value comes
//! from a CPU model of the kernel (`y = fma(a, x, y)`, `dst = src + k`).

mod common;

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use common::*;
use cudarc::driver::sys::{
    CUDA_KERNEL_NODE_PARAMS_v2, CUmemorytype, CUDA_HOST_NODE_PARAMS, CUDA_MEMCPY3D,
    CUDA_MEMSET_NODE_PARAMS,
};

const KERNELS: &str = r#"
.version 7.0
.target sm_70
.address_size 64

// y[i] = fma(a, x[i], y[i]) for i < n.
.visible .entry saxpy(
    .param .u64 x_param,
    .param .u64 y_param,
    .param .f32 a_param,
    .param .u32 n_param
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [x_param];
    ld.param.u64 %rd2, [y_param];
    ld.param.f32 %f1, [a_param];
    ld.param.u32 %r1, [n_param];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f2, [%rd6];
    ld.global.f32 %f3, [%rd7];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd7], %f4;
DONE:
    ret;
}

// dst[i] = src[i] + k for every thread i of one block.
.visible .entry add_k(
    .param .u64 dst_param,
    .param .u64 src_param,
    .param .s32 k_param
)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<7>;
    ld.param.u64 %rd1, [dst_param];
    ld.param.u64 %rd2, [src_param];
    ld.param.s32 %r1, [k_param];
    mov.u32 %r2, %tid.x;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd4, %rd5;
    ld.global.s32 %r3, [%rd6];
    add.s32 %r3, %r3, %r1;
    add.s64 %rd6, %rd3, %rd5;
    st.global.s32 [%rd6], %r3;
    ret;
}
"#;

const INVALID_CONTEXT: R = 201;
const INVALID_DEVICE: R = 101;
const PEER_ACCESS_UNSUPPORTED: R = 217;
const PEER_ACCESS_NOT_ENABLED: R = 705;
const CAPTURE_UNSUPPORTED: R = 900;
const CAPTURE_INVALIDATED: R = 901;
const CAPTURE_UNJOINED: R = 904;
const GRAPH_EXEC_UPDATE_FAILURE: R = 910;

/// `CUgraphNodeType`.
const NODE_KERNEL: c_int = 0;
const NODE_MEMCPY: c_int = 1;
const NODE_MEMSET: c_int = 2;
const NODE_HOST: c_int = 3;
const NODE_EMPTY: c_int = 5;

/// The kernels above, loaded; `(saxpy, add_k)`.
fn kernels(lib: &libloading::Library) -> (usize, usize) {
    let load: Load = proc(lib, "cuModuleLoadData");
    let get_function: GetFunction = proc(lib, "cuModuleGetFunction");
    let text = format!("{KERNELS}\0");
    let (mut module, mut saxpy, mut add_k) = (0, 0, 0);
    // SAFETY: a NUL-terminated image, NUL-terminated names, writable out-pointers.
    unsafe {
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        assert_eq!(get_function(&mut saxpy, module, c"saxpy".as_ptr()), SUCCESS);
        assert_eq!(get_function(&mut add_k, module, c"add_k".as_ptr()), SUCCESS);
    }
    (saxpy, add_k)
}

fn alloc(lib: &libloading::Library, bytes: usize) -> u64 {
    let alloc: Alloc = proc(lib, "cuMemAlloc");
    let mut d = 0u64;
    // SAFETY: a writable out-pointer.
    assert_eq!(unsafe { alloc(&mut d, bytes) }, SUCCESS);
    d
}

fn upload<T: Copy>(lib: &libloading::Library, dst: u64, data: &[T]) {
    let htod: CopyToDevice = proc(lib, "cuMemcpyHtoD");
    // SAFETY: `data` is readable for its size.
    assert_eq!(unsafe { htod(dst, data.as_ptr().cast(), std::mem::size_of_val(data)) }, SUCCESS);
}

fn download<T: Copy + Default>(lib: &libloading::Library, src: u64, n: usize) -> Vec<T> {
    let dtoh: CopyToHost = proc(lib, "cuMemcpyDtoH");
    let mut out = vec![T::default(); n];
    // SAFETY: `out` is writable for its size.
    let r = unsafe { dtoh(out.as_mut_ptr().cast(), src, n * std::mem::size_of::<T>()) };
    assert_eq!(r, SUCCESS);
    out
}

/// `cuGetProcAddress_v2(name, version, flags)`: the entry point, or the result code.
fn proc_at(
    lib: &libloading::Library,
    name: &str,
    version: c_int,
    flags: u64,
) -> Result<*const c_void, R> {
    type GetProc =
        unsafe extern "C" fn(*const c_char, *mut *const c_void, c_int, u64, *mut c_int) -> R;
    // SAFETY: the symbol has this signature.
    let get = unsafe { lib.get::<GetProc>(b"cuGetProcAddress_v2") }.expect("cuGetProcAddress_v2");
    let cname = std::ffi::CString::new(name).expect("name");
    let (mut pfn, mut status) = (std::ptr::null(), -1);
    // SAFETY: a valid string and out-pointers.
    match unsafe { get(cname.as_ptr(), &mut pfn, version, flags, &mut status) } {
        SUCCESS => Ok(pfn),
        r => Err(r),
    }
}

/// Entry point `name` as a client built for CUDA `version` gets it.
fn proc_v<T: Copy>(lib: &libloading::Library, name: &str, version: c_int) -> T {
    let pfn = proc_at(lib, name, version, 0).unwrap_or_else(|r| panic!("{name}: error {r}"));
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*const c_void>());
    // SAFETY: a function pointer of the type the caller names for this entry point.
    unsafe { std::mem::transmute_copy(&pfn) }
}

/// The address of export `name` (`dlsym`).
fn export(lib: &libloading::Library, name: &str) -> *const c_void {
    // SAFETY: only the address is taken.
    let s = unsafe { lib.get::<*const c_void>(name.as_bytes()) };
    *s.unwrap_or_else(|e| panic!("export {name}: {e}"))
}

#[test]
fn a_parameter_buffer_needs_only_to_cover_the_last_parameter() {
    let Some(lib) = library_with_context() else { return };
    let (_, add_k) = kernels(&lib);
    let launch: Launch = proc(&lib, "cuLaunchKernel");
    let n = 64usize;
    let src_values: Vec<i32> = (0..n as i32).map(|i| i * 3 - 50).collect();
    let (src, dst) = (alloc(&lib, n * 4), alloc(&lib, n * 4));
    upload(&lib, src, &src_values);
    // (u64 dst, u64 src, s32 k): the last parameter ends at byte 20; the block is 24.
    for (size, k, accepted) in
        [(20usize, 7i32, true), (24, -9, true), (19, 1, false), (12, 1, false)]
    {
        let mut block = Vec::new();
        block.extend(dst.to_le_bytes());
        block.extend(src.to_le_bytes());
        block.extend(k.to_le_bytes());
        block.extend([0xaa; 4]);
        let mut size_value = size;
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut(1), // CU_LAUNCH_PARAM_BUFFER_POINTER
            block.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(2), // CU_LAUNCH_PARAM_BUFFER_SIZE
            (&mut size_value as *mut usize).cast(),
            std::ptr::null_mut(),
        ];
        // SAFETY: `extra` lists a buffer readable for at least `size` bytes.
        let r = unsafe {
            launch(
                add_k,
                1,
                1,
                1,
                n as c_uint,
                1,
                1,
                0,
                0,
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        };
        if !accepted {
            assert_eq!(r, INVALID_VALUE, "a {size}-byte buffer ends before the last parameter");
            continue;
        }
        assert_eq!(r, SUCCESS, "a {size}-byte buffer covers the parameters");
        let want: Vec<i32> = src_values.iter().map(|v| v + k).collect();
        assert_eq!(download::<i32>(&lib, dst, n), want, "buffer of {size} bytes");
    }
}

/// What the graphs' host node sees: the host copy of `y` when it runs.
struct HostState {
    out: *const f32,
    n: usize,
    calls: AtomicU32,
    sums: Mutex<Vec<f32>>,
}

/// A host node: counts its calls and sums the host buffer (which the copy before it
/// filled).
unsafe extern "C" fn observe(data: *mut c_void) {
    // SAFETY: `data` is the test's `HostState`, alive while graphs that name it run.
    let state = unsafe { &*data.cast::<HostState>() };
    // SAFETY: `out` is readable for `n` floats (the test's buffer).
    let values = unsafe { std::slice::from_raw_parts(state.out, state.n) };
    state.sums.lock().expect("host node state").push(values.iter().sum());
    state.calls.fetch_add(1, Ordering::SeqCst);
}

/// A `CUDA_MEMCPY3D` copying `len` bytes from device memory to host memory.
fn device_to_host(dst: *mut c_void, src: u64, len: usize) -> CUDA_MEMCPY3D {
    CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: 0,
        srcHeight: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: CUmemorytype::CU_MEMORYTYPE_HOST,
        dstHost: dst,
        dstDevice: 0,
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: 0,
        dstHeight: 0,
        WidthInBytes: len,
        Height: 1,
        Depth: 1,
    }
}

type AddNode<P> = unsafe extern "C" fn(*mut usize, usize, *const usize, usize, *const P) -> R;
type AddNodeCtx<P> =
    unsafe extern "C" fn(*mut usize, usize, *const usize, usize, *const P, usize) -> R;
type NodeList = unsafe extern "C" fn(usize, *mut usize, *mut usize) -> R;

/// The CPU model: `fma(a, x, 1.0)` for every element (y is set to 1.0 first).
fn model(a: f32, x: &[f32]) -> Vec<f32> {
    x.iter().map(|&v| a.mul_add(v, 1.0)).collect()
}

/// A node list query: every entry.
fn list(query: NodeList, handle: usize) -> Vec<usize> {
    let mut n = 0usize;
    // SAFETY: (both) writable out-pointers of the sizes given.
    unsafe {
        assert_eq!(query(handle, std::ptr::null_mut(), &mut n), SUCCESS);
        let mut items = vec![0usize; n];
        assert_eq!(query(handle, items.as_mut_ptr(), &mut n), SUCCESS);
        items.truncate(n);
        items
    }
}

/// The graph entry points `a_graph_built_node_by_node…` calls, looked up by name.
struct GraphApi {
    create: unsafe extern "C" fn(*mut usize, c_uint) -> R,
    add_memset: AddNodeCtx<CUDA_MEMSET_NODE_PARAMS>,
    add_kernel: AddNode<CUDA_KERNEL_NODE_PARAMS_v2>,
    add_memcpy: AddNodeCtx<CUDA_MEMCPY3D>,
    add_host: AddNode<CUDA_HOST_NODE_PARAMS>,
    add_empty: unsafe extern "C" fn(*mut usize, usize, *const usize, usize) -> R,
    add_deps_v2: unsafe extern "C" fn(usize, *const usize, *const usize, *const c_void, usize) -> R,
    remove_deps: unsafe extern "C" fn(usize, *const usize, *const usize, usize) -> R,
    get_nodes: NodeList,
    get_roots: NodeList,
    get_deps: NodeList,
    get_dependents: NodeList,
    node_type: unsafe extern "C" fn(usize, *mut c_int) -> R,
    kernel_get: unsafe extern "C" fn(usize, *mut CUDA_KERNEL_NODE_PARAMS_v2) -> R,
    kernel_set: unsafe extern "C" fn(usize, *const CUDA_KERNEL_NODE_PARAMS_v2) -> R,
    instantiate: unsafe extern "C" fn(*mut usize, usize, u64) -> R,
    graph_launch: unsafe extern "C" fn(usize, usize) -> R,
    exec_kernel_set: unsafe extern "C" fn(usize, usize, *const CUDA_KERNEL_NODE_PARAMS_v2) -> R,
    exec_update: unsafe extern "C" fn(usize, usize, *mut [usize; 3]) -> R,
    clone: unsafe extern "C" fn(*mut usize, usize) -> R,
    find: unsafe extern "C" fn(*mut usize, usize, usize) -> R,
    destroy_node: unsafe extern "C" fn(usize) -> R,
    graph_destroy: unsafe extern "C" fn(usize) -> R,
    exec_destroy: unsafe extern "C" fn(usize) -> R,
    stream_create: unsafe extern "C" fn(*mut usize, c_uint) -> R,
    sync: unsafe extern "C" fn(usize) -> R,
}

/// Looks up [`GraphApi`]'s entry points in `lib`.
fn graph_api(lib: &libloading::Library) -> GraphApi {
    GraphApi {
        create: proc(lib, "cuGraphCreate"),
        add_memset: proc(lib, "cuGraphAddMemsetNode"),
        add_kernel: proc(lib, "cuGraphAddKernelNode"),
        add_memcpy: proc(lib, "cuGraphAddMemcpyNode"),
        add_host: proc(lib, "cuGraphAddHostNode"),
        add_empty: proc(lib, "cuGraphAddEmptyNode"),
        add_deps_v2: proc(lib, "cuGraphAddDependencies"),
        remove_deps: proc_v(lib, "cuGraphRemoveDependencies", 12020),
        get_nodes: proc(lib, "cuGraphGetNodes"),
        get_roots: proc(lib, "cuGraphGetRootNodes"),
        get_deps: proc_v(lib, "cuGraphNodeGetDependencies", 12020),
        get_dependents: proc_v(lib, "cuGraphNodeGetDependentNodes", 12020),
        node_type: proc(lib, "cuGraphNodeGetType"),
        kernel_get: proc(lib, "cuGraphKernelNodeGetParams"),
        kernel_set: proc(lib, "cuGraphKernelNodeSetParams"),
        instantiate: proc(lib, "cuGraphInstantiateWithFlags"),
        graph_launch: proc(lib, "cuGraphLaunch"),
        exec_kernel_set: proc(lib, "cuGraphExecKernelNodeSetParams"),
        exec_update: proc(lib, "cuGraphExecUpdate"),
        clone: proc(lib, "cuGraphClone"),
        find: proc(lib, "cuGraphNodeFindInClone"),
        destroy_node: proc(lib, "cuGraphDestroyNode"),
        graph_destroy: proc(lib, "cuGraphDestroy"),
        exec_destroy: proc(lib, "cuGraphExecDestroy"),
        stream_create: proc(lib, "cuStreamCreate"),
        sync: proc(lib, "cuStreamSynchronize"),
    }
}
#[test]
fn a_graph_built_node_by_node_runs_in_dependency_order_and_takes_new_parameters() {
    let Some(lib) = library_with_context() else { return };
    let (saxpy, _) = kernels(&lib);
    let n = 300usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.375 - 20.0).collect();
    let (dx, dy) = (alloc(&lib, n * 4), alloc(&lib, n * 4));
    upload(&lib, dx, &x);
    upload(&lib, dy, &vec![-7.0f32; n]);
    let mut out = vec![0f32; n];
    let state =
        HostState { out: out.as_ptr(), n, calls: AtomicU32::new(0), sums: Mutex::new(Vec::new()) };
    // SAFETY (this test): every pointer handed to the library outlives its use.
    unsafe {
        let api = graph_api(&lib);
        // CUDA 12.3's form with edge data (null: ordinary edges).
        let add_deps = |graph, from: &usize, to: &usize, n| {
            (api.add_deps_v2)(graph, from, to, std::ptr::null(), n)
        };

        let mut graph = 0usize;
        assert_eq!((api.create)(&mut graph, 0), SUCCESS);
        assert_eq!((api.create)(&mut graph, 1), INVALID_VALUE, "flags must be 0");
        assert_eq!((api.create)(&mut graph, 0), SUCCESS);

        // memset y = 1.0 -> saxpy -> copy y to the host -> host node.
        let one = CUDA_MEMSET_NODE_PARAMS {
            dst: dy,
            pitch: 0,
            value: 1.0f32.to_bits(),
            elementSize: 4,
            width: n,
            height: 1,
        };
        let mut memset = 0usize;
        assert_eq!((api.add_memset)(&mut memset, graph, std::ptr::null(), 0, &one, 0), SUCCESS);
        let (mut xp, mut yp, a, mut count) = (dx, dy, std::cell::Cell::new(2.0f32), n as u32);
        let mut args: [*mut c_void; 4] = [
            (&mut xp as *mut u64).cast(),
            (&mut yp as *mut u64).cast(),
            a.as_ptr().cast(),
            (&mut count as *mut u32).cast(),
        ];
        let kp = CUDA_KERNEL_NODE_PARAMS_v2 {
            func: std::ptr::without_provenance_mut(saxpy),
            gridDimX: n.div_ceil(128) as c_uint,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: 128,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            kernelParams: args.as_mut_ptr(),
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        let mut kernel = 0usize;
        assert_eq!((api.add_kernel)(&mut kernel, graph, &memset, 1, &kp), SUCCESS);
        // The parameters were copied when the node was added.
        a.set(100.0);
        let down = device_to_host(out.as_mut_ptr().cast(), dy, n * 4);
        let mut memcpy = 0usize;
        assert_eq!((api.add_memcpy)(&mut memcpy, graph, &kernel, 1, &down, 0), SUCCESS);
        let host = CUDA_HOST_NODE_PARAMS {
            fn_: Some(observe),
            userData: (&state as *const HostState).cast_mut().cast(),
        };
        let mut host_node = 0usize;
        assert_eq!((api.add_host)(&mut host_node, graph, std::ptr::null(), 0, &host), SUCCESS);
        assert_eq!(add_deps(graph, &memcpy, &host_node, 1), SUCCESS);
        assert_eq!(add_deps(graph, &memcpy, &host_node, 1), INVALID_VALUE, "already an edge");
        assert_eq!(add_deps(graph, &memcpy, &0xdead0, 1), INVALID_VALUE, "not a node");
        let mut bad = 0usize;
        // Handles are multiples of 16 from 0x1000 (`handles.rs`): 0x1238 is none, while
        // 0x1230 may be a node another test made meanwhile.
        assert_eq!((api.add_kernel)(&mut bad, graph, &0x1238, 1, &kp), INVALID_VALUE, "bad dep");

        // Queries.
        assert_eq!(list(api.get_nodes, graph), [memset, kernel, memcpy, host_node]);
        assert_eq!(list(api.get_roots, graph), [memset]);
        assert_eq!(list(api.get_deps, kernel), [memset]);
        assert_eq!(list(api.get_deps, host_node), [memcpy]);
        assert_eq!(list(api.get_dependents, memset), [kernel]);
        let mut few = [0usize; 2];
        let mut room = 2usize;
        assert_eq!((api.get_nodes)(graph, few.as_mut_ptr(), &mut room), SUCCESS);
        assert_eq!((few, room), ([memset, kernel], 2), "as many as there is room for");
        for (node, want) in [
            (memset, NODE_MEMSET),
            (kernel, NODE_KERNEL),
            (memcpy, NODE_MEMCPY),
            (host_node, NODE_HOST),
        ] {
            let mut t = -1;
            assert_eq!((api.node_type)(node, &mut t), SUCCESS);
            assert_eq!(t, want);
        }
        let mut got = std::mem::zeroed::<CUDA_KERNEL_NODE_PARAMS_v2>();
        assert_eq!((api.kernel_get)(kernel, &mut got), SUCCESS);
        let dims = |p: &CUDA_KERNEL_NODE_PARAMS_v2| {
            [p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ]
        };
        assert_eq!((got.func.addr(), dims(&got)), (saxpy, dims(&kp)));
        assert_eq!(*(*got.kernelParams.add(2)).cast::<f32>(), 2.0, "a as it was when added");
        assert_eq!(*(*got.kernelParams.add(0)).cast::<u64>(), dx);

        // A cycle cannot be instantiated (CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE = 2).
        assert_eq!(add_deps(graph, &host_node, &memset, 1), SUCCESS);
        let instantiate_params: unsafe extern "C" fn(*mut usize, usize, *mut [u64; 4]) -> R =
            proc(&lib, "cuGraphInstantiateWithParams");
        let mut ip = [0u64, 0, 0, 0];
        let mut exec = 0usize;
        assert_eq!(instantiate_params(&mut exec, graph, &mut ip), INVALID_VALUE);
        assert_eq!(ip[3] as c_int, 2);
        assert_eq!((api.remove_deps)(graph, &host_node, &memset, 1), SUCCESS);
        assert_eq!((api.remove_deps)(graph, &host_node, &memset, 1), INVALID_VALUE, "no such edge");
        assert_eq!(instantiate_params(&mut exec, graph, &mut ip), SUCCESS);
        assert_eq!(ip[3], 0);
        assert_eq!((api.exec_destroy)(exec), SUCCESS);

        let mut stream = 0usize;
        assert_eq!((api.stream_create)(&mut stream, 1), SUCCESS);
        assert_eq!((api.instantiate)(&mut exec, graph, 0), SUCCESS);
        // Launch 1: a = 2; launch 2 after cuGraphExecKernelNodeSetParams: a = 3.
        for (round, scalar) in [(1u32, 2.0f32), (2, 3.0)] {
            if round == 2 {
                a.set(scalar);
                assert_eq!((api.exec_kernel_set)(exec, kernel, &kp), SUCCESS);
                a.set(-1.0);
            }
            upload(&lib, dy, &vec![-7.0f32; n]);
            assert_eq!((api.graph_launch)(exec, stream), SUCCESS);
            assert_eq!((api.sync)(stream), SUCCESS);
            let want = model(scalar, &x);
            assert_eq!(out, want, "launch {round}");
            assert_eq!(state.calls.load(Ordering::SeqCst), round);
            let sum: f32 = want.iter().sum();
            assert_eq!(
                state.sums.lock().expect("host node state").last(),
                Some(&sum),
                "the host node ran last"
            );
        }
        // The graph's node keeps its own parameters.
        assert_eq!((api.kernel_get)(kernel, &mut got), SUCCESS);
        assert_eq!(*(*got.kernelParams.add(2)).cast::<f32>(), 2.0);
        assert_eq!((api.exec_kernel_set)(exec, memset, &kp), INVALID_VALUE, "not a kernel node");

        // cuGraphExecUpdate from a g.clone with a = 4 (same topology).
        let mut copy = 0usize;
        assert_eq!((api.clone)(&mut copy, graph), SUCCESS);
        let mut copy_kernel = 0usize;
        assert_eq!((api.find)(&mut copy_kernel, kernel, copy), SUCCESS);
        assert_ne!(copy_kernel, kernel);
        a.set(4.0);
        assert_eq!((api.kernel_set)(copy_kernel, &kp), SUCCESS);
        let mut info = [usize::MAX; 3];
        assert_eq!((api.exec_update)(exec, copy, &mut info), SUCCESS);
        assert_eq!(info[0] as c_int, 0, "CU_GRAPH_EXEC_UPDATE_SUCCESS");
        upload(&lib, dy, &vec![-7.0f32; n]);
        assert_eq!((api.graph_launch)(exec, stream), SUCCESS);
        assert_eq!((api.sync)(stream), SUCCESS);
        assert_eq!(out, model(4.0, &x), "after cuGraphExecUpdate");
        assert_eq!(state.calls.load(Ordering::SeqCst), 3);

        // A different topology: the g.clone without its host node
        // (CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 2).
        let mut copy_host = 0usize;
        assert_eq!((api.find)(&mut copy_host, host_node, copy), SUCCESS);
        assert_eq!((api.destroy_node)(copy_host), SUCCESS);
        assert_eq!(list(api.get_nodes, copy).len(), 3);
        assert_eq!((api.exec_update)(exec, copy, &mut info), GRAPH_EXEC_UPDATE_FAILURE);
        assert_eq!(info[0] as c_int, 2);
        // The same shape with an empty node for the host node
        // (CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED = 3).
        let mut copy_memcpy = 0usize;
        assert_eq!((api.find)(&mut copy_memcpy, memcpy, copy), SUCCESS);
        let mut empty = 0usize;
        assert_eq!((api.add_empty)(&mut empty, copy, &copy_memcpy, 1), SUCCESS);
        assert_eq!((api.exec_update)(exec, copy, &mut info), GRAPH_EXEC_UPDATE_FAILURE);
        assert_eq!((info[0] as c_int, info[1]), (3, empty));
        let mut t = -1;
        assert_eq!((api.node_type)(empty, &mut t), SUCCESS);
        assert_eq!(t, NODE_EMPTY);

        // A failed update changed nothing.
        upload(&lib, dy, &vec![-7.0f32; n]);
        assert_eq!((api.graph_launch)(exec, stream), SUCCESS);
        assert_eq!((api.sync)(stream), SUCCESS);
        assert_eq!(out, model(4.0, &x));
        assert_eq!(state.calls.load(Ordering::SeqCst), 4);

        assert_eq!((api.exec_destroy)(exec), SUCCESS);
        assert_eq!((api.graph_destroy)(copy), SUCCESS);
        assert_eq!((api.graph_destroy)(graph), SUCCESS);
        assert_eq!((api.node_type)(kernel, &mut t), INVALID_VALUE, "its graph is gone");
        assert_eq!((api.graph_launch)(exec, stream), INVALID_HANDLE);
    }
}

#[test]
fn a_captured_sequence_becomes_the_same_graph() {
    let Some(lib) = library_with_context() else { return };
    let (saxpy, _) = kernels(&lib);
    let n = 200usize;
    let (dx, dy) = (alloc(&lib, n * 4), alloc(&lib, n * 4));
    upload(&lib, dy, &vec![0f32; n]);
    let mut out = vec![0f32; n];
    let state =
        HostState { out: out.as_ptr(), n, calls: AtomicU32::new(0), sums: Mutex::new(Vec::new()) };
    // SAFETY (this test): every pointer handed to the library outlives its use.
    unsafe {
        type Status = unsafe extern "C" fn(usize, *mut c_int) -> R;
        let stream_create: unsafe extern "C" fn(*mut usize, c_uint) -> R =
            proc(&lib, "cuStreamCreate");
        let sync: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuStreamSynchronize");
        let begin: unsafe extern "C" fn(usize, c_int) -> R = proc(&lib, "cuStreamBeginCapture");
        let end: unsafe extern "C" fn(usize, *mut usize) -> R = proc(&lib, "cuStreamEndCapture");
        let capturing: Status = proc(&lib, "cuStreamIsCapturing");
        type Info = unsafe extern "C" fn(
            usize,
            *mut c_int,
            *mut u64,
            *mut usize,
            *mut *const usize,
            *mut *const c_void,
            *mut usize,
        ) -> R;
        let info: Info = proc(&lib, "cuStreamGetCaptureInfo");
        let memset32: unsafe extern "C" fn(u64, u32, usize, usize) -> R =
            proc(&lib, "cuMemsetD32Async");
        let launch: Launch = proc(&lib, "cuLaunchKernel");
        let dtoh_async: unsafe extern "C" fn(*mut c_void, u64, usize, usize) -> R =
            proc(&lib, "cuMemcpyDtoHAsync");
        let host_func: unsafe extern "C" fn(
            usize,
            unsafe extern "C" fn(*mut c_void),
            *mut c_void,
        ) -> R = proc(&lib, "cuLaunchHostFunc");
        let event_create: unsafe extern "C" fn(*mut usize, c_uint) -> R =
            proc(&lib, "cuEventCreate");
        let event_record: unsafe extern "C" fn(usize, usize) -> R = proc(&lib, "cuEventRecord");
        let wait_event: unsafe extern "C" fn(usize, usize, c_uint) -> R =
            proc(&lib, "cuStreamWaitEvent");
        let get_nodes: NodeList = proc(&lib, "cuGraphGetNodes");
        let get_deps: NodeList = proc_v(&lib, "cuGraphNodeGetDependencies", 12020);
        let node_type: unsafe extern "C" fn(usize, *mut c_int) -> R =
            proc(&lib, "cuGraphNodeGetType");
        let instantiate: unsafe extern "C" fn(*mut usize, usize, u64) -> R =
            proc(&lib, "cuGraphInstantiateWithFlags");
        let graph_launch: unsafe extern "C" fn(usize, usize) -> R = proc(&lib, "cuGraphLaunch");

        let (mut s1, mut s2) = (0usize, 0usize);
        assert_eq!(stream_create(&mut s1, 1), SUCCESS);
        assert_eq!(stream_create(&mut s2, 1), SUCCESS);
        let status = |s: usize| {
            let mut st = -1;
            assert_eq!(capturing(s, &mut st), SUCCESS);
            st
        };

        assert_eq!(begin(s1, 0), SUCCESS);
        assert_eq!(memset32(dy, 1.0f32.to_bits(), n, s1), SUCCESS);
        let (mut xp, mut yp, a, mut count) = (dx, dy, std::cell::Cell::new(2.5f32), n as u32);
        let mut args: [*mut c_void; 4] = [
            (&mut xp as *mut u64).cast(),
            (&mut yp as *mut u64).cast(),
            a.as_ptr().cast(),
            (&mut count as *mut u32).cast(),
        ];
        let grid = n.div_ceil(64) as c_uint;
        let r = launch(saxpy, grid, 1, 1, 64, 1, 1, 0, s1, args.as_mut_ptr(), std::ptr::null_mut());
        assert_eq!(r, SUCCESS);
        a.set(50.0);
        assert_eq!(dtoh_async(out.as_mut_ptr().cast(), dy, n * 4, s1), SUCCESS);
        let data = (&state as *const HostState).cast_mut().cast();
        assert_eq!(host_func(s1, observe, data), SUCCESS);
        let (mut st, mut id, mut g, mut deps, mut ndeps) = (-1, 0u64, 0usize, std::ptr::null(), 0);
        let mut edges = std::ptr::null();
        let r = info(s1, &mut st, &mut id, &mut g, &mut deps, &mut edges, &mut ndeps);
        assert_eq!(r, SUCCESS);
        assert_eq!((st, ndeps), (1, 1), "active, after the host node");
        let last = *deps;
        let mut graph = 0usize;
        assert_eq!(end(s1, &mut graph), SUCCESS);
        assert_eq!(graph, g);
        assert_eq!(status(s1), 0);

        // Nothing ran.
        assert_eq!(download::<f32>(&lib, dy, n), vec![0f32; n]);
        assert_eq!(state.calls.load(Ordering::SeqCst), 0);
        let nodes = list(get_nodes, graph);
        let types: Vec<c_int> = nodes
            .iter()
            .map(|&node| {
                let mut t = -1;
                assert_eq!(node_type(node, &mut t), SUCCESS);
                t
            })
            .collect();
        assert_eq!(types, [NODE_MEMSET, NODE_KERNEL, NODE_MEMCPY, NODE_HOST]);
        assert_eq!(nodes[3], last);
        for i in 1..4 {
            assert_eq!(list(get_deps, nodes[i]), [nodes[i - 1]], "a chain in capture order");
        }

        // Each launch reads x as it is then.
        let mut exec = 0usize;
        assert_eq!(instantiate(&mut exec, graph, 0), SUCCESS);
        for round in 1..=2u32 {
            let x: Vec<f32> = (0..n).map(|i| (i as f32 - 33.0) * round as f32 * 0.5).collect();
            upload(&lib, dx, &x);
            assert_eq!(graph_launch(exec, s2), SUCCESS);
            assert_eq!(sync(s2), SUCCESS);
            let want = model(2.5, &x);
            assert_eq!(out, want, "captured graph, launch {round}");
            assert_eq!(state.calls.load(Ordering::SeqCst), round);
            let sum: f32 = want.iter().sum();
            assert_eq!(state.sums.lock().expect("host node state").last(), Some(&sum));
        }

        // Fork and join through events: s2 joins after the fork point, s1 waits for it.
        let (mut fork, mut join) = (0usize, 0usize);
        assert_eq!(event_create(&mut fork, 2), SUCCESS);
        assert_eq!(event_create(&mut join, 2), SUCCESS);
        assert_eq!(begin(s1, 0), SUCCESS);
        assert_eq!(memset32(dy, 1.0f32.to_bits(), n, s1), SUCCESS);
        assert_eq!(event_record(fork, s1), SUCCESS);
        assert_eq!(wait_event(s2, fork, 0), SUCCESS);
        assert_eq!(status(s2), 1, "s2 joined the capture");
        assert_eq!(memset32(dx, 2.0f32.to_bits(), n, s2), SUCCESS);
        assert_eq!(event_record(join, s2), SUCCESS);
        assert_eq!(wait_event(s1, join, 0), SUCCESS);
        a.set(3.0);
        let r = launch(saxpy, grid, 1, 1, 64, 1, 1, 0, s1, args.as_mut_ptr(), std::ptr::null_mut());
        assert_eq!(r, SUCCESS);
        let mut forked = 0usize;
        assert_eq!(end(s2, &mut forked), 903, "only the origin stream ends a capture");
        let mut graph2 = 0usize;
        assert_eq!(end(s1, &mut graph2), CAPTURE_INVALIDATED, "ending on s2 invalidated it");
        assert_eq!((status(s1), status(s2)), (0, 0));

        assert_eq!(begin(s1, 0), SUCCESS);
        assert_eq!(memset32(dy, 1.0f32.to_bits(), n, s1), SUCCESS);
        assert_eq!(event_record(fork, s1), SUCCESS);
        assert_eq!(wait_event(s2, fork, 0), SUCCESS);
        assert_eq!(memset32(dx, 2.0f32.to_bits(), n, s2), SUCCESS);
        assert_eq!(event_record(join, s2), SUCCESS);
        assert_eq!(wait_event(s1, join, 0), SUCCESS);
        let r = launch(saxpy, grid, 1, 1, 64, 1, 1, 0, s1, args.as_mut_ptr(), std::ptr::null_mut());
        assert_eq!(r, SUCCESS);
        assert_eq!(end(s1, &mut graph2), SUCCESS);
        assert_eq!((status(s1), status(s2)), (0, 0), "s2 left the capture");
        let nodes2 = list(get_nodes, graph2);
        assert_eq!(nodes2.len(), 3);
        assert_eq!(list(get_deps, nodes2[1]), [nodes2[0]], "s2's memset: after the fork point");
        assert_eq!(list(get_deps, nodes2[2]), [nodes2[0], nodes2[1]], "the kernel joins both");
        let mut exec2 = 0usize;
        assert_eq!(instantiate(&mut exec2, graph2, 0), SUCCESS);
        upload(&lib, dx, &vec![0f32; n]);
        assert_eq!(graph_launch(exec2, s1), SUCCESS);
        assert_eq!(sync(s1), SUCCESS);
        assert_eq!(download::<f32>(&lib, dy, n), model(3.0, &vec![2.0; n]));

        // A fork never joined back.
        assert_eq!(begin(s1, 0), SUCCESS);
        assert_eq!(event_record(fork, s1), SUCCESS);
        assert_eq!(wait_event(s2, fork, 0), SUCCESS);
        assert_eq!(memset32(dx, 0, n, s2), SUCCESS);
        assert_eq!(end(s1, &mut graph2), CAPTURE_UNJOINED);
        assert_eq!((status(s1), status(s2)), (0, 0));

        // What cannot be captured invalidates the capture.
        assert_eq!(begin(s1, 0), SUCCESS);
        assert_eq!(sync(s1), CAPTURE_UNSUPPORTED);
        assert_eq!(status(s1), 2);
        assert_eq!(memset32(dy, 0, n, s1), CAPTURE_INVALIDATED);
        assert_eq!(end(s1, &mut graph2), CAPTURE_INVALIDATED);
        assert_eq!(sync(s1), SUCCESS);
    }
}

#[test]
fn one_device_is_not_its_own_peer_and_peer_copies_work_between_contexts() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid out-pointers and handles.
    unsafe {
        let can_access: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> R =
            proc(&lib, "cuDeviceCanAccessPeer");
        let p2p: unsafe extern "C" fn(*mut c_int, c_int, c_int, c_int) -> R =
            proc(&lib, "cuDeviceGetP2PAttribute");
        let enable: unsafe extern "C" fn(usize, c_uint) -> R = proc(&lib, "cuCtxEnablePeerAccess");
        let disable: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuCtxDisablePeerAccess");
        let get_current: unsafe extern "C" fn(*mut usize) -> R = proc(&lib, "cuCtxGetCurrent");
        let ctx_create: unsafe extern "C" fn(*mut usize, c_uint, c_int) -> R =
            proc_v(&lib, "cuCtxCreate", 3020);
        let ctx_destroy: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuCtxDestroy");
        let copy_peer: unsafe extern "C" fn(u64, usize, u64, usize, usize) -> R =
            proc(&lib, "cuMemcpyPeer");
        let copy_peer_async: unsafe extern "C" fn(u64, usize, u64, usize, usize, usize) -> R =
            proc(&lib, "cuMemcpyPeerAsync");
        let ctx_sync: unsafe extern "C" fn() -> R = proc(&lib, "cuCtxSynchronize");

        let mut v = -1;
        assert_eq!(can_access(&mut v, 0, 0), SUCCESS);
        assert_eq!(v, 0, "a device is not its own peer");
        assert_eq!(can_access(&mut v, 0, 1), INVALID_DEVICE);
        assert_eq!(p2p(&mut v, 1, 0, 0), INVALID_DEVICE, "no link from a device to itself");
        assert_eq!(p2p(&mut v, 2, 0, 1), INVALID_DEVICE);

        let mut primary = 0usize;
        assert_eq!(get_current(&mut primary), SUCCESS);
        let mut other = 0usize;
        assert_eq!(ctx_create(&mut other, 0, 0), SUCCESS);
        // `other` is current now.
        assert_eq!(enable(primary, 0), PEER_ACCESS_UNSUPPORTED);
        assert_eq!(enable(other, 0), INVALID_CONTEXT, "the current context itself");
        assert_eq!(enable(0xbad0, 0), INVALID_CONTEXT);
        assert_eq!(disable(primary), PEER_ACCESS_NOT_ENABLED);

        let n = 100usize;
        let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
        let (src, dst, dst2) = (alloc(&lib, n * 4), alloc(&lib, n * 4), alloc(&lib, n * 4));
        upload(&lib, src, &values);
        assert_eq!(copy_peer(dst, primary, src, other, n * 4), SUCCESS);
        assert_eq!(download::<u32>(&lib, dst, n), values);
        assert_eq!(copy_peer_async(dst2 + 8, other, src, primary, n * 4 - 8, 0), SUCCESS);
        assert_eq!(ctx_sync(), SUCCESS);
        assert_eq!(download::<u32>(&lib, dst2, n)[2..], values[..n - 2]);
        assert_eq!(copy_peer(dst, 0xbad0, src, other, 4), INVALID_CONTEXT);
        assert_eq!(copy_peer(dst, primary, src, other, n * 4 + 4), INVALID_VALUE, "past the end");
        assert_eq!(ctx_destroy(other), SUCCESS);
    }
}

/// `CUmemcpyAttributes`.
#[repr(C)]
#[derive(Clone, Copy)]
struct MemcpyAttributes {
    src_access_order: c_int,
    src_hint: [c_int; 2],
    dst_hint: [c_int; 2],
    flags: c_uint,
}

fn attributes(order: c_int) -> MemcpyAttributes {
    MemcpyAttributes { src_access_order: order, src_hint: [0; 2], dst_hint: [0; 2], flags: 0 }
}

#[test]
fn a_batch_of_copies_runs_in_stream_order_and_a_bad_copy_is_named() {
    let Some(lib) = library_with_context() else { return };
    type Batch = unsafe extern "C" fn(
        *const u64,
        *const u64,
        *const usize,
        usize,
        *const MemcpyAttributes,
        *const usize,
        usize,
        *mut usize,
        usize,
    ) -> R;
    type BatchV2 = unsafe extern "C" fn(
        *const u64,
        *const u64,
        *const usize,
        usize,
        *const MemcpyAttributes,
        *const usize,
        usize,
        usize,
    ) -> R;
    // SAFETY (this test): the arrays and buffers outlive the calls.
    unsafe {
        // CUDA 12.8's form (with failIdx) for a 12.9 client, CUDA 13's for a 13.0 one.
        let batch: Batch = proc(&lib, "cuMemcpyBatchAsync");
        let v2 = proc_at(&lib, "cuMemcpyBatchAsync", 13000, 0).expect("CUDA 13 form");
        assert_eq!(v2, export(&lib, "cuMemcpyBatchAsync_v2"));
        let batch_v2: BatchV2 = std::mem::transmute::<*const c_void, BatchV2>(v2);
        let stream_create: unsafe extern "C" fn(*mut usize, c_uint) -> R =
            proc(&lib, "cuStreamCreate");
        let sync: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuStreamSynchronize");
        let mut stream = 0usize;
        assert_eq!(stream_create(&mut stream, 1), SUCCESS);

        let n = 64usize;
        let a: Vec<u32> = (0..n as u32).map(|i| i * 7 + 1).collect();
        let b: Vec<u32> = (0..n as u32).map(|i| 1000 - i).collect();
        let (d0, d1, d2) = (alloc(&lib, n * 4), alloc(&lib, n * 4), alloc(&lib, n * 4));
        upload(&lib, d0, &b);
        let mut host = vec![0u32; n];
        // H2D a -> d1, D2H d0 -> host, D2D d0 -> d2 (16 bytes in).
        let dsts = [d1, host.as_mut_ptr() as u64, d2 + 16];
        let srcs = [a.as_ptr() as u64, d0, d0];
        let sizes = [n * 4, n * 4, n * 4 - 16];
        let attrs = [attributes(2), attributes(1)]; // DURING_API_CALL, then STREAM
        let starts = [0usize, 1];
        let mut fail = 0usize;
        let r = batch(
            dsts.as_ptr(),
            srcs.as_ptr(),
            sizes.as_ptr(),
            3,
            attrs.as_ptr(),
            starts.as_ptr(),
            2,
            &mut fail,
            stream,
        );
        assert_eq!(r, SUCCESS);
        assert_eq!(sync(stream), SUCCESS);
        assert_eq!(download::<u32>(&lib, d1, n), a);
        assert_eq!(host, b);
        assert_eq!(download::<u32>(&lib, d2, n)[4..], b[..n - 4]);

        // CUDA 13's form, one attribute for all.
        upload(&lib, d1, &vec![0u32; n]);
        let r = batch_v2(
            dsts.as_ptr(),
            srcs.as_ptr(),
            sizes.as_ptr(),
            1,
            &attrs[1],
            &0usize,
            1,
            stream,
        );
        assert_eq!(r, SUCCESS);
        assert_eq!(sync(stream), SUCCESS);
        assert_eq!(download::<u32>(&lib, d1, n), a);

        // Errors: the legacy stream, a bad attribute index or order, a copy past its end.
        let call = |sizes: &[usize], attrs: &[MemcpyAttributes], starts: &[usize], s, fail| {
            batch(
                dsts.as_ptr(),
                srcs.as_ptr(),
                sizes.as_ptr(),
                sizes.len(),
                attrs.as_ptr(),
                starts.as_ptr(),
                attrs.len(),
                fail,
                s,
            )
        };
        let none = std::ptr::null_mut();
        assert_eq!(call(&sizes, &attrs, &starts, 0, none), INVALID_VALUE, "legacy stream");
        assert_eq!(call(&sizes, &attrs, &[1, 2], stream, none), INVALID_VALUE, "first index 1");
        assert_eq!(call(&sizes, &[attributes(0)], &[0], stream, none), INVALID_VALUE, "order 0");
        fail = 0;
        let r = call(&[n * 4, n * 4, n * 4], &attrs, &starts, stream, &mut fail);
        assert_eq!((r, fail), (INVALID_VALUE, 2), "the third copy runs past d2's end");
        fail = 0;
        let r = call(&sizes, &attrs, &[0, 3], stream, &mut fail);
        assert_eq!((r, fail), (INVALID_VALUE, usize::MAX), "no copy in particular");
    }
}

#[test]
fn new_entry_points_resolve_through_cu_get_proc_address_as_exported() {
    let Some(lib) = library_with_context() else { return };
    // (name, version asked, per-thread flag, export): versions as the measured clients
    // ask (`cuda-driver/driver-api/`) and CUDA 13's `cudaTypedefs.h`.
    let cases = [
        ("cuGraphCreate", 12090, 0, "cuGraphCreate"),
        ("cuGraphAddKernelNode", 12090, 0, "cuGraphAddKernelNode_v2"),
        ("cuGraphKernelNodeGetParams", 12090, 0, "cuGraphKernelNodeGetParams_v2"),
        ("cuGraphExecKernelNodeSetParams", 12090, 0, "cuGraphExecKernelNodeSetParams_v2"),
        ("cuGraphExecUpdate", 12090, 0, "cuGraphExecUpdate_v2"),
        ("cuGraphAddDependencies", 12090, 0, "cuGraphAddDependencies_v2"),
        ("cuGraphAddDependencies", 12000, 0, "cuGraphAddDependencies"),
        ("cuGraphNodeGetDependencies", 12090, 0, "cuGraphNodeGetDependencies_v2"),
        ("cuGraphGetEdges", 12090, 0, "cuGraphGetEdges_v2"),
        ("cuGraphInstantiate", 12090, 0, "cuGraphInstantiate_v2"),
        ("cuGraphInstantiateWithParams", 12090, 2, "cuGraphInstantiateWithParams_ptsz"),
        ("cuStreamGetCaptureInfo", 12090, 0, "cuStreamGetCaptureInfo_v3"),
        ("cuStreamGetCaptureInfo", 12090, 2, "cuStreamGetCaptureInfo_v3_ptsz"),
        ("cuStreamIsCapturing", 12090, 2, "cuStreamIsCapturing_ptsz"),
        ("cuStreamBeginCaptureToGraph", 12090, 0, "cuStreamBeginCaptureToGraph"),
        ("cuStreamUpdateCaptureDependencies", 12090, 0, "cuStreamUpdateCaptureDependencies_v2"),
        ("cuDeviceCanAccessPeer", 12090, 0, "cuDeviceCanAccessPeer"),
        ("cuDeviceGetP2PAttribute", 12090, 0, "cuDeviceGetP2PAttribute"),
        ("cuCtxEnablePeerAccess", 12090, 0, "cuCtxEnablePeerAccess"),
        ("cuMemcpyPeer", 12090, 2, "cuMemcpyPeer_ptds"),
        ("cuMemcpyPeerAsync", 12090, 0, "cuMemcpyPeerAsync"),
        ("cuMemcpy3DPeerAsync", 12090, 2, "cuMemcpy3DPeerAsync_ptsz"),
        ("cuMemcpyBatchAsync", 12090, 0, "cuMemcpyBatchAsync"),
        ("cuMemcpyBatchAsync", 12090, 2, "cuMemcpyBatchAsync_ptsz"),
        ("cuMemcpyBatchAsync", 13000, 2, "cuMemcpyBatchAsync_v2_ptsz"),
        ("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"),
        ("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"),
        ("cuLaunchHostFunc", 13010, 0, "cuLaunchHostFunc_v2"),
        ("cuLaunchHostFunc", 12090, 2, "cuLaunchHostFunc_ptsz"),
        ("cuStreamAddCallback", 12090, 2, "cuStreamAddCallback_ptsz"),
    ];
    for (name, version, flags, want) in cases {
        let got = proc_at(&lib, name, version, flags)
            .unwrap_or_else(|r| panic!("{name} at {version}: error {r}"));
        assert_eq!(got, export(&lib, want), "{name} at {version}, flags {flags}");
    }
    // CUDA 11's cuGetProcAddress (no status) finds them too.
    type GetProcV1 = unsafe extern "C" fn(*const c_char, *mut *const c_void, c_int, u64) -> R;
    // SAFETY: the symbol has this signature; valid strings and out-pointers.
    unsafe {
        let get = lib.get::<GetProcV1>(b"cuGetProcAddress").expect("cuGetProcAddress");
        let mut pfn = std::ptr::null();
        assert_eq!(get(c"cuGraphAddMemcpyNode".as_ptr(), &mut pfn, 12090, 0), SUCCESS);
        assert_eq!(pfn, export(&lib, "cuGraphAddMemcpyNode"));
        // Not implemented: child graphs. CUDA 13's batched 3-D copies are.
        assert_eq!(get(c"cuGraphAddChildGraphNode".as_ptr(), &mut pfn, 12090, 0), NOT_FOUND);
        assert_eq!(get(c"cuMemcpy3DBatchAsync".as_ptr(), &mut pfn, 13000, 0), SUCCESS);
        assert_eq!(pfn, export(&lib, "cuMemcpy3DBatchAsync_v2"));
    }
}

/// `CUmemcpy3DOperand` of pointer type: the pointer, row length and layer height (in
/// elements, 0: packed), and an unused location hint.
#[repr(C)]
#[derive(Clone, Copy)]
struct Operand {
    kind: c_int,
    op: [u64; 4],
}

fn pointer(ptr: u64, row_length: usize, layer_height: usize) -> Operand {
    Operand { kind: 1, op: [ptr, row_length as u64, layer_height as u64, 0] }
}

/// `CUDA_MEMCPY3D_BATCH_OP`.
#[repr(C)]
#[derive(Clone, Copy)]
struct BatchOp {
    src: Operand,
    dst: Operand,
    extent: [usize; 3],
    src_access_order: c_int,
    flags: c_uint,
}

#[test]
fn a_batch_of_3d_copies_moves_boxes_between_pitched_pointers() {
    let Some(lib) = library_with_context() else { return };
    type Batch3d = unsafe extern "C" fn(usize, *const BatchOp, *mut usize, u64, usize) -> R;
    // SAFETY (this test): the operations and buffers outlive the calls.
    unsafe {
        let batch: Batch3d = proc(&lib, "cuMemcpy3DBatchAsync");
        let stream_create: unsafe extern "C" fn(*mut usize, c_uint) -> R =
            proc(&lib, "cuStreamCreate");
        let sync: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuStreamSynchronize");
        let mut stream = 0usize;
        assert_eq!(stream_create(&mut stream, 1), SUCCESS);
        // A 10 x 5 x 3 source volume of bytes; a 6 x 3 x 2 box of it at the origin is
        // copied to a packed device buffer, which is copied back to the host.
        let (row, layer, slices) = (10usize, 5usize, 3usize);
        let volume: Vec<u8> =
            (0..row * layer * slices).map(|i| (i % row + 10 * (i / row)) as u8).collect();
        let src = alloc(&lib, volume.len());
        upload(&lib, src, &volume);
        let [w, h, depth] = [6usize, 3, 2];
        let packed = alloc(&lib, w * h * depth);
        let mut back = vec![0u8; w * h * depth];
        let ops = [
            BatchOp {
                src: pointer(src, row, layer),
                dst: pointer(packed, 0, 0),
                extent: [w, h, depth],
                src_access_order: 1,
                flags: 0,
            },
            BatchOp {
                src: pointer(packed, 0, 0),
                dst: pointer(back.as_mut_ptr() as u64, 0, 0),
                extent: [w * h * depth, 1, 1],
                src_access_order: 1,
                flags: 0,
            },
        ];
        let mut fail = 0usize;
        assert_eq!(batch(1, ops.as_ptr(), &mut fail, 0, stream), SUCCESS);
        assert_eq!(batch(1, ops[1..].as_ptr(), &mut fail, 0, stream), SUCCESS);
        assert_eq!(sync(stream), SUCCESS);
        let mut want = Vec::new();
        for z in 0..depth {
            for y in 0..h {
                for x in 0..w {
                    want.push(volume[(z * layer + y) * row + x]);
                }
            }
        }
        assert_eq!(back, want);
        // An empty extent in the second operation; a row length shorter than the width;
        // the legacy stream; flags.
        let mut bad = ops;
        bad[1].extent = [0, 1, 1];
        assert_eq!(batch(2, bad.as_ptr(), &mut fail, 0, stream), INVALID_VALUE);
        assert_eq!(fail, 1);
        let mut short = ops;
        short[0].src = pointer(src, w - 1, 0);
        assert_eq!(batch(2, short.as_ptr(), &mut fail, 0, stream), INVALID_VALUE);
        assert_eq!(fail, 0);
        assert_eq!(batch(2, ops.as_ptr(), &mut fail, 0, 0), INVALID_VALUE);
        assert_eq!(batch(2, ops.as_ptr(), &mut fail, 1, stream), INVALID_VALUE);
    }
}
