//! Random control-flow graphs, for testing the structurizer (and fuzzing anything that
//! consumes kernels): loops, nested loops, several loop exits, switches, early returns,
//! gotos anywhere (irreducible cycles), unreachable blocks.

use ptxvk_frontend::Span;

use crate::abi::KernelAbi;
use crate::ir::*;

/// splitmix64: a small deterministic generator.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// A random kernel with `blocks` blocks. Block `i` has a predicate `%p{i}` and a
/// selector `%s{i}` that its terminator reads, and (unless it is an empty `ret` block)
/// one instruction. Edges go mostly a little forward, sometimes back (loops) and
/// sometimes anywhere (irreducible cycles, gotos into loops).
pub fn kernel(seed: u64, blocks: usize) -> Kernel {
    let mut rng = Rng(seed);
    let n = blocks.max(1);
    let span = Span::default();
    let mut regs = Vec::new();
    for i in 0..n {
        regs.push(RegInfo { name: format!("%p{i}"), ty: RegTy::Pred, span });
        regs.push(RegInfo { name: format!("%s{i}"), ty: RegTy::Int(32), span });
    }
    let scratch = RegId(regs.len() as u32);
    regs.push(RegInfo { name: "%x".into(), ty: RegTy::Int(32), span });
    let target = |rng: &mut Rng, i: usize| -> BlockId {
        let r = rng.below(100);
        let t = if r < 70 {
            i + 1 + rng.below(4) as usize
        } else if r < 88 {
            i.saturating_sub(rng.below(6) as usize)
        } else {
            rng.below(n as u64) as usize
        };
        BlockId(t.min(n - 1) as u32)
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let r = rng.below(100);
        let term = if i + 1 == n || r < 8 {
            Terminator::Return
        } else if r < 30 {
            Terminator::Jump(target(&mut rng, i))
        } else if r < 88 {
            Terminator::Branch {
                cond: RegId(2 * i as u32),
                negate: rng.below(4) == 0,
                if_true: target(&mut rng, i),
                if_false: target(&mut rng, i),
            }
        } else {
            let ncases = 1 + rng.below(4) as u32;
            let cases = (0..ncases).map(|v| (v * 3, target(&mut rng, i))).collect();
            Terminator::Switch {
                selector: RegId(2 * i as u32 + 1),
                cases,
                default: target(&mut rng, i),
            }
        };
        let plain_return = term == Terminator::Return && rng.below(2) == 0;
        let insts = if plain_return {
            Vec::new()
        } else {
            let kind = InstKind::Mov { ty: OpTy::U(32), dst: scratch, src: Value::Imm(i as u64) };
            vec![Inst { kind, span }]
        };
        out.push(Block { label: Some(format!("B{i}")), span, insts, term, term_span: span });
    }
    Kernel {
        regs,
        blocks: out,
        ..Kernel::new(format!("random_{seed}"), span, KernelAbi::default())
    }
}

/// A structured statement of [`structured_kernel`]'s programs.
enum Stmt {
    Code,
    If(Vec<Stmt>, Vec<Stmt>),
    Loop(Vec<Stmt>),
    Switch(Vec<Vec<Stmt>>),
    Break,
    Continue,
    Return,
}

/// A random kernel shaped like compiler output: nested if/else, loops with `break` and
/// `continue`, switches and early returns, lowered to a CFG of about `blocks` blocks.
pub fn structured_kernel(seed: u64, blocks: usize) -> Kernel {
    let mut rng = Rng(seed);
    let mut budget = blocks.max(1) as i64;
    let program = statements(&mut rng, &mut budget, 0, false);
    let mut k = kernel(seed, 0);
    k.blocks.clear();
    k.regs.truncate(0);
    let span = Span::default();
    let scratch = RegId(0);
    k.regs.push(RegInfo { name: "%x".into(), ty: RegTy::Int(32), span });
    let mut b = Builder { k, scratch };
    let exit = b.block(Terminator::Return, true);
    let entry = b.lower(&program, exit, None);
    b.k.entry = entry;
    b.k.name = format!("structured_{seed}");
    b.k
}

fn statements(rng: &mut Rng, budget: &mut i64, depth: usize, in_loop: bool) -> Vec<Stmt> {
    let mut out = Vec::new();
    let len = 1 + rng.below(6);
    for _ in 0..len {
        if *budget <= 0 {
            break;
        }
        let r = rng.below(100);
        let nested = depth < 12;
        out.push(if r < 40 || !nested {
            *budget -= 1;
            Stmt::Code
        } else if r < 65 {
            *budget -= 1;
            let t = statements(rng, budget, depth + 1, in_loop);
            let e = if rng.below(2) == 0 {
                statements(rng, budget, depth + 1, in_loop)
            } else {
                Vec::new()
            };
            Stmt::If(t, e)
        } else if r < 80 {
            *budget -= 2;
            Stmt::Loop(statements(rng, budget, depth + 1, true))
        } else if r < 85 {
            *budget -= 1;
            let n = 2 + rng.below(3);
            Stmt::Switch((0..n).map(|_| statements(rng, budget, depth + 1, in_loop)).collect())
        } else if in_loop && r < 92 {
            if rng.below(2) == 0 {
                Stmt::Break
            } else {
                Stmt::Continue
            }
        } else {
            Stmt::Return
        });
        if matches!(out.last(), Some(Stmt::Break | Stmt::Continue | Stmt::Return)) {
            break;
        }
    }
    out
}

struct Builder {
    k: Kernel,
    scratch: RegId,
}

impl Builder {
    fn block(&mut self, term: Terminator, empty: bool) -> BlockId {
        let span = Span::default();
        let id = BlockId(self.k.blocks.len() as u32);
        let insts = if empty {
            Vec::new()
        } else {
            let kind =
                InstKind::Mov { ty: OpTy::U(32), dst: self.scratch, src: Value::Imm(id.0 as u64) };
            vec![Inst { kind, span }]
        };
        self.k.blocks.push(Block { label: None, span, insts, term, term_span: span });
        id
    }

    fn reg(&mut self, ty: RegTy) -> RegId {
        let id = RegId(self.k.regs.len() as u32);
        self.k.regs.push(RegInfo { name: format!("%c{}", id.0), ty, span: Span::default() });
        id
    }

    /// Lowers `stmts` so that they continue at `next`; returns their entry.
    /// `lp` is the innermost loop's (header, exit).
    fn lower(&mut self, stmts: &[Stmt], next: BlockId, lp: Option<(BlockId, BlockId)>) -> BlockId {
        let mut next = next;
        for s in stmts.iter().rev() {
            next = match s {
                Stmt::Code => self.block(Terminator::Jump(next), false),
                Stmt::Return => self.block(Terminator::Return, false),
                Stmt::Break => self.block(Terminator::Jump(lp.map_or(next, |l| l.1)), false),
                Stmt::Continue => self.block(Terminator::Jump(lp.map_or(next, |l| l.0)), false),
                Stmt::If(t, e) => {
                    let te = self.lower(t, next, lp);
                    let ee = self.lower(e, next, lp);
                    let cond = self.reg(RegTy::Pred);
                    self.block(
                        Terminator::Branch { cond, negate: false, if_true: te, if_false: ee },
                        false,
                    )
                }
                Stmt::Switch(arms) => {
                    let entries: Vec<BlockId> =
                        arms.iter().map(|a| self.lower(a, next, lp)).collect();
                    let selector = self.reg(RegTy::Int(32));
                    let cases =
                        entries.iter().enumerate().skip(1).map(|(i, &e)| (i as u32, e)).collect();
                    self.block(Terminator::Switch { selector, cases, default: entries[0] }, false)
                }
                Stmt::Loop(body) => {
                    // header: test; body; back to header.
                    let header = self.block(Terminator::Return, false);
                    let body_entry = self.lower(body, header, Some((header, next)));
                    let cond = self.reg(RegTy::Pred);
                    self.k.blocks[header.index()].term = Terminator::Branch {
                        cond,
                        negate: false,
                        if_true: body_entry,
                        if_false: next,
                    };
                    header
                }
            };
        }
        next
    }
}

mod indirect;
mod outline;
mod program;

pub use indirect::outline_indirect;
pub use outline::outline;
pub use program::{program, PROGRAM_STEPS, SLOT_BYTES};
