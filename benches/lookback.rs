//! The cost of the block scheduler (`ptxvk_lower::pass::schedule`) in a single-pass scan
//! with decoupled look-back (issue #38): `lookback_scan` of
//! `tests/kernels/block_order.cu` (nvcc -O3 sm_80; 256 threads, a tile of 1,024 `u32`
//! per block, thread 0 polls earlier tiles' status words with `ld.volatile`), over n
//! elements, three ways:
//!
//! - `look-back`: status words zeroed, as CUB starts; blocks wait for earlier tiles;
//! - `scheduled`: status words filled with every tile's final status first, so each
//!   block's look-back reads one word and never waits: the same rounds, no waiting;
//! - `unscheduled`: as `scheduled`, with the polling load made a plain one
//!   (`ld.global`), so the loop polls nothing and the kernel is compiled without the
//!   scheduler: the same work without rounds.
//!
//! Every result is checked against a CPU scan. Figures are medians of `RUNS`
//! synchronous launches after a warm-up (host-measured), with the SPIR-V size of each
//! build.
//!
//! ```text
//! cargo bench --bench lookback [-- MILLIONS...]
//! ```

mod common;

use std::time::Instant;

use common::median;
use ptxvk::{Arg, Device, Module};

const PTX: &str = include_str!("../tests/kernels/block_order.nvcc.sm_80.ptx");
const ENTRY: &str = "lookback_scan";
/// Items of a tile: 256 threads of 4.
const TILE: usize = 1024;
const RUNS: usize = 3;

fn compile(device: &Device, name: &str, text: &str) -> (Module, usize) {
    let compiled = ptxvk::compile::compile_with(name, text, Some(ENTRY), device.target())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let words = compiled.spirv.words.len();
    (Module::from_compiled(device, compiled).expect("load"), words)
}

/// The inclusive scan, and each tile's final status word (flag 2, its inclusive prefix).
fn model(input: &[u32]) -> (Vec<u32>, Vec<u64>) {
    let scan: Vec<u32> = input
        .iter()
        .scan(0u32, |sum, &x| {
            *sum = sum.wrapping_add(x);
            Some(*sum)
        })
        .collect();
    let status = scan.chunks(TILE).map(|c| 2 << 32 | u64::from(c[c.len() - 1])).collect();
    (scan, status)
}

/// Median milliseconds of `module`'s scan of `input`, its status words starting as
/// `status` before each launch; the output checked against `want`.
fn time(device: &Device, module: &Module, input: &[u32], status: &[u64], want: &[u32]) -> f64 {
    let n = input.len();
    let kernel = module.kernel(ENTRY).expect("kernel");
    let input = device.buffer_from(input).expect("in");
    let out = device.zeroed::<u32>(n).expect("out");
    let run = || {
        let words = device.buffer_from(status).expect("status");
        let args = [Arg::from(&input), Arg::from(&out), Arg::from(&words), Arg::from(n as u32)];
        let start = Instant::now();
        kernel.launch([n.div_ceil(TILE) as u32, 1, 1], [256, 1, 1], 0, &args).expect("launch");
        let ms = start.elapsed().as_secs_f64() * 1e3;
        assert!(out.to_vec().expect("read") == want, "n {n}: the scan is wrong");
        ms
    };
    run();
    median((0..RUNS).map(|_| run()).collect())
}

fn main() {
    let millions: Vec<f64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let millions = if millions.is_empty() { vec![1.0, 3.0, 10.0] } else { millions };
    let device = Device::default_device().expect("a Vulkan device");
    println!("device: {}", device.info().name);
    let (scheduled, words) = compile(&device, "block_order.nvcc.sm_80.ptx", PTX);
    let plain = PTX.replace("ld.volatile.global.u64", "ld.global.u64");
    let (unscheduled, plain_words) = compile(&device, "unscheduled", &plain);
    println!("SPIR-V: {words} words scheduled, {plain_words} unscheduled; ms per launch");
    println!("| n | blocks | look-back | scheduled, no waits | unscheduled |");
    println!("|---|---|---|---|---|");
    for m in millions {
        let n = (m * 1e6) as usize;
        let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 12).collect();
        let (want, done) = model(&input);
        let zeroed = vec![0u64; done.len()];
        let look_back = time(&device, &scheduled, &input, &zeroed, &want);
        let no_waits = time(&device, &scheduled, &input, &done, &want);
        let plain = time(&device, &unscheduled, &input, &done, &want);
        let blocks = done.len();
        println!("| {n} | {blocks} | {look_back:.1} | {no_waits:.1} | {plain:.1} |");
    }
}
