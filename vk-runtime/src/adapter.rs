//! Physical devices: what each one is, what it offers, and whether ptxvk can use it.
//!
//! [`Adapter::probe`] queries one `VkPhysicalDevice` (properties, features, queue families,
//! extensions) into a [`DeviceInfo`] plus the raw Vulkan feature structures that
//! [`crate::device`] needs to decide what to enable. Structures that belong to a Vulkan
//! version or extension the device lacks are never chained into a query.

use std::ffi::CStr;

use ash::vk;

use crate::conv;
use crate::error::Error;
use crate::types::{DeviceInfo, Features, Limits, SubgroupSizes};

/// The queue family launches are submitted to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QueueFamily {
    pub(crate) index: u32,
    pub(crate) timestamp_valid_bits: u32,
}

/// Whether buffers of ptxvk's usage can be backed by memory exported and imported as
/// opaque file descriptors (vkGetPhysicalDeviceExternalBufferProperties, Vulkan 1.1):
/// `Some(dedicated only)` when they can.
fn opaque_fd_buffers_shareable(instance: &ash::Instance, raw: vk::PhysicalDevice) -> Option<bool> {
    let info = vk::PhysicalDeviceExternalBufferInfo::default()
        .usage(conv::buffer_usage())
        .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let mut props = vk::ExternalBufferProperties::default();
    // SAFETY: `raw` belongs to this live instance and supports Vulkan >= 1.1, where the
    // query is core (the caller checks); both structures outlive the call.
    unsafe { instance.get_physical_device_external_buffer_properties(raw, &info, &mut props) };
    let features = props.external_memory_properties.external_memory_features;
    features
        .contains(
            vk::ExternalMemoryFeatureFlags::EXPORTABLE | vk::ExternalMemoryFeatureFlags::IMPORTABLE,
        )
        .then(|| features.contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY))
}

/// Optional device extensions ptxvk uses when they exist.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Extensions {
    pub(crate) shader_clock: bool,
    pub(crate) shader_atomic_float: bool,
    /// Must be enabled when offered (MoltenVK).
    pub(crate) portability_subset: bool,
    /// `VK_EXT_external_memory_host`: registering existing host memory for kernels.
    pub(crate) external_memory_host: bool,
    /// `VK_KHR_external_memory_fd`, with buffers of ptxvk's usage exportable and
    /// importable as opaque file descriptors: memory shared between processes (CUDA IPC).
    pub(crate) external_memory_fd: bool,
    /// Such memory must be a dedicated allocation (`DEDICATED_ONLY`).
    pub(crate) external_memory_fd_dedicated: bool,
}

/// The feature structures a device reported, with `p_next` cleared. Structures for a
/// Vulkan version or extension the device lacks stay all-false.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SupportedFeatures {
    pub(crate) core: vk::PhysicalDeviceFeatures,
    pub(crate) v11: vk::PhysicalDeviceVulkan11Features<'static>,
    pub(crate) v12: vk::PhysicalDeviceVulkan12Features<'static>,
    pub(crate) v13: vk::PhysicalDeviceVulkan13Features<'static>,
    pub(crate) clock: vk::PhysicalDeviceShaderClockFeaturesKHR<'static>,
    pub(crate) atomic_float: vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT<'static>,
}

/// One probed physical device.
#[derive(Clone, Debug)]
pub(crate) struct Adapter {
    pub(crate) raw: vk::PhysicalDevice,
    /// Device-local memory is host-visible and coherent (CPU devices, integrated GPUs):
    /// every allocation is mapped and host copies need no staging.
    pub(crate) unified_memory: bool,
    /// `minImportedHostPointerAlignment` when `VK_EXT_external_memory_host` is offered,
    /// else 0.
    pub(crate) host_pointer_alignment: u64,
    pub(crate) info: DeviceInfo,
    /// The largest buffer this device can create, in bytes.
    pub(crate) max_buffer_size: u64,
    pub(crate) queue_family: Option<QueueFamily>,
    pub(crate) driver_version: u32,
    pub(crate) pipeline_cache_uuid: [u8; vk::UUID_SIZE],
    /// `deviceUUID` (Vulkan 1.1): memory exported by one process can be imported by
    /// another only on a device with the same UUID (VK_KHR_external_memory_capabilities).
    pub(crate) device_uuid: [u8; vk::UUID_SIZE],
    pub(crate) memory_properties: vk::PhysicalDeviceMemoryProperties,
    pub(crate) extensions: Extensions,
    pub(crate) supported: SupportedFeatures,
}

impl Adapter {
    /// Queries everything ptxvk needs to know about `raw`, the `index`-th device.
    pub(crate) fn probe(
        instance: &ash::Instance,
        raw: vk::PhysicalDevice,
        index: usize,
    ) -> Result<Adapter, Error> {
        // SAFETY: `raw` was returned by vkEnumeratePhysicalDevices on this live instance.
        let base = unsafe { instance.get_physical_device_properties(raw) };
        let version = base.api_version;
        let at_least = |minor: u32| {
            vk::api_version_major(version) > 1
                || (vk::api_version_major(version) == 1 && vk::api_version_minor(version) >= minor)
        };

        let extensions = Extensions::probe(instance, raw, at_least(1))?;

        // Properties. Version-specific structures are chained only where the device
        // implements that version (vkGetPhysicalDeviceProperties2 valid usage).
        let mut p11 = vk::PhysicalDeviceVulkan11Properties::default();
        let mut p12 = vk::PhysicalDeviceVulkan12Properties::default();
        let mut p13 = vk::PhysicalDeviceVulkan13Properties::default();
        let mut host_import = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default();
        if extensions.external_memory_host {
            props2 = props2.push_next(&mut host_import);
        }
        if at_least(1) {
            props2 = props2.push_next(&mut p11);
        }
        if at_least(2) {
            props2 = props2.push_next(&mut p12);
        }
        if at_least(3) {
            props2 = props2.push_next(&mut p13);
        }
        let props = if at_least(1) {
            // SAFETY: `raw` is a valid physical device of this instance (created for
            // Vulkan >= 1.1, see `Instance::new`); every chained structure is a valid
            // extension of VkPhysicalDeviceProperties2 for the device's version, and all
            // of them outlive the call.
            unsafe { instance.get_physical_device_properties2(raw, &mut props2) };
            props2.properties
        } else {
            base
        };

        // Features, chained the same way.
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut clock = vk::PhysicalDeviceShaderClockFeaturesKHR::default();
        let mut atomic_float = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
        let mut features2 = vk::PhysicalDeviceFeatures2::default();
        if at_least(1) {
            features2 = features2.push_next(&mut f11);
        }
        if at_least(2) {
            features2 = features2.push_next(&mut f12);
        }
        if at_least(3) {
            features2 = features2.push_next(&mut f13);
        }
        if extensions.shader_clock {
            features2 = features2.push_next(&mut clock);
        }
        if extensions.shader_atomic_float {
            features2 = features2.push_next(&mut atomic_float);
        }
        let core = if at_least(1) {
            // SAFETY: as for the properties query: valid device, chained structures valid
            // for its version and extensions, all alive for the duration of the call.
            unsafe { instance.get_physical_device_features2(raw, &mut features2) };
            features2.features
        } else {
            // SAFETY: `raw` is a valid physical device of this instance.
            unsafe { instance.get_physical_device_features(raw) }
        };
        let supported = SupportedFeatures {
            core,
            v11: f11.clear_next(),
            v12: f12.clear_next(),
            v13: f13.clear_next(),
            clock: clock.clear_next(),
            atomic_float: atomic_float.clear_next(),
        };

        // SAFETY: `raw` is a valid physical device of this instance.
        let families = unsafe { instance.get_physical_device_queue_family_properties(raw) };
        // SAFETY: as above.
        let memory = unsafe { instance.get_physical_device_memory_properties(raw) };
        let queue_family = choose_queue_family(&families);

        let limits = &props.limits;
        let mut info = DeviceInfo {
            resident_workgroups: 1,
            index,
            name: c_name(props.device_name_as_c_str()),
            device_type: conv::device_type(props.device_type),
            api_version: conv::api_version(props.api_version),
            driver_name: if at_least(2) {
                c_name(p12.driver_name_as_c_str())
            } else {
                String::new()
            },
            driver_info: if at_least(2) {
                c_name(p12.driver_info_as_c_str())
            } else {
                String::new()
            },
            vendor_id: props.vendor_id,
            device_id: props.device_id,
            subgroup_size: if at_least(1) { p11.subgroup_size } else { 1 },
            required_subgroup_sizes: (at_least(3)
                && supported.v13.subgroup_size_control != 0
                && p13.required_subgroup_size_stages.contains(vk::ShaderStageFlags::COMPUTE))
            .then_some(SubgroupSizes {
                min: p13.min_subgroup_size,
                max: p13.max_subgroup_size,
                max_per_workgroup: p13.max_compute_workgroup_subgroups,
                full_subgroups: supported.v13.compute_full_subgroups != 0,
            }),
            timestamp_period_ns: limits.timestamp_period,
            timestamps: queue_family.is_some_and(|q| q.timestamp_valid_bits > 0)
                && limits.timestamp_period > 0.0,
            memory_bytes: memory
                .memory_heaps_as_slice()
                .iter()
                .filter(|h| h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
                .map(|h| h.size)
                .max()
                .unwrap_or(0),
            limits: Limits {
                max_workgroup_count: limits.max_compute_work_group_count,
                max_workgroup_size: limits.max_compute_work_group_size,
                max_workgroup_invocations: limits.max_compute_work_group_invocations,
                max_shared_memory_bytes: limits.max_compute_shared_memory_size,
                max_push_constants_size: limits.max_push_constants_size,
            },
            features: Features {
                int8: supported.v12.shader_int8 != 0,
                int16: supported.core.shader_int16 != 0,
                int64: supported.core.shader_int64 != 0,
                float16: supported.v12.shader_float16 != 0,
                float64: supported.core.shader_float64 != 0,
                storage_buffer_8bit: supported.v12.storage_buffer8_bit_access != 0,
                storage_buffer_16bit: supported.v11.storage_buffer16_bit_access != 0,
                vulkan_memory_model: supported.v12.vulkan_memory_model != 0,
                int64_atomics: supported.v12.shader_buffer_int64_atomics != 0,
                shared_int64_atomics: supported.v12.shader_shared_int64_atomics != 0,
                float32_atomic_add: supported.atomic_float.shader_buffer_float32_atomic_add != 0,
                shader_clock: supported.clock.shader_subgroup_clock != 0,
                device_clock: supported.clock.shader_device_clock != 0,
                denorm_preserve_f32: at_least(2) && p12.shader_denorm_preserve_float32 != 0,
                denorm_preserve_f64: at_least(2) && p12.shader_denorm_preserve_float64 != 0,
                subgroup_size_control: supported.v13.subgroup_size_control != 0,
                zero_initialize_workgroup_memory: at_least(3)
                    && supported.v13.shader_zero_initialize_workgroup_memory != 0,
                signed_zero_preserve_f32: at_least(2)
                    && p12.shader_signed_zero_inf_nan_preserve_float32 != 0,
                signed_zero_preserve_f64: at_least(2)
                    && p12.shader_signed_zero_inf_nan_preserve_float64 != 0,
            },
        };

        // The largest buffer: maxBufferSize (1.3) and maxMemoryAllocationSize (1.1), where
        // the device reports them; Vulkan guarantees at least 2^30 bytes for both.
        let reported = [
            at_least(3).then_some(p13.max_buffer_size),
            at_least(1).then_some(p11.max_memory_allocation_size),
        ];
        let max_buffer_size =
            reported.into_iter().flatten().filter(|&n| n > 0).min().unwrap_or(1 << 30);

        let host_pointer_alignment = if extensions.external_memory_host {
            host_import.min_imported_host_pointer_alignment.max(1)
        } else {
            0
        };
        if let Ok(list) = std::env::var("PTXVK_MASK_FEATURES") {
            mask_features(&mut info, &list)?;
        }
        Ok(Adapter {
            raw,
            unified_memory: conv::unified_memory(info.device_type, &memory),
            host_pointer_alignment,
            info,
            max_buffer_size,
            queue_family,
            driver_version: props.driver_version,
            pipeline_cache_uuid: props.pipeline_cache_uuid,
            device_uuid: if at_least(1) { p11.device_uuid } else { [0; vk::UUID_SIZE] },
            memory_properties: memory,
            extensions,
            supported,
        })
    }

    /// Why ptxvk cannot use this device, or `None` when it can.
    pub(crate) fn unsuitable_reason(&self) -> Option<String> {
        let mut reasons = Vec::new();
        let (major, minor, patch) = self.info.api_version;
        if (major, minor) < (1, 3) {
            reasons.push(format!("it supports Vulkan {major}.{minor}.{patch}, ptxvk needs 1.3"));
        }
        if self.supported.v12.buffer_device_address == 0 {
            reasons.push("it lacks the bufferDeviceAddress feature".to_owned());
        }
        if self.supported.v12.timeline_semaphore == 0 {
            reasons.push("it lacks the timelineSemaphore feature".to_owned());
        }
        if (major, minor) >= (1, 3) && self.supported.v13.maintenance4 == 0 {
            reasons.push("it lacks the maintenance4 feature".to_owned());
        }
        if self.queue_family.is_none() {
            reasons.push("it has no compute queue".to_owned());
        }
        if self.info.limits.max_push_constants_size < crate::PUSH_CONSTANT_SIZE {
            reasons.push(format!(
                "it allows {} bytes of push constants, ptxvk needs {}",
                self.info.limits.max_push_constants_size,
                crate::PUSH_CONSTANT_SIZE
            ));
        }
        (!reasons.is_empty()).then(|| reasons.join(", "))
    }

    /// Masks the features named in `list` (as `PTXVK_MASK_FEATURES` does).
    pub(crate) fn mask(&mut self, list: &str) -> Result<(), Error> {
        mask_features(&mut self.info, list)
    }

    /// The features to enable at device creation: bufferDeviceAddress and maintenance4
    /// (required), every [`Features`] flag the device offers, and the closely related
    /// features the same kernels use (workgroup variants of atomics, device clock,
    /// computeFullSubgroups, ...). Nothing that costs performance (robustBufferAccess)
    /// is enabled.
    pub(crate) fn features_to_enable(&self) -> SupportedFeatures {
        let s = &self.supported;
        // Features masked by `PTXVK_MASK_FEATURES` are not enabled either.
        let f = &self.info.features;
        let core = vk::PhysicalDeviceFeatures::default()
            .shader_int16(s.core.shader_int16 != 0 && f.int16)
            .shader_int64(s.core.shader_int64 != 0 && f.int64)
            .shader_float64(s.core.shader_float64 != 0 && f.float64);
        let v11 = vk::PhysicalDeviceVulkan11Features::default()
            .storage_buffer16_bit_access(s.v11.storage_buffer16_bit_access != 0);
        let v12 = vk::PhysicalDeviceVulkan12Features::default()
            .buffer_device_address(true)
            .timeline_semaphore(true)
            .shader_int8(s.v12.shader_int8 != 0 && f.int8)
            .shader_float16(s.v12.shader_float16 != 0 && f.float16)
            .storage_buffer8_bit_access(s.v12.storage_buffer8_bit_access != 0)
            .vulkan_memory_model(s.v12.vulkan_memory_model != 0)
            .vulkan_memory_model_device_scope(s.v12.vulkan_memory_model_device_scope != 0)
            .shader_buffer_int64_atomics(s.v12.shader_buffer_int64_atomics != 0 && f.int64_atomics)
            .shader_shared_int64_atomics(
                s.v12.shader_shared_int64_atomics != 0 && f.shared_int64_atomics,
            )
            .scalar_block_layout(s.v12.scalar_block_layout != 0)
            .shader_subgroup_extended_types(s.v12.shader_subgroup_extended_types != 0)
            .subgroup_broadcast_dynamic_id(s.v12.subgroup_broadcast_dynamic_id != 0);
        let v13 = vk::PhysicalDeviceVulkan13Features::default()
            .maintenance4(true)
            .subgroup_size_control(s.v13.subgroup_size_control != 0 && f.subgroup_size_control)
            .compute_full_subgroups(s.v13.compute_full_subgroups != 0)
            .shader_integer_dot_product(s.v13.shader_integer_dot_product != 0)
            .shader_zero_initialize_workgroup_memory(
                s.v13.shader_zero_initialize_workgroup_memory != 0
                    && f.zero_initialize_workgroup_memory,
            );
        let clock = vk::PhysicalDeviceShaderClockFeaturesKHR::default()
            .shader_subgroup_clock(s.clock.shader_subgroup_clock != 0)
            .shader_device_clock(s.clock.shader_device_clock != 0);
        let a = &s.atomic_float;
        let atomic_float = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default()
            .shader_buffer_float32_atomics(a.shader_buffer_float32_atomics != 0)
            .shader_buffer_float32_atomic_add(a.shader_buffer_float32_atomic_add != 0)
            .shader_buffer_float64_atomics(a.shader_buffer_float64_atomics != 0)
            .shader_buffer_float64_atomic_add(a.shader_buffer_float64_atomic_add != 0)
            .shader_shared_float32_atomics(a.shader_shared_float32_atomics != 0)
            .shader_shared_float32_atomic_add(a.shader_shared_float32_atomic_add != 0)
            .shader_shared_float64_atomics(a.shader_shared_float64_atomics != 0)
            .shader_shared_float64_atomic_add(a.shader_shared_float64_atomic_add != 0);
        SupportedFeatures { core, v11, v12, v13, clock, atomic_float }
    }
}

/// The first compute-capable family that can write timestamps, else the first
/// compute-capable family.
fn choose_queue_family(families: &[vk::QueueFamilyProperties]) -> Option<QueueFamily> {
    let compute = |f: &&vk::QueueFamilyProperties| {
        f.queue_flags.contains(vk::QueueFlags::COMPUTE) && f.queue_count > 0
    };
    let pick = |(i, f): (usize, &vk::QueueFamilyProperties)| {
        Some(QueueFamily {
            index: u32::try_from(i).ok()?,
            timestamp_valid_bits: f.timestamp_valid_bits,
        })
    };
    families
        .iter()
        .enumerate()
        .find(|(_, f)| compute(f) && f.timestamp_valid_bits > 0)
        .or_else(|| families.iter().enumerate().find(|(_, f)| compute(f)))
        .and_then(pick)
}

fn c_name(name: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Clears `p_next` of a queried structure so it can be stored and reused.
trait ClearNext {
    fn clear_next(self) -> Self;
}

macro_rules! impl_clear_next {
    ($($ty:ident),*) => {$(
        impl ClearNext for vk::$ty<'_> {
            fn clear_next(mut self) -> Self {
                self.p_next = std::ptr::null_mut();
                self
            }
        }
    )*};
}

impl_clear_next!(
    PhysicalDeviceVulkan11Features,
    PhysicalDeviceVulkan12Features,
    PhysicalDeviceVulkan13Features,
    PhysicalDeviceShaderClockFeaturesKHR,
    PhysicalDeviceShaderAtomicFloatFeaturesEXT
);

/// Clears the features named in `list` from `info`, and what depends on them.
fn mask_features(info: &mut DeviceInfo, list: &str) -> Result<(), Error> {
    info.features.mask(list).map_err(Error::BadFeatureMask)?;
    if !info.features.subgroup_size_control {
        info.required_subgroup_sizes = None;
    }
    Ok(())
}

impl Extensions {
    /// The extensions of physical device `raw` that ptxvk uses; `vulkan_1_1`: whether the
    /// device implements Vulkan 1.1 (the external-memory query needs it).
    fn probe(
        instance: &ash::Instance,
        raw: vk::PhysicalDevice,
        vulkan_1_1: bool,
    ) -> Result<Extensions, Error> {
        // SAFETY: `raw` is a physical device of this live instance; the call only writes
        // into the returned vector.
        let extension_list = unsafe { instance.enumerate_device_extension_properties(raw) }
            .map_err(Error::vk("vkEnumerateDeviceExtensionProperties"))?;
        let has_extension = |name: &CStr| {
            extension_list.iter().any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == name))
        };
        let mut extensions = Extensions {
            shader_clock: has_extension(ash::khr::shader_clock::NAME),
            shader_atomic_float: has_extension(ash::ext::shader_atomic_float::NAME),
            portability_subset: has_extension(ash::khr::portability_subset::NAME),
            external_memory_host: has_extension(ash::ext::external_memory_host::NAME),
            external_memory_fd: false,
            external_memory_fd_dedicated: false,
        };
        if has_extension(ash::khr::external_memory_fd::NAME) && vulkan_1_1 {
            if let Some(dedicated) = opaque_fd_buffers_shareable(instance, raw) {
                extensions.external_memory_fd = true;
                extensions.external_memory_fd_dedicated = dedicated;
            }
        }
        Ok(extensions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_from_lists_vulkan_names_in_order() {
        let needs =
            Features { float64: true, int8: true, denorm_preserve_f32: true, ..Default::default() };
        let offered = Features { int8: true, ..Default::default() };
        assert_eq!(needs.missing_from(&offered), ["shaderFloat64", "shaderDenormPreserveFloat32"]);
        assert!(needs.missing_from(&needs).is_empty());
        assert!(Features::default().missing_from(&Features::default()).is_empty());
    }

    #[test]
    fn names_and_union() {
        let a = Features { int64: true, ..Default::default() };
        let b = Features { shader_clock: true, ..Default::default() };
        assert_eq!(a.union(&b).names(), ["shaderInt64", "shaderSubgroupClock"]);
    }

    #[test]
    fn queue_family_prefers_timestamps() {
        let family = |flags, bits| vk::QueueFamilyProperties {
            queue_flags: flags,
            queue_count: 1,
            timestamp_valid_bits: bits,
            ..Default::default()
        };
        let families = [
            family(vk::QueueFlags::TRANSFER, 64),
            family(vk::QueueFlags::COMPUTE, 0),
            family(vk::QueueFlags::COMPUTE | vk::QueueFlags::GRAPHICS, 36),
        ];
        let q = choose_queue_family(&families).map(|q| q.index);
        assert_eq!(q, Some(2));
        let q = choose_queue_family(&families[..2]).map(|q| q.index);
        assert_eq!(q, Some(1));
        assert!(choose_queue_family(&families[..1]).is_none());
    }
}
