//! ptxvk's texture and surface objects: a `CUtexObject`/`CUsurfObject` (a 64-bit handle
//! in a parameter or in memory) is the device address of a 128-byte descriptor, which
//! the driver library's `cuTexObjectCreate`/`cuSurfObjectCreate` or the Rust API writes
//! ([`Texture::encode`]) and the code of `ptxvk_lower`'s `pass::expand_texture` reads at
//! run time: where the texels are and how they are laid out, their format, and the
//! sampler state. Texels are fetched and filtered by the compiled kernel itself, so
//! results are the same on every device (PTX ISA 9.2 §9.7.10; CUDA Programming Guide, "Texture Fetching").
//!
//! | bytes | contents |
//! |---|---|
//! | 0..8 | device address of texel (0, 0, 0) of layer 0 |
//! | 8..20 | u32 width, height, depth (1 where a dimension is absent) |
//! | 20..24 | u32 layers (0: not layered) |
//! | 24..32 | u64 bytes from a row to the next |
//! | 32..40 | u64 bytes from a slice (3-D) or layer to the next |
//! | 40..44 | u32 [`format`](mod@format): channel kind, bytes per channel, channels |
//! | 44..48 | u32 [`flags`]: geometry, coordinates, read mode, filter, address modes |
//! | 48..64 | f32 border colour (4 channels) |
//! | 64..68 | [`MAGIC`] |
//! | 68..72 | u32 mipmap levels (0 or 1: one level) |
//! | 72..84 | f32 mipmap level bias, minimum and maximum level |
//!
//! A separate sampler (`.samplerref`, PTX ISA 9.2 §5.3: the "independent" texture mode)
//! is a descriptor of the same layout with only its sampler state set ([`Sampler`]): a
//! `tex` that names one takes the filter, mipmap filter, address modes, border colour
//! and level-of-detail fields from it, and the rest from the texture.
//!
//! An sRGB texture's descriptor is followed by [`SRGB_TABLE`] bytes: the f32 value of each
//! 8-bit sRGB code, which its fetches read for the R, G and B channels.
//!
//! Level k of a mipmapped texture has `max(1, size >> k)` texels in each dimension
//! (layers stay), packed: rows of its texels, slices (or layers) of its rows, level
//! after level from the texel address.

/// Bytes of a descriptor.
pub const SIZE: usize = 128;
/// Bytes of the sRGB table after an sRGB texture's descriptor (256 f32).
pub const SRGB_TABLE: usize = 1024;
/// Bytes 64..68 of every ptxvk texture descriptor ("PTXX").
pub const MAGIC: u32 = u32::from_le_bytes(*b"PTXX");

/// Byte offsets of the fields (module doc).
pub mod offset {
    pub const ADDRESS: u32 = 0;
    pub const WIDTH: u32 = 8;
    pub const HEIGHT: u32 = 12;
    pub const DEPTH: u32 = 16;
    pub const LAYERS: u32 = 20;
    pub const ROW_PITCH: u32 = 24;
    pub const SLICE_PITCH: u32 = 32;
    pub const FORMAT: u32 = 40;
    pub const FLAGS: u32 = 44;
    pub const BORDER: u32 = 48;
    pub const MAGIC: u32 = 64;
    pub const LEVELS: u32 = 68;
    pub const LEVEL_BIAS: u32 = 72;
    pub const MIN_LEVEL: u32 = 76;
    pub const MAX_LEVEL: u32 = 80;
}

/// The format word: bits 0..4 the [`ChannelKind`], 4..8 bytes per channel (1, 2, 4),
/// 8..12 channels (1, 2, 4).
pub mod format {
    pub const KIND_MASK: u32 = 0xf;
    pub const BYTES_SHIFT: u32 = 4;
    pub const CHANNELS_SHIFT: u32 = 8;
}

/// The flags word.
pub mod flags {
    /// Coordinates in [0, 1) of each dimension rather than texels.
    pub const NORMALIZED_COORDS: u32 = 1;
    /// 8- and 16-bit integers read as floats in [0, 1] or [-1, 1].
    pub const READ_NORMALIZED: u32 = 1 << 1;
    /// Linear filtering (else point sampling).
    pub const LINEAR: u32 = 1 << 2;
    /// Linear filtering between mipmap levels (else the nearest level).
    pub const MIP_LINEAR: u32 = 1 << 3;
    /// 8-bit R, G, B channels read through the sRGB table after the descriptor.
    pub const SRGB: u32 = 1 << 4;
    /// A sampler's `force_unnormalized_coords` (PTX ISA 9.2 §5.3.2): unnormalized
    /// coordinates whatever the texture says.
    pub const FORCE_UNNORMALIZED: u32 = 1 << 5;
    /// The bits a separate sampler ([`super::Sampler`]) sets instead of the texture.
    pub const SAMPLER_STATE: u32 = LINEAR | MIP_LINEAR | (0x3f << ADDRESS_SHIFT);
    /// Bits 8 + 2d..10 + 2d: the [`super::AddressMode`] of dimension d.
    pub const ADDRESS_SHIFT: u32 = 8;
}

/// How channels are stored (`CUarray_format`'s kinds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChannelKind {
    #[default]
    Unsigned = 0,
    Signed = 1,
    Float = 2,
}

/// CUDA's address modes (`CUaddress_mode`, same numbering).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AddressMode {
    Wrap = 0,
    #[default]
    Clamp = 1,
    Mirror = 2,
    Border = 3,
}

impl AddressMode {
    /// The mode of `CUaddress_mode` value `v`.
    pub fn from_cuda(v: u32) -> Option<AddressMode> {
        [AddressMode::Wrap, AddressMode::Clamp, AddressMode::Mirror, AddressMode::Border]
            .get(v as usize)
            .copied()
    }
}

/// A texture (or surface) over texels in device memory, and its sampler state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Texture {
    /// Device address of the first texel.
    pub address: u64,
    pub width: u32,
    /// 1 for 1-D textures.
    pub height: u32,
    /// 1 unless 3-D.
    pub depth: u32,
    /// 0 unless layered.
    pub layers: u32,
    /// Bytes from a row to the next (at least a row of texels).
    pub row_pitch: u64,
    /// Bytes from a slice or layer to the next.
    pub slice_pitch: u64,
    pub kind: ChannelKind,
    /// Bytes per channel: 1, 2 or 4 (2-byte floats are halves).
    pub channel_bytes: u32,
    /// 1, 2 or 4.
    pub channels: u32,
    pub normalized_coords: bool,
    pub read_normalized: bool,
    pub linear_filter: bool,
    pub address_modes: [AddressMode; 3],
    pub border: [f32; 4],
    /// Mipmap levels (0 or 1: none), packed after level 0 (module doc).
    pub levels: u32,
    pub mip_linear: bool,
    /// sRGB decode of the R, G, B channels (8-bit unsigned, read as normalized floats).
    pub srgb: bool,
    pub level_bias: f32,
    pub min_level: f32,
    pub max_level: f32,
}

impl Texture {
    /// The sampler state of the texture.
    pub fn sampler(&self) -> Sampler {
        Sampler {
            force_unnormalized_coords: false,
            linear_filter: self.linear_filter,
            address_modes: self.address_modes,
            border: self.border,
            mip_linear: self.mip_linear,
            level_bias: self.level_bias,
            min_level: self.min_level,
            max_level: self.max_level,
        }
    }

    /// Bytes of one texel.
    pub fn texel_bytes(&self) -> u64 {
        u64::from(self.channel_bytes) * u64::from(self.channels)
    }

    /// The descriptor's 128 bytes, after checks of the CUDA driver API's rules; the
    /// error says what is wrong.
    pub fn encode(&self) -> Result<[u8; SIZE], String> {
        if ![1, 2, 4].contains(&self.channel_bytes) || ![1, 2, 4].contains(&self.channels) {
            return Err(format!(
                "{} channels of {} bytes: ptxvk's textures have 1, 2 or 4 channels of 1, 2 or 4 bytes",
                self.channels, self.channel_bytes
            ));
        }
        if self.kind == ChannelKind::Float && self.channel_bytes == 1 {
            return Err("there are no 8-bit float channels".into());
        }
        if self.width == 0 || self.height == 0 || self.depth == 0 {
            return Err("a texture has at least one texel in each dimension".into());
        }
        if self.row_pitch < u64::from(self.width) * self.texel_bytes() {
            return Err(format!("a row pitch of {} bytes is shorter than a row", self.row_pitch));
        }
        let normalizable = self.kind != ChannelKind::Float && self.channel_bytes < 4;
        if self.read_normalized && !normalizable {
            return Err("only 8- and 16-bit integers read as normalized floats".into());
        }
        let floats = self.kind == ChannelKind::Float || self.read_normalized;
        if self.linear_filter && !floats {
            // CUDA's cudaErrorInvalidFilterSetting.
            return Err("linear filtering needs a float result (a float format, or integers read as normalized floats)".into());
        }
        if self.srgb
            && !(self.read_normalized
                && self.channel_bytes == 1
                && self.kind == ChannelKind::Unsigned)
        {
            return Err(
                "sRGB textures have 8-bit unsigned channels read as normalized floats".into()
            );
        }
        let packed = u64::from(self.width) * self.texel_bytes();
        if self.levels > 1
            && (self.row_pitch != packed || self.slice_pitch != packed * u64::from(self.height))
        {
            return Err("a mipmapped texture's levels are packed: its pitches are a row's and a slice's bytes".into());
        }
        if self.levels > 16 {
            return Err(format!("{} mipmap levels: at most 16", self.levels));
        }
        // The sampler state, magic word included, then the texture's own fields.
        let mut out = self.sampler().encode();
        let sampler_flags = u32::from_le_bytes(
            out[offset::FLAGS as usize..offset::FLAGS as usize + 4].try_into().unwrap_or([0; 4]),
        );
        let mut put = |at: u32, bytes: &[u8]| {
            out[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        };
        put(offset::ADDRESS, &self.address.to_le_bytes());
        put(offset::WIDTH, &self.width.to_le_bytes());
        put(offset::HEIGHT, &self.height.to_le_bytes());
        put(offset::DEPTH, &self.depth.to_le_bytes());
        put(offset::LAYERS, &self.layers.to_le_bytes());
        put(offset::ROW_PITCH, &self.row_pitch.to_le_bytes());
        put(offset::SLICE_PITCH, &self.slice_pitch.to_le_bytes());
        let word = self.kind as u32
            | (self.channel_bytes << format::BYTES_SHIFT)
            | (self.channels << format::CHANNELS_SHIFT);
        put(offset::FORMAT, &word.to_le_bytes());
        let mut f = sampler_flags;
        if self.normalized_coords {
            f |= flags::NORMALIZED_COORDS;
        }
        if self.read_normalized {
            f |= flags::READ_NORMALIZED;
        }
        if self.srgb {
            f |= flags::SRGB;
        }
        put(offset::FLAGS, &f.to_le_bytes());
        put(offset::LEVELS, &self.levels.to_le_bytes());
        Ok(out)
    }
}

/// A separate sampler: the sampler state of [`Texture`] on its own, for `tex` and `tld4`
/// of the form `[texture, sampler, coordinates]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sampler {
    /// Unnormalized coordinates even where the texture has normalized ones.
    pub force_unnormalized_coords: bool,
    pub linear_filter: bool,
    pub address_modes: [AddressMode; 3],
    pub border: [f32; 4],
    pub mip_linear: bool,
    pub level_bias: f32,
    pub min_level: f32,
    pub max_level: f32,
}

impl Sampler {
    /// The descriptor's 128 bytes: no texels (width 0, which fetches refuse), the
    /// sampler state, the magic word.
    pub fn encode(&self) -> [u8; SIZE] {
        let mut out = [0u8; SIZE];
        let mut put = |at: u32, bytes: &[u8]| {
            out[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        };
        let mut f = 0;
        if self.force_unnormalized_coords {
            f |= flags::FORCE_UNNORMALIZED;
        }
        if self.linear_filter {
            f |= flags::LINEAR;
        }
        if self.mip_linear {
            f |= flags::MIP_LINEAR;
        }
        for (d, m) in self.address_modes.iter().enumerate() {
            f |= (*m as u32) << (flags::ADDRESS_SHIFT + 2 * d as u32);
        }
        put(offset::FLAGS, &f.to_le_bytes());
        for (c, v) in self.border.iter().enumerate() {
            put(offset::BORDER + 4 * c as u32, &v.to_le_bytes());
        }
        put(offset::MAGIC, &MAGIC.to_le_bytes());
        put(offset::LEVEL_BIAS, &self.level_bias.to_le_bytes());
        put(offset::MIN_LEVEL, &self.min_level.to_le_bytes());
        put(offset::MAX_LEVEL, &self.max_level.to_le_bytes());
        out
    }
}

/// The linear value of each 8-bit sRGB code (IEC 61966-2-1: `c / 12.92` up to 0.04045,
/// else `((c + 0.055) / 1.055)^2.4`, with `c = code / 255`), computed in f64 and rounded
/// once to f32.
pub fn srgb_table() -> [f32; 256] {
    std::array::from_fn(|code| {
        let c = code as f64 / 255.0;
        let linear = if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) };
        linear as f32
    })
}

impl Texture {
    /// The device bytes of the object: the descriptor, and for sRGB textures the table.
    pub fn encode_object(&self) -> Result<Vec<u8>, String> {
        let mut bytes = self.encode()?.to_vec();
        if self.srgb {
            bytes.extend(srgb_table().iter().flat_map(|v| v.to_le_bytes()));
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_fields_and_refuses_what_cuda_refuses() {
        let t = Texture {
            address: 0x2000,
            width: 8,
            height: 4,
            depth: 1,
            row_pitch: 32,
            kind: ChannelKind::Float,
            channel_bytes: 4,
            channels: 1,
            linear_filter: true,
            address_modes: [AddressMode::Border, AddressMode::Wrap, AddressMode::Clamp],
            ..Texture::default()
        };
        let bytes = t.encode().expect("valid");
        let word =
            |at: u32| u32::from_le_bytes(bytes[at as usize..at as usize + 4].try_into().unwrap());
        assert_eq!(word(offset::WIDTH), 8);
        assert_eq!(word(offset::FORMAT), 2 | (4 << 4) | (1 << 8));
        assert_eq!(word(offset::FLAGS), flags::LINEAR | (3 << 8) | (1 << 12));
        assert_eq!(word(offset::MAGIC), MAGIC);
        let int = Texture { kind: ChannelKind::Signed, ..t.clone() };
        assert!(int.encode().expect_err("linear on integers").contains("linear"));
        let short = Texture { row_pitch: 16, ..t };
        assert!(short.encode().is_err());
    }
}
