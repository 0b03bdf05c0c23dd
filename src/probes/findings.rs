//! What the probes found ([`Findings`]), how `ptxvk devices` reports it, and its
//! cache file's text.

use std::fmt::Write as _;

use ptxvk_lower::pass::{FloatConstants, FloatOps, FusedFma, LoopGuard};

use super::constant_cases::constant_cases;

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
    /// Shuffle-tree cases that came out wrong through `pass::warp_trees`; where any did,
    /// the pass is off for the device (`probe_warp_trees`).
    pub warp_trees: Vec<String>,
    /// Probes that could not run (not cached: they run again next time).
    pub errors: Vec<String>,
}

/// The probes' names, in the order they run and [`Findings::report`] lists them.
pub const NAMES: [&str; 9] = [
    "fused-fma",
    "float-scheme",
    "constants",
    "sign-extension",
    "loops",
    "denormals",
    "special-values",
    "scheduler",
    "warp-trees",
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
        out.push(if self.warp_trees.is_empty() {
            r(
                "warp-trees",
                "ok",
                "shuffle trees run on the device's subgroups where it has a fixed size".into(),
                &[],
            )
        } else {
            r(
                "warp-trees",
                "off",
                "shuffle trees came out wrong on the device's subgroups: they are exchanged \
                 through shared memory instead"
                    .into(),
                &self.warp_trees,
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
    pub(super) fn to_text(&self) -> String {
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

    pub(super) fn lists(&self) -> [(&'static str, &Vec<String>); 10] {
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
            ("warp-trees", &self.warp_trees),
        ]
    }

    /// Reads [`Self::to_text`]'s lines back; `None` when one is malformed.
    pub(super) fn from_text(text: &str) -> Option<Findings> {
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
                "warp-trees" => f.warp_trees.push(value.into()),
                _ => return None,
            }
        }
        Some(f)
    }
}

/// The guard's limit for a driver that ends loops after `limit` iterations: a margin
/// of 1/64 below it (the guard counts as the driver does, or more).
pub(super) fn guard_limit(limit: u32) -> u32 {
    limit - limit / 64
}
