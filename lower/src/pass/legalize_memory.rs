//! Pass: loads and stores of the shared and local windows become accesses of whole
//! words.
//!
//! The shared window is an array of 32-bit words, or of 64-bit words when it is wide
//! ([`crate::ir::SharedLayout::wide`]); the local window is an array of 32-bit words
//! (DESIGN §5). SPIR-V accesses whole elements only, and aliasing a byte view needs
//! `VK_KHR_workgroup_memory_explicit_layout`, which many devices lack.
//!
//! Pre: CFG or structured IR (the pass rewrites instructions inside blocks and makes no
//! blocks, so it runs last, after `predicate` has added its accesses); `Load`s and
//! `Store`s of any width to any space.
//!
//! Post: every `Load` and `Store` of a window has the width of the window's words.
//! * **Narrower stores**, to shared memory: the element is cleared and set in its word
//!   with two atomics (`and` with the inverted lane mask, then `or` with the shifted
//!   value), so that bytes of the same word that other threads store at the same time
//!   are never lost. To the local window, which is the thread's own: a plain read, mask
//!   and write of the word.
//! * **Narrower loads**: the word, shifted and truncated, then widened to the
//!   destination register as `ld` does (sign-extended for signed types).
//! * **64-bit accesses of a 32-bit window**: two words, low first (PTX accesses are
//!   naturally aligned, so an element never straddles a wide window's word).
//!
//! A vector access becomes one access per element.

use ptxvk_frontend::Diagnostic;

use super::Target;
use crate::build::{Build, Builder};
use crate::ir::{
    Address, AtomicOp, BinaryOp, FloatMode, InstKind, Kernel, OpTy, Order, RegId, Scope, Space,
    Value,
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

/// Whether `kind` loads or stores a window element that is not one word (the emitter's
/// check).
pub fn is_partial_access(k: &Kernel, kind: &InstKind) -> bool {
    match kind {
        InstKind::Store { space, ty, .. } | InstKind::Load { space, ty, .. } => {
            word_bits(k, *space).is_some_and(|w| ty.bits() != w)
        }
        _ => false,
    }
}

/// Rewrites every partial access as the module doc describes.
pub fn run(k: &mut Kernel, _target: &Target) -> Result<(), Diagnostic> {
    for b in 0..k.blocks.len() {
        if !k.blocks[b].insts.iter().any(|i| is_partial_access(k, &i.kind)) {
            continue;
        }
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            if !is_partial_access(k, &inst.kind) {
                out.push(inst);
                continue;
            }
            let mut e = Builder::new(k, inst.span);
            match inst.kind {
                InstKind::Store { space, ty, srcs, addr } => {
                    for (i, src) in srcs.into_iter().enumerate() {
                        let at = Element { space, ty, addr, extra: i as i64 * bytes(ty) };
                        store_element(&mut e, &at, src);
                    }
                }
                InstKind::Load { space, ty, dsts, addr } => {
                    for (i, dst) in dsts.into_iter().enumerate() {
                        let at = Element { space, ty, addr, extra: i as i64 * bytes(ty) };
                        // A `_` sink reads nothing another thread could observe.
                        if let Some(dst) = dst {
                            load_element(&mut e, &at, dst);
                        }
                    }
                }
                kind => e.push(kind),
            }
            out.append(&mut e.insts);
        }
        k.blocks[b].insts = out;
    }
    Ok(())
}

fn bytes(ty: OpTy) -> i64 {
    i64::from(ty.bits() / 8)
}

/// One element of a window access: `ty` at byte `addr + extra` of `space`.
struct Element {
    space: Space,
    ty: OpTy,
    addr: Address,
    extra: i64,
}

impl Element {
    fn word_bits(&self, e: &Builder<'_>) -> u32 {
        word_bits(e.kernel, self.space).unwrap_or(32)
    }

    /// The address of the element plus `more` bytes.
    fn at(&self, more: i64) -> Address {
        Address { base: self.addr.base, offset: self.addr.offset + self.extra + more }
    }

    /// The element's word and its bit position in it: constants for a constant address,
    /// else computed from the byte offset (addresses in 64-bit registers are window
    /// offsets too).
    fn word(&self, e: &mut Builder<'_>) -> (Address, Value) {
        let word_bytes = u64::from(self.word_bits(e) / 8);
        let offset = (self.addr.offset + self.extra) as u64 & 0xffff_ffff;
        match self.addr.base {
            None => {
                let word = Address { base: None, offset: (offset & !(word_bytes - 1)) as i64 };
                (word, Value::Imm((offset & (word_bytes - 1)) * 8))
            }
            Some(r) => {
                let base = if e.kernel.reg(r).ty.bits() == 64 {
                    e.cvt(U32, U64, Value::Reg(r))
                } else {
                    Value::Reg(r)
                };
                let byte = e.add(U32, base, Value::Imm(offset));
                let word = e.temp(U32);
                let align = Value::Imm(!(word_bytes - 1) & 0xffff_ffff);
                e.push(binary(BinaryOp::And, U32, word, byte, align));
                let lane = e.and(U32, byte, Value::Imm(word_bytes - 1));
                let shift = e.bin(BinaryOp::Shl, U32, lane, Value::Imm(3));
                (Address { base: Some(word), offset: 0 }, shift)
            }
        }
    }
}

/// Stores `src` as [`Element`] `at` says, by whole words.
fn store_element(e: &mut Builder<'_>, at: &Element, src: Value) {
    let word_bits = at.word_bits(e);
    if at.ty.bits() > word_bits {
        // A 64-bit element of a 32-bit window: two words, low first.
        let (lo, hi) = (e.temp(U32), e.temp(U32));
        e.push(InstKind::Unpack { elem: U32, dsts: vec![Some(lo), Some(hi)], src });
        for (half, v) in [(0, lo), (4, hi)] {
            let addr = at.at(half);
            e.push(InstKind::Store { space: at.space, ty: U32, srcs: vec![Value::Reg(v)], addr });
        }
        return;
    }
    let wty = OpTy::U(word_bits as u8);
    let lane_mask = u64::MAX >> (64 - at.ty.bits());
    let (word, shift) = at.word(e);
    let keep = match shift {
        Value::Imm(s) => Value::Imm(!(lane_mask << s) & (u64::MAX >> (64 - word_bits))),
        shift => {
            let mask = e.bin(BinaryOp::Shl, wty, Value::Imm(lane_mask), shift);
            e.not(wty, mask)
        }
    };
    let element = e.cvt(wty, at.ty.as_unsigned(), src);
    let value = match shift {
        Value::Imm(0) => element,
        shift => e.bin(BinaryOp::Shl, wty, element, shift),
    };
    if at.space == Space::Local {
        let old = e.temp(wty);
        e.push(InstKind::Load { space: at.space, ty: wty, dsts: vec![Some(old)], addr: word });
        let kept = e.and(wty, Value::Reg(old), keep);
        let new = e.or(wty, kept, value);
        e.push(InstKind::Store { space: at.space, ty: wty, srcs: vec![new], addr: word });
    } else {
        for (op, src) in [(AtomicOp::And, keep), (AtomicOp::Or, value)] {
            e.push(atomic(op, wty, word, src));
        }
    }
}

/// Loads [`Element`] `at` into `dst` by whole words, widened to `dst`'s width by `ty`'s
/// signedness.
fn load_element(e: &mut Builder<'_>, at: &Element, dst: RegId) {
    let word_bits = at.word_bits(e);
    let bits = at.ty.bits();
    if bits > word_bits {
        // A 64-bit element of a 32-bit window: two words, low first.
        let (lo, hi) = (e.temp(U32), e.temp(U32));
        for (half, v) in [(0, lo), (4, hi)] {
            let addr = at.at(half);
            e.push(InstKind::Load { space: at.space, ty: U32, dsts: vec![Some(v)], addr });
        }
        e.push(InstKind::Pack { elem: U32, dst, srcs: vec![Value::Reg(lo), Value::Reg(hi)] });
        return;
    }
    let wty = OpTy::U(word_bits as u8);
    let (word, shift) = at.word(e);
    let whole = e.temp(wty);
    e.push(InstKind::Load { space: at.space, ty: wty, dsts: vec![Some(whole)], addr: word });
    let moved = match shift {
        Value::Imm(0) => Value::Reg(whole),
        shift => e.bin(BinaryOp::Shr, wty, Value::Reg(whole), shift),
    };
    let dst_bits = e.kernel.reg(dst).ty.bits();
    let narrow = OpTy::U(bits as u8);
    if dst_bits == bits {
        e.push(convert(narrow, wty, dst, moved));
    } else {
        // `ld` into a wider register extends by the type's signedness (PTX ISA §6.4.1).
        let element = e.cvt(narrow, wty, moved);
        let (from, to) = if at.ty.is_signed() {
            (OpTy::S(bits as u8), OpTy::S(dst_bits as u8))
        } else {
            (narrow, OpTy::U(dst_bits as u8))
        };
        e.push(convert(to, from, dst, element));
    }
}

fn convert(to: OpTy, from: OpTy, dst: RegId, src: Value) -> InstKind {
    InstKind::Convert { to, from, rounding: None, mode: FloatMode::default(), dst, src }
}

fn binary(op: BinaryOp, ty: OpTy, dst: RegId, lhs: Value, rhs: Value) -> InstKind {
    InstKind::Binary { op, ty, mode: FloatMode::default(), dst, lhs, rhs }
}

/// A relaxed workgroup-scope atomic without a result.
fn atomic(op: AtomicOp, ty: OpTy, addr: Address, src: Value) -> InstKind {
    let dst: Option<RegId> = None;
    let (space, scope, order, cmp) = (Space::Shared, Scope::Cta, Order::Relaxed, Value::Imm(0));
    InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp }
}
