//! Expands the video instructions (PTX ISA 9.2 §9.7.16, [`InstKind::Video`]) into core
//! integer operations (CFG → CFG, inside blocks).
//!
//! * Scalar (§9.7.16.1): the selected byte, half word or word of each source, sign- or
//!   zero-extended by its type, is computed with exactly (in 64 bits, where the ISA's
//!   33-bit inputs and 34-bit intermediate fit), optionally clamped to the destination
//!   type — a byte or half word when the result merges into `c` — and then combined
//!   with `c` by the secondary operation (`c` extended by the destination type) or
//!   merged into `c` at the destination selector.
//! * `vmad` computes `±(a*b) ± c (+1)` exactly in 128 bits (a pair of 64-bit words),
//!   shifts it right by 7 or 15 and clamps it (`.sat`), following the ISA's pseudocode
//!   step by step: a negated `c` is `~c + 1` of its 32 bits, extended by the sign of
//!   the final result.
//! * SIMD (§9.7.16.2): each written lane computes on its elements of `{b, a}` in 32
//!   bits, is clamped to the lane's range (`.sat`), and is added to `c` (`.add`) or
//!   placed in `c`'s lane.
//!
//! `vshl` by 32 under `.clamp` is the only result that does not fit 64 bits; it is
//! replaced by `sign(a) * 2^40`, which has the same low 32 bits (zero) and the same side
//! of every clamp bound and of every 33-bit `c`, so saturation, `.min`, `.max`, `.add`
//! and the merge see what the exact value would give. The interpreter computes the
//! exact value (`crate::interp`), so the pass file tests check this.
//!
//! Every expansion reads its sources before it writes the destination (its last
//! instruction is a `mov`), so the destination may be a source.
//!
//! Precondition: none. Postcondition: no [`InstKind::Video`] is left ([`is_video`],
//! which `super::leftover` checks).

use crate::build::Build;
use crate::ir::{
    BinaryOp, CmpOp, InstKind, Kernel, MadAdjust, OpTy, ScalarVideo, ScalarVideoOp, SimdVideo,
    SimdVideoOp, UnaryOp, Value, VideoArith, VideoFinish, VideoMad, VideoOp, VideoPart,
    VideoSecondary, VideoSource,
};

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);
const U64: OpTy = OpTy::U(64);
const S64: OpTy = OpTy::S(64);

/// Whether `kind` is a video instruction, which this pass expands.
pub fn is_video(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Video(_))
}

/// Expands every video instruction of `k`.
pub fn run(k: &mut Kernel) {
    super::expander::each_in_block(k, is_video, |e, kind| {
        if let InstKind::Video(op) = kind {
            expand(e, &op);
        }
    });
}

/// The instructions of one video instruction.
pub fn expand(e: &mut impl Build, op: &VideoOp) {
    match op {
        VideoOp::Scalar(s) => scalar(e, s),
        VideoOp::Mad(m) => mad(e, m),
        VideoOp::Simd(s) => simd(e, s),
    }
}

/// `vadd vsub vabsdiff vmin vmax vshl vshr vset` (§9.7.16.1).
fn scalar(e: &mut impl Build, s: &ScalarVideo) {
    let ta = part64(e, s.a);
    let mut tmp = match s.op {
        ScalarVideoOp::Shl { clamp } | ScalarVideoOp::Shr { clamp } => {
            // The shift amount is always unsigned (§9.7.16.1.3).
            let (pos, bits) = s.b.part.position_and_bits();
            let tb = e.bfe(U32, s.b.value, u64::from(pos), u64::from(bits));
            let tb = if clamp {
                e.bin(BinaryOp::Min, U32, tb, Value::Imm(32))
            } else {
                e.and(U32, tb, Value::Imm(31))
            };
            if matches!(s.op, ScalarVideoOp::Shr { .. }) {
                e.bin(BinaryOp::Shr, S64, ta, tb)
            } else {
                let shifted = e.bin(BinaryOp::Shl, S64, ta, tb);
                if clamp {
                    shift_by_32(e, ta, tb, shifted)
                } else {
                    shifted
                }
            }
        }
        ScalarVideoOp::Arith(op) => {
            let tb = part64(e, s.b);
            primary(e, op, S64, ta, tb)
        }
    };
    let (dpos, dbits) = match s.finish {
        VideoFinish::Merge(part, _) => part.position_and_bits(),
        _ => (0, 32),
    };
    // optSaturate: the range of the destination type, or of its selected part.
    if s.sat {
        tmp = clamp64(e, tmp, s.dst_signed, dbits);
    }
    let result = match s.finish {
        VideoFinish::Merge(_, c) => {
            // optMerge: the low part of the result at the selector, `c` elsewhere.
            let part_mask = (1u64 << dbits) - 1;
            let low = e.lo32(tmp);
            let low = e.and(U32, low, Value::Imm(part_mask));
            let placed = e.bin(BinaryOp::Shl, U32, low, Value::Imm(u64::from(dpos)));
            let kept = e.and(U32, c, Value::Imm(!(part_mask << dpos) & 0xffff_ffff));
            e.or(U32, kept, placed)
        }
        VideoFinish::Plain => e.lo32(tmp),
        VideoFinish::Secondary(second, c) => {
            let dty = if s.dst_signed { S32 } else { U32 };
            let c64 = e.cvt(S64, dty, c);
            let r = match second {
                VideoSecondary::Add => e.add(S64, tmp, c64),
                VideoSecondary::Min => e.bin(BinaryOp::Min, S64, tmp, c64),
                VideoSecondary::Max => e.bin(BinaryOp::Max, S64, tmp, c64),
            };
            e.lo32(r)
        }
    };
    e.mov(U32, s.dst, result);
}

/// `a << 32` as `sign(a) << 40` (see the module documentation) where the amount `tb`
/// is 32, else `shifted`. The sign is `(a >> 63) | ((-a) >>> 63)`: lavapipe miscompiles
/// signed compares of sign-extended values with constants (docs/status.md).
fn shift_by_32(e: &mut impl Build, ta: Value, tb: Value, shifted: Value) -> Value {
    let negated = e.un(UnaryOp::Neg, S64, ta);
    let positive = e.bin(BinaryOp::Shr, U64, negated, Value::Imm(63));
    let negative = e.bin(BinaryOp::Shr, S64, ta, Value::Imm(63));
    let sign = e.or(U64, negative, positive);
    let big = e.bin(BinaryOp::Shl, S64, sign, Value::Imm(40));
    let is32 = e.cmp(CmpOp::Eq, U32, tb, Value::Imm(32));
    e.sel(S64, is32, big, shifted)
}

/// `vmad` (§9.7.16.1.4): `±(a*b) ± c`, `+1` under `.po`, scaled and saturated, exactly
/// in 128 bits held as `(lo: u64, hi: s64)`.
fn mad(e: &mut impl Build, m: &VideoMad) {
    let signed_final = m.signed_final();
    let ta = part64(e, m.a);
    let tb = part64(e, m.b);
    let mut lo = e.bin(BinaryOp::Mul, U64, ta, tb);
    let mut hi = e.bin(BinaryOp::MulHi, S64, ta, tb);
    let mut c = m.c;
    match m.adjust {
        MadAdjust::NegateProduct => {
            lo = e.not(U64, lo);
            hi = e.not(U64, hi);
        }
        MadAdjust::NegateC => c = e.not(U32, c),
        MadAdjust::None | MadAdjust::PlusOne => {}
    }
    let c_lo = e.cvt(S64, if signed_final { S32 } else { U32 }, c);
    let c_hi = e.bin(BinaryOp::Shr, S64, c_lo, Value::Imm(63));
    // tmp = p + c128 (+ 1): the low word and the carries into the high word.
    let sum = e.add(U64, lo, c_lo);
    let carry = e.cmp(CmpOp::Lt, U64, sum, lo);
    let carry = e.sel(U64, carry, Value::Imm(1), Value::Imm(0));
    hi = e.add(U64, hi, c_hi);
    hi = e.add(U64, hi, carry);
    lo = sum;
    if m.adjust != MadAdjust::None {
        lo = e.add(U64, lo, Value::Imm(1));
        let wrapped = e.cmp(CmpOp::Eq, U64, lo, Value::Imm(0));
        let carry = e.sel(U64, wrapped, Value::Imm(1), Value::Imm(0));
        hi = e.add(U64, hi, carry);
    }
    let scale = u64::from(m.shift);
    if scale > 0 {
        let low = e.bin(BinaryOp::Shr, U64, lo, Value::Imm(scale));
        let high = e.bin(BinaryOp::Shl, U64, hi, Value::Imm(64 - scale));
        lo = e.or(U64, low, high);
        hi = e.bin(BinaryOp::Shr, S64, hi, Value::Imm(scale));
    }
    let mut result = e.lo32(lo);
    if m.sat {
        result = if signed_final {
            saturate128(e, lo, hi, result)
        } else {
            // Unsigned operands, nothing negated: tmp < 2^64, so hi is 0.
            let r = e.bin(BinaryOp::Min, U64, lo, Value::Imm(0xffff_ffff));
            e.lo32(r)
        };
    }
    e.mov(U32, m.dst, result);
}

/// The low word `result` of the 128-bit `(lo, hi)` clamped to the signed 32-bit range.
fn saturate128(e: &mut impl Build, lo: Value, hi: Value, result: Value) -> Value {
    let above = e.cmp(CmpOp::Gt, S64, hi, Value::Imm(0));
    let zero_hi = e.cmp(CmpOp::Eq, S64, hi, Value::Imm(0));
    let big_lo = e.cmp(CmpOp::Gt, U64, lo, Value::Imm(0x7fff_ffff));
    let big = e.pred_and(zero_hi, big_lo);
    let too_high = e.pred_or(above, big);
    let below = e.cmp(CmpOp::Lt, S64, hi, Value::Imm(u64::MAX));
    let ones_hi = e.cmp(CmpOp::Eq, S64, hi, Value::Imm(u64::MAX));
    let small_lo = e.cmp(CmpOp::Lt, U64, lo, Value::Imm(0xffff_ffff_8000_0000));
    let small = e.pred_and(ones_hi, small_lo);
    let too_low = e.pred_or(below, small);
    let r = e.sel(U32, too_low, Value::Imm(0x8000_0000), result);
    e.sel(U32, too_high, Value::Imm(0x7fff_ffff), r)
}

/// `vadd2 … vset4` (§9.7.16.2).
fn simd(e: &mut impl Build, s: &SimdVideo) {
    let lanes = usize::from(s.lanes);
    let width = 32 / u64::from(s.lanes);
    let [dst_signed, a_signed, b_signed] = s.signed;
    let lane_mask = (1u64 << width) - 1;
    let written = |k: usize| s.mask & (1 << k) != 0;
    // The lanes not written keep `c`'s bits; `.add` starts from all of `c`.
    let kept: u64 = (0..lanes)
        .filter(|&k| !written(k))
        .map(|k| lane_mask << (width * k as u64))
        .fold(0, |x, y| x | y);
    let mut result = if s.accumulate { s.c } else { e.and(U32, s.c, Value::Imm(kept)) };
    for k in (0..lanes).filter(|&k| written(k)) {
        let (Some(&asel), Some(&bsel)) = (s.a_lanes.get(k), s.b_lanes.get(k)) else {
            continue;
        };
        let va = pool_element(e, [s.a, s.b], asel, a_signed, s.lanes);
        let vb = pool_element(e, [s.a, s.b], bsel, b_signed, s.lanes);
        let mut t = match s.op {
            SimdVideoOp::Arith(op) => primary(e, op, S32, va, vb),
            SimdVideoOp::Avrg => {
                // Halves rounded away from zero: (s + 1) >> 1 for s >= 0, s >> 1 below.
                let sum = e.add(S32, va, vb);
                let nonneg = e.cmp(CmpOp::Ge, S32, sum, Value::Imm(0));
                let up = e.sel(S32, nonneg, Value::Imm(1), Value::Imm(0));
                let sum = e.add(S32, sum, up);
                e.bin(BinaryOp::Shr, S32, sum, Value::Imm(1))
            }
        };
        if s.sat {
            t = clamp32(e, t, dst_signed, width);
        }
        result = if s.accumulate {
            e.add(U32, result, t)
        } else {
            let t = e.and(U32, t, Value::Imm(lane_mask));
            let placed = e.bin(BinaryOp::Shl, U32, t, Value::Imm(width * k as u64));
            e.or(U32, result, placed)
        };
    }
    e.mov(U32, s.dst, result);
}

/// The primary operation of `vadd vsub vabsdiff vmin vmax` and of `vset` (1 or 0), on
/// values already extended to `ty`, which they cannot overflow.
fn primary(e: &mut impl Build, op: VideoArith, ty: OpTy, a: Value, b: Value) -> Value {
    match op {
        VideoArith::Add => e.add(ty, a, b),
        VideoArith::Sub => e.bin(BinaryOp::Sub, ty, a, b),
        VideoArith::Absdiff => {
            let d = e.bin(BinaryOp::Sub, ty, a, b);
            e.un(UnaryOp::Abs, ty, d)
        }
        VideoArith::Min => e.bin(BinaryOp::Min, ty, a, b),
        VideoArith::Max => e.bin(BinaryOp::Max, ty, a, b),
        VideoArith::Set(cmp) => {
            let p = e.cmp(cmp, ty, a, b);
            e.sel(ty, p, Value::Imm(1), Value::Imm(0))
        }
    }
}

/// The selected part of a 32-bit source, extended to 64 bits by its sign
/// (partSelectSignExtend of §9.7.16.1).
fn part64(e: &mut impl Build, src: VideoSource) -> Value {
    let ty32 = if src.signed { S32 } else { U32 };
    let part = match src.part {
        VideoPart::Word => src.value,
        part => {
            let (pos, bits) = part.position_and_bits();
            e.bfe(ty32, src.value, u64::from(pos), u64::from(bits))
        }
    };
    e.cvt(S64, ty32, part)
}

/// extractAndSignExt of §9.7.16.2: element `sel` of the pool `{b, a}` of `lanes`
/// elements per word, extended by the sign of the operand that selects it.
fn pool_element(e: &mut impl Build, [a, b]: [Value; 2], sel: u8, signed: bool, lanes: u8) -> Value {
    let width = 32 / u64::from(lanes);
    let src = if sel < lanes { a } else { b };
    let pos = u64::from(sel % lanes) * width;
    e.bfe(if signed { S32 } else { U32 }, src, pos, width)
}

/// `v` (64-bit) clamped to the signed or unsigned range of `bits` bits.
fn clamp64(e: &mut impl Build, v: Value, signed: bool, bits: u32) -> Value {
    let (lo, hi) = range(signed, bits);
    let v = e.bin(BinaryOp::Max, S64, v, Value::Imm(lo as u64));
    e.bin(BinaryOp::Min, S64, v, Value::Imm(hi as u64))
}

/// `v` (32-bit) clamped to the signed or unsigned range of `bits` (< 32) bits.
fn clamp32(e: &mut impl Build, v: Value, signed: bool, bits: u64) -> Value {
    let (lo, hi) = range(signed, bits as u32);
    let v = e.bin(BinaryOp::Max, S32, v, Value::Imm(lo as u32 as u64));
    e.bin(BinaryOp::Min, S32, v, Value::Imm(hi as u32 as u64))
}

fn range(signed: bool, bits: u32) -> (i64, i64) {
    if signed {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else {
        (0, (1i64 << bits) - 1)
    }
}
