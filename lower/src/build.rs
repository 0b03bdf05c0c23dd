//! Building IR: the instruction helpers that semantic analysis and the passes share.
//!
//! [`Build`] needs a way to make a temporary register and to append an instruction;
//! every other method is written once on top of those two. Semantic analysis builds
//! into the current block (`sema::expand::Emit`), passes into an instruction list with
//! a [`Builder`].

use ptxvk_frontend::Span;

use crate::ir::{
    Address, AtomicOp, BinaryOp, BoolOp, CmpOp, Dim, FloatFormat, FloatMode, Inst, InstKind,
    Kernel, OddOp, OpTy, Order, RegId, Rounding, Scope, Space, SpecialReg, UnaryOp, Value,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);
const F32: OpTy = OpTy::F(32);
const F64: OpTy = OpTy::F(64);

/// The register holding `v`, if it is one (an address base).
pub(crate) fn reg_of(v: Value) -> Option<RegId> {
    match v {
        Value::Reg(r) => Some(r),
        Value::Imm(_) => None,
    }
}

/// The operation type twice as wide (`mul.wide`'s result).
pub fn wide(ty: OpTy) -> OpTy {
    match ty {
        OpTy::S(b) => OpTy::S(b * 2),
        other => OpTy::U(other.bits() as u8 * 2),
    }
}

pub trait Build {
    /// A new register for values of type `ty`.
    fn temp(&mut self, ty: OpTy) -> RegId;

    /// Appends an instruction.
    fn push(&mut self, kind: InstKind);

    fn bin(&mut self, op: BinaryOp, ty: OpTy, lhs: Value, rhs: Value) -> Value {
        let dst_ty = if op == BinaryOp::MulWide { wide(ty) } else { ty };
        let dst = self.temp(dst_ty);
        self.push(InstKind::Binary { op, ty, mode: FloatMode::default(), dst, lhs, rhs });
        Value::Reg(dst)
    }

    fn un(&mut self, op: UnaryOp, ty: OpTy, src: Value) -> Value {
        let dst_ty = if matches!(op, UnaryOp::Clz | UnaryOp::Popc) { U32 } else { ty };
        let dst = self.temp(dst_ty);
        self.push(InstKind::Unary { op, ty, mode: FloatMode::default(), dst, src });
        Value::Reg(dst)
    }

    fn add(&mut self, ty: OpTy, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Add, ty, a, b)
    }

    fn and(&mut self, ty: OpTy, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::And, ty, a, b)
    }

    fn or(&mut self, ty: OpTy, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Or, ty, a, b)
    }

    /// A relaxed device-scope atomic add of `src` to the `ty` value at global `addr`:
    /// the old value (counters of the system area and the device heap).
    fn atomic_add_global(&mut self, ty: OpTy, addr: Address, src: Value) -> RegId {
        self.atomic_global(AtomicOp::Add, ty, addr, src)
    }

    /// A relaxed device-scope atomic `op` (not a compare-and-swap) on global memory;
    /// the old value.
    fn atomic_global(&mut self, op: AtomicOp, ty: OpTy, addr: Address, src: Value) -> RegId {
        let dst = self.temp(ty);
        let (space, scope, order) = (Space::Global, Scope::Gpu, Order::Relaxed);
        let cmp = Value::Imm(0);
        self.push(InstKind::Atomic { op, space, ty, scope, order, dst: Some(dst), addr, src, cmp });
        dst
    }

    /// A special register's value.
    fn special(&mut self, reg: SpecialReg) -> Value {
        let ty = if reg.is_64bit() { U64 } else { U32 };
        let dst = self.temp(ty);
        self.push(InstKind::Special { dst, reg });
        Value::Reg(dst)
    }

    /// The thread's linear index in its block, `%tid.x + %ntid.x * (%tid.y + %ntid.y *
    /// %tid.z)`, from which CUDA forms warps (PTX ISA 9.2 §2.2.1).
    fn linear_tid(&mut self) -> Value {
        let [tx, ty, tz] = [Dim::X, Dim::Y, Dim::Z].map(|d| self.special(SpecialReg::Tid(d)));
        let nx = self.special(SpecialReg::Ntid(Dim::X));
        let ny = self.special(SpecialReg::Ntid(Dim::Y));
        let yz = self.bin(BinaryOp::Mul, U32, ny, tz);
        let yz = self.add(U32, yz, ty);
        let xyz = self.bin(BinaryOp::Mul, U32, nx, yz);
        self.add(U32, xyz, tx)
    }

    /// The number of threads of the block.
    fn block_threads(&mut self) -> Value {
        let mut total = Value::Imm(1);
        for d in [Dim::X, Dim::Y, Dim::Z] {
            let n = self.special(SpecialReg::Ntid(d));
            total = self.bin(BinaryOp::Mul, U32, total, n);
        }
        total
    }

    /// The lanes of the warp of linear thread `t` that exist, as a mask: all 32 but in a
    /// partial last warp of a block of `total` threads.
    fn warp_lanes(&mut self, t: Value, total: Value) -> Value {
        let base = self.and(U32, t, Value::Imm(u64::from(!31u32)));
        let left = self.bin(BinaryOp::Sub, U32, total, base);
        let full = self.cmp(CmpOp::Ge, U32, left, Value::Imm(32));
        let low = self.bin(BinaryOp::Shl, U32, Value::Imm(1), left);
        let low = self.bin(BinaryOp::Sub, U32, low, Value::Imm(1));
        self.sel(U32, full, Value::Imm(0xffff_ffff), low)
    }

    /// The device address of the kernel's system area, which follows its parameter
    /// block of `param_bytes` in the same buffer (`crate::system`). The caller marks
    /// the kernel as having one ([`Kernel::system`]).
    fn system_area(&mut self, param_bytes: u32) -> RegId {
        let base = self.temp(U64);
        self.push(InstKind::Special { dst: base, reg: SpecialReg::ParamBlock });
        let area = self.temp(U64);
        let offset = Value::Imm(u64::from(crate::system::offset(param_bytes)));
        self.push(InstKind::Binary {
            op: BinaryOp::Add,
            ty: U64,
            mode: FloatMode::default(),
            dst: area,
            lhs: Value::Reg(base),
            rhs: offset,
        });
        area
    }

    /// Makes `status` the launch's failure unless another thread did first (a
    /// compare-and-swap of the status word from 0, `crate::system`): a predicate that
    /// holds in the thread that did, which then records the rest with
    /// [`Self::store_failure`].
    fn claim_failure(&mut self, area: RegId, status: Value) -> RegId {
        let old = self.temp(U32);
        self.push(InstKind::Atomic {
            op: AtomicOp::Cas,
            space: Space::Global,
            ty: U32,
            scope: Scope::Gpu,
            order: Order::Relaxed,
            dst: Some(old),
            addr: Address { base: Some(area), offset: i64::from(crate::system::STATUS) },
            src: status,
            cmp: Value::Imm(0),
        });
        self.cmp(CmpOp::Eq, U32, Value::Reg(old), Value::Imm(0))
    }

    /// Records the failing thread (`%ctaid`, `%tid`) and the failure's `details`, as
    /// many as given of: message, file, line, function (`crate::system`).
    fn store_failure(&mut self, area: RegId, details: &[Value]) {
        self.store_thread(area, crate::system::THREAD);
        let at = [
            (crate::system::MESSAGE, U64),
            (crate::system::FILE, U64),
            (crate::system::LINE, U32),
            (crate::system::FUNCTION, U64),
        ];
        for (&v, (offset, ty)) in details.iter().zip(at) {
            let addr = Address { base: Some(area), offset: i64::from(offset) };
            self.push(InstKind::Store { space: Space::Global, ty, srcs: vec![v], addr });
        }
    }

    /// Stores `%ctaid` and `%tid` (six u32) at `base + at`.
    fn store_thread(&mut self, base: RegId, at: u32) {
        let regs = [Dim::X, Dim::Y, Dim::Z].map(SpecialReg::Ctaid).into_iter();
        let regs = regs.chain([Dim::X, Dim::Y, Dim::Z].map(SpecialReg::Tid));
        for (k, reg) in regs.enumerate() {
            let v = self.special(reg);
            let addr = Address { base: Some(base), offset: i64::from(at) + 4 * k as i64 };
            self.push(InstKind::Store { space: Space::Global, ty: U32, srcs: vec![v], addr });
        }
    }

    fn not(&mut self, ty: OpTy, a: Value) -> Value {
        self.un(UnaryOp::Not, ty, a)
    }

    fn cmp(&mut self, cmp: CmpOp, ty: OpTy, lhs: Value, rhs: Value) -> RegId {
        let dst = self.temp(OpTy::Pred);
        self.cmp_into(dst, cmp, ty, lhs, rhs);
        dst
    }

    /// `dst = lhs cmp rhs` into an existing predicate.
    fn cmp_into(&mut self, dst: RegId, cmp: CmpOp, ty: OpTy, lhs: Value, rhs: Value) {
        let (ftz, dst, dst_not, combine) = (false, Some(dst), None, None);
        self.push(InstKind::Setp { cmp, ty, ftz, dst, dst_not, lhs, rhs, combine });
    }

    /// `cond ? a : b`.
    fn sel(&mut self, ty: OpTy, cond: RegId, a: Value, b: Value) -> Value {
        let dst = self.temp(ty);
        self.push(InstKind::Select { ty, dst, a, b, cond, negate: false });
        Value::Reg(dst)
    }

    fn pred_or(&mut self, lhs: RegId, rhs: RegId) -> RegId {
        self.pred_logic(BoolOp::Or, lhs, rhs)
    }

    fn pred_and(&mut self, lhs: RegId, rhs: RegId) -> RegId {
        self.pred_logic(BoolOp::And, lhs, rhs)
    }

    fn pred_logic(&mut self, op: BoolOp, lhs: RegId, rhs: RegId) -> RegId {
        let dst = self.temp(OpTy::Pred);
        self.push(InstKind::PredLogic { op, dst, lhs, rhs });
        dst
    }

    /// Integer conversion (truncation, or extension by the signedness of `from`).
    fn cvt(&mut self, to: OpTy, from: OpTy, src: Value) -> Value {
        let dst = self.temp(to);
        self.push(InstKind::Convert {
            to,
            from,
            rounding: None,
            mode: FloatMode::default(),
            dst,
            src,
        });
        Value::Reg(dst)
    }

    /// `len` bits of `a` from `pos`, zero- or sign-extended by `ty` (`bfe`).
    fn bfe(&mut self, ty: OpTy, a: Value, pos: u64, len: u64) -> Value {
        let dst = self.temp(ty);
        self.push(InstKind::Bfe { ty, dst, a, pos: Value::Imm(pos), len: Value::Imm(len) });
        Value::Reg(dst)
    }

    /// `{hi, lo}` as one 64-bit value.
    fn pack64(&mut self, lo: Value, hi: Value) -> Value {
        let dst = self.temp(U64);
        self.push(InstKind::Pack { elem: U32, dst, srcs: vec![lo, hi] });
        Value::Reg(dst)
    }

    /// The low 32 bits of a 64-bit value.
    fn lo32(&mut self, v: Value) -> Value {
        self.cvt(U32, U64, v)
    }

    fn mov(&mut self, ty: OpTy, dst: RegId, src: Value) {
        self.push(InstKind::Mov { ty, dst, src });
    }

    fn widen(&mut self, from: FloatFormat, src: Value) -> Value {
        let dst = self.temp(F32);
        self.push(InstKind::Widen { from, dst, src });
        Value::Reg(dst)
    }

    fn narrow(
        &mut self,
        to: FloatFormat,
        from: OpTy,
        rounding: Rounding,
        satfinite: bool,
        relu: bool,
        src: Value,
    ) -> Value {
        let dst = self.temp(OpTy::U(to.bits() as u8));
        self.push(InstKind::Narrow { to, from, rounding, satfinite, relu, dst, src });
        Value::Reg(dst)
    }

    fn int_to_float(
        &mut self,
        to: FloatFormat,
        from: OpTy,
        rounding: Rounding,
        src: Value,
    ) -> Value {
        let dst = self.temp(OpTy::U(to.bits() as u8));
        self.push(InstKind::IntToFloat { to, from, rounding, dst, src });
        Value::Reg(dst)
    }

    fn odd(&mut self, op: OddOp, a: Value, b: Value, c: Value) -> Value {
        let dst = self.temp(F64);
        self.push(InstKind::RoundToOdd { op, soft: false, dst, a, b, c });
        Value::Reg(dst)
    }

    fn convert(
        &mut self,
        to: OpTy,
        from: OpTy,
        rounding: Option<Rounding>,
        mode: FloatMode,
        src: Value,
    ) -> Value {
        let dst = self.temp(to);
        self.push(InstKind::Convert { to, from, rounding, mode, dst, src });
        Value::Reg(dst)
    }

    /// `.ftz` on an f32 value.
    fn flush32(&mut self, v: Value) -> Value {
        self.convert(F32, F32, None, FloatMode { ftz: true, sat: false, ..FloatMode::default() }, v)
    }

    /// `.ftz` on a narrow bit pattern: a subnormal becomes a zero of its sign.
    fn flush_bits(&mut self, fmt: FloatFormat, v: Value) -> Value {
        let ty = OpTy::U(fmt.bits() as u8);
        let (e, m) = fmt.layout();
        let exp = self.and(ty, v, Value::Imm(((1 << e) - 1) << m));
        let sub = self.cmp(CmpOp::Eq, ty, exp, Value::Imm(0));
        let sign = self.and(ty, v, Value::Imm(1 << (e + m)));
        self.sel(ty, sub, sign, v)
    }

    /// `.sat` on an f64 value: clamped to [0, 1], NaN to +0 (PTX ISA 9.2 §9.7.3).
    fn saturate64(&mut self, v: Value) -> Value {
        let low = self.bin(BinaryOp::Max, F64, v, Value::Imm(0));
        self.bin(BinaryOp::Min, F64, low, Value::Imm(1f64.to_bits()))
    }

    /// The sum of two `fmt` bit patterns, rounded to nearest even, subnormals kept
    /// (`add.rn` of one half lane; `atom.add.noftz`).
    fn half_add(&mut self, fmt: FloatFormat, a: Value, b: Value) -> Value {
        let x = self.widen(fmt, a);
        let y = self.widen(fmt, b);
        let sum = self.odd(OddOp::Add, x, y, Value::Imm(0));
        self.narrow(fmt, F64, Rounding::Nearest, false, false, sum)
    }

    /// `min` or (`max`) `max` of two 16-bit values of `fmt` as `min.f16` computes it
    /// (PTX ISA 9.2 §9.7.4: a NaN operand gives the other, -0 is below +0): widened to
    /// f32 exactly, the f32 operation, narrowed back, which is exact since the result is
    /// one of the operands.
    fn half_min_max(&mut self, fmt: FloatFormat, max: bool, a: Value, b: Value) -> Value {
        let x = self.widen(fmt, a);
        let y = self.widen(fmt, b);
        let op = if max { BinaryOp::Max } else { BinaryOp::Min };
        let r = self.bin(op, F32, x, y);
        self.narrow(fmt, F32, Rounding::Nearest, false, false, r)
    }

    /// A half comparison's operand as an f32 (exact: every f16 and bf16 is one), after
    /// `.ftz` flushes a subnormal to a zero of its sign.
    fn half_operand(&mut self, fmt: FloatFormat, ftz: bool, v: Value) -> Value {
        let v = if ftz { self.flush_bits(fmt, v) } else { v };
        self.widen(fmt, v)
    }

    /// The comparison of each lane of `a` and `b` (`lanes` 16-bit halves of `fmt`; lane
    /// 0 is bits 0-15, §9.7.7), combined with `combine`, into the predicate pair
    /// `dsts[k]` (`setp`'s `p` and `q`).
    #[allow(clippy::too_many_arguments)]
    fn half_compare(
        &mut self,
        fmt: FloatFormat,
        lanes: u32,
        cmp: CmpOp,
        ftz: bool,
        a: Value,
        b: Value,
        combine: Option<(BoolOp, RegId, bool)>,
        dsts: &[(Option<RegId>, Option<RegId>)],
    ) {
        for (k, &(dst, dst_not)) in dsts.iter().enumerate().take(lanes as usize) {
            let x = self.lane(a, lanes, k as u32);
            let y = self.lane(b, lanes, k as u32);
            let (x, y) = (self.half_operand(fmt, ftz, x), self.half_operand(fmt, ftz, y));
            self.push(InstKind::Setp {
                cmp,
                ty: F32,
                ftz: false,
                dst,
                dst_not,
                lhs: x,
                rhs: y,
                combine,
            });
        }
    }

    /// Lane `k` (16 bits) of a 16- or 32-bit value.
    fn lane(&mut self, v: Value, lanes: u32, k: u32) -> Value {
        if lanes == 1 {
            return v;
        }
        let shifted = if k == 0 {
            v
        } else {
            self.bin(BinaryOp::Shr, OpTy::U(32), v, Value::Imm(16 * u64::from(k)))
        };
        self.cvt(OpTy::U(16), OpTy::U(32), shifted)
    }

    /// Lanes of `elem_bits` each, lane 0 in the low bits.
    fn pack(&mut self, elem_bits: u32, lanes: Vec<Value>) -> Value {
        if lanes.len() == 1 {
            return lanes[0];
        }
        let total = elem_bits * lanes.len() as u32;
        let dst = self.temp(OpTy::U(total as u8));
        self.push(InstKind::Pack { elem: OpTy::U(elem_bits as u8), dst, srcs: lanes });
        Value::Reg(dst)
    }
}

/// Builds instructions for a pass: temporaries go into `kernel`, instructions into
/// `insts`, each with `span`.
#[derive(Debug)]
pub struct Builder<'k> {
    pub kernel: &'k mut Kernel,
    pub insts: Vec<Inst>,
    pub span: Span,
}

impl<'k> Builder<'k> {
    pub fn new(kernel: &'k mut Kernel, span: Span) -> Self {
        Builder { kernel, insts: Vec::new(), span }
    }
}

impl Build for Builder<'_> {
    fn temp(&mut self, ty: OpTy) -> RegId {
        crate::ir::new_temp(&mut self.kernel.regs, ty.storage(), self.span)
    }

    fn push(&mut self, kind: InstKind) {
        self.insts.push(Inst { kind, span: self.span });
    }
}
