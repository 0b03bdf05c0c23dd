//! Pass: forward progress between the threads of a block, by a block scheduler.
//!
//! Since sm_70, CUDA schedules every thread independently (PTX ISA 9.2 §3.2,
//! "Independent Thread Scheduling"): a thread that polls memory until another thread
//! of its block writes it lets that thread run, whatever their warps. Vulkan promises
//! no forward progress between the subgroups of a workgroup, nor between the divergent
//! invocations of one subgroup, and lavapipe runs a workgroup's subgroups as
//! coroutines switched only at barriers: a subgroup that spins never lets the one it
//! waits for run. So a kernel that polls gets a scheduler of its own, written in the
//! kernel, whose only way to switch threads is a workgroup barrier that every thread
//! reaches.
//!
//! **Polling loops.** A loop polls when the condition of one of its exits depends on a
//! *polling read* in it — a strong load (`ld.volatile`, `.relaxed`, `.acquire`) or an
//! mbarrier wait ([`Kernel::polling_reads`]), an `atom.exch`, an `atom.cas` whose
//! comparand does not come from memory the loop reads (a lock; a retry loop compares
//! with what it last read and ends without help), or another atomic with an operand
//! that leaves memory unchanged (`atom.add x, 0`) — through registers, or through the
//! local memory the loop stores such a value in (debug builds keep every variable and
//! pass every argument there). A loop with a
//! `nanosleep` polls too (back-off loops). Other loops, however long, end without help
//! from other threads and are left alone, as are kernels without polling loops (the
//! pass then only removes the sync points of semantic analysis).
//!
//! **The scheduler.** The kernel becomes a loop of *rounds*. At the top of each round
//! every thread of the block meets at a workgroup barrier (reached in uniform control
//! flow: the loop ends when a vote in shared memory says no thread is left), reads the
//! block's state, and then runs, from where it stopped, until its next *yield*:
//!
//! * the back edge of a polling loop: one iteration per round, so the threads it waits
//!   for get theirs;
//! * a block barrier (`bar.sync`, and the barriers semantic analysis builds from
//!   them): the thread waits until every thread that has not exited waits at one
//!   (CUDA's barriers match by count, not by instruction), and then resumes after it;
//! * a warp collective of the `.sync` forms ([`SyncPoint::Warp`]): the thread waits
//!   until every lane of the member mask waits at a collective of the same kind (the
//!   sync point's [`WarpSyncKind`]: the same opcode and qualifiers, as the ISA matches
//!   them; the pass numbers the kernel's kinds in sorted order) or has exited (lanes that do
//!   not exist in a partial warp count as arrived), and then runs the collective with
//!   them;
//! * the end of the thread (`ret`, `exit`, `trap`).
//!
//! Each thread keeps its resume point (`pc`), what it waits for and the member mask in
//! registers, which persist across rounds; a `switch` on `pc` enters the kernel's CFG
//! at the resume point. The structurizer and, in emulated warp mode, predication then
//! handle the many-entry CFG this makes as they handle any other: the warp collectives
//! inside a round are executed by exactly the lanes that were released to them.
//!
//! The block's state is words of shared memory after the static variables (of the
//! window's atomic width, [`State`]): threads left, threads waiting at a block
//! barrier, per warp the lanes that exited and, per kind of collective, the lanes
//! waiting at one, and per round parity the threads that ran, whether any made
//! progress, and the grid's two words below as thread 0 read them. Updates are atomics
//! made after the round's second barrier; reads happen between its two barriers, so
//! every thread decides on the same snapshot.
//!
//! **Exchanges.** A warp collective is exchanges of a word per lane
//! (`pass::expand_warp`): a publish, reads of the lanes' words, an end. In the emulated
//! warp mode `pass::legalize_warps` makes each publish and end a workgroup barrier,
//! which must then be reached in block-uniform control flow; inside the rounds, whose
//! threads run different code, that would make `pass::predicate` walk every thread
//! through every collective of the kernel in every round. So there, when every
//! warp collective of the kernel is a `.sync` form ([`every_collective_synced`], so
//! each exchange follows its sync point), the rounds
//! carry the exchanges instead: a publish is a yield (the collective's first one is its
//! wait, the code before it only computes registers) at which the thread waits again
//! with the same members, and keeps its word in a register; every thread stores that
//! word in its lane's word of the warp scratch at each round's second barrier; the
//! threads released together from it read their partners' words after that barrier
//! (a lane that exited reads as 0, [`InstKind::WarpRead`]), before the next round's
//! first barrier, after which the next words are stored; the ends go. The rounds are
//! then the kernel's only barriers. Collectives without a member mask (`activemask`,
//! `vote` and `shfl` without `.sync`) keep the barriers.
//!
//! **Waits that cannot end.** A round in which no thread could run while threads are
//! left is a deadlock (every thread waits at a barrier or collective that some other
//! waiting thread would have to reach). A spin — rounds in which no thread made
//! progress, only polling loops went round, their threads back where they started —
//! may wait for another block, which is no deadlock while that block runs: blocks wait
//! for earlier blocks in single-pass scans, and an earlier block may work for long
//! (docs/status.md, *Blocks and grids*). So blocks count themselves in the launch's
//! system area: [`sys::BLOCKS_ACTIVE`] counts the blocks that started, have not ended
//! and have not gone [`QUIET_AFTER`] rounds without progress, and [`sys::BLOCK_EVENTS`]
//! counts starts, ends and changes between the two (thread 0 of the block updates
//! them, and reads both once a round). A spin is endless after [`IDLE_LIMIT`] rounds
//! in a row in which the block was quiet, no block was active and no event happened:
//! a wait for a block that waits too, for a later block that cannot start before this
//! one ends, or for a value nothing writes. Both end the launch with
//! [`sys::STATUS_DEADLOCK`] or [`sys::STATUS_SPIN`], naming the line of a waiting
//! thread's loop or wait ([`Kernel::wait_sites`]), instead of hanging until the host's
//! timeout.
//!
//! Pre: CFG IR from semantic analysis (sync points present, warp exchanges not yet
//! legalized, atomics not yet legalized: the compare-and-swap loops `legalize_atomics`
//! makes are retry loops, never polling ones). Post: no [`InstKind::SyncPoint`]; a
//! kernel with polling loops has no [`InstKind::Barrier`] left (the barriers of the
//! rounds are [`InstKind::WarpBarrier`]s, which predication keeps unmasked) and no
//! `Return` inside the rounds; where the rounds carry the exchanges, no
//! [`InstKind::WarpPublish`] or [`InstKind::WarpSync`] either (the reads and ballots
//! stay, for `pass::legalize_warps`).

use std::collections::BTreeSet;

use ptxvk_frontend::{Diagnostic, Span};

use crate::build::{reg_of, Build, Builder};
use crate::cfg::{strongly_connected, Cfg};
use crate::ir::{
    Address, AtomicOp, BinaryOp, Block, BlockId, CmpOp, Inst, InstKind, Kernel, OpTy, Order, RegId,
    Scope, Space, SyncPoint, Terminator, Value, WarpMode, WarpSyncKind,
};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Rounds in a row without progress after which a spin ends the launch.
pub const IDLE_LIMIT: u32 = 1 << 18;

/// Rounds in a row without progress after which a block counts as waiting
/// ([`sys::BLOCKS_ACTIVE`]): long enough that a block that waits for a moment (a lock,
/// a flag another warp sets) does not touch the grid's words.
const QUIET_AFTER: u32 = 1 << 10;

/// Words of the block's state (module doc), in shared memory.
const LIVE: u32 = 0;
const BLOCKED: u32 = 1;
/// Two words, by round parity.
const RAN: u32 = 2;
/// Two words, by round parity.
const PROGRESS: u32 = 4;
/// Two words each, by round parity: the grid's [`sys::BLOCKS_ACTIVE`] and
/// [`sys::BLOCK_EVENTS`] as thread 0 read them in the round.
const ACTIVE_SEEN: u32 = 6;
const EVENTS_SEEN: u32 = 8;
/// One word per warp (CUDA's blocks have at most 32): the lanes that exited.
const EXITED: u32 = 10;
/// One word per warp and collective kind: the lanes waiting at a collective of the
/// kind (`SyncPoint::Warp`), words `WAITING + 32 * kind + warp`, `kind` the number
/// [`warp_sync_kinds`] gives it.
const WAITING: u32 = 42;
const WARPS: u32 = 32;

/// `pc` of a thread that has exited.
const DONE: u32 = u32::MAX;

/// What a thread waits for (`wait`).
const RUNNABLE: u64 = 0;
const AT_BARRIER: u64 = 1;
const AT_COLLECTIVE: u64 = 2;

/// Makes the kernel's threads progress independently where it polls (module doc), for
/// a device whose warps are in `mode`. `collectives_synced` says whether every warp
/// collective the kernel had before `pass::expand_warp` was a `.sync` form
/// ([`every_collective_synced`]): then each of its exchanges follows a sync point and
/// the rounds can carry them (module doc, *Exchanges*).
pub fn run(k: &mut Kernel, mode: WarpMode, collectives_synced: bool) -> Result<(), Diagnostic> {
    let polls = polling_edges(k);
    if polls.is_empty() {
        remove_sync_points(k);
        return Ok(());
    }
    let exchanges = mode == WarpMode::Emulated && collectives_synced && has_exchanges(k);
    Scheduler::new(k, exchanges).build(&polls);
    Ok(())
}

/// Whether every warp collective of `k` (before `pass::expand_warp`) has a member mask:
/// a `.sync` form, which sema gives a sync point ([`SyncPoint::Warp`]), as
/// `pass::expand_matrix` gives matrix instructions. Collectives without one
/// (`activemask`, `vote` and `shfl` without `.sync`) exchange without a sync point.
/// Decided on the collectives themselves, not on spans, so that IR read back from its
/// text lowers the same.
pub fn every_collective_synced(k: &Kernel) -> bool {
    k.blocks.iter().flat_map(|b| &b.insts).all(|i| match &i.kind {
        InstKind::Warp(w) => w.members.is_some(),
        _ => true,
    })
}

/// Whether `k` has warp exchanges (`pass::expand_warp`'s and `pass::expand_matrix`'s).
fn has_exchanges(k: &Kernel) -> bool {
    k.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .any(|i| matches!(i.kind, InstKind::WarpPublish { .. } | InstKind::WarpSync))
}

/// The distinct kinds of `k`'s warp sync points, sorted by spelling: the scheduler's
/// number of a kind is its index here. Sorting makes the numbers depend only on which
/// kinds the kernel has, not on where the passes before put their blocks.
fn warp_sync_kinds(k: &Kernel) -> Vec<WarpSyncKind> {
    let kinds: BTreeSet<&WarpSyncKind> = k
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| match &i.kind {
            InstKind::SyncPoint { point: SyncPoint::Warp { kind, .. } } => Some(kind),
            _ => None,
        })
        .collect();
    kinds.into_iter().cloned().collect()
}

/// Whether `kind` only computes registers from registers (and special registers), so
/// that it may run before a wait as well as after it.
fn is_pure(kind: &InstKind) -> bool {
    matches!(
        kind,
        InstKind::Mov { .. }
            | InstKind::Pack { .. }
            | InstKind::Unpack { .. }
            | InstKind::Special { .. }
            | InstKind::Unary { .. }
            | InstKind::Binary { .. }
            | InstKind::Mad { .. }
            | InstKind::Bfe { .. }
            | InstKind::Bfi { .. }
            | InstKind::Setp { .. }
            | InstKind::Select { .. }
            | InstKind::PredLogic { .. }
            | InstKind::PredNot { .. }
            | InstKind::Convert { .. }
    )
}

/// Whether some loop of `k` polls, so that [`run`] makes the kernel rounds of a block
/// scheduler.
pub fn polls_anywhere(k: &Kernel) -> bool {
    !polling_edges(k).is_empty()
}

/// Whether `kind` is a sync point, which this pass removes.
pub fn is_sync_point(kind: &InstKind) -> bool {
    matches!(kind, InstKind::SyncPoint { .. })
}

fn remove_sync_points(k: &mut Kernel) {
    for b in &mut k.blocks {
        b.insts.retain(|i| !is_sync_point(&i.kind));
    }
}

// ----- which loops poll ------------------------------------------------------------------

/// The back edges (`from`, `header`) of the loops that poll, in block order.
fn polling_edges(k: &Kernel) -> Vec<(usize, usize)> {
    let cfg = Cfg::new(k);
    let reachable: Vec<usize> = (0..k.blocks.len()).filter(|&b| cfg.reachable(b)).collect();
    let mut scc_of = vec![usize::MAX; k.blocks.len()];
    for (i, scc) in strongly_connected(k, &reachable).into_iter().enumerate() {
        for b in scc {
            scc_of[b] = i;
        }
    }
    let mut edges: Vec<(usize, usize)> = cfg
        .retreating_edges()
        .into_iter()
        .filter(|&(u, h)| {
            // The natural loop of the edge, within the cycle it closes (an irreducible
            // cycle's walk back from `u` may leave it).
            let body: Vec<usize> =
                cfg.loop_body(h, &[u]).into_iter().filter(|&b| scc_of[b] == scc_of[h]).collect();
            polls(k, &cfg, h, &body)
        })
        .collect();
    edges.sort_unstable();
    edges
}

/// Whether the loop of `body` (sorted block indices, header `h`) polls: an exit's
/// condition depends on a polling read in the loop, or the loop sleeps. Dependence is
/// through data and through control: a register set in a block that runs only on one
/// side of a branch on such a value (`mov.pred %p, 0` in the arm that took the lock)
/// depends on it too.
fn polls(k: &Kernel, cfg: &Cfg, h: usize, body: &[usize]) -> bool {
    let inside = |b: usize| body.binary_search(&b).is_ok();
    let sleeps = body.iter().flat_map(|&b| &k.blocks[b].insts);
    if sleeps.clone().any(|i| matches!(i.kind, InstKind::SyncPoint { point: SyncPoint::Sleep })) {
        return true;
    }
    // What the loop computes from memory that others may write: a compare-and-swap
    // whose comparand is such a value retries (it compares with what it last read);
    // one whose comparand is fixed waits for the memory to take that value (a lock).
    // (Reads of the thread's own frames count only where it stored such a value.)
    let is_read = |_: usize, i: &Inst| match i.kind {
        InstKind::Load { space, .. } => !is_frame(space),
        InstKind::Atomic { .. } => true,
        _ => false,
    };
    let from_reads = taint(k, body, is_read);
    let mut controlled = vec![false; k.blocks.len()];
    loop {
        let polling =
            |b: usize, i: &Inst| controlled[b] || is_polling_read(k, &i.kind, &i.span, &from_reads);
        let from_polls = taint(k, body, polling);
        let cond = |b: usize| match &k.blocks[b].term {
            Terminator::Branch { cond, .. } => Some(*cond),
            Terminator::Switch { selector, .. } => Some(*selector),
            _ => None,
        };
        let tainted = |b: usize| cond(b).is_some_and(|c| from_polls[c.index()]);
        let leaves = |b: usize| k.blocks[b].term.successors().iter().any(|s| !inside(s.index()));
        if body.iter().any(|&b| leaves(b) && tainted(b)) {
            return true;
        }
        // The blocks that only one side of a tainted branch runs: reachable from its
        // successors inside the loop before control meets again (its immediate
        // post-dominator) or comes round to the header.
        let mut grew = false;
        for &b in body.iter().filter(|&&b| tainted(b)) {
            let meet = cfg.ipdom[b];
            let mut stack: Vec<usize> = cfg.succs[b].clone();
            let mut seen = vec![false; k.blocks.len()];
            while let Some(c) = stack.pop() {
                if seen[c] || !inside(c) || c == h || Some(c) == meet {
                    continue;
                }
                seen[c] = true;
                if !controlled[c] {
                    controlled[c] = true;
                    grew = true;
                }
                stack.extend(cfg.succs[c].iter().copied());
            }
        }
        if !grew {
            return false;
        }
    }
}

/// The registers whose value in the loop of `body` may come from an instruction that
/// `seed` picks (given its block): through registers, and through the thread's own
/// memory (local and parameter frames, where debug builds keep every variable and pass
/// every argument).
fn taint(k: &Kernel, body: &[usize], seed: impl Fn(usize, &Inst) -> bool) -> Vec<bool> {
    let mut tainted = vec![false; k.regs.len()];
    let mut frame = FrameTaint::default();
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    let mut changed = true;
    while changed {
        changed = false;
        for (b, i) in body.iter().flat_map(|&b| k.blocks[b].insts.iter().map(move |i| (b, i))) {
            defs.clear();
            uses.clear();
            crate::verify::inst_defs_uses(&i.kind, &mut defs, &mut uses);
            let from_frame = match &i.kind {
                InstKind::Load { space, addr, ty, dsts } if is_frame(*space) => {
                    frame.reaches(*addr, ty.bits() / 8 * dsts.len() as u32)
                }
                _ => false,
            };
            if !(seed(b, i) || from_frame || uses.iter().any(|u| tainted[u.index()])) {
                continue;
            }
            if let InstKind::Store { space, addr, ty, srcs } = &i.kind {
                if is_frame(*space) {
                    changed |= frame.add(*addr, ty.bits() / 8 * srcs.len() as u32);
                }
            }
            for d in &defs {
                if !tainted[d.index()] {
                    tainted[d.index()] = true;
                    changed = true;
                }
            }
        }
    }
    tainted
}

/// The bytes of the thread's frames a tainted value was stored to: ranges at constant
/// offsets (what debug builds use), or everything once a store's address is a register.
#[derive(Default)]
struct FrameTaint {
    ranges: Vec<(i64, i64)>,
    everything: bool,
}

impl FrameTaint {
    /// Marks the `size` bytes at `addr`; whether anything new was marked.
    fn add(&mut self, addr: Address, size: u32) -> bool {
        if self.everything {
            return false;
        }
        let range = (addr.offset, addr.offset + i64::from(size));
        if addr.base.is_some() {
            self.everything = true;
        } else if self.ranges.contains(&range) {
            return false;
        } else {
            self.ranges.push(range);
        }
        true
    }

    /// Whether a load of `size` bytes at `addr` may read a marked byte.
    fn reaches(&self, addr: Address, size: u32) -> bool {
        let (start, end) = (addr.offset, addr.offset + i64::from(size));
        self.everything
            || (!self.ranges.is_empty() && addr.base.is_some())
            || self.ranges.iter().any(|&(s, e)| s < end && start < e)
    }
}

fn is_frame(space: Space) -> bool {
    matches!(space, Space::Local | Space::Param)
}

/// Whether `kind` reads a value that another thread may write while this one waits
/// (module doc); `from_reads` marks the registers the loop computes from what it reads.
fn is_polling_read(k: &Kernel, kind: &InstKind, span: &Span, from_reads: &[bool]) -> bool {
    match kind {
        InstKind::Load { .. } | InstKind::Atomic { op: AtomicOp::Load, .. } => {
            k.polling_reads.contains(span)
        }
        InstKind::Atomic { dst: None, .. } => false,
        InstKind::Atomic { op, src, cmp, ty, .. } => {
            let all_ones = if ty.bits() >= 64 { u64::MAX } else { (1u64 << ty.bits()) - 1 };
            match op {
                AtomicOp::Exch => true,
                AtomicOp::Cas => match cmp {
                    Value::Imm(_) => true,
                    Value::Reg(r) => !from_reads[r.index()],
                },
                AtomicOp::Add | AtomicOp::Or | AtomicOp::Xor | AtomicOp::Max => {
                    *src == Value::Imm(0)
                }
                AtomicOp::And => *src == Value::Imm(all_ones),
                _ => false,
            }
        }
        _ => false,
    }
}

// ----- the scheduler ---------------------------------------------------------------------

/// Where a yield sends a thread, and what it then waits for.
enum Yield {
    /// The back edge of a polling loop: runnable again at the header next round.
    Poll,
    /// A block barrier; resumes after it.
    Barrier,
    /// A warp collective with this member mask and kind; resumes at the collective.
    /// With `publish`, the collective's first exchange too (its word).
    Collective { members: Value, kind: u32, publish: Option<Value> },
    /// A later exchange of the collective the thread was released from: its word. The
    /// thread waits with the same members again (module doc, *Exchanges*).
    Exchange(Value),
}

/// Where the block's state is, and its word: the shared window's atomic word (32 bits,
/// or 64 in a window of 64-bit words, whose narrower accesses would each become a
/// masked update and whose narrower atomics a compare-and-swap loop). Values are 32-bit
/// in registers: stored and added sign-extended (so `-1` is minus one), loaded
/// truncated.
#[derive(Clone, Copy)]
struct State {
    /// Byte offset in the shared window.
    at: u32,
    wide: bool,
}

impl State {
    fn ty(self) -> OpTy {
        if self.wide {
            U64
        } else {
            U32
        }
    }

    /// log2 of a word's bytes: a word index shifted by it is a byte offset.
    fn shift(self) -> u64 {
        if self.wide {
            3
        } else {
            2
        }
    }

    fn bytes(self) -> u32 {
        1 << self.shift()
    }

    /// Word `word`, plus the byte offset in `index`.
    fn addr(self, word: u32, index: Option<RegId>) -> Address {
        Address { base: index, offset: i64::from(self.at + self.bytes() * word) }
    }

    /// A 32-bit value as the word's type.
    fn widen(self, e: &mut Builder<'_>, v: Value) -> Value {
        if self.wide {
            e.cvt(U64, OpTy::S(32), v)
        } else {
            v
        }
    }

    fn load(self, e: &mut Builder<'_>, word: u32, index: Option<RegId>) -> Value {
        let dst = e.temp(self.ty());
        let addr = self.addr(word, index);
        e.push(InstKind::Load { space: Space::Shared, ty: self.ty(), dsts: vec![Some(dst)], addr });
        if self.wide {
            e.cvt(U32, U64, Value::Reg(dst))
        } else {
            Value::Reg(dst)
        }
    }

    fn store(self, e: &mut Builder<'_>, word: u32, index: Option<RegId>, v: Value) {
        let v = self.widen(e, v);
        let addr = self.addr(word, index);
        e.push(InstKind::Store { space: Space::Shared, ty: self.ty(), srcs: vec![v], addr });
    }

    /// A workgroup-scope atomic `op` of `v` on word `word` (+ `index`).
    fn atomic(self, e: &mut Builder<'_>, op: AtomicOp, word: u32, index: Option<RegId>, v: Value) {
        let src = self.widen(e, v);
        let dst = e.temp(self.ty());
        e.push(InstKind::Atomic {
            op,
            space: Space::Shared,
            ty: self.ty(),
            scope: Scope::Cta,
            order: Order::Relaxed,
            dst: Some(dst),
            addr: self.addr(word, index),
            src,
            cmp: Value::Imm(0),
        });
    }
}

/// The grid's words in the launch's system area (module doc, *Waits that cannot end*),
/// and the registers the block keeps about them, the same in each of its threads.
#[derive(Clone, Copy)]
struct Grid {
    /// The system area's address.
    area: RegId,
    /// Rounds in a row in which the block waited and no block of the grid ran.
    calm: RegId,
    /// [`sys::BLOCK_EVENTS`] as the block saw it last.
    events: RegId,
}

impl Grid {
    fn atomic(self, e: &mut Builder<'_>, op: AtomicOp, word: u32, v: Value) -> RegId {
        let dst = e.temp(U32);
        e.push(InstKind::Atomic {
            op,
            space: Space::Global,
            ty: U32,
            scope: Scope::Gpu,
            order: Order::Relaxed,
            dst: Some(dst),
            addr: Address { base: Some(self.area), offset: i64::from(word) },
            src: v,
            cmp: Value::Imm(0),
        });
        dst
    }

    /// The grid-wide part of the rule for waits that cannot end (module doc): whether
    /// the block has spun for [`IDLE_LIMIT`] rounds in which no block of the grid ran,
    /// and whether thread 0 (`first_thread`) must tell the grid that the block stopped
    /// or started waiting. `counted` says whether the block counted as active before
    /// this round, `idle` is its new count of rounds without progress, `active` and
    /// `events` are the grid's words as thread 0 read them last round.
    fn rule(
        self,
        e: &mut Builder<'_>,
        first_thread: RegId,
        counted: RegId,
        idle: Value,
        active: Value,
        events: Value,
    ) -> (RegId, RegId) {
        let quiet = e.cmp(CmpOp::Ge, U32, idle, Value::Imm(QUIET_AFTER.into()));
        let nobody_active = e.cmp(CmpOp::Eq, U32, active, Value::Imm(0));
        let nothing_new = e.cmp(CmpOp::Eq, U32, events, Value::Reg(self.events));
        let calm = e.pred_and(quiet, nobody_active);
        let calm = e.pred_and(calm, nothing_new);
        let more = e.add(U32, Value::Reg(self.calm), Value::Imm(1));
        let calm = e.sel(U32, calm, more, Value::Imm(0));
        e.mov(U32, self.calm, calm);
        e.mov(U32, self.events, events);
        let spinning = e.cmp(CmpOp::Ge, U32, calm, Value::Imm(u64::from(IDLE_LIMIT)));
        // Counted and quiet now, or neither: the block's state in the grid changed.
        let was = e.sel(U32, counted, Value::Imm(1), Value::Imm(0));
        let is = e.sel(U32, quiet, Value::Imm(1), Value::Imm(0));
        let changed = e.cmp(CmpOp::Eq, U32, was, is);
        let note = e.pred_and(changed, first_thread);
        (spinning, note)
    }

    /// Adds `active` to the count of active blocks and counts an event.
    fn note(self, e: &mut Builder<'_>, active: Value) {
        self.atomic(e, AtomicOp::Add, sys::BLOCKS_ACTIVE, active);
        self.atomic(e, AtomicOp::Add, sys::BLOCK_EVENTS, Value::Imm(1));
    }
}

/// What the rounds keep where they carry the warp exchanges (module doc, *Exchanges*).
#[derive(Clone, Copy)]
struct Exchanges {
    /// Whether the kernel reads published words (not only `bar.warp.sync`); then
    /// `pass::legalize_warps` gives it the warp scratch they are stored in.
    publishes: bool,
    /// The word a thread waiting at an exchange publishes at each round's second
    /// barrier.
    pending: RegId,
    /// The lanes of the thread's warp released with it from its last collective (its
    /// members that have not exited), whose words its reads see.
    arrived: RegId,
}

/// The registers and words the rounds use.
struct Scheduler<'k> {
    k: &'k mut Kernel,
    span: Span,
    state: State,
    /// Per thread: resume point, what it waits for, the member mask of a collective it
    /// waits at, the resume point it started the round at, rounds so far, rounds in a
    /// row without progress, the wait site it reports when stuck.
    pc: RegId,
    wait: RegId,
    members: RegId,
    start: RegId,
    round: RegId,
    idle: RegId,
    site: RegId,
    /// The byte offset of this round's parity among the two-word state.
    parity: RegId,
    /// This thread's lane bit, its warp's byte offset among per-warp words, the warp's
    /// lanes.
    lane_bit: RegId,
    warp_word: RegId,
    lanes: RegId,
    first_thread: RegId,
    /// The byte offset among the waiting masks of the one a thread at a collective is
    /// in: its kind's, of its warp.
    waiting_at: RegId,
    /// Where the rounds carry the warp exchanges (module doc, *Exchanges*).
    exchanges: Option<Exchanges>,
    /// The kinds of the kernel's warp sync points ([`warp_sync_kinds`]): the waiting
    /// masks of kind `kinds[i]` are the `i`-th.
    kinds: Vec<WarpSyncKind>,
    grid: Grid,
    /// The block that ends every round.
    round_end: BlockId,
    /// Resume targets in `pc` order (`pc` 0 is the kernel's entry).
    resume: Vec<BlockId>,
}

impl<'k> Scheduler<'k> {
    fn new(k: &'k mut Kernel, exchanges: bool) -> Scheduler<'k> {
        let span = k.span;
        if exchanges {
            // The rounds' barriers order the exchanges (module doc, *Exchanges*).
            for b in &mut k.blocks {
                b.insts.retain(|i| !matches!(i.kind, InstKind::WarpSync));
            }
        }
        let publishes = exchanges
            && k.blocks
                .iter()
                .flat_map(|b| &b.insts)
                .any(|i| matches!(i.kind, InstKind::WarpRead { .. } | InstKind::WarpBallot { .. }));
        let kinds = warp_sync_kinds(k);
        let wide = k.shared.wide();
        let unit = if wide { 8 } else { 4 };
        let at = k.shared.static_bytes.next_multiple_of(unit);
        // A word of each warp's waiting lanes is read and updated even without a
        // collective (kind 0): it must be in the window.
        let bytes = unit * (WAITING + WARPS * (kinds.len() as u32).max(1));
        k.shared.static_bytes = at + bytes;
        k.shared.variables.push(("$schedule".to_string(), at, bytes));
        k.system = true;
        let reg = |k: &mut Kernel, ty: OpTy| Builder::new(k, span).temp(ty);
        let [pc, wait, members, start, round, idle, site, parity, lane_bit, warp_word, lanes] =
            [(); 11].map(|()| reg(k, U32));
        let waiting_at = reg(k, U32);
        let exchanges =
            exchanges.then(|| Exchanges { publishes, pending: reg(k, U32), arrived: reg(k, U32) });
        let grid = Grid { area: reg(k, U64), calm: reg(k, U32), events: reg(k, U32) };
        let first_thread = reg(k, OpTy::Pred);
        let round_end = BlockId(k.blocks.len() as u32);
        k.blocks.push(empty_block(span, Terminator::Return));
        let resume = vec![k.entry];
        Scheduler {
            k,
            span,
            state: State { at, wide },
            pc,
            wait,
            members,
            start,
            round,
            idle,
            site,
            parity,
            lane_bit,
            warp_word,
            lanes,
            first_thread,
            waiting_at,
            exchanges,
            kinds,
            grid,
            round_end,
            resume,
        }
    }

    fn block(&mut self, insts: Vec<Inst>, term: Terminator) -> BlockId {
        let id = BlockId(self.k.blocks.len() as u32);
        self.k.blocks.push(Block { insts, term, ..empty_block(self.span, Terminator::Return) });
        id
    }

    fn build(mut self, polls: &[(usize, usize)]) {
        let original_entry = self.k.entry;
        let original_blocks = self.k.blocks.len() - 1;
        let rounds = self.rounds();
        // Yields, in block order: the back edges of polling loops first (the CFG's
        // shape is still the one they were found in), then barriers, collectives and
        // returns, which split blocks.
        for &(from, header) in polls {
            let span = self.k.blocks[header].span;
            let target = BlockId(header as u32);
            let y = self.yield_block(Yield::Poll, target, span);
            for t in self.k.blocks[from].term.targets_mut() {
                if *t == target {
                    *t = y;
                }
            }
        }
        for b in 0..original_blocks {
            self.split_waits(b);
        }
        if let Some(x) = self.exchanges {
            self.mask_reads(x.arrived);
        }
        self.dispatch(rounds, original_entry);
    }

    /// Makes the exchanges' reads see only the lanes released with the thread: a word of
    /// another lane is one it published for an earlier exchange (module doc,
    /// *Exchanges*), and a lane that did not arrive reads as 0
    /// ([`InstKind::WarpRead`]).
    fn mask_reads(&mut self, arrived: RegId) {
        let arrived = Value::Reg(arrived);
        for b in 0..self.k.blocks.len() {
            if !self.k.blocks[b]
                .insts
                .iter()
                .any(|i| matches!(i.kind, InstKind::WarpRead { .. } | InstKind::WarpBallot { .. }))
            {
                continue;
            }
            let insts = std::mem::take(&mut self.k.blocks[b].insts);
            let mut out = Vec::with_capacity(insts.len());
            for inst in insts {
                let mut e = Builder::new(self.k, inst.span);
                match inst.kind {
                    InstKind::WarpRead { dst, value, lane, warp_base } => {
                        let word = e.temp(U32);
                        e.push(InstKind::WarpRead { dst: word, value, lane, warp_base });
                        let lane = e.and(U32, lane, Value::Imm(31));
                        let bit = e.bin(BinaryOp::Shr, U32, arrived, lane);
                        let bit = e.and(U32, bit, Value::Imm(1));
                        let there = e.cmp(CmpOp::Ne, U32, bit, Value::Imm(0));
                        let word = e.sel(U32, there, Value::Reg(word), Value::Imm(0));
                        e.mov(U32, dst, word);
                    }
                    InstKind::WarpBallot { dst, value, lanes, warp_base } => {
                        let lanes = e.and(U32, lanes, arrived);
                        e.push(InstKind::WarpBallot { dst, value, lanes, warp_base });
                    }
                    kind => e.push(kind),
                }
                out.append(&mut e.insts);
            }
            self.k.blocks[b].insts = out;
        }
    }

    /// Makes the kernel's new entry: the state's initialization, the block's start in
    /// the grid's words, and a first meeting; returns the meeting's block, which the
    /// caller sends to the top of the rounds.
    fn initialize(&mut self) -> BlockId {
        let st = self.state;
        let param_bytes = self.k.abi.size;
        // This thread's lane, warp and the warp's lanes; the threads clear the state,
        // word w by thread w mod the block's size, LIVE holding the block's size; all
        // meet.
        let mut e = Builder::new(self.k, self.span);
        let t = e.linear_tid();
        let total = e.block_threads();
        let lane = e.and(U32, t, Value::Imm(31));
        let bit = e.bin(BinaryOp::Shl, U32, Value::Imm(1), lane);
        let warp = e.bin(BinaryOp::Shr, U32, t, Value::Imm(5));
        let warp_word = e.bin(BinaryOp::Shl, U32, warp, Value::Imm(st.shift()));
        let lanes = e.warp_lanes(t, total);
        let first = e.cmp(CmpOp::Eq, U32, t, Value::Imm(0));
        let regs = [
            (self.lane_bit, bit),
            (self.warp_word, warp_word),
            (self.lanes, lanes),
            (self.waiting_at, warp_word),
        ];
        for (r, v) in regs {
            e.mov(U32, r, v);
        }
        e.mov(OpTy::Pred, self.first_thread, Value::Reg(first));
        let grid = self.grid;
        let regs = [self.pc, self.wait, self.members, self.round, self.idle, self.site];
        let more = self.exchanges.map(|x| [x.pending, x.arrived]);
        for r in regs.into_iter().chain(more.into_iter().flatten()) {
            e.mov(U32, r, Value::Imm(0));
        }
        for r in [grid.calm, grid.events] {
            e.mov(U32, r, Value::Imm(0));
        }
        let area = e.system_area(param_bytes);
        e.mov(U64, grid.area, Value::Reg(area));
        let words = (e.kernel.shared.static_bytes - st.at) / st.bytes();
        let word = e.temp(U32);
        e.mov(U32, word, t);
        let entry_insts = std::mem::take(&mut e.insts);
        // The block has started: it counts as active until it waits or ends.
        grid.note(&mut e, Value::Imm(1));
        let start = std::mem::take(&mut e.insts);
        let more = e.cmp(CmpOp::Lt, U32, Value::Reg(word), Value::Imm(u64::from(words)));
        let test = std::mem::take(&mut e.insts);
        let is_live = e.cmp(CmpOp::Eq, U32, Value::Reg(word), Value::Imm(u64::from(LIVE)));
        let v = e.sel(U32, is_live, total, Value::Imm(0));
        let at = e.bin(BinaryOp::Shl, U32, Value::Reg(word), Value::Imm(st.shift()));
        st.store(&mut e, 0, reg_of(at), v);
        let next = e.add(U32, Value::Reg(word), total);
        e.mov(U32, word, next);
        let clear = std::mem::take(&mut e.insts);
        let meet = self.block(vec![Inst { kind: BARRIER, span: self.span }], Terminator::Return);
        let head = self.block(test, Terminator::Return);
        let clear = self.block(clear, Terminator::Jump(head));
        self.k.blocks[head.index()].term =
            Terminator::Branch { cond: more, negate: false, if_true: clear, if_false: meet };
        let start = self.block(start, Terminator::Jump(head));
        self.k.entry = self.block(
            entry_insts,
            Terminator::Branch {
                cond: self.first_thread,
                negate: false,
                if_true: start,
                if_false: head,
            },
        );
        meet
    }

    /// Makes the kernel's new entry ([`Self::initialize`]) and the top of the rounds;
    /// returns the block whose switch on `pc` is to be filled in.
    fn rounds(&mut self) -> BlockId {
        let st = self.state;
        let grid = self.grid;
        let meet = self.initialize();

        // The top of a round: read the state; thread 0 clears this round's words and
        // reads the grid's.
        let mut e = Builder::new(self.k, self.span);
        e.push(BARRIER);
        let parity = e.and(U32, Value::Reg(self.round), Value::Imm(1));
        let parity = e.bin(BinaryOp::Shl, U32, parity, Value::Imm(st.shift()));
        e.mov(U32, self.parity, parity);
        let prev = reg_of(e.bin(BinaryOp::Xor, U32, parity, Value::Imm(u64::from(st.bytes()))));
        let live = st.load(&mut e, LIVE, None);
        let blocked = st.load(&mut e, BLOCKED, None);
        let ran_before = st.load(&mut e, RAN, prev);
        let progress_before = st.load(&mut e, PROGRESS, prev);
        let active_before = st.load(&mut e, ACTIVE_SEEN, prev);
        let events_before = st.load(&mut e, EVENTS_SEEN, prev);
        let waiting = st.load(&mut e, WAITING, Some(self.waiting_at));
        let exited = st.load(&mut e, EXITED, Some(self.warp_word));
        let top = std::mem::take(&mut e.insts);
        let parity = Some(self.parity);
        st.store(&mut e, RAN, parity, Value::Imm(0));
        st.store(&mut e, PROGRESS, parity, Value::Imm(0));
        let active = grid.atomic(&mut e, AtomicOp::Load, sys::BLOCKS_ACTIVE, Value::Imm(0));
        st.store(&mut e, ACTIVE_SEEN, parity, Value::Reg(active));
        let events = grid.atomic(&mut e, AtomicOp::Load, sys::BLOCK_EVENTS, Value::Imm(0));
        st.store(&mut e, EVENTS_SEEN, parity, Value::Reg(events));
        let clear = std::mem::take(&mut e.insts);

        // After the second barrier: end, fail, or decide whether to run. What the block
        // takes back from the grid's active count when it ends: 1 unless it waited.
        // Threads waiting at an exchange publish their word at it (module doc,
        // *Exchanges*); the others' words are read by nobody.
        let publish = self.exchanges.filter(|x| x.publishes).map(|x| Value::Reg(x.pending));
        e.push(InstKind::WarpBarrier { publish });
        let none_left = e.cmp(CmpOp::Eq, U32, live, Value::Imm(0));
        let counted = e.cmp(CmpOp::Lt, U32, Value::Reg(self.idle), Value::Imm(QUIET_AFTER.into()));
        let leaving = e.temp(U32);
        let v = e.sel(U32, counted, Value::Imm(u32::MAX.into()), Value::Imm(0));
        e.mov(U32, leaving, v);
        let after = std::mem::take(&mut e.insts);

        let later = e.cmp(CmpOp::Ne, U32, Value::Reg(self.round), Value::Imm(0));
        let nobody_ran = e.cmp(CmpOp::Eq, U32, ran_before, Value::Imm(0));
        let stalled = e.pred_and(later, nobody_ran);
        let progressed = e.cmp(CmpOp::Ne, U32, progress_before, Value::Imm(0));
        let more = e.add(U32, Value::Reg(self.idle), Value::Imm(1));
        let idle = e.sel(U32, progressed, Value::Imm(0), more);
        let idle = e.sel(U32, later, idle, Value::Imm(0));
        e.mov(U32, self.idle, idle);
        let (spinning, note) =
            grid.rule(&mut e, self.first_thread, counted, idle, active_before, events_before);
        let stuck = e.pred_or(stalled, spinning);
        let check = std::mem::take(&mut e.insts);
        // The block stopped or started waiting: thread 0 tells the grid.
        let quiet = e.cmp(CmpOp::Ge, U32, idle, Value::Imm(QUIET_AFTER.into()));
        let change = e.sel(U32, quiet, Value::Imm(u32::MAX.into()), Value::Imm(1));
        grid.note(&mut e, change);
        let notify = std::mem::take(&mut e.insts);

        // Deciding: released from a barrier (all that are left wait at one) or from a
        // collective (every member lane waits at one of its kind, has exited or does
        // not exist).
        let at_barrier = e.cmp(CmpOp::Eq, U32, Value::Reg(self.wait), Value::Imm(AT_BARRIER));
        let all_blocked = e.cmp(CmpOp::Eq, U32, blocked, live);
        let from_barrier = e.pred_and(at_barrier, all_blocked);
        let at_collective = e.cmp(CmpOp::Eq, U32, Value::Reg(self.wait), Value::Imm(AT_COLLECTIVE));
        let absent = e.not(U32, Value::Reg(self.lanes));
        let arrived = e.or(U32, waiting, exited);
        let arrived = e.or(U32, arrived, absent);
        let missing = e.not(U32, arrived);
        let missing = e.and(U32, Value::Reg(self.members), missing);
        let all_there = e.cmp(CmpOp::Eq, U32, missing, Value::Imm(0));
        let from_collective = e.pred_and(at_collective, all_there);
        let released = e.pred_or(from_barrier, from_collective);
        let decide = std::mem::take(&mut e.insts);

        // Released: leave the wait's count or mask; that is progress.
        let minus = e.sel(U32, from_barrier, Value::Imm(u64::from(u32::MAX)), Value::Imm(0));
        let unmask = e.not(U32, Value::Reg(self.lane_bit));
        let unmask = e.sel(U32, from_collective, unmask, Value::Imm(u64::from(u32::MAX)));
        st.atomic(&mut e, AtomicOp::Add, BLOCKED, None, minus);
        st.atomic(&mut e, AtomicOp::And, WAITING, Some(self.waiting_at), unmask);
        st.store(&mut e, PROGRESS, parity, Value::Imm(1));
        e.mov(U32, self.wait, Value::Imm(RUNNABLE));
        if let Some(x) = self.exchanges {
            let here = e.not(U32, exited);
            let arrived = e.and(U32, Value::Reg(self.members), here);
            e.mov(U32, x.arrived, arrived);
        }
        let release = std::mem::take(&mut e.insts);

        let runnable = e.cmp(CmpOp::Eq, U32, Value::Reg(self.wait), Value::Imm(RUNNABLE));
        let run = e.cmp(CmpOp::Ne, U32, Value::Reg(self.pc), Value::Imm(u64::from(DONE)));
        let run = e.pred_and(run, runnable);
        let runnable_insts = std::mem::take(&mut e.insts);

        st.atomic(&mut e, AtomicOp::Add, RAN, parity, Value::Imm(1));
        e.mov(U32, self.start, Value::Reg(self.pc));
        let running = std::mem::take(&mut e.insts);

        let next_round = e.add(U32, Value::Reg(self.round), Value::Imm(1));
        e.mov(U32, self.round, next_round);
        let end_insts = std::mem::take(&mut e.insts);

        // Blocks, wired from the end backwards.
        let exit = self.leave_blocks(leaving);
        let failure = self.failure_blocks(stalled, exit);
        let switch = self.block(running, Terminator::Return);
        let run_or_not = self.block(
            runnable_insts,
            Terminator::Branch {
                cond: run,
                negate: false,
                if_true: switch,
                if_false: self.round_end,
            },
        );
        let release = self.block(release, Terminator::Jump(run_or_not));
        let decide = self.block(
            decide,
            Terminator::Branch {
                cond: released,
                negate: false,
                if_true: release,
                if_false: run_or_not,
            },
        );
        let notify = self.block(notify, Terminator::Jump(decide));
        let check = self.block(check, Terminator::Return);
        let noted = self.block(
            Vec::new(),
            Terminator::Branch { cond: note, negate: false, if_true: notify, if_false: decide },
        );
        self.k.blocks[check.index()].term =
            Terminator::Branch { cond: stuck, negate: false, if_true: failure, if_false: noted };
        let after = self.block(
            after,
            Terminator::Branch { cond: none_left, negate: false, if_true: exit, if_false: check },
        );
        let clear = self.block(clear, Terminator::Jump(after));
        let top = self.block(
            top,
            Terminator::Branch {
                cond: self.first_thread,
                negate: false,
                if_true: clear,
                if_false: after,
            },
        );
        self.k.blocks[meet.index()].term = Terminator::Jump(top);
        let end = self.round_end.index();
        self.k.blocks[end].insts = end_insts;
        self.k.blocks[end].term = Terminator::Jump(top);
        switch
    }

    /// The end of the block's rounds (it ended, or failed): thread 0 takes the block
    /// out of the grid's active count (`leaving` is minus one, or 0 if it waited), and
    /// counts the event.
    fn leave_blocks(&mut self, leaving: RegId) -> BlockId {
        let grid = self.grid;
        let mut e = Builder::new(self.k, self.span);
        grid.note(&mut e, Value::Reg(leaving));
        let leave = std::mem::take(&mut e.insts);
        let done = self.block(Vec::new(), Terminator::Return);
        let leave = self.block(leave, Terminator::Jump(done));
        self.block(
            Vec::new(),
            Terminator::Branch {
                cond: self.first_thread,
                negate: false,
                if_true: leave,
                if_false: done,
            },
        )
    }

    /// Ends the launch because the block is stuck (module doc): `stalled` says which
    /// way. Threads that have not exited claim the failure; the first records its
    /// thread and wait site. All then go to `exit`.
    fn failure_blocks(&mut self, stalled: RegId, exit: BlockId) -> BlockId {
        let span = Span::new(self.span.start, self.span.start);
        let area = self.grid.area;
        let mut e = Builder::new(self.k, span);
        let left = e.cmp(CmpOp::Ne, U32, Value::Reg(self.pc), Value::Imm(u64::from(DONE)));
        let test = std::mem::take(&mut e.insts);
        let status = e.sel(
            U32,
            stalled,
            Value::Imm(u64::from(sys::STATUS_DEADLOCK)),
            Value::Imm(u64::from(sys::STATUS_SPIN)),
        );
        let first = e.claim_failure(area, status);
        let claim = std::mem::take(&mut e.insts);
        // The line field holds the wait site's index (`Kernel::wait_sites`).
        let details = [Value::Imm(0), Value::Imm(0), Value::Reg(self.site)];
        e.store_failure(area, &details);
        let record = std::mem::take(&mut e.insts);
        let record = self.block(record, Terminator::Jump(exit));
        let claim = self.block(
            claim,
            Terminator::Branch { cond: first, negate: false, if_true: record, if_false: exit },
        );
        self.block(
            test,
            Terminator::Branch { cond: left, negate: false, if_true: claim, if_false: exit },
        )
    }

    /// A block that yields to `resume` (a new resume point) the way `how` says, and
    /// ends the round.
    fn yield_block(&mut self, how: Yield, resume: BlockId, span: Span) -> BlockId {
        let id = self.resume.len() as u32;
        self.resume.push(resume);
        let site = self.k.wait_sites.len() as u32;
        self.k.wait_sites.push(span);
        let st = self.state;
        let parity = Some(self.parity);
        // The thread waits among the lanes of its kind of collective (`waiting_at`),
        // with its members (set first) and the word it publishes, if any.
        let (waiting_at, lane_bit, wait) = (self.waiting_at, self.lane_bit, self.wait);
        let (lanes, members_reg) = (self.lanes, self.members);
        let pending = self.exchanges.map(|x| x.pending);
        let wait_at_collective = |e: &mut Builder<'_>, members: Option<Value>, publish| {
            st.atomic(e, AtomicOp::Or, WAITING, Some(waiting_at), Value::Reg(lane_bit));
            st.store(e, PROGRESS, parity, Value::Imm(1));
            if let Some(members) = members {
                let members = e.and(U32, members, Value::Reg(lanes));
                e.mov(U32, members_reg, members);
            }
            e.mov(U32, wait, Value::Imm(AT_COLLECTIVE));
            if let (Some(word), Some(pending)) = (publish, pending) {
                e.mov(U32, pending, word);
            }
        };
        let mut e = Builder::new(self.k, span);
        match how {
            Yield::Poll => {
                // Progress unless the thread went round the loop it started the round in.
                let moved =
                    e.cmp(CmpOp::Ne, U32, Value::Reg(self.start), Value::Imm(u64::from(id)));
                let moved = e.sel(U32, moved, Value::Imm(1), Value::Imm(0));
                st.atomic(&mut e, AtomicOp::Or, PROGRESS, parity, moved);
            }
            Yield::Barrier => {
                st.atomic(&mut e, AtomicOp::Add, BLOCKED, None, Value::Imm(1));
                st.store(&mut e, PROGRESS, parity, Value::Imm(1));
                e.mov(U32, self.wait, Value::Imm(AT_BARRIER));
            }
            Yield::Collective { members, kind, publish } => {
                let offset = Value::Imm(u64::from(st.bytes() * WARPS * kind));
                let at = e.add(U32, Value::Reg(self.warp_word), offset);
                e.mov(U32, self.waiting_at, at);
                wait_at_collective(&mut e, Some(members), publish);
            }
            Yield::Exchange(word) => wait_at_collective(&mut e, None, Some(word)),
        }
        e.mov(U32, self.pc, Value::Imm(u64::from(id)));
        e.mov(U32, self.site, Value::Imm(u64::from(site)));
        let insts = e.insts;
        let round_end = self.round_end;
        self.block(insts, Terminator::Jump(round_end))
    }

    /// A block in which the thread exits: it leaves the count and its warp's lanes for
    /// good.
    fn exit_block(&mut self, span: Span) -> BlockId {
        let st = self.state;
        let mut e = Builder::new(self.k, span);
        st.atomic(&mut e, AtomicOp::Add, LIVE, None, Value::Imm(u64::from(u32::MAX)));
        st.atomic(&mut e, AtomicOp::Or, EXITED, Some(self.warp_word), Value::Reg(self.lane_bit));
        st.store(&mut e, PROGRESS, Some(self.parity), Value::Imm(1));
        e.mov(U32, self.pc, Value::Imm(u64::from(DONE)));
        let insts = e.insts;
        let round_end = self.round_end;
        self.block(insts, Terminator::Jump(round_end))
    }

    /// Splits block `b` at its barriers and collectives, each a yield, and makes its
    /// `return` an exit.
    fn split_waits(&mut self, b: usize) {
        let mut cur = b;
        loop {
            let exchanges = self.exchanges.is_some();
            let at = self.k.blocks[cur].insts.iter().position(|i| match i.kind {
                InstKind::Barrier | InstKind::SyncPoint { .. } => true,
                InstKind::WarpPublish { .. } => exchanges,
                _ => false,
            });
            let Some(at) = at else { break };
            let insts = std::mem::take(&mut self.k.blocks[cur].insts);
            let (before, rest) = insts.split_at(at);
            let (wait, mut after) = (&rest[0], &rest[1..]);
            let mut before = before.to_vec();
            let span = wait.span;
            // A collective's first exchange is its wait: the pure code between them runs
            // before it (module doc, *Exchanges*).
            let mut publish = None;
            if exchanges
                && matches!(wait.kind, InstKind::SyncPoint { point: SyncPoint::Warp { .. } })
            {
                let first = after.iter().position(|i| !is_pure(&i.kind));
                if let Some(j) = first {
                    if let InstKind::WarpPublish { value } = after[j].kind {
                        before.extend_from_slice(&after[..j]);
                        publish = Some(value);
                        after = &after[j + 1..];
                    }
                }
            }
            // The code after the wait, with the block's terminator.
            let term = std::mem::replace(&mut self.k.blocks[cur].term, Terminator::Return);
            let next = BlockId(self.k.blocks.len() as u32);
            self.k.blocks.push(Block {
                label: None,
                span,
                insts: after.to_vec(),
                term,
                term_span: self.k.blocks[cur].term_span,
            });
            self.k.blocks[cur].insts = before;
            let how = match &wait.kind {
                InstKind::Barrier => Some(Yield::Barrier),
                InstKind::SyncPoint { point: SyncPoint::Warp { members, kind } } => {
                    // Every kind is listed: the list is the kernel's sync points'.
                    let kind = self.kinds.binary_search(kind).unwrap_or(0) as u32;
                    Some(Yield::Collective { members: *members, kind, publish })
                }
                InstKind::WarpPublish { value } => Some(Yield::Exchange(*value)),
                _ => None,
            };
            self.k.blocks[cur].term = match how {
                Some(how) => Terminator::Jump(self.yield_block(how, next, span)),
                None => Terminator::Jump(next),
            };
            cur = next.index();
        }
        if self.k.blocks[cur].term == Terminator::Return {
            let span = self.k.blocks[cur].term_span;
            self.k.blocks[cur].term = Terminator::Jump(self.exit_block(span));
        }
    }

    /// Fills the switch that enters the kernel at the resume point.
    fn dispatch(&mut self, switch: BlockId, entry: BlockId) {
        let cases: Vec<(u32, BlockId)> =
            self.resume.iter().enumerate().map(|(i, &b)| (i as u32, b)).collect();
        debug_assert_eq!(cases.first().map(|c| c.1), Some(entry));
        self.k.blocks[switch.index()].term =
            Terminator::Switch { selector: self.pc, cases, default: self.round_end };
    }
}

fn empty_block(span: Span, term: Terminator) -> Block {
    Block { label: None, span, insts: Vec::new(), term, term_span: span }
}

/// The rounds' workgroup barrier, which predication keeps unmasked.
const BARRIER: InstKind = InstKind::WarpBarrier { publish: None };
