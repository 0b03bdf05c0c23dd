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
    fn subtract(&mut self, other: &Set) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a &= !b);
    }
    fn union(&mut self, other: &Set) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a |= b);
    }
    fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64).filter(move |b| bits & (1 << b) != 0).map(move |b| w * 64 + b)
        })
    }
}

fn words(ty: RegTy) -> u32 {
    match ty {
        RegTy::Pred => 0,
        RegTy::Int(b) | RegTy::Float(b) => u32::from(b).div_ceil(32),
    }
}

/// The most 32-bit words of registers live at once in `k` (at least 1), capped at
/// `k.maxnreg`.
pub fn max_live_words(k: &Kernel) -> u32 {
    let n = k.regs.len();
    let weight: Vec<u32> = k.regs.iter().map(|r| words(r.ty)).collect();
    let term_use = |t: &Terminator| match t {
        Terminator::Branch { cond, .. } => Some(cond.index()),
        Terminator::Switch { selector, .. } => Some(selector.index()),
        Terminator::Jump(_) | Terminator::Return => None,
    };
    // Registers live into each block, to a fixed point (blocks in reverse order first,
    // which most CFGs need one or two sweeps for).
    let mut live_in: Vec<Set> = vec![Set::new(n); k.blocks.len()];
    let live_out = |b: usize, live_in: &[Set]| {
        let mut out = Set::new(n);
        for s in k.blocks[b].term.successors() {
            if let Some(set) = live_in.get(s.index()) {
                out.union(set);
            }
        }
        out
    };
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    // Walks block `b` backwards from `live`, calling `at` with the words live at every
    // point (kept up to date as registers come and go: summing the set at every
    // instruction would be quadratic in big kernels); leaves the set live into the block.
    let mut walk = |b: usize, live: &mut Set, at: &mut dyn FnMut(u32)| {
        let block = &k.blocks[b];
        let mut words_live: u32 = live.members().map(|r| weight[r]).sum();
        if let Some(r) = term_use(&block.term) {
            if live.insert(r) {
                words_live += weight[r];
            }
        }
        at(words_live);
        for inst in block.insts.iter().rev() {
            defs.clear();
            uses.clear();
            inst_defs_uses(&inst.kind, &mut defs, &mut uses);
            for r in defs.iter().map(|r| r.index()).filter(|&r| r < n) {
                if live.remove(r) {
                    words_live -= weight[r];
                }
            }
            for r in uses.iter().map(|r| r.index()).filter(|&r| r < n) {
                if live.insert(r) {
                    words_live += weight[r];
                }
            }
            at(words_live);
        }
    };
    // What each block reads before writing it (`used`) and writes (`written`): a
    // sweep of the fixed point is then a few set operations per block, not a walk of
    // its instructions (kernels of thousands of blocks need several sweeps).
    let (mut used, mut written) = (Vec::new(), Vec::new());
    let (mut block_defs, mut block_uses) = (Vec::new(), Vec::new());
    for block in &k.blocks {
        let (mut reads, mut writes) = (Set::new(n), Set::new(n));
        if let Some(r) = term_use(&block.term) {
            reads.insert(r);
        }
        for inst in block.insts.iter().rev() {
            block_defs.clear();
            block_uses.clear();
            inst_defs_uses(&inst.kind, &mut block_defs, &mut block_uses);
            for r in block_defs.iter().map(|r| r.index()).filter(|&r| r < n) {
                reads.remove(r);
                writes.insert(r);
            }
            for r in block_uses.iter().map(|r| r.index()).filter(|&r| r < n) {
                reads.insert(r);
            }
        }
        used.push(reads);
        written.push(writes);
    }
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..k.blocks.len()).rev() {
            let mut live = live_out(b, &live_in);
            live.subtract(&written[b]);
            live.union(&used[b]);
            if live != live_in[b] {
                live_in[b] = live;
                changed = true;
            }
        }
    }
    let mut most = 0;
    for b in 0..k.blocks.len() {
        let mut live = live_out(b, &live_in);
        walk(b, &mut live, &mut |words_live| most = most.max(words_live));
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
