//! Pass: texture and surface instructions (PTX ISA 9.2 §9.7.10-11) become the
//! kernel's own code that reads their descriptors and texels: `tex` (1-D, 2-D, 3-D,
//! layered 1-D/2-D and cube-map geometries; `.f32` and `.s32` coordinates; `.f32`,
//! `.f16x2`, `.s32` and `.u32` results; texel offsets; `.level` and `.grad` on
//! mipmapped textures), `tld4`, `txq`, `suld.b`, `sust.b`/`sust.p`, `sured.b`/`sured.p`
//! and `suq`, on texture and surface objects: 64-bit handles that are the device
//! address of a descriptor in ptxvk's layout ([`ptxvk_abi::texture`]), loaded first
//! from the `.texref`/`.surfref`/`.tex` variable or parameter that holds one
//! ([`TexHandle`]).
//!
//! Every fetch is the kernel's own code, so the result is NVIDIA's on any device
//! (CUDA Programming Guide, "Texture Fetching"):
//!
//! - a float coordinate `x` of a dimension of `n` texels is, with normalized
//!   coordinates, first wrapped (`x - floor(x)`) or mirrored (`frac(x)`, or `1 -
//!   frac(x)` where `floor(x)` is odd) when that is its address mode, then scaled by
//!   `n`; integer coordinates (`.s32`) are texel indices;
//! - point sampling takes texel `floor(x)`; linear filtering takes texels
//!   `i = floor(x - 0.5)` and `i + 1` with weight `a = frac(x - 0.5)` held, as NVIDIA's hardware holds
//!   it, in 9-bit fixed point with 8 fraction bits (rounded to the nearest 1/256, ties
//!   to even): `(1 - a) T[i] + a T[i + 1]`, and in 2-D and 3-D the products of the
//!   dimensions' weights (exact) times the texels, summed in f32 in the order of
//!   corners `x + 2y + 4z`;
//! - a texel index outside the texture is wrapped (`.wrap`, normalized coordinates),
//!   clamped (`.clamp`, and `.wrap`/`.mirror` with unnormalized coordinates, as CUDA
//!   does), or reads the border colour (`.border`; 0 for integer results);
//! - channels convert to the result: floats as they are (halves widened), 8- and 16-bit
//!   integers read as normalized floats divided by 255/65535 (unsigned) or 127/32767
//!   (signed, at least -1), integers to `.s32`/`.u32` extended; absent channels read as
//!   (0, 0, 0, 1); sRGB textures decode R, G and B through the table after the
//!   descriptor ([`Expand::srgb_decode`]);
//! - cube maps pick a face, a layer ([`Expand::cube_face`]); mipmapped textures a level
//!   of detail and one or two levels ([`Expand::mip_fetch`], [`Expand::level`]).
//!
//! Surfaces address bytes in x (`.b`) or samples (`.p`), and rows, slices or layers in
//! the other coordinates; an access outside the surface traps (`.trap`), is clamped to
//! the nearest inside (`.clamp`), or reads zero and writes nothing (`.zero`). `sust.p`
//! converts its values to the surface's channels ([`Expand::store_channel`]); `sured.p`
//! reduces 32-bit integer samples (64-bit: two 32-bit channels) as signed or unsigned
//! by the format, and traps on any other format. A descriptor without ptxvk's magic
//! word (not made by its driver library or API) traps.
//!
//! A fetch of the form `[texture, sampler, coordinates]` (PTX's independent texture
//! mode) takes the sampler state from the separate sampler's descriptor
//! ([`Expand::with_sampler`]); a sampler has no texels, and fetching from one traps.
//!
//! Texel offsets (`{, e}`) are added to the coordinates in texels; `.f16x2` results are
//! the float results rounded to halves; the residency predicate of `d|p` is true.
//!
//! Pre: CFG IR from semantic analysis, whose [`InstKind::Texture`] instructions are
//! resolved and checked (`sema::texture`; what ptxvk does not implement, such as
//! multisample textures and depth compare, is a diagnostic there).
//!
//! Post: no [`InstKind::Texture`] is left. Each became loads of its descriptor and
//! texels with the instruction's span (which `pass::check` then instruments as the
//! program's own accesses, so this pass runs first), arithmetic, and control flow:
//! the blocks of its conditions and of its traps (a failure recorded in the system
//! area, [`Kernel::system`], then the thread's end), appended to the kernel; the
//! instructions after it move to the last of them.

use ptxvk_abi::texture::{flags, format, offset, AddressMode, ChannelKind, MAGIC, SIZE};
use ptxvk_frontend::Diagnostic;

use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{
    Address, BinaryOp, CmpOp, FloatFormat, FloatMode, InstKind, Kernel, OpTy, RegId, Rounding,
    Space, SpecialReg, TexHandle, TexLod, TexQuery, TexResult, TextureFetch, TextureInst,
    TextureQuery, UnaryOp, Value,
};

mod surface;

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);
const U64: OpTy = OpTy::U(64);
const F32: OpTy = OpTy::F(32);

/// The descriptor's fields, read at run time (of one mipmap level: [`Expand::level`]).
#[derive(Clone, Copy)]
struct Desc {
    /// The descriptor's own address (an sRGB table follows it).
    base: Value,
    address: Value,
    sizes: [Value; 3],
    layers: Value,
    row_pitch: Value,
    slice_pitch: Value,
    kind: Value,
    channel_bytes: Value,
    channels: Value,
    /// `channel_bytes * channels`.
    texel_bytes: Value,
    flags: Value,
    border: [Value; 4],
    /// Mipmap levels (0 or 1: one), bias, minimum and maximum level.
    levels: Value,
    lod_bias: Value,
    lod_min: Value,
    lod_max: Value,
}

/// What a fetch returns: floats, or integers.
#[derive(Clone, Copy, PartialEq)]
enum Result4 {
    Float,
    Int,
}

/// Where a fetch reads: coordinates (f32 or s32), texel offsets (s32 per dimension, or
/// none) and the layer.
#[derive(Clone, Copy)]
struct Coords<'a> {
    xs: &'a [Value],
    offsets: &'a [Value],
    layer: Option<Value>,
}

/// Whether `kind` is an instruction this pass expands (`pass::leftover`).
pub fn is_texture(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Texture(_))
}

/// Expands every texture and surface instruction of `k` as the module doc says. One
/// whose shape is wrong (`TextureInst::malformed`) is an internal error.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    expander::each(k, is_texture, |k, cur, span, kind| {
        let InstKind::Texture(t) = kind else { return Ok(cur) };
        if let Some(what) = t.malformed() {
            return Err(Diagnostic::internal(span, what));
        }
        let mut e = Expand { k, cur, span };
        e.inst(&t);
        Ok(e.cur)
    })
}

expander::expansion!(
    /// Builds the expansion of one instruction from block `cur` on: instructions go to the
    /// current block, branches end it and continue in new blocks, all with `span`.
    struct Expand
);

impl Expand<'_> {
    /// Expands one texture or surface instruction.
    fn inst(&mut self, t: &TextureInst) {
        // The handles first, the texture's before the sampler's.
        match t {
            TextureInst::Fetch(f) => {
                let texture = self.handle(f.texture);
                let sampler = f.sampler.map(|s| self.handle(s));
                match f.gather {
                    Some(channel) => self.tld4(f, texture, sampler, channel.index()),
                    None => self.tex(f, texture, sampler),
                }
            }
            TextureInst::Query(q) => {
                let handle = self.handle(q.handle);
                self.query(q, handle)
            }
            TextureInst::Surface(s) => {
                let handle = self.handle(s.handle);
                self.surface(s, handle)
            }
        }
    }

    /// The value of handle operand `h`: loaded from the variable or parameter that holds
    /// it (the module data's address is `SpecialReg::ModuleData`).
    fn handle(&mut self, h: TexHandle) -> Value {
        let (space, addr) = match h {
            TexHandle::Value(v) => return v,
            TexHandle::Global(offset) => {
                let data = self.temp(U64);
                self.push(InstKind::Special { dst: data, reg: SpecialReg::ModuleData });
                let at = match offset {
                    0 => data,
                    _ => {
                        let at = self.temp(U64);
                        let (lhs, rhs) = (Value::Reg(data), Value::Imm(u64::from(offset)));
                        let mode = FloatMode::default();
                        let (op, ty, dst) = (BinaryOp::Add, U64, at);
                        self.push(InstKind::Binary { op, ty, mode, dst, lhs, rhs });
                        at
                    }
                };
                (Space::Global, Address { base: Some(at), offset: 0 })
            }
            TexHandle::Param(offset) => {
                (Space::Param, Address { base: None, offset: i64::from(offset) })
            }
        };
        let r = self.temp(U64);
        self.push(InstKind::Load { space, ty: U64, dsts: vec![Some(r)], addr });
        Value::Reg(r)
    }

    /// Loads the descriptor at `handle`, trapping when it is null (an unbound reference)
    /// or not ptxvk's.
    fn descriptor(&mut self, handle: Value) -> Desc {
        let base = self.temp(U64);
        self.mov(U64, base, handle);
        let null = self.cmp(CmpOp::Eq, U64, Value::Reg(base), Value::Imm(0));
        self.trap_if(null);
        let field = |l: &mut Self, ty: OpTy, off: u32| -> Value {
            let r = l.temp(ty);
            let addr = Address { base: Some(base), offset: i64::from(off) };
            l.push(InstKind::Load { space: Space::Global, ty, dsts: vec![Some(r)], addr });
            Value::Reg(r)
        };
        let magic = field(self, U32, offset::MAGIC);
        let foreign = self.cmp(CmpOp::Ne, U32, magic, Value::Imm(u64::from(MAGIC)));
        self.trap_if(foreign);
        let address = field(self, U64, offset::ADDRESS);
        let sizes = [offset::WIDTH, offset::HEIGHT, offset::DEPTH].map(|o| field(self, U32, o));
        let layers = field(self, U32, offset::LAYERS);
        let row_pitch = field(self, U64, offset::ROW_PITCH);
        let slice_pitch = field(self, U64, offset::SLICE_PITCH);
        let word = field(self, U32, offset::FORMAT);
        let flags = field(self, U32, offset::FLAGS);
        let border = [0, 1, 2, 3].map(|c| field(self, U32, offset::BORDER + 4 * c));
        let levels = field(self, U32, offset::LEVELS);
        let lod_bias = field(self, U32, offset::LEVEL_BIAS);
        let lod_min = field(self, U32, offset::MIN_LEVEL);
        let lod_max = field(self, U32, offset::MAX_LEVEL);
        let kind = self.and(U32, word, Value::Imm(u64::from(format::KIND_MASK)));
        let channel_bytes =
            self.bin(BinaryOp::Shr, U32, word, Value::Imm(u64::from(format::BYTES_SHIFT)));
        let channel_bytes = self.and(U32, channel_bytes, Value::Imm(0xf));
        let channels =
            self.bin(BinaryOp::Shr, U32, word, Value::Imm(u64::from(format::CHANNELS_SHIFT)));
        let channels = self.and(U32, channels, Value::Imm(0xf));
        let texel_bytes = self.bin(BinaryOp::Mul, U32, channel_bytes, channels);
        Desc {
            base: Value::Reg(base),
            address,
            sizes,
            layers,
            row_pitch,
            slice_pitch,
            kind,
            channel_bytes,
            channels,
            texel_bytes,
            flags,
            border,
            levels,
            lod_bias,
            lod_min,
            lod_max,
        }
    }

    /// `d` with the sampler state of the separate sampler at `handle` (module doc of
    /// [`ptxvk_abi::texture`]): its filters, address modes, border colour and level of
    /// detail; coordinates stay the texture's unless it forces unnormalized ones.
    fn with_sampler(&mut self, d: Desc, handle: Value) -> Desc {
        let s = self.descriptor(handle);
        let kept = self.and(U32, d.flags, Value::Imm(u64::from(!flags::SAMPLER_STATE)));
        let taken = self.and(U32, s.flags, Value::Imm(u64::from(flags::SAMPLER_STATE)));
        let merged = self.bin(BinaryOp::Or, U32, kept, taken);
        let force = self.bin(
            BinaryOp::Shr,
            U32,
            s.flags,
            Value::Imm(u64::from(flags::FORCE_UNNORMALIZED.trailing_zeros())),
        );
        let force = self.and(U32, force, Value::Imm(u64::from(flags::NORMALIZED_COORDS)));
        let not_force = self.bin(BinaryOp::Xor, U32, force, Value::Imm(u64::from(u32::MAX)));
        let flags = self.and(U32, merged, not_force);
        Desc {
            flags,
            border: s.border,
            lod_bias: s.lod_bias,
            lod_min: s.lod_min,
            lod_max: s.lod_max,
            ..d
        }
    }

    /// Traps unless `d` has texels: a sampler's descriptor has none (width 0).
    fn require_texels(&mut self, d: &Desc) {
        let none = self.cmp(CmpOp::Eq, U32, d.sizes[0], Value::Imm(0));
        self.trap_if(none);
    }

    /// The texture's descriptor, with a separate sampler's state when there is one
    /// (`[texture, sampler, coordinates]`).
    fn texture_descriptor(&mut self, handle: Value, sampler: Option<Value>) -> Desc {
        let d = self.descriptor(handle);
        self.require_texels(&d);
        match sampler {
            Some(s) => self.with_sampler(d, s),
            None => d,
        }
    }

    /// Whether flag bits `mask` are set.
    fn flag(&mut self, d: &Desc, mask: u32) -> RegId {
        let bits = self.and(U32, d.flags, Value::Imm(u64::from(mask)));
        self.cmp(CmpOp::Ne, U32, bits, Value::Imm(0))
    }

    /// Whether dimension `dim`'s address mode is `mode`.
    fn address_mode_is(&mut self, d: &Desc, dim: usize, mode: AddressMode) -> RegId {
        let shift = flags::ADDRESS_SHIFT + 2 * dim as u32;
        let bits = self.bin(BinaryOp::Shr, U32, d.flags, Value::Imm(u64::from(shift)));
        let bits = self.and(U32, bits, Value::Imm(3));
        self.cmp(CmpOp::Eq, U32, bits, Value::Imm(mode as u64))
    }

    /// `tex.geom.v4.dtype.ctype d, [handle, {coords}] {, lod | dPdx, dPdy}`.
    fn tex(&mut self, f: &TextureFetch, handle: Value, sampler: Option<Value>) {
        if let Some(p) = f.resident {
            self.set_resident(p);
        }
        let (cube, integer_coords) = (f.geometry.cube(), f.integer_coords);
        let result = if f.result.is_float() { Result4::Float } else { Result4::Int };
        let offsets = &f.offsets;
        let (xs, layer) = (f.coords.clone(), f.layer);
        let d = self.texture_descriptor(handle, sampler);
        let (xs, layer) = if cube {
            let (st, face) = self.cube_face(&xs);
            // Layered cube maps: six layers per cube.
            let layer = match layer {
                Some(l) => {
                    let first = self.bin(BinaryOp::Mul, S32, l, Value::Imm(6));
                    self.add(S32, first, face)
                }
                None => face,
            };
            (st.to_vec(), Some(layer))
        } else {
            (xs, layer)
        };
        let lod = match &f.lod {
            TexLod::Level(level) => Some(*level),
            TexLod::Grad { dx, dy } if !cube => Some(self.gradient_lod(&d, dx, dy)),
            _ => None,
        };
        let at = Coords { xs: &xs, offsets, layer };
        let values = match lod {
            Some(lod) if !integer_coords => self.mip_fetch(&d, at, result, cube, lod),
            _ => self.fetch(&d, at, integer_coords, result, cube),
        };
        let values = if f.result == TexResult::F16x2 {
            let half = |e: &mut Self, v: Value| {
                let h = e.narrow(FloatFormat::F16, F32, Rounding::Nearest, false, false, v);
                e.cvt(U32, OpTy::U(16), h)
            };
            let pack = |e: &mut Self, lo: Value, hi: Value| {
                let lo = half(e, lo);
                let hi = half(e, hi);
                let hi = e.bin(BinaryOp::Shl, U32, hi, Value::Imm(16));
                e.bin(BinaryOp::Or, U32, lo, hi)
            };
            vec![pack(self, values[0], values[1]), pack(self, values[2], values[3])]
        } else {
            values.to_vec()
        };
        for (reg, v) in f.dsts.iter().zip(values) {
            if let Some(r) = reg {
                self.mov(U32, *r, v);
            }
        }
    }

    /// `tld4.comp.{2d,a2d}.v4.dtype.f32 d, [handle, {coords}]`: component `comp` of the
    /// four texels linear filtering would use, in the order (i, j+1), (i+1, j+1),
    /// (i+1, j), (i, j) (counter-clockwise from the lower left, as the ISA says).
    fn tld4(&mut self, f: &TextureFetch, handle: Value, sampler: Option<Value>, comp: usize) {
        if let Some(p) = f.resident {
            self.set_resident(p);
        }
        let result = if f.result.is_float() { Result4::Float } else { Result4::Int };
        let offsets = &f.offsets;
        let (layer, xs, dregs) = (f.layer, &f.coords, &f.dsts);
        let d = self.texture_descriptor(handle, sampler);
        let layer = layer.map(|l| self.clamp_layer(&d, l));
        let normalized = self.flag(&d, flags::NORMALIZED_COORDS);
        let mut lower = Vec::new();
        for (k, &x) in xs.iter().enumerate() {
            let c = self.texel_coordinate(&d, k, x, offsets.get(k).copied(), normalized);
            let b = self.bin(BinaryOp::Sub, F32, c, Value::Imm(0.5f32.to_bits().into()));
            lower.push(self.convert(S32, F32, Some(Rounding::Down), Default::default(), b));
        }
        for (slot, (dx, dy)) in [(0, 1), (1, 1), (1, 0), (0, 0)].into_iter().enumerate() {
            let mut idx = Vec::new();
            let mut outside = Vec::new();
            for (k, up) in [dx, dy].into_iter().enumerate() {
                let i = self.add(S32, lower[k], Value::Imm(up));
                let (at, out) = self.texel_index(&d, k, i);
                idx.push(at);
                outside.push(out);
            }
            let texel = self.read_texel(&d, &idx, layer, &outside, result);
            if let Some(r) = dregs[slot] {
                self.mov(U32, r, texel[comp]);
            }
        }
    }

    /// The face of a cube map a direction `{x, y, z}` points at, and the normalized
    /// coordinates in it (CUDA Programming Guide, "Cubemap Textures"): the major axis
    /// (x before y before z on ties) and its sign pick the face and `(sc, tc)`, and the
    /// face coordinates are `((sc / |m| + 1) / 2, (tc / |m| + 1) / 2)`.
    fn cube_face(&mut self, v: &[Value]) -> ([Value; 2], Value) {
        let zero = Value::Imm(0);
        let [x, y, z] = [v[0], v[1], v[2]];
        let [ax, ay, az] = [x, y, z].map(|a| self.un(UnaryOp::Abs, F32, a));
        let [nx, ny, nz] = [x, y, z].map(|a| self.un(UnaryOp::Neg, F32, a));
        let x_over_y = self.cmp(CmpOp::Ge, F32, ax, ay);
        let x_over_z = self.cmp(CmpOp::Ge, F32, ax, az);
        let x_major = self.pred_and(x_over_y, x_over_z);
        let y_major = self.cmp(CmpOp::Ge, F32, ay, az);
        let (px, py, pz) = (
            self.cmp(CmpOp::Ge, F32, x, zero),
            self.cmp(CmpOp::Ge, F32, y, zero),
            self.cmp(CmpOp::Ge, F32, z, zero),
        );
        // Per axis: face (positive, negative), sc (positive, negative), tc (both).
        let x_face = self.sel(U32, px, Value::Imm(0), Value::Imm(1));
        let x_sc = self.sel(F32, px, nz, z);
        let y_face = self.sel(U32, py, Value::Imm(2), Value::Imm(3));
        let y_tc = self.sel(F32, py, z, nz);
        let z_face = self.sel(U32, pz, Value::Imm(4), Value::Imm(5));
        let z_sc = self.sel(F32, pz, x, nx);
        let pick = |e: &mut Self, ty: OpTy, [xv, yv, zv]: [Value; 3]| {
            let yz = e.sel(ty, y_major, yv, zv);
            e.sel(ty, x_major, xv, yz)
        };
        let face = pick(self, U32, [x_face, y_face, z_face]);
        let sc = pick(self, F32, [x_sc, x, z_sc]);
        let tc = pick(self, F32, [ny, y_tc, ny]);
        let m = pick(self, F32, [ax, ay, az]);
        let one = Value::Imm(1f32.to_bits().into());
        let half = Value::Imm(0.5f32.to_bits().into());
        let st = [sc, tc].map(|c| {
            let q = self.bin(BinaryOp::Div, F32, c, m);
            let q = self.bin(BinaryOp::Add, F32, q, one);
            self.bin(BinaryOp::Mul, F32, q, half)
        });
        (st, face)
    }

    /// The level of detail of gradients `dx`, `dy` (of the coordinates, per dimension):
    /// `log2` of the longer gradient in texels (ptxvk's definition: NVIDIA documents no
    /// precision for it), computed with `lg2.approx`.
    fn gradient_lod(&mut self, d: &Desc, dx: &[Value], dy: &[Value]) -> Value {
        let mut longest = Value::Imm(0);
        for g in [dx, dy] {
            let mut sum = Value::Imm(0);
            for (k, &v) in g.iter().enumerate().take(3) {
                let n = self.convert(F32, U32, None, Default::default(), d.sizes[k]);
                let t = self.bin(BinaryOp::Mul, F32, v, n);
                let sq = self.bin(BinaryOp::Mul, F32, t, t);
                sum = self.bin(BinaryOp::Add, F32, sum, sq);
            }
            let length = self.un(UnaryOp::Sqrt, F32, sum);
            longest = self.bin(BinaryOp::Max, F32, longest, length);
        }
        self.un(UnaryOp::Lg2, F32, longest)
    }

    /// A fetch at level of detail `lod` (f32): plus the bias, clamped to the minimum and
    /// maximum level and the levels there are; the nearest level (`floor(lod + 0.5)`), or
    /// with linear mipmap filtering the two around it, weighted in 1.8 fixed point as
    /// the texels are.
    fn mip_fetch(
        &mut self,
        d: &Desc,
        at: Coords<'_>,
        result: Result4,
        cube: bool,
        lod: Value,
    ) -> [Value; 4] {
        let mip_linear = self.flag(d, flags::MIP_LINEAR);
        let levels = self.bin(BinaryOp::Max, U32, d.levels, Value::Imm(1));
        let top = self.bin(BinaryOp::Sub, U32, levels, Value::Imm(1));
        let top = self.convert(F32, U32, None, Default::default(), top);
        let lodc = self.bin(BinaryOp::Add, F32, lod, d.lod_bias);
        let lodc = self.bin(BinaryOp::Max, F32, lodc, d.lod_min);
        let lodc = self.bin(BinaryOp::Min, F32, lodc, d.lod_max);
        let lodc = self.bin(BinaryOp::Max, F32, lodc, Value::Imm(0));
        let lodc = self.bin(BinaryOp::Min, F32, lodc, top);
        let half = Value::Imm(0.5f32.to_bits().into());
        let rounded = self.bin(BinaryOp::Add, F32, lodc, half);
        let nearest = self.convert(U32, F32, Some(Rounding::Down), Default::default(), rounded);
        let below = self.convert(U32, F32, Some(Rounding::Down), Default::default(), lodc);
        let first = self.sel(U32, mip_linear, below, nearest);
        let last = self.bin(BinaryOp::Sub, U32, levels, Value::Imm(1));
        let d0 = self.level(d, first);
        let t0 = self.fetch(&d0, at, false, result, cube);
        if result == Result4::Int {
            return t0;
        }
        let out: [RegId; 4] = [(); 4].map(|()| self.temp(U32));
        for (r, v) in out.iter().zip(t0) {
            self.mov(U32, *r, v);
        }
        self.guarded(mip_linear, false, |l| {
            let floor = l.convert(F32, F32, Some(Rounding::Down), Default::default(), lodc);
            let frac = l.bin(BinaryOp::Sub, F32, lodc, floor);
            let scaled = l.bin(BinaryOp::Mul, F32, frac, Value::Imm(256f32.to_bits().into()));
            let steps = l.convert(F32, F32, Some(Rounding::Nearest), Default::default(), scaled);
            let w = l.bin(BinaryOp::Mul, F32, steps, Value::Imm((1.0f32 / 256.0).to_bits().into()));
            let one = Value::Imm(1f32.to_bits().into());
            let w0 = l.bin(BinaryOp::Sub, F32, one, w);
            let next = l.add(U32, first, Value::Imm(1));
            let next = l.bin(BinaryOp::Min, U32, next, last);
            let d1 = l.level(d, next);
            let t1 = l.fetch(&d1, at, false, result, cube);
            for (r, (a, b)) in out.iter().zip(t0.iter().zip(t1)) {
                let a = l.bin(BinaryOp::Mul, F32, w0, *a);
                let b = l.bin(BinaryOp::Mul, F32, w, b);
                let sum = l.bin(BinaryOp::Add, F32, a, b);
                l.mov(U32, *r, sum);
            }
        });
        out.map(Value::Reg)
    }

    /// Level `level` (u32, below the levels there are) of a mipmapped texture: its sizes
    /// (`max(1, size >> level)`), packed pitches and address (module doc of
    /// [`ptxvk_abi::texture`]); level 0 keeps the descriptor's pitches.
    fn level(&mut self, d: &Desc, level: Value) -> Desc {
        let three_d = self.cmp(CmpOp::Eq, U32, d.layers, Value::Imm(0));
        let shrink = |e: &mut Self, size: Value, level: Value| {
            let s = e.bin(BinaryOp::Shr, U32, size, level);
            e.bin(BinaryOp::Max, U32, s, Value::Imm(1))
        };
        let texel64 = self.cvt(U64, U32, d.texel_bytes);
        // The bytes of level j: rows x height x (depth or layers).
        let slab = |e: &mut Self, j: Value| -> (Value, Value, Value, [Value; 3]) {
            let sizes =
                [shrink(e, d.sizes[0], j), shrink(e, d.sizes[1], j), shrink(e, d.sizes[2], j)];
            let w = e.cvt(U64, U32, sizes[0]);
            let row = e.bin(BinaryOp::Mul, U64, w, texel64);
            let h = e.cvt(U64, U32, sizes[1]);
            let slice = e.bin(BinaryOp::Mul, U64, row, h);
            let layers = e.bin(BinaryOp::Max, U32, d.layers, Value::Imm(1));
            let count = e.sel(U32, three_d, sizes[2], layers);
            let count = e.cvt(U64, U32, count);
            let bytes = e.bin(BinaryOp::Mul, U64, slice, count);
            (row, slice, bytes, sizes)
        };
        let offset = self.temp(U64);
        self.mov(U64, offset, Value::Imm(0));
        self.counted_loop(level, 1, |l, j| {
            let (_, _, bytes, _) = slab(l, j);
            let next = l.add(U64, Value::Reg(offset), bytes);
            l.mov(U64, offset, next);
        });
        let (row, slice, _, sizes) = slab(self, level);
        let base = self.cmp(CmpOp::Eq, U32, level, Value::Imm(0));
        let row_pitch = self.sel(U64, base, d.row_pitch, row);
        let slice_pitch = self.sel(U64, base, d.slice_pitch, slice);
        let address = self.add(U64, d.address, Value::Reg(offset));
        Desc { address, sizes, row_pitch, slice_pitch, ..*d }
    }

    /// Layer `l` clamped to the texture's layers.
    fn clamp_layer(&mut self, d: &Desc, l: Value) -> Value {
        let last = self.bin(BinaryOp::Sub, U32, d.layers, Value::Imm(1));
        let low = self.bin(BinaryOp::Max, S32, l, Value::Imm(0));
        self.bin(BinaryOp::Min, S32, low, last)
    }

    /// The four result words of a fetch at `at` (module doc).
    fn fetch(
        &mut self,
        d: &Desc,
        at: Coords<'_>,
        integer_coords: bool,
        result: Result4,
        normalized_always: bool,
    ) -> [Value; 4] {
        let Coords { xs, offsets, layer } = at;
        let dims = xs.len();
        let layer = layer.map(|l| self.clamp_layer(d, l));
        if integer_coords {
            let corners: Vec<(Value, RegId)> = (0..dims)
                .map(|k| {
                    let i = match offsets.get(k) {
                        Some(&o) => self.add(S32, xs[k], o),
                        None => xs[k],
                    };
                    self.texel_index(d, k, i)
                })
                .collect();
            let idx: Vec<Value> = corners.iter().map(|c| c.0).collect();
            let outside: Vec<RegId> = corners.iter().map(|c| c.1).collect();
            return self.read_texel(d, &idx, layer, &outside, result);
        }
        let normalized = if normalized_always {
            self.cmp(CmpOp::Eq, U32, Value::Imm(0), Value::Imm(0))
        } else {
            self.flag(d, flags::NORMALIZED_COORDS)
        };
        let linear = self.flag(d, flags::LINEAR);
        // Each dimension's coordinate in texels.
        let coords: Vec<Value> = (0..dims)
            .map(|k| self.texel_coordinate(d, k, xs[k], offsets.get(k).copied(), normalized))
            .collect();
        let out: [RegId; 4] = [(); 4].map(|()| self.temp(U32));
        self.guarded(linear, true, |l| {
            let mut idx = Vec::new();
            let mut outside = Vec::new();
            for (k, &c) in coords.iter().enumerate() {
                let i = l.convert(S32, F32, Some(Rounding::Down), Default::default(), c);
                let (at, out) = l.texel_index(d, k, i);
                idx.push(at);
                outside.push(out);
            }
            let v = l.read_texel(d, &idx, layer, &outside, result);
            for (r, v) in out.iter().zip(v) {
                l.mov(U32, *r, v);
            }
        });
        self.guarded(linear, false, |l| {
            // Per dimension: the lower texel and the 1.8 fixed-point weight.
            let mut lower = Vec::new();
            let mut weight = Vec::new();
            for &c in &coords {
                let b = l.bin(BinaryOp::Sub, F32, c, Value::Imm(0.5f32.to_bits().into()));
                let floor = l.convert(F32, F32, Some(Rounding::Down), Default::default(), b);
                let frac = l.bin(BinaryOp::Sub, F32, b, floor);
                let scaled = l.bin(BinaryOp::Mul, F32, frac, Value::Imm(256f32.to_bits().into()));
                let steps =
                    l.convert(F32, F32, Some(Rounding::Nearest), Default::default(), scaled);
                let a =
                    l.bin(BinaryOp::Mul, F32, steps, Value::Imm((1.0f32 / 256.0).to_bits().into()));
                let i = l.convert(S32, F32, Some(Rounding::Down), Default::default(), b);
                lower.push(i);
                weight.push(a);
            }
            let mut sum: Option<[Value; 4]> = None;
            for corner in 0..(1usize << dims) {
                let mut idx = Vec::new();
                let mut outside = Vec::new();
                let mut w = Value::Imm(1f32.to_bits().into());
                for k in 0..dims {
                    let up = corner >> k & 1 == 1;
                    let i = if up { l.add(S32, lower[k], Value::Imm(1)) } else { lower[k] };
                    let wk = if up {
                        weight[k]
                    } else {
                        l.bin(BinaryOp::Sub, F32, Value::Imm(1f32.to_bits().into()), weight[k])
                    };
                    w = l.bin(BinaryOp::Mul, F32, w, wk);
                    let (at, out) = l.texel_index(d, k, i);
                    idx.push(at);
                    outside.push(out);
                }
                let t = l.read_texel(d, &idx, layer, &outside, result);
                let term = t.map(|c| l.bin(BinaryOp::Mul, F32, w, c));
                sum = Some(match sum {
                    None => term,
                    Some(s) => [0, 1, 2, 3].map(|c| l.bin(BinaryOp::Add, F32, s[c], term[c])),
                });
            }
            if let Some(sum) = sum {
                for (r, v) in out.iter().zip(sum) {
                    l.mov(U32, *r, v);
                }
            }
        });
        out.map(Value::Reg)
    }

    /// Coordinate `x` of dimension `k` in texels: normalized coordinates wrapped or
    /// mirrored by the address mode, then scaled by the size; then the texel offset
    /// added, if there is one (whose texels the address mode then resolves as any
    /// other: an offset past a mirrored edge clamps).
    fn texel_coordinate(
        &mut self,
        d: &Desc,
        k: usize,
        x: Value,
        offset: Option<Value>,
        normalized: RegId,
    ) -> Value {
        let wrap = self.address_mode_is(d, k, AddressMode::Wrap);
        let mirror = self.address_mode_is(d, k, AddressMode::Mirror);
        let floor = self.convert(F32, F32, Some(Rounding::Down), Default::default(), x);
        let frac = self.bin(BinaryOp::Sub, F32, x, floor);
        // floor(x) odd: its half is not an integer.
        let half = self.bin(BinaryOp::Mul, F32, floor, Value::Imm(0.5f32.to_bits().into()));
        let half_floor = self.convert(F32, F32, Some(Rounding::Down), Default::default(), half);
        let odd = self.cmp(CmpOp::Ne, F32, half, half_floor);
        let flipped = self.bin(BinaryOp::Sub, F32, Value::Imm(1f32.to_bits().into()), frac);
        let mirrored = self.sel(F32, odd, flipped, frac);
        let x1 = self.sel(F32, mirror, mirrored, x);
        let x1 = self.sel(F32, wrap, frac, x1);
        let x1 = self.sel(F32, normalized, x1, x);
        let n = self.convert(F32, U32, None, Default::default(), d.sizes[k]);
        let scaled = self.bin(BinaryOp::Mul, F32, x1, n);
        let texels = self.sel(F32, normalized, scaled, x);
        match offset {
            Some(o) => {
                let o = self.convert(F32, S32, Some(Rounding::Nearest), Default::default(), o);
                self.bin(BinaryOp::Add, F32, texels, o)
            }
            None => texels,
        }
    }

    /// `d|p`: predicate `p` of a fetch says whether its texels are resident (sparse
    /// textures); ptxvk's always are.
    fn set_resident(&mut self, p: RegId) {
        let yes = self.cmp(CmpOp::Eq, U32, Value::Imm(0), Value::Imm(0));
        self.mov(OpTy::Pred, p, Value::Reg(yes));
    }

    /// Texel index `i` (s32) of dimension `k` by its address mode: the index to read
    /// (u32, inside) and whether the texel is outside (border mode).
    fn texel_index(&mut self, d: &Desc, k: usize, i: Value) -> (Value, RegId) {
        let normalized = self.flag(d, flags::NORMALIZED_COORDS);
        let wrap = self.address_mode_is(d, k, AddressMode::Wrap);
        let border = self.address_mode_is(d, k, AddressMode::Border);
        let n = d.sizes[k];
        let last = self.bin(BinaryOp::Sub, S32, n, Value::Imm(1));
        let low = self.bin(BinaryOp::Max, S32, i, Value::Imm(0));
        let clamped = self.bin(BinaryOp::Min, S32, low, last);
        let rem = self.bin(BinaryOp::Rem, S32, i, n);
        let rem = self.add(S32, rem, n);
        let wrapped = self.bin(BinaryOp::Rem, S32, rem, n);
        let wraps = self.pred_and(wrap, normalized);
        let at = self.sel(U32, wraps, wrapped, clamped);
        let below = self.cmp(CmpOp::Lt, S32, i, Value::Imm(0));
        let above = self.cmp(CmpOp::Gt, S32, i, last);
        let out = self.pred_or(below, above);
        let outside = self.pred_and(out, border);
        (at, outside)
    }

    /// The four result words of the texel at `idx` (indices inside the texture) of
    /// layer `layer`, or the border colour where a dimension is `outside`.
    fn read_texel(
        &mut self,
        d: &Desc,
        idx: &[Value],
        layer: Option<Value>,
        outside: &[RegId],
        result: Result4,
    ) -> [Value; 4] {
        let x = self.bin(BinaryOp::Mul, U32, idx[0], d.texel_bytes);
        let base = self.element_address(d, x, idx.get(1).copied(), idx.get(2).copied().or(layer));
        let out: [RegId; 4] = [(); 4].map(|()| self.temp(U32));
        // Absent channels: (0, 0, 0, 1).
        let one = if result == Result4::Float { 1f32.to_bits() } else { 1 };
        for (c, r) in out.iter().enumerate() {
            self.mov(U32, *r, Value::Imm(if c == 3 { u64::from(one) } else { 0 }));
        }
        let read_normalized = self.flag(d, flags::READ_NORMALIZED);
        for (c, &r) in out.iter().enumerate() {
            let present = self.cmp(CmpOp::Gt, U32, d.channels, Value::Imm(c as u64));
            self.guarded(present, false, |l| {
                for bytes in [1u32, 2, 4] {
                    let this = l.cmp(CmpOp::Eq, U32, d.channel_bytes, Value::Imm(bytes.into()));
                    l.guarded(this, false, |l| {
                        let ty = OpTy::U((8 * bytes) as u8);
                        let raw = l.temp(U32);
                        let addr =
                            Address { base: Some(base), offset: i64::from(c as u32 * bytes) };
                        l.push(InstKind::Load {
                            space: Space::Global,
                            ty,
                            dsts: vec![Some(raw)],
                            addr,
                        });
                        let v =
                            l.convert_channel(d, Value::Reg(raw), bytes, read_normalized, result);
                        // sRGB: R, G and B through the table after the descriptor.
                        let v = if bytes == 1 && c < 3 && result == Result4::Float {
                            l.srgb_decode(d, Value::Reg(raw), v)
                        } else {
                            v
                        };
                        l.mov(U32, r, v);
                    });
                }
            });
        }
        // The border colour replaces a texel outside in border mode.
        let mut any = None;
        for &o in outside {
            any = Some(match any {
                None => o,
                Some(a) => self.pred_or(a, o),
            });
        }
        let Some(any) = any else { return out.map(Value::Reg) };
        out.iter()
            .enumerate()
            .map(|(c, &r)| {
                let colour = if result == Result4::Float { d.border[c] } else { Value::Imm(0) };
                self.sel(U32, any, colour, Value::Reg(r))
            })
            .collect::<Vec<_>>()
            .try_into()
            .unwrap_or([Value::Imm(0); 4])
    }

    /// The address of byte `x` of row `y` of slice or layer `z` (u32 values).
    fn element_address(&mut self, d: &Desc, x: Value, y: Option<Value>, z: Option<Value>) -> RegId {
        let x = self.cvt(U64, U32, x);
        let mut at = self.add(U64, d.address, x);
        for (i, pitch) in [(y, d.row_pitch), (z, d.slice_pitch)] {
            if let Some(i) = i {
                let i = self.cvt(U64, U32, i);
                let offset = self.bin(BinaryOp::Mul, U64, i, pitch);
                at = self.add(U64, at, offset);
            }
        }
        let base = self.temp(U64);
        self.mov(U64, base, at);
        base
    }

    /// Channel bits `raw` (zero-extended, `bytes` wide) as a result word (module doc).
    fn convert_channel(
        &mut self,
        d: &Desc,
        raw: Value,
        bytes: u32,
        read_normalized: RegId,
        result: Result4,
    ) -> Value {
        let bits = 8 * bytes;
        let signed = self.cmp(CmpOp::Eq, U32, d.kind, Value::Imm(ChannelKind::Signed as u64));
        let float = self.cmp(CmpOp::Eq, U32, d.kind, Value::Imm(ChannelKind::Float as u64));
        let extended = if bits < 32 {
            let shift = Value::Imm(u64::from(32 - bits));
            let up = self.bin(BinaryOp::Shl, U32, raw, shift);
            let s = self.bin(BinaryOp::Shr, S32, up, shift);
            self.sel(U32, signed, s, raw)
        } else {
            raw
        };
        if result == Result4::Int {
            return extended;
        }
        // Float channels: as they are, halves widened. Integers: converted, or (8, 16
        // bits) normalized; each conversion only where the format needs it, as the
        // normalizing divisions are exact (and so not cheap).
        let out = self.temp(U32);
        let as_float = match bits {
            16 => self.widen(FloatFormat::F16, raw),
            _ => raw,
        };
        self.mov(U32, out, as_float);
        self.guarded(float, true, |l| {
            let int_float_s =
                l.convert(F32, S32, Some(Rounding::Nearest), Default::default(), extended);
            let int_float_u =
                l.convert(F32, U32, Some(Rounding::Nearest), Default::default(), extended);
            let int_float = l.sel(F32, signed, int_float_s, int_float_u);
            l.mov(U32, out, int_float);
            if bits == 32 {
                return;
            }
            l.guarded(read_normalized, false, |l| {
                let (umax, smax) = ((1u64 << bits) - 1, (1u64 << (bits - 1)) - 1);
                let divisor = l.sel(
                    F32,
                    signed,
                    Value::Imm(u64::from((smax as f32).to_bits())),
                    Value::Imm(u64::from((umax as f32).to_bits())),
                );
                let norm = l.bin(BinaryOp::Div, F32, int_float, divisor);
                // Signed: at least -1 (the most negative code is below -1).
                let floor =
                    l.sel(F32, signed, Value::Imm(u64::from((-1f32).to_bits())), Value::Imm(0));
                let norm = l.bin(BinaryOp::Max, F32, norm, floor);
                l.mov(U32, out, norm);
            });
        });
        Value::Reg(out)
    }

    /// `value`, or with the sRGB flag the table entry of 8-bit code `raw`.
    fn srgb_decode(&mut self, d: &Desc, raw: Value, value: Value) -> Value {
        let srgb = self.flag(d, flags::SRGB);
        let out = self.temp(U32);
        self.mov(U32, out, value);
        self.guarded(srgb, false, |l| {
            let index = l.bin(BinaryOp::Shl, U32, raw, Value::Imm(2));
            let index = l.cvt(U64, U32, index);
            let at = l.add(U64, d.base, index);
            let at_reg = l.temp(U64);
            l.mov(U64, at_reg, at);
            let addr = Address { base: Some(at_reg), offset: SIZE as i64 };
            l.push(InstKind::Load { space: Space::Global, ty: U32, dsts: vec![Some(out)], addr });
        });
        Value::Reg(out)
    }

    /// `txq.field.b32 d, [handle]`, `txq.level.field.b32 d, [handle], level` (the
    /// level's size, `max(1, size >> level)`) and `suq.field.b32 d, [handle]`.
    fn query(&mut self, q: &TextureQuery, h: Value) {
        let dst = q.dst;
        let d = self.descriptor(h);
        let mode = |e: &mut Self, k: u32| {
            let b = e.bin(
                BinaryOp::Shr,
                U32,
                d.flags,
                Value::Imm(u64::from(flags::ADDRESS_SHIFT + 2 * k)),
            );
            e.and(U32, b, Value::Imm(3))
        };
        let value = match q.field {
            TexQuery::Width => d.sizes[0],
            TexQuery::Height => d.sizes[1],
            TexQuery::Depth => d.sizes[2],
            TexQuery::ArraySize => d.layers,
            TexQuery::NumMipmapLevels => self.bin(BinaryOp::Max, U32, d.levels, Value::Imm(1)),
            TexQuery::NumSamples => Value::Imm(0),
            TexQuery::NormalizedCoords => {
                self.and(U32, d.flags, Value::Imm(u64::from(flags::NORMALIZED_COORDS)))
            }
            TexQuery::FilterMode => {
                let b = self.bin(BinaryOp::Shr, U32, d.flags, Value::Imm(2));
                self.and(U32, b, Value::Imm(1))
            }
            TexQuery::ForceUnnormalizedCoords => {
                let b = self.bin(
                    BinaryOp::Shr,
                    U32,
                    d.flags,
                    Value::Imm(u64::from(flags::FORCE_UNNORMALIZED.trailing_zeros())),
                );
                self.and(U32, b, Value::Imm(1))
            }
            TexQuery::AddrMode(k) => mode(self, u32::from(k)),
        };
        let value = match q.level {
            Some(level) => {
                let size = self.bin(BinaryOp::Shr, U32, value, level);
                self.bin(BinaryOp::Max, U32, size, Value::Imm(1))
            }
            None => value,
        };
        self.mov(U32, dst, value);
    }
}
