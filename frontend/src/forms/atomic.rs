//! The vector forms of `atom` and `red` ([`super::Check::VectorAtomic`]). PTX ISA 9.2
//! §9.7.13.5 (`atom`) and §9.7.13.6 (`red`, the same forms without `d`), sm_90 and PTX
//! ISA 8.1, define exactly these:
//!
//! ```text
//! atom{.sem}{.scope}{.global}.add{.level::cache_hint}.vec_32_bit.f32 d, [a], b{, cache-policy};
//! atom{.sem}{.scope}{.global}.op.noftz{.level::cache_hint}.vec_16_bit.half_word_type d, [a], b{, cache-policy};
//! atom{.sem}{.scope}{.global}.op.noftz{.level::cache_hint}.vec_32_bit.packed_type d, [a], b{, cache-policy};
//! .op = { .add, .min, .max };  .half_word_type = { .f16, .bf16 };  .packed_type = { .f16x2, .bf16x2 };
//! .vec_16_bit = { .v2, .v4, .v8 };  .vec_32_bit = { .v2, .v4 };
//! ```
//!
//! and "atom with vector type may be used only with .global space and with generic
//! addressing where the address points to .global space". Every other vector
//! `atom`/`red` (`.cas`, `.exch`, `.inc`, integer types, `.v8.f32`, `.shared`…) is
//! refused here, so that a kernel tested with ptxvk does not use a form NVIDIA's
//! assembler rejects.
//!
//! [`decode`] reads every `atom`/`red` (scalar and vector) into an [`Atomic`]: its
//! operation, scope and order, element type, space and operands, with the type, space
//! and operand-count rules of §9.7.13.5-6 that ptxvk implements.

use super::formats::{half_source, FloatFormat};
use crate::ast::{Instruction, Operand, ScalarType, StateSpace};
use crate::decode::{BoolOp, Modifiers};
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode;
use crate::modifier::{self as md, FloatOption, Modifier, Reduction};
use crate::span::Spanned;

/// The element types of the vector forms: `.f32`, the `.half_word_type`s and the
/// `.packed_type`s.
const VECTOR_TYPES: &[ScalarType] =
    &[ScalarType::F32, ScalarType::F16, ScalarType::Bf16, ScalarType::F16x2, ScalarType::Bf16x2];

/// Holds a vector `atom`/`red` against the three forms of §9.7.13.5-6.
pub(super) fn vector(i: &Instruction, m: &Modifiers) -> Result<(), Diagnostic> {
    let Some(n) = m.vector else { return Ok(()) };
    let op = m.opcode;
    let section = if op == Opcode::Red { "§9.7.13.6" } else { "§9.7.13.5" };
    let refuse = |at, what: String| {
        Err(Diagnostic::error(
            at,
            format!("`{op}` with vector type {what} (PTX ISA 9.2 {section})"),
        ))
    };
    if let Some(s) = m.space.as_ref().filter(|s| s.value != StateSpace::Global) {
        return refuse(
            s.span,
            format!("may be used only with `.global` space, not `{}`", s.value.directive()),
        );
    }
    // `.op = { .add, .min, .max }`: no `.and`/`.or`/`.xor`, `.exch`, `.cas`, `.inc`, `.dec`.
    if m.combine.is_some() {
        return refuse(i.opcode.span, "takes `.op = { .add, .min, .max }`".into());
    }
    let reduction = m.find(|d| match d {
        Modifier::Reduction(r) => Some(r),
        _ => None,
    });
    if let Some(r) = reduction
        .as_ref()
        .filter(|r| !matches!(r.value, Reduction::Add | Reduction::Min | Reduction::Max))
    {
        return refuse(r.span, "takes `.op = { .add, .min, .max }`".into());
    }
    let ty = match m.types.as_slice() {
        [t] if VECTOR_TYPES.contains(&t.value) => t,
        [t, ..] => return refuse(t.span, format!("takes {}", super::types(VECTOR_TYPES))),
        [] => return refuse(i.opcode.span, format!("takes {}", super::types(VECTOR_TYPES))),
    };
    let f32 = ty.value == ScalarType::F32;
    if let Some(r) = reduction.filter(|r| f32 && r.value != Reduction::Add) {
        return refuse(r.span, "on `.f32` takes `.add` only".into());
    }
    let noftz = m.find(|d| (d == Modifier::FloatOption(FloatOption::NoFtz)).then_some(()));
    match (f32, noftz) {
        (true, Some(at)) => return refuse(at.span, "on `.f32` takes no `.noftz`".into()),
        (false, None) => {
            let what = format!("on `{}` needs `.noftz`", ty.value.directive());
            return refuse(ty.span, what);
        }
        _ => {}
    }
    // `.vec_16_bit` for the 16-bit elements, `.vec_32_bit` for the 32-bit ones.
    let sizes: &[u32] =
        if matches!(ty.value, ScalarType::F16 | ScalarType::Bf16) { &[2, 4, 8] } else { &[2, 4] };
    if !sizes.contains(&n) {
        let names = sizes.iter().map(|k| format!("`.v{k}`")).collect();
        let what =
            format!("on `{}` takes {}, not `.v{n}`", ty.value.directive(), super::or_list(names));
        return refuse(ty.span, what);
    }
    Ok(())
}

/// An atomic operation (PTX ISA 9.2 §9.7.13.5; SPIR-V `OpAtomic*`): a read-modify-write,
/// or the atomic load and store that strong `ld`/`st` are (§8.4).
///
/// `Load` to `Cas` on integers as wide as the space's atomic word (32 or 64 bits; 64 in
/// a wide shared window) are native SPIR-V atomics. `Inc`, `Dec`, `FloatAdd`, `HalfAdd`,
/// `HalfMinMax` and narrower elements are not: `pass::legalize_atomics` makes them compare-and-swap
/// loops on the containing word, and the emitter never sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// `dst` receives the value; `src` and `cmp` are ignored. Never `Release`/`AcqRel`.
    Load,
    /// Stores `src`; no `dst`. Never `Acquire`/`AcqRel`.
    Store,
    Add,
    And,
    Or,
    Xor,
    Exch,
    /// Signed or unsigned by the operation type.
    Min,
    Max,
    /// Compare and swap: `*a = (*a == cmp) ? src : *a`.
    Cas,
    /// `atom.inc`: `*a = (*a >= src) ? 0 : *a + 1` (unsigned).
    Inc,
    /// `atom.dec`: `*a = (*a == 0 || *a > src) ? src : *a - 1` (unsigned).
    Dec,
    /// Float addition rounded to nearest, at the operation type (f32, f64); `ftz`
    /// flushes subnormal inputs and results (global `atom.add.f32`, §9.7.13.5).
    FloatAdd {
        ftz: bool,
    },
    /// `.add.noftz` of `lanes` 16-bit lanes of `format` (`.f16`, `.bf16`, `x2` forms),
    /// each rounded to nearest with subnormals kept.
    HalfAdd {
        format: FloatFormat,
        lanes: u32,
    },
    /// `.min.noftz`/`.max.noftz` (`max`) of `lanes` 16-bit lanes of `format`, each as
    /// `min.f16`/`max.f16` computes it.
    HalfMinMax {
        max: bool,
        format: FloatFormat,
        lanes: u32,
    },
}

impl AtomicOp {
    /// Whether SPIR-V has the operation (on a whole atomic word).
    pub fn is_native(self) -> bool {
        !matches!(
            self,
            AtomicOp::Inc
                | AtomicOp::Dec
                | AtomicOp::FloatAdd { .. }
                | AtomicOp::HalfAdd { .. }
                | AtomicOp::HalfMinMax { .. }
        )
    }
}

/// The scope of an atomic or fence (PTX `.cta`, `.gpu`, `.sys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Cta,
    Gpu,
    Sys,
}

/// The memory-ordering semantics of an atomic (PTX `.relaxed`, `.acquire`, `.release`,
/// `.acq_rel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

/// A decoded `atom`/`red`.
#[derive(Clone, Debug)]
pub struct Atomic<'a> {
    /// The operation; a float addition is `FloatAdd { ftz: false }`, whose flushing the
    /// space decides (the caller's).
    pub op: AtomicOp,
    pub scope: Scope,
    pub order: Order,
    /// The element type: `.u16`/`.u32` for one or two half-precision lanes.
    pub ty: Spanned<ScalarType>,
    /// `.global` or `.shared`; `.global` for a generic address too (`generic`).
    pub space: StateSpace,
    /// Whether no space is given (a generic address).
    pub generic: bool,
    /// `.noftz`.
    pub noftz: bool,
    /// The destination (`None` for `red`).
    pub dst: Option<&'a Operand>,
    pub addr: &'a Operand,
    /// The value operands: one, or two for `.cas` (then a cache policy may follow).
    pub values: &'a [Operand],
    /// A vector's element destinations (`None` for `red`) and values.
    pub vector: Option<(Option<Vec<Operand>>, Vec<Operand>)>,
}

const NOFTZ: Modifier = Modifier::FloatOption(FloatOption::NoFtz);

/// Decodes `atom`/`red` `i` (of opcode `opcode`, modifiers `details`, types `types`,
/// space `space`, vector size `vector` and combine `combine`), which `check` has held
/// against its forms; `None` for other opcodes.
pub fn decode<'a>(
    i: &'a Instruction,
    opcode: Opcode,
    details: &[Spanned<Modifier>],
    types: &[Spanned<ScalarType>],
    space: Option<Spanned<StateSpace>>,
    vector: Option<u32>,
    combine: Option<BoolOp>,
) -> Option<Result<Atomic<'a>, Diagnostic>> {
    matches!(opcode, Opcode::Atom | Opcode::Red)
        .then(|| decode_atomic(i, opcode, details, types, space, vector, combine))
}

/// [`decode`] of an `atom` or `red`.
fn decode_atomic<'a>(
    i: &'a Instruction,
    opname: Opcode,
    details: &[Spanned<Modifier>],
    types: &[Spanned<ScalarType>],
    space: Option<Spanned<StateSpace>>,
    vector: Option<u32>,
    combine: Option<BoolOp>,
) -> Result<Atomic<'a>, Diagnostic> {
    let red = opname == Opcode::Red;
    let has = |d: Modifier| details.iter().any(|x| x.value == d);
    let span = i.span;
    let (op, scope, order) = operation_and_strength(opname, details, combine)?;
    if red && matches!(order, Order::Acquire | Order::AcqRel) {
        return Err(Diagnostic::error(span, "`red` takes `.relaxed` or `.release`"));
    }
    // A vector's elements (`.v2`/`.v4`/`.v8`).
    let vector_elements = match vector.filter(|&n| n > 1) {
        Some(n) => Some(vector_operands(red, i, n)?),
        None => None,
    };
    // Half precision: the bits of one or two lanes, added by a compare-and-swap loop
    // (on the containing 32-bit word for one 16-bit lane).
    let half = match types {
        [t] => half_source(t.value)
            .filter(|(f, _)| matches!(f, FloatFormat::F16 | FloatFormat::Bf16))
            .map(|h| (h, t.span)),
        _ => None,
    };
    let (op, ty) = match half {
        Some(((format, lanes), at)) => {
            if !has(NOFTZ) {
                return Err(Diagnostic::error(
                    span,
                    "half-precision atomics are `.add`, `.min` or `.max` with `.noftz`",
                ));
            }
            let op = match op {
                Some(AtomicOp::Add) => AtomicOp::HalfAdd { format, lanes },
                // PTX has these in vector forms only (`atom.v2.min.noftz.f16`).
                Some(op @ (AtomicOp::Min | AtomicOp::Max)) if vector.is_some() => {
                    AtomicOp::HalfMinMax { max: op == AtomicOp::Max, format, lanes }
                }
                _ => {
                    return Err(Diagnostic::error(
                        span,
                        "half-precision atomics are `.add`, or `.min`/`.max` in vector forms",
                    ))
                }
            };
            let bits = if lanes == 1 { ScalarType::U16 } else { ScalarType::U32 };
            (Some(op), Spanned::new(bits, at))
        }
        None => (op, one_type(i, types)?),
    };
    let Some(mut op) = op else {
        return Err(Diagnostic::error(
            span,
            format!("`{opname}` needs an operation such as `.add`"),
        ));
    };
    let float = matches!(ty.value, ScalarType::F32 | ScalarType::F64);
    if float {
        if op != AtomicOp::Add {
            return Err(Diagnostic::error(span, format!("`{opname}` on floats takes `.add`")));
        }
        // Its flushing depends on the space (the caller's).
        op = AtomicOp::FloatAdd { ftz: false };
    }
    let u32 = matches!(ty.value, ScalarType::U32 | ScalarType::B32);
    if matches!(op, AtomicOp::Inc | AtomicOp::Dec) && !u32 {
        return Err(Diagnostic::error(span, format!("`{opname}.inc`/`.dec` take `.u32`")));
    }
    let bits = ty.value.bits();
    // A 16-bit `cas`: `pass::legalize_atomics` swaps the containing word.
    let sub_word =
        matches!(op, AtomicOp::HalfAdd { lanes: 1, .. } | AtomicOp::HalfMinMax { lanes: 1, .. })
            || (op == AtomicOp::Cas && bits == 16);
    if !(matches!(bits, 32 | 64) || sub_word) {
        return Err(Diagnostic::error(span, format!("{bits}-bit atomics is not supported yet"))
            .with_note("only 32- and 64-bit atomics are implemented".to_string()));
    }
    let generic = space.is_none();
    let space = match space.as_ref().map(|s| s.value) {
        // Without a space the address is generic, which is global memory for now.
        None | Some(StateSpace::Global) => StateSpace::Global,
        Some(StateSpace::Shared) => StateSpace::Shared,
        Some(other) => {
            return Err(Diagnostic::error(
                space.as_ref().map_or(span, |s| s.span),
                format!("atomics are not allowed on `{}`", other.directive()),
            ))
        }
    };
    let ops = i.operands.as_slice();
    let (dst, addr, values) = if red {
        match ops {
            [a, rest @ ..] => (None, a, rest),
            [] => return Err(Diagnostic::error(span, "`red` takes an address and a value")),
        }
    } else {
        match ops {
            [d, a, rest @ ..] => (Some(d), a, rest),
            _ => {
                return Err(Diagnostic::error(
                    span,
                    "`atom` takes a destination, an address and a value",
                ))
            }
        }
    };
    let want = if op == AtomicOp::Cas { 2 } else { 1 };
    // A trailing cache-policy operand is allowed with `.L2::cache_hint`.
    let hinted = details.iter().any(|d| matches!(d.value, Modifier::CacheHint(_)));
    if !(values.len() == want || (hinted && values.len() == want + 1)) {
        return Err(Diagnostic::error(span, format!("`{opname}` takes {want} value operand(s)")));
    }
    let noftz = has(NOFTZ);
    Ok(Atomic {
        op,
        scope,
        order,
        ty,
        space,
        generic,
        noftz,
        dst,
        addr,
        values,
        vector: vector_elements,
    })
}

/// The one type of an `atom`/`red` other than the half-precision ones.
fn one_type(
    i: &Instruction,
    types: &[Spanned<ScalarType>],
) -> Result<Spanned<ScalarType>, Diagnostic> {
    match types {
        [t] if matches!(t.value, ScalarType::Tf32 | ScalarType::B128)
            || half_source(t.value).is_some() =>
        {
            Err(Diagnostic::error(
                t.span,
                format!("type `{}` is not supported yet", t.value.directive()),
            )
            .with_note("half, bf16, tf32 and 128-bit types are not implemented yet".to_string()))
        }
        [t] => Ok(t.clone()),
        [] => Err(Diagnostic::error(
            i.opcode.span,
            format!("`{}` needs a type such as `.u32`", i.opcode.value),
        )),
        [_, second, ..] => Err(Diagnostic::error(second.span, "unexpected second type")),
    }
}

/// The element operands of `atom`/`red` on a vector, `n` each (its form, one of
/// §9.7.13.5's three on global memory, [`vector`] has checked).
fn vector_operands(
    red: bool,
    i: &Instruction,
    n: u32,
) -> Result<(Option<Vec<Operand>>, Vec<Operand>), Diagnostic> {
    let span = i.span;
    let (d, a, rest) = match (red, i.operands.as_slice()) {
        (true, [a, rest @ ..]) => (None, a, rest),
        (false, [d, a, rest @ ..]) => (Some(d), a, rest),
        _ => return Err(Diagnostic::error(span, "`atom` takes a destination and an address")),
    };
    let (Operand::Address(_), Some(b)) = (a, rest.first()) else {
        return Err(Diagnostic::error(span, "`atom` takes an address and a value"));
    };
    let elems = |o: &Operand| match o {
        Operand::Vector(v, _) if v.len() == n as usize => Ok(v.clone()),
        other => Err(Diagnostic::error(
            other.span(),
            format!("a `.v{n}` atomic takes vectors of {n} elements in braces"),
        )),
    };
    Ok((d.map(elems).transpose()?, elems(b)?))
}

/// The operation, scope and order of an `atom`/`red` (defaults: `.relaxed.gpu`).
fn operation_and_strength(
    opname: Opcode,
    details: &[Spanned<Modifier>],
    combine: Option<BoolOp>,
) -> Result<(Option<AtomicOp>, Scope, Order), Diagnostic> {
    let mut op = combine.map(|b| match b {
        BoolOp::And => AtomicOp::And,
        BoolOp::Or => AtomicOp::Or,
        BoolOp::Xor => AtomicOp::Xor,
    });
    let mut scope = Scope::Gpu;
    let mut order = Order::Relaxed;
    for d in details {
        if let Modifier::Reduction(r) = d.value {
            if op.is_some() {
                return Err(Diagnostic::error(d.span, format!("`{opname}` takes one operation")));
            }
            op = Some(match r {
                Reduction::Add => AtomicOp::Add,
                Reduction::Min => AtomicOp::Min,
                Reduction::Max => AtomicOp::Max,
                Reduction::Exch => AtomicOp::Exch,
                Reduction::Cas => AtomicOp::Cas,
                Reduction::Inc => AtomicOp::Inc,
                Reduction::Dec => AtomicOp::Dec,
            });
            continue;
        }
        match d.value {
            Modifier::Scope(md::Scope::Cta) => scope = Scope::Cta,
            Modifier::Scope(md::Scope::Gpu) => scope = Scope::Gpu,
            Modifier::Scope(md::Scope::Sys) => scope = Scope::Sys,
            Modifier::MemoryOrder(md::MemoryOrder::Relaxed) => order = Order::Relaxed,
            Modifier::MemoryOrder(md::MemoryOrder::Acquire) => order = Order::Acquire,
            Modifier::MemoryOrder(md::MemoryOrder::Release) => order = Order::Release,
            Modifier::MemoryOrder(md::MemoryOrder::AcqRel) => order = Order::AcqRel,
            // Every cluster is one CTA (`sema::cluster`).
            Modifier::Scope(md::Scope::Cluster) => scope = Scope::Cta,
            // `.noftz` and cache hints (`check` has checked the rest).
            _ => {}
        }
    }
    Ok((op, scope, order))
}
