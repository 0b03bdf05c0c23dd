//! The texture and surface instructions of the CFG IR before `pass::expand_texture`
//! ([`crate::ir::InstKind::Texture`]): `tex`, `tld4`, `txq`, `suld`, `sust`, `sured` and
//! `suq` (PTX ISA 9.2 §9.7.10-11) as semantic analysis resolves them: operands are
//! values and registers, modifiers typed, and nothing refers to the AST.
//!
//! A handle (`texture`, `sampler`, `handle`) is a 64-bit value, the device address of a
//! descriptor in ptxvk's layout ([`ptxvk_abi::texture`]), or the `.texref`/`.surfref`
//! variable or parameter that holds one ([`TexHandle`]). Coordinates,
//! layers, texel offsets and levels of detail are 32-bit; fetch results are 32-bit words.
//! What each instruction computes is `pass::expand_texture`'s module doc.

use super::{AtomicOp, OpTy, RegId, Value};
/// The typed modifiers, decoded by the frontend's forms (`ptxvk_frontend::forms::texture`).
pub use ptxvk_frontend::forms::texture::{Boundary, Channel, TexGeometry, TexQuery, TexResult};

/// A texture, sampler or surface handle operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexHandle {
    /// The handle itself (a 64-bit register or immediate).
    Value(Value),
    /// The 64-bit variable at this offset of the module data that holds it: a
    /// `.global .texref`/`.samplerref`/`.surfref` or `.tex` variable, which the host binds.
    Global(u32),
    /// The kernel parameter at this offset that holds it (`.param .texref`, PTX ISA 9.2
    /// §5.3).
    Param(u32),
}

impl TexHandle {
    /// The operand's value, unless a variable holds it.
    pub fn value(&self) -> Option<&Value> {
        match self {
            TexHandle::Value(v) => Some(v),
            TexHandle::Global(_) | TexHandle::Param(_) => None,
        }
    }

    pub fn value_mut(&mut self) -> Option<&mut Value> {
        match self {
            TexHandle::Value(v) => Some(v),
            TexHandle::Global(_) | TexHandle::Param(_) => None,
        }
    }
}

/// A texture or surface instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum TextureInst {
    /// `tex` and `tld4` (§9.7.10.3-4).
    Fetch(TextureFetch),
    /// `txq` and `suq` (§9.7.10.5, §9.7.11.4).
    Query(TextureQuery),
    /// `suld`, `sust` and `sured` (§9.7.11.1-3).
    Surface(SurfaceAccess),
}

/// How a `tex` picks its mipmap level.
#[derive(Clone, Debug, PartialEq)]
pub enum TexLod {
    /// The base level (no `.level` or `.grad`).
    Base,
    /// `.level`: an explicit f32 level of detail.
    Level(Value),
    /// `.grad`: the f32 gradients of the coordinates along x and along y.
    Grad { dx: Vec<Value>, dy: Vec<Value> },
}

/// `tex` or (`gather`) `tld4`: `dsts = fetch(texture, sampler, layer, coords, offsets,
/// lod)`.
#[derive(Clone, Debug, PartialEq)]
pub struct TextureFetch {
    /// `tld4`'s channel; `None` for `tex`.
    pub gather: Option<Channel>,
    pub geometry: TexGeometry,
    pub result: TexResult,
    /// `.s32` coordinates (texel indices), else `.f32`.
    pub integer_coords: bool,
    /// [`TexResult::words`] registers; `None` for `_`.
    pub dsts: Vec<Option<RegId>>,
    /// The residency predicate of `d|p` (always true for ptxvk's textures).
    pub resident: Option<RegId>,
    pub texture: TexHandle,
    /// A separate sampler (`[texture, sampler, coordinates]`).
    pub sampler: Option<TexHandle>,
    /// The layer of a layered geometry (s32).
    pub layer: Option<Value>,
    /// [`TexGeometry::dims`] coordinates.
    pub coords: Vec<Value>,
    /// Texel offsets (s32), one per dimension, or none.
    pub offsets: Vec<Value>,
    pub lod: TexLod,
}

/// `dst = query(handle)`; with `level` (`txq.level`, PTX ISA 9.2 §9.7.10.5, only
/// `.width`, `.height` and `.depth`), the size of that mipmap level, `max(1, size >>
/// level)` (u32, `ptxvk_abi::texture`'s levels).
#[derive(Clone, Debug, PartialEq)]
pub struct TextureQuery {
    pub field: TexQuery,
    pub dst: RegId,
    pub handle: TexHandle,
    pub level: Option<Value>,
}

/// The operation of a [`SurfaceAccess`].
#[derive(Clone, Debug, PartialEq)]
pub enum SurfaceOp {
    /// `suld.b`: consecutive elements of the access type into registers at least as
    /// wide, zero-extended.
    Load(Vec<RegId>),
    /// `sust.b`/`sust.p`: consecutive elements (wider registers truncated), or with
    /// `.p` one 32-bit value per channel.
    Store(Vec<Value>),
    /// `sured.b`/`sured.p`: an atomic read-modify-write of the element by `op` (`Add`,
    /// `Min`, `Max`, `And`, `Or`).
    Reduce(AtomicOp, Value),
}

/// `suld`, `sust` and `sured`: the element at `coords` (bytes in x for `.b`, samples
/// for `.p`) of `layer`.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceAccess {
    pub op: SurfaceOp,
    /// `.p` (formatted) rather than `.b`.
    pub formatted: bool,
    /// 1-D, 2-D, 3-D or layered 1-D/2-D.
    pub geometry: TexGeometry,
    pub boundary: Boundary,
    /// The element type (`.b8`…`.b64`).
    pub ty: OpTy,
    pub handle: TexHandle,
    pub layer: Option<Value>,
    pub coords: Vec<Value>,
}

impl TextureInst {
    /// Calls `f` on every register the instruction names, to rewrite it
    /// (`pass::inline`'s renaming).
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        let value = |v: &mut Value, f: &mut dyn FnMut(&mut RegId)| {
            if let Value::Reg(r) = v {
                f(r)
            }
        };
        match self {
            TextureInst::Fetch(t) => {
                t.dsts.iter_mut().flatten().chain(t.resident.iter_mut()).for_each(&mut *f);
                let lod: Vec<&mut Value> = match &mut t.lod {
                    TexLod::Base => Vec::new(),
                    TexLod::Level(l) => vec![l],
                    TexLod::Grad { dx, dy } => dx.iter_mut().chain(dy.iter_mut()).collect(),
                };
                t.texture
                    .value_mut()
                    .into_iter()
                    .chain(t.sampler.iter_mut().filter_map(TexHandle::value_mut))
                    .chain(t.layer.iter_mut())
                    .chain(t.coords.iter_mut())
                    .chain(t.offsets.iter_mut())
                    .chain(lod)
                    .for_each(|v| value(v, f));
            }
            TextureInst::Query(q) => {
                f(&mut q.dst);
                let handle = q.handle.value_mut().into_iter();
                handle.chain(q.level.iter_mut()).for_each(|v| value(v, f));
            }
            TextureInst::Surface(s) => {
                s.handle
                    .value_mut()
                    .into_iter()
                    .chain(s.layer.iter_mut())
                    .chain(s.coords.iter_mut())
                    .for_each(|v| value(v, f));
                match &mut s.op {
                    SurfaceOp::Load(dsts) => dsts.iter_mut().for_each(&mut *f),
                    SurfaceOp::Store(srcs) => srcs.iter_mut().for_each(|v| value(v, f)),
                    SurfaceOp::Reduce(_, src) => value(src, f),
                }
            }
        }
    }

    /// The registers the instruction writes (`defs`) and reads (`uses`).
    pub fn defs_uses(&self, defs: &mut Vec<RegId>, uses: &mut Vec<RegId>) {
        let mut read = |v: &Value| {
            if let Value::Reg(r) = v {
                uses.push(*r);
            }
        };
        match self {
            TextureInst::Fetch(f) => {
                defs.extend(f.dsts.iter().flatten().chain(&f.resident));
                let lod: Vec<&Value> = match &f.lod {
                    TexLod::Base => Vec::new(),
                    TexLod::Level(l) => vec![l],
                    TexLod::Grad { dx, dy } => dx.iter().chain(dy).collect(),
                };
                let sampler = f.sampler.iter().filter_map(TexHandle::value);
                let handles = f.texture.value().into_iter().chain(sampler).chain(&f.layer);
                handles.chain(&f.coords).chain(&f.offsets).chain(lod).for_each(&mut read);
            }
            TextureInst::Query(q) => {
                defs.push(q.dst);
                q.handle.value().into_iter().chain(&q.level).for_each(&mut read);
            }
            TextureInst::Surface(s) => {
                let handle = s.handle.value().into_iter();
                handle.chain(&s.layer).chain(&s.coords).for_each(&mut read);
                match &s.op {
                    SurfaceOp::Load(dsts) => defs.extend(dsts),
                    SurfaceOp::Store(srcs) => srcs.iter().for_each(read),
                    SurfaceOp::Reduce(_, src) => read(src),
                }
            }
        }
    }

    /// What is wrong with the instruction's shape, if anything: the coordinates a
    /// geometry takes (and a layer exactly when it is layered), the result words, the
    /// texel offsets (none, or one per dimension), `tld4`'s 2-D geometries and `.f32`
    /// coordinates, the three dimensions of address modes, a surface's geometries (no
    /// cube maps) and element types.
    pub fn malformed(&self) -> Option<&'static str> {
        let coords = |g: TexGeometry, layer: &Option<Value>, coords: &[Value]| {
            coords.len() == g.dims() && layer.is_some() == g.layered()
        };
        match self {
            TextureInst::Fetch(f) => {
                if !coords(f.geometry, &f.layer, &f.coords) {
                    Some("a texture fetch with the wrong coordinates for its geometry")
                } else if f.dsts.len() != f.result.words() {
                    Some("a texture fetch with the wrong number of results")
                } else if !(f.offsets.is_empty() || f.offsets.len() == f.geometry.dims()) {
                    Some("a texture fetch with the wrong number of texel offsets")
                } else if f.gather.is_some()
                    && (f.geometry.dims() != 2 || f.integer_coords || f.result == TexResult::F16x2)
                {
                    Some("a `tld4` that is not a 2-D gather at `.f32` coordinates")
                } else {
                    None
                }
            }
            TextureInst::Query(q) => match q.field {
                TexQuery::AddrMode(k) if k > 2 => Some("a query of a fourth dimension"),
                TexQuery::Width | TexQuery::Height | TexQuery::Depth => None,
                _ if q.level.is_some() => Some("a level query of a field without levels"),
                _ => None,
            },
            TextureInst::Surface(s) => {
                let values = match &s.op {
                    SurfaceOp::Load(dsts) => dsts.len(),
                    SurfaceOp::Store(srcs) => srcs.len(),
                    SurfaceOp::Reduce(..) => 1,
                };
                if !coords(s.geometry, &s.layer, &s.coords) || s.geometry.cube() {
                    Some("a surface access with the wrong coordinates for its geometry")
                } else if !matches!(s.ty.bits(), 8 | 16 | 32 | 64) || values == 0 {
                    Some("a surface access without values of 8 to 64 bits")
                } else {
                    None
                }
            }
        }
    }

    /// The register operands whose width is fixed, with that width: handles 64 bits,
    /// coordinates, offsets, levels and fetch results 32, the residency predicate 1.
    /// Surface values may be wider registers than the access type (PTX ISA 9.2
    /// §9.7.11.1), so they have no fixed width.
    pub fn operand_widths(&self) -> Vec<(RegId, u32)> {
        let reg = |v: &Value| match v {
            Value::Reg(r) => Some(*r),
            Value::Imm(_) => None,
        };
        let mut out = Vec::new();
        match self {
            TextureInst::Fetch(f) => {
                out.extend(f.dsts.iter().flatten().map(|&r| (r, 32)));
                out.extend(f.resident.map(|r| (r, 1)));
                let handles = std::iter::once(&f.texture).chain(&f.sampler);
                out.extend(handles.filter_map(TexHandle::value).filter_map(reg).map(|r| (r, 64)));
                let lod: Vec<&Value> = match &f.lod {
                    TexLod::Base => Vec::new(),
                    TexLod::Level(l) => vec![l],
                    TexLod::Grad { dx, dy } => dx.iter().chain(dy).collect(),
                };
                let words = f.layer.iter().chain(&f.coords).chain(&f.offsets).chain(lod);
                out.extend(words.filter_map(reg).map(|r| (r, 32)));
            }
            TextureInst::Query(q) => {
                out.push((q.dst, 32));
                out.extend(q.handle.value().and_then(reg).map(|r| (r, 64)));
                out.extend(q.level.as_ref().and_then(reg).map(|r| (r, 32)));
            }
            TextureInst::Surface(s) => {
                out.extend(s.handle.value().and_then(reg).map(|r| (r, 64)));
                out.extend(s.layer.iter().chain(&s.coords).filter_map(reg).map(|r| (r, 32)));
            }
        }
        out
    }
}
