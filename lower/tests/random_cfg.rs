//! Structuring keeps the path: for thousands of random CFGs (loops, several exits,
//! switches, early returns, irreducible cycles, unreachable blocks), the structured IR
//! executes the same sequence of original blocks as the CFG under the same branch
//! decisions, and never emits a block twice.

use ptxvk_lower::interp::{run_cfg, run_structured};
use ptxvk_lower::ir::Kernel;
use ptxvk_lower::ir::Node;
use ptxvk_lower::pass::structurize;
use ptxvk_lower::random_cfg::{kernel, structured_kernel, Rng};

fn code_blocks(nodes: &[Node], out: &mut Vec<u32>) {
    for n in nodes {
        match n {
            Node::Code(b) => out.push(b.0),
            Node::If { then, otherwise, .. } => {
                code_blocks(then, out);
                code_blocks(otherwise, out);
            }
            Node::Switch { cases, .. } => cases.iter().for_each(|c| code_blocks(&c.body, out)),
            Node::Loop { body, .. } => code_blocks(body, out),
            _ => {}
        }
    }
}

/// Structures the random CFG `seed` and compares paths under several decision seeds.
/// Returns (original blocks, structured code blocks).
fn check(seed: u64, blocks: usize) -> (usize, usize) {
    check_kernel(seed, kernel(seed, blocks))
}

fn check_kernel(seed: u64, original: Kernel) -> (usize, usize) {
    let mut k = original.clone();
    let nodes = structurize::run(&mut k).unwrap_or_else(|d| panic!("seed {seed}: {}", d.message));
    let mut emitted = Vec::new();
    code_blocks(&nodes, &mut emitted);
    let mut sorted = emitted.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), emitted.len(), "seed {seed}: a block is emitted twice");
    let terms: Vec<_> = original.blocks.iter().map(|b| b.term.clone()).collect();
    for run in 0..4u64 {
        let decide = move |b: usize, visit: u32| {
            let mut r = Rng(seed ^ (run << 48) ^ ((b as u64) << 20) ^ visit as u64);
            r.next_u64()
        };
        let limit = 200;
        let want = run_cfg(&original, &decide, limit);
        let got = run_structured(&k, &terms, &nodes, &decide, limit).unwrap_or_else(|e| {
            panic!("seed {seed} run {run}: {e}\n{}", structurize::print(&k, &nodes))
        });
        assert_eq!(
            got,
            want,
            "seed {seed} run {run}: paths differ\n{}",
            structurize::print(&k, &nodes)
        );
    }
    let reachable = ptxvk_lower::cfg::reachable(&original).iter().filter(|&&r| r).count();
    (reachable, emitted.len())
}

#[test]
fn ten_thousand_random_cfgs_keep_their_paths() {
    let mut rng = Rng(0x5eed);
    let (mut orig, mut structured) = (0usize, 0usize);
    let mut worst: f64 = 1.0;
    // PTXVK_RANDOM_CFGS=N runs a longer campaign (seeds 0..N).
    let count: u64 =
        std::env::var("PTXVK_RANDOM_CFGS").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    for seed in 0..count {
        let blocks = 1 + rng.below(60) as usize;
        let (o, s) = check(seed, blocks);
        orig += o;
        structured += s;
        worst = worst.max(s as f64 / o as f64);
    }
    eprintln!(
        "{count} random CFGs: {orig} reachable blocks, {structured} emitted ({:.3}x mean, {worst:.2}x worst, incl. dispatchers)",
        structured as f64 / orig as f64
    );
}

#[test]
fn compiler_shaped_cfgs_keep_their_paths() {
    // Nested if/else, loops with break/continue, switches and early returns, up to a
    // few hundred blocks.
    let mut rng = Rng(0xfeed);
    let (mut orig, mut structured) = (0usize, 0usize);
    for seed in 0..1_000u64 {
        let blocks = 1 + rng.below(300) as usize;
        let (o, s) = check_kernel(seed, structured_kernel(seed, blocks));
        orig += o;
        structured += s;
    }
    eprintln!(
        "1000 compiler-shaped CFGs: {orig} reachable blocks, {structured} emitted ({:.3}x)",
        structured as f64 / orig as f64
    );
}
