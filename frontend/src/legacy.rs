//! PTX ISA 1.0-1.3 forms rewritten to the modes that ISA 1.4 made explicit, before
//! their modifiers are decoded ([`crate::decode`]).
//!
//! Modules of ISA 1.0-1.3 write `sin.f32`, `div.f32`, … without the mode that ISA 1.4
//! made required: they are the `.approx.ftz` forms (PTX ISA 9.2 §9.7.3, §9.7.4, the
//! PTX ISA notes of each). `mad.f32` without a rounding (ISA 1.x, sm_1x) is a product
//! truncated to f32, then added with rounding to nearest, subnormals flushed
//! (§9.7.3.6): `mul.rz.ftz` and `add.rn.ftz`.

use crate::ast::{Instruction, Operand};
use crate::instructions::Opcode;
use crate::span::{Name, Spanned};

/// The register name of the product of a PTX ISA 1.x `mad.f32` ([`legacy_default_modes`]).
pub const LEGACY_PRODUCT: &str = "%__ptxvk_mad_product";

/// An instruction of a PTX ISA 1.x module rewritten to the form with its default modes.
#[derive(Debug)]
pub enum Legacy {
    Modes(Instruction),
    /// `mad.f32 d, a, b, c` as `mul.rz.ftz.f32 p, a, b` and `add.rn.ftz.f32 d, p, c`.
    Mad {
        mul: Instruction,
        add: Instruction,
    },
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
    let with = |opcode: Opcode, name: &str, extra: &[&str], operands: Vec<Operand>| {
        let mut modifiers: Vec<_> = extra
            .iter()
            .map(|m| Spanned::new(Name::from(*m), i.opcode.span))
            .chain(i.modifiers.iter().filter(|m| m.value != ".ftz").cloned())
            .collect();
        modifiers.dedup_by(|a, b| a.value == b.value);
        Instruction {
            opcode: Spanned::new(Name::from(name), i.opcode.span),
            op: Some(opcode),
            modifiers,
            operands,
            ..i.clone()
        }
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
            let name = i.opcode.value.clone();
            Some(Legacy::Modes(with(op, &name, &[".approx", ".ftz"], i.operands.clone())))
        }
        Opcode::Mad if version < (2, 0) && i.operands.len() == 4 => {
            let product = Operand::Name {
                name: Spanned::new(Name::from(LEGACY_PRODUCT), i.span),
                component: None,
            };
            let ops = &i.operands;
            let mul_ops = vec![product.clone(), ops[1].clone(), ops[2].clone()];
            let mut mul = with(Opcode::Mul, "mul", &[".rz", ".ftz"], mul_ops);
            mul.modifiers.retain(|m| m.value != ".sat");
            let add_ops = vec![ops[0].clone(), product, ops[3].clone()];
            Some(Legacy::Mad { mul, add: with(Opcode::Add, "add", &[".rn", ".ftz"], add_ops) })
        }
        _ => None,
    }
}
