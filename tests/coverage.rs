//! Checks the instruction coverage table (`ptxvk_lower::coverage`) against the compiler
//! and the test corpus, and writes `docs/coverage.md` from it (the test fails when the
//! file is stale; `BLESS=1` rewrites it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ptxvk::frontend::instructions::{Opcode, INSTRUCTIONS};
use ptxvk::lower::coverage::{Row, Status, ROWS};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A kernel around one probe instruction (registers as `coverage` documents them), a
/// device function `f` and the system call `free` to call (with `.param` `param0`). The
/// target is the highest a probe needs (`redux.sync.f32`: sm_100a).
fn probe_kernel(probe: &str) -> String {
    format!(
        ".version 8.8\n.target sm_100a\n.address_size 64\n\n\
         .func f\n{{\n    ret;\n}}\n\n.extern .func free(.param .b64 free_p);\n\n\
         .visible .entry probe(.param .u64 probe_p)\n{{\n\
         \x20   .reg .pred %p<5>;\n    .reg .b16 %h<5>;\n    .reg .b32 %r<5>;\n    .reg .b64 %rd<5>;\n    .reg .b128 %q<2>;\n\
         \x20   .param .b64 param0;\n\
         \x20   ld.param.u64 %rd1, [probe_p];\n    cvta.to.global.u64 %rd1, %rd1;\n\
         \x20   mov.u32 %r1, 0;\n\
         T: .branchtargets L;\n\
         P: .callprototype _ ();\n\
         \x20   {probe}\n\
         L:\n    ret;\n}}\n"
    )
}

/// What compiling a row's probe gives: `Ok` (valid SPIR-V) or the first diagnostic.
fn compile_probe(row: &Row) -> Result<(), String> {
    let text = probe_kernel(row.probe);
    match ptxvk::compile::compile("probe.ptx", &text, None) {
        Ok(c) => ptxvk::spirv::validate(&c.spirv.words)
            .map_err(|e| format!("{}: invalid SPIR-V: {e}", row.probe)),
        Err(ptxvk::Error::Ptx { diagnostics, .. }) => {
            let d = &diagnostics.0[0];
            let mut msg = d.message.clone();
            for n in &d.notes {
                msg.push_str(&format!(" ({n})"));
            }
            Err(msg)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Every instruction spelling (opcode and modifiers) in the PTX under `tests/`, with the
/// files it appears in.
fn tested_spellings() -> BTreeMap<String, BTreeSet<String>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read tests dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "ptx") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&repo().join("tests"), &mut files);
    files.sort();
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(repo()).expect("under the repo").display().to_string();
        // Only the end-to-end corpus: kernels, ops, control-flow and memory tests.
        if !(rel.starts_with("tests/kernels/")
            || rel.starts_with("tests/ptx/ops/")
            || rel.starts_with("tests/ptx/control/")
            || rel.starts_with("tests/ptx/memory/")
            || rel.starts_with("tests/ptx/warp/"))
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("read PTX");
        let Ok(module) = ptxvk::frontend::parse(&text) else { continue };
        let mut stack: Vec<&ptxvk::frontend::ast::Statement> = Vec::new();
        for item in &module.items {
            if let ptxvk::frontend::ast::Item::Function(func) = item {
                stack.extend(func.body.iter().flatten());
            }
        }
        while let Some(s) = stack.pop() {
            match s {
                ptxvk::frontend::ast::Statement::Instruction(i) => {
                    let mut spelling = i.opcode.value.to_string();
                    for m in &i.modifiers {
                        spelling.push_str(&m.value);
                    }
                    map.entry(spelling).or_default().insert(rel.clone());
                }
                ptxvk::frontend::ast::Statement::Block(b, _) => stack.extend(b.iter()),
                _ => {}
            }
        }
    }
    map
}

fn spelling(probe: &str) -> &str {
    probe.split_whitespace().next().unwrap_or("").trim_end_matches(';')
}

#[test]
fn coverage_table_matches_the_compiler_and_the_tests() {
    // Rows name opcodes by `Opcode`, so a row for an instruction the table does not
    // have does not compile; every instruction of the table needs a row.
    let rows: BTreeSet<Opcode> = ROWS.iter().map(|r| r.opcode).collect();
    let missing: Vec<&str> =
        INSTRUCTIONS.iter().filter(|s| !rows.contains(&s.opcode)).map(|s| s.name).collect();
    assert!(missing.is_empty(), "instructions without a coverage row: {missing:?}");

    let tested = tested_spellings();
    let mut problems = Vec::new();
    let mut lines = Vec::new();
    let mut totals = [0usize; 3];
    for row in ROWS {
        let result = compile_probe(row);
        let (status, detail, evidence) = match (row.status, &result) {
            (Status::Supported | Status::Emulated(_), Err(e)) => {
                problems.push(format!("{}: marked lowered but rejected: {e}", row.probe));
                continue;
            }
            (Status::Unsupported(_), Ok(())) => {
                problems.push(format!("{}: marked unsupported but compiles", row.probe));
                continue;
            }
            (Status::Unsupported(why), Err(diagnostic)) => {
                totals[2] += 1;
                ("unsupported", why.to_string(), format!("“{}”", diagnostic.replace('|', "\\|")))
            }
            (status, Ok(())) => {
                let Some(files) = tested.get(spelling(row.probe)) else {
                    problems.push(format!(
                        "{}: `{}` appears in no end-to-end test PTX",
                        row.probe,
                        spelling(row.probe)
                    ));
                    continue;
                };
                let shown: Vec<String> = files
                    .iter()
                    .take(2)
                    .map(|f| {
                        let name = f.rsplit('/').next().unwrap_or(f);
                        format!("[{name}](../{f})")
                    })
                    .collect();
                let more = if files.len() > 2 {
                    format!(" and {} more", files.len() - 2)
                } else {
                    String::new()
                };
                match status {
                    Status::Emulated(how) => {
                        totals[1] += 1;
                        ("emulated", how.to_string(), format!("{}{more}", shown.join(", ")))
                    }
                    _ => {
                        totals[0] += 1;
                        ("supported", String::new(), format!("{}{more}", shown.join(", ")))
                    }
                }
            }
        };
        lines.push(format!(
            "| `{}` | {} | {status} | {} | {} |",
            row.opcode,
            row.forms.replace('|', "\\|"),
            detail.replace('|', "\\|"),
            evidence
        ));
    }
    assert!(problems.is_empty(), "coverage table problems:\n  {}", problems.join("\n  "));

    let mut doc = String::new();
    doc.push_str("# Instruction coverage\n\n");
    doc.push_str(
        "Generated by `tests/coverage.rs` from `lower/src/coverage.rs`; do not edit \
         (`BLESS=1 cargo test --test coverage` rewrites it).\n\n\
         Every instruction of PTX ISA 9.2 has at least one row. For each row the test \
         compiles a probe instruction: *supported* and *emulated* rows compile to SPIR-V \
         that passes `spirv-val` and are spelled exactly like an instruction of the \
         end-to-end tests listed in the last column, which run on lavapipe against CPU \
         references; *unsupported* rows are rejected, and the last column quotes the \
         diagnostic.\n\n",
    );
    doc.push_str(&format!(
        "Totals: **{} rows**: {} supported, {} emulated, {} unsupported.\n\n",
        totals.iter().sum::<usize>(),
        totals[0],
        totals[1],
        totals[2]
    ));
    doc.push_str("| instruction | forms | status | how / why | tested in / diagnostic |\n");
    doc.push_str("|---|---|---|---|---|\n");
    for l in &lines {
        doc.push_str(l);
        doc.push('\n');
    }
    let path = repo().join("docs/coverage.md");
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &doc).expect("write docs/coverage.md");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == doc,
        "docs/coverage.md is stale: run `BLESS=1 cargo test --test coverage` and commit it"
    );
}

/// `docs/status.md` quotes the table's totals (*Instructions*); they are the totals of
/// the rows' statuses, which `coverage_table_matches_the_compiler_and_the_tests` holds
/// against the compiler and writes into `docs/coverage.md`. This test is the cheap half:
/// it compiles nothing, so the two documents cannot drift apart unnoticed.
#[test]
fn status_and_coverage_quote_the_same_totals() {
    let mut counts = [0usize; 3];
    for row in ROWS {
        counts[match row.status {
            Status::Supported => 0,
            Status::Emulated(_) => 1,
            Status::Unsupported(_) => 2,
        }] += 1;
    }
    let [supported, emulated, unsupported] = counts;
    let total = ROWS.len();
    let read = |path: &str| {
        let text = std::fs::read_to_string(repo().join(path)).expect("read the document");
        // Markdown paragraphs wrap anywhere: compare with single spaces.
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };

    let coverage = read("docs/coverage.md");
    let totals = format!(
        "Totals: **{total} rows**: {supported} supported, {emulated} emulated, \
         {unsupported} unsupported."
    );
    assert!(
        coverage.contains(&totals),
        "docs/coverage.md does not say `{totals}`: run `BLESS=1 cargo test --test coverage`"
    );

    let status = read("docs/status.md");
    let quote = format!(
        "{total} rows, of which {supported} are supported natively, {emulated} emulated \
         exactly and {unsupported} rejected"
    );
    assert!(
        status.contains(&quote),
        "docs/status.md, *Instructions*, must quote the coverage table's totals: `{quote}`"
    );
}
