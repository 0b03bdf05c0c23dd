//! The integer instructions of PTX ISA 9.2 §9.7.1 and §9.7.8 that have no single SPIR-V
//! counterpart (`mul24`, `mad24`, `sad`, `bfind`, `bmsk`, `szext`, `prmt`, `shf`,
//! `lop3`, `dp4a`, `dp2a`, the `.cc` carry chains `add.cc`/`addc`/`sub.cc`/`subc`/
//! `mad.cc`/`madc`, saturating `add`/`sub`, `.relu` and the packed `.u16x2`/`.s16x2`
//! forms of `add`/`min`/`max`), the float bit-level instructions `copysign`, `testp`,
//! `set` and `slct` (§9.7.3, §9.7.7), `div.approx.f32` (§9.7.3.8) and `cvt.pack`
//! (§9.7.9.22): each is checked and resolved into one [`InstKind::Integer`], which
//! `pass::expand_integer` writes out in core operations (their semantics are documented
//! on [`IntegerOp`]). Also `Emit`, the [`Build`] of semantic analysis.

use ptxvk_frontend::ast::{self, Operand, ScalarType};
use ptxvk_frontend::forms::integer;
use ptxvk_frontend::modifier::{
    Bfind, Carry, Clamp, Conversion, FloatOption, Modifier, Precision, ShiftDirection,
};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span};

use super::{Mods, Resolver};
use crate::build::Build;
use crate::ir::{
    BinaryOp, CarryOp, InstKind, IntegerInst, IntegerOp, Lop3Combine, OpTy, PackedOp, PredSource,
    RegId, RegTy, SetSource, SetTruth, Value,
};

const U32: OpTy = OpTy::U(32);

/// Emits IR for one PTX instruction into the current block.
pub(super) struct Emit<'a, 'm> {
    pub(super) resolver: &'a mut Resolver<'m>,
    pub(super) span: Span,
}

impl Build for Emit<'_, '_> {
    fn temp(&mut self, ty: OpTy) -> RegId {
        self.resolver.temp(ty.storage(), self.span)
    }

    fn push(&mut self, kind: InstKind) {
        self.resolver.push(kind, self.span);
    }
}

/// Packed `.u16x2`/`.s16x2` `add`/`min`/`max` (§9.7.1.1, §9.7.1.12-13), `.relu`
/// and `add.sat.s32`/`sub.sat.s32`.
fn packed_or_sat(op: Opcode, m: &Mods) -> IntegerOp {
    let relu = m.has(RELU);
    match (integer::packed_half(&m.details, &m.types), op) {
        (Some(signed), _) => {
            let op = match op {
                Opcode::Min => PackedOp::Min,
                Opcode::Max => PackedOp::Max,
                _ => PackedOp::Add,
            };
            IntegerOp::Packed { op, signed, relu }
        }
        (None, Opcode::Min | Opcode::Max) if relu => IntegerOp::Relu { max: op == Opcode::Max },
        (None, _) => IntegerOp::AddSat { sub: op == Opcode::Sub },
    }
}

const CC: Modifier = Modifier::Carry(Carry::Cc);
pub(super) const RELU: Modifier = Modifier::FloatOption(FloatOption::Relu);
pub(super) const NAN: Modifier = Modifier::FloatOption(FloatOption::NaN);
const XORSIGN: Modifier = Modifier::FloatOption(FloatOption::Xorsign);
const ABS: Modifier = Modifier::FloatOption(FloatOption::Abs);
const CLAMP: Modifier = Modifier::Clamp(Clamp::Clamp);
const APPROX: Modifier = Modifier::Precision(Precision::Approx);

impl Resolver<'_> {
    /// Lowers `i` if it is one of this module's instructions; `None` leaves it to the
    /// core lowering. Most become one [`InstKind::Integer`] of the operands their form's
    /// shapes resolve ([`Resolver::args`]).
    pub(super) fn expand(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        let (hi, clamp) =
            (m.mul_part.as_ref().is_some_and(|p| p.value == BinaryOp::MulHi), m.has(CLAMP));
        let packed = integer::packed_half(&m.details, &m.types).is_some();
        let integer = match op {
            // Packed half words exist for `add`, `min` and `max` only (§9.7.1.1-2).
            Opcode::Add | Opcode::Sub if m.has(CC) && !packed => {
                return Some(self.carry_chain(op, i, m))
            }
            Opcode::Add | Opcode::Sub
                if m.has(CC)
                    || self.int_sat(i, m)
                    || (op == Opcode::Add
                        && integer::packed_half(&m.details, &m.types).is_some()) =>
            {
                Ok(packed_or_sat(op, m))
            }
            Opcode::Mad if m.has(CC) => return Some(self.carry_chain(op, i, m)),
            // `mad.hi.sat.s32` (§9.7.1.4) and `mad24.hi.sat.s32` (§9.7.1.6).
            Opcode::Mad if self.int_sat(i, m) => Ok(IntegerOp::MadHiSat { mul24: false }),
            Opcode::Mul24 | Opcode::Mad24 if m.sat => Ok(IntegerOp::MadHiSat { mul24: true }),
            Opcode::Addc | Opcode::Subc | Opcode::Madc => return Some(self.carry_chain(op, i, m)),
            Opcode::Min | Opcode::Max if m.has(RELU) || packed => Ok(packed_or_sat(op, m)),
            // `min`/`max` on `.f32` with `.NaN`, `.xorsign.abs`, `.abs` or three sources
            // (§9.7.3.11-12; the form is checked: these exist for `.f32` only).
            Opcode::Min | Opcode::Max
                if m.has(NAN) || m.has(XORSIGN) || m.has(ABS) || i.operands.len() == 4 =>
            {
                let (nan, abs, xorsign, ftz) = (m.has(NAN), m.has(ABS), m.has(XORSIGN), m.ftz);
                Ok(IntegerOp::FloatMinMax { max: op == Opcode::Max, ftz, nan, abs, xorsign })
            }
            Opcode::Mul24 | Opcode::Mad24 => self.one_type(i, m).map(|ty| IntegerOp::Mul24 {
                signed: ty.is_signed(),
                hi,
                mad: op == Opcode::Mad24,
            }),
            Opcode::Sad => self.one_type(i, m).map(|ty| IntegerOp::Sad { ty }),
            Opcode::Bfind => {
                let shiftamt = m.has(Modifier::Bfind(Bfind::Shiftamt));
                self.one_type(i, m).map(|ty| IntegerOp::Bfind { ty, shiftamt })
            }
            Opcode::Fns => Ok(IntegerOp::Fns),
            // `div.approx{.ftz}.f32` (§9.7.3.8); `div.full.f32` is the correctly rounded
            // quotient (within its 2-ulp bound), the core lowering's.
            Opcode::Div if m.has(APPROX) => Ok(IntegerOp::ApproxDiv { ftz: m.ftz }),
            Opcode::Bmsk => Ok(IntegerOp::Bmsk { clamp }),
            Opcode::Szext => {
                self.one_type(i, m).map(|ty| IntegerOp::Szext { clamp, signed: ty.is_signed() })
            }
            Opcode::Prmt => Ok(IntegerOp::Prmt { mode: integer::permute_mode(&m.details) }),
            Opcode::Shf => {
                let left = m.has(Modifier::ShiftDirection(ShiftDirection::L));
                Ok(IntegerOp::Shf { left, clamp })
            }
            Opcode::Lop3 => return Some(self.lop3(i, m)),
            Opcode::Dp4a | Opcode::Dp2a => return Some(self.dot(op, i, m)),
            Opcode::Copysign => self.one_type(i, m).map(|ty| IntegerOp::Copysign { ty }),
            Opcode::Testp => {
                let test = integer::float_class(&m.details);
                self.one_type(i, m).map(|ty| IntegerOp::Testp { test, ty })
            }
            Opcode::Set => return Some(self.set(i, m)),
            Opcode::Slct => super::op_ty(&m.types[0]).map(|ty| IntegerOp::Slct {
                ty,
                float: m.types[1].value == ScalarType::F32,
                ftz: m.ftz,
            }),
            Opcode::Cvt if m.has(Modifier::Conversion(Conversion::Pack)) => {
                let (bits, signed) = integer::pack_narrow(&m.details, &m.types);
                Ok(IntegerOp::CvtPack { bits, signed })
            }
            _ => return None,
        };
        Some(integer.and_then(|op| {
            let args = self.args(i, m)?;
            self.integer(op, args.dst, args.srcs, i.span);
            Ok(())
        }))
    }

    /// Appends one [`InstKind::Integer`].
    fn integer(&mut self, op: IntegerOp, dst: Option<RegId>, srcs: Vec<Value>, span: Span) {
        self.push(InstKind::Integer(Box::new(IntegerInst { op, dst, srcs })), span);
    }

    /// `add.sat.s32`/`sub.sat.s32`: the only saturating integer forms (§9.7.1.1-2).
    fn int_sat(&self, i: &ast::Instruction, m: &Mods) -> bool {
        m.sat && self.one_type(i, m).is_ok_and(|t| !t.is_float())
    }

    fn srcs<const N: usize>(
        &mut self,
        i: &ast::Instruction,
        from: usize,
        tys: [OpTy; N],
    ) -> Result<[Value; N], Diagnostic> {
        let mut out = [Value::Imm(0); N];
        for (k, ty) in tys.into_iter().enumerate() {
            out[k] = self.src(&i.operands[from + k], ty, false, i.span)?;
        }
        Ok(out)
    }

    /// The carry flag `CC.CF` of the extended-precision instructions (§9.7.2): a
    /// 32-bit register holding 0 or 1, created on first use (`pass::expand_integer`
    /// sets it to 0 at the kernel's entry).
    fn carry_flag(&mut self, span: Span) -> RegId {
        if let Some(cc) = self.body.carry {
            return cc;
        }
        let cc = self.temp(RegTy::Int(32), span);
        self.kernel.regs[cc.index()].name = "$cc".into();
        self.body.carry = Some(cc);
        cc
    }

    /// `add.cc`, `addc{.cc}`, `sub.cc`, `subc{.cc}` (§9.7.2.1-4) and `mad{.lo,.hi}.cc`,
    /// `madc{.lo,.hi}{.cc}` (§9.7.2.5-6) on `.u32 .s32 .u64 .s64`, reading and writing
    /// the kernel's carry flag ([`IntegerOp::Carry`]).
    fn carry_chain(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let ty = self.one_type(i, m)?;
        let args = self.args(i, m)?;
        let hi = m.mul_part.as_ref().is_some_and(|p| p.value == BinaryOp::MulHi);
        let carry = match op {
            Opcode::Mad | Opcode::Madc if hi => CarryOp::MadHi,
            Opcode::Mad | Opcode::Madc => CarryOp::MadLo,
            Opcode::Sub | Opcode::Subc => CarryOp::Sub,
            _ => CarryOp::Add,
        };
        let cf = self.carry_flag(i.span);
        let carry_in = matches!(op, Opcode::Addc | Opcode::Subc | Opcode::Madc).then_some(cf);
        let carry_out = m.has(CC).then_some(cf);
        let op = IntegerOp::Carry { op: carry, ty, carry_in, carry_out };
        self.integer(op, args.dst, args.srcs, i.span);
        Ok(())
    }

    /// `lop3.b32 d, a, b, c, immLut` and `lop3.{and,or}.b32 d|p, a, b, c, immLut, q`
    /// (§9.7.8.6): the bitwise function whose truth table is `immLut` (bit
    /// `4a + 2b + c` of the table is the result for input bits a, b, c).
    fn lop3(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let combine = m.bool_op;
        // The form is checked (`ptxvk_frontend::forms`): `immLut` is an 8-bit constant.
        let lut = match &i.operands[4] {
            Operand::Imm(lut) => lut.eval_int().map_or(0, |c| c.value as u8),
            _ => 0,
        };
        // With a combine the destination is a pair `d|p` (the form is checked too).
        let (dst, pred_dst) = match (&i.operands[0], combine) {
            (Operand::Pair(d, p, _), Some(_)) => {
                (self.opt_dst(d, U32)?, self.opt_dst(p, OpTy::Pred)?)
            }
            (d, _) => (Some(self.dst(d, U32, false)?), None),
        };
        let [a, b, c] = self.srcs(i, 1, [U32, U32, U32])?;
        let combine = self.combined_with(i, m, 5)?.map(|with| Lop3Combine { dst: pred_dst, with });
        self.integer(IntegerOp::Lop3 { lut, combine }, dst, vec![a, b, c], span);
        Ok(())
    }

    /// The predicate `{!}c` (operand `k`) that `set`, `setp` and `lop3` combine their
    /// result with by `.and`, `.or` or `.xor` (§9.7.7.1-2, §9.7.8.6), if they have one.
    pub(super) fn combined_with(
        &mut self,
        i: &ast::Instruction,
        m: &Mods,
        k: usize,
    ) -> Result<Option<PredSource>, Diagnostic> {
        let Some(op) = m.bool_op else { return Ok(None) };
        let (pred, negate) = self.pred(&i.operands[k])?;
        Ok(Some(PredSource { op, pred, negate }))
    }

    /// `dp4a.atype.btype d, a, b, c` (§9.7.1.23): `c` plus the four products of the
    /// bytes of `a` and `b`; `dp2a.{lo,hi}.atype.btype` (§9.7.1.22): `c` plus the two
    /// products of the half words of `a` and bytes 0-1 (`.lo`) or 2-3 (`.hi`) of `b`.
    /// Elements are sign-extended for `.s32`; the sum wraps modulo 2^32.
    fn dot(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let [at, bt] = integer::dot_signed(&m.types).map(|s| if s { OpTy::S(32) } else { U32 });
        let hi = m.mul_part.as_ref().is_some_and(|p| p.value == BinaryOp::MulHi);
        let signed = at.is_signed() || bt.is_signed();
        let dty = if signed { OpTy::S(32) } else { U32 };
        let dst = self.dst(&i.operands[0], dty, false)?;
        let [a, b, c] = self.srcs(i, 1, [at, bt, dty])?;
        let pairs = if op == Opcode::Dp4a { 4 } else { 2 };
        let op = IntegerOp::Dot { pairs, hi, a_signed: at.is_signed(), b_signed: bt.is_signed() };
        self.integer(op, Some(dst), vec![a, b, c], i.span);
        Ok(())
    }

    /// `set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, {!}c}` (§9.7.7.1, and §9.7.4.7
    /// for half types): the comparison, then all ones (`.u32`/`.s32`, `.u16`/`.s16`) or 1.0
    /// (`.f32`, `.f16`, `.bf16`) when true, else 0. Half sources compare as their exact
    /// f32 values.
    fn set(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        // The form is checked (`ptxvk_frontend::forms`): two types, the destination's
        // one the source's allows, `.ftz` not with `.bf16`.
        let [dt, st] = [0, 1].map(|k| &m.types[k]);
        let half = super::formats::half_source(st.value);
        let lanes = half.map_or(1, |(_, n)| n);
        // What one lane holds when the comparison is true (§9.7.7.1: all ones for
        // integers, 1.0 for floats), and the destination's lane width.
        let (truth, lane_bits) = match dt.value {
            ScalarType::U32 | ScalarType::S32 if lanes == 1 => (SetTruth::Ones32, 32),
            ScalarType::F32 => (SetTruth::F32, 32),
            ScalarType::F16 | ScalarType::F16x2 => (SetTruth::F16, 16),
            ScalarType::Bf16 | ScalarType::Bf16x2 => (SetTruth::Bf16, 16),
            _ => (SetTruth::Ones16, 16),
        };
        let dty = OpTy::U((lane_bits * lanes) as u8);
        let sty = if half.is_some() { OpTy::F(32) } else { super::op_ty(st)? };
        // The form has a comparison of the source type's kind (`ptxvk_frontend::forms`).
        let cmp = m.cmp.unwrap_or(crate::ir::CmpOp::Eq);
        let dst = self.dst(&i.operands[0], dty, false)?;
        let combine = self.combined_with(i, m, 3)?;
        let src_ty = if half.is_some() { OpTy::U((16 * lanes) as u8) } else { sty };
        let [a, b] = self.srcs(i, 1, [src_ty, src_ty])?;
        let source = match half {
            Some((format, n)) => SetSource::Half { format, lanes: n as u8 },
            None => SetSource::Scalar(sty),
        };
        let op = IntegerOp::Set { cmp, source, ftz: m.ftz, truth, combine };
        self.integer(op, Some(dst), vec![a, b], span);
        Ok(())
    }
}
