//! `var[i]` operands (PTX ISA 9.2 §6.4.2, "Arrays as Operands"): the index counts
//! elements of the array, so `a[3]` of a `.b32` array is `[a+12]` (as ptxas assembles
//! it). The parser does not know the array's type where it reads the operand (the
//! declaration may come later, at module scope), so this pass scales the indices of a
//! parsed module to byte offsets, resolving each name in its scope.

use std::collections::BTreeMap;

use crate::ast::{Module, Operand, Param, Statement, VarDecl, VarType};
use crate::diagnostic::Diagnostic;
use crate::span::Name;

type Scope = BTreeMap<Name, i64>;

/// Rewrites every `var[i]` of `module` to the byte offset of element `i`.
pub(crate) fn scale_element_indices(module: &mut Module, errors: &mut Vec<Diagnostic>) {
    let mut scopes = vec![Scope::new()];
    for item in &module.items {
        if let crate::ast::Item::Variable(v) = item {
            declare(&mut scopes, v);
        }
    }
    for item in &mut module.items {
        let crate::ast::Item::Function(f) = item else { continue };
        let Some(body) = &mut f.body else { continue };
        let mut params = Scope::new();
        for p in f.params.iter().chain(&f.returns) {
            insert_names(&mut params, p);
        }
        scopes.push(params);
        statements(body, &mut scopes, errors);
        scopes.pop();
    }
}

/// Bytes of one element of `v`.
fn element_bytes(v: &VarDecl) -> i64 {
    let scalar = match v.ty.value {
        VarType::Scalar(t) => i64::from(t.bytes()),
        // Opaque handles are 64-bit.
        VarType::TexRef | VarType::SamplerRef | VarType::SurfRef => 8,
    };
    scalar * i64::from(v.vector.unwrap_or(1))
}

fn insert_names(scope: &mut Scope, v: &Param) {
    for n in &v.names {
        scope.insert(n.name.value.clone(), element_bytes(v));
    }
}

fn declare(scopes: &mut [Scope], v: &VarDecl) {
    if let Some(scope) = scopes.last_mut() {
        insert_names(scope, v);
    }
}

fn statements(stmts: &mut [Statement], scopes: &mut Vec<Scope>, errors: &mut Vec<Diagnostic>) {
    for s in stmts {
        match s {
            Statement::Variable(v) => declare(scopes, v),
            Statement::Instruction(i) => {
                for op in &mut i.operands {
                    operand(op, scopes, errors);
                }
            }
            Statement::Block(inner, _) => {
                scopes.push(Scope::new());
                statements(inner, scopes, errors);
                scopes.pop();
            }
            Statement::Label(_) | Statement::Directive(_) => {}
        }
    }
}

fn operand(op: &mut Operand, scopes: &[Scope], errors: &mut Vec<Diagnostic>) {
    match op {
        Operand::Address(a) if a.element_index => {
            a.element_index = false;
            let Some(base) = &a.base else { return };
            match scopes.iter().rev().find_map(|s| s.get(&base.value)) {
                Some(&bytes) => a.offset = a.offset.wrapping_mul(bytes),
                None => errors.push(Diagnostic::error(
                    base.span,
                    format!(
                        "`{}[…]` indexes an array, but `{}` is not a declared variable",
                        base.value, base.value
                    ),
                )),
            }
        }
        Operand::Vector(v, _) | Operand::List(v, _) | Operand::Tuple(v, _) => {
            v.iter_mut().for_each(|o| operand(o, scopes, errors))
        }
        Operand::Not(inner, _) | Operand::Neg(inner, _) => operand(inner, scopes, errors),
        Operand::Pair(a, b, _) => {
            operand(a, scopes, errors);
            operand(b, scopes, errors);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::{Item, Operand, Statement};

    fn address_offset(stmts: &[Statement]) -> Option<i64> {
        stmts.iter().find_map(|s| match s {
            Statement::Instruction(i) => i.operands.iter().find_map(|op| match op {
                Operand::Address(a) => {
                    assert!(!a.element_index);
                    Some(a.offset)
                }
                _ => None,
            }),
            Statement::Block(inner, _) => address_offset(inner),
            _ => None,
        })
    }

    fn first_address_offset(src: &str) -> i64 {
        let module = crate::parse(src).expect("parses");
        module
            .items
            .iter()
            .find_map(|item| match item {
                Item::Function(f) => address_offset(f.body.as_deref().unwrap_or(&[])),
                _ => None,
            })
            .expect("an address operand")
    }

    #[test]
    fn an_index_counts_elements_of_the_array_declared_in_scope() {
        let head = ".version 7.0\n.target sm_70\n.address_size 64\n";
        // A module-scope `.b32` array declared after its use.
        let later = format!(
            "{head}.entry k() {{ .reg .b32 %r; mov.u32 %r, g[3]; ret; }}\n.global .b32 g[8];\n"
        );
        assert_eq!(first_address_offset(&later), 12);
        // An inner `.v2 .f64` array hides an outer `.b8` one of the same name.
        let inner = format!(
            "{head}.global .b8 a[64];\n.entry k() {{ .reg .b64 %rd; {{ .local .v2 .f64 a[4]; \
             ld.local.f64 %rd, a[2]; }} ret; }}\n"
        );
        assert_eq!(first_address_offset(&inner), 32);
    }
}
