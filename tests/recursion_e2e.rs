//! Recursive device functions end to end (`lower/src/sema/recursion.rs`): hand-written
//! PTX in `tests/ptx/recursion/` (each checked with NVIDIA's `ptxas -arch=sm_80`) and
//! the real compilers' PTX of `tests/kernels/recursion.cu`, launched on many threads
//! whose recursion depths all differ, through the Rust API and through
//! `ptxvk run --spec`, against Rust implementations of the same recursions. A
//! recursion deeper than the per-thread stack must end the launch with an error.

mod common;

use std::path::{Path, PathBuf};

use common::cases::{buf, val};
use common::*;
use ptxvk::spec::ElemType;

const BLOCK: u32 = 64;

fn ptx(name: &str) -> PathBuf {
    repo().join("tests").join("ptx").join("recursion").join(format!("{name}.ptx"))
}

fn run_case(path: &Path, entry: &str, ty: ElemType, case: &Case) {
    let Some(device) = device() else { return };
    let what = path.file_name().and_then(|f| f.to_str()).unwrap_or("?").to_string();
    let (_, got) = run_api(&device, path, entry, case);
    check(&format!("{what} `{entry}` (Rust API)"), ty, &got, &case.expected);
    let got = run_cli(path, entry, case);
    check(&format!("{what} `{entry}` (ptxvk run --spec)"), ty, &got, &case.expected);
}

/// An element type of the kernels' outputs.
trait Elem: Copy {
    const TY: ElemType;
    /// What every output element holds before the kernel runs: threads past `n` must
    /// not store.
    const SENTINEL: Self;
    fn bytes(v: &[Self]) -> Vec<u8>;
}

impl Elem for u32 {
    const TY: ElemType = ElemType::U32;
    const SENTINEL: u32 = 0xdead_beef;
    fn bytes(v: &[u32]) -> Vec<u8> {
        u32_bytes(v)
    }
}

impl Elem for u64 {
    const TY: ElemType = ElemType::U64;
    const SENTINEL: u64 = 0xdead_beef_dead_beef;
    fn bytes(v: &[u64]) -> Vec<u8> {
        u64_bytes(v)
    }
}

/// A per-thread kernel `entry(in, out, n)`: thread i < n reads in[i] and writes
/// `per_thread` elements of `out`, `reference(i, in[i])`; the grid has one more block
/// of threads than elements need, whose elements keep the sentinel.
fn per_thread<T: Elem>(
    path: &Path,
    entry: &str,
    input: &[u32],
    per_thread: usize,
    reference: impl Fn(u32, u32) -> Vec<T>,
) {
    let (sentinel, bytes, ty) = (T::SENTINEL, T::bytes, T::TY);
    let n = input.len();
    let threads = (n as u32).div_ceil(BLOCK) * BLOCK + BLOCK;
    let len = threads as usize * per_thread;
    let mut want = vec![sentinel; len];
    for (i, &x) in input.iter().enumerate() {
        let r = reference(i as u32, x);
        assert_eq!(r.len(), per_thread);
        want[i * per_thread..(i + 1) * per_thread].copy_from_slice(&r);
    }
    let mut padded = input.to_vec();
    padded.resize(threads as usize, 0);
    let case = Case {
        grid: [threads / BLOCK, 1, 1],
        block: [BLOCK, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::U32, u32_bytes(&padded)),
            buf(ty, bytes(&vec![sentinel; len])),
            val(n as u32),
        ],
        expected: vec![(1, bytes(&want))],
    };
    run_case(path, entry, ty, &case);
}

/// Inputs `0..count` scrambled, each `% modulus`: every depth below `modulus` occurs,
/// and neighbouring threads recurse to different depths.
fn depths(count: u32, modulus: u32) -> Vec<u32> {
    (0..count).map(|i| i.wrapping_mul(2_654_435_761).rotate_left(7) % modulus).collect()
}

fn per_thread_u32(path: &Path, entry: &str, input: &[u32], reference: impl Fn(u32, u32) -> u32) {
    per_thread(path, entry, input, 1, |i, x| vec![reference(i, x)]);
}

// ----- hand-written PTX ---------------------------------------------------------------

fn fibx(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    fibx(n - 1).wrapping_add(fibx(n - 2)).wrapping_add(u64::from(n & 1))
}

/// Two recursive calls per activation, a `.reg` parameter live across the first, a
/// 64-bit value across the second, a predicate across both.
#[test]
fn fib_with_values_live_across_calls() {
    let input = depths(300, 17);
    per_thread(&ptx("fib"), "fib", &input, 1, |_, x| vec![fibx(x)]);
}

fn fx(x: f32, n: u32) -> f32 {
    if n == 0 {
        x
    } else {
        fx(x * 0.5 + 1.0, n - 1) * 1.5 + x
    }
}

fn fy(y: f64, n: u32) -> f64 {
    if n == 0 {
        y
    } else {
        fy(y * 0.25 + 2.0, n - 1) * 1.25 - y
    }
}

fn fh(h: u16, n: u32) -> u16 {
    if n == 0 {
        h
    } else {
        fh(h.wrapping_mul(3).wrapping_add(1), n - 1).wrapping_add(h)
    }
}

/// `.f32`, `.f64` and `.b16` registers live across recursive calls.
#[test]
fn registers_of_every_kind_live_across_calls() {
    let input = depths(300, 30);
    per_thread(&ptx("types"), "types", &input, 3, |i, d| {
        vec![
            u64::from(fx(i as f32, d).to_bits()),
            fy(f64::from(i), d).to_bits(),
            u64::from(fh(i.wrapping_mul(1000) as u16, d)),
        ]
    });
}

fn is_even(n: u32) -> u32 {
    if n == 0 {
        1
    } else {
        is_odd(n - 1)
    }
}

fn is_odd(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        is_even(n - 1)
    }
}

fn rotate3(k: u32, x: u32, n: u32) -> u32 {
    if n == 0 {
        return x;
    }
    match k {
        0 => rotate3(1, x.wrapping_mul(3).wrapping_add(1), n - 1),
        1 => rotate3(2, x ^ n, n - 1),
        _ => rotate3(0, x.wrapping_add(7), n - 1).wrapping_add(1),
    }
}

/// A two-function cycle with `.param` parameters, a three-function one with `.reg`
/// parameters and results.
#[test]
fn mutual_recursion() {
    let input = depths(300, 101);
    per_thread_u32(&ptx("mutual"), "parity", &input, |_, x| is_even(x));
    per_thread_u32(&ptx("mutual"), "rotate3", &input, |i, x| {
        rotate3(0, i.wrapping_mul(0x9e37_79b1), x)
    });
}

/// `walk` of `tests/ptx/recursion/frames.ptx`: its own array per activation, an
/// `alloca`, and a write into the caller's array.
fn walk(d: u32, parent: &mut [u32; 4]) -> u32 {
    let mut buf = [0u32; 4];
    for (j, b) in buf.iter_mut().enumerate() {
        *b = d.wrapping_mul(10).wrapping_add(j as u32);
    }
    let k = d % 3 + 1;
    let a_sum: u32 = (0..k).map(|j| d + j).fold(0, u32::wrapping_add);
    parent[0] = parent[0].wrapping_add(d);
    let r = if d > 0 { walk(d - 1, &mut buf) } else { 0 };
    r.wrapping_add(buf[0])
        .wrapping_add(buf[1].wrapping_mul(3))
        .wrapping_add(buf[3])
        .wrapping_add(a_sum.wrapping_mul(5))
}

/// Each activation's `.local` array, `alloca` and a pointer into the caller's frame
/// (and the kernel's own `.local` word) must not alias any other activation's.
#[test]
fn local_memory_per_activation() {
    let input = depths(300, 41);
    per_thread_u32(&ptx("frames"), "frames", &input, |_, d| {
        let mut keep = [d.wrapping_mul(1_000_003), 0, 0, 0];
        let w = walk(d, &mut keep);
        w.wrapping_add(keep[0])
    });
}

/// A kernel's own `.local` variable named `$stack` is its 8 bytes, not the thread's
/// stack the recursive `tri`'s frames live on (`tests/ptx/recursion/named_stack.ptx`).
#[test]
fn user_variable_named_stack() {
    let input = depths(300, 41);
    per_thread_u32(&ptx("named_stack"), "named_stack", &input, |_, x| {
        let tri: u32 = (1..=x).fold(0, u32::wrapping_add);
        tri.wrapping_add(x.wrapping_mul(3))
    });
}

/// Recursion through function pointers (`.callprototype` and `.calltargets`).
#[test]
fn recursion_through_function_pointers() {
    let input = depths(300, 100);
    per_thread_u32(&ptx("indirect"), "indirect", &input, |_, n| {
        if n < 2 {
            n
        } else {
            (n - 2) * (n - 1) / 2 + 1
        }
    });
}

/// Recursion a few hundred levels deep fits the per-thread stack; thousands of levels
/// end the launch with a stack-overflow error naming the thread.
#[test]
fn deep_recursion_and_stack_overflow() {
    let input = depths(256, 100);
    per_thread_u32(&ptx("deep"), "deep", &input, |_, n| n * (n + 1) / 2);

    let Some(device) = device() else { return };
    let module = load(&device, &ptx("deep"));
    let mut depth = vec![3u32; 64];
    depth[37] = 5000;
    let input = device.buffer_from(&depth).expect("input");
    let out = device.zeroed::<u32>(64).expect("out");
    let err = module
        .kernel("deep")
        .expect("kernel")
        .launch(
            1,
            64,
            0,
            &[ptxvk::Arg::from(&input), ptxvk::Arg::from(&out), ptxvk::Arg::from(64u32)],
        )
        .expect_err("a recursion 5000 deep overflows the stack");
    assert!(
        err.to_string().contains(
            "ran out of stack in block (0, 0, 0), thread (37, 0, 0): recursion too deep for the 4 KiB per-thread stack"
        ),
        "{err}"
    );
}

// ----- real compilers' PTX ------------------------------------------------------------

fn fib(k: u32) -> u32 {
    if k < 2 {
        k
    } else {
        fib(k - 1).wrapping_add(fib(k - 2))
    }
}

fn mix_down(v: u32, d: i32) -> u32 {
    let buf: Vec<u32> = (0..8u32).map(|j| v.wrapping_mul(j + 1).wrapping_add(d as u32)).collect();
    let r = if d > 0 { mix_down(v ^ (v >> 3), d - 1) } else { 0 };
    r.wrapping_add(buf[(v.wrapping_add(d as u32) & 7) as usize])
}

fn outer(k: u32) -> u32 {
    if k == 0 {
        1
    } else {
        outer(k - 1).wrapping_mul(3).wrapping_add(fib(k) ^ (k << 4))
    }
}

/// The five results of `recursion.cu` for thread `i` with input `x`.
fn recursion_cu(i: u32, x: u32) -> Vec<u32> {
    let mut a: Vec<u32> = (0..12u32)
        .map(|j| x.wrapping_mul(2_654_435_761).wrapping_add(j.wrapping_mul(40503)) >> 7)
        .collect();
    a.sort_unstable();
    let s = a.iter().zip(1u32..).fold(0u32, |s, (&v, k)| s.wrapping_add(v.wrapping_mul(k)));
    vec![
        fib(x % 18),
        is_even(x) * 1000 + is_odd(x / 2),
        s,
        mix_down(x.wrapping_mul(77).wrapping_add(i), (x % 16) as i32),
        outer(x % 13),
    ]
}

/// nvcc, NVRTC and clang output of `tests/kernels/recursion.cu`: recursive `fib`,
/// mutual `is_even`/`is_odd`, a recursive quicksort of a local array through a
/// pointer, a recursive function with a dynamically indexed local array, and a
/// recursion calling another one (two machines, one inside the other).
#[test]
fn real_compiler_recursion() {
    let input = depths(200, 64);
    for path in variants("recursion") {
        per_thread(&path, "recursion", &input, 5, recursion_cu);
    }
}
