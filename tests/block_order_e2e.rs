//! Blocks that wait for earlier blocks (issue #39, item 2), end to end through the Rust
//! API, without cooperative launches: what CUB's single-pass scans and "last block"
//! reductions rely on. The kernels are `tests/kernels/block_order.cu` in every
//! checked-in build (nvcc -O3 sm_75/80/90, nvcc -G sm_80, NVRTC compute_52/70);
//! expected values come from CPU models written from its header comment, never from
//! ptxvk.
//!
//! What is checked (docs/status.md, *Blocks and grids*):
//! - on lavapipe, blocks start in linear order on each of its worker threads, so the
//!   order in which they start is a merge of at most as many increasing runs as it has
//!   threads (`ticket`, grids of 1 to 10,000 blocks);
//! - a decoupled look-back scan gives CUDA's result on grids of 1, 7, 1,000 and 10,000
//!   blocks (10,240,000 elements), and a last-block reduction on grids of 1 to 10,000;
//! - a block may wait for an earlier block that works for longer than the block
//!   scheduler's no-progress limit takes (`chain`);
//! - a wait that can never end (a flag nothing writes, two blocks waiting for each
//!   other) fails with an error naming the loop's line.
//!
//! Kernels that could spin forever run in child processes (`isolated`), as in
//! `forward_progress_e2e`.

mod common;

use std::path::{Path, PathBuf};

use ptxvk::{Arg, Device, Module};

#[path = "common/isolated.rs"]
mod isolated;

use isolated::{job, run_isolated, Job};

/// Output words are set to this before a launch, so words a kernel must leave alone are
/// checked too.
const UNTOUCHED: u32 = 0xdead_beef;
/// Items of a scan tile: 256 threads of 4 items.
const TILE: usize = 1024;

/// nvcc -O3 sm_75/80/90, nvcc -G sm_80, NVRTC compute_52/70.
fn builds() -> Vec<PathBuf> {
    common::builds("block_order", 6)
}

/// `nvcc.sm_80` for `.../block_order.nvcc.sm_80.ptx`.
fn build_name(path: &Path) -> String {
    let file = path.file_stem().and_then(|f| f.to_str()).expect("UTF-8 name");
    file.split_once('.').map_or(file, |(_, b)| b).to_string()
}

fn build(name: &str) -> PathBuf {
    builds().into_iter().find(|p| build_name(p) == name).expect("the build is checked in")
}

/// `entry` of the PTX file `path`, compiled alone, its SPIR-V validated, loaded.
fn load_entry(device: &Device, path: &Path, entry: &str) -> Module {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).expect("read PTX");
    let compiled = ptxvk::compile::compile_with(&name, &text, Some(entry), device.target())
        .unwrap_or_else(|e| panic!("{name}: {entry}: {e}"));
    ptxvk::spirv::validate(&compiled.spirv.words).unwrap_or_else(|e| panic!("{name}: {e}"));
    Module::from_compiled(device, compiled).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn launch(module: &Module, what: &str, entry: &str, grid: u32, block: u32, args: &[Arg<'_>]) {
    module
        .kernel(entry)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .launch([grid, 1, 1], [block, 1, 1], 0, args)
        .unwrap_or_else(|e| panic!("{what}: {entry} grid {grid}: {e}"));
}

fn words(rng: &mut common::Rng, len: usize) -> Vec<u32> {
    (0..len).map(|_| rng.next_u32()).collect()
}

/// The threads lavapipe runs workgroups on: `LP_NUM_THREADS`, else one per CPU (at
/// most 32, llvmpipe's `LP_MAX_THREADS`). Mesa counts the CPUs online, which may be
/// more than this process may use: the larger of both.
fn lavapipe_threads() -> usize {
    let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let online = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
    let cpus = usable.max(online).min(32);
    std::env::var("LP_NUM_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(cpus).max(1)
}

/// The fewest increasing runs the sequence `starts` (block indices in the order they
/// started) is a merge of: its longest decreasing subsequence.
fn increasing_runs(starts: &[u32]) -> usize {
    // Patience sorting on the reversed order: tails[i] is the largest last element of
    // a decreasing subsequence of length i + 1.
    let mut tails: Vec<u32> = Vec::new();
    for &b in starts {
        let i = tails.partition_point(|&t| t > b);
        if i == tails.len() {
            tails.push(b);
        } else {
            tails[i] = b;
        }
    }
    tails.len()
}

// ----------------------------------------------------------------- start order

/// `ticket`: each block's place in the order blocks started. The tickets are a
/// permutation of 0 .. G-1 on every device; on lavapipe the start order is a merge of
/// at most one increasing run per worker thread (llvmpipe's `lp_cs_tpool` hands each
/// thread a run of consecutive workgroups, in order, and a thread runs its run in
/// order).
fn check_start_order(device: &Device) {
    let path = build("nvcc.sm_80");
    let module = load_entry(device, &path, "ticket");
    let lavapipe = device.info().name.contains("llvmpipe");
    let threads = lavapipe_threads();
    for grid in [1u32, 7, 1000, 10_000] {
        for run in 0..8 {
            let counter = device.zeroed::<u32>(1).expect("counter");
            let order = device.buffer_from(&vec![UNTOUCHED; grid as usize]).expect("order");
            launch(
                &module,
                "ticket",
                "ticket",
                grid,
                32,
                &[Arg::from(&counter), Arg::from(&order)],
            );
            let tickets = order.to_vec().expect("read");
            let mut starts = vec![u32::MAX; grid as usize];
            for (b, &t) in tickets.iter().enumerate() {
                assert!(t < grid && starts[t as usize] == u32::MAX, "grid {grid}: {tickets:?}");
                starts[t as usize] = b as u32;
            }
            assert_eq!(counter.to_vec().expect("read"), [grid]);
            if lavapipe {
                let runs = increasing_runs(&starts);
                assert!(
                    runs <= threads,
                    "grid {grid}, run {run}: blocks started in {runs} increasing runs, more \
                     than lavapipe's {threads} threads: {:?}",
                    &starts[..starts.len().min(64)]
                );
            }
        }
    }
}

#[test]
fn blocks_start_in_linear_order_on_each_worker_thread() {
    let jobs = vec![job("ticket @ nvcc.sm_80", check_start_order)];
    run_isolated("blocks_start_in_linear_order_on_each_worker_thread", jobs);
}

// ------------------------------------------------------------ decoupled look-back

fn scan_model(input: &[u32]) -> Vec<u32> {
    input
        .iter()
        .scan(0u32, |sum, &x| {
            *sum = sum.wrapping_add(x);
            Some(*sum)
        })
        .collect()
}

/// `lookback_scan` over `n` items (one tile per block), against the model; the status
/// words end with flag 2 (an inclusive prefix) and the tile's prefix.
fn check_scan(device: &Device, module: &Module, what: &str, n: usize, rng: &mut common::Rng) {
    let grid = n.div_ceil(TILE);
    let input = words(rng, n);
    let want = scan_model(&input);
    let input_buf = device.buffer_from(&input).expect("in");
    // One word past the end, which the kernel must leave alone.
    let out = device.buffer_from(&vec![UNTOUCHED; n + 1]).expect("out");
    let status = device.zeroed::<u64>(grid).expect("status");
    let args = [Arg::from(&input_buf), Arg::from(&out), Arg::from(&status), Arg::from(n as u32)];
    launch(module, what, "lookback_scan", grid as u32, 256, &args);
    let got = out.to_vec().expect("read");
    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
        panic!("{what}: n {n}: out[{i}] = {:#x}, CUDA gives {:#x}", got[i], want[i]);
    }
    assert_eq!(got[n], UNTOUCHED, "{what}: n {n}: the word past the end");
    let status = status.to_vec().expect("read");
    for (tile, &word) in status.iter().enumerate() {
        let last = (TILE * (tile + 1)).min(n) - 1;
        assert_eq!(word, 2 << 32 | u64::from(want[last]), "{what}: n {n}: tile {tile}'s status");
    }
}

/// Grids of 1, 7 and 1,000 blocks, the last tiles partial.
fn check_scans(device: &Device, path: &Path) {
    let module = load_entry(device, path, "lookback_scan");
    let what = path.display().to_string();
    let mut rng = common::Rng(0x5ca7);
    for n in [300, 7 * TILE - 5, 1000 * TILE - 517] {
        check_scan(device, &module, &what, n, &mut rng);
    }
}

#[test]
fn a_decoupled_look_back_scan_gives_cudas_prefix_sums() {
    let jobs = builds()
        .into_iter()
        .map(|path| {
            job(format!("lookback_scan @ {}", build_name(&path)), move |d| check_scans(d, &path))
        })
        .collect();
    run_isolated("a_decoupled_look_back_scan_gives_cudas_prefix_sums", jobs);
}

/// 10,000 blocks, 10,240,000 elements, by nvcc -O3 (the debug build takes lavapipe
/// several times longer, for the same look-back).
#[test]
fn a_look_back_scan_of_ten_million_elements_over_ten_thousand_blocks() {
    let jobs = vec![job("lookback_scan 10^7 @ nvcc.sm_80", |device| {
        let path = build("nvcc.sm_80");
        let module = load_entry(device, &path, "lookback_scan");
        let mut rng = common::Rng(0x1e7);
        check_scan(device, &module, &path.display().to_string(), 10_000 * TILE, &mut rng);
    })];
    run_isolated("a_look_back_scan_of_ten_million_elements_over_ten_thousand_blocks", jobs);
}

// ------------------------------------------------------------------- last block

/// `last_block_sum`: the last block to take a ticket adds the partial sums of all.
fn check_last_block(device: &Device, path: &Path) {
    let module = load_entry(device, path, "last_block_sum");
    let what = path.display().to_string();
    let mut rng = common::Rng(0x1a57);
    for (grid, n) in [(1u32, 1000usize), (7, 5000), (1000, 600_000), (10_000, 2_560_001)] {
        let input = words(&mut rng, n);
        let want = input.iter().fold(0u32, |a, &x| a.wrapping_add(x));
        let input_buf = device.buffer_from(&input).expect("in");
        let partial = device.buffer_from(&vec![UNTOUCHED; grid as usize]).expect("partial");
        let count = device.zeroed::<u32>(1).expect("count");
        let result = device.buffer_from(&[UNTOUCHED; 2]).expect("result");
        let args = [
            Arg::from(&input_buf),
            Arg::from(&partial),
            Arg::from(&count),
            Arg::from(&result),
            Arg::from(n as u32),
        ];
        launch(&module, &what, "last_block_sum", grid, 256, &args);
        assert_eq!(result.to_vec().expect("read"), [want, UNTOUCHED], "{what}: grid {grid}");
        assert_eq!(count.to_vec().expect("read"), [0], "{what}: grid {grid}: the counter wraps");
    }
}

#[test]
fn the_last_block_to_finish_adds_every_blocks_part() {
    let jobs = builds()
        .into_iter()
        .map(|path| {
            job(format!("last_block_sum @ {}", build_name(&path)), move |d| {
                check_last_block(d, &path)
            })
        })
        .collect();
    run_isolated("the_last_block_to_finish_adds_every_blocks_part", jobs);
}

// ------------------------------------------------------- waits for slow blocks

fn chain_model(grid: u32, work: u32) -> Vec<u32> {
    let mut x = 1u32;
    for _ in 0..work {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
    }
    let mut out = vec![1 + (x & 0xffff)];
    for b in 1..grid {
        let before = out[b as usize - 1];
        out.push(1u32.wrapping_add(b).wrapping_add(before));
    }
    out
}

/// Steps of block 0's work in `chain`: a few seconds on lavapipe, several times the
/// 262,144 rounds (about half a second for a block of 32 threads) after which a block
/// that made no progress failed before blocks counted the grid's progress too.
const SLOW_WORK: u32 = 150_000_000;

/// `chain`: every block waits for the one before it, and block 0 works for a long time
/// first.
fn check_chain(device: &Device, path: &Path) {
    let module = load_entry(device, path, "chain");
    let what = path.display().to_string();
    for (grid, block, work) in [(2u32, 32u32, SLOW_WORK), (64, 32, SLOW_WORK), (1000, 32, 1000)] {
        let flags = device.zeroed::<u32>(grid as usize).expect("flags");
        let out = device.buffer_from(&vec![UNTOUCHED; grid as usize]).expect("out");
        let args = [Arg::from(&flags), Arg::from(&out), Arg::from(work)];
        launch(&module, &what, "chain", grid, block, &args);
        let want = chain_model(grid, work);
        assert_eq!(out.to_vec().expect("read"), want, "{what}: grid {grid} block {block}");
        assert_eq!(flags.to_vec().expect("read"), want, "{what}: grid {grid}: flags");
    }
}

#[test]
fn a_block_waits_for_an_earlier_block_however_long_it_works() {
    // One build: the work takes seconds, and the builds' loops are alike.
    let jobs = vec![job("chain @ nvcc.sm_80", |d| check_chain(d, &build("nvcc.sm_80")))];
    run_isolated("a_block_waits_for_an_earlier_block_however_long_it_works", jobs);
}

// ------------------------------------------------------- waits that cannot end

/// `entry` cannot finish: the launch fails saying the block spins without end, naming
/// a line of `entry` in `path` from which its polling load (`ld.volatile`) is at most
/// a few lines on, and writes no output.
fn check_endless(device: &Device, path: &Path, entry: &str, grid: u32) {
    let module = load_entry(device, path, entry);
    let what = path.display().to_string();
    let text = std::fs::read_to_string(path).expect("read PTX");
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(".entry") && l.contains(entry))
        .expect("the entry is in the file");
    let end = start + lines[start..].iter().position(|l| l.trim() == "}").expect("its end");
    let flags = device.zeroed::<u32>(2).expect("flags");
    let out = device.buffer_from(&vec![UNTOUCHED; grid as usize]).expect("out");
    let error = module
        .kernel(entry)
        .expect("kernel")
        .launch([grid, 1, 1], [32, 1, 1], 0, &[Arg::from(&flags), Arg::from(&out)])
        .expect_err("a wait that cannot end cannot complete");
    let message = error.to_string();
    assert!(message.contains("spins without end"), "{what}: {entry}: {message}");
    // The loop's line: its polling load comes before the next branch.
    let named = (start..end).any(|i| {
        let to_branch = lines[i..end].iter().take_while(|l| !l.contains("bra"));
        let polls = to_branch.into_iter().any(|l| l.contains("ld.volatile"));
        polls && message.contains(&format!("{what}:{} (", i + 1))
    });
    assert!(named, "{what}: {entry}: the message names no line of its polling loop: {message}");
    // Builds with line information name the `while` of the CUDA source too.
    let source = std::fs::read_to_string(path.with_file_name("block_order.cu")).expect("read");
    let cuda_lines: Vec<&str> = source.lines().collect();
    if let Some((_, rest)) = message.split_once("block_order.cu:") {
        let line: usize = rest
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a line number");
        assert!(cuda_lines[line - 1].contains("while"), "{what}: {entry}: {message}");
    }
    assert_eq!(out.to_vec().expect("read"), vec![UNTOUCHED; grid as usize], "{what}: {entry}");
}

#[test]
fn a_wait_for_a_block_that_never_comes_is_an_error_naming_its_line() {
    let mut jobs: Vec<Job> = Vec::new();
    for name in ["nvcc.sm_80", "nvcc-G.sm_80"] {
        jobs.push(job(format!("wait_unwritten @ {name}"), move |d| {
            check_endless(d, &build(name), "wait_unwritten", 3)
        }));
        jobs.push(job(format!("wait_cycle @ {name}"), move |d| {
            check_endless(d, &build(name), "wait_cycle", 2)
        }));
    }
    run_isolated("a_wait_for_a_block_that_never_comes_is_an_error_naming_its_line", jobs);
}
