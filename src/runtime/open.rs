//! Opening a device: the Vulkan device, the options the environment sets, and the
//! probes that settle its facts (the warp probe, the driver-bug probes). It stands
//! above `crate::probes`, which run kernels on the [`Device`] it opens.

use std::sync::Arc;

use ptxvk_vk::DeviceSelector;

use super::Device;
use crate::check::CheckConfig;
use crate::compile::WarpMode;
use crate::probes;
use crate::target::{required_subgroup_size, DeviceFacts, Options};
use crate::Error;

impl Device {
    /// Opens the device. Where [`warp_choice`](crate::target::warp_choice) relies on a required subgroup size, a
    /// probe kernel first checks that warps come out as CUDA numbers them (lane = thread
    /// index mod 32, full and partial warps, shuffles within the warp); if they do not,
    /// the device gets emulated warps and [`Self::warp_reason`] says what the probe saw.
    pub fn open(selector: &DeviceSelector) -> Result<Device, Error> {
        Device::open_masked(selector, "")
    }

    /// [`Device::open`] with the Vulkan features named in `mask` (commas between)
    /// masked on this device only, as `PTXVK_MASK_FEATURES` masks them on every device
    /// (`ptxvk compare --on 0+mask=shaderFloat64`).
    pub fn open_masked(selector: &DeviceSelector, mask: &str) -> Result<Device, Error> {
        let inner = ptxvk_vk::Device::open_masked(selector, mask)?;
        let options = Options::from_env()?;
        let mut facts = DeviceFacts::unprobed(inner.info());
        facts.confined = inner.confinement().is_some();
        // The probes below see no findings of their own yet.
        facts.findings = Some(Arc::default());
        let mut device = Device {
            inner,
            facts: Arc::new(facts),
            // The probes run unchecked.
            options: Options { check: CheckConfig::default(), ..options },
            window: Arc::default(),
            pending_launches: Arc::new(ptxvk_abi::device_launch::DEFAULT_PENDING_LIMIT.into()),
        };
        if required_subgroup_size(device.info(), device.warp_mode()).is_some() {
            if let Err(seen) = probes::probe_warps(&device) {
                let why = format!("the warp probe failed with required subgroups: {seen}");
                let facts = Arc::make_mut(&mut device.facts);
                facts.warp_mode = WarpMode::Emulated;
                facts.warp_reason = why.into();
            }
        }
        // The driver-bug probes (or their cached answers). A probe that cannot run
        // leaves the default answer: no fused `Fma`, the f64 scheme where the device has
        // f64, repaired zero sums, no loop guard.
        let findings = probes::findings(&device);
        Arc::make_mut(&mut device.facts).findings = Some(Arc::new(findings));
        device.set_check(options.check);
        Ok(device)
    }
}
