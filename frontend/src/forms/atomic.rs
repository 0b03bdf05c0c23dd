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

use crate::ast::{Instruction, ScalarType, StateSpace};
use crate::decode::Modifiers;
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode;
use crate::modifier::{FloatOption, Modifier, Reduction};

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
