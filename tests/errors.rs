//! Pinned diagnostics: every `tests/errors/NAME.ptx` is rejected by
//! `ptxvk compile tests/errors/NAME.ptx -o /dev/null` with exit code 1, and its stderr
//! must equal `tests/errors/NAME.stderr` byte for byte.
//!
//! After an intended change to a diagnostic, regenerate the snapshots with
//!
//! ```text
//! BLESS=1 cargo test --test errors
//! ```
//!
//! and read every changed `.stderr` before committing it.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/snapshot.rs"]
mod snapshot;
use snapshot::{bless, line_diff};

/// The suite must keep covering the breadth of diagnostics; losing cases is a failure.
const MIN_CASES: usize = 10;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn errors_dir() -> PathBuf {
    repo().join("tests").join("errors")
}

/// Every `tests/errors/*.ptx`, sorted by name.
fn cases() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(errors_dir())
        .expect("tests/errors exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    v.sort();
    v
}

/// The path as given on the command line (and hence as printed in diagnostics).
fn relative(path: &Path) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).expect("UTF-8 file name");
    format!("tests/errors/{name}")
}

/// Runs one case; returns a description of what went wrong, if anything.
fn check(ptx: &Path) -> Option<String> {
    let rel = relative(ptx);
    let out = Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .current_dir(repo())
        .args(["compile", &rel, "-o", "/dev/null"])
        .output()
        .expect("the ptxvk binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.code() != Some(1) {
        return Some(format!(
            "{rel}: expected exit code 1 (PTX rejected), got {:?}\n--- stderr ---\n{stderr}",
            out.status.code()
        ));
    }
    if !stdout.is_empty() {
        return Some(format!("{rel}: a rejected compile printed to stdout:\n{stdout}"));
    }
    if !stderr.starts_with("error: ") {
        return Some(format!("{rel}: stderr does not start with `error: `:\n{stderr}"));
    }
    let snapshot = ptx.with_extension("stderr");
    if bless() {
        std::fs::write(&snapshot, &stderr).expect("writing the snapshot");
        return None;
    }
    let expected = match std::fs::read_to_string(&snapshot) {
        Ok(s) => s,
        Err(e) => {
            return Some(format!(
                "{rel}: cannot read snapshot {}: {e}\n--- actual stderr ---\n{stderr}",
                snapshot.display()
            ))
        }
    };
    (expected != stderr).then(|| {
        format!(
            "{rel}: stderr differs from {} (- expected, + actual):\n{}",
            relative(&snapshot),
            line_diff(&expected, &stderr)
        )
    })
}

#[test]
fn diagnostics_match_snapshots() {
    let cases = cases();
    assert!(
        cases.len() >= MIN_CASES,
        "tests/errors has {} cases, expected at least {MIN_CASES}",
        cases.len()
    );
    let failures: Vec<String> = cases.iter().filter_map(|p| check(p)).collect();
    if !failures.is_empty() {
        panic!(
            "{} of {} diagnostic snapshots failed:\n\n{}\n\
             If the new output is intended, rerun with BLESS=1 to update the snapshots \
             (`BLESS=1 cargo test --test errors`) and review the diff.",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }
}

/// A snapshot without its PTX file is a deleted case whose expectation lingers.
#[test]
fn every_snapshot_has_a_case() {
    let orphans: Vec<String> = std::fs::read_dir(errors_dir())
        .expect("tests/errors exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "stderr"))
        .filter(|p| !p.with_extension("ptx").exists())
        .map(|p| relative(&p))
        .collect();
    assert!(orphans.is_empty(), "snapshots without a .ptx case: {orphans:?}");
}

#[test]
fn line_diff_marks_changes() {
    assert_eq!(line_diff("a\nb\nc\n", "a\nx\nc\n"), "  a\n- b\n+ x\n  c\n");
    assert_eq!(line_diff("a\n", "a\nb\n"), "  a\n+ b\n");
    assert_eq!(line_diff("a\n", "a"), "(the snapshots differ in the final newline)\n");
    // Large snapshots (a module's SPIR-V is tens of thousands of lines): only the
    // changes and their context, and a bounded output.
    let module: String = (0..50_000).map(|i| format!("%{i} = OpIAdd %uint %a %b\n")).collect();
    let one_changed = module.replacen("%20000 = OpIAdd", "%20000 = OpISub", 1);
    assert_eq!(
        line_diff(&module, &one_changed).lines().filter(|l| !l.starts_with("  ")).count(),
        2
    );
    let all_changed = module.replace("OpIAdd", "OpISub");
    assert!(line_diff(&module, &all_changed).lines().count() <= 401);
}
