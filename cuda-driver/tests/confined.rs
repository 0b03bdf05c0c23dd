//! Confinement through the driver library (`docs/status.md`, *Security*): on a device
//! that runs kernels inside this process, a client's unchecked kernel whose wild pointer
//! aims at the client's own host memory fails with `CUDA_ERROR_ILLEGAL_ADDRESS`, the
//! memory keeps its bytes, and the process goes on (in a new context, or after the
//! primary context's reset: the fault is sticky, as CUDA's are). A test binary of its own: the
//! library's device opens once per process, here without `PTXVK_CHECK`.

mod common;

use std::ffi::{c_int, c_uint, c_void};

use common::*;

const ILLEGAL_ADDRESS: R = 700;

/// Held by each test: contexts share the device's streams here, so one test's fault
/// could be reported to the other's synchronization.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_wild_pointer_into_host_memory_fails_with_illegal_address() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
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
        after_sticky_fault(&lib, ILLEGAL_ADDRESS, || {
            let mut got = vec![0u32; n];
            assert_eq!(dtoh(got.as_mut_ptr().cast(), out, n * 4), SUCCESS);
            for (i, &g) in got.iter().enumerate() {
                assert_eq!(g, if i == 37 { 0 } else { i as u32 }, "out[{i}]");
            }
        });
        // An address inside the client's allocation is allowed.
        assert_eq!(run(out + 4), SUCCESS);
    }
}

const LAUNCH_FAILED: R = 719;
const ASSERT: R = 710;

/// A `trap` and a failed `assert` (nvcc's `syscalls.cu`) are sticky in the context they
/// faulted in, as CUDA's are, and only there: another context goes on working, and the
/// faulted one works again only as a new context.
#[test]
fn a_trap_and_a_failed_assert_are_sticky_in_their_context_only() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(lib) = library_with_context() else { return };
    let load: Load = proc(&lib, "cuModuleLoadData");
    let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
    let alloc: Alloc = proc(&lib, "cuMemAlloc");
    let htod: CopyToDevice = proc(&lib, "cuMemcpyHtoD");
    let launch: Launch = proc(&lib, "cuLaunchKernel");
    let sync: Synchronize = proc(&lib, "cuCtxSynchronize");
    let create: unsafe extern "C" fn(*mut usize, *const c_void, c_uint, c_int) -> R =
        proc(&lib, "cuCtxCreate");
    let destroy: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuCtxDestroy");
    let push: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuCtxPushCurrent");
    let pop: unsafe extern "C" fn(*mut usize) -> R = proc(&lib, "cuCtxPopCurrent");
    let text = nul_terminated("tests/kernels/syscalls.nvcc.sm_80.ptx");
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        for (kernel, fault) in [(c"trap_on", LAUNCH_FAILED), (c"check_positive", ASSERT)] {
            // A context of this test's own (the test binary's other test uses the primary
            // one), and a bystander.
            let (mut faulting, mut bystander) = (0, 0);
            assert_eq!(create(&mut bystander, std::ptr::null(), 0, 0), SUCCESS);
            let mut popped = 0;
            assert_eq!(pop(&mut popped), SUCCESS);
            assert_eq!(create(&mut faulting, std::ptr::null(), 0, 0), SUCCESS);
            let mut module = 0;
            assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
            let mut f = 0;
            assert_eq!(get_function(&mut f, module, kernel.as_ptr()), SUCCESS);
            let n = 64usize;
            // 13 makes `trap_on` trap; -13 fails `check_positive`'s assertion.
            let input: Vec<i32> =
                (0..n as i32).map(|i| if i == 40 { -13 } else { 13 + i }).collect();
            let input: Vec<i32> = match fault {
                LAUNCH_FAILED => input.iter().map(|&v| if v == -13 { 13 } else { v + 1 }).collect(),
                _ => input,
            };
            let (mut inp, mut out) = (0u64, 0u64);
            assert_eq!(alloc(&mut inp, n * 4), SUCCESS);
            assert_eq!(alloc(&mut out, n * 4), SUCCESS);
            assert_eq!(htod(inp, input.as_ptr().cast(), n * 4), SUCCESS);
            let count = n as c_int;
            let mut params: [*mut c_void; 3] = [
                (&inp as *const u64).cast_mut().cast(),
                (&count as *const c_int).cast_mut().cast(),
                (&out as *const u64).cast_mut().cast(),
            ];
            let r = launch(f, 2, 1, 1, 32, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut());
            assert_eq!(r, SUCCESS, "the launch is enqueued");
            assert_eq!(sync(), fault, "{kernel:?}");
            let mut p = 0u64;
            assert_eq!(alloc(&mut p, 4), fault, "{kernel:?}: sticky in its context");
            assert_eq!(sync(), fault, "{kernel:?}: sticky in its context");
            // The bystander works, the faulted context still does not.
            assert_eq!(push(bystander), SUCCESS);
            assert_eq!(alloc(&mut p, 4), SUCCESS, "{kernel:?}: another context works");
            assert_eq!(sync(), SUCCESS);
            assert_eq!(pop(&mut popped), SUCCESS);
            assert_eq!(popped, bystander);
            assert_eq!(alloc(&mut p, 4), fault, "{kernel:?}: still sticky");
            assert_eq!(destroy(faulting), SUCCESS, "a faulted context can be destroyed");
            assert_eq!(destroy(bystander), SUCCESS);
        }
    }
}
