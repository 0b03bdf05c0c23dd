//! The video instructions ([`InstKind::Video`](crate::ir::InstKind::Video)) modelled
//! directly from the pseudocode of PTX ISA 9.2 §9.7.16, in exact 128-bit integers,
//! independently of their expansion (`pass::expand_video`, which computes in 64 bits and
//! replaces `vshl.clamp` by 32 with an equivalent value): the pass file tests compare
//! the two.

use crate::ir::{
    CmpOp, MadAdjust, ScalarVideo, ScalarVideoOp, SimdVideo, SimdVideoOp, Value, VideoArith,
    VideoFinish, VideoMad, VideoOp, VideoPart, VideoSecondary, VideoSource,
};

/// The 32-bit result of `op`, whose operands `read` gives as 32-bit words.
pub fn eval(op: &VideoOp, read: impl Fn(Value) -> u32) -> u32 {
    let result = match op {
        VideoOp::Scalar(s) => scalar(s, &read),
        VideoOp::Mad(m) => mad(m, &read),
        VideoOp::Simd(s) => simd(s, &read),
    };
    result as u32
}

/// `bits` bits of `x` from `pos`, sign- or zero-extended.
fn field(x: u32, pos: u32, bits: u32, signed: bool) -> i128 {
    let raw = (u64::from(x) >> pos) & ((1u64 << bits) - 1);
    if signed && raw >> (bits - 1) & 1 == 1 {
        i128::from(raw) - (1i128 << bits)
    } else {
        i128::from(raw)
    }
}

/// partSelectSignExtend (§9.7.16.1): the selected part of a source, extended by its
/// type to the ISA's `.s33`.
fn part(src: &VideoSource, read: &impl Fn(Value) -> u32) -> i128 {
    let (pos, bits) = src.part.position_and_bits();
    field(read(src.value), pos, bits, src.signed)
}

/// CLAMP to the range of a `bits`-bit signed or unsigned integer.
fn clamp(v: i128, signed: bool, bits: u32) -> i128 {
    if signed {
        v.clamp(-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        v.clamp(0, (1i128 << bits) - 1)
    }
}

fn compare(cmp: CmpOp, a: i128, b: i128) -> bool {
    match cmp {
        CmpOp::Eq | CmpOp::Equ => a == b,
        CmpOp::Ne | CmpOp::Neu => a != b,
        CmpOp::Lt | CmpOp::Ltu => a < b,
        CmpOp::Le | CmpOp::Leu => a <= b,
        CmpOp::Gt | CmpOp::Gtu => a > b,
        CmpOp::Ge | CmpOp::Geu => a >= b,
        // Integers are always numbers.
        CmpOp::Num => true,
        CmpOp::Nan => false,
    }
}

fn arith(op: VideoArith, a: i128, b: i128) -> i128 {
    match op {
        VideoArith::Add => a + b,
        VideoArith::Sub => a - b,
        VideoArith::Absdiff => (a - b).abs(),
        VideoArith::Min => a.min(b),
        VideoArith::Max => a.max(b),
        VideoArith::Set(cmp) => i128::from(compare(cmp, a, b)),
    }
}

/// §9.7.16.1.1-3: the primary operation on `.s33` inputs, optSaturate, then optSecOp or
/// optMerge; the low 32 bits are written.
fn scalar(s: &ScalarVideo, read: &impl Fn(Value) -> u32) -> i128 {
    let ta = part(&s.a, read);
    let tmp = match s.op {
        ScalarVideoOp::Arith(op) => arith(op, ta, part(&s.b, read)),
        ScalarVideoOp::Shl { clamp } | ScalarVideoOp::Shr { clamp } => {
            // The amount is `.u32` whatever `b`'s type (§9.7.16.1.3).
            let tb = part(&VideoSource { signed: false, ..s.b }, read);
            let n = if clamp { tb.min(32) } else { tb & 0x1f };
            if matches!(s.op, ScalarVideoOp::Shl { .. }) {
                ta << n
            } else {
                ta >> n
            }
        }
    };
    let dsel = match s.finish {
        VideoFinish::Merge(p, _) => p,
        _ => VideoPart::Word,
    };
    let tmp = if s.sat { clamp(tmp, s.dst_signed, dsel.position_and_bits().1) } else { tmp };
    // `c` has the destination's sign.
    let c_of = |c: Value| field(read(c), 0, 32, s.dst_signed);
    match s.finish {
        VideoFinish::Plain => tmp,
        VideoFinish::Secondary(VideoSecondary::Add, c) => tmp + c_of(c),
        VideoFinish::Secondary(VideoSecondary::Min, c) => tmp.min(c_of(c)),
        VideoFinish::Secondary(VideoSecondary::Max, c) => tmp.max(c_of(c)),
        VideoFinish::Merge(p, c) => {
            let (pos, bits) = p.position_and_bits();
            let m = ((1i128 << bits) - 1) << pos;
            ((tmp << pos) & m) | (i128::from(read(c)) & !m)
        }
    }
}

/// §9.7.16.1.4, step by step in 128 bits. The pseudocode's last step keeps 64 bits of
/// the shifted sum before CLAMP; the clamp here sees the whole sum, which differs only
/// for `-(u32 * u32) + c` below -2^63, where the whole sum clamps to `S32_MIN` (as
/// ptxvk has always computed it).
fn mad(m: &VideoMad, read: &impl Fn(Value) -> u32) -> i128 {
    let signed_final = m.signed_final();
    let mut tmp = part(&m.a, read) * part(&m.b, read);
    let mut c = read(m.c);
    let lsb = match m.adjust {
        MadAdjust::None => 0,
        MadAdjust::PlusOne => 1,
        MadAdjust::NegateProduct => {
            tmp = !tmp;
            1
        }
        MadAdjust::NegateC => {
            c = !c;
            1
        }
    };
    let c128 = field(c, 0, 32, signed_final);
    let result = (tmp + c128 + lsb) >> m.shift;
    if m.sat {
        clamp(result, signed_final, 32)
    } else {
        result
    }
}

/// §9.7.16.2: extractAndSignExt of each lane from `{b, a}`, the operation per lane,
/// `.sat` to the lane's range, then the accumulate into `c` or the merge with `c`.
fn simd(s: &SimdVideo, read: &impl Fn(Value) -> u32) -> i128 {
    let lanes = u32::from(s.lanes);
    let width = 32 / lanes;
    let [dst_signed, a_signed, b_signed] = s.signed;
    let (a, b, c) = (read(s.a), read(s.b), read(s.c));
    let element = |sel: u8, signed: bool| {
        let sel = u32::from(sel);
        let word = if sel < lanes { a } else { b };
        field(word, (sel % lanes) * width, width, signed)
    };
    let mut d: i128 = if s.accumulate { i128::from(c) } else { 0 };
    for i in 0..lanes {
        let vc = field(c, i * width, width, false);
        let written = s.mask & (1 << i) != 0;
        let (Some(&asel), Some(&bsel)) = (s.a_lanes.get(i as usize), s.b_lanes.get(i as usize))
        else {
            continue;
        };
        let (va, vb) = (element(asel, a_signed), element(bsel, b_signed));
        let mut t = match s.op {
            SimdVideoOp::Arith(op) => arith(op, va, vb),
            SimdVideoOp::Avrg if va + vb >= 0 => (va + vb + 1) >> 1,
            SimdVideoOp::Avrg => (va + vb) >> 1,
        };
        if s.sat {
            t = clamp(t, dst_signed, width);
        }
        if s.accumulate {
            d += if written { t } else { 0 };
        } else {
            let lane = if written { t } else { vc };
            d |= (lane & ((1i128 << width) - 1)) << (i * width);
        }
    }
    d & 0xffff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{RegId, VideoPart};

    fn read(v: Value) -> u32 {
        match v {
            Value::Imm(x) => x as u32,
            Value::Reg(_) => 0,
        }
    }

    fn src(x: u32, signed: bool, part: VideoPart) -> VideoSource {
        VideoSource { value: Value::Imm(u64::from(x)), signed, part }
    }

    /// The examples of the ISA's text, worked by hand.
    #[test]
    fn worked_examples() {
        // vadd.s32.u32.s32.sat r1, r2.b0, r3.h0: 0xff + (-1) = 254.
        let add = ScalarVideo {
            op: ScalarVideoOp::Arith(VideoArith::Add),
            dst: RegId(0),
            dst_signed: true,
            a: src(0x12ff, false, VideoPart::Byte(0)),
            b: src(0xffff, true, VideoPart::Half(0)),
            sat: true,
            finish: VideoFinish::Plain,
        };
        assert_eq!(eval(&VideoOp::Scalar(add), read), 254);
        // Merged at .h1 after saturating to s16: 40000 clamps to 0x7fff.
        let merge = ScalarVideo {
            a: src(40000, false, VideoPart::Word),
            b: src(0, false, VideoPart::Word),
            finish: VideoFinish::Merge(VideoPart::Half(1), Value::Imm(0x1234_5678)),
            ..add
        };
        assert_eq!(eval(&VideoOp::Scalar(merge), read), 0x7fff_5678);
        // vshl.u32.u32.u32.clamp by 40 is 2^32 * a, whose low word is 0; saturated, all ones.
        let shl = ScalarVideo {
            op: ScalarVideoOp::Shl { clamp: true },
            dst_signed: false,
            a: src(3, false, VideoPart::Word),
            b: src(40, false, VideoPart::Word),
            sat: true,
            finish: VideoFinish::Plain,
            ..add
        };
        assert_eq!(eval(&VideoOp::Scalar(shl), read), 0xffff_ffff);
        // vmad.s32.s32.s32.sat -a, b, c: -(-2^31 * 2) + (-1) = 2^32 - 1 clamps to S32_MAX.
        let mad = VideoMad {
            dst: RegId(0),
            a: src(0x8000_0000, true, VideoPart::Word),
            b: src(2, true, VideoPart::Word),
            c: Value::Imm(0xffff_ffff),
            adjust: MadAdjust::NegateProduct,
            shift: 0,
            sat: true,
        };
        assert_eq!(eval(&VideoOp::Mad(mad), read), 0x7fff_ffff);
        // vavrg4.u32: (255 + 0 + 1) >> 1 = 128 in lane 0, c's byte kept in lane 3.
        let avrg = SimdVideo {
            op: SimdVideoOp::Avrg,
            lanes: 4,
            dst: RegId(0),
            signed: [false; 3],
            a: Value::Imm(0xff),
            b: Value::Imm(0),
            c: Value::Imm(0xaa00_0000),
            a_lanes: vec![0, 1, 2, 3],
            b_lanes: vec![4, 5, 6, 7],
            mask: 0b0111,
            sat: false,
            accumulate: false,
        };
        assert_eq!(eval(&VideoOp::Simd(avrg), read), 0xaa00_0080);
    }
}
