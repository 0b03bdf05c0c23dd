//! `wmma.load`, `wmma.store` and `wmma.mma` (PTX ISA 9.2 §9.7.14.4) on `mma`'s
//! expansion: the fragment layout is ptxvk's, `mma` tiles one after the other
//! (`crate::ir::matrix`'s doc), so a `wmma.mma` is its tiles' `mma`s and a load or
//! store moves each element between its register and `ptr + (row · stride + col)`
//! (`.row`) or `ptr + (col · stride + row)` (`.col`) elements.

use ptxvk_frontend::Diagnostic;

use super::{Blocks, Expand, Gathered, U32, U64};
use crate::build::Build;
use crate::ir::{
    Address, BinaryOp, CmpOp, FloatMode, Fragment, InstKind, Mma, MmaForm, OpTy, RegId, RegTy,
    Space, Terminator, Value, WmmaAccess, WmmaSpace, LOCAL_WINDOW, SHARED_WINDOW,
};

/// Where an element of a fragment lies in its matrix, as IR values.
struct Place {
    row: Value,
    col: Value,
}

impl Expand<'_> {
    /// The matrix place of element `e` of fragment register `reg` of `which`, from this
    /// thread's group `g` and place `t` in it.
    fn place(
        &mut self,
        tile: &MmaForm,
        n: u32,
        (which, reg, e): (Fragment, u32, u32),
        (group, in_group): (Value, Value),
    ) -> Place {
        let p = tile.a.per_register();
        let rows = tile.m / 8;
        let plus = |x: &mut Self, v: Value, add: u32| x.add(U32, v, Value::Imm(add.into()));
        match which {
            Fragment::A => {
                let (rt, ri) = (reg / tile.a_regs(), reg % tile.a_regs());
                let (chunk, half) = (ri / rows, ri % rows);
                let row = plus(self, group, rt * tile.m + 8 * half);
                let kt = self.bin(BinaryOp::Mul, U32, in_group, Value::Imm(p.into()));
                let col = plus(self, kt, chunk * tile.chunk() + e);
                Place { row, col }
            }
            Fragment::B => {
                let (ct, ri) = (reg / tile.b_regs(), reg % tile.b_regs());
                let kt = self.bin(BinaryOp::Mul, U32, in_group, Value::Imm(p.into()));
                let row = plus(self, kt, ri * tile.chunk() + e);
                let col = plus(self, group, ct * 8);
                Place { row, col }
            }
            Fragment::C => {
                let per_tile = tile.acc_regs(tile.c);
                let (tile_index, ri) = (reg / per_tile, reg % per_tile);
                let (rt, ct) = (tile_index / (n / 8), tile_index % (n / 8));
                // The element's index in its tile's m16n8 (or m8n8) fragment.
                let idx = if tile.c == crate::ir::MatrixAccum::F16 { 2 * ri + e } else { ri };
                let row = plus(self, group, rt * tile.m + 8 * (idx / 2));
                let t2 = self.bin(BinaryOp::Shl, U32, in_group, Value::Imm(1));
                let col = plus(self, t2, ct * 8 + idx % 2);
                Place { row, col }
            }
        }
    }

    /// The byte address of the element at `place`.
    fn element_address(&mut self, w: &WmmaAccess, place: &Place) -> Address {
        let wide_base = w.addr.base.is_some_and(|r| self.k.reg(r).ty == RegTy::Int(64));
        let bytes = w.data.bytes();
        let (major, minor) =
            if w.row_major { (place.row, place.col) } else { (place.col, place.row) };
        let line = self.bin(BinaryOp::Mul, U32, major, w.stride);
        let index = self.add(U32, line, minor);
        let offset = self.bin(BinaryOp::Mul, U32, index, Value::Imm(bytes.into()));
        let reg = match w.addr.base {
            Some(b) if wide_base => {
                let wide = self.cvt(U64, U32, offset);
                self.add(U64, Value::Reg(b), wide)
            }
            Some(b) => self.add(U32, Value::Reg(b), offset),
            None => offset,
        };
        let ty = if wide_base { U64 } else { U32 };
        let r = self.temp(ty);
        self.mov(ty, r, reg);
        Address { base: Some(r), offset: w.addr.offset }
    }

    /// `wmma.load`: each element of the registers the tiles fill, loaded and packed;
    /// the fragment's other registers repeat the first ones.
    pub(super) fn wmma_load(&mut self, w: &WmmaAccess, dsts: &[RegId]) {
        let tile = w.tile();
        let (filled, _) = w.regs();
        let (_, group, in_group) = self.lane_coordinates();
        let bytes = w.data.bytes();
        let elem_ty = OpTy::U((bytes * 8) as u8);
        let mut values = Vec::new();
        for reg in 0..filled {
            let mut parts = Vec::new();
            for e in 0..w.data.per_register() {
                let place = self.place(&tile, w.shape.1, (w.which, reg, e), (group, in_group));
                let at = self.element_address(w, &place);
                let v = self.temp(elem_ty);
                let load =
                    |space, addr| InstKind::Load { space, ty: elem_ty, dsts: vec![Some(v)], addr };
                self.wmma_access(w.space, at, load);
                parts.push(Value::Reg(v));
            }
            values.push(self.pack(bytes * 8, parts));
        }
        for (n, &dst) in dsts.iter().enumerate() {
            self.mov(w.data.reg_ty(), dst, values[n % filled as usize]);
        }
    }

    /// `wmma.store`: each element of the registers the tiles fill.
    pub(super) fn wmma_store(&mut self, w: &WmmaAccess, srcs: &[Value]) {
        let tile = w.tile();
        let (filled, _) = w.regs();
        let (_, group, in_group) = self.lane_coordinates();
        let (bytes, per) = (w.data.bytes(), w.data.per_register());
        let elem_ty = OpTy::U((bytes * 8) as u8);
        for (reg, &value) in srcs.iter().enumerate().take(filled as usize) {
            for e in 0..per {
                let place =
                    self.place(&tile, w.shape.1, (w.which, reg as u32, e), (group, in_group));
                let at = self.element_address(w, &place);
                let part = if per == 1 {
                    value
                } else {
                    self.bfe(U32, value, u64::from(e * bytes * 8), u64::from(bytes * 8))
                };
                let store =
                    |space, addr| InstKind::Store { space, ty: elem_ty, srcs: vec![part], addr };
                self.wmma_access(w.space, at, store);
            }
        }
    }

    /// One element's access `make(space, address)`: in the operation's space, at the
    /// window offset of a generic address placed in a window, or chosen at run time.
    fn wmma_access(
        &mut self,
        space: WmmaSpace,
        at: Address,
        make: impl Fn(Space, Address) -> InstKind,
    ) {
        match space {
            WmmaSpace::In(space) => self.push(make(space, at)),
            WmmaSpace::Window(space) => {
                let low = self.window_offset(at);
                self.push(make(space, low));
            }
            WmmaSpace::Generic => self.dispatch_generic(at, |e, space, a| e.push(make(space, a))),
        }
    }

    /// A window address's offset in the window: its low 32 bits.
    fn window_offset(&mut self, address: Address) -> Address {
        let Some(base) = address.base else { return address };
        let from = OpTy::U(self.k.reg(base).ty.bits() as u8);
        let low = self.temp(U32);
        let (rounding, mode, src) = (None, FloatMode::default(), Value::Reg(base));
        self.push(InstKind::Convert { to: U32, from, rounding, mode, dst: low, src });
        Address { base: Some(low), offset: address.offset }
    }

    /// A generic access whose space is known only at run time: `access` for the shared
    /// window, the local window, or global memory, chosen by the address's upper half
    /// (the windows' offsets are the lower half), as `ld` does (`sema::memory`).
    fn dispatch_generic(
        &mut self,
        address: Address,
        mut access: impl FnMut(&mut Self, Space, Address),
    ) {
        let base = address.base.map_or(Value::Imm(0), Value::Reg);
        let (mode, full) = (FloatMode::default(), self.temp(U64));
        let (lhs, rhs) = (base, Value::Imm(address.offset as u64));
        self.push(InstKind::Binary { op: BinaryOp::Add, ty: U64, mode, dst: full, lhs, rhs });
        let (hi, low) = (self.temp(U64), self.temp(U32));
        let (lhs, rhs) = (Value::Reg(full), Value::Imm(32));
        self.push(InstKind::Binary { op: BinaryOp::Shr, ty: U64, mode, dst: hi, lhs, rhs });
        let src = Value::Reg(full);
        self.push(InstKind::Convert { to: U32, from: U64, rounding: None, mode, dst: low, src });
        let hi = Value::Reg(hi);
        let is_shared = self.temp(OpTy::Pred);
        let is_local = self.temp(OpTy::Pred);
        for (d, w) in [(is_shared, SHARED_WINDOW), (is_local, LOCAL_WINDOW)] {
            self.cmp_into(d, CmpOp::Eq, U64, hi, Value::Imm(w >> 32));
        }
        let join = self.new_block();
        let windows = [(is_shared, Space::Shared), (is_local, Space::Local)];
        for (cond, space) in windows {
            let then = self.new_block();
            let next = self.new_block();
            self.end_block(
                Terminator::Branch { cond, negate: false, if_true: then, if_false: next },
                then,
            );
            access(self, space, Address { base: Some(low), offset: 0 });
            self.end_block(Terminator::Jump(join), next);
        }
        access(self, Space::Global, Address { base: Some(full), offset: 0 });
        self.end_block(Terminator::Jump(join), join);
    }

    /// `wmma.mma`: each row tile of A and column tile of B gathered once, for every
    /// tile of D that needs it; D written after every tile is computed (it may name
    /// C's registers).
    pub(super) fn wmma_mma(&mut self, x: &Mma) -> Result<(), Diagnostic> {
        let tile = x.tile();
        let (row_tiles, col_tiles) = ((x.form.m / tile.m) as usize, (x.form.n / 8) as usize);
        let (ar, br) = (tile.a_regs() as usize, tile.b_regs() as usize);
        let (cr, dr) = (tile.acc_regs(tile.c) as usize, tile.acc_regs(tile.d) as usize);
        let a_words: Vec<Gathered> =
            (0..row_tiles).map(|rt| self.gather_a(&tile, &x.a[rt * ar..(rt + 1) * ar])).collect();
        let b_words: Vec<Gathered> =
            (0..col_tiles).map(|ct| self.gather_b(&tile, &x.b[ct * br..(ct + 1) * br])).collect();
        let mut results = Vec::new();
        for a in &a_words {
            for b in &b_words {
                // Tiles of D by row tile, then column tile.
                let n = results.len();
                results.push(self.multiply(&tile, a, b, &x.c[n * cr..(n + 1) * cr])?);
            }
        }
        for (n, r) in results.iter().enumerate() {
            self.write_accumulators(tile.d, &x.d[n * dr..(n + 1) * dr], r);
        }
        Ok(())
    }
}
