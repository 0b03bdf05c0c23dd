//! CPU references for the atomics kernels of `tests/kernels/atomics.cu` (`histogram` and
//! `atomic_ops`), written from the semantics in its header comment and the PTX ISA's
//! atomic operations (§9.7.13.5: `inc(r, s) = r >= s ? 0 : r + 1`,
//! `dec(r, s) = (r == 0 || r > s) ? s : r - 1`), independent of ptxvk.
//!
//! Threads run in any order, so a result is only checked where the order cannot
//! matter: final values of commutative, associative operations (integer add, min, max,
//! and, or, xor, and float additions whose every partial sum is exact), the old values
//! of a counter as a multiset (they are those of the same operations done one after
//! another), exchanges as a permutation of the values written, unique slots as a
//! permutation of the thread indices, and "first compare-and-swap wins" by the one
//! thread that saw the initial value.

use ptxvk::spec::ElemType;

use super::cases::{buf, val};
use super::{
    device, f32_bytes, run_api, run_cli, u32_bytes, u64_bytes, variants, Case, Rng, TestValues,
};

/// Buffers read back after a launch, by argument index.
pub type Buffers = [(usize, Vec<u8>)];

/// The check of a launch's results: every way they are wrong.
pub type Check = Box<dyn Fn(&Buffers) -> Vec<String>>;

/// A launch of one kernel of `atomics.cu` and the check of its results.
pub struct AtomicsCase {
    pub entry: &'static str,
    /// What the launch is, for messages.
    pub what: String,
    pub case: Case,
    /// Every way the buffers after the launch break the kernel's semantics (empty when
    /// they are right).
    pub check: Check,
}

/// Runs `ac` on every compiler variant of `atomics.cu`, through the Rust API and
/// `ptxvk run --spec`, and fails with every wrong result.
pub fn run(ac: &AtomicsCase) {
    let Some(device) = device() else { return };
    let mut report = Vec::new();
    for path in variants("atomics") {
        let name = path.file_name().and_then(|f| f.to_str()).unwrap_or("?").to_string();
        let (_, api) = run_api(&device, &path, ac.entry, &ac.case);
        let cli = run_cli(&path, ac.entry, &ac.case);
        for (how, got) in [("Rust API", api), ("ptxvk run --spec", cli)] {
            let f = (ac.check)(&got);
            if !f.is_empty() {
                report.push(format!(
                    "{name} ({how}), {}: {} wrong result(s):\n    {}",
                    ac.what,
                    f.len(),
                    f.iter().take(16).cloned().collect::<Vec<_>>().join("\n    ")
                ));
            }
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

// ---------------------------------------------------------------- helpers

fn words32(got: &Buffers, arg: usize) -> Vec<u32> {
    let (_, b) = got.iter().find(|(a, _)| *a == arg).expect("buffer read back");
    b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect()
}

fn words64(got: &Buffers, arg: usize) -> Vec<u64> {
    let (_, b) = got.iter().find(|(a, _)| *a == arg).expect("buffer read back");
    b.chunks(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
}

/// Compares whole words, one message per wrong word.
fn compare<T: PartialEq + std::fmt::LowerHex>(
    errs: &mut Vec<String>,
    what: &str,
    names: &[&str],
    got: &[T],
    want: &[T],
) {
    if got.len() != want.len() {
        errs.push(format!("{what}: {} words, expected {}", got.len(), want.len()));
        return;
    }
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            let name = names.get(k).copied().unwrap_or("");
            errs.push(format!("{what}[{k}] {name}: got 0x{g:x}, expected 0x{w:x}"));
        }
    }
}

/// Whether `got` and `want` hold the same values, each as often.
fn same_multiset<T: Ord + Clone>(got: &[T], want: &[T]) -> bool {
    let mut g = got.to_vec();
    let mut w = want.to_vec();
    g.sort_unstable();
    w.sort_unstable();
    g == w
}

/// The old values and the final value of `n` operations `op` on one word, done one
/// after another from `init`.
fn serial<T: Copy>(init: T, n: usize, op: impl Fn(T) -> T) -> (Vec<T>, T) {
    let mut olds = Vec::with_capacity(n);
    let mut v = init;
    for _ in 0..n {
        olds.push(v);
        v = op(v);
    }
    (olds, v)
}

fn ptx_inc(r: u32, s: u32) -> u32 {
    if r >= s {
        0
    } else {
        r + 1
    }
}

fn ptx_dec(r: u32, s: u32) -> u32 {
    if r == 0 || r > s {
        s
    } else {
        r - 1
    }
}

/// `x` as f32, asserting that it is exact (every partial sum of the kernels' float
/// additions is, so the order does not matter).
fn exact_f32(x: f64) -> f32 {
    assert_eq!(x as f32 as f64, x, "test bug: {x} is not exact in f32");
    x as f32
}

/// The value written to the element just past each per-thread output; threads with
/// `i >= n` must leave it alone.
const SENTINEL32: u32 = 0x5e57_1e15;
const SENTINEL64: u64 = 0x5e57_1e15_5e57_1e15;

// ---------------------------------------------------------------- histogram

const STATS: [&str; 5] = ["max", "min", "f32 sum", "ticket", "last block total"];

/// The `histogram` launches: a contended one (a 64 x 256 grid, 16,384 threads, over
/// about 200,000 skewed values), an odd shape (blocks of 96 threads, fewer than the 256
/// bins), and one without data (only the initial values and the last-block total). The
/// million-thread contention test is `tests/memory_e2e.rs`; these stay small because
/// they run for six compilations, twice each.
pub fn histogram() -> Vec<AtomicsCase> {
    vec![
        histogram_case(1, 200_003, [64, 1, 1], [256, 1, 1]),
        histogram_case(2, 5000, [7, 1, 1], [96, 1, 1]),
        histogram_case(3, 0, [3, 1, 1], [64, 1, 1]),
    ]
}

fn histogram_case(seed: u64, n: usize, grid: [u32; 3], block: [u32; 3]) -> AtomicsCase {
    let mut rng = Rng(0xa70_0000 + seed);
    // Skewed towards two bins so that many threads hit the same shared word.
    let data: Vec<u32> = (0..n)
        .map(|_| {
            let v = rng.next_u32();
            match rng.next_u32() % 10 {
                0..=3 => (v & !0xff) | 0x2a,
                4 => v | 0xff,
                _ => v,
            }
        })
        .collect();
    let h0: Vec<u32> = (0..256).map(|b| b * 3).collect();
    let s0: [u32; 5] = [5, 0xffff_fff0, 1.5f32.to_bits(), 0, 7];

    let mut hist = h0.clone();
    for &v in &data {
        hist[(v & 255) as usize] += 1;
    }
    let total: u32 = hist.iter().sum();
    let fsum = 1.5 + data.iter().map(|&v| (v >> 29) as f64).sum::<f64>();
    let stats: Vec<u32> = vec![
        data.iter().copied().fold(s0[0], u32::max),
        data.iter().copied().fold(s0[1], u32::min),
        exact_f32(fsum).to_bits(),
        // gridDim.x increments with bound gridDim.x - 1 from 0 wrap back to 0.
        serial(s0[3], grid[0] as usize, |r| ptx_inc(r, grid[0] - 1)).1,
        s0[4] + total,
    ];
    let case = Case {
        grid,
        block,
        shared_bytes: 0,
        args: vec![
            // One more value past n, which must not be counted (and keeps the buffer
            // non-empty for n = 0).
            buf(ElemType::U32, u32_bytes(&[data.as_slice(), &[u32::MAX]].concat())),
            val(n as i32),
            buf(ElemType::U32, u32_bytes(&h0)),
            buf(ElemType::U32, u32_bytes(&s0)),
        ],
        expected: vec![(2, u32_bytes(&hist)), (3, u32_bytes(&stats))],
    };
    let check = move |got: &Buffers| {
        let mut errs = Vec::new();
        compare(&mut errs, "hist", &[], &words32(got, 2), &hist);
        compare(&mut errs, "stats", &STATS, &words32(got, 3), &stats);
        errs
    };
    AtomicsCase {
        entry: "histogram",
        what: format!("n = {n}, grid {grid:?}, block {block:?}"),
        case,
        check: Box::new(check),
    }
}

// ---------------------------------------------------------------- atomic_ops

const C32: [&str; 17] = [
    "slot counter (add.u32)",
    "add.u32",
    "sub (add.u32 of -i)",
    "max.s32",
    "min.s32",
    "max.u32",
    "min.u32",
    "and.b32",
    "or.b32",
    "xor.b32",
    "exch.b32",
    "inc.u32",
    "dec.u32",
    "add.f32",
    "add.f32 of 1.0",
    "cas.b32 first wins",
    "f32 max by cas.b32",
];

const C64: [&str; 10] = [
    "add.u64",
    "f64 add (add.f64 or cas.b64 loop)",
    "max.u64",
    "min.s64",
    "xor.b64",
    "and.b64",
    "or.b64",
    "add.u64 of 0xC0000001",
    "exch.b64",
    "f64 max by cas.b64",
];

/// The `atomic_ops` launches: 20,000 threads on the same 27 words, and a small odd
/// shape.
pub fn atomic_ops() -> Vec<AtomicsCase> {
    vec![atomic_ops_case(1, 20_000, 256), atomic_ops_case(2, 777, 96)]
}

fn atomic_ops_case(seed: u64, n: usize, block: u32) -> AtomicsCase {
    let mut rng = Rng(0xa71_0000 + seed);
    let mut a: Vec<u32> = vec![0, u32::MAX, 0x8000_0000, 0x7fff_ffff, 1];
    a.extend((a.len()..n).map(|_| rng.next_u32()));
    a.truncate(n);
    // No zeros (-0.0 and +0.0 compare equal, so their max depends on the order), no NaN.
    let f: Vec<f32> = (0..n).map(|_| rng.normal_f32()).collect();
    let mut q: Vec<u64> = vec![0, u64::MAX, i64::MIN as u64, i64::MAX as u64, 1];
    q.extend((q.len()..n).map(|_| rng.next_u64()));
    q.truncate(n);

    let c0: [u32; 17] = [
        0, // the slot counter: slots index perm
        0x1234_5678,
        0x0bad_f00d,
        -5i32 as u32,
        5,
        3,
        u32::MAX - 3,
        u32::MAX,
        0x8000_0000,
        0xdead_beef,
        0xcafe_f00d, // exch: no thread writes this value
        17,
        5000, // dec: above the bound, so the first dec gives the bound
        0.75f32.to_bits(),
        0,
        u32::MAX, // cas: the value the first thread expects
        f32::NEG_INFINITY.to_bits(),
    ];
    let c64_0: [u64; 10] = [
        0x0123_4567_89ab_cdef,
        (-2.5f64).to_bits(),
        0,
        i64::MAX as u64,
        0xfedc_ba98_7654_3210,
        u64::MAX,
        1 << 63,
        0x10,
        0xffff_0000_ffff_0000, // exch: not among q
        f64::NEG_INFINITY.to_bits(),
    ];
    assert!(!q.contains(&c64_0[8]) && n < 0xcafe_f00d);

    let idx = 0..n as u32;
    let (inc_olds, inc_final) = serial(c0[11], n, |r| ptx_inc(r, 999));
    let (dec_olds, dec_final) = serial(c0[12], n, |r| ptx_dec(r, 999));
    const K: u64 = 0xc000_0001;
    let (add64_olds, add64_final) = serial(c64_0[7], n, |r| r.wrapping_add(K));
    let fsum =
        f32::from_bits(c0[13]) as f64 + a.iter().map(|&u| (u & 7) as f64 * 0.25).sum::<f64>();
    // In units of 0.5: exact integers far below 2^53.
    let halves: i64 = -5 + a.iter().map(|&u| i64::from(u as i32)).sum::<i64>();
    let dmax = a.iter().map(|&u| f64::from(u as i32) * 0.25).fold(f64::NEG_INFINITY, f64::max);

    let want32: Vec<u32> = vec![
        n as u32,
        a.iter().fold(c0[1], |s, &u| s.wrapping_add(u)),
        idx.clone().fold(c0[2], |s, i| s.wrapping_sub(i)),
        a.iter().map(|&u| u as i32).fold(c0[3] as i32, i32::max) as u32,
        a.iter().map(|&u| u as i32).fold(c0[4] as i32, i32::min) as u32,
        a.iter().copied().fold(c0[5], u32::max),
        a.iter().copied().fold(c0[6], u32::min),
        a.iter().fold(c0[7], |s, &u| s & (u | 0x0f0f_0f0f)),
        a.iter().fold(c0[8], |s, &u| s | 1 << (u % 31)),
        a.iter().fold(c0[9], |s, &u| s ^ u),
        0, // exch: checked with the old values
        inc_final,
        dec_final,
        exact_f32(fsum).to_bits(),
        exact_f32(n as f64).to_bits(),
        0, // cas: checked with the old values
        f.iter().copied().fold(f32::NEG_INFINITY, f32::max).to_bits(),
    ];
    let want64: Vec<u64> = vec![
        q.iter().fold(c64_0[0], |s, &x| s.wrapping_add(x)),
        (halves as f64 * 0.5).to_bits(),
        q.iter().copied().fold(c64_0[2], u64::max),
        q.iter().map(|&x| x as i64).fold(c64_0[3] as i64, i64::min) as u64,
        q.iter().fold(c64_0[4], |s, &x| s ^ x),
        q.iter().fold(c64_0[5], |s, &x| s & (x | 0xff00_ff00_ff00_ff00)),
        q.iter().fold(c64_0[6], |s, &x| s | 1 << (x % 61)),
        add64_final,
        0, // exch: checked with the old values
        dmax.to_bits(),
    ];
    assert!(halves.unsigned_abs() < 1 << 53);

    let blocks = (n as u32).div_ceil(block);
    let with_sentinel32 = |len: usize| {
        let mut v = vec![0u32; len];
        v.push(SENTINEL32);
        u32_bytes(&v)
    };
    let case = Case {
        grid: [blocks, 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::U32, u32_bytes(&a)),
            buf(ElemType::F32, f32_bytes(&f)),
            buf(ElemType::U64, u64_bytes(&q)),
            buf(ElemType::U32, u32_bytes(&c0)),
            buf(ElemType::U64, u64_bytes(&c64_0)),
            buf(ElemType::U32, with_sentinel32(5 * n)),
            buf(ElemType::U64, u64_bytes(&[vec![0; 2 * n], vec![SENTINEL64]].concat())),
            buf(ElemType::U32, with_sentinel32(n)),
            val(n as i32),
        ],
        expected: vec![],
    };

    let check = move |got: &Buffers| {
        let mut errs = Vec::new();
        let c = words32(got, 3);
        let c64 = words64(got, 4);
        let olds = words32(got, 5);
        let olds64 = words64(got, 6);
        let perm = words32(got, 7);
        if c.len() != 17 || c64.len() != 10 || olds.len() != 5 * n + 1 {
            return vec!["a buffer has the wrong size".to_string()];
        }
        if olds64.len() != 2 * n + 1 || perm.len() != n + 1 {
            return vec!["a buffer has the wrong size".to_string()];
        }
        // The words whose final value is order-independent.
        let mut c_fixed = c.clone();
        c_fixed[10] = 0;
        c_fixed[15] = 0;
        let mut c64_fixed = c64.clone();
        c64_fixed[8] = 0;
        compare(&mut errs, "c", &C32, &c_fixed, &want32);
        compare(&mut errs, "c64", &C64, &c64_fixed, &want64);
        if olds[5 * n] != SENTINEL32 || olds64[2 * n] != SENTINEL64 || perm[n] != SENTINEL32 {
            errs.push("a thread with i >= n wrote an output".to_string());
        }
        let olds = &olds[..5 * n];
        let per = |k: usize| -> Vec<u32> { olds.iter().skip(k).step_by(5).copied().collect() };
        // Unique slots: perm is a permutation of 0..n.
        if !same_multiset(&perm[..n], &idx.clone().collect::<Vec<_>>()) {
            errs.push("slot counter: perm is not a permutation of 0..n".to_string());
        }
        // exch: the old values and the final value are the initial value and every i.
        let mut seen = per(0);
        seen.push(c[10]);
        let mut written: Vec<u32> = idx.clone().collect();
        written.push(c0[10]);
        if !same_multiset(&seen, &written) {
            errs.push("exch.b32: old values + final value are not {initial} + {0..n}".into());
        }
        // add.f32 of 1.0: the old values are 0.0, 1.0, ..., n-1.
        let ones: Vec<u32> = (0..n).map(|k| (k as f32).to_bits()).collect();
        if !same_multiset(&per(1), &ones) {
            errs.push("add.f32 of 1.0: the old values are not 0.0 ..= n-1".into());
        }
        // cas: exactly one thread (the winner, whose i is the final value) saw the
        // initial value; everyone else saw the winner's i.
        let cas = per(2);
        let winners: Vec<usize> = (0..n).filter(|&i| cas[i] == c0[15]).collect();
        if winners != [c[15] as usize] {
            errs.push(format!(
                "cas.b32: threads {winners:?} saw the initial value, final value {}",
                c[15]
            ));
        } else if let Some(i) = (0..n).find(|&i| i != winners[0] && cas[i] != c[15]) {
            errs.push(format!("cas.b32: thread {i} saw {:#x}, not the winner {}", cas[i], c[15]));
        }
        if !same_multiset(&per(3), &inc_olds) {
            errs.push("inc.u32: the old values are not those of n increments".into());
        }
        if !same_multiset(&per(4), &dec_olds) {
            errs.push("dec.u32: the old values are not those of n decrements".into());
        }
        let olds64 = &olds64[..2 * n];
        let add_olds: Vec<u64> = olds64.iter().step_by(2).copied().collect();
        if !same_multiset(&add_olds, &add64_olds) {
            errs.push("add.u64 of 0xC0000001: the old values are not init + k*0xC0000001".into());
        }
        let mut seen: Vec<u64> = olds64.iter().skip(1).step_by(2).copied().collect();
        seen.push(c64[8]);
        let mut written = q.clone();
        written.push(c64_0[8]);
        if !same_multiset(&seen, &written) {
            errs.push("exch.b64: old values + final value are not {initial} + {q[i]}".into());
        }
        errs
    };
    AtomicsCase {
        entry: "atomic_ops",
        what: format!("n = {n}, block {block}"),
        case,
        check: Box::new(check),
    }
}

// ---------------------------------------------------------------- shared_atomics64

const SHARED64: [&str; 12] = [
    "add.u64",
    "max.u64",
    "min.s64",
    "xor.b64",
    "and.b64",
    "exch.b64 (final)",
    "f64 add (add.f64 or cas.b64 loop)",
    "add.u32 on the low half",
    "max.u32 on the high half",
    "four u16 stores",
    "__syncthreads_count",
    "__shfl_sync",
];

/// The `shared_atomics64` launches: many threads of one block on each shared word (a
/// 16 x 256 grid over 60,000 values), an odd shape (blocks of 96 threads), and blocks
/// without elements (only the initial values, the u16 stores and the collectives).
pub fn shared_atomics64() -> Vec<AtomicsCase> {
    vec![
        shared_atomics64_case(1, 60_000, 16, 256),
        shared_atomics64_case(2, 1000, 5, 96),
        shared_atomics64_case(3, 40, 3, 64),
    ]
}

fn shared_atomics64_case(seed: u64, n: usize, blocks: u32, block: u32) -> AtomicsCase {
    let mut rng = Rng(0xa72_0000 + seed);
    let q: Vec<u64> = (0..n)
        .map(|_| {
            let x = rng.next_u64();
            // Some small values, so that the low half's additions carry and the
            // signed minimum meets positive and negative values.
            if rng.next_u32().is_multiple_of(4) {
                x & 0xffff_ffff
            } else {
                x
            }
        })
        .collect();
    const EXCH0: u64 = 0xa5a5_a5a5_a5a5_a5a5;
    // The elements of block b: grid-stride, so element i is block (i / block) % blocks.
    let of_block = move |b: u32| -> Vec<usize> {
        (0..n).filter(|&i| (i as u32 / block) % blocks == b).collect()
    };
    let want: Vec<Vec<u64>> = (0..blocks)
        .map(|b| {
            let xs: Vec<u64> = of_block(b).iter().map(|&i| q[i]).collect();
            let halves: u64 = xs.iter().map(|&x| x & 0xffff).sum();
            let h = (0..4u64).fold(0u64, |h, t| h | (t * 0x1111 + u64::from(b)) << (16 * t));
            vec![
                xs.iter().fold(0u64, |s, &x| s.wrapping_add(x)),
                xs.iter().copied().fold(0, u64::max),
                xs.iter().map(|&x| x as i64).fold(i64::MAX, i64::min) as u64,
                xs.iter().fold(0, |s, &x| s ^ x),
                xs.iter().fold(!0, |s, &x| s & (x | 0x00ff_00ff_00ff_00ff)),
                0, // exch: checked with the old values
                (halves as f64 * 0.5).to_bits(),
                u64::from(xs.iter().fold(0u32, |s, &x| s.wrapping_add(x as u32))),
                xs.iter().map(|&x| x >> 32).max().unwrap_or(0),
                h,
                u64::from(block.div_ceil(3)),
                35,
            ]
        })
        .collect();
    let case = Case {
        grid: [blocks, 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
        args: vec![
            // One more value past n, which no block may use.
            buf(ElemType::U64, u64_bytes(&[q.as_slice(), &[u64::MAX]].concat())),
            val(n as i32),
            buf(ElemType::U64, u64_bytes(&vec![0; 12 * blocks as usize])),
            buf(ElemType::U64, u64_bytes(&[vec![0; n], vec![SENTINEL64]].concat())),
        ],
        expected: vec![],
    };
    let check = move |got: &Buffers| {
        let mut errs = Vec::new();
        let out = words64(got, 2);
        let olds = words64(got, 3);
        if out.len() != 12 * blocks as usize || olds.len() != n + 1 {
            return vec!["a buffer has the wrong size".to_string()];
        }
        if olds[n] != SENTINEL64 {
            errs.push("an element past n was used".to_string());
        }
        for b in 0..blocks {
            let mut got = out[12 * b as usize..][..12].to_vec();
            let fin = got[5];
            got[5] = 0;
            compare(&mut errs, &format!("block {b}"), &SHARED64, &got, &want[b as usize]);
            // exch: the old values and the final value are the initial value and every
            // value the block wrote.
            let mine = of_block(b);
            let mut seen: Vec<u64> = mine.iter().map(|&i| olds[i]).collect();
            seen.push(fin);
            let mut written: Vec<u64> = mine.iter().map(|&i| q[i]).collect();
            written.push(EXCH0);
            if !same_multiset(&seen, &written) {
                errs.push(format!(
                    "block {b}: exch.b64 old values + final value are not {{initial}} + {{q[i]}}"
                ));
            }
        }
        errs
    };
    AtomicsCase {
        entry: "shared_atomics64",
        what: format!("n = {n}, grid {blocks}, block {block}"),
        case,
        check: Box::new(check),
    }
}
