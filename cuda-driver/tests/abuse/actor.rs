//! The actor of the abuse test and the soak benchmark: one thread's seeded random
//! sequence of driver calls, valid and invalid, checked against a CPU model of what the
//! thread made (see `tests/abuse.rs`).

use std::ffi::{c_uint, c_void};

use super::common::*;
use libloading::Library;

pub(crate) const OUT_OF_MEMORY: R = 2;

/// A non-canonical x86-64 address (bits 47..63 differ): no allocation can have it.
pub(crate) const NOWHERE: u64 = 0x7ff0_0000_0000_0000;

/// Handles are multiples of 16 from 0x1000 (`src/handles.rs`): these are none.
pub(crate) fn bogus_handle(rng: &mut Rng) -> usize {
    0x1000 + 16 * (rng.next() as usize % 4096) + 8
}

/// xorshift64*: the seeded source of every decision.
pub(crate) struct Rng(u64);

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

pub(crate) type StreamCreate = unsafe extern "C" fn(*mut usize, c_uint) -> R;
pub(crate) type Handle = unsafe extern "C" fn(usize) -> R;
pub(crate) type Free = unsafe extern "C" fn(u64) -> R;
pub(crate) type Memset = unsafe extern "C" fn(u64, u8, usize) -> R;
pub(crate) type CopyAsync = unsafe extern "C" fn(*mut c_void, u64, usize, usize) -> R;
pub(crate) type EventCreate = unsafe extern "C" fn(*mut usize, c_uint) -> R;
pub(crate) type EventRecord = unsafe extern "C" fn(usize, usize) -> R;

/// The entry points the sequences call.
#[derive(Clone, Copy)]
pub(crate) struct Api {
    pub(crate) alloc: Alloc,
    pub(crate) free: Free,
    pub(crate) to_device: CopyToDevice,
    pub(crate) to_host: CopyToHost,
    pub(crate) to_host_async: CopyAsync,
    pub(crate) memset: Memset,
    pub(crate) load: Load,
    pub(crate) get_function: GetFunction,
    pub(crate) launch: Launch,
    pub(crate) stream_create: StreamCreate,
    pub(crate) stream_destroy: Handle,
    pub(crate) stream_sync: Handle,
    pub(crate) event_create: EventCreate,
    pub(crate) event_record: EventRecord,
    pub(crate) event_sync: Handle,
    pub(crate) event_destroy: Handle,
    pub(crate) ctx_sync: Synchronize,
    pub(crate) set_current: Handle,
}

impl Api {
    pub(crate) fn new(lib: &Library) -> Api {
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
pub(crate) struct Buffer {
    pub(crate) ptr: u64,
    pub(crate) bytes: Vec<u8>,
}

/// What one thread has made, and the model of it.
pub(crate) struct Actor {
    pub(crate) api: Api,
    pub(crate) rng: Rng,
    pub(crate) buffers: Vec<Buffer>,
    pub(crate) streams: Vec<usize>,
    pub(crate) events: Vec<usize>,
    pub(crate) vector_add: usize,
    /// Operations done, by kind, for the report.
    pub(crate) done: [u32; KINDS],
    /// Only valid calls (the soak benchmark): the first [`VALID_KINDS`] kinds.
    pub(crate) valid_only: bool,
    /// At most this many allocations at once: an allocation beyond it frees one
    /// instead, so that a long run keeps a constant footprint.
    pub(crate) max_buffers: usize,
}

/// The kinds of operation that make only valid calls (allocations, frees, copies,
/// memsets, launches, streams and events).
pub(crate) const VALID_KINDS: usize = 8;

pub(crate) const KINDS: usize = 12;
pub(crate) const KIND_NAMES: [&str; KINDS] = [
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
    pub(crate) fn new(api: Api, seed: u64, vector_add: usize) -> Actor {
        let rng = Rng(seed | 1);
        let (buffers, streams, events) = (Vec::new(), Vec::new(), Vec::new());
        let (valid_only, max_buffers) = (false, usize::MAX);
        Actor {
            api,
            rng,
            buffers,
            streams,
            events,
            vector_add,
            done: [0; KINDS],
            valid_only,
            max_buffers,
        }
    }

    /// Runs `count` random operations, checking each, and keeps what they made.
    pub(crate) fn steps(&mut self, count: usize) {
        let kinds = if self.valid_only { VALID_KINDS } else { KINDS };
        for step in 0..count {
            let kind = self.rng.below(kinds);
            self.step(kind, step);
            self.done[kind] += 1;
        }
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
        if self.buffers.len() >= self.max_buffers {
            let b = self.buffers.swap_remove(self.rng.below(self.buffers.len()));
            return assert_eq!(call!(a.free, b.ptr), SUCCESS, "free");
        }
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
    pub(crate) fn clean_up(&mut self) {
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
