//! Pass: give every loop at most one exit target, its merge block in SPIR-V.
//!
//! Pre: the CFG is reducible ([`crate::pass::reducible`]). Post: for every natural loop, all
//! edges leaving it go to one block, except jumps to an empty `ret` block, which the
//! structurizer turns into `Return` in place. A loop with several exit targets (a
//! `break` out of two loops, a `goto found`, an early exit with code) gets a dispatcher
//! after it ([`crate::dispatch`]) that continues at the right one: the multi-level
//! exits SPIR-V cannot express directly become a selector variable. Inner loops are
//! handled first, so an inner dispatcher that leaves the outer loop too becomes one of
//! the outer loop's exits.

use crate::cfg::Cfg;
use crate::dispatch;
use crate::ir::{BlockId, Kernel};

pub fn run(k: &mut Kernel) {
    // Loops are found once; a dispatcher after loop `l` joins the bodies of the loops
    // around `l` that one of its targets belongs to (it reaches their latches), so later
    // loops see their current exits. Bodies are sorted block lists; new blocks are the
    // largest, so pushing keeps them sorted.
    let cfg = Cfg::new(k);
    let mut loops: Vec<(usize, Vec<usize>)> = cfg.loops().into_iter().collect();
    loops.sort_by_key(|(h, body)| (body.len(), *h));
    let mut mark = vec![usize::MAX; k.blocks.len()];
    for i in 0..loops.len() {
        let h = loops[i].0;
        for &b in &loops[i].1 {
            mark[b] = i;
        }
        let mut exits: Vec<usize> = Vec::new();
        for &b in &loops[i].1 {
            for s in k.blocks[b].term.successors() {
                let s = s.index();
                if mark.get(s) != Some(&i)
                    && !crate::cfg::is_plain_return(k, s)
                    && !exits.contains(&s)
                {
                    exits.push(s);
                }
            }
        }
        if exits.len() < 2 {
            continue;
        }
        exits.sort_unstable_by_key(|&e| (cfg.rpo_index.get(e).copied().flatten(), e));
        let targets: Vec<BlockId> = exits.iter().map(|&e| BlockId(e as u32)).collect();
        let x = dispatch::insert(k, &targets, &loops[i].1).index();
        mark.resize(k.blocks.len(), usize::MAX);
        for (j, (_, body)) in loops.iter_mut().enumerate() {
            let encloses = j != i && body.binary_search(&h).is_ok();
            if encloses && exits.iter().any(|e| body.binary_search(e).is_ok()) {
                body.push(x);
            }
        }
    }
}
