//! Module-level SPIR-V: capabilities, the memory model, the launch ABI's push-constant
//! block, builtins, specialization constants and the shared-memory window. The launch
//! ABI itself (member offsets, specialization ids) is the `ptxvk-abi` crate, which the
//! runtime reads too.

use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{
    AddressingModel, BuiltIn, Capability, Decoration, MemoryModel, Op, StorageClass, Word,
};

use crate::types::{Scalar, TypeCache};
use ptxvk_lower::ir::{SharedLayout, SharedWord};
use ptxvk_lower::pass::FloatConstants;

use ptxvk_abi::{spec_ids, PUSH_CONSTANT_MEMBERS};

/// Which shared windows a module's kernels need.
#[derive(Clone, Debug, Default)]
pub struct SharedWindows {
    /// The elements of the windows some kernel uses (`SharedLayout::word`), each once,
    /// in order.
    pub words: Vec<SharedWord>,
    /// The largest static window in bytes, rounded up to 32-bit words: the default of
    /// specialization constant 3.
    pub static_words: u32,
    /// Whether some kernel has racecheck's shadow of the window
    /// ([`InstKind::RaceShadow`](ptxvk_lower::ir::InstKind::RaceShadow)).
    pub race_shadow: bool,
}

/// One shared window: its element, its `Workgroup` array and the index of its last
/// element (a specialization-constant expression), to which accesses are clamped.
#[derive(Clone, Copy, Debug)]
pub struct SharedWindow {
    pub word: SharedWord,
    pub var: Word,
    pub last: Word,
}

/// Ids of module-level objects every kernel function uses.
#[derive(Debug)]
pub struct Globals {
    pub glsl: Word,
    pub uvec3_ty: Word,
    pub local_id: Word,
    pub workgroup_id: Word,
    pub push_constants: Word,
    /// Block-size specialization constants x, y, z.
    pub block_size: [Word; 3],
    /// The `Workgroup` arrays of the shared windows, by element (`SharedLayout::word`),
    /// each of the same bytes (a 64-bit one rounded up to 8).
    pub shared: Vec<SharedWindow>,
    /// The launch's dynamic shared bytes (specialization constant 4).
    pub dynamic_shared_bytes: Word,
    /// Racecheck's shadow of the shared window: four 32-bit words per word of it,
    /// zero-initialized (Vulkan 1.3 `shaderZeroInitializeWorkgroupMemory`), when some
    /// kernel has one.
    pub race_shadow: Option<Word>,
    /// `SubgroupLocalInvocationId`, when some kernel uses subgroup operations.
    pub subgroup_lane: Option<Word>,
    /// `SubgroupSize`, when some kernel has narrow shuffles (`SubgroupOp::ShuffleNarrow`).
    pub subgroup_size: Option<Word>,
    /// What the target's driver does with float arithmetic of known operands
    /// (`Target::float_constants`), which decides how the backend emits it.
    pub float_constants: FloatConstants,
    /// Whether sign extensions to 64 bits are hidden from the driver
    /// (`Target::hide_sign_extensions`).
    pub hide_sign_extensions: bool,
    /// The loop counts of [`InstKind::LoopCount`](ptxvk_lower::ir::InstKind::LoopCount):
    /// a zero-initialized `Workgroup` array of one u32 per subgroup, and the
    /// `SubgroupId` input that indexes it, when some kernel counts.
    pub loop_counts: Option<(Word, Word)>,
    /// `NumWorkgroups`, when some kernel's shared window is in device memory: a block's
    /// slice is indexed by its linear index in the dispatch.
    pub num_workgroups: Option<Word>,
    /// Specialization constant `CONFINED_OUTSIDE`, when some kernel is confined
    /// ([`SpecialReg::ConfinedOutside`](ptxvk_lower::ir::SpecialReg::ConfinedOutside)).
    pub confined_outside: Option<Word>,
}

impl Globals {
    /// Declares everything but capabilities (which depend on what the code used).
    pub fn declare(b: &mut Builder, t: &mut TypeCache, shared: &SharedWindows) -> Globals {
        b.set_version(1, 6);
        let glsl = b.ext_inst_import("GLSL.std.450");
        b.memory_model(AddressingModel::PhysicalStorageBuffer64, MemoryModel::GLSL450);

        let u32t = t.scalar(b, Scalar::Int(32));
        let u64t = t.scalar(b, Scalar::Int(64));
        let uvec3_ty = b.type_vector(u32t, 3);
        let in_ptr = t.pointer(b, StorageClass::Input, uvec3_ty);
        let local_id = b.variable(in_ptr, None, StorageClass::Input, None);
        b.decorate(local_id, Decoration::BuiltIn, [Operand::BuiltIn(BuiltIn::LocalInvocationId)]);
        let workgroup_id = b.variable(in_ptr, None, StorageClass::Input, None);
        b.decorate(workgroup_id, Decoration::BuiltIn, [Operand::BuiltIn(BuiltIn::WorkgroupId)]);

        let pc_ty =
            b.type_struct(
                PUSH_CONSTANT_MEMBERS.iter().map(|m| if m.bits == 64 { u64t } else { u32t }),
            );
        b.decorate(pc_ty, Decoration::Block, []);
        for (i, m) in PUSH_CONSTANT_MEMBERS.iter().enumerate() {
            let offset = [Operand::LiteralBit32(m.offset)];
            b.member_decorate(pc_ty, i as u32, Decoration::Offset, offset);
        }
        let pc_ptr = t.pointer(b, StorageClass::PushConstant, pc_ty);
        let push_constants = b.variable(pc_ptr, None, StorageClass::PushConstant, None);

        let mut block_size = [0; 3];
        for (i, id) in block_size.iter_mut().enumerate() {
            *id = b.spec_constant_bit32(u32t, 1);
            b.decorate(
                *id,
                Decoration::SpecId,
                [Operand::LiteralBit32(spec_ids::BLOCK_X + i as u32)],
            );
        }

        let dynamic_shared_bytes = b.spec_constant_bit32(u32t, 0);
        b.decorate(
            dynamic_shared_bytes,
            Decoration::SpecId,
            [Operand::LiteralBit32(spec_ids::DYNAMIC_SHARED_BYTES)],
        );

        // Every window takes its length from specialization constant 3 (32-bit words),
        // scaled by OpSpecConstantOp: a 64-bit window has (words + 1) / 2 elements, a
        // byte window 4 × words.
        let mut windows = Vec::new();
        let mut race_shadow = None;
        if !shared.words.is_empty() {
            let words = b.spec_constant_bit32(u32t, shared.static_words.max(1));
            b.decorate(words, Decoration::SpecId, [Operand::LiteralBit32(spec_ids::SHARED_WORDS)]);
            for &word in &shared.words {
                let elem = t.scalar(b, Scalar::Int(word.bits() as u8));
                let len = match word {
                    SharedWord::U32 => words,
                    SharedWord::U64 => {
                        let one = b.constant_bit32(u32t, 1);
                        let plus_one = spec_constant_op(b, u32t, Op::IAdd, words, one);
                        spec_constant_op(b, u32t, Op::ShiftRightLogical, plus_one, one)
                    }
                    SharedWord::U8 | SharedWord::U16 => {
                        let per_word = b.constant_bit32(u32t, 32 / word.bits());
                        spec_constant_op(b, u32t, Op::IMul, words, per_word)
                    }
                };
                let arr = b.type_array(elem, len);
                let ptr = t.pointer(b, StorageClass::Workgroup, arr);
                let var = b.variable(ptr, None, StorageClass::Workgroup, None);
                let one = b.constant_bit32(u32t, 1);
                let last = spec_constant_op(b, u32t, Op::ISub, len, one);
                windows.push(SharedWindow { word, var, last });
            }
            if shared.race_shadow {
                let four = b.constant_bit32(u32t, 4);
                let len = spec_constant_op(b, u32t, Op::IMul, words, four);
                let arr = b.type_array(u32t, len);
                let ptr = t.pointer(b, StorageClass::Workgroup, arr);
                let zero = b.constant_null(arr);
                race_shadow = Some(b.variable(ptr, None, StorageClass::Workgroup, Some(zero)));
            }
        }

        Globals {
            glsl,
            uvec3_ty,
            local_id,
            workgroup_id,
            push_constants,
            block_size,
            shared: windows,
            dynamic_shared_bytes,
            race_shadow,
            subgroup_lane: None,
            subgroup_size: None,
            float_constants: FloatConstants::default(),
            hide_sign_extensions: false,
            loop_counts: None,
            num_workgroups: None,
            confined_outside: None,
        }
    }

    /// Declares specialization constant `CONFINED_OUTSIDE` ([`Self::confined_outside`]),
    /// 1 unless the launch says otherwise: a pipeline specialized by no launch keeps the
    /// test against the allocations outside the confinement range.
    pub fn declare_confined_outside(&mut self, b: &mut Builder, t: &mut TypeCache) {
        let u32t = t.scalar(b, Scalar::Int(32));
        let id = b.spec_constant_bit32(u32t, 1);
        let spec_id = [Operand::LiteralBit32(spec_ids::CONFINED_OUTSIDE)];
        b.decorate(id, Decoration::SpecId, spec_id);
        self.confined_outside = Some(id);
    }

    /// Declares `NumWorkgroups` ([`Self::num_workgroups`]).
    pub fn declare_num_workgroups(&mut self, b: &mut Builder, t: &mut TypeCache) {
        let in_ptr = t.pointer(b, StorageClass::Input, self.uvec3_ty);
        let var = b.variable(in_ptr, None, StorageClass::Input, None);
        b.decorate(var, Decoration::BuiltIn, [Operand::BuiltIn(BuiltIn::NumWorkgroups)]);
        self.num_workgroups = Some(var);
    }

    /// Declares `SubgroupLocalInvocationId` (for the subgroup operations of the native
    /// and split warp modes).
    pub fn declare_subgroup(&mut self, b: &mut Builder, t: &mut TypeCache) {
        let u32t = t.scalar(b, Scalar::Int(32));
        let ptr = t.pointer(b, StorageClass::Input, u32t);
        let var = b.variable(ptr, None, StorageClass::Input, None);
        b.decorate(
            var,
            Decoration::BuiltIn,
            [Operand::BuiltIn(BuiltIn::SubgroupLocalInvocationId)],
        );
        self.subgroup_lane = Some(var);
        t.used.subgroup = true;
    }

    /// Declares `SubgroupSize` (for the narrow shuffles of the emulated warp mode).
    pub fn declare_subgroup_size(&mut self, b: &mut Builder, t: &mut TypeCache) {
        let u32t = t.scalar(b, Scalar::Int(32));
        let ptr = t.pointer(b, StorageClass::Input, u32t);
        let var = b.variable(ptr, None, StorageClass::Input, None);
        b.decorate(var, Decoration::BuiltIn, [Operand::BuiltIn(BuiltIn::SubgroupSize)]);
        self.subgroup_size = Some(var);
    }

    /// Declares the loop counts of `subgroups` subgroups and `SubgroupId`
    /// ([`Self::loop_counts`]).
    pub fn declare_loop_counts(&mut self, b: &mut Builder, t: &mut TypeCache, subgroups: u32) {
        let u32t = t.scalar(b, Scalar::Int(32));
        let len = b.constant_bit32(u32t, subgroups.max(1));
        let arr = b.type_array(u32t, len);
        let ptr = t.pointer(b, StorageClass::Workgroup, arr);
        let zero = b.constant_null(arr);
        let counts = b.variable(ptr, None, StorageClass::Workgroup, Some(zero));
        b.name(counts, "loop_counts");
        let in_ptr = t.pointer(b, StorageClass::Input, u32t);
        let id = b.variable(in_ptr, None, StorageClass::Input, None);
        b.decorate(id, Decoration::BuiltIn, [Operand::BuiltIn(BuiltIn::SubgroupId)]);
        self.loop_counts = Some((counts, id));
        t.used.loop_counts = true;
    }

    /// The shared window of elements `word`, if the module declares one.
    pub fn shared_window(&self, word: SharedWord) -> Option<SharedWindow> {
        self.shared.iter().find(|w| w.word == word).copied()
    }

    /// The entry-point interface (SPIR-V 1.4+: every module-scope variable the entry
    /// point uses), with the shared window of the kernel's element, or `NumWorkgroups`
    /// when its window is in device memory.
    pub fn interface(&self, shared: &SharedLayout) -> Vec<Word> {
        let mut v = vec![self.local_id, self.workgroup_id, self.push_constants];
        if shared.in_device_memory {
            v.extend(self.num_workgroups);
        } else {
            v.extend(self.shared_window(shared.word).map(|w| w.var));
        }
        v.extend(self.race_shadow);
        v.extend(self.subgroup_lane);
        v.extend(self.subgroup_size);
        v.extend(self.loop_counts.iter().flat_map(|&(counts, id)| [counts, id]));
        v
    }
}

/// `OpSpecConstantOp` of a binary operation (rspirv's builder method takes no operands).
fn spec_constant_op(b: &mut Builder, ty: Word, op: Op, lhs: Word, rhs: Word) -> Word {
    let id = b.id();
    let operands =
        vec![Operand::LiteralSpecConstantOpInteger(op), Operand::IdRef(lhs), Operand::IdRef(rhs)];
    let inst = rspirv::dr::Instruction::new(Op::SpecConstantOp, Some(ty), Some(id), operands);
    b.module_mut().types_global_values.push(inst);
    id
}

/// Capabilities for what the code used; always Shader, Int64 (addresses) and
/// PhysicalStorageBufferAddresses.
pub fn capabilities(b: &mut Builder, t: &TypeCache) {
    b.capability(Capability::Shader);
    b.capability(Capability::Int64);
    b.capability(Capability::PhysicalStorageBufferAddresses);
    let u = t.used;
    if u.subgroup {
        b.capability(Capability::GroupNonUniform);
        b.capability(Capability::GroupNonUniformShuffle);
        b.capability(Capability::GroupNonUniformBallot);
    } else if u.loop_counts {
        b.capability(Capability::GroupNonUniform);
        b.capability(Capability::GroupNonUniformBallot);
    }
    if u.int8 {
        b.capability(Capability::Int8);
    }
    if u.int16 {
        b.capability(Capability::Int16);
    }
    if u.float64 {
        b.capability(Capability::Float64);
    }
    if u.int64_atomics {
        b.capability(Capability::Int64Atomics);
    }
    if u.storage8 {
        b.capability(Capability::StorageBuffer8BitAccess);
    }
    if u.storage16 {
        b.capability(Capability::StorageBuffer16BitAccess);
    }
    if u.device_clock {
        b.capability(Capability::ShaderClockKHR);
        b.extension("SPV_KHR_shader_clock");
    }
}
