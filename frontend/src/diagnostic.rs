//! Diagnostics with spans, rendered as `file:line:column` with a caret.
//!
//! Every stage of ptxvk reports problems in the PTX as [`Diagnostic`]s against the
//! [`SourceFile`] they came from, or, for several files linked into one program,
//! against the [`SourceMap`] that lays them out in one span space; one renderer
//! (codespan-reporting) prints them all.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};

use crate::span::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    /// A ptxvk bug found while compiling (an IR verifier or structurizer failure, a
    /// broken invariant), never a fault of the PTX; rendered as `bug`.
    Internal,
}

/// One problem in a PTX file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    /// Text printed under the caret; empty for none.
    pub label: String,
    /// Other places the problem involves (the first definition of a duplicate symbol),
    /// each with its label; they may be in other files of a [`SourceMap`].
    pub secondary: Vec<(Span, String)>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A ptxvk bug at `span`: what broke, for the message "internal error: {what}".
    pub fn internal(span: Span, what: impl std::fmt::Display) -> Self {
        Diagnostic {
            severity: Severity::Internal,
            notes: vec![
                "this is a bug in ptxvk, not in the PTX; please report it with the PTX".to_string()
            ],
            ..Diagnostic::error(span, format!("internal error: {what}"))
        }
    }

    /// Adds another place the problem involves, with its label.
    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Self {
        self.secondary.push((span, label.into()));
        self
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

impl Diagnostics {
    /// Whether one of them is a ptxvk bug ([`Severity::Internal`]) rather than a fault
    /// of the PTX.
    pub fn is_internal(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Internal)
    }

    /// The same, each (place, message) once, in order: a device function inlined at
    /// several call sites, or into several kernels, reports its errors once.
    pub fn once(mut self) -> Self {
        let mut seen = std::collections::BTreeSet::new();
        self.0.retain(|d| seen.insert((d.span, d.message.clone())));
        self
    }
}

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
        Self::line_col_in(&self.text, offset)
    }

    fn line_col_in(text: &str, offset: u32) -> (usize, usize) {
        let offset = (offset as usize).min(text.len());
        let before = &text[..floor_char_boundary(text, offset)];
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
        let mut map = SourceMap::default();
        map.add(self.name.clone(), &self.text);
        map.render(diagnostics)
    }
}

/// Several PTX files laid out one after another in one span space, so that the
/// modules parsed from them can be linked into one program and every span still
/// names its file. File `i` occupies `start(i)..start(i) + len`, followed by one
/// newline that no span covers.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    /// The files' texts, each followed by `\n`.
    text: String,
    /// Name, start and end offset of each file, in order.
    files: Vec<(String, u32, u32)>,
    /// The offset of every `\n` in `text`, in order: a location is two binary
    /// searches, not a scan (modules of 20 MB have a span per instruction to place).
    newlines: Vec<u32>,
}

impl SourceMap {
    /// A map of the given files, in order.
    pub fn new<N: Into<String>, T: AsRef<str>>(files: impl IntoIterator<Item = (N, T)>) -> Self {
        let mut map = SourceMap::default();
        for (name, text) in files {
            map.add(name, text.as_ref());
        }
        map
    }

    /// Appends a file; returns its index.
    pub fn add(&mut self, name: impl Into<String>, text: &str) -> usize {
        let start = self.text.len();
        self.text.push_str(text);
        let end = self.text.len();
        self.text.push('\n');
        // Offsets past 4 GiB are clamped; the parser rejects such files with a
        // diagnostic before any span is used.
        let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        let newlines =
            self.text.as_bytes()[start..].iter().enumerate().filter(|(_, &b)| b == b'\n');
        self.newlines.extend(newlines.map(|(i, _)| clamp(start + i)));
        self.files.push((name.into(), clamp(start), clamp(end)));
        self.files.len() - 1
    }

    /// The number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The name of file `i`.
    pub fn name(&self, i: usize) -> &str {
        self.files.get(i).map_or("", |f| f.0.as_str())
    }

    /// The texts of all files, as laid out (what spans index).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// File `i`'s byte range in [`SourceMap::text`].
    pub fn range(&self, i: usize) -> std::ops::Range<usize> {
        self.files.get(i).map_or(0..0, |&(_, s, e)| s as usize..e as usize)
    }

    /// The file holding `offset` (the last file for offsets past the end).
    pub fn file_of(&self, offset: u32) -> usize {
        self.files.partition_point(|&(_, start, _)| start <= offset).saturating_sub(1)
    }

    /// File name, 1-based line and column of an offset.
    pub fn location(&self, offset: u32) -> (&str, usize, usize) {
        let i = self.file_of(offset);
        let r = self.range(i);
        let offset = (offset as usize).clamp(r.start, r.end);
        let offset = floor_char_boundary(&self.text, offset);
        // Newlines before the file, and before the offset.
        let before_file = self.newlines.partition_point(|&n| (n as usize) < r.start);
        let before = self.newlines.partition_point(|&n| (n as usize) < offset);
        let line_start = match before.checked_sub(1).and_then(|k| self.newlines.get(k)) {
            Some(&n) if n as usize >= r.start => n as usize + 1,
            _ => r.start,
        };
        let column = self.text[line_start..offset].chars().count() + 1;
        (self.name(i), before - before_file + 1, column)
    }

    /// Renders diagnostics as plain text, each label in its own file (see
    /// [`SourceFile::render`]).
    pub fn render(&self, diagnostics: &[Diagnostic]) -> String {
        let mut files = SimpleFiles::new();
        let ids: Vec<usize> = (0..self.files.len())
            .map(|i| files.add(self.name(i), &self.text[self.range(i)]))
            .collect();
        let config =
            Config { chars: codespan_reporting::term::Chars::ascii(), ..Config::default() };
        // A label's file and its range inside that file.
        let place = |span: Span| {
            let i = self.file_of(span.start);
            let r = self.range(i);
            let local = |o: u32| (o as usize).clamp(r.start, r.end) - r.start;
            (ids.get(i).copied().unwrap_or(0), local(span.start)..local(span.end.max(span.start)))
        };
        let mut out = String::new();
        for d in diagnostics {
            let severity = match d.severity {
                Severity::Error => CsSeverity::Error,
                Severity::Warning => CsSeverity::Warning,
                Severity::Internal => CsSeverity::Bug,
            };
            let mut labels = Vec::new();
            if !self.files.is_empty() {
                let (file, range) = place(d.span);
                labels.push(Label::primary(file, range).with_message(&d.label));
                for (span, label) in &d.secondary {
                    let (file, range) = place(*span);
                    labels.push(Label::secondary(file, range).with_message(label));
                }
            }
            let cs = CsDiagnostic::new(severity)
                .with_message(&d.message)
                .with_labels(labels)
                .with_notes(d.notes.clone());
            match term::emit_into_string(&config, &files, &cs) {
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

    #[test]
    fn internal_errors_render_as_bugs_naming_the_construct() {
        let src = SourceFile::new("k.ptx", ".version 7.0\n  bra.uni L;\n");
        let d = Diagnostic::internal(Span::new(15, 22), "structurizer: bb3 emitted twice");
        assert_eq!(d.severity, Severity::Internal);
        let text = src.render(std::slice::from_ref(&d));
        assert!(text.starts_with("bug: internal error: structurizer"), "{text}");
        assert!(text.contains("k.ptx:2:3"), "{text}");
        assert!(text.contains("a bug in ptxvk"), "{text}");
        assert!(Diagnostics(vec![Diagnostic::error(Span::new(0, 1), "x"), d]).is_internal());
        assert!(!Diagnostics(vec![Diagnostic::error(Span::new(0, 1), "x")]).is_internal());
    }

    #[test]
    fn locations_in_a_map_agree_with_scanning_each_file() {
        let files = [("a.ptx", "ab\ncd\n\né x\n"), ("b.ptx", ""), ("c.ptx", "\nλλ\nz")];
        let map = SourceMap::new(files);
        for (i, (name, text)) in files.iter().enumerate() {
            let start = map.range(i).start;
            // Every offset of the file, its end, and the newline after it.
            for local in (0..=text.len()).filter(|&o| text.is_char_boundary(o)) {
                let offset = (start + local) as u32;
                let (line, column) = SourceFile::line_col_in(text, local as u32);
                if map.file_of(offset) == i {
                    assert_eq!(map.location(offset), (*name, line, column), "{name} at {local}");
                }
            }
        }
    }
}
