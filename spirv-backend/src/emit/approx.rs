//! `sin.approx` and `cos.approx` (`UnaryOp::{Sin, Cos}`), computed in f64 with an exact
//! argument reduction and polynomials and rounded once to f32. (`ex2`, `lg2`, `rsqrt`
//! and `tanh` are IR routines: `ptxvk_lower::routines`, `Routine::Approx`.)
//!
//! Vulkan's own `sin` and `cos` are allowed errors far larger than PTX documents for
//! these instructions (an absolute error of 2^-11, against PTX's 2^-20.5 on [-2π, 2π]),
//! so ptxvk does not use them: f64 addition and multiplication are correctly rounded on
//! every Vulkan device, and the polynomials below are accurate to about 1e-16 on their
//! reduced ranges. The results are therefore within one ulp of the exact value, for
//! every input (the argument is reduced exactly). Special values follow the PTX ISA
//! tables (§9.7.3.18-19).

use rspirv::spirv::Word;

use ptxvk_lower::ir::{FloatFormat, Rounding, UnaryOp};

use super::{FnEmitter, R};
use crate::types::Scalar;
use crate::Error;

/// 2/π in 24-bit pieces: `2/π = Σ TWO_OVER_PI_24[i] · 2^(-24(i+1))` to 288 bits (the
/// table of fdlibm's `k_rem_pio2.c`, recomputed from π).
const TWO_OVER_PI_24: [u32; 12] = [
    0xa2f983, 0x6e4e44, 0x1529fc, 0x2757d1, 0xf534dd, 0xc0db62, 0x95993c, 0x439041, 0xfe5163,
    0xabdebb, 0xc561b7, 0x246e3a,
];

/// Piece `i` of 2/π: `TWO_OVER_PI_24[i] · 2^(-24(i+1))`, exact in f64.
fn two_over_pi_piece(i: usize) -> f64 {
    f64::from(TWO_OVER_PI_24[i]) * 2f64.powi(-24 * (i as i32 + 1))
}

impl FnEmitter<'_> {
    /// `c[0] x^(n-1) + … + c[n-1]` by Horner's rule, with the contraction of
    /// multiply-adds forbidden so that the result does not depend on the device.
    fn horner(&mut self, x: Word, coeffs: &[f64]) -> R<Word> {
        let mut acc = self.kf(coeffs[0]);
        for &c in &coeffs[1..] {
            let p = self.fmul(acc, x)?;
            let k = self.kf(c);
            acc = self.fadd(p, k)?;
        }
        Ok(acc)
    }

    /// Rounds an f64 to f32 to nearest, overflowing to infinity and into subnormals
    /// exactly (integer arithmetic, not the device's conversion).
    fn round_f64_to_f32(&mut self, v: Word) -> R<Word> {
        let ft = self.ty(Scalar::Float(32));
        let bits = self.f64_bits(v)?;
        let r = self.narrow_bits(FloatFormat::F32, 64, Rounding::Nearest, false, false, bits)?;
        Ok(self.b.bitcast(ft, None, r)?)
    }

    /// `sin.approx` or `cos.approx` of an f32 `x`.
    pub(super) fn approx(&mut self, op: UnaryOp, x: Word) -> R<Word> {
        let xd = self.f64_from_f32(x)?;
        match op {
            UnaryOp::Sin | UnaryOp::Cos => self.sin_cos(op == UnaryOp::Sin, xd),
            other => Err(Error::Internal(format!("{other:?} is a routine, not emitted here"))),
        }
    }

    /// `x·c - 4·round(x·c/4)`, in [-2, 2]: exact (a multiple of the product's ulp of at
    /// most 47 bits, or 0), and small remainders stay small.
    fn remainder_mod4(&mut self, xd: Word, c: Word) -> R<Word> {
        let quarter = self.kf(0.25);
        let four = self.kf(4.0);
        let half = self.kf(0.5);
        let p = self.fmul(xd, c)?;
        let pq = self.fmul(p, quarter)?;
        let pq = self.fadd(pq, half)?;
        let fl = self.floor64(pq)?;
        let whole = self.fmul(fl, four)?;
        self.fsub(p, whole)
    }

    /// `(s, e) + m` in double-double arithmetic.
    fn accumulate(&mut self, s: Word, e: Word, m: Word) -> R<(Word, Word)> {
        let (s, t) = self.two_sum(s, m)?;
        Ok((s, self.fadd(e, t)?))
    }

    /// The sum of [`Self::remainder_mod4`] over the pieces of 2/π as a SPIR-V loop
    /// (soft f64 only): unrolled, the eleven steps after the first are over a thousand
    /// inlined soft operations, which drivers that inline every call (Mesa) compile for
    /// about a minute. Piece i is selected from the constants by comparisons. (The loop
    /// guard counts its iterations: `loop_guard::SIN_COS_REDUCTION_ITERATIONS`.)
    fn reduce_loop(&mut self, xd: Word) -> R<(Word, Word)> {
        let (it, bt) = (self.ty(Scalar::Int(32)), self.ty(Scalar::Bool));
        let dt = self.f64_ty();
        let c0 = self.kf(two_over_pi_piece(0));
        let s0 = self.remainder_mod4(xd, c0)?;
        let e0 = self.kf(0.0);
        let (pre, header, body, cont, merge) =
            (self.b.id(), self.b.id(), self.b.id(), self.b.id(), self.b.id());
        let (i_phi, s_phi, e_phi) = (self.b.id(), self.b.id(), self.b.id());
        let (i_next, s_next, e_next) = (self.b.id(), self.b.id(), self.b.id());
        let one = self.konst(Scalar::Int(32), 1);
        let count = self.konst(Scalar::Int(32), TWO_OVER_PI_24.len() as u64);
        self.b.branch(pre)?;
        self.b.begin_block(Some(pre))?;
        self.b.branch(header)?;
        self.b.begin_block(Some(header))?;
        self.b.phi(it, Some(i_phi), [(one, pre), (i_next, cont)])?;
        self.b.phi(dt, Some(s_phi), [(s0, pre), (s_next, cont)])?;
        self.b.phi(dt, Some(e_phi), [(e0, pre), (e_next, cont)])?;
        self.b.loop_merge(merge, cont, rspirv::spirv::LoopControl::NONE, [])?;
        self.t.used.loops = true;
        self.b.branch(body)?;
        self.b.begin_block(Some(body))?;
        let mut c = self.kf(two_over_pi_piece(1));
        for k in 2..TWO_OVER_PI_24.len() {
            let kk = self.konst(Scalar::Int(32), k as u64);
            let is_k = self.b.i_equal(bt, None, i_phi, kk)?;
            let ck = self.kf(two_over_pi_piece(k));
            c = self.sel64(is_k, ck, c)?;
        }
        let m = self.remainder_mod4(xd, c)?;
        let (s, e) = self.accumulate(s_phi, e_phi, m)?;
        self.b.branch(cont)?;
        self.b.begin_block(Some(cont))?;
        let dt2 = self.f64_ty();
        self.b.copy_object(dt2, Some(s_next), s)?;
        self.b.copy_object(dt2, Some(e_next), e)?;
        self.b.i_add(it, Some(i_next), i_phi, one)?;
        let more = self.b.u_less_than(bt, None, i_next, count)?;
        self.b.branch_conditional(more, header, merge, [])?;
        self.b.begin_block(Some(merge))?;
        Ok((s_next, e_next))
    }

    /// `(s, e)` with `s + e = a + b` exactly (Knuth's TwoSum).
    fn two_sum(&mut self, a: Word, b: Word) -> R<(Word, Word)> {
        let s = self.fadd(a, b)?;
        let bb = self.fsub(s, a)?;
        let sbb = self.fsub(s, bb)?;
        let e1 = self.fsub(a, sbb)?;
        let e2 = self.fsub(b, bb)?;
        let e = self.fadd(e1, e2)?;
        Ok((s, e))
    }

    /// `sin.approx`/`cos.approx`: x = k π/2 + r with |r| ≤ π/4, reduced exactly for
    /// every f32 (a Payne-Hanek reduction in floating point): 2/π is a sum of 24-bit
    /// pieces C_i, so each x·C_i is exact in f64 and so is its symmetric remainder
    /// modulo 4; the remainders are summed in double-double arithmetic. Then the Taylor series of sin
    /// or cos on r, chosen and signed by k mod 4.
    fn sin_cos(&mut self, is_sin: bool, xd: Word) -> R<Word> {
        let bt = self.ty(Scalar::Bool);
        let it = self.ty(Scalar::Int(32));
        let ft = self.ty(Scalar::Float(32));
        let quarter = self.kf(0.25);
        let four = self.kf(4.0);
        let half = self.kf(0.5);
        let (s, e) = if self.soft_f64 {
            self.reduce_loop(xd)?
        } else {
            let mut acc: Option<(Word, Word)> = None;
            for i in 0..TWO_OVER_PI_24.len() {
                let c = self.kf(two_over_pi_piece(i));
                let m = self.remainder_mod4(xd, c)?;
                acc = Some(match acc {
                    None => (m, self.kf(0.0)),
                    Some((s, e)) => self.accumulate(s, e, m)?,
                });
            }
            acc.ok_or_else(|| Error::Internal("empty 2/pi table".into()))?
        };
        let sh = self.fadd(s, half)?;
        let k = self.floor64(sh)?;
        let f = self.fsub(s, k)?;
        let (f, f_lo) = self.two_sum(f, e)?;
        let pio2_hi = self.kf(std::f64::consts::FRAC_PI_2);
        let pio2_lo = self.kf(6.123_233_995_736_766e-17);
        let main = self.fmul(f, pio2_hi)?;
        let c1 = self.fmul(f, pio2_lo)?;
        let c2 = self.fmul(f_lo, pio2_hi)?;
        let corr = self.fadd(c1, c2)?;
        let r = self.fadd(main, corr)?;
        // k mod 4 (k is a small integer, or NaN for ±inf/NaN inputs).
        let kq = self.fmul(k, quarter)?;
        let kq = self.floor64(kq)?;
        let k4 = self.fmul(kq, four)?;
        let q = self.fsub(k, k4)?;
        let q_nan = self.fisnan(q)?;
        let zero = self.kf(0.0);
        let q = self.sel64(q_nan, zero, q)?;
        let q = self.f64_to_i64(q)?;
        let q = self.b.u_convert(it, None, q)?;
        let r2 = self.fmul(r, r)?;
        // sin r = r (1 - r^2/3! + r^4/5! - …), cos r = 1 - r^2/2! + r^4/4! - …
        // Taylor coefficients (-1)^j / (2j + first)!, highest power first for Horner.
        let taylor = |terms: u32, first: u32| -> Vec<f64> {
            (0..terms)
                .rev()
                .map(|j| {
                    let f: f64 = (1..=2 * j + first).map(f64::from).product();
                    if j % 2 == 0 {
                        1.0 / f
                    } else {
                        -1.0 / f
                    }
                })
                .collect()
        };
        let (sin_c, cos_c) = (taylor(9, 1), taylor(10, 0));
        let sp = self.horner(r2, &sin_c)?;
        let s = self.fmul(r, sp)?;
        let c = self.horner(r2, &cos_c)?;
        let ns = self.fneg(s)?;
        let nc = self.fneg(c)?;
        // sin: [s, c, -s, -c][q]; cos: [c, -s, -c, s][q].
        let table = if is_sin { [s, c, ns, nc] } else { [c, ns, nc, s] };
        let mut v = table[3];
        for (i, &t) in table.iter().enumerate().take(3).rev() {
            let qi = self.konst(Scalar::Int(32), i as u64);
            let is = self.b.i_equal(bt, None, q, qi)?;
            v = self.sel64(is, t, v)?;
        }
        let r = self.round_f64_to_f32(v)?;
        // sin(±0) = ±0 (the reduction above loses the sign of zero).
        let is_zero = self.feq(xd, zero)?;
        let r = if is_sin {
            // The f32 of ±0 itself (exact).
            let x32 = self.round_f64_to_f32(xd)?;
            self.b.select(ft, None, is_zero, x32, r)?
        } else {
            r
        };
        // sin/cos of ±inf or NaN is NaN.
        let ax = self.fabs(xd)?;
        let inf = self.kf(f64::INFINITY);
        let finite = self.flt(ax, inf)?;
        let nan = self.konst(Scalar::Float(32), u64::from(f32::NAN.to_bits()));
        Ok(self.b.select(ft, None, finite, r, nan)?)
    }
}

#[cfg(test)]
mod tests {
    /// The loop of [`super::FnEmitter::reduce_loop`] runs once per piece of 2/π after
    /// the first, which the loop guard counts for it.
    #[test]
    fn the_loop_guard_counts_the_reduction_loop() {
        let iterations = super::TWO_OVER_PI_24.len() as u32 - 1;
        assert_eq!(iterations, ptxvk_lower::pass::loop_guard::SIN_COS_REDUCTION_ITERATIONS);
    }
}
