//! Racecheck, the shared-memory part of `pass::check` (`PTXVK_CHECK=racecheck`): two
//! threads of a block access the same shared bytes between the same two barriers, at
//! least one of them writes, and neither access is an atomic (PTX ISA 9.2 §8.6: a data
//! race; `ld.volatile`/`st.volatile` are not atomics to CUDA C++, so they count).
//!
//! Each 32-bit word of the shared window has four shadow words
//! ([`InstKind::RaceShadow`], zero when the block starts): the last writer, its site,
//! the last reader and its site. Writer and reader are this thread's [`Epoch`] word with
//! the bytes it touched:
//!
//! | bits | contents |
//! |---|---|
//! | 0..4 | the bytes of the 32-bit word accessed |
//! | 4..14 | the thread's linear index in its block (at most 1,024 threads) |
//! | 14..18 | warp epoch: `bar.warp.sync`s since the last `bar.sync`, modulo 16 |
//! | 18..32 | block epoch: `bar.sync`s (and mbarrier waits) since the start plus 1, modulo 2^14 |
//!
//! An access conflicts with a recorded one when the block epochs are equal, the
//! threads differ, the bytes overlap, and the threads are in different warps or their
//! warp epochs are equal (a `__syncwarp` orders only its own warp). A write exchanges
//! itself into the writer word and tests the old writer and the reader; a read tests
//! the writer and exchanges itself into the reader word, unless a read of another
//! thread that no barrier orders with it is there: that reader stays, so that a thread that reads and then
//! writes its own word still finds the other thread's read. One reader is kept, so a
//! write can miss a race with a second foreign reader (the first is found); a race is
//! never invented. Block epochs wrap after
//! 16,384 barriers: a word untouched for exactly a multiple of that many looks current.
//!
//! A race is recorded as a [`system::VIOLATION_RACE`] at the second access, with the
//! first's thread, site and kind in the record's address field (`crate::system`).

use crate::build::{Build, Builder};
use crate::ir::*;
use crate::system;

const U32: OpTy = OpTy::U(32);

const BYTES: u64 = 0xf;
const THREAD_SHIFT: u64 = 4;
const THREAD: u64 = 0x3ff << THREAD_SHIFT;
/// The warp part of the thread index (threads 32k..32k+31).
const WARP: u64 = 0x3e0 << THREAD_SHIFT;
const WARP_EPOCH_ONE: u64 = 1 << 14;
const WARP_EPOCH: u64 = 0xf << 14;
const BLOCK_EPOCH_ONE: u64 = 1 << 18;
const BLOCK_EPOCH: u64 = 0x3fff << 18;

/// The register holding this thread's epoch word: its thread and epochs as the table
/// of the module doc has them, with no bytes.
#[derive(Clone, Copy)]
pub(super) struct Epoch(RegId);

/// Makes the epoch register at the start of the entry block (`thread` is the linear
/// thread index) and counts barriers into it after every `bar.sync` and
/// `bar.warp.sync` (or warp collective, which synchronizes its warp too).
pub(super) fn epochs(k: &mut Kernel, thread: Value) -> (Epoch, Vec<Inst>) {
    let span = k.span;
    let mut b = Builder::new(k, span);
    let epoch = b.temp(U32);
    let shifted = b.bin(BinaryOp::Shl, U32, thread, Value::Imm(THREAD_SHIFT));
    b.push(binary(BinaryOp::Or, epoch, shifted, Value::Imm(BLOCK_EPOCH_ONE)));
    let init = b.insts;
    for block in 0..k.blocks.len() {
        let mut at = 0;
        while at < k.blocks[block].insts.len() {
            let inst = &k.blocks[block].insts[at];
            let span = inst.span;
            let next: Vec<Inst> = match inst.kind {
                // An mbarrier wait (its `SyncPoint::Acquire`) orders what the waiting
                // thread does next after the arrivals: it starts an epoch of that
                // thread, so that nothing the arrivals ordered before is a race.
                // Threads that waited a different number of times keep different
                // epochs from then on: racecheck misses races between them rather
                // than invent one.
                InstKind::Barrier
                | InstKind::WarpBarrier { .. }
                | InstKind::SyncPoint { point: SyncPoint::Acquire } => {
                    // A new block epoch, the warp epoch back to 0.
                    let mut b = Builder::new(k, span);
                    let e = Value::Reg(epoch);
                    let next = b.add(U32, e, Value::Imm(BLOCK_EPOCH_ONE));
                    b.push(binary(
                        BinaryOp::And,
                        epoch,
                        next,
                        Value::Imm(!WARP_EPOCH & 0xffff_ffff),
                    ));
                    b.insts
                }
                InstKind::WarpSync => {
                    let mut b = Builder::new(k, span);
                    let e = Value::Reg(epoch);
                    let next = b.add(U32, e, Value::Imm(WARP_EPOCH_ONE));
                    let warp = b.and(U32, next, Value::Imm(WARP_EPOCH));
                    let rest = b.and(U32, e, Value::Imm(!WARP_EPOCH & 0xffff_ffff));
                    b.push(binary(BinaryOp::Or, epoch, warp, rest));
                    b.insts
                }
                _ => Vec::new(),
            };
            let n = next.len();
            k.blocks[block].insts.splice(at + 1..at + 1, next);
            at += 1 + n;
        }
    }
    (Epoch(epoch), init)
}

fn binary(op: BinaryOp, dst: RegId, lhs: Value, rhs: Value) -> InstKind {
    InstKind::Binary { op, ty: U32, mode: FloatMode::default(), dst, lhs, rhs }
}

/// What the race test of one access found: whether it races, and the value of the
/// record's address field (`crate::system`) when it does.
pub(super) struct Race {
    pub races: RegId,
    pub record: Value,
}

/// Tests the shared access of `size` bytes at window offset `offset` (a 64-bit value
/// inside the window; a write when `write`) of site `site` against the shadow, and
/// records it there.
pub(super) fn test(
    b: &mut Builder<'_>,
    epoch: Epoch,
    offset: Value,
    size: u32,
    write: bool,
    site: u32,
) -> Race {
    let offset = b.lo32(offset);
    let first = b.and(U32, offset, Value::Imm(!3 & 0xffff_ffff));
    let bytes = if size >= 4 {
        Value::Imm(BYTES)
    } else {
        let low = b.and(U32, offset, Value::Imm(3));
        b.bin(BinaryOp::Shl, U32, Value::Imm((1 << size) - 1), low)
    };
    let mine = b.or(U32, Value::Reg(epoch.0), bytes);
    // Each 32-bit word of the access; the first that races names the other access.
    let mut found = word_test(b, first, 0, mine, write, site);
    for word in 1..size.div_ceil(4) {
        let next = word_test(b, first, word, mine, write, site);
        let before = found.races;
        found = WordRace {
            races: b.pred_or(before, next.races),
            other: b.sel(U32, before, found.other, next.other),
            other_site: b.sel(U32, before, found.other_site, next.other_site),
            wrote: b.sel(U32, before, found.wrote, next.wrote),
        };
    }
    let WordRace { races, other, other_site, wrote } = found;
    // The record's address field: the offset, then the other access's thread, site
    // and kind (`crate::system`).
    let thread = b.bfe(U32, other, THREAD_SHIFT, 10);
    let site_shift = u64::from(system::RACE_OTHER_SITE - 32);
    let site = b.bin(BinaryOp::Shl, U32, other_site, Value::Imm(site_shift));
    let wrote_shift = u64::from(system::RACE_OTHER_WROTE - 32);
    let wrote = b.bin(BinaryOp::Shl, U32, wrote, Value::Imm(wrote_shift));
    let high = b.or(U32, thread, site);
    let high = b.or(U32, high, wrote);
    let record = b.pack64(offset, high);
    Race { races, record }
}

/// The race test of one 32-bit word of an access.
struct WordRace {
    races: RegId,
    /// The recorded access it races with, its site, and 1 when that was a write.
    other: Value,
    other_site: Value,
    wrote: Value,
}

/// Tests word `word` of an access whose first word is at window offset `first`, and
/// records `mine` in its shadow.
fn word_test(
    b: &mut Builder<'_>,
    first: Value,
    word: u32,
    mine: Value,
    write: bool,
    site: u32,
) -> WordRace {
    // The word's four shadow words start at 4 × its index, its offset rounded down.
    let base = b.add(U32, first, Value::Imm(4 * u64::from(word)));
    let mut at = |k: u64| if k == 0 { base } else { b.add(U32, base, Value::Imm(k)) };
    let [writer_at, writer_site_at, reader_at, reader_site_at] = [0, 1, 2, 3].map(&mut at);
    let site = Value::Imm(u64::from(site));
    if write {
        let writer = shadow(b, writer_at, Some(mine));
        let writer_site = shadow(b, writer_site_at, Some(site));
        let reader = shadow(b, reader_at, None);
        let reader_site = shadow(b, reader_site_at, None);
        let after_write = conflicts(b, writer, mine);
        let after_read = conflicts(b, reader, mine);
        WordRace {
            races: b.pred_or(after_write, after_read),
            other: b.sel(U32, after_write, writer, reader),
            other_site: b.sel(U32, after_write, writer_site, reader_site),
            wrote: b.sel(U32, after_write, Value::Imm(1), Value::Imm(0)),
        }
    } else {
        let writer = shadow(b, writer_at, None);
        let writer_site = shadow(b, writer_site_at, None);
        // Another thread's read that nothing orders with this one stays: this
        // thread's own later write must still find it.
        let reader = shadow(b, reader_at, Some(mine));
        let reader_site = shadow(b, reader_site_at, Some(site));
        let keep = concurrent(b, reader, mine);
        let reader = b.sel(U32, keep, reader, mine);
        shadow(b, reader_at, Some(reader));
        let reader_site = b.sel(U32, keep, reader_site, site);
        shadow(b, reader_site_at, Some(reader_site));
        let races = conflicts(b, writer, mine);
        WordRace { races, other: writer, other_site: writer_site, wrote: Value::Imm(1) }
    }
}

/// Word `word` of the shadow, replaced by `swap` when given.
fn shadow(b: &mut Builder<'_>, word: Value, swap: Option<Value>) -> Value {
    let dst = b.temp(U32);
    b.push(InstKind::RaceShadow { dst, word, swap });
    Value::Reg(dst)
}

/// Whether the recorded access `recorded` and this thread's `mine` race (module doc).
fn conflicts(b: &mut Builder<'_>, recorded: Value, mine: Value) -> RegId {
    let unordered = concurrent(b, recorded, mine);
    let both = b.and(U32, recorded, mine);
    let common = b.and(U32, both, Value::Imm(BYTES));
    let overlap = b.cmp(CmpOp::Ne, U32, common, Value::Imm(0));
    b.pred_and(unordered, overlap)
}

/// Whether the recorded access `recorded` is another thread's that no barrier orders
/// with this thread's now: the same block epoch, and another warp or the same warp
/// epoch.
fn concurrent(b: &mut Builder<'_>, recorded: Value, mine: Value) -> RegId {
    let differ = b.bin(BinaryOp::Xor, U32, recorded, mine);
    let field = |b: &mut Builder<'_>, mask: u64, cmp: CmpOp| {
        let bits = b.and(U32, differ, Value::Imm(mask));
        b.cmp(cmp, U32, bits, Value::Imm(0))
    };
    let same_epoch = field(b, BLOCK_EPOCH, CmpOp::Eq);
    let other_thread = field(b, THREAD, CmpOp::Ne);
    let other_warp = field(b, WARP, CmpOp::Ne);
    let same_warp_epoch = field(b, WARP_EPOCH, CmpOp::Eq);
    let foreign = b.pred_and(same_epoch, other_thread);
    let unordered = b.pred_or(other_warp, same_warp_epoch);
    b.pred_and(foreign, unordered)
}
