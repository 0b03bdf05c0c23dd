//! The passes after semantic analysis, one file each, in the order [`run`] applies them:
//!
//! 0. [`expand_data_addresses`] — the module data's and the parameter block's
//!    addresses the arithmetic on their bases; [`thread_registers`] — the registers of
//!    device functions that stand for the kernel's (module-scope `.reg` variables)
//!    parameters and returns, passed at each call; [`expand_strong`] — the strong
//!    `ld`/`st` (atomic loads and stores) outside global and shared memory, and vector
//!    ones, become plain accesses ordered by a fence; then
//!    [`expand_vector_atomics`] — every `atom`/`red` on a vector one atomic per element;
//!    [`layout_memory`] — the variables of the local and shared windows get their
//!    offsets, which replace their addresses; then [`expand_isspace`] — every
//!    `isspacep` the window tests of the launch ABI; then
//!    [`widen_generic`] — in a module with 32-bit addresses, every generic access's
//!    address the 64-bit generic address of the launch ABI's windows; then
//!    [`infer_spaces`] — in each body, the generic accesses whose space a
//!    flow-insensitive provenance of the registers proves become direct accesses, and
//!    every `cvta` the window arithmetic of the launch ABI (in blocks); then
//!    [`thread_ends`] — every thread end in a device function an ended flag the
//!    function returns and a branch after each call of it (new blocks); then
//!    [`expand_indirect_calls`] — every indirect call a test of the function address
//!    against each candidate's and a call of it (new blocks); then [`inline`] — every
//!    call of a device function becomes a copy of its body, so that the kernel is one CFG (CFG with functions → CFG; emulation routines stay), and
//!    every call into a call
//!    cycle (recursion) [`recursion`]'s machine: a copy of the cycle's functions whose
//!    calls push save areas on an explicit stack and whose returns switch on a
//!    continuation id (new blocks, possibly irreducible); then the expansions of the
//!    operations semantic analysis resolves one PTX instruction into (CFG → CFG,
//!    inside blocks): [`expand_special`] — the special registers derived from others
//!    (the clocks' halves, `%envreg1/2`, the cluster registers of one-CTA clusters)
//!    become the device clock's halves, the grid workspace's and constants;
//!    [`expand_stack`] — `alloca`, `stacksave`, `stackrestore` and
//!    the frame pushes of recursive functions become stack pointer arithmetic and a
//!    failure where a push does not fit (new blocks); [`expand_runtime`] — the calls of functions CUDA provides
//!    (`vprintf`, `malloc`, the device runtime's…) become their arguments' loads, their
//!    system or launch operations and their results' stores; [`expand_generic`] — the accesses of generic addresses
//!    ([`crate::ir::Space::Generic`]) become a test of the address's window and a
//!    direct access per space (new blocks); [`expand_video`] — the video instructions become core integer
//!    operations; [`expand_integer`] — the integer and bit-level instructions without
//!    a single SPIR-V counterpart (`prmt`, `lop3`, carry chains, `bfind`…) become core
//!    operations; [`expand_formats`] — half arithmetic becomes exact f32 and f64
//!    arithmetic and one rounding to the format (`Narrow`), the UE8M0 conversions
//!    integer operations on the exponent bits, the other narrow-format `cvt`s
//!    (`.f16`, `.bf16`, `.tf32`, FP8/FP6/FP4 pairs) `Widen`, `Narrow` and
//!    `IntToFloat` on unpacked lanes, and a `cvt`'s float side in a wider integer
//!    register (§5.2.2) its low bits or a zero-extension; [`expand_texture`] —
//!    texture and surface instructions become the kernel's own reads of their
//!    descriptors and texels, with the branches and traps they need (new blocks);
//!    [`expand_matrix`] — the warp-level matrix instructions (`mma`, `ldmatrix`,
//!    `stmatrix`, `movmatrix`, `wmma`) become warp exchanges, arithmetic and their
//!    memory accesses (new blocks for guarded stores and generic accesses);
//!    [`expand_copies`] — the asynchronous copies (`cp.async`, `cp.async.bulk`,
//!    `cp.async.bulk.tensor`) become the loads and stores they perform (new blocks for
//!    partial reads, loops and traps); [`expand_mbarrier`] — the mbarrier instructions
//!    (and the `complete_tx` of the copies) become acquire-release atomics on the
//!    object's shared words, phase completions behind their tests (new blocks), waits
//!    polling reads; [`warp_trees`] — in the emulated warp mode with a known
//!    subgroup size, shuffle reduction and scan trees (`shfl.down`/`.bfly` steps by
//!    constant offsets, each combined with the running value) become shuffles within
//!    subgroups and one exchange per run of steps that crosses them, the same results
//!    in every lane; [`expand_warp`] — the warp collectives (`shfl`,
//!    `vote`, `match`, `redux`, `activemask`, `elect`, `bar.warp.sync`) become warp
//!    exchanges (new blocks for the loops over lanes of `match` and `redux`),
//!    `bar.red` a shared counter between block barriers, and `%laneid`, `%warpid`,
//!    `%nwarpid` and `%lanemask_*` arithmetic on the linear thread id;
//!    [`split_grid`] — the kernel is cut into phases at its grid barriers (and at
//!    cooperative groups' inline ones), which the runtime dispatches one after another:
//!    a thread saves its live registers, local window and its block's shared window at
//!    a barrier and ends; a new entry restores them and goes on after it (new blocks,
//!    possibly irreducible);
//!    [`expand_system`] — the system calls (`trap`, `__assertfail`, `vprintf`,
//!    `malloc`), the other failures and the device-side launches
//!    become accesses of the system area and the launch arena (new blocks for guarded
//!    records, the printf copy loop);
//! 1. [`hoist_params`] — parameter loads move to the start of the entry block, out of
//!    branches and loops (CFG → CFG);
//! 2. [`schedule`] — a kernel that polls (spin-waits on memory, locks, mbarrier waits,
//!    `nanosleep` back-off) becomes rounds of a block scheduler written in the kernel,
//!    so that the threads it waits for run; other kernels only lose the sync points of
//!    semantic analysis (CFG → CFG);
//! 3. [`legalize_atomics`] — atomics SPIR-V lacks (`inc`, `dec`, float and 16-bit
//!    ones, elements narrower than the atomic word) become compare-and-swap loops, and
//!    atomic loads of narrower elements atomic loads of the containing word (CFG → CFG);
//! 4. [`legalize_floats`] — f32 and f64 arithmetic with directed rounding (the half
//!    formats' roundings are all in [`expand_formats`]'s `Narrow`s) becomes exact
//!    round-to-odd arithmetic and one final rounding, and on a target without f64,
//!    f32 and half arithmetic that needs it (the atomics' loops included) is marked to
//!    be computed in integers (CFG → CFG);
//! 5. [`float_modifiers`] — `.ftz` and `.sat` become conversions of their own (flushed
//!    inputs, a flushed and clamped result), so that the emitter applies them in one
//!    place (CFG → CFG); then [`emulate`] — f64 `fma`, `div`, `rcp` and `sqrt` on the
//!    exact paths, the `.approx` functions and the narrow formats' conversions become
//!    calls of emulation routines (`crate::routines`), added to the kernel's functions once
//!    each (the `.approx` ones' f64 arithmetic legalized, by [`soft_f64`] without f64),
//!    whose bodies [`structurize`] structures with the kernel's (CFG → CFG); then
//!    [`retry_regions`] — a block's run of register arithmetic with several exact f64
//!    `fma.rn`/`div.rn` (`Routine::NearestF64` calls) becomes a loop whose passes call
//!    each site's fast path and share one call of each integer routine (CFG → CFG); then
//!    [`exact_runs`] — the exact f32 operations to nearest of a stretch of one block
//!    (calls of `Routine::NearestF32`) share one branch to their exact paths: a fast
//!    pass, a second exact pass where a test failed, deferred global stores (new
//!    blocks);
//! 6. [`legalize_warps`] — the warp exchanges of [`expand_warp`] and [`expand_matrix`]
//!    become subgroup operations or shared-memory scratch words, by the [`Target`]'s
//!    warp mode (CFG → CFG);
//! 7. [`structurize`] — CFG → structured tree, after its CFG passes [`reducible`] and
//!    [`loop_exits`] (and the analysis `crate::merges`);
//! 8. [`predicate`] — when `crate::uniformity` finds an emulated collective in
//!    divergent control flow, the tree is predicated so that every thread reaches it;
//! 9. [`loop_guard`] — on a target whose driver silently ends loops after a number of
//!    iterations ([`Target::loop_guard`]), every loop counts its iterations as the driver
//!    does and the launch fails before the driver would cut one short;
//! 10. [`shared_in_memory`] — only where the static shared variables exceed the
//!     device's on-chip limit ([`Target::shared_memory_bytes`]): every shared access
//!     becomes a global access into the block's slice of a launch-wide area (in blocks);
//! 11. [`legalize_memory`] — stores narrower than a word of the shared or local window
//!     become masked word updates; it rewrites instructions inside blocks only, so it
//!     runs last and also sees the stores predication adds.
//!
//! After inlining and the expansions (0), on a target with [`Target::check`], [`check`]
//! guards every access of the program's memory instructions with a bounds and
//! alignment test (CFG → CFG): it runs before the other passes, so that it sees each
//! access once, as the program wrote it.
//!
//! Semantic analysis (`crate::sema`) makes IR that depends on no device, one operation
//! per PTX instruction where the IR has a high-level one for it ([`InstKind::Video`],
//! [`InstKind::Integer`], [`InstKind::Half`], [`InstKind::HalfConvert`],
//! [`InstKind::Texture`], [`InstKind::Matrix`], [`InstKind::Copy`], [`InstKind::Warp`],
//! [`InstKind::BarrierReduce`], [`InstKind::Mbarrier`], [`InstKind::VectorAtomic`], [`InstKind::System`],
//! [`InstKind::DeviceLaunch`], [`InstKind::Stack`], and the accesses of generic addresses); the expansions (0) write those out, and every decision
//! that depends on a device is a pass here, reading the [`Target`]. Each pass states its
//! pre- and postconditions in its module doc. `crate::verify` checks the IR
//! before the first pass and after the last, and after every pass in debug builds (so
//! in every test); after the last, the legalizations' postconditions are checked
//! together. A failure is a ptxvk bug, reported as an internal error.

pub mod check;
pub mod copy_body;
pub mod emulate;
pub mod exact_runs;
pub mod expand_copies;
pub mod expand_data_addresses;
pub mod expand_formats;
pub mod expand_generic;
pub mod expand_indirect_calls;
pub mod expand_integer;
pub mod expand_isspace;
pub mod expand_matrix;
pub mod expand_mbarrier;
pub mod expand_runtime;
pub mod expand_special;
pub mod expand_stack;
pub mod expand_strong;
pub mod expand_system;
pub mod expand_texture;
pub mod expand_vector_atomics;
pub mod expand_video;
pub mod expand_warp;
mod expander;
pub mod float_modifiers;
pub mod hoist_params;
pub mod infer_spaces;
pub mod inline;
pub mod layout_memory;
pub mod legalize_atomics;
pub mod legalize_floats;
pub mod legalize_memory;
pub mod legalize_warps;
pub mod loop_exits;
pub mod loop_guard;
pub mod predicate;
pub mod recursion;
pub mod reducible;
pub mod retry_regions;
pub mod schedule;
pub mod shared_in_memory;
pub mod soft_f64;
pub mod split_grid;
pub mod structurize;
pub mod thread_ends;
pub mod thread_registers;
pub mod warp_trees;
pub mod widen_generic;

use ptxvk_frontend::Diagnostic;

use crate::ir::{BinaryOp, InstKind, Kernel, Node, WarpMode};
use crate::{uniformity, verify, LoweredKernel};

/// What lowering needs to know about the device a module is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// How PTX warps map to the device's subgroups.
    pub warp_mode: WarpMode,
    /// Whether the device has `shaderFloat64`. Without it, f32 code gets no f64:
    /// [`legalize_floats`] marks f32 `fma`, `div`, `rcp` and `sqrt` (and turns f32
    /// directed `add`/`sub`/`mul` into such an `fma`) to be computed with integer
    /// arithmetic. With it, they use exact f64 residuals, which are faster.
    pub float64: bool,
    /// Whether the device's `Fma` is fused (one rounding) for f32 and for f64, as a
    /// known-answer probe found when the device opened (Vulkan does not promise it).
    /// Where it is, `fma.rn` of that width is the device's `Fma` (`.fused`).
    pub fused_fma: FusedFma,
    /// `--float native`: `fma`, `div`, `rcp` and `sqrt` to nearest (f32 and f64) are
    /// Vulkan's own operations, with Vulkan's precision, which is not PTX's. Off by
    /// default: exactness is ptxvk's contract; this trades it for speed.
    pub native_float: bool,
    /// Whether the device has 8-bit and 16-bit integers in shaders (`shaderInt8`,
    /// `shaderInt16`), which [`legalize_memory`] uses for shared windows of bytes or
    /// halves, whose stores are then typed stores instead of two atomics each.
    pub int8: bool,
    pub int16: bool,
    /// Checked launches (`PTXVK_CHECK=memcheck`, `ptxvk run --check`): [`check`]
    /// instruments every access of the program's own memory instructions.
    pub check: bool,
    /// Racecheck too (`PTXVK_CHECK=racecheck`), with `check`: [`check`] tracks the
    /// shared accesses of each block between barriers in a shadow of the window.
    pub racecheck: bool,
    /// Initcheck too (`PTXVK_CHECK=initcheck`), with `check`: [`check`] tests global
    /// reads against the write shadows of device allocations and marks writes there.
    pub initcheck: bool,
    /// Confinement (a device that runs kernels inside the host process, with
    /// `PTXVK_CONFINE` not 0): without `check`, [`check`] keeps every access of the
    /// program's memory instructions inside the memory ptxvk gave the kernel
    /// ([`check::Mode::Confine`]).
    pub confine: bool,
    /// What the driver's compiler does with float arithmetic whose operands it knows
    /// at compile time (a probe of the device, `src/probes.rs`): the SPIR-V backend
    /// hides the operands from it where it folds them wrongly.
    pub float_constants: FloatConstants,
    /// Whether the driver miscompiles what follows a sign extension from 32 to 64 bits
    /// (Mesa 22.3: a compare with a constant, `min`/`max`), as a probe found: the
    /// backend then hides each such extension's result behind an always-zero
    /// push-constant word.
    pub hide_sign_extensions: bool,
    /// Where the driver silently ends a subgroup's loops after a number of iterations
    /// in all (Mesa 22.3's lavapipe), [`loop_guard`] counts them and fails the launch
    /// before the driver would cut one short.
    pub loop_guard: Option<LoopGuard>,
    /// The device's `maxComputeSharedMemorySize`, when a device is known: a kernel whose
    /// static shared variables alone exceed it keeps its shared window in device memory
    /// ([`shared_in_memory`]) instead of failing every launch. `None`: every window is
    /// on chip.
    pub shared_memory_bytes: Option<u32>,
    /// In the emulated warp mode, the device's subgroup size where it is fixed (no
    /// subgroup size control, or one size only): [`warp_trees`] then lowers shuffle
    /// trees to shuffles within subgroups of that size (2 to 16) and one exchange.
    /// `None`: unknown (no device) or not fixed.
    pub emulated_subgroup: Option<u32>,
}

/// What the driver's compiler does with `OpFAdd`, `OpFSub`, `OpFMul` and `OpFDiv` of
/// operands it knows (literals, and values that become constants once it has
/// propagated them), under `SignedZeroInfNanPreserve` ([`Target::float_constants`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FloatConstants {
    /// Unknown (no device, or not probed): the backend repairs the sign of a zero sum
    /// or difference with an immediate operand from the operands' bits, since lavapipe
    /// folds `x + 0.0` to `x` (`-0 + 0` gives -0).
    #[default]
    Repaired,
    /// The probe found every case IEEE 754's: nothing is repaired.
    Exact,
    /// The driver folds these operations (lavapipe: `x + 0.0` is `x` and `0.0 - x` is
    /// `-x`, and in Mesa 22.3 also `x * 0.0` is 0 whatever `x` is): each of their
    /// operands passes through an integer OR with an always-zero push-constant word
    /// the driver cannot know, one word per operand position (so that `a - a` is not
    /// made of two equal values).
    Hidden(FloatOps),
}

impl FloatConstants {
    /// Whether the backend hides the operands of float `op` (add, sub, mul or div).
    pub fn hides(self, op: BinaryOp) -> bool {
        let FloatConstants::Hidden(ops) = self else { return false };
        match op {
            BinaryOp::Add => ops.add,
            BinaryOp::Sub => ops.sub,
            BinaryOp::Mul => ops.mul,
            BinaryOp::Div => ops.div,
            _ => false,
        }
    }
}

/// A set of the four float operations of [`FloatConstants::Hidden`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloatOps {
    pub add: bool,
    pub sub: bool,
    pub mul: bool,
    pub div: bool,
}

impl FloatOps {
    pub const ALL: FloatOps = FloatOps { add: true, sub: true, mul: true, div: true };

    pub fn union(self, other: FloatOps) -> FloatOps {
        FloatOps {
            add: self.add || other.add,
            sub: self.sub || other.sub,
            mul: self.mul || other.mul,
            div: self.div || other.div,
        }
    }

    pub fn is_empty(self) -> bool {
        self == FloatOps::default()
    }

    /// The operations' names, `add`, `sub`, `mul`, `div`, commas between.
    pub fn names(self) -> String {
        let all = [(self.add, "add"), (self.sub, "sub"), (self.mul, "mul"), (self.div, "div")];
        all.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
    }
}

/// [`Target::loop_guard`]: when a kernel's loop iterations, counted per subgroup as
/// the driver counts them, reach `limit`, the launch fails with
/// [`crate::system::STATUS_LOOP_LIMIT`] instead of going on with a loop cut short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopGuard {
    /// Iterations a subgroup may run in all (below the driver's own limit, with a
    /// margin).
    pub limit: u32,
    /// Subgroups a workgroup can have on the device (one counter each, in shared
    /// memory): the largest block over the smallest subgroup size.
    pub subgroups: u32,
}

/// Which widths of the device's `Fma` are fused ([`Target::fused_fma`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FusedFma {
    pub f32: bool,
    pub f64: bool,
}

impl Target {
    /// A device with f64, without 8- and 16-bit integers, whose warps are `warp_mode`.
    pub fn with_warp_mode(warp_mode: WarpMode) -> Target {
        Target {
            warp_mode,
            float64: true,
            fused_fma: FusedFma::default(),
            native_float: false,
            int8: false,
            int16: false,
            check: false,
            racecheck: false,
            initcheck: false,
            confine: false,
            float_constants: FloatConstants::default(),
            hide_sign_extensions: false,
            loop_guard: None,
            shared_memory_bytes: None,
            emulated_subgroup: None,
        }
    }

    /// How exact f32 `fma`, `div`, `rcp` and `sqrt` are computed, as `ptxvk devices`
    /// and `ptxvk run --json` report it: `f64-residuals` (an f64 candidate corrected
    /// with exact f64 residuals) or `integer` (integer arithmetic only).
    pub fn float_strategy(&self) -> &'static str {
        if self.native_float {
            return "native (Vulkan precision, not exact)";
        }
        match (self.float64, self.fused_fma.f32) {
            (true, false) => "f64-residuals",
            (true, true) => "f64-residuals, fused f32 fma",
            (false, false) => "integer",
            (false, true) => "integer, fused f32 fma",
        }
    }

    /// What `ptxvk compile` targets without a device: code that runs on every Vulkan
    /// device ptxvk supports (emulated warps, no f64 for f32 code).
    pub fn portable() -> Target {
        Target {
            warp_mode: WarpMode::Emulated,
            float64: false,
            fused_fma: FusedFma::default(),
            native_float: false,
            int8: false,
            int16: false,
            check: false,
            racecheck: false,
            initcheck: false,
            confine: false,
            float_constants: FloatConstants::default(),
            hide_sign_extensions: false,
            loop_guard: None,
            shared_memory_bytes: None,
            emulated_subgroup: None,
        }
    }
}

impl Default for Target {
    fn default() -> Target {
        Target::with_warp_mode(WarpMode::default())
    }
}

/// The verifier after a pass, in debug builds.
fn checked(k: &Kernel, body: Option<&[Node]>) -> Result<(), Vec<Diagnostic>> {
    if cfg!(debug_assertions) {
        verify::run(k)?;
        if let Some(body) = body {
            verify::structured(k, body)?;
        }
    }
    Ok(())
}

/// Runs every pass over one kernel from semantic analysis (or parsed from
/// `crate::text`).
pub fn run(mut kernel: Kernel, target: &Target) -> Result<LoweredKernel, Vec<Diagnostic>> {
    verify::run(&kernel)?;
    // First: every later pass sees the module data's and the parameter block's
    // addresses as the arithmetic on their bases.
    expand_data_addresses::run(&mut kernel);
    // The later passes before inline see a function's registers as values.
    thread_registers::run(&mut kernel).map_err(|d| vec![d])?;
    // Before expand_vector_atomics: vector loads and stores are plain accesses.
    expand_strong::run(&mut kernel);
    checked(&kernel, None)?;
    expand_vector_atomics::run(&mut kernel);
    checked(&kernel, None)?;
    // Before the others: the later passes see the windows' offsets as constants.
    layout_memory::run(&mut kernel);
    checked(&kernel, None)?;
    expand_isspace::run(&mut kernel);
    checked(&kernel, None)?;
    // Before infer_spaces, which infers the spaces of the widened addresses.
    widen_generic::run(&mut kernel);
    checked(&kernel, None)?;
    // Before inline: each function's generic addresses are inferred in its own body.
    infer_spaces::run(&mut kernel);
    checked(&kernel, None)?;
    thread_ends::run(&mut kernel);
    checked(&kernel, None)?;
    expand_indirect_calls::run(&mut kernel).map_err(|d| vec![d])?;
    checked(&kernel, None)?;
    // First of the others: every later pass sees the kernel as one CFG.
    inline::run(&mut kernel).map_err(|d| vec![d])?;
    // After inline (the kernel's blocks only); before split_grid, which recognizes the
    // grid workspace's reads.
    expand_special::run(&mut kernel);
    // After inline: a stack push that does not fit ends the thread at a `return`.
    expand_stack::run(&mut kernel).map_err(|d| vec![d])?;
    // The calls of CUDA's functions, now all the kernel's: before the expansions of
    // what they become.
    expand_runtime::run(&mut kernel).map_err(|d| vec![d])?;
    // First of the other expansions: its blocks come where sema's dispatch had them, before
    // the others'; before expand_system, which writes out its failures.
    expand_generic::run(&mut kernel).map_err(|d| vec![d])?;
    expand_video::run(&mut kernel);
    expand_integer::run(&mut kernel);
    expand_formats::run(&mut kernel);
    expand_texture::run(&mut kernel).map_err(|d| vec![d])?;
    expand_matrix::run(&mut kernel).map_err(|d| vec![d])?;
    expand_copies::run(&mut kernel).map_err(|d| vec![d])?;
    expand_mbarrier::run(&mut kernel).map_err(|d| vec![d])?;
    // Before expand_warp: the trees it recognises are still `shfl` instructions.
    warp_trees::run(&mut kernel, target);
    checked(&kernel, None)?;
    let collectives_synced = schedule::every_collective_synced(&kernel);
    expand_warp::run(&mut kernel).map_err(|d| vec![d])?;
    // Before expand_system, which writes the grid workspace's address out: the grid
    // barriers (and cooperative groups' inline ones) cut the kernel into phases.
    split_grid::run(&mut kernel);
    checked(&kernel, None)?;
    // Last of the expansions (the others may report failures through it), and before
    // check and schedule, which see its accesses and loops as before.
    expand_system::run(&mut kernel).map_err(|d| vec![d])?;
    checked(&kernel, None)?;
    if check::Mode::of(target).is_some() {
        check::run(&mut kernel, target);
        checked(&kernel, None)?;
    }
    hoist_params::run(&mut kernel, target).map_err(|d| vec![d])?;
    checked(&kernel, None)?;
    // Before atomics: the compare-and-swap loops legalize_atomics makes are not polling.
    schedule::run(&mut kernel, target.warp_mode, collectives_synced).map_err(|d| vec![d])?;
    checked(&kernel, None)?;
    // Atomics first: their loops for half-precision adds contain float arithmetic that
    // legalize_floats must see.
    legalize_atomics::run(&mut kernel, target).map_err(|d| vec![d])?;
    checked(&kernel, None)?;
    legalize_floats::run(&mut kernel, target).map_err(|d| vec![d])?;
    checked(&kernel, None)?;
    // After legalize_floats, whose instructions keep the modifiers of those they replace.
    float_modifiers::run(&mut kernel);
    checked(&kernel, None)?;
    // After float_modifiers: the routines take plain operands.
    emulate::run(&mut kernel, target).map_err(|d| vec![d])?;
    checked(&kernel, None)?;
    // After emulate, whose calls of the f64 fast paths it groups.
    retry_regions::run(&mut kernel);
    checked(&kernel, None)?;
    // After emulate, whose calls of the f32 fast paths it groups; after retry_regions,
    // as the emitter grouped them: the f64 regions first.
    exact_runs::run(&mut kernel);
    checked(&kernel, None)?;
    legalize_warps::run(&mut kernel, target).map_err(|d| vec![d])?;
    checked(&kernel, None)?;
    let mut body = structurize::run(&mut kernel).map_err(|d| vec![d])?;
    structure_routines(&mut kernel)?;
    checked(&kernel, Some(&body))?;
    if uniformity::check(&kernel, &body).is_err() {
        body = predicate::run(&mut kernel, body).map_err(|d| vec![d])?;
        checked(&kernel, Some(&body))?;
        uniformity::check(&kernel, &body)?;
    }
    // After predication, whose block-wide votes are loops the driver counts too.
    if let Some(guard) = &target.loop_guard {
        body = loop_guard::run(&mut kernel, body, guard);
        checked(&kernel, Some(&body))?;
    }
    // After every pass that adds shared accesses, before the windows are legalized.
    shared_in_memory::run(&mut kernel, target);
    checked(&kernel, Some(&body))?;
    // Last: predication stores its vote word too, a partial word in a wide window.
    legalize_memory::run(&mut kernel, target).map_err(|d| vec![d])?;
    verify::run(&kernel)?;
    verify::structured(&kernel, &body)?;
    legalized(&kernel, target)?;
    Ok(LoweredKernel { kernel, body })
}

/// Routine `r` as `run` leaves it in a kernel: built ([`crate::routines::build`]) and
/// structured, for the structured text format, which names a routine instead of
/// printing it (`crate::text`), and for the routines' tests. Its calls are of the
/// functions of a kernel of its own, its [`crate::ir::Routine::callees`] in that order.
pub fn routine(r: crate::ir::Routine) -> Result<crate::ir::Function, Vec<Diagnostic>> {
    let callees: Vec<_> = r.callees().into_iter().map(crate::routines::build).collect();
    structured(crate::routines::build(r), &callees)
}

/// Routine `f` structured and verified as `run` leaves it, in a kernel whose functions
/// are `functions` (those it calls).
pub fn structured(
    mut f: crate::ir::Function,
    functions: &[crate::ir::Function],
) -> Result<crate::ir::Function, Vec<Diagnostic>> {
    let shell = Kernel {
        functions: functions.to_vec(),
        ..Kernel::new(f.name.clone(), f.span, Default::default())
    };
    f.body = f.rewrite_in(shell, |shell| {
        let body = structurize::run(shell).map_err(|d| vec![d])?;
        verify::run(shell)?;
        verify::structured(shell, &body)?;
        Ok::<_, Vec<Diagnostic>>(body)
    })?;
    Ok(f)
}

/// Structures each emulation routine's body as the kernel's ([`structurize`]); the
/// passes after it rewrite nothing a routine contains (core integer operations), which
/// [`legalized`] checks.
fn structure_routines(k: &mut Kernel) -> Result<(), Vec<Diagnostic>> {
    for f in k.functions.iter_mut().filter(|f| f.routine.is_some() && f.body.is_empty()) {
        f.body = f.rewrite_in_shell(structurize::run).map_err(|d| vec![d])?;
    }
    Ok(())
}

/// What a legalization should have rewritten in `kind` and did not, if anything: the
/// postconditions of the legalizations that the emitter relies on, each of which
/// failing is a ptxvk bug. The emitter asks this of every instruction too.
pub fn leftover(k: &Kernel, kind: &InstKind) -> Option<&'static str> {
    if inline::is_call(k, kind) {
        Some("a call left by inline")
    } else if matches!(kind, InstKind::EndThread) {
        Some("a thread end left by thread_ends")
    } else if expand_indirect_calls::is_indirect_call(kind) {
        Some("an indirect call left by expand_indirect_calls")
    } else if emulate::emulated(kind).is_some() {
        Some("an operation left by emulate (exact float arithmetic, `.approx`, narrow formats)")
    } else if legalize_floats::is_directed(kind) {
        Some("directed rounding left by legalize_floats")
    } else if float_modifiers::remains(kind) {
        Some("a `.ftz` or `.sat` left by float_modifiers")
    } else if legalize_atomics::needs_loop(k, kind) {
        Some("an atomic left by legalize_atomics")
    } else if legalize_memory::is_partial_access(k, kind) {
        Some("a window access that is not one word left by legalize_memory")
    } else if legalize_warps::is_exchange(kind) {
        Some("a warp exchange left by legalize_warps")
    } else if schedule::is_sync_point(kind) {
        Some("a sync point left by schedule")
    } else if expand_generic::is_generic(kind) {
        Some("a generic access left by expand_generic")
    } else if matches!(kind, InstKind::VariableAddress(_)) {
        Some("a variable address left by layout_memory")
    } else if matches!(kind, InstKind::Cvta { .. }) {
        Some("a `cvta` left by infer_spaces")
    } else if matches!(kind, InstKind::IsSpace(_)) {
        Some("an `isspacep` left by expand_isspace")
    } else if expand_strong::remains(k, kind) {
        Some("a strong access left by expand_strong")
    } else if expand_vector_atomics::is_vector_atomic(kind) {
        Some("a vector atomic left by expand_vector_atomics")
    } else if expand_video::is_video(kind) {
        Some("a video instruction left by expand_video")
    } else if expand_integer::is_integer(kind) {
        Some("an integer operation left by expand_integer")
    } else if expand_formats::is_half(kind) {
        Some("half arithmetic or a narrow-format conversion left by expand_formats")
    } else if expand_texture::is_texture(kind) {
        Some("a texture or surface instruction left by expand_texture")
    } else if expand_matrix::is_matrix(kind) {
        Some("a matrix instruction left by expand_matrix")
    } else if expand_copies::is_copy(kind) {
        Some("an asynchronous copy left by expand_copies")
    } else if expand_mbarrier::is_mbarrier(kind) {
        Some("an mbarrier instruction left by expand_mbarrier")
    } else if expand_data_addresses::is_data_address(kind) {
        Some("a data address left by expand_data_addresses")
    } else if expand_special::is_derived_special(kind) {
        Some("a derived special register left by expand_special")
    } else if expand_warp::is_collective(kind) {
        Some("a warp collective left by expand_warp")
    } else if expand_runtime::is_runtime_call(kind) {
        Some("a call of a runtime function left by expand_runtime")
    } else if expand_stack::is_stack(kind) {
        Some("a stack operation left by expand_stack")
    } else if expand_system::is_system(kind) {
        Some("a system call or device-side launch left by expand_system")
    } else {
        None
    }
}

/// The postconditions of the legalizations together ([`leftover`], and on a target
/// without f64 no arithmetic that needs it): an instruction one of them should have
/// rewritten is a ptxvk bug, reported at its span here rather than later by the emitter.
fn legalized(k: &Kernel, target: &Target) -> Result<(), Vec<Diagnostic>> {
    let left = |kind: &InstKind| -> Option<&'static str> {
        leftover(k, kind).or_else(|| {
            (!target.float64 && legalize_floats::needs_f64(kind)).then_some(
                "f32 arithmetic needing f64 left by legalize_floats on a target without it",
            )
        })
    };
    let errors: Vec<Diagnostic> = k
        .all_insts()
        .filter_map(|i| left(&i.kind).map(|what| Diagnostic::internal(i.span, what)))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEFTOVERS: &str = "\
kernel leftovers {
    params size 8 align 8
    param p .u64 x1 @0 size 8 align 8
    shared 4
    local 0
    entry bb0
    reg i64 %rd1
    reg i32 %r1
    reg i16 %h1
    reg f32 %f1
bb0:
    %rd1 = load.param.u64 [0]
    %r1 = atom.inc.global.gpu.relaxed.u32 [%rd1], 9, 0
    store.shared.u16 [2], %h1
    %r1 = vabsdiff.u32.u32.u32.sat %r1.b1, 9
    %h1 = hmax.bf16.nan %h1, 0x7f80
    warp_publish %r1
    warp_sync
    %r1 = tex_query.width %rd1
    %r1 = movmatrix %r1
    %r1 = load.generic.u32 [%rd1]
    %f1 = div.f32 %f1, %f1
    return
}
";

    #[test]
    fn leftovers_are_internal_errors_and_the_pipeline_leaves_none() {
        let k = crate::text::parse(LEFTOVERS).expect("parses").remove(0);
        let errors = legalized(&k, &Target::default()).expect_err("ten leftovers");
        let messages: Vec<&str> = errors.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(errors.len(), 10, "{messages:?}");
        assert!(errors.iter().all(|d| d.severity == ptxvk_frontend::Severity::Internal));
        for pass in [
            "legalize_atomics",
            "legalize_memory",
            "legalize_warps",
            "expand_video",
            "expand_formats",
            "expand_texture",
            "expand_matrix",
            "expand_generic",
            "emulate",
        ] {
            assert!(messages.iter().any(|m| m.contains(pass)), "{pass}: {messages:?}");
        }
        for mode in [WarpMode::Emulated, WarpMode::Native] {
            let lowered = run(k.clone(), &Target::with_warp_mode(mode)).expect("lowers");
            assert!(legalized(&lowered.kernel, &Target::default()).is_ok());
        }
    }

    #[test]
    fn a_call_is_a_leftover_until_inlined() {
        let text = "kernel calls {\n    params size 0 align 1\n    shared 0\n    local 0\n    \
                    entry bb0\n    reg i32 %r1\nbb0:\n    %r1 = call.fn0 7\n    return\n\
                    function fn0 same {\n    entry bb0\n    reg i32 %x\n    param u32 %x\n    \
                    return u32 %x\nbb0:\n    return\n}\n}\n";
        let k = crate::text::parse(text).expect("parses").remove(0);
        let errors = legalized(&k, &Target::default()).expect_err("a call");
        assert!(errors[0].message.contains("inline"), "{}", errors[0].message);
        let lowered = run(k, &Target::default()).expect("lowers");
        assert!(lowered.kernel.functions.iter().all(|f| f.routine.is_some()));
        assert!(legalized(&lowered.kernel, &Target::default()).is_ok());
    }
}
