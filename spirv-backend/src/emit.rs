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

type R<T> = Result<T, Error>;

mod arith;
mod atomic;
mod convert;
mod math;
mod memory;
pub(crate) mod routines;
mod sync;

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
    pub const INVERSE_SQRT: u32 = 32;
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
    /// In an emulation routine ([`Self::routine`]): the register it returns.
    returns: Option<RegId>,
    /// In a routine: the values of its registers that are SSA values ([`Self::ssa`]), as
    /// SSA ids, in place of variables.
    values: Option<Vec<Option<Word>>>,
    /// In a routine: which registers are SSA values ([`ssa_registers`]): every one of a
    /// routine that is one block writing each register once, before any read (as
    /// `ptxvk_lower::routines` builds most).
    ssa: Vec<bool>,
}

impl<'a> FnEmitter<'a> {
    pub fn new(b: &'a mut Builder, t: &'a mut TypeCache, g: &'a Globals, k: &'a Kernel) -> Self {
        FnEmitter {
            b,
            t,
            g,
            k,
            vars: Vec::new(),
            local: None,
            loops: Vec::new(),
            returns: None,
            values: None,
            ssa: Vec::new(),
        }
    }

    /// Emits the kernel function and returns its id.
    pub fn function(&mut self, body: &[Node]) -> R<Word> {
        let void = self.b.type_void();
        let fn_ty = self.b.type_function(void, vec![]);
        let f = self.b.begin_function(void, None, FunctionControl::NONE, fn_ty)?;
        self.b.name(f, self.k.name.clone());
        self.b.begin_block(None)?;
        self.declare_regs();
        let terminated = self.nodes(body)?;
        if !terminated {
            self.b.ret()?;
        }
        self.b.end_function()?;
        Ok(f)
    }

    /// Emits an emulation routine (`self.k` its [`Function::shell`]) as the function
    /// `id`: its parameters stored into their registers, its structured body, its one
    /// return register returned.
    pub fn routine(&mut self, f: &Function, id: Word) -> R<()> {
        let scalar = |(_, ty): &(RegId, OpTy)| Scalar::of_op(*ty);
        let (Some(ret), None) = (f.returns.first(), f.returns.get(1)) else {
            return Err(Error::Internal(format!("routine {} returns one value", f.name)));
        };
        let result = self.ty(scalar(ret));
        let params: Vec<Word> = f.params.iter().map(|p| self.ty(scalar(p))).collect();
        let fn_ty = self.b.type_function(result, params.clone());
        self.b.begin_function(result, Some(id), FunctionControl::NONE, fn_ty)?;
        self.b.name(id, f.name.clone());
        let args = params
            .iter()
            .map(|&pt| self.b.function_parameter(pt))
            .collect::<Result<Vec<_>, _>>()?;
        self.b.begin_block(None)?;
        self.returns = Some(ret.0);
        self.ssa = ssa_registers(f);
        self.values = Some(vec![None; f.regs.len()]);
        self.declare_regs();
        for (&(r, ty), arg) in f.params.iter().zip(args) {
            self.write(r, arg, Scalar::of_op(ty), false)?;
        }
        if !self.nodes(&f.body)? {
            self.ret()?;
        }
        self.b.end_function()?;
        Ok(())
    }

    /// Returns from the function: a routine its return register's value.
    fn ret(&mut self) -> R<()> {
        match self.returns {
            Some(r) => {
                let (v, _) = self.load_reg(r)?;
                self.b.ret_value(v)?;
            }
            None => self.b.ret()?,
        }
        Ok(())
    }

    /// A `Function` variable per register, and the local window's.
    /// A variable for each register but the SSA values of a routine ([`Self::ssa`]).
    fn declare_regs(&mut self) {
        for (i, r) in self.k.regs.iter().enumerate() {
            if self.ssa.get(i).copied().unwrap_or(false) {
                self.vars.push(0);
                continue;
            }
            let ty = self.t.scalar(self.b, Scalar::of_reg(r.ty));
            let ptr = self.t.pointer(self.b, StorageClass::Function, ty);
            let v = self.b.variable(ptr, None, StorageClass::Function, None);
            // PTX register names in the disassembly (`--emit spvasm`) and in driver tools,
            // a temporary's as the text's (`$t` and its index; a routine's are all
            // temporaries: none).
            if self.returns.is_none() {
                let name = if r.name.is_empty() { format!("$t{i}") } else { r.name.clone() };
                self.b.name(v, name);
            }
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
    }

    // ----- structured control flow -----------------------------------------------------

    /// Emits `nodes` into the current block; returns whether control left the sequence
    /// (the current block is terminated).
    fn nodes(&mut self, nodes: &[Node]) -> R<bool> {
        for n in nodes {
            match n {
                Node::Code(bid) => self.insts(&self.k.blocks[bid.index()].insts)?,
                Node::Return => {
                    self.ret()?;
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
        if let Some(values) = self.values.as_ref().filter(|_| self.is_ssa(r)) {
            let v = values.get(r.index()).copied().flatten();
            let v = v.ok_or_else(|| Error::Internal(format!("routine reads {r:?} unset")))?;
            return Ok((v, s));
        }
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
        if self.is_ssa(r) {
            if let Some(values) = &mut self.values {
                values[r.index()] = Some(v);
                return Ok(());
            }
        }
        self.b.store(self.vars[r.index()], v, None, [])?;
        Ok(())
    }

    /// Whether register `r` is an SSA value of the routine being emitted.
    fn is_ssa(&self, r: RegId) -> bool {
        self.ssa.get(r.index()).copied().unwrap_or(false)
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

    /// The instructions `insts`, one by one.
    fn insts(&mut self, insts: &[Inst]) -> R<()> {
        for inst in insts {
            self.inst(inst).map_err(|e| e.at(inst.span))?;
        }
        Ok(())
    }

    fn inst(&mut self, inst: &Inst) -> R<()> {
        if let Some(what) = ptxvk_lower::pass::leftover(self.k, &inst.kind) {
            return Err(Error::Internal(format!("{what}, for the emitter")));
        }
        match &inst.kind {
            InstKind::Mov { .. }
            | InstKind::Pack { .. }
            | InstKind::Unpack { .. }
            | InstKind::Special { .. }
            | InstKind::Select { .. }
            | InstKind::PredLogic { .. }
            | InstKind::PredNot { .. } => self.data_inst(&inst.kind),
            InstKind::Unary { .. } | InstKind::Fma { .. } | InstKind::Convert { .. } => {
                self.math_inst(&inst.kind)
            }
            InstKind::RoundToOdd { .. } => {
                Err(Error::Internal("a RoundToOdd left by pass::emulate".into()))
            }
            InstKind::Narrow { .. } | InstKind::IntToFloat { .. } | InstKind::Widen { .. } => {
                Err(Error::Internal("a narrow conversion left by pass::emulate".into()))
            }
            InstKind::Binary { .. }
            | InstKind::Mad { .. }
            | InstKind::Bfe { .. }
            | InstKind::Bfi { .. }
            | InstKind::Setp { .. } => self.arith_inst(&inst.kind),
            InstKind::Load { .. }
            | InstKind::Store { .. }
            | InstKind::Atomic { .. }
            | InstKind::Fence { .. } => self.memory_inst(&inst.kind),
            InstKind::LoopCount { .. }
            | InstKind::Subgroup { .. }
            | InstKind::WarpBarrier { .. }
            | InstKind::Barrier
            | InstKind::WarpPublish { .. }
            | InstKind::WarpRead { .. }
            | InstKind::WarpBallot { .. }
            | InstKind::WarpSync
            | InstKind::SyncPoint { .. }
            | InstKind::RaceShadow { .. } => self.sync_inst(&inst.kind),
            // `pass::leftover` refuses it above; the emitter never lowers one itself.
            InstKind::Half(_) => Err(Error::Internal(
                "half arithmetic reached the emitter unexpanded (pass::expand_formats)".into(),
            )),
            InstKind::HalfConvert(_) => Err(Error::Internal(
                "a narrow-format conversion reached the emitter unexpanded (pass::expand_formats)"
                    .into(),
            )),
            InstKind::Integer(_) => Err(Error::Internal(
                "an integer operation reached the emitter unexpanded (pass::expand_integer)".into(),
            )),
            InstKind::Video(_) => Err(Error::Internal(
                "a video instruction reached the emitter unexpanded (pass::expand_video)".into(),
            )),
            InstKind::Cvta { .. } => Err(Error::Internal(
                "a `cvta` reached the emitter unexpanded (pass::infer_spaces)".into(),
            )),
            InstKind::IsSpace(_) => Err(Error::Internal(
                "an `isspacep` reached the emitter unexpanded (pass::expand_isspace)".into(),
            )),
            InstKind::VectorAtomic(_) => Err(Error::Internal(
                "a vector atomic reached the emitter unexpanded (pass::expand_vector_atomics)"
                    .into(),
            )),
            InstKind::Texture(_) => Err(Error::Internal(
                "a texture instruction reached the emitter unexpanded (pass::expand_texture)"
                    .into(),
            )),
            InstKind::Matrix(_) => Err(Error::Internal(
                "a matrix instruction reached the emitter unexpanded (pass::expand_matrix)".into(),
            )),
            InstKind::Copy(_) => Err(Error::Internal(
                "an asynchronous copy reached the emitter unexpanded (pass::expand_copies)".into(),
            )),
            InstKind::Mbarrier(_) => Err(Error::Internal(
                "an mbarrier instruction reached the emitter unexpanded (pass::expand_mbarrier)"
                    .into(),
            )),
            InstKind::Warp(_) | InstKind::BarrierReduce { .. } => Err(Error::Internal(
                "a warp collective or `bar.red` reached the emitter unexpanded (pass::expand_warp)"
                    .into(),
            )),
            InstKind::System(_) | InstKind::DeviceLaunch(_) => Err(Error::Internal(
                "a system call or device-side launch reached the emitter unexpanded \
                 (pass::expand_system)"
                    .into(),
            )),
            InstKind::Stack(_) => Err(Error::Internal(
                "a stack operation reached the emitter unexpanded (pass::expand_stack)".into(),
            )),
            InstKind::EndThread => Err(Error::Internal(
                "a thread end in a function reached the emitter (pass::thread_ends)".into(),
            )),
            InstKind::CallIndirect { .. } => Err(Error::Internal(
                "an indirect call reached the emitter unexpanded (pass::expand_indirect_calls)"
                    .into(),
            )),
            InstKind::DataAddress(_) => Err(Error::Internal(
                "a data address reached the emitter unexpanded (pass::expand_data_addresses)"
                    .into(),
            )),
            InstKind::VariableAddress(_) => Err(Error::Internal(
                "a variable address reached the emitter unplaced (pass::layout_memory)".into(),
            )),
            // `pass::leftover` reports calls of device functions above: what is left
            // calls an emulation routine, written once per module (`routines`).
            InstKind::Call { callee, args, results } => {
                let routine = self.k.functions.get(callee.index()).and_then(|f| f.routine);
                let (Some(routine), [result]) = (routine, results.as_slice()) else {
                    return Err(Error::Internal("a call left by inline".into()));
                };
                let it = Scalar::Int(routine.param_bits() as u8);
                let args = args.iter().map(|&a| self.read(a, it)).collect::<R<Vec<_>>>()?;
                let r = self.call(routine, &args)?;
                self.write(*result, r, Scalar::Int(routine.result_bits() as u8), false)
            }
        }
    }

    /// Moves, packs, special registers, selects and predicate logic.
    pub(super) fn data_inst(&mut self, kind: &InstKind) -> R<()> {
        match kind {
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
            other => Err(Error::Internal(format!("`{other:?}` reached the data emitter"))),
        }
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

/// The registers of routine `f` that can be SSA values ([`FnEmitter::values`]): each
/// written once (a parameter by the call) and read only where that write dominates the
/// read: later in the same block, or anywhere after the body's first block (which runs
/// once, before the others; the structured tree's conditions, selectors and the return
/// only there). Every register of a straight-line routine is one; in one with branches
/// or loops the others are variables.
fn ssa_registers(f: &Function) -> Vec<bool> {
    let n = f.regs.len();
    // Where each register is written: (block, instruction), or `None` for a parameter.
    let mut def: Vec<Option<Option<(usize, usize)>>> = vec![None; n];
    let mut ok = vec![true; n];
    let mut written =
        |r: RegId, at: Option<(usize, usize)>, ok: &mut Vec<bool>| match def.get_mut(r.index()) {
            Some(d @ None) => *d = Some(at),
            Some(Some(_)) => ok[r.index()] = false,
            None => {}
        };
    for &(r, _) in &f.params {
        written(r, None, &mut ok);
    }
    let (mut uses_at, mut defs, mut uses) = (Vec::new(), Vec::new(), Vec::new());
    for (b, block) in f.blocks.iter().enumerate() {
        for (i, inst) in block.insts.iter().enumerate() {
            ptxvk_lower::verify::inst_defs_uses(&inst.kind, &mut defs, &mut uses);
            uses_at.extend(uses.drain(..).map(|u| (u, Some((b, i)))));
            for d in defs.drain(..) {
                written(d, Some((b, i)), &mut ok);
            }
        }
    }
    let first = match f.body.first() {
        Some(Node::Code(b)) => Some(b.index()),
        _ => None,
    };
    // The tree's reads, after every block: dominated by the first block only.
    let mut tree = Vec::new();
    node_registers(&f.body, &mut tree);
    tree.extend(f.returns.iter().map(|&(r, _)| r));
    uses_at.extend(tree.into_iter().map(|r| (r, None)));
    for (u, at) in uses_at {
        let dominated = match (def.get(u.index()).copied().flatten(), at) {
            (None, _) => false,
            (Some(None), _) => true,
            (Some(Some((db, di))), Some((b, i))) if db == b => di < i,
            (Some(Some((db, _))), _) => Some(db) == first,
        };
        if let Some(o) = ok.get_mut(u.index()) {
            *o &= dominated;
        }
    }
    (0..n).map(|r| ok[r] && def[r].is_some()).collect()
}

/// The registers the structured tree reads: its conditions and selectors.
fn node_registers(nodes: &[Node], out: &mut Vec<RegId>) {
    for n in nodes {
        match n {
            Node::If { cond, then, otherwise, .. } => {
                out.push(*cond);
                node_registers(then, out);
                node_registers(otherwise, out);
            }
            Node::Switch { selector, cases, .. } => {
                out.push(*selector);
                for c in cases {
                    node_registers(&c.body, out);
                }
            }
            Node::Loop { body, .. } => node_registers(body, out),
            Node::Code(_) | Node::Break | Node::Continue | Node::Return => {}
        }
    }
}
