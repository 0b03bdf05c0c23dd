//! mbarrier objects ([`InstKind::Mbarrier`](crate::ir::InstKind::Mbarrier)) modelled
//! from PTX ISA 9.2 §9.7.13.15, independently of their expansion
//! (`pass::expand_mbarrier`, which updates the packed words with atomics and completes
//! a phase by compare-and-swap): here an object is its fields — the current phase, its
//! pending arrivals, the expected arrivals of the next phase and the tx-count — and
//! each operation updates them one at a time, completing the phase (§9.7.13.15.6)
//! when the pending arrivals and the tx-count both reach zero. Only the object's bytes
//! in shared memory and an arrive's state follow the IR's layout
//! ([`MbarrierOp`](crate::ir::MbarrierOp)'s module doc), since a program can see them.

use crate::system::MBARRIER_MAX_COUNT;

/// The phases the layout keeps apart: 10 bits.
const PHASES: u32 = 1 << 10;
/// The tx-count's range (§9.7.13.15.1): ±(2^20 - 1).
const TX_LIMIT: i64 = (1 << 20) - 1;

/// An mbarrier object's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Object {
    /// The current phase, modulo 1,024.
    pub phase: u32,
    /// Arrivals still expected in the current phase.
    pub pending: u32,
    /// The arrivals each next phase expects (the init count, less the drops).
    pub expected: u32,
    /// The tx-count of the current phase.
    pub tx: i64,
}

/// What a program did that the ISA leaves undefined.
pub type Undefined = &'static str;

impl Object {
    /// The object in shared memory's two words (the IR's layout).
    pub fn decode(words: [u32; 2]) -> Object {
        let field = MBARRIER_MAX_COUNT;
        Object {
            pending: words[0] & field,
            expected: words[0] >> 11 & field,
            phase: words[0] >> 22,
            tx: i64::from(words[1] as i32),
        }
    }

    /// Its two words in shared memory.
    pub fn encode(&self) -> [u32; 2] {
        [self.phase << 22 | self.expected << 11 | self.pending, self.tx as i32 as u32]
    }

    /// `mbarrier.init` with `count`; `None` when the count is above what ptxvk's
    /// layout holds (the launch fails).
    pub fn init(count: u32) -> Option<Object> {
        (count <= MBARRIER_MAX_COUNT).then_some(Object {
            phase: 0,
            pending: count,
            expected: count,
            tx: 0,
        })
    }

    /// The state an arrive returns: the object before it, as the layout's word 0.
    pub fn state(&self) -> u64 {
        u64::from(self.encode()[0])
    }

    /// The phase completes when nothing is pending: the next starts with the expected
    /// arrivals (§9.7.13.15.6).
    fn settle(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase = (self.phase + 1) % PHASES;
            self.pending = self.expected;
        }
    }

    /// An arrive-on of `count` (a drop of as many expected arrivals too); with
    /// `complete`, the phase completes if this leaves nothing pending.
    pub fn arrive(&mut self, count: u32, drop: bool, complete: bool) -> Result<(), Undefined> {
        if count > self.pending || (drop && count > self.expected) {
            return Err("an mbarrier arrive of more than is pending or expected");
        }
        self.pending -= count;
        if drop {
            self.expected -= count;
        }
        if complete && self.pending == 0 {
            self.settle();
        }
        Ok(())
    }

    /// `expect_tx` (a positive `delta`) or `complete_tx` (a negative one).
    pub fn update_tx(&mut self, delta: i64) -> Result<(), Undefined> {
        let tx = self.tx + delta;
        if tx.abs() > TX_LIMIT {
            return Err("an mbarrier tx-count out of range");
        }
        self.tx = tx;
        if tx == 0 {
            self.settle();
        }
        Ok(())
    }

    /// Whether the phase that a wait names has completed: the phase of `state`, or
    /// with `parity` the phase of that parity (bit 0 of `waited`), which is the
    /// current phase's predecessor when the parities differ.
    pub fn completed(&self, parity: bool, waited: u64) -> bool {
        if parity {
            self.phase & 1 != (waited & 1) as u32
        } else {
            Object::decode([waited as u32, 0]).phase != self.phase
        }
    }
}

/// `mbarrier.pending_count` of `state`: the pending arrivals before the arrive.
pub fn pending_count(state: u64) -> u32 {
    Object::decode([state as u32, 0]).pending
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_completes_when_arrivals_and_transactions_are_done() {
        let mut o = Object::init(2).expect("in range");
        o.update_tx(64).expect("expect_tx");
        o.arrive(1, false, true).expect("arrive");
        o.arrive(1, false, true).expect("arrive");
        assert_eq!((o.phase, o.pending), (0, 0), "bytes still expected");
        let before = o.state();
        o.update_tx(-64).expect("complete_tx");
        assert_eq!((o.phase, o.pending, o.tx), (1, 2, 0));
        assert!(o.completed(false, before) && o.completed(true, 0) && !o.completed(true, 1));
        assert_eq!(Object::decode(o.encode()), o);
        assert_eq!(pending_count(before), 0);
        o.arrive(1, true, true).expect("drop");
        o.arrive(1, false, true).expect("arrive");
        assert_eq!((o.phase, o.pending, o.expected), (2, 1, 1));
        assert!(o.arrive(2, false, true).is_err());
        assert!(Object::init(MBARRIER_MAX_COUNT + 1).is_none());
    }
}
