//! The exact f32 arithmetic of a target with f64, built of f64 arithmetic:
//! [`Routine::OddF32InF64`], `RoundToOdd` (not `.soft`). The f32 operands widen exactly
//! to f64, where a product of two is exact; a sum is rounded to nearest and then to odd
//! with its exact error (TwoSum, Knuth; it needs round-to-nearest f64 addition, which
//! Vulkan guarantees for `OpFAdd`): the sum is stepped one ulp toward the exact value
//! when it is inexact and its last mantissa bit is even.
//!
//! The f64 `add`, `sub` and `mul` are a program's: the backend emits each as one
//! uncontracted operation, its operands hidden from a driver that folds known operands
//! (`FloatConstants::Hidden`), the same hiding as any f64 arithmetic. With `repaired`
//! (`FloatConstants::Repaired`: a driver that was not probed) the sign of a zero sum to
//! nearest is set from the addends' bits (IEEE 754 §6.3: -0 only when both are -0),
//! since such a driver may fold the sum with a constant `+ 0.0` addend to the other
//! addend once it has inlined the call; the backend repairs only sums with an immediate
//! zero operand, and a routine's operands are parameters.
//!
//! [`Routine::OddF32InF64`]: crate::ir::Routine::OddF32InF64

use super::FnBuilder;
use crate::build::Build;
use crate::ir::{BinaryOp, BoolOp, CmpOp, OddOp, OpTy, UnaryOp, Value};

const F64: OpTy = OpTy::F(64);
const U64: OpTy = OpTy::U(64);
const SIGN: u64 = 1 << 63;

/// The body of `OddF32InF64 { op, repaired }` on the f32 patterns `x`: the f64 pattern
/// of `op` rounded to odd (module doc).
pub(super) fn odd(b: &mut FnBuilder, op: OddOp, repaired: bool, x: &[Value]) -> Value {
    let wide: Vec<Value> = x.iter().map(|&v| b.cvt(F64, OpTy::F(32), v)).collect();
    match op {
        OddOp::Mul => b.bin(BinaryOp::Mul, F64, wide[0], wide[1]),
        OddOp::Add => odd_sum(b, repaired, wide[0], wide[1]),
        OddOp::Sub => {
            let negated = b.un(UnaryOp::Neg, F64, wide[1]);
            odd_sum(b, repaired, wide[0], negated)
        }
        OddOp::Fma => {
            let product = b.bin(BinaryOp::Mul, F64, wide[0], wide[1]);
            odd_sum(b, repaired, product, wide[2])
        }
    }
}

/// `p + c` rounded to odd (module doc).
fn odd_sum(b: &mut impl Build, repaired: bool, p: Value, c: Value) -> Value {
    let s = b.bin(BinaryOp::Add, F64, p, c);
    let s = if repaired { zero_sign_of_sum(b, p, c, s) } else { s };
    // TwoSum(p, c): err = (p - (s - bb)) + (c - bb), bb = s - p.
    let bb = b.bin(BinaryOp::Sub, F64, s, p);
    let sbb = b.bin(BinaryOp::Sub, F64, s, bb);
    let e1 = b.bin(BinaryOp::Sub, F64, p, sbb);
    let e2 = b.bin(BinaryOp::Sub, F64, c, bb);
    let err = b.bin(BinaryOp::Add, F64, e1, e2);
    let zero = Value::Imm(0);
    let inexact = b.cmp(CmpOp::Ne, F64, err, zero);
    let low = b.and(U64, s, Value::Imm(1));
    let even = b.cmp(CmpOp::Eq, U64, low, zero);
    let adjust = b.pred_and(inexact, even);
    // Toward err: away from zero (bits + 1) when err has the sign of s, else toward
    // zero (bits - 1). s ≠ 0 whenever err ≠ 0.
    let s_neg = b.cmp(CmpOp::Lt, F64, s, zero);
    let e_neg = b.cmp(CmpOp::Lt, F64, err, zero);
    let differ = b.pred_logic(BoolOp::Xor, s_neg, e_neg);
    let up = b.add(U64, s, Value::Imm(1));
    let down = b.add(U64, s, Value::Imm(u64::MAX));
    let stepped = b.sel(U64, differ, down, up);
    b.sel(U64, adjust, stepped, s)
}

/// The sum `s` of `p` and `c` to nearest with the sign of a zero result from the
/// addends' bits: -0 only when both are -0 (module doc).
fn zero_sign_of_sum(b: &mut impl Build, p: Value, c: Value, s: Value) -> Value {
    let magnitude = b.and(U64, s, Value::Imm(SIGN - 1));
    let is_zero = b.cmp(CmpOp::Eq, U64, magnitude, Value::Imm(0));
    let p_neg_zero = b.cmp(CmpOp::Eq, U64, p, Value::Imm(SIGN));
    let c_neg_zero = b.cmp(CmpOp::Eq, U64, c, Value::Imm(SIGN));
    let both = b.pred_and(p_neg_zero, c_neg_zero);
    let zero = b.sel(U64, both, Value::Imm(SIGN), Value::Imm(0));
    b.sel(U64, is_zero, zero, s)
}
