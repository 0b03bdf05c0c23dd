//! The video instructions (PTX ISA 9.2 §9.7.16): operands, types, selectors and
//! modifiers resolved and checked into one [`InstKind::Video`] each, which
//! `pass::expand_video` writes out in core integer operations.
//!
//! * Scalar (§9.7.16.1): `vadd vsub vabsdiff vmin vmax vshl vshr vset` select a byte,
//!   half word or word of each source (`.b0`–`.b3`, `.h0`/`.h1`), then either apply a
//!   secondary operation with `c` (`.add .min .max`) or merge into `c` at the
//!   destination selector.
//! * `vmad` (§9.7.16.1.4): `±(a*b) ± c (+1)`, `.shr7 .shr15`, `.sat`.
//! * SIMD (§9.7.16.2): `vadd2 … vset4` operate on two half words or four bytes chosen
//!   from the eight of `{b, a}` (`.h10`/`.b3210` of `a` and `.h32`/`.b7654` of `b` by
//!   default; selector digits name the high lane first), then accumulate the lanes of
//!   the destination mask into `c` (`.add`) or merge them into `c`.
//!
//! Corners the ISA leaves open: `vmad` negating both the product and `c` is rejected,
//! as ptxas rejects it; a scalar form given `c` without `.add/.min/.max` or a
//! destination selector ignores `c` (optMerge without a selector), as ptxas accepts it.

use ptxvk_frontend::ast::{self, Operand, ScalarType};
use ptxvk_frontend::modifier::{Clamp, Modifier, Reduction, VideoScale};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span, Spanned};

use super::{Lowerer, Mods};
use crate::ir::{
    CmpOp, InstKind, MadAdjust, OpTy, ScalarVideo, ScalarVideoOp, SimdVideo, SimdVideoOp, Value,
    VideoArith, VideoFinish, VideoMad, VideoOp, VideoPart, VideoSecondary, VideoSource,
};

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);

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

/// `.b0`–`.b3`, `.h0`, `.h1` of a scalar video operand: the part it selects
/// (§9.7.16.1); no selector is the whole word.
fn scalar_part(selector: &Option<Spanned<String>>) -> Result<VideoPart, Diagnostic> {
    let Some(s) = selector else { return Ok(VideoPart::Word) };
    // `.bN` is byte N, `.hN` half word N.
    let part = |prefix: char, count: u8| {
        let digit = s.value.strip_prefix('.')?.strip_prefix(prefix).filter(|d| d.len() == 1)?;
        digit.parse::<u8>().ok().filter(|&index| index < count)
    };
    let byte = part('b', 4).map(VideoPart::Byte);
    byte.or_else(|| part('h', 2).map(VideoPart::Half)).ok_or_else(|| {
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

/// The secondary operation (`.add .min .max`), if any; `ptxvk_frontend::forms::media`
/// has checked that there is at most one, of those the instruction takes.
fn secondary(m: &Mods) -> Option<VideoSecondary> {
    m.find(|d| match d {
        Modifier::Reduction(Reduction::Add) => Some(VideoSecondary::Add),
        Modifier::Reduction(Reduction::Min) => Some(VideoSecondary::Min),
        Modifier::Reduction(Reduction::Max) => Some(VideoSecondary::Max),
        _ => None,
    })
    .map(|s| s.value)
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

    /// The types of a video instruction (`.u32`/`.s32`, `ptxvk_frontend::forms::media`).
    fn video_types(m: &Mods) -> Vec<OpTy> {
        m.types.iter().map(|t| if t.value == ScalarType::S32 { S32 } else { U32 }).collect()
    }

    /// A source read as 32 bits.
    fn video_src(&mut self, v: &VideoOperand, ty: OpTy, span: Span) -> Result<Value, Diagnostic> {
        self.src(&v.operand, ty, false, span)
    }

    /// The operands, whose count the instruction table has checked.
    fn video_operands(i: &ast::Instruction) -> Result<Vec<VideoOperand>, Diagnostic> {
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
        let t = Self::video_types(m);
        let (dty, aty, bty) =
            if op == Opcode::Vset { (U32, t[0], t[1]) } else { (t[0], t[1], t[2]) };
        let clamp = shift && m.has(Modifier::Clamp(Clamp::Clamp));
        let second = secondary(m);
        let ops = Self::video_operands(i)?;
        let dsel = &ops[0].selector;
        let merge = dsel.is_some();
        if merge && second.is_some() {
            return Err(Diagnostic::error(
                dsel.as_ref().map_or(span, |s| s.span),
                "a destination selector merges into `c` and excludes `.add/.min/.max`",
            ));
        }
        // With `c` but neither, `c` is not used (optMerge without a selector, as ptxas
        // accepts it).
        if (second.is_some() || merge) && ops.len() == 3 {
            return Err(Diagnostic::error(
                span,
                format!("`{op}` with `.add/.min/.max` or a destination selector takes `c`"),
            ));
        }
        let dpart = scalar_part(dsel)?;
        let apart = scalar_part(&ops[1].selector)?;
        let bpart = scalar_part(&ops[2].selector)?;
        let dst = self.dst(&ops[0].operand, dty, false)?;
        let a = self.video_src(&ops[1], aty, span)?;
        let b = self.video_src(&ops[2], bty, span)?;
        let c = match ops.get(3) {
            Some(c) => Some(self.video_src(c, dty, span)?),
            None => None,
        };
        let finish = match (second, c) {
            (Some(second), Some(c)) => VideoFinish::Secondary(second, c),
            (None, Some(c)) if merge => VideoFinish::Merge(dpart, c),
            _ => VideoFinish::Plain,
        };
        let op = match op {
            Opcode::Vshl => ScalarVideoOp::Shl { clamp },
            Opcode::Vshr => ScalarVideoOp::Shr { clamp },
            op => ScalarVideoOp::Arith(arith(op, m.cmp)),
        };
        let source = |value, ty: OpTy, part| VideoSource { value, signed: ty.is_signed(), part };
        let video = ScalarVideo {
            op,
            dst,
            dst_signed: dty.is_signed(),
            a: source(a, aty, apart),
            b: source(b, bty, bpart),
            sat: m.sat,
            finish,
        };
        self.push(InstKind::Video(Box::new(VideoOp::Scalar(video))), span);
        Ok(())
    }

    /// `vmad` (§9.7.16.1.4): `±(a*b) ± c`, `+1` under `.po`, scaled and saturated.
    fn vmad(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let t = Self::video_types(m);
        let (aty, bty) = (t[1], t[2]);
        let scale = |s| m.has(Modifier::VideoScale(s));
        let po = scale(VideoScale::Po);
        let shift = if scale(VideoScale::Shr7) {
            7
        } else if scale(VideoScale::Shr15) {
            15
        } else {
            0
        };
        let ops = Self::video_operands(i)?;
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
        let adjust = match (po, negate_product, negate_c) {
            (true, ..) => MadAdjust::PlusOne,
            (_, true, _) => MadAdjust::NegateProduct,
            (_, _, true) => MadAdjust::NegateC,
            _ => MadAdjust::None,
        };
        let apart = scalar_part(&ops[1].selector)?;
        let bpart = scalar_part(&ops[2].selector)?;
        let dst = self.dst(&ops[0].operand, U32, false)?;
        let a = self.video_src(&ops[1], aty, span)?;
        let b = self.video_src(&ops[2], bty, span)?;
        let c = self.video_src(&ops[3], U32, span)?;
        let source = |value, ty: OpTy, part| VideoSource { value, signed: ty.is_signed(), part };
        let (a, b) = (source(a, aty, apart), source(b, bty, bpart));
        let video = VideoMad { dst, a, b, c, adjust, shift, sat: m.sat };
        self.push(InstKind::Video(Box::new(VideoOp::Mad(video))), span);
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
        let t = Self::video_types(m);
        let (dty, aty, bty) =
            if base == Some(Opcode::Vset) { (U32, t[0], t[1]) } else { (t[0], t[1], t[2]) };
        let accumulate = secondary(m) == Some(VideoSecondary::Add);
        let ops = Self::video_operands(i)?;
        let mask = simd_mask(&ops[0].selector, lanes)?;
        let limit = 2 * lanes as u8;
        let identity: Vec<u8> = (0..lanes as u8).collect();
        let a_lanes = match &ops[1].selector {
            Some(s) => simd_lanes(s, lanes, limit)?,
            None => identity.clone(),
        };
        let b_lanes = match &ops[2].selector {
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
        let video = SimdVideo {
            op: base.map_or(SimdVideoOp::Avrg, |base| SimdVideoOp::Arith(arith(base, m.cmp))),
            lanes: lanes as u8,
            dst,
            signed: [dty.is_signed(), aty.is_signed(), bty.is_signed()],
            a,
            b,
            c,
            a_lanes,
            b_lanes,
            mask: (0..lanes).filter(|&k| mask[k]).fold(0, |m, k| m | 1 << k),
            sat: m.sat,
            accumulate,
        };
        self.push(InstKind::Video(Box::new(VideoOp::Simd(video))), span);
        Ok(())
    }
}

/// The arithmetic of a scalar video opcode, `vset`'s with its comparison `cmp`.
fn arith(op: Opcode, cmp: Option<CmpOp>) -> VideoArith {
    match op {
        Opcode::Vadd => VideoArith::Add,
        Opcode::Vsub => VideoArith::Sub,
        Opcode::Vabsdiff => VideoArith::Absdiff,
        Opcode::Vmin => VideoArith::Min,
        Opcode::Vmax => VideoArith::Max,
        _ => VideoArith::Set(cmp.unwrap_or(CmpOp::Eq)),
    }
}
