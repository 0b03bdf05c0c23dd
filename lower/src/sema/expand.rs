//! Instructions lowered to sequences of the IR's core operations: the integer
//! instructions of PTX ISA 9.2 §9.7.1 and §9.7.8 that have no single SPIR-V counterpart
//! (`mul24`, `mad24`, `sad`, `bfind`, `bmsk`, `szext`, `prmt`, `shf`, `lop3`, `dp4a`,
//! `dp2a`, the `.cc` carry chains `add.cc`/`addc`/`sub.cc`/`subc`/`mad.cc`/`madc`,
//! saturating `add`/`sub`, `.relu` and the packed `.u16x2`/`.s16x2` forms of
//! `add`/`min`/`max`), and the float bit-level instructions `copysign`, `testp`,
//! `set` and `slct` (§9.7.3, §9.7.7).
//!
//! Every expansion reads its sources before it writes its destination (the last
//! instruction is a `mov`), so `d` may name a source register. The formulas follow the
//! ISA's pseudocode, cited beside each one.

use ptxvk_frontend::ast::{self, Operand, ScalarType};
use ptxvk_frontend::modifier::{
    Bfind, Carry, Clamp, Conversion, FloatClass, FloatOption, Format, Modifier, PermuteMode,
    ShiftDirection,
};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::Spanned;
use ptxvk_frontend::{Diagnostic, Span};

use super::{Lowerer, Mods};
use crate::build::Build;
use crate::ir::{
    BinaryOp, BoolOp, CmpOp, FloatMode, InstKind, OpTy, RegId, RegTy, SyncPoint, UnaryOp, Value,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

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
const WRAP: Modifier = Modifier::Clamp(Clamp::Wrap);

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
                // The three-input form (§9.7.3.10) has neither.
                match i.operands.len() {
                    3 => self.packed_or_sat(op, i, m),
                    n => Err(Diagnostic::error(
                        i.span,
                        format!("`{op}` takes 3 operands here, found {n}"),
                    )),
                }
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
            Opcode::Fns => self.fns(i, m),
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
        let Some((bits, signed)) = narrow else {
            return Err(Diagnostic::error(
                span,
                "`cvt.pack` converts to `.u16`, `.s16`, `.u8`, `.s8`, `.u4`, `.s4`, `.u2` or `.s2`",
            ));
        };
        m.allow(&[
            Modifier::Conversion(Conversion::Pack),
            Modifier::Format(Format::U4),
            Modifier::Format(Format::S4),
            Modifier::Format(Format::U2),
            Modifier::Format(Format::S2),
        ])?;
        if !m.sat || !m.types.iter().any(|t| t.value == ScalarType::S32) {
            return Err(Diagnostic::error(span, "`cvt.pack` is `cvt.pack.sat` from `.s32`"));
        }
        let with_c = bits < 16;
        if i.operands.len() != 3 + usize::from(with_c) {
            return Err(Diagnostic::error(
                span,
                format!("`cvt.pack` to {bits} bits takes {} operands", 3 + usize::from(with_c)),
            ));
        }
        let s32 = OpTy::S(32);
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [a, b] = self.srcs(i, 1, [s32, s32])?;
        let c = if with_c { Some(self.src(&i.operands[3], U32, false, span)?) } else { None };
        let (lo, hi) = if signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        let mut e = Emit { l: self, span };
        let mask = Value::Imm((1u64 << bits) - 1);
        let mut clamp = |v: Value| {
            let above = e.bin(BinaryOp::Max, s32, v, Value::Imm(lo as u64 & 0xffff_ffff));
            let within = e.bin(BinaryOp::Min, s32, above, Value::Imm(hi as u64 & 0xffff_ffff));
            e.and(U32, within, mask)
        };
        let (ta, tb) = (clamp(a), clamp(b));
        let high = e.bin(BinaryOp::Shl, U32, ta, Value::Imm(u64::from(bits)));
        let mut d = e.or(U32, high, tb);
        if let Some(c) = c {
            let rest = e.bin(BinaryOp::Shl, U32, c, Value::Imm(u64::from(2 * bits)));
            d = e.or(U32, d, rest);
        }
        e.mov(U32, dst, d);
        Ok(())
    }

    /// `add.sat.s32`/`sub.sat.s32`: the only saturating integer forms (§9.7.1.1-2).
    fn int_sat(&self, i: &ast::Instruction, m: &Mods) -> bool {
        m.sat && self.one_type(i, m).is_ok_and(|t| !t.is_float())
    }

    /// The type operands of an instruction with exactly one type among `allowed`.
    fn typed(&self, i: &ast::Instruction, m: &Mods, allowed: &[OpTy]) -> Result<OpTy, Diagnostic> {
        let ty = self.one_type(i, m)?;
        if allowed.contains(&ty) {
            return Ok(ty);
        }
        let names: Vec<String> = allowed.iter().map(|t| format!("`{}`", ty_name(*t))).collect();
        Err(Diagnostic::error(
            m.types.first().map_or(i.span, |t| t.span),
            format!("`{}` takes {}", i.opcode.value, names.join(", ")),
        ))
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

    /// Packed `.u16x2`/`.s16x2` `add`/`min`/`max` (per half word, §9.7.1.1,
    /// §9.7.1.12-13), `.relu` (`max(result, 0)`), and `add.sat.s32`/`sub.sat.s32`
    /// (computed exactly in 64 bits and clamped to the s32 range).
    fn packed_or_sat(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        m.allow(&[RELU, Modifier::Format(Format::U16x2), Modifier::Format(Format::S16x2)])?;
        let relu = m.has(RELU);
        let bop = match op {
            Opcode::Add => BinaryOp::Add,
            Opcode::Sub => BinaryOp::Sub,
            Opcode::Min => BinaryOp::Min,
            _ => BinaryOp::Max,
        };
        let span = i.span;
        if let Some(elem) = packed_elem(m) {
            if m.sat || m.ftz || m.rounding.is_some() {
                return Err(Diagnostic::error(
                    span,
                    format!("`{op}.{}x2` takes no rounding, `.ftz` or `.sat`", ty_name(elem)),
                ));
            }
            if relu && (elem != OpTy::S(16) || matches!(bop, BinaryOp::Add | BinaryOp::Sub)) {
                return Err(Diagnostic::error(
                    span,
                    "`.relu` takes `min`/`max` on `.s16x2` or `.s32`",
                ));
            }
            let dst = self.dst(&i.operands[0], U32, false)?;
            let [a, b] = self.srcs(i, 1, [U32, U32])?;
            let mut e = Emit { l: self, span };
            let mut halves = Vec::new();
            let word = if elem.is_signed() { OpTy::S(32) } else { U32 };
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
            e.mov(U32, dst, Value::Reg(t));
            return Ok(());
        }
        let ty = self.one_type(i, m)?;
        if ty != OpTy::S(32) {
            return Err(Diagnostic::error(
                span,
                if relu {
                    "`.relu` takes `min`/`max` on `.s16x2` or `.s32`"
                } else {
                    "integer `.sat` takes `.s32` only"
                },
            ));
        }
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b] = self.srcs(i, 1, [ty, ty])?;
        let mut e = Emit { l: self, span };
        if relu {
            let r = e.bin(bop, ty, a, b);
            let r = e.bin(BinaryOp::Max, ty, r, Value::Imm(0));
            e.mov(ty, dst, r);
        } else {
            let s64 = OpTy::S(64);
            let x = e.cvt(s64, ty, a);
            let y = e.cvt(s64, ty, b);
            let r = e.bin(bop, s64, x, y);
            let t = e.temp(ty);
            e.push(InstKind::Convert {
                to: ty,
                from: s64,
                rounding: None,
                mode: FloatMode { ftz: false, sat: true, ..FloatMode::default() },
                dst: t,
                src: r,
            });
            e.mov(ty, dst, Value::Reg(t));
        }
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
    /// `madc{.lo,.hi}{.cc}` (§9.7.2.5-6) on `.u32 .s32 .u64 .s64`: `d = a + b (+ CF)`,
    /// or for subtraction `d = a + ~b + (1 or CF)`, with the carry out of the
    /// full-width unsigned sum written to `CF` when `.cc` is given, as NVIDIA hardware
    /// does. The carry out of `x + y + c` is `(x+y <u x) | (x+y+c <u x+y)`.
    fn carry_chain(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        m.allow(&[CC])?;
        let cc_out = m.has(CC);
        let carry_in = matches!(op, Opcode::Addc | Opcode::Subc | Opcode::Madc);
        let ty = self.typed(i, m, &[U32, OpTy::S(32), U64, OpTy::S(64)])?;
        if m.sat {
            return Err(Diagnostic::error(i.span, format!("`{op}` with `.cc` takes no `.sat`")));
        }
        let span = i.span;
        let uty = ty.as_unsigned();
        let dst = self.dst(&i.operands[0], ty, false)?;
        let (x, y) = if matches!(op, Opcode::Mad | Opcode::Madc) {
            let part = match m.mul_part.as_ref().map(|p| p.value) {
                Some(p @ (BinaryOp::Mul | BinaryOp::MulHi)) => p,
                _ => return Err(Diagnostic::error(span, format!("`{op}` needs `.lo` or `.hi`"))),
            };
            let [a, b, c] = self.srcs(i, 1, [ty, ty, ty])?;
            let mut e = Emit { l: self, span };
            (e.bin(part, ty, a, b), c)
        } else {
            if let Some(p) = &m.mul_part {
                return Err(Diagnostic::error(p.span, format!("`{op}` takes no `.lo/.hi/.wide`")));
            }
            let [a, b] = self.srcs(i, 1, [ty, ty])?;
            (a, b)
        };
        let cf = if carry_in || cc_out { Some(self.carry_flag(span)) } else { None };
        let mut e = Emit { l: self, span };
        let subtract = matches!(op, Opcode::Sub | Opcode::Subc);
        let cin = match (carry_in, cf) {
            (true, Some(cf)) => {
                Some(if uty == U64 { e.cvt(U64, U32, Value::Reg(cf)) } else { Value::Reg(cf) })
            }
            _ => None,
        };
        // NVIDIA hardware computes a subtraction as an addition of the complement
        // (`a - b` = `a + ~b + 1`, `subc` = `a + ~b + CF`), and `CF` is always that
        // addition's carry: 1 after `sub.cc` when nothing was borrowed. Mixed chains
        // (`add.cc` then `subc`, `sub.cc` then `addc`) depend on it.
        let (y, cin) =
            if subtract { (e.not(uty, y), Some(cin.unwrap_or(Value::Imm(1)))) } else { (y, cin) };
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
        if let (true, Some(cf)) = (cc_out, cf) {
            let out = match out2 {
                Some(o2) => e.pred_or(out1, o2),
                None => out1,
            };
            let bit = e.sel(U32, out, Value::Imm(1), Value::Imm(0));
            e.mov(ty, dst, result);
            e.mov(U32, cf, bit);
        } else {
            e.mov(ty, dst, result);
        }
        Ok(())
    }

    /// `min`/`max` on `.f32` with `.NaN` (a NaN operand gives the canonical NaN),
    /// `.xorsign.abs` (the magnitude of the result with the XOR of the operands' signs),
    /// `.abs` and three operands (§9.7.3.11-12): through the core float `Min`/`Max`.
    fn float_min_max(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        m.allow(&[NAN, XORSIGN, ABS])?;
        let span = i.span;
        // These forms exist for `.f32` only (the half types go through `sema::formats`).
        let ty = self.typed(i, m, &[OpTy::F(32)])?;
        let xorsign = m.has(XORSIGN);
        let abs = m.has(ABS);
        if xorsign && !abs {
            return Err(Diagnostic::error(span, "`.xorsign` goes with `.abs`"));
        }
        let n = i.operands.len();
        if !(n == 3 || (n == 4 && !xorsign)) {
            return Err(Diagnostic::error(
                span,
                format!("`{op}` takes 3 operands (4 for three inputs)"),
            ));
        }
        if m.ftz && ty != OpTy::F(32) {
            return Err(Diagnostic::error(span, "`.ftz` takes `.f32`"));
        }
        let bits = ty.as_unsigned();
        let sign = 1u64 << (ty.bits() - 1);
        let dst = self.dst(&i.operands[0], ty, false)?;
        let mut x = Vec::new();
        for o in &i.operands[1..] {
            x.push(self.src(o, ty, false, span)?);
        }
        let mode = FloatMode { ftz: m.ftz, ..FloatMode::default() };
        let bop = if op == Opcode::Min { BinaryOp::Min } else { BinaryOp::Max };
        let mut e = Emit { l: self, span };
        let vals: Vec<Value> = if abs {
            x.iter().map(|&v| e.and(bits, v, Value::Imm(sign - 1))).collect()
        } else {
            x.clone()
        };
        let mut r = vals[0];
        for &v in &vals[1..] {
            let t = e.temp(ty);
            e.push(InstKind::Binary { op: bop, ty, mode, dst: t, lhs: r, rhs: v });
            r = Value::Reg(t);
        }
        if m.has(NAN) {
            let mut any = e.cmp(CmpOp::Nan, ty, x[0], x[1]);
            if let Some(&c) = x.get(2) {
                let c_nan = e.cmp(CmpOp::Nan, ty, c, c);
                any = e.pred_or(any, c_nan);
            }
            r = e.sel(
                bits,
                any,
                Value::Imm(if ty.bits() == 32 { 0x7fff_ffff } else { 0x7fff_ffff_ffff_ffff }),
                r,
            );
        }
        if xorsign {
            let s = e.bin(BinaryOp::Xor, bits, x[0], x[1]);
            let s = e.and(bits, s, Value::Imm(sign));
            r = e.or(bits, r, s);
        }
        e.mov(ty, dst, r);
        Ok(())
    }

    /// `mad.hi.sat.s32` (§9.7.1.4) and `mad24.hi.sat.s32` (§9.7.1.6): the high part of
    /// the product plus `c`, computed exactly in 64 bits and clamped to the s32 range.
    fn mad_hi_sat(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        m.allow(&[])?;
        let span = i.span;
        let op = m.opcode;
        let ty = self.one_type(i, m)?;
        if ty != OpTy::S(32)
            || !matches!(m.mul_part.as_ref().map(|p| p.value), Some(BinaryOp::MulHi))
        {
            return Err(Diagnostic::error(span, format!("integer `.sat` takes `{op}.hi.sat.s32`")));
        }
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b, c] = self.srcs(i, 1, [ty, ty, ty])?;
        let mut e = Emit { l: self, span };
        let s64 = OpTy::S(64);
        let (a, b) =
            if op == Opcode::Mad24 { (e.bfe(ty, a, 0, 24), e.bfe(ty, b, 0, 24)) } else { (a, b) };
        let p = e.bin(BinaryOp::MulWide, ty, a, b);
        let shift = if op == Opcode::Mad24 { 16 } else { 32 };
        let hi = e.bin(BinaryOp::Shr, s64, p, Value::Imm(shift));
        // The high part as an s32 (for mad24, bits 47..16 of the 48-bit product).
        let hi = e.cvt(ty, s64, hi);
        let hi = e.cvt(s64, ty, hi);
        let c64 = e.cvt(s64, ty, c);
        let sum = e.add(s64, hi, c64);
        let t = e.temp(ty);
        e.push(InstKind::Convert {
            to: ty,
            from: s64,
            rounding: None,
            mode: FloatMode { sat: true, ..FloatMode::default() },
            dst: t,
            src: sum,
        });
        e.mov(ty, dst, Value::Reg(t));
        Ok(())
    }

    /// `mul24.{lo,hi}` and `mad24.{lo,hi}` on `.u32`/`.s32` (§9.7.1.5-6): the 48-bit
    /// product of the low 24 bits of `a` and `b` (sign-extended for `.s32`); `.lo` is
    /// bits 31..0, `.hi` bits 47..16; `mad24` adds `c` modulo 2^32.
    fn mul24(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        m.allow(&[])?;
        let ty = self.typed(i, m, &[U32, OpTy::S(32)])?;
        let hi = match m.mul_part.as_ref().map(|p| p.value) {
            Some(BinaryOp::Mul) => false,
            Some(BinaryOp::MulHi) => true,
            _ => return Err(Diagnostic::error(i.span, format!("`{op}` needs `.lo` or `.hi`"))),
        };
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b] = self.srcs(i, 1, [ty, ty])?;
        let c = if op == Opcode::Mad24 {
            Some(self.src(&i.operands[3], ty, false, i.span)?)
        } else {
            None
        };
        let mut e = Emit { l: self, span: i.span };
        let a24 = e.bfe(ty, a, 0, 24);
        let b24 = e.bfe(ty, b, 0, 24);
        let p = e.bin(BinaryOp::MulWide, ty, a24, b24);
        let p = if hi { e.bin(BinaryOp::Shr, U64, p, Value::Imm(16)) } else { p };
        let mut r = e.lo32(p);
        if let Some(c) = c {
            r = e.add(U32, r, c);
        }
        e.mov(ty, dst, r);
        Ok(())
    }

    /// `sad` (§9.7.1.11): `d = c + |a - b|`, the difference taken in the type's order.
    fn sad(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        m.allow(&[])?;
        let all = [OpTy::U(16), U32, U64, OpTy::S(16), OpTy::S(32), OpTy::S(64)];
        let ty = self.typed(i, m, &all)?;
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b, c] = self.srcs(i, 1, [ty, ty, ty])?;
        let mut e = Emit { l: self, span: i.span };
        let lt = e.cmp(CmpOp::Lt, ty, a, b);
        let ba = e.bin(BinaryOp::Sub, ty, b, a);
        let ab = e.bin(BinaryOp::Sub, ty, a, b);
        let diff = e.sel(ty, lt, ba, ab);
        let r = e.add(ty, c, diff);
        e.mov(ty, dst, r);
        Ok(())
    }

    /// `bfind{.shiftamt}` (§9.7.1.16): the position of the most significant bit that
    /// is set (for signed types: that differs from the sign bit), or 0xffffffff;
    /// `.shiftamt` gives `msb - position` instead, which is the leading-zero count.
    fn bfind(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let ty = self.typed(i, m, &[U32, U64, OpTy::S(32), OpTy::S(64)])?;
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [a] = self.srcs(i, 1, [ty])?;
        let mut e = Emit { l: self, span: i.span };
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
        let r = if m.has(Modifier::Bfind(Bfind::Shiftamt)) {
            clz
        } else {
            e.bin(BinaryOp::Sub, U32, Value::Imm(u64::from(ty.bits() - 1)), clz)
        };
        let r = e.sel(U32, found, r, Value::Imm(0xffff_ffff));
        e.mov(U32, dst, r);
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
    /// `base` itself when offset = 0 and that bit is set, else 0xffffffff. The n-th set
    /// bit is found by a binary search on population counts (no loop): downward
    /// searches run on the bit-reversed mask.
    fn fns(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        m.allow(&[])?;
        self.typed(i, m, &[U32])?;
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [mask, base, offset] = self.srcs(i, 1, [U32, U32, OpTy::S(32)])?;
        let mut e = Emit { l: self, span: i.span };
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
        let r = e.sel(U32, big, none, r);
        e.mov(U32, dst, r);
        Ok(())
    }

    /// `bmsk.{clamp,wrap}.b32 d, a, b` (§9.7.1.24): a mask of `b` ones from bit `a`;
    /// `szext.{clamp,wrap}.{u32,s32} d, a, b` (§9.7.1.25): the low `b` bits of `a`,
    /// zero- or sign-extended. Both follow the ISA pseudocode step by step.
    fn mask_ops(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let clamp = match (m.has(CLAMP), m.has(WRAP)) {
            (true, false) => true,
            (false, true) => false,
            _ => {
                return Err(Diagnostic::error(i.span, format!("`{op}` needs `.clamp` or `.wrap`")))
            }
        };
        let ty = if op == Opcode::Bmsk {
            self.typed(i, m, &[U32])?
        } else {
            self.typed(i, m, &[U32, OpTy::S(32)])?
        };
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b] = self.srcs(i, 1, [U32, U32])?;
        let mut e = Emit { l: self, span: i.span };
        let ones = Value::Imm(0xffff_ffff);
        let b1 = e.and(U32, b, Value::Imm(31));
        let b_big = e.cmp(CmpOp::Ge, U32, b, Value::Imm(32));
        let r = if op == Opcode::Bmsk {
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
        } else {
            let shifted = e.bin(BinaryOp::Shl, U32, ones, b1);
            let mask = if clamp { e.sel(U32, b_big, Value::Imm(0), shifted) } else { shifted };
            let keep = e.not(U32, mask);
            let low = e.and(U32, a, keep);
            if ty.is_signed() {
                let pos = e.bin(BinaryOp::Sub, U32, b1, Value::Imm(1));
                let pos = e.and(U32, pos, Value::Imm(31));
                let sign = e.bin(BinaryOp::Shr, U32, a, pos);
                let sign = e.and(U32, sign, Value::Imm(1));
                let b_zero = e.cmp(CmpOp::Eq, U32, b1, Value::Imm(0));
                let sign = e.sel(U32, b_zero, Value::Imm(0), sign);
                let set = e.cmp(CmpOp::Ne, U32, sign, Value::Imm(0));
                let fill = e.sel(U32, set, mask, Value::Imm(0));
                e.or(U32, low, fill)
            } else {
                low
            }
        };
        e.mov(ty, dst, r);
        Ok(())
    }

    /// `prmt.b32{.mode} d, a, b, c` (§9.7.8.7): four bytes picked from the eight of
    /// `{b, a}`. Without a mode each result byte has a 4-bit selector in `c` (bit 3:
    /// replicate the picked byte's sign); the modes pick by `c[1:0]` from the ISA's
    /// fixed table, which becomes a selector word here.
    fn prmt(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        if let Some(second) = m.details.get(1) {
            return Err(Diagnostic::error(second.span, "`prmt` takes one mode"));
        }
        self.typed(i, m, &[U32])?;
        let mode = m.find(|d| match d {
            Modifier::PermuteMode(p) => Some(p),
            _ => None,
        });
        let mode = mode.map(|p| match p.value {
            PermuteMode::F4e => [0x3210, 0x4321, 0x5432, 0x6543],
            PermuteMode::B4e => [0x5670, 0x6701, 0x7012, 0x0123],
            PermuteMode::Rc8 => [0x0000, 0x1111, 0x2222, 0x3333],
            PermuteMode::Ecl => [0x3210, 0x3211, 0x3222, 0x3333],
            PermuteMode::Ecr => [0x0000, 0x1110, 0x2210, 0x3210],
            PermuteMode::Rc16 => [0x1010, 0x3232, 0x1010, 0x3232],
        });
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [a, b, c] = self.srcs(i, 1, [U32, U32, U32])?;
        let mut e = Emit { l: self, span: i.span };
        let bytes = e.pack64(a, b);
        let selector = match mode {
            None => c,
            Some(table) => {
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
        e.mov(U32, dst, r);
        Ok(())
    }

    /// `shf.{l,r}.{clamp,wrap}.b32 d, a, b, c` (§9.7.8.8): the funnel shift of `{b, a}`
    /// by `n = clamp ? min(c, 32) : c & 31`, taking the high word (`.l`) or the low
    /// word (`.r`) of the shifted 64-bit value.
    fn shf(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let left = match (
            m.has(Modifier::ShiftDirection(ShiftDirection::L)),
            m.has(Modifier::ShiftDirection(ShiftDirection::R)),
        ) {
            (true, false) => true,
            (false, true) => false,
            _ => return Err(Diagnostic::error(i.span, "`shf` needs `.l` or `.r`")),
        };
        let clamp = match (m.has(CLAMP), m.has(WRAP)) {
            (true, false) => true,
            (false, true) => false,
            _ => return Err(Diagnostic::error(i.span, "`shf` needs `.clamp` or `.wrap`")),
        };
        self.typed(i, m, &[U32])?;
        let dst = self.dst(&i.operands[0], U32, false)?;
        let [a, b, c] = self.srcs(i, 1, [U32, U32, U32])?;
        let mut e = Emit { l: self, span: i.span };
        let n = if clamp {
            e.bin(BinaryOp::Min, U32, c, Value::Imm(32))
        } else {
            e.and(U32, c, Value::Imm(31))
        };
        let bits = e.pack64(a, b);
        let r = if left {
            let s = e.bin(BinaryOp::Shl, U64, bits, n);
            let s = e.bin(BinaryOp::Shr, U64, s, Value::Imm(32));
            e.lo32(s)
        } else {
            let s = e.bin(BinaryOp::Shr, U64, bits, n);
            e.lo32(s)
        };
        e.mov(U32, dst, r);
        Ok(())
    }

    /// `lop3.b32 d, a, b, c, immLut` and `lop3.{and,or}.b32 d|p, a, b, c, immLut, q`
    /// (§9.7.8.6): the bitwise function whose truth table is `immLut` (bit
    /// `4a + 2b + c` of the table is the result for input bits a, b, c), built as the
    /// OR of its minterms.
    fn lop3(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        m.allow(&[])?;
        self.typed(i, m, &[U32])?;
        let span = i.span;
        let combine = m.bool_op;
        if matches!(combine, Some(BoolOp::Xor)) {
            return Err(Diagnostic::error(span, "`lop3` combines with `.and` or `.or`"));
        }
        let n = if combine.is_some() { 6 } else { 5 };
        if i.operands.len() != n {
            return Err(Diagnostic::error(
                span,
                format!("`lop3` takes {n} operands here, found {}", i.operands.len()),
            ));
        }
        let Operand::Imm(lut) = &i.operands[4] else {
            return Err(Diagnostic::error(i.operands[4].span(), "`immLut` must be a constant"));
        };
        let lut = lut.eval_int().map_err(|(s, msg)| Diagnostic::error(s, msg))?.value;
        if lut > 0xff {
            return Err(Diagnostic::error(i.operands[4].span(), "`immLut` is an 8-bit table"));
        }
        let (dst, pred) = match (&i.operands[0], combine) {
            (Operand::Pair(d, p, _), Some(_)) => {
                (self.opt_dst(d, U32)?, self.opt_dst(p, OpTy::Pred)?)
            }
            (_, Some(_)) => {
                return Err(Diagnostic::error(span, "`lop3` with `.and`/`.or` writes `d|p`"))
            }
            (d, None) => (Some(self.dst(d, U32, false)?), None),
        };
        let [a, b, c] = self.srcs(i, 1, [U32, U32, U32])?;
        let q = match combine {
            Some(_) => Some(self.pred(&i.operands[5])?),
            None => None,
        };
        let mut e = Emit { l: self, span };
        let not_a = e.not(U32, a);
        let not_b = e.not(U32, b);
        let not_c = e.not(U32, c);
        let mut r = Value::Imm(0);
        for minterm in 0..8u64 {
            if lut >> minterm & 1 == 0 {
                continue;
            }
            let x = if minterm & 4 != 0 { a } else { not_a };
            let y = if minterm & 2 != 0 { b } else { not_b };
            let z = if minterm & 1 != 0 { c } else { not_c };
            let xy = e.and(U32, x, y);
            let term = e.and(U32, xy, z);
            r = e.or(U32, r, term);
        }
        if let (Some(p), Some(op), Some((q, negate))) = (pred, combine, q) {
            let nonzero = e.cmp(CmpOp::Ne, U32, r, Value::Imm(0));
            let q = if negate {
                let t = e.temp(OpTy::Pred);
                e.push(InstKind::PredNot { dst: t, src: q });
                t
            } else {
                q
            };
            e.push(InstKind::PredLogic { op, dst: p, lhs: nonzero, rhs: q });
        }
        if let Some(d) = dst {
            e.mov(U32, d, r);
        }
        Ok(())
    }

    /// `dp4a.atype.btype d, a, b, c` (§9.7.1.23): `c` plus the four products of the
    /// bytes of `a` and `b`; `dp2a.{lo,hi}.atype.btype` (§9.7.1.22): `c` plus the two
    /// products of the half words of `a` and bytes 0-1 (`.lo`) or 2-3 (`.hi`) of `b`.
    /// Elements are sign-extended for `.s32`; the sum wraps modulo 2^32.
    fn dot(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        m.allow(&[])?;
        let [at, bt] = match m.types.as_slice() {
            [x, y] => [x, y].map(|t| match t.value {
                ScalarType::U32 => Ok(U32),
                ScalarType::S32 => Ok(OpTy::S(32)),
                _ => Err(Diagnostic::error(t.span, format!("`{op}` takes `.u32` or `.s32`"))),
            }),
            _ => {
                return Err(Diagnostic::error(
                    i.span,
                    format!("`{op}` needs two types, such as `{op}.u32.s32`"),
                ))
            }
        };
        let (at, bt) = (at?, bt?);
        let hi = match (op, m.mul_part.as_ref().map(|p| p.value)) {
            (Opcode::Dp4a, None) => false,
            (Opcode::Dp2a, Some(BinaryOp::Mul)) => false,
            (Opcode::Dp2a, Some(BinaryOp::MulHi)) => true,
            (Opcode::Dp2a, _) => {
                return Err(Diagnostic::error(i.span, "`dp2a` needs `.lo` or `.hi`"));
            }
            _ => return Err(Diagnostic::error(i.span, "`dp4a` takes no `.lo/.hi/.wide`")),
        };
        let signed = at.is_signed() || bt.is_signed();
        let dty = if signed { OpTy::S(32) } else { U32 };
        let dst = self.dst(&i.operands[0], dty, false)?;
        let [a, b, c] = self.srcs(i, 1, [at, bt, dty])?;
        let mut e = Emit { l: self, span: i.span };
        let (count, a_bits) = if op == Opcode::Dp4a { (4, 8) } else { (2, 16) };
        let b_first = if hi { 2 } else { 0 };
        let mut r = c;
        for k in 0..count {
            let x = e.bfe(at, a, a_bits * k, a_bits);
            let y = e.bfe(bt, b, 8 * (b_first + k), 8);
            let p = e.bin(BinaryOp::Mul, U32, x, y);
            r = e.add(U32, r, p);
        }
        e.mov(dty, dst, r);
        Ok(())
    }

    /// `copysign.{f32,f64} d, a, b` (§9.7.3.2): `b` with the sign bit of `a`.
    fn copysign(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        m.allow(&[])?;
        let ty = self.typed(i, m, &[OpTy::F(32), OpTy::F(64)])?;
        let bits = ty.as_unsigned();
        let dst = self.dst(&i.operands[0], ty, false)?;
        let [a, b] = self.srcs(i, 1, [bits, bits])?;
        let mut e = Emit { l: self, span: i.span };
        let sign_bit = 1u64 << (ty.bits() - 1);
        let sign = e.and(bits, a, Value::Imm(sign_bit));
        let magnitude = e.and(bits, b, Value::Imm(sign_bit - 1));
        let r = e.or(bits, sign, magnitude);
        e.mov(bits, dst, r);
        Ok(())
    }

    /// `testp.op.{f32,f64} p, a` (§9.7.3.3), by the bits: `.finite`, `.infinite`,
    /// `.number`, `.notanumber`, `.normal` (zero counts as normal, per the ISA),
    /// `.subnormal`.
    fn testp(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let which = match m.details.as_slice() {
            [Spanned { value: Modifier::FloatClass(c), .. }] => *c,
            _ => return Err(Diagnostic::error(i.span, "`testp` needs one test such as `.finite`")),
        };
        let ty = self.typed(i, m, &[OpTy::F(32), OpTy::F(64)])?;
        let bits = ty.as_unsigned();
        let dst = self.dst(&i.operands[0], OpTy::Pred, false)?;
        let [a] = self.srcs(i, 1, [bits])?;
        let mut e = Emit { l: self, span: i.span };
        let (sign_bit, inf, min_normal) = if ty.bits() == 32 {
            (1 << 31, 0x7f80_0000, 1 << 23)
        } else {
            (1 << 63, 0x7ff0_0000_0000_0000, 1 << 52)
        };
        let magnitude = e.and(bits, a, Value::Imm(sign_bit - 1));
        let test = |e: &mut Emit<'_, '_>, cmp, lhs, rhs, dst| e.cmp_into(dst, cmp, bits, lhs, rhs);
        match which {
            FloatClass::Finite => test(&mut e, CmpOp::Lt, magnitude, Value::Imm(inf), dst),
            FloatClass::Infinite => test(&mut e, CmpOp::Eq, magnitude, Value::Imm(inf), dst),
            FloatClass::Number => test(&mut e, CmpOp::Le, magnitude, Value::Imm(inf), dst),
            FloatClass::NotANumber => test(&mut e, CmpOp::Gt, magnitude, Value::Imm(inf), dst),
            // 0 < |a| < smallest normal, i.e. |a| - 1 < smallest normal - 1 (unsigned).
            FloatClass::Subnormal => {
                let m1 = e.bin(BinaryOp::Sub, bits, magnitude, Value::Imm(1));
                test(&mut e, CmpOp::Lt, m1, Value::Imm(min_normal - 1), dst);
            }
            // Normal or zero: |a| < inf and not subnormal.
            FloatClass::Normal => {
                let finite = e.cmp(CmpOp::Lt, bits, magnitude, Value::Imm(inf));
                let m1 = e.bin(BinaryOp::Sub, bits, magnitude, Value::Imm(1));
                let not_subnormal = e.cmp(CmpOp::Ge, bits, m1, Value::Imm(min_normal - 1));
                e.push(InstKind::PredLogic {
                    op: BoolOp::And,
                    dst,
                    lhs: finite,
                    rhs: not_subnormal,
                });
            }
        }
        Ok(())
    }

    /// `set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, {!}c}` (§9.7.7.1, and §9.7.4.7
    /// for half types): `setp`, then all ones (`.u32`/`.s32`, `.u16`/`.s16`) or 1.0
    /// (`.f32`, `.f16`, `.bf16`) when true, else 0. Half sources compare as their exact
    /// f32 values.
    fn set(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        m.allow(&[])?;
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
        let (one, lane_bits) =
            match (dt.value, lanes) {
                (ScalarType::U32 | ScalarType::S32, 1) => (0xffff_ffff, 32),
                (ScalarType::F32, 1) if half.is_none() => (0x3f80_0000, 32),
                (ScalarType::U16 | ScalarType::S16, 1) if half.is_some() => (0xffff, 16),
                (ScalarType::U32 | ScalarType::S32, 2) => (0xffff, 16),
                (ScalarType::F16, 1) | (ScalarType::F16x2, 2) => (0x3c00, 16),
                (ScalarType::Bf16, 1) | (ScalarType::Bf16x2, 2) => (0x3f80, 16),
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
        let cmp = m
            .cmp
            .ok_or_else(|| Diagnostic::error(span, "`set` needs a comparison such as `.lt`"))?;
        super::check_comparison(span, cmp, sty, m.ftz)?;
        let n = if m.bool_op.is_some() { 4 } else { 3 };
        if i.operands.len() != n {
            return Err(Diagnostic::error(
                span,
                format!("`set` takes {n} operands here, found {}", i.operands.len()),
            ));
        }
        let dst = self.dst(&i.operands[0], dty, false)?;
        let combine = match m.bool_op {
            Some(op) => {
                let (r, negate) = self.pred(&i.operands[3])?;
                Some((op, r, negate))
            }
            None => None,
        };
        let src_ty = if half.is_some() { OpTy::U((16 * lanes) as u8) } else { sty };
        let [a, b] = self.srcs(i, 1, [src_ty, src_ty])?;
        let mut e = Emit { l: self, span };
        let preds: Vec<_> = (0..lanes).map(|_| e.temp(OpTy::Pred)).collect();
        match half {
            Some((fmt, _)) => {
                let dsts: Vec<_> = preds.iter().map(|&p| (Some(p), None)).collect();
                e.half_compare(fmt, lanes, cmp, m.ftz, a, b, combine, &dsts);
            }
            None => e.push(InstKind::Setp {
                cmp,
                ty: sty,
                ftz: m.ftz,
                dst: Some(preds[0]),
                dst_not: None,
                lhs: a,
                rhs: b,
                combine,
            }),
        }
        let lane_ty = OpTy::U(lane_bits as u8);
        let values: Vec<Value> =
            preds.iter().map(|&p| e.sel(lane_ty, p, Value::Imm(one), Value::Imm(0))).collect();
        let r = e.pack(16, values);
        e.mov(dty, dst, r);
        Ok(())
    }

    /// `slct.dtype.s32 d, a, b, c` and `slct{.ftz}.dtype.f32 d, a, b, c` (§9.7.7.3):
    /// `c >= 0 ? a : b`; a NaN `c` selects `b`, and `-0.0` selects `a`.
    fn slct(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        m.allow(&[])?;
        let span = i.span;
        let [dt, ct] = match m.types.as_slice() {
            [d, c] => [d, c],
            _ => {
                return Err(Diagnostic::error(
                    span,
                    "`slct` needs two types, such as `slct.u32.s32`",
                ))
            }
        };
        let dty = super::op_ty(dt)?;
        if dty == OpTy::Pred {
            return Err(Diagnostic::error(dt.span, "`slct` does not select predicates"));
        }
        let cty = match ct.value {
            ScalarType::S32 => OpTy::S(32),
            ScalarType::F32 => OpTy::F(32),
            _ => return Err(Diagnostic::error(ct.span, "`slct` compares an `.s32` or `.f32` `c`")),
        };
        if m.ftz && !cty.is_float() {
            return Err(Diagnostic::error(span, "`.ftz` takes `slct` with an `.f32` `c`"));
        }
        let dst = self.dst(&i.operands[0], dty, false)?;
        let [a, b, c] = self.srcs(i, 1, [dty, dty, cty])?;
        let mut e = Emit { l: self, span };
        let p = e.temp(OpTy::Pred);
        // `.ftz` only changes a subnormal `c`, whose comparison with 0 it cannot change
        // except for negative subnormals, which flush to -0.0 >= 0.
        e.push(InstKind::Setp {
            cmp: CmpOp::Ge,
            ty: cty,
            ftz: m.ftz,
            dst: Some(p),
            dst_not: None,
            lhs: c,
            rhs: Value::Imm(0),
            combine: None,
        });
        let r = e.sel(dty, p, a, b);
        e.mov(dty, dst, r);
        Ok(())
    }
}

fn ty_name(t: OpTy) -> String {
    match t {
        OpTy::Pred => ".pred".into(),
        OpTy::U(b) => format!(".u{b}"),
        OpTy::S(b) => format!(".s{b}"),
        OpTy::F(b) => format!(".f{b}"),
    }
}
