//! Interpreters of control flow: the CFG IR and the structured IR, driven by the same
//! decisions, so that a test can check that structuring keeps the path through the
//! original blocks.
//!
//! Only control flow is modelled. Each original block, when it runs, draws the value
//! its terminator tests (a branch's predicate, a switch's selector) from a decision
//! function of (block, how often it has run); the structured interpreter sets that
//! register when the block's code starts, then runs the instructions the
//! structurizer's passes added (`mov`, `selp`, `setp.eq`) for real.

use crate::ir::Node;
use crate::ir::*;

/// What a block's terminator is told to do on its `visit`-th execution.
pub type Decide<'a> = &'a dyn Fn(usize, u32) -> u64;

/// The decided value for `term` at this visit: a predicate (0/1) or a selector that is
/// one of the case values or, for the default, a value no case has.
fn decided_value(term: &Terminator, d: u64) -> Option<(RegId, u64)> {
    match term {
        Terminator::Branch { cond, .. } => Some((*cond, d & 1)),
        Terminator::Switch { selector, cases, .. } => {
            let i = (d % (cases.len() as u64 + 1)) as usize;
            let v = cases.get(i).map_or(u32::MAX as u64, |c| c.0 as u64);
            Some((*selector, v))
        }
        _ => None,
    }
}

/// Runs the CFG of `k` from its entry and returns the blocks it executes, stopping at a
/// `ret` (an empty `ret` block is not listed) or after `limit` blocks.
pub fn run_cfg(k: &Kernel, decide: Decide<'_>, limit: usize) -> Vec<usize> {
    let mut visits = vec![0u32; k.blocks.len()];
    let mut trace = Vec::new();
    let mut b = k.entry.index();
    while trace.len() < limit {
        if crate::cfg::is_plain_return(k, b) {
            break;
        }
        trace.push(b);
        visits[b] += 1;
        let term = &k.blocks[b].term;
        let value = decided_value(term, decide(b, visits[b]));
        b = match term {
            Terminator::Return => break,
            Terminator::Jump(t) => t.index(),
            Terminator::Branch { negate, if_true, if_false, .. } => {
                let c = value.is_some_and(|v| v.1 != 0) != *negate;
                if c {
                    if_true.index()
                } else {
                    if_false.index()
                }
            }
            Terminator::Switch { cases, default, .. } => {
                let v = value.map_or(0, |v| v.1) as u32;
                cases.iter().find(|c| c.0 == v).map_or(default.index(), |c| c.1.index())
            }
        };
    }
    trace
}

#[derive(Debug, PartialEq)]
enum Flow {
    Normal,
    Break,
    Continue,
    Return,
    /// The trace limit was reached, or the step budget (a structuring bug that spins).
    Stop,
}

struct Structured<'a> {
    k: &'a Kernel,
    /// The terminators of the original blocks, before the structurizer rewrote them.
    original: &'a [Terminator],
    decide: Decide<'a>,
    regs: Vec<u64>,
    visits: Vec<u32>,
    trace: Vec<usize>,
    limit: usize,
    steps: usize,
}

/// Runs structured `nodes` of `k` (after structuring; blocks `0..original.len()` are
/// the original ones, whose terminators were `original`) with the same decisions and
/// returns the original blocks it executes. `Err` if it spins without running any.
pub fn run_structured(
    k: &Kernel,
    original: &[Terminator],
    nodes: &[Node],
    decide: Decide<'_>,
    limit: usize,
) -> Result<Vec<usize>, String> {
    let mut s = Structured {
        k,
        original,
        decide,
        regs: vec![0; k.regs.len()],
        visits: vec![0; k.blocks.len()],
        trace: Vec::new(),
        limit,
        steps: 0,
    };
    let flow = s.nodes(nodes);
    if s.steps > s.budget() {
        return Err(format!("no progress after {} steps (trace {:?})", s.steps, s.trace));
    }
    match flow {
        Flow::Return | Flow::Stop | Flow::Normal => Ok(s.trace),
        other => Err(format!("control left the kernel with {other:?}")),
    }
}

impl Structured<'_> {
    fn budget(&self) -> usize {
        (self.limit + 1) * (self.k.blocks.len() + 8) * 4
    }

    fn value(&self, v: Value) -> u64 {
        match v {
            Value::Imm(x) => x,
            Value::Reg(r) => self.regs[r.index()],
        }
    }

    fn code(&mut self, b: usize) -> Flow {
        // Empty `ret` blocks are not listed, as in `run_cfg`.
        let mut decided = None;
        if b < self.original.len() && !crate::cfg::is_plain_return(self.k, b) {
            if self.trace.len() >= self.limit {
                return Flow::Stop;
            }
            self.trace.push(b);
            self.visits[b] += 1;
            if let Some((r, v)) = decided_value(&self.original[b], (self.decide)(b, self.visits[b]))
            {
                self.regs[r.index()] = v;
                decided = Some(r);
            }
        }
        // The decision stands for however the block computed its condition: writes to
        // that register are skipped.
        for inst in &self.k.blocks[b].insts {
            let (dst, v) = match &inst.kind {
                InstKind::Mov { dst, src, .. } => (*dst, self.value(*src)),
                InstKind::Select { dst, a, b, cond, negate, .. } => {
                    let c = (self.regs[cond.index()] != 0) != *negate;
                    (*dst, if c { self.value(*a) } else { self.value(*b) })
                }
                InstKind::Setp { cmp: CmpOp::Eq, dst: Some(d), lhs, rhs, .. } => {
                    (*d, (self.value(*lhs) == self.value(*rhs)) as u64)
                }
                _ => continue,
            };
            if Some(dst) != decided {
                self.regs[dst.index()] = v;
            }
        }
        Flow::Normal
    }

    fn nodes(&mut self, nodes: &[Node]) -> Flow {
        for n in nodes {
            self.steps += 1;
            if self.steps > self.budget() {
                return Flow::Stop;
            }
            let flow = match n {
                Node::Code(b) => self.code(b.index()),
                Node::Break => Flow::Break,
                Node::Continue => Flow::Continue,
                Node::Return => Flow::Return,
                Node::If { cond, negate, then, otherwise, .. } => {
                    if (self.regs[cond.index()] != 0) != *negate {
                        self.nodes(then)
                    } else {
                        self.nodes(otherwise)
                    }
                }
                Node::Switch { selector, cases, .. } => {
                    match switch_case(cases, self.regs[selector.index()] as u32) {
                        Some(c) => self.nodes(&c.body),
                        None => Flow::Normal,
                    }
                }
                Node::Loop { body, .. } => loop {
                    match self.nodes(body) {
                        Flow::Break => break Flow::Normal,
                        Flow::Normal | Flow::Continue => {
                            if self.steps > self.budget() {
                                break Flow::Stop;
                            }
                        }
                        other => break other,
                    }
                },
            };
            if flow != Flow::Normal {
                return flow;
            }
        }
        Flow::Normal
    }
}

/// The case of a structured switch that `v` selects: the one listing it, else the
/// default one.
pub fn switch_case(cases: &[SwitchCase], v: u32) -> Option<&SwitchCase> {
    cases.iter().find(|c| c.values.contains(&v)).or_else(|| cases.iter().find(|c| c.is_default))
}
