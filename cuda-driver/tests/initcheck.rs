//! `PTXVK_CHECK=initcheck` through the driver library: `cuMemAlloc` memory is undefined
//! to the program until a copy, a memset or a kernel writes it, so a launch that reads
//! it first is reported (and fails with `CUDA_ERROR_LAUNCH_FAILED`: the reads
//! happened, their values are not the program's), and the same launch after
//! `cuMemcpyHtoD` or `cuMemsetD32` passes. A test binary of its own: the setting is
//! read once, when the library's device opens.

mod common;

use std::ffi::{c_int, c_void};

use common::*;

const LAUNCH_FAILED: R = 719;

#[test]
fn reads_of_memory_nothing_wrote_fail_and_writes_from_the_host_count() {
    let Some(lib) = checked_library("initcheck") else { return };
    let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
    let alloc: Alloc = proc(&lib, "cuMemAlloc");
    let htod: CopyToDevice = proc(&lib, "cuMemcpyHtoD");
    let memset: unsafe extern "C" fn(u64, u32, usize) -> R = proc(&lib, "cuMemsetD32");
    let launch: Launch = proc(&lib, "cuLaunchKernel");
    let sync: unsafe extern "C" fn() -> R = proc(&lib, "cuCtxSynchronize");
    let module = fault_module(&lib);
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        let mut f = 0;
        assert_eq!(get_function(&mut f, module, c"global_load".as_ptr()), SUCCESS);
        let n = 60usize;
        let (mut input, mut out) = (0u64, 0u64);
        assert_eq!(alloc(&mut input, n * 4), SUCCESS);
        assert_eq!(alloc(&mut out, n * 4), SUCCESS);
        // out[i] = in[i] + 1 for the 60 threads (no thread takes another index).
        let run = |input: u64| -> R {
            let (who, idx) = (u32::MAX, 0 as c_int);
            let mut params: [*mut c_void; 4] = [arg(&input), arg(&out), arg(&who), arg(&idx)];
            let r = launch(f, 2, 1, 1, 30, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut());
            assert_eq!(r, SUCCESS, "the launch is enqueued");
            sync()
        };
        assert_eq!(run(input), LAUNCH_FAILED, "every read of `in` is of unwritten memory");
        let data: Vec<u32> = (0..n as u32).collect();
        assert_eq!(htod(input, data.as_ptr().cast(), n * 4), SUCCESS);
        assert_eq!(run(input), SUCCESS, "after cuMemcpyHtoD");
        let mut fresh = 0u64;
        assert_eq!(alloc(&mut fresh, n * 4), SUCCESS);
        assert_eq!(memset(fresh, 7, n), SUCCESS);
        assert_eq!(run(fresh), SUCCESS, "after cuMemsetD32");
    }
}
