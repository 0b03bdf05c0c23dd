//! Pass: loads and stores of the shared and local windows become accesses of whole
//! words.
//!
//! The shared window is an array of 32-bit words, of 64-bit words when the kernel has
//! 64-bit shared atomics, or of bytes or halves when this pass finds that better
//! ([`crate::ir::SharedLayout::word`], chosen first: see `typed_shared_word`); the local
//! window is an array of 32-bit words (`docs/architecture.md`, *The launch ABI*). SPIR-V
//! accesses whole elements only, and aliasing a byte view needs
//! `VK_KHR_workgroup_memory_explicit_layout`, which many devices (lavapipe among them)
//! lack.
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
//! * **Wider accesses** (64 bits in a 32-bit window, anything wider than a byte window's
//!   bytes): the words, lowest first (PTX accesses are naturally aligned, so an
//!   element never straddles a word of a wider window).
//!
//! A vector access becomes one access per element.

use ptxvk_frontend::Diagnostic;

use super::Target;
use crate::build::{Build, Builder};
use crate::ir::{
    Address, AtomicOp, BinaryOp, FloatMode, InstKind, Kernel, OpTy, Order, RegId, Scope,
    SharedWord, Space, Value,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// The bits of the words of `space`'s window.
fn word_bits(k: &Kernel, space: Space) -> Option<u32> {
    match space {
        Space::Shared => Some(k.shared.word.bits()),
        Space::Local => Some(32),
        Space::Global | Space::Param | Space::Generic => None,
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
pub fn run(k: &mut Kernel, target: &Target) -> Result<(), Diagnostic> {
    if let Some(word) = typed_shared_word(k, target) {
        k.shared.word = word;
    }
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

/// The element of a byte or half-word shared window, where typed stores beat the
/// atomics a 32-bit window needs: the device has that integer width in workgroup
/// memory (`shaderInt8`, `shaderInt16`: Vulkan 1.3 §15.7 allows such types in the
/// Workgroup storage class without the explicit-layout extension); nothing but plain
/// loads and stores touches the window (no atomics, which need 32-bit elements, no
/// warp scratch, which the emitter writes as words); its narrowest access has that
/// width; and accesses wider than it, which the window splits into elements, are no
/// more than the narrow stores, which it saves two atomics each.
fn typed_shared_word(k: &Kernel, target: &Target) -> Option<SharedWord> {
    if k.shared.word != SharedWord::U32 || k.warp_scratch.is_some() || k.block_vote.is_some() {
        return None;
    }
    let mut widths = Vec::new();
    for kind in k.blocks.iter().flat_map(|b| &b.insts).map(|i| &i.kind) {
        match kind {
            InstKind::Atomic { space: Space::Shared, .. } => return None,
            InstKind::Load { space: Space::Shared, ty, .. } => widths.push((ty.bits(), false)),
            InstKind::Store { space: Space::Shared, ty, .. } => widths.push((ty.bits(), true)),
            _ => {}
        }
    }
    let narrowest = widths.iter().map(|w| w.0).min()?;
    let available = match narrowest {
        8 => target.int8,
        16 => target.int16,
        _ => false,
    };
    let narrow_stores = widths.iter().filter(|&&(bits, store)| store && bits == narrowest).count();
    let split = widths.iter().filter(|w| w.0 > narrowest).count();
    (available && split <= narrow_stores).then(|| SharedWord::of_bits(narrowest)).flatten()
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
    // A store's register may be wider than its type (PTX ISA 9.2 §5.2.2; clang stores
    // a `.u16` from a 32-bit register): its low bits are the element.
    let src = match src {
        Value::Reg(r) if e.kernel.reg(r).ty.bits() > at.ty.bits() => {
            let from = OpTy::U(e.kernel.reg(r).ty.bits() as u8);
            e.cvt(at.ty.as_unsigned(), from, src)
        }
        src => src,
    };
    let word_bits = at.word_bits(e);
    if at.ty.bits() > word_bits {
        // An element wider than a word (PTX accesses are naturally aligned, so it is
        // whole words): the words, lowest first.
        let wty = OpTy::U(word_bits as u8);
        let words: Vec<RegId> = (0..at.ty.bits() / word_bits).map(|_| e.temp(wty)).collect();
        let dsts = words.iter().map(|&w| Some(w)).collect();
        e.push(InstKind::Unpack { elem: wty, dsts, src });
        for (i, w) in words.into_iter().enumerate() {
            let addr = at.at(i as i64 * i64::from(word_bits / 8));
            e.push(InstKind::Store { space: at.space, ty: wty, srcs: vec![Value::Reg(w)], addr });
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
        // An element wider than a word: its words, lowest first, packed.
        let wty = OpTy::U(word_bits as u8);
        let mut srcs = Vec::new();
        for i in 0..bits / word_bits {
            let w = e.temp(wty);
            let addr = at.at(i64::from(i * word_bits / 8));
            e.push(InstKind::Load { space: at.space, ty: wty, dsts: vec![Some(w)], addr });
            srcs.push(Value::Reg(w));
        }
        let dst_bits = e.kernel.reg(dst).ty.bits();
        if dst_bits == bits {
            e.push(InstKind::Pack { elem: wty, dst, srcs });
        } else {
            let packed = e.temp(OpTy::U(bits as u8));
            e.push(InstKind::Pack { elem: wty, dst: packed, srcs });
            e.push(extend(at.ty, dst_bits, dst, Value::Reg(packed)));
        }
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
        let element = e.cvt(narrow, wty, moved);
        e.push(extend(at.ty, dst_bits, dst, element));
    }
}

/// `dst = src`, an element of type `ty`, widened to `dst_bits` as `ld` into a wider
/// register does: by the type's signedness (PTX ISA §6.4.1).
fn extend(ty: OpTy, dst_bits: u32, dst: RegId, src: Value) -> InstKind {
    let bits = ty.bits() as u8;
    if ty.is_signed() {
        convert(OpTy::S(dst_bits as u8), OpTy::S(bits), dst, src)
    } else {
        convert(OpTy::U(dst_bits as u8), OpTy::U(bits), dst, src)
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
