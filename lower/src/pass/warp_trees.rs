//! Pass: shuffle trees on subgroups narrower than a warp (emulated warp mode with a
//! known subgroup size, [`Target::emulated_subgroup`]).
//!
//! A *tree* is what nvcc, NVRTC, clang and numba make of an unrolled
//! `v = op(v, __shfl_down_sync(~0, v, d))` or `__shfl_xor_sync` loop: in one block,
//! steps of a [`WarpOp::Shuffle`] (`.down` or `.bfly`, one mode for the whole tree)
//! of the running value `v` by a constant lane offset `d`, with the whole warp as its
//! member mask and clamp 31 (`c = 0x1f`; a `.bfly` also with a segment mask none of
//! its offsets has bits of), followed by one 32-bit [`InstKind::Binary`] of `v` and
//! the shuffled value (either order, any operation, its float modes kept), whose
//! result the next step shuffles. Sync points between the steps go; intermediate
//! registers must not be read anywhere else.
//!
//! Without this pass, `pass::expand_warp` makes each step an exchange (two workgroup
//! barriers and a scratch round trip). Here a tree becomes, for a subgroup size `S`
//! (2 to 16) and the thread's lane `x`, runs of consecutive steps:
//!
//! - *in-subgroup* runs: `.bfly` steps with `d < S` (lane `x ^ d` is in `x`'s
//!   subgroup), each a [`SubgroupOp::ShuffleNarrow`]; `.down` steps with `d < S`, each
//!   three of them over the pair `(own, next)` = the values of lanes `x` and `x + S`
//!   (lane `x + d` is in `x`'s subgroup or the next; in the next one, lane `x + d - S`
//!   of this subgroup holds its value as `next`). `next` is exact for lanes below `S -`
//!   the offsets so far (offsets are distinct powers of two whose sum stays below `S`),
//!   which is all that later steps read;
//! - *cross-subgroup* runs (`d >= S`, and before a `.down` in-subgroup run that has no
//!   `next` yet): one exchange (`WarpPublish`, reads, `WarpSync`), after which each
//!   lane evaluates the run's sub-tree for itself (and for `x + S` when `next` is
//!   needed) from the published words: `2^m` reads for `m` steps.
//!
//! Every lane's value is the ISA's (PTX ISA 9.2 §9.7.8.6): the same operations on the
//! same operands in the same order, so floats round as in the tree. `.down` clamps a
//! source beyond lane 31 to the lane itself; a source lane past a partial last warp's
//! end gives 0 (`crate::ir::warp`: it does not arrive). The rewrite applies only where
//! every thread of the block that exists arrives: the tree's block is on every path
//! from the entry to a `return`, in no cycle, in a kernel that does not poll (no
//! `pass::schedule` rounds) and has no grid barrier. Elsewhere (lanes that exit first,
//! divergent paths) the tree is left to `pass::expand_warp`.
//!
//! The subgroups are assumed to be `S` consecutive linear thread ids (the layout of
//! lavapipe and of every device the native mode relies on), as the hand-written GLSL
//! of `shaders/warp_reduce.comp` assumes too.
//!
//! Where the tree's exchange is the kernel's only one, the barrier that ends it goes
//! (`drop_last_sync`): it runs once per thread and nothing publishes after it.
//!
//! Pre: CFG IR after `pass::inline`, before `pass::expand_warp`. Post: the same, with
//! each recognised tree replaced by exchanges, narrow subgroup shuffles and core
//! operations with the tree's span.

use ptxvk_frontend::Span;

use super::Target;
use crate::build::{Build, Builder};
use crate::ir::{
    BinaryOp, CmpOp, FloatMode, Inst, InstKind, Kernel, OpTy, RegId, ShuffleMode, SubgroupOp,
    SyncPoint, Terminator, Value, WarpMode, WarpOp,
};
use crate::verify::inst_defs_uses;

const U32: OpTy = OpTy::U(32);

/// The subgroup size this pass lowers trees for on `target`, if any.
pub fn subgroup_size(target: &Target) -> Option<u32> {
    let s = target.emulated_subgroup?;
    (target.warp_mode == WarpMode::Emulated && s.is_power_of_two() && (2..32).contains(&s))
        .then_some(s)
}

/// Rewrites every tree of `k` that qualifies (module doc); returns how many.
pub fn run(k: &mut Kernel, target: &Target) -> usize {
    let Some(s) = subgroup_size(target) else { return 0 };
    if k.grid_sync || super::schedule::polls_anywhere(k) {
        return 0;
    }
    let once = once_per_thread(k);
    let mut done = 0;
    let blocks: Vec<usize> = (0..k.blocks.len()).filter(|&b| once[b]).collect();
    for b in blocks {
        let mut i = 0;
        while i < k.blocks[b].insts.len() {
            match recognise(k, b, i).filter(|t| private(k, t)) {
                Some(tree) => {
                    let insts = lower(k, &tree, s);
                    let n = insts.len();
                    k.blocks[b].insts.splice(tree.start..tree.end, insts);
                    i = tree.start + n;
                    done += 1;
                }
                None => i += 1,
            }
        }
    }
    if done > 0 {
        drop_last_sync(k);
    }
    done
}

/// Where the kernel's only exchange is one of a tree (so it runs once per thread, and
/// no later publish can overwrite the scratch words its lanes still read), the
/// barrier that ends it orders nothing and goes.
fn drop_last_sync(k: &mut Kernel) {
    let kinds = || k.blocks.iter().flat_map(|b| &b.insts).map(|i| &i.kind);
    let count = |f: fn(&InstKind) -> bool| kinds().filter(|i| f(i)).count();
    let publishes = count(|i| matches!(i, InstKind::WarpPublish { .. }));
    let syncs = count(|i| matches!(i, InstKind::WarpSync));
    let others = count(|i| matches!(i, InstKind::Warp(_) | InstKind::WarpBarrier { .. }));
    if (publishes, syncs, others) == (1, 1, 0) {
        for b in &mut k.blocks {
            b.insts.retain(|i| !matches!(i.kind, InstKind::WarpSync));
        }
    }
}

/// One step of a tree: the shuffle's lane offset and the combining instruction (none
/// for a last step that only shuffles).
#[derive(Clone, Copy, Debug)]
struct Step {
    delta: u32,
    combine: Option<Combine>,
}

/// A step's binary operation with the running value.
#[derive(Clone, Copy, Debug)]
struct Combine {
    op: BinaryOp,
    ty: OpTy,
    mode: FloatMode,
    /// The shuffled value is the left operand.
    shuffled_left: bool,
}

/// A recognised tree: instructions `start..end` of block `block`.
#[derive(Debug)]
struct Tree {
    block: usize,
    start: usize,
    end: usize,
    down: bool,
    input: Value,
    steps: Vec<Step>,
    /// The last step's result register.
    output: RegId,
    /// Registers the steps write (shuffle results and predicates, intermediate
    /// results), which the rewrite does not write but `output`.
    written: Vec<RegId>,
    /// The register of the value before the last step, where that step only shuffles
    /// (and the value is read after the tree).
    before_last: Option<RegId>,
    /// Instructions of `start..end` that stay, before the tree's code: `mov`s of
    /// constants between the steps.
    constants: Vec<usize>,
    span: Span,
}

/// Whether each block runs exactly once in every thread: reachable, in no cycle, and
/// no `return` is reachable from the entry without passing through it.
fn once_per_thread(k: &Kernel) -> Vec<bool> {
    let n = k.blocks.len();
    let reach = |from: &[usize], avoid: Option<usize>| {
        let mut seen = vec![false; n];
        let mut stack: Vec<usize> = from.iter().copied().filter(|&b| Some(b) != avoid).collect();
        while let Some(b) = stack.pop() {
            if std::mem::replace(&mut seen[b], true) {
                continue;
            }
            for s in k.blocks[b].term.successors() {
                if Some(s.index()) != avoid && !seen[s.index()] {
                    stack.push(s.index());
                }
            }
        }
        seen
    };
    let entry = k.entry.index();
    let reachable = reach(&[entry], None);
    (0..n)
        .map(|b| {
            if !reachable[b] {
                return false;
            }
            let succ: Vec<usize> =
                k.blocks[b].term.successors().iter().map(|s| s.index()).collect();
            if reach(&succ, None)[b] {
                return false;
            }
            if b == entry {
                return true;
            }
            let around = reach(&[entry], Some(b));
            !(0..n).any(|c| around[c] && matches!(k.blocks[c].term, Terminator::Return))
        })
        .collect()
}

/// The constant a value is: an immediate, or a register whose one definition in the
/// kernel is a `mov` of one (nvcc's `mov.u32 %r19, 8` before a shuffle).
fn constant(k: &Kernel, v: Value) -> Option<u64> {
    let r = match v {
        Value::Imm(c) => return Some(c),
        Value::Reg(r) => r,
    };
    let mut found = None;
    let mut defs = Vec::new();
    for inst in k.blocks.iter().flat_map(|b| &b.insts) {
        defs.clear();
        inst_defs_uses(&inst.kind, &mut defs, &mut Vec::new());
        if defs.contains(&r) {
            match (&inst.kind, found) {
                (InstKind::Mov { src: Value::Imm(c), .. }, None) => found = Some(*c),
                _ => return None,
            }
        }
    }
    found
}

/// The tree whose first shuffle is instruction `i` of block `b`, if one starts there.
fn recognise(k: &Kernel, b: usize, i: usize) -> Option<Tree> {
    let insts = &k.blocks[b].insts;
    let mut t = Tree {
        block: b,
        start: i,
        end: i,
        down: false,
        input: Value::Imm(0),
        steps: Vec::new(),
        output: RegId(0),
        written: Vec::new(),
        before_last: None,
        constants: Vec::new(),
        span: insts.get(i)?.span,
    };
    let mut at = i;
    let mut current = None;
    loop {
        // Between steps: sync points (which go) and nvcc's `mov`s of the next offset
        // (which stay, before the tree's code).
        let mut movs = Vec::new();
        while !t.steps.is_empty() {
            match insts.get(at).map(|i| &i.kind) {
                Some(InstKind::SyncPoint { point: SyncPoint::Warp { .. } }) => {}
                Some(InstKind::Mov { src: Value::Imm(_), .. }) => movs.push(at),
                _ => break,
            }
            at += 1;
        }
        let Some((shuffle, down)) = step_shuffle(k, insts.get(at)) else { break };
        let (dst, pred, value, delta) = shuffle;
        if (!t.steps.is_empty() && down != t.down) || current.is_some_and(|v| v != value) {
            break;
        }
        if value == Value::Reg(dst) {
            break;
        }
        t.down = down;
        if t.steps.is_empty() {
            t.input = value;
        }
        t.written.extend(pred);
        t.constants.extend(movs);
        let combine = combining(insts.get(at + 1), dst, value);
        let step = Step { delta, combine: combine.map(|c| c.1) };
        t.steps.push(step);
        match combine {
            Some((acc, _)) => {
                t.written.push(dst);
                (t.output, t.end, at) = (acc, at + 2, at + 2);
                current = Some(Value::Reg(acc));
            }
            // The last step may be a shuffle alone (clang sinks the last `add` into
            // the branch that stores it): its shuffled value is the output.
            None => {
                t.before_last = current.and_then(crate::build::reg_of);
                (t.output, t.end) = (dst, at + 1);
                break;
            }
        }
        t.written.push(t.output);
    }
    if t.steps.len() < 2 || (t.down && !distinct_powers(&t.steps)) {
        return None;
    }
    t.constants.retain(|&c| c < t.end);
    let (output, before_last) = (t.output, t.before_last);
    t.written.retain(|&r| r != output && Some(r) != before_last);
    // A kept `mov` must not write a register of the tree.
    let mut mentioned = t.written.clone();
    mentioned.extend([Some(output), before_last].into_iter().flatten());
    mentioned.extend(crate::build::reg_of(t.input));
    let clobbers = t.constants.iter().any(|&c| {
        let mut defs = Vec::new();
        inst_defs_uses(&insts[c].kind, &mut defs, &mut Vec::new());
        defs.iter().any(|d| mentioned.contains(d))
    });
    (!clobbers).then_some(t)
}

/// A step's shuffle: its destination, predicate, value and lane offset.
type StepShuffle = (RegId, Option<RegId>, Value, u32);

/// A tree step's shuffle: `.down` or `.bfly` of the whole warp by a constant offset
/// with clamp 31 (a `.bfly` may have a segment its offset stays in, where the range
/// test always passes, §9.7.8.6): its destination, predicate, value and offset, and
/// whether it is `.down`.
fn step_shuffle(k: &Kernel, inst: Option<&Inst>) -> Option<(StepShuffle, bool)> {
    let Some(Inst { kind: InstKind::Warp(w), .. }) = inst else { return None };
    let WarpOp::Shuffle { mode, dst, pred, value, lane, clamp } = w.op else { return None };
    let down = match mode {
        ShuffleMode::Down => true,
        ShuffleMode::Bfly => false,
        _ => return None,
    };
    let whole = w.members.map_or(Some(0xffff_ffff), |m| constant(k, m));
    let (Some(0xffff_ffff), Some(d), Some(c)) = (whole, constant(k, lane), constant(k, clamp))
    else {
        return None;
    };
    let (d, seg) = ((d & 31) as u32, ((c >> 8) & 31) as u32);
    let clamp_ok = c & 31 == 31 && if down { seg == 0 } else { seg & d == 0 };
    (d != 0 && clamp_ok).then_some(((dst, pred, value, d), down))
}

/// The step's combining instruction, if `inst` is one: a 32-bit binary operation of
/// `value` and the shuffled register `shuffled`, in either order; its result register.
fn combining(inst: Option<&Inst>, shuffled: RegId, value: Value) -> Option<(RegId, Combine)> {
    let Some(Inst { kind: InstKind::Binary { op, ty, mode, dst, lhs, rhs }, .. }) = inst else {
        return None;
    };
    let t = Value::Reg(shuffled);
    let shuffled_left = match (*lhs == t, *rhs == t) {
        (true, false) if *rhs == value => true,
        (false, true) if *lhs == value => false,
        _ => return None,
    };
    (ty.bits() == 32).then_some((*dst, Combine { op: *op, ty: *ty, mode: *mode, shuffled_left }))
}

/// `.down` trees: offsets are distinct powers of two (so that an in-subgroup run's
/// offsets sum below the subgroup size, the `next` invariant of the module doc).
fn distinct_powers(steps: &[Step]) -> bool {
    let mut seen = 0u32;
    steps.iter().all(|s| {
        let fresh = s.delta.is_power_of_two() && seen & s.delta == 0;
        seen |= s.delta;
        fresh
    })
}

/// Whether no register the tree writes but its output is read outside the tree.
fn private(k: &Kernel, t: &Tree) -> bool {
    let mut uses = Vec::new();
    for (b, block) in k.blocks.iter().enumerate() {
        for (i, inst) in block.insts.iter().enumerate() {
            if b == t.block && (t.start..t.end).contains(&i) {
                continue;
            }
            inst_defs_uses(&inst.kind, &mut Vec::new(), &mut uses);
        }
        match &block.term {
            Terminator::Branch { cond, .. } => uses.push(*cond),
            Terminator::Switch { selector, .. } => uses.push(*selector),
            _ => {}
        }
    }
    !t.written.iter().any(|r| uses.contains(r))
}

/// The instructions that replace tree `t` for subgroups of `s` lanes.
fn lower(k: &mut Kernel, t: &Tree, s: u32) -> Vec<Inst> {
    let kept: Vec<Inst> = t.constants.iter().map(|&c| k.blocks[t.block].insts[c].clone()).collect();
    let mut e = Builder::new(k, t.span);
    e.insts = kept;
    let tid = e.linear_tid();
    let lane = e.and(U32, tid, Value::Imm(31));
    let warp_base = e.and(U32, tid, Value::Imm(u64::from(!31u32)));
    let total = e.block_threads();
    // Lanes below `left` exist (all 32 but in a partial last warp).
    let left = e.bin(BinaryOp::Sub, U32, total, warp_base);
    let mut g = Gen { e, lane, warp_base, left, s, down: t.down };
    let ty = |st: &Step| st.combine.map_or(U32, |c| c.ty);
    let n = t.steps.len();
    match t.before_last {
        // A last step that only shuffles: the value before it is an output too.
        Some(before) => {
            let (own, next) = g.runs(t.input, None, &t.steps[..n - 1], true);
            g.e.mov(ty(&t.steps[n - 2]), before, own);
            let (r, _) = g.runs(own, next, &t.steps[n - 1..], false);
            g.e.mov(U32, t.output, r);
        }
        None => {
            let (r, _) = g.runs(t.input, None, &t.steps, false);
            g.e.mov(ty(&t.steps[n - 1]), t.output, r);
        }
    }
    g.e.insts
}

/// The code of one tree.
struct Gen<'k> {
    e: Builder<'k>,
    lane: Value,
    warp_base: Value,
    left: Value,
    s: u32,
    down: bool,
}

impl Gen<'_> {
    /// `steps` from `own` (and `next`, when a `.down` in-subgroup run left one), run
    /// by run; `more`: steps follow, which may need `next`.
    fn runs(
        &mut self,
        mut own: Value,
        mut next: Option<Value>,
        steps: &[Step],
        more: bool,
    ) -> (Value, Option<Value>) {
        let mut rest = steps;
        while let Some(first) = rest.first() {
            let intra = first.delta < self.s;
            let len = rest.iter().take_while(|st| (st.delta < self.s) == intra).count();
            let (run, after) = rest.split_at(len);
            let later = more || !after.is_empty();
            if intra && !self.down {
                own = self.bfly_run(own, run);
            } else if intra {
                let n = match next {
                    Some(n) => n,
                    None => self.exchange(own, &[], true).1.unwrap_or(Value::Imm(0)),
                };
                (own, next) = self.down_run(own, n, run, !later);
            } else {
                // `next` after a cross run only where a `.down` in-subgroup run may
                // follow.
                (own, next) = self.exchange(own, run, self.down && later);
            }
            rest = after;
        }
        (own, next)
    }

    /// `op(v, r)` as the step combines (operands in its order); `r` for a step that
    /// only shuffles.
    fn combine(&mut self, st: &Step, v: Value, r: Value) -> Value {
        let Some(c) = st.combine else { return r };
        let dst = self.e.temp(c.ty);
        let (lhs, rhs) = if c.shuffled_left { (r, v) } else { (v, r) };
        self.e.push(InstKind::Binary { op: c.op, ty: c.ty, mode: c.mode, dst, lhs, rhs });
        Value::Reg(dst)
    }

    /// `v` where lane `src` exists, else 0 (a source that does not arrive).
    fn if_exists(&mut self, src: Value, v: Value) -> Value {
        let there = self.e.cmp(CmpOp::Lt, U32, src, self.left);
        self.e.sel(U32, there, v, Value::Imm(0))
    }

    /// The step's source lane for lane `y`: `y ^ d`, or `y + d` clamped to `y` beyond
    /// lane 31 (§9.7.8.6).
    fn source(&mut self, y: Value, d: u32) -> Value {
        if !self.down {
            return self.e.bin(BinaryOp::Xor, U32, y, Value::Imm(u64::from(d)));
        }
        let j = self.e.add(U32, y, Value::Imm(u64::from(d)));
        let ok = self.e.cmp(CmpOp::Le, U32, j, Value::Imm(31));
        self.e.sel(U32, ok, j, y)
    }

    /// Value `v` of warp lane `from`, which must be in this thread's subgroup.
    fn narrow(&mut self, v: Value, from: Value) -> Value {
        let dst = self.e.temp(U32);
        let op = SubgroupOp::ShuffleNarrow;
        self.e.push(InstKind::Subgroup { op, split: false, dst, value: v, lane: from });
        Value::Reg(dst)
    }

    /// A `.bfly` run within subgroups: one narrow shuffle per step.
    fn bfly_run(&mut self, mut own: Value, run: &[Step]) -> Value {
        for st in run {
            let src = self.source(self.lane, st.delta);
            let r = self.narrow(own, src);
            let r = self.if_exists(src, r);
            own = self.combine(st, own, r);
        }
        own
    }

    /// A `.down` run within subgroups over the pair (own, next) (module doc): the
    /// values of lanes `x` and `x + S`. `next` is not computed after the tree's last
    /// step (`last`).
    fn down_run(
        &mut self,
        mut own: Value,
        mut next: Value,
        run: &[Step],
        last: bool,
    ) -> (Value, Option<Value>) {
        let s = u64::from(self.s);
        let index = self.e.and(U32, self.lane, Value::Imm(s - 1));
        for (n, st) in run.iter().enumerate() {
            let d = u64::from(st.delta);
            // Whether lane x + d is in this subgroup.
            let within = {
                let i = self.e.add(U32, index, Value::Imm(d));
                self.e.cmp(CmpOp::Lt, U32, i, Value::Imm(s))
            };
            let src = self.e.add(U32, self.lane, Value::Imm(d));
            let clamped = self.e.cmp(CmpOp::Gt, U32, src, Value::Imm(31));
            let mine = self.narrow(own, src);
            let back = self.e.bin(BinaryOp::Sub, U32, src, Value::Imm(s));
            let theirs = self.narrow(next, back);
            let r = self.e.sel(U32, within, mine, theirs);
            let r = self.if_exists(src, r);
            let r = self.e.sel(U32, clamped, own, r);
            let new_own = self.combine(st, own, r);
            if !(last && n + 1 == run.len()) {
                // Lane x + S's step: its source x + S + d, held as `next` by lane
                // x + d when that is in this subgroup (else not needed, module doc).
                let z = self.e.add(U32, src, Value::Imm(s));
                let z_clamped = self.e.cmp(CmpOp::Gt, U32, z, Value::Imm(31));
                let r = self.narrow(next, src);
                let r = self.if_exists(z, r);
                let r = self.e.sel(U32, z_clamped, next, r);
                next = self.combine(st, next, r);
            }
            own = new_own;
        }
        (own, (!last).then_some(next))
    }

    /// One exchange of `own`; then this lane's value after `run` (and, when `next`
    /// is asked for, lane `x + S`'s) from the published words.
    fn exchange(&mut self, own: Value, run: &[Step], next: bool) -> (Value, Option<Value>) {
        self.e.push(InstKind::WarpPublish { value: own });
        let mine = self.eval(own, run, self.lane);
        let next = next.then(|| {
            let y = self.e.add(U32, self.lane, Value::Imm(u64::from(self.s)));
            self.eval(own, run, y)
        });
        self.e.push(InstKind::WarpSync);
        (mine, next)
    }

    /// Lane `y`'s value after `run`, from the published words (`published` is the
    /// value the exchange published). Lanes past 31 (a `next` of the last subgroup)
    /// read some lane's word: their value is never used.
    fn eval(&mut self, published: Value, run: &[Step], y: Value) -> Value {
        let Some((st, before)) = run.split_last() else {
            let at = self.e.and(U32, y, Value::Imm(31));
            let dst = self.e.temp(U32);
            let warp_base = self.warp_base;
            self.e.push(InstKind::WarpRead { dst, value: published, lane: at, warp_base });
            return Value::Reg(dst);
        };
        let v = self.eval(published, before, y);
        let src = self.source(y, st.delta);
        let r = self.eval(published, before, src);
        let r = self.if_exists(src, r);
        self.combine(st, v, r)
    }
}
