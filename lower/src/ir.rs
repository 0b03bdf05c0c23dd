//! The CFG IR: kernels of basic blocks over typed virtual registers.
//!
//! # Specification
//!
//! * A [`Module`] holds the kernels (`.entry` functions) of one PTX file, in source order.
//! * A [`Kernel`] owns arenas indexed by typed `u32` handles: registers ([`RegId`]) and
//!   basic blocks ([`BlockId`]). Every block and instruction keeps the [`Span`] of the PTX
//!   it came from.
//! * **Registers** are mutable virtual registers, one per PTX register (plus temporaries
//!   made by semantic analysis). Each has a storage type [`RegTy`]: a predicate, an
//!   integer of 8/16/32/64 bits, or a float of 32/64 bits. Registers start undefined.
//! * **Operands are bit patterns.** An instruction reads its operands at its operation
//!   type ([`OpTy`]); a register whose storage type has the same width but another kind
//!   (a `.b32` register read by `add.f32`) is reinterpreted bit for bit. Semantic analysis
//!   guarantees equal widths; only [`InstKind::Convert`], [`InstKind::Load`] and [`InstKind::Store`]
//!   change widths, as PTX's `cvt`, `ld` and `st` do (PTX ISA 9.2 §6.4.x).
//! * **Evaluation order**: instructions of a block run in order; each reads all its
//!   operands before writing any destination. The terminator runs last.
//! * **Control flow**: a block ends in a [`Terminator`] (jump, two-way branch on a
//!   predicate, switch on a 32-bit selector, return). Predicated PTX instructions have
//!   already been split into their own blocks behind a [`Terminator::Branch`], so
//!   instructions inside a block are unconditional. Any graph is allowed; the
//!   structurizer's passes may add blocks and selector registers.
//! * **Memory**: addresses are byte addresses. `Global` addresses are 64-bit device
//!   addresses; `Shared` addresses are 32-bit offsets into the kernel's one shared
//!   window (static variables first, then dynamic `extern .shared` memory); `Param`
//!   addresses are offsets into the kernel parameter block laid out per the CUDA ABI
//!   ([`crate::abi`]).
//! * **Generic addresses** ([`Space::Generic`], PTX ISA 9.2 §6.4.1.1) are 64-bit, laid
//!   out as the launch ABI's windows ([`SHARED_WINDOW`], [`LOCAL_WINDOW`]): an address
//!   whose upper half is the shared window's is the shared address of its lower half,
//!   one whose upper half is the local window's the local address of its lower half,
//!   and any other a global address. A generic `Load`, `Store` or `Atomic` accesses the
//!   space its address names, as that space's instruction does (the rules of each are
//!   on [`Space::Generic`]). In a module with 32-bit addresses, a generic access may
//!   have a 32-bit address (base register), in the 32-bit windows ([`SHARED_WINDOW_32`]
//!   …); `pass::widen_generic` widens it to this form first. Generic accesses
//!   are high-level operations too, expanded by `pass::expand_generic` into a test of
//!   the window and a direct access per space.
//! * No instruction traps. Integer division by zero and overflow have the values PTX
//!   hardware produces (documented on [`BinaryOp`]).
//! * **High-level operations** exist only between semantic analysis and the pass that
//!   expands them, which `crate::pass::run` runs first; `crate::pass::leftover` refuses
//!   any that remains: [`InstKind::IsSpace`] (`isspacep`; `pass::expand_isspace`),
//!   [`InstKind::VectorAtomic`] (`atom`/`red` on vectors; `pass::expand_vector_atomics`),
//!   [`InstKind::Video`] (`pass::expand_video`), [`InstKind::Integer`]
//!   (`pass::expand_integer`), [`InstKind::Half`] and [`InstKind::HalfConvert`]
//!   (`pass::expand_formats`), [`InstKind::Texture`] (texture and surface instructions,
//!   [`TextureInst`]; `pass::expand_texture`), [`InstKind::Matrix`] (the warp-level
//!   matrix instructions, [`MatrixInst`], whose module doc specifies them;
//!   `pass::expand_matrix`), [`InstKind::Copy`] (the asynchronous copies, [`CopyInst`],
//!   whose module doc specifies them; `pass::expand_copies`), [`InstKind::Mbarrier`]
//!   (the mbarrier instructions, [`MbarrierOp`], whose module doc specifies the
//!   object's layout and phases; `pass::expand_mbarrier`), [`InstKind::Warp`] (the
//!   warp collectives, [`WarpInst`], whose module doc specifies them, member masks and
//!   lanes that do not arrive included; `pass::expand_warp`), [`InstKind::BarrierReduce`]
//!   (`bar.red`; `pass::expand_warp`), [`InstKind::SyncPoint`] (where a thread may wait
//!   for others, [`SyncPoint`], whose module doc says which collectives a warp one
//!   meets; `pass::schedule`), [`InstKind::System`] and
//!   [`InstKind::DeviceLaunch`] (system calls, failures, the grid barrier and
//!   device-side launches, [`SystemInst`] and [`LaunchInst`], whose module doc
//!   specifies them; `pass::expand_system`), [`InstKind::Stack`] (the thread's stack,
//!   [`StackInst`]; `pass::expand_stack`), [`InstKind::VariableAddress`] (the
//!   variables' addresses, [`Variable`]; `pass::layout_memory`), [`InstKind::DataAddress`]
//!   (module-data and parameter-block addresses; `pass::expand_data_addresses`), the special registers
//!   derived from others ([`SpecialReg::Ptx`], `crate::ir::special`; `pass::expand_special`),
//!   and the accesses of generic addresses
//!   ([`Space::Generic`]; `pass::expand_generic`).
//!
//! # Functions and calls
//!
//! * A kernel owns the device functions (`.func`, PTX ISA 9.2 §7.1, §9.7.12.4) it calls,
//!   in an arena of [`Function`]s indexed by [`FunctionId`] ([`Kernel::functions`]):
//!   naga's shape, a module's functions and a `Call` naming one by handle. They are the
//!   kernel's rather than the [`Module`]'s because semantic analysis lowers a function's
//!   body in the context of the kernel that calls it: its `.shared` variables and the
//!   reserved areas have offsets in that kernel's window, its `.local` and call `.param`
//!   variables offsets in that kernel's local window, and the kernel's generic windows
//!   and shared word decide how its memory instructions are lowered.
//! * A function's body is made of the same parts as a kernel's: its own arenas of
//!   registers ([`RegId`]s index [`Function::regs`], not the kernel's) and blocks, an
//!   entry block, every rule above. [`Function::params`] and [`Function::returns`] are
//!   registers of the function with the [`OpTy`] they are passed at: a call copies each
//!   argument into its parameter register (read at that type), runs the body from its
//!   entry until a [`Terminator::Return`], then copies each return register into the
//!   call's result register. Parameters are values: what the callee writes to a
//!   parameter register is not seen by the caller.
//! * [`InstKind::Call`] calls `callee` with one argument per parameter and one result
//!   register (of the caller) per return register, each as wide as the parameter or
//!   return type. Calls may nest, and a function may call itself, directly or through
//!   others (PTX ISA 9.2 §9.7.12.4): each activation has its own registers. Memory is
//!   shared: the callee sees the caller's local window.
//! * Semantic analysis lowers each function a kernel calls once, and every direct
//!   `call` to one `Call`, every indirect one to one [`InstKind::CallIndirect`] over
//!   the candidates it resolves (`ir::call`'s doc specifies it;
//!   `pass::expand_indirect_calls` writes it out in tests and `Call`s). How PTX's parameters become IR parameters is
//!   `sema::calls`'s: a `.reg` parameter is passed by value; a `.param` parameter or
//!   result is passed as the local-window address (u32) of the caller's `.param`
//!   variable; a kernel that uses the stack passes its stack pointer (u32) as a
//!   parameter ([`Function::stack_pointer`]), so that what a callee allocates is freed
//!   when it returns (PTX ISA 9.2 §9.7.17.1). The local memory below the stack pointer
//!   is free: a function may use it for its own allocations and the frames of its
//!   callees (`pass::recursion` keeps its save areas there), never above.
//! * A function on a call cycle allocates its `.local` and `.param` variables on the
//!   stack, at entry (a [`StackInst::Frame`] that `pass::layout_memory` lays out), so that its
//!   activations never alias.
//! * **Before `pass::inline`**, the kernel and its functions may contain `Call`s (and
//!   `CallIndirect`s, before `pass::expand_indirect_calls`).
//!   **After it** (and `pass::recursion`, which it runs for calls into call cycles), the
//!   kernel contains no `Call` of a device function and
//!   [`Kernel::functions`] holds only emulation routines (below): every later pass, the
//!   structured IR and the emitter see one body per kernel besides them
//!   (`pass::leftover` reports a `Call` of anything else that reaches the emitter as an
//!   internal error).
//!
//! # Emulation routines
//!
//! * An operation the target cannot compute in a few instructions (today f64 `fma`,
//!   `div`, `rcp` and `sqrt` in integer arithmetic, every rounding, on a target with
//!   f64 `fma`, `div` and `rcp` to nearest by their fast paths, the f32 ones and
//!   `RoundToOdd` of a target without f64 (`.soft`), `RoundToOdd` and the f32 `div`,
//!   `rcp` and `sqrt` with a directed rounding in f64 arithmetic on a target with f64,
//!   the narrow formats' conversions
//!   `Narrow`, `IntToFloat` and `Widen`, the `.approx` functions, and `div`, `rcp` and
//!   `sqrt` by Newton steps on a fused `Fma`) is a `Call` of an
//!   emulation routine: a [`Function`] whose [`Function::routine`] names it
//!   ([`Routine`]), built once from core integer operations by `crate::routines` with the
//!   one IR builder (`crate::build::Build`). `pass::emulate` adds the call and, on first
//!   use in a kernel, the routine to [`Kernel::functions`]. So does `pass::check` for
//!   the search of a checked launch's allocation table ([`Routine::InAllocation`],
//!   [`Routine::ShadowWord`]).
//! * Routines live in the kernel that calls them, like device functions (they read no
//!   register, memory or state of it: pure functions of their integer arguments, one
//!   result; the table's routines read the table their argument points to, which no
//!   kernel writes); the same [`Routine`] is the same function in every kernel of a module,
//!   so the emitter writes each once per module, as a SPIR-V function, and each call
//!   as a function call. The `.approx` routines ([`Routine::Approx`]) are f64
//!   arithmetic legalized for the target when `pass::emulate` adds them, and call the
//!   f64 routines; the f32 ones without f64 call the f64 routines and the
//!   conversions they need, [`Routine::FmaF32InF64`] calls
//!   [`Routine::OddF32InF64`], and [`Routine::NearestF32`] and
//!   [`Routine::NearestF64`] their fast path ([`Routine::FastF32`],
//!   [`Routine::FastF64`]) and, behind a branch, the exact routine
//!   ([`Routine::callees`]); the Newton routines
//!   ([`Routine::Newton`]) are float arithmetic on the device's own operations, their
//!   exact path legalized the same way (f64: a call of the f64 routine, by its fast
//!   path with f64; f32 without
//!   f64: a call of the f32 routine); the others call no function. A routine's float
//!   arithmetic is emitted as a program's, its operands hidden from a driver that folds
//!   known operands, but a `.visible` one's ([`FloatMode::visible`]);
//!   [`Routine::OddF32InF64`], [`Routine::FmaF32InF64`] and the `fma` of
//!   [`Routine::FastF32`] and [`Routine::NearestF32`] have a form per target,
//!   which `pass::emulate` picks (with the sign of a zero sum repaired for a driver
//!   that was not probed); `pass::exact_runs` calls [`Routine::FastF32`] and the exact
//!   routines ([`Routine::FmaF32InF64`], [`Routine::DivF32InF64`],
//!   [`Routine::SqrtF32InF64`]) for the sites of a run, and `pass::retry_regions` makes
//!   runs of [`Routine::NearestF64`] calls loops that call its callees,
//!   [`Routine::FastF64`] and the f64 integer routines, directly.
//! * `pass::inline` leaves routines and their calls. The passes after `pass::emulate`
//!   see them (and those after `pass::check`, the table's): `crate::pass::run`
//!   structures each routine's body as the kernel's ([`Function::body`]); the other
//!   later passes rewrite nothing a routine contains (core integer arithmetic,
//!   comparisons and selects, in one block but for the loop of `sin` and `cos` without
//!   f64 and the table's search, whose global loads are plain 64-bit-address ones),
//!   which the verifier's checks of the legalizations confirm; `pass::loop_guard`
//!   counts a routine's loops at each call.

use ptxvk_frontend::Span;

/// The parameter block of one kernel (the launch ABI's layout, `ptxvk_abi::params`, over
/// PTX's scalar types; `crate::abi` lays it out).
pub type KernelAbi = ptxvk_abi::params::KernelAbi<ptxvk_frontend::ast::ScalarType>;

mod call;
mod copy;
mod data_address;
mod half;
mod integer;
mod layout;
mod matrix;
mod mbarrier;
mod routine;
mod space_test;
mod special;
mod stack;
mod sync;
mod system;
mod texture;
mod variable;
mod vector_atomic;
mod video;
mod warp;
pub use call::CallArm;
pub use copy::*;
pub use data_address::DataAddress;
pub use half::*;
pub use integer::*;
pub use layout::*;
pub use matrix::*;
pub use mbarrier::*;
pub use ptxvk_frontend::forms::formats::FloatFormat;
pub use routine::{
    F32Op, F64Op, NewtonOp, Routine, SIN_COS_REDUCTION_ITERATIONS, TABLE_SEARCH_ITERATIONS,
};
pub use space_test::{IsSpaceInst, SpaceTest};
pub use special::{ptx_register, PtxReg, SpecialLookup, SpecialWidth};
pub use stack::*;
pub use sync::{SyncPoint, WarpSyncKind};
pub use system::*;
pub use texture::{
    Boundary, Channel, SurfaceAccess, SurfaceOp, TexGeometry, TexHandle, TexLod, TexQuery,
    TexResult, TextureFetch, TextureInst, TextureQuery,
};
pub use variable::*;
pub use vector_atomic::VectorAtomic;
pub use video::*;
pub use warp::*;

macro_rules! id_type {
    ($name:ident) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}
id_type!(RegId);
id_type!(BlockId);
id_type!(FunctionId);

#[derive(Clone, Debug, Default)]
pub struct Module {
    pub address_size: u32,
    pub kernels: Vec<Kernel>,
}

#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    pub span: Span,
    pub abi: KernelAbi,
    pub regs: Vec<RegInfo>,
    pub blocks: Vec<Block>,
    pub entry: BlockId,
    pub shared: SharedLayout,
    /// Bytes of the thread's local window (`.local` variables).
    pub local_bytes: u32,
    /// The variables `pass::layout_memory` places ([`Variable`], whose module doc
    /// specifies them); empty after it.
    pub variables: Vec<Variable>,
    /// `.reqntid` if given: the only block size the kernel may run with.
    pub reqntid: Option<[u32; 3]>,
    /// `.maxntid` if given: the largest block size.
    pub maxntid: Option<[u32; 3]>,
    /// `.maxnreg` if given: the most registers per thread the kernel may use.
    pub maxnreg: Option<u32>,
    /// The kernel synchronizes its whole grid (`cudaCGSynchronize`, or reads the grid
    /// workspace of cooperative groups' inline barrier).
    pub grid_sync: bool,
    /// The kernel declares its cluster shape (`%is_explicit_cluster`, [`PtxReg`]).
    pub explicit_cluster: bool,
    /// How `pass::split_grid` cut the kernel into phases at its grid barriers; `None`
    /// before it, or without any.
    pub grid_phases: Option<GridPhases>,
    /// The kernel reports traps, failed assertions or printf output through the
    /// system area after its parameter block ([`crate::system`]).
    pub system: bool,
    /// The module's address size: 64, or 32 (`.address_size 32`, or none), where global
    /// addresses are 32-bit offsets into the address window ([`SpecialReg::WindowBase`]).
    pub address_size: u32,
    /// The kernel calls `malloc`: the runtime gives the module a device heap.
    pub heap: bool,
    /// The shared byte offset of the warp scratch (one word per thread) of kernels
    /// with warp collectives (`sema::warp`).
    pub warp_scratch: Option<u32>,
    /// A shared word for block-wide votes (`crate::pass::predicate`), reserved with the warp
    /// scratch.
    pub block_vote: Option<u32>,
    /// The spans of the PTX memory instructions (`ld`, `ldu`, `st`, `atom`, `red`) in
    /// source order, each once: the instructions whose accesses are the program's own, as
    /// opposed to those semantic analysis adds (system calls, call frames, warp scratch).
    /// `pass::check` instruments exactly the accesses with these spans.
    pub memory_instructions: Vec<Span>,
    /// The spans of the `ld.volatile`/`st.volatile` among them, which are strong
    /// (`.relaxed.sys`) accesses to the memory model but, unlike atomics, may race: CUDA
    /// C++'s `volatile` does not order threads (racecheck, `pass::check`).
    pub volatile_accesses: Vec<Span>,
    /// The spans of the instructions that read memory another thread may have just
    /// written and that a loop can poll (`pass::schedule`): strong loads (`ld.volatile`,
    /// `ld.relaxed`, `ld.acquire`; the 32- and 64-bit ones are atomic loads) and
    /// mbarrier waits. Atomics that poll are told by their operation.
    pub polling_reads: Vec<Span>,
    /// Where the block scheduler of `pass::schedule` may find a kernel stuck: the
    /// polling loops and waits it reports by index in a failure record (`crate::system`).
    pub wait_sites: Vec<Span>,
    /// The accesses `pass::check` instrumented; a violation record names its site by
    /// index here (`crate::system`).
    pub check_sites: Vec<CheckSite>,
    /// The loops whose iterations a kernel guarded against the driver's loop limit
    /// counts (`pass::loop_guard`), by the span of each (a loop's header block, or the
    /// instruction the backend makes a loop of), which a loop-limit failure names by
    /// index; empty when not guarded.
    pub guarded_loops: Vec<Span>,
    /// The kernels this kernel may launch from the device (`cudaLaunchDevice`,
    /// `crate::device_launch`), by name, in the order of their addresses: every kernel
    /// of the module. Empty when it launches none.
    pub device_launches: Vec<String>,
    /// The device functions the kernel calls ([`InstKind::Call`]), directly or through
    /// each other, indexed by [`FunctionId`]; empty after `pass::inline`.
    pub functions: Vec<Function>,
}

/// A function's parameter or return registers, in order, each with the type its value
/// is passed at.
pub type PassedRegs = Vec<(RegId, OpTy)>;

/// A device function (`.func`) as a kernel calls it: its own registers and blocks, the
/// registers its parameters arrive in and its results leave from (module doc,
/// *Functions and calls*).
#[derive(Clone, Debug)]
pub struct Function {
    /// The PTX name.
    pub name: String,
    pub span: Span,
    /// Parameter registers, in order, each with the type the argument is read at.
    pub params: PassedRegs,
    /// Return registers, in order, each with the type the result is written at.
    pub returns: PassedRegs,
    /// The parameter (u32) that holds the thread's stack pointer, in a kernel that
    /// uses the stack (module doc, *Functions and calls*).
    pub stack_pointer: Option<RegId>,
    /// Its registers that stand for registers of the kernel, each with the kernel's
    /// (`ir::call`'s doc, *Thread registers*), until `pass::thread_registers`.
    pub thread_regs: Vec<(RegId, RegId)>,
    pub regs: Vec<RegInfo>,
    pub blocks: Vec<Block>,
    pub entry: BlockId,
    /// The emulation routine this function is, if it is one (module doc, *Emulation
    /// routines*): `pass::inline` leaves its calls, the emitter writes it once per
    /// module. A function is a routine exactly when its name is [`Routine::name`].
    pub routine: Option<Routine>,
    /// A routine's structured body, once `crate::pass::run` has structured it (empty
    /// before, and for every other function).
    pub body: Vec<Node>,
}

impl Function {
    /// A function without registers, parameters or blocks (its entry is to be `bb0`).
    pub fn new(name: String, span: Span) -> Function {
        Function::with_routine(Routine::from_name(&name), name, span)
    }

    /// [`Self::new`] for routine `r`, named [`Routine::name`] without parsing the name
    /// back ([`Routine::from_name`]'s table of every routine's name, which it builds on
    /// its first use, takes a quarter of a millisecond).
    pub fn of_routine(r: Routine, span: Span) -> Function {
        Function::with_routine(Some(r), r.name(), span)
    }

    fn with_routine(routine: Option<Routine>, name: String, span: Span) -> Function {
        Function {
            routine,
            name,
            span,
            params: Vec::new(),
            returns: Vec::new(),
            stack_pointer: None,
            thread_regs: Vec::new(),
            regs: Vec::new(),
            blocks: Vec::new(),
            entry: BlockId(0),
            body: Vec::new(),
        }
    }

    /// A kernel with this function's registers, blocks and entry and nothing else, for
    /// the passes and the emitter, which work on kernels.
    pub fn shell(&self) -> Kernel {
        Kernel {
            regs: self.regs.clone(),
            blocks: self.blocks.clone(),
            entry: self.entry,
            ..Kernel::new(self.name.clone(), self.span, KernelAbi::default())
        }
    }

    /// Runs `pass` on a [`Self::shell`] that this function's registers and blocks are
    /// moved into (not copied: routines are large), and takes back the registers,
    /// blocks and entry it leaves: how a pass that works on kernels rewrites a function.
    pub fn rewrite_in_shell<T>(&mut self, pass: impl FnOnce(&mut Kernel) -> T) -> T {
        self.rewrite_in(Kernel::new(self.name.clone(), self.span, KernelAbi::default()), pass)
    }

    /// [`Self::rewrite_in_shell`] in `shell`, a kernel whose registers, blocks and entry
    /// are replaced by this function's for the pass (its other parts, such as the
    /// functions a routine calls, stay).
    pub fn rewrite_in<T>(&mut self, mut shell: Kernel, pass: impl FnOnce(&mut Kernel) -> T) -> T {
        shell.regs = std::mem::take(&mut self.regs);
        shell.blocks = std::mem::take(&mut self.blocks);
        shell.entry = self.entry;
        let out = pass(&mut shell);
        (self.regs, self.blocks, self.entry) = (shell.regs, shell.blocks, shell.entry);
        out
    }

    pub fn reg(&self, r: RegId) -> &RegInfo {
        &self.regs[r.index()]
    }
}

#[derive(Clone, Debug)]
pub struct RegInfo {
    /// The PTX name, or a pass's; empty for a temporary ([`new_temp`]), which the text
    /// names `$t` and its index.
    pub name: String,
    pub ty: RegTy,
    pub span: Span,
}

/// A new temporary register of type `ty` in `regs` (a kernel's or a function's): the
/// one way passes, builders and routines make them. It has no name string, so that
/// making thousands costs no allocation; the text names it by its index.
pub fn new_temp(regs: &mut Vec<RegInfo>, ty: RegTy, span: Span) -> RegId {
    let id = RegId(regs.len() as u32);
    regs.push(RegInfo { name: String::new(), ty, span });
    id
}

/// Storage type of a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegTy {
    Pred,
    Int(u8),
    Float(u8),
}

impl RegTy {
    pub fn bits(self) -> u32 {
        match self {
            RegTy::Pred => 1,
            RegTy::Int(b) | RegTy::Float(b) => b as u32,
        }
    }
}

/// The operation type of an instruction: how it interprets its operand bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpTy {
    Pred,
    /// `.bN` and `.uN`.
    U(u8),
    /// `.sN`.
    S(u8),
    /// `.f32`, `.f64`.
    F(u8),
}

impl OpTy {
    pub fn bits(self) -> u32 {
        match self {
            OpTy::Pred => 1,
            OpTy::U(b) | OpTy::S(b) | OpTy::F(b) => b as u32,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, OpTy::F(_))
    }

    pub fn is_signed(self) -> bool {
        matches!(self, OpTy::S(_))
    }

    /// The register storage type that holds values of this type.
    pub fn storage(self) -> RegTy {
        match self {
            OpTy::Pred => RegTy::Pred,
            OpTy::U(b) | OpTy::S(b) => RegTy::Int(b),
            OpTy::F(b) => RegTy::Float(b),
        }
    }

    /// The same width as an unsigned integer.
    pub fn as_unsigned(self) -> OpTy {
        OpTy::U(self.bits() as u8)
    }
}

/// An instruction operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Reg(RegId),
    /// A constant: the exact bits, zero-extended to 64; read at the instruction's type.
    Imm(u64),
}

#[derive(Clone, Debug)]
pub struct Block {
    /// The PTX label, if the block starts at one.
    pub label: Option<String>,
    pub span: Span,
    pub insts: Vec<Inst>,
    pub term: Terminator,
    pub term_span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Terminator {
    Jump(BlockId),
    /// Go to `if_true` when predicate `cond` (negated when `negate`) holds.
    Branch {
        cond: RegId,
        negate: bool,
        if_true: BlockId,
        if_false: BlockId,
    },
    /// Go to the target of the case equal to the 32-bit `selector`, else to `default`
    /// (`brx.idx`; also the dispatchers the structurizer inserts).
    Switch {
        selector: RegId,
        cases: Vec<(u32, BlockId)>,
        default: BlockId,
    },
    /// `ret` or `exit` in a kernel: the thread ends.
    Return,
}

impl Terminator {
    /// Every target, in order, with repetitions.
    pub fn successors(&self) -> Vec<BlockId> {
        match self {
            Terminator::Jump(b) => vec![*b],
            Terminator::Branch { if_true, if_false, .. } => vec![*if_true, *if_false],
            Terminator::Switch { cases, default, .. } => {
                cases.iter().map(|c| c.1).chain(std::iter::once(*default)).collect()
            }
            Terminator::Return => vec![],
        }
    }

    /// Every target, mutably.
    pub fn targets_mut(&mut self) -> Vec<&mut BlockId> {
        match self {
            Terminator::Jump(b) => vec![b],
            Terminator::Branch { if_true, if_false, .. } => vec![if_true, if_false],
            Terminator::Switch { cases, default, .. } => {
                cases.iter_mut().map(|c| &mut c.1).chain(std::iter::once(default)).collect()
            }
            Terminator::Return => vec![],
        }
    }
}

/// An instruction with the span of its PTX source.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub kind: InstKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    X,
    Y,
    Z,
}

impl Dim {
    pub fn index(self) -> usize {
        match self {
            Dim::X => 0,
            Dim::Y => 1,
            Dim::Z => 2,
        }
    }
}

/// How PTX's 32-lane warps map to the device's subgroups (`docs/architecture.md`,
/// *Warp modes*).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WarpMode {
    /// Subgroups of 32: a warp is a subgroup; collectives are subgroup operations.
    Native,
    /// Subgroups of 64: a warp is half a subgroup.
    Split,
    /// Any other subgroup size: warps exchange through shared memory between
    /// workgroup barriers, with divergent control flow predicated.
    #[default]
    Emulated,
}

impl WarpMode {
    /// The mode for a device whose subgroups have `subgroup_size` invocations.
    pub fn for_subgroup_size(subgroup_size: u32) -> WarpMode {
        match subgroup_size {
            32 => WarpMode::Native,
            64 => WarpMode::Split,
            _ => WarpMode::Emulated,
        }
    }

    /// The subgroup size the mode needs, if a particular one.
    pub fn subgroup_size(self) -> Option<u32> {
        match self {
            WarpMode::Native => Some(32),
            WarpMode::Split => Some(64),
            WarpMode::Emulated => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WarpMode::Native => "native",
            WarpMode::Split => "split",
            WarpMode::Emulated => "emulated",
        }
    }
}

/// A subgroup operation of the native and split warp modes (`sema::warp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubgroupOp {
    /// `value` (32-bit) of lane `lane` of this thread's warp.
    Shuffle,
    /// Bit k set when `value` (32-bit) is non-zero in lane k of this thread's warp
    /// (among the invocations that execute it).
    Ballot,
    /// Emulated warp mode, subgroups narrower than a warp (`pass::warp_trees`):
    /// `value` (32-bit) of lane `lane` of this thread's warp, which must be in this
    /// thread's subgroup (subgroups are consecutive, aligned linear thread ids), and
    /// active; else the result is undefined. The invocation read is `lane` modulo the
    /// subgroup size.
    ShuffleNarrow,
}

/// Special registers (PTX ISA 9.2 §10; PTX's names: [`ptx_register`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialReg {
    Tid(Dim),
    Ntid(Dim),
    Ctaid(Dim),
    Nctaid(Dim),
    /// The device address of the module data (`globals`), a 64-bit value.
    ModuleData,
    /// The device address of the parameter block (followed by the system area), a
    /// 64-bit value.
    ParamBlock,
    /// The device address of the 32-bit address window (a 64-bit value), whose offsets
    /// are the global addresses of a module with `.address_size 32`. Every special
    /// register but these three, [`SpecialReg::DeviceClock`] and
    /// [`SpecialReg::SharedWindowAddress`] is 32-bit ([`SpecialReg::is_64bit`]).
    WindowBase,
    /// Bytes of dynamic shared memory the launch gave (`%dynamic_smem_size`).
    DynamicSharedBytes,
    /// The kernel's static shared bytes (the reserved area of `sema::reserved`
    /// included) plus the launch's dynamic ones (`%total_smem_size`, `%aggr_smem_size`).
    TotalSharedBytes,
    /// The shared offset of the dynamic (`extern .shared`) region: a constant of the
    /// final layout ([`SharedLayout::dynamic_offset`]), which passes may still grow.
    DynamicSharedBase,
    /// VK_KHR_shader_clock's device clock (`OpReadClockKHR` at device scope), a 64-bit
    /// value: `%clock`, `%clock64` and `%globaltimer`. It only increases, but counts in
    /// the device's unit, which Vulkan does not report (PTX's `%globaltimer` counts
    /// nanoseconds).
    DeviceClock,
    /// The device address of the block's shared window when it is in device memory
    /// ([`SharedLayout::in_device_memory`]), a 64-bit value.
    SharedWindowAddress,
    /// 1 when a confined launch may reach allocations outside the device's
    /// confinement range, 0 when it may not (`pass::check`, *Confinement*): a
    /// specialization constant, so that the driver folds the test against those
    /// allocations away in the common case that there are none.
    ConfinedOutside,
    /// A register of the warp model (`%laneid`, `%lanemask_lt`…: [`WarpReg`]), until
    /// `pass::expand_warp` writes it out.
    Warp(WarpReg),
    /// A register derived from others ([`PtxReg`]), until `pass::expand_special`.
    Ptx(PtxReg),
}

impl InstKind {
    /// Whether the instruction only computes its destinations from its operands:
    /// register arithmetic, with no memory, special register, control or call. Running
    /// it again on the same registers gives the same registers.
    pub fn is_register_arithmetic(&self) -> bool {
        matches!(
            self,
            InstKind::Mov { .. }
                | InstKind::Pack { .. }
                | InstKind::Unpack { .. }
                | InstKind::Unary { .. }
                | InstKind::Binary { .. }
                | InstKind::Mad { .. }
                | InstKind::Bfe { .. }
                | InstKind::Bfi { .. }
                | InstKind::Fma { .. }
                | InstKind::Setp { .. }
                | InstKind::Select { .. }
                | InstKind::PredLogic { .. }
                | InstKind::PredNot { .. }
                | InstKind::Convert { .. }
                | InstKind::Narrow { .. }
                | InstKind::IntToFloat { .. }
                | InstKind::Widen { .. }
                | InstKind::RoundToOdd { .. }
        )
    }

    /// Whether every thread of the block must reach this instruction: a workgroup
    /// barrier (`bar.sync`, or an emulated warp collective's). SPIR-V wants
    /// `OpControlBarrier` executed by every invocation of the workgroup, and a driver may
    /// hold to it: lavapipe ends the block when a whole subgroup has returned before a
    /// barrier the others wait at, so what they compute after it is lost
    /// (`crate::uniformity`, `pass::predicate`).
    pub fn is_block_barrier(&self) -> bool {
        matches!(self, InstKind::Barrier | InstKind::WarpBarrier { .. })
    }
}

impl SpecialReg {
    /// Whether the register is 64-bit (addresses and the clock); every other is 32-bit.
    pub fn is_64bit(self) -> bool {
        matches!(
            self,
            SpecialReg::ModuleData
                | SpecialReg::ParamBlock
                | SpecialReg::WindowBase
                | SpecialReg::DeviceClock
                | SpecialReg::SharedWindowAddress
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnaryOp {
    /// Bitwise not.
    Not,
    /// Two's complement negation, or the sign-bit flip for floats (exact, NaNs too).
    Neg,
    /// Absolute value; `abs.s32(INT_MIN) = INT_MIN`; for floats clears the sign bit.
    Abs,
    /// Population count; the destination is 32-bit.
    Popc,
    /// Count leading zeros; the destination is 32-bit; `clz(0)` = width.
    Clz,
    /// Bit reverse.
    Brev,
    /// Square root, correctly rounded (`sqrt.rn.f32`).
    Sqrt,
    /// Reciprocal, correctly rounded (`rcp.rn.f32`).
    Rcp,
    /// `cnot`: 1 if the operand is 0, else 0.
    Cnot,
    /// `ex2.approx.f32`: 2^x. The `.approx` operations below are computed in f64 and
    /// rounded once to f32, far inside the error bounds the PTX ISA documents for them
    /// (§9.7.3.14-22), with the special values the ISA tables give.
    Ex2,
    /// `lg2.approx.f32`: log2(x).
    Lg2,
    /// `sin.approx.f32`.
    Sin,
    /// `cos.approx.f32`.
    Cos,
    /// `rsqrt.approx.f32`: 1/sqrt(x). With [`FloatPath::Native`] (f32 or f64; only in
    /// the Newton routines, [`Routine::Newton`]) the device's own reciprocal square root,
    /// GLSL.std.450 `InverseSqrt`, of Vulkan's precision (the interpreter computes it as
    /// the `.approx` one: the Newton steps then give the correctly rounded result).
    Rsqrt,
    /// `tanh.approx.f32`.
    Tanh,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    /// Low half of the product (`mul.lo`, float `mul`).
    Mul,
    /// High half of the double-width product (`mul.hi`).
    MulHi,
    /// Double-width product (`mul.wide`): operands of the op type, result twice as wide.
    MulWide,
    /// Integer division truncates toward zero. Division by zero gives all ones
    /// (unsigned) or -1 (signed); `INT_MIN / -1` gives `INT_MIN`.
    Div,
    /// Remainder with the sign of the dividend. `x % 0 = x`; `INT_MIN % -1 = 0`.
    Rem,
    Min,
    Max,
    And,
    Or,
    Xor,
    /// Shift left; amounts (u32) at or above the width give 0.
    Shl,
    /// Shift right, arithmetic for signed types; amounts at or above the width give
    /// 0 or the sign fill.
    Shr,
}

/// The comparison of `setp` and its kin, as the front end decodes it.
pub use ptxvk_frontend::decode::CmpOp;

/// A predicate combine (`setp.lt.and`) or bitwise operation, as the front end decodes
/// it.
pub use ptxvk_frontend::decode::BoolOp;

/// Rounding of float results and float→int conversions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rounding {
    /// Round to nearest even (`.rn`, `.rni`).
    #[default]
    Nearest,
    /// Toward zero (`.rz`, `.rzi`).
    Zero,
    /// Toward -inf (`.rm`, `.rmi`).
    Down,
    /// Toward +inf (`.rp`, `.rpi`).
    Up,
    /// To nearest, ties away from zero (`.rna`; only for [`InstKind::Narrow`]).
    NearestAway,
}

/// An atomic operation, scope and order, as the front end decodes them
/// ([`ptxvk_frontend::forms::atomic`]).
pub use ptxvk_frontend::forms::atomic::{AtomicOp, Order, Scope};

/// The operation of [`InstKind::RoundToOdd`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OddOp {
    Add,
    Sub,
    Mul,
    /// `a * b + c`.
    Fma,
}

/// Float modifiers shared by arithmetic instructions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloatMode {
    /// `.ftz`: subnormal inputs and results become sign-preserving zero.
    pub ftz: bool,
    /// `.sat`: clamp the result to [0.0, 1.0], NaN to 0.0.
    pub sat: bool,
    /// The rounding of `div`, `rcp` and `sqrt` (f32 and f64) and of f64 `fma`, which
    /// the emitter implements in every direction; and of `add`, `sub`, `mul` (f32,
    /// f64) and f32 `fma` until `pass::legalize_floats` rewrites those (to
    /// `RoundToOdd` + `Narrow`, or an `fma`). Other operations round to nearest.
    pub rounding: Rounding,
    /// How an exact f32 `fma`, `div`, `rcp` or `sqrt` or an f64 `fma` is computed
    /// (`pass::legalize_floats` chooses by the target; the default for all else).
    pub path: FloatPath,
    /// `.visible`: the backend emits this float `add`, `sub` or `mul` (or a `.native`
    /// `div` or `sqrt`) with its operands shown to the driver, never hidden from one
    /// that folds known operands (`FloatConstants::Hidden`). Only in routines whose
    /// proof shows that the driver's folding of known operands cannot change the
    /// result (`crate::routines`' `exact_f32`); the semantics are otherwise the same.
    pub visible: bool,
}

/// How [`FloatMode`]'s operation is computed exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FloatPath {
    /// The default: f32 through f64 (a fast result that a cheap exact test proves
    /// correctly rounded, else exact residuals or round to odd: [`Routine::NearestF32`],
    /// whose calls `pass::emulate` makes), f64 `fma` in integer arithmetic (`pass::emulate`; to nearest,
    /// with f64, error-free transformations in f64 first: [`Routine::NearestF64`]).
    #[default]
    F64,
    /// `.soft`: with integer arithmetic only, for a target without f64 (f32 `fma`,
    /// `div`, `rcp`, `sqrt`: calls of [`Routine::FmaF32`]… after `pass::emulate`).
    Integer,
    /// `.fused`: the device's `Fma`, which a probe found fused. `fma` to nearest is that
    /// one instruction. f32 and f64 `div`, `rcp` and `sqrt` to nearest are Newton steps
    /// on it, whose last candidate an exact residual test rounds correctly; operands
    /// outside the range where every step is exact (zeros, subnormals, infinities, NaNs,
    /// extreme exponents) take the [`FloatPath::F64`] path, or with `soft` (`.fused.soft`,
    /// f32 on a target without f64) the [`FloatPath::Integer`] one: `pass::emulate`
    /// makes them calls of [`Routine::Newton`].
    Fused { soft: bool },
    /// `.native`: Vulkan's own `Fma`, `OpFDiv` and `Sqrt`, with Vulkan's precision (not
    /// exact: `--float native`, to nearest only).
    Native,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    /// The kernel parameter block.
    Param,
    /// The thread's local window (`.local`): byte offsets into a per-invocation array.
    Local,
    /// A generic address (module doc, *Memory*): the 64-bit address picks the shared
    /// window, the local window or global memory at run time. Only for `Load`, `Store`
    /// and `Atomic`, and only until `pass::expand_generic`, which makes each the access
    /// of the space its address names:
    /// * `Load` and `Store` are weak accesses in that space.
    /// * `Atomic` with [`AtomicOp::Load`] or [`AtomicOp::Store`] is a strong `ld`/`st`
    ///   (`.relaxed`, `.acquire`, `.release`, `.volatile`; PTX ISA 9.2 §8.4): an atomic
    ///   where the space has atomics of `ty`'s width (global 32 and 64 bits, shared the
    ///   window's word, [`SharedLayout::word`]; a narrower store into a wide window is an
    ///   atomic store too, made a compare-and-swap by `pass::legalize_atomics`), else a
    ///   plain access after a releasing store's fence or before an acquiring load's; in
    ///   local memory, which no other thread observes, a plain access and no fence.
    /// * Any other `Atomic` is that atomic in global or shared memory; a
    ///   `FloatAdd { ftz: true }` flushes subnormals in global memory only (PTX ISA 9.2
    ///   §9.7.13.5). On local memory a generic atomic is undefined (§9.7.13.5); the
    ///   expansion fails the launch as `trap` does.
    Generic,
}

// The generic address windows are the launch ABI's.
pub(crate) use ptxvk_abi::window::{
    FUNCTION_WINDOW, LOCAL_WINDOW, LOCAL_WINDOW_32, PARAM_WINDOW_32, SHARED_WINDOW,
    SHARED_WINDOW_32,
};

/// A byte address: the base register's value (or 0) plus a constant offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address {
    pub base: Option<RegId>,
    pub offset: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum InstKind {
    /// `dst = src` at type `ty`.
    Mov {
        ty: OpTy,
        dst: RegId,
        src: Value,
    },
    /// `dst = concat(srcs)`: element 0 in the low bits (`mov.b64 %rd, {%r1, %r2}`).
    Pack {
        elem: OpTy,
        dst: RegId,
        srcs: Vec<Value>,
    },
    /// The inverse of `Pack`; `None` destinations are `_` sinks.
    Unpack {
        elem: OpTy,
        dsts: Vec<Option<RegId>>,
        src: Value,
    },
    Special {
        dst: RegId,
        reg: SpecialReg,
    },
    /// A one-operand operation; `mode` applies to the float ones (`.ftz`).
    Unary {
        op: UnaryOp,
        ty: OpTy,
        mode: FloatMode,
        dst: RegId,
        src: Value,
    },
    Binary {
        op: BinaryOp,
        ty: OpTy,
        mode: FloatMode,
        dst: RegId,
        lhs: Value,
        rhs: Value,
    },
    /// Integer `mad.lo`/`mad.hi`/`mad.wide`: `dst = (a*b).part + c`.
    Mad {
        part: BinaryOp,
        ty: OpTy,
        dst: RegId,
        a: Value,
        b: Value,
        c: Value,
    },
    /// `bfe`: extract `len` bits from `pos` (both taken mod 256), zero- or
    /// sign-extended per the type (PTX ISA 9.2 §9.7.8.16).
    Bfe {
        ty: OpTy,
        dst: RegId,
        a: Value,
        pos: Value,
        len: Value,
    },
    /// `bfi`: insert the low `len` bits of `a` into `b` at `pos` (PTX ISA 9.2 §9.7.8.17).
    Bfi {
        ty: OpTy,
        dst: RegId,
        a: Value,
        b: Value,
        pos: Value,
        len: Value,
    },
    /// Fused multiply-add rounded once, to nearest even.
    Fma {
        ty: OpTy,
        mode: FloatMode,
        dst: RegId,
        a: Value,
        b: Value,
        c: Value,
    },
    /// `setp`: `dst = cmp(lhs, rhs) combine pred`; `dst_not` receives the complement of
    /// the comparison (combined the same way).
    Setp {
        cmp: CmpOp,
        ty: OpTy,
        ftz: bool,
        dst: Option<RegId>,
        dst_not: Option<RegId>,
        lhs: Value,
        rhs: Value,
        combine: Option<(BoolOp, RegId, bool)>,
    },
    /// `selp`: `dst = cond ? a : b`.
    Select {
        ty: OpTy,
        dst: RegId,
        a: Value,
        b: Value,
        cond: RegId,
        negate: bool,
    },
    /// Predicate logic `and/or/xor` on `.pred`.
    PredLogic {
        op: BoolOp,
        dst: RegId,
        lhs: RegId,
        rhs: RegId,
    },
    PredNot {
        dst: RegId,
        src: RegId,
    },
    /// `cvt`: integer↔integer (truncate, sign/zero extend, `.sat` clamps),
    /// float→integer (round by `rounding`, saturate to the range; NaN gives 0, or
    /// `1 << (bits - 1)` when the source is `.f64` or the destination 64-bit),
    /// integer→float and float→float (round by `rounding`), and float→same float:
    /// rounding to an integral value when `rounding` is set, else only `.ftz`/`.sat`.
    /// A float side may be a wider integer register (PTX ISA 9.2 §5.2.2): its low bits
    /// are read, the result zero-extended into it (until `pass::expand_formats`).
    Convert {
        to: OpTy,
        from: OpTy,
        rounding: Option<Rounding>,
        mode: FloatMode,
        dst: RegId,
        src: Value,
    },
    /// Load `dsts.len()` consecutive elements of type `ty` (a vector when > 1). Each
    /// destination is at least as wide as `ty`; integers widen by `signed_extend`.
    Load {
        space: Space,
        ty: OpTy,
        dsts: Vec<Option<RegId>>,
        addr: Address,
    },
    /// Store consecutive elements of type `ty`; wider sources are truncated.
    Store {
        space: Space,
        ty: OpTy,
        srcs: Vec<Value>,
        addr: Address,
    },
    /// The f32 or f64 value `src` (of type `from`) rounded to `to` by `rounding`, as a
    /// bit pattern in the low `to.bits()` bits of `dst` (PTX ISA 9.2 §9.7.9.21). A NaN
    /// gives [`FloatFormat::nan`]; a result past the largest finite value gives
    /// infinity, or the largest finite value (with the sign) when `satfinite`, when the
    /// format has no infinity, or when `rounding` goes toward zero for the sign;
    /// `relu` makes negative results (and -0) +0 and keeps NaN. A `Tf32` result is an
    /// f32 bit pattern. Correct for any exact or round-to-odd f64 source.
    Narrow {
        to: FloatFormat,
        from: OpTy,
        rounding: Rounding,
        satfinite: bool,
        relu: bool,
        dst: RegId,
        src: Value,
    },
    /// The integer `src` (of type `from`) rounded to `to` by `rounding`, as a bit
    /// pattern in the low `to.bits()` bits of `dst`; past the largest finite value as
    /// [`InstKind::Narrow`] (PTX ISA 9.2 §9.7.9.21, integer to float).
    IntToFloat {
        to: FloatFormat,
        from: OpTy,
        rounding: Rounding,
        dst: RegId,
        src: Value,
    },
    /// The exact f32 value of the `from` bit pattern `src` (NaN stays NaN).
    Widen {
        from: FloatFormat,
        dst: RegId,
        src: Value,
    },
    /// `op` on f32 operands (`c` only for `Fma`), computed exactly and rounded to odd
    /// into an f64 `dst`: rounding that once more to any narrower format and in any
    /// direction gives the correctly rounded result (Boldo & Melquiond, "Emulation of
    /// FMA and correctly rounded sums: proved algorithms using rounding to odd", 2008).
    /// `soft` (`.soft`, from `pass::legalize_floats` for a target without f64): computed
    /// with integer arithmetic into a 64-bit integer `dst` holding the f64 bit pattern
    /// (a call of [`Routine::OddF32`] after `pass::emulate`); else a call of
    /// [`Routine::OddF32InF64`], f64 arithmetic, after `pass::emulate`.
    RoundToOdd {
        op: OddOp,
        soft: bool,
        dst: RegId,
        a: Value,
        b: Value,
        c: Value,
    },
    /// An atomic read-modify-write of the `ty`-sized value at `addr`: `dst` receives
    /// the old value; `cmp` is the comparand of `Cas` (ignored otherwise). After
    /// `pass::legalize_atomics` every atomic is native ([`AtomicOp::is_native`]) and
    /// as wide as its space's atomic word: global atomics 32 or 64 bits, shared ones
    /// 32, or 64 in a wide window ([`SharedLayout::word`]). `Load` and `Store` are a
    /// strong `ld`/`st` in any space, by [`Space::Generic`]'s rules for those (a load's
    /// `dst`, a store's `src`, may be wider than `ty`, as a `Load`'s and a `Store`'s,
    /// until `pass::expand_strong`).
    Atomic {
        op: AtomicOp,
        space: Space,
        ty: OpTy,
        scope: Scope,
        order: Order,
        dst: Option<RegId>,
        addr: Address,
        src: Value,
        cmp: Value,
    },
    /// `bar.sync`/`barrier.sync`: every thread of the block waits; orders shared and
    /// global memory among the block.
    Barrier,
    /// A subgroup operation (native and split warp modes): `split` when the warp is
    /// half of a 64-wide subgroup.
    Subgroup {
        op: SubgroupOp,
        split: bool,
        dst: RegId,
        value: Value,
        lane: Value,
    },
    /// The same workgroup barrier, inserted by the emulation of a warp collective
    /// (`pass::legalize_warps`), after storing `publish` (this thread's 32-bit contribution), when
    /// given, in the thread's own word of the warp scratch
    /// ([`Kernel::warp_scratch`] + 4 × linear thread id; the address needs no register,
    /// so a predicated-off thread stores to its own word too). It must be reached in
    /// block-uniform control flow: `crate::uniformity` checks, `crate::pass::predicate` makes
    /// it so (an inactive thread publishes 0).
    WarpBarrier {
        publish: Option<Value>,
    },
    /// `membar`/`fence`: orders this thread's memory accesses at workgroup or device scope.
    Fence {
        device_scope: bool,
    },
    /// A point where a thread may have to wait for the other threads of its block, or
    /// may let them run (`pass::schedule`). Semantic analysis puts one before every warp
    /// collective of the `.sync` forms and at every `nanosleep`. In a kernel that
    /// polls memory other threads write, the scheduler makes each a yield; elsewhere
    /// the pass removes them, so none reaches the emitter.
    SyncPoint {
        point: SyncPoint,
    },
    /// Warp exchange, before `pass::legalize_warps`: this thread's 32-bit `value` is
    /// what the next [`InstKind::WarpRead`]s and [`InstKind::WarpBallot`]s of its warp see
    /// for its lane. `pass::expand_warp` and `pass::expand_matrix` make every warp
    /// collective of a publish, reads and a [`InstKind::WarpSync`], whatever the
    /// device's warp mode.
    WarpPublish {
        value: Value,
    },
    /// The published value of lane `lane` (0–31) of this thread's warp, whose lane 0 is
    /// linear thread `warp_base`; `value` is this thread's own published value. A lane of
    /// the block that does not execute the exchange (exited, or on another path) reads
    /// as 0; a lane past the block's last thread is unspecified.
    WarpRead {
        dst: RegId,
        value: Value,
        lane: Value,
        warp_base: Value,
    },
    /// Bit k set when lane k of this thread's warp is in the mask `lanes` and published a
    /// non-zero value (`value` is this thread's, lane 0 is linear thread `warp_base`).
    WarpBallot {
        dst: RegId,
        value: Value,
        lanes: Value,
        warp_base: Value,
    },
    /// Ends an exchange (before the next publish may overwrite it) and orders the
    /// warp's memory accesses (`bar.warp.sync`).
    WarpSync,
    /// Adds `add` (which may be negative) to the count of loop iterations of this
    /// thread's subgroup, once for the subgroup however many of its invocations run
    /// this (one of them does it), and sets `dst` (32-bit) in each to the new count
    /// (`pass::loop_guard`; the counts are words of shared memory, one per subgroup,
    /// zero when the workgroup starts).
    LoopCount {
        dst: RegId,
        add: i32,
    },
    /// A call of device function `callee` of the kernel ([`Kernel::functions`]): each
    /// argument is copied into its parameter register, the body runs, and each return
    /// register is copied into its result register (module doc, *Functions and
    /// calls*). None is left after `pass::inline`.
    Call {
        callee: FunctionId,
        args: Vec<Value>,
        results: Vec<RegId>,
    },
    /// `exit`, `trap` or a failure in a device function: the thread ends, every call
    /// active with it (`ir::call`'s doc, *Thread ends*). None is left after
    /// `pass::thread_ends`.
    EndThread,
    /// A call through a function address `target` (u64) of one of `arms`' callees, the
    /// arm whose address it is ([`CallArm`], whose module doc specifies it), until
    /// `pass::expand_indirect_calls` writes it out in tests and `Call`s.
    CallIndirect {
        target: Value,
        arms: Vec<CallArm>,
    },
    /// Racecheck's shadow of the shared window (`pass::check`; four 32-bit words per
    /// 32-bit word of the window, zero when the block starts): `dst` gets word `word`
    /// of it, which `swap`, when given, replaces in the same atomic step.
    RaceShadow {
        dst: RegId,
        word: Value,
        swap: Option<Value>,
    },
    /// A video instruction (PTX ISA 9.2 §9.7.16) as semantic analysis resolved it, until
    /// `pass::expand_video` writes it out in core integer operations.
    Video(Box<VideoOp>),
    /// Half arithmetic (PTX ISA 9.2 §9.7.4) as semantic analysis resolved it, until
    /// `pass::expand_formats` computes it in f32 and f64.
    Half(Box<HalfOp>),
    /// A narrow-format conversion that is not one core operation (PTX ISA 9.2
    /// §9.7.9.21, [`HalfConvert`]) as semantic analysis resolved it, until
    /// `pass::expand_formats` writes it out in integer operations.
    HalfConvert(Box<HalfConvert>),
    /// An integer or bit-level instruction with no single SPIR-V counterpart (PTX ISA
    /// 9.2 §9.7.1-3, §9.7.7-8, [`IntegerInst`]) as semantic analysis resolved it, until
    /// `pass::expand_integer` writes it out in core operations.
    Integer(Box<IntegerInst>),
    /// A texture or surface instruction as semantic analysis resolves it (PTX ISA 9.2
    /// §9.7.10-11, [`TextureInst`]); `pass::expand_texture` expands every one into the
    /// instructions above, so no later pass and no emitter sees one.
    Texture(Box<TextureInst>),
    /// A warp-level matrix instruction (`mma`, `ldmatrix`, `stmatrix`, `movmatrix`,
    /// `wmma.*`; PTX ISA 9.2 §9.7.14, [`MatrixInst`]) as semantic analysis resolves it;
    /// `pass::expand_matrix` writes every one out in warp exchanges, arithmetic and
    /// memory accesses.
    Matrix(Box<MatrixInst>),
    /// An asynchronous copy (`cp.async`, `cp.async.bulk`, `cp.async.bulk.tensor`; PTX
    /// ISA 9.2 §9.7.9.25, [`CopyInst`]) as semantic analysis resolves it; `pass::expand_copies` writes
    /// every one out in the loads and stores it performs.
    Copy(Box<CopyInst>),
    /// An mbarrier instruction (`mbarrier.*`, `cp.async.mbarrier.arrive`; PTX ISA 9.2
    /// §9.7.13.15, [`MbarrierOp`], whose module doc specifies the object and each
    /// operation) as semantic analysis resolves it; `pass::expand_mbarrier` writes every
    /// one out in shared-memory atomics.
    Mbarrier(Box<MbarrierOp>),
    /// A warp collective (`shfl`, `vote`, `match`, `redux`, `activemask`, `elect`,
    /// `bar.warp.sync`; PTX ISA 9.2 §9.7.8.6, §9.7.13.3-10, [`WarpInst`]) as semantic
    /// analysis resolves it; `pass::expand_warp` writes every one out in warp exchanges.
    Warp(Box<WarpInst>),
    /// `bar.red`/`barrier.red` (PTX ISA 9.2 §9.7.13.1): a block barrier after which
    /// `dst` holds `op` over the block's threads of predicate `cond` (negated when
    /// `negate`): [`BarrierReduction`]. `word` is the shared offset of the kernel's
    /// scratch word for it (4 bytes, 8 in a wide window), which semantic analysis
    /// placed; `pass::expand_warp` writes it out in barriers and a shared atomic.
    BarrierReduce {
        op: BarrierReduction,
        dst: RegId,
        cond: RegId,
        negate: bool,
        word: u32,
    },
    /// A system call or failure (`trap`, `__assertfail`, `vprintf`, `malloc`, the grid
    /// barrier; [`SystemInst`], whose module doc specifies them) as semantic analysis
    /// resolves it; `pass::expand_system` writes every one out in accesses of the
    /// system area ([`crate::system`]).
    System(Box<SystemInst>),
    /// A device-side launch operation (`cudaGetParameterBuffer`, `cudaLaunchDevice`;
    /// [`LaunchInst`]) as semantic analysis resolves it; `pass::expand_system` writes
    /// every one out in accesses of the launch arena ([`crate::device_launch`]).
    DeviceLaunch(Box<LaunchInst>),
    /// `alloca`, `stacksave`, `stackrestore` and a recursive function's frame push
    /// ([`StackInst`], whose module doc specifies them) as semantic analysis resolves
    /// them; `pass::expand_stack` writes every one out in integer operations.
    Stack(Box<StackInst>),
    /// The offset of a variable in its window ([`VariableAddress`], whose module doc
    /// specifies it); `pass::layout_memory` replaces it by the offset.
    VariableAddress(VariableAddress),
    /// An address of the module data or the parameter block ([`DataAddress`], whose
    /// module doc specifies it); `pass::expand_data_addresses` writes it out.
    DataAddress(DataAddress),
    /// `cvta` (PTX ISA 9.2 §9.7.9.19) as semantic analysis resolves it: `dst` gets the
    /// generic address of `src`, an address in `space`, or with `to` the address in
    /// `space` of the generic address `src`, at `ty` (`.u64`, or `.u32` in a module
    /// with 32-bit addresses). It is the provenance of generic addresses that
    /// `pass::infer_spaces` reads before it writes each one out in the window
    /// arithmetic of the launch ABI (module doc, *Memory*), so no later pass sees one.
    Cvta {
        space: CvtaSpace,
        to: bool,
        ty: OpTy,
        dst: RegId,
        src: Value,
    },
    /// `isspacep` (PTX ISA 9.2 §9.7.9.18), [`IsSpaceInst`]; `pass::expand_isspace`.
    IsSpace(IsSpaceInst),
    /// `atom`/`red` on a vector, [`VectorAtomic`]; `pass::expand_vector_atomics`.
    VectorAtomic(Box<VectorAtomic>),
}

/// The state space of a [`InstKind::Cvta`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvtaSpace {
    /// `.global` and `.const`: their generic addresses are the addresses themselves.
    Global,
    Shared,
    Local,
    /// `.param` in a kernel: the kernel's parameter block.
    Param,
    /// `.param` in a device function: its call parameters, in the caller's local frame.
    CallParam,
}

impl CvtaSpace {
    pub fn name(self) -> &'static str {
        match self {
            CvtaSpace::Global => "global",
            CvtaSpace::Shared => "shared",
            CvtaSpace::Local => "local",
            CvtaSpace::Param => "param",
            CvtaSpace::CallParam => "call_param",
        }
    }
}

/// A statement of the structured IR, which `pass::structurize` makes from the CFG:
/// SPIR-V's structured control flow (SPIR-V §2.11), over the CFG's blocks.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// The instructions of a CFG block (its terminator is expressed by the tree).
    Code(BlockId),
    If {
        cond: RegId,
        negate: bool,
        then: Vec<Node>,
        otherwise: Vec<Node>,
        span: Span,
    },
    /// Runs the case whose values contain the 32-bit `selector`, else the default case.
    Switch {
        selector: RegId,
        cases: Vec<SwitchCase>,
        span: Span,
    },
    /// Runs `body` until a `Break` (or `Return`); `Continue` starts the next iteration.
    Loop {
        body: Vec<Node>,
        span: Span,
    },
    Break,
    Continue,
    Return,
}

/// One arm of a [`Node::Switch`]. Exactly one case of a switch is the default.
#[derive(Clone, Debug, PartialEq)]
pub struct SwitchCase {
    pub values: Vec<u32>,
    pub is_default: bool,
    pub body: Vec<Node>,
}

impl Kernel {
    /// A kernel with no registers, no blocks (its entry is to be made `bb0`), an empty
    /// shared layout and no attributes.
    pub fn new(name: String, span: Span, abi: KernelAbi) -> Kernel {
        Kernel {
            name,
            span,
            abi,
            regs: Vec::new(),
            blocks: Vec::new(),
            entry: BlockId(0),
            shared: SharedLayout::default(),
            local_bytes: 0,
            variables: Vec::new(),
            reqntid: None,
            maxntid: None,
            maxnreg: None,
            grid_sync: false,
            explicit_cluster: false,
            grid_phases: None,
            system: false,
            address_size: 64,
            heap: false,
            warp_scratch: None,
            block_vote: None,
            memory_instructions: Vec::new(),
            volatile_accesses: Vec::new(),
            polling_reads: Vec::new(),
            wait_sites: Vec::new(),
            check_sites: Vec::new(),
            guarded_loops: Vec::new(),
            device_launches: Vec::new(),
            functions: Vec::new(),
        }
    }

    pub fn reg(&self, r: RegId) -> &RegInfo {
        &self.regs[r.index()]
    }

    /// Every instruction of the kernel's blocks, then of its functions' blocks.
    pub fn all_insts(&self) -> impl Iterator<Item = &Inst> {
        let functions = self.functions.iter().flat_map(|f| &f.blocks);
        self.blocks.iter().chain(functions).flat_map(|b| &b.insts)
    }
}

impl Space {
    pub fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Param => "param",
            Space::Local => "local",
            Space::Generic => "generic",
        }
    }
}
