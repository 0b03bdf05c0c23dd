//! The structurizer: CFG IR → structured IR ([`Node`] trees) that maps one-to-one onto
//! SPIR-V's structured control flow (SPIR-V §2.11: selection, switch and loop
//! constructs).
//!
//! It accepts every CFG: three CFG passes first make it fit the structured shapes, by
//! inserting dispatchers (a switch over a selector register, [`crate::dispatch`])
//! rather than by copying code:
//!
//! 1. [`super::reducible`]: every cycle gets a single entry (irreducible cycles get a
//!    dispatcher as their header);
//! 2. [`super::loop_exits`]: every loop gets a single exit, its merge (multi-level
//!    `break`s and exits to different places go through a dispatcher after the loop);
//!    jumps to an empty `ret` block are `Return` anywhere and are not exits;
//! 3. [`crate::merges`]: the code that a branch's arms share gets a single entry, which
//!    becomes the branch's merge.
//!
//! The walk then emits, from the entry: a block's code, and for its terminator a
//! `Continue` (jump to the current loop's header), a `Break` (to its exit), a `Return`,
//! an `If`/`Switch` whose arms run to the merge, or a `Loop` when it reaches a header.
//! When the arms share no code, one arm is nested and the walk continues with the
//! other. Every CFG block is emitted at most once, so code never grows beyond the
//! dispatchers (reported by the benchmark in `docs/benchmarks.md`); a `bar.sync` is
//! never copied, so a barrier every thread reaches in the PTX is one barrier in the
//! SPIR-V.

use ptxvk_frontend::{Diagnostic, Span};

use crate::cfg::Cfg;
use crate::ir::{BlockId, Kernel, Node, RegId, SwitchCase, Terminator};
use crate::merges::{continuations, join, LoopForest};

/// Upper bound on nesting, so that hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 2048;

struct Ctx<'a> {
    k: &'a mut Kernel,
    cfg: Cfg,
    forest: LoopForest,
    emitted: Vec<bool>,
    depth: usize,
}

/// The region being structured.
#[derive(Clone, Copy)]
struct Region {
    /// Header of the innermost loop, if any.
    header: Option<usize>,
    /// Where the region ends (falls through): a merge block.
    stop: Option<usize>,
}

/// Structures the kernel's control flow, first rewriting its CFG as described above.
pub fn run(k: &mut Kernel) -> Result<Vec<Node>, Diagnostic> {
    super::reducible::run(k);
    super::loop_exits::run(k);
    let cfg = Cfg::new(k);
    let forest = LoopForest::new(k, &cfg);
    let entry = k.entry.index();
    let emitted = vec![false; k.blocks.len()];
    let mut cx = Ctx { k, cfg, forest, emitted, depth: 0 };
    let mut out = Vec::new();
    cx.region(entry, Region { header: None, stop: None }, &mut out)?;
    Ok(out)
}

impl Ctx<'_> {
    fn span(&self, b: usize) -> Span {
        self.k.blocks[b].span
    }

    fn internal(&self, b: usize, what: &str) -> Diagnostic {
        Diagnostic::internal(self.span(b), format!("structurizer: {what}"))
    }

    /// Emits the region starting at `b` into `out` until it reaches `r.stop` or ends.
    fn region(&mut self, mut b: usize, r: Region, out: &mut Vec<Node>) -> Result<(), Diagnostic> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::error(
                self.span(b),
                "control flow nested too deeply to structure",
            ));
        }
        let result = loop {
            if Some(b) == r.stop {
                break Ok(());
            }
            // A loop header not yet entered starts a loop.
            if self.forest.is_header(b) && r.header != Some(b) {
                let exit = self.forest.exits.get(&b).copied().flatten();
                let mut body = Vec::new();
                let inner = Region { header: Some(b), stop: None };
                if let Some(next) = self.block_and_terminator(b, inner, &mut body)? {
                    self.region(next, inner, &mut body)?;
                }
                out.push(Node::Loop { body, span: self.span(b) });
                match exit.and_then(|e| self.follow(e, r, out)) {
                    Some(next) => {
                        b = next;
                        continue;
                    }
                    // After a loop without exit (only returns leave it) nothing follows.
                    None => break Ok(()),
                }
            }
            match self.block_and_terminator(b, r, out)? {
                Some(next) => b = next,
                None => break Ok(()),
            }
        };
        self.depth -= 1;
        result
    }

    /// Emits block `b` and what its terminator does; returns the block where straight-line
    /// code continues in this region, if any.
    fn block_and_terminator(
        &mut self,
        b: usize,
        r: Region,
        out: &mut Vec<Node>,
    ) -> Result<Option<usize>, Diagnostic> {
        if std::mem::replace(&mut self.emitted[b], true) {
            return Err(self.internal(b, &format!("block bb{b} would be emitted twice")));
        }
        out.push(Node::Code(BlockId(b as u32)));
        let span = self.k.blocks[b].term_span;
        let conts =
            if self.cfg.succs[b].len() > 1 { self.single_continuation(b, r) } else { Vec::new() };
        match self.k.blocks[b].term.clone() {
            Terminator::Return => {
                out.push(Node::Return);
                Ok(None)
            }
            Terminator::Jump(t) => Ok(self.follow(t.index(), r, out)),
            Terminator::Branch { cond, negate, if_true, if_false } => {
                let (t, f) = (if_true.index(), if_false.index());
                if t == f {
                    return Ok(self.follow(t, r, out));
                }
                let (arms, rest) = self.arms(b, &[t, f], r, &conts)?;
                let mut arms = arms.into_iter();
                let then = arms.next().unwrap_or_default();
                let otherwise = arms.next().unwrap_or_default();
                out.push(Node::If { cond, negate, then, otherwise, span });
                Ok(rest.and_then(|x| self.follow(x, r, out)))
            }
            Terminator::Switch { selector, cases, default } => {
                // One arm per distinct target; the default's arm carries the flag.
                let mut targets: Vec<usize> = Vec::new();
                for t in cases.iter().map(|c| c.1).chain(std::iter::once(default)) {
                    if !targets.contains(&t.index()) {
                        targets.push(t.index());
                    }
                }
                if targets.len() == 1 {
                    return Ok(self.follow(targets[0], r, out));
                }
                let (arms, rest) = self.arms(b, &targets, r, &conts)?;
                let cases = targets
                    .iter()
                    .zip(arms)
                    .map(|(&t, body)| SwitchCase {
                        values: cases.iter().filter(|c| c.1.index() == t).map(|c| c.0).collect(),
                        is_default: default.index() == t,
                        body,
                    })
                    .collect();
                out.push(Node::Switch { selector, cases, span });
                Ok(rest.and_then(|x| self.follow(x, r, out)))
            }
        }
    }

    /// Structures the arms of the branch or switch at `b` to `targets`, which must be
    /// its successors, given its continuations. Returns each arm's nodes and where code
    /// continues after the construct: the merge, or, when every arm ends in
    /// break/continue/return, the one arm left out of the construct (its node list is
    /// empty).
    fn arms(
        &mut self,
        b: usize,
        targets: &[usize],
        r: Region,
        conts: &[usize],
    ) -> Result<(Vec<Vec<Node>>, Option<usize>), Diagnostic> {
        let mut arms = vec![Vec::new(); targets.len()];
        match conts {
            [m] => {
                let arm = Region { stop: Some(*m), ..r };
                for (i, &t) in targets.iter().enumerate() {
                    self.arm(t, arm, &mut arms[i])?;
                }
                Ok((arms, Some(*m)))
            }
            [] => {
                // Every arm ends in break/continue/return. Nest all but one; the last arm
                // that does real work continues after the construct at this level, so
                // that a run of early returns (`if (err) return;` …) stays flat.
                let l = self.forest.innermost[b];
                let rest = targets
                    .iter()
                    .rposition(|&t| !self.forest.is_terminal(self.k, l, t))
                    .unwrap_or(targets.len() - 1);
                for (i, &t) in targets.iter().enumerate() {
                    if i != rest {
                        self.arm(t, r, &mut arms[i])?;
                    }
                }
                Ok((arms, Some(targets[rest])))
            }
            _ => Err(self.internal(b, "several continuations after joining them")),
        }
    }

    /// Gives the construct at `b` a single continuation (see [`crate::merges`]) and
    /// returns its continuations (none or one); the CFG analyses are updated when a
    /// dispatcher was added.
    fn single_continuation(&mut self, b: usize, r: Region) -> Vec<usize> {
        let conts = continuations(self.k, &self.cfg, &self.forest, b, r.stop);
        if conts.len() > 1 {
            let (d, routed) = join(self.k, &self.cfg, &self.forest, b, r.stop, &conts);
            let d = d.index();
            // Update the analyses in place rather than recomputing them. The dispatcher
            // sits in `b`'s loops (its targets are inside them).
            self.cfg.add_dispatcher(self.k, d, &routed, &conts);
            let l = self.forest.innermost[b];
            self.forest.innermost.push(l);
            // An inner loop of the construct whose exit was one of the continuations now
            // leaves through the dispatcher: all its exit edges went to that one block,
            // and all were routed.
            let preds = &self.cfg.preds[d];
            let mut moved = Vec::new();
            for (&h, exit) in &self.forest.exits {
                if exit.is_some_and(|e| conts.contains(&e))
                    && preds.iter().any(|&p| self.forest.contains(h, p))
                {
                    moved.push(h);
                }
            }
            for h in moved {
                self.forest.exits.insert(h, Some(d));
            }
            self.emitted.push(false);
            debug_assert_eq!(self.emitted.len(), d + 1);
            return continuations(self.k, &self.cfg, &self.forest, b, r.stop);
        }
        conts
    }

    /// One arm of an `If`/`Switch`: a jump to `t` inside region `r`.
    fn arm(&mut self, t: usize, r: Region, out: &mut Vec<Node>) -> Result<(), Diagnostic> {
        match self.follow(t, r, out) {
            Some(next) => self.region(next, r, out),
            None => Ok(()),
        }
    }

    /// Takes a jump to `t` in region `r`: returns the block where code continues, or
    /// `None` after emitting the `Break`/`Continue`/`Return` it means (or at the
    /// region's stop).
    fn follow(&self, t: usize, r: Region, out: &mut Vec<Node>) -> Option<usize> {
        if Some(t) == r.stop {
            return None;
        }
        if crate::cfg::is_plain_return(self.k, t) {
            out.push(Node::Return);
            return None;
        }
        if let Some(h) = r.header {
            if t == h {
                out.push(Node::Continue);
                return None;
            }
            if self.forest.exits.get(&h).copied().flatten() == Some(t) {
                out.push(Node::Break);
                return None;
            }
        }
        Some(t)
    }
}

/// Renders the structured tree for `ptxvk compile --emit structured`.
pub fn print(k: &Kernel, nodes: &[Node]) -> String {
    let mut s = format!(".entry {} {{\n", k.name);
    print_nodes(k, nodes, 1, &mut s);
    s.push_str("}\n");
    s
}

fn print_nodes(k: &Kernel, nodes: &[Node], depth: usize, s: &mut String) {
    let pad = "    ".repeat(depth);
    // A temporary has no name string (`ir::new_temp`): the text's `$t` and its index.
    let name = |r: RegId| match k.reg(r).name.as_str() {
        "" => format!("$t{}", r.0),
        named => named.to_string(),
    };
    for n in nodes {
        match n {
            Node::Code(b) => {
                let blk = &k.blocks[b.index()];
                let name = blk.label.clone().unwrap_or_else(|| format!("bb{}", b.0));
                s.push_str(&format!("{pad}block {name}: {} instruction(s)\n", blk.insts.len()));
            }
            Node::If { cond, negate, then, otherwise, .. } => {
                let bang = if *negate { "!" } else { "" };
                s.push_str(&format!("{pad}if {bang}{} {{\n", name(*cond)));
                print_nodes(k, then, depth + 1, s);
                if !otherwise.is_empty() {
                    s.push_str(&format!("{pad}}} else {{\n"));
                    print_nodes(k, otherwise, depth + 1, s);
                }
                s.push_str(&format!("{pad}}} // merge\n"));
            }
            Node::Switch { selector, cases, .. } => {
                s.push_str(&format!("{pad}switch {} {{\n", name(*selector)));
                for c in cases {
                    let mut labels: Vec<String> =
                        c.values.iter().map(|v| format!("case {v}")).collect();
                    if c.is_default {
                        labels.push("default".into());
                    }
                    s.push_str(&format!("{pad}{}:\n", labels.join(", ")));
                    print_nodes(k, &c.body, depth + 1, s);
                }
                s.push_str(&format!("{pad}}} // merge\n"));
            }
            Node::Loop { body, .. } => {
                s.push_str(&format!("{pad}loop {{ // continue target: loop header\n"));
                print_nodes(k, body, depth + 1, s);
                s.push_str(&format!("{pad}}} // merge (loop exit)\n"));
            }
            Node::Break => s.push_str(&format!("{pad}break\n")),
            Node::Continue => s.push_str(&format!("{pad}continue\n")),
            Node::Return => s.push_str(&format!("{pad}return\n")),
        }
    }
}
