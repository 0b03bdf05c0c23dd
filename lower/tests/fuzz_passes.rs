//! The fuzz target of the passes: random computing kernels
//! ([`ptxvk_lower::random_cfg::program`]: random control flow, integer and float
//! arithmetic in every rounding, memory of every space, atomics, warp exchanges) go
//! through every pass ([`ptxvk_lower::pass::run`]) for each warp mode, and the
//! interpreter ([`ptxvk_lower::interp`]) checks that the lowered kernel computes
//! what the kernel from semantic analysis computes, on generated launches.
//!
//! `PTXVK_FUZZ_CASES=N` runs N programs instead of the default 400;
//! `PTXVK_FUZZ_SEED=S` starts at seed S.

use ptxvk_lower::interp::check::{check, Program};
use ptxvk_lower::ir::WarpMode;
use ptxvk_lower::pass::{self, Target};
use ptxvk_lower::random_cfg::program;
use ptxvk_lower::text;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The targets each program is lowered for: every warp mode, with and without f64.
fn targets() -> Vec<(String, Target)> {
    let mut out = Vec::new();
    for mode in [WarpMode::Native, WarpMode::Split, WarpMode::Emulated] {
        out.push((mode.name().to_string(), Target::with_warp_mode(mode)));
    }
    out.push(("portable".into(), Target::portable()));
    out
}

#[test]
fn random_programs_compute_the_same_after_every_pass() {
    let cases = env("PTXVK_FUZZ_CASES", 400);
    let first = env("PTXVK_FUZZ_SEED", 0);
    let (mut compared, mut observed, mut skipped) = (0usize, 0usize, 0usize);
    let mut skips = Vec::new();
    for seed in first..first + cases {
        let k = program(seed, 3 + (seed % 8) as usize);
        for (name, target) in targets() {
            let lowered = pass::run(k.clone(), &target).unwrap_or_else(|d| {
                let msg: Vec<_> = d.iter().map(|d| d.message.clone()).collect();
                panic!("seed {seed} ({name}): the passes fail: {msg:?}\n{}", text::print(&k))
            });
            let after = Program { kernel: &lowered.kernel, body: Some(&lowered.body) };
            match check(Program::cfg(&k), after, seed, 2) {
                Ok(t) => {
                    compared += t.same;
                    observed += t.observed;
                    skipped += t.skipped.len();
                    skips.extend(
                        t.skipped.into_iter().map(|w| format!("seed {seed} ({name}): {w}")),
                    );
                }
                Err(e) => panic!(
                    "seed {seed} ({name}): {e}\n{}\nafter:\n{}",
                    text::print(&k),
                    text::print_structured(&lowered.kernel, &lowered.body)
                ),
            }
        }
    }
    eprintln!(
        "{compared} launches compared ({observed} with results), {skipped} skipped {:?}",
        skips.first()
    );
    assert_eq!(observed, compared, "every program stores its results");
    // Nearly every program runs in the interpreter.
    assert!(skipped * 20 <= compared, "{skipped} skipped, {compared} compared: {skips:?}");
}
