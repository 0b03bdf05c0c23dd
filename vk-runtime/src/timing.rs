//! The timing record of first launches (`PTXVK_LOG=timing`): one line on stderr per
//! module loaded lazily (`load`: parsing and checking the whole module), per kernel
//! compiled to SPIR-V (ptxvk's share) and per pipeline created (the driver's share,
//! which on lavapipe is LLVM's compile of the shader), so that the time from a module's
//! load to its first launch can be split between the two
//! (`scripts/first-launch` reads them; docs/benchmarks.md, *First-launch latency*).
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
