//! The shape the codebase keeps (issue "Middle end II"): no Rust file in the workspace
//! over 1,500 lines and no function over 200, so that each file is one concern and each
//! function can be read at once. Generated tables are the exception: none is Rust here.

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 1500;
const MAX_FUNCTION_LINES: usize = 200;

/// Every `.rs` file of the workspace but the build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The functions of `text` longer than the limit: a `fn` item's first line to the
/// line that closes it at the same indentation, as rustfmt lays them out.
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let Some(name) = fn_name(trimmed) else { continue };
        if line.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{indent}}}");
        let Some(end) = lines[i + 1..].iter().position(|l| *l == close) else { continue };
        let n = end + 2;
        if n > MAX_FUNCTION_LINES {
            long.push((i + 1, name.to_string(), n));
        }
    }
    long
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line;
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    rest = rest.strip_prefix("extern \"C\" ").unwrap_or(rest);
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

#[test]
fn no_file_over_1500_lines_and_no_function_over_200() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 100, "found only {} Rust files under {}", files.len(), root.display());
    let mut problems = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let shown = path.strip_prefix(&root).unwrap_or(path).display().to_string();
        let n = text.lines().count();
        if n > MAX_FILE_LINES {
            problems.push(format!("{shown}: {n} lines (at most {MAX_FILE_LINES})"));
        }
        for (line, name, n) in long_functions(&text) {
            problems.push(format!(
                "{shown}:{line}: fn {name} has {n} lines (at most {MAX_FUNCTION_LINES})"
            ));
        }
    }
    assert!(problems.is_empty(), "split these:\n{}", problems.join("\n"));
}

#[test]
fn the_measure_finds_long_functions() {
    let body = "    x();\n".repeat(MAX_FUNCTION_LINES);
    let text = format!("fn short() {{\n}}\n\npub(crate) fn long() {{\n{body}}}\n");
    assert_eq!(long_functions(&text), vec![(4, "long".to_string(), MAX_FUNCTION_LINES + 2)]);
    assert_eq!(fn_name("pub unsafe extern \"C\" fn cuInit(flags: u32) -> R {"), Some("cuInit"));
}
