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
        name: format!("random_{seed}"),
        span,
        abi: KernelAbi::default(),
        regs,
        blocks: out,
        entry: BlockId(0),
        shared: SharedLayout::default(),
        reqntid: None,
        maxntid: None,
    }
}
