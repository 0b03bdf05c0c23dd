//! Device policy: what a module is compiled for.
//!
//! Two things decide it, kept apart here:
//!
//! - the device's **facts** ([`DeviceFacts`]): the features and limits Vulkan reports,
//!   the warp mode chosen from them and why ([`warp_choice`], confirmed by a probe when
//!   the device opens), and what the driver-bug probes found (`crate::probes`);
//! - the user's **options** ([`Options`]): a forced warp mode (`--warp-mode`), native or
//!   exact floats (`--float`, `PTXVK_FLOAT`), and the check tools (`--check`,
//!   `PTXVK_CHECK`).
//!
//! [`target`] combines them into the [`Target`] that `ptxvk_lower`'s passes read. It is
//! the one place a `Target` is made: `ptxvk compile` (no device, so
//! [`Target::portable`] under the options), [`Device::target`](crate::Device::target)
//! (every module loaded on a device, the driver library's included), `ptxvk run` and
//! `ptxvk compare` (the device's facts under the options given on the command line)
//! all come here. The probes build candidate targets from it while they find the facts.

use std::sync::Arc;

use ptxvk_vk::DeviceInfo;

use crate::check::{CheckConfig, DEFAULT_LIMIT, ENV_CHECK, ENV_CHECK_LIMIT};
use crate::compile::{Target, WarpMode};
use crate::probes::findings::Findings;
use crate::Error;

/// The environment variable that chooses exact (`exact`, the default) or Vulkan's own
/// (`native`) float arithmetic for every module of a device, the driver library's
/// included.
pub const ENV_FLOAT: &str = "PTXVK_FLOAT";

/// What a device is, as far as compiling for it goes: what Vulkan reports, the warp
/// mode chosen for it, and what the driver-bug probes found.
#[derive(Clone, Debug)]
pub struct DeviceFacts {
    /// Features (after `PTXVK_MASK_FEATURES`), limits and subgroup sizes.
    pub info: DeviceInfo,
    /// The warp mode modules get (`docs/architecture.md`, *Warp modes*).
    pub warp_mode: WarpMode,
    /// Why, in words (`ptxvk devices`).
    pub warp_reason: Arc<str>,
    /// What the driver-bug probes found; `None` when they have not run (a device
    /// described from its properties alone).
    pub findings: Option<Arc<Findings>>,
    /// The device keeps every allocation in one confinement range, so that kernels
    /// get tested against it (`ptxvk_vk::Device::confinement`: a CPU device, with
    /// `PTXVK_CONFINE` not 0).
    pub confined: bool,
}

impl DeviceFacts {
    /// The facts of a device described by `info` before any probe has run: the warp
    /// mode of [`warp_choice`], no findings.
    pub fn unprobed(info: &DeviceInfo) -> DeviceFacts {
        let (warp_mode, why) = warp_choice(info);
        DeviceFacts {
            info: info.clone(),
            warp_mode,
            warp_reason: why.into(),
            findings: None,
            confined: false,
        }
    }
}

/// What the user asks of every module compiled under these options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// A warp mode forced over the device's (`--warp-mode`); `None`: the device's, or
    /// emulated warps without a device.
    pub warp_mode: Option<WarpMode>,
    /// Vulkan's own `fma`, `div`, `rcp` and `sqrt` (`--float native`, `PTXVK_FLOAT`):
    /// [`Target::native_float`].
    pub native_float: bool,
    /// Which checks launches get (`--check`, `PTXVK_CHECK`).
    pub check: CheckConfig,
}

impl Options {
    /// The options the environment sets for every device of the process:
    /// `PTXVK_FLOAT` and `PTXVK_CHECK` (with `PTXVK_CHECK_LIMIT`).
    pub fn from_env() -> Result<Options, Error> {
        let native_float = native_float_from_env()?;
        Ok(Options { warp_mode: None, native_float, check: CheckConfig::from_env()? })
    }
}

impl CheckConfig {
    /// The configuration `PTXVK_CHECK` and `PTXVK_CHECK_LIMIT` ask for.
    pub fn from_env() -> Result<CheckConfig, Error> {
        let tools = std::env::var(ENV_CHECK).unwrap_or_default();
        let tools = CheckConfig::parse_tools(&tools)
            .map_err(|e| Error::Config(format!("{ENV_CHECK}={tools}: {e}")))?;
        let limit = match std::env::var(ENV_CHECK_LIMIT) {
            Err(_) => DEFAULT_LIMIT,
            Ok(v) => v.trim().parse::<usize>().map_err(|_| {
                Error::Config(format!("{ENV_CHECK_LIMIT}={v}: expected a number of violations"))
            })?,
        };
        Ok(CheckConfig { limit, ..tools })
    }
}

/// What modules are compiled for on a device with `facts` (none: `ptxvk compile`
/// without a device) under `options`.
///
/// From the device: its warp mode; f64 for f32 arithmetic where it has `shaderFloat64`
/// and the probes did not measure integers faster; 8- and 16-bit integers; its shared
/// memory; and the probes' workarounds (fused `Fma`, hidden float operands and sign
/// extensions, the loop guard). From the options: a forced warp mode, native floats,
/// the check tools.
pub fn target(facts: Option<&DeviceFacts>, options: &Options) -> Target {
    let device = match facts {
        None => Target::portable(),
        Some(facts) => device_target(facts),
    };
    Target {
        warp_mode: options.warp_mode.unwrap_or(device.warp_mode),
        native_float: options.native_float,
        check: options.check.any(),
        racecheck: options.check.racecheck,
        initcheck: options.check.initcheck,
        confine: facts.is_some_and(|f| f.confined),
        ..device
    }
}

/// The part of [`target`] that the device's facts decide.
fn device_target(facts: &DeviceFacts) -> Target {
    let info = &facts.info;
    let unprobed = Target {
        warp_mode: facts.warp_mode,
        float64: info.features.float64,
        int8: info.features.int8,
        int16: info.features.int16,
        shared_memory_bytes: Some(info.limits.max_shared_memory_bytes),
        emulated_subgroup: fixed_subgroup_size(info),
        ..Target::portable()
    };
    let Some(f) = &facts.findings else { return unprobed };
    Target {
        fused_fma: f.fused_fma,
        float64: unprobed.float64 && !f.integer_float,
        float_constants: f.float_constants(),
        hide_sign_extensions: !f.sign_extensions.is_empty(),
        loop_guard: f.loop_guard(info),
        // `pass::warp_trees` only where its probe found nothing wrong.
        emulated_subgroup: unprobed.emulated_subgroup.filter(|_| f.warp_trees.is_empty()),
        ..unprobed
    }
}

/// `PTXVK_FLOAT`: whether it asks for native float arithmetic.
fn native_float_from_env() -> Result<bool, Error> {
    match std::env::var(ENV_FLOAT).as_deref().map(str::trim) {
        Err(_) | Ok("") | Ok("exact") => Ok(false),
        Ok("native") => Ok(true),
        Ok(other) => Err(Error::Config(format!(
            "{ENV_FLOAT}={other}: expected `exact` (the default) or `native`"
        ))),
    }
}

/// The warp mode for a device described by `info` (`docs/architecture.md`, *Warp
/// modes*), and why:
/// * native where subgroups are always 32 wide (NVIDIA), or where compute pipelines
///   can require subgroups of 32 (Vulkan 1.3 subgroup size control: AMD RDNA, Intel);
/// * split where they can require 64 but not 32 (AMD GCN): a warp is half a subgroup;
/// * emulated elsewhere.
///
/// A required size is confirmed when the device opens, by a probe kernel
/// ([`Device::open`](crate::Device::open)); this function does not run it.
pub fn warp_choice(info: &DeviceInfo) -> (WarpMode, String) {
    const NVIDIA: u32 = 0x10de;
    if info.subgroup_size == 32 && info.vendor_id == NVIDIA {
        return (WarpMode::Native, "NVIDIA subgroups are always 32 wide".to_string());
    }
    match info.required_subgroup_sizes {
        Some(s) if s.allows(32) => (
            WarpMode::Native,
            format!("pipelines require subgroups of 32 (the device runs {} to {})", s.min, s.max),
        ),
        Some(s) if s.allows(64) => (
            WarpMode::Split,
            format!(
                "pipelines require subgroups of 64, two warps each (the device runs {} to {})",
                s.min, s.max
            ),
        ),
        Some(s) if s.min == s.max => (
            WarpMode::Emulated,
            format!("its subgroups have {} invocations, neither 32 nor 64", s.min),
        ),
        Some(s) => (
            WarpMode::Emulated,
            format!("its subgroups have {} to {} invocations, neither 32 nor 64", s.min, s.max),
        ),
        None => (
            WarpMode::Emulated,
            format!(
                "its subgroups have {} invocations and it has no subgroup size control",
                info.subgroup_size
            ),
        ),
    }
}

/// The device's subgroup size where every compute pipeline gets it: without subgroup
/// size control, or where it allows one size only ([`Target::emulated_subgroup`]).
fn fixed_subgroup_size(info: &DeviceInfo) -> Option<u32> {
    match info.required_subgroup_sizes {
        Some(s) if s.min != s.max => None,
        _ => Some(info.subgroup_size),
    }
}

/// The subgroup size pipelines must require for `mode` on a device described by
/// `info`: the mode's size where the device can require it, else none (the device's
/// own size, which [`check_warp_mode`] checked).
pub(crate) fn required_subgroup_size(info: &DeviceInfo, mode: WarpMode) -> Option<u32> {
    let size = mode.subgroup_size()?;
    info.required_subgroup_sizes.filter(|s| s.allows(size)).map(|_| size)
}

/// Whether modules compiled for `mode` run correctly on a device described by `info`.
pub fn check_warp_mode(info: &DeviceInfo, mode: WarpMode) -> Result<(), Error> {
    match mode.subgroup_size() {
        Some(size)
            if size != info.subgroup_size && required_subgroup_size(info, mode).is_none() =>
        {
            Err(Error::Launch(format!(
                "warp mode `{}` needs subgroups of {size} invocations; {} has {}",
                mode.name(),
                info.name,
                info.subgroup_size
            )))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::Target;
    use ptxvk_lower::pass::{FloatConstants, FloatOps, FusedFma};
    use ptxvk_vk::{DeviceType, Features, Limits, SubgroupSizes};

    /// A device with `subgroup_size`, and subgroup size control over `range`.
    fn info(vendor_id: u32, subgroup_size: u32, range: Option<(u32, u32)>) -> DeviceInfo {
        DeviceInfo {
            index: 0,
            name: "gpu".into(),
            device_type: DeviceType::Discrete,
            api_version: (1, 3, 0),
            driver_name: String::new(),
            driver_info: String::new(),
            vendor_id,
            device_id: 0,
            subgroup_size,
            required_subgroup_sizes: range.map(|(min, max)| SubgroupSizes {
                min,
                max,
                max_per_workgroup: 1024 / min,
                full_subgroups: true,
            }),
            timestamp_period_ns: 1.0,
            timestamps: true,
            memory_bytes: 1 << 30,
            limits: Limits {
                max_workgroup_count: [65535; 3],
                max_workgroup_size: [1024, 1024, 64],
                max_workgroup_invocations: 1024,
                max_shared_memory_bytes: 49152,
                max_push_constants_size: 128,
            },
            features: Features::default(),
            resident_workgroups: 1,
        }
    }

    #[test]
    fn warp_modes_follow_the_subgroup_sizes_a_device_can_require() {
        const NVIDIA: u32 = 0x10de;
        const AMD: u32 = 0x1002;
        const INTEL: u32 = 0x8086;
        let cases = [
            // NVIDIA: always 32, with or without size control.
            (info(NVIDIA, 32, None), WarpMode::Native, None),
            (info(NVIDIA, 32, Some((32, 32))), WarpMode::Native, Some(32)),
            // AMD RDNA (32 or 64, 64 by default for compute on some drivers).
            (info(AMD, 64, Some((32, 64))), WarpMode::Native, Some(32)),
            // AMD GCN: 64 only.
            (info(AMD, 64, Some((64, 64))), WarpMode::Split, Some(64)),
            // Intel: 8 to 32.
            (info(INTEL, 16, Some((8, 32))), WarpMode::Native, Some(32)),
            // Mali-like 16 only, lavapipe 8 only: neither size.
            (info(0x13b5, 16, Some((16, 16))), WarpMode::Emulated, None),
            (info(0x10005, 8, Some((8, 8))), WarpMode::Emulated, None),
            // 32 by default but no control: the driver may pick another size.
            (info(INTEL, 32, None), WarpMode::Emulated, None),
        ];
        for (i, (device, mode, required)) in cases.iter().enumerate() {
            let (got, why) = warp_choice(device);
            assert_eq!(got, *mode, "case {i}: {why}");
            assert!(!why.is_empty());
            assert_eq!(required_subgroup_size(device, got), *required, "case {i}");
            assert!(check_warp_mode(device, got).is_ok(), "case {i}");
        }
        // Forcing a mode the device cannot run is an error, not a wrong result.
        let gcn = info(AMD, 64, Some((64, 64)));
        assert!(check_warp_mode(&gcn, WarpMode::Native).is_err());
        assert!(check_warp_mode(&gcn, WarpMode::Split).is_ok());
    }

    #[test]
    fn without_a_device_the_options_apply_to_the_portable_target() {
        let options = Options {
            warp_mode: Some(WarpMode::Native),
            native_float: true,
            check: CheckConfig::racecheck(),
        };
        let got = target(None, &options);
        let want = Target {
            warp_mode: WarpMode::Native,
            native_float: true,
            check: true,
            racecheck: true,
            initcheck: false,
            confine: false,
            ..Target::portable()
        };
        assert_eq!(got, want);
        assert_eq!(target(None, &Options::default()), Target::portable());
    }

    #[test]
    fn a_device_target_takes_its_features_then_its_findings_then_the_options() {
        let mut gpu = info(0x1002, 64, Some((64, 64)));
        gpu.features.float64 = true;
        gpu.features.int16 = true;
        let mut facts = DeviceFacts::unprobed(&gpu);
        let unprobed = target(Some(&facts), &Options::default());
        assert_eq!(unprobed.warp_mode, WarpMode::Split);
        assert!(unprobed.float64 && unprobed.int16 && !unprobed.int8);
        assert_eq!(unprobed.shared_memory_bytes, Some(49152));
        // Unknown until probed: zero sums are repaired, nothing is hidden.
        assert_eq!(unprobed.float_constants, FloatConstants::Repaired);

        let hidden = FloatOps { add: true, ..FloatOps::default() };
        facts.findings = Some(Arc::new(Findings {
            fused_fma: FusedFma { f32: true, f64: false },
            integer_float: true,
            hidden,
            constants: vec!["x + 0".into()],
            sign_extensions: vec!["min".into()],
            loop_limit: Some(70_000),
            ..Findings::default()
        }));
        let probed = target(Some(&facts), &Options::default());
        assert!(probed.fused_fma.f32 && !probed.fused_fma.f64);
        assert!(!probed.float64, "integers were measured faster");
        assert_eq!(probed.float_constants, FloatConstants::Hidden(hidden));
        assert!(probed.hide_sign_extensions);
        let guard = probed.loop_guard.expect("the driver cuts loops short");
        // A margin of 1/64 below the limit the probe saw (`Findings::loop_guard`).
        assert_eq!(guard.limit, 70_000 - 70_000 / 64);
        assert_eq!(guard.subgroups, 1024 / 64);

        let forced = Options { warp_mode: Some(WarpMode::Emulated), ..Options::default() };
        let emulated = target(Some(&facts), &forced);
        assert_eq!(emulated, Target { warp_mode: WarpMode::Emulated, ..probed });
    }
}
