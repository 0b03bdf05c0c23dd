//! Asynchronous copies end to end (issue #19): `tests/kernels/async_copy.cu`, built by
//! nvcc for sm_80, sm_89 and sm_90 (inline `cp.async` of every size with `src-size`
//! and `ignore-src`, the pipeline primitives of <cuda_pipeline.h>, and libcu++'s
//! `cuda::memcpy_async` double-buffered through a thread-scope `cuda::pipeline`),
//! against CPU models of the ISA's semantics.

mod common;

use ptxvk::{Arg, Device};

fn variants() -> Vec<std::path::PathBuf> {
    ["sm_80", "sm_89", "sm_90"]
        .iter()
        .map(|a| common::repo().join(format!("tests/kernels/async_copy.nvcc.{a}.ptx")))
        .collect()
}

/// What lane `l` of `cp_forms` leaves in its 16 words (the kernel's header comment).
fn cp_forms_model(src: &[u32], l: usize) -> Vec<u32> {
    let word = |i: usize| src[16 * l + i];
    let mut out = vec![0u32; 16];
    out[..4].copy_from_slice(&src[16 * l..16 * l + 4]);
    out[4] = word(4);
    out[5] = word(5);
    out[6] = word(6);
    // src-size = l % 17 bytes of the 16 at word 8; the rest zero.
    let bytes: Vec<u8> = (8..12).flat_map(|i| word(i).to_le_bytes()).collect();
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let kept: Vec<u8> = chunk
            .iter()
            .enumerate()
            .map(|(j, &b)| if 4 * i + j < l % 17 { b } else { 0 })
            .collect();
        out[8 + i] = u32::from_le_bytes([kept[0], kept[1], kept[2], kept[3]]);
    }
    if !l.is_multiple_of(3) {
        out[12..16].copy_from_slice(&src[16 * l + 12..16 * l + 16]);
    }
    out
}

fn run_variant(device: &Device, path: &std::path::Path) {
    let module = common::load(device, path);
    let name = path.display();
    let mut rng = common::Rng(0xa5c0);

    let src: Vec<u32> = (0..32 * 16).map(|_| rng.next_u32() | 0x0101_0101).collect();
    let (input, out) =
        (device.buffer_from(&src).expect("src"), device.zeroed::<u32>(512).expect("out"));
    let kernel = module.kernel("cp_forms").expect("cp_forms");
    kernel
        .launch([1, 1, 1], [32, 1, 1], 0, &[Arg::from(&input), Arg::from(&out)])
        .expect("cp_forms");
    let got = out.to_vec().expect("read");
    for l in 0..32 {
        assert_eq!(
            &got[16 * l..16 * l + 16],
            cp_forms_model(&src, l).as_slice(),
            "{name} cp_forms lane {l}"
        );
    }

    let n = 4 * 64;
    let data: Vec<f32> = (0..n).map(|_| rng.next_u32() as f32 / 7.0).collect();
    let (input, out) =
        (device.buffer_from(&data).expect("in"), device.zeroed::<f32>(n).expect("out"));
    let kernel = module.kernel("primitives").expect("primitives");
    kernel
        .launch([4, 1, 1], [64, 1, 1], 0, &[Arg::from(&input), Arg::from(&out)])
        .expect("primitives");
    let got = out.to_vec().expect("read");
    for (i, &g) in got.iter().enumerate() {
        let want = 2.0 * data[(i & !63) | ((i % 64) ^ 1)];
        assert_eq!(g.to_bits(), want.to_bits(), "{name} primitives [{i}]");
    }

    let blocks = 3;
    let data: Vec<f32> =
        (0..512 * blocks).map(|_| (rng.next_u32() % 20001) as f32 / 64.0 - 150.0).collect();
    let (input, out) =
        (device.buffer_from(&data).expect("in"), device.zeroed::<f32>(blocks).expect("out"));
    let kernel = module.kernel("pipeline_sum").expect("pipeline_sum");
    kernel
        .launch([blocks as u32, 1, 1], [128, 1, 1], 0, &[Arg::from(&input), Arg::from(&out)])
        .expect("pipeline_sum");
    let got = out.to_vec().expect("read");
    for (b, &g) in got.iter().enumerate() {
        let want = (0..128).fold(0f32, |total, t| {
            total + (0..4).fold(0f32, |sum, c| sum + data[512 * b + 128 * c + t])
        });
        assert_eq!(g.to_bits(), want.to_bits(), "{name} pipeline_sum block {b}: {g} want {want}");
    }
}

#[test]
fn cp_async_pipelines_and_memcpy_async_copy_as_the_isa_says() {
    let Some(device) = common::device() else { return };
    for path in variants() {
        run_variant(&device, &path);
    }
}
