//! mbarrier objects (PTX ISA 9.2 §9.7.13.15): `mbarrier.init`, `inval`, `arrive` (with
//! a count, `.expect_tx`, `.noComplete`), `arrive_drop`, `expect_tx`, `complete_tx`,
//! `test_wait` and `try_wait` (on a state or `.parity`), `pending_count`, and
//! `cp.async.mbarrier.arrive` (§9.7.9.25.3.4).
//!
//! The object is 8 bytes of shared memory whose contents PTX leaves opaque; ptxvk's
//! are two 32-bit words:
//!
//! | word | bits | contents |
//! |---|---|---|
//! | 0 | 0..11 | pending arrivals of the current phase |
//! | 0 | 11..22 | expected arrivals (what the next phase starts with) |
//! | 0 | 22..32 | the current phase, modulo 1,024 |
//! | 1 | 0..32 | tx-count (signed) |
//!
//! so arrival counts go up to 2,047 (`init` with more ends the launch with
//! [`sys::STATUS_MBARRIER`]; CUDA's blocks have at most 1,024 threads). An arrive is one
//! atomic subtraction from word 0 (of the count from the pending arrivals, and for
//! `arrive_drop` from the expected ones too); the old word is the state it returns,
//! the state "prior to the arrive", so `pending_count` gives the pending count before
//! it. `expect_tx`/`complete_tx` are an atomic addition to word 1. A phase completes
//! when both counts are zero: whichever update leaves its own count at zero reads the
//! other word with an atomic read-modify-write and, when that count is zero too,
//! swaps word 0 from the value it saw to the next phase (pending = expected). Of two
//! concurrent last updates at least one sees the other's (each read-modify-write reads
//! the latest value of its word, and the acquire-release pair orders the earlier
//! update before the later one's read); the compare-and-swap from the exact value
//! completes the phase once.
//!
//! **Waits.** `test_wait` and `try_wait` are an acquire load of word 0: a state's
//! phase has completed when the current phase differs from the state's, the phase of
//! `.parity p` when the current phase's parity differs from p. `try_wait` does not
//! suspend: it tests once, as `test_wait` does (the ISA lets its time limit be any).
//! The load is a polling read, so a loop that waits for the phase is a polling loop,
//! and `pass::schedule` lets the arriving threads run while it waits: Vulkan promises
//! no forward progress between the subgroups of a workgroup (lavapipe runs them as
//! coroutines switched at barriers), and arrivals may come later in program order
//! than the wait (a producer warp in one branch, its consumers in another, as
//! warp-specialized kernels have them). A wait that can never complete ends the launch
//! with the scheduler's error, naming the loop.
//!
//! Asynchronous copies complete when they are issued (`sema::async_copy`), so
//! `cp.async.mbarrier.arrive.noinc` is an arrive-on of count 1 and plain
//! `cp.async.mbarrier.arrive` (pending count incremented, then an arrive-on) changes
//! nothing. `inval` does nothing: the memory may be reused, and `init` rewrites it.
//! `.shared::cluster` addresses are the CTA's own (`sema::cluster`).

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::modifier::{CopyForm, CopySpace, MbarrierForm as F, Modifier};
use ptxvk_frontend::{Diagnostic, Opcode, Span};

use super::expand::Emit;
use super::{Lowerer, Mods};
use crate::build::Build;
use crate::ir::{
    Address, AtomicOp, BinaryOp, CmpOp, InstKind, OpTy, Order, RegId, Scope, Space, SyncPoint,
    Value,
};
use crate::system as sys;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

const PENDING: u64 = sys::MBARRIER_MAX_COUNT as u64;
const EXPECTED_SHIFT: u64 = 11;
const PHASE_SHIFT: u64 = 22;

/// What a wait tests: the phase of a state, or the parity of a phase.
enum Waited {
    State(Value),
    Parity(Value),
}

impl Lowerer<'_> {
    /// `mbarrier.*`; `None` for other instructions.
    pub(super) fn mbarrier(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        (op == Opcode::Mbarrier).then(|| self.lower_mbarrier(i, m))
    }

    fn lower_mbarrier(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let form = |f: F| m.has(Modifier::MbarrierForm(f));
        let ops = i.operands.as_slice();
        let arity = |n: &[usize], what: &str| -> Result<(), Diagnostic> {
            if n.contains(&ops.len()) {
                Ok(())
            } else {
                Err(Diagnostic::error(span, format!("`mbarrier` {what}")))
            }
        };
        if form(F::PendingCount) {
            arity(&[2], "`.pending_count` takes a destination and a state")?;
            let dst = self.dst(&ops[0], U32, false)?;
            let state = self.src(&ops[1], U64, false, span)?;
            let mut e = Emit { l: self, span };
            let low = e.cvt(U32, U64, state);
            let pending = e.and(U32, low, Value::Imm(PENDING));
            e.mov(U32, dst, pending);
            return Ok(());
        }
        if form(F::Init) {
            arity(&[2], "`.init` takes [addr] and a count")?;
            let at = self.mbarrier_address(&ops[0], m)?;
            let count = self.src(&ops[1], U32, false, span)?;
            self.init_mbarrier(at, count, span);
            return Ok(());
        }
        if form(F::Inval) {
            arity(&[1], "`.inval` takes [addr]")?;
            self.mbarrier_address(&ops[0], m)?;
            return Ok(());
        }
        if form(F::TestWait) || form(F::TryWait) {
            // An optional suspend-time hint follows the state (`try_wait`).
            arity(
                &[3, 4],
                "waits take a predicate, [addr], a state or parity, and an optional time hint",
            )?;
            let dst = self.dst(&ops[0], OpTy::Pred, false)?;
            let at = self.mbarrier_address(&ops[1], m)?;
            let waited = if form(F::Parity) {
                Waited::Parity(self.src(&ops[2], U32, false, span)?)
            } else {
                Waited::State(self.src(&ops[2], U64, false, span)?)
            };
            if let Some(hint) = ops.get(3) {
                self.src(hint, U32, false, span)?;
            }
            self.wait(dst, at, waited, span);
            return Ok(());
        }
        let arrive = form(F::Arrive) || form(F::ArriveDrop);
        if form(F::ExpectTx) || form(F::CompleteTx) {
            if arrive {
                arity(&[3], "`.arrive.expect_tx` takes a state, [addr] and a tx-count")?;
            } else {
                arity(&[2], "`.expect_tx`/`.complete_tx` take [addr] and a tx-count")?;
            }
            let (addr, tx) = if arrive { (&ops[1], &ops[2]) } else { (&ops[0], &ops[1]) };
            let at = self.mbarrier_address(addr, m)?;
            let tx = self.src(tx, U32, false, span)?;
            let delta = if form(F::CompleteTx) {
                Emit { l: self, span }.bin(BinaryOp::Sub, U32, Value::Imm(0), tx)
            } else {
                tx
            };
            self.update_tx(at, delta, span);
            if arrive {
                let state = self.arrive(at, Value::Imm(1), form(F::ArriveDrop), true, span);
                self.state_result(&ops[0], state, span)?;
            }
            return Ok(());
        }
        if arrive {
            arity(&[2, 3], "`.arrive` takes a state, [addr] and an optional count")?;
            let at = self.mbarrier_address(&ops[1], m)?;
            let count = match ops.get(2) {
                Some(c) => self.src(c, U32, false, span)?,
                None => Value::Imm(1),
            };
            let complete = !form(F::NoComplete);
            let state = self.arrive(at, count, form(F::ArriveDrop), complete, span);
            return self.state_result(&ops[0], state, span);
        }
        Err(Diagnostic::error(
            span,
            "`mbarrier` takes `.init`, `.inval`, `.arrive`, `.arrive_drop`, `.expect_tx`, \
             `.complete_tx`, `.test_wait`, `.try_wait` or `.pending_count`",
        ))
    }

    /// `cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr]` (module doc).
    pub(super) fn async_copy_arrive(
        &mut self,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let [addr] = i.operands.as_slice() else {
            return Err(Diagnostic::error(span, "`cp.async.mbarrier.arrive` takes [addr]"));
        };
        let shared = m.details.iter().any(|d| {
            matches!(
                d.value,
                Modifier::CopySpace(
                    CopySpace::Shared | CopySpace::SharedCta | CopySpace::SharedCluster
                )
            )
        });
        let at = self.shared_address(addr, shared, span)?;
        if m.has(Modifier::CopyForm(CopyForm::NoInc)) {
            self.arrive(at, Value::Imm(1), false, true, span);
        }
        Ok(())
    }

    /// The mbarrier operand of a bulk copy (`[mbar]`, in `.shared::cluster`, which is
    /// the CTA's `.shared`).
    pub(super) fn mbarrier_operand(&mut self, op: &Operand) -> Result<Address, Diagnostic> {
        self.shared_address(op, true, op.span())
    }

    /// `complete_tx` of `bytes` (a u32 value) on the mbarrier at `at`.
    pub(super) fn complete_tx(&mut self, at: Address, bytes: Value, span: Span) {
        let minus = Emit { l: self, span }.bin(BinaryOp::Sub, U32, Value::Imm(0), bytes);
        self.update_tx(at, minus, span);
    }

    /// The shared address of an mbarrier operand: in `.shared` (also `::cta` and
    /// `::cluster`) or a generic address, which PTX requires to point into it.
    fn mbarrier_address(&mut self, op: &Operand, m: &Mods) -> Result<Address, Diagnostic> {
        let shared = match m.space.as_ref().map(|s| s.value) {
            None => false,
            Some(StateSpace::Shared) => true,
            Some(other) => {
                return Err(Diagnostic::error(
                    op.span(),
                    format!("an mbarrier is in `.shared` memory, not `{}`", other.directive()),
                ))
            }
        };
        self.shared_address(op, shared, op.span())
    }

    fn shared_address(
        &mut self,
        op: &Operand,
        shared: bool,
        span: Span,
    ) -> Result<Address, Diagnostic> {
        let (_, at) = self.address(op, StateSpace::Shared)?;
        if shared {
            return Ok(at);
        }
        // A generic address: its offset in the shared window.
        let wide = self.widen_generic(at, span);
        Ok(self.window_offset(wide, span))
    }

    /// Writes an arrive's state (its 64-bit destination, or nothing for `_`).
    fn state_result(&mut self, op: &Operand, state: Value, span: Span) -> Result<(), Diagnostic> {
        if matches!(op, Operand::Sink(_)) {
            return Ok(());
        }
        let dst = self.dst(op, U64, false)?;
        let mut e = Emit { l: self, span };
        let wide = e.cvt(U64, U32, state);
        e.mov(U64, dst, wide);
        Ok(())
    }

    /// An acquire-release atomic `op` on word `word` (0 or 1) of the mbarrier at `at`;
    /// the old value.
    fn barrier_atomic(
        &mut self,
        op: AtomicOp,
        at: Address,
        word: i64,
        src: Value,
        cmp: Value,
        span: Span,
    ) -> Value {
        let dst = self.temp(U32.storage(), span);
        let order = if op == AtomicOp::Load { Order::Acquire } else { Order::AcqRel };
        self.push(
            InstKind::Atomic {
                op,
                space: Space::Shared,
                ty: U32,
                scope: Scope::Cta,
                order,
                dst: Some(dst),
                addr: Address { base: at.base, offset: at.offset + 4 * word },
                src,
                cmp,
            },
            span,
        );
        Value::Reg(dst)
    }

    /// `mbarrier.init`: phase 0, `count` pending and expected, tx-count 0.
    fn init_mbarrier(&mut self, at: Address, count: Value, span: Span) {
        let mut e = Emit { l: self, span };
        let too_many = e.cmp(CmpOp::Gt, U32, count, Value::Imm(PENDING));
        self.fail_if(
            too_many,
            false,
            sys::STATUS_MBARRIER,
            &[Value::Imm(0), Value::Imm(0), count],
            span,
        );
        let mut e = Emit { l: self, span };
        let expected = e.bin(BinaryOp::Shl, U32, count, Value::Imm(EXPECTED_SHIFT));
        let word = e.or(U32, expected, count);
        for (w, v) in [(0, word), (1, Value::Imm(0))] {
            self.barrier_atomic(AtomicOp::Exch, at, w, v, Value::Imm(0), span);
        }
    }

    /// An arrive-on of `count` (and a drop of as many expected arrivals): the old
    /// word 0, which is the state. With `complete`, a phase it leaves with no pending
    /// arrivals completes if the tx-count is zero.
    fn arrive(
        &mut self,
        at: Address,
        count: Value,
        drop: bool,
        complete: bool,
        span: Span,
    ) -> Value {
        let mut e = Emit { l: self, span };
        let delta = if drop {
            let expected = e.bin(BinaryOp::Shl, U32, count, Value::Imm(EXPECTED_SHIFT));
            e.or(U32, expected, count)
        } else {
            count
        };
        let minus = e.bin(BinaryOp::Sub, U32, Value::Imm(0), delta);
        let old = self.barrier_atomic(AtomicOp::Add, at, 0, minus, Value::Imm(0), span);
        if complete {
            let mut e = Emit { l: self, span };
            let new = e.bin(BinaryOp::Sub, U32, old, delta);
            let pending = e.and(U32, new, Value::Imm(PENDING));
            let none_left = e.cmp(CmpOp::Eq, U32, pending, Value::Imm(0));
            self.guarded(none_left, false, span, |l| {
                let tx = l.barrier_atomic(AtomicOp::Add, at, 1, Value::Imm(0), Value::Imm(0), span);
                let idle = Emit { l, span }.cmp(CmpOp::Eq, U32, tx, Value::Imm(0));
                l.guarded(idle, false, span, |l| l.complete_phase(at, new, span));
            });
        }
        old
    }

    /// Adds `delta` to the tx-count; a phase it leaves at zero with no pending
    /// arrivals completes.
    fn update_tx(&mut self, at: Address, delta: Value, span: Span) {
        let old = self.barrier_atomic(AtomicOp::Add, at, 1, delta, Value::Imm(0), span);
        let mut e = Emit { l: self, span };
        let new = e.add(U32, old, delta);
        let idle = e.cmp(CmpOp::Eq, U32, new, Value::Imm(0));
        self.guarded(idle, false, span, |l| {
            let word = l.barrier_atomic(AtomicOp::Or, at, 0, Value::Imm(0), Value::Imm(0), span);
            let mut e = Emit { l, span };
            let pending = e.and(U32, word, Value::Imm(PENDING));
            let none_left = e.cmp(CmpOp::Eq, U32, pending, Value::Imm(0));
            l.guarded(none_left, false, span, |l| l.complete_phase(at, word, span));
        });
    }

    /// Swaps word 0 from `seen` (no pending arrivals) to the next phase.
    fn complete_phase(&mut self, at: Address, seen: Value, span: Span) {
        let mut e = Emit { l: self, span };
        let expected = e.bin(BinaryOp::Shr, U32, seen, Value::Imm(EXPECTED_SHIFT));
        let expected = e.and(U32, expected, Value::Imm(PENDING));
        let next = e.add(U32, seen, Value::Imm(1 << PHASE_SHIFT));
        let next = e.or(U32, next, expected);
        self.barrier_atomic(AtomicOp::Cas, at, 0, next, seen, span);
    }

    /// `test_wait`/`try_wait` (module doc): `dst` = whether the phase has completed.
    fn wait(&mut self, dst: RegId, at: Address, waited: Waited, span: Span) {
        self.kernel.polling_reads.push(span);
        let word = self.barrier_atomic(AtomicOp::Load, at, 0, Value::Imm(0), Value::Imm(0), span);
        let mut e = Emit { l: self, span };
        let phase = e.bin(BinaryOp::Shr, U32, word, Value::Imm(PHASE_SHIFT));
        let done = match waited {
            Waited::State(state) => {
                let low = e.cvt(U32, U64, state);
                let then = e.bin(BinaryOp::Shr, U32, low, Value::Imm(PHASE_SHIFT));
                e.cmp(CmpOp::Ne, U32, phase, then)
            }
            Waited::Parity(p) => {
                let parity = e.and(U32, phase, Value::Imm(1));
                let p = e.and(U32, p, Value::Imm(1));
                e.cmp(CmpOp::Ne, U32, parity, p)
            }
        };
        e.mov(OpTy::Pred, dst, Value::Reg(done));
        self.push(InstKind::SyncPoint { point: SyncPoint::Acquire }, span);
    }
}
