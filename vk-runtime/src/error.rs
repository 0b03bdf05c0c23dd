//! The runtime's error type.
//!
//! Every variant is something the caller or the driver can cause; each message says what
//! went wrong and, where there is one, what to do about it. Programming errors inside this
//! crate are not represented here (there are none the type system does not rule out).

use ash::vk;

/// Everything that can go wrong while finding a device, moving memory or running a kernel.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Vulkan loader could not be loaded or no Vulkan driver is installed.
    #[error(
        "Vulkan is not available: {0}. Install the Vulkan loader and a driver \
         (on Debian/Ubuntu: `apt install libvulkan1 mesa-vulkan-drivers`; \
         mesa-vulkan-drivers includes the lavapipe CPU device)"
    )]
    NoVulkan(String),

    /// `PTXVK_MASK_FEATURES` names a feature ptxvk does not know.
    #[error("PTXVK_MASK_FEATURES: {0}")]
    BadFeatureMask(String),

    /// The loader works but reports no physical device at all.
    #[error(
        "no Vulkan device found: the Vulkan loader reports no physical device. Install a \
         driver for your GPU, or `mesa-vulkan-drivers` for the lavapipe CPU device"
    )]
    NoDevice,

    /// Devices exist, but none of them can run ptxvk kernels (default selection only).
    #[error("no usable Vulkan device: {}", .rejected.join("; "))]
    NoSuitableDevice {
        /// One `"name: reason"` entry per device that was considered.
        rejected: Vec<String>,
    },

    /// An explicit selector (index or name) matched no device.
    #[error(
        "no Vulkan device matches `{selector}`; available devices: {}",
        list_or_none(.available)
    )]
    DeviceNotFound {
        /// The selector as the user wrote it.
        selector: String,
        /// `"index: name"` for every device, in Vulkan order.
        available: Vec<String>,
    },

    /// An explicitly selected device cannot run ptxvk kernels.
    #[error("Vulkan device `{device}` cannot run ptxvk kernels: {reason}")]
    Unsuitable {
        /// Device name.
        device: String,
        /// What the device lacks.
        reason: String,
    },

    /// A program needs optional features the device does not offer.
    #[error(
        "Vulkan device `{device}` lacks features this kernel needs: {}; \
         choose another device with --device / PTXVK_DEVICE",
        .missing.join(", ")
    )]
    MissingFeatures {
        /// Device name.
        device: String,
        /// Vulkan feature (or property) names, e.g. `shaderFloat64`.
        missing: Vec<&'static str>,
    },

    /// A program asks for a subgroup size the device cannot run compute shaders with.
    #[error(
        "Vulkan device `{device}` cannot run compute subgroups of {size} invocations \
         ({available})"
    )]
    SubgroupSize {
        /// Device name.
        device: String,
        /// The size asked for.
        size: u32,
        /// What the device offers, in words.
        available: String,
    },

    /// A launch's block has more subgroups of the program's required size than the
    /// device allows in one workgroup (`maxComputeWorkgroupSubgroups`).
    #[error(
        "a block of {threads} threads has more than the {max} subgroups of {size} \
         invocations that `{device}` allows in a workgroup"
    )]
    TooManySubgroups {
        /// Device name.
        device: String,
        threads: u32,
        size: u32,
        max: u32,
    },

    /// The SPIR-V words handed to [`Device::create_program`](crate::Device::create_program)
    /// are not a SPIR-V module.
    #[error("invalid SPIR-V module: {0}")]
    InvalidSpirv(String),

    /// The SPIR-V module has no `GLCompute` entry point of the requested name.
    #[error(
        "the SPIR-V module has no compute entry point `{entry}` (it has: {})",
        list_or_none(.available)
    )]
    EntryPointNotFound {
        /// The requested name.
        entry: String,
        /// The module's `GLCompute` entry points.
        available: Vec<String>,
    },

    /// A launch configuration the device (or CUDA) does not allow; nothing was run.
    #[error("invalid launch: {0}")]
    Launch(String),

    /// A host<->device copy outside a buffer.
    #[error("{op} of {len} bytes at offset {offset} is out of bounds of a buffer of {size} bytes")]
    OutOfBounds {
        /// What was attempted: `"upload"`, `"download"`, `"copy"`, `"memset"`, ...
        op: &'static str,
        /// Start of the requested range.
        offset: u64,
        /// Length of the requested range.
        len: u64,
        /// Size of the buffer.
        size: u64,
    },

    /// A buffer larger than the device can create (`maxBufferSize`,
    /// `maxMemoryAllocationSize`).
    #[error("a buffer of {size} bytes exceeds the device's limit of {max} bytes")]
    BufferTooLarge {
        /// Requested size.
        size: u64,
        /// The device's limit.
        max: u64,
    },

    /// A 32-bit address window ([`crate::Window`]) has no free range large enough.
    #[error(
        "the 32-bit address window ({window} bytes) has no room for {size} more bytes \
         (PTXVK_WINDOW_MB sets its size)"
    )]
    WindowFull {
        /// Requested size.
        size: u64,
        /// The window's size.
        window: u64,
    },

    /// A buffer or program created by one [`Device`](crate::Device) was used with another.
    #[error("the {0} was created on a different Device")]
    ForeignObject(&'static str),

    /// GPU work did not finish in time. The work may still be running; later calls on the
    /// device wait for it (again with the timeout) before they submit anything new.
    #[error(
        "GPU work did not finish within {ms} ms (the kernel may hang or just be slow; \
         raise the limit with PTXVK_TIMEOUT_MS)"
    )]
    Timeout {
        /// The timeout that expired.
        ms: u64,
    },

    /// A Vulkan call failed.
    #[error("{call} failed: {result:?} ({result})")]
    Vk {
        /// The Vulkan function, e.g. `"vkQueueSubmit"`.
        call: &'static str,
        /// Its result code.
        result: vk::Result,
    },

    /// Device memory could not be allocated for a reason other than exhaustion.
    #[error("device memory allocation failed: {0}")]
    Alloc(gpu_allocator::AllocationError),

    /// The device (or the host, for host allocations) has no memory left for the request.
    #[error("out of memory: {0}")]
    OutOfMemory(String),

    /// The device was lost (a driver crash, a reset, or a kernel the driver killed). Every
    /// later call on this device reports it; open a new [`Device`](crate::Device).
    #[error("the Vulkan device was lost; every later call on it fails; open a new device")]
    DeviceLost,

    /// The API was used in a way it does not allow (the message says how); nothing was
    /// done.
    #[error("invalid use: {0}")]
    InvalidUse(String),

    /// The work an event or query refers to has not completed yet (`CUDA_ERROR_NOT_READY`).
    #[error("the work has not completed yet")]
    NotReady,

    /// An earlier asynchronous operation on a stream failed (for example a completion
    /// check of a kernel); reported by the next call that waits for the stream.
    #[error("{0}")]
    Deferred(Box<dyn std::error::Error + Send + Sync>),

    /// An environment variable that configures the runtime has an unusable value.
    #[error("environment variable {var}={value:?} is invalid: {reason}")]
    Env {
        /// The variable's name.
        var: &'static str,
        /// Its value.
        value: String,
        /// What a valid value looks like.
        reason: String,
    },
}

impl Error {
    /// True when the machine has no usable Vulkan device at all ([`Error::NoVulkan`],
    /// [`Error::NoDevice`], [`Error::NoSuitableDevice`]): the situation in which tests that
    /// need a GPU skip instead of failing.
    pub fn is_no_device(&self) -> bool {
        matches!(self, Error::NoVulkan(_) | Error::NoDevice | Error::NoSuitableDevice { .. })
    }

    /// Maps a failed Vulkan call: device loss and memory exhaustion get their own
    /// variants, everything else is [`Error::Vk`].
    pub(crate) fn vk(call: &'static str) -> impl FnOnce(vk::Result) -> Error {
        move |result| Error::from_vk(call, result)
    }

    /// See [`Error::vk`].
    pub(crate) fn from_vk(call: &'static str, result: vk::Result) -> Error {
        match result {
            vk::Result::ERROR_DEVICE_LOST => Error::DeviceLost,
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
                Error::OutOfMemory(format!("{call} failed: {result:?}"))
            }
            result => Error::Vk { call, result },
        }
    }
}

impl From<gpu_allocator::AllocationError> for Error {
    fn from(e: gpu_allocator::AllocationError) -> Error {
        match e {
            gpu_allocator::AllocationError::OutOfMemory => {
                Error::OutOfMemory("the device has no memory block left for the request".into())
            }
            e => Error::Alloc(e),
        }
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}
