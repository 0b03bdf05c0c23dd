//! Texture and surface instructions (PTX ISA 9.2 §9.7.10-11): `tex`, `tld4`, `txq`,
//! `suld.b`, `sust.b`/`sust.p`, `sured.b`/`sured.p` and `suq`, each resolved into one
//! [`InstKind::Texture`] ([`crate::ir::TextureInst`]), which `pass::expand_texture`
//! expands into the fetches themselves. Their geometries and operands are checked, and
//! read here, by `ptxvk_frontend::forms::texture`, which also refuses what is not
//! implemented: multisample textures, depth compare, and the `txq`/`suq` attributes of
//! formats and samples. A handle held in a `.texref`/`.surfref`/`.tex` variable or a
//! `.texref`/`.samplerref`/`.surfref` parameter is that variable ([`TexHandle`]), which
//! the pass loads.

use ptxvk_frontend::ast::{self, Operand};
use ptxvk_frontend::forms::texture::{self, items, FetchOperands};
use ptxvk_frontend::modifier::{Modifier, Reduction, SurfaceAccess as Access};
use ptxvk_frontend::{Diagnostic, Opcode, Span};

use super::{Mods, Resolver};
use crate::ir::{
    AtomicOp, BoolOp, Channel, InstKind, OpTy, SurfaceAccess, SurfaceOp, TexGeometry, TexHandle,
    TexLod, TexResult, TextureFetch, TextureInst, TextureQuery, Value,
};

const S32: OpTy = OpTy::S(32);
const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);
const F32: OpTy = OpTy::F(32);

/// What a checked `tex` or `tld4` fetches.
struct Fetch {
    gather: Option<Channel>,
    geometry: TexGeometry,
    result: TexResult,
    integer_coords: bool,
}

impl Resolver<'_> {
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
            Opcode::Txq | Opcode::Suq => self.query(i, m).map(TextureInst::Query),
            Opcode::Suld | Opcode::Sust | Opcode::Sured => {
                self.surface(op, i, m).map(TextureInst::Surface)
            }
            _ => return None,
        };
        Some(inst.map(|t| self.push(InstKind::Texture(Box::new(t)), i.span)))
    }

    /// The geometry, one of those ptxvk fetches from with this instruction
    /// (`ptxvk_frontend::forms::texture`).
    fn geometry_of(&self, i: &ast::Instruction, m: &Mods) -> Result<TexGeometry, Diagnostic> {
        texture::fetch_geometry(&m.details)
            .ok_or_else(|| Diagnostic::internal(i.span, "a geometry the forms refuse"))
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
        let geometry = self.geometry_of(i, m)?;
        let (result, integer_coords) = texture::fetch_result(&m.types);
        let fetch = Fetch { gather: None, geometry, result, integer_coords };
        self.fetch(fetch, texture::fetch_operands(i, true, &m.details, &m.types)?, i.span)
    }

    /// `tld4.comp.{2d,a2d}.v4.dtype.f32 d, [handle, {coords}]`.
    fn tld4(&mut self, i: &ast::Instruction, m: &Mods) -> Result<TextureFetch, Diagnostic> {
        let geometry = self.geometry_of(i, m)?;
        let gather = Some(texture::channel(&m.details));
        let (result, _) = texture::fetch_result(&m.types);
        let fetch = Fetch { gather, geometry, result, integer_coords: false };
        self.fetch(fetch, texture::fetch_operands(i, false, &m.details, &m.types)?, i.span)
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
        // Texel offsets (`{, e}`, PTX ISA 9.2 §9.7.10.3) outside -8..7, which the ISA
        // leaves undefined, are used as they are.
        let offsets = self.sources(from.offsets, S32, span)?;
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

    /// `txq.field.b32 d, [handle]`, `txq.level.field.b32 d, [handle], level` and
    /// `suq.field.b32 d, [handle]` (their forms checked by
    /// `ptxvk_frontend::forms::texture`).
    fn query(&mut self, i: &ast::Instruction, m: &Mods) -> Result<TextureQuery, Diagnostic> {
        let span = i.span;
        let (dst, handle, level) = texture::query_operands(i, m.opcode, &m.details)?;
        let dst = self.dst(dst, U32, false)?;
        let handle = self.handle(&handle, span)?;
        let level = level.map(|l| self.src(l, U32, false, span)).transpose()?;
        let field = texture::query(&m.details).and_then(texture::query_field);
        let field = field.ok_or_else(|| Diagnostic::internal(span, "a query the forms refuse"))?;
        Ok(TextureQuery { field, dst, handle, level })
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
        let boundary = texture::boundary(&m.details);
        let Some(ty) = m.types.first() else {
            return Err(Diagnostic::internal(span, "a surface access the forms refuse"));
        };
        let ty = crate::sema::op_ty(ty)?;
        // `sured.op`: an atomic read-modify-write of the element (PTX ISA 9.2 §9.7.11.3).
        let reduction = (op == Opcode::Sured).then(|| sured_operation(m));
        let texture::SurfaceOperands { handle, coords, values: items } =
            texture::surface_operands(i, op, &m.details, m.vector)?;
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

/// The operation of a `sured` (PTX ISA 9.2 §9.7.11.3): an atomic read-modify-write of
/// the element, one (`ptxvk_frontend::forms::media`) of a type and access
/// `ptxvk_frontend::forms::texture` has checked.
fn sured_operation(m: &Mods) -> AtomicOp {
    let arithmetic = m.find(|d| match d {
        Modifier::Reduction(Reduction::Add) => Some(AtomicOp::Add),
        Modifier::Reduction(Reduction::Min) => Some(AtomicOp::Min),
        Modifier::Reduction(Reduction::Max) => Some(AtomicOp::Max),
        _ => None,
    });
    arithmetic.map(|a| a.value).unwrap_or(match m.bool_op {
        Some(BoolOp::And) => AtomicOp::And,
        _ => AtomicOp::Or,
    })
}
