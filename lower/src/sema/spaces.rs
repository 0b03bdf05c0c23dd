//! Address-space inference for generic pointers (DESIGN §5): which state space the
//! generic addresses held by each register can point into, so that a generic `ld`/`st`
//! whose space is provable is lowered as a direct access instead of a run-time test of
//! the address's window.
//!
//! The analysis is flow-insensitive and runs over the kernel's instructions until
//! nothing changes. Each register gets a [`Provenance`]: `Plain` (an integer that is no
//! generic pointer: immediates, special registers, arithmetic on plain values), one
//! space (the result of `cvta.shared`/`cvta.local`, `cvta.global`, a kernel parameter,
//! and pointer arithmetic on such values), or `Unknown` (a loaded value, or a mix of
//! spaces). A plain value used as an address is a global address.

use std::collections::BTreeMap;

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::Name;

/// Where a register's generic addresses may point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Provenance {
    Plain,
    Global,
    Shared,
    Local,
    Unknown,
}

impl Provenance {
    fn join(self, other: Provenance) -> Provenance {
        match (self, other) {
            (Provenance::Plain, x) | (x, Provenance::Plain) => x,
            (a, b) if a == b => a,
            _ => Provenance::Unknown,
        }
    }
}

/// The provenance of every register of `body` that is written at all (registers not in
/// the map are never written: plain).
pub(super) fn infer(body: &[ast::Statement]) -> BTreeMap<Name, Provenance> {
    let mut insts = Vec::new();
    collect(body, &mut insts);
    let mut map: BTreeMap<Name, Provenance> = BTreeMap::new();
    loop {
        let mut changed = false;
        for i in &insts {
            let Some((dst, value)) = definition(i, &map) else { continue };
            let old = map.get(&dst).copied().unwrap_or(Provenance::Plain);
            let new = old.join(value);
            if new != old {
                map.insert(dst, new);
                changed = true;
            }
        }
        if !changed {
            return map;
        }
    }
}

fn collect<'a>(stmts: &'a [ast::Statement], out: &mut Vec<&'a ast::Instruction>) {
    for s in stmts {
        match s {
            ast::Statement::Instruction(i) => out.push(i),
            ast::Statement::Block(inner, _) => collect(inner, out),
            _ => {}
        }
    }
}

fn name_of(op: &Operand) -> Option<&Name> {
    match op {
        Operand::Name { name, component: None } => Some(&name.value),
        _ => None,
    }
}

/// The register `i` writes (its first operand) and the provenance of the value.
fn definition(
    i: &ast::Instruction,
    map: &BTreeMap<Name, Provenance>,
) -> Option<(Name, Provenance)> {
    let dst = name_of(i.operands.first()?)?.clone();
    let of = |k: usize| -> Provenance {
        i.operands
            .get(k)
            .and_then(name_of)
            .and_then(|n| map.get(n).copied())
            .unwrap_or(Provenance::Plain)
    };
    let space = i.modifiers.iter().find_map(|m| StateSpace::from_directive(&m.value));
    let op = i.opcode.value.as_str();
    let value = match op {
        "cvta" if i.has_modifier(".to") => Provenance::Plain,
        "cvta" => match space {
            Some(StateSpace::Shared) => Provenance::Shared,
            Some(StateSpace::Local) => Provenance::Local,
            Some(StateSpace::Global | StateSpace::Const) => Provenance::Global,
            _ => Provenance::Unknown,
        },
        // Kernel parameters hold global pointers (or plain values).
        "ld" | "ldu" if space == Some(StateSpace::Param) => Provenance::Global,
        // A value loaded from memory may be any pointer.
        "ld" | "ldu" | "atom" => Provenance::Unknown,
        // Pointer arithmetic keeps the space of its pointer operand.
        "mov" | "add" | "sub" | "mad" | "selp" | "and" | "or" | "cvt" => {
            (1..i.operands.len()).map(of).fold(Provenance::Plain, Provenance::join)
        }
        _ => Provenance::Plain,
    };
    Some((dst, value))
}
