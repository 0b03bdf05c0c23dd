//! The structurizer: CFG IR → structured IR ([`Node`] trees) that maps one-to-one onto
//! SPIR-V's structured control flow (SPIR-V §2.11: selection and loop constructs).
//!
//! This first structurizer handles every *reducible* CFG whose loops have one exit
//! that the loop falls into after finishing (other exits are allowed when they only
//! lead to `ret`, which is duplicated in place), with if/else regions merging at the
//! immediate post-dominator. It rejects with a diagnostic (never silently):
//! irreducible control flow, loops with several exits that continue the kernel,
//! `continue`/`break` of an outer loop from an inner one, and regions whose tail
//! duplication would grow the code beyond a budget. The complete structurizer
//! (dispatchers for irreducible cycles, flag variables for multi-level exits) replaces
//! this file; the [`Node`] tree is its output contract.
//!
//! Algorithm: dominators and post-dominators ([`crate::cfg`]), natural loops by back
//! edge. Walking from the entry, a block's code is emitted and its terminator decides:
//! a branch to the current loop's header is `Continue`, to its exit `Break`; a
//! conditional branch becomes an `If` whose arms run to the block's immediate
//! post-dominator (the merge) when that lies inside the current region, or end in
//! `Break`/`Continue`/`Return` when it does not; a loop header starts a `Loop`.

use std::collections::BTreeMap;

use ptxvk_frontend::{Diagnostic, Span};

use crate::cfg::{Cfg, EXIT};
use crate::ir::{BlockId, InstKind, Kernel, RegId, Terminator};

/// A structured statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// The instructions of a CFG block (its terminator is expressed by the tree).
    Code(BlockId),
    If {
        cond: RegId,
        negate: bool,
        then: Vec<Node>,
        otherwise: Vec<Node>,
        span: Span,
    },
    /// Runs `body` until a `Break` (or `Return`); `Continue` starts the next iteration.
    Loop {
        body: Vec<Node>,
        span: Span,
    },
    Break,
    Continue,
    Return,
}

/// Upper bound on emitted code nodes, relative to the CFG's size, before tail
/// duplication is considered runaway.
const GROWTH_LIMIT: usize = 16;
/// Upper bound on nesting, so that hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 512;

struct LoopInfo {
    body: Vec<bool>,
    exit: Option<usize>,
}

struct Ctx<'a> {
    k: &'a Kernel,
    cfg: Cfg,
    loops: BTreeMap<usize, LoopInfo>,
    emitted: usize,
    /// How often each block has been emitted (tail duplication makes copies).
    copies: Vec<u32>,
    depth: usize,
}

/// The innermost enclosing loop while structuring a region.
#[derive(Clone, Copy)]
struct Region {
    /// Header of the innermost loop, if any.
    header: Option<usize>,
    /// Where the region ends (falls through): a merge block.
    stop: Option<usize>,
    /// Loop nesting depth of the region (0 = function level).
    loop_depth: usize,
}

pub fn run(k: &Kernel) -> Result<Vec<Node>, Diagnostic> {
    let cfg = Cfg::new(k);
    let n = k.blocks.len();
    // Reducibility: every retreating edge must be a back edge to a dominating header.
    let mut latches: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (u, v) in cfg.retreating_edges() {
        if !cfg.dominates(v, u) {
            return Err(Diagnostic::error(
                k.blocks[v].span,
                "irreducible control flow (a cycle with several entries) is not supported yet",
            )
            .with_label("this block is entered from outside its cycle")
            .with_note("ptxvk currently structures reducible control flow only"));
        }
        latches.entry(v).or_default().push(u);
    }
    let mut loops = BTreeMap::new();
    for (&h, ls) in &latches {
        let body_list = cfg.loop_body(h, ls);
        let mut body = vec![false; n];
        for &b in &body_list {
            body[b] = true;
        }
        let mut exits: Vec<usize> = Vec::new();
        for &b in &body_list {
            for &s in &cfg.succs[b] {
                if !body[s] && !exits.contains(&s) {
                    exits.push(s);
                }
            }
        }
        // The loop's exit is the one the rest of the kernel continues from; exits that
        // only lead to `ret` are duplicated in place instead.
        let continuing: Vec<usize> =
            exits.iter().copied().filter(|&e| !only_returns(k, &cfg, e, &body)).collect();
        let exit = match continuing.as_slice() {
            [] => exits.iter().copied().min_by_key(|&e| cfg.rpo_index[e]),
            [e] => Some(*e),
            [_, second, ..] => {
                return Err(Diagnostic::error(k.blocks[*second].span, "a loop with several exits that continue the kernel is not supported yet")
                    .with_label("second loop exit")
                    .with_note("ptxvk currently structures loops with one exit that continues the kernel (exits that only return are fine)"))
            }
        };
        loops.insert(h, LoopInfo { body, exit });
    }
    let mut cx = Ctx { k, cfg, loops, emitted: 0, copies: vec![0; n], depth: 0 };
    let mut out = Vec::new();
    cx.region(k.entry.index(), Region { header: None, stop: None, loop_depth: 0 }, &mut out)?;
    Ok(out)
}

/// True when every path from `b` ends in a return without re-entering `body` or
/// reaching a loop header (so the code can be duplicated at the branch).
fn only_returns(k: &Kernel, cfg: &Cfg, b: usize, body: &[bool]) -> bool {
    let mut seen = vec![false; k.blocks.len()];
    let mut stack = vec![b];
    let mut count = 0;
    while let Some(x) = stack.pop() {
        if seen[x] {
            continue;
        }
        seen[x] = true;
        count += 1;
        if body[x] || count > 64 {
            return false;
        }
        for &s in &cfg.succs[x] {
            if cfg.rpo_index[s] <= cfg.rpo_index[x] {
                return false;
            }
            stack.push(s);
        }
    }
    true
}

impl Ctx<'_> {
    fn span(&self, b: usize) -> Span {
        self.k.blocks[b].span
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
            // A loop header not yet entered in this region starts a loop.
            if self.loops.contains_key(&b) && r.header != Some(b) {
                let exit = self.loops.get(&b).and_then(|l| l.exit);
                let mut body = Vec::new();
                let inner = Region { header: Some(b), stop: None, loop_depth: r.loop_depth + 1 };
                self.block_and_terminator(b, inner, &mut body)?;
                out.push(Node::Loop { body, span: self.span(b) });
                match exit {
                    Some(e) => match self.follow(e, r, out) {
                        Some(next) => {
                            b = next;
                            continue;
                        }
                        None => break Ok(()),
                    },
                    // A loop without exit (only returns leave it): nothing follows.
                    None => break Ok(()),
                }
            }
            match self.block_and_continue(b, r, out)? {
                Some(next) => b = next,
                None => break Ok(()),
            }
        };
        self.depth -= 1;
        result
    }

    /// Emits `b` (a loop header being entered) and its terminator inside the loop.
    fn block_and_terminator(
        &mut self,
        b: usize,
        r: Region,
        out: &mut Vec<Node>,
    ) -> Result<(), Diagnostic> {
        if let Some(next) = self.block_and_continue(b, r, out)? {
            self.region(next, r, out)?;
        }
        Ok(())
    }

    /// Emits block `b` and what its terminator does; returns the block where straight-line
    /// code continues in this region, if any.
    fn block_and_continue(
        &mut self,
        b: usize,
        r: Region,
        out: &mut Vec<Node>,
    ) -> Result<Option<usize>, Diagnostic> {
        self.emitted += 1;
        if self.emitted > GROWTH_LIMIT * self.k.blocks.len() + 64 {
            return Err(Diagnostic::error(
                self.span(b),
                "control flow too complex for the current structurizer (code growth limit)",
            ));
        }
        // Tail duplication is only sound for code whose copies run in the same threads
        // as the original would: a barrier must stay one barrier that every thread of
        // the block reaches (DESIGN §4), so a second copy of it is refused.
        self.copies[b] += 1;
        if self.copies[b] > 1 {
            if let Some(bar) = self.k.blocks[b].insts.iter().find(|i| i.kind == InstKind::Barrier) {
                return Err(Diagnostic::error(bar.span, "this `bar.sync` would be duplicated into divergent paths by the current structurizer")
                    .with_note("ptxvk refuses rather than emit barriers that different threads reach in different places"));
            }
        }
        out.push(Node::Code(BlockId(b as u32)));
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
                let merge = self.merge_of(b, t, f, r);
                let span = self.k.blocks[b].term_span;
                match merge {
                    Some(m) => {
                        let arm = Region { stop: Some(m), ..r };
                        let mut then = Vec::new();
                        let mut otherwise = Vec::new();
                        self.arm(t, arm, &mut then)?;
                        self.arm(f, arm, &mut otherwise)?;
                        out.push(Node::If { cond, negate, then, otherwise, span });
                        Ok(self.follow(m, r, out))
                    }
                    None => {
                        // The arms share no code: nest one as `if c { … }` and continue
                        // with the other. The nested arm must not reach the region's
                        // stop (it would run on past it); if one arm reaches the stop,
                        // that one continues. Otherwise nest a plain return, to keep the
                        // nesting shallow.
                        let reaches_stop = |x: usize| r.stop.is_some_and(|st| self.reach(x, r)[st]);
                        let (nested, rest, nested_is_true) = if reaches_stop(t)
                            || (self.is_plain_return(f) && !self.is_plain_return(t))
                        {
                            (f, t, false)
                        } else {
                            (t, f, true)
                        };
                        let mut then = Vec::new();
                        self.arm(nested, r, &mut then)?;
                        let negate = if nested_is_true { negate } else { !negate };
                        out.push(Node::If { cond, negate, then, otherwise: Vec::new(), span });
                        Ok(self.follow(rest, r, out))
                    }
                }
            }
        }
    }

    /// The merge of the branch `b → t | f` in region `r`: where the paths of both arms
    /// meet. Arms that return on their own (an error path, an early `ret`) do not stop
    /// the other arm's code from being the merge, unlike the immediate post-dominator,
    /// which the virtual exit would be: so the shared code after the `if` is emitted once.
    /// Taken as the unique block through which both arms enter the code they share;
    /// when the shared code has several entries, the immediate post-dominator.
    fn merge_of(&self, b: usize, t: usize, f: usize, r: Region) -> Option<usize> {
        let rt = self.reach(t, r);
        let rf = self.reach(f, r);
        let both = |x: usize| rt[x] && rf[x];
        let entries: Vec<usize> = (0..rt.len())
            .filter(|&x| both(x))
            .filter(|&x| {
                x == t || x == f || self.cfg.preds[x].iter().any(|&p| (rt[p] || rf[p]) && !both(p))
            })
            .collect();
        let merge = match entries.as_slice() {
            [] => return None,
            [m] => Some(*m),
            _ => self.cfg.ipdom[b].filter(|&m| m != EXIT),
        };
        merge.filter(|&m| self.in_region(m, r) || Some(m) == r.stop)
    }

    /// Blocks reachable from `s` without leaving region `r` (its stop, the loop header
    /// and the loop exit are reached but not passed).
    fn reach(&self, s: usize, r: Region) -> Vec<bool> {
        let mut seen = vec![false; self.k.blocks.len()];
        let exit = r.header.and_then(|h| self.loops.get(&h)).and_then(|l| l.exit);
        let mut stack = vec![s];
        while let Some(x) = stack.pop() {
            if seen[x] {
                continue;
            }
            seen[x] = true;
            if Some(x) == r.stop || Some(x) == r.header || Some(x) == exit {
                continue;
            }
            stack.extend(self.cfg.succs[x].iter().copied());
        }
        seen
    }

    fn is_plain_return(&self, b: usize) -> bool {
        self.k.blocks[b].term == Terminator::Return && self.k.blocks[b].insts.is_empty()
    }

    /// One arm of an `If`: a jump to `t` inside region `r`.
    fn arm(&mut self, t: usize, r: Region, out: &mut Vec<Node>) -> Result<(), Diagnostic> {
        match self.follow(t, r, out) {
            Some(next) => self.region(next, r, out),
            None => Ok(()),
        }
    }

    fn in_region(&self, m: usize, r: Region) -> bool {
        match r.header {
            None => true,
            Some(h) => m != h && self.loops.get(&h).is_some_and(|l| l.body[m]),
        }
    }

    /// Takes a jump to `t` in region `r`: returns the block where code continues, or
    /// `None` after emitting the `Break`/`Continue` it means (or at the region's stop).
    fn follow(&self, t: usize, r: Region, out: &mut Vec<Node>) -> Option<usize> {
        match self.jump_kind(t, r) {
            Jump::Fallthrough(next) => Some(next),
            Jump::Stop => None,
            Jump::Node(n) => {
                out.push(n);
                None
            }
        }
    }

    /// What a jump to `t` means in region `r`.
    fn jump_kind(&self, t: usize, r: Region) -> Jump {
        if Some(t) == r.stop {
            return Jump::Stop;
        }
        if let Some(h) = r.header {
            if t == h {
                return Jump::Node(Node::Continue);
            }
            let l = self.loops.get(&h);
            if l.and_then(|l| l.exit) == Some(t) {
                return Jump::Node(Node::Break);
            }
            if l.is_some_and(|l| !l.body[t]) {
                // An exit that only returns: duplicate it here (see `only_returns`).
                return Jump::Fallthrough(t);
            }
        }
        Jump::Fallthrough(t)
    }
}

enum Jump {
    /// Continue structuring at this block.
    Fallthrough(usize),
    /// The region ends here.
    Stop,
    /// Emit this node (`Break`/`Continue`) and end the sequence.
    Node(Node),
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
    for n in nodes {
        match n {
            Node::Code(b) => {
                let blk = &k.blocks[b.index()];
                let name = blk.label.clone().unwrap_or_else(|| format!("bb{}", b.0));
                s.push_str(&format!("{pad}block {name}: {} instruction(s)\n", blk.insts.len()));
            }
            Node::If { cond, negate, then, otherwise, .. } => {
                let bang = if *negate { "!" } else { "" };
                s.push_str(&format!("{pad}if {bang}{} {{\n", k.reg(*cond).name));
                print_nodes(k, then, depth + 1, s);
                if !otherwise.is_empty() {
                    s.push_str(&format!("{pad}}} else {{\n"));
                    print_nodes(k, otherwise, depth + 1, s);
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
