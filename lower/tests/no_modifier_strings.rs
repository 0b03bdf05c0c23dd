//! No modifier is matched by its spelling after decoding: the front end decodes every
//! modifier once into typed values (`ptxvk_frontend::decode`, `ptxvk_frontend::modifier`)
//! and `lower` matches those. This test reads `lower/src` and fails on a comparison of
//! a string literal that the instruction table accepts as a modifier (`== ".cc"`,
//! `".volatile" =>`, `matches!(s, ".ca" | ".cg")`, a lookup table `[(".f4e", …)]`), and on
//! the helpers that compared spellings (`has_modifier`, `has(m, …)`, `reject_other`).
//! Messages that quote a modifier (`` "`.sat` takes …" ``) and operand components
//! (`%r1.x`, `.b0`) are not modifiers of the table and do not count. It also fails on
//! reading the modifiers as written (`i.modifiers`, the undecoded spellings, which a
//! warp sync point once compared as a joined string) outside the functions that
//! spell them for messages ([`SPELLED_FOR_MESSAGES`]).

use std::path::{Path, PathBuf};

use ptxvk_frontend::instructions::INSTRUCTIONS;

/// Calls that matched modifiers by spelling.
const BANNED: &[&str] = &["has_modifier(", "has(m,", "reject_other("];

/// Reads of the modifiers as written, before decoding.
const RAW_MODIFIERS: &[&str] = &["i.modifiers", ".modifiers.iter()"];

/// The functions (file under `lower/src`, name) that may read the modifiers as written:
/// they spell them in diagnostics.
const SPELLED_FOR_MESSAGES: &[(&str, &str)] = &[("sema/async_copy.rs", "spelled")];

/// Whether `line` reads the modifiers as written.
fn reads_raw_modifiers(line: &str) -> bool {
    let code = line.trim_start();
    !code.starts_with("//") && RAW_MODIFIERS.iter().any(|r| code.contains(r))
}

/// The name of the function `line` declares, if it does.
fn declared_fn(line: &str) -> Option<&str> {
    let after = line.split_once("fn ")?.1;
    let name = after.split(['(', '<']).next()?;
    (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')).then_some(name)
}

/// Whether `s` (with its dot) is a modifier some instruction accepts.
fn is_modifier(s: &str) -> bool {
    INSTRUCTIONS.iter().any(|spec| spec.accepts(s))
}

/// The violations of one line of source, as descriptions.
fn violations(line: &str) -> Vec<String> {
    let code = line.trim_start();
    if code.starts_with("//") {
        return Vec::new();
    }
    let mut found: Vec<String> =
        BANNED.iter().filter(|b| code.contains(*b)).map(|b| format!("calls `{b}…)`")).collect();
    let bytes = code.as_bytes();
    let mut k = 0;
    while let Some(open) = code[k..].find('"').map(|p| p + k) {
        let Some(close) = code[open + 1..].find('"').map(|p| p + open + 1) else { break };
        let literal = &code[open + 1..close];
        k = close + 1;
        // A literal that starts a string is not one that compares a modifier.
        if open > 0 && bytes[open - 1] == b'\\' {
            continue;
        }
        if !literal.starts_with('.') || !is_modifier(literal) {
            continue;
        }
        let before = code[..open].trim_end();
        let after = code[close + 1..].trim_start();
        let compared = before.ends_with("==")
            || before.ends_with("!=")
            || before.ends_with('|')
            || before.ends_with("matches!(")
            || before.ends_with("contains(&")
            || after.starts_with("=>")
            || after.starts_with('|')
            || after.starts_with("==")
            || (before.ends_with(['(', '[']) && after.starts_with(','));
        if compared {
            found.push(format!("compares the modifier `{literal}` by spelling"));
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("lower/src is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_detector_finds_what_it_forbids() {
    assert!(!violations(r#"if o.value == ".volatile" {"#).is_empty());
    assert!(!violations(r#"            ".cc" => true,"#).is_empty());
    assert!(!violations(r#"matches!(s, ".ca" | ".cg")"#).is_empty());
    assert!(!violations(r#"    (".f4e", [0x3210, 0x4321, 0x5432, 0x6543]),"#).is_empty());
    assert!(!violations(r#"if !i.has_modifier(".idx") {"#).is_empty());
    assert!(!violations(r#"reject_other(m, &[])?;"#).is_empty());
    // Messages, operand components and directives are not modifier comparisons.
    assert!(
        violations(r#"Err(Diagnostic::error(span, "`.sat` takes an integer type"))"#).is_empty()
    );
    assert!(violations(r#"            ".x" => Some(Dim::X),"#).is_empty());
    assert!(violations(r#"if name.value == ".maxnreg" {"#).is_empty());
    assert!(violations(r#"// `".cc" =>` in a comment"#).is_empty());
    // The sync point kind that joined the spellings.
    assert!(reads_raw_modifiers(
        r#"            .chain(i.modifiers.iter().map(|m| m.value.as_str()))"#
    ));
    assert!(!reads_raw_modifiers("        let kind = m.qualifiers.clone();"));
    assert_eq!(
        declared_fn("pub(super) fn spelled(i: &ast::Instruction) -> String {"),
        Some("spelled")
    );
}

#[test]
fn lower_compares_no_modifier_spellings() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "lower/src has its sources ({} found)", files.len());
    let mut report = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("a readable source file");
        let rel = f.strip_prefix(&src).unwrap_or(f).display().to_string();
        let mut function = "";
        for (n, line) in text.lines().enumerate() {
            function = declared_fn(line).unwrap_or(function);
            let mut found = violations(line);
            if reads_raw_modifiers(line) && !SPELLED_FOR_MESSAGES.contains(&(&rel, function)) {
                found.push(format!("reads the modifiers as written in `{function}`"));
            }
            for v in found {
                report.push(format!("lower/src/{rel}:{}: {v}", n + 1));
            }
        }
    }
    assert!(report.is_empty(), "modifiers matched by spelling:\n{}", report.join("\n"));
}
