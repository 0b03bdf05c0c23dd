//! `wmma.load`, `wmma.store` and `wmma.mma` (PTX ISA 9.2 §9.7.14.4), each resolved into
//! one [`InstKind::Matrix`] (`MatrixInst::WmmaLoad`, `WmmaStore`, `Mma` with `wmma`),
//! which `pass::expand_matrix` writes out on `mma`'s expansion. The fragment layout is
//! ptxvk's own (the ISA leaves it unspecified): `crate::ir::matrix`'s doc specifies it.
//!
//! Forms: `.m16n16k16`, `.m32n8k16`, `.m8n32k16` with `.f16` (f16 or f32 C/D), `.bf16`,
//! `.s8`/`.u8` (s32, `.satfinite`); `.m16n16k8` with `.tf32`; `.m8n8k4` with `.f64`
//! (`.rn`). `.global`, `.shared` and generic addresses. Not: the sub-byte
//! `.s4`/`.u4`/`.b1` forms. The shapes and types are checked by `ptxvk_frontend::forms`.

use ptxvk_frontend::ast::{self, StateSpace};
use ptxvk_frontend::forms::mma;
use ptxvk_frontend::modifier::{FloatOption, Fragment as FragmentName, Modifier, WmmaOp};
use ptxvk_frontend::{Diagnostic, Opcode};

use super::matrix::{accum, elem};
use super::{Mods, Resolver};
use crate::ir::{
    Fragment, InstKind, MatrixInst, Mma, MmaForm, OpTy, Space, Value, WmmaAccess, WmmaData,
    WmmaSpace,
};

const U32: OpTy = OpTy::U(32);

impl Resolver<'_> {
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
        self.whole_warp_sync_point(i, m);
        let mma = m.has(Modifier::WmmaOp(WmmaOp::Mma));
        Some(if mma { self.wmma_mma(i, m) } else { self.wmma_move(i, m) })
    }

    /// `wmma.load.{a,b,c}.sync.aligned.layout.shape{.ss}.type r, [p]{, stride}` and
    /// `wmma.store.d.sync.aligned.layout.shape{.ss}.type [p], r{, stride}`.
    fn wmma_move(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let moved = mma::wmma_move(&m.details, &m.types);
        let moved = moved.ok_or_else(|| Diagnostic::internal(span, "a `wmma` the forms refuse"))?;
        let mma::WmmaMove { store, fragment, row_major, shape, data } = moved;
        let which = match fragment {
            FragmentName::A => Fragment::A,
            FragmentName::B => Fragment::B,
            FragmentName::C | FragmentName::D => Fragment::C,
        };
        let data = match which {
            Fragment::C => accum(data).map(WmmaData::Acc),
            _ => elem(data).map(WmmaData::In),
        };
        let data =
            data.ok_or_else(|| Diagnostic::internal(span, "a `wmma` type the forms refuse"))?;
        let ops = i.operands.as_slice();
        let (addr, frag, stride) = match (store, ops) {
            (false, [r, p]) => (p, r, None),
            (false, [r, p, s]) => (p, r, Some(s)),
            (true, [p, r]) => (p, r, None),
            (true, [p, r, s]) => (p, r, Some(s)),
            _ => return Err(Diagnostic::internal(span, "`wmma` operands the forms refuse")),
        };
        let mut access = WmmaAccess {
            which,
            row_major,
            shape,
            data,
            space: WmmaSpace::In(Space::Global),
            addr: crate::ir::Address { base: None, offset: 0 },
            stride: Value::Imm(0),
        };
        let items = self.vector_operand(frag, access.regs().1, "the `wmma` fragment")?;
        // `.global`, `.shared` or generic (`ptxvk_frontend::forms::media`).
        let space = m.space.as_ref().map_or(StateSpace::Global, |s| s.value);
        // A generic address in a kernel with generic shared addresses: its space as
        // `pass::infer_spaces` proves it, else chosen per access at run time (`ld`'s way).
        let generic = m.space.is_none() && self.facts.generic_windows;
        let (ir_space, base) = self.address(addr, space)?;
        access.addr = base;
        access.space = if generic { WmmaSpace::Generic } else { WmmaSpace::In(ir_space) };
        // Elements between rows (`.row`) or columns (`.col`).
        let (rows, cols) = match which {
            Fragment::A => (shape.0, shape.2),
            Fragment::B => (shape.2, shape.1),
            Fragment::C => (shape.0, shape.1),
        };
        access.stride = match stride {
            Some(s) => self.src(s, U32, false, span)?,
            None => Value::Imm(u64::from(if row_major { cols } else { rows })),
        };
        let reg_ty = data.reg_ty();
        let inst = if store {
            MatrixInst::WmmaStore(access, self.sources(items, reg_ty, span)?)
        } else {
            MatrixInst::WmmaLoad(access, self.destinations(items, reg_ty)?)
        };
        self.push(InstKind::Matrix(Box::new(inst)), span);
        Ok(())
    }

    /// `wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype d, a, b, c` (`.f16`)
    /// and `….dtype.atype.btype.ctype{.satfinite}` (the others). The layouts must be
    /// those `a` and `b` were loaded with (§9.7.14.4.5); ptxvk's fragments hold each
    /// element at its place in the matrix whatever the layout in memory (`wmma.load`
    /// applies it), so the product does not depend on them.
    fn wmma_mma(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let satfinite = m.has(Modifier::FloatOption(FloatOption::Satfinite));
        let parsed = mma::mma_types(&m.details, &m.types)
            .map(|(shape, [d, a, b, c])| (shape, accum(d), elem(a), elem(b), accum(c)));
        let Some((shape, Some(d), Some(a), Some(b), Some(c))) = parsed else {
            return Err(Diagnostic::internal(span, "`wmma.mma` types the forms refuse"));
        };
        let (mm, n, k) = shape;
        let form = MmaForm { m: mm, n, k, a, b, d, c, satfinite, popc: None };
        let mut op =
            Mma { form, wmma: true, d: Vec::new(), a: Vec::new(), b: Vec::new(), c: Vec::new() };
        self.mma_operands(i, &mut op, "`wmma.mma`")?;
        self.push(InstKind::Matrix(Box::new(MatrixInst::Mma(op))), span);
        Ok(())
    }
}
