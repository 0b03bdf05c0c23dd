//! ptxvk's tensor maps: the 128 bytes of CUDA's opaque `CUtensorMap`, as
//! `cuTensorMapEncodeTiled` (the driver library, or [`TensorMap::encode`]) writes them
//! and the bulk tensor copies of `ptxvk_lower`'s `sema::tensor_copy` read them (PTX ISA
//! 9.2 §5.5.8, §9.7.9.25.5; CUDA Driver API §6.29, "Tensor Map Object Management").
//!
//! | bytes | contents |
//! |---|---|
//! | 0..8 | the tensor's global address |
//! | 8..48 | u64 size of each dimension, innermost first (5) |
//! | 48..80 | u64 byte stride of dimensions 1..rank (4) |
//! | 80..100 | u32 box size of each dimension (5) |
//! | 100..120 | u32 element stride (traversal step) of each dimension (5) |
//! | 120..124 | u32 [`mode`]: rank, element size, swizzle, NaN fill, data type |
//! | 124..128 | [`MAGIC`] |
//!
//! A map NVIDIA's driver encoded is not one of these: kernels must get their tensor
//! maps from ptxvk's driver library or API.

/// Bytes of a tensor map (`CUtensorMap`, 64-byte aligned).
pub const SIZE: usize = 128;
/// The last word of every ptxvk tensor map ("PTXT").
pub const MAGIC: u32 = u32::from_le_bytes(*b"PTXT");
/// The largest rank.
pub const MAX_RANK: usize = 5;

/// Byte offsets of the fields (module doc).
pub mod offset {
    pub const ADDRESS: u32 = 0;
    pub const DIMS: u32 = 8;
    pub const STRIDES: u32 = 48;
    pub const BOX: u32 = 80;
    pub const ELEMENT_STRIDES: u32 = 100;
    pub const MODE: u32 = 120;
    pub const MAGIC: u32 = 124;
}

/// The fields of the mode word.
pub mod mode {
    /// Bits 0..4: the rank (1 to 5).
    pub const RANK_MASK: u32 = 0xf;
    /// Bits 4..8: log2 of the element's bytes (0 to 3).
    pub const SIZE_SHIFT: u32 = 4;
    /// Bits 8..12: the swizzle (0 none, 1 32-byte, 2 64-byte, 3 128-byte).
    pub const SWIZZLE_SHIFT: u32 = 8;
    /// Bit 12: out-of-bounds elements read as NaN rather than zero.
    pub const NAN_FILL: u32 = 1 << 12;
    /// Bits 16..24: the `CUtensorMapDataType`.
    pub const DATA_TYPE_SHIFT: u32 = 16;
}

/// `CUtensorMapDataType` values ptxvk copies (every type of whole bytes).
pub const DATA_TYPE_BYTES: [(u32, u32, bool); 13] = [
    // (value, bytes, float)
    (0, 1, false), // UINT8
    (1, 2, false), // UINT16
    (2, 4, false), // UINT32
    (3, 4, false), // INT32
    (4, 8, false), // UINT64
    (5, 8, false), // INT64
    (6, 2, true),  // FLOAT16
    (7, 4, true),  // FLOAT32
    (8, 8, true),  // FLOAT64
    (9, 2, true),  // BFLOAT16
    (10, 4, true), // FLOAT32_FTZ
    (11, 4, true), // TFLOAT32
    (12, 4, true), // TFLOAT32_FTZ
];

/// A tiled tensor map's description, as `cuTensorMapEncodeTiled` takes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TensorMap {
    /// `CUtensorMapDataType`.
    pub data_type: u32,
    /// The tensor's device address (16-byte aligned).
    pub address: u64,
    /// The size of each dimension, innermost first (rank = its length, 1 to 5).
    pub dims: Vec<u64>,
    /// The byte stride of dimensions 1.. (rank - 1 values, multiples of 16).
    pub strides: Vec<u64>,
    /// The box (the tile a copy moves) size of each dimension, 1 to 256.
    pub box_dims: Vec<u32>,
    /// The traversal step of each dimension, 1 to 8.
    pub element_strides: Vec<u32>,
    /// `CUtensorMapInterleave`: only `CU_TENSOR_MAP_INTERLEAVE_NONE` (0).
    pub interleave: u32,
    /// `CUtensorMapSwizzle`: none (0), 32-byte (1), 64-byte (2) or 128-byte (3).
    pub swizzle: u32,
    /// `CUtensorMapL2promotion`: a cache hint, accepted and ignored.
    pub l2_promotion: u32,
    /// `CUtensorMapFloatOOBfill`: zero (0) or NaN (1, floating-point types only).
    pub oob_fill: u32,
}

/// Why a description is not a tensor map: CUDA's `CUDA_ERROR_INVALID_VALUE`, or
/// `CUDA_ERROR_NOT_SUPPORTED` for what ptxvk does not implement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensorMapError {
    Invalid(String),
    NotSupported(String),
}

impl core::fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TensorMapError::Invalid(why) => write!(f, "invalid tensor map: {why}"),
            TensorMapError::NotSupported(why) => write!(f, "unsupported tensor map: {why}"),
        }
    }
}

impl std::error::Error for TensorMapError {}

impl TensorMap {
    /// The 128 bytes of the map, after CUDA's checks of `cuTensorMapEncodeTiled`.
    pub fn encode(&self) -> Result<[u8; SIZE], TensorMapError> {
        let invalid = |why: String| Err(TensorMapError::Invalid(why));
        let rank = self.dims.len();
        if !(1..=MAX_RANK).contains(&rank) {
            return invalid(format!("rank {rank} is not 1 to 5"));
        }
        if self.strides.len() != rank - 1
            || self.box_dims.len() != rank
            || self.element_strides.len() != rank
        {
            return invalid(format!(
                "a rank-{rank} map has {} strides, {rank} box sizes and {rank} element strides",
                rank - 1
            ));
        }
        let Some(&(_, bytes, float)) = DATA_TYPE_BYTES.iter().find(|d| d.0 == self.data_type)
        else {
            return Err(TensorMapError::NotSupported(format!(
                "data type {} (sub-byte types are not implemented)",
                self.data_type
            )));
        };
        if self.interleave != 0 {
            return Err(TensorMapError::NotSupported("interleaved layouts".into()));
        }
        if self.swizzle > 3 {
            return Err(TensorMapError::NotSupported(format!("swizzle mode {}", self.swizzle)));
        }
        if self.oob_fill > 1 || (self.oob_fill == 1 && !float) {
            return invalid("NaN fill is for floating-point types".into());
        }
        if !self.address.is_multiple_of(16) {
            return invalid(format!("address {:#x} is not 16-byte aligned", self.address));
        }
        if let Some(d) = self.dims.iter().find(|&&d| d == 0 || d > 1 << 32) {
            return invalid(format!("dimension size {d} is not 1 to 2^32"));
        }
        if let Some(s) = self.strides.iter().find(|&&s| !s.is_multiple_of(16) || s >= 1 << 40) {
            return invalid(format!("stride {s} is not a multiple of 16 below 2^40"));
        }
        if let Some(b) = self.box_dims.iter().find(|&&b| b == 0 || b > 256) {
            return invalid(format!("box size {b} is not 1 to 256"));
        }
        if let Some(e) = self.element_strides.iter().find(|&&e| e == 0 || e > 8) {
            return invalid(format!("element stride {e} is not 1 to 8"));
        }
        let inner = u64::from(self.box_dims[0]) * u64::from(bytes);
        if !inner.is_multiple_of(16) {
            return invalid(format!(
                "the box's inner dimension is {inner} bytes, not a multiple of 16"
            ));
        }
        if self.swizzle != 0 && inner > 16 << self.swizzle {
            return invalid(format!(
                "the box's inner dimension ({inner} bytes) exceeds the {}-byte swizzle",
                16 << self.swizzle
            ));
        }
        let mut out = [0u8; SIZE];
        let mut put = |at: u32, bytes: &[u8]| {
            out[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        };
        put(offset::ADDRESS, &self.address.to_le_bytes());
        for (i, d) in self.dims.iter().enumerate() {
            put(offset::DIMS + 8 * i as u32, &d.to_le_bytes());
        }
        for (i, s) in self.strides.iter().enumerate() {
            put(offset::STRIDES + 8 * i as u32, &s.to_le_bytes());
        }
        for (i, b) in self.box_dims.iter().enumerate() {
            put(offset::BOX + 4 * i as u32, &b.to_le_bytes());
        }
        for (i, e) in self.element_strides.iter().enumerate() {
            put(offset::ELEMENT_STRIDES + 4 * i as u32, &e.to_le_bytes());
        }
        let word = rank as u32
            | (bytes.trailing_zeros() << mode::SIZE_SHIFT)
            | (self.swizzle << mode::SWIZZLE_SHIFT)
            | if self.oob_fill == 1 { mode::NAN_FILL } else { 0 }
            | (self.data_type << mode::DATA_TYPE_SHIFT);
        put(offset::MODE, &word.to_le_bytes());
        put(offset::MAGIC, &MAGIC.to_le_bytes());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_2d() -> TensorMap {
        TensorMap {
            data_type: 7,
            address: 0x1000,
            dims: vec![100, 40],
            strides: vec![400],
            box_dims: vec![16, 8],
            element_strides: vec![1, 1],
            ..TensorMap::default()
        }
    }

    #[test]
    fn encodes_the_fields_where_the_layout_says() {
        let bytes = f32_2d().encode().expect("valid");
        let u32_at =
            |at: u32| u32::from_le_bytes(bytes[at as usize..at as usize + 4].try_into().unwrap());
        let u64_at =
            |at: u32| u64::from_le_bytes(bytes[at as usize..at as usize + 8].try_into().unwrap());
        assert_eq!(u64_at(offset::ADDRESS), 0x1000);
        assert_eq!((u64_at(offset::DIMS), u64_at(offset::DIMS + 8)), (100, 40));
        assert_eq!(u64_at(offset::STRIDES), 400);
        assert_eq!((u32_at(offset::BOX), u32_at(offset::BOX + 4)), (16, 8));
        assert_eq!(
            u32_at(offset::MODE),
            2 | (2 << mode::SIZE_SHIFT) | (7 << mode::DATA_TYPE_SHIFT)
        );
        assert_eq!(u32_at(offset::MAGIC), MAGIC);
    }

    #[test]
    fn refuses_what_cuda_refuses_and_names_what_ptxvk_lacks() {
        // The first five are invalid, the last two unsupported.
        let cases: [fn(&mut TensorMap); 7] = [
            |m| m.address = 0x1008,
            |m| m.strides = vec![404],
            |m| m.box_dims = vec![16, 257],
            |m| m.box_dims = vec![3, 8],
            // NaN fill of an integer type.
            |m| {
                m.data_type = 3;
                m.oob_fill = 1;
            },
            |m| m.interleave = 1,
            |m| m.data_type = 13,
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut m = f32_2d();
            mutate(&mut m);
            let e = m.encode().expect_err("refused");
            let unsupported = matches!(e, TensorMapError::NotSupported(_));
            assert_eq!(unsupported, i >= 5, "case {i}: {e}");
        }
    }
}
