//! Every PTX file of the corpus (real-compiler kernels and hand-written PTX) compiles to
//! SPIR-V that passes `spirv-val --target-env vulkan1.3`, except files named
//! `reject_*.ptx`, which hold shapes ptxvk must reject with diagnostics.

use std::path::{Path, PathBuf};

fn corpus() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("tests");
    let mut files = Vec::new();
    let mut dirs = vec![root.join("kernels"), root.join("ptx")];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "ptx") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_corpus_file_compiles_to_valid_spirv() {
    let files = corpus();
    assert!(files.len() >= 42, "corpus missing: found {} files", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read corpus file");
        let src = ptxvk_frontend::SourceFile::new(f.display().to_string(), text);
        let result = ptxvk_frontend::parse(&src.text)
            .and_then(|m| ptxvk_lower::lower(&m))
            .map_err(|d| src.render(&d.0))
            .and_then(|ks| ptxvk_spirv::compile(&ks).map_err(|e| e.to_string()))
            .and_then(|m| ptxvk_spirv::validate(&m.words).map_err(|e| e.to_string()));
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
        "{} of {} files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    eprintln!("{} corpus files compiled and validated", files.len());
}
