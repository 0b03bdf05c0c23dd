//! `cvt` with a narrow format on either side ([`HalfConvertOp::Narrow`], PTX ISA 9.2
//! §9.7.9.21): each lane widened to f32 exactly (`Widen`), converted with the core
//! `Convert`, and rounded once to its format (`Narrow`, `IntToFloat`).

use crate::build::Build;
#[cfg(doc)]
use crate::ir::HalfConvertOp;
use crate::ir::{
    packed_bits, BinaryOp, CvtSide, FloatFormat, FloatMode, HalfConvert, NarrowCvt, OpTy, Rounding,
    Value,
};

const F32: OpTy = OpTy::F(32);
const F64: OpTy = OpTy::F(64);

/// Narrowed lanes of `f` (lane 0 first) packed as a pair: FP4 nibbles into a byte,
/// everything else by [`Build::pack`].
fn pack_lanes(e: &mut impl Build, f: FloatFormat, lanes: Vec<Value>) -> Value {
    if packed_bits(f) == f.bits() || lanes.len() != 2 {
        return e.pack(f.bits(), lanes);
    }
    let u16t = OpTy::U(16);
    let lo = e.cvt(u16t, OpTy::U(8), lanes[0]);
    let hi = e.cvt(u16t, OpTy::U(8), lanes[1]);
    let hi = e.bin(BinaryOp::Shl, u16t, hi, Value::Imm(u64::from(packed_bits(f))));
    let both = e.or(u16t, hi, lo);
    e.cvt(OpTy::U(8), u16t, both)
}

/// The instructions of one narrow-format `cvt`; `reg_bits` is the width of the
/// destination register (an integer result is extended to it, §5.2.2).
pub fn convert(e: &mut impl Build, c: &HalfConvert, n: NarrowCvt, reg_bits: u32) {
    let src = |k: usize| c.srcs.get(k).copied().unwrap_or(Value::Imm(0));
    let rounding = n.rounding.unwrap_or(Rounding::Nearest);
    let (satfinite, relu) = (n.satfinite, n.relu);
    let dst_ty = OpTy::U(n.to.bits() as u8);
    match (n.to, n.from) {
        // Float to a narrow format: one source per lane, the first in the upper half.
        (CvtSide::Narrow(f, lanes), CvtSide::Op(src_ty)) if src_ty.is_float() => {
            let mut lanes_out = Vec::new();
            for k in (0..usize::from(lanes)).rev() {
                let v = if n.ftz && src_ty == F32 { e.flush32(src(k)) } else { src(k) };
                lanes_out.push(e.narrow(f, src_ty, rounding, satfinite, relu, v));
            }
            let r = pack_lanes(e, f, lanes_out);
            e.mov(dst_ty, c.dst, r);
        }
        // FP8/FP6/FP4 pairs to and from `.f16x2`.
        (CvtSide::Narrow(f, 2), CvtSide::Narrow(g, 2)) => {
            // Lanes are extracted at 16 or 32 bits (an FP4 pair is a single byte).
            let src_bits = 2 * packed_bits(g);
            let in_ty = OpTy::U(src_bits.max(16) as u8);
            let v = src(0);
            let v = if src_bits < 16 { e.cvt(in_ty, OpTy::U(src_bits as u8), v) } else { v };
            let (ge, gm) = g.layout();
            let mut out = Vec::new();
            for k in 0..2u64 {
                let shift = k * u64::from(packed_bits(g));
                let shifted = e.bin(BinaryOp::Shr, in_ty, v, Value::Imm(shift));
                let lane = e.and(in_ty, shifted, Value::Imm((1 << (ge + gm + 1)) - 1));
                let lane = e.cvt(OpTy::U(g.bits() as u8), in_ty, lane);
                let w = e.widen(g, lane);
                out.push(e.narrow(f, F32, rounding, satfinite, relu, w));
            }
            let r = pack_lanes(e, f, out);
            e.mov(dst_ty, c.dst, r);
        }
        // A narrow format to f32/f64: exact.
        (CvtSide::Op(to @ (F32 | F64)), CvtSide::Narrow(g, _)) => {
            let w = e.widen(g, src(0));
            let w = if n.ftz { e.flush32(w) } else { w };
            let r = if to == F64 { e.convert(F64, F32, None, FloatMode::default(), w) } else { w };
            e.mov(to, c.dst, r);
        }
        // Between narrow scalar formats (or to the same one with an integral rounding).
        (CvtSide::Narrow(f, _), CvtSide::Narrow(g, _)) => {
            let w = e.widen(g, src(0));
            let r = if n.integral {
                let ftz = FloatMode { ftz: n.ftz, sat: false, ..FloatMode::default() };
                let t = e.convert(F32, F32, Some(rounding), ftz, w);
                e.narrow(f, F32, Rounding::Nearest, satfinite, relu, t)
            } else {
                e.narrow(f, F32, rounding, satfinite, relu, w)
            };
            e.mov(dst_ty, c.dst, r);
        }
        // A narrow format to an integer: through the exact f32.
        (CvtSide::Op(int_ty), CvtSide::Narrow(g, _)) => {
            let w = e.widen(g, src(0));
            let mode = FloatMode { ftz: n.ftz, sat: false, ..FloatMode::default() };
            let out = e.convert(int_ty, F32, Some(rounding), mode, w);
            // PTX ISA 9.2 §5.2.2: a wider destination register receives the result
            // sign- or zero-extended.
            let reg_bits = reg_bits.max(int_ty.bits()) as u8;
            let reg_ty = if int_ty.is_signed() { OpTy::S(reg_bits) } else { OpTy::U(reg_bits) };
            let out =
                if u32::from(reg_bits) > int_ty.bits() { e.cvt(reg_ty, int_ty, out) } else { out };
            e.mov(reg_ty, c.dst, out);
        }
        // An integer to a narrow format: rounded once, with integer arithmetic.
        (CvtSide::Narrow(f, _), CvtSide::Op(int_ty)) => {
            let r = e.int_to_float(f, int_ty, rounding, src(0));
            e.mov(dst_ty, c.dst, r);
        }
        // Not a form of the operation (the verifier refuses it).
        (CvtSide::Op(_), CvtSide::Op(_)) => {}
    }
}
