//! The mbarrier instructions of the CFG IR before `pass::expand_mbarrier`
//! ([`crate::ir::InstKind::Mbarrier`], [`MbarrierOp`]): `mbarrier.*` (PTX ISA 9.2
//! §9.7.13.15) and `cp.async.mbarrier.arrive` (§9.7.9.25.3.4) as semantic analysis
//! resolves them, with the object's shared address and the operands' values.
//!
//! # Specification
//!
//! An mbarrier object is 8 bytes of shared memory at a 32-bit shared address (`at`),
//! whose contents PTX leaves opaque. ptxvk's are two 32-bit words, and the state that
//! an arrive returns (64-bit) is word 0 before the arrive, zero-extended:
//!
//! | word | bits | contents |
//! |---|---|---|
//! | 0 | 0..11 | pending arrivals of the current phase |
//! | 0 | 11..22 | expected arrivals (what the next phase starts with) |
//! | 0 | 22..32 | the current phase, modulo 1,024 |
//! | 1 | 0..32 | tx-count (signed) |
//!
//! so arrival counts go up to [`crate::system::MBARRIER_MAX_COUNT`] (2,047; CUDA's
//! blocks have at most 1,024 threads). The phase completes (§9.7.13.15.6) when an
//! update leaves both the pending arrivals and the tx-count at zero: the phase advances
//! by one and its pending arrivals are the expected ones.
//!
//! * `Init`: phase 0, `count` (u32) pending and expected, tx-count 0. A count above
//!   2,047 fails the launch with [`crate::system::STATUS_MBARRIER`] (details 0, 0 and
//!   the count) and ends the thread.
//! * `Inval`: nothing (the memory may be reused, and `Init` rewrites it).
//! * `Arrive`: first, with `expect_tx`, the tx-count grows by it (as `ExpectTx`); then
//!   the pending arrivals drop by `count` (u32), and with `drop` the expected ones too
//!   (`arrive_drop`); `state` gets the state before the arrive. With `no_complete`
//!   (`.noComplete`) the arrive does not complete the phase even when it leaves
//!   nothing pending (the ISA makes that case undefined; a later tx update may
//!   complete it). Counts are modulo the field: arriving more than is pending is
//!   undefined.
//! * `ExpectTx`, `CompleteTx`: the tx-count grows, or shrinks, by `tx` (u32).
//! * `TestWait`, `TryWait` ([`MbarrierWait`]): `dst` (a predicate) holds when the phase
//!   that `waited` names has completed: with `parity`, the phase whose parity is
//!   `waited`'s bit 0 (u32), when the current phase's parity differs from it; else the
//!   phase of the state `waited` (u64), when the current phase differs from the
//!   state's. A wait acquires (its read orders the reads after it, §8). `TryWait` does
//!   not suspend: it tests once, as `TestWait` does (the ISA lets its time limit be
//!   any), and its read is a polling read (`Kernel::polling_reads`, `pass::schedule`).
//! * `PendingCount`: `dst` (u32) gets the pending arrivals of `state` (u64), the
//!   count before the arrive that returned it.
//! * `CpAsyncArrive`: the arrive-on that tracks the thread's earlier `cp.async`s
//!   (§9.7.9.25.3.4). They complete when issued (`CopyInst`), so with `noinc` it is an
//!   `Arrive` of count 1, and without (pending count incremented, then an arrive-on)
//!   nothing.
//!
//! Updates are atomic and acquire-release at CTA scope (§8); `.shared::cluster`
//! addresses are the CTA's own (`sema::cluster`). The copies that complete on an
//! mbarrier (`cp.async.bulk`, `cp.async.bulk.tensor` into shared memory) are followed
//! by a `CompleteTx` of their bytes.

use super::{Address, RegId, Value};

/// An mbarrier instruction (module doc).
#[derive(Clone, Debug, PartialEq)]
pub enum MbarrierOp {
    /// `mbarrier.init [at], count`.
    Init { at: Address, count: Value },
    /// `mbarrier.inval [at]`.
    Inval { at: Address },
    /// `mbarrier.arrive{.expect_tx}{.noComplete}` and `arrive_drop`.
    Arrive {
        /// The 64-bit state's destination; `None` for `_`.
        state: Option<RegId>,
        at: Address,
        /// Arrivals (u32).
        count: Value,
        /// The tx-count that `.expect_tx` adds first (u32).
        expect_tx: Option<Value>,
        no_complete: bool,
        drop: bool,
    },
    /// `mbarrier.expect_tx [at], tx`.
    ExpectTx { at: Address, tx: Value },
    /// `mbarrier.complete_tx [at], tx`, and the completion of a bulk or tensor copy.
    CompleteTx { at: Address, tx: Value },
    /// `mbarrier.test_wait{.parity}`.
    TestWait(MbarrierWait),
    /// `mbarrier.try_wait{.parity}` (its time hint dropped: it tests once).
    TryWait(MbarrierWait),
    /// `mbarrier.pending_count dst, state`.
    PendingCount { dst: RegId, state: Value },
    /// `cp.async.mbarrier.arrive{.noinc} [at]`.
    CpAsyncArrive { at: Address, noinc: bool },
}

/// What a wait tests (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MbarrierWait {
    /// The predicate: whether the phase has completed.
    pub dst: RegId,
    pub at: Address,
    /// `waited` is a parity (u32) rather than a state (u64).
    pub parity: bool,
    pub waited: Value,
}

impl MbarrierOp {
    /// The object's address, if the operation has one.
    pub fn at(&self) -> Option<Address> {
        match self {
            MbarrierOp::Init { at, .. }
            | MbarrierOp::Inval { at }
            | MbarrierOp::Arrive { at, .. }
            | MbarrierOp::ExpectTx { at, .. }
            | MbarrierOp::CompleteTx { at, .. }
            | MbarrierOp::CpAsyncArrive { at, .. } => Some(*at),
            MbarrierOp::TestWait(w) | MbarrierOp::TryWait(w) => Some(w.at),
            MbarrierOp::PendingCount { .. } => None,
        }
    }

    /// The register it writes, with its width in bits.
    pub fn def(&self) -> Option<(RegId, u32)> {
        match self {
            MbarrierOp::Arrive { state, .. } => state.map(|r| (r, 64)),
            MbarrierOp::TestWait(w) | MbarrierOp::TryWait(w) => Some((w.dst, 1)),
            MbarrierOp::PendingCount { dst, .. } => Some((*dst, 32)),
            _ => None,
        }
    }

    /// The values it reads, with their widths in bits (address bases have none: the
    /// verifier checks them as addresses).
    pub fn uses(&self) -> Vec<(Value, Option<u32>)> {
        let base = self.at().and_then(|a| a.base).map(|r| (Value::Reg(r), None));
        let values: Vec<(Value, Option<u32>)> = match self {
            MbarrierOp::Init { count, .. } => vec![(*count, Some(32))],
            MbarrierOp::Arrive { count, expect_tx, .. } => {
                std::iter::once(count).chain(expect_tx).map(|v| (*v, Some(32))).collect()
            }
            MbarrierOp::ExpectTx { tx, .. } | MbarrierOp::CompleteTx { tx, .. } => {
                vec![(*tx, Some(32))]
            }
            MbarrierOp::TestWait(w) | MbarrierOp::TryWait(w) => {
                vec![(w.waited, Some(if w.parity { 32 } else { 64 }))]
            }
            MbarrierOp::PendingCount { state, .. } => vec![(*state, Some(64))],
            MbarrierOp::Inval { .. } | MbarrierOp::CpAsyncArrive { .. } => Vec::new(),
        };
        base.into_iter().chain(values).collect()
    }

    /// Every register it names, for renaming (`pass::inline`).
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        let value = |v: &mut Value, f: &mut dyn FnMut(&mut RegId)| {
            if let Value::Reg(r) = v {
                f(r)
            }
        };
        match self {
            MbarrierOp::Init { at, count } => {
                at.base.iter_mut().for_each(&mut *f);
                value(count, f);
            }
            MbarrierOp::Inval { at } | MbarrierOp::CpAsyncArrive { at, .. } => {
                at.base.iter_mut().for_each(&mut *f)
            }
            MbarrierOp::Arrive { state, at, count, expect_tx, .. } => {
                state.iter_mut().chain(at.base.iter_mut()).for_each(&mut *f);
                std::iter::once(count).chain(expect_tx.iter_mut()).for_each(|v| value(v, f));
            }
            MbarrierOp::ExpectTx { at, tx } | MbarrierOp::CompleteTx { at, tx } => {
                at.base.iter_mut().for_each(&mut *f);
                value(tx, f);
            }
            MbarrierOp::TestWait(w) | MbarrierOp::TryWait(w) => {
                std::iter::once(&mut w.dst).chain(w.at.base.iter_mut()).for_each(&mut *f);
                value(&mut w.waited, f);
            }
            MbarrierOp::PendingCount { dst, state } => {
                f(dst);
                value(state, f);
            }
        }
    }
}
