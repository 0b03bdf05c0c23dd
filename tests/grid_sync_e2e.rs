//! Grid synchronization (`cudaCGSynchronize`, what cooperative groups' `this_grid().sync()`
//! calls): blocks exchange values through global memory across two grid-wide barriers
//! (`tests/ptx/cooperative/grid_sync.ptx`), checked against a CPU model of the two
//! rounds; a grid larger than the device runs at once is refused before it could hang.
//! The same exchange around the barrier CUDA 12's cooperative-groups headers inline
//! (`tests/ptx/cooperative/grid_sync_envreg.ptx`: the grid workspace `%envreg2`/`%envreg1`
//! point to).
//! `cudaCGGetIntrinsicHandle`/`cudaCGSynchronize` come from libcudadevrt in CUDA;
//! ptxvk builds them in (`lower/src/sema/system.rs`).

mod common;

use common::*;
use ptxvk::{Arg, Error};

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

/// Runs the ring kernel of `ptx` on every grid the device can hold at once (up to 4
/// blocks), checks it against [`model`], and checks a grid one block larger is refused.
fn check_ring(ptx: &str) {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join(ptx));
    let kernel = module.kernel("ring").expect("kernel");
    // Every device guarantees one resident block (DeviceInfo::resident_workgroups);
    // the grid barrier then orders the block's warps, which the rounds read across.
    let resident = device.info().resident_workgroups;
    let threads = 64;
    for blocks in 1..=resident.min(4) {
        let n = (blocks * threads) as usize;
        let a = device.zeroed::<u32>(n).expect("a");
        let b = device.zeroed::<u32>(n).expect("b");
        kernel.launch(blocks, threads, 0, &[Arg::from(&a), Arg::from(&b)]).expect("launch");
        let (want_a, want_b) = model(blocks, threads);
        assert_eq!(b.to_vec().expect("b"), want_b, "{ptx}, {blocks} blocks: first round");
        assert_eq!(a.to_vec().expect("a"), want_a, "{ptx}, {blocks} blocks: second round");
    }
    // One block more than can be resident would wait forever: refused.
    let too_many = resident + 1;
    let n = (too_many * threads) as usize;
    let (a, b) = (device.zeroed::<u32>(n).expect("a"), device.zeroed::<u32>(n).expect("b"));
    match kernel.launch(too_many, threads, 0, &[Arg::from(&a), Arg::from(&b)]) {
        Err(Error::Launch(m)) => assert!(m.contains("synchronizes its grid"), "{m}"),
        other => panic!("expected a launch error, got {other:?}"),
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
