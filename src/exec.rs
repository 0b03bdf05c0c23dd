//! `ptxvk exec`: runs a program with ptxvk's `libcuda.so.1` first on the loader path,
//! and with what its CUDA clients need to hand ptxvk PTX rather than cubins (SASS for
//! NVIDIA GPUs, which ptxvk cannot run).
//!
//! | client | setting | why |
//! |---|---|---|
//! | CuPy | `CUPY_COMPILE_WITH_PTX=1` | CuPy's NVRTC kernels become PTX, not cubins |
//! | CuPy | `CUPY_ACCELERATORS=` (empty) | CuPy's own reductions and scans, not CUB's: CuPy ships CUB as compute_100 PTX whose scans and reductions poll other blocks (decoupled look-back) and so run as rounds of ptxvk's block scheduler, with their 37–42 KB of shared memory in device memory on devices with less (lavapipe: 32 KiB); right, but a 10⁶-element sum takes 17 s on lavapipe instead of a fraction of a second |
//! | numba-cuda | `NUMBA_CUDA_ENABLE_PYNVJITLINK=0` | numba-cuda before 0.16 then links through the driver, which gets PTX; later versions use nvJitLink (cubins) whenever it is installed, so leave `nvidia-nvjitlink` out |
//! | NVIDIA Warp | `PTXVK_WARP_CUDA_OUTPUT=ptx`, through a Python start-up hook | `warp.config.cuda_output` has no environment variable |
//! | NVIDIA Warp | the hook sets `PTXVK_CUDA_DRIVER_VERSION` to Warp's CUDA version when unset | Warp hands the driver PTX only when the driver is at least as new as its toolkit |
//!
//! A variable the user has set already is left alone (so each can be overridden), and
//! `--no-client-settings` makes none of them; `--verbose` prints what was set.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// How to run the program.
pub(crate) struct How {
    pub print_path: bool,
    pub verbose: bool,
    pub client_settings: bool,
}

/// An environment variable set for a client, and why.
struct Setting {
    client: &'static str,
    name: &'static str,
    value: &'static str,
    why: &'static str,
}

const SETTINGS: &[Setting] = &[
    Setting {
        client: "CuPy",
        name: "CUPY_COMPILE_WITH_PTX",
        value: "1",
        why: "CuPy's NVRTC kernels are compiled to PTX, not cubins",
    },
    Setting {
        client: "CuPy",
        name: "CUPY_ACCELERATORS",
        value: "",
        why: "CuPy's own reductions and scans rather than CUB's, which poll other blocks \
              (decoupled look-back) and run far slower on ptxvk; CUPY_ACCELERATORS=cub \
              gets CUB back",
    },
    Setting {
        client: "numba-cuda",
        name: "NUMBA_CUDA_ENABLE_PYNVJITLINK",
        value: "0",
        why: "numba-cuda before 0.16 links through the driver, which gets PTX (later \
              versions use nvJitLink, and so cubins, whenever it is installed)",
    },
    Setting {
        client: "NVIDIA Warp",
        name: "PTXVK_WARP_CUDA_OUTPUT",
        value: "ptx",
        why: "the start-up hook on PYTHONPATH sets warp.config.cuda_output to it",
    },
];

/// The Python start-up hook that sets Warp's output (`sitecustomize.py`).
const PYTHON_HOOK: &str = include_str!("exec/sitecustomize.py");

/// Runs `command` (or prints the library's folder); the error is an exit code and why.
pub(crate) fn run(how: How, command: &[String]) -> Result<(), (u8, anyhow::Error)> {
    let dir = libcuda_dir().map_err(|e| (3, e))?;
    if how.print_path {
        println!("{}", dir.display());
        return Ok(());
    }
    let Some((program, args)) = command.split_first() else {
        return Err((2, anyhow::anyhow!("nothing to run: ptxvk exec -- COMMAND [ARGS...]")));
    };
    let mut child = std::process::Command::new(program);
    child.args(args).env("LD_LIBRARY_PATH", prepend(&dir, "LD_LIBRARY_PATH"));
    if how.verbose {
        eprintln!("ptxvk exec: LD_LIBRARY_PATH starts with {}", dir.display());
    }
    if how.client_settings {
        for s in SETTINGS {
            match std::env::var_os(s.name) {
                Some(value) if how.verbose => eprintln!(
                    "ptxvk exec: {} {}={} (kept, set by you; ptxvk's is {})",
                    s.client,
                    s.name,
                    value.to_string_lossy(),
                    s.value
                ),
                Some(_) => {}
                None => {
                    child.env(s.name, s.value);
                    if how.verbose {
                        eprintln!("ptxvk exec: {} {}={}: {}", s.client, s.name, s.value, s.why);
                    }
                }
            }
        }
        let hook = python_hook(&dir).map_err(|e| (3, e))?;
        child.env("PYTHONPATH", prepend(&hook, "PYTHONPATH"));
        if how.verbose {
            eprintln!("ptxvk exec: PYTHONPATH starts with {} (the hook)", hook.display());
            child.env("PTXVK_EXEC_VERBOSE", "1");
        }
    }
    use std::os::unix::process::CommandExt;
    // `exec` returns only on failure.
    let error = child.exec();
    Err((2, anyhow::Error::new(error).context(format!("cannot run `{program}`"))))
}

/// `dir`, then the current value of the path variable `name`, if any.
fn prepend(dir: &std::path::Path, name: &str) -> OsString {
    let mut path = OsString::from(dir);
    if let Some(old) = std::env::var_os(name).filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    path
}

/// The folder holding the Python start-up hook, written next to the library's links
/// (rewritten only when its text changed, so concurrent runs read a whole file).
fn python_hook(libcuda: &std::path::Path) -> anyhow::Result<PathBuf> {
    let dir = libcuda.join("python");
    let file = dir.join("sitecustomize.py");
    if std::fs::read_to_string(&file).ok().as_deref() != Some(PYTHON_HOOK) {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        // Written aside and renamed into place: a reader sees the old file or the new.
        let temporary = dir.join(format!(".sitecustomize.{}.py", std::process::id()));
        std::fs::write(&temporary, PYTHON_HOOK)
            .and_then(|()| std::fs::rename(&temporary, &file))
            .with_context(|| format!("cannot write {}", file.display()))?;
    }
    Ok(dir)
}

/// The folder with `libcuda.so.1` and `libcuda.so` links to the driver library built next
/// to this executable (`PTXVK_LIBCUDA` names another library file); or, as the Python
/// wheel installs it (`scripts/build-wheel`), the `ptxvk-libcuda` folder next to this
/// executable with the library itself as `libcuda.so.1`.
pub(crate) fn libcuda_dir() -> anyhow::Result<PathBuf> {
    let library = match std::env::var_os("PTXVK_LIBCUDA") {
        Some(p) => PathBuf::from(p),
        None => {
            let exe = std::env::current_exe().context("cannot find the ptxvk executable")?;
            let dir = exe.parent().context("the ptxvk executable has no folder")?;
            let packaged = dir.join("ptxvk-libcuda");
            if packaged.join("libcuda.so.1").is_file() && !dir.join("libcuda.so").exists() {
                // Clients that open `libcuda.so` get a link where the folder is writable.
                let _ = std::os::unix::fs::symlink("libcuda.so.1", packaged.join("libcuda.so"));
                return Ok(packaged);
            }
            // `cargo install --path .` installs the command alone: then the release
            // library of the checkout it was built from, where `cargo build --release`
            // puts it.
            let beside = dir.join("libcuda.so");
            let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/libcuda.so");
            if !beside.exists() && checkout.is_file() {
                checkout
            } else {
                beside
            }
        }
    };
    let library = library.canonicalize().with_context(|| {
        format!(
            "ptxvk's driver library is not at {}; build it with `cargo build -p ptxvk-cuda-driver` \
             (same profile as ptxvk; after `cargo install`, `cargo build --release -p \
             ptxvk-cuda-driver` in {}) or set PTXVK_LIBCUDA to its path",
            library.display(),
            env!("CARGO_MANIFEST_DIR")
        )
    })?;
    let dir = library.parent().context("the library has no folder")?.join("ptxvk-libcuda");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for name in ["libcuda.so.1", "libcuda.so"] {
        let link = dir.join(name);
        if std::fs::read_link(&link).ok().as_deref() != Some(library.as_path()) {
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&library, &link)
                .with_context(|| format!("cannot create {}", link.display()))?;
        }
    }
    Ok(dir)
}
