//! The `mma` forms ptxvk implements (PTX ISA 9.2 §9.7.14.5.14): a shape `.mMnNkK` and
//! the types `.dtype.atype.btype.ctype` of a combination sm_80–sm_90 have
//! ([`super::media::Check::MmaShapeTypes`]); and the `wmma` forms (§9.7.14.4,
//! [`super::media::Check::WmmaShapeTypes`]).

use crate::ast::{Instruction, ScalarType};
use crate::decode::{BoolOp, Direction, Modifiers};
use crate::diagnostic::Diagnostic;
use crate::modifier::{Format, Fragment, Layout, Modifier, Population, Shape, WmmaOp};
use crate::span::{Span, Spanned};

/// An `mma` input type (A, B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Input {
    F16,
    Bf16,
    Tf32,
    /// `.e4m3`, `.e5m2`.
    Fp8,
    F64,
    /// `.s8 .u8 .s4 .u4` by width.
    Int(u8),
    B1,
}

/// An `mma` accumulator type (C, D).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Acc {
    F16,
    F32,
    F64,
    S32,
}

/// A type modifier of a matrix instruction: a scalar type, or a format no register has
/// (`.e4m3`, `.s4`, `.b1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeName {
    Scalar(ScalarType),
    Format(Format),
}

impl TypeName {
    pub fn spelling(self) -> &'static str {
        match self {
            TypeName::Scalar(t) => t.directive(),
            TypeName::Format(f) => f.spelling(),
        }
    }

    fn input(self) -> Option<Input> {
        use ScalarType::*;
        let input = match self {
            TypeName::Scalar(F16) => Input::F16,
            TypeName::Scalar(Bf16) => Input::Bf16,
            TypeName::Scalar(Tf32) => Input::Tf32,
            TypeName::Format(Format::E4m3 | Format::E5m2) => Input::Fp8,
            TypeName::Scalar(F64) => Input::F64,
            TypeName::Scalar(S8 | U8) => Input::Int(8),
            TypeName::Format(Format::S4 | Format::U4) => Input::Int(4),
            TypeName::Format(Format::B1) => Input::B1,
            _ => return None,
        };
        Some(input)
    }

    fn acc(self) -> Option<Acc> {
        Some(match self {
            TypeName::Scalar(ScalarType::F16) => Acc::F16,
            TypeName::Scalar(ScalarType::F32) => Acc::F32,
            TypeName::Scalar(ScalarType::F64) => Acc::F64,
            TypeName::Scalar(ScalarType::S32) => Acc::S32,
            _ => return None,
        })
    }
}

/// The type modifiers of `m` in source order, formats included, with their spans.
fn spanned_type_names(m: &Modifiers) -> Vec<(TypeName, Span)> {
    let formats = m.details.iter().filter_map(|d| match d.value {
        Modifier::Format(f) => Some((TypeName::Format(f), d.span)),
        _ => None,
    });
    let mut types: Vec<(TypeName, Span)> =
        m.types.iter().map(|t| (TypeName::Scalar(t.value), t.span)).chain(formats).collect();
    types.sort_by_key(|t| t.1.start);
    types
}

/// The type modifiers of an instruction with types `types` and other modifiers
/// `details`, in source order, formats included.
pub fn type_names(details: &[Spanned<Modifier>], types: &[Spanned<ScalarType>]) -> Vec<TypeName> {
    let formats = details.iter().filter_map(|d| match d.value {
        Modifier::Format(f) => Some((TypeName::Format(f), d.span.start)),
        _ => None,
    });
    let mut all: Vec<(TypeName, u32)> =
        types.iter().map(|t| (TypeName::Scalar(t.value), t.span.start)).chain(formats).collect();
    all.sort_by_key(|t| t.1);
    all.into_iter().map(|t| t.0).collect()
}

fn unsupported(span: Span, what: &str, why: &str) -> Diagnostic {
    Diagnostic::error(span, format!("{what} is not supported yet")).with_note(why.to_string())
}

/// Whether sm_80–sm_90 have `mma` with this shape, inputs `a` (B's is the same kind)
/// and accumulators `d`, `c`, and `.popc` (`counted`) for `.b1`.
fn exists((m, n, k): (u32, u32, u32), a: Input, d: Acc, c: Acc, counted: bool) -> bool {
    // D and C have the same type (ptxas: ".dtype must be '.f16' when .ctype is '.f16'").
    let float_acc = d == c && matches!(d, Acc::F32 | Acc::F16);
    let f32_acc = d == Acc::F32 && c == Acc::F32;
    let s32 = d == Acc::S32 && c == Acc::S32;
    match (a, m, n, k) {
        (Input::F16, 16, 8, 8 | 16) => float_acc,
        (Input::Bf16, 16, 8, 8 | 16) => f32_acc,
        (Input::Tf32, 16, 8, 4 | 8) => f32_acc,
        (Input::Fp8, 16, 8, 16 | 32) => float_acc,
        (Input::F64, 8, 8, 4) | (Input::F64, 16, 8, 4 | 8 | 16) => d == Acc::F64 && c == Acc::F64,
        (Input::Int(8), 8, 8, 16) | (Input::Int(8), 16, 8, 16 | 32) => s32,
        (Input::Int(4), 8, 8, 32) | (Input::Int(4), 16, 8, 32 | 64) => s32,
        (Input::B1, 8, 8, 128) | (Input::B1, 16, 8, 128 | 256) => s32 && counted,
        _ => false,
    }
}

/// Checks `mma`'s shape and types: one shape with a `k`, four types, C and D
/// accumulators, A and B inputs differing only in signedness or FP8 encoding, `.b1`
/// exactly with `.and.popc`/`.xor.popc`, and a combination sm_80–sm_90 have.
pub(super) fn check(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let span = i.span;
    let shape = m.find(|d| match d {
        Modifier::Shape(s) => Some(s),
        _ => None,
    });
    let Some(shape) = shape else {
        return Err(Diagnostic::error(span, "`mma` needs a shape such as `.m16n8k16`"));
    };
    let (mm, nn, kk) = match shape.value {
        Shape { m, n, k: Some(k) } => (m, n, k),
        s => return Err(Diagnostic::error(shape.span, format!("unknown `mma` shape `{s}`"))),
    };
    let types = spanned_type_names(m);
    let [(d, _), (a, a_span), (b, _), (c, _)] = types.as_slice() else {
        let unknown = types.iter().find(|(t, _)| t.input().is_none() && t.acc().is_none());
        if let Some((t, s)) = unknown {
            return Err(unsupported(
                *s,
                &format!("`mma` with `{}`", t.spelling()),
                "sparse (`.sp`), block-scaled (`.kind`, `.block_scale`) and sm_100 forms are \
                 not implemented",
            ));
        }
        return Err(Diagnostic::error(span, "`mma` needs four types: `.dtype.atype.btype.ctype`"));
    };
    let types_text: String = [d, a, b, c].iter().map(|t| t.spelling()).collect();
    let (Some(d), Some(c)) = (d.acc(), c.acc()) else {
        return Err(Diagnostic::error(
            span,
            format!("`mma{types_text}`: the accumulators are not .f16, .f32, .f64 or .s32"),
        ));
    };
    let (Some(ae), Some(be)) = (a.input(), b.input()) else {
        return Err(unsupported(
            *a_span,
            &format!("`mma` with `{}{}` inputs", a.spelling(), b.spelling()),
            "the sm_100 inputs (`.e2m1`, `.e3m2`, `.e2m3`) are not implemented",
        ));
    };
    // A and B may differ only in signedness or FP8 encoding (one kind, same width).
    if ae != be {
        return Err(Diagnostic::error(
            span,
            format!(
                "`mma`: A type `{}` and B type `{}` do not go together",
                a.spelling(),
                b.spelling()
            ),
        ));
    }
    let combined = matches!(m.combine, Some(BoolOp::And | BoolOp::Xor));
    let counted = combined && m.has(Modifier::Population(Population::Popc));
    if (ae == Input::B1) != counted {
        return Err(Diagnostic::error(
            span,
            "`.b1` `mma` is `.and.popc` or `.xor.popc`, and only it takes them",
        ));
    }
    if !exists((mm, nn, kk), ae, d, c, counted) {
        return Err(unsupported(
            span,
            &format!("`mma.m{mm}n{nn}k{kk}` with `{types_text}`"),
            "not an sm_80–sm_90 shape and type combination (`m8n8k4` with f16 is the sm_70 \
             quad-pair layout, which is not implemented)",
        ));
    }
    Ok(())
}

/// The WMMA shapes ptxvk implements (§9.7.14.4.1, without the sub-byte ones).
pub const WMMA_SHAPES: [(u32, u32, u32); 5] =
    [(16, 16, 16), (32, 8, 16), (8, 32, 16), (16, 16, 8), (8, 8, 4)];

/// Checks `wmma`'s shape and types (§9.7.14.4): a shape ptxvk implements; for
/// `wmma.load`/`wmma.store` an element type of the fragment (the last type that is an
/// `mma` type), for `wmma.mma` `.dtype.ctype` (`.f16` inputs) or
/// `.dtype.atype.btype.ctype` and only `.rn`; inputs ptxvk implements at that `k`; a
/// load's or store's fragment, address and optional stride.
pub(super) fn check_wmma(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let span = i.span;
    let shape = m.find(|d| match d {
        Modifier::Shape(Shape { m, n, k: Some(k) }) => {
            Some((m, n, k)).filter(|s| WMMA_SHAPES.contains(s))
        }
        _ => None,
    });
    let Some((_, _, k)) = shape.map(|s| s.value) else {
        return Err(unsupported(
            span,
            "this `wmma` shape",
            "the sub-byte `.m8n8k32` (`.s4`/`.u4`) and `.m8n8k128` (`.b1`) forms are not \
             implemented",
        ));
    };
    let names = type_names(&m.details, &m.types);
    let matrix_type = |t: &TypeName| t.input().is_some() || t.acc().is_some();
    let input = if m.has(Modifier::WmmaOp(WmmaOp::Mma)) {
        let names: Vec<TypeName> = names.into_iter().filter(matrix_type).collect();
        if let Some(r) = m.rounding.as_ref().filter(|r| r.value.direction != Direction::Nearest) {
            return Err(unsupported(
                r.span,
                "`wmma.mma` rounding other than `.rn`",
                "not implemented",
            ));
        }
        let parsed = match *names.as_slice() {
            [d, c] => (d.acc(), Some(Input::F16), c.acc()),
            [d, a, b, c] => (d.acc(), a.input().filter(|_| b.input().is_some()), c.acc()),
            _ => (None, None, None),
        };
        let (Some(_), Some(a), Some(_)) = parsed else {
            return Err(Diagnostic::error(
                span,
                "`wmma.mma` needs `.dtype.ctype` (f16) or `.dtype.atype.btype.ctype`",
            ));
        };
        a
    } else {
        let Some(&t) = names.iter().rev().find(|t| matrix_type(t)) else {
            return Err(Diagnostic::error(span, "`wmma` needs an element type"));
        };
        let accumulator =
            !m.has(Modifier::Fragment(Fragment::A)) && !m.has(Modifier::Fragment(Fragment::B));
        // The input of the `mma` tile whose layout the fragment has (`ir::WmmaData::tile`).
        match (accumulator, t.acc(), t.input()) {
            (true, Some(Acc::F64), _) => Input::F64,
            (true, Some(_), _) if k == 8 => Input::Tf32,
            (true, Some(Acc::S32), _) => Input::Int(8),
            (true, Some(_), _) => Input::F16,
            (false, _, Some(input)) => input,
            (true, None, _) => {
                let msg = format!("`{}` is not an accumulator type", t.spelling());
                return Err(Diagnostic::error(span, msg));
            }
            (false, _, None) => {
                let msg = format!("`{}` is not a WMMA input type", t.spelling());
                return Err(Diagnostic::error(span, msg));
            }
        }
    };
    let known = matches!(
        (input, k),
        (Input::F16 | Input::Bf16 | Input::Int(8), 16) | (Input::Tf32, 8) | (Input::F64, 4)
    );
    if !known {
        return Err(unsupported(
            span,
            "this `wmma` shape and type",
            "not a WMMA form ptxvk implements (f16, bf16, s8/u8 with k16, tf32 with k8, f64 \
             with k4)",
        ));
    }
    let moves = !m.has(Modifier::WmmaOp(WmmaOp::Mma));
    if moves && !(2..=3).contains(&i.operands.len()) {
        return Err(Diagnostic::error(
            span,
            "`wmma` load/store takes a fragment, an address and an optional stride",
        ));
    }
    Ok(())
}

/// The shape `(m, n, k)` and the types D, A, B, C of a checked `mma` or `wmma.mma`
/// with modifiers `details` and types `types` (`wmma.mma`'s `.dtype.ctype` has `.f16`
/// inputs); `None` for other instructions.
pub fn mma_types(
    details: &[Spanned<Modifier>],
    types: &[Spanned<ScalarType>],
) -> Option<((u32, u32, u32), [TypeName; 4])> {
    let shape = details.iter().find_map(|d| match d.value {
        Modifier::Shape(Shape { m, n, k: Some(k) }) => Some((m, n, k)),
        _ => None,
    })?;
    let matrix_type = |t: &TypeName| t.input().is_some() || t.acc().is_some();
    let names: Vec<TypeName> = type_names(details, types).into_iter().filter(matrix_type).collect();
    let f16 = TypeName::Scalar(ScalarType::F16);
    match *names.as_slice() {
        [d, c] => Some((shape, [d, f16, f16, c])),
        [d, a, b, c] => Some((shape, [d, a, b, c])),
        _ => None,
    }
}

/// A checked `wmma.load` or `wmma.store` (§9.7.14.4.3-4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WmmaMove {
    pub store: bool,
    /// `.a`, `.b`, `.c` (loaded) or `.d` (stored).
    pub fragment: Fragment,
    /// `.row` (else `.col`).
    pub row_major: bool,
    pub shape: (u32, u32, u32),
    /// The element type: the last type modifier that is an `mma` type.
    pub data: TypeName,
}

/// The [`WmmaMove`] of a checked `wmma.load` or `wmma.store` with modifiers `details`
/// and types `types`; `None` for other instructions.
pub fn wmma_move(details: &[Spanned<Modifier>], types: &[Spanned<ScalarType>]) -> Option<WmmaMove> {
    let has = |m: Modifier| details.iter().any(|d| d.value == m);
    let store = has(Modifier::WmmaOp(WmmaOp::Store));
    let fragment = details.iter().find_map(|d| match d.value {
        Modifier::Fragment(f) => Some(f),
        _ => None,
    })?;
    let shape = details.iter().find_map(|d| match d.value {
        Modifier::Shape(Shape { m, n, k: Some(k) }) => Some((m, n, k)),
        _ => None,
    })?;
    let matrix_type = |t: &TypeName| t.input().is_some() || t.acc().is_some();
    let data = type_names(details, types).into_iter().rev().find(matrix_type)?;
    let row_major = has(Modifier::Layout(Layout::Row));
    Some(WmmaMove { store, fragment, row_major, shape, data })
}

/// Why the sm_100 shapes of `ldmatrix` and `stmatrix` are not implemented.
pub const SM100_ROWS: &str = "the sm_100 `.m16n16` and `.m8n16` forms of 8-bit and packed \
     6/4-bit elements are not implemented";

/// Checks `ldmatrix`'s and `stmatrix`'s shape, `.m8n8`, and that their data operand
/// has one register per matrix (`.x1`, `.x2`, `.x4`; one without).
pub(super) fn check_rows(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let (span, name) = (i.span, m.opcode);
    let shape = m.find(|d| match d {
        Modifier::Shape(s) => Some(s),
        _ => None,
    });
    let m8n8 = shape.as_ref().is_some_and(|s| s.value == Shape { m: 8, n: 8, k: None });
    if shape.is_some() && !m8n8 {
        let what = format!("`{name}` shapes other than `.m8n8`");
        return Err(unsupported(span, &what, SM100_ROWS));
    }
    if !m8n8 {
        return Err(Diagnostic::error(span, format!("`{name}` needs a shape (`.m8n8`)")));
    }
    let count = m.find(|d| match d {
        Modifier::Count(n) => Some(n),
        _ => None,
    });
    let count = count.map_or(1, |n| n.value);
    let [first, second] = i.operands.as_slice() else {
        return Err(Diagnostic::error(span, format!("`{name}` takes 2 operands")));
    };
    let data = if m.opcode == crate::instructions::Opcode::Stmatrix { second } else { first };
    let found = super::texture::items(data).len();
    if found != count as usize {
        let msg = format!("`{name}` takes {count} register(s) here, found {found}");
        return Err(Diagnostic::error(data.span(), msg));
    }
    Ok(())
}
