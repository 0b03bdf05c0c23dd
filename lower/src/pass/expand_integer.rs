//! Expands the integer and bit-level operations of semantic analysis
//! ([`InstKind::Integer`], PTX ISA 9.2 §9.7.1-3, §9.7.7-8) into core operations (CFG →
//! CFG, inside blocks). The formulas follow the ISA's pseudocode, cited on
//! [`IntegerOp`]'s variants; where the core IR has an operation for a step (`clz`,
//! `popc`, `brev`, `bfe`, 64-bit shifts, saturating conversions), the expansion uses it:
//!
//! * saturating sums and `mad.hi.sat` are computed exactly in 64 bits and converted to
//!   s32 with `.sat`; packed half words go lane by lane through `bfe` and `pack`;
//! * carry chains add in the full width and find each carry out as `sum <u addend`;
//! * `bfind` is `clz` of the value (complemented when negative); `fns` is a binary
//!   search on population counts (no loop), downward searches on the reversed mask;
//! * `prmt` and `shf` shift the 64-bit `{b, a}`; `lop3` is the OR of the minterms its
//!   table selects; `dp4a`/`dp2a` sum `bfe`d elements;
//! * the float bit-level operations mask the sign and exponent bits, `set` and `slct`
//!   compare with `setp` and select; `div.approx.f32` is the exact quotient, selected
//!   away for the divisors the ISA gives a zero; PTX ISA 1.x `mad.f32` is a `mul.rz`
//!   and an `add.rn` (flushing subnormals).
//!
//! Every expansion reads its sources before it writes the destination (the last
//! instruction is a `mov`, or the carry flag's after it), so the destination may be a
//! source.
//!
//! Each carry flag starts at 0 at the kernel's entry ([`init_carry_flags`]).
//!
//! Precondition: none. Postcondition: no [`InstKind::Integer`] is left ([`is_integer`],
//! which `super::leftover` checks).

mod bits;

use crate::build::Build;
use crate::ir::{
    BinaryOp, BoolOp, CarryOp, CmpOp, FloatMode, Inst, InstKind, IntegerInst, IntegerOp, Kernel,
    OpTy, PackedOp, RegId, Rounding, Value,
};

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);
const U64: OpTy = OpTy::U(64);
const S64: OpTy = OpTy::S(64);

/// Whether `kind` is an integer operation, which this pass expands.
pub fn is_integer(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Integer(_))
}

/// Expands every integer operation of `k`.
pub fn run(k: &mut Kernel) {
    init_carry_flags(k);
    super::expander::each_in_block(k, is_integer, |e, kind| {
        if let InstKind::Integer(op) = kind {
            expand(e, &op);
        }
    });
}

/// Sets each carry flag (the register a carry chain names, [`IntegerOp::Carry`]) to 0
/// at the kernel's entry, so that every path defines it: PTX leaves `CC.CF` undefined
/// before the first `.cc` instruction (§9.7.2). In register order, each with the span
/// of the first instruction that names it.
fn init_carry_flags(k: &mut Kernel) {
    let mut flags = std::collections::BTreeMap::new();
    for inst in k.blocks.iter().flat_map(|b| &b.insts) {
        if let InstKind::Integer(i) = &inst.kind {
            if let IntegerOp::Carry { carry_in, carry_out, .. } = i.op {
                for cf in carry_in.into_iter().chain(carry_out) {
                    flags.entry(cf).or_insert(inst.span);
                }
            }
        }
    }
    let entry = k.entry.index();
    let inits = flags.into_iter().map(|(cf, span)| Inst {
        kind: InstKind::Mov { ty: U32, dst: cf, src: Value::Imm(0) },
        span,
    });
    k.blocks[entry].insts.splice(0..0, inits);
}

/// The instructions of one integer operation.
pub fn expand(e: &mut impl Build, i: &IntegerInst) {
    let src = |k: usize| i.srcs.get(k).copied().unwrap_or(Value::Imm(0));
    let (a, b, c) = (src(0), src(1), src(2));
    let ty = i.op.dst_ty();
    let r = match i.op {
        IntegerOp::AddSat { sub } => {
            let op = if sub { BinaryOp::Sub } else { BinaryOp::Add };
            let x = e.cvt(S64, S32, a);
            let y = e.cvt(S64, S32, b);
            let r = e.bin(op, S64, x, y);
            saturate_s32(e, r)
        }
        IntegerOp::Relu { max } => {
            let op = if max { BinaryOp::Max } else { BinaryOp::Min };
            let r = e.bin(op, S32, a, b);
            e.bin(BinaryOp::Max, S32, r, Value::Imm(0))
        }
        IntegerOp::Packed { op, signed, relu } => packed(e, op, signed, relu, a, b),
        IntegerOp::Carry { op, ty, carry_in, carry_out } => {
            if let Some(d) = i.dst {
                carry(e, op, ty, [a, b, c], carry_in, carry_out, d);
            }
            return;
        }
        IntegerOp::MadHiSat { mul24 } => mad_hi_sat(e, mul24, a, b, c),
        IntegerOp::Mul24 { signed, hi, mad } => {
            let ty = if signed { S32 } else { U32 };
            let a24 = e.bfe(ty, a, 0, 24);
            let b24 = e.bfe(ty, b, 0, 24);
            let p = e.bin(BinaryOp::MulWide, ty, a24, b24);
            let p = if hi { e.bin(BinaryOp::Shr, U64, p, Value::Imm(16)) } else { p };
            let r = e.lo32(p);
            if mad {
                e.add(U32, r, c)
            } else {
                r
            }
        }
        IntegerOp::Sad { ty } => {
            let lt = e.cmp(CmpOp::Lt, ty, a, b);
            let ba = e.bin(BinaryOp::Sub, ty, b, a);
            let ab = e.bin(BinaryOp::Sub, ty, a, b);
            let diff = e.sel(ty, lt, ba, ab);
            e.add(ty, c, diff)
        }
        IntegerOp::Bfind { ty, shiftamt } => bits::bfind(e, ty, shiftamt, a),
        IntegerOp::Fns => bits::fns(e, a, b, c),
        IntegerOp::Bmsk { clamp } => bits::bmsk(e, clamp, a, b),
        IntegerOp::Szext { clamp, signed } => bits::szext(e, clamp, signed, a, b),
        IntegerOp::Prmt { mode } => bits::prmt(e, mode, a, b, c),
        IntegerOp::Shf { left, clamp } => bits::shf(e, left, clamp, a, b, c),
        IntegerOp::Lop3 { lut, combine } => {
            let r = bits::lop3(e, lut, combine, a, b, c);
            match i.dst {
                Some(_) => r,
                None => return,
            }
        }
        IntegerOp::Dot { pairs, hi, a_signed, b_signed } => {
            let elem = |signed| if signed { S32 } else { U32 };
            let (at, bt) = (elem(a_signed), elem(b_signed));
            let a_bits = if pairs == 4 { 8 } else { 16 };
            let b_first = if hi { 2 } else { 0 };
            let mut r = c;
            for k in 0..u64::from(pairs) {
                let x = e.bfe(at, a, a_bits * k, a_bits);
                let y = e.bfe(bt, b, 8 * (b_first + k), 8);
                let p = e.bin(BinaryOp::Mul, U32, x, y);
                r = e.add(U32, r, p);
            }
            r
        }
        IntegerOp::FloatMinMax { max, ftz, nan, abs, xorsign } => {
            bits::float_min_max(e, [max, ftz, nan, abs, xorsign], &i.srcs)
        }
        IntegerOp::Copysign { ty } => {
            let bits = ty.as_unsigned();
            let sign_bit = 1u64 << (ty.bits() - 1);
            let sign = e.and(bits, a, Value::Imm(sign_bit));
            let magnitude = e.and(bits, b, Value::Imm(sign_bit - 1));
            let r = e.or(bits, sign, magnitude);
            if let Some(d) = i.dst {
                e.mov(bits, d, r);
            }
            return;
        }
        IntegerOp::Testp { test, ty } => {
            if let Some(d) = i.dst {
                bits::testp(e, test, ty, a, d);
            }
            return;
        }
        IntegerOp::Set { cmp, source, ftz, truth, combine } => {
            bits::set(e, cmp, source, ftz, truth, combine, a, b)
        }
        IntegerOp::HalfSetp { cmp, format, lanes, ftz, combine, q } => {
            // Each lane's exact f32 value compared (`Build::half_compare`).
            let combine = combine.map(|c| (c.op, c.pred, c.negate));
            let dsts = if lanes == 2 { vec![(i.dst, None), (q, None)] } else { vec![(i.dst, q)] };
            e.half_compare(format, u32::from(lanes), cmp, ftz, a, b, combine, &dsts);
            return;
        }
        IntegerOp::Slct { ty, float, ftz } => {
            let p = e.temp(OpTy::Pred);
            // `.ftz` only changes a subnormal `c`, whose comparison with 0 it cannot
            // change except for negative subnormals, which flush to -0.0 >= 0.
            e.push(InstKind::Setp {
                cmp: CmpOp::Ge,
                ty: if float { OpTy::F(32) } else { S32 },
                ftz,
                dst: Some(p),
                dst_not: None,
                lhs: c,
                rhs: Value::Imm(0),
                combine: None,
            });
            e.sel(ty, p, a, b)
        }
        IntegerOp::CvtPack { bits, signed } => cvt_pack(e, bits, signed, &i.srcs),
        IntegerOp::ApproxDiv { ftz } => approx_div(e, ftz, a, b),
        IntegerOp::TruncatedMad { sat } => {
            if let Some(d) = i.dst {
                truncated_mad(e, sat, [a, b, c], d);
            }
            return;
        }
    };
    if let Some(d) = i.dst {
        e.mov(ty, d, r);
    }
}

/// `div.approx.f32` (§9.7.3.8): the correctly rounded quotient, replaced by the zero of
/// the sign of `a` XOR `b` (the canonical NaN for an infinite `a`) when the bits of |b|
/// lie strictly between 2^126's (0x7e800000) and infinity's.
fn approx_div(e: &mut impl Build, ftz: bool, a: Value, b: Value) -> Value {
    let f32t = OpTy::F(32);
    let q = e.temp(f32t);
    let mode = FloatMode { ftz, ..FloatMode::default() };
    e.push(InstKind::Binary { op: BinaryOp::Div, ty: f32t, mode, dst: q, lhs: a, rhs: b });
    let mag_b = e.and(U32, b, Value::Imm(0x7fff_ffff));
    let above = e.cmp(CmpOp::Gt, U32, mag_b, Value::Imm(0x7e80_0000));
    let finite = e.cmp(CmpOp::Lt, U32, mag_b, Value::Imm(0x7f80_0000));
    let huge = e.temp(OpTy::Pred);
    e.push(InstKind::PredLogic { op: BoolOp::And, dst: huge, lhs: above, rhs: finite });
    let sign = e.bin(BinaryOp::Xor, U32, a, b);
    let sign = e.and(U32, sign, Value::Imm(0x8000_0000));
    let mag_a = e.and(U32, a, Value::Imm(0x7fff_ffff));
    let a_inf = e.cmp(CmpOp::Eq, U32, mag_a, Value::Imm(0x7f80_0000));
    let special = e.sel(U32, a_inf, Value::Imm(0x7fc0_0000), sign);
    e.sel(U32, huge, special, Value::Reg(q))
}

/// PTX ISA 1.x `mad{.sat}.f32` (§9.7.3.6, sm_1x): `mul.rz.ftz.f32` into a temporary,
/// then `add.rn.ftz{.sat}.f32` of it and `c` into `d` (which reads both first).
fn truncated_mad(e: &mut impl Build, sat: bool, [a, b, c]: [Value; 3], d: RegId) {
    let f32t = OpTy::F(32);
    let p = e.temp(f32t);
    let mode = FloatMode { ftz: true, rounding: Rounding::Zero, ..FloatMode::default() };
    e.push(InstKind::Binary { op: BinaryOp::Mul, ty: f32t, mode, dst: p, lhs: a, rhs: b });
    let mode = FloatMode { ftz: true, sat, ..FloatMode::default() };
    let lhs = Value::Reg(p);
    e.push(InstKind::Binary { op: BinaryOp::Add, ty: f32t, mode, dst: d, lhs, rhs: c });
}

/// An s64 clamped to the s32 range (a saturating conversion).
fn saturate_s32(e: &mut impl Build, v: Value) -> Value {
    let t = e.temp(S32);
    e.push(InstKind::Convert {
        to: S32,
        from: S64,
        rounding: None,
        mode: FloatMode { ftz: false, sat: true, ..FloatMode::default() },
        dst: t,
        src: v,
    });
    Value::Reg(t)
}

/// Packed `.u16x2`/`.s16x2` `add`/`min`/`max` (§9.7.1.1, §9.7.1.12-13), lane by lane.
fn packed(e: &mut impl Build, op: PackedOp, signed: bool, relu: bool, a: Value, b: Value) -> Value {
    let bop = match op {
        PackedOp::Add => BinaryOp::Add,
        PackedOp::Min => BinaryOp::Min,
        PackedOp::Max => BinaryOp::Max,
    };
    let elem = if signed { OpTy::S(16) } else { OpTy::U(16) };
    let word = if signed { S32 } else { U32 };
    let mut halves = Vec::new();
    for k in 0..2 {
        let x = e.bfe(word, a, 16 * k, 16);
        let y = e.bfe(word, b, 16 * k, 16);
        let x = e.cvt(elem, word, x);
        let y = e.cvt(elem, word, y);
        let mut r = e.bin(bop, elem, x, y);
        if relu {
            r = e.bin(BinaryOp::Max, elem, r, Value::Imm(0));
        }
        halves.push(r);
    }
    let t = e.temp(U32);
    e.push(InstKind::Pack { elem: OpTy::U(16), dst: t, srcs: halves });
    Value::Reg(t)
}

/// The carry chains (§9.7.2): the carry out of `x + y + c` is
/// `(x+y <u x) | (x+y+c <u x+y)`. NVIDIA hardware computes a subtraction as an
/// addition of the complement (`a - b` = `a + ~b + 1`, `subc` = `a + ~b + CF`), and CF
/// is always that addition's carry; mixed chains (`add.cc` then `subc`) depend on it.
fn carry(
    e: &mut impl Build,
    op: CarryOp,
    ty: OpTy,
    [a, b, c]: [Value; 3],
    carry_in: Option<RegId>,
    carry_out: Option<RegId>,
    dst: RegId,
) {
    let uty = ty.as_unsigned();
    let (x, y) = match op {
        CarryOp::MadLo => (e.bin(BinaryOp::Mul, ty, a, b), c),
        CarryOp::MadHi => (e.bin(BinaryOp::MulHi, ty, a, b), c),
        CarryOp::Add | CarryOp::Sub => (a, b),
    };
    let cin =
        carry_in.map(
            |cf| {
                if uty == U64 {
                    e.cvt(U64, U32, Value::Reg(cf))
                } else {
                    Value::Reg(cf)
                }
            },
        );
    let (y, cin) = if op == CarryOp::Sub {
        (e.not(uty, y), Some(cin.unwrap_or(Value::Imm(1))))
    } else {
        (y, cin)
    };
    let s1 = e.add(uty, x, y);
    let c1 = e.cmp(CmpOp::Lt, uty, s1, x);
    let (result, out1, out2) = match cin {
        Some(c) => {
            let s2 = e.add(uty, s1, c);
            let c2 = e.cmp(CmpOp::Lt, uty, s2, s1);
            (s2, c1, Some(c2))
        }
        None => (s1, c1, None),
    };
    match carry_out {
        Some(cf) => {
            let out = match out2 {
                Some(o2) => e.pred_or(out1, o2),
                None => out1,
            };
            let bit = e.sel(U32, out, Value::Imm(1), Value::Imm(0));
            e.mov(ty, dst, result);
            e.mov(U32, cf, bit);
        }
        None => e.mov(ty, dst, result),
    }
}

/// `mad.hi.sat.s32` / `mad24.hi.sat.s32`: exactly in 64 bits, then clamped.
fn mad_hi_sat(e: &mut impl Build, mul24: bool, a: Value, b: Value, c: Value) -> Value {
    let (a, b) = if mul24 { (e.bfe(S32, a, 0, 24), e.bfe(S32, b, 0, 24)) } else { (a, b) };
    let p = e.bin(BinaryOp::MulWide, S32, a, b);
    let shift = if mul24 { 16 } else { 32 };
    let hi = e.bin(BinaryOp::Shr, S64, p, Value::Imm(shift));
    // The high part as an s32 (for mad24, bits 47..16 of the 48-bit product).
    let hi = e.cvt(S32, S64, hi);
    let hi = e.cvt(S64, S32, hi);
    let c64 = e.cvt(S64, S32, c);
    let sum = e.add(S64, hi, c64);
    saturate_s32(e, sum)
}

/// `cvt.pack.sat` (§9.7.9.22): each source clamped, `b` low, `a` above, `c` above both.
fn cvt_pack(e: &mut impl Build, bits: u8, signed: bool, srcs: &[Value]) -> Value {
    let bits = u32::from(bits);
    let (lo, hi) = if signed {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else {
        (0, (1i64 << bits) - 1)
    };
    let mask = Value::Imm((1u64 << bits) - 1);
    let mut clamp = |v: Value| {
        let above = e.bin(BinaryOp::Max, S32, v, Value::Imm(lo as u64 & 0xffff_ffff));
        let within = e.bin(BinaryOp::Min, S32, above, Value::Imm(hi as u64 & 0xffff_ffff));
        e.and(U32, within, mask)
    };
    let src = |k: usize| srcs.get(k).copied().unwrap_or(Value::Imm(0));
    let (ta, tb) = (clamp(src(0)), clamp(src(1)));
    let high = e.bin(BinaryOp::Shl, U32, ta, Value::Imm(u64::from(bits)));
    let mut d = e.or(U32, high, tb);
    if let Some(&c) = srcs.get(2) {
        let rest = e.bin(BinaryOp::Shl, U32, c, Value::Imm(u64::from(2 * bits)));
        d = e.or(U32, d, rest);
    }
    d
}
