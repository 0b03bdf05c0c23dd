//! The launches of the real-compiler kernels in `tests/kernels/` and their CPU
//! references, written from the semantics in `tests/kernels/README.md` and independent
//! of ptxvk. Shared by the end-to-end tests and `examples/demo.rs`.

use ptxvk::spec::{ElemType, SpecArg};

use super::{f32_bytes, u32_bytes, u64_bytes, Case, Rng, TestValues};

/// One kernel of the corpus: its file stem, its entry name, the element type of its
/// checked output, and a launch with the expected results.
pub struct KernelCase {
    pub kernel: &'static str,
    pub entry: &'static str,
    pub ty: ElemType,
    pub case: Case,
}

/// Every kernel of the corpus with its launch.
pub fn all() -> Vec<KernelCase> {
    vec![
        vector_add(),
        saxpy(),
        int64_ops(),
        collatz(),
        block_reduce(),
        dyn_shared(),
        matadd2d(),
        grid3d(),
        calls(),
        fnptr(),
    ]
}

pub fn buf(ty: ElemType, bytes: Vec<u8>) -> SpecArg {
    SpecArg::Buffer { ty, bytes }
}

pub fn val<T: ptxvk::Pod>(v: T) -> SpecArg {
    SpecArg::Value(ptxvk::bytemuck::bytes_of(&v).to_vec())
}

pub fn vector_add() -> KernelCase {
    let mut rng = Rng(1);
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|_| rng.normal_f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.normal_f32()).collect();
    let c: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    // The grid has more threads than elements: the bounds check must hold, so the last
    // buffer element (a sentinel beyond n) stays untouched.
    let mut c_init = vec![0f32; n + 1];
    c_init[n] = 42.0;
    let mut expected = c.clone();
    expected.push(42.0);
    let case = Case {
        grid: [8, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::F32, f32_bytes(&a)),
            buf(ElemType::F32, f32_bytes(&b)),
            buf(ElemType::F32, f32_bytes(&c_init)),
            val(n as i32),
        ],
        expected: vec![(2, f32_bytes(&expected))],
    };
    KernelCase { kernel: "vector_add", entry: "vector_add", ty: ElemType::F32, case }
}

pub fn saxpy() -> KernelCase {
    let mut rng = Rng(2);
    let n = 5000usize;
    let a = rng.normal_f32();
    let x: Vec<f32> = (0..n).map(|_| rng.normal_f32()).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.normal_f32()).collect();
    // All three compilers contract a*x+y into fma.rn.f32: one rounding.
    let expected: Vec<f32> = x.iter().zip(&y).map(|(xi, yi)| a.mul_add(*xi, *yi)).collect();
    let case = Case {
        grid: [3, 1, 1],
        block: [96, 1, 1],
        shared_bytes: 0,
        args: vec![
            val(n as i32),
            val(a),
            buf(ElemType::F32, f32_bytes(&x)),
            buf(ElemType::F32, f32_bytes(&y)),
        ],
        expected: vec![(3, f32_bytes(&expected))],
    };
    KernelCase { kernel: "saxpy", entry: "saxpy", ty: ElemType::F32, case }
}

fn int64_reference(a: u64, sb: i64) -> [u64; 8] {
    let b = sb as u64;
    let sa = a as i64;
    let d = b | 1;
    [
        a.wrapping_add(b),
        a.wrapping_sub(b) ^ (a & !b),
        a.wrapping_mul(b).wrapping_add(a | b),
        ((a as u128 * b as u128) >> 64) as u64,
        (a << (b & 63)) ^ (a >> ((b >> 8) & 63)),
        (sb >> (a & 63)) as u64,
        (a / d) ^ (sb.max(sa) as u64),
        (a % d).wrapping_add(sb.min(sa) as u64).wrapping_add(if a > b { a } else { !b }),
    ]
}

pub fn int64_ops() -> KernelCase {
    let mut rng = Rng(3);
    let edges = [
        0u64,
        1,
        2,
        63,
        64,
        u32::MAX as u64,
        1 << 32,
        (1 << 32) + 1,
        i64::MAX as u64,
        i64::MIN as u64,
        u64::MAX,
        u64::MAX - 1,
    ];
    let mut a = Vec::new();
    let mut b = Vec::new();
    for &x in &edges {
        for &y in &edges {
            a.push(x);
            b.push(y as i64);
        }
    }
    for _ in 0..300 {
        // Mix full-width values with small ones so both division paths compilers emit
        // (32-bit fast path and 64-bit) are taken.
        let small = rng.next_u64().is_multiple_of(4);
        a.push(if small { rng.next_u64() >> 40 } else { rng.next_u64() });
        b.push(if rng.next_u64().is_multiple_of(3) {
            (rng.next_u64() >> 44) as i64
        } else {
            rng.next_u64() as i64
        });
    }
    let n = a.len();
    let expected: Vec<u64> = a.iter().zip(&b).flat_map(|(&x, &y)| int64_reference(x, y)).collect();
    let case = Case {
        grid: [n.div_ceil(64) as u32, 1, 1],
        block: [64, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::U64, u64_bytes(&a)),
            buf(ElemType::S64, u64_bytes(&b.iter().map(|&x| x as u64).collect::<Vec<_>>())),
            buf(ElemType::U64, vec![0; 8 * n * 8]),
            val(n as i32),
        ],
        expected: vec![(2, u64_bytes(&expected))],
    };
    KernelCase { kernel: "int64_ops", entry: "int64_ops", ty: ElemType::U64, case }
}

/// CUDA's SIMD intrinsics (CUDA Math API, "SIMD Intrinsics"): lane `k` of `x` as an
/// unsigned or signed `bits`-bit integer.
fn simd_lane(x: u32, k: u32, bits: u32, signed: bool) -> i64 {
    let v = i64::from((x >> (bits * k)) & ((1u32 << bits) - 1));
    if signed && v >> (bits - 1) == 1 {
        v - (1 << bits)
    } else {
        v
    }
}

/// `__vabsdiff*` (per-lane `|x_k - y_k|`, modulo the lane width) and `__vsad*` (the sum
/// of the lanes' `|x_k - y_k|`) for `bits`-bit lanes.
fn simd_absdiff(x: u32, y: u32, bits: u32, signed: bool) -> (u32, u32) {
    let (mut lanes, mut sum) = (0u32, 0u32);
    for k in 0..32 / bits {
        let d =
            (simd_lane(x, k, bits, signed) - simd_lane(y, k, bits, signed)).unsigned_abs() as u32;
        lanes |= (d & ((1u32 << bits) - 1)) << (bits * k);
        sum = sum.wrapping_add(d);
    }
    (lanes, sum)
}

pub fn simd_video() -> KernelCase {
    let mut rng = Rng(17);
    let edges =
        [0u32, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7f80_8001, 0xffff_ffff, 0x0180_ff7f];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in &edges {
        for &y in &edges {
            a.push(x);
            b.push(y);
        }
    }
    for _ in 0..400 {
        a.push(rng.next_u32());
        b.push(rng.next_u32());
    }
    let n = a.len();
    let expected: Vec<u32> = a
        .iter()
        .zip(&b)
        .flat_map(|(&x, &y)| {
            let (u4, su4) = simd_absdiff(x, y, 8, false);
            let (u2, su2) = simd_absdiff(x, y, 16, false);
            let (s4, ss4) = simd_absdiff(x, y, 8, true);
            let (s2, ss2) = simd_absdiff(x, y, 16, true);
            [u4, su4, u2, su2, s4, ss4, s2, ss2]
        })
        .collect();
    let case = Case {
        grid: [n.div_ceil(64) as u32, 1, 1],
        block: [64, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::U32, u32_bytes(&a)),
            buf(ElemType::U32, u32_bytes(&b)),
            buf(ElemType::U32, vec![0; 4 * 8 * n]),
            val(n as i32),
        ],
        expected: vec![(2, u32_bytes(&expected))],
    };
    KernelCase { kernel: "simd_video", entry: "simd_video", ty: ElemType::U32, case }
}

fn collatz_reference(mut x: u32) -> u32 {
    if x == 0 {
        return u32::MAX;
    }
    let mut s = 0;
    while x != 1 && s < 1000 {
        x = if x & 1 != 0 { x.wrapping_mul(3).wrapping_add(1) } else { x >> 1 };
        s += 1;
    }
    s
}

pub fn collatz() -> KernelCase {
    let mut rng = Rng(4);
    let mut start: Vec<u32> = vec![0, 1, 2, 3, 27, 97, 871, u32::MAX, u32::MAX - 1, 0x5555_5555];
    start.extend((0..500).map(|_| rng.next_u32() % 100_000));
    start.extend((0..100).map(|_| rng.next_u32()));
    let n = start.len();
    let expected: Vec<u32> = start.iter().map(|&x| collatz_reference(x)).collect();
    assert!(expected.contains(&1000), "some start value must hit the step cap");
    let case = Case {
        grid: [n.div_ceil(128) as u32, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::U32, u32_bytes(&start)),
            buf(ElemType::U32, vec![0; 4 * n]),
            val(n as i32),
        ],
        expected: vec![(1, u32_bytes(&expected))],
    };
    KernelCase { kernel: "collatz", entry: "collatz", ty: ElemType::U32, case }
}

pub fn block_reduce() -> KernelCase {
    let mut rng = Rng(5);
    let blocks = 6usize;
    let n = 256 * blocks - 37;
    let input: Vec<f32> = (0..n).map(|_| rng.normal_f32()).collect();
    let expected: Vec<f32> = (0..blocks)
        .map(|k| {
            let mut v: Vec<f32> =
                (0..256).map(|t| input.get(256 * k + t).copied().unwrap_or(0.0)).collect();
            let mut s = 128;
            while s > 0 {
                for t in 0..s {
                    v[t] += v[t + s];
                }
                s >>= 1;
            }
            v[0]
        })
        .collect();
    let case = Case {
        grid: [blocks as u32, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::F32, f32_bytes(&input)),
            buf(ElemType::F32, vec![0; 4 * blocks]),
            val(n as i32),
        ],
        expected: vec![(1, f32_bytes(&expected))],
    };
    KernelCase { kernel: "block_reduce", entry: "block_reduce", ty: ElemType::F32, case }
}

pub fn matadd2d() -> KernelCase {
    let mut rng = Rng(6);
    let (rows, cols) = (37usize, 53usize);
    let a: Vec<f32> = (0..rows * cols).map(|_| rng.normal_f32()).collect();
    let b: Vec<f32> = (0..rows * cols).map(|_| rng.normal_f32()).collect();
    let c: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let case = Case {
        grid: [4, 5, 1],
        block: [16, 8, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::F32, f32_bytes(&a)),
            buf(ElemType::F32, f32_bytes(&b)),
            buf(ElemType::F32, vec![0; 4 * rows * cols]),
            val(rows as i32),
            val(cols as i32),
        ],
        expected: vec![(2, f32_bytes(&c))],
    };
    KernelCase { kernel: "matadd2d", entry: "_Z8matadd2dPKfS0_Pfii", ty: ElemType::F32, case }
}

/// The reference for `grid3d` (tests/kernels/grid3d.cu).
pub fn grid3d_reference(grid: [u32; 3], block: [u32; 3]) -> Vec<u32> {
    let total = (grid.iter().product::<u32>() * block.iter().product::<u32>()) as usize;
    let mut out = vec![0u32; total];
    for bz in 0..grid[2] {
        for by in 0..grid[1] {
            for bx in 0..grid[0] {
                for tz in 0..block[2] {
                    for ty in 0..block[1] {
                        for tx in 0..block[0] {
                            let w = |x: u32| x;
                            let bid = bx.wrapping_add(
                                grid[0].wrapping_mul(by.wrapping_add(grid[1].wrapping_mul(bz))),
                            );
                            let tid = tx.wrapping_add(
                                block[0].wrapping_mul(ty.wrapping_add(block[1].wrapping_mul(tz))),
                            );
                            let gid =
                                bid.wrapping_mul(block[0] * block[1] * block[2]).wrapping_add(tid);
                            let t = tx | (ty << 8) | (tz << 16);
                            let b = w(bx.wrapping_mul(7))
                                .wrapping_add(by.wrapping_mul(131))
                                .wrapping_add(bz.wrapping_mul(1031));
                            let g = (block[0] * 3 + block[1] * 37 + block[2] * 101)
                                .wrapping_add(grid[0].wrapping_mul(5))
                                .wrapping_add(grid[1] * 59)
                                .wrapping_add(grid[2] * 113);
                            out[gid as usize] = t ^ (b << 12) ^ (g << 24);
                        }
                    }
                }
            }
        }
    }
    out
}

pub fn grid3d() -> KernelCase {
    KernelCase {
        kernel: "grid3d",
        entry: "grid3d",
        ty: ElemType::U32,
        case: grid3d_case([3, 2, 4], [4, 3, 2]),
    }
}

/// A `grid3d` launch of any shape with its expected output.
pub fn grid3d_case(grid: [u32; 3], block: [u32; 3]) -> Case {
    let expected = grid3d_reference(grid, block);
    Case {
        grid,
        block,
        shared_bytes: 0,
        args: vec![buf(ElemType::U32, vec![0; 4 * expected.len()])],
        expected: vec![(0, u32_bytes(&expected))],
    }
}

pub fn dyn_shared() -> KernelCase {
    let mut rng = Rng(8);
    let (blocks, block) = (5usize, 128usize);
    let n = blocks * block - 50;
    let input: Vec<u32> = (0..n).map(|_| rng.next_u32()).collect();
    let mut out = vec![0u32; n];
    for k in 0..blocks {
        let buf: Vec<u32> =
            (0..block).map(|t| input.get(k * block + t).copied().unwrap_or(0)).collect();
        let tag: Vec<u32> = (0..64u32).map(|t| (t * 1000 + k as u32) & 0xffff).collect();
        let byt: Vec<u32> = (0..64u32).map(|t| (t * 3 + 1) & 0xff).collect();
        for t in 0..block {
            let i = k * block + t;
            if i < n {
                out[i] =
                    buf[block - 1 - t].wrapping_add(tag[t % 64]).wrapping_add(byt[(t * 7) % 64]);
            }
        }
    }
    let case = Case {
        grid: [blocks as u32, 1, 1],
        block: [block as u32, 1, 1],
        shared_bytes: (block * 4) as u32,
        args: vec![
            buf(ElemType::U32, u32_bytes(&input)),
            buf(ElemType::U32, vec![0; 4 * n]),
            val(n as i32),
        ],
        expected: vec![(1, u32_bytes(&out))],
    };
    KernelCase { kernel: "dyn_shared", entry: "dyn_shared", ty: ElemType::U32, case }
}

/// `calls.cu`: `.func` device functions with scalar, struct and pointer arguments.
pub fn calls() -> KernelCase {
    let mut rng = Rng(9);
    // 48-thread blocks: `(tid + 1) % blockDim.x` wraps inside a partial 64-slot array.
    let (blocks, block) = (6usize, 48usize);
    let n = blocks * block;
    let mut x: Vec<u32> = (0..n).map(|_| rng.next_u32()).collect();
    x[..6].copy_from_slice(&[0, 1, u32::MAX, 0x8000_0000, 0xffff, 0x7fff_ffff]);
    let mix = |a: u32, b: u32| a.wrapping_mul(31).wrapping_add(b ^ (a >> 3));
    let mut out = vec![0u64; 5 * n];
    for k in 0..blocks {
        let xs = &x[k * block..(k + 1) * block];
        let s: Vec<u32> = xs.iter().map(|&v| v.wrapping_add(v >> 1)).collect();
        let max = xs.iter().copied().max().unwrap_or(0);
        for (t, &v) in xs.iter().enumerate() {
            let i = k * block + t;
            let a = u64::from(v) * 1_000_003;
            let b = v ^ 0x5a5a;
            let c = (v & 0xffff) as f32 * 0.5;
            let d = f64::from(v) / 3.0;
            let score = ((a as f64 + f64::from(b.wrapping_mul(7))) + f64::from(c)) + d;
            let acc = (i as u32).wrapping_add(v).wrapping_add(s[(t + 1) % block]);
            out[5 * i..5 * i + 5].copy_from_slice(&[
                u64::from(mix(v, v >> 7)),
                u64::from(mix(v, mix(v.wrapping_add(1), v.wrapping_add(2)))),
                score.to_bits(),
                u64::from(acc),
                u64::from(max),
            ]);
        }
    }
    let case = Case {
        grid: [blocks as u32, 1, 1],
        block: [block as u32, 1, 1],
        shared_bytes: 0,
        args: vec![buf(ElemType::U32, u32_bytes(&x)), buf(ElemType::U64, vec![0; 40 * n])],
        expected: vec![(1, u64_bytes(&out))],
    };
    KernelCase { kernel: "calls", entry: "calls", ty: ElemType::U64, case }
}

/// `fnptr.cu`: indirect calls through a table of device function pointers.
pub fn fnptr() -> KernelCase {
    let mut rng = Rng(16);
    let n = 1000usize;
    let a: Vec<i32> = (0..n).map(|_| rng.next_u32() as i32).collect();
    let b: Vec<i32> = (0..n).map(|_| rng.next_u32() as i32).collect();
    let sel: Vec<i32> = (0..n).map(|_| (rng.next_u32() % 1000) as i32).collect();
    let out: Vec<i32> = (0..n)
        .map(|i| match sel[i] % 3 {
            0 => a[i].wrapping_add(b[i]),
            1 => a[i].wrapping_mul(b[i]),
            _ => a[i] ^ b[i].wrapping_shl(1),
        })
        .collect();
    let bytes = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let case = Case {
        grid: [8, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::S32, bytes(&a)),
            buf(ElemType::S32, bytes(&b)),
            buf(ElemType::S32, bytes(&sel)),
            buf(ElemType::S32, vec![0; 4 * n]),
            val(n as i32),
        ],
        expected: vec![(3, bytes(&out))],
    };
    KernelCase { kernel: "fnptr", entry: "fnptr", ty: ElemType::S32, case }
}

/// `coop_groups.cu` (cooperative groups): its header comment defines the five results
/// per element; blocks of 128, the last one partly past `n`.
pub fn coop_groups() -> KernelCase {
    let mut rng = Rng(23);
    let (blocks, block) = (4usize, 128usize);
    let n = blocks * block - 45;
    let input: Vec<i32> = (0..n).map(|_| (rng.next_u32() % 1000) as i32).collect();
    let v = |i: usize| input.get(i).copied().unwrap_or(0);
    let mut out = vec![0i32; 5 * n];
    for i in 0..n {
        let tile = |size: usize| (i / size * size..i / size * size + size).map(v);
        let lane = i % 32;
        let warp = i - lane;
        let next = if lane < 31 { v(i + 1) } else { v(i) };
        let odd = if v(i) & 1 == 1 {
            let odds: Vec<usize> = (warp..warp + 32).filter(|&j| v(j) & 1 == 1).collect();
            let sum: i32 = odds.iter().map(|&j| v(j)).sum();
            64 * sum + odds.iter().filter(|&&j| j < i).count() as i32
        } else {
            -1
        };
        out[5 * i..5 * i + 5].copy_from_slice(&[
            tile(16).sum(),
            tile(32).max().unwrap_or(0),
            tile(32).sum(),
            next + lane as i32,
            odd,
        ]);
    }
    let bytes = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let case = Case {
        grid: [blocks as u32, 1, 1],
        block: [block as u32, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::S32, bytes(&input)),
            buf(ElemType::S32, vec![0; 4 * 5 * n]),
            val(n as i32),
        ],
        expected: vec![(1, bytes(&out))],
    };
    KernelCase { kernel: "coop_groups", entry: "coop_groups", ty: ElemType::S32, case }
}
