//! Every real-compiler kernel of `tests/kernels/` (nvcc 13 sm_75/80/90, NVRTC 12
//! compute_52/70, clang 14 sm_70, or for kernels that need CUDA's own headers nvcc -G
//! sm_80 instead of clang) runs on the default Vulkan device through the Rust API
//! and through `ptxvk run --spec`, and matches a CPU reference bit for bit
//! (`common/cases.rs`).

mod common;

use common::cases::{self, KernelCase};
use common::*;
use ptxvk::spec::ElemType;

fn run(k: KernelCase) {
    run_all_variants(k.kernel, |_| k.entry.to_string(), k.ty, &k.case);
}

#[test]
fn vector_add() {
    run(cases::vector_add());
}

#[test]
fn saxpy_grid_stride_loop() {
    run(cases::saxpy());
}

#[test]
fn int64_arithmetic() {
    run(cases::int64_ops());
}

#[test]
fn simd_video_sums_of_absolute_differences() {
    run(cases::simd_video());
}

#[test]
fn collatz_data_dependent_loop() {
    run(cases::collatz());
}

#[test]
fn block_reduce_shared_memory_and_barriers() {
    run(cases::block_reduce());
}

/// `.func` calls kept by `__noinline__`: `.param` scalars and a 24-byte struct by value
/// and as a result, nested calls, generic pointers to shared/local/global memory as
/// arguments, and a function with its own `__shared__` array and barriers.
#[test]
fn calls_device_functions_inlined() {
    run(cases::calls());
}

/// Indirect calls through a table of function pointers (in local memory for nvcc and
/// NVRTC, a module-scope table with function-address initializers for clang).
#[test]
fn fnptr_indirect_calls() {
    run(cases::fnptr());
}

#[test]
fn dyn_shared_dynamic_shared_memory_and_sub_word_stores() {
    run(cases::dyn_shared());
}

#[test]
fn matadd2d_two_dimensional_grid() {
    run(cases::matadd2d());
}

#[test]
fn grid3d_every_special_register() {
    run(cases::grid3d());
}

/// A 1-D grid of 200,000 blocks is wider than lavapipe's maxComputeWorkGroupCount
/// (65535), so the runtime splits it into several dispatches with a `%ctaid` base;
/// `%nctaid` must still be the whole grid.
#[test]
fn grid_of_200000_blocks_is_split_into_dispatches() {
    let Some(device) = device() else { return };
    let path = repo().join("tests/kernels/grid3d.nvcc.sm_80.ptx");
    let case = cases::grid3d_case([200_000, 1, 1], [2, 1, 1]);
    let (stats, got) = run_api(&device, &path, "grid3d", &case);
    let max_x = device.info().limits.max_workgroup_count[0];
    assert!(max_x < 200_000, "this test needs a device with fewer than 200,000 workgroups in x");
    assert!(
        stats.dispatches >= 200_000u32.div_ceil(max_x),
        "expected a split grid, got {} dispatch(es)",
        stats.dispatches
    );
    check("grid3d 200000x1x1", ElemType::U32, &got, &case.expected);
}

/// Cooperative groups (`this_thread_block`, `tiled_partition<16/32>`, `cg::reduce`, a
/// tile's `shfl_down`, `coalesced_threads`), from nvcc -O3 and -G, and NVRTC; the -G
/// build reads the reserved shared memory (`%reserved_smem_offset_1`) and passes
/// generic pointers to local memory through out-of-line functions.
#[test]
fn cooperative_groups() {
    run(cases::coop_groups());
}
