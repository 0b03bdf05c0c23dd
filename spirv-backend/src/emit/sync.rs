//! Emission of barriers, subgroup operations, special registers and push constants, loop
//! counts, and the shadows of checked launches.

use super::*;

impl FnEmitter<'_> {
    /// Barriers, subgroup operations, loop counts and the checked launches' shadows.
    pub(super) fn sync_inst(&mut self, kind: &InstKind) -> R<()> {
        match kind {
            InstKind::LoopCount { dst, add } => {
                let v = self.loop_count(*add)?;
                self.write(*dst, v, Scalar::Int(32), false)
            }
            InstKind::Subgroup { op, split, dst, value, lane } => {
                let r = self.subgroup(*op, *split, *value, *lane)?;
                self.write(*dst, r, Scalar::Int(32), false)
            }
            InstKind::WarpBarrier { publish: Some(value) } => {
                // The thread's own word: scratch + linear id (= LocalInvocationIndex).
                let v = self.read_op(*value, OpTy::U(32))?;
                let Some(scratch) = self.k.warp_scratch else {
                    return Err(Error::Internal("a warp exchange without a scratch".into()));
                };
                let u32t = self.ty(Scalar::Int(32));
                let id = |s: &mut Self, d: usize| -> R<Word> {
                    let v3 = s.g.uvec3_ty;
                    let l = s.b.load(v3, None, s.g.local_id, None, [])?;
                    Ok(s.b.composite_extract(u32t, None, l, [d as u32])?)
                };
                let (x, y, z) = (id(self, 0)?, id(self, 1)?, id(self, 2)?);
                let (nx, ny) = (self.g.block_size[0], self.g.block_size[1]);
                let zy = self.b.i_mul(u32t, None, z, ny)?;
                let zy = self.b.i_add(u32t, None, zy, y)?;
                let zyx = self.b.i_mul(u32t, None, zy, nx)?;
                let linear = self.b.i_add(u32t, None, zyx, x)?;
                let base = self.konst(Scalar::Int(32), u64::from(scratch / 4));
                let index = self.b.i_add(u32t, None, linear, base)?;
                if self.k.shared.wide() {
                    let two = self.konst(Scalar::Int(32), 2);
                    let byte = self.b.shift_left_logical(u32t, None, index, two)?;
                    self.store_wide(OpTy::U(32), byte, v)?;
                } else {
                    let ptr = self.shared_word(index)?;
                    self.b.store(ptr, v, None, [])?;
                }
                self.barrier()
            }
            InstKind::Barrier | InstKind::WarpBarrier { publish: None } => self.barrier(),
            InstKind::RaceShadow { dst, word, swap } => {
                let s32 = Scalar::Int(32);
                let u32t = self.ty(s32);
                let Some(shadow) = self.g.race_shadow else {
                    return Err(Error::Internal("a race shadow access without a shadow".into()));
                };
                let index = self.read(*word, s32)?;
                let pt = self.t.pointer(self.b, StorageClass::Workgroup, u32t);
                let ptr = self.b.access_chain(pt, None, shadow, [index])?;
                // Relaxed workgroup-scope atomics: the shadow words are shared by the
                // block's threads, and only their own values are ordered.
                let scope = self.t.u32(self.b, SCOPE_WORKGROUP);
                let relaxed = self.t.u32(self.b, 0);
                let r = match swap {
                    Some(v) => {
                        let v = self.read(*v, s32)?;
                        self.b.atomic_exchange(u32t, None, ptr, scope, relaxed, v)?
                    }
                    None => self.b.atomic_load(u32t, None, ptr, scope, relaxed)?,
                };
                self.write(*dst, r, s32, false)
            }
            other => Err(Error::Internal(format!("`{other:?}` reached the sync emitter"))),
        }
    }

    /// A subgroup operation (SPIR-V 1.6 §3.56 group non-uniform instructions) on this
    /// thread's warp: the whole subgroup, or (`split`) the half of a 64-wide subgroup
    /// that holds this invocation.
    pub(super) fn subgroup(
        &mut self,
        op: SubgroupOp,
        split: bool,
        value: Value,
        lane: Value,
    ) -> R<Word> {
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let scope = self.konst(s32, 3); // Subgroup
        let Some(lane_var) = self.g.subgroup_lane else {
            return Err(Error::Internal("subgroup operation without its builtin".into()));
        };
        let me = self.b.load(u32t, None, lane_var, None, [])?;
        let v = self.read(value, s32)?;
        match op {
            SubgroupOp::Shuffle => {
                let mut index = self.read(lane, s32)?;
                if split {
                    let half = self.konst(s32, 32);
                    let base = self.b.bitwise_and(u32t, None, me, half)?;
                    index = self.b.i_add(u32t, None, index, base)?;
                }
                Ok(self.b.group_non_uniform_shuffle(u32t, None, scope, v, index)?)
            }
            SubgroupOp::ShuffleNarrow => {
                // Subgroups are aligned runs of consecutive lanes: the invocation is
                // the lane modulo the subgroup size.
                let Some(size_var) = self.g.subgroup_size else {
                    return Err(Error::Internal("narrow shuffle without its builtin".into()));
                };
                let size = self.b.load(u32t, None, size_var, None, [])?;
                let one = self.konst(s32, 1);
                let low = self.b.i_sub(u32t, None, size, one)?;
                let lane = self.read(lane, s32)?;
                let index = self.b.bitwise_and(u32t, None, lane, low)?;
                Ok(self.b.group_non_uniform_shuffle(u32t, None, scope, v, index)?)
            }
            SubgroupOp::Ballot => {
                let bool_t = self.ty(Scalar::Bool);
                let zero = self.konst(s32, 0);
                let p = self.b.i_not_equal(bool_t, None, v, zero)?;
                let uvec4 = self.b.type_vector(u32t, 4);
                let bits = self.b.group_non_uniform_ballot(uvec4, None, scope, p)?;
                if split {
                    let five = self.konst(s32, 5);
                    let half = self.b.shift_right_logical(u32t, None, me, five)?;
                    Ok(self.b.vector_extract_dynamic(u32t, None, bits, half)?)
                } else {
                    Ok(self.b.composite_extract(u32t, None, bits, [0])?)
                }
            }
        }
    }

    /// A workgroup control barrier ordering shared and storage memory.
    pub(super) fn barrier(&mut self) -> R<()> {
        let wg = self.t.u32(self.b, SCOPE_WORKGROUP);
        let sem = self.t.u32(self.b, SEM_ACQ_REL | SEM_WORKGROUP_MEMORY | SEM_UNIFORM_MEMORY);
        self.b.control_barrier(wg, wg, sem)?;
        Ok(())
    }

    pub(super) fn special(&mut self, reg: SpecialReg) -> R<Word> {
        let u32_ty = self.ty(Scalar::Int(32));
        let vec3 = |s: &mut Self, var: Word, d: Dim| -> R<Word> {
            let v3 = s.g.uvec3_ty;
            let v = s.b.load(v3, None, var, None, [])?;
            Ok(s.b.composite_extract(u32_ty, None, v, [d.index() as u32])?)
        };
        match reg {
            SpecialReg::Tid(d) => vec3(self, self.g.local_id, d),
            SpecialReg::Ntid(d) => Ok(self.g.block_size[d.index()]),
            SpecialReg::Ctaid(d) => {
                let wg = vec3(self, self.g.workgroup_id, d)?;
                let base = self.push_u32(ptxvk_abi::member::CTAID_BASE + d.index() as u32)?;
                Ok(self.b.i_add(u32_ty, None, wg, base)?)
            }
            SpecialReg::Nctaid(d) => self.push_u32(ptxvk_abi::member::GRID + d.index() as u32),
            SpecialReg::DynamicSharedBytes => Ok(self.g.dynamic_shared_bytes),
            SpecialReg::ConfinedOutside => self
                .g
                .confined_outside
                .ok_or_else(|| Error::Internal("confined_outside read but not declared".into())),
            SpecialReg::DynamicSharedBase => Ok(self.t.u32(self.b, self.k.shared.dynamic_offset())),
            SpecialReg::TotalSharedBytes => {
                let fixed = self.t.u32(self.b, self.k.shared.static_bytes);
                Ok(self.b.i_add(u32_ty, None, fixed, self.g.dynamic_shared_bytes)?)
            }
            reg @ SpecialReg::Warp(_) => {
                Err(Error::Internal(format!("{reg:?} left by expand_warp")))
            }
            reg @ SpecialReg::Ptx(_) => {
                Err(Error::Internal(format!("{reg:?} left by expand_special")))
            }
            SpecialReg::ModuleData
            | SpecialReg::ParamBlock
            | SpecialReg::WindowBase
            | SpecialReg::DeviceClock
            | SpecialReg::SharedWindowAddress => {
                Err(Error::Internal("a 64-bit special register read as 32 bits".into()))
            }
        }
    }

    /// [`SpecialReg::SharedWindowAddress`]: the block's slice of the launch's area,
    /// `shared_address + i * shared_stride` for the block's linear index `i` in the
    /// dispatch (the launch ABI's push constants, `ptxvk_abi::PushConstants`).
    pub(super) fn shared_window_address(&mut self) -> R<Word> {
        let Some(num_workgroups) = self.g.num_workgroups else {
            return Err(Error::Internal(
                "a shared window in device memory without NumWorkgroups".into(),
            ));
        };
        let s32 = Scalar::Int(32);
        let (u32t, u64t) = (self.ty(s32), self.ty(Scalar::Int(64)));
        let v3 = self.g.uvec3_ty;
        let id = self.b.load(v3, None, self.g.workgroup_id, None, [])?;
        let n = self.b.load(v3, None, num_workgroups, None, [])?;
        let [x, y, z] = [0, 1, 2].map(|d| self.b.composite_extract(u32t, None, id, [d]));
        let [nx, ny] = [0, 1].map(|d| self.b.composite_extract(u32t, None, n, [d]));
        let (x, y, z, nx, ny) = (x?, y?, z?, nx?, ny?);
        // In 64 bits: a dispatch's blocks times the stride may pass 2^32.
        let [x, y, z, nx, ny] = [x, y, z, nx, ny].map(|v| self.b.u_convert(u64t, None, v));
        let (x, y, z, nx, ny) = (x?, y?, z?, nx?, ny?);
        let zy = self.b.i_mul(u64t, None, z, ny)?;
        let zy = self.b.i_add(u64t, None, zy, y)?;
        let zyx = self.b.i_mul(u64t, None, zy, nx)?;
        let linear = self.b.i_add(u64t, None, zyx, x)?;
        let s64 = Scalar::Int(64);
        let stride = self.push_member(ptxvk_abi::member::SHARED_STRIDE, s64)?;
        let base = self.push_member(ptxvk_abi::member::SHARED_ADDRESS, s64)?;
        let offset = self.b.i_mul(u64t, None, linear, stride)?;
        Ok(self.b.i_add(u64t, None, base, offset)?)
    }

    /// Loads push-constant member `member` (a u32 or u64 per the launch ABI).
    /// [`InstKind::LoopCount`]: the subgroup's first active invocation adds `add` to the
    /// subgroup's word of `Globals::loop_counts` (an atomic, as later iterations may
    /// elect another invocation), and every active invocation gets the new count from
    /// it (`OpGroupNonUniformBroadcastFirst`, whose first invocation is the one
    /// `OpGroupNonUniformElect` chose; SPIR-V §3.49.24).
    pub(super) fn loop_count(&mut self, add: i32) -> R<Word> {
        let Some((counts, subgroup_id)) = self.g.loop_counts else {
            return Err(Error::Internal("a loop count without the module's counts".into()));
        };
        let u32t = self.ty(Scalar::Int(32));
        let bt = self.ty(Scalar::Bool);
        let subgroup = self.t.u32(self.b, SCOPE_SUBGROUP);
        let id = self.b.load(u32t, None, subgroup_id, None, [])?;
        let ptr_ty = self.t.pointer(self.b, StorageClass::Workgroup, u32t);
        let word = self.b.access_chain(ptr_ty, None, counts, [id])?;
        let add = self.konst(Scalar::Int(32), u64::from(add as u32));
        let zero = self.konst(Scalar::Int(32), 0);
        let elected = self.b.group_non_uniform_elect(bt, None, subgroup)?;
        let (count_l, skip_l, merge) = (self.b.id(), self.b.id(), self.b.id());
        self.b.selection_merge(merge, SelectionControl::NONE)?;
        self.b.branch_conditional(elected, count_l, skip_l, [])?;
        self.b.begin_block(Some(count_l))?;
        let relaxed = self.t.u32(self.b, 0);
        let old = self.b.atomic_i_add(u32t, None, word, subgroup, relaxed, add)?;
        self.b.branch(merge)?;
        self.b.begin_block(Some(skip_l))?;
        self.b.branch(merge)?;
        self.b.begin_block(Some(merge))?;
        let old = self.b.phi(u32t, None, [(old, count_l), (zero, skip_l)])?;
        let old = self.b.group_non_uniform_broadcast_first(u32t, None, subgroup, old)?;
        Ok(self.b.i_add(u32t, None, old, add)?)
    }

    pub(super) fn push_member(&mut self, member: u32, s: Scalar) -> R<Word> {
        let ty = self.ty(s);
        let ptr = self.t.pointer(self.b, StorageClass::PushConstant, ty);
        let idx = self.t.u32(self.b, member);
        let p = self.b.access_chain(ptr, None, self.g.push_constants, [idx])?;
        Ok(self.b.load(ty, None, p, None, [])?)
    }

    pub(super) fn push_u32(&mut self, member: u32) -> R<Word> {
        self.push_member(member, Scalar::Int(32))
    }

    // ----- integer and float arithmetic -----------------------------------------------------
}
