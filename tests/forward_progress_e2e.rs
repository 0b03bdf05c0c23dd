//! Forward progress between the warps of a block (issue #33), end to end through the
//! Rust API: loops whose exit depends on memory that another warp of the block writes,
//! later in program order, must finish whenever they finish on NVIDIA GPUs with
//! independent thread scheduling (sm_70 and later).
//!
//! The kernels: `tests/kernels/multi_warp_cg.cu` (cooperative groups' tiles of 64, 128
//! and 256 threads, and a reduction of the shape of cuda-samples'
//! `multi_warp_cg_reduce<int, 256, 128>`) and `tests/kernels/forward_progress.cu`
//! (volatile and `cuda::atomic_ref` flags from warp 1 to warp 0 and back, a
//! `__nanosleep` back-off, spin locks, libcu++'s block-scope `cuda::barrier` with
//! arrivals later in program order than the wait, a spin on another block's flag), in
//! every checked-in build (nvcc -O3, nvcc -G, NVRTC); hand-written PTX of the same
//! shapes in `tests/ptx/progress`; and a counter loop of 100,000 iterations. Expected
//! values come from CPU models written from the kernels' header comments (CUDA and PTX
//! semantics), never from ptxvk.
//!
//! A kernel that spins forever must fail, and must not take the other
//! kernels down with it: on lavapipe the spinning shader keeps running after the wait
//! for it timed out, and every later wait on the device waits for it again. So each
//! (kernel, build) runs in a child process (this test binary, filtered to one test and
//! told the job by environment variable) whose GPU waits time out after
//! `isolated::GPU_TIMEOUT_MS`, and which is killed at `isolated::CHILD_DEADLINE` if it
//! still has not finished. A test fails listing every job that failed, with its message.

mod common;

use std::path::{Path, PathBuf};

use ptxvk::{Arg, Device, Module};

#[path = "common/isolated.rs"]
mod isolated;

use isolated::{job, run_isolated, Job};

/// Output words are set to this before a launch, so words a kernel must leave alone are
/// checked too.
const UNTOUCHED: u32 = 0xdead_beef;

/// `nvcc.sm_80` for `.../forward_progress.nvcc.sm_80.ptx`.
fn build_name(path: &Path) -> String {
    let file = path.file_stem().and_then(|f| f.to_str()).expect("UTF-8 name");
    file.split_once('.').map_or(file, |(_, b)| b).to_string()
}

fn multi_warp_cg() -> Vec<PathBuf> {
    // nvcc -O3 sm_75/80/90, nvcc -G sm_80, NVRTC compute_52/70.
    common::builds("multi_warp_cg", 6)
}

fn forward_progress() -> Vec<PathBuf> {
    // nvcc -O3 sm_75/80/90, nvcc -G sm_80, NVRTC compute_70.
    common::builds("forward_progress", 5)
}

/// `paths` but the build named `build` (a part of the file name). Lavapipe compiles
/// some scheduled builds for tens of seconds each on a cold shader cache (the debug
/// builds of the tiles and of `cuda::barrier`, the software `cuda::barrier` of nvcc's
/// sm_75, which NVRTC's compute_70 build covers too); those run for one kernel of a
/// family, so that the suite fits the time `make test` has.
fn except(paths: Vec<PathBuf>, build: &str) -> Vec<PathBuf> {
    paths.into_iter().filter(|p| build_name(p) != build).collect()
}

fn hand_written(name: &str) -> PathBuf {
    common::repo().join(format!("tests/ptx/progress/{name}.ptx"))
}

/// `entry` of the PTX file `path`, compiled alone (as a CUDA driver loading the module
/// compiles the kernel it launches: a function of the file that `entry` does not reach
/// cannot fail it), its SPIR-V validated with spirv-val, and loaded on `device`.
fn load_entry(device: &Device, path: &Path, entry: &str) -> Module {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).expect("read PTX");
    let compiled = ptxvk::compile::compile_with(&name, &text, Some(entry), device.target())
        .unwrap_or_else(|e| panic!("{name}: {entry}: {e}"));
    ptxvk::spirv::validate(&compiled.spirv.words).unwrap_or_else(|e| panic!("{name}: {e}"));
    Module::from_compiled(device, compiled).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Jobs running `check(device, module, path)` for `entry` of every build of a kernel.
fn every_build(
    paths: &[PathBuf],
    entry: &'static str,
    check: fn(&Device, &Module, &str, &'static str),
) -> Vec<Job> {
    paths
        .iter()
        .map(|path| {
            let path = path.clone();
            job(format!("{entry} @ {}", build_name(&path)), move |device| {
                let module = load_entry(device, &path, entry);
                check(device, &module, &path.display().to_string(), entry)
            })
        })
        .collect()
}

/// The job of a hand-written file of `tests/ptx/progress`, whose entry is its name.
fn hand_written_job(name: &'static str, check: fn(&Device, &Module, &str, &'static str)) -> Job {
    job(format!("{name} @ tests/ptx/progress"), move |device| {
        let path = hand_written(name);
        let module = load_entry(device, &path, name);
        check(device, &module, &path.display().to_string(), name)
    })
}

/// The launch shapes a build runs: all of them for nvcc's sm_80 build and the
/// hand-written files, the first two for the other builds, the first for the debug
/// build. Each block size is a pipeline of its own, which lavapipe compiles for seconds
/// (the debug build's for about twenty): the main build covers every shape, the others
/// a partial warp and several blocks.
fn shapes<T: Copy>(name: &str, all: &[T]) -> Vec<T> {
    let keep = if name.contains("nvcc-G") {
        1
    } else if name.contains("nvcc.sm_80") || name.contains("tests/ptx/") {
        all.len()
    } else {
        2
    };
    all[..keep.min(all.len())].to_vec()
}

/// Launches `entry` as a 1-D grid of 1-D blocks; a failure names the file and shape.
fn launch(module: &Module, name: &str, entry: &str, grid: u32, block: u32, args: &[Arg<'_>]) {
    module
        .kernel(entry)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .launch([grid, 1, 1], [block, 1, 1], 0, args)
        .unwrap_or_else(|e| panic!("{name}: {entry} grid {grid} block {block}: {e}"));
}

/// `len` words that all differ in the low bits, with a random top: test inputs under
/// which a wrong partner, tile or round changes the result.
fn words(rng: &mut common::Rng, len: usize, bits: u32) -> Vec<u32> {
    (0..len).map(|_| rng.next_u32() >> (32 - bits)).collect()
}

/// Signed inputs in [-2^20, 2^20): tile sums of up to 1024 of them fit in an int, as
/// CUDA's int arithmetic (where overflow is undefined) needs.
fn signed_inputs(rng: &mut common::Rng, len: usize) -> Vec<i32> {
    (0..len).map(|_| (rng.next_u32() >> 11) as i32 - (1 << 20)).collect()
}

// ------------------------------------------------------- cooperative groups' tiles

/// What `tiles64`/`tiles128`/`tiles256` write (multi_warp_cg.cu's header): six ints per
/// element below n, from the tile of `size` threads that the element's thread is in.
fn tiles_model(size: usize, grid: usize, block: usize, n: usize, input: &[i32]) -> Vec<i32> {
    let mut out = vec![UNTOUCHED as i32; 6 * n];
    for b in 0..grid {
        let v = |t: usize| if b * block + t < n { input[b * block + t] } else { 0 };
        for t in 0..block {
            let i = b * block + t;
            if i >= n {
                continue;
            }
            let (m, rank) = (t / size, t % size);
            let tile: Vec<i32> = (m * size..(m + 1) * size).map(v).collect();
            out[6 * i] = tile.iter().sum();
            out[6 * i + 1] = *tile.iter().max().expect("a tile has threads");
            out[6 * i + 2] = (rank + 1000 * m) as i32;
            out[6 * i + 3] = tile[(37 * m + 5) % size];
            out[6 * i + 4] = 3 * tile[(rank + 1) % size] + 1;
            out[6 * i + 5] = (block / size) as i32;
        }
    }
    out
}

fn check_tiles(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let size: usize = entry["tiles".len()..].parse().expect("tilesNN");
    let mut rng = common::Rng(0x7115 + size as u64);
    // (grid, block, n): several blocks, one element per thread or the last block part
    // empty (threads past n take part with 0), and blocks of several tiles.
    let mut all_shapes = vec![(3, 256, 3 * 256 - 37), (2, 512, 1024), (1, 1024, 1000)];
    if size <= 128 {
        all_shapes.push((2, 384, 700));
        all_shapes.push((4, 128, 512));
    }
    if size == 64 {
        all_shapes.push((3, 64, 192));
        all_shapes.push((2, 192, 300));
    }
    for (grid, block, n) in shapes(name, &all_shapes) {
        let input = signed_inputs(&mut rng, n);
        let input_buf = device.buffer_from(&input).expect("in");
        let out = device.buffer_from(&vec![UNTOUCHED as i32; 6 * n]).expect("out");
        let args = [Arg::from(&input_buf), Arg::from(&out), Arg::from(n as i32)];
        launch(module, name, entry, grid as u32, block as u32, &args);
        let want = tiles_model(size, grid, block, n, &input);
        let got = out.to_vec().expect("read");
        for (i, (g, w)) in got.chunks(6).zip(want.chunks(6)).enumerate() {
            assert_eq!(g, w, "{name}: {entry} grid {grid} block {block} n {n}: element {i}");
        }
    }
}

#[test]
fn tiles_of_64_threads_sync_reduce_and_shuffle_as_cuda_does() {
    let jobs = every_build(&except(multi_warp_cg(), "nvcc-G.sm_80"), "tiles64", check_tiles);
    run_isolated("tiles_of_64_threads_sync_reduce_and_shuffle_as_cuda_does", jobs);
}

#[test]
fn tiles_of_128_threads_sync_reduce_and_shuffle_as_cuda_does() {
    let jobs = every_build(&multi_warp_cg(), "tiles128", check_tiles);
    run_isolated("tiles_of_128_threads_sync_reduce_and_shuffle_as_cuda_does", jobs);
}

#[test]
fn tiles_of_256_threads_sync_reduce_and_shuffle_as_cuda_does() {
    let jobs = every_build(&except(multi_warp_cg(), "nvcc-G.sm_80"), "tiles256", check_tiles);
    run_isolated("tiles_of_256_threads_sync_reduce_and_shuffle_as_cuda_does", jobs);
}

/// What `mw_reduce` writes: per block, the sums of its tiles of 128 threads (each
/// thread's grid-stride sum) and their total, all wrapping.
fn mw_reduce_model(grid: usize, block: usize, input: &[i32]) -> Vec<i32> {
    let tiles = block / 128;
    let stride = grid * block;
    let mut out = Vec::new();
    for b in 0..grid {
        let thread_sum = |t: usize| {
            (b * block + t..input.len()).step_by(stride).fold(0i32, |s, j| s.wrapping_add(input[j]))
        };
        let sums: Vec<i32> = (0..tiles)
            .map(|m| (m * 128..(m + 1) * 128).fold(0i32, |s, t| s.wrapping_add(thread_sum(t))))
            .collect();
        out.extend(&sums);
        out.push(sums.iter().fold(0i32, |s, &x| s.wrapping_add(x)));
    }
    out
}

fn check_mw_reduce(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let mut rng = common::Rng(0x3e2);
    // (grid, block, n): several elements per thread with a ragged end, fewer elements
    // than threads (tiles with nothing to add), blocks of one tile.
    for (grid, block, n) in
        shapes(name, &[(4, 256, 5000), (3, 256, 700), (2, 256, 100), (3, 128, 1111)])
    {
        let input = signed_inputs(&mut rng, n);
        let input_buf = device.buffer_from(&input).expect("in");
        let words = grid * (block / 128 + 1);
        let out = device.buffer_from(&vec![UNTOUCHED as i32; words]).expect("out");
        let args = [Arg::from(&input_buf), Arg::from(&out), Arg::from(n as u32)];
        launch(module, name, entry, grid as u32, block as u32, &args);
        assert_eq!(
            out.to_vec().expect("read"),
            mw_reduce_model(grid, block, &input),
            "{name}: {entry} grid {grid} block {block} n {n}: [tile sums..., block sum] per block"
        );
    }
}

#[test]
fn a_multi_warp_cg_reduce_of_the_cuda_samples_shape_adds_every_element() {
    let jobs = every_build(&multi_warp_cg(), "mw_reduce", check_mw_reduce);
    run_isolated("a_multi_warp_cg_reduce_of_the_cuda_samples_shape_adds_every_element", jobs);
}

// ------------------------------------------------------------ flags between warps

/// The hand-off of `flag_volatile` and `flag_atomic`: warp 1 lane L (L < partners)
/// sends x + r each round and gets back 2 (x + r) + L; warp 0 lane L sums what it was
/// sent. Per block 64 words: warp 0's sums, then warp 1's final x; warp-0 lanes without
/// a partner write 0, missing warp-1 lanes nothing.
fn handoff_model(grid: usize, partners: usize, rounds: u32, input: &[u32]) -> Vec<u32> {
    let mut out = vec![UNTOUCHED; 64 * grid];
    for b in 0..grid {
        for lane in 0..32 {
            if lane >= partners {
                out[64 * b + lane] = 0;
                continue;
            }
            let (mut x, mut acc) = (input[32 * b + lane], 0u32);
            for r in 0..rounds {
                let sent = x.wrapping_add(r);
                acc = acc.wrapping_add(sent);
                x = sent.wrapping_mul(2).wrapping_add(lane as u32);
            }
            out[64 * b + lane] = acc;
            out[64 * b + 32 + lane] = x;
        }
    }
    out
}

fn check_flag_volatile(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let mut rng = common::Rng(0xf1a9);
    // (grid, block, rounds): two warps; idle warps after them, one of them partial; one
    // round and many.
    for (grid, block, rounds) in
        shapes(name, &[(1, 64, 1), (3, 96, 5), (2, 80, 3), (1, 256, 8), (2, 64, 0)])
    {
        let input = words(&mut rng, 32 * grid, 20);
        let input_buf = device.buffer_from(&input).expect("in");
        let out = device.buffer_from(&vec![UNTOUCHED; 64 * grid]).expect("out");
        let args = [Arg::from(&input_buf), Arg::from(&out), Arg::from(rounds)];
        launch(module, name, entry, grid as u32, block, &args);
        assert_eq!(
            out.to_vec().expect("read"),
            handoff_model(grid, 32, rounds, &input),
            "{name}: {entry} grid {grid} block {block} rounds {rounds}"
        );
    }
}

fn check_flag_atomic(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let mut rng = common::Rng(0xa70);
    // (grid, block, rounds): warp 1 full, or partial down to one thread.
    for (grid, block, rounds) in shapes(name, &[(1, 64, 4), (2, 48, 3), (3, 33, 2), (1, 40, 6)]) {
        let input = words(&mut rng, 32 * grid, 20);
        let input_buf = device.buffer_from(&input).expect("in");
        let out = device.buffer_from(&vec![UNTOUCHED; 64 * grid]).expect("out");
        let args = [Arg::from(&input_buf), Arg::from(&out), Arg::from(rounds)];
        launch(module, name, entry, grid as u32, block, &args);
        assert_eq!(
            out.to_vec().expect("read"),
            handoff_model(grid, block as usize - 32, rounds, &input),
            "{name}: {entry} grid {grid} block {block} rounds {rounds}"
        );
    }
}

/// Launches a hand-written two-warp hand-off (in: 32 words per block, out: 64) for
/// several shapes and compares with `model(b, lane, in)` = (warp 0's word, warp 1's).
fn check_two_warp_ptx(
    device: &Device,
    module: &Module,
    name: &str,
    entry: &str,
    model: fn(&[u32], usize) -> (u32, u32),
) {
    let mut rng = common::Rng(0x2f0);
    for (grid, block) in shapes(name, &[(1usize, 64u32), (3, 64), (2, 96), (1, 80)]) {
        let input = words(&mut rng, 32 * grid, 32);
        let input_buf = device.buffer_from(&input).expect("in");
        let out = device.buffer_from(&vec![UNTOUCHED; 64 * grid]).expect("out");
        let args = [Arg::from(&input_buf), Arg::from(&out)];
        launch(module, name, entry, grid as u32, block, &args);
        let mut want = vec![0u32; 64 * grid];
        for b in 0..grid {
            for lane in 0..32 {
                let (w0, w1) = model(&input[32 * b..32 * b + 32], lane);
                want[64 * b + lane] = w0;
                want[64 * b + 32 + lane] = w1;
            }
        }
        assert_eq!(out.to_vec().expect("read"), want, "{name}: {entry} grid {grid} block {block}");
    }
}

fn check_volatile_handoff(device: &Device, module: &Module, name: &str, entry: &'static str) {
    check_two_warp_ptx(device, module, name, entry, |input, lane| {
        (input[lane], input[lane].wrapping_mul(2).wrapping_add(lane as u32))
    });
}

fn check_relaxed_count(device: &Device, module: &Module, name: &str, entry: &'static str) {
    check_two_warp_ptx(device, module, name, entry, |input, lane| {
        let sum = input.iter().fold(0u32, |s, &x| s.wrapping_add(x));
        (sum.wrapping_add(lane as u32), sum.wrapping_add(((lane + 1) % 32) as u32))
    });
}

fn check_acquire_release(device: &Device, module: &Module, name: &str, entry: &'static str) {
    check_two_warp_ptx(device, module, name, entry, |input, lane| {
        let d = |l: usize| input[l].wrapping_mul(7);
        (d(lane), (d(lane) ^ d(31 - lane)).wrapping_add(lane as u32))
    });
}

#[test]
fn a_volatile_flag_goes_from_warp_1_to_warp_0_and_back() {
    let mut jobs = every_build(&forward_progress(), "flag_volatile", check_flag_volatile);
    jobs.push(hand_written_job("volatile_handoff", check_volatile_handoff));
    run_isolated("a_volatile_flag_goes_from_warp_1_to_warp_0_and_back", jobs);
}

#[test]
fn acquire_release_and_relaxed_flags_go_from_warp_1_to_warp_0_and_back() {
    let mut jobs = every_build(&forward_progress(), "flag_atomic", check_flag_atomic);
    jobs.push(hand_written_job("acquire_release", check_acquire_release));
    jobs.push(hand_written_job("relaxed_count", check_relaxed_count));
    run_isolated("acquire_release_and_relaxed_flags_go_from_warp_1_to_warp_0_and_back", jobs);
}

/// Two warps of one block through a flag in global memory (tests/ptx/progress/
/// global_flag.ptx): per block out = [2a; 32] ++ [3a; 32] with a = in + 1, flag 2.
fn check_global_flag(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let mut rng = common::Rng(0x61f);
    for (grid, block) in shapes(name, &[(1, 64), (4, 64), (2, 128)]) {
        let input = words(&mut rng, 32 * grid, 30);
        let input_buf = device.buffer_from(&input).expect("in");
        let out = device.buffer_from(&vec![UNTOUCHED; 64 * grid]).expect("out");
        let flags = device.zeroed::<u32>(grid).expect("flags");
        let args = [Arg::from(&input_buf), Arg::from(&out), Arg::from(&flags)];
        launch(module, name, entry, grid as u32, block, &args);
        let mut want = Vec::new();
        for chunk in input.chunks(32) {
            let a: Vec<u32> = chunk.iter().map(|x| x.wrapping_add(1)).collect();
            want.extend(a.iter().map(|a| a.wrapping_mul(2)));
            want.extend(a.iter().map(|a| a.wrapping_mul(3)));
        }
        assert_eq!(out.to_vec().expect("read"), want, "{name}: grid {grid} block {block}");
        assert_eq!(flags.to_vec().expect("read"), vec![2; grid], "{name}: flags");
    }
}

#[test]
fn warps_of_one_block_hand_a_flag_in_global_memory_back_and_forth() {
    let jobs = vec![hand_written_job("global_flag", check_global_flag)];
    run_isolated("warps_of_one_block_hand_a_flag_in_global_memory_back_and_forth", jobs);
}

// ------------------------------------------------------------ back-off, locks

/// `nanosleep_wait` / `nanosleep_backoff`: warp 0 sums the data of the block's last
/// warp (5 in + lane per thread), the last warp writes in ^ 0x5a5a, warps between g.
fn nanosleep_model(grid: usize, block: usize, input: &[u32]) -> Vec<u32> {
    let last = (block - 1) / 32;
    let mut out = vec![0u32; grid * block];
    for b in 0..grid {
        let base = b * block;
        let data_sum = (32 * last..block)
            .map(|t| input[base + t].wrapping_mul(5).wrapping_add((t % 32) as u32))
            .fold(0u32, u32::wrapping_add);
        for t in 0..block {
            let g = base + t;
            out[g] = match t / 32 {
                0 => data_sum.wrapping_add(t as u32),
                w if w == last => input[g] ^ 0x5a5a,
                _ => g as u32,
            };
        }
    }
    out
}

/// Launches `entry` on `shapes` with a buffer of random input words and one of output
/// words, one each per thread, and compares the output with `model(grid, block, in)`.
fn check_words_per_thread(
    device: &Device,
    module: &Module,
    name: &str,
    entry: &str,
    seed: u64,
    shapes: &[(usize, usize)],
    model: fn(usize, usize, &[u32]) -> Vec<u32>,
) {
    let mut rng = common::Rng(seed);
    for &(grid, block) in shapes {
        let n = grid * block;
        let input = words(&mut rng, n, 32);
        let input_buf = device.buffer_from(&input).expect("in");
        let out = device.buffer_from(&vec![UNTOUCHED; n]).expect("out");
        let args = [Arg::from(&input_buf), Arg::from(&out)];
        launch(module, name, entry, grid as u32, block as u32, &args);
        let want = model(grid, block, &input);
        assert_eq!(out.to_vec().expect("read"), want, "{name}: {entry} grid {grid} block {block}");
    }
}

fn check_nanosleep(device: &Device, module: &Module, name: &str, entry: &'static str) {
    // The last warp right after warp 0, partial (one thread, 4 threads), or several
    // warps later.
    let shapes = shapes(name, &[(1, 33), (2, 64), (3, 100), (1, 256), (2, 161)]);
    check_words_per_thread(device, module, name, entry, 0x5eef, &shapes, nanosleep_model);
}

#[test]
fn a_nanosleep_back_off_waits_for_a_later_warp() {
    let mut jobs = every_build(&forward_progress(), "nanosleep_wait", check_nanosleep);
    jobs.push(hand_written_job("nanosleep_backoff", check_nanosleep));
    run_isolated("a_nanosleep_back_off_waits_for_a_later_warp", jobs);
}

/// A spin lock taken once by every thread: each block's tickets are a permutation of
/// 0 .. block, its counter is block and its sum the wrapping sum of its inputs. (Which
/// thread gets which ticket is up to the scheduler.)
fn check_lock(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let mut rng = common::Rng(0x10c4);
    for (grid, block) in shapes(name, &[(2, 100), (1, 32), (1, 1), (3, 256), (1, 1024)]) {
        let n = grid * block;
        let input = words(&mut rng, n, 32);
        let input_buf = device.buffer_from(&input).expect("in");
        let out = device.buffer_from(&vec![UNTOUCHED; n]).expect("out");
        let totals = device.buffer_from(&vec![UNTOUCHED; 2 * grid]).expect("totals");
        let args = [Arg::from(&input_buf), Arg::from(&out), Arg::from(&totals)];
        launch(module, name, entry, grid as u32, block as u32, &args);
        let tickets = out.to_vec().expect("read");
        let totals = totals.to_vec().expect("read");
        for b in 0..grid {
            let mut mine = tickets[b * block..(b + 1) * block].to_vec();
            mine.sort_unstable();
            let want: Vec<u32> = (0..block as u32).collect();
            assert_eq!(
                mine, want,
                "{name}: {entry} grid {grid} block {block}: tickets of block {b}"
            );
            let sum =
                input[b * block..(b + 1) * block].iter().fold(0u32, |s, &x| s.wrapping_add(x));
            assert_eq!(
                totals[2 * b..2 * b + 2],
                [block as u32, sum],
                "{name}: {entry} grid {grid} block {block}: [count, sum] of block {b}"
            );
        }
    }
}

#[test]
fn a_shared_memory_spin_lock_serializes_every_thread_of_the_block() {
    let mut jobs = every_build(&forward_progress(), "spin_lock", check_lock);
    jobs.extend(every_build(&forward_progress(), "spin_lock_try", check_lock));
    jobs.push(hand_written_job("cas_lock", check_lock));
    run_isolated("a_shared_memory_spin_lock_serializes_every_thread_of_the_block", jobs);
}

// ----------------------------------------------------------- libcu++ barriers

/// `late_arrivals`: warp 0 lane L gets the sum over k >= 32 of (3 in[k] + k) * (k ^ L);
/// the other threads copy their input.
fn late_arrivals_model(grid: usize, block: usize, input: &[u32]) -> Vec<u32> {
    let mut out = input.to_vec();
    for b in 0..grid {
        let s = |k: usize| input[b * block + k].wrapping_mul(3).wrapping_add(k as u32);
        for lane in 0..32 {
            out[b * block + lane] = (32..block)
                .map(|k| s(k).wrapping_mul((k ^ lane) as u32))
                .fold(0u32, u32::wrapping_add);
        }
    }
    out
}

/// The launch shapes of a libcu++ `cuda::barrier` kernel: below sm_80 (nvcc's sm_75,
/// NVRTC's compute_70) the barrier is software whose arrival aggregates the warp with
/// `match.any`, a kernel lavapipe compiles for about a minute per block size once
/// scheduled; those builds run the second shape only.
fn barrier_shapes<T: Copy>(name: &str, all: &[T]) -> Vec<T> {
    if name.contains("sm_75") || name.contains("compute_70") {
        all[1..2].to_vec()
    } else {
        shapes(name, all)
    }
}

fn check_late_arrivals(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let shapes = barrier_shapes(name, &[(1, 33), (2, 64), (3, 80), (1, 256), (2, 1024)]);
    check_words_per_thread(device, module, name, entry, 0x1a7e, &shapes, late_arrivals_model);
}

#[test]
fn a_block_scope_cuda_barrier_waits_for_arrivals_later_in_program_order() {
    let jobs = every_build(&forward_progress(), "late_arrivals", check_late_arrivals);
    run_isolated("a_block_scope_cuda_barrier_waits_for_arrivals_later_in_program_order", jobs);
}

/// `producer_consumer`: consumer lane L folds, round by round, acc = 3 acc + r + the
/// round's buffer words j = L, L + 32, ... (producer j writes in[j] (r + 1) + r).
fn producer_consumer_model(grid: usize, block: usize, rounds: u32, input: &[u32]) -> Vec<u32> {
    let p = block - 32;
    let mut out = vec![0u32; 32 * grid];
    for b in 0..grid {
        for lane in 0..32 {
            let mut acc = 0u32;
            for r in 0..rounds {
                acc = acc.wrapping_mul(3).wrapping_add(r);
                for j in (lane..p).step_by(32) {
                    let word = input[p * b + j].wrapping_mul(r + 1).wrapping_add(r);
                    acc = acc.wrapping_add(word);
                }
            }
            out[32 * b + lane] = acc;
        }
    }
    out
}

fn check_producer_consumer(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let mut rng = common::Rng(0x9c0);
    // One producer; one producer warp; a partial one; several, over many rounds.
    for (grid, block, rounds) in
        barrier_shapes(name, &[(1, 33, 1), (2, 64, 4), (3, 80, 3), (1, 256, 6), (2, 96, 1)])
    {
        let input = words(&mut rng, (block as usize - 32) * grid, 32);
        let input_buf = device.buffer_from(&input).expect("in");
        let out = device.buffer_from(&vec![UNTOUCHED; 32 * grid]).expect("out");
        let args = [Arg::from(&input_buf), Arg::from(&out), Arg::from(rounds)];
        launch(module, name, entry, grid as u32, block, &args);
        assert_eq!(
            out.to_vec().expect("read"),
            producer_consumer_model(grid, block as usize, rounds, &input),
            "{name}: {entry} grid {grid} block {block} rounds {rounds}"
        );
    }
}

#[test]
fn producer_and_consumer_warps_take_turns_on_two_cuda_barriers() {
    let builds = except(except(forward_progress(), "nvcc.sm_75"), "nvcc-G.sm_80");
    let jobs = every_build(&builds, "producer_consumer", check_producer_consumer);
    run_isolated("producer_and_consumer_warps_take_turns_on_two_cuda_barriers", jobs);
}

// ------------------------------------------------------ the scheduler's own rules

/// `collective_kinds`: both warps end with the sum of the block's four input words,
/// which lanes 0-3 of warp 1 form with partial-mask shuffles while lanes 4-31 wait at
/// a whole-warp `bar.warp.sync`; warps past 1 (a one-lane warp in 65 threads) exit.
fn check_collective_kinds(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let mut rng = common::Rng(0xc01);
    for (grid, block) in shapes(name, &[(1, 64), (2, 65), (3, 96)]) {
        let input = words(&mut rng, 4 * grid, 32);
        let input_buf = device.buffer_from(&input).expect("in");
        let out = device.buffer_from(&vec![UNTOUCHED; 64 * grid]).expect("out");
        let args = [Arg::from(&input_buf), Arg::from(&out)];
        launch(module, name, entry, grid as u32, block, &args);
        let want: Vec<u32> = (0..64 * grid)
            .map(|i| {
                input[4 * (i / 64)..4 * (i / 64) + 4].iter().fold(0u32, |a, &x| a.wrapping_add(x))
            })
            .collect();
        assert_eq!(out.to_vec().expect("read"), want, "{name}: {entry} grid {grid} block {block}");
    }
}

/// `deadlock`: lane 0 of each warp waits at `bar.sync`, the other lanes at a whole-warp
/// `bar.warp.sync`; neither can finish. The launch fails naming a wait's line, and the
/// output is untouched.
fn check_deadlock(device: &Device, module: &Module, name: &str, entry: &'static str) {
    let text = std::fs::read_to_string(name).expect("read PTX");
    let line = |needle: &str| text.lines().position(|l| l.trim() == needle).map(|i| i + 1);
    let sites = [line("bar.sync 0;"), line("bar.warp.sync -1;")];
    for block in [64u32, 33] {
        let out = device.buffer_from(&vec![UNTOUCHED; block as usize]).expect("out");
        let kernel = module.kernel(entry).expect("kernel");
        let error = kernel
            .launch([1, 1, 1], [block, 1, 1], 0, &[Arg::from(&out)])
            .expect_err("a deadlock cannot complete");
        let message = error.to_string();
        let named = sites.iter().flatten().any(|l| message.contains(&format!(":{l} (")));
        assert!(message.contains("deadlocked") && named, "{name}: block {block}: {message}");
        assert_eq!(out.to_vec().expect("read"), vec![UNTOUCHED; block as usize]);
    }
}

#[test]
fn collectives_meet_their_kind_and_a_deadlock_is_an_error() {
    let jobs = vec![
        hand_written_job("collective_kinds", check_collective_kinds),
        hand_written_job("deadlock", check_deadlock),
    ];
    run_isolated("collectives_meet_their_kind_and_a_deadlock_is_an_error", jobs);
}

// ------------------------------------------------------------- across blocks

/// Block 0 spins on a global flag that only block 1, a *later* block, sets: CUDA does
/// not promise that this ends (waits for earlier blocks are `block_order_e2e`'s). Two
/// outcomes pass: `Ok` with CUDA's result (out = [42, 7]), or an error, when compiling
/// or launching, whose headline says it is about a spin or wait loop. A GPU timeout is
/// the hang itself and fails. (On lavapipe with two or more threads the launch
/// finishes, the blocks running on different threads of its pool; with
/// `LP_NUM_THREADS=1` block 0 spins before block 1 can start, and the launch fails as
/// an endless wait.)
fn check_cross_block(device: &Device, path: &Path) {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).expect("read PTX");
    // The first line only: a diagnostic's source excerpt may quote any identifier.
    let names_the_loop = |message: &str| {
        let headline = message.lines().next().unwrap_or("").to_lowercase();
        ["spin", "wait", "loop"].iter().any(|w| headline.contains(w))
    };
    let compiled = ptxvk::compile::compile_with(&name, &text, Some("cross_block"), device.target())
        .and_then(|c| Module::from_compiled(device, c));
    let module = match compiled {
        Ok(m) => m,
        Err(e) => {
            let message = e.to_string();
            assert!(names_the_loop(&message), "{name}: refused, but not for its spin: {message}");
            return;
        }
    };
    for block in [1u32, 32, 64] {
        let flag = device.zeroed::<u32>(1).expect("flag");
        let out = device.buffer_from(&[UNTOUCHED; 2]).expect("out");
        let result = module.kernel("cross_block").unwrap_or_else(|e| panic!("{name}: {e}")).launch(
            [2, 1, 1],
            [block, 1, 1],
            0,
            &[Arg::from(&flag), Arg::from(&out)],
        );
        match result {
            Ok(_) => {
                assert_eq!(out.to_vec().expect("read"), [42, 7], "{name}: block {block}: out");
                assert_eq!(flag.to_vec().expect("read"), [41], "{name}: block {block}: flag");
            }
            Err(ptxvk::Error::Runtime(ptxvk::vk::Error::Timeout { ms })) => {
                panic!("{name}: block {block}: the launch hung (no result after {ms} ms)")
            }
            Err(e) => {
                let message = e.to_string();
                assert!(names_the_loop(&message), "{name}: block {block}: {message}");
                // The other block sizes would be refused the same way.
                return;
            }
        }
    }
}

#[test]
fn a_spin_on_another_blocks_flag_finishes_or_fails_but_never_hangs() {
    let jobs = forward_progress()
        .into_iter()
        .map(|path| {
            job(format!("cross_block @ {}", build_name(&path)), move |d| {
                check_cross_block(d, &path)
            })
        })
        .collect();
    run_isolated("a_spin_on_another_blocks_flag_finishes_or_fails_but_never_hangs", jobs);
}

// -------------------------------------------------------------- long loops

/// One thread per result: thread t runs `n + t` iterations of a register-only loop,
/// counting them and stepping a linear congruential generator from x = t (which no
/// compiler can close-form, so the loop must really run), and stores [count, x].
const COUNT_LOOP: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry count_loop(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;

    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [n];
    add.u32 %r2, %r2, %r1;
    mov.u32 %r3, 0;
    mov.u32 %r4, %r1;
LOOP:
    add.u32 %r3, %r3, 1;
    mad.lo.u32 %r4, %r4, 1664525, 1013904223;
    setp.lt.u32 %p1, %r3, %r2;
    @%p1 bra LOOP;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r3, %r4};
    ret;
}
"#;

fn check_count_loop(device: &Device, n: u32, block: u32) {
    let module = Module::from_ptx(device, COUNT_LOOP).expect("count_loop compiles");
    let out = device.buffer_from(&vec![UNTOUCHED; 2 * block as usize]).expect("out");
    let launched = module.kernel("count_loop").expect("kernel").launch(
        [1, 1, 1],
        [block, 1, 1],
        0,
        &[Arg::from(&out), Arg::from(n)],
    );
    match launched {
        Ok(_) => {}
        // A driver that cuts loops short (Mesa 22.3's lavapipe, its probe says) must
        // refuse the loop loudly: never a wrong count.
        Err(e)
            if device.findings().loop_limit.is_some()
                && ptxvk::printf::is_loop_limit(&e.to_string()) =>
        {
            return
        }
        Err(e) => panic!("count_loop n {n} block {block}: {e}"),
    }
    let got = out.to_vec().expect("read");
    for t in 0..block {
        let count = n + t;
        let x = (0..count).fold(t, |x, _| x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223));
        let word = 2 * t as usize;
        assert_eq!(got[word..word + 2], [count, x], "count_loop n {n} block {block}: thread {t}");
    }
}

#[test]
fn a_loop_of_100000_iterations_runs_them_all() {
    let jobs = vec![
        // One thread: exactly 100,000.
        job("100000 iterations, 1 thread", |d| check_count_loop(d, 100_000, 1)),
        // A partial warp of threads whose trip counts differ by one.
        job("100000 + t iterations, 40 threads", |d| check_count_loop(d, 100_000, 40)),
        // Past 2^24, where a float-counted limit would lose iterations.
        job("2^24 + 1 iterations, 1 thread", |d| check_count_loop(d, (1 << 24) + 1, 1)),
    ];
    run_isolated("a_loop_of_100000_iterations_runs_them_all", jobs);
}
