//! Pass: the kernel is cut into **phases** at its grid barriers
//! ([`SystemInst::GridSync`], specified in `crate::ir::system`), so that a grid of any
//! size synchronizes without any block waiting for another: Vulkan promises no forward
//! progress between the workgroups of a dispatch, so a barrier over more blocks than
//! run at once could never end. The runtime dispatches the whole grid once per phase,
//! with a memory barrier between phases (CFG → CFG).
//!
//! The launch's grid save area (`ptxvk_abi::system::GridSave`, its address at
//! [`crate::system::GRID_SAVE`] in the system area) holds a resume slot per thread, a
//! record per thread and a shared save per block.
//!
//! * **Grid barrier `k`**: a block barrier (every thread of the block has written its
//!   shared memory); the registers live after the barrier and the thread's local
//!   window go to its record; its slot becomes `k + 1`; the suspended count goes up;
//!   the thread takes a ticket from the block's word (an atomic add: the word counts
//!   the block's arrivals over all phases); after a second block barrier the word's
//!   value less its value at the phase's entry is the number of threads that arrived,
//!   and the thread with ticket `i` of `n` copies words `i`, `i + n`, … of the shared
//!   window to the block's save, so the whole window is saved also where threads of
//!   the block have exited (they reach no grid barrier); the thread ends. CUDA requires
//!   a grid barrier to be reached by every thread of the block that has not exited, so
//!   all of them suspend at the same barrier.
//! * **A new entry**: the thread reads its slot and sets it to
//!   [`crate::system::GRID_DONE`] (so a thread that ends without reaching another grid
//!   barrier stays done); it reads the block's word (the phase's base for the tickets;
//!   no thread of the block takes one before the block barrier below); where the word
//!   is non-zero the block's shared window was saved and every thread of the block
//!   (all run the entry) restores its words in turn; a block barrier; then a switch on the slot: 0 goes to the old
//!   entry, `k + 1` to barrier `k`'s resume block (the suspended count goes down, the
//!   record is restored, then the code after the barrier), done ends the thread.
//!
//! A phase's dispatches end before the next phase's start, so what every thread wrote
//! before a grid barrier is visible to every thread after it. The CFG this makes is
//! irreducible when a barrier is inside a loop; `pass::reducible` handles that.
//!
//! **Cooperative groups' inline barrier.** CUDA 12's headers synchronize the grid
//! themselves (`cooperative_groups/details/sync.h`, `sync_grids`): a block barrier,
//! thread 0 adds to the barrier word of the grid workspace (`%envreg1/2`,
//! [`SystemInst::GridWorkspace`]) and spins until its bit 31 flips, a block barrier.
//! Each polling loop whose load reads an address computed from the workspace (in
//! registers, or, where a debug build keeps the workspace's address in local memory,
//! computed from the same register and offset as an `atom.add.release` of the kernel)
//! is such a barrier: the loop is left on its first round, the add becomes a move of
//! 0, and the first block barrier after the loop's exit (along jumps) becomes a
//! `GridSync` (which is a block barrier too), so that it splits as above. Only kernels
//! that read the workspace are searched, and only when every such loop is recognized
//! is anything rewritten.
//!
//! Pre: CFG IR after `pass::inline` and the expansions other than `expand_system`,
//! which would write the grid workspace's address out. Post: no `GridSync` is left;
//! [`Kernel::grid_phases`] is set when there was one; the kernel has a system area.
//! The save and restore code's accesses have zero-width spans, so `pass::check` does
//! not take them for the program's.

use ptxvk_frontend::Span;

use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{
    Address, AtomicOp, BinaryOp, BlockId, CmpOp, Dim, GridPhases, Inst, InstKind, Kernel, OpTy,
    Order, RegId, RegTy, Scope, Space, SpecialReg, SystemInst, Terminator, Value,
};
use crate::system as sys;

mod analysis;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Splits `k` at its grid barriers (module doc).
pub fn run(k: &mut Kernel) {
    analysis::inline_barriers(k);
    let sites = split_sites(k);
    if sites.is_empty() {
        return;
    }
    let resumes: Vec<BlockId> = sites.iter().map(|s| s.resume).collect();
    let live = analysis::live_in(k, &resumes);
    let in_loop = sites.iter().any(|s| analysis::on_cycle(k, s.save));
    let layouts: Vec<Layout> = live.into_iter().map(|regs| layout(k, regs)).collect();
    let record_bytes = layouts.iter().map(|l| l.bytes).max().unwrap_or(0);
    let old_entry = k.entry;
    let span = Span::new(k.span.start, k.span.start);
    // The block's word at the phase's entry, written by the new entry, which dominates
    // every suspension.
    let base = expander::temp(k, span, U32);
    for (i, (site, l)) in sites.iter().zip(&layouts).enumerate() {
        let span = Span::new(site.span.start, site.span.start);
        let mut e = Split { k, cur: site.save, span };
        e.suspend(i as u32, l, record_bytes, base);
    }
    let entry = BlockId(k.blocks.len() as u32);
    let mut e = Split { k, cur: entry, span };
    e.new_block();
    let resumes: Vec<BlockId> = sites.iter().map(|_| e.new_block()).collect();
    let a = e.entry(old_entry, &resumes, record_bytes, base);
    for ((site, l), &r) in sites.iter().zip(&layouts).zip(&resumes) {
        e.cur = r;
        e.resume(&a, l, site.resume);
    }
    k.entry = entry;
    k.system = true;
    k.grid_phases = Some(GridPhases { record_bytes, barriers: sites.len() as u32, in_loop });
}

/// A grid barrier: the block that ends at it (its code before the barrier) and the
/// block its code after the barrier starts.
struct Site {
    save: BlockId,
    resume: BlockId,
    span: Span,
}

/// Cuts every block at each `GridSync`: the block keeps what comes before and jumps to
/// a new block with what comes after (the jump is replaced by the suspension).
fn split_sites(k: &mut Kernel) -> Vec<Site> {
    let is = |i: &Inst| matches!(&i.kind, InstKind::System(s) if **s == SystemInst::GridSync);
    let mut sites = Vec::new();
    let mut b = 0;
    while b < k.blocks.len() {
        let Some(at) = k.blocks[b].insts.iter().position(is) else {
            b += 1;
            continue;
        };
        let resume = BlockId(k.blocks.len() as u32);
        let block = &mut k.blocks[b];
        let mut rest = block.insts.split_off(at);
        let grid_sync = rest.remove(0);
        let mut after = block.clone();
        after.label = None;
        after.insts = rest;
        block.term = Terminator::Jump(resume);
        block.term_span = grid_sync.span;
        k.blocks.push(after);
        sites.push(Site { save: BlockId(b as u32), resume, span: grid_sync.span });
        b += 1;
    }
    sites
}

/// Where a record keeps the registers live after a barrier: (register, byte offset);
/// then the local window at `local`; `bytes` in all, a multiple of 8.
struct Layout {
    slots: Vec<(RegId, u32)>,
    local: u32,
    local_bytes: u32,
    bytes: u32,
}

/// Registers of at most 32 bits (a predicate as 0 or 1) first, 4 bytes each, then
/// 64-bit ones 8-byte aligned, then the local window.
fn layout(k: &Kernel, regs: Vec<RegId>) -> Layout {
    let (slots, at) = super::recursion::register_slots(k, regs, 0);
    let local_bytes = k.local_bytes.next_multiple_of(4);
    let bytes = (at + local_bytes).next_multiple_of(8);
    Layout { slots, local: at, local_bytes, bytes }
}

/// A thread's places in the save area.
struct Places {
    /// The save area's address.
    save: Value,
    slot: Value,
    block_word: Value,
    shared_save: Value,
    record: Value,
    /// Bytes of shared window saved.
    shared_bytes: Value,
    t: Value,
    threads: Value,
}

expander::expansion!(
    /// Builds the phases' entry and saves from block `cur` on.
    struct Split
);

impl Split<'_> {
    fn global(&mut self, ty: OpTy, base: Value, offset: u64) -> Value {
        let addr = self.address(base, offset);
        let dst = self.temp(ty);
        self.push(InstKind::Load { space: Space::Global, ty, dsts: vec![Some(dst)], addr });
        Value::Reg(dst)
    }

    fn store(&mut self, space: Space, ty: OpTy, addr: Address, v: Value) {
        self.push(InstKind::Store { space, ty, srcs: vec![v], addr });
    }

    /// `base + offset` as an address (`base` in a register).
    fn address(&mut self, base: Value, offset: u64) -> Address {
        let reg = match base {
            Value::Reg(r) => r,
            v => {
                let r = self.temp(U64);
                self.mov(U64, r, v);
                r
            }
        };
        Address { base: Some(reg), offset: offset as i64 }
    }

    fn wide(&mut self, v: Value) -> Value {
        self.cvt(U64, U32, v)
    }

    fn mul_add(&mut self, ty: OpTy, a: Value, b: Value, c: Value) -> Value {
        let m = self.bin(BinaryOp::Mul, ty, a, b);
        self.add(ty, m, c)
    }

    /// The thread's places (`ptxvk_abi::system::GridSave`'s layout).
    fn places(&mut self, record_bytes: u32) -> Places {
        let param_bytes = self.k.abi.size;
        let area = self.system_area(param_bytes);
        let save = self.global(U64, Value::Reg(area), u64::from(sys::GRID_SAVE));
        let shared_bytes = self.global(U32, save, u64::from(sys::GRID_SHARED_SAVE));
        let slots = self.global(U64, save, u64::from(sys::GRID_SLOTS));
        let data = self.global(U64, save, u64::from(sys::GRID_DATA));
        let stride = self.global(U64, save, u64::from(sys::GRID_STRIDE));
        let [cx, cy, cz] = [Dim::X, Dim::Y, Dim::Z].map(|d| self.special(SpecialReg::Ctaid(d)));
        let nx = self.special(SpecialReg::Nctaid(Dim::X));
        let ny = self.special(SpecialReg::Nctaid(Dim::Y));
        let yz = self.mul_add(U32, ny, cz, cy);
        let block = self.mul_add(U32, nx, yz, cx);
        let block = self.wide(block);
        let threads = self.block_threads();
        let t = self.linear_tid();
        let (threads64, t64) = (self.wide(threads), self.wide(t));
        let thread = self.mul_add(U64, block, threads64, t64);
        let at = self.add(U64, save, slots);
        let slot = self.mul_add(U64, thread, Value::Imm(4), at);
        let at = self.add(U64, save, Value::Imm(u64::from(sys::GRID_BLOCK_WORDS)));
        let block_word = self.mul_add(U64, block, Value::Imm(4), at);
        let at = self.add(U64, save, data);
        let shared_save = self.mul_add(U64, block, stride, at);
        let rounded = self.add(U32, shared_bytes, Value::Imm(7));
        let rounded = self.and(U32, rounded, Value::Imm(!7u32 as u64));
        let rounded = self.wide(rounded);
        let at = self.add(U64, shared_save, rounded);
        let record = self.mul_add(U64, t64, Value::Imm(u64::from(record_bytes)), at);
        Places { save, slot, block_word, shared_save, record, shared_bytes, t, threads }
    }

    /// A loop over byte offsets `start`, `start + step`, … below `end` (u32 values).
    fn strided(
        &mut self,
        start: Value,
        end: Value,
        step: Value,
        body: impl FnOnce(&mut Self, Value),
    ) {
        let i = self.temp(U32);
        self.mov(U32, i, start);
        let head = self.new_block();
        let inside = self.new_block();
        let done = self.new_block();
        self.end_block(Terminator::Jump(head), head);
        let more = self.cmp(CmpOp::Lt, U32, Value::Reg(i), end);
        let branch =
            Terminator::Branch { cond: more, negate: false, if_true: inside, if_false: done };
        self.end_block(branch, inside);
        body(self, Value::Reg(i));
        let next = self.add(U32, Value::Reg(i), step);
        self.mov(U32, i, next);
        self.end_block(Terminator::Jump(head), done);
    }

    /// The block's shared window to its save (`to_save`) or back: word `first`,
    /// `first + count`, … (`count` threads share the copy).
    fn copy_shared(&mut self, p: &Places, to_save: bool, first: Value, count: Value) {
        let start = self.bin(BinaryOp::Mul, U32, first, Value::Imm(4));
        let step = self.bin(BinaryOp::Mul, U32, count, Value::Imm(4));
        let (save, end) = (p.shared_save, p.shared_bytes);
        self.strided(start, end, step, |e, o| {
            let o64 = e.wide(o);
            let global = e.add(U64, save, o64);
            let global = e.address(global, 0);
            let shared = e.address32(o);
            let v = e.temp(U32);
            let (from, to) = if to_save {
                ((Space::Shared, shared), (Space::Global, global))
            } else {
                ((Space::Global, global), (Space::Shared, shared))
            };
            e.push(InstKind::Load { space: from.0, ty: U32, dsts: vec![Some(v)], addr: from.1 });
            e.store(to.0, U32, to.1, Value::Reg(v));
        });
    }

    /// A 32-bit offset (shared, local) as an address.
    fn address32(&mut self, o: Value) -> Address {
        let reg = match o {
            Value::Reg(r) => r,
            v => {
                let r = self.temp(U32);
                self.mov(U32, r, v);
                r
            }
        };
        Address { base: Some(reg), offset: 0 }
    }

    /// The thread's local window to its record (`to_save`) or back.
    fn copy_local(&mut self, record: Value, l: &Layout, to_save: bool) {
        if l.local_bytes == 0 {
            return;
        }
        let base = self.add(U64, record, Value::Imm(u64::from(l.local)));
        let step = Value::Imm(4);
        self.strided(Value::Imm(0), Value::Imm(u64::from(l.local_bytes)), step, |e, o| {
            let o64 = e.wide(o);
            let global = e.add(U64, base, o64);
            let global = e.address(global, 0);
            let local = e.address32(o);
            let v = e.temp(U32);
            let (from, to) = if to_save {
                ((Space::Local, local), (Space::Global, global))
            } else {
                ((Space::Global, global), (Space::Local, local))
            };
            e.push(InstKind::Load { space: from.0, ty: U32, dsts: vec![Some(v)], addr: from.1 });
            e.store(to.0, U32, to.1, Value::Reg(v));
        });
    }

    fn count(&mut self, save: Value, delta: u32) {
        let addr = self.address(save, u64::from(sys::GRID_SUSPENDED));
        let dst = self.temp(U32);
        let (space, ty, scope, order) = (Space::Global, U32, Scope::Gpu, Order::Relaxed);
        let src = Value::Imm(u64::from(delta));
        let cmp = Value::Imm(0);
        let op = AtomicOp::Add;
        self.push(InstKind::Atomic { op, space, ty, scope, order, dst: Some(dst), addr, src, cmp });
    }

    /// Grid barrier `k`'s suspension, at the end of the current block (module doc).
    fn suspend(&mut self, k: u32, l: &Layout, record_bytes: u32, base: RegId) {
        self.push(InstKind::Barrier);
        let p = self.places(record_bytes);
        let record = p.record;
        for &(r, offset) in &l.slots {
            let (ty, v) = match self.k.reg(r).ty {
                RegTy::Pred => (U32, self.sel(U32, r, Value::Imm(1), Value::Imm(0))),
                ty => (OpTy::U(ty.bits() as u8), Value::Reg(r)),
            };
            let addr = self.address(record, u64::from(offset));
            self.store(Space::Global, ty, addr, v);
        }
        self.copy_local(record, l, true);
        let addr = self.address(p.slot, 0);
        self.store(Space::Global, U32, addr, Value::Imm(u64::from(k) + 1));
        self.count(p.save, 1);
        let addr = self.address(p.block_word, 0);
        let ticket = self.atomic_add_global(U32, addr, Value::Imm(1));
        let ticket = self.bin(BinaryOp::Sub, U32, Value::Reg(ticket), Value::Reg(base));
        // Every thread of the block that has not exited has its ticket after this barrier.
        self.push(InstKind::Barrier);
        let addr = self.address(p.block_word, 0);
        let total = self.atomic_add_global(U32, addr, Value::Imm(0));
        let arrived = self.bin(BinaryOp::Sub, U32, Value::Reg(total), Value::Reg(base));
        self.copy_shared(&p, true, ticket, arrived);
        let cur = self.cur;
        self.end_block(Terminator::Return, cur);
    }

    /// The new entry (module doc), in the current block; returns the thread's places
    /// for the resume blocks.
    fn entry(
        &mut self,
        old_entry: BlockId,
        resumes: &[BlockId],
        record_bytes: u32,
        base: RegId,
    ) -> Places {
        let p = self.places(record_bytes);
        let slot_addr = self.address(p.slot, 0);
        let slot = self.temp(U32);
        let dsts = vec![Some(slot)];
        self.push(InstKind::Load { space: Space::Global, ty: U32, dsts, addr: slot_addr });
        let addr = self.address(p.slot, 0);
        self.store(Space::Global, U32, addr, Value::Imm(u64::from(sys::GRID_DONE)));
        let addr = self.address(p.block_word, 0);
        let dsts = vec![Some(base)];
        self.push(InstKind::Load { space: Space::Global, ty: U32, dsts, addr });
        let saved = self.cmp(CmpOp::Ne, U32, Value::Reg(base), Value::Imm(0));
        let (t, threads) = (p.t, p.threads);
        self.guarded(saved, false, |e| e.copy_shared(&p, false, t, threads));
        self.push(InstKind::Barrier);
        let done = self.new_block();
        let mut cases = vec![(0, old_entry)];
        cases.extend(resumes.iter().enumerate().map(|(i, &r)| (i as u32 + 1, r)));
        let term = Terminator::Switch { selector: slot, cases, default: done };
        self.end_block(term, done);
        let cur = self.cur;
        self.end_block(Terminator::Return, cur);
        p
    }

    /// A resume block: the count down, the record back, then the code after the barrier.
    fn resume(&mut self, p: &Places, l: &Layout, after: BlockId) {
        self.count(p.save, u32::MAX);
        let record = p.record;
        for &(r, offset) in &l.slots {
            let addr = self.address(record, u64::from(offset));
            match self.k.reg(r).ty {
                RegTy::Pred => {
                    let t = self.temp(U32);
                    let dsts = vec![Some(t)];
                    self.push(InstKind::Load { space: Space::Global, ty: U32, dsts, addr });
                    self.cmp_into(r, CmpOp::Ne, U32, Value::Reg(t), Value::Imm(0));
                }
                ty => {
                    let ty = OpTy::U(ty.bits() as u8);
                    let dsts = vec![Some(r)];
                    self.push(InstKind::Load { space: Space::Global, ty, dsts, addr });
                }
            }
        }
        self.copy_local(record, l, false);
        let cur = self.cur;
        self.end_block(Terminator::Jump(after), cur);
    }
}
