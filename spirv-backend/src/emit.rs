//! Emission of one kernel: structured IR → a SPIR-V entry point function.
//!
//! Registers are `Function`-storage variables, loaded and stored around every instruction
//! (`docs/design-notes.md`, *Registers and memory*); drivers promote them. Each IR
//! instruction maps to a short, exact sequence of SPIR-V instructions; where Vulkan's
//! guarantees are weaker than PTX's definition (division by zero, shift amounts past the
//! width, `fma`), the sequence spells the PTX semantics out instead of relying on
//! undefined behaviour.

use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{
    self, Decoration, FunctionControl, MemoryAccess, SelectionControl, StorageClass, Word,
};

use ptxvk_lower::ir::Node;
use ptxvk_lower::ir::*;
use ptxvk_lower::pass::FloatConstants;

use crate::module::Globals;
use crate::types::{Scalar, TypeCache};
use crate::Error;
use helpers::{Helper, SoftOp};

type R<T> = Result<T, Error>;

mod approx;
mod atomic;
mod check;
mod f64ops;
pub(crate) mod helpers;
mod narrow;
mod newton;
mod softf64;

/// GLSL.std.450 instruction numbers used here (GLSL.std.450 specification, table 1).
mod glsl {
    pub const ROUND_EVEN: u32 = 2;
    pub const TRUNC: u32 = 3;
    pub const FLOOR: u32 = 8;
    pub const CEIL: u32 = 9;
    pub const NMIN: u32 = 79;
    pub const NMAX: u32 = 80;
    pub const FIND_UMSB: u32 = 75;
    pub const SQRT: u32 = 31;
    pub const FABS: u32 = 4;
    /// GLSL.std.450 `Fma` (§ "Fma": "the result may be computed as if the operations
    /// were separate"; used only where a probe found it fused).
    pub const FMA: u32 = 50;
}

/// Memory semantics bits (SPIR-V §3.25).
const SEM_ACQ_REL: u32 = 0x8;
const SEM_UNIFORM_MEMORY: u32 = 0x40;
const SEM_WORKGROUP_MEMORY: u32 = 0x100;
/// Scopes (SPIR-V §3.27).
const SCOPE_DEVICE: u32 = 1;
const SCOPE_WORKGROUP: u32 = 2;
const SCOPE_SUBGROUP: u32 = 3;

pub struct FnEmitter<'a> {
    pub b: &'a mut Builder,
    pub t: &'a mut TypeCache,
    pub g: &'a Globals,
    pub k: &'a Kernel,
    vars: Vec<Word>,
    /// The thread's local window (`.local`): a `Function` array of 32-bit words.
    local: Option<Word>,
    /// Innermost loop's (merge, continue) labels, and whether it was broken out of.
    loops: Vec<(Word, Word, bool)>,
    /// Whether the f64 arithmetic of the `.approx` routines is soft (bit patterns in
    /// integers, for devices without f64; `emit/f64ops.rs`).
    soft_f64: bool,
}

impl<'a> FnEmitter<'a> {
    pub fn new(b: &'a mut Builder, t: &'a mut TypeCache, g: &'a Globals, k: &'a Kernel) -> Self {
        FnEmitter { b, t, g, k, vars: Vec::new(), local: None, loops: Vec::new(), soft_f64: false }
    }

    /// Emits the kernel function and returns its id.
    pub fn function(&mut self, body: &[Node]) -> R<Word> {
        let void = self.b.type_void();
        let fn_ty = self.b.type_function(void, vec![]);
        let f = self.b.begin_function(void, None, FunctionControl::NONE, fn_ty)?;
        self.b.name(f, self.k.name.clone());
        self.b.begin_block(None)?;
        for r in &self.k.regs {
            let ty = self.t.scalar(self.b, Scalar::of_reg(r.ty));
            let ptr = self.t.pointer(self.b, StorageClass::Function, ty);
            let v = self.b.variable(ptr, None, StorageClass::Function, None);
            // PTX register names in the disassembly (`--emit spvasm`) and in driver tools.
            self.b.name(v, r.name.clone());
            self.vars.push(v);
        }
        if self.k.local_bytes > 0 {
            let u32t = self.ty(Scalar::Int(32));
            let words = self.k.local_bytes.div_ceil(4);
            let len = self.t.u32(self.b, words);
            let arr = self.b.type_array(u32t, len);
            let ptr = self.t.pointer(self.b, StorageClass::Function, arr);
            let v = self.b.variable(ptr, None, StorageClass::Function, None);
            self.b.name(v, "local_window");
            self.local = Some(v);
        }
        let terminated = self.nodes(body)?;
        if !terminated {
            self.b.ret()?;
        }
        self.b.end_function()?;
        Ok(f)
    }

    // ----- structured control flow -----------------------------------------------------

    /// Emits `nodes` into the current block; returns whether control left the sequence
    /// (the current block is terminated).
    fn nodes(&mut self, nodes: &[Node]) -> R<bool> {
        for n in nodes {
            match n {
                Node::Code(bid) => {
                    for inst in &self.k.blocks[bid.index()].insts {
                        self.inst(inst).map_err(|e| e.at(inst.span))?;
                    }
                }
                Node::Return => {
                    self.b.ret()?;
                    return Ok(true);
                }
                Node::Break => {
                    let Some(l) = self.loops.last_mut() else {
                        return Err(Error::Internal("break outside a loop".into()));
                    };
                    l.2 = true;
                    let merge = l.0;
                    self.b.branch(merge)?;
                    return Ok(true);
                }
                Node::Continue => {
                    let Some(&(_, cont, _)) = self.loops.last() else {
                        return Err(Error::Internal("continue outside a loop".into()));
                    };
                    self.b.branch(cont)?;
                    return Ok(true);
                }
                Node::If { cond, negate, then, otherwise, .. } => {
                    let c = self.pred(*cond, *negate)?;
                    let (then_l, else_l, merge) = (self.b.id(), self.b.id(), self.b.id());
                    self.b.selection_merge(merge, SelectionControl::NONE)?;
                    self.b.branch_conditional(c, then_l, else_l, [])?;
                    self.b.begin_block(Some(then_l))?;
                    let t_done = self.nodes(then)?;
                    if !t_done {
                        self.b.branch(merge)?;
                    }
                    self.b.begin_block(Some(else_l))?;
                    let e_done = self.nodes(otherwise)?;
                    if !e_done {
                        self.b.branch(merge)?;
                    }
                    self.b.begin_block(Some(merge))?;
                    if t_done && e_done {
                        self.b.unreachable()?;
                        return Ok(true);
                    }
                }
                Node::Switch { selector, cases, .. } => {
                    let (sel, have) = self.load_reg(*selector)?;
                    let sel = self.coerce(sel, have, Scalar::Int(32))?;
                    let merge = self.b.id();
                    let labels: Vec<Word> = cases.iter().map(|_| self.b.id()).collect();
                    let default =
                        cases.iter().position(|c| c.is_default).map(|i| labels[i]).ok_or_else(
                            || Error::Internal("switch without a default case".into()),
                        )?;
                    let targets: Vec<(Operand, Word)> = cases
                        .iter()
                        .zip(&labels)
                        .flat_map(|(c, &l)| {
                            c.values.iter().map(move |&v| (Operand::LiteralBit32(v), l))
                        })
                        .collect();
                    self.b.selection_merge(merge, SelectionControl::NONE)?;
                    self.b.switch(sel, default, targets)?;
                    let mut all_done = true;
                    for (c, &l) in cases.iter().zip(&labels) {
                        self.b.begin_block(Some(l))?;
                        let done = self.nodes(&c.body)?;
                        if !done {
                            self.b.branch(merge)?;
                        }
                        all_done &= done;
                    }
                    self.b.begin_block(Some(merge))?;
                    if all_done {
                        self.b.unreachable()?;
                        return Ok(true);
                    }
                }
                Node::Loop { body, .. } => {
                    let (header, body_l, cont, merge) =
                        (self.b.id(), self.b.id(), self.b.id(), self.b.id());
                    self.b.branch(header)?;
                    self.b.begin_block(Some(header))?;
                    self.b.loop_merge(merge, cont, spirv::LoopControl::NONE, [])?;
                    self.t.used.loops = true;
                    self.b.branch(body_l)?;
                    self.b.begin_block(Some(body_l))?;
                    self.loops.push((merge, cont, false));
                    let done = self.nodes(body)?;
                    if !done {
                        self.b.branch(cont)?;
                    }
                    let (_, _, broken) = self.loops.pop().unwrap_or((0, 0, false));
                    self.b.begin_block(Some(cont))?;
                    self.b.branch(header)?;
                    self.b.begin_block(Some(merge))?;
                    if !broken {
                        self.b.unreachable()?;
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    // ----- registers and values -------------------------------------------------------------

    fn ty(&mut self, s: Scalar) -> Word {
        self.t.scalar(self.b, s)
    }

    fn konst(&mut self, s: Scalar, bits: u64) -> Word {
        self.t.constant(self.b, s, bits)
    }

    fn load_reg(&mut self, r: RegId) -> R<(Word, Scalar)> {
        let s = Scalar::of_reg(self.k.reg(r).ty);
        let ty = self.ty(s);
        Ok((self.b.load(ty, None, self.vars[r.index()], None, [])?, s))
    }

    /// Reads `v` as a value of type `want`: bitcasts between int and float of one width,
    /// truncates wider integer registers (`st`, `cvt` sources).
    fn read(&mut self, v: Value, want: Scalar) -> R<Word> {
        match v {
            Value::Imm(bits) => Ok(self.konst(want, bits)),
            Value::Reg(r) => {
                let (id, have) = self.load_reg(r)?;
                self.coerce(id, have, want)
            }
        }
    }

    fn read_op(&mut self, v: Value, t: OpTy) -> R<Word> {
        self.read(v, Scalar::of_op(t))
    }

    fn coerce(&mut self, id: Word, have: Scalar, want: Scalar) -> R<Word> {
        if have == want {
            return Ok(id);
        }
        let want_ty = self.ty(want);
        match (have, want) {
            (a, b) if a.bits() == b.bits() => Ok(self.b.bitcast(want_ty, None, id)?),
            (Scalar::Int(a), Scalar::Int(b)) if a > b => Ok(self.b.u_convert(want_ty, None, id)?),
            (Scalar::Int(a), Scalar::Float(b)) if a > b => {
                let narrow = self.ty(Scalar::Int(b));
                let t = self.b.u_convert(narrow, None, id)?;
                Ok(self.b.bitcast(want_ty, None, t)?)
            }
            _ => Err(Error::Internal(format!("cannot read {have:?} as {want:?}"))),
        }
    }

    /// Writes `id` (of type `have`) to register `r`, widening integers by sign or zero
    /// extension (`signed`) when the register is wider.
    fn write(&mut self, r: RegId, id: Word, have: Scalar, signed: bool) -> R<()> {
        let want = Scalar::of_reg(self.k.reg(r).ty);
        let v = if have == want {
            id
        } else if have.bits() == want.bits() {
            let t = self.ty(want);
            self.b.bitcast(t, None, id)?
        } else if have.bits() < want.bits() && want != Scalar::Bool {
            let int_have = Scalar::Int(have.bits() as u8);
            let as_int = self.coerce(id, have, int_have)?;
            let wide = self.ty(Scalar::Int(want.bits() as u8));
            let ext = if signed {
                self.sign_extend(wide, as_int)?
            } else {
                self.b.u_convert(wide, None, as_int)?
            };
            self.coerce(ext, Scalar::Int(want.bits() as u8), want)?
        } else {
            return Err(Error::Internal(format!("cannot write {have:?} to {want:?} register")));
        };
        self.b.store(self.vars[r.index()], v, None, [])?;
        Ok(())
    }

    fn write_op(&mut self, r: RegId, id: Word, t: OpTy) -> R<()> {
        self.write(r, id, Scalar::of_op(t), t.is_signed())
    }

    fn pred(&mut self, r: RegId, negate: bool) -> R<Word> {
        let (v, _) = self.load_reg(r)?;
        if negate {
            let bool_ty = self.ty(Scalar::Bool);
            Ok(self.b.logical_not(bool_ty, None, v)?)
        } else {
            Ok(v)
        }
    }

    // ----- instructions -----------------------------------------------------------------

    fn inst(&mut self, inst: &Inst) -> R<()> {
        if ptxvk_lower::pass::legalize_memory::is_partial_access(self.k, &inst.kind) {
            return Err(Error::Internal(
                "a window access that is not one word left for the emitter (legalize_memory)"
                    .into(),
            ));
        }
        if ptxvk_lower::pass::legalize_floats::is_directed(&inst.kind) {
            return Err(Error::Internal(
                "float arithmetic with directed rounding left for the emitter (legalize_floats)"
                    .into(),
            ));
        }
        match &inst.kind {
            InstKind::Mov { ty, dst, src } => {
                let v = self.read_op(*src, *ty)?;
                self.write_op(*dst, v, *ty)
            }
            InstKind::Pack { elem, dst, srcs } => {
                let total = elem.bits() * srcs.len() as u32;
                let wide = Scalar::Int(total as u8);
                let wide_ty = self.ty(wide);
                let mut acc = self.konst(wide, 0);
                for (i, s) in srcs.iter().enumerate() {
                    let part = self.read(*s, Scalar::Int(elem.bits() as u8))?;
                    let ext = self.b.u_convert(wide_ty, None, part)?;
                    let sh = self.konst(Scalar::Int(32), (i as u32 * elem.bits()) as u64);
                    let shifted = self.b.shift_left_logical(wide_ty, None, ext, sh)?;
                    acc = self.b.bitwise_or(wide_ty, None, acc, shifted)?;
                }
                self.write(*dst, acc, wide, false)
            }
            InstKind::Unpack { elem, dsts, src } => {
                let total = elem.bits() * dsts.len() as u32;
                let wide = Scalar::Int(total as u8);
                let wide_ty = self.ty(wide);
                let narrow = Scalar::Int(elem.bits() as u8);
                let narrow_ty = self.ty(narrow);
                let v = self.read(*src, wide)?;
                for (i, d) in dsts.iter().enumerate() {
                    let Some(d) = d else { continue };
                    let sh = self.konst(Scalar::Int(32), (i as u32 * elem.bits()) as u64);
                    let shifted = self.b.shift_right_logical(wide_ty, None, v, sh)?;
                    let part = self.b.u_convert(narrow_ty, None, shifted)?;
                    self.write(*d, part, narrow, false)?;
                }
                Ok(())
            }
            InstKind::Special {
                dst,
                reg:
                    reg @ (SpecialReg::ModuleData | SpecialReg::ParamBlock | SpecialReg::WindowBase),
            } => {
                let member = match reg {
                    SpecialReg::ModuleData => ptxvk_abi::member::CONST_ADDRESS,
                    SpecialReg::WindowBase => ptxvk_abi::member::WINDOW_BASE,
                    _ => ptxvk_abi::member::PARAM_ADDRESS,
                };
                let v = self.push_member(member, Scalar::Int(64))?;
                self.write(*dst, v, Scalar::Int(64), false)
            }
            InstKind::Special { dst, reg: SpecialReg::SharedWindowAddress } => {
                let v = self.shared_window_address()?;
                self.write(*dst, v, Scalar::Int(64), false)
            }
            InstKind::Special { dst, reg: SpecialReg::DeviceClock } => {
                self.t.used.device_clock = true;
                let u64_ty = self.ty(Scalar::Int(64));
                let scope = self.t.u32(self.b, SCOPE_DEVICE);
                let v = self.b.read_clock_khr(u64_ty, None, scope)?;
                self.write(*dst, v, Scalar::Int(64), false)
            }
            InstKind::Special { dst, reg } => {
                let v = self.special(*reg)?;
                self.write(*dst, v, Scalar::Int(32), false)
            }
            // `--float native`: Vulkan's square root and division (not exact).
            InstKind::Unary { op: op @ (UnaryOp::Sqrt | UnaryOp::Rcp), ty, mode, dst, src }
                if mode.path == FloatPath::Native =>
            {
                let v = self.read_op(*src, *ty)?;
                let v = if mode.ftz { self.flush_f32(v)? } else { v };
                let s = Scalar::of_op(*ty);
                let t = self.ty(s);
                let r = if *op == UnaryOp::Sqrt {
                    self.glsl1(t, glsl::SQRT, v)?
                } else {
                    let one_bits =
                        if ty.bits() == 32 { 1f32.to_bits().into() } else { 1f64.to_bits() };
                    let one = self.konst(s, one_bits);
                    self.float_op(BinaryOp::Div, t, one, v)?
                };
                let r = self.float_result(r, *ty, *mode)?;
                self.write_op(*dst, r, *ty)
            }
            InstKind::Unary { op: op @ (UnaryOp::Sqrt | UnaryOp::Rcp), ty, mode, dst, src } => {
                if *ty == OpTy::F(64) {
                    let it = Scalar::Int(64);
                    let v = self.read(*src, it)?;
                    let fused = matches!(mode.path, FloatPath::Fused { .. });
                    let (sqrt, div) = if fused {
                        let newton = |op| Helper::Newton { op, bits: 64, soft: false };
                        (newton(SoftOp::Sqrt), newton(SoftOp::Div))
                    } else {
                        (Helper::SqrtF64(mode.rounding), Helper::DivF64(mode.rounding))
                    };
                    let r = if *op == UnaryOp::Sqrt {
                        self.call(sqrt, &[v])?
                    } else {
                        let one = self.konst(it, 1f64.to_bits());
                        self.call(div, &[one, v])?
                    };
                    return self.write(*dst, r, it, false);
                }
                let v = self.read_op(*src, *ty)?;
                let v = if mode.ftz { self.flush_f32(v)? } else { v };
                let r = match (*op, mode.path) {
                    (UnaryOp::Sqrt, FloatPath::Fused { soft }) => {
                        self.call(Helper::Newton { op: SoftOp::Sqrt, bits: 32, soft }, &[v])?
                    }
                    (_, FloatPath::Fused { soft }) => {
                        let one = self.konst(Scalar::Float(32), 1f32.to_bits() as u64);
                        self.call(Helper::Newton { op: SoftOp::Div, bits: 32, soft }, &[one, v])?
                    }
                    (UnaryOp::Sqrt, path) if path != FloatPath::Integer => {
                        self.call(Helper::SqrtF32(mode.rounding), &[v])?
                    }
                    (UnaryOp::Sqrt, _) => {
                        self.call(Helper::SoftF32(SoftOp::Sqrt, mode.rounding), &[v])?
                    }
                    (_, path) => {
                        let one = self.konst(Scalar::Float(32), 1f32.to_bits() as u64);
                        let div = if path == FloatPath::Integer {
                            Helper::SoftF32(SoftOp::Div, mode.rounding)
                        } else {
                            Helper::DivF32(mode.rounding)
                        };
                        self.call(div, &[one, v])?
                    }
                };
                let r = self.float_result(r, *ty, *mode)?;
                self.write_op(*dst, r, *ty)
            }
            InstKind::Unary {
                op:
                    op @ (UnaryOp::Ex2
                    | UnaryOp::Lg2
                    | UnaryOp::Sin
                    | UnaryOp::Cos
                    | UnaryOp::Rsqrt
                    | UnaryOp::Tanh),
                ty,
                mode,
                dst,
                src,
            } => {
                let v = self.read_op(*src, *ty)?;
                let v = if mode.ftz { self.flush_f32(v)? } else { v };
                let routine = if mode.path == FloatPath::Integer {
                    Helper::ApproxF32Int(*op)
                } else {
                    Helper::ApproxF32(*op)
                };
                let r = self.call(routine, &[v])?;
                let r = self.float_result(r, *ty, *mode)?;
                self.write_op(*dst, r, *ty)
            }
            InstKind::Unary { op, ty, dst, src, .. } => {
                let v = self.read_op(*src, *ty)?;
                let (r, rt) = self.unary(*op, *ty, v)?;
                self.write_op(*dst, r, rt)
            }
            InstKind::Binary { op, ty, mode, dst, lhs, rhs } => {
                let rhs_ty =
                    if matches!(op, BinaryOp::Shl | BinaryOp::Shr) { OpTy::U(32) } else { *ty };
                let a = self.read_op(*lhs, *ty)?;
                let c = self.read_op(*rhs, rhs_ty)?;
                let (mut r, rt) = self.binary(*op, *ty, *mode, a, c)?;
                let constant = matches!(lhs, Value::Imm(_)) || matches!(rhs, Value::Imm(_));
                let repair = self.g.float_constants == FloatConstants::Repaired;
                if repair
                    && constant
                    && ty.is_float()
                    && matches!(op, BinaryOp::Add | BinaryOp::Sub)
                {
                    r = self.zero_sign_of_sum(*op == BinaryOp::Sub, *ty, a, c, r)?;
                }
                self.write_op(*dst, r, rt)
            }
            InstKind::Mad { part, ty, dst, a, b, c } => {
                let av = self.read_op(*a, *ty)?;
                let bv = self.read_op(*b, *ty)?;
                let (p, pt) = self.binary(*part, *ty, FloatMode::default(), av, bv)?;
                let cv = self.read_op(*c, pt)?;
                let t = self.ty(Scalar::of_op(pt));
                let r = self.b.i_add(t, None, p, cv)?;
                self.write_op(*dst, r, pt)
            }
            InstKind::Bfe { ty, dst, a, pos, len } => {
                let av = self.read_op(*a, *ty)?;
                let p = self.read_op(*pos, OpTy::U(32))?;
                let l = self.read_op(*len, OpTy::U(32))?;
                let r = self.bit_field_extract(*ty, av, p, l)?;
                self.write_op(*dst, r, *ty)
            }
            InstKind::Bfi { ty, dst, a, b, pos, len } => {
                let av = self.read_op(*a, *ty)?;
                let bv = self.read_op(*b, *ty)?;
                let p = self.read_op(*pos, OpTy::U(32))?;
                let l = self.read_op(*len, OpTy::U(32))?;
                let r = self.bit_field_insert(*ty, av, bv, p, l)?;
                self.write_op(*dst, r, *ty)
            }
            // The device's `Fma`, which its probe found fused: exact (PTX ISA 9.2
            // §9.7.3.6, one rounding) in one instruction; or, with `--float native`,
            // whatever the device's `Fma` does.
            InstKind::Fma { ty, mode, dst, a, b, c }
                if matches!(mode.path, FloatPath::Fused { .. } | FloatPath::Native) =>
            {
                let mut x =
                    [self.read_op(*a, *ty)?, self.read_op(*b, *ty)?, self.read_op(*c, *ty)?];
                if mode.ftz {
                    for v in &mut x {
                        *v = self.flush_f32(*v)?;
                    }
                }
                let t = self.ty(Scalar::of_op(*ty));
                let ops = x.map(Operand::IdRef);
                let r = self.b.ext_inst(t, None, self.g.glsl, glsl::FMA, ops)?;
                let r = self.float_result(r, *ty, *mode)?;
                self.write_op(*dst, r, *ty)
            }
            InstKind::Fma { ty: ty @ OpTy::F(64), mode, dst, a, b, c } => {
                let it = Scalar::Int(64);
                let av = self.read(*a, it)?;
                let bv = self.read(*b, it)?;
                let cv = self.read(*c, it)?;
                let r = self.call(Helper::FmaF64(mode.rounding), &[av, bv, cv])?;
                self.write(*dst, r, it, false)?;
                let _ = ty;
                Ok(())
            }
            InstKind::Fma { ty, mode, dst, a, b, c } => {
                let mut av = self.read_op(*a, *ty)?;
                let mut bv = self.read_op(*b, *ty)?;
                let mut cv = self.read_op(*c, *ty)?;
                if mode.ftz {
                    av = self.flush_f32(av)?;
                    bv = self.flush_f32(bv)?;
                    cv = self.flush_f32(cv)?;
                }
                let fma = if mode.path == FloatPath::Integer {
                    Helper::SoftF32(SoftOp::Fma, mode.rounding)
                } else {
                    Helper::FmaF32
                };
                let r = self.call(fma, &[av, bv, cv])?;
                let r = self.float_result(r, *ty, *mode)?;
                self.write_op(*dst, r, *ty)
            }
            InstKind::Narrow { to, from, rounding, satfinite, relu, dst, src } => {
                let r = self.narrow(*to, *from, *rounding, *satfinite, *relu, *src)?;
                self.write(*dst, r, Scalar::Int(to.bits() as u8), false)
            }
            InstKind::IntToFloat { to, from, rounding, dst, src } => {
                let r = self.int_to_float(*to, *from, *rounding, *src)?;
                self.write(*dst, r, Scalar::Int(to.bits() as u8), false)
            }
            InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp } => {
                let old = self.atomic(*op, *space, *ty, *scope, *order, addr, *src, *cmp)?;
                match dst {
                    Some(d) => self.write(*d, old, Scalar::Int(ty.bits() as u8), false),
                    None => Ok(()),
                }
            }
            InstKind::Widen { from, dst, src } => {
                let r = self.widen(*from, *src)?;
                self.write(*dst, r, Scalar::Float(32), false)
            }
            InstKind::RoundToOdd { op, soft: false, dst, a, b, c } => {
                let r = self.round_to_odd(*op, *a, *b, *c)?;
                self.write(*dst, r, Scalar::Float(64), false)
            }
            InstKind::RoundToOdd { op, soft: true, dst, a, b, c } => {
                let r = self.soft_round_to_odd(*op, *a, *b, *c)?;
                self.write(*dst, r, Scalar::Int(64), false)
            }
            InstKind::Setp { cmp, ty, ftz, dst, dst_not, lhs, rhs, combine } => {
                let mut a = self.read_op(*lhs, *ty)?;
                let mut c = self.read_op(*rhs, *ty)?;
                if *ftz {
                    a = self.flush_f32(a)?;
                    c = self.flush_f32(c)?;
                }
                let r = self.compare(*cmp, *ty, a, c)?;
                let bool_ty = self.ty(Scalar::Bool);
                let comb = |s: &mut Self, v: Word| -> R<Word> {
                    match combine {
                        None => Ok(v),
                        Some((op, p, neg)) => {
                            let pv = s.pred(*p, *neg)?;
                            Ok(match op {
                                BoolOp::And => s.b.logical_and(bool_ty, None, v, pv)?,
                                BoolOp::Or => s.b.logical_or(bool_ty, None, v, pv)?,
                                BoolOp::Xor => s.b.logical_not_equal(bool_ty, None, v, pv)?,
                            })
                        }
                    }
                };
                if let Some(d) = dst {
                    let v = comb(self, r)?;
                    self.write(*d, v, Scalar::Bool, false)?;
                }
                if let Some(d) = dst_not {
                    let n = self.b.logical_not(bool_ty, None, r)?;
                    let v = comb(self, n)?;
                    self.write(*d, v, Scalar::Bool, false)?;
                }
                Ok(())
            }
            InstKind::Select { ty, dst, a, b, cond, negate } => {
                let av = self.read_op(*a, *ty)?;
                let bv = self.read_op(*b, *ty)?;
                let c = self.pred(*cond, *negate)?;
                let t = self.ty(Scalar::of_op(*ty));
                let r = self.b.select(t, None, c, av, bv)?;
                self.write_op(*dst, r, *ty)
            }
            InstKind::PredLogic { op, dst, lhs, rhs } => {
                let a = self.pred(*lhs, false)?;
                let c = self.pred(*rhs, false)?;
                let bt = self.ty(Scalar::Bool);
                let r = match op {
                    BoolOp::And => self.b.logical_and(bt, None, a, c)?,
                    BoolOp::Or => self.b.logical_or(bt, None, a, c)?,
                    BoolOp::Xor => self.b.logical_not_equal(bt, None, a, c)?,
                };
                self.write(*dst, r, Scalar::Bool, false)
            }
            InstKind::PredNot { dst, src } => {
                let v = self.pred(*src, true)?;
                self.write(*dst, v, Scalar::Bool, false)
            }
            InstKind::Convert { to, from, rounding, mode, dst, src } => {
                let v = self.read_op(*src, *from)?;
                let r = self.convert(*to, *from, *rounding, *mode, v)?;
                self.write_op(*dst, r, *to)
            }
            InstKind::Load { space, ty, dsts, addr } => {
                for (i, d) in dsts.iter().enumerate() {
                    let off = i as i64 * (ty.bits() / 8) as i64;
                    let v = self.load_mem(*space, *ty, addr, off)?;
                    if let Some(d) = d {
                        self.write_op(*d, v, *ty)?;
                    }
                }
                Ok(())
            }
            InstKind::Store { space, ty, srcs, addr } => {
                for (i, s) in srcs.iter().enumerate() {
                    let off = i as i64 * (ty.bits() / 8) as i64;
                    let v = self.read_op(*s, *ty)?;
                    self.store_mem(*space, *ty, addr, off, v)?;
                }
                Ok(())
            }
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
            InstKind::WarpPublish { .. }
            | InstKind::WarpRead { .. }
            | InstKind::WarpBallot { .. }
            | InstKind::WarpSync => {
                Err(Error::Internal("a warp exchange left for the emitter (legalize_warps)".into()))
            }
            InstKind::SyncPoint { .. } => {
                Err(Error::Internal("a sync point left for the emitter (schedule)".into()))
            }
            InstKind::InAllocation { dst, table, addr, size, write } => {
                let s64 = Scalar::Int(64);
                let table = self.read(*table, s64)?;
                let addr = self.read(*addr, s64)?;
                let size = self.konst(s64, u64::from(*size));
                let r = self.call(Helper::InAllocation { write: *write }, &[table, addr, size])?;
                self.write(*dst, r, Scalar::Bool, false)
            }
            InstKind::ShadowWord { dst, table, addr } => {
                let s64 = Scalar::Int(64);
                let table = self.read(*table, s64)?;
                let addr = self.read(*addr, s64)?;
                let r = self.call(Helper::ShadowWord, &[table, addr])?;
                self.write(*dst, r, s64, false)
            }
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
            InstKind::Fence { device_scope } => {
                let scope =
                    self.t.u32(self.b, if *device_scope { SCOPE_DEVICE } else { SCOPE_WORKGROUP });
                let sem =
                    self.t.u32(self.b, SEM_ACQ_REL | SEM_WORKGROUP_MEMORY | SEM_UNIFORM_MEMORY);
                self.b.memory_barrier(scope, sem)?;
                Ok(())
            }
        }
    }

    /// A subgroup operation (SPIR-V 1.6 §3.56 group non-uniform instructions) on this
    /// thread's warp: the whole subgroup, or (`split`) the half of a 64-wide subgroup
    /// that holds this invocation.
    fn subgroup(&mut self, op: SubgroupOp, split: bool, value: Value, lane: Value) -> R<Word> {
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
    fn barrier(&mut self) -> R<()> {
        let wg = self.t.u32(self.b, SCOPE_WORKGROUP);
        let sem = self.t.u32(self.b, SEM_ACQ_REL | SEM_WORKGROUP_MEMORY | SEM_UNIFORM_MEMORY);
        self.b.control_barrier(wg, wg, sem)?;
        Ok(())
    }

    fn special(&mut self, reg: SpecialReg) -> R<Word> {
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
            SpecialReg::DynamicSharedBase => Ok(self.t.u32(self.b, self.k.shared.dynamic_offset())),
            SpecialReg::TotalSharedBytes => {
                let fixed = self.t.u32(self.b, self.k.shared.static_bytes);
                Ok(self.b.i_add(u32_ty, None, fixed, self.g.dynamic_shared_bytes)?)
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
    fn shared_window_address(&mut self) -> R<Word> {
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
    fn loop_count(&mut self, add: i32) -> R<Word> {
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

    fn push_member(&mut self, member: u32, s: Scalar) -> R<Word> {
        let ty = self.ty(s);
        let ptr = self.t.pointer(self.b, StorageClass::PushConstant, ty);
        let idx = self.t.u32(self.b, member);
        let p = self.b.access_chain(ptr, None, self.g.push_constants, [idx])?;
        Ok(self.b.load(ty, None, p, None, [])?)
    }

    fn push_u32(&mut self, member: u32) -> R<Word> {
        self.push_member(member, Scalar::Int(32))
    }

    // ----- integer and float arithmetic -----------------------------------------------------

    fn unary(&mut self, op: UnaryOp, ty: OpTy, v: Word) -> R<(Word, OpTy)> {
        let s = Scalar::of_op(ty);
        let t = self.ty(s);
        let bits = ty.bits();
        Ok(match op {
            // Emitted by `inst` with their `.ftz` handling.
            UnaryOp::Sqrt
            | UnaryOp::Rcp
            | UnaryOp::Ex2
            | UnaryOp::Lg2
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Rsqrt
            | UnaryOp::Tanh => {
                return Err(Error::Internal(format!("{op:?} reached the generic unary path")))
            }
            UnaryOp::Not => (self.b.not(t, None, v)?, ty),
            UnaryOp::Cnot => {
                let zero = self.konst(s, 0);
                let one = self.konst(s, 1);
                let bt = self.ty(Scalar::Bool);
                let is0 = self.b.i_equal(bt, None, v, zero)?;
                (self.b.select(t, None, is0, one, zero)?, ty)
            }
            UnaryOp::Neg | UnaryOp::Abs if ty.is_float() => {
                // Sign-bit operations, exact for every input including NaN (PTX `neg`/`abs`).
                let it = Scalar::Int(bits as u8);
                let ity = self.ty(it);
                let x = self.b.bitcast(ity, None, v)?;
                let sign = self.konst(it, 1u64 << (bits - 1));
                let r = if op == UnaryOp::Neg {
                    self.b.bitwise_xor(ity, None, x, sign)?
                } else {
                    let mask = self.konst(it, !(1u64 << (bits - 1)));
                    self.b.bitwise_and(ity, None, x, mask)?
                };
                (self.b.bitcast(t, None, r)?, ty)
            }
            UnaryOp::Neg => (self.b.s_negate(t, None, v)?, ty),
            UnaryOp::Abs => {
                let zero = self.konst(s, 0);
                let bt = self.ty(Scalar::Bool);
                let neg = self.b.s_less_than(bt, None, v, zero)?;
                let n = self.b.s_negate(t, None, v)?;
                (self.b.select(t, None, neg, n, v)?, ty)
            }
            UnaryOp::Popc => {
                let u32t = self.ty(Scalar::Int(32));
                let r = match bits {
                    64 => {
                        let (lo, hi) = self.split64(v)?;
                        let a = self.b.bit_count(u32t, None, lo)?;
                        let c = self.b.bit_count(u32t, None, hi)?;
                        self.b.i_add(u32t, None, a, c)?
                    }
                    32 => self.b.bit_count(u32t, None, v)?,
                    _ => {
                        let w = self.b.u_convert(u32t, None, v)?;
                        self.b.bit_count(u32t, None, w)?
                    }
                };
                (r, OpTy::U(32))
            }
            UnaryOp::Clz => {
                let r = match bits {
                    64 => {
                        let (lo, hi) = self.split64(v)?;
                        let zh = self.clz32(hi)?;
                        let zl = self.clz32(lo)?;
                        let u32t = self.ty(Scalar::Int(32));
                        let bt = self.ty(Scalar::Bool);
                        let k32 = self.konst(Scalar::Int(32), 32);
                        let hi_zero = self.b.i_equal(bt, None, zh, k32)?;
                        let both = self.b.i_add(u32t, None, zl, k32)?;
                        self.b.select(u32t, None, hi_zero, both, zh)?
                    }
                    32 => self.clz32(v)?,
                    _ => {
                        let u32t = self.ty(Scalar::Int(32));
                        let w = self.b.u_convert(u32t, None, v)?;
                        let z = self.clz32(w)?;
                        let adj = self.konst(Scalar::Int(32), 16);
                        self.b.i_sub(u32t, None, z, adj)?
                    }
                };
                (r, OpTy::U(32))
            }
            UnaryOp::Brev => {
                let u32t = self.ty(Scalar::Int(32));
                let r = match bits {
                    64 => {
                        let (lo, hi) = self.split64(v)?;
                        let rl = self.b.bit_reverse(u32t, None, lo)?;
                        let rh = self.b.bit_reverse(u32t, None, hi)?;
                        self.join64(rh, rl)?
                    }
                    32 => self.b.bit_reverse(u32t, None, v)?,
                    _ => {
                        let w = self.b.u_convert(u32t, None, v)?;
                        let r = self.b.bit_reverse(u32t, None, w)?;
                        let sh = self.konst(Scalar::Int(32), 16);
                        let r = self.b.shift_right_logical(u32t, None, r, sh)?;
                        self.b.u_convert(t, None, r)?
                    }
                };
                (r, ty)
            }
        })
    }

    /// Vulkan allows the bit instructions on 32-bit integers only
    /// (VUID-StandaloneSpirv-Base-04781), so 64-bit values are split.
    fn split64(&mut self, v: Word) -> R<(Word, Word)> {
        let u32t = self.ty(Scalar::Int(32));
        let u64t = self.ty(Scalar::Int(64));
        let lo = self.b.u_convert(u32t, None, v)?;
        let k32 = self.konst(Scalar::Int(32), 32);
        let h = self.b.shift_right_logical(u64t, None, v, k32)?;
        let hi = self.b.u_convert(u32t, None, h)?;
        Ok((lo, hi))
    }

    fn join64(&mut self, lo: Word, hi: Word) -> R<Word> {
        let u64t = self.ty(Scalar::Int(64));
        let l = self.b.u_convert(u64t, None, lo)?;
        let h = self.b.u_convert(u64t, None, hi)?;
        let k32 = self.konst(Scalar::Int(32), 32);
        let hs = self.b.shift_left_logical(u64t, None, h, k32)?;
        Ok(self.b.bitwise_or(u64t, None, hs, l)?)
    }

    /// `clz` of a u32: 31 - FindUMsb(x), which is 32 for x = 0 (FindUMsb(0) = -1).
    fn clz32(&mut self, v: Word) -> R<Word> {
        let u32t = self.ty(Scalar::Int(32));
        let msb = self.b.ext_inst(u32t, None, self.g.glsl, glsl::FIND_UMSB, [Operand::IdRef(v)])?;
        let k31 = self.konst(Scalar::Int(32), 31);
        Ok(self.b.i_sub(u32t, None, k31, msb)?)
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        ty: OpTy,
        mode: FloatMode,
        a: Word,
        c: Word,
    ) -> R<(Word, OpTy)> {
        let s = Scalar::of_op(ty);
        let t = self.ty(s);
        let bt = self.ty(Scalar::Bool);
        if ty.is_float() {
            let (a, c) = if mode.ftz { (self.flush_f32(a)?, self.flush_f32(c)?) } else { (a, c) };
            let r = match op {
                // PTX `add`/`sub`/`mul` with a rounding modifier must not be contracted
                // into an fma; without one ptxas may contract, but we keep results exact.
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul => self.exact(op, t, a, c)?,
                BinaryOp::Min | BinaryOp::Max => {
                    self.float_min_max(op == BinaryOp::Min, ty, a, c)?
                }
                // `--float native`: Vulkan's division (not exact).
                BinaryOp::Div if mode.path == FloatPath::Native => {
                    self.float_op(BinaryOp::Div, t, a, c)?
                }
                BinaryOp::Div
                    if ty.bits() == 32 && matches!(mode.path, FloatPath::Fused { .. }) =>
                {
                    let soft = mode.path == FloatPath::Fused { soft: true };
                    self.call(Helper::Newton { op: SoftOp::Div, bits: 32, soft }, &[a, c])?
                }
                BinaryOp::Div if ty.bits() == 32 && mode.path == FloatPath::Integer => {
                    self.call(Helper::SoftF32(SoftOp::Div, mode.rounding), &[a, c])?
                }
                BinaryOp::Div if ty.bits() == 32 => {
                    self.call(Helper::DivF32(mode.rounding), &[a, c])?
                }
                BinaryOp::Div => {
                    let i64t = self.ty(Scalar::Int(64));
                    let f64t = self.ty(Scalar::Float(64));
                    let ai = self.b.bitcast(i64t, None, a)?;
                    let ci = self.b.bitcast(i64t, None, c)?;
                    let div = if matches!(mode.path, FloatPath::Fused { .. }) {
                        Helper::Newton { op: SoftOp::Div, bits: 64, soft: false }
                    } else {
                        Helper::DivF64(mode.rounding)
                    };
                    let r = self.call(div, &[ai, ci])?;
                    self.b.bitcast(f64t, None, r)?
                }
                other => return Err(Error::Internal(format!("float {other:?}"))),
            };
            let r = self.float_result(r, ty, mode)?;
            return Ok((r, ty));
        }
        let signed = ty.is_signed();
        let bits = ty.bits();
        Ok(match op {
            BinaryOp::Add => (self.b.i_add(t, None, a, c)?, ty),
            BinaryOp::Sub => (self.b.i_sub(t, None, a, c)?, ty),
            BinaryOp::Mul => (self.b.i_mul(t, None, a, c)?, ty),
            BinaryOp::MulHi => {
                let st = self.b.type_struct([t, t]);
                let m = if signed {
                    self.b.s_mul_extended(st, None, a, c)?
                } else {
                    self.b.u_mul_extended(st, None, a, c)?
                };
                (self.b.composite_extract(t, None, m, [1])?, ty)
            }
            BinaryOp::MulWide => {
                let wt_ty = if signed { OpTy::S(bits as u8 * 2) } else { OpTy::U(bits as u8 * 2) };
                let wt = self.ty(Scalar::of_op(wt_ty));
                let (x, y) = if signed {
                    (self.sign_extend(wt, a)?, self.sign_extend(wt, c)?)
                } else {
                    (self.b.u_convert(wt, None, a)?, self.b.u_convert(wt, None, c)?)
                };
                (self.b.i_mul(wt, None, x, y)?, wt_ty)
            }
            BinaryOp::Div | BinaryOp::Rem => {
                // SPIR-V leaves x/0 and INT_MIN/-1 undefined; PTX hardware gives
                // defined values (see `ir::BinaryOp::Div`). Divide by a safe divisor and
                // select the PTX result.
                let zero = self.konst(s, 0);
                let one = self.konst(s, 1);
                let all = self.konst(s, u64::MAX);
                let is0 = self.b.i_equal(bt, None, c, zero)?;
                let mut bad = is0;
                if signed {
                    let min = self.konst(s, 1u64 << (bits - 1));
                    let a_min = self.b.i_equal(bt, None, a, min)?;
                    let c_m1 = self.b.i_equal(bt, None, c, all)?;
                    let ovf = self.b.logical_and(bt, None, a_min, c_m1)?;
                    bad = self.b.logical_or(bt, None, is0, ovf)?;
                }
                let safe = self.b.select(t, None, bad, one, c)?;
                let q = match (op, signed) {
                    (BinaryOp::Div, true) => self.b.s_div(t, None, a, safe)?,
                    (BinaryOp::Div, false) => self.b.u_div(t, None, a, safe)?,
                    (_, true) => self.b.s_rem(t, None, a, safe)?,
                    (_, false) => self.b.u_mod(t, None, a, safe)?,
                };
                // With divisor 1: x/1 = x (so INT_MIN/-1 → INT_MIN), x%1 = 0.
                let r = if op == BinaryOp::Div {
                    // x/0: all ones (unsigned) or -1 (signed) — both the all-ones pattern.
                    self.b.select(t, None, is0, all, q)?
                } else {
                    // x%0 = x.
                    self.b.select(t, None, is0, a, q)?
                };
                (r, ty)
            }
            BinaryOp::Min | BinaryOp::Max => {
                let lt = if signed {
                    self.b.s_less_than(bt, None, a, c)?
                } else {
                    self.b.u_less_than(bt, None, a, c)?
                };
                let r = if op == BinaryOp::Min {
                    self.b.select(t, None, lt, a, c)?
                } else {
                    self.b.select(t, None, lt, c, a)?
                };
                (r, ty)
            }
            BinaryOp::And => (self.b.bitwise_and(t, None, a, c)?, ty),
            BinaryOp::Or => (self.b.bitwise_or(t, None, a, c)?, ty),
            BinaryOp::Xor => (self.b.bitwise_xor(t, None, a, c)?, ty),
            BinaryOp::Shl | BinaryOp::Shr => {
                // PTX clamps shift amounts above the width (PTX ISA 9.2 §9.7.8.7–8);
                // SPIR-V leaves them undefined. Shift by min(c, width-1), then fix up.
                let u32s = Scalar::Int(32);
                let wm1 = self.konst(u32s, (bits - 1) as u64);
                let big = self.b.u_greater_than(bt, None, c, wm1)?;
                let u32t = self.ty(u32s);
                let amt = self.b.select(u32t, None, big, wm1, c)?;
                let r = match (op, signed) {
                    (BinaryOp::Shl, _) => {
                        let v = self.b.shift_left_logical(t, None, a, amt)?;
                        let zero = self.konst(s, 0);
                        self.b.select(t, None, big, zero, v)?
                    }
                    // Arithmetic: shifting by width-1 already gives the sign fill.
                    (_, true) => self.b.shift_right_arithmetic(t, None, a, amt)?,
                    (_, false) => {
                        let v = self.b.shift_right_logical(t, None, a, amt)?;
                        let zero = self.konst(s, 0);
                        self.b.select(t, None, big, zero, v)?
                    }
                };
                (r, ty)
            }
        })
    }

    /// The `bfe`/`bfi` operands: `pos` and `len` mod 256, and `n`, the number of field
    /// bits inside the value, `min(len, max(W - pos, 0))`, with a mask of `n` ones.
    fn bit_field(&mut self, ty: OpTy, pos: Word, len: Word) -> R<(Word, Word, Word, Word)> {
        let w = ty.bits();
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let bt = self.ty(Scalar::Bool);
        let vs = Scalar::Int(w as u8);
        let vt = self.ty(vs);
        let ff = self.konst(s32, 0xff);
        let pos = self.b.bitwise_and(u32t, None, pos, ff)?;
        let len = self.b.bitwise_and(u32t, None, len, ff)?;
        let wk = self.konst(s32, w as u64);
        let pos_in = self.b.u_less_than(bt, None, pos, wk)?;
        let room = self.b.i_sub(u32t, None, wk, pos)?;
        let zero32 = self.konst(s32, 0);
        let room = self.b.select(u32t, None, pos_in, room, zero32)?;
        let short = self.b.u_less_than(bt, None, len, room)?;
        let n = self.b.select(u32t, None, short, len, room)?;
        // mask(n) = n == W ? ~0 : (1 << n) - 1, computed without shifting by W.
        let one = self.konst(vs, 1);
        let all = self.konst(vs, u64::MAX);
        let full = self.b.i_equal(bt, None, n, wk)?;
        let wm1 = self.konst(s32, (w - 1) as u64);
        let n_safe = self.b.select(u32t, None, full, wm1, n)?;
        let sh = self.b.shift_left_logical(vt, None, one, n_safe)?;
        let m = self.b.i_sub(vt, None, sh, one)?;
        let mask = self.b.select(vt, None, full, all, m)?;
        let pos_safe = self.b.select(u32t, None, pos_in, pos, zero32)?;
        Ok((pos_safe, len, n, mask))
    }

    fn bit_field_extract(&mut self, ty: OpTy, a: Word, pos: Word, len: Word) -> R<Word> {
        let w = ty.bits();
        let vs = Scalar::Int(w as u8);
        let vt = self.ty(vs);
        let bt = self.ty(Scalar::Bool);
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let (pos_safe, len, _n, mask) = self.bit_field(ty, pos, len)?;
        let shifted = self.b.shift_right_logical(vt, None, a, pos_safe)?;
        let field = self.b.bitwise_and(vt, None, shifted, mask)?;
        if !ty.is_signed() {
            return Ok(field);
        }
        // sbit = len == 0 ? 0 : a[min(pos + len - 1, W - 1)].
        let ff = self.konst(s32, 0xff);
        let raw_pos = self.b.bitwise_and(u32t, None, pos, ff)?;
        let one32 = self.konst(s32, 1);
        let top = self.b.i_add(u32t, None, raw_pos, len)?;
        let top = self.b.i_sub(u32t, None, top, one32)?;
        let wm1 = self.konst(s32, (w - 1) as u64);
        let over = self.b.u_greater_than(bt, None, top, wm1)?;
        let top = self.b.select(u32t, None, over, wm1, top)?;
        let bit = self.b.shift_right_logical(vt, None, a, top)?;
        let one = self.konst(vs, 1);
        let bit = self.b.bitwise_and(vt, None, bit, one)?;
        let zero32 = self.konst(s32, 0);
        let len0 = self.b.i_equal(bt, None, len, zero32)?;
        let zero = self.konst(vs, 0);
        let set = self.b.i_not_equal(bt, None, bit, zero)?;
        let not_len0 = self.b.logical_not(bt, None, len0)?;
        let neg = self.b.logical_and(bt, None, set, not_len0)?;
        let high = self.b.not(vt, None, mask)?;
        let ext = self.b.bitwise_or(vt, None, field, high)?;
        Ok(self.b.select(vt, None, neg, ext, field)?)
    }

    fn bit_field_insert(&mut self, ty: OpTy, a: Word, b: Word, pos: Word, len: Word) -> R<Word> {
        let vt = self.ty(Scalar::Int(ty.bits() as u8));
        let (pos_safe, _len, _n, mask) = self.bit_field(ty, pos, len)?;
        let m = self.b.shift_left_logical(vt, None, mask, pos_safe)?;
        let not_m = self.b.not(vt, None, m)?;
        let kept = self.b.bitwise_and(vt, None, b, not_m)?;
        let ins = self.b.shift_left_logical(vt, None, a, pos_safe)?;
        let ins = self.b.bitwise_and(vt, None, ins, m)?;
        Ok(self.b.bitwise_or(vt, None, kept, ins)?)
    }

    /// PTX float `min`/`max` (PTX ISA 9.2 §9.7.3.11–12): a NaN operand yields the other
    /// operand (GLSL.std.450 NMin/NMax), and `+0.0 > -0.0`, which NMin/NMax leave open:
    /// for equal operands the sign bits are combined (or for min, and for max).
    fn float_min_max(&mut self, is_min: bool, ty: OpTy, a: Word, c: Word) -> R<Word> {
        let t = self.ty(Scalar::of_op(ty));
        let it = self.ty(Scalar::Int(ty.bits() as u8));
        let bt = self.ty(Scalar::Bool);
        let op = if is_min { glsl::NMIN } else { glsl::NMAX };
        let m =
            self.b.ext_inst(t, None, self.g.glsl, op, [Operand::IdRef(a), Operand::IdRef(c)])?;
        let ai = self.b.bitcast(it, None, a)?;
        let ci = self.b.bitcast(it, None, c)?;
        let zeros = if is_min {
            self.b.bitwise_or(it, None, ai, ci)?
        } else {
            self.b.bitwise_and(it, None, ai, ci)?
        };
        let zeros = self.b.bitcast(t, None, zeros)?;
        let eq = self.b.f_ord_equal(bt, None, a, c)?;
        Ok(self.b.select(t, None, eq, zeros, m)?)
    }

    /// A correctly rounded float add, sub or mul that the driver may not contract into
    /// an fma or otherwise fuse (`NoContraction`, SPIR-V §3.20).
    fn exact(&mut self, op: BinaryOp, ty: Word, a: Word, b: Word) -> R<Word> {
        if !matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul) {
            return Err(Error::Internal(format!("{op:?} is not an exact float operation")));
        }
        let r = self.float_op(op, ty, a, b)?;
        self.b.decorate(r, Decoration::NoContraction, []);
        Ok(r)
    }

    /// `a op b` of float type `ty`: `OpFAdd`, `OpFSub`, `OpFMul` or `OpFDiv`. Every one
    /// of them the backend emits is made here, so that on a driver that folds them
    /// wrongly when it knows an operand (`FloatConstants::Hidden`: lavapipe returns
    /// `x` for `x + 0.0` and `-x` for `0.0 - x`, and Mesa 22.3's also 0 for `x * 0.0`
    /// whatever `x` is) each operand is first ORed, as an integer, with a push-constant
    /// word that is always 0: the result is the same bits, which the driver can no
    /// longer see. The two operands take different words, so that the driver cannot
    /// make `x - x` of two equal expressions either.
    fn float_op(&mut self, op: BinaryOp, ty: Word, a: Word, b: Word) -> R<Word> {
        let (a, b) = if self.g.float_constants.hides(op) {
            (self.hidden(ty, a, 0)?, self.hidden(ty, b, 1)?)
        } else {
            (a, b)
        };
        Ok(match op {
            BinaryOp::Add => self.b.f_add(ty, None, a, b)?,
            BinaryOp::Sub => self.b.f_sub(ty, None, a, b)?,
            BinaryOp::Mul => self.b.f_mul(ty, None, a, b)?,
            BinaryOp::Div => self.b.f_div(ty, None, a, b)?,
            other => return Err(Error::Internal(format!("{other:?} is not a float operation"))),
        })
    }

    /// `v` sign-extended to the integer type `ty` (`OpSConvert`). Every sign extension
    /// the backend emits is made here, so that on a driver that miscompiles what
    /// follows a 32- to 64-bit one (`Target::hide_sign_extensions`: Mesa 22.3 takes
    /// `cvt.s64.s32` of -5 for a large positive number when it compares it with a
    /// constant, or clamps it with `min`/`max`) the result is ORed with an always-zero
    /// push-constant word: the same bits, no longer known to be a sign extension.
    fn sign_extend(&mut self, ty: Word, v: Word) -> R<Word> {
        let wide = self.b.s_convert(ty, None, v)?;
        if !self.g.hide_sign_extensions || ty != self.ty(Scalar::Int(64)) {
            return Ok(wide);
        }
        let zero = self.push_u32(ptxvk_abi::member::ZERO)?;
        let zero = self.b.u_convert(ty, None, zero)?;
        Ok(self.b.bitwise_or(ty, None, wide, zero)?)
    }

    /// `v` (a float of type `ty`) ORed with the always-zero push-constant word `which`
    /// (`ptxvk_abi::PushConstants::zero`), for [`Self::float_op`].
    fn hidden(&mut self, ty: Word, v: Word, which: u32) -> R<Word> {
        // Asking for the f64 type would declare it (and need `shaderFloat64`), so the
        // width is told from f32's: float operations are f32 or f64.
        let bits = if ty == self.ty(Scalar::Float(32)) { 32 } else { 64 };
        let is = Scalar::Int(bits);
        let it = self.ty(is);
        let zero = self.push_u32(ptxvk_abi::member::ZERO + which)?;
        let zero = if bits == 64 { self.b.u_convert(it, None, zero)? } else { zero };
        let v = self.b.bitcast(it, None, v)?;
        let v = self.b.bitwise_or(it, None, v, zero)?;
        Ok(self.b.bitcast(ty, None, v)?)
    }

    /// The sum `r` of `a` and `c` (or their difference, `sub`) with the sign of a zero
    /// result set as IEEE 754 §6.3 says for round-to-nearest: -0 only when both addends
    /// are -0 (`a` and `-c` for a difference). Decided on the bit patterns: lavapipe
    /// 22.3 folds `x + 0.0` to `x` even under `SignedZeroInfNanPreserve`, which turns
    /// `-0 + 0` into -0; only sums with a constant operand can be folded, so only those
    /// get this repair, and only for a target whose driver was not probed
    /// (`FloatConstants::Repaired`; a probed one is exact, or has its operands hidden).
    fn zero_sign_of_sum(&mut self, sub: bool, ty: OpTy, a: Word, c: Word, r: Word) -> R<Word> {
        let bits = ty.bits();
        let is = Scalar::Int(bits as u8);
        let it = self.ty(is);
        let ft = self.ty(Scalar::of_op(ty));
        let bt = self.ty(Scalar::Bool);
        let sign = 1u64 << (bits - 1);
        let (ab, cb, rb) = (
            self.b.bitcast(it, None, a)?,
            self.b.bitcast(it, None, c)?,
            self.b.bitcast(it, None, r)?,
        );
        let neg_zero = self.konst(is, sign);
        let zero = self.konst(is, 0);
        let magnitude = self.konst(is, sign - 1);
        let r_mag = self.b.bitwise_and(it, None, rb, magnitude)?;
        let r_zero = self.b.i_equal(bt, None, r_mag, zero)?;
        // The second addend of the sum: `c`, or `-c` for a difference.
        let cb = if sub { self.b.bitwise_xor(it, None, cb, neg_zero)? } else { cb };
        let a_neg_zero = self.b.i_equal(bt, None, ab, neg_zero)?;
        let c_neg_zero = self.b.i_equal(bt, None, cb, neg_zero)?;
        let both = self.b.logical_and(bt, None, a_neg_zero, c_neg_zero)?;
        let zero_bits = self.b.select(it, None, both, neg_zero, zero)?;
        let fixed = self.b.select(it, None, r_zero, zero_bits, rb)?;
        Ok(self.b.bitcast(ft, None, fixed)?)
    }

    /// Applies `.ftz` and `.sat` to a float result.
    fn float_result(&mut self, r: Word, ty: OpTy, mode: FloatMode) -> R<Word> {
        let mut r = r;
        if mode.ftz {
            r = self.flush_f32(r)?;
        }
        if mode.sat {
            r = self.saturate(r, ty)?;
        }
        Ok(r)
    }

    /// `.sat`: clamp to [0, 1]; NaN becomes +0 (PTX ISA 9.2 §9.7.3).
    fn saturate(&mut self, v: Word, ty: OpTy) -> R<Word> {
        let s = Scalar::of_op(ty);
        let t = self.ty(s);
        let bt = self.ty(Scalar::Bool);
        let (zero_bits, one_bits) =
            if ty.bits() == 32 { (0u64, 1f32.to_bits() as u64) } else { (0, 1f64.to_bits()) };
        let zero = self.konst(s, zero_bits);
        let one = self.konst(s, one_bits);
        let gt0 = self.b.f_ord_greater_than(bt, None, v, zero)?;
        let low = self.b.select(t, None, gt0, v, zero)?;
        let gt1 = self.b.f_ord_greater_than(bt, None, low, one)?;
        Ok(self.b.select(t, None, gt1, one, low)?)
    }

    /// Flushes an f32 subnormal to a zero of the same sign (`.ftz`), bit-exactly.
    fn flush_f32(&mut self, v: Word) -> R<Word> {
        let i = Scalar::Int(32);
        let it = self.ty(i);
        let ft = self.ty(Scalar::Float(32));
        let bt = self.ty(Scalar::Bool);
        let x = self.b.bitcast(it, None, v)?;
        let abs_mask = self.konst(i, 0x7fff_ffff);
        let mag = self.b.bitwise_and(it, None, x, abs_mask)?;
        let min_normal = self.konst(i, 0x0080_0000);
        let sub = self.b.u_less_than(bt, None, mag, min_normal)?;
        let sign_mask = self.konst(i, 0x8000_0000);
        let sign = self.b.bitwise_and(it, None, x, sign_mask)?;
        let r = self.b.select(it, None, sub, sign, x)?;
        Ok(self.b.bitcast(ft, None, r)?)
    }

    /// Rounds to nearest even, exactly, given `q0`: the bits of a non-negative f32
    /// candidate within one ulp of the result (`+inf` standing for values past
    /// `f32::MAX`). `residual(m)` is an exact f64 whose sign tells whether the true value
    /// lies above (> 0), on (= 0) or below (< 0) the f64 midpoint `m` between two f32
    /// neighbours; past `f32::MAX` the next neighbour is 2^128. Ties go to the even one.
    fn round_by_midpoints(
        &mut self,
        q0: Word,
        residual: impl Fn(&mut Self, Word) -> R<Word>,
    ) -> R<Word> {
        let (s32, s64) = (Scalar::Int(32), Scalar::Float(64));
        let (it, ft, dt) = (self.ty(s32), self.ty(Scalar::Float(32)), self.ty(s64));
        let bt = self.ty(Scalar::Bool);
        let inf_bits = self.konst(s32, f32::INFINITY.to_bits() as u64);
        let (one, zero) = (self.konst(s32, 1), self.konst(s32, 0));
        let as_f64 = |e: &mut Self, bits: Word| -> R<Word> {
            let is_inf = e.b.i_equal(bt, None, bits, inf_bits)?;
            let f = e.b.bitcast(ft, None, bits)?;
            let d = e.b.f_convert(dt, None, f)?;
            let two128 = e.konst(s64, 2f64.powi(128).to_bits());
            Ok(e.b.select(dt, None, is_inf, two128, d)?)
        };
        let up_bits = self.b.i_add(it, None, q0, one)?;
        let down_bits = self.b.i_sub(it, None, q0, one)?;
        let (q0d, upd, downd) =
            (as_f64(self, q0)?, as_f64(self, up_bits)?, as_f64(self, down_bits)?);
        let half = self.konst(s64, 0.5f64.to_bits());
        let zero_d = self.konst(s64, 0);
        let low = self.b.bitwise_and(it, None, q0, one)?;
        let odd_q0 = self.b.i_not_equal(bt, None, low, zero)?;
        // Whether the value lies past the midpoint of `lo` and `hi` (above it for `up`,
        // below it otherwise), a tie counting when q0 is odd; only where `allowed`.
        let step = |e: &mut Self, lo: Word, hi: Word, up: bool, allowed: Word| -> R<Word> {
            let sum = e.exact(BinaryOp::Add, dt, lo, hi)?;
            let m = e.exact(BinaryOp::Mul, dt, sum, half)?;
            let r = residual(e, m)?;
            let past = if up {
                e.b.f_ord_greater_than(bt, None, r, zero_d)?
            } else {
                e.b.f_ord_less_than(bt, None, r, zero_d)?
            };
            let tie = e.b.f_ord_equal(bt, None, r, zero_d)?;
            let tie_moves = e.b.logical_and(bt, None, tie, odd_q0)?;
            let go = e.b.logical_or(bt, None, past, tie_moves)?;
            Ok(e.b.logical_and(bt, None, go, allowed)?)
        };
        let below_inf = self.b.u_less_than(bt, None, q0, inf_bits)?;
        let above_zero = self.b.i_not_equal(bt, None, q0, zero)?;
        let go_up = step(self, q0d, upd, true, below_inf)?;
        let go_down = step(self, downd, q0d, false, above_zero)?;
        let r = self.b.select(it, None, go_up, up_bits, q0)?;
        Ok(self.b.select(it, None, go_down, down_bits, r)?)
    }

    /// `div.rn.f32` exactly: Vulkan's f32 and f64 `OpFDiv` are only 2.5 ulp accurate, so
    /// the f64 quotient rounded to f32 (`q0`) is only a candidate within one ulp of the
    /// result. It is corrected with exact residuals: for a midpoint `m` between two f32
    /// neighbours (exact in f64), `m * |b|` is exact (25 + 24 bits) and the sign of
    /// `|a| - m * |b|` says on which side of `m` the true quotient lies; ties go to the
    /// even neighbour. IEEE special cases (NaN, infinities, zeros) are selected first.
    ///
    /// `div.{rz,rm,rp}.f32`: the round-to-nearest magnitude, then, for a directed
    /// rounding, one ulp down when the exact magnitude lies below it (truncation) or up
    /// when it lies above and the rounding goes away from zero for the result's sign.
    /// The side is the sign of the exact residual `|a| - q|b|` (q·|b| is exact in f64).
    /// An overflow to infinity truncates to the largest finite value the same way.
    fn div_f32(&mut self, a: Word, b: Word, rounding: Rounding) -> R<Word> {
        let (s32, s64) = (Scalar::Int(32), Scalar::Float(64));
        let (it, ft, dt) = (self.ty(s32), self.ty(Scalar::Float(32)), self.ty(s64));
        let bt = self.ty(Scalar::Bool);
        let k = |e: &mut Self, v: u32| e.konst(s32, v as u64);
        let (abs_mask, sign_mask, inf_bits) =
            (k(self, 0x7fff_ffff), k(self, 0x8000_0000), k(self, 0x7f80_0000));
        let ai = self.b.bitcast(it, None, a)?;
        let bi = self.b.bitcast(it, None, b)?;
        let xa = self.b.bitwise_and(it, None, ai, abs_mask)?;
        let xb = self.b.bitwise_and(it, None, bi, abs_mask)?;
        let sx = self.b.bitwise_xor(it, None, ai, bi)?;
        let sign = self.b.bitwise_and(it, None, sx, sign_mask)?;
        // The magnitude of the quotient of the magnitudes, as bits.
        let x = self.b.bitcast(ft, None, xa)?;
        let y = self.b.bitcast(ft, None, xb)?;
        let xd = self.b.f_convert(dt, None, x)?;
        let yd = self.b.f_convert(dt, None, y)?;
        let qd = self.float_op(BinaryOp::Div, dt, xd, yd)?;
        let q0f = self.b.f_convert(ft, None, qd)?;
        let q0 = self.b.bitcast(it, None, q0f)?;
        // sign(|a| - m*|b|), exactly: m*|b| has at most 25 + 24 significant bits.
        let mag = self.round_by_midpoints(q0, |e, m| {
            let p = e.exact(BinaryOp::Mul, dt, m, yd)?;
            e.exact(BinaryOp::Sub, dt, xd, p)
        })?;
        let mag = self.direct_magnitude(mag, sign, rounding, |e, q| {
            let p = e.exact(BinaryOp::Mul, dt, q, yd)?;
            e.exact(BinaryOp::Sub, dt, xd, p)
        })?;
        let z = k(self, 0);
        // Special cases: NaN operands, 0/0 and inf/inf give NaN; x/0 and inf/y give inf;
        // 0/y and x/inf give 0.
        let a_nan = self.b.u_greater_than(bt, None, xa, inf_bits)?;
        let b_nan = self.b.u_greater_than(bt, None, xb, inf_bits)?;
        let a_inf = self.b.i_equal(bt, None, xa, inf_bits)?;
        let b_inf = self.b.i_equal(bt, None, xb, inf_bits)?;
        let a_zero = self.b.i_equal(bt, None, xa, z)?;
        let b_zero = self.b.i_equal(bt, None, xb, z)?;
        let both_zero = self.b.logical_and(bt, None, a_zero, b_zero)?;
        let both_inf = self.b.logical_and(bt, None, a_inf, b_inf)?;
        let nan = self.b.logical_or(bt, None, a_nan, b_nan)?;
        let nan = self.b.logical_or(bt, None, nan, both_zero)?;
        let nan = self.b.logical_or(bt, None, nan, both_inf)?;
        let to_inf = self.b.logical_or(bt, None, a_inf, b_zero)?;
        let to_zero = self.b.logical_or(bt, None, a_zero, b_inf)?;
        let r1 = self.b.select(it, None, to_zero, z, mag)?;
        let r2 = self.b.select(it, None, to_inf, inf_bits, r1)?;
        let signed = self.b.bitwise_or(it, None, r2, sign)?;
        let canonical_nan = k(self, 0x7fff_ffff);
        let bits = self.b.select(it, None, nan, canonical_nan, signed)?;
        Ok(self.b.bitcast(ft, None, bits)?)
    }

    /// `sqrt.rn.f32` exactly: Vulkan's `Sqrt` is not correctly rounded (its precision is
    /// inherited from `InverseSqrt`), so the f64 square root rounded to f32 is a
    /// candidate within one ulp. For the midpoint `m` above or below it (25 significant
    /// bits), `m * m` is exact in f64 and its comparison with `x` says on which side the
    /// true root lies; a midpoint is never exactly a root of an f32, so there are no ties.
    ///
    /// `sqrt.{rz,rm,rp}.f32`: as [`Self::div_f32`], with the residual `x - q·q`.
    fn sqrt_f32(&mut self, x: Word, rounding: Rounding) -> R<Word> {
        let (s32, s64) = (Scalar::Int(32), Scalar::Float(64));
        let (it, ft, dt) = (self.ty(s32), self.ty(Scalar::Float(32)), self.ty(s64));
        let bt = self.ty(Scalar::Bool);
        let xd = self.b.f_convert(dt, None, x)?;
        let rd = self.glsl1(dt, glsl::SQRT, xd)?;
        let q0f = self.b.f_convert(ft, None, rd)?;
        let q0 = self.b.bitcast(it, None, q0f)?;
        // sign(x - m*m), exactly: m*m has at most 50 significant bits. A midpoint is
        // never exactly the root of an f32, so there are no ties.
        let corrected = self.round_by_midpoints(q0, |e, m| {
            let sq = e.exact(BinaryOp::Mul, dt, m, m)?;
            e.exact(BinaryOp::Sub, dt, xd, sq)
        })?;
        let positive = self.konst(s32, 0);
        let corrected = self.direct_magnitude(corrected, positive, rounding, |e, q| {
            let sq = e.exact(BinaryOp::Mul, dt, q, q)?;
            e.exact(BinaryOp::Sub, dt, xd, sq)
        })?;
        // Only positive, finite, non-zero inputs are corrected; the rest (±0, +inf,
        // NaN, negatives → NaN) are selected below.
        let zero = self.konst(Scalar::Float(32), 0);
        let inf = self.konst(Scalar::Float(32), f32::INFINITY.to_bits() as u64);
        let pos = self.b.f_ord_greater_than(bt, None, x, zero)?;
        let fin = self.b.f_ord_less_than(bt, None, x, inf)?;
        let regular = self.b.logical_and(bt, None, pos, fin)?;
        let r = self.b.select(it, None, regular, corrected, q0)?;
        // sqrt(-x) for x > 0 is NaN; sqrt(-0) = -0 (the candidate handles both when the
        // device's f64 sqrt does; make them explicit rather than trust it).
        let neg = self.b.f_ord_less_than(bt, None, x, zero)?;
        let nan = self.konst(s32, 0x7fff_ffff);
        let is_zero = self.b.f_ord_equal(bt, None, x, zero)?;
        let xi = self.b.bitcast(it, None, x)?;
        let r = self.b.select(it, None, neg, nan, r)?;
        let r = self.b.select(it, None, is_zero, xi, r)?;
        Ok(self.b.bitcast(ft, None, r)?)
    }

    /// Applies a directed rounding to `mag`, the bits of a non-negative f32 rounded to
    /// nearest (+inf for overflow) of an exact magnitude `v`; `sign` is the result's
    /// sign bit (0 or 0x8000_0000) and `residual(q)` an exact f64 whose sign is that of
    /// `v - q` for the f64 value `q` of `mag`.
    fn direct_magnitude(
        &mut self,
        mag: Word,
        sign: Word,
        rounding: Rounding,
        residual: impl Fn(&mut Self, Word) -> R<Word>,
    ) -> R<Word> {
        if matches!(rounding, Rounding::Nearest | Rounding::NearestAway) {
            return Ok(mag);
        }
        let s32 = Scalar::Int(32);
        let (it, ft, dt) = (self.ty(s32), self.ty(Scalar::Float(32)), self.ty(Scalar::Float(64)));
        let bt = self.ty(Scalar::Bool);
        let qf = self.b.bitcast(ft, None, mag)?;
        let qd = self.b.f_convert(dt, None, qf)?;
        let res = residual(self, qd)?;
        let zero = self.konst(Scalar::Float(64), 0);
        let below = self.b.f_ord_less_than(bt, None, res, zero)?;
        let above = self.b.f_ord_greater_than(bt, None, res, zero)?;
        let izero = self.konst(s32, 0);
        let negative = self.b.i_not_equal(bt, None, sign, izero)?;
        let away = match rounding {
            Rounding::Up => self.b.logical_not(bt, None, negative)?,
            Rounding::Down => negative,
            _ => self.b.constant_false(bt),
        };
        let one = self.konst(s32, 1);
        let down = self.b.i_sub(it, None, mag, one)?;
        let up = self.b.i_add(it, None, mag, one)?;
        // Toward zero when the exact value is below (whatever the direction, the
        // magnitude never rounds past it); away from zero only when asked and above.
        let toward = self.b.logical_not(bt, None, away)?;
        let trunc = self.b.logical_and(bt, None, toward, below)?;
        let grow = self.b.logical_and(bt, None, away, above)?;
        let r = self.b.select(it, None, trunc, down, mag)?;
        Ok(self.b.select(it, None, grow, up, r)?)
    }

    /// `fma.rn.f32` exactly, without trusting the device's fma (Vulkan allows an unfused
    /// `Fma`): the product of two f32 is exact in f64; the f64 sum is rounded to odd
    /// using its exact error (TwoSum), and rounding that to f32 is then correctly
    /// rounded (round-to-odd with 53 ≥ 24 + 2 bits; Boldo & Melquiond 2008).
    fn fma_f32(&mut self, a: Word, b: Word, c: Word) -> R<Word> {
        let dt = self.ty(Scalar::Float(64));
        let ft = self.ty(Scalar::Float(32));
        let ad = self.b.f_convert(dt, None, a)?;
        let bd = self.b.f_convert(dt, None, b)?;
        let cd = self.b.f_convert(dt, None, c)?;
        let p = self.exact(BinaryOp::Mul, dt, ad, bd)?;
        let odd = self.odd_sum(p, cd)?;
        Ok(self.b.f_convert(ft, None, odd)?)
    }

    /// `p + c` for f64 `p` and `c`, rounded to odd: the round-to-nearest sum, stepped one
    /// ulp toward the exact value when it is inexact and its last mantissa bit is even.
    /// The error is exact (TwoSum, which needs round-to-nearest f64 addition, as Vulkan
    /// guarantees for `OpFAdd`).
    fn odd_sum(&mut self, p: Word, c: Word) -> R<Word> {
        let f64s = Scalar::Float(64);
        let dt = self.ty(f64s);
        let bt = self.ty(Scalar::Bool);
        let i64s = Scalar::Int(64);
        let it = self.ty(i64s);
        let s = self.exact(BinaryOp::Add, dt, p, c)?;
        // A constant addend (an fma's `+ 0.0`) may be folded away by a driver that was
        // not probed.
        let s = if self.g.float_constants == FloatConstants::Repaired {
            self.zero_sign_of_sum(false, OpTy::F(64), p, c, s)?
        } else {
            s
        };
        // TwoSum(p, c): err = (p - (s - bb)) + (c - bb), bb = s - p.
        let bb = self.exact(BinaryOp::Sub, dt, s, p)?;
        let sbb = self.exact(BinaryOp::Sub, dt, s, bb)?;
        let e1 = self.exact(BinaryOp::Sub, dt, p, sbb)?;
        let e2 = self.exact(BinaryOp::Sub, dt, c, bb)?;
        let err = self.exact(BinaryOp::Add, dt, e1, e2)?;
        let zero = self.konst(f64s, 0);
        let inexact = self.b.f_ord_not_equal(bt, None, err, zero)?;
        let sbits = self.b.bitcast(it, None, s)?;
        let one = self.konst(i64s, 1);
        let low = self.b.bitwise_and(it, None, sbits, one)?;
        let izero = self.konst(i64s, 0);
        let even = self.b.i_equal(bt, None, low, izero)?;
        let adjust = self.b.logical_and(bt, None, inexact, even)?;
        // Moving toward err: away from zero when err has the sign of s (bits + 1),
        // else toward zero (bits - 1). s ≠ 0 whenever err ≠ 0.
        let s_neg = self.b.f_ord_less_than(bt, None, s, zero)?;
        let e_neg = self.b.f_ord_less_than(bt, None, err, zero)?;
        let same = self.b.logical_equal(bt, None, s_neg, e_neg)?;
        let up = self.b.i_add(it, None, sbits, one)?;
        let down = self.b.i_sub(it, None, sbits, one)?;
        let stepped = self.b.select(it, None, same, up, down)?;
        let odd_bits = self.b.select(it, None, adjust, stepped, sbits)?;
        Ok(self.b.bitcast(dt, None, odd_bits)?)
    }

    fn compare(&mut self, cmp: CmpOp, ty: OpTy, a: Word, c: Word) -> R<Word> {
        let bt = self.ty(Scalar::Bool);
        let b = &mut *self.b;
        if ty.is_float() {
            return Ok(match cmp {
                CmpOp::Eq => b.f_ord_equal(bt, None, a, c)?,
                CmpOp::Ne => b.f_ord_not_equal(bt, None, a, c)?,
                CmpOp::Lt => b.f_ord_less_than(bt, None, a, c)?,
                CmpOp::Le => b.f_ord_less_than_equal(bt, None, a, c)?,
                CmpOp::Gt => b.f_ord_greater_than(bt, None, a, c)?,
                CmpOp::Ge => b.f_ord_greater_than_equal(bt, None, a, c)?,
                CmpOp::Equ => b.f_unord_equal(bt, None, a, c)?,
                CmpOp::Neu => b.f_unord_not_equal(bt, None, a, c)?,
                CmpOp::Ltu => b.f_unord_less_than(bt, None, a, c)?,
                CmpOp::Leu => b.f_unord_less_than_equal(bt, None, a, c)?,
                CmpOp::Gtu => b.f_unord_greater_than(bt, None, a, c)?,
                CmpOp::Geu => b.f_unord_greater_than_equal(bt, None, a, c)?,
                CmpOp::Num | CmpOp::Nan => {
                    let na = b.is_nan(bt, None, a)?;
                    let nc = b.is_nan(bt, None, c)?;
                    let any = b.logical_or(bt, None, na, nc)?;
                    if cmp == CmpOp::Nan {
                        any
                    } else {
                        b.logical_not(bt, None, any)?
                    }
                }
            });
        }
        let s = ty.is_signed();
        Ok(match cmp {
            CmpOp::Eq => b.i_equal(bt, None, a, c)?,
            CmpOp::Ne => b.i_not_equal(bt, None, a, c)?,
            CmpOp::Lt if s => b.s_less_than(bt, None, a, c)?,
            CmpOp::Lt => b.u_less_than(bt, None, a, c)?,
            CmpOp::Le if s => b.s_less_than_equal(bt, None, a, c)?,
            CmpOp::Le => b.u_less_than_equal(bt, None, a, c)?,
            CmpOp::Gt if s => b.s_greater_than(bt, None, a, c)?,
            CmpOp::Gt => b.u_greater_than(bt, None, a, c)?,
            CmpOp::Ge if s => b.s_greater_than_equal(bt, None, a, c)?,
            CmpOp::Ge => b.u_greater_than_equal(bt, None, a, c)?,
            other => return Err(Error::Internal(format!("integer comparison {other:?}"))),
        })
    }

    fn convert(
        &mut self,
        to: OpTy,
        from: OpTy,
        rounding: Option<Rounding>,
        mode: FloatMode,
        v: Word,
    ) -> R<Word> {
        let ts = Scalar::of_op(to);
        let tt = self.ty(ts);
        let bt = self.ty(Scalar::Bool);
        let v = if mode.ftz && from == OpTy::F(32) { self.flush_f32(v)? } else { v };
        let r = match (from.is_float(), to.is_float()) {
            (false, false) => {
                if mode.sat {
                    self.int_saturate(to, from, v)?
                } else if to.bits() == from.bits() {
                    v
                } else if to.bits() < from.bits() {
                    self.b.u_convert(tt, None, v)?
                } else if from.is_signed() {
                    self.sign_extend(tt, v)?
                } else {
                    self.b.u_convert(tt, None, v)?
                }
            }
            (false, true) => {
                // Correctly rounded to nearest even (Vulkan: conversions are exact or
                // correctly rounded).
                if from.is_signed() {
                    self.b.convert_s_to_f(tt, None, v)?
                } else {
                    self.b.convert_u_to_f(tt, None, v)?
                }
            }
            (true, true) => {
                let r = if to == from {
                    // Same size: round to an integral value, or only `.ftz`/`.sat` below.
                    match rounding {
                        Some(r) => self.round_integral(v, from, r)?,
                        None => v,
                    }
                } else {
                    self.b.f_convert(tt, None, v)?
                };
                if to.bits() > from.bits() {
                    // Widening is exact; PTX keeps NaN payloads quieted the same way.
                    self.b.decorate(r, Decoration::NoContraction, []);
                }
                r
            }
            (true, false) => {
                // PTX float→int: round, then saturate to the destination range; NaN → 0
                // (PTX ISA 9.2 §9.7.9.21).
                let fs = Scalar::of_op(from);
                let ft = self.ty(fs);
                let r = self.round_integral(v, from, rounding.unwrap_or(Rounding::Zero))?;
                let (lo, hi) = int_range(to);
                let bits = to.bits();
                let fbits = |x: f64| {
                    if from.bits() == 32 {
                        (x as f32).to_bits() as u64
                    } else {
                        x.to_bits()
                    }
                };
                // `hi_f` is 2^bits or 2^(bits-1): the first value above the range.
                let hi_f = self.konst(fs, fbits(hi as f64 + 1.0));
                let lo_f = self.konst(fs, fbits(lo as f64));
                let too_big = self.b.f_ord_greater_than_equal(bt, None, r, hi_f)?;
                let too_small = self.b.f_ord_less_than(bt, None, r, lo_f)?;
                let nan = self.b.is_nan(bt, None, r)?;
                let zero_f = self.konst(fs, 0);
                let safe = self.b.logical_or(bt, None, too_big, too_small)?;
                let safe = self.b.logical_or(bt, None, safe, nan)?;
                let in_range = self.b.select(ft, None, safe, zero_f, r)?;
                let conv = if to.is_signed() {
                    self.b.convert_f_to_s(tt, None, in_range)?
                } else {
                    self.b.convert_f_to_u(tt, None, in_range)?
                };
                let mask =
                    |x: i128| (x as u64) & if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
                let hi_k = self.konst(ts, mask(hi));
                let lo_k = self.konst(ts, mask(lo));
                // NaN: 0, unless the source is .f64 or the destination 64-bit; then
                // 1 << (bits - 1) (PTX ISA 9.2 §9.7.9.21, integer notes).
                let nan_value =
                    if from.bits() == 64 || bits == 64 { 1u64 << (bits - 1) } else { 0 };
                let nan_k = self.konst(ts, nan_value);
                let r1 = self.b.select(tt, None, too_big, hi_k, conv)?;
                let r2 = self.b.select(tt, None, too_small, lo_k, r1)?;
                self.b.select(tt, None, nan, nan_k, r2)?
            }
        };
        if to.is_float() {
            return self.float_result(
                r,
                to,
                FloatMode { ftz: mode.ftz && to == OpTy::F(32), ..mode },
            );
        }
        Ok(r)
    }

    /// Rounds a float to an integral value of the same type. GLSL.std.450 `RoundEven` and
    /// `Trunc` are exact per the Vulkan spec, but Mesa's lavapipe (22.3) computes them
    /// wrongly for f64, so for f64 they are built from `Floor`, exactly, for every input
    /// (±0, halves, |x| ≥ 2^52, infinities, NaN).
    fn round_integral(&mut self, v: Word, ty: OpTy, r: Rounding) -> R<Word> {
        let s = Scalar::of_op(ty);
        let t = self.ty(s);
        if r == Rounding::NearestAway {
            return Err(Error::Internal("`.rna` rounding to an integral value".into()));
        }
        if ty.bits() != 64 || matches!(r, Rounding::Down | Rounding::Up) {
            let op = match r {
                Rounding::Nearest | Rounding::NearestAway => glsl::ROUND_EVEN,
                Rounding::Zero => glsl::TRUNC,
                Rounding::Down => glsl::FLOOR,
                Rounding::Up => glsl::CEIL,
            };
            return self.glsl1(t, op, v);
        }
        let bt = self.ty(Scalar::Bool);
        if r == Rounding::Zero {
            // trunc(x) = x < 0 ? -floor(-x) : floor(x); floor keeps -0.0 and NaN.
            let zero = self.konst(s, 0);
            let neg = self.b.f_ord_less_than(bt, None, v, zero)?;
            let nv = self.b.f_negate(t, None, v)?;
            let fl_n = self.glsl1(t, glsl::FLOOR, nv)?;
            let up = self.b.f_negate(t, None, fl_n)?;
            let down = self.glsl1(t, glsl::FLOOR, v)?;
            return Ok(self.b.select(t, None, neg, up, down)?);
        }
        // Round half to even: f = floor(x), d = x - f (exact), step up when d > 1/2 or
        // d = 1/2 and f is odd; the result keeps x's sign (so -0.3 gives -0.0).
        let f = self.glsl1(t, glsl::FLOOR, v)?;
        let d = self.exact(BinaryOp::Sub, t, v, f)?;
        let half = self.konst(s, 0.5f64.to_bits());
        let one = self.konst(s, 1f64.to_bits());
        let above = self.b.f_ord_greater_than(bt, None, d, half)?;
        let tie = self.b.f_ord_equal(bt, None, d, half)?;
        let fh = self.exact(BinaryOp::Mul, t, f, half)?;
        let fh_floor = self.glsl1(t, glsl::FLOOR, fh)?;
        let odd = self.b.f_ord_not_equal(bt, None, fh_floor, fh)?;
        let tie_odd = self.b.logical_and(bt, None, tie, odd)?;
        let step = self.b.logical_or(bt, None, above, tie_odd)?;
        let f1 = self.exact(BinaryOp::Add, t, f, one)?;
        let rounded = self.b.select(t, None, step, f1, f)?;
        // copysign(rounded, x)
        let i = Scalar::Int(64);
        let it = self.ty(i);
        let sign = self.konst(i, 1 << 63);
        let mag = self.konst(i, !(1u64 << 63));
        let ri = self.b.bitcast(it, None, rounded)?;
        let xi = self.b.bitcast(it, None, v)?;
        let rm = self.b.bitwise_and(it, None, ri, mag)?;
        let xs = self.b.bitwise_and(it, None, xi, sign)?;
        let bits = self.b.bitwise_or(it, None, rm, xs)?;
        Ok(self.b.bitcast(t, None, bits)?)
    }

    /// A one-operand GLSL.std.450 instruction.
    fn glsl1(&mut self, ty: Word, op: u32, x: Word) -> R<Word> {
        Ok(self.b.ext_inst(ty, None, self.g.glsl, op, [Operand::IdRef(x)])?)
    }

    /// `cvt.sat` between integer types: clamp to the destination's range. The clamp
    /// happens at the source width (the bounds `[max(dst.min, src.min), min(dst.max,
    /// src.max)]` always fit the source type), then the value is extended or truncated.
    /// Besides avoiding 64-bit compares, this sidesteps a lavapipe (Mesa 22.3) bug that
    /// miscompiles a signed compare of a sign-extended value against a constant.
    fn int_saturate(&mut self, to: OpTy, from: OpTy, v: Word) -> R<Word> {
        let fs = Scalar::of_op(from);
        let ft = self.ty(fs);
        let bt = self.ty(Scalar::Bool);
        let (dlo, dhi) = int_range(to);
        let (slo, shi) = int_range(from);
        let (lo, hi) = (dlo.max(slo), dhi.min(shi));
        let width_mask = if from.bits() == 64 { u64::MAX } else { (1u64 << from.bits()) - 1 };
        let mut r = v;
        if hi < shi {
            let hk = self.konst(fs, hi as u64 & width_mask);
            let above = if from.is_signed() {
                self.b.s_greater_than(bt, None, r, hk)?
            } else {
                self.b.u_greater_than(bt, None, r, hk)?
            };
            r = self.b.select(ft, None, above, hk, r)?;
        }
        if lo > slo {
            // Only a signed source can lie below the destination's minimum.
            let lk = self.konst(fs, lo as u64 & width_mask);
            let below = self.b.s_less_than(bt, None, r, lk)?;
            r = self.b.select(ft, None, below, lk, r)?;
        }
        let tt = self.ty(Scalar::of_op(to));
        Ok(match to.bits().cmp(&from.bits()) {
            std::cmp::Ordering::Equal => r,
            std::cmp::Ordering::Less => self.b.u_convert(tt, None, r)?,
            // The clamped value is in the destination's range, so extending by the
            // source's signedness keeps it.
            std::cmp::Ordering::Greater if from.is_signed() => self.sign_extend(tt, r)?,
            std::cmp::Ordering::Greater => self.b.u_convert(tt, None, r)?,
        })
    }

    // ----- memory --------------------------------------------------------------------

    /// The 64-bit address `addr + extra` for global and parameter accesses.
    fn address64(&mut self, space: Space, addr: &Address, extra: i64) -> R<Word> {
        let s64 = Scalar::Int(64);
        let t64 = self.ty(s64);
        if self.k.address_size == 32 && space == Space::Global {
            if let Some(a) = self.window_address(addr, extra)? {
                return Ok(a);
            }
        }
        let base = match (space, addr.base) {
            (Space::Param, _) => Some(self.push_member(ptxvk_abi::member::PARAM_ADDRESS, s64)?),
            (_, Some(r)) => {
                let (v, have) = self.load_reg(r)?;
                Some(if have.bits() == 32 { self.b.u_convert(t64, None, v)? } else { v })
            }
            (_, None) => None,
        };
        let off = addr.offset.wrapping_add(extra) as u64;
        let k = self.konst(s64, off);
        Ok(match base {
            Some(b) if off != 0 => self.b.i_add(t64, None, b, k)?,
            Some(b) => b,
            None => k,
        })
    }

    /// A global address of a module with 32-bit addresses (`Kernel::address_size`): the
    /// 32-bit offset `addr + extra`, wrapping as PTX's 32-bit arithmetic does, plus the
    /// address window's base. `None` for an address in a 64-bit register (the module
    /// data's, which sema forms from its 64-bit device address).
    fn window_address(&mut self, addr: &Address, extra: i64) -> R<Option<Word>> {
        if addr.base.is_some_and(|r| self.k.reg(r).ty.bits() != 32) {
            return Ok(None);
        }
        let (s32, s64) = (Scalar::Int(32), Scalar::Int(64));
        let (t32, t64) = (self.ty(s32), self.ty(s64));
        let off = self.konst(s32, addr.offset.wrapping_add(extra) as u64 & 0xffff_ffff);
        let offset = match addr.base {
            None => off,
            Some(r) => {
                let (v, _) = self.load_reg(r)?;
                self.b.i_add(t32, None, v, off)?
            }
        };
        let wide = self.b.u_convert(t64, None, offset)?;
        let base = self.push_member(ptxvk_abi::member::WINDOW_BASE, s64)?;
        Ok(Some(self.b.i_add(t64, None, base, wide)?))
    }

    /// The 32-bit byte offset `addr + extra` into the shared window.
    fn address32(&mut self, addr: &Address, extra: i64) -> R<Word> {
        let s32 = Scalar::Int(32);
        let t32 = self.ty(s32);
        let off = self.konst(s32, addr.offset.wrapping_add(extra) as u64);
        match addr.base {
            None => Ok(off),
            Some(r) => {
                let (v, have) = self.load_reg(r)?;
                let v = if have.bits() == 64 { self.b.u_convert(t32, None, v)? } else { v };
                Ok(self.b.i_add(t32, None, v, off)?)
            }
        }
    }

    fn psb_pointer(&mut self, ty: OpTy, address: Word) -> R<(Word, Word)> {
        let s = Scalar::of_op(ty);
        match ty.bits() {
            8 => self.t.used.storage8 = true,
            16 => self.t.used.storage16 = true,
            _ => {}
        }
        let vt = self.ty(s);
        let pt = self.t.pointer(self.b, StorageClass::PhysicalStorageBuffer, vt);
        Ok((self.b.convert_u_to_ptr(pt, None, address)?, vt))
    }

    fn load_mem(&mut self, space: Space, ty: OpTy, addr: &Address, extra: i64) -> R<Word> {
        if matches!(space, Space::Shared | Space::Local) {
            return self.load_window(space, ty, addr, extra);
        }
        let a = self.address64(space, addr, extra)?;
        let (p, vt) = self.psb_pointer(ty, a)?;
        let align = ty.bits() / 8;
        Ok(self.b.load(vt, None, p, Some(MemoryAccess::ALIGNED), [Operand::LiteralBit32(align)])?)
    }

    fn store_mem(&mut self, space: Space, ty: OpTy, addr: &Address, extra: i64, v: Word) -> R<()> {
        if matches!(space, Space::Shared | Space::Local) {
            return self.store_window(space, ty, addr, extra, v);
        }
        let a = self.address64(space, addr, extra)?;
        let (p, _) = self.psb_pointer(ty, a)?;
        let align = ty.bits() / 8;
        self.b.store(p, v, Some(MemoryAccess::ALIGNED), [Operand::LiteralBit32(align)])?;
        Ok(())
    }

    /// Pointer to 32-bit word `index` of the shared or local window.
    fn window_word(&mut self, space: Space, index: Word) -> R<Word> {
        if space == Space::Shared {
            return self.shared_word(index);
        }
        let u32t = self.ty(Scalar::Int(32));
        let pt = self.t.pointer(self.b, StorageClass::Function, u32t);
        let Some(local) = self.local else {
            return Err(Error::Internal("local access without a local window".into()));
        };
        // Out-of-range local addresses are undefined in PTX; clamped here, they stay
        // inside the thread's own array instead of reaching other memory.
        let bt = self.ty(Scalar::Bool);
        let last = self.konst(Scalar::Int(32), u64::from(self.k.local_bytes.div_ceil(4) - 1));
        let over = self.b.u_greater_than(bt, None, index, last)?;
        let index = self.b.select(u32t, None, over, last, index)?;
        Ok(self.b.access_chain(pt, None, local, [index])?)
    }

    /// Pointer to 32-bit word `index` of the shared window.
    fn shared_word(&mut self, index: Word) -> R<Word> {
        self.shared_element(SharedWord::U32, index)
    }

    /// Pointer to element `index` of the kernel's shared window, whose elements must be
    /// `word`.
    fn shared_element(&mut self, word: SharedWord, index: Word) -> R<Word> {
        let elem = self.ty(Scalar::Int(word.bits() as u8));
        let pt = self.t.pointer(self.b, StorageClass::Workgroup, elem);
        let window = self.g.shared_window(word).filter(|_| self.k.shared.word == word);
        let Some(shared) = window else {
            return Err(Error::Internal(format!(
                "a {}-bit shared element in a window of {}-bit elements",
                word.bits(),
                self.k.shared.word.bits()
            )));
        };
        // Out-of-range shared addresses are undefined in PTX; clamped here, they stay
        // inside the block's window instead of reaching other memory (lavapipe keeps
        // workgroup memory on the host's heap, which a wild store would corrupt).
        let (bt, u32t) = (self.ty(Scalar::Bool), self.ty(Scalar::Int(32)));
        let over = self.b.u_greater_than(bt, None, index, shared.last)?;
        let index = self.b.select(u32t, None, over, shared.last, index)?;
        Ok(self.b.access_chain(pt, None, shared.var, [index])?)
    }

    /// Pointer to the 64-bit word of a wide shared window (`SharedLayout::wide`) that
    /// holds byte `byte`.
    pub(super) fn shared_wide_word(&mut self, byte: Word) -> R<Word> {
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let three = self.konst(s32, 3);
        let index = self.b.shift_right_logical(u32t, None, byte, three)?;
        self.shared_element(SharedWord::U64, index)
    }

    /// The bit position of byte `byte` in its 64-bit word.
    fn wide_shift(&mut self, byte: Word) -> R<Word> {
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let seven = self.konst(s32, 7);
        let three = self.konst(s32, 3);
        let lane = self.b.bitwise_and(u32t, None, byte, seven)?;
        Ok(self.b.shift_left_logical(u32t, None, lane, three)?)
    }

    /// A load of one 64-bit word of a wide shared window.
    fn load_wide(&mut self, ty: OpTy, byte: Word) -> R<Word> {
        let s64 = Scalar::Int(64);
        let u64t = self.ty(s64);
        if ty.bits() != 64 {
            return Err(Error::Internal("a wide-window load that is not one word".into()));
        }
        let p = self.shared_wide_word(byte)?;
        let w = self.b.load(u64t, None, p, None, [])?;
        self.coerce(w, s64, Scalar::of_op(ty))
    }

    /// A store of `ty` into a wide shared window. A narrower element must not disturb
    /// the rest of its word, which other threads may write concurrently: its bits are
    /// cleared and set with two 64-bit atomics.
    fn store_wide(&mut self, ty: OpTy, byte: Word, v: Word) -> R<()> {
        let s64 = Scalar::Int(64);
        let u64t = self.ty(s64);
        let have = Scalar::of_op(ty);
        let p = self.shared_wide_word(byte)?;
        if ty.bits() == 64 {
            let x = self.coerce(v, have, s64)?;
            self.b.store(p, x, None, [])?;
            return Ok(());
        }
        let narrow = Scalar::Int(ty.bits() as u8);
        let n = self.coerce(v, have, narrow)?;
        let w = self.b.u_convert(u64t, None, n)?;
        let sh = self.wide_shift(byte)?;
        let ones = self.konst(s64, u64::MAX >> (64 - ty.bits()));
        let mask = self.b.shift_left_logical(u64t, None, ones, sh)?;
        let not_mask = self.b.not(u64t, None, mask)?;
        let val = self.b.shift_left_logical(u64t, None, w, sh)?;
        self.t.used.int64_atomics = true;
        let scope = self.t.u32(self.b, SCOPE_WORKGROUP);
        let sem = self.t.u32(self.b, 0);
        self.b.atomic_and(u64t, None, p, scope, sem, not_mask)?;
        self.b.atomic_or(u64t, None, p, scope, sem, val)?;
        Ok(())
    }

    /// The element of `space`'s window: the shared window's own, 32-bit words for the
    /// local window.
    fn window_word_of(&self, space: Space) -> SharedWord {
        if space == Space::Shared {
            self.k.shared.word
        } else {
            SharedWord::U32
        }
    }

    /// The index of the element holding byte `byte` of a window of `word`s, whose
    /// access must be of the element's width.
    fn window_index(&mut self, word: SharedWord, ty: OpTy, byte: Word) -> R<Word> {
        if ty.bits() != word.bits() {
            return Err(Error::Internal("a window access that is not one element".into()));
        }
        let s32 = Scalar::Int(32);
        let u32t = self.ty(s32);
        let shift = (word.bits() / 8).trailing_zeros();
        if shift == 0 {
            return Ok(byte);
        }
        let shift = self.konst(s32, u64::from(shift));
        Ok(self.b.shift_right_logical(u32t, None, byte, shift)?)
    }

    /// Pointer to element `index` of `space`'s window.
    fn window_element(&mut self, space: Space, word: SharedWord, index: Word) -> R<Word> {
        if space == Space::Shared {
            self.shared_element(word, index)
        } else {
            self.window_word(space, index)
        }
    }

    /// A load of one window element (`pass::legalize_memory` makes every window
    /// access one).
    fn load_window(&mut self, space: Space, ty: OpTy, addr: &Address, extra: i64) -> R<Word> {
        let byte = self.address32(addr, extra)?;
        let word = self.window_word_of(space);
        if word == SharedWord::U64 {
            return self.load_wide(ty, byte);
        }
        let idx = self.window_index(word, ty, byte)?;
        let p = self.window_element(space, word, idx)?;
        let elem = Scalar::Int(word.bits() as u8);
        let elem_ty = self.ty(elem);
        let w = self.b.load(elem_ty, None, p, None, [])?;
        self.coerce(w, elem, Scalar::of_op(ty))
    }

    /// A store of one window element (`pass::legalize_memory` makes every window
    /// access one).
    fn store_window(
        &mut self,
        space: Space,
        ty: OpTy,
        addr: &Address,
        extra: i64,
        v: Word,
    ) -> R<()> {
        let byte = self.address32(addr, extra)?;
        let word = self.window_word_of(space);
        if word == SharedWord::U64 {
            return self.store_wide(ty, byte, v);
        }
        let idx = self.window_index(word, ty, byte)?;
        let w = self.coerce(v, Scalar::of_op(ty), Scalar::Int(word.bits() as u8))?;
        let p = self.window_element(space, word, idx)?;
        self.b.store(p, w, None, [])?;
        Ok(())
    }
}

/// The inclusive value range of an integer type, as i128.
fn int_range(t: OpTy) -> (i128, i128) {
    let bits = t.bits();
    if t.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}
