//! The check that runs after parsing: each instruction held against its row of the
//! instruction table ([`crate::instructions`]), so that a misspelled modifier
//! (`ld.volatil`) or an operand of the wrong shape (`ld.global.u32 %r1, %rd1` without
//! brackets) is reported at the offending token with what would have been accepted.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use crate::ast::{Function, Instruction, Item, Module, Operand, Statement};
use crate::diagnostic::Diagnostic;
use crate::instructions::{pattern_matches, InstrSpec, INSTRUCTIONS, TYPES};

/// [`INSTRUCTIONS`] prepared for checking: literal modifiers hashed, patterns apart,
/// operand shapes decoded.
struct Compiled {
    literals: HashSet<&'static str, BuildHasherDefault<Fnv>>,
    patterns: Vec<&'static str>,
    /// `None` for `*` (any operands).
    shapes: Option<Vec<Shape>>,
    required: usize,
}

fn compiled() -> &'static [Compiled] {
    static COMPILED: OnceLock<Vec<Compiled>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        INSTRUCTIONS
            .iter()
            .map(|spec| {
                let mut c = Compiled {
                    literals: HashSet::default(),
                    patterns: Vec::new(),
                    shapes: Some(Vec::new()),
                    required: 0,
                };
                for p in spec.modifiers.iter().flat_map(|g| g.iter()) {
                    if p.contains(['*', '#']) {
                        c.patterns.push(p);
                    } else {
                        c.literals.insert(p);
                    }
                }
                for word in spec.operands.split_whitespace() {
                    let shape = match word.as_bytes().first() {
                        Some(b'*') => {
                            c.shapes = None;
                            break;
                        }
                        Some(b'M') => Shape::Memory,
                        Some(b'L') => Shape::Label,
                        Some(b'X') => Shape::Any,
                        _ => Shape::Value,
                    };
                    if !word.ends_with('?') {
                        c.required += 1;
                    }
                    if let Some(shapes) = &mut c.shapes {
                        shapes.push(shape);
                    }
                }
                c
            })
            .collect()
    })
}

/// FNV-1a: modifiers are short, so a simple hash beats SipHash here.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// Checks every instruction of `module` against the table, appending diagnostics.
pub fn check_module(module: &Module, errors: &mut Vec<Diagnostic>) {
    check_items(&module.items, errors);
}

/// [`check_module`] for some of a module's items.
pub fn check_items(items: &[Item], errors: &mut Vec<Diagnostic>) {
    for item in items {
        if let Item::Function(Function { body: Some(body), .. }) = item {
            check_statements(body, errors);
        }
    }
}

fn check_statements(stmts: &[Statement], errors: &mut Vec<Diagnostic>) {
    for s in stmts {
        match s {
            Statement::Instruction(i) => check_instruction(i, errors),
            Statement::Block(inner, _) => check_statements(inner, errors),
            _ => {}
        }
    }
}

/// Checks one instruction; unknown opcodes are left to semantic analysis.
pub fn check_instruction(i: &Instruction, errors: &mut Vec<Diagnostic>) {
    let Some(op) = i.op else { return };
    let (spec, Some(c)) = (op.spec(), compiled().get(op as usize)) else { return };
    for m in &i.modifiers {
        let accepted = c.literals.contains(m.value.as_str())
            || c.patterns.iter().any(|p| pattern_matches(p, &m.value));
        if !accepted {
            let mut d = Diagnostic::error(
                m.span,
                format!("unknown modifier `{}` for `{}`", m.value, spec.name),
            );
            if let Some(s) = suggestion(spec, &m.value) {
                d = d.with_label(format!("did you mean `{s}`?"));
            }
            errors.push(d.with_note(accepted_note(spec)));
        }
    }
    if let Some(shapes) = &c.shapes {
        check_operands(i, spec, shapes, c.required, errors);
    }
}

/// The closest accepted literal modifier, if it is close enough to be a misspelling.
fn suggestion(spec: &InstrSpec, m: &str) -> Option<&'static str> {
    let mut best: Option<(usize, &'static str)> = None;
    for p in spec.modifiers.iter().flat_map(|g| g.iter()) {
        if p.contains(['*', '#']) {
            continue;
        }
        let d = edit_distance(m, p);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, p));
        }
    }
    // One edit for ordinary lengths, two for long modifiers (`.acquire` → `.aquire`).
    let limit = if m.len() < 8 { 1 } else { 2 };
    best.filter(|(d, _)| *d <= limit).map(|(_, p)| p)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// "`add` takes …": the opcode's non-type modifiers (types are listed by name only).
fn accepted_note(spec: &InstrSpec) -> String {
    let mut names: Vec<&str> = Vec::new();
    let mut types = false;
    for g in spec.modifiers {
        // By content: a `const` used from another module is not one address.
        if *g == TYPES {
            types = true;
            continue;
        }
        for p in g.iter() {
            if !names.contains(p) {
                names.push(p);
            }
        }
    }
    // Patterns read as placeholders: `.const[#]` → `.const[N]`, `.L2::*` → `.L2::…`.
    let names: Vec<String> = names.iter().map(|p| p.replace('#', "N").replace('*', "…")).collect();
    let mut note = format!("`{}` takes", spec.name);
    if types {
        note.push_str(" a type such as `.u32`, `.s64` or `.f32`");
        if !names.is_empty() {
            note.push_str(" and");
        }
    }
    if names.is_empty() && !types {
        note.push_str(" no modifiers");
    } else if !names.is_empty() {
        const SHOWN: usize = 24;
        let shown: Vec<&str> = names.iter().take(SHOWN).map(String::as_str).collect();
        note.push_str(&format!(" the modifiers {}", shown.join(" ")));
        if names.len() > SHOWN {
            note.push_str(" …");
        }
    }
    note
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Value,
    Memory,
    Label,
    Any,
}

fn shape_matches(shape: Shape, op: &Operand) -> bool {
    match shape {
        Shape::Value => !matches!(op, Operand::Address(_) | Operand::Tuple(..) | Operand::List(..)),
        Shape::Memory => matches!(op, Operand::Address(_) | Operand::Tuple(..)),
        Shape::Label => matches!(op, Operand::Name { component: None, .. }),
        Shape::Any => true,
    }
}

fn describe_operand(op: &Operand) -> String {
    match op {
        Operand::Name { name, component: Some(c) } => format!("`{}{}`", name.value, c.value),
        Operand::Name { name, .. } => format!("`{}`", name.value),
        other => describe_other(other).to_string(),
    }
}

fn describe_other(op: &Operand) -> &'static str {
    match op {
        Operand::Name { .. } => "a name",
        Operand::Imm(_) => "a constant",
        Operand::Not(..) => "a negated predicate",
        Operand::Neg(..) => "a negated operand",
        Operand::Vector(..) => "a vector `{…}`",
        Operand::Address(_) => "an address `[…]`",
        Operand::Sink(_) => "`_`",
        Operand::Pair(..) => "a pair `d|p`",
        Operand::List(..) => "a list `(…)`",
        Operand::Tuple(..) => "an operand tuple `[…, {…}]`",
    }
}

fn expected_shape(shape: Shape) -> &'static str {
    match shape {
        Shape::Value => "a register, constant or vector",
        Shape::Memory => "an address such as `[%rd1]` or `[var+8]`",
        Shape::Label => "a label or function name",
        Shape::Any => "an operand",
    }
}

fn check_operands(
    i: &Instruction,
    spec: &InstrSpec,
    shapes: &[Shape],
    required: usize,
    errors: &mut Vec<Diagnostic>,
) {
    if let Some(d) = count_error(i, spec, required, shapes.len()) {
        errors.push(d);
        return;
    }
    for (k, (op, &shape)) in i.operands.iter().zip(shapes).enumerate() {
        if !shape_matches(shape, op) {
            errors.push(
                Diagnostic::error(
                    op.span(),
                    format!(
                        "operand {} of `{}` must be {}, found {}",
                        k + 1,
                        spec.name,
                        expected_shape(shape),
                        describe_operand(op)
                    ),
                )
                .with_label(format!("expected {}", expected_shape(shape))),
            );
        }
    }
}

/// "`add` takes 3 operands, found 2", when `i` has fewer than `required` or more than
/// `max` operands.
fn count_error(
    i: &Instruction,
    spec: &InstrSpec,
    required: usize,
    max: usize,
) -> Option<Diagnostic> {
    let n = i.operands.len();
    if (required..=max).contains(&n) {
        return None;
    }
    let counts =
        if required == max { format!("{required}") } else { format!("{required} to {max}") };
    let span = i.operands.get(max).map_or(i.span, Operand::span);
    let plural = if max == 1 && required == 1 { "" } else { "s" };
    Some(Diagnostic::error(
        span,
        format!("`{}` takes {counts} operand{plural}, found {n}", spec.name),
    ))
}

impl InstrSpec {
    /// The operand count check of [`check_instruction`] alone, for consumers of the AST
    /// that rely on it ([`crate::decode`]): after it, an instruction has at least as
    /// many operands as its shape requires and no more than it allows.
    pub fn check_operand_count(&self, i: &Instruction) -> Result<(), Diagnostic> {
        let Some(c) = compiled().get(self.opcode as usize) else { return Ok(()) };
        match &c.shapes {
            Some(shapes) => count_error(i, self, c.required, shapes.len()).map_or(Ok(()), Err),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn misspelled_modifier_is_reported_with_a_suggestion() {
        let src = ".version 8.0\n.target sm_80\n.address_size 64\n.entry k()\n{\n\tld.volatil.global.u32 %r1, [%rd1];\n\tld.global.u32 %r1, %rd1;\n\tadd.s32 %r1, %r2;\n}\n";
        let errs = crate::parse(src).expect_err("rejected").0;
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert_eq!(errs[0].message, "unknown modifier `.volatil` for `ld`");
        assert_eq!(errs[0].label, "did you mean `.volatile`?");
        assert!(
            errs[1].message.starts_with("operand 2 of `ld` must be an address"),
            "{}",
            errs[1].message
        );
        assert_eq!(errs[2].message, "`add` takes 3 operands, found 2");
    }
}
