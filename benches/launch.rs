//! Launch overhead of the runtime: how long the host spends per launch of a tiny kernel
//! (one block of 32 threads of `tests/kernels/vector_add.nvcc.sm_80.ptx` over 32
//! elements), through the Rust API (`Kernel::launch_on` / `Kernel::launch`, which lay out
//! and check the arguments) and through the runtime underneath
//! (`Stream::launch_with_params`, parameter bytes prepared once).
//!
//! - **enqueued**: 10,000 launches on one stream, then one `synchronize`; the time per
//!   launch includes the GPU's (the stream keeps it busy while the host enqueues).
//! - **synchronous**: one launch and its wait (`Kernel::launch`, with GPU timing), repeated.
//!
//! Each figure is the median of `RUNS` runs after a warm-up.
//!
//! ```text
//! cargo bench --bench launch [-- LAUNCHES]
//! ```

mod common;

use common::{micros_per, RUNS};
use ptxvk::{Arg, Device, Module, StreamKind};
use ptxvk_vk::LaunchConfig;

fn main() {
    let launches: usize =
        std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(10_000).max(1);
    let device = Device::default_device().expect("a Vulkan device");
    println!("device: {}", device.info().name);
    let ptx = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/kernels/vector_add.nvcc.sm_80.ptx"
    ))
    .expect("the bundled kernel");
    let module = Module::from_ptx(&device, &ptx).expect("compile");
    let kernel = module.kernel("vector_add").expect("kernel");
    let n = 32usize;
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

    // The runtime alone: the parameter block laid out once.
    let params = kernel.param_block(&args).expect("params");
    // Compiled without confinement: a confined kernel reads its system area after the
    // parameter block, which only the Rust API's launches provide.
    let unconfined = ptxvk::compile::Target { confine: false, ..device.target() };
    let compiled = ptxvk::compile::compile_with("vector_add", &ptx, Some("vector_add"), unconfined)
        .expect("compile unconfined");
    let program = device.vk().create_program(
        &compiled.spirv.words,
        "vector_add",
        &ptxvk_vk::Features { int64: true, ..Default::default() },
    );
    let program = program.expect("program");
    let cfg = LaunchConfig { block: [32, 1, 1], ..LaunchConfig::default() };
    let keep = [a.raw(), b.raw(), c.raw()];
    let runtime_enqueued = micros_per(launches, || {
        for _ in 0..launches {
            stream.launch_with_params(&program, &cfg, &params, &keep).expect("launch");
        }
        stream.synchronize().expect("synchronize");
    });

    let enqueue_only = micros_per(launches, || {
        for _ in 0..launches {
            stream.launch_with_params(&program, &cfg, &params, &keep).expect("launch");
        }
    });
    stream.synchronize().expect("synchronize");
    let sync_runs = (launches / 10).max(1);
    let api_sync = micros_per(sync_runs, || {
        for _ in 0..sync_runs {
            kernel.launch(1, 32, 0, &args).expect("launch");
        }
    });
    let timed = micros_per(sync_runs, || {
        for _ in 0..sync_runs {
            kernel.launch_timed(1, 32, 0, &args).expect("launch");
        }
    });
    let gpu_ms = kernel.launch_timed(1, 32, 0, &args).expect("launch").kernel_ms;
    assert!(c.to_vec().expect("read").iter().all(|&v| v == 3.0), "vector_add's result");

    println!("launches of one 32-thread block, median of {RUNS} runs:");
    println!("  enqueued x{launches} then synchronize, Rust API : {api_enqueued:8.2} us/launch");
    println!(
        "  enqueued x{launches} then synchronize, runtime  : {runtime_enqueued:8.2} us/launch"
    );
    println!("  host time to enqueue alone, runtime          : {enqueue_only:8.2} us/launch");
    println!("  synchronous (launch + wait), Rust API  x{sync_runs}: {api_sync:8.2} us/launch");
    println!("  synchronous and timed, Rust API        x{sync_runs}: {timed:8.2} us/launch");
    println!("  GPU time of one launch (timestamps)           : {:8.2} us", gpu_ms * 1e3);
}
