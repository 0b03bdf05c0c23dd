//! The IR text format: a printer and a parser for [`crate::ir`] kernels, in the style of
//! Cranelift's `.clif` files, so that passes can be tested from text and their results
//! kept as snapshots.
//!
//! # Grammar
//!
//! One item per line; `;` starts a comment that runs to the end of the line.
//!
//! ```text
//! kernel NAME {
//!     params size 16 align 8                     ; the parameter block (crate::abi)
//!     param a .u64 x1 @0 size 8 align 8          ; one per parameter, in order
//!     shared 256 align 16 word 64                ; static bytes, dynamic align, element bits
//!     shared_var tile @0 256                     ; static shared variables
//!     local 32                                   ; bytes of the local window
//!     variable buf local size 8 align 4          ; variables v0, v1… (layout_memory)
//!     reqntid 32 1 1 | maxntid 256 1 1 | maxnreg 64
//!     grid_sync | system | heap | explicit_cluster ; flags, when set
//!     grid_phases 48 3 0                         ; split_grid: record bytes, barriers, in a loop
//!     device_launches child parent               ; kernels it may launch (device_launch)
//!     address_size 32                            ; when not 64
//!     warp_scratch 512 | block_vote 1536         ; reserved shared words
//!     entry bb0
//!     reg i32 %r1 %r2                            ; registers, in id order
//! bb0 ($L__BB0_1):                               ; blocks, in id order; label optional
//!     %r2 = add.u32 %r1, 4
//!     %r3 = call.fn0 %r2, 7                      ; a call of the kernel's function fn0
//!     call_indirect %rd1, [0xf000000000000001 fn0 (%r2, 7) -> (%r3)]  ; an arm per candidate
//!     branch !%p1, bb1, bb2                      ; the terminator ends the block
//! function fn0 square {                          ; the kernel's functions, in id order
//!     entry bb0
//!     reg i32 %x %y                              ; the function's own registers
//!     param u32 %x                               ; parameters, then returns, in order
//!     return u32 %y
//!     stack %sp                                  ; the stack pointer parameter, if any
//! bb0:
//!     %y = mul.u32 %x, %x
//!     return
//! }
//! }
//! ```
//!
//! * **Types.** Register storage types are `pred`, `i8`…`i64`, `f32`, `f64`; operation
//!   types are `pred`, `u8`…`u64` (also PTX's `.bN`), `s8`…`s64`, `f32`, `f64`.
//! * **Operands.** A register is its name (`%r1`, or `$t7` for temporaries); names
//!   that repeat get `#id` appended. An immediate is its bit pattern, decimal below
//!   65,536 and hexadecimal above. `!%p` is a negated predicate. Addresses are
//!   `[%rd1+8]`, `[%rd1]`, `[16]`.
//! * **Instructions** are `DSTS = OPCODE.MODIFIERS OPERANDS`, `_` standing for an absent
//!   destination. Modifiers may come in any order, except that the first of `narrow`,
//!   `itof` and `widen` is the float format and that `cvt`'s types are `.to.from`.
//!   Every field of [`InstKind`] is written, so printing, parsing and printing again
//!   gives the same text.
//! * **Spans.** A parsed kernel's spans are byte ranges of the text's lines, so
//!   diagnostics about parsed IR point into the IR file.
//!
//! [`print_structured`] writes the same header followed by the structured tree, each
//! `block` with its instructions (the blocks' terminators are the tree's), then a
//! `routine fnN NAME` line per emulation routine the kernel calls (its name determines
//! its body); [`parse_structured`] reads it back.
//!
//! The printer is [`print`](mod@print)'s file, the parser of the CFG form [`parse`](mod@parse)'s, that of the
//! structured form `structured.rs`.

use std::fmt::Write as _;

mod copy;
mod data_address;
mod half;
mod integer;
mod matrix;
mod mbarrier;
mod parse;
mod print;
mod stack;
mod structured;
mod system;
mod texture;
mod variable;
mod video;
mod warp;

pub use parse::parse;
pub use print::{print, print_structured};
pub use structured::parse_structured;

use crate::ir::*;

/// A two-way table between an enum and its spelling in the text.
trait Spelled: Copy + PartialEq + 'static {
    const TABLE: &'static [(Self, &'static str)];

    fn spelling(self) -> &'static str {
        Self::TABLE.iter().find(|e| e.0 == self).map_or("<unspelled>", |e| e.1)
    }

    fn from_spelling(s: &str) -> Option<Self> {
        Self::TABLE.iter().find(|e| e.1 == s).map(|e| e.0)
    }
}

impl Spelled for UnaryOp {
    const TABLE: &'static [(Self, &'static str)] = &[
        (UnaryOp::Not, "not"),
        (UnaryOp::Neg, "neg"),
        (UnaryOp::Abs, "abs"),
        (UnaryOp::Popc, "popc"),
        (UnaryOp::Clz, "clz"),
        (UnaryOp::Brev, "brev"),
        (UnaryOp::Sqrt, "sqrt"),
        (UnaryOp::Rcp, "rcp"),
        (UnaryOp::Cnot, "cnot"),
        (UnaryOp::Ex2, "ex2"),
        (UnaryOp::Lg2, "lg2"),
        (UnaryOp::Sin, "sin"),
        (UnaryOp::Cos, "cos"),
        (UnaryOp::Rsqrt, "rsqrt"),
        (UnaryOp::Tanh, "tanh"),
    ];
}

impl Spelled for BinaryOp {
    const TABLE: &'static [(Self, &'static str)] = &[
        (BinaryOp::Add, "add"),
        (BinaryOp::Sub, "sub"),
        (BinaryOp::Mul, "mul"),
        (BinaryOp::MulHi, "mulhi"),
        (BinaryOp::MulWide, "mulwide"),
        (BinaryOp::Div, "div"),
        (BinaryOp::Rem, "rem"),
        (BinaryOp::Min, "min"),
        (BinaryOp::Max, "max"),
        (BinaryOp::And, "and"),
        (BinaryOp::Or, "or"),
        (BinaryOp::Xor, "xor"),
        (BinaryOp::Shl, "shl"),
        (BinaryOp::Shr, "shr"),
    ];
}

impl Spelled for CmpOp {
    const TABLE: &'static [(Self, &'static str)] = &[
        (CmpOp::Eq, "eq"),
        (CmpOp::Ne, "ne"),
        (CmpOp::Lt, "lt"),
        (CmpOp::Le, "le"),
        (CmpOp::Gt, "gt"),
        (CmpOp::Ge, "ge"),
        (CmpOp::Equ, "equ"),
        (CmpOp::Neu, "neu"),
        (CmpOp::Ltu, "ltu"),
        (CmpOp::Leu, "leu"),
        (CmpOp::Gtu, "gtu"),
        (CmpOp::Geu, "geu"),
        (CmpOp::Num, "num"),
        (CmpOp::Nan, "nan"),
    ];
}

impl Spelled for BoolOp {
    const TABLE: &'static [(Self, &'static str)] =
        &[(BoolOp::And, "and"), (BoolOp::Or, "or"), (BoolOp::Xor, "xor")];
}

impl Spelled for Rounding {
    const TABLE: &'static [(Self, &'static str)] = &[
        (Rounding::Nearest, "rn"),
        (Rounding::Zero, "rz"),
        (Rounding::Down, "rm"),
        (Rounding::Up, "rp"),
        (Rounding::NearestAway, "rna"),
    ];
}

impl Spelled for FloatFormat {
    const TABLE: &'static [(Self, &'static str)] = &[
        (FloatFormat::F32, "f32"),
        (FloatFormat::F16, "f16"),
        (FloatFormat::Bf16, "bf16"),
        (FloatFormat::Tf32, "tf32"),
        (FloatFormat::E4m3, "e4m3"),
        (FloatFormat::E5m2, "e5m2"),
        (FloatFormat::F64, "f64"),
        (FloatFormat::E2m3, "e2m3"),
        (FloatFormat::E3m2, "e3m2"),
        (FloatFormat::E2m1, "e2m1"),
    ];
}

impl Spelled for AtomicOp {
    const TABLE: &'static [(Self, &'static str)] = &[
        (AtomicOp::Load, "load"),
        (AtomicOp::Store, "store"),
        (AtomicOp::Add, "add"),
        (AtomicOp::And, "and"),
        (AtomicOp::Or, "or"),
        (AtomicOp::Xor, "xor"),
        (AtomicOp::Exch, "exch"),
        (AtomicOp::Min, "min"),
        (AtomicOp::Max, "max"),
        (AtomicOp::Cas, "cas"),
        (AtomicOp::Inc, "inc"),
        (AtomicOp::Dec, "dec"),
        (AtomicOp::FloatAdd { ftz: false }, "fadd"),
        (AtomicOp::FloatAdd { ftz: true }, "fadd_ftz"),
        (AtomicOp::HalfAdd { format: FloatFormat::F16, lanes: 1 }, "hadd_f16"),
        (AtomicOp::HalfAdd { format: FloatFormat::F16, lanes: 2 }, "hadd_f16x2"),
        (AtomicOp::HalfAdd { format: FloatFormat::Bf16, lanes: 1 }, "hadd_bf16"),
        (AtomicOp::HalfAdd { format: FloatFormat::Bf16, lanes: 2 }, "hadd_bf16x2"),
        (AtomicOp::HalfMinMax { max: false, format: FloatFormat::F16, lanes: 1 }, "hmin_f16"),
        (AtomicOp::HalfMinMax { max: false, format: FloatFormat::F16, lanes: 2 }, "hmin_f16x2"),
        (AtomicOp::HalfMinMax { max: false, format: FloatFormat::Bf16, lanes: 1 }, "hmin_bf16"),
        (AtomicOp::HalfMinMax { max: false, format: FloatFormat::Bf16, lanes: 2 }, "hmin_bf16x2"),
        (AtomicOp::HalfMinMax { max: true, format: FloatFormat::F16, lanes: 1 }, "hmax_f16"),
        (AtomicOp::HalfMinMax { max: true, format: FloatFormat::F16, lanes: 2 }, "hmax_f16x2"),
        (AtomicOp::HalfMinMax { max: true, format: FloatFormat::Bf16, lanes: 1 }, "hmax_bf16"),
        (AtomicOp::HalfMinMax { max: true, format: FloatFormat::Bf16, lanes: 2 }, "hmax_bf16x2"),
    ];
}

impl Spelled for Scope {
    const TABLE: &'static [(Self, &'static str)] =
        &[(Scope::Cta, "cta"), (Scope::Gpu, "gpu"), (Scope::Sys, "sys")];
}

impl Spelled for Order {
    const TABLE: &'static [(Self, &'static str)] = &[
        (Order::Relaxed, "relaxed"),
        (Order::Acquire, "acquire"),
        (Order::Release, "release"),
        (Order::AcqRel, "acq_rel"),
    ];
}

impl Spelled for Space {
    const TABLE: &'static [(Self, &'static str)] = &[
        (Space::Global, "global"),
        (Space::Shared, "shared"),
        (Space::Param, "param"),
        (Space::Local, "local"),
        (Space::Generic, "generic"),
    ];
}

impl Spelled for OddOp {
    const TABLE: &'static [(Self, &'static str)] =
        &[(OddOp::Add, "add"), (OddOp::Sub, "sub"), (OddOp::Mul, "mul"), (OddOp::Fma, "fma")];
}

impl Spelled for SubgroupOp {
    const TABLE: &'static [(Self, &'static str)] = &[
        (SubgroupOp::Shuffle, "shuffle"),
        (SubgroupOp::Ballot, "ballot"),
        (SubgroupOp::ShuffleNarrow, "shuffle_narrow"),
    ];
}

impl Spelled for SpecialReg {
    const TABLE: &'static [(Self, &'static str)] = &[
        (SpecialReg::Tid(Dim::X), "tid.x"),
        (SpecialReg::Tid(Dim::Y), "tid.y"),
        (SpecialReg::Tid(Dim::Z), "tid.z"),
        (SpecialReg::Ntid(Dim::X), "ntid.x"),
        (SpecialReg::Ntid(Dim::Y), "ntid.y"),
        (SpecialReg::Ntid(Dim::Z), "ntid.z"),
        (SpecialReg::Ctaid(Dim::X), "ctaid.x"),
        (SpecialReg::Ctaid(Dim::Y), "ctaid.y"),
        (SpecialReg::Ctaid(Dim::Z), "ctaid.z"),
        (SpecialReg::Nctaid(Dim::X), "nctaid.x"),
        (SpecialReg::Nctaid(Dim::Y), "nctaid.y"),
        (SpecialReg::Nctaid(Dim::Z), "nctaid.z"),
        (SpecialReg::ModuleData, "module_data"),
        (SpecialReg::ParamBlock, "param_block"),
        (SpecialReg::WindowBase, "window_base"),
        (SpecialReg::DynamicSharedBytes, "dynamic_shared_bytes"),
        (SpecialReg::TotalSharedBytes, "total_shared_bytes"),
        (SpecialReg::DynamicSharedBase, "dynamic_shared_base"),
        (SpecialReg::DeviceClock, "device_clock"),
        (SpecialReg::SharedWindowAddress, "shared_window_address"),
        (SpecialReg::ConfinedOutside, "confined_outside"),
        (SpecialReg::Warp(WarpReg::LaneId), "laneid"),
        (SpecialReg::Warp(WarpReg::WarpId), "warpid"),
        (SpecialReg::Warp(WarpReg::Nwarpid), "nwarpid"),
        (SpecialReg::Warp(WarpReg::LanemaskEq), "lanemask_eq"),
        (SpecialReg::Warp(WarpReg::LanemaskLt), "lanemask_lt"),
        (SpecialReg::Warp(WarpReg::LanemaskLe), "lanemask_le"),
        (SpecialReg::Warp(WarpReg::LanemaskGt), "lanemask_gt"),
        (SpecialReg::Warp(WarpReg::LanemaskGe), "lanemask_ge"),
        (SpecialReg::Ptx(PtxReg::ClockLow), "clock_lo"),
        (SpecialReg::Ptx(PtxReg::ClockHigh), "clock_hi"),
        (SpecialReg::Ptx(PtxReg::EnvReg { high: true }), "envreg1"),
        (SpecialReg::Ptx(PtxReg::EnvReg { high: false }), "envreg2"),
        (SpecialReg::Ptx(PtxReg::IsExplicitCluster), "is_explicit_cluster"),
        (SpecialReg::Ptx(PtxReg::ClusterCtaid(Dim::X)), "cluster_ctaid.x"),
        (SpecialReg::Ptx(PtxReg::ClusterCtaid(Dim::Y)), "cluster_ctaid.y"),
        (SpecialReg::Ptx(PtxReg::ClusterCtaid(Dim::Z)), "cluster_ctaid.z"),
        (SpecialReg::Ptx(PtxReg::ClusterNctaid(Dim::X)), "cluster_nctaid.x"),
        (SpecialReg::Ptx(PtxReg::ClusterNctaid(Dim::Y)), "cluster_nctaid.y"),
        (SpecialReg::Ptx(PtxReg::ClusterNctaid(Dim::Z)), "cluster_nctaid.z"),
        (SpecialReg::Ptx(PtxReg::ClusterCtarank), "cluster_ctarank"),
        (SpecialReg::Ptx(PtxReg::ClusterNctarank), "cluster_nctarank"),
    ];
}

/// The spelling of a `mad` part (`BinaryOp::Mul` is `lo`).
fn mad_part(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Mul => "lo",
        BinaryOp::MulHi => "hi",
        BinaryOp::MulWide => "wide",
        other => other.spelling(),
    }
}

fn parse_mad_part(s: &str) -> Option<BinaryOp> {
    match s {
        "lo" => Some(BinaryOp::Mul),
        "hi" => Some(BinaryOp::MulHi),
        "wide" => Some(BinaryOp::MulWide),
        other => BinaryOp::from_spelling(other),
    }
}

pub(super) fn op_ty(t: OpTy) -> String {
    match t {
        OpTy::Pred => "pred".into(),
        OpTy::U(b) => format!("u{b}"),
        OpTy::S(b) => format!("s{b}"),
        OpTy::F(b) => format!("f{b}"),
    }
}

pub(super) fn parse_op_ty(s: &str) -> Option<OpTy> {
    if s == "pred" {
        return Some(OpTy::Pred);
    }
    let bits = |n: &str| n.parse::<u8>().ok().filter(|b| matches!(b, 8 | 16 | 32 | 64));
    let (kind, n) = s.split_at(s.find(|c: char| c.is_ascii_digit())?);
    match kind {
        "u" | "b" => bits(n).map(OpTy::U),
        "s" => bits(n).map(OpTy::S),
        "f" => bits(n).filter(|b| *b >= 16).map(OpTy::F),
        _ => None,
    }
}

fn reg_ty(t: RegTy) -> String {
    match t {
        RegTy::Pred => "pred".into(),
        RegTy::Int(b) => format!("i{b}"),
        RegTy::Float(b) => format!("f{b}"),
    }
}

fn parse_reg_ty(s: &str) -> Option<RegTy> {
    match parse_op_ty(s.strip_prefix('i').map(|n| format!("u{n}")).as_deref().unwrap_or(s))? {
        OpTy::Pred => Some(RegTy::Pred),
        OpTy::U(b) if s.starts_with('i') => Some(RegTy::Int(b)),
        OpTy::F(b) => Some(RegTy::Float(b)),
        _ => None,
    }
}

/// Float-mode modifiers: `.ftz`, `.sat`, the rounding when it is not to nearest and
/// the path when it is not the default (`.soft`, `.fused`, `.native`), and `.visible`
/// (`prefix` distinguishes `cvt`'s mode rounding from its conversion rounding).
fn float_mode(m: FloatMode, prefix: &str) -> String {
    let mut s = String::new();
    if m.ftz {
        s.push_str(".ftz");
    }
    if m.sat {
        s.push_str(".sat");
    }
    if m.rounding != Rounding::Nearest {
        let _ = write!(s, ".{prefix}{}", m.rounding.spelling());
    }
    match m.path {
        FloatPath::F64 => {}
        FloatPath::Integer => s.push_str(".soft"),
        FloatPath::Fused { soft: false } => s.push_str(".fused"),
        FloatPath::Fused { soft: true } => s.push_str(".fused.soft"),
        FloatPath::Native => s.push_str(".native"),
    }
    if m.visible {
        s.push_str(".visible");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
kernel sample {
    params size 16 align 8
    param out .u64 x1 @0 size 8 align 8
    param n .u32 x1 @8 size 4 align 4
    shared 64 align 16
    shared_var tile @0 64
    local 0
    warp_scratch 64
    entry bb0
    reg i64 %rd1
    reg i32 %r1 %r2
    reg pred %p1
    reg f32 %f1
bb0:
    %rd1 = load.param.u64 [0]
    %r1 = special.tid.x
    %p1, _ = setp.ge.u32 %r1, 100
    branch %p1, bb2, bb1
bb1 ($L__BB0_1):
    %r2 = mad.lo.s32 %r1, 4, 0xfffffff0
    %f1 = cvt.rn.f32.s32 %r2
    %f1 = fma.ftz.f32 %f1, %f1, 0x3f800000
    store.global.f32 [%rd1+8], %f1
    atom.add.shared.cta.relaxed.u32 [%r1-4], 1, 0
    warp_barrier %r1
    switch %r2 [0: bb2, 3: bb2], bb2
bb2:
    return
}
";

    #[test]
    fn sample_round_trips() {
        let kernels = parse(SAMPLE).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(kernels.len(), 1);
        assert_eq!(print(&kernels[0]), SAMPLE);
        let k = &kernels[0];
        assert_eq!(k.blocks.len(), 3);
        assert_eq!(k.shared.dynamic_align, Some(16));
        assert!(matches!(
            k.blocks[1].insts[4].kind,
            InstKind::Atomic { dst: None, addr: Address { offset: -4, .. }, .. }
        ));
    }

    /// `.visible` prints after the path and parses back onto the operation it marks.
    #[test]
    fn visible_float_modes_round_trip() {
        let text = SAMPLE.replace(
            "    store.global.f32 [%rd1+8], %f1\n",
            "    %f1 = mul.visible.f32 %f1, %f1\n    %f1 = div.native.visible.f32 %f1, %f1\n    \
             %f1 = sqrt.rz.f32 %f1\n    store.global.f32 [%rd1+8], %f1\n",
        );
        let kernels = parse(&text).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(print(&kernels[0]), text);
        let modes: Vec<(bool, FloatPath)> = kernels[0].blocks[1].insts[3..6]
            .iter()
            .map(|i| match i.kind {
                InstKind::Binary { mode, .. } | InstKind::Unary { mode, .. } => {
                    (mode.visible, mode.path)
                }
                ref other => panic!("{other:?}"),
            })
            .collect();
        let want = [(true, FloatPath::F64), (true, FloatPath::Native), (false, FloatPath::F64)];
        assert_eq!(modes, want);
        crate::verify::run(&kernels[0]).unwrap_or_else(|d| panic!("{d:?}"));
    }

    const WITH_FUNCTIONS: &str = "\
kernel caller {
    params size 0 align 1
    shared 0
    local 8
    entry bb0
    reg i32 %r1 %r2
    reg pred %p1
bb0:
    %r1 = special.tid.x
    %r2, %p1 = call.fn0 %r1, 3
    call.fn1
    return
function fn0 twice {
    entry bb0
    reg i32 %x %n
    reg pred %odd
    param u32 %x
    param u32 %n
    return u32 %x
    return pred %odd
bb0:
    %x = mul.u32 %x, %n
    %odd, _ = setp.ne.u32 %x, 0
    return
}
function fn1 nothing {
    entry bb0
bb0:
    return
}
}
";

    #[test]
    fn functions_round_trip_and_calls_name_them() {
        let kernels = parse(WITH_FUNCTIONS).unwrap_or_else(|d| panic!("{d:?}"));
        let k = &kernels[0];
        assert_eq!(print(k), WITH_FUNCTIONS);
        assert_eq!(k.functions.len(), 2);
        assert_eq!(k.functions[0].params.len(), 2);
        assert_eq!(k.functions[0].returns[1].1, OpTy::Pred);
        crate::verify::run(k).unwrap_or_else(|d| panic!("{d:?}"));
        let bad = WITH_FUNCTIONS.replace("call.fn1", "call.fn2");
        let d = parse(&bad).expect_err("no fn2");
        assert!(d.message.contains("no function fn2"), "{}", d.message);
        let wrong = WITH_FUNCTIONS.replace("%r2, %p1 = call.fn0 %r1, 3", "%r2 = call.fn0 %r1, 3");
        let k = parse(&wrong).unwrap_or_else(|d| panic!("{d:?}")).remove(0);
        let errors = crate::verify::run(&k).expect_err("one result short");
        assert!(errors[0].message.contains("1 result(s)"), "{}", errors[0].message);
    }

    #[test]
    fn errors_point_at_the_line() {
        let text = SAMPLE.replace("%r1 = special.tid.x", "%r1 = special.tid.w");
        let d = parse(&text).expect_err("rejected");
        let at = text.find("%r1 = special.tid.w").unwrap() as u32;
        assert_eq!(d.span.start, at);
        assert!(d.message.contains("tid.w"), "{}", d.message);
        for (from, to, says) in [
            ("store.global.f32", "store.global.x32", "operation type"),
            ("jump", "jump", ""),
            ("return\n}", "}", "no terminator"),
            ("reg i64 %rd1", "reg q64 %rd1", "header line"),
            ("bb2:\n", "bb7:\n", "numbered in order"),
            ("fma.ftz.f32", "fma.ftz.wat.f32", ".wat"),
            ("%p1, bb2", "%p9, bb2", "undeclared register `%p9`"),
        ] {
            let text = SAMPLE.replacen(from, to, 1);
            if text == SAMPLE {
                continue;
            }
            let d = parse(&text).err().unwrap_or_else(|| panic!("accepted {to}"));
            assert!(d.message.contains(says), "{to}: {}", d.message);
        }
    }
}
