//! PTX text → SPIR-V, with every intermediate form available for `--emit`.

use ptxvk_frontend::{ast, Diagnostic, Diagnostics, SourceMap};
pub use ptxvk_lower::ir::WarpMode;
pub use ptxvk_lower::pass::Target;
use ptxvk_lower::sema::PreparedModule;
use ptxvk_lower::LoweredKernel;
use ptxvk_spirv::SpirvModule;

use crate::Error;

/// A PTX module compiled to SPIR-V, with the information the host needs to launch it.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub kernels: Vec<LoweredKernel>,
    pub spirv: SpirvModule,
    /// The module-scope `.global`/`.const` variables and their initial bytes.
    pub data: ptxvk_lower::globals::ModuleData,
    /// The device capabilities the module was compiled for (its warp mode and float
    /// strategy).
    pub target: Target,
    /// The kernels that could not be compiled ([`compile_module`]), each with its
    /// diagnostics; empty from the other compile functions, which fail instead.
    pub failed: Vec<FailedKernel>,
    /// Where each checked access of each kernel (in `spirv.kernels` order) is in the
    /// source, for checked launches' reports; empty lists when not checked.
    pub check_sources: Vec<std::sync::Arc<[crate::check::SiteSource]>>,
    /// Where each guarded loop of each kernel (`Kernel::guarded_loops`, in
    /// `spirv.kernels` order) is in the source, for loop-limit failures; empty lists
    /// when the target has no loop guard.
    pub loop_sources: Vec<Vec<crate::check::SiteSource>>,
    /// Where each wait site of each kernel (`Kernel::wait_sites`: the polling loops and
    /// waits of the block scheduler, `pass::schedule`) is in the source, for the error
    /// of a launch whose block got stuck.
    pub wait_sources: Vec<Vec<crate::check::SiteSource>>,
}

/// Parses PTX text; errors are rendered against `source_name`.
pub fn parse(source_name: &str, text: &str) -> Result<ast::Module, Error> {
    parse_linked(&SourceMap::new([(source_name, text)]))
}

/// Rejected PTX as an error, its diagnostics rendered against `sources`; an internal
/// error when one of them is a ptxvk bug.
/// The error for `diagnostics` about `sources`, rendered.
pub fn rejected(sources: &SourceMap, diagnostics: Diagnostics) -> Error {
    let rendered = sources.render(&diagnostics.0);
    if diagnostics.is_internal() {
        Error::Internal { diagnostics, rendered }
    } else {
        Error::Ptx { diagnostics, rendered }
    }
}

/// A failure of the SPIR-V backend as an error: a ptxvk bug met at an instruction is an
/// internal error rendered at that instruction's source line, like the middle end's.
pub fn backend_failed(sources: &SourceMap, e: ptxvk_spirv::Error) -> Error {
    match e.span() {
        Some(span) if e.is_internal() => {
            // The backend's own message already says "internal error …".
            let message = e.to_string();
            let diagnostics =
                Diagnostics(vec![Diagnostic { message, ..Diagnostic::internal(span, "") }]);
            rejected(sources, diagnostics)
        }
        _ => Error::Backend(e),
    }
}

/// Parses every file of `sources` and links them into one module
/// ([`ptxvk_frontend::link()`]); the errors of every file are reported together.
pub fn parse_linked(sources: &SourceMap) -> Result<ast::Module, Error> {
    let mut modules = Vec::with_capacity(sources.len());
    let mut errors = Vec::new();
    for i in 0..sources.len() {
        match ptxvk_frontend::parse_file(sources, i) {
            // PTX ISA 9.2 §4.1: "Each PTX module must begin with a .version directive".
            // Without one, the text is no PTX (a comment alone parses as an empty module).
            Ok(m) if m.version.is_none() => {
                let start = sources.range(i).start as u32;
                let at = ptxvk_frontend::Span { start, end: start };
                errors.push(Diagnostic::error(at, "a PTX module begins with `.version`"));
            }
            Ok(m) => modules.push(m),
            Err(mut d) => errors.append(&mut d.0),
        }
    }
    if !errors.is_empty() {
        return Err(rejected(sources, Diagnostics(errors)));
    }
    ptxvk_frontend::link(modules).map_err(|d| rejected(sources, d))
}

/// Parses and lowers PTX text, keeping only the kernel `entry` when given (warps
/// emulated).
pub fn lower(
    source_name: &str,
    text: &str,
    entry: Option<&str>,
) -> Result<(ast::Module, Vec<LoweredKernel>), Error> {
    lower_with(source_name, text, entry, Target::portable())
}

/// [`lower`] for `target`.
pub fn lower_with(
    source_name: &str,
    text: &str,
    entry: Option<&str>,
    target: Target,
) -> Result<(ast::Module, Vec<LoweredKernel>), Error> {
    let sources = SourceMap::new([(source_name, text)]);
    let (module, kernels) = lower_linked(&sources, entry, target)?;
    if kernels.is_empty() {
        return Err(no_kernels(&sources));
    }
    Ok((module, kernels))
}

/// The error for a program that has no kernel where one is needed.
pub fn no_kernels(sources: &SourceMap) -> Error {
    let d = ptxvk_frontend::Diagnostic::error(
        ptxvk_frontend::Span::default(),
        "the module has no kernel (`.entry`) to compile",
    );
    rejected(sources, d.into())
}

/// A library checked by [`check_library`]: a program of device functions without a
/// kernel.
#[derive(Clone, Debug)]
pub struct Library {
    /// The functions it defines, each lowered and compiled to SPIR-V through a kernel
    /// that calls it (`ptxvk_frontend::library::harness`).
    pub functions: Vec<String>,
    /// The harness kernels' SPIR-V (for validation).
    pub spirv: SpirvModule,
}

/// Checks a program without kernels as the library (link input) it is: every
/// function it defines must lower and compile. `None` when the program has kernels.
pub fn check_library(sources: &SourceMap, target: Target) -> Result<Option<Library>, Error> {
    use ptxvk_frontend::library;
    let module = parse_linked(sources)?;
    if library::has_kernels(&module) {
        return Ok(None);
    }
    let functions: Vec<String> =
        library::defined_functions(&module).iter().map(|f| f.name.value.to_string()).collect();
    let harness = library::harness(&module);
    let outcomes = ptxvk_lower::lower_each(&harness, &target).map_err(|d| rejected(sources, d))?;
    let (mut kernels, mut errors) = (Vec::new(), Vec::new());
    for k in outcomes {
        match k.result {
            Ok(lowered) => kernels.push(lowered),
            Err(mut d) => errors.append(&mut d.0),
        }
    }
    if !errors.is_empty() {
        return Err(rejected(sources, Diagnostics(errors).once()));
    }
    let spirv = if kernels.is_empty() {
        SpirvModule::default()
    } else {
        ptxvk_spirv::compile_for(&kernels, &target).map_err(|e| backend_failed(sources, e))?
    };
    Ok(Some(Library { functions, spirv }))
}

/// Parses, links and lowers the files of `sources`, keeping only the kernel `entry`
/// when given. A program without kernels (device functions and variables only) is
/// not an error here.
pub fn lower_linked(
    sources: &SourceMap,
    entry: Option<&str>,
    target: Target,
) -> Result<(ast::Module, Vec<LoweredKernel>), Error> {
    let (module, kernels, failed) = lower_each_linked(sources, entry, target)?;
    if failed.is_empty() {
        return Ok((module, kernels));
    }
    let all = failed.into_iter().flat_map(|k| k.diagnostics.0).collect();
    Err(rejected(sources, Diagnostics(all).once()))
}

/// A kernel that failed to compile while the rest of its module did not.
#[derive(Clone, Debug)]
pub struct FailedKernel {
    pub name: String,
    pub diagnostics: Diagnostics,
    /// The diagnostics as `file:line:column` with carets.
    pub rendered: String,
}

impl FailedKernel {
    /// The error a lookup or launch of this kernel reports.
    pub fn error(&self) -> Error {
        let (diagnostics, rendered) = (self.diagnostics.clone(), self.rendered.clone());
        if self.diagnostics.is_internal() {
            Error::Internal { diagnostics, rendered }
        } else {
            Error::Ptx { diagnostics, rendered }
        }
    }
}

/// Like [`lower_linked`], but each kernel compiles or fails alone: the kernels that
/// lowered, and the diagnostics of those that did not. With `entry`, only that kernel
/// is lowered (the others' failures do not matter).
pub fn lower_each_linked(
    sources: &SourceMap,
    entry: Option<&str>,
    target: Target,
) -> Result<(ast::Module, Vec<LoweredKernel>, Vec<FailedKernel>), Error> {
    let module = parse_linked(sources)?;
    let prepared = PreparedModule::new(&module).map_err(|d| rejected(sources, d))?;
    let (kernels, failed) = lower_selected(sources, &prepared, entry, target)?;
    drop(prepared);
    Ok((module, kernels, failed))
}

/// Lowers every kernel of `prepared`, or only `entry` when given: then also the others
/// that compile when it launches kernels from the device (`ptxvk_abi::device_launch`:
/// it may launch any of them), in source order.
fn lower_selected(
    sources: &SourceMap,
    prepared: &PreparedModule<'_>,
    entry: Option<&str>,
    target: Target,
) -> Result<(Vec<LoweredKernel>, Vec<FailedKernel>), Error> {
    let names = prepared.kernel_names();
    let Some(entry) = entry else {
        return Ok(lower_named(sources, prepared, names, target));
    };
    if !names.iter().any(|n| n == entry) {
        return Err(Error::NoSuchKernel { name: entry.to_string(), available: names });
    }
    let (kernels, failed) = lower_named(sources, prepared, vec![entry.to_string()], target);
    if kernels.first().is_some_and(|k| !k.kernel.device_launches.is_empty()) {
        // The others' failures do not matter: the launch of one reports it.
        let (all, _) = lower_named(sources, prepared, names, target);
        return Ok((all, failed));
    }
    Ok((kernels, failed))
}

/// Lowers the kernels `names` of `prepared`, each alone.
fn lower_named(
    sources: &SourceMap,
    prepared: &PreparedModule<'_>,
    names: Vec<String>,
    target: Target,
) -> (Vec<LoweredKernel>, Vec<FailedKernel>) {
    let (mut kernels, mut failed) = (Vec::new(), Vec::new());
    for name in names {
        match ptxvk_lower::lower_one(prepared, &name, &target) {
            Some(Ok(lowered)) => kernels.push(lowered),
            Some(Err(diagnostics)) => {
                let rendered = sources.render(&diagnostics.0);
                failed.push(FailedKernel { name, diagnostics, rendered });
            }
            None => {}
        }
    }
    (kernels, failed)
}

/// Parses and links the files of `sources` and runs semantic analysis only: the IR the
/// passes receive, the same for every device (`ptxvk compile --emit ir`), keeping only
/// the kernel `entry` when given.
pub fn analyze_linked(
    sources: &SourceMap,
    entry: Option<&str>,
) -> Result<Vec<ptxvk_lower::ir::Kernel>, Error> {
    let module = parse_linked(sources)?;
    let mut kernels = ptxvk_lower::sema::run(&module).map_err(|d| rejected(sources, d))?.kernels;
    if let Some(name) = entry {
        kernels.retain(|k| k.name == name);
        if kernels.is_empty() {
            return Err(no_such_kernel(&module, name));
        }
    }
    Ok(kernels)
}

/// Compiles PTX text to a SPIR-V module with one entry point per kernel, for
/// [`Target::portable`] (warps emulated and no f64 for f32 code, which works on every
/// device).
pub fn compile(source_name: &str, text: &str, entry: Option<&str>) -> Result<Compiled, Error> {
    compile_with(source_name, text, entry, Target::portable())
}

/// [`compile`] for `target`.
pub fn compile_with(
    source_name: &str,
    text: &str,
    entry: Option<&str>,
    target: Target,
) -> Result<Compiled, Error> {
    let (ast, kernels) = lower_with(source_name, text, entry, target)?;
    let sources = SourceMap::new([(source_name, text)]);
    finish(&sources, ast, kernels, Vec::new(), target)
}

/// Compiles the PTX files of `sources`, linked into one program, to a SPIR-V module
/// with one entry point per kernel. A program without kernels compiles to no code
/// (its variables can still be loaded and read).
pub fn compile_linked(
    sources: &SourceMap,
    entry: Option<&str>,
    target: Target,
) -> Result<Compiled, Error> {
    let (ast, kernels) = lower_linked(sources, entry, target)?;
    finish(sources, ast, kernels, Vec::new(), target)
}

/// Compiles the PTX files of `sources` as a module to load: a kernel that cannot be
/// compiled does not take the others down but is listed in [`Compiled::failed`], and
/// reports its diagnostics when it is looked up. The module fails as a whole only for
/// errors every kernel shares (syntax, module-scope variables), or when no kernel
/// compiled and some failed.
pub fn compile_module(sources: &SourceMap, target: Target) -> Result<Compiled, Error> {
    let (ast, kernels, failed) = lower_each_linked(sources, None, target)?;
    if kernels.is_empty() && !failed.is_empty() {
        let all = failed.into_iter().flat_map(|k| k.diagnostics.0).collect();
        return Err(rejected(sources, Diagnostics(all).once()));
    }
    finish(sources, ast, kernels, failed, target)
}

fn finish(
    sources: &SourceMap,
    ast: ast::Module,
    kernels: Vec<LoweredKernel>,
    failed: Vec<FailedKernel>,
    target: Target,
) -> Result<Compiled, Error> {
    // Lowering succeeded, so the layout (which lowering also computed) has no errors.
    let data = ptxvk_lower::sema::module_data(&ast).unwrap_or_default();
    let places = crate::check::SourcePlaces::new(&ast);
    finish_with(sources, &places, data, kernels, failed, target)
}

/// SPIR-V for lowered `kernels`, and where their sites are in `sources`.
fn finish_with(
    sources: &SourceMap,
    places: &crate::check::SourcePlaces,
    data: ptxvk_lower::globals::ModuleData,
    kernels: Vec<LoweredKernel>,
    failed: Vec<FailedKernel>,
    target: Target,
) -> Result<Compiled, Error> {
    let spirv = if kernels.is_empty() {
        SpirvModule::default()
    } else {
        ptxvk_spirv::compile_for(&kernels, &target).map_err(|e| backend_failed(sources, e))?
    };
    let check_sources =
        kernels.iter().map(|k| places.sites(sources, &k.kernel.check_sites).into()).collect();
    let spans = |spans: &[ptxvk_frontend::Span]| places.spans(sources, spans.iter().copied());
    let loop_sources = kernels.iter().map(|k| spans(&k.kernel.guarded_loops)).collect();
    let wait_sources = kernels.iter().map(|k| spans(&k.kernel.wait_sites)).collect();
    Ok(Compiled { kernels, spirv, data, target, failed, check_sources, loop_sources, wait_sources })
}

/// A module whose kernels compile one at a time, when first asked for: parsed, linked
/// and checked as a whole when it is made (syntax, module-scope variables and their
/// layout), then each kernel lowered and compiled to its own SPIR-V module by
/// [`LazyModule::compile`]. This is CUDA's lazy loading (`CUDA_MODULE_LOADING=LAZY`,
/// the default since CUDA 12.2): libraries ship modules of hundreds of kernels (CuPy's
/// CUB module has 383 in 22 MB of PTX), of which a program uses a few.
#[derive(Debug)]
pub struct LazyModule {
    sources: SourceMap,
    prepared: PreparedModule<'static>,
    places: crate::check::SourcePlaces,
    target: Target,
    names: Vec<String>,
}

impl LazyModule {
    /// Parses, links and checks the files of `sources` as one program for `target`.
    pub fn new(sources: SourceMap, target: Target) -> Result<LazyModule, Error> {
        let ast = parse_linked(&sources)?;
        let prepared = match PreparedModule::new(&ast) {
            Ok(p) => p.into_owned(),
            Err(d) => return Err(rejected(&sources, d)),
        };
        let places = crate::check::SourcePlaces::new(&ast);
        let names = prepared.kernel_names();
        Ok(LazyModule { sources, prepared, places, target, names })
    }

    /// The kernels, in source order.
    pub fn kernel_names(&self) -> &[String] {
        &self.names
    }

    /// The module-scope `.global`/`.const` variables and their initial bytes.
    pub fn data(&self) -> &ptxvk_lower::globals::ModuleData {
        self.prepared.data()
    }

    /// The module's address size in bits (32 or 64).
    pub fn address_size(&self) -> u32 {
        self.prepared.address_size
    }

    pub fn target(&self) -> Target {
        self.target
    }

    /// Compiles kernel `name` alone (with every other kernel that compiles when it
    /// launches kernels from the device); its own diagnostics when it cannot be.
    pub fn compile(&self, name: &str) -> Result<Compiled, Error> {
        let (kernels, failed) =
            lower_selected(&self.sources, &self.prepared, Some(name), self.target)?;
        if let Some(failed) = failed.first() {
            return Err(failed.error());
        }
        let data = self.data().clone();
        finish_with(&self.sources, &self.places, data, kernels, Vec::new(), self.target)
    }
}

/// Links the PTX files of `sources` into one PTX module, as text (what
/// `cuLinkComplete` hands back to be loaded later), giving every kernel a `.maxnreg`
/// of at most `max_registers` when set.
pub fn link_to_ptx(sources: &SourceMap, max_registers: Option<u32>) -> Result<String, Error> {
    let mut module = parse_linked(sources)?;
    if let Some(n) = max_registers {
        ptxvk_frontend::link::cap_registers(&mut module, n);
    }
    Ok(ptxvk_frontend::print(&module))
}

fn no_such_kernel(module: &ast::Module, name: &str) -> Error {
    Error::NoSuchKernel { name: name.to_string(), available: entry_names(module) }
}

/// Names of the module's kernels, in source order.
pub fn entry_names(module: &ast::Module) -> Vec<String> {
    ptxvk_lower::sema::kernels(module).map(|f| f.name.value.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_bug_at_an_instruction_is_rendered_at_its_line() {
        let text = "line one\n  st.global.u32 [%rd1], 7;\n";
        let sources = SourceMap::new([("k.ptx", text)]);
        let start = text.find("st.global").expect("the store") as u32;
        let span = ptxvk_frontend::Span { start, end: start + 9 };
        let bug = ptxvk_spirv::Error::Internal("a sync point left for the emitter".into());
        let error = backend_failed(&sources, bug.at(span));
        let Error::Internal { rendered, .. } = &error else { panic!("not internal: {error:?}") };
        assert!(rendered.contains("k.ptx:2:3"), "{rendered}");
        assert!(rendered.contains("internal error in the SPIR-V backend"), "{rendered}");
        assert_eq!(error.exit_code(), 4);
        // Without a span (a tool missing), the backend's error stays as it is.
        let tool = backend_failed(&sources, ptxvk_spirv::Error::Tool("spirv-val".into()));
        assert!(matches!(tool, Error::Backend(ptxvk_spirv::Error::Tool(_))));
    }
}
