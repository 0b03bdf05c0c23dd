//! The text of [`crate::ir::InstKind::Texture`]: texture and surface instructions before
//! `pass::expand_texture`.
//!
//! ```text
//! %f1, %f2, %f3, %f4 = tex.a2d.f32.f32.level %rd1, _, [%r1, %f5, %f6], [1, -1], %f7
//! %f1, %f2, _, _, %p1 = tex.2d.f32.s32.grad.resident %rd1, %rd2, [%r5, %r6], [], [%f1, %f2], [%f3, %f4]
//! %r1, %r2, %r3, %r4 = tld4.g.2d.u32.f32 %rd1, _, [%f1, %f2], []
//! %r1 = tex_query.addr_mode_1 param[16]
//! %r1, %r2 = suld.b.2d.zero.u32 module[8], [%r3, %r4]
//! sust.p.a1d.trap.u32 %rd1, [%r5, %r3], %r1, %r2, %r3, %r4
//! sured.min.p.1d.clamp.u64 %rd1, [%r3], %rd2
//! ```
//!
//! A fetch's modifiers are, in order, `tld4`'s channel, the geometry, the result and the
//! coordinate type, then `.level` or `.grad` and `.resident` (whose predicate is the last
//! destination). Its operands: the texture, the sampler (`_` for none), the coordinates
//! (a layered geometry's layer first), the texel offsets (`[]` for none), then the level
//! or the two gradients. A surface access's: the operation (`sured`), `b` or `p`, the
//! geometry, the boundary mode and the element type; the handle, the coordinates, then the
//! values of a store or reduction. A handle is a value, or the variable that holds it:
//! `module[offset]` in the module data, `param[offset]` a kernel parameter.

use ptxvk_frontend::Diagnostic;

use super::video::take_flag;
use super::{op_ty, parse_op_ty, Spelled};
use crate::ir::{
    AtomicOp, Boundary, Channel, OpTy, RegId, SurfaceAccess, SurfaceOp, TexGeometry, TexHandle,
    TexLod, TexQuery, TexResult, TextureFetch, TextureInst, TextureQuery, Value,
};

impl Spelled for TexGeometry {
    const TABLE: &'static [(Self, &'static str)] = &[
        (TexGeometry::D1, "1d"),
        (TexGeometry::D2, "2d"),
        (TexGeometry::D3, "3d"),
        (TexGeometry::A1d, "a1d"),
        (TexGeometry::A2d, "a2d"),
        (TexGeometry::Cube, "cube"),
        (TexGeometry::Acube, "acube"),
    ];
}

impl Spelled for TexResult {
    const TABLE: &'static [(Self, &'static str)] = &[
        (TexResult::F32, "f32"),
        (TexResult::F16x2, "f16x2"),
        (TexResult::S32, "s32"),
        (TexResult::U32, "u32"),
    ];
}

impl Spelled for Channel {
    const TABLE: &'static [(Self, &'static str)] =
        &[(Channel::R, "r"), (Channel::G, "g"), (Channel::B, "b"), (Channel::A, "a")];
}

impl Spelled for TexQuery {
    const TABLE: &'static [(Self, &'static str)] = &[
        (TexQuery::Width, "width"),
        (TexQuery::Height, "height"),
        (TexQuery::Depth, "depth"),
        (TexQuery::ArraySize, "array_size"),
        (TexQuery::NumMipmapLevels, "num_mipmap_levels"),
        (TexQuery::NumSamples, "num_samples"),
        (TexQuery::NormalizedCoords, "normalized_coords"),
        (TexQuery::FilterMode, "filter_mode"),
        (TexQuery::ForceUnnormalizedCoords, "force_unnormalized_coords"),
        (TexQuery::AddrMode(0), "addr_mode_0"),
        (TexQuery::AddrMode(1), "addr_mode_1"),
        (TexQuery::AddrMode(2), "addr_mode_2"),
    ];
}

impl Spelled for Boundary {
    const TABLE: &'static [(Self, &'static str)] =
        &[(Boundary::Trap, "trap"), (Boundary::Clamp, "clamp"), (Boundary::Zero, "zero")];
}

/// The line of a texture or surface instruction.
pub(super) fn print(
    t: &TextureInst,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    let list = |values: &mut dyn Iterator<Item = &Value>| {
        let all: Vec<String> = values.map(|v| value(*v)).collect();
        format!("[{}]", all.join(", "))
    };
    let dst = |d: Option<RegId>| d.map_or_else(|| "_".to_string(), &reg);
    let handle = |h: TexHandle| match h {
        TexHandle::Value(v) => value(v),
        TexHandle::Global(offset) => format!("module[{offset}]"),
        TexHandle::Param(offset) => format!("param[{offset}]"),
    };
    match t {
        TextureInst::Fetch(f) => {
            let mut dsts: Vec<String> = f.dsts.iter().map(|d| dst(*d)).collect();
            let mut head = match f.gather {
                Some(c) => format!("tld4.{}", c.spelling()),
                None => "tex".to_string(),
            };
            let ctype = if f.integer_coords { "s32" } else { "f32" };
            head += &format!(".{}.{}.{ctype}", f.geometry.spelling(), f.result.spelling());
            let mut ops = vec![
                handle(f.texture),
                f.sampler.map_or_else(|| "_".to_string(), &handle),
                list(&mut f.layer.iter().chain(&f.coords)),
                list(&mut f.offsets.iter()),
            ];
            match &f.lod {
                TexLod::Base => {}
                TexLod::Level(l) => {
                    head += ".level";
                    ops.push(value(*l));
                }
                TexLod::Grad { dx, dy } => {
                    head += ".grad";
                    ops.extend([list(&mut dx.iter()), list(&mut dy.iter())]);
                }
            }
            if let Some(p) = f.resident {
                head += ".resident";
                dsts.push(reg(p));
            }
            format!("{} = {head} {}", dsts.join(", "), ops.join(", "))
        }
        TextureInst::Query(q) => {
            let level = q.level.map_or_else(String::new, |l| format!(", {}", value(l)));
            let (field, handle) = (q.field.spelling(), handle(q.handle));
            format!("{} = tex_query.{field} {handle}{level}", reg(q.dst))
        }
        TextureInst::Surface(s) => {
            let access = if s.formatted { "p" } else { "b" };
            let modifiers = format!(
                "{access}.{}.{}.{}",
                s.geometry.spelling(),
                s.boundary.spelling(),
                op_ty(s.ty)
            );
            let at =
                format!("{}, {}", handle(s.handle), list(&mut s.layer.iter().chain(&s.coords)));
            let values = |vs: &[Value]| -> String {
                vs.iter().map(|v| format!(", {}", value(*v))).collect()
            };
            match &s.op {
                SurfaceOp::Load(dsts) => {
                    let dsts: Vec<String> = dsts.iter().map(|d| reg(*d)).collect();
                    format!("{} = suld.{modifiers} {at}", dsts.join(", "))
                }
                SurfaceOp::Store(srcs) => format!("sust.{modifiers} {at}{}", values(srcs)),
                SurfaceOp::Reduce(op, src) => {
                    format!("sured.{}.{modifiers} {at}, {}", op.spelling(), value(*src))
                }
            }
        }
    }
}

/// One instruction line as the texture parsers read it: the parser's line view
/// ([`super::video::Line`]) without its type parameters.
struct Line<'a> {
    opcode: &'a str,
    dsts: &'a [&'a str],
    ops: &'a [&'a str],
    reg: &'a dyn Fn(&str) -> Result<RegId, Diagnostic>,
    value: &'a dyn Fn(&str) -> Result<Value, Diagnostic>,
    error: &'a dyn Fn(String) -> Diagnostic,
}

/// The first modifier, which must be one `f` accepts.
fn first<T>(words: &mut Vec<&str>, f: impl Fn(&str) -> Option<T>) -> Option<T> {
    let v = f(words.first()?)?;
    words.remove(0);
    Some(v)
}

impl Line<'_> {
    fn missing(&self, what: &str) -> Diagnostic {
        (self.error)(format!("`{}` needs {what}", self.opcode))
    }

    fn operand(&self, i: usize) -> Result<&str, Diagnostic> {
        self.ops.get(i).copied().ok_or_else(|| self.missing(&format!("operand {}", i + 1)))
    }

    fn value_at(&self, i: usize) -> Result<Value, Diagnostic> {
        (self.value)(self.operand(i)?)
    }

    /// The handle at operand `i`: a value, `module[offset]` or `param[offset]`.
    fn handle_at(&self, i: usize) -> Result<TexHandle, Diagnostic> {
        let s = self.operand(i)?;
        let held = |prefix: &str| s.strip_prefix(prefix)?.strip_suffix(']')?.parse().ok();
        if let Some(offset) = held("module[") {
            return Ok(TexHandle::Global(offset));
        }
        if let Some(offset) = held("param[") {
            return Ok(TexHandle::Param(offset));
        }
        Ok(TexHandle::Value((self.value)(s)?))
    }

    /// The values of the bracketed list `[a, b]` at operand `i`.
    fn list(&self, i: usize) -> Result<Vec<Value>, Diagnostic> {
        let s = self.operand(i)?;
        let inner = s.strip_prefix('[').and_then(|x| x.strip_suffix(']'));
        let inner = inner.ok_or_else(|| (self.error)(format!("expected `[...]`, found `{s}`")))?;
        inner.split(',').map(str::trim).filter(|x| !x.is_empty()).map(self.value).collect()
    }

    fn operand_count(&self, n: usize) -> Result<(), Diagnostic> {
        if self.ops.len() == n {
            Ok(())
        } else {
            Err(self.missing(&format!("{n} operands, found {}", self.ops.len())))
        }
    }
}

/// A texture or surface instruction, `None` when the line's opcode is not one. Takes
/// every modifier it knows from `words`.
pub(super) fn parse<R, V, E>(
    line: &super::video::Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<Option<TextureInst>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let (opcode, dsts, ops) = (line.opcode, line.dsts, line.ops);
    let l = &Line { opcode, dsts, ops, reg: &line.reg, value: &line.value, error: &line.error };
    let inst = match l.opcode {
        "tex" | "tld4" => TextureInst::Fetch(fetch(l, words)?),
        "tex_query" => {
            let field =
                first(words, TexQuery::from_spelling).ok_or_else(|| l.missing("a field"))?;
            // `handle` or `handle, level`.
            if l.ops.len() != 2 {
                l.operand_count(1)?;
            }
            let [dst] = l.dsts else { return Err(l.missing("one destination")) };
            let level = if l.ops.len() == 2 { Some(l.value_at(1)?) } else { None };
            let (dst, handle) = ((l.reg)(dst)?, l.handle_at(0)?);
            TextureInst::Query(TextureQuery { field, dst, handle, level })
        }
        "suld" | "sust" | "sured" => TextureInst::Surface(surface(l, words)?),
        _ => return Ok(None),
    };
    Ok(Some(inst))
}

fn fetch(l: &Line<'_>, words: &mut Vec<&str>) -> Result<TextureFetch, Diagnostic> {
    let gather = if l.opcode == "tld4" {
        Some(first(words, Channel::from_spelling).ok_or_else(|| l.missing("a channel"))?)
    } else {
        None
    };
    let geometry =
        first(words, TexGeometry::from_spelling).ok_or_else(|| l.missing("a geometry"))?;
    let result = first(words, TexResult::from_spelling).ok_or_else(|| l.missing("a result"))?;
    let integer_coords = match first(words, parse_op_ty) {
        Some(OpTy::F(32)) => false,
        Some(OpTy::S(32)) => true,
        _ => return Err(l.missing("a coordinate type (`.f32`, `.s32`)")),
    };
    let (level, grad, resident) =
        (take_flag(words, "level"), take_flag(words, "grad"), take_flag(words, "resident"));
    let extra = if grad { 2 } else { usize::from(level) };
    l.operand_count(4 + extra)?;
    let mut dsts: Vec<Option<RegId>> = l
        .dsts
        .iter()
        .map(|d| if *d == "_" { Ok(None) } else { (l.reg)(d).map(Some) })
        .collect::<Result<_, _>>()?;
    let resident = match resident {
        true => Some(dsts.pop().flatten().ok_or_else(|| l.missing("a residency predicate"))?),
        false => None,
    };
    let sampler = match l.operand(1)? {
        "_" => None,
        _ => Some(l.handle_at(1)?),
    };
    let mut coords = l.list(2)?;
    let layer =
        if geometry.layered() && !coords.is_empty() { Some(coords.remove(0)) } else { None };
    let lod = if grad {
        TexLod::Grad { dx: l.list(4)?, dy: l.list(5)? }
    } else if level {
        TexLod::Level(l.value_at(4)?)
    } else {
        TexLod::Base
    };
    Ok(TextureFetch {
        gather,
        geometry,
        result,
        integer_coords,
        dsts,
        resident,
        texture: l.handle_at(0)?,
        sampler,
        layer,
        coords,
        offsets: l.list(3)?,
        lod,
    })
}

fn surface(l: &Line<'_>, words: &mut Vec<&str>) -> Result<SurfaceAccess, Diagnostic> {
    let reduction = match l.opcode {
        "sured" => {
            Some(first(words, AtomicOp::from_spelling).ok_or_else(|| l.missing("an operation"))?)
        }
        _ => None,
    };
    let formatted = match first(words, |w| ["b", "p"].iter().position(|x| *x == w)) {
        Some(p) => p == 1,
        None => return Err(l.missing("`.b` or `.p`")),
    };
    let geometry =
        first(words, TexGeometry::from_spelling).ok_or_else(|| l.missing("a geometry"))?;
    let boundary = first(words, Boundary::from_spelling).ok_or_else(|| l.missing("a boundary"))?;
    let ty = first(words, parse_op_ty).ok_or_else(|| l.missing("an element type"))?;
    let mut coords = l.list(1)?;
    let layer =
        if geometry.layered() && !coords.is_empty() { Some(coords.remove(0)) } else { None };
    let values = || l.ops.iter().skip(2).map(|s| (l.value)(s)).collect::<Result<Vec<_>, _>>();
    let op = match (l.opcode, reduction) {
        ("suld", _) => {
            l.operand_count(2)?;
            SurfaceOp::Load(l.dsts.iter().map(|d| (l.reg)(d)).collect::<Result<_, _>>()?)
        }
        (_, Some(op)) => {
            l.operand_count(3)?;
            SurfaceOp::Reduce(op, l.value_at(2)?)
        }
        _ => SurfaceOp::Store(values()?),
    };
    if !matches!(op, SurfaceOp::Load(_)) && !l.dsts.is_empty() {
        return Err(l.missing("no destination"));
    }
    Ok(SurfaceAccess {
        op,
        formatted,
        geometry,
        boundary,
        ty,
        handle: l.handle_at(0)?,
        layer,
        coords,
    })
}

#[cfg(test)]
mod tests {
    /// Every form: fetches with a sampler, a level, gradients, offsets and a residency
    /// predicate; a gather; a query; surface loads, stores and reductions.
    const FORMS: &str = "\
kernel forms {
    params size 8 align 8
    param t .u64 x1 @0 size 8 align 8
    shared 0
    local 0
    entry bb0
    reg i64 %rd1 %rd2
    reg f32 %f1 %f2 %f3 %f4 %f5
    reg i32 %r1 %r2 %r3 %r4
    reg pred %p1
bb0:
    %rd1 = load.param.u64 [0]
    %f1, %f2, %f3, %f4 = tex.a2d.f32.f32.level %rd1, _, [%r1, %f5, %f5], [1, 0xffffffff], %f5
    %f1, _, _, %f4, %p1 = tex.2d.f32.f32.grad.resident %rd1, %rd2, [%f1, %f2], [], [%f3, %f4], [%f5, 0]
    %r1, %r2 = tex.acube.f16x2.f32 %rd1, _, [%r3, %f1, %f2, %f3], []
    %r1, %r2, %r3, %r4 = tex.3d.s32.s32 %rd1, _, [%r1, %r2, %r3], [%r4, 0, 1]
    %r1, %r2, %r3, %r4 = tld4.a.2d.u32.f32 %rd1, %rd2, [%f1, %f2], [2, 3]
    %r1 = tex_query.addr_mode_2 param[0]
    %r1, %r2 = suld.b.a1d.zero.u32 module[8], [%r3, %r4]
    sust.p.3d.trap.u32 %rd1, [%r1, %r2, %r3], %r1, %r2, %r3, %r4
    sured.max.p.2d.clamp.u64 %rd1, [%r1, %r2], %rd2
    return
}
";

    #[test]
    fn every_form_round_trips_and_verifies() {
        let kernels = crate::text::parse(FORMS).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(crate::text::print(&kernels[0]), FORMS);
        assert_eq!(crate::verify::run(&kernels[0]), Ok(()));
    }

    #[test]
    fn shapes_are_checked() {
        for (from, to) in [
            ("[%r1, %f5, %f5], [1", "[%f5, %f5], [1"),
            ("tld4.a.2d", "tld4.a.3d"),
            ("[%r4, 0, 1]", "[%r4, 0]"),
            ("%r1, %r2 = tex.acube", "%r1 = tex.acube"),
        ] {
            let text = FORMS.replacen(from, to, 1);
            let kernels = crate::text::parse(&text).unwrap_or_else(|d| panic!("{to}: {d:?}"));
            assert!(crate::verify::run(&kernels[0]).is_err(), "{to} verifies");
        }
    }
}
