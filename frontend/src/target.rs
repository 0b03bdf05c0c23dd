//! The instruction forms that need a newer target than the module's `.target` (each
//! instruction's *Target ISA Notes* in PTX ISA 9.2): refused at the instruction, so
//! that a kernel tested with ptxvk does not use a form NVIDIA's assembler rejects for
//! its target. A module without an `sm_XX` target is not checked.
//!
//! The forms: `atom` and `red` with a vector type (`.v2`, `.v4`, `.v8`) need sm_90
//! (§9.7.13.5-6).

use crate::ast::{Function, Instruction, Item, Module, Statement};
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode;

/// The `XX` of the module's `sm_XX` target (`sm_90a` is 90), if it names one.
fn sm_version(module: &Module) -> Option<u32> {
    module.target.iter().find_map(|t| {
        let digits = t.value.strip_prefix("sm_")?;
        let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
        digits[..end].parse().ok()
    })
}

/// The `sm_XX` that `i` needs, with the section that says so, for the forms above.
fn needs(i: &Instruction) -> Option<(u32, &'static str)> {
    // The decoded vector size (an instruction whose modifiers do not decode is reported
    // by the instruction check, not here).
    let vector = || {
        crate::decode::decode(i).ok().flatten().is_some_and(|m| matches!(m.vector, Some(2 | 4 | 8)))
    };
    match i.op? {
        Opcode::Atom if vector() => Some((90, "§9.7.13.5")),
        Opcode::Red if vector() => Some((90, "§9.7.13.6")),
        _ => None,
    }
}

/// Checks every instruction of `module` against its target, appending diagnostics.
pub fn check_module(module: &Module, errors: &mut Vec<Diagnostic>) {
    let Some(sm) = sm_version(module) else { return };
    for item in &module.items {
        if let Item::Function(Function { body: Some(body), .. }) = item {
            check_statements(body, sm, errors);
        }
    }
}

fn check_statements(stmts: &[Statement], sm: u32, errors: &mut Vec<Diagnostic>) {
    for s in stmts {
        match s {
            Statement::Instruction(i) => {
                if let Some((needed, section)) = needs(i).filter(|&(n, _)| n > sm) {
                    let name: String = std::iter::once(i.opcode.value.as_str())
                        .chain(i.modifiers.iter().map(|m| m.value.as_str()))
                        .collect();
                    errors.push(Diagnostic::error(
                        i.span,
                        format!(
                            "`{name}` needs `.target sm_{needed}` or higher (PTX ISA 9.2 \
                             {section}, Target ISA Notes); the module's target is sm_{sm}"
                        ),
                    ));
                }
            }
            Statement::Block(inner, _) => check_statements(inner, sm, errors),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::parse;

    fn module(target: &str, line: &str) -> String {
        format!(
            ".version 8.5\n.target {target}\n.address_size 64\n.entry k()\n{{\n\
             .reg .f32 %f<5>;\n.reg .b16 %h<3>;\n.reg .b64 %rd<2>;\n\t{line}\n}}\n"
        )
    }

    /// ptxas (CUDA 13) refuses these with `.target sm_80`: "Feature 'atom instruction
    /// with vector types' requires .target sm_90 or higher".
    #[test]
    fn vector_atomics_need_sm_90() {
        let lines = [
            "atom.global.v2.f32.add {%f1, %f2}, [%rd1], {%f3, %f4};",
            "red.global.add.noftz.v2.f16 [%rd1], {%h1, %h2};",
        ];
        for line in lines {
            let errors = parse(&module("sm_80", line)).expect_err("refused on sm_80").0;
            assert_eq!(errors.len(), 1, "{line}: {errors:?}");
            let message = &errors[0].message;
            assert!(message.contains("needs `.target sm_90` or higher"), "{message}");
            assert!(message.contains("target is sm_80"), "{message}");
            let opcode = &line[..line.find(' ').unwrap_or(line.len())];
            assert!(message.contains(&format!("`{opcode}`")), "{message}");
            for target in ["sm_90", "sm_90a", "sm_100", "texmode_independent"] {
                parse(&module(target, line)).unwrap_or_else(|e| panic!("{target} {line}: {e:?}"));
            }
        }
        // Scalar atomics have no such requirement.
        parse(&module("sm_80", "atom.global.add.f32 %f1, [%rd1], %f2;")).expect("scalar atom");
    }
}
