//! Pass: make every cycle single-entry (reducible), so that it can become a SPIR-V loop.
//!
//! Pre: a kernel CFG. Post: every strongly connected component, and recursively every
//! cycle inside one that avoids its header, is entered through one block (its header),
//! which dominates it. Irreducible cycles — entered at several blocks, as hand-written
//! state machines and some optimizers produce — get a dispatcher ([`crate::dispatch`])
//! as their header: every edge into one of the entries, from outside the cycle or from
//! inside, goes through it. No code is duplicated, so the growth is one block and two
//! instructions per routed edge. (The alternative, node splitting, copies code and can
//! grow exponentially; LLVM's FixIrreducible uses the same dispatcher scheme.)

use crate::cfg::strongly_connected;
use crate::dispatch;
use crate::ir::{BlockId, Kernel};

pub fn run(k: &mut Kernel) {
    let mut reachable = crate::cfg::reachable(k);
    let mut preds = crate::cfg::predecessors(k, &reachable);
    let mut work: Vec<Vec<usize>> = vec![(0..k.blocks.len()).filter(|&b| reachable[b]).collect()];
    while let Some(nodes) = work.pop() {
        for scc in strongly_connected(k, &nodes) {
            let in_scc = |b: usize| scc.binary_search(&b).is_ok();
            // Entries: blocks of the cycle with a (reachable) predecessor outside it.
            let mut entries: Vec<usize> = scc
                .iter()
                .copied()
                .filter(|&b| b == k.entry.index() || preds[b].iter().any(|&p| !in_scc(p)))
                .collect();
            entries.sort_unstable();
            let header = match entries.as_slice() {
                [h] => *h,
                _ => {
                    let targets: Vec<BlockId> =
                        entries.iter().map(|&b| BlockId(b as u32)).collect();
                    // Every reachable edge into an entry goes through the dispatcher;
                    // the graph facts change only around it.
                    let mut from: Vec<usize> =
                        entries.iter().flat_map(|&e| preds[e].iter().copied()).collect();
                    from.sort_unstable();
                    from.dedup();
                    let d = dispatch::insert(k, &targets, &from).index();
                    reachable.push(true);
                    preds.push(from);
                    for &e in &entries {
                        preds[e] = vec![d];
                    }
                    d
                }
            };
            // Cycles inside this one that avoid its header.
            let inner: Vec<usize> = scc.into_iter().filter(|&b| b != header).collect();
            if !inner.is_empty() {
                work.push(inner);
            }
        }
    }
}
