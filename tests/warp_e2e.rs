//! Warp-level intrinsics (`tests/kernels/warp.cu`, from nvcc 13 sm_75/80/90, NVRTC 12
//! compute_52/70 and clang 14 sm_70) on the default Vulkan device, whose subgroups need
//! not be 32 wide (8 on lavapipe): PTX warps are emulated. Compared bit for bit with a
//! CPU model of 32-lane warps, for block sizes from one warp to 1024 threads and a
//! partial last warp.

mod common;

use common::*;
use ptxvk::spec::{ElemType, SpecArg};

/// The nine outputs per thread that `warp.cu`'s header defines.
fn reference(input: &[i32], n: usize, blocks: usize, block: usize) -> Vec<i32> {
    let mut out = vec![0i32; 9 * n];
    for b in 0..blocks {
        for w in (0..block).step_by(32) {
            let lanes = (block - w).min(32);
            let active: u32 = if lanes == 32 { u32::MAX } else { (1u32 << lanes) - 1 };
            let v: Vec<i32> = (0..lanes)
                .map(|l| {
                    let i = b * block + w + l;
                    if i < n {
                        input[i]
                    } else {
                        0
                    }
                })
                .collect();
            let ballot = (0..lanes).filter(|&l| v[l] & 1 != 0).fold(0u32, |m, l| m | 1 << l);
            let any = v.iter().any(|&x| x > 1000);
            let all = v.iter().all(|&x| x >= 0);
            let total = v.iter().fold(0i32, |a, &x| a.wrapping_add(x));
            for l in 0..lanes {
                let i = b * block + w + l;
                if i >= n {
                    continue;
                }
                let seg = l / 16 * 16;
                let s16 =
                    v[seg..(seg + 16).min(lanes)].iter().fold(0i32, |a, &x| a.wrapping_add(x));
                let below = (1u32 << l).wrapping_sub(1);
                let matching =
                    (0..lanes).filter(|&k| v[k] & 3 == v[l] & 3).fold(0u32, |m, k| m | 1 << k);
                let up = if l % 16 == 0 { v[l] } else { v[l - 1] };
                let scan = v[seg..=l].iter().fold(0i32, |a, &x| a.wrapping_add(x));
                out[9 * i..9 * i + 9].copy_from_slice(&[
                    active as i32,
                    s16,
                    ballot as i32,
                    (ballot & below).count_ones() as i32,
                    i32::from(any) | i32::from(all) << 1,
                    matching as i32,
                    total,
                    up,
                    scan,
                ]);
            }
        }
    }
    out
}

fn bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A launch of `blocks` × `block` threads of a kernel `(const int* in, int n, int*
/// out, …)` with n = `input.len()`: one zeroed `int` buffer of each size in
/// `out_bytes`, and the expected contents of some arguments by index.
fn int_case(
    blocks: usize,
    block: usize,
    input: &[i32],
    out_bytes: &[usize],
    expected: Vec<(usize, Vec<u8>)>,
) -> Case {
    let mut args = vec![
        SpecArg::Buffer { ty: ElemType::S32, bytes: bytes(input) },
        SpecArg::Value((input.len() as i32).to_le_bytes().to_vec()),
    ];
    args.extend(
        out_bytes.iter().map(|&b| SpecArg::Buffer { ty: ElemType::S32, bytes: vec![0; b] }),
    );
    Case {
        grid: [blocks as u32, 1, 1],
        block: [block as u32, 1, 1],
        shared_bytes: 0,
        args,
        expected,
    }
}

#[test]
fn warp_intrinsics_in_uniform_code_for_every_block_size() {
    let mut rng = Rng(17);
    for (blocks, block, n) in
        [(3, 32, 90), (2, 48, 96), (2, 64, 100), (1, 256, 250), (1, 1024, 1000)]
    {
        let mut input: Vec<i32> = (0..n).map(|_| (rng.next_u32() % 2000) as i32 - 300).collect();
        input[0] = i32::MAX;
        let expected = vec![(2, bytes(&reference(&input, n, blocks, block)))];
        let case = int_case(blocks, block, &input, &[36 * n], expected);
        run_all_variants("warp", |_| "warp_ops".to_string(), ElemType::S32, &case);
    }
}

/// Launches `entry` of `tests/ptx/warp/FILE.ptx` with `input` and `words` u32 outputs
/// per thread.
fn run_ptx(
    file: &str,
    entry: &str,
    input: &[i32],
    blocks: u32,
    block: u32,
    words: usize,
) -> Vec<u32> {
    let device = device().expect("device");
    let module = load(&device, &repo().join(format!("tests/ptx/warp/{file}.ptx")));
    let inb = device.buffer_from(input).expect("in");
    let out = device.zeroed::<u32>(words * input.len()).expect("out");
    let args = [ptxvk::Arg::from(&inb), ptxvk::Arg::from(&out)];
    module.kernel(entry).expect("kernel").launch(blocks, block, 0, &args).expect("launch");
    out.to_vec().expect("read")
}

/// redux.sync (min/max/xor), match.all.sync.b64 with its predicate, elect.sync,
/// shfl.sync.idx, vote.sync.uni, bar.warp.sync and the warp special registers
/// (`tests/ptx/warp/collectives.ptx`), with a partial last warp.
#[test]
fn warp_registers_reductions_match_and_elect() {
    if device().is_none() {
        return;
    }
    let mut rng = Rng(18);
    // 80 threads: a partial last warp of 16 lanes (lane ^ 1 stays inside it).
    let (blocks, block) = (2u32, 80u32);
    let n = (blocks * block) as usize;
    let mut input: Vec<i32> =
        (0..n).map(|_| rng.next_u32() as i32 >> (rng.next_u32() % 24)).collect();
    // Warp 1 of block 0 all non-negative (match.all holds there).
    for x in &mut input[32..64] {
        *x = x.wrapping_abs() & 0x7fff_ffff;
    }
    let got = run_ptx("collectives", "collectives", &input, blocks, block, 12);
    let mut want = Vec::with_capacity(12 * n);
    for b in 0..blocks as usize {
        for t in 0..block as usize {
            let (lane, w) = (t % 32, t / 32);
            let lanes = (block as usize - 32 * w).min(32);
            let v = |l: usize| input[b * block as usize + 32 * w + l];
            let vs: Vec<i32> = (0..lanes).map(v).collect();
            let members: u32 = if lanes == 32 { u32::MAX } else { (1 << lanes) - 1 };
            let same_sign = vs.iter().all(|&x| (x < 0) == (vs[0] < 0));
            let shfl = v(lane ^ 1) as u32;
            let odd: Vec<bool> = vs.iter().map(|&x| x & 1 != 0).collect();
            let uni = odd.iter().all(|&o| o) || odd.iter().all(|&o| !o);
            want.extend([
                lane as u32,
                w as u32,
                block.div_ceil(32),
                (1u32 << lane) - 1,
                !((1u32 << lane) - 1),
                *vs.iter().min().expect("lanes") as u32,
                vs.iter().map(|&x| x as u32).max().expect("lanes"),
                vs.iter().fold(0u32, |a, &x| a ^ x as u32),
                if same_sign { members } else { 0 },
                u32::from(same_sign),
                u32::from(lane == 0) << 8,
                shfl | u32::from(uni) << 31,
            ]);
        }
    }
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "thread {} word {}", k / 12, k % 12);
    }
}

/// `redux.sync.{min,max}{.abs}{.NaN}.f32` (PTX ISA 9.2 §9.7.13.7): NaN lanes ignored (a
/// warp of NaNs gives the canonical NaN 0x7fffffff) or, with `.NaN`, making the result
/// the canonical NaN; -0.0 below +0.0; `.abs` reduces absolute values.
fn redux_f32_reference(bits: &[u32], min: bool, abs: bool, nan: bool) -> u32 {
    let xs: Vec<f32> =
        bits.iter().map(|&b| f32::from_bits(if abs { b & 0x7fff_ffff } else { b })).collect();
    if xs.iter().all(|x| x.is_nan()) || (nan && xs.iter().any(|x| x.is_nan())) {
        return 0x7fff_ffff;
    }
    let numbers = xs.iter().filter(|x| !x.is_nan());
    let r = if min {
        numbers.min_by(|a, b| a.total_cmp(b))
    } else {
        numbers.max_by(|a, b| a.total_cmp(b))
    };
    r.map_or(0x7fff_ffff, |x| x.to_bits())
}

#[test]
fn redux_f32_min_max_abs_nan() {
    if device().is_none() {
        return;
    }
    let mut rng = Rng(23);
    let specials = [
        0x0000_0000u32,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_0001,
        0x0000_0001,
        0x8000_0001,
        0x3f80_0000,
        0xbf80_0000,
    ];
    let (blocks, block) = (2u32, 80u32);
    let n = (blocks * block) as usize;
    let mut input: Vec<u32> = (0..n)
        .map(|_| {
            if rng.next_u32().is_multiple_of(3) {
                specials[rng.next_u32() as usize % specials.len()]
            } else {
                rng.next_u32()
            }
        })
        .collect();
    // Block 0: warp 0 all NaN, warp 1 only zeros of both signs and one NaN.
    for (k, x) in input[..32].iter_mut().enumerate() {
        *x = if k % 2 == 0 { 0x7fc0_0000 } else { 0xff80_0001 + k as u32 };
    }
    for (k, x) in input[32..64].iter_mut().enumerate() {
        *x = if k == 7 {
            0x7f80_0001
        } else if k % 3 == 0 {
            0x8000_0000
        } else {
            0
        };
    }
    // Block 1, warp 0: no NaN at all.
    for x in &mut input[80..112] {
        if f32::from_bits(*x).is_nan() {
            *x = 0x4000_0000;
        }
    }
    let input_i32: Vec<i32> = input.iter().map(|&x| x as i32).collect();
    let got = run_ptx("redux_f32", "redux_f32", &input_i32, blocks, block, 4);
    let mut want = Vec::with_capacity(4 * n);
    for b in 0..blocks as usize {
        for t in 0..block as usize {
            let w = t / 32;
            let lanes = (block as usize - 32 * w).min(32);
            let first = b * block as usize + 32 * w;
            let vs = &input[first..first + lanes];
            want.extend([
                redux_f32_reference(vs, true, false, false),
                redux_f32_reference(vs, false, false, false),
                redux_f32_reference(vs, true, true, true),
                redux_f32_reference(vs, false, false, true),
            ]);
        }
    }
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "thread {} word {}: got {g:#x}, want {w:#x}", k / 4, k % 4);
    }
}

/// `shfl` and `vote` without `.sync` (PTX ISA before 6.0; `tests/ptx/warp/legacy.ptx`).
#[test]
fn legacy_shfl_and_vote() {
    if device().is_none() {
        return;
    }
    let mut rng = Rng(19);
    let input: Vec<i32> = (0..128).map(|_| (rng.next_u32() % 100) as i32 - 10).collect();
    let got = run_ptx("legacy", "legacy", &input, 2, 64, 2);
    let mut want = Vec::new();
    for w in input.chunks(32) {
        let ballot = (0..32).filter(|&l| w[l] & 1 != 0).fold(0u32, |m, l| m | 1 << l);
        let all = u32::from(w.iter().all(|&x| x >= 0));
        for l in 0..32 {
            // Lane l reads lane l + 1 while that is at most the clamp, 31.
            let down = if l < 31 { w[l + 1] } else { w[l] };
            want.extend([down as u32, (ballot & !1) | all]);
        }
    }
    assert_eq!(got, want);
}

/// `divergent` and `early` of `tests/kernels/warp_divergent.cu` (semantics in its
/// header): collectives under branches that differ across warps, loops whose trip
/// count differs by warp, exact member masks within warps, and an early return. With
/// warps emulated by block-wide barriers these run through predication.
#[test]
fn warp_collectives_in_divergent_control_flow() {
    let mut rng = Rng(20);
    for (blocks, block, n) in [(2usize, 128usize, 250usize), (3, 96, 270)] {
        let input: Vec<i32> = (0..n).map(|_| (rng.next_u32() % 1000) as i32 - 200).collect();
        let v = |i: usize| if i < n { input[i] } else { 0 };
        let mut out = vec![0i32; 3 * n];
        let mut block_out = vec![0i32; blocks];
        for (b, sum) in block_out.iter_mut().enumerate() {
            *sum = (0..block).fold(0i32, |a, t| a.wrapping_add(v(b * block + t)));
            for w in 0..block / 32 {
                let base = b * block + 32 * w;
                let iters = (0..32).map(|l| v(base + l) & 7).max().unwrap_or(0);
                for l in 0..32 {
                    let i = base + l;
                    if i >= n {
                        continue;
                    }
                    let k = v(i) & 7;
                    let mut acc2 = 0i32;
                    for j in 0..5 {
                        if j < l % 5 {
                            let members: Vec<usize> = (0..32).filter(|&x| j < x % 5).collect();
                            let odd =
                                members.iter().filter(|&&x| (v(base + x) >> j) & 1 != 0).count();
                            acc2 = acc2.wrapping_add(odd as i32).wrapping_add(v(base + members[0]));
                        }
                    }
                    out[3 * i..3 * i + 3].copy_from_slice(&[k * (k + 1) / 2, iters, acc2]);
                }
            }
        }
        let expected = vec![(2, bytes(&out)), (3, bytes(&block_out))];
        let case = int_case(blocks, block, &input, &[12 * n, 4 * blocks], expected);
        run_all_variants("warp_divergent", |_| "divergent".to_string(), ElemType::S32, &case);

        // `early`: the lanes with i < n, a prefix of each warp.
        let mut early = vec![0i32; 2 * n];
        for i in 0..n {
            let base = i / 32 * 32;
            let lanes: Vec<usize> = (base..(base + 32).min(n)).collect();
            let odd = lanes.iter().filter(|&&x| input[x] & 1 != 0).count() as i32;
            early[2 * i] = odd;
            early[2 * i + 1] = input[base];
        }
        let case = int_case(blocks, block, &input, &[8 * n], vec![(2, bytes(&early))]);
        run_all_variants("warp_divergent", |_| "early".to_string(), ElemType::S32, &case);
    }
}

/// Stream compaction with warp-aggregated atomics (`aggregate` of
/// `tests/kernels/warp_divergent.cu`): `__activemask()` in a branch that differs within
/// warps names exactly the lanes in the branch, so the counter ends at the number of
/// positive inputs and the output holds each of them once.
#[test]
fn warp_aggregated_atomics_compact_a_stream() {
    let Some(device) = device() else { return };
    let mut rng = Rng(21);
    let n = 1000usize;
    let input: Vec<i32> = (0..n).map(|_| (rng.next_u32() % 200) as i32 - 100).collect();
    let mut positives: Vec<i32> = input.iter().copied().filter(|&x| x > 0).collect();
    positives.sort_unstable();
    for path in variants("warp_divergent") {
        let module = load(&device, &path);
        let inb = device.buffer_from(&input).expect("in");
        let out = device.zeroed::<i32>(n).expect("out");
        let counter = device.zeroed::<i32>(1).expect("counter");
        let args = [
            ptxvk::Arg::from(&inb),
            ptxvk::Arg::from(n as i32),
            ptxvk::Arg::from(&out),
            ptxvk::Arg::from(&counter),
        ];
        module.kernel("aggregate").expect("kernel").launch(8, 128, 0, &args).expect("launch");
        let count = counter.to_vec().expect("counter")[0] as usize;
        assert_eq!(count, positives.len(), "{}", path.display());
        let mut got = out.to_vec().expect("out")[..count].to_vec();
        got.sort_unstable();
        assert_eq!(got, positives, "{}", path.display());
    }
}

/// The native (subgroups of 32) and split (64) forms of every warp kernel validate for
/// Vulkan 1.3 and use subgroup operations instead of barriers; the emulated form has
/// barriers. (lavapipe's subgroups are 8 wide, so only the emulated form runs here.)
#[test]
fn native_and_split_forms_validate() {
    use ptxvk::compile::WarpMode;
    // Opcodes (SPIR-V 1.6 §3.56): OpControlBarrier, OpGroupNonUniformShuffle.
    const CONTROL_BARRIER: u32 = 224;
    const SHUFFLE: u32 = 345;
    let count = |words: &[u32], opcode: u32| {
        let (mut n, mut at) = (0, 5);
        while at < words.len() {
            let w = words[at];
            n += usize::from(w & 0xffff == opcode);
            at += ((w >> 16) as usize).max(1);
        }
        n
    };
    let mut files = variants("warp");
    files.extend(variants("warp_divergent"));
    files.push(repo().join("tests/ptx/warp/collectives.ptx"));
    files.push(repo().join("tests/ptx/warp/redux_f32.ptx"));
    for path in files {
        let name = path.display().to_string();
        for (mode, words) in common::compile_every_warp_mode(&path) {
            let (barriers, shuffles) = (count(&words, CONTROL_BARRIER), count(&words, SHUFFLE));
            if mode == WarpMode::Emulated {
                assert!(
                    barriers > 0 && shuffles == 0,
                    "{name} emulated: {barriers} barriers, {shuffles} shuffles"
                );
            } else {
                assert!(shuffles > 0, "{name} {mode:?}: no subgroup shuffle");
            }
        }
    }
}

/// The warp probe that `Device::open` runs before trusting a required subgroup size
/// passes for the device's own warp mode (emulated on lavapipe): the probe's CPU model
/// of CUDA's numbering agrees with warps that are right.
#[test]
fn the_warp_probe_accepts_the_devices_warps() {
    let Some(device) = common::device() else { return };
    ptxvk::probes::probe_warps(&device).expect("the probe sees CUDA's warp numbering");
}

/// The lanes of warp `w` of a block of `block` threads that exist.
fn existing_lanes(block: usize, w: usize) -> u32 {
    let lanes = (block - 32 * w).min(32);
    if lanes == 32 {
        u32::MAX
    } else {
        (1u32 << lanes) - 1
    }
}

/// How lanes leave before the collectives of `tests/ptx/warp/absent_lanes.ptx`.
#[derive(Clone, Copy, Debug)]
struct Absent {
    gone_even: u32,
    gone_odd: u32,
    members: u32,
    /// 0: `ret`; 1: a branch to another path that ends the thread.
    how: u32,
}

impl Absent {
    /// The lanes of warp `w` that execute the collectives.
    fn executing(&self, block: usize, w: usize) -> u32 {
        let gone = if w.is_multiple_of(2) { self.gone_even } else { self.gone_odd };
        self.members & !gone & existing_lanes(block, w)
    }
}

/// CPU model of `absent_lanes.ptx`, written from the ISA's definitions of each
/// collective over the set `a` of lanes that execute it (a `.sync` collective's lanes
/// are the non-exited threads of its member mask; lanes that went another way and end
/// there are not waited for once they have exited), with ptxvk's choice for what the ISA
/// leaves undefined: a `shfl` from a lane outside that set gives 0.
fn absent_reference(v: &[i32], src: &[u32], blocks: usize, block: usize, how: &Absent) -> Vec<u32> {
    let mut out = vec![0u32; 28 * blocks * block];
    for b in 0..blocks {
        for w in 0..block.div_ceil(32) {
            let a = how.executing(block, w);
            let base = b * block + 32 * w;
            let lanes: Vec<usize> = (0..32).filter(|&l| a >> l & 1 != 0).collect();
            let val = |l: usize| v[base + l];
            let bits = |f: &dyn Fn(usize) -> bool| {
                lanes.iter().filter(|&&l| f(l)).fold(0u32, |m, &l| m | 1 << l)
            };
            let odd = bits(&|l| val(l) & 1 != 0);
            let sign = |l: usize| (val(l) as u32) >> 31;
            let same_sign = lanes.iter().all(|&l| sign(l) == sign(lanes[0]));
            let us = || lanes.iter().map(|&l| val(l) as u32);
            let floats = || lanes.iter().map(|&l| val(l) as f32);
            let shfl = |j: usize| if a >> j & 1 != 0 { val(j) as u32 } else { 0 };
            let pair = |l: usize| (val(l) & 1, val(l) >> 1 & 1);
            let leader = a.trailing_zeros();
            for &l in &lanes {
                let o = &mut out[28 * (base + l)..28 * (base + l + 1)];
                o[0] = u32::from(lanes.iter().all(|&k| val(k) >= 0));
                o[1] = u32::from(lanes.iter().any(|&k| val(k) > 1000));
                o[2] = u32::from(odd == 0 || odd == a);
                o[3] = odd;
                o[4] = 1;
                o[5] = us().fold(0u32, u32::wrapping_add);
                o[6] = lanes.iter().map(|&k| val(k)).min().unwrap_or(0) as u32;
                o[7] = lanes.iter().map(|&k| val(k)).max().unwrap_or(0) as u32;
                o[8] = us().min().unwrap_or(0);
                o[9] = us().max().unwrap_or(0);
                o[10] = us().fold(u32::MAX, |x, y| x & y);
                o[11] = us().fold(0, |x, y| x | y);
                o[12] = us().fold(0, |x, y| x ^ y);
                o[13] = bits(&|k| val(k) & 3 == val(l) & 3);
                o[14] = if same_sign { a } else { 0 };
                o[15] = u32::from(same_sign);
                o[16] = bits(&|k| pair(k) == pair(l));
                o[17] = shfl(src[base + l] as usize);
                o[18] = shfl(l ^ 1);
                // .up by 1 with c = 0: in range (p) from lane 1 on; out of range, own value.
                o[19] = if l >= 1 { shfl(l - 1) } else { val(l) as u32 };
                o[20] = u32::from(l >= 1);
                o[21] = leader | u32::from(l as u32 == leader) << 8;
                o[22] = a;
                o[23] = val(src[base + l] as usize) as u32;
                o[24] = floats().min_by(f32::total_cmp).map_or(0, f32::to_bits);
                o[25] = floats().max_by(f32::total_cmp).map_or(0, f32::to_bits);
            }
            if how.how == 1 {
                let away = existing_lanes(block, w) & !a;
                for l in (0..32).filter(|&l| away >> l & 1 != 0) {
                    out[28 * (base + l)] = 0xd0d0_d0d0;
                    out[28 * (base + l) + 1] = away;
                }
            }
        }
    }
    out
}

/// `.sync` collectives with member masks that name lanes which exited or went another
/// way (issue #34): vote, redux, match, shfl, elect, activemask and bar.warp.sync
/// operate over the lanes that execute them (the four kernels of
/// `tests/ptx/warp/absent_lanes.ptx` write their words of one output),
/// against a CPU model; lanes 0–7 (a whole lavapipe subgroup) and 8–15 leaving
/// included, in full and partial warps. Every warp mode's form validates.
#[test]
fn collectives_over_the_lanes_that_arrive() {
    let path = repo().join("tests/ptx/warp/absent_lanes.ptx");
    assert_eq!(common::compile_every_warp_mode(&path).len(), 3);
    let Some(device) = device() else { return };
    let module = load(&device, &path);
    let kernels = ["votes", "reductions", "matches", "shuffles"]
        .map(|name| module.kernel(name).expect("kernel"));
    let all = u32::MAX;
    let cases = [
        // The case: lane 0 leaves, the rest vote with the full mask.
        Absent { gone_even: 1, gone_odd: 1, members: all, how: 0 },
        Absent { gone_even: 1, gone_odd: 1, members: all, how: 1 },
        // A whole 8-wide subgroup leaves: lanes 0-7 (even warps), 8-15 (odd ones).
        Absent { gone_even: 0xff, gone_odd: 0xff00, members: all, how: 0 },
        Absent { gone_even: 0xff, gone_odd: 0xff00, members: all, how: 1 },
        Absent { gone_even: 0x8000_0421, gone_odd: 0xaaaa_aaaa, members: all, how: 1 },
        // Exact member masks, with and without lanes of them gone.
        Absent { gone_even: 0, gone_odd: 0, members: 0x0000_ffff, how: 1 },
        Absent { gone_even: 0x10, gone_odd: 0x100, members: 0x00ff_ff1f, how: 0 },
        // One lane left: lane 0 of even warps, lane 31 of odd ones.
        Absent { gone_even: 0xffff_fffe, gone_odd: 0x7fff_ffff, members: all, how: 1 },
        Absent { gone_even: 0, gone_odd: 0, members: all, how: 0 },
    ];
    let mut rng = Rng(34);
    for (blocks, block) in [(2usize, 64usize), (1, 80)] {
        let n = blocks * block;
        for case in &cases {
            let mut v: Vec<i32> = (0..n).map(|_| (rng.next_u32() % 2000) as i32 - 300).collect();
            let mut src = vec![0u32; n];
            for b in 0..blocks {
                for w in 0..block.div_ceil(32) {
                    let a = case.executing(block, w);
                    let lanes: Vec<u32> = (0..32).filter(|&l| a >> l & 1 != 0).collect();
                    // Warps whose executing lanes are all non-negative (vote.all holds
                    // there) while those that leave are negative.
                    let positive = (b + w).is_multiple_of(2);
                    for l in 0..(block - 32 * w).min(32) {
                        let i = b * block + 32 * w + l;
                        if a >> l & 1 == 0 {
                            v[i] = -(v[i].abs() | 1);
                        } else if positive {
                            v[i] = v[i].abs();
                        }
                        if !lanes.is_empty() {
                            src[i] = lanes[rng.next_u32() as usize % lanes.len()];
                        }
                    }
                }
            }
            let inb = device.buffer_from(&v).expect("in");
            let srcb = device.buffer_from(&src).expect("srcs");
            let out = device.zeroed::<u32>(28 * n).expect("out");
            let args = [
                ptxvk::Arg::from(&inb),
                ptxvk::Arg::from(&srcb),
                ptxvk::Arg::from(&out),
                ptxvk::Arg::from(case.gone_even),
                ptxvk::Arg::from(case.gone_odd),
                ptxvk::Arg::from(case.members),
                ptxvk::Arg::from(case.how),
            ];
            for kernel in &kernels {
                kernel.launch(blocks as u32, block as u32, 0, &args).expect("launch");
            }
            let got = out.to_vec().expect("read");
            let want = absent_reference(&v, &src, blocks, block, case);
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g,
                    w,
                    "{case:?}, {blocks}x{block}: thread {} word {}: got {g:#x}, want {w:#x}",
                    k / 28,
                    k % 28
                );
            }
        }
    }
}
