//! Pass: the calls of functions CUDA provides ([`SystemInst::Call`]: `vprintf`,
//! `__assertfail`, `malloc`, `free`, cooperative groups' grid barrier, the device
//! runtime's launches, last error, streams and device) become what they do, as
//! [`SystemInst`]'s module doc specifies: the loads of the arguments they read from the
//! caller's `.param` variables, their system or launch operation, and the store of
//! their result (CFG → CFG, inside blocks).
//!
//! The thread's last error (`cudaGetLastError`) is one register of the kernel, set to
//! `cudaSuccess` at its entry when a call uses it: after `pass::inline` every call is
//! the kernel's, so no function passes it on.
//!
//! Pre: CFG IR after `pass::inline`, whose calls semantic analysis resolved by name and
//! checked (`sema::system`). Post: no [`SystemInst::Call`] is left; each became its
//! operations, with its span, where it was. It runs before the other expansions, which
//! expand what it makes (`pass::expand_generic` the stores of `cudaStreamCreateWithFlags`
//! and `cudaGetDevice`, `pass::split_grid` the grid barrier, `pass::expand_system` the
//! system and launch operations).

use ptxvk_frontend::Diagnostic;

use super::expander;
use crate::build::Build;
use crate::device_launch as dl;
use crate::ir::{
    Address, CmpOp, Failure, Inst, InstKind, Kernel, LaunchConfig, LaunchInst, OpTy, RegId,
    RuntimeCall, RuntimeFn, Space, SystemInst, Value,
};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// What `cudaCGGetIntrinsicHandle` returns: an opaque nonzero grid handle (it only
/// names the grid).
const GRID_HANDLE: u64 = 1;

/// Whether `kind` is an instruction this pass expands (`pass::leftover`).
pub fn is_runtime_call(kind: &InstKind) -> bool {
    matches!(kind, InstKind::System(s) if matches!(**s, SystemInst::Call(_)))
}

/// Expands every call of `k` as the module doc says; one whose shape is wrong is an
/// internal error.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    let mut last_error = None;
    expander::each(k, is_runtime_call, |k, cur, span, kind| {
        let InstKind::System(s) = kind else { return Ok(cur) };
        if let Some(what) = s.malformed() {
            return Err(Diagnostic::internal(span, what));
        }
        let SystemInst::Call(call) = *s else { return Ok(cur) };
        let mut e = Expand { k, cur, span };
        e.call(&call, &mut last_error);
        Ok(e.cur)
    })
}

expander::expansion!(
    /// Builds the expansion of one call in block `cur`, with `span`.
    struct Expand
);

impl Expand<'_> {
    fn call(&mut self, c: &RuntimeCall, last_error: &mut Option<RegId>) {
        let arg = |k: usize| c.args[k];
        let result = match c.func {
            RuntimeFn::Vprintf => {
                let (format, arguments) = (self.load(arg(0), U64), self.load(arg(1), U64));
                self.system(SystemInst::Printf { format, arguments });
                Some((U32, Value::Imm(0)))
            }
            RuntimeFn::AssertFail => {
                let details = [(0, U64), (1, U64), (2, U32), (3, U64)];
                let details = details.iter().map(|&(k, ty)| self.load(arg(k), ty)).collect();
                self.system(SystemInst::Fail(Failure { status: sys::STATUS_ASSERT, details }));
                None
            }
            RuntimeFn::Malloc => {
                let size = self.load(arg(0), U64);
                let dst = self.temp(U64);
                self.system(SystemInst::Malloc { dst, size });
                Some((U64, Value::Reg(dst)))
            }
            RuntimeFn::Free => None,
            RuntimeFn::CgGetIntrinsicHandle => Some((U64, Value::Imm(GRID_HANDLE))),
            RuntimeFn::CgSynchronize => {
                self.system(SystemInst::GridSync);
                Some((U32, Value::Imm(0)))
            }
            RuntimeFn::GetParameterBuffer => {
                let (align, size) = (self.load(arg(0), U64), self.load(arg(1), U64));
                let ptr = self.parameter_buffer(align, size, None, last_error);
                Some((U64, ptr))
            }
            RuntimeFn::GetParameterBufferV2 { bytes } => {
                let func = self.load(arg(0), U64);
                let config = self.config(func, &c.args[1..4]);
                // The buffer holds the module's largest parameter block (the arena has
                // room for one per launch, `dl::slot_bytes`), aligned for any parameter.
                let (align, size) = (Value::Imm(u64::from(dl::SLOT_ALIGN)), u64::from(bytes));
                let ptr = self.parameter_buffer(align, Value::Imm(size), Some(config), last_error);
                Some((U64, ptr))
            }
            RuntimeFn::LaunchDevice => {
                let (func, buffer) = (self.load(arg(0), U64), self.load(arg(1), U64));
                let config = self.config(func, &c.args[2..5]);
                let stream = self.load(arg(5), U64);
                Some((U32, self.launch(buffer, Some(config), stream, last_error)))
            }
            RuntimeFn::LaunchDeviceV2 => {
                let (buffer, stream) = (self.load(arg(0), U64), self.load(arg(1), U64));
                Some((U32, self.launch(buffer, None, stream, last_error)))
            }
            RuntimeFn::GetLastError | RuntimeFn::PeekAtLastError => {
                let err = self.last_error(last_error);
                let value = self.temp(U32);
                self.mov(U32, value, Value::Reg(err));
                // `cudaGetLastError` also resets it to `cudaSuccess`; peeking does not.
                if c.func == RuntimeFn::GetLastError {
                    self.mov(U32, err, Value::Imm(0));
                }
                Some((U32, Value::Reg(value)))
            }
            RuntimeFn::StreamCreateWithFlags => {
                let (at, flags) = (self.load(arg(0), U64), self.load(arg(1), U32));
                self.store_generic(at, U64, Value::Imm(dl::STREAM_CREATED));
                let ok = self.cmp(CmpOp::Eq, U32, flags, Value::Imm(1));
                let invalid = Value::Imm(u64::from(dl::CUDA_ERROR_INVALID_VALUE));
                Some((U32, self.sel(U32, ok, Value::Imm(0), invalid)))
            }
            RuntimeFn::StreamDestroy => Some((U32, Value::Imm(0))),
            RuntimeFn::GetDevice => {
                let at = self.load(arg(0), U64);
                self.store_generic(at, U32, Value::Imm(0));
                Some((U32, Value::Imm(0)))
            }
        };
        if let (Some(addr), Some((ty, v))) = (c.result, result) {
            self.push(InstKind::Store { space: Space::Local, ty, srcs: vec![v], addr });
        }
    }

    fn system(&mut self, op: SystemInst) {
        self.push(InstKind::System(Box::new(op)));
    }

    /// The value of the caller's `.param` variable at `addr`.
    fn load(&mut self, addr: Address, ty: OpTy) -> Value {
        let r = self.temp(ty);
        self.push(InstKind::Load { space: Space::Local, ty, dsts: vec![Some(r)], addr });
        Value::Reg(r)
    }

    /// Stores `v` at the generic address `at`.
    fn store_generic(&mut self, at: Value, ty: OpTy, v: Value) {
        let base = self.temp(U64);
        self.mov(U64, base, at);
        let addr = Address { base: Some(base), offset: 0 };
        self.push(InstKind::Store { space: Space::Generic, ty, srcs: vec![v], addr });
    }

    /// A launch's configuration: `func`, then the grid and block `dim3`s (three u32 in a
    /// 12-byte `.param` array each) and the shared-memory size at `grid_block_shared`.
    fn config(&mut self, func: Value, grid_block_shared: &[Address]) -> LaunchConfig {
        let dims = |l: &mut Self, at: Address| {
            [0, 4, 8].map(|k| l.load(Address { offset: at.offset + k, ..at }, U32))
        };
        let grid = dims(self, grid_block_shared[0]);
        let block = dims(self, grid_block_shared[1]);
        let shared = self.load(grid_block_shared[2], U32);
        LaunchConfig { func, grid, block, shared }
    }

    /// The register holding the thread's last error, zeroed at the kernel's start.
    fn last_error(&mut self, last_error: &mut Option<RegId>) -> RegId {
        if let Some(r) = *last_error {
            return r;
        }
        let r = self.temp(U32);
        let init = InstKind::Mov { ty: U32, dst: r, src: Value::Imm(0) };
        let entry = self.k.entry.index();
        self.k.blocks[entry].insts.insert(0, Inst { kind: init, span: self.span });
        *last_error = Some(r);
        r
    }

    /// A parameter buffer of `size` bytes aligned to `align` from the arena, with
    /// `config` in its header when given (V2): its address, or 0.
    fn parameter_buffer(
        &mut self,
        align: Value,
        size: Value,
        config: Option<LaunchConfig>,
        last_error: &mut Option<RegId>,
    ) -> Value {
        let last_error = self.last_error(last_error);
        let dst = self.temp(U64);
        let op = LaunchInst::ParameterBuffer { dst, last_error, align, size, config };
        self.push(InstKind::DeviceLaunch(Box::new(op)));
        Value::Reg(dst)
    }

    /// Records the launch of `buffer` on `stream`: the `cudaError_t`.
    fn launch(
        &mut self,
        buffer: Value,
        config: Option<LaunchConfig>,
        stream: Value,
        last_error: &mut Option<RegId>,
    ) -> Value {
        let last_error = self.last_error(last_error);
        let dst = self.temp(U32);
        let op = LaunchInst::Launch { dst, last_error, buffer, stream, config };
        self.push(InstKind::DeviceLaunch(Box::new(op)));
        Value::Reg(dst)
    }
}
