//! Known-answer probes of a device and its driver, run when the device opens
//! ([`Device::open`]) and remembered per device, driver and set of features
//! (`PTXVK_MASK_FEATURES`) in one cache file beside the pipeline cache
//! (`….bin.probes-HASH`), whose first line names the probe set: a changed probe set, or
//! another ptxvk version, probes again.
//!
//! Exactness is ptxvk's promise, and Vulkan drivers do not all keep theirs. Each probe
//! runs PTX whose results the host knows from its own IEEE 754 arithmetic (an
//! independent model, never ptxvk's output) and compares them bit for bit:
//!
//! - **fused fma** ([`probe_fused_fma`]): whether the device's `Fma` rounds once, which
//!   lets `fma.rn` be one instruction;
//! - **float scheme** ([`probe_float_scheme`]): whether exact f32 arithmetic is faster
//!   through f64 or in integers (a measurement, not a bug);
//! - **constants** ([`probe_constants`]): `add`, `sub`, `mul`, `div` and `fma` of
//!   operands the driver knows (literals in the instruction, and values that become
//!   constants once it has propagated them: `mov.b32 %f, 0`, `cvt.rn.f32.u32` of a
//!   literal, `x - x` of integers) under `SignedZeroInfNanPreserve`: `inf * 0` is NaN,
//!   `-3 * 0` is -0, `-0 + 0` is +0, `0 - x` is +0 for x = +0, `inf - inf` is NaN, …,
//!   f32 and f64. Where some fail, the backend hides the operands of the failing
//!   operations from the driver ([`FloatConstants::Hidden`]) and the probe runs again
//!   with them hidden; where that fails too, launches of modules with floats are
//!   refused ([`Error::DriverBug`]);
//! - **sign extension** ([`probe_sign_extension`]): 64-bit compares with constants and
//!   `min`/`max` of `cvt.s64.s32` results (Mesa 22.3 takes a negative value for a large
//!   positive one there). Where wrong, the backend hides every 32- to 64-bit sign
//!   extension from the driver (`Target::hide_sign_extensions`) and the probe runs again;
//!   where that fails too, every launch is refused;
//! - **loops** ([`probe_loops`]): a loop of 100,000 iterations and one of 2^24, a
//!   300 × 300 nest, and two loops of 40,000 taken by different invocations of one
//!   subgroup, counted. Where the driver cuts them short, every loop gets
//!   `pass::loop_guard` ([`Target::loop_guard`], at the limit the probe saw less a
//!   margin) and the probe runs again guarded: loops past the limit must fail the
//!   launch, loops below it must count right; where not, launches of modules with
//!   loops are refused;
//! - **denormals** ([`probe_denormals`]): f32 and f64 arithmetic with subnormal
//!   operands and results is preserved without `.ftz` and flushed with it. ptxvk
//!   declares neither `DenormPreserve` nor `DenormFlushToZero` (lavapipe offers
//!   neither) and relies on the driver's default preserving them, which this checks;
//! - **special values** ([`probe_special`]): `sqrt(-0)`, `rcp(±0)`, `min`/`max` with
//!   NaN literals, `sin.approx(inf)`, `lg2.approx(0)`, `rsqrt.approx(-0)`, … as the PTX
//!   ISA defines them.
//!
//! A constants case still wrong with its workaround, or a denormals or special-value
//! case wrong, refuses launches of modules with floats in exact mode (`--float native`
//! makes no promise to break). `ptxvk devices` lists what each probe found
//! ([`Findings::report`]).
//!
//! This file runs the probes and keeps their cache; each probe is a file of its own
//! (`constants`, `sign_extension`, `loops`, `known` for subnormals and special values,
//! `scheduler`, `float` for fused `Fma` and the float scheme, `warps`, `trees`) over what they
//! share (`kit`: the launch, the kernel's shape, floats as bits), and `findings` is what
//! they found and how it is reported.

use crate::compile::Target;
use crate::runtime::Device;
use crate::Error;
use ptxvk_lower::pass::{FloatConstants, FloatOps};

/// Bumped when what a probe means changes without its PTX changing (the cache file
/// also names the probes' PTX and ptxvk's version).
const PROBES_VERSION: u32 = 4;

mod constant_cases;
mod constants;
pub(crate) mod findings;
mod float;
mod kit;
mod known;
mod loops;
mod scheduler;
mod sign_extension;
mod trees;
mod warps;

pub use constants::{probe_constants, WrongConstant};
pub use findings::{Findings, ProbeReport, NAMES};
pub use float::{probe_float_scheme, probe_fused_fma};
pub use known::{probe_denormals, probe_special};
pub use loops::{probe_guarded_loops, probe_loops};
pub use scheduler::probe_scheduler;
pub use sign_extension::probe_sign_extension;
pub use trees::probe_warp_trees;
pub use warps::probe_warps;

// The kernels the cache header hashes.
use constants::constants_ptx;
use float::{FLOAT_SCHEME_PROBE, FMA_PROBE};
use known::{denormal_cases, known_ptx, special_cases};
use loops::LOOPS_PTX;
use sign_extension::SIGN_EXTENSION_PTX;

/// ptxvk's version, which decide whether a cached answer still holds.
fn cache_header() -> String {
    let mut text = String::new();
    for width in [32, 64] {
        text.push_str(&constants_ptx(width));
        text.push_str(&known_ptx("denormals", width, &denormal_cases(width)));
        text.push_str(&known_ptx("special", width, &special_cases(width)));
    }
    text.push_str(LOOPS_PTX);
    text.push_str(SIGN_EXTENSION_PTX);
    text.push_str(FMA_PROBE);
    text.push_str(FLOAT_SCHEME_PROBE);
    text.push_str(trees::TREES_PROBE);
    let hash = fnv1a(&text);
    format!("ptxvk-probes {PROBES_VERSION} {} {hash:016x}", env!("CARGO_PKG_VERSION"))
}

/// FNV-1a, 64-bit: stable across builds and platforms.
fn fnv1a(text: &str) -> u64 {
    text.bytes()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// What the probes found on `device`: from its cache file when that holds the current
/// probe set, else by running them (and then remembered, unless one could not run).
pub fn findings(device: &Device) -> Findings {
    // One file per set of features (`PTXVK_MASK_FEATURES` changes what runs).
    let features = device.info().features.names().join(",");
    let file = device.inner.cache_file(&format!("probes-{:08x}", fnv1a(&features) as u32));
    let header = cache_header();
    let cached = file.as_ref().and_then(|f| std::fs::read_to_string(f).ok());
    if let Some(text) = cached {
        if let Some(rest) = text.strip_prefix(&header).and_then(|r| r.strip_prefix('\n')) {
            if let Some(f) = Findings::from_text(rest) {
                return f;
            }
        }
    }
    let found = run(device);
    if let (Some(f), true) = (file, found.errors.is_empty()) {
        // Written whole and renamed, so that a process opening the device at the same
        // time reads the old file or the new one; a cache that cannot be written only
        // costs the probes next time.
        let _ = std::fs::create_dir_all(f.parent().unwrap_or(&f));
        let temp = f.with_extension(format!("probes.{}", std::process::id()));
        if std::fs::write(&temp, format!("{header}\n{}", found.to_text())).is_ok() {
            let _ = std::fs::rename(&temp, &f);
        }
    }
    found
}

/// Runs every probe on `device` (whose warp mode is settled).
pub fn run(device: &Device) -> Findings {
    let mut f = Findings::default();
    let error = |f: &mut Findings, probe: &str, e: Error| f.errors.push(format!("{probe}: {e}"));
    match probe_fused_fma(device) {
        Ok(fused) => f.fused_fma = fused,
        Err(e) => error(&mut f, "fused-fma", e),
    }
    let has_f64 = device.info().features.float64;
    if has_f64 {
        match probe_float_scheme(device, f.fused_fma) {
            Ok((f64_ms, integer_ms)) => f.integer_float = integer_ms < f64_ms,
            Err(e) => error(&mut f, "float-scheme", e),
        }
    }
    let base = Target {
        fused_fma: f.fused_fma,
        float64: has_f64 && !f.integer_float,
        native_float: false,
        // Nothing hidden nor guarded but what the probes below find.
        hide_sign_extensions: false,
        loop_guard: None,
        ..device.target()
    };
    match probe_constants(device, Target { float_constants: FloatConstants::Exact, ..base }) {
        Ok(wrong) if wrong.is_empty() => {}
        Ok(wrong) => {
            let union = |k: usize| {
                wrong.iter().map(|w| w.ops[k]).fold(FloatOps::default(), FloatOps::union)
            };
            // The operations the wrong cases point at, then every one they use, then all
            // four: the first set that is enough.
            let mut candidates = vec![union(0), union(1), FloatOps::ALL];
            candidates.dedup();
            f.constants = wrong.into_iter().map(|w| w.text).collect();
            for ops in candidates {
                let target = Target { float_constants: FloatConstants::Hidden(ops), ..base };
                match probe_constants(device, target) {
                    Ok(wrong) => {
                        f.hidden = ops;
                        f.constants_hidden = wrong.into_iter().map(|w| w.text).collect();
                        if f.constants_hidden.is_empty() {
                            break;
                        }
                    }
                    Err(e) => {
                        error(&mut f, "constants", e);
                        break;
                    }
                }
            }
        }
        Err(e) => error(&mut f, "constants", e),
    }
    let base = Target { float_constants: f.float_constants(), ..base };
    match probe_sign_extension(device, base) {
        Ok(wrong) if wrong.is_empty() => {}
        Ok(wrong) => {
            f.sign_extensions = wrong;
            match probe_sign_extension(device, Target { hide_sign_extensions: true, ..base }) {
                Ok(wrong) => f.sign_extensions_hidden = wrong,
                Err(e) => error(&mut f, "sign-extension", e),
            }
        }
        Err(e) => error(&mut f, "sign-extension", e),
    }
    let base = Target { hide_sign_extensions: !f.sign_extensions.is_empty(), ..base };
    match probe_loops(device, base) {
        Ok((wrong, limit)) => {
            f.loops = wrong;
            f.loop_limit = limit;
        }
        Err(e) => error(&mut f, "loops", e),
    }
    if let Some(guard) = f.loop_guard(device.info()) {
        match probe_guarded_loops(device, Target { loop_guard: Some(guard), ..base }) {
            Ok(wrong) => f.loops_guarded = wrong,
            Err(e) => error(&mut f, "loops", e),
        }
    }
    match probe_denormals(device, base) {
        Ok(wrong) => f.denormals = wrong,
        Err(e) => error(&mut f, "denormals", e),
    }
    match probe_special(device, base) {
        Ok(wrong) => f.special = wrong,
        Err(e) => error(&mut f, "special-values", e),
    }
    let guarded = Target { loop_guard: f.loop_guard(device.info()), ..base };
    match probe_scheduler(device, guarded) {
        Ok(wrong) => f.scheduler = wrong,
        Err(e) => error(&mut f, "scheduler", e),
    }
    match probe_warp_trees(device, base) {
        Ok(wrong) => f.warp_trees = wrong,
        Err(e) => error(&mut f, "warp-trees", e),
    }
    f
}

#[cfg(test)]
mod tests {
    use super::constant_cases::*;
    use super::constants::*;
    use super::findings::*;
    use super::kit::*;
    use super::known::*;
    use super::loops::*;
    use super::sign_extension::*;
    use super::*;
    use ptxvk_lower::pass::{FusedFma, LoopGuard};

    /// Every probe kernel compiles, with the operands of all four operations hidden and
    /// with a loop guard, to SPIR-V that spirv-val accepts.
    /// The tree probe exercises `pass::warp_trees`: compiled for 8-wide subgroups its
    /// shuffles are subgroup shuffles (the pass rewrote both trees), and without a
    /// fixed subgroup size they are not (exchanges through shared memory).
    #[test]
    fn the_tree_probe_goes_through_the_tree_pass() {
        use ptxvk_lower::ir::WarpMode;
        let shuffles = |subgroup: Option<u32>| {
            let target = Target {
                warp_mode: WarpMode::Emulated,
                emulated_subgroup: subgroup,
                ..Target::default()
            };
            let compiled = crate::compile::compile_with("trees", trees::TREES_PROBE, None, target)
                .unwrap_or_else(|e| panic!("trees: {e}"));
            ptxvk_spirv::validate(&compiled.spirv.words).unwrap_or_else(|e| panic!("{e}"));
            let text =
                ptxvk_spirv::disassemble(&compiled.spirv.words).unwrap_or_else(|e| panic!("{e}"));
            text.matches("OpGroupNonUniformShuffle").count()
        };
        assert!(shuffles(Some(8)) >= 6, "the trees were not rewritten");
        assert_eq!(shuffles(None), 0);
    }

    #[test]
    fn the_probe_kernels_compile_to_valid_spirv_with_every_workaround() {
        let hidden = Target {
            float_constants: FloatConstants::Hidden(FloatOps::ALL),
            hide_sign_extensions: true,
            loop_guard: Some(LoopGuard { limit: 64_512, subgroups: 128 }),
            ..Target::default()
        };
        let mut sources = vec![
            ("loops".to_string(), LOOPS_PTX.to_string()),
            ("sign".to_string(), SIGN_EXTENSION_PTX.to_string()),
        ];
        for width in [32, 64] {
            sources.push((format!("constants_f{width}"), constants_ptx(width)));
            sources.push((
                format!("denormals_f{width}"),
                known_ptx("denormals", width, &denormal_cases(width)),
            ));
            sources.push((
                format!("special_f{width}"),
                known_ptx("special", width, &special_cases(width)),
            ));
        }
        // Without f64 too (`PTXVK_MASK_FEATURES=shaderFloat64`): hiding f32 operands
        // must not declare f64.
        let no_f64 = Target { float64: false, ..hidden };
        for (name, ptx) in sources {
            for target in [Target::default(), hidden, no_f64] {
                if name.ends_with("f64") && !target.float64 {
                    continue;
                }
                let compiled = crate::compile::compile_with(&name, &ptx, None, target)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                ptxvk_spirv::validate(&compiled.spirv.words)
                    .unwrap_or_else(|e| panic!("{name} {target:?}: {e}"));
                let f64s = compiled.spirv.requirements.float64;
                assert!(target.float64 || !f64s, "{name} needs f64 compiled without it");
            }
        }
    }

    /// The host's model of the constants cases is IEEE 754's.
    #[test]
    fn the_model_keeps_signed_zeros_infinities_and_nans() {
        let f32_bits = |v: f32| u64::from(v.to_bits());
        assert!(f32::from_bits(expected(Op::Mul, f64::INFINITY, 0.0, 0.0, 32) as u32).is_nan());
        assert_eq!(expected(Op::Mul, -3.0, 0.0, 0.0, 32), f32_bits(-0.0));
        assert_eq!(expected(Op::Add, -0.0, 0.0, 0.0, 32), f32_bits(0.0));
        assert_eq!(expected(Op::Sub, 0.0, 0.0, 0.0, 64), 0f64.to_bits());
        assert_eq!(expected(Op::Fma, -3.0, 0.0, 0.0, 64), 0f64.to_bits());
        assert_eq!(expected(Op::Fma, -3.0, 0.0, -0.0, 64), (-0f64).to_bits());
        assert_eq!(expected(Op::Div, -3.0, 0.0, 0.0, 32), f32_bits(f32::NEG_INFINITY));
        assert!(same(f32_bits(f32::NAN), 0x7fc0_0001, 32));
        assert!(!same(f32_bits(0.0), f32_bits(-0.0), 32));
        // Subnormals: kept without .ftz, flushed to a signed zero with it.
        let cases = denormal_cases(32);
        let want = |inst: &str, a: f64| {
            let case = cases.iter().find(|c| c.inst == inst && c.srcs[0] == a).expect(inst);
            case.want
        };
        assert_eq!(want("mul.rn.ftz.f32 %o, %a, %b", -(2f64.powi(-140))), f32_bits(-0.0));
        // 2^-141 = 2^8 · 2^-149, the smallest subnormal.
        assert_eq!(want("mul.rn.f32 %o, %a, 0f3F000000", 2f64.powi(-140)), 0x100);
        assert_eq!(want("mul.rn.ftz.f32 %o, %a, %b", 2f64.powi(-70)), 0);
    }

    /// What is cached reads back the same, and a damaged line makes the cache unusable.
    #[test]
    fn findings_survive_the_cache_file() {
        let f = Findings {
            fused_fma: FusedFma { f32: true, f64: false },
            integer_float: true,
            constants: vec!["mul.rn.f32 inf, 0.0 (literal) gave 0.0, not NaN".into()],
            hidden: FloatOps { add: true, sub: false, mul: true, div: false },
            loops: vec!["a loop of 100000 iterations counted [65536], not [100000]".into()],
            loop_limit: Some(65_536),
            ..Findings::default()
        };
        assert_eq!(Findings::from_text(&f.to_text()), Some(f.clone()));
        assert_eq!(Findings::from_text("hidden=11"), None);
        assert_eq!(Findings::from_text("unknown=1"), None);
        assert!(cache_header().starts_with(&format!("ptxvk-probes {PROBES_VERSION} ")));
    }

    /// A bug with a workaround that the probe confirmed is no refusal; one without is.
    #[test]
    fn refusals_follow_the_findings() {
        let folded = vec!["mul.rn.f32 inf, 0.0 (literal) gave 0.0, not NaN".to_string()];
        let mul = FloatOps { mul: true, ..FloatOps::default() };
        let repaired = Findings { constants: folded.clone(), hidden: mul, ..Findings::default() };
        assert_eq!(repaired.float_refusal(), None);
        assert_eq!(repaired.float_constants(), FloatConstants::Hidden(mul));
        let still = Findings { constants_hidden: folded.clone(), ..repaired.clone() };
        assert!(still.float_refusal().is_some_and(|r| r.contains("gave 0.0, not NaN")));
        assert_eq!(Findings::default().float_constants(), FloatConstants::Exact);

        let cut = vec!["a loop of 100000 iterations counted [65536], not [100000]".to_string()];
        let guarded =
            Findings { loops: cut.clone(), loop_limit: Some(65_536), ..Findings::default() };
        assert_eq!(guarded.loop_refusal(), None);
        let uncaught = Findings { loops_guarded: cut.clone(), ..guarded.clone() };
        assert!(uncaught.loop_refusal().is_some());
        let unknown = Findings { loops: cut, ..Findings::default() };
        assert!(unknown.loop_refusal().is_some(), "cut short with no limit seen");
        assert_eq!(guard_limit(65_536), 64_512);
    }
}
