//! Device loss through the driver library (`cuda-driver/src/state.rs`, *Device loss*),
//! with the runtime's simulated loss (`ptxvk_simulate_device_loss`): every later call
//! that needs the device returns `CUDA_ERROR_DEVICE_UNAVAILABLE` at once, from several
//! threads, with work in flight; nothing hangs; `cuDevicePrimaryCtxReset` opens the
//! device again, the lost device's handles are invalid, and new work computes right. A
//! test binary of its own: the loss is the process's.

mod common;

use std::ffi::{c_int, c_uint};

use common::*;

const DEVICE_UNAVAILABLE: R = 46;

/// Loads `vector_add` (nvcc's) and runs it on `n` elements; the sums, or the first error.
fn vector_add(calls: KernelCalls, n: usize) -> Result<Vec<f32>, R> {
    let KernelCalls { load, get_function, alloc, htod, dtoh, launch, sync } = calls;
    let ok = |r: R| if r == SUCCESS { Ok(()) } else { Err(r) };
    let text = nul_terminated("tests/kernels/vector_add.nvcc.sm_80.ptx");
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let mut c = vec![0f32; n];
    // SAFETY: valid pointers and handles throughout.
    unsafe {
        let (mut module, mut f) = (0, 0);
        ok(load(&mut module, text.as_ptr().cast()))?;
        ok(get_function(&mut f, module, c"vector_add".as_ptr()))?;
        let (mut da, mut db, mut dc) = (0u64, 0u64, 0u64);
        for d in [&mut da, &mut db, &mut dc] {
            ok(alloc(d, n * 4))?;
        }
        ok(htod(da, a.as_ptr().cast(), n * 4))?;
        ok(htod(db, b.as_ptr().cast(), n * 4))?;
        let count = n as c_int;
        let mut params = [arg(&da), arg(&db), arg(&dc), arg(&count)];
        let blocks = n.div_ceil(64) as c_uint;
        let null = std::ptr::null_mut();
        ok(launch(f, blocks, 1, 1, 64, 1, 1, 0, 0, params.as_mut_ptr(), null))?;
        ok(sync())?;
        ok(dtoh(c.as_mut_ptr().cast(), dc, n * 4))?;
    }
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "c[{i}]");
    }
    Ok(c)
}

#[test]
fn after_device_loss_every_call_fails_and_a_reset_recovers() {
    let Some(lib) = library_with_context() else { return };
    let calls = KernelCalls::new(&lib);
    let simulate: unsafe extern "C" fn() -> R = proc_symbol(&lib, "ptxvk_simulate_device_loss");
    let reset: unsafe extern "C" fn(c_int) -> R = proc(&lib, "cuDevicePrimaryCtxReset");
    let free: unsafe extern "C" fn(u64) -> R = proc(&lib, "cuMemFree");
    let stream_create: unsafe extern "C" fn(*mut usize, c_uint) -> R = proc(&lib, "cuStreamCreate");
    let count: unsafe extern "C" fn(*mut c_int) -> R = proc(&lib, "cuDeviceGetCount");
    let name: unsafe extern "C" fn(*mut i8, c_int, c_int) -> R = proc(&lib, "cuDeviceGetName");
    let get_current: unsafe extern "C" fn(*mut usize) -> R = proc(&lib, "cuCtxGetCurrent");

    assert_eq!(vector_add(calls, 1000), Ok(expected(1000)), "before the loss");
    // An allocation of the device about to be lost, and work in flight on it.
    let mut old = 0u64;
    // SAFETY: valid out-pointers.
    assert_eq!(unsafe { (calls.alloc)(&mut old, 4096) }, SUCCESS);
    let in_flight = std::thread::spawn(move || {
        assert!(init_context(&library()));
        vector_add(calls, 100_000)
    });
    // SAFETY: a function of no arguments.
    assert_eq!(unsafe { simulate() }, SUCCESS);
    // The work in flight either finished before the loss was noticed or fails with the
    // loss's code; it does not hang.
    match in_flight.join().expect("no panic") {
        Ok(c) => assert_eq!(c, expected(100_000)),
        Err(e) => assert_eq!(e, DEVICE_UNAVAILABLE, "work in flight"),
    }
    // Every call that needs the device fails at once, from any thread.
    let failing = |what: &str| {
        assert_eq!(vector_add(calls, 10), Err(DEVICE_UNAVAILABLE), "{what}: a whole job");
        let mut p = 0u64;
        // SAFETY: valid out-pointers.
        unsafe {
            assert_eq!((calls.alloc)(&mut p, 4), DEVICE_UNAVAILABLE, "{what}: cuMemAlloc");
            assert_eq!((calls.sync)(), DEVICE_UNAVAILABLE, "{what}: cuCtxSynchronize");
            assert_eq!(free(old), DEVICE_UNAVAILABLE, "{what}: cuMemFree");
            let mut s = 0;
            assert_eq!(stream_create(&mut s, 0), DEVICE_UNAVAILABLE, "{what}: cuStreamCreate");
        }
    };
    failing("this thread");
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let lib = library();
                assert!(init_context(&lib));
                let calls = KernelCalls::new(&lib);
                assert_eq!(vector_add(calls, 10), Err(DEVICE_UNAVAILABLE), "thread {t}");
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no panic");
    }
    // What needs no device still answers.
    // SAFETY: valid out-pointers and lengths.
    unsafe {
        let mut n = 0;
        assert_eq!(count(&mut n), SUCCESS);
        let mut text = [0i8; 64];
        assert_eq!(name(text.as_mut_ptr(), 64, 0), SUCCESS);
        let mut ctx = 0;
        assert_eq!(get_current(&mut ctx), SUCCESS);
        assert_ne!(ctx, 0);
    }
    // The reset opens the device again: the old allocation is no allocation, new work
    // computes right.
    // SAFETY: plain arguments.
    assert_eq!(unsafe { reset(0) }, SUCCESS, "cuDevicePrimaryCtxReset");
    // SAFETY: a plain argument.
    assert_ne!(unsafe { free(old) }, SUCCESS, "an allocation of the lost device");
    assert_eq!(vector_add(calls, 5000), Ok(expected(5000)), "after the reset");
    // SAFETY: valid out-pointers.
    unsafe {
        let mut s = 0;
        assert_eq!(stream_create(&mut s, 0), SUCCESS, "a stream after the reset");
    }
}

/// `vector_add`'s sums of [`vector_add`]'s inputs, computed on the CPU.
fn expected(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 * 0.5 + (1000.0 - i as f32)).collect()
}

/// A symbol of the library that is not CUDA's (so not behind `cuGetProcAddress`).
fn proc_symbol<T: Copy>(lib: &libloading::Library, name: &str) -> T {
    // SAFETY: the caller names the symbol's real type.
    let symbol: libloading::Symbol<'_, T> =
        unsafe { lib.get(name.as_bytes()) }.unwrap_or_else(|e| panic!("{name}: {e}"));
    *symbol
}
