//! Exactly rounded f32 `fma`, `div` and `sqrt` in integer arithmetic only, for devices
//! without f64: the operands widened exactly to f64 bit patterns and the IR's exact
//! f64 routines (`ptxvk_lower::routines`, called as [`Helper::Routine`]) round once.

use rspirv::dr::Operand;
use rspirv::spirv::Word;

use ptxvk_lower::ir::{FloatFormat, OddOp, Rounding, Routine, Value};

use super::helpers::{Helper, SoftOp};
use super::{glsl, FnEmitter, R};
use crate::types::Scalar;

const U64: Scalar = Scalar::Int(64);
const U32: Scalar = Scalar::Int(32);

impl FnEmitter<'_> {
    fn k64(&mut self, v: u64) -> Word {
        self.konst(U64, v)
    }

    fn sel(&mut self, c: Word, a: Word, b: Word) -> R<Word> {
        let it = self.ty(U64);
        Ok(self.b.select(it, None, c, a, b)?)
    }
}

impl FnEmitter<'_> {
    /// The f64 bit pattern (a 64-bit integer) of the f32 whose bits are `x`, exactly,
    /// in integer arithmetic: normal numbers rebias their exponent, subnormals (normal
    /// in f64) are normalized, infinities and NaNs keep their payload.
    pub(super) fn f32_bits_to_f64_bits(&mut self, x: Word) -> R<Word> {
        let it = self.ty(U64);
        let ut = self.ty(U32);
        let bt = self.ty(Scalar::Bool);
        let x = self.b.u_convert(it, None, x)?;
        let (k23, k29, k31, k52, k63) =
            (self.k64(23), self.k64(29), self.k64(31), self.k64(52), self.k64(63));
        let zero = self.k64(0);
        let sign = self.b.shift_right_logical(it, None, x, k31)?;
        let sign = self.b.shift_left_logical(it, None, sign, k63)?;
        let ef = self.b.shift_right_logical(it, None, x, k23)?;
        let exp_mask = self.k64(0xff);
        let ef = self.b.bitwise_and(it, None, ef, exp_mask)?;
        let frac_mask = self.k64((1 << 23) - 1);
        let frac = self.b.bitwise_and(it, None, x, frac_mask)?;
        let frac52 = self.b.shift_left_logical(it, None, frac, k29)?;
        // Normal: the exponent rebiased by 1023 - 127.
        let rebias = self.k64(1023 - 127);
        let e64 = self.b.i_add(it, None, ef, rebias)?;
        let e64 = self.b.shift_left_logical(it, None, e64, k52)?;
        let normal = self.b.bitwise_or(it, None, e64, frac52)?;
        // Subnormal: frac · 2^-149 with its leading bit at p is 2^(p - 149) · 1.f, so
        // the exponent field is p + 874 and the fraction is frac shifted to bit 52.
        let frac32 = self.b.u_convert(ut, None, frac)?;
        let glsl_set = self.g.glsl;
        let msb = self.b.ext_inst(ut, None, glsl_set, glsl::FIND_UMSB, [Operand::IdRef(frac32)])?;
        let msb = self.b.u_convert(it, None, msb)?;
        let k874 = self.k64(874);
        let se = self.b.i_add(it, None, msb, k874)?;
        let se = self.b.shift_left_logical(it, None, se, k52)?;
        let shift = self.b.i_sub(it, None, k52, msb)?;
        // Only meaningful for a nonzero fraction; keep the shift in range otherwise.
        let k63_mask = self.k64(63);
        let shift = self.b.bitwise_and(it, None, shift, k63_mask)?;
        let sf = self.b.shift_left_logical(it, None, frac, shift)?;
        let fmask52 = self.k64((1 << 52) - 1);
        let sf = self.b.bitwise_and(it, None, sf, fmask52)?;
        let subnormal = self.b.bitwise_or(it, None, se, sf)?;
        let exp_zero = self.b.i_equal(bt, None, ef, zero)?;
        let frac_zero = self.b.i_equal(bt, None, frac, zero)?;
        let frac_nonzero = self.b.logical_not(bt, None, frac_zero)?;
        let is_sub = self.b.logical_and(bt, None, exp_zero, frac_nonzero)?;
        let r = self.sel(is_sub, subnormal, normal)?;
        let is_zero = self.b.logical_and(bt, None, exp_zero, frac_zero)?;
        let r = self.sel(is_zero, zero, r)?;
        // Infinities and NaNs: the all-ones exponent, the payload moved up.
        let all_ones = self.k64(0xff);
        let special = self.b.i_equal(bt, None, ef, all_ones)?;
        let inf = self.k64(0x7ff0_0000_0000_0000);
        let inf_nan = self.b.bitwise_or(it, None, inf, frac52)?;
        let r = self.sel(special, inf_nan, r)?;
        Ok(self.b.bitwise_or(it, None, r, sign)?)
    }

    /// `Helper::SoftF32`: an f32 `fma`, `div` or `sqrt` exactly rounded by `rounding`,
    /// with integer arithmetic only. The operands widen exactly to f64 bit patterns and
    /// the soft f64 routine rounds once; rounding that to f32 is then exact:
    /// * `div`, `sqrt`: a second rounding to nearest is innocuous for 53 ≥ 2·24 + 2
    ///   bits (Figueroa 1995), and two directed roundings the same way equal one (the
    ///   f32 values are f64 values);
    /// * `fma` to nearest: the f64 result is rounded to odd first, which makes the
    ///   second rounding exact for 53 ≥ 24 + 2 (Boldo & Melquiond 2008); directed
    ///   `fma` as above.
    pub(super) fn soft_f32(&mut self, op: SoftOp, rounding: Rounding, p: &[Word]) -> R<Word> {
        let ut = self.ty(U32);
        let ft = self.ty(Scalar::Float(32));
        let mut wide = Vec::with_capacity(p.len());
        for &x in p {
            let bits = self.b.bitcast(ut, None, x)?;
            wide.push(self.f32_bits_to_f64_bits(bits)?);
        }
        let nearest = rounding == Rounding::Nearest;
        let r = match op {
            SoftOp::Fma if nearest => self.call(Helper::Routine(Routine::FmaF64Odd), &wide)?,
            SoftOp::Fma => self.call(Helper::Routine(Routine::FmaF64(rounding)), &wide)?,
            SoftOp::Div => self.call(Helper::Routine(Routine::DivF64(rounding)), &wide)?,
            SoftOp::Sqrt => self.call(Helper::Routine(Routine::SqrtF64(rounding)), &wide)?,
        };
        let narrow = Routine::Narrow {
            to: FloatFormat::F32,
            from_bits: 64,
            rounding,
            satfinite: false,
            relu: false,
        };
        let bits = self.call(Helper::Routine(narrow), &[r])?;
        Ok(self.b.bitcast(ft, None, bits)?)
    }

    /// `InstKind::RoundToOdd` with `soft`: the f32 operands widened exactly to f64 bit
    /// patterns and the integer fused multiply-add rounded to odd, `a + b` as
    /// `fma(a, 1, b)` and `a · b` as `fma(a, b, -0)` (which keeps the sign of a zero
    /// product). The result is the f64 bit pattern, as a 64-bit integer.
    pub(super) fn soft_round_to_odd(&mut self, op: OddOp, a: Value, b: Value, c: Value) -> R<Word> {
        let it = self.ty(U64);
        let wide = |e: &mut Self, v: Value| -> R<Word> {
            let bits = e.read(v, U32)?;
            e.f32_bits_to_f64_bits(bits)
        };
        let wa = wide(self, a)?;
        let wb = wide(self, b)?;
        let one = self.k64(1f64.to_bits());
        let sign = self.k64(1 << 63);
        let (x, y, z) = match op {
            OddOp::Add => (wa, one, wb),
            OddOp::Sub => (wa, one, self.b.bitwise_xor(it, None, wb, sign)?),
            OddOp::Mul => (wa, wb, sign),
            OddOp::Fma => (wa, wb, wide(self, c)?),
        };
        self.call(Helper::Routine(Routine::FmaF64Odd), &[x, y, z])
    }
}
