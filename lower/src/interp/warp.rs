//! A block of threads: each runs alone until it must wait for others ([`WaitKind`]),
//! then the waits are resolved together, as PTX's warps of 32 threads (linear thread
//! ids `32w..32w+32`, PTX ISA 9.2 §2.2.1) and the block's barriers would:
//!
//! 1. threads that yielded (at a sync point, or spinning too long) resume, for up to
//!    [`PATIENCE`] rounds in a row: a lane on its way out of a polling loop takes part
//!    in the collective after it;
//! 2. a warp collective (an exchange's publish, a subgroup operation) runs once every
//!    thread of its warp waits or has exited, among the threads waiting at the same
//!    instruction (one group per warp at a time); a lane that is elsewhere or has
//!    exited publishes 0, and a shuffle from it reads an arbitrary value;
//! 3. else yielded threads resume, or every thread waits at a block barrier
//!    ([`release_barrier`]; a `bar.red` gets its result from the predicates of the
//!    threads at one, [`reduce`]).

use super::memory;
use super::thread::{Ctx, State, Thread, WaitKind};
use super::Error;
use crate::ir::{BarrierReduction, InstKind, Kernel, SubgroupOp};

/// What a shuffle from a lane that does not take part reads (SPIR-V leaves it
/// undefined); a value no program computes by chance, so that relying on it shows.
pub const UNDEFINED_LANE: u32 = 0xdead_beef;

/// Runs the block's threads to their end.
pub(super) fn run_block<'a>(cx: &mut Ctx<'a>, threads: &mut [Thread<'a>]) -> Result<(), Error> {
    // Rounds in a row in which spinning threads ran while collectives waited.
    let mut patience = 0;
    loop {
        for t in threads.iter_mut() {
            if t.state == State::Running {
                t.run(cx)?;
            }
        }
        if threads.iter().all(|t| t.state == State::Exited) {
            return Ok(());
        }
        // Threads that only let others run go on first: a lane on its way to a
        // collective (out of a polling loop) takes part in it, as on a GPU, where the
        // warp reconverges before it. Unless they spin for the collective's result.
        let yielded =
            |t: &Thread<'_>| matches!(t.state, State::Waiting { kind: WaitKind::Yield, .. });
        let spinning = threads.iter().any(yielded);
        if spinning && patience < PATIENCE {
            patience += 1;
            threads.iter_mut().filter(|t| yielded(t)).for_each(|t| t.state = State::Running);
            continue;
        }
        patience = 0;
        let mut released = false;
        for warp in threads.chunks_mut(32) {
            released |= release_warp(cx, warp)?;
        }
        if released {
            continue;
        }
        if spinning {
            threads.iter_mut().filter(|t| yielded(t)).for_each(|t| t.state = State::Running);
        } else {
            release_barrier(cx, threads)?;
        }
    }
}

/// Rounds of spinning threads before waiting collectives run without them.
const PATIENCE: u32 = 8;

/// Runs one warp collective of `warp` whose threads all wait: the group at the first
/// instruction in program order where some wait (so that threads still on their way
/// to a later one, past a branch that reconverges there, get there first). Returns
/// whether one ran.
fn release_warp(cx: &mut Ctx<'_>, warp: &mut [Thread<'_>]) -> Result<bool, Error> {
    let collective = |s: &State| match s {
        State::Waiting {
            point,
            kind: kind @ (WaitKind::Publish(_) | WaitKind::Subgroup { .. } | WaitKind::Whole),
        } => Some((*point, std::mem::discriminant(kind))),
        _ => None,
    };
    let Some(first) = warp.iter().filter_map(|t| collective(&t.state)).min_by_key(|p| cx.rank(p.0))
    else {
        return Ok(false);
    };
    let member = |t: &Thread<'_>| collective(&t.state) == Some(first);
    let mut values = [0u32; 32];
    let mut present = 0u64;
    for (lane, t) in warp.iter().enumerate() {
        if member(t) {
            present |= 1 << lane;
            values[lane] = match t.state {
                State::Waiting { kind: WaitKind::Publish(v), .. } => v,
                State::Waiting { kind: WaitKind::Subgroup { value, .. }, .. } => value,
                _ => 0,
            };
        }
    }
    let k = cx.k;
    if first.1 == std::mem::discriminant(&WaitKind::Whole) {
        let inst = k.blocks.get(first.0 .0).and_then(|b| b.insts.get(first.0 .1));
        match inst {
            Some(crate::ir::Inst { kind: InstKind::Matrix(m), span }) => {
                super::matrix::run(cx, warp, present, m, *span)?
            }
            Some(crate::ir::Inst { kind: InstKind::Warp(w), .. }) => {
                super::collective::run(k, warp, present, w)
            }
            _ => {}
        }
        warp.iter_mut().filter(|t| member(t)).for_each(|t| t.state = State::Running);
        return Ok(true);
    }
    for t in warp.iter_mut().filter(|t| member(t)) {
        match t.state {
            State::Waiting { kind: WaitKind::Publish(_), .. } => {
                let mut exchange = [0u32; 32];
                for (lane, v) in values.iter().enumerate() {
                    if present >> lane & 1 != 0 {
                        exchange[lane] = *v;
                    }
                }
                t.exchange = exchange;
            }
            State::Waiting { kind: WaitKind::Subgroup { op, dst, lane, .. }, .. } => {
                let v = match op {
                    SubgroupOp::Shuffle | SubgroupOp::ShuffleNarrow => {
                        let l = lane % 32;
                        if present >> l & 1 != 0 {
                            values[l as usize]
                        } else {
                            UNDEFINED_LANE
                        }
                    }
                    SubgroupOp::Ballot => (0..32)
                        .filter(|&l| present >> l & 1 != 0 && values[l] != 0)
                        .fold(0u32, |a, l| a | 1 << l),
                };
                t.set(k, dst, u64::from(v));
            }
            _ => {}
        }
        t.state = State::Running;
    }
    Ok(true)
}

/// The results of the `bar.red`s the block's threads wait at (PTX ISA 9.2 §9.7.13.1),
/// from the threads' predicates: `.popc` counts the threads where it holds, `.and`
/// holds when it holds in every thread of the block (exited ones hold none), `.or`
/// when it holds in one.
fn reduce(k: &Kernel, threads: &mut [Thread<'_>]) {
    let vote = |t: &Thread<'_>| match t.state {
        State::Waiting { kind: WaitKind::BarrierReduce(v), point } => Some((v, point)),
        _ => None,
    };
    let holds = threads.iter().filter(|t| vote(t).is_some_and(|(v, _)| v)).count();
    let every = holds == threads.len();
    for t in threads.iter_mut() {
        let Some((_, (b, i))) = vote(t) else { continue };
        if let Some(InstKind::BarrierReduce { op, dst, .. }) =
            k.blocks.get(b).and_then(|b| b.insts.get(i)).map(|i| &i.kind)
        {
            let v = match op {
                BarrierReduction::Popc => holds as u64,
                BarrierReduction::And => u64::from(every),
                BarrierReduction::Or => u64::from(holds > 0),
            };
            t.set(k, *dst, v);
        }
    }
}

/// Releases threads that wait at block barriers (every live thread waits at one). An
/// emulated collective's barriers go first, one instruction at a time: the threads at
/// it are those that take part, and every other thread of the block publishes 0 in its
/// scratch word, as `pass::predicate` has it do (its uniform flow makes the others
/// reach the barrier inactive). `bar.sync` then releases everyone (exited threads do
/// not count, as on the GPU; CUDA's barriers match by count, not by instruction).
fn release_barrier(cx: &mut Ctx<'_>, threads: &mut [Thread<'_>]) -> Result<(), Error> {
    let k = cx.k;
    let emulated = threads
        .iter()
        .filter_map(|t| match t.state {
            State::Waiting { point, kind: WaitKind::WarpBarrier(_) } => Some(point),
            _ => None,
        })
        .min_by_key(|p| cx.rank(*p));
    let Some(point) = emulated else {
        reduce(cx.k, threads);
        for t in threads.iter_mut() {
            if matches!(t.state, State::Waiting { .. }) {
                t.state = State::Running;
            }
        }
        return Ok(());
    };
    let published = |t: &Thread<'_>| match t.state {
        State::Waiting { point: p, kind: WaitKind::WarpBarrier(v) } if p == point => Some(v),
        _ => None,
    };
    let span = k.blocks[point.0].insts[point.1].span;
    let publishes = threads.iter().any(|t| matches!(published(t), Some(Some(_))));
    if let (true, Some(scratch)) = (publishes, k.warp_scratch) {
        for t in threads.iter() {
            let addr = u64::from(scratch) + 4 * u64::from(t.linear);
            let v = published(t).flatten().unwrap_or(0);
            let fault = Error::Fault { space: "shared", addr, size: 4, span };
            memory::write(&mut cx.shared, addr, 4, u64::from(v)).ok_or(fault)?;
        }
    }
    for t in threads.iter_mut().filter(|t| published(t).is_some()) {
        t.state = State::Running;
    }
    Ok(())
}
