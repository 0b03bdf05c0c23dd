//! The integer and bit-level instructions that have no single SPIR-V counterpart (PTX
//! ISA 9.2 §9.7.1, §9.7.2, §9.7.8, and the float bit-level ones of §9.7.3 and §9.7.7)
//! as one IR operation each, [`super::InstKind::Integer`]: what semantic analysis
//! resolved (types, modes, operands), before `pass::expand_integer` writes each out in
//! core operations.
//!
//! An [`IntegerInst`] is an [`IntegerOp`] (the operation with its static parameters),
//! a destination and the sources in PTX's order. Operands beyond those (the carry flag,
//! a predicate to combine with) are registers named in the operation. Every operation
//! reads all its sources before it writes a destination, so a destination may also be
//! a source.

use super::{BoolOp, CmpOp, FloatFormat, OpTy, RegId, Value};
/// The modes of `prmt` (§9.7.8.7) with their table, and the tests of `testp`
/// (§9.7.3.3): the frontend's decoded modifiers (`ptxvk_frontend::forms::integer`).
pub use ptxvk_frontend::modifier::{FloatClass as FloatTest, PermuteMode as PrmtMode};

/// One integer or bit-level instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntegerInst {
    pub op: IntegerOp,
    /// The result, of [`IntegerOp::dst_ty`]'s width; `None` only for `lop3.{and,or}`
    /// whose `d` is `_`.
    pub dst: Option<RegId>,
    /// The sources, [`IntegerOp::src_tys`] of them, each of its width.
    pub srcs: Vec<Value>,
}

/// The operations. `s32` below is a 32-bit word read as signed; every result wraps to
/// its width unless saturation is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntegerOp {
    /// `add.sat.s32 d, a, b` / `sub.sat.s32` (§9.7.1.1-2): the exact sum or difference
    /// clamped to the s32 range.
    AddSat { sub: bool },
    /// `min.relu.s32` / `max.relu.s32` (§9.7.1.12-13): `max(min(a, b), 0)`.
    Relu { max: bool },
    /// `add`/`min`/`max` on `.u16x2` or `.s16x2` (§9.7.1.1, §9.7.1.12-13): per 16-bit
    /// lane (lane 0 in the low bits); `.relu` (`.s16x2` `min`/`max` only) clamps each
    /// lane's result below at 0.
    Packed { op: PackedOp, signed: bool, relu: bool },
    /// The extended-precision instructions (§9.7.2): `d = x + y (+ carry)` on `ty`
    /// (`.u32 .s32 .u64 .s64`) where for `Add`/`Sub` `x, y = a, b` and for `Mad*`
    /// `x = (a * b).lo/.hi`, `y = c`. A subtraction is `x + ~y + (carry_in's CF, or 1
    /// without one)`, as NVIDIA hardware computes it. `carry_in` is `addc`/`subc`/`madc`
    /// (CF read), `carry_out` the `.cc` forms (CF written with the carry out of the
    /// full-width unsigned sum, 1 after a subtraction that did not borrow). CF is a
    /// 32-bit register holding 0 or 1.
    Carry { op: CarryOp, ty: OpTy, carry_in: Option<RegId>, carry_out: Option<RegId> },
    /// `mad.hi.sat.s32 d, a, b, c` (§9.7.1.4) and `mad24.hi.sat.s32` (§9.7.1.6): the
    /// high part of the product (for `mul24`, of the product of the sign-extended low 24
    /// bits, bits 47..16) as an s32, plus `c`, clamped to the s32 range.
    MadHiSat { mul24: bool },
    /// `mul24.{lo,hi}` / `mad24.{lo,hi}` on `.u32`/`.s32` (§9.7.1.5-6): the 48-bit
    /// product of the low 24 bits of `a` and `b` (sign-extended if `signed`); `.lo` is
    /// bits 31..0, `.hi` bits 47..16; `mad` adds `c` modulo 2^32.
    Mul24 { signed: bool, hi: bool, mad: bool },
    /// `sad d, a, b, c` (§9.7.1.11): `c + |a - b|` on `ty` (16, 32 or 64 bits).
    Sad { ty: OpTy },
    /// `bfind{.shiftamt}` on `ty` (`.u32 .s32 .u64 .s64`, §9.7.1.16): the position of
    /// the most significant bit that is set (signed: that differs from the sign bit),
    /// or with `shiftamt` `width - 1 - position`; 0xffffffff when there is none. The
    /// result is a u32.
    Bfind { ty: OpTy, shiftamt: bool },
    /// `fns.b32 d, mask, base, offset` (§9.7.1.18): the position of the |offset|-th
    /// set bit of `mask` from `base` upward (offset > 0, `base` counted) or downward
    /// (offset < 0), `base` when offset = 0 and that bit is set; else, or when `base`
    /// is 32 or more, 0xffffffff. `offset` is an s32.
    Fns,
    /// `bmsk.{clamp,wrap}.b32 d, a, b` (§9.7.1.24): `b` ones from bit `a`, by the
    /// ISA's pseudocode.
    Bmsk { clamp: bool },
    /// `szext.{clamp,wrap}.{u32,s32} d, a, b` (§9.7.1.25): the low `b` bits of `a`,
    /// zero- or sign-extended, by the ISA's pseudocode.
    Szext { clamp: bool, signed: bool },
    /// `prmt.b32{.mode} d, a, b, c` (§9.7.8.7): four bytes of the eight of `{b, a}`
    /// picked by the selector nibbles of `c` (bit 3: replicate the sign), or by a mode's
    /// fixed table indexed by `c[1:0]`.
    Prmt { mode: Option<PrmtMode> },
    /// `shf.{l,r}.{clamp,wrap}.b32 d, a, b, c` (§9.7.8.8): `{b, a}` shifted by
    /// `clamp ? min(c, 32) : c & 31`, the high (`.l`) or low (`.r`) word.
    Shf { left: bool, clamp: bool },
    /// `lop3.b32 d, a, b, c, lut` (§9.7.8.6): bit `4a + 2b + c` of `lut` for each bit
    /// position; with `combine` (`lop3.{and,or}`) also `p = (d != 0) op q`.
    Lop3 { lut: u8, combine: Option<Lop3Combine> },
    /// `dp4a.atype.btype d, a, b, c` (`pairs` 4, §9.7.1.23): `c` plus the products of
    /// the four bytes of `a` and `b`; `dp2a.{lo,hi}` (`pairs` 2, §9.7.1.22): `c` plus
    /// the products of the half words of `a` and bytes 0-1 (`.lo`) or 2-3 (`.hi`) of
    /// `b`. Elements are sign-extended for a signed type; the sum wraps modulo 2^32.
    Dot { pairs: u8, hi: bool, a_signed: bool, b_signed: bool },
    /// `min`/`max` on `.f32` (§9.7.3.11-12) with two or three sources: `.abs` takes the
    /// magnitudes first, `.NaN` gives the canonical NaN (0x7fffffff) when a source is
    /// NaN, `.xorsign.abs` (two sources) sets the result's sign to the XOR of the
    /// sources' signs; otherwise a NaN source gives the other, -0 is below +0.
    FloatMinMax { max: bool, ftz: bool, nan: bool, abs: bool, xorsign: bool },
    /// `copysign.{f32,f64} d, a, b` (§9.7.3.2): `b` with the sign bit of `a`. Three bit
    /// operations in the core IR; kept whole so that semantic analysis stays one
    /// operation per instruction and the interpreter models it by itself.
    Copysign { ty: OpTy },
    /// `testp.op.{f32,f64} p, a` (§9.7.3.3); the result is a predicate.
    Testp { test: FloatTest, ty: OpTy },
    /// `set.cmp{.bool}{.ftz}.dtype.stype d, a, b{, {!}c}` (§9.7.7.1, §9.7.4.7): per lane
    /// `truth`'s value when the comparison (combined with `combine`) holds, else 0.
    Set { cmp: CmpOp, source: SetSource, ftz: bool, truth: SetTruth, combine: Option<PredSource> },
    /// `setp.cmp{.bool}{.ftz}.{f16,bf16}{x2} p{|q}, a, b{, {!}c}` (§9.7.4.6, §9.7.7.2):
    /// each of the `lanes` 16-bit lanes of `format` in `a` and `b` (lane 0 in bits
    /// 0-15) compared as its exact f32 value (with `ftz` a subnormal is a zero of its
    /// sign first), then combined with `combine`. With one lane the destination is the
    /// result and `q` the combined negation of the comparison, as `setp`'s; with two
    /// the destination is lane 0's result and `q` lane 1's. Either may be `None` (`_`).
    HalfSetp {
        cmp: CmpOp,
        format: FloatFormat,
        lanes: u8,
        ftz: bool,
        combine: Option<PredSource>,
        q: Option<RegId>,
    },
    /// `slct.dtype.s32 d, a, b, c` / `slct{.ftz}.dtype.f32` (§9.7.7.3): `c >= 0 ? a :
    /// b` on `ty`; `c` is an f32 when `float` (NaN selects `b`, -0 selects `a`).
    Slct { ty: OpTy, float: bool, ftz: bool },
    /// `cvt.pack.sat.{u16,s16}.s32 d, a, b` and `cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32
    /// d, a, b, c` (§9.7.9.22): `a` and `b` (s32) clamped to the `bits`-wide type, `b`
    /// in the low bits, `a` above, and for `bits < 16` `c`'s low bits above those.
    CvtPack { bits: u8, signed: bool },
    /// `div.approx{.ftz}.f32 d, a, b` (§9.7.3.8): the correctly rounded quotient (within
    /// the 2-ulp bound), except that for 2^126 < |b| < 2^128 it is the zero of the sign
    /// of `a` XOR `b` (the canonical NaN 0x7fc00000 when `a` is infinite), as the ISA
    /// specifies. The sign and magnitude tests read the sources' bits as they are.
    ApproxDiv { ftz: bool },
    /// `mad{.sat}.f32 d, a, b, c` of PTX ISA 1.x (no rounding; §9.7.3.6, sm_1x): the
    /// product of `a` and `b` rounded toward zero, then added to `c` rounded to nearest
    /// (`.sat` clamping the sum), subnormal inputs and results flushed in both steps.
    TruncatedMad { sat: bool },
}

/// The packed half-word operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PackedOp {
    Add,
    Min,
    Max,
}

/// The sums of the extended-precision instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarryOp {
    Add,
    Sub,
    /// `mad.lo` / `madc.lo`.
    MadLo,
    /// `mad.hi` / `madc.hi`.
    MadHi,
}

/// A predicate source with its negation (`{!}q`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredSource {
    pub op: BoolOp,
    pub pred: RegId,
    pub negate: bool,
}

/// `lop3.{and,or}`'s predicate result: `p = (d != 0) op {!}q` (`p` may be `_`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lop3Combine {
    pub dst: Option<RegId>,
    pub with: PredSource,
}

/// What `set` compares: `.f32`/`.f64`/integer sources, or lanes of a half format (each
/// compared as its exact f32 value, after `.ftz`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetSource {
    Scalar(OpTy),
    Half { format: FloatFormat, lanes: u8 },
}

impl SetSource {
    /// The width of `a` and `b`.
    pub fn bits(self) -> u32 {
        match self {
            SetSource::Scalar(t) => t.bits(),
            SetSource::Half { lanes, .. } => 16 * u32::from(lanes),
        }
    }

    /// The lanes compared (and of the result).
    pub fn lanes(self) -> u32 {
        match self {
            SetSource::Scalar(_) => 1,
            SetSource::Half { lanes, .. } => u32::from(lanes),
        }
    }
}

/// A result lane of `set` and its value when the comparison holds: all ones of a 32- or
/// 16-bit integer lane, or 1.0 of a float format (§9.7.7.1). Two lanes are 16 bits each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTruth {
    Ones32,
    Ones16,
    F32,
    F16,
    Bf16,
}

impl SetTruth {
    /// The bits of a lane.
    pub fn lane_bits(self) -> u32 {
        match self {
            SetTruth::Ones32 | SetTruth::F32 => 32,
            _ => 16,
        }
    }

    /// The bits of a true lane.
    pub fn value(self) -> u64 {
        match self {
            SetTruth::Ones32 => 0xffff_ffff,
            SetTruth::Ones16 => 0xffff,
            SetTruth::F32 => 0x3f80_0000,
            SetTruth::F16 => 0x3c00,
            SetTruth::Bf16 => 0x3f80,
        }
    }
}

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);

impl IntegerOp {
    /// The type of the destination (`Pred` for `testp`'s and no other).
    pub fn dst_ty(self) -> OpTy {
        match self {
            IntegerOp::Carry { ty, .. } | IntegerOp::Sad { ty } | IntegerOp::Slct { ty, .. } => ty,
            IntegerOp::AddSat { .. }
            | IntegerOp::Relu { .. }
            | IntegerOp::MadHiSat { .. }
            | IntegerOp::Mul24 { signed: true, .. }
            | IntegerOp::Szext { signed: true, .. } => S32,
            IntegerOp::Dot { a_signed, b_signed, .. } if a_signed || b_signed => S32,
            IntegerOp::FloatMinMax { .. }
            | IntegerOp::ApproxDiv { .. }
            | IntegerOp::TruncatedMad { .. } => OpTy::F(32),
            IntegerOp::Copysign { ty } => ty,
            IntegerOp::Testp { .. } | IntegerOp::HalfSetp { .. } => OpTy::Pred,
            IntegerOp::Set { source, truth, .. } => {
                OpTy::U((source.lanes() * truth.lane_bits()) as u8)
            }
            _ => U32,
        }
    }

    /// The types of the sources, in order (their number is the operation's arity;
    /// `three` says whether `FloatMinMax` has three).
    pub fn src_tys(self, three: bool) -> Vec<OpTy> {
        let s = |n: usize, t: OpTy| vec![t; n];
        match self {
            IntegerOp::AddSat { .. } | IntegerOp::Relu { .. } => s(2, S32),
            IntegerOp::Packed { .. } => s(2, U32),
            IntegerOp::Carry { op: CarryOp::Add | CarryOp::Sub, ty, .. } => s(2, ty),
            IntegerOp::Carry { ty, .. } => s(3, ty),
            IntegerOp::MadHiSat { .. } => s(3, S32),
            IntegerOp::Mul24 { signed, mad, .. } => {
                s(2 + usize::from(mad), if signed { S32 } else { U32 })
            }
            IntegerOp::Sad { ty } => s(3, ty),
            IntegerOp::Bfind { ty, .. } => s(1, ty),
            IntegerOp::Fns => vec![U32, U32, S32],
            IntegerOp::Bmsk { .. } | IntegerOp::Szext { .. } => s(2, U32),
            IntegerOp::Prmt { .. } | IntegerOp::Shf { .. } | IntegerOp::Lop3 { .. } => s(3, U32),
            IntegerOp::Dot { a_signed, b_signed, .. } => {
                let t = |signed| if signed { S32 } else { U32 };
                vec![t(a_signed), t(b_signed), t(a_signed || b_signed)]
            }
            IntegerOp::FloatMinMax { .. } => s(2 + usize::from(three), OpTy::F(32)),
            IntegerOp::Copysign { ty } => s(2, ty),
            IntegerOp::ApproxDiv { .. } => s(2, OpTy::F(32)),
            IntegerOp::TruncatedMad { .. } => s(3, OpTy::F(32)),
            IntegerOp::Testp { ty, .. } => s(1, ty),
            IntegerOp::Set { source: SetSource::Scalar(t), .. } => s(2, t),
            IntegerOp::Set { source, .. } => s(2, OpTy::U(source.bits() as u8)),
            IntegerOp::HalfSetp { lanes, .. } => s(2, OpTy::U(16 * lanes)),
            IntegerOp::Slct { ty, float, .. } => {
                vec![ty, ty, if float { OpTy::F(32) } else { S32 }]
            }
            IntegerOp::CvtPack { bits, .. } => {
                let mut t = s(2, S32);
                if bits < 16 {
                    t.push(U32);
                }
                t
            }
        }
    }
}

impl IntegerInst {
    /// The source types ([`IntegerOp::src_tys`]) of this instruction.
    pub fn src_tys(&self) -> Vec<OpTy> {
        self.op.src_tys(self.srcs.len() == 3)
    }

    /// What is wrong with the instruction's fields, if anything (the verifier's check).
    pub fn malformed(&self) -> Option<&'static str> {
        let arity = self.src_tys().len() == self.srcs.len();
        let ok = arity
            && match self.op {
                IntegerOp::Carry { ty, carry_in, carry_out, .. } => {
                    matches!(ty.bits(), 32 | 64)
                        && !ty.is_float()
                        && (carry_in.is_some() || carry_out.is_some())
                }
                IntegerOp::Sad { ty } => matches!(ty.bits(), 16 | 32 | 64) && !ty.is_float(),
                IntegerOp::Bfind { ty, .. } => matches!(ty.bits(), 32 | 64) && !ty.is_float(),
                IntegerOp::Dot { pairs, hi, .. } => pairs == 2 || (pairs == 4 && !hi),
                IntegerOp::FloatMinMax { xorsign, abs, .. } => {
                    !xorsign || (abs && self.srcs.len() == 2)
                }
                IntegerOp::Copysign { ty } | IntegerOp::Testp { ty, .. } => {
                    matches!(ty, OpTy::F(32) | OpTy::F(64))
                }
                IntegerOp::Set { source: SetSource::Half { format, lanes }, truth, .. } => {
                    matches!(format, FloatFormat::F16 | FloatFormat::Bf16)
                        && (lanes == 1 || (lanes == 2 && truth.lane_bits() == 16))
                }
                IntegerOp::Set { source: SetSource::Scalar(t), .. } => t != OpTy::Pred,
                IntegerOp::HalfSetp { format, lanes, .. } => {
                    matches!(format, FloatFormat::F16 | FloatFormat::Bf16) && matches!(lanes, 1 | 2)
                }
                IntegerOp::Slct { ty, .. } => ty != OpTy::Pred,
                IntegerOp::CvtPack { bits, .. } => matches!(bits, 2 | 4 | 8 | 16),
                _ => true,
            }
            && (self.dst.is_some()
                || matches!(
                    self.op,
                    IntegerOp::Lop3 { combine: Some(_), .. } | IntegerOp::HalfSetp { .. }
                ));
        (!ok).then_some("an integer operation with types, fields or operands it does not have")
    }

    /// The registers written: the destination, and the carry flag or `lop3`'s
    /// predicate.
    pub fn defs(&self) -> Vec<RegId> {
        let extra = match self.op {
            IntegerOp::Carry { carry_out, .. } => carry_out,
            IntegerOp::Lop3 { combine: Some(c), .. } => c.dst,
            IntegerOp::HalfSetp { q, .. } => q,
            _ => None,
        };
        self.dst.into_iter().chain(extra).collect()
    }

    /// The values read: the sources, and the carry flag or the predicate combined with.
    pub fn uses(&self) -> Vec<Value> {
        let extra = match self.op {
            IntegerOp::Carry { carry_in, .. } => carry_in,
            IntegerOp::Lop3 { combine: Some(c), .. } => Some(c.with.pred),
            IntegerOp::Set { combine: Some(c), .. }
            | IntegerOp::HalfSetp { combine: Some(c), .. } => Some(c.pred),
            _ => None,
        };
        self.srcs.iter().copied().chain(extra.map(Value::Reg)).collect()
    }

    /// The width of each register operand (the verifier's equal-width rule).
    pub fn operand_widths(&self) -> Vec<(RegId, u32)> {
        let mut out: Vec<(RegId, u32)> =
            self.dst.map(|d| (d, self.op.dst_ty().bits())).into_iter().collect();
        for (v, t) in self.srcs.iter().zip(self.src_tys()) {
            if let Value::Reg(r) = v {
                out.push((*r, t.bits()));
            }
        }
        match self.op {
            IntegerOp::Carry { carry_in, carry_out, .. } => {
                out.extend(carry_in.iter().chain(carry_out.iter()).map(|&r| (r, 32)));
            }
            IntegerOp::Lop3 { combine: Some(c), .. } => {
                out.extend(c.dst.iter().chain([&c.with.pred]).map(|&r| (r, 1)));
            }
            IntegerOp::Set { combine: Some(c), .. } => out.push((c.pred, 1)),
            IntegerOp::HalfSetp { combine, q, .. } => {
                out.extend(combine.map(|c| c.pred).iter().chain(q.iter()).map(|&r| (r, 1)));
            }
            _ => {}
        }
        out
    }

    /// Calls `f` on every register the instruction names, to rewrite it
    /// (`pass::inline`'s renaming).
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        if let Some(d) = &mut self.dst {
            f(d);
        }
        for v in &mut self.srcs {
            if let Value::Reg(r) = v {
                f(r);
            }
        }
        match &mut self.op {
            IntegerOp::Carry { carry_in, carry_out, .. } => {
                carry_in.iter_mut().chain(carry_out.iter_mut()).for_each(f);
            }
            IntegerOp::Lop3 { combine: Some(c), .. } => {
                c.dst.iter_mut().for_each(&mut *f);
                f(&mut c.with.pred);
            }
            IntegerOp::Set { combine: Some(c), .. } => f(&mut c.pred),
            IntegerOp::HalfSetp { combine, q, .. } => {
                if let Some(c) = combine {
                    f(&mut c.pred);
                }
                q.iter_mut().for_each(f);
            }
            _ => {}
        }
    }
}
