//! Snapshots of every stage for the PTX corpus `tests/ptx`: for each case,
//! `tests/out/ir/CASE.ir` (`ptxvk compile --emit ir`: semantic analysis, the same for
//! every device), `tests/out/structured/CASE.ir` (`--emit structured`: after every
//! pass) and `tests/out/spvasm/CASE.spvasm` (`--emit spvasm`). Every
//! SPIR-V module is validated for Vulkan 1.3 as well.
//!
//! After an intended change to the compiler's output, regenerate them with
//!
//! ```text
//! BLESS=1 cargo test --test snapshots
//! ```
//!
//! and read the diff before committing it: a snapshot shows what a change did to the
//! code of every kernel.
//!
//! A case is one PTX file, or one directory `tests/ptx/link*` whose files are linked
//! into one program, compiled with warps emulated; `tests/ptx/warp` files are also
//! compiled for native warps (subgroups of 32), as `NAME.native`. Files named `reject_*` are expected to fail and have no output;
//! the few files in [`TOO_LARGE`] are left out.
//!
//! The same corpus checks the IR text format: every kernel from semantic analysis,
//! printed and parsed back, prints the same, and lowers to the same structured IR.

use std::path::{Path, PathBuf};

use ptxvk::compile::{Target, WarpMode};
use ptxvk::lower::ir::Routine;
use ptxvk::lower::pass::FusedFma;
use ptxvk::lower::text;
use ptxvk::SourceMap;

#[path = "common/snapshot.rs"]
mod snapshot;

/// Exhaustive operation tables (all 256 `lop3` functions, every video-instruction form,
/// every extended-precision chain): 130,000 lines of SPIR-V together, too large to
/// review as snapshots. `ops_e2e` runs them against CPU models.
const TOO_LARGE: &[&str] =
    &["ops/int_extended", "ops/lop3", "ops/video_scalar", "ops/video_simd", "ops/video_vmad"];

/// The suite must keep covering the corpus; losing cases is a failure.
const MIN_CASES: usize = 70;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Case {
    /// `DIR/NAME`, the snapshots' path under each stage directory.
    name: String,
    files: Vec<PathBuf>,
    /// Whether the case has snapshots (not [`TOO_LARGE`]).
    snapshot: bool,
    target: Target,
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("readable directory entry").path())
        .collect();
    v.sort();
    v
}

fn file_stem(p: &Path) -> String {
    p.file_stem().and_then(|s| s.to_str()).expect("UTF-8 file name").to_string()
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for dir in sorted_entries(&repo().join("tests/ptx")) {
        let dir_name = file_stem(&dir);
        let files: Vec<PathBuf> = sorted_entries(&dir)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
            .collect();
        if dir_name.starts_with("link") {
            let name = format!("{dir_name}/{dir_name}");
            let target = Target::with_warp_mode(WarpMode::Emulated);
            cases.push(Case { name, files, snapshot: true, target });
            continue;
        }
        for f in files {
            let name = format!("{dir_name}/{}", file_stem(&f));
            if !file_stem(&f).starts_with("reject_") {
                let snapshot = !TOO_LARGE.contains(&name.as_str());
                // Warp collectives also as native subgroup operations.
                if dir_name == "warp" {
                    let native = format!("{name}.native");
                    let files = vec![f.clone()];
                    let target = Target::with_warp_mode(WarpMode::Native);
                    cases.push(Case { name: native, files, snapshot, target });
                }
                // f32 arithmetic also for a device without f64 (`.soft`, integer code).
                // And for a device whose `Fma` a probe found fused (`.fused`).
                if name == "ops/soft_f32" {
                    let int = format!("{name}.int");
                    let files = vec![f.clone()];
                    cases.push(Case { name: int, files, snapshot, target: Target::portable() });
                    let fused = FusedFma { f32: true, f64: true };
                    let target = Target { fused_fma: fused, ..Target::default() };
                    let name = format!("{name}.fused");
                    cases.push(Case { name, files: vec![f.clone()], snapshot, target });
                }
                // The injected faults also as checked and as confined launches compile
                // them.
                if dir_name == "check" {
                    let checked = format!("{name}.checked");
                    let target = Target { check: true, ..Target::default() };
                    cases.push(Case { name: checked, files: vec![f.clone()], snapshot, target });
                    let confined = format!("{name}.confined");
                    let target = Target { confine: true, ..Target::default() };
                    cases.push(Case { name: confined, files: vec![f.clone()], snapshot, target });
                }
                let target = Target::with_warp_mode(WarpMode::Emulated);
                cases.push(Case { name, files: vec![f], snapshot, target });
            }
        }
    }
    cases
}

fn sources(case: &Case) -> SourceMap {
    let mut sources = SourceMap::default();
    for f in &case.files {
        let text = std::fs::read_to_string(f).expect("reading the PTX");
        let shown = f.strip_prefix(repo()).unwrap_or(f).display().to_string();
        sources.add(shown, &text);
    }
    sources
}

/// The three stages of a case, as `ptxvk compile --emit` prints them.
struct Stages {
    ir: String,
    structured: String,
    spvasm: String,
    words: Vec<u32>,
}

fn stages(case: &Case) -> Result<Stages, String> {
    let sources = sources(case);
    let c = ptxvk::compile::compile_linked(&sources, None, case.target)
        .map_err(|e| format!("{}: does not compile: {e}", case.name))?;
    let ir = ptxvk::compile::analyze_linked(&sources, None)
        .map_err(|e| format!("{}: semantic analysis fails: {e}", case.name))?
        .iter()
        .map(text::print)
        .collect::<String>();
    let structured = c
        .kernels
        .iter()
        .map(|k| text::print_structured(&k.kernel, &k.body))
        .collect::<Vec<_>>()
        .join("\n");
    let spvasm = ptxvk::spirv::disassemble(&c.spirv.words)
        .map_err(|e| format!("{}: cannot disassemble: {e}", case.name))?;
    Ok(Stages { ir, structured, spvasm, words: c.spirv.words })
}

fn stage_path(stage: &str, case: &Case, ext: &str) -> PathBuf {
    repo().join("tests/out").join(stage).join(format!("{}.{ext}", case.name))
}

#[test]
fn snapshots_match_and_spirv_validates() {
    let cases: Vec<Case> = cases().into_iter().filter(|c| c.snapshot).collect();
    assert!(cases.len() >= MIN_CASES, "only {} snapshot cases, expected {MIN_CASES}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let s = match stages(case) {
            Ok(s) => s,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        if let Err(e) = ptxvk::spirv::validate(&s.words) {
            failures
                .push(format!("{}: spirv-val --target-env vulkan1.3 rejects it: {e}", case.name));
        }
        // The IR from semantic analysis does not depend on the warp mode: one snapshot.
        let ir = (case.target == Target::default()).then_some(("ir", "ir", &s.ir));
        let later = [("structured", "ir", &s.structured), ("spvasm", "spvasm", &s.spvasm)];
        for (stage, ext, actual) in ir.into_iter().chain(later) {
            let path = stage_path(stage, case, ext);
            let shown = format!("tests/out/{stage}/{}.{ext}", case.name);
            failures.extend(snapshot::check(&path, &shown, actual));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} snapshot checks failed:\n\n{}\n\
         If the new output is intended, rerun with BLESS=1 (`BLESS=1 cargo test --test \
         snapshots`) and review the diff.",
        failures.len(),
        cases.len() * 4,
        failures.join("\n")
    );
}

/// Every module of the corpus compiles for checked launches (memcheck instruments each
/// access; racecheck each plain shared access too; initcheck each global one) and for
/// confined ones (CPU devices' default), and the SPIR-V validates.
#[test]
fn the_corpus_compiles_checked_and_validates() {
    let mut failures = Vec::new();
    let mut instrumented = 0;
    let mut racechecked = 0;
    let mut initchecked = 0;
    let mut confined = 0;
    for case in cases() {
        for tool in ["memcheck", "racecheck", "initcheck", "confine"] {
            let (racecheck, initcheck) = (tool == "racecheck", tool == "initcheck");
            let target = match tool {
                "confine" => Target { confine: true, ..case.target },
                _ => Target { check: true, racecheck, initcheck, ..case.target },
            };
            let c = match ptxvk::compile::compile_linked(&sources(&case), None, target) {
                Ok(c) => c,
                Err(e) => {
                    failures.push(format!("{}: does not compile with {tool}: {e}", case.name));
                    continue;
                }
            };
            // Initcheck finds shadow words with the table's routine.
            let shadowed = c
                .kernels
                .iter()
                .flat_map(|k| &k.kernel.functions)
                .any(|f| f.routine == Some(Routine::ShadowWord));
            match tool {
                "racecheck" => {
                    racechecked += c.spirv.kernels.iter().filter(|k| k.race_shadow).count()
                }
                "initcheck" => initchecked += usize::from(shadowed),
                "confine" => {
                    confined += c.kernels.iter().map(|k| k.kernel.check_sites.len()).sum::<usize>()
                }
                _ => {
                    instrumented +=
                        c.kernels.iter().map(|k| k.kernel.check_sites.len()).sum::<usize>()
                }
            }
            if let Err(e) = ptxvk::spirv::validate(&c.spirv.words) {
                failures.push(format!("{}: spirv-val rejects the {tool} module: {e}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(instrumented > 1000, "only {instrumented} accesses instrumented");
    assert!(racechecked >= 15, "only {racechecked} kernels keep a race shadow");
    assert!(initchecked >= 90, "only {initchecked} modules look up write shadows");
    assert!(confined > 1000, "only {confined} accesses confined");
}

/// A snapshot without its case is a deleted case whose expectation lingers.
#[test]
fn every_snapshot_has_a_case() {
    let cases: Vec<Case> = cases().into_iter().filter(|c| c.snapshot).collect();
    let mut orphans = Vec::new();
    for stage in ["ir", "structured", "spvasm"] {
        // Only the emulated cases have an `ir` snapshot (it does not depend on the mode).
        let names: Vec<&str> = cases
            .iter()
            .filter(|c| stage != "ir" || c.target == Target::default())
            .map(|c| c.name.as_str())
            .collect();
        let root = repo().join("tests/out").join(stage);
        if !root.exists() {
            continue;
        }
        for dir in sorted_entries(&root) {
            for f in sorted_entries(&dir) {
                let name = format!("{}/{}", file_stem(&dir), file_stem(&f));
                if !names.contains(&name.as_str()) {
                    orphans.push(f.strip_prefix(repo()).unwrap_or(&f).display().to_string());
                }
            }
        }
    }
    if snapshot::bless() {
        for o in &orphans {
            std::fs::remove_file(repo().join(o)).expect("removing an orphaned snapshot");
        }
        return;
    }
    assert!(orphans.is_empty(), "snapshots without a case (BLESS=1 removes them): {orphans:?}");
}

/// The IR text format is faithful: every kernel semantic analysis makes from the
/// corpus ([`TOO_LARGE`] included) prints, parses back and prints the same, and the parsed kernel lowers to the
/// same structured IR as the original, with warps emulated and native.
#[test]
fn ir_text_round_trips_over_the_corpus() {
    let mut kernels = 0;
    let mut failures = Vec::new();
    for case in cases().into_iter().filter(|c| c.target == Target::default()) {
        let sources = sources(&case);
        let module = ptxvk::compile::parse_linked(&sources).expect("the case parses");
        let sema_kernels = match ptxvk::lower::sema::run(&module) {
            Ok(ir) => ir.kernels,
            Err(d) => {
                failures.push(format!("{}: sema failed: {:?}", case.name, d.0));
                continue;
            }
        };
        for k in sema_kernels {
            kernels += 1;
            let printed = text::print(&k);
            let parsed = match text::parse(&printed) {
                Ok(mut v) if v.len() == 1 => v.remove(0),
                Ok(v) => {
                    failures.push(format!("{} {}: parsed {} kernels", case.name, k.name, v.len()));
                    continue;
                }
                Err(d) => {
                    let line = printed[..d.span.start as usize].lines().count() + 1;
                    failures.push(format!(
                        "{} {}: line {line}: {}\n{}",
                        case.name,
                        k.name,
                        d.message,
                        printed.lines().nth(line - 1).unwrap_or("")
                    ));
                    continue;
                }
            };
            let reprinted = text::print(&parsed);
            if reprinted != printed {
                failures.push(format!(
                    "{} {}: print(parse(text)) differs:\n{}",
                    case.name,
                    k.name,
                    snapshot::line_diff(&printed, &reprinted)
                ));
                continue;
            }
            // Native warps make subgroup operations of the exchanges; emulated ones
            // warp barriers and scratch loads; a target without f64 `.soft` arithmetic.
            let targets = [
                Target::with_warp_mode(WarpMode::Emulated),
                Target::with_warp_mode(WarpMode::Native),
                Target::portable(),
            ];
            for target in targets {
                let lowered = |k| {
                    ptxvk::lower::pass::run(k, &target)
                        .map(|l| text::print_structured(&l.kernel, &l.body))
                        .map_err(|d| {
                            format!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>())
                        })
                };
                if lowered(k.clone()) != lowered(parsed.clone()) {
                    failures.push(format!(
                        "{} {}: lowering the parsed IR ({target:?}) differs",
                        case.name, k.name,
                    ));
                }
            }
        }
    }
    assert!(kernels >= 80, "only {kernels} kernels in the corpus");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
}
