//! `call` to `.func` device functions (PTX ISA 9.2 §9.7.12.4, ABI guide §3). Each
//! device function a kernel calls is lowered once, at its first call, into an IR
//! [`Function`] of the kernel (`Kernel::functions`, in its own body: registers, blocks,
//! labels and scope of its own), and each call is one [`InstKind::Call`];
//! `pass::inline` then inlines them (`crate::ir`, *Functions and calls*).
//!
//! Parameters follow the PTX ABI: the caller declares `.param` variables in its own
//! frame (here, static slots of the thread's local window, see `Resolver::declare`),
//! writes the arguments with `st.param` and reads the results with `ld.param`. A
//! callee's `.param` parameter or result is an IR parameter holding the local-window
//! address of the caller's variable, which the callee's `ld.param`/`st.param` go
//! through, so structs by value and address-taken
//! parameters need no copies; `pass::inline` folds the address back into constant
//! offsets. `.reg` parameters and results are IR parameters and returns by value.
//! The stack pointer is passed too, in only, so that what a callee allocates is freed
//! when it returns (PTX ISA 9.2 §9.7.17.1). A function names the kernel's
//! module-scope `.reg` variables through registers of its own
//! (`Function::thread_regs`), which `pass::thread_registers` passes in and out.
//! `exit`, `trap` and failures in a function end the thread with an
//! [`InstKind::EndThread`] (`Resolver::thread_end`), which `pass::thread_ends` writes
//! out in a flag the function returns and its callers test. `ret` in the callee
//! returns.
//!
//! What a function's lowering depends on beyond its body is the kernel's, so a
//! function is lowered in the kernel's context: its `.shared` variables are placed in
//! the kernel's window, its `.local` and call `.param` variables in the kernel's local
//! window (variables it owns, [`crate::ir::Variable::owner`], which `pass::layout_memory`
//! gives one static slot each, or a slot in a frame on the stack for a function on a
//! call cycle, which may have several activations at once), its generic
//! addresses by the kernel's windows (their spaces inferred in its own body by
//! `pass::infer_spaces`).
//!
//! An indirect call through a function pointer is one [`InstKind::CallIndirect`] whose
//! arms are its possible callees (its `.calltargets`, or the functions matching its
//! `.callprototype` whose address the kernel or a function it calls takes,
//! `sema::facts`'s `address_taken`), each with the operands a direct call of it has;
//! `pass::expand_indirect_calls` writes it out in tests of the address and `Call`s. A
//! function's address is `ir::FUNCTION_WINDOW` plus its index, so it survives being
//! stored and loaded.
//!
//! A recursive function (on a call cycle, direct or mutual, through function pointers
//! too) is lowered the same way, its calls `Call`s; a call into a function being
//! lowered gets the callee's id reserved ([`Resolver::reserve_cycle`]). SPIR-V forbids
//! recursion (2.16.1): `pass::layout_memory` gives the functions on cycles frames on
//! the stack, and `pass::recursion` turns their calls into a machine over an explicit
//! stack. Calls of declared functions without a body are calls of functions CUDA
//! provides (`sema::system`).

use std::collections::BTreeMap;

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::{Diagnostic, Name, Span, Spanned};

use super::body::{CallSet, CallerBody, FunctionBody};
use super::expand::Emit;
use super::{op_ty, Resolver, Symbol};
use crate::build::Build;
use crate::ir::{
    Address, CallArm, Function, FunctionId, InstKind, OpTy, PassedRegs, RegId, RegTy, Terminator,
    Value, FUNCTION_WINDOW,
};

/// Functions lowered at their first calls nest at most this deep.
const MAX_DEPTH: usize = 64;

/// The address of function `name` (`mov.u64 %rd, name`): [`FUNCTION_WINDOW`] plus its
/// position among the module's device functions, counting from 1.
pub(super) fn function_address(functions: &BTreeMap<Name, &ast::Function>, name: &str) -> u64 {
    let index = functions.keys().position(|k| k.as_str() == name).unwrap_or(0) as u64;
    FUNCTION_WINDOW | (index + 1)
}

/// Whether two parameter lists have the same state spaces, types and sizes.
fn same_signature(a: &[ast::Param], b: &[ast::Param]) -> bool {
    let shape =
        |p: &ast::Param| (p.space, p.ty.value, p.vector, p.names.first().map(|n| n.dims.clone()));
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| shape(x) == shape(y))
}

impl Resolver<'_> {
    /// `call{.uni} (results), f, (arguments);`, and the indirect
    /// `call (results), %ptr, (arguments), proto_or_targets;`.
    pub(super) fn call(&mut self, i: &ast::Instruction) -> Result<(), Diagnostic> {
        let span = i.span;
        let (rets, rest): (&[Operand], &[Operand]) = match i.operands.as_slice() {
            [Operand::List(r, _), rest @ ..] => (r, rest),
            rest => (&[], rest),
        };
        let (callee, args, targets) = match rest {
            [c, Operand::List(a, _)] => (c, a.as_slice(), None),
            [c, Operand::List(a, _), t] => (c, a.as_slice(), Some(t)),
            [c, t @ Operand::Name { .. }] => (c, &[][..], Some(t)),
            [c] => (c, &[][..], None),
            _ => {
                return Err(Diagnostic::error(
                    span,
                    "`call` takes (results), a function, (arguments)",
                ))
            }
        };
        match callee {
            Operand::Name { name, component: None } if self.lookup(&name.value).is_none() => {
                let Some(&f) = self.module.functions.get(&name.value) else {
                    return Err(Diagnostic::error(
                        name.span,
                        format!("undefined function `{}`", name.value),
                    ));
                };
                self.call_function(f, name, args, rets, span)
            }
            _ => self.indirect_call(callee, args, rets, targets, span),
        }
    }

    /// An indirect call: one `CallIndirect` whose arms are the candidates (the
    /// `.calltargets` list, or every function whose address the kernel takes whose
    /// signature matches the `.callprototype`), each with a direct call's operands.
    fn indirect_call(
        &mut self,
        callee: &Operand,
        args: &[Operand],
        rets: &[Operand],
        targets: Option<&Operand>,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let set = match targets {
            Some(Operand::Name { name, component: None }) => {
                match self.body.call_sets.get(&name.value) {
                    Some(set) => set.clone(),
                    None => {
                        return Err(Diagnostic::error(
                            name.span,
                            format!(
                                "`{}` is no `.callprototype` or `.calltargets` label",
                                name.value
                            ),
                        ))
                    }
                }
            }
            _ => {
                return Err(Diagnostic::error(
                    callee.span(),
                    "an indirect call needs a `.callprototype` or `.calltargets` label",
                ))
            }
        };
        let functions = &self.module.functions;
        let candidates: Vec<(&ast::Function, ptxvk_frontend::Ident)> = match &set {
            CallSet::Targets(list) => list
                .iter()
                .map(|t| match functions.get(&t.value) {
                    Some(&f) => Ok((f, t.clone())),
                    None => {
                        Err(Diagnostic::error(t.span, format!("undefined function `{}`", t.value)))
                    }
                })
                .collect::<Result<_, _>>()?,
            CallSet::Prototype { returns, params } => functions
                .values()
                .filter(|f| self.facts.address_taken.contains(&f.name.value))
                .filter(|f| {
                    same_signature(&f.returns, returns) && same_signature(&f.params, params)
                })
                .map(|&f| (f, f.name.clone()))
                .collect(),
        };
        let target = self.src(callee, OpTy::U(64), false, span)?;
        let mut arms: Vec<CallArm> = Vec::new();
        for (f, name) in candidates {
            let address = function_address(functions, &name.value);
            let (callee, args, results) = self.call_operands(f, &name, args, rets, span)?;
            arms.push(CallArm { address, callee, args, results });
        }
        self.push(InstKind::CallIndirect { target, arms }, span);
        Ok(())
    }

    /// A call of `f` (named `name` at the call site): one `Call` of its IR function
    /// (lowered at its first call), or a system call.
    fn call_function(
        &mut self,
        f: &ast::Function,
        name: &ptxvk_frontend::Ident,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        if f.body.is_none() {
            return self.system_call(name, args, rets, span);
        }
        let (callee, args, results) = self.call_operands(f, name, args, rets, span)?;
        self.push(InstKind::Call { callee, args, results }, span);
        Ok(())
    }

    /// The callee, arguments and results of a call of `f` (named `name`): its IR
    /// function, lowered at its first call.
    fn call_operands(
        &mut self,
        f: &ast::Function,
        name: &ptxvk_frontend::Ident,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(FunctionId, Vec<Value>, Vec<RegId>), Diagnostic> {
        // A function CUDA provides is a system call when called directly.
        let Some(body) = f.body.as_deref() else {
            let msg = format!(
                "an indirect call of `{}`, a function CUDA provides, is not supported",
                name.value
            );
            return Err(Diagnostic::error(name.span, msg));
        };
        // A call that expects a result of a function that returns nothing is linked as
        // CUDA's linker links it (by name): the caller's result variable keeps its
        // value. numba-cuda declares external device functions with a status result
        // that CUDA C `void` definitions never write.
        let void_callee = f.returns.is_empty();
        if args.len() != f.params.len() || (rets.len() != f.returns.len() && !void_callee) {
            return Err(Diagnostic::error(
                span,
                format!(
                    "`{}` takes {} argument(s) and returns {} result(s); the call has {} argument(s) and {} result(s)",
                    name.value,
                    f.params.len(),
                    f.returns.len(),
                    args.len(),
                    rets.len()
                ),
            ));
        }
        // A call into a function being lowered: recursion.
        if let Some(pos) = self.call_stack.iter().position(|n| *n == name.value) {
            self.reserve_cycle(pos);
        }
        if self.call_stack.len() >= MAX_DEPTH {
            return Err(Diagnostic::error(
                span,
                format!("calls nested more than {MAX_DEPTH} deep"),
            ));
        }
        let callee = self.function(f, body)?;
        // Arguments in the callee's parameter order: `.reg` parameters by value, `.param`
        // parameters and results as the address of the caller's variable, then the
        // stack pointer.
        let mut values = Vec::new();
        let mut results = Vec::new();
        for (decl, actual) in f.params.iter().zip(args) {
            values.push(match decl.space {
                StateSpace::Param => self.param_address(actual, span)?,
                _ => self.src(actual, reg_param_type(decl)?, true, span)?,
            });
        }
        for (decl, actual) in f.returns.iter().zip(rets) {
            match decl.space {
                StateSpace::Param => values.push(self.param_address(actual, span)?),
                _ => results.push(self.reg_operand(actual)?.0),
            }
        }
        values.extend(self.body.stack_pointer.map(Value::Reg));
        Ok((callee, values, results))
    }

    /// The local-window address of the caller's `.param` variable `actual`, which a
    /// `.param` parameter is bound to.
    pub(super) fn param_address(
        &mut self,
        actual: &Operand,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let wrong = |_| {
            let msg = "a `.param` parameter takes a `.param` variable of the caller";
            Diagnostic::error(actual.span(), msg)
        };
        Ok(match self.param_slot(actual).map_err(wrong)? {
            Address { base: Some(base), offset } => {
                self.framed_address(base, offset as u32, OpTy::U(32), span)
            }
            Address { base: None, offset } => Value::Imm(offset as u64),
        })
    }

    /// The address `base + offset` in the local window, as a `ty` (32 or 64 bits).
    pub(super) fn framed_address(
        &mut self,
        base: RegId,
        offset: u32,
        ty: OpTy,
        span: Span,
    ) -> Value {
        let mut e = Emit { resolver: self, span };
        let ty = ty.as_unsigned();
        let base = if ty.bits() == 64 {
            e.cvt(ty, OpTy::U(32), Value::Reg(base))
        } else {
            Value::Reg(base)
        };
        if offset == 0 {
            base
        } else {
            e.add(ty, base, Value::Imm(u64::from(offset)))
        }
    }

    /// A call into `call_stack[pos]`, a function being lowered: the functions from it
    /// to the caller are on a call cycle. Their ids are reserved now, in the order
    /// their lowerings began, so that calls of them can be made before their lowerings
    /// end.
    fn reserve_cycle(&mut self, pos: usize) {
        for at in pos..self.call_stack.len() {
            let name = self.call_stack[at].clone();
            let Some(&f) = self.module.functions.get(&name) else { continue };
            if self.lowered_functions.contains_key(&name) {
                continue;
            }
            let id = FunctionId(self.kernel.functions.len() as u32);
            self.kernel.functions.push(Function::new(name.to_string(), f.span));
            self.lowered_functions.insert(name, Ok(id));
        }
    }

    /// The IR function of `f`, lowered at its first call.
    fn function(
        &mut self,
        f: &ast::Function,
        body: &[ast::Statement],
    ) -> Result<FunctionId, Diagnostic> {
        if let Some(done) = self.lowered_functions.get(&f.name.value) {
            return done.clone();
        }
        let result = self.lower_function(f, body);
        self.lowered_functions.insert(f.name.value.clone(), result.clone());
        result
    }

    /// Lowers `f`'s body once, in a body of its own (module doc of `crate::ir`,
    /// *Functions and calls*): its registers and blocks, its labels and scope; the
    /// kernel's layout (shared and local windows, flags) is shared. The `.local` and
    /// `.param` variables it declares are its own.
    fn lower_function(
        &mut self,
        f: &ast::Function,
        body: &[ast::Statement],
    ) -> Result<FunctionId, Diagnostic> {
        let span = f.name.span;
        let caller = self.enter_body(span);
        let signature = self.function_signature(f, &caller, span);
        let (params, returns, thread_regs) = match signature {
            Ok(s) => s,
            Err(e) => {
                self.leave_body(caller);
                return Err(e);
            }
        };
        let stack_pointer = self.body.stack_pointer;
        self.call_stack.push(f.name.value.clone());
        self.collect_labels(body);
        self.statements(body);
        if !self.body.closed {
            self.terminate(Terminator::Return, f.span);
        }
        self.call_stack.pop();
        // Its id was reserved if it was called while being lowered (`reserve_cycle`).
        let slot = match self.lowered_functions.get(&f.name.value) {
            Some(Ok(reserved)) => Some(*reserved),
            _ => None,
        };
        let FunctionBody { regs, blocks, entry, variables } = self.leave_body(caller);
        let id = slot.unwrap_or(FunctionId(self.kernel.functions.len() as u32));
        for v in variables {
            self.kernel.variables[v.index()].owner = Some(id);
        }
        let name = f.name.value.to_string();
        let function = Function {
            name,
            span: f.span,
            params,
            returns,
            stack_pointer,
            thread_regs,
            regs,
            blocks,
            entry,
            routine: None,
            body: Vec::new(),
        };
        match self.kernel.functions.get_mut(id.index()) {
            Some(reserved) => *reserved = function,
            None => self.kernel.functions.push(function),
        }
        Ok(id)
    }

    /// In a new body: `f`'s parameters and returns bound in its scope, then its stack
    /// pointer, and its own registers for the kernel's module-scope ones.
    fn function_signature(
        &mut self,
        f: &ast::Function,
        caller: &CallerBody,
        span: Span,
    ) -> Result<(PassedRegs, PassedRegs, ThreadRegs), Diagnostic> {
        let mut scope = BTreeMap::new();
        let (mut params, mut returns) = (Vec::new(), Vec::new());
        for (decl, is_return) in
            f.params.iter().map(|d| (d, false)).chain(f.returns.iter().map(|d| (d, true)))
        {
            let [param] = decl.names.as_slice() else {
                return Err(Diagnostic::error(decl.span, "declare one parameter per declaration"));
            };
            match decl.space {
                // The address of the caller's `.param` variable, in the local window.
                StateSpace::Param => {
                    let at = self.temp(RegTy::Int(32), span);
                    scope.insert(param.name.value.clone(), Symbol::Framed(at, 0));
                    params.push((at, OpTy::U(32)));
                }
                StateSpace::Reg => {
                    let ty = reg_param_type(decl)?;
                    let reg = self.temp(ty.storage(), span);
                    scope.insert(param.name.value.clone(), Symbol::Reg(reg));
                    if is_return {
                        returns.push((reg, ty))
                    } else {
                        params.push((reg, ty))
                    }
                }
                _ => return Err(Diagnostic::error(decl.span, "parameters are `.reg` or `.param`")),
            }
        }
        // The kernel's module-scope registers, each through one of its own.
        let mut module_scope = self.module_scope.clone();
        let mut thread_regs = Vec::new();
        for sym in module_scope.values_mut() {
            let Symbol::Reg(r) = *sym else { continue };
            if let Some(info) = self.thread_regs.get(&r).cloned() {
                let own = self.temp(info.ty, span);
                self.kernel.regs[own.index()].name = info.name;
                thread_regs.push((own, r));
                *sym = Symbol::Reg(own);
            }
        }
        if caller.body.stack_pointer.is_some() {
            let own = self.temp(RegTy::Int(32), span);
            params.push((own, OpTy::U(32)));
            self.body.stack_pointer = Some(own);
        }
        self.body.scopes = vec![module_scope, scope];
        Ok((params, returns, thread_regs))
    }
}

/// A function's registers for the kernel's (`Function::thread_regs`).
type ThreadRegs = Vec<(RegId, RegId)>;

/// The operation type of a `.reg` parameter (a scalar).
fn reg_param_type(decl: &ast::VarDecl) -> Result<OpTy, Diagnostic> {
    let scalar = match (decl.ty.value.scalar(), decl.vector, decl.names.as_slice()) {
        (Some(scalar), None, [param]) if param.dims.is_empty() => scalar,
        _ => {
            return Err(Diagnostic::error(
                decl.span,
                "`.reg` parameters are supported for scalar types",
            ))
        }
    };
    op_ty(&Spanned::new(scalar, decl.ty.span))
}

#[cfg(test)]
mod tests {
    use crate::interp::check::{self, Program};
    use crate::interp::{self, memory::Region, Launch};
    use crate::ir::{InstKind, Kernel};

    const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

    /// `scale` (two `.param` parameters, a `.param` result) calls `odd` (`.reg` in and
    /// out) and exits the thread for 5; the kernel calls `scale` twice.
    const CALLS: &str = "\
.func (.reg .b32 r) odd(.reg .b32 x)\n{\n and.b32 r, x, 1;\n ret;\n}\n\
.func (.param .b32 out) scale(.param .b32 a, .param .b32 b)\n{\n\
 .reg .b32 %r<5>;\n .reg .pred %p<3>;\n\
 ld.param.b32 %r1, [a];\n ld.param.b32 %r2, [b];\n\
 setp.eq.u32 %p2, %r1, 5;\n @%p2 exit;\n\
 call.uni (%r3), odd, (%r1);\n setp.ne.u32 %p1, %r3, 0;\n\
 mul.lo.u32 %r4, %r1, %r2;\n @%p1 add.u32 %r4, %r4, 1000;\n\
 st.param.b32 [out], %r4;\n ret;\n}\n\
.entry k(.param .u64 p)\n{\n .reg .b32 %r<6>;\n .reg .b64 %rd<4>;\n\
 ld.param.u64 %rd1, [p];\n mov.u32 %r1, %tid.x;\n\
 mul.wide.u32 %rd2, %r1, 4;\n add.u64 %rd3, %rd1, %rd2;\n\
 { .param .b32 a0; .param .b32 b0; .param .b32 r0;\n\
   st.param.b32 [a0], %r1;\n st.param.b32 [b0], 3;\n\
   call.uni (r0), scale, (a0, b0);\n ld.param.b32 %r2, [r0]; }\n\
 { .param .b32 a1; .param .b32 b1; .param .b32 r1;\n\
   st.param.b32 [a1], %r2;\n st.param.b32 [b1], 2;\n\
   call.uni (r1), scale, (a1, b1);\n ld.param.b32 %r3, [r1]; }\n\
 st.global.u32 [%rd3], %r3;\n ret;\n}\n";

    fn kernel(ptx: &str) -> Kernel {
        let module = ptxvk_frontend::parse(&format!("{HEADER}{ptx}")).expect("parses");
        crate::sema::run(&module).expect("lowers").kernels.remove(0)
    }

    fn calls(k: &Kernel) -> usize {
        k.all_insts().filter(|i| matches!(i.kind, InstKind::Call { .. })).count()
    }

    /// A launch of one block of `threads` threads whose parameter points at a buffer
    /// of 32 bytes of 0xee.
    fn one_block(threads: u32) -> Launch {
        let base = check::BUFFER_STRIDE;
        Launch {
            grid: [1, 1, 1],
            block: [threads, 1, 1],
            params: base.to_le_bytes().to_vec(),
            buffers: vec![Region { base, bytes: vec![0xee; 32] }],
            dynamic_shared: 0,
            step_limit: 100_000,
        }
    }

    #[test]
    fn each_function_is_lowered_once_and_each_call_is_one_call() {
        let k = kernel(CALLS);
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        let names: Vec<&str> = k.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["odd", "scale"]);
        // The kernel's two calls of scale and scale's call of odd.
        assert_eq!(calls(&k), 3);
        // scale: two `.param` addresses and its result's; it may end the thread, and
        // returns the flag that says it did once `pass::thread_ends` ran.
        let scale = &k.functions[1];
        assert_eq!(scale.params.len(), 3);
        assert_eq!(scale.returns.len(), 0);
        let mut ended = k.clone();
        crate::pass::thread_ends::run(&mut ended);
        let returns: Vec<usize> = ended.functions.iter().map(|f| f.returns.len()).collect();
        assert_eq!(returns, [1, 1]);
        assert_eq!(ended.functions[1].returns[0].1, crate::ir::OpTy::Pred);
    }

    /// The thread's registers a function shares with its kernel: a module-scope `.reg`
    /// variable it writes; the last error it reads is the kernel's after inlining
    /// (`pass::expand_runtime`).
    const SHARED: &str = "\
.reg .b32 g;\n\
.extern .func (.param .b32 r) cudaPeekAtLastError();\n\
.func (.reg .b32 e) set_g(.reg .b32 x)\n{\n .param .b32 r0;\n\
 add.u32 g, g, x;\n call.uni (r0), cudaPeekAtLastError, ();\n ld.param.b32 e, [r0];\n ret;\n}\n\
.entry k(.param .u64 p)\n{\n .reg .b32 %r<4>;\n .reg .b64 %rd<4>;\n\
 ld.param.u64 %rd1, [p];\n mov.u32 %r1, %tid.x;\n mov.u32 g, 100;\n\
 call.uni (%r2), set_g, (%r1);\n call.uni (%r3), set_g, (%r1);\n\
 mul.wide.u32 %rd2, %r1, 8;\n add.u64 %rd3, %rd1, %rd2;\n\
 st.global.u32 [%rd3], g;\n st.global.u32 [%rd3+4], %r3;\n ret;\n}\n";

    #[test]
    fn module_registers_go_in_and_out_of_calls() {
        let k = kernel(SHARED);
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        // `x` in and `e` out; `g` through its own register for the kernel's, which
        // `pass::thread_registers` passes in and out.
        let f = &k.functions[0];
        assert_eq!((f.params.len(), f.returns.len()), (1, 1), "{}", crate::text::print(&k));
        assert_eq!(f.thread_regs.len(), 1);
        let g = f.thread_regs[0].1;
        assert_eq!(k.regs[g.index()].name, "g");
        let mut inlined = k.clone();
        crate::pass::thread_registers::run(&mut inlined).expect("passes");
        let f = &inlined.functions[0];
        assert_eq!((f.params.len(), f.returns.len()), (2, 2));
        crate::pass::inline::run(&mut inlined).expect("inlines");
        crate::pass::expand_runtime::run(&mut inlined).expect("expands");
        let launch = one_block(4);
        for program in [&k, &inlined] {
            let out = interp::run(program, None, &launch).expect("runs");
            for t in 0..4u32 {
                let at = 8 * t as usize;
                let word =
                    |i: usize| u32::from_le_bytes(out.buffers[0][i..i + 4].try_into().unwrap());
                assert_eq!((word(at), word(at + 4)), (100 + 2 * t, 0), "thread {t}");
            }
        }
    }

    #[test]
    fn inlined_calls_compute_what_the_calls_did_and_exit_ends_the_thread() {
        let k = kernel(CALLS);
        let mut inlined = k.clone();
        crate::pass::inline::run(&mut inlined).expect("inlines");
        assert_eq!(calls(&inlined), 0);
        let tally = check::check(Program::cfg(&k), Program::cfg(&inlined), 36, 4)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(tally.observed > 0, "{tally:?}");
        // Thread t stores scale(scale(t, 3), 2); thread 5 exits in the first call.
        let launch = one_block(8);
        for program in [&k, &inlined] {
            let out = interp::run(program, None, &launch).expect("runs");
            let words: Vec<u32> = out.buffers[0]
                .chunks(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect();
            let scale = |x: u32, y: u32| x * y + if x & 1 != 0 { 1000 } else { 0 };
            for (t, &w) in words.iter().enumerate() {
                let want = if t == 5 { 0xeeee_eeee } else { scale(scale(t as u32, 3), 2) };
                assert_eq!(w, want, "thread {t}");
            }
        }
    }
}
