//! The driver-bug probes (`ptxvk::probes`) and what ptxvk does with their answers,
//! end to end: float arithmetic with literal and derived constant operands gives IEEE
//! 754's results through the Rust API and through `ptxvk run`, a loop of 100,000
//! iterations counts right or is refused loudly (never a wrong count), 64-bit compares
//! of sign-extended values are right, and the probes
//! find nothing left wrong once their workarounds apply. Expected values come from the
//! host's own IEEE arithmetic.
//!
//! With `PTXVK_TEST_OLD_MESA_ICD` naming an installed Vulkan ICD file of Mesa 22.3's
//! lavapipe (`scripts/old-mesa` extracts one; `make test` sets it where it exists), the
//! tests run once more on that driver, in a child process with `VK_ICD_FILENAMES` set,
//! and there also assert that each of its bugs is found: the folded constants and the
//! miscompiled sign extensions worked around, the loop limit guarded.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{device, load, load_for, repo};
use ptxvk::lower::pass::FloatConstants;
use ptxvk::{Arg, Device, Error};

/// The ICD file of Mesa 22.3's lavapipe to run the tests on once more.
const OLD_MESA_ICD: &str = "PTXVK_TEST_OLD_MESA_ICD";
/// Set in the child process that runs the tests on Mesa 22.3.
const OLD_MESA_CHILD: &str = "PTXVK_TEST_OLD_MESA_CHILD";

fn on_old_mesa() -> bool {
    std::env::var_os(OLD_MESA_CHILD).is_some()
}

fn drivers(name: &str) -> PathBuf {
    repo().join("tests/drivers").join(name)
}

/// The inputs of `literal_constants.ptx`.
const INPUTS: [f64; 5] = [f64::INFINITY, f64::NAN, -3.0, -0.0, 0.0];

/// What each operation of `literal_constants.ptx` gives under IEEE 754 (to nearest), in
/// its order, on the inputs `x`; `div.approx` (f32 only) of these operands is exact.
fn literal_constants_model(x: [f64; 5], f32_only: bool) -> Vec<f64> {
    let [inf, nan, m3, nz, pz] = x;
    // `x - x` of one register (written so, clippy would take it for a slip).
    let same_register = inf;
    let mut v = vec![
        inf * 0.0,
        nan * 0.0,
        m3 * 0.0,
        nz + 0.0,
        nz * 1.0,
        inf - same_register,
        0.0 - pz,
        m3 / 0.0,
        inf * 0.0,
        m3 * 0.0,
        inf * 0.0,
        nz + 0.0,
        m3.mul_add(0.0, 0.0),
    ];
    if f32_only {
        v.push(0.0 / m3);
    }
    v
}

/// Whether `got` is `want`: the same bits, or both NaN.
fn same(got: f64, want: f64) -> bool {
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

/// Runs `literal_constants.ptx` on `device`, compiled for `target`: the f32 results,
/// and the f64 ones where the device has f64.
fn literal_constants(device: &Device, target: ptxvk::compile::Target) -> (Vec<f64>, Vec<f64>) {
    let module = load_for(device, &drivers("literal_constants.ptx"), target);
    let io: Vec<f32> = INPUTS.iter().map(|&v| v as f32).chain([0.0; 14]).collect();
    let buf = device.buffer_from(&io).expect("buffer");
    let kernel = module.kernel("literal_constants_f32").expect("kernel");
    kernel.launch(1, 1, 0, &[Arg::from(&buf)]).expect("launch");
    let f32s = buf.to_vec().expect("read")[5..].iter().map(|&v| f64::from(v)).collect();
    if !device.info().features.float64 {
        return (f32s, Vec::new());
    }
    let io: Vec<f64> = INPUTS.iter().copied().chain([0.0; 13]).collect();
    let buf = device.buffer_from(&io).expect("buffer");
    let kernel = module.kernel("literal_constants_f64").expect("kernel");
    kernel.launch(1, 1, 0, &[Arg::from(&buf)]).expect("launch");
    (f32s, buf.to_vec().expect("read")[5..].to_vec())
}

/// The results that differ from the model, described.
fn wrong(f32s: &[f64], f64s: &[f64]) -> Vec<String> {
    let x32 = INPUTS.map(|v| f64::from(v as f32));
    let model32: Vec<f64> =
        literal_constants_model(x32, true).iter().map(|&v| f64::from(v as f32)).collect();
    let model64 = literal_constants_model(INPUTS, false);
    let mut out = Vec::new();
    for (width, got, want) in [(32, f32s, &model32), (64, f64s, &model64)] {
        for (k, (g, w)) in got.iter().zip(want.iter()).enumerate() {
            if !same(*g, *w) {
                out.push(format!("f{width} operation {k}: {g:?}, not {w:?}"));
            }
        }
    }
    out
}

/// `mul.rn.f32 %f2, %f1, 0f00000000` for `%f1` = inf is NaN (and the other literal and
/// derived-constant cases are IEEE's), compiled for the device as ptxvk compiles for
/// it: with the operands hidden where the probe found the driver folding them.
#[test]
fn literal_constants_are_exact_through_the_api() {
    let Some(device) = device() else { return };
    let (f32s, f64s) = literal_constants(&device, device.target());
    assert_eq!(f32s.len(), 14);
    let wrong = wrong(&f32s, &f64s);
    assert!(wrong.is_empty(), "{} ({:?})", wrong.join("; "), device.findings());
    if on_old_mesa() {
        // Mesa 22.3 folds `x * 0.0` to 0: the probe found it, and the multiplications'
        // operands are hidden.
        let hidden = device.target().float_constants;
        assert!(hidden.hides(ptxvk::lower::ir::BinaryOp::Mul), "{hidden:?}");
        assert!(device.findings().constants.iter().any(|c| c.starts_with("mul.rn.f32 inf")));
    }
}

/// Without the workaround the driver gets them wrong exactly where the probe says so:
/// the cases are the probe's to find, and the workaround is what makes them right.
#[test]
fn the_probe_finds_what_the_workaround_repairs() {
    let Some(device) = device() else { return };
    let exact =
        ptxvk::compile::Target { float_constants: FloatConstants::Exact, ..device.target() };
    let (f32s, f64s) = literal_constants(&device, exact);
    let unrepaired = wrong(&f32s, &f64s);
    let findings = device.findings();
    assert_eq!(
        unrepaired.is_empty(),
        findings.constants.is_empty(),
        "unrepaired: {unrepaired:?}; the probe: {:?}",
        findings.constants
    );
    if on_old_mesa() {
        assert!(unrepaired.iter().any(|w| w.starts_with("f32 operation 0: 0.0")), "{unrepaired:?}");
    }
    // The probe's own cases, with the device's workaround, are all right.
    let wrong = ptxvk::probes::probe_constants(&device, device.target()).expect("probe runs");
    let texts: Vec<&str> = wrong.iter().map(|w| w.text.as_str()).collect();
    assert!(texts.is_empty(), "{texts:?}");
}

/// For a device whose driver was not probed (`FloatConstants::Repaired`, what `ptxvk
/// compile` assumes), the sums and differences with a zero literal keep IEEE's sign of
/// zero (`-0 + 0` is +0, `0 - +0` is +0, `fma(-3, 0, 0)` is -0 + 0), though the driver
/// may fold them: the backend repairs exactly the sums a fold can change (a zero
/// constant operand), and these are the probe's cases that lavapipe folds.
#[test]
fn unprobed_targets_repair_the_sign_of_zero_sums_with_a_zero_literal() {
    let Some(device) = device() else { return };
    let repaired =
        ptxvk::compile::Target { float_constants: FloatConstants::Repaired, ..device.target() };
    let (f32s, f64s) = literal_constants(&device, repaired);
    // Operations 3 (`add x, 0.0`), 6 (`sub 0.0, x`) and 12 (`fma x, 0.0, 0.0`) of
    // `literal_constants.ptx`; the others are the multiplications and derived constants
    // that only the probed workaround hides.
    let sums = ["operation 3:", "operation 6:", "operation 12:"];
    let wrong: Vec<String> = wrong(&f32s, &f64s)
        .into_iter()
        .filter(|w| sums.iter().any(|s| w.contains(&format!("{s} "))))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("; "));
}

/// The same through `ptxvk run`: the output buffer holds IEEE's results.
#[test]
fn literal_constants_are_exact_through_ptxvk_run() {
    let Some(_device) = device() else { return };
    let ptx = drivers("literal_constants.ptx");
    let input = "inf,nan,-3,-0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0";
    let out = Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .args(["run", path(&ptx), "--entry", "literal_constants_f32", "--grid", "1"])
        .args(["--block", "1", "--arg", &format!("buf:f32:{input}"), "--json"])
        .output()
        .expect("ptxvk runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let hex = json["buffers"][0]["hex"].as_str().expect("the buffer's bytes");
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    let f32s: Vec<f64> = bytes[20..]
        .chunks_exact(4)
        .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect();
    let wrong = wrong(&f32s, &[]);
    assert!(wrong.is_empty(), "{}", wrong.join("; "));
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// `cvt.s64.s32` of negative values compared with 255 and clamped to [-1, 1]: right on
/// every driver, with the extensions hidden where the probe found them miscompiled.
#[test]
fn sign_extended_values_compare_right() {
    let Some(device) = device() else { return };
    let xs: [i32; 6] = [-5, 7, 0, 300, i32::MIN, -1];
    let module = load(&device, &drivers("sign_extension.ptx"));
    let io: Vec<u32> = xs.iter().flat_map(|&x| [x as u32, 0, 0]).collect();
    let buf = device.buffer_from(&io).expect("buffer");
    let kernel = module.kernel("sign_extension").expect("kernel");
    kernel.launch(1, xs.len() as u32, 0, &[Arg::from(&buf)]).expect("launch");
    let out = buf.to_vec().expect("read");
    for (t, &x) in xs.iter().enumerate() {
        let want = [i64::from(x).clamp(-1, 1) as i32, i32::from(x > 255)];
        let got = [out[3 * t + 1] as i32, out[3 * t + 2] as i32];
        assert_eq!(got, want, "x = {x}");
    }
    if on_old_mesa() {
        assert!(device.target().hide_sign_extensions, "{:?}", device.findings());
    }
}

/// Runs `loops.ptx`'s `entry` with `params`: the counts, or the launch's error.
fn run_loops(device: &Device, entry: &str, params: &[u32]) -> Result<Vec<u32>, Error> {
    let module = load(device, &drivers("loops.ptx"));
    let out = device.zeroed::<u32>(2).expect("buffer");
    let mut args = vec![Arg::from(&out)];
    args.extend(params.iter().map(|&p| Arg::from(p)));
    module.kernel(entry).expect("kernel").launch(1, 1, 0, &args)?;
    Ok(out.to_vec().expect("read"))
}

/// A loop of 100,000 iterations counts 100,000, or, on a driver that ends loops
/// earlier, fails the launch naming the loop and the driver bug: never a wrong count.
#[test]
fn a_loop_of_100000_iterations_counts_right_or_is_refused() {
    let Some(device) = device() else { return };
    let guarded = device.target().loop_guard.is_some();
    match run_loops(&device, "count", &[100_000]) {
        Ok(counts) => {
            assert_eq!(counts[0], 100_000, "a wrong count, guarded: {guarded}");
            assert!(!guarded, "the guard let 100,000 iterations through");
        }
        Err(e) => {
            let message = e.to_string();
            assert!(guarded, "unguarded, the launch failed: {message}");
            assert!(ptxvk::printf::is_loop_limit(&message), "{message}");
            assert!(message.contains("loops.ptx:"), "the loop's line: {message}");
            assert!(message.contains("bookworm-backports"), "how to fix it: {message}");
        }
    }
    assert!(guarded || !on_old_mesa(), "Mesa 22.3 needs the guard");
}

/// Loops below the driver's limit run to the end, guarded or not: 60,000 iterations,
/// and a 250 × 240 nest; a 300 × 300 nest counts right or is refused.
#[test]
fn loops_below_the_limit_count_right() {
    let Some(device) = device() else { return };
    assert_eq!(run_loops(&device, "count", &[60_000]).expect("runs"), [60_000, 0]);
    assert_eq!(run_loops(&device, "nest", &[250, 240]).expect("runs"), [250, 60_000]);
    match run_loops(&device, "nest", &[300, 300]) {
        Ok(counts) => assert_eq!(counts, [300, 90_000]),
        Err(e) => assert!(ptxvk::printf::is_loop_limit(&e.to_string()), "{e}"),
    }
}

/// Once the workarounds apply, the probes find nothing left wrong on the device (a
/// driver ptxvk cannot make exact would fail here), none failed to run, and a fresh
/// run agrees with the cached answers.
#[test]
fn the_probes_leave_nothing_wrong() {
    let Some(device) = device() else { return };
    let findings = device.findings();
    assert!(findings.errors.is_empty(), "{:?}", findings.errors);
    assert_eq!(findings.float_refusal(), None);
    assert_eq!(findings.loop_refusal(), None);
    assert_eq!(findings.integer_refusal(), None);
    assert_eq!(findings.scheduler_refusal(), None);
    assert!(findings.denormals.is_empty() && findings.special.is_empty(), "{findings:?}");
    let fresh = ptxvk::probes::run(&device);
    // The float scheme is a timing, which may come out the other way.
    let fresh = ptxvk::probes::Findings { integer_float: findings.integer_float, ..fresh };
    assert_eq!(&fresh, findings);
    let report = findings.report(device.info());
    let names: Vec<&str> = report.iter().map(|r| r.name).collect();
    assert_eq!(names, ptxvk::probes::NAMES);
    if on_old_mesa() {
        let status = |n| report.iter().find(|r| r.name == n).map(|r| r.status);
        assert_eq!(status("constants"), Some("worked around"));
        assert_eq!(status("loops"), Some("guarded"));
        assert_eq!(status("sign-extension"), Some("worked around"));
        assert!(findings.hidden.mul && findings.loop_limit.is_some_and(|l| l >= 65_535));
    }
}

/// The tests above once more on Mesa 22.3's lavapipe, where `PTXVK_TEST_OLD_MESA_ICD`
/// names its ICD file; and `ptxvk devices` there lists its bugs.
#[test]
fn on_mesa_22_3_each_bug_is_found_and_worked_around_or_refused() {
    let Some(icd) = std::env::var_os(OLD_MESA_ICD) else { return };
    if on_old_mesa() {
        return;
    }
    assert!(Path::new(&icd).is_file(), "{OLD_MESA_ICD}={icd:?} is not a file");
    let tests = [
        "literal_constants_are_exact_through_the_api",
        "the_probe_finds_what_the_workaround_repairs",
        "literal_constants_are_exact_through_ptxvk_run",
        "a_loop_of_100000_iterations_counts_right_or_is_refused",
        "loops_below_the_limit_count_right",
        "sign_extended_values_compare_right",
        "the_probes_leave_nothing_wrong",
    ];
    let exe = std::env::current_exe().expect("the test binary");
    for test in tests {
        let out = Command::new(&exe)
            .args([test, "--exact", "--nocapture"])
            .env("VK_ICD_FILENAMES", &icd)
            .env(OLD_MESA_CHILD, "1")
            .output()
            .expect("the test binary runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{test} on Mesa 22.3:\n{text}");
        assert!(text.contains("1 passed"), "{test} did not run on Mesa 22.3:\n{text}");
        assert!(!text.contains("SKIPPED"), "{test} skipped on Mesa 22.3:\n{text}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .args(["devices", "--json"])
        .env("VK_ICD_FILENAMES", &icd)
        .output()
        .expect("ptxvk runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let device = &json[0];
    assert!(device["driver_info"].as_str().is_some_and(|d| d.contains("22.3")), "{device}");
    let probe = |name: &str| {
        let list = device["probes"].as_array().expect("probes");
        list.iter().find(|p| p["name"] == name).cloned().expect(name)
    };
    assert_eq!(probe("constants")["status"], "worked around");
    assert_eq!(probe("loops")["status"], "guarded");
    assert_eq!(probe("sign-extension")["status"], "worked around");
    let details = probe("constants")["details"].to_string();
    assert!(details.contains("mul.rn.f32 inf, 0.0 (literal) gave 0.0, not NaN"), "{details}");
}
