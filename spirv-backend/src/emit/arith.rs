//! Emission of integer and float two-operand arithmetic, `mad`, bit fields, one-operand
//! integer operations and comparisons, each spelled out where SPIR-V leaves a case undefined
//! that PTX defines (shift amounts past the width, division by zero).

use super::*;

impl FnEmitter<'_> {
    /// Two-operand arithmetic, `mad`, bit fields and comparisons (`setp`).
    pub(super) fn arith_inst(&mut self, kind: &InstKind) -> R<()> {
        match kind {
            InstKind::Binary { op, ty, mode, dst, lhs, rhs } => {
                let rhs_ty =
                    if matches!(op, BinaryOp::Shl | BinaryOp::Shr) { OpTy::U(32) } else { *ty };
                let a = self.read_op(*lhs, *ty)?;
                let c = self.read_op(*rhs, rhs_ty)?;
                let (mut r, rt) = self.binary(*op, *ty, *mode, a, c)?;
                // Only a zero constant operand lets a fold change a zero sum's sign
                // (`x + 0.0` to `x` gives -0 for `x` = -0; `0.0 - x` to `-x` gives -0
                // for `x` = +0): with any other constant the sum is zero only when it is
                // exact, and then +0 however the driver computes it.
                let magnitude = (1u64 << (ty.bits().clamp(1, 64) - 1)) - 1;
                let zero = |v: &Value| matches!(v, Value::Imm(bits) if bits & magnitude == 0);
                let repair = self.g.float_constants == FloatConstants::Repaired;
                if repair
                    && ty.is_float()
                    && (zero(lhs) || zero(rhs))
                    && matches!(op, BinaryOp::Add | BinaryOp::Sub)
                {
                    r = self.zero_sign_of_sum(*op == BinaryOp::Sub, *ty, a, c, r)?;
                }
                self.write_op(*dst, r, rt)
            }
            InstKind::Mad { part, ty, dst, a, b, c } => {
                let av = self.read_op(*a, *ty)?;
                let bv = self.read_op(*b, *ty)?;
                let (p, pt) = self.binary(*part, *ty, FloatMode::default(), av, bv)?;
                let cv = self.read_op(*c, pt)?;
                let t = self.ty(Scalar::of_op(pt));
                let r = self.b.i_add(t, None, p, cv)?;
                self.write_op(*dst, r, pt)
            }
            InstKind::Bfe { ty, dst, a, pos, len } => {
                let av = self.read_op(*a, *ty)?;
                let p = self.read_op(*pos, OpTy::U(32))?;
                let l = self.read_op(*len, OpTy::U(32))?;
                let r = self.bit_field_extract(*ty, av, p, l)?;
                self.write_op(*dst, r, *ty)
            }
            InstKind::Bfi { ty, dst, a, b, pos, len } => {
                let av = self.read_op(*a, *ty)?;
                let bv = self.read_op(*b, *ty)?;
                let p = self.read_op(*pos, OpTy::U(32))?;
                let l = self.read_op(*len, OpTy::U(32))?;
                let r = self.bit_field_insert(*ty, av, bv, p, l)?;
                self.write_op(*dst, r, *ty)
            }
            InstKind::Setp { cmp, ty, ftz: _, dst, dst_not, lhs, rhs, combine } => {
                let a = self.read_op(*lhs, *ty)?;
                let c = self.read_op(*rhs, *ty)?;
                let r = self.compare(*cmp, *ty, a, c)?;
                let bool_ty = self.ty(Scalar::Bool);
                let comb = |s: &mut Self, v: Word| -> R<Word> {
                    match combine {
                        None => Ok(v),
                        Some((op, p, neg)) => {
                            let pv = s.pred(*p, *neg)?;
                            Ok(match op {
                                BoolOp::And => s.b.logical_and(bool_ty, None, v, pv)?,
                                BoolOp::Or => s.b.logical_or(bool_ty, None, v, pv)?,
                                BoolOp::Xor => s.b.logical_not_equal(bool_ty, None, v, pv)?,
                            })
                        }
                    }
                };
                if let Some(d) = dst {
                    let v = comb(self, r)?;
                    self.write(*d, v, Scalar::Bool, false)?;
                }
                if let Some(d) = dst_not {
                    let n = self.b.logical_not(bool_ty, None, r)?;
                    let v = comb(self, n)?;
                    self.write(*d, v, Scalar::Bool, false)?;
                }
                Ok(())
            }
            other => Err(Error::Internal(format!("`{other:?}` reached the arith emitter"))),
        }
    }

    pub(super) fn unary(&mut self, op: UnaryOp, ty: OpTy, v: Word) -> R<(Word, OpTy)> {
        let s = Scalar::of_op(ty);
        let t = self.ty(s);
        let bits = ty.bits();
        Ok(match op {
            // Emitted by `inst` with their `.ftz` handling.
            UnaryOp::Sqrt
            | UnaryOp::Rcp
            | UnaryOp::Ex2
            | UnaryOp::Lg2
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Rsqrt
            | UnaryOp::Tanh => {
                return Err(Error::Internal(format!("{op:?} reached the generic unary path")))
            }
            UnaryOp::Not => (self.b.not(t, None, v)?, ty),
            UnaryOp::Cnot => {
                let zero = self.konst(s, 0);
                let one = self.konst(s, 1);
                let bt = self.ty(Scalar::Bool);
                let is0 = self.b.i_equal(bt, None, v, zero)?;
                (self.b.select(t, None, is0, one, zero)?, ty)
            }
            UnaryOp::Neg | UnaryOp::Abs if ty.is_float() => {
                // Sign-bit operations, exact for every input including NaN (PTX `neg`/`abs`).
                let it = Scalar::Int(bits as u8);
                let ity = self.ty(it);
                let x = self.b.bitcast(ity, None, v)?;
                let sign = self.konst(it, 1u64 << (bits - 1));
                let r = if op == UnaryOp::Neg {
                    self.b.bitwise_xor(ity, None, x, sign)?
                } else {
                    let mask = self.konst(it, !(1u64 << (bits - 1)));
                    self.b.bitwise_and(ity, None, x, mask)?
                };
                (self.b.bitcast(t, None, r)?, ty)
            }
            UnaryOp::Neg => (self.b.s_negate(t, None, v)?, ty),
            UnaryOp::Abs => {
                let zero = self.konst(s, 0);
                let bt = self.ty(Scalar::Bool);
                let neg = self.b.s_less_than(bt, None, v, zero)?;
                let n = self.b.s_negate(t, None, v)?;
                (self.b.select(t, None, neg, n, v)?, ty)
            }
            UnaryOp::Popc => {
                let u32t = self.ty(Scalar::Int(32));
                let r = match bits {
                    64 => {
                        let (lo, hi) = self.split64(v)?;
                        let a = self.b.bit_count(u32t, None, lo)?;
                        let c = self.b.bit_count(u32t, None, hi)?;
                        self.b.i_add(u32t, None, a, c)?
                    }
                    32 => self.b.bit_count(u32t, None, v)?,
                    _ => {
                        let w = self.b.u_convert(u32t, None, v)?;
                        self.b.bit_count(u32t, None, w)?
                    }
                };
                (r, OpTy::U(32))
            }
            UnaryOp::Clz => {
                let r = match bits {
                    64 => {
                        let (lo, hi) = self.split64(v)?;
                        let zh = self.clz32(hi)?;
                        let zl = self.clz32(lo)?;
                        let u32t = self.ty(Scalar::Int(32));
                        let bt = self.ty(Scalar::Bool);
                        let k32 = self.konst(Scalar::Int(32), 32);
                        let hi_zero = self.b.i_equal(bt, None, zh, k32)?;
                        let both = self.b.i_add(u32t, None, zl, k32)?;
                        self.b.select(u32t, None, hi_zero, both, zh)?
                    }
                    32 => self.clz32(v)?,
                    _ => {
                        let u32t = self.ty(Scalar::Int(32));
                        let w = self.b.u_convert(u32t, None, v)?;
                        let z = self.clz32(w)?;
                        let adj = self.konst(Scalar::Int(32), 16);
                        self.b.i_sub(u32t, None, z, adj)?
                    }
                };
                (r, OpTy::U(32))
            }
            UnaryOp::Brev => {
                let u32t = self.ty(Scalar::Int(32));
                let r = match bits {
                    64 => {
                        let (lo, hi) = self.split64(v)?;
                        let rl = self.b.bit_reverse(u32t, None, lo)?;
                        let rh = self.b.bit_reverse(u32t, None, hi)?;
                        self.join64(rh, rl)?
                    }
                    32 => self.b.bit_reverse(u32t, None, v)?,
                    _ => {
                        let w = self.b.u_convert(u32t, None, v)?;
                        let r = self.b.bit_reverse(u32t, None, w)?;
                        let sh = self.konst(Scalar::Int(32), 16);
                        let r = self.b.shift_right_logical(u32t, None, r, sh)?;
                        self.b.u_convert(t, None, r)?
                    }
                };
                (r, ty)
            }
        })
    }

    /// Vulkan allows the bit instructions on 32-bit integers only
    /// (VUID-StandaloneSpirv-Base-04781), so 64-bit values are split.
    pub(super) fn split64(&mut self, v: Word) -> R<(Word, Word)> {
        let u32t = self.ty(Scalar::Int(32));
        let u64t = self.ty(Scalar::Int(64));
        let lo = self.b.u_convert(u32t, None, v)?;
        let k32 = self.konst(Scalar::Int(32), 32);
        let h = self.b.shift_right_logical(u64t, None, v, k32)?;
        let hi = self.b.u_convert(u32t, None, h)?;
        Ok((lo, hi))
    }

    pub(super) fn join64(&mut self, lo: Word, hi: Word) -> R<Word> {
        let u64t = self.ty(Scalar::Int(64));
        let l = self.b.u_convert(u64t, None, lo)?;
        let h = self.b.u_convert(u64t, None, hi)?;
        let k32 = self.konst(Scalar::Int(32), 32);
        let hs = self.b.shift_left_logical(u64t, None, h, k32)?;
        Ok(self.b.bitwise_or(u64t, None, hs, l)?)
    }

    /// `clz` of a u32: 31 - FindUMsb(x), which is 32 for x = 0 (FindUMsb(0) = -1).
    pub(super) fn clz32(&mut self, v: Word) -> R<Word> {
        let u32t = self.ty(Scalar::Int(32));
        let msb = self.b.ext_inst(u32t, None, self.g.glsl, glsl::FIND_UMSB, [Operand::IdRef(v)])?;
        let k31 = self.konst(Scalar::Int(32), 31);
        Ok(self.b.i_sub(u32t, None, k31, msb)?)
    }

    pub(super) fn binary(
        &mut self,
        op: BinaryOp,
        ty: OpTy,
        mode: FloatMode,
        a: Word,
        c: Word,
    ) -> R<(Word, OpTy)> {
        let s = Scalar::of_op(ty);
        let t = self.ty(s);
        let bt = self.ty(Scalar::Bool);
        if ty.is_float() {
            let r = match op {
                // PTX `add`/`sub`/`mul` with a rounding modifier must not be contracted
                // into an fma; without one ptxas may contract, but we keep results exact.
                // `.visible` ones show their operands to the driver (a routine's proof
                // allows it, `FloatMode::visible`).
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul if mode.visible => {
                    self.unhidden(op, t, a, c)?
                }
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul => self.exact(op, t, a, c)?,
                BinaryOp::Min | BinaryOp::Max => {
                    self.float_min_max(op == BinaryOp::Min, ty, a, c)?
                }
                // `--float native`: Vulkan's division (not exact).
                BinaryOp::Div if mode.path == FloatPath::Native && mode.visible => {
                    self.b.f_div(t, None, a, c)?
                }
                BinaryOp::Div if mode.path == FloatPath::Native => {
                    self.float_op(BinaryOp::Div, t, a, c)?
                }
                // Exact, fast and Newton paths: `pass::emulate` made them calls of
                // routines.
                BinaryOp::Div => {
                    return Err(Error::Internal("exact float division left by emulate".into()));
                }
                other => return Err(Error::Internal(format!("float {other:?}"))),
            };
            return Ok((r, ty));
        }
        let signed = ty.is_signed();
        let bits = ty.bits();
        Ok(match op {
            BinaryOp::Add => (self.b.i_add(t, None, a, c)?, ty),
            BinaryOp::Sub => (self.b.i_sub(t, None, a, c)?, ty),
            BinaryOp::Mul => (self.b.i_mul(t, None, a, c)?, ty),
            BinaryOp::MulHi => {
                let st = self.b.type_struct([t, t]);
                let m = if signed {
                    self.b.s_mul_extended(st, None, a, c)?
                } else {
                    self.b.u_mul_extended(st, None, a, c)?
                };
                (self.b.composite_extract(t, None, m, [1])?, ty)
            }
            BinaryOp::MulWide => {
                let wt_ty = if signed { OpTy::S(bits as u8 * 2) } else { OpTy::U(bits as u8 * 2) };
                let wt = self.ty(Scalar::of_op(wt_ty));
                let (x, y) = if signed {
                    (self.sign_extend(wt, a)?, self.sign_extend(wt, c)?)
                } else {
                    (self.b.u_convert(wt, None, a)?, self.b.u_convert(wt, None, c)?)
                };
                (self.b.i_mul(wt, None, x, y)?, wt_ty)
            }
            BinaryOp::Div | BinaryOp::Rem => {
                // SPIR-V leaves x/0 and INT_MIN/-1 undefined; PTX hardware gives
                // defined values (see `ir::BinaryOp::Div`). Divide by a safe divisor and
                // select the PTX result.
                let zero = self.konst(s, 0);
                let one = self.konst(s, 1);
                let all = self.konst(s, u64::MAX);
                let is0 = self.b.i_equal(bt, None, c, zero)?;
                let mut bad = is0;
                if signed {
                    let min = self.konst(s, 1u64 << (bits - 1));
                    let a_min = self.b.i_equal(bt, None, a, min)?;
                    let c_m1 = self.b.i_equal(bt, None, c, all)?;
                    let ovf = self.b.logical_and(bt, None, a_min, c_m1)?;
                    bad = self.b.logical_or(bt, None, is0, ovf)?;
                }
                let safe = self.b.select(t, None, bad, one, c)?;
                let q = match (op, signed) {
                    (BinaryOp::Div, true) => self.b.s_div(t, None, a, safe)?,
                    (BinaryOp::Div, false) => self.b.u_div(t, None, a, safe)?,
                    (_, true) => self.b.s_rem(t, None, a, safe)?,
                    (_, false) => self.b.u_mod(t, None, a, safe)?,
                };
                // With divisor 1: x/1 = x (so INT_MIN/-1 → INT_MIN), x%1 = 0.
                let r = if op == BinaryOp::Div {
                    // x/0: all ones (unsigned) or -1 (signed) — both the all-ones pattern.
                    self.b.select(t, None, is0, all, q)?
                } else {
                    // x%0 = x.
                    self.b.select(t, None, is0, a, q)?
                };
                (r, ty)
            }
            BinaryOp::Min | BinaryOp::Max => {
                let lt = if signed {
                    self.b.s_less_than(bt, None, a, c)?
                } else {
                    self.b.u_less_than(bt, None, a, c)?
                };
                let r = if op == BinaryOp::Min {
                    self.b.select(t, None, lt, a, c)?
                } else {
                    self.b.select(t, None, lt, c, a)?
                };
                (r, ty)
            }
            BinaryOp::And => (self.b.bitwise_and(t, None, a, c)?, ty),
            BinaryOp::Or => (self.b.bitwise_or(t, None, a, c)?, ty),
            BinaryOp::Xor => (self.b.bitwise_xor(t, None, a, c)?, ty),
            BinaryOp::Shl | BinaryOp::Shr => {
                // PTX clamps shift amounts above the width (PTX ISA 9.2 §9.7.8.7–8);
                // SPIR-V leaves them undefined. Shift by min(c, width-1), then fix up.
                let u32s = Scalar::Int(32);
                let wm1 = self.konst(u32s, (bits - 1) as u64);
                // A constant amount (most of the emulation routines' shifts): the clamp
                // is decided here, not by three instructions in the shader.
                if let Some(n) = self.t.constant_bits(c) {
                    let r = match (op, signed) {
                        (BinaryOp::Shl, _) if n < bits as u64 => {
                            self.b.shift_left_logical(t, None, a, c)?
                        }
                        (_, true) => {
                            let amt = if n < bits as u64 { c } else { wm1 };
                            self.b.shift_right_arithmetic(t, None, a, amt)?
                        }
                        (_, false) if n < bits as u64 => {
                            self.b.shift_right_logical(t, None, a, c)?
                        }
                        _ => self.konst(s, 0),
                    };
                    return Ok((r, ty));
                }
                let big = self.b.u_greater_than(bt, None, c, wm1)?;
                let u32t = self.ty(u32s);
                let amt = self.b.select(u32t, None, big, wm1, c)?;
                let r = match (op, signed) {
                    (BinaryOp::Shl, _) => {
                        let v = self.b.shift_left_logical(t, None, a, amt)?;
                        let zero = self.konst(s, 0);
                        self.b.select(t, None, big, zero, v)?
                    }
                    // Arithmetic: shifting by width-1 already gives the sign fill.
                    (_, true) => self.b.shift_right_arithmetic(t, None, a, amt)?,
                    (_, false) => {
                        let v = self.b.shift_right_logical(t, None, a, amt)?;
                        let zero = self.konst(s, 0);
                        self.b.select(t, None, big, zero, v)?
                    }
                };
                (r, ty)
            }
        })
    }

    /// The `bfe`/`bfi` operands: `pos` and `len` mod 256, and `n`, the number of field
    /// bits inside the value, `min(len, max(W - pos, 0))`, with a mask of `n` ones.
    pub(super) fn bit_field(
        &mut self,
        ty: OpTy,
        pos: Word,
        len: Word,
    ) -> R<(Word, Word, Word, Word)> {
        let w = ty.bits();
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let bt = self.ty(Scalar::Bool);
        let vs = Scalar::Int(w as u8);
        let vt = self.ty(vs);
        let ff = self.konst(s32, 0xff);
        let pos = self.b.bitwise_and(u32t, None, pos, ff)?;
        let len = self.b.bitwise_and(u32t, None, len, ff)?;
        let wk = self.konst(s32, w as u64);
        let pos_in = self.b.u_less_than(bt, None, pos, wk)?;
        let room = self.b.i_sub(u32t, None, wk, pos)?;
        let zero32 = self.konst(s32, 0);
        let room = self.b.select(u32t, None, pos_in, room, zero32)?;
        let short = self.b.u_less_than(bt, None, len, room)?;
        let n = self.b.select(u32t, None, short, len, room)?;
        // mask(n) = n == W ? ~0 : (1 << n) - 1, computed without shifting by W.
        let one = self.konst(vs, 1);
        let all = self.konst(vs, u64::MAX);
        let full = self.b.i_equal(bt, None, n, wk)?;
        let wm1 = self.konst(s32, (w - 1) as u64);
        let n_safe = self.b.select(u32t, None, full, wm1, n)?;
        let sh = self.b.shift_left_logical(vt, None, one, n_safe)?;
        let m = self.b.i_sub(vt, None, sh, one)?;
        let mask = self.b.select(vt, None, full, all, m)?;
        let pos_safe = self.b.select(u32t, None, pos_in, pos, zero32)?;
        Ok((pos_safe, len, n, mask))
    }

    pub(super) fn bit_field_extract(&mut self, ty: OpTy, a: Word, pos: Word, len: Word) -> R<Word> {
        let w = ty.bits();
        let vs = Scalar::Int(w as u8);
        let vt = self.ty(vs);
        let bt = self.ty(Scalar::Bool);
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let (pos_safe, len, _n, mask) = self.bit_field(ty, pos, len)?;
        let shifted = self.b.shift_right_logical(vt, None, a, pos_safe)?;
        let field = self.b.bitwise_and(vt, None, shifted, mask)?;
        if !ty.is_signed() {
            return Ok(field);
        }
        // sbit = len == 0 ? 0 : a[min(pos + len - 1, W - 1)].
        let ff = self.konst(s32, 0xff);
        let raw_pos = self.b.bitwise_and(u32t, None, pos, ff)?;
        let one32 = self.konst(s32, 1);
        let top = self.b.i_add(u32t, None, raw_pos, len)?;
        let top = self.b.i_sub(u32t, None, top, one32)?;
        let wm1 = self.konst(s32, (w - 1) as u64);
        let over = self.b.u_greater_than(bt, None, top, wm1)?;
        let top = self.b.select(u32t, None, over, wm1, top)?;
        let bit = self.b.shift_right_logical(vt, None, a, top)?;
        let one = self.konst(vs, 1);
        let bit = self.b.bitwise_and(vt, None, bit, one)?;
        let zero32 = self.konst(s32, 0);
        let len0 = self.b.i_equal(bt, None, len, zero32)?;
        let zero = self.konst(vs, 0);
        let set = self.b.i_not_equal(bt, None, bit, zero)?;
        let not_len0 = self.b.logical_not(bt, None, len0)?;
        let neg = self.b.logical_and(bt, None, set, not_len0)?;
        let high = self.b.not(vt, None, mask)?;
        let ext = self.b.bitwise_or(vt, None, field, high)?;
        Ok(self.b.select(vt, None, neg, ext, field)?)
    }

    pub(super) fn bit_field_insert(
        &mut self,
        ty: OpTy,
        a: Word,
        b: Word,
        pos: Word,
        len: Word,
    ) -> R<Word> {
        let vt = self.ty(Scalar::Int(ty.bits() as u8));
        let (pos_safe, _len, _n, mask) = self.bit_field(ty, pos, len)?;
        let m = self.b.shift_left_logical(vt, None, mask, pos_safe)?;
        let not_m = self.b.not(vt, None, m)?;
        let kept = self.b.bitwise_and(vt, None, b, not_m)?;
        let ins = self.b.shift_left_logical(vt, None, a, pos_safe)?;
        let ins = self.b.bitwise_and(vt, None, ins, m)?;
        Ok(self.b.bitwise_or(vt, None, kept, ins)?)
    }

    pub(super) fn compare(&mut self, cmp: CmpOp, ty: OpTy, a: Word, c: Word) -> R<Word> {
        let bt = self.ty(Scalar::Bool);
        let b = &mut *self.b;
        if ty.is_float() {
            return Ok(match cmp {
                CmpOp::Eq => b.f_ord_equal(bt, None, a, c)?,
                CmpOp::Ne => b.f_ord_not_equal(bt, None, a, c)?,
                CmpOp::Lt => b.f_ord_less_than(bt, None, a, c)?,
                CmpOp::Le => b.f_ord_less_than_equal(bt, None, a, c)?,
                CmpOp::Gt => b.f_ord_greater_than(bt, None, a, c)?,
                CmpOp::Ge => b.f_ord_greater_than_equal(bt, None, a, c)?,
                CmpOp::Equ => b.f_unord_equal(bt, None, a, c)?,
                CmpOp::Neu => b.f_unord_not_equal(bt, None, a, c)?,
                CmpOp::Ltu => b.f_unord_less_than(bt, None, a, c)?,
                CmpOp::Leu => b.f_unord_less_than_equal(bt, None, a, c)?,
                CmpOp::Gtu => b.f_unord_greater_than(bt, None, a, c)?,
                CmpOp::Geu => b.f_unord_greater_than_equal(bt, None, a, c)?,
                CmpOp::Num | CmpOp::Nan => {
                    let na = b.is_nan(bt, None, a)?;
                    let nc = b.is_nan(bt, None, c)?;
                    let any = b.logical_or(bt, None, na, nc)?;
                    if cmp == CmpOp::Nan {
                        any
                    } else {
                        b.logical_not(bt, None, any)?
                    }
                }
            });
        }
        let s = ty.is_signed();
        Ok(match cmp {
            CmpOp::Eq => b.i_equal(bt, None, a, c)?,
            CmpOp::Ne => b.i_not_equal(bt, None, a, c)?,
            CmpOp::Lt if s => b.s_less_than(bt, None, a, c)?,
            CmpOp::Lt => b.u_less_than(bt, None, a, c)?,
            CmpOp::Le if s => b.s_less_than_equal(bt, None, a, c)?,
            CmpOp::Le => b.u_less_than_equal(bt, None, a, c)?,
            CmpOp::Gt if s => b.s_greater_than(bt, None, a, c)?,
            CmpOp::Gt => b.u_greater_than(bt, None, a, c)?,
            CmpOp::Ge if s => b.s_greater_than_equal(bt, None, a, c)?,
            CmpOp::Ge => b.u_greater_than_equal(bt, None, a, c)?,
            other => return Err(Error::Internal(format!("integer comparison {other:?}"))),
        })
    }
}
