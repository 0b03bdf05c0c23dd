//! The driver library under abuse: long seeded random sequences of driver calls, valid
//! and invalid, from several threads at once, through the C ABI as a client makes them.
//!
//! Each thread keeps a CPU model of its allocations (their bytes), streams, events and
//! module, draws operations, and checks every result: a valid call succeeds and its data
//! is the model's (copies, memsets, `vector_add` launches computed on the CPU); an invalid
//! one returns the CUDA error code CUDA gives for it, never crashing or hanging. Invalid
//! calls name things no thread has: non-canonical device addresses, handles that are no
//! handle, oversized and out-of-range copies, missing parameters, empty grids, images
//! that are not PTX. A second, single-threaded phase uses real dangling handles (frees,
//! streams and events destroyed, some with work in flight), which several threads could
//! not do deterministically (a freed address may come back to another thread).
//!
//! `PTXVK_ABUSE_OPS` sets the operations per thread (default 400). The long run is a
//! benchmark: `cargo bench -p ptxvk-cuda-driver --bench soak` drives this model's valid
//! calls by the million (`docs/benchmarks.md`, *Soak*).

mod common;

use std::ffi::c_uint;
use std::sync::Arc;

use common::*;
use libloading::Library;

#[path = "abuse/actor.rs"]
#[macro_use]
mod actor;

use actor::*;

const INVALID_CONTEXT: R = 201;

fn operations() -> usize {
    std::env::var("PTXVK_ABUSE_OPS").ok().and_then(|v| v.parse().ok()).unwrap_or(400)
}

/// The primary context and `vector_add` of the bundled PTX, loaded once.
fn setup(lib: &Library) -> (usize, usize) {
    let retain: unsafe extern "C" fn(*mut usize, i32) -> R = proc(lib, "cuDevicePrimaryCtxRetain");
    let (load, get_function): (Load, GetFunction) =
        (proc(lib, "cuModuleLoadData"), proc(lib, "cuModuleGetFunction"));
    let text = nul_terminated("tests/kernels/vector_add.nvcc.sm_80.ptx");
    let (mut ctx, mut module, mut f) = (0, 0, 0);
    // SAFETY: valid out-pointers and a NUL-terminated image.
    unsafe {
        assert_eq!(retain(&mut ctx, 0), SUCCESS);
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        assert_eq!(get_function(&mut f, module, c"vector_add".as_ptr()), SUCCESS);
    }
    (ctx, f)
}

#[test]
fn random_call_sequences_from_four_threads_get_results_or_error_codes() {
    let Some(lib) = library_with_context() else { return };
    let lib = Arc::new(lib);
    let api = Api::new(&lib);
    let (ctx, vector_add) = setup(&lib);
    let ops = operations();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let lib = Arc::clone(&lib);
            std::thread::spawn(move || {
                let _keep = lib;
                // SAFETY: the primary context, retained above.
                assert_eq!(unsafe { (api.set_current)(ctx) }, SUCCESS);
                let mut actor = Actor::new(api, 0x5eed_0000 + t * 7919, vector_add);
                actor.steps(ops);
                actor.clean_up();
                actor.done
            })
        })
        .collect();
    let mut done = [0u32; KINDS];
    for t in threads {
        let counts = t.join().expect("a thread's sequence failed (see its message)");
        for (d, c) in done.iter_mut().zip(counts) {
            *d += c;
        }
    }
    let report: Vec<String> =
        KIND_NAMES.iter().zip(done).map(|(name, n)| format!("{name} {n}")).collect();
    eprintln!("abuse: 4 threads x {ops} operations: {}", report.join(", "));
    assert!(done.iter().all(|&n| n > 0), "every kind of operation ran");
}

#[test]
fn dangling_pointers_streams_and_events_are_error_codes() {
    let Some(lib) = library_with_context() else { return };
    let api = Api::new(&lib);
    let (_, vector_add) = setup(&lib);
    let mut actor = Actor::new(api, 0xdead, vector_add);
    actor.steps(50);
    actor.clean_up();
    let a = api;
    // SAFETY: every pointer passed is valid for the call, or a dangling device address
    // or handle the library must refuse.
    unsafe {
        let mut p = 0;
        assert_eq!((a.alloc)(&mut p, 4096), SUCCESS);
        assert_eq!((a.free)(p), SUCCESS);
        assert_eq!((a.free)(p), INVALID_VALUE, "double free");
        let mut host = [0u8; 16];
        assert_eq!((a.to_host)(host.as_mut_ptr().cast(), p, 16), INVALID_VALUE, "use after free");
        assert_eq!((a.memset)(p, 1, 16), INVALID_VALUE, "memset after free");

        // A stream destroyed with a copy in flight, then named again.
        let (mut s, mut q) = (0, 0);
        assert_eq!((a.stream_create)(&mut s, 0), SUCCESS);
        assert_eq!((a.alloc)(&mut q, 1 << 20), SUCCESS);
        let mut big = vec![0u8; 1 << 20];
        assert_eq!((a.to_host_async)(big.as_mut_ptr().cast(), q, 1 << 20, s), SUCCESS);
        assert_eq!((a.stream_destroy)(s), SUCCESS);
        assert_eq!((a.stream_sync)(s), INVALID_HANDLE, "sync of a destroyed stream");
        assert_eq!((a.stream_destroy)(s), INVALID_HANDLE, "second destroy");
        assert_eq!((a.ctx_sync)(), SUCCESS);
        // Freed while a launch that uses it may still run: CUDA's cuMemFree waits.
        let (mut x, n) = (0u64, 1u32 << 16);
        assert_eq!((a.alloc)(&mut x, 4 << 16), SUCCESS);
        let mut params = [arg(&x), arg(&x), arg(&x), arg(&n)];
        let null = std::ptr::null_mut();
        let r = (a.launch)(vector_add, 1024, 1, 1, 64, 1, 1, 0, 0, params.as_mut_ptr(), null);
        assert_eq!(r, SUCCESS);
        assert_eq!((a.free)(x), SUCCESS, "free while a launch reads it");
        assert_eq!((a.free)(q), SUCCESS);

        let mut e = 0;
        assert_eq!((a.event_create)(&mut e, 0), SUCCESS);
        assert_eq!((a.event_destroy)(e), SUCCESS);
        assert_eq!((a.event_record)(e, 0), INVALID_HANDLE, "record of a destroyed event");
        assert_eq!((a.event_destroy)(e), INVALID_HANDLE, "second destroy");

        // A context created, destroyed (it is popped, the primary one current again),
        // then named again.
        // CUDA 3.2's form, as the symbol `cuCtxCreate_v2` (`cuGetProcAddress` at 12.9
        // answers CUDA 12.5's `cuCtxCreate_v4`, which takes creation parameters).
        let create: libloading::Symbol<'_, unsafe extern "C" fn(*mut usize, c_uint, i32) -> R> =
            lib.get(b"cuCtxCreate_v2").expect("cuCtxCreate_v2");
        let destroy: Handle = proc(&lib, "cuCtxDestroy");
        let mut ctx = 0;
        assert_eq!(create(&mut ctx, 0, 0), SUCCESS);
        assert_eq!(destroy(ctx), SUCCESS);
        assert_eq!((a.alloc)(&mut p, 16), SUCCESS, "the primary context is current again");
        assert_eq!((a.free)(p), SUCCESS);
        assert_eq!((a.set_current)(ctx), INVALID_CONTEXT, "a destroyed context made current");
        assert!([INVALID_CONTEXT, INVALID_VALUE].contains(&destroy(ctx)), "second destroy");
    }
}

#[test]
fn a_child_forked_after_cu_init_gets_error_codes_and_the_parent_goes_on() {
    let Some(lib) = library_with_context() else { return };
    let api = Api::new(&lib);
    let init: unsafe extern "C" fn(c_uint) -> R = proc(&lib, "cuInit");
    const NOT_INITIALIZED: R = 3;
    let mut p = 0;
    assert_eq!(call!(api.alloc, &mut p, 4096), SUCCESS);
    // SAFETY: fork() in a test process; the child only calls into the driver library
    // (which allocates nothing on these paths) and leaves with _exit, running no Rust
    // destructor of the parent's state.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork failed");
    if child == 0 {
        // CUDA does not carry a context across fork(): the child's calls fail with
        // CUDA_ERROR_NOT_INITIALIZED (cudaErrorInitializationError), and must not hang
        // on the parent's device, whose threads the child does not have.
        let mut q = 0;
        let alloc = call!(api.alloc, &mut q, 16);
        let free = call!(api.free, p);
        let again = call!(init, 0);
        let ok = [alloc, free, again] == [NOT_INITIALIZED; 3];
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; `status` is writable.
        let r = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        if r == child {
            break;
        }
        if std::time::Instant::now() > deadline {
            // SAFETY: our own child.
            unsafe { libc::kill(child, libc::SIGKILL) };
            panic!("the forked child hung in a driver call");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(libc::WIFEXITED(status), "the forked child crashed (status {status:#x})");
    assert_eq!(libc::WEXITSTATUS(status), 0, "a call in the child did not return NOT_INITIALIZED");
    // The parent's driver is untouched.
    let mut back = [0u8; 16];
    assert_eq!(call!(api.to_host, back.as_mut_ptr().cast(), p, 16), SUCCESS);
    assert_eq!(call!(api.free, p), SUCCESS);
}
