//! Warp-level matrix instructions end to end (issue #19): the kernels of
//! `tests/kernels/mma.cu`, built by nvcc for sm_80, sm_89 and sm_90, against CPU
//! models written from the PTX ISA: fragments by the ISA's layout formulas, products
//! exact, one rounding per k step in k order (`lower/src/ir/matrix.rs` defines the
//! accumulation), `.f16` accumulators rounded once at the end, integer sums exact with
//! `.satfinite` clamping.

mod common;

use std::path::Path;

use common::Rng;
use half::{bf16, f16};
use ptxvk::{Arg, Device, Module, Pod};

/// Test values of the matrix types, drawn from the tests' generator.
trait MatrixValues {
    fn next(&mut self) -> u32;
    fn f16_bits(&mut self) -> u16;
    fn bf16_bits(&mut self) -> u16;
    fn f32_bits(&mut self) -> u32;
    fn f64(&mut self) -> f64;
}

impl MatrixValues for Rng {
    fn next(&mut self) -> u32 {
        self.next_u32()
    }

    /// Finite f16 bit patterns over the whole exponent range, subnormals included.
    fn f16_bits(&mut self) -> u16 {
        loop {
            let b = self.next() as u16;
            if b & 0x7c00 != 0x7c00 {
                return b;
            }
        }
    }

    /// bf16 bit patterns with unbiased exponents in -27..=27 (no overflow in f32 sums).
    fn bf16_bits(&mut self) -> u16 {
        let sign = (self.next() & 1) as u16;
        let exponent = 100 + (self.next() % 55) as u16;
        (sign << 15) | (exponent << 7) | (self.next() as u16 & 0x7f)
    }

    /// f32 bit patterns with unbiased exponents in -20..=20 and arbitrary low bits.
    fn f32_bits(&mut self) -> u32 {
        let exponent = 107 + self.next() % 41;
        ((self.next() & 1) << 31) | (exponent << 23) | (self.next() & 0x7f_ffff)
    }

    fn f64(&mut self) -> f64 {
        let mantissa = (u64::from(self.next()) << 20) ^ u64::from(self.next());
        let exponent = 1023 - 30 + u64::from(self.next() % 61);
        f64::from_bits(
            (u64::from(self.next() & 1) << 63) | (exponent << 52) | (mantissa & ((1 << 52) - 1)),
        )
    }
}

/// The one-warp kernels' element type, read back as raw values.
fn run<T: Pod + Default>(
    device: &Device,
    module: &Module,
    entry: &str,
    grid: [u32; 3],
    block: u32,
    inputs: &[Vec<u8>],
    out_len: usize,
) -> Vec<T> {
    let kernel = module.kernel(entry).unwrap_or_else(|e| panic!("{entry}: {e}"));
    let buffers: Vec<_> =
        inputs.iter().map(|b| device.buffer_from(b).expect("input buffer")).collect();
    let out = device.zeroed::<T>(out_len).expect("output buffer");
    let mut args: Vec<Arg<'_>> = buffers.iter().map(Arg::from).collect();
    args.push(Arg::from(&out));
    kernel.launch(grid, [block, 1, 1], 0, &args).unwrap_or_else(|e| panic!("{entry}: {e}"));
    out.to_vec().expect("read back")
}

fn bytes<T: Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// `acc + Σ a_k b_k` in f32, one rounding per k step (the products are exact in f32).
fn dot_f32(acc: f32, a: impl Iterator<Item = f32>, b: impl Iterator<Item = f32>) -> f32 {
    a.zip(b).fold(acc, |acc, (x, y)| {
        let p = x * y;
        assert_eq!(f64::from(p), f64::from(x) * f64::from(y), "an inexact product");
        acc + p
    })
}

/// Same bits, or both NaN.
fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The e4m3 value of `b` (OCP FP8: bias 7, no infinities, S.1111.111 is NaN), written
/// from the format's definition.
fn e4m3(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (i32::from((b >> 3) & 0xf), f32::from(b & 7));
    if e == 15 && m == 7.0 {
        return f32::NAN;
    }
    sign * if e == 0 { m * 2f32.powi(-9) } else { (1.0 + m / 8.0) * 2f32.powi(e - 7) }
}

/// The input types of `mma` in the kernels, as element bits.
#[derive(Clone, Copy, Debug, PartialEq)]
enum In {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
    U8,
    S8,
    U4,
    S4,
    /// `.b1`: one bit.
    B1,
}

/// A float's value or an integer's.
enum Val {
    F(f32),
    I(i64),
}

impl In {
    fn random(self, r: &mut Rng) -> u32 {
        match self {
            In::F16 => u32::from(r.f16_bits()),
            In::Bf16 => u32::from(r.bf16_bits()),
            In::Tf32 => r.f32_bits(),
            // Any byte but the NaNs (and, for e5m2, the infinities).
            In::E4m3 => match r.next() & 0xff {
                b if b & 0x7f == 0x7f => b ^ 1,
                b => b,
            },
            In::E5m2 => match r.next() & 0xff {
                b if b & 0x7c == 0x7c => b & !0x40,
                b => b,
            },
            In::U8 | In::S8 => r.next() & 0xff,
            In::U4 | In::S4 => r.next() & 15,
            In::B1 => r.next() & 1,
        }
    }

    fn value(self, bits: u32) -> Val {
        match self {
            In::F16 => Val::F(f16::from_bits(bits as u16).to_f32()),
            In::Bf16 => Val::F(bf16::from_bits(bits as u16).to_f32()),
            // The low 13 mantissa bits are ignored.
            In::Tf32 => Val::F(f32::from_bits(bits & 0xffff_e000)),
            In::E4m3 => Val::F(e4m3(bits as u8)),
            // E5M2 is the high byte of an f16.
            In::E5m2 => Val::F(f16::from_bits((bits as u16) << 8).to_f32()),
            In::U8 | In::U4 | In::B1 => Val::I(i64::from(bits)),
            In::S8 => Val::I(i64::from(bits as u8 as i8)),
            In::S4 => Val::I(i64::from(((bits as u8) << 4) as i8 >> 4)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Acc {
    F32,
    F16,
    S32 {
        satfinite: bool,
    },
    /// `.b1`: the bits ANDed or XORed (`xor`), counted, added to C (wrapping).
    Popc {
        xor: bool,
    },
}

/// One `mma` kernel: `entry` computes `m x 8 x k` with these types from sm `since`
/// (below it, D = C). Its A and B hold `in_bytes`-byte elements, its C and D
/// `acc_bytes`-byte ones (the generic loader's kernels: 4-byte words for all).
struct Form {
    entry: &'static str,
    m: usize,
    k: usize,
    a: In,
    b: In,
    acc: Acc,
    since: u32,
    in_bytes: usize,
    acc_bytes: usize,
}

const fn form(entry: &'static str, (m, k): (usize, usize), (a, b): (In, In), acc: Acc) -> Form {
    Form { entry, m, k, a, b, acc, since: 80, in_bytes: 4, acc_bytes: 4 }
}

const SAT: Acc = Acc::S32 { satfinite: true };
const WRAP: Acc = Acc::S32 { satfinite: false };

/// Every `mma` kernel of `mma.cu` but the f64 ones.
const FORMS: [Form; 16] = [
    Form { in_bytes: 2, ..form("mma_f16_f32", (16, 16), (In::F16, In::F16), Acc::F32) },
    Form { in_bytes: 2, ..form("mma_bf16_f32", (16, 16), (In::Bf16, In::Bf16), Acc::F32) },
    Form {
        in_bytes: 2,
        acc_bytes: 2,
        ..form("mma_f16_f16", (16, 8), (In::F16, In::F16), Acc::F16)
    },
    form("mma_tf32", (16, 8), (In::Tf32, In::Tf32), Acc::F32),
    Form { in_bytes: 1, ..form("mma_s8", (16, 32), (In::S8, In::S8), SAT) },
    Form { in_bytes: 1, ..form("mma_s4", (8, 32), (In::S4, In::S4), WRAP) },
    Form { in_bytes: 1, since: 89, ..form("mma_e4m3", (16, 32), (In::E4m3, In::E4m3), Acc::F32) },
    form("mma_bf16_k8", (16, 8), (In::Bf16, In::Bf16), Acc::F32),
    form("mma_f16_k16", (16, 16), (In::F16, In::F16), Acc::F16),
    form("mma_tf32_k4", (16, 4), (In::Tf32, In::Tf32), Acc::F32),
    form("mma_u8s8", (16, 16), (In::U8, In::S8), WRAP),
    form("mma_s8_m8", (8, 16), (In::S8, In::S8), WRAP),
    form("mma_u4_k64", (16, 64), (In::U4, In::U4), SAT),
    Form { since: 89, ..form("mma_fp8_k16", (16, 16), (In::E5m2, In::E4m3), Acc::F16) },
    form("mma_b1_and", (16, 256), (In::B1, In::B1), Acc::Popc { xor: false }),
    form("mma_b1_xor", (8, 128), (In::B1, In::B1), Acc::Popc { xor: true }),
];

/// D of `form` by the accumulation's definition, and how many sums `.satfinite` clamped.
fn model(form: &Form, a: &[u32], b: &[u32], c: &[u32], sm: u32) -> (Vec<u32>, usize) {
    let (m, k) = (form.m, form.k);
    let mut clamped = 0;
    let d = (0..m * 8)
        .map(|at| {
            let (i, j) = (at / 8, at % 8);
            if sm < form.since {
                return c[at];
            }
            let (va, vb) = (|x| form.a.value(a[i * k + x]), |x| form.b.value(b[x * 8 + j]));
            match form.acc {
                Acc::F32 | Acc::F16 => {
                    let start = if form.acc == Acc::F16 {
                        f16::from_bits(c[at] as u16).to_f32()
                    } else {
                        f32::from_bits(c[at])
                    };
                    let float = |v| match v {
                        Val::F(x) => x,
                        Val::I(_) => unreachable!("a float form"),
                    };
                    let sum =
                        dot_f32(start, (0..k).map(|x| float(va(x))), (0..k).map(|x| float(vb(x))));
                    if form.acc == Acc::F16 {
                        u32::from(f16::from_f32(sum).to_bits())
                    } else {
                        sum.to_bits()
                    }
                }
                Acc::Popc { xor } => {
                    let bit = |v| match v {
                        Val::I(x) => x,
                        Val::F(_) => unreachable!("a bit form"),
                    };
                    let ones = (0..k)
                        .filter(|&x| {
                            let (p, q) = (bit(va(x)), bit(vb(x)));
                            if xor {
                                p != q
                            } else {
                                p == 1 && q == 1
                            }
                        })
                        .count() as u32;
                    c[at].wrapping_add(ones)
                }
                Acc::S32 { satfinite } => {
                    let int = |v| match v {
                        Val::I(x) => x,
                        Val::F(_) => unreachable!("an integer form"),
                    };
                    let sum = i64::from(c[at] as i32)
                        + (0..k).map(|x| int(va(x)) * int(vb(x))).sum::<i64>();
                    let kept = if satfinite {
                        sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX))
                    } else {
                        sum
                    };
                    clamped += usize::from(kept != sum);
                    kept as i32 as u32
                }
            }
        })
        .collect();
    (d, clamped)
}

/// The low `width` bytes of each value, little-endian.
fn narrow(values: &[u32], width: usize) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()[..width].to_vec()).collect()
}

fn mma_kernels(device: &Device, path: &Path) {
    let module = common::load(device, path);
    let sm = sm_of(path);
    let mut rng = Rng(0x9e41 + u64::from(sm));
    for form in &FORMS {
        let a: Vec<u32> = (0..form.m * form.k).map(|_| form.a.random(&mut rng)).collect();
        let b: Vec<u32> = (0..form.k * 8).map(|_| form.b.random(&mut rng)).collect();
        // Integer C near the s32 limits, so that sums overflow (and saturate).
        let c: Vec<u32> = (0..form.m * 8)
            .map(|n| match form.acc {
                Acc::F32 => rng.f32_bits(),
                Acc::F16 => u32::from(rng.f16_bits()),
                Acc::S32 { .. } if n % 4 == 0 => (i32::MAX - (rng.next() % 1000) as i32) as u32,
                Acc::S32 { .. } if n % 4 == 1 => (i32::MIN + (rng.next() % 1000) as i32) as u32,
                Acc::S32 { .. } | Acc::Popc { .. } => rng.next(),
            })
            .collect();
        let inputs =
            [narrow(&a, form.in_bytes), narrow(&b, form.in_bytes), narrow(&c, form.acc_bytes)];
        let d: Vec<u8> =
            run(device, &module, form.entry, [1; 3], 32, &inputs, form.m * 8 * form.acc_bytes);
        let (want, clamped) = model(form, &a, &b, &c, sm);
        if form.acc == SAT && sm >= form.since {
            assert!(clamped > 0, "{}: the inputs exercise .satfinite", form.entry);
        }
        for (at, (got, &want)) in d.chunks(form.acc_bytes).zip(&want).enumerate() {
            let mut word = [0u8; 4];
            word[..got.len()].copy_from_slice(got);
            let got = u32::from_le_bytes(word);
            let nan = |x: u32| match form.acc {
                Acc::F32 => f32::from_bits(x).is_nan(),
                Acc::F16 => f16::from_bits(x as u16).is_nan(),
                Acc::S32 { .. } | Acc::Popc { .. } => false,
            };
            assert!(
                got == want || (nan(got) && nan(want)),
                "{} {} D[{}][{}] = {got:#x} want {want:#x}",
                path.display(),
                form.entry,
                at / 8,
                at % 8
            );
        }
    }

    // f64 m8n8k4 (sm_80) and m16n8k16 (sm_90): fused steps in k order.
    for (entry, m, k, since) in [("mma_f64", 8, 4, 80), ("mma_f64_k16", 16, 16, 90)] {
        let a: Vec<f64> = (0..m * k).map(|_| rng.f64()).collect();
        let b: Vec<f64> = (0..k * 8).map(|_| rng.f64()).collect();
        let c: Vec<f64> = (0..m * 8).map(|_| rng.f64()).collect();
        let d: Vec<f64> =
            run(device, &module, entry, [1; 3], 32, &[bytes(&a), bytes(&b), bytes(&c)], m * 8);
        for (i, j) in (0..m).flat_map(|i| (0..8).map(move |j| (i, j))) {
            let want = if sm >= since {
                (0..k).fold(c[i * 8 + j], |acc, x| a[i * k + x].mul_add(b[x * 8 + j], acc))
            } else {
                c[i * 8 + j]
            };
            assert_eq!(
                d[i * 8 + j].to_bits(),
                want.to_bits(),
                "{} {entry} D[{i}][{j}]",
                path.display()
            );
        }
    }
}

/// The `sm_XY` of a variant's file name.
fn sm_of(path: &Path) -> u32 {
    let name = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    name.rsplit("sm_").next().and_then(|s| s.get(..2)).and_then(|s| s.parse().ok()).expect("sm_XY")
}

/// Fragment element `(row, col)` pairs of lane `lane`: (g, 2t) and (g, 2t + 1).
fn fragment_word(m: &[u16], lane: usize, transposed: bool) -> u32 {
    let (g, t) = (lane / 4, lane % 4);
    let at = |r: usize, c: usize| u32::from(if transposed { m[c * 8 + r] } else { m[r * 8 + c] });
    at(g, 2 * t) | at(g, 2 * t + 1) << 16
}

fn matrix_loads(device: &Device, path: &Path) {
    let module = common::load(device, path);
    let name = path.display();
    let sm: u32 = path
        .to_str()
        .and_then(|p| p.rsplit("sm_").next())
        .and_then(|s| s[..2].parse().ok())
        .expect("sm_XY");
    let mut rng = Rng(0x1d5a + u64::from(sm));
    let m: Vec<u16> = (0..4 * 64).map(|_| rng.next() as u16).collect();
    let matrix = |i: usize| &m[64 * i..64 * (i + 1)];

    let out: Vec<u32> = run(device, &module, "ldsm", [1; 3], 32, &[bytes(&m)], 32 * 12);
    for lane in 0..32 {
        let got = &out[lane * 12..lane * 12 + 12];
        let mut want = Vec::new();
        want.extend((0..4).map(|i| fragment_word(matrix(i), lane, false)));
        want.extend((0..4).map(|i| fragment_word(matrix(i), lane, true)));
        want.extend((0..2).map(|i| fragment_word(matrix(i), lane, false)));
        want.push(fragment_word(matrix(0), lane, true));
        want.push(0);
        assert_eq!(got, want.as_slice(), "{name} ldsm lane {lane}");
    }

    let out: Vec<u32> = run(device, &module, "movm", [1; 3], 32, &[bytes(matrix(0))], 32);
    for (lane, &word) in out.iter().enumerate() {
        assert_eq!(word, fragment_word(matrix(0), lane, true), "{name} movm lane {lane}");
    }

    let out: Vec<u16> = run(device, &module, "stsm", [1; 3], 32, &[bytes(&m)], 2 * 4 * 64);
    if sm >= 90 {
        assert_eq!(&out[..256], m.as_slice(), "{name} stmatrix.x4 rebuilds the matrices");
        for i in 0..4 {
            for (r, c) in (0..8).flat_map(|r| (0..8).map(move |c| (r, c))) {
                assert_eq!(
                    out[256 + 64 * i + 8 * r + c],
                    m[64 * i + 8 * c + r],
                    "{name} stmatrix.trans {i} ({r}, {c})"
                );
            }
        }
    } else {
        assert!(out.iter().all(|&x| x == 0), "{name}: stsm is empty before sm_90");
    }
}

/// The CUTLASS-style GEMMs: ldmatrix fragments of shared tiles, one mma per k step, the
/// tiles staged by plain loads or by cp.async into two stages.
fn gemm(device: &Device, path: &Path, entry: &str) {
    let module = common::load(device, path);
    let (m, n, k) = (64usize, 16usize, 48usize);
    let mut rng = Rng(0x6e44);
    let a: Vec<u16> = (0..m * k)
        .map(|_| f16::from_f32((rng.next() % 2001) as f32 / 256.0 - 3.9).to_bits())
        .collect();
    let b: Vec<u16> = (0..n * k)
        .map(|_| f16::from_f32((rng.next() % 2001) as f32 / 512.0 - 1.7).to_bits())
        .collect();
    let (ab, bb) = (device.buffer_from(&a).expect("A"), device.buffer_from(&b).expect("B"));
    {
        let kernel = module.kernel(entry).expect(entry);
        let c = device.zeroed::<f32>(m * n).expect("C");
        let args = [
            Arg::from(&ab),
            Arg::from(&bb),
            Arg::from(&c),
            Arg::from(m as i32),
            Arg::from(n as i32),
            Arg::from(k as i32),
        ];
        kernel.launch([(n / 8) as u32, (m / 32) as u32, 1], [64, 1, 1], 0, &args).expect("gemm");
        let got = c.to_vec().expect("C");
        let h = |b: u16| f16::from_bits(b).to_f32();
        for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
            let want =
                dot_f32(0.0, (0..k).map(|x| h(a[i * k + x])), (0..k).map(|x| h(b[j * k + x])));
            assert!(
                same_f32(got[i * n + j], want),
                "{} {entry} C[{i}][{j}] = {} want {want}",
                path.display(),
                got[i * n + j]
            );
        }
    }
}

fn variants() -> Vec<std::path::PathBuf> {
    ["sm_80", "sm_89", "sm_90"]
        .iter()
        .map(|a| common::repo().join(format!("tests/kernels/mma.nvcc.{a}.ptx")))
        .collect()
}

#[test]
fn mma_of_every_shape_and_type_matches_the_cpu_model() {
    let Some(device) = common::device() else { return };
    for path in variants() {
        mma_kernels(&device, &path);
    }
}

#[test]
fn ldmatrix_stmatrix_and_movmatrix_move_fragments_as_the_isa_draws_them() {
    let Some(device) = common::device() else { return };
    for path in variants() {
        matrix_loads(&device, &path);
    }
}

#[test]
fn a_cutlass_style_gemm_with_ldmatrix_and_mma() {
    let Some(device) = common::device() else { return };
    for path in variants() {
        gemm(&device, &path, "gemm_f16");
    }
}

/// (Not under racecheck in `make test`: its shadow of 16 bytes per 4 bytes of shared
/// memory, the 4 KiB warp scratch included, exceeds lavapipe's 32 KiB.)
#[test]
fn a_cutlass_style_gemm_with_cp_async_double_buffering() {
    let Some(device) = common::device() else { return };
    for path in variants() {
        gemm(&device, &path, "gemm_f16_async");
    }
}

/// Every warp mode's form of the matrix, asynchronous-copy and cluster kernels
/// validates (lavapipe runs only the emulated one: its subgroups are 8 wide).
#[test]
fn every_warp_mode_compiles_the_matrix_kernels() {
    let mut files = variants();
    for kernel in ["wmma", "async_copy"] {
        for arch in ["sm_80", "sm_89", "sm_90"] {
            files.push(common::repo().join(format!("tests/kernels/{kernel}.nvcc.{arch}.ptx")));
        }
    }
    files.push(common::repo().join("tests/kernels/cluster.nvcc.sm_90.ptx"));
    for path in files {
        assert_eq!(common::compile_every_warp_mode(&path).len(), 3);
    }
}

/// `cvt.rna.tf32.f32` (what `wmma::__float_to_tf32` compiles to) of a finite value:
/// to the nearest 19-bit value, ties away from zero.
fn tf32_rna(x: f32) -> f32 {
    f32::from_bits((x.to_bits() + 0x1000) & 0xffff_e000)
}

/// nvcuda::wmma, whose fragments ptxvk lays out as `mma` tiles: each kernel against the
/// product of its matrices (the kernels' header comment gives their layouts).
fn wmma_kernels(device: &Device, path: &Path) {
    let module = common::load(device, path);
    let name = path.display();
    let mut rng = Rng(0x3a3a + u64::from(sm_of(path)));
    let h = |b: u16| f16::from_bits(b).to_f32();

    let a: Vec<u16> = (0..256).map(|_| rng.f16_bits()).collect();
    let b: Vec<u16> = (0..256).map(|_| rng.f16_bits()).collect();
    let c: Vec<f32> = (0..256).map(|_| f32::from_bits(rng.f32_bits())).collect();
    let d: Vec<f32> =
        run(device, &module, "wmma_f16", [1; 3], 32, &[bytes(&a), bytes(&b), bytes(&c)], 256);
    for (m, n) in (0..16).flat_map(|m| (0..16).map(move |n| (m, n))) {
        let want = dot_f32(
            c[m * 16 + n],
            (0..16).map(|k| h(a[m * 16 + k])),
            (0..16).map(|k| h(b[n * 16 + k])),
        );
        assert!(same_f32(d[m * 16 + n], want), "{name} wmma_f16 D[{m}][{n}]");
    }

    let a: Vec<u16> = (0..16 * 40).map(|_| rng.f16_bits()).collect();
    let b: Vec<u16> = (0..16 * 8).map(|_| rng.f16_bits()).collect();
    let c: Vec<u16> = (0..32 * 8).map(|_| rng.f16_bits()).collect();
    let d: Vec<u16> =
        run(device, &module, "wmma_f16_acc", [1; 3], 32, &[bytes(&a), bytes(&b), bytes(&c)], 256);
    for (m, n) in (0..32).flat_map(|m| (0..8).map(move |n| (m, n))) {
        let sum = dot_f32(
            h(c[n * 32 + m]),
            (0..16).map(|k| h(a[k * 40 + m])),
            (0..16).map(|k| h(b[k * 8 + n])),
        );
        let (got, want) = (f16::from_bits(d[n * 32 + m]), f16::from_f32(sum));
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "{name} wmma_f16_acc D[{m}][{n}] = {got} want {want}"
        );
    }

    let a: Vec<u16> = (0..8 * 16).map(|_| rng.bf16_bits()).collect();
    let b: Vec<u16> = (0..16 * 32).map(|_| rng.bf16_bits()).collect();
    let d: Vec<f32> = run(device, &module, "wmma_bf16", [1; 3], 32, &[bytes(&a), bytes(&b)], 256);
    let bf = |b: u16| bf16::from_bits(b).to_f32();
    for (m, n) in (0..8).flat_map(|m| (0..32).map(move |n| (m, n))) {
        let want =
            dot_f32(0.0, (0..16).map(|k| bf(a[m * 16 + k])), (0..16).map(|k| bf(b[k * 32 + n])));
        assert!(same_f32(d[m * 32 + n], want), "{name} wmma_bf16 D[{m}][{n}]");
    }

    let a: Vec<f32> = (0..16 * 8).map(|_| f32::from_bits(rng.f32_bits())).collect();
    let b: Vec<f32> = (0..8 * 16).map(|_| f32::from_bits(rng.f32_bits())).collect();
    let c: Vec<f32> = (0..256).map(|_| f32::from_bits(rng.f32_bits())).collect();
    let d: Vec<f32> =
        run(device, &module, "wmma_tf32", [1; 3], 32, &[bytes(&a), bytes(&b), bytes(&c)], 256);
    for (m, n) in (0..16).flat_map(|m| (0..16).map(move |n| (m, n))) {
        let sum = dot_f32(
            c[m * 16 + n],
            (0..8).map(|k| tf32_rna(a[m * 8 + k])),
            (0..8).map(|k| tf32_rna(b[n * 8 + k])),
        );
        assert!(same_f32(d[m * 16 + n], 2.0 * sum), "{name} wmma_tf32 D[{m}][{n}]");
    }

    let a: Vec<u8> = (0..256).map(|_| rng.next() as u8).collect();
    let b: Vec<u8> = (0..256).map(|_| rng.next() as u8).collect();
    let c: Vec<i32> = (0..256).map(|_| rng.next() as i32).collect();
    let d: Vec<i32> =
        run(device, &module, "wmma_s8", [1; 3], 32, &[bytes(&a), bytes(&b), bytes(&c)], 256);
    for (m, n) in (0..16).flat_map(|m| (0..16).map(move |n| (m, n))) {
        let sum = i64::from(c[m * 16 + n])
            + (0..16)
                .map(|k| i64::from(a[m * 16 + k] as i8) * i64::from(b[n * 16 + k] as i8))
                .sum::<i64>();
        assert_eq!(d[m * 16 + n], sum as i32, "{name} wmma_s8 D[{m}][{n}]");
    }

    let a: Vec<f64> = (0..32).map(|_| rng.f64()).collect();
    let b: Vec<f64> = (0..32).map(|_| rng.f64()).collect();
    let c: Vec<f64> = (0..64).map(|_| rng.f64()).collect();
    let d: Vec<f64> =
        run(device, &module, "wmma_f64", [1; 3], 32, &[bytes(&a), bytes(&b), bytes(&c)], 64);
    for (m, n) in (0..8).flat_map(|m| (0..8).map(move |n| (m, n))) {
        let want = (0..4).fold(c[m * 8 + n], |acc, k| a[m * 4 + k].mul_add(b[k * 8 + n], acc));
        assert_eq!(d[m * 8 + n].to_bits(), want.to_bits(), "{name} wmma_f64 D[{m}][{n}]");
    }
}

#[test]
fn nvcuda_wmma_matches_the_cpu_model() {
    let Some(device) = common::device() else { return };
    for arch in ["sm_80", "sm_89", "sm_90"] {
        wmma_kernels(&device, &common::repo().join(format!("tests/kernels/wmma.nvcc.{arch}.ptx")));
    }
}

/// A matrix of `rows x cols` elements of `bytes` bytes (raw bits), stored row-major
/// (`row`) or column-major with a leading dimension 16 elements past the packed one, the
/// gap filled with other values (a load that strays reads them).
struct Stored {
    row: bool,
    ld: usize,
    bits: Vec<u64>,
    bytes: usize,
}

impl Stored {
    fn new(
        (rows, cols): (usize, usize),
        row: bool,
        bytes: usize,
        mut draw: impl FnMut() -> u64,
    ) -> Stored {
        let ld = if row { cols } else { rows } + 16;
        let lines = if row { rows } else { cols };
        Stored { row, ld, bits: (0..lines * ld).map(|_| draw()).collect(), bytes }
    }

    /// Where element (r, c) is, in elements (PTX ISA 9.2 §9.7.14.4.1: `.row` has rows
    /// `ld` apart, `.col` columns).
    fn at(&self, r: usize, c: usize) -> usize {
        if self.row {
            r * self.ld + c
        } else {
            c * self.ld + r
        }
    }

    fn get(&self, r: usize, c: usize) -> u64 {
        self.bits[self.at(r, c)]
    }

    fn le_bytes(&self) -> Vec<u8> {
        self.bits.iter().flat_map(|v| v.to_le_bytes()[..self.bytes].to_vec()).collect()
    }
}

/// One family of `tests/kernels/wmma_layouts.cu`: its shape, inputs and accumulator
/// (`None`: `.f64`).
struct LayoutFamily {
    name: &'static str,
    shape: (usize, usize, usize),
    input: Option<In>,
    acc: Acc,
}

const fn family(
    name: &'static str,
    shape: (usize, usize, usize),
    input: In,
    acc: Acc,
) -> LayoutFamily {
    LayoutFamily { name, shape, input: Some(input), acc }
}

const LAYOUT_FAMILIES: [LayoutFamily; 9] = [
    family("f16", (16, 16, 16), In::F16, Acc::F32),
    family("f16_m32", (32, 8, 16), In::F16, Acc::F32),
    family("f16_m8", (8, 32, 16), In::F16, Acc::F32),
    family("f16_acc", (16, 16, 16), In::F16, Acc::F16),
    family("bf16", (16, 16, 16), In::Bf16, Acc::F32),
    family("tf32", (16, 16, 8), In::Tf32, Acc::F32),
    family("s8", (16, 16, 16), In::S8, WRAP),
    family("u8", (32, 8, 16), In::U8, WRAP),
    LayoutFamily { name: "f64", shape: (8, 8, 4), input: None, acc: Acc::F32 },
];

/// `D = A B + C` (element (i, j) of D) by the model of `mma_kernels`: products exact,
/// float sums in f32 in k order (`.f16` accumulators rounded once at the end), integer
/// sums exact and wrapped to s32, `.f64` fused steps in k order.
fn layout_model(
    f: &LayoutFamily,
    a: &Stored,
    b: &Stored,
    c: &Stored,
    (i, j): (usize, usize),
) -> u64 {
    let k = f.shape.2;
    let Some(input) = f.input else {
        let a = |x| f64::from_bits(a.get(i, x));
        let b = |x| f64::from_bits(b.get(x, j));
        return (0..k)
            .fold(f64::from_bits(c.get(i, j)), |acc, x| a(x).mul_add(b(x), acc))
            .to_bits();
    };
    let va = |x| input.value(a.get(i, x) as u32);
    let vb = |x| input.value(b.get(x, j) as u32);
    let float = |v| match v {
        Val::F(x) => x,
        Val::I(_) => unreachable!("a float form"),
    };
    let int = |v| match v {
        Val::I(x) => x,
        Val::F(_) => unreachable!("an integer form"),
    };
    let cell = c.get(i, j);
    match f.acc {
        Acc::F32 => dot_f32(
            f32::from_bits(cell as u32),
            (0..k).map(|x| float(va(x))),
            (0..k).map(|x| float(vb(x))),
        )
        .to_bits()
        .into(),
        Acc::F16 => {
            let start = f16::from_bits(cell as u16).to_f32();
            let sum = dot_f32(start, (0..k).map(|x| float(va(x))), (0..k).map(|x| float(vb(x))));
            f16::from_f32(sum).to_bits().into()
        }
        Acc::S32 { .. } | Acc::Popc { .. } => {
            let sum = i64::from(cell as u32 as i32)
                + (0..k).map(|x| int(va(x)) * int(vb(x))).sum::<i64>();
            u64::from(sum as i32 as u32)
        }
    }
}

/// `tests/kernels/wmma_layouts.cu`: every pair of A and B layouts of every WMMA shape and
/// type ptxvk implements, C and D in B's layout, against [`layout_model`]. ptxvk's
/// fragments hold each element at its matrix place whatever the layout it was loaded
/// with (`lower/src/ir/matrix.rs`), so `wmma.mma`'s `.alayout.blayout`, which the ISA
/// requires to be those of the loads, add nothing; this checks that every pair computes
/// the product of the matrices in memory.
#[test]
fn wmma_of_every_layout_pair_matches_the_cpu_model() {
    let Some(device) = common::device() else { return };
    let path = common::repo().join("tests/kernels/wmma_layouts.nvcc.sm_80.ptx");
    let module = common::load(&device, &path);
    let mut rng = Rng(0x1a_0075);
    for f in &LAYOUT_FAMILIES {
        let (m, n, k) = f.shape;
        let (in_bytes, acc_bytes) = match (f.input, f.acc) {
            (None, _) => (8, 8),
            (Some(In::F16 | In::Bf16), Acc::F16) => (2, 2),
            (Some(In::F16 | In::Bf16), _) => (2, 4),
            (Some(In::S8 | In::U8), _) => (1, 4),
            _ => (4, 4),
        };
        for (a_row, b_row) in [(true, true), (true, false), (false, true), (false, false)] {
            let entry = format!(
                "{}_{}{}",
                f.name,
                if a_row { 'r' } else { 'c' },
                if b_row { 'r' } else { 'c' }
            );
            let input = |rng: &mut Rng| match f.input {
                None => rng.f64().to_bits(),
                // tf32 values: the low 13 bits clear.
                Some(In::Tf32) => u64::from(rng.f32_bits() & 0xffff_e000),
                Some(t) => u64::from(t.random(rng)),
            };
            let a = Stored::new((m, k), a_row, in_bytes, || input(&mut rng));
            let b = Stored::new((k, n), b_row, in_bytes, || input(&mut rng));
            let c = Stored::new((m, n), b_row, acc_bytes, || match (f.input, f.acc) {
                (None, _) => rng.f64().to_bits(),
                (_, Acc::F32) => u64::from(rng.f32_bits()),
                (_, Acc::F16) => u64::from(rng.f16_bits()),
                _ => u64::from(rng.next()),
            });
            let buffers: Vec<_> = [&a, &b, &c]
                .iter()
                .map(|s| device.buffer_from(&s.le_bytes()).expect("input buffer"))
                .collect();
            let d = device.zeroed::<u8>(c.bits.len() * acc_bytes).expect("D");
            let mut args: Vec<Arg<'_>> = buffers.iter().map(Arg::from).collect();
            args.push(Arg::from(&d));
            args.extend([a.ld, b.ld, c.ld].map(|ld| Arg::from(ld as u32)));
            let kernel = module.kernel(&entry).unwrap_or_else(|e| panic!("{entry}: {e}"));
            kernel.launch([1; 3], [32, 1, 1], 0, &args).unwrap_or_else(|e| panic!("{entry}: {e}"));
            let got = d.to_vec().expect("D");
            let element = |at: usize| {
                let mut word = [0u8; 8];
                word[..acc_bytes].copy_from_slice(&got[at * acc_bytes..(at + 1) * acc_bytes]);
                u64::from_le_bytes(word)
            };
            let nan = |x: u64| match (f.input, f.acc) {
                (None, _) => f64::from_bits(x).is_nan(),
                (_, Acc::F32) => f32::from_bits(x as u32).is_nan(),
                (_, Acc::F16) => f16::from_bits(x as u16).is_nan(),
                _ => false,
            };
            let mut written = vec![false; c.bits.len()];
            for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
                let (got, want) = (element(c.at(i, j)), layout_model(f, &a, &b, &c, (i, j)));
                assert!(
                    got == want || (nan(got) && nan(want)),
                    "{entry} D[{i}][{j}] = {got:#x} want {want:#x}"
                );
                written[c.at(i, j)] = true;
            }
            let stray = (0..c.bits.len()).find(|&at| !written[at] && element(at) != 0);
            assert_eq!(stray, None, "{entry}: D written between its lines");
        }
    }
}

/// A permutation of 0..n drawn from `rng`.
fn permutation(rng: &mut Rng, n: usize) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.next() as usize % (i + 1));
    }
    p
}

/// ldmatrix and stmatrix with a different row address in every thread (issue #34):
/// lane 8i + r of a warp gives the address of row r of matrix i (§9.7.14.5.15), for
/// `.x1`, `.x2`, `.x4`, with and without `.trans`, `.shared` and generic addresses, in
/// both warps of 64-thread blocks whose rows are a permutation of one shared array
/// (`tests/ptx/matrix/matrix_rows.ptx`). Every warp mode's form validates.
#[test]
fn matrix_rows_come_from_the_threads_the_isa_names() {
    let path = common::repo().join("tests/ptx/matrix/matrix_rows.ptx");
    assert_eq!(common::compile_every_warp_mode(&path).len(), 3);
    let Some(device) = common::device() else { return };
    let module = common::load(&device, &path);
    let mut rng = Rng(0x34_0002);
    let blocks = 2usize;
    let perm: Vec<u32> = (0..blocks).flat_map(|_| permutation(&mut rng, 64)).collect();
    // The 8 x 8 matrix i of the warp of global thread `warp_base`: row r is the row
    // whose address lane 8i + r gives.
    let matrix = |rows: &[u16], warp_base: usize, i: usize| -> Vec<u16> {
        (0..8)
            .flat_map(|r| {
                let row = perm[warp_base + 8 * i + r] as usize;
                rows[8 * row..8 * row + 8].to_vec()
            })
            .collect()
    };

    let rows: Vec<u16> = (0..64 * 8).map(|_| rng.next() as u16).collect();
    let out: Vec<u32> = run(
        &device,
        &module,
        "rows",
        [2, 1, 1],
        64,
        &[bytes(&rows), bytes(&perm)],
        20 * 64 * blocks,
    );
    for g in 0..64 * blocks {
        let (lane, warp_base) = (g % 32, g / 32 * 32);
        let word = |i: usize, trans: bool| fragment_word(&matrix(&rows, warp_base, i), lane, trans);
        let mut want = vec![word(0, false)];
        want.extend((0..2).map(|i| word(i, false)));
        want.extend((0..4).map(|i| word(i, false)));
        want.push(word(0, true));
        want.extend((0..2).map(|i| word(i, true)));
        want.extend((0..4).map(|i| word(i, true)));
        want.extend((0..2).map(|i| word(i, false)));
        want.extend((0..4).map(|i| word(i, true)));
        assert_eq!(&out[20 * g..20 * g + 20], want.as_slice(), "rows: thread {g}");
    }

    // stmatrix: lane 8i + r stores row r of matrix i (of the fragments' registers i).
    let frags: Vec<u32> = (0..4 * 64 * blocks).map(|_| rng.next()).collect();
    let out: Vec<u16> = run(
        &device,
        &module,
        "store_rows",
        [2, 1, 1],
        64,
        &[bytes(&frags), bytes(&perm)],
        8 * 128 * blocks,
    );
    for b in 0..blocks {
        let mut want = vec![0u16; 8 * 128];
        for (g, &at) in perm.iter().enumerate().skip(64 * b).take(64) {
            let (lane, warp_base, at) = (g % 32, g / 32 * 32, at as usize);
            let (i, r) = (lane / 8, lane % 8);
            // Element (row, col) of matrix i: half col % 2 of register i of lane
            // 4 row + col / 2.
            let element = |row: usize, col: usize| {
                (frags[4 * (warp_base + 4 * row + col / 2) + i] >> (16 * (col % 2))) as u16
            };
            for c in 0..8 {
                want[8 * at + c] = element(r, c);
                want[8 * (64 + at) + c] = element(c, r);
            }
        }
        assert_eq!(&out[8 * 128 * b..8 * 128 * (b + 1)], want.as_slice(), "store_rows: block {b}");
    }
}
