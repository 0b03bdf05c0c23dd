//! Pass: the mbarrier instructions ([`InstKind::Mbarrier`], whose specification is
//! [`MbarrierOp`]'s module doc) become acquire-release atomics on the object's two
//! shared words (CFG → CFG).
//!
//! **Updates.** An arrive is one atomic subtraction from word 0 (of the count from the
//! pending arrivals, and for a drop from the expected ones too); the old word is the
//! state it returns. `expect_tx`/`complete_tx` are an atomic addition to word 1 (of
//! the negated count for `complete_tx`). A phase completes when both counts are zero:
//! whichever update leaves its own count at zero reads the other word with an atomic
//! read-modify-write and, when that count is zero too, swaps word 0 from the value it
//! saw to the next phase (pending = expected). Of two concurrent last updates at least
//! one sees the other's (each read-modify-write reads the latest value of its word,
//! and the acquire-release pair orders the earlier update before the later one's
//! read); the compare-and-swap from the exact value completes the phase once. `init`
//! tests its count against the field's range, then exchanges both words.
//!
//! **Waits.** `test_wait` and `try_wait` are an acquire load of word 0 and a
//! comparison of its phase (or parity), then a [`SyncPoint::Acquire`]. The load is a
//! polling read ([`Kernel::polling_reads`]), so a loop that waits for the phase is a
//! polling loop, and `pass::schedule` lets the arriving threads run while it waits:
//! Vulkan promises no forward progress between the subgroups of a workgroup (lavapipe
//! runs them as coroutines switched at barriers), and arrivals may come later in
//! program order than the wait (a producer warp in one branch, its consumers in
//! another, as warp-specialized kernels have them). A wait that can never complete
//! ends the launch with the scheduler's error, naming the loop.
//!
//! Pre: CFG IR after `pass::inline` (a failing `init` ends the thread with a
//! `Return`), whose mbarrier operations semantic analysis resolved (`sema::mbarrier`).
//!
//! Post: no [`InstKind::Mbarrier`] is left; each became atomics with its span, and the
//! blocks of its conditions, appended to the kernel; the instructions after it move to
//! the last of them. Runs before `pass::schedule`, which reads the polling reads.

use ptxvk_frontend::Diagnostic;

use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{
    Address, AtomicOp, BinaryOp, CmpOp, InstKind, Kernel, MbarrierOp, MbarrierWait, OpTy, Order,
    Scope, Space, SyncPoint, Value,
};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// The pending-arrivals field of word 0 (and the largest count).
const PENDING: u64 = sys::MBARRIER_MAX_COUNT as u64;
const EXPECTED_SHIFT: u64 = 11;
const PHASE_SHIFT: u64 = 22;

/// Whether `kind` is an instruction this pass expands (`pass::leftover`).
pub fn is_mbarrier(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Mbarrier(_))
}

/// Expands every mbarrier operation of `k` as the module doc says.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    expander::each(k, is_mbarrier, |k, cur, span, kind| {
        let InstKind::Mbarrier(op) = kind else { return Ok(cur) };
        let mut e = Expand { k, cur, span };
        e.op(*op);
        Ok(e.cur)
    })
}

expander::expansion!(
    /// Builds the expansion of one instruction from block `cur` on.
    struct Expand
);

impl Expand<'_> {
    fn op(&mut self, op: MbarrierOp) {
        match op {
            MbarrierOp::Init { at, count } => self.init(at, count),
            MbarrierOp::Inval { .. } | MbarrierOp::CpAsyncArrive { noinc: false, .. } => {}
            MbarrierOp::CpAsyncArrive { at, noinc: true } => {
                self.arrive(at, Value::Imm(1), false, true);
            }
            MbarrierOp::Arrive { state, at, count, expect_tx, no_complete, drop } => {
                if let Some(tx) = expect_tx {
                    self.update_tx(at, tx);
                }
                let old = self.arrive(at, count, drop, !no_complete);
                if let Some(dst) = state {
                    let wide = self.cvt(U64, U32, old);
                    self.mov(U64, dst, wide);
                }
            }
            MbarrierOp::ExpectTx { at, tx } => self.update_tx(at, tx),
            MbarrierOp::CompleteTx { at, tx } => {
                let minus = self.bin(BinaryOp::Sub, U32, Value::Imm(0), tx);
                self.update_tx(at, minus);
            }
            MbarrierOp::TestWait(w) | MbarrierOp::TryWait(w) => self.wait(w),
            MbarrierOp::PendingCount { dst, state } => {
                let low = self.cvt(U32, U64, state);
                let pending = self.and(U32, low, Value::Imm(PENDING));
                self.mov(U32, dst, pending);
            }
        }
    }

    /// An acquire-release atomic `op` on word `word` (0 or 1) of the mbarrier at `at`
    /// (an acquire load for `Load`); the old value.
    fn barrier_atomic(
        &mut self,
        op: AtomicOp,
        at: Address,
        word: i64,
        src: Value,
        cmp: Value,
    ) -> Value {
        let dst = self.temp(U32);
        let order = if op == AtomicOp::Load { Order::Acquire } else { Order::AcqRel };
        self.push(InstKind::Atomic {
            op,
            space: Space::Shared,
            ty: U32,
            scope: Scope::Cta,
            order,
            dst: Some(dst),
            addr: Address { base: at.base, offset: at.offset + 4 * word },
            src,
            cmp,
        });
        Value::Reg(dst)
    }

    /// `init`: phase 0, `count` pending and expected, tx-count 0.
    fn init(&mut self, at: Address, count: Value) {
        let too_many = self.cmp(CmpOp::Gt, U32, count, Value::Imm(PENDING));
        self.fail_if(too_many, sys::STATUS_MBARRIER, &[Value::Imm(0), Value::Imm(0), count]);
        let expected = self.bin(BinaryOp::Shl, U32, count, Value::Imm(EXPECTED_SHIFT));
        let word = self.or(U32, expected, count);
        for (w, v) in [(0, word), (1, Value::Imm(0))] {
            self.barrier_atomic(AtomicOp::Exch, at, w, v, Value::Imm(0));
        }
    }

    /// An arrive-on of `count` (and a drop of as many expected arrivals): the old
    /// word 0, which is the state. With `complete`, a phase it leaves with no pending
    /// arrivals completes if the tx-count is zero.
    fn arrive(&mut self, at: Address, count: Value, drop: bool, complete: bool) -> Value {
        let delta = if drop {
            let expected = self.bin(BinaryOp::Shl, U32, count, Value::Imm(EXPECTED_SHIFT));
            self.or(U32, expected, count)
        } else {
            count
        };
        let minus = self.bin(BinaryOp::Sub, U32, Value::Imm(0), delta);
        let old = self.barrier_atomic(AtomicOp::Add, at, 0, minus, Value::Imm(0));
        if complete {
            let new = self.bin(BinaryOp::Sub, U32, old, delta);
            let pending = self.and(U32, new, Value::Imm(PENDING));
            let none_left = self.cmp(CmpOp::Eq, U32, pending, Value::Imm(0));
            self.guarded(none_left, false, |e| {
                let tx = e.barrier_atomic(AtomicOp::Add, at, 1, Value::Imm(0), Value::Imm(0));
                let idle = e.cmp(CmpOp::Eq, U32, tx, Value::Imm(0));
                e.guarded(idle, false, |e| e.complete_phase(at, new));
            });
        }
        old
    }

    /// Adds `delta` to the tx-count; a phase it leaves at zero with no pending
    /// arrivals completes.
    fn update_tx(&mut self, at: Address, delta: Value) {
        let old = self.barrier_atomic(AtomicOp::Add, at, 1, delta, Value::Imm(0));
        let new = self.add(U32, old, delta);
        let idle = self.cmp(CmpOp::Eq, U32, new, Value::Imm(0));
        self.guarded(idle, false, |e| {
            let word = e.barrier_atomic(AtomicOp::Or, at, 0, Value::Imm(0), Value::Imm(0));
            let pending = e.and(U32, word, Value::Imm(PENDING));
            let none_left = e.cmp(CmpOp::Eq, U32, pending, Value::Imm(0));
            e.guarded(none_left, false, |e| e.complete_phase(at, word));
        });
    }

    /// Swaps word 0 from `seen` (no pending arrivals) to the next phase.
    fn complete_phase(&mut self, at: Address, seen: Value) {
        let expected = self.bin(BinaryOp::Shr, U32, seen, Value::Imm(EXPECTED_SHIFT));
        let expected = self.and(U32, expected, Value::Imm(PENDING));
        let next = self.add(U32, seen, Value::Imm(1 << PHASE_SHIFT));
        let next = self.or(U32, next, expected);
        self.barrier_atomic(AtomicOp::Cas, at, 0, next, seen);
    }

    /// `test_wait`/`try_wait` (module doc): `dst` = whether the phase has completed.
    fn wait(&mut self, w: MbarrierWait) {
        if !self.k.polling_reads.contains(&self.span) {
            self.k.polling_reads.push(self.span);
        }
        let word = self.barrier_atomic(AtomicOp::Load, w.at, 0, Value::Imm(0), Value::Imm(0));
        let phase = self.bin(BinaryOp::Shr, U32, word, Value::Imm(PHASE_SHIFT));
        let done = if w.parity {
            let parity = self.and(U32, phase, Value::Imm(1));
            let p = self.and(U32, w.waited, Value::Imm(1));
            self.cmp(CmpOp::Ne, U32, parity, p)
        } else {
            let low = self.cvt(U32, U64, w.waited);
            let then = self.bin(BinaryOp::Shr, U32, low, Value::Imm(PHASE_SHIFT));
            self.cmp(CmpOp::Ne, U32, phase, then)
        };
        self.mov(OpTy::Pred, w.dst, Value::Reg(done));
        self.push(InstKind::SyncPoint { point: SyncPoint::Acquire });
    }
}
