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

/// Lines of unchanged context around each change in [`line_diff`].
const CONTEXT: usize = 3;
/// Lines of [`line_diff`]'s output shown at most: a snapshot of a whole module can
/// change everywhere.
const SHOWN: usize = 400;

/// A line diff of `expected` → `actual` (Myers', from `similar`: linear memory, where a
/// table of common subsequences of two large modules took gigabytes; at most about a
/// second): unchanged lines
/// start with two spaces, removed lines with `-`, added lines with `+`; `...` separates
/// runs of changes more than [`CONTEXT`] lines apart.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // Past the deadline the diff is coarser but still correct (a longer run of changes).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let ops =
        similar::capture_diff_slices_deadline(similar::Algorithm::Myers, &a, &b, Some(deadline));
    let mut lines = Vec::new();
    for (n, group) in similar::group_diff_ops(ops, CONTEXT).iter().enumerate() {
        if n > 0 {
            lines.push("...".to_string());
        }
        for change in group.iter().flat_map(|op| op.iter_changes(&a, &b)) {
            let sign = match change.tag() {
                similar::ChangeTag::Equal => ' ',
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
            };
            lines.push(format!("{sign} {}", change.value()));
        }
    }
    let mut out = String::new();
    for line in lines.iter().take(SHOWN) {
        let _ = writeln!(out, "{line}");
    }
    if lines.len() > SHOWN {
        let _ = writeln!(out, "... ({} more lines of diff)", lines.len() - SHOWN);
    }
    if expected.ends_with('\n') != actual.ends_with('\n') {
        out.push_str("(the snapshots differ in the final newline)\n");
    }
    out
}
