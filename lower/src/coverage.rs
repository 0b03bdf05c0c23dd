//! What ptxvk does with every PTX ISA 9.2 instruction: the source of `docs/coverage.md`.
//!
//! Each [`Row`] covers one instruction with a group of its types and modifiers and says
//! whether ptxvk lowers it natively ([`Status::Supported`]), through an emulation
//! ([`Status::Emulated`], saying how) or not at all ([`Status::Unsupported`], saying
//! why). The `tests/coverage.rs` test keeps the table honest and writes the document:
//!
//! * every opcode of the front end's instruction table has at least one row;
//! * each row's `probe` instruction is compiled in a small kernel: supported and
//!   emulated probes must compile to valid SPIR-V, unsupported ones must be rejected,
//!   and the document quotes the diagnostic they get;
//! * a supported or emulated probe must be spelled exactly like an instruction of the
//!   end-to-end test corpus (`tests/**/*.ptx`), which names where it is tested.
//!
//! Probes use the registers `%p1..%p4` (`.pred`), `%h1..%h4` (`.b16`), `%r1..%r4`
//! (`.b32`), `%rd1..%rd4` (`.b64`) and `%q1` (`.b128`), the label `L`, the `.global` buffer `%rd1`, a device function `f`, the
//! declared system call `free` and a `.param .b64 param0`.
//!
//! Semantic analysis reports an instruction it does not lower with the reason of the
//! instruction's unsupported row ([`unsupported_reason`]).

/// How ptxvk handles a row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Lowered to the SPIR-V operation with the same semantics.
    Supported,
    /// Lowered exactly through an emulation, described here.
    Emulated(&'static str),
    /// Rejected with a diagnostic; the reason is given here.
    Unsupported(&'static str),
}

/// One instruction with a group of its forms.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub opcode: Opcode,
    /// The forms this row covers, as the ISA spells them.
    pub forms: &'static str,
    pub status: Status,
    /// One instruction of this row (see the module documentation for its registers).
    pub probe: &'static str,
}

use ptxvk_frontend::Opcode;
use Status::{Emulated, Supported, Unsupported};

const fn row(opcode: Opcode, forms: &'static str, status: Status, probe: &'static str) -> Row {
    Row { opcode, forms, status, probe }
}

const TEXTURE_HOW: &str = "the handle is the address of ptxvk's texture descriptor (the \
     driver library's `cuTexObjectCreate`, or `ptxvk::TextureDesc`); the kernel reads it, \
     applies the address modes, fetches the texels from device memory, converts their \
     channels and filters them as NVIDIA's hardware does (linear weights in 1.8 fixed point)";
const SURFACE_HOW: &str = "the handle is the address of ptxvk's descriptor; the byte address \
     of the element is computed from the pitches, and an access outside traps, is clamped or \
     reads zero (writes nothing) as its mode says";
const QUERY_HOW: &str = "the field read from ptxvk's descriptor (textures have no \
     samples: multisample textures are not implemented)";
pub(crate) const TEXTURE: &str = ptxvk_frontend::forms::texture::NOT_IMPLEMENTED;
const TENSOR: &str = "not implemented yet: of the tensor-core instructions, the warp-level \
     `mma` of sm_80–sm_90, `wmma`, `ldmatrix`, `stmatrix` and `movmatrix` are (emulated \
     through the warp model)";
const TENSOR_SM100: &str = ptxvk_frontend::forms::mma::SM100_ROWS;
const MMA_HOW: &str = "through the warp model (any subgroup size, every warp mode): each thread \
     gathers the rows of A and columns of B its D elements need from the lanes holding them \
     (one exchange per 32-bit register word), then accumulates in k order from C with exact \
     products and one rounding per k step (f32; fused f64 steps; `.f16` accumulators rounded \
     once at the end; integers summed exactly, `.satfinite` clamping; `.b1` bits combined and \
     counted a word at a time)";
const MATRIX_MOVE_HOW: &str = "through the warp model: the row addresses (or fragment words) \
     are exchanged across the warp, then each lane loads, stores or keeps the elements the \
     ISA's fragment layout gives it";
const WMMA_HOW: &str = "WMMA fragments, whose layout the ISA leaves unspecified, are laid out as \
     the `mma` tiles of the product (min(M, 16) x 8 x K each; `.f16` A and B fragments repeat \
     their 4 registers): loads and stores move each element by the layout and stride, and \
     `wmma.mma` is those tiles' `mma` (see `mma`)";
const WMMA_SUB_BYTE: &str = "the sub-byte WMMA forms (4-bit and single-bit elements) are not \
     implemented";
const CP_ASYNC_HOW: &str = "performed when issued, by the issuing thread (a load and a store, \
     which checked launches test): the ISA orders an asynchronous copy only with the wait \
     that completes it, so this is one of the executions it allows, and committing and \
     waiting emit nothing; a partial `src-size` reads only its bytes and zero-fills";
pub(crate) const ASYNC: &str = ptxvk_frontend::forms::copy::NOT_IMPLEMENTED;
const BULK_HOW: &str = "performed when issued, by the issuing thread, 16 bytes at a time \
     (a loop for a size in a register), then the copy's `complete_tx` on its mbarrier; bulk \
     groups complete at once, so committing and waiting emit nothing";
const TENSOR_COPY_HOW: &str = "performed when issued, by the issuing thread, element by \
     element through ptxvk's tensor map (`cuTensorMapEncodeTiled` of its driver library, or \
     `ptxvk::TensorMap`), read at run time: out-of-bounds elements load as zero or NaN and \
     are not stored, element strides and the 32/64/128-byte swizzles apply, and a map \
     another driver encoded traps";
const MBARRIER_HOW: &str = "two 32-bit words of the object's shared memory: pending and expected \
     arrivals (at most 2,047) and the phase in one, the tx-count in the other; arrivals and tx \
     updates are atomic additions, and the update that leaves both counts zero moves the \
     phase on with a compare-and-swap; the state is the first word before the arrive";
const MBARRIER_WAIT_HOW: &str = "an acquire load of the phase; a loop around it polls, and \
     the block scheduler (`pass::schedule`) lets the other threads of the block run while it \
     waits, so arrivals later in program order complete it";
const CP_ASYNC_ARRIVE_HOW: &str = "copies complete when issued, so `.noinc` is an arrive-on \
     of count 1, and the plain form (pending count raised, then an arrive-on) changes nothing";
const CLUSTER: &str = "ptxvk runs every thread-block cluster as one CTA (Vulkan has no \
     clusters); this instruction has no meaning there and is not implemented";
const CLUSTER_HOW: &str = "every cluster is one CTA, where it is exact: `barrier.cluster.wait` \
     is the block's barrier (`.arrive` does nothing), `mapa` maps an address to itself, \
     `getctarank` is 0, `.shared::cluster` is `.shared` and the `.cluster` scope `.cta`; \
     a kernel requiring larger clusters is rejected";
const VIDEO_HOW: &str = "the selected bytes or half words extended to 64 bits, the operation, \
     clamp and secondary operation or merge computed exactly in core integer operations";
const VIDEO_SIMD_HOW: &str = "each lane extracted from the pair `{b, a}`, computed in 32 bits, \
     clamped, then accumulated into or merged with `c`";
const STRONG_HOW: &str = "an `OpAtomicLoad`/`OpAtomicStore` with the scope and acquire/release \
     semantics for 32/64-bit words of global memory and 32-bit words of shared memory; other \
     widths and vectors are plain accesses after (loads) or before (stores) a fence of the \
     scope; `.volatile` is `.relaxed.sys`";
const BAR_RED_HOW: &str = "a shared scratch word: thread 0 clears it, barrier, an atomic add by \
     each thread whose predicate holds, barrier, every thread reads the count, barrier; \
     `.and`/`.or` compare the count with the block size / zero";
const NAMED_BARRIERS: &str = "Vulkan has one workgroup barrier that every invocation waits at: \
     arriving without waiting and barriers for a subset of the warps (named barriers) have no \
     equivalent; a thread count below the block's is a run-time error, not a hang";
const STACK_HOW: &str = "a 1 KiB per-thread stack (4 KiB in a kernel with recursion) at the \
     start of the local window, growing down; the stack pointer is a register, restored when \
     a function returns; an allocation that does not fit ends the launch with an error";
const WARP_HOW: &str =
    "three warp modes (docs/architecture.md, *Warp modes*): native (subgroups of 32) and split (a \
     warp is half of a 64-wide subgroup) use subgroup shuffles and ballots; emulated (any \
     other size, e.g. lavapipe's 8) publishes each lane's value in a per-thread shared scratch \
     word between two workgroup barriers, with the block-divergent control flow around \
     collectives predicated (every thread runs them under an execution mask; loops run while \
     any thread of the block iterates)";
const HALF_HOW: &str = "each half widened exactly to f32, the operation computed exactly and \
     rounded to odd in f64 (without f64, in integer arithmetic), then rounded to the format \
     with integer arithmetic (no 16-bit float support needed)";
const DIRECTED_HOW: &str = "the exact result rounded to odd in f64 (f32 products are exact, sums \
     get their TwoSum error), then rounded in the wanted direction with integer arithmetic; \
     without f64, an exact fma in integer arithmetic";
const SOFT_FMA: &str = "an exact fused multiply-add in integer arithmetic (128-bit product \
     of the significands, aligned addend with a sticky bit, one rounding in the wanted \
     mode); Vulkan's `Fma` need not be fused";
const FMA_F64: &str = "to nearest on a device with f64, Dekker's exact product, TwoSum and \
     round-to-odd in f64 arithmetic (Boldo & Melquiond 2008) where the exponents allow; \
     otherwise, and in the other modes, an exact fused multiply-add in integer arithmetic \
     (128-bit product of the significands, aligned addend with a sticky bit, one rounding in \
     the wanted mode); Vulkan's `Fma` need not be fused";
const DIV_F64: &str = "to nearest on a device with f64, the device's quotient where an exact \
     residual (Dekker's product) proves it correctly rounded; otherwise, and in the other \
     modes, exact in integer arithmetic (Vulkan allows f64 division 2.5 ulp): a 55-bit \
     quotient by restoring division, the remainder as a sticky bit, one rounding in the \
     wanted mode";
const APPROX_HOW: &str = "computed in f64 (argument reduction and polynomials, no device \
     transcendental functions) and rounded once to f32: within one ulp, far inside the ISA's \
     bound; without f64, the same f64 arithmetic on bit patterns in integers";
const SOFT_DIV: &str = "exact in integer arithmetic (Vulkan allows f64 division and square \
     root 2.5 ulp): a 55-bit quotient or root by restoring division or digit-by-digit \
     square root, the remainder as a sticky bit, one rounding in the wanted mode";

/// The table, by instruction (alphabetical), then by form.
pub static ROWS: &[Row] = &[
    row(Opcode::Abs, ".s16 .s32 .s64", Supported, "abs.s32 %r1, %r2;"),
    row(Opcode::Abs, ".f32 .f64", Supported, "abs.f32 %r1, %r2;"),
    row(Opcode::Abs, ".ftz.f32", Emulated("a subnormal input flushed to a zero of its sign first"), "abs.ftz.f32 %r1, %r2;"),
    row(Opcode::Abs, ".f16 .f16x2 .bf16 .bf16x2", Emulated("the sign bit cleared"), "abs.f16 %h1, %h2;"),
    row(Opcode::Activemask, ".b32", Emulated(WARP_HOW), "activemask.b32 %r1;"),
    row(Opcode::Add, ".u16 .u32 .u64 .s16 .s32 .s64", Supported, "add.s32 %r1, %r2, %r3;"),
    row(
        Opcode::Add,
        ".sat.s32",
        Emulated("the exact sum in 64 bits, clamped to the s32 range"),
        "add.sat.s32 %r1, %r2, %r3;",
    ),
    row(
        Opcode::Add,
        ".cc.u32 .cc.s32 .cc.u64 .cc.s64",
        Emulated("the carry flag CC.CF is a 32-bit register; the carry is an unsigned compare"),
        "add.cc.u32 %r1, %r2, %r3;",
    ),
    row(
        Opcode::Add,
        ".u16x2 .s16x2",
        Emulated("each half word separately, repacked"),
        "add.u16x2 %r1, %r2, %r3;",
    ),
    row(Opcode::Add, "{.rn}{.ftz}{.sat}.f32, {.rn}.f64", Supported, "add.rn.f32 %r1, %r2, %r3;"),
    row(Opcode::Add, ".rz .rm .rp {.ftz}{.sat}.f32", Emulated(DIRECTED_HOW), "add.rz.f32 %r1, %r2, %r3;"),
    row(Opcode::Add, ".rz .rm .rp .f64", Emulated(SOFT_FMA), "add.rz.f64 %rd1, %rd2, %rd3;"),
    row(Opcode::Add, "{.rn}{.ftz}{.sat}.f16 .f16x2, .rn.bf16 .rn.bf16x2", Emulated(HALF_HOW), "add.f16 %h1, %h2, %h3;"),
    row(
        Opcode::Addc,
        "{.cc}.u32 .s32 .u64 .s64",
        Emulated("the carry flag CC.CF is a 32-bit register; carries are unsigned compares"),
        "addc.u32 %r1, %r2, %r3;",
    ),
    row(Opcode::Alloca, ".u32 .u64", Emulated(STACK_HOW), "alloca.u32 %r1, %r2, 8;"),
    row(Opcode::And, ".pred .b16 .b32 .b64", Supported, "and.b32 %r1, %r2, %r3;"),
    row(Opcode::Applypriority, ".global.L2::evict_normal", Emulated("a performance hint without effect on results: nothing is emitted"), "applypriority.global.L2::evict_normal [%rd1], 128;"),
    row(
        Opcode::Atom,
        ".add .and .or .xor .exch .cas .min .max on .b32 .u32 .s32 .b64 .u64 .s64, .global .shared generic, every scope and order (64-bit on shared memory: the next row)",
        Supported,
        "atom.global.add.u32 %r1, [%rd1], %r2;",
    ),
    row(
        Opcode::Atom,
        "64-bit on .shared, or on generic addresses that may reach it",
        Emulated("the kernel's shared window becomes an array of 64-bit words (SPIR-V atomics act on whole elements, and aliased views need VK_KHR_workgroup_memory_explicit_layout): 64-bit atomics are native; narrower atomics and strong stores there are compare-and-swap loops on the containing word, narrower stores clear and set their bytes with two atomics; needs shaderSharedInt64Atomics"),
        "atom.shared.add.u64 %rd1, [%r1], %rd2;",
    ),
    row(
        Opcode::Atom,
        ".inc .dec .u32; .add .f32 .f64",
        Emulated("a compare-and-swap loop (Vulkan has no wrapping increment; float atomics are optional)"),
        "atom.global.inc.u32 %r1, [%rd1], %r2;",
    ),
    row(
        Opcode::Atom,
        ".add.noftz .f16 .bf16 .f16x2 .bf16x2 (and .min/.max.noftz in vector forms); .cas.b16",
        Emulated("a compare-and-swap loop on the containing 32-bit word (the other half kept); each lane added exactly and rounded to nearest even with integer arithmetic, or ordered as min.f16/max.f16 order it"),
        "atom.global.add.noftz.f16 %h1, [%rd1], %h2;",
    ),
    row(
        Opcode::Atom,
        "vectors: .v2 .v4 .f32 .add; .v2 .v4 .v8 .f16 .bf16 and .v2 .v4 .f16x2 .bf16x2 .add .min .max .noftz (.global, sm_90)",
        Emulated("one atomic per element at consecutive addresses: the ISA makes each element atomic on its own, not the vector"),
        "atom.global.v4.f32.add {%r1, %r2, %r3, %r4}, [%rd1], {%r1, %r2, %r3, %r4};",
    ),
    row(
        Opcode::Atom,
        ".b128 .cas .exch",
        Unsupported("Vulkan has no 128-bit atomics (SPIR-V atomics act on 32- and 64-bit integers), so a 16-byte compare-and-swap cannot be made atomic"),
        "atom.global.cas.b128 %rd1, [%rd1], %rd2, %rd3;",
    ),
    row(Opcode::Bar, ".sync / .cta.sync, with a thread count covering every warp of the block", Supported, "bar.sync 0;"),
    row(Opcode::Bar, ".red.popc.u32 .red.and.pred .red.or.pred {with a thread count}", Emulated(BAR_RED_HOW), "bar.red.popc.u32 %r1, 0, %p1;"),
    row(Opcode::Bar, ".arrive; .sync with fewer threads than the block", Unsupported(NAMED_BARRIERS), "bar.arrive 0, 64;"),
    row(Opcode::Bar, ".warp.sync", Emulated("a workgroup barrier (the warp is converged in block-uniform code)"), "bar.warp.sync -1;"),
    row(Opcode::Barrier, "{.cta}.sync{.aligned}, with a thread count covering every warp of the block", Supported, "barrier.sync 0;"),
    row(Opcode::Barrier, "{.cta}.red{.aligned} .popc .and .or", Emulated(BAR_RED_HOW), "barrier.cta.red.or.pred %p1, 2, %p2;"),
    row(Opcode::Barrier, ".cluster.arrive .cluster.wait {.aligned}", Emulated(CLUSTER_HOW), "barrier.cluster.wait;"),
    row(Opcode::Barrier, ".arrive", Unsupported(NAMED_BARRIERS), "barrier.arrive 0, 64;"),
    row(Opcode::Bfe, ".u32 .u64 .s32 .s64", Supported, "bfe.u32 %r1, %r2, %r3, %r4;"),
    row(Opcode::Bfi, ".b32 .b64", Supported, "bfi.b32 %r1, %r2, %r3, %r4, 8;"),
    row(
        Opcode::Bfind,
        "{.shiftamt}.u32 .u64 .s32 .s64",
        Emulated("leading-zero count of the value (inverted when negative)"),
        "bfind.u32 %r1, %r2;",
    ),
    row(
        Opcode::Bmsk,
        ".clamp.b32 .wrap.b32",
        Emulated("shifts and selects following the ISA pseudocode"),
        "bmsk.clamp.b32 %r1, %r2, %r3;",
    ),
    row(Opcode::Bra, "{.uni}", Supported, "bra L;"),
    row(Opcode::Brev, ".b32 .b64", Supported, "brev.b32 %r1, %r2;"),
    row(Opcode::Brkpt, "", Unsupported("a debugger breakpoint has no Vulkan equivalent"), "brkpt;"),
    row(Opcode::Brx, ".idx{.uni} with .branchtargets", Supported, "brx.idx %r1, T;"),
    row(
        Opcode::Call,
        "direct {.uni}, .reg and .param arguments and results",
        Emulated(
            "inlined at the call site: the caller's `.param` variables live in its local \
             frame and the callee's `.param` parameters name them; `ret` continues after the \
             call. Recursion (SPIR-V has none): the functions of a call cycle run as a state \
             machine over an explicit 4 KiB per-thread stack of frames and saved registers",
        ),
        "call.uni f;",
    ),
    row(
        Opcode::Call,
        "of the system calls vprintf, __assertfail, malloc, free (ABI guide §4)",
        Emulated(
            "through a system area after the parameter block: printf records (format address, \
             thread, up to 256 bytes of the local argument buffer) formatted by the host after \
             the launch; a failed assertion or trap records the first failing thread and the \
             launch returns an error; malloc is a bump allocator on an 8 MiB heap per module, \
             free does nothing",
        ),
        "call.uni free, (param0);",
    ),
    row(
        Opcode::Call,
        "indirect through a function pointer, with a .callprototype or .calltargets",
        Emulated("the pointer is tested against each candidate (the .calltargets, or every function matching the prototype whose address the kernel takes), each inlined; a function's address is a number in a window of its own, so pointers survive memory and module-variable tables"),
        "call %rd1, P;",
    ),
    row(
        Opcode::Clusterlaunchcontrol,
        ".try_cancel, .query_cancel",
        Unsupported(CLUSTER),
        "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 %p1, %rd1;",
    ),
    row(Opcode::Clz, ".b32 .b64", Supported, "clz.b32 %r1, %r2;"),
    row(Opcode::Cnot, ".b16 .b32 .b64", Supported, "cnot.b32 %r1, %r2;"),
    row(
        Opcode::Copysign,
        ".f32 .f64",
        Emulated("integer operations on the sign bit: exact, NaN payloads included"),
        "copysign.f32 %r1, %r2, %r3;",
    ),
    row(Opcode::Cos, ".approx{.ftz}.f32", Emulated(APPROX_HOW), "cos.approx.f32 %r1, %r2;"),
    row(Opcode::Cp, ".async .ca .cg .shared{::cta}.global, cp-size 4 8 16, src-size, ignore-src, cache hints", Emulated(CP_ASYNC_HOW), "cp.async.ca.shared.global [%r1], [%rd1], 16, %r2;"),
    row(Opcode::Cp, ".async.commit_group .async.wait_group .async.wait_all", Emulated(CP_ASYNC_HOW), "cp.async.wait_group 0;"),
    row(Opcode::Cp, ".async.mbarrier.arrive{.noinc}.shared{::cta}.b64", Emulated(CP_ASYNC_ARRIVE_HOW), "cp.async.mbarrier.arrive.shared.b64 [%r1];"),
    row(Opcode::Cp, ".async.bulk .shared::cluster.global.mbarrier::complete_tx::bytes .global.shared::cta.bulk_group{.multicast::cluster}{.L2::cache_hint}, .commit_group, .wait_group{.read}, .prefetch.L2", Emulated(BULK_HOW), "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];"),
    row(Opcode::Cp, ".async.bulk.tensor.1d-.5d .tile (loads on an mbarrier, stores in bulk groups)", Emulated(TENSOR_COPY_HOW), "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];"),
    row(Opcode::Cp, ".async.bulk.tensor .im2col*, .reduce.async.bulk*", Unsupported(ASYNC), "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r1], 16;"),
    row(Opcode::Createpolicy, ".fractional.L2::* .range", Emulated("an opaque cache policy: 0"), "createpolicy.fractional.L2::evict_last.b64 %rd1, 1.0;"),
    row(Opcode::Cvt, "between integer types {.sat}", Supported, "cvt.s32.s64 %r1, %rd1;"),
    row(
        Opcode::Cvt,
        ".pack.sat .u16 .s16 .u8 .s8 .u4 .s4 .u2 .s2 from .s32",
        Emulated("each operand clamped with min/max, masked, shifted into place and or-ed with the low bits of c"),
        "cvt.pack.sat.u8.s32.b32 %r1, %r2, %r3, %r4;",
    ),
    row(
        Opcode::Cvt,
        "float to integer .rni .rzi .rmi .rpi {.ftz}{.sat}",
        Supported,
        "cvt.rni.s32.f32 %r1, %r2;",
    ),
    row(Opcode::Cvt, "integer to float .rn", Supported, "cvt.rn.f32.s32 %r1, %r2;"),
    row(
        Opcode::Cvt,
        ".rz .rm .rp to .f32 from .f64, and to .f32 .f64 from every integer type",
        Emulated("rounded once with integer arithmetic on the exact value"),
        "cvt.rz.f32.s32 %r1, %r2;",
    ),
    row(
        Opcode::Cvt,
        ".f32.f64 .rn, .f64.f32, float to integral float {.ftz}{.sat}",
        Supported,
        "cvt.rn.f32.f64 %r1, %rd1;",
    ),
    row(
        Opcode::Cvt,
        ".f16 .bf16 .tf32 .f16x2 .bf16x2 from and to floats and integers, every rounding, .relu .satfinite",
        Emulated("exact integer arithmetic on the bit patterns (widening exact, narrowing rounded once)"),
        "cvt.rn.f16.f32 %h1, %r2;",
    ),
    row(
        Opcode::Cvt,
        ".e4m3x2 .e5m2x2 .satfinite{.relu} from .f32 pairs and .f16x2, and to .f16x2",
        Emulated("exact integer arithmetic on the bit patterns"),
        "cvt.rn.satfinite.e4m3x2.f32 %h1, %r1, %r2;",
    ),
    row(
        Opcode::Cvt,
        ".e2m3x2 .e3m2x2 .e2m1x2 .satfinite{.relu} from .f32 pairs, and to .f16x2",
        Emulated("exact integer arithmetic on the bit patterns; these formats have no NaN, so a NaN saturates to the largest value"),
        "cvt.rn.satfinite.e2m3x2.f32 %h1, %r1, %r2;",
    ),
    row(
        Opcode::Cvt,
        ".rz .rp {.satfinite}.ue8m0x2 from .f32 pairs and .bf16x2, .rn.bf16x2.ue8m0x2",
        Emulated("the exponent field of |x|, rounded up by the mantissa for .rp; out of range as CUDA's cuda_fp8.hpp emulation: 2^-127 below, NaN (or 0xfe with .satfinite) above"),
        "cvt.rz.satfinite.ue8m0x2.f32 %h1, %r1, %r2;",
    ),
    row(
        Opcode::Cvt,
        "stochastic rounding .rs (.f16x2 .bf16x2 and the x4 forms)",
        Unsupported("the PTX ISA shows how .rs applies the random bits only in a figure, not in its text, so results could not be made bit-exact"),
        "cvt.rs.satfinite.e4m3x4.f32 %r1, {%r1, %r2, %r3, %r4}, %r1;",
    ),
    row(Opcode::Cvta, ".to.global.u64, .global.u64", Supported, "cvta.to.global.u64 %rd1, %rd2;"),
    row(
        Opcode::Cvta,
        "{.to}.shared.u64, {.to}.local.u64",
        Emulated("the shared and local windows of the generic space: the offset OR-ed with the window base, or masked out"),
        "cvta.local.u64 %rd1, %rd2;",
    ),
    row(Opcode::Cvta, "{.to}.const.u64", Supported, "cvta.const.u64 %rd1, %rd2;"),
    row(Opcode::Cvta, "{.to}.param.u64", Emulated("a kernel's parameter block is global memory: its generic addresses are the block's address plus the offset; in a device function, call parameters are local memory"), "cvta.param.u64 %rd1, %rd2;"),
    row(Opcode::Cvta, ".u32 in a module with 64-bit addresses", Unsupported("generic addresses are 64-bit there, as PTX requires (.u32 generic addresses of every space are supported in modules with 32-bit addresses)"), "cvta.shared.u32 %r1, %r2;"),
    row(Opcode::Discard, ".global.L2", Emulated("nothing: a weak write of indeterminate values may leave the old ones"), "discard.global.L2 [%rd1], 128;"),
    row(Opcode::Div, ".u16 .u32 .u64 .s16 .s32 .s64", Supported, "div.s32 %r1, %r2, %r3;"),
    row(
        Opcode::Div,
        ".rn{.ftz}.f32",
        Emulated("the device's quotient where an exact f64 residual proves it correctly rounded, \
             else an f64 quotient corrected by exact residuals at the f32 midpoints; \
             without f64, the quotient computed exactly in integer arithmetic"),
        "div.rn.f32 %r1, %r2, %r3;",
    ),
    row(
        Opcode::Div,
        ".approx .full {.ftz}.f32",
        Emulated("the correctly rounded quotient (within the 2-ulp bound); `.approx` gives 0 for 2^126 < |b| < 2^128 as specified"),
        "div.approx.f32 %r1, %r2, %r3;",
    ),
    row(Opcode::Div, ".rz .rm .rp{.ftz}.f32", Emulated(
            "the nearest result corrected exactly (as `.rn`), then moved one ulp by the sign of \
             the exact residual; without f64, computed exactly in integer arithmetic",
        ), "div.rz.f32 %r1, %r2, %r3;"),
    row(Opcode::Div, ".rn .rz .rm .rp .f64", Emulated(DIV_F64), "div.rn.f64 %rd1, %rd2, %rd3;"),
    row(
        Opcode::Dp2a,
        ".lo .hi with .u32 .s32 operand types",
        Emulated("products of extracted half words and bytes, summed modulo 2^32"),
        "dp2a.lo.u32.u32 %r1, %r2, %r3, %r4;",
    ),
    row(
        Opcode::Dp4a,
        ".u32 .s32 operand types",
        Emulated("products of extracted bytes, summed modulo 2^32"),
        "dp4a.u32.u32 %r1, %r2, %r3, %r4;",
    ),
    row(Opcode::Elect, ".sync", Emulated("the lowest lane of the member mask among the existing lanes"), "elect.sync %r1|%p1, 0xffffffff;"),
    row(Opcode::Ex2, ".approx{.ftz}.f32, .approx.f16 .f16x2 .bf16 .bf16x2", Emulated(APPROX_HOW), "ex2.approx.f32 %r1, %r2;"),
    row(Opcode::Exit, "", Supported, "exit;"),
    row(Opcode::Fence, ".cta .gpu .sys {.sc .acq_rel}; membar", Supported, "fence.acq_rel.gpu;"),
    row(Opcode::Fence, ".proxy.alias .proxy.async* .proxy.tensormap*", Emulated("nothing: every access is a generic-proxy access in ptxvk, so proxies need no ordering"), "fence.proxy.alias;"),
    row(Opcode::Fence, ".mbarrier_init.release.cluster", Emulated("a CTA-scope fence: every cluster is one CTA"), "fence.mbarrier_init.release.cluster;"),
    row(Opcode::Fence, ".acquire/.release .sync_restrict::shared::{cta,cluster} .cluster", Emulated("a CTA-scope fence: every cluster is one CTA"), "fence.acquire.sync_restrict::shared::cluster.cluster;"),
    row(
        Opcode::Fma,
        ".rn{.ftz}{.sat}.f32",
        Emulated("the product and sum in f64, rounded to f32 where the sum is no f32 \
             rounding breakpoint, else rounded to odd first; without f64, an exact fma in \
             integer arithmetic rounded to odd, then to f32"),
        "fma.rn.f32 %r1, %r2, %r3, %r4;",
    ),
    row(Opcode::Fma, ".rz .rm .rp .f32", Emulated(DIRECTED_HOW), "fma.rz.f32 %r1, %r2, %r3, %r4;"),
    row(Opcode::Fma, ".rn .rz .rm .rp .f64", Emulated(FMA_F64), "fma.rn.f64 %rd1, %rd2, %rd3, %rd4;"),
    row(Opcode::Fma, ".rn{.ftz}{.sat}{.relu}.f16 .f16x2, .rn{.relu}.bf16 .bf16x2", Emulated(HALF_HOW), "fma.rn.f16 %h1, %h2, %h3, %h4;"),
    row(Opcode::Fns, ".b32", Emulated("a binary search on population counts of the masked (or bit-reversed) mask"), "fns.b32 %r1, %r2, %r3, %r4;"),
    row(Opcode::Getctarank, "{.shared::cluster}.u32 .u64", Emulated(CLUSTER_HOW), "getctarank.shared::cluster.u32 %r1, %r2;"),
    row(Opcode::Griddepcontrol, ".launch_dependents .wait", Emulated("no programmatic dependent launch: a grid already waits for its predecessor; nothing is emitted"), "griddepcontrol.wait;"),
    row(Opcode::Isspacep, ".global .shared .local", Emulated("a compare of the address's window"), "isspacep.global %p1, %rd1;"),
    row(Opcode::Isspacep, ".param", Emulated("in a kernel, a range check against the parameter block"), "isspacep.param %p1, %rd1;"),
    row(Opcode::Isspacep, ".const", Emulated("the .const variables come first in the module data: an address in that range is constant memory (and not global)"), "isspacep.const %p1, %rd1;"),
    row(Opcode::Istypep, ".texref .samplerref .surfref", Unsupported(TEXTURE), "istypep.texref %p1, %rd1;"),
    row(
        Opcode::Ld,
        ".global .shared .param, scalar and .v2 .v4, 8 to 64 bits",
        Supported,
        "ld.global.u32 %r1, [%rd1];",
    ),
    row(
        Opcode::Ld,
        ".local, and generic (global, or dispatched on the window when the kernel makes generic shared/local addresses)",
        Emulated("local memory is a per-thread array of 32-bit words; a generic access tests the address's window"),
        "ld.local.u32 %r1, [%rd1];",
    ),
    row(
        Opcode::Ld,
        ".const (module-scope variables in the module data)",
        Emulated("the module data is a device buffer uploaded when the module is loaded; its address is a push constant"),
        "ld.const.f32 %r1, [%rd1];",
    ),
    row(Opcode::Ld, ".global.v8 (32-bit elements), .global.v4 (64-bit elements)", Supported, "ld.global.v8.u32 {%r1, %r1, %r1, %r1, %r1, %r1, %r1, %r1}, [%rd1];"),
    row(
        Opcode::Ld,
        ".relaxed .acquire .volatile .mmio with .cta .gpu .sys",
        Emulated(STRONG_HOW),
        "ld.acquire.gpu.global.u32 %r1, [%rd1];",
    ),
    row(Opcode::Ld, ".b128", Emulated(B128_HOW), "ld.global.b128 %q1, [%rd1];"),
    row(Opcode::Ldmatrix, ".sync.aligned.m8n8 .x1 .x2 .x4 {.trans} {.shared}.b16", Emulated(MATRIX_MOVE_HOW), "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r1, %r2, %r3, %r4}, [%r1];"),
    row(Opcode::Ldmatrix, ".m16n16 .m8n16 (.b8, sm_100)", Unsupported(TENSOR_SM100), "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%r1];"),
    row(Opcode::Ldu, ".global, as `ld.global`", Supported, "ldu.global.b64 %rd1, [%rd1];"),
    row(Opcode::Lg2, ".approx{.ftz}.f32", Emulated(APPROX_HOW), "lg2.approx.f32 %r1, %r2;"),
    row(
        Opcode::Lop3,
        ".b32 and .and/.or.b32 d|p, all 256 functions",
        Emulated("the OR of the table's minterms"),
        "lop3.b32 %r1, %r2, %r3, %r4, 0x96;",
    ),
    row(Opcode::Mad, ".lo .hi .wide on .u16 .u32 .u64 .s16 .s32 .s64", Supported, "mad.lo.s32 %r1, %r2, %r3, %r4;"),
    row(
        Opcode::Mad,
        ".lo.cc .hi.cc",
        Emulated("the carry flag CC.CF is a 32-bit register; carries are unsigned compares"),
        "mad.lo.cc.u32 %r1, %r2, %r3, %r4;",
    ),
    row(Opcode::Mad, ".hi.sat.s32", Emulated("the sum in 64 bits, clamped to the s32 range"), "mad.hi.sat.s32 %r1, %r2, %r3, %r4;"),
    row(
        Opcode::Mad,
        ".rn{.ftz}{.sat}.f32 (fused, as fma)",
        Emulated("as `fma.rn.f32`"),
        "mad.rn.f32 %r1, %r2, %r3, %r4;",
    ),
    row(Opcode::Mad, ".rz .rm .rp .f32 (fused)", Emulated(DIRECTED_HOW), "mad.rp.f32 %r1, %r2, %r3, %r4;"),
    row(Opcode::Mad, ".rn .rz .rm .rp .f64 (fused)", Emulated(FMA_F64), "mad.rn.f64 %rd1, %rd2, %rd3, %rd4;"),
    row(
        Opcode::Mad24,
        ".lo .hi on .u32 .s32",
        Emulated("the 48-bit product of the 24-bit operands in 64 bits"),
        "mad24.lo.u32 %r1, %r2, %r3, %r4;",
    ),
    row(Opcode::Mad24, ".hi.sat.s32", Emulated("the sum in 64 bits, clamped to the s32 range"), "mad24.hi.sat.s32 %r1, %r2, %r3, %r4;"),
    row(
        Opcode::Madc,
        "{.lo .hi}{.cc}.u32 .s32 .u64 .s64",
        Emulated("the carry flag CC.CF is a 32-bit register; carries are unsigned compares"),
        "madc.hi.u32 %r1, %r2, %r3, %r4;",
    ),
    row(Opcode::Mapa, "{.shared::cluster}.u32 .u64", Emulated(CLUSTER_HOW), "mapa.shared::cluster.u32 %r1, %r2, 0;"),
    row(Opcode::Match, ".any .all .sync .b32 .b64", Emulated(WARP_HOW), "match.any.sync.b32 %r1, %r2, 0xffffffff;"),
    row(Opcode::Max, ".u16 .u32 .u64 .s16 .s32 .s64", Supported, "max.s32 %r1, %r2, %r3;"),
    row(
        Opcode::Max,
        ".u16x2 .s16x2, .relu.s16x2, .relu.s32",
        Emulated("each half word separately; .relu as max with 0"),
        "max.relu.s32 %r1, %r2, %r3;",
    ),
    row(Opcode::Max, "{.ftz}.f32 .f64", Supported, "max.f32 %r1, %r2, %r3;"),
    row(Opcode::Max, "{.ftz}{.NaN}{.xorsign.abs}{.abs}.f32, three inputs", Emulated("the core float max on magnitudes, then the NaN and sign rules"), "max.xorsign.abs.f32 %r1, %r2, %r3;"),
    row(Opcode::Max, "{.NaN}.f16 .f16x2 .bf16 .bf16x2", Emulated("compared as exact f32 values"), "max.f16 %h1, %h2, %h3;"),
    row(Opcode::Mbarrier, ".init .inval .arrive{.expect_tx}{.noComplete} .arrive_drop .expect_tx .complete_tx .pending_count", Emulated(MBARRIER_HOW), "mbarrier.init.shared.b64 [%r1], %r2;"),
    row(Opcode::Mbarrier, ".test_wait{.parity} .try_wait{.parity}", Emulated(MBARRIER_WAIT_HOW), "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;"),
    row(Opcode::Membar, ".cta .gl .sys", Supported, "membar.gl;"),
    row(Opcode::Min, ".u16 .u32 .u64 .s16 .s32 .s64", Supported, "min.s32 %r1, %r2, %r3;"),
    row(
        Opcode::Min,
        ".u16x2 .s16x2, .relu.s16x2, .relu.s32",
        Emulated("each half word separately; .relu as max with 0"),
        "min.relu.s32 %r1, %r2, %r3;",
    ),
    row(Opcode::Min, "{.ftz}.f32 .f64", Supported, "min.f32 %r1, %r2, %r3;"),
    row(Opcode::Min, "{.ftz}{.NaN}{.xorsign.abs}{.abs}.f32, three inputs", Emulated("the core float min on magnitudes, then the NaN and sign rules"), "min.NaN.f32 %r1, %r2, %r3;"),
    row(Opcode::Min, "{.NaN}.f16 .f16x2 .bf16 .bf16x2", Emulated("compared as exact f32 values"), "min.f16 %h1, %h2, %h3;"),
    row(Opcode::Mma, ".sync.aligned .m16n8k8 .m16n8k16 .row.col .f16/.f32 accumulators, .f16 and .bf16 (f32 only) inputs", Emulated(MMA_HOW), "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r1, %r2, %r3, %r4}, {%r1, %r2, %r3, %r4}, {%r1, %r2}, {%r1, %r2, %r3, %r4};"),
    row(Opcode::Mma, ".m16n8k4 .m16n8k8 .tf32; .m8n8k4 .m16n8k4 .m16n8k8 .m16n8k16 .f64; .m16n8k16 .m16n8k32 .e4m3 .e5m2", Emulated(MMA_HOW), "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%r1, %r2, %r3, %r4}, {%r1, %r2, %r3, %r4}, {%r1, %r2}, {%r1, %r2, %r3, %r4};"),
    row(Opcode::Mma, ".m8n8k16 .m16n8k16 .m16n8k32 .s8 .u8; .m8n8k32 .m16n8k32 .m16n8k64 .s4 .u4; {.satfinite} .s32", Emulated(MMA_HOW), "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%r1, %r2, %r3, %r4}, {%r1, %r2, %r3, %r4}, {%r1, %r2}, {%r1, %r2, %r3, %r4};"),
    row(Opcode::Mma, ".m8n8k128 .m16n8k128 .m16n8k256 .b1 .and.popc .xor.popc", Emulated(MMA_HOW), "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%r1, %r2, %r3, %r4}, {%r1, %r2, %r3, %r4}, {%r1, %r2}, {%r1, %r2, %r3, %r4};"),
    row(Opcode::Mma, ".m8n8k4 .f16 (sm_70 quad pairs); .sp; .kind; .block_scale", Unsupported(TENSOR), "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%r1, %r2, %r3, %r4, %r1, %r2, %r3, %r4}, {%r1, %r2}, {%r3, %r4}, {%r1, %r2, %r3, %r4, %r1, %r2, %r3, %r4};"),
    row(Opcode::Mov, ".pred .b16 .b32 .b64 .u* .s* .f32 .f64, vector pack/unpack", Supported, "mov.b64 %rd1, %rd2;"),
    row(Opcode::Movmatrix, ".sync.aligned.m8n8.trans.b16", Emulated(MATRIX_MOVE_HOW), "movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;"),
    row(Opcode::Mul, ".lo .hi .wide on .u16 .u32 .u64 .s16 .s32 .s64", Supported, "mul.lo.s32 %r1, %r2, %r3;"),
    row(Opcode::Mul, "{.rn}{.ftz}{.sat}.f32, {.rn}.f64", Supported, "mul.rn.f32 %r1, %r2, %r3;"),
    row(Opcode::Mul, ".rz .rm .rp {.ftz}{.sat}.f32", Emulated(DIRECTED_HOW), "mul.rz.f32 %r1, %r2, %r3;"),
    row(Opcode::Mul, ".rz .rm .rp .f64", Emulated(SOFT_FMA), "mul.rz.f64 %rd1, %rd2, %rd3;"),
    row(Opcode::Mul, "{.rn}{.ftz}{.sat}.f16 .f16x2, .rn.bf16 .rn.bf16x2", Emulated(HALF_HOW), "mul.f16 %h1, %h2, %h3;"),
    row(
        Opcode::Mul24,
        ".lo .hi on .u32 .s32",
        Emulated("the 48-bit product of the 24-bit operands in 64 bits"),
        "mul24.lo.u32 %r1, %r2, %r3;",
    ),
    row(Opcode::Multimem, ".ld_reduce .st .red", Unsupported(CLUSTER), "multimem.st.global.u32 [%rd1], %r1;"),
    row(Opcode::Nanosleep, ".u32", Emulated("the duration is only an upper bound: no sleep; a loop with it polls (`pass::schedule`)"), "nanosleep.u32 100;"),
    row(Opcode::Neg, ".s16 .s32 .s64", Supported, "neg.s32 %r1, %r2;"),
    row(Opcode::Neg, ".f32 .f64", Supported, "neg.f32 %r1, %r2;"),
    row(Opcode::Neg, ".ftz.f32", Emulated("a subnormal input flushed to a zero of its sign first"), "neg.ftz.f32 %r1, %r2;"),
    row(Opcode::Neg, ".f16 .f16x2 .bf16 .bf16x2", Emulated("the sign bit flipped"), "neg.f16 %h1, %h2;"),
    row(Opcode::Not, ".pred .b16 .b32 .b64", Supported, "not.b32 %r1, %r2;"),
    row(Opcode::Or, ".pred .b16 .b32 .b64", Supported, "or.b32 %r1, %r2, %r3;"),
    row(Opcode::Pmevent, "", Emulated("a performance hint without effect on results: nothing is emitted"), "pmevent 1;"),
    row(Opcode::Popc, ".b32 .b64", Supported, "popc.b32 %r1, %r2;"),
    row(Opcode::Prefetch, ".global .local .L1 .L2, tensormap", Emulated("a performance hint without effect on results: nothing is emitted"), "prefetch.global.L2 [%rd1];"),
    row(Opcode::Prefetchu, ".L1", Emulated("a performance hint without effect on results: nothing is emitted"), "prefetchu.L1 [%rd1];"),
    row(
        Opcode::Prmt,
        ".b32 with no mode, .f4e .b4e .rc8 .ecl .ecr .rc16",
        Emulated("each byte selected by a shift of the 64-bit pair; modes through the ISA's selector table"),
        "prmt.b32 %r1, %r2, %r3, %r4;",
    ),
    row(
        Opcode::Rcp,
        ".rn{.ftz}.f32",
        Emulated("the device's reciprocal where an exact f64 residual proves it correctly \
             rounded, else an f64 reciprocal corrected by exact residuals at the f32 \
             midpoints; without f64, computed exactly in integer arithmetic"),
        "rcp.rn.f32 %r1, %r2;",
    ),
    row(Opcode::Rcp, ".approx{.ftz}.f32", Emulated("the correctly rounded reciprocal (within 1 ulp)"), "rcp.approx.f32 %r1, %r2;"),
    row(Opcode::Rcp, ".approx.ftz.f64", Emulated("the correctly rounded reciprocal, subnormals flushed"), "rcp.approx.ftz.f64 %rd1, %rd2;"),
    row(Opcode::Rcp, ".rz .rm .rp{.ftz}.f32", Emulated(
            "the nearest result corrected exactly (as `.rn`), then moved one ulp by the sign of \
             the exact residual; without f64, computed exactly in integer arithmetic",
        ), "rcp.rz.f32 %r1, %r2;"),
    row(Opcode::Rcp, ".rn .rz .rm .rp .f64", Emulated(DIV_F64), "rcp.rn.f64 %rd1, %rd2;"),
    row(
        Opcode::Red,
        ".add .and .or .xor .min .max integers; .inc .dec; .add .f32 .f64",
        Emulated("as `atom` without a result"),
        "red.global.add.u32 [%rd1], %r1;",
    ),
    row(Opcode::Redux, ".sync .add .min .max .and .or .xor on .u32 .s32 .b32", Emulated(WARP_HOW), "redux.sync.add.s32 %r1, %r2, 0xffffffff;"),
    row(Opcode::Redux, ".sync .min .max .f32 {.abs} {.NaN}", Emulated("the warp exchange of the integer forms over keys that order floats totally (-0 below +0); NaN lanes map to the identity, or with .NaN to the absorbing end, which decodes to the canonical NaN"), "redux.sync.min.abs.NaN.f32 %r1, %r2, 0xffffffff;"),
    row(Opcode::Rem, ".u16 .u32 .u64 .s16 .s32 .s64", Supported, "rem.s32 %r1, %r2, %r3;"),
    row(Opcode::Ret, "{.uni} in a kernel", Supported, "ret;"),
    row(Opcode::Rsqrt, ".approx{.ftz}.f32", Emulated(APPROX_HOW), "rsqrt.approx.f32 %r1, %r2;"),
    row(Opcode::Rsqrt, ".approx{.ftz}.f64", Emulated("the correctly rounded reciprocal of the correctly rounded square root"), "rsqrt.approx.f64 %rd1, %rd2;"),
    row(
        Opcode::Sad,
        ".u16 .u32 .u64 .s16 .s32 .s64",
        Emulated("a compare, two subtractions and a select"),
        "sad.u32 %r1, %r2, %r3, %r4;",
    ),
    row(Opcode::Selp, ".b16 .b32 .b64 .u* .s* .f32 .f64", Supported, "selp.b32 %r1, %r2, %r3, %p1;"),
    row(
        Opcode::Set,
        "every comparison and combine; .u32 .s32 .f32 .f16 .bf16 results; .f16 .bf16 .f16x2 .bf16x2 sources (also .u16 .s16 .f16x2 .bf16x2 results)",
        Emulated("`setp`, then a select of all ones or 1.0"),
        "set.lt.u32.f32 %r1, %r2, %r3;",
    ),
    row(Opcode::Setmaxnreg, ".inc .dec .sync.aligned.u32", Emulated("a register allocation hint: nothing is emitted"), "setmaxnreg.inc.sync.aligned.u32 64;"),
    row(Opcode::Setp, "every comparison and combine, p|q; .f16 (with .ftz), .bf16 and their x2 forms as their exact f32 values", Supported, "setp.lt.s32 %p1, %r1, %r2;"),
    row(
        Opcode::Shf,
        ".l .r with .clamp .wrap on .b32",
        Emulated("a 64-bit shift of the register pair"),
        "shf.l.wrap.b32 %r1, %r2, %r3, %r4;",
    ),
    row(Opcode::Shfl, "{.sync} .up .down .bfly .idx .b32, with the c operand's clamp and segment mask and the p destination", Emulated(WARP_HOW), "shfl.sync.bfly.b32 %r1|%p1, %r2, %r3, %r4, %r1;"),
    row(Opcode::Shl, ".b16 .b32 .b64, amounts at and above the width", Supported, "shl.b32 %r1, %r2, %r3;"),
    row(Opcode::Shr, ".b* .u* .s*, amounts at and above the width", Supported, "shr.s32 %r1, %r2, %r3;"),
    row(Opcode::Sin, ".approx{.ftz}.f32", Emulated(APPROX_HOW), "sin.approx.f32 %r1, %r2;"),
    row(
        Opcode::Slct,
        "every result type with .s32 or {.ftz}.f32 selector",
        Emulated("a compare with zero and a select"),
        "slct.u32.s32 %r1, %r2, %r3, %r4;",
    ),
    row(
        Opcode::Sqrt,
        ".rn{.ftz}.f32",
        Emulated("the device's square root where an exact f64 residual proves it correctly \
             rounded, else an f64 square root corrected by exact residuals at the f32 \
             midpoints; without f64, computed exactly in integer arithmetic"),
        "sqrt.rn.f32 %r1, %r2;",
    ),
    row(Opcode::Sqrt, ".approx{.ftz}.f32", Emulated("the correctly rounded square root"), "sqrt.approx.f32 %r1, %r2;"),
    row(Opcode::Sqrt, ".rz .rm .rp{.ftz}.f32", Emulated(
            "the nearest result corrected exactly (as `.rn`), then moved one ulp by the sign of \
             the exact residual; without f64, computed exactly in integer arithmetic",
        ), "sqrt.rz.f32 %r1, %r2;"),
    row(Opcode::Sqrt, ".rn .rz .rm .rp .f64", Emulated(SOFT_DIV), "sqrt.rn.f64 %rd1, %rd2;"),
    row(Opcode::St, ".global .shared, scalar and .v2 .v4, 8 to 64 bits", Supported, "st.global.u32 [%rd1], %r1;"),
    row(
        Opcode::St,
        ".local, and generic (global, or dispatched on the window)",
        Emulated("local memory is a per-thread array of 32-bit words; a generic access tests the address's window"),
        "st.local.u32 [%rd1], %r1;",
    ),
    row(Opcode::St, ".global.v8 (32-bit elements), .global.v4 (64-bit elements)", Supported, "st.global.v8.u32 [%rd1], {%r1, %r1, %r1, %r1, %r1, %r1, %r1, %r1};"),
    row(
        Opcode::St,
        ".relaxed .release .volatile .mmio with .cta .gpu .sys",
        Emulated(STRONG_HOW),
        "st.release.gpu.global.u32 [%rd1], %r1;",
    ),
    row(Opcode::St, ".b128", Emulated(B128_HOW), "st.global.b128 [%rd1], %q1;"),
    row(Opcode::Stackrestore, ".u32 .u64", Emulated(STACK_HOW), "stackrestore.u32 %r1;"),
    row(Opcode::Stacksave, ".u32 .u64", Emulated(STACK_HOW), "stacksave.u32 %r1;"),
    row(Opcode::Stmatrix, ".sync.aligned.m8n8 .x1 .x2 .x4 {.trans} {.shared}.b16", Emulated(MATRIX_MOVE_HOW), "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r1], {%r1, %r2, %r3, %r4};"),
    row(Opcode::Sub, ".u16 .u32 .u64 .s16 .s32 .s64", Supported, "sub.s32 %r1, %r2, %r3;"),
    row(
        Opcode::Sub,
        ".sat.s32",
        Emulated("the exact difference in 64 bits, clamped to the s32 range"),
        "sub.sat.s32 %r1, %r2, %r3;",
    ),
    row(
        Opcode::Sub,
        ".cc.u32 .cc.s32 .cc.u64 .cc.s64",
        Emulated("`a + ~b + 1`; CC.CF (a 32-bit register) is its carry, as on NVIDIA hardware"),
        "sub.cc.u32 %r1, %r2, %r3;",
    ),
    row(Opcode::Sub, "{.rn}{.ftz}{.sat}.f32, {.rn}.f64", Supported, "sub.rn.f32 %r1, %r2, %r3;"),
    row(Opcode::Sub, ".rz .rm .rp {.ftz}{.sat}.f32", Emulated(DIRECTED_HOW), "sub.rz.f32 %r1, %r2, %r3;"),
    row(Opcode::Sub, ".rz .rm .rp .f64", Emulated(SOFT_FMA), "sub.rz.f64 %rd1, %rd2, %rd3;"),
    row(Opcode::Sub, "{.rn}{.ftz}{.sat}.f16 .f16x2, .rn.bf16 .rn.bf16x2", Emulated(HALF_HOW), "sub.f16 %h1, %h2, %h3;"),
    row(
        Opcode::Subc,
        "{.cc}.u32 .s32 .u64 .s64",
        Emulated("`a + ~b + CF`; CC.CF (a 32-bit register) is its carry, as on NVIDIA hardware"),
        "subc.u32 %r1, %r2, %r3;",
    ),
    row(Opcode::Suld, ".b .1d .2d .3d .a1d .a2d {.v2 .v4} .b8 .b16 .b32 .b64 .trap .clamp .zero", Emulated(SURFACE_HOW), "suld.b.2d.b32.zero {%r1}, [%rd1, {%r2, %r3}];"),
    row(Opcode::Suq, ".width .height .depth .array_size", Emulated(QUERY_HOW), "suq.width.b32 %r1, [%rd1];"),
    row(Opcode::Sured, ".b .add .min .max .and .or .1d .2d .3d .a1d .a2d .u32 .s32 .b32 .u64 .s64 .b64 .trap .clamp .zero", Emulated("a global atomic on the element's address in ptxvk's surface descriptor, with the out-of-range mode of `suld`/`sust`"), "sured.b.add.1d.trap.u32 [%rd1, {%r1}], %r2;"),
    row(Opcode::Sured, ".p .add .min .max .and .or .1d .2d .3d .b32, .p .min .max .b64", Emulated("a global atomic on the sample, as the surface format's integers (signed or unsigned; `.b64`: two 32-bit channels); other formats trap"), "sured.p.add.1d.trap.b32 [%rd1, {%r1}], %r2;"),
    row(Opcode::Sust, ".b .1d .2d .3d .a1d .a2d {.v2 .v4} .b8 .b16 .b32 .b64 .trap .clamp .zero", Emulated(SURFACE_HOW), "sust.b.2d.b32.trap [%rd1, {%r1, %r2}], {%r3};"),
    row(Opcode::Sust, ".p .1d .2d .3d .a1d .a2d {.v2 .v4} .b32 .trap .clamp .zero", Emulated("x counts samples; each value (`.f32` for float formats, `.u32`/`.s32` for integer ones) converted to its channel: f32 to f16 rounded to nearest even, integers saturated (ptxvk's rules: NVIDIA documents none); channels the surface lacks are ignored, and those the values lack keep their bits"), "sust.p.2d.b32.zero [%rd1, {%r1, %r2}], {%r3};"),
    row(
        Opcode::Szext,
        ".clamp .wrap on .u32 .s32",
        Emulated("masks and selects following the ISA pseudocode"),
        "szext.wrap.s32 %r1, %r2, %r3;",
    ),
    row(Opcode::Tanh, ".approx.f32 .f16 .f16x2 .bf16 .bf16x2", Emulated(APPROX_HOW), "tanh.approx.f32 %r1, %r2;"),
    row(Opcode::Tcgen05, ".alloc .mma .ld .st .cp …", Unsupported(TENSOR), "tcgen05.fence::before_thread_sync;"),
    row(Opcode::Tensormap, ".replace .cp_fenceproxy", Unsupported(ASYNC), "tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;"),
    row(
        Opcode::Testp,
        ".finite .infinite .number .notanumber .normal .subnormal on .f32 .f64",
        Emulated("integer compares of the magnitude bits"),
        "testp.finite.f32 %p1, %r1;",
    ),
    row(Opcode::Tex, ".1d .2d .3d .a1d .a2d .v4 .f32/.s32/.u32 results, .f32/.s32 coordinates, .level .grad (mipmaps)", Emulated(TEXTURE_HOW), "tex.2d.v4.f32.f32 {%r1, %r2, %r3, %r4}, [%rd1, {%r1, %r2}];"),
    row(Opcode::Tex, ".cube .acube", Emulated("the direction's major axis picks the face (a layer of six), whose normalized coordinates are fetched as a 2-D texture's (CUDA Programming Guide, \"Cubemap Textures\"; ties go to x, then y)"), "tex.cube.v4.f32.f32 {%r1, %r2, %r3, %r4}, [%rd1, {%r1, %r2, %r3, %r4}];"),
    row(Opcode::Tex, "[texture, sampler, coordinates] (separate samplers, the independent texture mode)", Emulated("the sampler is a descriptor of ptxvk's layout with only sampler state (`.samplerref` parameters, host-bound variables, or module variables with static state); its filters, address modes, border colour and level of detail replace the texture's"), "tex.2d.v4.f32.f32 {%r1, %r2, %r3, %r4}, [%rd1, %rd2, {%r1, %r2}];"),
    row(Opcode::Tex, "texel offsets {, e}, .v2.f16x2 results, the residency predicate d|p", Emulated("offsets are added to the coordinates in texels before the address mode resolves the texels; `.f16x2` rounds each float result to the nearest half (R, G in the first register, B, A in the second); the predicate is true (ptxvk's textures are always resident)"), "tex.2d.v4.f32.s32 {%r1, %r2, %r3, %r4}, [%rd1, {%r1, %r2}], {%r3, %r4};"),
    row(Opcode::Tex, ".2dms .a2dms, depth compare", Unsupported(TEXTURE), "tex.2dms.v4.f32.s32 {%r1, %r2, %r3, %r4}, [%rd1, {%r1, %r2, %r3, %r4}];"),
    row(Opcode::Tld4, ".r .g .b .a .2d .a2d .v4 .f32/.s32/.u32 results, texel offsets, separate samplers", Emulated("the texels of the bilinear footprint fetched as `tex` fetches them (ptxvk's descriptor, address modes), returned counter-clockwise from the lower left"), "tld4.g.2d.v4.f32.f32 {%r1, %r2, %r3, %r4}, [%rd1, {%r1, %r2}];"),
    row(
        Opcode::Trap,
        "",
        Emulated("the first trapping thread records itself in the kernel's system area and ends; the launch then fails with an error naming the kernel and the thread"),
        "trap;",
    ),
    row(Opcode::Txq, ".width .height .depth .array_size .normalized_coords .force_unnormalized_coords .filter_mode .addr_mode_0-2 .num_mipmap_levels .num_samples", Emulated(QUERY_HOW), "txq.width.b32 %r1, [%rd1];"),
    row(Opcode::Txq, ".level .width .height .depth", Emulated("the size of the mipmap level the operand names, `max(1, size >> level)` in each dimension, from ptxvk's descriptor"), "txq.level.width.b32 %r1, [%rd1], %r2;"),
    row(Opcode::Vabsdiff, ".u32 .s32 (d, a, b), .sat, .add .min .max or a destination selector", Emulated(VIDEO_HOW), "vabsdiff.s32.u32.s32.sat %r1, %r2, %r3;"),
    row(Opcode::Vabsdiff2, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vabsdiff2.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vabsdiff4, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vabsdiff4.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vadd, ".u32 .s32 (d, a, b), .sat, .add .min .max or a destination selector", Emulated(VIDEO_HOW), "vadd.s32.u32.s32.sat %r1, %r2, %r3;"),
    row(Opcode::Vadd2, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vadd2.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vadd4, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vadd4.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vavrg2, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vavrg2.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vavrg4, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vavrg4.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vmad, ".u32 .s32 (d, a, b), -a -b -c, .po, .shr7 .shr15, .sat, selectors .b0-.b3 .h0 .h1", Emulated("the product and sum exact in 128 bits (two 64-bit words), then scaled and clamped"), "vmad.s32.s32.u32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vmax, ".u32 .s32 (d, a, b), .sat, .add .min .max or a destination selector", Emulated(VIDEO_HOW), "vmax.s32.u32.s32.sat %r1, %r2, %r3;"),
    row(Opcode::Vmax2, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vmax2.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vmax4, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vmax4.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vmin, ".u32 .s32 (d, a, b), .sat, .add .min .max or a destination selector", Emulated(VIDEO_HOW), "vmin.s32.u32.s32.sat %r1, %r2, %r3;"),
    row(Opcode::Vmin2, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vmin2.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vmin4, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vmin4.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vote, "{.sync} .all .any .uni .pred, .ballot.b32", Emulated(WARP_HOW), "vote.sync.any.pred %p1, %p2, 0xffffffff;"),
    row(Opcode::Vset, ".u32 .s32 (a, b), .eq .ne .lt .le .gt .ge, .add .min .max or a destination selector", Emulated(VIDEO_HOW), "vset.s32.u32.lt %r1, %r2, %r3;"),
    row(Opcode::Vset2, ".u32 .s32 (a, b), .eq .ne .lt .le .gt .ge, .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vset2.s32.u32.lt %r1, %r2, %r3, %r4;"),
    row(Opcode::Vset4, ".u32 .s32 (a, b), .eq .ne .lt .le .gt .ge, .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vset4.s32.u32.lt %r1, %r2, %r3, %r4;"),
    row(Opcode::Vshl, ".u32 .s32 (d, a), .u32 amount, .clamp .wrap, .sat, .add .min .max or a destination selector", Emulated(VIDEO_HOW), "vshl.s32.s32.u32.clamp %r1, %r2, %r3;"),
    row(Opcode::Vshr, ".u32 .s32 (d, a), .u32 amount, .clamp .wrap, .sat, .add .min .max or a destination selector", Emulated(VIDEO_HOW), "vshr.s32.s32.u32.clamp %r1, %r2, %r3;"),
    row(Opcode::Vsub, ".u32 .s32 (d, a, b), .sat, .add .min .max or a destination selector", Emulated(VIDEO_HOW), "vsub.s32.u32.s32.sat %r1, %r2, %r3;"),
    row(Opcode::Vsub2, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vsub2.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Vsub4, ".u32 .s32 (d, a, b), .sat or .add, lane selectors and masks", Emulated(VIDEO_SIMD_HOW), "vsub4.s32.u32.s32.sat %r1, %r2, %r3, %r4;"),
    row(Opcode::Wgmma, ".mma_async .fence .commit_group .wait_group", Unsupported(TENSOR), "wgmma.fence.sync.aligned;"),
    row(Opcode::Wmma, ".load .store .mma; .m16n16k16 .m32n8k16 .m8n32k16 .f16 .bf16 .s8 .u8; .m16n16k8 .tf32; .m8n8k4 .f64; .row .col, any stride, .global .shared generic", Emulated(WMMA_HOW), "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%r1, %r2, %r3, %r4, %r1, %r2, %r3, %r4}, {%r1, %r2, %r3, %r4, %r1, %r2, %r3, %r4}, {%r1, %r2, %r3, %r4, %r1, %r2, %r3, %r4}, {%r1, %r2, %r3, %r4, %r1, %r2, %r3, %r4};"),
    row(Opcode::Wmma, ".m8n8k32 .s4 .u4; .m8n8k128 .b1", Unsupported(WMMA_SUB_BYTE), "wmma.load.a.sync.aligned.row.m8n8k32.global.s4 {%r1}, [%rd1], %r2;"),
    row(Opcode::Xor, ".pred .b16 .b32 .b64", Supported, "xor.b32 %r1, %r2, %r3;"),
];

/// How `.b128` registers and accesses are lowered.
const B128_HOW: &str = "a .b128 register is a pair of 64-bit registers, low half first, and its \
    ld/st/mov are .v2.b64 ones (the same bytes in the same order)";

/// Why ptxvk does not lower `opcode` at all, when every row of it is unsupported.
pub fn unsupported_reason(opcode: Opcode) -> Option<&'static str> {
    let mut rows = ROWS.iter().filter(|r| r.opcode == opcode).peekable();
    rows.peek()?;
    let mut reason = None;
    for r in rows {
        match r.status {
            Unsupported(why) if reason.is_none() || reason == Some(why) => reason = Some(why),
            _ => return None,
        }
    }
    reason
}
