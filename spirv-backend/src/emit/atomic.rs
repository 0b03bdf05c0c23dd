//! `InstKind::Atomic`: SPIR-V `OpAtomic*` on global memory (a physical storage buffer
//! pointer of the operation's width) or on a word of the shared window, with the PTX
//! scope and ordering mapped to SPIR-V scopes and memory semantics (SPIR-V §3.25, §3.27).

use rspirv::spirv::{StorageClass, Word};

use ptxvk_lower::ir::{Address, AtomicOp, OpTy, Order, Scope, Space, Value};

use super::{
    FnEmitter, R, SCOPE_DEVICE, SCOPE_WORKGROUP, SEM_ACQ_REL, SEM_UNIFORM_MEMORY,
    SEM_WORKGROUP_MEMORY,
};
use crate::types::Scalar;
use crate::Error;

const SEM_ACQUIRE: u32 = 0x2;
const SEM_RELEASE: u32 = 0x4;

impl FnEmitter<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &mut self,
        op: AtomicOp,
        space: Space,
        ty: OpTy,
        scope: Scope,
        order: Order,
        addr: &Address,
        src: Value,
        cmp: Value,
    ) -> R<Word> {
        let s = Scalar::Int(ty.bits() as u8);
        let vt = self.ty(s);
        if ty.bits() == 64 {
            self.t.used.int64_atomics = true;
        }
        let (ptr, storage_bits) = match space {
            Space::Global => {
                let a = self.address64(Space::Global, addr, 0)?;
                let pt = self.t.pointer(self.b, StorageClass::PhysicalStorageBuffer, vt);
                (self.b.convert_u_to_ptr(pt, None, a)?, SEM_UNIFORM_MEMORY)
            }
            // A wide window (`SharedLayout::wide`) has 64-bit atomics, a narrow one
            // 32-bit ones; `pass::legalize_atomics` makes the others CAS loops.
            Space::Shared if self.k.shared.wide() => {
                if ty.bits() != 64 {
                    return Err(Error::Internal("a narrow atomic on a wide shared window".into()));
                }
                let off = self.address32(addr, 0)?;
                (self.shared_wide_word(off)?, SEM_WORKGROUP_MEMORY)
            }
            Space::Shared => {
                if ty.bits() != 32 {
                    return Err(Error::Internal(
                        "a 64-bit atomic on a narrow shared window".into(),
                    ));
                }
                let off = self.address32(addr, 0)?;
                let u32t = self.ty(Scalar::Int(32));
                let two = self.konst(Scalar::Int(32), 2);
                let index = self.b.shift_right_logical(u32t, None, off, two)?;
                (self.shared_word(index)?, SEM_WORKGROUP_MEMORY)
            }
            // `pass::leftover` refuses a generic atomic before the emitter sees one.
            Space::Param | Space::Local | Space::Generic => {
                return Err(Error::Internal(format!("atomic on {space:?} memory")))
            }
        };
        let scope_id = self.konst(
            Scalar::Int(32),
            u64::from(if scope == Scope::Cta { SCOPE_WORKGROUP } else { SCOPE_DEVICE }),
        );
        let sem_bits = |o: Order| match o {
            Order::Relaxed => 0,
            Order::Acquire => SEM_ACQUIRE | storage_bits,
            Order::Release => SEM_RELEASE | storage_bits,
            Order::AcqRel => SEM_ACQ_REL | storage_bits,
        };
        let sem = self.konst(Scalar::Int(32), u64::from(sem_bits(order)));
        let v = self.read(src, s)?;
        let signed = ty.is_signed();
        let b = &mut *self.b;
        Ok(match op {
            AtomicOp::Load => b.atomic_load(vt, None, ptr, scope_id, sem)?,
            AtomicOp::Store => {
                b.atomic_store(ptr, scope_id, sem, v)?;
                v
            }
            AtomicOp::Add => b.atomic_i_add(vt, None, ptr, scope_id, sem, v)?,
            AtomicOp::And => b.atomic_and(vt, None, ptr, scope_id, sem, v)?,
            AtomicOp::Or => b.atomic_or(vt, None, ptr, scope_id, sem, v)?,
            AtomicOp::Xor => b.atomic_xor(vt, None, ptr, scope_id, sem, v)?,
            AtomicOp::Exch => b.atomic_exchange(vt, None, ptr, scope_id, sem, v)?,
            AtomicOp::Min if signed => b.atomic_s_min(vt, None, ptr, scope_id, sem, v)?,
            AtomicOp::Min => b.atomic_u_min(vt, None, ptr, scope_id, sem, v)?,
            AtomicOp::Max if signed => b.atomic_s_max(vt, None, ptr, scope_id, sem, v)?,
            AtomicOp::Max => b.atomic_u_max(vt, None, ptr, scope_id, sem, v)?,
            AtomicOp::Cas => {
                // The failure ordering may not release (SPIR-V OpAtomicCompareExchange).
                let unequal = match order {
                    Order::AcqRel | Order::Acquire => Order::Acquire,
                    Order::Release | Order::Relaxed => Order::Relaxed,
                };
                let unequal = self.konst(Scalar::Int(32), u64::from(sem_bits(unequal)));
                let c = self.read(cmp, s)?;
                self.b.atomic_compare_exchange(vt, None, ptr, scope_id, sem, unequal, v, c)?
            }
            AtomicOp::Inc
            | AtomicOp::Dec
            | AtomicOp::FloatAdd { .. }
            | AtomicOp::HalfAdd { .. }
            | AtomicOp::HalfMinMax { .. } => {
                return Err(Error::Internal("a non-native atomic".into()));
            }
        })
    }
}
