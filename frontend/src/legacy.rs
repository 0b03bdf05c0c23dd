//! PTX ISA 1.0-1.3 forms rewritten to the modes that ISA 1.4 made explicit, before
//! their modifiers are decoded ([`crate::decode`]).
//!
//! Modules of ISA 1.0-1.3 write `sin.f32`, `div.f32`, … without the mode that ISA 1.4
//! made required: they are the `.approx.ftz` forms (PTX ISA 9.2 §9.7.3, §9.7.4, the
//! PTX ISA notes of each). `mad.f32` without a rounding (ISA 1.x, sm_1x) is a product
//! truncated to f32, then added with rounding to nearest, subnormals flushed
//! (§9.7.3.6): `mul.rz.ftz` and `add.rn.ftz`, which is not a form of ISA 1.4 and later;
//! it is checked as `mad.rn.ftz.f32` and the caller lowers it ([`Legacy::TruncatedMad`]).

use crate::ast::Instruction;
use crate::instructions::Opcode;
use crate::span::{Name, Spanned};

/// An instruction of a PTX ISA 1.x module rewritten to the form with its default modes.
#[derive(Debug)]
pub enum Legacy {
    Modes(Instruction),
    /// `mad{.sat}.f32 d, a, b, c` written `mad.rn.ftz{.sat}.f32`, whose form and operands
    /// are those of the ISA 1.x `mad`; the caller lowers it as `mul.rz.ftz.f32 p, a, b`
    /// then `add.rn.ftz{.sat}.f32 d, p, c`.
    TruncatedMad(Instruction),
}

impl Legacy {
    /// The rewritten instruction.
    pub fn instruction(&self) -> &Instruction {
        match self {
            Legacy::Modes(i) | Legacy::TruncatedMad(i) => i,
        }
    }
}

/// `i` (of opcode `op`) in a module of PTX ISA `version` with its default modes
/// written out; `None` when it needs no rewriting.
pub fn legacy_default_modes(version: (u32, u32), op: Opcode, i: &Instruction) -> Option<Legacy> {
    let has = |m: &str| i.has_modifier(m);
    let moded = [".approx", ".full", ".rn", ".rz", ".rm", ".rp"].iter().any(|m| has(m));
    if !has(".f32") || moded {
        return None;
    }
    // Modifiers inserted before the type, keeping the others.
    let with = |extra: &[&str]| {
        let mut modifiers: Vec<_> = extra
            .iter()
            .map(|m| Spanned::new(Name::from(*m), i.opcode.span))
            .chain(i.modifiers.iter().filter(|m| m.value != ".ftz").cloned())
            .collect();
        modifiers.dedup_by(|a, b| a.value == b.value);
        Instruction { modifiers, ..i.clone() }
    };
    match op {
        Opcode::Sin
        | Opcode::Cos
        | Opcode::Lg2
        | Opcode::Ex2
        | Opcode::Rcp
        | Opcode::Sqrt
        | Opcode::Div
            if version < (1, 4) =>
        {
            Some(Legacy::Modes(with(&[".approx", ".ftz"])))
        }
        Opcode::Mad if version < (2, 0) && i.operands.len() == 4 => {
            Some(Legacy::TruncatedMad(with(&[".rn", ".ftz"])))
        }
        _ => None,
    }
}
