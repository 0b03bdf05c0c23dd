//! Bulk tensor copies of sm_90 (TMA; PTX ISA 9.2 §9.7.9.25.5): `cp.async.bulk.tensor`
//! in `.tile` mode, 1-D to 5-D, from global to shared memory completing on an mbarrier
//! and from shared to global memory in a bulk group, through a tensor map (§5.5.8) in
//! the parameter block (a `__grid_constant__ CUtensorMap`), constant or global memory.
//!
//! Each copy becomes one [`InstKind::Copy`] ([`CopyInst::Tensor`], whose module doc is
//! its specification), which `pass::expand_copies` writes out as this doc says; a load's
//! mbarrier `complete_tx` of the box's bytes follows it (an `MbarrierOp::CompleteTx`,
//! `sema::mbarrier`).
//!
//! The tensor map is ptxvk's ([`ptxvk_abi::tensor_map`], what its driver library's
//! `cuTensorMapEncodeTiled` writes): the copy reads its fields at run time and moves the
//! box element by element, as the issuing thread, when it is issued (as every
//! asynchronous copy, `sema::async_copy`). The box of `box[i]` elements traversed in
//! steps of `elementStrides[i]` is `n[i] = ceil(box[i] / elementStrides[i])` elements
//! per dimension, packed in shared memory innermost dimension first; element
//! `(k0, k1, …)` is the tensor's element at `coordinate[i] + k[i] * elementStrides[i]`.
//! A load fills elements outside the tensor with zero (or NaN, with the NaN fill) and
//! counts every element of the box in the `complete_tx` it does on the mbarrier; a store
//! skips them. A swizzled box (32, 64 or 128 bytes) moves each 16-byte chunk of its
//! shared memory: chunk bits 4.. of a byte offset are XORed with its bits 7.. (1, 2 or 3
//! of them), the pattern of the ISA's swizzling modes (§5.5.8.3) relative to the start
//! of the box, which the ISA requires aligned to the pattern's repeat.
//!
//! `.im2col` modes, reductions (`cp.reduce.async.bulk.tensor`) and tensor maps NVIDIA's
//! driver encoded are not implemented; the first two are rejected by `ptxvk_frontend::forms::copy`, the last is
//! found at run time by its missing [`ptxvk_abi::tensor_map::MAGIC`] and ends the
//! launch with a trap.

use ptxvk_frontend::ast;
use ptxvk_frontend::forms::copy::tensor_operand;
use ptxvk_frontend::Diagnostic;

use super::expand::Emit;
use super::Resolver;
use crate::build::Build;
use crate::ir::{Address, CopyInst, InstKind, OpTy, TensorCopy, Value};

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);
const U64: OpTy = OpTy::U(64);

impl Resolver<'_> {
    /// `cp.async.bulk.tensor.Nd…` (module doc): a load into shared memory completing on
    /// the mbarrier of operand 2, or a store; multicast with the mask of operand 3.
    pub(super) fn tensor_copy(
        &mut self,
        i: &ast::Instruction,
        load: bool,
        multicast: bool,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let ops = i.operands.as_slice();
        let (tensor, smem) = if load { (&ops[1], &ops[0]) } else { (&ops[0], &ops[1]) };
        let (map_operand, coordinates) = tensor_operand(tensor)?;
        let map_address = self.src(map_operand, U64, false, span)?;
        let map_address = match map_address {
            Value::Reg(r) => Address { base: Some(r), offset: 0 },
            imm => {
                let r = self.temp(U64.storage(), span);
                Emit { resolver: self, span }.mov(U64, r, imm);
                Address { base: Some(r), offset: 0 }
            }
        };
        let coords: Vec<Value> =
            coordinates.iter().map(|c| self.src(c, S32, false, span)).collect::<Result<_, _>>()?;
        let (_, shared) = self.address(smem, ast::StateSpace::Shared)?;
        let mask = match multicast {
            true => Some(self.src(&ops[3], OpTy::U(16), false, span)?),
            false => None,
        };
        let bytes = load.then(|| self.temp(U32.storage(), span));
        let copy = TensorCopy { load, map: map_address, coords, shared, mask, bytes };
        self.push(InstKind::Copy(Box::new(CopyInst::Tensor(copy))), span);
        // The copy's completion, after it (`crate::ir::CopyInst`).
        if let Some(total) = bytes {
            let at = self.mbarrier_operand(&ops[2])?;
            self.complete_tx(at, Value::Reg(total), span);
        }
        Ok(())
    }
}
