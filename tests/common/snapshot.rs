//! Snapshot files: compare output with a checked-in expectation, or rewrite it under
//! `BLESS=1`. Shared by the diagnostic, IR/SPIR-V and pass-file snapshot tests.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::Path;

/// Whether `BLESS` asks to rewrite the snapshots instead of checking them.
pub fn bless() -> bool {
    std::env::var_os("BLESS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Checks `actual` against the snapshot at `path` (named `shown` in messages), or
/// writes it there under `BLESS=1`. Returns what went wrong, if anything.
pub fn check(path: &Path, shown: &str, actual: &str) -> Option<String> {
    if bless() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("creating the snapshot directory");
        }
        if std::fs::read_to_string(path).ok().as_deref() != Some(actual) {
            std::fs::write(path, actual).expect("writing the snapshot");
        }
        return None;
    }
    match std::fs::read_to_string(path) {
        Ok(expected) if expected == actual => None,
        Ok(expected) => Some(format!(
            "{shown} differs from its snapshot (- expected, + actual):\n{}",
            line_diff(&expected, actual)
        )),
        Err(e) => Some(format!("{shown}: cannot read the snapshot: {e}")),
    }
}

/// A line diff of `expected` → `actual` (longest common subsequence): unchanged lines
/// start with two spaces, removed lines with `-`, added lines with `+`.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // lcs[i][j] = length of the LCS of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] =
                if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = String::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    if expected.ends_with('\n') != actual.ends_with('\n') {
        out.push_str("(the snapshots differ in the final newline)\n");
    }
    out
}
