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

use common::*;
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
