//! Programs built with nvcc and run on this library (issue #35): finding nvcc, a scratch
//! directory that holds `libcuda.so.1` (and the shared runtime), building and running.
//!
//! nvcc comes from `PTXVK_NVCC`, `target/nvcc-venv` (`make test` installs CUDA 13's
//! nvcc, runtime and headers there from PyPI) or `PATH`. Without it the tests skip
//! loudly, except under CI (`CI` set), where that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
pub fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// nvcc, or `None` (a loud skip; a failure under CI).
pub fn nvcc() -> Option<PathBuf> {
    let from_env = std::env::var_os("PTXVK_NVCC").map(PathBuf::from);
    let venv = repo().join("target/nvcc-venv/lib");
    let from_venv = std::fs::read_dir(&venv).ok().and_then(|dir| {
        dir.filter_map(Result::ok)
            .map(|e| e.path().join("site-packages/nvidia/cu13/bin/nvcc"))
            .find(|p| p.is_file())
    });
    let from_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|p| p.join("nvcc")).find(|p| p.is_file())
    });
    let found = from_env.or(from_venv).or(from_path);
    if found.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("CI must have nvcc (make test installs it into target/nvcc-venv)");
        }
        // Straight to the stderr handle: libtest hides a passing test's eprintln!.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: no nvcc (set PTXVK_NVCC or install it into target/nvcc-venv)"
        );
    }
    found
}

/// NVIDIA's shared runtime of CUDA `major` (11 or 12) that `scripts/nvcc-env` installs
/// into `target/nvcc-venv/cudart-{major}`, or `None` (a loud skip; a failure under CI).
pub fn older_runtime(major: u32) -> Option<PathBuf> {
    let name =
        if major == 11 { "libcudart.so.11.0".to_string() } else { format!("libcudart.so.{major}") };
    let path =
        repo().join(format!("target/nvcc-venv/cudart-{major}/nvidia/cuda_runtime/lib/{name}"));
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI must have {} (scripts/nvcc-env installs it)", path.display());
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: no CUDA {major} runtime at {} (run scripts/nvcc-env)",
        path.display()
    );
    None
}

/// A fresh scratch directory `ptxvk-{prefix}-{name}-{pid}` holding `libcuda.so.1`, a
/// link to the library Cargo built.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ptxvk-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    std::os::unix::fs::symlink(super::library_path(), dir.join("libcuda.so.1"))
        .expect("libcuda.so.1 link");
    dir
}

/// Links nvcc's own `libcudart.so.13` into `dir` as `libcudart.so` (for nvcc's
/// `-lcudart`) and `libcudart.so.13` (for the loader), and returns the flags that build
/// against it: `-cudart shared -L<dir>`.
pub fn shared_runtime(nvcc: &Path, dir: &Path) -> Vec<String> {
    let runtime = nvcc.parent().and_then(Path::parent).map(|p| p.join("lib/libcudart.so.13"));
    let Some(runtime) = runtime.filter(|p| p.is_file()) else {
        panic!("nvcc's libcudart.so.13 is missing beside {}", nvcc.display())
    };
    for name in ["libcudart.so", "libcudart.so.13"] {
        std::os::unix::fs::symlink(&runtime, dir.join(name)).expect("runtime link");
    }
    vec!["-cudart".into(), "shared".into(), format!("-L{}", dir.display())]
}

/// Builds `source` with `flags` into `dir/exe_name`.
pub fn build(nvcc: &Path, dir: &Path, source: &Path, exe_name: &str, flags: &[String]) -> PathBuf {
    let exe = dir.join(exe_name);
    let out = Command::new(nvcc)
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(source)
        .env("TMPDIR", dir)
        .output()
        .expect("nvcc runs");
    assert!(
        out.status.success(),
        "nvcc failed on {}:\n{}{}",
        source.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// What a program did: whether it exited 0, its standard output and error.
pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `exe` with this library (in `dir`) as the system's CUDA driver, with `env` set.
pub fn run(exe: &Path, dir: &Path, env: &[(&str, &str)]) -> Ran {
    run_with_args(exe, &[], dir, env)
}

/// [`run`] with command-line arguments.
pub fn run_with_args(exe: &Path, args: &[&Path], dir: &Path, env: &[(&str, &str)]) -> Ran {
    let out = Command::new(exe)
        .args(args)
        .env("LD_LIBRARY_PATH", dir)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("the program runs");
    Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
