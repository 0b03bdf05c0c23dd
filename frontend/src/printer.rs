//! The PTX printer: AST → PTX text.
//!
//! The output is PTX that `ptxas` accepts, laid out the way NVIDIA's compilers write it
//! (tabs, one statement per line). Parsing the printed text gives back the same AST up to
//! spans: `parse(print(m)) == m` modulo spans, for every module the parser accepts.
//! Comments and the spelling of literals are not kept (`0x10` prints as `16`; a decimal
//! float prints in its shortest exact form or as `0d…` bits).

use std::fmt::{self, Write};

use crate::ast::*;

/// Prints a whole module as PTX.
pub fn print(module: &Module) -> String {
    let mut p = Printer { out: String::with_capacity(4096) };
    // Writing into a `String` cannot fail.
    let _ = p.module(module);
    p.out
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print(self))
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_expr(&mut s, self, 0)?;
        f.write_str(&s)
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_operand(&mut s, self)?;
        f.write_str(&s)
    }
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_instruction(&mut s, self)?;
        f.write_str(&s)
    }
}

struct Printer {
    out: String,
}

impl Printer {
    fn module(&mut self, m: &Module) -> fmt::Result {
        if let Some(v) = &m.version {
            writeln!(self.out, ".version {}.{}", v.value.0, v.value.1)?;
        }
        if !m.target.is_empty() {
            let names: Vec<&str> = m.target.iter().map(|t| t.value.as_str()).collect();
            writeln!(self.out, ".target {}", names.join(", "))?;
        }
        if let Some(a) = &m.address_size {
            writeln!(self.out, ".address_size {}", a.value)?;
        }
        let mut prev_function = true;
        for item in &m.items {
            // Functions stand apart; consecutive declarations and directives stay together.
            let function = matches!(item, Item::Function(_));
            if function || prev_function {
                self.out.push('\n');
            }
            prev_function = function;
            match item {
                Item::Function(f) => self.function(f)?,
                Item::Variable(v) => {
                    write_var_decl(&mut self.out, v)?;
                    self.out.push_str(";\n");
                }
                Item::Directive(d) => self.directive(d, 0)?,
            }
        }
        Ok(())
    }

    fn function(&mut self, f: &Function) -> fmt::Result {
        if let Some(l) = f.linkage {
            write!(self.out, "{} ", linkage(l))?;
        }
        self.out.push_str(if f.is_entry { ".entry" } else { ".func" });
        write_attribute_specs(&mut self.out, &f.attribute_specs)?;
        if !f.returns.is_empty() {
            self.out.push(' ');
            write_inline_params(&mut self.out, &f.returns)?;
        }
        write!(self.out, " {}", f.name.value)?;
        if !f.params.is_empty() || f.is_entry {
            write_params(&mut self.out, &f.params)?;
        }
        self.out.push('\n');
        for a in &f.attributes {
            self.directive(a, 0)?;
        }
        match &f.body {
            None => self.out.push_str(";\n"),
            Some(body) => {
                self.out.push_str("{\n");
                self.statements(body, 1)?;
                self.out.push_str("}\n");
            }
        }
        Ok(())
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push('\t');
        }
    }

    fn statements(&mut self, stmts: &[Statement], depth: usize) -> fmt::Result {
        for (i, s) in stmts.iter().enumerate() {
            // A blank line after the declarations that open a function body.
            if depth == 1
                && i > 0
                && matches!(stmts[i - 1], Statement::Variable(_))
                && !matches!(s, Statement::Variable(_))
            {
                self.out.push('\n');
            }
            match s {
                Statement::Variable(v) => {
                    self.indent(depth);
                    write_var_decl(&mut self.out, v)?;
                    self.out.push_str(";\n");
                }
                Statement::Label(l) => {
                    // Labels sit one level left of the code, as compilers write them.
                    self.indent(depth.saturating_sub(1));
                    writeln!(self.out, "{}:", l.value)?;
                }
                Statement::Instruction(i) => {
                    self.indent(depth);
                    write_instruction(&mut self.out, i)?;
                    self.out.push('\n');
                }
                Statement::Block(inner, _) => {
                    self.indent(depth);
                    self.out.push_str("{\n");
                    self.statements(inner, depth + 1)?;
                    self.indent(depth);
                    self.out.push_str("}\n");
                }
                Statement::Directive(d) => self.directive(d, depth)?,
            }
        }
        Ok(())
    }

    fn directive(&mut self, d: &Directive, depth: usize) -> fmt::Result {
        self.indent(depth);
        let out = &mut self.out;
        match &d.kind {
            DirectiveKind::File { index, path, timestamp, size } => {
                write!(out, ".file {index} \"{}\"", path.value)?;
                if let Some(t) = timestamp {
                    write!(out, ", {t}")?;
                    if let Some(s) = size {
                        write!(out, ", {s}")?;
                    }
                }
                out.push('\n');
            }
            DirectiveKind::Loc(loc) => {
                write!(out, ".loc {} {}", loc.file, loc.line)?;
                if let Some(c) = loc.column {
                    write!(out, " {c}")?;
                }
                if let Some(f) = &loc.function_name {
                    out.push_str(", function_name ");
                    write_expr(out, f, 0)?;
                }
                if let Some((f, l, c)) = loc.inlined_at {
                    write!(out, ", inlined_at {f} {l} {c}")?;
                }
                out.push('\n');
            }
            DirectiveKind::Section(s) => {
                writeln!(out, ".section {}", s.name.value)?;
                self.indent(depth);
                self.out.push_str("{\n");
                for e in &s.entries {
                    match e {
                        SectionEntry::Label(l) => {
                            self.indent(depth);
                            writeln!(self.out, "{}:", l.value)?;
                        }
                        SectionEntry::Data { ty, values, .. } => {
                            self.indent(depth + 1);
                            write!(self.out, "{} ", ty.value.directive())?;
                            for (i, v) in values.iter().enumerate() {
                                if i > 0 {
                                    self.out.push_str(", ");
                                }
                                write_expr(&mut self.out, v, 0)?;
                            }
                            self.out.push('\n');
                        }
                    }
                }
                self.indent(depth);
                self.out.push_str("}\n");
            }
            DirectiveKind::Pragma(strings) => {
                out.push_str(".pragma ");
                for (i, s) in strings.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write!(out, "\"{}\"", s.value)?;
                }
                out.push_str(";\n");
            }
            DirectiveKind::Alias { alias, aliasee } => {
                writeln!(out, ".alias {}, {};", alias.value, aliasee.value)?;
            }
            DirectiveKind::Tuning { name, values } => {
                out.push_str(&name.value);
                for (i, v) in values.iter().enumerate() {
                    out.push_str(if i == 0 { " " } else { ", " });
                    write!(out, "{}", v.value)?;
                }
                out.push('\n');
            }
            DirectiveKind::BranchTargets { label, targets }
            | DirectiveKind::CallTargets { label, targets } => {
                let name = if matches!(d.kind, DirectiveKind::BranchTargets { .. }) {
                    ".branchtargets"
                } else {
                    ".calltargets"
                };
                let names: Vec<&str> = targets.iter().map(|t| t.value.as_str()).collect();
                writeln!(out, "{}: {name} {};", label.value, names.join(", "))?;
            }
            DirectiveKind::CallPrototype { label, returns, params, attributes } => {
                write!(out, "{}: .callprototype ", label.value)?;
                if !returns.is_empty() {
                    write_inline_params(out, returns)?;
                    out.push(' ');
                }
                out.push('_');
                if !params.is_empty() {
                    out.push(' ');
                    write_inline_params(out, params)?;
                }
                for a in attributes {
                    if let DirectiveKind::Tuning { name, values } = &a.kind {
                        write!(out, " {}", name.value)?;
                        for (i, v) in values.iter().enumerate() {
                            out.push_str(if i == 0 { " " } else { ", " });
                            write!(out, "{}", v.value)?;
                        }
                    }
                }
                out.push_str(";\n");
            }
            DirectiveKind::Dwarf(text) => writeln!(out, "@@DWARF {text}")?,
        }
        Ok(())
    }
}

fn linkage(l: Linkage) -> &'static str {
    match l {
        Linkage::Visible => ".visible",
        Linkage::Extern => ".extern",
        Linkage::Weak => ".weak",
        Linkage::Common => ".common",
    }
}

fn write_params(out: &mut String, params: &[Param]) -> fmt::Result {
    if params.is_empty() {
        out.push_str("()");
        return Ok(());
    }
    out.push_str("(\n");
    for (i, p) in params.iter().enumerate() {
        out.push('\t');
        write_var_decl(out, p)?;
        out.push_str(if i + 1 < params.len() { ",\n" } else { "\n" });
    }
    out.push(')');
    Ok(())
}

/// `(.param .b32 _, .param .b64 _)` on one line, as prototypes are written.
fn write_inline_params(out: &mut String, params: &[Param]) -> fmt::Result {
    out.push('(');
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_var_decl(out, p)?;
    }
    out.push(')');
    Ok(())
}

fn write_attribute_specs(out: &mut String, specs: &[AttributeSpec]) -> fmt::Result {
    if specs.is_empty() {
        return Ok(());
    }
    out.push_str(" .attribute(");
    for (i, a) in specs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&a.name.value);
        if !a.args.is_empty() {
            out.push('(');
            write_exprs(out, &a.args)?;
            out.push(')');
        }
    }
    out.push(')');
    Ok(())
}

fn write_exprs(out: &mut String, exprs: &[Expr]) -> fmt::Result {
    for (i, e) in exprs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, e, 0)?;
    }
    Ok(())
}

/// `[linkage] space[bank] [.attribute(…)] [.align N] [.vN] type [.ptr…] names`.
fn write_var_decl(out: &mut String, v: &VarDecl) -> fmt::Result {
    if let Some(l) = v.linkage {
        write!(out, "{} ", linkage(l))?;
    }
    out.push_str(v.space.directive());
    if let Some(b) = v.bank {
        write!(out, "[{b}]")?;
    }
    write_attribute_specs(out, &v.attribute_specs)?;
    if let Some(a) = &v.align {
        write!(out, " .align {}", a.value)?;
    }
    if let Some(n) = v.vector {
        write!(out, " .v{n}")?;
    }
    write!(out, " {}", v.ty.value.directive())?;
    if let Some(p) = &v.ptr {
        out.push_str(" .ptr");
        if let Some(s) = p.space {
            write!(out, " {}", s.directive())?;
        }
        if let Some(a) = p.align {
            write!(out, " .align {a}")?;
        }
    }
    for (i, n) in v.names.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        out.push_str(&n.name.value);
        if let Some(c) = n.count {
            write!(out, "<{c}>")?;
        }
        for d in &n.dims {
            match d {
                Some(d) => write!(out, "[{d}]")?,
                None => out.push_str("[]"),
            }
        }
        if let Some(init) = &n.init {
            out.push_str(" = ");
            write_initializer(out, init)?;
        }
    }
    Ok(())
}

fn write_initializer(out: &mut String, init: &Initializer) -> fmt::Result {
    match init {
        Initializer::Expr(e) => write_expr(out, e, 0),
        Initializer::List(items, _) => {
            out.push('{');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_initializer(out, item)?;
            }
            out.push('}');
            Ok(())
        }
        Initializer::Fields(fields, _) => {
            out.push_str("{ ");
            for (i, (name, value)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write!(out, "{} = ", name.value)?;
                write_expr(out, value, 0)?;
            }
            out.push_str(" }");
            Ok(())
        }
    }
}

fn write_instruction(out: &mut String, i: &Instruction) -> fmt::Result {
    if let Some(g) = &i.guard {
        write!(out, "@{}{} ", if g.negated { "!" } else { "" }, g.pred.value)?;
    }
    out.push_str(&i.opcode.value);
    for m in &i.modifiers {
        out.push_str(&m.value);
    }
    for (n, op) in i.operands.iter().enumerate() {
        out.push_str(if n == 0 { " \t" } else { ", " });
        write_operand(out, op)?;
    }
    out.push(';');
    Ok(())
}

fn write_operands(out: &mut String, ops: &[Operand]) -> fmt::Result {
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_operand(out, op)?;
    }
    Ok(())
}

fn write_operand(out: &mut String, op: &Operand) -> fmt::Result {
    match op {
        Operand::Name { name, component } => {
            out.push_str(&name.value);
            if let Some(c) = component {
                out.push_str(&c.value);
            }
        }
        // A bare symbol as an immediate came from `(sym)`: without the parentheses it
        // would read back as a name.
        Operand::Imm(e) if matches!(e.kind, ExprKind::Symbol(_)) => {
            out.push('(');
            write_expr(out, e, 0)?;
            out.push(')');
        }
        Operand::Imm(e) => write_expr(out, e, 0)?,
        Operand::Not(inner, _) => {
            out.push('!');
            write_operand(out, inner)?;
        }
        Operand::Neg(inner, _) => {
            out.push('-');
            write_operand(out, inner)?;
        }
        Operand::Vector(items, _) => {
            out.push('{');
            write_operands(out, items)?;
            out.push('}');
        }
        Operand::Address(a) => {
            out.push('[');
            match &a.base {
                Some(b) => {
                    out.push_str(&b.value);
                    if a.offset != 0 {
                        write!(out, "+{}", a.offset)?;
                    }
                }
                None => write!(out, "{}", a.offset)?,
            }
            out.push(']');
            if a.unified {
                out.push_str(".unified");
            }
        }
        Operand::Sink(_) => out.push('_'),
        Operand::Pair(a, b, _) => {
            write_operand(out, a)?;
            out.push('|');
            write_operand(out, b)?;
        }
        Operand::List(items, _) => {
            out.push('(');
            write_operands(out, items)?;
            out.push(')');
        }
        Operand::Tuple(items, _) => {
            out.push('[');
            write_operands(out, items)?;
            out.push(']');
        }
    }
    Ok(())
}

/// Precedence of an expression as a whole: binary operators by Table 4, unary and casts
/// above every binary operator, the conditional below all of them.
fn expr_precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Binary(op, ..) => op.precedence(),
        ExprKind::Ternary(..) => 0,
        ExprKind::Unary(..) | ExprKind::Cast { .. } => 11,
        // A negative float literal prints with a leading `-`: a unary expression.
        ExprKind::F64Bits(b) if (b >> 63) != 0 => 11,
        ExprKind::F32Bits(b) if (b >> 31) != 0 => 11,
        _ => 12,
    }
}

/// Writes `e`, parenthesized when its precedence is below `min`.
fn write_expr(out: &mut String, e: &Expr, min: u8) -> fmt::Result {
    let prec = expr_precedence(e);
    let paren = prec < min;
    if paren {
        out.push('(');
    }
    match &e.kind {
        ExprKind::Int { value, unsigned } => {
            write!(out, "{value}")?;
            // Literals above i64::MAX are unsigned by magnitude alone.
            if *unsigned && *value <= i64::MAX as u64 {
                out.push('U');
            }
        }
        ExprKind::F32Bits(b) => write!(out, "0f{b:08X}")?,
        ExprKind::F64Bits(b) => write_f64(out, *b)?,
        ExprKind::Symbol(s) => out.push_str(s),
        ExprKind::Generic(s) => write!(out, "generic({s})")?,
        ExprKind::Mask { mask, expr } => {
            write!(out, "0x{mask:X}(")?;
            write_expr(out, expr, 0)?;
            out.push(')');
        }
        ExprKind::Unary(op, inner) => {
            out.push_str(op.symbol());
            // `- -1` and `-(-0.5)`: keep a space so that no `--` appears.
            if expr_precedence(inner) == 11 {
                out.push(' ');
            }
            write_expr(out, inner, 11)?;
        }
        ExprKind::Cast { signed, expr } => {
            out.push_str(if *signed { "(.s64)" } else { "(.u64)" });
            write_expr(out, expr, 11)?;
        }
        ExprKind::Binary(op, l, r) => {
            let p = op.precedence();
            // Left-associative: the right operand needs parentheses at equal precedence.
            write_expr(out, l, p)?;
            write!(out, " {} ", op.symbol())?;
            write_expr(out, r, p + 1)?;
        }
        ExprKind::Ternary(c, a, b) => {
            write_expr(out, c, 1)?;
            out.push_str(" ? ");
            write_expr(out, a, 0)?;
            out.push_str(" : ");
            write_expr(out, b, 0)?;
        }
    }
    if paren {
        out.push(')');
    }
    Ok(())
}

/// A double in its shortest decimal form when that reads back exactly, else as `0d` bits.
fn write_f64(out: &mut String, bits: u64) -> fmt::Result {
    let v = f64::from_bits(bits);
    if !v.is_finite() {
        return write!(out, "0d{bits:016X}");
    }
    let mut s = format!("{v:?}");
    if !s.contains(['.', 'e', 'E']) {
        s.push_str(".0");
    }
    if s.parse::<f64>().map(f64::to_bits) == Ok(bits) {
        out.push_str(&s);
        Ok(())
    } else {
        write!(out, "0d{bits:016X}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    #[test]
    fn expressions_keep_their_shape() {
        let src = ".global .s64 x = (1 + 2) * 3 - (4 - 5) - -6 + (.u64)7 % 2 + (1 ? 2 : 3);\n";
        let m = parse(src).expect("parses");
        let printed = print(&m);
        assert!(
            printed.contains("(1 + 2) * 3 - (4 - 5) - -6 + (.u64)7 % 2 + (1 ? 2 : 3)"),
            "{printed}"
        );
    }

    #[test]
    fn floats_print_exactly() {
        let mut s = String::new();
        write_f64(&mut s, 0.1f64.to_bits()).expect("write");
        assert_eq!(s, "0.1");
        s.clear();
        write_f64(&mut s, f64::NAN.to_bits()).expect("write");
        assert_eq!(s, "0d7FF8000000000000");
        s.clear();
        write_f64(&mut s, (-2.0f64).to_bits()).expect("write");
        assert_eq!(s, "-2.0");
    }
}
