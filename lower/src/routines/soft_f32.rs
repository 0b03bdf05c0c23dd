//! The f32 arithmetic of a target without f64 (`FloatPath::Integer`, `.soft`), exactly
//! rounded with integer arithmetic only: [`Routine::FmaF32`], [`Routine::DivF32`],
//! [`Routine::SqrtF32`] and [`Routine::OddF32`] (`RoundToOdd` `.soft`). The operands
//! widen exactly to f64 bit patterns ([`Routine::F32ToF64`], [`widen`]) and one f64
//! routine rounds ([`Routine::callees`] names the calls); rounding that to f32 then is
//! exact:
//! * `div`, `sqrt`: a second rounding to nearest is innocuous for 53 ≥ 2·24 + 2 bits
//!   (Figueroa 1995), and two directed roundings the same way equal one (the f32
//!   values are f64 values);
//! * `fma` to nearest: the f64 result is rounded to odd first, which makes the second
//!   rounding exact for 53 ≥ 24 + 2 (Boldo & Melquiond 2008); directed `fma` as above.
//!
//! [`Routine::FmaF32`]: crate::ir::Routine::FmaF32
//! [`Routine::DivF32`]: crate::ir::Routine::DivF32
//! [`Routine::SqrtF32`]: crate::ir::Routine::SqrtF32
//! [`Routine::OddF32`]: crate::ir::Routine::OddF32
//! [`Routine::F32ToF64`]: crate::ir::Routine::F32ToF64
//! [`Routine::callees`]: crate::ir::Routine::callees

use super::wide::{k, Wide, U64};
use super::FnBuilder;
use crate::build::Build;
use crate::ir::{FunctionId, InstKind, OddOp, OpTy, Routine, Value};

const U32: OpTy = OpTy::U(32);
const SIGN: u64 = 1 << 63;
const INF: u64 = 0x7ff0_0000_0000_0000;
/// The IR's f64 NaN (`FloatFormat::nan`), which its conversions give for any NaN.
const QNAN: u64 = 0x7fff_ffff_ffff_ffff;

/// The f64 pattern of the f32 pattern `x`, exactly (`cvt.f64.f32`, PTX ISA 9.2
/// §9.7.9.21): normal numbers rebias their exponent, subnormals (normal in f64) are
/// normalized; a NaN is the canonical NaN, which is what every f64 routine makes of any
/// NaN operand.
pub(crate) fn widen(e: &mut impl Build, x: Value) -> Value {
    let x = e.cvt(U64, U32, x);
    let sign = e.shr64(x, k(31));
    let sign = e.shl64(sign, k(63));
    let ef = e.shr64(x, k(23));
    let ef = e.and64(ef, k(0xff));
    let frac = e.and64(x, k((1 << 23) - 1));
    let frac52 = e.shl64(frac, k(29));
    let e64 = e.add64(ef, k(1023 - 127));
    let e64 = e.shl64(e64, k(52));
    let normal = e.or64(e64, frac52);
    // A subnormal frac · 2^-149 with its leading bit at p is 2^(p - 149) · 1.f: the
    // exponent field is p + 874, the fraction frac shifted to bit 52.
    let lz = e.clz64(frac);
    let msb = e.sub64(k(63), lz);
    let se = e.add64(msb, k(874));
    let se = e.shl64(se, k(52));
    let shift = e.sub64(k(52), msb);
    let shift = e.and64(shift, k(63));
    let shift = e.amount(shift);
    let sf = e.shl64(frac, shift);
    let sf = e.and64(sf, k((1 << 52) - 1));
    let subnormal = e.or64(se, sf);
    let exp_zero = e.eq64(ef, k(0));
    let frac_zero = e.eq64(frac, k(0));
    let r = e.sel64(exp_zero, subnormal, normal);
    let is_zero = e.pred_and(exp_zero, frac_zero);
    let r = e.sel64(is_zero, k(0), r);
    let special = e.eq64(ef, k(0xff));
    let r = e.sel64(special, k(INF), r);
    let r = e.or64(r, sign);
    let payload = e.temp(OpTy::Pred);
    e.push(InstKind::PredNot { dst: payload, src: frac_zero });
    let nan = e.pred_and(special, payload);
    e.sel64(nan, k(QNAN), r)
}

/// The body of `FmaF32`, `DivF32` or `SqrtF32` on the f32 patterns `x`: its
/// [`Routine::callees`] in a chain, the f64 operation on the widened operands, then the
/// rounding to f32.
pub(super) fn f32_op(b: &mut FnBuilder, x: &[Value]) -> Value {
    let mut args: Vec<Value> = x.iter().map(|&v| b.call(Routine::F32ToF64, vec![v])).collect();
    for c in b.callees.clone().into_iter().skip(1) {
        args = vec![b.call(c, args)];
    }
    args.first().copied().unwrap_or(k(0))
}

/// The body of `OddF32(op)` on the f32 patterns `x`: the integer fused multiply-add
/// rounded to odd ([`Routine::FmaF64Odd`]) on the widened operands, `a + b` as
/// `fma(a, 1, b)`, `a - b` as `fma(a, 1, -b)` and `a · b` as `fma(a, b, -0)` (which
/// keeps the sign of a zero product). The result is the f64 bit pattern.
pub(super) fn odd(b: &mut FnBuilder, op: OddOp, x: &[Value]) -> Value {
    let wide: Vec<Value> = x.iter().map(|&v| b.call(Routine::F32ToF64, vec![v])).collect();
    let one = k(1f64.to_bits());
    let args = match op {
        OddOp::Add => vec![wide[0], one, wide[1]],
        OddOp::Sub => vec![wide[0], one, b.xor64(wide[1], k(SIGN))],
        OddOp::Mul => vec![wide[0], wide[1], k(SIGN)],
        OddOp::Fma => wide,
    };
    b.call(Routine::FmaF64Odd, args)
}

impl FnBuilder {
    /// A call of routine `r`, one of the callees of the routine being built
    /// ([`Routine::callees`]: the function of its index), on `args`. Another routine's
    /// call is out of the functions' range, which the verifier reports.
    pub(super) fn call(&mut self, r: Routine, args: Vec<Value>) -> Value {
        let index = self.callees.iter().position(|&c| c == r).unwrap_or(self.callees.len());
        let callee = FunctionId(index as u32);
        let dst = self.temp(OpTy::U(r.result_bits() as u8));
        self.push(InstKind::Call { callee, args, results: vec![dst] });
        Value::Reg(dst)
    }
}
