//! Module-scope `.global` and `.const` variables (PTX ISA 9.2 §5.1.2-5.1.3, §5.4): laid
//! out in one block of module data with their initializers, which the runtime uploads
//! once per loaded module (so `.global` values persist across launches) and whose device
//! address every launch passes in the push constants (`docs/architecture.md`, *The launch
//! ABI*). Kernels address a variable as that base plus its offset.
//!
//! An initializer may name a variable (`var`, `generic(var)`: its address, 64-bit
//! elements only) or a device function (its address, `sema::calls`). Variable
//! addresses are only known once the module is loaded, so they are relocations the
//! runtime patches into the image before uploading it.

use ptxvk_abi::texture::{AddressMode, Sampler};
use ptxvk_frontend::ast::{self, ExprKind, Initializer, ScalarType, StateSpace};
use ptxvk_frontend::{Diagnostic, Ident, Span};

/// One variable of the module data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalVar {
    pub name: String,
    pub space: StateSpace,
    pub offset: u32,
    pub size: u32,
    /// For a variable declared inside a function (static storage all the same, PTX ISA
    /// 9.2 §5.1.2): the span of its name in the declaration, by which the function's
    /// code finds it. Such a variable is named `function::name` here.
    pub decl: Option<Span>,
    /// `.attribute(.managed)` (PTX ISA 9.2 §5.4.8, CUDA's `__managed__`): the host reads
    /// and writes it at its device address, so the module data goes in memory both see
    /// at one address.
    pub managed: bool,
}

/// The module data: every module-scope `.global`/`.const` variable, and the bytes the
/// block starts with (zero where a variable has no initializer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleData {
    pub vars: Vec<GlobalVar>,
    /// The image starts with the `.const` variables, these many bytes, so that
    /// `isspacep.const` can tell their addresses by range.
    pub const_bytes: u32,
    pub image: Vec<u8>,
    pub relocations: Vec<Relocation>,
}

/// A 64-bit word of the image that holds a module-data address: the data's device
/// address plus `target`, written at byte `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relocation {
    pub at: u32,
    pub target: u32,
}

/// A symbol in an initializer, resolved once every variable is placed.
struct SymbolUse {
    /// Byte of the image the address goes to.
    at: u32,
    name: String,
    /// Bytes added to the address (`generic(foo)+4`).
    addend: i64,
    span: Span,
}

impl ModuleData {
    pub fn get(&self, name: &str) -> Option<&GlobalVar> {
        self.vars.iter().find(|v| v.name == name)
    }
}

/// Lays out the module-scope `.global` and `.const` variables of `module`, then those
/// declared inside its functions; `function_address` gives the address of a device
/// function by name.
pub fn layout(
    module: &ast::Module,
    function_address: &dyn Fn(&str) -> Option<u64>,
) -> Result<ModuleData, Vec<Diagnostic>> {
    let mut data = ModuleData::default();
    let mut errors = Vec::new();
    let mut symbols = Vec::new();
    // (the declaration, its function for a function-scope one)
    let mut decls: Vec<(&ast::VarDecl, Option<&str>)> = Vec::new();
    for item in &module.items {
        if let ast::Item::Variable(v) = item {
            decls.push((v, None));
        }
    }
    for item in &module.items {
        if let ast::Item::Function(f) = item {
            let name = f.name.value.as_str();
            in_function(f.body.as_deref().unwrap_or(&[]), &mut |v| decls.push((v, Some(name))));
        }
    }
    // `.const` variables first, then `.global` ones (`ModuleData::const_bytes`).
    decls.sort_by_key(|(v, _)| v.space != StateSpace::Const);
    let mut placed_const = false;
    for (v, function) in decls {
        if !matches!(v.space, StateSpace::Global | StateSpace::Const | StateSpace::Tex) {
            continue;
        }
        if v.space != StateSpace::Const && !placed_const {
            placed_const = true;
            data.const_bytes = data.image.len() as u32;
        }
        let scalar = match v.ty.value {
            ast::VarType::Scalar(s) if v.space != StateSpace::Tex => s,
            // A texture, sampler or surface reference (`.texref`, or a variable of the
            // deprecated `.tex` space) is an 8-byte variable holding the handle the host
            // binds: the device address of a descriptor (`sema::texture`).
            // A `.samplerref` may be initialized with its state (§5.3.2): the variable
            // then holds the address of a sampler descriptor in the module data.
            _ => {
                let sampler = v.ty.value == ast::VarType::SamplerRef;
                if v.names.iter().any(|n| n.init.is_some() && !sampler) {
                    errors.push(Diagnostic::error(
                        v.span,
                        "initializers of texture and surface references are not supported \
                         (the host binds them)",
                    ));
                    continue;
                }
                ScalarType::U64
            }
        };
        if v.bank.is_some() {
            errors
                .push(Diagnostic::error(v.span, "banked `.const[n]` variables are not supported"));
            continue;
        }
        if v.linkage == Some(ast::Linkage::Extern) {
            // The linker (`ptxvk_frontend::link`) replaces every `.extern` variable
            // by its definition or rejects it; one left here was never linked.
            errors.push(
                Diagnostic::error(v.span, "`.extern` variable without a definition")
                    .with_note("link the module that defines it (`ptxvk_frontend::link`)"),
            );
            continue;
        }
        let elem = scalar.bytes() * v.vector.unwrap_or(1);
        let align = v.align.as_ref().map_or(elem, |a| a.value).max(1);
        for n in &v.names {
            let name = match function {
                Some(f) => format!("{f}::{}", n.name.value),
                None => n.name.value.to_string(),
            };
            let decl = function.map(|_| n.name.span);
            let placed = match &n.init {
                Some(Initializer::Fields(fields, _)) if v.ty.value == ast::VarType::SamplerRef => {
                    place_sampler(&mut data, v, fields, (name, decl))
                }
                _ => place(&mut data, v, n, (name, decl), scalar, (elem, align), &mut symbols),
            };
            match placed {
                Ok(()) => {}
                Err(d) => errors.push(d),
            }
        }
    }
    if !placed_const {
        data.const_bytes = data.image.len() as u32;
    }
    for sym in symbols {
        let at = sym.at as usize;
        if let Some(addr) = function_address(&sym.name) {
            let addr = addr.wrapping_add(sym.addend as u64);
            data.image[at..at + 8].copy_from_slice(&addr.to_le_bytes());
        } else if let Some(offset) = data.get(&sym.name).map(|v| v.offset) {
            let target = (i64::from(offset) + sym.addend) as u32;
            data.relocations.push(Relocation { at: sym.at, target });
        } else {
            errors.push(Diagnostic::error(
                sym.span,
                format!("`{}` is no module-scope variable or function", sym.name),
            ));
        }
    }
    if errors.is_empty() {
        Ok(data)
    } else {
        Err(errors)
    }
}

/// Calls `f` on every variable declared in `stmts`, nested scopes included.
fn in_function<'a>(stmts: &'a [ast::Statement], f: &mut dyn FnMut(&'a ast::VarDecl)) {
    for s in stmts {
        match s {
            ast::Statement::Variable(v) => f(v),
            ast::Statement::Block(inner, _) => in_function(inner, f),
            _ => {}
        }
    }
}

/// Places `n` of declaration `v` under `name` (and `decl`, [`GlobalVar::decl`]), its
/// elements of `elem` bytes aligned to `align`.
fn place(
    data: &mut ModuleData,
    v: &ast::VarDecl,
    n: &ast::DeclName,
    (name, decl): (String, Option<Span>),
    scalar: ScalarType,
    (elem, align): (u32, u32),
    symbols: &mut Vec<SymbolUse>,
) -> Result<(), Diagnostic> {
    // Values of the initializer, flattened, as bit patterns of the element type
    // (symbols as 0, with their positions).
    let mut values = Vec::new();
    let mut named = Vec::new();
    if let Some(init) = &n.init {
        flatten(init, scalar, &mut values, &mut named)?;
    }
    let scalar_bytes = scalar.bytes() as usize;
    // `name[]` takes its size from the initializer.
    let known: Option<u64> = n.dims.iter().try_fold(1u64, |acc, d| d.map(|d| acc * d));
    let count = match known {
        Some(c) => c,
        None => {
            let per_elem = u64::from(v.vector.unwrap_or(1));
            let rest: u64 = n.dims.iter().skip(1).map(|d| d.unwrap_or(1)).product();
            (values.len() as u64).div_ceil(per_elem * rest.max(1)) * rest.max(1)
        }
    };
    let size = count
        .checked_mul(u64::from(elem))
        .and_then(|s| u32::try_from(s).ok())
        .filter(|&s| s <= 1 << 30)
        .ok_or_else(|| Diagnostic::error(n.name.span, "module variable too large"))?;
    if values.len() * scalar_bytes > size as usize {
        return Err(Diagnostic::error(
            init_span(n).unwrap_or(n.name.span),
            "the initializer has more values than the variable holds",
        ));
    }
    let offset = (data.image.len() as u32).next_multiple_of(align);
    data.image.resize(offset as usize, 0);
    let mut bytes = vec![0u8; size as usize];
    for (k, bits) in values.iter().enumerate() {
        let at = k * scalar_bytes;
        bytes[at..at + scalar_bytes].copy_from_slice(&bits.to_le_bytes()[..scalar_bytes]);
    }
    data.image.extend_from_slice(&bytes);
    for (k, name, addend, span) in named {
        symbols.push(SymbolUse { at: offset + (k * scalar_bytes) as u32, name, addend, span });
    }
    let managed =
        v.attribute_specs.iter().any(|a| a.name.value.trim_start_matches('.') == "managed");
    data.vars.push(GlobalVar { name, space: v.space, offset, size, decl, managed });
    Ok(())
}

/// Places an initialized `.samplerref`: the sampler's descriptor, then the 8-byte
/// variable holding its address (a relocation).
fn place_sampler(
    data: &mut ModuleData,
    v: &ast::VarDecl,
    fields: &[(Ident, ast::Expr)],
    (name, decl): (String, Option<Span>),
) -> Result<(), Diagnostic> {
    let descriptor = sampler_state(fields)?.encode();
    let at = data.image.len().next_multiple_of(8);
    data.image.resize(at, 0);
    data.image.extend_from_slice(&descriptor);
    let offset = data.image.len() as u32;
    data.image.extend_from_slice(&[0; 8]);
    data.relocations.push(Relocation { at: offset, target: at as u32 });
    data.vars.push(GlobalVar { name, space: v.space, offset, size: 8, decl, managed: false });
    Ok(())
}

/// The sampler a `.samplerref` initializer describes (PTX ISA 9.2 §5.3, Table 11):
/// `addr_mode_0`..`2` (`wrap`, `mirror`, `clamp_to_edge`, `clamp_to_border`),
/// `filter_mode` (`nearest`, `linear`) and `force_unnormalized_coords` (0, 1). Fields
/// left out are clamp-to-edge, nearest and 0 (ptxvk's choice; the ISA names no
/// defaults).
fn sampler_state(fields: &[(Ident, ast::Expr)]) -> Result<Sampler, Diagnostic> {
    let mut sampler = Sampler::default();
    for (field, value) in fields {
        let symbol = match &value.kind {
            ExprKind::Symbol(name) => Some(name.as_str()),
            _ => None,
        };
        let bad_value =
            || Diagnostic::error(value.span, format!("this is no value of `{}`", field.value));
        match field.value.as_str() {
            f @ ("addr_mode_0" | "addr_mode_1" | "addr_mode_2") => {
                let dim = usize::from(f.as_bytes()[10] - b'0');
                sampler.address_modes[dim] =
                    match symbol {
                        Some("wrap") => AddressMode::Wrap,
                        Some("mirror") => AddressMode::Mirror,
                        Some("clamp_to_edge") => AddressMode::Clamp,
                        Some("clamp_to_border") => AddressMode::Border,
                        Some("clamp_ogl") => return Err(Diagnostic::error(
                            value.span,
                            "`clamp_ogl` (OpenGL's GL_CLAMP) is not supported: CUDA has no such \
                             address mode",
                        )),
                        _ => return Err(bad_value()),
                    }
            }
            "filter_mode" => {
                sampler.linear_filter = match symbol {
                    Some("nearest") => false,
                    Some("linear") => true,
                    _ => return Err(bad_value()),
                }
            }
            "force_unnormalized_coords" => {
                let v = value.eval_int().map_err(|(sp, m)| Diagnostic::error(sp, m))?;
                sampler.force_unnormalized_coords = match v.value {
                    0 => false,
                    1 => true,
                    _ => return Err(bad_value()),
                }
            }
            other => {
                return Err(Diagnostic::error(
                    field.span,
                    format!("`{other}` is no field of a `.samplerref`"),
                ))
            }
        }
    }
    Ok(sampler)
}

fn init_span(n: &ast::DeclName) -> Option<Span> {
    match n.init.as_ref()? {
        Initializer::Expr(e) => Some(e.span),
        Initializer::List(_, s) | Initializer::Fields(_, s) => Some(*s),
    }
}

/// The initializer's values in order (nested lists flattened, §5.4.4); a symbol (plus
/// a constant, `generic(foo)+4`) is a 0 whose position, name and addend go to `named`.
fn flatten(
    init: &Initializer,
    scalar: ScalarType,
    out: &mut Vec<u64>,
    named: &mut Vec<(usize, String, i64, Span)>,
) -> Result<(), Diagnostic> {
    match init {
        Initializer::List(items, _) => {
            for i in items {
                flatten(i, scalar, out, named)?;
            }
            Ok(())
        }
        Initializer::Fields(_, span) => {
            Err(Diagnostic::error(*span, "field initializers belong to texture references"))
        }
        Initializer::Expr(e) => {
            let bits = match (&e.kind, scalar) {
                (ExprKind::F32Bits(b), ScalarType::F32) => u64::from(*b),
                (ExprKind::F64Bits(b), ScalarType::F64) => *b,
                (ExprKind::F64Bits(b), ScalarType::F32) => {
                    u64::from((f64::from_bits(*b) as f32).to_bits())
                }
                (ExprKind::F32Bits(b), ScalarType::F64) => f64::from(f32::from_bits(*b)).to_bits(),
                (_, s) if address_plus_constant(e).is_some() => {
                    if s.bytes() != 8 || matches!(s, ScalarType::F64) {
                        return Err(Diagnostic::error(
                            e.span,
                            "an address initializer needs a 64-bit integer variable",
                        ));
                    }
                    if let Some((name, addend)) = address_plus_constant(e) {
                        named.push((out.len(), name.to_string(), addend, e.span));
                    }
                    0
                }
                (_, s) if matches!(s, ScalarType::F32 | ScalarType::F64) => {
                    // An integer constant for a float variable: its value.
                    let v = e.eval_int().map_err(|(sp, m)| Diagnostic::error(sp, m))?;
                    let x = if v.unsigned { v.value as f64 } else { v.value as i64 as f64 };
                    if s == ScalarType::F32 {
                        u64::from((x as f32).to_bits())
                    } else {
                        x.to_bits()
                    }
                }
                _ => e.eval_int().map_err(|(sp, m)| Diagnostic::error(sp, m))?.value,
            };
            out.push(bits);
            Ok(())
        }
    }
}

/// `foo`, `generic(foo)`, either plus or minus a constant (`generic(foo)+4`): the name
/// and the constant (PTX ISA 9.2 §5.4.4).
fn address_plus_constant(e: &ast::Expr) -> Option<(&str, i64)> {
    let constant = |e: &ast::Expr| e.eval_int().ok().map(|c| c.value as i64);
    match &e.kind {
        ExprKind::Symbol(name) | ExprKind::Generic(name) => Some((name.as_str(), 0)),
        ExprKind::Binary(ast::BinaryOp::Add, l, r) => match (address_plus_constant(l), constant(r))
        {
            (Some((name, a)), Some(c)) => Some((name, a.wrapping_add(c))),
            _ => {
                let (name, a) = address_plus_constant(r)?;
                Some((name, a.wrapping_add(constant(l)?)))
            }
        },
        ExprKind::Binary(ast::BinaryOp::Sub, l, r) => {
            let (name, a) = address_plus_constant(l)?;
            Some((name, a.wrapping_sub(constant(r)?)))
        }
        _ => None,
    }
}
