//! Emission of loads, stores, atomics and fences: addresses in each state space and the
//! shared and local windows' words.

use super::*;

impl FnEmitter<'_> {
    /// Loads, stores, atomics and fences.
    pub(super) fn memory_inst(&mut self, kind: &InstKind) -> R<()> {
        match kind {
            InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp } => {
                let old = self.atomic(*op, *space, *ty, *scope, *order, addr, *src, *cmp)?;
                match dst {
                    Some(d) => self.write(*d, old, Scalar::Int(ty.bits() as u8), false),
                    None => Ok(()),
                }
            }
            InstKind::Load { space, ty, dsts, addr } => {
                for (i, d) in dsts.iter().enumerate() {
                    let off = i as i64 * (ty.bits() / 8) as i64;
                    let v = self.load_mem(*space, *ty, addr, off)?;
                    if let Some(d) = d {
                        self.write_op(*d, v, *ty)?;
                    }
                }
                Ok(())
            }
            InstKind::Store { space, ty, srcs, addr } => {
                for (i, s) in srcs.iter().enumerate() {
                    let off = i as i64 * (ty.bits() / 8) as i64;
                    let v = self.read_op(*s, *ty)?;
                    self.store_mem(*space, *ty, addr, off, v)?;
                }
                Ok(())
            }
            InstKind::Fence { device_scope } => {
                let scope =
                    self.t.u32(self.b, if *device_scope { SCOPE_DEVICE } else { SCOPE_WORKGROUP });
                let sem =
                    self.t.u32(self.b, SEM_ACQ_REL | SEM_WORKGROUP_MEMORY | SEM_UNIFORM_MEMORY);
                self.b.memory_barrier(scope, sem)?;
                Ok(())
            }
            other => Err(Error::Internal(format!("`{other:?}` reached the memory emitter"))),
        }
    }

    /// The 64-bit address `addr + extra` for global and parameter accesses.
    pub(super) fn address64(&mut self, space: Space, addr: &Address, extra: i64) -> R<Word> {
        let s64 = Scalar::Int(64);
        let t64 = self.ty(s64);
        if self.k.address_size == 32 && space == Space::Global {
            if let Some(a) = self.window_address(addr, extra)? {
                return Ok(a);
            }
        }
        let base = match (space, addr.base) {
            (Space::Param, _) => Some(self.push_member(ptxvk_abi::member::PARAM_ADDRESS, s64)?),
            (_, Some(r)) => {
                let (v, have) = self.load_reg(r)?;
                Some(if have.bits() == 32 { self.b.u_convert(t64, None, v)? } else { v })
            }
            (_, None) => None,
        };
        let off = addr.offset.wrapping_add(extra) as u64;
        let k = self.konst(s64, off);
        Ok(match base {
            Some(b) if off != 0 => self.b.i_add(t64, None, b, k)?,
            Some(b) => b,
            None => k,
        })
    }

    /// A global address of a module with 32-bit addresses (`Kernel::address_size`): the
    /// 32-bit offset `addr + extra`, wrapping as PTX's 32-bit arithmetic does, plus the
    /// address window's base. `None` for an address in a 64-bit register (the module
    /// data's, which sema forms from its 64-bit device address).
    pub(super) fn window_address(&mut self, addr: &Address, extra: i64) -> R<Option<Word>> {
        if addr.base.is_some_and(|r| self.k.reg(r).ty.bits() != 32) {
            return Ok(None);
        }
        let (s32, s64) = (Scalar::Int(32), Scalar::Int(64));
        let (t32, t64) = (self.ty(s32), self.ty(s64));
        let off = self.konst(s32, addr.offset.wrapping_add(extra) as u64 & 0xffff_ffff);
        let offset = match addr.base {
            None => off,
            Some(r) => {
                let (v, _) = self.load_reg(r)?;
                self.b.i_add(t32, None, v, off)?
            }
        };
        let wide = self.b.u_convert(t64, None, offset)?;
        let base = self.push_member(ptxvk_abi::member::WINDOW_BASE, s64)?;
        Ok(Some(self.b.i_add(t64, None, base, wide)?))
    }

    /// The 32-bit byte offset `addr + extra` into the shared window.
    pub(super) fn address32(&mut self, addr: &Address, extra: i64) -> R<Word> {
        let s32 = Scalar::Int(32);
        let t32 = self.ty(s32);
        let off = self.konst(s32, addr.offset.wrapping_add(extra) as u64);
        match addr.base {
            None => Ok(off),
            Some(r) => {
                let (v, have) = self.load_reg(r)?;
                let v = if have.bits() == 64 { self.b.u_convert(t32, None, v)? } else { v };
                Ok(self.b.i_add(t32, None, v, off)?)
            }
        }
    }

    pub(super) fn psb_pointer(&mut self, ty: OpTy, address: Word) -> R<(Word, Word)> {
        let s = Scalar::of_op(ty);
        match ty.bits() {
            8 => self.t.used.storage8 = true,
            16 => self.t.used.storage16 = true,
            _ => {}
        }
        let vt = self.ty(s);
        let pt = self.t.pointer(self.b, StorageClass::PhysicalStorageBuffer, vt);
        Ok((self.b.convert_u_to_ptr(pt, None, address)?, vt))
    }

    pub(super) fn load_mem(
        &mut self,
        space: Space,
        ty: OpTy,
        addr: &Address,
        extra: i64,
    ) -> R<Word> {
        if matches!(space, Space::Shared | Space::Local) {
            return self.load_window(space, ty, addr, extra);
        }
        let a = self.address64(space, addr, extra)?;
        let (p, vt) = self.psb_pointer(ty, a)?;
        let align = ty.bits() / 8;
        Ok(self.b.load(vt, None, p, Some(MemoryAccess::ALIGNED), [Operand::LiteralBit32(align)])?)
    }

    pub(super) fn store_mem(
        &mut self,
        space: Space,
        ty: OpTy,
        addr: &Address,
        extra: i64,
        v: Word,
    ) -> R<()> {
        if matches!(space, Space::Shared | Space::Local) {
            return self.store_window(space, ty, addr, extra, v);
        }
        let a = self.address64(space, addr, extra)?;
        let (p, _) = self.psb_pointer(ty, a)?;
        let align = ty.bits() / 8;
        self.b.store(p, v, Some(MemoryAccess::ALIGNED), [Operand::LiteralBit32(align)])?;
        Ok(())
    }

    /// Pointer to 32-bit word `index` of the shared or local window.
    pub(super) fn window_word(&mut self, space: Space, index: Word) -> R<Word> {
        if space == Space::Shared {
            return self.shared_word(index);
        }
        let u32t = self.ty(Scalar::Int(32));
        let pt = self.t.pointer(self.b, StorageClass::Function, u32t);
        let Some(local) = self.local else {
            return Err(Error::Internal("local access without a local window".into()));
        };
        // Out-of-range local addresses are undefined in PTX; clamped here, they stay
        // inside the thread's own array instead of reaching other memory.
        let bt = self.ty(Scalar::Bool);
        let last = self.konst(Scalar::Int(32), u64::from(self.k.local_bytes.div_ceil(4) - 1));
        let over = self.b.u_greater_than(bt, None, index, last)?;
        let index = self.b.select(u32t, None, over, last, index)?;
        Ok(self.b.access_chain(pt, None, local, [index])?)
    }

    /// Pointer to 32-bit word `index` of the shared window.
    pub(super) fn shared_word(&mut self, index: Word) -> R<Word> {
        self.shared_element(SharedWord::U32, index)
    }

    /// Pointer to element `index` of the kernel's shared window, whose elements must be
    /// `word`.
    pub(super) fn shared_element(&mut self, word: SharedWord, index: Word) -> R<Word> {
        let elem = self.ty(Scalar::Int(word.bits() as u8));
        let pt = self.t.pointer(self.b, StorageClass::Workgroup, elem);
        let window = self.g.shared_window(word).filter(|_| self.k.shared.word == word);
        let Some(shared) = window else {
            return Err(Error::Internal(format!(
                "a {}-bit shared element in a window of {}-bit elements",
                word.bits(),
                self.k.shared.word.bits()
            )));
        };
        // Out-of-range shared addresses are undefined in PTX; clamped here, they stay
        // inside the block's window instead of reaching other memory (lavapipe keeps
        // workgroup memory on the host's heap, which a wild store would corrupt).
        let (bt, u32t) = (self.ty(Scalar::Bool), self.ty(Scalar::Int(32)));
        let over = self.b.u_greater_than(bt, None, index, shared.last)?;
        let index = self.b.select(u32t, None, over, shared.last, index)?;
        Ok(self.b.access_chain(pt, None, shared.var, [index])?)
    }

    /// Pointer to the 64-bit word of a wide shared window (`SharedLayout::wide`) that
    /// holds byte `byte`.
    pub(super) fn shared_wide_word(&mut self, byte: Word) -> R<Word> {
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let three = self.konst(s32, 3);
        let index = self.b.shift_right_logical(u32t, None, byte, three)?;
        self.shared_element(SharedWord::U64, index)
    }

    /// The bit position of byte `byte` in its 64-bit word.
    pub(super) fn wide_shift(&mut self, byte: Word) -> R<Word> {
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let seven = self.konst(s32, 7);
        let three = self.konst(s32, 3);
        let lane = self.b.bitwise_and(u32t, None, byte, seven)?;
        Ok(self.b.shift_left_logical(u32t, None, lane, three)?)
    }

    /// A load of one 64-bit word of a wide shared window.
    pub(super) fn load_wide(&mut self, ty: OpTy, byte: Word) -> R<Word> {
        let s64 = Scalar::Int(64);
        let u64t = self.ty(s64);
        if ty.bits() != 64 {
            return Err(Error::Internal("a wide-window load that is not one word".into()));
        }
        let p = self.shared_wide_word(byte)?;
        let w = self.b.load(u64t, None, p, None, [])?;
        self.coerce(w, s64, Scalar::of_op(ty))
    }

    /// A store of `ty` into a wide shared window. A narrower element must not disturb
    /// the rest of its word, which other threads may write concurrently: its bits are
    /// cleared and set with two 64-bit atomics.
    pub(super) fn store_wide(&mut self, ty: OpTy, byte: Word, v: Word) -> R<()> {
        let s64 = Scalar::Int(64);
        let u64t = self.ty(s64);
        let have = Scalar::of_op(ty);
        let p = self.shared_wide_word(byte)?;
        if ty.bits() == 64 {
            let x = self.coerce(v, have, s64)?;
            self.b.store(p, x, None, [])?;
            return Ok(());
        }
        let narrow = Scalar::Int(ty.bits() as u8);
        let n = self.coerce(v, have, narrow)?;
        let w = self.b.u_convert(u64t, None, n)?;
        let sh = self.wide_shift(byte)?;
        let ones = self.konst(s64, u64::MAX >> (64 - ty.bits()));
        let mask = self.b.shift_left_logical(u64t, None, ones, sh)?;
        let not_mask = self.b.not(u64t, None, mask)?;
        let val = self.b.shift_left_logical(u64t, None, w, sh)?;
        self.t.used.int64_atomics = true;
        let scope = self.t.u32(self.b, SCOPE_WORKGROUP);
        let sem = self.t.u32(self.b, 0);
        self.b.atomic_and(u64t, None, p, scope, sem, not_mask)?;
        self.b.atomic_or(u64t, None, p, scope, sem, val)?;
        Ok(())
    }

    /// The element of `space`'s window: the shared window's own, 32-bit words for the
    /// local window.
    pub(super) fn window_word_of(&self, space: Space) -> SharedWord {
        if space == Space::Shared {
            self.k.shared.word
        } else {
            SharedWord::U32
        }
    }

    /// The index of the element holding byte `byte` of a window of `word`s, whose
    /// access must be of the element's width.
    pub(super) fn window_index(&mut self, word: SharedWord, ty: OpTy, byte: Word) -> R<Word> {
        if ty.bits() != word.bits() {
            return Err(Error::Internal("a window access that is not one element".into()));
        }
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let shift = (word.bits() / 8).trailing_zeros();
        if shift == 0 {
            return Ok(byte);
        }
        let shift = self.konst(s32, u64::from(shift));
        Ok(self.b.shift_right_logical(u32t, None, byte, shift)?)
    }

    /// Pointer to element `index` of `space`'s window.
    pub(super) fn window_element(
        &mut self,
        space: Space,
        word: SharedWord,
        index: Word,
    ) -> R<Word> {
        if space == Space::Shared {
            self.shared_element(word, index)
        } else {
            self.window_word(space, index)
        }
    }

    /// A load of one window element (`pass::legalize_memory` makes every window
    /// access one).
    pub(super) fn load_window(
        &mut self,
        space: Space,
        ty: OpTy,
        addr: &Address,
        extra: i64,
    ) -> R<Word> {
        let byte = self.address32(addr, extra)?;
        let word = self.window_word_of(space);
        if word == SharedWord::U64 {
            return self.load_wide(ty, byte);
        }
        let idx = self.window_index(word, ty, byte)?;
        let p = self.window_element(space, word, idx)?;
        let elem = Scalar::Int(word.bits() as u8);
        let elem_ty = self.ty(elem);
        let w = self.b.load(elem_ty, None, p, None, [])?;
        self.coerce(w, elem, Scalar::of_op(ty))
    }

    /// A store of one window element (`pass::legalize_memory` makes every window
    /// access one).
    pub(super) fn store_window(
        &mut self,
        space: Space,
        ty: OpTy,
        addr: &Address,
        extra: i64,
        v: Word,
    ) -> R<()> {
        let byte = self.address32(addr, extra)?;
        let word = self.window_word_of(space);
        if word == SharedWord::U64 {
            return self.store_wide(ty, byte, v);
        }
        let idx = self.window_index(word, ty, byte)?;
        let w = self.coerce(v, Scalar::of_op(ty), Scalar::Int(word.bits() as u8))?;
        let p = self.window_element(space, word, idx)?;
        self.b.store(p, w, None, [])?;
        Ok(())
    }
}
