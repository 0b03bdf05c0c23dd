//! Bulk and tensor (TMA) copies end to end (issue #19): `tests/kernels/tensor_copy.cu`,
//! built by nvcc for sm_90, with tensor maps encoded by ptxvk ([`ptxvk::TensorMap`],
//! what the driver library's `cuTensorMapEncodeTiled` writes) and passed in the
//! parameter block as `__grid_constant__ CUtensorMap`s, against CPU models of the ISA's
//! tile mode: boxes partly outside the tensor (zero and NaN fill), element strides,
//! a store that skips what lies outside, and the 128-byte swizzle.

mod common;

use ptxvk::{Arg, Device, TensorMap};

fn path() -> std::path::PathBuf {
    common::repo().join("tests/kernels/tensor_copy.nvcc.sm_90.ptx")
}

/// A row-major tensor map over `buffer` (innermost dimension first).
fn map(
    data_type: u32,
    address: u64,
    dims: &[u64],
    elem: u64,
    boxes: &[u32],
    steps: &[u32],
) -> TensorMap {
    let mut strides = Vec::new();
    let mut stride = elem;
    for d in &dims[..dims.len() - 1] {
        stride *= d;
        strides.push(stride);
    }
    TensorMap {
        data_type,
        address,
        dims: dims.to_vec(),
        strides,
        box_dims: boxes.to_vec(),
        element_strides: steps.to_vec(),
        ..TensorMap::default()
    }
}

fn arg(m: &TensorMap) -> Arg<'static> {
    Arg::Bytes(m.encode().expect("a valid tensor map").to_vec())
}

/// The 128-byte swizzle of a byte offset in a box (PTX ISA 9.2 §5.5.8.3: 16-byte chunk
/// `c` of 128-byte row `r` moves to chunk `c ^ (r % 8)`).
fn swizzle_128(offset: usize) -> usize {
    offset ^ (((offset >> 7) & 7) << 4)
}

fn run(device: &Device) {
    let module = common::load(device, &path());
    let mut rng = common::Rng(0x7a4);

    // bulk_roundtrip
    let blocks = 3;
    let data: Vec<u32> = (0..128 * blocks).map(|_| rng.next_u32()).collect();
    let input = device.buffer_from(&data).expect("in");
    let out = device.zeroed::<u32>(data.len()).expect("out");
    module
        .kernel("bulk_roundtrip")
        .expect("kernel")
        .launch([blocks as u32, 1, 1], [128, 1, 1], 0, &[Arg::from(&input), Arg::from(&out)])
        .expect("bulk_roundtrip");
    for (g, &v) in out.to_vec().expect("read").iter().enumerate() {
        let want = data[g].wrapping_mul(3).wrapping_add((g % 128) as u32);
        assert_eq!(v, want, "bulk_roundtrip [{g}]");
    }

    // tma_load_2d: f32 40 x 20, box 16 x 8 at (16 bx - 4, 8 by - 3), zero or NaN fill.
    let (w, h) = (40usize, 20usize);
    let tensor: Vec<f32> = (0..w * h).map(|i| i as f32 * 0.5 - 7.0).collect();
    let buffer = device.buffer_from(&tensor).expect("tensor");
    let (gx, gy) = (3usize, 3usize);
    for nan_fill in [false, true] {
        let mut m = map(7, buffer.address(), &[w as u64, h as u64], 4, &[16, 8], &[1, 1]);
        m.oob_fill = u32::from(nan_fill);
        let out = device.zeroed::<f32>(gx * gy * 128).expect("out");
        module
            .kernel("tma_load_2d")
            .expect("kernel")
            .launch([gx as u32, gy as u32, 1], [128, 1, 1], 0, &[arg(&m), Arg::from(&out)])
            .expect("tma_load_2d");
        let got = out.to_vec().expect("read");
        for by in 0..gy {
            for bx in 0..gx {
                for t in 0..128 {
                    let x = 16 * bx as i64 - 4 + (t % 16) as i64;
                    let y = 8 * by as i64 - 3 + (t / 16) as i64;
                    let inside = (0..w as i64).contains(&x) && (0..h as i64).contains(&y);
                    let want = if inside {
                        tensor[y as usize * w + x as usize].to_bits()
                    } else if nan_fill {
                        0x7fff_ffff
                    } else {
                        0
                    };
                    let g = (by * gx + bx) * 128 + t;
                    assert_eq!(got[g].to_bits(), want, "tma_load_2d nan {nan_fill} ({x}, {y})");
                }
            }
        }
    }

    // tma_load_3d: u16 16 x 5 x 3, box 8 x 4 x 2 with element strides 1 x 2 x 1.
    let (x_n, y_n, z_n) = (16usize, 5usize, 3usize);
    let tensor: Vec<u16> = (0..x_n * y_n * z_n).map(|i| (i * 7 + 3) as u16).collect();
    let buffer = device.buffer_from(&tensor).expect("tensor");
    let m =
        map(1, buffer.address(), &[x_n as u64, y_n as u64, z_n as u64], 2, &[8, 4, 2], &[1, 2, 1]);
    let blocks = 4usize;
    let out = device.zeroed::<u16>(32 * blocks).expect("out");
    module
        .kernel("tma_load_3d")
        .expect("kernel")
        .launch([blocks as u32, 1, 1], [64, 1, 1], 0, &[arg(&m), Arg::from(&out)])
        .expect("tma_load_3d");
    let got = out.to_vec().expect("read");
    for b in 0..blocks {
        for t in 0..32 {
            let (k0, k1, k2) = (t % 8, (t / 8) % 2, t / 16);
            let (x, y, z) = (4 * b as i64 - 2 + k0 as i64, 1 + 2 * k1 as i64, (b + k2) as i64);
            let inside = (0..x_n as i64).contains(&x)
                && (0..y_n as i64).contains(&y)
                && (0..z_n as i64).contains(&z);
            let want =
                if inside { tensor[(z as usize * y_n + y as usize) * x_n + x as usize] } else { 0 };
            assert_eq!(got[32 * b + t], want, "tma_load_3d block {b} ({x}, {y}, {z})");
        }
    }

    // tma_store_2d: u32 20 x 12, box 8 x 8 at (8 bx - 2, 8 by - 1).
    let (w, h) = (20usize, 12usize);
    let sentinel = vec![0xeeee_eeeeu32; w * h + 16];
    let buffer = device.buffer_from(&sentinel).expect("tensor");
    let m = map(2, buffer.address(), &[w as u64, h as u64], 4, &[8, 8], &[1, 1]);
    module
        .kernel("tma_store_2d")
        .expect("kernel")
        .launch([3, 2, 1], [64, 1, 1], 0, &[arg(&m)])
        .expect("tma_store_2d");
    let got = buffer.to_vec().expect("read");
    for y in 0..h {
        for x in 0..w {
            let (bx, by) = ((x + 2) / 8, (y + 1) / 8);
            let t = (x + 2 - 8 * bx) + 8 * (y + 1 - 8 * by);
            let want = ((by as u32) << 16) | ((bx as u32) << 8) | t as u32;
            assert_eq!(got[y * w + x], want, "tma_store_2d ({x}, {y})");
        }
    }
    assert!(got[w * h..].iter().all(|&v| v == 0xeeee_eeee), "the store wrote past the tensor");

    // tma_swizzle: u32 32 x 8, box 32 x 8, 128-byte swizzle.
    let tensor: Vec<u32> = (0..256).map(|_| rng.next_u32()).collect();
    let buffer = device.buffer_from(&tensor).expect("tensor");
    let mut m = map(2, buffer.address(), &[32, 8], 4, &[32, 8], &[1, 1]);
    m.swizzle = 3;
    let out = device.zeroed::<u32>(256).expect("out");
    module
        .kernel("tma_swizzle")
        .expect("kernel")
        .launch([1, 1, 1], [256, 1, 1], 0, &[arg(&m), Arg::from(&out)])
        .expect("tma_swizzle");
    let got = out.to_vec().expect("read");
    let mut want = vec![0u32; 256];
    for (l, &v) in tensor.iter().enumerate() {
        want[swizzle_128(4 * l) / 4] = v;
    }
    assert_eq!(got, want, "tma_swizzle");
    assert_ne!(want, tensor, "the swizzle moves words");
}

#[test]
fn bulk_and_tensor_copies_move_what_the_tensor_map_describes() {
    let Some(device) = common::device() else { return };
    run(&device);
}

#[test]
fn a_tensor_map_ptxvk_did_not_encode_ends_the_launch() {
    let Some(device) = common::device() else { return };
    let module = common::load(&device, &path());
    let out = device.zeroed::<u32>(256).expect("out");
    let error = module
        .kernel("tma_swizzle")
        .expect("kernel")
        .launch([1, 1, 1], [256, 1, 1], 0, &[Arg::Bytes(vec![0x5a; 128]), Arg::from(&out)])
        .expect_err("a foreign tensor map");
    assert!(error.to_string().contains("trap"), "{error}");
}

#[test]
fn every_warp_mode_validates_the_tensor_copy_kernels() {
    common::compile_every_warp_mode(&path());
}
