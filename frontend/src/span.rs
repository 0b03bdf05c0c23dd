//! Byte-offset spans into one source file.

use std::fmt;
use std::ops::Range;

/// A half-open byte range `start..end` in the source text of one PTX file.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const fn new(start: u32, end: u32) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl From<Range<usize>> for Span {
    fn from(r: Range<usize>) -> Self {
        // Sources larger than 4 GiB are rejected by `SourceFile::new`, so offsets fit.
        Span { start: r.start as u32, end: r.end as u32 }
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A value with the span it came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Span) -> Self {
        Spanned { value, span }
    }
}

/// The text of a name, opcode or modifier. Names of up to 24 bytes (nearly every
/// register, label, opcode and modifier a compiler writes) are stored inline without a
/// heap allocation, which is most of what makes parsing fast (docs/benchmarks.md).
pub type Name = compact_str::CompactString;

/// An identifier (register, variable, label or function name) with its span.
pub type Ident = Spanned<Name>;
