//! The decoded modifiers of one instruction as sema uses them.

use super::{decode, Modifier, Opcode, ScalarType, Spanned, StateSpace};
use crate::ir::{BinaryOp, BoolOp, CmpOp, Rounding};
use ptxvk_frontend::forms::{self, operands::OperandShape};

/// The decoded modifiers of one instruction ([`ptxvk_frontend::decode`]), with
/// rounding, comparisons, combines and product halves as IR values.
#[derive(Clone)]
pub(super) struct Mods {
    pub(super) opcode: Opcode,
    pub(super) types: Vec<Spanned<ScalarType>>,
    pub(super) space: Option<Spanned<StateSpace>>,
    pub(super) vector: Option<u32>,
    pub(super) rounding: Option<Spanned<(Rounding, bool)>>,
    pub(super) ftz: bool,
    pub(super) sat: bool,
    pub(super) cmp: Option<CmpOp>,
    pub(super) bool_op: Option<BoolOp>,
    pub(super) mul_part: Option<Spanned<BinaryOp>>,
    pub(super) details: Vec<Spanned<Modifier>>,
    /// A PTX ISA 1.x `mad.f32`, checked as `mad.rn.ftz.f32`, whose product is
    /// truncated ([`ptxvk_frontend::legacy::Legacy::TruncatedMad`]).
    pub(super) truncated_mad: bool,
    /// The operand shapes of the instruction's form ([`forms::operands`]), which
    /// `Resolver::args` resolves; empty for a form without a row there.
    pub(super) shapes: &'static [OperandShape],
    /// The opcode and modifiers without spans (spelled, the kind of a warp sync point,
    /// `ir::WarpSyncKind`).
    pub(super) qualifiers: decode::Qualifiers,
}

impl Mods {
    /// Whether the instruction has modifier `d`.
    pub(super) fn has(&self, d: Modifier) -> bool {
        self.details.iter().any(|x| x.value == d)
    }

    /// The first modifier `f` picks out, with its span.
    pub(super) fn find<T>(&self, f: impl Fn(Modifier) -> Option<T>) -> Option<Spanned<T>> {
        self.details.iter().find_map(|d| f(d.value).map(|v| Spanned::new(v, d.span)))
    }
}

impl From<decode::Modifiers> for Mods {
    fn from(m: decode::Modifiers) -> Mods {
        let shapes = forms::operands::shapes(&m).unwrap_or(&[]);
        let qualifiers = m.qualifiers();
        let rounding = m.rounding.map(|r| {
            let direction = match r.value.direction {
                decode::Direction::Nearest => Rounding::Nearest,
                decode::Direction::Zero => Rounding::Zero,
                decode::Direction::Down => Rounding::Down,
                decode::Direction::Up => Rounding::Up,
            };
            Spanned::new((direction, r.value.integer), r.span)
        });
        let bool_op = m.combine;
        let mul_part = m.mul_part.map(|p| {
            let op = match p.value {
                decode::MulPart::Lo => BinaryOp::Mul,
                decode::MulPart::Hi => BinaryOp::MulHi,
                decode::MulPart::Wide => BinaryOp::MulWide,
            };
            Spanned::new(op, p.span)
        });
        Mods {
            opcode: m.opcode,
            types: m.types,
            space: m.space,
            vector: m.vector,
            rounding,
            ftz: m.ftz,
            sat: m.sat,
            cmp: m.cmp,
            bool_op,
            mul_part,
            details: m.details,
            truncated_mad: false,
            shapes,
            qualifiers,
        }
    }
}
