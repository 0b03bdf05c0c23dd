//! The glue of [`InstKind::Mbarrier`](crate::ir::InstKind::Mbarrier) before
//! `pass::expand_mbarrier`: the object's words read from the block's shared window,
//! updated by the ISA's model (`super::super::mbarrier`) and written back. A wait lets
//! the other threads run after it, as the polling read it is.

use ptxvk_frontend::Span;

use super::super::mbarrier::{pending_count, Object};
use super::{Ctx, Error, State, Thread, WaitKind};
use crate::ir::{Address, MbarrierOp, Space};

impl Thread<'_> {
    /// Runs an mbarrier operation; a wait yields after it.
    pub(super) fn exec_mbarrier(
        &mut self,
        cx: &mut Ctx<'_>,
        op: &MbarrierOp,
        span: Span,
    ) -> Result<Option<WaitKind>, Error> {
        let k = cx.k;
        let undefined = |what: &str| Error::Undefined { what: what.into(), span };
        match op {
            MbarrierOp::PendingCount { dst, state } => {
                let v = pending_count(self.at_bits(*state, 64));
                self.set(k, *dst, u64::from(v));
            }
            MbarrierOp::Inval { .. } | MbarrierOp::CpAsyncArrive { noinc: false, .. } => {}
            MbarrierOp::Init { at, count } => match Object::init(self.at_bits(*count, 32) as u32) {
                Some(o) => self.store_object(cx, at, o, span)?,
                None => self.fail_mbarrier(cx, self.at_bits(*count, 32), span)?,
            },
            MbarrierOp::CpAsyncArrive { at, noinc: true } => {
                let mut o = self.load_object(cx, at, span)?;
                o.arrive(1, false, true).map_err(undefined)?;
                self.store_object(cx, at, o, span)?;
            }
            MbarrierOp::Arrive { state, at, count, expect_tx, no_complete, drop } => {
                let mut o = self.load_object(cx, at, span)?;
                if let Some(tx) = expect_tx {
                    o.update_tx(self.at_bits(*tx, 32) as i64).map_err(undefined)?;
                }
                let before = o.state();
                let count = self.at_bits(*count, 32) as u32;
                o.arrive(count, *drop, !no_complete).map_err(undefined)?;
                self.store_object(cx, at, o, span)?;
                if let Some(r) = state {
                    self.set(k, *r, before);
                }
            }
            MbarrierOp::ExpectTx { at, tx } | MbarrierOp::CompleteTx { at, tx } => {
                let mut o = self.load_object(cx, at, span)?;
                let tx = self.at_bits(*tx, 32) as i64;
                let delta = if matches!(op, MbarrierOp::CompleteTx { .. }) { -tx } else { tx };
                o.update_tx(delta).map_err(undefined)?;
                self.store_object(cx, at, o, span)?;
            }
            MbarrierOp::TestWait(w) | MbarrierOp::TryWait(w) => {
                let o = self.load_object(cx, &w.at, span)?;
                let waited = self.at_bits(w.waited, if w.parity { 32 } else { 64 });
                self.set(k, w.dst, u64::from(o.completed(w.parity, waited)));
                return Ok(Some(WaitKind::Yield));
            }
        }
        Ok(None)
    }

    /// The object at `at`'s shared bytes (8, aligned).
    fn load_object(&self, cx: &Ctx<'_>, at: &Address, span: Span) -> Result<Object, Error> {
        let a = self.object_address(at, span)?;
        let w0 = self.read(cx, Space::Shared, a, 4, span)? as u32;
        let w1 = self.read(cx, Space::Shared, a + 4, 4, span)? as u32;
        Ok(Object::decode([w0, w1]))
    }

    fn store_object(
        &mut self,
        cx: &mut Ctx<'_>,
        at: &Address,
        o: Object,
        span: Span,
    ) -> Result<(), Error> {
        let a = self.object_address(at, span)?;
        let [w0, w1] = o.encode();
        self.write(cx, Space::Shared, a, 4, u64::from(w0), span)?;
        self.write(cx, Space::Shared, a + 4, 4, u64::from(w1), span)
    }

    fn object_address(&self, at: &Address, span: Span) -> Result<u64, Error> {
        let a = self.address(Space::Shared, at);
        if !a.is_multiple_of(8) {
            let what = format!("an mbarrier object at {a:#x}, not 8-byte aligned");
            return Err(Error::Undefined { what, span });
        }
        Ok(a)
    }

    /// An `init` count past the layout's range: the launch fails with
    /// [`crate::system::STATUS_MBARRIER`] and the count in the line field, unless it
    /// failed first, and the thread ends.
    fn fail_mbarrier(&mut self, cx: &mut Ctx<'_>, count: u64, span: Span) -> Result<(), Error> {
        self.record_failure(cx, crate::system::STATUS_MBARRIER, &[0, 0, count], span)?;
        self.state = State::Exited;
        Ok(())
    }
}
