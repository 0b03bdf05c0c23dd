//! Emission of one-operand float operations (square roots, reciprocals), `fma` and
//! conversions (the exact ones are calls of the IR's routines, `pass::emulate`); and the
//! float operations every other emission is made of (`float_op`, `exact`, `unhidden`).

use super::*;

impl FnEmitter<'_> {
    /// One-operand float and integer operations, `fma`, conversions and the narrow float formats.
    pub(super) fn math_inst(&mut self, kind: &InstKind) -> R<()> {
        match kind {
            // `--float native`: Vulkan's square root and division (not exact); and the
            // device's reciprocal square root of the Newton routines.
            InstKind::Unary {
                op: op @ (UnaryOp::Sqrt | UnaryOp::Rcp | UnaryOp::Rsqrt),
                ty,
                mode,
                dst,
                src,
            } if mode.path == FloatPath::Native => {
                let v = self.read_op(*src, *ty)?;
                let s = Scalar::of_op(*ty);
                let t = self.ty(s);
                let r = if *op == UnaryOp::Sqrt {
                    self.glsl1(t, glsl::SQRT, v)?
                } else if *op == UnaryOp::Rsqrt {
                    self.glsl1(t, glsl::INVERSE_SQRT, v)?
                } else {
                    let one_bits =
                        if ty.bits() == 32 { 1f32.to_bits().into() } else { 1f64.to_bits() };
                    let one = self.konst(s, one_bits);
                    self.float_op(BinaryOp::Div, t, one, v)?
                };
                self.write_op(*dst, r, *ty)
            }
            // `pass::emulate` made the exact, fast and Newton paths calls of routines.
            InstKind::Unary { op: UnaryOp::Sqrt | UnaryOp::Rcp, .. } => {
                Err(Error::Internal("an exact square root or reciprocal left by emulate".into()))
            }
            InstKind::Unary { op, ty, dst, src, .. } => {
                let v = self.read_op(*src, *ty)?;
                let (r, rt) = self.unary(*op, *ty, v)?;
                self.write_op(*dst, r, rt)
            }
            // The device's `Fma`, which its probe found fused: exact (PTX ISA 9.2
            // §9.7.3.6, one rounding) in one instruction; or, with `--float native`,
            // whatever the device's `Fma` does.
            InstKind::Fma { ty, mode, dst, a, b, c }
                if matches!(mode.path, FloatPath::Fused { .. } | FloatPath::Native) =>
            {
                let x = [self.read_op(*a, *ty)?, self.read_op(*b, *ty)?, self.read_op(*c, *ty)?];
                let t = self.ty(Scalar::of_op(*ty));
                let ops = x.map(Operand::IdRef);
                let r = self.b.ext_inst(t, None, self.g.glsl, glsl::FMA, ops)?;
                self.write_op(*dst, r, *ty)
            }
            // `pass::emulate` made the exact and fast paths calls of routines.
            InstKind::Fma { .. } => Err(Error::Internal("an exact fma left by emulate".into())),
            InstKind::Convert { to, from, rounding, mode, dst, src } => {
                let v = self.read_op(*src, *from)?;
                let r = self.convert(*to, *from, *rounding, *mode, v)?;
                self.write_op(*dst, r, *to)
            }
            other => Err(Error::Internal(format!("`{other:?}` reached the math emitter"))),
        }
    }

    /// PTX float `min`/`max` (PTX ISA 9.2 §9.7.3.11–12): a NaN operand yields the other
    /// operand (GLSL.std.450 NMin/NMax), and `+0.0 > -0.0`, which NMin/NMax leave open:
    /// for equal operands the sign bits are combined (or for min, and for max).
    pub(super) fn float_min_max(&mut self, is_min: bool, ty: OpTy, a: Word, c: Word) -> R<Word> {
        let t = self.ty(Scalar::of_op(ty));
        let it = self.ty(Scalar::Int(ty.bits() as u8));
        let bt = self.ty(Scalar::Bool);
        let op = if is_min { glsl::NMIN } else { glsl::NMAX };
        let m =
            self.b.ext_inst(t, None, self.g.glsl, op, [Operand::IdRef(a), Operand::IdRef(c)])?;
        let ai = self.b.bitcast(it, None, a)?;
        let ci = self.b.bitcast(it, None, c)?;
        let zeros = if is_min {
            self.b.bitwise_or(it, None, ai, ci)?
        } else {
            self.b.bitwise_and(it, None, ai, ci)?
        };
        let zeros = self.b.bitcast(t, None, zeros)?;
        let eq = self.b.f_ord_equal(bt, None, a, c)?;
        Ok(self.b.select(t, None, eq, zeros, m)?)
    }

    /// A correctly rounded float add, sub or mul that the driver may not contract into
    /// an fma or otherwise fuse (`NoContraction`, SPIR-V §3.20).
    pub(super) fn exact(&mut self, op: BinaryOp, ty: Word, a: Word, b: Word) -> R<Word> {
        if !matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul) {
            return Err(Error::Internal(format!("{op:?} is not an exact float operation")));
        }
        let r = self.float_op(op, ty, a, b)?;
        self.b.decorate(r, Decoration::NoContraction, []);
        Ok(r)
    }

    /// A correctly rounded float add, sub or mul like [`Self::exact`], but with its
    /// operands never hidden from the driver ([`Self::float_op`]). Only for fast paths
    /// and `.visible` operations (`FloatMode::visible`) whose proof shows that the
    /// driver's folding of known operands cannot change what they compute
    /// (`lower/src/routines/fast_f32.rs`, *Driver folding*; `exact_f32.rs` there): every
    /// folding lavapipe does (gallivm's `lp_build_add`, `lp_build_sub`, `lp_build_mul`:
    /// `x + 0`, `0 + x`, `x - 0`, `0 - x`, `x - x`, `x * 0`, `0 * x`, `x * 1`, `1 * x`)
    /// gives the right value for finite operands, and can only change the sign of a
    /// zero result.
    pub(super) fn unhidden(&mut self, op: BinaryOp, ty: Word, a: Word, b: Word) -> R<Word> {
        let r = match op {
            BinaryOp::Add => self.b.f_add(ty, None, a, b)?,
            BinaryOp::Sub => self.b.f_sub(ty, None, a, b)?,
            BinaryOp::Mul => self.b.f_mul(ty, None, a, b)?,
            other => {
                return Err(Error::Internal(format!("{other:?} is not an exact float operation")))
            }
        };
        self.b.decorate(r, Decoration::NoContraction, []);
        Ok(r)
    }

    /// `a op b` of float type `ty`: `OpFAdd`, `OpFSub`, `OpFMul` or `OpFDiv`. Every one
    /// of them the backend emits is made here, so that on a driver that folds them
    /// wrongly when it knows an operand (`FloatConstants::Hidden`: lavapipe returns
    /// `x` for `x + 0.0` and `-x` for `0.0 - x`, and Mesa 22.3's also 0 for `x * 0.0`
    /// whatever `x` is) each operand is first ORed, as an integer, with a push-constant
    /// word that is always 0: the result is the same bits, which the driver can no
    /// longer see. The two operands take different words, so that the driver cannot
    /// make `x - x` of two equal expressions either.
    pub(super) fn float_op(&mut self, op: BinaryOp, ty: Word, a: Word, b: Word) -> R<Word> {
        let (a, b) = if self.g.float_constants.hides(op) {
            (self.hidden(ty, a, 0)?, self.hidden(ty, b, 1)?)
        } else {
            (a, b)
        };
        Ok(match op {
            BinaryOp::Add => self.b.f_add(ty, None, a, b)?,
            BinaryOp::Sub => self.b.f_sub(ty, None, a, b)?,
            BinaryOp::Mul => self.b.f_mul(ty, None, a, b)?,
            BinaryOp::Div => self.b.f_div(ty, None, a, b)?,
            other => return Err(Error::Internal(format!("{other:?} is not a float operation"))),
        })
    }

    /// `v` sign-extended to the integer type `ty` (`OpSConvert`). Every sign extension
    /// the backend emits is made here, so that on a driver that miscompiles what
    /// follows a 32- to 64-bit one (`Target::hide_sign_extensions`: Mesa 22.3 takes
    /// `cvt.s64.s32` of -5 for a large positive number when it compares it with a
    /// constant, or clamps it with `min`/`max`) the result is ORed with an always-zero
    /// push-constant word: the same bits, no longer known to be a sign extension.
    pub(super) fn sign_extend(&mut self, ty: Word, v: Word) -> R<Word> {
        let wide = self.b.s_convert(ty, None, v)?;
        if !self.g.hide_sign_extensions || ty != self.ty(Scalar::Int(64)) {
            return Ok(wide);
        }
        let zero = self.push_u32(ptxvk_abi::member::ZERO)?;
        let zero = self.b.u_convert(ty, None, zero)?;
        Ok(self.b.bitwise_or(ty, None, wide, zero)?)
    }

    /// `v` (a float of type `ty`) ORed with the always-zero push-constant word `which`
    /// (`ptxvk_abi::PushConstants::zero`), for [`Self::float_op`].
    pub(super) fn hidden(&mut self, ty: Word, v: Word, which: u32) -> R<Word> {
        // Asking for the f64 type would declare it (and need `shaderFloat64`), so the
        // width is told from f32's: float operations are f32 or f64.
        let bits = if ty == self.ty(Scalar::Float(32)) { 32 } else { 64 };
        let is = Scalar::Int(bits);
        let it = self.ty(is);
        let zero = self.push_u32(ptxvk_abi::member::ZERO + which)?;
        let zero = if bits == 64 { self.b.u_convert(it, None, zero)? } else { zero };
        let v = self.b.bitcast(it, None, v)?;
        let v = self.b.bitwise_or(it, None, v, zero)?;
        Ok(self.b.bitcast(ty, None, v)?)
    }

    /// The sum `r` of `a` and `c` (or their difference, `sub`) with the sign of a zero
    /// result set as IEEE 754 §6.3 says for round-to-nearest: -0 only when both addends
    /// are -0 (`a` and `-c` for a difference). Decided on the bit patterns: lavapipe
    /// 22.3 folds `x + 0.0` to `x` even under `SignedZeroInfNanPreserve`, which turns
    /// `-0 + 0` into -0; only sums with a constant zero operand can be folded that way,
    /// so only those get this repair, and only for a target whose driver was not probed
    /// (`FloatConstants::Repaired`; a probed one is exact, or has its operands hidden).
    pub(super) fn zero_sign_of_sum(
        &mut self,
        sub: bool,
        ty: OpTy,
        a: Word,
        c: Word,
        r: Word,
    ) -> R<Word> {
        let bits = ty.bits();
        let is = Scalar::Int(bits as u8);
        let it = self.ty(is);
        let ft = self.ty(Scalar::of_op(ty));
        let bt = self.ty(Scalar::Bool);
        let sign = 1u64 << (bits - 1);
        let (ab, cb, rb) = (
            self.b.bitcast(it, None, a)?,
            self.b.bitcast(it, None, c)?,
            self.b.bitcast(it, None, r)?,
        );
        let neg_zero = self.konst(is, sign);
        let zero = self.konst(is, 0);
        let magnitude = self.konst(is, sign - 1);
        let r_mag = self.b.bitwise_and(it, None, rb, magnitude)?;
        let r_zero = self.b.i_equal(bt, None, r_mag, zero)?;
        // The second addend of the sum: `c`, or `-c` for a difference.
        let cb = if sub { self.b.bitwise_xor(it, None, cb, neg_zero)? } else { cb };
        let a_neg_zero = self.b.i_equal(bt, None, ab, neg_zero)?;
        let c_neg_zero = self.b.i_equal(bt, None, cb, neg_zero)?;
        let both = self.b.logical_and(bt, None, a_neg_zero, c_neg_zero)?;
        let zero_bits = self.b.select(it, None, both, neg_zero, zero)?;
        let fixed = self.b.select(it, None, r_zero, zero_bits, rb)?;
        Ok(self.b.bitcast(ft, None, fixed)?)
    }

    /// Applies `.ftz` and `.sat` to a float result.
    pub(super) fn float_result(&mut self, r: Word, ty: OpTy, mode: FloatMode) -> R<Word> {
        let mut r = r;
        if mode.ftz {
            r = self.flush_f32(r)?;
        }
        if mode.sat {
            r = self.saturate(r, ty)?;
        }
        Ok(r)
    }

    /// `.sat`: clamp to [0, 1]; NaN becomes +0 (PTX ISA 9.2 §9.7.3).
    pub(super) fn saturate(&mut self, v: Word, ty: OpTy) -> R<Word> {
        let s = Scalar::of_op(ty);
        let t = self.ty(s);
        let bt = self.ty(Scalar::Bool);
        let (zero_bits, one_bits) =
            if ty.bits() == 32 { (0u64, 1f32.to_bits() as u64) } else { (0, 1f64.to_bits()) };
        let zero = self.konst(s, zero_bits);
        let one = self.konst(s, one_bits);
        let gt0 = self.b.f_ord_greater_than(bt, None, v, zero)?;
        let low = self.b.select(t, None, gt0, v, zero)?;
        let gt1 = self.b.f_ord_greater_than(bt, None, low, one)?;
        Ok(self.b.select(t, None, gt1, one, low)?)
    }

    /// Flushes an f32 subnormal to a zero of the same sign (`.ftz`), bit-exactly.
    pub(super) fn flush_f32(&mut self, v: Word) -> R<Word> {
        let i = Scalar::Int(32);
        let it = self.ty(i);
        let ft = self.ty(Scalar::Float(32));
        let bt = self.ty(Scalar::Bool);
        let x = self.b.bitcast(it, None, v)?;
        let abs_mask = self.konst(i, 0x7fff_ffff);
        let mag = self.b.bitwise_and(it, None, x, abs_mask)?;
        let min_normal = self.konst(i, 0x0080_0000);
        let sub = self.b.u_less_than(bt, None, mag, min_normal)?;
        let sign_mask = self.konst(i, 0x8000_0000);
        let sign = self.b.bitwise_and(it, None, x, sign_mask)?;
        let r = self.b.select(it, None, sub, sign, x)?;
        Ok(self.b.bitcast(ft, None, r)?)
    }
}
