//! The instruction table: for every opcode of PTX ISA 9.2 Table 2, the modifiers it
//! accepts, the shape of its operands and the classes of modifiers its semantics use.
//! The check that runs after parsing holds the AST against it (`instruction_check`,
//! above the AST that this table is below).
//!
//! The table is written once (`instruction_table!`) and generates the [`Opcode`] enum,
//! which the parser stores in each instruction ([`crate::ast::Instruction::op`]): everything after
//! parsing matches `Opcode` variants, not opcode text. [`crate::decode`] turns the
//! modifiers into typed values by the row's [`ModifierClass`]es and the families of
//! [`crate::modifier`] the row lists (its last column): a modifier the syntax allows
//! but no class or family of the row gives a meaning is rejected there.
//!
//! An instruction parses generically (opcode, modifiers, operands); `check_module`
//! then holds each instruction against its [`InstrSpec`], so that a misspelled modifier
//! (`ld.volatil`) or an operand of the wrong shape (`ld.global.u32 %r1, %rd1` without
//! brackets) is reported at the offending token with what would have been accepted.
//!
//! The table describes syntax, not support: a modifier listed here may still be rejected
//! because ptxvk does not lower it. Combinations of modifiers (`add.rn.s32`) and type
//! rules are the business of the table of implemented forms ([`crate::forms`]) and,
//! for opcodes it has no row for, of semantic analysis. Opcodes that are not
//! in the table are left to semantic analysis, which reports them as unknown
//! instructions at their span.
//!
//! Modifier patterns: a pattern ending in `*` matches any modifier with that prefix
//! (`.L2::*` matches `.L2::evict_last`); `#` matches one or more decimal digits
//! (`.m#n#k#` matches `.m16n8k16`, `.#x#b` matches `.32x32b`).

use crate::modifier::Family;

/// What one opcode accepts.
#[derive(Debug)]
pub struct InstrSpec {
    pub opcode: Opcode,
    /// The opcode as PTX spells it.
    pub name: &'static str,
    /// Groups of modifier patterns; a modifier is valid if any group has a pattern
    /// that matches it.
    pub modifiers: &'static [&'static [&'static str]],
    /// Operand shapes, one letter each, separated by spaces; `?` marks an optional
    /// operand (only trailing operands are optional):
    /// `V` a value (register, immediate, vector `{…}`, `!p`, `-a`, `d|p`, `_`, name),
    /// `M` a memory operand (`[addr]`, `var[imm]` or a tuple `[tex, {x, y}]`),
    /// `L` a label or function name, `X` any one operand, `*` any number of operands of
    /// any shape.
    pub operands: &'static str,
    /// The classes of decoded modifiers ([`crate::decode`]) the instruction's
    /// semantics give a meaning to, besides types. A modifier of another class parses
    /// (it is in `modifiers`) but is rejected when the instruction is decoded
    /// (`.sat` on `max`, which the syntax of `max.f16` allows).
    pub classes: &'static [ModifierClass],
    /// The families of the other modifiers ([`crate::modifier`]) the instruction's
    /// semantics give a meaning to, in the order a shared spelling is tried.
    pub families: &'static [Family],
}

/// The classes of modifiers that [`crate::decode`] turns into typed values (PTX ISA
/// 9.2 §9.7: state spaces, vector sizes, rounding, `.ftz`, `.sat`, comparisons,
/// predicate combines, `.lo/.hi/.wide`). Types are a class every instruction takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModifierClass {
    Space,
    Vector,
    Rounding,
    Ftz,
    Sat,
    Cmp,
    Combine,
    MulPart,
}

// ----- modifier groups ---------------------------------------------------------------

/// Every type and packed-type modifier (§5.2, §5.2.5).
pub(crate) const TYPES: &[&str] = &[
    ".pred",
    ".b1",
    ".b4",
    ".b8",
    ".b16",
    ".b32",
    ".b64",
    ".b128",
    ".b1024",
    ".u4",
    ".u8",
    ".u16",
    ".u32",
    ".u64",
    ".s4",
    ".s8",
    ".s16",
    ".s32",
    ".s64",
    ".f16",
    ".f16x2",
    ".bf16",
    ".bf16x2",
    ".tf32",
    ".f32",
    ".f64",
    ".e4m3",
    ".e5m2",
    ".e2m3",
    ".e3m2",
    ".e2m1",
    ".ue8m0",
    ".e4m3x2",
    ".e5m2x2",
    ".e2m3x2",
    ".e3m2x2",
    ".e2m1x2",
    ".ue8m0x2",
    ".e4m3x4",
    ".e5m2x4",
    ".e2m3x4",
    ".e3m2x4",
    ".e2m1x4",
    ".s2f6x2",
    ".u16x2",
    ".s16x2",
    ".u8x4",
    ".s8x4",
    ".b8x16",
    ".b6x16_p32",
    ".b4x16_p64",
    ".f32x2",
];
const ROUND: &[&str] = &[".rn", ".rz", ".rm", ".rp", ".rna", ".rs"];
const ROUND_INT: &[&str] = &[".rni", ".rzi", ".rmi", ".rpi"];
const FLOAT_MODES: &[&str] =
    &[".ftz", ".sat", ".satfinite", ".relu", ".NaN", ".xorsign", ".abs", ".noftz", ".oob"];
const APPROX: &[&str] = &[".approx", ".full", ".ftz"];
const INT_MODES: &[&str] = &[".lo", ".hi", ".wide", ".sat", ".cc"];
const SPACES: &[&str] = &[
    ".global",
    ".shared",
    ".shared::cta",
    ".shared::cluster",
    ".local",
    ".const",
    ".const[#]",
    ".param",
    ".param::entry",
    ".param::func",
    ".generic",
];
const VECTOR: &[&str] = &[".v2", ".v4", ".v8", ".v16"];
const CACHE: &[&str] =
    &[".ca", ".cg", ".cs", ".lu", ".cv", ".wb", ".wt", ".nc", ".L1::*", ".L2::*", ".unified"];
const MEMORY_ORDER: &[&str] =
    &[".weak", ".relaxed", ".acquire", ".release", ".acq_rel", ".sc", ".volatile", ".mmio"];
const SCOPES: &[&str] = &[".cta", ".cluster", ".gpu", ".sys", ".gl"];
const ATOMIC_OPS: &[&str] =
    &[".and", ".or", ".xor", ".cas", ".exch", ".add", ".inc", ".dec", ".min", ".max"];
const COMPARISONS: &[&str] = &[
    ".eq", ".ne", ".lt", ".le", ".gt", ".ge", ".lo", ".ls", ".hi", ".hs", ".equ", ".neu", ".ltu",
    ".leu", ".gtu", ".geu", ".num", ".nan",
];
const BOOL_OPS: &[&str] = &[".and", ".or", ".xor"];
const SYNC: &[&str] = &[".sync", ".aligned"];
const UNI: &[&str] = &[".uni"];
const VIDEO: &[&str] = &[
    ".sat", ".add", ".min", ".max", ".clamp", ".wrap", ".shr7", ".shr15", ".po", ".eq", ".ne",
    ".lt", ".le", ".gt", ".ge",
];
const ASYNC_COPY: &[&str] = &[
    ".async",
    ".bulk",
    ".tensor",
    ".reduce",
    ".ca",
    ".cg",
    ".mbarrier::*",
    ".bulk_group",
    ".commit_group",
    ".wait_group",
    ".wait_all",
    ".read",
    ".prefetch",
    ".L2",
    ".L2::*",
    ".tile",
    ".tile::*",
    ".im2col",
    ".im2col::*",
    ".im2col_no_offs",
    ".multicast::*",
    ".cta_group::*",
    ".#d",
    ".mbarrier",
    ".arrive",
    ".noinc",
    ".ignore_oob",
    ".cp_mask",
    ".shared::cta",
    ".shared::cluster",
];
const TEX_GEOMETRY: &[&str] =
    &[".1d", ".2d", ".3d", ".a1d", ".a2d", ".cube", ".acube", ".2dms", ".a2dms"];
const SURFACE: &[&str] = &[".b", ".p", ".trap", ".clamp", ".zero"];
const MATRIX: &[&str] = &[
    ".m#n#k#",
    ".m#n#",
    ".row",
    ".col",
    ".x#",
    ".trans",
    ".sp",
    ".sp::*",
    ".kind::*",
    ".block_scale",
    ".scale_vec::*",
    ".satfinite",
    ".and",
    ".popc",
    ".xor",
    ".rn",
];
const TEXTURE_QUERIES: &[&str] = &[
    ".width",
    ".height",
    ".depth",
    ".channel_data_type",
    ".channel_order",
    ".normalized_coords",
    ".filter_mode",
    ".addr_mode_0",
    ".addr_mode_1",
    ".addr_mode_2",
    ".samples",
    ".force_unnormalized_coords",
    ".array_size",
    ".num_mipmap_levels",
    ".num_samples",
    ".level",
    ".memory_layout",
];

/// Writes the table once and derives from it the [`Opcode`] enum (one variant per
/// row, in the table's order) and [`INSTRUCTIONS`], indexed by `Opcode as usize`.
macro_rules! instruction_table {
    ($(($variant:ident, $name:literal, [$($group:expr),* $(,)?], $operands:literal,
        [$($class:ident),* $(,)?] $(, [$($family:ident),* $(,)?])?)),* $(,)?) => {
        /// A PTX instruction: one row of [`INSTRUCTIONS`], decoded by the parser
        /// ([`crate::ast::Instruction::op`]) so that nothing after it matches opcode text.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Opcode {
            $($variant),*
        }

        impl Opcode {
            /// Every opcode, in the table's (alphabetical) order.
            pub const ALL: &'static [Opcode] = &[$(Opcode::$variant),*];

            /// The opcode as PTX spells it.
            pub fn name(self) -> &'static str {
                INSTRUCTIONS[self as usize].name
            }
        }

        /// The table, sorted by opcode name.
        pub static INSTRUCTIONS: &[InstrSpec] = &[$(
            InstrSpec {
                opcode: Opcode::$variant,
                name: $name,
                modifiers: &[$($group),*],
                operands: $operands,
                classes: &[$(ModifierClass::$class),*],
                families: &[$($(Family::$family),*)?],
            }
        ),*];
    };
}

instruction_table! {
    (Abs, "abs", [TYPES, FLOAT_MODES], "V V", [Ftz], [FloatOption]),
    (Activemask, "activemask", [TYPES], "V", []),
    (Add, "add", [TYPES, ROUND, FLOAT_MODES, INT_MODES], "V V V", [Rounding, Ftz, Sat],
        [Carry, FloatOption, Format]),
    (Addc, "addc", [TYPES, INT_MODES], "V V V", [], [Carry]),
    (Alloca, "alloca", [TYPES, &[".local"]], "V V V?", []),
    (And, "and", [TYPES], "V V V", []),
    (Applypriority, "applypriority", [SPACES, CACHE, &[".L2"]], "M V", [Space],
        [CacheLevel, CacheOp, CacheHint]),
    (Atom, "atom", [TYPES, SPACES, MEMORY_ORDER, SCOPES, ATOMIC_OPS, CACHE, VECTOR, FLOAT_MODES],
        "V M V V? V?", [Space, Combine, Vector],
        [Reduction, MemoryOrder, Scope, CacheOp, CacheHint, FloatOption]),
    (Bar, "bar", [SYNC, &[".arrive", ".red", ".warp", ".cta", ".popc", ".and", ".or"], TYPES],
        "V? V? V? V?", [Combine], [Convergence, BarrierForm, Scope, Population, MemoryOrder]),
    (Barrier, "barrier", [
            SYNC,
            &[
                ".arrive", ".red", ".cluster", ".wait", ".cta", ".popc", ".and", ".or", ".relaxed",
                ".acquire", ".release"
            ],
            TYPES
        ],
        "V? V? V? V?", [Combine], [Convergence, BarrierForm, Scope, Population, MemoryOrder]),
    (Bfe, "bfe", [TYPES], "V V V V", []),
    (Bfi, "bfi", [TYPES], "V V V V V", []),
    (Bfind, "bfind", [TYPES, &[".shiftamt"]], "V V", [], [Bfind]),
    (Bmsk, "bmsk", [TYPES, &[".clamp", ".wrap"]], "V V V", [], [Clamp]),
    (Bra, "bra", [UNI], "L", [], [Uniform]),
    (Brev, "brev", [TYPES], "V V", []),
    (Brkpt, "brkpt", [], "", []),
    (Brx, "brx", [UNI, &[".idx"]], "V L", [], [Uniform, Indexed]),
    (Call, "call", [UNI], "*", [], [Uniform]),
    (Clusterlaunchcontrol, "clusterlaunchcontrol", [
            TYPES,
            &[
                ".try_cancel",
                ".async",
                ".shared::cta",
                ".mbarrier::*",
                ".multicast::*",
                ".query_cancel",
                ".is_canceled",
                ".get_first_ctaid",
                ".get_first_ctaid::*"
            ]
        ],
        "*", []),
    (Clz, "clz", [TYPES], "V V", []),
    (Cnot, "cnot", [TYPES], "V V", []),
    (Copysign, "copysign", [TYPES], "V V V", []),
    (Cos, "cos", [TYPES, APPROX], "V V", [Ftz], [Precision]),
    (Cp, "cp", [TYPES, ASYNC_COPY, SPACES, ATOMIC_OPS, FLOAT_MODES], "*", [],
        [CopyForm, CopySpace, CacheOp, CacheHint, Reduction, TensorDims, FloatOption]),
    (Createpolicy, "createpolicy", [TYPES, &[".fractional", ".range", ".cvt", ".global", ".L2::*"]],
        "V X X? X? X?", [], [Policy, CacheHint]),
    (Cvt, "cvt", [TYPES, ROUND, ROUND_INT, FLOAT_MODES, &[".pack", ".u2", ".s2", ".scaled::*"]], "V V V? V? V?",
        [Rounding, Ftz, Sat], [Conversion, Format, FloatOption, ConvertRounding]),
    (Cvta, "cvta", [TYPES, SPACES, &[".to"]], "V V", [Space], [Conversion]),
    (Discard, "discard", [SPACES, &[".L2"]], "M V", [Space], [CacheLevel]),
    (Div, "div", [TYPES, ROUND, APPROX, FLOAT_MODES], "V V V", [Rounding, Ftz], [Precision]),
    (Dp2a, "dp2a", [TYPES, &[".lo", ".hi"]], "V V V V", [MulPart]),
    (Dp4a, "dp4a", [TYPES], "V V V V", []),
    (Elect, "elect", [&[".sync"]], "V V", [], [Convergence]),
    (Ex2, "ex2", [TYPES, APPROX], "V V", [Ftz], [Precision]),
    (Exit, "exit", [], "", []),
    (Fence, "fence", [
            MEMORY_ORDER,
            SCOPES,
            SYNC,
            &[
                ".proxy",
                ".alias",
                ".async",
                ".async::*",
                ".tensormap::*",
                ".mbarrier_init",
                ".global",
                ".shared::cta",
                ".shared::cluster",
                ".op_restrict",
                ".sync_restrict::*"
            ]
        ],
        "M? V?", [Space], [FenceForm, MemoryOrder, Scope, Convergence]),
    (Fma, "fma", [TYPES, ROUND, FLOAT_MODES], "V V V V", [MulPart, Rounding, Ftz, Sat],
        [FloatOption]),
    (Fns, "fns", [TYPES], "V V V V", []),
    (Getctarank, "getctarank", [TYPES, SPACES], "V V", [Space]),
    (Griddepcontrol, "griddepcontrol", [&[".launch_dependents", ".wait"]], "", [],
        [GridDependency]),
    (Isspacep, "isspacep", [SPACES], "V V", [Space]),
    (Istypep, "istypep", [&[".texref", ".samplerref", ".surfref"]], "V V", []),
    (Ld, "ld", [TYPES, SPACES, VECTOR, CACHE, MEMORY_ORDER, SCOPES], "V M V?", [Space, Vector],
        [CacheOp, CacheHint, MemoryOrder, Scope]),
    (Ldmatrix, "ldmatrix", [TYPES, SYNC, SPACES, MATRIX], "V M", [Space],
        [Convergence, Shape, Count, Transpose]),
    (Ldu, "ldu", [TYPES, SPACES, VECTOR], "V M", [Space, Vector]),
    (Lg2, "lg2", [TYPES, APPROX], "V V", [Ftz], [Precision]),
    (Lop3, "lop3", [TYPES, BOOL_OPS], "V V V V V V?", [Combine]),
    (Mad, "mad", [TYPES, INT_MODES, ROUND, FLOAT_MODES], "V V V V", [MulPart, Rounding, Ftz, Sat],
        [Carry, FloatOption]),
    (Mad24, "mad24", [TYPES, INT_MODES], "V V V V", [MulPart, Sat]),
    (Madc, "madc", [TYPES, INT_MODES], "V V V V", [MulPart], [Carry]),
    (Mapa, "mapa", [TYPES, SPACES], "V V V", [Space]),
    (Match, "match", [TYPES, &[".any", ".all", ".sync"]], "V V V", [], [Convergence, Vote]),
    (Max, "max", [TYPES, FLOAT_MODES], "V V V V?", [Ftz], [FloatOption, Format]),
    (Mbarrier, "mbarrier", [
            TYPES,
            SPACES,
            MEMORY_ORDER,
            SCOPES,
            &[
                ".init",
                ".inval",
                ".arrive",
                ".arrive_drop",
                ".expect_tx",
                ".complete_tx",
                ".test_wait",
                ".try_wait",
                ".pending_count",
                ".parity",
                ".noComplete"
            ]
        ],
        "*", [Space], [MbarrierForm, MemoryOrder, Scope]),
    (Membar, "membar", [SCOPES, &[".proxy", ".alias", ".async", ".global", ".shared::cta", ".shared::cluster"]],
        "", [], [Scope, FenceForm]),
    (Min, "min", [TYPES, FLOAT_MODES], "V V V V?", [Ftz], [FloatOption, Format]),
    (Mma, "mma", [TYPES, SYNC, MATRIX], "*", [Combine],
        [Convergence, Layout, Shape, FloatOption, Population, Format]),
    (Mov, "mov", [TYPES, VECTOR], "V X", [Vector]),
    (Movmatrix, "movmatrix", [TYPES, SYNC, MATRIX], "V V", [], [Convergence, Shape, Transpose]),
    (Mul, "mul", [TYPES, INT_MODES, ROUND, FLOAT_MODES], "V V V", [MulPart, Rounding, Ftz, Sat]),
    (Mul24, "mul24", [TYPES, INT_MODES], "V V V", [MulPart]),
    (Multimem, "multimem", [
            TYPES,
            SPACES,
            MEMORY_ORDER,
            SCOPES,
            ATOMIC_OPS,
            VECTOR,
            FLOAT_MODES,
            &[".ld_reduce", ".st", ".red", ".cp", ".acc::*"]
        ],
        "*", []),
    (Nanosleep, "nanosleep", [TYPES], "V", []),
    (Neg, "neg", [TYPES, FLOAT_MODES], "V V", [Ftz], [FloatOption]),
    (Not, "not", [TYPES], "V V", []),
    (Or, "or", [TYPES], "V V V", []),
    (Pmevent, "pmevent", [&[".mask"]], "V", [], [EventMask]),
    (Popc, "popc", [TYPES], "V V", []),
    (Prefetch, "prefetch", [SPACES, &[".L1", ".L2", ".L2::*", ".tensormap"]], "M", [Space],
        [CacheLevel, CacheHint]),
    (Prefetchu, "prefetchu", [&[".L1"]], "M", [], [CacheLevel]),
    (Prmt, "prmt", [TYPES, &[".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"]], "V V V V", [],
        [PermuteMode]),
    (Rcp, "rcp", [TYPES, ROUND, APPROX], "V V", [Rounding, Ftz], [Precision]),
    (Red, "red", [
            TYPES,
            SPACES,
            MEMORY_ORDER,
            SCOPES,
            ATOMIC_OPS,
            CACHE,
            VECTOR,
            FLOAT_MODES,
            &[".async", ".mbarrier::*"]
        ],
        "M V X?", [Space, Combine, Vector],
        [Reduction, MemoryOrder, Scope, CacheOp, CacheHint, FloatOption]),
    (Redux, "redux", [TYPES, &[".sync", ".add", ".min", ".max", ".and", ".or", ".xor", ".abs", ".NaN"]],
        "V V V", [Combine], [Convergence, Reduction, FloatOption]),
    (Rem, "rem", [TYPES], "V V V", []),
    (Ret, "ret", [UNI], "", [], [Uniform]),
    (Rsqrt, "rsqrt", [TYPES, APPROX], "V V", [Ftz], [Precision]),
    (Sad, "sad", [TYPES], "V V V V", []),
    (Selp, "selp", [TYPES], "V V V V", []),
    (Set, "set", [TYPES, COMPARISONS, BOOL_OPS, &[".ftz"]], "V V V V?", [Cmp, Combine, Ftz]),
    (Setmaxnreg, "setmaxnreg", [TYPES, SYNC, &[".inc", ".dec"]], "V", [],
        [Convergence, RegisterCount]),
    (Setp, "setp", [TYPES, COMPARISONS, BOOL_OPS, &[".ftz"]], "V V V V?", [Cmp, Combine, Ftz]),
    (Shf, "shf", [TYPES, &[".l", ".r", ".clamp", ".wrap"]], "V V V V", [], [ShiftDirection, Clamp]),
    (Shfl, "shfl", [TYPES, &[".sync", ".up", ".down", ".bfly", ".idx"]], "V V V V V?", [],
        [Convergence, Shuffle]),
    (Shl, "shl", [TYPES], "V V V", []),
    (Shr, "shr", [TYPES], "V V V", []),
    (Sin, "sin", [TYPES, APPROX], "V V", [Ftz], [Precision]),
    (Slct, "slct", [TYPES, &[".ftz"]], "V V V V", [Ftz]),
    (Sqrt, "sqrt", [TYPES, ROUND, APPROX], "V V", [Rounding, Ftz], [Precision]),
    (St, "st", [TYPES, SPACES, VECTOR, CACHE, MEMORY_ORDER, SCOPES, &[".async", ".mbarrier::*", ".bulk"]],
        "M V X?", [Space, Vector], [CacheOp, CacheHint, MemoryOrder, Scope]),
    (Stackrestore, "stackrestore", [TYPES], "V", []),
    (Stacksave, "stacksave", [TYPES], "V", []),
    (Stmatrix, "stmatrix", [TYPES, SYNC, SPACES, MATRIX], "M V", [Space],
        [Convergence, Shape, Count, Transpose]),
    (Sub, "sub", [TYPES, ROUND, FLOAT_MODES, INT_MODES], "V V V", [Rounding, Ftz, Sat],
        [Carry, FloatOption, Format]),
    (Subc, "subc", [TYPES, INT_MODES], "V V V", [], [Carry]),
    (Suld, "suld", [TYPES, SURFACE, TEX_GEOMETRY, VECTOR, CACHE], "V M", [Vector],
        [SurfaceAccess, Geometry, Boundary, CacheOp]),
    (Suq, "suq", [TYPES, TEXTURE_QUERIES], "V M", [], [Query]),
    (Sured, "sured", [TYPES, SURFACE, TEX_GEOMETRY, &[".add", ".min", ".max", ".and", ".or"]], "M V",
        [Combine], [SurfaceAccess, Geometry, Boundary, Reduction]),
    (Sust, "sust", [TYPES, SURFACE, TEX_GEOMETRY, VECTOR, CACHE], "M V", [Vector],
        [SurfaceAccess, Geometry, Boundary, CacheOp]),
    (Szext, "szext", [TYPES, &[".clamp", ".wrap"]], "V V V", [], [Clamp]),
    (Tanh, "tanh", [TYPES, APPROX], "V V", [Ftz], [Precision]),
    (Tcgen05, "tcgen05", [
            TYPES,
            SYNC,
            SPACES,
            &[
                ".alloc",
                ".dealloc",
                ".relinquish_alloc_permit",
                ".mma",
                ".ws",
                ".sp",
                ".commit",
                ".ld",
                ".st",
                ".wait::*",
                ".cp",
                ".shift",
                ".fence::*",
                ".cta_group::*",
                ".kind::*",
                ".mbarrier::*",
                ".multicast::*",
                ".#x#b",
                ".#x#bx#",
                ".warpx2::*",
                ".warpx4",
                ".block16",
                ".block32",
                ".x#",
                ".pack::*",
                ".unpack::*",
                ".down",
                ".collector::*",
                ".block_scale",
                ".scale_vec::*",
                ".ashift",
                ".red",
                ".min",
                ".max",
                ".abs",
                ".NaN"
            ]
        ],
        "*", []),
    (Tensormap, "tensormap", [
            TYPES,
            SPACES,
            SYNC,
            MEMORY_ORDER,
            SCOPES,
            &[
                ".replace",
                ".tile",
                ".global_address",
                ".rank",
                ".box_dim",
                ".global_dim",
                ".global_stride",
                ".element_stride",
                ".elemtype",
                ".interleave_layout",
                ".swizzle_mode",
                ".swizzle_atomicity",
                ".fill_mode",
                ".cp_fenceproxy",
                ".tensormap::*"
            ]
        ],
        "*", []),
    (Testp, "testp", [TYPES, &[".finite", ".infinite", ".number", ".notanumber", ".normal", ".subnormal"]],
        "V V", [], [FloatClass]),
    (Tex, "tex", [TYPES, TEX_GEOMETRY, VECTOR, &[".level", ".grad", ".base"]], "V M V? V? V? V?",
        [Vector], [Geometry, Lod]),
    (Tld4, "tld4", [TYPES, TEX_GEOMETRY, VECTOR, &[".r", ".g", ".b", ".a"]], "V M V? V?", [Vector],
        [Geometry, Component]),
    (Trap, "trap", [], "", []),
    (Txq, "txq", [TYPES, TEXTURE_QUERIES], "V M V?", [], [Query]),
    (Vabsdiff, "vabsdiff", [TYPES, VIDEO], "V V V V?", [Sat], [Reduction, Clamp, VideoScale]),
    (Vabsdiff2, "vabsdiff2", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vabsdiff4, "vabsdiff4", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vadd, "vadd", [TYPES, VIDEO], "V V V V?", [Sat], [Reduction, Clamp, VideoScale]),
    (Vadd2, "vadd2", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vadd4, "vadd4", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vavrg2, "vavrg2", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vavrg4, "vavrg4", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vmad, "vmad", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vmax, "vmax", [TYPES, VIDEO], "V V V V?", [Sat], [Reduction, Clamp, VideoScale]),
    (Vmax2, "vmax2", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vmax4, "vmax4", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vmin, "vmin", [TYPES, VIDEO], "V V V V?", [Sat], [Reduction, Clamp, VideoScale]),
    (Vmin2, "vmin2", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vmin4, "vmin4", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vote, "vote", [TYPES, &[".sync", ".all", ".any", ".uni", ".ballot"]], "V V V?", [],
        [Convergence, Vote]),
    (Vset, "vset", [TYPES, VIDEO], "V V V V?", [Cmp], [Reduction, Clamp, VideoScale]),
    (Vset2, "vset2", [TYPES, VIDEO], "V V V V", [Cmp], [Reduction, Clamp, VideoScale]),
    (Vset4, "vset4", [TYPES, VIDEO], "V V V V", [Cmp], [Reduction, Clamp, VideoScale]),
    (Vshl, "vshl", [TYPES, VIDEO], "V V V V?", [Sat], [Reduction, Clamp, VideoScale]),
    (Vshr, "vshr", [TYPES, VIDEO], "V V V V?", [Sat], [Reduction, Clamp, VideoScale]),
    (Vsub, "vsub", [TYPES, VIDEO], "V V V V?", [Sat], [Reduction, Clamp, VideoScale]),
    (Vsub2, "vsub2", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Vsub4, "vsub4", [TYPES, VIDEO], "V V V V", [Sat], [Reduction, Clamp, VideoScale]),
    (Wgmma, "wgmma", [TYPES, SYNC, MATRIX, &[".fence", ".commit_group", ".wait_group", ".mma_async"]],
        "*", []),
    (Wmma, "wmma", [TYPES, SYNC, SPACES, MATRIX, &[".load", ".store", ".mma", ".a", ".b", ".c", ".d"]],
        "*", [Space, Rounding],
        [WmmaOp, Fragment, Convergence, Layout, Shape, FloatOption, Format]),
    (Xor, "xor", [TYPES], "V V V", []),
}

impl Opcode {
    /// The opcode spelled `name`, if PTX has one.
    pub fn from_name(name: &str) -> Option<Opcode> {
        let index = INSTRUCTIONS.binary_search_by(|s| s.name.cmp(name)).ok()?;
        Some(INSTRUCTIONS[index].opcode)
    }

    /// The opcode's row of the table.
    pub fn spec(self) -> &'static InstrSpec {
        &INSTRUCTIONS[self as usize]
    }
}

impl std::fmt::Display for Opcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl InstrSpec {
    /// Whether `modifier` (with its leading dot) is one this opcode accepts.
    pub fn accepts(&self, modifier: &str) -> bool {
        self.modifiers.iter().any(|g| g.iter().any(|p| pattern_matches(p, modifier)))
    }
}

/// `*` at the end matches any rest; `#` matches one or more digits.
pub(crate) fn pattern_matches(pattern: &str, s: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix('*') {
        return s.starts_with(prefix);
    }
    if !pattern.contains('#') {
        return pattern == s;
    }
    let (p, s) = (pattern.as_bytes(), s.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < p.len() {
        if p[i] == b'#' {
            let start = j;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            if j == start {
                return false;
            }
        } else {
            if s.get(j) != Some(&p[i]) {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    j == s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for w in INSTRUCTIONS.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
        for (k, spec) in INSTRUCTIONS.iter().enumerate() {
            assert_eq!(spec.opcode as usize, k, "`{}` is not at its index", spec.name);
            assert_eq!(Opcode::from_name(spec.name), Some(spec.opcode));
        }
    }

    #[test]
    fn patterns() {
        assert!(pattern_matches(".m#n#k#", ".m16n8k16"));
        assert!(!pattern_matches(".m#n#k#", ".m16n8"));
        assert!(pattern_matches(".#x#b", ".32x32b"));
        assert!(pattern_matches(".L2::*", ".L2::evict_last"));
        assert!(!pattern_matches(".#d", ".d"));
    }
}
