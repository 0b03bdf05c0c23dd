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

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../../benches/common/mod.rs"]
mod timing;

use std::ffi::{c_int, c_void};

use common::*;
use ptxvk::{Arg, Device, Module, StreamKind};
use timing::{micros_per, RUNS};

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
    let lib = library();
    assert!(init_context(&lib), "a Vulkan device");
    let mut text = ptx.into_bytes();
    text.push(0);
    // SAFETY (the calls below): valid pointers and handles, as the CUDA API documents.
    let (driver_enqueued, driver_sync) = unsafe {
        let load: Load = proc(&lib, "cuModuleLoadData");
        let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
        let alloc: Alloc = proc(&lib, "cuMemAlloc");
        let stream_create: unsafe extern "C" fn(*mut usize, std::ffi::c_uint) -> R =
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
