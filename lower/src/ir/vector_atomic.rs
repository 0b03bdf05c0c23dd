//! Vector atomics: `atom`/`red` with `.v2`, `.v4` or `.v8` (PTX ISA 9.2 §9.7.13.5-6,
//! sm_90), one [`super::InstKind::VectorAtomic`] per instruction until
//! `pass::expand_vector_atomics` makes it one [`super::InstKind::Atomic`] per element.

use super::{Address, AtomicOp, OpTy, Order, RegId, Scope, Space, Value};

/// `atom`/`red` on a vector of `srcs.len()` elements: element `k` is the atomic `op` of
/// `ty` at `addr + k * ty.bits() / 8` with `srcs[k]` and `cmp` (PTX's operands `b` and
/// `c`: for `cas`, `srcs[k]` is the comparand and `cmp` the new value), its old value into
/// `dsts[k]` (`None`: discarded, and always for `red`), each as [`super::InstKind::Atomic`]
/// with the same space, scope and order. The elements are atomic each on its own, not
/// the vector as a whole (§9.7.13.5), and are performed in element order.
///
/// With [`AtomicOp::Load`] or [`AtomicOp::Store`] it is a strong vector `ld`/`st`
/// (PTX ISA 9.2 §8.4), which `pass::expand_strong` makes one plain vector access and
/// the fence of its order; its registers may then be wider than `ty`, as a `Load`'s and
/// a `Store`'s.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorAtomic {
    pub op: AtomicOp,
    pub space: Space,
    pub ty: OpTy,
    pub scope: Scope,
    pub order: Order,
    /// One per element.
    pub dsts: Vec<Option<RegId>>,
    pub addr: Address,
    /// One per element, as many as `dsts`.
    pub srcs: Vec<Value>,
    pub cmp: Value,
}

impl VectorAtomic {
    /// The register operands with their widths (`crate::verify`): every destination,
    /// value and `cmp` as wide as an element; none for a strong vector load or store,
    /// whose registers may be wider, as a `Load`'s and a `Store`'s.
    pub fn operand_widths(&self) -> Vec<(RegId, u32)> {
        if matches!(self.op, AtomicOp::Load | AtomicOp::Store) {
            return Vec::new();
        }
        let values = self.srcs.iter().chain([&self.cmp]).filter_map(|v| match v {
            Value::Reg(r) => Some(*r),
            Value::Imm(_) => None,
        });
        self.dsts.iter().flatten().copied().chain(values).map(|r| (r, self.ty.bits())).collect()
    }

    /// Element `k`'s atomic.
    pub fn element(&self, k: usize) -> super::InstKind {
        let VectorAtomic { op, space, ty, scope, order, cmp, .. } = *self;
        let offset = self.addr.offset + (k as u32 * ty.bits() / 8) as i64;
        let b = self.srcs.get(k).copied().unwrap_or(Value::Imm(0));
        // `Atomic`'s `src` is `cas`'s new value, its `cmp` the comparand.
        let (src, cmp) = if op == AtomicOp::Cas { (cmp, b) } else { (b, cmp) };
        super::InstKind::Atomic {
            op,
            space,
            ty,
            scope,
            order,
            dst: self.dsts.get(k).copied().flatten(),
            addr: Address { base: self.addr.base, offset },
            src,
            cmp,
        }
    }
}
