//! Address-space inference for generic pointers (`docs/architecture.md`, *The launch
//! ABI*): which state space the generic addresses held by each register can point into,
//! so that a generic `ld`/`st` whose space is provable is lowered as a direct access
//! instead of a run-time test of the address's window.
//!
//! The analysis is flow-insensitive and runs over one function's instructions until
//! nothing changes (each device function separately: its registers are its own). Each register gets a [`Provenance`]: `Plain` (an integer that is no
//! generic pointer: immediates, special registers, arithmetic on plain values), one
//! space (the result of `cvta.shared`/`cvta.local`, `cvta.global`, a kernel parameter,
//! and pointer arithmetic on such values), or `Unknown` (a loaded value, or a mix of
//! spaces). A plain value used as an address is a global address.

use std::collections::{BTreeMap, BTreeSet};

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::modifier::{Conversion, Modifier};
use ptxvk_frontend::Name;
use ptxvk_frontend::{decode, Opcode};

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

/// The provenance of every register of the kernel `f` that is written at all
/// (registers not in the map are never written: plain).
pub(super) fn infer(f: &ast::Function) -> BTreeMap<Name, Provenance> {
    let params = f.params.iter().flat_map(|p| &p.names).map(|n| n.name.value.clone());
    let kernel = Some(params.collect());
    infer_in(f.body.as_deref().unwrap_or(&[]), BTreeMap::new(), kernel.as_ref())
}

/// The same for a device function, whose `.reg` parameters and `.param` loads may hold
/// any pointer its callers pass.
pub(super) fn infer_function(f: &ast::Function) -> BTreeMap<Name, Provenance> {
    let params = f.params.iter().chain(&f.returns).filter(|p| p.space == StateSpace::Reg);
    let seeds = params.flat_map(|p| &p.names).map(|n| (n.name.value.clone(), Provenance::Unknown));
    infer_in(f.body.as_deref().unwrap_or(&[]), seeds.collect(), None)
}

/// `kernel_params`: the kernel's parameters, whose loads give global pointers; `None`
/// in a device function, whose `.param` parameters hold whatever its callers pass.
fn infer_in(
    body: &[ast::Statement],
    mut map: BTreeMap<Name, Provenance>,
    kernel_params: Option<&BTreeSet<Name>>,
) -> BTreeMap<Name, Provenance> {
    let mut insts = Vec::new();
    collect(body, &mut insts);
    loop {
        let mut changed = false;
        for i in &insts {
            for (dst, value) in definitions(i, &map, kernel_params) {
                let old = map.get(&dst).copied().unwrap_or(Provenance::Plain);
                let new = old.join(value);
                if new != old {
                    map.insert(dst, new);
                    changed = true;
                }
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

/// The variable an `ld` reads (the base of its address).
fn loads_from(i: &ast::Instruction) -> Option<&Name> {
    match i.operands.get(1)? {
        Operand::Address(a) => a.base.as_ref().map(|b| &b.value),
        _ => None,
    }
}

fn name_of(op: &Operand) -> Option<&Name> {
    match op {
        Operand::Name { name, component: None } => Some(&name.value),
        _ => None,
    }
}

/// The registers `i` writes and the provenance of their values.
fn definitions(
    i: &ast::Instruction,
    map: &BTreeMap<Name, Provenance>,
    kernel_params: Option<&BTreeSet<Name>>,
) -> Vec<(Name, Provenance)> {
    // A call's `.reg` results may be any pointer.
    if let (Some(Operand::List(rets, _)), Some(Opcode::Call)) = (i.operands.first(), i.op) {
        return rets.iter().filter_map(name_of).map(|n| (n.clone(), Provenance::Unknown)).collect();
    }
    definition(i, map, kernel_params).into_iter().collect()
}

/// The register `i` writes (its first operand) and the provenance of the value.
fn definition(
    i: &ast::Instruction,
    map: &BTreeMap<Name, Provenance>,
    kernel_params: Option<&BTreeSet<Name>>,
) -> Option<(Name, Provenance)> {
    let dst = name_of(i.operands.first()?)?.clone();
    let of = |k: usize| -> Provenance {
        i.operands
            .get(k)
            .and_then(name_of)
            .and_then(|n| map.get(n).copied())
            .unwrap_or(Provenance::Plain)
    };
    let Some(op) = i.op else { return Some((dst, Provenance::Plain)) };
    let decoded = decode::decode(i).ok().flatten();
    let space = decoded.as_ref().and_then(|m| m.space.as_ref()).map(|s| s.value);
    let to = decoded.is_some_and(|m| m.has(Modifier::Conversion(Conversion::To)));
    let value = match op {
        Opcode::Cvta if to => Provenance::Plain,
        Opcode::Cvta => match space {
            Some(StateSpace::Shared) => Provenance::Shared,
            Some(StateSpace::Local) => Provenance::Local,
            Some(StateSpace::Global | StateSpace::Const) => Provenance::Global,
            _ => Provenance::Unknown,
        },
        // Kernel parameters hold global pointers (or plain values). A device function's
        // `.param` parameters hold whatever its callers pass, and so do the `.param`
        // results of a call (`ld.param [retval0]`, which may return a generic pointer to
        // local memory, as nvcc -G's `std::forward` does).
        Opcode::Ld | Opcode::Ldu
            if space == Some(StateSpace::Param)
                && kernel_params.is_some_and(|k| loads_from(i).is_some_and(|n| k.contains(n))) =>
        {
            Provenance::Global
        }
        // A value loaded from memory may be any pointer.
        Opcode::Ld | Opcode::Ldu | Opcode::Atom => Provenance::Unknown,
        // Pointer arithmetic keeps the space of its pointer operand.
        Opcode::Mov
        | Opcode::Add
        | Opcode::Sub
        | Opcode::Mad
        | Opcode::Selp
        | Opcode::And
        | Opcode::Or
        | Opcode::Cvt => (1..i.operands.len()).map(of).fold(Provenance::Plain, Provenance::join),
        _ => Provenance::Plain,
    };
    Some((dst, value))
}
