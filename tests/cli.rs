//! The `ptxvk` command-line contract (README, *Command line*), tested end to end on the
//! built binary: `compile` and its `--emit` forms, `run` from flags and from a launch
//! spec, `devices`, and the exit codes (0 success, 1 PTX rejected, 2 usage error, 3
//! device or runtime error).
//!
//! Compile-only and usage-error tests never need a Vulkan device. The others skip with a
//! line starting with `SKIPPED:` when `ptxvk devices --json` finds no device, except under
//! CI (`CI` set), where a missing device is a failure.

use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{json, Value};

const VECTOR_ADD: &str = "tests/kernels/vector_add.nvcc.sm_80.ptx";
const SAXPY: &str = "tests/kernels/saxpy.nvcc.sm_80.ptx";
const COLLATZ: &str = "tests/kernels/collatz.nvcc.sm_80.ptx";
/// A PTX file the compiler rejects (`frob` is not an instruction).
const REJECTED: &str = "tests/errors/unknown_instruction.ptx";

const SPIRV_MAGIC: u32 = 0x0723_0203;
/// `OpEntryPoint` and the `GLCompute` execution model.
const OP_ENTRY_POINT: u32 = 15;
const GL_COMPUTE: u32 = 5;

/// The vector_add launch of the flag tests: c = a + b over 4 floats.
const VECTOR_ADD_ARGS: [&str; 8] = [
    "--arg",
    "buf:f32:1,2,3,4",
    "--arg",
    "buf:f32:10,20,30,40",
    "--arg",
    "buf:f32:zeros:4",
    "--arg",
    "s32:4",
];

/// Two kernels in one module; each stores its own marker value to `*p`.
const TWO_KERNELS: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry alpha(
\t.param .u64 alpha_param_0
)
{
\t.reg .b32 \t%r<2>;
\t.reg .b64 \t%rd<3>;

\tld.param.u64 \t%rd1, [alpha_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tmov.u32 \t%r1, 1;
\tst.global.u32 \t[%rd2], %r1;
\tret;
}

.visible .entry beta(
\t.param .u64 beta_param_0
)
{
\t.reg .b32 \t%r<2>;
\t.reg .b64 \t%rd<3>;

\tld.param.u64 \t%rd1, [beta_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tmov.u32 \t%r1, 2;
\tst.global.u32 \t[%rd2], %r1;
\tret;
}
";

// ----- helpers ----------------------------------------------------------------------------

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `ptxvk ARGS` in `dir`.
fn ptxvk_in<I, S>(dir: &Path, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the ptxvk binary runs")
}

/// Runs `ptxvk ARGS` from the repository root (so `tests/...` paths resolve).
fn ptxvk<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    ptxvk_in(&repo(), args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Panics with the whole output unless the exit code is `code`.
#[track_caller]
fn expect_exit(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: expected exit code {code}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        stdout(out),
        stderr(out)
    );
}

/// Asserts success and returns stdout.
#[track_caller]
fn expect_ok(out: &Output, what: &str) -> String {
    expect_exit(out, 0, what);
    stdout(out)
}

/// Checks a failure with `code` whose message is a short `error: …` naming every one of
/// `mentions` on its first line; returns stderr, or what is wrong.
fn check_error(out: &Output, code: i32, what: &str, mentions: &[&str]) -> Result<String, String> {
    let err = stderr(out);
    let problem = if out.status.code() != Some(code) {
        format!("expected exit code {code}, got {:?}", out.status.code())
    } else if !out.stdout.is_empty() {
        format!("a failure printed to stdout:\n{}", stdout(out))
    } else if !err.starts_with("error: ") {
        "stderr does not start with `error: `".to_string()
    } else if let Some(m) = mentions.iter().find(|m| !err.lines().next().unwrap_or("").contains(*m))
    {
        format!("the first line of stderr does not mention `{m}`")
    } else if err.lines().count() > 8 {
        "the error message is not short".to_string()
    } else {
        return Ok(err);
    };
    Err(format!("{what}: {problem}\n--- stderr ---\n{err}"))
}

/// Asserts [`check_error`]; returns stderr.
#[track_caller]
fn expect_error(out: &Output, code: i32, what: &str, mentions: &[&str]) -> String {
    check_error(out, code, what, mentions).unwrap_or_else(|e| panic!("{e}"))
}

/// A temporary path as a command-line argument.
fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temporary path")
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Copies a repository file into `dir` under `name`; returns the new path.
fn copy_into(dir: &Path, repo_file: &str, name: &str) -> PathBuf {
    let dst = dir.join(name);
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent).expect("creating the folder");
    }
    std::fs::copy(repo().join(repo_file), &dst).expect("copying the input");
    dst
}

/// The SPIR-V words of a little-endian module file; checks the magic number.
#[track_caller]
fn spirv_words(bytes: &[u8]) -> Vec<u32> {
    assert!(
        bytes.len() >= 20 && bytes.len().is_multiple_of(4),
        "not a SPIR-V binary: {} bytes",
        bytes.len()
    );
    assert_eq!(bytes[..4], SPIRV_MAGIC.to_le_bytes(), "SPIR-V magic number (little-endian)");
    bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
}

/// Names of the module's `GLCompute` entry points, in order, read from the binary.
#[track_caller]
fn entry_points(bytes: &[u8]) -> Vec<String> {
    let words = spirv_words(bytes);
    let mut names = Vec::new();
    let mut i = 5; // after the header
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        let opcode = words[i] & 0xffff;
        assert!(count > 0 && i + count <= words.len(), "malformed instruction at word {i}");
        if opcode == OP_ENTRY_POINT {
            assert_eq!(words[i + 1], GL_COMPUTE, "entry points are GLCompute");
            let name: Vec<u8> = words[i + 3..i + count]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .take_while(|&b| b != 0)
                .collect();
            names.push(String::from_utf8(name).expect("UTF-8 entry point name"));
        }
        i += count;
    }
    names
}

/// Runs the installed `spirv-val --target-env vulkan1.3` on a module file.
#[track_caller]
fn spirv_val(path: &Path) {
    let out = Command::new("spirv-val")
        .args(["--target-env", "vulkan1.3"])
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run spirv-val (install SPIRV-Tools): {e}"));
    assert!(
        out.status.success(),
        "spirv-val rejected {}:\n{}{}",
        path.display(),
        stdout(&out),
        stderr(&out)
    );
}

fn hex_decode(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd-length hex `{s}`");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits"))
        .collect()
}

fn hex_encode(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn f32_hex(v: &[f32]) -> String {
    hex_encode(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
}

fn f32s_of_hex(s: &str) -> Vec<f32> {
    hex_decode(s).chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// What `--json` prints for one f32 element: a number, or "nan" / "inf" / "-inf".
fn f32_json(x: f32) -> Value {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(f64::from(x))
    }
}

/// Checks one `buffers` entry of `--json` output against the expected f32 contents:
/// bit-exact, except that any NaN matches any NaN.
#[track_caller]
fn check_f32_buffer(buffers: &[Value], arg: usize, expected: &[f32]) {
    let b = buffers
        .iter()
        .find(|b| b["arg"] == json!(arg))
        .unwrap_or_else(|| panic!("no buffer for arg {arg} in {buffers:?}"));
    assert_eq!(b["type"], json!("f32"), "arg {arg}");
    let hex = b["hex"].as_str().expect("hex is a string");
    let got = f32s_of_hex(hex);
    assert_eq!(got.len(), expected.len(), "arg {arg}: element count of {hex}");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(
            g.to_bits() == e.to_bits() || (g.is_nan() && e.is_nan()),
            "arg {arg}[{i}]: got {g:e} ({:#010x}), expected {e:e} ({:#010x})",
            g.to_bits(),
            e.to_bits()
        );
    }
    let data: Vec<Value> = expected.iter().map(|&x| f32_json(x)).collect();
    assert_eq!(b["data"], Value::Array(data), "arg {arg}: decoded data");
}

/// Parses `--json` output: exactly one JSON object on stdout.
#[track_caller]
fn parse_json_object(out: &str) -> Value {
    let v: Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e}):\n{out}"));
    assert!(v.is_object(), "expected a JSON object, got {v}");
    v
}

// ----- Vulkan availability ------------------------------------------------------------

/// `ptxvk devices --json`, or why no device can be used.
fn probe_devices() -> Result<Vec<Value>, String> {
    let out = ptxvk(["devices", "--json"]);
    if out.status.success() {
        let list: Vec<Value> = serde_json::from_str(stdout(&out).trim())
            .unwrap_or_else(|e| panic!("`ptxvk devices --json` is not a JSON array ({e})"));
        return if list.is_empty() {
            Err("`ptxvk devices --json` lists no device".into())
        } else {
            Ok(list)
        };
    }
    let err = stderr(&out);
    // Only a missing loader or driver is a reason to skip; anything else is a bug.
    assert!(
        out.status.code() == Some(3)
            && (err.contains("Vulkan is not available") || err.contains("no Vulkan device")),
        "`ptxvk devices --json` failed unexpectedly ({:?}):\n{err}",
        out.status.code()
    );
    Err(format!("`ptxvk devices --json` failed: {}", err.trim()))
}

/// The Vulkan devices, or `None` after a loud `SKIPPED:` line naming `test`. Under CI a
/// missing device fails the test instead: CI installs lavapipe.
fn vulkan(test: &str) -> Option<&'static [Value]> {
    static DEVICES: OnceLock<Result<Vec<Value>, String>> = OnceLock::new();
    match DEVICES.get_or_init(probe_devices) {
        Ok(list) => Some(list),
        Err(reason) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must have a Vulkan device (lavapipe): {reason}"
            );
            // Straight to the stderr handle: the test harness captures `eprintln!`, and
            // a skip must be visible in a normal `cargo test` run.
            let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: no Vulkan device: {reason}");
            None
        }
    }
}

// ----- compile ----------------------------------------------------------------------------

#[test]
fn compile_writes_valid_spirv() {
    let dir = temp_dir();
    let out_path = dir.path().join("out.spv");
    let out = ptxvk(["compile", VECTOR_ADD, "-o", path_str(&out_path)]);
    assert!(expect_ok(&out, "compile -o").is_empty(), "compile -o printed to stdout");
    let bytes = std::fs::read(&out_path).expect("the output file exists");
    assert_eq!(entry_points(&bytes), ["vector_add"]);
    spirv_val(&out_path);
}

#[test]
fn compile_default_output_is_next_to_the_input() {
    let inputs = temp_dir();
    let cwd = temp_dir();
    let input = copy_into(inputs.path(), VECTOR_ADD, "va.ptx");
    // Run from another folder: the default output goes next to the input, not into cwd.
    let out = ptxvk_in(cwd.path(), ["compile", path_str(&input)]);
    assert!(expect_ok(&out, "compile without -o").is_empty());
    let spv = inputs.path().join("va.spv");
    let bytes = std::fs::read(&spv).expect("IN.spv next to the input");
    assert_eq!(entry_points(&bytes), ["vector_add"]);
    spirv_val(&spv);
    let stray: Vec<_> = std::fs::read_dir(cwd.path()).expect("cwd").collect();
    assert!(stray.is_empty(), "compile wrote into the current folder: {stray:?}");
    assert_eq!(
        std::fs::read(&input).expect("input"),
        std::fs::read(repo().join(VECTOR_ADD)).expect("original"),
        "the input was modified"
    );

    // `-o -` writes the same module to standard output.
    let piped = ptxvk_in(cwd.path(), ["compile", path_str(&input), "-o", "-"]);
    expect_exit(&piped, 0, "compile -o -");
    assert_eq!(piped.stdout, bytes, "`-o -` and the default output differ");
}

#[test]
fn emit_spvasm_prints_the_disassembly() {
    let dir = temp_dir();
    let input = copy_into(dir.path(), VECTOR_ADD, "va.ptx");
    let out = ptxvk(["compile", path_str(&input), "--emit", "spvasm"]);
    let text = expect_ok(&out, "--emit spvasm");
    let entry = text
        .lines()
        .find(|l| l.contains("OpEntryPoint GLCompute"))
        .unwrap_or_else(|| panic!("no `OpEntryPoint GLCompute` in:\n{text}"));
    assert!(entry.contains("\"vector_add\""), "entry point line: {entry}");
    assert!(text.contains("OpMemoryModel PhysicalStorageBuffer64"), "memory model:\n{text}");
    assert!(
        !dir.path().join("va.spv").exists(),
        "--emit spvasm without -o must print, not write IN.spv"
    );
}

#[test]
fn emit_ast_ir_and_structured() {
    let ast = expect_ok(&ptxvk(["compile", VECTOR_ADD, "--emit", "ast"]), "--emit ast");
    for needle in
        ["\"vector_add\"", "\"vector_add_param_0\"", "\"vector_add_param_3\"", "\"mad\"", "\"bra\""]
    {
        assert!(ast.contains(needle), "--emit ast does not mention {needle}:\n{ast}");
    }

    let ir = expect_ok(&ptxvk(["compile", VECTOR_ADD, "--emit", "ir"]), "--emit ir");
    assert!(ir.starts_with("kernel vector_add {"), "--emit ir:\n{ir}");
    for needle in ["param vector_add_param_0", "param vector_add_param_3", "bb0:", " = mad.lo.s32 "]
    {
        assert!(ir.contains(needle), "--emit ir does not mention `{needle}`:\n{ir}");
    }

    let s = expect_ok(&ptxvk(["compile", COLLATZ, "--emit", "structured"]), "--emit structured");
    assert!(s.starts_with("kernel collatz {"), "--emit structured:\n{s}");
    for needle in ["loop {", "if %p", "break", "return", "block bb0:"] {
        assert!(s.contains(needle), "structured collatz lacks `{needle}`:\n{s}");
    }
    // vector_add has a bounds check but no loop.
    let s = expect_ok(&ptxvk(["compile", VECTOR_ADD, "--emit", "structured"]), "structured");
    assert!(s.contains("if %p") && !s.contains("loop {"), "structured vector_add:\n{s}");
}

#[test]
fn compile_entry_selects_one_kernel() {
    let dir = temp_dir();
    let input = dir.path().join("two.ptx");
    std::fs::write(&input, TWO_KERNELS).expect("writing the module");
    let compile = |extra: &[&str], out: &Path| {
        let mut args = vec!["compile", path_str(&input), "-o", path_str(out)];
        args.extend(extra);
        ptxvk(args)
    };

    let both = dir.path().join("both.spv");
    expect_ok(&compile(&[], &both), "compile a two-kernel module");
    assert_eq!(entry_points(&std::fs::read(&both).expect("output")), ["alpha", "beta"]);
    spirv_val(&both);

    let beta = dir.path().join("beta.spv");
    expect_ok(&compile(&["--entry", "beta"], &beta), "--entry beta");
    assert_eq!(entry_points(&std::fs::read(&beta).expect("output")), ["beta"]);
    spirv_val(&beta);

    let none = dir.path().join("none.spv");
    let out = compile(&["--entry", "gamma"], &none);
    expect_error(&out, 2, "--entry gamma", &["gamma", "alpha", "beta"]);
    assert!(!none.exists(), "a failed compile wrote {}", none.display());

    // A single-kernel module: a wrong name lists the one kernel, the right one works.
    let out = ptxvk(["compile", VECTOR_ADD, "--entry", "vectoradd", "-o", "/dev/null"]);
    expect_error(&out, 2, "--entry vectoradd", &["vectoradd", "vector_add"]);
    let out = ptxvk(["compile", VECTOR_ADD, "--entry", "vector_add", "-o", "-"]);
    assert_eq!(entry_points(&out.stdout), ["vector_add"]);
}

#[test]
fn compile_rejected_ptx_exits_1_with_diagnostics() {
    let dir = temp_dir();
    let out_path = dir.path().join("out.spv");
    let out = ptxvk(["compile", REJECTED, "-o", path_str(&out_path)]);
    expect_exit(&out, 1, "compile of rejected PTX");
    let err = stderr(&out);
    assert!(err.starts_with("error: unknown instruction `frob`"), "{err}");
    assert!(err.contains(&format!("{REJECTED}:13:2")), "file:line:column of `frob`:\n{err}");
    assert!(!out_path.exists(), "rejected PTX still produced {}", out_path.display());
}

// ----- usage errors (exit 2; no device needed) --------------------------------------

#[test]
fn usage_errors_exit_2_with_a_clear_message() {
    let dir = temp_dir();
    let spec = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("writing the spec");
        path_str(&p).to_string()
    };
    let malformed = spec("malformed.json", r#"{"ptx": "k.ptx", "grid": [1], "block": [1"#);
    let no_grid = spec("no_grid.json", r#"{"ptx": "k.ptx", "block": [64]}"#);
    let missing_ptx = spec("missing_ptx.json", r#"{"ptx": "nowhere.ptx", "grid": 1, "block": 1}"#);
    let bad_type = spec(
        "bad_type.json",
        r#"{"ptx": "k.ptx", "grid": 1, "block": 1, "args": [{"buffer": "f33", "len": 1}]}"#,
    );

    let run_va = |extra: &[&str]| -> Vec<String> {
        let mut a = vec!["run".to_string(), VECTOR_ADD.to_string()];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let strings = |v: &[&str]| -> Vec<String> { v.iter().map(|s| s.to_string()).collect() };
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (run_va(&["--grid", "1", "--block", "4", "--frobnicate"]), vec!["--frobnicate"]),
        (strings(&["compile", VECTOR_ADD, "--emit", "bogus"]), vec!["bogus", "--emit"]),
        (run_va(&["--grid", "0", "--block", "4"]), vec!["--grid", "`0`"]),
        (run_va(&["--grid", "1", "--block", "1,2,3,4"]), vec!["--block", "1,2,3,4"]),
        (run_va(&["--grid", "x", "--block", "4"]), vec!["--grid", "`x`"]),
        (run_va(&["--block", "4"]), vec!["--grid"]),
        (run_va(&["--grid", "1", "--block", "4", "--arg", "buf:f33:1"]), vec!["f33"]),
        (run_va(&["--grid", "1", "--block", "4", "--arg", "u32:-1"]), vec!["u32:-1"]),
        (run_va(&["--grid", "1", "--block", "4", "--arg", "bytes:abc"]), vec!["bytes:abc"]),
        (strings(&["run", "--spec", &malformed]), vec!["malformed.json", "invalid JSON"]),
        (strings(&["run", "--spec", &no_grid]), vec!["no_grid.json", "grid"]),
        (strings(&["run", "--spec", &bad_type]), vec!["bad_type.json", "args[0]", "f33"]),
        (strings(&["run", "--spec", &no_grid, "--grid", "1"]), vec!["--spec", "--grid"]),
        (strings(&["run", "--spec", "tests/nowhere.json"]), vec!["tests/nowhere.json"]),
        (strings(&["run", "--spec", &missing_ptx]), vec!["nowhere.ptx"]),
        (
            strings(&["run", "tests/nowhere.ptx", "--grid", "1", "--block", "1"]),
            vec!["tests/nowhere.ptx"],
        ),
        (strings(&["compile", "tests/nowhere.ptx"]), vec!["tests/nowhere.ptx"]),
        (strings(&["run"]), vec!["PTX file", "--spec"]),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(args, mentions)| {
            let what = format!("ptxvk {}", args.join(" "));
            check_error(&ptxvk(args), 2, &what, mentions).err()
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} usage error(s) misreported:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ----- run ------------------------------------------------------------------------------

#[test]
fn run_with_flags_prints_json() {
    let Some(_) = vulkan("run_with_flags_prints_json") else { return };
    let mut args = vec!["run", VECTOR_ADD, "--grid", "1", "--block", "4"];
    args.extend(VECTOR_ADD_ARGS);
    args.push("--json");
    let v = parse_json_object(&expect_ok(&ptxvk(&args), "run --json"));

    assert!(v["device"].as_str().is_some_and(|d| !d.is_empty()), "device: {v}");
    assert_eq!(v["entry"], json!("vector_add"));
    let ms = v["kernel_ms"].as_f64().unwrap_or_else(|| panic!("kernel_ms is a number: {v}"));
    assert!(ms.is_finite() && ms >= 0.0, "kernel_ms = {ms}");
    let buffers = v["buffers"].as_array().expect("buffers is an array");
    assert_eq!(buffers.len(), 3, "one entry per buffer argument: {v}");
    check_f32_buffer(buffers, 0, &[1.0, 2.0, 3.0, 4.0]);
    check_f32_buffer(buffers, 1, &[10.0, 20.0, 30.0, 40.0]);
    check_f32_buffer(buffers, 2, &[11.0, 22.0, 33.0, 44.0]);
    let c = buffers.iter().find(|b| b["arg"] == json!(2)).expect("arg 2");
    assert_eq!(c["hex"], json!(f32_hex(&[11.0, 22.0, 33.0, 44.0])));
    assert_eq!(c["data"], json!([11.0, 22.0, 33.0, 44.0]));
}

/// `PTXVK_LOG=timing` gives the pipeline one `pipeline` line and its first launch one
/// `first-dispatch` line after it (`vk-runtime/src/timing.rs`).
#[test]
fn run_with_timing_log_records_the_first_dispatch_once() {
    let Some(_) = vulkan("run_with_timing_log_records_the_first_dispatch_once") else { return };
    let mut args = vec!["run", VECTOR_ADD, "--grid", "1", "--block", "4"];
    args.extend(VECTOR_ADD_ARGS);
    let out = Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .current_dir(repo())
        .args(&args)
        .env("PTXVK_LOG", "timing")
        .output()
        .expect("the ptxvk binary runs");
    expect_ok(&out, "run with PTXVK_LOG=timing");
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("ptxvk timing: ")).collect();
    let at = |what: &str| -> Vec<usize> {
        let prefix = format!("ptxvk timing: {what} vector_add ms=");
        lines.iter().enumerate().filter(|(_, l)| l.starts_with(&prefix)).map(|(i, _)| i).collect()
    };
    let (pipelines, dispatches) = (at("pipeline"), at("first-dispatch"));
    assert_eq!(pipelines.len(), 1, "one pipeline line: {err}");
    assert_eq!(dispatches.len(), 1, "one first-dispatch line: {err}");
    assert!(pipelines[0] < dispatches[0], "the dispatch follows the pipeline: {err}");
    let ms: f64 = lines[dispatches[0]]
        .split("ms=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("a number of milliseconds: {err}"));
    assert!(ms.is_finite() && ms >= 0.0, "first-dispatch ms = {ms}");
}

#[test]
fn run_with_flags_prints_a_human_summary() {
    let Some(devices) = vulkan("run_with_flags_prints_a_human_summary") else { return };
    let mut args = vec!["run", VECTOR_ADD, "--grid", "1", "--block", "4"];
    args.extend(VECTOR_ADD_ARGS);
    let text = expect_ok(&ptxvk(&args), "run");
    let device = text
        .lines()
        .find_map(|l| l.strip_prefix("device: "))
        .unwrap_or_else(|| panic!("no `device:` line:\n{text}"));
    assert!(
        devices.iter().any(|d| d["name"] == json!(device)),
        "`{device}` is not one of the listed devices {devices:?}"
    );
    let time = text
        .lines()
        .find_map(|l| l.strip_prefix("kernel time: "))
        .and_then(|t| t.strip_suffix(" ms"))
        .unwrap_or_else(|| panic!("no `kernel time: … ms` line:\n{text}"));
    assert!(time.parse::<f64>().is_ok_and(|t| t >= 0.0), "kernel time `{time}`");
    assert!(text.contains("entry: vector_add"), "{text}");
    assert!(text.contains("arg 2 (f32): [11.0, 22.0, 33.0, 44.0]"), "{text}");
}

#[test]
fn run_spec_with_every_arg_form() {
    let Some(_) = vulkan("run_spec_with_every_arg_form") else { return };
    let dir = temp_dir();
    let cwd = temp_dir();
    copy_into(dir.path(), VECTOR_ADD, "kernels/vector_add.ptx");
    copy_into(dir.path(), SAXPY, "kernels/saxpy.ptx");

    // vector_add over n = 7 of 8 elements: `data` with every element notation, `hex`,
    // `len`, and n as raw `bytes`. c[7] is past n and must stay zero.
    let a: [f32; 8] =
        [1.5, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.0, 1e30, f32::from_bits(1), 123.0];
    let b: [f32; 8] = [2.0, 1.0, 5.0, -7.0, -0.5, 1e30, f32::from_bits(1), 456.0];
    let mut c: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    c[7] = 0.0;
    // NaN + x = NaN, ±inf + finite = ±inf, and a subnormal sum that must not be flushed.
    assert!(c[1].is_nan() && c[2] == f32::INFINITY && c[3] == f32::NEG_INFINITY);
    assert_eq!(c[6].to_bits(), 2);
    let spec = json!({
        "ptx": "kernels/vector_add.ptx",
        "comment": "unknown keys are ignored",
        "expected": {"c": "a + b"},
        "grid": 2,
        "block": [4],
        "args": [
            {"buffer": "f32", "data": [1.5, "nan", "inf", "-inf", "0x3f800000", 1e30,
                                       "0x00000001", 123], "note": "a"},
            {"buffer": "f32", "hex": f32_hex(&b)},
            {"buffer": "f32", "len": 8},
            {"bytes": "07000000"}
        ]
    });
    let spec_path = dir.path().join("vector_add.json");
    std::fs::write(&spec_path, spec.to_string()).expect("writing the spec");
    let out = ptxvk_in(cwd.path(), ["run", "--spec", path_str(&spec_path), "--json"]);
    let v = parse_json_object(&expect_ok(&out, "run --spec vector_add.json"));
    assert_eq!(v["entry"], json!("vector_add"));
    let buffers = v["buffers"].as_array().expect("buffers");
    assert_eq!(buffers.len(), 3);
    check_f32_buffer(buffers, 0, &a);
    check_f32_buffer(buffers, 1, &b);
    check_f32_buffer(buffers, 2, &c);

    // saxpy (y = fma(a, x, y) over n with a grid-stride loop): `scalar` with a number
    // and with an exact bit pattern; y[6] is past n and must keep its value.
    // a * x[2] - 1 with a = x[2] = 1 + 2^-12 is 2^-11 + 2^-24 fused, 2^-11 unfused.
    let alpha = f32::from_bits(0x3f80_0800);
    let x: [f32; 7] = [1.0, 2.5, alpha, -3.0, f32::INFINITY, 0.0, 9.0];
    let y: [f32; 7] = [0.5, -1.0, -1.0, 4.0, 1.0, f32::NAN, 3.0];
    let mut expected: Vec<f32> = x.iter().zip(&y).map(|(&x, &y)| alpha.mul_add(x, y)).collect();
    expected[6] = y[6];
    assert_ne!(expected[2], alpha * alpha - 1.0, "the inputs must tell fma from mul+add");
    let spec = json!({
        "ptx": "kernels/saxpy.ptx",
        "entry": "saxpy",
        "grid": [1, 1, 1],
        "block": [4, 1],
        "shared_bytes": 0,
        "args": [
            {"scalar": "s32", "value": 6},
            {"scalar": "f32", "value": "0x3f800800"},
            {"buffer": "f32", "data": [1.0, 2.5, "0x3f800800", -3, "inf", 0, 9]},
            {"buffer": "f32", "hex": f32_hex(&y)}
        ]
    });
    let spec_path = dir.path().join("saxpy.json");
    std::fs::write(&spec_path, spec.to_string()).expect("writing the spec");
    let out = ptxvk_in(cwd.path(), ["run", "--spec", path_str(&spec_path), "--json"]);
    let v = parse_json_object(&expect_ok(&out, "run --spec saxpy.json"));
    assert_eq!(v["entry"], json!("saxpy"));
    let buffers = v["buffers"].as_array().expect("buffers");
    assert_eq!(buffers.len(), 2);
    check_f32_buffer(buffers, 2, &x);
    check_f32_buffer(buffers, 3, &expected);
}

#[test]
fn run_entry_selection() {
    let Some(_) = vulkan("run_entry_selection") else { return };
    let dir = temp_dir();
    let input = dir.path().join("two.ptx");
    std::fs::write(&input, TWO_KERNELS).expect("writing the module");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", path_str(&input)];
        args.extend(["--grid", "1", "--block", "1", "--arg", "buf:u32:zeros:1", "--json"]);
        args.extend(extra);
        ptxvk(args)
    };
    for (entry, marker) in [("alpha", 1), ("beta", 2)] {
        let v = parse_json_object(&expect_ok(&run(&["--entry", entry]), entry));
        assert_eq!(v["entry"], json!(entry));
        assert_eq!(v["buffers"][0]["data"], json!([marker]), "{entry}: {v}");
        assert_eq!(v["buffers"][0]["type"], json!("u32"));
    }
    expect_error(&run(&["--entry", "gamma"]), 2, "run --entry gamma", &["gamma", "alpha, beta"]);
    // Without --entry a module with several kernels is ambiguous.
    let out = run(&[]);
    assert!(!out.status.success(), "an ambiguous launch succeeded:\n{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("alpha") && err.contains("beta") && err.contains("--entry"), "{err}");
}

#[test]
fn run_rejected_ptx_exits_1() {
    let Some(_) = vulkan("run_rejected_ptx_exits_1") else { return };
    let out = ptxvk(["run", REJECTED, "--grid", "1", "--block", "1"]);
    expect_exit(&out, 1, "run of rejected PTX");
    let err = stderr(&out);
    assert!(err.starts_with("error: unknown instruction `frob`"), "{err}");
    assert!(err.contains(&format!("{REJECTED}:13:2")), "{err}");
    assert!(stdout(&out).is_empty());
}

#[test]
fn runtime_errors_exit_3() {
    let Some(devices) = vulkan("runtime_errors_exit_3") else { return };
    let run = |grid: &str, block: &str, args: &[&str], extra: &[&str]| {
        let mut a = vec!["run", VECTOR_ADD, "--grid", grid, "--block", block];
        a.extend(args);
        a.extend(extra);
        ptxvk(a)
    };

    let out = run("1", "4", &["--arg", "buf:f32:1", "--arg", "s32:1"], &[]);
    expect_error(&out, 3, "two arguments for four parameters", &["vector_add", "4", "2 given"]);

    // A block above the device limit is an error before launch, never a crash.
    let limit = devices
        .iter()
        .filter_map(|d| d["max_workgroup_invocations"].as_u64())
        .max()
        .unwrap_or(1024);
    let block = (limit * 2).to_string();
    let out = run("1", &block, &VECTOR_ADD_ARGS, &[]);
    expect_error(&out, 3, "block above the device limit", &[block.as_str()]);

    let missing = devices.len() + 98;
    let out = run("1", "4", &VECTOR_ADD_ARGS, &["--device", &missing.to_string()]);
    let err = expect_error(&out, 3, "--device out of range", &[format!("`{missing}`").as_str()]);
    let name = devices[0]["name"].as_str().expect("device name");
    assert!(err.contains(name), "the error lists the available devices:\n{err}");
}

// ----- devices ----------------------------------------------------------------------------

#[test]
fn devices_lists_every_device() {
    let Some(list) = vulkan("devices_lists_every_device") else { return };
    for d in list {
        assert!(d["name"].as_str().is_some_and(|n| !n.is_empty()), "name: {d}");
        assert!(d["type"].as_str().is_some_and(|t| !t.is_empty()), "type: {d}");
        let api = d["api_version"].as_str().unwrap_or_else(|| panic!("api_version: {d}"));
        let parts: Vec<&str> = api.split('.').collect();
        assert!(
            parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()),
            "api_version `{api}` is not MAJOR.MINOR.PATCH"
        );
        assert!(api.starts_with("1."), "Vulkan 1.x: {api}");
        let sg = d["subgroup_size"].as_u64().unwrap_or_else(|| panic!("subgroup_size: {d}"));
        assert!(sg.is_power_of_two() && sg <= 128, "subgroup size {sg}");
        // Native warps only where subgroups are 32 wide; emulated everywhere else.
        let mode = d["warp_mode"].as_str().unwrap_or_else(|| panic!("warp_mode: {d}"));
        assert!(
            mode == "emulated" || (mode == "native" && sg == 32),
            "warp mode {mode}, subgroups {sg}"
        );
        // What each driver-bug probe found (`ptxvk::probes`), in the order they run.
        let probes = d["probes"].as_array().unwrap_or_else(|| panic!("probes: {d}"));
        let names: Vec<&str> = probes.iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(names, PROBES, "{d}");
        for p in probes {
            let status = p["status"].as_str().unwrap_or_else(|| panic!("status: {p}"));
            let known = ["ok", "measured", "worked around", "guarded", "refused", "not run"];
            assert!(known.contains(&status), "{p}");
            assert!(p["summary"].as_str().is_some_and(|s| !s.is_empty()), "{p}");
            assert!(p["details"].is_array(), "{p}");
        }
    }

    let text = expect_ok(&ptxvk(["devices"]), "devices");
    for (i, d) in list.iter().enumerate() {
        let name = d["name"].as_str().expect("name");
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{i}: {name}"))),
            "`ptxvk devices` does not list `{i}: {name}`:\n{text}"
        );
    }
    for probe in PROBES {
        let line = format!("   probe {probe}: ");
        assert_eq!(
            text.lines().filter(|l| l.starts_with(&line)).count(),
            list.len(),
            "`ptxvk devices` lists `{probe}` once per device:\n{text}"
        );
    }
}

/// The driver-bug probes `ptxvk devices` lists for each device.
const PROBES: [&str; 9] = ptxvk::probes::NAMES;

/// `--warp-mode`: the mode a run used is in its output; a mode the device's subgroups
/// cannot run is an error (exit 3) naming the sizes.
#[test]
fn warp_mode_is_reported_and_checked() {
    let Some(devices) = vulkan("warp_mode_is_reported_and_checked") else { return };
    let ptx = repo().join("tests/kernels/warp.nvcc.sm_80.ptx");
    let args = |mode: Option<&str>| {
        let mut v = vec![
            "run".to_string(),
            path_str(&ptx).to_string(),
            "--grid".into(),
            "1".into(),
            "--block".into(),
            "32".into(),
            "--arg".into(),
            "buf:s32:zeros:32".into(),
            "--arg".into(),
            "s32:32".into(),
            "--arg".into(),
            "buf:s32:zeros:288".into(),
            "--json".into(),
        ];
        if let Some(m) = mode {
            v.extend(["--warp-mode".to_string(), m.to_string()]);
        }
        v
    };
    let out = expect_ok(&ptxvk(args(None)), "run with the device's warp mode");
    let v = parse_json_object(&out);
    let device_mode = devices[0]["warp_mode"].as_str().expect("warp_mode");
    assert_eq!(v["warp_mode"], device_mode, "{out}");
    let out = expect_ok(&ptxvk(args(Some("emulated"))), "run --warp-mode emulated");
    assert_eq!(parse_json_object(&out)["warp_mode"], "emulated");
    let sg = devices[0]["subgroup_size"].as_u64().expect("subgroup size");
    if sg != 32 {
        expect_error(
            &ptxvk(args(Some("native"))),
            3,
            "native warps on a device without 32-wide subgroups",
            &["warp mode `native` needs subgroups of 32", &format!("has {sg}")],
        );
    }
}

/// `--float native` (and `PTXVK_FLOAT=native`) gives `fma`, `div` and `sqrt` to Vulkan:
/// the run says so, the results are within Vulkan's precision of the exact ones, and
/// the compiled module has the device's `Fma` and `OpFDiv` where the exact one has
/// neither; a `PTXVK_FLOAT` value ptxvk does not know is a usage error (exit 2).
#[test]
fn float_native_is_opt_in_reported_and_close() {
    let ptx = repo().join("benches/ptx/normalize.ptx");
    let dir = temp_dir();
    for (float, fdiv) in [("exact", false), ("native", true)] {
        let spvasm = dir.path().join(format!("{float}.spvasm"));
        let out = ptxvk([
            "compile",
            path_str(&ptx),
            "--emit",
            "spvasm",
            "--float",
            float,
            "-o",
            path_str(&spvasm),
        ]);
        expect_ok(&out, "compile --float");
        let text = std::fs::read_to_string(&spvasm).expect("spvasm");
        assert_eq!(text.contains("OpFDiv %float"), fdiv, "{float}: OpFDiv on f32");
    }
    let Some(_) = vulkan("float_native_is_opt_in_reported_and_close") else { return };
    let (x, y, z) = ([3.0f32, 1.0, 0.5], [4.0f32, 2.0, 0.25], [12.0f32, 2.0, 1e-3]);
    let list = |v: &[f32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
    let mut args = vec!["run".to_string(), path_str(&ptx).into(), "--grid".into(), "1".into()];
    args.extend(["--block".into(), "32".into(), "--json".into(), "--float".into()]);
    args.push("native".into());
    for v in [&x[..], &y, &z] {
        args.extend(["--arg".into(), format!("buf:f32:{}", list(v))]);
    }
    for _ in 0..3 {
        args.extend(["--arg".into(), "buf:f32:zeros:3".into()]);
    }
    args.extend(["--arg".into(), "s32:3".into()]);
    let out = expect_ok(&ptxvk(&args), "run --float native");
    let v = parse_json_object(&out);
    assert_eq!(v["float"], "native (Vulkan precision, not exact)", "{out}");
    for (k, comp) in [&x, &y, &z].into_iter().enumerate() {
        let got = f32s_of_hex(v["buffers"][3 + k]["hex"].as_str().expect("hex"));
        for i in 0..3 {
            let len = f64::from(x[i]).hypot(f64::from(y[i])).hypot(f64::from(z[i]));
            let want = f64::from(comp[i]) / len;
            assert!((f64::from(got[i]) - want).abs() <= 1e-6 * want.abs(), "{got:?} vs {want}");
        }
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .current_dir(repo())
        .env("PTXVK_FLOAT", "fast")
        .arg("devices")
        .output()
        .expect("the ptxvk binary runs");
    expect_error(&bad, 2, "PTXVK_FLOAT=fast", &["PTXVK_FLOAT=fast", "`exact`", "`native`"]);
}

/// Legacy PTX with Latin-1 text in a comment and a `.file` string compiles (ptxas reads
/// bytes); the same byte in an instruction is a PTX error at its line (exit 1).
#[test]
fn bytes_that_are_not_utf8_are_allowed_in_comments_and_strings() {
    let dir = temp_dir();
    let kernel = |extra: &[u8]| -> Vec<u8> {
        let mut v =
            b"// Auteur: Ren\xe9 M\xfcller\n.version 7.0\n.target sm_70\n.address_size 64\n\
            .file 1 \"/home/ren\xe9/k.cu\"\n.visible .entry k(.param .u64 p)\n{\n\
            .reg .b64 %rd<2>;\nld.param.u64 %rd1, [p];\n"
                .to_vec();
        v.extend_from_slice(extra);
        v.extend_from_slice(b"ret;\n}\n");
        v
    };
    let good = dir.path().join("good.ptx");
    std::fs::write(&good, kernel(b"/* \xff */\n")).expect("write");
    expect_ok(&ptxvk(["compile", path_str(&good), "--emit", "spvasm"]), "compile Latin-1 comments");

    let bad = dir.path().join("bad.ptx");
    let text = kernel(b"mov.b64 %rd1, \xe9;\n");
    std::fs::write(&bad, &text).expect("write");
    let out = ptxvk(["compile", path_str(&bad)]);
    let offset = text.iter().rposition(|&b| b == 0xe9).expect("the byte").to_string();
    let err = expect_error(&out, 1, "a byte that is not UTF-8 in code", &["0xe9", &offset]);
    assert!(err.contains("bad.ptx:10:15"), "the line and column: {err}");
}

/// A module with a kernel ptxvk rejects (`bad`, a tensor-core instruction) and one it
/// compiles (`good`): `compile` of the module reports the bad one (exit 1), `compile
/// --entry good` and `run --entry good` succeed, `--entry bad` reports it; through the
/// API the module loads, `good` runs, and looking up `bad` returns its diagnostic.
#[test]
fn one_rejected_kernel_does_not_take_down_its_module() {
    const PTX: &str = ".version 7.0\n.target sm_80\n.address_size 64\n\
        .visible .entry good(.param .u64 out)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<4>;\n\
        ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\n\
        add.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r1;\nret;\n}\n\
        .visible .entry bad(.param .u64 out)\n{\n.reg .b32 %r<3>;\n\
        wgmma.fence.sync.aligned;\nret;\n}\n";
    let dir = temp_dir();
    let ptx = dir.path().join("two.ptx");
    std::fs::write(&ptx, PTX).expect("write");
    let spv = dir.path().join("k.spv");
    let compile = |entry: Option<&str>| {
        let mut args = vec!["compile", path_str(&ptx), "-o", path_str(&spv)];
        args.extend(entry.map(|e| ["--entry", e]).into_iter().flatten());
        ptxvk(args)
    };
    expect_error(&compile(None), 1, "compile of the module", &["wgmma"]);
    expect_error(&compile(Some("bad")), 1, "compile --entry bad", &["wgmma"]);
    expect_ok(&compile(Some("good")), "compile --entry good");

    let Some(_) = vulkan("one_rejected_kernel_does_not_take_down_its_module") else {
        return;
    };
    let device = ptxvk::Device::default_device().expect("the device");
    let run = ptxvk([
        "run",
        path_str(&ptx),
        "--entry",
        "good",
        "--grid",
        "1",
        "--block",
        "4",
        "--arg",
        "buf:u32:zeros:4",
        "--json",
    ]);
    let json: serde_json::Value =
        serde_json::from_str(&expect_ok(&run, "run --entry good")).expect("JSON");
    assert_eq!(json["buffers"][0]["data"], serde_json::json!([0, 1, 2, 3]));

    let module = ptxvk::Module::from_ptx(&device, PTX).expect("the module loads");
    assert_eq!(module.kernel_names(), ["good"]);
    match module.kernel("bad") {
        Err(ptxvk::Error::Ptx { rendered, .. }) => {
            assert!(rendered.contains("wgmma") && rendered.contains(":18:1"), "{rendered}")
        }
        Err(e) => panic!("expected the kernel's diagnostic, got {e}"),
        Ok(_) => panic!("the rejected kernel was found"),
    }
    let out = device.zeroed::<u32>(4).expect("alloc");
    module
        .kernel("good")
        .expect("good")
        .launch(1, 4, 0, &[ptxvk::Arg::from(&out)])
        .expect("launch");
    assert_eq!(out.to_vec().expect("read"), [0, 1, 2, 3]);
}

/// `ptxvk exec` with a stand-in driver library (the commands run load no CUDA), the
/// given environment changes, in a scratch folder.
fn exec_with(name: &str, args: &[&str], env: &[(&str, Option<&str>)]) -> (Output, PathBuf) {
    let dir = std::env::temp_dir().join(format!("ptxvk-exec-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let library = dir.join("libcuda.so");
    std::fs::write(&library, b"not a library: nothing here loads CUDA").expect("stand-in");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ptxvk"));
    command.current_dir(&dir).arg("exec").args(args).env("PTXVK_LIBCUDA", &library);
    for name in [
        "CUPY_COMPILE_WITH_PTX",
        "CUPY_ACCELERATORS",
        "NUMBA_CUDA_ENABLE_PYNVJITLINK",
        "PTXVK_WARP_CUDA_OUTPUT",
    ] {
        command.env_remove(name);
    }
    for (name, value) in env {
        match value {
            Some(v) => command.env(name, v),
            None => command.env_remove(name),
        };
    }
    (command.output().expect("the ptxvk binary runs"), dir)
}

#[test]
fn exec_sets_what_clients_need_to_hand_over_ptx_and_keeps_what_the_user_set() {
    let show = "echo \"$CUPY_COMPILE_WITH_PTX|${CUPY_ACCELERATORS-unset}|\
                $NUMBA_CUDA_ENABLE_PYNVJITLINK|$PTXVK_WARP_CUDA_OUTPUT|$LD_LIBRARY_PATH|\
                $PYTHONPATH\"";
    let (out, dir) =
        exec_with("settings", &["--verbose", "--", "sh", "-c", show], &[("LD_LIBRARY_PATH", None)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let libraries = dir.join("ptxvk-libcuda");
    let hook = libraries.join("python");
    let expected = format!("1||0|ptx|{}|{}\n", libraries.display(), hook.display());
    assert_eq!(stdout(&out), expected);
    assert!(std::fs::read_link(libraries.join("libcuda.so.1")).is_ok());
    // --verbose says what was set, and why.
    assert!(
        stderr(&out).contains("CuPy CUPY_COMPILE_WITH_PTX=1: CuPy's NVRTC"),
        "{}",
        stderr(&out)
    );

    // A value the user set wins; earlier paths stay after ptxvk's.
    let env = [("CUPY_COMPILE_WITH_PTX", Some("0")), ("PYTHONPATH", Some("/mine"))];
    let (out, dir) = exec_with("override", &["-v", "--", "sh", "-c", show], &env);
    assert!(stdout(&out).starts_with("0||0|ptx|"), "{}", stdout(&out));
    let hook = dir.join("ptxvk-libcuda/python");
    assert!(stdout(&out).ends_with(&format!("|{}:/mine\n", hook.display())), "{}", stdout(&out));
    assert!(stderr(&out).contains("CUPY_COMPILE_WITH_PTX=0 (kept, set by you"), "{}", stderr(&out));

    // --no-client-settings sets only the library path.
    let (out, _) = exec_with("none", &["--no-client-settings", "--", "sh", "-c", show], &[]);
    assert!(stdout(&out).starts_with("|unset|||"), "{}", stdout(&out));
}

#[test]
fn exec_makes_nvidia_warp_compile_to_ptx_unless_the_program_chose() {
    let python = ["python3", "python"]
        .into_iter()
        .find(|p| Command::new(p).arg("-c").arg("pass").output().is_ok_and(|o| o.status.success()));
    let Some(python) = python else {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED: no python3 to run the Warp hook with");
        return;
    };
    // A stand-in `warp` package whose config leaves the choice open, and a
    // `sitecustomize` of the user's that the hook must still run.
    let packages = std::env::temp_dir().join(format!("ptxvk-exec-packages-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&packages);
    std::fs::create_dir_all(packages.join("warp/bin")).expect("package folder");
    std::fs::write(packages.join("warp/__init__.py"), "").expect("warp");
    std::fs::write(
        packages.join("sitecustomize.py"),
        "import os\nos.environ['USER_SITE_RAN'] = '1'\n",
    )
    .expect("user sitecustomize");
    // Warp's native library says which CUDA it was built with; a stand-in built with the
    // C compiler where there is one.
    let source = packages.join("warp.c");
    std::fs::write(&source, "int wp_cuda_toolkit_version(void) { return 13040; }\n").expect("c");
    let native = packages.join("warp/bin/warp.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&native)
        .arg(&source)
        .status()
        .is_ok_and(|s| s.success());
    let version = if built { "13040" } else { "None" };
    let script = "import os, warp.config as c; \
                  print(c.cuda_output, os.environ.get('USER_SITE_RAN'), \
                  os.environ.get('PTXVK_CUDA_DRIVER_VERSION'))";
    let path = packages.display().to_string();
    let cases = [
        ("cuda_output = None\n", None, format!("ptx 1 {version}\n")),
        ("cuda_output = 'cubin'\n", None, format!("cubin 1 {version}\n")),
        // A version the user set is kept.
        ("cuda_output = None\n", Some("12.9"), "ptx 1 12.9\n".to_string()),
    ];
    for (config, driver_version, expected) in cases {
        std::fs::write(packages.join("warp/config.py"), config).expect("warp.config");
        let env =
            [("PYTHONPATH", Some(path.as_str())), ("PTXVK_CUDA_DRIVER_VERSION", driver_version)];
        let (out, _) = exec_with("warp", &["--", python, "-c", script], &env);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out), expected, "with {config:?} and {driver_version:?}");
    }
}

// ----- doctor -----------------------------------------------------------------------------

#[test]
fn doctor_names_each_problem_with_its_fix() {
    let Some(list) = vulkan("doctor_names_each_problem_with_its_fix") else { return };
    let dir = temp_dir();
    let out = Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .current_dir(repo())
        .env("PTXVK_LIBCUDA", dir.path().join("libcuda.so"))
        .args(["doctor", "--venv"])
        .arg(dir.path().join("venv"))
        .output()
        .expect("the ptxvk binary runs");
    expect_exit(&out, 1, "doctor with two problems");
    let text = stdout(&out);
    assert!(text.lines().any(|l| l == "ok       Vulkan loader"), "{text}");
    for d in list {
        let name = d["name"].as_str().unwrap_or_default();
        let line = format!("ok       device {}: {name}", d["index"]);
        assert!(text.lines().any(|l| l.starts_with(&line)), "{line}:\n{text}");
    }
    let problems: Vec<&str> = text.lines().filter(|l| l.starts_with("PROBLEM")).collect();
    assert_eq!(problems.len(), 2, "{text}");
    assert!(problems[0].contains("no driver library"), "{text}");
    assert!(problems[0].contains("cargo build -p ptxvk-cuda-driver"), "{text}");
    assert!(problems[1].contains("no Python at"), "{text}");
    assert!(problems[1].contains("python3 -m venv"), "{text}");
    assert!(stderr(&out).contains("2 problem(s) found"), "{}", stderr(&out));
}
