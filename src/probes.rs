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

use std::fmt::Write as _;

use crate::compile::Target;
use crate::runtime::{Arg, Device, Module};
use crate::target::{DeviceFacts, Options};
use crate::Error;
use ptxvk_lower::pass::{FloatConstants, FloatOps, FusedFma, LoopGuard};

/// Bumped when what a probe means changes without its PTX changing (the cache file
/// also names the probes' PTX and ptxvk's version).
const PROBES_VERSION: u32 = 3;

/// What the probes found for one device and driver.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Findings {
    /// Which widths of the device's `Fma` are fused.
    pub fused_fma: FusedFma,
    /// Whether the exact f32 arithmetic in integers was measured faster than through
    /// f64 (only on a device with f64).
    pub integer_float: bool,
    /// Cases of float arithmetic with known operands that the driver got wrong, with
    /// nothing hidden (empty: it got all right).
    pub constants: Vec<String>,
    /// The operations whose operands are hidden from the driver (empty when
    /// [`Self::constants`] is).
    pub hidden: FloatOps,
    /// Cases still wrong with those operands hidden.
    pub constants_hidden: Vec<String>,
    /// The loops the driver cut short, unguarded.
    pub loops: Vec<String>,
    /// Iterations after which the driver ended a subgroup's loops, as the probe saw.
    pub loop_limit: Option<u32>,
    /// Cases the guard got wrong (a loop cut short that did not fail the launch, or a
    /// launch that failed below the limit).
    pub loops_guarded: Vec<String>,
    /// Sign-extension cases the driver got wrong, with nothing hidden.
    pub sign_extensions: Vec<String>,
    /// Those still wrong with the extensions hidden.
    pub sign_extensions_hidden: Vec<String>,
    /// Subnormal cases the driver got wrong.
    pub denormals: Vec<String>,
    /// Special-value cases the driver got wrong.
    pub special: Vec<String>,
    /// What the driver got wrong in kernels that run as rounds of ptxvk's block
    /// scheduler (`pass::schedule`).
    pub scheduler: Vec<String>,
    /// Probes that could not run (not cached: they run again next time).
    pub errors: Vec<String>,
}

/// The probes' names, in the order they run and [`Findings::report`] lists them.
pub const NAMES: [&str; 8] = [
    "fused-fma",
    "float-scheme",
    "constants",
    "sign-extension",
    "loops",
    "denormals",
    "special-values",
    "scheduler",
];

/// One probe's result, as `ptxvk devices` shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ProbeReport {
    pub name: &'static str,
    /// `ok`, `measured`, `worked around`, `guarded`, `refused` or `not run`.
    pub status: &'static str,
    /// One line.
    pub summary: String,
    /// The failing cases.
    pub details: Vec<String>,
}

impl Findings {
    /// What the backend does with float arithmetic of known operands.
    pub fn float_constants(&self) -> FloatConstants {
        if !self.hidden.is_empty() {
            FloatConstants::Hidden(self.hidden)
        } else if self.constants.is_empty()
            && !self.errors.iter().any(|e| e.starts_with("constants"))
        {
            FloatConstants::Exact
        } else {
            FloatConstants::Repaired
        }
    }

    /// The loop guard modules get on a device described by `info`, where the driver
    /// cuts loops short.
    pub fn loop_guard(&self, info: &ptxvk_vk::DeviceInfo) -> Option<LoopGuard> {
        let limit = self.loop_limit?;
        let smallest = info.required_subgroup_sizes.map_or(info.subgroup_size, |s| s.min).max(1);
        Some(LoopGuard {
            limit: guard_limit(limit),
            subgroups: info.limits.max_workgroup_invocations.div_ceil(smallest),
        })
    }

    /// Why launches of modules with floats are refused, if they are.
    pub fn float_refusal(&self) -> Option<String> {
        let constants =
            if self.hidden.is_empty() { &self.constants } else { &self.constants_hidden };
        let wrong: Vec<&String> =
            constants.iter().chain(&self.denormals).chain(&self.special).collect();
        let first = wrong.first()?;
        Some(format!(
            "float arithmetic: {first}{}, and ptxvk has no exact way around it",
            if wrong.len() > 1 {
                format!(" (and {} more cases)", wrong.len() - 1)
            } else {
                String::new()
            }
        ))
    }

    /// Why launches of every module are refused, if they are: integer arithmetic the
    /// driver gets wrong even with its workaround.
    pub fn integer_refusal(&self) -> Option<String> {
        let first = self.sign_extensions_hidden.first()?;
        Some(format!("integer arithmetic: {first}, and ptxvk has no exact way around it"))
    }

    /// Why launches of modules whose kernels spin-wait (run as rounds of the block
    /// scheduler) are refused, if they are.
    pub fn scheduler_refusal(&self) -> Option<String> {
        let first = self.scheduler.first()?;
        Some(format!(
            "kernels that wait for each other's threads ({first}), and ptxvk's block \
             scheduler has no way around it"
        ))
    }

    /// Why launches of modules with loops are refused, if they are.
    pub fn loop_refusal(&self) -> Option<String> {
        if self.loops.is_empty() {
            return None;
        }
        let first = self.loops_guarded.first().or(match self.loop_limit {
            None => self.loops.first(),
            Some(_) => None,
        })?;
        Some(format!("loops: {first}, and ptxvk's loop guard cannot catch it"))
    }

    /// Each probe's result, in the order they run.
    pub fn report(&self, info: &ptxvk_vk::DeviceInfo) -> Vec<ProbeReport> {
        let r = |name, status, summary: String, details: &[String]| ProbeReport {
            name,
            status,
            summary,
            details: details.to_vec(),
        };
        let has_f64 = info.features.float64;
        let mut out = vec![
            r(
                "fused-fma",
                "measured",
                match (self.fused_fma.f32, self.fused_fma.f64) {
                    (true, true) => "Fma is fused for f32 and f64".into(),
                    (true, false) => "Fma is fused for f32".into(),
                    (false, true) => "Fma is fused for f64".into(),
                    (false, false) => "Fma is not fused: fma.rn is emulated exactly".into(),
                },
                &[],
            ),
            r(
                "float-scheme",
                "measured",
                if !has_f64 {
                    "integer (no shaderFloat64)".into()
                } else if self.integer_float {
                    "integer arithmetic measured faster than f64".into()
                } else {
                    "f64 measured faster than integer arithmetic".into()
                },
                &[],
            ),
        ];
        out.push(if self.constants.is_empty() {
            r("constants", "ok", format!("{} cases right", constant_cases(has_f64)), &[])
        } else if !self.hidden.is_empty() && self.constants_hidden.is_empty() {
            r(
                "constants",
                "worked around",
                format!(
                    "the driver folds float {} with known operands wrongly; their operands are \
                     hidden from it, and then all {} cases are right",
                    self.hidden.names(),
                    constant_cases(has_f64)
                ),
                &self.constants,
            )
        } else {
            let mut details = self.constants.clone();
            details
                .extend(self.constants_hidden.iter().map(|c| format!("with operands hidden: {c}")));
            r(
                "constants",
                "refused",
                "float arithmetic with known operands is wrong, also with operands hidden: \
                 launches of modules with floats are refused"
                    .into(),
                &details,
            )
        });
        out.push(match (self.sign_extensions.is_empty(), self.sign_extensions_hidden.is_empty()) {
            (true, _) => r(
                "sign-extension",
                "ok",
                "64-bit compares and min/max of sign-extended 32-bit values are right".into(),
                &[],
            ),
            (false, true) => r(
                "sign-extension",
                "worked around",
                "the driver miscompiles compares and min/max of 32- to 64-bit sign \
                 extensions; the extensions are hidden from it, and then all cases are right"
                    .into(),
                &self.sign_extensions,
            ),
            (false, false) => {
                let mut details = self.sign_extensions.clone();
                details.extend(self.sign_extensions_hidden.iter().map(|c| format!("hidden: {c}")));
                r(
                    "sign-extension",
                    "refused",
                    "sign extensions are miscompiled, also hidden: every launch is refused".into(),
                    &details,
                )
            }
        });
        out.push(match (self.loops.is_empty(), self.loop_limit, self.loops_guarded.is_empty()) {
            (true, _, _) => {
                r("loops", "ok", "loops of up to 2^24 iterations run to the end".into(), &[])
            }
            (false, Some(limit), true) => r(
                "loops",
                "guarded",
                format!(
                    "the driver silently ends a subgroup's loops after {limit} iterations in \
                     all; every loop counts them and the launch fails at {}",
                    guard_limit(limit)
                ),
                &self.loops,
            ),
            _ => {
                let mut details = self.loops.clone();
                details.extend(self.loops_guarded.iter().map(|c| format!("guarded: {c}")));
                r(
                    "loops",
                    "refused",
                    "loops are cut short and the guard does not catch it: launches of modules \
                     with loops are refused"
                        .into(),
                    &details,
                )
            }
        });
        for (name, wrong, what) in [
            ("denormals", &self.denormals, "subnormal values are kept (flushed with .ftz)"),
            ("special-values", &self.special, "special values are as the PTX ISA defines them"),
        ] {
            out.push(if wrong.is_empty() {
                r(name, "ok", what.into(), &[])
            } else {
                r(
                    name,
                    "refused",
                    "wrong: launches of modules with floats are refused".into(),
                    wrong,
                )
            });
        }
        out.push(if self.scheduler.is_empty() {
            r(
                "scheduler",
                "ok",
                "a spin lock and a flag between warps run through the block's rounds".into(),
                &[],
            )
        } else {
            r(
                "scheduler",
                "refused",
                "kernels that spin-wait come out wrong through the block's rounds: their \
                 launches are refused"
                    .into(),
                &self.scheduler,
            )
        });
        for e in &self.errors {
            let name = e.split(':').next().unwrap_or("probe");
            if let Some(p) = out.iter_mut().find(|p| p.name == name) {
                p.status = "not run";
                p.summary = e.clone();
            }
        }
        out
    }

    /// The cache file's text after its first line.
    fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "fused-fma-f32={}", u8::from(self.fused_fma.f32));
        let _ = writeln!(s, "fused-fma-f64={}", u8::from(self.fused_fma.f64));
        let _ = writeln!(s, "integer-float={}", u8::from(self.integer_float));
        let h = self.hidden;
        let _ = writeln!(
            s,
            "hidden={}{}{}{}",
            u8::from(h.add),
            u8::from(h.sub),
            u8::from(h.mul),
            u8::from(h.div)
        );
        if let Some(limit) = self.loop_limit {
            let _ = writeln!(s, "loop-limit={limit}");
        }
        for (key, list) in self.lists() {
            for item in list {
                let _ = writeln!(s, "{key}={}", item.replace('\n', " "));
            }
        }
        s
    }

    fn lists(&self) -> [(&'static str, &Vec<String>); 9] {
        [
            ("constants", &self.constants),
            ("constants-hidden", &self.constants_hidden),
            ("sign-extensions", &self.sign_extensions),
            ("sign-extensions-hidden", &self.sign_extensions_hidden),
            ("loops", &self.loops),
            ("loops-guarded", &self.loops_guarded),
            ("denormals", &self.denormals),
            ("special", &self.special),
            ("scheduler", &self.scheduler),
        ]
    }

    /// Reads [`Self::to_text`]'s lines back; `None` when one is malformed.
    fn from_text(text: &str) -> Option<Findings> {
        let mut f = Findings::default();
        for line in text.lines() {
            let (key, value) = line.split_once('=')?;
            let flag = || match value {
                "0" => Some(false),
                "1" => Some(true),
                _ => None,
            };
            match key {
                "fused-fma-f32" => f.fused_fma.f32 = flag()?,
                "fused-fma-f64" => f.fused_fma.f64 = flag()?,
                "integer-float" => f.integer_float = flag()?,
                "hidden" => {
                    let b: Vec<bool> = value.chars().map(|c| c == '1').collect();
                    let [add, sub, mul, div] = b[..] else { return None };
                    f.hidden = FloatOps { add, sub, mul, div };
                }
                "loop-limit" => f.loop_limit = Some(value.parse().ok()?),
                "constants" => f.constants.push(value.into()),
                "constants-hidden" => f.constants_hidden.push(value.into()),
                "sign-extensions" => f.sign_extensions.push(value.into()),
                "sign-extensions-hidden" => f.sign_extensions_hidden.push(value.into()),
                "loops" => f.loops.push(value.into()),
                "loops-guarded" => f.loops_guarded.push(value.into()),
                "denormals" => f.denormals.push(value.into()),
                "special" => f.special.push(value.into()),
                "scheduler" => f.scheduler.push(value.into()),
                _ => return None,
            }
        }
        Some(f)
    }
}

/// The guard's limit for a driver that ends loops after `limit` iterations: a margin
/// of 1/64 below it (the guard counts as the driver does, or more).
fn guard_limit(limit: u32) -> u32 {
    limit - limit / 64
}

/// The first line of the cache file: the probe set (a hash of every probe's PTX) and
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

/// What `device` would compile for before any probe: the first probes' base.
fn unprobed_target(device: &Device) -> Target {
    crate::target::target(Some(&DeviceFacts::unprobed(device.info())), &Options::default())
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
    f
}

/// Compiles `ptx` for `target`, launches `entry` on one block of `threads` with an
/// in/out buffer of `io` (floats as bits), and returns the buffer.
fn launch_io(
    device: &Device,
    ptx: &str,
    entry: &str,
    target: Target,
    io: &[u64],
    width: u32,
) -> Result<Vec<u64>, Error> {
    let compiled = crate::compile::compile_with("probe.ptx", ptx, Some(entry), target)?;
    let module = Module::from_compiled(device, compiled)?;
    let bytes: Vec<u8> = io
        .iter()
        .flat_map(|&v| {
            if width == 32 {
                (v as u32).to_le_bytes().to_vec()
            } else {
                v.to_le_bytes().to_vec()
            }
        })
        .collect();
    let buf = device.buffer_from(&bytes)?;
    module.kernel(entry)?.launch(1, 1, 0, &[Arg::from(&buf)])?;
    let out = buf.to_vec()?;
    let step = (width / 8) as usize;
    Ok(out
        .chunks_exact(step)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..step].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect())
}

// ----- float arithmetic with known operands ----------------------------------------------

/// An operand of a constants case.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// Input `i`, loaded from memory: the driver cannot know it.
    In(usize),
    /// A literal in the instruction (`0f00000000`).
    Lit(f64),
    /// An integer literal moved into a float register (`mov.b32 %f, 0`).
    Mov(f64),
    /// `cvt.rn.f32.u32` of an integer literal.
    Cvt(u32),
    /// `cvt.rn.f32.u32` of `x - x` for an integer `x` from memory, which the driver
    /// folds to 0 first.
    SubSelf,
}

/// The inputs of the constants cases: inf, NaN, -3, -0, +0, 1.5.
const INPUTS: [f64; 6] = [f64::INFINITY, f64::NAN, -3.0, -0.0, 0.0, 1.5];
const INF: usize = 0;
const NAN: usize = 1;
const M3: usize = 2;
const NZ: usize = 3;
const PZ: usize = 4;
const X: usize = 5;

/// An operation of a constants case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Fma,
    /// `div.approx.f32` (`a * (1/b)`), exact for these operands.
    DivApprox,
}

impl Op {
    fn ptx(self) -> &'static str {
        match self {
            Op::Add => "add.rn",
            Op::Sub => "sub.rn",
            Op::Mul => "mul.rn",
            Op::Div => "div.rn",
            Op::Fma => "fma.rn",
            Op::DivApprox => "div.approx",
        }
    }

    /// The SPIR-V operations whose folding a wrong result of this operation points
    /// at: first the one that takes the known operand (for `fma`, the sum of the exact
    /// product and the addend), then every one ptxvk computes it with.
    fn ops(self) -> [FloatOps; 2] {
        let none = FloatOps::default();
        let add = FloatOps { add: true, ..none };
        match self {
            Op::Add => [add; 2],
            Op::Sub => [FloatOps { sub: true, ..none }; 2],
            Op::Mul => [FloatOps { mul: true, ..none }; 2],
            Op::Div | Op::DivApprox => [FloatOps { div: true, mul: true, ..none }; 2],
            // The exact fma: an exact product, then a sum rounded to odd (TwoSum).
            Op::Fma => [add, FloatOps { add: true, sub: true, mul: true, div: false }],
        }
    }
}

/// The constants cases, for f32 and f64 (`div.approx` for f32 only).
const CONSTANT_CASES: [(Op, Src, Src, Option<Src>); 32] = {
    use Src::*;
    [
        (Op::Mul, In(INF), Lit(0.0), None),
        (Op::Mul, In(NAN), Lit(0.0), None),
        (Op::Mul, In(M3), Lit(0.0), None),
        (Op::Mul, Lit(0.0), In(M3), None),
        (Op::Mul, In(INF), Mov(0.0), None),
        (Op::Mul, In(M3), Cvt(0), None),
        (Op::Mul, In(INF), SubSelf, None),
        (Op::Mul, In(NZ), Lit(1.0), None),
        (Op::Mul, Lit(1.0), In(NAN), None),
        (Op::Add, In(NZ), Lit(0.0), None),
        (Op::Add, Lit(0.0), In(NZ), None),
        (Op::Add, In(NZ), Mov(0.0), None),
        (Op::Add, In(NZ), Cvt(0), None),
        (Op::Add, Lit(-0.0), Lit(0.0), None),
        (Op::Sub, In(INF), In(INF), None),
        (Op::Sub, In(X), In(X), None),
        (Op::Sub, Lit(0.0), In(PZ), None),
        (Op::Sub, Mov(0.0), In(PZ), None),
        (Op::Sub, In(NZ), Lit(0.0), None),
        (Op::Div, In(M3), Lit(0.0), None),
        (Op::Div, Lit(0.0), In(M3), None),
        (Op::Div, Lit(0.0), In(PZ), None),
        (Op::Div, In(X), Lit(1.0), None),
        (Op::Div, In(INF), Cvt(0), None),
        (Op::Fma, In(M3), Lit(0.0), Some(Lit(0.0))),
        (Op::Fma, In(M3), Lit(0.0), Some(Lit(-0.0))),
        (Op::Fma, In(INF), Lit(0.0), Some(Lit(1.0))),
        (Op::Fma, In(M3), Mov(0.0), Some(Mov(0.0))),
        (Op::Fma, Lit(1.0), In(NZ), Some(Lit(0.0))),
        (Op::Fma, In(M3), Cvt(0), Some(Cvt(0))),
        (Op::DivApprox, In(M3), Lit(0.0), None),
        (Op::DivApprox, Lit(0.0), In(M3), None),
    ]
};

/// The constants cases of one width.
fn constant_cases_of(width: u32) -> impl Iterator<Item = &'static (Op, Src, Src, Option<Src>)> {
    CONSTANT_CASES.iter().filter(move |c| width == 32 || c.0 != Op::DivApprox)
}

/// How many constants cases the device runs.
fn constant_cases(has_f64: bool) -> usize {
    constant_cases_of(32).count() + if has_f64 { constant_cases_of(64).count() } else { 0 }
}

/// `v` as a float of `width` bits, as bits.
fn bits(v: f64, width: u32) -> u64 {
    if width == 32 {
        u64::from((v as f32).to_bits())
    } else {
        v.to_bits()
    }
}

/// A PTX float literal of `width` bits.
fn literal(v: f64, width: u32) -> String {
    if width == 32 {
        format!("0f{:08X}", (v as f32).to_bits())
    } else {
        format!("0d{:016X}", v.to_bits())
    }
}

/// The constants kernel of `width` bits: inputs [`INPUTS`], then one result per case.
fn constants_ptx(width: u32) -> String {
    let (t, b) = (format!("f{width}"), format!("b{width}"));
    let step = width / 8;
    let mut body = String::new();
    for (i, x) in INPUTS.iter().enumerate() {
        let _ = writeln!(body, "    ld.global.{t} %in{i}, [%rd1+{}];", i as u32 * step);
        let _ = x;
    }
    let _ = writeln!(body, "    ld.global.u32 %rx, [%rd1];");
    let mut temps = 0;
    let mut operand = |body: &mut String, s: Src| -> String {
        match s {
            Src::In(i) => format!("%in{i}"),
            Src::Lit(v) => literal(v, width),
            Src::Mov(v) => {
                temps += 1;
                let _ = writeln!(body, "    mov.{b} %t{temps}, {};", bits(v, width));
                format!("%t{temps}")
            }
            Src::Cvt(n) => {
                temps += 1;
                let _ = writeln!(body, "    cvt.rn.{t}.u32 %t{temps}, {n};");
                format!("%t{temps}")
            }
            Src::SubSelf => {
                temps += 1;
                let _ = writeln!(body, "    sub.u32 %rs{temps}, %rx, %rx;");
                let _ = writeln!(body, "    cvt.rn.{t}.u32 %t{temps}, %rs{temps};");
                format!("%t{temps}")
            }
        }
    };
    for (k, (op, a, c, d)) in constant_cases_of(width).enumerate() {
        let a = operand(&mut body, *a);
        let c = operand(&mut body, *c);
        let d = d.map(|d| format!(", {}", operand(&mut body, d))).unwrap_or_default();
        let _ = writeln!(body, "    {}.{t} %o{k}, {a}, {c}{d};", op.ptx());
        let at = (INPUTS.len() + k) as u32 * step;
        let _ = writeln!(body, "    st.global.{t} [%rd1+{at}], %o{k};");
    }
    let (n, inputs, temps) = (constant_cases_of(width).count(), INPUTS.len(), temps + 1);
    let regs = format!(
        "    .reg .{t} %in<{inputs}>;\n    .reg .{t} %t<{temps}>;\n    .reg .{t} %o<{n}>;\n\
         \x20   .reg .b32 %rx;\n    .reg .b32 %rs<{temps}>;\n"
    );
    probe_kernel(&format!("constants_f{width}"), &regs, &body)
}

/// The value of operand `s` on the host.
fn value_of(s: Src) -> f64 {
    match s {
        Src::In(i) => INPUTS[i],
        Src::Lit(v) | Src::Mov(v) => v,
        Src::Cvt(n) => f64::from(n),
        Src::SubSelf => 0.0,
    }
}

/// How operand `s` reads in a case's description.
fn describe_src(s: Src, width: u32) -> String {
    let v = value_of(s);
    match s {
        Src::In(_) => format!("{v:?}"),
        Src::Lit(_) => format!("{v:?} (literal)"),
        Src::Mov(_) => format!("{v:?} (mov.b{width})"),
        Src::Cvt(n) => format!("{v:?} (cvt.rn.f{width}.u32 of {n})"),
        Src::SubSelf => format!("{v:?} (cvt.rn.f{width}.u32 of x - x)"),
    }
}

/// The result IEEE 754 gives (round to nearest), as bits of `width`.
fn expected(op: Op, a: f64, b: f64, c: f64, width: u32) -> u64 {
    if width == 32 {
        let (a, b, c) = (a as f32, b as f32, c as f32);
        let r = match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            Op::Div | Op::DivApprox => a / b,
            Op::Fma => a.mul_add(b, c),
        };
        u64::from(r.to_bits())
    } else {
        let r = match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            Op::Div | Op::DivApprox => a / b,
            Op::Fma => a.mul_add(b, c),
        };
        r.to_bits()
    }
}

/// Whether `got` is `want`: the same bits, or both NaN (PTX's NaN results are any NaN).
fn same(got: u64, want: u64, width: u32) -> bool {
    let nan = |v: u64| {
        if width == 32 {
            f32::from_bits(v as u32).is_nan()
        } else {
            f64::from_bits(v).is_nan()
        }
    };
    got == want || (nan(got) && nan(want))
}

/// A float as text: `-0.0`, `inf`, `NaN`, …
fn show(v: u64, width: u32) -> String {
    if width == 32 {
        format!("{:?}", f32::from_bits(v as u32))
    } else {
        format!("{:?}", f64::from_bits(v))
    }
}

/// A wrong case of [`probe_constants`]: its description and the operations it points
/// at ([`Op::ops`]).
#[derive(Clone, Debug)]
pub struct WrongConstant {
    pub text: String,
    pub ops: [FloatOps; 2],
}

/// Runs the constants cases compiled for `target` (its `float_constants` decides
/// what is hidden) and returns the wrong ones.
pub fn probe_constants(device: &Device, target: Target) -> Result<Vec<WrongConstant>, Error> {
    let mut wrong = Vec::new();
    for width in [32, 64] {
        if width == 64 && !device.info().features.float64 {
            continue;
        }
        let cases: Vec<_> = constant_cases_of(width).collect();
        let mut io: Vec<u64> = INPUTS.iter().map(|&v| bits(v, width)).collect();
        io.extend(std::iter::repeat_n(0, cases.len()));
        let entry = format!("constants_f{width}");
        let out = launch_io(device, &constants_ptx(width), &entry, target, &io, width)?;
        for (k, (op, a, b, c)) in cases.iter().enumerate() {
            let cv = c.map_or(0.0, value_of);
            let want = expected(*op, value_of(*a), value_of(*b), cv, width);
            let got = out[INPUTS.len() + k];
            if !same(got, want, width) {
                let c = c.map(|c| format!(", {}", describe_src(c, width))).unwrap_or_default();
                wrong.push(WrongConstant {
                    text: format!(
                        "{}.f{width} {}, {}{c} gave {}, not {}",
                        op.ptx(),
                        describe_src(*a, width),
                        describe_src(*b, width),
                        show(got, width),
                        show(want, width)
                    ),
                    ops: op.ops(),
                });
            }
        }
    }
    Ok(wrong)
}

// ----- sign extension -------------------------------------------------------------------

/// Each thread sign-extends its 32-bit `x` to 64 bits and writes six words: the sign
/// as `max(min(x, 1), -1)`, `x < -3`, `x >= 0`, `x > 255`, `x > -10`, and `x >> 63`
/// (arithmetic). Mesa 22.3 takes a negative `x` for a large positive number in some.
const SIGN_EXTENSION_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry sign_extension(.param .u64 io)
{
    .reg .pred %p<5>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [io];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 28;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r2, [%rd3];
    cvt.s64.s32 %rd4, %r2;
    min.s64 %rd5, %rd4, 1;
    max.s64 %rd5, %rd5, -1;
    cvt.u32.u64 %r3, %rd5;
    setp.lt.s64 %p1, %rd4, -3;
    selp.u32 %r4, 1, 0, %p1;
    setp.ge.s64 %p2, %rd4, 0;
    selp.u32 %r5, 1, 0, %p2;
    setp.gt.s64 %p3, %rd4, 255;
    selp.u32 %r6, 1, 0, %p3;
    setp.gt.s64 %p4, %rd4, -10;
    selp.u32 %r7, 1, 0, %p4;
    shr.s64 %rd6, %rd4, 63;
    cvt.u32.u64 %r8, %rd6;
    st.global.v2.u32 [%rd3+4], {%r3, %r4};
    st.global.v4.u32 [%rd3+12], {%r5, %r6, %r7, %r8};
    ret;
}
"#;

/// The `x` of each thread of [`SIGN_EXTENSION_PTX`].
const SIGN_EXTENSION_INPUTS: [i32; 8] = [-5, 7, 0, i32::MIN, i32::MAX, -300, 300, -1];

/// Runs the sign-extension cases compiled for `target` and returns the wrong ones.
pub fn probe_sign_extension(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    let compiled = crate::compile::compile_with("sign.ptx", SIGN_EXTENSION_PTX, None, target)?;
    let module = Module::from_compiled(device, compiled)?;
    let n = SIGN_EXTENSION_INPUTS.len();
    let io: Vec<u32> = SIGN_EXTENSION_INPUTS
        .iter()
        .flat_map(|&x| std::iter::once(x as u32).chain([0; 6]))
        .collect();
    let buf = device.buffer_from(&io)?;
    module.kernel("sign_extension")?.launch(1, n as u32, 0, &[Arg::from(&buf)])?;
    let out = buf.to_vec()?;
    let names = ["max(min(x, 1), -1)", "x < -3", "x >= 0", "x > 255", "x > -10", "x >> 63"];
    let mut wrong = Vec::new();
    for (t, &x) in SIGN_EXTENSION_INPUTS.iter().enumerate() {
        let x64 = i64::from(x);
        let want = [
            x64.clamp(-1, 1) as u32,
            u32::from(x64 < -3),
            u32::from(x64 >= 0),
            u32::from(x64 > 255),
            u32::from(x64 > -10),
            (x64 >> 63) as u32,
        ];
        for (k, (name, want)) in names.iter().zip(want).enumerate() {
            let got = out[7 * t + 1 + k];
            if got != want {
                wrong.push(format!(
                    "{name} of cvt.s64.s32 x = {x} gave {}, not {}",
                    got as i32, want as i32
                ));
            }
        }
    }
    Ok(wrong)
}

// ----- loops --------------------------------------------------------------------------

/// The loops probe: one loop of `n` iterations; a nest of `n` × `m`; and in a block of
/// two threads (one subgroup), a loop of `n` that thread 0 runs and then one of `n`
/// that thread 1 runs. Each thread writes its counts.
const LOOPS_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry loop_single(.param .u64 out, .param .u32 n)
{
    .reg .pred %p1;
    .reg .b32 %r<3>;
    .reg .b64 %rd1;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, 0;
LOOP:
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra LOOP;
    st.global.u32 [%rd1], %r2;
    ret;
}
.visible .entry loop_nested(.param .u64 out, .param .u32 n, .param .u32 m)
{
    .reg .pred %p<3>;
    .reg .b32 %r<7>;
    .reg .b64 %rd1;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    ld.param.u32 %r2, [m];
    mov.u32 %r3, 0;
    mov.u32 %r5, 0;
OUTER:
    mov.u32 %r4, 0;
INNER:
    add.u32 %r4, %r4, 1;
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p1, %r4, %r2;
    @%p1 bra INNER;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, %r1;
    @%p2 bra OUTER;
    st.global.v2.u32 [%rd1], {%r3, %r5};
    ret;
}
.visible .entry loop_split(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<7>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.eq.u32 %p1, %r2, 0;
    selp.u32 %r3, %r1, 0, %p1;
    selp.u32 %r4, 0, %r1, %p1;
    mov.u32 %r5, 0;
FIRST:
    setp.ge.u32 %p2, %r5, %r3;
    @%p2 bra FIRST_DONE;
    add.u32 %r5, %r5, 1;
    bra FIRST;
FIRST_DONE:
    mov.u32 %r6, 0;
SECOND:
    setp.ge.u32 %p2, %r6, %r4;
    @%p2 bra SECOND_DONE;
    add.u32 %r6, %r6, 1;
    bra SECOND;
SECOND_DONE:
    mul.wide.u32 %rd2, %r2, 8;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r5, %r6};
    ret;
}
"#;

/// One loops case: entry, threads, parameters after the buffer, and the counts a
/// right run writes.
struct LoopCase {
    entry: &'static str,
    threads: u32,
    params: Vec<u32>,
    want: Vec<u32>,
}

impl LoopCase {
    fn single(n: u32) -> LoopCase {
        LoopCase { entry: "loop_single", threads: 1, params: vec![n], want: vec![n] }
    }

    fn nested(n: u32, m: u32) -> LoopCase {
        LoopCase { entry: "loop_nested", threads: 1, params: vec![n, m], want: vec![n, n * m] }
    }

    fn split(n: u32) -> LoopCase {
        LoopCase { entry: "loop_split", threads: 2, params: vec![n], want: vec![n, 0, 0, n] }
    }

    fn describe(&self) -> String {
        match self.entry {
            "loop_single" => format!("a loop of {} iterations", self.params[0]),
            "loop_nested" => format!("a {} × {} loop nest", self.params[0], self.params[1]),
            _ => format!(
                "two loops of {} iterations taken by two threads of one subgroup",
                self.params[0]
            ),
        }
    }

    /// Runs the case on `module`: the counts, or the launch's error.
    fn run(&self, device: &Device, module: &Module) -> Result<Result<Vec<u32>, Error>, Error> {
        let out = device.zeroed::<u32>(self.want.len())?;
        let mut args = vec![Arg::from(&out)];
        args.extend(self.params.iter().map(|&p| Arg::from(p)));
        match module.kernel(self.entry)?.launch(1, self.threads, 0, &args) {
            Ok(_) => Ok(Ok(out.to_vec()?)),
            Err(e @ Error::KernelFailed { .. }) => Ok(Err(e)),
            Err(e) => Err(e),
        }
    }
}

/// Runs the loops cases compiled for `target` (unguarded): the cases cut short, and
/// the iterations after which the driver ended the single loop, if it did.
pub fn probe_loops(device: &Device, target: Target) -> Result<(Vec<String>, Option<u32>), Error> {
    let compiled = crate::compile::compile_with("loops.ptx", LOOPS_PTX, None, target)?;
    let module = Module::from_compiled(device, compiled)?;
    let cases = [
        LoopCase::single(100_000),
        LoopCase::single(1 << 24),
        LoopCase::nested(300, 300),
        LoopCase::split(40_000),
    ];
    let (mut wrong, mut limit) = (Vec::new(), None::<u32>);
    for case in &cases {
        let got = case.run(device, &module)??;
        if got != case.want {
            wrong.push(format!("{} counted {got:?}, not {:?}", case.describe(), case.want));
            if case.entry == "loop_single" {
                limit = Some(limit.map_or(got[0], |l| l.min(got[0])));
            }
        }
    }
    Ok((wrong, limit))
}

/// Runs the loops cases compiled for `target` (with a loop guard): loops past the
/// guard's limit must fail the launch with the loop-limit error, loops below it must
/// count right. Returns what did neither.
pub fn probe_guarded_loops(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    let Some(guard) = target.loop_guard else { return Ok(Vec::new()) };
    let compiled = crate::compile::compile_with("loops.ptx", LOOPS_PTX, None, target)?;
    let module = Module::from_compiled(device, compiled)?;
    let below = guard.limit - guard.limit / 16;
    let cases = [
        (LoopCase::single(100_000), false),
        (LoopCase::split(guard.limit / 2 + 1_000), false),
        (LoopCase::single(below), true),
        (LoopCase::nested(below / 300, 299), true),
        (LoopCase::split(below / 2), true),
    ];
    let mut wrong = Vec::new();
    for (case, runs) in &cases {
        match (case.run(device, &module)?, runs) {
            (Ok(got), true) if got == case.want => {}
            (Err(e), false) if crate::printf::is_loop_limit(&e.to_string()) => {}
            (Ok(got), _) => {
                wrong.push(format!("{} counted {got:?}, not {:?}", case.describe(), case.want))
            }
            (Err(e), _) => wrong.push(format!("{} failed: {e}", case.describe())),
        }
    }
    Ok(wrong)
}

// ----- denormals and special values ------------------------------------------------------

/// A known-answer case: one PTX instruction writing `%o` from the sources `%a`, `%b`,
/// `%c` (loaded from `srcs`), and the bits of the result the host computes for it.
struct Known {
    inst: &'static str,
    srcs: [f64; 3],
    want: u64,
}

/// The denormals cases of `width` bits, their results from the host's arithmetic (which
/// keeps subnormals), flushed to a signed zero, inputs and result, for `.ftz` (PTX ISA
/// 9.7.3): 2^-140 and 2^-141 are f32 subnormals, and 2^-70 squared is one.
fn denormal_cases(width: u32) -> Vec<Known> {
    let p = |e: i32| 2f64.powi(e);
    let f32s = |inst, a: f64, b: f64, c: f64, op: fn(f32, f32, f32) -> f32| {
        let ftz = |v: f32| if inst_ftz(inst) && v.is_subnormal() { 0f32.copysign(v) } else { v };
        let r = ftz(op(ftz(a as f32), ftz(b as f32), c as f32));
        Known { inst, srcs: [a, b, c], want: u64::from(r.to_bits()) }
    };
    let f64s = |inst, a: f64, b: f64, c: f64, op: fn(f64, f64, f64) -> f64| Known {
        inst,
        srcs: [a, b, c],
        want: op(a, b, c).to_bits(),
    };
    if width == 32 {
        vec![
            f32s("mul.rn.f32 %o, %a, 0f3F000000", p(-140), 0.0, 0.0, |a, _, _| a * 0.5),
            f32s("add.rn.f32 %o, %a, %b", p(-140), p(-140), 0.0, |a, b, _| a + b),
            f32s("mul.rn.f32 %o, %a, %b", p(-70), p(-70), 0.0, |a, b, _| a * b),
            f32s("sub.rn.f32 %o, %a, %b", p(-140), p(-141), 0.0, |a, b, _| a - b),
            f32s("fma.rn.f32 %o, %a, %b, %c", p(-140), 1.0, p(-140), |a, b, c| a.mul_add(b, c)),
            f32s("div.rn.f32 %o, %a, %b", p(-140), 2.0, 0.0, |a, b, _| a / b),
            f32s("sqrt.rn.f32 %o, %a", p(-140), 0.0, 0.0, |a, _, _| a.sqrt()),
            f32s("max.f32 %o, %a, %b", p(-140), 0.0, 0.0, |a, b, _| a.max(b)),
            f32s("mul.rn.ftz.f32 %o, %a, %b", p(-140), 1.0, 0.0, |a, b, _| a * b),
            f32s("mul.rn.ftz.f32 %o, %a, %b", -p(-140), 1.0, 0.0, |a, b, _| a * b),
            f32s("add.rn.ftz.f32 %o, %a, %b", p(-140), p(-140), 0.0, |a, b, _| a + b),
            f32s("mul.rn.ftz.f32 %o, %a, %b", p(-70), p(-70), 0.0, |a, b, _| a * b),
        ]
    } else {
        vec![
            f64s("mul.rn.f64 %o, %a, 0d3FE0000000000000", p(-1070), 0.0, 0.0, |a, _, _| a * 0.5),
            f64s("add.rn.f64 %o, %a, %b", p(-1070), p(-1070), 0.0, |a, b, _| a + b),
            f64s("mul.rn.f64 %o, %a, %b", p(-537), p(-537), 0.0, |a, b, _| a * b),
            f64s("sub.rn.f64 %o, %a, %b", p(-1070), p(-1071), 0.0, |a, b, _| a - b),
            f64s("fma.rn.f64 %o, %a, %b, %c", p(-1070), 1.0, p(-1070), |a, b, c| a.mul_add(b, c)),
            f64s("div.rn.f64 %o, %a, %b", p(-1070), 2.0, 0.0, |a, b, _| a / b),
            f64s("sqrt.rn.f64 %o, %a", p(-1070), 0.0, 0.0, |a, _, _| a.sqrt()),
        ]
    }
}

/// Whether a case's instruction flushes subnormals.
fn inst_ftz(inst: &str) -> bool {
    inst.split_whitespace().next().is_some_and(|op| op.contains(".ftz"))
}

/// The special-value cases of `width` bits, with the results the PTX ISA defines for
/// them (9.7.3, 9.7.4).
fn special_cases(width: u32) -> Vec<Known> {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let k = |inst, a: f64, b: f64, want: f64| Known {
        inst,
        srcs: [a, b, 0.0],
        want: bits(want, width),
    };
    if width == 32 {
        vec![
            k("sqrt.rn.f32 %o, %a", -0.0, 0.0, -0.0),
            k("sqrt.approx.f32 %o, %a", -0.0, 0.0, -0.0),
            k("sqrt.rn.f32 %o, %a", -1.0, 0.0, nan),
            k("rcp.rn.f32 %o, %a", 0.0, 0.0, inf),
            k("rcp.rn.f32 %o, %a", -0.0, 0.0, -inf),
            k("rcp.approx.f32 %o, %a", 0.0, 0.0, inf),
            k("rcp.approx.f32 %o, %a", -0.0, 0.0, -inf),
            k("div.full.f32 %o, %a, %b", 1.0, 0.0, inf),
            k("min.f32 %o, %a, 0f7FC00000", 1.5, 0.0, 1.5),
            k("max.f32 %o, 0f7FC00000, %a", 1.5, 0.0, 1.5),
            k("min.f32 %o, %a, %b", nan, nan, nan),
            k("sin.approx.f32 %o, %a", inf, 0.0, nan),
            k("cos.approx.f32 %o, %a", -inf, 0.0, nan),
            k("sin.approx.f32 %o, %a", -0.0, 0.0, -0.0),
            k("ex2.approx.f32 %o, %a", -inf, 0.0, 0.0),
            k("lg2.approx.f32 %o, %a", 0.0, 0.0, -inf),
            k("lg2.approx.f32 %o, %a", -1.0, 0.0, nan),
            k("rsqrt.approx.f32 %o, %a", 0.0, 0.0, inf),
            k("rsqrt.approx.f32 %o, %a", -0.0, 0.0, -inf),
            k("abs.f32 %o, %a", -0.0, 0.0, 0.0),
            k("neg.f32 %o, %a", 0.0, 0.0, -0.0),
            k("cvt.rni.f32.f32 %o, %a", -0.4, 0.0, -0.0),
        ]
    } else {
        vec![
            k("sqrt.rn.f64 %o, %a", -0.0, 0.0, -0.0),
            k("rcp.rn.f64 %o, %a", -0.0, 0.0, -inf),
            k("div.rn.f64 %o, %a, %b", 0.0, 0.0, nan),
            k("min.f64 %o, %a, 0d7FF8000000000000", 1.5, 0.0, 1.5),
            k("cvt.rni.f64.f64 %o, %a", -0.4, 0.0, -0.0),
        ]
    }
}

/// A kernel `NAME_fWIDTH` of `cases`: three inputs per case, then the results.
fn known_ptx(name: &str, width: u32, cases: &[Known]) -> String {
    let t = format!("f{width}");
    let step = width / 8;
    let mut body = String::new();
    for (k, case) in cases.iter().enumerate() {
        for (j, src) in ["a", "b", "c"].iter().enumerate() {
            let at = (3 * k + j) as u32 * step;
            let _ = writeln!(body, "    ld.global.{t} %{src}, [%rd1+{at}];");
        }
        let _ = writeln!(body, "    {};", case.inst);
        let at = (3 * cases.len() + k) as u32 * step;
        let _ = writeln!(body, "    st.global.{t} [%rd1+{at}], %o;");
    }
    let regs = format!("    .reg .{t} %a, %b, %c, %o;\n");
    probe_kernel(&format!("{name}_f{width}"), &regs, &body)
}

/// A probe kernel `name(.param .u64 io)` with `regs` declared and `%rd1` = `io`.
fn probe_kernel(name: &str, regs: &str, body: &str) -> String {
    format!(
        ".version 7.0\n.target sm_70\n.address_size 64\n\
         .visible .entry {name}(.param .u64 io)\n{{\n{regs}    .reg .b64 %rd1;\n\
         \x20   ld.param.u64 %rd1, [io];\n{body}    ret;\n}}\n"
    )
}

/// Runs the known-answer cases `cases` gives for each width the device has, compiled
/// for `target` as the kernels `name_f32` and `name_f64`, and returns the wrong ones.
fn probe_known(
    device: &Device,
    target: Target,
    name: &str,
    cases: fn(u32) -> Vec<Known>,
) -> Result<Vec<String>, Error> {
    let mut wrong = Vec::new();
    for width in [32, 64] {
        if width == 64 && !device.info().features.float64 {
            continue;
        }
        let cases = cases(width);
        let mut io: Vec<u64> = cases.iter().flat_map(|c| c.srcs.map(|v| bits(v, width))).collect();
        io.extend(std::iter::repeat_n(0, cases.len()));
        let ptx = known_ptx(name, width, &cases);
        let out = launch_io(device, &ptx, &format!("{name}_f{width}"), target, &io, width)?;
        for (k, case) in cases.iter().enumerate() {
            let got = out[3 * cases.len() + k];
            if !same(got, case.want, width) {
                let [a, b, c] = case.srcs.map(|v| show(bits(v, width), width));
                wrong.push(format!(
                    "`{}` of ({a}, {b}, {c}) gave {}, not {}",
                    case.inst,
                    show(got, width),
                    show(case.want, width)
                ));
            }
        }
    }
    Ok(wrong)
}

/// The scheduler probe: a spin lock taken in a polling loop whose critical section has
/// fences (`spin_lock_try` of `tests/kernels/forward_progress.cu`; Mesa 22.3's lavapipe
/// lets only its first subgroup in), and a flag from warp 1 to warp 0. Each of the 64
/// threads takes a ticket under the lock and adds it to a counter; thread 0 of warp 0
/// waits for warp 1's flag (set after a `bar.warp.sync`) and copies the counter it saw.
/// out[t] = ticket, out[64] = count, out[65] = the flag's value warp 0 read.
const SCHEDULER_PROBE: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry scheduler_probe(.param .u64 out)
{
    .reg .pred %p<6>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b32 lock;
    .shared .align 4 .b32 count;
    .shared .align 4 .b32 flag;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra READY;
    st.shared.u32 [lock], 0;
    st.shared.u32 [count], 0;
    st.shared.u32 [flag], 0;
READY:
    bar.sync 0;
    mov.u32 %r2, 0;
TRY:
    atom.shared.cas.b32 %r3, [lock], 0, 1;
    setp.ne.u32 %p2, %r3, 0;
    @%p2 bra AGAIN;
    membar.cta;
    ld.volatile.shared.u32 %r4, [count];
    add.u32 %r5, %r4, 1;
    st.volatile.shared.u32 [count], %r5;
    membar.cta;
    atom.shared.exch.b32 %r6, [lock], 0;
    mov.u32 %r2, 1;
AGAIN:
    setp.eq.u32 %p3, %r2, 0;
    @%p3 bra TRY;
    shr.u32 %r7, %r1, 5;
    setp.ne.u32 %p4, %r7, 1;
    @%p4 bra WAIT;
    bar.warp.sync -1;
    st.volatile.shared.u32 [flag], 7;
    bra STORE;
WAIT:
    setp.ne.u32 %p5, %r1, 0;
    @%p5 bra STORE;
SPIN:
    ld.volatile.shared.u32 %r8, [flag];
    setp.eq.u32 %p5, %r8, 0;
    @%p5 bra SPIN;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1+260], %r8;
STORE:
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    bar.sync 0;
    @%p1 bra DONE;
    ld.shared.u32 %r9, [count];
    st.global.u32 [%rd1+256], %r9;
DONE:
    ret;
}
"#;

/// Runs [`SCHEDULER_PROBE`] compiled for `target` and returns what came out wrong: the
/// tickets must be 0 to 63 in some order, the count 64 and the flag 7.
pub fn probe_scheduler(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    let compiled = crate::compile::compile_with("scheduler.ptx", SCHEDULER_PROBE, None, target)?;
    let module = Module::from_compiled(device, compiled)?;
    let out = device.buffer_from(&[u32::MAX; 66])?;
    let kernel = module.kernel("scheduler_probe")?;
    let mut wrong = Vec::new();
    if let Err(e) = kernel.launch(1, 64, 0, &[Arg::from(&out)]) {
        wrong.push(format!("a spin lock and a flag between warps failed: {e}"));
        return Ok(wrong);
    }
    let got = out.to_vec()?;
    let mut tickets = got[..64].to_vec();
    tickets.sort_unstable();
    if tickets != (0..64).collect::<Vec<u32>>() || got[64] != 64 {
        let took = got[..64].iter().filter(|&&t| t != u32::MAX).count();
        wrong.push(format!(
            "a spin lock with fences in its critical section let {took} of 64 threads in              and counted {}",
            got[64]
        ));
    }
    if got[65] != 7 {
        wrong.push(format!("a flag from warp 1 to warp 0 read {:#x}, not 7", got[65]));
    }
    Ok(wrong)
}

/// Runs the denormals cases compiled for `target` and returns the wrong ones.
pub fn probe_denormals(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    probe_known(device, target, "denormals", denormal_cases)
}

/// Runs the special-value cases compiled for `target` and returns the wrong ones.
pub fn probe_special(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    probe_known(device, target, "special", special_cases)
}

// ----- fused fma, float scheme, warps --------------------------------------------------

/// The fused-fma probe: `fma.rn` of operands whose product is an
/// exact tie, so that a fused `Fma` gives the tiny remainder and an unfused one 0:
/// (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 in f32, (1 + 2^-27)^2 - (1 + 2^-26) = 2^-54 in
/// f64. The operands come from memory so that no compiler folds them.
const FMA_PROBE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry fma_probe_f32(.param .u64 io)
{
    .reg .f32 %f<5>;
    .reg .b64 %rd1;
    ld.param.u64 %rd1, [io];
    ld.global.f32 %f1, [%rd1];
    ld.global.f32 %f2, [%rd1+4];
    ld.global.f32 %f3, [%rd1+8];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd1+12], %f4;
    ret;
}
.visible .entry fma_probe_f64(.param .u64 io)
{
    .reg .f64 %fd<5>;
    .reg .b64 %rd1;
    ld.param.u64 %rd1, [io];
    ld.global.f64 %fd1, [%rd1];
    ld.global.f64 %fd2, [%rd1+8];
    ld.global.f64 %fd3, [%rd1+16];
    fma.rn.f64 %fd4, %fd1, %fd2, %fd3;
    st.global.f64 [%rd1+24], %fd4;
    ret;
}
"#;

/// A kernel of exact f32 `fma`, `div` and `sqrt` (`FLOAT_SCHEME_PROBE`), timed with the
/// f64 scheme and with the integer one: the median GPU milliseconds of each, from five
/// alternating launches of 4,096 threads.
pub fn probe_float_scheme(device: &Device, fused_fma: FusedFma) -> Result<(f64, f64), Error> {
    let own = Target { fused_fma, ..unprobed_target(device) };
    let n = 4096u32;
    let mut modules = Vec::new();
    for float64 in [true, false] {
        let target = Target { float64, ..own };
        let compiled =
            crate::compile::compile_with("float_scheme.ptx", FLOAT_SCHEME_PROBE, None, target)?;
        modules.push(Module::from_compiled(device, compiled)?);
    }
    let input: Vec<f32> = (0..n).map(|k| k as f32 * 0.37 + 1.0).collect();
    let buf = device.buffer_from(&input)?;
    let mut times = [Vec::new(), Vec::new()];
    for round in 0..6 {
        for (m, t) in modules.iter().zip(times.iter_mut()) {
            let args = [Arg::from(&buf), Arg::from(n)];
            let stats = m.kernel("float_scheme")?.launch_timed(n / 64, 64, 0, &args)?;
            // The first round warms the pipelines up.
            if round > 0 {
                t.push(stats.kernel_ms);
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [f, i] = times;
    Ok((median(f), median(i)))
}

/// The kernel [`probe_float_scheme`] times: a loop of `fma.rn`, `div.rn` and `sqrt.rn`
/// on f32.
const FLOAT_SCHEME_PROBE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry float_scheme(.param .u64 io, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r1, %r2, %r3, %r1;
    ld.param.u32 %r4, [n];
    setp.ge.u32 %p1, %r1, %r4;
    @%p1 bra DONE;
    ld.param.u64 %rd1, [io];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    mov.u32 %r5, 0;
LOOP:
    fma.rn.f32 %f1, %f1, 0f3F800347, 0f3F000000;
    add.f32 %f2, %f1, 0f3F800000;
    div.rn.f32 %f3, %f1, %f2;
    sqrt.rn.f32 %f4, %f3;
    add.f32 %f1, %f1, %f4;
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p1, %r5, 16;
    @%p1 bra LOOP;
    st.global.f32 [%rd3], %f1;
DONE:
    ret;
}
"#;

/// Runs the fused-fma probe kernel (`FMA_PROBE`) with `fma.rn` mapped to the device's
/// `Fma` (f64 only where the device has it) and compares with the exact results.
pub fn probe_fused_fma(device: &Device) -> Result<FusedFma, Error> {
    let has_f64 = device.info().features.float64;
    let target =
        Target { fused_fma: FusedFma { f32: true, f64: has_f64 }, ..unprobed_target(device) };
    let mut fused = FusedFma::default();
    let t32 = 1.0f32 + 2f32.powi(-12);
    let t64 = 1.0f64 + 2f64.powi(-27);
    let cases: [(&str, Vec<u8>, Vec<u8>); 2] = [
        (
            "fma_probe_f32",
            [t32, t32, -(1.0 + 2f32.powi(-11)), 0.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
            2f32.powi(-24).to_le_bytes().to_vec(),
        ),
        (
            "fma_probe_f64",
            [t64, t64, -(1.0 + 2f64.powi(-26)), 0.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
            2f64.powi(-54).to_le_bytes().to_vec(),
        ),
    ];
    for (entry, input, want) in cases {
        let is_f64 = entry.ends_with("f64");
        if is_f64 && !has_f64 {
            continue;
        }
        let compiled =
            crate::compile::compile_with("fma_probe.ptx", FMA_PROBE, Some(entry), target)?;
        let module = Module::from_compiled(device, compiled)?;
        let io = device.buffer_from(&input)?;
        module.kernel(entry)?.launch(1, 1, 0, &[Arg::from(&io)])?;
        let out = io.to_vec()?;
        let got = &out[out.len() - want.len()..];
        if is_f64 {
            fused.f64 = got == want.as_slice();
        } else {
            fused.f32 = got == want.as_slice();
        }
    }
    Ok(fused)
}

/// The probe kernel of [`Device::open`]: each thread writes its index, `%laneid`,
/// `activemask` and lane 0's index from `shfl.sync.idx`.
const WARP_PROBE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry warp_probe(.param .u64 out)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %laneid;
    activemask.b32 %r3;
    shfl.sync.idx.b32 %r4, %r1, 0, 31, %r3;
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 16;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};
    ret;
}
"#;

/// Runs the warp probe kernel (`WARP_PROBE`) for `device`'s warp mode in blocks of 64
/// and 48 threads (full warps, and a partial last warp) and checks what each thread saw
/// against CUDA's numbering; the first difference is the error.
pub fn probe_warps(device: &Device) -> Result<(), String> {
    let compiled =
        crate::compile::compile_with("warp_probe.ptx", WARP_PROBE, None, device.target())
            .map_err(|e| e.to_string())?;
    let module = Module::from_compiled(device, compiled).map_err(|e| e.to_string())?;
    let kernel = module.kernel("warp_probe").map_err(|e| e.to_string())?;
    for block in [64u32, 48] {
        let out = device.zeroed::<u32>(4 * block as usize).map_err(|e| e.to_string())?;
        kernel.launch(1, block, 0, &[Arg::from(&out)]).map_err(|e| e.to_string())?;
        let seen = out.to_vec().map_err(|e| e.to_string())?;
        for t in 0..block {
            let warp_start = t - t % 32;
            let in_warp = (block - warp_start).min(32);
            let mask = if in_warp == 32 { u32::MAX } else { (1 << in_warp) - 1 };
            let want = [t, t % 32, mask, warp_start];
            let got = &seen[4 * t as usize..4 * t as usize + 4];
            if got != want {
                return Err(format!(
                    "in a block of {block}, thread {t} saw (tid, laneid, activemask, lane 0) \
                     = {got:?}, not {want:?}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every probe kernel compiles, with the operands of all four operations hidden and
    /// with a loop guard, to SPIR-V that spirv-val accepts.
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
