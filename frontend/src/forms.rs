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

use crate::ast::{Instruction, ScalarType};
use crate::decode::{BoolOp, Modifiers, MulPart};
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode;
use crate::modifier::{
    Bfind, Carry, Clamp, Convergence, FloatClass, Modifier, Precision, ShiftDirection, Shuffle,
    Vote,
};

pub mod media;

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
    /// A rounding (`sqrt.rn`).
    Rounding,
    /// A comparison (`setp.lt`).
    Comparison,
    /// No predicate combine other than these (`lop3.and`, `lop3.or`).
    Combines(&'static [BoolOp]),
    /// This many operands, one more with a predicate combine (`lop3`).
    Operands(usize),
    /// This many operands, one more (the member mask) with `.sync` (`shfl`, `vote`).
    SyncOperands(usize),
    /// A check of the media families ([`media::Check`]).
    Media(media::Check),
}

/// Which instructions of a row's opcodes the row describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Always,
    /// With `.sat`.
    Sat,
    /// With `.sat` and one type, an integer one (`mad.hi.sat.s32`).
    IntSat,
    /// With this modifier.
    Has(Modifier),
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
    row(&[Opcode::Lop3], &[Details(&[]), Type(&[B32]), Combines(AND_OR), Operands(5)]),
    // §9.7.1.22-23
    row(&[Opcode::Dp4a], &[Details(&[]), TwoTypes(U32S32, U32S32)]),
    row(&[Opcode::Dp2a], &[Details(&[]), TwoTypes(U32S32, U32S32), Part(LO_HI)]),
    // §9.7.3.2-3
    row(&[Opcode::Copysign], &[Details(&[]), Type(F32F64)]),
    row(&[Opcode::Testp], &[OneOf(FLOAT_CLASSES), Type(F32F64)]),
    // §9.7.7.1-2: the comparison, and `c` with a predicate combine.
    row(&[Opcode::Setp], &[Comparison, Operands(3)]),
    row(&[Opcode::Set], &[Details(&[]), Comparison, Operands(3)]),
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
    row(&[Opcode::Neg, Opcode::Abs], &[Type(NEG_ABS)]),
    // §9.7.3.8-10: `sqrt.approx{.ftz}.f32`, `rcp.approx{.ftz}.f32`, `rcp.approx.ftz.f64`,
    // `div.approx{.ftz}.f32`, `div.full{.ftz}.f32`, then the rounded `sqrt` and `rcp`.
    named(
        "sqrt.approx",
        &[Opcode::Sqrt],
        When::Has(APPROX[0]),
        &[Details(APPROX), Type(&[F32]), NoRounding],
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
        &[Details(APPROX_FULL), Type(&[F32]), NoRounding],
    ),
    named(
        "div.full",
        &[Opcode::Div],
        When::Has(APPROX_FULL[1]),
        &[Details(APPROX_FULL), Type(&[F32]), NoRounding],
    ),
    row(&[Opcode::Sqrt, Opcode::Rcp], &[Details(&[]), Type(F32F64), Rounding]),
    // §9.7.13.6-9: the warp collectives.
    row(&[Opcode::Shfl], &[OneOf(SHUFFLE), Type(&[B32, U32, S32, F32]), SyncOperands(4)]),
    row(&[Opcode::Vote], &[SyncOperands(2)]),
    row(&[Opcode::Match], &[Details(MATCH), Type(&[B32, U32, S32, F32, B64, U64, S64, F64])]),
    row(&[Opcode::Activemask], &[Details(&[]), Operands(1)]),
    // §9.7.3.13-22, §9.7.4.8-9: the approximate functions (`.approx` only).
    row(
        &[Opcode::Ex2, Opcode::Tanh],
        &[Details(APPROX), OneOf(APPROX), Type(&[F32, F16, F16x2, Bf16, Bf16x2])],
    ),
    row(&[Opcode::Rsqrt], &[Details(APPROX), OneOf(APPROX), Type(F32F64)]),
    row(&[Opcode::Lg2, Opcode::Sin, Opcode::Cos], &[Details(APPROX), OneOf(APPROX), Type(&[F32])]),
];

const APPROX: &[Modifier] = &[Modifier::Precision(Precision::Approx)];
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

/// The row of `m`'s instruction, if its opcode has one.
pub fn form(m: &Modifiers) -> Option<&'static Form> {
    media::FORMS.iter().chain(FORMS).find(|f| {
        f.ops.contains(&m.opcode)
            && match f.when {
                When::Always => true,
                When::Sat => m.sat,
                When::IntSat => m.sat && matches!(m.types.as_slice(), [t] if is_integer(t.value)),
                When::Has(d) => m.has(d),
                When::Media(w) => w.holds(m),
            }
    })
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
                let names: Vec<&str> = set.iter().map(|p| part_name(*p)).collect();
                return Err(Diagnostic::error(
                    i.span,
                    format!("`{name}` needs {}", names.join(" or ")),
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
        Comparison => {
            if m.cmp.is_none() {
                let msg = format!("`{name}` needs a comparison such as `.lt`");
                return Err(Diagnostic::error(i.span, msg));
            }
        }
        Rounding => {
            if m.rounding.is_none() {
                return Err(Diagnostic::error(
                    i.span,
                    format!("`{name}` needs a rounding such as `.rn` (or `.approx` on `.f32`)"),
                ));
            }
        }
        Combines(set) => {
            if m.combine.is_some_and(|b| !set.contains(&b)) {
                let names: Vec<&str> = set.iter().map(|b| combine_name(*b)).collect();
                return Err(Diagnostic::error(
                    i.span,
                    format!("`{name}` combines with {}", names.join(" or ")),
                ));
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
    }
    Ok(())
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
    let names: Vec<String> = set.iter().map(|t| format!("`{}`", t.directive())).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// A type that names an integer (or bit-size) value, or a predicate: not a float.
fn is_integer(t: ScalarType) -> bool {
    matches!(t, Pred | B8 | B16 | B32 | B64 | U8 | U16 | U32 | U64 | S8 | S16 | S32 | S64)
}
