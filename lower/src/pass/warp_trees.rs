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
//! *Lane 0.* Where only lane 0 of each warp reads a `.down` tree's results (the store
//! behind `laneid == 0` or `tid.x % 32 == 0`, a `shfl.idx` from lane 0), only its value
//! and those of the lanes it reads need be exact: of offsets `d_1..d_m`, the result
//! of step `k` matters only in lanes `y` that are sums of distinct offsets of
//! `d_{k+1}..d_m`. Such a `y` has no bit of `d_k` (the offsets are distinct powers of
//! two), so its source `y + d_k` carries nothing: it stays below 32 (no clamp) and, for
//! `d_k < S`, in `y`'s subgroup. So an in-subgroup `.down` step is one narrow shuffle of `own`, as for
//! `.bfly`, and no run needs `next`. The readers are proven from the IR
//! (`lane_zero_readers`): every instruction after the tree that reads its results, or
//! a value pure instructions compute from them, is in a block only lane-0 threads
//! reach (every path to it takes the lane-0 edge of a branch on `x == 0`, `x & 31 ==
//! 0` or `x % 32 == 0` where `x` ≡ the linear thread id mod 32, `lane_zero_blocks`), or
//! is such a `shfl.idx`. A test of `%tid.x` singles out lane 0 only where `%ntid.x` is
//! a multiple of 32 or the block is one row, one of `%ctaid.x * %ntid.x + %tid.x` only
//! where `%ntid.x` is a multiple of 32 ([`Shape`]). With `.reqntid` that is known;
//! otherwise the code has both forms and selects by the shape, which the driver folds
//! (`%ntid` is a specialization constant). Anywhere else every lane's value is exact.
//!
//! Every lane's value that is read is the ISA's (PTX ISA 9.2 §9.7.8.6): the same
//! operations on the same operands in the same order, so floats round as in the tree.
//! `.down` clamps a source beyond lane 31 to the lane itself; a source lane past a
//! partial last warp's end gives 0 (`crate::ir::warp`: it does not arrive). The rewrite
//! applies only where every thread of the block that exists arrives: the tree's block
//! is on every path from the entry to a `return`, in no cycle, in a kernel that does
//! not poll (no `pass::schedule` rounds) and has no grid barrier. Elsewhere (lanes that
//! exit first, divergent paths) the tree is left to `pass::expand_warp`.
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
    BinaryOp, CmpOp, Dim, FloatMode, Inst, InstKind, Kernel, OpTy, RegId, ShuffleMode, SpecialReg,
    SubgroupOp, SyncPoint, Terminator, Value, WarpMode, WarpOp, WarpReg,
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
    let lane_zero = lane_zero_blocks(k);
    let mut done = 0;
    let blocks: Vec<usize> = (0..k.blocks.len()).filter(|&b| once[b]).collect();
    for b in blocks {
        let mut i = 0;
        while i < k.blocks[b].insts.len() {
            match recognise(k, b, i).filter(|t| private(k, t)) {
                Some(tree) => {
                    let readers = lane_zero_readers(k, &lane_zero, &tree);
                    let insts = lower(k, &tree, s, readers);
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

/// What a block's shape must satisfy for a lane test to single out lane 0 of each warp
/// (linear thread id ≡ 0 mod 32, PTX ISA 9.2 §2.2.1). Ordered: each implies the ones
/// before it, so the condition of several tests together is their maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Shape {
    /// Any block.
    Any,
    /// `%ntid.x` a multiple of 32, or a block of one row (`%ntid.y = %ntid.z = 1`):
    /// then `%tid.x` ≡ the linear id (mod 32).
    RowsAligned,
    /// `%ntid.x` a multiple of 32 (then `%ctaid.x * %ntid.x` ≡ 0 too).
    WidthAligned,
}

impl Shape {
    /// Whether a block of `ntid` threads has the shape.
    fn holds(self, [x, y, z]: [u32; 3]) -> bool {
        match self {
            Shape::Any => true,
            Shape::RowsAligned => x % 32 == 0 || y * z == 1,
            Shape::WidthAligned => x % 32 == 0,
        }
    }
}

/// A 32-bit value modulo 32, as far as lane tests need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Residue {
    /// ≡ the thread's linear id where the shape holds.
    Lane(Shape),
    /// ≡ 0 where the shape holds.
    Zero(Shape),
}

/// The single definitions of registers and the lane tests of branches: which blocks
/// only lane 0 of a warp runs (the store behind `laneid == 0`, `tid.x % 32 == 0`).
struct LaneFacts<'k> {
    k: &'k Kernel,
    /// Each register's one definition (block, instruction), if it has exactly one.
    def: Vec<Option<(usize, usize)>>,
    /// Per block: the weakest shape under which only lane-0 threads run it.
    lane_zero: Vec<Option<Shape>>,
}

/// Per block of `k`, the weakest shape under which only lane-0 threads run it.
fn lane_zero_blocks(k: &Kernel) -> Vec<Option<Shape>> {
    LaneFacts::new(k).lane_zero
}

impl<'k> LaneFacts<'k> {
    fn new(k: &'k Kernel) -> LaneFacts<'k> {
        let mut count = vec![0u32; k.regs.len()];
        let mut def = vec![None; k.regs.len()];
        let mut defs = Vec::new();
        for (b, block) in k.blocks.iter().enumerate() {
            for (i, inst) in block.insts.iter().enumerate() {
                defs.clear();
                inst_defs_uses(&inst.kind, &mut defs, &mut Vec::new());
                for r in &defs {
                    count[r.index()] += 1;
                    def[r.index()] = Some((b, i));
                }
            }
        }
        for (d, c) in def.iter_mut().zip(&count) {
            if *c != 1 {
                *d = None;
            }
        }
        let mut facts = LaneFacts { k, def, lane_zero: vec![None; k.blocks.len()] };
        facts.lane_zero = facts.lane_zero_blocks();
        facts
    }

    /// The instruction that defines `v`, when it is a register with one definition
    /// (in a block that dominates `at`, so that its value is the one `at` sees).
    fn def_of(&self, v: Value, at: usize, cfg: &crate::cfg::Cfg) -> Option<&'k InstKind> {
        let (b, i) = self.def[crate::build::reg_of(v)?.index()]?;
        cfg.dominates(b, at).then(|| &self.k.blocks[b].insts[i].kind)
    }

    /// `v` modulo 32 at block `at`: from `%laneid`'s linear id, `%tid.x`, `%ntid.x`,
    /// constants, through moves, integer conversions, sums, products, `& m` and `% m`
    /// that keep the low five bits.
    fn residue(&self, v: Value, at: usize, cfg: &crate::cfg::Cfg, depth: u32) -> Option<Residue> {
        use Residue::{Lane, Zero};
        if let Value::Imm(c) = v {
            return (c % 32 == 0).then_some(Zero(Shape::Any));
        }
        if depth > 12 {
            return None;
        }
        let r = |v: Value| self.residue(v, at, cfg, depth + 1);
        let product = |a: Value, b: Value| match (r(a), r(b)) {
            (Some(Zero(s)), Some(Zero(t))) => Some(Zero(s.min(t))),
            (Some(Zero(s)), _) | (_, Some(Zero(s))) => Some(Zero(s)),
            _ => None,
        };
        let sum = |x: Option<Residue>, y: Option<Residue>| match (x?, y?) {
            (Zero(s), Zero(t)) => Some(Zero(s.max(t))),
            (Lane(s), Zero(t)) | (Zero(t), Lane(s)) => Some(Lane(s.max(t))),
            _ => None,
        };
        if self.is_linear_tid(v, at, cfg) {
            return Some(Lane(Shape::Any));
        }
        let low5 = |m: u64| m % 32 == 31;
        match self.def_of(v, at, cfg)? {
            InstKind::Special { reg: SpecialReg::Tid(Dim::X), .. } => {
                Some(Lane(Shape::RowsAligned))
            }
            InstKind::Special { reg: SpecialReg::Ntid(Dim::X), .. } => {
                Some(Zero(Shape::WidthAligned))
            }
            // `%laneid` (before `pass::expand_warp`, which writes it as the linear id
            // modulo 32).
            InstKind::Special { reg: SpecialReg::Warp(WarpReg::LaneId), .. } => {
                Some(Lane(Shape::Any))
            }
            InstKind::Mov { src, .. } => r(*src),
            InstKind::Convert { to, from, mode, src, .. }
                if int(*to) && int(*from) && !mode.sat =>
            {
                r(*src)
            }
            InstKind::Binary { op, ty, lhs, rhs, .. } if int(*ty) => match (op, *rhs) {
                (BinaryOp::Add, _) => sum(r(*lhs), r(*rhs)),
                (BinaryOp::Mul | BinaryOp::MulWide, _) => product(*lhs, *rhs),
                (BinaryOp::Shl, Value::Imm(n)) if n >= 5 => Some(Zero(Shape::Any)),
                (BinaryOp::And, Value::Imm(m)) if low5(m) => r(*lhs),
                (BinaryOp::And, Value::Imm(m)) if m % 32 == 0 => Some(Zero(Shape::Any)),
                (BinaryOp::Rem, Value::Imm(m)) if m != 0 && m % 32 == 0 => r(*lhs),
                _ => None,
            },
            InstKind::Mad { part: BinaryOp::Mul | BinaryOp::MulWide, a, b, c, .. } => {
                sum(product(*a, *b), r(*c))
            }
            _ => None,
        }
    }

    /// Whether `v` is the linear thread id as `%laneid` computes it (`Build::linear_tid`:
    /// `%ntid.x * (%ntid.y * %tid.z + %tid.y) + %tid.x`), operands in either order.
    fn is_linear_tid(&self, v: Value, at: usize, cfg: &crate::cfg::Cfg) -> bool {
        let special = |v: Value, want: SpecialReg| matches!(self.def_of(v, at, cfg), Some(InstKind::Special { reg, .. }) if *reg == want);
        let pair = |v: Value, want: BinaryOp, f: &dyn Fn(Value, Value) -> bool| match self
            .def_of(v, at, cfg)
        {
            Some(InstKind::Binary { op, ty, lhs, rhs, .. }) if *op == want && int(*ty) => {
                f(*lhs, *rhs) || f(*rhs, *lhs)
            }
            _ => false,
        };
        let tz = |a: Value, b: Value| {
            special(a, SpecialReg::Ntid(Dim::Y)) && special(b, SpecialReg::Tid(Dim::Z))
        };
        let yz =
            |a: Value, b: Value| pair(a, BinaryOp::Mul, &tz) && special(b, SpecialReg::Tid(Dim::Y));
        let row = |a: Value, b: Value| {
            special(a, SpecialReg::Ntid(Dim::X)) && pair(b, BinaryOp::Add, &yz)
        };
        pair(v, BinaryOp::Add, &|a, b| {
            pair(a, BinaryOp::Mul, &row) && special(b, SpecialReg::Tid(Dim::X))
        })
    }

    /// The lane test that block `b`'s branch makes: its target taken only by lane 0,
    /// and the shape under which that holds.
    fn lane_test(&self, b: usize, cfg: &crate::cfg::Cfg) -> Option<(usize, Shape)> {
        let Terminator::Branch { cond, negate, if_true, if_false } = self.k.blocks[b].term else {
            return None;
        };
        if if_true == if_false {
            return None;
        }
        // `cond` (negated when `flip`) holds exactly when a value ≡ the lane is 0.
        let (mut test, mut flip) = (cond, negate);
        let residue = loop {
            match self.def_of(Value::Reg(test), b, cfg)? {
                InstKind::PredNot { src, .. } => (test, flip) = (*src, !flip),
                InstKind::Setp { cmp, ty, dst, dst_not, lhs, rhs, combine: None, .. }
                    if int(*ty) && matches!(cmp, CmpOp::Eq | CmpOp::Ne) =>
                {
                    let x = match (*lhs, *rhs) {
                        (x, Value::Imm(0)) | (Value::Imm(0), x) => x,
                        _ => return None,
                    };
                    flip ^= (*cmp == CmpOp::Ne) ^ (*dst_not == Some(test) && *dst != Some(test));
                    break self.residue(x, b, cfg, 0)?;
                }
                _ => return None,
            }
        };
        let Residue::Lane(shape) = residue else { return None };
        Some((if flip { if_false } else { if_true }.index(), shape))
    }

    /// Per block, the weakest shape under which every path from the entry to it takes
    /// a lane test's lane-0 edge.
    fn lane_zero_blocks(&self) -> Vec<Option<Shape>> {
        let cfg = crate::cfg::Cfg::new(self.k);
        let n = self.k.blocks.len();
        let tests: Vec<Option<(usize, Shape)>> = (0..n).map(|b| self.lane_test(b, &cfg)).collect();
        let mut result = vec![None; n];
        for shape in [Shape::WidthAligned, Shape::RowsAligned, Shape::Any] {
            // Blocks reachable without a lane-0 edge that holds under `shape`.
            let mut seen = vec![false; n];
            let mut stack = vec![self.k.entry.index()];
            while let Some(b) = stack.pop() {
                if std::mem::replace(&mut seen[b], true) {
                    continue;
                }
                for &s in &cfg.succs[b] {
                    let cut = tests[b].is_some_and(|(to, t)| to == s && t <= shape);
                    if !cut && !seen[s] {
                        stack.push(s);
                    }
                }
            }
            for b in (0..n).filter(|&b| !seen[b]) {
                result[b] = Some(shape);
            }
        }
        result
    }
}

/// The weakest shape under which only lane 0 of each warp reads tree `t`'s results
/// (its output, and the value before a last step that only shuffles): every
/// instruction after the tree that reads them, or a value computed from them, runs in
/// a lane-0 block (`lane_zero`, [`lane_zero_blocks`]) or is a `shfl.idx` from lane 0
/// (§9.7.8.6: with `b = 0` and no segment every lane reads lane 0). `None` where
/// another lane may read them.
fn lane_zero_readers(k: &Kernel, lane_zero: &[Option<Shape>], t: &Tree) -> Option<Shape> {
    // What may run after the tree: the rest of its block, and every block reachable
    // from it (the tree's block is in no cycle).
    let mut after = vec![false; k.blocks.len()];
    let mut stack: Vec<usize> =
        k.blocks[t.block].term.successors().iter().map(|s| s.index()).collect();
    while let Some(b) = stack.pop() {
        if !std::mem::replace(&mut after[b], true) {
            stack.extend(k.blocks[b].term.successors().iter().map(|s| s.index()));
        }
    }
    let mut watched: Vec<RegId> = [Some(t.output), t.before_last].into_iter().flatten().collect();
    let mut shape = Shape::Any;
    let mut at = 0;
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    while let Some(&r) = watched.get(at) {
        at += 1;
        for (b, block) in k.blocks.iter().enumerate() {
            let first = match (b == t.block, after[b]) {
                (true, _) => t.end,
                (false, true) => 0,
                (false, false) => continue,
            };
            for inst in &block.insts[first..] {
                defs.clear();
                uses.clear();
                inst_defs_uses(&inst.kind, &mut defs, &mut uses);
                if !uses.contains(&r) {
                    continue;
                }
                if let Some(s) = lane_zero[b] {
                    shape = shape.max(s);
                } else if inst.kind.is_register_arithmetic() {
                    let fresh: Vec<RegId> =
                        defs.iter().copied().filter(|d| !watched.contains(d)).collect();
                    watched.extend(fresh);
                } else if !from_lane_zero(k, &inst.kind, r) {
                    return None;
                }
            }
            let branches_on_it = match block.term {
                Terminator::Branch { cond, .. } => cond == r,
                Terminator::Switch { selector, .. } => selector == r,
                _ => false,
            };
            if branches_on_it {
                shape = shape.max(lane_zero[b]?);
            }
        }
    }
    Some(shape)
}

/// Whether `inst` is a `shfl.idx` of `r` whose every lane reads lane 0 (`b & 31 = 0`,
/// no segment; §9.7.8.6).
fn from_lane_zero(k: &Kernel, inst: &InstKind, r: RegId) -> bool {
    let InstKind::Warp(w) = inst else { return false };
    let WarpOp::Shuffle { mode: ShuffleMode::Idx, value, lane, clamp, .. } = w.op else {
        return false;
    };
    let members_read = w.members.is_some_and(|m| m == Value::Reg(r));
    value == Value::Reg(r)
        && !members_read
        && constant(k, lane).is_some_and(|b| b % 32 == 0)
        && constant(k, clamp).is_some_and(|c| (c >> 8) & 31 == 0)
}

/// An integer type (whose low five bits a lane test may read).
fn int(ty: OpTy) -> bool {
    matches!(ty, OpTy::U(_) | OpTy::S(_))
}

/// How a `.down` tree computes its lanes' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// Every lane's value exact: the pair `(own, next)` within subgroups (module doc).
    Exact,
    /// Lane 0's value exact, and those of the lanes it reads: one narrow shuffle per
    /// in-subgroup step, no `next`, no clamp (module doc, *Lane 0*).
    LaneZero,
    /// Lane 0's where the predicate holds (the block's shape), else every lane's: the
    /// two differ in the shuffled value of each in-subgroup step, chosen by a select.
    /// The predicate is of `%ntid`, specialization constants on the device, so the
    /// driver folds it and drops the other form.
    Either(RegId),
}

/// The predicate that the block has `shape`.
fn shape_holds(e: &mut Builder<'_>, shape: Shape) -> RegId {
    let nx = e.special(SpecialReg::Ntid(Dim::X));
    let low = e.and(U32, nx, Value::Imm(31));
    let aligned = e.cmp(CmpOp::Eq, U32, low, Value::Imm(0));
    if shape != Shape::RowsAligned {
        return aligned;
    }
    let ny = e.special(SpecialReg::Ntid(Dim::Y));
    let nz = e.special(SpecialReg::Ntid(Dim::Z));
    let rows = e.bin(BinaryOp::Mul, U32, ny, nz);
    let one_row = e.cmp(CmpOp::Eq, U32, rows, Value::Imm(1));
    e.pred_or(aligned, one_row)
}

/// The instructions that replace tree `t` for subgroups of `s` lanes; `readers`: the
/// shape under which only lane 0 reads its results ([`lane_zero_readers`]).
fn lower(k: &mut Kernel, t: &Tree, s: u32, readers: Option<Shape>) -> Vec<Inst> {
    let kept: Vec<Inst> = t.constants.iter().map(|&c| k.blocks[t.block].insts[c].clone()).collect();
    let k_reqntid = k.reqntid;
    let mut e = Builder::new(k, t.span);
    e.insts = kept;
    let tid = e.linear_tid();
    let lane = e.and(U32, tid, Value::Imm(31));
    let warp_base = e.and(U32, tid, Value::Imm(u64::from(!31u32)));
    let total = e.block_threads();
    // Lanes below `left` exist (all 32 but in a partial last warp).
    let left = e.bin(BinaryOp::Sub, U32, total, warp_base);
    let form = match (t.down, readers, k_reqntid) {
        (false, _, _) | (_, None, _) => Form::Exact,
        (true, Some(shape), Some(n)) if !shape.holds(n) => Form::Exact,
        (true, Some(shape), n) if n.is_some() || shape == Shape::Any => Form::LaneZero,
        (true, Some(shape), _) => Form::Either(shape_holds(&mut e, shape)),
    };
    let mut g = Gen { e, lane, warp_base, left, s, down: t.down, form };
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
    form: Form,
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
            if intra && (!self.down || self.form == Form::LaneZero) {
                own = self.single_run(own, run);
            } else if intra {
                let n = match next {
                    Some(n) => n,
                    None => self.exchange(own, &[], true).1.unwrap_or(Value::Imm(0)),
                };
                (own, next) = self.down_run(own, n, run, !later);
            } else {
                // `next` after a cross run only where a `.down` in-subgroup run may
                // follow.
                let with_next = self.down && later && self.form != Form::LaneZero;
                (own, next) = self.exchange(own, run, with_next);
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
    /// lane 31 (§9.7.8.6; lane 0 and the lanes it reads never are).
    fn source(&mut self, y: Value, d: u32) -> Value {
        if !self.down {
            return self.e.bin(BinaryOp::Xor, U32, y, Value::Imm(u64::from(d)));
        }
        let j = self.e.add(U32, y, Value::Imm(u64::from(d)));
        if self.form == Form::LaneZero {
            return j;
        }
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

    /// A `.bfly` run within subgroups, or a `.down` one where only lane 0's value
    /// counts: one narrow shuffle per step.
    fn single_run(&mut self, mut own: Value, run: &[Step]) -> Value {
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
            let r = match self.form {
                // Lane 0's form: lane x + d is in this subgroup and exists.
                Form::Either(lane_zero) => {
                    let cheap = self.if_exists(src, mine);
                    self.e.sel(U32, lane_zero, cheap, r)
                }
                _ => r,
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(text: &str) -> Kernel {
        let mut ks = crate::text::parse(text).expect("the pass file parses");
        ks.remove(0)
    }

    /// For each tree of `k` in order, the shape under which only lane 0 reads it.
    fn readers(k: &Kernel) -> Vec<Option<Shape>> {
        let lane_zero = lane_zero_blocks(k);
        let mut found = Vec::new();
        for b in 0..k.blocks.len() {
            let mut i = 0;
            while i < k.blocks[b].insts.len() {
                match recognise(k, b, i) {
                    Some(t) => {
                        found.push(lane_zero_readers(k, &lane_zero, &t));
                        i = t.end;
                    }
                    None => i += 1,
                }
            }
        }
        found
    }

    /// The narrow shuffles of `k` after the pass, for 8-wide subgroups.
    fn narrow_shuffles(mut k: Kernel) -> usize {
        let target =
            Target { emulated_subgroup: Some(8), ..Target::with_warp_mode(WarpMode::Emulated) };
        assert!(run(&mut k, &target) > 0);
        let narrow =
            |i: &Inst| matches!(i.kind, InstKind::Subgroup { op: SubgroupOp::ShuffleNarrow, .. });
        k.blocks.iter().flat_map(|b| &b.insts).filter(|i| narrow(i)).count()
    }

    const LANE0: &str = include_str!("../../tests/passes/warp_trees_lane0_results.ir");
    const PARTIAL: &str = include_str!("../../tests/passes/warp_trees_lane0_partial_results.ir");
    const OBSERVED: &str = include_str!("../../tests/passes/warp_trees_observed_results.ir");

    #[test]
    fn lane_tests_single_out_lane_zero_under_their_shapes() {
        use Shape::*;
        // `laneid == 0`, `(ctaid.x * ntid.x + tid.x) & 31 == 0`, `tid.x % 32 == 0`, a
        // `shfl.idx` from lane 0.
        let want = [Some(Any), Some(WidthAligned), Some(RowsAligned), Some(Any)];
        assert_eq!(readers(&kernel(LANE0)), want);
        // `tid.x & 15 == 0`; `laneid == 0` and a value from it stored by every lane; a
        // `shfl.idx` from lane 1; a branch of every lane.
        assert_eq!(readers(&kernel(OBSERVED)), [None; 4]);
    }

    #[test]
    fn lane_zero_form_takes_one_narrow_shuffle_per_in_subgroup_step() {
        // Blocks of 64: every tree has three in-subgroup steps, one shuffle each.
        assert_eq!(narrow_shuffles(kernel(LANE0)), 4 * 3);
        // Blocks of 40: the `ctaid` test's tree (offsets 1, 2, 4 within subgroups,
        // then 8 and 16) keeps the pair (own, next): three shuffles per step.
        assert_eq!(narrow_shuffles(kernel(PARTIAL)), 3 * 3 + 3 * 3);
        // Exact forms: 16..1 sums take 3 + 3 + 2.
        assert_eq!(narrow_shuffles(kernel(OBSERVED)), 4 * 8);
    }

    #[test]
    fn shapes_hold_of_the_blocks_they_name() {
        assert!(Shape::RowsAligned.holds([40, 1, 1]));
        assert!(Shape::RowsAligned.holds([64, 3, 2]));
        assert!(!Shape::RowsAligned.holds([40, 2, 1]));
        assert!(!Shape::WidthAligned.holds([40, 1, 1]));
        assert!(Shape::WidthAligned.holds([96, 2, 1]));
    }
}
