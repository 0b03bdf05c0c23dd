//! Pure mapping helpers: Vulkan enums to ptxvk types, the launch ABI's byte layouts, grid
//! splitting, timestamp arithmetic and pipeline-cache file naming. Nothing here touches a
//! device, so all of it is unit-tested without Vulkan.

use ash::vk;

use crate::launch_config::LaunchConfig;
use crate::types::{DeviceType, PipelineKey};

/// Usage of every buffer.
pub(crate) fn buffer_usage() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::TRANSFER_SRC
        | vk::BufferUsageFlags::TRANSFER_DST
        | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS
}

/// Maps `VkPhysicalDeviceType` (all five core values; unknown values become `Other`).
pub(crate) fn device_type(ty: vk::PhysicalDeviceType) -> DeviceType {
    match ty {
        vk::PhysicalDeviceType::DISCRETE_GPU => DeviceType::Discrete,
        vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceType::Integrated,
        vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceType::Virtual,
        vk::PhysicalDeviceType::CPU => DeviceType::Cpu,
        _ => DeviceType::Other,
    }
}

/// Preference of a device type for [`crate::DeviceSelector::Default`]; lower is better.
pub(crate) fn default_rank(ty: DeviceType) -> u8 {
    match ty {
        DeviceType::Discrete => 0,
        DeviceType::Integrated => 1,
        DeviceType::Virtual => 2,
        DeviceType::Cpu => 3,
        DeviceType::Other => 4,
    }
}

/// The pipeline stages stream operations run in: kernels and copies.
pub(crate) const WORK_STAGES: vk::PipelineStageFlags = vk::PipelineStageFlags::from_raw(
    vk::PipelineStageFlags::COMPUTE_SHADER.as_raw() | vk::PipelineStageFlags::TRANSFER.as_raw(),
);

/// Whether device memory is one with host memory for the runtime's purposes: a CPU or
/// integrated device whose device-local memory type is also host-visible and coherent.
/// Discrete GPUs with resizable BAR also offer such a type, but it may be small or slow
/// to read from the host, so they keep staging copies.
pub(crate) fn unified_memory(
    device_type: DeviceType,
    memory: &vk::PhysicalDeviceMemoryProperties,
) -> bool {
    let wanted = vk::MemoryPropertyFlags::DEVICE_LOCAL
        | vk::MemoryPropertyFlags::HOST_VISIBLE
        | vk::MemoryPropertyFlags::HOST_COHERENT;
    matches!(device_type, DeviceType::Cpu | DeviceType::Integrated)
        && memory.memory_types_as_slice().iter().any(|t| t.property_flags.contains(wanted))
}

/// Splits a packed Vulkan version into (major, minor, patch).
pub(crate) fn api_version(v: u32) -> (u32, u32, u32) {
    (vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
}

/// Specialization constant 3: the shared-memory size in 32-bit words, at least 1.
pub(crate) use ptxvk_abi::shared_words;

/// Where the blocks of a dispatch keep shared windows that are in device memory (push
/// constants `shared_address` and `shared_stride`; zero for windows on chip).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SharedWindows {
    pub(crate) address: u64,
    pub(crate) stride: u64,
}

/// The push-constant bytes of one dispatch, little endian.
pub(crate) fn push_constants(
    param_address: u64,
    cfg: &LaunchConfig,
    ctaid_base: [u32; 3],
    windows: SharedWindows,
) -> [u8; crate::PUSH_CONSTANT_SIZE as usize] {
    ptxvk_abi::PushConstants {
        param_address,
        const_address: cfg.const_address,
        ctaid_base,
        grid: cfg.grid,
        window_base: cfg.window_base,
        zero: [0; 2],
        shared_address: windows.address,
        shared_stride: windows.stride,
    }
    .to_bytes()
}

/// The specialization map of [`ptxvk_abi::SpecValues`].
pub(crate) const SPEC_MAP: [vk::SpecializationMapEntry; 6] = {
    let e = ptxvk_abi::SpecValues::ENTRIES;
    let mut map = [map_entry(e[0]); 6];
    let mut i = 1;
    while i < e.len() {
        map[i] = map_entry(e[i]);
        i += 1;
    }
    map
};

const fn map_entry((constant_id, offset, size): (u32, u32, u32)) -> vk::SpecializationMapEntry {
    vk::SpecializationMapEntry { constant_id, offset, size: size as usize }
}

/// The specialization data matching [`SPEC_MAP`].
pub(crate) fn spec_data(key: &PipelineKey) -> [u8; 24] {
    ptxvk_abi::SpecValues {
        block: key.block,
        shared_words: key.shared_words,
        dynamic_shared_bytes: key.dynamic_shared_bytes,
        confined_outside: key.confined_outside,
    }
    .to_bytes()
}

/// One `vkCmdDispatch` of a split grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Block index of the chunk's first block (pushed as `ctaid_base`).
    pub(crate) base: [u32; 3],
    /// Workgroup counts of the dispatch.
    pub(crate) count: [u32; 3],
}

/// Splits `grid` into dispatches of at most `max` workgroups per dimension, z outermost
/// then y then x. Every component of `grid` and `max` must be at least 1 (a zero maximum
/// is treated as 1). Each dispatch is a run of consecutive linear block indices (x
/// fastest, as `%ctaid` numbers them), and the runs come in order: where x is split a
/// dispatch is part of one row, where y is split part of one plane. So the blocks of a
/// grid are dispatched in their linear order, which blocks that wait for earlier blocks
/// rely on (docs/status.md, *Blocks and grids*).
pub(crate) fn split_grid(grid: [u32; 3], max: [u32; 3]) -> Vec<Chunk> {
    let split = |d: usize| max[d].max(1) < grid[d];
    let max =
        [max[0], if split(0) { 1 } else { max[1] }, if split(0) || split(1) { 1 } else { max[2] }];
    let ranges = |d: usize| {
        let step = max[d].max(1);
        (0..grid[d].div_ceil(step)).map(move |i| {
            let base = i * step;
            (base, step.min(grid[d] - base))
        })
    };
    let mut chunks = Vec::new();
    for (z, nz) in ranges(2) {
        for (y, ny) in ranges(1) {
            for (x, nx) in ranges(0) {
                chunks.push(Chunk { base: [x, y, z], count: [nx, ny, nz] });
            }
        }
    }
    chunks
}

/// The most workgroups of one dispatch of `grid` (at most `max` per dimension) such
/// that a dispatch has no more than `blocks` of them: whole rows of x first, then
/// planes. Dispatches of a kernel whose shared windows are in device memory are cut to
/// the area the stream gives them.
pub(crate) fn dispatch_limit(grid: [u32; 3], max: [u32; 3], blocks: u64) -> [u32; 3] {
    let blocks = blocks.max(1);
    let fit = |n: u32, room: u64, max: u32| -> u32 {
        u32::try_from(room.min(u64::from(n))).unwrap_or(n).min(max).max(1)
    };
    let x = fit(grid[0], blocks, max[0]);
    let y = fit(grid[1], blocks / u64::from(x), max[1]);
    let z = fit(grid[2], blocks / (u64::from(x) * u64::from(y)), max[2]);
    [x, y, z]
}

/// Milliseconds between two timestamps of a counter with `valid_bits` significant bits
/// (wrapping once is handled) ticking every `period_ns` nanoseconds.
pub(crate) fn timestamp_ms(t0: u64, t1: u64, valid_bits: u32, period_ns: f32) -> f64 {
    let mask = if valid_bits >= 64 { u64::MAX } else { (1u64 << valid_bits) - 1 };
    let ticks = t1.wrapping_sub(t0) & mask;
    // Precision loss above 2^53 ticks is irrelevant for a duration.
    let ticks = ticks as f64;
    ticks * f64::from(period_ns) / 1e6
}

/// Size in bytes of `VkPipelineCacheHeaderVersionOne`.
const CACHE_HEADER_LEN: usize = 16 + vk::UUID_SIZE;

/// The disk-cache file name for one device and driver build.
pub(crate) fn cache_file_name(
    vendor_id: u32,
    device_id: u32,
    driver_version: u32,
    uuid: &[u8; vk::UUID_SIZE],
) -> String {
    let uuid: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    format!("pipelines-{vendor_id:08x}-{device_id:08x}-{driver_version:08x}-{uuid}.bin")
}

/// Whether `data` starts with a `VkPipelineCacheHeaderVersionOne` for this device, so it
/// is safe to hand to `vkCreatePipelineCache` (drivers are not required to survive
/// arbitrary bytes from a truncated or foreign file).
pub(crate) fn cache_header_matches(
    data: &[u8],
    vendor_id: u32,
    device_id: u32,
    uuid: &[u8; vk::UUID_SIZE],
) -> bool {
    let word = |i: usize| {
        data.get(4 * i..4 * i + 4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes)
    };
    let header_len = word(0).and_then(|n| usize::try_from(n).ok());
    data.len() >= CACHE_HEADER_LEN
        && header_len.is_some_and(|n| n >= CACHE_HEADER_LEN && n <= data.len())
        && word(1) == Some(vk::PipelineCacheHeaderVersion::ONE.as_raw() as u32)
        && word(2) == Some(vendor_id)
        && word(3) == Some(device_id)
        && data.get(16..CACHE_HEADER_LEN) == Some(&uuid[..])
}

impl PipelineKey {
    /// The key of a launch with `cfg`.
    pub(crate) fn of(cfg: &LaunchConfig) -> PipelineKey {
        PipelineKey {
            block: cfg.block,
            shared_words: shared_words(cfg.shared_bytes),
            dynamic_shared_bytes: cfg.dynamic_shared_bytes,
            confined_outside: cfg.confined_outside,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_limits_hold_the_blocks_the_area_has_room_for() {
        let max = [65535; 3];
        // Whole rows, then whole planes, then one block at least.
        assert_eq!(dispatch_limit([1000, 1, 1], max, 300), [300, 1, 1]);
        assert_eq!(dispatch_limit([10, 20, 30], max, 300), [10, 20, 1]);
        assert_eq!(dispatch_limit([10, 20, 30], max, 6000), [10, 20, 30]);
        assert_eq!(dispatch_limit([10, 20, 30], max, 0), [1, 1, 1]);
        assert_eq!(dispatch_limit([100_000, 1, 1], max, u64::MAX), [65535, 1, 1]);
        for (grid, blocks) in [([7, 9, 11], 20), ([3, 3, 3], 26), ([1, 70_000, 2], 5000)] {
            let limit = dispatch_limit(grid, max, blocks);
            let chunks = split_grid(grid, limit);
            let total: u64 =
                chunks.iter().map(|c| c.count.iter().map(|&n| u64::from(n)).product::<u64>()).sum();
            assert_eq!(total, grid.iter().map(|&n| u64::from(n)).product::<u64>());
            for c in &chunks {
                let n: u64 = c.count.iter().map(|&n| u64::from(n)).product();
                assert!(n <= blocks, "{c:?} has {n} blocks, more than {blocks}");
            }
        }
    }

    #[test]
    fn split_small_grid_is_one_dispatch() {
        assert_eq!(
            split_grid([10, 20, 30], [65535; 3]),
            [Chunk { base: [0, 0, 0], count: [10, 20, 30] }]
        );
    }

    #[test]
    fn split_covers_every_block_exactly_once() {
        let grid = [7, 5, 3];
        let max = [3, 2, 2];
        let chunks = split_grid(grid, max);
        // x is split: each dispatch is part of one row.
        assert_eq!(chunks.len(), 3 * 5 * 3);
        let mut seen = vec![0u32; (grid[0] * grid[1] * grid[2]) as usize];
        for c in &chunks {
            for (count, max) in c.count.iter().zip(max) {
                assert!((1..=max).contains(count));
            }
            for z in 0..c.count[2] {
                for y in 0..c.count[1] {
                    for x in 0..c.count[0] {
                        let (gx, gy, gz) = (c.base[0] + x, c.base[1] + y, c.base[2] + z);
                        seen[((gz * grid[1] + gy) * grid[0] + gx) as usize] += 1;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
        // z outermost, x innermost.
        assert_eq!(chunks[0].base, [0, 0, 0]);
        assert_eq!(chunks[1].base, [3, 0, 0]);
        assert_eq!(chunks[3].base, [0, 1, 0]);
        assert_eq!(chunks[15].base, [0, 0, 1]);
    }

    #[test]
    fn split_grids_are_dispatched_in_linear_block_order() {
        let linear = |grid: [u32; 3], [x, y, z]: [u32; 3]| (z * grid[1] + y) * grid[0] + x;
        let cases = [
            ([7, 5, 3], [3, 2, 2]),
            ([7, 5, 3], [7, 2, 2]),
            ([7, 5, 3], [7, 5, 2]),
            ([100_000, 2, 1], [65535; 3]),
            ([4, 70_000, 2], [65535; 3]),
        ];
        for (grid, max) in cases {
            let mut next = 0;
            for c in split_grid(grid, max) {
                // A run of consecutive indices, starting where the last one ended.
                assert_eq!(linear(grid, c.base), next, "{grid:?} {max:?}: {c:?}");
                let n = c.count.iter().product::<u32>();
                let [x, y, z] = [0, 1, 2].map(|d| c.base[d] + c.count[d] - 1);
                assert_eq!(linear(grid, [x, y, z]), next + n - 1, "{grid:?} {max:?}: {c:?}");
                next += n;
            }
            assert_eq!(next, grid.iter().product::<u32>());
        }
    }

    #[test]
    fn split_largest_cuda_grid() {
        let chunks = split_grid([i32::MAX as u32, 1, 1], [65535, 65535, 65535]);
        assert_eq!(chunks.len(), 32769);
        let last = chunks[chunks.len() - 1];
        assert_eq!(last.base[0] + last.count[0], i32::MAX as u32);
    }

    #[test]
    fn timestamp_arithmetic() {
        assert_eq!(timestamp_ms(1000, 3_001_000, 64, 1.0), 3.0);
        assert_eq!(timestamp_ms(0, 500, 64, 2.0), 0.001);
        // A 36-bit counter wrapping around.
        let wrapped = timestamp_ms((1 << 36) - 10, 10, 36, 1.0);
        assert!((wrapped - 20e-6).abs() < 1e-12);
    }

    #[test]
    fn cache_header_validation() {
        let uuid = [7u8; 16];
        let mut data = Vec::new();
        for w in [32u32, 1, 0x10005, 0] {
            data.extend_from_slice(&w.to_le_bytes());
        }
        data.extend_from_slice(&uuid);
        data.extend_from_slice(b"payload");
        assert!(cache_header_matches(&data, 0x10005, 0, &uuid));
        assert!(!cache_header_matches(&data, 0x10de, 0, &uuid));
        assert!(!cache_header_matches(&data, 0x10005, 1, &uuid));
        assert!(!cache_header_matches(&data, 0x10005, 0, &[0; 16]));
        assert!(!cache_header_matches(&data[..20], 0x10005, 0, &uuid));
        assert!(!cache_header_matches(&[], 0x10005, 0, &uuid));
        let mut bad_len = data.clone();
        bad_len[0..4].copy_from_slice(&1000u32.to_le_bytes());
        assert!(!cache_header_matches(&bad_len, 0x10005, 0, &uuid));
    }

    #[test]
    fn cache_file_name_is_stable() {
        let name = cache_file_name(0x10005, 0, 1, &[0xab; 16]);
        assert_eq!(name, format!("pipelines-00010005-00000000-00000001-{}.bin", "ab".repeat(16)));
    }

    #[test]
    fn device_types() {
        assert_eq!(device_type(vk::PhysicalDeviceType::CPU), DeviceType::Cpu);
        assert_eq!(device_type(vk::PhysicalDeviceType::DISCRETE_GPU), DeviceType::Discrete);
        assert_eq!(device_type(vk::PhysicalDeviceType::from_raw(99)), DeviceType::Other);
        assert!(default_rank(DeviceType::Discrete) < default_rank(DeviceType::Integrated));
        assert!(default_rank(DeviceType::Virtual) < default_rank(DeviceType::Cpu));
        assert_eq!(api_version(vk::make_api_version(0, 1, 3, 230)), (1, 3, 230));
    }
}
