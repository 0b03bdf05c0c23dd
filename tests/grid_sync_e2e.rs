//! Grid synchronization (`cudaCGSynchronize`, what cooperative groups' `this_grid().sync()`
//! calls): blocks exchange values through global memory across two grid-wide barriers
//! (`tests/ptx/cooperative/grid_sync.ptx`), checked against a CPU model of the two
//! rounds, on grids of up to 70,000 blocks (the kernel runs in phases, one per grid
//! barrier and one more).
//! The same exchange around the barrier CUDA 12's cooperative-groups headers inline
//! (`tests/ptx/cooperative/grid_sync_envreg.ptx`: the grid workspace `%envreg2`/`%envreg1`
//! point to).
//! `cudaCGGetIntrinsicHandle`/`cudaCGSynchronize` come from libcudadevrt in CUDA;
//! ptxvk builds them in (`lower/src/sema/system.rs`).

mod common;
#[path = "common/isolated.rs"]
mod isolated;

use common::*;
use isolated::{job, run_isolated};
use ptxvk::Arg;

/// The kernel's two rounds for `blocks` blocks of `threads`: `b[g] = a0[next thread of
/// the next block] + 1`, then `a[g] = b[previous thread of the previous block] * 2`,
/// with `a0[g] = 3g + 7`.
fn model(blocks: u32, threads: u32) -> (Vec<u32>, Vec<u32>) {
    let n = blocks * threads;
    let a0: Vec<u32> = (0..n).map(|g| 3 * g + 7).collect();
    let at = |block: u32, t: u32| (block * threads + t) as usize;
    let (block, t) = (|g: u32| g / threads, |g: u32| g % threads);
    let b: Vec<u32> =
        (0..n).map(|g| a0[at((block(g) + 1) % blocks, (t(g) + 1) % threads)] + 1).collect();
    let a: Vec<u32> = (0..n)
        .map(|g| b[at((block(g) + blocks - 1) % blocks, (t(g) + threads - 1) % threads)] * 2)
        .collect();
    (a, b)
}

/// Runs the ring kernel of `ptx` on grids of 1 to 1,000 blocks, which are not all
/// resident at once on any device (the kernel is cut into phases at its grid barriers,
/// `ptxvk_lower::pass::split_grid`), and on one of 70,000 blocks, more than one
/// dispatch holds (65,535 per dimension): the phases run phase-major.
fn check_ring(ptx: &str) {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join(ptx));
    let kernel = module.kernel("ring").expect("kernel");
    for (blocks, threads) in [(1, 64), (2, 64), (7, 64), (1000, 64), (70_000, 32)] {
        let n = (blocks * threads) as usize;
        let a = device.zeroed::<u32>(n).expect("a");
        let b = device.zeroed::<u32>(n).expect("b");
        kernel.launch(blocks, threads, 0, &[Arg::from(&a), Arg::from(&b)]).expect("launch");
        let (want_a, want_b) = model(blocks, threads);
        assert_eq!(b.to_vec().expect("b"), want_b, "{ptx}, {blocks} blocks: first round");
        assert_eq!(a.to_vec().expect("a"), want_a, "{ptx}, {blocks} blocks: second round");
    }
}

#[test]
fn blocks_exchange_values_across_grid_synchronizations() {
    check_ring("tests/ptx/cooperative/grid_sync.ptx");
}

/// CUDA 12's cooperative groups inline the grid barrier on the workspace that
/// `%envreg2`/`%envreg1` point to (CuPy's fused kernels with reductions use it).
#[test]
fn inline_grid_barrier_on_the_envreg_workspace() {
    check_ring("tests/ptx/cooperative/grid_sync_envreg.ptx");
}

/// A grid barrier in a loop that never ends (`tests/ptx/cooperative/grid_sync_forever.ptx`)
/// fails the launch with the device's timeout instead of dispatching phases for ever; in
/// a child process, whose timeout is 3 s.
#[test]
fn a_grid_barrier_in_an_endless_loop_times_out() {
    let jobs = vec![job("forever", |device| {
        device.vk().set_timeout(std::time::Duration::from_secs(3));
        let module = load(device, &repo().join("tests/ptx/cooperative/grid_sync_forever.ptx"));
        let kernel = module.kernel("forever").expect("kernel");
        let flag = device.zeroed::<u32>(1).expect("flag");
        let started = std::time::Instant::now();
        let got = kernel.launch(4, 32, 0, &[Arg::from(&flag)]);
        let message = got.expect_err("an endless grid-barrier loop must fail").to_string();
        assert!(message.contains("did not finish within 3000 ms"), "{message}");
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "{message}");
    })];
    run_isolated("a_grid_barrier_in_an_endless_loop_times_out", jobs);
}

/// Threads per block of `tests/kernels/grid_sync.cu`.
const THREADS: usize = 128;

/// `phases3` of `tests/kernels/grid_sync.cu` for `blocks` blocks, from its source: the
/// three rounds with wrapping `int` arithmetic.
fn phases3_model(input: &[i32], blocks: usize) -> Vec<i32> {
    let n = blocks * THREADS;
    let at = |b: usize, t: usize| b * THREADS + t;
    let mut out = vec![0; n];
    for b in 0..blocks {
        for t in 0..THREADS {
            let r = |b: usize, t: usize| input[at(b, t)].wrapping_mul(3).wrapping_add(t as i32);
            let s0 = |b: usize, t: usize| input[at(b, t)] ^ b as i32;
            // Round 1: v from the next block's tmp (= its r), s1 the neighbour's s.
            let v = |b: usize, t: usize| r((b + 1) % blocks, THREADS - 1 - t);
            let s1 = |b: usize, t: usize| s0(b, (t + 1) % THREADS);
            // Round 2: tmp = v + s1, s = s1 * 2 + r.
            let tmp2 = |b: usize, t: usize| v(b, t).wrapping_add(s1(b, t));
            let s2 = |b: usize, t: usize| s1(b, t).wrapping_mul(2).wrapping_add(r(b, t));
            let prev = (b + blocks - 1) % blocks;
            out[at(b, t)] =
                tmp2(prev, t).wrapping_sub(s2(b, (t + 3) % THREADS)).wrapping_add(r(b, t));
        }
    }
    out
}

/// The block tree and the sum over blocks of `cg_diag`'s `dot`, in its order.
fn dot_model(x: &[f32], y: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for (bx, by) in x.chunks(THREADS).zip(y.chunks(THREADS)) {
        let mut sh: Vec<f32> = bx.iter().zip(by).map(|(a, b)| a * b).collect();
        let mut s = THREADS / 2;
        while s > 0 {
            for t in 0..s {
                sh[t] += sh[t + s];
            }
            s >>= 1;
        }
        sum += sh[0];
    }
    sum
}

/// `cg_diag` of `tests/kernels/grid_sync.cu`: the conjugate-gradient iterations on a
/// diagonal system, every operation rounded to nearest as the intrinsics are.
fn cg_model(d: &[f32], b: &[f32], iters: u32) -> Vec<f32> {
    let n = d.len();
    let (mut x, mut r, mut p) = (vec![0.0f32; n], b.to_vec(), b.to_vec());
    let mut rr = dot_model(&r, &r);
    for _ in 0..iters {
        let ap: Vec<f32> = (0..n).map(|i| d[i] * p[i]).collect();
        let alpha = rr / dot_model(&p, &ap);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
        }
        let rr_new = dot_model(&r, &r);
        let beta = rr_new / rr;
        for i in 0..n {
            p[i] = r[i] + beta * p[i];
        }
        rr = rr_new;
    }
    x
}

/// nvcc -O3 sm_75/80/90, nvcc -G sm_80, NVRTC compute_52/70 (CUDA 13's and 12's
/// cooperative groups inline the grid barrier on the grid workspace).
#[test]
fn cuda_grid_sync_kernels_on_grids_larger_than_the_device_runs() {
    let Some(device) = device() else { return };
    for path in common::builds("grid_sync", 6) {
        let name = path.display().to_string();
        let module = load(&device, &path);
        // 1,000 blocks, three grid barriers, shared memory and registers across them.
        let blocks = 1000;
        let n = blocks * THREADS;
        let input: Vec<i32> = (0..n)
            .map(|i| ((i as u32).wrapping_mul(2_654_435_761) >> 7) as i32 - (1 << 23))
            .collect();
        let inp = device.buffer_from(&input).expect("in");
        let out = device.zeroed::<i32>(n).expect("out");
        let tmp = device.zeroed::<i32>(n).expect("tmp");
        let k = module.kernel("phases3").expect("phases3");
        let args = [Arg::from(&inp), Arg::from(&out), Arg::from(&tmp)];
        k.launch(blocks as u32, THREADS as u32, 0, &args).expect("phases3");
        assert_eq!(out.to_vec().expect("out"), phases3_model(&input, blocks), "{name}: phases3");
        // A few conjugate-gradient iterations: grid barriers inside a loop.
        let blocks = 40;
        let n = blocks * THREADS;
        let d: Vec<f32> = (0..n).map(|i| 1.0 + (i % 7) as f32 * 0.25).collect();
        let b: Vec<f32> = (0..n).map(|i| ((i % 11) as f32 - 5.0) * 0.5 + 0.125).collect();
        let (dd, bb) = (device.buffer_from(&d).expect("d"), device.buffer_from(&b).expect("b"));
        let x = device.zeroed::<f32>(n).expect("x");
        let partial = device.zeroed::<f32>(blocks).expect("partial");
        let iters: i32 = 3;
        let k = module.kernel("cg_diag").expect("cg_diag");
        let args =
            [Arg::from(&dd), Arg::from(&bb), Arg::from(&x), Arg::from(&partial), Arg::value(iters)];
        k.launch(blocks as u32, THREADS as u32, 0, &args).expect("cg_diag");
        let got: Vec<u32> = x.to_vec().expect("x").iter().map(|v: &f32| v.to_bits()).collect();
        let want: Vec<u32> = cg_model(&d, &b, iters as u32).iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "{name}: cg_diag");
        // Half of each block exits before the barrier; its shared words survive it.
        let blocks = 300;
        let n = blocks * THREADS;
        let input: Vec<i32> = (0..n).map(|i| (i as i32).wrapping_mul(-7_919) ^ 0x5a5a).collect();
        let inp = device.buffer_from(&input).expect("in");
        let out = device.zeroed::<i32>(n).expect("out");
        let k = module.kernel("early_exit").expect("early_exit");
        k.launch(blocks as u32, THREADS as u32, 0, &[Arg::from(&inp), Arg::from(&out)])
            .expect("early_exit");
        assert_eq!(
            out.to_vec().expect("out"),
            early_exit_model(&input, blocks),
            "{name}: early_exit"
        );
    }
}

/// `early_exit` of `tests/kernels/grid_sync.cu`: the lower half of each block subtracts
/// its own shared word from the one the upper half wrote before exiting; the upper
/// half's outputs stay 0.
fn early_exit_model(input: &[i32], blocks: usize) -> Vec<i32> {
    let s = |b: usize, t: usize| input[b * THREADS + t].wrapping_mul(5).wrapping_add(b as i32);
    let mut out = vec![0; blocks * THREADS];
    for b in 0..blocks {
        for t in 0..THREADS / 2 {
            out[b * THREADS + t] = s(b, t + THREADS / 2).wrapping_sub(s(b, t));
        }
    }
    out
}
