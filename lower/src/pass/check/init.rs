//! Initcheck, the global-memory part of `pass::check` (`PTXVK_CHECK=initcheck`): a read
//! of device memory that neither the host nor a kernel has written.
//!
//! Device allocations have write shadows kept by the runtime (`ptxvk_vk`'s `shadow`
//! module): bit `w % 32` of u32 word `w / 32` is set once 4-byte word `w` of the
//! allocation was written. An access finds its shadow word through the allocation table
//! (a call of the routine [`Routine::ShadowWord`]), or from its pointer parameter's
//! allocation when it derives from one; memory without a shadow (host, managed and
//! registered memory, module data, the heap) uses an all-ones word of the system area
//! instead ([`crate::system::ALL_WRITTEN`]), so that it always counts as written. A read
//! (or atomic) tests the bits of the words it touches, and one with a clear bit is
//! recorded as [`crate::system::VIOLATION_UNINITIALIZED`] (the access still happens); a
//! write (or atomic) sets them, with an atomic OR since other threads set bits of the
//! same word.

use crate::build::{Build, Builder};
use crate::ir::*;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// The shadow word of `address` (a 64-bit device address) in the shadow at `shadow`
/// (0 for none) of the allocation that starts at `start`.
pub(super) fn param_word(
    b: &mut Builder<'_>,
    shadow: RegId,
    start: RegId,
    address: Value,
) -> Value {
    let offset = b.bin(BinaryOp::Sub, U64, address, Value::Reg(start));
    let word = b.bin(BinaryOp::Shr, U64, offset, Value::Imm(7));
    let word = b.bin(BinaryOp::Shl, U64, word, Value::Imm(2));
    let word = b.add(U64, Value::Reg(shadow), word);
    let has = b.cmp(CmpOp::Ne, U64, Value::Reg(shadow), Value::Imm(0));
    b.sel(U64, has, word, Value::Imm(0))
}

/// The shadow word of `address` found through the allocation table at `table`.
pub(super) fn table_word(b: &mut Builder<'_>, table: RegId, address: Value) -> Value {
    super::call(b, Routine::ShadowWord, vec![Value::Reg(table), address])
}

/// Where the bits of an access of `size` bytes at `address` are: the shadow word to use
/// (`word`, or the all-ones word at `all_written` when it is 0) and their mask in it.
pub(super) fn locate(
    b: &mut Builder<'_>,
    word: Value,
    all_written: RegId,
    address: Value,
    size: u32,
) -> (RegId, Value) {
    let none = b.cmp(CmpOp::Eq, U64, word, Value::Imm(0));
    let at = b.temp(U64);
    let (a, c) = (Value::Reg(all_written), word);
    b.push(InstKind::Select { ty: U64, dst: at, a, b: c, cond: none, negate: false });
    // Allocations with shadows start at multiples of 128 bytes, so the word's bit
    // index is the address's; an aligned access of up to 16 bytes stays in one word.
    let index = b.bin(BinaryOp::Shr, U64, address, Value::Imm(2));
    let index = b.lo32(index);
    let bit = b.and(U32, index, Value::Imm(31));
    let words = u64::from(size.div_ceil(4));
    let mask = b.bin(BinaryOp::Shl, U32, Value::Imm((1 << words) - 1), bit);
    (at, mask)
}

/// Whether a bit of `mask` is clear in the shadow word at `at`.
pub(super) fn unwritten(b: &mut Builder<'_>, at: RegId, mask: Value) -> RegId {
    let word = Address { base: Some(at), offset: 0 };
    let bits = b.atomic_global(AtomicOp::Load, U32, word, Value::Imm(0));
    let set = b.and(U32, Value::Reg(bits), mask);
    b.cmp(CmpOp::Ne, U32, set, mask)
}

/// Sets the bits of `mask` in the shadow word at `at`.
pub(super) fn mark(b: &mut Builder<'_>, at: RegId, mask: Value) {
    b.atomic_global(AtomicOp::Or, U32, Address { base: Some(at), offset: 0 }, mask);
}
