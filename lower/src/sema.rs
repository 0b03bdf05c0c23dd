//! Semantic analysis: the AST of one PTX module → the CFG IR ([`crate::ir`]).
//!
//! Resolves names (registers, parameters, shared variables, labels) in their scopes,
//! with the parameter block laid out by [`crate::abi`] and the `.local` and `.shared`
//! variables declared as IR variables (`pass::layout_memory` places them), holds
//! every instruction against its implemented form (`ptxvk_frontend::forms`), resolves
//! its operands (by the form's operand shapes where it has them, `Resolver::args`) into
//! its IR operation, and splits predicated instructions into their own blocks. Anything
//! PTX allows that ptxvk does not implement yet is a diagnostic naming the construct at
//! its span; nothing is dropped silently.
//!
//! Three parts, each with one concern:
//! - **Facts** (`sema/facts.rs`), computed once from the AST before anything is
//!   resolved and read-only after: [`ModuleFacts`], what every kernel of the module
//!   shares (its device functions, module variables, module data, version, launch
//!   targets), and [`KernelFacts`], the analyses of one kernel and the functions it
//!   reaches (which functions, which names, whose addresses are taken, whether it uses
//!   the stack, makes generic shared or local addresses, needs 64-bit shared words, a
//!   `bar.red` word or the reserved area), each computed by one function.
//! - **The resolver** ([`Resolver`]): the IR kernel being built and the name tables
//!   that resolve into it: the body being resolved (`sema/body.rs`: its current block,
//!   labels, scopes and per-body registers, saved while a device function's body is
//!   resolved at its first call), the module scope every function sees, where each
//!   `.shared` declaration was placed, and the device functions resolved so far.
//!   `lower_kernel` first declares what the facts call for
//!   (`Resolver::declare_kernel_storage`), then resolves the instructions.
//! - **The lowering of each instruction family**, one file each under `sema/`, as
//!   methods of the resolver, dispatched once on the opcode (`Resolver::operation`).
//!
//! What sema adds to the kernel beyond the PTX's declarations is IR: the variables of
//! the made roles (the stack, the `bar.red` word, the reserved area,
//! `ir::VariableRole`), which instructions find by their role.
//!
//! Pre: the module parsed. Post: every kernel passes [`crate::verify::run`].

use std::collections::{BTreeMap, BTreeSet};

use ptxvk_frontend::ast::{self, ExprKind, Operand, ScalarType, StateSpace};
use ptxvk_frontend::legacy::{legacy_default_modes, Legacy};
use ptxvk_frontend::modifier::{self as md, Modifier};
use ptxvk_frontend::{decode, Diagnostic, Diagnostics, Name, Opcode, Span, Spanned};

use crate::abi;
use crate::ir::*;
use facts::{KernelFacts, ModuleFacts};
use mods::Mods;

mod async_copy;
mod atomic;
mod barrier;
mod body;
mod bulk_copy;
mod calls;
mod cluster;
mod convert;
mod core_ops;
mod device_launch;
mod expand;
mod facts;
mod formats;
mod matrix;
mod mbarrier;
mod memory;
mod mods;
mod operands;
mod reserved;
mod stack;
mod system;
mod tensor_copy;
mod texture;

/// Bytes of stack per thread in a kernel that recurses (`pass::recursion`).
pub use crate::pass::recursion::RECURSION_STACK_BYTES;
mod video;
mod warp;
mod wmma;

/// The module data of `module` (`crate::globals`), with function addresses as
/// `sema::calls` assigns them.
pub fn module_data(module: &ast::Module) -> Result<crate::globals::ModuleData, Vec<Diagnostic>> {
    let functions = device_functions(module);
    let function_address =
        |n: &str| functions.contains_key(n).then(|| calls::function_address(&functions, n));
    crate::globals::layout(module, &function_address)
}

/// Device functions (defined or `.extern`), by name.
fn device_functions(module: &ast::Module) -> BTreeMap<Name, &ast::Function> {
    module
        .items
        .iter()
        .filter_map(|i| match i {
            ast::Item::Function(f) if !f.is_entry => Some((f.name.value.clone(), f)),
            _ => None,
        })
        .collect()
}

/// Lowers every `.entry` of `module`, with the `.func` device functions each calls as
/// its IR functions (`sema::calls`). Any error, of the module or of one kernel, fails the whole module;
/// [`run_each`] keeps the kernels apart.
pub fn run(module: &ast::Module) -> Result<Module, Diagnostics> {
    let each = run_each(module)?;
    let mut kernels = Vec::new();
    let mut errors = Vec::new();
    for k in each.kernels {
        match k.result {
            Ok(kernel) => kernels.push(kernel),
            Err(mut e) => errors.append(&mut e.0),
        }
    }
    if errors.is_empty() {
        Ok(Module { address_size: each.address_size, kernels })
    } else {
        Err(Diagnostics(errors).once())
    }
}

/// The kernels of a module, each lowered or failed on its own ([`run_each`]).
#[derive(Clone, Debug)]
pub struct EachKernel {
    pub address_size: u32,
    /// Every kernel with a body, in source order.
    pub kernels: Vec<KernelResult>,
}

/// One kernel's semantic analysis: its IR, or its own diagnostics.
#[derive(Clone, Debug)]
pub struct KernelResult {
    pub name: String,
    pub result: Result<Kernel, Diagnostics>,
}

/// The kernels of `module` that have bodies, in source order (`.extern .entry`
/// declarations have nothing to lower).
pub fn kernels(module: &ast::Module) -> impl Iterator<Item = &ast::Function> {
    module.items.iter().filter_map(|i| match i {
        ast::Item::Function(f) if f.is_entry && f.body.is_some() => Some(f),
        _ => None,
    })
}

/// Like [`run`], but a kernel that cannot be lowered fails alone: the error is the
/// module's only for what every kernel shares (the address size, module-scope
/// variables and their initializers).
pub fn run_each(module: &ast::Module) -> Result<EachKernel, Diagnostics> {
    let prepared = PreparedModule::new(module)?;
    let kernels = prepared
        .kernel_names()
        .into_iter()
        .filter_map(|name| {
            let result = prepared.lower(&name)?;
            Some(KernelResult { name, result })
        })
        .collect();
    Ok(EachKernel { address_size: prepared.address_size, kernels })
}

/// A module with what its kernels share analysed once (vector parameters split,
/// module data laid out, module-scope errors found), whose kernels then lower one at a
/// time ([`PreparedModule::lower`]): a loader that compiles kernels when they are first
/// used pays only for those (CUDA's lazy loading; libraries ship modules of hundreds
/// of kernels).
#[derive(Clone, Debug)]
pub struct PreparedModule<'a> {
    /// The module with vector parameters split (borrowed when there were none).
    module: std::borrow::Cow<'a, ast::Module>,
    pub address_size: u32,
    data: crate::globals::ModuleData,
    /// The kernels with bodies in name order, and the bytes of their largest parameter
    /// block (`sema::device_launch`).
    kernel_names: Vec<Name>,
    max_params: u32,
}

impl<'a> PreparedModule<'a> {
    /// The module-scope analysis; its errors are every kernel's.
    pub fn new(module: &'a ast::Module) -> Result<PreparedModule<'a>, Diagnostics> {
        let module = ptxvk_frontend::vectors::split(module).map_err(Diagnostics)?;
        let mut errors = Vec::new();
        let address_size = module.address_size.as_ref().map_or(32, |a| a.value);
        // PTX ISA 9.2 §11.1.4: without `.address_size`, addresses are 32-bit.
        if let Some(a) = module.address_size.as_ref().filter(|a| !matches!(a.value, 32 | 64)) {
            errors.push(Diagnostic::error(a.span, "`.address_size` is 32 or 64"));
        }
        let data = match module_data(&module) {
            Ok(d) => d,
            Err(mut e) => {
                errors.append(&mut e);
                crate::globals::ModuleData::default()
            }
        };
        for item in &module.items {
            if let ast::Item::Variable(v) = item {
                // Every other state space has module-scope variables here.
                if matches!(v.space, StateSpace::Param | StateSpace::Sreg) {
                    let space = v.space.directive();
                    let msg = format!("module-scope `{space}` variables are not supported yet");
                    errors.push(Diagnostic::error(v.span, msg));
                }
            }
        }
        if !errors.is_empty() {
            return Err(Diagnostics(errors));
        }
        // Kernel addresses for device-side launches (`sema::device_launch`).
        let kernel_names: Vec<Name> = kernels(&module)
            .map(|f| f.name.value.clone())
            .collect::<BTreeSet<Name>>()
            .into_iter()
            .collect();
        let max_params = module
            .items
            .iter()
            .filter_map(|i| match i {
                ast::Item::Function(f) if f.is_entry => Some(device_launch::param_bytes(f)),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        Ok(PreparedModule { module, address_size, data, kernel_names, max_params })
    }

    /// The same, owning its module (to keep beside the parse it came from).
    pub fn into_owned(self) -> PreparedModule<'static> {
        let module = std::borrow::Cow::Owned(self.module.into_owned());
        PreparedModule { module, ..self }
    }

    /// The module data (`crate::globals`).
    pub fn data(&self) -> &crate::globals::ModuleData {
        &self.data
    }

    /// The kernels with bodies, in source order (`.extern .entry` declarations have
    /// nothing to lower).
    pub fn kernel_names(&self) -> Vec<String> {
        kernels(&self.module).map(|f| f.name.value.to_string()).collect()
    }

    /// Lowers kernel `name`: its IR, or its own diagnostics; `None` when the module
    /// has no such kernel.
    pub fn lower(&self, name: &str) -> Option<Result<Kernel, Diagnostics>> {
        let f = kernels(&self.module).find(|f| &*f.name.value == name)?;
        let module = ModuleFacts::of(self);
        Some(lower_kernel(f, &module).map_err(|e| Diagnostics(e).once()))
    }
}

/// What a name in scope is.
#[derive(Clone, Copy, Debug)]
enum Symbol {
    Reg(RegId),
    /// A kernel parameter: its offset in the parameter block.
    Param(u32),
    /// A static `.shared` variable (which `pass::layout_memory` places), or `None` for
    /// an `extern` (dynamic) array, at the start of the dynamic region, whose offset is
    /// `SpecialReg::DynamicSharedBase` (passes may still grow the static part).
    Shared(Option<VarId>),
    /// A `.local` variable (or a call's `.param` variable), which `pass::layout_memory`
    /// places in the thread's local window.
    Local(VarId),
    /// A `.param` parameter (the caller's variable, `sema::calls`): a register holding
    /// a local-window offset, plus a constant offset.
    Framed(RegId, u32),
    /// A module-scope `.global`/`.const` variable: its offset in the module data.
    Global(u32),
}

/// A name as instructions see it ([`Resolver::lookup`]).
type Resolved = Symbol;

/// The resolution of one kernel: the IR being built and the name tables (module doc).
struct Resolver<'m> {
    /// What the module's kernels share (read-only).
    module: &'m ModuleFacts<'m>,
    /// The analyses of the kernel's AST (read-only).
    facts: &'m KernelFacts<'m>,
    /// The IR being built: the kernel, with the device functions resolved so far.
    kernel: Kernel,
    /// The body being resolved (the kernel's or a device function's, `sema::body`).
    body: body::Body,
    /// The names every function sees: module variables (a callee sees no kernel names).
    module_scope: BTreeMap<Name, Symbol>,
    /// The kernel's registers among them (module-scope `.reg` variables), which each
    /// function names through its own (`Function::thread_regs`).
    thread_regs: BTreeMap<RegId, RegInfo>,
    /// Where each `.shared` declaration (by the span of its name) was placed.
    shared_slots: BTreeMap<Span, abi::SharedSlot>,
    /// The number of `{ }` blocks met so far, in every body (a block's id,
    /// [`Variable::scope`]).
    scope_count: u32,
    /// The device functions resolved so far or being resolved (`Kernel::functions`),
    /// by name.
    lowered_functions: BTreeMap<Name, Result<FunctionId, Diagnostic>>,
    /// The device functions being resolved, outermost first (to name a recursion's
    /// cycle).
    call_stack: Vec<Name>,
    errors: Vec<Diagnostic>,
}

/// Lowers kernel `f` (and the device functions it calls, `sema::calls`): its facts
/// first, then its declarations, then its instructions.
fn lower_kernel<'m>(
    f: &'m ast::Function,
    module: &ModuleFacts<'m>,
) -> Result<Kernel, Vec<Diagnostic>> {
    let facts = KernelFacts::of(f, module);
    let mut resolver = Resolver::new(f, module, &facts);
    resolver.declare_kernel_storage(f);
    let span = f.name.span;
    resolver.kernel.entry = resolver.new_block(None, span);
    resolver.body.cur = resolver.kernel.entry;
    if facts.uses_stack {
        resolver.init_stack(span);
    }
    let body = f.body.as_deref().unwrap_or(&[]);
    resolver.collect_labels(body);
    resolver.statements(body);
    if !resolver.body.closed {
        resolver.terminate(Terminator::Return, f.span);
    }
    if resolver.errors.is_empty() {
        Ok(resolver.kernel)
    } else {
        Err(resolver.errors)
    }
}

impl<'m> Resolver<'m> {
    /// The resolver of kernel `f`: an IR kernel with its parameter block and launch
    /// attributes, and empty name tables.
    fn new(
        f: &ast::Function,
        module: &'m ModuleFacts<'m>,
        facts: &'m KernelFacts<'m>,
    ) -> Resolver<'m> {
        let (abi, mut errors) = abi::kernel_params(f, module.version);
        let bounds = abi::launch_bounds(f, &mut errors);
        let explicit_cluster = cluster::cluster_attributes(f).unwrap_or_else(|e| {
            errors.push(e);
            false
        });
        Resolver {
            module,
            facts,
            kernel: Kernel {
                reqntid: bounds.reqntid,
                maxntid: bounds.maxntid,
                maxnreg: bounds.maxnreg,
                address_size: module.address_size,
                explicit_cluster,
                ..Kernel::new(f.name.value.to_string(), f.span, abi)
            },
            body: body::Body::new(BlockId(0), false),
            module_scope: BTreeMap::new(),
            thread_regs: BTreeMap::new(),
            shared_slots: BTreeMap::new(),
            scope_count: 0,
            lowered_functions: BTreeMap::new(),
            call_stack: Vec::new(),
            errors,
        }
    }

    /// Declares what kernel `f` names beyond its own declarations: the module's
    /// variables and the kernel's parameters in its outermost scope, and the variables
    /// its facts call for, before any instruction is resolved (so that the shared
    /// window's static part is final when an instruction uses the dynamic region).
    fn declare_kernel_storage(&mut self, f: &ast::Function) {
        let (module, facts) = (self.module, self.facts);
        for g in module.data.vars.iter().filter(|g| g.decl.is_none()) {
            self.body.scopes[0].insert(Name::from(g.name.as_str()), Symbol::Global(g.offset));
        }
        let params: Vec<(Name, u32)> = self
            .kernel
            .abi
            .params
            .iter()
            .map(|p| (Name::from(p.name.as_str()), p.offset))
            .collect();
        for (name, offset) in &params {
            self.body.scopes[0].insert(name.clone(), Symbol::Param(*offset));
        }
        // Module-scope `.shared` variables, those the kernel or its callees name.
        for v in &module.module_shared {
            let used = |n: &&ast::DeclName| facts.names.contains(n.name.value.as_str());
            let names: Vec<ast::DeclName> = v.names.iter().filter(used).cloned().collect();
            if !names.is_empty() {
                let decl = ast::VarDecl { names, ..(*v).clone() };
                self.place_shared(&decl);
                self.declare(&decl);
            }
        }
        // The stack is the start of the local window (`sema::stack`; `pass::layout_memory`
        // makes it larger for recursive functions' frames and `pass::recursion`'s save
        // areas).
        if facts.uses_stack {
            let (role, space) = (VariableRole::Stack, Space::Local);
            let stack = Variable::made(role, stack::STACK, space, stack::STACK_BYTES, 8);
            self.kernel.variables.push(stack);
        }
        for v in &module.module_per_thread {
            self.declare(&ast::VarDecl { linkage: None, ..(*v).clone() });
        }
        self.module_scope = self.body.scopes[0].clone();
        for (name, _) in &params {
            self.module_scope.remove(name);
        }
        for sym in self.module_scope.values() {
            if let Symbol::Reg(r) = *sym {
                self.thread_regs.insert(r, self.kernel.regs[r.index()].clone());
            }
        }
        self.place_all_shared(f.body.as_deref().unwrap_or(&[]));
        // A device function's `.shared` variables are static: one per CTA, however many
        // times the function is called.
        for c in &facts.callees {
            self.place_all_shared(c.body.as_deref().unwrap_or(&[]));
        }
        if facts.wide_shared {
            self.kernel.shared.word = SharedWord::U64;
        }
        // The scratch word of `bar.red`, placed with the static variables (a whole 64-bit
        // word of a wide window, which it counts in with 64-bit atomics).
        if facts.bar_reduction {
            let size = if self.kernel.shared.wide() { 8 } else { 4 };
            let (role, space) = (VariableRole::ReductionWord, Space::Shared);
            self.kernel.variables.push(Variable::made(role, "$bar.red", space, size, size));
        }
        if facts.reserved_area {
            self.place_reserved();
        }
    }
}

impl Resolver<'_> {
    // ----- blocks ---------------------------------------------------------------------

    fn new_block(&mut self, label: Option<String>, span: Span) -> BlockId {
        let id = BlockId(self.kernel.blocks.len() as u32);
        self.kernel.blocks.push(Block {
            label,
            span,
            insts: Vec::new(),
            term: Terminator::Return,
            term_span: span,
        });
        id
    }

    fn terminate(&mut self, term: Terminator, span: Span) {
        let b = &mut self.kernel.blocks[self.body.cur.index()];
        b.term = term;
        b.term_span = span;
        self.body.closed = true;
    }

    /// Ends the current block with `term`; under a guard `@p`, only when `p` holds, and
    /// code goes on in a new block otherwise.
    fn terminate_guarded(&mut self, term: Terminator, guard: Option<(RegId, bool)>, span: Span) {
        self.open(span);
        let Some((cond, negate)) = guard else {
            self.terminate(term, span);
            return;
        };
        let taken = match term {
            Terminator::Jump(t) => t,
            other => {
                let b = self.new_block(None, span);
                self.kernel.blocks[b.index()].term = other;
                b
            }
        };
        let next = self.new_block(None, span);
        self.terminate(Terminator::Branch { cond, negate, if_true: taken, if_false: next }, span);
        self.body.cur = next;
        self.body.closed = false;
    }

    /// Makes sure there is an open block to append to.
    fn open(&mut self, span: Span) {
        if self.body.closed {
            self.body.cur = self.new_block(None, span);
            self.body.closed = false;
        }
    }

    fn push(&mut self, kind: InstKind, span: Span) {
        self.open(span);
        self.kernel.blocks[self.body.cur.index()].insts.push(Inst { kind, span });
    }

    fn collect_labels(&mut self, stmts: &[ast::Statement]) {
        for s in stmts {
            match s {
                ast::Statement::Label(l) => {
                    if self.body.labels.contains_key(&l.value) {
                        self.errors.push(Diagnostic::error(
                            l.span,
                            format!("label `{}` is defined twice", l.value),
                        ));
                    } else {
                        let b = self.new_block(Some(l.value.to_string()), l.span);
                        self.body.labels.insert(l.value.clone(), b);
                    }
                }
                ast::Statement::Block(inner, _) => self.collect_labels(inner),
                ast::Statement::Directive(d) => match &d.kind {
                    ast::DirectiveKind::BranchTargets { label, targets } => {
                        self.body.branch_tables.insert(label.value.clone(), targets.clone());
                    }
                    ast::DirectiveKind::CallTargets { label, targets } => {
                        let set = body::CallSet::Targets(targets.clone());
                        self.body.call_sets.insert(label.value.clone(), set);
                    }
                    ast::DirectiveKind::CallPrototype { label, returns, params, .. } => {
                        let set = body::CallSet::Prototype {
                            returns: returns.clone(),
                            params: params.clone(),
                        };
                        self.body.call_sets.insert(label.value.clone(), set);
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }

    // ----- statements -------------------------------------------------------------------

    fn statements(&mut self, stmts: &[ast::Statement]) {
        for s in stmts {
            match s {
                ast::Statement::Variable(v) => self.declare(v),
                ast::Statement::Label(l) => {
                    let Some(&b) = self.body.labels.get(&l.value) else { continue };
                    if !self.body.closed {
                        self.terminate(Terminator::Jump(b), l.span);
                    }
                    self.body.cur = b;
                    self.body.closed = false;
                }
                ast::Statement::Instruction(i) => {
                    if let Err(d) = self.instruction(i) {
                        self.errors.push(d);
                    }
                }
                ast::Statement::Block(inner, _) => {
                    self.body.scopes.push(BTreeMap::new());
                    self.scope_count += 1;
                    self.body.scope_path.push(self.scope_count);
                    self.statements(inner);
                    self.body.scope_path.pop();
                    self.body.scopes.pop();
                }
                ast::Statement::Directive(_) => {}
            }
        }
    }

    fn declare(&mut self, v: &ast::VarDecl) {
        match v.space {
            StateSpace::Reg => {
                if v.vector.is_some() {
                    // `ptxvk_frontend::vectors` splits them before analysis.
                    self.errors.push(Diagnostic::internal(v.span, "a vector register left"));
                    return;
                }
                let Some(scalar) = v.ty.value.scalar() else {
                    self.errors.push(abi::opaque_unsupported(v));
                    return;
                };
                let ty = match scalar {
                    ScalarType::Pred => RegTy::Pred,
                    ScalarType::F32 | ScalarType::F64 => RegTy::Float(scalar.bits() as u8),
                    ScalarType::Tf32 | ScalarType::B128 => {
                        self.errors.push(Diagnostic::error(
                            v.ty.span,
                            format!("`{}` registers are not supported yet", scalar.directive()),
                        ));
                        return;
                    }
                    // Narrow floats live as bit patterns (`sema::formats`).
                    _ => RegTy::Int(scalar.bits() as u8),
                };
                for n in &v.names {
                    if !n.dims.is_empty() || n.init.is_some() {
                        self.errors.push(Diagnostic::error(
                            n.name.span,
                            "register arrays and initializers are not supported",
                        ));
                        continue;
                    }
                    match n.count {
                        Some(c) => {
                            for i in 0..c {
                                self.add_reg(format!("{}{}", n.name.value, i), ty, n.name.span);
                            }
                        }
                        None => self.add_reg(n.name.value.to_string(), ty, n.name.span),
                    }
                }
            }
            StateSpace::Shared => {
                // Placed by `place_shared` before any instruction was lowered.
                for n in &v.names {
                    if let Some(&slot) = self.shared_slots.get(&n.name.span) {
                        let sym = match slot {
                            abi::SharedSlot::Static(var) => Symbol::Shared(Some(var)),
                            abi::SharedSlot::Dynamic => Symbol::Shared(None),
                        };
                        if let Some(scope) = self.body.scopes.last_mut() {
                            scope.insert(n.name.value.clone(), sym);
                        }
                    }
                }
            }
            // A caller's argument and result variables (`sema::calls`) live in its frame.
            StateSpace::Local | StateSpace::Param => self.place_local(v),
            // Static storage like module-scope variables, laid out with them
            // (`globals::layout`), visible in this scope only.
            StateSpace::Global | StateSpace::Const => {
                for n in &v.names {
                    let Some(&offset) = self.module.scoped_globals.get(&n.name.span) else {
                        self.errors.push(Diagnostic::internal(
                            n.name.span,
                            "a function-scope variable missing from the module data",
                        ));
                        continue;
                    };
                    if let Some(scope) = self.body.scopes.last_mut() {
                        scope.insert(n.name.value.clone(), Symbol::Global(offset));
                    }
                }
            }
            other => self.errors.push(Diagnostic::error(
                v.span,
                format!("`{}` variables inside functions are not supported yet", other.directive()),
            )),
        }
    }

    /// `.local` variables get the next aligned offset of the thread's local window.
    fn place_local(&mut self, v: &ast::VarDecl) {
        let Some(scalar) = v.ty.value.scalar() else {
            self.errors.push(abi::opaque_unsupported(v));
            return;
        };
        for n in &v.names {
            let (elem, align) = match abi::element_layout(v, scalar, n, "`.local`") {
                Ok(l) => l,
                Err(e) => {
                    self.errors.push(e);
                    continue;
                }
            };
            let count: u64 = n.dims.iter().map(|d| d.unwrap_or(1)).product();
            let size = count.checked_mul(elem as u64).and_then(|s| u32::try_from(s).ok());
            let Some(size) = size.filter(|&s| s <= 1 << 20) else {
                self.errors.push(Diagnostic::error(n.name.span, "local variable too large"));
                continue;
            };
            // `pass::layout_memory` places it (in a frame, for a recursive function).
            let var = VarId(self.kernel.variables.len() as u32);
            let mut v = Variable::new(n.name.value.to_string(), Space::Local, size, align);
            v.scope = self.body.scope_path.clone();
            self.kernel.variables.push(v);
            self.body.variables.push(var);
            if let Some(scope) = self.body.scopes.last_mut() {
                scope.insert(n.name.value.clone(), Symbol::Local(var));
            }
        }
    }

    /// Places every `.shared` variable of `stmts` (nested blocks included) in the
    /// kernel's shared window, so that the dynamic region's offset is final before any
    /// instruction uses it.
    fn place_all_shared(&mut self, stmts: &[ast::Statement]) {
        for s in stmts {
            match s {
                ast::Statement::Variable(v) if v.space == StateSpace::Shared => {
                    self.place_shared(v)
                }
                ast::Statement::Block(inner, _) => self.place_all_shared(inner),
                _ => {}
            }
        }
    }

    /// [`abi::place_shared`] in the kernel's window.
    fn place_shared(&mut self, v: &ast::VarDecl) {
        let (shared, variables) = (&mut self.kernel.shared, &mut self.kernel.variables);
        abi::place_shared(shared, variables, v, &mut self.shared_slots, &mut self.errors);
    }

    fn add_reg(&mut self, name: String, ty: RegTy, span: Span) {
        let id = RegId(self.kernel.regs.len() as u32);
        self.kernel.regs.push(RegInfo { name: name.clone(), ty, span });
        if let Some(s) = self.body.scopes.last_mut() {
            s.insert(Name::from(name.as_str()), Symbol::Reg(id));
        }
    }

    /// A temporary, named by its index among the body's registers but variables'
    /// addresses (which `pass::layout_memory` removes).
    fn temp(&mut self, ty: RegTy, span: Span) -> RegId {
        let id = RegId(self.kernel.regs.len() as u32);
        let name = format!("$t{}", id.0 - self.body.addresses);
        self.kernel.regs.push(RegInfo { name, ty, span });
        id
    }

    /// The kernel's variable of the made `role` (`ir::VariableRole`), which lowering
    /// the kernel declared before its instructions.
    fn made_variable(&self, role: VariableRole) -> Option<VarId> {
        let at = self.kernel.variables.iter().position(|v| v.role == role)?;
        Some(VarId(at as u32))
    }

    /// A register holding the offset of variable `var` at `ty` (u32 or u64).
    fn variable_address(&mut self, var: VarId, ty: OpTy, span: Span) -> RegId {
        let ty = ty.as_unsigned();
        let dst = RegId(self.kernel.regs.len() as u32);
        let name = format!("$v{}", var.0);
        self.kernel.regs.push(RegInfo { name, ty: ty.storage(), span });
        self.body.addresses += 1;
        let address = VariableAddress { ty, dst, var, offset: 0 };
        self.push(InstKind::VariableAddress(address), span);
        dst
    }

    /// Adds `offset` to the variable address that `r` is when the current block's last
    /// instruction made it (`var+4` is one address); false otherwise.
    fn offset_variable_address(&mut self, r: RegId, offset: u64) -> bool {
        let last = self.kernel.blocks[self.body.cur.index()].insts.last_mut();
        match last.map(|i| &mut i.kind) {
            Some(InstKind::VariableAddress(a)) if a.dst == r && !self.body.closed => {
                a.offset = a.offset.wrapping_add(offset);
                true
            }
            _ => false,
        }
    }

    /// A register holding the offset of the dynamic shared region.
    fn dynamic_shared_base(&mut self, span: Span) -> RegId {
        let t = self.temp(RegTy::Int(32), span);
        self.push(InstKind::Special { dst: t, reg: SpecialReg::DynamicSharedBase }, span);
        t
    }

    /// Resolves a name in the innermost scope that declares it.
    fn lookup(&self, name: &str) -> Option<Resolved> {
        self.body.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    // ----- instructions ---------------------------------------------------------------------

    fn instruction(&mut self, i: &ast::Instruction) -> Result<(), Diagnostic> {
        let span = i.span;
        let unknown = || {
            Diagnostic::error(i.opcode.span, format!("unknown instruction `{}`", i.opcode.value))
        };
        let op = i.op.ok_or_else(unknown)?;
        // Instructions ptxvk does not lower in any form are reported as such before
        // their modifiers are looked at.
        if let Some(why) = crate::coverage::unsupported_reason(op) {
            return Err(unsupported(i.opcode.span, &format!("instruction `{op}`"), why));
        }
        // PTX ISA 1.0-1.3 forms get their default modes written out
        // (`ptxvk_frontend::legacy`).
        let legacy = legacy_default_modes(self.module.version, op, i);
        let i = legacy.as_ref().map_or(i, Legacy::instruction);
        let decoded = decode::decode(i)?.ok_or_else(unknown)?;
        let guard = match &i.guard {
            Some(g) => {
                let (r, span) = match self.lookup(&g.pred.value) {
                    Some(Resolved::Reg(r)) => (r, g.pred.span),
                    _ => return Err(undeclared(&g.pred)),
                };
                self.check_width(r, span, OpTy::Pred, false)?;
                Some((r, g.negated))
            }
            None => None,
        };
        // The types, modifiers and operands of the implemented forms
        // (`ptxvk_frontend::forms`).
        ptxvk_frontend::forms::check(i, &decoded)?;
        let mut m = Mods::from(decoded);
        m.truncated_mad = matches!(legacy, Some(Legacy::TruncatedMad(_)));

        // Control flow first: it ends blocks instead of adding to them.
        match op {
            Opcode::Bra => {
                let [Operand::Name { name, component: None }] = i.operands.as_slice() else {
                    return Err(Diagnostic::error(span, "`bra` takes one label"));
                };
                let Some(&target) = self.body.labels.get(&name.value) else {
                    return Err(Diagnostic::error(
                        name.span,
                        format!("undefined label `{}`", name.value),
                    ));
                };
                self.terminate_guarded(Terminator::Jump(target), guard, span);
                return Ok(());
            }
            Opcode::Brx => {
                // `brx.idx index, table;` (PTX ISA 9.2 §9.7.13.3): a jump table, which
                // becomes a switch. An index past the table is undefined in PTX; it
                // goes to the first target here. The form is checked
                // (`ptxvk_frontend::forms`): it has `.idx`.
                let [index, Operand::Name { name: table, component: None }] = i.operands.as_slice()
                else {
                    return Err(Diagnostic::error(
                        span,
                        "`brx.idx` takes an index register and a `.branchtargets` label",
                    ));
                };
                let (selector, sel_span) = self.reg_operand(index)?;
                self.check_width(selector, sel_span, OpTy::U(32), false)?;
                if self.kernel.reg(selector).ty != RegTy::Int(32) {
                    return Err(Diagnostic::error(
                        sel_span,
                        "the `brx.idx` index must be a 32-bit integer register",
                    ));
                }
                let Some(labels) = self.body.branch_tables.get(&table.value).cloned() else {
                    return Err(Diagnostic::error(
                        table.span,
                        format!("`{}` is not a `.branchtargets` table", table.value),
                    ));
                };
                let mut cases = Vec::new();
                for (v, l) in labels.iter().enumerate() {
                    let Some(&b) = self.body.labels.get(&l.value) else {
                        return Err(Diagnostic::error(
                            l.span,
                            format!("undefined label `{}`", l.value),
                        ));
                    };
                    cases.push((v as u32, b));
                }
                let Some(&(_, default)) = cases.first() else {
                    return Err(Diagnostic::error(table.span, "empty `.branchtargets` table"));
                };
                let switch = Terminator::Switch { selector, cases, default };
                self.terminate_guarded(switch, guard, span);
                return Ok(());
            }
            Opcode::Ret | Opcode::Exit => {
                let term =
                    if op == Opcode::Ret { Terminator::Return } else { self.thread_end(span) };
                self.terminate_guarded(term, guard, span);
                return Ok(());
            }
            _ => {}
        }

        // A guarded instruction runs in its own block: `@p inst` → `if p { inst }`.
        let join = guard.map(|(cond, negate)| {
            self.open(span);
            let then = self.new_block(None, span);
            let join = self.new_block(None, span);
            self.terminate(
                Terminator::Branch { cond, negate, if_true: then, if_false: join },
                span,
            );
            self.body.cur = then;
            self.body.closed = false;
            join
        });
        let result = self.operation(op, i, &m);
        if result.is_ok() && MEMORY_OPCODES.contains(&op) {
            self.kernel.memory_instructions.push(span);
        }
        if let Some(join) = join {
            if !self.body.closed {
                self.terminate(Terminator::Jump(join), span);
            }
            self.body.cur = join;
            self.body.closed = false;
        }
        result
    }

    /// Lowers one instruction: one dispatch on its opcode to the lowering of its family
    /// (a `sema` submodule per concern). Arithmetic opcodes try their narrow-format forms
    /// (`sema::formats`), then their expanded forms (`sema::expand`); what no lowering of
    /// a concern takes goes to the core lowerings (`sema::core_ops`, most of them one row
    /// of its `ONE_OPERATION` table), the hints and the fences.
    fn operation(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        use Opcode::*;
        let special = match op {
            Atom | Red => self.atomic(op, i, m),
            Tex | Tld4 | Txq | Suq | Suld | Sust | Sured => self.texture(op, i, m),
            Mbarrier => self.mbarrier(op, i, m),
            Mapa | Getctarank | Barrier => self.cluster(op, i, m),
            Cp => self.async_copy(op, i, m),
            Alloca | Stacksave | Stackrestore => self.stack(op, i, m),
            Shfl | Vote | Match | Redux | Activemask | Elect | Bar => self.warp(op, i, m),
            Mma | Ldmatrix | Stmatrix | Movmatrix => self.matrix(op, i, m),
            Wmma => self.wmma(op, i, m),
            Add | Sub | Mul | Fma | Neg | Abs | Min | Max | Cvt | Ex2 | Tanh => {
                self.float_formats(op, i, m).or_else(|| self.expand(op, i, m))
            }
            _ if video::is_video(op) => self.video(op, i, m),
            _ => self.expand(op, i, m),
        };
        if let Some(result) = special {
            return result;
        }
        match op {
            Mov => self.mov(i, m),
            Ld | St | Ldu => self.memory(op, i, m),
            Cvt => self.convert(i, m),
            Selp => self.selp(i, m),
            Setp => self.setp(i, m),
            Cvta => self.cvta(i, m),
            Isspacep => self.isspacep(i, m),
            Call => self.call(i),
            Trap => {
                self.trap(i.span);
                Ok(())
            }
            Bar | Barrier => self.barrier(op, i, m),
            Membar | Fence => {
                self.fence(m, i.span);
                Ok(())
            }
            // Performance hints with no effect on results (`prefetch`/`prefetchu`
            // §9.7.9.15, `applypriority` §9.7.9.17, `pmevent` §9.7.19.2, `griddepcontrol`
            // §9.7.13.14: without programmatic dependent launch every grid already waits
            // for its predecessor; `setmaxnreg` §9.7.19.5), and `discard` (§9.7.9.16), a
            // weak write of indeterminate values, of which the old values are one.
            Prefetch | Prefetchu | Applypriority | Pmevent | Griddepcontrol | Setmaxnreg
            | Discard => Ok(()),
            // `nanosleep` (§9.7.13.11): the duration is only an upper bound, so none is a
            // valid sleep; a hint that the thread waits for others, so a turn for them
            // where the block is scheduled (`pass::schedule`).
            Nanosleep => {
                self.push(InstKind::SyncPoint { point: SyncPoint::Sleep }, i.span);
                Ok(())
            }
            // `createpolicy` (§9.7.9.18) returns an opaque cache policy, here 0.
            Createpolicy => {
                let dst = self.dst(&i.operands[0], OpTy::U(64), false)?;
                self.push(InstKind::Mov { ty: OpTy::U(64), dst, src: Value::Imm(0) }, i.span);
                Ok(())
            }
            // The opcodes of `ONE_OPERATION`; every other opcode of the PTX ISA parses (the
            // front end's instruction table knows it) but is not lowered yet.
            _ => self.one_operation(op, i, m).unwrap_or_else(|| {
                Err(unsupported(
                    i.opcode.span,
                    &format!("instruction `{op}`"),
                    "it parses, but ptxvk does not lower it yet",
                ))
            }),
        }
    }

    fn opt_dst(&self, op: &Operand, ty: OpTy) -> Result<Option<RegId>, Diagnostic> {
        match op {
            Operand::Sink(_) => Ok(None),
            other => self.dst(other, ty, false).map(Some),
        }
    }

    fn pack_elem(&self, ty: OpTy, n: usize, span: Span) -> Result<OpTy, Diagnostic> {
        let bits = ty.bits() as usize;
        if n < 2 || !bits.is_multiple_of(n) || bits / n < 8 {
            return Err(Diagnostic::error(
                span,
                format!("cannot split a {bits}-bit value into {n} parts"),
            ));
        }
        Ok(OpTy::U((bits / n) as u8))
    }

    /// Exactly one type modifier for an instruction that only moves bits (`mov`, `ld`,
    /// `st`, `selp`): half-precision types are their bit patterns.
    fn bits_type(&self, i: &ast::Instruction, m: &Mods) -> Result<OpTy, Diagnostic> {
        match m.types.as_slice() {
            [t] if matches!(t.value, ScalarType::F16 | ScalarType::Bf16) => Ok(OpTy::U(16)),
            [t] if matches!(t.value, ScalarType::F16x2 | ScalarType::Bf16x2) => Ok(OpTy::U(32)),
            _ => self.one_type(i, m),
        }
    }

    /// Exactly one type modifier, converted to an operation type.
    fn one_type(&self, i: &ast::Instruction, m: &Mods) -> Result<OpTy, Diagnostic> {
        match m.types.as_slice() {
            [t] => op_ty(t),
            [] => Err(Diagnostic::error(
                i.opcode.span,
                format!("`{}` needs a type such as `.u32`", i.opcode.value),
            )),
            [_, second, ..] => Err(Diagnostic::error(second.span, "unexpected second type")),
        }
    }
}

/// The instructions that access memory (`Kernel::memory_instructions`).
const MEMORY_OPCODES: &[Opcode] = {
    use Opcode::*;
    &[
        Ld, Ldu, St, Atom, Red, Cp, Ldmatrix, Stmatrix, Wmma, Mbarrier, Tex, Tld4, Txq, Suld, Sust,
        Sured, Suq,
    ]
};

// ----- helpers --------------------------------------------------------------------------------

fn undeclared(name: &ptxvk_frontend::Ident) -> Diagnostic {
    Diagnostic::error(name.span, format!("`{}` is not declared", name.value))
}

fn unsupported(span: Span, what: &str, why: &str) -> Diagnostic {
    Diagnostic::error(span, format!("{what} is not supported yet")).with_note(why.to_string())
}

pub(super) fn op_ty(t: &Spanned<ScalarType>) -> Result<OpTy, Diagnostic> {
    use ScalarType::*;
    Ok(match t.value {
        Pred => OpTy::Pred,
        B8 | U8 => OpTy::U(8),
        B16 | U16 => OpTy::U(16),
        B32 | U32 => OpTy::U(32),
        B64 | U64 => OpTy::U(64),
        S8 => OpTy::S(8),
        S16 => OpTy::S(16),
        S32 => OpTy::S(32),
        S64 => OpTy::S(64),
        F32 => OpTy::F(32),
        F64 => OpTy::F(64),
        other => {
            return Err(unsupported(
                t.span,
                &format!("type `{}`", other.directive()),
                "half, bf16, tf32 and 128-bit types are not implemented yet",
            ))
        }
    })
}

/// The float mode of an arithmetic instruction whose form is checked
/// (`ptxvk_frontend::forms`): its rounding (to nearest by default), `.ftz` and `.sat`.
fn float_mode(m: &Mods) -> FloatMode {
    let rounding = m.rounding.as_ref().map_or(Rounding::Nearest, |r| r.value.0);
    FloatMode { ftz: m.ftz, sat: m.sat, rounding, path: FloatPath::F64, visible: false }
}

fn widen(ty: OpTy, span: Span) -> Result<OpTy, Diagnostic> {
    match ty {
        OpTy::U(b) if b <= 32 => Ok(OpTy::U(b * 2)),
        OpTy::S(b) if b <= 32 => Ok(OpTy::S(b * 2)),
        _ => Err(Diagnostic::error(span, "`.wide` takes 16- or 32-bit integer types")),
    }
}

/// `name`, `name + c`, `name - c` or `c + name` with `c` constant: a register or a
/// variable plus an offset as a value operand.
fn symbol_plus_offset(e: &ast::Expr) -> Option<(&str, i64)> {
    let constant = |e: &ast::Expr| e.eval_int().ok().map(|c| c.value as i64);
    match &e.kind {
        ExprKind::Symbol(s) => Some((s.as_str(), 0)),
        ExprKind::Binary(ast::BinaryOp::Add, l, r) => match (&l.kind, &r.kind) {
            (ExprKind::Symbol(s), _) => Some((s.as_str(), constant(r)?)),
            (_, ExprKind::Symbol(s)) => Some((s.as_str(), constant(l)?)),
            _ => None,
        },
        ExprKind::Binary(ast::BinaryOp::Sub, l, r) => match &l.kind {
            ExprKind::Symbol(s) => Some((s.as_str(), constant(r)?.wrapping_neg())),
            _ => None,
        },
        _ => None,
    }
}

/// The bits of an immediate read at type `ty` (PTX ISA 9.2 §4.5).
fn imm_bits(e: &ast::Expr, ty: OpTy) -> Result<u64, Diagnostic> {
    let mask = |bits: u32| if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
    match (&e.kind, ty) {
        (ExprKind::F32Bits(b), OpTy::F(32)) => Ok(*b as u64),
        (ExprKind::F32Bits(b), OpTy::F(64)) => Ok((f32::from_bits(*b) as f64).to_bits()),
        (ExprKind::F64Bits(b), OpTy::F(64)) => Ok(*b),
        // Rust's `as f32` rounds to nearest even, as PTX specifies for literals.
        (ExprKind::F64Bits(b), OpTy::F(32)) => Ok((f64::from_bits(*b) as f32).to_bits() as u64),
        (ExprKind::F32Bits(b), OpTy::U(32) | OpTy::S(32)) => Ok(*b as u64),
        (ExprKind::F64Bits(b), OpTy::U(64) | OpTy::S(64)) => Ok(*b),
        (ExprKind::F32Bits(_) | ExprKind::F64Bits(_), _) => Err(Diagnostic::error(
            e.span,
            format!("a floating-point literal cannot be a {} operand", describe_op(ty)),
        )),
        (ExprKind::Symbol(s), _) => Err(Diagnostic::error(
            e.span,
            format!("`{s}` cannot be used in a constant expression here"),
        )),
        _ => {
            let v = e.eval_int().map_err(|(s, m)| Diagnostic::error(s, m))?;
            match ty {
                OpTy::F(32) => Ok(((v.value as i64) as f32).to_bits() as u64),
                OpTy::F(64) => Ok(((v.value as i64) as f64).to_bits()),
                OpTy::Pred => Ok((v.value != 0) as u64),
                t => Ok(v.value & mask(t.bits())),
            }
        }
    }
}

fn describe_reg(t: RegTy) -> String {
    match t {
        RegTy::Pred => ".pred".into(),
        RegTy::Int(b) => format!("{b}-bit integer"),
        RegTy::Float(b) => format!(".f{b}"),
    }
}

fn describe_op(t: OpTy) -> String {
    match t {
        OpTy::Pred => ".pred".into(),
        OpTy::U(b) => format!(".u{b}/.b{b}"),
        OpTy::S(b) => format!(".s{b}"),
        OpTy::F(b) => format!(".f{b}"),
    }
}
