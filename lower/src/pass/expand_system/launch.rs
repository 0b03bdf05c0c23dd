//! The device-side launches ([`InstKind::DeviceLaunch`], [`LaunchInst`]) in accesses of
//! the grid's launch arena, whose address the system area holds
//! ([`crate::system::LAUNCH_ARENA`]; the arena's layout is [`crate::device_launch`]'s):
//!
//! * a parameter buffer: the arena's data bounds and a plain read of its counter (once
//!   the region is exhausted, later requests take nothing, so the counter cannot wrap
//!   however many threads ask), the request's alignment (64, 128 or the largest) and
//!   size checked, an atomic add of what it needs (header, size rounded up to 64, the
//!   alignment's padding), the aligned buffer or 0 and the last error; with a
//!   configuration, its stores into the header where it fits;
//! * a launch: the buffer's header tested to be in the data region, the configuration
//!   stored (or loaded: V2) and the stream stored, the kernel, CUDA's configuration
//!   limits and the nesting depth tested in turn (the first failure is the error), a
//!   slot of the table claimed with an atomic add and the header's offset stored there
//!   where the table has room; a failure becomes the last error.

use super::{Expand, U32, U64};
use crate::build::Build;
use crate::device_launch as dl;
use crate::ir::{
    Address, BinaryOp, CmpOp, InstKind, LaunchConfig, LaunchInst, OpTy, RegId, Space, Value,
};
use crate::pass::expander::Blocks;
use crate::system as sys;

impl Expand<'_> {
    /// A device-side launch operation (module doc).
    pub(super) fn device_launch(&mut self, l: &LaunchInst) {
        match *l {
            LaunchInst::ParameterBuffer { dst, last_error, align, size, config } => {
                self.parameter_buffer(dst, last_error, align, size, config)
            }
            LaunchInst::Launch { dst, last_error, buffer, stream, config } => {
                self.launch(dst, last_error, buffer, stream, config)
            }
        }
    }

    /// The launch arena's address.
    fn arena(&mut self) -> RegId {
        let area = self.area();
        let arena = self.temp(U64);
        let addr = Address { base: Some(area), offset: i64::from(sys::LAUNCH_ARENA) };
        self.push(InstKind::Load { space: Space::Global, ty: U64, dsts: vec![Some(arena)], addr });
        arena
    }

    /// A 32-bit load at `base + offset`.
    fn load32(&mut self, base: RegId, offset: u32) -> Value {
        self.load_at(base, offset, U32)
    }

    fn load_at(&mut self, base: RegId, offset: u32, ty: OpTy) -> Value {
        let r = self.temp(ty);
        let addr = Address { base: Some(base), offset: i64::from(offset) };
        self.push(InstKind::Load { space: Space::Global, ty, dsts: vec![Some(r)], addr });
        Value::Reg(r)
    }

    /// A parameter buffer (module doc): into `dst`.
    fn parameter_buffer(
        &mut self,
        dst: RegId,
        last_error: RegId,
        align: Value,
        size: Value,
        config: Option<LaunchConfig>,
    ) {
        let arena = self.arena();
        let at = |offset: u32| Address { base: Some(arena), offset: i64::from(offset) };
        let start = self.load32(arena, dl::DATA_START);
        let end = self.load32(arena, dl::DATA_END);
        let used_now = self.load32(arena, dl::USED);
        let slot = u64::from(dl::SLOT_ALIGN);
        let a128 = self.cmp(CmpOp::Le, U64, align, Value::Imm(128));
        let a = self.sel(U64, a128, Value::Imm(128), Value::Imm(u64::from(dl::MAX_ALIGN)));
        let a64 = self.cmp(CmpOp::Le, U64, align, Value::Imm(slot));
        let a = self.sel(U64, a64, Value::Imm(slot), a);
        let align_ok = self.cmp(CmpOp::Le, U64, align, Value::Imm(u64::from(dl::MAX_ALIGN)));
        let size_ok = self.cmp(CmpOp::Le, U64, size, Value::Imm(u64::from(dl::MAX_PARAM_BYTES)));
        let ok = self.pred_and(align_ok, size_ok);
        let span_now = self.bin(BinaryOp::Sub, U32, end, start);
        let room_left = self.cmp(CmpOp::Lt, U32, used_now, span_now);
        let ok = self.pred_and(ok, room_left);
        // need = HEADER + round_up(size, 64) + (a - 64), all small once `ok`.
        let size = self.sel(U64, ok, size, Value::Imm(0));
        let rounded = self.add(U64, size, Value::Imm(slot - 1));
        let rounded = self.and(U64, rounded, Value::Imm(!(slot - 1)));
        let pad = self.bin(BinaryOp::Sub, U64, a, Value::Imm(slot));
        let need = self.add(U64, rounded, pad);
        let need = self.add(U64, need, Value::Imm(u64::from(dl::HEADER_BYTES)));
        let need = self.lo32(need);
        let take = self.sel(U32, ok, need, Value::Imm(0));
        let old = self.atomic_add_global(U32, at(dl::USED), take);
        // It fits when old + need <= end - start (in 64 bits: no wrap).
        let old64 = self.cvt(U64, U32, Value::Reg(old));
        let need64 = self.cvt(U64, U32, need);
        let last = self.add(U64, old64, need64);
        let region = self.cvt(U64, U32, span_now);
        let inside = self.cmp(CmpOp::Le, U64, last, region);
        let fits = self.pred_and(ok, inside);
        // The buffer: round_up(start + old + HEADER, a); its header just before.
        let start64 = self.cvt(U64, U32, start);
        let off = self.add(U64, start64, old64);
        let off = self.add(U64, off, Value::Imm(u64::from(dl::HEADER_BYTES)));
        let mask = self.bin(BinaryOp::Sub, U64, a, Value::Imm(1));
        let off = self.add(U64, off, mask);
        let not_mask = self.not(U64, mask);
        let off = self.and(U64, off, not_mask);
        let buffer = self.add(U64, Value::Reg(arena), off);
        self.select_into(U64, dst, fits, buffer, Value::Imm(0));
        let failed = Value::Imm(u64::from(dl::CUDA_ERROR_LAUNCH_PENDING_COUNT_EXCEEDED));
        let err = self.sel(U32, fits, Value::Reg(last_error), failed);
        self.mov(U32, last_error, err);
        if let Some(config) = config {
            let header = self.temp(U64);
            let h = self.bin(
                BinaryOp::Sub,
                U64,
                Value::Reg(dst),
                Value::Imm(u64::from(dl::HEADER_BYTES)),
            );
            self.mov(U64, header, h);
            let done = self.new_block();
            self.branch(fits, done);
            self.store_config(header, &config);
            self.end_block(crate::ir::Terminator::Jump(done), done);
        }
    }

    /// Writes a launch's function, grid, block and shared size into the buffer header
    /// at `header`.
    fn store_config(&mut self, header: RegId, c: &LaunchConfig) {
        let at = |offset: u32| Address { base: Some(header), offset: i64::from(offset) };
        let mut stores = vec![(dl::H_FUNC, U64, c.func), (dl::H_SHARED, U32, c.shared)];
        for k in 0..3 {
            stores.push((dl::H_GRID + 4 * k as u32, U32, c.grid[k]));
            stores.push((dl::H_BLOCK + 4 * k as u32, U32, c.block[k]));
        }
        for (offset, ty, v) in stores {
            self.store_global(ty, at(offset), v);
        }
    }

    /// Reads a launch's configuration from the buffer header at `header` (V2).
    fn load_config(&mut self, header: RegId) -> LaunchConfig {
        let func = self.load_at(header, dl::H_FUNC, U64);
        let shared = self.load_at(header, dl::H_SHARED, U32);
        let grid = [0, 1, 2].map(|k| self.load_at(header, dl::H_GRID + 4 * k, U32));
        let block = [0, 1, 2].map(|k| self.load_at(header, dl::H_BLOCK + 4 * k, U32));
        LaunchConfig { func, grid, block, shared }
    }

    /// The kernels a launch may name: the module's, in name order
    /// ([`crate::ir::Kernel::device_launches`], whose one empty name stands for none).
    fn launch_targets(&self) -> u64 {
        self.k.device_launches.iter().filter(|n| !n.is_empty()).count() as u64
    }

    /// A launch (module doc): its `cudaError_t` into `dst`.
    fn launch(
        &mut self,
        err: RegId,
        last_error: RegId,
        buffer: Value,
        stream: Value,
        config: Option<LaunchConfig>,
    ) {
        let arena = self.arena();
        let kernels = self.launch_targets();
        let at = |offset: u32| Address { base: Some(arena), offset: i64::from(offset) };
        let start = self.load32(arena, dl::DATA_START);
        let end = self.load32(arena, dl::DATA_END);
        let header = self.temp(U64);
        self.mov(U32, err, Value::Imm(u64::from(dl::CUDA_ERROR_INVALID_VALUE)));
        // The buffer must be one of this grid's: header inside the data region.
        let off = self.bin(BinaryOp::Sub, U64, buffer, Value::Reg(arena));
        let start64 = self.cvt(U64, U32, start);
        let first = self.add(U64, start64, Value::Imm(u64::from(dl::HEADER_BYTES)));
        let end64 = self.cvt(U64, U32, end);
        let above = self.cmp(CmpOp::Ge, U64, off, first);
        let below = self.cmp(CmpOp::Lt, U64, off, end64);
        let valid = self.pred_and(above, below);
        let h = self.bin(BinaryOp::Sub, U64, buffer, Value::Imm(u64::from(dl::HEADER_BYTES)));
        self.mov(U64, header, h);
        let done = self.new_block();
        self.branch(valid, done);
        let c = match config {
            Some(c) => {
                self.store_config(header, &c);
                c
            }
            None => self.load_config(header),
        };
        let stream_at = Address { base: Some(header), offset: i64::from(dl::H_STREAM) };
        self.store_global(U64, stream_at, stream);
        let depth = self.load32(arena, dl::DEPTH);
        // The kernel: one of the module's (an address in the kernel window).
        let index = self.bin(BinaryOp::Sub, U64, c.func, Value::Imm(dl::KERNEL_WINDOW + 1));
        let func_ok = self.cmp(CmpOp::Lt, U64, index, Value::Imm(kernels));
        // CUDA's configuration rules: every dimension at least 1, grid x below 2^31,
        // y and z at most 65535, at most 1024 threads (x, y ≤ 1024, z ≤ 64).
        let mut cfg_ok = self.cmp(CmpOp::Ge, U32, c.grid[0], Value::Imm(1));
        let limits = [
            (c.grid[0], i32::MAX as u64),
            (c.grid[1], 65_535),
            (c.grid[2], 65_535),
            (c.block[0], 1024),
            (c.block[1], 1024),
            (c.block[2], 64),
        ];
        for (v, max) in limits {
            let lo = self.cmp(CmpOp::Ge, U32, v, Value::Imm(1));
            let hi = self.cmp(CmpOp::Le, U32, v, Value::Imm(max));
            cfg_ok = self.pred_and(cfg_ok, lo);
            cfg_ok = self.pred_and(cfg_ok, hi);
        }
        let threads = self.bin(BinaryOp::Mul, U32, c.block[0], c.block[1]);
        let threads = self.bin(BinaryOp::Mul, U32, threads, c.block[2]);
        let few = self.cmp(CmpOp::Le, U32, threads, Value::Imm(1024));
        let cfg_ok = self.pred_and(cfg_ok, few);
        let shallow = self.cmp(CmpOp::Lt, U32, depth, Value::Imm(u64::from(dl::MAX_DEPTH)));
        let code = |c: u32| Value::Imm(u64::from(c));
        let e1 = self.sel(U32, shallow, code(0), code(dl::CUDA_ERROR_LAUNCH_MAX_DEPTH_EXCEEDED));
        let e2 = self.sel(U32, cfg_ok, e1, code(dl::CUDA_ERROR_INVALID_CONFIGURATION));
        let e3 = self.sel(U32, func_ok, e2, code(dl::CUDA_ERROR_INVALID_DEVICE_FUNCTION));
        self.mov(U32, err, e3);
        let ok = self.cmp(CmpOp::Eq, U32, e3, Value::Imm(0));
        self.branch(ok, done);
        // Claim a slot; past the room the launch fails.
        let room = self.load32(arena, dl::ROOM);
        let slot = self.atomic_add_global(U32, at(dl::COUNT), Value::Imm(1));
        let fits = self.cmp(CmpOp::Lt, U32, Value::Reg(slot), room);
        let full = dl::CUDA_ERROR_LAUNCH_PENDING_COUNT_EXCEEDED;
        let code = self.sel(U32, fits, Value::Imm(0), Value::Imm(u64::from(full)));
        self.mov(U32, err, code);
        let slot64 = self.cvt(U64, U32, Value::Reg(slot));
        let entry = self.bin(BinaryOp::Mul, U64, slot64, Value::Imm(4));
        let entry = self.add(U64, entry, Value::Reg(arena));
        let entry_reg = self.temp(U64);
        self.mov(U64, entry_reg, entry);
        let header_off = self.bin(BinaryOp::Sub, U64, Value::Reg(header), Value::Reg(arena));
        let header_off = self.lo32(header_off);
        self.branch(fits, done);
        let table = Address { base: Some(entry_reg), offset: i64::from(dl::TABLE) };
        self.store_global(U32, table, header_off);
        self.end_block(crate::ir::Terminator::Jump(done), done);
        let failed = self.cmp(CmpOp::Ne, U32, Value::Reg(err), Value::Imm(0));
        let last = self.sel(U32, failed, Value::Reg(err), Value::Reg(last_error));
        self.mov(U32, last_error, last);
    }
}
