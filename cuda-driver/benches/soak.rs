//! Soak: 8 threads, each with up to 4 streams of its own, making 100,000 valid driver
//! calls in all in random order (allocations, frees, copies, memsets, `vector_add`
//! launches, asynchronous reads, streams and events, and now and then an allocation no
//! device can hold, which must fail alone), every result checked against the CPU model
//! of the abuse test's actor (`tests/abuse/actor.rs`). Each thread holds at most 32
//! allocations, so the footprint must stay constant: resident memory and the device
//! memory in use are reported at 10% of the run and at its end.
//!
//! ```text
//! cargo bench -p ptxvk-cuda-driver --bench soak [-- CALLS]
//! ```

#[path = "../tests/common/mod.rs"]
mod common;

#[path = "../tests/abuse/actor.rs"]
#[macro_use]
mod actor;

use std::sync::{Arc, Barrier};

use actor::*;
use common::*;

const THREADS: usize = 8;

/// `VmRSS` and `VmHWM` (peak) of this process, in MiB.
fn resident_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Device memory in use by the driver's account (`cuMemGetInfo`), in MiB.
fn device_mib(lib: &libloading::Library) -> f64 {
    let info: unsafe extern "C" fn(*mut usize, *mut usize) -> R = proc(lib, "cuMemGetInfo");
    let (mut free, mut total) = (0, 0);
    assert_eq!(call!(info, &mut free, &mut total), SUCCESS);
    (total - free) as f64 / (1 << 20) as f64
}

fn report(lib: &libloading::Library, when: &str) {
    let (rss, peak) = resident_mib();
    let device = device_mib(lib);
    println!(
        "{when}: resident {rss:.0} MiB (peak {peak:.0}), device memory in use {device:.1} MiB"
    );
}

fn main() {
    let calls: usize =
        std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000).max(THREADS * 10);
    let lib = Arc::new(library());
    if !init_context(&lib) {
        return;
    }
    let api = Api::new(&lib);
    let retain: unsafe extern "C" fn(*mut usize, i32) -> R = proc(&lib, "cuDevicePrimaryCtxRetain");
    let (load, get_function): (Load, GetFunction) =
        (proc(&lib, "cuModuleLoadData"), proc(&lib, "cuModuleGetFunction"));
    let text = nul_terminated("tests/kernels/vector_add.nvcc.sm_80.ptx");
    let (mut ctx, mut module, mut vector_add) = (0, 0, 0);
    assert_eq!(call!(retain, &mut ctx, 0), SUCCESS);
    assert_eq!(call!(load, &mut module, text.as_ptr().cast()), SUCCESS);
    assert_eq!(call!(get_function, &mut vector_add, module, c"vector_add".as_ptr()), SUCCESS);

    let per_thread = calls / THREADS;
    let first = per_thread / 10;
    let at_tenth = Arc::new(Barrier::new(THREADS + 1));
    let resume = Arc::new(Barrier::new(THREADS + 1));
    let start = std::time::Instant::now();
    let threads: Vec<_> = (0..THREADS as u64)
        .map(|t| {
            let (at_tenth, resume) = (Arc::clone(&at_tenth), Arc::clone(&resume));
            std::thread::spawn(move || {
                assert_eq!(call!(api.set_current, ctx), SUCCESS);
                let mut actor = Actor::new(api, 0x50a4_0000 + t * 104_729, vector_add);
                actor.valid_only = true;
                actor.max_buffers = 32;
                actor.steps(first);
                at_tenth.wait();
                resume.wait();
                actor.steps(per_thread - first);
                let done = actor.done;
                (actor, done)
            })
        })
        .collect();
    at_tenth.wait();
    report(&lib, "10% of the run");
    resume.wait();
    let mut actors = Vec::new();
    let mut done = [0u32; KINDS];
    for t in threads {
        let (actor, counts) = t.join().expect("a thread's sequence failed (see its message)");
        for (d, c) in done.iter_mut().zip(counts) {
            *d += c;
        }
        actors.push(actor);
    }
    let elapsed = start.elapsed();
    report(&lib, "end of the run");
    for actor in &mut actors {
        actor.clean_up();
    }
    report(&lib, "after freeing everything");
    let counts: Vec<String> =
        KIND_NAMES[..VALID_KINDS].iter().zip(done).map(|(name, n)| format!("{name} {n}")).collect();
    println!(
        "{THREADS} threads, {} calls in {:.1} s, every result as the model's: {}",
        per_thread * THREADS,
        elapsed.as_secs_f64(),
        counts.join(", ")
    );
}
