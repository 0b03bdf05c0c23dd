//! Texture and surface instructions (PTX ISA 9.2 §9.7.10-11): `tex`, `tld4`, `txq`,
//! `suld.b`, `sust.b`/`sust.p`, `sured.b`/`sured.p` and `suq`, resolved and checked into
//! one [`InstKind::Texture`] each ([`crate::ir::TextureInst`]), which
//! `pass::expand_texture` expands into the fetches themselves. A handle held in a
//! `.texref`/`.surfref`/`.tex` variable or a `.texref`/`.samplerref`/`.surfref`
//! parameter is that variable ([`TexHandle`]), which the pass loads.
//!
//! Not implemented (diagnostics): multisample textures, depth compare, and the `txq`/`suq`
//! attributes of formats and samples.

use ptxvk_frontend::ast::{self, Operand, ScalarType};
use ptxvk_frontend::modifier::{
    Boundary as BoundaryMode, Component, Geometry, Lod, Modifier, Query, Reduction,
    SurfaceAccess as Access,
};
use ptxvk_frontend::{Diagnostic, Opcode, Span};

use super::{Lowerer, Mods};
use crate::ir::{
    AtomicOp, BoolOp, Boundary, Channel, InstKind, OpTy, SurfaceAccess, SurfaceOp, TexGeometry,
    TexHandle, TexLod, TexQuery, TexResult, TextureFetch, TextureInst, TextureQuery, Value,
};

const S32: OpTy = OpTy::S(32);
const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);
const F32: OpTy = OpTy::F(32);

/// The geometries ptxvk fetches from.
fn geometry(g: Geometry) -> Option<TexGeometry> {
    Some(match g {
        Geometry::D1 => TexGeometry::D1,
        Geometry::D2 => TexGeometry::D2,
        Geometry::D3 => TexGeometry::D3,
        Geometry::A1d => TexGeometry::A1d,
        Geometry::A2d => TexGeometry::A2d,
        Geometry::Cube | Geometry::Acube | Geometry::D2ms | Geometry::A2dms => return None,
    })
}

/// What a checked `tex` or `tld4` fetches.
struct Fetch {
    gather: Option<Channel>,
    geometry: TexGeometry,
    result: TexResult,
    integer_coords: bool,
}

/// The operands of a fetch, `d{|p}, [texture{, sampler}, {coordinates}]{, lod}{, {offsets}}`.
struct FetchOperands<'i> {
    dsts: &'i [Operand],
    resident: Option<&'i Operand>,
    /// `[…]`, where errors of the coordinates point.
    tuple: &'i Operand,
    handle: &'i Operand,
    sampler: Option<&'i Operand>,
    coords: &'i [Operand],
    offsets: Option<&'i [Operand]>,
    /// `.level`'s level, `.grad`'s two gradient vectors.
    lod: &'i [Operand],
}

/// The operands of fetch `i` with `extra` level or gradient operands ([`FetchOperands`]).
fn fetch_operands(i: &ast::Instruction, extra: usize) -> Result<FetchOperands<'_>, Diagnostic> {
    let (span, op) = (i.span, &i.opcode.value);
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
        let what = format!("`{op}` with depth compare");
        return Err(super::unsupported(depth.span(), &what, crate::coverage::TEXTURE));
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
    let (handle, sampler, coords) = match parts.as_slice() {
        [t, Operand::Vector(c, _)] => (t, None, c),
        [t, s, Operand::Vector(c, _)] => (t, Some(s), c),
        _ => {
            return Err(Diagnostic::error(
                tuple.span(),
                "expected `[texture, {coordinates}]` or `[texture, sampler, {coordinates}]`",
            ))
        }
    };
    let lod = &ops[2..2 + extra];
    Ok(FetchOperands { dsts, resident, tuple, handle, sampler, coords, offsets, lod })
}

/// The coordinate operands of a geometry: the layer first, three of a 3-D one and four
/// of a layered 2-D one (PTX ISA 9.2 §9.7.10.3, §9.7.11.1).
fn coordinate_operands(geometry: TexGeometry) -> usize {
    match (geometry.dims(), geometry.layered()) {
        (3, _) | (2, true) => 4,
        (d, l) => d + usize::from(l),
    }
}

/// The registers of a `{…}` operand (a single operand counts as one).
pub(super) fn items(op: &Operand) -> Vec<&Operand> {
    match op {
        Operand::Vector(v, _) => v.iter().collect(),
        one => vec![one],
    }
}

impl Lowerer<'_> {
    /// The texture and surface instructions; `None` for others.
    pub(super) fn texture(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        let inst = match op {
            Opcode::Tex => self.tex(i, m).map(TextureInst::Fetch),
            Opcode::Tld4 => self.tld4(i, m).map(TextureInst::Fetch),
            Opcode::Txq | Opcode::Suq => self.query(op, i, m).map(TextureInst::Query),
            Opcode::Suld | Opcode::Sust | Opcode::Sured => {
                self.surface(op, i, m).map(TextureInst::Surface)
            }
            _ => return None,
        };
        Some(inst.map(|t| self.push(InstKind::Texture(Box::new(t)), i.span)))
    }

    /// The geometry, which `ptxvk_frontend::forms::media` has checked there is one of.
    fn geometry_of(&self, i: &ast::Instruction, m: &Mods) -> Result<TexGeometry, Diagnostic> {
        let g = m.find(|d| match d {
            Modifier::Geometry(g) => Some(g),
            _ => None,
        });
        let g = g.ok_or_else(|| Diagnostic::internal(i.span, "a texture without a geometry"))?;
        geometry(g.value).ok_or_else(|| {
            let what = format!("`{}` with `{}`", i.opcode.value, g.value.spelling());
            super::unsupported(i.span, &what, crate::coverage::TEXTURE)
        })
    }

    /// The handle operand: a 64-bit register or immediate holding the descriptor's
    /// address, or the variable holding it, which `pass::expand_texture` loads: a
    /// `.texref`/`.surfref` (or `.tex`) variable, which the host binds, or a
    /// `.texref`/`.samplerref`/`.surfref` kernel parameter (§5.3).
    fn handle(&mut self, op: &Operand, span: Span) -> Result<TexHandle, Diagnostic> {
        if let Operand::Name { name, component: None } = op {
            match self.lookup(&name.value) {
                Some(super::Resolved::Global(off)) => return Ok(TexHandle::Global(off)),
                Some(super::Resolved::Param(off)) => return Ok(TexHandle::Param(off)),
                _ => {}
            }
        }
        self.src(op, U64, false, span).map(TexHandle::Value)
    }

    /// `tex.geom.v4.dtype.ctype d, [handle, {coords}] {, lod | dPdx, dPdy}`.
    fn tex(&mut self, i: &ast::Instruction, m: &Mods) -> Result<TextureFetch, Diagnostic> {
        let span = i.span;
        // Cube maps: a direction {x, y, z} (after the layer of `.acube`).
        let acube = m.has(Modifier::Geometry(Geometry::Acube));
        let cube = m.has(Modifier::Geometry(Geometry::Cube)) || acube;
        let geometry = match (cube, acube) {
            (true, true) => TexGeometry::Acube,
            (true, false) => TexGeometry::Cube,
            _ => self.geometry_of(i, m)?,
        };
        let (result, integer_coords) = fetch_types(m);
        let words = result.words();
        let extra = if m.has(Modifier::Lod(Lod::Grad)) {
            2
        } else {
            usize::from(m.has(Modifier::Lod(Lod::Level)))
        };
        let mut f = fetch_operands(i, extra)?;
        let wanted = coordinate_operands(geometry);
        // PTX ISA 1.x-2.x: `tex.1d` and `tex.2d` take a four-element coordinate vector
        // whose unused elements are ignored (`[tex, {%f1, %f2, %f3, %f4}]`).
        if f.coords.len() == 4 && wanted < 4 && !geometry.layered() && !cube {
            f.coords = &f.coords[..wanted];
        }
        if f.coords.len() != wanted || f.dsts.len() != words {
            return Err(Diagnostic::error(
                f.tuple.span(),
                format!("this `tex` takes {wanted} coordinates and writes {words} values"),
            ));
        }
        if cube && f.offsets.is_some() {
            return Err(Diagnostic::error(span, "cube-map fetches take no texel offsets"));
        }
        let fetch = Fetch { gather: None, geometry, result, integer_coords };
        self.fetch(fetch, f, span)
    }

    /// `tld4.comp.{2d,a2d}.v4.dtype.f32 d, [handle, {coords}]`.
    fn tld4(&mut self, i: &ast::Instruction, m: &Mods) -> Result<TextureFetch, Diagnostic> {
        let span = i.span;
        // `.2d` or `.a2d` (`ptxvk_frontend::forms::media`), with one component.
        let geometry = self.geometry_of(i, m)?;
        let channel = m.find(|d| match d {
            Modifier::Component(c) => Some(match c {
                Component::R => Channel::R,
                Component::G => Channel::G,
                Component::B => Channel::B,
                Component::A => Channel::A,
            }),
            _ => None,
        });
        let gather = Some(channel.map_or(Channel::R, |c| c.value));
        let (result, _) = fetch_types(m);
        let f = fetch_operands(i, 0)?;
        let wanted = coordinate_operands(geometry);
        if f.coords.len() != wanted || f.dsts.len() != 4 {
            return Err(Diagnostic::error(
                span,
                format!("this `tld4` takes {wanted} coordinates and writes 4 values"),
            ));
        }
        self.fetch(Fetch { gather, geometry, result, integer_coords: false }, f, span)
    }

    /// Resolves a fetch whose form is checked, in this order: the texel offsets, the
    /// residency predicate, the level or gradients, the texture and sampler handles, the
    /// layer (the first coordinate of a layered geometry), the coordinates and the
    /// destinations (`None` for `_`).
    fn fetch(
        &mut self,
        f: Fetch,
        from: FetchOperands<'_>,
        span: Span,
    ) -> Result<TextureFetch, Diagnostic> {
        let (geometry, integer_coords) = (f.geometry, f.integer_coords);
        let (dims, layered) = (geometry.dims(), geometry.layered());
        let offsets = self.offset_values(from.offsets, dims, span)?;
        let resident = from.resident.map(|p| self.dst(p, OpTy::Pred, false)).transpose()?;
        // `.level`: an explicit level of detail; `.grad`: the coordinates' gradients.
        let mut lod = Vec::new();
        for o in from.lod {
            lod.push(self.sources(items(o), F32, span)?);
        }
        let texture = self.handle(from.handle, span)?;
        let sampler = from.sampler.map(|s| self.handle(s, span)).transpose()?;
        let cty = if integer_coords { S32 } else { F32 };
        let dst_ty = match f.result {
            TexResult::F32 => F32,
            TexResult::S32 => S32,
            TexResult::F16x2 | TexResult::U32 => U32,
        };
        let first = usize::from(layered);
        let coords = from.coords;
        let layer = if layered { Some(self.src(&coords[0], S32, false, span)?) } else { None };
        let coords = self.sources(&coords[first..first + dims], cty, span)?;
        let dsts = from
            .dsts
            .iter()
            .map(|d| match d {
                Operand::Sink(_) => Ok(None),
                d => self.dst(d, dst_ty, false).map(Some),
            })
            .collect::<Result<_, _>>()?;
        if geometry.cube() && integer_coords {
            return Err(Diagnostic::error(span, "cube-map coordinates are `.f32`"));
        }
        let lod = match lod.as_slice() {
            [level] => level.first().map_or(TexLod::Base, |l| TexLod::Level(*l)),
            [dx, dy] => TexLod::Grad { dx: dx.clone(), dy: dy.clone() },
            _ => TexLod::Base,
        };
        let (gather, result) = (f.gather, f.result);
        Ok(TextureFetch {
            gather,
            geometry,
            result,
            integer_coords,
            dsts,
            resident,
            texture,
            sampler,
            layer,
            coords,
            offsets,
            lod,
        })
    }

    /// The texel offsets of a fetch (`{, e}`, PTX ISA 9.2 §9.7.10.3): one `.s32` per
    /// dimension (a 3-D fetch's fourth is ignored); none without the operand. Offsets
    /// outside -8..7, which the ISA leaves undefined, are used as they are.
    fn offset_values(
        &mut self,
        offsets: Option<&[Operand]>,
        dims: usize,
        span: Span,
    ) -> Result<Vec<Value>, Diagnostic> {
        let Some(offsets) = offsets else { return Ok(Vec::new()) };
        let wanted = if dims == 3 { 4 } else { dims };
        if offsets.len() != wanted {
            return Err(Diagnostic::error(
                span,
                format!("this fetch takes {wanted} texel offsets"),
            ));
        }
        self.sources(&offsets[..dims], S32, span)
    }

    /// `txq.field.b32 d, [handle]`, `txq.level.field.b32 d, [handle], level` and
    /// `suq.field.b32 d, [handle]` (their operand counts checked by
    /// `ptxvk_frontend::forms::media`).
    fn query(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<TextureQuery, Diagnostic> {
        let span = i.span;
        let field = m.find(|d| match d {
            Modifier::Query(q) if q != Query::Level => Some(q),
            _ => None,
        });
        let field = field.map(|f| f.value);
        let (dst, handle, level) = match i.operands.as_slice() {
            [dst, handle] => (dst, handle, None),
            [dst, handle, level] if m.has(Modifier::Query(Query::Level)) => {
                (dst, handle, Some(level))
            }
            _ => {
                return Err(Diagnostic::error(
                    span,
                    format!("`{op}` takes a destination and [handle]"),
                ))
            }
        };
        let Operand::Address(a) = handle else {
            return Err(Diagnostic::error(handle.span(), "expected `[handle]`"));
        };
        let Some(base) = &a.base else {
            return Err(Diagnostic::error(handle.span(), "expected `[handle]`"));
        };
        let handle = Operand::Name { name: base.clone(), component: None };
        let dst = self.dst(dst, U32, false)?;
        let h = self.handle(&handle, span)?;
        let level = level.map(|l| self.src(l, U32, false, span)).transpose()?;
        let txq = op == Opcode::Txq;
        let known = QUERIES.iter().find(|q| Some(q.0) == field && (txq || q.2));
        let Some(&(_, field, _)) = known else {
            let other = field.map_or("", Query::spelling);
            let what = format!("`{op}{other}`");
            return Err(super::unsupported(span, &what, crate::coverage::TEXTURE));
        };
        Ok(TextureQuery { field, dst, handle: h, level })
    }

    /// `suld.b.geom{.vN}.bK.mode d, [handle, {coords}]`, `sust.b…`/`sust.p…` and
    /// `sured.b…`/`sured.p…` (module doc).
    pub(super) fn surface(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<SurfaceAccess, Diagnostic> {
        let span = i.span;
        let geometry = self.geometry_of(i, m)?;
        let (dims, layered) = (geometry.dims(), geometry.layered());
        // `.b` addresses bytes and moves bits; `.p` addresses samples and converts to the
        // surface's format (PTX ISA 9.2 §9.7.11.2-3). There is no `suld.p`
        // (`ptxvk_frontend::forms::media`).
        let formatted = m.has(Modifier::SurfaceAccess(Access::P));
        let load = op == Opcode::Suld;
        let mode = m.find(|d| match d {
            Modifier::Boundary(b) => Some(b),
            _ => None,
        });
        let boundary = match mode.map_or(BoundaryMode::Trap, |b| b.value) {
            BoundaryMode::Trap => Boundary::Trap,
            BoundaryMode::Clamp => Boundary::Clamp,
            BoundaryMode::Zero => Boundary::Zero,
        };
        let [ty] = m.types.as_slice() else {
            return Err(Diagnostic::error(span, format!("`{op}` takes one type (`.b32`)")));
        };
        let raw_type = ty.value;
        let ty = crate::sema::op_ty(ty)?;
        let count = m.vector.unwrap_or(1) as usize;
        let ops = i.operands.as_slice();
        // `sured.op`: an atomic read-modify-write of the element (PTX ISA 9.2 §9.7.11.3).
        let reduction = if op == Opcode::Sured {
            Some(sured_operation(m, ty, raw_type, formatted, span)?)
        } else {
            None
        };
        let (values, target) = if load { (&ops[0], &ops[1]) } else { (&ops[1], &ops[0]) };
        let Operand::Tuple(parts, _) = target else {
            return Err(Diagnostic::error(target.span(), "expected `[surface, {coordinates}]`"));
        };
        let [handle, coords] = parts.as_slice() else {
            return Err(Diagnostic::error(target.span(), "expected `[surface, {coordinates}]`"));
        };
        let (coords, items) = (items(coords), items(values));
        let wanted = coordinate_operands(geometry);
        if coords.len() != wanted || items.len() != count {
            return Err(Diagnostic::error(
                span,
                format!("this `{op}` takes {wanted} coordinates and {count} values"),
            ));
        }
        let h = self.handle(handle, span)?;
        let first = usize::from(layered);
        let layer = if layered { Some(self.src(coords[0], S32, false, span)?) } else { None };
        let xs = self.sources(coords[first..first + dims].iter().copied(), S32, span)?;
        let op = if load {
            SurfaceOp::Load(items.iter().map(|o| self.dst(o, ty, true)).collect::<Result<_, _>>()?)
        } else {
            let srcs: Vec<Value> =
                items.iter().map(|o| self.src(o, ty, true, span)).collect::<Result<_, _>>()?;
            match (reduction, srcs.first()) {
                (Some(op), Some(&src)) => SurfaceOp::Reduce(op, src),
                (Some(_), None) => {
                    return Err(Diagnostic::internal(span, "`sured` without a value"))
                }
                (None, _) => SurfaceOp::Store(srcs),
            }
        };
        let (handle, coords) = (h, xs);
        Ok(SurfaceAccess { op, formatted, geometry, boundary, ty, handle, layer, coords })
    }
}

/// The `txq` and `suq` queries ptxvk answers (§9.7.10.5, §9.7.11.4), and whether `suq`
/// has them too.
const QUERIES: &[(Query, TexQuery, bool)] = &[
    (Query::Width, TexQuery::Width, true),
    (Query::Height, TexQuery::Height, true),
    (Query::Depth, TexQuery::Depth, true),
    (Query::ArraySize, TexQuery::ArraySize, true),
    (Query::NumMipmapLevels, TexQuery::NumMipmapLevels, true),
    (Query::NumSamples, TexQuery::NumSamples, true),
    (Query::NormalizedCoords, TexQuery::NormalizedCoords, false),
    (Query::FilterMode, TexQuery::FilterMode, false),
    (Query::ForceUnnormalizedCoords, TexQuery::ForceUnnormalizedCoords, false),
    (Query::AddrMode0, TexQuery::AddrMode(0), false),
    (Query::AddrMode1, TexQuery::AddrMode(1), false),
    (Query::AddrMode2, TexQuery::AddrMode(2), false),
];

/// The result and whether the coordinates are integers, of a fetch whose types
/// `ptxvk_frontend::forms::media` has checked.
fn fetch_types(m: &Mods) -> (TexResult, bool) {
    let result = match m.types.first().map(|t| t.value) {
        Some(ScalarType::F16x2) => TexResult::F16x2,
        Some(ScalarType::S32) => TexResult::S32,
        Some(ScalarType::U32) => TexResult::U32,
        _ => TexResult::F32,
    };
    (result, m.types.get(1).is_some_and(|t| t.value == ScalarType::S32))
}

/// The operation of a `sured` (PTX ISA 9.2 §9.7.11.3): an atomic read-modify-write of
/// the element, checked against the type and the access.
fn sured_operation(
    m: &Mods,
    ty: OpTy,
    raw_type: ScalarType,
    formatted: bool,
    span: Span,
) -> Result<AtomicOp, Diagnostic> {
    let arithmetic = m.find(|d| match d {
        Modifier::Reduction(Reduction::Add) => Some(AtomicOp::Add),
        Modifier::Reduction(Reduction::Min) => Some(AtomicOp::Min),
        Modifier::Reduction(Reduction::Max) => Some(AtomicOp::Max),
        _ => None,
    });
    // One operation (`ptxvk_frontend::forms::media`).
    let a = arithmetic.map(|a| a.value).unwrap_or(match m.bool_op {
        Some(BoolOp::And) => AtomicOp::And,
        _ => AtomicOp::Or,
    });
    if !matches!(ty.bits(), 32 | 64) {
        return Err(Diagnostic::error(span, "`sured` takes a 32- or 64-bit value"));
    }
    // `sured.p` is `.b32` (`forms::media`), or `.b64` for `.min`/`.max` only.
    if formatted && raw_type == ScalarType::B64 && !matches!(a, AtomicOp::Min | AtomicOp::Max) {
        return Err(Diagnostic::error(
            span,
            "`sured.p` is `.b32`, or `.b64` with `.min` and `.max`",
        ));
    }
    Ok(a)
}
