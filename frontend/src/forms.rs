//! The implemented forms of instructions: next to the instruction table
//! ([`crate::instructions`]), which says what parses, this table says which types,
//! modifiers, product halves and operand counts each form that ptxvk lowers takes, as
//! the PTX ISA 9.2 section of the instruction lists them. [`check`] holds a decoded
//! instruction against the first row of its opcode whose [`When`] selects it, once and
//! generically, so that semantic analysis only resolves operands into IR operations.
//!
//! A row's checks run in order and the first that fails is the diagnostic, named by
//! the instruction (or the row's form) and placed at the offending modifier or type, or
//! at the instruction when something it needs is missing. Opcodes with no row are
//! checked by semantic analysis itself.

use crate::ast::{Instruction, Operand, ScalarType, StateSpace};
use crate::decode::{BoolOp, Modifiers, MulPart};
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode;
use crate::modifier::{
    BarrierForm, Bfind, CacheHint, CacheOp, Carry, Clamp, Convergence, FenceForm, FloatClass,
    FloatOption, Format, Indexed, MemoryOrder, Modifier, Population, Precision, Reduction, Scope,
    ShiftDirection, Shuffle, Vote,
};

pub mod atomic;
pub mod copy;
pub mod formats;
pub mod integer;
pub mod media;
pub mod memory;
pub mod mma;
pub mod operands;
pub mod texture;
pub mod video;
pub mod warp;

/// One constraint of a form.
#[derive(Debug)]
pub enum Check {
    /// The family modifiers ([`crate::modifier`]) the form takes; another one is
    /// reported at its span.
    Details(&'static [Modifier]),
    /// Exactly one type modifier, one of these.
    Type(&'static [ScalarType]),
    /// Exactly two type modifiers, the first one of the first set and the second one of
    /// the second (`dp4a.atype.btype`, `slct.dtype.s32`).
    TwoTypes(&'static [ScalarType], &'static [ScalarType]),
    /// `.ftz` only when the last type is one of these (`slct.ftz.dtype.f32`).
    FtzWith(&'static [ScalarType]),
    /// Exactly one of these modifiers (`shf.l`/`shf.r`).
    OneOf(&'static [Modifier]),
    /// A product half, one of these (`mul24.lo`/`mul24.hi`).
    Part(&'static [MulPart]),
    /// At most one family modifier, a `what` (`prmt` takes one mode).
    AtMostOne(&'static str),
    /// No product half.
    NoPart,
    /// No `.sat`.
    NoSat,
    /// No rounding.
    NoRounding,
    /// No `.ftz`.
    NoFtz,
    /// `.ftz` (`rcp.approx.ftz.f64`).
    Ftz,
    /// A rounding (`sqrt.rn`).
    Rounding,
    /// A comparison (`setp.lt`).
    Comparison,
    /// The type rules of a comparison (§9.7.7.1-2): the unordered ones (`.equ` …
    /// `.nan`) and `.ftz` compare floats only. The compared type is `setp`'s one type
    /// or `set`'s second.
    ComparedType,
    /// No predicate combine other than these (`lop3.and`, `lop3.or`).
    Combines(&'static [BoolOp]),
    /// This many operands, one more with a predicate combine (`lop3`).
    Operands(usize),
    /// This many operands, one more (the member mask) with `.sync` (`shfl`, `vote`).
    SyncOperands(usize),
    /// Operand 4 is a constant of 8 bits (`lop3`'s truth table `immLut`, §9.7.8.6).
    TruthTable,
    /// With a predicate combine the destination is a pair `d|p` (`lop3.and`, §9.7.8.6).
    CombinedPair,
    /// With one of these types the destination is a pair `p|q` (`setp.f16x2`, §9.7.4.6).
    PairWith(&'static [ScalarType]),
    // The core arithmetic, conversions, `redux` and fences (§9.7.1, §9.7.3, §9.7.9.21,
    // §9.7.13.4, §9.7.13.7).
    /// No type modifier (the packed `add.u16x2`, whose type is a format).
    NoType,
    /// `.sat` only when the type is one of these (`add.sat.f32`, not `add.sat.f64`).
    SatWith(&'static [ScalarType]),
    /// This modifier (`.xorsign` goes with `.abs`).
    Needs(Modifier),
    /// The first modifier only with the second (`min.relu` on packed words is `.s16x2`).
    With(Modifier, Modifier),
    /// The rounding a `cvt` between register types takes (§9.7.9.21): an integer one
    /// (`.rni`…) from a float to an integer, optionally between floats of one size; a
    /// float one (`.rn`…) from an integer to a float and to a narrower float; none
    /// otherwise. `.ftz` needs an `.f32` side.
    ConvertRounding,
    /// A bitwise operation, one of these (`redux.sync.and.b32`).
    Combine(&'static [BoolOp]),
    /// A state space, one of these (`cvta.shared`).
    Space(&'static [StateSpace]),
    /// `cvt.pack.sat` from `.s32` to a narrow integer (§9.7.9.21), with the operand `c`
    /// for targets under 16 bits.
    Pack,
    /// A check of the media families ([`media::Check`]).
    Media(media::Check),
    /// The vector forms of `atom`/`red` (§9.7.13.5-6, in `forms/atomic.rs`): `.global`,
    /// `.add` on `.v2`/`.v4` `.f32`, `.add`/`.min`/`.max` `.noftz` on `.v2`/`.v4`/`.v8`
    /// `.f16`/`.bf16` and `.v2`/`.v4` `.f16x2`/`.bf16x2`.
    VectorAtomic,
    /// The asynchronous, bulk and tensor copies of `cp` (§9.7.9.25.3-5, in
    /// `forms/copy.rs`, [`copy::copy_form`]): modifiers and operand counts.
    Copy,
    /// The `mbarrier` forms (§9.7.13.15, [`copy::mbarrier_form`]): operand counts and
    /// the `.shared` state space.
    Mbarrier,
    /// The `ld`/`st`/`ldu` forms (§9.7.9.8-10, in `forms/memory.rs`,
    /// [`memory::access_form`]): one type, strength, vectors, operand counts.
    Access,
}

/// Which instructions of a row's opcodes the row describes.
#[derive(Clone, Copy, Debug)]
pub enum When {
    Always,
    /// With `.sat`.
    Sat,
    /// With `.sat` and one type, an integer one (`mad.hi.sat.s32`).
    IntSat,
    /// With this modifier.
    Has(Modifier),
    /// With one of these modifiers.
    HasAny(&'static [Modifier]),
    /// With exactly one type, one of these.
    Type(&'static [ScalarType]),
    /// When the function holds (a form that several modifiers and types select).
    If(fn(&Modifiers) -> bool),
    /// A selection of the media families ([`media::When`]).
    Media(media::When),
}

/// One implemented form.
#[derive(Debug)]
pub struct Form {
    pub ops: &'static [Opcode],
    pub when: When,
    /// The name of the form in diagnostics; the opcode's when empty.
    pub name: &'static str,
    pub checks: &'static [Check],
}

use Check::*;
use ScalarType::*;

/// A row for every instruction of its opcodes.
const fn row(ops: &'static [Opcode], checks: &'static [Check]) -> Form {
    Form { ops, when: When::Always, name: "", checks }
}

impl Form {
    /// The row for the instructions `when` selects.
    const fn when(self, when: When) -> Form {
        Form { when, ..self }
    }
}

/// A row for the instructions `when` selects, named `name` in diagnostics.
const fn named(
    name: &'static str,
    ops: &'static [Opcode],
    when: When,
    checks: &'static [Check],
) -> Form {
    Form { ops, when, name, checks }
}

const CC: Modifier = Modifier::Carry(Carry::Cc);
const CLAMP: &[Modifier] = &[Modifier::Clamp(Clamp::Clamp), Modifier::Clamp(Clamp::Wrap)];
const U32S32: &[ScalarType] = &[U32, S32];
const INT32_64: &[ScalarType] = &[U32, S32, U64, S64];
const F32F64: &[ScalarType] = &[F32, F64];
/// The integer types of 16 to 64 bits: the ISA's `.bN` (and its `.uN`/`.sN`) for the
/// bit operations, which ptxvk also takes with the `.uN` and `.sN` spellings of each size.
const INT16_64: &[ScalarType] = &[B16, B32, B64, U16, U32, U64, S16, S32, S64];
const BITS_PRED: &[ScalarType] = &[Pred, B16, B32, B64, U16, U32, U64, S16, S32, S64];
const SLCT: &[ScalarType] = &[B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64, F32, F64];
const LO_HI: &[MulPart] = &[MulPart::Lo, MulPart::Hi];
const HI: &[MulPart] = &[MulPart::Hi];
const AND_OR: &[BoolOp] = &[BoolOp::And, BoolOp::Or];
const NEG_ABS: &[ScalarType] =
    &[B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64, F16, F16x2, Bf16, Bf16x2];
const SHIFT: &[Modifier] =
    &[Modifier::ShiftDirection(ShiftDirection::L), Modifier::ShiftDirection(ShiftDirection::R)];
const FLOAT_CLASSES: &[Modifier] = &[
    Modifier::FloatClass(FloatClass::Finite),
    Modifier::FloatClass(FloatClass::Infinite),
    Modifier::FloatClass(FloatClass::Number),
    Modifier::FloatClass(FloatClass::NotANumber),
    Modifier::FloatClass(FloatClass::Normal),
    Modifier::FloatClass(FloatClass::Subnormal),
];

/// Whether the source type (the last) is `.f16` or `.bf16` (`set.dtype.stype`).
fn half_source(m: &Modifiers) -> bool {
    m.types.last().is_some_and(|t| matches!(t.value, F16 | Bf16))
}

/// Whether the source type (the last) is `.f16x2` or `.bf16x2`.
fn half_pair_source(m: &Modifiers) -> bool {
    m.types.last().is_some_and(|t| matches!(t.value, F16x2 | Bf16x2))
}

/// `set`'s other source types (semantic analysis refuses those it does not implement).
const SET_SOURCES: &[ScalarType] =
    &[Pred, B8, B16, B32, B64, B128, U8, U16, U32, U64, S8, S16, S32, S64, Tf32, F32, F64];

/// Every implemented form with a row, by opcode; the first row of an opcode whose
/// [`When`] holds is the instruction's form.
pub static FORMS: &[Form] = &[
    // §9.7.1.5-6: `mul24.mode.type`, `mad24.mode.type`, `mad24.hi.sat.s32`.
    named("mad24.hi.sat", &[Opcode::Mad24], When::Sat, &[Details(&[]), Type(&[S32]), Part(HI)]),
    row(&[Opcode::Mul24, Opcode::Mad24], &[Details(&[]), Type(U32S32), Part(LO_HI)]),
    // §9.7.1.11
    row(&[Opcode::Sad], &[Details(&[]), Type(&[U16, U32, U64, S16, S32, S64])]),
    // §9.7.1.16
    row(&[Opcode::Bfind], &[Details(&[Modifier::Bfind(Bfind::Shiftamt)]), Type(INT32_64)]),
    // §9.7.1.18
    row(&[Opcode::Fns], &[Details(&[]), Type(&[B32])]),
    // §9.7.1.24-25
    row(&[Opcode::Bmsk], &[OneOf(CLAMP), Type(&[B32])]),
    row(&[Opcode::Szext], &[OneOf(CLAMP), Type(U32S32)]),
    // §9.7.8.7: at most one mode.
    row(&[Opcode::Prmt], &[AtMostOne("mode"), Type(&[B32])]),
    // §9.7.8.8
    row(&[Opcode::Shf], &[OneOf(SHIFT), OneOf(CLAMP), Type(&[B32])]),
    // §9.7.8.6
    row(
        &[Opcode::Lop3],
        &[Details(&[]), Type(&[B32]), Combines(AND_OR), Operands(5), TruthTable, CombinedPair],
    ),
    // §9.7.1.22-23
    row(&[Opcode::Dp4a], &[Details(&[]), TwoTypes(U32S32, U32S32)]),
    row(&[Opcode::Dp2a], &[Details(&[]), TwoTypes(U32S32, U32S32), Part(LO_HI)]),
    // §9.7.3.2-3
    row(&[Opcode::Copysign], &[Details(&[]), Type(F32F64)]),
    row(&[Opcode::Testp], &[OneOf(FLOAT_CLASSES), Type(F32F64)]),
    // §9.7.7.1-2: the comparison, and `c` with a predicate combine.
    // §9.7.4.6: `.bf16` comparisons take no `.ftz`.
    named(
        "setp.bf16",
        &[Opcode::Setp],
        When::Type(&[Bf16, Bf16x2]),
        &[Comparison, Operands(3), NoFtz, PairWith(&[Bf16x2])],
    ),
    row(&[Opcode::Setp], &[Comparison, Operands(3), ComparedType, PairWith(&[F16x2])]),
    // §9.7.7.1, §9.7.4.7: `set.dtype.stype`, half sources (`.ftz` with `.f16` only) to
    // half, 16-bit or 32-bit lanes.
    named(
        "set",
        &[Opcode::Set],
        When::If(half_pair_source),
        &[
            Details(&[]),
            Comparison,
            Operands(3),
            TwoTypes(&[U32, S32, F16x2, Bf16x2], &[F16x2, Bf16x2]),
            FtzWith(&[F16x2]),
        ],
    ),
    named(
        "set",
        &[Opcode::Set],
        When::If(half_source),
        &[
            Details(&[]),
            Comparison,
            Operands(3),
            TwoTypes(&[U32, S32, U16, S16, F16, Bf16], &[F16, Bf16]),
            FtzWith(&[F16]),
        ],
    ),
    row(
        &[Opcode::Set],
        &[
            Details(&[]),
            Comparison,
            Operands(3),
            TwoTypes(&[U32, S32, F32, F16, Bf16], SET_SOURCES),
            ComparedType,
        ],
    ),
    // §9.7.7.3; ptxvk also takes the 8-bit destination types.
    row(&[Opcode::Slct], &[Details(&[]), TwoTypes(SLCT, &[S32, F32]), FtzWith(&[F32])]),
    // §9.7.2.1-6: the carry chains; `add.cc`, `sub.cc` and `mad.cc` are integer only, so
    // they take no rounding or `.ftz` either.
    row(&[Opcode::Addc, Opcode::Subc], &[Details(&[CC]), Type(INT32_64)]),
    row(&[Opcode::Madc], &[Details(&[CC]), Type(INT32_64), Part(LO_HI)]),
    named(
        "add.cc",
        &[Opcode::Add],
        When::Has(CC),
        &[Details(&[CC]), Type(INT32_64), NoSat, NoRounding, NoFtz, NoPart],
    ),
    named(
        "sub.cc",
        &[Opcode::Sub],
        When::Has(CC),
        &[Details(&[CC]), Type(INT32_64), NoSat, NoRounding, NoFtz, NoPart],
    ),
    named(
        "mad.cc",
        &[Opcode::Mad],
        When::Has(CC),
        &[Details(&[CC]), Type(INT32_64), NoSat, NoRounding, NoFtz, Part(LO_HI)],
    ),
    // §9.7.1.4: the one saturating integer `mad` (after `mad.cc`, which refuses `.sat`).
    named("mad.hi.sat", &[Opcode::Mad], When::IntSat, &[Details(&[]), Type(&[S32]), Part(HI)]),
    // §9.7.1.1: the packed `add.u16x2`/`add.s16x2`, whose type is the format.
    row(&[Opcode::Add], &[Details(PACKED16), OneOf(PACKED16), NoType, NoSat, NoRounding, NoFtz])
        .when(When::HasAny(PACKED16)),
    // Only `add`, `min` and `max` are packed (§9.7.1.1, §9.7.1.12-13): `sub.u16x2` and
    // `mul.s16x2` are no PTX (ptxas 13 refuses them), refused at the format.
    row(&[Opcode::Sub, Opcode::Mul], &[Details(&[])]).when(When::HasAny(PACKED16)),
    // §9.7.1.1-2: `add.sat.s32` and `sub.sat.s32`, the saturating integer forms.
    row(&[Opcode::Add, Opcode::Sub], &[Details(&[]), Type(&[S32]), NoRounding, NoFtz])
        .when(When::IntSat),
    // §9.7.3.1-2, §9.7.3.5: `add{.rnd}{.ftz}{.sat}.f32`, `add{.rnd}.f64` (and `sub`,
    // `mul`); the directed roundings are `sema::formats`'.
    row(
        &[Opcode::Add, Opcode::Sub, Opcode::Mul],
        &[Details(&[]), NoPart, FtzWith(&[F32]), SatWith(&[F32])],
    )
    .when(When::Type(F32F64)),
    // §9.7.1.1-3: `add.type`, `sub.type`, `mul.mode.type` on 16- to 64-bit integers.
    row(&[Opcode::Add, Opcode::Sub], &[Details(&[]), Type(INT16_64), NoRounding, NoFtz])
        .when(When::Type(INTEGER)),
    row(&[Opcode::Mul], &[Details(&[]), Type(INT16_64), Part(PARTS), NoSat, NoRounding, NoFtz])
        .when(When::Type(INTEGER)),
    // §9.7.3.6-7: `mad.rnd{.ftz}{.sat}.f32`, `mad.rnd.f64`, `fma` the same (the rounding
    // is required since PTX ISA 2.0); §9.7.1.4: `mad.mode.type` on integers (after
    // `mad.cc` and `mad.hi.sat`).
    row(
        &[Opcode::Mad, Opcode::Fma],
        &[Details(&[]), NoPart, Rounding, FtzWith(&[F32]), SatWith(&[F32])],
    )
    .when(When::Type(F32F64)),
    row(&[Opcode::Mad], &[Details(&[]), Type(INT16_64), Part(PARTS), NoRounding, NoFtz])
        .when(When::Type(INTEGER)),
    row(&[Opcode::Fma], &[Type(&[F32, F64, F16, F16x2, Bf16, Bf16x2])]).when(When::Type(INTEGER)),
    // §9.7.1.12-13: packed `min`/`max` (`.relu` on `.s16x2`) and `min.relu.s32`; the
    // three-input forms are float only.
    row(
        &[Opcode::Min, Opcode::Max],
        &[Details(MIN_PACKED), OneOf(PACKED16), NoType, With(RELU, S16X2), NoFtz, Operands(3)],
    )
    .when(When::HasAny(PACKED16)),
    row(&[Opcode::Min, Opcode::Max], &[Details(&[RELU]), Type(&[S32]), NoFtz, Operands(3)])
        .when(When::Has(RELU)),
    // §9.7.3.11-12: `min{.ftz}{.NaN}{.xorsign.abs}.f32 d, a, b` and
    // `min{.ftz}{.NaN}{.abs}.f32 d, a, b, c`.
    row(
        &[Opcode::Min, Opcode::Max],
        &[Details(&[NAN, XORSIGN, ABS]), Needs(ABS), Type(&[F32]), Operands(3)],
    )
    .when(When::Has(XORSIGN)),
    row(&[Opcode::Min, Opcode::Max], &[Details(&[NAN, ABS])]).when(When::Type(&[F32])),
    row(&[Opcode::Min, Opcode::Max], &[Details(&[]), Type(MIN_MAX), FtzWith(&[F32]), Operands(3)])
        .when(When::Type(INTEGER_F64)),
    // Any other type but the half ones (`sema::formats`): none, two, or one that
    // `min` and `max` do not take.
    row(&[Opcode::Min, Opcode::Max], &[Type(MIN_MAX)]).when(When::If(not_half)),
    // §9.7.9.19: `cvta{.to}.space.size`; ptxvk also takes the `.b` and `.s` spellings of
    // the sizes.
    row(
        &[Opcode::Cvta],
        &[Details(&[TO]), Space(CVTA_SPACES), Type(&[B32, B64, U32, U64, S32, S64])],
    ),
    // §9.7.9.18: `isspacep.space`, the same spaces.
    row(&[Opcode::Isspacep], &[Details(&[]), Space(CVTA_SPACES)]),
    // §9.7.13.7: `redux.sync.{min,max}{.abs}{.NaN}.f32`, `redux.sync.{add,min,max}.type`
    // and `redux.sync.{and,or,xor}.b32` (ptxvk takes every 32-bit integer type for both).
    row(
        &[Opcode::Redux],
        &[Details(REDUX_F32), Needs(SYNC_MOD), OneOf(MIN_MAX_OPS), Combines(&[]), Operands(3)],
    )
    .when(When::Type(&[F32])),
    row(
        &[Opcode::Redux],
        &[Details(REDUX_INT), Needs(SYNC_MOD), OneOf(REDUX_OPS), Combines(&[]), Type(INT32)],
    )
    .when(When::HasAny(REDUX_OPS)),
    row(&[Opcode::Redux], &[Details(SYNC), Needs(SYNC_MOD), Combine(AND_OR_XOR), Type(INT32)]),
    // §9.7.13.4: `fence.proxy` orders the generic proxy against the others, and every
    // access here is a generic-proxy one; the other fences and `membar` take a scope, an
    // order and the `.mbarrier_init`/`.sync_restrict` forms, and no operand.
    row(&[Opcode::Fence], &[]).when(When::Has(Modifier::FenceForm(FenceForm::Proxy))),
    row(&[Opcode::Fence, Opcode::Membar], &[Details(FENCES), Operands(0)]),
    // §9.7.8.1-5 and §9.7.1.9-10: `and`/`or`/`xor`/`not` also on predicates.
    row(&[Opcode::And, Opcode::Or, Opcode::Xor, Opcode::Not], &[Type(BITS_PRED)]),
    row(
        &[Opcode::Cnot, Opcode::Popc, Opcode::Clz, Opcode::Brev, Opcode::Rem, Opcode::Shr],
        &[Type(INT16_64)],
    ),
    row(&[Opcode::Shl], &[Type(&[B16, B32, B64, U16, U32, U64])]),
    // §9.7.1.19-20
    row(&[Opcode::Bfe], &[Type(&[B32, B64, U32, U64, S32, S64])]),
    row(&[Opcode::Bfi], &[Type(&[B32, B64, U32, U64])]),
    // §9.7.1.13-14, §9.7.3.5-6, §9.7.4.4-5: the half types are `sema::formats`'.
    row(&[Opcode::Neg, Opcode::Abs], &[Details(&[]), Type(NEG_ABS), FtzWith(&[F32, F16, F16x2])]),
    // §9.7.3.8-10: `sqrt.approx{.ftz}.f32`, `rcp.approx.ftz.f64`, `rcp.approx{.ftz}.f32`,
    // `div.approx{.ftz}.f32`, `div.full{.ftz}.f32`, then the rounded `sqrt` and `rcp`.
    named(
        "sqrt.approx",
        &[Opcode::Sqrt],
        When::Has(APPROX[0]),
        &[Details(APPROX), Type(&[F32]), NoRounding],
    ),
    named(
        "rcp.approx.f64",
        &[Opcode::Rcp],
        When::If(approx_f64),
        &[Details(APPROX), NoRounding, Ftz],
    ),
    named(
        "rcp.approx",
        &[Opcode::Rcp],
        When::Has(APPROX[0]),
        &[Details(APPROX), Type(F32F64), NoRounding],
    ),
    named(
        "div.approx",
        &[Opcode::Div],
        When::Has(APPROX[0]),
        &[Details(APPROX_FULL), OneOf(APPROX_FULL), Type(&[F32]), NoRounding],
    ),
    named(
        "div.full",
        &[Opcode::Div],
        When::Has(APPROX_FULL[1]),
        &[Details(APPROX_FULL), OneOf(APPROX_FULL), Type(&[F32]), NoRounding],
    ),
    // §9.7.3.8: `div.rnd{.ftz}.f32`, `div.rnd.f64` (after `.approx` and `.full`);
    // §9.7.1.7: `div.type` on integers.
    row(&[Opcode::Div], &[Details(&[]), Rounding, FtzWith(&[F32])]).when(When::Type(F32F64)),
    row(&[Opcode::Div], &[Details(&[]), Type(INT16_64), NoRounding, NoFtz])
        .when(When::Type(INTEGER)),
    // §9.7.9.21: `cvt` between integer and float types of register width, in every
    // rounding (the narrow formats and `cvt.pack` are `sema::formats`' and
    // `sema::expand`'s).
    row(&[Opcode::Cvt], &[Details(&[]), TwoTypes(CONVERT, CONVERT), ConvertRounding, Operands(2)])
        .when(When::If(register_cvt)),
    row(&[Opcode::Cvt], &[Details(PACKS), Pack]).when(When::If(packing_cvt)),
    row(&[Opcode::Sqrt, Opcode::Rcp], &[Details(&[]), Type(F32F64), Rounding, FtzWith(&[F32])]),
    // §9.7.13.6-9: the warp collectives.
    row(&[Opcode::Shfl], &[OneOf(SHUFFLE), Type(&[B32, U32, S32, F32]), SyncOperands(4)]),
    row(&[Opcode::Vote], &[SyncOperands(2)]),
    row(&[Opcode::Match], &[Details(MATCH), Type(&[B32, U32, S32, F32, B64, U64, S64, F64])]),
    row(&[Opcode::Activemask], &[Details(&[]), Operands(1)]),
    // §9.7.3.13-22, §9.7.4.10-11: the approximate functions (`.approx` only; the half
    // `ex2` forms' `.ftz` in `media`; `tanh` takes none, §9.7.3.22).
    row(&[Opcode::Ex2], &[Details(APPROX), OneOf(APPROX), Type(&[F32, F16, F16x2, Bf16, Bf16x2])]),
    row(
        &[Opcode::Tanh],
        &[Details(APPROX), OneOf(APPROX), Type(&[F32, F16, F16x2, Bf16, Bf16x2]), NoFtz],
    ),
    row(&[Opcode::Rsqrt], &[Details(APPROX), OneOf(APPROX), Type(F32F64)]),
    row(&[Opcode::Lg2, Opcode::Sin, Opcode::Cos], &[Details(APPROX), OneOf(APPROX), Type(&[F32])]),
    // §9.7.13.5-6: `atom`/`red` with an operation, an order, a scope, `.noftz` and cache
    // hints (`.nc` and `.unified` are no hints); the vector forms are the ISA's three
    // (`Check::VectorAtomic`); `sema::atomic` checks the scalar combinations.
    row(&[Opcode::Atom, Opcode::Red], &[VectorAtomic, Details(VECTOR_ATOMIC)])
        .when(When::If(|m| m.vector.is_some())),
    row(&[Opcode::Atom, Opcode::Red], &[Details(ATOMIC)]),
    // §9.7.13.8: `barrier.cluster.arrive{.release|.relaxed}{.aligned}` and
    // `barrier.cluster.wait{.acquire}{.aligned}`.
    named(
        "barrier.cluster",
        &[Opcode::Barrier],
        When::Has(Modifier::Scope(Scope::Cluster)),
        &[Details(BARRIER_CLUSTER), Operands(0), OneOf(ARRIVE_WAIT)],
    ),
    // §9.7.13.3: `brx.idx{.uni} index, tlist`.
    row(&[Opcode::Brx], &[OneOf(INDEXED)]),
    // §9.7.9.25.3-5, §9.7.13.15: the copies ptxvk implements and mbarrier objects.
    row(&[Opcode::Cp], &[Copy]),
    row(&[Opcode::Mbarrier], &[Mbarrier]),
    // §9.7.9.8-10: `ld`, `st` and `ldu`.
    row(&[Opcode::Ld, Opcode::St, Opcode::Ldu], &[Access]),
    // §9.7.13.1-2: `bar.warp.sync`; `bar.arrive` (which `sema::barrier` refuses: Vulkan
    // has no arrival without waiting); `bar{.cta}.red`; `bar{.cta}.sync{.aligned}`.
    row(&[Opcode::Bar], &[Details(BAR_WARP)]).when(When::Has(BAR_WARP[0])),
    row(&[Opcode::Bar, Opcode::Barrier], &[]).when(When::Has(ARRIVE_WAIT[0])),
    row(&[Opcode::Bar, Opcode::Barrier], &[Details(BAR_RED)]).when(When::Has(BAR_RED[0])),
    row(&[Opcode::Bar, Opcode::Barrier], &[Details(BAR_SYNC)]),
    // §9.7.9.23: `mapa.type d, a, rank` and `getctarank.type d, a` (with a state space).
    row(&[Opcode::Mapa], &[Details(&[]), Type(U32B32_64), Operands(3)]),
    row(&[Opcode::Getctarank], &[Details(&[]), Type(U32B32_64), Operands(2)]),
    // §9.7.17: `alloca`, `stacksave`, `stackrestore` on 32- or 64-bit addresses.
    row(
        &[Opcode::Alloca, Opcode::Stacksave, Opcode::Stackrestore],
        &[Details(&[]), Type(U32B32_64)],
    ),
];

/// The modifiers `atom` and `red` take here (§9.7.13.5-6); `.cluster` is `.cta` (every
/// cluster is one CTA, `sema::cluster`). The first 17 are [`VECTOR_ATOMIC`].
const ATOMIC: &[Modifier] = &[
    Modifier::Reduction(Reduction::Add),
    Modifier::Reduction(Reduction::Inc),
    Modifier::Reduction(Reduction::Dec),
    Modifier::Reduction(Reduction::Exch),
    Modifier::Reduction(Reduction::Cas),
    Modifier::Reduction(Reduction::Min),
    Modifier::Reduction(Reduction::Max),
    Modifier::Scope(Scope::Cta),
    Modifier::Scope(Scope::Cluster),
    Modifier::Scope(Scope::Gpu),
    Modifier::Scope(Scope::Sys),
    Modifier::MemoryOrder(MemoryOrder::Relaxed),
    Modifier::MemoryOrder(MemoryOrder::Acquire),
    Modifier::MemoryOrder(MemoryOrder::Release),
    Modifier::MemoryOrder(MemoryOrder::AcqRel),
    Modifier::FloatOption(FloatOption::NoFtz),
    Modifier::CacheHint(CacheHint::L2CacheHint),
    Modifier::CacheOp(CacheOp::Ca),
    Modifier::CacheOp(CacheOp::Cg),
    Modifier::CacheOp(CacheOp::Cs),
    Modifier::CacheOp(CacheOp::Lu),
    Modifier::CacheOp(CacheOp::Cv),
    Modifier::CacheOp(CacheOp::Wb),
    Modifier::CacheOp(CacheOp::Wt),
    Modifier::CacheHint(CacheHint::L1EvictNormal),
    Modifier::CacheHint(CacheHint::L1EvictUnchanged),
    Modifier::CacheHint(CacheHint::L1EvictFirst),
    Modifier::CacheHint(CacheHint::L1EvictLast),
    Modifier::CacheHint(CacheHint::L1NoAllocate),
    Modifier::CacheHint(CacheHint::L2EvictNormal),
    Modifier::CacheHint(CacheHint::L2EvictFirst),
    Modifier::CacheHint(CacheHint::L2EvictLast),
    Modifier::CacheHint(CacheHint::L2EvictUnchanged),
    Modifier::CacheHint(CacheHint::L2Prefetch64B),
    Modifier::CacheHint(CacheHint::L2Prefetch128B),
    Modifier::CacheHint(CacheHint::L2Prefetch256B),
];
/// The modifiers of the vector forms of `atom` and `red` (§9.7.13.5-6): `.op`, `.scope`,
/// `.sem`, `.noftz` and `.L2::cache_hint`, the first of [`ATOMIC`] ([`Check::VectorAtomic`]
/// refuses the operations other than `.add`, `.min` and `.max` with the ISA's wording).
const VECTOR_ATOMIC: &[Modifier] = ATOMIC.split_at(17).0;
const BAR_WARP: &[Modifier] = &[Modifier::BarrierForm(BarrierForm::Warp), SYNC[0]];
const ARRIVE_WAIT: &[Modifier] =
    &[Modifier::BarrierForm(BarrierForm::Arrive), Modifier::BarrierForm(BarrierForm::Wait)];
const BARRIER_CLUSTER: &[Modifier] = &[
    Modifier::Scope(Scope::Cluster),
    ARRIVE_WAIT[0],
    ARRIVE_WAIT[1],
    Modifier::MemoryOrder(MemoryOrder::Release),
    Modifier::MemoryOrder(MemoryOrder::Relaxed),
    Modifier::MemoryOrder(MemoryOrder::Acquire),
    Modifier::Convergence(Convergence::Aligned),
];
const BAR_SYNC: &[Modifier] = &[SYNC[0], Modifier::Scope(Scope::Cta), SYNC[1]];
const BAR_RED: &[Modifier] = &[
    Modifier::BarrierForm(BarrierForm::Red),
    Modifier::Scope(Scope::Cta),
    SYNC[0],
    SYNC[1],
    Modifier::Population(Population::Popc),
];
const U32B32_64: &[ScalarType] = &[U32, U64, B32, B64];

const U16X2: Modifier = Modifier::Format(Format::U16x2);
const S16X2: Modifier = Modifier::Format(Format::S16x2);
const PACKED16: &[Modifier] = &[U16X2, S16X2];
const MIN_PACKED: &[Modifier] = &[RELU, U16X2, S16X2];
const RELU: Modifier = Modifier::FloatOption(FloatOption::Relu);
const NAN: Modifier = Modifier::FloatOption(FloatOption::NaN);
const XORSIGN: Modifier = Modifier::FloatOption(FloatOption::Xorsign);
const ABS: Modifier = Modifier::FloatOption(FloatOption::Abs);
const PARTS: &[MulPart] = &[MulPart::Lo, MulPart::Hi, MulPart::Wide];
/// The types of one register of a predicate or an integer: a row for them selects
/// every integer form (and the type check then names the sizes the ISA has).
const INTEGER: &[ScalarType] = &[Pred, B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64];
const INTEGER_F64: &[ScalarType] =
    &[Pred, B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64, F64];
const MIN_MAX: &[ScalarType] = &[B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64];

const TO: Modifier = Modifier::Conversion(crate::modifier::Conversion::To);
const CVTA_SPACES: &[StateSpace] = &[
    StateSpace::Global,
    StateSpace::Const,
    StateSpace::Shared,
    StateSpace::Local,
    StateSpace::Param,
];
const INT32: &[ScalarType] = &[B32, U32, S32];
const SYNC_MOD: Modifier = Modifier::Convergence(Convergence::Sync);
const AND_OR_XOR: &[BoolOp] = &[BoolOp::And, BoolOp::Or, BoolOp::Xor];
const MIN_MAX_OPS: &[Modifier] =
    &[Modifier::Reduction(Reduction::Min), Modifier::Reduction(Reduction::Max)];
const REDUX_OPS: &[Modifier] = &[
    Modifier::Reduction(Reduction::Add),
    Modifier::Reduction(Reduction::Min),
    Modifier::Reduction(Reduction::Max),
];
const REDUX_INT: &[Modifier] = &[
    Modifier::Convergence(Convergence::Sync),
    Modifier::Convergence(Convergence::Aligned),
    Modifier::Reduction(Reduction::Add),
    Modifier::Reduction(Reduction::Min),
    Modifier::Reduction(Reduction::Max),
];
const REDUX_F32: &[Modifier] = &[
    Modifier::Convergence(Convergence::Sync),
    Modifier::Convergence(Convergence::Aligned),
    Modifier::Reduction(Reduction::Min),
    Modifier::Reduction(Reduction::Max),
    ABS,
    NAN,
];
/// The modifiers of `membar` and of the fences other than `fence.proxy` (§9.7.13.4);
/// `.cluster` is `.cta` here (every cluster is one CTA).
const FENCES: &[Modifier] = &[
    Modifier::Scope(Scope::Cta),
    Modifier::Scope(Scope::Cluster),
    Modifier::Scope(Scope::Gl),
    Modifier::Scope(Scope::Gpu),
    Modifier::Scope(Scope::Sys),
    Modifier::MemoryOrder(MemoryOrder::Sc),
    Modifier::MemoryOrder(MemoryOrder::AcqRel),
    Modifier::MemoryOrder(MemoryOrder::Release),
    Modifier::MemoryOrder(MemoryOrder::Acquire),
    Modifier::FenceForm(FenceForm::MbarrierInit),
    Modifier::FenceForm(FenceForm::SyncRestrictSharedCta),
    Modifier::FenceForm(FenceForm::SyncRestrictSharedCluster),
];

const APPROX: &[Modifier] = &[Modifier::Precision(Precision::Approx)];
const INDEXED: &[Modifier] = &[Modifier::Indexed(Indexed::Idx)];
const SYNC: &[Modifier] =
    &[Modifier::Convergence(Convergence::Sync), Modifier::Convergence(Convergence::Aligned)];
const SHUFFLE: &[Modifier] = &[
    Modifier::Shuffle(Shuffle::Up),
    Modifier::Shuffle(Shuffle::Down),
    Modifier::Shuffle(Shuffle::Bfly),
    Modifier::Shuffle(Shuffle::Idx),
];
const MATCH: &[Modifier] = &[
    Modifier::Vote(Vote::Any),
    Modifier::Vote(Vote::All),
    Modifier::Convergence(Convergence::Sync),
    Modifier::Convergence(Convergence::Aligned),
];
const APPROX_FULL: &[Modifier] =
    &[Modifier::Precision(Precision::Approx), Modifier::Precision(Precision::Full)];

/// `rcp.approx.f64`, which needs `.ftz` (§9.7.3.9).
fn approx_f64(m: &Modifiers) -> bool {
    m.has(APPROX[0]) && matches!(m.types.as_slice(), [t] if t.value == F64)
}

/// Not exactly one half type: the half forms are checked by `sema::formats`.
fn not_half(m: &Modifiers) -> bool {
    !matches!(m.types.as_slice(), [t] if matches!(t.value, F16 | F16x2 | Bf16 | Bf16x2))
}

/// The types a `cvt` converts between in registers: integers and `.f32`/`.f64`.
const CONVERT: &[ScalarType] = &[B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64, F32, F64];

const PACKS: &[Modifier] = &[
    Modifier::Conversion(crate::modifier::Conversion::Pack),
    Modifier::Format(Format::U4),
    Modifier::Format(Format::S4),
    Modifier::Format(Format::U2),
    Modifier::Format(Format::S2),
];

/// A `cvt` between register types: none of the half and narrow float types nor
/// stochastic rounding, and no `cvt.pack` but with a directed rounding (which
/// [`Check::Details`] refuses there).
fn register_cvt(m: &Modifiers) -> bool {
    !narrow_format_cvt(m) && (!m.has(PACKS[0]) || media::When::Directed.holds(m))
}

/// A `cvt.pack` that is not one of [`narrow_format_cvt`], without a directed rounding.
fn packing_cvt(m: &Modifiers) -> bool {
    !narrow_format_cvt(m) && m.has(PACKS[0]) && !media::When::Directed.holds(m)
}

/// [`Check::Pack`].
fn pack(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let sub_byte = m.details.iter().find_map(|d| match d.value {
        Modifier::Format(Format::U4 | Format::S4) => Some(4),
        Modifier::Format(Format::U2 | Format::S2) => Some(2),
        _ => None,
    });
    let narrow = sub_byte.or_else(|| {
        m.types.iter().find_map(|t| match t.value {
            U16 | S16 => Some(16),
            U8 | S8 => Some(8),
            _ => None,
        })
    });
    let Some(bits) = narrow else {
        return Err(Diagnostic::error(
            i.span,
            "`cvt.pack` converts to `.u16`, `.s16`, `.u8`, `.s8`, `.u4`, `.s4`, `.u2` or `.s2`",
        ));
    };
    if !m.sat || !m.types.iter().any(|t| t.value == S32) {
        return Err(Diagnostic::error(i.span, "`cvt.pack` is `cvt.pack.sat` from `.s32`"));
    }
    let n = 3 + usize::from(bits < 16);
    if i.operands.len() != n {
        let msg = format!("`cvt.pack` to {bits} bits takes {n} operands");
        return Err(Diagnostic::error(i.span, msg));
    }
    Ok(())
}

/// A `cvt` that `sema::formats` lowers: a half or narrow float type, or stochastic
/// rounding.
fn narrow_format_cvt(m: &Modifiers) -> bool {
    use crate::modifier::ConvertRounding;
    let narrow_format = |d: &Modifier| {
        use Format::*;
        matches!(
            d,
            Modifier::Format(
                E4m3x2
                    | E5m2x2
                    | E2m3x2
                    | E3m2x2
                    | E2m1x2
                    | Ue8m0x2
                    | E4m3x4
                    | E5m2x4
                    | E2m3x4
                    | E3m2x4
                    | E2m1x4
                    | S2f6x2
            ) | Modifier::ConvertRounding(ConvertRounding::Rs)
        )
    };
    m.types.iter().any(|t| matches!(t.value, F16 | F16x2 | Bf16 | Bf16x2 | Tf32))
        || m.details.iter().any(|d| narrow_format(&d.value))
}

/// The row of `m`'s instruction, if its opcode has one.
pub fn form(m: &Modifiers) -> Option<&'static Form> {
    media::FORMS.iter().chain(FORMS).find(|f| f.ops.contains(&m.opcode) && f.when.holds(m))
}

impl When {
    /// Whether the row selects the instruction with decoded modifiers `m`.
    pub fn holds(self, m: &Modifiers) -> bool {
        match self {
            When::Always => true,
            When::Sat => m.sat,
            When::IntSat => m.sat && matches!(m.types.as_slice(), [t] if is_integer(t.value)),
            When::Has(d) => m.has(d),
            When::HasAny(set) => set.iter().any(|d| m.has(*d)),
            When::Type(set) => matches!(m.types.as_slice(), [t] if set.contains(&t.value)),
            When::If(f) => f(m),
            When::Media(w) => w.holds(m),
        }
    }
}

/// Holds `i`, with its decoded modifiers `m`, against its row.
pub fn check(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let Some(form) = form(m) else { return Ok(()) };
    let op = m.opcode;
    let name = if form.name.is_empty() { op.name() } else { form.name };
    for c in form.checks {
        check_one(c, i, m, name)?;
    }
    Ok(())
}

fn check_one(c: &Check, i: &Instruction, m: &Modifiers, name: &str) -> Result<(), Diagnostic> {
    let op = m.opcode;
    match c {
        Details(allowed) => {
            if let Some(d) = m.details.iter().find(|d| !allowed.contains(&d.value)) {
                return Err(Diagnostic::error(
                    d.span,
                    format!("unknown or unsupported modifier `{}` for `{op}`", d.value),
                ));
            }
        }
        Type(set) => match m.types.as_slice() {
            [t] if set.contains(&t.value) => {}
            [t] => return Err(Diagnostic::error(t.span, format!("`{name}` takes {}", types(set)))),
            [] => {
                return Err(Diagnostic::error(
                    i.opcode.span,
                    format!("`{}` needs a type such as `.u32`", i.opcode.value),
                ))
            }
            [_, second, ..] => {
                return Err(Diagnostic::error(second.span, "unexpected second type"))
            }
        },
        TwoTypes(first, second) => {
            let [a, b] = m.types.as_slice() else {
                return Err(Diagnostic::error(
                    i.span,
                    format!("`{op}` needs two types, such as `{op}.u32.s32`"),
                ));
            };
            for (t, set) in [(a, first), (b, second)] {
                if !set.contains(&t.value) {
                    let msg = format!("`{op}` takes {} there", types(set));
                    return Err(Diagnostic::error(t.span, msg));
                }
            }
        }
        FtzWith(set) => {
            if m.ftz && !m.types.last().is_some_and(|t| set.contains(&t.value)) {
                let msg = format!("`{name}.ftz` takes {} as its last type", types(set));
                return Err(Diagnostic::error(i.span, msg));
            }
        }
        OneOf(set) => {
            if m.details.iter().filter(|d| set.contains(&d.value)).count() != 1 {
                let names: Vec<String> = set.iter().map(|d| format!("`{d}`")).collect();
                let what = if set.len() > 2 {
                    format!("one of {}", names.join(", "))
                } else {
                    names.join(" or ")
                };
                return Err(Diagnostic::error(i.span, format!("`{name}` needs {what}")));
            }
        }
        Part(set) => {
            if !m.mul_part.as_ref().is_some_and(|p| set.contains(&p.value)) {
                let names = set.iter().map(|p| part_name(*p).to_string()).collect();
                return Err(Diagnostic::error(
                    i.span,
                    format!("`{name}` needs {}", or_list(names)),
                ));
            }
        }
        AtMostOne(what) => {
            if let Some(second) = m.details.get(1) {
                return Err(Diagnostic::error(second.span, format!("`{name}` takes one {what}")));
            }
        }
        NoPart => {
            if let Some(p) = &m.mul_part {
                return Err(Diagnostic::error(
                    p.span,
                    format!("`{name}` takes no `.lo/.hi/.wide`"),
                ));
            }
        }
        NoSat => {
            if m.sat {
                return Err(Diagnostic::error(i.span, format!("`{name}` takes no `.sat`")));
            }
        }
        NoRounding => {
            if let Some(r) = &m.rounding {
                return Err(Diagnostic::error(r.span, format!("`{name}` takes no rounding")));
            }
        }
        NoFtz => {
            if m.ftz {
                return Err(Diagnostic::error(i.span, format!("`{name}` takes no `.ftz`")));
            }
        }
        Ftz => {
            if !m.ftz {
                return Err(Diagnostic::error(i.span, format!("`{name}` needs `.ftz`")));
            }
        }
        Comparison => {
            if m.cmp.is_none() {
                let msg = format!("`{name}` needs a comparison such as `.lt`");
                return Err(Diagnostic::error(i.span, msg));
            }
        }
        ComparedType => compared_type(i, m)?,
        Rounding => {
            if m.rounding.is_none() {
                return Err(Diagnostic::error(
                    i.span,
                    format!("`{name}` needs a rounding such as `.rn`{}", approx_hint(op)),
                ));
            }
        }
        Combines(set) => {
            if m.combine.is_some_and(|b| !set.contains(&b)) {
                let names: Vec<String> = set.iter().map(|b| combine_name(*b).into()).collect();
                let msg = if names.is_empty() {
                    format!("`{name}` takes no `.and`, `.or` or `.xor` here")
                } else {
                    format!("`{name}` combines with {}", or_list(names))
                };
                return Err(Diagnostic::error(i.span, msg));
            }
        }
        NoType => {
            if let Some(t) = m.types.first() {
                return Err(Diagnostic::error(t.span, format!("`{name}` takes no type here")));
            }
        }
        SatWith(set) => {
            if m.sat && !m.types.last().is_some_and(|t| set.contains(&t.value)) {
                let msg = format!("`{name}.sat` takes {}", types(set));
                return Err(Diagnostic::error(i.span, msg));
            }
        }
        Needs(d) => {
            if !m.has(*d) {
                return Err(Diagnostic::error(i.span, format!("`{name}` needs `{d}` here")));
            }
        }
        With(d, with) => {
            if let Some(at) = m.details.iter().find(|x| x.value == *d).filter(|_| !m.has(*with)) {
                return Err(Diagnostic::error(at.span, format!("`{d}` goes with `{with}`")));
            }
        }
        ConvertRounding => convert_rounding(i, m)?,
        Combine(set) => {
            if !m.combine.is_some_and(|b| set.contains(&b)) {
                let names = set.iter().map(|b| combine_name(*b).to_string()).collect();
                let msg = format!("`{name}` needs an operation: {}", or_list(names));
                return Err(Diagnostic::error(i.span, msg));
            }
        }
        Pack => pack(i, m)?,
        Space(set) => {
            if !m.space.as_ref().is_some_and(|s| set.contains(&s.value)) {
                let names = set.iter().map(|s| format!("`{}`", s.directive())).collect();
                let at = m.space.as_ref().map_or(i.span, |s| s.span);
                return Err(Diagnostic::error(at, format!("`{name}` takes {}", or_list(names))));
            }
        }
        TruthTable => truth_table(i)?,
        CombinedPair => {
            if m.combine.is_some() && !matches!(i.operands.first(), Some(Operand::Pair(..))) {
                let msg = format!("`{name}` with `.and`/`.or` writes `d|p`");
                return Err(Diagnostic::error(i.span, msg));
            }
        }
        PairWith(set) => {
            let paired = matches!(i.operands.first(), Some(Operand::Pair(..)));
            if let Some(t) = m.types.iter().find(|t| set.contains(&t.value)).filter(|_| !paired) {
                let msg = format!("an x2 `{op}` writes two predicates `p|q`");
                return Err(Diagnostic::error(t.span, msg));
            }
        }
        Operands(n) | SyncOperands(n) => {
            let more = match c {
                SyncOperands(_) => m.has(SYNC[0]),
                _ => m.combine.is_some(),
            };
            let n = n + usize::from(more);
            if i.operands.len() != n {
                return Err(Diagnostic::error(
                    i.span,
                    format!("`{name}` takes {n} operands here, found {}", i.operands.len()),
                ));
            }
        }
        Media(c) => media::check(c, i, m, name)?,
        VectorAtomic => atomic::vector(i, m)?,
        Copy => _ = copy::copy_form(i, &m.details, m.types.first())?,
        Mbarrier => _ = copy::mbarrier_form(i, &m.details, m.space.as_ref())?,
        Access => {
            let space = m.space.as_ref().map(|s| s.value);
            _ = memory::access_form(i, op, &m.details, &m.types, space, m.vector)?
        }
    }
    Ok(())
}

/// [`Check::TruthTable`]: `lop3`'s `immLut`, an 8-bit constant (PTX ISA 9.2 §9.7.8.6).
fn truth_table(i: &Instruction) -> Result<(), Diagnostic> {
    let table = &i.operands[4];
    let Operand::Imm(lut) = table else {
        return Err(Diagnostic::error(table.span(), "`immLut` must be a constant"));
    };
    let lut = lut.eval_int().map_err(|(s, msg)| Diagnostic::error(s, msg))?.value;
    if lut > 0xff {
        return Err(Diagnostic::error(table.span(), "`immLut` is an 8-bit table"));
    }
    Ok(())
}

/// [`Check::ConvertRounding`] (PTX ISA 9.2 §9.7.9.21), for two register types.
fn convert_rounding(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let [to, from] = m.types.as_slice() else { return Ok(()) };
    let (to, from) = (to.value, from.value);
    let float = |t: ScalarType| matches!(t, F32 | F64);
    let narrowing = from == F64 && to == F32;
    // What the conversion rounds to: an integral value (`Some(true)`), a float
    // (`Some(false)`), nothing; and whether that rounding is optional.
    let (integral, optional) = match (float(from), float(to)) {
        (true, false) => (Some(true), false),
        (true, true) if to == from => (Some(true), true),
        (true, true) if narrowing => (Some(false), false),
        (false, true) => (Some(false), false),
        _ => (None, true),
    };
    match (&m.rounding, integral) {
        (Some(r), Some(integral)) if r.value.integer == integral => {}
        (Some(r), _) => {
            let msg = match integral {
                Some(true) => {
                    "this conversion rounds to an integral value: it takes `.rni`, `.rzi`, `.rmi` or `.rpi`"
                }
                Some(false) => {
                    "this conversion rounds a float result: it takes `.rn`, `.rz`, `.rm` or `.rp`"
                }
                None => "this conversion takes no rounding modifier",
            };
            return Err(Diagnostic::error(r.span, msg));
        }
        (None, Some(true)) if !optional => {
            let msg = "a float-to-integer `cvt` needs `.rni`, `.rzi`, `.rmi` or `.rpi`";
            return Err(Diagnostic::error(i.span, msg));
        }
        (None, Some(false)) => {
            return Err(Diagnostic::error(i.span, "this `cvt` needs `.rn`, `.rz`, `.rm` or `.rp`"));
        }
        (None, _) => {}
    }
    if m.ftz && !float(from) && !float(to) {
        return Err(Diagnostic::error(i.span, "`.ftz` takes a floating-point conversion"));
    }
    if m.ftz && from != F32 && to != F32 {
        return Err(Diagnostic::error(i.span, "`.ftz` applies to `.f32` conversions only"));
    }
    Ok(())
}

/// How an instruction with a precision (`sqrt`, `rcp`) may do without a rounding.
fn approx_hint(op: Opcode) -> &'static str {
    if op.spec().families.contains(&crate::modifier::Family::Precision) {
        " (or `.approx` on `.f32`)"
    } else {
        ""
    }
}

fn combine_name(b: BoolOp) -> &'static str {
    match b {
        BoolOp::And => "`.and`",
        BoolOp::Or => "`.or`",
        BoolOp::Xor => "`.xor`",
    }
}

fn part_name(p: MulPart) -> &'static str {
    match p {
        MulPart::Lo => "`.lo`",
        MulPart::Hi => "`.hi`",
        MulPart::Wide => "`.wide`",
    }
}

/// `` `.u32` or `.s32` ``, `` `.u16`, `.u32` or `.s32` ``.
fn types(set: &[ScalarType]) -> String {
    or_list(set.iter().map(|t| format!("`{}`", t.directive())).collect())
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(names: Vec<String>) -> String {
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// A type that names an integer (or bit-size) value, or a predicate: not a float.
/// [`Check::ComparedType`]. Other types are left to the type checks of semantic
/// analysis, which come first: no type or two for `setp`, and the types it does not
/// implement.
fn compared_type(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let compared = match (m.opcode == Opcode::Set, m.types.as_slice()) {
        (false, [t]) | (true, [_, t]) => t.value,
        _ => return Ok(()),
    };
    if !is_integer(compared) {
        return Ok(());
    }
    use crate::decode::CmpOp as C;
    let unordered = matches!(
        m.cmp,
        Some(C::Equ | C::Neu | C::Ltu | C::Leu | C::Gtu | C::Geu | C::Num | C::Nan)
    );
    if unordered {
        return Err(Diagnostic::error(i.span, "unordered comparisons take floating-point types"));
    }
    if m.ftz {
        return Err(Diagnostic::error(i.span, "`.ftz` takes floating-point types"));
    }
    Ok(())
}

fn is_integer(t: ScalarType) -> bool {
    matches!(t, Pred | B8 | B16 | B32 | B64 | U8 | U16 | U32 | U64 | S8 | S16 | S32 | S64)
}
