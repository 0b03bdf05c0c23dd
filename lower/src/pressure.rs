//! Register pressure: the most 32-bit register words live at one point of a kernel.
//!
//! CUDA reports how many registers ptxas allocated for a kernel
//! (`cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS)`); on Vulkan the driver allocates
//! registers when it compiles the SPIR-V and reports nothing, so ptxvk reports this
//! estimate instead: classic backward liveness over the CFG IR (a register is live
//! from a use back to its definitions), each live register counted in 32-bit words
//! (64-bit ones take two, predicates none: they have their own file on NVIDIA GPUs),
//! capped at the kernel's `.maxnreg` (PTX ISA 9.2 §11.4.4), which ptxas honours by
//! spilling.

use crate::ir::{Kernel, RegTy, Terminator};
use crate::verify::inst_defs_uses;

/// A set of registers as a bitset.
#[derive(Clone, PartialEq, Eq)]
struct Set(Vec<u64>);

impl Set {
    fn new(n: usize) -> Set {
        Set(vec![0; n.div_ceil(64)])
    }
    /// Adds `r`; whether it was absent.
    fn insert(&mut self, r: usize) -> bool {
        let (word, bit) = (&mut self.0[r / 64], 1 << (r % 64));
        let absent = *word & bit == 0;
        *word |= bit;
        absent
    }
    /// Removes `r`; whether it was present.
    fn remove(&mut self, r: usize) -> bool {
        let (word, bit) = (&mut self.0[r / 64], 1 << (r % 64));
        let present = *word & bit != 0;
        *word &= !bit;
        present
    }
    fn contains(&self, r: usize) -> bool {
        self.0[r / 64] & (1 << (r % 64)) != 0
    }
    fn clear(&mut self) {
        self.0.fill(0);
    }
    fn union(&mut self, other: &Set) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a |= b);
    }
    /// The members in increasing order, a step per member (not per bit).
    fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            let mut rest = bits;
            std::iter::from_fn(move || {
                let bit = rest.trailing_zeros() as usize;
                rest &= rest.wrapping_sub(1);
                (bit < 64).then_some(w * 64 + bit)
            })
        })
    }
}

fn words(ty: RegTy) -> u32 {
    match ty {
        RegTy::Pred => 0,
        RegTy::Int(b) | RegTy::Float(b) => u32::from(b).div_ceil(32),
    }
}

fn term_use(t: &Terminator) -> Option<usize> {
    match t {
        Terminator::Branch { cond, .. } => Some(cond.index()),
        Terminator::Switch { selector, .. } => Some(selector.index()),
        Terminator::Jump(_) | Terminator::Return => None,
    }
}

/// What each block of `k` reads before writing it (its upward-exposed registers) and
/// what it writes, as lists of registers below `n`.
fn block_reads_writes(k: &Kernel, n: usize) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
    let (mut reads, mut writes) = (Set::new(n), Set::new(n));
    let (mut defs, mut uses, mut touched) = (Vec::new(), Vec::new(), Vec::new());
    let (mut all_reads, mut all_writes) = (Vec::new(), Vec::new());
    for block in &k.blocks {
        touched.clear();
        touched.extend(term_use(&block.term).filter(|&r| r < n));
        touched.iter().for_each(|&r| _ = reads.insert(r));
        for inst in block.insts.iter().rev() {
            defs.clear();
            uses.clear();
            inst_defs_uses(&inst.kind, &mut defs, &mut uses);
            for r in defs.iter().map(|r| r.index()).filter(|&r| r < n) {
                reads.remove(r);
                writes.insert(r);
                touched.push(r);
            }
            for r in uses.iter().map(|r| r.index()).filter(|&r| r < n) {
                reads.insert(r);
                touched.push(r);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        all_reads.push(touched.iter().copied().filter(|&r| reads.contains(r)).collect());
        all_writes.push(touched.iter().copied().filter(|&r| writes.contains(r)).collect());
        for &r in &touched {
            reads.remove(r);
            writes.remove(r);
        }
    }
    (all_reads, all_writes)
}

/// Each block's position in a postorder of the graph with `successors` from block 0
/// (unreachable blocks after the rest).
fn postorder_ranks(successors: &[Vec<usize>]) -> Vec<usize> {
    let mut rank = vec![usize::MAX; successors.len()];
    let mut seen = vec![false; successors.len()];
    let mut next = 0;
    for root in 0..successors.len() {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        // (block, its next successor to visit)
        let mut stack = vec![(root, 0)];
        while let Some((b, i)) = stack.pop() {
            match successors[b].get(i) {
                Some(&s) => {
                    stack.push((b, i + 1));
                    if !seen[s] {
                        seen[s] = true;
                        stack.push((s, 0));
                    }
                }
                None => {
                    rank[b] = next;
                    next += 1;
                }
            }
        }
    }
    rank
}

/// The most 32-bit words of registers live at once in `k` (at least 1), capped at
/// `k.maxnreg`.
///
/// Only registers some block reads before writing them can be live between blocks,
/// so the fixed point runs on sets of those alone (checked kernels have tens of
/// thousands of blocks and registers, nearly all of them a block's own temporaries),
/// with a worklist: a block is visited again only when a successor's set grew.
pub fn max_live_words(k: &Kernel) -> u32 {
    let n = k.regs.len();
    let blocks = k.blocks.len();
    let weight: Vec<u32> = k.regs.iter().map(|r| words(r.ty)).collect();
    let (reads, writes) = block_reads_writes(k, n);
    // The registers live across blocks, numbered densely.
    let mut dense = vec![usize::MAX; n];
    let mut across = Vec::new();
    for &r in reads.iter().flatten() {
        if dense[r] == usize::MAX {
            dense[r] = across.len();
            across.push(r);
        }
    }
    let g = across.len();
    // Each block's reads and writes among them, as lists: most blocks touch few.
    let to_dense = |regs: &[usize]| -> Vec<usize> {
        regs.iter().map(|&r| dense[r]).filter(|&d| d != usize::MAX).collect()
    };
    let used: Vec<Vec<usize>> = reads.iter().map(|r| to_dense(r)).collect();
    let written: Vec<Vec<usize>> = writes.iter().map(|w| to_dense(w)).collect();
    let successors: Vec<Vec<usize>> = k
        .blocks
        .iter()
        .map(|b| b.term.successors().iter().map(|s| s.index()).filter(|&s| s < blocks).collect())
        .collect();
    let mut predecessors = vec![Vec::new(); blocks];
    for (b, succ) in successors.iter().enumerate() {
        for &s in succ {
            predecessors[s].push(b);
        }
    }
    let live_out = |b: usize, live_in: &[Set], out: &mut Set| {
        out.clear();
        successors[b].iter().for_each(|&s| out.union(&live_in[s]));
    };
    // Registers live into each block, to a fixed point: the worklist visits blocks in
    // postorder (successors first, so a pass round a loop mostly finds them done).
    let rank = postorder_ranks(&successors);
    let mut live_in: Vec<Set> = vec![Set::new(g); blocks];
    let mut queued = vec![true; blocks];
    let mut work: std::collections::BTreeSet<(usize, usize)> =
        (0..blocks).map(|b| (rank[b], b)).collect();
    let mut live = Set::new(g);
    while let Some((_, b)) = work.pop_first() {
        queued[b] = false;
        live_out(b, &live_in, &mut live);
        written[b].iter().for_each(|&d| _ = live.remove(d));
        used[b].iter().for_each(|&d| _ = live.insert(d));
        if live != live_in[b] {
            std::mem::swap(&mut live_in[b], &mut live);
            for &p in &predecessors[b] {
                if !queued[p] {
                    queued[p] = true;
                    work.insert((rank[p], p));
                }
            }
        }
    }
    // Each block walked backwards from what is live out of it, with the words live
    // kept up to date as registers come and go (summing the set at every instruction
    // would be quadratic in big kernels).
    let mut most = 0;
    let (mut full, mut entered) = (Set::new(n), Vec::new());
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    for (b, block) in k.blocks.iter().enumerate() {
        live_out(b, &live_in, &mut live);
        let mut words_live: u32 = 0;
        let mut enter = |r: usize, full: &mut Set, words_live: &mut u32| {
            if full.insert(r) {
                *words_live += weight[r];
                entered.push(r);
            }
        };
        for r in live.members().map(|d| across[d]) {
            enter(r, &mut full, &mut words_live);
        }
        if let Some(r) = term_use(&block.term).filter(|&r| r < n) {
            enter(r, &mut full, &mut words_live);
        }
        most = most.max(words_live);
        for inst in block.insts.iter().rev() {
            defs.clear();
            uses.clear();
            inst_defs_uses(&inst.kind, &mut defs, &mut uses);
            for r in defs.iter().map(|r| r.index()).filter(|&r| r < n) {
                if full.remove(r) {
                    words_live -= weight[r];
                }
            }
            for r in uses.iter().map(|r| r.index()).filter(|&r| r < n) {
                enter(r, &mut full, &mut words_live);
            }
            most = most.max(words_live);
        }
        entered.drain(..).for_each(|r| _ = full.remove(r));
    }
    let most = most.max(1);
    k.maxnreg.map_or(most, |cap| most.min(cap.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(ptx: &str) -> Kernel {
        let src = format!(".version 7.0\n.target sm_70\n.address_size 64\n{ptx}");
        let module = ptxvk_frontend::parse(&src).expect("parses");
        crate::sema::run(&module).expect("lowers").kernels.remove(0)
    }

    #[test]
    fn counts_the_words_live_at_once_not_the_registers_declared() {
        // %r1..%r4 are live together (4 words) before the adds; %rd1 (2 words) with
        // the sum afterwards. Ten registers are declared.
        let k = kernel(
            ".entry k(.param .u64 p) {\n .reg .b32 %r<10>;\n .reg .b64 %rd<3>;\n\
             ld.param.u64 %rd1, [p];\n\
             ld.global.u32 %r1, [%rd1];\n ld.global.u32 %r2, [%rd1+4];\n\
             ld.global.u32 %r3, [%rd1+8];\n ld.global.u32 %r4, [%rd1+12];\n\
             add.s32 %r5, %r1, %r2;\n add.s32 %r6, %r3, %r4;\n add.s32 %r7, %r5, %r6;\n\
             st.global.u32 [%rd1], %r7;\n ret;\n}\n",
        );
        // At the second add: %rd1 (2) + %r3, %r4, %r5 (3); before it: %rd1 + %r1..%r4
        // would be 6 only if %r1/%r2 outlived their add, which they do not. Lowering
        // may add temporaries, so allow a word or two of slack above the PTX's 6.
        let live = max_live_words(&kernel_without_cap(k));
        assert!((6..=8).contains(&live), "{live}");
    }

    /// Liveness at every instruction, from per-instruction sets iterated to a fixed
    /// point over the whole CFG: the words of the largest set.
    fn model(k: &Kernel) -> u32 {
        use std::collections::BTreeSet;
        let weight = |r: &u32| words(k.regs[*r as usize].ty);
        let mut live_in: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); k.blocks.len()];
        let mut most = 0;
        let mut changed = true;
        while changed {
            changed = false;
            for (b, block) in k.blocks.iter().enumerate() {
                let succ = block.term.successors();
                let mut live: BTreeSet<u32> =
                    succ.iter().flat_map(|s| live_in[s.index()].iter().copied()).collect();
                live.extend(term_use(&block.term).map(|r| r as u32));
                most = most.max(live.iter().map(weight).sum());
                for inst in block.insts.iter().rev() {
                    let (mut defs, mut uses) = (Vec::new(), Vec::new());
                    inst_defs_uses(&inst.kind, &mut defs, &mut uses);
                    defs.iter().for_each(|d| _ = live.remove(&d.0));
                    live.extend(uses.iter().map(|u| u.0));
                    most = most.max(live.iter().map(weight).sum());
                }
                if live != live_in[b] {
                    live_in[b] = live;
                    changed = true;
                }
            }
        }
        most.max(1)
    }

    #[test]
    fn random_cfgs_count_what_a_per_instruction_model_counts() {
        use crate::ir::{Inst, InstKind, OpTy, RegId, RegInfo, Value};
        use crate::random_cfg::{kernel, Rng};
        for seed in 0..400u64 {
            let mut k = kernel(seed, 2 + (seed % 40) as usize);
            k.maxnreg = None;
            let mut rng = Rng(seed ^ 0x5eed);
            // Values of 32 and 64 bits, moved between blocks at random.
            let first = k.regs.len();
            for i in 0..16 {
                let ty = if i % 3 == 0 { RegTy::Int(64) } else { RegTy::Int(32) };
                let span = ptxvk_frontend::Span::default();
                k.regs.push(RegInfo { name: format!("%v{i}"), ty, span });
            }
            for block in &mut k.blocks {
                block.insts.clear();
                for _ in 0..rng.below(6) {
                    let dst = RegId((first as u64 + rng.below(16)) as u32);
                    let src = Value::Reg(RegId((first as u64 + rng.below(16)) as u32));
                    let kind = InstKind::Mov { ty: OpTy::U(32), dst, src };
                    block.insts.push(Inst { kind, span: ptxvk_frontend::Span::default() });
                }
            }
            assert_eq!(max_live_words(&k), model(&k), "seed {seed}");
        }
    }

    fn kernel_without_cap(mut k: Kernel) -> Kernel {
        k.maxnreg = None;
        k
    }

    #[test]
    fn a_value_live_around_a_loop_stays_counted_and_maxnreg_caps() {
        let body = |maxnreg: &str| {
            format!(
                ".entry k(.param .u64 p) {maxnreg}{{\n .reg .pred %p;\n .reg .b64 %rd<8>;\n\
                 ld.param.u64 %rd1, [p];\n mov.u64 %rd2, 0;\n mov.u64 %rd3, 1;\n\
                 mov.u64 %rd4, 2;\n mov.u64 %rd5, 3;\n\
                 L: add.u64 %rd2, %rd2, %rd3;\n add.u64 %rd3, %rd3, %rd4;\n\
                 add.u64 %rd4, %rd4, %rd5;\n setp.lt.u64 %p, %rd2, 1000;\n @%p bra L;\n\
                 st.global.u64 [%rd1], %rd2;\n st.global.u64 [%rd1+8], %rd3;\n\
                 st.global.u64 [%rd1+16], %rd4;\n st.global.u64 [%rd1+24], %rd5;\n ret;\n}}\n"
            )
        };
        // Five 64-bit values live across the loop: at least 10 words.
        let live = max_live_words(&kernel(&body("")));
        assert!(live >= 10, "{live}");
        assert_eq!(max_live_words(&kernel(&body(".maxnreg 8\n"))), 8);
    }
}
