//! The operand shapes of the implemented forms: for each, what every operand is (a
//! register written, a value read, a predicate read) and the type it has, derived from
//! the instruction's types and modifiers as the PTX ISA 9.2 section of the instruction
//! gives it. Semantic analysis resolves all the operands of such a form in one generic
//! step (`lower::sema::operands`, `Resolver::args`), so that each lowering only builds
//! its IR operation from them.
//!
//! Like [`super::FORMS`], the first row of an opcode whose [`When`] selects the
//! instruction is its shape. The row's form has been checked ([`super::check`]), so
//! the types the shapes name exist. A shape past the instruction's last operand is an
//! optional one it does not have (`min`'s third source, `cvt.pack`'s `c`). Opcodes with
//! no row here resolve their operands themselves.

use super::When;
use crate::ast::ScalarType;
use crate::decode::Modifiers;
use crate::instructions::Opcode;
use crate::modifier::{Conversion, Format, Modifier};

/// The type an operand is read or written at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperandType {
    /// The instruction's one type modifier (`add.s32`).
    Type,
    /// The first of its type modifiers (`slct.b32.s32`'s `.b32`).
    First,
    /// The second of its type modifiers (`slct.b32.f32`'s selector, `.f32`).
    Second,
    /// The product's (§9.7.1.3-4): twice the width of the type with `.wide`
    /// (`mul.wide.s32` writes `.s64`), else the type.
    Product,
    /// The bits of the type as an unsigned integer of its width (`copysign.f32`, §9.7.3.2).
    Bits,
    /// This type whatever the instruction's (`shl`'s shift amount is `.u32`).
    Fixed(ScalarType),
}

/// The shape of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperandShape {
    /// A register the instruction writes, of exactly the type's width.
    Dst(OperandType),
    /// A value read at the type: a register of its width, an immediate, a special
    /// register, or a variable's address plus a constant.
    Src(OperandType),
}

/// The operand shapes of the forms `when` selects of the row's opcodes.
#[derive(Debug)]
pub struct Operands {
    pub ops: &'static [Opcode],
    pub when: When,
    pub shapes: &'static [OperandShape],
}

use OperandShape::{Dst, Src};
use OperandType::*;

const fn row(ops: &'static [Opcode], shapes: &'static [OperandShape]) -> Operands {
    Operands { ops, when: When::Always, shapes }
}

impl Operands {
    const fn when(self, when: When) -> Operands {
        Operands { when, ..self }
    }
}

const U32: OperandType = Fixed(ScalarType::U32);
const S32: OperandType = Fixed(ScalarType::S32);
const PACKED16: &[Modifier] = &[Modifier::Format(Format::U16x2), Modifier::Format(Format::S16x2)];

/// `d, a, b` of the instruction's type.
const BINARY: &[OperandShape] = &[Dst(Type), Src(Type), Src(Type)];
/// `d, a, b{, c}` of the instruction's type.
const TERNARY: &[OperandShape] = &[Dst(Type), Src(Type), Src(Type), Src(Type)];
/// `d, a, b` of packed half words (§9.7.1.1, §9.7.1.12-13).
const PACKED: &[OperandShape] = &[Dst(U32), Src(U32), Src(U32)];

/// Every form with operand shapes, by opcode.
pub static OPERANDS: &[Operands] = &[
    // §9.7.1.1-2, §9.7.1.12-13: the packed `add.u16x2`, `min.s16x2`, …; §9.7.1.1-2,
    // §9.7.2.1-4, §9.7.3.1-2, §9.7.3.11-12: every other `add`/`sub`/`min`/`max` (the
    // float `min`/`max` take a third source), `addc`, `subc`.
    row(&[Opcode::Add, Opcode::Min, Opcode::Max], PACKED).when(When::HasAny(PACKED16)),
    row(&[Opcode::Add, Opcode::Sub, Opcode::Addc, Opcode::Subc, Opcode::Min, Opcode::Max], TERNARY),
    // §9.7.1.7-8, §9.7.8.1-3: `div`, `rem`, `and`, `or`, `xor` (not on predicates,
    // which `sema` reads as registers).
    row(&[Opcode::Div, Opcode::Rem, Opcode::And, Opcode::Or, Opcode::Xor], BINARY),
    // §9.7.1.3-4, §9.7.2.5-6, §9.7.3.5-7: the product halves, `.wide` writing (and
    // `mad` adding) twice the type.
    row(&[Opcode::Mul], &[Dst(Product), Src(Type), Src(Type)]),
    row(
        &[Opcode::Mad, Opcode::Madc, Opcode::Fma],
        &[Dst(Product), Src(Type), Src(Type), Src(Product)],
    ),
    // §9.7.1.5-6, §9.7.1.11
    row(&[Opcode::Mul24, Opcode::Mad24, Opcode::Sad], TERNARY),
    // §9.7.1.16, §9.7.1.18
    row(&[Opcode::Bfind], &[Dst(U32), Src(Type)]),
    row(&[Opcode::Fns], &[Dst(U32), Src(U32), Src(U32), Src(S32)]),
    // §9.7.1.19-20: `bfe d, a, pos, len`, `bfi d, a, b, pos, len`.
    row(&[Opcode::Bfe], &[Dst(Type), Src(Type), Src(U32), Src(U32)]),
    row(&[Opcode::Bfi], &[Dst(Type), Src(Type), Src(Type), Src(U32), Src(U32)]),
    // §9.7.1.24-25: the mask's start and length, or the width, are `.u32`.
    row(&[Opcode::Bmsk, Opcode::Szext], &[Dst(Type), Src(U32), Src(U32)]),
    // §9.7.8.4-8: the shift amounts are `.u32`.
    row(&[Opcode::Shl, Opcode::Shr], &[Dst(Type), Src(Type), Src(U32)]),
    row(&[Opcode::Prmt, Opcode::Shf], TERNARY),
    // §9.7.1.9-10, §9.7.1.14-15, §9.7.1.17, §9.7.3.9-10, §9.7.3.17-22, §9.7.8.5: one
    // source (not on predicates, nor for `sema::formats`' half `ex2`/`tanh`); `popc` and
    // `clz` count into a `.u32`.
    row(&[Opcode::Popc, Opcode::Clz], &[Dst(U32), Src(Type)]),
    row(
        &[
            Opcode::Not,
            Opcode::Cnot,
            Opcode::Neg,
            Opcode::Abs,
            Opcode::Brev,
            Opcode::Sqrt,
            Opcode::Rcp,
            Opcode::Ex2,
            Opcode::Lg2,
            Opcode::Sin,
            Opcode::Cos,
            Opcode::Rsqrt,
            Opcode::Tanh,
        ],
        &[Dst(Type), Src(Type)],
    ),
    // §9.7.3.2-3: the float's bits.
    row(&[Opcode::Copysign], &[Dst(Type), Src(Bits), Src(Bits)]),
    row(&[Opcode::Testp], &[Dst(Fixed(ScalarType::Pred)), Src(Bits)]),
    // §9.7.7.3: `slct.dtype.ctype d, a, b, c`.
    row(&[Opcode::Slct], &[Dst(First), Src(First), Src(First), Src(Second)]),
    // §9.7.9.19: `cvta{.to}.space.size d, a`.
    row(&[Opcode::Cvta], &[Dst(Type), Src(Type)]),
    // §9.7.9.21: `cvt.pack.sat.type.s32 d, a, b{, c}`.
    row(&[Opcode::Cvt], &[Dst(U32), Src(S32), Src(S32), Src(U32)])
        .when(When::Has(Modifier::Conversion(Conversion::Pack))),
    // §9.7.9.23: `mapa.type d, a, rank`, `getctarank.type d, a` (the rank is 32 bits).
    row(&[Opcode::Mapa], &[Dst(Type), Src(Type), Src(U32)]),
    row(&[Opcode::Getctarank], &[Dst(U32), Src(Type)]),
    // §9.7.17: `alloca.type ptr, size{, immAlign}`, `stacksave.type d`,
    // `stackrestore.type a`.
    row(&[Opcode::Alloca], &[Dst(Type), Src(Type), Src(U32)]),
    row(&[Opcode::Stacksave], &[Dst(Type)]),
    row(&[Opcode::Stackrestore], &[Src(Type)]),
    // §9.7.14.5.17: `movmatrix.sync.aligned.m8n8.trans.b16 d, a`, one fragment register
    // of two `.b16` elements each.
    row(&[Opcode::Movmatrix], &[Dst(U32), Src(U32)]),
];

/// The operand shapes of `m`'s instruction, if its form has them.
pub fn shapes(m: &Modifiers) -> Option<&'static [OperandShape]> {
    OPERANDS.iter().find(|r| r.ops.contains(&m.opcode) && r.when.holds(m)).map(|r| r.shapes)
}
