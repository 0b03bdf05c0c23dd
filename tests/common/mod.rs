//! Shared helpers of the end-to-end tests: the device (or a loud skip), the corpus,
//! a deterministic random generator, and running a launch through the Rust API and
//! through `ptxvk run --spec`, both checked against a CPU reference.
#![allow(dead_code)]

pub mod atomics_cases;
pub mod cases;
mod data;
pub mod float_ref;
pub mod math_cases;

pub use data::*;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ptxvk::spec::{hex_encode, ElemType, SpecArg};
use ptxvk::{Device, Module};

/// The default device, or `None` (after a loud message) when the machine has no Vulkan
/// device. Under CI (`CI` set) a missing device is a failure: CI installs lavapipe.
pub fn device() -> Option<Device> {
    static DEVICE: OnceLock<Option<Device>> = OnceLock::new();
    DEVICE
        .get_or_init(|| match Device::default_device() {
            Ok(d) => Some(d),
            Err(ptxvk::Error::Runtime(e)) if e.is_no_device() => {
                if std::env::var_os("CI").is_some() {
                    panic!("CI must have a Vulkan device (lavapipe): {e}");
                }
                // Straight to the stderr handle: libtest would hide an eprintln! of a
                // passing test, and a skip must be seen.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "\nSKIPPED: no Vulkan device on this machine: {e}\n*** install mesa-vulkan-drivers and libvulkan1 to run the end-to-end tests\n"
                );
                None
            }
            Err(e) => panic!("opening the Vulkan device failed: {e}"),
        })
        .clone()
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The checked-in compilations of `tests/kernels/NAME.cu`, sorted.
pub fn variants(name: &str) -> Vec<PathBuf> {
    builds(name, 6)
}

/// The checked-in compilations of `tests/kernels/NAME.cu`, sorted; there must be
/// `count` of them.
pub fn builds(name: &str, count: usize) -> Vec<PathBuf> {
    let dir = repo().join("tests").join("kernels");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/kernels exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let f = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
            f.starts_with(&format!("{name}.")) && f.ends_with(".ptx")
        })
        .collect();
    v.sort();
    assert_eq!(v.len(), count, "{name}: expected {count} compiler variants, found {v:?}");
    v
}

/// Compiles `ptx` (validating the SPIR-V with spirv-val) and loads it on `device`.
pub fn load(device: &Device, path: &Path) -> Module {
    load_for(device, path, device.target())
}

/// [`load`], compiled for `target` instead of the device's own.
pub fn load_for(device: &Device, path: &Path, target: ptxvk::compile::Target) -> Module {
    let text = std::fs::read_to_string(path).expect("read PTX");
    let compiled = ptxvk::compile::compile_with(&path.display().to_string(), &text, None, target)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // Compiled without f64, nothing of the kernel may need it.
    assert!(
        target.float64 || !compiled.spirv.requirements.float64,
        "{}: compiled without f64 but needs shaderFloat64",
        path.display()
    );
    ptxvk::spirv::validate(&compiled.spirv.words)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Module::from_compiled(device, compiled).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `path` compiled in every warp mode (native, split, emulated), each validated with
/// spirv-val: the modes and their SPIR-V words.
pub fn compile_every_warp_mode(path: &Path) -> Vec<(ptxvk::compile::WarpMode, Vec<u32>)> {
    use ptxvk::compile::{compile_with, Target, WarpMode};
    let text = std::fs::read_to_string(path).expect("read PTX");
    let name = path.display().to_string();
    [WarpMode::Native, WarpMode::Split, WarpMode::Emulated]
        .into_iter()
        .map(|mode| {
            let c = compile_with(&name, &text, None, Target::with_warp_mode(mode))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            ptxvk::spirv::validate(&c.spirv.words)
                .unwrap_or_else(|e| panic!("{name} {mode:?}: {e}"));
            (mode, c.spirv.words)
        })
        .collect()
}

/// Runs `case` through the Rust API and returns (launch stats, buffer bytes by arg).
pub fn run_api(
    device: &Device,
    path: &Path,
    entry: &str,
    case: &Case,
) -> (ptxvk::LaunchStats, Vec<(usize, Vec<u8>)>) {
    run_api_for(device, path, entry, case, device.target())
}

/// [`run_api`] with the module compiled for `target`.
pub fn run_api_for(
    device: &Device,
    path: &Path,
    entry: &str,
    case: &Case,
    target: ptxvk::compile::Target,
) -> (ptxvk::LaunchStats, Vec<(usize, Vec<u8>)>) {
    let module = load_for(device, path, target);
    let kernel = module.kernel(entry).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ptxvk::run::launch_with_args(
        device,
        &kernel,
        case.grid,
        case.block,
        case.shared_bytes,
        &case.args,
    )
    .unwrap_or_else(|e| panic!("{}: launch failed: {e}", path.display()))
}

/// The launch as a spec JSON document.
pub fn spec_json(path: &Path, entry: &str, case: &Case) -> serde_json::Value {
    let args: Vec<serde_json::Value> = case
        .args
        .iter()
        .map(|a| match a {
            SpecArg::Buffer { ty, bytes } => {
                serde_json::json!({"buffer": ty.name(), "hex": hex_encode(bytes)})
            }
            SpecArg::Value(v) => serde_json::json!({"bytes": hex_encode(v)}),
            SpecArg::Uninitialized { ty, len } => {
                serde_json::json!({"buffer": ty.name(), "len": len, "uninitialized": true})
            }
            SpecArg::Texture { ty, bytes, sampler } => {
                let mode = |m: &ptxvk::AddressMode| format!("{m:?}").to_lowercase();
                serde_json::json!({
                    "texture": ty.name(), "hex": hex_encode(bytes), "size": sampler.size,
                    "channels": sampler.channels, "layers": sampler.layers,
                    "filter": if sampler.linear { "linear" } else { "point" },
                    "address": sampler.address.iter().map(mode).collect::<Vec<_>>(),
                    "normalized_coords": sampler.normalized_coords,
                    "read_normalized": sampler.read_normalized, "border": sampler.border,
                    "srgb": sampler.srgb,
                })
            }
        })
        .collect();
    serde_json::json!({
        "ptx": path, "entry": entry, "grid": case.grid, "block": case.block,
        "shared_bytes": case.shared_bytes, "args": args,
    })
}

/// Runs `case` through `ptxvk run --spec … --json` and returns buffer bytes by arg.
pub fn run_cli(path: &Path, entry: &str, case: &Case) -> Vec<(usize, Vec<u8>)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = dir.path().join("launch.json");
    std::fs::write(&spec, spec_json(path, entry, case).to_string()).expect("write spec");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .args(["run", "--spec"])
        .arg(&spec)
        .arg("--json")
        .output()
        .expect("run ptxvk");
    assert!(
        out.status.success(),
        "{}: ptxvk run failed ({}):\n{}",
        path.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(v["entry"], entry);
    v["buffers"]
        .as_array()
        .expect("buffers")
        .iter()
        .map(|b| {
            let arg = b["arg"].as_u64().expect("arg") as usize;
            let bytes =
                ptxvk::spec::hex_decode(b["hex"].as_str().expect("hex")).expect("hex decodes");
            (arg, bytes)
        })
        .collect()
}

/// Compares results with the reference, reporting the first differing element.
pub fn check(what: &str, ty: ElemType, got: &[(usize, Vec<u8>)], expected: &[(usize, Vec<u8>)]) {
    for (arg, want) in expected {
        let Some((_, have)) = got.iter().find(|(a, _)| a == arg) else {
            panic!("{what}: no buffer for argument {arg}")
        };
        assert_eq!(have.len(), want.len(), "{what}: argument {arg} size");
        if have != want {
            let n = ty.size();
            let i = have.chunks(n).zip(want.chunks(n)).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "{what}: argument {arg} differs first at element {i}: got {} (0x{}), expected {} (0x{})",
                ty.decode(&have[i * n..]),
                hex_encode(&have[i * n..(i + 1) * n]),
                ty.decode(&want[i * n..]),
                hex_encode(&want[i * n..(i + 1) * n])
            );
        }
    }
}

/// Runs `case` for every compiler variant of `kernel`, through the API and the CLI.
pub fn run_all_variants(
    kernel: &str,
    entry_of: impl Fn(&Path) -> String,
    ty: ElemType,
    case: &Case,
) {
    let Some(device) = device() else { return };
    for path in variants(kernel) {
        let entry = entry_of(&path);
        let what = path.file_name().and_then(|f| f.to_str()).unwrap_or("?").to_string();
        let (_, got) = run_api(&device, &path, &entry, case);
        check(&format!("{what} (Rust API)"), ty, &got, &case.expected);
        let got = run_cli(&path, &entry, case);
        check(&format!("{what} (ptxvk run --spec)"), ty, &got, &case.expected);
    }
}
