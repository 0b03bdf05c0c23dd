//! Pass: stores narrower than a word of the shared or local window.
//!
//! The shared window is an array of 32-bit words, or of 64-bit words when it is wide
//! ([`crate::ir::SharedLayout::wide`]); the local window is an array of 32-bit words
//! (DESIGN §5). SPIR-V cannot store part of an element, and aliasing a byte view needs
//! `VK_KHR_workgroup_memory_explicit_layout`, which many devices lack.
//!
//! Pre: CFG or structured IR (the pass rewrites instructions inside blocks and makes no
//! blocks, so it runs last, after `predicate` has added its stores); `Store`s of any
//! width to any space.
//!
//! Post: every `Store` to the shared window is at least as wide as its words, and
//! every `Store` to the local window at least 32 bits wide:
//! * **shared**: an element is cleared and set in its word with two atomics
//!   (`and` with the inverted lane mask, then `or` with the shifted value), so that
//!   bytes of the same word that other threads store at the same time are never lost;
//! * **local**: the window is the thread's own, so a plain read, mask and write of
//!   the word.
//!
//! A vector store becomes one store per element.

use ptxvk_frontend::Diagnostic;

use super::Target;
use crate::build::{Build, Builder};
use crate::ir::{
    Address, AtomicOp, BinaryOp, InstKind, Kernel, OpTy, Order, RegId, Scope, Space, Value,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// The bits of the words of `space`'s window.
fn word_bits(k: &Kernel, space: Space) -> Option<u32> {
    match space {
        Space::Shared if k.shared.wide => Some(64),
        Space::Shared | Space::Local => Some(32),
        Space::Global | Space::Param => None,
    }
}

/// Whether `kind` stores part of a window word (the emitter's check).
pub fn is_partial_store(k: &Kernel, kind: &InstKind) -> bool {
    match kind {
        InstKind::Store { space, ty, .. } => word_bits(k, *space).is_some_and(|w| ty.bits() < w),
        _ => false,
    }
}

/// Rewrites every partial store as the module doc describes.
pub fn run(k: &mut Kernel, _target: &Target) -> Result<(), Diagnostic> {
    for b in 0..k.blocks.len() {
        if !k.blocks[b].insts.iter().any(|i| is_partial_store(k, &i.kind)) {
            continue;
        }
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            if !is_partial_store(k, &inst.kind) {
                out.push(inst);
                continue;
            }
            let InstKind::Store { space, ty, srcs, addr } = inst.kind else { continue };
            let word = word_bits(k, space).unwrap_or(32);
            let mut e = Builder::new(k, inst.span);
            for (i, src) in srcs.into_iter().enumerate() {
                let extra = i as i64 * i64::from(ty.bits() / 8);
                store_element(&mut e, space, word, ty, addr, extra, src);
            }
            out.append(&mut e.insts);
        }
        k.blocks[b].insts = out;
    }
    Ok(())
}

/// Stores one `ty` element at byte `addr + extra` into its `word_bits` word.
fn store_element(
    e: &mut Builder<'_>,
    space: Space,
    word_bits: u32,
    ty: OpTy,
    addr: Address,
    extra: i64,
    src: Value,
) {
    let wty = OpTy::U(word_bits as u8);
    let word_bytes = u64::from(word_bits / 8);
    let lane_mask = u64::MAX >> (64 - ty.bits());
    let width_mask = u64::MAX >> (64 - word_bits);
    // The word's address, the element's bit position in it and the mask that keeps the
    // rest of the word: constants for a constant address, else computed from the byte
    // offset (addresses in 64-bit registers are window offsets too).
    let (word_addr, shift, keep) = match addr.base {
        None => {
            let byte = (addr.offset + extra) as u64 & 0xffff_ffff;
            let shift = (byte & (word_bytes - 1)) * 8;
            let word = Address { base: None, offset: (byte & !(word_bytes - 1)) as i64 };
            (word, Value::Imm(shift), Value::Imm(!(lane_mask << shift) & width_mask))
        }
        Some(r) => {
            let base = if e.kernel.reg(r).ty.bits() == 64 {
                e.cvt(U32, U64, Value::Reg(r))
            } else {
                Value::Reg(r)
            };
            let byte = e.add(U32, base, Value::Imm((addr.offset + extra) as u64 & 0xffff_ffff));
            let aligned = e.and(U32, byte, Value::Imm(!(word_bytes - 1) & 0xffff_ffff));
            let word = e.temp(U32);
            e.mov(U32, word, aligned);
            let lane = e.and(U32, byte, Value::Imm(word_bytes - 1));
            let shift = e.bin(BinaryOp::Shl, U32, lane, Value::Imm(3));
            let mask = e.bin(BinaryOp::Shl, wty, Value::Imm(lane_mask), shift);
            let keep = e.not(wty, mask);
            (Address { base: Some(word), offset: 0 }, shift, keep)
        }
    };
    let element = e.cvt(wty, ty.as_unsigned(), src);
    let value = e.bin(BinaryOp::Shl, wty, element, shift);
    if space == Space::Local {
        let old = e.temp(wty);
        let load = InstKind::Load { space, ty: wty, dsts: vec![Some(old)], addr: word_addr };
        e.push(load);
        let kept = e.and(wty, Value::Reg(old), keep);
        let new = e.or(wty, kept, value);
        e.push(InstKind::Store { space, ty: wty, srcs: vec![new], addr: word_addr });
    } else {
        for (op, src) in [(AtomicOp::And, keep), (AtomicOp::Or, value)] {
            e.push(atomic(op, wty, word_addr, src));
        }
    }
}

/// A relaxed workgroup-scope atomic without a result.
fn atomic(op: AtomicOp, ty: OpTy, addr: Address, src: Value) -> InstKind {
    let dst: Option<RegId> = None;
    let (space, scope, order, cmp) = (Space::Shared, Scope::Cta, Order::Relaxed, Value::Imm(0));
    InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp }
}
