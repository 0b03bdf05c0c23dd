//! The Vulkan loader and instance, and device enumeration.
//!
//! [`Instance`] loads `libvulkan` at run time (so binaries start on machines without
//! Vulkan and report [`Error::NoVulkan`] instead of failing to link), creates a Vulkan 1.3
//! instance (with `VK_KHR_portability_enumeration` when the loader offers it, so MoltenVK
//! devices are listed) and probes every physical device into an [`Adapter`].

use ash::vk;

use crate::adapter::{Adapter, DeviceInfo};
use crate::error::Error;

/// A loaded Vulkan library and a live `VkInstance`; destroys the instance on drop.
pub(crate) struct Instance {
    /// Keeps the loader library loaded for as long as `raw` lives (dropped after it).
    _entry: ash::Entry,
    raw: ash::Instance,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance").field("raw", &self.raw.handle()).finish_non_exhaustive()
    }
}

impl Instance {
    /// Loads the Vulkan loader and creates an instance.
    pub(crate) fn new() -> Result<Instance, Error> {
        // SAFETY: loading the system Vulkan loader runs its library initialisers; this is
        // the documented way to use the loader and there is no other Vulkan state yet.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| {
            Error::NoVulkan(format!("could not load the Vulkan loader library: {e}"))
        })?;

        // SAFETY: `entry` holds valid global function pointers.
        let loader_version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(Error::vk("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        if loader_version < vk::API_VERSION_1_1 {
            return Err(Error::NoVulkan(
                "the installed Vulkan loader only implements Vulkan 1.0; ptxvk needs 1.3".into(),
            ));
        }

        // SAFETY: `entry` holds valid global function pointers; a null layer name lists
        // the implementation's own extensions.
        let available = unsafe { entry.enumerate_instance_extension_properties(None) }
            .map_err(Error::vk("vkEnumerateInstanceExtensionProperties"))?;
        let portability = available.iter().any(|e| {
            e.extension_name_as_c_str().is_ok_and(|n| n == ash::khr::portability_enumeration::NAME)
        });
        let mut extensions = Vec::new();
        let mut flags = vk::InstanceCreateFlags::empty();
        if portability {
            extensions.push(ash::khr::portability_enumeration::NAME.as_ptr());
            flags |= vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR;
        }

        let app = vk::ApplicationInfo::default()
            .application_name(c"ptxvk")
            .application_version(0)
            .engine_name(c"ptxvk")
            .engine_version(0)
            .api_version(vk::API_VERSION_1_3);
        let create_info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_extension_names(&extensions)
            .flags(flags);
        // SAFETY: `create_info` and everything it points to (application info, extension
        // name pointers to 'static C strings) outlive the call; the extension was checked
        // to be available.
        let raw =
            unsafe { entry.create_instance(&create_info, None) }.map_err(
                |result| match result {
                    vk::Result::ERROR_INCOMPATIBLE_DRIVER => Error::NoVulkan(
                        "the Vulkan loader found no driver (ICD) that can create an instance"
                            .into(),
                    ),
                    result => Error::Vk { call: "vkCreateInstance", result },
                },
            )?;
        Ok(Instance { _entry: entry, raw })
    }

    /// The ash instance (function table and handle).
    pub(crate) fn raw(&self) -> &ash::Instance {
        &self.raw
    }

    /// Probes every physical device, in Vulkan order.
    pub(crate) fn adapters(&self) -> Result<Vec<Adapter>, Error> {
        // SAFETY: the instance is alive.
        let devices = unsafe { self.raw.enumerate_physical_devices() }.map_err(|result| {
            match result {
                // Some loaders report "no ICD" here rather than at instance creation.
                vk::Result::ERROR_INITIALIZATION_FAILED => Error::NoDevice,
                result => Error::Vk { call: "vkEnumeratePhysicalDevices", result },
            }
        })?;
        devices
            .into_iter()
            .enumerate()
            .map(|(index, pd)| Adapter::probe(&self.raw, pd, index))
            .collect()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: every object created from this instance (devices) is owned by structures
        // that hold the instance and destroy those objects first (`DeviceShared::drop`).
        unsafe { self.raw.destroy_instance(None) };
    }
}

/// Every physical device, in Vulkan order, including ones ptxvk cannot use (a device
/// below Vulkan 1.3 is listed; opening it explains what it lacks).
///
/// Returns [`Error::NoVulkan`] when there is no loader or driver. An empty list is not an
/// error here.
pub fn enumerate_devices() -> Result<Vec<DeviceInfo>, Error> {
    let instance = Instance::new()?;
    Ok(instance.adapters()?.into_iter().map(|a| a.info).collect())
}
