//! The mbarrier instructions ([`InstKind::Mbarrier`]) in the IR text format, every
//! field written:
//!
//! ```text
//! mbarrier_init [%r1], %r2
//! mbarrier_inval [%r1]
//! %rd1 = mbarrier_arrive [%r1], 1
//! %rd1 = mbarrier_arrive.drop.no_complete [%r1+8], %r2
//! mbarrier_arrive.expect_tx [%r1], 1, %r3
//! mbarrier_expect_tx [%r1], %r3
//! mbarrier_complete_tx [%r1], %r3
//! %p1 = mbarrier_test_wait [%r1], %rd1
//! %p1 = mbarrier_try_wait.parity [%r1], %r2
//! %r4 = mbarrier_pending_count %rd1
//! mbarrier_cp_async_arrive.noinc [%r1]
//! ```
//!
//! An arrive's state is its destination (none for `_`); its operands are the object,
//! the count and, with `.expect_tx`, the tx-count. A wait's operand is a state, or a
//! parity with `.parity`.

use ptxvk_frontend::Diagnostic;

use super::matrix::address;
use super::video::{take_flag, Line};
use crate::ir::*;

/// An mbarrier instruction's line.
pub(super) fn print(
    op: &MbarrierOp,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    let at = |a: Address| address(a, &reg);
    match op {
        MbarrierOp::Init { at: a, count } => format!("mbarrier_init {}, {}", at(*a), value(*count)),
        MbarrierOp::Inval { at: a } => format!("mbarrier_inval {}", at(*a)),
        MbarrierOp::Arrive { state, at: a, count, expect_tx, no_complete, drop } => {
            let head = state.map_or(String::new(), |r| format!("{} = ", reg(r)));
            let flags: String = [(*drop, ".drop"), (*no_complete, ".no_complete")]
                .iter()
                .chain([(expect_tx.is_some(), ".expect_tx")].iter())
                .filter(|(on, _)| *on)
                .map(|(_, f)| *f)
                .collect();
            let tx = expect_tx.map_or(String::new(), |t| format!(", {}", value(t)));
            format!("{head}mbarrier_arrive{flags} {}, {}{tx}", at(*a), value(*count))
        }
        MbarrierOp::ExpectTx { at: a, tx } => {
            format!("mbarrier_expect_tx {}, {}", at(*a), value(*tx))
        }
        MbarrierOp::CompleteTx { at: a, tx } => {
            format!("mbarrier_complete_tx {}, {}", at(*a), value(*tx))
        }
        MbarrierOp::TestWait(w) | MbarrierOp::TryWait(w) => {
            let name = if matches!(op, MbarrierOp::TryWait(_)) { "try_wait" } else { "test_wait" };
            let parity = if w.parity { ".parity" } else { "" };
            let (dst, a, waited) = (reg(w.dst), at(w.at), value(w.waited));
            format!("{dst} = mbarrier_{name}{parity} {a}, {waited}")
        }
        MbarrierOp::PendingCount { dst, state } => {
            format!("{} = mbarrier_pending_count {}", reg(*dst), value(*state))
        }
        MbarrierOp::CpAsyncArrive { at: a, noinc } => {
            let noinc = if *noinc { ".noinc" } else { "" };
            format!("mbarrier_cp_async_arrive{noinc} {}", at(*a))
        }
    }
}

/// The mbarrier instruction of a line whose opcode is one, else `None`; takes the
/// modifiers it knows from `words`. `addr` reads an address operand.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
    addr: impl Fn(&str) -> Result<Address, Diagnostic>,
) -> Result<Option<MbarrierOp>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let Some(name) = line.opcode.strip_prefix("mbarrier_") else { return Ok(None) };
    let bad = || (line.error)(format!("`{}` has the wrong operands", line.opcode));
    let value = |s: &str| (line.value)(s);
    let dst = || match line.dsts {
        [d] if *d != "_" => (line.reg)(d).map(Some),
        [] | ["_"] => Ok(None),
        _ => Err(bad()),
    };
    let needs_dst = || dst()?.ok_or_else(bad);
    let no_dst = || if line.dsts.is_empty() { Ok(()) } else { Err(bad()) };
    let op = match (name, line.ops) {
        ("init", [a, count]) => {
            no_dst()?;
            MbarrierOp::Init { at: addr(a)?, count: value(count)? }
        }
        ("inval", [a]) => {
            no_dst()?;
            MbarrierOp::Inval { at: addr(a)? }
        }
        ("arrive", [a, count, rest @ ..]) => {
            let drop = take_flag(words, "drop");
            let no_complete = take_flag(words, "no_complete");
            let expect = take_flag(words, "expect_tx");
            let expect_tx = match (expect, rest) {
                (true, [tx]) => Some(value(tx)?),
                (false, []) => None,
                _ => return Err(bad()),
            };
            let (state, at, count) = (dst()?, addr(a)?, value(count)?);
            MbarrierOp::Arrive { state, at, count, expect_tx, no_complete, drop }
        }
        ("expect_tx", [a, tx]) => {
            no_dst()?;
            MbarrierOp::ExpectTx { at: addr(a)?, tx: value(tx)? }
        }
        ("complete_tx", [a, tx]) => {
            no_dst()?;
            MbarrierOp::CompleteTx { at: addr(a)?, tx: value(tx)? }
        }
        ("test_wait" | "try_wait", [a, waited]) => {
            let parity = take_flag(words, "parity");
            let w =
                MbarrierWait { dst: needs_dst()?, at: addr(a)?, parity, waited: value(waited)? };
            if name == "try_wait" {
                MbarrierOp::TryWait(w)
            } else {
                MbarrierOp::TestWait(w)
            }
        }
        ("pending_count", [state]) => {
            MbarrierOp::PendingCount { dst: needs_dst()?, state: value(state)? }
        }
        ("cp_async_arrive", [a]) => {
            no_dst()?;
            MbarrierOp::CpAsyncArrive { at: addr(a)?, noinc: take_flag(words, "noinc") }
        }
        _ => return Err(bad()),
    };
    Ok(Some(op))
}

#[cfg(test)]
mod tests {
    const MBARRIERS: &str = "\
kernel mbarriers {
    params size 0 align 1
    shared 64
    local 0
    entry bb0
    reg pred %p1
    reg i32 %r1 %r2 %r3 %r4
    reg i64 %rd1
bb0:
    mbarrier_init [%r1], %r2
    mbarrier_inval [%r1]
    %rd1 = mbarrier_arrive [%r1], 1
    %rd1 = mbarrier_arrive.drop.no_complete [%r1+8], %r2
    mbarrier_arrive.expect_tx [%r1], 1, %r3
    mbarrier_expect_tx [%r1], %r3
    mbarrier_complete_tx [16], 4096
    %p1 = mbarrier_test_wait [%r1], %rd1
    %p1 = mbarrier_try_wait.parity [%r1], %r2
    %r4 = mbarrier_pending_count %rd1
    mbarrier_cp_async_arrive.noinc [%r1]
    mbarrier_cp_async_arrive [%r1]
    return
}
";

    #[test]
    fn every_mbarrier_operation_round_trips() {
        let k = crate::text::parse(MBARRIERS).expect("parses").remove(0);
        let printed = crate::text::print(&k);
        for line in MBARRIERS.lines().filter(|l| l.contains("mbarrier_")) {
            assert!(printed.contains(line.trim()), "{line}\n{printed}");
        }
        let again = crate::text::parse(&printed).expect("parses again").remove(0);
        assert_eq!(crate::text::print(&again), printed);
    }
}
