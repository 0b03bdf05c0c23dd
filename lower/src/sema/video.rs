//! The video instructions (PTX ISA 9.2 §9.7.16), expanded into core integer operations.
//!
//! * Scalar (§9.7.16.1): `vadd vsub vabsdiff vmin vmax vshl vshr vset` select a byte,
//!   half word or word of each source (`.b0`–`.b3`, `.h0`/`.h1`), sign- or zero-extend
//!   it by the source type, compute exactly (in 64 bits, where the ISA's 33-bit inputs and
//!   34-bit intermediate fit), optionally clamp to the destination type — a byte or half
//!   word when the destination has a selector — and then either apply a secondary
//!   operation with `c` (`.add .min .max`, `c` extended by the destination type) or
//!   merge the low byte/half word into `c` at the destination selector.
//! * `vmad` computes `±(a*b) ± c (+1)` exactly in 128 bits (a pair of 64-bit words),
//!   shifts it right by 7 or 15 (`.shr7 .shr15`) and clamps it (`.sat`), following the
//!   ISA's pseudocode step by step: a negated `c` is `~c + 1` of its 32 bits, extended
//!   by the sign of the final result.
//! * SIMD (§9.7.16.2): `vadd2 … vset4` operate on two half words or four bytes chosen
//!   from the eight of `{b, a}` (`.h10`/`.b3210` of `a` and `.h32`/`.b7654` of `b` by
//!   default; selector digits name the high lane first), then accumulate the lanes of
//!   the destination mask into `c` (`.add`) or merge them into `c`.
//!
//! `vshl` by 32 under `.clamp` is the only result that does not fit 64 bits; it is
//! replaced by `sign(a) * 2^40`, which has the same low 32 bits (zero) and the same side
//! of every clamp bound and of every 33-bit `c`, so saturation, `.min`, `.max`, `.add`
//! and the merge see what the exact value would give.
//!
//! Other corners the ISA leaves open: `vmad` negating both the product and `c` is
//! rejected, as ptxas rejects it; a scalar form given `c` without `.add/.min/.max` or a
//! destination selector ignores `c` (optMerge without a selector), as ptxas accepts it.

use ptxvk_frontend::ast::{self, Operand, ScalarType};
use ptxvk_frontend::modifier::{Clamp, Modifier, Reduction, VideoScale};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span, Spanned};

use super::expand::Emit;
use super::{Lowerer, Mods};
use crate::build::Build;
use crate::ir::{BinaryOp, CmpOp, OpTy, UnaryOp, Value};

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);
const U64: OpTy = OpTy::U(64);
const S64: OpTy = OpTy::S(64);

const SCALAR: &[Opcode] = &[
    Opcode::Vadd,
    Opcode::Vsub,
    Opcode::Vabsdiff,
    Opcode::Vmin,
    Opcode::Vmax,
    Opcode::Vshl,
    Opcode::Vshr,
    Opcode::Vset,
];

/// The SIMD instructions: each with its lane count and the scalar instruction whose
/// primary operation it applies per lane (`None` for `vavrg`, which has none).
const SIMD: &[(Opcode, usize, Option<Opcode>)] = &[
    (Opcode::Vadd2, 2, Some(Opcode::Vadd)),
    (Opcode::Vsub2, 2, Some(Opcode::Vsub)),
    (Opcode::Vavrg2, 2, None),
    (Opcode::Vabsdiff2, 2, Some(Opcode::Vabsdiff)),
    (Opcode::Vmin2, 2, Some(Opcode::Vmin)),
    (Opcode::Vmax2, 2, Some(Opcode::Vmax)),
    (Opcode::Vset2, 2, Some(Opcode::Vset)),
    (Opcode::Vadd4, 4, Some(Opcode::Vadd)),
    (Opcode::Vsub4, 4, Some(Opcode::Vsub)),
    (Opcode::Vavrg4, 4, None),
    (Opcode::Vabsdiff4, 4, Some(Opcode::Vabsdiff)),
    (Opcode::Vmin4, 4, Some(Opcode::Vmin)),
    (Opcode::Vmax4, 4, Some(Opcode::Vmax)),
    (Opcode::Vset4, 4, Some(Opcode::Vset)),
];

fn simd(op: Opcode) -> Option<(usize, Option<Opcode>)> {
    SIMD.iter().find(|s| s.0 == op).map(|&(_, lanes, base)| (lanes, base))
}

/// Whether `op` is a video instruction.
pub(super) fn is_video(op: Opcode) -> bool {
    op == Opcode::Vmad || SCALAR.contains(&op) || simd(op).is_some()
}

/// A source of a video instruction: the operand without its selector, the selector
/// (`.b0`, `.h1`, `.h32`, `.b7654` …) and whether it is negated (`vmad`).
struct VideoOperand {
    operand: Operand,
    selector: Option<Spanned<String>>,
    negated: bool,
}

/// Splits a selector and a negation off `op`. Components that are not selectors
/// (`%tid.x`) stay on the operand.
fn video_operand(op: &Operand) -> VideoOperand {
    match op {
        Operand::Neg(inner, _) => VideoOperand { negated: true, ..video_operand(inner) },
        Operand::Name { name, component: Some(c) } if is_selector(&c.value) => VideoOperand {
            operand: Operand::Name { name: name.clone(), component: None },
            selector: Some(Spanned::new(c.value.to_string(), c.span)),
            negated: false,
        },
        other => VideoOperand { operand: other.clone(), selector: None, negated: false },
    }
}

fn is_selector(component: &str) -> bool {
    component
        .strip_prefix(".b")
        .or_else(|| component.strip_prefix(".h"))
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// `.b0`–`.b3`, `.h0`, `.h1` of a scalar video operand: the bit position and width of
/// the part (§9.7.16.1); no selector is the whole word.
fn scalar_part(selector: &Option<Spanned<String>>) -> Result<(u64, u64), Diagnostic> {
    let Some(s) = selector else { return Ok((0, 32)) };
    // `.bN` is byte N, `.hN` half word N.
    let part = |prefix: char, bits: u64| {
        let digit = s.value.strip_prefix('.')?.strip_prefix(prefix).filter(|d| d.len() == 1)?;
        let index = digit.parse::<u64>().ok()?;
        (index < 32 / bits).then_some((index * bits, bits))
    };
    part('b', 8).or_else(|| part('h', 16)).ok_or_else(|| {
        Diagnostic::error(
            s.span,
            format!("`{}` is not a scalar video selector (`.b0`-`.b3`, `.h0`, `.h1`)", s.value),
        )
    })
}

/// The lanes a SIMD selector names, lane 0 first: `.hxy` (lane 1 = half word x of
/// `{b, a}`, lane 0 = y) or `.bxyzw`; every digit below `limit`.
fn simd_lanes(s: &Spanned<String>, lanes: usize, limit: u8) -> Result<Vec<u8>, Diagnostic> {
    let prefix = if lanes == 2 { ".h" } else { ".b" };
    let digits = s.value.strip_prefix(prefix).unwrap_or("");
    if digits.len() != lanes || digits.bytes().any(|d| !(b'0'..b'0' + limit).contains(&d)) {
        return Err(Diagnostic::error(
            s.span,
            format!(
                "`{}` is not a {lanes}-lane selector: `{prefix}` and {lanes} digits below {limit}",
                s.value
            ),
        ));
    }
    Ok(digits.bytes().rev().map(|d| d - b'0').collect())
}

/// The destination mask of a SIMD video instruction (`.h0 .h1 .h10`, `.b0` … `.b3210`):
/// which lanes it writes; digits name lanes, highest first.
fn simd_mask(s: &Option<Spanned<String>>, lanes: usize) -> Result<Vec<bool>, Diagnostic> {
    let Some(s) = s else { return Ok(vec![true; lanes]) };
    let prefix = if lanes == 2 { ".h" } else { ".b" };
    let digits: Vec<u8> =
        s.value.strip_prefix(prefix).unwrap_or("").bytes().map(|d| d.wrapping_sub(b'0')).collect();
    let descending = digits.windows(2).all(|w| w[0] > w[1]);
    if digits.is_empty() || !descending || digits.iter().any(|&d| usize::from(d) >= lanes) {
        return Err(Diagnostic::error(
            s.span,
            format!("`{}` is not a {lanes}-lane destination mask", s.value),
        ));
    }
    Ok((0..lanes).map(|lane| digits.contains(&(lane as u8))).collect())
}

/// `.u32` or `.s32`.
fn video_type(t: &Spanned<ScalarType>, op: Opcode) -> Result<OpTy, Diagnostic> {
    match t.value {
        ScalarType::U32 => Ok(U32),
        ScalarType::S32 => Ok(S32),
        _ => Err(Diagnostic::error(t.span, format!("`{op}` takes `.u32` or `.s32` types"))),
    }
}

/// The secondary operation of a video instruction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Secondary {
    None,
    Add,
    Min,
    Max,
}

fn secondary(m: &Mods, op: Opcode, allowed: &[Modifier]) -> Result<Secondary, Diagnostic> {
    let mut found = Secondary::None;
    for d in &m.details {
        let s = match d.value {
            ADD => Secondary::Add,
            MIN => Secondary::Min,
            MAX => Secondary::Max,
            _ => continue,
        };
        if !allowed.contains(&d.value) {
            return Err(Diagnostic::error(d.span, format!("`{op}` does not take `{}`", d.value)));
        }
        if found != Secondary::None {
            return Err(Diagnostic::error(d.span, "a second secondary operation"));
        }
        found = s;
    }
    Ok(found)
}

const ADD: Modifier = Modifier::Reduction(Reduction::Add);
const MIN: Modifier = Modifier::Reduction(Reduction::Min);
const MAX: Modifier = Modifier::Reduction(Reduction::Max);
const CLAMP: Modifier = Modifier::Clamp(Clamp::Clamp);
const WRAP: Modifier = Modifier::Clamp(Clamp::Wrap);

/// The comparison of `vset*`: one of `.eq .ne .lt .le .gt .ge` (the only ones the
/// instruction table lets `vset` spell).
fn video_cmp(i: &ast::Instruction, m: &Mods) -> Result<CmpOp, Diagnostic> {
    match m.cmp {
        Some(c) => Ok(c),
        None => Err(Diagnostic::error(
            i.opcode.span,
            format!("`{}` needs one of `.eq .ne .lt .le .gt .ge`", i.opcode.value),
        )),
    }
}

impl Lowerer<'_> {
    /// The video instructions; `None` for other instructions.
    pub(super) fn video(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        if !is_video(op) {
            return None;
        }
        Some(if op == Opcode::Vmad {
            self.vmad(i, m)
        } else if let Some((lanes, base)) = simd(op) {
            self.video_simd(op, lanes, base, i, m)
        } else {
            self.video_scalar(op, i, m)
        })
    }

    /// The types of a video instruction: `count` of `.u32`/`.s32`.
    fn video_types(
        &self,
        i: &ast::Instruction,
        m: &Mods,
        count: usize,
    ) -> Result<Vec<OpTy>, Diagnostic> {
        let op = m.opcode;
        if m.types.len() != count {
            let example = if count == 2 { ".u32.s32" } else { ".s32.u32.s32" };
            return Err(Diagnostic::error(
                i.opcode.span,
                format!("`{op}` needs {count} types, such as `{op}{example}`"),
            ));
        }
        m.types.iter().map(|t| video_type(t, op)).collect()
    }

    /// A source read as 32 bits.
    fn video_src(&mut self, v: &VideoOperand, ty: OpTy, span: Span) -> Result<Value, Diagnostic> {
        self.src(&v.operand, ty, false, span)
    }

    fn video_operands(
        &self,
        i: &ast::Instruction,
        counts: &[usize],
    ) -> Result<Vec<VideoOperand>, Diagnostic> {
        let n = i.operands.len();
        if !counts.contains(&n) {
            let want: Vec<String> = counts.iter().map(usize::to_string).collect();
            return Err(Diagnostic::error(
                i.span,
                format!("`{}` takes {} operands, found {n}", i.opcode.value, want.join(" or ")),
            ));
        }
        let ops: Vec<VideoOperand> = i.operands.iter().map(video_operand).collect();
        if let Some(neg) = ops.iter().find(|o| o.negated).filter(|_| i.op != Some(Opcode::Vmad)) {
            return Err(Diagnostic::error(
                neg.operand.span(),
                "only `vmad` takes negated operands",
            ));
        }
        Ok(ops)
    }

    /// `vadd vsub vabsdiff vmin vmax vshl vshr vset` (§9.7.16.1).
    fn video_scalar(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let shift = matches!(op, Opcode::Vshl | Opcode::Vshr);
        let (dty, aty, bty, cmp) = if op == Opcode::Vset {
            let t = self.video_types(i, m, 2)?;
            if m.sat {
                return Err(Diagnostic::error(i.opcode.span, "`vset` takes no `.sat`"));
            }
            (U32, t[0], t[1], Some(video_cmp(i, m)?))
        } else {
            let t = self.video_types(i, m, 3)?;
            if shift && t[2] != U32 {
                return Err(Diagnostic::error(
                    m.types[2].span,
                    format!("the shift amount of `{op}` is `.u32`"),
                ));
            }
            (t[0], t[1], t[2], None)
        };
        let clamp = shift && m.has(CLAMP);
        if shift && m.has(CLAMP) == m.has(WRAP) {
            return Err(Diagnostic::error(
                i.opcode.span,
                format!("`{op}` needs `.clamp` or `.wrap`"),
            ));
        }
        let modes: &[Modifier] =
            if shift { &[ADD, MIN, MAX, CLAMP, WRAP] } else { &[ADD, MIN, MAX] };
        m.allow(modes)?;
        let second = secondary(m, op, modes)?;
        let ops = self.video_operands(i, &[3, 4])?;
        let dsel = &ops[0].selector;
        let merge = dsel.is_some();
        let with_c = second != Secondary::None || merge;
        if merge && second != Secondary::None {
            return Err(Diagnostic::error(
                dsel.as_ref().map_or(span, |s| s.span),
                "a destination selector merges into `c` and excludes `.add/.min/.max`",
            ));
        }
        // With `c` but neither, `c` is not used (optMerge without a selector, as ptxas
        // accepts it).
        if with_c && ops.len() == 3 {
            return Err(Diagnostic::error(
                span,
                format!("`{op}` with `.add/.min/.max` or a destination selector takes `c`"),
            ));
        }
        let (dpos, dlen) = scalar_part(dsel)?;
        let (apos, alen) = scalar_part(&ops[1].selector)?;
        let (bpos, blen) = scalar_part(&ops[2].selector)?;
        let dst = self.dst(&ops[0].operand, dty, false)?;
        let a = self.video_src(&ops[1], aty, span)?;
        let b = self.video_src(&ops[2], bty, span)?;
        let c = match ops.get(3) {
            Some(c) => Some(self.video_src(c, dty, span)?),
            None => None,
        };
        let mut e = Emit { l: self, span };
        let ta = e.part64(a, aty, apos, alen);
        let mut tmp = if shift {
            // The shift amount is always unsigned (§9.7.16.1.3).
            let tb = e.bfe(U32, b, bpos, blen);
            let tb = if clamp {
                e.bin(BinaryOp::Min, U32, tb, Value::Imm(32))
            } else {
                e.and(U32, tb, Value::Imm(31))
            };
            if op == Opcode::Vshr {
                e.bin(BinaryOp::Shr, S64, ta, tb)
            } else {
                let shifted = e.bin(BinaryOp::Shl, S64, ta, tb);
                if clamp {
                    // `a << 32` as `sign(a) << 40` (see the module documentation). The
                    // sign is `(a >> 63) | ((-a) >>> 63)`: lavapipe miscompiles signed
                    // compares of sign-extended values with constants (docs/status.md).
                    let negated = e.un(UnaryOp::Neg, S64, ta);
                    let positive = e.bin(BinaryOp::Shr, U64, negated, Value::Imm(63));
                    let negative = e.bin(BinaryOp::Shr, S64, ta, Value::Imm(63));
                    let sign = e.or(U64, negative, positive);
                    let big = e.bin(BinaryOp::Shl, S64, sign, Value::Imm(40));
                    let is32 = e.cmp(CmpOp::Eq, U32, tb, Value::Imm(32));
                    e.sel(S64, is32, big, shifted)
                } else {
                    shifted
                }
            }
        } else {
            let tb = e.part64(b, bty, bpos, blen);
            e.video_primary(op, cmp, S64, ta, tb)
        };
        // optSaturate: the range of the destination type, or of its selected part.
        if m.sat {
            tmp = e.clamp(tmp, dty.is_signed(), dlen);
        }
        let result = match (second, c) {
            (Secondary::None, Some(c)) if merge => {
                // optMerge: the low part of the result at the selector, `c` elsewhere.
                let part_mask = (1u64 << dlen) - 1;
                let low = e.lo32(tmp);
                let low = e.and(U32, low, Value::Imm(part_mask));
                let placed = e.bin(BinaryOp::Shl, U32, low, Value::Imm(dpos));
                let kept = e.and(U32, c, Value::Imm(!(part_mask << dpos) & 0xffff_ffff));
                e.or(U32, kept, placed)
            }
            (Secondary::None, _) | (_, None) => e.lo32(tmp),
            (second, Some(c)) => {
                let c64 = e.cvt(S64, dty, c);
                let r = match second {
                    Secondary::Add => e.add(S64, tmp, c64),
                    Secondary::Min => e.bin(BinaryOp::Min, S64, tmp, c64),
                    _ => e.bin(BinaryOp::Max, S64, tmp, c64),
                };
                e.lo32(r)
            }
        };
        e.mov(U32, dst, result);
        Ok(())
    }

    /// `vmad` (§9.7.16.1.4): `±(a*b) ± c`, `+1` under `.po`, scaled and saturated,
    /// exactly in 128 bits held as `(lo: u64, hi: s64)`.
    fn vmad(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let t = self.video_types(i, m, 3)?;
        let (aty, bty) = (t[1], t[2]);
        let scale = |s| Modifier::VideoScale(s);
        m.allow(&[scale(VideoScale::Po), scale(VideoScale::Shr7), scale(VideoScale::Shr15)])?;
        let po = m.has(scale(VideoScale::Po));
        let scale = match (m.has(scale(VideoScale::Shr7)), m.has(scale(VideoScale::Shr15))) {
            (false, false) => 0,
            (true, false) => 7,
            (false, true) => 15,
            _ => return Err(Diagnostic::error(i.opcode.span, "`.shr7` conflicts with `.shr15`")),
        };
        let ops = self.video_operands(i, &[4])?;
        if let Some(s) = &ops[0].selector {
            return Err(Diagnostic::error(s.span, "`vmad` takes no destination selector"));
        }
        if let Some(s) = &ops[3].selector {
            return Err(Diagnostic::error(s.span, "`c` of `vmad` takes no selector"));
        }
        let negate_product = ops[1].negated != ops[2].negated;
        let negate_c = ops[3].negated;
        if po && (ops[1].negated || ops[2].negated || negate_c) {
            return Err(Diagnostic::error(span, "`vmad.po` takes no negated operands"));
        }
        if negate_product && negate_c {
            // §9.7.16.1.4: PTX negates either the product or `c`.
            return Err(Diagnostic::error(span, "`vmad` negates either `a*b` or `c`, not both"));
        }
        if ops[0].negated {
            return Err(Diagnostic::error(
                ops[0].operand.span(),
                "a destination cannot be negated",
            ));
        }
        let signed_final = aty.is_signed() || bty.is_signed() || negate_product || negate_c;
        let (apos, alen) = scalar_part(&ops[1].selector)?;
        let (bpos, blen) = scalar_part(&ops[2].selector)?;
        let dst = self.dst(&ops[0].operand, U32, false)?;
        let a = self.video_src(&ops[1], aty, span)?;
        let b = self.video_src(&ops[2], bty, span)?;
        let c = self.video_src(&ops[3], U32, span)?;
        let mut e = Emit { l: self, span };
        let ta = e.part64(a, aty, apos, alen);
        let tb = e.part64(b, bty, bpos, blen);
        let mut lo = e.bin(BinaryOp::Mul, U64, ta, tb);
        let mut hi = e.bin(BinaryOp::MulHi, S64, ta, tb);
        let mut c = c;
        let lsb = po || negate_product || negate_c;
        if negate_product {
            lo = e.not(U64, lo);
            hi = e.not(U64, hi);
        } else if negate_c {
            c = e.not(U32, c);
        }
        let c_lo = e.cvt(S64, if signed_final { S32 } else { U32 }, c);
        let c_hi = e.bin(BinaryOp::Shr, S64, c_lo, Value::Imm(63));
        // tmp = p + c128 (+ 1): the low word and the carries into the high word.
        let sum = e.add(U64, lo, c_lo);
        let carry = e.cmp(CmpOp::Lt, U64, sum, lo);
        let carry = e.sel(U64, carry, Value::Imm(1), Value::Imm(0));
        hi = e.add(U64, hi, c_hi);
        hi = e.add(U64, hi, carry);
        lo = sum;
        if lsb {
            lo = e.add(U64, lo, Value::Imm(1));
            let wrapped = e.cmp(CmpOp::Eq, U64, lo, Value::Imm(0));
            let carry = e.sel(U64, wrapped, Value::Imm(1), Value::Imm(0));
            hi = e.add(U64, hi, carry);
        }
        if scale > 0 {
            let low = e.bin(BinaryOp::Shr, U64, lo, Value::Imm(scale));
            let high = e.bin(BinaryOp::Shl, U64, hi, Value::Imm(64 - scale));
            lo = e.or(U64, low, high);
            hi = e.bin(BinaryOp::Shr, S64, hi, Value::Imm(scale));
        }
        let mut result = e.lo32(lo);
        if m.sat {
            result = if signed_final {
                let above = e.cmp(CmpOp::Gt, S64, hi, Value::Imm(0));
                let zero_hi = e.cmp(CmpOp::Eq, S64, hi, Value::Imm(0));
                let big_lo = e.cmp(CmpOp::Gt, U64, lo, Value::Imm(0x7fff_ffff));
                let big = e.pred_and(zero_hi, big_lo);
                let too_high = e.pred_or(above, big);
                let below = e.cmp(CmpOp::Lt, S64, hi, Value::Imm(u64::MAX));
                let ones_hi = e.cmp(CmpOp::Eq, S64, hi, Value::Imm(u64::MAX));
                let small_lo = e.cmp(CmpOp::Lt, U64, lo, Value::Imm(0xffff_ffff_8000_0000));
                let small = e.pred_and(ones_hi, small_lo);
                let too_low = e.pred_or(below, small);
                let r = e.sel(U32, too_low, Value::Imm(0x8000_0000), result);
                e.sel(U32, too_high, Value::Imm(0x7fff_ffff), r)
            } else {
                // Unsigned operands, nothing negated: tmp < 2^64, so hi is 0.
                let r = e.bin(BinaryOp::Min, U64, lo, Value::Imm(0xffff_ffff));
                e.lo32(r)
            };
        }
        e.mov(U32, dst, result);
        Ok(())
    }

    /// `vadd2 … vset4` (§9.7.16.2).
    fn video_simd(
        &mut self,
        op: Opcode,
        lanes: usize,
        base: Option<Opcode>,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let width = 32 / lanes as u64;
        let (dty, aty, bty, cmp) = if base == Some(Opcode::Vset) {
            let t = self.video_types(i, m, 2)?;
            if m.sat {
                return Err(Diagnostic::error(i.opcode.span, format!("`{op}` takes no `.sat`")));
            }
            (U32, t[0], t[1], Some(video_cmp(i, m)?))
        } else {
            let t = self.video_types(i, m, 3)?;
            (t[0], t[1], t[2], None)
        };
        m.allow(&[ADD])?;
        let accumulate = secondary(m, op, &[ADD])? == Secondary::Add;
        if accumulate && m.sat {
            return Err(Diagnostic::error(
                i.opcode.span,
                "saturation cannot be used with the secondary accumulate operation `.add`",
            ));
        }
        let ops = self.video_operands(i, &[4])?;
        let mask = simd_mask(&ops[0].selector, lanes)?;
        let limit = 2 * lanes as u8;
        let identity: Vec<u8> = (0..lanes as u8).collect();
        let asel = match &ops[1].selector {
            Some(s) => simd_lanes(s, lanes, limit)?,
            None => identity.clone(),
        };
        let bsel = match &ops[2].selector {
            Some(s) => simd_lanes(s, lanes, limit)?,
            None => identity.iter().map(|k| k + lanes as u8).collect(),
        };
        if let Some(s) = &ops[3].selector {
            return Err(Diagnostic::error(s.span, format!("`c` of `{op}` takes no selector")));
        }
        let dst = self.dst(&ops[0].operand, dty, false)?;
        let a = self.video_src(&ops[1], aty, span)?;
        let b = self.video_src(&ops[2], bty, span)?;
        let c = self.video_src(&ops[3], dty, span)?;
        let mut e = Emit { l: self, span };
        let lane_mask = (1u64 << width) - 1;
        // The lanes not written keep `c`'s bits; `.add` starts from all of `c`.
        let kept: u64 = (0..lanes)
            .filter(|&k| !mask[k])
            .map(|k| lane_mask << (width * k as u64))
            .fold(0, |x, y| x | y);
        let mut result = if accumulate { c } else { e.and(U32, c, Value::Imm(kept)) };
        for k in (0..lanes).filter(|&k| mask[k]) {
            let va = e.pool_element([a, b], asel[k], aty, lanes);
            let vb = e.pool_element([a, b], bsel[k], bty, lanes);
            let mut t = if let Some(base) = base {
                e.video_primary(base, cmp, S32, va, vb)
            } else {
                // Halves rounded away from zero: (s + 1) >> 1 for s >= 0, s >> 1 below.
                let s = e.add(S32, va, vb);
                let nonneg = e.cmp(CmpOp::Ge, S32, s, Value::Imm(0));
                let up = e.sel(S32, nonneg, Value::Imm(1), Value::Imm(0));
                let s = e.add(S32, s, up);
                e.bin(BinaryOp::Shr, S32, s, Value::Imm(1))
            };
            if m.sat {
                t = e.clamp32(t, dty.is_signed(), width);
            }
            result = if accumulate {
                e.add(U32, result, t)
            } else {
                let t = e.and(U32, t, Value::Imm(lane_mask));
                let placed = e.bin(BinaryOp::Shl, U32, t, Value::Imm(width * k as u64));
                e.or(U32, result, placed)
            };
        }
        e.mov(U32, dst, result);
        Ok(())
    }
}

impl Emit<'_, '_> {
    /// The primary operation of `vadd vsub vabsdiff vmin vmax` and of `vset` (with
    /// `cmp`; 1 or 0), on values already extended to `ty`, which they cannot overflow.
    fn video_primary(
        &mut self,
        op: Opcode,
        cmp: Option<CmpOp>,
        ty: OpTy,
        a: Value,
        b: Value,
    ) -> Value {
        match op {
            Opcode::Vadd => self.add(ty, a, b),
            Opcode::Vsub => self.bin(BinaryOp::Sub, ty, a, b),
            Opcode::Vabsdiff => {
                let d = self.bin(BinaryOp::Sub, ty, a, b);
                self.un(UnaryOp::Abs, ty, d)
            }
            Opcode::Vmin => self.bin(BinaryOp::Min, ty, a, b),
            Opcode::Vmax => self.bin(BinaryOp::Max, ty, a, b),
            _ => {
                let p = self.cmp(cmp.unwrap_or(CmpOp::Eq), ty, a, b);
                self.sel(ty, p, Value::Imm(1), Value::Imm(0))
            }
        }
    }

    /// `len` bits of the 32-bit `v` from `pos`, extended to 64 by the sign of `ty`
    /// (partSelectSignExtend of §9.7.16.1).
    fn part64(&mut self, v: Value, ty: OpTy, pos: u64, len: u64) -> Value {
        let ty32 = if ty.is_signed() { S32 } else { U32 };
        let part = if len == 32 { v } else { self.bfe(ty32, v, pos, len) };
        self.cvt(S64, ty32, part)
    }

    /// extractAndSignExt of §9.7.16.2: element `sel` of the pool `{b, a}` of `lanes`
    /// elements per word, extended by the type of the operand that selects it.
    fn pool_element(&mut self, [a, b]: [Value; 2], sel: u8, ty: OpTy, lanes: usize) -> Value {
        let width = 32 / lanes as u64;
        let src = if usize::from(sel) < lanes { a } else { b };
        let pos = (u64::from(sel) % lanes as u64) * width;
        self.bfe(if ty.is_signed() { S32 } else { U32 }, src, pos, width)
    }

    /// `v` (64-bit) clamped to the signed or unsigned range of `bits` bits.
    fn clamp(&mut self, v: Value, signed: bool, bits: u64) -> Value {
        let (lo, hi) = range(signed, bits);
        let v = self.bin(BinaryOp::Max, S64, v, Value::Imm(lo as u64));
        self.bin(BinaryOp::Min, S64, v, Value::Imm(hi as u64))
    }

    /// `v` (32-bit) clamped to the signed or unsigned range of `bits` (< 32) bits.
    fn clamp32(&mut self, v: Value, signed: bool, bits: u64) -> Value {
        let (lo, hi) = range(signed, bits);
        let v = self.bin(BinaryOp::Max, S32, v, Value::Imm(lo as u32 as u64));
        self.bin(BinaryOp::Min, S32, v, Value::Imm(hi as u32 as u64))
    }
}

fn range(signed: bool, bits: u64) -> (i64, i64) {
    if signed {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else {
        (0, (1i64 << bits) - 1)
    }
}
