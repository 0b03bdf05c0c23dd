//! Device-side launches through the driver library: a module with dynamic parallelism
//! (`tests/kernels/device_launch.cu`, nvcc `-rdc=true`) loaded with `cuModuleLoadData`
//! and launched with `cuLaunchKernel` runs every grid its kernels launch before the
//! stream moves on. Expected values from CPU models of the kernels.

mod common;

use std::ffi::c_void;

use common::*;

/// The CPU model of `tree` launched with two threads: a complete binary tree of grids
/// of depth `depth` with heap-numbered ids from 1: (sum of ids, grids).
fn tree_model(depth: u32) -> (u64, u32) {
    let nodes = (1u64 << (depth + 1)) - 1;
    (nodes * (nodes + 1) / 2, nodes as u32)
}

#[test]
fn launches_from_the_device_run_through_the_driver_api() {
    let Some(lib) = library_with_context() else { return };
    let KernelCalls { load, get_function, alloc, htod, dtoh, launch, sync } =
        KernelCalls::new(&lib);
    let text = nul_terminated("tests/kernels/device_launch.nvcc.sm_80.ptx");
    // SAFETY (this test): NUL-terminated PTX, valid out-pointers, and parameter arrays
    // whose entries point to values of the kernels' parameter types.
    unsafe {
        let mut module = 0;
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        let mut tree = 0;
        assert_eq!(get_function(&mut tree, module, c"tree".as_ptr()), SUCCESS);
        let (mut sum, mut grids) = (0u64, 0u64);
        assert_eq!(alloc(&mut sum, 8), SUCCESS);
        assert_eq!(alloc(&mut grids, 4), SUCCESS);
        let zero = [0u8; 8];
        assert_eq!(htod(sum, zero.as_ptr().cast(), 8), SUCCESS);
        assert_eq!(htod(grids, zero.as_ptr().cast(), 4), SUCCESS);
        let (depth, id) = (4i32, 1u64);
        let mut params: [*mut c_void; 4] = [arg(&depth), arg(&id), arg(&sum), arg(&grids)];
        let r = launch(tree, 1, 1, 1, 2, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut());
        assert_eq!(r, SUCCESS);
        assert_eq!(sync(), SUCCESS);
        let (mut got_sum, mut got_grids) = (0u64, 0u32);
        assert_eq!(dtoh((&mut got_sum as *mut u64).cast(), sum, 8), SUCCESS);
        assert_eq!(dtoh((&mut got_grids as *mut u32).cast(), grids, 4), SUCCESS);
        assert_eq!((got_sum, got_grids), tree_model(4));

        // The tail launch sees the parent's and its fire-and-forget child's writes.
        let mut tail = 0;
        assert_eq!(get_function(&mut tail, module, c"tail_parent".as_ptr()), SUCCESS);
        let n = 64i32;
        let (mut data, mut result) = (0u64, 0u64);
        assert_eq!(alloc(&mut data, n as usize * 4), SUCCESS);
        assert_eq!(alloc(&mut result, 16), SUCCESS);
        let mut params: [*mut c_void; 3] = [arg(&data), arg(&n), arg(&result)];
        let r = launch(tail, 1, 1, 1, 64, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut());
        assert_eq!(r, SUCCESS);
        assert_eq!(sync(), SUCCESS);
        let mut got = [0i64; 2];
        assert_eq!(dtoh(got.as_mut_ptr().cast(), result, 16), SUCCESS);
        let model: Vec<i64> = (0..i64::from(n)).map(|i| (i + 1000) * 3).collect();
        assert_eq!(got, [model.iter().sum::<i64>(), model[n as usize - 1]]);
    }
}
