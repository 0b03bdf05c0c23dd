//! CUDA's system calls from the kernels of `tests/kernels/syscalls.cu` (nvcc 13
//! sm_75/80/90, NVRTC 12 compute_52/70, clang 14 sm_70) on the default Vulkan device:
//! `printf` output formatted on the host, compared with Rust's own formatting of the
//! same values; a failed `assert` and a `trap` end the launch with an error naming the
//! kernel, the thread and (for assertions) the message, file, line and function.

mod common;

use common::*;
use ptxvk::{Arg, Device, Error};

fn launch(
    device: &Device,
    path: &std::path::Path,
    entry: &str,
    input: &[i32],
    extra: Option<&ptxvk::DeviceBuffer<i32>>,
) -> Result<ptxvk::LaunchStats, Error> {
    let module = load(device, path);
    let kernel = module.kernel(entry).expect("kernel");
    let buf = device.buffer_from(input).expect("input");
    let mut args = vec![Arg::from(&buf), Arg::from(input.len() as i32)];
    if let Some(out) = extra {
        args.push(Arg::from(out));
    }
    kernel.launch((input.len() as u32).div_ceil(32) + 1, 32, 0, &args)
}

/// C's `%e` (exponent with a sign and at least two digits) from Rust's `{:e}`.
fn c_exp(x: f64) -> String {
    let s = format!("{:.6e}", x.abs());
    let (m, e) = s.split_once('e').expect("exponent");
    let e: i32 = e.parse().expect("number");
    let sign = if x < 0.0 { "-" } else { "" };
    format!("{sign}{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// The lines `print_values` prints for `input`, sorted (threads print in any order).
fn expected_lines(input: &[i32]) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, &v) in input.iter().enumerate() {
        let hex = if v == 0 { "0".to_string() } else { format!("{:#x}", v as u32) };
        let half = f64::from(v as f32 * 0.5);
        let name = if v & 1 != 0 { "odd" } else { "even" };
        let ch = char::from(b'a' + (i % 26) as u8);
        lines.push(format!(
            "i={i} blk={} v={v} hex={hex} half={half:.3} sci={} str={name} big={} ch={ch}%",
            i / 32,
            c_exp(f64::from(v) * 1e10),
            i64::from(v) * 1_000_000_007
        ));
        if v < 0 {
            lines.push(format!("negative {v:5}|{v:<5}|{:05}", v.wrapping_neg()));
        }
    }
    lines.sort();
    lines
}

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

fn input(n: usize) -> Vec<i32> {
    let mut rng = Rng(13);
    let mut v: Vec<i32> = (0..n).map(|_| rng.next_u32() as i32 >> (rng.next_u32() % 31)).collect();
    v[..6].copy_from_slice(&[0, -1, i32::MIN, i32::MAX, 13, 7]);
    v
}

#[test]
fn printf_output_matches_c_formatting() {
    let Some(device) = device() else { return };
    let values = input(70);
    for path in variants("syscalls") {
        let stats = launch(&device, &path, "print_values", &values, None)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(sorted_lines(&stats.printf), expected_lines(&values), "{}", path.display());
    }
    // The CLI prints the same output before its summary.
    let path = variants("syscalls").remove(0);
    let data: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .arg("run")
        .arg(&path)
        .args(["--entry", "print_values", "--grid", "4", "--block", "32"])
        .arg("--arg")
        .arg(format!("buf:s32:{}", data.join(",")))
        .arg("--arg")
        .arg(format!("s32:{}", values.len()))
        .output()
        .expect("run ptxvk");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let printed: Vec<&str> =
        text.lines().filter(|l| l.starts_with("i=") || l.starts_with("negative")).collect();
    assert_eq!(sorted_lines(&printed.join("\n")), expected_lines(&values));
}

/// More output than the 1 MiB printf buffer holds: whole records are kept, the rest is
/// counted as dropped, as CUDA drops output past its FIFO.
#[test]
fn printf_overflow_drops_whole_records() {
    let Some(device) = device() else { return };
    let values = input(12_000);
    let path = variants("syscalls").remove(0);
    let stats = launch(&device, &path, "print_values", &values, None).expect("launch");
    let expected = expected_lines(&values);
    let mut printed = 0;
    for line in stats.printf.lines() {
        if line.starts_with("[ptxvk:") {
            assert!(line.contains("bytes of printf output did not fit"), "{line}");
            continue;
        }
        assert!(expected.binary_search(&line.to_string()).is_ok(), "unexpected line {line:?}");
        printed += 1;
    }
    assert!(printed > 5000 && printed < expected.len(), "{printed} of {} lines", expected.len());
    assert!(stats.printf.ends_with("were dropped]\n"));
}

/// The line of `syscalls.cu` with the assertion, found in the source.
fn assert_line() -> usize {
    let src = std::fs::read_to_string(repo().join("tests/kernels/syscalls.cu")).expect("source");
    src.lines().position(|l| l.trim() == "ASSERT(v > 0);").expect("ASSERT line") + 1
}

#[test]
fn failed_assertion_names_message_file_line_and_thread() {
    let Some(device) = device() else { return };
    let mut values: Vec<i32> = (1..=70).collect();
    for path in variants("syscalls") {
        values[37] = 5;
        launch(&device, &path, "check_positive", &values, None)
            .unwrap_or_else(|e| panic!("{}: all positive, yet {e}", path.display()));
        values[37] = -4;
        let err = launch(&device, &path, "check_positive", &values, None)
            .expect_err("a failed assertion fails the launch");
        let Error::KernelFailed { message, .. } = &err else { panic!("{err:?}") };
        // NVRTC's __FILE__ is its program name (scripts/gen-ptx); the others' the path
        // they were given.
        let nvrtc = path.to_string_lossy().contains(".nvrtc.");
        let file = if nvrtc { "syscalls.cu" } else { "tests/kernels/syscalls.cu" };
        let want = format!(
            "kernel `check_positive`: {file}:{}: check_positive: block: [1,0,0], thread: [5,0,0] Assertion `v > 0` failed.",
            assert_line()
        );
        assert_eq!(message, &want, "{}", path.display());
    }
}

#[test]
fn trap_fails_the_launch_and_names_the_thread() {
    let Some(device) = device() else { return };
    let mut values: Vec<i32> = (100..170).collect();
    for path in variants("syscalls") {
        let out = device.zeroed::<i32>(values.len()).expect("out");
        launch(&device, &path, "trap_on", &values, Some(&out)).expect("no trap");
        let want: Vec<i32> = values.iter().map(|v| v + 1).collect();
        assert_eq!(out.to_vec().expect("read"), want);
        values[20] = 13;
        let err = launch(&device, &path, "trap_on", &values, Some(&out)).expect_err("trap");
        assert_eq!(
            err.to_string(),
            "kernel `trap_on` executed `trap` in block (0, 0, 0), thread (20, 0, 0)",
            "{}",
            path.display()
        );
        assert_eq!(err.exit_code(), 3);
        values[20] = 120;
    }
}

/// `malloc`/`free` from the module's device heap, which persists across launches and
/// returns NULL when it is exhausted.
#[test]
fn malloc_and_free_on_the_device_heap() {
    let Some(device) = device() else { return };
    let values: Vec<i32> = input(500);
    let n = values.len();
    let mut want: Vec<i64> = Vec::with_capacity(2 * n + 1);
    for (i, &v) in values.iter().enumerate() {
        let k = 1 + i % 7;
        // `v + j` is an int addition, which wraps.
        want.push((0..k as i32).map(|j| i64::from(v.wrapping_add(j))).sum());
        want.push(1);
    }
    want.push(0);
    for path in variants("syscalls") {
        let module = load(&device, &path);
        let kernel = module.kernel("heap").expect("kernel");
        let buf = device.buffer_from(&values).expect("input");
        // Twice: the second launch allocates after the first one's memory.
        for _ in 0..2 {
            let out = device.zeroed::<i64>(2 * n + 1).expect("out");
            let args = [Arg::from(&buf), Arg::from(n as i32), Arg::from(&out)];
            kernel.launch((n as u32).div_ceil(64), 64, 0, &args).expect("launch");
            assert_eq!(out.to_vec().expect("read"), want, "{}", path.display());
        }
    }
}
