//! Emission of `cvt` (PTX ISA 9.2 §9.7.9.21): conversions between integers and floats with
//! their rounding, saturation and integral rounding.

use super::*;

impl FnEmitter<'_> {
    pub(super) fn convert(
        &mut self,
        to: OpTy,
        from: OpTy,
        rounding: Option<Rounding>,
        mode: FloatMode,
        v: Word,
    ) -> R<Word> {
        let ts = Scalar::of_op(to);
        let tt = self.ty(ts);
        let bt = self.ty(Scalar::Bool);
        let v = if mode.ftz && from == OpTy::F(32) { self.flush_f32(v)? } else { v };
        let r = match (from.is_float(), to.is_float()) {
            (false, false) => {
                if mode.sat {
                    self.int_saturate(to, from, v)?
                } else if to.bits() == from.bits() {
                    v
                } else if to.bits() < from.bits() {
                    self.b.u_convert(tt, None, v)?
                } else if from.is_signed() {
                    self.sign_extend(tt, v)?
                } else {
                    self.b.u_convert(tt, None, v)?
                }
            }
            (false, true) => {
                // Correctly rounded to nearest even (Vulkan: conversions are exact or
                // correctly rounded).
                if from.is_signed() {
                    self.b.convert_s_to_f(tt, None, v)?
                } else {
                    self.b.convert_u_to_f(tt, None, v)?
                }
            }
            (true, true) => {
                let r = if to == from {
                    // Same size: round to an integral value, or only `.ftz`/`.sat` below.
                    match rounding {
                        Some(r) => self.round_integral(v, from, r)?,
                        None => v,
                    }
                } else {
                    self.b.f_convert(tt, None, v)?
                };
                if to.bits() > from.bits() {
                    // Widening is exact; PTX keeps NaN payloads quieted the same way.
                    self.b.decorate(r, Decoration::NoContraction, []);
                }
                r
            }
            (true, false) => {
                // PTX float→int: round, then saturate to the destination range; NaN → 0
                // (PTX ISA 9.2 §9.7.9.21).
                let fs = Scalar::of_op(from);
                let ft = self.ty(fs);
                let r = self.round_integral(v, from, rounding.unwrap_or(Rounding::Zero))?;
                let (lo, hi) = int_range(to);
                let bits = to.bits();
                let fbits = |x: f64| {
                    if from.bits() == 32 {
                        (x as f32).to_bits() as u64
                    } else {
                        x.to_bits()
                    }
                };
                // `hi_f` is 2^bits or 2^(bits-1): the first value above the range.
                let hi_f = self.konst(fs, fbits(hi as f64 + 1.0));
                let lo_f = self.konst(fs, fbits(lo as f64));
                let too_big = self.b.f_ord_greater_than_equal(bt, None, r, hi_f)?;
                let too_small = self.b.f_ord_less_than(bt, None, r, lo_f)?;
                let nan = self.b.is_nan(bt, None, r)?;
                let zero_f = self.konst(fs, 0);
                let safe = self.b.logical_or(bt, None, too_big, too_small)?;
                let safe = self.b.logical_or(bt, None, safe, nan)?;
                let in_range = self.b.select(ft, None, safe, zero_f, r)?;
                let conv = if to.is_signed() {
                    self.b.convert_f_to_s(tt, None, in_range)?
                } else {
                    self.b.convert_f_to_u(tt, None, in_range)?
                };
                let mask =
                    |x: i128| (x as u64) & if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
                let hi_k = self.konst(ts, mask(hi));
                let lo_k = self.konst(ts, mask(lo));
                // NaN: 0, unless the source is .f64 or the destination 64-bit; then
                // 1 << (bits - 1) (PTX ISA 9.2 §9.7.9.21, integer notes).
                let nan_value =
                    if from.bits() == 64 || bits == 64 { 1u64 << (bits - 1) } else { 0 };
                let nan_k = self.konst(ts, nan_value);
                let r1 = self.b.select(tt, None, too_big, hi_k, conv)?;
                let r2 = self.b.select(tt, None, too_small, lo_k, r1)?;
                self.b.select(tt, None, nan, nan_k, r2)?
            }
        };
        if to.is_float() {
            return self.float_result(
                r,
                to,
                FloatMode { ftz: mode.ftz && to == OpTy::F(32), ..mode },
            );
        }
        Ok(r)
    }

    /// Rounds a float to an integral value of the same type. GLSL.std.450 `RoundEven` and
    /// `Trunc` are exact per the Vulkan spec, but Mesa's lavapipe (22.3) computes them
    /// wrongly for f64, so for f64 they are built from `Floor`, exactly, for every input
    /// (±0, halves, |x| ≥ 2^52, infinities, NaN).
    pub(super) fn round_integral(&mut self, v: Word, ty: OpTy, r: Rounding) -> R<Word> {
        let s = Scalar::of_op(ty);
        let t = self.ty(s);
        if r == Rounding::NearestAway {
            return Err(Error::Internal("`.rna` rounding to an integral value".into()));
        }
        if ty.bits() != 64 || matches!(r, Rounding::Down | Rounding::Up) {
            let op = match r {
                Rounding::Nearest | Rounding::NearestAway => glsl::ROUND_EVEN,
                Rounding::Zero => glsl::TRUNC,
                Rounding::Down => glsl::FLOOR,
                Rounding::Up => glsl::CEIL,
            };
            return self.glsl1(t, op, v);
        }
        let bt = self.ty(Scalar::Bool);
        if r == Rounding::Zero {
            // trunc(x) = x < 0 ? -floor(-x) : floor(x); floor keeps -0.0 and NaN.
            let zero = self.konst(s, 0);
            let neg = self.b.f_ord_less_than(bt, None, v, zero)?;
            let nv = self.b.f_negate(t, None, v)?;
            let fl_n = self.glsl1(t, glsl::FLOOR, nv)?;
            let up = self.b.f_negate(t, None, fl_n)?;
            let down = self.glsl1(t, glsl::FLOOR, v)?;
            return Ok(self.b.select(t, None, neg, up, down)?);
        }
        // Round half to even: f = floor(x), d = x - f (exact), step up when d > 1/2 or
        // d = 1/2 and f is odd; the result keeps x's sign (so -0.3 gives -0.0).
        let f = self.glsl1(t, glsl::FLOOR, v)?;
        let d = self.exact(BinaryOp::Sub, t, v, f)?;
        let half = self.konst(s, 0.5f64.to_bits());
        let one = self.konst(s, 1f64.to_bits());
        let above = self.b.f_ord_greater_than(bt, None, d, half)?;
        let tie = self.b.f_ord_equal(bt, None, d, half)?;
        let fh = self.exact(BinaryOp::Mul, t, f, half)?;
        let fh_floor = self.glsl1(t, glsl::FLOOR, fh)?;
        let odd = self.b.f_ord_not_equal(bt, None, fh_floor, fh)?;
        let tie_odd = self.b.logical_and(bt, None, tie, odd)?;
        let step = self.b.logical_or(bt, None, above, tie_odd)?;
        let f1 = self.exact(BinaryOp::Add, t, f, one)?;
        let rounded = self.b.select(t, None, step, f1, f)?;
        // copysign(rounded, x)
        let i = Scalar::Int(64);
        let it = self.ty(i);
        let sign = self.konst(i, 1 << 63);
        let mag = self.konst(i, !(1u64 << 63));
        let ri = self.b.bitcast(it, None, rounded)?;
        let xi = self.b.bitcast(it, None, v)?;
        let rm = self.b.bitwise_and(it, None, ri, mag)?;
        let xs = self.b.bitwise_and(it, None, xi, sign)?;
        let bits = self.b.bitwise_or(it, None, rm, xs)?;
        Ok(self.b.bitcast(t, None, bits)?)
    }

    /// A one-operand GLSL.std.450 instruction.
    pub(super) fn glsl1(&mut self, ty: Word, op: u32, x: Word) -> R<Word> {
        Ok(self.b.ext_inst(ty, None, self.g.glsl, op, [Operand::IdRef(x)])?)
    }

    /// `cvt.sat` between integer types: clamp to the destination's range. The clamp
    /// happens at the source width (the bounds `[max(dst.min, src.min), min(dst.max,
    /// src.max)]` always fit the source type), then the value is extended or truncated.
    /// Besides avoiding 64-bit compares, this sidesteps a lavapipe (Mesa 22.3) bug that
    /// miscompiles a signed compare of a sign-extended value against a constant.
    pub(super) fn int_saturate(&mut self, to: OpTy, from: OpTy, v: Word) -> R<Word> {
        let fs = Scalar::of_op(from);
        let ft = self.ty(fs);
        let bt = self.ty(Scalar::Bool);
        let (dlo, dhi) = int_range(to);
        let (slo, shi) = int_range(from);
        let (lo, hi) = (dlo.max(slo), dhi.min(shi));
        let width_mask = if from.bits() == 64 { u64::MAX } else { (1u64 << from.bits()) - 1 };
        let mut r = v;
        if hi < shi {
            let hk = self.konst(fs, hi as u64 & width_mask);
            let above = if from.is_signed() {
                self.b.s_greater_than(bt, None, r, hk)?
            } else {
                self.b.u_greater_than(bt, None, r, hk)?
            };
            r = self.b.select(ft, None, above, hk, r)?;
        }
        if lo > slo {
            // Only a signed source can lie below the destination's minimum.
            let lk = self.konst(fs, lo as u64 & width_mask);
            let below = self.b.s_less_than(bt, None, r, lk)?;
            r = self.b.select(ft, None, below, lk, r)?;
        }
        let tt = self.ty(Scalar::of_op(to));
        Ok(match to.bits().cmp(&from.bits()) {
            std::cmp::Ordering::Equal => r,
            std::cmp::Ordering::Less => self.b.u_convert(tt, None, r)?,
            // The clamped value is in the destination's range, so extending by the
            // source's signedness keeps it.
            std::cmp::Ordering::Greater if from.is_signed() => self.sign_extend(tt, r)?,
            std::cmp::Ordering::Greater => self.b.u_convert(tt, None, r)?,
        })
    }

    // ----- memory --------------------------------------------------------------------
}
