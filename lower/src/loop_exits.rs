//! Pass: give every loop at most one exit target, its merge block in SPIR-V.
//!
//! Pre: the CFG is reducible ([`crate::reducible`]). Post: for every natural loop, all
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
    // Loop headers, innermost (smallest body) first; bodies are recomputed after every
    // rewrite because dispatchers join the enclosing loops.
    let cfg = Cfg::new(k);
    let mut headers: Vec<(usize, usize)> =
        cfg.loops().iter().map(|(h, body)| (body.len(), *h)).collect();
    headers.sort_unstable();
    for (_, h) in headers {
        let cfg = Cfg::new(k);
        let Some(body) = cfg.loops().remove(&h) else { continue };
        let mut in_body = vec![false; k.blocks.len()];
        for &b in &body {
            in_body[b] = true;
        }
        let mut exits: Vec<usize> = Vec::new();
        for &b in &body {
            for &s in &cfg.succs[b] {
                if !in_body[s] && !crate::cfg::is_plain_return(k, s) && !exits.contains(&s) {
                    exits.push(s);
                }
            }
        }
        if exits.len() > 1 {
            exits.sort_unstable_by_key(|&e| cfg.rpo_index[e]);
            let targets: Vec<BlockId> = exits.iter().map(|&e| BlockId(e as u32)).collect();
            dispatch::insert(k, &targets, |u| in_body.get(u.index()).copied().unwrap_or(false));
        }
    }
}
