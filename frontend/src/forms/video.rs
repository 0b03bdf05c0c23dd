//! The video instructions (PTX ISA 9.2 §9.7.16): the selectors and negations each
//! form's operands take ([`VideoOperands`], `check`, the rows being
//! `super::media`'s), and a checked instruction decoded ([`decode`]) into what its one
//! IR operation holds but the operands' values ([`Video`]): the type of each operand,
//! the parts and lanes its selector names, and the operation.
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
//!
//! The operation types ([`VideoArith`], [`VideoPart`], …) are also the IR's
//! (`ptxvk_lower::ir::video` re-exports them), as `decode::CmpOp` is.

use crate::ast::{Instruction, Operand, ScalarType};
use crate::decode::{CmpOp, Modifiers};
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode::{self, *};
use crate::modifier::{Clamp, Modifier, Reduction, VideoScale};
use crate::span::{Span, Spanned};

/// The secondary operations of the scalar video instructions, `.add .min .max`
/// (§9.7.16.1), of which the SIMD ones take `.add`.
pub(super) const SECONDARY: &[Modifier] = &[
    Modifier::Reduction(Reduction::Add),
    Modifier::Reduction(Reduction::Min),
    Modifier::Reduction(Reduction::Max),
];
/// `vmad`'s `.po`, `.shr7` and `.shr15` (§9.7.16.1.4).
pub(super) const SCALES: &[Modifier] = &[
    Modifier::VideoScale(VideoScale::Po),
    Modifier::VideoScale(VideoScale::Shr7),
    Modifier::VideoScale(VideoScale::Shr15),
];

/// The arithmetic both scalar and SIMD video instructions have: `vadd vsub vabsdiff vmin
/// vmax`, and `vset` with its comparison (one of `eq ne lt le gt ge`), which gives 1 or 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoArith {
    Add,
    Sub,
    Absdiff,
    Min,
    Max,
    Set(CmpOp),
}

/// The primary operation of a scalar video instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarVideoOp {
    Arith(VideoArith),
    /// `vshl`: the amount clamped to 32 (`.clamp`) or taken mod 32 (`.wrap`).
    Shl {
        clamp: bool,
    },
    /// `vshr`, arithmetic for a signed `a`.
    Shr {
        clamp: bool,
    },
}

/// The part of a 32-bit word a scalar video operand selects (`.b0`–`.b3`, `.h0`,
/// `.h1`, or none: the word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoPart {
    Word,
    /// Byte 0–3.
    Byte(u8),
    /// Half word 0–1.
    Half(u8),
}

impl VideoPart {
    /// Whether the byte or half word exists.
    pub fn valid(self) -> bool {
        match self {
            VideoPart::Word => true,
            VideoPart::Byte(k) => k < 4,
            VideoPart::Half(k) => k < 2,
        }
    }

    /// The bit position and width of the part.
    pub fn position_and_bits(self) -> (u32, u32) {
        match self {
            VideoPart::Word => (0, 32),
            VideoPart::Byte(k) => (8 * u32::from(k), 8),
            VideoPart::Half(k) => (16 * u32::from(k), 16),
        }
    }
}

/// The secondary operation of a scalar video instruction (`.add .min .max`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoSecondary {
    Add,
    Min,
    Max,
}

/// The adjustment of `vmad`'s sum (the ISA allows one of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadAdjust {
    None,
    /// `.po`: `a*b + c + 1`.
    PlusOne,
    /// `-a*b + c` (`a` or `b` negated).
    NegateProduct,
    /// `a*b - c`.
    NegateC,
}

/// The primary operation of a SIMD video instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdVideoOp {
    Arith(VideoArith),
    /// `vavrg2`, `vavrg4`: the average, rounded away from zero.
    Avrg,
}

/// A checked video instruction decoded: its operands `d, a, b{, c}` without selectors
/// or negations, each with the type it is written or read at (`.u32` or `.s32`), and
/// what it does with them.
#[derive(Clone, Debug)]
pub struct Video {
    pub operands: Vec<(Operand, ScalarType)>,
    pub kind: VideoKind,
}

/// The operation of a [`Video`].
#[derive(Clone, Debug)]
pub enum VideoKind {
    /// `vadd vsub vabsdiff vmin vmax vshl vshr vset` with the parts `a` and `b` select.
    Scalar { op: ScalarVideoOp, a: VideoPart, b: VideoPart, finish: Finish },
    /// `vmad` with the parts `a` and `b` select, its adjustment and its right shift (0,
    /// 7 for `.shr7` or 15 for `.shr15`).
    Mad { a: VideoPart, b: VideoPart, adjust: MadAdjust, shift: u8 },
    /// `vadd2 … vset4`: the lanes (2 or 4), the pool element of each lane's `a` and `b`
    /// (lane 0 first), the destination mask (bit `k`: lane `k` is written) and whether
    /// the lanes accumulate into `c` (`.add`).
    Simd {
        op: SimdVideoOp,
        lanes: u8,
        a_lanes: Vec<u8>,
        b_lanes: Vec<u8>,
        mask: u8,
        accumulate: bool,
    },
}

/// What a scalar video instruction does with `c`, when it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// Nothing: `c` is not used.
    Plain,
    /// The secondary operation with `c`.
    Secondary(VideoSecondary),
    /// optMerge into `c` at the destination selector.
    Merge(VideoPart),
}

/// The lanes of a SIMD video opcode; `None` for the others.
fn simd_lanes(op: Opcode) -> Option<u8> {
    match op {
        Vadd2 | Vsub2 | Vavrg2 | Vabsdiff2 | Vmin2 | Vmax2 | Vset2 => Some(2),
        Vadd4 | Vsub4 | Vavrg4 | Vabsdiff4 | Vmin4 | Vmax4 | Vset4 => Some(4),
        _ => None,
    }
}

/// The arithmetic of a scalar or SIMD video opcode, `vset`'s with its comparison
/// `cmp`; `None` for the others (`vshl`, `vavrg2`, …).
fn arith(op: Opcode, cmp: Option<CmpOp>) -> Option<VideoArith> {
    Some(match op {
        Vadd | Vadd2 | Vadd4 => VideoArith::Add,
        Vsub | Vsub2 | Vsub4 => VideoArith::Sub,
        Vabsdiff | Vabsdiff2 | Vabsdiff4 => VideoArith::Absdiff,
        Vmin | Vmin2 | Vmin4 => VideoArith::Min,
        Vmax | Vmax2 | Vmax4 => VideoArith::Max,
        Vset | Vset2 | Vset4 => VideoArith::Set(cmp.unwrap_or(CmpOp::Eq)),
        _ => return None,
    })
}

/// Whether `op` is a video instruction.
pub fn is_video(op: Opcode) -> bool {
    matches!(op, Vmad | Vshl | Vshr) || arith(op, None).is_some() || simd_lanes(op).is_some()
}

/// `.b0`–`.b3`, `.h0`, `.h1` of a scalar video operand: the part it selects
/// (§9.7.16.1); no selector is the whole word.
fn scalar_part(v: Option<&VideoOperand<'_>>) -> VideoPart {
    match v.and_then(VideoOperand::digits) {
        Some((true, d)) => VideoPart::Half(d[0]),
        Some((false, d)) => VideoPart::Byte(d[0]),
        None => VideoPart::Word,
    }
}

/// The lanes a SIMD selector names, lane 0 first (`.hxy`: lane 1 = half word x of
/// `{b, a}`, lane 0 = y); `first`, `first + 1`, … without one.
fn pool_elements(v: Option<&VideoOperand<'_>>, lanes: u8, first: u8) -> Vec<u8> {
    match v.and_then(VideoOperand::digits) {
        Some((_, digits)) => digits.iter().rev().copied().collect(),
        None => (first..first + lanes).collect(),
    }
}

/// Decodes a video instruction `i`, of opcode `op` with modifiers `details`, types
/// `types` and comparison `cmp`, whose form `check` and its row have checked (at
/// most one secondary operation or `.shr`, selectors in range); `None` for the other
/// instructions.
pub fn decode(
    i: &Instruction,
    op: Opcode,
    details: &[Spanned<Modifier>],
    types: &[Spanned<ScalarType>],
    cmp: Option<CmpOp>,
) -> Option<Video> {
    if !is_video(op) {
        return None;
    }
    let has = |d: Modifier| details.iter().any(|x| x.value == d);
    let secondary = details.iter().find_map(|d| match d.value {
        Modifier::Reduction(Reduction::Add) => Some(VideoSecondary::Add),
        Modifier::Reduction(Reduction::Min) => Some(VideoSecondary::Min),
        Modifier::Reduction(Reduction::Max) => Some(VideoSecondary::Max),
        _ => None,
    });
    // The types of `d`, `a` and `b`: `vset`'s destination is `.u32`, its two types
    // `a`'s and `b`'s; `c` has `d`'s type.
    let t = |k: usize| match types.get(k) {
        Some(t) if t.value == ScalarType::S32 => ScalarType::S32,
        _ => ScalarType::U32,
    };
    let set = matches!(op, Vset | Vset2 | Vset4);
    let [d, a, b] = if set { [ScalarType::U32, t(0), t(1)] } else { [t(0), t(1), t(2)] };
    let ops: Vec<VideoOperand<'_>> = i.operands.iter().map(video_operand).collect();
    let (kind, types) = if op == Vmad {
        let shift = if has(SCALES[1]) {
            7
        } else if has(SCALES[2]) {
            15
        } else {
            0
        };
        let negated = |k: usize| ops.get(k).is_some_and(|o| o.negated);
        let adjust = if has(SCALES[0]) {
            MadAdjust::PlusOne
        } else if negated(1) != negated(2) {
            MadAdjust::NegateProduct
        } else if negated(3) {
            MadAdjust::NegateC
        } else {
            MadAdjust::None
        };
        let (a_part, b_part) = (scalar_part(ops.get(1)), scalar_part(ops.get(2)));
        let kind = VideoKind::Mad { a: a_part, b: b_part, adjust, shift };
        (kind, [ScalarType::U32, a, b, ScalarType::U32])
    } else if let Some(lanes) = simd_lanes(op) {
        let op = arith(op, cmp).map_or(SimdVideoOp::Avrg, SimdVideoOp::Arith);
        // The destination mask names the lanes written, highest first; all without one.
        let mask = match ops.first().and_then(VideoOperand::digits) {
            Some((_, digits)) => digits.iter().fold(0, |m, k| m | 1 << k),
            None => (1 << lanes) - 1,
        };
        let a_lanes = pool_elements(ops.get(1), lanes, 0);
        let b_lanes = pool_elements(ops.get(2), lanes, lanes);
        let accumulate = secondary == Some(VideoSecondary::Add);
        (VideoKind::Simd { op, lanes, a_lanes, b_lanes, mask, accumulate }, [d, a, b, d])
    } else {
        let clamp = has(Modifier::Clamp(Clamp::Clamp));
        let op = match op {
            Vshl => ScalarVideoOp::Shl { clamp },
            Vshr => ScalarVideoOp::Shr { clamp },
            op => ScalarVideoOp::Arith(arith(op, cmp)?),
        };
        // A destination selector merges into `c`; with `c` but neither it nor a
        // secondary operation, `c` is not used.
        let merge = ops.first().is_some_and(|o| o.selector.is_some());
        let finish = match secondary {
            Some(s) => Finish::Secondary(s),
            None if merge => Finish::Merge(scalar_part(ops.first())),
            None => Finish::Plain,
        };
        let (a_part, b_part) = (scalar_part(ops.get(1)), scalar_part(ops.get(2)));
        (VideoKind::Scalar { op, a: a_part, b: b_part, finish }, [d, a, b, d])
    };
    let operands = ops.into_iter().zip(types).map(|(o, t)| (o.operand, t)).collect();
    Some(Video { operands, kind })
}

/// The operand forms of the video instructions (§9.7.16): which selectors
/// ([`selector`]) and negations each operand takes.
#[derive(Clone, Copy, Debug)]
pub enum VideoOperands {
    /// `d{.dsel}, a{.asel}, b{.bsel}{, c}` with `.b0`-`.b3`, `.h0`, `.h1`; a destination
    /// selector (a merge into `c`) or a secondary operation takes `c`, not both.
    Scalar,
    /// `vmad`: `d, {-}a{.asel}, {-}b{.bsel}, {-}c`, negating the product or `c`, and
    /// nothing with `.po`.
    Mad,
    /// The SIMD forms of this many lanes: a destination mask (`.h10`, `.b3210`, digits
    /// descending), a lane of `{b, a}` per digit of a source's selector, `c` plain.
    Simd(u8),
}

/// A video operand's selector (§9.7.16): whether it names half words (`.h`) or bytes
/// (`.b`), and its digits as written (highest lane first); `None` for a component
/// that is not a selector (`%tid.x`).
pub fn selector(component: &str) -> Option<(bool, Vec<u8>)> {
    let (half, digits) = match component.strip_prefix(".h") {
        Some(digits) => (true, digits),
        None => (false, component.strip_prefix(".b")?),
    };
    let all_digits = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    all_digits.then(|| (half, digits.bytes().map(|b| b - b'0').collect()))
}

/// A video operand (§9.7.16) split into the operand it reads or writes, its selector
/// (the component, when it is one, and its span) and whether it is negated (`vmad`).
/// Components that are not selectors (`%tid.x`) stay on the operand.
#[derive(Clone, Debug)]
pub struct VideoOperand<'a> {
    pub operand: Operand,
    pub selector: Option<(&'a str, Span)>,
    pub negated: bool,
    pub span: Span,
}

impl VideoOperand<'_> {
    /// The selector's kind and digits ([`selector`]).
    pub fn digits(&self) -> Option<(bool, Vec<u8>)> {
        self.selector.and_then(|(text, _)| selector(text))
    }
}

/// Splits a selector and a negation off `op`.
pub fn video_operand(op: &Operand) -> VideoOperand<'_> {
    let span = op.span();
    match op {
        Operand::Neg(inner, _) => VideoOperand { negated: true, ..video_operand(inner) },
        Operand::Name { name, component: Some(c) } if selector(&c.value).is_some() => {
            VideoOperand {
                operand: Operand::Name { name: name.clone(), component: None },
                selector: Some((&c.value, c.span)),
                negated: false,
                span,
            }
        }
        other => VideoOperand { operand: other.clone(), selector: None, negated: false, span },
    }
}

/// Checks the operands of a video instruction against `form` ([`VideoOperands`]).
pub(super) fn check(form: VideoOperands, i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let ops: Vec<VideoOperand<'_>> = i.operands.iter().map(video_operand).collect();
    let fail = |span, msg: String| Err(Diagnostic::error(span, msg));
    let op = m.opcode;
    let mad = matches!(form, VideoOperands::Mad);
    if let Some(neg) = ops.iter().find(|o| o.negated).filter(|_| !mad) {
        return fail(neg.span, "only `vmad` takes negated operands".into());
    }
    // The selector of operand `k` must satisfy `valid`; `what` describes a valid one.
    let check = |k: usize, valid: &dyn Fn(bool, &[u8]) -> bool, what: &str| match ops
        .get(k)
        .and_then(|o| o.selector)
    {
        Some((text, span)) if !selector(text).is_some_and(|(h, d)| valid(h, &d)) => {
            fail(span, format!("`{text}` is not {what}"))
        }
        _ => Ok(()),
    };
    let scalar = |half: bool, d: &[u8]| matches!(d, [k] if *k < if half { 2 } else { 4 });
    // Operand `k` takes no selector; `what` names it.
    let plain = |k: usize, what: String| match ops.get(k).and_then(|o| o.selector) {
        Some((_, span)) => fail(span, format!("{what} takes no selector")),
        None => Ok(()),
    };
    const SCALAR_SELECTOR: &str = "a scalar video selector (`.b0`-`.b3`, `.h0`, `.h1`)";
    match form {
        VideoOperands::Scalar => {
            let merge = ops[0].selector;
            let secondary = m.details.iter().any(|d| SECONDARY.contains(&d.value));
            if let Some((_, span)) = merge.filter(|_| secondary) {
                let msg = "a destination selector merges into `c` and excludes `.add/.min/.max`";
                return fail(span, msg.into());
            }
            if (secondary || merge.is_some()) && ops.len() == 3 {
                let msg =
                    format!("`{op}` with `.add/.min/.max` or a destination selector takes `c`");
                return fail(i.span, msg);
            }
            for k in 0..3 {
                check(k, &scalar, SCALAR_SELECTOR)?;
            }
            plain(3, format!("`c` of `{op}`"))?;
        }
        VideoOperands::Mad => {
            plain(0, "the destination of `vmad`".into())?;
            plain(3, "`c` of `vmad`".into())?;
            let negate_product = ops[1].negated != ops[2].negated;
            if m.has(SCALES[0]) && ops.iter().any(|o| o.negated) {
                return fail(i.span, "`vmad.po` takes no negated operands".into());
            }
            if negate_product && ops[3].negated {
                // §9.7.16.1.4: PTX negates either the product or `c`.
                return fail(i.span, "`vmad` negates either `a*b` or `c`, not both".into());
            }
            if ops[0].negated {
                return fail(ops[0].span, "a destination cannot be negated".into());
            }
            for k in 1..3 {
                check(k, &scalar, SCALAR_SELECTOR)?;
            }
        }
        VideoOperands::Simd(lanes) => {
            let half = lanes == 2;
            // A mask names its lanes, highest first.
            let mask = |h: bool, d: &[u8]| {
                h == half
                    && !d.is_empty()
                    && d.windows(2).all(|w| w[0] > w[1])
                    && d.iter().all(|&k| k < lanes)
            };
            check(0, &mask, &format!("a {lanes}-lane destination mask"))?;
            let source = |h: bool, d: &[u8]| {
                h == half && d.len() == usize::from(lanes) && d.iter().all(|&k| k < 2 * lanes)
            };
            let prefix = if half { ".h" } else { ".b" };
            let what = format!(
                "a {lanes}-lane selector: `{prefix}` and {lanes} digits below {}",
                2 * lanes
            );
            check(1, &source, &what)?;
            check(2, &source, &what)?;
            plain(3, format!("`c` of `{op}`"))?;
        }
    }
    Ok(())
}
