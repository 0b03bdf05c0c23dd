//! The model of [`InstKind::Matrix`](crate::ir::InstKind::Matrix) before `pass::expand_matrix`: each operation runs
//! once for the whole warp when every lane waits at it, on the matrices themselves. The
//! lanes' registers are read into whole matrices through the fragment layouts as
//! `crate::ir::matrix` specifies them (the ISA's figures, PTX ISA 9.2 §9.7.14.5.x, and
//! ptxvk's WMMA tiles), the product or the move is computed on the matrices, and the
//! results are written back through the same layouts; nothing here exchanges words
//! between lanes as the expansion does. A lane that does not take part contributes
//! zeros and receives nothing.

use ptxvk_frontend::Span;

use super::arith::{self, mask, sext};
use super::memory;
use super::thread::{Ctx, Thread};
use super::Error;
use crate::ir::{
    rows_offset, Address, BinaryOp, FloatFormat, FloatMode, Fragment, Kernel, MatrixAccum,
    MatrixElem, MatrixInst, Mma, MmaForm, OpTy, RegId, Rounding, Space, Value, WmmaAccess,
    WmmaSpace, LOCAL_WINDOW, SHARED_WINDOW,
};

const F32: OpTy = OpTy::F(32);

/// The lanes of a warp at one matrix instruction: `present` has bit `l` set when lane
/// `l` takes part.
struct Lanes<'w, 'a> {
    warp: &'w mut [Thread<'a>],
    present: u64,
}

impl Lanes<'_, '_> {
    fn has(&self, lane: usize) -> bool {
        lane < self.warp.len() && self.present >> lane & 1 != 0
    }

    /// `v` of `lane` as a `bits`-bit value, 0 for a lane that does not take part.
    fn get(&self, lane: usize, v: Value, bits: u32) -> u64 {
        if self.has(lane) {
            self.warp[lane].get(v) & mask(bits)
        } else {
            0
        }
    }

    fn set(&mut self, k: &Kernel, lane: usize, r: RegId, v: u64) {
        if self.has(lane) {
            self.warp[lane].set(k, r, v);
        }
    }
}

/// `(g, t)` of a lane: its group and its place in the group.
fn coordinates(lane: usize) -> (u32, u32) {
    ((lane >> 2) as u32, (lane % 4) as u32)
}

/// Where element `j` of A's register `r` lies in a tile of `form`: (row, column).
fn a_place(form: &MmaForm, lane: usize, r: u32, j: u32) -> (u32, u32) {
    let (g, t) = coordinates(lane);
    let (p, halves) = (form.a.per_register(), form.m / 8);
    (g + 8 * (r % halves), 4 * p * (r / halves) + p * t + j)
}

/// Where element `j` of B's register `r` lies: (row, column).
fn b_place(form: &MmaForm, lane: usize, r: u32, j: u32) -> (u32, u32) {
    let (g, t) = coordinates(lane);
    let p = form.b.per_register();
    (4 * p * r + p * t + j, g)
}

/// Where C's or D's element `i` lies: (row, column).
fn c_place(lane: usize, i: u32) -> (u32, u32) {
    let (g, t) = coordinates(lane);
    (g + 8 * (i / 2), 2 * t + i % 2)
}

/// Element `j` of an input register holding `bits`-bit elements.
fn input_element(reg: u64, elem: MatrixElem, j: u32) -> u64 {
    match elem {
        MatrixElem::F64 => reg,
        e => reg >> (j * e.bits()) & mask(e.bits()),
    }
}

/// Runs matrix instruction `m` (at `span`) for the lanes of `warp` in `present`.
pub(super) fn run(
    cx: &mut Ctx<'_>,
    warp: &mut [Thread<'_>],
    present: u64,
    m: &MatrixInst,
    span: Span,
) -> Result<(), Error> {
    let k = cx.k;
    let mut lanes = Lanes { warp, present };
    match m {
        MatrixInst::Mma(x) => mma(k, &mut lanes, x),
        MatrixInst::LoadRows { trans, addr, generic, dsts } => {
            let rows = row_offsets(k, &lanes, addr, *generic);
            load_rows(cx, &mut lanes, *trans, &rows, dsts, span)?
        }
        MatrixInst::StoreRows { trans, addr, generic, srcs } => {
            let rows = row_offsets(k, &lanes, addr, *generic);
            store_rows(cx, &lanes, *trans, &rows, srcs, span)?
        }
        MatrixInst::Transpose { dst, src } => {
            let words: Vec<u64> = (0..32).map(|l| lanes.get(l, *src, 32)).collect();
            for lane in 0..32 {
                let (g, t) = coordinates(lane);
                // Element (g, 2t + j) of the transpose is the source's (2t + j, g): half
                // g % 2 of the lane holding row 2t + j, columns g & !1 and g | 1.
                let half = |row: u32| words[(4 * row + g / 2) as usize] >> (16 * (g % 2)) & 0xffff;
                let v = half(2 * t) | half(2 * t + 1) << 16;
                lanes.set(k, lane, *dst, v);
            }
        }
        MatrixInst::WmmaLoad(w, dsts) => wmma_load(cx, &mut lanes, w, dsts, span)?,
        MatrixInst::WmmaStore(w, srcs) => wmma_store(cx, &mut lanes, w, srcs, span)?,
    }
    Ok(())
}

/// The lanes' fragments of one `mma` tile: registers `a`, `b`, `c` of each lane.
struct Tile<'f> {
    a: &'f [Value],
    b: &'f [Value],
    c: &'f [Value],
}

/// D's elements of one tile of `form`, by row and column.
fn product(lanes: &Lanes<'_, '_>, form: &MmaForm, f: &Tile<'_>) -> Vec<Vec<u64>> {
    let (m, n, kk) = (form.m as usize, form.n as usize, form.k as usize);
    let mut a = vec![vec![0u64; kk]; m];
    let mut b = vec![vec![0u64; n]; kk];
    let mut c = vec![vec![0u64; n]; m];
    for lane in 0..32 {
        for (r, &v) in f.a.iter().enumerate() {
            let reg = lanes.get(lane, v, form.a.reg_ty().bits());
            for j in 0..form.a.per_register() {
                let (row, col) = a_place(form, lane, r as u32, j);
                a[row as usize][col as usize] = input_element(reg, form.a, j);
            }
        }
        for (r, &v) in f.b.iter().enumerate() {
            let reg = lanes.get(lane, v, form.b.reg_ty().bits());
            for j in 0..form.b.per_register() {
                let (row, col) = b_place(form, lane, r as u32, j);
                b[row as usize][col as usize] = input_element(reg, form.b, j);
            }
        }
        for i in 0..form.elements() {
            let (row, col) = c_place(lane, i);
            let v = if form.c == MatrixAccum::F16 {
                let word = lanes.get(lane, f.c[(i / 2) as usize], 32);
                arith::widen(FloatFormat::F16, word >> (16 * (i % 2)) & 0xffff)
            } else {
                lanes.get(lane, f.c[i as usize], form.c.reg_ty().bits())
            };
            c[row as usize][col as usize] = v;
        }
    }
    let mut d = c.clone();
    for (row, d_row) in d.iter_mut().enumerate() {
        for (col, out) in d_row.iter_mut().enumerate() {
            let column: Vec<u64> = b.iter().map(|b_row| b_row[col]).collect();
            *out = dot(form, &a[row], &column, c[row][col]);
        }
    }
    d
}

/// `c + Σ_k a_k·b_k` in k order as the IR specifies it for `form`'s types.
fn dot(form: &MmaForm, a: &[u64], b: &[u64], c: u64) -> u64 {
    let pairs = a.iter().zip(b);
    match (form.a, form.b) {
        (MatrixElem::Bit, _) => {
            let op = form.popc.unwrap_or(BinaryOp::And);
            let ones = pairs.filter(|(x, y)| {
                arith::binary(op, OpTy::U(32), FloatMode::default(), **x, **y) & 1 != 0
            });
            (c as u32).wrapping_add(ones.count() as u32).into()
        }
        (MatrixElem::Float(fa), MatrixElem::Float(fb)) => {
            let keep =
                |f: FloatFormat, v: u64| if f == FloatFormat::Tf32 { v & 0xffff_e000 } else { v };
            let mode = FloatMode::default();
            pairs.fold(c, |acc, (x, y)| {
                let x = arith::widen(fa, keep(fa, *x));
                let y = arith::widen(fb, keep(fb, *y));
                let product = arith::binary(BinaryOp::Mul, F32, mode, x, y);
                arith::binary(BinaryOp::Add, F32, mode, acc, product)
            })
        }
        (MatrixElem::F64, _) => {
            pairs.fold(c, |acc, (x, y)| arith::fma(OpTy::F(64), FloatMode::default(), *x, *y, acc))
        }
        (MatrixElem::Int { bits, signed: sa }, MatrixElem::Int { signed: sb, .. }) => {
            let value = |v: u64, signed: bool| if signed { sext(v, bits) } else { v as i64 };
            let sum: i64 = pairs.map(|(x, y)| value(*x, sa) * value(*y, sb)).sum();
            let total = sum + sext(c, 32);
            let total = if form.satfinite {
                total.clamp(i64::from(i32::MIN), i64::from(i32::MAX))
            } else {
                total
            };
            total as u64 & mask(32)
        }
        _ => 0,
    }
}

/// `mma` and `wmma.mma`: every tile's D computed from the registers before any is
/// written (D may name C's registers).
fn mma(k: &Kernel, lanes: &mut Lanes<'_, '_>, x: &Mma) {
    let tile = x.tile();
    let (row_tiles, col_tiles) = ((x.form.m / tile.m) as usize, (x.form.n / tile.n) as usize);
    let (ar, br) = (tile.a_regs() as usize, tile.b_regs() as usize);
    let (cr, dr) = (tile.acc_regs(tile.c) as usize, tile.acc_regs(tile.d) as usize);
    let mut results = Vec::new();
    for rt in 0..row_tiles {
        for ct in 0..col_tiles {
            let n = rt * col_tiles + ct;
            let f = Tile {
                a: &x.a[rt * ar..(rt + 1) * ar],
                b: &x.b[ct * br..(ct + 1) * br],
                c: &x.c[n * cr..(n + 1) * cr],
            };
            results.push(product(lanes, &tile, &f));
        }
    }
    for (n, d) in results.iter().enumerate() {
        let regs = &x.d[n * dr..(n + 1) * dr];
        for lane in 0..32 {
            let element = |i: u32| {
                let (row, col) = c_place(lane, i);
                d[row as usize][col as usize]
            };
            for (j, &r) in regs.iter().enumerate() {
                let j = j as u32;
                let v = if tile.d == MatrixAccum::F16 {
                    let half = |v: u64| {
                        arith::narrow(FloatFormat::F16, F32, Rounding::Nearest, false, false, v)
                    };
                    half(element(2 * j)) | half(element(2 * j + 1)) << 16
                } else {
                    element(j)
                };
                lanes.set(k, lane, r, v);
            }
        }
    }
}

/// Each lane's shared-window offset of an `ldmatrix`/`stmatrix` address
/// (`ir::rows_offset`).
fn row_offsets(k: &Kernel, lanes: &Lanes<'_, '_>, addr: &Address, generic: bool) -> Vec<u64> {
    let base = |lane: usize| {
        addr.base.map(|b| {
            let bits = k.reg(b).ty.bits();
            (lanes.get(lane, Value::Reg(b), bits), bits)
        })
    };
    // An absent lane gives no address (0, as its registers read).
    let offset = |lane| if lanes.has(lane) { rows_offset(addr, generic, base(lane)) } else { 0 };
    (0..32).map(offset).collect()
}

/// `ldmatrix`: lane `8i + r` gives row `r` of matrix `i`.
fn load_rows(
    cx: &Ctx<'_>,
    lanes: &mut Lanes<'_, '_>,
    trans: bool,
    rows: &[u64],
    dsts: &[RegId],
    span: Span,
) -> Result<(), Error> {
    let element = |matrix: usize, row: u32, col: u32| -> Result<u64, Error> {
        let at = rows[8 * matrix + row as usize].wrapping_add(2 * u64::from(col)) & mask(32);
        let fault = Error::Fault { space: "shared", addr: at, size: 2, span };
        memory::read(&cx.shared, at, 2).ok_or(fault)
    };
    let mut values = Vec::new();
    for lane in (0..32).filter(|&l| lanes.has(l)) {
        let (g, t) = coordinates(lane);
        for (matrix, &dst) in dsts.iter().enumerate() {
            let (lo, hi) = if trans {
                (element(matrix, 2 * t, g)?, element(matrix, 2 * t + 1, g)?)
            } else {
                (element(matrix, g, 2 * t)?, element(matrix, g, 2 * t + 1)?)
            };
            values.push((lane, dst, lo | hi << 16));
        }
    }
    for (lane, r, v) in values {
        lanes.set(cx.k, lane, r, v);
    }
    Ok(())
}

/// `stmatrix`: lane `8i + r` stores row `r` of matrix `i` at its address.
fn store_rows(
    cx: &mut Ctx<'_>,
    lanes: &Lanes<'_, '_>,
    trans: bool,
    rows: &[u64],
    srcs: &[Value],
    span: Span,
) -> Result<(), Error> {
    // Element (row, col) of fragment `matrix`: half col % 2 of lane 4 row + col / 2.
    let fragment = |matrix: usize, row: u32, col: u32| {
        lanes.get((4 * row + col / 2) as usize, srcs[matrix], 32) >> (16 * (col % 2)) & 0xffff
    };
    for lane in (0..32).filter(|&l| lanes.has(l) && l / 8 < srcs.len()) {
        let (matrix, row) = (lane / 8, (lane % 8) as u32);
        let at = rows[lane];
        for col in 0..8u32 {
            let v = if trans { fragment(matrix, col, row) } else { fragment(matrix, row, col) };
            let a = at.wrapping_add(2 * u64::from(col)) & mask(32);
            let fault = Error::Fault { space: "shared", addr: a, size: 2, span };
            memory::write(&mut cx.shared, a, 2, v).ok_or(fault)?;
        }
    }
    Ok(())
}

/// Where element `e` of a WMMA fragment's register `reg` lies in the whole matrix:
/// its tile's `mma` place, moved by the tile's row and column.
fn wmma_place(w: &WmmaAccess, lane: usize, reg: u32, e: u32) -> (u32, u32) {
    let tile = w.tile();
    match w.which {
        Fragment::A => {
            let (rt, r) = (reg / tile.a_regs(), reg % tile.a_regs());
            let (row, col) = a_place(&tile, lane, r, e);
            (row + rt * tile.m, col)
        }
        Fragment::B => {
            let (ct, r) = (reg / tile.b_regs(), reg % tile.b_regs());
            let (row, col) = b_place(&tile, lane, r, e);
            (row, col + ct * 8)
        }
        Fragment::C => {
            let per_tile = tile.acc_regs(tile.c);
            let (index, r) = (reg / per_tile, reg % per_tile);
            let col_tiles = w.shape.1 / 8;
            let i = if tile.c == MatrixAccum::F16 { 2 * r + e } else { r };
            let (row, col) = c_place(lane, i);
            (row + (index / col_tiles) * tile.m, col + (index % col_tiles) * 8)
        }
    }
}

/// The space and address of element (row, col) of `lane`'s matrix: 32-bit index
/// arithmetic (PTX's `.u32` stride), added to the base at its width.
fn wmma_address(
    k: &Kernel,
    lanes: &Lanes<'_, '_>,
    w: &WmmaAccess,
    lane: usize,
    (row, col): (u32, u32),
) -> (Space, u64) {
    let stride = lanes.get(lane, w.stride, 32) as u32;
    let (major, minor) = if w.row_major { (row, col) } else { (col, row) };
    let index = major.wrapping_mul(stride).wrapping_add(minor);
    let offset = u64::from(index.wrapping_mul(w.data.bytes()));
    let (base, bits) = match w.addr.base {
        Some(b) => {
            let bits = k.reg(b).ty.bits();
            (lanes.get(lane, Value::Reg(b), bits), bits)
        }
        None => (0, 32),
    };
    let at = base.wrapping_add(offset) & mask(bits);
    let at = at.wrapping_add(w.addr.offset as u64);
    // A 32-bit generic address of a module with 32-bit addresses is in the 32-bit
    // windows (`pass::widen_generic`).
    if w.space == WmmaSpace::Generic && k.address_size == 32 && bits == 32 {
        return memory::narrow_generic_place(at as u32);
    }
    // A window's offset is the address's low half; a generic address's upper half says
    // which window, if any (`crate::ir::SHARED_WINDOW`, `LOCAL_WINDOW`).
    let space = match w.space {
        WmmaSpace::In(space) | WmmaSpace::Window(space) => space,
        WmmaSpace::Generic if at >> 32 == SHARED_WINDOW >> 32 => Space::Shared,
        WmmaSpace::Generic if at >> 32 == LOCAL_WINDOW >> 32 => Space::Local,
        WmmaSpace::Generic => Space::Global,
    };
    (space, if space == Space::Global { at } else { at & mask(32) })
}

fn read(
    cx: &Ctx<'_>,
    t: &Thread<'_>,
    space: Space,
    at: u64,
    size: u32,
    span: Span,
) -> Result<u64, Error> {
    let fault = || Error::Fault { space: space.name(), addr: at, size, span };
    match space {
        Space::Global => cx.memory.read(at, size, span),
        Space::Shared => memory::read(&cx.shared, at, size).ok_or_else(fault),
        Space::Local => memory::read(&t.local, at, size).ok_or_else(fault),
        Space::Param => cx.memory.read(cx.param_base + at, size, span).map_err(|_| fault()),
        // `wmma_address` resolves a generic address.
        Space::Generic => Err(fault()),
    }
}

/// `wmma.load`: each element of the registers the tiles fill; the others repeat them.
fn wmma_load(
    cx: &mut Ctx<'_>,
    lanes: &mut Lanes<'_, '_>,
    w: &WmmaAccess,
    dsts: &[RegId],
    span: Span,
) -> Result<(), Error> {
    let (filled, _) = w.regs();
    let (bytes, per) = (w.data.bytes(), w.data.per_register());
    let taking: Vec<usize> = (0..32).filter(|&l| lanes.has(l)).collect();
    for lane in taking {
        let mut values = Vec::new();
        for reg in 0..filled {
            let mut v = 0;
            for e in 0..per {
                let place = wmma_place(w, lane, reg, e);
                let (space, at) = wmma_address(cx.k, lanes, w, lane, place);
                let x = read(cx, &lanes.warp[lane], space, at, bytes, span)?;
                v |= x << (8 * bytes * e);
            }
            values.push(v);
        }
        for (n, &r) in dsts.iter().enumerate() {
            lanes.set(cx.k, lane, r, values[n % filled as usize]);
        }
    }
    Ok(())
}

/// `wmma.store`: each element of the registers the tiles fill, lane by lane.
fn wmma_store(
    cx: &mut Ctx<'_>,
    lanes: &mut Lanes<'_, '_>,
    w: &WmmaAccess,
    srcs: &[Value],
    span: Span,
) -> Result<(), Error> {
    let (filled, _) = w.regs();
    let (bytes, per) = (w.data.bytes(), w.data.per_register());
    let bits = w.data.reg_ty().bits();
    let taking: Vec<usize> = (0..32).filter(|&l| lanes.has(l)).collect();
    for lane in taking {
        for (reg, &src) in srcs.iter().enumerate().take(filled as usize) {
            let value = lanes.get(lane, src, bits);
            for e in 0..per {
                let place = wmma_place(w, lane, reg as u32, e);
                let (space, at) = wmma_address(cx.k, lanes, w, lane, place);
                let x = value >> (8 * bytes * e) & mask(8 * bytes);
                let fault = Error::Fault { space: space.name(), addr: at, size: bytes, span };
                match space {
                    Space::Global => cx.memory.write(at, bytes, x, span)?,
                    Space::Shared => memory::write(&mut cx.shared, at, bytes, x).ok_or(fault)?,
                    Space::Local => {
                        memory::write(&mut lanes.warp[lane].local, at, bytes, x).ok_or(fault)?
                    }
                    Space::Param | Space::Generic => return Err(fault),
                }
            }
        }
    }
    Ok(())
}
