//! The PTX abstract syntax tree.
//!
//! The AST records what the text says, with a [`Span`] on every node, and decides nothing
//! about meaning: instructions are kept generic (opcode, modifiers, operands) and are
//! checked against the instruction table during lowering, so that a construct later stages
//! do not implement still parses and is rejected with a diagnostic at its own span.

use crate::instructions::Opcode;
use crate::span::{Ident, Name, Span, Spanned};

/// One PTX file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    /// `.version major.minor`.
    pub version: Option<Spanned<(u32, u32)>>,
    /// `.target` options in order (`sm_75`, `texmode_independent`, `debug`, …).
    pub target: Vec<Ident>,
    /// `.address_size 32|64`; PTX defaults to 32 when absent (§11.1.3) but every
    /// compiler since CUDA 4 writes 64.
    pub address_size: Option<Spanned<u32>>,
    pub items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Function(Function),
    Variable(VarDecl),
    /// A module-scope directive: `.file`, `.section`, `.pragma`, `.alias`, `@@DWARF`.
    Directive(Directive),
}

/// Linking directives (§11.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    Visible,
    Extern,
    Weak,
    Common,
}

/// `.entry` (a kernel) or `.func` (a device function).
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub span: Span,
    pub linkage: Option<Linkage>,
    pub is_entry: bool,
    pub name: Ident,
    /// `.attribute(.unified(0xAB, 0xCD))` between `.func` and the name (§5.4.8).
    pub attribute_specs: Vec<AttributeSpec>,
    /// Return parameters of a `.func`, `(.reg .b32 r)` / `(.param .b32 r)`.
    pub returns: Vec<Param>,
    pub params: Vec<Param>,
    /// Directives between the parameter list and the body, in source order: the
    /// performance-tuning directives ([`DirectiveKind::Tuning`]: `.maxntid`, `.reqntid`,
    /// `.noreturn`, …) and `.pragma`.
    pub attributes: Vec<Directive>,
    /// `None` for a declaration (prototype ending in `;`).
    pub body: Option<Vec<Statement>>,
}

/// A state space (§5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StateSpace {
    Reg,
    Sreg,
    Const,
    Global,
    Local,
    Param,
    Shared,
    Tex,
}

impl StateSpace {
    pub fn from_directive(s: &str) -> Option<StateSpace> {
        Some(match s {
            ".reg" => StateSpace::Reg,
            ".sreg" => StateSpace::Sreg,
            ".const" => StateSpace::Const,
            ".global" => StateSpace::Global,
            ".local" => StateSpace::Local,
            ".param" => StateSpace::Param,
            // ptxvk runs every thread-block cluster as one CTA, whose `.shared::cluster`
            // window is its `.shared` one (`lower::sema::cluster`).
            ".shared" | ".shared::cta" | ".shared::cluster" => StateSpace::Shared,
            ".tex" => StateSpace::Tex,
            _ => return None,
        })
    }

    pub fn directive(self) -> &'static str {
        match self {
            StateSpace::Reg => ".reg",
            StateSpace::Sreg => ".sreg",
            StateSpace::Const => ".const",
            StateSpace::Global => ".global",
            StateSpace::Local => ".local",
            StateSpace::Param => ".param",
            StateSpace::Shared => ".shared",
            StateSpace::Tex => ".tex",
        }
    }
}

/// Fundamental and packed types (§5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    Pred,
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    Bf16,
    Bf16x2,
    Tf32,
    F32,
    F64,
}

/// How the bits of a type are interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    Pred,
    Bits,
    Unsigned,
    Signed,
    Float,
}

impl ScalarType {
    pub fn from_directive(s: &str) -> Option<ScalarType> {
        use ScalarType::*;
        Some(match s {
            ".pred" => Pred,
            ".b8" => B8,
            ".b16" => B16,
            ".b32" => B32,
            ".b64" => B64,
            ".b128" => B128,
            ".u8" => U8,
            ".u16" => U16,
            ".u32" => U32,
            ".u64" => U64,
            ".s8" => S8,
            ".s16" => S16,
            ".s32" => S32,
            ".s64" => S64,
            ".f16" => F16,
            ".f16x2" => F16x2,
            ".bf16" => Bf16,
            ".bf16x2" => Bf16x2,
            ".tf32" => Tf32,
            ".f32" => F32,
            ".f64" => F64,
            _ => return None,
        })
    }

    pub fn directive(self) -> &'static str {
        use ScalarType::*;
        match self {
            Pred => ".pred",
            B8 => ".b8",
            B16 => ".b16",
            B32 => ".b32",
            B64 => ".b64",
            B128 => ".b128",
            U8 => ".u8",
            U16 => ".u16",
            U32 => ".u32",
            U64 => ".u64",
            S8 => ".s8",
            S16 => ".s16",
            S32 => ".s32",
            S64 => ".s64",
            F16 => ".f16",
            F16x2 => ".f16x2",
            Bf16 => ".bf16",
            Bf16x2 => ".bf16x2",
            Tf32 => ".tf32",
            F32 => ".f32",
            F64 => ".f64",
        }
    }

    /// Size in bits; predicates count as 1.
    pub fn bits(self) -> u32 {
        use ScalarType::*;
        match self {
            Pred => 1,
            B8 | U8 | S8 => 8,
            B16 | U16 | S16 | F16 | Bf16 => 16,
            B32 | U32 | S32 | F32 | F16x2 | Bf16x2 | Tf32 => 32,
            B64 | U64 | S64 | F64 => 64,
            B128 => 128,
        }
    }

    /// Size in bytes in memory (a predicate cannot live in memory; it reports 1).
    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    pub fn kind(self) -> TypeKind {
        use ScalarType::*;
        match self {
            Pred => TypeKind::Pred,
            B8 | B16 | B32 | B64 | B128 => TypeKind::Bits,
            U8 | U16 | U32 | U64 => TypeKind::Unsigned,
            S8 | S16 | S32 | S64 => TypeKind::Signed,
            F16 | F16x2 | Bf16 | Bf16x2 | Tf32 | F32 | F64 => TypeKind::Float,
        }
    }
}

/// A variable declaration in any state space: module scope, function scope or a
/// parameter list. `.reg .b32 %r<10>` declares ten registers `%r0`…`%r9`.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    pub span: Span,
    pub linkage: Option<Linkage>,
    pub space: StateSpace,
    /// `.const[2]`: the bank of a banked constant declaration (deprecated, §5.1.3).
    pub bank: Option<u32>,
    /// `.attribute(.managed)` and friends (§5.4.7).
    pub attribute_specs: Vec<AttributeSpec>,
    pub align: Option<Spanned<u32>>,
    /// `.v2`/`.v4`/`.v8` vector variables.
    pub vector: Option<u32>,
    pub ty: Spanned<VarType>,
    /// `.ptr.space.align N` attribute of kernel parameters (§5.1.6.1).
    pub ptr: Option<PtrAttr>,
    pub names: Vec<DeclName>,
}

/// The type of a declared variable: a fundamental type or one of the opaque texture,
/// sampler and surface reference types (§5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VarType {
    Scalar(ScalarType),
    TexRef,
    SamplerRef,
    SurfRef,
}

impl VarType {
    pub fn from_directive(s: &str) -> Option<VarType> {
        Some(match s {
            ".texref" => VarType::TexRef,
            ".samplerref" => VarType::SamplerRef,
            ".surfref" => VarType::SurfRef,
            _ => VarType::Scalar(ScalarType::from_directive(s)?),
        })
    }

    pub fn directive(self) -> &'static str {
        match self {
            VarType::Scalar(t) => t.directive(),
            VarType::TexRef => ".texref",
            VarType::SamplerRef => ".samplerref",
            VarType::SurfRef => ".surfref",
        }
    }

    /// The fundamental type, or `None` for an opaque reference type.
    pub fn scalar(self) -> Option<ScalarType> {
        match self {
            VarType::Scalar(t) => Some(t),
            _ => None,
        }
    }
}

/// One `.attribute(…)` entry: `.managed` or `.unified(uuid1, uuid2)` (§5.4.8).
#[derive(Clone, Debug, PartialEq)]
pub struct AttributeSpec {
    pub name: Ident,
    pub args: Vec<Expr>,
    pub span: Span,
}

/// One declared name with its array shape, count suffix and initializer.
#[derive(Clone, Debug, PartialEq)]
pub struct DeclName {
    pub name: Ident,
    /// `%r<100>`: a parameterized name declaring `%r0`…`%r99`.
    pub count: Option<u32>,
    /// Array dimensions; `None` for `[]` (size from the initializer or `extern`).
    pub dims: Vec<Option<u64>>,
    pub init: Option<Initializer>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PtrAttr {
    pub space: Option<StateSpace>,
    pub align: Option<u32>,
}

/// A parameter of `.entry`/`.func`; same shape as a variable with one name.
pub type Param = VarDecl;

#[derive(Clone, Debug, PartialEq)]
pub enum Initializer {
    Expr(Expr),
    /// `{ a, b, … }`, nested for arrays of arrays and vectors.
    List(Vec<Initializer>, Span),
    /// `{ addr_mode_0 = clamp_to_border, filter_mode = nearest }`: the named members of
    /// a `.texref`/`.samplerref`/`.surfref` (§5.3). Enumerated values are symbols.
    Fields(Vec<(Ident, Expr)>, Span),
}

/// A statement of a function body.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    Variable(VarDecl),
    Label(Ident),
    Instruction(Instruction),
    /// `{ … }`, a nested scope.
    Block(Vec<Statement>, Span),
    Directive(Directive),
}

/// A directive other than a declaration or a function (§11): debugging, linking,
/// performance tuning and control-flow tables.
#[derive(Clone, Debug, PartialEq)]
pub struct Directive {
    pub kind: DirectiveKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DirectiveKind {
    /// `.file 1 "a.cu"[, timestamp, size]`. The path is kept as written (escapes are
    /// not decoded).
    File { index: u32, path: Spanned<String>, timestamp: Option<u64>, size: Option<u64> },
    /// `.loc 1 5 3[, function_name label[+n], inlined_at 1 9 2]`.
    Loc(Loc),
    /// `.section .debug_info { … }`.
    Section(Section),
    /// `.pragma "nounroll";` — the strings as written, without quotes.
    Pragma(Vec<Spanned<String>>),
    /// `.alias fAlias, fAliasee;` (§11.6.5).
    Alias { alias: Ident, aliasee: Ident },
    /// A performance-tuning directive with its integer arguments: `.maxntid 256, 1, 1`,
    /// `.reqntid`, `.minnctapersm`, `.maxnctapersm`, `.maxnreg`, `.noreturn`,
    /// `.explicitcluster`, `.reqnctapercluster`, `.maxclusterrank`, `.blocksareclusters`,
    /// `.abi_preserve`, `.abi_preserve_control`.
    Tuning { name: Ident, values: Vec<Spanned<u32>> },
    /// `label: .branchtargets L1, L2, …;` — a jump table for `brx.idx`.
    BranchTargets { label: Ident, targets: Vec<Ident> },
    /// `label: .calltargets f1, f2, …;` — the possible callees of an indirect call.
    CallTargets { label: Ident, targets: Vec<Ident> },
    /// `label: .callprototype (.param .b32 _) _ (.param .b64 _) [.noreturn];`.
    CallPrototype {
        label: Ident,
        returns: Vec<Param>,
        params: Vec<Param>,
        /// Trailing directives such as `.noreturn` and `.abi_preserve N`.
        attributes: Vec<Directive>,
    },
    /// A legacy `@@DWARF …` line (PTX 1.x–2.x debug information), kept verbatim.
    Dwarf(String),
}

/// `.loc file line column` with the optional inlining attributes (PTX ISA 7.2).
#[derive(Clone, Debug, PartialEq)]
pub struct Loc {
    pub file: u32,
    pub line: u32,
    pub column: Option<u32>,
    /// `function_name label` or `function_name label+imm`: an offset into `.debug_str`.
    pub function_name: Option<Expr>,
    /// `inlined_at file line column`.
    pub inlined_at: Option<(u32, u32, u32)>,
}

/// `.section name { entries }`: DWARF data kept for printing and line mapping.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// `.debug_info`, `.debug_str`, …, as written.
    pub name: Ident,
    pub entries: Vec<SectionEntry>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SectionEntry {
    /// `label:` inside the section.
    Label(Ident),
    /// `.b8 1, 2, 3`, `.b32 label`, `.b64 label+8`, `.b32 end-start`: the values keep
    /// their label arithmetic as expressions (labels are [`ExprKind::Symbol`]s).
    Data { ty: Spanned<ScalarType>, values: Vec<Expr>, span: Span },
}

/// `@p` / `@!p`.
#[derive(Clone, Debug, PartialEq)]
pub struct Guard {
    pub negated: bool,
    pub pred: Ident,
}

/// One instruction, generic: `opcode.mod1.mod2 operands;`.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    pub span: Span,
    pub guard: Option<Guard>,
    pub opcode: Ident,
    /// The opcode decoded against the instruction table; `None` for a name PTX has no
    /// instruction for, which semantic analysis reports.
    pub op: Option<Opcode>,
    /// Modifiers with their leading dot, in source order (`.global`, `.v4`, `.f32`).
    pub modifiers: Vec<Ident>,
    pub operands: Vec<Operand>,
}

impl Instruction {
    pub fn has_modifier(&self, m: &str) -> bool {
        self.modifiers.iter().any(|x| x.value == m)
    }
}

/// The element a vector component names (`%v.x` or `%v.r` is element 0, PTX ISA 9.2
/// §5.4.3); `None` for a component that is not one of `.x .y .z .w .r .g .b .a`.
pub fn vector_component(component: &str) -> Option<usize> {
    match component {
        ".x" | ".r" => Some(0),
        ".y" | ".g" => Some(1),
        ".z" | ".b" => Some(2),
        ".w" | ".a" => Some(3),
        _ => None,
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A register, variable, label or function name, optionally with a component
    /// (`%tid.x`, `%r1.y` in old PTX).
    Name { name: Ident, component: Option<Box<Spanned<Name>>> },
    /// A constant expression (integer or floating-point immediate).
    Imm(Expr),
    /// `!%p`: a negated predicate source.
    Not(Box<Operand>, Span),
    /// `{a, b, c, d}`, where elements may be `_`.
    Vector(Vec<Operand>, Span),
    /// `[base+offset]`, `[base]`, `[imm]`, `var[imm]`.
    Address(Address),
    /// `_`.
    Sink(Span),
    /// `d|p`: a value destination and a predicate destination.
    Pair(Box<Operand>, Box<Operand>, Span),
    /// `( a, b )`: a call's return or argument list.
    List(Vec<Operand>, Span),
    /// `[tex, {x, y}]`, `[tex, sampler, {x, y}]`, `[tmap, {x, y}]`: a bracketed operand
    /// tuple of texture, surface and tensor instructions.
    Tuple(Vec<Operand>, Span),
    /// `-a`: a negated source of the video instructions (`vmad`).
    Neg(Box<Operand>, Span),
}

impl Operand {
    pub fn span(&self) -> Span {
        match self {
            Operand::Name { name, component } => {
                component.as_ref().map_or(name.span, |c| name.span.to(c.span))
            }
            Operand::Imm(e) => e.span,
            Operand::Not(_, s)
            | Operand::Vector(_, s)
            | Operand::Sink(s)
            | Operand::Pair(_, _, s)
            | Operand::List(_, s)
            | Operand::Tuple(_, s)
            | Operand::Neg(_, s) => *s,
            Operand::Address(a) => a.span,
        }
    }
}

/// A memory address operand. `base` is a register or variable name; the offset is a
/// constant byte displacement.
#[derive(Clone, Debug, PartialEq)]
pub struct Address {
    pub base: Option<Ident>,
    /// Bytes, except while [`Address::element_index`] is set.
    pub offset: i64,
    /// `var[i]` (§6.4.2): `offset` counts elements of `var`, not bytes; parsing ends by
    /// scaling it to bytes (`crate::indexing`), so later stages never see it set.
    pub element_index: bool,
    /// `[a].unified`: the address of a variable with the `.unified` attribute (§5.4.8).
    pub unified: bool,
    pub span: Span,
}

/// A constant expression (§4.6): evaluated with 64-bit integer arithmetic in C
/// precedence, or a floating-point literal.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal; `unsigned` when it has a `U` suffix or does not fit in s64.
    Int {
        value: u64,
        unsigned: bool,
    },
    /// `0f…` literal: the exact f32 bits.
    F32Bits(u32),
    /// `0d…` literal or a decimal float: the exact f64 bits.
    F64Bits(u64),
    /// A variable or function name used as an address in an initializer or operand.
    Symbol(Name),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `(.s64) e` / `(.u64) e`.
    Cast {
        signed: bool,
        expr: Box<Expr>,
    },
    /// `generic(var)` in an initializer: the generic address of a variable (§5.4.4).
    Generic(Name),
    /// `0xFF00(expr)` in an initializer: the byte of `expr` selected by the mask
    /// (§5.4.4, PTX ISA 7.1).
    Mask {
        mask: u64,
        expr: Box<Expr>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
    LogicalNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    And,
    Xor,
    Or,
    LogicalAnd,
    LogicalOr,
}

impl BinaryOp {
    /// C precedence (§4.5.4, Table 4): higher binds tighter.
    pub fn precedence(self) -> u8 {
        use BinaryOp::*;
        match self {
            LogicalOr => 1,
            LogicalAnd => 2,
            Or => 3,
            Xor => 4,
            And => 5,
            Eq | Ne => 6,
            Lt | Gt | Le | Ge => 7,
            Shl | Shr => 8,
            Add | Sub => 9,
            Mul | Div | Rem => 10,
        }
    }

    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Mul => "*",
            Div => "/",
            Rem => "%",
            Add => "+",
            Sub => "-",
            Shl => "<<",
            Shr => ">>",
            Lt => "<",
            Gt => ">",
            Le => "<=",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            And => "&",
            Xor => "^",
            Or => "|",
            LogicalAnd => "&&",
            LogicalOr => "||",
        }
    }
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Plus => "+",
            UnaryOp::Not => "~",
            UnaryOp::LogicalNot => "!",
        }
    }
}

/// The value of an integer constant expression with PTX's signedness (§4.6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstInt {
    pub value: u64,
    pub unsigned: bool,
}

impl Expr {
    /// Evaluates an integer constant expression. Symbols, floats and division by zero
    /// are errors, returned with the span of the offending part.
    pub fn eval_int(&self) -> Result<ConstInt, (Span, String)> {
        let c = |value: u64, unsigned: bool| Ok(ConstInt { value, unsigned });
        match &self.kind {
            ExprKind::Int { value, unsigned } => c(*value, *unsigned),
            ExprKind::F32Bits(_) | ExprKind::F64Bits(_) => {
                Err((self.span, "expected an integer constant, found a floating-point one".into()))
            }
            ExprKind::Symbol(s) | ExprKind::Generic(s) => {
                Err((self.span, format!("`{s}` is not a constant in this position")))
            }
            ExprKind::Mask { mask, expr } => {
                let v = expr.eval_int()?;
                let shift = mask.trailing_zeros().min(63);
                c((v.value & mask) >> shift, v.unsigned)
            }
            ExprKind::Cast { signed, expr } => {
                let v = expr.eval_int()?;
                c(v.value, !signed)
            }
            ExprKind::Unary(op, e) => {
                let v = e.eval_int()?;
                match op {
                    UnaryOp::Neg => c(v.value.wrapping_neg(), v.unsigned),
                    UnaryOp::Plus => c(v.value, v.unsigned),
                    // §4.5.5: `~` interprets its operand as unsigned.
                    UnaryOp::Not => c(!v.value, true),
                    UnaryOp::LogicalNot => c((v.value == 0) as u64, false),
                }
            }
            ExprKind::Ternary(cond, a, b) => {
                let cv = cond.eval_int()?;
                let (a, b) = (a.eval_int()?, b.eval_int()?);
                let unsigned = a.unsigned || b.unsigned;
                let pick = if cv.value != 0 { a } else { b };
                c(pick.value, unsigned)
            }
            ExprKind::Binary(op, l, r) => {
                let (a, b) = (l.eval_int()?, r.eval_int()?);
                // §4.6.1: if either operand is unsigned the operation is unsigned.
                let unsigned = a.unsigned || b.unsigned;
                let (x, y) = (a.value, b.value);
                let (sx, sy) = (x as i64, y as i64);
                let bool_ = |v: bool| c(v as u64, false);
                match op {
                    BinaryOp::Add => c(x.wrapping_add(y), unsigned),
                    BinaryOp::Sub => c(x.wrapping_sub(y), unsigned),
                    BinaryOp::Mul => c(x.wrapping_mul(y), unsigned),
                    BinaryOp::Div | BinaryOp::Rem => {
                        if y == 0 {
                            return Err((r.span, "division by zero in constant expression".into()));
                        }
                        match (op, unsigned) {
                            (BinaryOp::Div, true) => c(x / y, true),
                            (BinaryOp::Div, false) => c(sx.wrapping_div(sy) as u64, false),
                            // §4.5.5, Table 5: `%` interprets both operands as unsigned.
                            _ => c(x % y, unsigned),
                        }
                    }
                    BinaryOp::Shl => c(x.checked_shl(y as u32).unwrap_or(0), a.unsigned),
                    BinaryOp::Shr => {
                        let v = if a.unsigned {
                            x.checked_shr(y as u32).unwrap_or(0)
                        } else {
                            (sx >> (y.min(63) as u32)) as u64
                        };
                        c(v, a.unsigned)
                    }
                    BinaryOp::And => c(x & y, unsigned),
                    BinaryOp::Or => c(x | y, unsigned),
                    BinaryOp::Xor => c(x ^ y, unsigned),
                    BinaryOp::Lt => bool_(if unsigned { x < y } else { sx < sy }),
                    BinaryOp::Gt => bool_(if unsigned { x > y } else { sx > sy }),
                    BinaryOp::Le => bool_(if unsigned { x <= y } else { sx <= sy }),
                    BinaryOp::Ge => bool_(if unsigned { x >= y } else { sx >= sy }),
                    BinaryOp::Eq => bool_(x == y),
                    BinaryOp::Ne => bool_(x != y),
                    BinaryOp::LogicalAnd => bool_(x != 0 && y != 0),
                    BinaryOp::LogicalOr => bool_(x != 0 || y != 0),
                }
            }
        }
    }
}
