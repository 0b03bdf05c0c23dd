//! The layouts of a PTX kernel that the launch shares with it: the kernel parameter
//! block (the launch ABI's layout, [`ptxvk_abi::params`], over PTX's scalar types), the
//! static and dynamic variables of the shared window, and the block-size directives.
//! Semantic analysis (`sema`) takes them from here and resolves names to the places
//! laid out.

use std::collections::BTreeMap;

use ptxvk_frontend::ast::{self, ScalarType, StateSpace};
use ptxvk_frontend::{Diagnostic, Span};

pub use crate::ir::KernelAbi;
use crate::ir::SharedLayout;

/// One kernel parameter's place in the parameter block.
pub type ParamSlot = ptxvk_abi::params::ParamSlot<ScalarType>;

/// [`KernelAbi::layout_with`] for PTX's scalar types, whose natural alignment is their
/// size (`KernelAbi::layout`).
pub trait Layout: Sized {
    /// Lays out parameters given as (name, element type, element count, explicit align).
    /// Returns `None` if the block would exceed 4 GiB.
    fn layout<'a>(
        params: impl IntoIterator<Item = (&'a str, ScalarType, u32, Option<u32>)>,
    ) -> Option<Self>;
}

impl Layout for KernelAbi {
    fn layout<'a>(
        params: impl IntoIterator<Item = (&'a str, ScalarType, u32, Option<u32>)>,
    ) -> Option<KernelAbi> {
        KernelAbi::layout_with(params, |elem| elem.bytes())
    }
}

/// The parameter block of kernel `f` (PTX ISA 9.2 §5.1.6) in a module of PTX ISA
/// `version`, with the errors of parameters it cannot hold: a parameter that is not in
/// `.param`, a vector, an array without a positive size, or a block larger than PTX
/// allows.
pub fn kernel_params(f: &ast::Function, version: (u32, u32)) -> (KernelAbi, Vec<Diagnostic>) {
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
    (abi, errors)
}

/// The launch bounds a kernel declares (PTX ISA 9.2 §11.4): block sizes of 1 to 3
/// dimensions (the others 1) and a register budget.
#[derive(Clone, Copy, Debug, Default)]
pub struct LaunchBounds {
    /// `.reqntid`: the block size every launch has.
    pub reqntid: Option<[u32; 3]>,
    /// `.maxntid`: the largest block size of a launch.
    pub maxntid: Option<[u32; 3]>,
    /// `.maxnreg`: registers per thread.
    pub maxnreg: Option<u32>,
}

/// The [`LaunchBounds`] of kernel `f`.
pub fn launch_bounds(f: &ast::Function, errors: &mut Vec<Diagnostic>) -> LaunchBounds {
    let (mut req, mut max, mut maxnreg) = (None, None, None);
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
            ".maxnreg" if maxnreg.is_none() => maxnreg = values.first().map(|v| v.value),
            _ => {}
        }
    }
    LaunchBounds { reqntid: req, maxntid: max, maxnreg }
}

/// Where a `.shared` variable is in its kernel's shared window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedSlot {
    /// A static variable, which `pass::layout_memory` places.
    Static(crate::ir::VarId),
    /// An `extern` (dynamic) array: the start of the dynamic region.
    Dynamic,
}

/// Places every name of `.shared` declaration `v`, recording each one's slot in
/// `slots` by the span of its name: static variables are variables of the kernel
/// (`variables`, which `pass::layout_memory` places); `extern` and unsized arrays
/// share the dynamic region after all static ones (CUDA semantics of `extern
/// __shared__`), whose alignment `shared` keeps.
pub fn place_shared(
    shared: &mut SharedLayout,
    variables: &mut Vec<crate::ir::Variable>,
    v: &ast::VarDecl,
    slots: &mut BTreeMap<Span, SharedSlot>,
    errors: &mut Vec<Diagnostic>,
) {
    let Some(scalar) = v.ty.value.scalar() else {
        errors.push(opaque_unsupported(v));
        return;
    };
    for n in &v.names {
        let (elem, align) = match element_layout(v, scalar, n, "`.shared`") {
            Ok(l) => l,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if v.linkage == Some(ast::Linkage::Extern) || n.dims.contains(&None) {
            if n.dims.len() != 1 {
                errors.push(Diagnostic::error(
                    n.name.span,
                    "dynamic shared memory must be declared as `name[]`",
                ));
                continue;
            }
            shared.dynamic_align = Some(shared.dynamic_align.unwrap_or(1).max(align));
            slots.insert(n.name.span, SharedSlot::Dynamic);
            continue;
        }
        let count: u64 = n.dims.iter().map(|d| d.unwrap_or(1)).product();
        let size = count.checked_mul(elem as u64).and_then(|s| u32::try_from(s).ok());
        let Some(size) = size else {
            errors.push(Diagnostic::error(n.name.span, "shared variable too large"));
            continue;
        };
        let var = crate::ir::VarId(variables.len() as u32);
        let (name, space) = (n.name.value.to_string(), crate::ir::Space::Shared);
        variables.push(crate::ir::Variable::new(name, space, size, align));
        slots.insert(n.name.span, SharedSlot::Static(var));
    }
}

/// The element size and alignment of name `n` of a `.local` or `.shared` (`space`)
/// declaration `v` of type `scalar`, or the error of its initializer, which neither
/// space allows.
pub fn element_layout(
    v: &ast::VarDecl,
    scalar: ScalarType,
    n: &ast::DeclName,
    space: &str,
) -> Result<(u32, u32), Diagnostic> {
    if n.init.is_some() {
        return Err(Diagnostic::error(
            n.name.span,
            format!("{space} variables cannot have initializers"),
        ));
    }
    let elem = scalar.bytes() * v.vector.unwrap_or(1);
    Ok((elem, v.align.as_ref().map_or(elem, |a| a.value).max(1)))
}

/// `.texref`/`.samplerref`/`.surfref` declarations parse but are not laid out.
pub fn opaque_unsupported(v: &ast::VarDecl) -> Diagnostic {
    Diagnostic::error(
        v.ty.span,
        format!("`{}` variables are not supported yet", v.ty.value.directive()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptxvk_frontend::ast::ScalarType::*;

    #[test]
    fn natural_alignment_and_explicit_align() {
        let abi = KernelAbi::layout([
            ("n", U32, 1, None),
            ("p", U64, 1, None),
            ("c", U8, 1, None),
            ("s", B8, 12, Some(8)),
            ("h", U16, 1, None),
        ])
        .expect("fits");
        let offsets: Vec<u32> = abi.params.iter().map(|p| p.offset).collect();
        assert_eq!(offsets, vec![0, 8, 16, 24, 36]);
        assert_eq!(abi.size, 40);
        assert_eq!(abi.align, 8);
    }
}
