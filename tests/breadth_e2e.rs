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

/// `n` deterministic u64 test values.
fn random_words(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = common::Rng(seed);
    (0..n).map(|_| rng.next_u64()).collect()
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

// ----- value operands, operand sizes, addresses and registers ---------------------------

/// Launches `entry` of `module` on one block of `threads` with buffer arguments.
fn launch(module: &ptxvk::Module, entry: &str, threads: u32, args: &[ptxvk::Arg<'_>]) {
    let kernel = module.kernel(entry).unwrap_or_else(|e| panic!("{entry}: {e}"));
    kernel.launch(1, threads, 0, args).unwrap_or_else(|e| panic!("{entry}: {e}"));
}

/// `forms.ptx`'s `element_addresses`: array-element addresses (`arr[2]`, `arr+4`,
/// `g[2]`) and `reg + imm` (`%r6+3`, `%rd1+20`) as value operands.
#[test]
fn array_element_addresses_and_register_offsets_as_values() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let out = device.zeroed::<u32>(8).expect("out");
    launch(&module, "element_addresses", 1, &[ptxvk::Arg::from(&out)]);
    // arr[0..4] as stored through each form, 10 + 3 + 1, the word at out + 20, g[2]
    // through its element address, and the distance from g to g[3] in bytes.
    assert_eq!(out.to_vec().expect("read"), vec![7, 11, 22, 33, 10 + 3 + 1, 55, 66, 3 * 4]);
}

/// `forms.ptx`'s `initializer_addends`: `generic(h)+4`, `h+8` in a module variable's
/// initializer.
#[test]
fn address_initializers_plus_constants() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let out = device.zeroed::<u32>(4).expect("out");
    launch(&module, "initializer_addends", 1, &[ptxvk::Arg::from(&out)]);
    assert_eq!(out.to_vec().expect("read"), vec![3, 5, 7, 4]);
}

/// `forms.ptx`'s `relaxed_sizes`: float `ld`, `st` and `cvt` of wider bit-size
/// registers, and integer ones into wider registers (§5.2.2's relaxed rules).
#[test]
fn operand_size_rules_of_ld_st_and_cvt() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let mut patterns: Vec<u32> = random_words(24, 36).iter().map(|w| *w as u32).collect();
    // Infinities, a subnormal, zeros and values that round in f16.
    patterns.extend([0x7f80_0000, 0xff80_0000, 0x0000_0001, 0x8000_0000, 0, 0x3f80_0001]);
    patterns.extend([0x477f_f000, 0xc2f6_e979]);
    let patterns: Vec<u32> = patterns
        .into_iter()
        .map(|p| if f32::from_bits(p).is_nan() { p & 0xbfff_ffff } else { p })
        .collect();
    let src = device.buffer_from(&patterns).expect("in");
    let out = device.zeroed::<u64>(8 * 32).expect("out");
    launch(&module, "relaxed_sizes", 32, &[ptxvk::Arg::from(&src), ptxvk::Arg::from(&out)]);
    let got = out.to_vec().expect("read");
    for (t, &p) in patterns.iter().enumerate() {
        let h = u64::from(half::f16::from_f32(f32::from_bits(p)).to_bits());
        let from_h = half::f16::from_bits(h as u16).to_f32().to_bits();
        let low_byte = p as u8 as i8 as i64 as u64;
        let want = [
            u64::from(p),
            u64::from(p),
            h,
            u64::from(from_h),
            low_byte,
            low_byte,
            u64::from(((p & 0xffff) as f32).to_bits()),
            h,
        ];
        assert_eq!(&got[8 * t..8 * t + 8], &want, "thread {t}, pattern {p:#010x}");
    }
}

/// `forms.ptx`'s `local_as_address`: a `.local` variable's name used as a generic address.
#[test]
fn local_variables_as_generic_addresses() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let x = 0x0123_4567_89ab_cdefu64;
    let out = device.zeroed::<u64>(2).expect("out");
    launch(&module, "local_as_address", 1, &[ptxvk::Arg::from(&out), ptxvk::Arg::from(x)]);
    assert_eq!(out.to_vec().expect("read"), vec![x + 1, x]);
}

/// `forms.ptx`'s `vector_params`: `.reg .v4`/`.v2`/`.b128` parameters and results of
/// device functions.
#[test]
fn vector_register_parameters_and_results() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let input: Vec<u32> = random_words(4 * 32, 37).iter().map(|w| *w as u32).collect();
    let src = device.buffer_from(&input).expect("in");
    let out = device.zeroed::<u32>(4 * 32).expect("out");
    launch(&module, "vector_params", 32, &[ptxvk::Arg::from(&src), ptxvk::Arg::from(&out)]);
    let got = out.to_vec().expect("read");
    for t in 0..32 {
        let v = &input[4 * t..4 * t + 4];
        let want = [v[0].wrapping_add(v[1]), v[2].wrapping_mul(v[3]), v[2], v[3]];
        assert_eq!(&got[4 * t..4 * t + 4], &want, "thread {t}");
    }
}

/// `forms.ptx`'s `mma_in_vector_registers`: `mma.m16n8k16.s32.u8.s8.s32` whose
/// fragments are vector registers passed to and returned from a device function,
/// against D = A B + C with the fragment layouts of PTX ISA 9.2 §9.7.14.5.8 (A: rows
/// g and g + 8, columns 4 c … 4 c + 3; B: rows 4 c … 4 c + 3, column g; C and D: rows
/// g and g + 8, columns 2 c and 2 c + 1, for lane 4 g + c).
#[test]
fn mma_with_8_bit_operands_in_vector_registers() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let words = random_words(16 * 16 + 16 * 8 + 16 * 8, 38);
    let a: Vec<u8> = words[..256].iter().map(|w| *w as u8).collect(); // 16 x 16, u8
    let b: Vec<i8> = words[256..384].iter().map(|w| *w as i8).collect(); // 16 x 8 (k x n)
    let c: Vec<i32> = words[384..].iter().map(|w| (*w as i32) >> 8).collect(); // 16 x 8
    let (mut fa, mut fb, mut fc, mut want) =
        (vec![0u32; 64], vec![0u32; 32], vec![0; 128], vec![0; 128]);
    for lane in 0..32 {
        let (g, q) = (lane / 4, lane % 4);
        for half in 0..2 {
            let row = g + 8 * half;
            let bytes: Vec<u8> = (0..4).map(|i| a[row * 16 + 4 * q + i]).collect();
            fa[2 * lane + half] = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        }
        let bytes: Vec<u8> = (0..4).map(|i| b[(4 * q + i) * 8 + g] as u8).collect();
        fb[lane] = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        for i in 0..4 {
            let (row, col) = (g + 8 * (i / 2), 2 * q + i % 2);
            fc[4 * lane + i] = c[row * 8 + col];
            let dot: i32 = (0..16)
                .map(|k| i32::from(a[row * 16 + k]) * i32::from(b[k * 8 + col]))
                .fold(c[row * 8 + col], i32::wrapping_add);
            want[4 * lane + i] = dot;
        }
    }
    let (ba, bb, bc) = (
        device.buffer_from(&fa).expect("a"),
        device.buffer_from(&fb).expect("b"),
        device.buffer_from(&fc).expect("c"),
    );
    let d = device.zeroed::<i32>(128).expect("d");
    let args =
        [ptxvk::Arg::from(&ba), ptxvk::Arg::from(&bb), ptxvk::Arg::from(&bc), ptxvk::Arg::from(&d)];
    launch(&module, "mma_in_vector_registers", 32, &args);
    assert_eq!(d.to_vec().expect("read"), want);
}

/// `forms.ptx`'s `v8_bytes`: `ld`/`st.global.v8.u8` with 16- and 32-bit registers and
/// `mov.v8.u16` from a `.b128` register.
#[test]
fn eight_element_vectors_of_bytes_and_halves() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let input: Vec<u8> = random_words(32, 39).iter().flat_map(|w| w.to_le_bytes()).collect();
    let src = device.buffer_from(&input).expect("in");
    let out = device.zeroed::<u8>(32 * 32).expect("out");
    launch(&module, "v8_bytes", 32, &[ptxvk::Arg::from(&src), ptxvk::Arg::from(&out)]);
    let got = out.to_vec().expect("read");
    for t in 0..32 {
        let bytes = &input[8 * t..8 * t + 8];
        let mut want: Vec<u8> = bytes.iter().rev().copied().collect();
        want.extend_from_slice(bytes);
        let halves: Vec<[u8; 2]> = want.chunks(2).map(|h| [h[0], h[1]]).collect();
        want.extend(halves.iter().rev().flatten());
        assert_eq!(&got[32 * t..32 * t + 32], &want[..], "thread {t}");
    }
}

/// `forms.ptx`'s `cp_async_to_variable`: `cp.async` whose destination is a `.shared`
/// variable's name, copying 12 bytes of 16 and zero-filling the rest.
#[test]
fn cp_async_into_a_named_shared_variable() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let input: Vec<u8> = random_words(8, 40).iter().flat_map(|w| w.to_le_bytes()).collect();
    let src = device.buffer_from(&input).expect("in");
    let out = device.zeroed::<u8>(64).expect("out");
    launch(&module, "cp_async_to_variable", 4, &[ptxvk::Arg::from(&src), ptxvk::Arg::from(&out)]);
    let want: Vec<u8> = (0..64).map(|i| if i % 16 < 12 { input[i] } else { 0 }).collect();
    assert_eq!(out.to_vec().expect("read"), want);
}

/// `forms.ptx`'s `isspacep_widths`: a 32-bit operand in a module of 64-bit addresses is
/// zero-extended (§6.4.1), so a shared variable's 32-bit address is no generic shared
/// address; its 64-bit generic address is.
#[test]
fn isspacep_of_either_operand_width() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let out = device.zeroed::<u32>(4).expect("out");
    launch(&module, "isspacep_widths", 1, &[ptxvk::Arg::from(&out)]);
    assert_eq!(out.to_vec().expect("read"), vec![0, 1, 1, 0]);
}

/// `forms.ptx`'s `reg_prototype`: calls through a `.callprototype` whose parameter and
/// result are `.reg` (`(.reg .f64 _) _ (.reg .s64 _)`).
#[test]
fn indirect_calls_through_reg_prototypes() {
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("forms.ptx"), device.target());
    let input: Vec<i64> = random_words(32, 41).iter().map(|w| (*w as i64) >> 3).collect();
    let src = device.buffer_from(&input).expect("in");
    let out = device.zeroed::<f64>(32).expect("out");
    launch(&module, "reg_prototype", 32, &[ptxvk::Arg::from(&src), ptxvk::Arg::from(&out)]);
    let want: Vec<u64> = input
        .iter()
        .enumerate()
        .map(|(t, &x)| if t % 2 == 1 { -(x as f64) } else { x as f64 * 0.5 }.to_bits())
        .collect();
    let got: Vec<u64> = out.to_vec().expect("read").iter().map(|f| f.to_bits()).collect();
    assert_eq!(got, want);
}

/// `legacy_forms.ptx`: `tex.1d`/`tex.2d` with a four-element coordinate vector whose
/// unused elements (NaN here) are ignored, and module-scope `.reg` and `.local`
/// variables shared by a kernel and a device function, per thread.
#[test]
fn legacy_coordinate_vectors_and_module_scope_registers() {
    use ptxvk::{AddressMode, ChannelKind, TextureDesc};
    let Some(device) = device() else { return };
    let module = load(&device, &ptx("legacy_forms.ptx"), device.target());
    let (line_w, plane_w, plane_h) = (16usize, 8usize, 4usize);
    let texels: Vec<f32> = random_words(line_w + plane_w * plane_h, 42)
        .iter()
        .map(|w| (*w >> 40) as f32 / 64.0)
        .collect();
    let (line_texels, plane_texels) = texels.split_at(line_w);
    let (bl, bp) = (
        device.buffer_from(line_texels).expect("line"),
        device.buffer_from(plane_texels).expect("plane"),
    );
    let desc = |address: u64, width: usize, height: usize| TextureDesc {
        address,
        width: width as u32,
        height: height as u32,
        depth: 1,
        row_pitch: 4 * width as u64,
        slice_pitch: (4 * width * height) as u64,
        kind: ChannelKind::Float,
        channel_bytes: 4,
        channels: 1,
        normalized_coords: false,
        linear_filter: false,
        address_modes: [AddressMode::Clamp; 3],
        ..TextureDesc::default()
    };
    let line = device.texture_object(&desc(bl.address(), line_w, 1)).expect("line");
    let plane = device.texture_object(&desc(bp.address(), plane_w, plane_h)).expect("plane");
    module.bind_texture("line", &line).expect("bind line");
    module.bind_texture("plane", &plane).expect("bind plane");
    // Coordinates from -2 to 18.5, off texel centres and beyond both edges.
    let xs: Vec<f32> = (0..32).map(|t| t as f32 * 0.65 - 2.0).collect();
    let src = device.buffer_from(&xs).expect("xs");
    let out = device.zeroed::<u32>(4 * 32).expect("out");
    launch(&module, "legacy_forms", 32, &[ptxvk::Arg::from(&src), ptxvk::Arg::from(&out)]);
    let got = out.to_vec().expect("read");
    // Point sampling of unnormalized coordinates: texel floor(c), clamped to the edge.
    let texel = |c: f32, size: usize| (c.floor().max(0.0) as usize).min(size - 1);
    for (t, &x) in xs.iter().enumerate() {
        let want = [
            line_texels[texel(x, line_w)].to_bits(),
            plane_texels[texel(x * 0.25, plane_h) * plane_w + texel(x, plane_w)].to_bits(),
            t as u32 + 5,
            3 * t as u32,
        ];
        assert_eq!(&got[4 * t..4 * t + 4], &want, "thread {t}, x = {x}");
    }
}

// ----- libraries ------------------------------------------------------------------------

/// A module of device functions without a kernel is a library (a link input): `ptxvk
/// compile` checks each of its functions and exits 0 with a note; an error in one of
/// them is reported at its line (exit 1); the harness kernels are valid SPIR-V.
#[test]
fn libraries_compile_as_link_inputs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = dir.path().join("lib.ptx");
    let text = ".version 7.0\n.target sm_70\n.address_size 64\n\
                .visible .func (.reg .b32 r) add_one(.reg .b32 a)\n{\n  add.s32 r, a, 1;\n  ret;\n}\n\
                .visible .func (.param .b64 r) load(.param .b64 p)\n{\n  .reg .b64 %rd<3>;\n  \
                ld.param.b64 %rd1, [p];\n  ld.global.u64 %rd2, [%rd1];\n  st.param.b64 [r], %rd2;\n  ret;\n}\n";
    std::fs::write(&good, text).expect("write");
    let ptxvk_cli = env!("CARGO_BIN_EXE_ptxvk");
    let out = std::process::Command::new(ptxvk_cli)
        .arg("compile")
        .arg(&good)
        .output()
        .expect("run ptxvk");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("library") && stderr.contains("2 functions"), "{stderr}");
    assert!(!dir.path().join("lib.spv").exists(), "a library has no SPIR-V to write");
    let sources = ptxvk::SourceMap::new([("lib.ptx", text)]);
    let library = ptxvk::compile::check_library(&sources, Target::portable())
        .expect("checks")
        .expect("a library");
    assert_eq!(library.functions, ["add_one", "load"]);
    ptxvk::spirv::validate(&library.spirv.words).expect("valid SPIR-V");

    let bad = dir.path().join("bad.ptx");
    std::fs::write(&bad, text.replace("add.s32 r, a, 1;", "add.s32 r, a, 1;\n  frobnicate r;"))
        .expect("write");
    let out = std::process::Command::new(ptxvk_cli).arg("compile").arg(&bad).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("frobnicate") && stderr.contains("bad.ptx:7"), "{stderr}");
}

/// `tests/kernels/sub_word.cu` (char and short data in shared, global and local memory
/// and through generic pointers) in all six compilers' builds, against its header
/// comment's contract, in blocks of 128 with a partial last block.
#[test]
fn sub_word_data_from_every_compiler() {
    let Some(device) = device() else { return };
    let (n, block) = (700usize, 128usize);
    let input: Vec<u32> = random_words(n, 43).iter().map(|w| *w as u32).collect();
    let x = |i: usize| input.get(i).copied().unwrap_or(0);
    let (mut bytes, mut halves, mut words) = (vec![0i8; n], vec![0u16; n], vec![0i32; 6 * n]);
    for i in 0..n {
        let (base, t) = (i / block * block, i % block);
        let neighbour = |d: usize| x(base + (t + d) % block);
        let xi = x(i);
        bytes[i] = (neighbour(1) >> 3) as u8 as i8;
        halves[i] = neighbour(5).wrapping_mul(7) as u16;
        words[6 * i..6 * i + 6].copy_from_slice(&[
            i32::from(bytes[i]),
            i32::from(halves[i] as i16),
            i32::from((xi >> (xi % 16)) as u8 as i8),
            i32::from((xi >> (4 * ((xi >> 4) % 4))) as u16 as i16),
            i32::from(neighbour(3).wrapping_add(1) as u16 as i16),
            i32::from(halves[i] as i16),
        ]);
    }
    for path in common::variants("sub_word") {
        let what = path.file_name().and_then(|f| f.to_str()).unwrap_or("?").to_string();
        let module = common::load(&device, &path);
        let src = device.buffer_from(&input).expect("in");
        let (b, h, w) = (
            device.zeroed::<i8>(n).expect("bytes"),
            device.zeroed::<u16>(n).expect("halves"),
            device.zeroed::<i32>(6 * n).expect("words"),
        );
        let args = [
            ptxvk::Arg::from(&src),
            ptxvk::Arg::from(&b),
            ptxvk::Arg::from(&h),
            ptxvk::Arg::from(&w),
            ptxvk::Arg::from(n as i32),
        ];
        let kernel = module.kernel("sub_word").expect("kernel");
        kernel.launch(n.div_ceil(block) as u32, block as u32, 0, &args).expect("launch");
        assert_eq!(b.to_vec().expect("read"), bytes, "{what}: bytes_out");
        assert_eq!(h.to_vec().expect("read"), halves, "{what}: halves_out");
        assert_eq!(w.to_vec().expect("read"), words, "{what}: words_out");
    }
}
