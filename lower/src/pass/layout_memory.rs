//! Places the kernel's variables ([`crate::ir::Variable`]) in their windows and
//! replaces each [`InstKind::VariableAddress`] by the variable's offset.
//!
//! Each variable gets the next offset of its alignment after those of its window
//! declared before it (the arena's order: semantic analysis declares the kernel's and
//! its functions' local variables as it meets them, the thread's stack first, and the
//! shared ones before any instruction: the module's the kernel names, the kernel's,
//! its functions', `bar.red`'s word, the reserved area), as ptxas lays out a kernel's
//! local depot; the local window and the shared window's static part grow to the end
//! of their last one, and the shared ones are listed in the shared layout. An
//! address is folded into the instructions that read it, as the constant it is: an
//! address operand based on it becomes an absolute one, a value operand an immediate.
//! Where some instruction reads it otherwise, the address becomes a `mov` of the
//! offset. Address registers that no instruction names any more are removed (the
//! others renumbered in order).
//!
//! First, thread 0 zeroes the start of the reserved shared area, if the kernel has one
//! ([`reserved`]); then the variables of functions on call cycles go in frames on the
//! stack instead ([`frames`], whose module doc says how), and the stack gets its size
//! for recursion.
//!
//! Pre: the kernel and its functions verify. Post: no variable and no
//! `VariableAddress` remain; every offset read is the one the layout gave.

use std::collections::BTreeMap;

use crate::ir::{
    Address, Block, CopyInst, Function, InstKind, Kernel, MatrixInst, MbarrierOp, MbarrierWait,
    OpTy, RegId, RegInfo, Space, SystemInst, Terminator, Value, Variable,
};
use crate::pass::copy_body::for_each_reg;

mod frames;
mod reserved;

/// Where the variables go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Each variable's offset in its window, in arena order.
    pub offsets: Vec<u32>,
    /// The bytes of the local window and of the shared window's static part they fill.
    pub local_bytes: u32,
    pub shared_bytes: u32,
}

/// The layout of `variables`: each at the next offset of its alignment after the
/// variables of its window before it.
pub fn layout(variables: &[Variable]) -> Layout {
    let (mut local_bytes, mut shared_bytes) = (0u32, 0u32);
    let mut offsets = Vec::with_capacity(variables.len());
    for v in variables {
        let end = if v.space == Space::Shared { &mut shared_bytes } else { &mut local_bytes };
        let offset = end.next_multiple_of(v.align.max(1));
        *end = offset.saturating_add(v.size);
        offsets.push(offset);
    }
    Layout { offsets, local_bytes, shared_bytes }
}

pub fn run(k: &mut Kernel) {
    reserved::init(k);
    frames::place(k);
    if k.variables.is_empty() {
        return;
    }
    let Layout { offsets, local_bytes, shared_bytes } = layout(&k.variables);
    let variables = std::mem::take(&mut k.variables);
    if variables.iter().any(|v| v.space == Space::Local) {
        k.local_bytes = k.local_bytes.max(local_bytes);
    }
    if variables.iter().any(|v| v.space == Space::Shared) {
        k.shared.static_bytes = k.shared.static_bytes.max(shared_bytes);
    }
    for (v, &offset) in variables.iter().zip(&offsets) {
        if v.space == Space::Shared {
            k.shared.variables.push((v.name.clone(), offset, v.size));
        }
    }
    rewrite_body(&mut k.regs, &mut k.blocks, None, &offsets);
    for f in &mut k.functions {
        let Function { regs, blocks, params, returns, stack_pointer, .. } = f;
        rewrite_body(regs, blocks, Some((params, returns, stack_pointer)), &offsets);
    }
}

/// A function's registers that are not in its blocks: parameters, returns, the stack
/// pointer.
type Signature<'a> =
    (&'a mut Vec<(RegId, OpTy)>, &'a mut Vec<(RegId, OpTy)>, &'a mut Option<RegId>);

/// Folds the addresses of one body (the kernel's or a function's) into their readers.
fn rewrite_body(
    regs: &mut Vec<RegInfo>,
    blocks: &mut [Block],
    signature: Option<Signature<'_>>,
    offsets: &[u32],
) {
    let mut address: BTreeMap<RegId, u64> = BTreeMap::new();
    for i in blocks.iter().flat_map(|b| &b.insts) {
        if let InstKind::VariableAddress(a) = &i.kind {
            let mask = if a.ty.bits() >= 64 { u64::MAX } else { (1 << a.ty.bits()) - 1 };
            let at = u64::from(offsets[a.var.index()]).wrapping_add(a.offset) & mask;
            address.insert(a.dst, at);
        }
    }
    if address.is_empty() {
        return;
    }
    for i in blocks.iter_mut().flat_map(|b| &mut b.insts) {
        if !matches!(i.kind, InstKind::VariableAddress(_)) {
            fold(&mut i.kind, &address);
        }
    }
    // The addresses some instruction still reads stay, as a `mov` of the offset.
    let mut read = vec![false; regs.len()];
    for i in blocks.iter_mut().flat_map(|b| &mut b.insts) {
        if !matches!(i.kind, InstKind::VariableAddress(_)) {
            for_each_reg(&mut i.kind, &mut |r: &mut RegId| read[r.index()] = true);
        }
    }
    for b in blocks.iter_mut() {
        b.insts.retain_mut(|i| {
            let InstKind::VariableAddress(a) = i.kind else { return true };
            let src = Value::Imm(address[&a.dst]);
            i.kind = InstKind::Mov { ty: a.ty, dst: a.dst, src };
            read[a.dst.index()]
        });
    }
    let removed: Vec<RegId> = address.keys().copied().filter(|r| !read[r.index()]).collect();
    remove_regs(regs, blocks, signature, &removed);
}

/// Folds the address registers `address` reads into `kind`'s operands, where an
/// operand can be a constant.
fn fold(kind: &mut InstKind, address: &BTreeMap<RegId, u64>) {
    let value = &mut |v: &mut Value| {
        if let Value::Reg(r) = *v {
            if let Some(&offset) = address.get(&r) {
                *v = Value::Imm(offset);
            }
        }
    };
    let addr = &mut |a: &mut Address| {
        if let Some(&offset) = a.base.and_then(|b| address.get(&b)) {
            *a = Address { base: None, offset: a.offset.wrapping_add(offset as i64) };
        }
    };
    fold_with(kind, value, addr);
}

/// Applies `value` to `kind`'s value operands that may be constants and `addr` to its
/// address operands.
fn fold_with(
    kind: &mut InstKind,
    value: &mut dyn FnMut(&mut Value),
    addr: &mut dyn FnMut(&mut Address),
) {
    match kind {
        InstKind::Mov { src, .. }
        | InstKind::Cvta { src, .. }
        | InstKind::Unary { src, .. }
        | InstKind::Convert { src, .. } => value(src),
        InstKind::Binary { lhs, rhs, .. } => {
            value(lhs);
            value(rhs);
        }
        InstKind::IsSpace(i) => value(&mut i.addr),
        InstKind::Pack { srcs, .. } => srcs.iter_mut().for_each(&mut *value),
        InstKind::Call { args, .. } => args.iter_mut().for_each(&mut *value),
        InstKind::CallIndirect { arms, .. } => {
            arms.iter_mut().for_each(|arm| arm.args.iter_mut().for_each(&mut *value))
        }
        InstKind::Load { addr: a, .. } => addr(a),
        InstKind::Store { addr: a, srcs, .. } => {
            addr(a);
            srcs.iter_mut().for_each(&mut *value);
        }
        InstKind::Atomic { addr: a, src, cmp, .. } => {
            addr(a);
            value(src);
            value(cmp);
        }
        InstKind::System(s) => {
            if let SystemInst::Call(call) = &mut **s {
                call.args.iter_mut().for_each(&mut *addr);
                call.result.iter_mut().for_each(&mut *addr);
            }
        }
        InstKind::Mbarrier(m) => match &mut **m {
            MbarrierOp::Init { at, .. }
            | MbarrierOp::Inval { at }
            | MbarrierOp::Arrive { at, .. }
            | MbarrierOp::ExpectTx { at, .. }
            | MbarrierOp::CompleteTx { at, .. }
            | MbarrierOp::CpAsyncArrive { at, .. }
            | MbarrierOp::TestWait(MbarrierWait { at, .. })
            | MbarrierOp::TryWait(MbarrierWait { at, .. }) => addr(at),
            MbarrierOp::PendingCount { .. } => {}
        },
        InstKind::Copy(c) => match &mut **c {
            CopyInst::Async(c) => addr(&mut c.dst),
            CopyInst::Bulk(c) => {
                addr(&mut c.dst);
                addr(&mut c.src);
            }
            CopyInst::Tensor(c) => addr(&mut c.shared),
        },
        InstKind::Matrix(m) => match &mut **m {
            MatrixInst::LoadRows { addr: a, .. } | MatrixInst::StoreRows { addr: a, .. } => addr(a),
            MatrixInst::WmmaLoad(w, _) | MatrixInst::WmmaStore(w, _) => addr(&mut w.addr),
            MatrixInst::Mma(_) | MatrixInst::Transpose { .. } => {}
        },
        _ => {}
    }
}

/// Removes registers `removed` (named by no instruction) from a body, renumbering the
/// others in order.
fn remove_regs(
    regs: &mut Vec<RegInfo>,
    blocks: &mut [Block],
    signature: Option<Signature<'_>>,
    removed: &[RegId],
) {
    if removed.is_empty() {
        return;
    }
    let mut gone = vec![false; regs.len()];
    removed.iter().for_each(|r| gone[r.index()] = true);
    let mut renamed = Vec::with_capacity(regs.len());
    let mut next = 0u32;
    for &g in &gone {
        renamed.push(RegId(next));
        next += u32::from(!g);
    }
    let mut kept = gone.iter().map(|g| !g);
    regs.retain(|_| kept.next().unwrap_or(true));
    let rename = &mut |r: &mut RegId| *r = renamed[r.index()];
    for b in blocks.iter_mut() {
        b.insts.iter_mut().for_each(|i| for_each_reg(&mut i.kind, rename));
        match &mut b.term {
            Terminator::Branch { cond, .. } => rename(cond),
            Terminator::Switch { selector, .. } => rename(selector),
            Terminator::Jump(_) | Terminator::Return => {}
        }
    }
    if let Some((params, returns, stack_pointer)) = signature {
        params.iter_mut().chain(returns.iter_mut()).for_each(|(r, _)| rename(r));
        stack_pointer.iter_mut().for_each(rename);
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::{InstKind, Kernel, Space, Terminator, Value};

    /// The kernel lowered from `ptx`, its variables placed.
    fn placed(ptx: &str) -> Kernel {
        let mut k = crate::first_kernel(ptx);
        super::run(&mut k);
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        k
    }

    /// The constant addresses of the stores of immediate `value` into `space`, in the
    /// kernel's body and then its functions'.
    fn stores_of(k: &Kernel, space: Space, value: u64) -> Vec<i64> {
        let blocks = k.blocks.iter().chain(k.functions.iter().flat_map(|f| &f.blocks));
        let insts = blocks.flat_map(|b| &b.insts);
        insts
            .filter_map(|i| match &i.kind {
                InstKind::Store { space: s, srcs, addr, .. }
                    if *s == space && srcs == &[Value::Imm(value)] && addr.base.is_none() =>
                {
                    Some(addr.offset)
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn functions_variables_come_between_the_kernels_in_the_order_they_are_declared() {
        // `a` (4 bytes), then the call: `f`'s `x` (8 bytes, align 8) and the call's
        // argument `p`, then `b` after the call's block.
        let k = placed(
            ".func f(.param .b32 n)\n{\n .local .align 8 .b8 x[8];\n st.local.u32 [x+4], 2;\n ret;\n}\n\
             .entry k()\n{\n .local .align 4 .b8 a[4];\n st.local.u32 [a], 1;\n\
             { .param .b32 p;\n st.param.b32 [p], 3;\n call.uni f, (p); }\n\
             .local .align 4 .b8 b[4];\n st.local.u32 [b], 4;\n ret;\n}\n",
        );
        // a@0, p@4 (declared at the call's block, before the call lowers f), x@8, b@16.
        let at = |v| stores_of(&k, Space::Local, v);
        assert_eq!((at(1), at(3), at(2), at(4)), (vec![0], vec![4], vec![12], vec![16]));
        assert_eq!(k.local_bytes, 20);
        assert!(k.variables.is_empty());
    }

    #[test]
    fn thread_zero_zeroes_the_reserved_area_first_then_the_block_waits() {
        // `x` (4 bytes), then the area at 16: words 16..48 zeroed before `x`'s store.
        let k = placed(
            ".entry k()\n{\n .shared .align 4 .b8 x[4];\n .reg .b32 %r;\n\
             mov.u32 %r, %reserved_smem_offset_1;\n st.shared.u32 [x], 7;\n ret;\n}\n",
        );
        assert_eq!(stores_of(&k, Space::Shared, 0), (0..8).map(|w| 16 + 4 * w).collect::<Vec<_>>());
        let entry = &k.blocks[k.entry.index()];
        let Terminator::Branch { if_true, if_false, .. } = entry.term else { panic!() };
        assert_eq!((if_true.index(), if_false.index()), (1, 2));
        let join = &k.blocks[2];
        assert!(matches!(join.insts[0].kind, InstKind::Barrier));
        assert_eq!(stores_of(&k, Space::Shared, 7), vec![0]);
    }

    #[test]
    fn shared_variables_are_placed_apart_from_local_ones_and_listed() {
        let k = placed(
            ".entry k()\n{\n .local .b32 l;\n .shared .align 4 .b8 s[6];\n\
             .shared .align 8 .b8 t[8];\n st.local.u32 [l], 1;\n st.shared.u32 [s+4], 2;\n\
             st.shared.u32 [t], 3;\n ret;\n}\n",
        );
        assert_eq!(stores_of(&k, Space::Local, 1), [0]);
        assert_eq!(
            (stores_of(&k, Space::Shared, 2), stores_of(&k, Space::Shared, 3)),
            (vec![4], vec![8])
        );
        assert_eq!(k.shared.static_bytes, 16);
        let listed: Vec<(&str, u32, u32)> =
            k.shared.variables.iter().map(|(n, o, s)| (n.as_str(), *o, *s)).collect();
        assert_eq!(listed, [("s", 0, 6), ("t", 8, 8)]);
    }
}
