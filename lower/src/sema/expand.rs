//! The integer instructions of PTX ISA 9.2 §9.7.1 and §9.7.8 that have no single SPIR-V
//! counterpart
//! (`mul24`, `mad24`, `sad`, `bfind`, `bmsk`, `szext`, `prmt`, `shf`, `lop3`, `dp4a`,
//! `dp2a`, the `.cc` carry chains `add.cc`/`addc`/`sub.cc`/`subc`/`mad.cc`/`madc`,
//! saturating `add`/`sub`, `.relu` and the packed `.u16x2`/`.s16x2` forms of
//! `add`/`min`/`max`), and the float bit-level instructions `copysign`, `testp`,
//! `set` and `slct` (§9.7.3, §9.7.7), and `cvt.pack` (§9.7.9.22): each is checked and
//! resolved into one [`InstKind::Integer`], which `pass::expand_integer` writes out in
//! core operations (their semantics are documented on [`IntegerOp`]). Also the
//! performance hints, which lower to nothing, and `Emit`, the [`Build`] of semantic
//! analysis.

use ptxvk_frontend::ast::{self, Operand, ScalarType};
use ptxvk_frontend::modifier::{
    Bfind, Carry, Clamp, Conversion, FloatClass, FloatOption, Format, Modifier, PermuteMode,
    ShiftDirection,
};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span};

use super::{Lowerer, Mods};
use crate::build::Build;
use crate::ir::{
    BinaryOp, CarryOp, FloatTest, InstKind, IntegerInst, IntegerOp, Lop3Combine, OpTy, PackedOp,
    PredSource, PrmtMode, RegId, RegTy, SetSource, SetTruth, SyncPoint, Value,
};

const U32: OpTy = OpTy::U(32);

/// Emits IR for one PTX instruction into the current block.
pub(super) struct Emit<'a, 'm> {
    pub(super) l: &'a mut Lowerer<'m>,
    pub(super) span: Span,
}

impl Build for Emit<'_, '_> {
    fn temp(&mut self, ty: OpTy) -> RegId {
        self.l.temp(ty.storage(), self.span)
    }

    fn push(&mut self, kind: InstKind) {
        self.l.push(kind, self.span);
    }
}

/// The packed integer types of `add`/`sub`/`min`/`max` (§9.7.1.1, §9.7.1.12): the
/// element type of each half word.
fn packed_elem(m: &Mods) -> Option<OpTy> {
    if !m.types.is_empty() {
        return None;
    }
    m.find(|d| match d {
        Modifier::Format(Format::U16x2) => Some(OpTy::U(16)),
        Modifier::Format(Format::S16x2) => Some(OpTy::S(16)),
        _ => None,
    })
    .map(|t| t.value)
}

const CC: Modifier = Modifier::Carry(Carry::Cc);
pub(super) const RELU: Modifier = Modifier::FloatOption(FloatOption::Relu);
pub(super) const NAN: Modifier = Modifier::FloatOption(FloatOption::NaN);
const XORSIGN: Modifier = Modifier::FloatOption(FloatOption::Xorsign);
const ABS: Modifier = Modifier::FloatOption(FloatOption::Abs);
const CLAMP: Modifier = Modifier::Clamp(Clamp::Clamp);

impl Lowerer<'_> {
    /// Lowers `i` if it is one of this module's instructions; `None` leaves it to the
    /// core lowering.
    pub(super) fn expand(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        let result = match op {
            // Packed half words exist for `add`, `min` and `max` only (§9.7.1.1-2).
            Opcode::Add | Opcode::Sub if m.has(CC) && packed_elem(m).is_none() => {
                self.carry_chain(op, i, m)
            }
            Opcode::Add | Opcode::Sub
                if m.has(CC)
                    || self.int_sat(i, m)
                    || (op == Opcode::Add && packed_elem(m).is_some()) =>
            {
                self.packed_or_sat(op, i, m)
            }
            Opcode::Mad if m.has(CC) => self.carry_chain(op, i, m),
            Opcode::Mad if self.int_sat(i, m) => self.mad_hi_sat(i, m),
            Opcode::Addc | Opcode::Subc | Opcode::Madc => self.carry_chain(op, i, m),
            Opcode::Min | Opcode::Max if m.has(RELU) || packed_elem(m).is_some() => {
                self.packed_or_sat(op, i, m)
            }
            Opcode::Min | Opcode::Max
                if m.has(NAN) || m.has(XORSIGN) || m.has(ABS) || i.operands.len() == 4 =>
            {
                self.float_min_max(op, i, m)
            }
            Opcode::Mul24 | Opcode::Mad24 if m.sat => self.mad_hi_sat(i, m),
            Opcode::Mul24 | Opcode::Mad24 => self.mul24(op, i, m),
            Opcode::Sad => self.sad(i, m),
            Opcode::Bfind => self.bfind(i, m),
            Opcode::Fns => self.fns(i),
            Opcode::Prefetch
            | Opcode::Prefetchu
            | Opcode::Applypriority
            | Opcode::Createpolicy
            | Opcode::Nanosleep
            | Opcode::Pmevent
            | Opcode::Griddepcontrol
            | Opcode::Setmaxnreg => self.hint(op, i),
            Opcode::Bmsk | Opcode::Szext => self.mask_ops(op, i, m),
            Opcode::Prmt => self.prmt(i, m),
            Opcode::Shf => self.shf(i, m),
            Opcode::Lop3 => self.lop3(i, m),
            Opcode::Dp4a | Opcode::Dp2a => self.dot(op, i, m),
            Opcode::Copysign => self.copysign(i, m),
            Opcode::Testp => self.testp(i, m),
            Opcode::Set => self.set(i, m),
            Opcode::Slct => self.slct(i, m),
            Opcode::Cvt if m.has(Modifier::Conversion(Conversion::Pack)) => self.convert_pack(i, m),
            _ => return None,
        };
        Some(result)
    }

    /// `cvt.pack.sat.{u16,s16}.s32 d, a, b` and `cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32
    /// d, a, b, c` (§9.7.9.22): `a` and `b` clamped to the narrow type's range, `b` in
    /// the lowest bits of `d`, `a` above it, and with `c` the remaining bits of `d` from
    /// the low bits of `c`.
    fn convert_pack(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        // The form is checked (`ptxvk_frontend::forms`): it names its narrow type.
        let span = i.span;
        let sub_byte = m.find(|d| match d {
            Modifier::Format(Format::U4) => Some((4u32, false)),
            Modifier::Format(Format::S4) => Some((4, true)),
            Modifier::Format(Format::U2) => Some((2, false)),
            Modifier::Format(Format::S2) => Some((2, true)),
            _ => None,
        });
        let narrow = sub_byte.map(|n| n.value).or_else(|| {
            m.types.iter().find_map(|t| match t.value {
                ScalarType::U16 => Some((16, false)),
                ScalarType::S16 => Some((16, true)),
                ScalarType::U8 => Some((8, false)),
                ScalarType::S8 => Some((8, true)),
                _ => None,
            })
        });
        let (bits, signed) = narrow.unwrap_or((16, false));
        let with_c = bits < 16;
        let s32 = OpTy::S(32);
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [a, b] = self.srcs(i, 1, [s32, s32])?;
        let mut srcs = vec![a, b];
        if with_c {
            srcs.push(self.src(&i.operands[3], U32, false, span)?);
        }
        self.integer(IntegerOp::CvtPack { bits: bits as u8, signed }, Some(dst), srcs, span);
        Ok(())
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

    /// Packed `.u16x2`/`.s16x2` `add`/`min`/`max` (§9.7.1.1, §9.7.1.12-13), `.relu`
    /// and `add.sat.s32`/`sub.sat.s32`.
    fn packed_or_sat(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        // The form is checked (`ptxvk_frontend::forms`).
        let relu = m.has(RELU);
        let bop = match op {
            Opcode::Add => BinaryOp::Add,
            Opcode::Sub => BinaryOp::Sub,
            Opcode::Min => BinaryOp::Min,
            _ => BinaryOp::Max,
        };
        let span = i.span;
        if let Some(elem) = packed_elem(m) {
            let dst = self.dst(&i.operands[0], U32, false)?;
            let [a, b] = self.srcs(i, 1, [U32, U32])?;
            let op = match bop {
                BinaryOp::Min => PackedOp::Min,
                BinaryOp::Max => PackedOp::Max,
                _ => PackedOp::Add,
            };
            let op = IntegerOp::Packed { op, signed: elem.is_signed(), relu };
            self.integer(op, Some(dst), vec![a, b], span);
            return Ok(());
        }
        let ty = self.one_type(i, m)?;
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b] = self.srcs(i, 1, [ty, ty])?;
        let op = if relu {
            IntegerOp::Relu { max: bop == BinaryOp::Max }
        } else {
            IntegerOp::AddSat { sub: bop == BinaryOp::Sub }
        };
        self.integer(op, Some(dst), vec![a, b], span);
        Ok(())
    }

    /// The carry flag `CC.CF` of the extended-precision instructions (§9.7.2): a
    /// 32-bit register holding 0 or 1, created on first use. PTX leaves its value
    /// undefined before the first `.cc` instruction; here it starts at 0.
    fn carry_flag(&mut self, span: Span) -> RegId {
        if let Some(cc) = self.carry {
            return cc;
        }
        let cc = self.temp(RegTy::Int(32), span);
        self.kernel.regs[cc.index()].name = "$cc".into();
        // Initialized at the kernel's entry so that every path defines it.
        let entry = self.kernel.entry.index();
        let init =
            crate::ir::Inst { kind: InstKind::Mov { ty: U32, dst: cc, src: Value::Imm(0) }, span };
        self.kernel.blocks[entry].insts.insert(0, init);
        self.carry = Some(cc);
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
        let cc_out = m.has(CC);
        let carry_in = matches!(op, Opcode::Addc | Opcode::Subc | Opcode::Madc);
        let ty = self.one_type(i, m)?;
        let span = i.span;
        let dst = self.dst(&i.operands[0], ty, false)?;
        let (op, srcs) = if matches!(op, Opcode::Mad | Opcode::Madc) {
            let hi = m.mul_part.as_ref().is_some_and(|p| p.value == BinaryOp::MulHi);
            let part = if hi { CarryOp::MadHi } else { CarryOp::MadLo };
            let [a, b, c] = self.srcs(i, 1, [ty, ty, ty])?;
            (part, vec![a, b, c])
        } else {
            let [a, b] = self.srcs(i, 1, [ty, ty])?;
            let sum =
                if matches!(op, Opcode::Sub | Opcode::Subc) { CarryOp::Sub } else { CarryOp::Add };
            (sum, vec![a, b])
        };
        let cf = self.carry_flag(span);
        let carry_in = carry_in.then_some(cf);
        let carry_out = cc_out.then_some(cf);
        self.integer(IntegerOp::Carry { op, ty, carry_in, carry_out }, Some(dst), srcs, span);
        Ok(())
    }

    /// `min`/`max` on `.f32` with `.NaN` (a NaN operand gives the canonical NaN),
    /// `.xorsign.abs` (the magnitude of the result with the XOR of the operands' signs),
    /// `.abs` and three operands (§9.7.3.11-12).
    fn float_min_max(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        // The form is checked (`ptxvk_frontend::forms`): these exist for `.f32` only.
        let span = i.span;
        let ty = OpTy::F(32);
        let (xorsign, abs) = (m.has(XORSIGN), m.has(ABS));
        let dst = self.dst(&i.operands[0], ty, false)?;
        let mut x = Vec::new();
        for o in &i.operands[1..] {
            x.push(self.src(o, ty, false, span)?);
        }
        let op = IntegerOp::FloatMinMax {
            max: op == Opcode::Max,
            ftz: m.ftz,
            nan: m.has(NAN),
            abs,
            xorsign,
        };
        self.integer(op, Some(dst), x, span);
        Ok(())
    }

    /// `mad.hi.sat.s32` (§9.7.1.4) and `mad24.hi.sat.s32` (§9.7.1.6): the high part of
    /// the product plus `c`, clamped to the s32 range.
    fn mad_hi_sat(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let op = m.opcode;
        let ty = OpTy::S(32);
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b, c] = self.srcs(i, 1, [ty, ty, ty])?;
        let op = IntegerOp::MadHiSat { mul24: op == Opcode::Mad24 };
        self.integer(op, Some(dst), vec![a, b, c], span);
        Ok(())
    }

    /// `mul24.{lo,hi}` and `mad24.{lo,hi}` on `.u32`/`.s32` (§9.7.1.5-6): the 48-bit
    /// product of the low 24 bits of `a` and `b` (sign-extended for `.s32`); `.lo` is
    /// bits 31..0, `.hi` bits 47..16; `mad24` adds `c` modulo 2^32.
    fn mul24(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let ty = self.one_type(i, m)?;
        let hi = m.mul_part.as_ref().is_some_and(|p| p.value == BinaryOp::MulHi);
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b] = self.srcs(i, 1, [ty, ty])?;
        let mut srcs = vec![a, b];
        let mad = op == Opcode::Mad24;
        if mad {
            srcs.push(self.src(&i.operands[3], ty, false, i.span)?);
        }
        let op = IntegerOp::Mul24 { signed: ty.is_signed(), hi, mad };
        self.integer(op, Some(dst), srcs, i.span);
        Ok(())
    }

    /// `sad` (§9.7.1.11): `d = c + |a - b|`, the difference taken in the type's order.
    fn sad(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let ty = self.one_type(i, m)?;
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b, c] = self.srcs(i, 1, [ty, ty, ty])?;
        self.integer(IntegerOp::Sad { ty }, Some(dst), vec![a, b, c], i.span);
        Ok(())
    }

    /// `bfind{.shiftamt}` (§9.7.1.16): the position of the most significant bit that
    /// is set (for signed types: that differs from the sign bit), or 0xffffffff;
    /// `.shiftamt` gives `msb - position` instead, which is the leading-zero count.
    fn bfind(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let ty = self.one_type(i, m)?;
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [a] = self.srcs(i, 1, [ty])?;
        let shiftamt = m.has(Modifier::Bfind(Bfind::Shiftamt));
        self.integer(IntegerOp::Bfind { ty, shiftamt }, Some(dst), vec![a], i.span);
        Ok(())
    }

    /// Performance hints with no effect on results, lowered to nothing (PTX ISA 9.2:
    /// `prefetch`/`prefetchu` §9.7.9.15, `applypriority` §9.7.9.17, `pmevent`
    /// §9.7.19.2, `griddepcontrol` §9.7.13.14 — without programmatic dependent launch
    /// every grid already waits for its predecessor —, `setmaxnreg` §9.7.19.5) and
    /// `nanosleep` (§9.7.13.11: the duration is only an upper bound, so none is a valid
    /// sleep). `createpolicy` (§9.7.9.18) returns an opaque cache policy, here 0.
    fn hint(&mut self, op: Opcode, i: &ast::Instruction) -> Result<(), Diagnostic> {
        if op == Opcode::Nanosleep {
            // Not a sleep, but a hint that the thread waits for others: a turn for them
            // where the block is scheduled (`pass::schedule`).
            self.push(InstKind::SyncPoint { point: SyncPoint::Sleep }, i.span);
        }
        if op == Opcode::Createpolicy {
            let dst = self.dst(&i.operands[0], OpTy::U(64), false)?;
            self.push(InstKind::Mov { ty: OpTy::U(64), dst, src: Value::Imm(0) }, i.span);
        }
        Ok(())
    }

    /// `fns.b32 d, mask, base, offset` (§9.7.1.18): the position of the |offset|-th set
    /// bit of `mask` counting from `base` upward (offset > 0) or downward (offset < 0),
    /// `base` itself when offset = 0 and that bit is set, else 0xffffffff.
    fn fns(&mut self, i: &ast::Instruction) -> Result<(), Diagnostic> {
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [mask, base, offset] = self.srcs(i, 1, [U32, U32, OpTy::S(32)])?;
        self.integer(IntegerOp::Fns, Some(dst), vec![mask, base, offset], i.span);
        Ok(())
    }

    /// `bmsk.{clamp,wrap}.b32 d, a, b` (§9.7.1.24): a mask of `b` ones from bit `a`;
    /// `szext.{clamp,wrap}.{u32,s32} d, a, b` (§9.7.1.25): the low `b` bits of `a`,
    /// zero- or sign-extended.
    fn mask_ops(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let clamp = m.has(CLAMP);
        let ty = self.one_type(i, m)?;
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b] = self.srcs(i, 1, [U32, U32])?;
        let op = if op == Opcode::Bmsk {
            IntegerOp::Bmsk { clamp }
        } else {
            IntegerOp::Szext { clamp, signed: ty.is_signed() }
        };
        self.integer(op, Some(dst), vec![a, b], i.span);
        Ok(())
    }

    /// `prmt.b32{.mode} d, a, b, c` (§9.7.8.7): four bytes picked from the eight of
    /// `{b, a}`. Without a mode each result byte has a 4-bit selector in `c` (bit 3:
    /// replicate the picked byte's sign); the modes pick by `c[1:0]` from the ISA's
    /// fixed table.
    fn prmt(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let mode = m.find(|d| match d {
            Modifier::PermuteMode(p) => Some(p),
            _ => None,
        });
        let mode = mode.map(|p| match p.value {
            PermuteMode::F4e => PrmtMode::F4e,
            PermuteMode::B4e => PrmtMode::B4e,
            PermuteMode::Rc8 => PrmtMode::Rc8,
            PermuteMode::Ecl => PrmtMode::Ecl,
            PermuteMode::Ecr => PrmtMode::Ecr,
            PermuteMode::Rc16 => PrmtMode::Rc16,
        });
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [a, b, c] = self.srcs(i, 1, [U32, U32, U32])?;
        self.integer(IntegerOp::Prmt { mode }, Some(dst), vec![a, b, c], i.span);
        Ok(())
    }

    /// `shf.{l,r}.{clamp,wrap}.b32 d, a, b, c` (§9.7.8.8): the funnel shift of `{b, a}`
    /// by `n = clamp ? min(c, 32) : c & 31`, taking the high word (`.l`) or the low
    /// word (`.r`) of the shifted 64-bit value.
    fn shf(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let left = m.has(Modifier::ShiftDirection(ShiftDirection::L));
        let clamp = m.has(CLAMP);
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [a, b, c] = self.srcs(i, 1, [U32, U32, U32])?;
        self.integer(IntegerOp::Shf { left, clamp }, Some(dst), vec![a, b, c], i.span);
        Ok(())
    }

    /// `lop3.b32 d, a, b, c, immLut` and `lop3.{and,or}.b32 d|p, a, b, c, immLut, q`
    /// (§9.7.8.6): the bitwise function whose truth table is `immLut` (bit
    /// `4a + 2b + c` of the table is the result for input bits a, b, c).
    fn lop3(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let combine = m.bool_op;
        let Operand::Imm(lut) = &i.operands[4] else {
            return Err(Diagnostic::error(i.operands[4].span(), "`immLut` must be a constant"));
        };
        let lut = lut.eval_int().map_err(|(s, msg)| Diagnostic::error(s, msg))?.value;
        if lut > 0xff {
            return Err(Diagnostic::error(i.operands[4].span(), "`immLut` is an 8-bit table"));
        }
        let (dst, pred_dst) = match (&i.operands[0], combine) {
            (Operand::Pair(d, p, _), Some(_)) => {
                (self.opt_dst(d, U32)?, self.opt_dst(p, OpTy::Pred)?)
            }
            (_, Some(_)) => {
                return Err(Diagnostic::error(span, "`lop3` with `.and`/`.or` writes `d|p`"))
            }
            (d, None) => (Some(self.dst(d, U32, false)?), None),
        };
        let [a, b, c] = self.srcs(i, 1, [U32, U32, U32])?;
        let combine = match combine {
            Some(op) => {
                let (pred, negate) = self.pred(&i.operands[5])?;
                Some(Lop3Combine { dst: pred_dst, with: PredSource { op, pred, negate } })
            }
            None => None,
        };
        self.integer(IntegerOp::Lop3 { lut: lut as u8, combine }, dst, vec![a, b, c], span);
        Ok(())
    }

    /// `dp4a.atype.btype d, a, b, c` (§9.7.1.23): `c` plus the four products of the
    /// bytes of `a` and `b`; `dp2a.{lo,hi}.atype.btype` (§9.7.1.22): `c` plus the two
    /// products of the half words of `a` and bytes 0-1 (`.lo`) or 2-3 (`.hi`) of `b`.
    /// Elements are sign-extended for `.s32`; the sum wraps modulo 2^32.
    fn dot(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let [at, bt] = [0, 1].map(|k| {
            let signed = m.types.get(k).is_some_and(|t| t.value == ScalarType::S32);
            if signed {
                OpTy::S(32)
            } else {
                U32
            }
        });
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

    /// `copysign.{f32,f64} d, a, b` (§9.7.3.2): `b` with the sign bit of `a`.
    fn copysign(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let ty = self.one_type(i, m)?;
        let bits = ty.as_unsigned();
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b] = self.srcs(i, 1, [bits, bits])?;
        self.integer(IntegerOp::Copysign { ty }, Some(dst), vec![a, b], i.span);
        Ok(())
    }

    /// `testp.op.{f32,f64} p, a` (§9.7.3.3): `.finite`, `.infinite`,
    /// `.number`, `.notanumber`, `.normal` (zero counts as normal, per the ISA),
    /// `.subnormal`.
    fn testp(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let class = m.find(|d| match d {
            Modifier::FloatClass(c) => Some(c),
            _ => None,
        });
        let which = match class.map(|c| c.value) {
            Some(FloatClass::Finite) => FloatTest::Finite,
            Some(FloatClass::Infinite) => FloatTest::Infinite,
            Some(FloatClass::Number) => FloatTest::Number,
            Some(FloatClass::NotANumber) => FloatTest::NotANumber,
            Some(FloatClass::Normal) => FloatTest::Normal,
            _ => FloatTest::Subnormal,
        };
        let ty = self.one_type(i, m)?;
        let bits = ty.as_unsigned();
        let dst = self.dst(&i.operands[0], OpTy::Pred, false)?;
        let [a] = self.srcs(i, 1, [bits])?;
        self.integer(IntegerOp::Testp { test: which, ty }, Some(dst), vec![a], i.span);
        Ok(())
    }

    /// `set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, {!}c}` (§9.7.7.1, and §9.7.4.7
    /// for half types): the comparison, then all ones (`.u32`/`.s32`, `.u16`/`.s16`) or 1.0
    /// (`.f32`, `.f16`, `.bf16`) when true, else 0. Half sources compare as their exact
    /// f32 values.
    fn set(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let [dt, st] = match m.types.as_slice() {
            [d, s] => [d, s],
            _ => {
                return Err(Diagnostic::error(
                    span,
                    "`set` needs two types, such as `set.lt.u32.s32`",
                ))
            }
        };
        let half = super::formats::half_source(st.value);
        let lanes = half.map_or(1, |(_, n)| n);
        // What one lane holds when the comparison is true (§9.7.7.1: all ones for
        // integers, 1.0 for floats), and the destination's lane width.
        let (truth, lane_bits) =
            match (dt.value, lanes) {
                (ScalarType::U32 | ScalarType::S32, 1) => (SetTruth::Ones32, 32),
                (ScalarType::F32, 1) if half.is_none() => (SetTruth::F32, 32),
                (ScalarType::U16 | ScalarType::S16, 1) if half.is_some() => (SetTruth::Ones16, 16),
                (ScalarType::U32 | ScalarType::S32, 2) => (SetTruth::Ones16, 16),
                (ScalarType::F16, 1) | (ScalarType::F16x2, 2) => (SetTruth::F16, 16),
                (ScalarType::Bf16, 1) | (ScalarType::Bf16x2, 2) => (SetTruth::Bf16, 16),
                _ => return Err(Diagnostic::error(
                    dt.span,
                    "`set` writes `.u32`, `.s32` or `.f32`; `.f16` or `.bf16`; `.u16` or `.s16` \
                     from half sources; `.f16x2`, `.bf16x2`, `.u32` or `.s32` from x2 sources",
                )),
            };
        let dty = OpTy::U((lane_bits * lanes) as u8);
        let sty = match half {
            Some((crate::ir::FloatFormat::Bf16, _)) if m.ftz => {
                return Err(Diagnostic::error(st.span, "`.bf16` comparisons take no `.ftz`"))
            }
            Some(_) => OpTy::F(32),
            None => super::op_ty(st)?,
        };
        // The form has a comparison (`ptxvk_frontend::forms`).
        let cmp = m.cmp.unwrap_or(crate::ir::CmpOp::Eq);
        super::check_comparison(span, cmp, sty, m.ftz)?;
        let dst = self.dst(&i.operands[0], dty, false)?;
        let combine = match m.bool_op {
            Some(op) => {
                let (pred, negate) = self.pred(&i.operands[3])?;
                Some(PredSource { op, pred, negate })
            }
            None => None,
        };
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

    /// `slct.dtype.s32 d, a, b, c` and `slct{.ftz}.dtype.f32 d, a, b, c` (§9.7.7.3):
    /// `c >= 0 ? a : b`; a NaN `c` selects `b`, and `-0.0` selects `a`.
    fn slct(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let dty = super::op_ty(&m.types[0])?;
        let cty = if m.types[1].value == ScalarType::F32 { OpTy::F(32) } else { OpTy::S(32) };
        let dst = self.dst(&i.operands[0], dty, false)?;
        let [a, b, c] = self.srcs(i, 1, [dty, dty, cty])?;
        let op = IntegerOp::Slct { ty: dty, float: cty.is_float(), ftz: m.ftz };
        self.integer(op, Some(dst), vec![a, b, c], span);
        Ok(())
    }
}
