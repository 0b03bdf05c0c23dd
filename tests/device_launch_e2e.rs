//! Device-side launches (CUDA Dynamic Parallelism with CUDA 12 semantics;
//! `lower/src/sema/device_launch.rs`, `src/runtime/device_launch.rs`): the nvcc
//! `-rdc=true` PTX of `tests/kernels/device_launch.cu` (sm_75, sm_80, sm_90) compiles to
//! valid SPIR-V and runs on the device. Every expected value comes from a CPU model of
//! the kernels as the header comment of `device_launch.cu` defines them, never from
//! ptxvk's own output.

mod common;

use std::path::{Path, PathBuf};

use common::cases::{buf, val};
use common::*;
use ptxvk::spec::ElemType;
use ptxvk::{Arg, Device};

/// The three nvcc builds.
fn device_launch_builds() -> Vec<PathBuf> {
    builds("device_launch", 3)
}

/// Pinned at the sm_80 build where one build is enough (the three differ only in
/// their `.target`).
fn sm80() -> PathBuf {
    repo().join("tests").join("kernels").join("device_launch.nvcc.sm_80.ptx")
}

#[test]
fn every_build_compiles_to_valid_spirv_in_every_warp_mode() {
    for path in device_launch_builds() {
        // Validated with spirv-val (`--target-env vulkan1.3`) by the helper.
        let modes = compile_every_warp_mode(&path);
        assert_eq!(modes.len(), 3);
        let text = std::fs::read_to_string(&path).expect("read PTX");
        let compiled = ptxvk::compile::compile(&path.display().to_string(), &text, None)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let launches = |name: &str| {
            let k = compiled.spirv.kernels.iter().find(|k| k.name == name).expect("kernel");
            k.device_launches.clone()
        };
        // The launch targets are the module's kernels in name order.
        let mut names: Vec<String> =
            compiled.spirv.kernels.iter().map(|k| k.name.clone()).collect();
        names.sort();
        for parent in ["cnp_parent", "tree", "chain", "tail_parent", "add_k", "flood", "api_calls"]
        {
            assert_eq!(launches(parent), names, "{}: {parent}", path.display());
        }
        for leaf in ["cnp_child", "tail_check", "scale", "bump", "fill"] {
            assert!(launches(leaf).is_empty(), "{}: {leaf} launches nothing", path.display());
        }
    }
}

/// GPU Ocelot's CNP test shape: every parent thread's child grid fills its slice.
#[test]
fn every_parent_thread_s_child_grid_fills_its_slice() {
    let Some(device) = device() else { return };
    let (grid, block, per_thread) = (3u32, 32u32, 70usize);
    let threads = (grid * block) as usize;
    let want: Vec<i32> = (0..threads * per_thread)
        .map(|e| {
            let (t, k) = ((e / per_thread) as i32, (e % per_thread) as i32);
            (t * 100_000 + 3 * k) ^ 0x5a5a
        })
        .collect();
    for path in device_launch_builds() {
        let module = load(&device, &path);
        let kernel = module.kernel("cnp_parent").expect("cnp_parent");
        // Past the slices: a sentinel no child may touch.
        let mut init = vec![0i32; threads * per_thread];
        init.push(-7);
        let out = device.buffer_from(&init).expect("buffer");
        kernel
            .launch(grid, block, 0, &[Arg::from(&out), Arg::value(per_thread as i32)])
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let got = out.to_vec().expect("read back");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{}: out[{i}]", path.display());
        }
        assert_eq!(got[threads * per_thread], -7, "{}: the sentinel", path.display());
    }
}

/// The CPU model of `tree`: the grids a node launches, recursively: (sum of ids, grids).
fn tree_model(depth: i32, id: u64, threads: u64) -> (u64, u32) {
    let mut sum = id;
    let mut grids = 1;
    if depth > 0 {
        for t in 0..threads.min(2) {
            let (s, g) = tree_model(depth - 1, 2 * id + t, 2);
            sum += s;
            grids += g;
        }
    }
    (sum, grids)
}

#[test]
fn a_kernel_that_launches_itself_sums_a_tree_of_grids() {
    let Some(device) = device() else { return };
    for path in device_launch_builds() {
        let module = load(&device, &path);
        let kernel = module.kernel("tree").expect("tree");
        for (depth, threads) in [(0, 2), (1, 1), (5, 2)] {
            let sum = device.zeroed::<u64>(1).expect("buffer");
            let grids = device.zeroed::<u32>(1).expect("buffer");
            let args = [Arg::value(depth), Arg::value(1u64), Arg::from(&sum), Arg::from(&grids)];
            kernel.launch(1, threads, 0, &args).unwrap_or_else(|e| panic!("{e}"));
            let (want_sum, want_grids) = tree_model(depth, 1, u64::from(threads));
            let what = format!("{} depth {depth}, {threads} threads", path.display());
            assert_eq!(sum.to_vec().expect("sum"), [want_sum], "{what}: sum");
            assert_eq!(grids.to_vec().expect("grids"), [want_grids], "{what}: grids");
        }
    }
    // Depth 5 from two threads: the 63 nodes of a complete binary tree, ids 1..=63.
    assert_eq!(tree_model(5, 1, 2), ((1..=63).sum(), 63));
}

/// A grid at depth 24 cannot launch: the 25th launch of the chain fails with
/// cudaErrorLaunchMaxDepthExceeded (65), returned to the device code.
#[test]
fn launches_nest_at_most_24_deep() {
    let Some(device) = device() else { return };
    let module = load(&device, &sm80());
    let reached = device.zeroed::<i32>(32).expect("buffer");
    let codes = device.buffer_from(&[-1i32; 32]).expect("buffer");
    let kernel = module.kernel("chain").expect("chain");
    kernel
        .launch(1, 1, 0, &[Arg::value(0i32), Arg::from(&reached), Arg::from(&codes)])
        .unwrap_or_else(|e| panic!("{e}"));
    let (reached, codes) = (reached.to_vec().expect("reached"), codes.to_vec().expect("codes"));
    for d in 0..32 {
        assert_eq!(reached[d], i32::from(d <= 24), "reached[{d}]");
        let want = match d {
            0..24 => 0,
            24 => 65,
            _ => -1,
        };
        assert_eq!(codes[d], want, "codes[{d}]");
    }
}

/// The tail launch, made first, runs after the parent grid, its fire-and-forget child
/// and that child's own (NULL-stream) child.
#[test]
fn a_tail_launch_sees_the_parent_s_and_its_other_children_s_writes() {
    let Some(device) = device() else { return };
    let n = 200i32;
    let data_model: Vec<i32> = (0..n).map(|i| (i + 1000) * 3).collect();
    let sum: i64 = data_model.iter().map(|&v| i64::from(v)).sum();
    for path in device_launch_builds() {
        let module = load(&device, &path);
        let data = device.zeroed::<i32>(n as usize).expect("buffer");
        let result = device.zeroed::<i64>(2).expect("buffer");
        let kernel = module.kernel("tail_parent").expect("tail_parent");
        let args = [Arg::from(&data), Arg::value(n), Arg::from(&result)];
        kernel.launch(1, n as u32, 0, &args).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(data.to_vec().expect("data"), data_model, "{}", path.display());
        let want = [sum, i64::from(data_model[n as usize - 1])];
        assert_eq!(result.to_vec().expect("result"), want, "{}", path.display());
    }
}

/// Runs `flood` on `device` and checks it against the model of a pending-launch limit
/// of `limit`.
fn flood(device: &Device, path: &Path, grid: u32, block: u32, per_thread: i32, limit: u32) {
    let module = load(device, path);
    let threads = (grid * block) as usize;
    let count = device.zeroed::<u32>(1).expect("buffer");
    let ok = device.zeroed::<i32>(threads).expect("buffer");
    let last = device.buffer_from(&vec![-1i32; threads]).expect("buffer");
    let kernel = module.kernel("flood").expect("flood");
    let args = [Arg::from(&count), Arg::value(per_thread), Arg::from(&ok), Arg::from(&last)];
    kernel.launch(grid, block, 0, &args).unwrap_or_else(|e| panic!("{e}"));
    let (ok, last) = (ok.to_vec().expect("ok"), last.to_vec().expect("last"));
    let attempted = threads as u32 * per_thread as u32;
    let launched = attempted.min(limit);
    assert_eq!(ok.iter().map(|&k| k as u32).sum::<u32>(), launched, "launches that succeeded");
    // Every successful launch ran its child once.
    assert_eq!(count.to_vec().expect("count"), [launched], "children that ran");
    for t in 0..threads {
        // cudaErrorLaunchPendingCountExceeded exactly where a thread had a failure.
        let want = if ok[t] < per_thread { 69 } else { 0 };
        assert_eq!(last[t], want, "thread {t} ({} launched)", ok[t]);
    }
}

#[test]
fn launches_past_the_default_pending_limit_fail_with_its_error() {
    let Some(device) = device() else { return };
    assert_eq!(device.pending_launch_limit(), 2048, "CUDA's default");
    // 2 × 32 threads × 40 = 2560 launches, 2048 of them fit.
    flood(&device, &sm80(), 2, 32, 40, 2048);
}

#[test]
fn the_pending_limit_is_a_device_setting() {
    // A device of its own: the limit is shared by a device's clones.
    let Some(_) = device() else { return };
    let device = Device::default_device().expect("device");
    device.set_pending_launch_limit(100);
    assert_eq!(device.pending_launch_limit(), 100);
    flood(&device, &sm80(), 1, 16, 10, 100);
    // Below the limit every launch succeeds.
    flood(&device, &sm80(), 1, 8, 10, 100);
}

/// The PTX-level API (`cudaGetParameterBuffer` + `cudaLaunchDevice`), device streams
/// and the error codes launches return.
#[test]
fn the_device_runtime_api_returns_cuda_s_error_codes() {
    let Some(device) = device() else { return };
    for path in device_launch_builds() {
        let module = load(&device, &path);
        let out = device.buffer_from(&[-5i32; 24]).expect("buffer");
        let codes = device.buffer_from(&[-1i32; 14]).expect("buffer");
        let kernel = module.kernel("api_calls").expect("api_calls");
        kernel.launch(1, 1, 0, &[Arg::from(&out), Arg::from(&codes)]).unwrap_or_else(|e| {
            panic!("{}: {e}", path.display());
        });
        let want_out: Vec<i32> = (0..24).map(|i| [7, 9, -5][i / 8]).collect();
        assert_eq!(out.to_vec().expect("out"), want_out, "{}", path.display());
        let want = [0, 0, 0, 0, 98, 98, 0, 9, 9, 9, 9, 1, 0, 0];
        assert_eq!(codes.to_vec().expect("codes"), want, "{}", path.display());
    }
}

/// An asynchronous launch (the driver library's path) runs the whole tree before the
/// stream's next operation.
#[test]
fn children_run_before_the_stream_moves_on() {
    let Some(device) = device() else { return };
    let module = load(&device, &sm80());
    let stream = device.create_stream(ptxvk::StreamKind::NonBlocking).expect("stream");
    let sum = device.zeroed::<u64>(1).expect("buffer");
    let grids = device.zeroed::<u32>(1).expect("buffer");
    let copy = device.zeroed::<u64>(1).expect("buffer");
    let kernel = module.kernel("tree").expect("tree");
    let args = [Arg::value(4i32), Arg::value(1u64), Arg::from(&sum), Arg::from(&grids)];
    kernel.launch_on(&stream, 1, 2, 0, &args).unwrap_or_else(|e| panic!("{e}"));
    // The next operation on the stream copies the sum: it must be the whole tree's.
    sum.as_slice().copy_to_device(&stream, &copy.as_slice()).expect("copy");
    stream.synchronize().expect("synchronize");
    let (want_sum, want_grids) = tree_model(4, 1, 2);
    assert_eq!(copy.to_vec().expect("copy"), [want_sum]);
    assert_eq!(grids.to_vec().expect("grids"), [want_grids]);
}

/// `ptxvk run --spec` of a launching kernel, the module's other kernels loaded with it.
#[test]
fn ptxvk_run_runs_the_children() {
    let Some(_) = device() else { return };
    let (sum, grids) = tree_model(3, 1, 2);
    let case = Case {
        grid: [1, 1, 1],
        block: [2, 1, 1],
        shared_bytes: 0,
        args: vec![
            val(3i32),
            val(1u64),
            buf(ElemType::U64, vec![0u8; 8]),
            buf(ElemType::U32, vec![0u8; 4]),
        ],
        expected: vec![(2, sum.to_le_bytes().to_vec()), (3, grids.to_le_bytes().to_vec())],
    };
    let got = run_cli(&sm80(), "tree", &case);
    check("ptxvk run --spec tree (sum)", ElemType::U64, &got, &case.expected[..1]);
    check("ptxvk run --spec tree (grids)", ElemType::U32, &got, &case.expected[1..]);
}

/// Under memcheck the parent's stores into its parameter buffers are valid accesses,
/// and the children run checked too.
#[test]
fn checked_launches_allow_the_parameter_buffers() {
    let Some(_) = device() else { return };
    let mut device = Device::default_device().expect("device");
    device.set_check(ptxvk::check::CheckConfig::memcheck());
    let module = load(&device, &sm80());
    let out = device.buffer_from(&[-5i32; 24]).expect("buffer");
    let codes = device.buffer_from(&[-1i32; 14]).expect("buffer");
    let kernel = module.kernel("api_calls").expect("api_calls");
    kernel.launch(1, 1, 0, &[Arg::from(&out), Arg::from(&codes)]).unwrap_or_else(|e| panic!("{e}"));
    let want_out: Vec<i32> = (0..24).map(|i| [7, 9, -5][i / 8]).collect();
    assert_eq!(out.to_vec().expect("out"), want_out);
    let want = [0, 0, 0, 0, 98, 98, 0, 9, 9, 9, 9, 1, 0, 0];
    assert_eq!(codes.to_vec().expect("codes"), want);
}
