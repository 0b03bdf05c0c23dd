//! Diagnostics with spans, rendered as `file:line:column` with a caret.
//!
//! Every stage of ptxvk reports problems in the PTX as [`Diagnostic`]s against the
//! [`SourceFile`] they came from; one renderer (codespan-reporting) prints them all.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config};

use crate::span::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One problem in a PTX file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    /// Text printed under the caret; empty for none.
    pub label: String,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            label: String::new(),
            notes: Vec::new(),
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
}

/// A list of diagnostics that is an error: what a stage returns when it rejects input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} error(s) in PTX input; first: {}", .0.len(), .0.first().map_or("", |d| d.message.as_str()))]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}

/// A named PTX source text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        SourceFile { name: name.into(), text: text.into() }
    }

    /// 1-based line and column of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = (offset as usize).min(self.text.len());
        let before = &self.text[..floor_char_boundary(&self.text, offset)];
        let line = before.matches('\n').count() + 1;
        let col = before
            .rfind('\n')
            .map_or(before.chars().count(), |nl| before[nl + 1..].chars().count())
            + 1;
        (line, col)
    }

    /// Renders diagnostics as plain text:
    ///
    /// ```text
    /// error: unknown instruction `frob`
    ///   ┌─ k.ptx:7:5
    ///   │
    /// 7 │     frob.b32 %r1, %r2;
    ///   │     ^^^^
    /// ```
    pub fn render(&self, diagnostics: &[Diagnostic]) -> String {
        let file = SimpleFile::new(self.name.as_str(), self.text.as_str());
        let config =
            Config { chars: codespan_reporting::term::Chars::ascii(), ..Config::default() };
        let mut out = String::new();
        for d in diagnostics {
            let severity = match d.severity {
                Severity::Error => CsSeverity::Error,
                Severity::Warning => CsSeverity::Warning,
            };
            let len = self.text.len();
            let range = (d.span.start as usize).min(len)..(d.span.end as usize).min(len);
            let cs = CsDiagnostic::new(severity)
                .with_message(&d.message)
                .with_labels(vec![Label::primary((), range).with_message(&d.label)])
                .with_notes(d.notes.clone());
            match term::emit_into_string(&config, &file, &cs) {
                Ok(s) => out.push_str(&s),
                // A span outside the file cannot happen for our own spans; fall back to
                // the plain message rather than losing the diagnostic.
                Err(_) => out.push_str(&format!("error: {}\n", d.message)),
            }
        }
        out
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_file_line_column_and_caret() {
        let src = SourceFile::new("k.ptx", ".version 7.0\n  frob.b32 %r1;\n");
        let d =
            Diagnostic::error(Span::new(15, 19), "unknown instruction `frob`").with_label("here");
        let text = src.render(&[d]);
        assert!(text.contains("k.ptx:2:3"), "{text}");
        assert!(text.contains("^^^^ here"), "{text}");
        assert_eq!(src.line_col(15), (2, 3));
    }
}
