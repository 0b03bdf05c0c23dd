//! Legacy PTX (ISA 1.x-2.x, the CUDA 2-3 era) with 32-bit addresses, end to end
//! (`tests/ptx/legacy/`): modules without `.address_size`, whose global addresses are
//! 32-bit offsets into the device's address window (`Device::address_window`), with the
//! syntax of that era (16-bit special registers, prototypes without `;`). Each is checked
//! against a CPU reference; ptxas no longer accepts 32-bit modules, so the files follow
//! the ISA text.

mod common;

use common::*;

fn legacy(name: &str) -> String {
    std::fs::read_to_string(repo().join("tests/ptx/legacy").join(name)).expect("read PTX")
}

/// `tests/ptx/legacy/NAME` loaded on the default device; without one (the test then
/// says so loudly), it is only lowered.
fn load(name: &str) -> Option<(ptxvk::Device, ptxvk::Module)> {
    let ptx = legacy(name);
    let Some(device) = device() else {
        ptxvk::compile::lower(name, &ptx, None).expect("lowers");
        return None;
    };
    let module = ptxvk::Module::from_ptx(&device, &ptx).expect("module");
    Some((device, module))
}

/// `vecadd_isa14.ptx`: c[i] = a[i] + b[i], in two blocks of which the second is partly
/// past n; the sentinel after c stays.
#[test]
fn vector_add_in_isa_1_4() {
    let Some((device, module)) = load("vecadd_isa14.ptx") else { return };
    let n = 100usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i * i) as f32).collect();
    let (ab, bb) = (device.buffer_from(&a).expect("a"), device.buffer_from(&b).expect("b"));
    let cb = device.buffer_from(&vec![-1.0f32; n + 1]).expect("c");
    let args = [
        ptxvk::Arg::from(&ab),
        ptxvk::Arg::from(&bb),
        ptxvk::Arg::from(&cb),
        ptxvk::Arg::from(n as i32),
    ];
    let kernel = module.kernel("_Z6vecAddPKfS0_Pfi").expect("kernel");
    kernel.launch(2, 64, 0, &args).expect("launch");
    let mut want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    want.push(-1.0);
    assert_eq!(cb.to_vec().expect("read"), want);
}

/// `block_sum_isa14.ptx`: the shared-memory tree sum of each block of 256, in the
/// tree's order (small integers, so any order gives the same sums anyway).
#[test]
fn shared_memory_block_sum_in_isa_1_4() {
    let Some((device, module)) = load("block_sum_isa14.ptx") else { return };
    let blocks = 3usize;
    let input: Vec<f32> = (0..256 * blocks).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
    let ib = device.buffer_from(&input).expect("in");
    let ob = device.zeroed::<f32>(blocks).expect("out");
    let args = [ptxvk::Arg::from(&ib), ptxvk::Arg::from(&ob)];
    module
        .kernel("block_sum")
        .expect("kernel")
        .launch(blocks as u32, 256, 0, &args)
        .expect("launch");
    let want: Vec<f32> = input.chunks(256).map(|c| c.iter().sum()).collect();
    assert_eq!(ob.to_vec().expect("read"), want);
}

/// `calls_isa20.ptx`: a device function, a `.const` table and a `.global` counter
/// addressed as 32-bit values, a 32-bit atomic; the counter's old values are a
/// permutation and it ends at n, also as the host reads it.
#[test]
fn calls_tables_and_atomics_in_isa_2_0() {
    let Some((device, module)) = load("calls_isa20.ptx") else { return };
    let n = 150usize;
    let out = device.zeroed::<u32>(2 * n).expect("out");
    let args = [ptxvk::Arg::from(&out), ptxvk::Arg::from(n as u32)];
    module.kernel("legacy_calls").expect("kernel").launch(3, 64, 0, &args).expect("launch");
    let got = out.to_vec().expect("read");
    let table = [5u32, 7, 11, 13];
    let mut olds = Vec::new();
    for i in 0..n {
        assert_eq!(got[2 * i], table[i % 4] * (3 * i as u32 + 1), "element {i}");
        olds.push(got[2 * i + 1]);
    }
    olds.sort_unstable();
    assert_eq!(olds, (0..n as u32).collect::<Vec<_>>());
    let counter = module.read_global("counter").expect("counter");
    assert_eq!(u32::from_le_bytes([counter[0], counter[1], counter[2], counter[3]]), n as u32);
}

/// A buffer allocated before the first 32-bit module was loaded lies outside the
/// address window: passing it is a clear error, not a wrong address.
#[test]
fn a_buffer_outside_the_window_is_refused() {
    let Some(_) = device() else { return };
    // A device of its own, so that no other test has opened its window yet.
    let device = ptxvk::Device::default_device().expect("device");
    let early = device.zeroed::<f32>(4).expect("alloc");
    let module = ptxvk::Module::from_ptx(&device, &legacy("vecadd_isa14.ptx")).expect("module");
    let late = device.zeroed::<f32>(4).expect("alloc");
    let args = [
        ptxvk::Arg::from(&early),
        ptxvk::Arg::from(&late),
        ptxvk::Arg::from(&late),
        ptxvk::Arg::from(4i32),
    ];
    let err = module.kernel("_Z6vecAddPKfS0_Pfi").expect("kernel").launch(1, 4, 0, &args);
    let message = err.expect_err("refused").to_string();
    assert!(message.contains("outside the 32-bit address window"), "{message}");
}

/// `generic_isa20.ptx`: 32-bit generic addresses of shared, local and global memory
/// (`cvta.shared.u32`, `cvta.local.u32`, `isspacep`, generic loads, stores and atomics,
/// `cvta.to.shared.u32`), as its header defines.
#[test]
fn generic_addressing_with_32_bit_addresses() {
    let Some((device, module)) = load("generic_isa20.ptx") else { return };
    let input: Vec<u32> = (0..64u32).map(|t| t * 1000 + 7).collect();
    let ib = device.buffer_from(&input).expect("in");
    let ob = device.zeroed::<u32>(257).expect("out");
    let args = [ptxvk::Arg::from(&ib), ptxvk::Arg::from(&ob)];
    module.kernel("generic32").expect("kernel").launch(1, 64, 0, &args).expect("launch");
    let got = ob.to_vec().expect("read");
    // shared: isspacep.shared only (1); local: isspacep.local only (2 << 4); global:
    // isspacep.global only (4 << 8).
    let spaces = 1 | (2 << 4) | (4 << 8);
    let mut olds = Vec::new();
    for t in 0..64usize {
        assert_eq!(got[4 * t], input[63 - t], "thread {t}: the shared value");
        assert_eq!(got[4 * t + 1], spaces, "thread {t}: isspacep");
        assert_eq!(got[4 * t + 2], 3 * t as u32, "thread {t}: the local value");
        olds.push(got[4 * t + 3]);
    }
    olds.sort_unstable();
    assert_eq!(olds, (0..64).collect::<Vec<u32>>());
    assert_eq!(got[256], 64, "the counter");
}

/// `generic_isa20.ptx`, `param32`: a kernel parameter read through its 32-bit generic
/// address (`cvta.param.u32`), and `isspacep.param` of it.
#[test]
fn generic_address_of_a_kernel_parameter_with_32_bit_addresses() {
    let Some((device, module)) = load("generic_isa20.ptx") else { return };
    let ib = device.buffer_from(&[0x1234_5678u32, 9]).expect("in");
    let ob = device.zeroed::<u32>(2).expect("out");
    let args = [ptxvk::Arg::from(&ib), ptxvk::Arg::from(&ob)];
    module.kernel("param32").expect("kernel").launch(1, 1, 0, &args).expect("launch");
    assert_eq!(ob.to_vec().expect("read"), [0x1234_5678, 1]);
}

/// f32 `x` with subnormals flushed to sign-preserving zero (`.ftz`).
fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// The sm_1x `mad.f32` of PTX ISA 1.x: the product truncated to f32 (exact in f64,
/// then rounded toward zero), added with rounding to nearest; subnormal inputs and
/// results flushed; `.sat` clamps to [0, 1] (NaN to 0).
fn mad_sm1x(a: f32, b: f32, c: f32, sat: bool) -> f32 {
    let exact = f64::from(flush(a)) * f64::from(flush(b));
    let mut product = exact as f32;
    if f64::from(product).abs() > exact.abs() {
        product = f32::from_bits(product.to_bits() - 1);
    }
    let sum = flush(flush(product) + flush(c));
    if sat {
        if sum.is_nan() {
            0.0
        } else {
            sum.clamp(0.0, 1.0)
        }
    } else {
        sum
    }
}

/// `defaults_isa13.ptx`: an ISA 1.3 module's `mad.f32` without a rounding is sm_1x's
/// truncated-product multiply-add (checked against its model), and its `sin`, `cos`,
/// `lg2`, `ex2`, `rcp`, `sqrt` and `div` without modes are the `.approx.ftz` forms (the
/// same bits as the explicit forms of the module's second kernel).
#[test]
fn isa_1_3_default_modes() {
    let Some((device, module)) = load("defaults_isa13.ptx") else { return };
    let n = 64usize;
    let mut rng = Rng(44);
    let words: Vec<u64> = (0..3 * n).map(|_| rng.next_u64()).collect();
    let value = |w: u64| {
        let bits = (w as u32) & 0x3fff_ffff | ((w >> 33) as u32 & 1) << 31;
        let x = f32::from_bits(bits);
        if x.is_finite() {
            x
        } else {
            1.5
        }
    };
    let mut a: Vec<f32> = words[..n].iter().map(|&w| value(w)).collect();
    let b: Vec<f32> = words[n..2 * n].iter().map(|&w| value(w)).collect();
    let c: Vec<f32> = words[2 * n..].iter().map(|&w| value(w) * 0.75).collect();
    // A subnormal input and values whose product needs truncation.
    a[0] = f32::from_bits(0x0000_0400);
    a[1] = 1.0 + f32::EPSILON;
    let buffers = [&a, &b, &c].map(|v| device.buffer_from(v).expect("input"));
    let run = |entry: &str| {
        let out = device.zeroed::<f32>(10 * n).expect("out");
        let args = [
            ptxvk::Arg::from(&buffers[0]),
            ptxvk::Arg::from(&buffers[1]),
            ptxvk::Arg::from(&buffers[2]),
            ptxvk::Arg::from(&out),
        ];
        module.kernel(entry).expect("kernel").launch(1, n as u32, 0, &args).expect("launch");
        out.to_vec().expect("read")
    };
    let (defaults, explicit) = (run("defaults"), run("explicit"));
    for i in 0..n {
        let row = &defaults[10 * i..10 * i + 10];
        let want = [mad_sm1x(a[i], b[i], c[i], false), mad_sm1x(a[i], b[i], c[i], true)];
        assert_eq!(
            [row[0].to_bits(), row[1].to_bits()],
            want.map(f32::to_bits),
            "mad at {i}: {} * {} + {}",
            a[i],
            b[i],
            c[i]
        );
        let bits = |s: &[f32]| s.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&row[2..9]),
            bits(&explicit[10 * i + 2..10 * i + 9]),
            "defaults at {i} (x = {})",
            a[i]
        );
    }
}
