//! `wmma.load`, `wmma.store` and `wmma.mma` (PTX ISA 9.2 §9.7.14.4), on `mma`'s
//! emulation (`sema::matrix`).
//!
//! The ISA leaves the layout of a WMMA fragment unspecified ("the mapping of matrix
//! elements into fragments is unspecified"), so ptxvk picks the one that makes
//! `wmma.mma` a set of `mma` tiles: the M × N × K product is cut into tiles of
//! `min(M, 16)` × 8 × K, and a fragment is the concatenation of its tiles' `mma`
//! fragments: A's by row tile, B's by column tile, C's and D's by row tile then column
//! tile. That gives exactly the register counts the ISA fixes, except that `.f16` A
//! and B fragments have 8 registers where the tiles fill 4 (m16n16k16, B of m32n8k16,
//! A of m8n32k16: hardware keeps copies there); the remaining registers repeat the
//! first ones. Loads and stores move each element between its register and
//! `ptr + (row · stride + col)` (`.row`) or `ptr + (col · stride + row)` (`.col`)
//! elements, the stride defaulting to the matrix's leading dimension.
//!
//! Forms: `.m16n16k16`, `.m32n8k16`, `.m8n32k16` with `.f16` (f16 or f32 C/D), `.bf16`,
//! `.s8`/`.u8` (s32, `.satfinite`); `.m16n16k8` with `.tf32`; `.m8n8k4` with `.f64`
//! (`.rn`). `.global`, `.shared` and generic addresses. Not: the sub-byte
//! `.s4`/`.u4`/`.b1` forms.

use ptxvk_frontend::ast::{self, StateSpace};
use ptxvk_frontend::modifier::{
    FloatOption, Fragment, Layout, Modifier, Shape as ModifierShape, WmmaOp,
};
use ptxvk_frontend::{Diagnostic, Opcode, Span};

use super::expand::Emit;
use super::matrix::{type_names, Accum, Elem, Gathered, Shape, TypeName};
use super::{spaces, Lowerer, Mods};
use crate::build::Build;
use crate::ir::{Address, BinaryOp, FloatFormat, InstKind, OpTy, RegTy, Rounding, Space, Value};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Which matrix a `wmma.load`/`store` moves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    A,
    B,
    C,
}

/// The element type of a loaded or stored matrix: an input or an accumulator.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Data {
    In(Elem),
    Acc(Accum),
}

impl Data {
    /// Bytes of one element in memory (a `.tf32` element is an f32).
    fn bytes(self) -> u32 {
        match self {
            Data::In(e) => e.bits().max(8) / 8,
            Data::Acc(Accum::F16) => 2,
            Data::Acc(Accum::F64) => 8,
            Data::Acc(_) => 4,
        }
    }
}

/// The tile `Shape` of a `wmma` of `(m, n, k)` with types `(a, b, d, c)`.
fn wmma_tile(
    (m, _, k): (u32, u32, u32),
    (a, b, d, c): (Elem, Elem, Accum, Accum),
    satfinite: bool,
    span: Span,
) -> Result<Shape, Diagnostic> {
    let known = matches!(
        (a, k),
        (Elem::Float(FloatFormat::F16 | FloatFormat::Bf16) | Elem::Int { bits: 8, .. }, 16)
            | (Elem::Float(FloatFormat::Tf32), 8)
            | (Elem::F64, 4)
    );
    if !known {
        return Err(super::unsupported(
            span,
            "this `wmma` shape and type",
            "not a WMMA form ptxvk implements (f16, bf16, s8/u8 with k16, tf32 with k8, f64 \
             with k4)",
        ));
    }
    Ok(Shape { m: m.min(16), n: 8, k, a, b, d, c, satfinite, popc: None })
}

/// Where element `e` of register `reg` of a fragment of `which` lies in its matrix:
/// `(row, column)`, as IR values from this thread's group `g` and place `t`.
struct Place {
    row: Value,
    col: Value,
}

impl Lowerer<'_> {
    /// `wmma.*`; `None` for other instructions.
    pub(super) fn wmma(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        if op != Opcode::Wmma {
            return None;
        }
        self.whole_warp_sync_point(i);
        let mma = m.has(Modifier::WmmaOp(WmmaOp::Mma));
        Some(if mma { self.wmma_mma(i, m) } else { self.wmma_move(i, m) })
    }

    /// The shape modifier, the tile height and the tile counts.
    fn wmma_shape(&self, i: &ast::Instruction, m: &Mods) -> Result<(u32, u32, u32), Diagnostic> {
        let shape = m.find(|d| match d {
            Modifier::Shape(ModifierShape { m, n, k: Some(k) }) => match (m, n, k) {
                (16, 16, 16) | (32, 8, 16) | (8, 32, 16) | (16, 16, 8) | (8, 8, 4) => {
                    Some((m, n, k))
                }
                _ => None,
            },
            _ => None,
        });
        let shape = shape.map(|s| s.value);
        shape.ok_or_else(|| {
            super::unsupported(
                i.span,
                "this `wmma` shape",
                "the sub-byte `.m8n8k32` (`.s4`/`.u4`) and `.m8n8k128` (`.b1`) forms are not \
                 implemented",
            )
        })
    }

    /// Registers of a fragment of `which`: the tiles' and, for `.f16` A and B, 8.
    fn fragment_regs(tile: &Shape, (m, n, _): (u32, u32, u32), which: Which) -> (u32, u32) {
        let (rows, cols) = (m / tile.m, n / 8);
        let filled = match which {
            Which::A => rows * tile.a_regs(),
            Which::B => cols * tile.b_regs(),
            Which::C => rows * cols * tile.acc_regs(tile.c),
        };
        let f16_input = tile.a == Elem::Float(FloatFormat::F16) && which != Which::C;
        (filled, if f16_input { 8 } else { filled })
    }

    /// The matrix places of element `e` of fragment register `reg`.
    fn place(
        &mut self,
        tile: &Shape,
        (_, n, _): (u32, u32, u32),
        (which, reg, e): (Which, u32, u32),
        (group, in_group): (Value, Value),
        span: Span,
    ) -> Place {
        let mut x = Emit { l: self, span };
        let p = tile.a.per_register();
        let rows = tile.m / 8;
        let plus = |x: &mut Emit<'_, '_>, v: Value, add: u32| x.add(U32, v, Value::Imm(add.into()));
        match which {
            Which::A => {
                let (rt, ri) = (reg / tile.a_regs(), reg % tile.a_regs());
                let (chunk, half) = (ri / rows, ri % rows);
                let row = plus(&mut x, group, rt * tile.m + 8 * half);
                let kt = x.bin(BinaryOp::Mul, U32, in_group, Value::Imm(p.into()));
                let col = plus(&mut x, kt, chunk * tile.chunk() + e);
                Place { row, col }
            }
            Which::B => {
                let (ct, ri) = (reg / tile.b_regs(), reg % tile.b_regs());
                let kt = x.bin(BinaryOp::Mul, U32, in_group, Value::Imm(p.into()));
                let row = plus(&mut x, kt, ri * tile.chunk() + e);
                let col = plus(&mut x, group, ct * 8);
                Place { row, col }
            }
            Which::C => {
                let per_tile = tile.acc_regs(tile.c);
                let (tile_index, ri) = (reg / per_tile, reg % per_tile);
                let (rt, ct) = (tile_index / (n / 8), tile_index % (n / 8));
                // The element's index in its tile's m16n8 (or m8n8) fragment.
                let idx = if tile.c == Accum::F16 { 2 * ri + e } else { ri };
                let row = plus(&mut x, group, rt * tile.m + 8 * (idx / 2));
                let t2 = x.bin(BinaryOp::Shl, U32, in_group, Value::Imm(1));
                let col = plus(&mut x, t2, ct * 8 + idx % 2);
                Place { row, col }
            }
        }
    }

    /// `wmma.load.{a,b,c}.sync.aligned.layout.shape{.ss}.type r, [p]{, stride}` and
    /// `wmma.store.d.sync.aligned.layout.shape{.ss}.type [p], r{, stride}`.
    fn wmma_move(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let store = m.has(Modifier::WmmaOp(WmmaOp::Store));
        let fragment = |f| m.has(Modifier::Fragment(f));
        let which = if fragment(Fragment::A) {
            Which::A
        } else if fragment(Fragment::B) {
            Which::B
        } else if fragment(Fragment::C) || fragment(Fragment::D) {
            Which::C
        } else {
            return Err(Diagnostic::error(span, "`wmma.load` needs `.a`, `.b` or `.c`"));
        };
        let row_major =
            match (m.has(Modifier::Layout(Layout::Row)), m.has(Modifier::Layout(Layout::Col))) {
                (true, false) => true,
                (false, true) => false,
                _ => {
                    return Err(Diagnostic::error(
                        span,
                        "`wmma` needs one layout, `.row` or `.col`",
                    ))
                }
            };
        let shape = self.wmma_shape(i, m)?;
        let type_name = type_names(m)
            .into_iter()
            .rev()
            .map(|t| t.value)
            .find(|&t| Elem::parse(t).is_some() || Accum::parse(t).is_some())
            .ok_or_else(|| Diagnostic::error(span, "`wmma` needs an element type"))?;
        let data = match which {
            Which::C => Data::Acc(Accum::parse(type_name).ok_or_else(|| {
                Diagnostic::error(span, format!("`{type_name}` is not an accumulator type"))
            })?),
            _ => Data::In(Elem::parse(type_name).ok_or_else(|| {
                Diagnostic::error(span, format!("`{type_name}` is not a WMMA input type"))
            })?),
        };
        // A tile for the layout: inputs fix A and B's type, accumulators C's.
        let (input, acc) = match data {
            Data::In(e) => (e, if e == Elem::F64 { Accum::F64 } else { Accum::F32 }),
            Data::Acc(a) => {
                let input = match (a, shape.2) {
                    (Accum::F64, _) => Elem::F64,
                    (_, 8) => Elem::Float(FloatFormat::Tf32),
                    (Accum::S32, _) => Elem::Int { bits: 8, signed: true },
                    _ => Elem::Float(FloatFormat::F16),
                };
                (input, a)
            }
        };
        let tile = wmma_tile(shape, (input, input, acc, acc), false, span)?;
        let (filled, regs) = Self::fragment_regs(&tile, shape, which);
        let ops = i.operands.as_slice();
        let (addr, frag, stride) = match (store, ops) {
            (false, [r, p]) => (p, r, None),
            (false, [r, p, s]) => (p, r, Some(s)),
            (true, [p, r]) => (p, r, None),
            (true, [p, r, s]) => (p, r, Some(s)),
            _ => {
                return Err(Diagnostic::error(
                    span,
                    "`wmma` load/store takes a fragment, an address and an optional stride",
                ))
            }
        };
        let items = self.vector_operand(frag, regs, "the `wmma` fragment")?;
        let space = match &m.space {
            Some(s) if matches!(s.value, StateSpace::Global | StateSpace::Shared) => s.value,
            Some(s) => {
                return Err(Diagnostic::error(s.span, "`wmma` moves `.global` or `.shared` memory"))
            }
            None => StateSpace::Global,
        };
        // A generic address in a kernel with generic shared addresses: its space as the
        // inference proves it, else chosen per access at run time (`ld`'s way).
        let provenance =
            (m.space.is_none() && self.generic_windows).then(|| self.generic_provenance(addr));
        let (ir_space, base) = self.address(addr, space)?;
        let base = if provenance.is_some() { self.widen_generic(base, span) } else { base };
        // Elements between rows (`.row`) or columns (`.col`).
        let (rows, cols) = match which {
            Which::A => (shape.0, shape.2),
            Which::B => (shape.2, shape.1),
            Which::C => (shape.0, shape.1),
        };
        let stride = match stride {
            Some(s) => self.src(s, U32, false, span)?,
            None => Value::Imm(u64::from(if row_major { cols } else { rows })),
        };
        let (_, group, in_group) = self.lane_coordinates(span);
        let bytes = data.bytes();
        let reg_ty = match data {
            Data::In(Elem::F64) | Data::Acc(Accum::F64) => U64,
            Data::Acc(a) => a.reg_ty(),
            Data::In(_) => U32,
        };
        // Elements per register: packed inputs, packed `.f16` accumulators, else one.
        let per = match data {
            Data::In(e) => e.per_register(),
            Data::Acc(Accum::F16) => 2,
            Data::Acc(_) => 1,
        };
        let elem_ty = OpTy::U((bytes * 8) as u8);
        let wide_base = base.base.is_some_and(|r| self.kernel.reg(r).ty == RegTy::Int(64));
        // The byte address of element `place`.
        let address_of = |l: &mut Self, place: &Place| -> Address {
            let mut x = Emit { l, span };
            let (major, minor) =
                if row_major { (place.row, place.col) } else { (place.col, place.row) };
            let line = x.bin(BinaryOp::Mul, U32, major, stride);
            let index = x.add(U32, line, minor);
            let offset = x.bin(BinaryOp::Mul, U32, index, Value::Imm(bytes.into()));
            let reg = match base.base {
                Some(b) if wide_base => {
                    let wide = x.cvt(U64, U32, offset);
                    x.add(U64, Value::Reg(b), wide)
                }
                Some(b) => x.add(U32, Value::Reg(b), offset),
                None => offset,
            };
            let r = x.temp(if wide_base { U64 } else { U32 });
            x.mov(if wide_base { U64 } else { U32 }, r, reg);
            Address { base: Some(r), offset: base.offset }
        };
        if !store {
            let dsts =
                items.iter().map(|o| self.dst(o, reg_ty, false)).collect::<Result<Vec<_>, _>>()?;
            let mut values = Vec::new();
            for reg in 0..filled {
                let mut parts = Vec::new();
                for e in 0..per {
                    let place = self.place(&tile, shape, (which, reg, e), (group, in_group), span);
                    let at = address_of(self, &place);
                    let v = self.temp(elem_ty.storage(), span);
                    let load = |space, addr| InstKind::Load {
                        space,
                        ty: elem_ty,
                        dsts: vec![Some(v)],
                        addr,
                    };
                    self.wmma_access(ir_space, provenance, at, load, span)?;
                    parts.push(Value::Reg(v));
                }
                values.push(Emit { l: self, span }.pack(bytes * 8, parts));
            }
            let mut x = Emit { l: self, span };
            for (n, dst) in dsts.into_iter().enumerate() {
                x.mov(reg_ty, dst, values[n % filled as usize]);
            }
            return Ok(());
        }
        let srcs = items
            .iter()
            .map(|o| self.src(o, reg_ty, false, span))
            .collect::<Result<Vec<_>, _>>()?;
        for (reg, &value) in srcs.iter().enumerate().take(filled as usize) {
            for e in 0..per {
                let place =
                    self.place(&tile, shape, (which, reg as u32, e), (group, in_group), span);
                let at = address_of(self, &place);
                let part = if per == 1 {
                    value
                } else {
                    Emit { l: self, span }.bfe(
                        U32,
                        value,
                        u64::from(e * bytes * 8),
                        u64::from(bytes * 8),
                    )
                };
                let store =
                    |space, addr| InstKind::Store { space, ty: elem_ty, srcs: vec![part], addr };
                self.wmma_access(ir_space, provenance, at, store, span)?;
            }
        }
        Ok(())
    }

    /// One element's access `make(space, address)`: in `space`, or for a generic
    /// address (`provenance` given) in the space it proves or the one its window says.
    fn wmma_access(
        &mut self,
        space: Space,
        provenance: Option<spaces::Provenance>,
        at: Address,
        make: impl Fn(Space, Address) -> InstKind,
        span: Span,
    ) -> Result<(), Diagnostic> {
        match provenance {
            None | Some(spaces::Provenance::Plain | spaces::Provenance::Global) => {
                self.push(make(space, at), span)
            }
            Some(p @ (spaces::Provenance::Shared | spaces::Provenance::Local)) => {
                let space =
                    if p == spaces::Provenance::Shared { Space::Shared } else { Space::Local };
                let low = self.window_offset(at, span);
                self.push(make(space, low), span);
            }
            Some(spaces::Provenance::Unknown) => {
                self.kernel.local_bytes = self.kernel.local_bytes.max(4);
                return self.dispatch_generic(at, span, |l, space, a| {
                    l.push(make(space, a), span);
                    Ok(())
                });
            }
        }
        Ok(())
    }

    /// `wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype d, a, b, c` (`.f16`)
    /// and `….dtype.atype.btype.ctype{.satfinite}` (the others).
    fn wmma_mma(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let shape = self.wmma_shape(i, m)?;
        let names: Vec<TypeName> = type_names(m)
            .into_iter()
            .map(|t| t.value)
            .filter(|&t| Elem::parse(t).is_some() || Accum::parse(t).is_some())
            .collect();
        let satfinite = m.has(Modifier::FloatOption(FloatOption::Satfinite));
        if let Some(r) = m.rounding.as_ref().filter(|r| r.value.0 != Rounding::Nearest) {
            return Err(super::unsupported(
                r.span,
                "`wmma.mma` rounding other than `.rn`",
                "not implemented",
            ));
        }
        let parsed = match *names.as_slice() {
            [d, c] => (
                Accum::parse(d),
                Some(Elem::Float(FloatFormat::F16)),
                Some(Elem::Float(FloatFormat::F16)),
                Accum::parse(c),
            ),
            [d, a, b, c] => (Accum::parse(d), Elem::parse(a), Elem::parse(b), Accum::parse(c)),
            _ => (None, None, None, None),
        };
        let (Some(d), Some(a), Some(b), Some(c)) = parsed else {
            return Err(Diagnostic::error(
                span,
                "`wmma.mma` needs `.dtype.ctype` (f16) or `.dtype.atype.btype.ctype`",
            ));
        };
        let tile = wmma_tile(shape, (a, b, d, c), satfinite, span)?;
        let counts = [
            Self::fragment_regs(&Shape { c: d, ..tile }, shape, Which::C).1,
            Self::fragment_regs(&tile, shape, Which::A).1,
            Self::fragment_regs(&tile, shape, Which::B).1,
            Self::fragment_regs(&tile, shape, Which::C).1,
        ];
        let (d_regs, [a_vals, b_vals, c_vals]) =
            self.mma_operands(i, &tile, counts, "`wmma.mma`")?;
        let (row_tiles, col_tiles) = (shape.0 / tile.m, shape.1 / 8);
        let (ar, br) = (tile.a_regs() as usize, tile.b_regs() as usize);
        let (cr, dr) = (tile.acc_regs(c) as usize, tile.acc_regs(d) as usize);
        // Each row tile of A and column tile of B is gathered once, for every tile of D
        // that needs it.
        let a_words: Vec<Gathered> = (0..row_tiles as usize)
            .map(|rt| self.gather_a(&tile, &a_vals[rt * ar..(rt + 1) * ar], span))
            .collect();
        let b_words: Vec<Gathered> = (0..col_tiles as usize)
            .map(|ct| self.gather_b(&tile, &b_vals[ct * br..(ct + 1) * br], span))
            .collect();
        let mut results = Vec::new();
        for (rt, a) in a_words.iter().enumerate() {
            for (ct, b) in b_words.iter().enumerate() {
                let n = rt * col_tiles as usize + ct;
                results.push(self.multiply(&tile, a, b, &c_vals[n * cr..(n + 1) * cr], span)?);
            }
        }
        // D only now: it may name C's registers.
        for (n, r) in results.iter().enumerate() {
            self.write_accumulators(d, &d_regs[n * dr..(n + 1) * dr], r, span);
        }
        Ok(())
    }
}
