//! Surfaces (PTX ISA 9.2 §9.7.11): `suld.b`, `sust.b`/`sust.p` and `sured.b`/`sured.p`
//! on the descriptors of the texture instructions, bounds handled by `.trap`, `.clamp`
//! or `.zero`: an access outside traps, is clamped to the nearest inside, or reads zero
//! and writes nothing. `sust.p` converts its values to the surface's channels
//! ([`Expand::store_channel`]); `sured.p` reduces 32-bit integer samples (64-bit: two
//! 32-bit channels) as signed or unsigned by the format, and traps on any other format.

use super::{Blocks, Desc, Expand, F32, S32, U32};
use crate::build::Build;
use crate::ir::{
    Address, AtomicOp, BinaryOp, Boundary, CmpOp, FloatFormat, FloatMode, InstKind, OpTy, Order,
    RegId, Rounding, Scope, Space, SurfaceAccess, SurfaceOp, Value,
};
use ptxvk_abi::texture::ChannelKind;

impl Expand<'_> {
    /// `suld.b.geom{.vN}.bK.mode d, [handle, {coords}]`, `sust.b…`/`sust.p…` and
    /// `sured.b…`/`sured.p…` (module doc).
    pub(super) fn surface(&mut self, s: &SurfaceAccess, h: Value) {
        let (formatted, mode, ty) = (s.formatted, s.boundary, s.ty);
        let bytes = ty.bits() / 8;
        let count = match &s.op {
            SurfaceOp::Load(dsts) => dsts.len(),
            SurfaceOp::Store(srcs) => srcs.len(),
            SurfaceOp::Reduce(..) => 1,
        };
        let reduction = match s.op {
            SurfaceOp::Reduce(op, _) => Some(op),
            _ => None,
        };
        let (layer, xs) = (s.layer, &s.coords);
        let d = self.descriptor(h);
        self.require_texels(&d);
        // Inside: 0 <= x <= the last sample (`.p`) or row bytes - access bytes (`.b`),
        // 0 <= y, z < size.
        let access = u64::from(bytes) * count as u64;
        let last_x = if formatted {
            self.bin(BinaryOp::Sub, S32, d.sizes[0], Value::Imm(1))
        } else {
            let row_bytes = self.bin(BinaryOp::Mul, U32, d.sizes[0], d.texel_bytes);
            self.bin(BinaryOp::Sub, S32, row_bytes, Value::Imm(access))
        };
        let limits = [
            last_x,
            self.bin(BinaryOp::Sub, S32, d.sizes[1], Value::Imm(1)),
            self.bin(BinaryOp::Sub, S32, d.sizes[2], Value::Imm(1)),
        ];
        let mut outside = None;
        let mut at = Vec::new();
        for (k, &x) in xs.iter().enumerate() {
            let below = self.cmp(CmpOp::Lt, S32, x, Value::Imm(0));
            let above = self.cmp(CmpOp::Gt, S32, x, limits[k]);
            let out = self.pred_or(below, above);
            outside = Some(match outside {
                None => out,
                Some(o) => self.pred_or(o, out),
            });
            let low = self.bin(BinaryOp::Max, S32, x, Value::Imm(0));
            at.push(self.bin(BinaryOp::Min, S32, low, limits[k]));
        }
        // Every geometry has a coordinate (the IR verifier checks their number).
        let outside =
            outside.unwrap_or_else(|| self.cmp(CmpOp::Ne, U32, Value::Imm(0), Value::Imm(0)));
        if formatted {
            at[0] = self.bin(BinaryOp::Mul, U32, at[0], d.texel_bytes);
        }
        let layer = layer.map(|l| self.clamp_layer(&d, l));
        let base =
            self.element_address(&d, at[0], at.get(1).copied(), at.get(2).copied().or(layer));
        if mode == Boundary::Trap {
            self.trap_if(outside);
        }
        // `sured.p` reduces integer samples of 32 bits (`.b32`: the first channel) or 64
        // (`.b64`: two 32-bit channels, low first); other formats trap.
        let mut signed = None;
        if formatted && reduction.is_some() {
            signed = Some(self.cmp(CmpOp::Eq, U32, d.kind, Value::Imm(ChannelKind::Signed as u64)));
            let float = self.cmp(CmpOp::Eq, U32, d.kind, Value::Imm(ChannelKind::Float as u64));
            let narrow = self.cmp(CmpOp::Ne, U32, d.channel_bytes, Value::Imm(4));
            let size = self.cmp(CmpOp::Lt, U32, d.texel_bytes, Value::Imm(u64::from(bytes)));
            let bad = self.pred_or(float, narrow);
            let bad = self.pred_or(bad, size);
            self.trap_if(bad);
        }
        let address = Address { base: Some(base), offset: 0 };
        if let SurfaceOp::Load(dsts) = &s.op {
            let words: Vec<RegId> = dsts.iter().map(|_| self.temp(ty)).collect();
            for &w in &words {
                self.mov(ty, w, Value::Imm(0));
            }
            let read = |l: &mut Self| {
                let dsts = words.iter().map(|&w| Some(w)).collect();
                l.push(InstKind::Load { space: Space::Global, ty, dsts, addr: address });
            };
            // `.zero` reads nothing outside; `.trap` ended the thread there, and `.clamp`
            // reads the clamped address.
            if mode == Boundary::Zero {
                self.guarded(outside, true, read);
            } else {
                read(self);
            }
            // A register wider than `.bK` gets the data zero-extended (PTX ISA 9.2
            // §9.4.1's relaxed rules for bit-size destinations, as `ld`'s; ptxas takes
            // `suld.b.2d.b8 {%rs1}` with a `.b16` `%rs1`, as nvcc emits for `uchar`).
            for (&dst, &w) in dsts.iter().zip(&words) {
                let bits = self.k.reg(dst).ty.bits();
                if bits > ty.bits() {
                    let to = OpTy::U(bits as u8);
                    let from = OpTy::U(ty.bits() as u8);
                    let src = Value::Reg(w);
                    let mode = FloatMode::default();
                    let kind = InstKind::Convert { to, from, rounding: None, mode, dst, src };
                    self.push(kind);
                } else {
                    self.mov(ty, dst, Value::Reg(w));
                }
            }
            return;
        }
        let srcs: Vec<Value> = match &s.op {
            SurfaceOp::Store(srcs) => srcs.clone(),
            SurfaceOp::Reduce(_, src) => vec![*src],
            SurfaceOp::Load(_) => Vec::new(),
        };
        let store = |l: &mut Self| match reduction {
            Some(op) => {
                let atomic = |l: &mut Self, ty: OpTy| {
                    let kind = InstKind::Atomic {
                        op,
                        space: Space::Global,
                        ty,
                        scope: Scope::Gpu,
                        order: Order::Relaxed,
                        dst: None,
                        addr: address,
                        src: srcs[0],
                        cmp: Value::Imm(0),
                    };
                    l.push(kind);
                };
                // `sured.p` compares as the format's integers (`.u32` or `.s32`).
                if let (Some(signed), AtomicOp::Min | AtomicOp::Max) = (signed, op) {
                    let bits = ty.bits() as u8;
                    l.guarded(signed, false, |l| atomic(l, OpTy::S(bits)));
                    l.guarded(signed, true, |l| atomic(l, OpTy::U(bits)));
                } else {
                    atomic(l, ty);
                }
            }
            None if formatted => {
                for (c, &v) in srcs.iter().enumerate() {
                    l.store_channel(&d, base, c, v);
                }
            }
            None => l.push(InstKind::Store { space: Space::Global, ty, srcs, addr: address }),
        };
        if mode == Boundary::Zero {
            self.guarded(outside, true, store);
        } else {
            store(self);
        }
    }

    /// `sust.p`: 32-bit value `v` of channel `c` (R, G, B, A) converted to the surface's
    /// format and stored in the sample at `base`, when the format has that channel
    /// (PTX ISA 9.2 §9.7.11.2: `.f32` for float formats, `.u32`/`.s32` for integers).
    /// NVIDIA documents no conversion; ptxvk's, as Direct3D's data conversion rules:
    /// f32 to f16 rounds to nearest even, integers saturate to the channel's range.
    pub(super) fn store_channel(&mut self, d: &Desc, base: RegId, c: usize, v: Value) {
        let present = self.cmp(CmpOp::Gt, U32, d.channels, Value::Imm(c as u64));
        self.guarded(present, false, |l| {
            for bytes in [1u32, 2, 4] {
                let this = l.cmp(CmpOp::Eq, U32, d.channel_bytes, Value::Imm(bytes.into()));
                l.guarded(this, false, |l| {
                    let bits = value_bits(l, d, v, bytes);
                    let addr = Address { base: Some(base), offset: i64::from(c as u32 * bytes) };
                    let ty = OpTy::U((8 * bytes) as u8);
                    l.push(InstKind::Store { space: Space::Global, ty, srcs: vec![bits], addr });
                });
            }
        });
    }
}

/// The bits of `bytes`-wide channel value of 32-bit `v` (an f32, u32 or s32 by the
/// format's kind) as [`Expand::store_channel`] converts it.
fn value_bits(e: &mut Expand<'_>, d: &Desc, v: Value, bytes: u32) -> Value {
    if bytes == 4 {
        return v;
    }
    let bits = 8 * bytes;
    let signed = e.cmp(CmpOp::Eq, U32, d.kind, Value::Imm(ChannelKind::Signed as u64));
    let float = e.cmp(CmpOp::Eq, U32, d.kind, Value::Imm(ChannelKind::Float as u64));
    let umax = (1u64 << bits) - 1;
    let smax = (1i64 << (bits - 1)) - 1;
    let unsigned = e.bin(BinaryOp::Min, U32, v, Value::Imm(umax));
    let low = e.bin(BinaryOp::Max, S32, v, Value::Imm(u64::from((-smax - 1) as i32 as u32)));
    let signed_value = e.bin(BinaryOp::Min, S32, low, Value::Imm(smax as u64));
    let int = e.sel(U32, signed, signed_value, unsigned);
    if bytes == 2 {
        let half = e.narrow(FloatFormat::F16, F32, Rounding::Nearest, false, false, v);
        let half = e.cvt(U32, OpTy::U(16), half);
        e.sel(U32, float, half, int)
    } else {
        int
    }
}
