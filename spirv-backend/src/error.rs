//! The backend's error: a ptxvk bug found while building or validating SPIR-V, a
//! missing tool, or a module without kernels, with the PTX span of the instruction
//! being emitted when known.

use ptxvk_frontend::Span;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("internal error in the SPIR-V backend: {0}")]
    Internal(String),
    #[error("internal error building SPIR-V: {0:?}")]
    Build(rspirv::dr::Error),
    #[error("the generated SPIR-V is invalid (a ptxvk bug): {0}")]
    Invalid(String),
    /// An external tool (SPIRV-Tools) is missing or failed.
    #[error("{0}")]
    Tool(String),
    #[error("the module has no kernels (`.entry`)")]
    NoKernels,
    /// `error`, met while emitting the instruction at `span` (its PTX source).
    #[error("{error}")]
    At { span: Span, error: Box<Error> },
}

impl Error {
    /// Whether this is a ptxvk bug (as opposed to a missing tool or a module without
    /// kernels).
    pub fn is_internal(&self) -> bool {
        match self {
            Error::Internal(_) | Error::Build(_) | Error::Invalid(_) => true,
            Error::At { error, .. } => error.is_internal(),
            Error::Tool(_) | Error::NoKernels => false,
        }
    }

    /// This error as met at the instruction at `span`; an error that already has the
    /// span of an instruction keeps it (the innermost is the one that failed).
    pub fn at(self, span: Span) -> Error {
        match self {
            Error::At { .. } => self,
            error => Error::At { span, error: Box::new(error) },
        }
    }

    /// The span of the instruction whose emission failed, when known.
    pub fn span(&self) -> Option<Span> {
        match self {
            Error::At { span, .. } => Some(*span),
            _ => None,
        }
    }
}

impl From<rspirv::dr::Error> for Error {
    fn from(e: rspirv::dr::Error) -> Self {
        Error::Build(e)
    }
}
