//! Libraries: modules of device functions without a kernel (`.entry`), which are link
//! inputs (`nvcc -rdc`, `cuLinkAddData`), not programs. ptxvk lowers device functions
//! by inlining them into the kernels that call them, so a library is checked through
//! a harness: one kernel per defined function that calls it with arguments of its
//! parameters' types ([`harness`]).

use crate::ast::{Function, Instruction, Item, Module, Operand, Param, Statement};
use crate::instructions::Opcode;
use crate::span::{Name, Spanned};

/// The name of the harness kernel of function `name`.
pub fn harness_kernel_name(name: &str) -> String {
    format!("__ptxvk_library_check_{name}")
}

/// Whether the module has a kernel with a body.
pub fn has_kernels(module: &Module) -> bool {
    module.items.iter().any(|i| matches!(i, Item::Function(f) if f.is_entry && f.body.is_some()))
}

/// The functions a library defines (with a body), in source order.
pub fn defined_functions(module: &Module) -> Vec<&Function> {
    module
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Function(f) if !f.is_entry && f.body.is_some() => Some(f),
            _ => None,
        })
        .collect()
}

/// `module` with one kernel per defined device function that declares an argument
/// for each of its parameters and results (same space, type, alignment and array
/// shape; their values do not matter for checking) and calls it. The spans are the
/// function's, so a diagnostic points into the library.
pub fn harness(module: &Module) -> Module {
    let mut out = module.clone();
    for f in defined_functions(module) {
        let span = f.name.span;
        let rename = |p: &Param, prefix: &str, i: usize| -> (Param, Vec<Operand>) {
            let mut decl = p.clone();
            let mut names = Vec::new();
            for (j, n) in decl.names.iter_mut().enumerate() {
                n.name.value = Name::from(format!("%__{prefix}{i}_{j}"));
                n.init = None;
                names.push(Operand::Name { name: n.name.clone(), component: None });
            }
            (decl, names)
        };
        let mut body = Vec::new();
        let mut list = |params: &[Param], prefix: &str| {
            let mut ops = Vec::new();
            for (i, p) in params.iter().enumerate() {
                let (decl, names) = rename(p, prefix, i);
                body.push(Statement::Variable(decl));
                ops.extend(names);
            }
            ops
        };
        let rets = list(&f.returns, "ret");
        let args = list(&f.params, "arg");
        let mut operands = Vec::new();
        if !f.returns.is_empty() {
            operands.push(Operand::List(rets, span));
        }
        operands.push(Operand::Name { name: f.name.clone(), component: None });
        operands.push(Operand::List(args, span));
        let instruction = |name: &str, op: Opcode, operands: Vec<Operand>| {
            Statement::Instruction(Instruction {
                span,
                guard: None,
                opcode: Spanned::new(Name::from(name), span),
                op: Some(op),
                modifiers: Vec::new(),
                operands,
            })
        };
        body.push(instruction("call", Opcode::Call, operands));
        body.push(instruction("ret", Opcode::Ret, Vec::new()));
        out.items.push(Item::Function(Function {
            span: f.span,
            linkage: None,
            is_entry: true,
            name: Spanned::new(Name::from(harness_kernel_name(&f.name.value)), span),
            attribute_specs: Vec::new(),
            returns: Vec::new(),
            params: Vec::new(),
            attributes: Vec::new(),
            body: Some(body),
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_calls_each_defined_function_with_arguments_of_its_types() {
        let src = ".version 7.0\n.target sm_70\n.address_size 64\n\
                   .extern .func g(.param .b32 x);\n\
                   .visible .func (.reg .b32 r) f(.reg .b32 a, .param .align 8 .b8 s[16])\n\
                   {\n add.s32 r, a, 1;\n ret;\n}\n";
        let module = crate::parse(src).expect("parses");
        assert!(!has_kernels(&module));
        let text = crate::print(&harness(&module));
        assert!(text.contains(".entry __ptxvk_library_check_f"), "{text}");
        assert!(!text.contains("__ptxvk_library_check_g"), "{text}");
        assert!(text.contains(".reg .b32 %__ret0_0"), "{text}");
        assert!(text.contains(".param .align 8 .b8 %__arg1_0[16]"), "{text}");
        assert!(text.contains("(%__ret0_0), f, (%__arg0_0, %__arg1_0)"), "{text}");
        // The harness is PTX that parses again.
        assert!(has_kernels(&crate::parse(&text).expect("reparses")));
    }
}
