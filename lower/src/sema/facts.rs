//! What sema knows before it resolves an instruction: the facts of the module that
//! every kernel shares ([`ModuleFacts`]) and the analyses of one kernel's AST
//! ([`KernelFacts`]). Each is computed once, by one function, from the AST alone, and
//! read-only while the [`Resolver`](super::Resolver) resolves the kernel (naga's front
//! ends likewise keep their module analyses apart from the name resolution).

use std::collections::{BTreeMap, BTreeSet};

use ptxvk_frontend::ast::{self, ExprKind, Operand, ScalarType, StateSpace};
use ptxvk_frontend::modifier::{self as md, Modifier};
use ptxvk_frontend::{decode, Name, Opcode, Span};

use super::device_launch::DeviceRuntime;
use super::{atomic, barrier, reserved, stack};
use crate::globals::ModuleData;

/// What every kernel of a module shares, for the lowering of one of them.
pub(super) struct ModuleFacts<'m> {
    /// Module-scope `.shared` variables (file-scope `__shared__`, `extern __shared__`):
    /// every kernel that names one gets its own instance in its shared window.
    pub(super) module_shared: Vec<&'m ast::VarDecl>,
    /// Module-scope `.reg` and `.local` variables (PTX ISA 1.x-2.x; §5.1.1, §5.1.5):
    /// per-thread storage that every function of the module names. Each kernel
    /// declares them in its module scope and passes the registers to the functions it
    /// calls (`sema::calls`).
    pub(super) module_per_thread: Vec<&'m ast::VarDecl>,
    /// The module data (`crate::globals`).
    pub(super) data: &'m ModuleData,
    /// The module-data offsets of `.global`/`.const` variables declared inside
    /// functions, by the span of the declared name (`globals::GlobalVar::decl`).
    pub(super) scoped_globals: BTreeMap<Span, u32>,
    /// The module's device functions (defined or `.extern`), by name.
    pub(super) functions: BTreeMap<Name, &'m ast::Function>,
    /// Functions named in module-variable initializers (function tables).
    pub(super) table_functions: BTreeSet<Name>,
    /// The module's `.version` (PTX ISA 1.x gives some instructions default modes).
    pub(super) version: (u32, u32),
    pub(super) address_size: u32,
    /// The launch targets of device-side launches (`sema::device_launch`).
    pub(super) device_runtime: DeviceRuntime,
}

impl<'m> ModuleFacts<'m> {
    /// The facts of the prepared module `prepared`.
    pub(super) fn of(prepared: &'m super::PreparedModule<'_>) -> ModuleFacts<'m> {
        let module: &'m ast::Module = &prepared.module;
        let variables = |keep: &dyn Fn(StateSpace) -> bool| -> Vec<&'m ast::VarDecl> {
            let items = module.items.iter();
            items
                .filter_map(|i| match i {
                    ast::Item::Variable(v) if keep(v.space) => Some(v),
                    _ => None,
                })
                .collect()
        };
        let data = &prepared.data;
        ModuleFacts {
            module_shared: variables(&|s| s == StateSpace::Shared),
            module_per_thread: variables(&|s| matches!(s, StateSpace::Reg | StateSpace::Local)),
            data,
            scoped_globals: data.vars.iter().filter_map(|g| Some((g.decl?, g.offset))).collect(),
            functions: super::device_functions(module),
            table_functions: named_by_initializers(module),
            version: module.version.as_ref().map_or((0, 0), |v| v.value),
            address_size: prepared.address_size,
            device_runtime: DeviceRuntime::new(prepared.kernel_names.clone(), prepared.max_params),
        }
    }
}

/// The analyses of one kernel's AST and of the device functions it reaches, which
/// decide what the kernel declares before its instructions are resolved.
pub(super) struct KernelFacts<'m> {
    /// The device functions with bodies the kernel reaches ([`reachable`]), in name
    /// order.
    pub(super) callees: Vec<&'m ast::Function>,
    /// Every name the kernel and its callees mention ([`names_used`]).
    pub(super) names: BTreeSet<&'m str>,
    /// The callees whose address is taken: the candidates of `.callprototype` calls
    /// ([`address_taken`]).
    pub(super) address_taken: BTreeSet<Name>,
    /// Some instruction uses the thread's stack (`sema::stack`).
    pub(super) uses_stack: bool,
    /// The kernel makes generic addresses of shared or local memory (`cvta` to the
    /// generic space, [`makes_generic_window`]): then generic accesses dispatch on the
    /// address's window; else every generic address is global and they go straight to
    /// global memory.
    pub(super) generic_windows: bool,
    /// Some 64-bit atomic may reach shared memory: the shared window is one of 64-bit
    /// words (`atomic::may_be_wide_shared`).
    pub(super) wide_shared: bool,
    /// Some `bar.red` needs the shared word it counts in (`barrier::is_reduction`).
    pub(super) bar_reduction: bool,
    /// Some instruction names a register of the reserved shared area
    /// (`sema::reserved`).
    pub(super) reserved_area: bool,
}

impl<'m> KernelFacts<'m> {
    /// The analyses of kernel `f` of the module of `module`.
    pub(super) fn of(f: &'m ast::Function, module: &ModuleFacts<'m>) -> KernelFacts<'m> {
        let body = f.body.as_deref().unwrap_or(&[]);
        let callees = reachable(body, &module.table_functions, &module.functions);
        let bodies: Vec<&'m [ast::Statement]> = std::iter::once(body)
            .chain(callees.iter().map(|c| c.body.as_deref().unwrap_or(&[])))
            .collect();
        let any = |f: &dyn Fn(&ast::Instruction) -> bool| bodies.iter().any(|b| contains(b, f));
        let mut names = BTreeSet::new();
        bodies.iter().for_each(|b| names_used(b, &mut names));
        let generic_windows = any(&makes_generic_window);
        KernelFacts {
            address_taken: address_taken(body, &callees, &module.table_functions),
            uses_stack: any(&stack::uses_stack),
            generic_windows,
            wide_shared: any(&|i| atomic::may_be_wide_shared(i, generic_windows)),
            bar_reduction: any(&barrier::is_reduction),
            reserved_area: names.iter().any(|n| reserved::is_reserved_register(n)),
            names,
            callees,
        }
    }
}

/// The names module-scope variable initializers use (function addresses in tables).
fn named_by_initializers(module: &ast::Module) -> BTreeSet<Name> {
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
fn reachable<'m>(
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

/// The functions among `callees` whose address is taken: named by the kernel's `body`
/// or a callee's other than as the function of a direct call (`mov.u64 %rd, f`, an
/// argument), or by a module table (`roots`). Only these can be the target of an
/// indirect call through a `.callprototype`: a function that is only ever called
/// directly has no address any register could hold.
fn address_taken(
    body: &[ast::Statement],
    callees: &[&ast::Function],
    roots: &BTreeSet<Name>,
) -> BTreeSet<Name> {
    let mut named = BTreeSet::new();
    for stmts in std::iter::once(body).chain(callees.iter().filter_map(|c| c.body.as_deref())) {
        names_taken(stmts, &mut named);
    }
    callees
        .iter()
        .map(|c| &c.name.value)
        .filter(|n| named.contains(*n) || roots.contains(*n))
        .cloned()
        .collect()
}

/// The names `stmts` use but as the function (or the prototype) of a `call`.
fn names_taken(stmts: &[ast::Statement], out: &mut BTreeSet<Name>) {
    for s in stmts {
        let mut names = BTreeSet::new();
        match s {
            // `call (results), f, (arguments), proto`: the lists only.
            ast::Statement::Instruction(i) if i.op == Some(Opcode::Call) => {
                let lists = i.operands.iter().filter(|o| matches!(o, Operand::List(..)));
                let call = ast::Instruction { operands: lists.cloned().collect(), ..i.clone() };
                let call = [ast::Statement::Instruction(call)];
                names_used(&call, &mut names);
                out.extend(names.into_iter().map(Name::from));
            }
            ast::Statement::Block(inner, _) => names_taken(inner, out),
            other => {
                names_used(std::slice::from_ref(other), &mut names);
                out.extend(names.into_iter().map(Name::from));
            }
        }
    }
}

/// Every name an operand of `stmts` mentions (registers, variables, labels).
fn names_used<'a>(stmts: &'a [ast::Statement], out: &mut BTreeSet<&'a str>) {
    fn operand<'a>(op: &'a Operand, out: &mut BTreeSet<&'a str>) {
        match op {
            Operand::Name { name, .. } => {
                out.insert(name.value.as_str());
            }
            Operand::Address(a) => {
                if let Some(b) = &a.base {
                    out.insert(b.value.as_str());
                }
            }
            Operand::Imm(e) => expr(e, out),
            Operand::Not(o, _) => operand(o, out),
            Operand::Pair(a, b, _) => {
                operand(a, out);
                operand(b, out);
            }
            Operand::Vector(v, _) | Operand::List(v, _) | Operand::Tuple(v, _) => {
                v.iter().for_each(|o| operand(o, out))
            }
            Operand::Neg(o, _) => operand(o, out),
            Operand::Sink(_) => {}
        }
    }
    fn expr<'a>(e: &'a ast::Expr, out: &mut BTreeSet<&'a str>) {
        match &e.kind {
            ExprKind::Symbol(s) | ExprKind::Generic(s) => {
                out.insert(s.as_str());
            }
            ExprKind::Unary(_, a)
            | ExprKind::Cast { expr: a, .. }
            | ExprKind::Mask { expr: a, .. } => expr(a, out),
            ExprKind::Binary(_, a, b) => {
                expr(a, out);
                expr(b, out);
            }
            ExprKind::Ternary(a, b, c) => {
                expr(a, out);
                expr(b, out);
                expr(c, out);
            }
            ExprKind::Int { .. } | ExprKind::F32Bits(_) | ExprKind::F64Bits(_) => {}
        }
    }
    for s in stmts {
        match s {
            ast::Statement::Instruction(i) => i.operands.iter().for_each(|o| operand(o, out)),
            ast::Statement::Block(inner, _) => names_used(inner, out),
            _ => {}
        }
    }
}

/// Whether `i` makes a generic address of shared or local memory (`cvta.shared`,
/// `cvta.local` without `.to`): the address-space inference of ptxvk in its simplest,
/// whole-kernel form (`pass::infer_spaces` is the per-register one): without such a
/// conversion no generic address can point into shared or local memory.
fn makes_generic_window(i: &ast::Instruction) -> bool {
    // A 32-bit generic address of a kernel parameter is in a window too (in 64-bit
    // modules it is the parameter block's global address).
    if i.op != Some(Opcode::Cvta) {
        return false;
    }
    let Ok(Some(m)) = decode::decode(i) else { return false };
    let space = m.space.as_ref().map(|s| s.value);
    let param32 =
        space == Some(StateSpace::Param) && m.types.iter().any(|t| t.value == ScalarType::U32);
    !m.has(Modifier::Conversion(md::Conversion::To))
        && (matches!(space, Some(StateSpace::Shared | StateSpace::Local)) || param32)
}

/// Whether some instruction of `stmts` (nested blocks included) satisfies `f`.
fn contains(stmts: &[ast::Statement], f: &dyn Fn(&ast::Instruction) -> bool) -> bool {
    stmts.iter().any(|s| match s {
        ast::Statement::Instruction(i) => f(i),
        ast::Statement::Block(inner, _) => contains(inner, f),
        _ => false,
    })
}
