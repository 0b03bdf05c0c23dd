//! The model of [`InstKind::Warp`](crate::ir::InstKind::Warp) before `pass::expand_warp`:
//! each collective runs once for the lanes of a warp that wait at it (they *arrive*),
//! computed from the lanes' operands as `crate::ir::warp` specifies it (the ISA's
//! pseudocode for `shfl`, PTX ISA 9.2 §9.7.8.6; the definitions of §9.7.13.4-10 for the
//! others), on values rather than through exchanges of words as the expansion does.
//! Every lane computes over its own member set `M = members & arriving`.

use super::arith::{mask, sext};
use super::thread::Thread;
use crate::ir::{Kernel, OpTy, ShuffleMode, Value, VoteMode, WarpInst, WarpOp, WarpReduction};

/// The canonical NaN of `redux.sync.f32` (§9.7.13.7).
const CANONICAL_NAN: u32 = 0x7fff_ffff;

/// Runs collective `w` for the lanes of `warp` in `present` (bit `l`: lane `l` arrives).
pub(super) fn run(k: &Kernel, warp: &mut [Thread<'_>], present: u64, w: &WarpInst) {
    let present = present as u32;
    let lanes: Vec<usize> = (0..warp.len().min(32)).filter(|&l| present >> l & 1 != 0).collect();
    let get32 = |warp: &[Thread<'_>], l: usize, v: Value| (warp[l].get(v) & mask(32)) as u32;
    // Each arriving lane's member set, from its own mask operand.
    let mut m = [0u32; 32];
    for &l in &lanes {
        m[l] = w.members.map_or(u32::MAX, |v| get32(warp, l, v)) & present;
    }
    let in_m = |l: usize, j: usize| j < 32 && m[l] >> j & 1 != 0;
    let set_all = |warp: &mut [Thread<'_>], results: Vec<(usize, crate::ir::RegId, u64)>| {
        for (l, r, v) in results {
            warp[l].set(k, r, v);
        }
    };
    let mut out = Vec::new();
    match &w.op {
        WarpOp::Shuffle { mode, dst, pred, value, lane, clamp } => {
            let a: Vec<u32> = (0..warp.len()).map(|l| get32(warp, l, *value)).collect();
            for &l in &lanes {
                let (b, c) = (get32(warp, l, *lane), get32(warp, l, *clamp));
                let me = l as i64;
                let (bval, cval, seg) =
                    (i64::from(b & 31), i64::from(c & 31), i64::from(c >> 8 & 31));
                let min_lane = me & seg;
                let max_lane = min_lane | (cval & !seg);
                let (j, ok) = match mode {
                    ShuffleMode::Up => (me - bval, me - bval >= max_lane),
                    ShuffleMode::Down => (me + bval, me + bval <= max_lane),
                    ShuffleMode::Bfly => (me ^ bval, (me ^ bval) <= max_lane),
                    ShuffleMode::Idx => {
                        let j = min_lane | (bval & !seg);
                        (j, j <= max_lane)
                    }
                };
                let j = if ok { j as usize } else { l };
                let d = if in_m(l, j) { a[j] } else { 0 };
                out.push((l, *dst, u64::from(d)));
                if let Some(p) = pred {
                    out.push((l, *p, u64::from(ok)));
                }
            }
        }
        WarpOp::Vote { mode, dst, src, negate } => {
            let votes: Vec<bool> = (0..warp.len())
                .map(|l| (warp[l].get(Value::Reg(*src)) & 1 != 0) != *negate)
                .collect();
            for &l in &lanes {
                let yes = (0..32).filter(|&j| in_m(l, j) && votes[j]).fold(0u32, |a, j| a | 1 << j);
                let v = match mode {
                    VoteMode::Ballot => u64::from(yes),
                    VoteMode::All => u64::from(yes == m[l]),
                    VoteMode::Any => u64::from(yes != 0),
                    VoteMode::Uni => u64::from(yes == m[l] || yes == 0),
                };
                out.push((l, *dst, v));
            }
        }
        WarpOp::Match { all, wide, dst, pred, value } => {
            let bits = if *wide { 64 } else { 32 };
            let a: Vec<u64> = (0..warp.len()).map(|l| warp[l].get(*value) & mask(bits)).collect();
            for &l in &lanes {
                let same =
                    (0..32).filter(|&j| in_m(l, j) && a[j] == a[l]).fold(0u32, |x, j| x | 1 << j);
                if *all {
                    let equal = same == m[l];
                    out.push((l, *dst, if equal { u64::from(m[l]) } else { 0 }));
                    if let Some(p) = pred {
                        out.push((l, *p, u64::from(equal)));
                    }
                } else {
                    out.push((l, *dst, u64::from(same)));
                }
            }
        }
        WarpOp::Reduce { op, ty, abs, nan, dst, value } => {
            let a: Vec<u32> = (0..warp.len()).map(|l| get32(warp, l, *value)).collect();
            for &l in &lanes {
                let values = (0..32).filter(|&j| in_m(l, j)).map(|j| a[j]);
                let r = match ty {
                    OpTy::F(_) => reduce_f32(*op == WarpReduction::Max, *abs, *nan, values),
                    _ => reduce_int(*op, ty.is_signed(), values),
                };
                out.push((l, *dst, u64::from(r)));
            }
        }
        WarpOp::ActiveMask { dst } => {
            lanes.iter().for_each(|&l| out.push((l, *dst, u64::from(present))));
        }
        WarpOp::Elect { dst, pred } => {
            for &l in &lanes {
                let leader = m[l].trailing_zeros();
                out.push((l, *pred, u64::from(m[l] != 0 && leader as usize == l)));
                if let Some(d) = dst {
                    out.push((l, *d, u64::from(leader)));
                }
            }
        }
        WarpOp::Sync => {}
    }
    set_all(warp, out);
}

/// An integer reduction over `values`, from the operation's identity (§9.7.13.6).
fn reduce_int(op: WarpReduction, signed: bool, values: impl Iterator<Item = u32>) -> u32 {
    let s = |v: u32| sext(u64::from(v), 32);
    let mut acc: Option<u32> = None;
    for v in values {
        acc = Some(match acc {
            None => v,
            Some(a) => match op {
                WarpReduction::Add => a.wrapping_add(v),
                WarpReduction::And => a & v,
                WarpReduction::Or => a | v,
                WarpReduction::Xor => a ^ v,
                WarpReduction::Min if signed => s(a).min(s(v)) as u32,
                WarpReduction::Max if signed => s(a).max(s(v)) as u32,
                WarpReduction::Min => a.min(v),
                WarpReduction::Max => a.max(v),
            },
        });
    }
    acc.unwrap_or(match op {
        WarpReduction::Add | WarpReduction::Or | WarpReduction::Xor => 0,
        WarpReduction::And => u32::MAX,
        WarpReduction::Min if signed => i32::MAX as u32,
        WarpReduction::Max if signed => i32::MIN as u32,
        WarpReduction::Min => u32::MAX,
        WarpReduction::Max => 0,
    })
}

/// `redux.sync.{min,max}{.abs}{.NaN}.f32` over `values` (§9.7.13.7): -0 below +0, NaNs
/// ignored (or, under `.NaN`, the result), the canonical NaN when no number is left.
fn reduce_f32(max: bool, abs: bool, nan: bool, values: impl Iterator<Item = u32>) -> u32 {
    let mut best: Option<f32> = None;
    for bits in values {
        let x = f32::from_bits(if abs { bits & 0x7fff_ffff } else { bits });
        if x.is_nan() {
            if nan {
                return CANONICAL_NAN;
            }
            continue;
        }
        best = Some(match best {
            None => x,
            // `total_cmp` orders -0 below +0, as the ISA does for `redux`.
            Some(b) if (x.total_cmp(&b) == std::cmp::Ordering::Greater) == max => x,
            Some(b) => b,
        });
    }
    best.map_or(CANONICAL_NAN, f32::to_bits)
}

#[cfg(test)]
mod tests {
    use super::super::memory::Region;
    use super::super::{run, Launch};

    /// Lane 5 exits; the others shuffle down by one, reduce, vote on oddness and elect,
    /// over the whole warp.
    const COLLECTIVES: &str = "\
kernel collectives {
    params size 8 align 8
    param out .u64 x1 @0 size 8 align 8
    shared 0
    local 0
    entry bb0
    reg pred %p0 %p1 %p2 %p3
    reg i64 %rd1 %rd2
    reg i32 %t %v %odd %r1 %r2 %r3 %r4 %r5 %r6 %r7
bb0:
    %rd1 = load.param.u64 [0]
    %t = special.tid.x
    %rd2 = mulwide.u32 %t, 24
    %rd1 = add.u64 %rd1, %rd2
    %v = mad.lo.u32 %t, 3, 1
    %p0, _ = setp.eq.u32 %t, 5
    branch %p0, bb2, bb1
bb1:
    %r1, %p1 = shfl.sync.down %v, 1, 31, 0xffffffff
    %r2 = redux.sync.add.u32 %v, 0xffffffff
    %odd = and.u32 %t, 1
    %p2, _ = setp.ne.u32 %odd, 0
    %r3 = vote.sync.ballot %p2, 0xffffffff
    %r4, %p3 = elect.sync 0xfffffff0
    %r5 = selp.u32 1, 0, %p1
    %r6 = selp.u32 1, 0, %p3
    %r7 = redux.sync.min.s32 %v, 0x0000ff00
    store.global.u32 [%rd1], %r1, %r5, %r2, %r3, %r4, %r6
    return
bb2:
    return
}
";

    #[test]
    fn collectives_follow_the_isa() {
        let k = crate::text::parse(COLLECTIVES).expect("parses").remove(0);
        let launch = Launch {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            params: 0x1_0000_0000u64.to_le_bytes().to_vec(),
            buffers: vec![Region { base: 0x1_0000_0000, bytes: vec![0; 32 * 24] }],
            dynamic_shared: 0,
            step_limit: 100_000,
        };
        let out = run(&k, None, &launch).expect("runs");
        let word = |t: usize, i: usize| {
            let b = &out.buffers[0][24 * t + 4 * i..24 * t + 4 * i + 4];
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        };
        let v = |t: u32| 3 * t + 1;
        let sum: u32 = (0..32).filter(|&t| t != 5).map(v).sum();
        for t in (0..32u32).filter(|&t| t != 5) {
            let i = t as usize;
            // `shfl.down` by 1 clamped at 31: lane 31 keeps its own value and `p` fails;
            // lane 4 reads lane 5, which did not arrive: 0.
            let down = match t {
                31 => v(31),
                4 => 0,
                _ => v(t + 1),
            };
            assert_eq!(word(i, 0), down, "lane {t}: shfl.down");
            assert_eq!(word(i, 1), u32::from(t != 31), "lane {t}: p");
            assert_eq!(word(i, 2), sum, "lane {t}: redux.add");
            assert_eq!(word(i, 3), 0xaaaa_aaaa & !(1 << 5), "lane {t}: vote.ballot");
            assert_eq!(word(i, 4), 4, "lane {t}: elect's leader among lanes 4-31");
            assert_eq!(word(i, 5), u32::from(t == 4), "lane {t}: elect's p");
        }
        assert_eq!(word(5, 0), 0, "lane 5 exited");
    }
}
