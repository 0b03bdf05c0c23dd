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
//!     reqntid 32 1 1 | maxntid 256 1 1 | maxnreg 64
//!     grid_sync | system | heap                  ; flags, when set
//!     device_launches child parent               ; kernels it may launch (device_launch)
//!     address_size 32                            ; when not 64
//!     warp_scratch 512 | block_vote 1536         ; reserved shared words
//!     entry bb0
//!     reg i32 %r1 %r2                            ; registers, in id order
//! bb0 ($L__BB0_1):                               ; blocks, in id order; label optional
//!     %r2 = add.u32 %r1, 4
//!     branch !%p1, bb1, bb2                      ; the terminator ends the block
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
//! `block` with its instructions; it is output only.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ptxvk_frontend::ast::ScalarType;
use ptxvk_frontend::{Diagnostic, Span};

use crate::abi::{KernelAbi, ParamSlot};
use crate::ir::Node;
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
    ];
}

impl Spelled for OddOp {
    const TABLE: &'static [(Self, &'static str)] =
        &[(OddOp::Add, "add"), (OddOp::Sub, "sub"), (OddOp::Mul, "mul"), (OddOp::Fma, "fma")];
}

impl Spelled for SubgroupOp {
    const TABLE: &'static [(Self, &'static str)] =
        &[(SubgroupOp::Shuffle, "shuffle"), (SubgroupOp::Ballot, "ballot")];
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

fn op_ty(t: OpTy) -> String {
    match t {
        OpTy::Pred => "pred".into(),
        OpTy::U(b) => format!("u{b}"),
        OpTy::S(b) => format!("s{b}"),
        OpTy::F(b) => format!("f{b}"),
    }
}

fn parse_op_ty(s: &str) -> Option<OpTy> {
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
/// the path when it is not the default (`.soft`, `.fused`)
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
    s
}

// ---------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------

/// Writes a kernel's CFG IR in the text format.
pub fn print(k: &Kernel) -> String {
    let p = Printer::new(k);
    let mut s = p.header();
    for (i, b) in k.blocks.iter().enumerate() {
        let label = b.label.as_ref().map(|l| format!(" ({l})")).unwrap_or_default();
        let _ = writeln!(s, "bb{i}{label}:");
        for inst in &b.insts {
            let _ = writeln!(s, "    {}", p.line(inst));
        }
        let _ = writeln!(s, "    {}", p.term(&b.term));
    }
    s.push_str("}\n");
    s
}

/// Writes a kernel's header and its structured tree, each block with its instructions.
pub fn print_structured(k: &Kernel, nodes: &[Node]) -> String {
    let p = Printer::new(k);
    let mut s = p.header();
    s.push_str("body {\n");
    p.nodes(nodes, 1, &mut s);
    s.push_str("}\n}\n");
    s
}

struct Printer<'a> {
    k: &'a Kernel,
    names: Vec<String>,
}

impl<'a> Printer<'a> {
    fn new(k: &'a Kernel) -> Self {
        let token = |name: &str| {
            if name.starts_with('%') || name.starts_with('$') {
                name.to_string()
            } else {
                format!("%{name}")
            }
        };
        let mut count: BTreeMap<String, u32> = BTreeMap::new();
        for r in &k.regs {
            *count.entry(token(&r.name)).or_default() += 1;
        }
        let names = k
            .regs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let t = token(&r.name);
                if count.get(&t).copied().unwrap_or(0) > 1 || t.len() == 1 {
                    format!("{t}#{i}")
                } else {
                    t
                }
            })
            .collect();
        Printer { k, names }
    }

    fn reg(&self, r: RegId) -> &str {
        self.names.get(r.index()).map_or("<bad register>", String::as_str)
    }

    fn value(&self, v: Value) -> String {
        match v {
            Value::Reg(r) => self.reg(r).to_string(),
            Value::Imm(x) if x < 65536 => x.to_string(),
            Value::Imm(x) => format!("{x:#x}"),
        }
    }

    fn pred(&self, r: RegId, negate: bool) -> String {
        format!("{}{}", if negate { "!" } else { "" }, self.reg(r))
    }

    fn addr(&self, a: Address) -> String {
        match a.base {
            Some(b) if a.offset > 0 => format!("[{}+{}]", self.reg(b), a.offset),
            Some(b) if a.offset < 0 => format!("[{}{}]", self.reg(b), a.offset),
            Some(b) => format!("[{}]", self.reg(b)),
            None => format!("[{}]", a.offset),
        }
    }

    fn dst(&self, d: Option<RegId>) -> String {
        d.map_or("_".to_string(), |r| self.reg(r).to_string())
    }

    fn header(&self) -> String {
        let k = self.k;
        let mut s = String::new();
        let _ = writeln!(s, "kernel {} {{", k.name);
        let _ = writeln!(s, "    params size {} align {}", k.abi.size, k.abi.align);
        for p in &k.abi.params {
            let _ = writeln!(
                s,
                "    param {} {} x{} @{} size {} align {}",
                p.name,
                p.elem.directive(),
                p.count,
                p.offset,
                p.size,
                p.align
            );
        }
        let mut shared = format!("    shared {}", k.shared.static_bytes);
        if let Some(a) = k.shared.dynamic_align {
            let _ = write!(shared, " align {a}");
        }
        if k.shared.word != SharedWord::default() {
            let _ = write!(shared, " word {}", k.shared.word.bits());
        }
        if k.shared.in_device_memory {
            shared.push_str(" in_device_memory");
        }
        let _ = writeln!(s, "{shared}");
        for (name, offset, size) in &k.shared.variables {
            let _ = writeln!(s, "    shared_var {name} @{offset} {size}");
        }
        let _ = writeln!(s, "    local {}", k.local_bytes);
        for (key, dims) in [("reqntid", k.reqntid), ("maxntid", k.maxntid)] {
            if let Some([x, y, z]) = dims {
                let _ = writeln!(s, "    {key} {x} {y} {z}");
            }
        }
        if let Some(n) = k.maxnreg {
            let _ = writeln!(s, "    maxnreg {n}");
        }
        if k.address_size != 64 {
            let _ = writeln!(s, "    address_size {}", k.address_size);
        }
        for (flag, set) in [("grid_sync", k.grid_sync), ("system", k.system), ("heap", k.heap)] {
            if set {
                let _ = writeln!(s, "    {flag}");
            }
        }
        if !k.device_launches.is_empty() {
            let _ = writeln!(s, "    device_launches {}", k.device_launches.join(" "));
        }
        for (key, at) in [("warp_scratch", k.warp_scratch), ("block_vote", k.block_vote)] {
            if let Some(at) = at {
                let _ = writeln!(s, "    {key} {at}");
            }
        }
        let _ = writeln!(s, "    entry bb{}", k.entry.0);
        // Registers in id order, runs of one type sharing lines.
        let mut line = String::new();
        let mut line_ty = None;
        for (i, r) in k.regs.iter().enumerate() {
            if line_ty != Some(r.ty) || line.len() + self.names[i].len() > 88 {
                if !line.is_empty() {
                    let _ = writeln!(s, "{line}");
                }
                line = format!("    reg {}", reg_ty(r.ty));
                line_ty = Some(r.ty);
            }
            let _ = write!(line, " {}", self.names[i]);
        }
        if !line.is_empty() {
            let _ = writeln!(s, "{line}");
        }
        s
    }

    fn list(&self, vals: &[Value]) -> String {
        vals.iter().map(|v| self.value(*v)).collect::<Vec<_>>().join(", ")
    }

    fn dsts(&self, dsts: &[Option<RegId>]) -> String {
        dsts.iter().map(|d| self.dst(*d)).collect::<Vec<_>>().join(", ")
    }

    /// An instruction's line: a read that a loop can poll (`Kernel::polling_reads`)
    /// is marked `polls`.
    fn line(&self, inst: &Inst) -> String {
        let read = matches!(
            inst.kind,
            InstKind::Load { .. } | InstKind::Atomic { op: AtomicOp::Load, .. }
        );
        if read && self.k.polling_reads.contains(&inst.span) {
            format!("polls {}", self.inst(&inst.kind))
        } else {
            self.inst(&inst.kind)
        }
    }

    fn inst(&self, kind: &InstKind) -> String {
        let r = |x: RegId| self.reg(x).to_string();
        let v = |x: Value| self.value(x);
        match kind {
            InstKind::Mov { ty, dst, src } => {
                format!("{} = mov.{} {}", r(*dst), op_ty(*ty), v(*src))
            }
            InstKind::Pack { elem, dst, srcs } => {
                format!("{} = pack.{} {}", r(*dst), op_ty(*elem), self.list(srcs))
            }
            InstKind::Unpack { elem, dsts, src } => {
                format!("{} = unpack.{} {}", self.dsts(dsts), op_ty(*elem), v(*src))
            }
            InstKind::Special { dst, reg } => format!("{} = special.{}", r(*dst), reg.spelling()),
            InstKind::Unary { op, ty, mode, dst, src } => format!(
                "{} = {}{}.{} {}",
                r(*dst),
                op.spelling(),
                float_mode(*mode, ""),
                op_ty(*ty),
                v(*src)
            ),
            InstKind::Binary { op, ty, mode, dst, lhs, rhs } => format!(
                "{} = {}{}.{} {}, {}",
                r(*dst),
                op.spelling(),
                float_mode(*mode, ""),
                op_ty(*ty),
                v(*lhs),
                v(*rhs)
            ),
            InstKind::Mad { part, ty, dst, a, b, c } => format!(
                "{} = mad.{}.{} {}",
                r(*dst),
                mad_part(*part),
                op_ty(*ty),
                self.list(&[*a, *b, *c])
            ),
            InstKind::Bfe { ty, dst, a, pos, len } => {
                format!("{} = bfe.{} {}", r(*dst), op_ty(*ty), self.list(&[*a, *pos, *len]))
            }
            InstKind::Bfi { ty, dst, a, b, pos, len } => {
                format!("{} = bfi.{} {}", r(*dst), op_ty(*ty), self.list(&[*a, *b, *pos, *len]))
            }
            InstKind::Fma { ty, mode, dst, a, b, c } => format!(
                "{} = fma{}.{} {}",
                r(*dst),
                float_mode(*mode, ""),
                op_ty(*ty),
                self.list(&[*a, *b, *c])
            ),
            InstKind::Setp { cmp, ty, ftz, dst, dst_not, lhs, rhs, combine } => {
                let mut s = format!(
                    "{}, {} = setp.{}{}",
                    self.dst(*dst),
                    self.dst(*dst_not),
                    cmp.spelling(),
                    if *ftz { ".ftz" } else { "" }
                );
                if let Some((op, _, _)) = combine {
                    let _ = write!(s, ".{}", op.spelling());
                }
                let _ = write!(s, ".{} {}, {}", op_ty(*ty), v(*lhs), v(*rhs));
                if let Some((_, p, negate)) = combine {
                    let _ = write!(s, ", {}", self.pred(*p, *negate));
                }
                s
            }
            InstKind::Select { ty, dst, a, b, cond, negate } => format!(
                "{} = selp.{} {}, {}, {}",
                r(*dst),
                op_ty(*ty),
                v(*a),
                v(*b),
                self.pred(*cond, *negate)
            ),
            InstKind::PredLogic { op, dst, lhs, rhs } => {
                format!("{} = p{} {}, {}", r(*dst), op.spelling(), r(*lhs), r(*rhs))
            }
            InstKind::PredNot { dst, src } => format!("{} = pnot {}", r(*dst), r(*src)),
            InstKind::Convert { to, from, rounding, mode, dst, src } => format!(
                "{} = cvt{}{}.{}.{} {}",
                r(*dst),
                rounding.map(|x| format!(".{}", x.spelling())).unwrap_or_default(),
                float_mode(*mode, "mode_"),
                op_ty(*to),
                op_ty(*from),
                v(*src)
            ),
            InstKind::Load { space, ty, dsts, addr } => format!(
                "{} = load.{}.{} {}",
                self.dsts(dsts),
                space.spelling(),
                op_ty(*ty),
                self.addr(*addr)
            ),
            InstKind::Store { space, ty, srcs, addr } => format!(
                "store.{}.{} {}, {}",
                space.spelling(),
                op_ty(*ty),
                self.addr(*addr),
                self.list(srcs)
            ),
            InstKind::Narrow { to, from, rounding, satfinite, relu, dst, src } => format!(
                "{} = narrow.{}.{}{}{}.{} {}",
                r(*dst),
                to.spelling(),
                rounding.spelling(),
                if *satfinite { ".satfinite" } else { "" },
                if *relu { ".relu" } else { "" },
                op_ty(*from),
                v(*src)
            ),
            InstKind::IntToFloat { to, from, rounding, dst, src } => format!(
                "{} = itof.{}.{}.{} {}",
                r(*dst),
                to.spelling(),
                rounding.spelling(),
                op_ty(*from),
                v(*src)
            ),
            InstKind::Widen { from, dst, src } => {
                format!("{} = widen.{} {}", r(*dst), from.spelling(), v(*src))
            }
            InstKind::RoundToOdd { op, soft, dst, a, b, c } => format!(
                "{} = round_odd.{}{} {}",
                r(*dst),
                op.spelling(),
                if *soft { ".soft" } else { "" },
                self.list(&[*a, *b, *c])
            ),
            InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp } => {
                let lhs = dst.map(|d| format!("{} = ", r(d))).unwrap_or_default();
                format!(
                    "{lhs}atom.{}.{}.{}.{}.{} {}, {}, {}",
                    op.spelling(),
                    space.spelling(),
                    scope.spelling(),
                    order.spelling(),
                    op_ty(*ty),
                    self.addr(*addr),
                    v(*src),
                    v(*cmp)
                )
            }
            InstKind::Barrier => "barrier".into(),
            InstKind::Subgroup { op, split, dst, value, lane } => format!(
                "{} = subgroup.{}{} {}, {}",
                r(*dst),
                op.spelling(),
                if *split { ".split" } else { "" },
                v(*value),
                v(*lane)
            ),
            InstKind::WarpBarrier { publish } => match publish {
                Some(p) => format!("warp_barrier {}", v(*p)),
                None => "warp_barrier".into(),
            },
            InstKind::Fence { device_scope } => {
                format!("fence.{}", if *device_scope { "gpu" } else { "cta" })
            }
            InstKind::WarpPublish { value } => format!("warp_publish {}", v(*value)),
            InstKind::WarpRead { dst, value, lane, warp_base } => {
                format!("{} = warp_read {}", r(*dst), self.list(&[*value, *lane, *warp_base]))
            }
            InstKind::WarpBallot { dst, value, lanes, warp_base } => {
                format!("{} = warp_ballot {}", r(*dst), self.list(&[*value, *lanes, *warp_base]))
            }
            InstKind::WarpSync => "warp_sync".into(),
            InstKind::SyncPoint { point: SyncPoint::Warp { members, kind } } => {
                format!("sync_point.warp {}, {kind}", v(*members))
            }
            InstKind::SyncPoint { point: SyncPoint::Sleep } => "sync_point.sleep".into(),
            InstKind::SyncPoint { point: SyncPoint::Acquire } => "sync_point.acquire".into(),
            InstKind::LoopCount { dst, add } => format!("{} = loop_count {add}", r(*dst)),
            InstKind::InAllocation { dst, table, addr, size, write } => format!(
                "{} = in_allocation{} {}",
                r(*dst),
                if *write { ".write" } else { "" },
                self.list(&[*table, *addr, Value::Imm(u64::from(*size))])
            ),
            InstKind::ShadowWord { dst, table, addr } => {
                format!("{} = shadow_word {}", r(*dst), self.list(&[*table, *addr]))
            }
            InstKind::RaceShadow { dst, word, swap: None } => {
                format!("{} = race_shadow {}", r(*dst), self.list(&[*word]))
            }
            InstKind::RaceShadow { dst, word, swap: Some(swap) } => {
                format!("{} = race_shadow.swap {}", r(*dst), self.list(&[*word, *swap]))
            }
        }
    }

    fn term(&self, t: &Terminator) -> String {
        match t {
            Terminator::Jump(b) => format!("jump bb{}", b.0),
            Terminator::Branch { cond, negate, if_true, if_false } => {
                format!("branch {}, bb{}, bb{}", self.pred(*cond, *negate), if_true.0, if_false.0)
            }
            Terminator::Switch { selector, cases, default } => {
                let cases: Vec<String> =
                    cases.iter().map(|(v, b)| format!("{v}: bb{}", b.0)).collect();
                format!("switch {} [{}], bb{}", self.reg(*selector), cases.join(", "), default.0)
            }
            Terminator::Return => "return".into(),
        }
    }

    fn nodes(&self, nodes: &[Node], depth: usize, s: &mut String) {
        let pad = "    ".repeat(depth);
        for n in nodes {
            match n {
                Node::Code(b) => {
                    let blk = &self.k.blocks[b.index()];
                    let label = blk.label.as_ref().map(|l| format!(" ({l})")).unwrap_or_default();
                    let _ = writeln!(s, "{pad}block bb{}{label}:", b.0);
                    for inst in &blk.insts {
                        let _ = writeln!(s, "{pad}    {}", self.line(inst));
                    }
                }
                Node::If { cond, negate, then, otherwise, .. } => {
                    let _ = writeln!(s, "{pad}if {} {{", self.pred(*cond, *negate));
                    self.nodes(then, depth + 1, s);
                    if !otherwise.is_empty() {
                        let _ = writeln!(s, "{pad}}} else {{");
                        self.nodes(otherwise, depth + 1, s);
                    }
                    let _ = writeln!(s, "{pad}}}");
                }
                Node::Switch { selector, cases, .. } => {
                    let _ = writeln!(s, "{pad}switch {} {{", self.reg(*selector));
                    for c in cases {
                        let mut labels: Vec<String> =
                            c.values.iter().map(|v| format!("case {v}")).collect();
                        if c.is_default {
                            labels.push("default".into());
                        }
                        let _ = writeln!(s, "{pad}{}:", labels.join(", "));
                        self.nodes(&c.body, depth + 1, s);
                    }
                    let _ = writeln!(s, "{pad}}}");
                }
                Node::Loop { body, .. } => {
                    let _ = writeln!(s, "{pad}loop {{");
                    self.nodes(body, depth + 1, s);
                    let _ = writeln!(s, "{pad}}}");
                }
                Node::Break => {
                    let _ = writeln!(s, "{pad}break");
                }
                Node::Continue => {
                    let _ = writeln!(s, "{pad}continue");
                }
                Node::Return => {
                    let _ = writeln!(s, "{pad}return");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------

/// Parses every kernel of an IR text. Errors are spans into `text`.
pub fn parse(text: &str) -> Result<Vec<Kernel>, Diagnostic> {
    let mut lines = Lines::new(text);
    let mut kernels = Vec::new();
    while let Some(line) = lines.next() {
        let name = line
            .text
            .strip_prefix("kernel ")
            .and_then(|rest| rest.strip_suffix('{'))
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| line.error("expected `kernel NAME {`"))?;
        kernels.push(KernelParser::new(name, line.span).parse(&mut lines)?);
    }
    Ok(kernels)
}

/// One significant line: comments and surrounding blanks removed.
#[derive(Clone, Copy)]
struct Line<'a> {
    text: &'a str,
    span: Span,
}

impl Line<'_> {
    fn error(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.span, message)
    }
}

struct Lines<'a> {
    rest: std::str::SplitInclusive<'a, char>,
    offset: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Lines { rest: text.split_inclusive('\n'), offset: 0 }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        for raw in self.rest.by_ref() {
            let line_start = self.offset;
            self.offset += raw.len();
            let code = raw.split(';').next().unwrap_or("");
            let text = code.trim();
            if text.is_empty() {
                continue;
            }
            let start = line_start + (code.len() - code.trim_start().len());
            let span = Span::new(start as u32, (start + text.len()) as u32);
            return Some(Line { text, span });
        }
        None
    }
}

struct KernelParser {
    k: Kernel,
    names: BTreeMap<String, RegId>,
    /// Every block reference with its line, checked once all blocks are known.
    block_refs: Vec<(BlockId, Span)>,
}

/// Splits `s` at top-level commas (not inside `[...]`).
fn split_operands(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

fn number<T: TryFrom<u64>>(s: &str) -> Option<T> {
    let v = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => s.parse::<u64>().ok()?,
    };
    T::try_from(v).ok()
}

/// The modifiers of an opcode, consumed one by one; what remains is an error.
struct Modifiers<'a> {
    words: Vec<&'a str>,
}

impl<'a> Modifiers<'a> {
    fn flag(&mut self, word: &str) -> bool {
        match self.words.iter().position(|w| *w == word) {
            Some(i) => {
                self.words.remove(i);
                true
            }
            None => false,
        }
    }

    /// The first modifier `f` accepts, removed.
    fn take<T>(&mut self, f: impl Fn(&str) -> Option<T>) -> Option<T> {
        let i = self.words.iter().position(|w| f(w).is_some())?;
        f(self.words.remove(i))
    }

    /// The first modifier, which must be one `f` accepts.
    fn first<T>(&mut self, f: impl Fn(&str) -> Option<T>) -> Option<T> {
        let v = f(self.words.first()?)?;
        self.words.remove(0);
        Some(v)
    }

    fn ty(&mut self) -> Option<OpTy> {
        self.take(parse_op_ty)
    }

    fn mode(&mut self, prefix: &str) -> FloatMode {
        let ftz = self.flag("ftz");
        let sat = self.flag("sat");
        let rounding = self
            .take(|w| w.strip_prefix(prefix).and_then(Rounding::from_spelling))
            .unwrap_or_default();
        let path = if self.flag("fused") {
            FloatPath::Fused { soft: self.flag("soft") }
        } else if self.flag("soft") {
            FloatPath::Integer
        } else if self.flag("native") {
            FloatPath::Native
        } else {
            FloatPath::F64
        };
        FloatMode { ftz, sat, rounding, path }
    }
}

impl KernelParser {
    fn new(name: &str, span: Span) -> Self {
        KernelParser {
            k: Kernel::new(
                name.to_string(),
                span,
                KernelAbi { params: Vec::new(), size: 0, align: 1 },
            ),
            names: BTreeMap::new(),
            block_refs: Vec::new(),
        }
    }

    fn parse(mut self, lines: &mut Lines<'_>) -> Result<Kernel, Diagnostic> {
        let mut entry_span = None;
        // Header lines until the first block.
        let mut pending = None;
        for line in lines.by_ref() {
            if line.text == "}" || Self::block_header(line.text).is_some() {
                pending = Some(line);
                break;
            }
            if line.text.starts_with("entry ") {
                entry_span = Some(line.span);
            }
            self.header_line(line)?;
        }
        // Blocks until the closing brace.
        let mut open: Option<Block> = None;
        let mut line = pending.ok_or_else(|| {
            Diagnostic::error(self.k.span, format!("kernel {} has no closing `}}`", self.k.name))
        })?;
        loop {
            if line.text == "}" {
                if let Some(b) = open.take() {
                    return Err(Diagnostic::error(b.span, "block has no terminator"));
                }
                break;
            }
            if let Some((index, label)) = Self::block_header(line.text) {
                if let Some(b) = open.take() {
                    return Err(Diagnostic::error(b.span, "block has no terminator"));
                }
                if index != self.k.blocks.len() {
                    return Err(line.error(format!(
                        "blocks must be numbered in order: expected bb{}",
                        self.k.blocks.len()
                    )));
                }
                open = Some(Block {
                    label: label.map(str::to_string),
                    span: line.span,
                    insts: Vec::new(),
                    term: Terminator::Return,
                    term_span: line.span,
                });
            } else {
                let Some(block) = open.as_mut() else {
                    return Err(line.error("instruction outside a block"));
                };
                match self.terminator(line)? {
                    Some(term) => {
                        block.term = term;
                        block.term_span = line.span;
                        let done = open.take();
                        self.k.blocks.extend(done);
                    }
                    None => {
                        let (polls, line) = match line.text.strip_prefix("polls ") {
                            Some(rest) => (true, Line { text: rest, ..line }),
                            None => (false, line),
                        };
                        let kind = self.inst(line)?;
                        if polls {
                            self.k.polling_reads.push(line.span);
                        }
                        block.insts.push(Inst { kind, span: line.span });
                    }
                }
            }
            line = lines.next().ok_or_else(|| {
                Diagnostic::error(
                    self.k.span,
                    format!("kernel {} has no closing `}}`", self.k.name),
                )
            })?;
        }
        let blocks = self.k.blocks.len();
        for (b, span) in self.block_refs.iter().chain(entry_span.map(|s| (self.k.entry, s)).iter())
        {
            if b.index() >= blocks {
                return Err(Diagnostic::error(*span, format!("no block bb{}", b.0)));
            }
        }
        if blocks == 0 {
            return Err(Diagnostic::error(self.k.span, "a kernel needs at least one block"));
        }
        Ok(self.k)
    }

    /// `bbN:` or `bbN (label):`.
    fn block_header(text: &str) -> Option<(usize, Option<&str>)> {
        let head = text.strip_suffix(':')?;
        let (id, label) = match head.split_once(' ') {
            Some((id, label)) => (id, Some(label.trim().strip_prefix('(')?.strip_suffix(')')?)),
            None => (head, None),
        };
        Some((id.strip_prefix("bb")?.parse().ok()?, label))
    }

    fn header_line(&mut self, line: Line<'_>) -> Result<(), Diagnostic> {
        let words: Vec<&str> = line.text.split_whitespace().collect();
        let bad = || line.error(format!("cannot read kernel header line `{}`", line.text));
        let num = |i: usize| words.get(i).and_then(|w| number::<u32>(w)).ok_or_else(bad);
        let at = |i: usize| {
            words.get(i).and_then(|w| w.strip_prefix('@')).and_then(number::<u32>).ok_or_else(bad)
        };
        let dims = || Ok::<_, Diagnostic>(Some([num(1)?, num(2)?, num(3)?]));
        match words[0] {
            "params" if words.get(1) == Some(&"size") && words.get(3) == Some(&"align") => {
                self.k.abi.size = num(2)?;
                self.k.abi.align = num(4)?;
            }
            "param" if words.len() == 9 => {
                let elem = ScalarType::from_directive(words[2]).ok_or_else(bad)?;
                let count = words[3].strip_prefix('x').and_then(number::<u32>).ok_or_else(bad)?;
                self.k.abi.params.push(ParamSlot {
                    name: words[1].to_string(),
                    elem,
                    count,
                    offset: at(4)?,
                    size: num(6)?,
                    align: num(8)?,
                });
            }
            "shared" => {
                self.k.shared.static_bytes = num(1)?;
                let mut i = 2;
                if words.get(i) == Some(&"align") {
                    self.k.shared.dynamic_align = Some(num(i + 1)?);
                    i += 2;
                }
                if words.get(i) == Some(&"word") {
                    self.k.shared.word = SharedWord::of_bits(num(i + 1)?).ok_or_else(bad)?;
                    i += 2;
                }
                if words.get(i) == Some(&"in_device_memory") {
                    self.k.shared.in_device_memory = true;
                    i += 1;
                }
                if i != words.len() {
                    return Err(bad());
                }
            }
            "shared_var" if words.len() == 4 => {
                self.k.shared.variables.push((words[1].to_string(), at(2)?, num(3)?));
            }
            "local" => self.k.local_bytes = num(1)?,
            "reqntid" => self.k.reqntid = dims()?,
            "maxntid" => self.k.maxntid = dims()?,
            "maxnreg" => self.k.maxnreg = Some(num(1)?),
            "grid_sync" => self.k.grid_sync = true,
            "address_size" => self.k.address_size = num(1)?,
            "system" => self.k.system = true,
            "heap" => self.k.heap = true,
            "device_launches" if words.len() >= 2 => {
                self.k.device_launches = words[1..].iter().map(|w| w.to_string()).collect();
            }
            "warp_scratch" => self.k.warp_scratch = Some(num(1)?),
            "block_vote" => self.k.block_vote = Some(num(1)?),
            "entry" => {
                let b = words.get(1).and_then(|w| w.strip_prefix("bb")).and_then(number::<u32>);
                self.k.entry = BlockId(b.ok_or_else(bad)?);
            }
            "reg" if words.len() >= 3 => {
                let ty = parse_reg_ty(words[1]).ok_or_else(bad)?;
                for name in &words[2..] {
                    if !(name.starts_with('%') || name.starts_with('$')) {
                        return Err(line.error(format!("register `{name}` must start with % or $")));
                    }
                    let id = RegId(self.k.regs.len() as u32);
                    if self.names.insert(name.to_string(), id).is_some() {
                        return Err(line.error(format!("register `{name}` is declared twice")));
                    }
                    // The `#id` suffix only tells equal names apart in the text.
                    let base = name.split_once('#').map_or(*name, |(n, _)| n);
                    self.k.regs.push(RegInfo { name: base.to_string(), ty, span: line.span });
                }
            }
            _ => return Err(bad()),
        }
        Ok(())
    }

    fn reg(&self, line: Line<'_>, s: &str) -> Result<RegId, Diagnostic> {
        self.names.get(s).copied().ok_or_else(|| line.error(format!("undeclared register `{s}`")))
    }

    fn value(&self, line: Line<'_>, s: &str) -> Result<Value, Diagnostic> {
        if s.starts_with('%') || s.starts_with('$') {
            return self.reg(line, s).map(Value::Reg);
        }
        number::<u64>(s).map(Value::Imm).ok_or_else(|| line.error(format!("bad operand `{s}`")))
    }

    fn pred(&self, line: Line<'_>, s: &str) -> Result<(RegId, bool), Diagnostic> {
        match s.strip_prefix('!') {
            Some(r) => Ok((self.reg(line, r)?, true)),
            None => Ok((self.reg(line, s)?, false)),
        }
    }

    fn dst(&self, line: Line<'_>, s: &str) -> Result<Option<RegId>, Diagnostic> {
        if s == "_" {
            Ok(None)
        } else {
            self.reg(line, s).map(Some)
        }
    }

    fn addr(&self, line: Line<'_>, s: &str) -> Result<Address, Diagnostic> {
        let inner = s
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .ok_or_else(|| line.error(format!("expected an address `[...]`, found `{s}`")))?;
        let bad = || line.error(format!("bad address `{s}`"));
        let offset = |t: &str, negative: bool| {
            let v: i64 = number::<u64>(t).and_then(|v| i64::try_from(v).ok()).ok_or_else(bad)?;
            Ok::<_, Diagnostic>(if negative { -v } else { v })
        };
        if inner.starts_with('%') || inner.starts_with('$') {
            let split = inner.find(['+', '-']);
            let (base, off) = match split {
                Some(i) => (&inner[..i], offset(&inner[i + 1..], &inner[i..=i] == "-")?),
                None => (inner, 0),
            };
            Ok(Address { base: Some(self.reg(line, base)?), offset: off })
        } else {
            match inner.strip_prefix('-') {
                Some(n) => Ok(Address { base: None, offset: offset(n, true)? }),
                None => Ok(Address { base: None, offset: offset(inner, false)? }),
            }
        }
    }

    fn block_ref(&mut self, line: Line<'_>, s: &str) -> Result<BlockId, Diagnostic> {
        let b = s
            .strip_prefix("bb")
            .and_then(number::<u32>)
            .map(BlockId)
            .ok_or_else(|| line.error(format!("expected a block `bbN`, found `{s}`")))?;
        self.block_refs.push((b, line.span));
        Ok(b)
    }

    fn terminator(&mut self, line: Line<'_>) -> Result<Option<Terminator>, Diagnostic> {
        let (word, rest) = line.text.split_once(' ').unwrap_or((line.text, ""));
        let ops = split_operands(rest);
        let arity = |n: usize| {
            if ops.len() == n {
                Ok(())
            } else {
                Err(line.error(format!("`{word}` takes {n} operand(s)")))
            }
        };
        Ok(Some(match word {
            "return" => {
                arity(0)?;
                Terminator::Return
            }
            "jump" => {
                arity(1)?;
                Terminator::Jump(self.block_ref(line, ops[0])?)
            }
            "branch" => {
                arity(3)?;
                let (cond, negate) = self.pred(line, ops[0])?;
                let if_true = self.block_ref(line, ops[1])?;
                let if_false = self.block_ref(line, ops[2])?;
                Terminator::Branch { cond, negate, if_true, if_false }
            }
            "switch" => {
                // `switch %s [v: bbN, ...], bbD`
                let bad = || line.error("expected `switch %sel [V: bbN, ...], bbD`");
                let (sel, rest) = rest.split_once(' ').ok_or_else(bad)?;
                let selector = self.reg(line, sel)?;
                let (list, default) = rest.rsplit_once("],").ok_or_else(bad)?;
                let list = list.trim().strip_prefix('[').ok_or_else(bad)?;
                let mut cases = Vec::new();
                for case in list.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                    let (v, b) = case.split_once(':').ok_or_else(bad)?;
                    let v = number::<u32>(v.trim()).ok_or_else(bad)?;
                    cases.push((v, self.block_ref(line, b.trim())?));
                }
                let default = self.block_ref(line, default.trim())?;
                Terminator::Switch { selector, cases, default }
            }
            _ => return Ok(None),
        }))
    }

    fn inst(&self, line: Line<'_>) -> Result<InstKind, Diagnostic> {
        let (lhs, rhs) = match line.text.split_once(" = ") {
            Some((l, r)) => (Some(l), r),
            None => (None, line.text),
        };
        let dsts: Vec<&str> =
            lhs.map(|l| l.split(',').map(str::trim).collect()).unwrap_or_default();
        let (mnemonic, rest) = rhs.split_once(' ').unwrap_or((rhs, ""));
        let ops = split_operands(rest);
        let mut words = mnemonic.split('.');
        let opcode = words.next().unwrap_or("");
        let mut m = Modifiers { words: words.collect() };
        let kind = self.inst_kind(line, opcode, &mut m, &dsts, &ops)?;
        if !m.words.is_empty() {
            return Err(line.error(format!(
                "`{opcode}` does not take the modifier(s) .{}",
                m.words.join(".")
            )));
        }
        Ok(kind)
    }

    fn inst_kind(
        &self,
        line: Line<'_>,
        opcode: &str,
        m: &mut Modifiers<'_>,
        dsts: &[&str],
        ops: &[&str],
    ) -> Result<InstKind, Diagnostic> {
        let shape = |nd: usize, no: usize| {
            if dsts.len() == nd && ops.len() == no {
                Ok(())
            } else {
                Err(line.error(format!(
                    "`{opcode}` takes {nd} destination(s) and {no} operand(s), found {} and {}",
                    dsts.len(),
                    ops.len()
                )))
            }
        };
        let ty = |m: &mut Modifiers<'_>| {
            m.ty().ok_or_else(|| line.error(format!("`{opcode}` needs an operation type")))
        };
        let missing = |what: &str| line.error(format!("`{opcode}` needs {what}"));
        let reg = |s: &str| self.reg(line, s);
        let val = |s: &str| self.value(line, s);
        let vals = |ss: &[&str]| ss.iter().map(|s| val(s)).collect::<Result<Vec<_>, _>>();
        let dst_list = || dsts.iter().map(|d| self.dst(line, d)).collect::<Result<Vec<_>, _>>();
        if let Some(op) = UnaryOp::from_spelling(opcode) {
            shape(1, 1)?;
            let mode = m.mode("");
            return Ok(InstKind::Unary {
                op,
                ty: ty(m)?,
                mode,
                dst: reg(dsts[0])?,
                src: val(ops[0])?,
            });
        }
        if let Some(op) = BinaryOp::from_spelling(opcode) {
            shape(1, 2)?;
            let mode = m.mode("");
            return Ok(InstKind::Binary {
                op,
                ty: ty(m)?,
                mode,
                dst: reg(dsts[0])?,
                lhs: val(ops[0])?,
                rhs: val(ops[1])?,
            });
        }
        Ok(match opcode {
            "mov" => {
                shape(1, 1)?;
                InstKind::Mov { ty: ty(m)?, dst: reg(dsts[0])?, src: val(ops[0])? }
            }
            "pack" => {
                if dsts.len() != 1 {
                    return Err(missing("one destination"));
                }
                InstKind::Pack { elem: ty(m)?, dst: reg(dsts[0])?, srcs: vals(ops)? }
            }
            "unpack" => {
                if ops.len() != 1 {
                    return Err(missing("one operand"));
                }
                InstKind::Unpack { elem: ty(m)?, dsts: dst_list()?, src: val(ops[0])? }
            }
            "special" => {
                shape(1, 0)?;
                let name = m.words.join(".");
                m.words.clear();
                let reg_kind = SpecialReg::from_spelling(&name)
                    .ok_or_else(|| line.error(format!("unknown special register `{name}`")))?;
                InstKind::Special { dst: reg(dsts[0])?, reg: reg_kind }
            }
            "mad" => {
                shape(1, 3)?;
                let part =
                    m.first(parse_mad_part).ok_or_else(|| missing("a part (.lo, .hi, .wide)"))?;
                InstKind::Mad {
                    part,
                    ty: ty(m)?,
                    dst: reg(dsts[0])?,
                    a: val(ops[0])?,
                    b: val(ops[1])?,
                    c: val(ops[2])?,
                }
            }
            "bfe" => {
                shape(1, 3)?;
                InstKind::Bfe {
                    ty: ty(m)?,
                    dst: reg(dsts[0])?,
                    a: val(ops[0])?,
                    pos: val(ops[1])?,
                    len: val(ops[2])?,
                }
            }
            "bfi" => {
                shape(1, 4)?;
                InstKind::Bfi {
                    ty: ty(m)?,
                    dst: reg(dsts[0])?,
                    a: val(ops[0])?,
                    b: val(ops[1])?,
                    pos: val(ops[2])?,
                    len: val(ops[3])?,
                }
            }
            "fma" => {
                shape(1, 3)?;
                let mode = m.mode("");
                InstKind::Fma {
                    ty: ty(m)?,
                    mode,
                    dst: reg(dsts[0])?,
                    a: val(ops[0])?,
                    b: val(ops[1])?,
                    c: val(ops[2])?,
                }
            }
            "setp" => {
                let cmp = m.take(CmpOp::from_spelling).ok_or_else(|| missing("a comparison"))?;
                let ftz = m.flag("ftz");
                let combine_op = m.take(BoolOp::from_spelling);
                shape(2, if combine_op.is_some() { 3 } else { 2 })?;
                let combine = match combine_op {
                    Some(op) => {
                        let (p, negate) = self.pred(line, ops[2])?;
                        Some((op, p, negate))
                    }
                    None => None,
                };
                InstKind::Setp {
                    cmp,
                    ty: ty(m)?,
                    ftz,
                    dst: self.dst(line, dsts[0])?,
                    dst_not: self.dst(line, dsts[1])?,
                    lhs: val(ops[0])?,
                    rhs: val(ops[1])?,
                    combine,
                }
            }
            "selp" => {
                shape(1, 3)?;
                let (cond, negate) = self.pred(line, ops[2])?;
                InstKind::Select {
                    ty: ty(m)?,
                    dst: reg(dsts[0])?,
                    a: val(ops[0])?,
                    b: val(ops[1])?,
                    cond,
                    negate,
                }
            }
            "pand" | "por" | "pxor" => {
                shape(1, 2)?;
                let op =
                    BoolOp::from_spelling(&opcode[1..]).ok_or_else(|| missing("an operation"))?;
                InstKind::PredLogic { op, dst: reg(dsts[0])?, lhs: reg(ops[0])?, rhs: reg(ops[1])? }
            }
            "pnot" => {
                shape(1, 1)?;
                InstKind::PredNot { dst: reg(dsts[0])?, src: reg(ops[0])? }
            }
            "cvt" => {
                shape(1, 1)?;
                let rounding = m.take(Rounding::from_spelling);
                let mode = m.mode("mode_");
                let to = ty(m)?;
                let from = ty(m)?;
                InstKind::Convert {
                    to,
                    from,
                    rounding,
                    mode,
                    dst: reg(dsts[0])?,
                    src: val(ops[0])?,
                }
            }
            "load" => {
                if ops.len() != 1 || dsts.is_empty() {
                    return Err(missing("destinations and one address"));
                }
                let space = m.take(Space::from_spelling).ok_or_else(|| missing("a state space"))?;
                InstKind::Load {
                    space,
                    ty: ty(m)?,
                    dsts: dst_list()?,
                    addr: self.addr(line, ops[0])?,
                }
            }
            "store" => {
                if ops.len() < 2 || !dsts.is_empty() {
                    return Err(missing("an address and values, and no destination"));
                }
                let space = m.take(Space::from_spelling).ok_or_else(|| missing("a state space"))?;
                InstKind::Store {
                    space,
                    ty: ty(m)?,
                    srcs: vals(&ops[1..])?,
                    addr: self.addr(line, ops[0])?,
                }
            }
            "narrow" => {
                shape(1, 1)?;
                let to = m.first(FloatFormat::from_spelling).ok_or_else(|| missing("a format"))?;
                let rounding =
                    m.take(Rounding::from_spelling).ok_or_else(|| missing("a rounding"))?;
                let satfinite = m.flag("satfinite");
                let relu = m.flag("relu");
                InstKind::Narrow {
                    to,
                    from: ty(m)?,
                    rounding,
                    satfinite,
                    relu,
                    dst: reg(dsts[0])?,
                    src: val(ops[0])?,
                }
            }
            "itof" => {
                shape(1, 1)?;
                let to = m.first(FloatFormat::from_spelling).ok_or_else(|| missing("a format"))?;
                let rounding =
                    m.take(Rounding::from_spelling).ok_or_else(|| missing("a rounding"))?;
                InstKind::IntToFloat {
                    to,
                    from: ty(m)?,
                    rounding,
                    dst: reg(dsts[0])?,
                    src: val(ops[0])?,
                }
            }
            "widen" => {
                shape(1, 1)?;
                let from =
                    m.first(FloatFormat::from_spelling).ok_or_else(|| missing("a format"))?;
                InstKind::Widen { from, dst: reg(dsts[0])?, src: val(ops[0])? }
            }
            "round_odd" => {
                shape(1, 3)?;
                let op = m.take(OddOp::from_spelling).ok_or_else(|| missing("an operation"))?;
                InstKind::RoundToOdd {
                    op,
                    soft: m.flag("soft"),
                    dst: reg(dsts[0])?,
                    a: val(ops[0])?,
                    b: val(ops[1])?,
                    c: val(ops[2])?,
                }
            }
            "atom" => {
                if dsts.len() > 1 || ops.len() != 3 {
                    return Err(missing("at most one destination, an address and two values"));
                }
                let op = m.first(AtomicOp::from_spelling).ok_or_else(|| missing("an operation"))?;
                let space = m.take(Space::from_spelling).ok_or_else(|| missing("a state space"))?;
                let scope = m.take(Scope::from_spelling).ok_or_else(|| missing("a scope"))?;
                let order = m.take(Order::from_spelling).ok_or_else(|| missing("an order"))?;
                InstKind::Atomic {
                    op,
                    space,
                    ty: ty(m)?,
                    scope,
                    order,
                    dst: dsts.first().map(|d| reg(d)).transpose()?,
                    addr: self.addr(line, ops[0])?,
                    src: val(ops[1])?,
                    cmp: val(ops[2])?,
                }
            }
            "barrier" => {
                shape(0, 0)?;
                InstKind::Barrier
            }
            "subgroup" => {
                shape(1, 2)?;
                let op =
                    m.take(SubgroupOp::from_spelling).ok_or_else(|| missing("an operation"))?;
                let split = m.flag("split");
                InstKind::Subgroup {
                    op,
                    split,
                    dst: reg(dsts[0])?,
                    value: val(ops[0])?,
                    lane: val(ops[1])?,
                }
            }
            "warp_barrier" => {
                if !dsts.is_empty() || ops.len() > 1 {
                    return Err(missing("no destination and at most one operand"));
                }
                InstKind::WarpBarrier { publish: ops.first().map(|o| val(o)).transpose()? }
            }
            "fence" => {
                shape(0, 0)?;
                let device_scope = match m.take(Scope::from_spelling) {
                    Some(Scope::Cta) => false,
                    Some(Scope::Gpu) => true,
                    _ => return Err(missing("a scope (.cta or .gpu)")),
                };
                InstKind::Fence { device_scope }
            }
            "warp_publish" => {
                shape(0, 1)?;
                InstKind::WarpPublish { value: val(ops[0])? }
            }
            "warp_read" => {
                shape(1, 3)?;
                InstKind::WarpRead {
                    dst: reg(dsts[0])?,
                    value: val(ops[0])?,
                    lane: val(ops[1])?,
                    warp_base: val(ops[2])?,
                }
            }
            "warp_ballot" => {
                shape(1, 3)?;
                InstKind::WarpBallot {
                    dst: reg(dsts[0])?,
                    value: val(ops[0])?,
                    lanes: val(ops[1])?,
                    warp_base: val(ops[2])?,
                }
            }
            "warp_sync" => {
                shape(0, 0)?;
                InstKind::WarpSync
            }
            "sync_point" if m.flag("warp") => {
                shape(0, 2)?;
                let Value::Imm(kind) = val(ops[1])? else {
                    return Err(line.error("`sync_point.warp` takes a constant kind"));
                };
                let kind = u32::try_from(kind).map_err(|_| line.error("kind out of range"))?;
                InstKind::SyncPoint { point: SyncPoint::Warp { members: val(ops[0])?, kind } }
            }
            "sync_point" if m.flag("sleep") => {
                shape(0, 0)?;
                InstKind::SyncPoint { point: SyncPoint::Sleep }
            }
            "sync_point" if m.flag("acquire") => {
                shape(0, 0)?;
                InstKind::SyncPoint { point: SyncPoint::Acquire }
            }
            "loop_count" => {
                shape(1, 1)?;
                let add = ops[0]
                    .parse::<i32>()
                    .map_err(|_| line.error("`loop_count` takes a signed 32-bit count"))?;
                InstKind::LoopCount { dst: reg(dsts[0])?, add }
            }
            "in_allocation" => {
                shape(1, 3)?;
                let Value::Imm(size) = val(ops[2])? else {
                    return Err(line.error("`in_allocation` takes a constant size"));
                };
                InstKind::InAllocation {
                    write: m.flag("write"),
                    dst: reg(dsts[0])?,
                    table: val(ops[0])?,
                    addr: val(ops[1])?,
                    size: u32::try_from(size).map_err(|_| line.error("size out of range"))?,
                }
            }
            "shadow_word" => {
                shape(1, 2)?;
                InstKind::ShadowWord { dst: reg(dsts[0])?, table: val(ops[0])?, addr: val(ops[1])? }
            }
            "race_shadow" => {
                let swap = m.flag("swap");
                shape(1, 1 + usize::from(swap))?;
                InstKind::RaceShadow {
                    dst: reg(dsts[0])?,
                    word: val(ops[0])?,
                    swap: if swap { Some(val(ops[1])?) } else { None },
                }
            }
            other => return Err(line.error(format!("unknown IR instruction `{other}`"))),
        })
    }
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
