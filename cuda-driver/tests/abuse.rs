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
//! `PTXVK_ABUSE_OPS` sets the operations per thread (default 400; the long run of
//! `docs/benchmarks.md` uses 20,000).

mod common;

use std::ffi::{c_uint, c_void};
use std::sync::Arc;

use common::*;
use libloading::Library;

const OUT_OF_MEMORY: R = 2;
const INVALID_CONTEXT: R = 201;

/// A non-canonical x86-64 address (bits 47..63 differ): no allocation can have it.
const NOWHERE: u64 = 0x7ff0_0000_0000_0000;

/// Handles are multiples of 16 from 0x1000 (`src/handles.rs`): these are none.
fn bogus_handle(rng: &mut Rng) -> usize {
    0x1000 + 16 * (rng.next() as usize % 4096) + 8
}

/// xorshift64*: the seeded source of every decision.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

type StreamCreate = unsafe extern "C" fn(*mut usize, c_uint) -> R;
type Handle = unsafe extern "C" fn(usize) -> R;
type Free = unsafe extern "C" fn(u64) -> R;
type Memset = unsafe extern "C" fn(u64, u8, usize) -> R;
type CopyAsync = unsafe extern "C" fn(*mut c_void, u64, usize, usize) -> R;
type EventCreate = unsafe extern "C" fn(*mut usize, c_uint) -> R;
type EventRecord = unsafe extern "C" fn(usize, usize) -> R;

/// The entry points the sequences call.
#[derive(Clone, Copy)]
struct Api {
    alloc: Alloc,
    free: Free,
    to_device: CopyToDevice,
    to_host: CopyToHost,
    to_host_async: CopyAsync,
    memset: Memset,
    load: Load,
    get_function: GetFunction,
    launch: Launch,
    stream_create: StreamCreate,
    stream_destroy: Handle,
    stream_sync: Handle,
    event_create: EventCreate,
    event_record: EventRecord,
    event_sync: Handle,
    event_destroy: Handle,
    ctx_sync: Synchronize,
    set_current: Handle,
}

impl Api {
    fn new(lib: &Library) -> Api {
        Api {
            alloc: proc(lib, "cuMemAlloc"),
            free: proc(lib, "cuMemFree"),
            to_device: proc(lib, "cuMemcpyHtoD"),
            to_host: proc(lib, "cuMemcpyDtoH"),
            to_host_async: proc(lib, "cuMemcpyDtoHAsync"),
            memset: proc(lib, "cuMemsetD8"),
            load: proc(lib, "cuModuleLoadData"),
            get_function: proc(lib, "cuModuleGetFunction"),
            launch: proc(lib, "cuLaunchKernel"),
            stream_create: proc(lib, "cuStreamCreate"),
            stream_destroy: proc(lib, "cuStreamDestroy"),
            stream_sync: proc(lib, "cuStreamSynchronize"),
            event_create: proc(lib, "cuEventCreate"),
            event_record: proc(lib, "cuEventRecord"),
            event_sync: proc(lib, "cuEventSynchronize"),
            event_destroy: proc(lib, "cuEventDestroy"),
            ctx_sync: proc(lib, "cuCtxSynchronize"),
            set_current: proc(lib, "cuCtxSetCurrent"),
        }
    }
}

/// Calls a driver entry point through its pointer.
///
/// SAFETY (every use): the host pointers passed are valid for what the call does with
/// them (host buffers outlive the call, and an asynchronous copy's buffer outlives the
/// synchronization that waits for it); device addresses and handles may be bogus, which
/// the library must refuse with an error code.
macro_rules! call {
    ($f:expr $(, $arg:expr)* $(,)?) => {
        unsafe { ($f)($($arg),*) }
    };
}

/// One device allocation and the bytes the model says it holds.
struct Buffer {
    ptr: u64,
    bytes: Vec<u8>,
}

/// What one thread has made, and the model of it.
struct Actor {
    api: Api,
    rng: Rng,
    buffers: Vec<Buffer>,
    streams: Vec<usize>,
    events: Vec<usize>,
    vector_add: usize,
    /// Operations done, by kind, for the report.
    done: [u32; KINDS],
}

const KINDS: usize = 12;
const KIND_NAMES: [&str; KINDS] = [
    "alloc",
    "free",
    "write",
    "read",
    "memset",
    "launch",
    "stream",
    "event",
    "bad pointer",
    "bad handle",
    "bad launch",
    "bad image",
];

impl Actor {
    fn new(api: Api, seed: u64, vector_add: usize) -> Actor {
        let rng = Rng(seed | 1);
        let (buffers, streams, events) = (Vec::new(), Vec::new(), Vec::new());
        Actor { api, rng, buffers, streams, events, vector_add, done: [0; KINDS] }
    }

    /// Runs `count` random operations, checking each.
    fn run(&mut self, count: usize) {
        for step in 0..count {
            let kind = self.rng.below(KINDS);
            self.step(kind, step);
            self.done[kind] += 1;
        }
        self.clean_up();
    }

    fn step(&mut self, kind: usize, step: usize) {
        let a = self.api;
        match kind {
            0 => self.alloc(),
            1 if !self.buffers.is_empty() => {
                let b = self.buffers.swap_remove(self.rng.below(self.buffers.len()));
                assert_eq!(call!(a.free, b.ptr), SUCCESS, "step {step}: free");
            }
            2 => self.write(step),
            3 => self.read(step),
            4 => self.memset(step),
            5 => self.launch(step),
            6 => self.stream(step),
            7 => self.event(step),
            8 => self.bad_pointer(step),
            9 => self.bad_handle(step),
            10 => self.bad_launch(step),
            11 => {
                let garbage: Vec<u8> =
                    self.rng.bytes(64).into_iter().map(|b| b | 1).chain([0]).collect();
                let mut module = 0;
                let r = call!(a.load, &mut module, garbage.as_ptr().cast());
                assert!(
                    INVALID_IMAGE_OR_PTX.contains(&r),
                    "step {step}: garbage image: {r}: {garbage:02x?}"
                );
            }
            _ => self.alloc(),
        }
    }

    fn alloc(&mut self) {
        let a = self.api;
        let len = 1 + self.rng.below(16 << 10);
        let mut ptr = 0;
        assert_eq!(call!(a.alloc, &mut ptr, len), SUCCESS, "alloc {len}");
        let bytes = self.rng.bytes(len);
        assert_eq!(call!(a.to_device, ptr, bytes.as_ptr().cast(), len), SUCCESS);
        self.buffers.push(Buffer { ptr, bytes });
        // Now and then more than any device has: an error, and the next call works.
        if self.rng.below(8) == 0 {
            let mut huge = 0;
            let r = call!(a.alloc, &mut huge, 1 << 50);
            assert_eq!(r, OUT_OF_MEMORY, "alloc of 1 PiB");
        }
    }

    /// A random buffer and a random range of it.
    fn range(&mut self) -> Option<(usize, usize, usize)> {
        if self.buffers.is_empty() {
            return None;
        }
        let i = self.rng.below(self.buffers.len());
        let len = self.buffers[i].bytes.len();
        let start = self.rng.below(len);
        let n = 1 + self.rng.below(len - start);
        Some((i, start, n))
    }

    fn write(&mut self, step: usize) {
        let Some((i, start, n)) = self.range() else { return };
        let data = self.rng.bytes(n);
        let b = &mut self.buffers[i];
        let r = call!(self.api.to_device, b.ptr + start as u64, data.as_ptr().cast(), n);
        assert_eq!(r, SUCCESS, "step {step}: write");
        b.bytes[start..start + n].copy_from_slice(&data);
    }

    fn read(&mut self, step: usize) {
        let Some((i, start, n)) = self.range() else { return };
        let mut got = vec![0u8; n];
        let b = &self.buffers[i];
        let r = call!(self.api.to_host, got.as_mut_ptr().cast(), b.ptr + start as u64, n);
        assert_eq!(r, SUCCESS, "step {step}: read");
        assert!(got == b.bytes[start..start + n], "step {step}: read back other bytes");
    }

    fn memset(&mut self, step: usize) {
        let Some((i, start, n)) = self.range() else { return };
        let value = self.rng.next() as u8;
        let b = &mut self.buffers[i];
        let r = call!(self.api.memset, b.ptr + start as u64, value, n);
        assert_eq!(r, SUCCESS, "step {step}: memset");
        b.bytes[start..start + n].fill(value);
    }

    /// `vector_add` over three of the thread's buffers (as f32s), on a stream of its own
    /// or the default one; the model adds the floats.
    fn launch(&mut self, step: usize) {
        if self.buffers.len() < 3 {
            return self.alloc();
        }
        let pick: Vec<usize> = (0..3).map(|_| self.rng.below(self.buffers.len())).collect();
        let n = pick.iter().map(|&i| self.buffers[i].bytes.len() / 4).min().unwrap_or(0);
        let [x, y, z] = [pick[0], pick[1], pick[2]];
        if n == 0 || z == x || z == y {
            return;
        }
        // Finite inputs: a NaN sum's payload is the device's choice (PTX ISA 9.2 §9.7.3).
        for i in [x, y] {
            let floats: Vec<u8> = (0..n)
                .flat_map(|_| ((self.rng.next() % 2001) as f32 * 0.25 - 250.0).to_le_bytes())
                .collect();
            let b = &mut self.buffers[i];
            let r = call!(self.api.to_device, b.ptr, floats.as_ptr().cast(), 4 * n);
            assert_eq!(r, SUCCESS, "step {step}: inputs");
            b.bytes[..4 * n].copy_from_slice(&floats);
        }
        let (px, py, pz, count) =
            (self.buffers[x].ptr, self.buffers[y].ptr, self.buffers[z].ptr, n as u32);
        let mut params = [arg(&px), arg(&py), arg(&pz), arg(&count)];
        let stream = self.stream_or_default();
        let grid = (n as u32).div_ceil(64);
        let null = std::ptr::null_mut();
        let a = self.api;
        let r = call!(
            a.launch,
            self.vector_add,
            grid,
            1,
            1,
            64,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            null
        );
        assert_eq!(r, SUCCESS, "step {step}: launch");
        let f32s = |b: &Buffer, i: usize| {
            f32::from_le_bytes(b.bytes[4 * i..4 * i + 4].try_into().unwrap_or_default())
        };
        for i in 0..n {
            let sum = f32s(&self.buffers[x], i) + f32s(&self.buffers[y], i);
            self.buffers[z].bytes[4 * i..4 * i + 4].copy_from_slice(&sum.to_le_bytes());
        }
        // A later read on the default stream of a legacy context waits for it.
        assert_eq!(call!(a.stream_sync, stream), SUCCESS, "step {step}: sync");
    }

    fn stream_or_default(&mut self) -> usize {
        match self.streams.len() {
            0 => 0,
            n => self.streams[self.rng.below(n)],
        }
    }

    /// Creates a stream, or reads through one asynchronously and destroys it (with the
    /// copy still in flight half the time).
    fn stream(&mut self, step: usize) {
        let a = self.api;
        if self.streams.len() < 3 || self.rng.below(2) == 0 {
            let mut s = 0;
            assert_eq!(call!(a.stream_create, &mut s, 0), SUCCESS, "step {step}");
            return self.streams.push(s);
        }
        let s = self.streams.swap_remove(self.rng.below(self.streams.len()));
        if let Some((i, start, n)) = self.range() {
            let mut got = vec![0u8; n];
            let b = &self.buffers[i];
            let src = b.ptr + start as u64;
            let r = call!(a.to_host_async, got.as_mut_ptr().cast(), src, n, s);
            assert_eq!(r, SUCCESS, "step {step}: async read");
            if self.rng.below(2) == 0 {
                assert_eq!(call!(a.stream_destroy, s), SUCCESS, "step {step}: destroy");
                // Destroying a stream lets its work finish (CUDA: "the resources are
                // released once the device has completed all work in the stream").
                assert_eq!(call!(a.ctx_sync), SUCCESS, "step {step}: ctx sync");
            } else {
                assert_eq!(call!(a.stream_sync, s), SUCCESS, "step {step}: sync");
                assert_eq!(call!(a.stream_destroy, s), SUCCESS, "step {step}: destroy");
            }
            assert!(got == b.bytes[start..start + n], "step {step}: async read back");
        } else {
            assert_eq!(call!(a.stream_destroy, s), SUCCESS, "step {step}: destroy");
        }
    }

    fn event(&mut self, step: usize) {
        let a = self.api;
        if self.events.is_empty() || self.rng.below(3) == 0 {
            let mut e = 0;
            assert_eq!(call!(a.event_create, &mut e, 0), SUCCESS, "step {step}");
            return self.events.push(e);
        }
        let e = self.events[self.rng.below(self.events.len())];
        let s = self.stream_or_default();
        assert_eq!(call!(a.event_record, e, s), SUCCESS, "step {step}: record");
        assert_eq!(call!(a.event_sync, e), SUCCESS, "step {step}: event sync");
        if self.rng.below(2) == 0 {
            let e = self.events.swap_remove(self.events.iter().position(|&x| x == e).unwrap_or(0));
            assert_eq!(call!(a.event_destroy, e), SUCCESS, "step {step}: destroy");
        }
    }

    /// Copies, memsets and frees at addresses no allocation has, and past the end of
    /// real ones.
    fn bad_pointer(&mut self, step: usize) {
        let a = self.api;
        let nowhere = NOWHERE + (self.rng.next() & 0xffff_ff00);
        let mut host = [0u8; 64];
        let r = call!(a.to_host, host.as_mut_ptr().cast(), nowhere, 64);
        assert_eq!(r, INVALID_VALUE, "step {step}: read from nowhere");
        let r = call!(a.to_device, nowhere, host.as_ptr().cast(), 64);
        assert_eq!(r, INVALID_VALUE, "step {step}: write to nowhere");
        assert_eq!(call!(a.memset, nowhere, 7, 64), INVALID_VALUE, "step {step}");
        assert_eq!(call!(a.free, nowhere), INVALID_VALUE, "step {step}: free nowhere");
        if let Some((i, _, _)) = self.range() {
            // One byte past the end.
            let b = &self.buffers[i];
            let len = b.bytes.len();
            let mut big = vec![0u8; len + 1];
            let r = call!(a.to_host, big.as_mut_ptr().cast(), b.ptr, len + 1);
            assert_eq!(r, INVALID_VALUE, "step {step}: read past the end");
            let r = call!(a.memset, b.ptr, 0, len + 1);
            assert_eq!(r, INVALID_VALUE, "step {step}: memset past the end");
            // Freeing the inside of an allocation is no free.
            if len > 1 {
                assert_eq!(call!(a.free, b.ptr + 1), INVALID_VALUE, "step {step}");
            }
        }
    }

    fn bad_handle(&mut self, step: usize) {
        let a = self.api;
        let h = bogus_handle(&mut self.rng);
        assert_eq!(call!(a.stream_sync, h), INVALID_HANDLE, "step {step}: sync {h:#x}");
        assert_eq!(call!(a.stream_destroy, h), INVALID_HANDLE, "step {step}");
        assert_eq!(call!(a.event_sync, h), INVALID_HANDLE, "step {step}");
        assert_eq!(call!(a.event_record, h, 0), INVALID_HANDLE, "step {step}");
        assert_eq!(call!(a.event_destroy, h), INVALID_HANDLE, "step {step}");
        let mut f = 0;
        let r = call!(a.get_function, &mut f, h, c"vector_add".as_ptr());
        assert_eq!(r, INVALID_HANDLE, "step {step}: function of no module");
        let null = std::ptr::null_mut();
        let r = call!(a.launch, h, 1, 1, 1, 1, 1, 1, 0, 0, null, null);
        assert_eq!(r, INVALID_HANDLE, "step {step}: launch of no function");
        // A real event recorded on no stream.
        if let Some(&e) = self.events.first() {
            assert_eq!(call!(a.event_record, e, h), INVALID_HANDLE, "step {step}");
        }
    }

    /// Launches CUDA refuses: no parameters, an empty grid, too many threads, more shared
    /// memory than a block has.
    fn bad_launch(&mut self, step: usize) {
        let a = self.api;
        let f = self.vector_add;
        let null = std::ptr::null_mut();
        let (p, n) = (0u64, 0u32);
        let mut params = [arg(&p), arg(&p), arg(&p), arg(&n)];
        let cases: [(&str, [c_uint; 6], c_uint, bool); 4] = [
            ("no parameters", [1, 1, 1, 64, 1, 1], 0, false),
            ("an empty grid", [0, 1, 1, 64, 1, 1], 0, true),
            ("2,048 threads", [1, 1, 1, 2048, 1, 1], 0, true),
            ("1 MiB of shared memory", [1, 1, 1, 64, 1, 1], 1 << 20, true),
        ];
        let (what, [gx, gy, gz, bx, by, bz], shared, with_params) = cases[self.rng.below(4)];
        let kp = if with_params { params.as_mut_ptr() } else { null };
        let r = call!(a.launch, f, gx, gy, gz, bx, by, bz, shared, 0, kp, null);
        assert_eq!(r, INVALID_VALUE, "step {step}: launch with {what}");
    }

    /// Frees what is left, with work still queued on the streams.
    fn clean_up(&mut self) {
        let a = self.api;
        for s in self.streams.drain(..) {
            assert_eq!(call!(a.stream_destroy, s), SUCCESS);
        }
        for e in self.events.drain(..) {
            assert_eq!(call!(a.event_destroy, e), SUCCESS);
        }
        assert_eq!(call!(a.ctx_sync), SUCCESS);
        for b in self.buffers.drain(..) {
            assert_eq!(call!(a.free, b.ptr), SUCCESS);
        }
    }
}

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
                actor.run(ops);
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
    actor.run(50);
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
