//! Warp-level matrix instructions (PTX ISA 9.2 §9.7.14): `mma.sync`, `ldmatrix`,
//! `stmatrix` and `movmatrix`, each resolved into one [`InstKind::Matrix`] (its
//! fragments checked here, its form by `ptxvk_frontend::forms`), which
//! `pass::expand_matrix` writes out in warp exchanges so that they run on every subgroup
//! size and in every warp mode. The operations and fragment layouts are specified in
//! `crate::ir::matrix`'s doc.

use ptxvk_frontend::ast::ScalarType;
use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::forms::mma::{self, TypeName};
use ptxvk_frontend::modifier::{FloatOption, Format, Modifier, Population, Transpose};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::{Diagnostic, Span};

use super::{Mods, Resolver};
use crate::ir::{
    BinaryOp, BoolOp, FloatFormat, InstKind, MatrixAccum, MatrixElem, MatrixInst, Mma, MmaForm,
    OpTy, RegId, Value,
};

const TRANS: Modifier = Modifier::Transpose(Transpose::Trans);

const U32: OpTy = OpTy::U(32);

/// The `mma` input type `t` names.
pub(super) fn elem(t: TypeName) -> Option<MatrixElem> {
    use ScalarType::*;
    Some(match t {
        TypeName::Scalar(F16) => MatrixElem::Float(FloatFormat::F16),
        TypeName::Scalar(Bf16) => MatrixElem::Float(FloatFormat::Bf16),
        TypeName::Scalar(Tf32) => MatrixElem::Float(FloatFormat::Tf32),
        TypeName::Format(Format::E4m3) => MatrixElem::Float(FloatFormat::E4m3),
        TypeName::Format(Format::E5m2) => MatrixElem::Float(FloatFormat::E5m2),
        TypeName::Scalar(F64) => MatrixElem::F64,
        TypeName::Scalar(S8) => MatrixElem::Int { bits: 8, signed: true },
        TypeName::Scalar(U8) => MatrixElem::Int { bits: 8, signed: false },
        TypeName::Format(Format::S4) => MatrixElem::Int { bits: 4, signed: true },
        TypeName::Format(Format::U4) => MatrixElem::Int { bits: 4, signed: false },
        TypeName::Format(Format::B1) => MatrixElem::Bit,
        _ => return None,
    })
}

/// The `mma` accumulator type `t` names.
pub(super) fn accum(t: TypeName) -> Option<MatrixAccum> {
    Some(match t {
        TypeName::Scalar(ScalarType::F16) => MatrixAccum::F16,
        TypeName::Scalar(ScalarType::F32) => MatrixAccum::F32,
        TypeName::Scalar(ScalarType::F64) => MatrixAccum::F64,
        TypeName::Scalar(ScalarType::S32) => MatrixAccum::S32,
        _ => return None,
    })
}

impl Resolver<'_> {
    /// Matrix instructions; `None` for other instructions.
    pub(super) fn matrix(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        if matches!(op, Opcode::Mma | Opcode::Ldmatrix | Opcode::Stmatrix | Opcode::Movmatrix) {
            self.whole_warp_sync_point(i, m);
        }
        Some(match op {
            // The types and shape are read in order from the modifiers themselves.
            Opcode::Mma => self.mma(i, m),
            Opcode::Ldmatrix => self.ldmatrix(i, m, false),
            Opcode::Stmatrix => self.ldmatrix(i, m, true),
            Opcode::Movmatrix => self.movmatrix(i, m),
            _ => return None,
        })
    }

    /// The registers of a `{…}` operand (a single register counts as one).
    pub(super) fn vector_operand<'o>(
        &self,
        op: &'o Operand,
        count: u32,
        what: &str,
    ) -> Result<Vec<&'o Operand>, Diagnostic> {
        let items = ptxvk_frontend::forms::texture::items(op);
        if items.len() as u32 != count {
            return Err(Diagnostic::error(
                op.span(),
                format!("{what} takes {count} register(s) here, found {}", items.len()),
            ));
        }
        Ok(items)
    }

    /// The values of `ops`, each read at `ty`.
    pub(super) fn sources<'o>(
        &mut self,
        ops: impl IntoIterator<Item = &'o Operand>,
        ty: OpTy,
        span: Span,
    ) -> Result<Vec<Value>, Diagnostic> {
        ops.into_iter().map(|o| self.src(o, ty, false, span)).collect()
    }

    /// The registers `ops` name, each written at `ty`.
    pub(super) fn destinations<'o>(
        &mut self,
        ops: impl IntoIterator<Item = &'o Operand>,
        ty: OpTy,
    ) -> Result<Vec<RegId>, Diagnostic> {
        ops.into_iter().map(|o| self.dst(o, ty, false)).collect()
    }

    /// `mma.sync.aligned.shape.row.col{.satfinite}.dtype.atype.btype.ctype d, a, b, c`
    /// (its layouts, `.satfinite`, shape and types checked by
    /// `ptxvk_frontend::forms::media`, `Check::MmaShapeTypes`).
    fn mma(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let satfinite = m.has(Modifier::FloatOption(FloatOption::Satfinite));
        let counted = m.has(Modifier::Population(Population::Popc));
        let popc = match m.bool_op {
            Some(BoolOp::And) if counted => Some(BinaryOp::And),
            Some(BoolOp::Xor) if counted => Some(BinaryOp::Xor),
            _ => None,
        };
        let parsed = mma::mma_types(&m.details, &m.types)
            .map(|(shape, [d, a, b, c])| (shape, accum(d), elem(a), elem(b), accum(c)));
        let Some(((mm, nn, kk), Some(d), Some(a), Some(b), Some(c))) = parsed else {
            return Err(Diagnostic::internal(span, "an `mma` form the forms table refuses"));
        };
        let form = MmaForm { m: mm, n: nn, k: kk, a, b, d, c, satfinite, popc };
        let mut op =
            Mma { form, wmma: false, d: Vec::new(), a: Vec::new(), b: Vec::new(), c: Vec::new() };
        self.mma_operands(i, &mut op, "`mma`")?;
        self.push(InstKind::Matrix(Box::new(MatrixInst::Mma(op))), span);
        Ok(())
    }

    /// The operands `d, a, b, c` of `mma` or `wmma.mma` (`what`) into `op`, with its
    /// form's types and register counts: D's destinations and the others' values.
    pub(super) fn mma_operands(
        &mut self,
        i: &ast::Instruction,
        op: &mut Mma,
        what: &str,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let [d_op, a_op, b_op, c_op] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, format!("{what} takes 4 operands: d, a, b, c")));
        };
        let [dn, an, bn, cn] = op.counts();
        let form = op.form;
        let d_items = self.vector_operand(d_op, dn, &format!("{what}'s d"))?;
        op.d = self.destinations(d_items, form.d.reg_ty())?;
        let mut read = |operand, count, ty, name: &str| -> Result<Vec<Value>, Diagnostic> {
            let items = self.vector_operand(operand, count, &format!("{what}'s {name}"))?;
            self.sources(items, ty, span)
        };
        op.a = read(a_op, an, form.a.reg_ty(), "a")?;
        op.b = read(b_op, bn, form.b.reg_ty(), "b")?;
        op.c = read(c_op, cn, form.c.reg_ty(), "c")?;
        Ok(())
    }

    /// `ldmatrix.sync.aligned.m8n8.num{.trans}{.shared}.b16 r, [p]` and, with `store`,
    /// `stmatrix.sync.aligned.m8n8.num{.trans}{.shared}.b16 [p], r`.
    fn ldmatrix(&mut self, i: &ast::Instruction, m: &Mods, store: bool) -> Result<(), Diagnostic> {
        let span = i.span;
        // `.m8n8`, one `.b16`, and one register per matrix (`ptxvk_frontend::forms`).
        let trans = m.has(TRANS);
        let [first, second] = i.operands.as_slice() else {
            return Err(Diagnostic::internal(span, "an `ldmatrix` form the forms refuse"));
        };
        let (data, addr) = if store { (second, first) } else { (first, second) };
        let items = ptxvk_frontend::forms::texture::items(data);
        // `.shared` or generic (`ptxvk_frontend::forms::media`), its shared-window offset
        // `pass::expand_matrix`'s.
        let generic = m.space.is_none();
        let space = if generic { StateSpace::Global } else { StateSpace::Shared };
        let (_, addr) = self.address(addr, space)?;
        let inst = if store {
            MatrixInst::StoreRows { trans, addr, generic, srcs: self.sources(items, U32, span)? }
        } else {
            MatrixInst::LoadRows { trans, addr, generic, dsts: self.destinations(items, U32)? }
        };
        self.push(InstKind::Matrix(Box::new(inst)), span);
        Ok(())
    }

    /// `movmatrix.sync.aligned.m8n8.trans.b16 d, a`: the transpose of one fragment.
    fn movmatrix(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let (dst, [src]) = self.fixed_args(i, m)?;
        self.push(InstKind::Matrix(Box::new(MatrixInst::Transpose { dst, src })), i.span);
        Ok(())
    }
}
