//! The public error type of the ptxvk API.

use ptxvk_frontend::Diagnostics;

/// Everything that can go wrong between PTX text and a finished launch.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The PTX was rejected; `rendered` holds the diagnostics as `file:line:column` with
    /// carets, ready to print.
    #[error("{rendered}")]
    Ptx { diagnostics: Diagnostics, rendered: String },
    /// A ptxvk bug found while compiling (an IR verifier or structurizer failure, a
    /// broken invariant): never a fault of the PTX. `rendered` names the construct, as
    /// `file:line:column` with a caret.
    #[error("{rendered}")]
    Internal { diagnostics: Diagnostics, rendered: String },
    /// Code generation failed: a ptxvk bug, or SPIRV-Tools missing
    /// ([`ptxvk_spirv::Error::is_internal`] tells which).
    #[error(transparent)]
    Backend(#[from] ptxvk_spirv::Error),
    /// The Vulkan device or driver failed, or a launch exceeded its limits.
    #[error(transparent)]
    Runtime(ptxvk_vk::Error),
    /// NVIDIA's CUDA driver (`ptxvk compare --cuda`) is missing, is ptxvk's own, or
    /// failed.
    #[error(transparent)]
    NativeCuda(#[from] ptxvk_native_cuda::CudaError),
    /// A setting (an environment variable such as `PTXVK_FLOAT`) has a value ptxvk does
    /// not know.
    #[error("{0}")]
    Config(String),
    /// The module has no kernel of that name.
    #[error("no kernel named `{name}`; the module has: {}", if available.is_empty() { "none".to_string() } else { available.join(", ") })]
    NoSuchKernel { name: String, available: Vec<String> },
    /// The module has several kernels and the launch did not say which.
    #[error("the module has {} kernels ({}); name one with --entry (or \"entry\" in a launch spec)", available.len(), available.join(", "))]
    KernelNotNamed { available: Vec<String> },
    /// A launch request that does not fit the kernel (wrong argument count or sizes,
    /// unknown kernel, block size outside `.reqntid`/`.maxntid`).
    #[error("{0}")]
    Launch(String),
    /// A thread executed `trap` or failed an `assert`: `message` says which kernel and
    /// thread (and the assertion, file and line); `output` is the launch's printf
    /// output up to then.
    #[error("{message}")]
    KernelFailed { message: String, output: String },
    /// A checked launch (`PTXVK_CHECK`, `ptxvk run --check`) refused accesses outside
    /// what it may access, or misaligned ones, which did not happen; or, under racecheck
    /// and initcheck, made shared-memory races or reads of unwritten device memory, which
    /// did: `report` lists them (its text in compute-sanitizer's style); `output` is the
    /// launch's printf output.
    #[error("{}", report.text)]
    CheckFailed { report: Box<crate::check::CheckReport>, output: String },
    /// The device's driver computes wrongly what the launch needs, as a probe found
    /// when the device opened (`ptxvk devices` lists them), and ptxvk has no exact way
    /// around it: the message names the bug and how to get a fixed driver.
    #[error("{0}")]
    DriverBug(String),
}

impl From<ptxvk_vk::Error> for Error {
    /// Runtime errors, except that an error of this crate that a stream deferred (a failed
    /// `assert` of an asynchronous launch) comes back as itself.
    fn from(e: ptxvk_vk::Error) -> Error {
        match e {
            ptxvk_vk::Error::Deferred(inner) => match inner.downcast::<Error>() {
                Ok(own) => *own,
                Err(other) => Error::Runtime(ptxvk_vk::Error::Deferred(other)),
            },
            e => Error::Runtime(e),
        }
    }
}

impl Error {
    /// The CLI exit code for this error (README, *Command line*): 1 for rejected PTX, 2
    /// for a missing or unknown kernel name, 3 for device and runtime errors (launch
    /// mismatches included), 4 for internal compiler errors (ptxvk bugs).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Ptx { .. } | Error::Backend(ptxvk_spirv::Error::NoKernels) => 1,
            Error::NoSuchKernel { .. } | Error::KernelNotNamed { .. } | Error::Config(_) => 2,
            _ if self.is_internal() => 4,
            _ => 3,
        }
    }

    /// Whether this is a ptxvk bug rather than a fault of the input or the device.
    pub fn is_internal(&self) -> bool {
        match self {
            Error::Internal { .. } => true,
            Error::Backend(e) => e.is_internal(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptxvk_frontend::{Diagnostic, Span};

    #[test]
    fn internal_compiler_errors_exit_with_4_and_are_not_rejected_ptx() {
        let bug = Diagnostic::internal(Span::new(0, 1), "IR verifier: register out of range");
        let internal = Error::Internal { diagnostics: bug.into(), rendered: String::new() };
        assert_eq!((internal.exit_code(), internal.is_internal()), (4, true));
        let rejected = Error::Ptx {
            diagnostics: Diagnostic::error(Span::new(0, 1), "unknown instruction").into(),
            rendered: String::new(),
        };
        assert_eq!((rejected.exit_code(), rejected.is_internal()), (1, false));
        let backend = Error::Backend(ptxvk_spirv::Error::Invalid("bad id".into()));
        assert_eq!(backend.exit_code(), 4);
        let tool = Error::Backend(ptxvk_spirv::Error::Tool("spirv-val missing".into()));
        assert_eq!(tool.exit_code(), 3);
        assert_eq!(Error::Backend(ptxvk_spirv::Error::NoKernels).exit_code(), 1);
    }
}
