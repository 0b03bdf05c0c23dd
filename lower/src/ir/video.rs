//! The video instructions (PTX ISA 9.2 §9.7.16) as one IR operation each,
//! [`super::InstKind::Video`]: what semantic analysis resolved (operands, types,
//! selectors, modifiers), before `pass::expand_video` writes each out in core integer
//! operations. Every source and the destination is 32-bit.

use super::{RegId, Value};
/// The operation types, decoded by the frontend's forms
/// (`ptxvk_frontend::forms::video`).
pub use ptxvk_frontend::forms::video::{
    MadAdjust, ScalarVideoOp, SimdVideoOp, VideoArith, VideoPart, VideoSecondary,
};

/// A video instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VideoOp {
    /// `vadd vsub vabsdiff vmin vmax vshl vshr vset` (§9.7.16.1.1-3).
    Scalar(ScalarVideo),
    /// `vmad` (§9.7.16.1.4).
    Mad(VideoMad),
    /// `vadd2 … vset4` (§9.7.16.2).
    Simd(SimdVideo),
}

impl VideoOp {
    /// The destination register.
    pub fn dst(&self) -> RegId {
        match self {
            VideoOp::Scalar(s) => s.dst,
            VideoOp::Mad(m) => m.dst,
            VideoOp::Simd(s) => s.dst,
        }
    }

    /// What is wrong with the operation's fields, if anything (the verifier's check):
    /// SIMD lanes and selectors in range, a merge into a byte or half word, `vmad`
    /// shifting by 0, 7 or 15.
    pub fn malformed(&self) -> Option<&'static str> {
        match self {
            VideoOp::Scalar(s) if s.finish_part() == Some(VideoPart::Word) => {
                Some("a video merge into a whole word")
            }
            VideoOp::Scalar(s) => [s.a.part, s.b.part]
                .into_iter()
                .chain(s.finish_part())
                .any(|p| !p.valid())
                .then_some("a video selector out of range"),
            VideoOp::Mad(m) if ![0, 7, 15].contains(&m.shift) => {
                Some("a vmad shift not 0, 7 or 15")
            }
            VideoOp::Mad(m) => {
                (!m.a.part.valid() || !m.b.part.valid()).then_some("a video selector out of range")
            }
            VideoOp::Simd(s) => {
                let lanes = usize::from(s.lanes);
                let selects =
                    |sel: &[u8]| sel.len() == lanes && sel.iter().all(|&e| e < 2 * s.lanes);
                let ok = matches!(s.lanes, 2 | 4)
                    && selects(&s.a_lanes)
                    && selects(&s.b_lanes)
                    && s.mask >> s.lanes == 0;
                (!ok).then_some("SIMD video lanes, selectors or mask out of range")
            }
        }
    }

    /// Calls `f` on every register the operation names, to rewrite it
    /// (`pass::inline`'s renaming).
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        let value = |v: &mut Value, f: &mut dyn FnMut(&mut RegId)| {
            if let Value::Reg(r) = v {
                f(r)
            }
        };
        match self {
            VideoOp::Scalar(s) => {
                f(&mut s.dst);
                value(&mut s.a.value, f);
                value(&mut s.b.value, f);
                if let VideoFinish::Secondary(_, c) | VideoFinish::Merge(_, c) = &mut s.finish {
                    value(c, f);
                }
            }
            VideoOp::Mad(m) => {
                f(&mut m.dst);
                [&mut m.a.value, &mut m.b.value, &mut m.c].into_iter().for_each(|v| value(v, f));
            }
            VideoOp::Simd(s) => {
                f(&mut s.dst);
                [&mut s.a, &mut s.b, &mut s.c].into_iter().for_each(|v| value(v, f));
            }
        }
    }

    /// The source values, `a`, `b` and `c` when given.
    pub fn sources(&self) -> Vec<Value> {
        match self {
            VideoOp::Scalar(s) => {
                let c = match s.finish {
                    VideoFinish::Plain => None,
                    VideoFinish::Secondary(_, c) | VideoFinish::Merge(_, c) => Some(c),
                };
                [s.a.value, s.b.value].into_iter().chain(c).collect()
            }
            VideoOp::Mad(m) => vec![m.a.value, m.b.value, m.c],
            VideoOp::Simd(s) => vec![s.a, s.b, s.c],
        }
    }
}

/// A scalar source: the value, whether its type is `.s32`, and the part selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VideoSource {
    pub value: Value,
    pub signed: bool,
    pub part: VideoPart,
}

/// What a scalar video instruction does with its (saturated) result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoFinish {
    /// Its low 32 bits (also when PTX gives `c` without a use for it).
    Plain,
    /// The secondary operation with `c`, `c` read at the destination type.
    Secondary(VideoSecondary, Value),
    /// optMerge: the low byte or half word of the result at the destination selector
    /// (never [`VideoPart::Word`]), `c`'s bits elsewhere.
    Merge(VideoPart, Value),
}

/// `vadd vsub vabsdiff vmin vmax vshl vshr vset` (§9.7.16.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarVideo {
    pub op: ScalarVideoOp,
    pub dst: RegId,
    /// The destination type is `.s32` (never for `vset`, whose result is unsigned).
    pub dst_signed: bool,
    pub a: VideoSource,
    /// The shift amount of `vshl`/`vshr` is always unsigned.
    pub b: VideoSource,
    /// `.sat`: clamped to the destination type's range, or to that of the merged part.
    pub sat: bool,
    pub finish: VideoFinish,
}

impl ScalarVideo {
    /// The destination selector of a merge.
    pub fn finish_part(&self) -> Option<VideoPart> {
        match self.finish {
            VideoFinish::Merge(p, _) => Some(p),
            _ => None,
        }
    }
}

/// `vmad` (§9.7.16.1.4): `±(a*b) ± c (+1)`, shifted right by `shift` (0, 7 for `.shr7`
/// or 15 for `.shr15`), `.sat` clamping to the 32-bit range of the final sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VideoMad {
    pub dst: RegId,
    pub a: VideoSource,
    pub b: VideoSource,
    pub c: Value,
    pub adjust: MadAdjust,
    pub shift: u8,
    pub sat: bool,
}

impl VideoMad {
    /// Whether the result is signed: a signed operand, or a negation (§9.7.16.1.4).
    pub fn signed_final(&self) -> bool {
        self.a.signed
            || self.b.signed
            || matches!(self.adjust, MadAdjust::NegateProduct | MadAdjust::NegateC)
    }
}

/// `vadd2 … vset4` (§9.7.16.2): `lanes` (2 or 4) half words or bytes of the pool
/// `{b, a}` (lane `k` of `a` is element `k`, of `b` element `lanes + k`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimdVideo {
    pub op: SimdVideoOp,
    pub lanes: u8,
    pub dst: RegId,
    /// Whether the destination, `a` and `b` types are `.s32` (`vset`'s destination is
    /// unsigned).
    pub signed: [bool; 3],
    pub a: Value,
    pub b: Value,
    pub c: Value,
    /// The pool element of each lane's `a` and `b` operand, lane 0 first.
    pub a_lanes: Vec<u8>,
    pub b_lanes: Vec<u8>,
    /// Bit `k`: lane `k` of the destination is written (the destination mask).
    pub mask: u8,
    /// `.sat`: each lane clamped to the destination type's lane range.
    pub sat: bool,
    /// `.add`: the written lanes' results summed into `c`; else merged into `c`.
    pub accumulate: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::InstKind;

    /// The verifier refuses fields the operation cannot have.
    #[test]
    fn the_verifier_refuses_malformed_video_operations() {
        let text = include_str!("../../tests/passes/expand_video_results.ir");
        let mut k = crate::text::parse(text).expect("parses").remove(0);
        assert!(crate::verify::run(&k).is_ok());
        for inst in k.blocks.iter_mut().flat_map(|b| &mut b.insts) {
            match &mut inst.kind {
                InstKind::Video(op) => match op.as_mut() {
                    VideoOp::Scalar(s) => s.a.part = VideoPart::Half(2),
                    VideoOp::Mad(m) => m.shift = 8,
                    VideoOp::Simd(s) => s.a_lanes.push(0),
                },
                _ => continue,
            }
        }
        let errors = crate::verify::run(&k).expect_err("malformed");
        assert_eq!(errors.len(), 24, "{errors:?}");
    }
}
