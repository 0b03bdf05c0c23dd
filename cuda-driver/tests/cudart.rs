//! NVIDIA's CUDA runtime on this library (issue #35): a program that nvcc builds with its
//! defaults (the static runtime, compute_75 PTX embedded) runs unmodified with this
//! library first on the loader path, and computes what a CPU model does; a SASS-only
//! build fails with the message saying how to rebuild. Private tables this library
//! does not know are an error, never a crash.
//!
//! nvcc is found as `common::nvcc` says; without it the runtime tests skip loudly,
//! except under CI, where that is a failure.

mod common;

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
    assert!(stderr.contains("runtime interface 12"), "{stderr}");
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
