//! The operands of the texture and surface forms ptxvk implements (PTX ISA 9.2
//! §9.7.10-11), [`super::media::Check::Texture`]: the geometries each instruction
//! fetches from; `tex`'s and `tld4`'s destinations, `[texture{, sampler},
//! {coordinates}]`, level or gradients and texel offsets ([`fetch_operands`]);
//! `txq`'s and `suq`'s `[handle]` and the queries ptxvk answers ([`answered`]); and
//! `suld`'s, `sust`'s and `sured`'s `[surface, {coordinates}]`, values and value type
//! ([`surface_operands`]). Semantic analysis reads the operands through the same
//! functions, which cannot fail on a checked instruction, and the modifiers as the typed
//! values [`fetch_geometry`], [`channel`], [`fetch_result`], [`boundary`] and
//! [`query_field`] decode them to, which are also the IR's (`ptxvk_lower::ir::texture`
//! re-exports the types).

use crate::ast::{Instruction, Operand, ScalarType};
use crate::decode::Modifiers;
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode;
use crate::modifier::{
    Boundary as BoundaryMode, Component, Geometry, Lod, Modifier, Query, Reduction, SurfaceAccess,
};
use crate::span::Spanned;

/// Why a texture or surface form is not implemented (the note of its diagnostic, and of
/// the coverage table's unsupported rows).
pub const NOT_IMPLEMENTED: &str = "not implemented yet: of the texture and surface \
     instructions, `tex` (1-D, 2-D, 3-D, layered, cube), `tld4`, `txq`, `suld.b`, `sust.b`, \
     `sust.p`, `sured.b`, `sured.p` and `suq` on texture and surface objects and references are";

fn unsupported(span: crate::span::Span, what: &str) -> Diagnostic {
    Diagnostic::error(span, format!("{what} is not supported yet"))
        .with_note(NOT_IMPLEMENTED.to_string())
}

/// The geometries ptxvk reads: dimensions, a leading layer coordinate, cube maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexGeometry {
    D1,
    D2,
    D3,
    A1d,
    A2d,
    /// A direction `{x, y, z}` picks a face (six layers).
    Cube,
    /// Layered cube maps: a layer (of six faces each), then the direction.
    Acube,
}

impl TexGeometry {
    /// The coordinates after the layer: 1, 2 or 3.
    pub fn dims(self) -> usize {
        match self {
            TexGeometry::D1 | TexGeometry::A1d => 1,
            TexGeometry::D2 | TexGeometry::A2d => 2,
            TexGeometry::D3 | TexGeometry::Cube | TexGeometry::Acube => 3,
        }
    }

    /// Whether the first coordinate is a layer.
    pub fn layered(self) -> bool {
        matches!(self, TexGeometry::A1d | TexGeometry::A2d | TexGeometry::Acube)
    }

    pub fn cube(self) -> bool {
        matches!(self, TexGeometry::Cube | TexGeometry::Acube)
    }
}

/// What a fetch writes: four f32, s32 or u32 words, or the four float results rounded to
/// halves in two words (`.f16x2`: R and G in the first, B and A in the second, the first
/// of each pair in the low half).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexResult {
    F32,
    F16x2,
    S32,
    U32,
}

impl TexResult {
    /// Whether the results are floats (channels converted), else integers.
    pub fn is_float(self) -> bool {
        matches!(self, TexResult::F32 | TexResult::F16x2)
    }

    /// Result words: 4, or 2 for `.f16x2`.
    pub fn words(self) -> usize {
        if self == TexResult::F16x2 {
            2
        } else {
            4
        }
    }
}

/// The channel `tld4` gathers (`.r`, `.g`, `.b`, `.a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    R,
    G,
    B,
    A,
}

impl Channel {
    pub fn index(self) -> usize {
        match self {
            Channel::R => 0,
            Channel::G => 1,
            Channel::B => 2,
            Channel::A => 3,
        }
    }
}

/// The attribute a `txq`/`suq` reads (32-bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexQuery {
    Width,
    Height,
    Depth,
    ArraySize,
    NumMipmapLevels,
    NumSamples,
    NormalizedCoords,
    FilterMode,
    ForceUnnormalizedCoords,
    /// `.addr_mode_N` of dimension N (0-2).
    AddrMode(u8),
}

/// What a surface access does out of bounds (`.trap`, `.clamp`, `.zero`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    Trap,
    Clamp,
    Zero,
}

/// The geometry ptxvk fetches from that `g` is; `None` for the multisample ones.
pub fn tex_geometry(g: Geometry) -> Option<TexGeometry> {
    Some(match g {
        Geometry::D1 => TexGeometry::D1,
        Geometry::D2 => TexGeometry::D2,
        Geometry::D3 => TexGeometry::D3,
        Geometry::A1d => TexGeometry::A1d,
        Geometry::A2d => TexGeometry::A2d,
        Geometry::Cube => TexGeometry::Cube,
        Geometry::Acube => TexGeometry::Acube,
        Geometry::D2ms | Geometry::A2dms => return None,
    })
}

/// The geometry of a checked texture or surface instruction with modifiers `details`.
pub fn fetch_geometry(details: &[Spanned<Modifier>]) -> Option<TexGeometry> {
    geometry(details).and_then(|g| tex_geometry(g.value))
}

/// The channel `tld4` (with modifiers `details`) gathers: its `.r`, `.g`, `.b` or `.a`.
pub fn channel(details: &[Spanned<Modifier>]) -> Channel {
    let component = details.iter().find_map(|d| match d.value {
        Modifier::Component(c) => Some(c),
        _ => None,
    });
    match component {
        Some(Component::G) => Channel::G,
        Some(Component::B) => Channel::B,
        Some(Component::A) => Channel::A,
        Some(Component::R) | None => Channel::R,
    }
}

/// The result of a checked `tex` or `tld4` of types `types` (`.dtype.ctype`), and
/// whether its coordinates are integers (`.s32`).
pub fn fetch_result(types: &[Spanned<ScalarType>]) -> (TexResult, bool) {
    let result = match types.first().map(|t| t.value) {
        Some(ScalarType::F16x2) => TexResult::F16x2,
        Some(ScalarType::S32) => TexResult::S32,
        Some(ScalarType::U32) => TexResult::U32,
        _ => TexResult::F32,
    };
    (result, types.get(1).is_some_and(|t| t.value == ScalarType::S32))
}

/// A surface access's out-of-bounds mode among `details`: `.trap` without one.
pub fn boundary(details: &[Spanned<Modifier>]) -> Boundary {
    let mode = details.iter().find_map(|d| match d.value {
        Modifier::Boundary(b) => Some(b),
        _ => None,
    });
    match mode {
        Some(BoundaryMode::Clamp) => Boundary::Clamp,
        Some(BoundaryMode::Zero) => Boundary::Zero,
        Some(BoundaryMode::Trap) | None => Boundary::Trap,
    }
}

/// The attribute query `q` reads, if ptxvk answers it with some instruction.
pub fn query_field(q: Query) -> Option<TexQuery> {
    Some(match q {
        Query::Width => TexQuery::Width,
        Query::Height => TexQuery::Height,
        Query::Depth => TexQuery::Depth,
        Query::ArraySize => TexQuery::ArraySize,
        Query::NumMipmapLevels => TexQuery::NumMipmapLevels,
        Query::NumSamples => TexQuery::NumSamples,
        Query::NormalizedCoords => TexQuery::NormalizedCoords,
        Query::FilterMode => TexQuery::FilterMode,
        Query::ForceUnnormalizedCoords => TexQuery::ForceUnnormalizedCoords,
        Query::AddrMode0 => TexQuery::AddrMode(0),
        Query::AddrMode1 => TexQuery::AddrMode(1),
        Query::AddrMode2 => TexQuery::AddrMode(2),
        _ => return None,
    })
}

/// The dimensions of geometry `g` and whether its first coordinate is a layer.
fn shape(g: Geometry) -> (usize, bool) {
    match g {
        Geometry::D1 => (1, false),
        Geometry::D2 | Geometry::D2ms => (2, false),
        Geometry::D3 | Geometry::Cube => (3, false),
        Geometry::A1d => (1, true),
        Geometry::A2d | Geometry::A2dms => (2, true),
        Geometry::Acube => (3, true),
    }
}

/// The coordinate operands of a geometry: the layer first, three of a 3-D one and four
/// of a layered 2-D one (PTX ISA 9.2 §9.7.10.3, §9.7.11.1).
fn coordinate_operands(g: Geometry) -> usize {
    match shape(g) {
        (3, _) | (2, true) => 4,
        (d, l) => d + usize::from(l),
    }
}

/// The geometry among `details` (one, `forms::media`'s rows check).
fn geometry(details: &[Spanned<Modifier>]) -> Option<Spanned<Geometry>> {
    details.iter().find_map(|d| match d.value {
        Modifier::Geometry(g) => Some(Spanned::new(g, d.span)),
        _ => None,
    })
}

fn has(details: &[Spanned<Modifier>], m: Modifier) -> bool {
    details.iter().any(|d| d.value == m)
}

/// Whether ptxvk fetches from geometry `g` with `op`: `tex` from every geometry but
/// the multisample ones, the others from the 1-D, 2-D, 3-D and layered ones.
fn implemented(op: Opcode, g: Geometry) -> bool {
    match g {
        Geometry::D2ms | Geometry::A2dms => false,
        Geometry::Cube | Geometry::Acube => op == Opcode::Tex,
        _ => true,
    }
}

/// The registers of a `{…}` operand (a single operand counts as one).
pub fn items(op: &Operand) -> Vec<&Operand> {
    match op {
        Operand::Vector(v, _) => v.iter().collect(),
        one => vec![one],
    }
}

/// The operands of a fetch, `d{|p}, [texture{, sampler}, {coordinates}]{, lod}{,
/// {offsets}}`.
#[derive(Debug)]
pub struct FetchOperands<'i> {
    pub dsts: &'i [Operand],
    pub resident: Option<&'i Operand>,
    pub handle: &'i Operand,
    pub sampler: Option<&'i Operand>,
    /// The coordinates the geometry takes, the layer first (those PTX ISA 1.x-2.x's
    /// four-element vectors of `tex.1d` and `tex.2d` have beyond them dropped).
    pub coords: &'i [Operand],
    /// One texel offset per dimension (a 3-D fetch's fourth dropped); none without them.
    pub offsets: &'i [Operand],
    /// `.level`'s level, `.grad`'s two gradient vectors.
    pub lod: &'i [Operand],
}

/// The operands of fetch `i` (`tex` when `tex`, else `tld4`) with modifiers `details`
/// and types `types`, checked against its geometry.
pub fn fetch_operands<'i>(
    i: &'i Instruction,
    tex: bool,
    details: &[Spanned<Modifier>],
    types: &[Spanned<ScalarType>],
) -> Result<FetchOperands<'i>, Diagnostic> {
    let (span, op) = (i.span, &i.opcode.value);
    let extra = match (tex, has(details, Modifier::Lod(Lod::Grad))) {
        (false, _) => 0,
        (true, true) => 2,
        (true, false) => usize::from(has(details, Modifier::Lod(Lod::Level))),
    };
    let ops = i.operands.as_slice();
    let (Some(first), Some(tuple)) = (ops.first(), ops.get(1)) else {
        return Err(Diagnostic::error(span, format!("`{op}` takes d, [texture, {{coordinates}}]")));
    };
    if ops.len() < 2 + extra {
        return Err(Diagnostic::error(span, format!("`{op}` is missing its level or gradients")));
    }
    // Texel offsets are a vector (`{x}` in 1-D too); a depth-compare value follows them.
    let (offsets, rest) = match ops[2 + extra..].split_first() {
        Some((Operand::Vector(v, _), after)) => (Some(v.as_slice()), after),
        _ => (None, &ops[2 + extra..]),
    };
    if let Some(depth) = rest.first() {
        return Err(unsupported(depth.span(), &format!("`{op}` with depth compare")));
    }
    let (dst_vector, resident) = match first {
        Operand::Pair(d, p, _) => (&**d, Some(&**p)),
        d => (d, None),
    };
    let Operand::Vector(dsts, _) = dst_vector else {
        let msg = format!("`{op}` writes a vector `{{a, b, c, d}}`");
        return Err(Diagnostic::error(first.span(), msg));
    };
    let Operand::Tuple(parts, _) = tuple else {
        return Err(Diagnostic::error(tuple.span(), "expected `[texture, {coordinates}]`"));
    };
    let (handle, sampler, mut coords) = match parts.as_slice() {
        [t, Operand::Vector(c, _)] => (t, None, c.as_slice()),
        [t, s, Operand::Vector(c, _)] => (t, Some(s), c.as_slice()),
        _ => {
            return Err(Diagnostic::error(
                tuple.span(),
                "expected `[texture, {coordinates}]` or `[texture, sampler, {coordinates}]`",
            ))
        }
    };
    let g = geometry(details).map_or(Geometry::D1, |g| g.value);
    let wanted = coordinate_operands(g);
    let (dims, layered) = shape(g);
    let cube = matches!(g, Geometry::Cube | Geometry::Acube);
    if tex {
        let words = if types.first().is_some_and(|t| t.value == ScalarType::F16x2) { 2 } else { 4 };
        // PTX ISA 1.x-2.x: `tex.1d` and `tex.2d` take a four-element coordinate vector
        // whose unused elements are ignored (`[tex, {%f1, %f2, %f3, %f4}]`).
        if coords.len() == 4 && wanted < 4 && !layered && !cube {
            coords = &coords[..wanted];
        }
        if coords.len() != wanted || dsts.len() != words {
            return Err(Diagnostic::error(
                tuple.span(),
                format!("this `tex` takes {wanted} coordinates and writes {words} values"),
            ));
        }
        if cube && offsets.is_some() {
            return Err(Diagnostic::error(span, "cube-map fetches take no texel offsets"));
        }
    } else if coords.len() != wanted || dsts.len() != 4 {
        return Err(Diagnostic::error(
            span,
            format!("this `tld4` takes {wanted} coordinates and writes 4 values"),
        ));
    }
    // One `.s32` per dimension (PTX ISA 9.2 §9.7.10.3), a 3-D fetch's fourth ignored.
    let offsets = match offsets {
        Some(offsets) => {
            let wanted = if dims == 3 { 4 } else { dims };
            if offsets.len() != wanted {
                let msg = format!("this fetch takes {wanted} texel offsets");
                return Err(Diagnostic::error(span, msg));
            }
            &offsets[..dims]
        }
        None => &[],
    };
    let lod = &ops[2..2 + extra];
    Ok(FetchOperands { dsts, resident, handle, sampler, coords, offsets, lod })
}

/// The operands of a surface access, `[surface, {coordinates}]` and the values (`d` of
/// `suld`, `b` of `sust` and `sured`).
#[derive(Debug)]
pub struct SurfaceOperands<'i> {
    pub handle: &'i Operand,
    pub coords: Vec<&'i Operand>,
    pub values: Vec<&'i Operand>,
}

/// The operands of surface access `i` (`op`) with modifiers `details` and vector size
/// `vector`, checked against its geometry.
pub fn surface_operands<'i>(
    i: &'i Instruction,
    op: Opcode,
    details: &[Spanned<Modifier>],
    vector: Option<u32>,
) -> Result<SurfaceOperands<'i>, Diagnostic> {
    let span = i.span;
    let ops = i.operands.as_slice();
    let (Some(first), Some(second)) = (ops.first(), ops.get(1)) else {
        return Err(Diagnostic::error(span, format!("`{op}` takes 2 operands")));
    };
    let (values, target) = if op == Opcode::Suld { (first, second) } else { (second, first) };
    let Operand::Tuple(parts, _) = target else {
        return Err(Diagnostic::error(target.span(), "expected `[surface, {coordinates}]`"));
    };
    let [handle, coords] = parts.as_slice() else {
        return Err(Diagnostic::error(target.span(), "expected `[surface, {coordinates}]`"));
    };
    let (coords, values) = (items(coords), items(values));
    let wanted = geometry(details).map_or(1, |g| coordinate_operands(g.value));
    let count = vector.unwrap_or(1) as usize;
    if coords.len() != wanted || values.len() != count {
        return Err(Diagnostic::error(
            span,
            format!("this `{op}` takes {wanted} coordinates and {count} values"),
        ));
    }
    Ok(SurfaceOperands { handle, coords, values })
}

/// Whether ptxvk answers query `q` of `op` (`txq` or `suq`, PTX ISA 9.2 §9.7.10.5,
/// §9.7.11.4): the sizes and levels of both, and `txq`'s sampler state.
pub fn answered(op: Opcode, q: Query) -> bool {
    use TexQuery::*;
    match query_field(q) {
        Some(NormalizedCoords | FilterMode | ForceUnnormalizedCoords | AddrMode(_)) => {
            op == Opcode::Txq
        }
        Some(_) => true,
        None => false,
    }
}

/// The query among the modifiers of `txq` or `suq` (`.level` aside), if it has one.
pub fn query(details: &[Spanned<Modifier>]) -> Option<Query> {
    details.iter().find_map(|d| match d.value {
        Modifier::Query(q) if q != Query::Level => Some(q),
        _ => None,
    })
}

/// The operands of `txq` or `suq` (`op`, with modifiers `details`): the destination,
/// the handle's name (`[handle]`) and `txq.level`'s level.
pub fn query_operands<'i>(
    i: &'i Instruction,
    op: Opcode,
    details: &[Spanned<Modifier>],
) -> Result<(&'i Operand, Operand, Option<&'i Operand>), Diagnostic> {
    let level = has(details, Modifier::Query(Query::Level));
    let (dst, handle, level) = match i.operands.as_slice() {
        [dst, handle] => (dst, handle, None),
        [dst, handle, l] if level => (dst, handle, Some(l)),
        _ => {
            let msg = format!("`{op}` takes a destination and [handle]");
            return Err(Diagnostic::error(i.span, msg));
        }
    };
    let base = match handle {
        Operand::Address(a) => a.base.as_ref(),
        _ => None,
    };
    let Some(base) = base else {
        return Err(Diagnostic::error(handle.span(), "expected `[handle]`"));
    };
    Ok((dst, Operand::Name { name: base.clone(), component: None }, level))
}

/// Checks a texture or surface instruction's geometry and operands (module doc).
pub(super) fn check(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let op = m.opcode;
    if matches!(op, Opcode::Txq | Opcode::Suq) {
        query_operands(i, op, &m.details)?;
        let field = query(&m.details);
        if !field.is_some_and(|q| answered(op, q)) {
            let what = format!("`{op}{}`", field.map_or("", Query::spelling));
            return Err(unsupported(i.span, &what));
        }
        return Ok(());
    }
    if let Some(g) = geometry(&m.details).filter(|g| !implemented(op, g.value)) {
        return Err(unsupported(i.span, &format!("`{op}` with `{}`", g.value.spelling())));
    }
    if matches!(op, Opcode::Tex | Opcode::Tld4) {
        fetch_operands(i, op == Opcode::Tex, &m.details, &m.types)?;
        let integer_coords = m.types.get(1).is_some_and(|t| t.value == ScalarType::S32);
        let cube = geometry(&m.details)
            .is_some_and(|g| matches!(g.value, Geometry::Cube | Geometry::Acube));
        if cube && integer_coords {
            return Err(Diagnostic::error(i.span, "cube-map coordinates are `.f32`"));
        }
        return Ok(());
    }
    let [ty] = m.types.as_slice() else {
        return Err(Diagnostic::error(i.span, format!("`{op}` takes one type (`.b32`)")));
    };
    // Half, tf32 and 128-bit values: semantic analysis refuses the type itself.
    use ScalarType::*;
    if matches!(ty.value, F16 | F16x2 | Bf16 | Bf16x2 | Tf32 | B128) {
        return Ok(());
    }
    if op == Opcode::Sured {
        // `sured.op`: an atomic read-modify-write of the element (§9.7.11.3).
        if !matches!(ty.value.bits(), 32 | 64) {
            return Err(Diagnostic::error(i.span, "`sured` takes a 32- or 64-bit value"));
        }
        let ordered = m.has(Modifier::Reduction(Reduction::Min))
            || m.has(Modifier::Reduction(Reduction::Max));
        // `sured.p` is `.b32` (`forms::media`), or `.b64` for `.min`/`.max` only.
        if m.has(Modifier::SurfaceAccess(SurfaceAccess::P)) && ty.value == B64 && !ordered {
            return Err(Diagnostic::error(
                i.span,
                "`sured.p` is `.b32`, or `.b64` with `.min` and `.max`",
            ));
        }
    }
    surface_operands(i, op, &m.details, m.vector)?;
    Ok(())
}
