//! The model of [`InstKind::System`](crate::ir::InstKind::System) before `pass::expand_system`, written from the
//! system area's layout (`crate::system`, ABI guide §4) rather than from the
//! expansion: a failure is recorded when the status word is still 0, with the thread
//! and the details at their fields; a printf record is appended at the reserved count
//! when it fits the capacity, with the argument buffer's bytes copied from the local
//! window (whole words, at most 256 bytes, none when the buffer is elsewhere); `malloc`
//! takes its rounded size from the heap's counter. One thread runs at a time, so every
//! read-modify-write is atomic.
//!
//! The device-side launches follow the launch arena's protocol (`crate::device_launch`):
//! parameter buffers taken from the data region with their header before them, the
//! checks of a launch in CUDA's order (the buffer's place, the kernel, the
//! configuration, the depth) and its slot in the table; the arena is the one a host
//! makes for a grid at depth 0 with [`ARENA_SLOTS`] slots.
//!
//! Not modelled ([`Error::Unsupported`]): the grid barrier and the grid workspace (the
//! interpreter runs one block after another, so no grid-wide barrier can complete;
//! `super::super::run` refuses kernels with one).

use ptxvk_frontend::Span;

use super::{Ctx, Error, Thread};
use crate::device_launch as dl;
use crate::ir::{
    Address, LaunchConfig, LaunchInst, RuntimeCall, RuntimeFn, Space, SystemInst, Value,
    LOCAL_WINDOW,
};
use crate::system as sys;

impl Thread<'_> {
    /// The system area's device address (after the parameter block, `crate::system`).
    fn system_area(cx: &Ctx<'_>) -> u64 {
        cx.param_base + u64::from(sys::offset(cx.k.abi.size))
    }

    /// Runs a system operation.
    pub(super) fn exec_system(
        &mut self,
        cx: &mut Ctx<'_>,
        s: &SystemInst,
        span: Span,
    ) -> Result<(), Error> {
        let area = Self::system_area(cx);
        match s {
            SystemInst::Fail(f) => {
                let details: Vec<u64> = f.details.iter().map(|v| self.get(*v)).collect();
                self.record_failure(cx, f.status, &details, span)
            }
            SystemInst::Printf { format, arguments } => {
                self.printf(cx, area, self.get(*format), self.get(*arguments), span)
            }
            SystemInst::Malloc { dst, size } => {
                let ptr = Self::malloc(cx, area, self.get(*size), span)?;
                self.set(cx.k, *dst, ptr);
                Ok(())
            }
            SystemInst::GridSync | SystemInst::GridWorkspace { .. } => {
                Err(Error::Unsupported { what: "grid-wide barriers".into(), span })
            }
            SystemInst::Call(c) => self.runtime_call(cx, area, c, span),
        }
    }

    /// `malloc(size)` on the heap's counter: the allocation, or 0.
    fn malloc(cx: &mut Ctx<'_>, area: u64, size: u64, span: Span) -> Result<u64, Error> {
        let heap = cx.memory.read(area + u64::from(sys::HEAP), 8, span)?;
        let room = sys::HEAP_BYTES - sys::HEAP_START;
        let rounded = size.wrapping_add(15) & !15;
        if rounded > room {
            return Ok(0);
        }
        let used = cx.memory.read(heap, 8, span)?;
        cx.memory.write(heap, 8, used.wrapping_add(rounded), span)?;
        Ok(if used <= room - rounded { heap + sys::HEAP_START + used } else { 0 })
    }

    /// A call of a function CUDA provides, as `crate::ir::SystemInst`'s module doc
    /// specifies it, over the models above. The device-side launches are modelled as
    /// their [`LaunchInst`]s after `pass::expand_runtime`, not as calls, so the
    /// thread's last error is `cudaSuccess` here.
    fn runtime_call(
        &mut self,
        cx: &mut Ctx<'_>,
        area: u64,
        c: &RuntimeCall,
        span: Span,
    ) -> Result<(), Error> {
        let sizes: &[u32] = match c.func {
            RuntimeFn::AssertFail => &[8, 8, 4, 8],
            RuntimeFn::StreamCreateWithFlags => &[8, 4],
            _ => &[8, 8],
        };
        let mut args = Vec::new();
        for (a, size) in c.args.iter().zip(sizes) {
            args.push(self.read(cx, Space::Local, self.address(Space::Local, a), *size, span)?);
        }
        let result = match c.func {
            RuntimeFn::Vprintf => {
                self.printf(cx, area, args[0], args[1], span)?;
                Some((0, 4))
            }
            RuntimeFn::AssertFail => {
                self.record_failure(cx, sys::STATUS_ASSERT, &args, span)?;
                None
            }
            RuntimeFn::Malloc => Some((Self::malloc(cx, area, args[0], span)?, 8)),
            RuntimeFn::Free => None,
            RuntimeFn::CgGetIntrinsicHandle => Some((1, 8)),
            RuntimeFn::GetLastError | RuntimeFn::PeekAtLastError | RuntimeFn::StreamDestroy => {
                Some((0, 4))
            }
            RuntimeFn::StreamCreateWithFlags => {
                self.write_generic(cx, args[0], 8, dl::STREAM_CREATED, span)?;
                let invalid = u64::from(dl::CUDA_ERROR_INVALID_VALUE);
                Some((if args[1] == 1 { 0 } else { invalid }, 4))
            }
            RuntimeFn::GetDevice => {
                self.write_generic(cx, args[0], 4, 0, span)?;
                Some((0, 4))
            }
            RuntimeFn::CgSynchronize => {
                return Err(Error::Unsupported { what: "grid-wide barriers".into(), span })
            }
            _ => {
                let what = "device-side launches before pass::expand_runtime".into();
                return Err(Error::Unsupported { what, span });
            }
        };
        if let (Some(at), Some((v, size))) = (c.result, result) {
            self.write(cx, Space::Local, self.address(Space::Local, &at), size, v, span)?;
        }
        Ok(())
    }

    /// Writes `v` (`size` bytes) at the generic address `at`.
    fn write_generic(
        &mut self,
        cx: &mut Ctx<'_>,
        at: u64,
        size: u32,
        v: u64,
        span: Span,
    ) -> Result<(), Error> {
        let (space, a) = self.place(Space::Generic, &Address { base: None, offset: at as i64 });
        self.write(cx, space, a, size, v, span)
    }

    /// `%ctaid` and `%tid`, six u32, at `at`.
    /// Fails the launch with `status` unless it failed first: the status, this thread's
    /// ids and the `details` (message, file, line, function) in the system area's
    /// fields (`crate::system`).
    pub(super) fn record_failure(
        &self,
        cx: &mut Ctx<'_>,
        status: u32,
        details: &[u64],
        span: Span,
    ) -> Result<(), Error> {
        let area = Self::system_area(cx);
        if cx.memory.read(area + u64::from(sys::STATUS), 4, span)? != 0 {
            return Ok(());
        }
        cx.memory.write(area + u64::from(sys::STATUS), 4, u64::from(status), span)?;
        self.write_thread(cx, area + u64::from(sys::THREAD), span)?;
        let fields = [(sys::MESSAGE, 8), (sys::FILE, 8), (sys::LINE, 4), (sys::FUNCTION, 8)];
        for (v, (at, size)) in details.iter().zip(fields) {
            cx.memory.write(area + u64::from(at), size, *v, span)?;
        }
        Ok(())
    }

    fn write_thread(&self, cx: &mut Ctx<'_>, at: u64, span: Span) -> Result<(), Error> {
        let ids = cx.ctaid.into_iter().chain(self.tid);
        for (i, id) in ids.enumerate() {
            cx.memory.write(at + 4 * i as u64, 4, u64::from(id), span)?;
        }
        Ok(())
    }

    /// Appends a printf record (`crate::system`'s layout).
    fn printf(
        &mut self,
        cx: &mut Ctx<'_>,
        area: u64,
        format: u64,
        arguments: u64,
        span: Span,
    ) -> Result<(), Error> {
        let local = arguments >> 32 == LOCAL_WINDOW >> 32;
        let offset = arguments & 0xffff_ffff;
        let window = u64::from(cx.k.local_bytes);
        let n = if local { window.saturating_sub(offset).min(256) } else { 0 };
        let missing = if local || arguments == 0 { 0 } else { u64::from(sys::ARGUMENTS_MISSING) };
        let size = u64::from(sys::RECORD_HEADER) + n.next_multiple_of(8);
        let used_at = area + u64::from(sys::PRINTF_USED);
        let start = cx.memory.read(used_at, 4, span)?;
        cx.memory.write(used_at, 4, start.wrapping_add(size) & 0xffff_ffff, span)?;
        if (start + size) & 0xffff_ffff > u64::from(sys::PRINTF_CAPACITY) {
            return Ok(());
        }
        let rec = area + u64::from(sys::HEADER) + start;
        cx.memory.write(rec, 4, size, span)?;
        cx.memory.write(rec + 4, 4, n | missing, span)?;
        cx.memory.write(rec + 8, 8, format, span)?;
        self.write_thread(cx, rec + 16, span)?;
        // The buffer a 32-bit word at a time, as many words as start below `n`.
        for k in (0..n).step_by(4) {
            let word = self.read(cx, Space::Local, (offset + k) & 0xffff_ffff, 4, span)?;
            cx.memory.write(rec + u64::from(sys::RECORD_HEADER) + k, 4, word, span)?;
        }
        Ok(())
    }
}

/// The printf records of a system area (`crate::system`'s layout) from its header on,
/// each with its bytes, in a canonical order: by thread (`%ctaid`, `%tid`), each
/// thread's in the order it wrote them, since the order between threads depends on
/// how they interleave.
pub(in crate::interp) fn printf_records(area: &[u8]) -> Vec<Vec<u8>> {
    let word = |at: usize| {
        area.get(at..at + 4).map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
    };
    let used = (word(sys::PRINTF_USED as usize) as usize).min(sys::PRINTF_CAPACITY as usize);
    let mut records = Vec::new();
    let mut at = sys::HEADER as usize;
    while at < sys::HEADER as usize + used {
        let size = word(at) as usize;
        let Some(bytes) = area.get(at..at + size) else { break };
        if size < sys::RECORD_HEADER as usize {
            break;
        }
        records.push(bytes.to_vec());
        at += size;
    }
    records.sort_by_key(|r| r[16..40].to_vec());
    records
}

/// The launch arena's slots in the interpreter: enough for one launch per thread of
/// the generated launches, so that which launch finds the arena full never depends on
/// how threads interleave.
pub(in crate::interp) const ARENA_SLOTS: u32 = 256;

/// The launches recorded in an arena (`crate::device_launch`'s layout, decoded as the
/// runtime decodes them) and the first [`PARAM_BYTES_SEEN`] bytes of each parameter
/// buffer, sorted (the slot order and the buffers' places depend on how threads
/// interleave); `Err` when a slot is malformed.
pub(in crate::interp) fn launch_records(
    arena: &[u8],
    kernels: usize,
) -> Result<Vec<Vec<u8>>, String> {
    let mut out: Vec<Vec<u8>> = dl::decode(arena, kernels)?
        .into_iter()
        .map(|r| {
            let mut b =
                format!("{} {:?} {:?} {} {} ", r.kernel, r.grid, r.block, r.shared_bytes, r.stream)
                    .into_bytes();
            let at = r.params_at as usize;
            b.extend(arena.get(at..(at + PARAM_BYTES_SEEN).min(arena.len())).unwrap_or_default());
            b
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Bytes of each recorded launch's parameter buffer [`launch_records`] reports.
const PARAM_BYTES_SEEN: usize = 64;

impl Thread<'_> {
    /// Runs a device-side launch operation (`crate::device_launch`'s protocol).
    pub(super) fn exec_launch(
        &mut self,
        cx: &mut Ctx<'_>,
        l: &LaunchInst,
        span: Span,
    ) -> Result<(), Error> {
        let area = Self::system_area(cx);
        let arena = cx.memory.read(area + u64::from(sys::LAUNCH_ARENA), 8, span)?;
        let field = |cx: &Ctx<'_>, at: u32| cx.memory.read(arena + u64::from(at), 4, span);
        let (start, end) = (field(cx, dl::DATA_START)?, field(cx, dl::DATA_END)?);
        match *l {
            LaunchInst::ParameterBuffer { dst, last_error, align, size, config } => {
                let (align, size) = (self.get(align), self.get(size));
                let a = if align <= 64 {
                    64
                } else if align <= 128 {
                    128
                } else {
                    256
                };
                let used = field(cx, dl::USED)?;
                let ok = align <= u64::from(dl::MAX_ALIGN)
                    && size <= u64::from(dl::MAX_PARAM_BYTES)
                    && used < end.wrapping_sub(start) & 0xffff_ffff;
                let need = if ok {
                    u64::from(dl::HEADER_BYTES) + size.next_multiple_of(64) + (a - 64)
                } else {
                    0
                };
                cx.memory.write(arena + u64::from(dl::USED), 4, used.wrapping_add(need), span)?;
                let fits = ok && used + need <= end.saturating_sub(start);
                let buffer =
                    arena + (start + used + u64::from(dl::HEADER_BYTES)).next_multiple_of(a);
                self.set(cx.k, dst, if fits { buffer } else { 0 });
                if !fits {
                    let full = dl::CUDA_ERROR_LAUNCH_PENDING_COUNT_EXCEEDED;
                    self.set(cx.k, last_error, u64::from(full));
                } else if let Some(c) = config {
                    self.write_config(cx, buffer - u64::from(dl::HEADER_BYTES), &c, span)?;
                }
                Ok(())
            }
            LaunchInst::Launch { dst, last_error, buffer, stream, config } => {
                let buffer = self.get(buffer);
                let off = buffer.wrapping_sub(arena);
                let err = if off >= start + u64::from(dl::HEADER_BYTES) && off < end {
                    let header = buffer - u64::from(dl::HEADER_BYTES);
                    self.launch(cx, arena, header, self.get(stream), config, span)?
                } else {
                    dl::CUDA_ERROR_INVALID_VALUE
                };
                self.set(cx.k, dst, u64::from(err));
                if err != 0 {
                    self.set(cx.k, last_error, u64::from(err));
                }
                Ok(())
            }
        }
    }

    /// The launch of the buffer whose header is at `header` (inside the arena): its
    /// `cudaError_t`.
    fn launch(
        &mut self,
        cx: &mut Ctx<'_>,
        arena: u64,
        header: u64,
        stream: u64,
        config: Option<LaunchConfig>,
        span: Span,
    ) -> Result<u32, Error> {
        let at = |off: u32| header + u64::from(off);
        let (func, grid, block, shared) = match config {
            Some(c) => {
                self.write_config(cx, header, &c, span)?;
                let dims = |d: [Value; 3]| d.map(|v| self.get(v) & 0xffff_ffff);
                (self.get(c.func), dims(c.grid), dims(c.block), self.get(c.shared))
            }
            None => {
                let dim = |cx: &Ctx<'_>, off: u32, k: u32| cx.memory.read(at(off + 4 * k), 4, span);
                let grid =
                    [dim(cx, dl::H_GRID, 0)?, dim(cx, dl::H_GRID, 1)?, dim(cx, dl::H_GRID, 2)?];
                let block =
                    [dim(cx, dl::H_BLOCK, 0)?, dim(cx, dl::H_BLOCK, 1)?, dim(cx, dl::H_BLOCK, 2)?];
                let func = cx.memory.read(at(dl::H_FUNC), 8, span)?;
                (func, grid, block, cx.memory.read(at(dl::H_SHARED), 4, span)?)
            }
        };
        let _ = shared;
        cx.memory.write(at(dl::H_STREAM), 8, stream, span)?;
        let kernels = cx.k.device_launches.iter().filter(|n| !n.is_empty()).count() as u64;
        let depth = cx.memory.read(arena + u64::from(dl::DEPTH), 4, span)?;
        // CUDA's limits: every dimension at least 1, grid x below 2^31, y and z at most
        // 65535; blocks of x, y ≤ 1024, z ≤ 64, at most 1024 threads.
        let limits = [i32::MAX as u64, 65_535, 65_535, 1024, 1024, 64];
        let dims = grid.iter().chain(&block);
        let in_limits = dims.zip(limits).all(|(&d, max)| (1..=max).contains(&d));
        let threads = block[0].wrapping_mul(block[1]).wrapping_mul(block[2]);
        if func.wrapping_sub(dl::KERNEL_WINDOW + 1) >= kernels {
            return Ok(dl::CUDA_ERROR_INVALID_DEVICE_FUNCTION);
        }
        if !in_limits || threads > 1024 {
            return Ok(dl::CUDA_ERROR_INVALID_CONFIGURATION);
        }
        if depth >= u64::from(dl::MAX_DEPTH) {
            return Ok(dl::CUDA_ERROR_LAUNCH_MAX_DEPTH_EXCEEDED);
        }
        let slot = cx.memory.read(arena + u64::from(dl::COUNT), 4, span)?;
        cx.memory.write(arena + u64::from(dl::COUNT), 4, slot + 1, span)?;
        if slot >= cx.memory.read(arena + u64::from(dl::ROOM), 4, span)? {
            return Ok(dl::CUDA_ERROR_LAUNCH_PENDING_COUNT_EXCEEDED);
        }
        cx.memory.write(arena + u64::from(dl::TABLE) + 4 * slot, 4, header - arena, span)?;
        Ok(dl::CUDA_SUCCESS)
    }

    /// A launch's configuration into the buffer header at `header`.
    fn write_config(
        &self,
        cx: &mut Ctx<'_>,
        header: u64,
        c: &LaunchConfig,
        span: Span,
    ) -> Result<(), Error> {
        cx.memory.write(header + u64::from(dl::H_FUNC), 8, self.get(c.func), span)?;
        cx.memory.write(header + u64::from(dl::H_SHARED), 4, self.get(c.shared), span)?;
        for k in 0..3 {
            let (g, b) = (c.grid[k as usize], c.block[k as usize]);
            cx.memory.write(header + u64::from(dl::H_GRID + 4 * k), 4, self.get(g), span)?;
            cx.memory.write(header + u64::from(dl::H_BLOCK + 4 * k), 4, self.get(b), span)?;
        }
        Ok(())
    }
}
