//! Confinement through the driver library (`docs/status.md`, *Security*): on a device
//! that runs kernels inside this process, a client's unchecked kernel whose wild pointer
//! aims at the client's own host memory fails with `CUDA_ERROR_ILLEGAL_ADDRESS`, the
//! memory keeps its bytes, and the process goes on. A test binary of its own: the
//! library's device opens once per process, here without `PTXVK_CHECK`.

mod common;

use std::ffi::c_void;

use common::*;

const ILLEGAL_ADDRESS: R = 700;

#[test]
fn a_wild_pointer_into_host_memory_fails_with_illegal_address() {
    let Some(lib) = library_with_context() else { return };
    if std::env::var("PTXVK_CONFINE").is_ok_and(|v| v.trim() == "0") {
        eprintln!("SKIPPED: PTXVK_CONFINE=0");
        return;
    }
    let load: Load = proc(&lib, "cuModuleLoadData");
    let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
    let alloc: Alloc = proc(&lib, "cuMemAlloc");
    let dtoh: CopyToHost = proc(&lib, "cuMemcpyDtoH");
    let launch: Launch = proc(&lib, "cuLaunchKernel");
    let sync: unsafe extern "C" fn() -> R = proc(&lib, "cuCtxSynchronize");
    let text = nul_terminated("tests/ptx/check/confine.ptx");
    let secret = vec![0x5ec2_e7edu32; 256];
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        let mut module = 0;
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        let mut f = 0;
        assert_eq!(get_function(&mut f, module, c"poke".as_ptr()), SUCCESS);
        let n = 60usize;
        let mut out = 0u64;
        assert_eq!(alloc(&mut out, n * 4), SUCCESS);
        let run = |target: u64| -> R {
            let who = 37u32;
            let mut params: [*mut c_void; 3] = [
                (&out as *const u64).cast_mut().cast(),
                (&target as *const u64).cast_mut().cast(),
                (&who as *const u32).cast_mut().cast(),
            ];
            let r = launch(f, 2, 1, 1, 30, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut());
            assert_eq!(r, SUCCESS, "the launch is enqueued");
            sync()
        };
        let r = run(secret.as_ptr() as u64 + 400);
        // A GPU runs no kernel in this process, so it confines none (its faults stay on
        // the GPU): then the write lands in no memory of ours and the test has nothing
        // to see.
        if r == SUCCESS && secret.iter().all(|&w| w == 0x5ec2_e7ed) {
            eprintln!("SKIPPED: the device does not run kernels in this process");
            return;
        }
        assert_eq!(r, ILLEGAL_ADDRESS);
        assert!(secret.iter().all(|&w| w == 0x5ec2_e7ed), "the host memory is unchanged");
        let mut got = vec![0u32; n];
        assert_eq!(dtoh(got.as_mut_ptr().cast(), out, n * 4), SUCCESS);
        for (i, &g) in got.iter().enumerate() {
            assert_eq!(g, if i == 37 { 0 } else { i as u32 }, "out[{i}]");
        }
        // An address inside the client's allocation is allowed.
        assert_eq!(run(out + 4), SUCCESS);
    }
}
