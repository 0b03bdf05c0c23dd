//! `ld`, `st` and `ldu` (PTX ISA 9.2 §9.7.9.8-10): the form checked and classified in
//! the frontend (`ptxvk_frontend::forms::memory`: strength, vectors, operand counts);
//! here state spaces, operands, and generic addresses dispatched on the window they
//! point into.

use ptxvk_frontend::forms::memory::{access_form, vector_error, Strength};

use super::{ast, md, Diagnostic, Modifier, Mods, Opcode, Operand, RegId, Resolver, StateSpace};
use crate::ir::{AtomicOp, InstKind, OpTy, Order, Scope, Space, Value, VectorAtomic};

impl Resolver<'_> {
    pub(super) fn memory(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let ty = self.bits_type(i, m)?;
        let space = m.space.as_ref().map(|s| s.value);
        let shape = access_form(i, op, &m.details, &m.types, space, m.vector)?;
        // Every cluster is one CTA (`sema::cluster`); `.volatile` is `.relaxed.sys`.
        let strength = shape.strength.map(|(order, scope)| {
            let order = match order {
                Strength::Relaxed => Order::Relaxed,
                Strength::Acquire => Order::Acquire,
                Strength::Release => Order::Release,
            };
            let scope = match scope {
                Some(md::Scope::Cta | md::Scope::Cluster) => Scope::Cta,
                Some(md::Scope::Gpu) => Scope::Gpu,
                _ => Scope::Sys,
            };
            (order, scope)
        });
        if m.has(Modifier::MemoryOrder(md::MemoryOrder::Volatile)) {
            self.kernel.volatile_accesses.push(span);
        }
        if op == Opcode::Ld && strength.is_some() {
            self.kernel.polling_reads.push(span);
        }
        // Generic addresses are global addresses unless the kernel makes generic
        // addresses of shared or local memory; then they dispatch on the window.
        let ops = &i.operands;
        let addr_operand = if op == Opcode::St { ops.first() } else { ops.get(1) };
        // A generic access through a variable's name (`st.u64 [local_x], …`) is an access
        // of the variable's space: its generic address lies in that space's window.
        let named = match m.space {
            None => addr_operand.and_then(|a| self.variable_space(a)),
            Some(_) => None,
        };
        let generic = m.space.is_none() && named.is_none();
        let space = space.or(named).unwrap_or(StateSpace::Global);
        let n = shape.elements;
        if shape.wide && space != StateSpace::Global {
            return Err(vector_error(span, n, ty.bits()));
        }
        let (data, addr) = if op == Opcode::St { (&ops[1], &ops[0]) } else { (&ops[0], &ops[1]) };
        let (ir_space, address) = self.address(addr, space)?;
        if op == Opcode::St && ir_space == Space::Param {
            return Err(Diagnostic::error(span, "kernel parameters are read-only"));
        }
        let elems = match data {
            Operand::Vector(v, _) => v.iter().collect(),
            d => vec![d],
        };
        // A float access of a wider bit-size register moves the same bits as the
        // bit-size access of its width (§5.2.2's relaxed rules: the low bits, and zeros
        // above them).
        let ty = if elems.iter().any(|e| self.float_in_wider_register(e, ty)) {
            OpTy::U(ty.bits() as u8)
        } else {
            ty
        };
        let data = if op == Opcode::St {
            let srcs: Vec<Value> =
                elems.iter().map(|e| self.src(e, ty, true, span)).collect::<Result<_, _>>()?;
            Data::Store(srcs)
        } else {
            let dsts: Vec<Option<RegId>> = elems
                .iter()
                .map(|e| match e {
                    Operand::Sink(_) => Ok(None),
                    e => self.dst(e, ty, true).map(Some),
                })
                .collect::<Result<_, _>>()?;
            Data::Load(dsts)
        };
        let generic = generic && self.facts.generic_windows;
        if ir_space == Space::Local || generic {
            // A local access needs a window even when the kernel declares no `.local`
            // variable (its addresses are then out of range, which PTX leaves undefined).
            self.kernel.local_bytes = self.kernel.local_bytes.max(4);
        }
        // A generic access (of a 32-bit address in a module with 32-bit addresses, which
        // `pass::widen_generic` widens): `pass::infer_spaces` makes it a direct one where
        // it proves the space, `pass::expand_generic` a test of the address's window
        // where not.
        let space = if generic { Space::Generic } else { ir_space };
        let addr = address;
        let inst = match (data, strength) {
            (Data::Load(dsts), None) => InstKind::Load { space, ty, dsts, addr },
            (Data::Store(srcs), None) => InstKind::Store { space, ty, srcs, addr },
            // A strong access (PTX ISA 9.2 §8.4): an atomic load or store, which
            // `pass::expand_strong` makes a plain access and a fence where SPIR-V has no
            // atomic of its width.
            (data, Some((order, scope))) => {
                let (op, srcs, dsts) = match data {
                    Data::Load(d) => (AtomicOp::Load, vec![Value::Imm(0); d.len()], d),
                    Data::Store(s) => {
                        let dsts = vec![None; s.len()];
                        (AtomicOp::Store, s, dsts)
                    }
                };
                let cmp = Value::Imm(0);
                let a = VectorAtomic { op, space, ty, scope, order, dsts, addr, srcs, cmp };
                match a.srcs.len() {
                    1 => a.element(0),
                    _ => InstKind::VectorAtomic(Box::new(a)),
                }
            }
        };
        self.push(inst, span);
        Ok(())
    }
}

/// The data of an access: the values a store writes, or the registers a load fills
/// (`None` for a sink).
enum Data {
    Store(Vec<Value>),
    Load(Vec<Option<RegId>>),
}
