//! Every PTX file of the corpus (real-compiler kernels and hand-written PTX) compiles to
//! SPIR-V that passes `spirv-val --target-env vulkan1.3`, except files named
//! `reject_*.ptx`, which hold shapes ptxvk must reject with diagnostics. The files of a
//! folder whose name starts with `link` are one program: they are linked together first.

use std::path::{Path, PathBuf};

/// The programs of the corpus, each one file or (a `link` folder) several, sorted.
fn corpus() -> Vec<Vec<PathBuf>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("tests");
    let mut programs = Vec::new();
    let mut dirs = vec![root.join("kernels"), root.join("ptx")];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut files = Vec::new();
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "ptx") {
                files.push(p);
            }
        }
        files.sort();
        if d.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("link")) {
            programs.push(files);
        } else {
            programs.extend(files.into_iter().map(|f| vec![f]));
        }
    }
    programs.sort();
    programs
}

#[test]
fn every_corpus_file_compiles_to_valid_spirv() {
    let files = corpus();
    assert!(files.len() >= 42, "corpus missing: found {} programs", files.len());
    let mut failures = Vec::new();
    for program in &files {
        let sources = ptxvk_frontend::SourceMap::new(program.iter().map(|f| {
            (f.display().to_string(), std::fs::read_to_string(f).expect("read corpus file"))
        }));
        let result = (0..sources.len())
            .map(|i| ptxvk_frontend::parse_file(&sources, i))
            .collect::<Result<Vec<_>, _>>()
            .and_then(ptxvk_frontend::link)
            .and_then(|m| ptxvk_lower::lower(&m))
            .map_err(|d| sources.render(&d.0))
            .and_then(|ks| ptxvk_spirv::compile(&ks).map_err(|e| e.to_string()))
            .and_then(|m| ptxvk_spirv::validate(&m.words).map_err(|e| e.to_string()));
        let f = &program[0];
        let expect_reject =
            f.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("reject_"));
        match (result, expect_reject) {
            (Err(e), false) => failures.push(format!("{}:\n{e}", f.display())),
            (Ok(()), true) => {
                failures.push(format!("{}: accepted, but it should be rejected", f.display()))
            }
            _ => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    eprintln!("{} corpus programs compiled and validated", files.len());
}
