//! ptxvk's SPIR-V backend: structured IR → one SPIR-V 1.6 module with an entry point
//! per PTX kernel, and validation with `spirv-val` (via the spirv-tools crate).
//!
//! The module uses the launch ABI documented in [`module`]: global memory through
//! `PhysicalStorageBuffer64` pointers made from 64-bit addresses, the parameter block's
//! address and the grid geometry in push constants, `%ntid` from `LocalSizeId`
//! specialization constants, and shared memory as one `Workgroup` word array whose
//! length is a specialization constant.
#![forbid(unsafe_code)]

mod emit;
mod error;
pub mod module;
mod types;

use rspirv::binary::Assemble;
use rspirv::dr::Builder;
use rspirv::spirv::{ExecutionMode, ExecutionModel};

use ptxvk_lower::abi::KernelAbi;
use ptxvk_lower::ir::{InstKind, SpecialReg, SubgroupOp};
use ptxvk_lower::pass::Target;
use ptxvk_lower::LoweredKernel;

pub use error::Error;
pub use ptxvk_abi::Requirements;

/// What the host needs to launch one kernel of the module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// The PTX name, which is also the SPIR-V entry point name.
    pub name: String,
    pub abi: KernelAbi,
    /// Bytes of static shared memory; dynamic shared memory starts at `dynamic_shared_offset`.
    pub static_shared_bytes: u32,
    pub dynamic_shared_offset: u32,
    pub uses_dynamic_shared: bool,
    pub reqntid: Option<[u32; 3]>,
    pub maxntid: Option<[u32; 3]>,
    /// The kernel has a system area after its parameter block (`ptxvk_abi::system`).
    pub system: bool,
    /// The kernel calls `malloc` and needs the module's device heap.
    pub heap: bool,
    /// Bytes of the thread's local window (`.local` variables, call frames, stack).
    pub local_bytes: u32,
    /// Estimated registers per thread ([`ptxvk_lower::pressure`]).
    pub registers: u32,
    /// The kernel synchronizes its grid (or reads cooperative groups' grid workspace).
    pub grid_sync: bool,
    /// How the kernel is cut into phases at its grid barriers
    /// (`ptxvk_lower::pass::split_grid`): the launch runs a dispatch of the grid per
    /// phase, with a grid save area.
    pub grid_phases: Option<ptxvk_lower::ir::GridPhases>,
    /// The module's address size (32: pointers are offsets in the address window).
    pub address_size: u32,
    /// The accesses a checked kernel tests (`ptxvk_lower::pass::check`), which its
    /// violation records name by index; empty when the kernel is not checked.
    pub check_sites: Vec<ptxvk_lower::ir::CheckSite>,
    /// Whether the kernel keeps racecheck's shadow of its shared window (four words per
    /// word, in shared memory too).
    pub race_shadow: bool,
    /// Whether its shared window is in device memory (`pass::shared_in_memory`): each
    /// launch needs an area of `ptxvk_abi::shared_stride(shared bytes)` bytes per block
    /// of a dispatch, at push constants `shared_address`/`shared_stride`.
    pub shared_in_device_memory: bool,
    /// The kernels it may launch from the device, by address index
    /// (`ptxvk_abi::device_launch`); empty when it launches none.
    pub device_launches: Vec<String>,
}

/// A compiled module (the default: no code, for a program without kernels).
#[derive(Clone, Debug, Default)]
pub struct SpirvModule {
    pub words: Vec<u32>,
    pub kernels: Vec<KernelInfo>,
    pub requirements: Requirements,
    /// Whether the module computes with floats (has a float type): a launch of it is
    /// refused on a driver whose float arithmetic a probe found wrong beyond repair.
    pub uses_floats: bool,
    /// Whether the module has a loop (`OpLoopMerge`), which a driver that cuts loops
    /// short may get wrong.
    pub has_loops: bool,
    /// Whether a kernel of the module runs as rounds of its block's scheduler
    /// (`pass::schedule`: it polls), which a driver that breaks them gets wrong.
    pub scheduled: bool,
}

/// Generates the SPIR-V module for `kernels`, for a device of which nothing is known
/// but what the kernels' lowering decided ([`compile_for`] a default target).
pub fn compile(kernels: &[LoweredKernel]) -> Result<SpirvModule, Error> {
    compile_for(kernels, &Target::default())
}

/// Generates the SPIR-V module for `kernels`, lowered for `target`, whose driver-bug
/// answers (`Target::float_constants`) also decide how float arithmetic is emitted.
pub fn compile_for(kernels: &[LoweredKernel], target: &Target) -> Result<SpirvModule, Error> {
    if kernels.is_empty() {
        return Err(Error::NoKernels);
    }
    let mut b = Builder::new();
    let mut t = types::TypeCache::default();
    // A window in device memory (`pass::shared_in_memory`) is no `Workgroup` array.
    let on_chip = |k: &&LoweredKernel| !k.kernel.shared.in_device_memory;
    let uses_shared = |k: &ptxvk_lower::ir::Kernel| {
        let shared = &k.shared;
        shared.static_bytes > 0 || shared.dynamic_align.is_some() || accesses_shared(k)
    };
    let max_static =
        kernels.iter().filter(on_chip).map(|k| k.kernel.shared.static_bytes).max().unwrap_or(0);
    let words: std::collections::BTreeSet<_> = kernels
        .iter()
        .filter(on_chip)
        .filter(|k| uses_shared(&k.kernel))
        .map(|k| k.kernel.shared.word)
        .collect();
    let race_shadow = kernels.iter().any(|k| has_race_shadow(&k.kernel));
    let windows = module::SharedWindows {
        words: words.into_iter().collect(),
        static_words: max_static.div_ceil(4),
        race_shadow,
    };
    let mut g = module::Globals::declare(&mut b, &mut t, &windows);
    g.float_constants = target.float_constants;
    g.hide_sign_extensions = target.hide_sign_extensions;
    let any_inst = |is: fn(&InstKind) -> bool| {
        kernels.iter().flat_map(|k| &k.kernel.blocks).flat_map(|b| &b.insts).any(|i| is(&i.kind))
    };
    if kernels.iter().any(|k| k.kernel.shared.in_device_memory) {
        g.declare_num_workgroups(&mut b, &mut t);
    }
    if any_inst(|i| matches!(i, InstKind::Subgroup { .. })) {
        g.declare_subgroup(&mut b, &mut t);
    }
    if any_inst(|i| matches!(i, InstKind::Subgroup { op: SubgroupOp::ShuffleNarrow, .. })) {
        g.declare_subgroup_size(&mut b, &mut t);
    }
    if any_inst(|i| matches!(i, InstKind::Special { reg: SpecialReg::ConfinedOutside, .. })) {
        g.declare_confined_outside(&mut b, &mut t);
    }
    let counts_loops = any_inst(|i| matches!(i, InstKind::LoopCount { .. }));
    if counts_loops {
        // Without a guard's figure (IR from text), a subgroup per invocation of the
        // largest CUDA block.
        let subgroups = target.loop_guard.map_or(1024, |g| g.subgroups);
        g.declare_loop_counts(&mut b, &mut t, subgroups);
    }
    let mut infos = Vec::new();
    let mut entries = Vec::new();
    for lk in kernels {
        let k = &lk.kernel;
        let f = emit::FnEmitter::new(&mut b, &mut t, &g, k).function(&lk.body)?;
        b.entry_point(ExecutionModel::GLCompute, f, k.name.clone(), g.interface(&k.shared));
        b.execution_mode_id(f, ExecutionMode::LocalSizeId, g.block_size);
        entries.push(f);
        infos.push(KernelInfo {
            name: k.name.clone(),
            abi: k.abi.clone(),
            static_shared_bytes: k.shared.static_bytes,
            dynamic_shared_offset: k.shared.dynamic_offset(),
            uses_dynamic_shared: k.shared.dynamic_align.is_some(),
            reqntid: k.reqntid,
            maxntid: k.maxntid,
            system: k.system,
            heap: k.heap,
            local_bytes: k.local_bytes,
            registers: ptxvk_lower::pressure::max_live_words(k),
            grid_sync: k.grid_sync,
            grid_phases: k.grid_phases,
            address_size: k.address_size,
            check_sites: k.check_sites.clone(),
            race_shadow: has_race_shadow(k),
            shared_in_device_memory: k.shared.in_device_memory,
            device_launches: k.device_launches.clone(),
        });
    }
    emit::routines::emit_routines(&mut b, &mut t, &g, kernels)?;
    module::capabilities(&mut b, &t);
    let u = t.used;
    // PTX arithmetic keeps the sign of zero, infinities and NaNs (IEEE 754); without
    // this mode a Vulkan compiler may fold `-0 * x` or `x * 0` to +0 (SPIR-V 3.31,
    // `SignedZeroInfNanPreserve`). The runtime removes it where the device lacks it.
    b.capability(rspirv::spirv::Capability::SignedZeroInfNanPreserve);
    for &f in &entries {
        b.execution_mode(f, ExecutionMode::SignedZeroInfNanPreserve, [32]);
        if u.float64 {
            b.execution_mode(f, ExecutionMode::SignedZeroInfNanPreserve, [64]);
        }
    }
    let requirements = Requirements {
        int8: u.int8,
        int16: u.int16,
        float64: u.float64,
        storage_buffer_8bit: u.storage8,
        storage_buffer_16bit: u.storage16,
        int64_atomics: u.int64_atomics,
        shared_int64_atomics: windows.words.contains(&ptxvk_lower::ir::SharedWord::U64),
        zero_initialize_workgroup_memory: windows.race_shadow || counts_loops,
        device_clock: u.device_clock,
    };
    let words = b.module().assemble();
    let (uses_floats, has_loops) = (t.has_floats(), u.loops);
    let scheduled = kernels.iter().any(|k| !k.kernel.wait_sites.is_empty());
    Ok(SpirvModule { words, kernels: infos, requirements, uses_floats, has_loops, scheduled })
}

/// Whether the kernel accesses racecheck's shadow.
fn has_race_shadow(k: &ptxvk_lower::ir::Kernel) -> bool {
    k.blocks.iter().flat_map(|b| &b.insts).any(|i| matches!(i.kind, InstKind::RaceShadow { .. }))
}

/// Whether the kernel loads or stores `.shared` memory (possibly without declaring any
/// shared variable: then it addresses the dynamic region by number).
fn accesses_shared(k: &ptxvk_lower::ir::Kernel) -> bool {
    use ptxvk_lower::ir::{InstKind, Space};
    k.blocks.iter().flat_map(|b| &b.insts).any(|i| {
        matches!(
            i.kind,
            InstKind::Load { space: Space::Shared, .. }
                | InstKind::Store { space: Space::Shared, .. }
                | InstKind::Atomic { space: Space::Shared, .. }
        )
    })
}

/// Validates SPIR-V for Vulkan 1.3 with `spirv-val` (SPIRV-Tools).
pub fn validate(words: &[u32]) -> Result<(), Error> {
    use spirv_tools::val::Validator;
    let v = spirv_tools::val::create(Some(spirv_tools::TargetEnv::Vulkan_1_3));
    v.validate(words, None).map_err(|e| Error::Invalid(e.to_string()))
}

/// SPIR-V assembly text of a module (SPIRV-Tools' `spirv-dis`, which knows every
/// instruction we emit, `OpExecutionModeId` included).
pub fn disassemble(words: &[u32]) -> Result<String, Error> {
    use spirv_tools::assembler::Assembler;
    let a = spirv_tools::assembler::create(Some(spirv_tools::TargetEnv::Vulkan_1_3));
    let options = spirv_tools::assembler::DisassembleOptions {
        use_friendly_names: true,
        ..Default::default()
    };
    match a.disassemble(words, options) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err(Error::Internal("spirv-dis printed nothing".into())),
        Err(e) => Err(Error::Tool(format!(
            "spirv-dis failed: {e} (is SPIRV-Tools installed? `apt-get install spirv-tools`)"
        ))),
    }
}
