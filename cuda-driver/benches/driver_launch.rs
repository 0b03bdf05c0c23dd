//! Launch overhead through the driver library against the Rust API it is built on, in
//! one process and under the same load: the same tiny kernel (one block of 32 threads
//! of `tests/kernels/vector_add.nvcc.sm_80.ptx`), launched
//!
//! - **enqueued**: 10,000 launches on one stream, then one synchronize (per launch);
//! - **synchronous**: one launch and its wait, repeated (per launch);
//!
//! through `cuLaunchKernel` + `cuStreamSynchronize` of `libcuda.so` (loaded with
//! `libloading`, entry points from `cuGetProcAddress_v2`, as clients do) and through
//! `Kernel::launch_on` + `Stream::synchronize`. Medians of `RUNS` runs after a warm-up.
//!
//! ```text
//! cargo bench -p ptxvk-cuda-driver --bench driver_launch [-- LAUNCHES]
//! ```

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::time::Instant;

use libloading::{Library, Symbol};
use ptxvk::{Arg, Device, Module, StreamKind};

const RUNS: usize = 7;

type R = c_int;
type Launch = unsafe extern "C" fn(
    usize,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    usize,
    *mut *mut c_void,
    *mut *mut c_void,
) -> R;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median over `RUNS` of `f()`'s seconds divided by `per`, in microseconds.
fn micros_per(per: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64() * 1e6 / per as f64
            })
            .collect(),
    )
}

fn proc<T: Copy>(lib: &Library, name: &str) -> T {
    type GetProc =
        unsafe extern "C" fn(*const c_char, *mut *const c_void, c_int, u64, *mut c_int) -> R;
    // SAFETY: the symbol has this signature.
    let get: Symbol<'_, GetProc> =
        unsafe { lib.get(b"cuGetProcAddress_v2") }.expect("cuGetProcAddress_v2");
    let cname = std::ffi::CString::new(name).expect("name");
    let (mut pfn, mut status) = (std::ptr::null(), -1);
    // SAFETY: valid string and out-pointers.
    let r = unsafe { get(cname.as_ptr(), &mut pfn, 12090, 0, &mut status) };
    assert_eq!((r, status), (0, 0), "{name}");
    // SAFETY: a function pointer of the type the caller names for this entry point.
    unsafe { std::mem::transmute_copy(&pfn) }
}

fn check(r: R, what: &str) {
    assert_eq!(r, 0, "{what}");
}

fn main() {
    let launches: usize =
        std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(10_000).max(1);
    let sync_runs = (launches / 10).max(1);
    let ptx_path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/kernels/vector_add.nvcc.sm_80.ptx");
    let ptx = std::fs::read_to_string(ptx_path).expect("the bundled kernel");
    let n = 32usize;

    // The Rust API.
    let device = Device::default_device().expect("a Vulkan device");
    println!("device: {}", device.info().name);
    let module = Module::from_ptx(&device, &ptx).expect("compile");
    let kernel = module.kernel("vector_add").expect("kernel");
    let a = device.buffer_from(&vec![1.0f32; n]).expect("a");
    let b = device.buffer_from(&vec![2.0f32; n]).expect("b");
    let c = device.zeroed::<f32>(n).expect("c");
    let args = [Arg::from(&a), Arg::from(&b), Arg::from(&c), Arg::from(n as i32)];
    let stream = device.create_stream(StreamKind::NonBlocking).expect("stream");
    let api_enqueued = micros_per(launches, || {
        for _ in 0..launches {
            kernel.launch_on(&stream, 1, 32, 0, &args).expect("launch");
        }
        stream.synchronize().expect("synchronize");
    });
    let api_sync = micros_per(sync_runs, || {
        for _ in 0..sync_runs {
            kernel.launch_on(&stream, 1, 32, 0, &args).expect("launch");
            stream.synchronize().expect("synchronize");
        }
    });
    assert!(c.to_vec().expect("read").iter().all(|&v| v == 3.0), "vector_add's result");

    // The driver library, as a client loads it.
    let exe = std::env::current_exe().expect("bench executable");
    let path = exe.parent().expect("deps dir").join("libcuda.so");
    // SAFETY: ptxvk's own driver library, whose initialisers are Rust's.
    let lib = unsafe { Library::new(&path) }.expect("libcuda.so next to the bench");
    let mut text = ptx.into_bytes();
    text.push(0);
    // SAFETY (the calls below): valid pointers and handles, as the CUDA API documents.
    let (driver_enqueued, driver_sync) = unsafe {
        let init: unsafe extern "C" fn(c_uint) -> R = proc(&lib, "cuInit");
        check(init(0), "cuInit");
        let retain: unsafe extern "C" fn(*mut usize, c_int) -> R =
            proc(&lib, "cuDevicePrimaryCtxRetain");
        let set_current: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuCtxSetCurrent");
        let mut ctx = 0;
        check(retain(&mut ctx, 0), "retain");
        check(set_current(ctx), "set current");
        let load: unsafe extern "C" fn(*mut usize, *const c_void) -> R =
            proc(&lib, "cuModuleLoadData");
        let get_function: unsafe extern "C" fn(*mut usize, usize, *const c_char) -> R =
            proc(&lib, "cuModuleGetFunction");
        let alloc: unsafe extern "C" fn(*mut u64, usize) -> R = proc(&lib, "cuMemAlloc");
        let stream_create: unsafe extern "C" fn(*mut usize, c_uint) -> R =
            proc(&lib, "cuStreamCreate");
        let stream_sync: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuStreamSynchronize");
        let launch: Launch = proc(&lib, "cuLaunchKernel");
        let (mut module, mut f, mut s) = (0, 0, 0);
        check(load(&mut module, text.as_ptr().cast()), "load");
        check(get_function(&mut f, module, c"vector_add".as_ptr()), "function");
        check(stream_create(&mut s, 1), "stream");
        let (mut da, mut db, mut dc) = (0u64, 0u64, 0u64);
        for d in [&mut da, &mut db, &mut dc] {
            check(alloc(d, n * 4), "alloc");
        }
        let count = n as c_int;
        let mut params: [*mut c_void; 4] = [
            (&mut da as *mut u64).cast(),
            (&mut db as *mut u64).cast(),
            (&mut dc as *mut u64).cast(),
            (&count as *const c_int).cast_mut().cast(),
        ];
        let p = params.as_mut_ptr();
        let none = std::ptr::null_mut();
        let enqueued = micros_per(launches, || {
            for _ in 0..launches {
                check(launch(f, 1, 1, 1, 32, 1, 1, 0, s, p, none), "launch");
            }
            check(stream_sync(s), "synchronize");
        });
        let sync = micros_per(sync_runs, || {
            for _ in 0..sync_runs {
                check(launch(f, 1, 1, 1, 32, 1, 1, 0, s, p, none), "launch");
                check(stream_sync(s), "synchronize");
            }
        });
        (enqueued, sync)
    };

    println!("launches of one 32-thread block, median of {RUNS} runs (us per launch):");
    println!("                                     Rust API   driver   difference");
    println!(
        "  enqueued x{launches:<6} then synchronize {api_enqueued:8.2} {driver_enqueued:8.2} {:+10.2}",
        driver_enqueued - api_enqueued
    );
    println!(
        "  launch + synchronize x{sync_runs:<6}      {api_sync:8.2} {driver_sync:8.2} {:+10.2}",
        driver_sync - api_sync
    );
}
