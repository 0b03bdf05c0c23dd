//! Expands the half arithmetic of semantic analysis ([`InstKind::Half`]: `.f16`,
//! `.bf16`, `.f16x2`, `.bf16x2` `add sub mul fma neg abs min max`, and `ex2.approx`,
//! `tanh.approx`, PTX ISA 9.2 §9.7.4)
//! lane by lane into operations that need no half support on the device (CFG → CFG,
//! inside blocks): each rounded operation widens its lanes to f32 exactly (`Widen`),
//! computes exactly and rounds to odd in f64 (`RoundToOdd`) and rounds that once to the
//! format (`Narrow`), which is correct in every rounding direction (Boldo & Melquiond
//! 2008); `neg` and `abs` are bit operations; `min` and `max` compare the widened
//! values; `ex2` and `tanh` are the f32 functions of the widened lane, rounded to
//! nearest to the format. `.ftz`, `.sat` and `.relu` apply to the half bits.
//!
//! The division of labour with [`super::legalize_floats`]: this pass writes out the
//! half formats, whose roundings (any direction) are all in its `Narrow`s; the
//! directed rounding of f32 and f64 arithmetic and conversions stays in the IR for
//! `legalize_floats`, which runs later and also decides how the `RoundToOdd`s made
//! here are computed on a device without f64.
//!
//! The narrow-format conversions ([`InstKind::HalfConvert`]) become integer operations
//! on the exponent bits (UE8M0), or `Widen`, `Narrow` and `IntToFloat` with the lanes
//! unpacked and packed with integer operations (`cvt` with `.f16`, `.bf16`, `.tf32`, the
//! FP8/FP6/FP4 pairs; [`narrow`]).
//!
//! The f64 `.approx` reciprocals (`rcp.approx.ftz.f64`, `rsqrt.approx{.ftz}.f64`,
//! [`is_approx_f64`]) become the exactly rounded `sqrt` and `rcp` between flushes.
//!
//! PTX ISA 9.2 §5.2.2 lets `cvt` hold a float or narrow-format value in a wider integer
//! register, which semantic analysis leaves as it is: a source's low bits are read out
//! ([`low_bits`]) and a result is zero-extended into its register
//! ([`zero_extend_into`]), in [`InstKind::HalfConvert`] and [`InstKind::Convert`]
//! ([`is_widened_convert`]) alike.
//!
//! Precondition: none. Postcondition: no [`InstKind::Half`], [`InstKind::HalfConvert`]
//! or f64 `.approx` reciprocal is left ([`is_half`], which `super::leftover` checks),
//! nor a `Convert` with a float side in a wider register ([`is_widened_convert`]).

mod narrow;

use crate::build::{Build, Builder};
use crate::ir::{
    BinaryOp, CmpOp, CvtSide, FloatFormat, FloatPath, HalfArith, HalfConvert, HalfConvertOp,
    HalfOp, InstKind, Kernel, NarrowCvt, OddOp, OpTy, RegId, RegTy, Rounding, UnaryOp, Value,
};

const F32: OpTy = OpTy::F(32);
const F64: OpTy = OpTy::F(64);
const H16: OpTy = OpTy::U(16);

/// Whether `kind` is half arithmetic, a narrow-format conversion or an f64 `.approx`
/// reciprocal ([`is_approx_f64`]), which this pass expands.
pub fn is_half(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Half(_) | InstKind::HalfConvert(_)) || is_approx_f64(kind)
}

/// `rcp.approx.ftz.f64` and `rsqrt.approx{.ftz}.f64` (PTX ISA 9.2 §9.7.3.9, §9.7.3.16)
/// as semantic analysis resolves them: an f64 `rsqrt` (but the device's own, `.native`,
/// of the Newton routines), or an f64 `rcp` with `.ftz` (which flushes f64 subnormals
/// only in these two).
pub fn is_approx_f64(kind: &InstKind) -> bool {
    match kind {
        InstKind::Unary { op: UnaryOp::Rsqrt, ty: F64, mode, .. } => mode.path != FloatPath::Native,
        InstKind::Unary { op: UnaryOp::Rcp, ty: F64, mode, .. } => mode.ftz,
        _ => false,
    }
}

/// Expands every half operation of `k`.
pub fn run(k: &mut Kernel) {
    for b in 0..k.blocks.len() {
        if !k.blocks[b].insts.iter().any(|i| is_half(&i.kind) || is_widened_convert(k, &i.kind)) {
            continue;
        }
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            match &inst.kind {
                InstKind::Half(op) => {
                    let mut e = Builder::new(k, inst.span);
                    half(&mut e, op);
                    out.append(&mut e.insts);
                }
                &InstKind::Unary { op, mode, dst, src, .. } if is_approx_f64(&inst.kind) => {
                    let mut e = Builder::new(k, inst.span);
                    approx_f64(&mut e, op, mode.ftz, dst, src);
                    out.append(&mut e.insts);
                }
                InstKind::HalfConvert(c) => {
                    let reg = k.reg(c.dst).ty;
                    let mut e = Builder::new(k, inst.span);
                    let c = &low_sources(&mut e, c);
                    match c.op {
                        HalfConvertOp::Narrow(n) if zero_extended(n, reg) => {
                            narrow_into(&mut e, c, n, reg.bits())
                        }
                        HalfConvertOp::Narrow(n) => narrow::convert(&mut e, c, n, reg.bits()),
                        _ => convert(&mut e, c),
                    }
                    out.append(&mut e.insts);
                }
                &InstKind::Convert { to, from, rounding, mode, dst, src }
                    if is_widened_convert(k, &inst.kind) =>
                {
                    let reg_bits = k.reg(dst).ty.bits();
                    let mut e = Builder::new(k, inst.span);
                    let src =
                        if from.is_float() { low_bits(&mut e, src, from.bits()) } else { src };
                    let convert = |e: &mut Builder<'_>, dst| {
                        e.push(InstKind::Convert { to, from, rounding, mode, dst, src })
                    };
                    if to.is_float() && reg_bits > to.bits() {
                        zero_extend_into(&mut e, dst, to.bits(), reg_bits, convert);
                    } else {
                        convert(&mut e, dst);
                    }
                    out.append(&mut e.insts);
                }
                _ => out.push(inst),
            }
        }
        k.blocks[b].insts = out;
    }
}

/// Whether the result of narrow `cvt` `n` is zero-extended into its destination, a
/// register of type `reg` (PTX ISA 9.2 §5.2.2): a float or narrow-format result in a
/// wider integer register (an integer result is extended by `narrow::convert`).
fn zero_extended(n: NarrowCvt, reg: RegTy) -> bool {
    let integer = matches!(n.to, CvtSide::Op(t) if !t.is_float());
    !integer && matches!(reg, RegTy::Int(b) if u32::from(b) > n.to.bits())
}

/// Narrow `cvt` `c` whose result is zero-extended into its register of `reg_bits`
/// ([`zero_extended`]).
fn narrow_into(e: &mut Builder<'_>, c: &HalfConvert, n: NarrowCvt, reg_bits: u32) {
    let bits = n.to.bits();
    zero_extend_into(e, c.dst, bits, reg_bits, |e, result| {
        narrow::convert(e, &HalfConvert { dst: result, ..c.clone() }, n, bits)
    });
}

/// Whether `kind` is a [`InstKind::Convert`] with a float side in a wider integer
/// register (PTX ISA 9.2 §5.2.2), which this pass chops or zero-extends into.
pub fn is_widened_convert(k: &Kernel, kind: &InstKind) -> bool {
    let wider = |r: RegId, bits: u32| matches!(k.reg(r).ty, RegTy::Int(w) if u32::from(w) > bits);
    match *kind {
        InstKind::Convert { to, from, dst, src, .. } => {
            (to.is_float() && wider(dst, to.bits()))
                || (from.is_float() && matches!(src, Value::Reg(r) if wider(r, from.bits())))
        }
        _ => false,
    }
}

/// The low `bits` of `v` when it is a wider integer register (PTX ISA 9.2 §5.2.2's
/// relaxed rules for a float or narrow-format operand), else `v`.
fn low_bits(e: &mut Builder<'_>, v: Value, bits: u32) -> Value {
    match v {
        Value::Reg(r) => match e.kernel.reg(r).ty {
            RegTy::Int(w) if u32::from(w) > bits => e.cvt(OpTy::U(bits as u8), OpTy::U(w), v),
            _ => v,
        },
        Value::Imm(_) => v,
    }
}

/// `c` reading the low bits of its sources in wider integer registers ([`low_bits`]),
/// but an integer source of a narrow `cvt`, which `narrow::convert` reads as its type
/// says.
fn low_sources(e: &mut Builder<'_>, c: &HalfConvert) -> HalfConvert {
    let integer = |s: CvtSide| matches!(s, CvtSide::Op(t) if !t.is_float());
    if matches!(c.op, HalfConvertOp::Narrow(n) if integer(n.from)) {
        return c.clone();
    }
    let srcs = c.srcs.iter().zip(c.op.src_bits()).map(|(&v, bits)| low_bits(e, v, bits));
    HalfConvert { srcs: srcs.collect(), ..c.clone() }
}

/// What `write` computes into a temporary of `bits`, zero-extended into `dst`, an
/// integer register of `reg_bits` (PTX ISA 9.2 §5.2.2).
fn zero_extend_into(
    e: &mut Builder<'_>,
    dst: RegId,
    bits: u32,
    reg_bits: u32,
    write: impl FnOnce(&mut Builder<'_>, RegId),
) {
    let (narrow, wide) = (OpTy::U(bits as u8), OpTy::U(reg_bits as u8));
    let result = e.temp(narrow);
    write(e, result);
    let extended = e.cvt(wide, narrow, Value::Reg(result));
    e.mov(wide, dst, extended);
}

/// `rcp.approx.ftz.f64` and `rsqrt.approx{.ftz}.f64`: the exactly rounded reciprocal
/// (of the exactly rounded square root: two roundings, within the ISA's bounds), with
/// `ftz` flushing subnormal inputs and results to zeros of their sign.
fn approx_f64(e: &mut impl Build, op: UnaryOp, ftz: bool, dst: RegId, src: Value) {
    let x = if ftz { e.flush_bits(FloatFormat::F64, src) } else { src };
    let x = if op == UnaryOp::Rsqrt { e.un(UnaryOp::Sqrt, F64, x) } else { x };
    let r = e.un(UnaryOp::Rcp, F64, x);
    let r = if ftz { e.flush_bits(FloatFormat::F64, r) } else { r };
    e.mov(F64, dst, r);
}

/// The instructions of one half operation, lane by lane.
pub fn half(e: &mut impl Build, op: &HalfOp) {
    let fmt = op.format;
    let lanes = u32::from(op.lanes);
    let sign = 1u64 << 15;
    let mut results = Vec::new();
    for k in 0..lanes {
        let mut x: Vec<Value> = op.srcs.iter().map(|&v| e.lane(v, lanes, k)).collect();
        if op.ftz {
            x = x.into_iter().map(|v| e.flush_bits(fmt, v)).collect();
        }
        let arg = |i: usize| x.get(i).copied().unwrap_or(Value::Imm(0));
        let r = match op.op {
            HalfArith::Neg => e.bin(BinaryOp::Xor, H16, arg(0), Value::Imm(sign)),
            HalfArith::Abs => e.and(H16, arg(0), Value::Imm(sign - 1)),
            HalfArith::Min | HalfArith::Max => {
                let r = e.half_min_max(fmt, op.op == HalfArith::Max, arg(0), arg(1));
                if op.nan {
                    let (a, b) = (e.widen(fmt, arg(0)), e.widen(fmt, arg(1)));
                    let nan = e.cmp(CmpOp::Nan, F32, a, b);
                    e.sel(H16, nan, Value::Imm(fmt.nan()), r)
                } else {
                    r
                }
            }
            HalfArith::Ex2 | HalfArith::Tanh => {
                // Through the f32 function, rounded once to nearest to the format.
                let w = e.widen(fmt, arg(0));
                let f = if op.op == HalfArith::Ex2 { UnaryOp::Ex2 } else { UnaryOp::Tanh };
                let r = e.un(f, F32, w);
                let r = e.narrow(fmt, F32, Rounding::Nearest, false, false, r);
                if op.ftz {
                    e.flush_bits(fmt, r)
                } else {
                    r
                }
            }
            HalfArith::Add | HalfArith::Sub | HalfArith::Mul | HalfArith::Fma => {
                let w: Vec<Value> = x.iter().map(|&v| e.widen(fmt, v)).collect();
                let wide = |i: usize| w.get(i).copied().unwrap_or(Value::Imm(0));
                let (odd_op, c) = match op.op {
                    HalfArith::Add => (OddOp::Add, Value::Imm(0)),
                    HalfArith::Sub => (OddOp::Sub, Value::Imm(0)),
                    HalfArith::Mul => (OddOp::Mul, Value::Imm(0)),
                    _ => (OddOp::Fma, wide(2)),
                };
                let v = e.odd(odd_op, wide(0), wide(1), c);
                let mut r = e.narrow(fmt, F64, op.rounding, false, op.relu, v);
                if op.sat {
                    // `.sat` (f16 only) commutes with the rounding, 0 and 1 being f16
                    // values, so it clamps the f16 bits, without f64: negative values
                    // (-0 too) and NaN give +0, values above 1 (and +inf) give 1.
                    let one = Value::Imm(0x3c00);
                    let above_one = e.cmp(CmpOp::Gt, H16, r, one);
                    let clamped = e.sel(H16, above_one, one, r);
                    let negative_or_nan = e.cmp(CmpOp::Gt, H16, r, Value::Imm(0x7c00));
                    r = e.sel(H16, negative_or_nan, Value::Imm(0), clamped);
                }
                if op.ftz {
                    e.flush_bits(fmt, r)
                } else {
                    r
                }
            }
        };
        results.push(r);
    }
    let r = e.pack(16, results);
    e.mov(OpTy::U((16 * lanes) as u8), op.dst, r);
}

/// The instructions of one narrow-format conversion.
pub fn convert(e: &mut impl Build, c: &HalfConvert) {
    let u = OpTy::U(32);
    let src = |k: usize| c.srcs.get(k).copied().unwrap_or(Value::Imm(0));
    let (up, satfinite, sources, mantissa) = match c.op {
        HalfConvertOp::FromUe8m0 => {
            let a = e.cvt(u, OpTy::U(16), src(0));
            let mut lanes = Vec::new();
            for k in 0..2 {
                let byte = e.bfe(u, a, 8 * k, 8);
                let bits = e.bin(BinaryOp::Shl, u, byte, Value::Imm(7));
                let zero = e.cmp(CmpOp::Eq, u, byte, Value::Imm(0));
                let bits = e.sel(u, zero, Value::Imm(0x40), bits);
                let nan = e.cmp(CmpOp::Eq, u, byte, Value::Imm(0xff));
                let bits = e.sel(u, nan, Value::Imm(0x7fff), bits);
                lanes.push(e.cvt(H16, u, bits));
            }
            let r = e.pack(16, lanes);
            e.mov(u, c.dst, r);
            return;
        }
        // The sources' bit patterns, the upper byte's first, and their mantissa width.
        HalfConvertOp::ToUe8m0 { bf16x2: false, up, satfinite } => {
            (up, satfinite, [src(0), src(1)], 23)
        }
        HalfConvertOp::ToUe8m0 { bf16x2: true, up, satfinite } => {
            let hi = e.bin(BinaryOp::Shr, u, src(0), Value::Imm(16));
            let lo = e.and(u, src(0), Value::Imm(0xffff));
            (up, satfinite, [hi, lo], 7)
        }
        HalfConvertOp::Narrow(n) => {
            let bits = n.to.bits();
            narrow::convert(e, c, n, bits);
            return;
        }
    };
    let mut bytes = Vec::new();
    for v in sources {
        // The bits of the source (an f32 register or immediate, or a bf16 lane).
        let bits = e.temp(u);
        e.mov(u, bits, v);
        let v = Value::Reg(bits);
        let abs = e.and(u, v, Value::Imm((1 << (mantissa + 8)) - 1));
        let inf = 0xffu64 << mantissa;
        let mut r = e.bin(BinaryOp::Shr, u, abs, Value::Imm(mantissa));
        if up {
            // Up one unless |x| is a power of two, 2^-127 or less, or not finite.
            let frac = e.and(u, abs, Value::Imm((1 << mantissa) - 1));
            let inexact = e.cmp(CmpOp::Ne, u, frac, Value::Imm(0));
            let above = e.cmp(CmpOp::Gt, u, abs, Value::Imm(1 << (mantissa - 1)));
            let finite = e.cmp(CmpOp::Lt, u, abs, Value::Imm(inf));
            let step = e.pred_and(inexact, above);
            let step = e.pred_and(step, finite);
            let one = e.sel(u, step, Value::Imm(1), Value::Imm(0));
            r = e.add(u, r, one);
        }
        if satfinite {
            let not_nan = e.cmp(CmpOp::Le, u, abs, Value::Imm(inf));
            let max = e.bin(BinaryOp::Min, u, r, Value::Imm(0xfe));
            r = e.sel(u, not_nan, max, r);
        }
        bytes.push(e.cvt(OpTy::U(8), u, r));
    }
    bytes.reverse();
    let r = e.pack(8, bytes);
    e.mov(H16, c.dst, r);
}
