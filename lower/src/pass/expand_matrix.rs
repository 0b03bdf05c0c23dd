//! Pass: the warp-level matrix instructions (PTX ISA 9.2 §9.7.14, [`InstKind::Matrix`])
//! become warp exchanges, arithmetic and memory accesses, so that they run on every
//! subgroup size and in every warp mode (`pass::legalize_warps` makes the exchanges
//! subgroup operations or shared scratch words). The operations and their fragment
//! layouts are specified in `crate::ir::matrix`'s doc; this is how they are computed.
//!
//! # `mma`
//!
//! Each thread gathers the rows of A and columns of B its D elements need: one exchange
//! per 32-bit word of an A or B register, reading the 4 lanes of the group that holds
//! them (8 for B: two columns). With `g = %laneid >> 2` and `t = %laneid % 4`, A's rows
//! `g` and `g + 8` are held by lanes `4g … 4g + 3`, B's columns `2t` and `2t + 1` by
//! lanes `8t …` and `8t + 4 …`. `m16n8k16` with f16 inputs is 6 exchanges and 32
//! reads. Then `d = c + Σ_k a_k·b_k` in k order, as the IR specifies: f32 additions of
//! exact products (`.tf32` operands masked to their 19 bits, each format widened
//! exactly), f64 fused multiply-adds, integer sums in 64 bits (`.b1`: a word of bits
//! ANDed or XORed and counted at a time), `.f16` accumulators rounded once at the end.
//! NVIDIA's tensor cores add several products at a time in a wider internal format
//! (and truncate), so float results may differ from this order by a few ULP there;
//! integer results are the same.
//!
//! # `ldmatrix`, `stmatrix`, `movmatrix`
//!
//! Each lane's address becomes its shared-window offset first (`ir::rows_offset`).
//! `ldmatrix`: one exchange of the row addresses, then loads from shared memory (a word
//! for a row's two elements, two halves with `.trans`). `stmatrix`: the lane with a
//! row's address gathers the row from the 4 lanes holding it (the 8 holders of a column
//! with `.trans`) and stores 16 bytes, behind a branch on whether it gives an address of
//! that matrix. `movmatrix`: the transpose by one exchange.
//!
//! # WMMA (`expand_matrix/wmma.rs`)
//!
//! `wmma.mma` is its tiles' `mma`s, each row tile of A and column tile of B gathered
//! once; `wmma.load` and `wmma.store` one access per element at the address of its
//! place, in the operation's space, at the window offset of a generic address the
//! space inference placed, or chosen at run time by the address's window.
//!
//! Pre: CFG IR after `pass::inline`, whose [`InstKind::Matrix`] instructions semantic
//! analysis resolved and checked (`sema::matrix`, `sema::wmma` and the forms table
//! `ptxvk_frontend::forms`: what ptxvk does not implement is a diagnostic there), each
//! after the warp's sync point.
//!
//! Post: no [`InstKind::Matrix`] is left. Each became instructions with its span:
//! exchanges, arithmetic, and loads and stores that `pass::check` then instruments as
//! the program's own accesses (so this pass runs before it); `stmatrix` and generic WMMA
//! accesses add blocks (appended to the kernel); the instructions after them move to the
//! last of those.

use ptxvk_frontend::{Diagnostic, Span};

use super::expander::{self, Blocks};
use crate::build::Build;
use crate::ir::{
    Address, BinaryOp, BlockId, CmpOp, FloatFormat, FloatMode, InstKind, Kernel, MatrixAccum,
    MatrixElem, MatrixInst, Mma, MmaForm, OpTy, RegId, RegTy, Rounding, Space, Value,
};

mod wmma;

const U16: OpTy = OpTy::U(16);
const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);
const S64: OpTy = OpTy::S(64);
const F32: OpTy = OpTy::F(32);
const F64: OpTy = OpTy::F(64);

/// Whether `kind` is an instruction this pass expands (`pass::leftover`).
pub fn is_matrix(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Matrix(_))
}

/// Expands every matrix instruction of `k` as the module doc says. One whose shape is
/// wrong (`MatrixInst::malformed`) is an internal error.
pub fn run(k: &mut Kernel) -> Result<(), Diagnostic> {
    expander::each(k, is_matrix, |k, cur, span, kind| {
        let InstKind::Matrix(m) = kind else { return Ok(cur) };
        if let Some(what) = m.malformed() {
            return Err(Diagnostic::internal(span, what));
        }
        let mut e = Expand { k, cur, span, exchanged: None };
        e.inst(&m)?;
        Ok(e.cur)
    })
}

/// The 32-bit words this thread gathered of one operand: `words[reg][source][lane q]`,
/// with source the row half (A) or column (B), and for `.f64` the high word after the
/// low one in `high`.
struct Gathered {
    low: Vec<Vec<[Value; 4]>>,
    high: Vec<Vec<[Value; 4]>>,
}

/// Builds the expansion of one instruction from block `cur` on: instructions go to the
/// current block, branches end it and continue in new blocks, all with `span`.
struct Expand<'k> {
    k: &'k mut Kernel,
    cur: BlockId,
    span: Span,
    /// The word of the exchange in progress, which its reads name.
    exchanged: Option<Value>,
}

expander::expansion!(Expand);

impl Expand<'_> {
    fn inst(&mut self, m: &MatrixInst) -> Result<(), Diagnostic> {
        match m {
            MatrixInst::Mma(x) if x.wmma => self.wmma_mma(x)?,
            MatrixInst::Mma(x) => self.mma(x)?,
            MatrixInst::LoadRows { trans, addr, generic, dsts } => {
                let at = self.rows_offset(*addr, *generic);
                self.ldmatrix(*trans, at, dsts)
            }
            MatrixInst::StoreRows { trans, addr, generic, srcs } => {
                let at = self.rows_offset(*addr, *generic);
                self.stmatrix(*trans, at, srcs)
            }
            MatrixInst::Transpose { dst, src } => self.movmatrix(*dst, *src),
            MatrixInst::WmmaLoad(w, dsts) => self.wmma_load(w, dsts),
            MatrixInst::WmmaStore(w, srcs) => self.wmma_store(w, srcs),
        }
        Ok(())
    }

    /// Publishes this thread's 32-bit `value`: afterwards [`Self::read_lane`] sees the
    /// warp's values (`pass::legalize_warps` decides how).
    fn publish(&mut self, value: Value) {
        self.push(InstKind::WarpPublish { value });
        self.exchanged = Some(value);
    }

    /// Ends an exchange, before the next one may overwrite it.
    fn end_exchange(&mut self) {
        self.push(InstKind::WarpSync);
    }

    /// Lane `lane`'s published word (of the warp of linear thread `t`).
    fn read_lane(&mut self, t: Value, lane: Value) -> Value {
        let warp_base = self.and(U32, t, Value::Imm(!31u32 as u64));
        let value = self.exchanged.unwrap_or(Value::Imm(0));
        let dst = self.temp(U32);
        self.push(InstKind::WarpRead { dst, value, lane, warp_base });
        Value::Reg(dst)
    }

    /// `(linear tid, g, t)`: the thread's group `%laneid >> 2` and its place in it,
    /// `%laneid % 4`.
    fn lane_coordinates(&mut self) -> (Value, Value, Value) {
        let t = self.linear_tid();
        let lane = self.and(U32, t, Value::Imm(31));
        let group = self.bin(BinaryOp::Shr, U32, lane, Value::Imm(2));
        let in_group = self.and(U32, lane, Value::Imm(3));
        (t, group, in_group)
    }

    /// `mma.sync`: A's and B's words gathered, the products summed, D written.
    fn mma(&mut self, x: &Mma) -> Result<(), Diagnostic> {
        let form = x.form;
        let a_words = self.gather_a(&form, &x.a);
        let b_words = self.gather_b(&form, &x.b);
        let results = self.multiply(&form, &a_words, &b_words, &x.c)?;
        // Write D only now: D may name C's registers.
        self.write_accumulators(form.d, &x.d, &results);
        Ok(())
    }

    /// Exchanges each register of `regs` (an A or B operand of element type `elem`)
    /// across the warp and reads, for each lane base of `bases`, the 4 lanes
    /// `base + q`.
    fn gather(&mut self, t: Value, regs: &[Value], elem: MatrixElem, bases: &[Value]) -> Gathered {
        let mut low = Vec::new();
        let mut high = Vec::new();
        for &value in regs {
            let words: Vec<Value> = if elem == MatrixElem::F64 {
                let lo = self.temp(U32);
                let hi = self.temp(U32);
                self.push(InstKind::Unpack {
                    elem: U32,
                    dsts: vec![Some(lo), Some(hi)],
                    src: value,
                });
                vec![Value::Reg(lo), Value::Reg(hi)]
            } else {
                vec![value]
            };
            for (w, &word) in words.iter().enumerate() {
                self.publish(word);
                let mut per_source = Vec::new();
                for &base in bases {
                    let mut lanes = [Value::Imm(0); 4];
                    for (q, slot) in lanes.iter_mut().enumerate() {
                        let lane = self.add(U32, base, Value::Imm(q as u64));
                        *slot = self.read_lane(t, lane);
                    }
                    per_source.push(lanes);
                }
                self.end_exchange();
                if w == 0 {
                    low.push(per_source);
                } else {
                    high.push(per_source);
                }
            }
        }
        Gathered { low, high }
    }

    /// The words of A's registers `a_vals` (one row tile of `form`) this thread's D
    /// elements need: rows g and g + 8, held by its own group (lanes 4g …).
    fn gather_a(&mut self, form: &MmaForm, a_vals: &[Value]) -> Gathered {
        let (t, group, _) = self.lane_coordinates();
        let group_base = self.bin(BinaryOp::Shl, U32, group, Value::Imm(2));
        self.gather(t, a_vals, form.a, &[group_base])
    }

    /// The words of B's registers `b_vals` (one column tile) this thread's D elements
    /// need: columns 2t and 2t + 1, held by groups 2t and 2t + 1.
    fn gather_b(&mut self, form: &MmaForm, b_vals: &[Value]) -> Gathered {
        let (t, _, in_group) = self.lane_coordinates();
        let col0 = self.bin(BinaryOp::Shl, U32, in_group, Value::Imm(3));
        let col1 = self.add(U32, col0, Value::Imm(4));
        self.gather(t, b_vals, form.b, &[col0, col1])
    }

    /// Element `k_in_chunk` of a chunk of register `reg` of source `source` of `g`.
    fn element(
        &mut self,
        g: &Gathered,
        elem: MatrixElem,
        (reg, source): (u32, usize),
        k_in_chunk: u32,
    ) -> Value {
        let p = elem.per_register();
        let (q, e_idx) = ((k_in_chunk / p) as usize, k_in_chunk % p);
        let low = g.low[reg as usize][source][q];
        if elem == MatrixElem::F64 {
            let high = g.high[reg as usize][source][q];
            return self.pack64(low, high);
        }
        if p == 1 {
            return low;
        }
        self.bfe(U32, low, u64::from(e_idx * elem.bits()), u64::from(elem.bits()))
    }

    /// `form`'s D elements of this thread, computed as the IR specifies from A's and
    /// B's words gathered across the warp ([`Self::gather_a`], [`Self::gather_b`]) and
    /// C's registers `c_vals`, before they are written (to f32, f64 or s32 registers,
    /// or rounded to f16).
    fn multiply(
        &mut self,
        form: &MmaForm,
        a_words: &Gathered,
        b_words: &Gathered,
        c_vals: &[Value],
    ) -> Result<Vec<Value>, Diagnostic> {
        let rows = form.m / 8;
        let chunk = form.chunk();
        if let Some(op) = form.popc {
            return Ok(self.popc_products(form, op, a_words, b_words, c_vals));
        }
        let mut results = Vec::new();
        for idx in 0..form.elements() {
            let half = idx / 2;
            let column = (idx % 2) as usize;
            // The accumulator's start: element idx of C.
            let mut acc = self.accumulator_start(form.c, c_vals, idx);
            let mut wide = Value::Imm(0);
            for k in 0..form.k {
                let ch = k / chunk;
                let a = self.element(a_words, form.a, (half + rows * ch, 0), k % chunk);
                let b = self.element(b_words, form.b, (ch, column), k % chunk);
                match (form.a, form.b) {
                    (MatrixElem::Float(fa), MatrixElem::Float(fb)) => {
                        // Widen reads the format's low bits; `.tf32` keeps its 19.
                        let (a, b) = if fa == FloatFormat::Tf32 {
                            let keep = Value::Imm(0xffff_e000);
                            (self.and(U32, a, keep), self.and(U32, b, keep))
                        } else {
                            (a, b)
                        };
                        let x = self.widen(fa, a);
                        let y = self.widen(fb, b);
                        let product = self.bin(BinaryOp::Mul, F32, x, y);
                        acc = self.bin(BinaryOp::Add, F32, acc, product);
                    }
                    (MatrixElem::F64, _) => {
                        let dst = self.temp(F64);
                        self.push(InstKind::Fma {
                            ty: F64,
                            mode: FloatMode::default(),
                            dst,
                            a,
                            b,
                            c: acc,
                        });
                        acc = Value::Reg(dst);
                    }
                    (MatrixElem::Int { bits, signed: sa }, MatrixElem::Int { signed: sb, .. }) => {
                        let x = self.extend(a, bits, sa);
                        let y = self.extend(b, bits, sb);
                        let product = self.bin(BinaryOp::Mul, S64, x, y);
                        wide = self.add(S64, wide, product);
                    }
                    _ => return Err(Diagnostic::internal(self.span, "mma: mixed element kinds")),
                }
            }
            if let MatrixElem::Int { .. } = form.a {
                let start = self.cvt(S64, OpTy::S(32), acc);
                let sum = self.add(S64, wide, start);
                acc = if form.satfinite {
                    let min = Value::Imm(i64::from(i32::MIN) as u64);
                    let low = self.bin(BinaryOp::Max, S64, sum, min);
                    let clamped = self.bin(BinaryOp::Min, S64, low, Value::Imm(i32::MAX as u64));
                    self.cvt(U32, U64, clamped)
                } else {
                    self.cvt(U32, U64, sum)
                };
            }
            results.push(acc);
        }
        Ok(results)
    }

    /// `.b1`: each lane's word holds 32 consecutive k; the bits combined by `op` and
    /// counted a word at a time are the sum of the per-bit products.
    fn popc_products(
        &mut self,
        form: &MmaForm,
        op: BinaryOp,
        a_words: &Gathered,
        b_words: &Gathered,
        c_vals: &[Value],
    ) -> Vec<Value> {
        let rows = form.m / 8;
        let mut results = Vec::new();
        for idx in 0..form.elements() {
            let (half, column) = ((idx / 2) as usize, (idx % 2) as usize);
            let mut acc = c_vals[idx as usize];
            for ch in 0..form.k / form.chunk() {
                for q in 0..4 {
                    let a = a_words.low[half + (rows * ch) as usize][0][q];
                    let b = b_words.low[ch as usize][column][q];
                    let both = self.bin(op, U32, a, b);
                    let count = self.un(crate::ir::UnaryOp::Popc, U32, both);
                    acc = self.add(U32, acc, count);
                }
            }
            results.push(acc);
        }
        results
    }

    /// A `bits`-bit integer element (in the low bits of `v`) sign- or zero-extended to
    /// 64.
    fn extend(&mut self, v: Value, bits: u32, signed: bool) -> Value {
        let ty = if signed { OpTy::S(32) } else { U32 };
        let x = self.bfe(ty, v, 0, u64::from(bits));
        self.cvt(S64, ty, x)
    }

    /// Writes D's registers from [`Self::multiply`]'s elements (pairs of `.f16`
    /// elements rounded and packed).
    fn write_accumulators(&mut self, d: MatrixAccum, d_regs: &[RegId], results: &[Value]) {
        if d != MatrixAccum::F16 {
            for (&dst, &v) in d_regs.iter().zip(results) {
                self.mov(d.reg_ty(), dst, v);
            }
            return;
        }
        for (j, &dst) in d_regs.iter().enumerate() {
            let near = Rounding::Nearest;
            let lo = self.narrow(FloatFormat::F16, F32, near, false, false, results[2 * j]);
            let hi = self.narrow(FloatFormat::F16, F32, near, false, false, results[2 * j + 1]);
            let packed = self.pack(16, vec![lo, hi]);
            self.mov(U32, dst, packed);
        }
    }

    /// Element `idx` of C as the accumulation starts it: f32 for float forms (an
    /// `.f16` C widened exactly), f64, or the s32 value.
    fn accumulator_start(&mut self, c: MatrixAccum, c_vals: &[Value], idx: u32) -> Value {
        match c {
            MatrixAccum::F16 => {
                let word = c_vals[(idx / 2) as usize];
                let half = self.lane(word, 2, idx % 2);
                self.widen(FloatFormat::F16, half)
            }
            MatrixAccum::F32 | MatrixAccum::F64 | MatrixAccum::S32 => c_vals[idx as usize],
        }
    }

    /// A `ty` load from shared-memory offset `at`.
    fn load_shared(&mut self, ty: OpTy, at: Value) -> Value {
        let address = self.temp(U32);
        self.mov(U32, address, at);
        let dst = self.temp(ty);
        let addr = Address { base: Some(address), offset: 0 };
        self.push(InstKind::Load { space: Space::Shared, ty, dsts: vec![Some(dst)], addr });
        Value::Reg(dst)
    }

    /// `ldmatrix`: lanes `8i …` publish the rows of matrix `i`; each thread loads its
    /// elements of each.
    fn ldmatrix(&mut self, trans: bool, at: Value, dsts: &[RegId]) {
        let (t, group, in_group) = self.lane_coordinates();
        self.publish(at);
        let mut words = Vec::new();
        for matrix in 0..dsts.len() as u64 {
            let word = if !trans {
                // Row g of the matrix, columns 2t and 2t + 1: 4 bytes at 4t.
                let source = self.add(U32, group, Value::Imm(8 * matrix));
                let row = self.read_lane(t, source);
                let column = self.bin(BinaryOp::Shl, U32, in_group, Value::Imm(2));
                let at = self.add(U32, row, column);
                self.load_shared(U32, at)
            } else {
                // Rows 2t and 2t + 1, column g: 2 bytes at 2g of each.
                let twice = self.bin(BinaryOp::Shl, U32, in_group, Value::Imm(1));
                let mut halves = Vec::new();
                for j in 0..2u64 {
                    let source = self.add(U32, twice, Value::Imm(8 * matrix + j));
                    let row = self.read_lane(t, source);
                    let column = self.bin(BinaryOp::Shl, U32, group, Value::Imm(1));
                    let at = self.add(U32, row, column);
                    halves.push(self.load_shared(U16, at));
                }
                self.pack(16, halves)
            };
            words.push(word);
        }
        self.end_exchange();
        for (&dst, word) in dsts.iter().zip(words) {
            self.mov(U32, dst, word);
        }
    }

    /// `stmatrix`: this lane stores row `lane % 8` of matrix `lane / 8` (when it has
    /// one), gathered from the 4 lanes of that row's group (or, with `.trans`, from
    /// column `lane % 8`'s 8 holders).
    fn stmatrix(&mut self, trans: bool, at: Value, srcs: &[Value]) {
        let (t, _, _) = self.lane_coordinates();
        let lane = self.and(U32, t, Value::Imm(31));
        let row = self.and(U32, lane, Value::Imm(7));
        let matrix_of_lane = self.bin(BinaryOp::Shr, U32, lane, Value::Imm(3));
        let mut rows: Vec<Vec<Value>> = Vec::new();
        for &src in srcs {
            self.publish(src);
            let mut words = Vec::new();
            if !trans {
                for q in 0..4u64 {
                    let base = self.bin(BinaryOp::Shl, U32, row, Value::Imm(2));
                    let source = self.add(U32, base, Value::Imm(q));
                    words.push(self.read_lane(t, source));
                }
            } else {
                // Element c of the stored row is element (row, c) of the transpose:
                // the fragment's (c, row), half `row % 2` of lane 4c + row / 2.
                let mut halves = Vec::new();
                for c in 0..8u64 {
                    let pair = self.bin(BinaryOp::Shr, U32, row, Value::Imm(1));
                    let source = self.add(U32, pair, Value::Imm(4 * c));
                    let word = self.read_lane(t, source);
                    let odd = self.and(U32, row, Value::Imm(1));
                    let shift = self.bin(BinaryOp::Shl, U32, odd, Value::Imm(4));
                    let shifted = self.bin(BinaryOp::Shr, U32, word, shift);
                    halves.push(self.cvt(U16, U32, shifted));
                }
                for pair in halves.chunks(2) {
                    words.push(self.pack(16, pair.to_vec()));
                }
            }
            self.end_exchange();
            rows.push(words);
        }
        for (matrix, words) in rows.into_iter().enumerate() {
            // Only the lanes giving an address of this matrix store.
            let mine = self.cmp(CmpOp::Eq, U32, matrix_of_lane, Value::Imm(matrix as u64));
            self.guarded(mine, false, |e| {
                let address = e.temp(U32);
                e.mov(U32, address, at);
                let addr = Address { base: Some(address), offset: 0 };
                e.push(InstKind::Store { space: Space::Shared, ty: U32, srcs: words, addr });
            });
        }
    }

    /// The shared-window offset (u32) of an `ldmatrix`/`stmatrix` address, as
    /// `ir::rows_offset` defines it.
    fn rows_offset(&mut self, addr: Address, generic: bool) -> Value {
        let offset = Value::Imm(addr.offset as u64 & 0xffff_ffff);
        let Some(base) = addr.base else { return offset };
        let wide = self.k.reg(base).ty == RegTy::Int(64);
        let low = if wide { self.lo32(Value::Reg(base)) } else { Value::Reg(base) };
        let at = self.add(U32, low, offset);
        if generic && !wide {
            let window = Value::Imm(u64::from(crate::ir::SHARED_WINDOW_32));
            return self.bin(BinaryOp::Sub, U32, at, window);
        }
        at
    }

    /// `movmatrix`: element (g, 2t + j) of the result is (2t + j, g) of the source:
    /// half g % 2 of lane 4(2t + j) + g / 2.
    fn movmatrix(&mut self, d: RegId, a: Value) {
        let (t, group, in_group) = self.lane_coordinates();
        self.publish(a);
        let pair = self.bin(BinaryOp::Shr, U32, group, Value::Imm(1));
        let odd = self.and(U32, group, Value::Imm(1));
        let shift = self.bin(BinaryOp::Shl, U32, odd, Value::Imm(4));
        let column = self.bin(BinaryOp::Shl, U32, in_group, Value::Imm(3));
        let mut halves = Vec::new();
        for j in 0..2u64 {
            let holder = self.add(U32, column, Value::Imm(4 * j));
            let source = self.add(U32, holder, pair);
            let word = self.read_lane(t, source);
            let shifted = self.bin(BinaryOp::Shr, U32, word, shift);
            halves.push(self.cvt(U16, U32, shifted));
        }
        self.end_exchange();
        let packed = self.pack(16, halves);
        self.mov(U32, d, packed);
    }
}
