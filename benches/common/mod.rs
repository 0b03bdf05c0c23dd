//! Timing shared by the benchmarks (`benches/launch.rs`, `benches/tensor.rs` and the
//! driver library's `cuda-driver/benches/driver_launch.rs`): medians of repeated runs
//! after a warm-up.
// Each bench uses the part it needs.
#![allow(dead_code)]

use std::time::Instant;

/// Runs timed per figure.
pub const RUNS: usize = 7;

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median over [`RUNS`] of `f()`'s seconds divided by `per`, in microseconds (one
/// untimed run first).
pub fn micros_per(per: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64() * 1e6 / per as f64
            })
            .collect(),
    )
}

/// The median of [`RUNS`] kernel times in milliseconds that `run` reports, after a
/// warm-up run.
pub fn median_ms(mut run: impl FnMut() -> f64) -> f64 {
    run();
    median((0..RUNS).map(|_| run()).collect())
}
