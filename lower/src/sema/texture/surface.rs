//! Surfaces (PTX ISA 9.2 §9.7.11): `suld.b`, `sust.b`/`sust.p` and `sured.b`/`sured.p`
//! on the descriptors of `sema::texture`, bounds handled by `.trap`, `.clamp` or `.zero`.

use super::{
    ast, sys, Address, AtomicOp, BinaryOp, BoolOp, Boundary, ChannelKind, CmpOp, Desc, Diagnostic,
    Emit, FloatFormat, InstKind, Lowerer, Modifier, Mods, OpTy, Opcode, Operand, Reduction, RegId,
    Rounding, ScalarType, Space, Span, SurfaceAccess, Value, F32, S32, U32,
};
use crate::build::Build;

impl Lowerer<'_> {
    /// `suld.b.geom{.vN}.bK.mode d, [handle, {coords}]`, `sust.b…`/`sust.p…` and
    /// `sured.b…`/`sured.p…` (module doc).
    pub(super) fn surface(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let (dims, layered) = self.geometry_of(i, m)?;
        // `.b` addresses bytes and moves bits; `.p` addresses samples and converts to the
        // surface's format (PTX ISA 9.2 §9.7.11.2-3). There is no `suld.p`.
        let formatted = m.has(Modifier::SurfaceAccess(SurfaceAccess::P));
        if !formatted && !m.has(Modifier::SurfaceAccess(SurfaceAccess::B)) {
            return Err(Diagnostic::error(
                span,
                format!("`{op}` is either `.b` (unformatted) or `.p` (formatted)"),
            ));
        }
        let load = op == Opcode::Suld;
        if formatted && load {
            return Err(Diagnostic::error(
                span,
                "`suld.p` is not a PTX instruction: surfaces load with `suld.b`",
            ));
        }
        let mode = m.find(|d| match d {
            Modifier::Boundary(b) => Some(b),
            _ => None,
        });
        let mode = mode.map_or(Boundary::Trap, |b| b.value);
        let [ty] = m.types.as_slice() else {
            return Err(Diagnostic::error(span, format!("`{op}` takes one type (`.b32`)")));
        };
        let raw_type = ty.value;
        let ty = crate::sema::op_ty(ty)?;
        let bytes = ty.bits() / 8;
        let count = m.vector.unwrap_or(1) as usize;
        let ops = i.operands.as_slice();
        // `sured.op`: an atomic read-modify-write of the element (PTX ISA 9.2 §9.7.11.3).
        let reduction = if op == Opcode::Sured {
            Some(sured_operation(m, ty, raw_type, formatted, ops.len(), span)?)
        } else {
            None
        };
        if formatted && op == Opcode::Sust && raw_type != ScalarType::B32 {
            return Err(Diagnostic::error(span, "`sust.p` stores `.b32` values"));
        }
        let (values, target) = if load { (&ops[0], &ops[1]) } else { (&ops[1], &ops[0]) };
        let Operand::Tuple(parts, _) = target else {
            return Err(Diagnostic::error(target.span(), "expected `[surface, {coordinates}]`"));
        };
        let [handle, coords] = parts.as_slice() else {
            return Err(Diagnostic::error(target.span(), "expected `[surface, {coordinates}]`"));
        };
        let coords: Vec<&Operand> = match coords {
            Operand::Vector(v, _) => v.iter().collect(),
            one => vec![one],
        };
        let items: Vec<&Operand> = match values {
            Operand::Vector(v, _) => v.iter().collect(),
            one => vec![one],
        };
        let wanted = match (dims, layered) {
            (3, _) | (2, true) => 4,
            (d, l) => d + usize::from(l),
        };
        if coords.len() != wanted || items.len() != count {
            return Err(Diagnostic::error(
                span,
                format!("this `{op}` takes {wanted} coordinates and {count} values"),
            ));
        }
        let h = self.handle(handle, span)?;
        let first = usize::from(layered);
        let layer = if layered { Some(self.src(coords[0], S32, false, span)?) } else { None };
        let xs: Vec<Value> = coords[first..first + dims]
            .iter()
            .map(|c| self.src(c, S32, false, span))
            .collect::<Result<_, _>>()?;
        let d = self.descriptor(h, span);
        self.require_texels(&d, span);
        // Inside: 0 <= x <= the last sample (`.p`) or row bytes - access bytes (`.b`),
        // 0 <= y, z < size.
        let access = u64::from(bytes) * count as u64;
        let mut e = Emit { l: self, span };
        let last_x = if formatted {
            e.bin(BinaryOp::Sub, S32, d.sizes[0], Value::Imm(1))
        } else {
            let row_bytes = e.bin(BinaryOp::Mul, U32, d.sizes[0], d.texel_bytes);
            e.bin(BinaryOp::Sub, S32, row_bytes, Value::Imm(access))
        };
        let limits = [
            last_x,
            e.bin(BinaryOp::Sub, S32, d.sizes[1], Value::Imm(1)),
            e.bin(BinaryOp::Sub, S32, d.sizes[2], Value::Imm(1)),
        ];
        let mut outside = None;
        let mut at = Vec::new();
        for (k, &x) in xs.iter().enumerate() {
            let below = e.cmp(CmpOp::Lt, S32, x, Value::Imm(0));
            let above = e.cmp(CmpOp::Gt, S32, x, limits[k]);
            let out = e.pred_or(below, above);
            outside = Some(match outside {
                None => out,
                Some(o) => e.pred_or(o, out),
            });
            let low = e.bin(BinaryOp::Max, S32, x, Value::Imm(0));
            at.push(e.bin(BinaryOp::Min, S32, low, limits[k]));
        }
        let Some(outside) = outside else {
            return Err(Diagnostic::internal(span, "a surface access without coordinates"));
        };
        if formatted {
            at[0] = e.bin(BinaryOp::Mul, U32, at[0], d.texel_bytes);
        }
        let layer = layer.map(|l| self.clamp_layer(&d, l, span));
        let base =
            self.element_address(&d, at[0], at.get(1).copied(), at.get(2).copied().or(layer), span);
        if mode == Boundary::Trap {
            self.fail_if(outside, false, sys::STATUS_TRAP, &[], span);
        }
        // `sured.p` reduces integer samples of 32 bits (`.b32`: the first channel) or 64
        // (`.b64`: two 32-bit channels, low first); other formats trap.
        let mut signed = None;
        if formatted && reduction.is_some() {
            let mut e = Emit { l: self, span };
            signed = Some(e.cmp(CmpOp::Eq, U32, d.kind, Value::Imm(ChannelKind::Signed as u64)));
            let float = e.cmp(CmpOp::Eq, U32, d.kind, Value::Imm(ChannelKind::Float as u64));
            let narrow = e.cmp(CmpOp::Ne, U32, d.channel_bytes, Value::Imm(4));
            let size = e.cmp(CmpOp::Lt, U32, d.texel_bytes, Value::Imm(u64::from(bytes)));
            let bad = e.pred_or(float, narrow);
            let bad = e.pred_or(bad, size);
            self.fail_if(bad, false, sys::STATUS_TRAP, &[], span);
        }
        let address = Address { base: Some(base), offset: 0 };
        if load {
            let dsts: Vec<RegId> =
                items.iter().map(|o| self.dst(o, ty, true)).collect::<Result<_, _>>()?;
            let words: Vec<RegId> = dsts.iter().map(|_| self.temp(ty.storage(), span)).collect();
            let mut e = Emit { l: self, span };
            for &w in &words {
                e.mov(ty, w, Value::Imm(0));
            }
            let read = |l: &mut Self| {
                let dsts = words.iter().map(|&w| Some(w)).collect();
                l.push(InstKind::Load { space: Space::Global, ty, dsts, addr: address }, span);
            };
            // `.zero` reads nothing outside; `.trap` ended the thread there, and `.clamp`
            // reads the clamped address.
            if mode == Boundary::Zero {
                self.guarded(outside, true, span, read);
            } else {
                read(self);
            }
            let mut e = Emit { l: self, span };
            for (&dst, &w) in dsts.iter().zip(&words) {
                e.mov(ty, dst, Value::Reg(w));
            }
            return Ok(());
        }
        let srcs: Vec<Value> =
            items.iter().map(|o| self.src(o, ty, true, span)).collect::<Result<_, _>>()?;
        let store = |l: &mut Self| match reduction {
            Some(op) => {
                let atomic = |l: &mut Self, ty: OpTy| {
                    let kind = InstKind::Atomic {
                        op,
                        space: Space::Global,
                        ty,
                        scope: crate::ir::Scope::Gpu,
                        order: crate::ir::Order::Relaxed,
                        dst: None,
                        addr: address,
                        src: srcs[0],
                        cmp: Value::Imm(0),
                    };
                    l.push(kind, span);
                };
                // `sured.p` compares as the format's integers (`.u32` or `.s32`).
                if let (Some(signed), AtomicOp::Min | AtomicOp::Max) = (signed, op) {
                    let bits = ty.bits() as u8;
                    l.guarded(signed, false, span, |l| atomic(l, OpTy::S(bits)));
                    l.guarded(signed, true, span, |l| atomic(l, OpTy::U(bits)));
                } else {
                    atomic(l, ty);
                }
            }
            None if formatted => {
                for (c, &v) in srcs.iter().enumerate() {
                    l.store_channel(&d, base, c, v, span);
                }
            }
            None => l.push(InstKind::Store { space: Space::Global, ty, srcs, addr: address }, span),
        };
        if mode == Boundary::Zero {
            self.guarded(outside, true, span, store);
        } else {
            store(self);
        }
        Ok(())
    }

    /// `sust.p`: 32-bit value `v` of channel `c` (R, G, B, A) converted to the surface's
    /// format and stored in the sample at `base`, when the format has that channel
    /// (PTX ISA 9.2 §9.7.11.2: `.f32` for float formats, `.u32`/`.s32` for integers).
    /// NVIDIA documents no conversion; ptxvk's, as Direct3D's data conversion rules:
    /// f32 to f16 rounds to nearest even, integers saturate to the channel's range.
    pub(super) fn store_channel(&mut self, d: &Desc, base: RegId, c: usize, v: Value, span: Span) {
        let present = Emit { l: self, span }.cmp(CmpOp::Gt, U32, d.channels, Value::Imm(c as u64));
        self.guarded(present, false, span, |l| {
            for bytes in [1u32, 2, 4] {
                let this =
                    Emit { l, span }.cmp(CmpOp::Eq, U32, d.channel_bytes, Value::Imm(bytes.into()));
                l.guarded(this, false, span, |l| {
                    let mut e = Emit { l, span };
                    let bits = value_bits(&mut e, d, v, bytes);
                    let addr = Address { base: Some(base), offset: i64::from(c as u32 * bytes) };
                    let ty = OpTy::U((8 * bytes) as u8);
                    l.push(
                        InstKind::Store { space: Space::Global, ty, srcs: vec![bits], addr },
                        span,
                    );
                });
            }
        });
    }
}

/// The bits of `bytes`-wide channel value of 32-bit `v` (an f32, u32 or s32 by the
/// format's kind) as [`Lowerer::store_channel`] converts it.
fn value_bits(e: &mut Emit<'_, '_>, d: &Desc, v: Value, bytes: u32) -> Value {
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

/// The operation of a `sured` (PTX ISA 9.2 §9.7.11.3): an atomic read-modify-write of
/// the element, checked against the type, the access and the operand count.
fn sured_operation(
    m: &Mods,
    ty: OpTy,
    raw_type: ScalarType,
    formatted: bool,
    operands: usize,
    span: Span,
) -> Result<AtomicOp, Diagnostic> {
    let arithmetic = m.find(|d| match d {
        Modifier::Reduction(Reduction::Add) => Some(AtomicOp::Add),
        Modifier::Reduction(Reduction::Min) => Some(AtomicOp::Min),
        Modifier::Reduction(Reduction::Max) => Some(AtomicOp::Max),
        _ => None,
    });
    let found = arithmetic.map(|a| a.value).or(match m.bool_op {
        Some(BoolOp::And) => Some(AtomicOp::And),
        Some(BoolOp::Or) => Some(AtomicOp::Or),
        _ => None,
    });
    let Some(a) = found else {
        return Err(Diagnostic::error(span, "`sured` names its operation (`.add`, `.min`, …)"));
    };
    if operands != 2 || !matches!(ty.bits(), 32 | 64) {
        return Err(Diagnostic::error(
            span,
            "`sured` takes [surface, {coordinates}] and a 32- or 64-bit value",
        ));
    }
    // `sured.p` is `.b32`, or `.b64` for `.min`/`.max` only.
    let formatted_type = match raw_type {
        ScalarType::B32 => true,
        ScalarType::B64 => matches!(a, AtomicOp::Min | AtomicOp::Max),
        _ => false,
    };
    if formatted && !formatted_type {
        return Err(Diagnostic::error(
            span,
            "`sured.p` is `.b32`, or `.b64` with `.min` and `.max`",
        ));
    }
    Ok(a)
}
