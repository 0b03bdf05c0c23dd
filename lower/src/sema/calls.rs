//! `call` to `.func` device functions (PTX ISA 9.2 §9.7.12.4, ABI guide §3): every call
//! is inlined at its call site. Parameters follow the PTX ABI: the caller declares
//! `.param` variables in its own frame (here, in the thread's local window, see
//! `Lowerer::declare`), writes the arguments with `st.param` and reads the results with
//! `ld.param`; the callee's `.param` parameters are bound to those same variables, so
//! structs by value and address-taken parameters need no copies. `.reg` parameters are
//! fresh registers, copied in before the body and out after it. `ret` in the callee
//! continues after the call.
//!
//! An indirect call through a function pointer tests the pointer against each possible
//! callee (its `.calltargets`, or the functions matching its `.callprototype` that the
//! kernel names anywhere) and inlines each. A function's address is
//! `ir::FUNCTION_WINDOW` plus its index, so it survives being stored and loaded.
//!
//! SPIR-V forbids recursion (SPIR-V 2.16.1: "no function can call itself"): a call into
//! a call cycle (recursion, direct or mutual, through function pointers too) is not
//! inlined but lowered by `sema::recursion`, as a machine over an explicit per-thread
//! stack; calls from the cycle's functions out of the cycle are inlined as usual. Calls
//! of declared functions without a body are system calls (`sema::system`).

use std::collections::{BTreeMap, BTreeSet};

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::{Diagnostic, Name, Span, Spanned};

use super::{names_used, op_ty, Lowerer, Resolved, Symbol};
use crate::build::Build;
use crate::ir::{BlockId, InstKind, OpTy, Terminator, Value, FUNCTION_WINDOW};

/// Calls nest at most this deep (a guard against exponential inlining).
const MAX_DEPTH: usize = 64;

/// The call being inlined.
pub(super) struct Frame {
    /// Where the callee's `ret` goes.
    pub(super) ret_target: BlockId,
}

/// The names module-scope variable initializers use (function addresses in tables).
pub(super) fn named_by_initializers(module: &ast::Module) -> BTreeSet<Name> {
    fn walk(init: &ast::Initializer, out: &mut BTreeSet<Name>) {
        match init {
            ast::Initializer::List(items, _) => items.iter().for_each(|i| walk(i, out)),
            ast::Initializer::Expr(e) => {
                if let ast::ExprKind::Symbol(n) | ast::ExprKind::Generic(n) = &e.kind {
                    out.insert(n.clone());
                }
            }
            ast::Initializer::Fields(..) => {}
        }
    }
    let mut out = BTreeSet::new();
    for item in &module.items {
        if let ast::Item::Variable(v) = item {
            v.names.iter().filter_map(|n| n.init.as_ref()).for_each(|i| walk(i, &mut out));
        }
    }
    out
}

/// The device functions with bodies that `body` names (calls or takes the address of),
/// directly or through other functions, plus those named in `roots` (function tables
/// in module variables), in name order.
pub(super) fn reachable<'m>(
    body: &[ast::Statement],
    roots: &BTreeSet<Name>,
    functions: &BTreeMap<Name, &'m ast::Function>,
) -> Vec<&'m ast::Function> {
    let mut found: BTreeMap<&str, &'m ast::Function> = BTreeMap::new();
    let mut work = vec![body];
    let mut first = true;
    while let Some(stmts) = work.pop() {
        let mut used = BTreeSet::new();
        names_used(stmts, &mut used);
        if std::mem::take(&mut first) {
            used.extend(roots.iter().map(|n| n.as_str()));
        }
        for name in used {
            if let Some(&f) = functions.get(name) {
                if let (Some(b), false) = (f.body.as_deref(), found.contains_key(name)) {
                    found.insert(f.name.value.as_str(), f);
                    work.push(b);
                }
            }
        }
    }
    found.into_values().collect()
}

/// What an indirect call may call: a `.calltargets` list or a `.callprototype`.
#[derive(Clone, Debug)]
pub(super) enum CallSet {
    Targets(Vec<ptxvk_frontend::Ident>),
    Prototype { returns: Vec<ast::Param>, params: Vec<ast::Param> },
}

/// The address of function `name` (`mov.u64 %rd, name`): [`FUNCTION_WINDOW`] plus its
/// position among the module's device functions, counting from 1.
pub(super) fn function_address(functions: &BTreeMap<Name, &ast::Function>, name: &str) -> u64 {
    let index = functions.keys().position(|k| k.as_str() == name).unwrap_or(0) as u64;
    FUNCTION_WINDOW | (index + 1)
}

/// Whether two parameter lists have the same state spaces, types and sizes.
pub(super) fn same_signature(a: &[ast::Param], b: &[ast::Param]) -> bool {
    let shape =
        |p: &ast::Param| (p.space, p.ty.value, p.vector, p.names.first().map(|n| n.dims.clone()));
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| shape(x) == shape(y))
}

/// `ret` inside an inlined function continues after its call; in a kernel it ends the
/// thread.
pub(super) fn ret_terminator(frame: &Option<Frame>) -> Terminator {
    match frame {
        Some(f) => Terminator::Jump(f.ret_target),
        None => Terminator::Return,
    }
}

impl Lowerer<'_> {
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
                let Some(&f) = self.functions.get(&name.value) else {
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

    /// An indirect call: a test of the function address against each candidate (the
    /// `.calltargets` list, or every function the kernel names whose signature matches
    /// the `.callprototype`), each inlined.
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
                match self.call_sets.get(&name.value) {
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
        let functions = self.functions;
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
                .filter(|f| self.reachable_functions.contains(&f.name.value))
                .filter(|f| {
                    same_signature(&f.returns, returns) && same_signature(&f.params, params)
                })
                .map(|&f| (f, f.name.clone()))
                .collect(),
        };
        let ptr = self.src(callee, OpTy::U(64), false, span)?;
        let join = self.new_block(None, span);
        for (f, name) in candidates {
            let id = function_address(functions, &name.value);
            let hit = super::expand::Emit { l: self, span }.cmp(
                crate::ir::CmpOp::Eq,
                OpTy::U(64),
                ptr,
                Value::Imm(id),
            );
            let then = self.new_block(None, span);
            let next = self.new_block(None, span);
            self.terminate(
                Terminator::Branch { cond: hit, negate: false, if_true: then, if_false: next },
                span,
            );
            self.cur = then;
            self.closed = false;
            self.call_function(f, &name, args, rets, span)?;
            if !self.closed {
                self.terminate(Terminator::Jump(join), span);
            }
            self.cur = next;
            self.closed = false;
        }
        // An address that is no candidate is undefined behaviour in PTX: no call.
        self.terminate(Terminator::Jump(join), span);
        self.cur = join;
        self.closed = false;
        Ok(())
    }

    /// A call of `f` (named `name` at the call site): inlined, or a system call.
    fn call_function(
        &mut self,
        f: &ast::Function,
        name: &ptxvk_frontend::Ident,
        args: &[Operand],
        rets: &[Operand],
        span: Span,
    ) -> Result<(), Diagnostic> {
        let Some(body) = f.body.as_deref() else {
            return self.system_call(name, args, rets, span);
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
        if let Some(done) = self.recursive_call(f, args, rets, span) {
            return done;
        }
        // Every call cycle is lowered by `sema::recursion`, so this is a guard.
        if let Some(pos) = self.call_stack.iter().position(|n| *n == name.value) {
            let mut cycle: Vec<&str> = self.call_stack[pos..].iter().map(|n| n.as_str()).collect();
            cycle.push(name.value.as_str());
            return Err(Diagnostic::internal(
                name.span,
                format!("recursive call not found as a call cycle: {}", cycle.join(" → ")),
            ));
        }
        if self.call_stack.len() >= MAX_DEPTH {
            return Err(Diagnostic::error(
                span,
                format!("calls nested more than {MAX_DEPTH} deep"),
            ));
        }
        let mut scope = BTreeMap::new();
        for (decl, actual) in f.params.iter().zip(args) {
            if let Some(r) = self.bind(decl, actual, &mut scope, span)? {
                let v = self.src(actual, r.1, true, span)?;
                self.push(InstKind::Mov { ty: r.1, dst: r.0, src: v }, span);
            }
        }
        let mut copy_out = Vec::new();
        for (decl, actual) in f.returns.iter().zip(rets) {
            if let Some((reg, ty)) = self.bind(decl, actual, &mut scope, span)? {
                let (dst, _) = self.reg_operand(actual)?;
                copy_out.push((dst, reg, ty));
            }
        }
        self.inline(name.value.clone(), body, scope, span);
        for (dst, reg, ty) in copy_out {
            self.push(InstKind::Mov { ty, dst, src: Value::Reg(reg) }, span);
        }
        Ok(())
    }

    /// Binds the callee parameter `decl` to the call's operand `actual` in `scope`: a
    /// `.param` parameter names the caller's `.param` variable; a `.reg` parameter gets
    /// a fresh register, returned for the caller to copy in or out.
    fn bind(
        &mut self,
        decl: &ast::VarDecl,
        actual: &Operand,
        scope: &mut BTreeMap<Name, Symbol>,
        span: Span,
    ) -> Result<Option<(crate::ir::RegId, crate::ir::OpTy)>, Diagnostic> {
        let [param] = decl.names.as_slice() else {
            return Err(Diagnostic::error(decl.span, "declare one parameter per declaration"));
        };
        match decl.space {
            StateSpace::Param => {
                let slot = match actual {
                    Operand::Name { name, component: None } => match self.lookup(&name.value) {
                        Some(Resolved::Local(off)) => Some(Symbol::Local(off)),
                        Some(Resolved::Framed(base, off)) => Some(Symbol::Framed(base, off)),
                        _ => None,
                    },
                    _ => None,
                };
                let Some(slot) = slot else {
                    return Err(Diagnostic::error(
                        actual.span(),
                        "a `.param` parameter takes a `.param` variable of the caller",
                    ));
                };
                scope.insert(param.name.value.clone(), slot);
                Ok(None)
            }
            StateSpace::Reg => {
                let (Some(scalar), None, true) =
                    (decl.ty.value.scalar(), decl.vector, param.dims.is_empty())
                else {
                    return Err(Diagnostic::error(
                        decl.span,
                        "`.reg` parameters are supported for scalar types",
                    ));
                };
                let ty = op_ty(&Spanned::new(scalar, decl.ty.span))?;
                let reg = self.temp(ty.storage(), span);
                scope.insert(param.name.value.clone(), Symbol::Reg(reg));
                Ok(Some((reg, ty)))
            }
            _ => Err(Diagnostic::error(decl.span, "parameters are `.reg` or `.param`")),
        }
    }

    /// Lowers `body` here, in a scope of its own with its own labels; its `ret` jumps to
    /// the code after the call.
    fn inline(
        &mut self,
        name: Name,
        body: &[ast::Statement],
        scope: BTreeMap<Name, Symbol>,
        span: Span,
    ) {
        // What the function allocates on the stack is freed when it returns.
        let saved_sp = self.stack_pointer.map(|sp| {
            let saved = self.temp(crate::ir::RegTy::Int(32), span);
            self.push(InstKind::Mov { ty: OpTy::U(32), dst: saved, src: Value::Reg(sp) }, span);
            (sp, saved)
        });
        let after = self.new_block(None, span);
        let labels = std::mem::take(&mut self.labels);
        let tables = std::mem::take(&mut self.branch_tables);
        let sets = std::mem::take(&mut self.call_sets);
        // The inlined function's variables are not in a recursive caller's frame.
        let member = self.recursion.suspend_member();
        let frame = self.frame.replace(Frame { ret_target: after });
        let scopes = std::mem::replace(&mut self.scopes, vec![self.module_scope.clone(), scope]);
        let spaces = self.function_spaces.get(&name).cloned().unwrap_or_default();
        let spaces = std::mem::replace(&mut self.spaces, spaces);
        self.call_stack.push(name);
        self.open(span);
        self.collect_labels(body);
        self.statements(body);
        if !self.closed {
            self.terminate(Terminator::Jump(after), span);
        }
        self.scopes = scopes;
        self.spaces = spaces;
        self.call_stack.pop();
        self.recursion.resume_member(member);
        self.frame = frame;
        self.branch_tables = tables;
        self.call_sets = sets;
        self.labels = labels;
        self.cur = after;
        self.closed = false;
        if let Some((sp, saved)) = saved_sp {
            self.push(InstKind::Mov { ty: OpTy::U(32), dst: sp, src: Value::Reg(saved) }, span);
        }
    }
}
