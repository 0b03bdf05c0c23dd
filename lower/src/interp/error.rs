//! The interpreter's error: why a run has no outcome to compare. Its own file so that
//! every part of the interpreter can name it without importing the interpreter's root.

use ptxvk_frontend::Span;

/// Why a run has no outcome to compare, or its failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The interpreter does not model this operation.
    #[error("the interpreter does not model {what}")]
    Unsupported { what: String, span: Span },
    /// The program does something the IR leaves undefined.
    #[error("undefined behaviour: {what}")]
    Undefined { what: String, span: Span },
    /// An access outside every allocation or window (a device would fault, or worse).
    #[error("{space} access of {size} bytes at {addr:#x} is outside memory")]
    Fault { space: &'static str, addr: u64, size: u32, span: Span },
    /// The launch had not ended after this many steps (it may hang).
    #[error("no end after {0} steps")]
    StepLimit(u64),
}
