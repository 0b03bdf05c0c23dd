//! Recursive device functions (PTX ISA 9.2 §9.7.12.4 allows recursion; SPIR-V 2.16.1
//! does not: "no function can call itself"). Every call is an IR call (`sema::calls`),
//! which `pass::inline` inlines, except a call into a **call cycle**: a strongly
//! connected component of the kernel's call graph that has a cycle (direct calls, and
//! the candidates of indirect ones). The machine below stays in semantic analysis until
//! a pass over IR functions replaces it.
//!
//! A call into a cycle from outside it lowers the cycle's functions once, there (in the
//! kernel's body or in the calling function's), as a small machine over an explicit
//! per-thread stack:
//!
//! * each function gets an **entry block**, which pushes its activation's **frame** (its
//!   `.local` and call `.param` variables, at offsets from a frame-pointer register, so
//!   that activations never alias), its body, and a **return block** (where `ret` goes);
//! * a call from the cycle into the cycle (a **call site**) pushes a **save area**: a
//!   continuation id naming the site, then the caller's registers that are live after
//!   the call (classic backward liveness over the machine, a call leading to its
//!   resume point as the caller sees it); binds the callee's parameters (a `.param`
//!   parameter is a register holding the address of the caller's `.param` variable, as
//!   inlining binds it by name; a `.reg` parameter is the callee's register) and jumps
//!   to the callee's entry block;
//! * the return block pops the frame (freeing what `alloca` took too); at the depth the
//!   machine was entered at it leaves the machine, after the outer call, else it
//!   switches on the continuation id to the site's **resume block**, which takes the
//!   callee's `.reg` results, restores the saved registers, pops the save area and goes
//!   on after the call.
//!
//! The stack is `sema::stack`'s (shared with `alloca`), [`RECURSION_STACK_BYTES`] per
//! thread in a kernel with recursion. Stack memory grows down from the top of the
//! thread's local window:
//!
//! ```text
//!   higher addresses   caller's frame:  .local / .param variables at fp + offset
//!                      caller's allocas
//!                      save area:       [sp+0] continuation id (u32)
//!                                       [sp+4..] live 8/16/32-bit registers and predicates (4 bytes each)
//!                                       then live 64-bit registers (8-byte aligned)
//!                      callee's frame   (fp = sp after the push, aligned)
//!   lower addresses    ...
//! ```
//!
//! A push that does not fit ends the launch with `crate::system::STATUS_STACK` (the
//! function field 1 marks a call frame, the file field holds the stack size) instead
//! of corrupting other local memory. Every frame and save area is a multiple of 8
//! bytes, so the stack pointer stays 8-byte aligned.
//!
//! Not saved across a recursive call: the `.cc` carry flag (not preserved across calls
//! by the CUDA ABI either).

use ptxvk_frontend::Opcode;
use std::collections::{BTreeMap, BTreeSet};

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::{Diagnostic, Name, Span, Spanned};

use super::calls::{same_signature, CallSet, Frame};
use super::expand::Emit;
use super::{op_ty, Lowerer, Resolved, Symbol};
use crate::build::Build;
use crate::ir::{
    Address, BinaryOp, BlockId, CmpOp, InstKind, Kernel, OpTy, RegId, RegTy, Space, Terminator,
    Value,
};
use crate::system as sys;
use crate::verify::inst_defs_uses;

/// Bytes of stack per thread in a kernel with recursion: 4 KiB, four times CUDA's
/// default 1 KiB (`cudaLimitStackSize`), since ptxvk's save areas hold every register
/// live across a call where ptxas saves only callee-saved ones. An activation of
/// nvcc's `fib` takes 32 bytes (about 120 levels fit), one of numba-cuda's about 100
/// (about 40 levels). The stack is a per-invocation array, which Vulkan drivers keep
/// in scratch memory: its size times the invocations in flight.
pub const RECURSION_STACK_BYTES: u32 = 4 * 1024;

const U32: OpTy = OpTy::U(32);

/// The call cycles of a kernel, and the one being lowered.
#[derive(Default)]
pub(super) struct Recursion {
    /// The cycle of each function on one, as an index into `cycles`.
    cycle_of: BTreeMap<Name, usize>,
    /// Each cycle's functions, in name order.
    cycles: Vec<Vec<Name>>,
    /// The machine being lowered, when inside one (the innermost).
    machine: Option<Box<Machine>>,
}

impl Recursion {
    /// The call cycles among `callees` (the kernel's reachable device functions with
    /// bodies).
    pub(super) fn find(callees: &[&ast::Function]) -> Recursion {
        let by_name: BTreeMap<&str, &ast::Function> =
            callees.iter().map(|f| (f.name.value.as_str(), *f)).collect();
        let graph: BTreeMap<&str, BTreeSet<&str>> = callees
            .iter()
            .map(|f| (f.name.value.as_str(), calls_in(f.body.as_deref().unwrap_or(&[]), &by_name)))
            .collect();
        let mut r = Recursion::default();
        for scc in strongly_connected(&graph) {
            let cyclic = scc.len() > 1 || graph[scc[0]].contains(scc[0]);
            if cyclic {
                for f in &scc {
                    r.cycle_of.insert(Name::from(*f), r.cycles.len());
                }
                r.cycles.push(scc.iter().map(|f| Name::from(*f)).collect());
            }
        }
        r
    }

    /// Whether the kernel has recursion.
    pub(super) fn any(&self) -> bool {
        !self.cycles.is_empty()
    }

    /// The kernel's stack size (`sema::stack`).
    pub(super) fn stack_bytes(&self) -> u32 {
        if self.any() {
            RECURSION_STACK_BYTES
        } else {
            super::stack::STACK_BYTES
        }
    }

    /// The machine being lowered, taken while a device function's body is lowered
    /// (its variables are not in an activation's frame); give it back with
    /// [`Recursion::restore_machine`].
    pub(super) fn take_machine(&mut self) -> Option<Box<Machine>> {
        self.machine.take()
    }

    pub(super) fn restore_machine(&mut self, machine: Option<Box<Machine>>) {
        self.machine = machine;
    }

    pub(super) fn resume_member(&mut self, member: Option<Name>) {
        if let Some(m) = self.machine.as_mut() {
            m.current = member;
        }
    }
}

/// The functions `body` may call: direct calls of functions with bodies, the
/// `.calltargets` of indirect calls, and for a `.callprototype` every function of
/// `functions` with its signature (as `sema::calls` chooses them).
fn calls_in<'a>(
    body: &[ast::Statement],
    functions: &BTreeMap<&'a str, &'a ast::Function>,
) -> BTreeSet<&'a str> {
    fn sets(stmts: &[ast::Statement], out: &mut BTreeMap<Name, CallSet>) {
        for s in stmts {
            match s {
                ast::Statement::Block(inner, _) => sets(inner, out),
                ast::Statement::Directive(d) => match &d.kind {
                    ast::DirectiveKind::CallTargets { label, targets } => {
                        out.insert(label.value.clone(), CallSet::Targets(targets.clone()));
                    }
                    ast::DirectiveKind::CallPrototype { label, returns, params, .. } => {
                        let set =
                            CallSet::Prototype { returns: returns.clone(), params: params.clone() };
                        out.insert(label.value.clone(), set);
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }
    fn walk<'a>(
        stmts: &[ast::Statement],
        sets: &BTreeMap<Name, CallSet>,
        functions: &BTreeMap<&'a str, &'a ast::Function>,
        out: &mut BTreeSet<&'a str>,
    ) {
        for s in stmts {
            let i = match s {
                ast::Statement::Block(inner, _) => {
                    walk(inner, sets, functions, out);
                    continue;
                }
                ast::Statement::Instruction(i) if i.op == Some(Opcode::Call) => i,
                _ => continue,
            };
            let rest = match i.operands.as_slice() {
                [Operand::List(..), rest @ ..] => rest,
                rest => rest,
            };
            if let Some(Operand::Name { name, component: None }) = rest.first() {
                if let Some((&n, _)) = functions.get_key_value(name.value.as_str()) {
                    out.insert(n);
                    continue;
                }
            }
            let Some(Operand::Name { name: label, component: None }) =
                rest.last().filter(|_| rest.len() >= 2)
            else {
                continue;
            };
            match sets.get(&label.value) {
                Some(CallSet::Targets(list)) => {
                    for t in list {
                        if let Some((&n, _)) = functions.get_key_value(t.value.as_str()) {
                            out.insert(n);
                        }
                    }
                }
                Some(CallSet::Prototype { returns, params }) => {
                    for (&n, f) in functions {
                        if same_signature(&f.returns, returns) && same_signature(&f.params, params)
                        {
                            out.insert(n);
                        }
                    }
                }
                None => {}
            }
        }
    }
    let mut call_sets = BTreeMap::new();
    sets(body, &mut call_sets);
    let mut out = BTreeSet::new();
    walk(body, &call_sets, functions, &mut out);
    out
}

/// The strongly connected components of `graph` (Tarjan's algorithm), each in name
/// order.
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct Tarjan<'g, 'a> {
        graph: &'g BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    impl<'a> Tarjan<'_, 'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for &w in self.graph.get(v).into_iter().flatten() {
                if !self.graph.contains_key(w) {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    scc.push(w);
                    if w == v {
                        break;
                    }
                }
                scc.sort_unstable();
                self.out.push(scc);
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in graph.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

/// A cycle being lowered at one call into it.
pub(super) struct Machine {
    cycle: usize,
    /// The function the outer call calls.
    entered: Name,
    acts: BTreeMap<Name, Activation>,
    sites: Vec<Site>,
    /// The stack pointer at the outer call: a return that restores it leaves.
    sp0: RegId,
    /// After the outer call.
    exit: BlockId,
    /// Registers and blocks from these on are the machine's.
    first_reg: usize,
    first_block: usize,
    /// The function whose body is being lowered: its `.local` and `.param` variables go
    /// into its frame.
    current: Option<Name>,
}

/// One function of the cycle.
#[derive(Clone)]
struct Activation {
    /// Pushes the frame, then goes to `body`.
    entry: BlockId,
    body: BlockId,
    /// Where `ret` goes.
    ret: BlockId,
    /// The frame pointer (a local-window offset), and the stack pointer at entry.
    fp: RegId,
    osp: RegId,
    params: Vec<Bound>,
    returns: Vec<Bound>,
    /// The frame's size (the most its variables take at once), its alignment, and
    /// where the next variable goes (the variables of a `{ }` block are freed after
    /// it, as ptxas reuses call sequences' `.param` space).
    frame_bytes: u32,
    frame_align: u32,
    frame_top: u32,
}

/// How a parameter of a cycle's function is bound.
#[derive(Clone, Copy)]
enum Bound {
    /// A `.param` parameter: a register holding the local-window address of the
    /// caller's `.param` variable.
    Param(RegId),
    /// A `.reg` parameter: the function's register.
    Reg(RegId, OpTy),
}

/// A parameter binding: (callee register, value, type).
type Move = (RegId, Value, OpTy);
/// A `.reg` result to copy out: (destination, callee register, type).
type CopyOut = (RegId, RegId, OpTy);

/// A call from the cycle into the cycle.
struct Site {
    callee: Name,
    /// Pushes the save area and binds the parameters (filled last); while the machine
    /// is lowered it jumps to `resume`, which is how the caller sees the call.
    save: BlockId,
    /// Takes the results and restores the saved registers (filled last).
    resume: BlockId,
    moves: Vec<Move>,
    /// `.reg` results: (temporary of the caller, callee register, type).
    results: Vec<(RegId, RegId, OpTy)>,
    span: Span,
}

impl Lowerer<'_> {
    /// A call of `f` when it is on a call cycle (`None` when it is not): a call site of
    /// the machine being lowered, or the machine's lowering.
    pub(super) fn recursive_call(
        &mut self,
        f: &ast::Function,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Option<Result<(), Diagnostic>> {
        let cycle = *self.recursion.cycle_of.get(&f.name.value)?;
        let inside = self.recursion.machine.as_ref().is_some_and(|m| m.cycle == cycle);
        Some(if inside {
            self.call_site(f, args, rets, span)
        } else {
            self.enter_cycle(f, cycle, args, rets, span)
        })
    }

    /// The slot of a `.local` or `.param` variable of `size` bytes declared by the
    /// cycle's function being lowered, in its frame; `None` elsewhere.
    pub(super) fn frame_slot(&mut self, size: u32, align: u32) -> Option<Symbol> {
        let m = self.recursion.machine.as_mut()?;
        let act = m.acts.get_mut(m.current.as_ref()?)?;
        let offset = act.frame_top.next_multiple_of(align);
        act.frame_top = offset.saturating_add(size);
        act.frame_bytes = act.frame_bytes.max(act.frame_top);
        act.frame_align = act.frame_align.max(align);
        Some(Symbol::Framed(act.fp, offset))
    }

    /// Where the frame of the cycle's function being lowered is filled to, before a
    /// `{ }` block; [`Self::release_frame`] frees the block's variables after it.
    pub(super) fn frame_mark(&self) -> Option<u32> {
        let m = self.recursion.machine.as_ref()?;
        Some(m.acts.get(m.current.as_ref()?)?.frame_top)
    }

    pub(super) fn release_frame(&mut self, mark: Option<u32>) {
        let Some(m) = self.recursion.machine.as_mut() else { return };
        let (Some(mark), Some(current)) = (mark, m.current.as_ref()) else { return };
        if let Some(act) = m.acts.get_mut(current) {
            act.frame_top = mark;
        }
    }

    /// The address `base + offset` in the local window, as a `ty` (32 or 64 bits).
    pub(super) fn framed_address(
        &mut self,
        base: RegId,
        offset: u32,
        ty: OpTy,
        span: Span,
    ) -> Value {
        let mut e = Emit { l: self, span };
        let ty = ty.as_unsigned();
        let base =
            if ty.bits() == 64 { e.cvt(ty, U32, Value::Reg(base)) } else { Value::Reg(base) };
        if offset == 0 {
            base
        } else {
            e.add(ty, base, Value::Imm(u64::from(offset)))
        }
    }

    /// The local-window address of the caller's `.param` variable `actual`, which a
    /// `.param` parameter is bound to.
    pub(super) fn param_address(
        &mut self,
        actual: &Operand,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let slot = match actual {
            Operand::Name { name, component: None } => self.lookup(&name.value),
            _ => None,
        };
        match slot {
            Some(Resolved::Local(off)) => Ok(Value::Imm(u64::from(off))),
            Some(Resolved::Framed(base, off)) => Ok(self.framed_address(base, off, U32, span)),
            _ => Err(Diagnostic::error(
                actual.span(),
                "a `.param` parameter takes a `.param` variable of the caller",
            )),
        }
    }

    /// The binding of parameter `decl` of a cycle's function.
    fn bound(&mut self, decl: &ast::VarDecl, span: Span) -> Result<Bound, Diagnostic> {
        if decl.names.len() != 1 {
            return Err(Diagnostic::error(decl.span, "declare one parameter per declaration"));
        }
        match decl.space {
            StateSpace::Param => Ok(Bound::Param(self.temp(RegTy::Int(32), span))),
            StateSpace::Reg => {
                let (Some(scalar), None, true) =
                    (decl.ty.value.scalar(), decl.vector, decl.names[0].dims.is_empty())
                else {
                    return Err(Diagnostic::error(
                        decl.span,
                        "`.reg` parameters are supported for scalar types",
                    ));
                };
                let ty = op_ty(&Spanned::new(scalar, decl.ty.span))?;
                Ok(Bound::Reg(self.temp(ty.storage(), span), ty))
            }
            _ => Err(Diagnostic::error(decl.span, "parameters are `.reg` or `.param`")),
        }
    }

    /// Binds `actuals` (the call's operands) to `bounds`: the moves into the callee's
    /// registers (their values read now, so that the moves may come later), and the
    /// `.reg` results to copy out as (destination, callee register, type).
    fn bind_actuals(
        &mut self,
        act: &Activation,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(Vec<Move>, Vec<CopyOut>), Diagnostic> {
        let mut moves = Vec::new();
        let mut copy_out = Vec::new();
        for (actual, bound) in args.iter().zip(&act.params) {
            match *bound {
                Bound::Param(a) => moves.push((a, self.param_address(actual, span)?, U32)),
                Bound::Reg(r, ty) => {
                    let v = self.src(actual, ty, true, span)?;
                    let t = self.temp(ty.storage(), span);
                    self.push(InstKind::Mov { ty, dst: t, src: v }, span);
                    moves.push((r, Value::Reg(t), ty));
                }
            }
        }
        for (actual, bound) in rets.iter().zip(&act.returns) {
            match *bound {
                Bound::Param(a) => moves.push((a, self.param_address(actual, span)?, U32)),
                Bound::Reg(r, ty) => copy_out.push((self.reg_operand(actual)?.0, r, ty)),
            }
        }
        Ok((moves, copy_out))
    }

    /// The outer call of `f` on cycle `cycle`: the machine, lowered here.
    fn enter_cycle(
        &mut self,
        f: &ast::Function,
        cycle: usize,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let Some(sp) = self.stack_pointer else {
            return Err(Diagnostic::internal(span, "recursion without a stack pointer"));
        };
        let functions = self.functions;
        let members = self.recursion.cycles[cycle].clone();
        let sp0 = self.temp(RegTy::Int(32), span);
        self.push(InstKind::Mov { ty: U32, dst: sp0, src: Value::Reg(sp) }, span);
        let first_reg = self.kernel.regs.len();
        let first_block = self.kernel.blocks.len();
        let exit = self.new_block(None, span);
        let mut acts = BTreeMap::new();
        for name in &members {
            let g = functions[name];
            let entry = self.new_block(None, g.name.span);
            let body = self.new_block(None, g.name.span);
            let ret = self.new_block(None, g.name.span);
            let fp = self.temp(RegTy::Int(32), g.name.span);
            let osp = self.temp(RegTy::Int(32), g.name.span);
            let params = g.params.iter().map(|d| self.bound(d, span)).collect::<Result<_, _>>()?;
            let returns =
                g.returns.iter().map(|d| self.bound(d, span)).collect::<Result<_, _>>()?;
            let act = Activation {
                entry,
                body,
                ret,
                fp,
                osp,
                params,
                returns,
                frame_bytes: 0,
                frame_align: 8,
                frame_top: 0,
            };
            acts.insert(name.clone(), act);
        }
        let act = acts[&f.name.value].clone();
        let (moves, copy_out) = self.bind_actuals(&act, args, rets, span)?;
        for (dst, src, ty) in moves {
            self.push(InstKind::Mov { ty, dst, src }, span);
        }
        self.terminate(Terminator::Jump(act.entry), span);
        let machine = Machine {
            cycle,
            entered: f.name.value.clone(),
            acts,
            sites: Vec::new(),
            sp0,
            exit,
            first_reg,
            first_block,
            current: None,
        };
        let outer = self.recursion.machine.replace(Box::new(machine));
        for name in &members {
            self.lower_member(name);
        }
        let machine = self.recursion.machine.take();
        self.recursion.machine = outer;
        if let Some(m) = machine {
            self.finish_machine(&m, sp, span);
        }
        self.cur = exit;
        self.closed = false;
        for (dst, reg, ty) in copy_out {
            self.push(InstKind::Mov { ty, dst, src: Value::Reg(reg) }, span);
        }
        Ok(())
    }

    /// Lowers the body of the cycle's function `name` into its activation's blocks.
    fn lower_member(&mut self, name: &Name) {
        let functions = self.functions;
        let g = functions[name];
        let Some(body) = g.body.as_deref() else { return };
        let Some(act) = self.recursion.machine.as_ref().map(|m| m.acts[name].clone()) else {
            return;
        };
        let mut scope = BTreeMap::new();
        let decls = g.params.iter().zip(&act.params).chain(g.returns.iter().zip(&act.returns));
        for (decl, bound) in decls {
            let sym = match *bound {
                Bound::Param(a) => Symbol::Framed(a, 0),
                Bound::Reg(r, _) => Symbol::Reg(r),
            };
            scope.insert(decl.names[0].name.value.clone(), sym);
        }
        let labels = std::mem::take(&mut self.labels);
        let tables = std::mem::take(&mut self.branch_tables);
        let sets = std::mem::take(&mut self.call_sets);
        let frame = self.frame.replace(Frame { ret_target: act.ret });
        let scopes = std::mem::replace(&mut self.scopes, vec![self.module_scope.clone(), scope]);
        let spaces = self.function_spaces.get(name).cloned().unwrap_or_default();
        let spaces = std::mem::replace(&mut self.spaces, spaces);
        self.call_stack.push(name.clone());
        self.recursion.resume_member(Some(name.clone()));
        self.cur = act.body;
        self.closed = false;
        self.collect_labels(body);
        self.statements(body);
        if !self.closed {
            self.terminate(Terminator::Jump(act.ret), g.span);
        }
        self.recursion.resume_member(None);
        self.call_stack.pop();
        self.spaces = spaces;
        self.scopes = scopes;
        self.frame = frame;
        self.call_sets = sets;
        self.branch_tables = tables;
        self.labels = labels;
    }

    /// A call from the cycle into the cycle: evaluates the arguments, then the save
    /// block (filled by [`Self::finish_machine`]) and the resume block; the code after
    /// the call copies the `.reg` results out.
    fn call_site(
        &mut self,
        f: &ast::Function,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let Some(act) = self.recursion.machine.as_ref().map(|m| m.acts[&f.name.value].clone())
        else {
            return Err(Diagnostic::internal(span, "a call site outside its cycle"));
        };
        let (moves, copy_out) = self.bind_actuals(&act, args, rets, span)?;
        let mut results = Vec::new();
        let mut outs = Vec::new();
        for (dst, reg, ty) in copy_out {
            let t = self.temp(ty.storage(), span);
            results.push((t, reg, ty));
            outs.push((dst, t, ty));
        }
        let save = self.new_block(None, span);
        let resume = self.new_block(None, span);
        let after = self.new_block(None, span);
        self.terminate(Terminator::Jump(save), span);
        self.cur = save;
        self.terminate(Terminator::Jump(resume), span);
        self.cur = resume;
        self.terminate(Terminator::Jump(after), span);
        self.cur = after;
        self.closed = false;
        for (dst, t, ty) in outs {
            self.push(InstKind::Mov { ty, dst, src: Value::Reg(t) }, span);
        }
        if let Some(m) = self.recursion.machine.as_mut() {
            m.sites.push(Site { callee: f.name.value.clone(), save, resume, moves, results, span });
        }
        Ok(())
    }

    /// Fills the entry blocks, the call sites' save and resume blocks and the return
    /// blocks of a lowered machine.
    fn finish_machine(&mut self, m: &Machine, sp: RegId, span: Span) {
        let live = live_into(&self.kernel, m);
        let stack_bytes = self.recursion.stack_bytes();
        let overflow = |bytes: u32| {
            [
                Value::Imm(0),
                Value::Imm(u64::from(stack_bytes)),
                Value::Imm(u64::from(bytes)),
                Value::Imm(1),
            ]
        };
        let sp_v = Value::Reg(sp);
        for act in m.acts.values() {
            // Entry: push the frame.
            self.cur = act.entry;
            self.closed = false;
            let size = act.frame_bytes.next_multiple_of(8);
            let align = act.frame_align.max(8);
            if align > 8 {
                // `pop_frame` cannot compute it from the frame pointer.
                self.push(InstKind::Mov { ty: U32, dst: act.osp, src: sp_v }, span);
            }
            if size > 0 {
                let mut e = Emit { l: self, span };
                let need = Value::Imm(u64::from(size + align - 8));
                let room = e.cmp(CmpOp::Le, U32, need, sp_v);
                self.fail_if(room, true, sys::STATUS_STACK, &overflow(size), span);
                let mut e = Emit { l: self, span };
                let low = e.bin(BinaryOp::Sub, U32, sp_v, Value::Imm(u64::from(size)));
                let fp = e.and(U32, low, Value::Imm(u64::from(!(align - 1))));
                e.mov(U32, act.fp, fp);
                e.mov(U32, sp, Value::Reg(act.fp));
            } else {
                self.push(InstKind::Mov { ty: U32, dst: act.fp, src: sp_v }, span);
            }
            self.terminate(Terminator::Jump(act.body), span);
        }
        for (id, site) in m.sites.iter().enumerate() {
            let saved = save_layout(&self.kernel, live[site.resume.index() - m.first_block].regs());
            let Some(callee) = m.acts.get(&site.callee) else { continue };
            // Save: push the continuation id and the live registers, bind, call.
            let span = site.span;
            self.cur = site.save;
            self.closed = false;
            let mut e = Emit { l: self, span };
            let room = e.cmp(CmpOp::Le, U32, Value::Imm(u64::from(saved.bytes)), sp_v);
            self.fail_if(room, true, sys::STATUS_STACK, &overflow(saved.bytes), span);
            let mut e = Emit { l: self, span };
            let low = e.bin(BinaryOp::Sub, U32, sp_v, Value::Imm(u64::from(saved.bytes)));
            e.mov(U32, sp, low);
            let at = |offset: u32| Address { base: Some(sp), offset: i64::from(offset) };
            e.push(InstKind::Store {
                space: Space::Local,
                ty: U32,
                srcs: vec![Value::Imm(id as u64)],
                addr: at(0),
            });
            for &(r, offset) in &saved.slots {
                match e.l.kernel.reg(r).ty {
                    RegTy::Pred => {
                        let v = e.sel(U32, r, Value::Imm(1), Value::Imm(0));
                        e.push(InstKind::Store {
                            space: Space::Local,
                            ty: U32,
                            srcs: vec![v],
                            addr: at(offset),
                        });
                    }
                    ty => e.push(InstKind::Store {
                        space: Space::Local,
                        ty: OpTy::U(ty.bits() as u8),
                        srcs: vec![Value::Reg(r)],
                        addr: at(offset),
                    }),
                }
            }
            for &(dst, src, ty) in &site.moves {
                e.mov(ty, dst, src);
            }
            self.terminate(Terminator::Jump(callee.entry), span);
            // Resume: take the results (restoring may overwrite the callee's registers
            // when it is the caller), restore, pop.
            let after = self.kernel.blocks[site.resume.index()].term.clone();
            self.cur = site.resume;
            self.closed = false;
            let mut e = Emit { l: self, span };
            for &(t, reg, ty) in &site.results {
                e.mov(ty, t, Value::Reg(reg));
            }
            for &(r, offset) in &saved.slots {
                match e.l.kernel.reg(r).ty {
                    RegTy::Pred => {
                        let t = e.temp(U32);
                        e.push(InstKind::Load {
                            space: Space::Local,
                            ty: U32,
                            dsts: vec![Some(t)],
                            addr: at(offset),
                        });
                        e.push(InstKind::Setp {
                            cmp: CmpOp::Ne,
                            ty: U32,
                            ftz: false,
                            dst: Some(r),
                            dst_not: None,
                            lhs: Value::Reg(t),
                            rhs: Value::Imm(0),
                            combine: None,
                        });
                    }
                    ty => e.push(InstKind::Load {
                        space: Space::Local,
                        ty: OpTy::U(ty.bits() as u8),
                        dsts: vec![Some(r)],
                        addr: at(offset),
                    }),
                }
            }
            let up = e.add(U32, sp_v, Value::Imm(u64::from(saved.bytes)));
            e.mov(U32, sp, up);
            self.terminate(after, span);
        }
        for (name, act) in &m.acts {
            // Return: pop the frame; leave the machine at the outer depth, else resume
            // the call site whose id is on the stack.
            self.cur = act.ret;
            self.closed = false;
            self.pop_frame(act, sp, span);
            let cases: Vec<(u32, BlockId)> = m
                .sites
                .iter()
                .enumerate()
                .filter(|(_, s)| s.callee == *name)
                .map(|(id, s)| (id as u32, s.resume))
                .collect();
            if *name == m.entered {
                let top = Emit { l: self, span }.cmp(CmpOp::Eq, U32, sp_v, Value::Reg(m.sp0));
                let inner = self.new_block(None, span);
                self.terminate(
                    Terminator::Branch {
                        cond: top,
                        negate: false,
                        if_true: m.exit,
                        if_false: inner,
                    },
                    span,
                );
                self.cur = inner;
                self.closed = false;
            }
            let term = match cases.as_slice() {
                [] => Terminator::Jump(m.exit),
                [(_, only)] => Terminator::Jump(*only),
                [rest @ .., (_, last)] => {
                    let mut e = Emit { l: self, span };
                    let id = e.temp(U32);
                    e.push(InstKind::Load {
                        space: Space::Local,
                        ty: U32,
                        dsts: vec![Some(id)],
                        addr: Address { base: Some(sp), offset: 0 },
                    });
                    Terminator::Switch { selector: id, cases: rest.to_vec(), default: *last }
                }
            };
            self.terminate(term, span);
        }
    }

    /// `sp` back to its value at the function's entry: `fp + frame` when the frame
    /// is 8-byte aligned (the stack pointer always is), else the saved value.
    fn pop_frame(&mut self, act: &Activation, sp: RegId, span: Span) {
        let mut e = Emit { l: self, span };
        if act.frame_align <= 8 {
            let size = act.frame_bytes.next_multiple_of(8);
            let up = e.add(U32, Value::Reg(act.fp), Value::Imm(u64::from(size)));
            e.mov(U32, sp, up);
        } else {
            e.mov(U32, sp, Value::Reg(act.osp));
        }
    }
}

/// The registers a return block reads (filled after the liveness analysis): the
/// function's `.reg` results, and the frame pointer or saved stack pointer it pops to.
fn ret_uses(act: &Activation) -> Vec<RegId> {
    let mut v: Vec<RegId> = act
        .returns
        .iter()
        .filter_map(|b| match *b {
            Bound::Reg(r, _) => Some(r),
            Bound::Param(_) => None,
        })
        .collect();
    v.push(if act.frame_align <= 8 { act.fp } else { act.osp });
    v
}

/// A set of the machine's registers (indices from `Machine::first_reg`).
#[derive(Clone, PartialEq, Eq)]
struct RegSet {
    first: usize,
    bits: Vec<u64>,
}

impl RegSet {
    fn new(first: usize, n: usize) -> RegSet {
        RegSet { first, bits: vec![0; n.div_ceil(64)] }
    }
    fn index(&self, r: RegId) -> Option<usize> {
        let i = r.index().checked_sub(self.first)?;
        (i < self.bits.len() * 64).then_some(i)
    }
    fn insert(&mut self, r: RegId) {
        if let Some(i) = self.index(r) {
            self.bits[i / 64] |= 1 << (i % 64);
        }
    }
    fn remove(&mut self, r: RegId) {
        if let Some(i) = self.index(r) {
            self.bits[i / 64] &= !(1 << (i % 64));
        }
    }
    fn union(&mut self, other: &RegSet) {
        self.bits.iter_mut().zip(&other.bits).for_each(|(a, b)| *a |= b);
    }
    fn regs(&self) -> Vec<RegId> {
        let mut out = Vec::new();
        for (w, &bits) in self.bits.iter().enumerate() {
            for b in 0..64 {
                if bits & (1 << b) != 0 {
                    out.push(RegId((self.first + w * 64 + b) as u32));
                }
            }
        }
        out
    }
}

/// The machine's registers live into each of its blocks (indexed from
/// `Machine::first_block`), by backward liveness over its blocks as they are before
/// [`Lowerer::finish_machine`]: a save block jumps to its resume block (the call as
/// the caller sees it), a return block reads what [`ret_uses`] names. The call sites'
/// result temporaries are left out: they are written after the callee returns.
fn live_into(k: &Kernel, m: &Machine) -> Vec<RegSet> {
    let n = k.regs.len() - m.first_reg;
    let first = m.first_block;
    let blocks = &k.blocks[first..];
    let excluded: BTreeSet<RegId> =
        m.sites.iter().flat_map(|s| s.results.iter().map(|r| r.0)).collect();
    let ret_reads: BTreeMap<BlockId, Vec<RegId>> =
        m.acts.values().map(|a| (a.ret, ret_uses(a))).collect();
    // Each block's uses before any definition (gen) and definitions (kill).
    let mut gen = Vec::with_capacity(blocks.len());
    let mut kill = Vec::with_capacity(blocks.len());
    let (mut defs, mut uses) = (Vec::new(), Vec::new());
    for (i, b) in blocks.iter().enumerate() {
        let mut g = RegSet::new(m.first_reg, n);
        let mut d = RegSet::new(m.first_reg, n);
        match &b.term {
            Terminator::Branch { cond, .. } => g.insert(*cond),
            Terminator::Switch { selector, .. } => g.insert(*selector),
            Terminator::Jump(_) | Terminator::Return => {}
        }
        for &r in ret_reads.get(&BlockId((first + i) as u32)).into_iter().flatten() {
            g.insert(r);
        }
        for inst in b.insts.iter().rev() {
            defs.clear();
            uses.clear();
            inst_defs_uses(&inst.kind, &mut defs, &mut uses);
            for &r in &defs {
                g.remove(r);
                d.insert(r);
            }
            for &r in &uses {
                g.insert(r);
            }
        }
        for r in &excluded {
            g.remove(*r);
        }
        gen.push(g);
        kill.push(d);
    }
    let mut live: Vec<RegSet> = gen.clone();
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..blocks.len()).rev() {
            let mut out = RegSet::new(m.first_reg, n);
            for s in blocks[i].term.successors() {
                if let Some(l) = s.index().checked_sub(first).and_then(|j| live.get(j)) {
                    out.union(l);
                }
            }
            // in = gen ∪ (out − kill)
            let mut new = gen[i].clone();
            for (w, (o, k)) in out.bits.iter().zip(&kill[i].bits).enumerate() {
                new.bits[w] |= o & !k;
            }
            if new != live[i] {
                live[i] = new;
                changed = true;
            }
        }
    }
    live
}

/// Where a save area keeps its registers: (register, byte offset), and its size.
struct SaveLayout {
    slots: Vec<(RegId, u32)>,
    bytes: u32,
}

/// The continuation id at 0, then a 4-byte slot per register of at most 32 bits (a
/// predicate as 0 or 1), then 8-byte slots; a multiple of 8 bytes.
fn save_layout(k: &Kernel, regs: Vec<RegId>) -> SaveLayout {
    let (wide, narrow): (Vec<RegId>, Vec<RegId>) =
        regs.into_iter().partition(|&r| k.reg(r).ty.bits() == 64);
    let mut slots = Vec::new();
    let mut at: u32 = 4;
    for r in narrow {
        slots.push((r, at));
        at += 4;
    }
    at = at.next_multiple_of(8);
    for r in wide {
        slots.push((r, at));
        at += 8;
    }
    SaveLayout { slots, bytes: at.next_multiple_of(8) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Kernel;

    const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

    /// The call cycles `Recursion::find` sees among the functions of `ptx`.
    fn cycles(ptx: &str) -> Vec<Vec<String>> {
        let module = ptxvk_frontend::parse(&format!("{HEADER}{ptx}")).expect("parses");
        let functions: Vec<&ast::Function> = module
            .items
            .iter()
            .filter_map(|i| match i {
                ast::Item::Function(f) if !f.is_entry && f.body.is_some() => Some(f),
                _ => None,
            })
            .collect();
        let r = Recursion::find(&functions);
        r.cycles.iter().map(|c| c.iter().map(|n| n.to_string()).collect()).collect()
    }

    #[test]
    fn finds_direct_mutual_and_indirect_cycles_only() {
        let found = cycles(
            ".func a() { call.uni a; ret; }\n\
             .func b() { call.uni c; ret; }\n\
             .func c() { call.uni b; ret; }\n\
             .func d() { call.uni e; ret; }\n\
             .func e() { ret; }\n\
             .func g() { call.uni a; call.uni d; ret; }\n\
             .func (.param .b32 r) h(.param .b32 x)\n\
             { .reg .b64 %rd1; .param .b32 p; .param .b32 q;\n\
               mov.u64 %rd1, h;\n\
               P: .callprototype (.param .b32 _) _ (.param .b32 _);\n\
               call (q), %rd1, (p), P; ret; }\n\
             .func k() { .reg .b64 %rd1; T: .calltargets m; call %rd1, T; ret; }\n\
             .func m() { call.uni k; ret; }\n",
        );
        let want: Vec<Vec<&str>> = vec![vec!["a"], vec!["b", "c"], vec!["h"], vec!["k", "m"]];
        let mut found = found;
        found.sort();
        assert_eq!(found, want);
    }

    fn kernel(ptx: &str) -> Kernel {
        let module = ptxvk_frontend::parse(&format!("{HEADER}{ptx}")).expect("parses");
        crate::sema::run(&module).expect("lowers").kernels.remove(0)
    }

    /// The registers a kernel stores into save areas: stores of a register to the
    /// stack pointer plus 4 or more (the continuation id is at +0).
    fn saved(k: &Kernel) -> Vec<String> {
        // The stack pointer is the first register the entry block sets to the stack size.
        let sp = k.blocks[k.entry.index()]
            .insts
            .iter()
            .find_map(|i| match i.kind {
                InstKind::Mov { dst, src: Value::Imm(4096), .. } => Some(dst),
                _ => None,
            })
            .expect("a stack pointer");
        let mut out = Vec::new();
        for b in &k.blocks {
            for i in &b.insts {
                if let InstKind::Store { space: Space::Local, srcs, addr, .. } = &i.kind {
                    if addr.base == Some(sp) && addr.offset >= 4 {
                        if let [Value::Reg(r)] = srcs.as_slice() {
                            out.push(k.reg(*r).name.clone());
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn a_call_saves_only_the_registers_live_after_it() {
        // Ten values are computed before the recursive call; only %r10 (and the frame
        // pointer the return pops to) is read after it.
        let k = kernel(
            ".func (.reg .b32 r) f(.reg .b32 n)\n{\n .reg .pred %p1;\n .reg .b32 %r<12>;\n\
             mov.u32 r, 0;\n setp.eq.u32 %p1, n, 0;\n @%p1 ret;\n\
             add.u32 %r1, n, 1;\n mul.lo.u32 %r2, %r1, %r1;\n add.u32 %r3, %r2, %r1;\n\
             mul.lo.u32 %r4, %r3, %r2;\n add.u32 %r5, %r4, %r3;\n mul.lo.u32 %r6, %r5, %r4;\n\
             add.u32 %r7, %r6, %r5;\n mul.lo.u32 %r8, %r7, %r6;\n add.u32 %r9, %r8, %r7;\n\
             add.u32 %r10, %r9, %r1;\n add.u32 %r11, n, -1;\n\
             call.uni (%r0), f, (%r11);\n add.u32 r, %r0, %r10;\n ret;\n}\n\
             .entry k(.param .u32 p)\n{\n .reg .b32 %r<3>;\n ld.param.u32 %r1, [p];\n\
             call.uni (%r2), f, (%r1);\n ret;\n}\n",
        );
        crate::verify::run(&k).expect("valid IR");
        let saved = saved(&k);
        assert_eq!(saved.len(), 2, "saved: {saved:?}");
        assert!(saved.contains(&"%r10".to_string()), "saved: {saved:?}");
    }

    #[test]
    fn activations_address_their_variables_from_a_frame_pointer() {
        // `buf` of the recursive function is frame-relative; the kernel's `keep` is not.
        let k = kernel(
            ".func f(.param .b32 n)\n{\n .local .align 4 .b8 buf[8];\n .reg .pred %p1;\n\
             .reg .b32 %r<3>;\n ld.param.u32 %r1, [n];\n st.local.u32 [buf+4], %r1;\n\
             setp.eq.u32 %p1, %r1, 0;\n @%p1 ret;\n add.u32 %r2, %r1, -1;\n\
             { .param .b32 a;\n st.param.b32 [a], %r2;\n call.uni f, (a); }\n ret;\n}\n\
             .entry k(.param .u32 p)\n{\n .local .align 4 .b8 keep[4];\n .reg .b32 %r<2>;\n\
             ld.param.u32 %r1, [p];\n st.local.u32 [keep], %r1;\n\
             { .param .b32 a;\n st.param.b32 [a], %r1;\n call.uni f, (a); }\n ret;\n}\n",
        );
        let stores: Vec<(Option<RegId>, i64)> = k
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter_map(|i| match &i.kind {
                InstKind::Store { space: Space::Local, srcs, addr, .. }
                    if srcs
                        .iter()
                        .any(|s| matches!(s, Value::Reg(r) if k.reg(*r).name == "%r1")) =>
                {
                    Some((addr.base, addr.offset))
                }
                _ => None,
            })
            .collect();
        // The kernel's `keep` and its argument `a` after the 4 KiB stack; the function's
        // `buf+4` from its frame pointer.
        assert!(stores.contains(&(None, 4096)), "{stores:?}");
        assert!(stores.iter().any(|&(b, off)| b.is_some() && off == 4), "{stores:?}");
        assert_eq!(k.local_bytes, 4096 + 8);
    }
}
