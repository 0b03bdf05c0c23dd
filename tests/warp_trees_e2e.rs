//! Warp shuffle trees (`pass::warp_trees`) on the default Vulkan device: six trees of
//! clang 14's PTX (`tests/ptx/warp/trees.ptx`: `.down` and `.bfly`, offsets 16..1 and
//! 1..16, int add and max, f32 add on values of very different magnitudes) for blocks
//! of 32, 40 (a partial last warp) and 256 threads, compared bit for bit with a CPU
//! model of 32-lane warps (PTX ISA 9.2 §9.7.8.6), compiled for the device (subgroup
//! shuffles where its subgroups are narrower than 32 and of a fixed size) and without
//! the pass (every shuffle an exchange).
//!
//! And trees whose results only lane 0 of each warp reads (the pass's lane-0 form), as
//! clang 14 and nvcc 13 compile them (`tests/ptx/warp/trees_lane0_{clang,nvcc}.ptx`),
//! in blocks of 32, 40, 36 and 256 threads: in blocks of 40 and 36 the store behind
//! `i % 32 == 0` is made by other lanes than 0 (lane 24 of warp 0 in block 1 of 40),
//! whose values the exact form, which the kernel selects by the block's shape, gives.

mod common;

use common::*;
use ptxvk::{Arg, Device, Module};

/// Each lane's value after a tree: `step(own, shuffled)` per offset, the source lane
/// `x ^ d` (`bfly`) or `x + d` (`down`, the lane itself beyond lane 31), 0 from a lane
/// past the warp's `lanes`.
fn tree(v: &[u32], down: bool, deltas: &[u32], step: impl Fn(u32, u32) -> u32) -> Vec<u32> {
    let lanes = v.len();
    let mut cur = v.to_vec();
    for &d in deltas {
        let d = d as usize;
        cur = (0..lanes)
            .map(|x| {
                let src = if !down {
                    x ^ d
                } else if x + d <= 31 {
                    x + d
                } else {
                    x
                };
                let r = if src < lanes { cur[src] } else { 0 };
                step(cur[x], r)
            })
            .collect();
    }
    cur
}

/// One warp of the input: the global index of its lane 0, that lane's `tid.x`, and
/// each lane's int and float bits (0 past `n`); a partial last warp has fewer lanes.
struct Warp {
    first: usize,
    tid: usize,
    ints: Vec<u32>,
    floats: Vec<u32>,
}

/// The warps of blocks of `block` threads over `total` threads, in order.
fn warps(ints: &[i32], floats: &[f32], n: usize, block: usize, total: usize) -> Vec<Warp> {
    let mut out = Vec::new();
    for b0 in (0..total).step_by(block) {
        for w in (0..block).step_by(32) {
            let lanes = (block - w).min(32);
            let at = |l: usize| b0 + w + l;
            let bits =
                |l: usize, get: &dyn Fn(usize) -> u32| if at(l) < n { get(at(l)) } else { 0 };
            out.push(Warp {
                first: b0 + w,
                tid: w,
                ints: (0..lanes).map(|l| bits(l, &|i| ints[i] as u32)).collect(),
                floats: (0..lanes).map(|l| bits(l, &|i| floats[i].to_bits())).collect(),
            });
        }
    }
    out
}

/// The kernel's six words per thread, warp by warp.
fn reference(ints: &[i32], floats: &[f32], n: usize, block: usize, total: usize) -> Vec<u32> {
    let mut out = vec![0u32; 6 * n];
    let down = [16, 8, 4, 2, 1];
    let up = [1, 2, 4, 8, 16];
    let add = |a: u32, b: u32| a.wrapping_add(b);
    let max = |a: u32, b: u32| (a as i32).max(b as i32) as u32;
    let fadd = |a: u32, b: u32| (f32::from_bits(a) + f32::from_bits(b)).to_bits();
    for Warp { first, ints: v, floats: f, .. } in warps(ints, floats, n, block, total) {
        let results = [
            tree(&v, true, &down, add),
            tree(&v, false, &up, max),
            tree(&f, true, &down, fadd),
            tree(&f, false, &up, fadd),
            tree(&v, true, &up, add),
            tree(&f, false, &down, fadd),
        ];
        for l in (0..v.len()).filter(|&l| first + l < n) {
            for (k, r) in results.iter().enumerate() {
                out[6 * (first + l) + k] = r[l];
            }
        }
    }
    out
}

/// Floats of magnitudes from 2^-20 to 2^20, either sign: sums whose order shows.
fn float_of(bits: u32) -> f32 {
    let exponent = 107 + (bits >> 23) % 41;
    f32::from_bits((bits & 0x8000_0000) | exponent << 23 | (bits & 0x7f_ffff))
}

/// Whether SPIR-V `words` has an `OpGroupNonUniformShuffle` (opcode 345).
fn has_subgroup_shuffle(words: &[u32]) -> bool {
    let mut at = 5;
    while at < words.len() {
        let (count, op) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        if op == 345 {
            return true;
        }
        at += count.max(1);
    }
    false
}

/// Launches `entry` of `module` (arguments: the ints, the floats, their count, the
/// output) in `blocks` blocks of `block` threads and compares each of its words per
/// thread with `expected`.
#[allow(clippy::too_many_arguments)]
fn check_launch(
    device: &Device,
    module: &Module,
    entry: &str,
    (blocks, block): (usize, usize),
    ints: &[i32],
    floats: &[f32],
    expected: &[u32],
    what: &str,
) {
    let n = ints.len();
    let words = expected.len() / n;
    let inb = device.buffer_from(ints).expect("ints");
    let fb = device.buffer_from(floats).expect("floats");
    let out = device.zeroed::<u32>(words * n).expect("out");
    let args = [Arg::from(&inb), Arg::from(&fb), Arg::from(n as u32), Arg::from(&out)];
    let kernel = module.kernel(entry).expect("kernel");
    kernel.launch(blocks as u32, block as u32, 0, &args).expect("launch");
    let got = out.to_vec().expect("read");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert_eq!(g, e, "{what}, block {block}, thread {}, word {}", i / words, i % words);
    }
}

#[test]
fn shuffle_trees_match_the_isa_in_every_lane() {
    let Some(device) = device() else { return };
    let path = repo().join("tests/ptx/warp/trees.ptx");
    let text = std::fs::read_to_string(&path).expect("read PTX");
    let target = device.target();
    let without = ptxvk::compile::Target { emulated_subgroup: None, ..target };
    // The pass applies where the device's subgroups are narrower than 32 and fixed.
    let narrow = ptxvk::compile::compile_with("trees.ptx", &text, None, target).expect("compile");
    let applies = target.warp_mode == ptxvk::compile::WarpMode::Emulated
        && target.emulated_subgroup.is_some_and(|s| s.is_power_of_two() && s < 32);
    assert_eq!(has_subgroup_shuffle(&narrow.spirv.words), applies, "{target:?}");
    let mut rng = Rng(38);
    for (blocks, block, n) in [(4usize, 32usize, 120usize), (3, 40, 110), (2, 256, 500)] {
        let total = blocks * block;
        let ints: Vec<i32> = (0..n).map(|_| rng.next_u32() as i32).collect();
        let floats: Vec<f32> = (0..n).map(|_| float_of(rng.next_u32())).collect();
        let expected = reference(&ints, &floats, n, block, total);
        for t in [target, without] {
            let module = load_for(&device, &path, t);
            let what = format!("subgroups {:?}", t.emulated_subgroup);
            check_launch(
                &device,
                &module,
                "trees",
                (blocks, block),
                &ints,
                &floats,
                &expected,
                &what,
            );
        }
    }
}

/// The lane-0 kernel's four words per thread: lane 0's `.down` sum where `%laneid` is 0,
/// the f32 sum (offsets 1..16) where `i % 32 == 0`, the xor where `tid.x % 32 == 0`,
/// and in every thread lane 0's f32 sum (16..1, the shuffled value on the left).
fn lane_zero_reference(
    ints: &[i32],
    floats: &[f32],
    n: usize,
    block: usize,
    total: usize,
) -> Vec<u32> {
    let mut out = vec![0u32; 4 * n];
    let down = [16, 8, 4, 2, 1];
    let up = [1, 2, 4, 8, 16];
    let add = |a: u32, b: u32| a.wrapping_add(b);
    let xor = |a: u32, b: u32| a ^ b;
    let fadd = |a: u32, b: u32| (f32::from_bits(a) + f32::from_bits(b)).to_bits();
    for Warp { first, tid, ints: v, floats: f } in warps(ints, floats, n, block, total) {
        let a = tree(&v, true, &down, add);
        let c = tree(&f, true, &up, fadd);
        let e = tree(&v, true, &down, xor);
        let g = tree(&f, true, &down, |own, shuffled| fadd(shuffled, own));
        for l in (0..v.len()).filter(|&l| first + l < n) {
            let i = first + l;
            out[4 * i + 3] = g[0];
            if (tid + l) % 32 == 0 {
                out[4 * i] = a[l];
                out[4 * i + 2] = e[l];
            }
            if i % 32 == 0 {
                out[4 * i + 1] = c[l];
            }
        }
    }
    out
}

#[test]
fn lane_zero_trees_match_the_isa_where_they_are_read() {
    let Some(device) = device() else { return };
    let target = device.target();
    let without = ptxvk::compile::Target { emulated_subgroup: None, ..target };
    let mut rng = Rng(380);
    for compiler in ["clang", "nvcc"] {
        let path = repo().join(format!("tests/ptx/warp/trees_lane0_{compiler}.ptx"));
        let modules = [target, without].map(|t| (t, load_for(&device, &path, t)));
        for (blocks, block, n) in
            [(4usize, 32usize, 120usize), (3, 40, 110), (3, 36, 100), (2, 256, 500)]
        {
            let total = blocks * block;
            let ints: Vec<i32> = (0..n).map(|_| rng.next_u32() as i32).collect();
            let floats: Vec<f32> = (0..n).map(|_| float_of(rng.next_u32())).collect();
            let expected = lane_zero_reference(&ints, &floats, n, block, total);
            for (t, module) in &modules {
                let what = format!("{compiler}, subgroups {:?}", t.emulated_subgroup);
                check_launch(
                    &device,
                    module,
                    "lane0",
                    (blocks, block),
                    &ints,
                    &floats,
                    &expected,
                    &what,
                );
            }
        }
    }
}
