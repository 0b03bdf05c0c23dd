//! The launch ABI between ptxvk's compiler (`ptxvk-spirv`) and its runtime (`ptxvk-vk`),
//! written once (`docs/architecture.md`, *The launch ABI*). Every kernel the compiler
//! emits reads its launch from:
//!
//! * a **push-constant block**, [`PushConstants`]: the device addresses of the kernel's
//!   parameter block and of the module's constant data, the block index of the
//!   dispatch's first block (a grid larger than `maxComputeWorkGroupCount` is split into
//!   several dispatches), CUDA's grid size, and where the blocks of the dispatch keep a
//!   shared window that is in device memory. The compiler declares it as a `Block`
//!   struct of the scalar [`PUSH_CONSTANT_MEMBERS`]; the runtime pushes
//!   [`PushConstants::to_bytes`].
//! * **specialization constants**, [`spec_ids`]: the block size (`LocalSizeId`), the
//!   shared window's length and the launch's dynamic shared bytes, so that one SPIR-V
//!   module serves every launch shape; the runtime fills them from [`SpecValues`].
//! * the **parameter block**, [`params`], at the first push constant's address:
//!   followed, for a kernel that reports to the host (`trap`, `assert`, `printf`,
//!   `malloc`, checked launches, device-side launches), by its **system area**
//!   ([`system`]; device-side launches are recorded in the launch arena of
//!   [`device_launch`]).
//!
//! Generic addresses of shared, local and parameter memory are in the reserved windows
//! of [`window`].
//!
//! What a module needs of the device is its [`Requirements`]; [`Requirements::features`]
//! maps them to the Vulkan [`Features`] the runtime enables or reports missing.

use core::mem::offset_of;

/// The push-constant block of every kernel (little endian, std430 offsets: no padding).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PushConstants {
    /// Device address of the kernel's parameter block.
    pub param_address: u64,
    /// Device address of the module's `.const`/`.global` data.
    pub const_address: u64,
    /// Block index (x, y, z) of the dispatch's first block.
    pub ctaid_base: [u32; 3],
    /// CUDA's grid size (`%nctaid`).
    pub grid: [u32; 3],
    /// Device address of the 32-bit address window, for modules with 32-bit addresses:
    /// their global addresses are offsets from it (0 for 64-bit modules).
    pub window_base: u64,
    /// Two words that are always 0. A kernel compiled for a driver that folds float
    /// arithmetic with constant operands wrongly ORs each float operand with one of
    /// them (`FloatConstants::Hidden` in `ptxvk-lower`): the driver cannot know they
    /// are 0, so it cannot know the operand.
    pub zero: [u32; 2],
    /// Device address of the dispatch's shared windows, for a kernel whose shared
    /// window is in device memory (`SharedLayout::in_device_memory` in `ptxvk-lower`):
    /// the block with linear index `i` in the dispatch (`WorkgroupId` over
    /// `NumWorkgroups`, x fastest) has the [`PushConstants::shared_stride`] bytes at
    /// `shared_address + i * shared_stride`. 0 for other kernels.
    pub shared_address: u64,
    /// Bytes between two blocks' windows in device memory ([`shared_stride`]).
    pub shared_stride: u64,
}

impl PushConstants {
    /// Size of the block in bytes.
    pub const SIZE: u32 = core::mem::size_of::<PushConstants>() as u32;

    /// The bytes to push, little endian (Vulkan reads push constants with the SPIR-V
    /// `Offset`s of [`PUSH_CONSTANT_MEMBERS`]).
    pub fn to_bytes(&self) -> [u8; PushConstants::SIZE as usize] {
        let mut bytes = [0u8; PushConstants::SIZE as usize];
        let mut put = |offset: usize, value: &[u8]| {
            bytes[offset..offset + value.len()].copy_from_slice(value);
        };
        put(offset_of!(PushConstants, param_address), &self.param_address.to_le_bytes());
        put(offset_of!(PushConstants, const_address), &self.const_address.to_le_bytes());
        for i in 0..3 {
            put(offset_of!(PushConstants, ctaid_base) + 4 * i, &self.ctaid_base[i].to_le_bytes());
            put(offset_of!(PushConstants, grid) + 4 * i, &self.grid[i].to_le_bytes());
        }
        put(offset_of!(PushConstants, window_base), &self.window_base.to_le_bytes());
        for i in 0..2 {
            put(offset_of!(PushConstants, zero) + 4 * i, &self.zero[i].to_le_bytes());
        }
        put(offset_of!(PushConstants, shared_address), &self.shared_address.to_le_bytes());
        put(offset_of!(PushConstants, shared_stride), &self.shared_stride.to_le_bytes());
        bytes
    }
}

/// One scalar member of the push-constant struct as SPIR-V declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Byte offset (the member's `Offset` decoration).
    pub offset: u32,
    /// Width of the unsigned integer: 32 or 64.
    pub bits: u32,
}

const fn member(offset: usize, bits: u32) -> Member {
    Member { offset: offset as u32, bits }
}

/// The push-constant struct's members, in order: [`PushConstants`] with its arrays
/// flattened into scalars.
pub const PUSH_CONSTANT_MEMBERS: [Member; 13] = [
    member(offset_of!(PushConstants, param_address), 64),
    member(offset_of!(PushConstants, const_address), 64),
    member(offset_of!(PushConstants, ctaid_base), 32),
    member(offset_of!(PushConstants, ctaid_base) + 4, 32),
    member(offset_of!(PushConstants, ctaid_base) + 8, 32),
    member(offset_of!(PushConstants, grid), 32),
    member(offset_of!(PushConstants, grid) + 4, 32),
    member(offset_of!(PushConstants, grid) + 8, 32),
    member(offset_of!(PushConstants, window_base), 64),
    member(offset_of!(PushConstants, zero), 32),
    member(offset_of!(PushConstants, zero) + 4, 32),
    member(offset_of!(PushConstants, shared_address), 64),
    member(offset_of!(PushConstants, shared_stride), 64),
];

/// Indices into [`PUSH_CONSTANT_MEMBERS`] (the operands of `OpAccessChain`).
pub mod member {
    /// `param_address`.
    pub const PARAM_ADDRESS: u32 = 0;
    /// `const_address`.
    pub const CONST_ADDRESS: u32 = 1;
    /// `ctaid_base.x`; y and z follow.
    pub const CTAID_BASE: u32 = 2;
    /// `grid.x`; y and z follow.
    pub const GRID: u32 = 5;
    /// `window_base`.
    pub const WINDOW_BASE: u32 = 8;
    /// `zero[0]`; `zero[1]` follows.
    pub const ZERO: u32 = 9;
    /// `shared_address`.
    pub const SHARED_ADDRESS: u32 = 11;
    /// `shared_stride`.
    pub const SHARED_STRIDE: u32 = 12;
}

/// Specialization constant ids.
pub mod spec_ids {
    /// Block size x (`LocalSizeId`); y and z are the next two ids.
    pub const BLOCK_X: u32 = 0;
    /// Block size y.
    pub const BLOCK_Y: u32 = 1;
    /// Block size z.
    pub const BLOCK_Z: u32 = 2;
    /// The shared window's length in 32-bit words (at least 1; a wide window has half
    /// as many 64-bit words, rounded up).
    pub const SHARED_WORDS: u32 = 3;
    /// The launch's dynamic shared bytes (`%dynamic_smem_size`).
    pub const DYNAMIC_SHARED_BYTES: u32 = 4;
    /// 1 when a confined launch may reach allocations outside the device's confinement
    /// range (registered host memory), 0 otherwise: with 0 the driver folds the test
    /// against those ranges away, and an access outside
    /// the range is refused at once.
    pub const CONFINED_OUTSIDE: u32 = 5;
}

/// The specialization-constant values of one launch shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpecValues {
    pub block: [u32; 3],
    pub shared_words: u32,
    pub dynamic_shared_bytes: u32,
    pub confined_outside: bool,
}

impl SpecValues {
    /// `(constant id, byte offset, size)` of each value in [`SpecValues::to_bytes`].
    pub const ENTRIES: [(u32, u32, u32); 6] = [
        (spec_ids::BLOCK_X, 0, 4),
        (spec_ids::BLOCK_Y, 4, 4),
        (spec_ids::BLOCK_Z, 8, 4),
        (spec_ids::SHARED_WORDS, 12, 4),
        (spec_ids::DYNAMIC_SHARED_BYTES, 16, 4),
        (spec_ids::CONFINED_OUTSIDE, 20, 4),
    ];

    /// The specialization data (native endianness, as Vulkan reads it).
    pub fn to_bytes(&self) -> [u8; 24] {
        let values = [
            self.block[0],
            self.block[1],
            self.block[2],
            self.shared_words,
            self.dynamic_shared_bytes,
            u32::from(self.confined_outside),
        ];
        let mut bytes = [0u8; 24];
        for ((_, offset, _), v) in SpecValues::ENTRIES.iter().zip(values) {
            let at = *offset as usize;
            bytes[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        }
        bytes
    }
}

/// Specialization constant [`spec_ids::SHARED_WORDS`] for a launch with `shared_bytes`
/// of shared memory: whole 32-bit words, at least 1 (a zero-length array is not valid
/// SPIR-V).
pub fn shared_words(shared_bytes: u32) -> u32 {
    shared_bytes.div_ceil(4).max(1)
}

/// [`PushConstants::shared_stride`] for a launch with `shared_bytes` of shared memory
/// per block whose window is in device memory: the window rounded up to 256 bytes, so
/// that every block's window is aligned for any access (PTX's widest is 16 bytes) and
/// two blocks' windows share no cache line.
pub fn shared_stride(shared_bytes: u32) -> u64 {
    u64::from(shared_bytes.max(1)).next_multiple_of(256)
}

pub mod device_launch;
mod features;
pub mod params;
pub mod system;
pub mod tensor_map;
pub mod texture;
pub mod window;

pub use features::{Features, Requirements};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_constants_are_seventy_two_bytes_without_padding() {
        assert_eq!(PushConstants::SIZE, 72);
        let members: u32 = PUSH_CONSTANT_MEMBERS.iter().map(|m| m.bits / 8).sum();
        assert_eq!(members, PushConstants::SIZE);
        for pair in PUSH_CONSTANT_MEMBERS.windows(2) {
            assert_eq!(pair[0].offset + pair[0].bits / 8, pair[1].offset, "{pair:?}");
        }
    }

    #[test]
    fn push_constant_bytes_follow_the_member_offsets() {
        let pc = PushConstants {
            param_address: 0x1122_3344_5566_7788,
            const_address: 0x99aa_bbcc_ddee_ff00,
            ctaid_base: [1, 2, 3],
            grid: [4, 5, 6],
            window_base: 0x0102_0304_0506_0708,
            zero: [7, 8],
            shared_address: 0x1020_3040_5060_7080,
            shared_stride: 0x9000,
        };
        let bytes = pc.to_bytes();
        let read = |m: &Member| {
            let at = m.offset as usize;
            let mut v = [0u8; 8];
            v[..(m.bits / 8) as usize].copy_from_slice(&bytes[at..at + (m.bits / 8) as usize]);
            u64::from_le_bytes(v)
        };
        let got: Vec<u64> = PUSH_CONSTANT_MEMBERS.iter().map(read).collect();
        assert_eq!(
            got,
            [
                0x1122_3344_5566_7788,
                0x99aa_bbcc_ddee_ff00,
                1,
                2,
                3,
                4,
                5,
                6,
                0x0102_0304_0506_0708,
                7,
                8,
                0x1020_3040_5060_7080,
                0x9000
            ]
        );
        let m = |i: u32| PUSH_CONSTANT_MEMBERS[i as usize].offset as usize;
        assert_eq!(m(member::PARAM_ADDRESS), offset_of!(PushConstants, param_address));
        assert_eq!(m(member::CONST_ADDRESS), offset_of!(PushConstants, const_address));
        assert_eq!(m(member::CTAID_BASE), offset_of!(PushConstants, ctaid_base));
        assert_eq!(m(member::GRID), offset_of!(PushConstants, grid));
        assert_eq!(m(member::WINDOW_BASE), offset_of!(PushConstants, window_base));
        assert_eq!(m(member::ZERO), offset_of!(PushConstants, zero));
        assert_eq!(m(member::SHARED_ADDRESS), offset_of!(PushConstants, shared_address));
        assert_eq!(m(member::SHARED_STRIDE), offset_of!(PushConstants, shared_stride));
    }

    #[test]
    fn spec_values_land_at_their_entries() {
        let v = SpecValues {
            block: [64, 2, 3],
            shared_words: 9,
            dynamic_shared_bytes: 17,
            confined_outside: true,
        };
        let bytes = v.to_bytes();
        let ids: Vec<u32> = SpecValues::ENTRIES.iter().map(|e| e.0).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
        for ((_, offset, size), want) in SpecValues::ENTRIES.iter().zip([64u32, 2, 3, 9, 17, 1]) {
            assert_eq!(*size, 4);
            let at = *offset as usize;
            let got = u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
            assert_eq!(got, want);
        }
    }

    #[test]
    fn shared_words_round_up_and_are_never_zero() {
        assert_eq!(shared_words(0), 1);
        assert_eq!(shared_words(1), 1);
        assert_eq!(shared_words(4), 1);
        assert_eq!(shared_words(5), 2);
        assert_eq!(shared_words(32768), 8192);
        assert_eq!(shared_words(u32::MAX), 1 << 30);
    }

    #[test]
    fn requirements_name_their_vulkan_features() {
        let r =
            Requirements { float64: true, shared_int64_atomics: true, ..Requirements::default() };
        assert_eq!(
            r.features().names(),
            ["shaderInt64", "shaderFloat64", "shaderSharedInt64Atomics"]
        );
        assert_eq!(Requirements::default().features().names(), ["shaderInt64"]);
    }
}
