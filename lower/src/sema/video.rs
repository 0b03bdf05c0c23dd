//! The video instructions (PTX ISA 9.2 §9.7.16): each, as
//! `ptxvk_frontend::forms::video` has checked and decoded it (the operands' types,
//! selectors and negations, the secondary operation, `vmad`'s adjustment), resolved
//! into one [`InstKind::Video`], which `pass::expand_video` writes out in core integer
//! operations.

use ptxvk_frontend::ast::{self, ScalarType};
pub(super) use ptxvk_frontend::forms::video::is_video;
use ptxvk_frontend::forms::video::{decode, Finish, Video, VideoKind};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span};

use super::{Mods, Resolver};
use crate::ir::{
    InstKind, OpTy, ScalarVideo, SimdVideo, VideoFinish, VideoMad, VideoOp, VideoSource,
};

impl Resolver<'_> {
    /// The video instructions; `None` for other instructions.
    pub(super) fn video(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        let video = decode(i, op, &m.details, &m.types, m.cmp)?;
        Some(self.video_op(video, m.sat, i.span))
    }

    /// Resolves the operands of `v` (the destination first, then the sources in order)
    /// into its IR operation, saturating with `sat`.
    fn video_op(&mut self, v: Video, sat: bool, span: Span) -> Result<(), Diagnostic> {
        let ty = |t: ScalarType| if t == ScalarType::S32 { OpTy::S(32) } else { OpTy::U(32) };
        let Some(((d, d_ty), sources)) = v.operands.split_first() else {
            return Err(Diagnostic::internal(span, "a video instruction the forms refuse"));
        };
        let dst = self.dst(d, ty(*d_ty), false)?;
        let mut values = Vec::new();
        for (o, t) in sources {
            values.push((self.src(o, ty(*t), false, span)?, *t == ScalarType::S32));
        }
        let (Some(&(a, a_signed)), Some(&(b, b_signed))) = (values.first(), values.get(1)) else {
            return Err(Diagnostic::internal(span, "video operands the forms refuse"));
        };
        let c = values.get(2).map(|c| c.0);
        let dst_signed = *d_ty == ScalarType::S32;
        let video = match (v.kind, c) {
            (VideoKind::Scalar { op, a: a_part, b: b_part, finish }, c) => {
                let finish = match (finish, c) {
                    (Finish::Secondary(s), Some(c)) => VideoFinish::Secondary(s, c),
                    (Finish::Merge(part), Some(c)) => VideoFinish::Merge(part, c),
                    _ => VideoFinish::Plain,
                };
                let a = VideoSource { value: a, signed: a_signed, part: a_part };
                let b = VideoSource { value: b, signed: b_signed, part: b_part };
                VideoOp::Scalar(ScalarVideo { op, dst, dst_signed, a, b, sat, finish })
            }
            (VideoKind::Mad { a: a_part, b: b_part, adjust, shift }, Some(c)) => {
                let a = VideoSource { value: a, signed: a_signed, part: a_part };
                let b = VideoSource { value: b, signed: b_signed, part: b_part };
                VideoOp::Mad(VideoMad { dst, a, b, c, adjust, shift, sat })
            }
            (VideoKind::Simd { op, lanes, a_lanes, b_lanes, mask, accumulate }, Some(c)) => {
                let signed = [dst_signed, a_signed, b_signed];
                VideoOp::Simd(SimdVideo {
                    op,
                    lanes,
                    dst,
                    signed,
                    a,
                    b,
                    c,
                    a_lanes,
                    b_lanes,
                    mask,
                    sat,
                    accumulate,
                })
            }
            (_, None) => return Err(Diagnostic::internal(span, "a video `c` the forms require")),
        };
        self.push(InstKind::Video(Box::new(video)), span);
        Ok(())
    }
}
