//! `ptxvk doctor`: checks what ptxvk needs on this machine and says, one line per
//! problem, what to install or change: the Vulkan loader, the devices and what their
//! driver-bug probes found, confinement on CPU devices, SPIRV-Tools, the driver library
//! `ptxvk exec` uses, and optionally a Python environment of CUDA clients (`--venv`),
//! in which it runs one numba-cuda kernel through the driver library.

use std::path::Path;
use std::process::{Command, Stdio};

use ptxvk::vk::{DeviceSelector, DeviceType};

/// A kernel through numba-cuda, checked on the host: what the venv check runs.
const NUMBA_PROBE: &str = "\
import numpy as np
from numba import cuda
@cuda.jit
def add(a, b, c):
    i = cuda.grid(1)
    if i < a.size:
        c[i] = a[i] + b[i]
a = np.arange(1000, dtype=np.float32); b = 2 * a; c = np.zeros_like(a)
add[8, 128](a, b, c)
assert (c == a + b).all(), 'wrong sums'
name = cuda.get_current_device().name
print(name.decode() if isinstance(name, bytes) else name)
";

/// What one check found.
enum Finding {
    Ok(String),
    /// What is wrong, and what to do about it.
    Problem(String, String),
}

/// Runs every check and prints its findings; `Err` (exit 1) when any found a problem.
pub(crate) fn run(venv: Option<&Path>) -> Result<(), (u8, anyhow::Error)> {
    let mut findings = devices();
    findings.push(spirv_tools());
    let library = driver_library();
    let have_library = matches!(library, Finding::Ok(_));
    findings.push(library);
    if let Some(venv) = venv {
        findings.extend(client_venv(venv, have_library));
    }
    let mut problems = 0;
    for f in &findings {
        match f {
            Finding::Ok(what) => println!("ok       {what}"),
            Finding::Problem(what, fix) => {
                problems += 1;
                println!("PROBLEM  {what}: {fix}");
            }
        }
    }
    match problems {
        0 => Ok(()),
        n => Err((1, anyhow::anyhow!("{n} problem(s) found"))),
    }
}

/// The Vulkan loader, each device, its probes and, on a CPU device, confinement.
fn devices() -> Vec<Finding> {
    let list = match ptxvk::vk::enumerate_devices() {
        Ok(list) => list,
        Err(e) => {
            return vec![Finding::Problem(
                format!("no Vulkan loader ({e})"),
                "install it: `apt-get install libvulkan1` (Debian, Ubuntu)".into(),
            )]
        }
    };
    let mut findings = vec![Finding::Ok("Vulkan loader".into())];
    if list.is_empty() {
        findings.push(Finding::Problem(
            "no Vulkan device".into(),
            "install a Vulkan driver; for the CPU, Mesa's lavapipe: `apt-get install \
             mesa-vulkan-drivers` (`scripts/setup` takes Mesa 25 on Debian 12)"
                .into(),
        ));
    }
    for info in &list {
        let name = format!("device {}: {} ({})", info.index, info.name, info.driver_info);
        let device = match ptxvk::Device::open(&DeviceSelector::Index(info.index)) {
            Ok(d) => d,
            Err(e) => {
                findings.push(Finding::Problem(
                    format!("{name} cannot be opened: {e}"),
                    "ptxvk needs Vulkan 1.3 with buffer device addresses; update the driver".into(),
                ));
                continue;
            }
        };
        findings.push(Finding::Ok(name.clone()));
        for probe in device.findings().report(device.info()) {
            // A driver bug that fails launches (`guarded`: long loops; `refused`) is the
            // user's to act on; one `worked around` costs speed only.
            if matches!(probe.status, "guarded" | "refused") {
                findings.push(Finding::Problem(
                    format!("{name}: probe {}: {}", probe.name, probe.summary),
                    "use a driver without this bug; for lavapipe on Debian 12, Mesa 25 \
                     from bookworm-backports (`apt-get install -t bookworm-backports \
                     mesa-vulkan-drivers`, or `scripts/setup`)"
                        .into(),
                ));
            }
        }
        if info.device_type == DeviceType::Cpu && device.vk().confinement().is_none() {
            findings.push(Finding::Problem(
                format!("{name} runs kernels in this process but cannot confine them"),
                "unchecked kernels may reach any host memory; use a driver with \
                 VK_EXT_external_memory_host (Mesa's lavapipe has it), or run untrusted \
                 kernels with PTXVK_CHECK=memcheck"
                    .into(),
            ));
        }
    }
    findings
}

/// `spirv-val`, which the tests and `make test` use.
fn spirv_tools() -> Finding {
    let found = Command::new("spirv-val")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        Finding::Ok("SPIRV-Tools (spirv-val)".into())
    } else {
        Finding::Problem(
            "no spirv-val on PATH (the tests validate every SPIR-V module with it)".into(),
            "install SPIRV-Tools: `apt-get install spirv-tools`".into(),
        )
    }
}

/// The driver library `ptxvk exec` puts first on the loader path.
fn driver_library() -> Finding {
    match crate::exec::libcuda_dir() {
        Ok(dir) => Finding::Ok(format!("driver library ({})", dir.join("libcuda.so.1").display())),
        Err(e) => Finding::Problem("no driver library for `ptxvk exec`".into(), format!("{e:#}")),
    }
}

/// A Python environment of CUDA clients: its interpreter, numba-cuda without nvJitLink,
/// and one numba kernel through the driver library.
fn client_venv(venv: &Path, have_library: bool) -> Vec<Finding> {
    let python = venv.join("bin").join("python");
    if !python.exists() {
        return vec![Finding::Problem(
            format!("no Python at {}", python.display()),
            format!("create the environment: `python3 -m venv {}`", venv.display()),
        )];
    }
    let has = |module: &str| {
        let code = format!(
            "import importlib.util, sys; sys.exit(importlib.util.find_spec('{module}') is None)"
        );
        Command::new(&python)
            .args(["-c", &code])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let pip = venv.join("bin").join("pip");
    let mut findings = Vec::new();
    if !has("numba.cuda") {
        findings.push(Finding::Problem(
            format!("no numba-cuda in {}", venv.display()),
            format!(
                "`{} install numpy numba-cuda \"cuda-bindings==12.9.*\" \
                 \"nvidia-cuda-nvrtc-cu12==12.9.*\" \"nvidia-cuda-nvcc-cu12==12.9.*\"`",
                pip.display()
            ),
        ));
        return findings;
    }
    if has("nvidia.nvjitlink") {
        findings.push(Finding::Problem(
            format!("nvJitLink is installed in {}", venv.display()),
            format!(
                "numba-cuda then links kernels to SASS itself instead of handing the driver \
                 PTX; `{} uninstall nvidia-nvjitlink-cu12`",
                pip.display()
            ),
        ));
    }
    if !have_library {
        return findings;
    }
    let Ok(exe) = std::env::current_exe() else { return findings };
    let out = Command::new(exe)
        .args(["exec", "--"])
        .arg(&python)
        .args(["-c", NUMBA_PROBE])
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => findings.push(Finding::Ok(format!(
            "numba-cuda in {} ran a kernel on {}",
            venv.display(),
            String::from_utf8_lossy(&o.stdout).trim()
        ))),
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
            findings.push(Finding::Problem(
                format!(
                    "numba-cuda in {} could not run a kernel ({})",
                    venv.display(),
                    last.trim()
                ),
                "run `ptxvk exec --verbose -- python app.py` to see the settings, and \
                 PTXVK_LOG=driver for the driver calls"
                    .into(),
            ))
        }
        Err(e) => findings.push(Finding::Problem(
            format!("cannot run {}: {e}", python.display()),
            "check the environment's interpreter".into(),
        )),
    }
    findings
}
