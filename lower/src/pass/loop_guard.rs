//! Guards every loop on a driver that ends loops silently after a number of iterations
//! ([`super::Target::loop_guard`], found by a probe when the device opens): the launch fails
//! with [`sys::STATUS_LOOP_LIMIT`], naming the loop, before the driver cuts one short.
//!
//! What such a driver counts (Mesa 22.3's lavapipe, measured; docs/status.md,
//! *Drivers*): gallivm runs the invocations of a subgroup as one SIMD function with
//! one counter, set to 65,535 when the function starts and decremented at the end of
//! every iteration of every loop; a loop iterates while any invocation of the subgroup
//! does, and once the counter reaches 0 every loop exits after its current iteration.
//! Control flow is masked, not branched: a loop inside an `if` that no invocation of
//! the subgroup takes still runs one iteration with none active, and so does every
//! loop after a `break`, `continue` or `return` that all of them took. So the count is
//! the subgroup's, and depends on the structure as much as on the trip counts.
//!
//! The pass keeps the same count, one counter per subgroup ([`InstKind::LoopCount`]:
//! one active invocation adds, every active one reads the sum), with a test against
//! the guard's limit wherever it grows:
//! - each iteration of each loop counts 1, at the top of its body;
//! - before an `if` or `switch`, the loops of its arms count as if no invocation took
//!   them (one iteration per loop, nested ones included: [`idle_iterations`]), and at
//!   the top of each arm that some invocation takes, that arm's share is taken back;
//! - a `break` or `continue` counts the loops it skips to the end of its loop's body,
//!   and a `return` those to the end of the kernel, as if every invocation took it (an
//!   over-count when some do not: these loops then also count their own iterations;
//!   the invocations that skip them may be the only ones of an arm while others wait
//!   outside it, so a `return` too must count them);
//! - a block with an instruction that the SPIR-V backend makes into a loop of its own,
//!   or with a call of an emulation routine that has loops ([`hidden_iterations`]),
//!   counts that loop's most iterations before it.
//!
//! The count is never below the driver's (NIR's loop unrolling only lowers the
//! driver's), so a launch that passes every test ran no loop the driver cut. A test
//! that fails records the failure (the loop's index in [`Kernel::guarded_loops`] in
//! the line field, the limit in the file field) and ends the subgroup's active
//! invocations, which all see the same count.
//!
//! Runs on the structured tree after `predicate` (whose block-wide votes are loops
//! too, as are the atomics' compare-and-swap loops and the warp emulation's) and before
//! `legalize_memory`. Postcondition: every `Loop` body starts with a count and its
//! test; the kernel has a system area when it has a loop.

use ptxvk_frontend::Span;

use super::LoopGuard;
use crate::build::{Build, Builder};
use crate::ir::{CmpOp, Inst, InstKind, Kernel, Node, OpTy, RegId, SwitchCase, Terminator, Value};
use crate::system as sys;

/// The most iterations of a loop that `kind` runs out of the kernel's sight: those of
/// the emulation routine it calls (whose body has loops, the allocation table's search
/// among them: [`crate::ir::Routine::loop_iterations`]; drivers inline the call).
pub fn hidden_iterations(k: &Kernel, kind: &InstKind) -> Option<u32> {
    match kind {
        InstKind::Call { callee, .. } => {
            let f = k.functions.get(callee.index())?;
            let r = f.routine.filter(|_| has_loop(&f.body))?;
            Some(r.loop_iterations())
        }
        _ => None,
    }
}

/// Whether a structured body has a loop.
fn has_loop(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match n {
        Node::Loop { .. } => true,
        Node::If { then, otherwise, .. } => has_loop(then) || has_loop(otherwise),
        Node::Switch { cases, .. } => cases.iter().any(|c| has_loop(&c.body)),
        Node::Code(_) | Node::Break | Node::Continue | Node::Return => false,
    })
}

/// Iterations the driver runs for `nodes` when no invocation of the subgroup is active
/// in them: one per loop, nested loops and the backend's own included.
pub fn idle_iterations(k: &Kernel, nodes: &[Node]) -> u32 {
    nodes
        .iter()
        .map(|n| match n {
            Node::Code(b) => k.blocks[b.index()]
                .insts
                .iter()
                .filter(|i| hidden_iterations(k, &i.kind).is_some())
                .count() as u32,
            Node::If { then, otherwise, .. } => {
                idle_iterations(k, then) + idle_iterations(k, otherwise)
            }
            Node::Switch { cases, .. } => cases.iter().map(|c| idle_iterations(k, &c.body)).sum(),
            Node::Loop { body, .. } => 1 + idle_iterations(k, body),
            Node::Break | Node::Continue | Node::Return => 0,
        })
        .sum()
}

/// Guards the loops of `body` (the structured tree of `k`) against `guard`'s limit.
pub fn run(k: &mut Kernel, body: Vec<Node>, guard: &LoopGuard) -> Vec<Node> {
    if idle_iterations(k, &body) == 0 {
        return body;
    }
    k.system = true;
    let span = k.span;
    let mut b = Builder::new(k, span);
    let area = b.system_area(b.kernel.abi.size);
    let insts = std::mem::take(&mut b.insts);
    let mut g = Guard { k, limit: guard.limit, area, span };
    let mut out = vec![g.code(insts)];
    g.sequence(body, Skipped::default(), None, &mut out);
    out
}

/// What a `break`/`continue` and a `return` at a point skip: the iterations the
/// driver runs for the rest of the innermost loop's body, and for the rest of the
/// kernel, when no invocation is left to run them.
#[derive(Clone, Copy, Debug, Default)]
struct Skipped {
    to_loop_end: u32,
    to_kernel_end: u32,
}

struct Guard<'k> {
    k: &'k mut Kernel,
    limit: u32,
    /// The system area's address, computed first.
    area: RegId,
    span: Span,
}

impl Guard<'_> {
    /// A new block of `insts`, as a node.
    fn code(&mut self, insts: Vec<Inst>) -> Node {
        let id = crate::ir::BlockId(self.k.blocks.len() as u32);
        self.k.blocks.push(crate::ir::Block {
            label: None,
            span: self.span,
            insts,
            term: Terminator::Return,
            term_span: self.span,
        });
        Node::Code(id)
    }

    /// The site that failures at `span` name: its index in [`Kernel::guarded_loops`].
    fn site(&mut self, span: Span) -> u32 {
        let sites = &mut self.k.guarded_loops;
        match sites.iter().position(|s| *s == span) {
            Some(i) => i as u32,
            None => {
                sites.push(span);
                sites.len() as u32 - 1
            }
        }
    }

    /// Counts `add` iterations (the subgroup's count grows by `add`) and, when `site`
    /// is given, fails the launch there if the count has passed the limit.
    fn count(&mut self, add: u32, site: Option<Span>, out: &mut Vec<Node>) {
        if add == 0 {
            return;
        }
        let span = site.unwrap_or(self.span);
        let mut b = Builder::new(self.k, span);
        let total = b.temp(OpTy::U(32));
        let add = i32::try_from(add).unwrap_or(i32::MAX);
        b.push(InstKind::LoopCount { dst: total, add });
        let over = site.map(|_| {
            let limit = Value::Imm(u64::from(self.limit));
            b.cmp(CmpOp::Gt, OpTy::U(32), Value::Reg(total), limit)
        });
        let insts = b.insts;
        out.push(self.code(insts));
        if let (Some(over), Some(span)) = (over, site) {
            let failure = self.failure(span);
            out.push(Node::If {
                cond: over,
                negate: false,
                then: failure,
                otherwise: vec![],
                span,
            });
        }
    }

    /// Takes `n` iterations back (an arm that some invocation takes counts its own).
    fn refund(&mut self, n: u32, out: &mut Vec<Node>) {
        if n == 0 {
            return;
        }
        let mut b = Builder::new(self.k, self.span);
        let total = b.temp(OpTy::U(32));
        b.push(InstKind::LoopCount { dst: total, add: -i32::try_from(n).unwrap_or(i32::MAX) });
        let insts = b.insts;
        out.push(self.code(insts));
    }

    /// Records [`sys::STATUS_LOOP_LIMIT`] for the loop at `span` and ends the thread.
    fn failure(&mut self, span: Span) -> Vec<Node> {
        let site = self.site(span);
        let (area, limit) = (self.area, self.limit);
        let mut b = Builder::new(self.k, span);
        let first = b.claim_failure(area, Value::Imm(u64::from(sys::STATUS_LOOP_LIMIT)));
        let claim = std::mem::take(&mut b.insts);
        let details = [Value::Imm(0), Value::Imm(u64::from(limit)), Value::Imm(u64::from(site))];
        b.store_failure(area, &details);
        let record = b.insts;
        let (claim, record) = (self.code(claim), self.code(record));
        vec![
            claim,
            Node::If { cond: first, negate: false, then: vec![record], otherwise: vec![], span },
            Node::Return,
        ]
    }

    /// Guards `nodes` into `out`; `skipped` is what an exit skips after them, and
    /// `innermost` the span of the innermost enclosing loop.
    fn sequence(
        &mut self,
        nodes: Vec<Node>,
        skipped: Skipped,
        innermost: Option<Span>,
        out: &mut Vec<Node>,
    ) {
        let tails: Vec<u32> =
            (0..nodes.len()).map(|i| idle_iterations(self.k, &nodes[i + 1..])).collect();
        for (node, tail) in nodes.into_iter().zip(tails) {
            let here = Skipped {
                to_loop_end: skipped.to_loop_end + tail,
                to_kernel_end: skipped.to_kernel_end + tail,
            };
            self.node(node, here, innermost, out);
        }
    }

    fn node(&mut self, node: Node, skipped: Skipped, innermost: Option<Span>, out: &mut Vec<Node>) {
        match node {
            Node::Code(b) => {
                let block = &self.k.blocks[b.index()];
                let hidden: u32 =
                    block.insts.iter().filter_map(|i| hidden_iterations(self.k, &i.kind)).sum();
                let first =
                    block.insts.iter().find(|i| hidden_iterations(self.k, &i.kind).is_some());
                let site = first.map(|i| i.span);
                self.count(hidden, innermost.or(site), out);
                out.push(Node::Code(b));
            }
            Node::Loop { body, span } => {
                let mut guarded = Vec::new();
                self.count(1, Some(span), &mut guarded);
                let inner = Skipped { to_loop_end: 0, to_kernel_end: skipped.to_kernel_end };
                self.sequence(body, inner, Some(span), &mut guarded);
                out.push(Node::Loop { body: guarded, span });
            }
            Node::If { cond, negate, then, otherwise, span } => {
                let (idle_then, idle_else) =
                    (idle_iterations(self.k, &then), idle_iterations(self.k, &otherwise));
                self.count(idle_then + idle_else, Some(innermost.unwrap_or(span)), out);
                let then = self.arm(then, idle_then, skipped, innermost);
                let otherwise = self.arm(otherwise, idle_else, skipped, innermost);
                out.push(Node::If { cond, negate, then, otherwise, span });
            }
            Node::Switch { selector, cases, span } => {
                let idle: Vec<u32> =
                    cases.iter().map(|c| idle_iterations(self.k, &c.body)).collect();
                self.count(idle.iter().sum(), Some(innermost.unwrap_or(span)), out);
                let cases = cases
                    .into_iter()
                    .zip(idle)
                    .map(|(c, n)| SwitchCase { body: self.arm(c.body, n, skipped, innermost), ..c })
                    .collect();
                out.push(Node::Switch { selector, cases, span });
            }
            Node::Break | Node::Continue => {
                self.count(skipped.to_loop_end, innermost, out);
                out.push(node);
            }
            Node::Return => {
                self.count(skipped.to_kernel_end, innermost, out);
                out.push(node);
            }
        }
    }

    /// An arm of an `if` or `switch` whose loops were counted as idle (`idle`
    /// iterations), guarded.
    fn arm(
        &mut self,
        nodes: Vec<Node>,
        idle: u32,
        skipped: Skipped,
        innermost: Option<Span>,
    ) -> Vec<Node> {
        let mut out = Vec::new();
        self.refund(idle, &mut out);
        self.sequence(nodes, skipped, innermost, &mut out);
        out
    }
}

/// A model of the driver (gallivm's masked SIMD execution of a subgroup, with its one
/// loop counter) run on random structured trees with random decisions per invocation:
/// at the end of every iteration of every loop, where the driver decides whether to
/// go on, the guard's count is at least the driver's.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::KernelAbi;
    use crate::ir::{BlockId, RegInfo, RegTy};
    use std::collections::BTreeSet;

    const LANES: usize = 4;

    /// A small deterministic generator (SplitMix64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn pred(k: &mut Kernel) -> RegId {
        k.regs.push(RegInfo { name: format!("%p{}", k.regs.len()), ty: RegTy::Pred, span: k.span });
        RegId(k.regs.len() as u32 - 1)
    }

    fn code(k: &mut Kernel) -> Node {
        k.blocks.push(crate::ir::Block {
            label: None,
            span: k.span,
            insts: Vec::new(),
            term: Terminator::Return,
            term_span: k.span,
        });
        Node::Code(BlockId(k.blocks.len() as u32 - 1))
    }

    /// A random sequence: code, ifs, loops (each with a conditional break), and exits
    /// that end an arm's sequence (`break`/`continue` inside loops only).
    fn sequence(k: &mut Kernel, rng: &mut Rng, depth: u32, in_loop: bool) -> Vec<Node> {
        let mut out = vec![code(k)];
        for _ in 0..1 + rng.below(3) {
            match rng.below(if depth == 0 { 1 } else { 4 }) {
                0 => out.push(code(k)),
                1 => {
                    let cond = pred(k);
                    let then = sequence(k, rng, depth - 1, in_loop);
                    let otherwise = sequence(k, rng, depth - 1, in_loop);
                    out.push(Node::If { cond, negate: false, then, otherwise, span: k.span });
                }
                2 => {
                    let exit = pred(k);
                    let mut body = vec![Node::If {
                        cond: exit,
                        negate: false,
                        then: vec![Node::Break],
                        otherwise: vec![],
                        span: k.span,
                    }];
                    body.extend(sequence(k, rng, depth - 1, true));
                    let span = Span::new(out.len() as u32, out.len() as u32 + 1);
                    out.push(Node::Loop { body, span });
                }
                _ => {
                    let cond = pred(k);
                    let exit = match rng.below(if in_loop { 3 } else { 1 }) {
                        0 => Node::Return,
                        1 => Node::Break,
                        _ => Node::Continue,
                    };
                    let then = vec![code(k), exit];
                    out.push(Node::If {
                        cond,
                        negate: false,
                        then,
                        otherwise: vec![],
                        span: k.span,
                    });
                }
            }
        }
        out
    }

    /// What happened to an invocation that left the running ones.
    #[derive(Clone, Copy, PartialEq)]
    enum Lane {
        Active,
        Broke,
        Continued,
        Returned,
    }

    struct Model<'a> {
        k: &'a Kernel,
        /// The conditions of the generated tree (the others are the guard's tests).
        conds: &'a BTreeSet<RegId>,
        lanes: [Lane; LANES],
        seed: u64,
        step: u64,
        driver: u64,
        guard: i64,
        checked: u32,
    }

    impl Model<'_> {
        fn active(&self) -> bool {
            self.lanes.contains(&Lane::Active)
        }

        /// Whether `cond` holds in `lane` at this point (exits more likely than not,
        /// so that loops end).
        fn decide(&mut self, cond: RegId, lane: usize) -> bool {
            self.step += 1;
            let mut r =
                Rng(self.seed ^ (u64::from(cond.0) << 20) ^ (lane as u64) << 40 ^ self.step);
            r.below(5) < 2
        }

        fn nodes(&mut self, nodes: &[Node]) {
            for n in nodes {
                self.node(n);
            }
        }

        fn node(&mut self, n: &Node) {
            match n {
                Node::Code(b) => {
                    for i in &self.k.blocks[b.index()].insts {
                        if let InstKind::LoopCount { add, .. } = i.kind {
                            if self.active() {
                                self.guard += i64::from(add);
                            }
                        }
                    }
                }
                Node::If { cond, then, otherwise, .. } => {
                    let before = self.lanes;
                    let takes: Vec<bool> = (0..LANES)
                        .map(|l| {
                            before[l] == Lane::Active
                                && self.conds.contains(cond)
                                && self.decide(*cond, l)
                        })
                        .collect();
                    for l in 0..LANES {
                        if before[l] == Lane::Active && !takes[l] {
                            self.lanes[l] = Lane::Broke; // parked for the then arm
                        }
                    }
                    self.nodes(then);
                    let after_then = self.lanes;
                    for l in 0..LANES {
                        self.lanes[l] = match (before[l], takes[l]) {
                            (Lane::Active, false) => Lane::Active,
                            (Lane::Active, true) => Lane::Broke, // parked for the else arm
                            (other, _) => other,
                        };
                    }
                    self.nodes(otherwise);
                    for l in 0..LANES {
                        if before[l] == Lane::Active && takes[l] {
                            self.lanes[l] = after_then[l];
                        }
                    }
                }
                Node::Loop { body, .. } => {
                    // Each invocation's place: in the loop (`None`), or out of it and
                    // what it is after the loop: as before when it did not enter, running
                    // again when it broke out, returned when it returned.
                    let mut place = self.lanes.map(|s| (s != Lane::Active).then_some(s));
                    let mut ended = false;
                    for _ in 0..1000 {
                        self.lanes = place.map(|p| p.map_or(Lane::Active, |_| Lane::Returned));
                        self.nodes(body);
                        // The end of an iteration: the driver counts it, and goes on while
                        // an invocation does.
                        self.driver += 1;
                        for (p, now) in place.iter_mut().zip(self.lanes) {
                            if p.is_none() {
                                *p = match now {
                                    Lane::Broke => Some(Lane::Active),
                                    Lane::Returned => Some(Lane::Returned),
                                    Lane::Active | Lane::Continued => None,
                                };
                            }
                        }
                        if place.iter().all(Option::is_some) {
                            ended = true;
                            break;
                        }
                        // Where it goes on, the guard must have counted as much.
                        assert!(
                            self.guard >= self.driver as i64,
                            "seed {}: the guard counted {} where the driver counts {}",
                            self.seed,
                            self.guard,
                            self.driver
                        );
                        self.checked += 1;
                    }
                    assert!(ended, "seed {}: a loop ran 1000 iterations", self.seed);
                    self.lanes = place.map(|p| p.unwrap_or(Lane::Returned));
                }
                Node::Switch { .. } => unreachable!("the generator makes no switch"),
                Node::Break => self.exit(Lane::Broke),
                Node::Continue => self.exit(Lane::Continued),
                Node::Return => self.exit(Lane::Returned),
            }
        }

        fn exit(&mut self, how: Lane) {
            for l in &mut self.lanes {
                if *l == Lane::Active {
                    *l = how;
                }
            }
        }
    }

    #[test]
    fn the_guard_counts_at_least_what_the_driver_counts() {
        let mut checked = 0;
        for seed in 0..400u64 {
            let mut k = Kernel::new("k".into(), Span::new(0, 0), KernelAbi::default());
            let mut rng = Rng(seed);
            let body = sequence(&mut k, &mut rng, 3, false);
            let conds: BTreeSet<RegId> = (0..k.regs.len() as u32).map(RegId).collect();
            let guard = LoopGuard { limit: u32::MAX - 1, subgroups: 1 };
            let guarded = run(&mut k, body, &guard);
            crate::verify::structured(&k, &guarded).expect("a valid tree");
            for decisions in 0..8u64 {
                let mut m = Model {
                    k: &k,
                    conds: &conds,
                    lanes: [Lane::Active; LANES],
                    seed: seed << 8 | decisions,
                    step: 0,
                    driver: 0,
                    guard: 0,
                    checked: 0,
                };
                m.nodes(&guarded);
                checked += m.checked;
            }
        }
        assert!(checked > 10_000, "only {checked} loop iterations checked");
    }
}
