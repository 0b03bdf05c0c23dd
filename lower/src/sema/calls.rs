//! `call` to `.func` device functions (PTX ISA 9.2 §9.7.12.4, ABI guide §3): every call
//! is inlined at its call site. Parameters follow the PTX ABI: the caller declares
//! `.param` variables in its own frame (here, in the thread's local window, see
//! `Lowerer::declare`), writes the arguments with `st.param` and reads the results with
//! `ld.param`; the callee's `.param` parameters are bound to those same variables, so
//! structs by value and address-taken parameters need no copies. `.reg` parameters are
//! fresh registers, copied in before the body and out after it. `ret` in the callee
//! continues after the call.
//!
//! SPIR-V forbids recursion (SPIR-V 2.16.1: "no function can call itself"), so a call
//! cycle is rejected with a diagnostic naming it. Indirect calls through function
//! pointers are rejected too. Calls of declared functions without a body are system
//! calls (`sema::system`).

use std::collections::{BTreeMap, BTreeSet};

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::{Diagnostic, Name, Span, Spanned};

use super::{names_used, op_ty, reject_other, unsupported, Lowerer, Mods, Resolved, Symbol};
use crate::ir::{BlockId, InstKind, OpTy, Terminator, Value};

/// Calls nest at most this deep (a guard against exponential inlining).
const MAX_DEPTH: usize = 64;

/// The call being inlined.
pub(super) struct Frame {
    /// Where the callee's `ret` goes.
    ret_target: BlockId,
}

/// The device functions with bodies that `body` calls, directly or through other
/// functions, in name order.
pub(super) fn reachable<'m>(
    body: &[ast::Statement],
    functions: &BTreeMap<Name, &'m ast::Function>,
) -> Vec<&'m ast::Function> {
    let mut found: BTreeMap<&str, &'m ast::Function> = BTreeMap::new();
    let mut work = vec![body];
    while let Some(stmts) = work.pop() {
        let mut used = BTreeSet::new();
        names_used(stmts, &mut used);
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

/// `ret` inside an inlined function continues after its call; in a kernel it ends the
/// thread.
pub(super) fn ret_terminator(frame: &Option<Frame>) -> Terminator {
    match frame {
        Some(f) => Terminator::Jump(f.ret_target),
        None => Terminator::Return,
    }
}

impl Lowerer<'_> {
    /// `call{.uni} (results), f, (arguments);` with a direct callee.
    pub(super) fn call(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        reject_other(m, &[".uni"])?;
        let (rets, rest): (&[Operand], &[Operand]) = match i.operands.as_slice() {
            [Operand::List(r, _), rest @ ..] => (r, rest),
            rest => (&[], rest),
        };
        let (callee, args) = match rest {
            [c, Operand::List(a, _)] => (c, a.as_slice()),
            [c] => (c, &[][..]),
            [c, ..] => {
                return Err(unsupported(
                    c.span(),
                    "an indirect call through a function pointer",
                    "only direct calls are inlined",
                ))
            }
            [] => return Err(Diagnostic::error(span, "`call` needs a function")),
        };
        let name = match callee {
            Operand::Name { name, component: None } if self.lookup(&name.value).is_none() => name,
            other => {
                return Err(unsupported(
                    other.span(),
                    "an indirect call through a function pointer",
                    "only direct calls are inlined",
                ))
            }
        };
        let Some(&f) = self.functions.get(&name.value) else {
            return Err(Diagnostic::error(
                name.span,
                format!("undefined function `{}`", name.value),
            ));
        };
        let Some(body) = f.body.as_deref() else {
            return self.system_call(name, args, rets, span);
        };
        if let Some(pos) = self.call_stack.iter().position(|n| *n == name.value) {
            let mut cycle: Vec<&str> = self.call_stack[pos..].iter().map(|n| n.as_str()).collect();
            cycle.push(name.value.as_str());
            return Err(Diagnostic::error(
                name.span,
                format!("recursive call: {}", cycle.join(" → ")),
            )
            .with_note(
                "SPIR-V has no recursion; ptxvk inlines every call and rejects call cycles",
            ));
        }
        if self.call_stack.len() >= MAX_DEPTH {
            return Err(Diagnostic::error(
                span,
                format!("calls nested more than {MAX_DEPTH} deep"),
            ));
        }
        if args.len() != f.params.len() || rets.len() != f.returns.len() {
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
                        Some(Resolved::Local(off)) => Some(off),
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
                scope.insert(param.name.value.clone(), Symbol::Local(slot));
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
        self.frame = frame;
        self.branch_tables = tables;
        self.labels = labels;
        self.cur = after;
        self.closed = false;
        if let Some((sp, saved)) = saved_sp {
            self.push(InstKind::Mov { ty: OpTy::U(32), dst: sp, src: Value::Reg(saved) }, span);
        }
    }
}
