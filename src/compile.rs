//! PTX text → SPIR-V, with every intermediate form available for `--emit`.

use ptxvk_frontend::{ast, SourceFile};
pub use ptxvk_lower::ir::WarpMode;
use ptxvk_lower::LoweredKernel;
use ptxvk_spirv::SpirvModule;

use crate::Error;

/// A PTX module compiled to SPIR-V, with the information the host needs to launch it.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub ast: ast::Module,
    pub kernels: Vec<LoweredKernel>,
    pub spirv: SpirvModule,
    /// The module-scope `.global`/`.const` variables and their initial bytes.
    pub data: ptxvk_lower::globals::ModuleData,
    /// How the module's warp collectives were compiled.
    pub warp_mode: WarpMode,
}

/// Parses PTX text; errors are rendered against `source_name`.
pub fn parse(source_name: &str, text: &str) -> Result<ast::Module, Error> {
    let src = SourceFile::new(source_name, text);
    ptxvk_frontend::parse(text).map_err(|diagnostics| {
        let rendered = src.render(&diagnostics.0);
        Error::Ptx { diagnostics, rendered }
    })
}

/// Parses and lowers PTX text, keeping only the kernel `entry` when given (warps
/// emulated).
pub fn lower(
    source_name: &str,
    text: &str,
    entry: Option<&str>,
) -> Result<(ast::Module, Vec<LoweredKernel>), Error> {
    lower_with(source_name, text, entry, WarpMode::Emulated)
}

/// [`lower`] with warp collectives for `warp_mode`.
pub fn lower_with(
    source_name: &str,
    text: &str,
    entry: Option<&str>,
    warp_mode: WarpMode,
) -> Result<(ast::Module, Vec<LoweredKernel>), Error> {
    let module = parse(source_name, text)?;
    let src = SourceFile::new(source_name, text);
    let mut kernels = ptxvk_lower::lower_with(&module, warp_mode).map_err(|diagnostics| {
        let rendered = src.render(&diagnostics.0);
        Error::Ptx { diagnostics, rendered }
    })?;
    if let Some(name) = entry {
        kernels.retain(|k| k.kernel.name == name);
        if kernels.is_empty() {
            return Err(no_such_kernel(&module, name));
        }
    }
    if kernels.is_empty() {
        let d = ptxvk_frontend::Diagnostic::error(
            ptxvk_frontend::Span::default(),
            "the module has no kernel (`.entry`) to compile",
        );
        let rendered = src.render(std::slice::from_ref(&d));
        return Err(Error::Ptx { diagnostics: d.into(), rendered });
    }
    Ok((module, kernels))
}

/// Compiles PTX text to a SPIR-V module with one entry point per kernel (warps
/// emulated, which works on every device).
pub fn compile(source_name: &str, text: &str, entry: Option<&str>) -> Result<Compiled, Error> {
    compile_with(source_name, text, entry, WarpMode::Emulated)
}

/// [`compile`] with warp collectives for `warp_mode`.
pub fn compile_with(
    source_name: &str,
    text: &str,
    entry: Option<&str>,
    warp_mode: WarpMode,
) -> Result<Compiled, Error> {
    let (ast, kernels) = lower_with(source_name, text, entry, warp_mode)?;
    let spirv = ptxvk_spirv::compile(&kernels)?;
    // Lowering succeeded, so the layout (which lowering also computed) has no errors.
    let data = ptxvk_lower::sema::module_data(&ast).unwrap_or_default();
    Ok(Compiled { ast, kernels, spirv, data, warp_mode })
}

fn no_such_kernel(module: &ast::Module, name: &str) -> Error {
    Error::NoSuchKernel { name: name.to_string(), available: entry_names(module) }
}

/// Names of the module's kernels, in source order.
pub fn entry_names(module: &ast::Module) -> Vec<String> {
    module
        .items
        .iter()
        .filter_map(|i| match i {
            ast::Item::Function(f) if f.is_entry && f.body.is_some() => {
                Some(f.name.value.to_string())
            }
            _ => None,
        })
        .collect()
}
