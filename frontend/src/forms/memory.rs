//! The forms of `ld`, `st` and `ldu` that ptxvk implements, [`super::Check::Access`]
//! ([`access_form`], PTX ISA 9.2 §9.7.9.8-10): one type, the strength modifiers and
//! cache hints, the vector sizes of each element width, the operand count and the
//! data operand's shape. Semantic analysis reads the form through [`access_form`],
//! which cannot fail on a checked instruction, and only resolves operands.

use crate::ast::{Instruction, Operand, ScalarType, StateSpace};
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode;
use crate::modifier::{CacheHint, CacheOp, MemoryOrder as O, Modifier, Scope};
use crate::span::Spanned;

/// The order of a strong access (PTX ISA 9.2 §8.4): `.volatile`, `.relaxed` (and
/// `.mmio`'s `.relaxed`), `.acquire` for `ld`, `.release` for `st`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strength {
    Relaxed,
    Acquire,
    Release,
}

/// An `ld`/`st`/`ldu` form, with what semantic analysis needs to resolve its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessShape {
    /// `None` for a weak access, else the order of a strong one and its scope
    /// (`None` for `.volatile`, which is `.sys`).
    pub strength: Option<(Strength, Option<Scope>)>,
    /// The number of elements (1 for a scalar access).
    pub elements: u32,
    /// A 256-bit vector, which only global memory takes (§9.7.9.8).
    pub wide: bool,
}

/// The diagnostic of a vector size that elements of `bits` bits do not take
/// (PTX ISA 9.2 §9.7.9.8).
pub fn vector_error(span: crate::span::Span, n: u32, bits: u32) -> Diagnostic {
    let msg =
        format!("`.v{n}` of {bits}-bit elements is not a valid vector here (PTX ISA 9.2 §9.7.9.8)");
    Diagnostic::error(span, msg)
}

/// The form of access `i` (`op` is `ld`, `st` or `ldu`) with decoded modifiers
/// `details`, types `types`, state space `space` and vector size `vector`; a
/// diagnostic for a form ptxvk does not implement.
pub fn access_form(
    i: &Instruction,
    op: Opcode,
    details: &[Spanned<Modifier>],
    types: &[Spanned<ScalarType>],
    space: Option<StateSpace>,
    vector: Option<u32>,
) -> Result<AccessShape, Diagnostic> {
    let ty = match types {
        [t] => t.value,
        [] => {
            let msg = format!("`{}` needs a type such as `.u32`", i.opcode.value);
            return Err(Diagnostic::error(i.opcode.span, msg));
        }
        [_, second, ..] => return Err(Diagnostic::error(second.span, "unexpected second type")),
    };
    let strength = strength(i, op, details)?;
    if ty == ScalarType::Pred {
        let msg = format!("`{op}` cannot move predicates (PTX ISA 9.2 §9.7.9.8)");
        return Err(Diagnostic::error(i.span, msg));
    }
    let bits = ty.bits();
    let n = vector.unwrap_or(1);
    // Vectors of up to 128 bits; 256-bit `.v8` (32-bit elements) and `.v4` (64-bit
    // ones) on global memory (PTX ISA 9.2 §9.7.9.8, sm_100); a generic address is
    // global unless proven otherwise.
    let wide = n * bits == 256 && bits >= 32;
    let global = matches!(space, None | Some(StateSpace::Global));
    // `.v8` of 8- and 16-bit elements: ptxas takes them as it takes `.v4` (64 and
    // 128 bits).
    let small_v8 = n == 8 && bits <= 16;
    if !(matches!(n, 1 | 2 | 4) && n * bits <= 128 || wide && global || small_v8) {
        return Err(vector_error(i.span, n, bits));
    }
    // `.L2::cache_hint` adds a cache-policy operand, which is only a hint.
    let hinted = details.iter().any(|d| d.value == Modifier::CacheHint(CacheHint::L2CacheHint));
    let ops = &i.operands;
    if !(ops.len() == 2 || (hinted && ops.len() == 3)) {
        let msg = format!("`{op}` takes 2 operands (PTX ISA 9.2 §9.7.9.8-10)");
        return Err(Diagnostic::error(i.span, msg));
    }
    let data = if op == Opcode::St { &ops[1] } else { &ops[0] };
    match (data, n) {
        (Operand::Vector(v, vs), n) if v.len() as u32 != n || n == 1 => {
            let msg = format!("expected {n} vector elements for `.v{n}` (PTX ISA 9.2 §9.7.9.8)");
            return Err(Diagnostic::error(*vs, msg));
        }
        (Operand::Vector(..), _) | (_, 1) => {}
        (d, _) => {
            let msg = "a vector access needs a `{…}` operand (PTX ISA 9.2 §9.7.9.8)";
            return Err(Diagnostic::error(d.span(), msg));
        }
    }
    Ok(AccessShape { strength, elements: n, wide })
}

/// The strength of an `ld`/`st` (PTX ISA 9.2 §8.4, §9.7.9.8-9): `None` for a weak
/// access. `.volatile` is `.relaxed.sys`; `.mmio` accesses are strong too (Vulkan has
/// no memory-mapped I/O to distinguish).
fn strength(
    i: &Instruction,
    op: Opcode,
    details: &[Spanned<Modifier>],
) -> Result<Option<(Strength, Option<Scope>)>, Diagnostic> {
    let mut order = None;
    let mut scope = None;
    let mut volatile = false;
    for d in details {
        match d.value {
            Modifier::MemoryOrder(O::Weak | O::Mmio) | Modifier::CacheOp(CacheOp::Nc) => {}
            Modifier::MemoryOrder(O::Volatile) => {
                volatile = true;
                order = Some(Strength::Relaxed);
            }
            Modifier::MemoryOrder(O::Relaxed) => order = Some(Strength::Relaxed),
            Modifier::MemoryOrder(O::Acquire) if op == Opcode::Ld => {
                order = Some(Strength::Acquire)
            }
            Modifier::MemoryOrder(O::Release) if op == Opcode::St => {
                order = Some(Strength::Release)
            }
            Modifier::Scope(s @ (Scope::Cta | Scope::Gpu | Scope::Sys | Scope::Cluster)) => {
                scope = Some(s)
            }
            // Cache hints (`.nc` and `.unified` are none).
            Modifier::CacheHint(_) => {}
            Modifier::CacheOp(c) if c != CacheOp::Unified => {}
            _ => {
                let msg = format!("unknown or unsupported modifier `{}` for `{op}`", d.value);
                return Err(Diagnostic::error(d.span, msg));
            }
        }
    }
    if order.is_some() && scope.is_none() && !volatile {
        let msg = format!("a `.relaxed`, `.acquire` or `.release` `{op}` needs a scope (`.cta`, `.gpu`, `.sys`) (PTX ISA 9.2 §9.7.9.8-9)");
        return Err(Diagnostic::error(i.span, msg));
    }
    Ok(order.map(|o| (o, scope)))
}
