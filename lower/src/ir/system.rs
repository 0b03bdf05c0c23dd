//! CUDA's system calls, failures and device-side launches in the CFG IR before
//! `pass::expand_system` ([`crate::ir::InstKind::System`] and
//! [`crate::ir::InstKind::DeviceLaunch`]), as semantic analysis resolves them: values,
//! nothing that refers to the AST. The layouts they write are the ABI's
//! ([`crate::system`], the system area; [`crate::device_launch`], the launch arena).
//!
//! # Specification
//!
//! [`SystemInst::Fail`] makes [`Failure::status`] the launch's failure unless another
//! thread did first (a compare-and-swap of the system area's status word from 0); the
//! thread that did records itself (`%ctaid`, `%tid`) and the failure's details, as many
//! as given of: message (u64), file (u64), line (u32), function (u64) at their fields
//! of the area. The thread goes on: semantic analysis ends it after the operation
//! (`trap`, `__assertfail`, a stack, barrier or mbarrier failure all end the thread),
//! except after the grid barrier's time-out, which is written by the expansion.
//!
//! [`SystemInst::Printf`] is `vprintf(format, arguments)` (ABI guide §4): the thread
//! reserves a record of the area's printf region with an atomic add of its size and,
//! where the whole record fits in [`crate::system::PRINTF_CAPACITY`], writes the record
//! header (size, argument bytes, the format address, `%ctaid` and `%tid`) and copies
//! the argument buffer, a 32-bit word at a time: the bytes of the thread's local window
//! from the buffer on, up to [`crate::system::MAX_ARGUMENT_BYTES`] and the end of the
//! window ([`crate::ir::Kernel::local_bytes`], the whole window of the kernel: bytes past
//! the buffer are the thread's own local memory, and the host reads only what the
//! format needs); none, with
//! [`crate::system::ARGUMENTS_MISSING`] set, when the buffer is not in the local
//! window and not null. `vprintf`'s result (0) is semantic analysis's store.
//!
//! [`SystemInst::Malloc`] is `malloc(size)`: `size` (u64) rounded up to 16 bytes from
//! the module's bump-allocated heap (its counter is the heap's first u64, allocations
//! start at [`crate::system::HEAP_START`]); `dst` (u64) gets the address, or 0 when the
//! request is larger than the heap or passes its end (which takes the bytes anyway:
//! only the heap's unused tail is wasted). `free` does nothing, so it has no operation.
//!
//! [`SystemInst::GridSync`] is a **grid-wide barrier** (`cudaCGSynchronize`,
//! `this_grid().sync()`; CUDA Programming Guide, "Grid Synchronization"): every thread
//! of every block of the launch that has not exited reaches it before any goes on, and
//! the memory accesses before it are visible to every thread after it (at device
//! scope). It is a block barrier as well, and like CUDA's it must be reached by every
//! thread of a block that has not exited (block-uniform). It is kept as one operation
//! until `pass::split_grid`, which cuts the kernel into phases there ([`GridPhases`]),
//! the launch running one dispatch of the whole grid per phase, so that it holds for
//! grids of any size without any block waiting for another. CUDA 12's cooperative
//! groups inline their grid barrier on the grid workspace instead; `split_grid`
//! recognizes that one and makes it a `GridSync` first.
//!
//! [`SystemInst::GridWorkspace`] reads `%envreg2` (low) or `%envreg1` (high): a half of
//! the 64-bit address of the area's grid workspace ([`crate::system::GRID_WORKSPACE`]),
//! on which CUDA 12's cooperative-groups headers spin for their own grid barrier.
//!
//! [`LaunchInst`] is the device runtime's (CUDA Programming Guide, "CUDA Dynamic
//! Parallelism", "Device-side Launch from PTX"). Both read and write `last_error`, the
//! thread's last launch error (a 32-bit register of the kernel, `pass::expand_runtime`):
//!
//! * [`LaunchInst::ParameterBuffer`] (`cudaGetParameterBuffer[V2]`): `dst` (u64) gets a
//!   buffer of `size` bytes aligned to `align` (u64 values; 64, 128 or
//!   [`crate::device_launch::MAX_ALIGN`] as needed) taken from the launch arena with an
//!   atomic add of its data counter, with [`crate::device_launch::HEADER_BYTES`] of
//!   header before it, or 0 when the request is invalid or the arena exhausted
//!   (`last_error` then becomes `cudaErrorLaunchPendingCountExceeded`). With a
//!   [`LaunchConfig`] (V2) the configuration is written into the header.
//! * [`LaunchInst::Launch`] (`cudaLaunchDevice[V2]`): `dst` (u32) gets the
//!   `cudaError_t` of launching the buffer at `buffer` on `stream` (u64): invalid value
//!   unless its header is in the arena's data region; else the configuration (given,
//!   and then written into the header, or read from it) is checked: a kernel of the
//!   module (an address of the kernel window, [`crate::ir::Kernel::device_launches`]),
//!   CUDA's limits on grid and block, the nesting depth; then a slot of the launch
//!   table is claimed (atomic add) and the header's offset stored in it, or the pending
//!   count is exceeded. A failure becomes `last_error` too.
//!
//! [`SystemInst::Call`] is a call of a function the program declares but does not
//! define and CUDA provides ([`RuntimeFn`]: its system calls, ABI guide §4, and its
//! device runtime's), as semantic analysis resolves it by name: the local-window
//! addresses of the caller's `.param` variables that the function reads (its leading
//! arguments, [`RuntimeFn::reads`]) and of its result, if the call has one. It exists
//! only until `pass::expand_runtime`, which writes out what each function does in the
//! operations above and core ones: the arguments' loads, then
//!
//! * `vprintf`: a [`SystemInst::Printf`], and 0 as the result;
//! * `__assertfail(message, file, line, function, char_size)`: a [`SystemInst::Fail`]
//!   (semantic analysis ends the thread after the call);
//! * `malloc`: a [`SystemInst::Malloc`] and its result; `free` nothing (the heap is a
//!   bump allocator);
//! * `cudaCGGetIntrinsicHandle`: a nonzero grid handle; `cudaCGSynchronize`: a
//!   [`SystemInst::GridSync`] and `cudaSuccess`;
//! * `cudaGetParameterBuffer[V2]`, `cudaLaunchDevice[V2]`: their [`LaunchInst`] on the
//!   thread's last error, one register of the kernel that starts at `cudaSuccess`;
//!   `cudaGetLastError` reads and resets it, `cudaPeekAtLastError` reads it;
//! * `cudaStreamCreateWithFlags(&stream, flags)`: a created stream's handle stored at
//!   the generic address `stream`, `cudaSuccess` for `cudaStreamNonBlocking` (1) and
//!   `cudaErrorInvalidValue` otherwise (device streams must be non-blocking);
//!   `cudaStreamDestroy`: `cudaSuccess`; `cudaGetDevice(&device)`: device 0 stored at
//!   `device`, `cudaSuccess`.

use super::{Address, RegId, Value};

/// A system call or failure.
#[derive(Clone, Debug, PartialEq)]
pub enum SystemInst {
    /// Records the launch's failure (module doc); the thread goes on.
    Fail(Failure),
    /// `vprintf(format, arguments)`: two u64 values.
    Printf { format: Value, arguments: Value },
    /// `malloc(size)`: `dst` (u64) gets the allocation; `size` is u64.
    Malloc { dst: RegId, size: Value },
    /// A grid-wide barrier.
    GridSync,
    /// `dst` (u32) gets the high (`%envreg1`) or low (`%envreg2`) half of the grid
    /// workspace's address.
    GridWorkspace { dst: RegId, high: bool },
    /// A call of a function CUDA provides (module doc).
    Call(RuntimeCall),
}

/// A call of a function CUDA provides: the local-window addresses of the arguments it
/// reads and of its result.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeCall {
    pub func: RuntimeFn,
    pub args: Vec<Address>,
    pub result: Option<Address>,
}

/// A function CUDA provides to device code (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeFn {
    Vprintf,
    AssertFail,
    Malloc,
    Free,
    CgGetIntrinsicHandle,
    CgSynchronize,
    GetParameterBuffer,
    /// Its buffer holds `bytes`, the module's largest parameter block (at least 8).
    GetParameterBufferV2 {
        bytes: u32,
    },
    LaunchDevice,
    LaunchDeviceV2,
    GetLastError,
    PeekAtLastError,
    StreamCreateWithFlags,
    StreamDestroy,
    GetDevice,
}

/// How many results a call of a [`RuntimeFn`] has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallResults {
    None,
    One,
    /// None or one (a `cudaError_t` or an `int` the caller may ignore).
    Optional,
}

/// Each function: its name (the device runtime's without its `cuda` or CUDA 12's
/// `__cudaCDP2` prefix), its arguments, its results and how many leading arguments it
/// reads.
const FUNCTIONS: &[(&str, RuntimeFn, usize, CallResults, usize)] = &[
    ("vprintf", RuntimeFn::Vprintf, 2, CallResults::Optional, 2),
    ("__assertfail", RuntimeFn::AssertFail, 5, CallResults::None, 4),
    ("malloc", RuntimeFn::Malloc, 1, CallResults::One, 1),
    ("free", RuntimeFn::Free, 1, CallResults::None, 0),
    ("cudaCGGetIntrinsicHandle", RuntimeFn::CgGetIntrinsicHandle, 1, CallResults::One, 0),
    ("cudaCGSynchronize", RuntimeFn::CgSynchronize, 2, CallResults::Optional, 0),
    ("GetParameterBuffer", RuntimeFn::GetParameterBuffer, 2, CallResults::Optional, 2),
    (
        "GetParameterBufferV2",
        RuntimeFn::GetParameterBufferV2 { bytes: 0 },
        4,
        CallResults::Optional,
        4,
    ),
    ("LaunchDevice", RuntimeFn::LaunchDevice, 6, CallResults::Optional, 6),
    ("LaunchDeviceV2", RuntimeFn::LaunchDeviceV2, 2, CallResults::Optional, 2),
    ("GetLastError", RuntimeFn::GetLastError, 0, CallResults::Optional, 0),
    ("PeekAtLastError", RuntimeFn::PeekAtLastError, 0, CallResults::Optional, 0),
    ("StreamCreateWithFlags", RuntimeFn::StreamCreateWithFlags, 2, CallResults::Optional, 2),
    ("StreamDestroy", RuntimeFn::StreamDestroy, 1, CallResults::Optional, 0),
    ("GetDevice", RuntimeFn::GetDevice, 1, CallResults::Optional, 1),
];

impl RuntimeFn {
    fn entry(self) -> &'static (&'static str, RuntimeFn, usize, CallResults, usize) {
        let same = |f: &RuntimeFn| std::mem::discriminant(f) == std::mem::discriminant(&self);
        FUNCTIONS.iter().find(|e| same(&e.1)).unwrap_or(&FUNCTIONS[0])
    }

    /// The function called `name`, if CUDA provides one (the device runtime's with
    /// either prefix; a `GetParameterBufferV2`'s `bytes` are 0).
    pub fn named(name: &str) -> Option<RuntimeFn> {
        let short = name.strip_prefix("__cudaCDP2").or_else(|| name.strip_prefix("cuda"));
        FUNCTIONS.iter().find_map(|&(n, f, ..)| {
            let device_runtime = n.starts_with(|c: char| c.is_ascii_uppercase());
            let hit = if device_runtime { short == Some(n) } else { name == n };
            hit.then_some(f)
        })
    }

    /// Its name in the IR text format: CUDA's (the device runtime's with `cuda`).
    pub fn name(self) -> String {
        let n = self.entry().0;
        if n.starts_with(|c: char| c.is_ascii_uppercase()) {
            format!("cuda{n}")
        } else {
            n.to_string()
        }
    }

    /// Whether a call with `args` arguments and `results` results matches it.
    pub fn takes(self, args: usize, results: usize) -> bool {
        let (_, _, n, r, _) = *self.entry();
        args == n
            && match r {
                CallResults::None => results == 0,
                CallResults::One => results == 1,
                CallResults::Optional => results <= 1,
            }
    }

    /// How many of its leading arguments it reads.
    pub fn reads(self) -> usize {
        self.entry().4
    }

    /// Whether it is one of the device runtime's (`cuda…`/`__cudaCDP2…`).
    pub fn is_device_runtime(self) -> bool {
        self.entry().0.starts_with(|c: char| c.is_ascii_uppercase())
    }
}

/// How `pass::split_grid` cut a kernel into phases at its grid barriers: what the
/// runtime needs for the launch's grid save area (`ptxvk_abi::system::GridSave`) and
/// for how many phases it dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridPhases {
    /// Bytes of a thread's record (its live registers and local window), a multiple
    /// of 8.
    pub record_bytes: u32,
    /// The grid barriers in the kernel's code.
    pub barriers: u32,
    /// Whether a grid barrier is on a cycle of the CFG: then the number of phases is
    /// known only at run time, and the runtime dispatches until no thread is left
    /// suspended; otherwise `barriers + 1` phases always suffice.
    pub in_loop: bool,
}

/// A failure and what it records.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// One of `crate::system`'s `STATUS_*` codes.
    pub status: u32,
    /// At most four: message, file, line, function (module doc).
    pub details: Vec<Value>,
}

/// A launch's configuration: `func` (u64, a kernel's address), the grid and block
/// dimensions and the dynamic shared memory (u32 each).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaunchConfig {
    pub func: Value,
    pub grid: [Value; 3],
    pub block: [Value; 3],
    pub shared: Value,
}

/// A device-side launch operation (module doc).
#[derive(Clone, Debug, PartialEq)]
pub enum LaunchInst {
    ParameterBuffer {
        dst: RegId,
        last_error: RegId,
        align: Value,
        size: Value,
        config: Option<LaunchConfig>,
    },
    Launch {
        dst: RegId,
        last_error: RegId,
        buffer: Value,
        stream: Value,
        config: Option<LaunchConfig>,
    },
}

impl LaunchConfig {
    /// Its values with their widths in bits.
    pub fn values(&self) -> Vec<(Value, u32)> {
        let mut out = vec![(self.func, 64)];
        out.extend(self.grid.iter().chain(&self.block).map(|v| (*v, 32)));
        out.push((self.shared, 32));
        out
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        std::iter::once(&mut self.func)
            .chain(self.grid.iter_mut())
            .chain(self.block.iter_mut())
            .chain(std::iter::once(&mut self.shared))
    }
}

fn value_reg(v: &mut Value, f: &mut dyn FnMut(&mut RegId)) {
    if let Value::Reg(r) = v {
        f(r)
    }
}

impl SystemInst {
    /// Every register it names, for renaming (`pass::inline`).
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        match self {
            SystemInst::Fail(x) => x.details.iter_mut().for_each(|v| value_reg(v, f)),
            SystemInst::Printf { format, arguments } => {
                value_reg(format, f);
                value_reg(arguments, f);
            }
            SystemInst::Malloc { dst, size } => {
                f(dst);
                value_reg(size, f);
            }
            SystemInst::GridSync => {}
            SystemInst::GridWorkspace { dst, .. } => f(dst),
            SystemInst::Call(c) => c
                .args
                .iter_mut()
                .chain(&mut c.result)
                .for_each(|a| a.base.iter_mut().for_each(&mut *f)),
        }
    }

    /// The register it writes, with its width in bits.
    pub fn def(&self) -> Option<(RegId, u32)> {
        match self {
            SystemInst::Malloc { dst, .. } => Some((*dst, 64)),
            SystemInst::GridWorkspace { dst, .. } => Some((*dst, 32)),
            _ => None,
        }
    }

    /// The values it reads, with their widths in bits where they must have them (a
    /// failure's details are stored at their fields' widths, truncated as by a store).
    pub fn uses(&self) -> Vec<(Value, Option<u32>)> {
        match self {
            SystemInst::Fail(x) => x.details.iter().map(|v| (*v, None)).collect(),
            SystemInst::Printf { format, arguments } => {
                vec![(*format, Some(64)), (*arguments, Some(64))]
            }
            SystemInst::Malloc { size, .. } => vec![(*size, Some(64))],
            SystemInst::GridSync | SystemInst::GridWorkspace { .. } => Vec::new(),
            // Local-window offsets.
            SystemInst::Call(c) => {
                let bases = c.args.iter().chain(&c.result).filter_map(|a| a.base);
                bases.map(|r| (Value::Reg(r), Some(32))).collect()
            }
        }
    }

    /// What is wrong with its shape, if anything (`crate::verify`).
    pub fn malformed(&self) -> Option<&'static str> {
        match self {
            SystemInst::Fail(x) if x.details.len() > 4 => {
                Some("a failure with more than four details")
            }
            SystemInst::Fail(x) if x.status == 0 => Some("a failure of status 0"),
            SystemInst::Call(c)
                if c.args.len() != c.func.reads()
                    || !c.func.takes(c.func.entry().2, usize::from(c.result.is_some())) =>
            {
                Some("a call of a runtime function with other arguments or results than it has")
            }
            _ => None,
        }
    }
}

impl LaunchInst {
    /// Every register it names, for renaming (`pass::inline`).
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        let (dst, last_error, a, b, config) = match self {
            LaunchInst::ParameterBuffer { dst, last_error, align, size, config } => {
                (dst, last_error, align, size, config)
            }
            LaunchInst::Launch { dst, last_error, buffer, stream, config } => {
                (dst, last_error, buffer, stream, config)
            }
        };
        f(dst);
        f(last_error);
        value_reg(a, f);
        value_reg(b, f);
        if let Some(c) = config {
            c.values_mut().for_each(|v| value_reg(v, f));
        }
    }

    /// The registers it writes, with their widths in bits: the result, the last error.
    pub fn defs(&self) -> [(RegId, u32); 2] {
        match self {
            LaunchInst::ParameterBuffer { dst, last_error, .. } => [(*dst, 64), (*last_error, 32)],
            LaunchInst::Launch { dst, last_error, .. } => [(*dst, 32), (*last_error, 32)],
        }
    }

    /// The values it reads, with their widths in bits (the last error among them).
    pub fn uses(&self) -> Vec<(Value, u32)> {
        let (last_error, a, b, config) = match self {
            LaunchInst::ParameterBuffer { last_error, align, size, config, .. } => {
                (last_error, (*align, 64), (*size, 64), config)
            }
            LaunchInst::Launch { last_error, buffer, stream, config, .. } => {
                (last_error, (*buffer, 64), (*stream, 64), config)
            }
        };
        let mut out = vec![(Value::Reg(*last_error), 32), a, b];
        out.extend(config.iter().flat_map(LaunchConfig::values));
        out
    }
}
