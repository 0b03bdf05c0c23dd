//! `make demo`: runs every bundled kernel (each compiled by nvcc, NVRTC and clang) on the
//! default Vulkan device and checks it against its CPU reference.
//!
//! Run with `cargo run --release --example demo`; `PTXVK_DEVICE` picks the device.

use std::path::PathBuf;
use std::process::ExitCode;

use ptxvk::{Device, Module};

// The kernels, launches and CPU references of the end-to-end tests.
#[allow(dead_code)]
#[path = "../tests/common/cases.rs"]
mod cases;
#[allow(dead_code)]
#[path = "../tests/common/data.rs"]
mod data;

use data::*;

fn main() -> ExitCode {
    let device = match Device::default_device() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    let info = device.info();
    println!("device: {} ({}, {})", info.name, info.device_type, info.driver_info);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("kernels");
    let mut failures = 0;
    for k in cases::all() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with(&format!("{}.", k.kernel)) && f.ends_with(".ptx"))
        });
        files.sort();
        for path in files {
            let label = path
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or("?")
                .trim_end_matches(".ptx")
                .to_string();
            match run(&device, &path, k.entry, &k.case) {
                Ok((ms, ok)) => {
                    if !ok {
                        failures += 1;
                    }
                    println!(
                        "{label:<34} {:<8} kernel {ms:>8.3} ms",
                        if ok { "correct" } else { "WRONG" }
                    );
                }
                Err(e) => {
                    failures += 1;
                    println!("{label:<34} FAILED: {e}");
                }
            }
        }
    }
    if failures == 0 {
        println!("all kernels match their CPU references bit for bit");
        ExitCode::SUCCESS
    } else {
        println!("{failures} kernel run(s) did not match");
        ExitCode::FAILURE
    }
}

/// Launches one case; returns the kernel time and whether every output matches.
fn run(
    device: &Device,
    path: &std::path::Path,
    entry: &str,
    case: &Case,
) -> Result<(f64, bool), ptxvk::Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ptxvk::Error::Launch(format!("{}: {e}", path.display())))?;
    let module = Module::from_ptx_named(device, &path.display().to_string(), &text)?;
    let kernel = module.kernel(entry)?;
    let (stats, outputs) = ptxvk::run::launch_with_args(
        device,
        &kernel,
        case.grid,
        case.block,
        case.shared_bytes,
        &case.args,
    )?;
    let ok = case.expected.iter().all(|(arg, want)| {
        outputs.iter().find(|(i, _)| i == arg).is_none_or(|(_, got)| got == want)
    });
    Ok((stats.kernel_ms, ok))
}
