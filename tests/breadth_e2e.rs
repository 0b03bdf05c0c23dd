//! Real-world PTX forms that third-party code emits (issue #34), each run on the device
//! against a CPU model written from the PTX ISA: sub-word accesses from and into wider
//! registers, array-element addresses and `reg + imm` as value operands, the relaxed
//! operand-size rules of `ld`/`st`/`cvt`, `.local` variables as generic addresses,
//! vector `.reg` parameters, `.v8` of bytes, module-scope `.reg`/`.local`, legacy
//! texture coordinates, `isspacep` of either width and library modules.

mod common;

use common::{device, repo};
use ptxvk::compile::Target;

fn ptx(name: &str) -> std::path::PathBuf {
    repo().join("tests/ptx/breadth").join(name)
}

/// A deterministic stream of u64 values (SplitMix64).
fn random_words(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        })
        .collect()
}

/// Compiles `path` for `target`, validates the SPIR-V and loads it.
fn load(device: &ptxvk::Device, path: &std::path::Path, target: Target) -> ptxvk::Module {
    common::load_for(device, path, target)
}

// ----- sub-word accesses ----------------------------------------------------------------

type Access = (&'static str, usize, u32);

/// The stores and loads of `tests/ptx/breadth/gen_sub_word.py`, in its order:
/// (type, byte offset in the slot, register width).
const STORES: [Access; 11] = [
    ("u8", 0, 16),
    ("s8", 1, 32),
    ("b8", 2, 64),
    ("u8", 3, 32),
    ("u16", 4, 16),
    ("s16", 6, 32),
    ("b16", 8, 64),
    ("s8", 10, 64),
    ("b8", 11, 16),
    ("u16", 12, 64),
    ("b16", 14, 32),
];
const LOADS: [Access; 13] = [
    ("s8", 0, 16),
    ("u8", 1, 32),
    ("s8", 2, 64),
    ("s8", 3, 32),
    ("u8", 0, 64),
    ("s16", 4, 32),
    ("u16", 6, 64),
    ("s16", 8, 64),
    ("b16", 12, 32),
    ("s16", 14, 16),
    ("b8", 11, 64),
    ("s8", 10, 16),
    ("u16", 14, 16),
];
/// The byte- and half-dominated shapes (shared windows of bytes and of halves).
const BYTE_LOADS: [Access; 6] =
    [("s8", 0, 16), ("u8", 1, 32), ("s8", 2, 64), ("b8", 3, 16), ("s8", 15, 32), ("u8", 14, 64)];
const HALF_LOADS: [Access; 5] =
    [("s16", 0, 16), ("u16", 2, 32), ("s16", 4, 64), ("b16", 6, 64), ("s16", 14, 32)];
const THREADS: usize = 64;
const WIDTHS: [u32; 3] = [16, 32, 64];

/// `gen_sub_word.py`'s `BYTE_STORES` (then two 16-bit stores) and `HALF_STORES`: types
/// and register widths in turn.
fn cycled_stores(types: [&'static str; 3], size: usize, count: usize) -> Vec<Access> {
    (0..count).map(|j| (types[j % 3], size * j, WIDTHS[j % 3])).collect()
}

fn type_bytes(ty: &str) -> usize {
    if ty.ends_with('8') {
        1
    } else {
        2
    }
}

/// PTX ISA 9.2 §5.2.2 and the relaxed type-checking rules: a store keeps the low bits
/// of its (wider) register; a load sign-extends (`.s`) or zero-extends (`.u`, `.b`) to
/// its destination register's width. The slot's two words, then one per load.
fn sub_word_model(x: u64, stores: &[Access], loads: &[Access]) -> Vec<u64> {
    let mut slot = [0u8; 16];
    for &(ty, off, width) in stores {
        let register = (x >> (4 * off)) & mask(width);
        let n = type_bytes(ty);
        slot[off..off + n].copy_from_slice(&register.to_le_bytes()[..n]);
    }
    let mut out = vec![
        u64::from_le_bytes(slot[..8].try_into().expect("8 bytes")),
        u64::from_le_bytes(slot[8..].try_into().expect("8 bytes")),
    ];
    for &(ty, off, width) in loads {
        let n = type_bytes(ty);
        let mut raw = [0u8; 8];
        raw[..n].copy_from_slice(&slot[off..off + n]);
        let raw = u64::from_le_bytes(raw);
        let value = if ty.starts_with('s') {
            let shift = 64 - 8 * n as u32;
            (((raw << shift) as i64) >> shift) as u64
        } else {
            raw
        };
        out.push(value & mask(width));
    }
    out
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// Every sub-word store and load of 8 and 16 bits from and into registers of 16, 32 and
/// 64 bits, in shared, global and local memory and through generic addresses into
/// each, and in shared windows of bytes and of halves; on a device with 8- and 16-bit
/// integer types (typed narrow accesses) and on one without them (word accesses with
/// masks, and atomics in shared memory).
#[test]
fn sub_word_stores_and_loads_with_registers_of_every_width() {
    let Some(device) = device() else { return };
    let path = ptx("sub_word.ptx");
    let input = random_words(THREADS, 34);
    let mut byte_stores = cycled_stores(["u8", "s8", "b8"], 1, 12);
    byte_stores.extend([("u16", 12, 32), ("b16", 14, 64)]);
    let half_stores = cycled_stores(["u16", "s16", "b16"], 2, 8);
    let mut shapes: Vec<(String, &[Access], &[Access])> = Vec::new();
    for space in ["shared", "global", "local"] {
        shapes.push((format!("sub_word_{space}"), &STORES, &LOADS));
    }
    shapes.push(("sub_word_shared_bytes".into(), &byte_stores, &BYTE_LOADS));
    shapes.push(("sub_word_shared_halves".into(), &half_stores, &HALF_LOADS));
    // The byte- and half-dominated shapes get shared windows of bytes and halves where
    // the device has those integer types.
    let text = std::fs::read_to_string(&path).expect("read PTX");
    for (entry, array) in
        [("sub_word_shared_bytes_direct", "uchar"), ("sub_word_shared_halves_direct", "ushort")]
    {
        let target = Target { int8: true, int16: true, ..Target::portable() };
        let compiled = ptxvk::compile::compile_with("sub_word.ptx", &text, Some(entry), target)
            .expect("compiles");
        let spirv = ptxvk::spirv::disassemble(&compiled.spirv.words).expect("disassembles");
        assert!(
            spirv.contains(&format!("OpTypePointer Workgroup %_arr_{array}")),
            "{entry}: no shared window of {array}"
        );
    }
    for (int8, int16) in [(true, true), (false, false)] {
        let target = Target { int8, int16, ..device.target() };
        let module = load(&device, &path, target);
        for (name, stores, loads) in &shapes {
            let words = 2 + loads.len();
            let want: Vec<u64> =
                input.iter().flat_map(|&x| sub_word_model(x, stores, loads)).collect();
            for how in ["direct", "generic"] {
                let entry = format!("{name}_{how}");
                let src = device.buffer_from(&input).expect("input");
                let out = device.zeroed::<u64>(THREADS * words + THREADS * 2).expect("output");
                let args = [ptxvk::Arg::from(&src), ptxvk::Arg::from(&out)];
                let kernel = module.kernel(&entry).expect("kernel");
                kernel.launch(1, THREADS as u32, 0, &args).expect("launch");
                let got = out.to_vec().expect("read");
                for t in 0..THREADS {
                    let at = t * words..(t + 1) * words;
                    assert_eq!(
                        &got[at.clone()],
                        &want[at],
                        "{entry} (int8 {int8}, int16 {int16}) thread {t}: slot words, then \
                         one word per load of {loads:?}"
                    );
                }
            }
        }
    }
}

/// 16-bit atomics beside each other: a CAS-loop increment of two adjacent u16 counters
/// by 32 threads each (a CAS that wrote the whole word would lose the neighbour's
/// counts), a failing and a succeeding `atom.cas.b16` on each thread's own u16, and
/// `atom.add.noftz.f16` into both halves of a word; in shared and global memory and
/// through generic addresses.
#[test]
fn sub_word_atomics_keep_their_neighbours() {
    let Some(device) = device() else { return };
    let path = ptx("sub_word.ptx");
    let input = random_words(THREADS, 35);
    for (int8, int16) in [(true, true), (false, false)] {
        let target = Target { int8, int16, ..device.target() };
        let module = load(&device, &path, target);
        for space in ["shared", "global"] {
            for how in ["direct", "generic"] {
                let entry = format!("sub_word_atomics_{space}_{how}");
                let src = device.buffer_from(&input).expect("input");
                let out = device.zeroed::<u64>(288).expect("output");
                let args = [ptxvk::Arg::from(&src), ptxvk::Arg::from(&out)];
                let kernel = module.kernel(&entry).expect("kernel");
                kernel.launch(1, THREADS as u32, 0, &args).expect("launch");
                let got = out.to_vec().expect("read");
                for (t, x) in input.iter().enumerate() {
                    let own = x & 0xffff;
                    assert_eq!(
                        &got[3 * t..3 * t + 3],
                        &[own, own, own ^ 0x5a5a],
                        "{entry} (int8 {int8}): thread {t}: failing CAS old, succeeding \
                         CAS old, value after"
                    );
                }
                // 64 additions of 1.0 and of 0.5 are exact in f16: 64.0 and 32.0.
                let (sum_lo, sum_hi) = (half::f16::from_f32(64.0), half::f16::from_f32(32.0));
                let pair = u64::from(sum_lo.to_bits()) | u64::from(sum_hi.to_bits()) << 16;
                assert_eq!(
                    &got[192..195],
                    &[32, 32, pair],
                    "{entry} (int8 {int8}): counters and the f16 pair"
                );
            }
        }
    }
}
