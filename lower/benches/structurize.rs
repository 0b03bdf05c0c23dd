//! Structurizer speed and code growth (`cargo bench -p ptxvk-lower --bench structurize`).
//!
//! Times `structurize::run` (all its CFG passes included) on 10,000-block CFGs: compiler
//! shaped ones (nested if/else, loops with break/continue, switches, early returns) and
//! random ones with gotos anywhere (large irreducible regions, the worst case), and
//! reports code growth over a corpus of random CFGs. Median of 9 runs each.

use std::time::{Duration, Instant};

use ptxvk_lower::ir::Kernel;
use ptxvk_lower::pass::structurize;
use ptxvk_lower::random_cfg::{kernel, structured_kernel, Rng};

fn median_time(k: &Kernel) -> (Duration, usize) {
    let mut times = Vec::new();
    let mut blocks = 0;
    for _ in 0..9 {
        let mut k = k.clone();
        let t = Instant::now();
        let r = structurize::run(&mut k);
        times.push(t.elapsed());
        blocks = k.blocks.len();
        if let Err(d) = r {
            eprintln!("structurize failed: {}", d.message);
            std::process::exit(1);
        }
    }
    times.sort();
    (times[times.len() / 2], blocks)
}

fn main() {
    println!("| CFG | blocks | after structuring | median time |");
    println!("|---|---|---|---|");
    for seed in 0..3u64 {
        let k = structured_kernel(seed * 7 + 2, 10_000);
        let (t, after) = median_time(&k);
        println!(
            "| compiler-shaped, seed {} | {} | {after} | {:.1} ms |",
            seed * 7 + 2,
            k.blocks.len(),
            t.as_secs_f64() * 1e3
        );
    }
    for seed in 1..3u64 {
        let k = kernel(seed, 10_000);
        let (t, after) = median_time(&k);
        println!(
            "| random with gotos anywhere, seed {seed} | {} | {after} | {:.1} ms |",
            k.blocks.len(),
            t.as_secs_f64() * 1e3
        );
    }
    // Growth over a corpus: structured blocks (dispatchers included) per reachable block.
    let mut rng = Rng(0x5eed);
    let (mut total_in, mut total_out, mut worst) = (0usize, 0usize, 1.0f64);
    for seed in 0..10_000u64 {
        let k = kernel(seed, 1 + rng.below(60) as usize);
        let reachable = ptxvk_lower::cfg::reachable(&k).iter().filter(|&&r| r).count();
        let mut s = k.clone();
        let nodes = structurize::run(&mut s).unwrap_or_default();
        let out = count_code(&nodes);
        total_in += reachable;
        total_out += out;
        worst = worst.max(out as f64 / reachable.max(1) as f64);
    }
    println!();
    println!(
        "code growth over 10,000 random CFGs of 1-60 blocks: mean {:.3}x, worst {worst:.2}x (emitted blocks incl. dispatchers / reachable blocks)",
        total_out as f64 / total_in as f64
    );
}

fn count_code(nodes: &[ptxvk_lower::ir::Node]) -> usize {
    use ptxvk_lower::ir::Node;
    nodes
        .iter()
        .map(|n| match n {
            Node::Code(_) => 1,
            Node::If { then, otherwise, .. } => count_code(then) + count_code(otherwise),
            Node::Switch { cases, .. } => cases.iter().map(|c| count_code(&c.body)).sum(),
            Node::Loop { body, .. } => count_code(body),
            _ => 0,
        })
        .sum()
}
