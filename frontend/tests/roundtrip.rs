//! Every PTX file of the repository parses, and printing it gives text that parses back
//! to the same AST (spans aside): `parse(print(parse(x))) == parse(x)`.
//!
//! The corpus is every `.ptx` under `tests/`: compiler output (`tests/kernels`), the
//! hand-written files (`tests/ptx/**`, including the syntax corpus `tests/ptx/syntax`),
//! and the diagnostics cases (`tests/errors`), of which only the syntactically valid
//! ones are round-tripped.

use std::path::{Path, PathBuf};

mod common;

use common::{first_difference, span_free};
use ptxvk_frontend::{parse, parse_syntax, print, SourceFile};

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("tests")
}

fn ptx_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            ptx_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "ptx") {
            out.push(p);
        }
    }
}

#[test]
fn every_corpus_file_parses_and_round_trips() {
    let mut files = Vec::new();
    ptx_files(&tests_dir(), &mut files);
    assert!(files.len() >= 80, "the corpus shrank to {} files", files.len());
    let mut failures = Vec::new();
    let mut round_tripped = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable PTX");
        let name = path.display().to_string();
        let is_error_case = path.parent().and_then(Path::file_name).is_some_and(|d| d == "errors");
        let module = match parse(&text) {
            Ok(m) => m,
            Err(d) if is_error_case => {
                // Diagnostics cases may be rejected; those that are still valid
                // syntax must round-trip too.
                let (m, syntax_errors) = parse_syntax(&text);
                if !syntax_errors.is_empty() {
                    continue;
                }
                let _ = d;
                m
            }
            Err(d) => {
                let src = SourceFile::new(name.clone(), text.clone());
                failures.push(format!("{name} does not parse:\n{}", src.render(&d.0)));
                continue;
            }
        };
        let printed = print(&module);
        let (reparsed, errors) = parse_syntax(&printed);
        if !errors.is_empty() {
            let src = SourceFile::new(format!("print({name})"), printed.clone());
            failures.push(format!("printed {name} does not parse:\n{}", src.render(&errors)));
            continue;
        }
        let (a, b) = (span_free(&module), span_free(&reparsed));
        if a != b {
            failures.push(format!("{name} changes in a round trip: {}", first_difference(&a, &b)));
            continue;
        }
        // Printing is a fixed point after one round.
        if print(&reparsed) != printed {
            failures.push(format!("{name}: printing the reparsed module gives other text"));
            continue;
        }
        round_tripped += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{round_tripped} of {} corpus files round-tripped", files.len());
}

#[test]
fn span_free_blanks_spans_only() {
    assert_eq!(span_free(&"x 12..34 a1..2"), "\"x <span> a1..2\"");
}

/// A module of every compiler-generated file of `tests/kernels` (over 1 MiB, so that
/// `parse` splits it) parses in chunks on several threads exactly as in one sequential
/// parse, and the cuts fall between the files' kernels.
#[test]
fn chunked_parse_of_the_kernel_corpus_equals_the_sequential_parse() {
    use ptxvk_frontend::split::{cuts, parse_syntax_in_chunks, PARALLEL_MIN_BYTES};
    let mut files = Vec::new();
    ptx_files(&tests_dir().join("kernels"), &mut files);
    let mut text = String::new();
    while text.len() < PARALLEL_MIN_BYTES + 1 {
        for path in &files {
            text.push_str(&std::fs::read_to_string(path).expect("read corpus file"));
            text.push('\n');
        }
    }
    let sequential = parse_syntax_in_chunks(&text, 1);
    assert!(sequential.1.is_empty(), "{:?}", sequential.1.first());
    for chunks in [2, 5, 16] {
        assert_eq!(cuts(&text, chunks).len(), chunks - 1);
        assert!(parse_syntax_in_chunks(&text, chunks) == sequential, "{chunks} chunks differ");
    }
    let (module, errors) = parse_syntax(&text);
    assert!(errors.is_empty() && module == sequential.0);
    assert!(parse(&text).is_ok());
}
