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
//!   set aside for launches), one [`LaunchInst::ParameterBuffer`];
//! * `cudaLaunchDevice(func, buffer, gridDim, blockDim, sharedMem, stream)` and
//!   `cudaLaunchDeviceV2(buffer, stream)`: record the launch; a `cudaError_t`; one
//!   [`LaunchInst::Launch`] (`pass::expand_system` writes both out);
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
    Address, CmpOp, Inst, InstKind, LaunchConfig, LaunchInst, OpTy, RegId, RegTy, Space, Value,
};

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

    /// Marks the kernel as one that launches (its launch targets).
    fn mark_launches(&mut self) {
        if self.kernel.device_launches.is_empty() {
            self.kernel.device_launches =
                self.device_runtime.kernels.iter().map(|k| k.to_string()).collect();
            // An empty table still needs the flag: a placeholder no address reaches.
            if self.kernel.device_launches.is_empty() {
                self.kernel.device_launches.push(String::new());
            }
        }
    }

    /// Pushes launch operation `op`.
    fn launch_op(&mut self, op: LaunchInst, span: Span) {
        self.push(InstKind::DeviceLaunch(Box::new(op)), span);
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
    ) -> Result<LaunchConfig, Diagnostic> {
        let grid = self.param_dims(&grid_block_shared[0])?;
        let block = self.param_dims(&grid_block_shared[1])?;
        let shared = self.param_value(&grid_block_shared[2], U32)?;
        Ok(LaunchConfig { func, grid, block, shared })
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
        let (space, srcs, addr) =
            (Space::Generic, vec![v], Address { base: Some(base), offset: 0 });
        self.push(InstKind::Store { space, ty, srcs, addr }, span);
        Ok(())
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

    /// A parameter buffer of `size` bytes aligned to `align` from the arena, with
    /// `config` in its header when given (V2): its address, or 0 (and the last error
    /// set) when the arena is exhausted.
    fn parameter_buffer(
        &mut self,
        align: Value,
        size: Value,
        config: Option<LaunchConfig>,
        span: Span,
    ) -> Value {
        self.mark_launches();
        let last_error = self.last_error(span);
        let dst = self.temp(RegTy::Int(64), span);
        self.launch_op(LaunchInst::ParameterBuffer { dst, last_error, align, size, config }, span);
        Value::Reg(dst)
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
        config: Option<LaunchConfig>,
        stream: Value,
        span: Span,
    ) -> Value {
        self.mark_launches();
        let last_error = self.last_error(span);
        let dst = self.temp(RegTy::Int(32), span);
        self.launch_op(LaunchInst::Launch { dst, last_error, buffer, stream, config }, span);
        Value::Reg(dst)
    }
}
