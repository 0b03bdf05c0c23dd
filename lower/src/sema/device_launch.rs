//! CUDA's device runtime for launches (CUDA Programming Guide, "CUDA Dynamic
//! Parallelism", and its "Device-side Launch from PTX" section): the calls nvcc emits
//! for `kernel<<<grid, block, shared, stream>>>(…)` in device code and a few
//! companions, recorded in the grid's launch arena (`crate::device_launch`, which gives
//! the layout) for the runtime to run after the grid:
//!
//! * `cudaGetParameterBuffer(alignment, size)` and
//!   `cudaGetParameterBufferV2(func, gridDim, blockDim, sharedMem)`: a parameter buffer
//!   from the arena, or 0 when it is exhausted (the thread's last error is then
//!   `cudaErrorLaunchPendingCountExceeded`: CUDA's pending-launch limit is the memory
//!   set aside for launches);
//! * `cudaLaunchDevice(func, buffer, gridDim, blockDim, sharedMem, stream)` and
//!   `cudaLaunchDeviceV2(buffer, stream)`: record the launch; a `cudaError_t`;
//! * `cudaGetLastError`, `cudaPeekAtLastError`: the thread's last launch error;
//! * `cudaStreamCreateWithFlags`, `cudaStreamDestroy`: device streams, whose work runs
//!   after the grid in launch order like every other launch (CUDA orders work only
//!   within a stream, so one order serves all);
//! * `cudaGetDevice`: device 0.
//!
//! CUDA 12 nvcc names them `__cudaCDP2…`; the Programming Guide and CUDA 11 PTX use
//! the plain `cuda…` names, with the same parameters. `cudaDeviceSynchronize` in device
//! code was removed in CUDA 12 (a grid cannot wait for its children): it is rejected.
//!
//! A kernel's address (`mov.u64 %rd, kernel;`) is `device_launch::KERNEL_WINDOW` plus
//! one plus the kernel's index among the module's kernels in name order; a launch
//! checks it against that table and returns `cudaErrorInvalidDeviceFunction` for
//! anything else.

use ptxvk_frontend::ast::{self, Operand, ScalarType};
use ptxvk_frontend::{Diagnostic, Name, Span};

use super::expand::Emit;
use super::Lowerer;
use crate::abi::Layout as _;
use crate::build::Build;
use crate::device_launch as dl;
use crate::ir::{
    Address, BinaryOp, CmpOp, Inst, InstKind, OpTy, RegId, RegTy, Space, Terminator, Value,
};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// What the kernel being lowered knows of the device runtime.
#[derive(Clone, Debug, Default)]
pub(super) struct DeviceRuntime {
    /// The module's kernels (with bodies) in name order: the launch targets.
    kernels: Vec<Name>,
    /// Bytes of the largest parameter block among them: what a V2 buffer holds.
    max_params: u32,
    /// The thread's last error (`cudaGetLastError`), once the kernel has one.
    pub(super) last_error: Option<RegId>,
}

impl DeviceRuntime {
    /// The device runtime of a module with `kernels` (with bodies), whose parameter
    /// blocks have at most `max_params` bytes.
    pub(super) fn new(kernels: Vec<Name>, max_params: u32) -> DeviceRuntime {
        DeviceRuntime { kernels, max_params, last_error: None }
    }

    /// The address of kernel `name`, if the module has such a kernel.
    pub(super) fn kernel_address(&self, name: &str) -> Option<u64> {
        let i = self.kernels.iter().position(|k| k.as_str() == name)?;
        Some(dl::KERNEL_WINDOW + 1 + i as u64)
    }
}

/// Whether one of `functions` calls what uses the thread's last error.
fn any_uses_last_error(functions: &[&ast::Function]) -> bool {
    functions.iter().any(|f| {
        let mut names = std::collections::BTreeSet::new();
        super::names_used(f.body.as_deref().unwrap_or(&[]), &mut names);
        names.iter().any(|n| uses_last_error(n))
    })
}

/// Whether a call of `name` uses the thread's last error (`cudaGetLastError` and the
/// launches that set it).
fn uses_last_error(name: &str) -> bool {
    let short = name.strip_prefix("__cudaCDP2").or_else(|| name.strip_prefix("cuda"));
    matches!(
        short,
        Some(
            "GetLastError"
                | "PeekAtLastError"
                | "GetParameterBuffer"
                | "GetParameterBufferV2"
                | "LaunchDevice"
                | "LaunchDeviceV2"
        )
    )
}

/// Bytes of kernel `f`'s parameter block as `crate::abi` lays it out (0 where it
/// cannot, which lowering the kernel reports).
pub(super) fn param_bytes(f: &ast::Function) -> u32 {
    let params = f.params.iter().flat_map(|p| {
        let ty = p.ty.value.scalar().unwrap_or(ScalarType::U64);
        let align = p.align.as_ref().map(|a| a.value);
        p.names.iter().map(move |n| {
            let count: u64 = n.dims.iter().map(|d| d.unwrap_or(0)).product();
            let count = if n.dims.is_empty() { 1 } else { u32::try_from(count).unwrap_or(0) };
            (n.name.value.as_str(), ty, count, align)
        })
    });
    crate::abi::KernelAbi::layout(params).map_or(0, |a| a.size)
}

/// A launch's function, grid, block and dynamic shared size.
struct Config {
    func: Value,
    grid: [Value; 3],
    block: [Value; 3],
    shared: Value,
}

impl Lowerer<'_> {
    /// A call of the device runtime's function `name`, or `None` if `name` is none of
    /// those this module handles.
    pub(super) fn device_runtime_call(
        &mut self,
        callee: &ptxvk_frontend::Ident,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Option<Result<(), Diagnostic>> {
        let name = callee.value.as_str();
        let short = name.strip_prefix("__cudaCDP2").or_else(|| name.strip_prefix("cuda"))?;
        let arity = |n: usize, r: usize| args.len() == n && rets.len() <= r;
        let wrong = || {
            Err(Diagnostic::error(
                span,
                format!("`{name}` is called with the wrong number of arguments"),
            ))
        };
        Some(match short {
            "GetParameterBuffer" if arity(2, 1) => self.get_parameter_buffer(args, rets, span),
            "GetParameterBufferV2" if arity(4, 1) => self.get_parameter_buffer_v2(args, rets, span),
            "LaunchDevice" if arity(6, 1) => self.launch_device(args, rets, span),
            "LaunchDeviceV2" if arity(2, 1) => self.launch_device_v2(args, rets, span),
            "GetLastError" | "PeekAtLastError" if arity(0, 1) => {
                let err = self.last_error(span);
                let value = self.temp(RegTy::Int(32), span);
                let mut e = Emit { l: self, span };
                e.mov(U32, value, Value::Reg(err));
                // `cudaGetLastError` also resets it to `cudaSuccess`; peeking does not.
                if short == "GetLastError" {
                    e.mov(U32, err, Value::Imm(0));
                }
                self.return_value(rets, U32, Value::Reg(value), span)
            }
            "StreamCreateWithFlags" if arity(2, 1) => self.stream_create(args, rets, span),
            "StreamDestroy" if arity(1, 1) => self.return_value(rets, U32, Value::Imm(0), span),
            "GetDevice" if arity(1, 1) => self.param_value(&args[0], U64).and_then(|at| {
                self.store_generic(at, U32, Value::Imm(0), span)?;
                self.return_value(rets, U32, Value::Imm(0), span)
            }),
            "GetParameterBuffer"
            | "GetParameterBufferV2"
            | "LaunchDevice"
            | "LaunchDeviceV2"
            | "GetLastError"
            | "PeekAtLastError"
            | "StreamCreateWithFlags"
            | "StreamDestroy"
            | "GetDevice" => wrong(),
            // CUDA 12 removed device-side synchronization (CUDA Programming Guide, "CUDA
            // Dynamic Parallelism", CDP2): a grid cannot wait for its children.
            "DeviceSynchronize" | "DeviceSynchronizeDeprecationAvoidance" => {
                let what = if name == "cudaDeviceSynchronize" {
                    format!("`{name}`")
                } else {
                    format!("`{name}` (`cudaDeviceSynchronize`)")
                };
                Err(Diagnostic::error(
                    callee.span,
                    format!(
                        "{what} in device code was removed in CUDA 12: a grid cannot wait for \
                         the grids it launches"
                    ),
                )
                .with_note(
                    "launch the work that needs the children's results into \
                     `cudaStreamTailLaunch`: it runs after this grid and all its other \
                     launches have completed",
                ))
            }
            _ if name.starts_with("__cudaCDP2") => Err(Diagnostic::error(
                callee.span,
                format!("the device runtime's `{name}` is not supported"),
            )
            .with_note(
                "device code may launch kernels (`cudaGetParameterBuffer`, \
                 `cudaLaunchDevice` and their V2 forms), create and destroy streams and \
                 read the last error",
            )),
            _ => return None,
        })
    }

    /// `cudaStreamCreateWithFlags(&stream, flags)`. Device streams must be created
    /// with `cudaStreamNonBlocking` (1) (CUDA Programming Guide, "Streams" of the
    /// device runtime); the others are `cudaErrorInvalidValue`.
    fn stream_create(
        &mut self,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let at = self.param_value(&args[0], U64)?;
        let flags = self.param_value(&args[1], U32)?;
        self.store_generic(at, U64, Value::Imm(dl::STREAM_CREATED), span)?;
        let mut e = Emit { l: self, span };
        let ok = e.cmp(CmpOp::Eq, U32, flags, Value::Imm(1));
        let invalid = Value::Imm(u64::from(dl::CUDA_ERROR_INVALID_VALUE));
        let err = e.sel(U32, ok, Value::Imm(0), invalid);
        self.return_value(rets, U32, err, span)
    }

    /// When one of the kernel's `functions` uses the thread's last error, the kernel
    /// makes it now and passes it to them (`sema::calls`).
    pub(super) fn share_last_error(&mut self, functions: &[&ast::Function], span: Span) {
        self.body.shares_last_error = any_uses_last_error(functions);
        if self.body.shares_last_error {
            self.last_error(span);
        }
    }

    /// The register holding the thread's last error, zeroed at the kernel's start.
    fn last_error(&mut self, span: Span) -> RegId {
        if let Some(r) = self.device_runtime.last_error {
            return r;
        }
        let r = self.temp(RegTy::Int(32), span);
        let entry = self.kernel.entry.index();
        let init = InstKind::Mov { ty: U32, dst: r, src: Value::Imm(0) };
        self.kernel.blocks[entry].insts.insert(0, Inst { kind: init, span });
        self.device_runtime.last_error = Some(r);
        r
    }

    /// Marks the kernel as one that launches, and gives its launch arena's address.
    fn arena(&mut self, span: Span) -> RegId {
        if self.kernel.device_launches.is_empty() {
            self.kernel.device_launches =
                self.device_runtime.kernels.iter().map(|k| k.to_string()).collect();
            // An empty table still needs the flag: a placeholder no address reaches.
            if self.kernel.device_launches.is_empty() {
                self.kernel.device_launches.push(String::new());
            }
        }
        let area = self.system_area(span);
        let arena = self.temp(RegTy::Int(64), span);
        let addr = Address { base: Some(area), offset: i64::from(sys::LAUNCH_ARENA) };
        self.push(
            InstKind::Load { space: Space::Global, ty: U64, dsts: vec![Some(arena)], addr },
            span,
        );
        arena
    }

    /// Stores `v` in the `.param` result of the call, if it has one.
    fn return_value(
        &mut self,
        rets: &[Operand],
        ty: OpTy,
        v: Value,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if let Some(r) = rets.first() {
            let addr = self.param_slot(r)?;
            self.push(InstKind::Store { space: Space::Local, ty, srcs: vec![v], addr }, span);
        }
        Ok(())
    }

    /// A `dim3` argument: three u32 in a 12-byte `.param` array.
    fn param_dims(&mut self, op: &Operand) -> Result<[Value; 3], Diagnostic> {
        let base = self.param_slot(op)?;
        let mut out = [Value::Imm(0); 3];
        for (k, v) in out.iter_mut().enumerate() {
            let r = self.temp(RegTy::Int(32), op.span());
            let addr = Address { base: base.base, offset: base.offset + 4 * k as i64 };
            self.push(
                InstKind::Load { space: Space::Local, ty: U32, dsts: vec![Some(r)], addr },
                op.span(),
            );
            *v = Value::Reg(r);
        }
        Ok(out)
    }

    /// A launch's configuration: `func`, then the grid and block `dim3`s and the
    /// shared-memory size at `grid_block_shared[0..3]` (read in that order).
    fn param_config(
        &mut self,
        func: Value,
        grid_block_shared: &[Operand],
    ) -> Result<Config, Diagnostic> {
        let grid = self.param_dims(&grid_block_shared[0])?;
        let block = self.param_dims(&grid_block_shared[1])?;
        let shared = self.param_value(&grid_block_shared[2], U32)?;
        Ok(Config { func, grid, block, shared })
    }

    /// Stores `v` at the generic address `at`.
    fn store_generic(
        &mut self,
        at: Value,
        ty: OpTy,
        v: Value,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let base = self.temp(RegTy::Int(64), span);
        Emit { l: self, span }.mov(U64, base, at);
        self.dispatch_generic(Address { base: Some(base), offset: 0 }, span, |l, space, addr| {
            l.push(InstKind::Store { space, ty, srcs: vec![v], addr }, span);
            Ok(())
        })
    }

    /// Continues in a new block after branching on `cond` to `then` (made current by
    /// the caller) or `otherwise`.
    fn branch(&mut self, cond: RegId, otherwise: crate::ir::BlockId, span: Span) {
        let then = self.new_block(None, span);
        self.terminate(
            Terminator::Branch { cond, negate: false, if_true: then, if_false: otherwise },
            span,
        );
        self.cur = then;
        self.closed = false;
    }

    /// Continues at `block`, which the current block jumps to.
    fn continue_at(&mut self, block: crate::ir::BlockId, span: Span) {
        self.terminate(Terminator::Jump(block), span);
        self.cur = block;
        self.closed = false;
    }

    fn get_parameter_buffer(
        &mut self,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let align = self.param_value(&args[0], U64)?;
        let size = self.param_value(&args[1], U64)?;
        let ptr = self.parameter_buffer(align, size, None, span);
        self.return_value(rets, U64, ptr, span)
    }

    fn get_parameter_buffer_v2(
        &mut self,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let func = self.param_value(&args[0], U64)?;
        let config = self.param_config(func, &args[1..4])?;
        // V2 takes no size: the buffer holds the module's largest parameter block
        // (the arena has room for one per launch, `dl::slot_bytes`), aligned for any
        // parameter.
        let size = Value::Imm(u64::from(self.device_runtime.max_params.max(8)));
        let align = Value::Imm(u64::from(dl::SLOT_ALIGN));
        let ptr = self.parameter_buffer(align, size, Some(config), span);
        self.return_value(rets, U64, ptr, span)
    }

    /// Takes a parameter buffer of `size` bytes aligned to `align` from the arena (see
    /// `crate::device_launch`), writing `config` into its header when given (V2): its
    /// address, or 0 (and the last error set) when the arena is exhausted.
    fn parameter_buffer(
        &mut self,
        align: Value,
        size: Value,
        config: Option<Config>,
        span: Span,
    ) -> Value {
        let arena = self.arena(span);
        let last_error = self.last_error(span);
        let at = |offset: u32| Address { base: Some(arena), offset: i64::from(offset) };
        let load32 = |l: &mut Self, offset: u32| {
            let r = l.temp(RegTy::Int(32), span);
            let addr = at(offset);
            l.push(
                InstKind::Load { space: Space::Global, ty: U32, dsts: vec![Some(r)], addr },
                span,
            );
            Value::Reg(r)
        };
        let start = load32(self, dl::DATA_START);
        let end = load32(self, dl::DATA_END);
        // A plain read first: once the region is exhausted, later requests take
        // nothing, so the counter cannot wrap however many threads ask.
        let used_now = load32(self, dl::USED);
        let mut e = Emit { l: self, span };
        let slot = u64::from(dl::SLOT_ALIGN);
        let a128 = e.cmp(CmpOp::Le, U64, align, Value::Imm(128));
        let a = e.sel(U64, a128, Value::Imm(128), Value::Imm(u64::from(dl::MAX_ALIGN)));
        let a64 = e.cmp(CmpOp::Le, U64, align, Value::Imm(slot));
        let a = e.sel(U64, a64, Value::Imm(slot), a);
        let align_ok = e.cmp(CmpOp::Le, U64, align, Value::Imm(u64::from(dl::MAX_ALIGN)));
        let size_ok = e.cmp(CmpOp::Le, U64, size, Value::Imm(u64::from(dl::MAX_PARAM_BYTES)));
        let ok = e.pred_and(align_ok, size_ok);
        let span_now = e.bin(BinaryOp::Sub, U32, end, start);
        let room_left = e.cmp(CmpOp::Lt, U32, used_now, span_now);
        let ok = e.pred_and(ok, room_left);
        // need = HEADER + round_up(size, 64) + (a - 64), all small once `ok`.
        let size = e.sel(U64, ok, size, Value::Imm(0));
        let rounded = e.add(U64, size, Value::Imm(slot - 1));
        let rounded = e.and(U64, rounded, Value::Imm(!(slot - 1)));
        let pad = e.bin(BinaryOp::Sub, U64, a, Value::Imm(slot));
        let need = e.add(U64, rounded, pad);
        let need = e.add(U64, need, Value::Imm(u64::from(dl::HEADER_BYTES)));
        let need = e.lo32(need);
        let take = e.sel(U32, ok, need, Value::Imm(0));
        let old = e.atomic_add_global(U32, at(dl::USED), take);
        // It fits when old + need <= end - start (in 64 bits: no wrap).
        let old64 = e.cvt(U64, U32, Value::Reg(old));
        let need64 = e.cvt(U64, U32, need);
        let last = e.add(U64, old64, need64);
        let region = e.cvt(U64, U32, span_now);
        let inside = e.cmp(CmpOp::Le, U64, last, region);
        let fits = e.pred_and(ok, inside);
        // The buffer: round_up(start + old + HEADER, a); its header just before.
        let start64 = e.cvt(U64, U32, start);
        let off = e.add(U64, start64, old64);
        let off = e.add(U64, off, Value::Imm(u64::from(dl::HEADER_BYTES)));
        let mask = e.bin(BinaryOp::Sub, U64, a, Value::Imm(1));
        let off = e.add(U64, off, mask);
        let not_mask = e.not(U64, mask);
        let off = e.and(U64, off, not_mask);
        let buffer = e.add(U64, Value::Reg(arena), off);
        let ptr = e.sel(U64, fits, buffer, Value::Imm(0));
        let failed = dl::CUDA_ERROR_LAUNCH_PENDING_COUNT_EXCEEDED;
        let err = e.sel(U32, fits, Value::Reg(last_error), Value::Imm(u64::from(failed)));
        e.mov(U32, last_error, err);
        if let Some(config) = config {
            let header = self.temp(RegTy::Int(64), span);
            let mut e = Emit { l: self, span };
            let h = e.bin(BinaryOp::Sub, U64, ptr, Value::Imm(u64::from(dl::HEADER_BYTES)));
            e.mov(U64, header, h);
            let done = self.new_block(None, span);
            self.branch(fits, done, span);
            self.store_config(header, &config, span);
            self.continue_at(done, span);
        }
        ptr
    }

    /// Writes a launch's function, grid, block and shared size into the buffer header
    /// at `header`.
    fn store_config(&mut self, header: RegId, c: &Config, span: Span) {
        let at = |offset: u32| Address { base: Some(header), offset: i64::from(offset) };
        let mut stores = vec![(dl::H_FUNC, U64, c.func), (dl::H_SHARED, U32, c.shared)];
        for k in 0..3 {
            stores.push((dl::H_GRID + 4 * k as u32, U32, c.grid[k]));
            stores.push((dl::H_BLOCK + 4 * k as u32, U32, c.block[k]));
        }
        for (offset, ty, v) in stores {
            self.store_global(ty, at(offset), v, span);
        }
    }

    /// Reads a launch's configuration from the buffer header at `header` (V2).
    fn load_config(&mut self, header: RegId, span: Span) -> Config {
        let load = |l: &mut Self, offset: u32, ty: OpTy| {
            let r = l.temp(ty.storage(), span);
            let addr = Address { base: Some(header), offset: i64::from(offset) };
            l.push(InstKind::Load { space: Space::Global, ty, dsts: vec![Some(r)], addr }, span);
            Value::Reg(r)
        };
        let func = load(self, dl::H_FUNC, U64);
        let shared = load(self, dl::H_SHARED, U32);
        let grid = [0, 1, 2].map(|k| load(self, dl::H_GRID + 4 * k, U32));
        let block = [0, 1, 2].map(|k| load(self, dl::H_BLOCK + 4 * k, U32));
        Config { func, grid, block, shared }
    }

    fn launch_device(
        &mut self,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let func = self.param_value(&args[0], U64)?;
        let buffer = self.param_value(&args[1], U64)?;
        let config = self.param_config(func, &args[2..5])?;
        let stream = self.param_value(&args[5], U64)?;
        let err = self.launch(buffer, Some(config), stream, span);
        self.return_value(rets, U32, err, span)
    }

    fn launch_device_v2(
        &mut self,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let buffer = self.param_value(&args[0], U64)?;
        let stream = self.param_value(&args[1], U64)?;
        let err = self.launch(buffer, None, stream, span);
        self.return_value(rets, U32, err, span)
    }

    /// Records the launch of `buffer` (whose header has the configuration, or gets
    /// `config`) on `stream`: the `cudaError_t` (see `crate::device_launch`).
    fn launch(
        &mut self,
        buffer: Value,
        config: Option<Config>,
        stream: Value,
        span: Span,
    ) -> Value {
        let arena = self.arena(span);
        let last_error = self.last_error(span);
        let kernels = self.device_runtime.kernels.len() as u64;
        let at = |offset: u32| Address { base: Some(arena), offset: i64::from(offset) };
        let load32 = |l: &mut Self, offset: u32| {
            let r = l.temp(RegTy::Int(32), span);
            let addr = at(offset);
            l.push(
                InstKind::Load { space: Space::Global, ty: U32, dsts: vec![Some(r)], addr },
                span,
            );
            Value::Reg(r)
        };
        let start = load32(self, dl::DATA_START);
        let end = load32(self, dl::DATA_END);
        let err = self.temp(RegTy::Int(32), span);
        let header = self.temp(RegTy::Int(64), span);
        let mut e = Emit { l: self, span };
        e.mov(U32, err, Value::Imm(u64::from(dl::CUDA_ERROR_INVALID_VALUE)));
        // The buffer must be one of this grid's: header inside the data region.
        let off = e.bin(BinaryOp::Sub, U64, buffer, Value::Reg(arena));
        let start64 = e.cvt(U64, U32, start);
        let first = e.add(U64, start64, Value::Imm(u64::from(dl::HEADER_BYTES)));
        let end64 = e.cvt(U64, U32, end);
        let above = e.cmp(CmpOp::Ge, U64, off, first);
        let below = e.cmp(CmpOp::Lt, U64, off, end64);
        let valid = e.pred_and(above, below);
        let h = e.bin(BinaryOp::Sub, U64, buffer, Value::Imm(u64::from(dl::HEADER_BYTES)));
        e.mov(U64, header, h);
        let done = self.new_block(None, span);
        self.branch(valid, done, span);
        let c = match config {
            Some(c) => {
                self.store_config(header, &c, span);
                c
            }
            None => self.load_config(header, span),
        };
        let stream_at = Address { base: Some(header), offset: i64::from(dl::H_STREAM) };
        self.store_global(U64, stream_at, stream, span);
        let depth = load32(self, dl::DEPTH);
        let mut e = Emit { l: self, span };
        // The kernel: one of the module's (an address in the kernel window).
        let index = e.bin(BinaryOp::Sub, U64, c.func, Value::Imm(dl::KERNEL_WINDOW + 1));
        let func_ok = e.cmp(CmpOp::Lt, U64, index, Value::Imm(kernels));
        // CUDA's configuration rules: every dimension at least 1, grid x below 2^31,
        // y and z at most 65535, at most 1024 threads (x, y ≤ 1024, z ≤ 64).
        let mut cfg_ok = e.cmp(CmpOp::Ge, U32, c.grid[0], Value::Imm(1));
        let limits = [
            (c.grid[0], i32::MAX as u64),
            (c.grid[1], 65_535),
            (c.grid[2], 65_535),
            (c.block[0], 1024),
            (c.block[1], 1024),
            (c.block[2], 64),
        ];
        for (v, max) in limits {
            let lo = e.cmp(CmpOp::Ge, U32, v, Value::Imm(1));
            let hi = e.cmp(CmpOp::Le, U32, v, Value::Imm(max));
            cfg_ok = e.pred_and(cfg_ok, lo);
            cfg_ok = e.pred_and(cfg_ok, hi);
        }
        let threads = e.bin(BinaryOp::Mul, U32, c.block[0], c.block[1]);
        let threads = e.bin(BinaryOp::Mul, U32, threads, c.block[2]);
        let few = e.cmp(CmpOp::Le, U32, threads, Value::Imm(1024));
        let cfg_ok = e.pred_and(cfg_ok, few);
        let shallow = e.cmp(CmpOp::Lt, U32, depth, Value::Imm(u64::from(dl::MAX_DEPTH)));
        let code = |c: u32| Value::Imm(u64::from(c));
        let e1 = e.sel(U32, shallow, code(0), code(dl::CUDA_ERROR_LAUNCH_MAX_DEPTH_EXCEEDED));
        let e2 = e.sel(U32, cfg_ok, e1, code(dl::CUDA_ERROR_INVALID_CONFIGURATION));
        let e3 = e.sel(U32, func_ok, e2, code(dl::CUDA_ERROR_INVALID_DEVICE_FUNCTION));
        e.mov(U32, err, e3);
        let ok = e.cmp(CmpOp::Eq, U32, e3, Value::Imm(0));
        self.branch(ok, done, span);
        // Claim a slot; past the room the launch fails.
        let room = load32(self, dl::ROOM);
        let mut e = Emit { l: self, span };
        let slot = e.atomic_add_global(U32, at(dl::COUNT), Value::Imm(1));
        let fits = e.cmp(CmpOp::Lt, U32, Value::Reg(slot), room);
        let full = dl::CUDA_ERROR_LAUNCH_PENDING_COUNT_EXCEEDED;
        let code = e.sel(U32, fits, Value::Imm(0), Value::Imm(u64::from(full)));
        e.mov(U32, err, code);
        let slot64 = e.cvt(U64, U32, Value::Reg(slot));
        let entry = e.bin(BinaryOp::Mul, U64, slot64, Value::Imm(4));
        let entry = e.add(U64, entry, Value::Reg(arena));
        let entry_reg = e.temp(U64);
        e.mov(U64, entry_reg, entry);
        let header_off = e.bin(BinaryOp::Sub, U64, Value::Reg(header), Value::Reg(arena));
        let header_off = e.lo32(header_off);
        self.branch(fits, done, span);
        let table = Address { base: Some(entry_reg), offset: i64::from(dl::TABLE) };
        self.store_global(U32, table, header_off, span);
        self.continue_at(done, span);
        let mut e = Emit { l: self, span };
        let failed = e.cmp(CmpOp::Ne, U32, Value::Reg(err), Value::Imm(0));
        let last = e.sel(U32, failed, Value::Reg(err), Value::Reg(last_error));
        e.mov(U32, last_error, last);
        Value::Reg(err)
    }
}
