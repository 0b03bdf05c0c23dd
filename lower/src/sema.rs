//! Semantic analysis: the AST of one PTX module → the CFG IR ([`crate::ir`]).
//!
//! Resolves names (registers, parameters, shared variables, labels) in their scopes,
//! checks every instruction's modifiers, types and operand shapes against what ptxvk
//! implements, lays out the parameter block and the shared window, and splits
//! predicated instructions into their own blocks. Anything PTX allows that ptxvk does
//! not implement yet is a diagnostic naming the construct at its span; nothing is
//! dropped silently.
//!
//! Pre: the module parsed. Post: every kernel passes [`crate::verify::run`].

use std::collections::{BTreeMap, BTreeSet};

use ptxvk_frontend::ast::{self, ExprKind, Operand, ScalarType, StateSpace};
use ptxvk_frontend::legacy::{legacy_default_modes, Legacy, LEGACY_PRODUCT};
use ptxvk_frontend::modifier::{self as md, Modifier};
use ptxvk_frontend::{decode, Diagnostic, Diagnostics, Name, Opcode, Span, Spanned};

use crate::abi::KernelAbi;
use crate::build::Build;
use crate::ir::*;

mod approx;
mod async_copy;
mod atomic;
mod barrier;
mod bulk_copy;
mod calls;
mod cluster;
mod device_launch;
mod expand;
mod formats;
mod matrix;
mod mbarrier;
mod recursion;
mod reserved;
mod spaces;
mod stack;
mod system;
mod tensor_copy;
mod texture;
mod vectors;

/// Bytes of stack per thread in a kernel that recurses (`sema::recursion`).
pub use recursion::RECURSION_STACK_BYTES;
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

/// Lowers every `.entry` of `module`, inlining the `.func` device functions each calls
/// (`sema::calls`). Any error, of the module or of one kernel, fails the whole module;
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
        let module = vectors::split(module).map_err(Diagnostics)?;
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
                if !matches!(
                    v.space,
                    StateSpace::Shared
                        | StateSpace::Global
                        | StateSpace::Const
                        | StateSpace::Tex
                        | StateSpace::Reg
                        | StateSpace::Local
                ) {
                    errors.push(Diagnostic::error(
                        v.span,
                        format!(
                            "module-scope `{}` variables are not supported yet",
                            v.space.directive()
                        ),
                    ));
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
        let module: &ast::Module = &self.module;
        // Module-scope `.shared` variables (file-scope `__shared__`, `extern __shared__`):
        // every kernel that names one gets its own instance in its shared window.
        let module_shared: Vec<&ast::VarDecl> = module
            .items
            .iter()
            .filter_map(|i| match i {
                ast::Item::Variable(v) if v.space == StateSpace::Shared => Some(v),
                _ => None,
            })
            .collect();
        // Module-scope `.reg` and `.local` variables (PTX ISA 1.x-2.x; §5.1.1, §5.1.5):
        // per-thread storage that every function of the module names. Functions are
        // inlined into their kernels, so each kernel declares them in its module scope.
        let module_per_thread: Vec<&ast::VarDecl> = module
            .items
            .iter()
            .filter_map(|i| match i {
                ast::Item::Variable(v)
                    if matches!(v.space, StateSpace::Reg | StateSpace::Local) =>
                {
                    Some(v)
                }
                _ => None,
            })
            .collect();
        // Device functions, for calls to inline, and those in function tables.
        let functions = device_functions(module);
        let table_functions = calls::named_by_initializers(module);
        let ctx = ModuleContext {
            module_shared: &module_shared,
            module_per_thread: &module_per_thread,
            data: &self.data,
            functions: &functions,
            table_functions: &table_functions,
            version: module.version.as_ref().map_or((0, 0), |v| v.value),
            address_size: self.address_size,
            kernels: (&self.kernel_names, self.max_params),
        };
        Some(lower_kernel(f, &ctx).map_err(|e| Diagnostics(e).once()))
    }
}

#[derive(Clone, Copy, Debug)]
enum Symbol {
    Reg(RegId),
    /// A kernel parameter: its offset in the parameter block.
    Param(u32),
    /// A static `.shared` variable: its offset in the shared window.
    Shared(u32),
    /// An `extern` (dynamic) `.shared` array: the start of the dynamic region.
    DynamicShared,
    /// A `.local` variable: its offset in the thread's local window.
    Local(u32),
    /// A `.local` or `.param` variable of a recursive function's activation, or a
    /// parameter bound to one (`sema::recursion`): a register holding a local-window
    /// offset, plus a constant offset.
    Framed(RegId, u32),
    /// A module-scope `.global`/`.const` variable: its offset in the module data.
    Global(u32),
}

/// A name as instructions see it.
#[derive(Clone, Copy, Debug)]
enum Resolved {
    Reg(RegId),
    Param(u32),
    /// A static shared variable's offset, or `None` for the dynamic region, whose
    /// offset is `SpecialReg::DynamicSharedBase` (passes may still grow the static part).
    Shared(Option<u32>),
    Local(u32),
    Framed(RegId, u32),
    Global(u32),
}

struct Lowerer<'m> {
    kernel: Kernel,
    /// The module's `.version` (PTX ISA 1.x gives some instructions default modes).
    version: (u32, u32),
    scopes: Vec<BTreeMap<Name, Symbol>>,
    labels: BTreeMap<Name, BlockId>,
    /// `.branchtargets` tables of `brx.idx`, by their label.
    branch_tables: BTreeMap<Name, Vec<ptxvk_frontend::Ident>>,
    /// `.calltargets` and `.callprototype` of indirect calls, by their label.
    call_sets: BTreeMap<Name, calls::CallSet>,
    /// Device functions the kernel names (calls or takes the address of), directly or
    /// through the functions it calls: the candidates of `.callprototype` calls.
    reachable_functions: BTreeSet<Name>,
    cur: BlockId,
    /// The current block has been terminated; further code goes to a fresh block.
    closed: bool,
    errors: Vec<Diagnostic>,
    /// Where each `.shared` declaration (by the span of its name) was placed.
    shared_slots: BTreeMap<Span, Symbol>,
    /// The carry flag of `.cc` instructions, once one is used (`expand::carry_flag`).
    carry: Option<RegId>,
    /// The kernel makes generic addresses of shared or local memory (`cvta` to the
    /// generic space): then generic accesses dispatch on the address's window; else
    /// every generic address is global and they go straight to global memory.
    generic_windows: bool,
    /// Where each register's generic addresses may point (`sema::spaces`).
    spaces: BTreeMap<Name, spaces::Provenance>,
    /// The kernel declares its cluster shape (`%is_explicit_cluster`, `sema::cluster`).
    explicit_cluster: bool,
    /// The module's device functions, by name.
    functions: &'m BTreeMap<Name, &'m ast::Function>,
    /// The functions being inlined, outermost first (to name a recursion's cycle).
    call_stack: Vec<Name>,
    /// The call being inlined, if any: where its `ret` continues.
    frame: Option<calls::Frame>,
    /// The names every function sees: module variables (a callee sees no kernel names).
    module_scope: BTreeMap<Name, Symbol>,
    /// The shared word `bar.red` counts in (`sema::barrier`), when the kernel has one.
    reduction_scratch: Option<u32>,
    /// The warp collectives' kinds (opcode and modifiers), in order of appearance: a
    /// sync point's `kind` is an index here (`SyncPoint::Warp`).
    collective_kinds: Vec<String>,
    /// The offset of the reserved shared area (`sema::reserved`), when the kernel names
    /// one of its registers.
    reserved_smem: Option<u32>,
    /// The module-data offsets of `.global`/`.const` variables declared inside functions,
    /// by the span of the declared name (`globals::GlobalVar::decl`).
    scoped_globals: BTreeMap<Span, u32>,
    /// The bytes of `.const` variables at the start of the module data
    /// (`globals::ModuleData::const_bytes`).
    const_bytes: u32,
    /// The stack pointer of `alloca` (`sema::stack`), when the kernel uses the stack.
    stack_pointer: Option<RegId>,
    /// This thread's value in the current warp exchange (`sema::warp`).
    exchanged: Option<Value>,
    /// `spaces` of each device function the kernel calls, by function name.
    function_spaces: BTreeMap<Name, BTreeMap<Name, spaces::Provenance>>,
    /// The kernel's call cycles (`sema::recursion`).
    recursion: recursion::Recursion,
    /// Device-side launches (`sema::device_launch`).
    device_runtime: device_launch::DeviceRuntime,
}

/// What every kernel of a module shares.
struct ModuleContext<'m> {
    module_shared: &'m [&'m ast::VarDecl],
    /// Module-scope `.reg` and `.local` variables.
    module_per_thread: &'m [&'m ast::VarDecl],
    data: &'m crate::globals::ModuleData,
    functions: &'m BTreeMap<Name, &'m ast::Function>,
    /// Functions named in module-variable initializers (function tables).
    table_functions: &'m BTreeSet<Name>,
    version: (u32, u32),
    address_size: u32,
    /// The module's kernels with bodies in name order, and the bytes of their largest
    /// parameter block (`sema::device_launch`).
    kernels: (&'m [Name], u32),
}

fn lower_kernel<'m>(
    f: &'m ast::Function,
    ctx: &ModuleContext<'m>,
) -> Result<Kernel, Vec<Diagnostic>> {
    let ModuleContext {
        module_shared,
        module_per_thread,
        data,
        functions,
        table_functions,
        version,
        address_size,
        kernels,
    } = *ctx;
    let mut errors = Vec::new();
    let mut params = Vec::new();
    for p in &f.params {
        if p.space != StateSpace::Param {
            errors.push(Diagnostic::error(
                p.span,
                "kernel parameters must be in the `.param` state space",
            ));
            continue;
        }
        if p.vector.is_some() {
            errors
                .push(Diagnostic::error(p.span, "vector kernel parameters are not supported yet"));
        }
        // A `.texref`/`.samplerref`/`.surfref` parameter (§5.3) holds a 64-bit handle,
        // as a texture or surface object parameter does (`sema::texture`).
        let ty = p.ty.value.scalar().unwrap_or(ScalarType::U64);
        for n in &p.names {
            let count: u64 = n.dims.iter().map(|d| d.unwrap_or(0)).product();
            let count = if n.dims.is_empty() { 1 } else { count };
            match u32::try_from(count) {
                Ok(c) if c > 0 => {
                    params.push((n.name.value.as_str(), ty, c, p.align.as_ref().map(|a| a.value)))
                }
                _ => errors.push(Diagnostic::error(
                    n.name.span,
                    "kernel parameter arrays need a positive size",
                )),
            }
        }
    }
    let abi = KernelAbi::layout(params.iter().copied()).unwrap_or_default();
    // PTX ISA 8.1+ allows 32,764 bytes of kernel parameters, earlier versions 4,352
    // (ptxas's limits); ptxvk's parameter block is a buffer, but larger blocks are not
    // PTX.
    let (max, since) =
        if version >= (8, 1) { (32_764, "") } else { (4_352, " before PTX ISA 8.1") };
    if abi.size > max {
        errors.push(Diagnostic::error(
            f.name.span,
            format!(
                "kernel `{}` has {} bytes of parameters; PTX allows at most {max}{since}",
                f.name.value, abi.size
            ),
        ));
    }
    let (reqntid, maxntid) = block_size_attributes(f, &mut errors);
    let explicit_cluster = cluster::cluster_attributes(f).unwrap_or_else(|e| {
        errors.push(e);
        false
    });
    let maxnreg = f.attributes.iter().find_map(|a| match &a.kind {
        ast::DirectiveKind::Tuning { name, values } if name.value == ".maxnreg" => {
            values.first().map(|v| v.value)
        }
        _ => None,
    });

    let mut l = Lowerer {
        version,
        kernel: Kernel {
            reqntid,
            maxntid,
            maxnreg,
            address_size,
            ..Kernel::new(f.name.value.to_string(), f.span, abi.clone())
        },
        scopes: vec![BTreeMap::new()],
        labels: BTreeMap::new(),
        branch_tables: BTreeMap::new(),
        call_sets: BTreeMap::new(),
        reachable_functions: BTreeSet::new(),
        cur: BlockId(0),
        closed: false,
        errors,
        shared_slots: BTreeMap::new(),
        carry: None,
        generic_windows: false,
        spaces: BTreeMap::new(),
        explicit_cluster,
        functions,
        call_stack: Vec::new(),
        frame: None,
        module_scope: BTreeMap::new(),
        reduction_scratch: None,
        collective_kinds: Vec::new(),
        reserved_smem: None,
        scoped_globals: data.vars.iter().filter_map(|g| Some((g.decl?, g.offset))).collect(),
        const_bytes: data.const_bytes,
        stack_pointer: None,
        exchanged: None,
        function_spaces: BTreeMap::new(),
        recursion: recursion::Recursion::default(),
        device_runtime: device_launch::DeviceRuntime::new(kernels.0.to_vec(), kernels.1),
    };
    for g in data.vars.iter().filter(|g| g.decl.is_none()) {
        l.scopes[0].insert(Name::from(g.name.as_str()), Symbol::Global(g.offset));
    }
    for p in &abi.params {
        l.scopes[0].insert(Name::from(p.name.as_str()), Symbol::Param(p.offset));
    }
    let body = f.body.as_deref().unwrap_or(&[]);
    let callees = calls::reachable(body, table_functions, functions);
    let mut used = BTreeSet::new();
    names_used(body, &mut used);
    for c in &callees {
        names_used(c.body.as_deref().unwrap_or(&[]), &mut used);
    }
    l.reachable_functions = callees.iter().map(|c| c.name.value.clone()).collect();
    for v in module_shared {
        let names: Vec<ast::DeclName> =
            v.names.iter().filter(|n| used.contains(n.name.value.as_str())).cloned().collect();
        if !names.is_empty() {
            let decl = ast::VarDecl { names, ..(*v).clone() };
            l.place_shared(&decl);
            l.declare(&decl);
        }
    }
    for v in module_per_thread {
        l.declare(&ast::VarDecl { linkage: None, ..(*v).clone() });
    }
    l.module_scope = l.scopes[0].clone();
    for p in &abi.params {
        l.module_scope.remove(p.name.as_str());
    }
    l.place_all_shared(body);
    // A device function's `.shared` variables are static: one per CTA, however many
    // times the function is inlined.
    for c in &callees {
        l.place_all_shared(c.body.as_deref().unwrap_or(&[]));
    }
    let bodies =
        || std::iter::once(body).chain(callees.iter().map(|c| c.body.as_deref().unwrap_or(&[])));
    let generic_windows = bodies().any(|b| contains(b, &makes_generic_window));
    if bodies().any(|b| contains(b, &|i| atomic::may_be_wide_shared(i, generic_windows))) {
        l.kernel.shared.word = SharedWord::U64;
    }
    // The scratch word of `bar.red`, placed with the static variables (a whole 64-bit
    // word of a wide window, which it counts in with 64-bit atomics).
    if bodies().any(|b| contains(b, &barrier::is_reduction)) {
        let size = if l.kernel.shared.wide() { 8 } else { 4 };
        let offset = l.kernel.shared.static_bytes.next_multiple_of(size);
        l.kernel.shared.static_bytes = offset + size;
        l.kernel.shared.variables.push(("$bar.red".to_string(), offset, size));
        l.reduction_scratch = Some(offset);
    }
    let mut names = BTreeSet::new();
    bodies().for_each(|b| names_used(b, &mut names));
    if names.iter().any(|n| reserved::is_reserved_register(n)) {
        l.place_reserved();
    }
    // The stack is the start of the local window (`sema::stack`); recursion keeps its
    // frames there too (`sema::recursion`).
    l.recursion = recursion::Recursion::find(&callees);
    let uses_stack = bodies().any(|b| contains(b, &stack::uses_stack)) || l.recursion.any();
    if uses_stack {
        l.kernel.local_bytes = l.recursion.stack_bytes();
    }
    l.generic_windows = generic_windows;
    if l.generic_windows {
        l.spaces = spaces::infer(f);
        for c in &callees {
            l.function_spaces.insert(c.name.value.clone(), spaces::infer_function(c));
        }
    }
    l.kernel.entry = l.new_block(None, f.name.span);
    l.cur = l.kernel.entry;
    if uses_stack {
        l.init_stack(f.name.span);
    }
    l.init_reserved(f.name.span);
    l.collect_labels(body);
    l.statements(body);
    if !l.closed {
        l.terminate(Terminator::Return, f.span);
    }
    if l.errors.is_empty() {
        Ok(l.kernel)
    } else {
        Err(l.errors)
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

fn block_size_attributes(
    f: &ast::Function,
    errors: &mut Vec<Diagnostic>,
) -> (Option<[u32; 3]>, Option<[u32; 3]>) {
    let mut req = None;
    let mut max = None;
    for a in &f.attributes {
        let ast::DirectiveKind::Tuning { name, values } = &a.kind else { continue };
        let dims = || -> Option<[u32; 3]> {
            let v: Vec<u32> = values.iter().map(|x| x.value).collect();
            match v.as_slice() {
                [x] => Some([*x, 1, 1]),
                [x, y] => Some([*x, *y, 1]),
                [x, y, z] => Some([*x, *y, *z]),
                _ => None,
            }
        };
        match name.value.as_str() {
            ".reqntid" | ".maxntid" => match dims() {
                Some(d) if name.value == ".reqntid" => req = Some(d),
                Some(d) => max = Some(d),
                None => errors.push(Diagnostic::error(
                    a.span,
                    format!("`{}` takes 1 to 3 positive integers", name.value),
                )),
            },
            _ => {}
        }
    }
    (req, max)
}

/// Modifiers that select cache behaviour only; Vulkan has no equivalent, so they are
/// accepted and have no effect (PTX ISA 9.2 §9.7.9.1: they are performance hints).
fn is_cache_hint(d: Modifier) -> bool {
    matches!(d, Modifier::CacheHint(_))
        || matches!(d, Modifier::CacheOp(c) if c != md::CacheOp::Nc && c != md::CacheOp::Unified)
}

/// The decoded modifiers of one instruction ([`ptxvk_frontend::decode`]), with
/// rounding, comparisons, combines and product halves as IR values.
#[derive(Clone)]
struct Mods {
    opcode: Opcode,
    types: Vec<Spanned<ScalarType>>,
    space: Option<Spanned<StateSpace>>,
    vector: Option<u32>,
    rounding: Option<Spanned<(Rounding, bool)>>,
    ftz: bool,
    sat: bool,
    cmp: Option<CmpOp>,
    bool_op: Option<BoolOp>,
    mul_part: Option<Spanned<BinaryOp>>,
    details: Vec<Spanned<Modifier>>,
}

impl Mods {
    /// Whether the instruction has modifier `d`.
    fn has(&self, d: Modifier) -> bool {
        self.details.iter().any(|x| x.value == d)
    }

    /// The first modifier `f` picks out, with its span.
    fn find<T>(&self, f: impl Fn(Modifier) -> Option<T>) -> Option<Spanned<T>> {
        self.details.iter().find_map(|d| f(d.value).map(|v| Spanned::new(v, d.span)))
    }

    /// Rejects every modifier that is not in `allowed`: the forms of one instruction
    /// that take fewer modifiers than its row of the instruction table.
    fn allow(&self, allowed: &[Modifier]) -> Result<(), Diagnostic> {
        match self.details.iter().find(|d| !allowed.contains(&d.value)) {
            Some(d) => Err(unsupported_modifier(d, self.opcode)),
            None => Ok(()),
        }
    }
}

/// The diagnostic for a modifier that an instruction takes in PTX but not in the form
/// it has here.
fn unsupported_modifier(d: &Spanned<Modifier>, op: Opcode) -> Diagnostic {
    Diagnostic::error(d.span, format!("unknown or unsupported modifier `{}` for `{op}`", d.value))
}

impl From<decode::Modifiers> for Mods {
    fn from(m: decode::Modifiers) -> Mods {
        let rounding = m.rounding.map(|r| {
            let direction = match r.value.direction {
                decode::Direction::Nearest => Rounding::Nearest,
                decode::Direction::Zero => Rounding::Zero,
                decode::Direction::Down => Rounding::Down,
                decode::Direction::Up => Rounding::Up,
            };
            Spanned::new((direction, r.value.integer), r.span)
        });
        let bool_op = m.combine.map(|c| match c {
            decode::Combine::And => BoolOp::And,
            decode::Combine::Or => BoolOp::Or,
            decode::Combine::Xor => BoolOp::Xor,
        });
        let mul_part = m.mul_part.map(|p| {
            let op = match p.value {
                decode::MulPart::Lo => BinaryOp::Mul,
                decode::MulPart::Hi => BinaryOp::MulHi,
                decode::MulPart::Wide => BinaryOp::MulWide,
            };
            Spanned::new(op, p.span)
        });
        Mods {
            opcode: m.opcode,
            types: m.types,
            space: m.space,
            vector: m.vector,
            rounding,
            ftz: m.ftz,
            sat: m.sat,
            cmp: m.cmp,
            bool_op,
            mul_part,
            details: m.details,
        }
    }
}

impl Lowerer<'_> {
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
        let b = &mut self.kernel.blocks[self.cur.index()];
        b.term = term;
        b.term_span = span;
        self.closed = true;
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
        self.cur = next;
        self.closed = false;
    }

    /// Makes sure there is an open block to append to.
    fn open(&mut self, span: Span) {
        if self.closed {
            self.cur = self.new_block(None, span);
            self.closed = false;
        }
    }

    fn push(&mut self, kind: InstKind, span: Span) {
        self.open(span);
        self.kernel.blocks[self.cur.index()].insts.push(Inst { kind, span });
    }

    fn collect_labels(&mut self, stmts: &[ast::Statement]) {
        for s in stmts {
            match s {
                ast::Statement::Label(l) => {
                    if self.labels.contains_key(&l.value) {
                        self.errors.push(Diagnostic::error(
                            l.span,
                            format!("label `{}` is defined twice", l.value),
                        ));
                    } else {
                        let b = self.new_block(Some(l.value.to_string()), l.span);
                        self.labels.insert(l.value.clone(), b);
                    }
                }
                ast::Statement::Block(inner, _) => self.collect_labels(inner),
                ast::Statement::Directive(d) => match &d.kind {
                    ast::DirectiveKind::BranchTargets { label, targets } => {
                        self.branch_tables.insert(label.value.clone(), targets.clone());
                    }
                    ast::DirectiveKind::CallTargets { label, targets } => {
                        let set = calls::CallSet::Targets(targets.clone());
                        self.call_sets.insert(label.value.clone(), set);
                    }
                    ast::DirectiveKind::CallPrototype { label, returns, params, .. } => {
                        let set = calls::CallSet::Prototype {
                            returns: returns.clone(),
                            params: params.clone(),
                        };
                        self.call_sets.insert(label.value.clone(), set);
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
                    let Some(&b) = self.labels.get(&l.value) else { continue };
                    if !self.closed {
                        self.terminate(Terminator::Jump(b), l.span);
                    }
                    self.cur = b;
                    self.closed = false;
                }
                ast::Statement::Instruction(i) => {
                    if let Err(d) = self.instruction(i) {
                        self.errors.push(d);
                    }
                }
                ast::Statement::Block(inner, _) => {
                    self.scopes.push(BTreeMap::new());
                    // A recursive function's frame reuses a block's slots after it.
                    let frame = self.frame_mark();
                    self.statements(inner);
                    self.release_frame(frame);
                    self.scopes.pop();
                }
                ast::Statement::Directive(_) => {}
            }
        }
    }

    fn declare(&mut self, v: &ast::VarDecl) {
        match v.space {
            StateSpace::Reg => {
                if v.vector.is_some() {
                    // `sema::vectors` splits them before analysis.
                    self.errors.push(Diagnostic::internal(v.span, "a vector register left"));
                    return;
                }
                let Some(scalar) = v.ty.value.scalar() else {
                    self.errors.push(opaque_unsupported(v));
                    return;
                };
                let ty = match scalar.kind() {
                    ast::TypeKind::Pred => RegTy::Pred,
                    ast::TypeKind::Float if matches!(scalar, ScalarType::F32 | ScalarType::F64) => {
                        RegTy::Float(scalar.bits() as u8)
                    }
                    // Narrow floats live as bit patterns (`sema::formats`).
                    ast::TypeKind::Float if scalar != ScalarType::Tf32 => {
                        RegTy::Int(scalar.bits() as u8)
                    }
                    ast::TypeKind::Float => {
                        self.errors.push(Diagnostic::error(
                            v.ty.span,
                            format!("`{}` registers are not supported yet", scalar.directive()),
                        ));
                        return;
                    }
                    _ if scalar == ScalarType::B128 => {
                        self.errors.push(Diagnostic::error(
                            v.ty.span,
                            "`.b128` registers are not supported yet",
                        ));
                        return;
                    }
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
                    if let Some(&sym) = self.shared_slots.get(&n.name.span) {
                        if let Some(scope) = self.scopes.last_mut() {
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
                    let Some(&offset) = self.scoped_globals.get(&n.name.span) else {
                        self.errors.push(Diagnostic::internal(
                            n.name.span,
                            "a function-scope variable missing from the module data",
                        ));
                        continue;
                    };
                    if let Some(scope) = self.scopes.last_mut() {
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
            self.errors.push(opaque_unsupported(v));
            return;
        };
        for n in &v.names {
            let Some((elem, align)) = self.element_layout(v, scalar, n, "`.local`") else {
                continue;
            };
            let count: u64 = n.dims.iter().map(|d| d.unwrap_or(1)).product();
            let size = count.checked_mul(elem as u64).and_then(|s| u32::try_from(s).ok());
            let Some(size) = size.filter(|&s| s <= 1 << 20) else {
                self.errors.push(Diagnostic::error(n.name.span, "local variable too large"));
                continue;
            };
            // A recursive function's variables are in its activation's frame.
            let sym = self.frame_slot(size, align).unwrap_or_else(|| {
                let offset = self.kernel.local_bytes.next_multiple_of(align);
                self.kernel.local_bytes = offset.saturating_add(size);
                Symbol::Local(offset)
            });
            if let Some(scope) = self.scopes.last_mut() {
                scope.insert(n.name.value.clone(), sym);
            }
        }
    }

    /// The element size and alignment of name `n` of a `.local` or `.shared` declaration
    /// `v`, or `None` when it has an initializer, which neither space allows (reported).
    fn element_layout(
        &mut self,
        v: &ast::VarDecl,
        scalar: ScalarType,
        n: &ast::DeclName,
        space: &str,
    ) -> Option<(u32, u32)> {
        if n.init.is_some() {
            self.errors.push(Diagnostic::error(
                n.name.span,
                format!("{space} variables cannot have initializers"),
            ));
            return None;
        }
        let elem = scalar.bytes() * v.vector.unwrap_or(1);
        Some((elem, v.align.as_ref().map_or(elem, |a| a.value).max(1)))
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

    /// Static variables get the next aligned offset; `extern` and unsized arrays share
    /// the dynamic region after all static ones (CUDA semantics of `extern __shared__`).
    fn place_shared(&mut self, v: &ast::VarDecl) {
        let Some(scalar) = v.ty.value.scalar() else {
            self.errors.push(opaque_unsupported(v));
            return;
        };
        for n in &v.names {
            let Some((elem, align)) = self.element_layout(v, scalar, n, "`.shared`") else {
                continue;
            };
            if v.linkage == Some(ast::Linkage::Extern) || n.dims.contains(&None) {
                if n.dims.len() != 1 {
                    self.errors.push(Diagnostic::error(
                        n.name.span,
                        "dynamic shared memory must be declared as `name[]`",
                    ));
                    continue;
                }
                let a = self.kernel.shared.dynamic_align.unwrap_or(1).max(align);
                self.kernel.shared.dynamic_align = Some(a);
                self.shared_slots.insert(n.name.span, Symbol::DynamicShared);
                continue;
            }
            let count: u64 = n.dims.iter().map(|d| d.unwrap_or(1)).product();
            let size = count.checked_mul(elem as u64).and_then(|s| u32::try_from(s).ok());
            let Some(size) = size else {
                self.errors.push(Diagnostic::error(n.name.span, "shared variable too large"));
                continue;
            };
            let offset = self.kernel.shared.static_bytes.next_multiple_of(align);
            self.kernel.shared.static_bytes = offset.saturating_add(size);
            self.kernel.shared.variables.push((n.name.value.to_string(), offset, size));
            self.shared_slots.insert(n.name.span, Symbol::Shared(offset));
        }
    }

    fn add_reg(&mut self, name: String, ty: RegTy, span: Span) {
        let id = RegId(self.kernel.regs.len() as u32);
        self.kernel.regs.push(RegInfo { name: name.clone(), ty, span });
        if let Some(s) = self.scopes.last_mut() {
            s.insert(Name::from(name.as_str()), Symbol::Reg(id));
        }
    }

    fn temp(&mut self, ty: RegTy, span: Span) -> RegId {
        let id = RegId(self.kernel.regs.len() as u32);
        self.kernel.regs.push(RegInfo { name: format!("$t{}", id.0), ty, span });
        id
    }

    /// A register holding the offset of the dynamic shared region.
    fn dynamic_shared_base(&mut self, span: Span) -> RegId {
        let t = self.temp(RegTy::Int(32), span);
        self.push(InstKind::Special { dst: t, reg: SpecialReg::DynamicSharedBase }, span);
        t
    }

    /// Resolves a name in the innermost scope that declares it.
    fn lookup(&self, name: &str) -> Option<Resolved> {
        let sym = self.scopes.iter().rev().find_map(|s| s.get(name).copied())?;
        Some(match sym {
            Symbol::Reg(r) => Resolved::Reg(r),
            Symbol::Param(off) => Resolved::Param(off),
            Symbol::Shared(off) => Resolved::Shared(Some(off)),
            Symbol::DynamicShared => Resolved::Shared(None),
            Symbol::Local(off) => Resolved::Local(off),
            Symbol::Framed(base, off) => Resolved::Framed(base, off),
            Symbol::Global(off) => Resolved::Global(off),
        })
    }

    // ----- operands -------------------------------------------------------------------------

    fn reg_operand(&self, op: &Operand) -> Result<(RegId, Span), Diagnostic> {
        match op {
            Operand::Name { name, component: None } => match self.lookup(&name.value) {
                Some(Resolved::Reg(r)) => Ok((r, name.span)),
                Some(_) => {
                    Err(Diagnostic::error(name.span, format!("`{}` is not a register", name.value)))
                }
                None => Err(undeclared(name)),
            },
            other => Err(Diagnostic::error(other.span(), "expected a register")),
        }
    }

    /// A destination register of exactly the width of `ty` (or wider when `allow_wider`).
    fn dst(&self, op: &Operand, ty: OpTy, allow_wider: bool) -> Result<RegId, Diagnostic> {
        let (r, span) = self.reg_operand(op)?;
        self.check_width(r, span, ty, allow_wider)?;
        Ok(r)
    }

    fn check_width(
        &self,
        r: RegId,
        span: Span,
        ty: OpTy,
        allow_wider: bool,
    ) -> Result<(), Diagnostic> {
        let info = self.kernel.reg(r);
        let ok = match (info.ty, ty) {
            (RegTy::Pred, OpTy::Pred) => true,
            (RegTy::Pred, _) | (_, OpTy::Pred) => false,
            (rt, t) => {
                rt.bits() == t.bits()
                    || (allow_wider
                        && rt.bits() > t.bits()
                        && !t.is_float()
                        && matches!(rt, RegTy::Int(_)))
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Diagnostic::error(
                span,
                format!(
                    "register `{}` ({}) does not match the instruction type ({})",
                    info.name,
                    describe_reg(info.ty),
                    describe_op(ty)
                ),
            ))
        }
    }

    fn pred(&mut self, op: &Operand) -> Result<(RegId, bool), Diagnostic> {
        let (inner, negate) = match op {
            Operand::Not(inner, _) => (inner.as_ref(), true),
            other => (other, false),
        };
        // An immediate predicate (`selp.b32 d, a, b, 0;`, `vote.all.pred p, 1, m`):
        // PTX ISA 9.2 §4.5 lets any integer constant stand for a predicate, nonzero
        // being true. It becomes a predicate register of that value.
        if let Operand::Imm(e) = inner {
            let value = imm_bits(e, OpTy::U(64))? != 0;
            let r = self.temp(OpTy::Pred.storage(), e.span);
            let src = Value::Imm(u64::from(value));
            self.push(InstKind::Mov { ty: OpTy::Pred, dst: r, src }, e.span);
            return Ok((r, negate));
        }
        let (r, span) = self.reg_operand(inner)?;
        self.check_width(r, span, OpTy::Pred, false)?;
        Ok((r, negate))
    }

    /// A source operand read at type `ty`: register, immediate, special register or the
    /// address of a shared variable.
    fn src(
        &mut self,
        op: &Operand,
        ty: OpTy,
        allow_wider: bool,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match op {
            // `%r + 4`, `arr + 4`, `arr[1]`: a register or an address plus a constant
            // (PTX ISA 9.2 §6.4.2 lets `mov` take an array element's address; ptxas
            // takes `reg + imm` in any integer value position).
            Operand::Imm(e) => match symbol_plus_offset(e) {
                Some((name, offset)) => {
                    self.offset_operand(name, e.span, offset, ty, allow_wider, span)
                }
                None => Ok(Value::Imm(imm_bits(e, ty)?)),
            },
            Operand::Address(a) if !a.unified => match &a.base {
                Some(name) => {
                    self.offset_operand(&name.value, name.span, a.offset, ty, allow_wider, span)
                }
                None => Err(Diagnostic::error(a.span, "expected a register or an immediate")),
            },
            Operand::Name { name, component: Some(c) } => {
                if ty.bits() != 32 && !(allow_wider && ty.bits() < 32) {
                    return Err(Diagnostic::error(
                        op.span(),
                        format!("`{}{}` is a 32-bit special register", name.value, c.value),
                    ));
                }
                let dim = match c.value.as_str() {
                    ".x" => Some(Dim::X),
                    ".y" => Some(Dim::Y),
                    ".z" => Some(Dim::Z),
                    _ => None,
                };
                if let Some(v) = dim.and_then(|d| self.cluster_register(&name.value, Some(d), span))
                {
                    return Ok(v);
                }
                let reg = special_reg(name, c.as_ref())?;
                let t = self.temp(RegTy::Int(32), span);
                self.push(InstKind::Special { dst: t, reg }, span);
                if ty.bits() < 32 {
                    // PTX ISA 1.x's special registers were 16-bit (`mov.u16 %rh, %tid.x`,
                    // still accepted): the low bits.
                    let narrow = OpTy::U(ty.bits() as u8);
                    return Ok(expand::Emit { l: self, span }.cvt(
                        narrow,
                        OpTy::U(32),
                        Value::Reg(t),
                    ));
                }
                Ok(Value::Reg(t))
            }
            Operand::Name { name, component: None } => match self.lookup(&name.value) {
                Some(Resolved::Reg(r)) => {
                    self.check_width(r, name.span, ty, allow_wider)?;
                    Ok(Value::Reg(r))
                }
                Some(Resolved::Shared(off)) => {
                    if ty.is_float() || ty.bits() < 32 {
                        return Err(Diagnostic::error(
                            name.span,
                            "the address of a shared variable is a 32- or 64-bit integer",
                        ));
                    }
                    match off {
                        Some(off) => Ok(Value::Imm(off as u64)),
                        None => {
                            let base = Value::Reg(self.dynamic_shared_base(span));
                            if ty.bits() == 32 {
                                return Ok(base);
                            }
                            let t = self.temp(RegTy::Int(64), span);
                            let (to, from) = (OpTy::U(64), OpTy::U(32));
                            let mode = FloatMode::default();
                            let kind = InstKind::Convert {
                                to,
                                from,
                                rounding: None,
                                mode,
                                dst: t,
                                src: base,
                            };
                            self.push(kind, span);
                            Ok(Value::Reg(t))
                        }
                    }
                }
                Some(Resolved::Local(off)) => {
                    if ty.is_float() || ty.bits() < 32 {
                        return Err(Diagnostic::error(
                            name.span,
                            "the address of a local variable is a 32- or 64-bit integer",
                        ));
                    }
                    Ok(Value::Imm(off as u64))
                }
                Some(Resolved::Framed(base, off)) => {
                    if ty.is_float() || ty.bits() < 32 {
                        return Err(Diagnostic::error(
                            name.span,
                            "the address of a local variable is a 32- or 64-bit integer",
                        ));
                    }
                    Ok(self.framed_address(base, off, ty, span))
                }
                // In a module with 32-bit addresses, its offset in the address window.
                Some(Resolved::Global(off))
                    if self.kernel.address_size == 32 && ty.bits() == 32 && !ty.is_float() =>
                {
                    Ok(self.window_offset_of_module_data(off, span))
                }
                Some(Resolved::Global(off)) => {
                    if ty.bits() != 64 || ty.is_float() {
                        return Err(Diagnostic::error(
                            name.span,
                            "the address of a module variable is a 64-bit integer",
                        ));
                    }
                    Ok(Value::Reg(self.module_address(off, span)))
                }
                // A kernel parameter's `.param` address: its offset in the block.
                Some(Resolved::Param(off)) => {
                    if ty.is_float() || ty.bits() < 32 {
                        return Err(Diagnostic::error(
                            name.span,
                            "the address of a kernel parameter is a 32- or 64-bit integer",
                        ));
                    }
                    Ok(Value::Imm(u64::from(off)))
                }
                // A device function's address (`sema::calls::function_address`).
                None if self.functions.contains_key(&name.value) => {
                    if ty.bits() != 64 || ty.is_float() {
                        return Err(Diagnostic::error(
                            name.span,
                            "the address of a function is a 64-bit integer",
                        ));
                    }
                    Ok(Value::Imm(calls::function_address(self.functions, &name.value)))
                }
                // A kernel's address, for device-side launches (`sema::device_launch`).
                None if self.device_runtime.kernel_address(&name.value).is_some() => {
                    if ty.bits() != 64 || ty.is_float() {
                        return Err(Diagnostic::error(
                            name.span,
                            "the address of a kernel is a 64-bit integer",
                        ));
                    }
                    Ok(Value::Imm(self.device_runtime.kernel_address(&name.value).unwrap_or(0)))
                }
                // PTX ISA 9.2 §10.31-10.33: shared memory sizes of the launch.
                None if matches!(
                    name.value.as_str(),
                    "%dynamic_smem_size" | "%total_smem_size" | "%aggr_smem_size"
                ) =>
                {
                    if ty.bits() != 32 || ty.is_float() {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a 32-bit register", name.value),
                        ));
                    }
                    let reg = if name.value == "%dynamic_smem_size" {
                        SpecialReg::DynamicSharedBytes
                    } else {
                        SpecialReg::TotalSharedBytes
                    };
                    let t = self.temp(OpTy::U(32).storage(), span);
                    self.push(InstKind::Special { dst: t, reg }, span);
                    Ok(Value::Reg(t))
                }
                // PTX ISA 9.2 §10.22-10.25: the clocks read VK_KHR_shader_clock's device
                // clock, a 64-bit counter in the device's own unit (module doc of
                // `SpecialReg::DeviceClock`).
                None if matches!(
                    name.value.as_str(),
                    "%clock"
                        | "%clock_hi"
                        | "%clock64"
                        | "%globaltimer"
                        | "%globaltimer_lo"
                        | "%globaltimer_hi"
                ) =>
                {
                    let wide = matches!(name.value.as_str(), "%clock64" | "%globaltimer");
                    if ty.is_float() || ty.bits() != if wide { 64 } else { 32 } {
                        let bits = if wide { 64 } else { 32 };
                        return Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a {bits}-bit register", name.value),
                        ));
                    }
                    let t = self.temp(RegTy::Int(64), span);
                    self.push(InstKind::Special { dst: t, reg: SpecialReg::DeviceClock }, span);
                    let mut e = expand::Emit { l: self, span };
                    Ok(match name.value.as_str() {
                        "%clock64" | "%globaltimer" => Value::Reg(t),
                        "%clock_hi" | "%globaltimer_hi" => {
                            let hi =
                                e.bin(BinaryOp::Shr, OpTy::U(64), Value::Reg(t), Value::Imm(32));
                            e.cvt(OpTy::U(32), OpTy::U(64), hi)
                        }
                        _ => e.cvt(OpTy::U(32), OpTy::U(64), Value::Reg(t)),
                    })
                }
                None if reserved::is_reserved_register(&name.value) => {
                    self.reserved_register(&name.value, ty, name.span)
                }
                // A predicate (PTX ISA 9.2 §10.41); every cluster is one CTA, declared
                // or not (`sema::cluster`).
                None if name.value == "%is_explicit_cluster" => {
                    if ty != OpTy::Pred {
                        return Err(Diagnostic::error(
                            name.span,
                            "`%is_explicit_cluster` is a `.pred` register",
                        ));
                    }
                    Ok(Value::Imm(u64::from(self.explicit_cluster)))
                }
                None if matches!(name.value.as_str(), "%envreg1" | "%envreg2") => {
                    if ty.bits() != 32 || ty.is_float() {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a 32-bit register", name.value),
                        ));
                    }
                    Ok(self.grid_workspace_half(name.value == "%envreg1", name.span))
                }
                None if is_special_name(&name.value) => {
                    let value = match self.warp_register(&name.value, name.span) {
                        Some(v) => Some(v),
                        None => self.cluster_register(&name.value, None, name.span),
                    };
                    match value {
                        Some(v) if ty.bits() == 32 && !ty.is_float() => Ok(v),
                        Some(_) => Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a 32-bit register", name.value),
                        )),
                        None => Err(Diagnostic::error(
                            name.span,
                            format!("special register `{}` is not supported yet", name.value),
                        )),
                    }
                }
                None => Err(undeclared(name)),
            },
            other => Err(Diagnostic::error(other.span(), "expected a register or an immediate")),
        }
    }

    /// An address operand of either width read as a `bits`-bit address: PTX ISA 9.2
    /// §6.4.1 zero-extends a narrower address and truncates a wider one.
    fn address_value(&mut self, op: &Operand, bits: u32, span: Span) -> Result<Value, Diagnostic> {
        let ty = OpTy::U(bits as u8);
        let width = match op {
            Operand::Name { name, component: None } => match self.lookup(&name.value) {
                Some(Resolved::Reg(r)) => Some(self.kernel.reg(r).ty),
                _ => None,
            },
            _ => None,
        };
        match width {
            Some(RegTy::Int(w @ (32 | 64))) if u32::from(w) != bits => {
                let from = OpTy::U(w);
                let v = self.src(op, from, false, span)?;
                Ok(expand::Emit { l: self, span }.cvt(ty, from, v))
            }
            _ => self.src(op, ty, false, span),
        }
    }

    /// The value of `name` (a register or a variable's address) plus `offset`, read at
    /// integer type `ty`.
    fn offset_operand(
        &mut self,
        name: &str,
        name_span: Span,
        offset: i64,
        ty: OpTy,
        allow_wider: bool,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let named = Operand::Name { name: Spanned::new(name.into(), name_span), component: None };
        let base = self.src(&named, ty, allow_wider, span)?;
        if offset == 0 {
            return Ok(base);
        }
        if ty.is_float() || ty == OpTy::Pred {
            return Err(Diagnostic::error(
                name_span,
                format!("`{name}` plus an offset is an integer, not a {} operand", describe_op(ty)),
            ));
        }
        let mask = if ty.bits() >= 64 { u64::MAX } else { (1u64 << ty.bits()) - 1 };
        Ok(match base {
            Value::Imm(v) => Value::Imm(v.wrapping_add(offset as u64) & mask),
            base => {
                let int = OpTy::U(ty.bits() as u8);
                let rhs = Value::Imm(offset as u64 & mask);
                expand::Emit { l: self, span }.add(int, base, rhs)
            }
        })
    }

    /// A register holding the device address of parameter-block offset `off` (a
    /// 32- or 64-bit register).
    fn param_block_address(&mut self, off: RegId, span: Span) -> RegId {
        let base = self.temp(RegTy::Int(64), span);
        self.push(InstKind::Special { dst: base, reg: SpecialReg::ParamBlock }, span);
        let mut e = expand::Emit { l: self, span };
        let off = match e.l.kernel.reg(off).ty.bits() {
            64 => Value::Reg(off),
            _ => e.cvt(OpTy::U(64), OpTy::U(32), Value::Reg(off)),
        };
        let sum = e.add(OpTy::U(64), Value::Reg(base), off);
        let r = e.temp(OpTy::U(64));
        e.mov(OpTy::U(64), r, sum);
        r
    }

    /// A register holding the device address of module data offset `off`.
    /// The 32-bit window offset of module-data byte `off`: its address minus the
    /// window's base, truncated (the module data lies in the window).
    fn window_offset_of_module_data(&mut self, off: u32, span: Span) -> Value {
        let address = self.module_address(off, span);
        let base = self.temp(RegTy::Int(64), span);
        self.push(InstKind::Special { dst: base, reg: SpecialReg::WindowBase }, span);
        let mut e = expand::Emit { l: self, span };
        let offset = e.bin(BinaryOp::Sub, OpTy::U(64), Value::Reg(address), Value::Reg(base));
        e.cvt(OpTy::U(32), OpTy::U(64), offset)
    }

    fn module_address(&mut self, off: u32, span: Span) -> RegId {
        let base = self.temp(RegTy::Int(64), span);
        self.push(InstKind::Special { dst: base, reg: SpecialReg::ModuleData }, span);
        if off == 0 {
            return base;
        }
        let r = self.temp(RegTy::Int(64), span);
        self.push(
            InstKind::Binary {
                op: BinaryOp::Add,
                ty: OpTy::U(64),
                mode: FloatMode::default(),
                dst: r,
                lhs: Value::Reg(base),
                rhs: Value::Imm(u64::from(off)),
            },
            span,
        );
        r
    }

    /// The state space of the variable an address operand names (`[local_x+8]`), when
    /// it is a `.local`, `.shared` or function-frame variable.
    fn variable_space(&self, op: &Operand) -> Option<StateSpace> {
        let Operand::Address(ast::Address { base: Some(name), .. }) = op else { return None };
        match self.lookup(&name.value)? {
            Resolved::Local(_) | Resolved::Framed(..) => Some(StateSpace::Local),
            Resolved::Shared(_) => Some(StateSpace::Shared),
            _ => None,
        }
    }

    fn address(&mut self, op: &Operand, space: StateSpace) -> Result<(Space, Address), Diagnostic> {
        let Operand::Address(a) = op else {
            return Err(Diagnostic::error(op.span(), "expected an address `[…]`"));
        };
        if a.unified {
            return Err(Diagnostic::error(a.span, "`.unified` addresses are not supported yet"));
        }
        let mut ir_space = match space {
            StateSpace::Global => Space::Global,
            StateSpace::Shared => Space::Shared,
            StateSpace::Param => Space::Param,
            StateSpace::Local => Space::Local,
            // `.const` addresses are device addresses into the module data.
            StateSpace::Const => Space::Global,
            other => {
                return Err(Diagnostic::error(
                    a.span,
                    format!("`{}` memory is not supported yet", other.directive()),
                ))
            }
        };
        let (base, offset) = match &a.base {
            None => (None, a.offset),
            Some(name) => match self.lookup(&name.value) {
                Some(Resolved::Reg(r)) => {
                    let bits = self.kernel.reg(r).ty;
                    if !matches!(bits, RegTy::Int(32 | 64)) {
                        return Err(Diagnostic::error(
                            name.span,
                            "an address register must be a 32- or 64-bit integer",
                        ));
                    }
                    if ir_space == Space::Param {
                        // A `.param` address in a register: in an inlined function, a
                        // call parameter's local offset; in the kernel, an offset in
                        // the parameter block, which is global memory.
                        if self.frame.is_some() {
                            ir_space = Space::Local;
                        } else {
                            ir_space = Space::Global;
                            let base = self.param_block_address(r, a.span);
                            return Ok((ir_space, Address { base: Some(base), offset: a.offset }));
                        }
                    }
                    (Some(r), a.offset)
                }
                Some(Resolved::Param(off)) => {
                    if space != StateSpace::Param {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("kernel parameter `{}` is in the `.param` space", name.value),
                        ));
                    }
                    (None, off as i64 + a.offset)
                }
                Some(Resolved::Global(off)) => {
                    if !matches!(space, StateSpace::Global | StateSpace::Const) {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a module-scope variable", name.value),
                        ));
                    }
                    (Some(self.module_address(off, a.span)), a.offset)
                }
                Some(Resolved::Local(off)) => {
                    // `.param` variables of device-function calls are local memory.
                    if !matches!(space, StateSpace::Local | StateSpace::Param) {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a `.local` or call `.param` variable", name.value),
                        ));
                    }
                    ir_space = Space::Local;
                    (None, off as i64 + a.offset)
                }
                Some(Resolved::Framed(base, off)) => {
                    if !matches!(space, StateSpace::Local | StateSpace::Param) {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("`{}` is a `.local` or call `.param` variable", name.value),
                        ));
                    }
                    ir_space = Space::Local;
                    (Some(base), off as i64 + a.offset)
                }
                Some(Resolved::Shared(off)) => {
                    if space != StateSpace::Shared {
                        if space == StateSpace::Global {
                            return Err(Diagnostic::error(
                                name.span,
                                format!("`{}` is a `.shared` variable", name.value),
                            ));
                        }
                        ir_space = Space::Shared;
                    }
                    match off {
                        Some(off) => (None, off as i64 + a.offset),
                        None => (Some(self.dynamic_shared_base(name.span)), a.offset),
                    }
                }
                None => return Err(undeclared(name)),
            },
        };
        Ok((ir_space, Address { base, offset }))
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
        let legacy;
        let i = match legacy_default_modes(self.version, op, i) {
            Some(Legacy::Modes(rewritten)) => {
                legacy = rewritten;
                &legacy
            }
            Some(Legacy::Mad { mul, add }) => {
                let product = self.temp(RegTy::Float(32), span);
                if let Some(scope) = self.scopes.last_mut() {
                    scope.insert(Name::from(LEGACY_PRODUCT), Symbol::Reg(product));
                }
                self.instruction(&mul)?;
                return self.instruction(&add);
            }
            None => i,
        };
        let m = Mods::from(decode::decode(i)?.ok_or_else(unknown)?);
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

        // Control flow first: it ends blocks instead of adding to them.
        match op {
            Opcode::Bra => {
                let [Operand::Name { name, component: None }] = i.operands.as_slice() else {
                    return Err(Diagnostic::error(span, "`bra` takes one label"));
                };
                let Some(&target) = self.labels.get(&name.value) else {
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
                // goes to the first target here.
                if !m.has(Modifier::Indexed(md::Indexed::Idx)) {
                    return Err(Diagnostic::error(span, "`brx` needs `.idx`"));
                }
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
                let Some(labels) = self.branch_tables.get(&table.value).cloned() else {
                    return Err(Diagnostic::error(
                        table.span,
                        format!("`{}` is not a `.branchtargets` table", table.value),
                    ));
                };
                let mut cases = Vec::new();
                for (v, l) in labels.iter().enumerate() {
                    let Some(&b) = self.labels.get(&l.value) else {
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
                let term = if op == Opcode::Ret {
                    calls::ret_terminator(&self.frame)
                } else {
                    Terminator::Return
                };
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
            self.cur = then;
            self.closed = false;
            join
        });
        let result = self.operation(op, i, &m);
        if result.is_ok()
            && matches!(
                op,
                Opcode::Ld
                    | Opcode::Ldu
                    | Opcode::St
                    | Opcode::Atom
                    | Opcode::Red
                    | Opcode::Cp
                    | Opcode::Ldmatrix
                    | Opcode::Stmatrix
                    | Opcode::Wmma
                    | Opcode::Mbarrier
                    | Opcode::Tex
                    | Opcode::Tld4
                    | Opcode::Txq
                    | Opcode::Suld
                    | Opcode::Sust
                    | Opcode::Sured
                    | Opcode::Suq
            )
        {
            self.kernel.memory_instructions.push(span);
        }
        if let Some(join) = join {
            if !self.closed {
                self.terminate(Terminator::Jump(join), span);
            }
            self.cur = join;
            self.closed = false;
        }
        result
    }

    fn operation(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        // The lowerings of the `sema` submodules, each `None` for the instructions it
        // does not handle; the first to handle one wins.
        type Lowering<'m> = fn(
            &mut Lowerer<'m>,
            Opcode,
            &ast::Instruction,
            &Mods,
        ) -> Option<Result<(), Diagnostic>>;
        let lowerings: [Lowering<'_>; 13] = [
            Self::atomic,
            Self::texture,
            Self::mbarrier,
            Self::cluster,
            Self::async_copy,
            Self::stack,
            Self::warp,
            Self::matrix,
            Self::wmma,
            Self::approx,
            Self::float_formats,
            Self::expand,
            Self::video,
        ];
        for lower in lowerings {
            if let Some(result) = lower(self, op, i, m) {
                return result;
            }
        }
        let span = i.span;
        let ops = i.operands.as_slice();
        let arity = |n: usize| -> Result<(), Diagnostic> {
            if ops.len() == n {
                Ok(())
            } else {
                Err(Diagnostic::error(
                    span,
                    format!("`{op}` takes {n} operands, found {}", ops.len()),
                ))
            }
        };
        match op {
            Opcode::Call => return self.call(i),
            Opcode::Trap => {
                m.allow(&[])?;
                self.trap(span);
                return Ok(());
            }
            Opcode::Mov => {
                let ty = self.bits_type(i, m)?;
                m.allow(&[])?;
                // `mov.v2`/`.v4` (§9.7.9.1): a move per element between vectors of
                // registers (a vector register is one, `sema::vectors`).
                if let Some(n) = m.vector {
                    // `mov.v8.u16 {h0, …, h7}, %q`: the elements of registers that hold
                    // several, as `mov.b128 {…}, %q` moves them (PTX ISA 9.2 §9.7.9.1; a
                    // `.b128` register is a pair of `.b64` here, `sema::vectors`).
                    let as_list = |o: &Operand| match o {
                        Operand::Vector(v, _) => v.clone(),
                        other => vec![other.clone()],
                    };
                    let (d, s) = (as_list(&ops[0]), as_list(&ops[1]));
                    let n_elems = n as usize;
                    let split = if d.len() == n_elems && s.len() < n_elems {
                        Some((&d, &s, true))
                    } else if s.len() == n_elems && d.len() < n_elems {
                        Some((&s, &d, false))
                    } else {
                        None
                    };
                    let split = split
                        .filter(|(_, few, _)| !few.is_empty() && n_elems.is_multiple_of(few.len()));
                    if let Some((many, few, unpack)) = split {
                        let group = n_elems / few.len();
                        let packed = OpTy::U((ty.bits() as usize * group) as u8);
                        for (whole, parts) in few.iter().zip(many.chunks(group)) {
                            if unpack {
                                let dsts = parts
                                    .iter()
                                    .map(|e| self.opt_dst(e, ty))
                                    .collect::<Result<_, _>>()?;
                                let src = self.src(whole, packed, false, span)?;
                                self.push(InstKind::Unpack { elem: ty, dsts, src }, span);
                            } else {
                                let dst = self.dst(whole, packed, false)?;
                                let srcs = parts
                                    .iter()
                                    .map(|e| self.src(e, ty, false, span))
                                    .collect::<Result<_, _>>()?;
                                self.push(InstKind::Pack { elem: ty, dst, srcs }, span);
                            }
                        }
                        return Ok(());
                    }
                    let (Operand::Vector(d, _), Operand::Vector(s, _)) = (&ops[0], &ops[1]) else {
                        return Err(Diagnostic::error(span, format!("`mov.v{n}` moves vectors")));
                    };
                    if d.len() != n as usize || s.len() != n as usize {
                        return Err(Diagnostic::error(
                            span,
                            format!("`mov.v{n}` moves vectors of {n} elements"),
                        ));
                    }
                    // Every source is read before any destination is written (`mov.v2
                    // {a, b}, {b, a}` swaps).
                    let mut srcs = Vec::new();
                    for e in s {
                        let v = self.src(e, ty, false, span)?;
                        let t = self.temp(ty.storage(), span);
                        self.push(InstKind::Mov { ty, dst: t, src: v }, span);
                        srcs.push(Value::Reg(t));
                    }
                    for (d, src) in d.iter().zip(srcs) {
                        if let Some(dst) = self.opt_dst(d, ty)? {
                            self.push(InstKind::Mov { ty, dst, src }, span);
                        }
                    }
                    return Ok(());
                }
                match (&ops[0], &ops[1]) {
                    (Operand::Vector(elems, vs), src) => {
                        let elem = self.pack_elem(ty, elems.len(), *vs)?;
                        let dsts = elems
                            .iter()
                            .map(|e| self.opt_dst(e, elem))
                            .collect::<Result<_, _>>()?;
                        let src = self.src(src, ty, false, span)?;
                        self.push(InstKind::Unpack { elem, dsts, src }, span);
                    }
                    (d, Operand::Vector(elems, vs)) => {
                        let elem = self.pack_elem(ty, elems.len(), *vs)?;
                        let dst = self.dst(d, ty, false)?;
                        let srcs = elems
                            .iter()
                            .map(|e| self.src(e, elem, false, span))
                            .collect::<Result<_, _>>()?;
                        self.push(InstKind::Pack { elem, dst, srcs }, span);
                    }
                    (d, s) => {
                        let dst = self.dst(d, ty, false)?;
                        let src = self.src(s, ty, ty.bits() < 32, span)?;
                        self.push(InstKind::Mov { ty, dst, src }, span);
                    }
                }
            }
            Opcode::Ld | Opcode::St | Opcode::Ldu => self.memory(op, i, m)?,
            Opcode::Cvta => {
                // `cvta.to.global` / `cvta.global`: generic and global addresses coincide;
                // shared and local addresses move in and out of their generic windows
                // (`ir::SHARED_WINDOW`, `ir::LOCAL_WINDOW`; `docs/architecture.md`, *The
                // launch ABI*).
                let ty = self.one_type(i, m)?;
                let space = m.space.as_ref().map(|s| s.value);
                let to = m.has(Modifier::Conversion(md::Conversion::To));
                // In a module with 32-bit addresses, generic and global addresses are the
                // same window offsets, and shared and local ones move in and out of the
                // top windows of the 32-bit range (`ir::SHARED_WINDOW_32`).
                if ty.bits() == 32 && self.kernel.address_size == 32 {
                    let window = match space {
                        Some(StateSpace::Global | StateSpace::Const) => None,
                        Some(StateSpace::Shared) => Some(SHARED_WINDOW_32),
                        Some(StateSpace::Local) => Some(LOCAL_WINDOW_32),
                        Some(StateSpace::Param) if self.frame.is_some() => Some(LOCAL_WINDOW_32),
                        Some(StateSpace::Param) => Some(PARAM_WINDOW_32),
                        _ => {
                            let s = m.space.as_ref().map_or(span, |s| s.span);
                            return Err(Diagnostic::error(
                                s,
                                "`cvta` takes `.global`, `.const`, `.shared`, `.local` or `.param`",
                            ));
                        }
                    };
                    let dst = self.dst(&ops[0], ty, false)?;
                    let src = self.src(&ops[1], ty, false, span)?;
                    let kind = match window {
                        None => InstKind::Mov { ty, dst, src },
                        Some(w) => {
                            let op = if to { BinaryOp::Sub } else { BinaryOp::Add };
                            let (mode, rhs) = (FloatMode::default(), Value::Imm(u64::from(w)));
                            InstKind::Binary { op, ty: OpTy::U(32), mode, dst, lhs: src, rhs }
                        }
                    };
                    self.push(kind, span);
                    return Ok(());
                }
                if ty.bits() != 64 {
                    return Err(unsupported(
                        span,
                        "`cvta` with 32-bit generic addresses in a module with 64-bit addresses",
                        "generic addresses are 64-bit there",
                    ));
                }
                let dst = self.dst(&ops[0], ty, false)?;
                let src = self.src(&ops[1], ty, false, span)?;
                let window = match space {
                    // Generic, global and constant addresses coincide.
                    Some(StateSpace::Global | StateSpace::Const) => None,
                    Some(StateSpace::Shared) => Some(SHARED_WINDOW),
                    Some(StateSpace::Local) => Some(LOCAL_WINDOW),
                    // A call parameter lives in the caller's local frame.
                    Some(StateSpace::Param) if self.frame.is_some() => Some(LOCAL_WINDOW),
                    // The kernel's parameter block is global memory: its generic
                    // address is the block's address plus the offset.
                    Some(StateSpace::Param) => {
                        let base = self.temp(RegTy::Int(64), span);
                        self.push(
                            InstKind::Special { dst: base, reg: SpecialReg::ParamBlock },
                            span,
                        );
                        let op = if to { BinaryOp::Sub } else { BinaryOp::Add };
                        let mode = FloatMode::default();
                        let (lhs, rhs) = (src, Value::Reg(base));
                        self.push(
                            InstKind::Binary { op, ty: OpTy::U(64), mode, dst, lhs, rhs },
                            span,
                        );
                        return Ok(());
                    }
                    _ => {
                        let s = m.space.as_ref().map_or(span, |s| s.span);
                        return Err(Diagnostic::error(
                            s,
                            "`cvta` takes `.global`, `.const`, `.shared`, `.local` or `.param`",
                        ));
                    }
                };
                let u64t = OpTy::U(64);
                let kind = match window {
                    None => InstKind::Mov { ty, dst, src },
                    Some(_) if to => InstKind::Binary {
                        op: BinaryOp::And,
                        ty: u64t,
                        mode: FloatMode::default(),
                        dst,
                        lhs: src,
                        rhs: Value::Imm(0xffff_ffff),
                    },
                    Some(w) => InstKind::Binary {
                        op: BinaryOp::Or,
                        ty: u64t,
                        mode: FloatMode::default(),
                        dst,
                        lhs: src,
                        rhs: Value::Imm(w),
                    },
                };
                self.push(kind, span);
            }
            Opcode::Isspacep if self.kernel.address_size == 32 => {
                // A 32-bit generic address: its range (`ir::SHARED_WINDOW_32`).
                m.allow(&[])?;
                let dst = self.dst(&ops[0], OpTy::Pred, false)?;
                let a = self.address_value(&ops[1], 32, span)?;
                let u32t = OpTy::U(32);
                let space = m.space.as_ref().map(|s| s.value);
                if matches!(space, Some(StateSpace::Const | StateSpace::Global)) {
                    // The global address of the offset (the window's base plus it).
                    let base = self.temp(RegTy::Int(64), span);
                    self.push(InstKind::Special { dst: base, reg: SpecialReg::WindowBase }, span);
                    let mut e = expand::Emit { l: self, span };
                    let wide = e.cvt(OpTy::U(64), u32t, a);
                    let global = e.add(OpTy::U(64), Value::Reg(base), wide);
                    let below = e.cmp(CmpOp::Lt, u32t, a, Value::Imm(u64::from(PARAM_WINDOW_32)));
                    let is_const = space == Some(StateSpace::Const);
                    let c = self.const_test(global, is_const, span);
                    let mut e = expand::Emit { l: self, span };
                    let r = if is_const { c } else { e.pred_and(below, c) };
                    e.mov(OpTy::Pred, dst, Value::Reg(r));
                    return Ok(());
                }
                let (lo, hi) = match space {
                    Some(StateSpace::Shared) => (SHARED_WINDOW_32, u32::MAX),
                    Some(StateSpace::Local) => (LOCAL_WINDOW_32, SHARED_WINDOW_32 - 1),
                    // In a kernel; a device function's parameters are local memory.
                    Some(StateSpace::Param) if self.frame.is_none() => {
                        (PARAM_WINDOW_32, LOCAL_WINDOW_32 - 1)
                    }
                    _ => {
                        let s = m.space.as_ref().map_or(span, |s| s.span);
                        return Err(Diagnostic::error(
                            s,
                            "`isspacep` in a module with 32-bit addresses takes `.global`, \
                             `.const`, `.shared`, `.local` or (in a kernel) `.param`",
                        ));
                    }
                };
                let mut e = expand::Emit { l: self, span };
                let above = e.cmp(CmpOp::Ge, u32t, a, Value::Imm(u64::from(lo)));
                let below = e.cmp(CmpOp::Le, u32t, a, Value::Imm(u64::from(hi)));
                let both = e.pred_and(above, below);
                e.mov(OpTy::Pred, dst, Value::Reg(both));
            }
            Opcode::Isspacep => {
                // `isspacep.{global,shared,local} p, a`: the window of a generic address.
                m.allow(&[])?;
                let space = m.space.as_ref().map(|s| s.value);
                let dst = self.dst(&ops[0], OpTy::Pred, false)?;
                let a = self.address_value(&ops[1], 64, span)?;
                let u64t = OpTy::U(64);
                let hi = self.temp(RegTy::Int(64), span);
                self.push(
                    InstKind::Binary {
                        op: BinaryOp::Shr,
                        ty: u64t,
                        mode: FloatMode::default(),
                        dst: hi,
                        lhs: a,
                        rhs: Value::Imm(32),
                    },
                    span,
                );
                let setp = |cmp, rhs: u64, d| InstKind::Setp {
                    cmp,
                    ty: u64t,
                    ftz: false,
                    dst: Some(d),
                    dst_not: None,
                    lhs: Value::Reg(hi),
                    rhs: Value::Imm(rhs),
                    combine: None,
                };
                match space {
                    Some(StateSpace::Shared) => {
                        self.push(setp(CmpOp::Eq, SHARED_WINDOW >> 32, dst), span)
                    }
                    Some(StateSpace::Local) => {
                        self.push(setp(CmpOp::Eq, LOCAL_WINDOW >> 32, dst), span)
                    }
                    // Global: below both windows, and not the `.const` variables.
                    Some(StateSpace::Global) => {
                        let below = self.temp(RegTy::Pred, span);
                        self.push(setp(CmpOp::Lt, LOCAL_WINDOW >> 32, below), span);
                        let not_const = self.const_test(a, false, span);
                        let mut e = expand::Emit { l: self, span };
                        let r = e.pred_and(below, not_const);
                        e.mov(OpTy::Pred, dst, Value::Reg(r));
                    }
                    // Constant memory: the `.const` variables at the start of the module
                    // data.
                    Some(StateSpace::Const) => {
                        let r = self.const_test(a, true, span);
                        self.push(InstKind::Mov { ty: OpTy::Pred, dst, src: Value::Reg(r) }, span);
                    }
                    // The kernel's parameter block, also in a device function (inlined
                    // into its kernel): a generic address there is a kernel parameter's
                    // (libcu++'s `__isGridConstant`); call parameters are local memory,
                    // which `isspacep.local` tells.
                    Some(StateSpace::Param) => {
                        let size = u64::from(self.kernel.abi.size);
                        let base = self.temp(RegTy::Int(64), span);
                        self.push(
                            InstKind::Special { dst: base, reg: SpecialReg::ParamBlock },
                            span,
                        );
                        let mut e = expand::Emit { l: self, span };
                        let off = e.bin(BinaryOp::Sub, u64t, a, Value::Reg(base));
                        let inside = e.cmp(CmpOp::Lt, u64t, off, Value::Imm(size));
                        e.mov(OpTy::Pred, dst, Value::Reg(inside));
                    }
                    _ => {
                        return Err(Diagnostic::error(
                            span,
                            "`isspacep` takes `.global`, `.shared`, `.local`, `.const` or `.param`",
                        ))
                    }
                }
            }
            Opcode::Add
            | Opcode::Sub
            | Opcode::Min
            | Opcode::Max
            | Opcode::And
            | Opcode::Or
            | Opcode::Xor
            | Opcode::Div
            | Opcode::Rem => {
                let ty = self.one_type(i, m)?;
                m.allow(&[])?;
                arity(3)?;
                let bop = match op {
                    Opcode::Add => BinaryOp::Add,
                    Opcode::Sub => BinaryOp::Sub,
                    Opcode::Min => BinaryOp::Min,
                    Opcode::Max => BinaryOp::Max,
                    Opcode::And => BinaryOp::And,
                    Opcode::Or => BinaryOp::Or,
                    Opcode::Xor => BinaryOp::Xor,
                    Opcode::Div => BinaryOp::Div,
                    _ => BinaryOp::Rem,
                };
                if ty == OpTy::Pred {
                    let b = match bop {
                        BinaryOp::And => BoolOp::And,
                        BinaryOp::Or => BoolOp::Or,
                        BinaryOp::Xor => BoolOp::Xor,
                        _ => {
                            return Err(Diagnostic::error(
                                span,
                                format!("`{op}` does not take `.pred`"),
                            ))
                        }
                    };
                    let dst = self.dst(&ops[0], ty, false)?;
                    let (lhs, _) = self.reg_operand(&ops[1])?;
                    let (rhs, _) = self.reg_operand(&ops[2])?;
                    self.check_width(lhs, ops[1].span(), ty, false)?;
                    self.check_width(rhs, ops[2].span(), ty, false)?;
                    self.push(InstKind::PredLogic { op: b, dst, lhs, rhs }, span);
                    return Ok(());
                }
                let logical = matches!(bop, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor);
                if logical && ty.is_float() {
                    return Err(Diagnostic::error(
                        span,
                        format!("`{op}` takes bit-size types, not floats"),
                    ));
                }
                let rounded = matches!(bop, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Div);
                let mode = self.float_mode(span, ty, m, rounded)?;
                if ty.is_float() && bop == BinaryOp::Rem {
                    return Err(Diagnostic::error(span, "`rem` takes integer types"));
                }
                // Float `div` is exact in every rounding mode; `.approx`/`.full` are lowered
                // by `sema::approx`, and PTX requires one of them or a rounding.
                if ty.is_float() && bop == BinaryOp::Div && m.rounding.is_none() {
                    return Err(Diagnostic::error(
                        span,
                        format!(
                            "`div.{}` needs a rounding such as `.rn`{}",
                            describe_op(ty).trim_start_matches('.'),
                            if ty.bits() == 32 { " (or `.approx`/`.full`)" } else { "" }
                        ),
                    ));
                }
                if m.sat && !ty.is_float() {
                    return Err(unsupported(
                        span,
                        "integer `.sat` arithmetic",
                        "saturating integer add/sub is not implemented yet",
                    ));
                }
                let dst = self.dst(&ops[0], ty, false)?;
                let lhs = self.src(&ops[1], ty, false, span)?;
                let rhs = self.src(&ops[2], ty, false, span)?;
                self.push(InstKind::Binary { op: bop, ty, mode, dst, lhs, rhs }, span);
            }
            Opcode::Mul => {
                let ty = self.one_type(i, m)?;
                m.allow(&[])?;
                let part = if ty.is_float() {
                    if let Some(p) = &m.mul_part {
                        return Err(Diagnostic::error(
                            p.span,
                            "floating-point `mul` takes no `.lo/.hi/.wide`",
                        ));
                    }
                    BinaryOp::Mul
                } else {
                    m.mul_part.as_ref().map(|p| p.value).ok_or_else(|| {
                        Diagnostic::error(span, "integer `mul` needs `.lo`, `.hi` or `.wide`")
                    })?
                };
                let mode = self.float_mode(span, ty, m, true)?;
                let dst_ty = if part == BinaryOp::MulWide { widen(ty, span)? } else { ty };
                let dst = self.dst(&ops[0], dst_ty, false)?;
                let lhs = self.src(&ops[1], ty, false, span)?;
                let rhs = self.src(&ops[2], ty, false, span)?;
                self.push(InstKind::Binary { op: part, ty, mode, dst, lhs, rhs }, span);
            }
            Opcode::Mad | Opcode::Fma => {
                let ty = self.one_type(i, m)?;
                m.allow(&[])?;
                if ty.is_float() {
                    if op == Opcode::Mad && m.rounding.is_none() {
                        return Err(Diagnostic::error(
                            span,
                            "`mad.f32` needs a rounding modifier (`.rn`) since PTX ISA 2.0",
                        ));
                    }
                    if ty.bits() == 64 && (m.ftz || m.sat) {
                        return Err(Diagnostic::error(span, "`.ftz` and `.sat` take `.f32`"));
                    }
                    let mode = self.float_mode(span, ty, m, true)?;
                    let dst = self.dst(&ops[0], ty, false)?;
                    let a = self.src(&ops[1], ty, false, span)?;
                    let b = self.src(&ops[2], ty, false, span)?;
                    let c = self.src(&ops[3], ty, false, span)?;
                    self.push(InstKind::Fma { ty, mode, dst, a, b, c }, span);
                } else {
                    if op == Opcode::Fma {
                        return Err(Diagnostic::error(span, "`fma` takes floating-point types"));
                    }
                    if m.sat {
                        return Err(unsupported(span, "`mad.sat`", "not implemented yet"));
                    }
                    let part = m.mul_part.as_ref().map(|p| p.value).ok_or_else(|| {
                        Diagnostic::error(span, "integer `mad` needs `.lo`, `.hi` or `.wide`")
                    })?;
                    let wide_ty = if part == BinaryOp::MulWide { widen(ty, span)? } else { ty };
                    let dst = self.dst(&ops[0], wide_ty, false)?;
                    let a = self.src(&ops[1], ty, false, span)?;
                    let b = self.src(&ops[2], ty, false, span)?;
                    let c = self.src(&ops[3], wide_ty, false, span)?;
                    self.push(InstKind::Mad { part, ty, dst, a, b, c }, span);
                }
            }
            Opcode::Shl | Opcode::Shr => {
                let ty = self.one_type(i, m)?;
                m.allow(&[])?;
                if ty.is_float() || ty == OpTy::Pred || (op == Opcode::Shl && ty.is_signed()) {
                    return Err(Diagnostic::error(
                        span,
                        format!(
                            "`{op}` takes {} types",
                            if op == Opcode::Shl { "`.bN`" } else { "integer" }
                        ),
                    ));
                }
                let dst = self.dst(&ops[0], ty, false)?;
                let lhs = self.src(&ops[1], ty, false, span)?;
                let rhs = self.src(&ops[2], OpTy::U(32), false, span)?;
                let bop = if op == Opcode::Shl { BinaryOp::Shl } else { BinaryOp::Shr };
                self.push(
                    InstKind::Binary { op: bop, ty, mode: FloatMode::default(), dst, lhs, rhs },
                    span,
                );
            }
            Opcode::Sqrt | Opcode::Rcp => {
                // `.rn` forms are exact (emulated); `.approx` is an unsupported modifier.
                let ty = self.one_type(i, m)?;
                m.allow(&[])?;
                if !ty.is_float() {
                    return Err(Diagnostic::error(span, format!("`{op}` takes `.f32` or `.f64`")));
                }
                if m.rounding.is_none() {
                    return Err(Diagnostic::error(
                        span,
                        format!("`{op}` needs a rounding such as `.rn` (or `.approx` on `.f32`)"),
                    ));
                }
                let mode = self.float_mode(span, ty, m, true)?;
                let dst = self.dst(&ops[0], ty, false)?;
                let src = self.src(&ops[1], ty, false, span)?;
                let uop = if op == Opcode::Sqrt { UnaryOp::Sqrt } else { UnaryOp::Rcp };
                self.push(InstKind::Unary { op: uop, ty, dst, src, mode }, span);
            }
            Opcode::Not
            | Opcode::Cnot
            | Opcode::Neg
            | Opcode::Abs
            | Opcode::Popc
            | Opcode::Clz
            | Opcode::Brev => {
                let ty = self.one_type(i, m)?;
                m.allow(&[])?;
                if ty == OpTy::Pred {
                    if op != Opcode::Not {
                        return Err(Diagnostic::error(
                            span,
                            format!("`{op}` does not take `.pred`"),
                        ));
                    }
                    let dst = self.dst(&ops[0], ty, false)?;
                    let (src, _) = self.reg_operand(&ops[1])?;
                    self.check_width(src, ops[1].span(), ty, false)?;
                    self.push(InstKind::PredNot { dst, src }, span);
                    return Ok(());
                }
                let uop = match op {
                    Opcode::Not => UnaryOp::Not,
                    Opcode::Cnot => UnaryOp::Cnot,
                    Opcode::Neg => UnaryOp::Neg,
                    Opcode::Abs => UnaryOp::Abs,
                    Opcode::Popc => UnaryOp::Popc,
                    Opcode::Clz => UnaryOp::Clz,
                    _ => UnaryOp::Brev,
                };
                if ty.is_float() && !matches!(uop, UnaryOp::Neg | UnaryOp::Abs) {
                    return Err(Diagnostic::error(span, format!("`{op}` takes integer types")));
                }
                if m.ftz && ty != OpTy::F(32) {
                    return Err(Diagnostic::error(span, "`.ftz` takes `.f32`"));
                }
                if ty.bits() < 16 {
                    return Err(Diagnostic::error(
                        span,
                        format!("`{op}` takes 16-, 32- or 64-bit types"),
                    ));
                }
                let dst_ty =
                    if matches!(uop, UnaryOp::Popc | UnaryOp::Clz) { OpTy::U(32) } else { ty };
                let dst = self.dst(&ops[0], dst_ty, false)?;
                let mut src = self.src(&ops[1], ty, false, span)?;
                if m.ftz {
                    // `abs.ftz`/`neg.ftz`: a subnormal input is a zero of its sign first.
                    let t = self.temp(RegTy::Float(32), span);
                    let mode = FloatMode { ftz: true, ..FloatMode::default() };
                    self.push(
                        InstKind::Convert { to: ty, from: ty, rounding: None, mode, dst: t, src },
                        span,
                    );
                    src = Value::Reg(t);
                }
                self.push(
                    InstKind::Unary { op: uop, ty, mode: FloatMode::default(), dst, src },
                    span,
                );
            }
            Opcode::Setp => {
                // Half types compare as their exact f32 values (§9.7.4.6).
                let half = match m.types.as_slice() {
                    [t] => formats::half_source(t.value).map(|h| (h, t.span)),
                    _ => None,
                };
                let ty = match half {
                    Some(((fmt, _), at)) if m.ftz && fmt == crate::ir::FloatFormat::Bf16 => {
                        return Err(Diagnostic::error(at, "`.bf16` comparisons take no `.ftz`"))
                    }
                    Some(_) => OpTy::F(32),
                    None => self.one_type(i, m)?,
                };
                m.allow(&[])?;
                let cmp = m.cmp.ok_or_else(|| {
                    Diagnostic::error(span, "`setp` needs a comparison such as `.lt`")
                })?;
                check_comparison(span, cmp, ty, m.ftz)?;
                let n = if m.bool_op.is_some() { 4 } else { 3 };
                arity(n)?;
                let (dst, dst_not) = match &ops[0] {
                    Operand::Pair(a, b, _) => {
                        (self.opt_dst(a, OpTy::Pred)?, self.opt_dst(b, OpTy::Pred)?)
                    }
                    d => (self.opt_dst(d, OpTy::Pred)?, None),
                };
                let combine = match m.bool_op {
                    Some(b) => {
                        let (r, neg) = self.pred(&ops[3])?;
                        Some((b, r, neg))
                    }
                    None => None,
                };
                // Half lanes (§9.7.7.2): `p` is the lower lane and `q` the upper of an
                // x2 comparison; a scalar one writes `p` (and `q` is its negation).
                if let Some(((fmt, lanes), at)) = half {
                    let a = self.src(&ops[1], OpTy::U((16 * lanes) as u8), false, span)?;
                    let b = self.src(&ops[2], OpTy::U((16 * lanes) as u8), false, span)?;
                    if lanes == 2 && !matches!(ops[0], Operand::Pair(..)) {
                        return Err(Diagnostic::error(
                            at,
                            "an x2 `setp` writes two predicates `p|q`",
                        ));
                    }
                    let dsts = if lanes == 2 {
                        vec![(dst, None), (dst_not, None)]
                    } else {
                        vec![(dst, dst_not)]
                    };
                    let mut e = expand::Emit { l: self, span };
                    e.half_compare(fmt, lanes, cmp, m.ftz, a, b, combine, &dsts);
                    return Ok(());
                }
                let (lhs, rhs, ftz) = {
                    let a = self.src(&ops[1], ty, false, span)?;
                    (a, self.src(&ops[2], ty, false, span)?, m.ftz)
                };
                self.push(InstKind::Setp { cmp, ty, ftz, dst, dst_not, lhs, rhs, combine }, span);
            }
            Opcode::Selp => {
                let ty = self.bits_type(i, m)?;
                m.allow(&[])?;
                let dst = self.dst(&ops[0], ty, false)?;
                let a = self.src(&ops[1], ty, false, span)?;
                let b = self.src(&ops[2], ty, false, span)?;
                let (cond, negate) = self.pred(&ops[3])?;
                self.push(InstKind::Select { ty, dst, a, b, cond, negate }, span);
            }
            Opcode::Cvt => self.convert(i, m)?,
            Opcode::Bar | Opcode::Barrier => self.barrier(op, i, m)?,
            // Proxy fences order accesses between the generic proxy and the async,
            // alias or tensormap proxies (PTX ISA 9.2 §8.6); every ptxvk access is a
            // generic-proxy access, so there is nothing to order.
            Opcode::Fence if m.has(Modifier::FenceForm(md::FenceForm::Proxy)) => {}
            // A weak write of indeterminate values (§9.7.9.16): keeping the old values
            // is one of them.
            Opcode::Discard => {
                if !m.details.iter().all(|d| d.value == Modifier::CacheLevel(md::CacheLevel::L2)) {
                    return Err(Diagnostic::error(span, "`discard` takes `.global.L2`"));
                }
            }
            Opcode::Membar | Opcode::Fence => {
                use md::{FenceForm as F, MemoryOrder as O, Scope as S};
                let device = m
                    .details
                    .iter()
                    .any(|d| matches!(d.value, Modifier::Scope(S::Gl | S::Gpu | S::Sys)));
                // `.cluster` is `.cta`: every cluster is one CTA (`sema::cluster`), so
                // `fence.mbarrier_init.release.cluster` and the `.sync_restrict` fences
                // (§9.7.13.4) are CTA fences.
                let scopes = [S::Cta, S::Cluster, S::Gl, S::Gpu, S::Sys].map(Modifier::Scope);
                let orders = [O::Sc, O::AcqRel, O::Release, O::Acquire].map(Modifier::MemoryOrder);
                let forms =
                    [F::MbarrierInit, F::SyncRestrictSharedCta, F::SyncRestrictSharedCluster]
                        .map(Modifier::FenceForm);
                let ok: Vec<Modifier> = scopes.into_iter().chain(orders).chain(forms).collect();
                m.allow(&ok)?;
                arity(0)?;
                self.push(InstKind::Fence { device_scope: device }, span);
            }
            Opcode::Bfe | Opcode::Bfi => {
                let ty = self.one_type(i, m)?;
                m.allow(&[])?;
                if ty.is_float()
                    || ty == OpTy::Pred
                    || ty.bits() < 32
                    || (op == Opcode::Bfi && ty.is_signed())
                {
                    return Err(Diagnostic::error(
                        span,
                        format!("`{op}` takes 32- or 64-bit integer types"),
                    ));
                }
                let dst = self.dst(&ops[0], ty, false)?;
                let a = self.src(&ops[1], ty, false, span)?;
                if op == Opcode::Bfe {
                    let pos = self.src(&ops[2], OpTy::U(32), false, span)?;
                    let len = self.src(&ops[3], OpTy::U(32), false, span)?;
                    self.push(InstKind::Bfe { ty, dst, a, pos, len }, span);
                } else {
                    let b = self.src(&ops[2], ty, false, span)?;
                    let pos = self.src(&ops[3], OpTy::U(32), false, span)?;
                    let len = self.src(&ops[4], OpTy::U(32), false, span)?;
                    self.push(InstKind::Bfi { ty, dst, a, b, pos, len }, span);
                }
            }
            // Every other opcode of the PTX ISA parses (the front end's instruction
            // table knows it) but is not lowered yet.
            _ => {
                return Err(unsupported(
                    i.opcode.span,
                    &format!("instruction `{op}`"),
                    "it parses, but ptxvk does not lower it yet",
                ));
            }
        }
        Ok(())
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

    fn float_mode(
        &self,
        span: Span,
        ty: OpTy,
        m: &Mods,
        rounding_allowed: bool,
    ) -> Result<FloatMode, Diagnostic> {
        if !ty.is_float() {
            if m.ftz || m.rounding.is_some() {
                return Err(Diagnostic::error(
                    span,
                    "rounding and `.ftz` take floating-point types",
                ));
            }
            return Ok(FloatMode::default());
        }
        if let Some(r) = &m.rounding {
            if !rounding_allowed || r.value.1 {
                return Err(Diagnostic::error(r.span, "this rounding modifier is not valid here"));
            }
            // Directed `div`/`rcp`/`sqrt` on f32 are exact in the backend (the other
            // directed forms never get here: `sema::formats` lowers them).
            let exact_directed = matches!(m.opcode, Opcode::Div | Opcode::Rcp | Opcode::Sqrt);
            if r.value.0 != Rounding::Nearest && !exact_directed {
                return Err(unsupported(
                    r.span,
                    "directed rounding (`.rz`, `.rm`, `.rp`) on this type",
                    "an exact f64 emulation is not implemented yet",
                ));
            }
        }
        if m.ftz && ty.bits() != 32 {
            return Err(Diagnostic::error(span, "`.ftz` applies to `.f32` only"));
        }
        let rounding = m.rounding.as_ref().map_or(Rounding::Nearest, |r| r.value.0);
        Ok(FloatMode { ftz: m.ftz, sat: m.sat, rounding, path: FloatPath::F64 })
    }

    fn memory(&mut self, op: Opcode, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        let ty = self.bits_type(i, m)?;
        let strength = memory_order(op, span, m)?;
        if m.has(Modifier::MemoryOrder(md::MemoryOrder::Volatile)) {
            self.kernel.volatile_accesses.push(span);
        }
        if op == Opcode::Ld && strength.is_some() {
            self.kernel.polling_reads.push(span);
        }
        if ty == OpTy::Pred {
            return Err(Diagnostic::error(span, format!("`{op}` cannot move predicates")));
        }
        // Generic addresses are global addresses unless the kernel makes generic
        // addresses of shared or local memory; then they dispatch on the window.
        let ops = &i.operands;
        let addr_operand = if op == Opcode::St { ops.first() } else { ops.get(1) };
        // A generic access through a variable's name (`st.u64 [local_x], …`) is an access
        // of the variable's space: its generic address lies in that space's window.
        let named = match m.space {
            None => addr_operand.and_then(|a| self.variable_space(a)),
            Some(_) => None,
        };
        let generic = m.space.is_none() && named.is_none();
        let space = m.space.as_ref().map(|s| s.value).or(named).unwrap_or(StateSpace::Global);
        if ty.bits() > 64 {
            return Err(unsupported(span, "128-bit memory accesses", "not implemented yet"));
        }
        let n = m.vector.unwrap_or(1);
        // Vectors of up to 128 bits; 256-bit `.v8` (32-bit elements) and `.v4` (64-bit
        // ones) on global memory (PTX ISA 9.2 §9.7.9.8, sm_100).
        let wide = space == StateSpace::Global && n * ty.bits() == 256 && ty.bits() >= 32;
        // `.v8` of 8- and 16-bit elements: ptxas takes them as it takes `.v4` (64 and
        // 128 bits).
        let small_v8 = n == 8 && ty.bits() <= 16;
        if !(matches!(n, 1 | 2 | 4) && n * ty.bits() <= 128 || wide || small_v8) {
            return Err(Diagnostic::error(
                span,
                format!("`.v{n}` of {}-bit elements is not a valid vector here", ty.bits()),
            ));
        }
        // `.L2::cache_hint` adds a cache-policy operand, which is only a hint.
        let hinted = m.has(Modifier::CacheHint(md::CacheHint::L2CacheHint));
        if !(ops.len() == 2 || (hinted && ops.len() == 3)) {
            return Err(Diagnostic::error(span, format!("`{op}` takes 2 operands")));
        }
        let (data, addr) = if op == Opcode::St { (&ops[1], &ops[0]) } else { (&ops[0], &ops[1]) };
        let (ir_space, address) = self.address(addr, space)?;
        if op == Opcode::St && ir_space == Space::Param {
            return Err(Diagnostic::error(span, "kernel parameters are read-only"));
        }
        let elems: Vec<&Operand> = match (data, n) {
            (Operand::Vector(v, vs), n) => {
                if v.len() as u32 != n || n == 1 {
                    return Err(Diagnostic::error(
                        *vs,
                        format!("expected {n} vector elements for `.v{n}`"),
                    ));
                }
                v.iter().collect()
            }
            (d, 1) => vec![d],
            (d, _) => {
                return Err(Diagnostic::error(d.span(), "a vector access needs a `{…}` operand"))
            }
        };
        // The access, for the space it turns out to be in.
        enum Data {
            Store(Vec<Value>),
            Load(Vec<Option<RegId>>),
        }
        // A float access of a wider bit-size register moves the same bits as the
        // bit-size access of its width (§5.2.2's relaxed rules: the low bits, and zeros
        // above them).
        let ty = if elems.iter().any(|e| self.float_in_wider_register(e, ty)) {
            OpTy::U(ty.bits() as u8)
        } else {
            ty
        };
        let data = if op == Opcode::St {
            let srcs: Vec<Value> =
                elems.iter().map(|e| self.src(e, ty, true, span)).collect::<Result<_, _>>()?;
            Data::Store(srcs)
        } else {
            let dsts: Vec<Option<RegId>> = elems
                .iter()
                .map(|e| match e {
                    Operand::Sink(_) => Ok(None),
                    e => self.dst(e, ty, true).map(Some),
                })
                .collect::<Result<_, _>>()?;
            Data::Load(dsts)
        };
        // A strong access (PTX ISA 9.2 §8.4) is an atomic load or store where SPIR-V has
        // one: a scalar 32/64-bit word of global memory or a 32-bit one of shared memory
        // into a register of its width. Others (local memory has no other observer;
        // sub-word and vector accesses) are plain accesses, after an acquiring load's
        // fence or before a releasing store's.
        let one_word = match &data {
            Data::Store(srcs) => srcs.len() == 1,
            Data::Load(dsts) => {
                dsts.len() == 1 && dsts[0].is_none_or(|d| self.kernel.reg(d).ty.bits() == ty.bits())
            }
        };
        // A wide shared window (`SharedLayout::wide`) has atomics of 64 bits only; a
        // strong narrower store there is an atomic store that `pass::legalize_atomics`
        // makes a compare-and-swap loop (`store_in_wide_word`).
        let shared_atomic_bits = if self.kernel.shared.wide() { 64 } else { 32 };
        let access = |space: Space, addr: Address| -> (InstKind, Option<(Order, Scope)>) {
            let atomic_width = matches!((space, ty.bits()), (Space::Global, 32 | 64))
                || (space == Space::Shared && ty.bits() == shared_atomic_bits);
            let native = strength.filter(|_| atomic_width && one_word);
            match (&data, native) {
                (Data::Store(srcs), Some((order, scope))) => (
                    InstKind::Atomic {
                        op: AtomicOp::Store,
                        space,
                        ty,
                        scope,
                        order,
                        dst: None,
                        addr,
                        src: srcs[0],
                        cmp: Value::Imm(0),
                    },
                    None,
                ),
                (Data::Load(dsts), Some((order, scope))) => (
                    InstKind::Atomic {
                        op: AtomicOp::Load,
                        space,
                        ty,
                        scope,
                        order,
                        dst: dsts[0],
                        addr,
                        src: Value::Imm(0),
                        cmp: Value::Imm(0),
                    },
                    None,
                ),
                (Data::Store(srcs), _) => {
                    (InstKind::Store { space, ty, srcs: srcs.clone(), addr }, strength)
                }
                (Data::Load(dsts), _) => {
                    (InstKind::Load { space, ty, dsts: dsts.clone(), addr }, strength)
                }
            }
        };
        let access = |l: &mut Self, space: Space, addr: Address| {
            if let (Data::Store(srcs), Some((order, scope)), Space::Shared, true) =
                (&data, strength, space, l.kernel.shared.wide() && ty.bits() < 64)
            {
                if let [src] = srcs.as_slice() {
                    l.store_in_wide_word(ty, order, scope, addr, *src, span);
                    return;
                }
            }
            let (inst, fence) = access(space, addr);
            let fence = fence.filter(|(o, _)| *o != Order::Relaxed && space != Space::Local);
            let fence =
                fence.map(|(_, scope)| InstKind::Fence { device_scope: scope != Scope::Cta });
            if let (Some(f), InstKind::Store { .. }) = (&fence, &inst) {
                l.push(f.clone(), span);
            }
            let is_load = matches!(inst, InstKind::Load { .. });
            l.push(inst, span);
            if let (Some(f), true) = (fence, is_load) {
                l.push(f, span);
            }
        };
        if ir_space == Space::Local || (generic && self.generic_windows) {
            // A local access needs a window even when the kernel declares no `.local`
            // variable (its addresses are then out of range, which PTX leaves undefined).
            self.kernel.local_bytes = self.kernel.local_bytes.max(4);
        }
        if !(generic && self.generic_windows) {
            access(self, ir_space, address);
            return Ok(());
        }
        let address = self.widen_generic(address, span);
        // The inference may prove the space: then a direct access, no test.
        match self.generic_provenance(addr) {
            spaces::Provenance::Plain | spaces::Provenance::Global => {
                access(self, Space::Global, address);
                return Ok(());
            }
            p @ (spaces::Provenance::Shared | spaces::Provenance::Local) => {
                let space =
                    if p == spaces::Provenance::Shared { Space::Shared } else { Space::Local };
                let low = self.window_offset(address, span);
                access(self, space, low);
                return Ok(());
            }
            spaces::Provenance::Unknown => {}
        }
        self.dispatch_generic(address, span, |l, space, addr| {
            access(l, space, addr);
            Ok(())
        })
    }

    /// A generic access whose space is known only at run time: `access` for the shared
    /// window, the local window, or global memory, chosen by the address's upper half
    /// (the windows' offsets are the lower half).
    fn dispatch_generic(
        &mut self,
        address: Address,
        span: Span,
        mut access: impl FnMut(&mut Self, Space, Address) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let u64t = OpTy::U(64);
        let full = self.temp(RegTy::Int(64), span);
        let base = address.base.map_or(Value::Imm(0), Value::Reg);
        self.push(
            InstKind::Binary {
                op: BinaryOp::Add,
                ty: u64t,
                mode: FloatMode::default(),
                dst: full,
                lhs: base,
                rhs: Value::Imm(address.offset as u64),
            },
            span,
        );
        let hi = self.temp(RegTy::Int(64), span);
        let low = self.temp(RegTy::Int(32), span);
        self.push(
            InstKind::Binary {
                op: BinaryOp::Shr,
                ty: u64t,
                mode: FloatMode::default(),
                dst: hi,
                lhs: Value::Reg(full),
                rhs: Value::Imm(32),
            },
            span,
        );
        self.push(
            InstKind::Convert {
                to: OpTy::U(32),
                from: u64t,
                rounding: None,
                mode: FloatMode::default(),
                dst: low,
                src: Value::Reg(full),
            },
            span,
        );
        let is_shared = self.temp(RegTy::Pred, span);
        let is_local = self.temp(RegTy::Pred, span);
        for (d, w) in [(is_shared, SHARED_WINDOW), (is_local, LOCAL_WINDOW)] {
            self.push(
                InstKind::Setp {
                    cmp: CmpOp::Eq,
                    ty: u64t,
                    ftz: false,
                    dst: Some(d),
                    dst_not: None,
                    lhs: Value::Reg(hi),
                    rhs: Value::Imm(w >> 32),
                    combine: None,
                },
                span,
            );
        }
        let join = self.new_block(None, span);
        let windows = [
            (is_shared, Space::Shared, Address { base: Some(low), offset: 0 }),
            (is_local, Space::Local, Address { base: Some(low), offset: 0 }),
        ];
        for (cond, space, addr) in windows {
            let then = self.new_block(None, span);
            let next = self.new_block(None, span);
            self.terminate(
                Terminator::Branch { cond, negate: false, if_true: then, if_false: next },
                span,
            );
            self.cur = then;
            self.closed = false;
            access(self, space, addr)?;
            if !self.closed {
                self.terminate(Terminator::Jump(join), span);
            }
            self.cur = next;
            self.closed = false;
        }
        access(self, Space::Global, Address { base: Some(full), offset: 0 })?;
        if !self.closed {
            self.terminate(Terminator::Jump(join), span);
        }
        self.cur = join;
        self.closed = false;
        Ok(())
    }

    /// The provenance of a generic address operand's base register.
    fn generic_provenance(&self, addr: &Operand) -> spaces::Provenance {
        match addr {
            Operand::Address(a) => match &a.base {
                Some(n) => self.spaces.get(&n.value).copied().unwrap_or(spaces::Provenance::Plain),
                None => spaces::Provenance::Plain,
            },
            _ => spaces::Provenance::Unknown,
        }
    }

    /// A generic address of a module with 32-bit addresses, in the 64-bit form every
    /// generic access works with: `SHARED_WINDOW | offset` or `LOCAL_WINDOW | offset`
    /// for the top windows of the 32-bit range (`ir::SHARED_WINDOW_32`,
    /// `ir::LOCAL_WINDOW_32`), the parameter block's address plus the offset for the
    /// window below them (`ir::PARAM_WINDOW_32`), else the global address (the address
    /// window's base plus the offset). Addresses of 64-bit modules are returned as they
    /// are.
    pub(super) fn widen_generic(&mut self, address: Address, span: Span) -> Address {
        let narrow = address.base.is_none_or(|b| self.kernel.reg(b).ty.bits() == 32);
        if self.kernel.address_size != 32 || !narrow {
            return address;
        }
        let (u32t, u64t) = (OpTy::U(32), OpTy::U(64));
        let base = address.base.map_or(Value::Imm(0), Value::Reg);
        let window_base = self.temp(RegTy::Int(64), span);
        self.push(InstKind::Special { dst: window_base, reg: SpecialReg::WindowBase }, span);
        let mut e = expand::Emit { l: self, span };
        // The 32-bit sum wraps, as PTX's 32-bit address arithmetic does.
        let x = e.add(u32t, base, Value::Imm(address.offset as u64 & 0xffff_ffff));
        let wide = e.cvt(u64t, u32t, x);
        let global = e.add(u64t, Value::Reg(window_base), wide);
        let in_window = |e: &mut expand::Emit<'_, '_>, start: u32, tag: u64| {
            let off = e.bin(BinaryOp::Sub, u32t, x, Value::Imm(u64::from(start)));
            let off = e.cvt(u64t, u32t, off);
            e.or(u64t, off, Value::Imm(tag))
        };
        let shared = in_window(&mut e, SHARED_WINDOW_32, SHARED_WINDOW);
        let local = in_window(&mut e, LOCAL_WINDOW_32, LOCAL_WINDOW);
        let is_shared = e.cmp(CmpOp::Ge, u32t, x, Value::Imm(u64::from(SHARED_WINDOW_32)));
        let is_local = e.cmp(CmpOp::Ge, u32t, x, Value::Imm(u64::from(LOCAL_WINDOW_32)));
        let is_param = e.cmp(CmpOp::Ge, u32t, x, Value::Imm(u64::from(PARAM_WINDOW_32)));
        let param_off = e.bin(BinaryOp::Sub, u32t, x, Value::Imm(u64::from(PARAM_WINDOW_32)));
        let param_off = e.cvt(u64t, u32t, param_off);
        let block = e.temp(u64t);
        e.push(InstKind::Special { dst: block, reg: SpecialReg::ParamBlock });
        let param = e.add(u64t, Value::Reg(block), param_off);
        let not_local = e.sel(u64t, is_param, param, global);
        let not_shared = e.sel(u64t, is_local, local, not_local);
        let g = e.sel(u64t, is_shared, shared, not_shared);
        let r = e.temp(u64t);
        e.mov(u64t, r, g);
        Address { base: Some(r), offset: 0 }
    }

    /// Whether 64-bit generic address `a` points at a `.const` variable (the first
    /// `const_bytes` of the module data), or with `inside` false whether it does not.
    fn const_test(&mut self, a: Value, inside: bool, span: Span) -> RegId {
        let u64t = OpTy::U(64);
        let base = self.module_address(0, span);
        let mut e = expand::Emit { l: self, span };
        let off = e.bin(BinaryOp::Sub, u64t, a, Value::Reg(base));
        let bytes = u64::from(e.l.const_bytes);
        let cmp = if inside { CmpOp::Lt } else { CmpOp::Ge };
        e.cmp(cmp, u64t, off, Value::Imm(bytes))
    }

    /// A generic shared or local address as an address in its space: the low 32 bits
    /// of the base register (the window's offset), plus the constant offset.
    fn window_offset(&mut self, address: Address, span: Span) -> Address {
        let Some(base) = address.base else { return address };
        let low = self.temp(RegTy::Int(32), span);
        let from = OpTy::U(self.kernel.reg(base).ty.bits() as u8);
        self.push(
            InstKind::Convert {
                to: OpTy::U(32),
                from,
                rounding: None,
                mode: FloatMode::default(),
                dst: low,
                src: Value::Reg(base),
            },
            span,
        );
        Address { base: Some(low), offset: address.offset }
    }

    fn convert(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        let span = i.span;
        m.allow(&[])?;
        let [to, from] = m.types.as_slice() else {
            return Err(Diagnostic::error(
                i.opcode.span,
                "`cvt` needs a destination and a source type",
            ));
        };
        let (to_t, from_t) = (op_ty(to)?, op_ty(from)?);
        if to_t == OpTy::Pred || from_t == OpTy::Pred {
            return Err(Diagnostic::error(span, "`cvt` does not take `.pred`"));
        }
        // PTX ISA 9.2 §9.7.9.21: float→int takes an integer rounding (`.rni`…), and so
        // may a same-size float→float conversion (rounding to an integral value; without
        // one it only applies `.ftz`/`.sat`); float narrowing and int→float take a float
        // rounding (`.rn`…); float widening and int→int take none.
        #[derive(PartialEq)]
        enum Needs {
            Integral,
            OptionalIntegral,
            Float,
            Nothing,
        }
        let needs = match (from_t.is_float(), to_t.is_float()) {
            (true, false) => Needs::Integral,
            (true, true) if to_t == from_t => Needs::OptionalIntegral,
            (true, true) if to_t.bits() < from_t.bits() => Needs::Float,
            (false, true) => Needs::Float,
            _ => Needs::Nothing,
        };
        let rounding = match (m.rounding.as_ref(), &needs) {
            (Some(r), Needs::Integral | Needs::OptionalIntegral) if r.value.1 => Some(r.value.0),
            (Some(r), Needs::Float) if !r.value.1 => {
                if r.value.0 != Rounding::Nearest {
                    return Err(unsupported(
                        r.span,
                        "`cvt` with directed rounding to a float",
                        "exact emulation is not implemented yet",
                    ));
                }
                Some(r.value.0)
            }
            (Some(r), _) => {
                let msg = match needs {
                    Needs::Integral | Needs::OptionalIntegral => {
                        "this conversion rounds to an integral value: it takes `.rni`, `.rzi`, `.rmi` or `.rpi`"
                    }
                    Needs::Float => {
                        "this conversion rounds a float result: it takes `.rn`, `.rz`, `.rm` or `.rp`"
                    }
                    Needs::Nothing => "this conversion takes no rounding modifier",
                };
                return Err(Diagnostic::error(r.span, msg));
            }
            (None, Needs::Integral) => {
                return Err(Diagnostic::error(
                    span,
                    "a float-to-integer `cvt` needs `.rni`, `.rzi`, `.rmi` or `.rpi`",
                ));
            }
            (None, Needs::Float) => {
                return Err(Diagnostic::error(
                    span,
                    "this `cvt` needs `.rn`, `.rz`, `.rm` or `.rp`",
                ));
            }
            (None, _) => None,
        };
        if m.ftz && !from_t.is_float() && !to_t.is_float() {
            return Err(Diagnostic::error(span, "`.ftz` takes a floating-point conversion"));
        }
        if m.ftz && !(from_t == OpTy::F(32) || to_t == OpTy::F(32)) {
            return Err(Diagnostic::error(span, "`.ftz` applies to `.f32` conversions only"));
        }
        let ops = &i.operands;
        if ops.len() != 2 {
            return Err(Diagnostic::error(span, "`cvt` takes 2 operands"));
        }
        let (dst, widened) = self.relaxed_dst(&ops[0], to_t, to_t.is_float())?;
        let src = self.relaxed_src(&ops[1], from_t, from_t.is_float(), span)?;
        self.push(
            InstKind::Convert {
                to: to_t,
                from: from_t,
                rounding,
                mode: FloatMode { ftz: m.ftz, sat: m.sat, ..FloatMode::default() },
                dst,
                src,
            },
            span,
        );
        if let Some(register) = widened {
            self.zero_extend_into(register, dst, span);
        }
        Ok(())
    }

    /// The integer register `op` names when it is wider than `bits`: PTX ISA 9.2 §5.2.2
    /// lets `ld`, `st` and `cvt` hold narrow values in wide registers, and its relaxed
    /// type-checking rules give a float's (or a narrow format's) value in a wider `.b`
    /// register the low bits: chopped as a source, zero-extended as a destination.
    fn wider_register(&self, op: &Operand, bits: u32) -> Option<RegId> {
        let Operand::Name { name, component: None } = op else { return None };
        match self.lookup(&name.value) {
            Some(Resolved::Reg(r)) => {
                matches!(self.kernel.reg(r).ty, RegTy::Int(b) if u32::from(b) > bits).then_some(r)
            }
            _ => None,
        }
    }

    fn float_in_wider_register(&self, op: &Operand, ty: OpTy) -> bool {
        ty.is_float() && self.wider_register(op, ty.bits()).is_some()
    }

    /// A source of `ld`, `st` and `cvt` at type `ty` in a register that may be wider
    /// (§5.2.2). Integer types read it as they are (the instruction takes its low bits);
    /// with `bits_only` (a float type or a narrow format) the low bits are read out.
    fn relaxed_src(
        &mut self,
        op: &Operand,
        ty: OpTy,
        bits_only: bool,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let wide = if bits_only { self.wider_register(op, ty.bits()) } else { None };
        let Some(r) = wide else {
            return self.src(op, ty, !ty.is_float(), span);
        };
        let from = OpTy::U(self.kernel.reg(r).ty.bits() as u8);
        Ok(expand::Emit { l: self, span }.cvt(ty.as_unsigned(), from, Value::Reg(r)))
    }

    /// A destination of `ld` and `cvt` at type `ty` in a register that may be wider
    /// (§5.2.2): with `bits_only`, a temporary of the type's width and the register to
    /// zero-extend it into ([`Self::zero_extend_into`]).
    fn relaxed_dst(
        &mut self,
        op: &Operand,
        ty: OpTy,
        bits_only: bool,
    ) -> Result<(RegId, Option<RegId>), Diagnostic> {
        let wide = if bits_only { self.wider_register(op, ty.bits()) } else { None };
        let Some(register) = wide else {
            return Ok((self.dst(op, ty, !ty.is_float())?, None));
        };
        Ok((self.temp(RegTy::Int(ty.bits() as u8), op.span()), Some(register)))
    }

    /// `register = zext(value)`.
    fn zero_extend_into(&mut self, register: RegId, value: RegId, span: Span) {
        let wide = OpTy::U(self.kernel.reg(register).ty.bits() as u8);
        let narrow = OpTy::U(self.kernel.reg(value).ty.bits() as u8);
        let mut e = expand::Emit { l: self, span };
        let extended = e.cvt(wide, narrow, Value::Reg(value));
        e.mov(wide, register, extended);
    }
}

// ----- helpers --------------------------------------------------------------------------------

fn undeclared(name: &ptxvk_frontend::Ident) -> Diagnostic {
    Diagnostic::error(name.span, format!("`{}` is not declared", name.value))
}

fn unsupported(span: Span, what: &str, why: &str) -> Diagnostic {
    Diagnostic::error(span, format!("{what} is not supported yet")).with_note(why.to_string())
}

/// Whether `stmts` convert a shared or local address to a generic one (`cvta.shared`,
/// `cvta.local` without `.to`): the address-space inference of ptxvk in its simplest,
/// whole-kernel form (`sema::spaces` is the per-register one): without such a
/// conversion no generic address can point into shared or local memory.
/// Whether `i` makes a generic address of shared or local memory.
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

/// The strength of an `ld`/`st` (PTX ISA 9.2 §8.4, §9.7.9.8-9): `None` for a weak
/// access, else the order and scope of a strong one. `.volatile` is `.relaxed.sys`;
/// `.mmio` accesses are strong too (Vulkan has no memory-mapped I/O to distinguish).
fn memory_order(op: Opcode, span: Span, m: &Mods) -> Result<Option<(Order, Scope)>, Diagnostic> {
    use md::{CacheOp, MemoryOrder as O, Scope as S};
    let mut order = None;
    let mut scope = None;
    for d in &m.details {
        match d.value {
            Modifier::MemoryOrder(O::Weak | O::Mmio) | Modifier::CacheOp(CacheOp::Nc) => {}
            Modifier::MemoryOrder(O::Volatile | O::Relaxed) => order = Some(Order::Relaxed),
            Modifier::MemoryOrder(O::Acquire) if op == Opcode::Ld => order = Some(Order::Acquire),
            Modifier::MemoryOrder(O::Release) if op == Opcode::St => order = Some(Order::Release),
            Modifier::Scope(S::Cta) => scope = Some(Scope::Cta),
            Modifier::Scope(S::Gpu) => scope = Some(Scope::Gpu),
            Modifier::Scope(S::Sys) => scope = Some(Scope::Sys),
            // Every cluster is one CTA (`sema::cluster`).
            Modifier::Scope(S::Cluster) => scope = Some(Scope::Cta),
            d if is_cache_hint(d) => {}
            _ => return Err(unsupported_modifier(d, op)),
        }
    }
    if order.is_some() && scope.is_none() && !m.has(Modifier::MemoryOrder(O::Volatile)) {
        return Err(Diagnostic::error(span, format!("a `.relaxed`, `.acquire` or `.release` `{op}` needs a scope (`.cta`, `.gpu`, `.sys`)")));
    }
    Ok(order.map(|o| (o, scope.unwrap_or(Scope::Sys))))
}

/// The type rules of a `setp`/`set` comparison (PTX ISA 9.2 §9.7.7.1-2).
fn check_comparison(span: Span, cmp: CmpOp, ty: OpTy, ftz: bool) -> Result<(), Diagnostic> {
    let unordered = matches!(
        cmp,
        CmpOp::Equ
            | CmpOp::Neu
            | CmpOp::Ltu
            | CmpOp::Leu
            | CmpOp::Gtu
            | CmpOp::Geu
            | CmpOp::Num
            | CmpOp::Nan
    );
    if !ty.is_float() && unordered {
        return Err(Diagnostic::error(span, "unordered comparisons take floating-point types"));
    }
    if ftz && !ty.is_float() {
        return Err(Diagnostic::error(span, "`.ftz` takes floating-point types"));
    }
    Ok(())
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

fn widen(ty: OpTy, span: Span) -> Result<OpTy, Diagnostic> {
    match ty {
        OpTy::U(b) if b <= 32 => Ok(OpTy::U(b * 2)),
        OpTy::S(b) if b <= 32 => Ok(OpTy::S(b * 2)),
        _ => Err(Diagnostic::error(span, "`.wide` takes 16- or 32-bit integer types")),
    }
}

fn special_reg(name: &ptxvk_frontend::Ident, c: &Spanned<Name>) -> Result<SpecialReg, Diagnostic> {
    let dim = match c.value.as_str() {
        ".x" => Dim::X,
        ".y" => Dim::Y,
        ".z" => Dim::Z,
        _ => {
            return Err(Diagnostic::error(
                c.span,
                format!("`{}` has no component `{}`", name.value, c.value),
            ))
        }
    };
    Ok(match name.value.as_str() {
        "%tid" => SpecialReg::Tid(dim),
        "%ntid" => SpecialReg::Ntid(dim),
        "%ctaid" => SpecialReg::Ctaid(dim),
        "%nctaid" => SpecialReg::Nctaid(dim),
        other if is_special_name(other) => {
            return Err(Diagnostic::error(
                name.span,
                format!("special register `{other}{}` is not supported yet", c.value),
            ))
        }
        other => {
            return Err(Diagnostic::error(
                name.span,
                format!("`{other}` is not a special register with components"),
            ))
        }
    })
}

fn is_special_name(s: &str) -> bool {
    const SREGS: &[&str] = &[
        "%tid",
        "%ntid",
        "%laneid",
        "%warpid",
        "%nwarpid",
        "%ctaid",
        "%nctaid",
        "%smid",
        "%nsmid",
        "%gridid",
        "%lanemask_eq",
        "%lanemask_le",
        "%lanemask_lt",
        "%lanemask_ge",
        "%lanemask_gt",
        "%clock",
        "%clock_hi",
        "%clock64",
        "%globaltimer",
        "%globaltimer_lo",
        "%globaltimer_hi",
        "%total_smem_size",
        "%dynamic_smem_size",
        "%aggr_smem_size",
        "%is_explicit_cluster",
        "%clusterid",
        "%nclusterid",
        "%cluster_ctaid",
        "%cluster_nctaid",
        "%cluster_ctarank",
        "%cluster_nctarank",
        "%current_graph_exec",
    ];
    SREGS.contains(&s) || s.starts_with("%pm") || s.starts_with("%envreg")
}

/// `.texref`/`.samplerref`/`.surfref` declarations parse but are not lowered.
fn opaque_unsupported(v: &ast::VarDecl) -> Diagnostic {
    Diagnostic::error(
        v.ty.span,
        format!("`{}` variables are not supported yet", v.ty.value.directive()),
    )
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
