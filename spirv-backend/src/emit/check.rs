//! The allocation test of checked launches ([`InstKind::InAllocation`],
//! `ptxvk_lower::pass::check`) and initcheck's shadow word of an address
//! ([`InstKind::ShadowWord`]): a binary search of the launch's allocation table, one
//! routine each per module.
//!
//! [`InstKind::InAllocation`]: ptxvk_lower::ir::InstKind::InAllocation
//! [`InstKind::ShadowWord`]: ptxvk_lower::ir::InstKind::ShadowWord

use rspirv::dr::Operand;
use rspirv::spirv::{LoopControl, MemoryAccess, Word};

use ptxvk_abi::system::{TABLE_ENTRIES, TABLE_READ_ONLY};
use ptxvk_lower::ir::OpTy;

use super::{glsl, FnEmitter, R};
use crate::types::Scalar;

impl FnEmitter<'_> {
    /// Whether the `size` bytes at `addr` lie inside one entry of the table at `table`
    /// (all three 64-bit; the layout is `ptxvk_abi::system`'s), one not read-only for
    /// a `write`. Entry 0 is (0, 0), so the last entry whose start is at or below `addr`
    /// exists; binary lifting finds it in ⌈log2 n⌉ steps, then its end decides.
    pub(super) fn in_allocation(
        &mut self,
        table: Word,
        addr: Word,
        size: Word,
        write: bool,
    ) -> R<Word> {
        let s64 = Scalar::Int(64);
        let (t64, bt) = (self.ty(s64), self.ty(Scalar::Bool));
        let (index, _) = self.find_entry(table, addr)?;
        let (start, raw_end) = self.entry(table, index)?;
        let mask = self.konst(s64, !TABLE_READ_ONLY);
        let end = self.b.bitwise_and(t64, None, raw_end, mask)?;
        // start ≤ addr; inside when addr - start + size ≤ end - start, without overflow.
        let length = self.b.i_sub(t64, None, end, start)?;
        let offset = self.b.i_sub(t64, None, addr, start)?;
        let within = self.b.u_less_than_equal(bt, None, offset, length)?;
        let left = self.b.i_sub(t64, None, length, offset)?;
        let fits = self.b.u_less_than_equal(bt, None, size, left)?;
        let inside = self.b.logical_and(bt, None, within, fits)?;
        if !write {
            return Ok(inside);
        }
        let writable = self.b.u_less_than_equal(bt, None, raw_end, mask)?;
        Ok(self.b.logical_and(bt, None, inside, writable)?)
    }

    /// The address of the write shadow word covering `addr`, in the shadow of the
    /// table's entry holding it (one after the entries: `ptxvk_abi::system`), or 0
    /// when that entry has no shadow or `addr` is past its end. Allocations start at
    /// multiples of 128 bytes, so the word is `shadow + (addr - start) / 128 * 4`.
    pub(super) fn shadow_word(&mut self, table: Word, addr: Word) -> R<Word> {
        let s64 = Scalar::Int(64);
        let (t64, bt) = (self.ty(s64), self.ty(Scalar::Bool));
        let (index, n) = self.find_entry(table, addr)?;
        let (start, raw_end) = self.entry(table, index)?;
        let mask = self.konst(s64, !TABLE_READ_ONLY);
        let end = self.b.bitwise_and(t64, None, raw_end, mask)?;
        let wide = |e: &mut Self, v: Word| e.b.u_convert(t64, None, v);
        let (index, n) = (wide(self, index)?, wide(self, n)?);
        // Shadow address of entry `index`: table + 16 + 16 n + 8 index.
        let three = self.konst(s64, 3);
        let four = self.konst(s64, 4);
        let entries = self.b.shift_left_logical(t64, None, n, four)?;
        let slot = self.b.shift_left_logical(t64, None, index, three)?;
        let first = self.konst(s64, u64::from(TABLE_ENTRIES));
        let at = self.b.i_add(t64, None, table, first)?;
        let at = self.b.i_add(t64, None, at, entries)?;
        let at = self.b.i_add(t64, None, at, slot)?;
        let (p, vt) = self.psb_pointer(OpTy::U(64), at)?;
        let shadow = self.b.load(vt, None, p, Some(MemoryAccess::ALIGNED), [aligned(8)])?;
        let offset = self.b.i_sub(t64, None, addr, start)?;
        let seven = self.konst(s64, 7);
        let word = self.b.shift_right_logical(t64, None, offset, seven)?;
        let two = self.konst(s64, 2);
        let word = self.b.shift_left_logical(t64, None, word, two)?;
        let word = self.b.i_add(t64, None, shadow, word)?;
        let zero = self.konst(s64, 0);
        let has = self.b.i_not_equal(bt, None, shadow, zero)?;
        let inside = self.b.u_less_than(bt, None, addr, end)?;
        let valid = self.b.logical_and(bt, None, has, inside)?;
        Ok(self.b.select(t64, None, valid, word, zero)?)
    }

    /// The index (32-bit) of the last entry of the table at `table` whose start is at
    /// or below `addr`, and the entry count. Entry 0 is (0, 0), so it exists; binary
    /// lifting finds it in ⌈log2 n⌉ steps (at most 32: the loop guard counts that many,
    /// `ptxvk_lower::pass::loop_guard::TABLE_SEARCH_ITERATIONS`).
    fn find_entry(&mut self, table: Word, addr: Word) -> R<(Word, Word)> {
        let s32 = Scalar::Int(32);
        let (t32, bt) = (self.ty(s32), self.ty(Scalar::Bool));
        let count_ptr = self.psb_pointer(OpTy::U(32), table)?.0;
        let n = self.b.load(t32, None, count_ptr, Some(MemoryAccess::ALIGNED), [aligned(4)])?;
        let msb = self.b.ext_inst(t32, None, self.g.glsl, glsl::FIND_UMSB, [Operand::IdRef(n)])?;
        let one = self.konst(s32, 1);
        let first_bit = self.b.shift_left_logical(t32, None, one, msb)?;
        let (pre, header, body, cont, merge) =
            (self.b.id(), self.b.id(), self.b.id(), self.b.id(), self.b.id());
        let (pos, bit, pos_next, bit_next) = (self.b.id(), self.b.id(), self.b.id(), self.b.id());
        self.b.branch(pre)?;
        self.b.begin_block(Some(pre))?;
        self.b.branch(header)?;
        self.b.begin_block(Some(header))?;
        self.b.phi(t32, Some(pos), [(one, pre), (pos_next, cont)])?;
        self.b.phi(t32, Some(bit), [(first_bit, pre), (bit_next, cont)])?;
        self.b.loop_merge(merge, cont, LoopControl::NONE, [])?;
        self.t.used.loops = true;
        self.b.branch(body)?;
        self.b.begin_block(Some(body))?;
        let candidate = self.b.i_add(t32, None, pos, bit)?;
        let fits = self.b.u_less_than_equal(bt, None, candidate, n)?;
        let clamped = self.b.select(t32, None, fits, candidate, n)?;
        let index = self.b.i_sub(t32, None, clamped, one)?;
        let (start, _) = self.entry(table, index)?;
        let below = self.b.u_less_than_equal(bt, None, start, addr)?;
        let take = self.b.logical_and(bt, None, fits, below)?;
        self.b.select(t32, Some(pos_next), take, candidate, pos)?;
        self.b.branch(cont)?;
        self.b.begin_block(Some(cont))?;
        self.b.shift_right_logical(t32, Some(bit_next), bit, one)?;
        let zero = self.konst(s32, 0);
        let more = self.b.i_not_equal(bt, None, bit_next, zero)?;
        self.b.branch_conditional(more, header, merge, [])?;
        self.b.begin_block(Some(merge))?;
        let index = self.b.i_sub(t32, None, pos_next, one)?;
        Ok((index, n))
    }

    /// The start and end of entry `index` (32-bit) of the table at `table`.
    fn entry(&mut self, table: Word, index: Word) -> R<(Word, Word)> {
        let s64 = Scalar::Int(64);
        let t64 = self.ty(s64);
        let wide = self.b.u_convert(t64, None, index)?;
        let four = self.konst(s64, 4);
        let offset = self.b.shift_left_logical(t64, None, wide, four)?;
        let entries = self.konst(s64, u64::from(TABLE_ENTRIES));
        let at = self.b.i_add(t64, None, table, entries)?;
        let start_at = self.b.i_add(t64, None, at, offset)?;
        let eight = self.konst(s64, 8);
        let end_at = self.b.i_add(t64, None, start_at, eight)?;
        let load = |e: &mut Self, address: Word| -> R<Word> {
            let (p, vt) = e.psb_pointer(OpTy::U(64), address)?;
            Ok(e.b.load(vt, None, p, Some(MemoryAccess::ALIGNED), [aligned(8)])?)
        };
        let start = load(self, start_at)?;
        let end = load(self, end_at)?;
        Ok((start, end))
    }
}

fn aligned(bytes: u32) -> Operand {
    Operand::LiteralBit32(bytes)
}
