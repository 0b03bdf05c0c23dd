//! The cost of emulated tensor cores: a 256 x 256 x 256 GEMM with f16 inputs and f32
//! accumulation written CUTLASS-style (`tests/kernels/mma.cu`: `ldmatrix` fragments of
//! shared tiles and one `mma.m16n8k16` per k step; `gemm_f16` stages the tiles with
//! plain loads, `gemm_f16_async` with `cp.async` into two stages), against the scalar
//! f32 tiled GEMM of the benchmark suite (`benches/ptx/matmul_tiled.ptx`, 16 x 16 tiles,
//! one thread per element of C) of the same size, all compiled by ptxvk for the default
//! device (emulated warps on lavapipe). Inputs are small integers, so every result is
//! exact and checked against the CPU.
//!
//! ```text
//! cargo bench --bench tensor
//! ```

mod common;

use half::f16;
use ptxvk::{Arg, Device, Module};

const N: usize = 256;

fn main() {
    let device = Device::default_device().expect("a Vulkan device");
    let info = device.info();
    println!("device: {} (subgroup size {})", info.name, info.subgroup_size);
    let small =
        |k: usize, m: usize| ((k.wrapping_mul(2_654_435_761) >> 13) % m) as f32 - (m / 2) as f32;
    let a: Vec<f32> = (0..N * N).map(|k| small(k, 9)).collect();
    let b: Vec<f32> = (0..N * N).map(|k| small(k + 7, 7)).collect();
    // C = A B (B row-major, K x N), exact in f32 for these inputs.
    let mut want = vec![0f32; N * N];
    for i in 0..N {
        for k in 0..N {
            for j in 0..N {
                want[i * N + j] += a[i * N + k] * b[k * N + j];
            }
        }
    }
    let flops = 2.0 * (N * N * N) as f64;

    let mma_ptx = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/kernels/mma.nvcc.sm_80.ptx"
    ))
    .expect("tests/kernels/mma.nvcc.sm_80.ptx");
    let module = Module::from_ptx(&device, &mma_ptx).expect("compile mma.cu");
    // The mma GEMMs take A row-major and B column-major, in f16.
    let a16: Vec<u16> = a.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
    let b16: Vec<u16> =
        (0..N * N).map(|at| f16::from_f32(b[(at % N) * N + at / N]).to_bits()).collect();
    let (ab, bb) = (device.buffer_from(&a16).expect("A"), device.buffer_from(&b16).expect("B"));
    let n = N as i32;
    for entry in ["gemm_f16", "gemm_f16_async"] {
        let kernel = module.kernel(entry).expect(entry);
        let c = device.zeroed::<f32>(N * N).expect("C");
        let args = [
            Arg::from(&ab),
            Arg::from(&bb),
            Arg::from(&c),
            Arg::from(n),
            Arg::from(n),
            Arg::from(n),
        ];
        let grid = [(N / 8) as u32, (N / 32) as u32, 1];
        let ms = common::median_ms(|| {
            kernel.launch_timed(grid, [64, 1, 1], 0, &args).expect(entry).kernel_ms
        });
        assert_eq!(c.to_vec().expect("C"), want, "{entry}");
        println!("  {entry:<16} ldmatrix + mma:   {ms:8.2} ms  {:6.3} GFLOP/s", flops / ms / 1e6);
    }

    let tiled_ptx = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/ptx/matmul_tiled.ptx"
    ))
    .expect("benches/ptx/matmul_tiled.ptx");
    let module = Module::from_ptx(&device, &tiled_ptx).expect("compile matmul_tiled");
    let kernel = module.kernel("matmul_tiled").expect("matmul_tiled");
    let (af, bf) = (device.buffer_from(&a).expect("A"), device.buffer_from(&b).expect("B"));
    let c = device.zeroed::<f32>(N * N).expect("C");
    let args = [Arg::from(&af), Arg::from(&bf), Arg::from(&c), Arg::from(n)];
    let grid = [(N / 16) as u32, (N / 16) as u32, 1];
    let ms = common::median_ms(|| {
        kernel.launch_timed(grid, [16, 16, 1], 0, &args).expect("tiled").kernel_ms
    });
    assert_eq!(c.to_vec().expect("C"), want, "matmul_tiled");
    println!("  matmul_tiled     scalar f32:      {ms:8.2} ms  {:6.3} GFLOP/s", flops / ms / 1e6);
}
