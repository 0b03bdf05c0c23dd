//! Warp-level matrix instructions (PTX ISA 9.2 §9.7.14): `mma.sync`, `ldmatrix`,
//! `stmatrix` and `movmatrix`, emulated through the warp model's exchanges
//! (`sema::warp`), so they run on every subgroup size and in every warp mode.
//!
//! # Fragments
//!
//! A warp's 32 lanes hold the matrices in registers, laid out as the ISA's figures
//! give (§9.7.14.5.x, "Matrix Fragments for mma.m16n8k*"). With `g = %laneid >> 2` and
//! `t = %laneid % 4`, every `mma` shape of sm_80–sm_90 has the same structure:
//!
//! - a 32-bit register of A or B holds `p` consecutive elements of one row of A (one
//!   column of B): `p` = 2 for 16-bit types, 4 for 8-bit ones, 8 for 4-bit ones, 1 for
//!   `.tf32` (and one `.f64` register);
//! - a *chunk* of `4p` consecutive k is spread over the 4 lanes of a group: lane `t` holds
//!   k = `chunk·4p + t·p … + p − 1`;
//! - A row `r` is held by group `g = r % 8`, in register `r / 8 + (M / 8) · chunk`;
//!   B column `c` by group `g = c`, in register `chunk`;
//! - C and D element `i` is at row `g + 8·(i / 2)`, column `2t + i % 2` (the `.f16`
//!   forms pack elements 2j and 2j + 1 in register j).
//!
//! Each thread gathers the rows of A and columns of B its D elements need: one exchange
//! per 32-bit word of an A or B register, reading the 4 lanes of the group that holds
//! them (8 for B: two columns). `m16n8k16` with f16 inputs is 6 exchanges and 32 reads.
//!
//! # Accumulation
//!
//! `d = c + Σ_k a_k·b_k` is computed in k order, starting from `c`, with exact products
//! and one rounding per k step: every product of two 16-bit, 8-bit or `.tf32` floats is
//! exact in f32 (at most 22 significant bits), so each step is an f32 addition rounded
//! to nearest even; `.f64` steps are fused multiply-adds rounded once. `.f16`
//! accumulators accumulate in f32 and round to f16 once, at the end. `.tf32` operands
//! are truncated to their 19 bits (the low 13 mantissa bits are ignored). Integer forms
//! sum exactly in 64 bits (`.b1`: the bits ANDed or XORed and counted, a word at a
//! time); `.satfinite` clamps the sum to the s32 range, and without
//! it the low 32 bits are kept. NVIDIA's tensor cores add several products at a time
//! in a wider internal format (and truncate), so float results may differ from this
//! order by a few ULP there; integer results are the same.
//!
//! # Matrix loads and stores
//!
//! `ldmatrix` (§9.7.14.5.15): lanes `8i … 8i + 7` give the row addresses of matrix `i`;
//! each thread receives, for matrix `i`, row `g`, columns `2t` and `2t + 1` (with
//! `.trans`, the transpose: rows `2t` and `2t + 1` of column `g`). One exchange of the
//! addresses, then loads from shared memory. `stmatrix` is its inverse: the lane with a
//! row's address gathers the row from the 4 lanes holding it and stores 16 bytes.
//! `movmatrix` transposes one fragment by exchange.

use ptxvk_frontend::ast::ScalarType;
use ptxvk_frontend::ast::{self, Operand};
use ptxvk_frontend::modifier::{
    FloatOption, Format, Layout, Modifier, Population, Shape as ModifierShape, Transpose,
};
use ptxvk_frontend::Opcode;
use ptxvk_frontend::Spanned;
use ptxvk_frontend::{Diagnostic, Span};

use super::expand::Emit;
use super::{Lowerer, Mods};
use crate::build::Build;
use crate::ir::{
    Address, BinaryOp, BoolOp, CmpOp, FloatFormat, FloatMode, InstKind, OpTy, RegId, RegTy,
    Rounding, Space, Value,
};

const M8N8: ModifierShape = ModifierShape { m: 8, n: 8, k: None };
const TRANS: Modifier = Modifier::Transpose(Transpose::Trans);

const U16: OpTy = OpTy::U(16);
const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);
const S64: OpTy = OpTy::S(64);
const F32: OpTy = OpTy::F(32);
const F64: OpTy = OpTy::F(64);

/// The element type of `mma`'s A and B operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Elem {
    Float(FloatFormat),
    F64,
    Int {
        bits: u32,
        signed: bool,
    },
    /// `.b1`: single bits, combined by `.and`/`.xor` and counted (`.popc`).
    Bit,
}

/// A type modifier of a matrix instruction: a register type, or a format no register
/// has (`.e4m3`, `.s4`, `.b1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TypeName {
    Scalar(ScalarType),
    Format(Format),
}

impl std::fmt::Display for TypeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TypeName::Scalar(t) => t.directive(),
            TypeName::Format(t) => t.spelling(),
        })
    }
}

/// The type modifiers of `m`, formats included, in source order.
pub(super) fn type_names(m: &Mods) -> Vec<Spanned<TypeName>> {
    let formats = m.details.iter().filter_map(|d| match d.value {
        Modifier::Format(f) => Some(Spanned::new(TypeName::Format(f), d.span)),
        _ => None,
    });
    let scalars = m.types.iter().map(|t| Spanned::new(TypeName::Scalar(t.value), t.span));
    let mut all: Vec<Spanned<TypeName>> = scalars.chain(formats).collect();
    all.sort_by_key(|t| t.span.start);
    all
}

impl Elem {
    pub(super) fn parse(t: TypeName) -> Option<Elem> {
        use ScalarType::*;
        Some(match t {
            TypeName::Scalar(F16) => Elem::Float(FloatFormat::F16),
            TypeName::Scalar(Bf16) => Elem::Float(FloatFormat::Bf16),
            TypeName::Scalar(Tf32) => Elem::Float(FloatFormat::Tf32),
            TypeName::Format(Format::E4m3) => Elem::Float(FloatFormat::E4m3),
            TypeName::Format(Format::E5m2) => Elem::Float(FloatFormat::E5m2),
            TypeName::Scalar(F64) => Elem::F64,
            TypeName::Scalar(S8) => Elem::Int { bits: 8, signed: true },
            TypeName::Scalar(U8) => Elem::Int { bits: 8, signed: false },
            TypeName::Format(Format::S4) => Elem::Int { bits: 4, signed: true },
            TypeName::Format(Format::U4) => Elem::Int { bits: 4, signed: false },
            TypeName::Format(Format::B1) => Elem::Bit,
            _ => return None,
        })
    }

    pub(super) fn bits(self) -> u32 {
        match self {
            Elem::Float(f) => f.bits(),
            Elem::F64 => 64,
            Elem::Int { bits, .. } => bits,
            Elem::Bit => 1,
        }
    }

    /// Elements per register: `p` of the module documentation.
    pub(super) fn per_register(self) -> u32 {
        (32 / self.bits()).max(1)
    }
}

/// The type of `mma`'s C and D operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Accum {
    F16,
    F32,
    F64,
    S32,
}

impl Accum {
    pub(super) fn parse(t: TypeName) -> Option<Accum> {
        Some(match t {
            TypeName::Scalar(ScalarType::F16) => Accum::F16,
            TypeName::Scalar(ScalarType::F32) => Accum::F32,
            TypeName::Scalar(ScalarType::F64) => Accum::F64,
            TypeName::Scalar(ScalarType::S32) => Accum::S32,
            _ => return None,
        })
    }

    /// The type of one C or D register.
    pub(super) fn reg_ty(self) -> OpTy {
        match self {
            Accum::F16 => U32,
            Accum::F32 => F32,
            Accum::F64 => F64,
            Accum::S32 => OpTy::S(32),
        }
    }
}

/// One `mma` form: its shape and types.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    pub(super) m: u32,
    pub(super) n: u32,
    pub(super) k: u32,
    pub(super) a: Elem,
    pub(super) b: Elem,
    pub(super) d: Accum,
    pub(super) c: Accum,
    pub(super) satfinite: bool,
    /// `.b1` forms: how bits combine before they are counted (`.and`, `.xor`).
    pub(super) popc: Option<BinaryOp>,
}

impl Shape {
    /// Whether sm_80–sm_90 have this form (PTX ISA 9.2 §9.7.14.5.14, the `mma` syntax).
    fn exists(&self) -> bool {
        use FloatFormat as F;
        // D and C have the same type (ptxas: ".dtype must be '.f16' when .ctype is '.f16'").
        let float_acc = self.d == self.c && matches!(self.d, Accum::F32 | Accum::F16);
        let f32_acc = self.d == Accum::F32 && self.c == Accum::F32;
        match (self.a, self.m, self.n, self.k) {
            (Elem::Float(F::F16), 16, 8, 8 | 16) => float_acc,
            (Elem::Float(F::Bf16), 16, 8, 8 | 16) => f32_acc,
            (Elem::Float(F::Tf32), 16, 8, 4 | 8) => f32_acc,
            (Elem::Float(F::E4m3 | F::E5m2), 16, 8, 16 | 32) => float_acc,
            (Elem::F64, 8, 8, 4) | (Elem::F64, 16, 8, 4 | 8 | 16) => {
                self.d == Accum::F64 && self.c == Accum::F64
            }
            (Elem::Int { bits: 8, .. }, 8, 8, 16) | (Elem::Int { bits: 8, .. }, 16, 8, 16 | 32) => {
                self.d == Accum::S32 && self.c == Accum::S32
            }
            (Elem::Int { bits: 4, .. }, 8, 8, 32) | (Elem::Int { bits: 4, .. }, 16, 8, 32 | 64) => {
                self.d == Accum::S32 && self.c == Accum::S32
            }
            (Elem::Bit, 8, 8, 128) | (Elem::Bit, 16, 8, 128 | 256) => {
                self.d == Accum::S32 && self.c == Accum::S32 && self.popc.is_some()
            }
            _ => false,
        }
    }

    /// k per chunk (`4p`).
    pub(super) fn chunk(&self) -> u32 {
        4 * self.a.per_register()
    }

    pub(super) fn a_regs(&self) -> u32 {
        self.m / 8 * (self.k / self.chunk())
    }

    pub(super) fn b_regs(&self) -> u32 {
        self.k / self.chunk()
    }

    /// C and D elements per thread.
    pub(super) fn elements(&self) -> u32 {
        self.m * self.n / 32
    }

    /// C or D registers per thread.
    pub(super) fn acc_regs(&self, acc: Accum) -> u32 {
        if acc == Accum::F16 {
            self.elements() / 2
        } else {
            self.elements()
        }
    }
}

/// The 32-bit words this thread gathered of one operand: `words[reg][source][lane q]`,
/// with source the row half (A) or column (B), and for `.f64` the high word after the
/// low one in `high`.
pub(super) struct Gathered {
    low: Vec<Vec<[Value; 4]>>,
    high: Vec<Vec<[Value; 4]>>,
}

impl Lowerer<'_> {
    /// Matrix instructions; `None` for other instructions.
    pub(super) fn matrix(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        if matches!(op, Opcode::Mma | Opcode::Ldmatrix | Opcode::Stmatrix | Opcode::Movmatrix) {
            self.whole_warp_sync_point(i);
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
        let items: Vec<&Operand> = match op {
            Operand::Vector(v, _) => v.iter().collect(),
            one => vec![one],
        };
        if items.len() as u32 != count {
            return Err(Diagnostic::error(
                op.span(),
                format!("{what} takes {count} register(s) here, found {}", items.len()),
            ));
        }
        Ok(items)
    }

    /// `mma.sync.aligned.shape.row.col{.satfinite}.dtype.atype.btype.ctype d, a, b, c`.
    fn mma(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let types: Vec<(TypeName, Span)> =
            type_names(m).into_iter().map(|t| (t.value, t.span)).collect();
        let layouts: Vec<Layout> = m
            .details
            .iter()
            .filter_map(|d| match d.value {
                Modifier::Layout(l) => Some(l),
                _ => None,
            })
            .collect();
        let satfinite = m.has(Modifier::FloatOption(FloatOption::Satfinite));
        let combine = match m.bool_op {
            Some(BoolOp::And) => Some(BinaryOp::And),
            Some(BoolOp::Xor) => Some(BinaryOp::Xor),
            _ => None,
        };
        let counted = m.has(Modifier::Population(Population::Popc));
        let shape = m.find(|d| match d {
            Modifier::Shape(s) => Some(s),
            _ => None,
        });
        let Some(shape) = shape else {
            return Err(Diagnostic::error(span, "`mma` needs a shape such as `.m16n8k16`"));
        };
        let (mm, nn, kk) = match shape.value {
            ModifierShape { m, n, k: Some(k) } => (m, n, k),
            s => return Err(Diagnostic::error(shape.span, format!("unknown `mma` shape `{s}`"))),
        };
        let [(d_name, _), (a_name, a_span), (b_name, _), (c_name, _)] = types.as_slice() else {
            let unknown =
                types.iter().find(|(t, _)| Elem::parse(*t).is_none() && Accum::parse(*t).is_none());
            if let Some((t, s)) = unknown {
                return Err(super::unsupported(
                    *s,
                    &format!("`mma` with `{t}`"),
                    "sparse (`.sp`), block-scaled (`.kind`, `.block_scale`) and sm_100 forms \
                     are not implemented",
                ));
            }
            return Err(Diagnostic::error(
                span,
                "`mma` needs four types: `.dtype.atype.btype.ctype`",
            ));
        };
        let types_text = format!("{d_name}{a_name}{b_name}{c_name}");
        let (Some(d), Some(c)) = (Accum::parse(*d_name), Accum::parse(*c_name)) else {
            return Err(Diagnostic::error(
                span,
                format!("`mma{types_text}`: the accumulators are not .f16, .f32, .f64 or .s32"),
            ));
        };
        let (Some(ae), Some(be)) = (Elem::parse(*a_name), Elem::parse(*b_name)) else {
            return Err(super::unsupported(
                *a_span,
                &format!("`mma` with `{a_name}{b_name}` inputs"),
                "the sm_100 inputs (`.e2m1`, `.e3m2`, `.e2m3`) are not implemented",
            ));
        };
        // A and B may differ only in signedness or FP8 encoding.
        let fp8 = |e: Elem| matches!(e, Elem::Float(FloatFormat::E4m3 | FloatFormat::E5m2));
        let int = |e: Elem| matches!(e, Elem::Int { .. });
        if ae != be && !(fp8(ae) && fp8(be)) && !(int(ae) && int(be) && ae.bits() == be.bits()) {
            return Err(Diagnostic::error(
                span,
                format!("`mma`: A type `{a_name}` and B type `{b_name}` do not go together"),
            ));
        }
        if (ae == Elem::Bit) != (combine.is_some() && counted) {
            return Err(Diagnostic::error(
                span,
                "`.b1` `mma` is `.and.popc` or `.xor.popc`, and only it takes them",
            ));
        }
        let popc = combine.filter(|_| counted);
        let form = Shape { m: mm, n: nn, k: kk, a: ae, b: be, d, c, satfinite, popc };
        if !form.exists() {
            return Err(super::unsupported(
                span,
                &format!("`mma.m{mm}n{nn}k{kk}` with `{types_text}`"),
                "not an sm_80–sm_90 shape and type combination (`m8n8k4` with f16 is the sm_70 \
                 quad-pair layout, which is not implemented)",
            ));
        }
        if layouts != [Layout::Row, Layout::Col] {
            return Err(Diagnostic::error(span, "this `mma` shape needs `.row.col`"));
        }
        if satfinite && d != Accum::S32 {
            return Err(Diagnostic::error(span, "`.satfinite` applies to the integer `mma` forms"));
        }
        let counts = [form.acc_regs(d), form.a_regs(), form.b_regs(), form.acc_regs(c)];
        let (d_regs, [a_vals, b_vals, c_vals]) = self.mma_operands(i, &form, counts, "`mma`")?;
        let a_words = self.gather_a(&form, &a_vals, span);
        let b_words = self.gather_b(&form, &b_vals, span);
        let results = self.multiply(&form, &a_words, &b_words, &c_vals, span)?;
        // Write D only now: D may name C's registers.
        self.write_accumulators(d, &d_regs, &results, span);
        Ok(())
    }

    /// The operands `d, a, b, c` of `mma` or `wmma.mma` (`what`) with `form`'s types and
    /// `counts` registers each: D's destinations and the others' values (`.f64`
    /// registers as 64-bit words, to split for the exchanges).
    pub(super) fn mma_operands(
        &mut self,
        i: &ast::Instruction,
        form: &Shape,
        counts: [u32; 4],
        what: &str,
    ) -> Result<(Vec<RegId>, [Vec<Value>; 3]), Diagnostic> {
        let span = i.span;
        let [d_op, a_op, b_op, c_op] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, format!("{what} takes 4 operands: d, a, b, c")));
        };
        let input = |e: Elem| if e == Elem::F64 { U64 } else { U32 };
        let d_items = self.vector_operand(d_op, counts[0], &format!("{what}'s d"))?;
        let d_regs = d_items
            .iter()
            .map(|o| self.dst(o, form.d.reg_ty(), false))
            .collect::<Result<Vec<_>, _>>()?;
        let mut values = Vec::new();
        for (op, (count, ty, name)) in [a_op, b_op, c_op].into_iter().zip([
            (counts[1], input(form.a), "a"),
            (counts[2], input(form.b), "b"),
            (counts[3], form.c.reg_ty(), "c"),
        ]) {
            let items = self.vector_operand(op, count, &format!("{what}'s {name}"))?;
            let vals = items
                .iter()
                .map(|o| self.src(o, ty, false, span))
                .collect::<Result<Vec<_>, _>>()?;
            values.push(vals);
        }
        let [a, b, c]: [Vec<Value>; 3] = values
            .try_into()
            .map_err(|_| Diagnostic::internal(span, "mma: three source operands"))?;
        Ok((d_regs, [a, b, c]))
    }

    /// The words of A's registers `a_vals` (one row tile of `form`) this thread's D
    /// elements need: rows g and g + 8, held by its own group (lanes 4g …).
    pub(super) fn gather_a(&mut self, form: &Shape, a_vals: &[Value], span: Span) -> Gathered {
        let (t, group, _) = self.lane_coordinates(span);
        let group_base = Emit { l: self, span }.bin(BinaryOp::Shl, U32, group, Value::Imm(2));
        self.gather(t, a_vals, form.a, &[group_base], span)
    }

    /// The words of B's registers `b_vals` (one column tile) this thread's D elements
    /// need: columns 2t and 2t + 1, held by groups 2t and 2t + 1.
    pub(super) fn gather_b(&mut self, form: &Shape, b_vals: &[Value], span: Span) -> Gathered {
        let (t, _, in_group) = self.lane_coordinates(span);
        let mut e = Emit { l: self, span };
        let col0 = e.bin(BinaryOp::Shl, U32, in_group, Value::Imm(3));
        let col1 = e.add(U32, col0, Value::Imm(4));
        self.gather(t, b_vals, form.b, &[col0, col1], span)
    }

    /// `form`'s D elements of this thread, computed as the module doc defines from A's
    /// and B's words gathered across the warp ([`Self::gather_a`], [`Self::gather_b`])
    /// and C's registers `c_vals`, before they are written (to f32, f64 or s32
    /// registers, or rounded to f16).
    pub(super) fn multiply(
        &mut self,
        form: &Shape,
        a_words: &Gathered,
        b_words: &Gathered,
        c_vals: &[Value],
        span: Span,
    ) -> Result<Vec<Value>, Diagnostic> {
        let rows = form.m / 8;
        let element = |l: &mut Self,
                       g: &Gathered,
                       elem: Elem,
                       reg: u32,
                       source: usize,
                       k_in_chunk: u32|
         -> Value {
            let p = elem.per_register();
            let (q, e_idx) = ((k_in_chunk / p) as usize, k_in_chunk % p);
            let low = g.low[reg as usize][source][q];
            let mut em = Emit { l, span };
            if elem == Elem::F64 {
                let high = g.high[reg as usize][source][q];
                return em.pack64(low, high);
            }
            if p == 1 {
                return low;
            }
            em.bfe(U32, low, u64::from(e_idx * elem.bits()), u64::from(elem.bits()))
        };
        let chunk = form.chunk();
        let mut results = Vec::new();
        if let Some(op) = form.popc {
            // `.b1`: each lane's word holds 32 consecutive k; the bits combined and
            // counted a word at a time are the sum of the per-bit products.
            for idx in 0..form.elements() {
                let (half, column) = ((idx / 2) as usize, (idx % 2) as usize);
                let mut acc = c_vals[idx as usize];
                for ch in 0..form.k / chunk {
                    for q in 0..4 {
                        let a = a_words.low[half + (rows * ch) as usize][0][q];
                        let b = b_words.low[ch as usize][column][q];
                        let mut e = Emit { l: self, span };
                        let both = e.bin(op, U32, a, b);
                        let count = e.un(crate::ir::UnaryOp::Popc, U32, both);
                        acc = e.add(U32, acc, count);
                    }
                }
                results.push(acc);
            }
            return Ok(results);
        }
        for idx in 0..form.elements() {
            let half = (idx / 2) as usize;
            let column = (idx % 2) as usize;
            // The accumulator's start: element idx of C.
            let mut acc = self.accumulator_start(form.c, c_vals, idx, span);
            let mut wide = Value::Imm(0);
            for k in 0..form.k {
                let ch = k / chunk;
                let a_reg = half as u32 + rows * ch;
                let a = element(self, a_words, form.a, a_reg, 0, k % chunk);
                let b = element(self, b_words, form.b, ch, column, k % chunk);
                let mut e = Emit { l: self, span };
                match (form.a, form.b) {
                    (Elem::Float(fa), Elem::Float(fb)) => {
                        // Widen reads the format's low bits; `.tf32` keeps its 19.
                        let (a, b) = if fa == FloatFormat::Tf32 {
                            let keep = Value::Imm(0xffff_e000);
                            (e.and(U32, a, keep), e.and(U32, b, keep))
                        } else {
                            (a, b)
                        };
                        let x = e.widen(fa, a);
                        let y = e.widen(fb, b);
                        let product = e.bin(BinaryOp::Mul, F32, x, y);
                        acc = e.bin(BinaryOp::Add, F32, acc, product);
                    }
                    (Elem::F64, _) => {
                        let dst = e.temp(F64);
                        e.push(InstKind::Fma {
                            ty: F64,
                            mode: FloatMode::default(),
                            dst,
                            a,
                            b,
                            c: acc,
                        });
                        acc = Value::Reg(dst);
                    }
                    (Elem::Int { bits, signed: sa }, Elem::Int { signed: sb, .. }) => {
                        let x = extend(&mut e, a, bits, sa);
                        let y = extend(&mut e, b, bits, sb);
                        let product = e.bin(BinaryOp::Mul, S64, x, y);
                        wide = e.add(S64, wide, product);
                    }
                    _ => return Err(Diagnostic::internal(span, "mma: mixed element kinds")),
                }
            }
            if let Elem::Int { .. } = form.a {
                let mut e = Emit { l: self, span };
                let start = e.cvt(S64, OpTy::S(32), acc);
                let sum = e.add(S64, wide, start);
                acc = if form.satfinite {
                    let low =
                        e.bin(BinaryOp::Max, S64, sum, Value::Imm(i64::from(i32::MIN) as u64));
                    let clamped = e.bin(BinaryOp::Min, S64, low, Value::Imm(i32::MAX as u64));
                    e.cvt(U32, U64, clamped)
                } else {
                    e.cvt(U32, U64, sum)
                };
            }
            results.push(acc);
        }
        Ok(results)
    }

    /// Writes D's registers from [`Self::multiply`]'s elements (pairs of `.f16`
    /// elements rounded and packed).
    pub(super) fn write_accumulators(
        &mut self,
        d: Accum,
        d_regs: &[RegId],
        results: &[Value],
        span: Span,
    ) {
        let mut e = Emit { l: self, span };
        match d {
            Accum::F16 => {
                for (j, &dst) in d_regs.iter().enumerate() {
                    let lo = e.narrow(
                        FloatFormat::F16,
                        F32,
                        Rounding::Nearest,
                        false,
                        false,
                        results[2 * j],
                    );
                    let hi = e.narrow(
                        FloatFormat::F16,
                        F32,
                        Rounding::Nearest,
                        false,
                        false,
                        results[2 * j + 1],
                    );
                    let packed = e.pack(16, vec![lo, hi]);
                    e.mov(U32, dst, packed);
                }
            }
            _ => {
                for (&dst, &v) in d_regs.iter().zip(results) {
                    e.mov(d.reg_ty(), dst, v);
                }
            }
        }
    }

    /// Element `idx` of C as the accumulation starts it: f32 for float forms (an
    /// `.f16` C widened exactly), f64, or the s32 value.
    fn accumulator_start(&mut self, c: Accum, c_vals: &[Value], idx: u32, span: Span) -> Value {
        let mut e = Emit { l: self, span };
        match c {
            Accum::F16 => {
                let word = c_vals[(idx / 2) as usize];
                let half = e.lane(word, 2, idx % 2);
                e.widen(FloatFormat::F16, half)
            }
            Accum::F32 | Accum::F64 | Accum::S32 => c_vals[idx as usize],
        }
    }

    /// `(linear tid, g, t)`: the thread's group `%laneid >> 2` and its place in it,
    /// `%laneid % 4`.
    pub(super) fn lane_coordinates(&mut self, span: Span) -> (Value, Value, Value) {
        let t = self.linear_tid(span);
        let mut e = Emit { l: self, span };
        let lane = e.and(U32, t, Value::Imm(31));
        let group = e.bin(BinaryOp::Shr, U32, lane, Value::Imm(2));
        let in_group = e.and(U32, lane, Value::Imm(3));
        (t, group, in_group)
    }

    /// Exchanges each register of `regs` (an A or B operand of element type `elem`)
    /// across the warp and reads, for each lane base of `bases`, the 4 lanes
    /// `base + q`.
    fn gather(
        &mut self,
        t: Value,
        regs: &[Value],
        elem: Elem,
        bases: &[Value],
        span: Span,
    ) -> Gathered {
        let mut low = Vec::new();
        let mut high = Vec::new();
        for &value in regs {
            let words: Vec<Value> = if elem == Elem::F64 {
                let mut e = Emit { l: self, span };
                let lo = e.temp(U32);
                let hi = e.temp(U32);
                e.push(InstKind::Unpack { elem: U32, dsts: vec![Some(lo), Some(hi)], src: value });
                vec![Value::Reg(lo), Value::Reg(hi)]
            } else {
                vec![value]
            };
            for (w, &word) in words.iter().enumerate() {
                self.publish(word, span);
                let mut per_source = Vec::new();
                for &base in bases {
                    let mut lanes = [Value::Imm(0); 4];
                    for (q, slot) in lanes.iter_mut().enumerate() {
                        let lane = Emit { l: self, span }.add(U32, base, Value::Imm(q as u64));
                        *slot = self.read_lane(t, lane, span);
                    }
                    per_source.push(lanes);
                }
                self.end_exchange(span);
                if w == 0 {
                    low.push(per_source);
                } else {
                    high.push(per_source);
                }
            }
        }
        Gathered { low, high }
    }

    /// The shared-memory offset an `ldmatrix`/`stmatrix` address operand names.
    fn shared_offset(&mut self, op: &Operand, m: &Mods, span: Span) -> Result<Value, Diagnostic> {
        use ptxvk_frontend::ast::StateSpace;
        let space = match &m.space {
            Some(s) if s.value == StateSpace::Shared => StateSpace::Shared,
            Some(s) => {
                return Err(Diagnostic::error(
                    s.span,
                    "matrix loads and stores take `.shared` addresses",
                ))
            }
            None => StateSpace::Global,
        };
        let (_, Address { base, offset }) = self.address(op, space)?;
        let mut e = Emit { l: self, span };
        let Some(base) = base else {
            return Ok(Value::Imm(offset as u64 & 0xffff_ffff));
        };
        let wide = e.l.kernel.reg(base).ty == RegTy::Int(64);
        let low = if wide { e.lo32(Value::Reg(base)) } else { Value::Reg(base) };
        let at = e.add(U32, low, Value::Imm(offset as u64 & 0xffff_ffff));
        // A generic 32-bit address of shared memory is the offset plus the window's
        // base (`ir::SHARED_WINDOW_32`); a 64-bit one has the offset in its low half.
        if space == StateSpace::Global && !wide {
            return Ok(e.bin(
                BinaryOp::Sub,
                U32,
                at,
                Value::Imm(u64::from(crate::ir::SHARED_WINDOW_32)),
            ));
        }
        Ok(at)
    }

    /// `ldmatrix.sync.aligned.m8n8.num{.trans}{.shared}.b16 r, [p]` and, with `store`,
    /// `stmatrix.sync.aligned.m8n8.num{.trans}{.shared}.b16 [p], r`.
    fn ldmatrix(&mut self, i: &ast::Instruction, m: &Mods, store: bool) -> Result<(), Diagnostic> {
        let span = i.span;
        let name = if store { "stmatrix" } else { "ldmatrix" };
        let shape = m.find(|d| match d {
            Modifier::Shape(s) => Some(s),
            _ => None,
        });
        let m8n8 = shape.as_ref().is_some_and(|s| s.value == M8N8);
        if shape.is_some() && !m8n8 {
            return Err(super::unsupported(
                span,
                &format!("`{name}` shapes other than `.m8n8`"),
                crate::coverage::TENSOR_SM100,
            ));
        }
        if !m8n8 {
            return Err(Diagnostic::error(span, format!("`{name}` needs a shape (`.m8n8`)")));
        }
        if !m.types.iter().all(|t| t.value == ast::ScalarType::B16) || m.types.is_empty() {
            return Err(Diagnostic::error(span, format!("`{name}.m8n8` takes `.b16`")));
        }
        let count = m.find(|d| match d {
            Modifier::Count(n) => Some(n),
            _ => None,
        });
        let count = count.map(|n| n.value);
        let Some(count) = count else {
            return Err(Diagnostic::error(span, format!("`{name}` needs `.x1`, `.x2` or `.x4`")));
        };
        let trans = m.has(TRANS);
        let [first, second] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, format!("`{name}` takes 2 operands")));
        };
        let (data, addr) = if store { (second, first) } else { (first, second) };
        let items = self.vector_operand(data, count, &format!("`{name}`"))?;
        let at = self.shared_offset(addr, m, span)?;
        let (t, group, in_group) = self.lane_coordinates(span);
        if !store {
            let dsts =
                items.iter().map(|o| self.dst(o, U32, false)).collect::<Result<Vec<_>, _>>()?;
            self.publish(at, span);
            let mut words = Vec::new();
            for matrix in 0..count {
                let mut e = Emit { l: self, span };
                let word = if !trans {
                    // Row g of the matrix, columns 2t and 2t + 1: 4 bytes at 4t.
                    let source = e.add(U32, group, Value::Imm(u64::from(8 * matrix)));
                    let row = self.read_lane(t, source, span);
                    let mut e = Emit { l: self, span };
                    let column = e.bin(BinaryOp::Shl, U32, in_group, Value::Imm(2));
                    let at = e.add(U32, row, column);
                    self.load_shared(U32, at, span)
                } else {
                    // Rows 2t and 2t + 1, column g: 2 bytes at 2g of each.
                    let twice = e.bin(BinaryOp::Shl, U32, in_group, Value::Imm(1));
                    let mut halves = Vec::new();
                    for j in 0..2u64 {
                        let mut e = Emit { l: self, span };
                        let source = e.add(U32, twice, Value::Imm(u64::from(8 * matrix) + j));
                        let row = self.read_lane(t, source, span);
                        let mut e = Emit { l: self, span };
                        let column = e.bin(BinaryOp::Shl, U32, group, Value::Imm(1));
                        let at = e.add(U32, row, column);
                        halves.push(self.load_shared(U16, at, span));
                    }
                    Emit { l: self, span }.pack(16, halves)
                };
                words.push(word);
            }
            self.end_exchange(span);
            let mut e = Emit { l: self, span };
            for (dst, word) in dsts.into_iter().zip(words) {
                e.mov(U32, dst, word);
            }
            return Ok(());
        }
        // stmatrix: this lane stores row `lane % 8` of matrix `lane / 8` (when it has
        // one), gathered from the 4 lanes of that row's group (or, with `.trans`, from
        // column `lane % 8`'s 8 holders).
        let srcs =
            items.iter().map(|o| self.src(o, U32, false, span)).collect::<Result<Vec<_>, _>>()?;
        let mut e = Emit { l: self, span };
        let lane = e.and(U32, t, Value::Imm(31));
        let row = e.and(U32, lane, Value::Imm(7));
        let matrix_of_lane = e.bin(BinaryOp::Shr, U32, lane, Value::Imm(3));
        let mut rows: Vec<Vec<Value>> = Vec::new();
        for &src in &srcs {
            self.publish(src, span);
            let mut words = Vec::new();
            if !trans {
                for q in 0..4u64 {
                    let mut e = Emit { l: self, span };
                    let base = e.bin(BinaryOp::Shl, U32, row, Value::Imm(2));
                    let source = e.add(U32, base, Value::Imm(q));
                    words.push(self.read_lane(t, source, span));
                }
            } else {
                // Element c of the stored row is element (row, c) of the transpose:
                // the fragment's (c, row), half `row % 2` of lane 4c + row / 2.
                let mut halves = Vec::new();
                for c in 0..8u64 {
                    let mut e = Emit { l: self, span };
                    let pair = e.bin(BinaryOp::Shr, U32, row, Value::Imm(1));
                    let source = e.add(U32, pair, Value::Imm(4 * c));
                    let word = self.read_lane(t, source, span);
                    let mut e = Emit { l: self, span };
                    let odd = e.and(U32, row, Value::Imm(1));
                    let shift = e.bin(BinaryOp::Shl, U32, odd, Value::Imm(4));
                    let shifted = e.bin(BinaryOp::Shr, U32, word, shift);
                    halves.push(e.cvt(U16, U32, shifted));
                }
                for pair in halves.chunks(2) {
                    words.push(Emit { l: self, span }.pack(16, pair.to_vec()));
                }
            }
            self.end_exchange(span);
            rows.push(words);
        }
        for (matrix, words) in rows.into_iter().enumerate() {
            // Only the lanes giving an address of this matrix store.
            let mut e = Emit { l: self, span };
            let mine = e.cmp(CmpOp::Eq, U32, matrix_of_lane, Value::Imm(matrix as u64));
            self.guarded(mine, false, span, |l| {
                let address = l.temp(U32.storage(), span);
                Emit { l, span }.mov(U32, address, at);
                l.push(
                    InstKind::Store {
                        space: Space::Shared,
                        ty: U32,
                        srcs: words,
                        addr: Address { base: Some(address), offset: 0 },
                    },
                    span,
                );
            });
        }
        Ok(())
    }

    /// A `ty` load from shared-memory offset `at`.
    fn load_shared(&mut self, ty: OpTy, at: Value, span: Span) -> Value {
        let address = self.temp(U32.storage(), span);
        Emit { l: self, span }.mov(U32, address, at);
        let dst = self.temp(ty.storage(), span);
        self.push(
            InstKind::Load {
                space: Space::Shared,
                ty,
                dsts: vec![Some(dst)],
                addr: Address { base: Some(address), offset: 0 },
            },
            span,
        );
        Value::Reg(dst)
    }

    /// `movmatrix.sync.aligned.m8n8.trans.b16 d, a`: the transpose of one fragment.
    fn movmatrix(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        if !m.has(TRANS) || !m.has(Modifier::Shape(M8N8)) {
            return Err(Diagnostic::error(span, "`movmatrix` is `.m8n8.trans`"));
        }
        let [d, a] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, "`movmatrix` takes 2 operands"));
        };
        let d = self.dst(d, U32, false)?;
        let a = self.src(a, U32, false, span)?;
        let (t, group, in_group) = self.lane_coordinates(span);
        self.publish(a, span);
        let mut e = Emit { l: self, span };
        // Element (g, 2t + j) of the result is (2t + j, g) of the source: half g % 2
        // of lane 4(2t + j) + g / 2.
        let pair = e.bin(BinaryOp::Shr, U32, group, Value::Imm(1));
        let odd = e.and(U32, group, Value::Imm(1));
        let shift = e.bin(BinaryOp::Shl, U32, odd, Value::Imm(4));
        let column = e.bin(BinaryOp::Shl, U32, in_group, Value::Imm(3));
        let mut halves = Vec::new();
        for j in 0..2u64 {
            let mut e = Emit { l: self, span };
            let holder = e.add(U32, column, Value::Imm(4 * j));
            let source = e.add(U32, holder, pair);
            let word = self.read_lane(t, source, span);
            let mut e = Emit { l: self, span };
            let shifted = e.bin(BinaryOp::Shr, U32, word, shift);
            halves.push(e.cvt(U16, U32, shifted));
        }
        self.end_exchange(span);
        let mut e = Emit { l: self, span };
        let packed = e.pack(16, halves);
        e.mov(U32, d, packed);
        Ok(())
    }
}

/// A `bits`-bit integer element (in the low bits of `v`) sign- or zero-extended to 64.
fn extend(e: &mut Emit<'_, '_>, v: Value, bits: u32, signed: bool) -> Value {
    let ty = if signed { OpTy::S(32) } else { U32 };
    let x = e.bfe(ty, v, 0, u64::from(bits));
    e.cvt(S64, ty, x)
}
