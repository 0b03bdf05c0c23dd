//! Block uniformity of control flow, for workgroup barriers: `bar.sync` and emulated
//! warp collectives (`docs/architecture.md`, *Warp modes*).
//!
//! `sema::warp` emulates a warp collective with workgroup barriers
//! ([`InstKind::WarpBarrier`]), and `bar.sync` is one ([`InstKind::Barrier`]); every
//! thread of the block must reach each ([`InstKind::is_block_barrier`]). CUDA lets the
//! threads that have exited miss a `bar.sync`; SPIR-V does not, and lavapipe ends the
//! whole block once a subgroup has returned before a barrier. This pass proves that
//! each barrier is in block-uniform control flow; where it cannot,
//! `crate::pass::predicate` rewrites the kernel and this pass checks the result again (a
//! failure then is a ptxvk bug, reported at the barrier).
//!
//! The analysis runs over the structured body until nothing changes:
//! * a register is *varying* when it is written from `%tid`, from local memory, by an
//!   atomic, from a varying register, or under divergent control flow; everything else
//!   (parameters, `%ntid`, `%ctaid`, constants, loads from uniform addresses) is
//!   uniform;
//! * control is *divergent* inside an `if`/`switch` on a varying value, in a loop that
//!   some threads may leave or continue earlier than others, and after a `return`
//!   (or a `break` out of the enclosing loop) that only some threads take.

use ptxvk_frontend::Diagnostic;

use crate::ir::Node;
use crate::ir::{InstKind, Kernel, RegId, Space, SpecialReg};
use crate::verify::inst_defs_uses;

/// Checks that every block barrier of `kernel` is in block-uniform control flow.
pub fn check(kernel: &Kernel, body: &[Node]) -> Result<(), Vec<Diagnostic>> {
    let has_barrier =
        kernel.blocks.iter().any(|b| b.insts.iter().any(|i| i.kind.is_block_barrier()));
    if !has_barrier {
        return Ok(());
    }
    let mut a = Analysis {
        kernel,
        varying: vec![false; kernel.regs.len()],
        changed: true,
        report: false,
        errors: Vec::new(),
    };
    while a.changed {
        a.changed = false;
        a.sequence(body, false);
    }
    a.report = true;
    a.sequence(body, false);
    if a.errors.is_empty() {
        Ok(())
    } else {
        Err(a.errors)
    }
}

struct Analysis<'k> {
    kernel: &'k Kernel,
    varying: Vec<bool>,
    changed: bool,
    /// Report collectives in divergent control (once the registers are final).
    report: bool,
    errors: Vec<Diagnostic>,
}

/// How a node sequence may end early for some threads only.
#[derive(Clone, Copy, Default)]
struct Exits {
    /// Some threads may have returned.
    returned: bool,
    /// Some threads may have left or continued the innermost enclosing loop.
    left_loop: bool,
}

impl Analysis<'_> {
    fn is_varying(&self, r: RegId) -> bool {
        self.varying[r.index()]
    }

    fn mark(&mut self, r: RegId) {
        if !self.varying[r.index()] {
            self.varying[r.index()] = true;
            self.changed = true;
        }
    }

    /// Walks `nodes` in control context `divergent`.
    fn sequence(&mut self, nodes: &[Node], mut divergent: bool) -> Exits {
        let mut exits = Exits::default();
        for node in nodes {
            let e = self.node(node, divergent);
            exits.returned |= e.returned;
            exits.left_loop |= e.left_loop;
            // Threads that left no longer take part in what follows.
            divergent |= e.returned || e.left_loop;
        }
        exits
    }

    fn node(&mut self, node: &Node, divergent: bool) -> Exits {
        match node {
            Node::Code(b) => {
                let block = &self.kernel.blocks[b.index()];
                for inst in &block.insts {
                    self.instruction(&inst.kind, divergent, inst.span);
                }
                Exits::default()
            }
            Node::If { cond, then, otherwise, .. } => {
                let inner = divergent || self.is_varying(*cond);
                let a = self.sequence(then, inner);
                let b = self.sequence(otherwise, inner);
                a.union(b)
            }
            Node::Switch { selector, cases, .. } => {
                let inner = divergent || self.is_varying(*selector);
                let mut exits = Exits::default();
                for c in cases {
                    exits = exits.union(self.sequence(&c.body, inner));
                }
                exits
            }
            Node::Loop { body, .. } => {
                // A loop that some threads leave or continue early is divergent
                // throughout: their iteration counts differ.
                let first = self.sequence(body, divergent);
                let returned = if first.left_loop && !divergent {
                    self.sequence(body, true).returned
                } else {
                    first.returned
                };
                Exits { returned, left_loop: false }
            }
            // A `break`, `continue` or `return` only some threads take (those in
            // divergent control) splits the threads; one that all take does not.
            Node::Break | Node::Continue => Exits { returned: false, left_loop: divergent },
            Node::Return => Exits { returned: divergent, left_loop: false },
        }
    }

    fn instruction(&mut self, kind: &InstKind, divergent: bool, span: ptxvk_frontend::Span) {
        if kind.is_block_barrier() {
            // One diagnostic per collective or barrier (a collective has two barriers).
            let reported = self.errors.last().is_some_and(|d| d.span == span);
            if divergent && self.report && !reported {
                self.errors.push(
                    Diagnostic::internal(
                        span,
                        "this barrier or warp collective is still in control flow that \
                         not every thread of the block reaches after predication",
                    )
                    .with_note(
                        "every thread of the block must reach a workgroup barrier; please \
                         report this kernel",
                    ),
                );
            }
            return;
        }
        let mut defs = Vec::new();
        let mut uses = Vec::new();
        inst_defs_uses(kind, &mut defs, &mut uses);
        let source = match kind {
            InstKind::Special { reg, .. } => {
                matches!(reg, SpecialReg::Tid(_) | SpecialReg::DeviceClock)
            }
            InstKind::Atomic { .. } => true,
            InstKind::Load { space, .. } => *space == Space::Local,
            _ => false,
        };
        if divergent || source || uses.iter().any(|&u| self.is_varying(u)) {
            for d in defs {
                self.mark(d);
            }
        }
    }
}

impl Exits {
    fn union(self, other: Exits) -> Exits {
        Exits {
            returned: self.returned || other.returned,
            left_loop: self.left_loop || other.left_loop,
        }
    }
}
