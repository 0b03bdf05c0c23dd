//! Memory instructions end to end on the default Vulkan device: atomics under
//! contention (`tests/ptx/memory/atomics.ptx`), through the Rust API and the CLI, with
//! every total checked exactly against the order-independent result the PTX ISA's
//! atomic semantics give (§9.7.13.5: `inc(r, s) = r >= s ? 0 : r + 1`,
//! `dec(r, s) = (r == 0 || r > s) ? s : r - 1`, and so on).

mod common;

use common::*;
use ptxvk::spec::{ElemType, SpecArg};
use std::collections::BTreeMap;

/// The initial value of each u64 slot of `c` (slots written as 32-bit words use the
/// low half).
fn initial() -> [u64; 17] {
    let mut c = [0u64; 17];
    c[2] = 0x8000_0000; // max: starts at i32::MIN
    c[3] = 0xffff_ffff; // min: starts at u32::MAX
    c[4] = 0xffff_ffff; // and
    c[11] = 0xdead_beef; // exch: a value no thread writes
    c
}

/// Every slot after `n` threads, from the ISA semantics (none depends on the order).
fn expected(n: u64) -> [Option<u64>; 17] {
    let idx = 0..n;
    let max =
        idx.clone().map(|i| ((i * 7919) % 2001) as i64 - 1000).max().unwrap_or(i64::from(i32::MIN));
    let min = idx.clone().map(|i| i ^ 0x5a5a).min().unwrap_or(0xffff_ffff);
    let and = idx.clone().fold(0xffff_ffffu64, |a, i| a & !(1 << (i % 32)));
    let or = idx.clone().fold(0u64, |a, i| a | 1 << (i % 29));
    let xor = idx.clone().fold(0u64, |a, i| a ^ i) & 0xffff_ffff;
    [
        Some(n),
        Some(n * (n - 1) / 2),
        Some(max as u32 as u64),
        Some(min),
        Some(and),
        Some(or),
        Some(xor),
        Some(n % 10),
        Some((10 - n % 10) % 10),
        Some(u64::from((n as f32).to_bits())),
        Some((n as f64 * 0.5).to_bits()),
        None, // the exchange's final value: checked with the returned old values
        Some(n),
        Some(u64::from((2.0 * n as f32).to_bits())),
        Some(n),
        Some(2 * n),
        Some(3 * n),
    ]
}

fn check(how: &str, n: u64, got: &[(usize, Vec<u8>)]) {
    let c: Vec<u64> = got
        .iter()
        .find(|(a, _)| *a == 0)
        .expect("counters")
        .1
        .chunks(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    let olds: Vec<u32> = got
        .iter()
        .find(|(a, _)| *a == 1)
        .expect("olds")
        .1
        .chunks(4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
        .collect();
    let names = [
        "add.u32",
        "add.u64",
        "max.s32",
        "min.u32",
        "and.b32",
        "or.b32",
        "xor.b32",
        "inc.u32",
        "dec.u32",
        "add.f32",
        "add.f64",
        "exch.b32",
        "shared add.u32",
        "shared add.f32",
        "cas.b32 loop",
        "red.add.u32",
        "cas.b64 loop",
    ];
    for (k, want) in expected(n).iter().enumerate() {
        if let Some(w) = want {
            assert_eq!(c[k], *w, "{how}: slot {k} ({}) after {n} threads", names[k]);
        }
    }
    // `exch`: the old values and the final value are the initial value and every i,
    // each exactly once.
    let mut seen: Vec<u64> = (0..n as usize).map(|i| u64::from(olds[2 * i])).collect();
    seen.push(c[11]);
    seen.sort_unstable();
    let mut want: Vec<u64> = (0..n).collect();
    want.push(0xdead_beef);
    want.sort_unstable();
    assert!(seen == want, "{how}: atom.exch lost or duplicated a value");
    // The CAS increment: every thread replaced a different value, 0..n-1.
    let mut replaced: Vec<u32> = (0..n as usize).map(|i| olds[2 * i + 1]).collect();
    replaced.sort_unstable();
    assert!(
        replaced.iter().enumerate().all(|(k, &v)| v as usize == k),
        "{how}: two compare-and-swaps succeeded on the same value"
    );
}

#[test]
fn atomics_under_contention_of_a_million_threads() {
    let path = repo().join("tests/ptx/memory/atomics.ptx");
    for n in [1u64, 1000, 1_000_000] {
        let counters: Vec<u8> = initial().iter().flat_map(|v| v.to_le_bytes()).collect();
        let case = Case {
            grid: [n.div_ceil(256) as u32, 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
            args: vec![
                SpecArg::Buffer { ty: ElemType::U64, bytes: counters },
                SpecArg::Buffer { ty: ElemType::U32, bytes: vec![0; 8 * n as usize] },
                SpecArg::Value((n as u32).to_le_bytes().to_vec()),
            ],
            expected: vec![],
        };
        let Some(device) = device() else { return };
        let (_, got) = run_api(&device, &path, "atomics", &case);
        check("Rust API", n, &got);
        if n <= 1000 {
            let got = run_cli(&path, "atomics", &case);
            check("ptxvk run --spec", n, &got);
        }
    }
}

/// `.local` arrays with dynamic indexing, generic pointers into local, shared and global
/// memory (`cvta`, generic `ld`/`st` dispatched on the window), and `isspacep`
/// (`tests/ptx/memory/local_generic.ptx`; its header comment is the contract).
#[test]
fn local_memory_and_generic_addressing() {
    let path = repo().join("tests/ptx/memory/local_generic.ptx");
    let (n, block) = (1000u32, 128u32);
    let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761) ^ 0x1234).collect();
    let mut expected = Vec::new();
    for i in 0..n {
        let a = |k: u32| (i + 1) * k;
        let tid = i % block;
        let ntid = block;
        let word1 = (a(1) & !0xff00) | (i & 0xff) << 8;
        expected.extend([
            a(i % 16),
            a((i + 3) % 16),
            word1,
            ((tid + 1) % ntid) * 3 + 1,
            input[i as usize],
            7,
            1,
            if i % 2 == 1 { a(2) } else { ((tid + 1) % ntid) * 3 + 1 },
        ]);
    }
    let bytes = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let case = Case {
        grid: [n.div_ceil(block), 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
        args: vec![
            SpecArg::Buffer { ty: ElemType::U32, bytes: bytes(&input) },
            SpecArg::Buffer { ty: ElemType::U32, bytes: vec![0; 32 * n as usize] },
            SpecArg::Value(n.to_le_bytes().to_vec()),
        ],
        expected: vec![(1, bytes(&expected))],
    };
    let Some(device) = device() else { return };
    let (_, got) = run_api(&device, &path, "local_generic", &case);
    let out = &got.iter().find(|(a, _)| *a == 1).expect("out").1;
    for (k, (g, w)) in out.chunks(4).zip(expected.iter()).enumerate() {
        let g = u32::from_le_bytes(g.try_into().expect("4 bytes"));
        assert_eq!(g, *w, "thread {} result {}", k / 8, k % 8);
    }
    let got = run_cli(&path, "local_generic", &case);
    assert_eq!(got.iter().find(|(a, _)| *a == 1).expect("out").1, case.expected[0].1);
}

/// The address-space inference (`lower/src/pass/infer_spaces.rs`): a kernel that converts a
/// shared address to a generic one and loads through it in a loop gets direct shared
/// loads, with no run-time test of the window, and computes the right sums.
#[test]
fn generic_pointer_into_shared_memory_needs_no_dispatch() {
    let ptx = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry sum_shared(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 words[256];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, words;
    shl.b32 %r3, %r1, 2;
    add.s32 %r4, %r2, %r3;
    mul.lo.s32 %r5, %r1, %r1;
    st.shared.u32 [%r4], %r5;
    bar.sync 0;
    cvt.u64.u32 %rd1, %r2;
    cvta.shared.u64 %rd2, %rd1;
    mov.u32 %r6, 0;
    mov.u32 %r7, 0;
$LOOP:
    ld.u32 %r8, [%rd2];
    add.s32 %r6, %r6, %r8;
    add.s64 %rd2, %rd2, 4;
    add.s32 %r7, %r7, 1;
    setp.lt.u32 %p1, %r7, 64;
    @%p1 bra $LOOP;
    ld.param.u64 %rd3, [out];
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    st.global.u32 [%rd5], %r6;
    ret;
}
"#;
    let (_, kernels) = ptxvk::compile::lower("sum_shared.ptx", ptx, None).expect("lowers");
    let k = &kernels[0].kernel;
    let loads: Vec<&ptxvk::lower::ir::InstKind> = k
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .map(|i| &i.kind)
        .filter(|i| matches!(i, ptxvk::lower::ir::InstKind::Load { .. }))
        .collect();
    let spaces: Vec<ptxvk::lower::ir::Space> = loads
        .iter()
        .map(|i| match i {
            ptxvk::lower::ir::InstKind::Load { space, .. } => *space,
            _ => unreachable!(),
        })
        .collect();
    use ptxvk::lower::ir::Space;
    // One shared load for the generic one, and the parameter load (`hoist_params` moves
    // it to the entry).
    let count = |space: Space| spaces.iter().filter(|s| **s == space).count();
    assert_eq!(
        (spaces.len(), count(Space::Shared), count(Space::Param)),
        (2, 1, 1),
        "the generic load became one shared load: {spaces:?}"
    );
    // The loop has one exit test and nothing else branches.
    let branches = k
        .blocks
        .iter()
        .filter(|b| matches!(b.term, ptxvk::lower::ir::Terminator::Branch { .. }))
        .count();
    assert_eq!(branches, 1, "no dispatch branch on the address window");

    let Some(device) = device() else { return };
    let module = ptxvk::Module::from_ptx(&device, ptx).expect("module");
    let out = device.zeroed::<u32>(64).expect("alloc");
    module
        .kernel("sum_shared")
        .expect("kernel")
        .launch(1, 64, 0, &[ptxvk::Arg::from(&out)])
        .expect("launch");
    let want: u32 = (0..64u32).map(|t| t * t).sum();
    assert!(out.to_vec().expect("read").iter().all(|&v| v == want));
}

/// Sub-word shared stores (`pass::legalize_memory`): nvcc's byte transposition through
/// a `u8` shared array (`benches/cuda/subword_shared.cu`) gets a byte window and plain
/// typed stores on a device with 8-bit integers, and two atomics per store without
/// them; both are checked against a CPU model of the transposition, in a block that is
/// only partly inside `n`.
#[test]
fn sub_word_shared_stores_are_typed_where_the_device_has_8_bit_integers() {
    let path = repo().join("benches/ptx/subword_shared.ptx");
    let ptx = std::fs::read_to_string(&path).expect("read PTX");
    let n = 700usize;
    let input: Vec<u32> =
        (0..n as u32).map(|i| i.wrapping_mul(0x9e37_79b9) ^ 0x0102_0304).collect();
    // Thread t of block b reads bytes 4t..4t+3 of the block's shared array, where byte
    // j*256 + u holds byte j of the word of thread u (0 past `n`).
    let model = |i: usize| {
        let (block, t) = (i / 256, i % 256);
        (0..4).fold(0u32, |w, m| {
            let k = 4 * t + m;
            let u = block * 256 + k % 256;
            let word = input.get(u).copied().unwrap_or(0);
            w | ((word >> (8 * (k / 256))) & 0xff) << (8 * m)
        })
    };
    let want: Vec<u32> = (0..n).map(model).collect();
    let device = device();
    for (int8, atomics) in [(true, false), (false, true)] {
        let target = ptxvk::compile::Target { int8, ..ptxvk::compile::Target::portable() };
        let compiled = ptxvk::compile::compile_with("subword_shared.ptx", &ptx, None, target)
            .expect("compiles");
        ptxvk::spirv::validate(&compiled.spirv.words).expect("valid SPIR-V");
        let text = ptxvk::spirv::disassemble(&compiled.spirv.words).expect("disassembles");
        assert_eq!(text.contains("OpAtomicAnd"), atomics, "int8 {int8}: atomics");
        let Some(device) = &device else { continue };
        let module = ptxvk::Module::from_compiled(device, compiled).expect("module");
        let src = device.buffer_from(&input).expect("input");
        let out = device.zeroed::<u32>(n).expect("output");
        let args = [ptxvk::Arg::from(&src), ptxvk::Arg::from(&out), ptxvk::Arg::from(n as i32)];
        let kernel = module.kernel("subword_shared").expect("kernel");
        kernel.launch(n.div_ceil(256) as u32, 256, 0, &args).expect("launch");
        assert_eq!(out.to_vec().expect("read"), want, "int8 {int8}");
    }
}

/// Vector atomics (`tests/ptx/memory/vector_atomics.ptx`): 256 threads add (1, 2, 3, 4)
/// to four f32 with one `atom.v4` each and (1, 2) to two f16 with `red.v2`; every
/// element ends at 256 times its addend, and each element's old values are exactly the
/// multiples 0, c, …, 255 c in some order.
#[test]
fn vector_atomics_are_atomic_per_element() {
    let path = repo().join("tests/ptx/memory/vector_atomics.ptx");
    let ptx = std::fs::read_to_string(&path).expect("read PTX");
    let Some(device) = device() else {
        ptxvk::compile::lower("vector_atomics.ptx", &ptx, None).expect("lowers");
        return;
    };
    let threads = 256usize;
    let module = ptxvk::Module::from_ptx(&device, &ptx).expect("module");
    let acc = device.zeroed::<u32>(5).expect("acc");
    let olds = device.zeroed::<f32>(4 * threads).expect("olds");
    let args = [ptxvk::Arg::from(&acc), ptxvk::Arg::from(&olds)];
    let kernel = module.kernel("vector_atomics").expect("kernel");
    kernel.launch(1, threads as u32, 0, &args).expect("launch");
    let acc = acc.to_vec().expect("read");
    let sums: Vec<f32> = acc[..4].iter().map(|&b| f32::from_bits(b)).collect();
    assert_eq!(sums, [256.0, 512.0, 768.0, 1024.0]);
    // 256.0 and 512.0 in f16, low half first.
    assert_eq!(acc[4], 0x6000_5c00, "{:#x}", acc[4]);
    let olds = olds.to_vec().expect("read");
    for j in 0..4 {
        let mut got: Vec<f32> = (0..threads).map(|t| olds[4 * t + j]).collect();
        got.sort_by(f32::total_cmp);
        let want: Vec<f32> = (0..threads).map(|k| (k * (j + 1)) as f32).collect();
        assert_eq!(got, want, "element {j}");
    }
}

/// 128-bit registers (`tests/ptx/memory/b128.ptx`): `ld`/`st.b128` and `mov.b128`
/// packing and unpacking 64-bit halves, low half first.
#[test]
fn b128_registers() {
    let path = repo().join("tests/ptx/memory/b128.ptx");
    let ptx = std::fs::read_to_string(&path).expect("read PTX");
    let Some(device) = device() else {
        ptxvk::compile::lower("b128.ptx", &ptx, None).expect("lowers");
        return;
    };
    let n = 32usize;
    let a: Vec<u64> = (0..2 * n as u64).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    let module = ptxvk::Module::from_ptx(&device, &ptx).expect("module");
    let ab = device.buffer_from(&a).expect("a");
    let bb = device.zeroed::<u64>(2 * n).expect("b");
    let args = [ptxvk::Arg::from(&ab), ptxvk::Arg::from(&bb)];
    module.kernel("swap_halves").expect("kernel").launch(1, n as u32, 0, &args).expect("launch");
    let want: Vec<u64> = (0..n).flat_map(|t| [a[2 * t + 1], a[2 * t].wrapping_add(1)]).collect();
    assert_eq!(bb.to_vec().expect("read"), want);
}

/// Half-precision min/max atomics (`tests/ptx/memory/half_min_max_atomics.ptx`): 128
/// threads' f16 and bf16 values, negative zeros and infinities among them, end as their
/// minimum and maximum (with -0 below +0), as `min.f16`/`max.f16` order them.
#[test]
fn half_precision_min_max_atomics() {
    use ptxvk::half::{bf16, f16};
    let path = repo().join("tests/ptx/memory/half_min_max_atomics.ptx");
    let ptx = std::fs::read_to_string(&path).expect("read PTX");
    let Some(device) = device() else {
        ptxvk::compile::lower("half_min_max_atomics.ptx", &ptx, None).expect("lowers");
        return;
    };
    let threads = 128usize;
    let value = |k: usize| match k % 37 {
        0 => -0.0,
        1 => f32::INFINITY,
        2 => f32::NEG_INFINITY,
        _ => ((k * 7919) % 2001) as f32 * 0.25 - 250.0,
    };
    let v: Vec<u16> = (0..2 * threads).map(|k| f16::from_f32(value(k)).to_bits()).collect();
    let w: Vec<u32> = (0..threads)
        .map(|t| {
            let lo = bf16::from_f32(value(3 * t + 5)).to_bits();
            let hi = bf16::from_f32(value(5 * t + 1)).to_bits();
            u32::from(lo) | u32::from(hi) << 16
        })
        .collect();
    // The initial values: +0 for the minimum (so every negative wins), and for the
    // maxima the bits of -inf.
    let init: Vec<u16> = vec![0, 0, 0xfc00, 0xfc00, 0xff80, 0xff80, 0xff80, 0xff80];
    let module = ptxvk::Module::from_ptx(&device, &ptx).expect("module");
    let acc = device.buffer_from(&init).expect("acc");
    let (vb, wb) = (device.buffer_from(&v).expect("v"), device.buffer_from(&w).expect("w"));
    let args = [ptxvk::Arg::from(&acc), ptxvk::Arg::from(&vb), ptxvk::Arg::from(&wb)];
    module
        .kernel("half_min_max")
        .expect("kernel")
        .launch(1, threads as u32, 0, &args)
        .expect("launch");
    let got = acc.to_vec().expect("read");
    // Total orders on the bit patterns: -0 below +0.
    let key16 =
        |b: u16| f16::from_bits(b).to_f32() + if b == 0x8000 { -f32::MIN_POSITIVE } else { 0.0 };
    let keyb =
        |b: u16| bf16::from_bits(b).to_f32() + if b == 0x8000 { -f32::MIN_POSITIVE } else { 0.0 };
    let pick = |vals: &mut dyn Iterator<Item = u16>, key: &dyn Fn(u16) -> f32, max: bool| {
        vals.reduce(|a, b| if (key(b) > key(a)) == max && key(b) != key(a) { b } else { a })
            .expect("values")
    };
    for lane in 0..2 {
        let lane_vals: Vec<u16> = (0..threads).map(|t| v[2 * t + lane]).collect();
        let min = pick(&mut std::iter::once(0).chain(lane_vals.iter().copied()), &key16, false);
        let max = pick(&mut std::iter::once(0xfc00).chain(lane_vals.iter().copied()), &key16, true);
        assert_eq!(got[lane], min, "f16 min, lane {lane}");
        assert_eq!(got[2 + lane], max, "f16 max, lane {lane}");
        let b_vals = (0..threads).map(|t| (w[t] >> (16 * lane)) as u16);
        let bmax = pick(&mut std::iter::once(0xff80).chain(b_vals), &keyb, true);
        assert_eq!(got[4 + lane], bmax, "bf16 max, lane {lane}");
        assert_eq!(got[6 + lane], bmax, "bf16 max, second word, lane {lane}");
    }
}

/// `isspacep.const`/`.global`/`.shared` (`tests/ptx/memory/isspacep_const.ptx`): a
/// `.const` variable's generic address is constant memory only, a `.global` variable's
/// and a buffer's global only, a shared variable's shared only.
#[test]
fn isspacep_tells_constant_memory_apart() {
    let path = repo().join("tests/ptx/memory/isspacep_const.ptx");
    let ptx = std::fs::read_to_string(&path).expect("read PTX");
    let Some(device) = device() else {
        ptxvk::compile::lower("isspacep_const.ptx", &ptx, None).expect("lowers");
        return;
    };
    let module = ptxvk::Module::from_ptx(&device, &ptx).expect("module");
    let out = device.zeroed::<u32>(4).expect("out");
    module
        .kernel("spaces")
        .expect("kernel")
        .launch(1, 1, 0, &[ptxvk::Arg::from(&out)])
        .expect("launch");
    assert_eq!(out.to_vec().expect("read"), [1, 2, 2, 4]);
}

/// Vector registers (`tests/ptx/memory/vector_registers.ptx`): each component its own
/// register, the whole register a vector operand of `ld`, `st` and `mov.v2`.
#[test]
fn vector_registers() {
    let path = repo().join("tests/ptx/memory/vector_registers.ptx");
    let ptx = std::fs::read_to_string(&path).expect("read PTX");
    let Some(device) = device() else {
        ptxvk::compile::lower("vector_registers.ptx", &ptx, None).expect("lowers");
        return;
    };
    let n = 64usize;
    let a: Vec<f32> = (0..4 * n).map(|k| (k as f32) * 0.75 - 20.0).collect();
    let module = ptxvk::Module::from_ptx(&device, &ptx).expect("module");
    let ab = device.buffer_from(&a).expect("a");
    let bb = device.zeroed::<u32>(8 * n).expect("b");
    let args = [ptxvk::Arg::from(&ab), ptxvk::Arg::from(&bb)];
    module.kernel("vregs").expect("kernel").launch(1, n as u32, 0, &args).expect("launch");
    let got = bb.to_vec().expect("read");
    for t in 0..n {
        let v = &a[4 * t..4 * t + 4];
        // The third component is the new x (x + w) minus w: `sub` reads `%v.r` after
        // `add` wrote it.
        let x = v[0] + v[3];
        let want_f = [x, v[1] * 2.0, x - v[3], v[3]];
        let got_f: Vec<f32> = got[8 * t..8 * t + 4].iter().map(|&b| f32::from_bits(b)).collect();
        assert_eq!(got_f, want_f, "thread {t}");
        assert_eq!(&got[8 * t + 4..8 * t + 6], &[t as u32, t as u32 + 7], "thread {t}");
    }
}

/// `.global` and `.const` variables declared inside functions (PTX ISA 9.2 §5.1.2:
/// static storage, visible in their scope): a kernel's counter persists across
/// launches and the host reads it as `kernel::name`; a device function's constant
/// table with an initializer; and two functions' variables of the same name stay apart.
#[test]
fn variables_declared_inside_functions_have_static_storage() {
    const PTX: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .func (.reg .u32 r) lookup(.reg .u32 i)\n{\n\
        .const .align 4 .u32 table[4] = {10, 20, 30, 40};\n\
        .global .u32 same;\n.reg .u64 %a, %b;\n.reg .u32 %t;\n\
        cvt.u64.u32 %a, i;\nshl.b64 %a, %a, 2;\nmov.u64 %b, table;\n\
        add.u64 %a, %a, %b;\nld.const.u32 r, [%a];\n\
        atom.global.add.u32 %t, [same], 100;\nret;\n}\n\
        .visible .entry counting(.param .u64 out)\n{\n\
        .global .u32 same;\n.global .align 4 .u32 counter;\n\
        .reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n\
        ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\n\
        atom.global.add.u32 %r2, [counter], 1;\natom.global.add.u32 %r5, [same], 1;\n\
        and.b32 %r3, %r1, 3;\ncall (%r4), lookup, (%r3);\n\
        mul.wide.u32 %rd2, %r1, 8;\nadd.s64 %rd3, %rd1, %rd2;\n\
        st.global.v2.u32 [%rd3], {%r2, %r4};\nret;\n}\n";
    let Some(device) = device() else {
        ptxvk::compile::lower("scoped.ptx", PTX, None).expect("lowers");
        return;
    };
    let module = ptxvk::Module::from_ptx(&device, PTX).expect("module");
    let kernel = module.kernel("counting").expect("kernel");
    let threads = 32u32;
    for launch in 0..2u32 {
        let out = device.zeroed::<u32>(2 * threads as usize).expect("alloc");
        kernel.launch(1, threads, 0, &[ptxvk::Arg::from(&out)]).expect("launch");
        let got = out.to_vec().expect("read");
        // Each launch's old values of the counter are a permutation of its range.
        let mut olds: Vec<u32> = got.iter().step_by(2).copied().collect();
        olds.sort_unstable();
        let first = launch * threads;
        assert_eq!(olds, (first..first + threads).collect::<Vec<_>>(), "launch {launch}");
        for t in 0..threads as usize {
            assert_eq!(got[2 * t + 1], [10, 20, 30, 40][t % 4], "table entry of thread {t}");
        }
    }
    let read = |name: &str| {
        let bytes = module.read_global(name).expect(name);
        u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    };
    assert_eq!(read("counting::counter"), 2 * threads);
    assert_eq!(read("counting::same"), 2 * threads, "the kernel's `same`");
    assert_eq!(read("lookup::same"), 2 * threads * 100, "the function's `same`");
}

/// Module-scope `.global`/`.const` variables (`tests/ptx/memory/module_vars.ptx`):
/// initializers, persistence across launches, and host access through
/// `Module::read_global`/`write_global`.
#[test]
fn module_scope_variables_persist_and_are_host_accessible() {
    let Some(device) = device() else { return };
    let path = repo().join("tests/ptx/memory/module_vars.ptx");
    let module = load(&device, &path);
    let n = 1000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 7.0).collect();
    let xb = device.buffer_from(&x).expect("x");
    let out = device.zeroed::<u32>(2 * n as usize).expect("out");
    let coeffs = [1.0f32, 2.0, 0.5, 3.0];
    let table = [100u32, 200, 300];
    let expect = |scale: u32| -> Vec<u32> {
        (0..n)
            .flat_map(|i| {
                // (c·x)·c / c, each step rounded, with c read twice (const and generic).
                let c = coeffs[(i % 4) as usize];
                let v = ((c * x[i as usize]) * c / c).to_bits();
                [v.wrapping_add(table[(i % 3) as usize]), scale]
            })
            .collect()
    };
    let kernel = module.kernel("module_vars").expect("kernel");
    let args = [ptxvk::Arg::from(&xb), ptxvk::Arg::from(&out), ptxvk::Arg::from(n)];
    assert_eq!(module.read_global("scale").expect("scale"), 42u32.to_le_bytes());
    kernel.launch(n.div_ceil(128), 128, 0, &args).expect("launch");
    assert_eq!(out.to_vec().expect("read"), expect(42));
    assert_eq!(module.read_global("counter").expect("counter"), n.to_le_bytes());
    // The host changes `scale`; the counter keeps counting across launches.
    module.write_global("scale", &7u32.to_le_bytes()).expect("write");
    kernel.launch(n.div_ceil(128), 128, 0, &args).expect("launch");
    assert_eq!(out.to_vec().expect("read"), expect(7));
    assert_eq!(module.read_global("counter").expect("counter"), (2 * n).to_le_bytes());
    let table_bytes: Vec<u8> = [100u64, 200, 300].iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(module.read_global("table").expect("table"), table_bytes);
    assert!(module.read_global("nope").is_err());
    assert!(module.write_global("scale", &[0; 8]).is_err(), "8 bytes do not fit a u32");
}

/// `.func` calls with `.reg` parameters and results, a struct result, guarded calls,
/// label names shared by caller and callee, and a `.noreturn` function that exits
/// (`tests/ptx/memory/reg_calls.ptx`; semantics in its header).
#[test]
fn reg_parameters_guarded_calls_and_noreturn() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/reg_calls.ptx"));
    let n = 1000u32;
    let mut rng = Rng(11);
    let mut x: Vec<u32> = (0..n).map(|_| rng.next_u32() % 3000).collect();
    x[..4].copy_from_slice(&[0, 1, u32::MAX, 15]);
    let sentinel = 0x5555_5555u32;
    let mut want = vec![sentinel; 4 * n as usize + 4];
    for (i, &v) in x.iter().enumerate() {
        want[4 * i] = v / 7;
        want[4 * i + 1] = v % 7;
        if v % 2 == 1 {
            let below = u32::from(v < 100);
            want[4 * i + 2] = v.clamp(100, 1000) + 1 + 2 * below;
        }
        let y = v.wrapping_add(5);
        let w = (y / 3) * 10 + y % 3;
        want[4 * i + 3] = if v % 16 == 15 { 0xdead } else { w + 1 };
    }
    let xb = device.buffer_from(&x).expect("x");
    let out = device.buffer_from(&vec![sentinel; 4 * n as usize + 4]).expect("out");
    let kernel = module.kernel("reg_calls").expect("kernel");
    let args = [ptxvk::Arg::from(&xb), ptxvk::Arg::from(&out), ptxvk::Arg::from(n)];
    kernel.launch(n.div_ceil(64) + 1, 64, 0, &args).expect("launch");
    let got: Vec<u32> = out.to_vec().expect("read");
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "word {k} (thread {}, x = {:?})", k / 4, x.get(k / 4));
    }
}

/// Runs the litmus test `entry` of `tests/ptx/memory/litmus.ptx` `launches` times with
/// `instances` instances each, and returns how often each outcome `(r0, r1)` was seen.
fn litmus(
    device: &ptxvk::Device,
    module: &ptxvk::Module,
    entry: &str,
    launches: usize,
) -> BTreeMap<(u32, u32), usize> {
    const BLOCK: u32 = 256;
    const PAIRS: u32 = 32;
    let instances = (BLOCK * PAIRS) as usize;
    let kernel = module.kernel(entry).expect("kernel");
    let mut seen = BTreeMap::new();
    for _ in 0..launches {
        let a = device.zeroed::<u32>(instances).expect("a");
        let b = device.zeroed::<u32>(instances).expect("b");
        let out = device.zeroed::<u32>(2 * instances).expect("out");
        let args = [ptxvk::Arg::from(&a), ptxvk::Arg::from(&b), ptxvk::Arg::from(&out)];
        kernel.launch(2 * PAIRS, BLOCK, 0, &args).expect("launch");
        for r in out.to_vec().expect("read").chunks(2) {
            *seen.entry((r[0], r[1])).or_insert(0) += 1;
        }
    }
    seen
}

/// The litmus tests of the PTX memory model (ISA 9.2 §8.10) never show a forbidden
/// outcome: message passing with release/acquire, store buffering with `fence.sc`, and
/// read-read coherence, each over 40 launches of 8192 instances whose two threads run
/// in different workgroups.
#[test]
fn litmus_tests_show_no_forbidden_outcome() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/litmus.ptx"));
    type Forbidden = fn(u32, u32) -> bool;
    let cases: [(&str, Forbidden); 3] = [
        ("mp", |flag, data| flag == 1 && data == 0),
        ("sb", |r0, r1| r0 == 0 && r1 == 0),
        ("corr", |first, second| first == 1 && second == 0),
    ];
    for (entry, forbidden) in cases {
        let seen = litmus(&device, &module, entry, 40);
        eprintln!("litmus {entry}: outcomes (r0, r1) -> count: {seen:?}");
        let bad: usize = seen.iter().filter(|((a, b), _)| forbidden(*a, *b)).map(|(_, n)| n).sum();
        assert_eq!(bad, 0, "litmus {entry}: {bad} forbidden outcome(s) in {seen:?}");
    }
}

/// 256-bit `ld`/`st.global.v8.u32` and `.v4.b64` (`tests/ptx/memory/wide_vectors.ptx`).
#[test]
fn wide_vector_loads_and_stores() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/wide_vectors.ptx"));
    let n = 300u32;
    let mut rng = Rng(12);
    let a: Vec<u32> = (0..8 * n).map(|_| rng.next_u32()).collect();
    let c: Vec<u64> = (0..4 * n).map(|_| rng.next_u64()).collect();
    let want_d: Vec<u64> = c.chunks(4).flat_map(|w| w.iter().rev().copied()).collect();
    let (ab, cb) = (device.buffer_from(&a).expect("a"), device.buffer_from(&c).expect("c"));
    let bb = device.zeroed::<u32>(a.len()).expect("b");
    let db = device.zeroed::<u64>(c.len()).expect("d");
    let args = [
        ptxvk::Arg::from(&ab),
        ptxvk::Arg::from(&bb),
        ptxvk::Arg::from(&cb),
        ptxvk::Arg::from(&db),
        ptxvk::Arg::from(n),
    ];
    module.kernel("wide_vectors").expect("kernel").launch(3, 128, 0, &args).expect("launch");
    assert_eq!(bb.to_vec().expect("b"), a);
    assert_eq!(db.to_vec().expect("d"), want_d);
}

/// `bar.red` (`.popc`, `.and`, `.or`, with and without a thread count) and barriers
/// with a thread count covering the block, in 2-D blocks whose size is not a multiple
/// of the warp size (`tests/ptx/memory/barriers.ptx`).
#[test]
fn barrier_reductions_and_counts() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/barriers.ptx"));
    let kernel = module.kernel("bar_red").expect("kernel");
    let mut rng = Rng(14);
    for (block, blocks) in [([32u32, 3u32], 5u32), ([20, 3], 4), ([1, 1], 3)] {
        let per = (block[0] * block[1]) as usize;
        let n = per * blocks as usize;
        let mut v: Vec<u32> = (0..n).map(|_| rng.next_u32() % 9).collect();
        // Block 1 has no zero and no 7 (.and true, .or false); block 2 only sevens.
        for x in &mut v[per..2 * per] {
            *x = 1 + *x % 6;
        }
        if blocks > 2 {
            v[2 * per..3 * per].fill(7);
        }
        let mut want = Vec::with_capacity(4 * n);
        for b in v.chunks(per) {
            let odd = b.iter().filter(|&&x| x & 1 == 1).count() as u32;
            let all = u32::from(b.iter().all(|&x| x != 0));
            let any = u32::from(b.contains(&7));
            for _ in b {
                want.extend([odd, all, any, per as u32 - odd]);
            }
        }
        let vb = device.buffer_from(&v).expect("in");
        let out = device.zeroed::<u32>(4 * n).expect("out");
        kernel
            .launch(
                blocks,
                (block[0], block[1]),
                0,
                &[ptxvk::Arg::from(&vb), ptxvk::Arg::from(&out)],
            )
            .expect("launch");
        assert_eq!(out.to_vec().expect("read"), want, "block {block:?}");
    }
    // A barrier for one warp in a block of two fails the launch instead of hanging.
    let out = device.zeroed::<u32>(64).expect("out");
    let err = module
        .kernel("partial")
        .expect("kernel")
        .launch(1, 64, 0, &[ptxvk::Arg::from(&out)])
        .expect_err("partial barrier");
    assert!(
        err.to_string()
            .starts_with("kernel `partial` reached a barrier for 32 threads in block (0, 0, 0)"),
        "{err}"
    );
    // With one warp, 32 threads are the whole block.
    let out = device.zeroed::<u32>(32).expect("out");
    module
        .kernel("partial")
        .expect("kernel")
        .launch(1, 32, 0, &[ptxvk::Arg::from(&out)])
        .expect("one warp");
    assert_eq!(out.to_vec().expect("read"), vec![1; 32]);
}

/// An 8000-byte struct parameter (past the 4 KiB of old CUDA; PTX ISA 8.1 allows
/// 32,764 bytes) read at offsets across the block (`tests/ptx/memory/big_params.ptx`).
#[test]
fn parameter_blocks_above_4_kib() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/big_params.ptx"));
    let mut rng = Rng(15);
    let s: Vec<u8> = (0..8000).map(|_| rng.next_u32() as u8).collect();
    let word = |k: usize| u32::from_le_bytes(s[4 * k..4 * k + 4].try_into().expect("4 bytes"));
    let out = device.zeroed::<u32>(32).expect("out");
    let args = [ptxvk::Arg::Bytes(s.clone()), ptxvk::Arg::from(&out)];
    module.kernel("big_params").expect("kernel").launch(1, 1, 0, &args).expect("launch");
    let mut want: Vec<u32> = [0, 1, 1023, 1024, 1025, 1999].map(word).to_vec();
    want.extend([word(1998), word(1999)]);
    assert_eq!(out.to_vec().expect("read")[..8], want);
}

/// A kernel parameter's address: `.param` addresses in registers, `cvta.param` to a
/// generic address and back, `isspacep.param` (`tests/ptx/memory/param_address.ptx`).
#[test]
fn kernel_parameter_addresses() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/param_address.ptx"));
    let s: [u32; 4] = [0x1111_2222, 0x3333_4444, 0xdead_beef, 7];
    let bytes: Vec<u8> = s.iter().flat_map(|w| w.to_le_bytes()).collect();
    let out = device.zeroed::<u32>(7).expect("out");
    let args = [ptxvk::Arg::Bytes(bytes), ptxvk::Arg::from(&out)];
    module.kernel("param_address").expect("kernel").launch(1, 1, 0, &args).expect("launch");
    assert_eq!(out.to_vec().expect("read"), vec![s[0], s[1], s[2], s[3], 1, 0, 1]);
}

/// `alloca`/`stacksave`/`stackrestore`, with a device function's allocation freed when
/// it returns, and an allocation past the 1 KiB stack failing the launch
/// (`tests/ptx/memory/stack.ptx`).
#[test]
fn stack_allocation() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/stack.ptx"));
    let out = device.zeroed::<u32>(4 * 64).expect("out");
    module
        .kernel("stack")
        .expect("kernel")
        .launch(1, 64, 0, &[ptxvk::Arg::from(&out)])
        .expect("launch");
    let want: Vec<u32> = (0..64u32)
        .flat_map(|t| {
            let k = 1 + t % 16;
            let s: u32 = (0..k).map(|j| t * 100 + j).sum();
            [s, 3 * k * (k - 1) / 2, 1, 1]
        })
        .collect();
    assert_eq!(out.to_vec().expect("read"), want);
    let err = module
        .kernel("overflow")
        .expect("kernel")
        .launch(1, 1, 0, &[ptxvk::Arg::from(&out)])
        .expect_err("overflow");
    assert!(
        err.to_string().contains(
            "ran out of stack in block (0, 0, 0), thread (0, 0, 0): `alloca` of 2048 bytes"
        ),
        "{err}"
    );
}

/// Address initializers (`var`, `generic(var)`) in `.global` and `.const` tables,
/// patched when the module loads (`tests/ptx/memory/address_init.ptx`).
#[test]
fn address_initializers() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/address_init.ptx"));
    let out = device.zeroed::<u32>(4).expect("out");
    module
        .kernel("address_init")
        .expect("kernel")
        .launch(1, 1, 0, &[ptxvk::Arg::from(&out)])
        .expect("launch");
    assert_eq!(out.to_vec().expect("read"), vec![30, 40, 20, 1]);
}

/// `atom`/`red.add.noftz` on `.f16`, `.bf16`, `.f16x2`, `.bf16x2` and `atom.cas.b16`,
/// 256 threads on the same words of global and shared memory; two 16-bit counters share
/// one word, so neither may clobber the other (`tests/ptx/memory/half_atomics.ptx`, and
/// `half_atomics_a32.ptx`, the same kernel with `.address_size 32`).
#[test]
fn half_precision_atomics_under_contention() {
    for file in ["half_atomics.ptx", "half_atomics_a32.ptx"] {
        half_precision_atomics_of(file);
    }
}

fn half_precision_atomics_of(file: &str) {
    use half::{bf16, f16};
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory").join(file));
    let mut init = vec![0u32; 8];
    init[6] = 0xabcd_0000;
    let g = device.buffer_from(&init).expect("g");
    module
        .kernel("half_atomics")
        .expect("kernel")
        .launch(1, 256, 0, &[ptxvk::Arg::from(&g)])
        .expect("launch");
    let got = g.to_vec().expect("read");
    let h = |x: f32| u32::from(f16::from_f32(x).to_bits());
    let b = |x: f32| u32::from(bf16::from_f32(x).to_bits());
    let pair = |lo: u32, hi: u32| lo | hi << 16;
    let sums = [pair(h(256.0), b(256.0)), pair(h(256.0), h(512.0)), pair(b(256.0), b(128.0))];
    assert_eq!(got[..3], sums, "{file}: global");
    assert_eq!(got[3..6], sums, "{file}: shared");
    let winner = got[6] & 0xffff;
    assert!((1..=256).contains(&winner), "{file}: cas.b16 result {winner}");
    assert_eq!(got[6] >> 16, 0xabcd, "{file}: the other half of the cas word");
    assert_eq!(got[7], 1, "{file}: exactly one thread sees the initial 0");
}

#[test]
fn shared_memory_size_registers_report_the_launch() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/smem_size.ptx"));
    let kernel = module.kernel("smem_size").expect("kernel");
    // The module declares 20 static bytes; each launch adds its own dynamic bytes, and
    // two sizes must not share one pipeline's answer.
    for dynamic in [100u32, 64, 4] {
        let out = device.zeroed::<u32>(3).expect("buffer");
        kernel.launch(1, 32, dynamic, &[ptxvk::Arg::from(&out)]).expect("launch");
        assert_eq!(out.to_vec().expect("read"), [dynamic, 20 + dynamic, 20 + dynamic]);
    }
}

#[test]
fn generic_atomics_dispatch_on_the_address_window() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/generic_atomics.ptx"));
    let kernel = module.kernel("generic_atomics").expect("kernel");
    for threads in [1u32, 2, 37, 64] {
        // Words 0..3: the global counters (even threads); 3..6: the shared ones (odd).
        let out = device.zeroed::<u32>(6).expect("buffer");
        kernel.launch(1, threads, 0, &[ptxvk::Arg::from(&out)]).expect("launch");
        let got = out.to_vec().expect("read");
        let (even, odd): (Vec<u32>, Vec<u32>) = (0..threads).partition(|t| t % 2 == 0);
        // Whole numbers below 2^24: exact in any order of addition.
        let sum = |v: &[u32]| v.iter().fold(0.0f32, |s, &t| s + t as f32);
        let want = [
            even.len() as u32,
            even.iter().copied().max().unwrap_or(0),
            sum(&even).to_bits(),
            odd.len() as u32,
            odd.iter().copied().max().unwrap_or(0),
            sum(&odd).to_bits(),
        ];
        assert_eq!(got, want, "{threads} threads");
    }
}

/// The CPU model of `tests/kernels/big_shared.cu` (its header comment): each thread's
/// sum and each block's total.
fn big_shared_model(input: &[u32], grid: u32, n: u32) -> (Vec<u32>, Vec<u64>) {
    const WORDS: u32 = 9216;
    const BYTES: u32 = 4096;
    let mut out = Vec::new();
    let mut sums = Vec::new();
    for b in 0..grid {
        let words: Vec<u32> = (0..WORDS)
            .map(|i| {
                input[(b.wrapping_mul(7).wrapping_add(i) % 4096) as usize]
                    ^ i.wrapping_mul(2_654_435_761)
            })
            .collect();
        let bytes: Vec<u8> = (0..BYTES).map(|i| b.wrapping_add(i * 3) as u8).collect();
        let mut total = 0u64;
        for t in 0..n {
            let mut s = 0u32;
            for i in (t..WORDS).step_by(n as usize) {
                s = s.wrapping_add(words[(WORDS - 1 - i) as usize]);
            }
            for i in (t..BYTES).step_by(n as usize) {
                s = s.wrapping_add(u32::from(bytes[(BYTES - 1 - i) as usize]) << (i & 7));
            }
            out.push(s);
            total += u64::from(s);
        }
        sums.push(total);
    }
    (out, sums)
}

/// Shared memory beyond the device's (`pass::shared_in_memory`): `big_shared.cu`'s
/// 40,968 static bytes, more than lavapipe's 32 KiB, from all six compilers. On a device
/// with less on-chip shared memory than that, the window is in device memory, a slice
/// per block, and the kernel computes what the CPU model of its header comment does:
/// word, byte and 64-bit atomic accesses, barriers, and blocks that never see each
/// other's data, over a grid cut into several dispatches that reuse one area. Compiled
/// for the same device with the window on chip, the launch is refused for the limit.
#[test]
fn shared_memory_beyond_the_device_limit_lives_in_device_memory() {
    let Some(device) = device() else { return };
    let on_chip = device.info().limits.max_shared_memory_bytes;
    let mut rng = Rng(0x05ee_db16);
    let input: Vec<u32> = (0..4096).map(|_| rng.next_u64() as u32).collect();
    let input_buf = device.buffer_from(&input).expect("upload");
    for (i, path) in variants("big_shared").iter().enumerate() {
        let module = load(&device, path);
        let kernel = module.kernel("big_shared").expect("kernel");
        let too_big = kernel.info().static_shared_bytes > on_chip;
        // Racecheck keeps the window on chip, with its shadow, and refuses the launch.
        let racecheck = device.target().racecheck;
        let moved = too_big && !racecheck;
        assert_eq!(kernel.info().shared_in_device_memory, moved, "{}", path.display());
        if too_big && racecheck {
            let out = device.zeroed::<u32>(64).expect("out");
            let sums = device.zeroed::<u64>(1).expect("sums");
            let args =
                [ptxvk::Arg::from(&input_buf), ptxvk::Arg::from(&out), ptxvk::Arg::from(&sums)];
            let err = kernel.launch(1, 64, 0, &args).expect_err("racecheck refuses it");
            assert!(err.to_string().contains("run it with memcheck only"), "{err}");
            continue;
        }
        // One variant gets a grid of several dispatches (16 MiB of windows hold 407 of
        // these blocks) and a block with a partial warp.
        let (grid, block) = if i == 0 { (900, 96) } else { (40, 64) };
        let out = device.zeroed::<u32>((grid * block) as usize).expect("out");
        let sums = device.zeroed::<u64>(grid as usize).expect("sums");
        let args = [ptxvk::Arg::from(&input_buf), ptxvk::Arg::from(&out), ptxvk::Arg::from(&sums)];
        let stats = kernel
            .launch(grid, block, 0, &args)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if moved && i == 0 {
            assert!(stats.dispatches >= 3, "{} dispatches", stats.dispatches);
        }
        let (want_out, want_sums) = big_shared_model(&input, grid, block);
        assert!(out.to_vec().expect("read") == want_out, "{}: per-thread sums", path.display());
        assert_eq!(sums.to_vec().expect("read"), want_sums, "{}: block totals", path.display());
    }
    // The same kernel with its window on chip does not fit this device.
    let path = &variants("big_shared")[0];
    let target = ptxvk::compile::Target { shared_memory_bytes: None, ..device.target() };
    let module = load_for(&device, path, target);
    let kernel = module.kernel("big_shared").expect("kernel");
    if kernel.info().static_shared_bytes > on_chip {
        let out = device.zeroed::<u32>(64).expect("out");
        let sums = device.zeroed::<u64>(1).expect("sums");
        let args = [ptxvk::Arg::from(&input_buf), ptxvk::Arg::from(&out), ptxvk::Arg::from(&sums)];
        let err = kernel.launch(1, 64, 0, &args).expect_err("a window on chip exceeds the device");
        assert!(err.to_string().contains("maxComputeSharedMemorySize"), "{err}");
    }
}

/// Out-of-range shared addresses, undefined in PTX, stay inside the block's window
/// (clamped to its last word) instead of reaching memory past it: on lavapipe that is
/// the host's heap, and a wild store corrupted it. `shared_out_of_range.ptx` stores past
/// both ends of a 64-word window and loads far past it. Checked and confined launches
/// (lavapipe's default) report the accesses instead.
#[test]
fn out_of_range_shared_accesses_stay_in_the_window() {
    let Some(device) = device() else { return };
    let module = load(&device, &repo().join("tests/ptx/memory/shared_out_of_range.ptx"));
    let kernel = module.kernel("shared_out_of_range").expect("kernel");
    let out = device.zeroed::<u32>(128).expect("out");
    let launched = kernel.launch(1, 64, 0, &[ptxvk::Arg::from(&out)]);
    if device.target().check || device.target().confine {
        let err = launched.expect_err("memcheck and confinement report the accesses");
        assert!(err.to_string().contains("out of bounds"), "{err}");
        return;
    }
    launched.expect("launch");
    const DEAD: u32 = 0xdead;
    let want: Vec<u32> = (0..64)
        .map(|t| if t == 63 { DEAD } else { t })
        .chain(std::iter::repeat_n(DEAD, 64))
        .collect();
    assert_eq!(out.to_vec().expect("read"), want);
}

/// `ptx` compiled for the portable target, and its SPIR-V's disassembly.
fn portable_with_spirv(name: &str, ptx: &str) -> (ptxvk::compile::Compiled, String) {
    let target = ptxvk::compile::Target::portable();
    let compiled = ptxvk::compile::compile_with(name, ptx, None, target).expect("compiles");
    let text = ptxvk::spirv::disassemble(&compiled.spirv.words).expect("disassembles");
    (compiled, text)
}

/// Strong stores and loads through registers wider than the access (PTX ISA 9.2 §5.2.2:
/// a store writes the register's low bits, a load extends into it) stay single-copy
/// atomic accesses (§8.4-8.6: `pass::expand_strong` moves them through a register of the
/// access's width): 64 threads store the low halves of 64-bit values with
/// `st.relaxed`/`.release`/`.volatile` to global and shared memory, load 32-bit halves
/// into 64-bit registers with `ld.relaxed.s32` and `ld.acquire.u32`, and, in a kernel
/// whose shared window has 64-bit words (a 64-bit shared atomic), store 16- and 8-bit
/// parts of wider registers next to their neighbours' in the same word.
#[test]
fn strong_accesses_through_wider_registers_stay_atomic() {
    let ptx = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry strong_wide(.param .u64 out, .param .u64 in)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<16>;
    .shared .align 4 .b8 words[256];
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd2, %rd3;
    mul.wide.u32 %rd5, %r1, 32;
    add.s64 %rd6, %rd1, %rd5;
    ld.global.u64 %rd7, [%rd4];
    shr.u64 %rd8, %rd7, 16;
    xor.b64 %rd9, %rd7, -1;
    st.relaxed.gpu.global.u32 [%rd6], %rd7;
    st.release.gpu.global.u32 [%rd6+4], %rd8;
    st.volatile.global.u32 [%rd6+8], %rd9;
    mov.u32 %r2, words;
    shl.b32 %r3, %r1, 2;
    add.s32 %r4, %r2, %r3;
    st.relaxed.cta.shared.u32 [%r4], %rd8;
    bar.sync 0;
    add.s32 %r5, %r1, 1;
    and.b32 %r5, %r5, 63;
    shl.b32 %r5, %r5, 2;
    add.s32 %r5, %r2, %r5;
    ld.relaxed.cta.shared.u32 %rd10, [%r5];
    st.global.u32 [%rd6+12], %rd10;
    ld.relaxed.gpu.global.s32 %rd11, [%rd4+4];
    st.global.u64 [%rd6+16], %rd11;
    ld.acquire.gpu.global.u32 %rd12, [%rd4+4];
    st.global.u64 [%rd6+24], %rd12;
    ret;
}

.visible .entry strong_narrow_shared(.param .u64 out, .param .u64 in)
{
    .reg .b16 %h<2>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<12>;
    .shared .align 8 .b8 window[384];
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u64 %rd5, [%rd4];
    cvt.u32.u64 %r2, %rd5;
    mov.u32 %r3, window;
    shl.b32 %r4, %r1, 1;
    add.s32 %r4, %r3, %r4;
    st.relaxed.cta.shared.u16 [%r4], %r2;
    add.s32 %r5, %r3, %r1;
    st.volatile.shared.u8 [%r5+128], %rd5;
    atom.shared.add.u64 %rd6, [%r3+256], %rd5;
    bar.sync 0;
    add.s32 %r6, %r1, 1;
    and.b32 %r6, %r6, 63;
    shl.b32 %r7, %r6, 1;
    add.s32 %r7, %r3, %r7;
    ld.shared.u16 %r8, [%r7];
    add.s32 %r9, %r3, %r6;
    ld.shared.u8 %r10, [%r9+128];
    shl.b32 %r10, %r10, 16;
    or.b32 %r8, %r8, %r10;
    mul.wide.u32 %rd7, %r1, 4;
    add.s64 %rd8, %rd1, %rd7;
    st.global.u32 [%rd8], %r8;
    ret;
}
"#;
    let (compiled, text) = portable_with_spirv("strong_wide.ptx", ptx);
    let count = |op: &str| text.lines().filter(|l| l.contains(op)).count();
    // Four strong stores and three strong loads in `strong_wide`, each one atomic.
    assert!(count("OpAtomicStore") >= 4, "atomic stores:\n{text}");
    assert!(count("OpAtomicLoad") >= 3, "atomic loads:\n{text}");
    let Some(device) = device() else { return };
    const N: usize = 64;
    let input: Vec<u64> =
        (0..N as u64).map(|t| (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (t << 63)).collect();
    let lo = |x: u64| x as u32;
    let hi = |x: u64| (x >> 32) as u32;
    let want_wide: Vec<u32> = (0..N)
        .flat_map(|t| {
            let x = input[t];
            let signed = i64::from(hi(x) as i32) as u64;
            [
                lo(x),
                lo(x >> 16),
                lo(!x),
                lo(input[(t + 1) % N] >> 16),
                lo(signed),
                hi(signed),
                hi(x),
                0,
            ]
        })
        .collect();
    let want_narrow: Vec<u32> = (0..N)
        .map(|t| {
            let x = input[(t + 1) % N];
            (x & 0xffff) as u32 | ((x & 0xff) as u32) << 16
        })
        .collect();
    let module = ptxvk::Module::from_compiled(&device, compiled).expect("module");
    let src = device.buffer_from(&input).expect("input");
    for (entry, want) in [("strong_wide", want_wide), ("strong_narrow_shared", want_narrow)] {
        let out = device.zeroed::<u32>(want.len()).expect("output");
        let args = [ptxvk::Arg::from(&out), ptxvk::Arg::from(&src)];
        module.kernel(entry).expect("kernel").launch(1, N as u32, 0, &args).expect("launch");
        assert_eq!(out.to_vec().expect("read"), want, "{entry}");
    }
}

/// Strong 8- and 16-bit accesses to global and shared memory are single-copy atomic
/// (PTX ISA 9.2 §8.4-8.6): a store is a compare-and-swap loop on the containing 32-bit
/// word, a load an atomic load of it (`pass::legalize_atomics`). 128 threads store bytes
/// and halves next to each other's in the same words at the same time (`st.relaxed.u8`
/// of a 64-bit register's low bits, `st.release.b16`, `st.volatile.u8`; a byte store
/// must leave its neighbours' bytes alone), load bytes and halves of their input
/// (`ld.relaxed.u8`, `ld.acquire.s16` into a 32-bit register, `ld.volatile.s8` into a
/// 64-bit one, extended by their signedness, §5.2.2), and a byte a neighbour stored
/// into the shared window (`st.relaxed.cta.shared.u8`, `ld.acquire.cta.shared.u8`).
#[test]
fn strong_narrow_accesses_are_atomic() {
    let ptx = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry strong_bytes(.param .u64 out, .param .u64 in)
{
    .reg .b16 %h<2>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<16>;
    .shared .align 4 .b8 bytes[128];
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u64 %rd5, [%rd4];
    cvt.u64.u32 %rd6, %r1;
    add.s64 %rd7, %rd1, %rd6;
    st.relaxed.gpu.global.u8 [%rd7], %rd5;
    shr.u64 %rd8, %rd5, 8;
    cvt.u16.u64 %h1, %rd8;
    mul.wide.u32 %rd9, %r1, 2;
    add.s64 %rd10, %rd1, %rd9;
    st.release.gpu.global.b16 [%rd10+128], %h1;
    cvt.u32.u64 %r2, %rd5;
    shr.u32 %r3, %r2, 24;
    st.volatile.global.u8 [%rd7+384], %r3;
    ld.relaxed.gpu.global.u8 %r4, [%rd4+1];
    ld.acquire.gpu.global.s16 %r5, [%rd4+2];
    ld.volatile.global.s8 %rd11, [%rd4+7];
    mov.u32 %r6, bytes;
    add.s32 %r7, %r6, %r1;
    st.relaxed.cta.shared.u8 [%r7], %r4;
    bar.sync 0;
    add.s32 %r8, %r1, 1;
    and.b32 %r8, %r8, 127;
    add.s32 %r9, %r6, %r8;
    ld.acquire.cta.shared.u8 %r10, [%r9];
    mul.wide.u32 %rd12, %r1, 16;
    add.s64 %rd13, %rd1, %rd12;
    st.global.u32 [%rd13+512], %r5;
    st.global.u32 [%rd13+516], %r10;
    st.global.u64 [%rd13+520], %rd11;
    ret;
}
"#;
    let (compiled, text) = portable_with_spirv("strong_bytes.ptx", ptx);
    let count = |op: &str| text.lines().filter(|l| l.contains(op)).count();
    // Four strong narrow stores (a loop each) and four strong narrow loads.
    assert!(count("OpAtomicCompareExchange") >= 4, "compare-and-swaps:\n{text}");
    assert!(count("OpAtomicLoad") >= 4, "atomic loads:\n{text}");
    let Some(device) = device() else { return };
    const N: usize = 128;
    let input: Vec<u64> =
        (0..N as u64).map(|t| (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 0x0101_0101).collect();
    let mut want = vec![0u8; 512 + 16 * N];
    for (t, &x) in input.iter().enumerate() {
        want[t] = x as u8;
        want[128 + 2 * t..][..2].copy_from_slice(&((x >> 8) as u16).to_le_bytes());
        want[384 + t] = (x >> 24) as u8;
        let half = i32::from((x >> 16) as u16 as i16);
        let neighbour = u32::from((input[(t + 1) % N] >> 8) as u8);
        let byte = i64::from((x >> 56) as u8 as i8);
        let row = &mut want[512 + 16 * t..][..16];
        row[..4].copy_from_slice(&half.to_le_bytes());
        row[4..8].copy_from_slice(&neighbour.to_le_bytes());
        row[8..].copy_from_slice(&byte.to_le_bytes());
    }
    let module = ptxvk::Module::from_compiled(&device, compiled).expect("module");
    let src = device.buffer_from(&input).expect("input");
    let out = device.zeroed::<u8>(want.len()).expect("output");
    let args = [ptxvk::Arg::from(&out), ptxvk::Arg::from(&src)];
    module.kernel("strong_bytes").expect("kernel").launch(1, N as u32, 0, &args).expect("launch");
    assert_eq!(out.to_vec().expect("read"), want);
}
