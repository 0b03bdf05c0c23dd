//! The model of [`InstKind::Texture`](crate::ir::InstKind::Texture) before `pass::expand_texture`, from the PTX ISA 9.2
//! (§9.7.10.5 `txq`, §9.7.11 `suld`, `sust`, `sured`, `suq`) and the descriptor layout of
//! [`ptxvk_abi::texture`]: queries and unformatted (`.b`) surface accesses. Fetches
//! (`tex`, `tld4`: filtering, mipmaps, cube maps, channel conversions) and formatted
//! (`.p`) accesses are [`Error::Unsupported`]: modelling them is the e2e tests' CPU model
//! (`tests/texture_e2e.rs`), not repeated here.
//!
//! A null handle, a descriptor without ptxvk's magic word, a surface without texels
//! and a `.trap` access outside the surface trap: the first failure is the launch's
//! status ([`crate::system::STATUS_TRAP`]) and the thread ends.

use ptxvk_abi::texture::{offset, MAGIC};
use ptxvk_frontend::Span;

use super::{Ctx, Error, State, Thread};
use crate::interp::memory;
use crate::ir::{Boundary, SurfaceAccess, SurfaceOp, TexHandle, TexQuery, TextureInst};

/// The fields of a descriptor (its layout's table).
struct Descriptor {
    address: u64,
    sizes: [u32; 3],
    layers: u32,
    row_pitch: u64,
    slice_pitch: u64,
    format: u32,
    flags: u32,
    levels: u32,
}

impl Thread<'_> {
    /// Runs a texture or surface instruction.
    pub(super) fn exec_texture(
        &mut self,
        cx: &mut Ctx<'_>,
        t: &TextureInst,
        span: Span,
    ) -> Result<(), Error> {
        match t {
            TextureInst::Fetch(_) => {
                let what = "texture fetches before expand_texture".into();
                Err(Error::Unsupported { what, span })
            }
            TextureInst::Query(q) => {
                let handle = self.handle(cx, q.handle, span)?;
                let Some(d) = self.descriptor(cx, handle, span)? else {
                    return Ok(());
                };
                let bit = |shift: u32, bits: u32| {
                    d.flags.checked_shr(shift).unwrap_or(0) & ((1 << bits) - 1)
                };
                let value = match q.field {
                    TexQuery::Width => d.sizes[0],
                    TexQuery::Height => d.sizes[1],
                    TexQuery::Depth => d.sizes[2],
                    TexQuery::ArraySize => d.layers,
                    TexQuery::NumMipmapLevels => d.levels.max(1),
                    TexQuery::NumSamples => 0,
                    TexQuery::NormalizedCoords => bit(0, 1),
                    TexQuery::FilterMode => bit(2, 1),
                    TexQuery::ForceUnnormalizedCoords => bit(5, 1),
                    TexQuery::AddrMode(k) => bit(8 + 2 * u32::from(k), 2),
                };
                // A mipmap level's size (PTX ISA 9.2 §9.7.10.5 `txq.level`): level k has
                // max(1, size >> k) texels (`ptxvk_abi::texture`), none past 31.
                let value = match q.level {
                    Some(level) => {
                        let k = self.get(level) as u32;
                        value.checked_shr(k).unwrap_or(0).max(1)
                    }
                    None => value,
                };
                self.set(cx.k, q.dst, u64::from(value));
                Ok(())
            }
            TextureInst::Surface(s) if s.formatted => {
                let what = "formatted surface accesses (`.p`) before expand_texture".into();
                Err(Error::Unsupported { what, span })
            }
            TextureInst::Surface(s) => self.surface(cx, s, span),
        }
    }

    /// The value of handle operand `h`: a kernel parameter's is read from the parameter
    /// block; the module data (`.global .texref`) is not modelled.
    fn handle(&self, cx: &Ctx<'_>, h: TexHandle, span: Span) -> Result<u64, Error> {
        match h {
            TexHandle::Value(v) => Ok(self.get(v)),
            TexHandle::Param(offset) => cx.memory.read(cx.param_base + u64::from(offset), 8, span),
            TexHandle::Global(_) => {
                Err(Error::Unsupported { what: "handles in the module data".into(), span })
            }
        }
    }

    /// The descriptor at `handle`, or `None` when the thread trapped (a null handle, or
    /// not ptxvk's descriptor).
    fn descriptor(
        &mut self,
        cx: &mut Ctx<'_>,
        handle: u64,
        span: Span,
    ) -> Result<Option<Descriptor>, Error> {
        if handle == 0 {
            return self.trap(cx, span).map(|()| None);
        }
        let read = |at: u32, size: u32| cx.memory.read(handle.wrapping_add(at.into()), size, span);
        if read(offset::MAGIC, 4)? != u64::from(MAGIC) {
            return self.trap(cx, span).map(|()| None);
        }
        // Every field, as the expansion reads them (the level of detail's too).
        for at in [offset::MAX_LEVEL, offset::BORDER + 12] {
            read(at, 4)?;
        }
        let word = |at: u32| read(at, 4).map(|v| v as u32);
        Ok(Some(Descriptor {
            address: read(offset::ADDRESS, 8)?,
            sizes: [word(offset::WIDTH)?, word(offset::HEIGHT)?, word(offset::DEPTH)?],
            layers: word(offset::LAYERS)?,
            row_pitch: read(offset::ROW_PITCH, 8)?,
            slice_pitch: read(offset::SLICE_PITCH, 8)?,
            format: word(offset::FORMAT)?,
            flags: word(offset::FLAGS)?,
            levels: word(offset::LEVELS)?,
        }))
    }

    /// `.trap`: the launch fails with the trap status unless it failed first, and the
    /// thread ends.
    fn trap(&mut self, cx: &mut Ctx<'_>, span: Span) -> Result<(), Error> {
        let system = crate::system::offset(cx.k.abi.size) + crate::system::STATUS;
        let status = cx.param_base + u64::from(system);
        if cx.memory.read(status, 4, span)? == 0 {
            cx.memory.write(status, 4, u64::from(crate::system::STATUS_TRAP), span)?;
        }
        self.state = State::Exited;
        Ok(())
    }

    /// `suld.b`, `sust.b`, `sured.b`: x in bytes, inside when the whole access is in
    /// its row; y, z (or the layer) in rows and slices (or layers).
    fn surface(&mut self, cx: &mut Ctx<'_>, s: &SurfaceAccess, span: Span) -> Result<(), Error> {
        let handle = self.handle(cx, s.handle, span)?;
        let Some(d) = self.descriptor(cx, handle, span)? else { return Ok(()) };
        if d.sizes[0] == 0 {
            return self.trap(cx, span);
        }
        let bytes = s.ty.bits() / 8;
        let count = match &s.op {
            SurfaceOp::Load(dsts) => dsts.len(),
            SurfaceOp::Store(srcs) => srcs.len(),
            SurfaceOp::Reduce(..) => 1,
        } as u32;
        let texel_bytes = ((d.format >> 4) & 0xf) * ((d.format >> 8) & 0xf);
        // The last inside coordinate of each dimension, as 32-bit signed integers.
        let last = [
            d.sizes[0].wrapping_mul(texel_bytes).wrapping_sub(bytes * count),
            d.sizes[1].wrapping_sub(1),
            d.sizes[2].wrapping_sub(1),
        ];
        let mut outside = false;
        let mut at = Vec::new();
        for (k, &c) in s.coords.iter().enumerate() {
            let (x, limit) = (self.get(c) as u32 as i32, last[k] as i32);
            outside |= x < 0 || x > limit;
            at.push(x.max(0).min(limit) as u32);
        }
        let layer = s.layer.map(|l| {
            let l = self.get(l) as u32 as i32;
            l.max(0).min(d.layers.wrapping_sub(1) as i32) as u32
        });
        let (y, z) = (at.get(1).copied(), at.get(2).copied().or(layer));
        let x = at.first().copied().unwrap_or(0);
        let mut address = d.address.wrapping_add(u64::from(x));
        for (i, pitch) in [(y, d.row_pitch), (z, d.slice_pitch)] {
            if let Some(i) = i {
                address = address.wrapping_add(u64::from(i).wrapping_mul(pitch));
            }
        }
        if outside && s.boundary == Boundary::Trap {
            return self.trap(cx, span);
        }
        let skip = outside && s.boundary == Boundary::Zero;
        let element = |i: usize| address.wrapping_add(u64::from(bytes) * i as u64);
        match &s.op {
            SurfaceOp::Load(dsts) => {
                for (i, &dst) in dsts.iter().enumerate() {
                    let v = if skip { 0 } else { cx.memory.read(element(i), bytes, span)? };
                    self.set(cx.k, dst, v);
                }
            }
            SurfaceOp::Store(srcs) if !skip => {
                for (i, &v) in srcs.iter().enumerate() {
                    let v = self.at_bits(v, s.ty.bits());
                    cx.memory.write(element(i), bytes, v, span)?;
                }
            }
            SurfaceOp::Reduce(op, src) if !skip => {
                let old = cx.memory.read(address, bytes, span)?;
                let new = memory::atomic_update(*op, s.ty, old, self.at_bits(*src, s.ty.bits()), 0);
                cx.memory.write(address, bytes, new, span)?;
            }
            _ => {}
        }
        Ok(())
    }
}
