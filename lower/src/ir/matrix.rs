//! The warp-level matrix instructions (PTX ISA 9.2 §9.7.14) as one IR operation each,
//! [`super::InstKind::Matrix`]: what semantic analysis resolved (shape, element types,
//! `.satfinite`, the fragments as register lists, the address of a load or store),
//! before `pass::expand_matrix` writes each out in warp exchanges, arithmetic and
//! memory accesses.
//!
//! # Semantics
//!
//! Each operation is a collective of the whole warp of 32 lanes (warps are formed from
//! the linear thread id, PTX ISA 9.2 §2.2.1), preceded by semantic analysis's sync point
//! of the warp. A lane that does not take part (exited, or in a partial last warp)
//! contributes zero for each of its registers and addresses, as a warp exchange reads
//! it (`InstKind::WarpRead`); nothing is written for it. The ISA leaves such a use
//! undefined (`.aligned`: every lane executes the instruction).
//!
//! **Fragments** (`mma`, `ldmatrix`, `stmatrix`, `movmatrix`) are laid out as the ISA's
//! figures give (§9.7.14.5.x, "Matrix Fragments for mma.m*n*k*"). With `g = lane >> 2`
//! and `t = lane % 4`, and `p` elements per 32-bit register ([`MatrixElem::per_register`]:
//! 2 for 16-bit types, 4 for 8-bit, 8 for 4-bit, 32 for `.b1`, 1 for `.tf32`, one
//! 64-bit register for `.f64`):
//!
//! - element `j` of A's register `r` is A's row `g + 8 (r % (M / 8))`, column
//!   `4p (r / (M / 8)) + p t + j`;
//! - element `j` of B's register `r` is B's row `4p r + p t + j`, column `g`;
//! - C's and D's element `i` is at row `g + 8 (i / 2)`, column `2t + i % 2` (an `.f16`
//!   accumulator packs elements `2j` and `2j + 1` in register `j`, the lower one in the
//!   low half).
//!
//! **`mma`** ([`Mma`]) computes `D = A × B + C`: each element of D starts from C's and
//! adds the products in k order. Float inputs: each product is exact in f32 (`.tf32`
//! operands keep their 19 high bits) and each step an f32 addition rounded to nearest
//! even; an `.f16` accumulator is read exactly and rounded to `.f16` (nearest even) once,
//! at the end. `.f64`: each step is a fused multiply-add. Integers: the products summed
//! exactly, in 64 bits, with C; the low 32 bits, or with `.satfinite` the sum clamped
//! to the s32 range. `.b1`: each product is a bit of `a AND b` (`a XOR b`), counted.
//!
//! **`wmma.mma`** ([`Mma::wmma`]): the ISA leaves a WMMA fragment's layout unspecified;
//! ptxvk's cuts the M × N × K product into tiles of `min(M, 16)` × 8 × K, each an `mma`
//! of that shape ([`Mma::tile`]), and a fragment is its tiles' `mma` fragments one after
//! the other: A's by row tile, B's by column tile, C's and D's by row tile then column
//! tile. `.f16` A and B fragments have 8 registers where the tiles fill fewer; the rest
//! repeat the first ones (a load writes them, an `mma` ignores them).
//!
//! **`ldmatrix`** ([`MatrixInst::LoadRows`], §9.7.14.5.15): `n` (1, 2 or 4) 8 × 8
//! matrices of 16-bit elements; lane `8i + r` gives (in `addr`, [`rows_offset`]) the
//! address of row `r` of matrix `i`, 16 bytes. Register `i` of each lane gets
//! matrix `i`'s elements `(g, 2t)` and `(g, 2t + 1)` (`.trans`: `(2t, g)` and
//! `(2t + 1, g)`), the first in the low half. **`stmatrix`** ([`MatrixInst::StoreRows`])
//! is its inverse: each row is stored at the address its lane gives. **`movmatrix`**
//! ([`MatrixInst::Transpose`]) gives each lane the fragment of the transpose.
//!
//! **`wmma.load`/`wmma.store`** ([`WmmaAccess`]) move each element of a fragment (the
//! layout above) between its register and element `row · stride + col` (`.row`) or
//! `col · stride + row` (`.col`) of the matrix at `addr`.

use super::{Address, BinaryOp, FloatFormat, OpTy, RegId, Space, Value};

/// The element type of `mma`'s A and B operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixElem {
    /// `.f16 .bf16 .tf32 .e4m3 .e5m2`.
    Float(FloatFormat),
    F64,
    /// `.s8 .u8 .s4 .u4`.
    Int {
        bits: u32,
        signed: bool,
    },
    /// `.b1`: single bits, combined by `.and`/`.xor` and counted (`.popc`).
    Bit,
}

impl MatrixElem {
    pub fn bits(self) -> u32 {
        match self {
            MatrixElem::Float(f) => f.bits(),
            MatrixElem::F64 => 64,
            MatrixElem::Int { bits, .. } => bits,
            MatrixElem::Bit => 1,
        }
    }

    /// Elements per register (`p` of the module doc).
    pub fn per_register(self) -> u32 {
        (32 / self.bits()).max(1)
    }

    /// The type of one register of an A or B fragment.
    pub fn reg_ty(self) -> OpTy {
        if self == MatrixElem::F64 {
            OpTy::U(64)
        } else {
            OpTy::U(32)
        }
    }
}

/// The type of `mma`'s C and D operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixAccum {
    F16,
    F32,
    F64,
    S32,
}

impl MatrixAccum {
    /// The type of one C or D register.
    pub fn reg_ty(self) -> OpTy {
        match self {
            MatrixAccum::F16 => OpTy::U(32),
            MatrixAccum::F32 => OpTy::F(32),
            MatrixAccum::F64 => OpTy::F(64),
            MatrixAccum::S32 => OpTy::S(32),
        }
    }
}

/// One `mma` form: its shape and types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaForm {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub a: MatrixElem,
    pub b: MatrixElem,
    pub d: MatrixAccum,
    pub c: MatrixAccum,
    pub satfinite: bool,
    /// `.b1` forms: how bits combine before they are counted (`And`, `Xor`).
    pub popc: Option<BinaryOp>,
}

impl MmaForm {
    /// k per chunk (`4p`).
    pub fn chunk(&self) -> u32 {
        4 * self.a.per_register()
    }

    pub fn a_regs(&self) -> u32 {
        self.m / 8 * (self.k / self.chunk())
    }

    pub fn b_regs(&self) -> u32 {
        self.k / self.chunk()
    }

    /// C and D elements per thread.
    pub fn elements(&self) -> u32 {
        self.m * self.n / 32
    }

    /// C or D registers per thread.
    pub fn acc_regs(&self, acc: MatrixAccum) -> u32 {
        if acc == MatrixAccum::F16 {
            self.elements() / 2
        } else {
            self.elements()
        }
    }

    /// Whether the shape is one the fragment layout covers (a multiple of the tile,
    /// whole chunks of k).
    fn well_formed(&self) -> bool {
        let shapes = matches!(self.m, 8 | 16) && self.n == 8;
        shapes && self.k > 0 && self.k.is_multiple_of(self.chunk())
    }
}

/// `mma.sync` and `wmma.mma`: `d = a × b + c`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mma {
    /// The whole shape and the types; for `wmma`, the product of tiles.
    pub form: MmaForm,
    /// `wmma.mma`: the fragments are tiles' fragments ([`Mma::tile`]).
    pub wmma: bool,
    pub d: Vec<RegId>,
    pub a: Vec<Value>,
    pub b: Vec<Value>,
    pub c: Vec<Value>,
}

impl Mma {
    /// The `mma` form of one tile: the form itself, or `wmma`'s `min(M, 16)` × 8 × K.
    pub fn tile(&self) -> MmaForm {
        if self.wmma {
            MmaForm { m: self.form.m.min(16), n: 8, ..self.form }
        } else {
            self.form
        }
    }

    /// Registers of D, A, B and C.
    pub fn counts(&self) -> [u32; 4] {
        if !self.wmma {
            let f = &self.form;
            return [f.acc_regs(f.d), f.a_regs(), f.b_regs(), f.acc_regs(f.c)];
        }
        let shape = (self.form.m, self.form.n, self.form.k);
        let tile = self.tile();
        [
            wmma_regs(&MmaForm { c: tile.d, ..tile }, shape, Fragment::C).1,
            wmma_regs(&tile, shape, Fragment::A).1,
            wmma_regs(&tile, shape, Fragment::B).1,
            wmma_regs(&tile, shape, Fragment::C).1,
        ]
    }
}

/// Which matrix a WMMA fragment holds (D's is C's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fragment {
    A,
    B,
    C,
}

/// The registers a WMMA fragment of `which` has for tile `tile` of the `(m, n, k)`
/// product: those its tiles fill, and all (8 for `.f16` A and B).
pub fn wmma_regs(tile: &MmaForm, (m, n, _): (u32, u32, u32), which: Fragment) -> (u32, u32) {
    let (rows, cols) = (m / tile.m, n / 8);
    let filled = match which {
        Fragment::A => rows * tile.a_regs(),
        Fragment::B => cols * tile.b_regs(),
        Fragment::C => rows * cols * tile.acc_regs(tile.c),
    };
    let f16_input = tile.a == MatrixElem::Float(FloatFormat::F16) && which != Fragment::C;
    (filled, if f16_input { 8 } else { filled })
}

/// The element type of a loaded or stored WMMA fragment: an input or an accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WmmaData {
    In(MatrixElem),
    Acc(MatrixAccum),
}

impl WmmaData {
    /// Bytes of one element in memory (a `.tf32` element is an f32).
    pub fn bytes(self) -> u32 {
        match self {
            WmmaData::In(e) => e.bits().max(8) / 8,
            WmmaData::Acc(MatrixAccum::F16) => 2,
            WmmaData::Acc(MatrixAccum::F64) => 8,
            WmmaData::Acc(_) => 4,
        }
    }

    /// The type of one fragment register.
    pub fn reg_ty(self) -> OpTy {
        match self {
            WmmaData::In(MatrixElem::F64) | WmmaData::Acc(MatrixAccum::F64) => OpTy::U(64),
            WmmaData::Acc(a) => a.reg_ty(),
            WmmaData::In(_) => OpTy::U(32),
        }
    }

    /// Elements per register: packed inputs, packed `.f16` accumulators, else one.
    pub fn per_register(self) -> u32 {
        match self {
            WmmaData::In(e) => e.per_register(),
            WmmaData::Acc(MatrixAccum::F16) => 2,
            WmmaData::Acc(_) => 1,
        }
    }

    /// The `mma` tile whose fragment layout a `(m, n, k)` load or store of this data
    /// uses: inputs fix A's and B's type, accumulators C's.
    pub fn tile(self, (m, _, k): (u32, u32, u32)) -> MmaForm {
        let (input, acc) = match self {
            WmmaData::In(e) => {
                (e, if e == MatrixElem::F64 { MatrixAccum::F64 } else { MatrixAccum::F32 })
            }
            WmmaData::Acc(a) => {
                let input = match (a, k) {
                    (MatrixAccum::F64, _) => MatrixElem::F64,
                    (_, 8) => MatrixElem::Float(FloatFormat::Tf32),
                    (MatrixAccum::S32, _) => MatrixElem::Int { bits: 8, signed: true },
                    _ => MatrixElem::Float(FloatFormat::F16),
                };
                (input, a)
            }
        };
        MmaForm {
            m: m.min(16),
            n: 8,
            k,
            a: input,
            b: input,
            d: acc,
            c: acc,
            satfinite: false,
            popc: None,
        }
    }
}

/// How a WMMA load or store reaches its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WmmaSpace {
    /// The address is one of this space (`.global`, `.shared`, or a generic address
    /// that is a global one).
    In(Space),
    /// A generic address the space inference proved to be in the shared or local
    /// window: each element's access is in that space, at the low 32 bits of its
    /// address.
    Window(Space),
    /// A generic address whose space is known only at run time: each element's access
    /// tests its upper half against the windows (`ld`'s way).
    Generic,
}

/// `wmma.load` and `wmma.store`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WmmaAccess {
    pub which: Fragment,
    /// `.row` (else `.col`).
    pub row_major: bool,
    /// The whole shape `(m, n, k)`.
    pub shape: (u32, u32, u32),
    pub data: WmmaData,
    pub space: WmmaSpace,
    pub addr: Address,
    /// Elements between rows (`.row`) or columns (`.col`), u32.
    pub stride: Value,
}

impl WmmaAccess {
    /// The tile of the fragment layout.
    pub fn tile(&self) -> MmaForm {
        self.data.tile(self.shape)
    }

    /// Registers the tiles fill, and registers of the fragment.
    pub fn regs(&self) -> (u32, u32) {
        wmma_regs(&self.tile(), self.shape, self.which)
    }
}

/// A warp-level matrix instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatrixInst {
    /// `mma.sync` (§9.7.14.5.14) and `wmma.mma` (§9.7.14.4.5).
    Mma(Mma),
    /// `ldmatrix.m8n8.xN{.trans}{.shared}.b16` into `dsts` (N of them), from the
    /// address `addr` each lane gives: `.shared`, or with `generic` a generic one
    /// ([`rows_offset`] says where in the shared window it is).
    LoadRows { trans: bool, addr: Address, generic: bool, dsts: Vec<RegId> },
    /// `stmatrix.m8n8.xN{.trans}{.shared}.b16` of `srcs` (the address as `LoadRows`').
    StoreRows { trans: bool, addr: Address, generic: bool, srcs: Vec<Value> },
    /// `movmatrix.m8n8.trans.b16`.
    Transpose { dst: RegId, src: Value },
    /// `wmma.load` into `dsts`.
    WmmaLoad(WmmaAccess, Vec<RegId>),
    /// `wmma.store` of `srcs`.
    WmmaStore(WmmaAccess, Vec<Value>),
}

impl MatrixInst {
    /// What is wrong with the operation's fields, if anything (the verifier's check):
    /// a shape the fragment layout does not cover, register counts that are not the
    /// form's.
    pub fn malformed(&self) -> Option<&'static str> {
        match self {
            MatrixInst::Mma(m) => {
                let tile = m.tile();
                let whole =
                    !m.wmma || (m.form.m.is_multiple_of(tile.m) && m.form.n.is_multiple_of(8));
                if !tile.well_formed() || !whole {
                    return Some("an mma shape the fragment layout does not cover");
                }
                let have = [m.d.len(), m.a.len(), m.b.len(), m.c.len()];
                (have.map(|n| n as u32) != m.counts()).then_some("mma fragments of wrong sizes")
            }
            MatrixInst::LoadRows { dsts: regs, .. } => {
                (![1, 2, 4].contains(&regs.len())).then_some("ldmatrix of not 1, 2 or 4 matrices")
            }
            MatrixInst::StoreRows { srcs, .. } => {
                (![1, 2, 4].contains(&srcs.len())).then_some("stmatrix of not 1, 2 or 4 matrices")
            }
            MatrixInst::Transpose { .. } => None,
            MatrixInst::WmmaLoad(w, regs) => w.malformed(regs.len()),
            MatrixInst::WmmaStore(w, regs) => w.malformed(regs.len()),
        }
    }

    /// Calls `f` on every register the operation names, to rewrite it
    /// (`pass::inline`'s renaming).
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        let mut value = |v: &mut Value| {
            if let Value::Reg(r) = v {
                f(r)
            }
        };
        let mut regs: Vec<&mut RegId> = Vec::new();
        match self {
            MatrixInst::Mma(m) => {
                m.a.iter_mut().chain(&mut m.b).chain(&mut m.c).for_each(&mut value);
                regs.extend(&mut m.d);
            }
            MatrixInst::LoadRows { addr, dsts, .. } => {
                regs.extend(addr.base.as_mut());
                regs.extend(dsts);
            }
            MatrixInst::StoreRows { addr, srcs, .. } => {
                srcs.iter_mut().for_each(&mut value);
                regs.extend(addr.base.as_mut());
            }
            MatrixInst::Transpose { dst, src } => {
                value(src);
                regs.push(dst);
            }
            MatrixInst::WmmaLoad(w, dsts) => {
                value(&mut w.stride);
                regs.extend(w.addr.base.as_mut());
                regs.extend(dsts);
            }
            MatrixInst::WmmaStore(w, srcs) => {
                std::iter::once(&mut w.stride).chain(srcs).for_each(&mut value);
                regs.extend(w.addr.base.as_mut());
            }
        }
        regs.into_iter().for_each(f);
    }

    /// The registers written, with their types.
    pub fn defs(&self) -> Vec<(RegId, OpTy)> {
        match self {
            MatrixInst::Mma(m) => m.d.iter().map(|&r| (r, m.form.d.reg_ty())).collect(),
            MatrixInst::LoadRows { dsts, .. } => dsts.iter().map(|&r| (r, OpTy::U(32))).collect(),
            MatrixInst::Transpose { dst, .. } => vec![(*dst, OpTy::U(32))],
            MatrixInst::WmmaLoad(w, dsts) => dsts.iter().map(|&r| (r, w.data.reg_ty())).collect(),
            MatrixInst::StoreRows { .. } | MatrixInst::WmmaStore(..) => Vec::new(),
        }
    }

    /// The values read, with the types they are read at (an address base at its
    /// register's own width: `None`).
    pub fn uses(&self) -> Vec<(Value, Option<OpTy>)> {
        let u32t = Some(OpTy::U(32));
        match self {
            MatrixInst::Mma(m) => {
                let (a, b, c) = (m.form.a.reg_ty(), m.form.b.reg_ty(), m.form.c.reg_ty());
                let a = m.a.iter().map(|&v| (v, Some(a)));
                let b = m.b.iter().map(|&v| (v, Some(b)));
                a.chain(b).chain(m.c.iter().map(|&v| (v, Some(c)))).collect()
            }
            MatrixInst::LoadRows { addr, .. } => base_use(addr),
            MatrixInst::StoreRows { addr, srcs, .. } => {
                let mut all = base_use(addr);
                all.extend(srcs.iter().map(|&v| (v, u32t)));
                all
            }
            MatrixInst::Transpose { src, .. } => vec![(*src, u32t)],
            MatrixInst::WmmaLoad(w, _) => w.address_uses(),
            MatrixInst::WmmaStore(w, srcs) => {
                let mut all = w.address_uses();
                all.extend(srcs.iter().map(|&v| (v, Some(w.data.reg_ty()))));
                all
            }
        }
    }
}

impl WmmaAccess {
    fn malformed(&self, count: usize) -> Option<&'static str> {
        let tile = self.tile();
        let (m, n, _) = self.shape;
        if !tile.well_formed() || !m.is_multiple_of(tile.m) || !n.is_multiple_of(8) {
            return Some("a wmma shape the fragment layout does not cover");
        }
        if matches!(self.space, WmmaSpace::Window(Space::Global | Space::Param)) {
            return Some("a wmma access through a window that is not shared or local");
        }
        (count as u32 != self.regs().1).then_some("a wmma fragment of the wrong size")
    }

    fn address_uses(&self) -> Vec<(Value, Option<OpTy>)> {
        let base = self.addr.base.map(|r| (Value::Reg(r), None));
        base.into_iter().chain([(self.stride, Some(OpTy::U(32)))]).collect()
    }
}

/// An address's base register, read at its own width.
fn base_use(addr: &Address) -> Vec<(Value, Option<OpTy>)> {
    addr.base.map(|b| (Value::Reg(b), None)).into_iter().collect()
}

/// Where an `ldmatrix`/`stmatrix` address ([`MatrixInst::LoadRows`]) is in the shared
/// window, from `base`, the value and width of its base register (`None` without one):
/// the low 32 bits of base plus offset, which is the shared-window offset of a
/// `.shared` address and of a 64-bit generic one (whose upper half names the window);
/// a 32-bit generic one is the offset plus [`super::SHARED_WINDOW_32`]. An address
/// without a base is its offset.
pub fn rows_offset(addr: &Address, generic: bool, base: Option<(u64, u32)>) -> u64 {
    let low = |x: u64| x & 0xffff_ffff;
    let Some((value, bits)) = base else { return low(addr.offset as u64) };
    let at = low(low(value).wrapping_add(low(addr.offset as u64)));
    if generic && bits != 64 {
        low(at.wrapping_sub(u64::from(super::SHARED_WINDOW_32)))
    } else {
        at
    }
}
