//! The allocation table of checked launches (`crate::pass::check`): whether an access
//! lies inside one allocation ([`Routine::InAllocation`]) and initcheck's write shadow
//! word of an address ([`Routine::ShadowWord`]), each a binary search of the table.
//!
//! The table's layout is `crate::system`'s: a u32 entry count n ≥ 1, from byte
//! [`TABLE_ENTRIES`] n entries of u64 start and u64 end sorted by start, the first
//! (0, 0), so that every address has an entry at or below it ([`TABLE_READ_ONLY`] in
//! an end marks a read-only one), then n u64 shadow addresses. The search is binary
//! lifting over the entry count: a loop of ⌈log2 (n + 1)⌉ steps, each one global load,
//! which finds the last entry whose start is at or below the address; that entry's
//! end decides. A loop, not 32 unrolled steps: the count is the same for every
//! invocation (the table is the launch's), a handful of steps for the few allocations
//! a launch has, and drivers inline the routine at every checked access (Mesa does),
//! where 32 steps would be 32 loads and their code each time. At most
//! [`TABLE_SEARCH_ITERATIONS`] steps, which `crate::pass::loop_guard` counts at each
//! call ([`Routine::loop_iterations`]).
//!
//! [`Routine::InAllocation`]: crate::ir::Routine::InAllocation
//! [`Routine::ShadowWord`]: crate::ir::Routine::ShadowWord
//! [`Routine::loop_iterations`]: crate::ir::Routine::loop_iterations
//! [`TABLE_SEARCH_ITERATIONS`]: crate::ir::TABLE_SEARCH_ITERATIONS

use super::FnBuilder;
use crate::build::Build;
use crate::ir::{
    Address, BinaryOp, BlockId, CmpOp, InstKind, OpTy, Space, Terminator, UnaryOp, Value,
};
use crate::system::{TABLE_ENTRIES, TABLE_READ_ONLY};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Bytes of one entry (u64 start, u64 end).
const ENTRY_BYTES: i64 = 16;

/// Bytes of allocation one u32 word of a write shadow covers: one bit per 4-byte word
/// (`crate::system`'s module doc).
const SHADOW_WORD_COVERS: u64 = 32 * 4;

/// The body of `InAllocation { write }` on (table, address, size): 1 when the `size`
/// bytes at the address lie inside one entry of the table (not a read-only one for a
/// `write`), else 0.
pub(super) fn in_allocation(b: &mut FnBuilder, params: &[Value], write: bool) -> Value {
    let (table, addr, size) = (params[0], params[1], params[2]);
    let found = find_entry(b, table, addr);
    let (start, end, raw_end) = bounds(b, found.entry);
    // start ≤ addr: inside when addr - start + size ≤ end - start, without overflow.
    let length = b.bin(BinaryOp::Sub, U64, end, start);
    let offset = b.bin(BinaryOp::Sub, U64, addr, start);
    let within = b.cmp(CmpOp::Le, U64, offset, length);
    let left = b.bin(BinaryOp::Sub, U64, length, offset);
    let fits = b.cmp(CmpOp::Le, U64, size, left);
    let mut inside = b.pred_and(within, fits);
    if write {
        let writable = b.cmp(CmpOp::Le, U64, raw_end, Value::Imm(!TABLE_READ_ONLY));
        inside = b.pred_and(inside, writable);
    }
    b.sel(U32, inside, Value::Imm(1), Value::Imm(0))
}

/// The body of `ShadowWord` on (table, address): the address of the write shadow word
/// covering the address, in the shadow of the entry holding it, or 0 when that entry
/// has no shadow or the address is past its end. Allocations with shadows start at
/// multiples of 128 bytes, so the word is `shadow + (addr - start) / 128 * 4`.
pub(super) fn shadow_word(b: &mut FnBuilder, params: &[Value]) -> Value {
    let (table, addr) = (params[0], params[1]);
    let found = find_entry(b, table, addr);
    let (start, end, _) = bounds(b, found.entry);
    // Entry i's shadow address is at table + TABLE_ENTRIES + 16 n + 8 i, i = pos - 1.
    let n = b.cvt(U64, U32, found.count);
    let entries = b.bin(BinaryOp::Shl, U64, n, Value::Imm(4));
    let pos = b.cvt(U64, U32, found.pos);
    let slot = b.bin(BinaryOp::Shl, U64, pos, Value::Imm(3));
    let at = b.add(U64, table, entries);
    let at = b.add(U64, at, slot);
    let shadow = load(b, U64, at, i64::from(TABLE_ENTRIES) - 8);
    let offset = b.bin(BinaryOp::Sub, U64, addr, start);
    let words = b.bin(BinaryOp::Shr, U64, offset, Value::Imm(SHADOW_WORD_COVERS.ilog2().into()));
    let bytes = b.bin(BinaryOp::Shl, U64, words, Value::Imm(2));
    let word = b.add(U64, shadow, bytes);
    let has = b.cmp(CmpOp::Ne, U64, shadow, Value::Imm(0));
    let before_end = b.cmp(CmpOp::Lt, U64, addr, end);
    let valid = b.pred_and(has, before_end);
    b.sel(U64, valid, word, Value::Imm(0))
}

/// What [`find_entry`] found.
struct Found {
    /// 1 + the index of the last entry whose start is at or below the address (32-bit).
    pos: Value,
    /// That entry's address minus [`TABLE_ENTRIES`] ([`entry`]).
    entry: Value,
    /// The table's entry count (32-bit).
    count: Value,
}

/// The last entry of the table at `table` whose start is at or below `addr` (entry 0,
/// (0, 0), is, so one exists), by binary lifting: `pos` entries are known to start at
/// or below `addr` (1 at first), and each step, from the highest bit of the count
/// down, tries `pos + bit`. Ends in a block of its own, which the caller continues.
fn find_entry(b: &mut FnBuilder, table: Value, addr: Value) -> Found {
    let count = load(b, U32, table, 0);
    let leading = b.un(UnaryOp::Clz, U32, count);
    let (pos, bit) = (b.temp(U32), b.temp(U32));
    b.mov(U32, pos, Value::Imm(1));
    let first_bit = b.bin(BinaryOp::Shr, U32, Value::Imm(1 << 31), leading);
    b.mov(U32, bit, first_bit);
    // This block jumps to the step's, which branches back to itself or to the next.
    let step = BlockId(b.current().0 + 1);
    let exit = BlockId(step.0 + 1);
    b.end_block(Terminator::Jump(step));
    let candidate = b.add(U32, Value::Reg(pos), Value::Reg(bit));
    let fits = b.cmp(CmpOp::Le, U32, candidate, count);
    let clamped = b.sel(U32, fits, candidate, count);
    let last = entry(b, table, clamped);
    let start = load(b, U64, last, i64::from(TABLE_ENTRIES) - ENTRY_BYTES);
    let below = b.cmp(CmpOp::Le, U64, start, addr);
    let take = b.pred_and(fits, below);
    let next = b.sel(U32, take, candidate, Value::Reg(pos));
    b.mov(U32, pos, next);
    let half = b.bin(BinaryOp::Shr, U32, Value::Reg(bit), Value::Imm(1));
    b.mov(U32, bit, half);
    let more = b.cmp(CmpOp::Ne, U32, Value::Reg(bit), Value::Imm(0));
    b.end_block(Terminator::Branch { cond: more, negate: false, if_true: step, if_false: exit });
    let pos = Value::Reg(pos);
    Found { pos, entry: entry(b, table, pos), count }
}

/// `table + 16 pos` (`pos` 32-bit): entry `pos - 1` is at [`TABLE_ENTRIES`] - 16 past it.
fn entry(b: &mut FnBuilder, table: Value, pos: Value) -> Value {
    let wide = b.cvt(U64, U32, pos);
    let offset = b.bin(BinaryOp::Shl, U64, wide, Value::Imm(ENTRY_BYTES.ilog2().into()));
    b.add(U64, table, offset)
}

/// The start, end and end as the table has it (read-only bit and all) of the entry at
/// `entry` ([`Found::entry`]).
fn bounds(b: &mut FnBuilder, entry: Value) -> (Value, Value, Value) {
    let first = i64::from(TABLE_ENTRIES) - ENTRY_BYTES;
    let (start, raw_end) = (load(b, U64, entry, first), load(b, U64, entry, first + 8));
    let end = b.and(U64, raw_end, Value::Imm(!TABLE_READ_ONLY));
    (start, end, raw_end)
}

/// A global load of one `ty` at `base + offset` (`base` a 64-bit device address).
fn load(b: &mut FnBuilder, ty: OpTy, base: Value, offset: i64) -> Value {
    let dst = b.temp(ty);
    let addr = match base {
        Value::Reg(r) => Address { base: Some(r), offset },
        Value::Imm(a) => Address { base: None, offset: (a as i64).wrapping_add(offset) },
    };
    b.push(InstKind::Load { space: Space::Global, ty, dsts: vec![Some(dst)], addr });
    Value::Reg(dst)
}

#[cfg(test)]
mod tests {
    //! The routines through the interpreter against a model of the table written from
    //! its layout: a linear scan of the entries for the allocation holding the bytes,
    //! on random tables (adjacent allocations, read-only ones, with and without
    //! shadows, near the top of the address range) and addresses at and around each
    //! entry's ends, 0, past the last entry and anywhere.

    use ptxvk_frontend::Span;

    use super::{TABLE_ENTRIES, TABLE_READ_ONLY, U32, U64};
    use crate::build::{Build, Builder};
    use crate::interp::check::BUFFER_STRIDE;
    use crate::interp::{self, memory::Region, Launch};
    use crate::ir::{Address, InstKind, Kernel, Routine, Space, Value};
    use crate::random_cfg::Rng;

    /// One allocation of a table: `[start, end)`, read-only or not, its shadow's
    /// address (0 for none).
    #[derive(Clone, Copy, Debug)]
    struct Entry {
        start: u64,
        end: u64,
        read_only: bool,
        shadow: u64,
    }

    /// The model of `InAllocation`: some entry holds the `size` bytes at `addr`.
    fn inside(entries: &[Entry], addr: u64, size: u64, write: bool) -> bool {
        entries.iter().any(|e| {
            let holds = e.start <= addr && u128::from(addr) + u128::from(size) <= e.end.into();
            holds && !(write && e.read_only)
        })
    }

    /// The model of `ShadowWord`: the word of the entry holding `addr`, bit `w % 32` of
    /// word `w / 32` for 4-byte word `w` of the allocation (`crate::system`).
    fn shadow_word(entries: &[Entry], addr: u64) -> u64 {
        let holder = entries.iter().find(|e| e.start <= addr && addr < e.end);
        match holder {
            Some(e) if e.shadow != 0 => e.shadow + (addr - e.start) / 4 / 32 * 4,
            _ => 0,
        }
    }

    /// A random table's allocations (after the (0, 0) entry, which the table adds):
    /// sorted, disjoint, each starting at a multiple of 128 bytes, ending below 2^63
    /// (whose bit marks a read-only one), some near it.
    fn allocations(rng: &mut Rng, count: usize) -> Vec<Entry> {
        let mut at = if rng.below(4) == 0 { 0x7ff0_0000_0000_0000 } else { 0 };
        (0..count)
            .map(|_| {
                // Adjacent to the last one, or a gap; never at 0.
                at += 128 * (rng.below(3) + u64::from(at == 0));
                let size = match rng.below(4) {
                    0 => 1 + rng.below(16),
                    1 => 1 << (32 + rng.below(4)),
                    _ => 1 + rng.below(1 << 16),
                };
                let shadow = if rng.below(3) == 0 { 0 } else { rng.next_u64() & !(1 << 63) & !3 };
                let e = Entry { start: at, end: at + size, read_only: rng.below(4) == 0, shadow };
                at = e.end.next_multiple_of(128);
                e
            })
            .collect()
    }

    /// The table's bytes (`crate::system`'s layout), entry 0's shadow not 0 so that a
    /// use of it shows.
    fn table_bytes(entries: &[Entry]) -> Vec<u8> {
        let n = entries.len() + 1;
        let mut bytes = vec![0u8; TABLE_ENTRIES as usize + 24 * n];
        bytes[..4].copy_from_slice(&(n as u32).to_le_bytes());
        let mut put = |at: usize, v: u64| bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
        let shadows = TABLE_ENTRIES as usize + 16 * n;
        put(shadows, 0x5a5a_0000);
        for (i, e) in entries.iter().enumerate() {
            let at = TABLE_ENTRIES as usize + 16 * (i + 1);
            put(at, e.start);
            put(at + 8, e.end | if e.read_only { TABLE_READ_ONLY } else { 0 });
            put(shadows + 8 * (i + 1), e.shadow);
        }
        bytes
    }

    /// Addresses and sizes to probe: around a random entry's start and end (sizes that
    /// straddle it), inside it, 0, past the last entry, near the top, anywhere.
    fn probe(rng: &mut Rng, entries: &[Entry]) -> (u64, u64) {
        let size = [1, 2, 4, 8, 16, 1 + rng.below(64)][rng.below(6) as usize];
        let Some(&last) = entries.last() else { return (rng.next_u64(), size) };
        let e = entries[rng.below(entries.len() as u64) as usize];
        let addr = match rng.below(12) {
            0 => e.start,
            1 => e.start.wrapping_sub(1 + rng.below(8)),
            2 => e.start + rng.below(e.end - e.start),
            3 => e.end.wrapping_sub(size),
            4 => e.end.wrapping_sub(size) + 1 + rng.below(size),
            5 => e.end - 1,
            6 => e.end,
            7 => 0,
            8 => last.end + rng.below(1 << 20),
            9 => u64::MAX - rng.below(32),
            _ => rng.next_u64(),
        };
        (addr, size)
    }

    /// A kernel whose thread `t` reads an address and a size from case `t` of the
    /// buffer at parameter 0 (32 bytes each) and stores after them `InAllocation` for
    /// a read and for a write (u32 each) and `ShadowWord` (u64) of the table at
    /// parameter 1.
    fn search_kernel() -> Kernel {
        let text = "kernel search {\n    params size 16 align 8\n    shared 0\n    local 0\n    \
                    entry bb0\nbb0:\n    return\n}\n";
        let mut k = crate::text::parse(text).expect("parses").remove(0);
        let mut b = Builder::new(&mut k, Span::default());
        let param = |b: &mut Builder<'_>, offset| {
            let dst = b.temp(U64);
            let addr = Address { base: None, offset };
            b.push(InstKind::Load { space: Space::Param, ty: U64, dsts: vec![Some(dst)], addr });
            dst
        };
        let (cases, table) = (param(&mut b, 0), param(&mut b, 8));
        let t = b.linear_tid();
        let t = b.cvt(U64, U32, t);
        let offset = b.bin(crate::ir::BinaryOp::Shl, U64, t, Value::Imm(5));
        let at = b.add(U64, Value::Reg(cases), offset);
        let at = crate::build::reg_of(at).expect("a register");
        let field = |offset| Address { base: Some(at), offset };
        let (addr, size) = (b.temp(U64), b.temp(U64));
        let dsts = vec![Some(addr), Some(size)];
        b.push(InstKind::Load { space: Space::Global, ty: U64, dsts, addr: field(0) });
        let calls = [
            (Routine::InAllocation { write: false }, U32, 16),
            (Routine::InAllocation { write: true }, U32, 20),
            (Routine::ShadowWord, U64, 24),
        ];
        for (r, ty, offset) in calls {
            let callee = super::super::get(b.kernel, r);
            let dst = b.temp(ty);
            let mut args = vec![Value::Reg(table), Value::Reg(addr), Value::Reg(size)];
            args.truncate(r.arity());
            b.push(InstKind::Call { callee, args, results: vec![dst] });
            let srcs = vec![Value::Reg(dst)];
            b.push(InstKind::Store { space: Space::Global, ty, srcs, addr: field(offset) });
        }
        let insts = b.insts;
        k.blocks[0].insts = insts;
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        k
    }

    const THREADS: usize = 64;

    #[test]
    fn the_search_finds_what_a_scan_of_the_table_finds() {
        let k = search_kernel();
        let mut rng = Rng(0x7ab1e);
        let counts = [0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 100, 255, 256, 1000];
        let (mut probes, mut hits, mut writable, mut shadowed) = (0, 0, 0, 0);
        for round in 0..320 {
            let count = match counts.get(round) {
                Some(&c) => c,
                None => rng.below(48) as usize,
            };
            let entries = allocations(&mut rng, count);
            let cases: Vec<(u64, u64)> = (0..THREADS).map(|_| probe(&mut rng, &entries)).collect();
            let mut case_bytes = vec![0u8; 32 * THREADS];
            for (i, (addr, size)) in cases.iter().enumerate() {
                case_bytes[32 * i..32 * i + 8].copy_from_slice(&addr.to_le_bytes());
                case_bytes[32 * i + 8..32 * i + 16].copy_from_slice(&size.to_le_bytes());
            }
            let (case_base, table_base) = (BUFFER_STRIDE, 2 * BUFFER_STRIDE);
            let mut params = case_base.to_le_bytes().to_vec();
            params.extend(table_base.to_le_bytes());
            let launch = Launch {
                grid: [1, 1, 1],
                block: [THREADS as u32, 1, 1],
                params,
                buffers: vec![
                    Region { base: case_base, bytes: case_bytes },
                    Region { base: table_base, bytes: table_bytes(&entries) },
                ],
                dynamic_shared: 0,
                step_limit: 1_000_000,
            };
            let out = interp::run(&k, None, &launch).unwrap_or_else(|e| panic!("{e}"));
            let word = |at: usize, n: usize| {
                let mut v = [0u8; 8];
                v[..n].copy_from_slice(&out.buffers[0][at..at + n]);
                u64::from_le_bytes(v)
            };
            for (i, &(addr, size)) in cases.iter().enumerate() {
                let got = (word(32 * i + 16, 4), word(32 * i + 20, 4), word(32 * i + 24, 8));
                let want = (
                    u64::from(inside(&entries, addr, size, false)),
                    u64::from(inside(&entries, addr, size, true)),
                    shadow_word(&entries, addr),
                );
                let near: Vec<_> =
                    entries.iter().filter(|e| e.start <= addr).rev().take(2).collect();
                assert_eq!(got, want, "{count} entries, {addr:#x} size {size}, after {near:x?}");
                probes += 1;
                hits += want.0;
                writable += want.1;
                shadowed += u64::from(want.2 != 0);
            }
        }
        // The probes reach every answer often.
        assert!(hits > probes / 8 && writable > probes / 16 && shadowed > probes / 8);
        assert!(hits < probes * 7 / 8, "{hits} of {probes}");
    }
}
