//! `ptxvk compare` end to end (issue #18): a launch spec run on two Vulkan "devices"
//! that must agree (lavapipe, and lavapipe with f64 masked, whose exact f32 arithmetic
//! takes the integer path), and against a golden file with a difference planted in it,
//! which the report must find exactly: its index, both values, its ULP distance, and the
//! verdict against the tolerance (exit code 5 beyond it, 0 within).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

/// `ptxvk compare ARGS` from the repository root.
fn compare(args: &[&str]) -> Output {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .current_dir(repo())
        .args(&all)
        .output()
        .expect("the ptxvk binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The inputs of the spec, and `c = a + b` computed on the host (exact in f32).
const A: [f32; 8] = [1.0, 2.5, -3.0, 4.0e-3, 5.0, 6.0e10, 7.0, -0.0];
const B: [f32; 8] = [0.5, 0.25, 1.0, 2.0, 3.0e-7, 4.0, 5.0, 0.0];

/// A spec for `vector_add` over A and B in `dir`.
fn write_spec(dir: &Path) -> std::path::PathBuf {
    let ptx = repo().join("tests/kernels/vector_add.nvcc.sm_75.ptx");
    let spec = serde_json::json!({
        "ptx": ptx, "entry": "vector_add", "grid": 1, "block": 64,
        "args": [
            {"buffer": "f32", "data": A.to_vec()},
            {"buffer": "f32", "data": B.to_vec()},
            {"buffer": "f32", "len": 8},
            {"scalar": "s32", "value": 8},
        ],
    });
    let path = dir.join("spec.json");
    std::fs::write(&path, spec.to_string()).expect("write the spec");
    path
}

#[test]
fn two_devices_agree_and_a_planted_golden_difference_is_found_exactly() {
    if device().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ptxvk-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let spec = write_spec(&dir);
    let spec = spec.to_str().expect("UTF-8 path");

    // lavapipe against lavapipe without f64: the same bits.
    let out = compare(&[spec, "--on", "0,0+mask=shaderFloat64"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}{}", text(&out.stderr));
    assert!(report.contains("float integer"), "the masked device took the integer path:\n{report}");
    assert_eq!(report.matches("exact match").count(), 3, "{report}");
    assert!(report.ends_with("verdict: agree\n"), "{report}");

    // Record golden outputs; they hold the host's c = a + b.
    let golden = dir.join("golden.json");
    let golden_path = golden.to_str().expect("UTF-8 path");
    let out = compare(&[spec, "--record", golden_path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(&golden).expect("golden")).expect("JSON");
    let c_hex = recorded["buffers"][2]["hex"].as_str().expect("c").to_string();
    let want: Vec<u8> = A.iter().zip(B).flat_map(|(a, b)| (a + b).to_le_bytes()).collect();
    assert_eq!(c_hex, want.iter().map(|b| format!("{b:02x}")).collect::<String>());

    // Plant one difference: element 5 one float up.
    let planted = (A[5] + B[5]).next_up();
    let mut bytes = want.clone();
    bytes[20..24].copy_from_slice(&planted.to_le_bytes());
    recorded["buffers"][2]["hex"] =
        Value::from(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
    std::fs::write(&golden, recorded.to_string()).expect("plant");

    let out = compare(&[spec, "--golden", golden_path, "--json"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    let report: Value = serde_json::from_str(text(&out.stdout).trim()).expect("JSON report");
    assert_eq!(report["agrees"], Value::Bool(false));
    let buffers = report["comparisons"][0]["comparison"]["buffers"].as_array().expect("buffers");
    assert_eq!(buffers.len(), 3);
    for c in buffers {
        let arg = &c["arg"];
        if arg == 2 {
            assert_eq!((c["differing"].as_u64(), c["max_ulp"].as_u64()), (Some(1), Some(1)));
            let first = &c["first"][0];
            assert_eq!(first["index"], 5);
            assert_eq!(first["left"].as_f64(), Some(f64::from(planted)));
            assert_eq!(first["right"].as_f64(), Some(f64::from(A[5] + B[5])));
            assert_eq!(first["distance"]["ulp"], 1);
            assert_eq!(c["agrees"], Value::Bool(false));
        } else {
            assert_eq!(c["differing"], 0, "arg {arg}");
        }
    }
    // Within a tolerance of 1 ULP it agrees; the text names the element.
    let out = compare(&[spec, "--golden", golden_path, "--ulp", "1"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains("1 differ, max 1 ULP"), "{report}");
    assert!(report.contains("within tolerance (1 ULP)"), "{report}");
    assert!(report.contains("[5] "), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_usage_errors_are_exit_code_2() {
    let out = compare(&["tests/no-such-spec.json", "--on", "0,1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let dir = std::env::temp_dir().join(format!("ptxvk-compare-usage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let spec = write_spec(&dir);
    let spec = spec.to_str().expect("UTF-8 path");
    let out = compare(&[spec]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nothing to compare"), "{}", text(&out.stderr));
    let out = compare(&[spec, "--on", "0+warp=wide,0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("warp mode `wide`"), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--cuda` loads the system's libcuda.so.1. Where there is none (CI), that is a
/// device error naming the library; where NVIDIA's driver is installed, its run is the
/// reference and the report names the library file it came from.
#[test]
fn compare_cuda_uses_the_systems_driver_or_says_it_has_none() {
    if device().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ptxvk-compare-cuda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let spec = write_spec(&dir);
    let out = compare(&[spec.to_str().expect("UTF-8 path"), "--cuda"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    match out.status.code() {
        Some(3) => {
            assert!(stderr.contains("cannot load libcuda.so.1 (NVIDIA's CUDA driver)"), "{stderr}")
        }
        Some(0 | 5) => {
            let reference = stdout.lines().next().unwrap_or_default();
            assert!(reference.starts_with("reference: cuda: "), "{stdout}");
            assert!(reference.contains(" from /"), "the library's path: {stdout}");
        }
        other => panic!("exit {other:?}: {stdout}{stderr}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
