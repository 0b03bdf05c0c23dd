//! CUDA fatbin containers: the images `nvcc -fatbin` writes and executables embed, which
//! `cuModuleLoadData` accepts. ptxvk can only use their PTX entries.
//!
//! NVIDIA does not document the format. The layout here comes from reverse-engineered
//! readers — ZLUDA (`dark_api/src/fatbin.rs`: flags, the wrapper, LZ4 and ZSTD),
//! N. Eiling's `cuda-fatbin-decompression` (`fatbin-decompress.h`: the entry header),
//! jiegec's `fatbinary` crate and nvopen-tools' `fatbin/FORMAT_SPECIFICATION.md` — and
//! from the files CUDA 13.5's nvcc writes (`cuda-driver/tests/data/`, made by
//! `scripts/gen-fatbins`); what only those files show is marked "observed". The wrapper
//! struct is the one NVIDIA ships in `fatbinary_section.h`. All fields are little-endian.
//!
//! ```text
//! header (16 bytes, 8-aligned)     entry header (header_size bytes, >= 64)
//!  0 u32 magic 0xBA55ED50            0 u16 kind: 1 PTX, 2 ELF, 0x100 concatenated group
//!  4 u16 version 1                   2 u16 version 0x101
//!  6 u16 header_size (16)            4 u32 header_size (payload starts here)
//!  8 u64 fat_size: bytes of the      8 u64 payload_size (stored bytes, padded to 8)
//!        entries after the header   16 u32 compressed_size (0 when stored plainly)
//!                                   20 u32 options offset (0x40 when there are any)
//! entries follow one another:       24 u16 minor, 26 u16 major (PTX ISA for PTX)
//! next = entry + header_size        28 u32 arch (75 for sm_75 and compute_75)
//!              + payload_size       32 u32 name offset, 36 u32 name length
//!                                   40 u64 flags: 0x1 64-bit, 0x2 debug, 0x10 Linux,
//!                                              0x2000 LZ4, 0x8000 ZSTD
//!                                   56 u64 uncompressed size (when compressed)
//! ```
//!
//! Compressed payloads are one LZ4 block (`--compress-mode=speed`) or one ZSTD frame
//! (nvcc 13's default, `size` and `balance`). nvcc compresses PTX by default and, with
//! `-Xfatbin=-compress-all`, ELF too; `--no-compress` or `--compress-mode=none` stores
//! plain text, padded with NULs. Observed with `--concat`: PTX entries are grouped into
//! one kind-0x100 entry whose payload is their concatenation, compressed as one; after
//! its first 64 header bytes come a u32 count, a u32 table size (including those 8
//! bytes) and `count` equal-sized member headers laid out as entry headers, except that
//! a member's `header_size` field holds its offset in the uncompressed group.

use std::borrow::Cow;
use std::io::Read;

/// `fatBinaryHeader::magic`.
pub(crate) const MAGIC: u32 = 0xBA55_ED50;
/// `__fatBinC_Wrapper_t::magic` (`FATBINC_MAGIC`, `fatbinary_section.h`).
pub(crate) const WRAPPER_MAGIC: u32 = 0x4662_43B1;
/// `FATBINC_VERSION`: `data` points at one fatbin. Version 2 (`FATBINC_LINK_VERSION`,
/// relocatable device code) lists prelinked fatbins instead and is not read.
const WRAPPER_VERSION: u32 = 1;
const VERSION: u16 = 1;
const HEADER_SIZE: usize = 16;
const ENTRY_VERSION: u16 = 0x101;
const ENTRY_HEADER_SIZE: usize = 64;

const KIND_PTX: u16 = 1;
const KIND_ELF: u16 = 2;
const KIND_GROUP: u16 = 0x100;

const FLAG_LZ4: u64 = 0x2000;
const FLAG_ZSTD: u64 = 0x8000;

/// What a fatbin entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Ptx,
    /// A cubin: SASS in an ELF file.
    Elf,
    Other(u16),
}

/// How an entry's stored bytes are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compression {
    None,
    Lz4,
    Zstd,
}

/// A malformed or unsupported fatbin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FatbinError {
    #[error("null fatbin pointer")]
    Null,
    #[error("not a fatbin: magic {0:#010x} (expected {MAGIC:#010x})")]
    BadMagic(u32),
    #[error("fatbin version {0} is not supported (only {VERSION})")]
    Version(u16),
    #[error(
        "fatbin wrapper version {0} is not supported (only {WRAPPER_VERSION}; version 2 \
         is relocatable device code, -rdc)"
    )]
    WrapperVersion(u32),
    #[error("fatbin header size {0} is smaller than {HEADER_SIZE} bytes")]
    HeaderSize(u16),
    #[error("the fatbin's header gives it {0} bytes, more than fit in memory")]
    TooLarge(u64),
    #[error("the fatbin's {what} at byte {offset} runs past its end ({len} bytes)")]
    Truncated { what: &'static str, offset: usize, len: usize },
    #[error("fatbin entry at byte {offset}: {reason}")]
    Entry { offset: usize, reason: String },
    #[error("fatbin entry for arch {arch}: {reason}")]
    Decompress { arch: u32, reason: String },
    #[error("the PTX for arch {arch} has bytes that are not UTF-8 outside comments and strings")]
    NotUtf8 { arch: u32 },
}

/// Stored bytes and how to get the original from them.
#[derive(Clone, Copy, Debug)]
struct Blob<'a> {
    stored: &'a [u8],
    compression: Compression,
    /// The uncompressed size (the stored length when not compressed).
    size: u64,
}

#[derive(Clone, Copy, Debug)]
enum Payload<'a> {
    Own(Blob<'a>),
    /// `size` bytes at `offset` of a concatenated group's uncompressed contents.
    InGroup {
        group: Blob<'a>,
        offset: u64,
        size: u64,
    },
}

/// One entry of a fatbin, borrowing the fatbin's bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry<'a> {
    pub(crate) kind: Kind,
    /// The SM number: 75 for `sm_75` SASS and for `compute_75` PTX.
    pub(crate) arch: u32,
    payload: Payload<'a>,
}

impl<'a> Entry<'a> {
    /// The entry's contents, decompressed.
    pub(crate) fn contents(&self) -> Result<Cow<'a, [u8]>, FatbinError> {
        match self.payload {
            Payload::Own(blob) => blob.decompress(self.arch),
            Payload::InGroup { group, offset, size } => {
                let all = group.decompress(self.arch)?;
                // Checked against the group's size when parsed, which `decompress` keeps.
                let range = usize::try_from(offset)
                    .ok()
                    .zip(usize::try_from(size).ok())
                    .and_then(|(o, n)| Some(o..o.checked_add(n)?))
                    .filter(|r| r.end <= all.len())
                    .ok_or_else(|| FatbinError::Decompress {
                        arch: self.arch,
                        reason: "member outside its group".into(),
                    })?;
                Ok(match all {
                    Cow::Borrowed(b) => Cow::Borrowed(&b[range]),
                    Cow::Owned(v) => Cow::Owned(v[range].to_vec()),
                })
            }
        }
    }

    /// The PTX text of a PTX entry (without the NUL padding).
    pub(crate) fn ptx(&self) -> Result<String, FatbinError> {
        let bytes = self.contents()?;
        let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        // Bytes that are not UTF-8 are allowed in comments and strings, as ptxas allows.
        match ptxvk::decode_ptx(&bytes[..end]) {
            (text, None) => Ok(text),
            (_, Some(_)) => Err(FatbinError::NotUtf8 { arch: self.arch }),
        }
    }
}

impl<'a> Blob<'a> {
    fn decompress(self, arch: u32) -> Result<Cow<'a, [u8]>, FatbinError> {
        let error = |reason: String| FatbinError::Decompress { arch, reason };
        let size = usize::try_from(self.size).map_err(|_| error(format!("size {}", self.size)))?;
        let out = match self.compression {
            Compression::None => return Ok(Cow::Borrowed(self.stored)),
            Compression::Lz4 => {
                // An LZ4 sequence expands to at most 255 bytes per input byte; a larger
                // size is corrupt, and is not allocated.
                if size > self.stored.len().saturating_mul(255).saturating_add(16) {
                    return Err(error(format!(
                        "LZ4: {} bytes cannot expand to {size}",
                        self.stored.len()
                    )));
                }
                let mut out = vec![0; size];
                let n = lz4_flex::block::decompress_into(self.stored, &mut out)
                    .map_err(|e| error(format!("LZ4: {e}")))?;
                out.truncate(n);
                out
            }
            Compression::Zstd => {
                // Grown as decoded (not allocated from the header), to one byte past the
                // expected size to notice a longer output.
                let mut out = Vec::with_capacity(size.min(self.stored.len().saturating_mul(64)));
                let limit = self.size.saturating_add(1);
                // Frame after frame (nvcc writes one) until the input ends.
                let mut input = self.stored;
                while !input.is_empty() && (out.len() as u64) < limit {
                    let mut decoder = ruzstd::decoding::StreamingDecoder::new(&mut input)
                        .map_err(|e| error(format!("ZSTD: {e}")))?;
                    (&mut decoder)
                        .take(limit - out.len() as u64)
                        .read_to_end(&mut out)
                        .map_err(|e| error(format!("ZSTD: {e}")))?;
                }
                out
            }
        };
        if out.len() != size {
            return Err(error(format!(
                "decompressed to {} bytes, the header says {size}",
                out.len()
            )));
        }
        Ok(Cow::Owned(out))
    }
}

/// Little-endian reads at byte offsets of one entry header, bounds-checked.
#[derive(Clone, Copy)]
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Fields<'_> {
    fn field<const N: usize>(self, offset: usize) -> Result<[u8; N], FatbinError> {
        let start = self.at.checked_add(offset);
        start
            .and_then(|s| self.bytes.get(s..s.checked_add(N)?))
            .and_then(|b| b.try_into().ok())
            .ok_or(FatbinError::Truncated {
                what: "entry header",
                offset: self.at,
                len: self.bytes.len(),
            })
    }
    fn u16(self, offset: usize) -> Result<u16, FatbinError> {
        self.field(offset).map(u16::from_le_bytes)
    }
    fn u32(self, offset: usize) -> Result<u32, FatbinError> {
        self.field(offset).map(u32::from_le_bytes)
    }
    fn u64(self, offset: usize) -> Result<u64, FatbinError> {
        self.field(offset).map(u64::from_le_bytes)
    }
}

/// The fields shared by entry and group-member headers.
struct Common {
    kind: u16,
    arch: u32,
    flags: u64,
}

fn common(f: Fields<'_>) -> Result<Common, FatbinError> {
    let version = f.u16(2)?;
    if version != ENTRY_VERSION {
        return Err(FatbinError::Entry {
            offset: f.at,
            reason: format!(
                "entry version {version:#x} is not supported (only {ENTRY_VERSION:#x})"
            ),
        });
    }
    Ok(Common { kind: f.u16(0)?, arch: f.u32(28)?, flags: f.u64(40)? })
}

fn compression(flags: u64, offset: usize) -> Result<Compression, FatbinError> {
    match (flags & FLAG_LZ4 != 0, flags & FLAG_ZSTD != 0) {
        (false, false) => Ok(Compression::None),
        (true, false) => Ok(Compression::Lz4),
        (false, true) => Ok(Compression::Zstd),
        (true, true) => Err(FatbinError::Entry {
            offset,
            reason: "both the LZ4 and the ZSTD flag are set".into(),
        }),
    }
}

fn kind(code: u16) -> Kind {
    match code {
        KIND_PTX => Kind::Ptx,
        KIND_ELF => Kind::Elf,
        other => Kind::Other(other),
    }
}

/// The length of the fatbin that `header` starts (header included), checking its magic
/// and version.
fn total_len(header: &[u8; HEADER_SIZE]) -> Result<u64, FatbinError> {
    let magic = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    if magic != MAGIC {
        return Err(FatbinError::BadMagic(magic));
    }
    let version = u16::from_le_bytes([header[4], header[5]]);
    if version != VERSION {
        return Err(FatbinError::Version(version));
    }
    let header_size = u16::from_le_bytes([header[6], header[7]]);
    if usize::from(header_size) < HEADER_SIZE {
        return Err(FatbinError::HeaderSize(header_size));
    }
    let mut fat_size = [0; 8];
    fat_size.copy_from_slice(&header[8..16]);
    Ok(u64::from(header_size).saturating_add(u64::from_le_bytes(fat_size)))
}

/// Reads the entries of the fatbin at the start of `bytes` (bytes after its end, as
/// its header gives it, are ignored). Concatenated groups are listed as their members.
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Entry<'_>>, FatbinError> {
    let len = bytes.len();
    let truncated = |what, offset| FatbinError::Truncated { what, offset, len };
    let header: &[u8; HEADER_SIZE] =
        bytes.get(..HEADER_SIZE).and_then(|h| h.try_into().ok()).ok_or(truncated("header", 0))?;
    let total = total_len(header)?;
    let end = usize::try_from(total).ok().filter(|&t| t <= len).ok_or(truncated("entries", 0))?;
    let bytes = &bytes[..end];
    let mut at = usize::from(u16::from_le_bytes([header[6], header[7]]));
    let mut entries = Vec::new();
    while at < end {
        let f = Fields { bytes, at };
        let c = common(f)?;
        let header_size = f.u32(4)? as usize;
        if header_size < ENTRY_HEADER_SIZE {
            return Err(FatbinError::Entry {
                offset: at,
                reason: format!("header size {header_size} is smaller than {ENTRY_HEADER_SIZE}"),
            });
        }
        let payload_size = f.u64(8)?;
        let (data_start, data_end) = at
            .checked_add(header_size)
            .zip(usize::try_from(payload_size).ok())
            .and_then(|(s, n)| Some((s, s.checked_add(n)?)))
            .filter(|&(_, e)| e <= end)
            .ok_or(truncated("entry payload", at))?;
        let data = &bytes[data_start..data_end];
        let compression = compression(c.flags, at)?;
        let blob = if compression == Compression::None {
            Blob { stored: data, compression, size: payload_size }
        } else {
            let compressed = f.u32(16)? as usize;
            let stored = data.get(..compressed).ok_or_else(|| FatbinError::Entry {
                offset: at,
                reason: format!(
                    "compressed size {compressed} exceeds its payload ({payload_size})"
                ),
            })?;
            Blob { stored, compression, size: f.u64(56)? }
        };
        if c.kind == KIND_GROUP {
            group(f, header_size, blob, &mut entries)?;
        } else {
            entries.push(Entry { kind: kind(c.kind), arch: c.arch, payload: Payload::Own(blob) });
        }
        at = data_end;
    }
    Ok(entries)
}

/// Lists the members of the concatenated group whose header `f` starts (observed
/// layout: see the module doc).
fn group<'a>(
    f: Fields<'a>,
    header_size: usize,
    blob: Blob<'a>,
    entries: &mut Vec<Entry<'a>>,
) -> Result<(), FatbinError> {
    let bad = |reason: String| FatbinError::Entry { offset: f.at, reason };
    let count = f.u32(ENTRY_HEADER_SIZE)? as usize;
    let table = f.u32(ENTRY_HEADER_SIZE + 4)? as usize;
    if count == 0 || table != header_size - ENTRY_HEADER_SIZE || table < 8 {
        return Err(bad(format!(
            "concatenated group of {count} with a {table}-byte table in a {header_size}-byte header"
        )));
    }
    let stride = (table - 8) / count;
    if stride < ENTRY_HEADER_SIZE || stride * count != table - 8 {
        return Err(bad(format!("concatenated group: {count} members in {} bytes", table - 8)));
    }
    for i in 0..count {
        let m = Fields { bytes: f.bytes, at: f.at + ENTRY_HEADER_SIZE + 8 + i * stride };
        let c = common(m)?;
        let (offset, size) = (u64::from(m.u32(4)?), m.u64(8)?);
        if compression(c.flags, m.at)? != Compression::None {
            return Err(bad(format!("group member {i} is itself compressed")));
        }
        if offset.checked_add(size).is_none_or(|e| e > blob.size) {
            return Err(bad(format!(
                "group member {i} ({size} bytes at {offset}) is outside the group ({} bytes)",
                blob.size
            )));
        }
        entries.push(Entry {
            kind: kind(c.kind),
            arch: c.arch,
            payload: Payload::InGroup { group: blob, offset, size },
        });
    }
    Ok(())
}

/// The fatbin a module image points at: a fatbin header, or a `__fatBinC_Wrapper_t`
/// whose `data` points at one. The slice's length is the header's.
///
/// # Safety
/// `image` is null or points at a fatbin header or wrapper (as `cuModuleLoadData`'s
/// contract has it), readable for 16 bytes, or 24 for a wrapper; a fatbin is readable
/// for the length its header gives and outlives `'a`.
pub(crate) unsafe fn image_bytes<'a>(image: *const u8) -> Result<&'a [u8], FatbinError> {
    if image.is_null() {
        return Err(FatbinError::Null);
    }
    // SAFETY: a header or wrapper has at least 4 readable bytes (function contract).
    let magic = u32::from_le(unsafe { image.cast::<u32>().read_unaligned() });
    let header = if magic == WRAPPER_MAGIC {
        // SAFETY: a wrapper: `{int magic; int version; const unsigned long long *data;
        // void *filename_or_fatbins;}` (function contract), read field by field.
        let (version, data) = unsafe {
            (
                u32::from_le(image.add(4).cast::<u32>().read_unaligned()),
                image.add(8).cast::<*const u8>().read_unaligned(),
            )
        };
        if version != WRAPPER_VERSION {
            return Err(FatbinError::WrapperVersion(version));
        }
        if data.is_null() {
            return Err(FatbinError::Null);
        }
        data
    } else {
        image
    };
    // SAFETY: a wrapper's `data`, or `image` itself, points at a fatbin header (function
    // contract), whose first 4 bytes are readable; the rest is read only if they match.
    let magic = u32::from_le(unsafe { header.cast::<u32>().read_unaligned() });
    if magic != MAGIC {
        return Err(FatbinError::BadMagic(magic));
    }
    let mut bytes = [0u8; HEADER_SIZE];
    // SAFETY: a fatbin header is 16 readable bytes (function contract).
    unsafe { std::ptr::copy_nonoverlapping(header, bytes.as_mut_ptr(), HEADER_SIZE) };
    let total = total_len(&bytes)?;
    let len = usize::try_from(total)
        .ok()
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or(FatbinError::TooLarge(total))?;
    // SAFETY: the fatbin is readable for the length its header gives and outlives 'a
    // (function contract); `len` fits an allocation.
    Ok(unsafe { std::slice::from_raw_parts(header, len) })
}

/// The PTX entries in the order to try them for a device of compute capability `cc`
/// (86 for 8.6): those not above `cc`, newest first, as CUDA's JIT picks; then those
/// above it, newest first (ptxvk is not bound by SM versions: `module::ptx_of_fatbin`).
/// Entries of one architecture keep their order.
///
/// Not simply the newest: host code that tunes for the device's compute capability
/// must meet the kernels built for it. CCCL's dispatch in NVIDIA Warp picks CUB's
/// 256-thread radix-sort policy for 8.0, while the same fatbin's compute_121 kernels
/// were built for 128 threads (`.maxntid 128`).
pub(crate) fn ptx_in_load_order<'e, 'a>(entries: &'e [Entry<'a>], cc: u32) -> Vec<&'e Entry<'a>> {
    let mut ptx: Vec<&Entry<'a>> = entries.iter().filter(|e| e.kind == Kind::Ptx).collect();
    // A stable sort keeps the first of equals first.
    ptx.sort_by_key(|e| (e.arch > cc, std::cmp::Reverse(e.arch)));
    ptx
}

#[cfg(test)]
mod tests {
    //! The fixtures are nvcc's own output (`scripts/gen-fatbins`); the facts checked are
    //! what nvcc was asked for (kinds, architectures, compression) and what PTX is.

    use super::*;
    use proptest::prelude::*;

    const PTX75: &[u8] = include_bytes!("../tests/data/scale.ptx75.fatbin");
    const PTX75_ZSTD: &[u8] = include_bytes!("../tests/data/scale.ptx75.zstd.fatbin");
    const PTX75_LZ4: &[u8] = include_bytes!("../tests/data/scale.ptx75.lz4.fatbin");
    const MULTI: &[u8] = include_bytes!("../tests/data/scale.sass75-ptx75-ptx86.fatbin");
    const CONCAT: &[u8] = include_bytes!("../tests/data/scale.ptx75-ptx86.concat.fatbin");
    const SASS75: &[u8] = include_bytes!("../tests/data/scale.sass75.fatbin");
    const ALL: [&[u8]; 6] = [PTX75, PTX75_ZSTD, PTX75_LZ4, MULTI, CONCAT, SASS75];

    fn kinds(entries: &[Entry<'_>]) -> Vec<(Kind, u32)> {
        entries.iter().map(|e| (e.kind, e.arch)).collect()
    }

    fn compression(e: &Entry<'_>) -> Compression {
        match e.payload {
            Payload::Own(blob) | Payload::InGroup { group: blob, .. } => blob.compression,
        }
    }

    fn only_ptx(bytes: &[u8]) -> String {
        let entries = parse(bytes).expect("parses");
        assert_eq!(kinds(&entries), [(Kind::Ptx, 75)]);
        entries[0].ptx().expect("PTX")
    }

    fn assert_is_scale(ptx: &str, arch: u32) {
        assert!(ptx.contains(".entry scale("), "{ptx}");
        assert!(ptx.contains(&format!(".target sm_{arch}\n")), "{ptx}");
        assert!(!ptx.contains('\0'));
    }

    #[test]
    fn plain_lz4_and_zstd_fatbins_hold_the_same_ptx() {
        let plain = only_ptx(PTX75);
        assert_is_scale(&plain, 75);
        assert_eq!(only_ptx(PTX75_ZSTD), plain);
        assert_eq!(only_ptx(PTX75_LZ4), plain);
        let compressions: Vec<Compression> = [PTX75, PTX75_ZSTD, PTX75_LZ4]
            .iter()
            .map(|b| compression(&parse(b).unwrap()[0]))
            .collect();
        assert_eq!(compressions, [Compression::None, Compression::Zstd, Compression::Lz4]);
    }

    #[test]
    fn sass_and_two_ptx_entries_are_listed_and_the_ptx_ordered_for_the_device() {
        let entries = parse(MULTI).expect("parses");
        assert_eq!(kinds(&entries), [(Kind::Ptx, 75), (Kind::Elf, 75), (Kind::Ptx, 86)]);
        assert!(entries[1].contents().expect("ELF").starts_with(b"\x7fELF"));
        let order = |cc| ptx_in_load_order(&entries, cc).iter().map(|e| e.arch).collect::<Vec<_>>();
        assert_eq!(order(80), [75, 86]);
        assert_eq!(order(86), [86, 75]);
        assert_eq!(entries[0].ptx().expect("PTX"), only_ptx(PTX75));
        assert_is_scale(&entries[2].ptx().expect("PTX"), 86);
    }

    #[test]
    fn a_concatenated_group_is_listed_as_its_members() {
        let entries = parse(CONCAT).expect("parses");
        assert_eq!(kinds(&entries), [(Kind::Ptx, 75), (Kind::Ptx, 86)]);
        assert!(entries.iter().all(|e| compression(e) == Compression::Zstd));
        assert_eq!(entries[0].ptx().expect("PTX"), only_ptx(PTX75));
        assert_is_scale(&entries[1].ptx().expect("PTX"), 86);
        let order: Vec<u32> = ptx_in_load_order(&entries, 90).iter().map(|e| e.arch).collect();
        assert_eq!(order, [86, 75]);
    }

    #[test]
    fn a_sass_only_fatbin_has_no_ptx() {
        let entries = parse(SASS75).expect("parses");
        assert_eq!(kinds(&entries), [(Kind::Elf, 75)]);
        assert_eq!(compression(&entries[0]), Compression::Zstd);
        let elf = entries[0].contents().expect("decompresses");
        assert!(elf.starts_with(b"\x7fELF"));
        // The same cubin nvcc stores plainly in the multi-architecture fatbin.
        assert_eq!(elf, parse(MULTI).unwrap()[1].contents().unwrap());
        assert!(ptx_in_load_order(&entries, 80).is_empty());
    }

    #[test]
    fn image_bytes_reads_a_header_or_a_wrapper() {
        let mut padded = PTX75_ZSTD.to_vec();
        padded.extend([0xAA; 32]);
        // SAFETY: a fatbin header in a live buffer.
        let bytes = unsafe { image_bytes(padded.as_ptr()) }.expect("header");
        assert_eq!(bytes, PTX75_ZSTD);

        #[repr(C)]
        #[allow(dead_code)] // read through a pointer
        struct Wrapper {
            magic: u32,
            version: u32,
            data: *const u8,
            filename_or_fatbins: *const u8,
        }
        let read = |version, data| {
            let wrapper = Wrapper {
                magic: WRAPPER_MAGIC,
                version,
                data,
                filename_or_fatbins: std::ptr::null(),
            };
            // SAFETY: a live wrapper whose `data` is null or points at a live fatbin header
            // or, below, at 16 readable bytes of text.
            unsafe { image_bytes(std::ptr::from_ref(&wrapper).cast()) }
        };
        assert_eq!(read(1, padded.as_ptr()).expect("wrapper"), PTX75_ZSTD);
        assert_eq!(read(2, padded.as_ptr()), Err(FatbinError::WrapperVersion(2)));
        assert_eq!(read(1, std::ptr::null()), Err(FatbinError::Null));
        let text = b".version 8.0\n.target sm_80\n\0\0\0\0";
        assert!(matches!(read(1, text.as_ptr()), Err(FatbinError::BadMagic(_))));
        // SAFETY: null is rejected before any read.
        assert_eq!(unsafe { image_bytes(std::ptr::null()) }, Err(FatbinError::Null));
    }

    #[test]
    fn the_driver_gets_the_selected_ptx_or_an_error_saying_why() {
        use crate::module::ptx_of_fatbin;
        use cudarc::driver::sys::CUresult;
        // The newest PTX not above the compute capability reported, as CUDA's JIT picks;
        // PTX above it after that, and first where none is below: ptxvk is not bound by
        // SM versions (it falls back to the next PTX only where one fails).
        for (cc, first, then) in [(70, 86, 75), (80, 75, 86), (86, 86, 75), (90, 86, 75)] {
            let texts = ptx_of_fatbin(MULTI, cc).expect("PTX");
            assert_eq!(texts.len(), 2, "cc {cc}");
            assert!(texts[0].contains(&format!(".target sm_{first}\n")), "cc {cc}: {first} first");
            assert!(texts[1].contains(&format!(".target sm_{then}\n")), "cc {cc}: then {then}");
        }
        let (code, message) = ptx_of_fatbin(SASS75, 80).expect_err("SASS only");
        assert_eq!(code, CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU);
        for needle in ["(it holds sm_75 SASS)", "-gencode arch=compute_XX,code=compute_XX"] {
            assert!(message.contains(needle), "`{needle}` not in: {message}");
        }
        let (code, message) = ptx_of_fatbin(&PTX75[..100], 80).expect_err("truncated");
        assert_eq!(code, CUresult::CUDA_ERROR_INVALID_IMAGE);
        assert!(message.starts_with("malformed fatbin: "), "{message}");
    }

    /// Parses and, for every entry, decompresses: any outcome but a panic.
    fn exercise(bytes: &[u8]) -> Result<usize, FatbinError> {
        let entries = parse(bytes)?;
        for e in &entries {
            let _ = e.contents();
            let _ = e.ptx();
        }
        Ok(entries.len())
    }

    fn set(bytes: &mut [u8], at: usize, value: &[u8]) {
        bytes[at..at + value.len()].copy_from_slice(value);
    }

    #[test]
    fn every_truncation_is_an_error() {
        for fatbin in ALL {
            assert!(exercise(fatbin).is_ok());
            for n in 0..fatbin.len() {
                assert!(
                    matches!(parse(&fatbin[..n]), Err(FatbinError::Truncated { .. })),
                    "{n} of {} bytes",
                    fatbin.len()
                );
            }
        }
    }

    #[test]
    fn malformed_headers_are_errors() {
        let mut bad = PTX75.to_vec();
        set(&mut bad, 0, &0xDEAD_BEEFu32.to_le_bytes());
        assert_eq!(parse(&bad).err(), Some(FatbinError::BadMagic(0xDEAD_BEEF)));

        let mut bad = PTX75.to_vec();
        set(&mut bad, 4, &2u16.to_le_bytes());
        assert_eq!(parse(&bad).err(), Some(FatbinError::Version(2)));

        let mut bad = PTX75.to_vec();
        set(&mut bad, 6, &8u16.to_le_bytes());
        assert_eq!(parse(&bad).err(), Some(FatbinError::HeaderSize(8)));

        // The fatbin's size past the buffer, and huge.
        for size in [PTX75.len() as u64, u64::MAX - 8] {
            let mut bad = PTX75.to_vec();
            set(&mut bad, 8, &size.to_le_bytes());
            assert!(matches!(parse(&bad), Err(FatbinError::Truncated { .. })), "{size}");
        }

        // The entry's payload past the fatbin's end (fatbin header 16 + entry field 8).
        for size in [673u64, 1 << 40, u64::MAX] {
            let mut bad = PTX75.to_vec();
            set(&mut bad, 16 + 8, &size.to_le_bytes());
            assert!(matches!(parse(&bad), Err(FatbinError::Truncated { .. })), "{size}");
        }

        // An entry header too small to hold its fields, and one past the end.
        for size in [0u32, 63, 4000, u32::MAX] {
            let mut bad = PTX75.to_vec();
            set(&mut bad, 16 + 4, &size.to_le_bytes());
            assert!(parse(&bad).is_err(), "{size}");
        }

        let mut bad = PTX75.to_vec();
        set(&mut bad, 16 + 2, &0x102u16.to_le_bytes());
        assert!(matches!(parse(&bad), Err(FatbinError::Entry { offset: 16, .. })));

        let mut bad = PTX75_LZ4.to_vec();
        set(&mut bad, 16 + 40, &(0x11u64 | FLAG_LZ4 | FLAG_ZSTD).to_le_bytes());
        assert!(matches!(parse(&bad), Err(FatbinError::Entry { offset: 16, .. })));

        // A compressed size larger than the stored payload.
        let mut bad = PTX75_LZ4.to_vec();
        set(&mut bad, 16 + 16, &441u32.to_le_bytes());
        assert!(matches!(parse(&bad), Err(FatbinError::Entry { offset: 16, .. })));
    }

    #[test]
    fn corrupt_compressed_data_is_an_error() {
        // An LZ4 block whose first match points before the start of the output.
        let mut bad = PTX75_LZ4.to_vec();
        let data = 16 + 80;
        for b in &mut bad[data..data + 435] {
            *b = 0x0F;
        }
        let entries = parse(&bad).expect("headers are intact");
        assert!(matches!(entries[0].ptx(), Err(FatbinError::Decompress { arch: 75, .. })));

        // Sizes other than the data decompresses to, and one LZ4 cannot reach.
        for size in [667u64, 669, 1 << 20, u64::MAX] {
            for fatbin in [PTX75_LZ4, PTX75_ZSTD] {
                let mut bad = fatbin.to_vec();
                set(&mut bad, 16 + 56, &size.to_le_bytes());
                let entries = parse(&bad).expect("headers are intact");
                assert!(matches!(entries[0].ptx(), Err(FatbinError::Decompress { .. })), "{size}");
            }
        }

        let mut bad = PTX75_ZSTD.to_vec();
        set(&mut bad, data, b"not zstd");
        let entries = parse(&bad).expect("headers are intact");
        assert!(matches!(entries[0].ptx(), Err(FatbinError::Decompress { .. })));
        let mut bad = PTX75_ZSTD.to_vec();
        for b in &mut bad[data + 20..data + 200] {
            *b ^= 0x5A;
        }
        let entries = parse(&bad).expect("headers are intact");
        assert!(entries[0].ptx().is_err());

        // PTX that is not UTF-8.
        let mut bad = PTX75.to_vec();
        bad[data] = 0xFF;
        assert_eq!(parse(&bad).unwrap()[0].ptx(), Err(FatbinError::NotUtf8 { arch: 75 }));
    }

    #[test]
    fn malformed_concatenated_groups_are_errors() {
        let group = 16;
        let members = group + 64 + 8;
        let patch = |at: usize, value: &[u8]| {
            let mut bad = CONCAT.to_vec();
            set(&mut bad, at, value);
            parse(&bad).map(|e| e.len())
        };
        assert!(patch(group + 64, &0u32.to_le_bytes()).is_err(), "no members");
        assert!(patch(group + 64, &3u32.to_le_bytes()).is_err(), "160 bytes for 3");
        assert!(patch(group + 68, &4u32.to_le_bytes()).is_err(), "table size");
        assert!(patch(group + 64, &u32::MAX.to_le_bytes()).is_err());
        // The second member's offset (in its header-size field) past the group's end.
        assert!(patch(members + 80 + 4, &1000u32.to_le_bytes()).is_err());
        assert!(patch(members + 8, &u64::MAX.to_le_bytes()).is_err());
        assert!(patch(members + 40, &(0x11 | FLAG_LZ4).to_le_bytes()).is_err());
        assert!(patch(members + 2, &0u16.to_le_bytes()).is_err());
        assert_eq!(patch(members + 4, &0u32.to_le_bytes()), Ok(2), "a valid offset");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn mutated_fatbins_never_panic(
            which in 0..ALL.len(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        ) {
            let mut bytes = ALL[which].to_vec();
            for (at, value) in edits {
                let i = at.index(bytes.len());
                bytes[i] = value;
            }
            let _ = exercise(&bytes);
        }

        #[test]
        fn arbitrary_bytes_after_a_header_never_panic(
            size in 0u64..600,
            tail in proptest::collection::vec(any::<u8>(), 0..600),
        ) {
            let mut bytes = MAGIC.to_le_bytes().to_vec();
            bytes.extend(1u16.to_le_bytes());
            bytes.extend(16u16.to_le_bytes());
            bytes.extend(size.to_le_bytes());
            bytes.extend(tail);
            let _ = exercise(&bytes);
        }
    }
}
