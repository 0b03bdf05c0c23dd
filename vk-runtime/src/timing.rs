//! The timing record of first launches (`PTXVK_LOG=timing`): one line on stderr per
//! module loaded lazily (`load`: parsing and checking the whole module), per kernel
//! compiled to SPIR-V (ptxvk's share) and per pipeline created (`vkCreateComputePipelines`,
//! part of the driver's share), so that the time from a module's load to its first launch
//! can be split (`scripts/first-launch` reads them; docs/benchmarks.md, *First-launch
//! latency*). On lavapipe the pipeline line is the NIR work only: LLVM compiles the
//! shader at the pipeline's first dispatch, and Mesa's shader cache keeps that compile
//! across processes. So each pipeline's first launch gets a line too (`first-dispatch`):
//! from its enqueueing to the host seeing it complete, which holds LLVM's compile, the
//! run itself, and any wait for earlier work of the stream or for the batch to be
//! submitted (`scripts/first-dispatch.py` times a whole first launch from Python).
//!
//! Lines start `ptxvk timing:` and are whole (`eprintln!` holds stderr's lock).

use std::sync::OnceLock;
use std::time::Instant;

/// Whether `PTXVK_LOG` (a comma-separated list) names `timing`.
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("PTXVK_LOG").is_ok_and(|v| v.split(',').any(|w| w.trim() == "timing"))
    })
}

/// A start time when the record is on.
pub fn start() -> Option<Instant> {
    enabled().then(Instant::now)
}

/// Writes `ptxvk timing: WHAT NAME ms=… FIELDS` when `since` is a start time.
pub fn record(since: Option<Instant>, what: &str, name: &str, fields: &str) {
    if let Some(t) = since {
        let ms = t.elapsed().as_secs_f64() * 1e3;
        eprintln!("ptxvk timing: {what} {name} ms={ms:.3} {fields}");
    }
}
