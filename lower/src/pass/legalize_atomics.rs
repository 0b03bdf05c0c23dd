//! Pass: atomics that SPIR-V does not have become compare-and-swap loops.
//!
//! Pre: CFG IR whose [`InstKind::Atomic`]s may be any [`AtomicOp`] on any element
//! width that semantic analysis accepts (8 bits for strong loads and stores, 16, 32, 64
//! bits).
//!
//! Post: every atomic is native ([`AtomicOp::is_native`]) and as wide as the atomic
//! word of its space: 32 or 64 bits in global memory; 32 bits in shared memory, or 64
//! in a wide window ([`crate::ir::SharedLayout::wide`], which has 64-bit elements
//! only). A narrower atomic load (a strong `ld`, `pass::expand_strong`) becomes an
//! atomic load of the containing word with the same scope and order, and the element
//! shifted out of it: one single-copy atomic access (PTX ISA 9.2 §8.4-8.6). The others
//! — `inc`, `dec`, the float additions, 16-bit `cas`, and anything else narrower than
//! the word, such as a strong 8-bit store, or a 32-bit one into a wide window — become
//!
//! ```text
//! old = *word; loop { new = update(old); seen = cas(word, old, new);
//!                     if seen == old break; old = seen }
//! ```
//!
//! on the aligned word that contains the element, the rest of the word kept. The
//! loop's blocks are new; the instructions after the atomic move to the block after
//! the loop. Vulkan has no wrapping increment, and float atomics are optional (and
//! do not flush subnormals as PTX's global `atom.add.f32` does), so every device gets
//! the loops: the [`Target`] does not matter yet.

use ptxvk_frontend::{Diagnostic, Span};

use super::Target;
use crate::build::{Build, Builder};
use crate::ir::{
    Address, AtomicOp, BinaryOp, Block, BlockId, CmpOp, FloatMode, Inst, InstKind, Kernel, OpTy,
    Order, RegId, Scope, Space, Terminator, Value,
};

const U32: OpTy = OpTy::U(32);

/// The bits of the atomic word at `space`.
fn word_bits(k: &Kernel, space: Space, ty: OpTy) -> u32 {
    if space == Space::Shared && k.shared.wide() {
        64
    } else {
        ty.bits().max(32)
    }
}

/// The atomic to rewrite, when `kind` is one that needs a loop in `k`.
fn needing_loop(k: &Kernel, kind: &InstKind) -> Option<Rmw> {
    match *kind {
        InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp }
            if !op.is_native() || ty.bits() < word_bits(k, space, ty) =>
        {
            Some(Rmw { op, space, ty, scope, order, dst, addr, src, cmp })
        }
        _ => None,
    }
}

/// Whether an instruction is one this pass removes (the emitter's check).
pub fn needs_loop(k: &Kernel, kind: &InstKind) -> bool {
    needing_loop(k, kind).is_some()
}

/// An atomic to rewrite, taken apart.
#[derive(Clone, Copy)]
struct Rmw {
    op: AtomicOp,
    space: Space,
    ty: OpTy,
    scope: Scope,
    order: Order,
    dst: Option<RegId>,
    addr: Address,
    src: Value,
    cmp: Value,
}

/// Rewrites every atomic as the module doc describes.
pub fn run(k: &mut Kernel, _target: &Target) -> Result<(), Diagnostic> {
    // The blocks after loops are appended, so they are visited too.
    let mut b = 0;
    while b < k.blocks.len() {
        let found = k.blocks[b]
            .insts
            .iter()
            .enumerate()
            .find_map(|(i, inst)| needing_loop(k, &inst.kind).map(|r| (i, r, inst.span)));
        if let Some((at, rmw, span)) = found {
            let mut insts = std::mem::take(&mut k.blocks[b].insts);
            // The atomic itself is dropped: the word's load or the loop replaces it.
            let rest = insts.split_off(at + 1);
            insts.truncate(at);
            if rmw.op == AtomicOp::Load {
                word_load(k, &mut insts, &rmw, span);
                insts.extend(rest);
                k.blocks[b].insts = insts;
                // The block's later atomics.
                continue;
            }
            let done = cas_loop(k, b, &mut insts, &rmw, span);
            k.blocks[b].insts = insts;
            k.blocks[done.index()].insts.extend(rest);
        }
        b += 1;
    }
    Ok(())
}

/// The new element for `old` (`bits` wide).
fn update(e: &mut Builder<'_>, a: &Rmw, old: Value) -> Value {
    let bits = a.ty.as_unsigned();
    match a.op {
        AtomicOp::Inc => {
            let wraps = e.cmp(CmpOp::Ge, bits, old, a.src);
            let next = e.add(bits, old, Value::Imm(1));
            e.sel(bits, wraps, Value::Imm(0), next)
        }
        AtomicOp::Dec => {
            let zero = e.cmp(CmpOp::Eq, bits, old, Value::Imm(0));
            let above = e.cmp(CmpOp::Gt, bits, old, a.src);
            let reset = e.pred_or(zero, above);
            let prev = e.bin(BinaryOp::Sub, bits, old, Value::Imm(1));
            e.sel(bits, reset, a.src, prev)
        }
        AtomicOp::Cas => {
            let equal = e.cmp(CmpOp::Eq, bits, old, a.cmp);
            e.sel(bits, equal, a.src, old)
        }
        AtomicOp::Exch | AtomicOp::Store => a.src,
        AtomicOp::Load => old,
        AtomicOp::HalfAdd { format, lanes } => {
            let sums = (0..lanes)
                .map(|k| {
                    let x = e.lane(old, lanes, k);
                    let y = e.lane(a.src, lanes, k);
                    e.half_add(format, x, y)
                })
                .collect();
            e.pack(16, sums)
        }
        AtomicOp::HalfMinMax { max, format, lanes } => {
            let results = (0..lanes)
                .map(|k| {
                    let x = e.lane(old, lanes, k);
                    let y = e.lane(a.src, lanes, k);
                    e.half_min_max(format, max, x, y)
                })
                .collect();
            e.pack(16, results)
        }
        AtomicOp::FloatAdd { ftz } => {
            let t = e.temp(a.ty);
            let mode = FloatMode { ftz, ..FloatMode::default() };
            let (lhs, rhs) = (old, a.src);
            e.push(InstKind::Binary { op: BinaryOp::Add, ty: a.ty, mode, dst: t, lhs, rhs });
            Value::Reg(t)
        }
        AtomicOp::Add
        | AtomicOp::And
        | AtomicOp::Or
        | AtomicOp::Xor
        | AtomicOp::Min
        | AtomicOp::Max => {
            let op = match a.op {
                AtomicOp::Add => BinaryOp::Add,
                AtomicOp::And => BinaryOp::And,
                AtomicOp::Or => BinaryOp::Or,
                AtomicOp::Xor => BinaryOp::Xor,
                AtomicOp::Min => BinaryOp::Min,
                _ => BinaryOp::Max,
            };
            // `ty` keeps the signedness `.min`/`.max` compare with.
            e.bin(op, a.ty, old, a.src)
        }
    }
}

/// The address of the word that contains `a`'s element and, for an element narrower
/// than the word (`word_bits`), the element's bit position in it.
fn containing_word(e: &mut Builder<'_>, a: &Rmw, word_bits: u32) -> (Address, Option<Value>) {
    let bits = a.ty.as_unsigned();
    if bits.bits() < word_bits {
        // The address at its register's width: shared addresses may be held in 64-bit
        // registers (clang, NVRTC) or 32-bit ones (nvcc), and global ones are 32-bit
        // offsets in a module with `.address_size 32` (`Kernel::address_size`).
        let wide_base = match a.addr.base {
            Some(r) => e.kernel.reg(r).ty.bits() == 64,
            None => a.space == Space::Global && e.kernel.address_size == 64,
        };
        let aty = if wide_base { OpTy::U(64) } else { U32 };
        let base = a.addr.base.map_or(Value::Imm(0), Value::Reg);
        let full = e.add(aty, base, Value::Imm(a.addr.offset as u64));
        let (word_bytes, elem_bytes) = (u64::from(word_bits / 8), u64::from(bits.bits() / 8));
        let word = e.and(aty, full, Value::Imm(!(word_bytes - 1)));
        let word_reg = e.temp(aty);
        e.mov(aty, word_reg, word);
        let low = e.cvt(U32, aty, full);
        let lane = e.and(U32, low, Value::Imm(word_bytes - elem_bytes));
        let shift = e.bin(BinaryOp::Shl, U32, lane, Value::Imm(3));
        (Address { base: Some(word_reg), offset: 0 }, Some(shift))
    } else {
        (a.addr, None)
    }
}

/// Appends to `pre` the narrow atomic load `a` as an atomic load of the containing word
/// and its element's bits, into `a.dst` (module doc).
fn word_load(k: &mut Kernel, pre: &mut Vec<Inst>, a: &Rmw, span: Span) {
    let bits = a.ty.as_unsigned();
    let word_ty = OpTy::U(word_bits(k, a.space, a.ty) as u8);
    let mut e = Builder::new(k, span);
    let (addr, shift) = containing_word(&mut e, a, word_ty.bits());
    let word = e.temp(word_ty);
    let (space, scope, order, dst) = (a.space, a.scope, a.order, Some(word));
    let (src, cmp) = (Value::Imm(0), Value::Imm(0));
    let op = AtomicOp::Load;
    e.push(InstKind::Atomic { op, space, ty: word_ty, scope, order, dst, addr, src, cmp });
    let moved = match shift {
        Some(sh) => e.bin(BinaryOp::Shr, word_ty, Value::Reg(word), sh),
        None => Value::Reg(word),
    };
    let elem = e.cvt(bits, word_ty, moved);
    if let Some(d) = a.dst {
        e.mov(bits, d, elem);
    }
    pre.append(&mut e.insts);
}

/// Ends block `b` (whose instructions so far are `pre`) with the loop for `a`; returns
/// the block after it, which takes over `b`'s terminator and receives the old element
/// in `a.dst`.
fn cas_loop(k: &mut Kernel, b: usize, pre: &mut Vec<Inst>, a: &Rmw, span: Span) -> BlockId {
    let bits = a.ty.as_unsigned();
    let word_bits = word_bits(k, a.space, a.ty);
    let word_ty = OpTy::U(word_bits as u8);
    let mut e = Builder::new(k, span);
    let (addr, shift) = containing_word(&mut e, a, word_bits);
    let old = e.temp(word_ty);
    e.push(InstKind::Load { space: a.space, ty: word_ty, dsts: vec![Some(old)], addr });
    pre.append(&mut e.insts);

    let old_word = Value::Reg(old);
    let old_elem = match shift {
        Some(sh) => {
            let moved = e.bin(BinaryOp::Shr, word_ty, old_word, sh);
            e.cvt(bits, word_ty, moved)
        }
        None => old_word,
    };
    let new_elem = update(&mut e, a, old_elem);
    let new_word = match shift {
        Some(sh) => {
            let ones = Value::Imm(u64::MAX >> (64 - bits.bits()));
            let mask = e.bin(BinaryOp::Shl, word_ty, ones, sh);
            let keep = e.not(word_ty, mask);
            let kept = e.and(word_ty, old_word, keep);
            let widened = e.cvt(word_ty, bits, new_elem);
            let placed = e.bin(BinaryOp::Shl, word_ty, widened, sh);
            e.or(word_ty, kept, placed)
        }
        None => new_elem,
    };
    let seen = e.temp(word_ty);
    e.push(InstKind::Atomic {
        op: AtomicOp::Cas,
        space: a.space,
        ty: word_ty,
        scope: a.scope,
        order: a.order,
        dst: Some(seen),
        addr,
        src: new_word,
        cmp: old_word,
    });
    let ok = e.cmp(CmpOp::Eq, word_ty, Value::Reg(seen), old_word);
    let result = e.temp(bits);
    e.mov(bits, result, old_elem);
    e.mov(word_ty, old, Value::Reg(seen));
    let body_insts = std::mem::take(&mut e.insts);
    if let Some(d) = a.dst {
        e.mov(bits, d, Value::Reg(result));
    }
    let done_insts = std::mem::take(&mut e.insts);

    let term = std::mem::replace(&mut k.blocks[b].term, Terminator::Return);
    let block = |insts, term| Block { label: None, span, insts, term, term_span: span };
    let done = BlockId(k.blocks.len() as u32);
    let body = BlockId(done.0 + 1);
    k.blocks.push(block(done_insts, term));
    let again = Terminator::Branch { cond: ok, negate: false, if_true: done, if_false: body };
    k.blocks.push(block(body_insts, again));
    k.blocks[b].term = Terminator::Jump(body);
    done
}
