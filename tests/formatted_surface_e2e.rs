//! Formatted surface accesses end to end (issue #20): `tests/ptx/memory/formatted_surfaces.ptx`
//! stores with `sust.p` to surfaces of every channel format and count, and reduces with
//! `sured.p` on signed and unsigned ones. The expected bytes come from a CPU model of
//! the conversion written from PTX ISA 9.2 §9.7.11.2 (source values are `.f32` for float
//! formats, `.u32`/`.s32` for integer ones; x counts samples) and ptxvk's documented
//! rules where NVIDIA gives none: f32 to f16 rounds to nearest even, integers saturate
//! to the channel's range.

mod common;

use ptxvk::{half, Arg, ChannelKind, Device, DeviceBuffer, Module, TextureDesc, TextureObject};

/// Bytes of padding after each row, which a store addressing bytes instead of samples
/// would write.
const ROW_PADDING: usize = 16;
/// What the surfaces hold before a store.
const FILL: u8 = 0xa5;

fn module(device: &Device) -> Module {
    common::load(device, &common::repo().join("tests/ptx/memory/formatted_surfaces.ptx"))
}

/// A surface over `buffer` of `width` x `rows` samples (`layers` of them, or 0), rows
/// padded by [`ROW_PADDING`].
fn surface(
    device: &Device,
    buffer: &DeviceBuffer<u8>,
    format: (ChannelKind, u32, u32),
    width: usize,
    rows: usize,
    layers: usize,
) -> TextureObject {
    let (kind, channel_bytes, channels) = format;
    let row_pitch = width * (channel_bytes * channels) as usize + ROW_PADDING;
    let desc = TextureDesc {
        address: buffer.address(),
        width: width as u32,
        height: rows as u32,
        depth: 1,
        layers: layers as u32,
        row_pitch: row_pitch as u64,
        slice_pitch: (row_pitch * rows) as u64,
        kind,
        channel_bytes,
        channels,
        ..TextureDesc::default()
    };
    device.texture_object(&desc).expect("surface")
}

/// The model: channel value `v` (32 bits: an f32, u32 or s32 by the format) as the
/// `bytes` little-endian bytes the format stores.
fn converted(kind: ChannelKind, bytes: u32, v: u32) -> Vec<u8> {
    let bits: u32 = match (kind, bytes) {
        (_, 4) => v,
        (ChannelKind::Float, 2) => u32::from(half::f16::from_f32(f32::from_bits(v)).to_bits()),
        (ChannelKind::Unsigned, b) => v.min((1u32 << (8 * b)) - 1),
        (ChannelKind::Signed, b) => {
            let max = (1i32 << (8 * b - 1)) - 1;
            ((v as i32).clamp(-max - 1, max) as u32) & ((1u32 << (8 * b)) - 1)
        }
        (ChannelKind::Float, b) => panic!("no {b}-byte float channels"),
    };
    bits.to_le_bytes()[..bytes as usize].to_vec()
}

/// Values that exercise a format's conversion: for floats, halves' rounding ties (to
/// even and away), overflow, subnormals and a NaN; for integers, every range's edges.
fn values(kind: ChannelKind, n: usize) -> Vec<u32> {
    let floats = [
        1.0f32,
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        0.1,
        -2.5,
        65504.0,
        65520.0,
        1e-7,
        -1e-8,
        f32::NAN,
        f32::INFINITY,
        -0.0,
        1.0 / 3.0,
        123.456,
        -65536.0,
        0.5,
    ];
    let ints: [i64; 16] = [
        0,
        1,
        127,
        128,
        255,
        256,
        -1,
        -128,
        -129,
        32767,
        32768,
        65535,
        65536,
        -32769,
        i32::MAX as i64,
        i32::MIN as i64,
    ];
    (0..n)
        .map(|i| match kind {
            ChannelKind::Float => floats[(i * 7) % 16].to_bits(),
            _ => ints[(i * 5) % 16] as u32,
        })
        .collect()
}

/// `store_2d` to a 4 x 2 surface of each channel format and count: every byte of every
/// row (padding included) is the model's.
#[test]
fn formatted_stores_convert_to_every_format() {
    let Some(device) = common::device() else { return };
    let module = module(&device);
    let kernel = module.kernel("store_2d").expect("kernel");
    let (w, h) = (4usize, 2usize);
    let formats = [
        (ChannelKind::Float, 4, 4),
        (ChannelKind::Float, 4, 1),
        (ChannelKind::Float, 2, 2),
        (ChannelKind::Float, 2, 4),
        (ChannelKind::Unsigned, 1, 4),
        (ChannelKind::Signed, 1, 4),
        (ChannelKind::Unsigned, 2, 2),
        (ChannelKind::Signed, 2, 1),
        (ChannelKind::Unsigned, 4, 2),
        (ChannelKind::Signed, 4, 4),
    ];
    for (kind, channel_bytes, channels) in formats {
        let texel = (channel_bytes * channels) as usize;
        let row_pitch = w * texel + ROW_PADDING;
        let memory = device.buffer_from(&vec![FILL; row_pitch * h]).expect("memory");
        let s = surface(&device, &memory, (kind, channel_bytes, channels), w, h, 0);
        let input = values(kind, 4 * w * h);
        let input_buffer = device.buffer_from(&input).expect("values");
        kernel
            .launch(
                [1, 1, 1],
                [w as u32, h as u32, 1],
                0,
                &[Arg::from(&s), Arg::from(&input_buffer)],
            )
            .expect("store_2d");
        let mut want = vec![FILL; row_pitch * h];
        for y in 0..h {
            for x in 0..w {
                let at = y * row_pitch + x * texel;
                // Source elements beyond the format's channels are ignored.
                for c in 0..channels as usize {
                    let bytes = converted(kind, channel_bytes, input[4 * (x + w * y) + c]);
                    let o = at + c * channel_bytes as usize;
                    want[o..o + bytes.len()].copy_from_slice(&bytes);
                }
            }
        }
        let got = memory.to_vec().expect("read");
        let format = format!("{kind:?} {channel_bytes}x{channels}");
        if kind == ChannelKind::Float && channel_bytes == 2 {
            // A NaN stays a NaN; NVIDIA documents no payload.
            let halves = |b: &[u8]| -> Vec<half::f16> {
                b.chunks(2).map(|c| half::f16::from_le_bytes([c[0], c[1]])).collect()
            };
            for (i, (g, e)) in halves(&got).iter().zip(halves(&want)).enumerate() {
                let same = g.to_bits() == e.to_bits() || (g.is_nan() && e.is_nan());
                assert!(same, "{format}: half {i} is {g} ({:#06x}), want {e}", g.to_bits());
            }
        } else {
            assert_eq!(got, want, "{format}");
        }
    }
}

/// `store_layers` writes the first two channels of sample x of each layer of a layered
/// 1-D surface of 4 x u16.
#[test]
fn formatted_stores_to_layers() {
    let Some(device) = common::device() else { return };
    let module = module(&device);
    let (w, layers) = (8usize, 3usize);
    let texel = 8;
    let row_pitch = w * texel + ROW_PADDING;
    let memory = device.buffer_from(&vec![FILL; row_pitch * layers]).expect("memory");
    let s = surface(&device, &memory, (ChannelKind::Unsigned, 2, 4), w, 1, layers);
    module
        .kernel("store_layers")
        .expect("kernel")
        .launch([1, 1, 1], [w as u32, layers as u32, 1], 0, &[Arg::from(&s)])
        .expect("store_layers");
    let got = memory.to_vec().expect("read");
    for l in 0..layers {
        for x in 0..w {
            let at = l * row_pitch + x * texel;
            let r = u16::from_le_bytes([got[at], got[at + 1]]);
            let g = u16::from_le_bytes([got[at + 2], got[at + 3]]);
            assert_eq!((r, g), ((x + 16 * l) as u16, l as u16), "layer {l} sample {x}");
        }
        let pad = l * row_pitch + w * texel;
        assert!(got[pad..pad + ROW_PADDING].iter().all(|&b| b == FILL), "layer {l} padding");
    }
}

/// `store_edges`: `.zero` drops stores outside the surface, `.clamp` moves them to the
/// nearest sample, in samples rather than bytes.
#[test]
fn formatted_stores_outside_the_surface() {
    let Some(device) = common::device() else { return };
    let module = module(&device);
    let n = 6usize;
    let row_pitch = 4 * n + ROW_PADDING;
    let memory = device.buffer_from(&vec![FILL; row_pitch * 2]).expect("memory");
    let s = surface(&device, &memory, (ChannelKind::Signed, 4, 1), n, 2, 0);
    module
        .kernel("store_edges")
        .expect("kernel")
        .launch([1, 1, 1], [n as u32 + 3, 1, 1], 0, &[Arg::from(&s)])
        .expect("store_edges");
    let got = memory.to_vec().expect("read");
    let word = |at: usize| u32::from_le_bytes([got[at], got[at + 1], got[at + 2], got[at + 3]]);
    let fill = u32::from_le_bytes([FILL; 4]);
    let row0: Vec<u32> = (0..n).map(|k| word(4 * k)).collect();
    assert_eq!(row0, (0..n as u32).map(|k| k + 2).collect::<Vec<_>>());
    let row1: Vec<u32> = (0..n).map(|k| word(row_pitch + 4 * k)).collect();
    let mut want = vec![fill; n];
    want[0] = 2000;
    want[n - 1] = 1000;
    assert_eq!(row1, want);
    assert!(got[4 * n..row_pitch].iter().all(|&b| b == FILL), "row 0 padding");
}

/// `reduce`: `sured.p` adds, and takes minima and maxima as the format's integers
/// (signed or unsigned, 32 or 64 bits); a float or 8-bit surface traps.
#[test]
fn formatted_reductions_follow_the_format() {
    let Some(device) = common::device() else { return };
    let module = module(&device);
    let kernel = module.kernel("reduce").expect("kernel");
    let threads = 64i64;
    for kind in [ChannelKind::Signed, ChannelKind::Unsigned] {
        let signed = kind == ChannelKind::Signed;
        let sum = device.zeroed::<u8>(4 * 8 + ROW_PADDING).expect("sum");
        let low_start: u32 = if signed { i32::MAX as u32 } else { u32::MAX };
        let lows = device
            .buffer_from(&[low_start.to_le_bytes(); 4 + ROW_PADDING / 4].concat())
            .expect("lows");
        let high_start: u64 = if signed { i64::MIN as u64 } else { 0 };
        let highs = device
            .buffer_from(&[high_start.to_le_bytes(); 2 + ROW_PADDING / 8].concat())
            .expect("highs");
        let s = surface(&device, &sum, (ChannelKind::Unsigned, 4, 1), 8, 1, 0);
        let l = surface(&device, &lows, (kind, 4, 1), 4, 1, 0);
        let h = surface(&device, &highs, (kind, 4, 2), 2, 1, 0);
        kernel
            .launch(
                [1, 1, 1],
                [threads as u32, 1, 1],
                0,
                &[Arg::from(&s), Arg::from(&l), Arg::from(&h)],
            )
            .expect("reduce");
        let words = |b: Vec<u8>| -> Vec<u32> {
            b.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
        };
        assert_eq!(words(sum.to_vec().expect("read"))[..8], [8u32; 8]);
        let want_lows: Vec<u32> = (0..4)
            .map(|k| {
                let mine = (0..threads).filter(|t| t % 4 == k).map(|t| t - 32);
                if signed {
                    mine.min().unwrap_or(0) as i32 as u32
                } else {
                    mine.map(|v| v as i32 as u32).min().unwrap_or(0)
                }
            })
            .collect();
        assert_eq!(words(lows.to_vec().expect("read"))[..4], want_lows[..], "{kind:?} minima");
        let want_highs: Vec<u64> = (0..2)
            .map(|k| {
                let mine = (0..threads).filter(|t| t % 2 == k).map(|t| t - 32);
                if signed {
                    mine.max().unwrap_or(0) as u64
                } else {
                    mine.map(|v| v as u64).max().unwrap_or(0)
                }
            })
            .collect();
        let got_highs: Vec<u64> = highs
            .to_vec()
            .expect("read")
            .chunks(8)
            .take(2)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        assert_eq!(got_highs, want_highs, "{kind:?} maxima");
    }
    // Reductions on float or 8-bit samples are not defined: the launch traps.
    for format in [(ChannelKind::Float, 4, 1), (ChannelKind::Unsigned, 1, 4)] {
        let bad = device.zeroed::<u8>(64).expect("memory");
        let ok = device.zeroed::<u8>(64).expect("memory");
        let b = surface(&device, &bad, format, 8, 1, 0);
        let l = surface(&device, &ok, (ChannelKind::Signed, 4, 1), 4, 1, 0);
        let h = surface(&device, &ok, (ChannelKind::Signed, 4, 2), 2, 1, 0);
        let err = kernel
            .launch(
                [1, 1, 1],
                [threads as u32, 1, 1],
                0,
                &[Arg::from(&b), Arg::from(&l), Arg::from(&h)],
            )
            .expect_err("a reduction on a non-integer surface");
        assert!(err.to_string().contains("trap"), "{format:?}: {err}");
    }
}
