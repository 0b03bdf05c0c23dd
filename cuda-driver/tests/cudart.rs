//! NVIDIA's CUDA runtime on this library (issue #35): a program that nvcc builds with its
//! defaults (the static runtime, compute_75 PTX embedded) runs unmodified with this
//! library first on the loader path, and computes what a CPU model does; a SASS-only
//! build fails with the message saying how to rebuild. Private tables this library
//! does not know are an error, never a crash. Every private-table slot this library
//! answers is called by one of NVIDIA's runtimes 11.8, 12.9 and 13.5, and no other.
//!
//! nvcc is found as `common::nvcc` says; without it the runtime tests skip loudly,
//! except under CI, where that is a failure.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::nvcc::{nvcc, repo, scratch};

/// Builds `tests/data/cudart_vadd.cu` with `gencode` (and `extra` flags) into `dir`.
fn build(nvcc: &Path, dir: &Path, gencode: &str, extra: &[String]) -> PathBuf {
    let source = repo().join("cuda-driver/tests/data/cudart_vadd.cu");
    let mut flags = vec!["-gencode".to_string(), gencode.to_string()];
    flags.extend_from_slice(extra);
    common::nvcc::build(nvcc, dir, &source, "cudart_vadd", &flags)
}

/// Runs `exe` with this library as the system's CUDA driver, tracing its calls.
fn run(exe: &Path, dir: &Path) -> (bool, String, String) {
    let ran = common::nvcc::run(exe, dir, &[("PTXVK_LOG", "driver")]);
    (ran.ok, ran.stdout, ran.stderr)
}

#[test]
fn an_nvcc_program_with_the_static_runtime_runs_unmodified() {
    if !common::init_context(&common::library()) {
        return;
    }
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("cudart", "ptx");
    let exe = build(&nvcc, &dir, "arch=compute_75,code=compute_75", &[]);
    let (ok, stdout, stderr) = run(&exe, &dir);
    assert!(ok, "the program failed:\n{stdout}\n{stderr}");
    check_vadd_output(&stdout, &stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The program's standard output against the CPU model, and the trace (PTXVK_LOG=driver)
/// showing the runtime's tables.
fn check_vadd_output(stdout: &str, stderr: &str) {
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some(format!("devices 1 driver {}", cuda::DRIVER_VERSION).as_str()));
    // The CPU model: c = 2a + b in f32 (2a is exact, so fused or not it rounds once).
    for i in 0..1000u16 {
        let a = f32::from(i) * 0.37 - 20.0;
        let b = 1.0 / f32::from(i + 1);
        let want = format!("{:08x}", (2.0 * a + b).to_bits());
        assert_eq!(lines.next(), Some(want.as_str()), "c[{i}]\n{stderr}");
    }
    assert_eq!(lines.next(), Some("done"));
    assert!(stderr.contains("cuGetExportTable {6bd5fb6c-5bf4-e74a-8987-d93912fd9df9}"), "{stderr}");
    assert!(stderr.contains("integrity check"), "{stderr}");
}

/// The same program against the shared runtime (`-cudart shared`, `libcudart.so.13` from
/// nvcc's own directory), which also calls the runtime interface's slot 12.
#[test]
fn an_nvcc_program_with_the_shared_runtime_runs_unmodified() {
    if !common::init_context(&common::library()) {
        return;
    }
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("cudart", "shared");
    // nvcc links `-lcudart`: a `libcudart.so` beside the program, and the loader finds
    // `libcudart.so.13` there too.
    let shared = common::nvcc::shared_runtime(&nvcc, &dir);
    let exe = build(&nvcc, &dir, "arch=compute_75,code=compute_75", &shared);
    let (ok, stdout, stderr) = run(&exe, &dir);
    assert!(ok, "the program failed:\n{stdout}\n{stderr}");
    check_vadd_output(&stdout, &stderr);
    assert!(stderr.contains("runtime interface slot 12"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sass_only_program_is_told_how_to_embed_ptx() {
    if !common::init_context(&common::library()) {
        return;
    }
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("cudart", "sass");
    let exe = build(&nvcc, &dir, "arch=compute_75,code=sm_75", &[]);
    let (ok, stdout, stderr) = run(&exe, &dir);
    assert!(!ok, "a SASS-only program cannot run:\n{stdout}");
    // cudaErrorNoKernelImageForDevice (209), from CUDA_ERROR_NO_BINARY_FOR_GPU.
    assert!(stdout.contains("(209)"), "{stdout}\n{stderr}");
    assert!(stderr.contains("code=compute_XX"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

type GetExportTable = unsafe extern "C" fn(*mut *const std::ffi::c_void, *const [u8; 16]) -> i32;

#[test]
fn an_unknown_table_is_an_error_not_a_crash() {
    let lib = common::library();
    // SAFETY: the library's export, with this signature.
    let get: libloading::Symbol<'_, GetExportTable> =
        unsafe { lib.get(b"cuGetExportTable\0") }.expect("exported");
    let mut table = std::ptr::dangling::<std::ffi::c_void>();
    // SAFETY: valid pointers.
    let r = unsafe { get(&mut table, &[0x5a; 16]) };
    assert_eq!(r, common::INVALID_VALUE);
    assert!(table.is_null());
    // SAFETY: null arguments are checked.
    assert_eq!(unsafe { get(std::ptr::null_mut(), std::ptr::null()) }, common::INVALID_VALUE);
    // A known table: the runtime interface, whose first slot is its size.
    let id = [
        0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
        0xf9,
    ];
    // SAFETY: valid pointers.
    assert_eq!(unsafe { get(&mut table, &id) }, common::SUCCESS);
    // SAFETY: the table's first slot.
    assert_eq!(unsafe { *table.cast::<usize>() }, 13 * 8);
}

/// Private-table slots in a trace (`PTXVK_LOG=driver`): (table, slot).
#[derive(Debug, Default)]
struct Slots {
    /// Answered slots that were called (`TABLE slot N: ...`).
    called: BTreeSet<(String, usize)>,
    /// Unknown slots that were called (`TABLE slot N: unknown, ...`).
    unknown: BTreeSet<(String, usize)>,
    /// The answered slots of the tables the runtime was handed
    /// (`cuGetExportTable ... (TABLE) -> ..., answers slots [..]`).
    answered: BTreeSet<(String, usize)>,
}

impl Slots {
    fn read(&mut self, trace: &str) {
        for line in trace.lines().filter_map(|l| l.strip_prefix("ptxvk libcuda trace: ")) {
            if let Some(rest) = line.strip_prefix("cuGetExportTable ") {
                let Some((name, answers)) = rest.split_once(" (").and_then(|(_, r)| {
                    let (name, r) = r.split_once(") -> ")?;
                    Some((name, r.split_once("answers slots [")?.1.strip_suffix(']')?))
                }) else {
                    continue;
                };
                for n in answers.split(", ").filter(|n| !n.is_empty()) {
                    self.answered.insert((name.to_string(), n.parse().expect("a slot number")));
                }
            } else if let Some((table, rest)) = line.split_once(" slot ") {
                let (number, tail) = rest.split_once(':').unwrap_or((rest, ""));
                let Ok(slot) = number.parse::<usize>() else { continue };
                let key = (table.to_string(), slot);
                if tail.trim_start().starts_with("unknown") {
                    self.unknown.insert(key);
                } else {
                    self.called.insert(key);
                }
            }
        }
    }
}

/// `tests/data/registered_fatbin.c`, a host program as nvcc writes them that loads any
/// version of NVIDIA's shared runtime with dlopen, built with the C compiler.
fn build_registered_fatbin(dir: &Path) -> PathBuf {
    let exe = dir.join("registered_fatbin");
    let source = repo().join("cuda-driver/tests/data/registered_fatbin.c");
    let out = std::process::Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&source)
        .arg("-ldl")
        .output()
        .expect("cc runs");
    assert!(out.status.success(), "cc failed:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// Every private-table slot this library answers is called by NVIDIA's own runtimes,
/// and they call no slot it does not answer: 11.8 and 12.9 (from PyPI) and 13.5 (nvcc's)
/// as shared libraries under a hand-written host program that registers a fatbin the
/// way nvcc's host code does, and 13.5 statically linked into an nvcc-built program.
/// Each program computes what its CPU model does; the slots are read from the trace.
#[test]
fn every_answered_table_slot_is_called_by_nvidias_runtimes() {
    if !common::init_context(&common::library()) {
        return;
    }
    let Some(nvcc) = nvcc() else { return };
    let (Some(cudart11), Some(cudart12)) =
        (common::nvcc::older_runtime(11), common::nvcc::older_runtime(12))
    else {
        return;
    };
    let cudart13 = nvcc.parent().and_then(Path::parent).map(|p| p.join("lib/libcudart.so.13"));
    let cudart13 = cudart13.filter(|p| p.is_file()).expect("nvcc's libcudart.so.13");
    let dir = scratch("cudart", "slots");
    let host = build_registered_fatbin(&dir);
    let fatbin = repo().join("cuda-driver/tests/data/scale.ptx75.fatbin");
    let mut all = Slots::default();
    let trace = [("PTXVK_LOG", "driver")];
    for (runtime, version) in
        [(&cudart11, "runtime 11080"), (&cudart12, "runtime 12090"), (&cudart13, "runtime 13050")]
    {
        let ran = common::nvcc::run_with_args(&host, &[&fatbin, runtime], &dir, &trace);
        assert!(
            ran.ok && ran.stdout.lines().any(|l| l == "PASS") && ran.stdout.contains(version),
            "{}:\n{}\n{}",
            runtime.display(),
            ran.stdout,
            ran.stderr
        );
        let mut slots = Slots::default();
        slots.read(&ran.stderr);
        assert!(slots.unknown.is_empty(), "{version} called unknown slots {:?}", slots.unknown);
        // What distinguishes the runtimes: 11.8 loads modules through the runtime
        // interface; the shared 13.x loads no compilers.
        let rt = |n: usize| ("runtime interface".to_string(), n);
        if version == "runtime 11080" {
            assert!(slots.called.contains(&rt(6)) && slots.called.contains(&rt(7)), "{slots:?}");
        }
        if version == "runtime 13050" {
            assert!(slots.called.contains(&rt(12)), "{slots:?}");
        }
        all.called.extend(slots.called);
        all.answered.extend(slots.answered);
    }
    let exe = build(&nvcc, &dir, "arch=compute_75,code=compute_75", &[]);
    let (ok, stdout, stderr) = run(&exe, &dir);
    assert!(ok, "the static-runtime program failed:\n{stdout}\n{stderr}");
    check_vadd_output(&stdout, &stderr);
    let mut slots = Slots::default();
    slots.read(&stderr);
    assert!(slots.unknown.is_empty(), "static 13.5 called unknown slots {:?}", slots.unknown);
    all.called.extend(slots.called);
    all.answered.extend(slots.answered);
    assert!(!all.answered.is_empty(), "the trace names the answered slots");
    let never_called: Vec<_> = all.answered.difference(&all.called).collect();
    assert!(never_called.is_empty(), "answered but never called: {never_called:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
