//! The linker: several parsed PTX modules become one (PTX ISA 9.2 §11.6, linking
//! directives).
//!
//! ptxvk inlines every call, so linking is a source-level merge: the modules' items are
//! joined in order into one [`Module`] that the middle end compiles as if it had been
//! written as one file. Spans stay valid because the modules were parsed from one
//! [`crate::SourceMap`], so a diagnostic about the linked module still names the file it
//! came from.
//!
//! Symbols follow §11.6:
//! - `.visible` functions and variables, and every `.entry`, are *strong* definitions,
//!   visible to other modules; two of one name are an error naming both.
//! - `.weak` definitions are visible; a strong definition replaces them, and among weak
//!   ones the first (in input order) is kept.
//! - `.common` variables (`.global` only) are visible; the largest is kept, and a strong
//!   or weak definition replaces them.
//! - `.extern` variables and function prototypes (no body) are declarations, resolved to
//!   the definition of their name. A `.global`/`.const` variable no module defines is an
//!   error; an `.extern .shared` array no module defines is CUDA's dynamic shared memory
//!   and stays a declaration, as does a function without a definition anywhere (a
//!   system call such as `vprintf`, or an error where it is called).
//! - Symbols without a linking directive are internal to their module. One whose name
//!   another module also uses is renamed (`name$m<k>`), with every use inside its module
//!   except where a function declares a local of the same name.
//! - A name that is a function in one module and a variable in another, or a variable
//!   declared in two state spaces, is an error naming both sites. Functions link by
//!   name, as CUDA's linker links them: each call is checked against the definition
//!   where it is inlined.
//!
//! The linked module's `.version` is the highest, its `.target` the highest `sm_XX` plus
//! every other target option, and all modules must agree on `.address_size`.
//! With several modules, their `.file` numbers are renumbered to stay distinct and their
//! DWARF `.section`s are dropped (ptxvk does not read them; merged they would be invalid).

use std::collections::{BTreeMap, BTreeSet};

use crate::ast::{
    DeclName, DirectiveKind, Expr, ExprKind, Function, Initializer, Item, Linkage, Module, Operand,
    StateSpace, Statement, VarDecl,
};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::span::{Ident, Name, Span};

/// Links `modules` (in the order given) into one module.
///
/// One module is checked (duplicate definitions, undefined `.extern` variables) and
/// returned as it is.
pub fn link(modules: Vec<Module>) -> Result<Module, Diagnostics> {
    let several = modules.len() > 1;
    let mut modules: Vec<Module> =
        if several { modules.into_iter().map(split_declarations).collect() } else { modules };
    let mut errors = Vec::new();
    let symbols = collect(&modules);
    let resolved = resolve(&symbols, &mut errors);
    let header = merge_headers(&modules, &mut errors);
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    if !several {
        return Ok(modules.pop().unwrap_or_default());
    }
    let renames = internal_renames(&modules, &symbols);
    let mut out = header;
    let mut file_base = 0;
    for (m, module) in modules.iter_mut().enumerate() {
        if let Some(map) = renames.get(&m) {
            rename_module(module, map);
        }
        let mut last_file = 0;
        for (i, mut item) in std::mem::take(&mut module.items).into_iter().enumerate() {
            if resolved.dropped.contains(&(m, i)) {
                continue;
            }
            if several {
                match &mut item {
                    Item::Directive(d) if matches!(d.kind, DirectiveKind::Section(_)) => continue,
                    Item::Directive(d) => renumber_directive(d, file_base, &mut last_file),
                    Item::Function(f) => {
                        f.body.iter_mut().flatten().for_each(|s| renumber(s, file_base));
                    }
                    Item::Variable(_) => {}
                }
            }
            if let (Some(align), Item::Variable(v)) = (resolved.align.get(&(m, i)), &mut item) {
                if let Some(a) = &mut v.align {
                    a.value = *align;
                }
            }
            out.items.push(item);
        }
        file_base += last_file;
    }
    Ok(out)
}

/// Gives every kernel of `module` a `.maxnreg` of at most `n` (§11.4.4), as a JIT's
/// `CU_JIT_MAX_REGISTERS` option asks.
pub fn cap_registers(module: &mut Module, n: u32) {
    for item in &mut module.items {
        let Item::Function(f) = item else { continue };
        if !f.is_entry || f.body.is_none() {
            continue;
        }
        let existing = f.attributes.iter_mut().find_map(|d| match &mut d.kind {
            DirectiveKind::Tuning { name, values } if name.value == ".maxnreg" => Some(values),
            _ => None,
        });
        match existing {
            Some(values) => values.iter_mut().for_each(|v| v.value = v.value.min(n)),
            None => f.attributes.push(crate::ast::Directive {
                kind: DirectiveKind::Tuning {
                    name: Ident::new(Name::from(".maxnreg"), f.name.span),
                    values: vec![crate::span::Spanned::new(n, f.name.span)],
                },
                span: f.name.span,
            }),
        }
    }
}

/// What a symbol occurrence is (§11.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Strong,
    Weak,
    Common,
    Declaration,
    Internal,
}

/// Function or variable, with what must agree between declaration and definition.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Function { params: Vec<u64>, returns: Vec<u64> },
    Variable(StateSpace),
}

/// One module-scope symbol occurrence: module index, item index, role and name site.
#[derive(Clone, Debug)]
struct Occurrence {
    module: usize,
    item: usize,
    role: Role,
    kind: Kind,
    span: Span,
    /// Bytes of a variable (0 for unsized and functions), for `.common`.
    size: u64,
    align: Option<u32>,
}

/// Every module-scope symbol by name, in input order.
type Symbols = BTreeMap<Name, Vec<Occurrence>>;

/// Declarations of several names (`.global .u32 a, b;`) become one per name, so that
/// each name can be kept, dropped or renamed on its own.
fn split_declarations(mut module: Module) -> Module {
    let items = std::mem::take(&mut module.items);
    for item in items {
        match item {
            Item::Variable(v) if v.names.len() > 1 => {
                for n in &v.names {
                    module
                        .items
                        .push(Item::Variable(VarDecl { names: vec![n.clone()], ..v.clone() }));
                }
            }
            other => module.items.push(other),
        }
    }
    module
}

/// Bytes of one declared name (0 when unsized).
fn bytes_of(v: &VarDecl, n: &DeclName) -> u64 {
    let elem = v.ty.value.scalar().map_or(0, |t| u64::from(t.bytes()));
    let count: u64 = n.dims.iter().map(|d| d.unwrap_or(0)).product();
    elem * u64::from(v.vector.unwrap_or(1)) * count
}

/// Bytes of a parameter (its first name).
fn param_bytes(p: &VarDecl) -> u64 {
    p.names.first().map_or(0, |n| bytes_of(p, n))
}

fn collect(modules: &[Module]) -> Symbols {
    let mut symbols = Symbols::new();
    for (m, module) in modules.iter().enumerate() {
        for (i, item) in module.items.iter().enumerate() {
            match item {
                Item::Function(f) => {
                    let o = function_occurrence(m, i, f);
                    symbols.entry(f.name.value.clone()).or_default().push(o);
                }
                Item::Variable(v) => {
                    let role = match v.linkage {
                        Some(Linkage::Visible) => Role::Strong,
                        Some(Linkage::Weak) => Role::Weak,
                        Some(Linkage::Common) => Role::Common,
                        Some(Linkage::Extern) => Role::Declaration,
                        None => Role::Internal,
                    };
                    for n in &v.names {
                        let o = Occurrence {
                            module: m,
                            item: i,
                            role,
                            kind: Kind::Variable(v.space),
                            span: n.name.span,
                            size: bytes_of(v, n),
                            align: v.align.as_ref().map(|a| a.value),
                        };
                        symbols.entry(n.name.value.clone()).or_default().push(o);
                    }
                }
                Item::Directive(_) => {}
            }
        }
    }
    symbols
}

fn function_occurrence(module: usize, item: usize, f: &Function) -> Occurrence {
    let role = match (f.body.is_some(), f.linkage) {
        (false, _) => Role::Declaration,
        (true, Some(Linkage::Weak)) => Role::Weak,
        // Kernels are visible to the host whatever their directive says.
        (true, Some(_)) => Role::Strong,
        (true, None) if f.is_entry => Role::Strong,
        (true, None) => Role::Internal,
    };
    let shape = |ps: &[VarDecl]| ps.iter().map(param_bytes).collect();
    Occurrence {
        module,
        item,
        role,
        kind: Kind::Function { params: shape(&f.params), returns: shape(&f.returns) },
        span: f.name.span,
        size: 0,
        align: None,
    }
}

/// The outcome of symbol resolution: items to leave out, and alignments to raise.
#[derive(Default)]
struct Resolved {
    dropped: BTreeSet<(usize, usize)>,
    align: BTreeMap<(usize, usize), u32>,
}

fn resolve(symbols: &Symbols, errors: &mut Vec<Diagnostic>) -> Resolved {
    let mut out = Resolved::default();
    for (name, all) in symbols {
        let visible: Vec<&Occurrence> = all.iter().filter(|o| o.role != Role::Internal).collect();
        let Some(first) = visible.first() else { continue };
        if let Some(d) = disagreement(name, &visible) {
            errors.push(d);
            continue;
        }
        let strong: Vec<_> = visible.iter().filter(|o| o.role == Role::Strong).collect();
        if let [a, b, ..] = strong.as_slice() {
            errors.push(
                Diagnostic::error(b.span, format!("`{name}` is defined more than once"))
                    .with_label("defined again here")
                    .with_secondary(a.span, "first defined here"),
            );
            continue;
        }
        let winner = strong
            .first()
            .copied()
            .or_else(|| visible.iter().find(|o| o.role == Role::Weak))
            .or_else(|| {
                // The largest `.common` variable; the first of equal ones.
                let commons = visible.iter().filter(|o| o.role == Role::Common);
                commons.fold(None, |best: Option<&&Occurrence>, o| match best {
                    Some(b) if b.size >= o.size => Some(b),
                    _ => Some(o),
                })
            });
        let keep = match winner {
            Some(w) => w,
            None => {
                if first.kind == Kind::Variable(StateSpace::Global)
                    || first.kind == Kind::Variable(StateSpace::Const)
                {
                    errors.push(
                        Diagnostic::error(first.span, format!("`{name}` is never defined"))
                            .with_label("declared `.extern` here")
                            .with_note("no module being linked defines it with `.visible`, `.weak` or `.common`"),
                    );
                    continue;
                }
                // Dynamic shared memory and functions without a body anywhere: one
                // declaration stays, with the strictest alignment asked for.
                if let Some(a) = visible.iter().filter_map(|o| o.align).max() {
                    out.align.insert((first.module, first.item), a);
                }
                first
            }
        };
        for o in &visible {
            if (o.module, o.item) != (keep.module, keep.item) {
                out.dropped.insert((o.module, o.item));
            }
        }
    }
    out
}

/// The first pair of occurrences of `name` that disagree on what it is, as an error.
fn disagreement(name: &str, visible: &[&Occurrence]) -> Option<Diagnostic> {
    let first = visible.first()?;
    let other = visible.iter().find(|o| match (&o.kind, &first.kind) {
        (Kind::Variable(a), Kind::Variable(b)) => a != b,
        (Kind::Function { .. }, Kind::Function { .. }) => false,
        _ => true,
    })?;
    let what = |k: &Kind| match k {
        Kind::Function { params, returns } => {
            format!("a function of {} parameter(s) and {} result(s)", params.len(), returns.len())
        }
        Kind::Variable(space) => format!("a `{}` variable", space.directive()),
    };
    Some(
        Diagnostic::error(other.span, format!("`{name}` is declared as two different things"))
            .with_label(format!("{} here", what(&other.kind)))
            .with_secondary(first.span, format!("{} here", what(&first.kind))),
    )
}

/// The linked module's header: highest version, merged targets, one address size.
fn merge_headers(modules: &[Module], errors: &mut Vec<Diagnostic>) -> Module {
    let mut out = Module::default();
    for m in modules {
        if let Some(v) = &m.version {
            if out.version.as_ref().is_none_or(|o| o.value < v.value) {
                out.version = Some(v.clone());
            }
        }
        if let (Some(a), Some(b)) = (&out.address_size, &m.address_size) {
            if a.value != b.value {
                errors.push(
                    Diagnostic::error(
                        b.span,
                        "modules with different address sizes cannot be linked",
                    )
                    .with_label(format!("{}-bit here", b.value))
                    .with_secondary(a.span, format!("{}-bit here", a.value)),
                );
            }
        } else if out.address_size.is_none() {
            out.address_size = m.address_size.clone();
        }
        for t in &m.target {
            let sm = |s: &str| {
                s.strip_prefix("sm_")
                    .and_then(|r| r.trim_end_matches(['a', 'f']).parse::<u32>().ok())
            };
            match sm(&t.value) {
                Some(n) => match out.target.iter_mut().find(|o| sm(&o.value).is_some()) {
                    Some(o) if sm(&o.value) < Some(n) => *o = t.clone(),
                    Some(_) => {}
                    None => out.target.insert(0, t.clone()),
                },
                None if out.target.iter().any(|o| o.value == t.value) => {}
                None => out.target.push(t.clone()),
            }
        }
    }
    out
}

/// For each module, the new names of its internal symbols that collide with a name of
/// another module.
fn internal_renames(
    modules: &[Module],
    symbols: &Symbols,
) -> BTreeMap<usize, BTreeMap<Name, Name>> {
    let mut out: BTreeMap<usize, BTreeMap<Name, Name>> = BTreeMap::new();
    if modules.len() < 2 {
        return out;
    }
    let taken: BTreeSet<&Name> = symbols.keys().collect();
    let mut fresh_names: BTreeSet<Name> = BTreeSet::new();
    for (name, all) in symbols {
        let internal: Vec<&Occurrence> = all.iter().filter(|o| o.role == Role::Internal).collect();
        let shared = all.iter().any(|o| o.role != Role::Internal);
        // Everyone but the first internal owner is renamed when the name is shared;
        // when a visible symbol has the name, every internal one is.
        let skip = usize::from(!shared);
        for o in internal.iter().skip(skip) {
            let mut k = o.module;
            let fresh = loop {
                let candidate = Name::from(format!("{name}$m{k}"));
                if !taken.contains(&candidate) && !fresh_names.contains(&candidate) {
                    break candidate;
                }
                k += modules.len();
            };
            fresh_names.insert(fresh.clone());
            out.entry(o.module).or_default().insert(name.clone(), fresh);
        }
    }
    out
}

/// Renames module-scope symbols of one module, with every use of them.
fn rename_module(module: &mut Module, map: &BTreeMap<Name, Name>) {
    for item in &mut module.items {
        match item {
            Item::Function(f) => {
                if let Some(new) = map.get(&f.name.value) {
                    f.name.value = new.clone();
                }
                // A function's own declarations hide module-scope names.
                let mut local = BTreeSet::new();
                f.params.iter().chain(&f.returns).for_each(|p| declared(p, &mut local));
                f.body.iter().flatten().for_each(|s| declared_in(s, &mut local));
                let inner: BTreeMap<Name, Name> = map
                    .iter()
                    .filter(|(k, _)| !local.contains(*k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                f.body.iter_mut().flatten().for_each(|s| rename_statement(s, &inner));
                f.attributes.iter_mut().for_each(|d| rename_directive(&mut d.kind, &inner));
            }
            Item::Variable(v) => rename_variable(v, map),
            Item::Directive(d) => rename_directive(&mut d.kind, map),
        }
    }
}

fn declared(v: &VarDecl, out: &mut BTreeSet<Name>) {
    out.extend(v.names.iter().map(|n| n.name.value.clone()));
}

fn declared_in(s: &Statement, out: &mut BTreeSet<Name>) {
    match s {
        Statement::Variable(v) => declared(v, out),
        Statement::Block(b, _) => b.iter().for_each(|s| declared_in(s, out)),
        _ => {}
    }
}

fn rename_variable(v: &mut VarDecl, map: &BTreeMap<Name, Name>) {
    for n in &mut v.names {
        if let Some(new) = map.get(&n.name.value) {
            n.name.value = new.clone();
        }
        if let Some(init) = &mut n.init {
            rename_initializer(init, map);
        }
    }
}

fn rename_initializer(init: &mut Initializer, map: &BTreeMap<Name, Name>) {
    match init {
        Initializer::Expr(e) => rename_expr(e, map),
        Initializer::List(items, _) => items.iter_mut().for_each(|i| rename_initializer(i, map)),
        Initializer::Fields(fields, _) => fields.iter_mut().for_each(|(_, e)| rename_expr(e, map)),
    }
}

fn rename_expr(e: &mut Expr, map: &BTreeMap<Name, Name>) {
    match &mut e.kind {
        ExprKind::Symbol(s) | ExprKind::Generic(s) => {
            if let Some(new) = map.get(s) {
                *s = new.clone();
            }
        }
        ExprKind::Unary(_, a) | ExprKind::Cast { expr: a, .. } | ExprKind::Mask { expr: a, .. } => {
            rename_expr(a, map)
        }
        ExprKind::Binary(_, a, b) => {
            rename_expr(a, map);
            rename_expr(b, map);
        }
        ExprKind::Ternary(a, b, c) => {
            rename_expr(a, map);
            rename_expr(b, map);
            rename_expr(c, map);
        }
        ExprKind::Int { .. } | ExprKind::F32Bits(_) | ExprKind::F64Bits(_) => {}
    }
}

fn rename_operand(op: &mut Operand, map: &BTreeMap<Name, Name>) {
    match op {
        Operand::Name { name, .. } => {
            if let Some(new) = map.get(&name.value) {
                name.value = new.clone();
            }
        }
        Operand::Address(a) => {
            if let Some(b) = &mut a.base {
                if let Some(new) = map.get(&b.value) {
                    b.value = new.clone();
                }
            }
        }
        Operand::Imm(e) => rename_expr(e, map),
        Operand::Not(o, _) | Operand::Neg(o, _) => rename_operand(o, map),
        Operand::Pair(a, b, _) => {
            rename_operand(a, map);
            rename_operand(b, map);
        }
        Operand::Vector(v, _) | Operand::List(v, _) | Operand::Tuple(v, _) => {
            v.iter_mut().for_each(|o| rename_operand(o, map))
        }
        Operand::Sink(_) => {}
    }
}

fn rename_statement(s: &mut Statement, map: &BTreeMap<Name, Name>) {
    match s {
        Statement::Instruction(i) => i.operands.iter_mut().for_each(|o| rename_operand(o, map)),
        Statement::Block(b, _) => b.iter_mut().for_each(|s| rename_statement(s, map)),
        Statement::Directive(d) => rename_directive(&mut d.kind, map),
        Statement::Variable(v) => {
            for n in &mut v.names {
                if let Some(init) = &mut n.init {
                    rename_initializer(init, map);
                }
            }
        }
        Statement::Label(_) => {}
    }
}

fn rename_directive(d: &mut DirectiveKind, map: &BTreeMap<Name, Name>) {
    let rename = |n: &mut crate::span::Ident| {
        if let Some(new) = map.get(&n.value) {
            n.value = new.clone();
        }
    };
    match d {
        DirectiveKind::CallTargets { targets, .. } => targets.iter_mut().for_each(rename),
        DirectiveKind::Alias { alias, aliasee } => {
            rename(alias);
            rename(aliasee);
        }
        _ => {}
    }
}

/// Moves a module-level `.file`/`.loc` directive's file numbers past the previous
/// modules' (`base`), noting the largest number seen.
fn renumber_directive(d: &mut crate::ast::Directive, base: u32, last: &mut u32) {
    match &mut d.kind {
        DirectiveKind::File { index, .. } => {
            *last = (*last).max(*index);
            *index += base;
        }
        DirectiveKind::Loc(loc) => {
            loc.file += base;
            loc.function_name = None;
            if let Some(at) = &mut loc.inlined_at {
                at.0 += base;
            }
        }
        _ => {}
    }
}

/// [`renumber_directive`] for the `.loc` directives of a function body. Their
/// `function_name` labels point into the dropped `.debug_str` sections, so they go.
fn renumber(s: &mut Statement, base: u32) {
    match s {
        Statement::Directive(d) => renumber_directive(d, base, &mut 0),
        Statement::Block(b, _) => b.iter_mut().for_each(|s| renumber(s, base)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SourceMap;

    const HEAD: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";

    /// Parses and links `files` (each given without its header).
    fn link_texts(files: &[&str]) -> (SourceMap, Result<Module, Diagnostics>) {
        let texts: Vec<String> = files.iter().map(|f| format!("{HEAD}{f}")).collect();
        let map = SourceMap::new(texts.iter().enumerate().map(|(i, t)| (format!("m{i}.ptx"), t)));
        let modules = (0..map.len()).map(|i| crate::parse_file(&map, i).expect("parses")).collect();
        let linked = link(modules);
        (map, linked)
    }

    fn names(m: &Module) -> Vec<String> {
        m.items
            .iter()
            .filter_map(|i| match i {
                Item::Function(f) => {
                    Some(format!("{}{}", f.name.value, if f.body.is_some() { "{}" } else { ";" }))
                }
                Item::Variable(v) => Some(v.names[0].name.value.to_string()),
                Item::Directive(_) => None,
            })
            .collect()
    }

    fn errors(files: &[&str]) -> String {
        let (map, linked) = link_texts(files);
        map.render(&linked.expect_err("the link fails").0)
    }

    #[test]
    fn declarations_resolve_to_the_definition_in_another_module() {
        let (_, linked) = link_texts(&[
            ".extern .func f();\n.extern .global .u32 g;\n.visible .entry k() { call f; ret; }\n",
            ".visible .global .u32 g;\n.visible .func f() { ret; }\n",
        ]);
        assert_eq!(names(&linked.expect("links")), ["k{}", "g", "f{}"]);
    }

    #[test]
    fn strong_beats_weak_and_the_largest_common_is_kept() {
        let (_, linked) = link_texts(&[
            ".weak .func f() { ret; }\n.common .global .u32 c[2];\n",
            ".visible .func f() { exit; }\n.common .global .u32 c[8];\n.common .global .u32 d[4];\n",
            ".common .global .u32 d[2];\n.weak .func f() { trap; }\n",
        ]);
        let m = linked.expect("links");
        assert_eq!(names(&m), ["f{}", "c", "d"]);
        let Some(Item::Function(f)) = m.items.first() else { panic!("f first") };
        let Some(Statement::Instruction(i)) = f.body.as_ref().and_then(|b| b.first()) else {
            panic!("a body")
        };
        assert_eq!(i.opcode.value, "exit", "the strong definition's body");
        let sizes: Vec<Option<u64>> = m
            .items
            .iter()
            .filter_map(|i| {
                match i {
                    Item::Variable(v) => v.names[0].dims[0],
                    _ => None,
                }
                .map(Some)
            })
            .collect();
        assert_eq!(sizes, [Some(8), Some(4)]);
    }

    #[test]
    fn internal_names_that_collide_are_renamed_with_their_uses_but_not_shadowing_locals() {
        let (_, linked) = link_texts(&[
            ".global .u32 t;\n.func h() { ret; }\n.visible .entry a() { call h; st.global.u32 [t], 1; ret; }\n",
            ".global .u32 t;\n.func h() { ret; }\n.visible .entry b() { .reg .b64 t; call h; mov.u64 t, 0; ld.global.u32 %r1, [t]; ret; }\n",
        ]);
        let m = linked.expect("links");
        assert_eq!(names(&m), ["t", "h{}", "a{}", "t$m1", "h$m1{}", "b{}"]);
        let printed = crate::print(&m);
        assert!(
            printed.contains("call.uni \th$m1;") || printed.contains("call \th$m1;"),
            "{printed}"
        );
        // `b` declares its own `t`: its uses are the local register, not renamed.
        assert!(printed.contains("mov.u64 \tt, 0;"), "{printed}");
        assert!(printed.contains("st.global.u32 \t[t], 1;"), "{printed}");
    }

    #[test]
    fn a_duplicate_definition_names_both_sites() {
        let text = errors(&[".visible .func f() { ret; }\n", ".visible .func f() { ret; }\n"]);
        assert!(text.contains("`f` is defined more than once"), "{text}");
        assert!(text.contains("m1.ptx:4:16") && text.contains("m0.ptx:4:16"), "{text}");
        assert!(text.contains("first defined here"), "{text}");
    }

    #[test]
    fn kernels_of_one_name_in_two_modules_clash() {
        let text = errors(&[".entry k() { ret; }\n", ".entry k() { ret; }\n"]);
        assert!(text.contains("`k` is defined more than once"), "{text}");
    }

    #[test]
    fn an_undefined_extern_variable_is_an_error_at_its_declaration() {
        let text = errors(&[".extern .global .u32 g;\n", ".visible .func f() { ret; }\n"]);
        assert!(text.contains("`g` is never defined"), "{text}");
        assert!(text.contains("m0.ptx:4:22"), "{text}");
        // One module alone is checked the same way.
        let text = errors(&[".extern .const .u32 g;\n"]);
        assert!(text.contains("`g` is never defined"), "{text}");
    }

    #[test]
    fn dynamic_shared_memory_and_undefined_functions_stay_declared_once() {
        let (_, linked) = link_texts(&[
            ".extern .shared .align 4 .b8 s[];\n.extern .func vprintf();\n",
            ".extern .shared .align 16 .b8 s[];\n.extern .func vprintf();\n",
        ]);
        let m = linked.expect("links");
        assert_eq!(names(&m), ["s", "vprintf;"]);
        let Some(Item::Variable(v)) = m.items.first() else { panic!("s") };
        assert_eq!(v.align.as_ref().map(|a| a.value), Some(16), "the strictest alignment");
    }

    #[test]
    fn disagreements_name_both_sites() {
        let text = errors(&[".extern .global .u32 g;\n", ".visible .const .u32 g;\n"]);
        assert!(text.contains("`g` is declared as two different things"), "{text}");
        assert!(
            text.contains("a `.const` variable here") && text.contains("a `.global` variable here"),
            "{text}"
        );
        // Functions link by name (each call is checked where it is inlined).
        let (_, linked) =
            link_texts(&[".extern .func f(.param .b32 a);\n", ".visible .func f() { ret; }\n"]);
        assert!(linked.is_ok());
        let text = errors(&[".extern .func g();\n", ".visible .global .u32 g;\n"]);
        assert!(text.contains("`g` is declared as two different things"), "{text}");
    }

    #[test]
    fn headers_merge_and_address_sizes_must_agree() {
        let map = SourceMap::new([
            ("a.ptx", ".version 7.0\n.target sm_70, texmode_independent\n.address_size 64\n"),
            ("b.ptx", ".version 8.1\n.target sm_86\n.address_size 64\n"),
        ]);
        let modules = (0..2).map(|i| crate::parse_file(&map, i).expect("parses")).collect();
        let m = link(modules).expect("links");
        assert_eq!(m.version.map(|v| v.value), Some((8, 1)));
        let targets: Vec<&str> = m.target.iter().map(|t| t.value.as_str()).collect();
        assert_eq!(targets, ["sm_86", "texmode_independent"]);

        let map = SourceMap::new([
            ("a.ptx", ".version 7.0\n.target sm_70\n.address_size 64\n"),
            ("b.ptx", ".version 7.0\n.target sm_70\n.address_size 32\n"),
        ]);
        let modules = (0..2).map(|i| crate::parse_file(&map, i).expect("parses")).collect();
        let text = map.render(&link(modules).expect_err("differs").0);
        assert!(text.contains("different address sizes") && text.contains("b.ptx:3:1"), "{text}");
    }
}
