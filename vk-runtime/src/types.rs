//! The plain data the runtime's files share: what a physical device is and offers, the
//! key of a specialized pipeline, the kinds of streams and memsets. Nothing here touches Vulkan, so every other file
//! may use it without depending on the one that fills it in.

use std::fmt;

/// The kind of a physical device (`VkPhysicalDeviceType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// A separate GPU.
    Discrete,
    /// A GPU integrated with the CPU.
    Integrated,
    /// A GPU in a virtualised environment.
    Virtual,
    /// A CPU implementation such as lavapipe or SwiftShader.
    Cpu,
    /// Anything else.
    Other,
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceType::Discrete => "discrete GPU",
            DeviceType::Integrated => "integrated GPU",
            DeviceType::Virtual => "virtual GPU",
            DeviceType::Cpu => "CPU",
            DeviceType::Other => "other",
        })
    }
}

/// The compute limits a launch is validated against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `maxComputeWorkGroupCount`: the largest grid one dispatch may have; bigger grids
    /// are split into several dispatches.
    pub max_workgroup_count: [u32; 3],
    /// `maxComputeWorkGroupSize`: the largest block in each dimension.
    pub max_workgroup_size: [u32; 3],
    /// `maxComputeWorkGroupInvocations`: the largest number of threads in a block.
    pub max_workgroup_invocations: u32,
    /// `maxComputeSharedMemorySize`, in bytes.
    pub max_shared_memory_bytes: u32,
    /// `maxPushConstantsSize`, in bytes.
    pub max_push_constants_size: u32,
}

/// Optional capabilities a compiled module may need; also what a device offers (defined
/// with the launch ABI, which maps a module's requirements to them).
pub use ptxvk_abi::Features;

/// The subgroup sizes a compute pipeline may require (Vulkan 1.3
/// `VkPhysicalDeviceSubgroupSizeControlProperties`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubgroupSizes {
    /// `minSubgroupSize`.
    pub min: u32,
    /// `maxSubgroupSize`.
    pub max: u32,
    /// `maxComputeWorkgroupSubgroups`: a workgroup has at most this many subgroups of
    /// a required size.
    pub max_per_workgroup: u32,
    /// `computeFullSubgroups`: pipelines may require every subgroup to be full.
    pub full_subgroups: bool,
}

impl SubgroupSizes {
    /// Whether a pipeline may require subgroups of `size` (a power of two in range).
    pub fn allows(&self, size: u32) -> bool {
        size.is_power_of_two() && (self.min..=self.max).contains(&size)
    }
}

/// Everything ptxvk reports about one physical device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// Position in Vulkan's enumeration order (what `--device N` selects).
    pub index: usize,
    /// `deviceName`, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// The kind of device.
    pub device_type: DeviceType,
    /// The device's Vulkan version (major, minor, patch).
    pub api_version: (u32, u32, u32),
    /// `driverName` (empty on devices below Vulkan 1.2).
    pub driver_name: String,
    /// `driverInfo` (empty on devices below Vulkan 1.2).
    pub driver_info: String,
    /// PCI vendor id (or Khronos vendor id for CPU devices).
    pub vendor_id: u32,
    /// Vendor-specific device id.
    pub device_id: u32,
    /// The default subgroup size (`VkPhysicalDeviceSubgroupProperties::subgroupSize`).
    pub subgroup_size: u32,
    /// The subgroup sizes a compute pipeline may require, where the device has
    /// subgroup size control for compute shaders (Vulkan 1.3 `subgroupSizeControl` and
    /// `requiredSubgroupSizeStages`); `None` without it, or when it is masked.
    pub required_subgroup_sizes: Option<SubgroupSizes>,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period_ns: f32,
    /// Whether the compute queue ptxvk uses can write timestamps (kernel timing).
    pub timestamps: bool,
    /// Bytes of device-local memory (the largest device-local heap).
    pub memory_bytes: u64,
    /// Compute limits.
    pub limits: Limits,
    /// Optional capabilities the device offers.
    pub features: Features,
    /// Workgroups the device is known to run at once (grid barriers no longer depend
    /// on it: `ptxvk_lower::pass::split_grid` runs them as phases). Vulkan
    /// promises no forward progress between workgroups (Vulkan 1.3 §3.6 leaves
    /// workgroup scheduling to the implementation), so this is 1 on every device. On
    /// lavapipe, whose worker threads each run one workgroup, two blocks do synchronize
    /// when both run, but its per-invocation loop limit ends a block's wait after about
    /// 65,535 rounds, before the other block's thread has always started: of 12 launches
    /// of 2 blocks, 4 completed and 8 failed with the grid-synchronization status. So no
    /// device is an exception yet.
    pub resident_workgroups: u32,
}

/// Identifies one specialized pipeline of a [`Program`](crate::Program).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PipelineKey {
    /// Block size (specialization constants 0, 1, 2).
    pub block: [u32; 3],
    /// Shared memory in 32-bit words (specialization constant 3).
    pub shared_words: u32,
    /// The launch's dynamic shared bytes (specialization constant 4).
    pub dynamic_shared_bytes: u32,
    /// A confined launch may reach allocations outside the confinement range
    /// (specialization constant 5, `ptxvk_abi::spec_ids::CONFINED_OUTSIDE`).
    pub confined_outside: bool,
}

/// How a stream orders itself against the legacy default stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// The legacy default stream itself.
    Legacy,
    /// A stream that synchronises with the legacy default stream (`CU_STREAM_DEFAULT`).
    Blocking,
    /// A stream that does not (`CU_STREAM_NON_BLOCKING`).
    NonBlocking,
}

/// When an enqueued operation's batch is submitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Submit {
    /// Once the stream's earlier batches are done, or the batch is full.
    WhenIdle,
    /// Not now: more operations follow at once.
    Later,
}

/// The repeated value of a memset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// `cuMemsetD8`: every byte.
    U8(u8),
    /// `cuMemsetD16`: every 2-byte element (offset and length multiples of 2).
    U16(u16),
    /// `cuMemsetD32`: every 4-byte element (offset and length multiples of 4).
    U32(u32),
}

impl Pattern {
    /// Element size in bytes.
    pub fn size(self) -> u64 {
        match self {
            Pattern::U8(_) => 1,
            Pattern::U16(_) => 2,
            Pattern::U32(_) => 4,
        }
    }

    /// The pattern's little-endian bytes, repeated to 4 bytes (a whole number of
    /// elements).
    pub(crate) fn word_bytes(self) -> [u8; 4] {
        match self {
            Pattern::U8(b) => [b; 4],
            Pattern::U16(h) => {
                let [a, b] = h.to_le_bytes();
                [a, b, a, b]
            }
            Pattern::U32(w) => w.to_le_bytes(),
        }
    }
}
