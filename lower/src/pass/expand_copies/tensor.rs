//! `cp.async.bulk.tensor` in `.tile` mode (the parent module's doc).

use super::*;

const S32: OpTy = OpTy::S(32);

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

impl Expand<'_> {
    pub(super) fn tensor_copy(&mut self, t: &TensorCopy) {
        let map = self.read_map(t.map, t.coords.len());
        // The box's bytes in shared memory.
        let elements =
            map.counts.iter().fold(Value::Imm(1), |n, &c| self.bin(BinaryOp::Mul, U32, n, c));
        let bytes = match t.bytes {
            Some(r) => r,
            None => self.temp(U32),
        };
        let (op, mode) = (BinaryOp::Shl, Default::default());
        let (lhs, rhs) = (elements, map.log_size);
        self.push(InstKind::Binary { op, ty: U32, mode, dst: bytes, lhs, rhs });
        let copy = |e: &mut Self| e.copy_box(&map, &t.coords, t.shared, t.load);
        self.copy_to_own_cta(t.mask, copy);
    }

    /// Loads the fields of the tensor map at `at` (global memory), trapping when it is
    /// null or not ptxvk's.
    fn read_map(&mut self, at: Address, rank: usize) -> Map {
        let start =
            self.add(U64, at.base.map_or(Value::Imm(0), Value::Reg), Value::Imm(at.offset as u64));
        let null = self.cmp(CmpOp::Eq, U64, start, Value::Imm(0));
        self.trap_if(null);
        let field = |e: &mut Self, ty: OpTy, off: u32| -> Value {
            let r = e.temp(ty);
            let addr = Address { base: at.base, offset: at.offset + i64::from(off) };
            e.push(InstKind::Load { space: Space::Global, ty, dsts: vec![Some(r)], addr });
            Value::Reg(r)
        };
        let magic = field(self, U32, offset::MAGIC);
        let foreign = self.cmp(CmpOp::Ne, U32, magic, Value::Imm(u64::from(MAGIC)));
        self.trap_if(foreign);
        let address = field(self, U64, offset::ADDRESS);
        let dims = (0..rank).map(|d| field(self, U64, offset::DIMS + 8 * d as u32)).collect();
        let strides =
            (1..rank).map(|d| field(self, U64, offset::STRIDES + 8 * (d as u32 - 1))).collect();
        let boxes: Vec<Value> =
            (0..rank).map(|d| field(self, U32, offset::BOX + 4 * d as u32)).collect();
        let element_strides: Vec<Value> =
            (0..rank).map(|d| field(self, U32, offset::ELEMENT_STRIDES + 4 * d as u32)).collect();
        let word = field(self, U32, offset::MODE);
        let counts = boxes
            .iter()
            .zip(&element_strides)
            .map(|(&b, &s)| {
                let up = self.add(U32, b, s);
                let up = self.bin(BinaryOp::Sub, U32, up, Value::Imm(1));
                self.bin(BinaryOp::Div, U32, up, s)
            })
            .collect();
        let e = self;
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

    /// Moves every element of the box between the tensor and shared memory at `shared`.
    fn copy_box(&mut self, map: &Map, coords: &[Value], shared: Address, load: bool) {
        let elements =
            map.counts.iter().fold(Value::Imm(1), |n, &c| self.bin(BinaryOp::Mul, U32, n, c));
        self.counted_loop(elements, 1, |e, index| {
            // The element's index k[d] in each dimension, its tensor coordinate, and
            // whether the tensor has it.
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
            let smem = e.offset_address(shared, at);
            let gmem = Address { base: Some(global), offset: 0 };
            for log in 0..4u32 {
                let this_size = e.cmp(CmpOp::Eq, U32, map.log_size, Value::Imm(u64::from(log)));
                e.guarded(this_size, false, |e| {
                    let ty = OpTy::U((8u32 << log) as u8);
                    let value = e.temp(ty);
                    if load {
                        let nan = (1u64 << ((8 << log) - 1)) - 1;
                        let fill = e.sel(ty, map.nan_fill, Value::Imm(nan), Value::Imm(0));
                        e.mov(ty, value, fill);
                        e.guarded(inside, false, |e| {
                            let dsts = vec![Some(value)];
                            e.push(InstKind::Load { space: Space::Global, ty, dsts, addr: gmem });
                        });
                        let srcs = vec![Value::Reg(value)];
                        e.push(InstKind::Store { space: Space::Shared, ty, srcs, addr: smem });
                    } else {
                        e.guarded(inside, false, |e| {
                            let dsts = vec![Some(value)];
                            e.push(InstKind::Load { space: Space::Shared, ty, dsts, addr: smem });
                            let srcs = vec![Value::Reg(value)];
                            e.push(InstKind::Store { space: Space::Global, ty, srcs, addr: gmem });
                        });
                    }
                });
            }
        });
    }
}
