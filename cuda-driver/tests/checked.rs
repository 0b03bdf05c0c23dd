//! `PTXVK_CHECK=memcheck` through the driver library: a client's launch that writes past
//! its allocation is refused and reported as CUDA reports such faults,
//! `CUDA_ERROR_ILLEGAL_ADDRESS` (and `CUDA_ERROR_MISALIGNED_ADDRESS` for a misaligned
//! access), while its valid accesses happen; the fault is sticky, as CUDA's are. A test
//! binary of its own: the setting is read once, when the library's device opens.

mod common;

use std::ffi::{c_int, c_void};

use common::*;

const ILLEGAL_ADDRESS: R = 700;
const MISALIGNED_ADDRESS: R = 716;

#[test]
fn checked_launches_fail_with_cuda_s_error_codes() {
    let Some(lib) = checked_library("memcheck") else { return };
    let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
    let alloc: Alloc = proc(&lib, "cuMemAlloc");
    let dtoh: CopyToHost = proc(&lib, "cuMemcpyDtoH");
    let launch: Launch = proc(&lib, "cuLaunchKernel");
    let sync: unsafe extern "C" fn() -> R = proc(&lib, "cuCtxSynchronize");
    let module = fault_module(&lib);
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        let n = 60usize;
        let mut out = 0u64;
        assert_eq!(alloc(&mut out, n * 4), SUCCESS);
        let mut wide = 0u64;
        assert_eq!(alloc(&mut wide, n * 8), SUCCESS);
        let run = |kernel: &std::ffi::CStr, out: u64, who: u32, idx: c_int| -> R {
            let mut f = 0;
            assert_eq!(get_function(&mut f, module, kernel.as_ptr()), SUCCESS);
            let mut params: [*mut c_void; 3] = [
                (&out as *const u64).cast_mut().cast(),
                (&who as *const u32).cast_mut().cast(),
                (&idx as *const c_int).cast_mut().cast(),
            ];
            let r = launch(f, 2, 1, 1, 30, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut());
            assert_eq!(r, SUCCESS, "the launch is enqueued");
            sync()
        };
        // Thread 37 stores one word past the 240 bytes.
        assert_eq!(run(c"global_store", out, 37, 60), ILLEGAL_ADDRESS);
        after_sticky_fault(&lib, ILLEGAL_ADDRESS, || {
            let mut got = vec![0u32; n];
            assert_eq!(dtoh(got.as_mut_ptr().cast(), out, n * 4), SUCCESS);
            for (i, &g) in got.iter().enumerate() {
                assert_eq!(g, if i == 37 { 0 } else { i as u32 }, "out[{i}]");
            }
        });
        assert_eq!(run(c"global_store", out, u32::MAX, 0), SUCCESS, "no thread faults");
        // Thread 5's u64 store at 8 * 5 + 4 bytes.
        assert_eq!(run(c"global_misaligned", wide, 5, 4), MISALIGNED_ADDRESS);
        after_sticky_fault(&lib, MISALIGNED_ADDRESS, || {});
    }
}
