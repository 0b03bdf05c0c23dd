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

use ptxvk_frontend::ast::{self, ScalarType};
use ptxvk_frontend::forms::media::{video_operand, VideoOperand};
use ptxvk_frontend::modifier::{Clamp, Modifier, Reduction, VideoScale};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span};

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

/// The types of the destination, `a` and `b` of a video instruction (`.u32`/`.s32`,
/// `ptxvk_frontend::forms::media`): `vset`'s destination is `.u32`, its two types `a`'s
/// and `b`'s.
fn video_types(m: &Mods, set: bool) -> (OpTy, OpTy, OpTy) {
    let t: Vec<OpTy> =
        m.types.iter().map(|t| if t.value == ScalarType::S32 { S32 } else { U32 }).collect();
    let at = |k: usize| t.get(k).copied().unwrap_or(U32);
    if set {
        (U32, at(0), at(1))
    } else {
        (at(0), at(1), at(2))
    }
}

/// A source of type `ty` and the part of it its selector names.
fn source(value: Value, ty: OpTy, part: VideoPart) -> VideoSource {
    VideoSource { value, signed: ty.is_signed(), part }
}

/// `.b0`–`.b3`, `.h0`, `.h1` of a scalar video operand (as
/// `ptxvk_frontend::forms::media` has checked them): the part it selects (§9.7.16.1);
/// no selector is the whole word.
fn scalar_part(v: &VideoOperand<'_>) -> VideoPart {
    match &v.digits() {
        Some((true, d)) => VideoPart::Half(d[0]),
        Some((false, d)) => VideoPart::Byte(d[0]),
        None => VideoPart::Word,
    }
}

/// The lanes a SIMD selector names, lane 0 first (`.hxy`: lane 1 = half word x of
/// `{b, a}`, lane 0 = y); `first`, `first + 1`, … without one.
fn simd_lanes(v: &VideoOperand<'_>, lanes: u8, first: u8) -> Vec<u8> {
    match &v.digits() {
        Some((_, digits)) => digits.iter().rev().copied().collect(),
        None => (first..first + lanes).collect(),
    }
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
            self.video_simd(lanes, base, i, m)
        } else {
            self.video_scalar(op, i, m)
        })
    }

    /// A source read as 32 bits.
    fn video_src(
        &mut self,
        v: &VideoOperand<'_>,
        ty: OpTy,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        self.src(&v.operand, ty, false, span)
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
        let (dty, aty, bty) = video_types(m, op == Opcode::Vset);
        let clamp = shift && m.has(Modifier::Clamp(Clamp::Clamp));
        let second = secondary(m);
        let ops: Vec<VideoOperand<'_>> = i.operands.iter().map(video_operand).collect();
        // A destination selector merges into `c`; with `c` but neither it nor a
        // secondary operation, `c` is not used (optMerge without a selector, as ptxas
        // accepts it).
        let merge = ops[0].selector.is_some();
        let [dpart, apart, bpart] = [0, 1, 2].map(|k| scalar_part(&ops[k]));
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
        let (_, aty, bty) = video_types(m, false);
        let po = m.has(Modifier::VideoScale(VideoScale::Po));
        // At most one of `.shr7`, `.shr15` (`ptxvk_frontend::forms::media`).
        let shift = m.find(|d| match d {
            Modifier::VideoScale(VideoScale::Shr7) => Some(7),
            Modifier::VideoScale(VideoScale::Shr15) => Some(15),
            _ => None,
        });
        let shift = shift.map_or(0, |s| s.value);
        let ops: Vec<VideoOperand<'_>> = i.operands.iter().map(video_operand).collect();
        let negate_product = ops[1].negated != ops[2].negated;
        let negate_c = ops[3].negated;
        let adjust = match (po, negate_product, negate_c) {
            (true, ..) => MadAdjust::PlusOne,
            (_, true, _) => MadAdjust::NegateProduct,
            (_, _, true) => MadAdjust::NegateC,
            _ => MadAdjust::None,
        };
        let (apart, bpart) = (scalar_part(&ops[1]), scalar_part(&ops[2]));
        let dst = self.dst(&ops[0].operand, U32, false)?;
        let a = self.video_src(&ops[1], aty, span)?;
        let b = self.video_src(&ops[2], bty, span)?;
        let c = self.video_src(&ops[3], U32, span)?;
        let (a, b) = (source(a, aty, apart), source(b, bty, bpart));
        let video = VideoMad { dst, a, b, c, adjust, shift, sat: m.sat };
        self.push(InstKind::Video(Box::new(VideoOp::Mad(video))), span);
        Ok(())
    }

    /// `vadd2 … vset4` (§9.7.16.2).
    fn video_simd(
        &mut self,
        lanes: usize,
        base: Option<Opcode>,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let (dty, aty, bty) = video_types(m, base == Some(Opcode::Vset));
        let accumulate = secondary(m) == Some(VideoSecondary::Add);
        let ops: Vec<VideoOperand<'_>> = i.operands.iter().map(video_operand).collect();
        // The destination mask names the lanes written, highest first; all without one.
        let mask = match &ops[0].digits() {
            Some((_, digits)) => digits.iter().fold(0, |m, k| m | 1 << k),
            None => (1 << lanes) - 1,
        };
        let lanes = lanes as u8;
        let (a_lanes, b_lanes) = (simd_lanes(&ops[1], lanes, 0), simd_lanes(&ops[2], lanes, lanes));
        let dst = self.dst(&ops[0].operand, dty, false)?;
        let a = self.video_src(&ops[1], aty, span)?;
        let b = self.video_src(&ops[2], bty, span)?;
        let c = self.video_src(&ops[3], dty, span)?;
        let video = SimdVideo {
            op: base.map_or(SimdVideoOp::Avrg, |base| SimdVideoOp::Arith(arith(base, m.cmp))),
            lanes,
            dst,
            signed: [dty.is_signed(), aty.is_signed(), bty.is_signed()],
            a,
            b,
            c,
            a_lanes,
            b_lanes,
            mask,
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
