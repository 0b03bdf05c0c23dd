//! The Vulkan loader and instance, and device enumeration.
//!
//! [`Instance`] loads `libvulkan` at run time (so binaries start on machines without
//! Vulkan and report [`Error::NoVulkan`] instead of failing to link), creates a Vulkan 1.3
//! instance (with `VK_KHR_portability_enumeration` when the loader offers it, so MoltenVK
//! devices are listed) and probes every physical device into an [`Adapter`].

use ash::vk;

use crate::adapter::Adapter;
use crate::error::Error;
use crate::types::DeviceInfo;

/// A loaded Vulkan library and a live `VkInstance`; destroys the instance on drop.
pub(crate) struct Instance {
    /// Keeps the loader library loaded for as long as `raw` lives (dropped after it).
    _entry: ash::Entry,
    raw: ash::Instance,
    /// The validation-message collector, when validation layers are enabled.
    messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
}

/// Warnings and errors the validation layers reported, in order (see
/// [`validation_messages`]).
static VALIDATION_MESSAGES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Every warning and error the Vulkan validation layers reported so far in this process,
/// when they are enabled (`VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation`); the tests
/// fail on any.
pub fn validation_messages() -> Vec<String> {
    VALIDATION_MESSAGES.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

/// Environment variable that, set to `1`, aborts the process on any validation warning or
/// error (after printing it): `make test` runs the runtime tests this way.
pub const ENV_VALIDATION_ABORT: &str = "PTXVK_VALIDATION_ABORT";

/// Whether the user asked the loader for the validation layer.
fn validation_requested() -> bool {
    std::env::var("VK_INSTANCE_LAYERS").is_ok_and(|v| v.contains("validation"))
}

/// Collects validation warnings and errors (and prints them).
unsafe extern "system" fn on_validation_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut std::ffi::c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes a valid callback-data structure for the duration of the
    // call, whose message is a NUL-terminated string or null.
    let message = unsafe { data.as_ref() }
        .and_then(|d| unsafe { d.message_as_c_str() })
        .map(|m| m.to_string_lossy().into_owned())
        .unwrap_or_default();
    eprintln!("Vulkan validation {severity:?}: {message}");
    if std::env::var_os(ENV_VALIDATION_ABORT).is_some_and(|v| v == "1") {
        // The test runs of `make test`: any message fails the run, loudly.
        eprintln!("{ENV_VALIDATION_ABORT}=1: aborting on this validation message");
        std::process::abort();
    }
    VALIDATION_MESSAGES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(format!("{severity:?}: {message}"));
    vk::FALSE
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
        let debug_utils = validation_requested()
            && available.iter().any(|e| {
                e.extension_name_as_c_str().is_ok_and(|n| n == ash::ext::debug_utils::NAME)
            });
        if debug_utils {
            extensions.push(ash::ext::debug_utils::NAME.as_ptr());
        }
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
        let messenger = debug_utils.then(|| {
            let loader = ash::ext::debug_utils::Instance::new(&entry, &raw);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                        | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(on_validation_message));
            // SAFETY: the instance is alive with VK_EXT_debug_utils enabled; the callback is
            // a 'static function that only touches a static collector.
            unsafe { loader.create_debug_utils_messenger(&info, None) }.ok().map(|m| (loader, m))
        });
        Ok(Instance { _entry: entry, raw, messenger: messenger.flatten() })
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
        // that hold the instance and destroy those objects first (`Gpu::drop`); the
        // messenger belongs to this instance and is destroyed before it.
        unsafe {
            if let Some((loader, messenger)) = self.messenger.take() {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            self.raw.destroy_instance(None);
        }
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
