//! nvcc-built CUDA programs on this library (issue #35, item 6): a fast subset of
//! `tests/cuda-programs/` (`scripts/cuda-programs` runs them all), each built with
//! nvcc's default `-arch` (compute_75 PTX embedded) against the static runtime and
//! against the shared one, and run unmodified with this library as the system's CUDA
//! driver. Each program checks itself against a CPU reference it computes and prints
//! PASS only when they agree.
//!
//! nvcc is found as `common::nvcc` says; without it the tests skip loudly, except under
//! CI, where that is a failure.

mod common;

use common::nvcc::{build, nvcc, repo, run, scratch, shared_runtime};

/// Builds `tests/cuda-programs/{name}.cu` both ways and runs each build.
fn builds_both_ways_and_passes(name: &str) {
    if !common::init_context(&common::library()) {
        return;
    }
    let Some(nvcc) = nvcc() else { return };
    let dir = scratch("cuda-programs", name);
    let source = repo().join(format!("tests/cuda-programs/{name}.cu"));
    let shared = shared_runtime(&nvcc, &dir);
    for (kind, flags) in [("static", Vec::new()), ("shared", shared)] {
        let exe = build(&nvcc, &dir, &source, &format!("{name}.{kind}"), &flags);
        let ran = run(&exe, &dir, &[]);
        assert!(
            ran.ok && ran.stdout.lines().any(|line| line == "PASS"),
            "{name} ({kind} runtime) failed:\n{}\n{}",
            ran.stdout,
            ran.stderr
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

macro_rules! programs {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            builds_both_ways_and_passes(stringify!($name));
        }
    )*};
}

programs! {
    vector_add,
    reduction,
    symbols,
    streams_events,
    graphs,
    textures,
    managed_globals,
    unified_memory,
}
