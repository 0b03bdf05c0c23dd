//! PTX source bytes to text. The ptxas of every CUDA version reads bytes: comments and
//! strings of old modules hold Latin-1 or Shift-JIS text (authors' names, file paths in
//! `.file`), which is not UTF-8. Such bytes are allowed there and become `?`, one for
//! one, so that offsets are unchanged; anywhere else a byte that is not UTF-8 is an
//! error at its offset.

use crate::diagnostic::{Diagnostic, SourceMap};
use crate::span::Span;

/// Where the scanner is, for the bytes that follow.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Code,
    LineComment,
    BlockComment,
    String { escaped: bool },
}

impl Context {
    /// The context after byte `b`, seen at `bytes[i]` in this context.
    fn after(self, bytes: &[u8], i: usize) -> Context {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        match self {
            Context::Code if b == b'/' && next == Some(b'/') => Context::LineComment,
            Context::Code if b == b'/' && next == Some(b'*') => Context::BlockComment,
            Context::Code if b == b'"' => Context::String { escaped: false },
            Context::LineComment if b == b'\n' => Context::Code,
            Context::BlockComment if b == b'/' && i > 0 && bytes[i - 1] == b'*' => Context::Code,
            Context::String { escaped: false } if b == b'"' || b == b'\n' => Context::Code,
            Context::String { escaped: false } if b == b'\\' => Context::String { escaped: true },
            Context::String { escaped: true } => Context::String { escaped: false },
            other => other,
        }
    }
}

/// The text of PTX source `bytes`: valid UTF-8 as it is, bytes that are not UTF-8
/// inside comments and strings replaced by `?` each. The error, if some such byte is
/// anywhere else, points at the first (spans are offsets into `bytes`, which are the
/// text's offsets too).
pub fn decode(bytes: &[u8]) -> (String, Option<Diagnostic>) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return (text.to_owned(), None);
    }
    let mut text = String::with_capacity(bytes.len());
    let mut error = None;
    let (mut context, mut scanned, mut offset) = (Context::Code, 0, 0);
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        offset += chunk.valid().len();
        // The `/*` of a block comment is two bytes: look at the context after the
        // valid part, which ends before the invalid bytes.
        while scanned < offset {
            context = context.after(bytes, scanned);
            scanned += 1;
        }
        for (k, &b) in chunk.invalid().iter().enumerate() {
            let at = offset + k;
            if context == Context::Code && error.is_none() {
                let span = Span::new(at as u32, at as u32 + 1);
                error = Some(
                    Diagnostic::error(
                        span,
                        format!(
                            "byte {b:#04x} at offset {at} is not UTF-8 text; only comments \
                             and strings may hold such bytes"
                        ),
                    )
                    .with_label("not UTF-8"),
                );
            }
            text.push('?');
        }
        offset += chunk.invalid().len();
        scanned = offset;
    }
    (text, error)
}

impl SourceMap {
    /// Appends a file read as bytes ([`decode`]: bytes that are not
    /// UTF-8 are allowed in comments and strings). Returns its index, and the error for
    /// such a byte anywhere else, with a span in this map (the file is added all the
    /// same, so that the error renders with its line).
    pub fn add_bytes(
        &mut self,
        name: impl Into<String>,
        bytes: &[u8],
    ) -> (usize, Option<Diagnostic>) {
        let (text, error) = decode(bytes);
        let start = u32::try_from(self.text().len()).unwrap_or(u32::MAX);
        let i = self.add(name, &text);
        let shift = |s: Span| Span::new(s.start.saturating_add(start), s.end.saturating_add(start));
        (i, error.map(|d| Diagnostic { span: shift(d.span), ..d }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_utf8_are_allowed_in_comments_and_strings_only() {
        let ok = b"// caf\xe9\n/* \xff\xfe */ .file 1 \"a\\\"\xe9.cu\"\n.version 2.0\n";
        let (text, error) = decode(ok);
        assert!(error.is_none(), "{error:?}");
        assert_eq!(text.len(), ok.len(), "offsets are kept");
        assert!(text.starts_with("// caf?\n/* ?? */ .file 1 \"a\\\"?.cu\""), "{text}");

        let bad = b"// fine \xe9\n.version 2.0\n.target sm_10 \xe9\n";
        let (text, error) = decode(bad);
        let error = error.expect("an error");
        let at = bad.iter().rposition(|&b| b == 0xe9).expect("the byte");
        assert_eq!(error.span, Span::new(at as u32, at as u32 + 1));
        assert!(error.message.contains("0xe9"), "{}", error.message);
        assert_eq!(text.len(), bad.len());
    }
}
