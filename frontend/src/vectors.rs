//! Vector registers (PTX ISA 9.2 §5.4.2: `.reg .v2 .f32 %v;`, `.v4`), which old
//! compilers emit: an AST rewrite that semantic analysis runs first (`lower::sema`),
//! after which each is one scalar register per component, named `%v.x`, `%v.y`, `%v.z`, `%v.w`. A component operand (`%v.x`, or
//! `%v.r`/`.g`/`.b`/`.a`, §6.4.2) names its register; the whole register as an
//! operand (`ld.global.v4.f32 %v, [a]`) is the vector of its components
//! (`{%v.x, %v.y, %v.z, %v.w}`).
//!
//! `.b128` registers (§5.2.1) are pairs the same way, `.reg .v2 .b64`, low half first,
//! and the `.b128` moves and memory accesses that use them (`ld`, `ldu`, `st`, `mov`,
//! whose 128-bit values are such pairs, §9.7.9.1) become `.v2.b64` ones: the same
//! bytes, in the same order (little-endian).

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::ast::{self, Operand, StateSpace, Statement};
use crate::{Diagnostic, Name, Spanned};

const COMPONENTS: [&str; 4] = ["x", "y", "z", "w"];

/// `module` with its vector registers split, or itself when it declares none.
pub fn split(module: &ast::Module) -> Result<Cow<'_, ast::Module>, Vec<Diagnostic>> {
    let has_vectors = |f: &ast::Function| {
        declares_vectors(f.body.as_deref().unwrap_or(&[]))
            || f.params.iter().chain(&f.returns).any(is_vector_register)
    };
    if !module.items.iter().any(|i| matches!(i, ast::Item::Function(f) if has_vectors(f))) {
        return Ok(Cow::Borrowed(module));
    }
    let mut module = module.clone();
    let mut errors = Vec::new();
    for item in &mut module.items {
        if let ast::Item::Function(f) = item {
            let mut scopes = vec![BTreeMap::new()];
            // `.reg` parameters and results of vector type (`.reg .v4 .u32 a`): one
            // scalar parameter per component, and a vector argument (`%v` of the caller,
            // itself split) is its components (`flatten_call_lists`).
            for list in [&mut f.params, &mut f.returns] {
                *list = split_params(std::mem::take(list), &mut scopes, &mut errors);
            }
            if let Some(body) = &mut f.body {
                rewrite(body, &mut scopes, &mut errors);
            }
        }
    }
    if errors.is_empty() {
        Ok(Cow::Owned(module))
    } else {
        Err(errors)
    }
}

fn declares_vectors(stmts: &[Statement]) -> bool {
    stmts.iter().any(|s| match s {
        Statement::Variable(v) => v.space == StateSpace::Reg && (v.vector.is_some() || is_b128(v)),
        Statement::Block(inner, _) => declares_vectors(inner),
        _ => false,
    })
}

fn is_vector_register(v: &ast::VarDecl) -> bool {
    v.space == StateSpace::Reg && (v.vector.is_some() || is_b128(v))
}

/// Parameters with each vector `.reg` parameter replaced by its components.
fn split_params(
    params: Vec<ast::Param>,
    scopes: &mut Scopes,
    errors: &mut Vec<Diagnostic>,
) -> Vec<ast::Param> {
    let mut out = Vec::new();
    for mut p in params {
        if !is_vector_register(&p) {
            out.push(p);
            continue;
        }
        if is_b128(&p) {
            p.vector = Some(2);
            p.ty.value = ast::VarType::Scalar(ast::ScalarType::B64);
        }
        declare(&mut p, scopes, errors);
        for name in std::mem::take(&mut p.names) {
            out.push(ast::VarDecl { names: vec![name], ..p.clone() });
        }
    }
    out
}

fn is_b128(v: &ast::VarDecl) -> bool {
    v.vector.is_none() && v.ty.value == ast::VarType::Scalar(ast::ScalarType::B128)
}

/// `.b128` on `ld`, `ldu`, `st` and `mov` becomes `.v2.b64`; on anything else it is
/// an error (its registers are pairs now).
fn split_b128(i: &mut ast::Instruction, errors: &mut Vec<Diagnostic>) {
    let b128 = Some(ast::ScalarType::B128);
    let Some(k) =
        i.modifiers.iter().position(|m| ast::ScalarType::from_directive(&m.value) == b128)
    else {
        return;
    };
    use crate::Opcode;
    if !matches!(i.op, Some(Opcode::Ld | Opcode::Ldu | Opcode::St | Opcode::Mov)) {
        errors.push(Diagnostic::error(
            i.modifiers[k].span,
            format!("`.b128` operands of `{}` are not supported yet", i.opcode.value),
        ));
        return;
    }
    let span = i.modifiers[k].span;
    i.modifiers[k] = Spanned::new(Name::from(".b64"), span);
    i.modifiers.insert(k, Spanned::new(Name::from(".v2"), span));
}

/// The vector registers in scope: name → number of components.
type Scopes = Vec<BTreeMap<Name, u32>>;

fn lookup(scopes: &Scopes, name: &str) -> Option<u32> {
    scopes.iter().rev().find_map(|s| s.get(name).copied())
}

fn component_name(base: &str, c: usize) -> Name {
    Name::from(format!("{base}.{}", COMPONENTS[c]))
}

fn rewrite(stmts: &mut [Statement], scopes: &mut Scopes, errors: &mut Vec<Diagnostic>) {
    for s in stmts.iter_mut() {
        match s {
            Statement::Variable(v) if v.space == StateSpace::Reg && is_b128(v) => {
                v.vector = Some(2);
                v.ty.value = ast::VarType::Scalar(ast::ScalarType::B64);
                declare(v, scopes, errors);
            }
            Statement::Variable(v) if v.space == StateSpace::Reg && v.vector.is_some() => {
                declare(v, scopes, errors);
            }
            Statement::Instruction(i) => {
                split_b128(i, errors);
                for op in &mut i.operands {
                    operand(op, scopes, errors);
                }
                flatten_call_lists(i);
            }
            Statement::Block(inner, _) => {
                scopes.push(BTreeMap::new());
                rewrite(inner, scopes, errors);
                scopes.pop();
            }
            _ => {}
        }
    }
}

/// A split vector register as a call's argument or result is its components, in
/// order, as the callee's split parameter is (`split_params`).
fn flatten_call_lists(i: &mut ast::Instruction) {
    if i.op != Some(crate::Opcode::Call) {
        return;
    }
    for op in &mut i.operands {
        if let Operand::List(items, _) = op {
            if items.iter().any(|o| matches!(o, Operand::Vector(..))) {
                *items = std::mem::take(items)
                    .into_iter()
                    .flat_map(|o| match o {
                        Operand::Vector(v, _) => v,
                        o => vec![o],
                    })
                    .collect();
            }
        }
    }
}

/// Replaces vector declaration `v` by one register per component, and puts its
/// registers in the innermost scope.
fn declare(v: &mut ast::VarDecl, scopes: &mut Scopes, errors: &mut Vec<Diagnostic>) {
    let n = v.vector.unwrap_or(1);
    if !matches!(n, 2 | 4) {
        errors.push(Diagnostic::error(v.span, "vector registers are `.v2` or `.v4`"));
        return;
    }
    let mut names = Vec::new();
    for d in &v.names {
        if !d.dims.is_empty() || d.init.is_some() {
            errors.push(Diagnostic::error(
                d.name.span,
                "a vector register has no array dimensions or initializer",
            ));
            continue;
        }
        let bases: Vec<Name> = match d.count {
            Some(count) => (0..count).map(|k| Name::from(format!("{}{k}", d.name.value))).collect(),
            None => vec![d.name.value.clone()],
        };
        for base in bases {
            if let Some(scope) = scopes.last_mut() {
                scope.insert(base.clone(), n);
            }
            for c in 0..n as usize {
                names.push(ast::DeclName {
                    name: Spanned::new(component_name(&base, c), d.name.span),
                    count: None,
                    dims: Vec::new(),
                    init: None,
                });
            }
        }
    }
    v.vector = None;
    v.names = names;
}

fn operand(op: &mut Operand, scopes: &Scopes, errors: &mut Vec<Diagnostic>) {
    match op {
        Operand::Name { name, component } => {
            let Some(n) = lookup(scopes, &name.value) else { return };
            match component {
                Some(c) => {
                    let k = ast::vector_component(&c.value).unwrap_or(usize::MAX);
                    if k >= n as usize {
                        errors.push(Diagnostic::error(
                            c.span,
                            format!("`{}` has no component `{}`", name.value, c.value),
                        ));
                        return;
                    }
                    let span = name.span.to(c.span);
                    *op = Operand::Name {
                        name: Spanned::new(component_name(&name.value, k), span),
                        component: None,
                    };
                }
                None => {
                    let span = name.span;
                    let elems = (0..n as usize)
                        .map(|c| Operand::Name {
                            name: Spanned::new(component_name(&name.value, c), span),
                            component: None,
                        })
                        .collect();
                    *op = Operand::Vector(elems, span);
                }
            }
        }
        Operand::Not(inner, _) | Operand::Neg(inner, _) => operand(inner, scopes, errors),
        Operand::Pair(a, b, _) => {
            operand(a, scopes, errors);
            operand(b, scopes, errors);
        }
        Operand::Vector(v, _) | Operand::List(v, _) | Operand::Tuple(v, _) => {
            v.iter_mut().for_each(|o| operand(o, scopes, errors))
        }
        Operand::Imm(_) | Operand::Address(_) | Operand::Sink(_) => {}
    }
}
