//! Emission of float routines: square roots, reciprocals and `.approx` functions, `fma`, the
//! narrow formats and round-to-odd, and the exact float arithmetic they are made of.

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
            InstKind::Unary { op: op @ (UnaryOp::Sqrt | UnaryOp::Rcp), ty, mode, dst, src } => {
                // `pass::emulate` made the exact and Newton paths calls of routines.
                if *ty == OpTy::F(64) {
                    return Err(Error::Internal("f64 arithmetic left by emulate".into()));
                }
                let v = self.read_op(*src, *ty)?;
                // The `.soft` and `.fused` ones `pass::emulate` made calls of routines.
                let r = if *op == UnaryOp::Sqrt {
                    self.exact_f32(SoftOp::Sqrt, mode.rounding, &[v])?
                } else {
                    let one = self.konst(Scalar::Float(32), 1f32.to_bits() as u64);
                    self.exact_f32(SoftOp::Div, mode.rounding, &[one, v])?
                };
                self.write_op(*dst, r, *ty)
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
            // `pass::emulate` made it a call of a routine.
            InstKind::Fma { ty: OpTy::F(64), .. } => {
                Err(Error::Internal("f64 arithmetic left by emulate".into()))
            }
            InstKind::Fma { ty, dst, a, b, c, .. } => {
                let av = self.read_op(*a, *ty)?;
                let bv = self.read_op(*b, *ty)?;
                let cv = self.read_op(*c, *ty)?;
                // `.soft` ones: `pass::emulate` made them calls of routines.
                let r = self.exact_f32(SoftOp::Fma, Rounding::Nearest, &[av, bv, cv])?;
                self.write_op(*dst, r, *ty)
            }
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
    /// whose proof shows that the driver's folding of known operands cannot change
    /// what they compute (`f32fast.rs`, *Driver folding*): every folding lavapipe does
    /// (gallivm's `lp_build_add`, `lp_build_sub`, `lp_build_mul`: `x + 0`, `0 + x`,
    /// `x - 0`, `0 - x`, `x - x`, `x * 0`, `0 * x`, `x * 1`, `1 * x`) gives the right
    /// value for finite operands, and can only change the sign of a zero result.
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

    /// Rounds to nearest even, exactly, given `q0`: the bits of a non-negative f32
    /// candidate within one ulp of the result (`+inf` standing for values past
    /// `f32::MAX`). `residual(m)` is an exact f64 whose sign tells whether the true value
    /// lies above (> 0), on (= 0) or below (< 0) the f64 midpoint `m` between two f32
    /// neighbours; past `f32::MAX` the next neighbour is 2^128. Ties go to the even one.
    ///
    /// This and the exact `div.f32`/`sqrt.f32` below show their operands to the driver
    /// ([`Self::unhidden`]): a driver's folding (`f32fast.rs`, *Driver folding*) changes
    /// a value only for an infinite or NaN operand of a product with a known zero or
    /// of a difference with itself, or the sign of a zero. Their special operands
    /// (zeros, infinities, NaN) take results selected from the operands' bits, so the
    /// arithmetic counts only for finite non-zero operands, where no known zero meets
    /// an infinity (a known zero divisor or radicand is a special operand; a midpoint
    /// past `f32::MAX` is 2^128, and one next to an infinite candidate is masked by
    /// `allowed`), and every residual is only compared with zero.
    pub(super) fn round_by_midpoints(
        &mut self,
        q0: Word,
        residual: impl Fn(&mut Self, Word) -> R<Word>,
    ) -> R<Word> {
        let (s32, s64) = (Scalar::Int(32), Scalar::Float(64));
        let (it, ft, dt) = (self.ty(s32), self.ty(Scalar::Float(32)), self.ty(s64));
        let bt = self.ty(Scalar::Bool);
        let inf_bits = self.konst(s32, f32::INFINITY.to_bits() as u64);
        let (one, zero) = (self.konst(s32, 1), self.konst(s32, 0));
        let as_f64 = |e: &mut Self, bits: Word| -> R<Word> {
            let is_inf = e.b.i_equal(bt, None, bits, inf_bits)?;
            let f = e.b.bitcast(ft, None, bits)?;
            let d = e.b.f_convert(dt, None, f)?;
            let two128 = e.konst(s64, 2f64.powi(128).to_bits());
            Ok(e.b.select(dt, None, is_inf, two128, d)?)
        };
        let up_bits = self.b.i_add(it, None, q0, one)?;
        let down_bits = self.b.i_sub(it, None, q0, one)?;
        let (q0d, upd, downd) =
            (as_f64(self, q0)?, as_f64(self, up_bits)?, as_f64(self, down_bits)?);
        let half = self.konst(s64, 0.5f64.to_bits());
        let zero_d = self.konst(s64, 0);
        let low = self.b.bitwise_and(it, None, q0, one)?;
        let odd_q0 = self.b.i_not_equal(bt, None, low, zero)?;
        // Whether the value lies past the midpoint of `lo` and `hi` (above it for `up`,
        // below it otherwise), a tie counting when q0 is odd; only where `allowed`.
        let step = |e: &mut Self, lo: Word, hi: Word, up: bool, allowed: Word| -> R<Word> {
            let sum = e.unhidden(BinaryOp::Add, dt, lo, hi)?;
            let m = e.unhidden(BinaryOp::Mul, dt, sum, half)?;
            let r = residual(e, m)?;
            let past = if up {
                e.b.f_ord_greater_than(bt, None, r, zero_d)?
            } else {
                e.b.f_ord_less_than(bt, None, r, zero_d)?
            };
            let tie = e.b.f_ord_equal(bt, None, r, zero_d)?;
            let tie_moves = e.b.logical_and(bt, None, tie, odd_q0)?;
            let go = e.b.logical_or(bt, None, past, tie_moves)?;
            Ok(e.b.logical_and(bt, None, go, allowed)?)
        };
        let below_inf = self.b.u_less_than(bt, None, q0, inf_bits)?;
        let above_zero = self.b.i_not_equal(bt, None, q0, zero)?;
        let go_up = step(self, q0d, upd, true, below_inf)?;
        let go_down = step(self, downd, q0d, false, above_zero)?;
        let r = self.b.select(it, None, go_up, up_bits, q0)?;
        Ok(self.b.select(it, None, go_down, down_bits, r)?)
    }

    /// `div.rn.f32` exactly: Vulkan's f32 and f64 `OpFDiv` are only 2.5 ulp accurate, so
    /// the f64 quotient rounded to f32 (`q0`) is only a candidate within one ulp of the
    /// result. It is corrected with exact residuals: for a midpoint `m` between two f32
    /// neighbours (exact in f64), `m * |b|` is exact (25 + 24 bits) and the sign of
    /// `|a| - m * |b|` says on which side of `m` the true quotient lies; ties go to the
    /// even neighbour. IEEE special cases (NaN, infinities, zeros) are selected first.
    ///
    /// `div.{rz,rm,rp}.f32`: the round-to-nearest magnitude, then, for a directed
    /// rounding, one ulp down when the exact magnitude lies below it (truncation) or up
    /// when it lies above and the rounding goes away from zero for the result's sign.
    /// The side is the sign of the exact residual `|a| - q|b|` (q·|b| is exact in f64).
    /// An overflow to infinity truncates to the largest finite value the same way.
    ///
    /// To nearest, the device's f32 quotient is taken where one exact residual proves it
    /// correctly rounded (the fast path of `f32fast.rs`).
    pub(super) fn div_f32(&mut self, a: Word, b: Word, rounding: Rounding) -> R<Word> {
        if rounding != Rounding::Nearest {
            return self.div_f32_exact(a, b, rounding);
        }
        let ft = self.ty(Scalar::Float(32));
        let (slow, q) = self.div_f32_fast(a, b)?;
        self.fast_unless(slow, ft, |_| Ok(q), |e| e.div_f32_exact(a, b, rounding))
    }

    /// The fast path of `div.rn.f32` (`f32fast.rs`): whether it fails, and its result
    /// where it does not.
    pub(super) fn div_f32_fast(&mut self, a: Word, b: Word) -> R<(Word, Word)> {
        let (ft, bt) = (self.ty(Scalar::Float(32)), self.ty(Scalar::Bool));
        // Only a candidate, which the test proves or rejects: no need to hide its
        // operands from the driver.
        let q0 = self.b.f_div(ft, None, a, b)?;
        let (good, q) = self.rounded_quotient(a, b, q0)?;
        Ok((self.b.logical_not(bt, None, good)?, q))
    }

    /// [`Self::div_f32`] for every operand, by exact residuals.
    pub(super) fn div_f32_exact(&mut self, a: Word, b: Word, rounding: Rounding) -> R<Word> {
        let (s32, s64) = (Scalar::Int(32), Scalar::Float(64));
        let (it, ft, dt) = (self.ty(s32), self.ty(Scalar::Float(32)), self.ty(s64));
        let bt = self.ty(Scalar::Bool);
        let k = |e: &mut Self, v: u32| e.konst(s32, v as u64);
        let (abs_mask, sign_mask, inf_bits) =
            (k(self, 0x7fff_ffff), k(self, 0x8000_0000), k(self, 0x7f80_0000));
        let ai = self.b.bitcast(it, None, a)?;
        let bi = self.b.bitcast(it, None, b)?;
        let xa = self.b.bitwise_and(it, None, ai, abs_mask)?;
        let xb = self.b.bitwise_and(it, None, bi, abs_mask)?;
        let sx = self.b.bitwise_xor(it, None, ai, bi)?;
        let sign = self.b.bitwise_and(it, None, sx, sign_mask)?;
        // The magnitude of the quotient of the magnitudes, as bits.
        let x = self.b.bitcast(ft, None, xa)?;
        let y = self.b.bitcast(ft, None, xb)?;
        let xd = self.b.f_convert(dt, None, x)?;
        let yd = self.b.f_convert(dt, None, y)?;
        let qd = self.b.f_div(dt, None, xd, yd)?;
        let q0f = self.b.f_convert(ft, None, qd)?;
        let q0 = self.b.bitcast(it, None, q0f)?;
        // sign(|a| - m*|b|), exactly: m*|b| has at most 25 + 24 significant bits.
        let mag = self.round_by_midpoints(q0, |e, m| {
            let p = e.unhidden(BinaryOp::Mul, dt, m, yd)?;
            e.unhidden(BinaryOp::Sub, dt, xd, p)
        })?;
        let mag = self.direct_magnitude(mag, sign, rounding, |e, q| {
            let p = e.unhidden(BinaryOp::Mul, dt, q, yd)?;
            e.unhidden(BinaryOp::Sub, dt, xd, p)
        })?;
        let z = k(self, 0);
        // Special cases: NaN operands, 0/0 and inf/inf give NaN; x/0 and inf/y give inf;
        // 0/y and x/inf give 0.
        let a_nan = self.b.u_greater_than(bt, None, xa, inf_bits)?;
        let b_nan = self.b.u_greater_than(bt, None, xb, inf_bits)?;
        let a_inf = self.b.i_equal(bt, None, xa, inf_bits)?;
        let b_inf = self.b.i_equal(bt, None, xb, inf_bits)?;
        let a_zero = self.b.i_equal(bt, None, xa, z)?;
        let b_zero = self.b.i_equal(bt, None, xb, z)?;
        let both_zero = self.b.logical_and(bt, None, a_zero, b_zero)?;
        let both_inf = self.b.logical_and(bt, None, a_inf, b_inf)?;
        let nan = self.b.logical_or(bt, None, a_nan, b_nan)?;
        let nan = self.b.logical_or(bt, None, nan, both_zero)?;
        let nan = self.b.logical_or(bt, None, nan, both_inf)?;
        let to_inf = self.b.logical_or(bt, None, a_inf, b_zero)?;
        let to_zero = self.b.logical_or(bt, None, a_zero, b_inf)?;
        let r1 = self.b.select(it, None, to_zero, z, mag)?;
        let r2 = self.b.select(it, None, to_inf, inf_bits, r1)?;
        let signed = self.b.bitwise_or(it, None, r2, sign)?;
        let canonical_nan = k(self, 0x7fff_ffff);
        let bits = self.b.select(it, None, nan, canonical_nan, signed)?;
        Ok(self.b.bitcast(ft, None, bits)?)
    }

    /// `sqrt.rn.f32` exactly: Vulkan's `Sqrt` is not correctly rounded (its precision is
    /// inherited from `InverseSqrt`), so the f64 square root rounded to f32 is a
    /// candidate within one ulp. For the midpoint `m` above or below it (25 significant
    /// bits), `m * m` is exact in f64 and its comparison with `x` says on which side the
    /// true root lies; a midpoint is never exactly a root of an f32, so there are no ties.
    ///
    /// `sqrt.{rz,rm,rp}.f32`: as [`Self::div_f32`], with the residual `x - q·q`.
    ///
    /// To nearest, the device's f32 root is taken where one exact residual proves it
    /// correctly rounded (the fast path of `f32fast.rs`).
    pub(super) fn sqrt_f32(&mut self, x: Word, rounding: Rounding) -> R<Word> {
        if rounding != Rounding::Nearest {
            return self.sqrt_f32_exact(x, rounding);
        }
        let ft = self.ty(Scalar::Float(32));
        let (slow, q) = self.sqrt_f32_fast(x)?;
        self.fast_unless(slow, ft, |_| Ok(q), |e| e.sqrt_f32_exact(x, rounding))
    }

    /// The fast path of `sqrt.rn.f32` (`f32fast.rs`): whether it fails, and its result
    /// where it does not.
    pub(super) fn sqrt_f32_fast(&mut self, x: Word) -> R<(Word, Word)> {
        let (ft, bt) = (self.ty(Scalar::Float(32)), self.ty(Scalar::Bool));
        let q0 = self.glsl1(ft, glsl::SQRT, x)?;
        let (good, q) = self.rounded_root(x, q0)?;
        Ok((self.b.logical_not(bt, None, good)?, q))
    }

    /// [`Self::sqrt_f32`] for every operand, by exact residuals.
    pub(super) fn sqrt_f32_exact(&mut self, x: Word, rounding: Rounding) -> R<Word> {
        let (s32, s64) = (Scalar::Int(32), Scalar::Float(64));
        let (it, ft, dt) = (self.ty(s32), self.ty(Scalar::Float(32)), self.ty(s64));
        let bt = self.ty(Scalar::Bool);
        let xd = self.b.f_convert(dt, None, x)?;
        let rd = self.glsl1(dt, glsl::SQRT, xd)?;
        let q0f = self.b.f_convert(ft, None, rd)?;
        let q0 = self.b.bitcast(it, None, q0f)?;
        // sign(x - m*m), exactly: m*m has at most 50 significant bits. A midpoint is
        // never exactly the root of an f32, so there are no ties.
        let corrected = self.round_by_midpoints(q0, |e, m| {
            let sq = e.unhidden(BinaryOp::Mul, dt, m, m)?;
            e.unhidden(BinaryOp::Sub, dt, xd, sq)
        })?;
        let positive = self.konst(s32, 0);
        let corrected = self.direct_magnitude(corrected, positive, rounding, |e, q| {
            let sq = e.unhidden(BinaryOp::Mul, dt, q, q)?;
            e.unhidden(BinaryOp::Sub, dt, xd, sq)
        })?;
        // Only positive, finite, non-zero inputs are corrected; the rest (±0, +inf,
        // NaN, negatives → NaN) are selected below.
        let zero = self.konst(Scalar::Float(32), 0);
        let inf = self.konst(Scalar::Float(32), f32::INFINITY.to_bits() as u64);
        let pos = self.b.f_ord_greater_than(bt, None, x, zero)?;
        let fin = self.b.f_ord_less_than(bt, None, x, inf)?;
        let regular = self.b.logical_and(bt, None, pos, fin)?;
        let r = self.b.select(it, None, regular, corrected, q0)?;
        // sqrt(-x) for x > 0 is NaN; sqrt(-0) = -0 (the candidate handles both when the
        // device's f64 sqrt does; make them explicit rather than trust it).
        let neg = self.b.f_ord_less_than(bt, None, x, zero)?;
        let nan = self.konst(s32, 0x7fff_ffff);
        let is_zero = self.b.f_ord_equal(bt, None, x, zero)?;
        let xi = self.b.bitcast(it, None, x)?;
        let r = self.b.select(it, None, neg, nan, r)?;
        let r = self.b.select(it, None, is_zero, xi, r)?;
        Ok(self.b.bitcast(ft, None, r)?)
    }

    /// Applies a directed rounding to `mag`, the bits of a non-negative f32 rounded to
    /// nearest (+inf for overflow) of an exact magnitude `v`; `sign` is the result's
    /// sign bit (0 or 0x8000_0000) and `residual(q)` an exact f64 whose sign is that of
    /// `v - q` for the f64 value `q` of `mag`.
    pub(super) fn direct_magnitude(
        &mut self,
        mag: Word,
        sign: Word,
        rounding: Rounding,
        residual: impl Fn(&mut Self, Word) -> R<Word>,
    ) -> R<Word> {
        if matches!(rounding, Rounding::Nearest | Rounding::NearestAway) {
            return Ok(mag);
        }
        let s32 = Scalar::Int(32);
        let (it, ft, dt) = (self.ty(s32), self.ty(Scalar::Float(32)), self.ty(Scalar::Float(64)));
        let bt = self.ty(Scalar::Bool);
        let qf = self.b.bitcast(ft, None, mag)?;
        let qd = self.b.f_convert(dt, None, qf)?;
        let res = residual(self, qd)?;
        let zero = self.konst(Scalar::Float(64), 0);
        let below = self.b.f_ord_less_than(bt, None, res, zero)?;
        let above = self.b.f_ord_greater_than(bt, None, res, zero)?;
        let izero = self.konst(s32, 0);
        let negative = self.b.i_not_equal(bt, None, sign, izero)?;
        let away = match rounding {
            Rounding::Up => self.b.logical_not(bt, None, negative)?,
            Rounding::Down => negative,
            _ => self.b.constant_false(bt),
        };
        let one = self.konst(s32, 1);
        let down = self.b.i_sub(it, None, mag, one)?;
        let up = self.b.i_add(it, None, mag, one)?;
        // Toward zero when the exact value is below (whatever the direction, the
        // magnitude never rounds past it); away from zero only when asked and above.
        let toward = self.b.logical_not(bt, None, away)?;
        let trunc = self.b.logical_and(bt, None, toward, below)?;
        let grow = self.b.logical_and(bt, None, away, above)?;
        let r = self.b.select(it, None, trunc, down, mag)?;
        Ok(self.b.select(it, None, grow, up, r)?)
    }

    /// `fma.rn.f32` exactly, without trusting the device's fma (Vulkan allows an unfused
    /// `Fma`): the product of two f32 is exact in f64, and the f64 sum rounded to f32 is
    /// correctly rounded unless the sum is an f32 breakpoint or f32-subnormal (the fast
    /// path, `f32fast.rs`); then the sum is rounded to odd using its exact error
    /// (TwoSum), and rounding that to f32 is correctly rounded (round-to-odd with
    /// 53 ≥ 2·24 + 2 bits; Boldo & Melquiond 2008).
    ///
    /// Hiding (`FloatConstants::Hidden`): where the driver folds sums with a known
    /// operand, `a` and `c` are hidden as f32 (one 32-bit OR each, where hiding the
    /// f64 sum's operands took two 64-bit ones): `cd` is then unknown to the driver,
    /// and so is `p = ad·bd` (a product with an unknown factor, whose operands are
    /// hidden as well where the driver folds products). No operand of the sum or of
    /// the TwoSum behind it is known, so no folding can apply, and they are emitted
    /// visible ([`Self::unhidden`]).
    pub(super) fn fma_f32(&mut self, a: Word, b: Word, c: Word) -> R<Word> {
        let ft = self.ty(Scalar::Float(32));
        let sum = self.fma_f32_sum(a, b, c)?;
        let slow = self.f32_breakpoint_or_tiny(sum.s)?;
        self.fast_unless(slow, ft, |e| Ok(e.b.f_convert(ft, None, sum.s)?), |e| e.fma_f32_odd(sum))
    }

    /// The fast path of `fma.rn.f32` ([`Self::fma_f32`]): whether it fails, and its
    /// result where it does not.
    pub(super) fn fma_f32_fast(&mut self, a: Word, b: Word, c: Word) -> R<(Word, Word)> {
        let ft = self.ty(Scalar::Float(32));
        let sum = self.fma_f32_sum(a, b, c)?;
        let slow = self.f32_breakpoint_or_tiny(sum.s)?;
        Ok((slow, self.b.f_convert(ft, None, sum.s)?))
    }

    /// [`Self::fma_f32`] for every operand, by round-to-odd.
    pub(super) fn fma_f32_exact(&mut self, a: Word, b: Word, c: Word) -> R<Word> {
        let sum = self.fma_f32_sum(a, b, c)?;
        self.fma_f32_odd(sum)
    }

    /// The exact f64 product `a·b` of `fma.rn.f32`, its f64 addend and their sum rounded
    /// to nearest (the operands hidden as [`Self::fma_f32`] says).
    fn fma_f32_sum(&mut self, a: Word, b: Word, c: Word) -> R<FmaSum> {
        let dt = self.ty(Scalar::Float(64));
        let ft = self.ty(Scalar::Float(32));
        let hide = self.g.float_constants.hides(BinaryOp::Add);
        let (a, c) = if hide { (self.hidden(ft, a, 0)?, self.hidden(ft, c, 1)?) } else { (a, c) };
        let ad = self.b.f_convert(dt, None, a)?;
        let bd = self.b.f_convert(dt, None, b)?;
        let cd = self.b.f_convert(dt, None, c)?;
        let p = self.exact(BinaryOp::Mul, dt, ad, bd)?;
        let s =
            if hide { self.unhidden(BinaryOp::Add, dt, p, cd)? } else { self.nearest_sum(p, cd)? };
        Ok(FmaSum { p, cd, s, hide })
    }

    /// The exact path of `fma.rn.f32`: the sum rounded to odd, then to f32.
    fn fma_f32_odd(&mut self, sum: FmaSum) -> R<Word> {
        let ft = self.ty(Scalar::Float(32));
        let odd = self.odd_of_sum(sum.p, sum.cd, sum.s, sum.hide)?;
        Ok(self.b.f_convert(ft, None, odd)?)
    }

    /// `p + c` for f64 `p` and `c`, rounded to odd ([`Self::odd_of_sum`]), with every
    /// operation's operands visible to the driver ([`Self::unhidden`]), for a fast path
    /// whose proof allows it: finite `p` and `c`, and a caller to whom the sign of a
    /// zero result does not matter. (`RoundToOdd` is a routine, `pass::emulate`.)
    pub(super) fn odd_sum_unhidden(&mut self, p: Word, c: Word) -> R<Word> {
        let dt = self.ty(Scalar::Float(64));
        let s = self.unhidden(BinaryOp::Add, dt, p, c)?;
        self.odd_of_sum(p, c, s, true)
    }

    /// An exact float add, sub or mul, with its operands hidden from the driver as
    /// [`Self::float_op`] decides, or `visible` ([`Self::unhidden`]).
    fn exact_or_unhidden(
        &mut self,
        visible: bool,
        op: BinaryOp,
        ty: Word,
        a: Word,
        b: Word,
    ) -> R<Word> {
        if visible {
            self.unhidden(op, ty, a, b)
        } else {
            self.exact(op, ty, a, b)
        }
    }

    /// `p + c` for f64 `p` and `c`, rounded to nearest (Vulkan's `OpFAdd`).
    fn nearest_sum(&mut self, p: Word, c: Word) -> R<Word> {
        let dt = self.ty(Scalar::Float(64));
        let s = self.exact(BinaryOp::Add, dt, p, c)?;
        // A constant addend (an fma's `+ 0.0`) may be folded away by a driver that was
        // not probed.
        if self.g.float_constants == FloatConstants::Repaired {
            self.zero_sign_of_sum(false, OpTy::F(64), p, c, s)
        } else {
            Ok(s)
        }
    }

    /// `p + c` rounded to odd, from `s`, the sum rounded to nearest: `s` stepped one ulp
    /// toward the exact value when it is inexact and its last mantissa bit is even. The
    /// error is exact (TwoSum, which needs round-to-nearest f64 addition, as Vulkan
    /// guarantees for `OpFAdd`). `visible`: as [`Self::exact_or_unhidden`].
    fn odd_of_sum(&mut self, p: Word, c: Word, s: Word, visible: bool) -> R<Word> {
        let f64s = Scalar::Float(64);
        let dt = self.ty(f64s);
        let bt = self.ty(Scalar::Bool);
        let i64s = Scalar::Int(64);
        let it = self.ty(i64s);
        // TwoSum(p, c): err = (p - (s - bb)) + (c - bb), bb = s - p.
        let bb = self.exact_or_unhidden(visible, BinaryOp::Sub, dt, s, p)?;
        let sbb = self.exact_or_unhidden(visible, BinaryOp::Sub, dt, s, bb)?;
        let e1 = self.exact_or_unhidden(visible, BinaryOp::Sub, dt, p, sbb)?;
        let e2 = self.exact_or_unhidden(visible, BinaryOp::Sub, dt, c, bb)?;
        let err = self.exact_or_unhidden(visible, BinaryOp::Add, dt, e1, e2)?;
        let zero = self.konst(f64s, 0);
        let inexact = self.b.f_ord_not_equal(bt, None, err, zero)?;
        let sbits = self.b.bitcast(it, None, s)?;
        let one = self.konst(i64s, 1);
        let low = self.b.bitwise_and(it, None, sbits, one)?;
        let izero = self.konst(i64s, 0);
        let even = self.b.i_equal(bt, None, low, izero)?;
        let adjust = self.b.logical_and(bt, None, inexact, even)?;
        // Moving toward err: away from zero when err has the sign of s (bits + 1),
        // else toward zero (bits - 1). s ≠ 0 whenever err ≠ 0.
        let s_neg = self.b.f_ord_less_than(bt, None, s, zero)?;
        let e_neg = self.b.f_ord_less_than(bt, None, err, zero)?;
        let same = self.b.logical_equal(bt, None, s_neg, e_neg)?;
        let up = self.b.i_add(it, None, sbits, one)?;
        let down = self.b.i_sub(it, None, sbits, one)?;
        let stepped = self.b.select(it, None, same, up, down)?;
        let odd_bits = self.b.select(it, None, adjust, stepped, sbits)?;
        Ok(self.b.bitcast(dt, None, odd_bits)?)
    }
}

/// The f64 values of `fma.rn.f32` ([`FnEmitter::fma_f32_sum`]): the product, the addend,
/// their sum rounded to nearest, and whether the operands were hidden.
#[derive(Clone, Copy)]
struct FmaSum {
    p: Word,
    cd: Word,
    s: Word,
    hide: bool,
}
