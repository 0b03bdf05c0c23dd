//! Pass: a shared window larger than the device's on-chip shared memory moves to device
//! memory.
//!
//! CUDA gives every block 48 KiB of static shared memory (CUDA C++ Programming Guide,
//! *Compute Capabilities*, "Maximum amount of shared memory per thread block"), and
//! libraries tune for it: CUB's and Thrust's sorts and scans, built as PTX for the
//! newest architecture, declare 36–42 KB. Vulkan promises 16 KiB
//! (`maxComputeSharedMemorySize`), lavapipe has 32 KiB. A kernel whose static shared
//! variables exceed the device's limit ([`Target::shared_memory_bytes`]) would fail every
//! launch; instead its window becomes a slice of a launch-wide area in device memory,
//! one slice per block of the dispatch ([`SpecialReg::SharedWindowAddress`], filled in by
//! the runtime through the push constants `shared_address`/`shared_stride`).
//!
//! Every shared access becomes a global access of the same width at the slice's
//! address. The semantics stay PTX's: a block's slice is its own; `bar.sync` orders
//! device memory as well as workgroup memory (the emitter's barriers carry both
//! `UniformMemory` and `WorkgroupMemory` semantics, SPIR-V §3.25); a `.cta` atomic stays
//! a workgroup-scope atomic, now on device memory. Out-of-range offsets, undefined in
//! PTX, are clamped into the slice (its last bytes), so that a block never reaches
//! another block's slice or memory past the area.
//!
//! Pre: every pass but `legalize_memory` has run (they all may still add shared
//! accesses: warp scratch, predication's vote word, the scheduler's words), so the
//! layout is final.
//!
//! Post: when the window moved, [`SharedLayout::in_device_memory`] is set and no
//! `Space::Shared` access and no `WarpBarrier` that publishes remain; otherwise the
//! kernel is unchanged.
//!
//! [`SharedLayout::in_device_memory`]: crate::ir::SharedLayout::in_device_memory

use super::Target;
use crate::build::{reg_of, Build, Builder};
use crate::ir::{Address, BinaryOp, InstKind, Kernel, OpTy, Space, SpecialReg, Value};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Vulkan's least `maxComputeSharedMemorySize` (Vulkan 1.3 §48.1, *Required Limits*).
const VULKAN_MIN_SHARED_BYTES: u32 = 16 * 1024;

/// Whether `k`'s window goes to device memory on `target`. Not under racecheck, whose
/// shadow of the window (four words per word) is on chip too: the runtime refuses such
/// a launch and says to run it with memcheck only.
pub fn moves(k: &Kernel, target: &Target) -> bool {
    let limit = target.shared_memory_bytes.map(|l| l.max(VULKAN_MIN_SHARED_BYTES));
    !target.racecheck && limit.is_some_and(|limit| k.shared.static_bytes > limit)
}

pub fn run(k: &mut Kernel, target: &Target) {
    if !moves(k, target) {
        return;
    }
    k.shared.in_device_memory = true;
    for b in 0..k.blocks.len() {
        let insts = std::mem::take(&mut k.blocks[b].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            let mut e = Builder::new(k, inst.span);
            match inst.kind {
                InstKind::Load { space: Space::Shared, ty, dsts, addr } => {
                    let addr = slice_address(&mut e, addr, bytes(ty) * dsts.len() as u32);
                    e.push(InstKind::Load { space: Space::Global, ty, dsts, addr });
                }
                InstKind::Store { space: Space::Shared, ty, srcs, addr } => {
                    let addr = slice_address(&mut e, addr, bytes(ty) * srcs.len() as u32);
                    e.push(InstKind::Store { space: Space::Global, ty, srcs, addr });
                }
                InstKind::Atomic {
                    op,
                    space: Space::Shared,
                    ty,
                    scope,
                    order,
                    dst,
                    addr,
                    src,
                    cmp,
                } => {
                    let addr = slice_address(&mut e, addr, bytes(ty));
                    let space = Space::Global;
                    e.push(InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp });
                }
                // The emitter stores a published word at `warp_scratch` + 4 × the
                // thread's linear index of the on-chip window; here that store is made
                // explicit, to the slice.
                InstKind::WarpBarrier { publish: Some(value) } => {
                    let scratch = e.kernel.warp_scratch.unwrap_or(0);
                    let t = e.linear_tid();
                    let word = e.bin(BinaryOp::Shl, U32, t, Value::Imm(2));
                    let at = e.add(U32, word, Value::Imm(u64::from(scratch)));
                    let addr = Address { base: reg_of(at), offset: 0 };
                    let addr = slice_address(&mut e, addr, 4);
                    e.push(InstKind::Store {
                        space: Space::Global,
                        ty: U32,
                        srcs: vec![value],
                        addr,
                    });
                    e.push(InstKind::WarpBarrier { publish: None });
                }
                kind => e.push(kind),
            }
            out.append(&mut e.insts);
        }
        k.blocks[b].insts = out;
    }
}

fn bytes(ty: OpTy) -> u32 {
    ty.bits().div_ceil(8)
}

/// The device address of the `size` bytes at shared offset `addr` of the block's slice:
/// the 32-bit offset (a 64-bit base register contributes its low half, as for an
/// on-chip window), clamped so that the access ends inside the window (at the end of the
/// dynamic region, which is where the runtime's `shared_bytes` of the launch end too).
fn slice_address(e: &mut Builder<'_>, addr: Address, size: u32) -> Address {
    let offset = Value::Imm(addr.offset as u64 & 0xffff_ffff);
    let offset = match addr.base {
        None => offset,
        Some(r) => {
            let base = match e.kernel.reg(r).ty.bits() {
                64 => e.cvt(U32, U64, Value::Reg(r)),
                _ => Value::Reg(r),
            };
            e.add(U32, base, offset)
        }
    };
    // The pass only moves windows of more than 16 KiB, so `end - size` does not wrap.
    let dynamic_base = e.special(SpecialReg::DynamicSharedBase);
    let dynamic_bytes = e.special(SpecialReg::DynamicSharedBytes);
    let end = e.add(U32, dynamic_base, dynamic_bytes);
    let last = e.bin(BinaryOp::Sub, U32, end, Value::Imm(u64::from(size)));
    let offset = e.bin(BinaryOp::Min, U32, offset, last);
    let offset = e.cvt(U64, U32, offset);
    let window = e.special(SpecialReg::SharedWindowAddress);
    let at = e.add(U64, window, offset);
    Address { base: reg_of(at), offset: 0 }
}
