//! Bulk tensor copies of sm_90 (TMA; PTX ISA 9.2 §9.7.9.25.5): `cp.async.bulk.tensor`
//! in `.tile` mode, 1-D to 5-D, from global to shared memory completing on an mbarrier
//! and from shared to global memory in a bulk group, through a tensor map (§5.5.8) in
//! the parameter block (a `__grid_constant__ CUtensorMap`), constant or global memory.
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
//! driver encoded are not implemented; the first two are rejected here, the last is
//! found at run time by its missing [`ptxvk_abi::tensor_map::MAGIC`] and ends the
//! launch with a trap.

use ptxvk_abi::tensor_map::{mode, offset, MAGIC, MAX_RANK};
use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::modifier::{CopyForm, Modifier, TensorDims};
use ptxvk_frontend::{Diagnostic, Span};

use super::bulk_copy::{copy_space, BULK_GROUP, CACHE_HINT, COMPLETE_TX, MULTICAST};
use super::expand::Emit;
use super::Lowerer;
use crate::build::Build;
use crate::ir::{Address, BinaryOp, CmpOp, InstKind, OpTy, RegId, Space, Value};

const U32: OpTy = OpTy::U(32);
const S32: OpTy = OpTy::S(32);
const U64: OpTy = OpTy::U(64);

/// The tensor map's fields a copy uses, read at run time.
struct Map {
    address: Value,
    dims: Vec<Value>,
    strides: Vec<Value>,
    /// Elements per dimension of the box in shared memory, `n[i]`.
    counts: Vec<Value>,
    element_strides: Vec<Value>,
    /// log2 of the element's bytes.
    log_size: Value,
    /// The XOR mask of the 16-byte chunk index (0, 1, 3, 7).
    swizzle_mask: Value,
    nan_fill: RegId,
}

impl Lowerer<'_> {
    /// `cp.async.bulk.tensor.Nd…` (module doc); `names` are the instruction's modifiers,
    /// `spelled` as written.
    pub(super) fn tensor_copy(
        &mut self,
        i: &ast::Instruction,
        names: &[Modifier],
        spelled: &str,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let unsupported =
            |what: &str| super::unsupported(span, &format!("`{what}`"), crate::coverage::ASYNC);
        let rank = match names.get(3) {
            Some(Modifier::TensorDims(d)) => Some(match d {
                TensorDims::D1 => 1,
                TensorDims::D2 => 2,
                TensorDims::D3 => 3,
                TensorDims::D4 => 4,
                TensorDims::D5 => 5,
            }),
            _ => None,
        }
        .filter(|n| (1..=MAX_RANK).contains(n));
        let Some(rank) = rank else {
            return Err(Diagnostic::error(
                span,
                "`cp.async.bulk.tensor` names its rank, `.1d` to `.5d`",
            ));
        };
        let mut spaces = Vec::new();
        let (mut mbarrier, mut bulk_group, mut multicast, mut hinted) =
            (false, false, false, false);
        for n in &names[4..] {
            if let Some(space) = copy_space(*n) {
                spaces.push(space);
                continue;
            }
            match *n {
                Modifier::CopyForm(CopyForm::Tile) => {}
                COMPLETE_TX => mbarrier = true,
                BULK_GROUP => bulk_group = true,
                MULTICAST => multicast = true,
                CACHE_HINT => hinted = true,
                other => return Err(unsupported(&format!("cp.async.bulk.tensor with `{other}`"))),
            }
        }
        let load = match spaces.as_slice() {
            [Space::Shared, Space::Global] if mbarrier && !bulk_group => true,
            [Space::Global, Space::Shared] if bulk_group && !mbarrier && !multicast => false,
            _ => {
                return Err(Diagnostic::error(
                    span,
                    "`cp.async.bulk.tensor` loads `.shared::cluster.global` on an mbarrier or \
                     stores `.global.shared::cta` in a bulk group",
                ))
            }
        };
        let ops = i.operands.as_slice();
        let expected = 2 + usize::from(load) + usize::from(multicast) + usize::from(hinted);
        if ops.len() != expected {
            return Err(Diagnostic::error(
                span,
                format!("`cp{spelled}` takes {expected} operands, found {}", ops.len()),
            ));
        }
        let (tensor, smem) = if load { (&ops[1], &ops[0]) } else { (&ops[0], &ops[1]) };
        let Operand::Tuple(parts, _) = tensor else {
            return Err(Diagnostic::error(tensor.span(), "expected `[tensorMap, {coordinates}]`"));
        };
        let [map_operand, Operand::Vector(coordinates, _)] = parts.as_slice() else {
            return Err(Diagnostic::error(tensor.span(), "expected `[tensorMap, {coordinates}]`"));
        };
        if coordinates.len() != rank {
            return Err(Diagnostic::error(
                tensor.span(),
                format!("a {rank}-D copy takes {rank} coordinates"),
            ));
        }
        let map_address = self.src(map_operand, U64, false, span)?;
        let map_address = match map_address {
            Value::Reg(r) => self.widen_generic(Address { base: Some(r), offset: 0 }, span),
            imm => {
                let r = self.temp(U64.storage(), span);
                Emit { l: self, span }.mov(U64, r, imm);
                Address { base: Some(r), offset: 0 }
            }
        };
        let coords: Vec<Value> =
            coordinates.iter().map(|c| self.src(c, S32, false, span)).collect::<Result<_, _>>()?;
        let (_, shared) = self.address(smem, StateSpace::Shared)?;
        let map = self.read_map(map_address, rank, span);
        let total = self.box_bytes(&map, span);
        let copy = |l: &mut Self| l.copy_box(&map, &coords, shared, load, span);
        self.copy_to_cluster(multicast.then(|| &ops[3]), span, copy)?;
        if load {
            let at = self.mbarrier_operand(&ops[2])?;
            self.complete_tx(at, total, span);
        }
        Ok(())
    }

    /// Loads the fields of the tensor map at `at` (global memory), trapping when it is
    /// null or not ptxvk's.
    fn read_map(&mut self, at: Address, rank: usize, span: Span) -> Map {
        let mut e = Emit { l: self, span };
        let start =
            e.add(U64, at.base.map_or(Value::Imm(0), Value::Reg), Value::Imm(at.offset as u64));
        let null = e.cmp(CmpOp::Eq, U64, start, Value::Imm(0));
        self.fail_if(null, false, crate::system::STATUS_TRAP, &[], span);
        let field = |l: &mut Self, ty: OpTy, off: u32| -> Value {
            let r = l.temp(ty.storage(), span);
            let addr = Address { base: at.base, offset: at.offset + i64::from(off) };
            l.push(InstKind::Load { space: Space::Global, ty, dsts: vec![Some(r)], addr }, span);
            Value::Reg(r)
        };
        let magic = field(self, U32, offset::MAGIC);
        let foreign =
            Emit { l: self, span }.cmp(CmpOp::Ne, U32, magic, Value::Imm(u64::from(MAGIC)));
        self.fail_if(foreign, false, crate::system::STATUS_TRAP, &[], span);
        let address = field(self, U64, offset::ADDRESS);
        let dims = (0..rank).map(|d| field(self, U64, offset::DIMS + 8 * d as u32)).collect();
        let strides =
            (1..rank).map(|d| field(self, U64, offset::STRIDES + 8 * (d as u32 - 1))).collect();
        let boxes: Vec<Value> =
            (0..rank).map(|d| field(self, U32, offset::BOX + 4 * d as u32)).collect();
        let element_strides: Vec<Value> =
            (0..rank).map(|d| field(self, U32, offset::ELEMENT_STRIDES + 4 * d as u32)).collect();
        let word = field(self, U32, offset::MODE);
        let mut e = Emit { l: self, span };
        let counts = boxes
            .iter()
            .zip(&element_strides)
            .map(|(&b, &s)| {
                let up = e.add(U32, b, s);
                let up = e.bin(BinaryOp::Sub, U32, up, Value::Imm(1));
                e.bin(BinaryOp::Div, U32, up, s)
            })
            .collect();
        let log_size = e.bin(BinaryOp::Shr, U32, word, Value::Imm(u64::from(mode::SIZE_SHIFT)));
        let log_size = e.and(U32, log_size, Value::Imm(3));
        let swizzle = e.bin(BinaryOp::Shr, U32, word, Value::Imm(u64::from(mode::SWIZZLE_SHIFT)));
        let swizzle = e.and(U32, swizzle, Value::Imm(3));
        let mask = e.bin(BinaryOp::Shl, U32, Value::Imm(1), swizzle);
        let swizzle_mask = e.bin(BinaryOp::Sub, U32, mask, Value::Imm(1));
        let nan = e.and(U32, word, Value::Imm(u64::from(mode::NAN_FILL)));
        let nan_fill = e.cmp(CmpOp::Ne, U32, nan, Value::Imm(0));
        Map { address, dims, strides, counts, element_strides, log_size, swizzle_mask, nan_fill }
    }

    /// The bytes of the box in shared memory.
    fn box_bytes(&mut self, map: &Map, span: Span) -> Value {
        let mut e = Emit { l: self, span };
        let elements =
            map.counts.iter().fold(Value::Imm(1), |n, &c| e.bin(BinaryOp::Mul, U32, n, c));
        e.bin(BinaryOp::Shl, U32, elements, map.log_size)
    }

    /// Moves every element of the box between the tensor and shared memory at `shared`.
    fn copy_box(&mut self, map: &Map, coords: &[Value], shared: Address, load: bool, span: Span) {
        let elements = {
            let mut e = Emit { l: self, span };
            map.counts.iter().fold(Value::Imm(1), |n, &c| e.bin(BinaryOp::Mul, U32, n, c))
        };
        self.counted_loop(elements, 1, span, |l, index| {
            // The element's index k[d] in each dimension, its tensor coordinate, and
            // whether the tensor has it.
            let mut e = Emit { l, span };
            let mut rest = index;
            let mut inside: Option<RegId> = None;
            let mut address = map.address;
            for (d, &count) in map.counts.iter().enumerate() {
                let k = e.bin(BinaryOp::Rem, U32, rest, count);
                rest = e.bin(BinaryOp::Div, U32, rest, count);
                let step = e.bin(BinaryOp::Mul, U32, k, map.element_strides[d]);
                let c = e.add(S32, coords[d], step);
                let c64 = e.cvt(OpTy::S(64), S32, c);
                // 0 <= c < dim, as unsigned 64-bit: a negative c is huge.
                let ok = e.cmp(CmpOp::Lt, U64, c64, map.dims[d]);
                inside = Some(match inside {
                    Some(p) => e.pred_and(p, ok),
                    None => ok,
                });
                let scale = if d == 0 {
                    e.bin(BinaryOp::Shl, U64, c64, map.log_size)
                } else {
                    e.bin(BinaryOp::Mul, U64, c64, map.strides[d - 1])
                };
                address = e.add(U64, address, scale);
            }
            let Some(inside) = inside else { return };
            let global = e.temp(U64);
            e.mov(U64, global, address);
            // Byte offset in the box, swizzled.
            let linear = e.bin(BinaryOp::Shl, U32, index, map.log_size);
            let rows = e.bin(BinaryOp::Shr, U32, linear, Value::Imm(7));
            let rows = e.and(U32, rows, map.swizzle_mask);
            let flip = e.bin(BinaryOp::Shl, U32, rows, Value::Imm(4));
            let at = e.bin(BinaryOp::Xor, U32, linear, flip);
            let smem = l.offset_address(shared, at, span);
            let gmem = Address { base: Some(global), offset: 0 };
            for log in 0..4u32 {
                let mut e = Emit { l, span };
                let this_size = e.cmp(CmpOp::Eq, U32, map.log_size, Value::Imm(u64::from(log)));
                l.guarded(this_size, false, span, |l| {
                    let ty = OpTy::U((8u32 << log) as u8);
                    let value = l.temp(ty.storage(), span);
                    if load {
                        let nan = (1u64 << ((8 << log) - 1)) - 1;
                        let fill =
                            Emit { l, span }.sel(ty, map.nan_fill, Value::Imm(nan), Value::Imm(0));
                        Emit { l, span }.mov(ty, value, fill);
                        l.guarded(inside, false, span, |l| {
                            let dsts = vec![Some(value)];
                            l.push(
                                InstKind::Load { space: Space::Global, ty, dsts, addr: gmem },
                                span,
                            );
                        });
                        let srcs = vec![Value::Reg(value)];
                        l.push(
                            InstKind::Store { space: Space::Shared, ty, srcs, addr: smem },
                            span,
                        );
                    } else {
                        l.guarded(inside, false, span, |l| {
                            let dsts = vec![Some(value)];
                            l.push(
                                InstKind::Load { space: Space::Shared, ty, dsts, addr: smem },
                                span,
                            );
                            let srcs = vec![Value::Reg(value)];
                            l.push(
                                InstKind::Store { space: Space::Global, ty, srcs, addr: gmem },
                                span,
                            );
                        });
                    }
                });
            }
        });
    }
}
