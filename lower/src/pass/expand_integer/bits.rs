//! The bit-level expansions of [`super`]: bit searches and masks (§9.7.1.16, .18,
//! .24-25), byte permutes, funnel shifts and `lop3` (§9.7.8), and the float bit-level
//! operations (§9.7.3, §9.7.7).

use super::{U32, U64};
use crate::build::Build;
use crate::ir::{
    BinaryOp, BoolOp, CmpOp, FloatMode, FloatTest, InstKind, Lop3Combine, OpTy, PredSource,
    PrmtMode, RegId, SetSource, SetTruth, UnaryOp, Value,
};

/// `bfind{.shiftamt}`: `clz` of the value (of its complement when negative).
pub(super) fn bfind(e: &mut impl Build, ty: OpTy, shiftamt: bool, a: Value) -> Value {
    let uty = ty.as_unsigned();
    let x = if ty.is_signed() {
        let neg = e.cmp(CmpOp::Lt, ty, a, Value::Imm(0));
        let inv = e.not(uty, a);
        e.sel(uty, neg, inv, a)
    } else {
        a
    };
    let clz = e.un(UnaryOp::Clz, uty, x);
    let found = e.cmp(CmpOp::Ne, uty, x, Value::Imm(0));
    let r = if shiftamt {
        clz
    } else {
        e.bin(BinaryOp::Sub, U32, Value::Imm(u64::from(ty.bits() - 1)), clz)
    };
    e.sel(U32, found, r, Value::Imm(0xffff_ffff))
}

/// `fns`: the n-th set bit found by a binary search on population counts (no loop);
/// downward searches run on the bit-reversed mask.
pub(super) fn fns(e: &mut impl Build, mask: Value, base: Value, offset: Value) -> Value {
    let none = Value::Imm(0xffff_ffff);
    let s32 = OpTy::S(32);
    let down = e.cmp(CmpOp::Lt, s32, offset, Value::Imm(0));
    let neg = e.un(UnaryOp::Neg, s32, offset);
    let n = e.sel(U32, down, neg, offset);
    // Upward: the bits at and above base; downward: reversed, the bits at and above
    // 31 - base of the reversed mask.
    let rev = e.un(UnaryOp::Brev, U32, mask);
    let m0 = e.sel(U32, down, rev, mask);
    let start_down = e.bin(BinaryOp::Sub, U32, Value::Imm(31), base);
    let start = e.sel(U32, down, start_down, base);
    let keep = e.bin(BinaryOp::Shl, U32, Value::Imm(0xffff_ffff), start);
    let mut bits = e.and(U32, m0, keep);
    let available = e.un(UnaryOp::Popc, U32, bits);
    // Binary search for the n-th (1-based) set bit.
    let mut pos = Value::Imm(0);
    let mut k = n;
    for w in [16u64, 8, 4, 2, 1] {
        let low = e.and(U32, bits, Value::Imm((1 << w) - 1));
        let cnt = e.un(UnaryOp::Popc, U32, low);
        let skip = e.cmp(CmpOp::Gt, U32, k, cnt);
        let k_less = e.bin(BinaryOp::Sub, U32, k, cnt);
        k = e.sel(U32, skip, k_less, k);
        let shifted = e.bin(BinaryOp::Shr, U32, bits, Value::Imm(w));
        bits = e.sel(U32, skip, shifted, bits);
        let pos_w = e.add(U32, pos, Value::Imm(w));
        pos = e.sel(U32, skip, pos_w, pos);
    }
    let found = e.cmp(CmpOp::Le, U32, n, available);
    let pos_down = e.bin(BinaryOp::Sub, U32, Value::Imm(31), pos);
    let pos = e.sel(U32, down, pos_down, pos);
    let r = e.sel(U32, found, pos, none);
    // offset = 0: base itself if that bit is set.
    let at = e.bin(BinaryOp::Shr, U32, mask, base);
    let at = e.and(U32, at, Value::Imm(1));
    let set = e.cmp(CmpOp::Ne, U32, at, Value::Imm(0));
    let zero_r = e.sel(U32, set, base, none);
    let is_zero = e.cmp(CmpOp::Eq, s32, offset, Value::Imm(0));
    let r = e.sel(U32, is_zero, zero_r, r);
    // A base past bit 31 finds nothing.
    let big = e.cmp(CmpOp::Ge, U32, base, Value::Imm(32));
    e.sel(U32, big, none, r)
}

/// `bmsk`, by the ISA's pseudocode.
pub(super) fn bmsk(e: &mut impl Build, clamp: bool, a: Value, b: Value) -> Value {
    let ones = Value::Imm(0xffff_ffff);
    let b1 = e.and(U32, b, Value::Imm(31));
    let b_big = e.cmp(CmpOp::Ge, U32, b, Value::Imm(32));
    let a1 = e.and(U32, a, Value::Imm(31));
    let a_big = e.cmp(CmpOp::Ge, U32, a, Value::Imm(32));
    let mut mask0 = e.bin(BinaryOp::Shl, U32, ones, a1);
    let sum = e.add(U32, a1, b1);
    let shifted = e.bin(BinaryOp::Shl, U32, ones, sum);
    let b_zero = e.cmp(CmpOp::Eq, U32, b1, Value::Imm(0));
    let mut mask1 = e.sel(U32, b_zero, ones, shifted);
    let sum_big = e.cmp(CmpOp::Ge, U32, sum, Value::Imm(32));
    mask1 = e.sel(U32, sum_big, Value::Imm(0), mask1);
    if clamp {
        mask0 = e.sel(U32, a_big, Value::Imm(0), mask0);
        let over = e.pred_or(a_big, b_big);
        mask1 = e.sel(U32, over, Value::Imm(0), mask1);
    }
    let keep = e.not(U32, mask1);
    e.and(U32, mask0, keep)
}

/// `szext`, by the ISA's pseudocode.
pub(super) fn szext(e: &mut impl Build, clamp: bool, signed: bool, a: Value, b: Value) -> Value {
    let ones = Value::Imm(0xffff_ffff);
    let b1 = e.and(U32, b, Value::Imm(31));
    let b_big = e.cmp(CmpOp::Ge, U32, b, Value::Imm(32));
    let shifted = e.bin(BinaryOp::Shl, U32, ones, b1);
    let mask = if clamp { e.sel(U32, b_big, Value::Imm(0), shifted) } else { shifted };
    let keep = e.not(U32, mask);
    let low = e.and(U32, a, keep);
    if !signed {
        return low;
    }
    let pos = e.bin(BinaryOp::Sub, U32, b1, Value::Imm(1));
    let pos = e.and(U32, pos, Value::Imm(31));
    let sign = e.bin(BinaryOp::Shr, U32, a, pos);
    let sign = e.and(U32, sign, Value::Imm(1));
    let b_zero = e.cmp(CmpOp::Eq, U32, b1, Value::Imm(0));
    let sign = e.sel(U32, b_zero, Value::Imm(0), sign);
    let set = e.cmp(CmpOp::Ne, U32, sign, Value::Imm(0));
    let fill = e.sel(U32, set, mask, Value::Imm(0));
    e.or(U32, low, fill)
}

/// `prmt`: each result byte shifted out of the 64-bit `{b, a}`; a mode's table becomes
/// a selector word.
pub(super) fn prmt(
    e: &mut impl Build,
    mode: Option<PrmtMode>,
    a: Value,
    b: Value,
    c: Value,
) -> Value {
    let bytes = e.pack64(a, b);
    let selector = match mode {
        None => c,
        Some(mode) => {
            let table = mode.table();
            let ctl = e.and(U32, c, Value::Imm(3));
            let mut s = Value::Imm(table[3]);
            for (k, &word) in table.iter().enumerate().take(3).rev() {
                let is_k = e.cmp(CmpOp::Eq, U32, ctl, Value::Imm(k as u64));
                s = e.sel(U32, is_k, Value::Imm(word), s);
            }
            s
        }
    };
    let mut r = Value::Imm(0);
    for k in 0..4u64 {
        let nibble = e.bfe(U32, selector, 4 * k, 4);
        let index = e.and(U32, nibble, Value::Imm(7));
        let shift = e.bin(BinaryOp::Shl, U32, index, Value::Imm(3));
        let moved = e.bin(BinaryOp::Shr, U64, bytes, shift);
        let moved = e.lo32(moved);
        let mut byte = e.and(U32, moved, Value::Imm(0xff));
        if mode.is_none() {
            let replicate = e.cmp(CmpOp::Ge, U32, nibble, Value::Imm(8));
            let sign = e.cmp(CmpOp::Ge, U32, byte, Value::Imm(0x80));
            let fill = e.sel(U32, sign, Value::Imm(0xff), Value::Imm(0));
            byte = e.sel(U32, replicate, fill, byte);
        }
        let placed = e.bin(BinaryOp::Shl, U32, byte, Value::Imm(8 * k));
        r = e.or(U32, r, placed);
    }
    r
}

/// `shf`: the 64-bit `{b, a}` shifted.
pub(super) fn shf(
    e: &mut impl Build,
    left: bool,
    clamp: bool,
    a: Value,
    b: Value,
    c: Value,
) -> Value {
    let n = if clamp {
        e.bin(BinaryOp::Min, U32, c, Value::Imm(32))
    } else {
        e.and(U32, c, Value::Imm(31))
    };
    let bits = e.pack64(a, b);
    if left {
        let s = e.bin(BinaryOp::Shl, U64, bits, n);
        let s = e.bin(BinaryOp::Shr, U64, s, Value::Imm(32));
        e.lo32(s)
    } else {
        let s = e.bin(BinaryOp::Shr, U64, bits, n);
        e.lo32(s)
    }
}

/// `lop3`: the OR of the minterms of the table; with `combine`, the predicate too.
pub(super) fn lop3(
    e: &mut impl Build,
    lut: u8,
    combine: Option<Lop3Combine>,
    a: Value,
    b: Value,
    c: Value,
) -> Value {
    let not_a = e.not(U32, a);
    let not_b = e.not(U32, b);
    let not_c = e.not(U32, c);
    let mut r = Value::Imm(0);
    for minterm in 0..8u64 {
        if u64::from(lut) >> minterm & 1 == 0 {
            continue;
        }
        let x = if minterm & 4 != 0 { a } else { not_a };
        let y = if minterm & 2 != 0 { b } else { not_b };
        let z = if minterm & 1 != 0 { c } else { not_c };
        let xy = e.and(U32, x, y);
        let term = e.and(U32, xy, z);
        r = e.or(U32, r, term);
    }
    if let Some(Lop3Combine { dst: Some(p), with }) = combine {
        let nonzero = e.cmp(CmpOp::Ne, U32, r, Value::Imm(0));
        let q = if with.negate {
            let t = e.temp(OpTy::Pred);
            e.push(InstKind::PredNot { dst: t, src: with.pred });
            t
        } else {
            with.pred
        };
        e.push(InstKind::PredLogic { op: with.op, dst: p, lhs: nonzero, rhs: q });
    }
    r
}

/// `min`/`max` on `.f32` with `.NaN`, `.xorsign.abs`, `.abs` or three sources: through
/// the core float `Min`/`Max`. `flags` is `[max, ftz, nan, abs, xorsign]`.
pub(super) fn float_min_max(e: &mut impl Build, flags: [bool; 5], x: &[Value]) -> Value {
    let [max, ftz, nan, abs, xorsign] = flags;
    let ty = OpTy::F(32);
    let bits = ty.as_unsigned();
    let sign = 1u64 << 31;
    let mode = FloatMode { ftz, ..FloatMode::default() };
    let bop = if max { BinaryOp::Max } else { BinaryOp::Min };
    let vals: Vec<Value> = if abs {
        x.iter().map(|&v| e.and(bits, v, Value::Imm(sign - 1))).collect()
    } else {
        x.to_vec()
    };
    let arg = |k: usize| x.get(k).copied().unwrap_or(Value::Imm(0));
    let mut r = vals.first().copied().unwrap_or(Value::Imm(0));
    for &v in vals.iter().skip(1) {
        let t = e.temp(ty);
        e.push(InstKind::Binary { op: bop, ty, mode, dst: t, lhs: r, rhs: v });
        r = Value::Reg(t);
    }
    if nan {
        let mut any = e.cmp(CmpOp::Nan, ty, arg(0), arg(1));
        if let Some(&c) = x.get(2) {
            let c_nan = e.cmp(CmpOp::Nan, ty, c, c);
            any = e.pred_or(any, c_nan);
        }
        r = e.sel(bits, any, Value::Imm(0x7fff_ffff), r);
    }
    if xorsign {
        let s = e.bin(BinaryOp::Xor, bits, arg(0), arg(1));
        let s = e.and(bits, s, Value::Imm(sign));
        r = e.or(bits, r, s);
    }
    r
}

/// `testp`, by the bits of the magnitude.
pub(super) fn testp(e: &mut impl Build, test: FloatTest, ty: OpTy, a: Value, dst: RegId) {
    let bits = ty.as_unsigned();
    let (sign_bit, inf, min_normal) = if ty.bits() == 32 {
        (1 << 31, 0x7f80_0000, 1 << 23)
    } else {
        (1 << 63, 0x7ff0_0000_0000_0000, 1 << 52)
    };
    let magnitude = e.and(bits, a, Value::Imm(sign_bit - 1));
    match test {
        FloatTest::Finite => e.cmp_into(dst, CmpOp::Lt, bits, magnitude, Value::Imm(inf)),
        FloatTest::Infinite => e.cmp_into(dst, CmpOp::Eq, bits, magnitude, Value::Imm(inf)),
        FloatTest::Number => e.cmp_into(dst, CmpOp::Le, bits, magnitude, Value::Imm(inf)),
        FloatTest::NotANumber => e.cmp_into(dst, CmpOp::Gt, bits, magnitude, Value::Imm(inf)),
        // 0 < |a| < smallest normal, i.e. |a| - 1 < smallest normal - 1 (unsigned).
        FloatTest::Subnormal => {
            let m1 = e.bin(BinaryOp::Sub, bits, magnitude, Value::Imm(1));
            e.cmp_into(dst, CmpOp::Lt, bits, m1, Value::Imm(min_normal - 1));
        }
        // Normal or zero: |a| < inf and not subnormal.
        FloatTest::Normal => {
            let finite = e.cmp(CmpOp::Lt, bits, magnitude, Value::Imm(inf));
            let m1 = e.bin(BinaryOp::Sub, bits, magnitude, Value::Imm(1));
            let not_subnormal = e.cmp(CmpOp::Ge, bits, m1, Value::Imm(min_normal - 1));
            e.push(InstKind::PredLogic { op: BoolOp::And, dst, lhs: finite, rhs: not_subnormal });
        }
    }
}

/// `set`: `setp` (per half lane, on the lanes' exact f32 values), then the true value or
/// 0 per lane.
#[allow(clippy::too_many_arguments)]
pub(super) fn set(
    e: &mut impl Build,
    cmp: CmpOp,
    source: SetSource,
    ftz: bool,
    truth: SetTruth,
    combine: Option<PredSource>,
    a: Value,
    b: Value,
) -> Value {
    let (lanes, lane_bits) = (source.lanes(), truth.lane_bits());
    let combine = combine.map(|c| (c.op, c.pred, c.negate));
    let preds: Vec<_> = (0..lanes).map(|_| e.temp(OpTy::Pred)).collect();
    match source {
        SetSource::Half { format, .. } => {
            let dsts: Vec<_> = preds.iter().map(|&p| (Some(p), None)).collect();
            e.half_compare(format, lanes, cmp, ftz, a, b, combine, &dsts);
        }
        SetSource::Scalar(ty) => e.push(InstKind::Setp {
            cmp,
            ty,
            ftz,
            dst: Some(preds[0]),
            dst_not: None,
            lhs: a,
            rhs: b,
            combine,
        }),
    }
    let lane_ty = OpTy::U(lane_bits as u8);
    let one = truth.value();
    let values: Vec<Value> =
        preds.iter().map(|&p| e.sel(lane_ty, p, Value::Imm(one), Value::Imm(0))).collect();
    e.pack(16, values)
}
