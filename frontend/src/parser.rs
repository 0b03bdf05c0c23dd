//! Recursive-descent parser for PTX modules (PTX ISA 9.2 chapters 4, 5, 7, 11).
//!
//! The parser builds the generic [`ast`](crate::ast) and keeps going after an error: it
//! records a [`Diagnostic`] and resynchronizes at the next `;` or at the `}` that closes
//! the current block, so one run reports every syntax error of a file. It never panics:
//! every token access is bounds-checked and every loop consumes input.

use crate::ast::*;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::lexer::{tokenize, Tok};
use crate::span::{Ident, Span, Spanned};

/// Parses a whole PTX module. Returns the module, or every syntax error found.
pub fn parse(src: &str) -> Result<Module, Diagnostics> {
    if src.len() > u32::MAX as usize {
        return Err(Diagnostic::error(Span::default(), "PTX file larger than 4 GiB").into());
    }
    let tokens = tokenize(src);
    let mut p = Parser { toks: tokens, pos: 0, errors: Vec::new(), src_len: src.len() as u32, src };
    let module = p.module();
    if p.errors.is_empty() {
        Ok(module)
    } else {
        Err(Diagnostics(p.errors))
    }
}

/// Error marker: the diagnostic has been recorded, the caller should resynchronize.
struct Failed;
type PResult<T> = Result<T, Failed>;

struct Parser<'s> {
    toks: Vec<(Tok<'s>, Span)>,
    pos: usize,
    errors: Vec<Diagnostic>,
    src_len: u32,
    src: &'s str,
}

/// Directives that may precede a function body (§11.4).
const FUNCTION_ATTRIBUTES: &[&str] = &[
    ".maxntid",
    ".reqntid",
    ".minnctapersm",
    ".maxnctapersm",
    ".maxnreg",
    ".noreturn",
    ".pragma",
    ".explicitcluster",
    ".reqnctapercluster",
    ".maxclusterrank",
    ".blocksareclusters",
    ".abi_preserve",
    ".abi_preserve_control",
];

impl<'s> Parser<'s> {
    // ----- token helpers -------------------------------------------------------------

    fn peek(&self) -> Option<Tok<'s>> {
        self.toks.get(self.pos).map(|t| t.0)
    }

    fn peek_at(&self, n: usize) -> Option<Tok<'s>> {
        self.toks.get(self.pos + n).map(|t| t.0)
    }

    fn span(&self) -> Span {
        self.toks.get(self.pos).map_or(Span::new(self.src_len, self.src_len), |t| t.1)
    }

    fn prev_span(&self) -> Span {
        self.pos.checked_sub(1).and_then(|i| self.toks.get(i)).map_or(Span::default(), |t| t.1)
    }

    fn bump(&mut self) -> Option<(Tok<'s>, Span)> {
        let t = self.toks.get(self.pos).copied();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, tok: Tok<'s>) -> bool {
        if self.peek() == Some(tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn error(&mut self, span: Span, msg: impl Into<String>) -> Failed {
        self.errors.push(Diagnostic::error(span, msg));
        Failed
    }

    fn unexpected(&mut self, expected: &str) -> Failed {
        let (found, span) = match self.toks.get(self.pos) {
            Some((t, s)) => (t.describe(), *s),
            None => ("end of file".to_string(), Span::new(self.src_len, self.src_len)),
        };
        self.error(span, format!("expected {expected}, found {found}"))
    }

    fn expect(&mut self, tok: Tok<'s>, what: &str) -> PResult<Span> {
        if self.peek() == Some(tok) {
            return Ok(self.bump().map_or(Span::default(), |t| t.1));
        }
        // A `;` missing at the end of a line is reported where it belongs, not at the
        // next line's first token.
        let prev = self.prev_span();
        let next = self.span();
        let gap = self.src.get(prev.end as usize..next.start as usize).unwrap_or("");
        if tok == Tok::Semi && self.pos > 0 && gap.contains('\n') {
            let at = Span::new(prev.end, prev.end);
            self.errors.push(Diagnostic::error(at, "missing `;`").with_label("expected `;` here"));
            return Err(Failed);
        }
        Err(self.unexpected(what))
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let span = self.span();
                self.pos += 1;
                Ok(Spanned::new(s.to_string(), span))
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// Skips to just after the next `;` at this nesting level, or to (not past) a `}`
    /// that closes the enclosing block.
    fn recover(&mut self) {
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            match t {
                Tok::Semi if depth == 0 => {
                    self.pos += 1;
                    return;
                }
                Tok::LBrace => depth += 1,
                Tok::RBrace => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                    if depth == 0 && self.peek_at(1) != Some(Tok::Semi) {
                        self.pos += 1;
                        return;
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
    }

    // ----- module ----------------------------------------------------------------------

    fn module(&mut self) -> Module {
        let mut m = Module::default();
        while self.peek().is_some() {
            let start = self.pos;
            if self.module_item(&mut m).is_err() {
                self.recover();
                // A stray `}` at module level: report once and skip it.
                if self.pos == start || self.peek() == Some(Tok::RBrace) {
                    if self.peek() == Some(Tok::RBrace) {
                        let s = self.span();
                        self.error(s, "unmatched `}`");
                    }
                    self.pos += 1;
                }
            }
        }
        m
    }

    fn module_item(&mut self, m: &mut Module) -> PResult<()> {
        let span = self.span();
        match self.peek() {
            Some(Tok::Dot(".version")) => {
                self.pos += 1;
                let v = self.version()?;
                m.version = Some(Spanned::new(v, span.to(self.prev_span())));
                Ok(())
            }
            Some(Tok::Dot(".target")) => {
                self.pos += 1;
                loop {
                    m.target.push(self.ident("a target name such as `sm_75`")?);
                    if !self.eat(Tok::Comma) {
                        break;
                    }
                }
                Ok(())
            }
            Some(Tok::Dot(".address_size")) => {
                self.pos += 1;
                let e = self.expr()?;
                let v = self.const_u32(&e)?;
                if v != 32 && v != 64 {
                    return Err(
                        self.error(e.span, format!("address size must be 32 or 64, not {v}"))
                    );
                }
                m.address_size = Some(Spanned::new(v, span.to(e.span)));
                Ok(())
            }
            Some(Tok::Dot(".file")) => {
                let d = self.raw_directive_line()?;
                m.items.push(Item::Directive(d));
                Ok(())
            }
            Some(Tok::Dot(".section")) => {
                let d = self.section()?;
                m.items.push(Item::Directive(d));
                Ok(())
            }
            Some(Tok::Dot(".pragma")) | Some(Tok::Dot(".alias")) => {
                let d = self.directive_until_semi()?;
                m.items.push(Item::Directive(d));
                Ok(())
            }
            Some(Tok::Dot(_)) => {
                let linkage = self.linkage();
                match self.peek() {
                    Some(Tok::Dot(".entry")) | Some(Tok::Dot(".func")) => {
                        let f = self.function(linkage, span)?;
                        m.items.push(Item::Function(f));
                        Ok(())
                    }
                    _ => {
                        let v = self.var_decl(linkage, span)?;
                        self.expect(Tok::Semi, "`;` after the declaration")?;
                        m.items.push(Item::Variable(v));
                        Ok(())
                    }
                }
            }
            _ => Err(self.unexpected("a directive such as `.version`, `.entry` or `.global`")),
        }
    }

    fn version(&mut self) -> PResult<(u32, u32)> {
        let span = self.span();
        match self.bump() {
            Some((Tok::DecFloat(s), _)) => {
                let parsed =
                    s.split_once('.').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
                parsed.ok_or_else(|| self.error(span, format!("malformed version `{s}`")))
            }
            _ => {
                self.pos -= usize::from(self.pos > 0);
                Err(self.unexpected("a version number such as `7.8`"))
            }
        }
    }

    fn linkage(&mut self) -> Option<Linkage> {
        let l = match self.peek() {
            Some(Tok::Dot(".visible")) => Linkage::Visible,
            Some(Tok::Dot(".extern")) => Linkage::Extern,
            Some(Tok::Dot(".weak")) => Linkage::Weak,
            Some(Tok::Dot(".common")) => Linkage::Common,
            _ => return None,
        };
        self.pos += 1;
        Some(l)
    }

    /// `.file 1 "name"[, mtime, size]` — a line-oriented directive without `;`.
    fn raw_directive_line(&mut self) -> PResult<Directive> {
        let name_span = self.span();
        let name = match self.bump() {
            Some((Tok::Dot(s), _)) => s.to_string(),
            _ => return Err(self.unexpected("a directive")),
        };
        let mut args = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Int(s)) | Some(Tok::Str(s)) => {
                    args.push(Spanned::new(s.to_string(), self.span()));
                    self.pos += 1;
                }
                Some(Tok::Comma) => self.pos += 1,
                _ => break,
            }
        }
        let span = name_span.to(self.prev_span());
        Ok(Directive { name: Spanned::new(name, name_span), args, span })
    }

    /// `.section name { … }`: debug sections are kept as raw text.
    fn section(&mut self) -> PResult<Directive> {
        let name_span = self.span();
        self.pos += 1;
        let mut args = Vec::new();
        while let Some(t) = self.peek() {
            if t == Tok::LBrace {
                break;
            }
            args.push(Spanned::new(token_text(t), self.span()));
            self.pos += 1;
        }
        self.expect(Tok::LBrace, "`{` opening the section")?;
        let mut depth = 1usize;
        while depth > 0 {
            match self.bump() {
                Some((Tok::LBrace, _)) => depth += 1,
                Some((Tok::RBrace, _)) => depth -= 1,
                Some(_) => {}
                None => return Err(self.unexpected("`}` closing the section")),
            }
        }
        Ok(Directive {
            name: Spanned::new(".section".into(), name_span),
            args,
            span: name_span.to(self.prev_span()),
        })
    }

    /// A directive whose arguments run to `;` (`.pragma "nounroll";`, `.loc` has none).
    fn directive_until_semi(&mut self) -> PResult<Directive> {
        let name_span = self.span();
        let name = match self.bump() {
            Some((Tok::Dot(s), _)) => s.to_string(),
            _ => return Err(self.unexpected("a directive")),
        };
        let mut args = Vec::new();
        while let Some(t) = self.peek() {
            if matches!(t, Tok::Semi | Tok::RBrace | Tok::LBrace) {
                break;
            }
            if t != Tok::Comma {
                args.push(Spanned::new(token_text(t), self.span()));
            }
            self.pos += 1;
        }
        self.expect(Tok::Semi, "`;` after the directive")?;
        Ok(Directive {
            name: Spanned::new(name, name_span),
            args,
            span: name_span.to(self.prev_span()),
        })
    }

    /// `.loc file line col [, inlined_at …]` ends at the line's last token; PTX has no `;`.
    fn loc_directive(&mut self) -> PResult<Directive> {
        let name_span = self.span();
        self.pos += 1;
        let mut args = Vec::new();
        let mut prev_comma = true;
        while let Some(t) = self.peek() {
            let is_arg = matches!(t, Tok::Int(_) | Tok::Ident(_) | Tok::Dot(_) | Tok::Str(_));
            // `.loc 1 2 3` takes plain numbers; `inlined_at`/`function_name` pieces follow
            // a comma. Stop at anything else (the next statement).
            let accept = match t {
                Tok::Int(_) => true,
                Tok::Comma => true,
                Tok::Ident(s) if prev_comma || s == "function_name" || s == "inlined_at" => true,
                Tok::Ident(_) | Tok::Dot(_) => prev_comma,
                Tok::Plus => true,
                _ => false,
            };
            if !accept {
                break;
            }
            // An identifier followed by `:` is the next label, not a `.loc` argument.
            if matches!(t, Tok::Ident(_)) && self.peek_at(1) == Some(Tok::Colon) {
                break;
            }
            prev_comma = t == Tok::Comma;
            if is_arg || t == Tok::Plus {
                args.push(Spanned::new(token_text(t), self.span()));
            }
            self.pos += 1;
            if matches!(t, Tok::Ident(_)) && args.len() >= 3 && !prev_comma {
                // `function_name $L__info_string0` or `inlined_at 1 2 3`: keep reading.
            }
        }
        Ok(Directive {
            name: Spanned::new(".loc".into(), name_span),
            args,
            span: name_span.to(self.prev_span()),
        })
    }

    // ----- functions ---------------------------------------------------------------------

    fn function(&mut self, linkage: Option<Linkage>, start: Span) -> PResult<Function> {
        let is_entry = matches!(self.bump(), Some((Tok::Dot(".entry"), _)));
        let mut returns = Vec::new();
        if !is_entry && self.peek() == Some(Tok::LParen) {
            returns = self.param_list()?;
        }
        let name = self.ident("a function name")?;
        let mut params = Vec::new();
        if self.peek() == Some(Tok::LParen) {
            params = self.param_list()?;
        }
        let mut attributes = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Dot(d)) if FUNCTION_ATTRIBUTES.contains(&d) => {
                    attributes.push(self.attribute_directive()?);
                }
                _ => break,
            }
        }
        let body = match self.peek() {
            Some(Tok::Semi) => {
                self.pos += 1;
                None
            }
            Some(Tok::LBrace) => {
                self.pos += 1;
                Some(self.block_body()?)
            }
            _ => return Err(self.unexpected("`{` starting the function body or `;`")),
        };
        Ok(Function {
            span: start.to(self.prev_span()),
            linkage,
            is_entry,
            name,
            returns,
            params,
            attributes,
            body,
        })
    }

    /// `.maxntid 256, 1, 1` / `.noreturn` / `.pragma "…";` before a body.
    fn attribute_directive(&mut self) -> PResult<Directive> {
        if self.peek() == Some(Tok::Dot(".pragma")) {
            return self.directive_until_semi();
        }
        let name_span = self.span();
        let name = token_text(self.bump().map_or(Tok::Error, |t| t.0));
        let mut args = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Int(s)) => {
                    args.push(Spanned::new(s.to_string(), self.span()));
                    self.pos += 1;
                }
                Some(Tok::Comma) => self.pos += 1,
                _ => break,
            }
        }
        Ok(Directive {
            name: Spanned::new(name, name_span),
            args,
            span: name_span.to(self.prev_span()),
        })
    }

    fn param_list(&mut self) -> PResult<Vec<Param>> {
        self.expect(Tok::LParen, "`(`")?;
        let mut params = Vec::new();
        if self.eat(Tok::RParen) {
            return Ok(params);
        }
        loop {
            let start = self.span();
            let p = self.var_decl(None, start)?;
            params.push(p);
            if self.eat(Tok::Comma) {
                continue;
            }
            self.expect(Tok::RParen, "`,` or `)` in the parameter list")?;
            return Ok(params);
        }
    }

    // ----- declarations --------------------------------------------------------------------

    /// `space [.align N] [.vN] .type [.ptr…] name[<n>][dims] [= init] {, name…}`.
    /// State space, alignment, vector and type may come in any order (compilers vary).
    fn var_decl(&mut self, linkage: Option<Linkage>, start: Span) -> PResult<VarDecl> {
        let mut space = None;
        let mut align = None;
        let mut vector = None;
        let mut ty: Option<Spanned<ScalarType>> = None;
        let mut ptr = None;
        while let Some(Tok::Dot(d)) = self.peek() {
            let span = self.span();
            if let Some(s) = StateSpace::from_directive(d) {
                self.pos += 1;
                space = Some(s);
                // `.const[2]`: a banked constant space (deprecated, §5.1.3).
                if s == StateSpace::Const && self.peek() == Some(Tok::LBracket) {
                    self.pos += 1;
                    self.expr()?;
                    self.expect(Tok::RBracket, "`]`")?;
                }
            } else if d == ".align" {
                self.pos += 1;
                let e = self.expr()?;
                let v = self.const_u32(&e)?;
                if !v.is_power_of_two() {
                    return Err(
                        self.error(e.span, format!("alignment must be a power of two, not {v}"))
                    );
                }
                align = Some(Spanned::new(v, span.to(e.span)));
            } else if let Some(n) = d.strip_prefix(".v").and_then(|n| n.parse::<u32>().ok()) {
                self.pos += 1;
                vector = Some(n);
            } else if let Some(t) = ScalarType::from_directive(d) {
                self.pos += 1;
                ty = Some(Spanned::new(t, span));
            } else if d == ".ptr" {
                self.pos += 1;
                let mut attr = PtrAttr { space: None, align: None };
                loop {
                    match self.peek() {
                        Some(Tok::Dot(".align")) => {
                            self.pos += 1;
                            let e = self.expr()?;
                            attr.align = Some(self.const_u32(&e)?);
                        }
                        Some(Tok::Dot(s)) if StateSpace::from_directive(s).is_some() => {
                            attr.space = StateSpace::from_directive(s);
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                ptr = Some(attr);
            } else if matches!(d, ".texref" | ".samplerref" | ".surfref") {
                return Err(self.error(span, format!("`{d}` variables are not supported yet")));
            } else if d == ".attribute" {
                // `.attribute(.managed)` / `.attribute(.unified(…))`.
                self.pos += 1;
                self.expect(Tok::LParen, "`(` after `.attribute`")?;
                let mut depth = 1;
                while depth > 0 {
                    match self.bump() {
                        Some((Tok::LParen, _)) => depth += 1,
                        Some((Tok::RParen, _)) => depth -= 1,
                        Some(_) => {}
                        None => return Err(self.unexpected("`)`")),
                    }
                }
            } else {
                return Err(
                    self.error(span, format!("unknown directive or type `{d}` in a declaration"))
                );
            }
        }
        let Some(space) = space else {
            return Err(self.unexpected("a state space such as `.reg`, `.global` or `.param`"));
        };
        let Some(ty) = ty else {
            return Err(self.unexpected("a type such as `.b32` or `.f32`"));
        };
        let mut names = Vec::new();
        loop {
            names.push(self.decl_name()?);
            // Several names share one declaration only outside parameter lists; in a
            // parameter list the comma separates parameters.
            if self.peek() == Some(Tok::Comma)
                && !matches!(self.peek_at(1), Some(Tok::Dot(_)))
                && space != StateSpace::Param
            {
                self.pos += 1;
                continue;
            }
            break;
        }
        Ok(VarDecl {
            span: start.to(self.prev_span()),
            linkage,
            space,
            align,
            vector,
            ty,
            ptr,
            names,
        })
    }

    fn decl_name(&mut self) -> PResult<DeclName> {
        let name = self.ident("a variable name")?;
        let mut count = None;
        if self.eat(Tok::Lt) {
            let e = self.expr_no_gt()?;
            count = Some(self.const_u32(&e)?);
            self.expect(Tok::Gt, "`>` closing the register count")?;
        }
        let mut dims = Vec::new();
        while self.eat(Tok::LBracket) {
            if self.eat(Tok::RBracket) {
                dims.push(None);
                continue;
            }
            let e = self.expr()?;
            let v = e.eval_int().map_err(|(s, m)| self.error(s, m))?;
            dims.push(Some(v.value));
            self.expect(Tok::RBracket, "`]` closing the array size")?;
        }
        let init = if self.eat(Tok::Eq) { Some(self.initializer()?) } else { None };
        Ok(DeclName { name, count, dims, init })
    }

    fn initializer(&mut self) -> PResult<Initializer> {
        if self.peek() == Some(Tok::LBrace) {
            let start = self.span();
            self.pos += 1;
            let mut items = Vec::new();
            if !self.eat(Tok::RBrace) {
                loop {
                    items.push(self.initializer()?);
                    if self.eat(Tok::Comma) {
                        continue;
                    }
                    self.expect(Tok::RBrace, "`,` or `}` in the initializer")?;
                    break;
                }
            }
            return Ok(Initializer::List(items, start.to(self.prev_span())));
        }
        // `generic(var)` initializers of pointers (§5.4.4).
        if let Some(Tok::Ident("generic")) = self.peek() {
            if self.peek_at(1) == Some(Tok::LParen) {
                let start = self.span();
                self.pos += 2;
                let name = self.ident("a variable name")?;
                self.expect(Tok::RParen, "`)`")?;
                return Ok(Initializer::Expr(Expr {
                    kind: ExprKind::Symbol(name.value),
                    span: start.to(self.prev_span()),
                }));
            }
        }
        Ok(Initializer::Expr(self.expr()?))
    }

    fn const_u32(&mut self, e: &Expr) -> PResult<u32> {
        let v = e.eval_int().map_err(|(s, m)| self.error(s, m))?;
        u32::try_from(v.value)
            .map_err(|_| self.error(e.span, format!("value {} is too large here", v.value)))
    }

    // ----- statements -------------------------------------------------------------------

    /// Statements up to and including the closing `}`.
    fn block_body(&mut self) -> PResult<Vec<Statement>> {
        let mut stmts = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.unexpected("`}` closing the block")),
                Some(Tok::RBrace) => {
                    self.pos += 1;
                    return Ok(stmts);
                }
                _ => {
                    let start = self.pos;
                    match self.statement() {
                        Ok(Some(s)) => stmts.push(s),
                        Ok(None) => {}
                        Err(Failed) => {
                            self.recover();
                            if self.pos == start {
                                self.pos += 1;
                            }
                        }
                    }
                }
            }
        }
    }

    fn statement(&mut self) -> PResult<Option<Statement>> {
        let start = self.span();
        match self.peek() {
            Some(Tok::LBrace) => {
                self.pos += 1;
                let body = self.block_body()?;
                Ok(Some(Statement::Block(body, start.to(self.prev_span()))))
            }
            Some(Tok::Semi) => {
                self.pos += 1;
                Ok(None)
            }
            Some(Tok::Dot(".loc")) => Ok(Some(Statement::Directive(self.loc_directive()?))),
            Some(Tok::Dot(".pragma")) => {
                Ok(Some(Statement::Directive(self.directive_until_semi()?)))
            }
            Some(Tok::Dot(".file")) => Ok(Some(Statement::Directive(self.raw_directive_line()?))),
            Some(Tok::Dot(".branchtargets" | ".calltargets" | ".callprototype")) => {
                Ok(Some(Statement::Directive(self.directive_until_semi()?)))
            }
            Some(Tok::Dot(_)) => {
                let linkage = self.linkage();
                let v = self.var_decl(linkage, start)?;
                self.expect(Tok::Semi, "`;` after the declaration")?;
                Ok(Some(Statement::Variable(v)))
            }
            Some(Tok::Ident(_)) if self.peek_at(1) == Some(Tok::Colon) => {
                let label = self.ident("a label")?;
                self.pos += 1;
                // `label: .branchtargets …;` and `label: .callprototype …;` name tables.
                Ok(Some(Statement::Label(label)))
            }
            Some(Tok::Ident(_)) | Some(Tok::At) => {
                Ok(Some(Statement::Instruction(self.instruction()?)))
            }
            _ => Err(self.unexpected("an instruction, a declaration or a label")),
        }
    }

    fn instruction(&mut self) -> PResult<Instruction> {
        let start = self.span();
        let mut guard = None;
        if self.eat(Tok::At) {
            let negated = self.eat(Tok::Bang);
            let pred = self.ident("a predicate register after `@`")?;
            guard = Some(Guard { negated, pred });
        }
        let opcode = self.ident("an instruction")?;
        let mut modifiers = Vec::new();
        while let Some(Tok::Dot(d)) = self.peek() {
            modifiers.push(Spanned::new(d.to_string(), self.span()));
            self.pos += 1;
        }
        let mut operands = Vec::new();
        if self.peek() != Some(Tok::Semi) {
            loop {
                operands.push(self.operand()?);
                if self.eat(Tok::Comma) {
                    continue;
                }
                break;
            }
        }
        self.expect(Tok::Semi, "`,` or `;` after an operand")?;
        Ok(Instruction { span: start.to(self.prev_span()), guard, opcode, modifiers, operands })
    }

    fn operand(&mut self) -> PResult<Operand> {
        let start = self.span();
        match self.peek() {
            Some(Tok::Bang) => {
                self.pos += 1;
                let inner = self.operand()?;
                Ok(Operand::Not(Box::new(inner), start.to(self.prev_span())))
            }
            Some(Tok::Underscore) => {
                self.pos += 1;
                // `_|%q`: a sink may stand for either destination of a pair (§9.7.6.2).
                if self.eat(Tok::Pipe) {
                    let second = self.operand()?;
                    let span = start.to(self.prev_span());
                    return Ok(Operand::Pair(
                        Box::new(Operand::Sink(start)),
                        Box::new(second),
                        span,
                    ));
                }
                Ok(Operand::Sink(start))
            }
            Some(Tok::LBrace) => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    items.push(self.operand()?);
                    if self.eat(Tok::Comma) {
                        continue;
                    }
                    self.expect(Tok::RBrace, "`,` or `}` in the vector operand")?;
                    break;
                }
                Ok(Operand::Vector(items, start.to(self.prev_span())))
            }
            Some(Tok::LParen) if !self.paren_is_expression() => {
                self.pos += 1;
                let mut items = Vec::new();
                if !self.eat(Tok::RParen) {
                    loop {
                        items.push(self.operand()?);
                        if self.eat(Tok::Comma) {
                            continue;
                        }
                        self.expect(Tok::RParen, "`,` or `)` in the operand list")?;
                        break;
                    }
                }
                Ok(Operand::List(items, start.to(self.prev_span())))
            }
            Some(Tok::LBracket) => {
                self.pos += 1;
                let addr = self.address(start)?;
                Ok(Operand::Address(addr))
            }
            Some(Tok::Ident(_)) if !self.ident_starts_expression() => {
                let name = self.ident("an operand")?;
                let mut component = None;
                if let Some(Tok::Dot(c)) = self.peek() {
                    if matches!(c, ".x" | ".y" | ".z" | ".w" | ".r" | ".g" | ".b" | ".a") {
                        component = Some(Spanned::new(c.to_string(), self.span()));
                        self.pos += 1;
                    }
                }
                // `var[imm]`: an indexed address form.
                if component.is_none() && self.peek() == Some(Tok::LBracket) {
                    self.pos += 1;
                    let e = self.expr()?;
                    let off = e.eval_int().map_err(|(s, m)| self.error(s, m))?;
                    self.expect(Tok::RBracket, "`]`")?;
                    return Ok(Operand::Address(Address {
                        base: Some(name),
                        offset: off.value as i64,
                        span: start.to(self.prev_span()),
                    }));
                }
                let op = Operand::Name { name, component };
                if self.eat(Tok::Pipe) {
                    let second = self.operand()?;
                    return Ok(Operand::Pair(
                        Box::new(op),
                        Box::new(second),
                        start.to(self.prev_span()),
                    ));
                }
                Ok(op)
            }
            _ => Ok(Operand::Imm(self.expr()?)),
        }
    }

    /// An identifier followed by an arithmetic operator starts an expression
    /// (`mov.u64 %rd1, arr+8`).
    fn ident_starts_expression(&self) -> bool {
        matches!(self.peek_at(1), Some(Tok::Plus | Tok::Minus | Tok::Star | Tok::Slash))
    }

    /// `(.s64)` casts and parenthesized constant expressions versus operand lists.
    fn paren_is_expression(&self) -> bool {
        match self.peek_at(1) {
            Some(Tok::Dot(".s64" | ".u64")) => true,
            Some(Tok::Int(_) | Tok::HexFloat(_) | Tok::DecFloat(_) | Tok::Minus | Tok::Tilde) => {
                // `(1)` could be an argument list of one literal in a call; compilers
                // only pass registers there, so treat literals as expressions.
                true
            }
            _ => false,
        }
    }

    /// Inside `[ … ]`: `reg`, `reg+imm`, `reg-imm`, `var`, `var+imm`, `imm`.
    fn address(&mut self, start: Span) -> PResult<Address> {
        let mut base = None;
        let mut offset = 0i64;
        if let Some(Tok::Ident(_)) = self.peek() {
            base = Some(self.ident("a register or variable")?);
            match self.peek() {
                Some(Tok::Plus) => {
                    self.pos += 1;
                    let e = self.expr()?;
                    offset = e.eval_int().map_err(|(s, m)| self.error(s, m))?.value as i64;
                }
                Some(Tok::Minus) => {
                    self.pos += 1;
                    let e = self.expr()?;
                    offset = (e.eval_int().map_err(|(s, m)| self.error(s, m))?.value as i64)
                        .wrapping_neg();
                }
                _ => {}
            }
        } else {
            let e = self.expr()?;
            offset = e.eval_int().map_err(|(s, m)| self.error(s, m))?.value as i64;
        }
        self.expect(Tok::RBracket, "`]` closing the address")?;
        Ok(Address { base, offset, span: start.to(self.prev_span()) })
    }

    // ----- constant expressions (§4.6, C precedence) -------------------------------------

    fn expr(&mut self) -> PResult<Expr> {
        self.ternary(true)
    }

    /// An expression that stops before `>` (inside `%r<…>`).
    fn expr_no_gt(&mut self) -> PResult<Expr> {
        self.ternary(false)
    }

    fn ternary(&mut self, allow_gt: bool) -> PResult<Expr> {
        let cond = self.binary(0, allow_gt)?;
        if self.eat(Tok::Question) {
            let a = self.ternary(allow_gt)?;
            self.expect(Tok::Colon, "`:` in the conditional expression")?;
            let b = self.ternary(allow_gt)?;
            let span = cond.span.to(b.span);
            return Ok(Expr {
                kind: ExprKind::Ternary(Box::new(cond), Box::new(a), Box::new(b)),
                span,
            });
        }
        Ok(cond)
    }

    fn binary_op(&self, allow_gt: bool) -> Option<(BinaryOp, u8)> {
        use BinaryOp::*;
        Some(match self.peek()? {
            Tok::OrOr => (LogicalOr, 1),
            Tok::AndAnd => (LogicalAnd, 2),
            Tok::Pipe => (Or, 3),
            Tok::Caret => (Xor, 4),
            Tok::Amp => (And, 5),
            Tok::EqEq => (Eq, 6),
            Tok::Ne => (Ne, 6),
            Tok::Lt => (Lt, 7),
            Tok::Gt if allow_gt => (Gt, 7),
            Tok::Le => (Le, 7),
            Tok::Ge => (Ge, 7),
            Tok::Shl => (Shl, 8),
            Tok::Shr => (Shr, 8),
            Tok::Plus => (Add, 9),
            Tok::Minus => (Sub, 9),
            Tok::Star => (Mul, 10),
            Tok::Slash => (Div, 10),
            Tok::Percent => (Rem, 10),
            _ => return None,
        })
    }

    fn binary(&mut self, min_prec: u8, allow_gt: bool) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, prec)) = self.binary_op(allow_gt) {
            if prec < min_prec {
                break;
            }
            self.pos += 1;
            let rhs = self.binary(prec + 1, allow_gt)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr { kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), span };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        let start = self.span();
        let op = match self.peek() {
            Some(Tok::Minus) => Some(UnaryOp::Neg),
            Some(Tok::Plus) => Some(UnaryOp::Plus),
            Some(Tok::Tilde) => Some(UnaryOp::Not),
            Some(Tok::Bang) => Some(UnaryOp::LogicalNot),
            _ => None,
        };
        if let Some(op) = op {
            self.pos += 1;
            let e = self.unary()?;
            // Fold `-literal` so immediates keep their literal kind.
            if op == UnaryOp::Neg {
                match e.kind {
                    ExprKind::F64Bits(b) => {
                        return Ok(Expr {
                            kind: ExprKind::F64Bits(b ^ (1 << 63)),
                            span: start.to(e.span),
                        })
                    }
                    ExprKind::F32Bits(b) => {
                        return Ok(Expr {
                            kind: ExprKind::F32Bits(b ^ (1 << 31)),
                            span: start.to(e.span),
                        })
                    }
                    _ => {}
                }
            }
            let span = start.to(e.span);
            return Ok(Expr { kind: ExprKind::Unary(op, Box::new(e)), span });
        }
        self.primary()
    }

    fn primary(&mut self) -> PResult<Expr> {
        let span = self.span();
        match self.peek() {
            Some(Tok::Int(s)) => {
                self.pos += 1;
                let (value, unsigned) = parse_int(s).ok_or_else(|| {
                    self.error(span, format!("integer literal `{s}` does not fit in 64 bits"))
                })?;
                Ok(Expr { kind: ExprKind::Int { value, unsigned }, span })
            }
            Some(Tok::HexFloat(s)) => {
                self.pos += 1;
                let digits = &s[2..];
                let kind = if s.as_bytes()[1].eq_ignore_ascii_case(&b'f') {
                    ExprKind::F32Bits(
                        u32::from_str_radix(digits, 16)
                            .map_err(|_| self.error(span, "bad float literal"))?,
                    )
                } else {
                    ExprKind::F64Bits(
                        u64::from_str_radix(digits, 16)
                            .map_err(|_| self.error(span, "bad float literal"))?,
                    )
                };
                Ok(Expr { kind, span })
            }
            Some(Tok::DecFloat(s)) => {
                self.pos += 1;
                let v: f64 = s
                    .parse()
                    .map_err(|_| self.error(span, format!("malformed float literal `{s}`")))?;
                Ok(Expr { kind: ExprKind::F64Bits(v.to_bits()), span })
            }
            Some(Tok::Ident("WARP_SZ")) => {
                self.pos += 1;
                Ok(Expr { kind: ExprKind::Int { value: 32, unsigned: false }, span })
            }
            Some(Tok::Ident(s)) => {
                self.pos += 1;
                Ok(Expr { kind: ExprKind::Symbol(s.to_string()), span })
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                if let Some(Tok::Dot(c @ (".s64" | ".u64"))) = self.peek() {
                    let signed = c == ".s64";
                    self.pos += 1;
                    self.expect(Tok::RParen, "`)` after the cast type")?;
                    let e = self.unary()?;
                    let span = span.to(e.span);
                    return Ok(Expr { kind: ExprKind::Cast { signed, expr: Box::new(e) }, span });
                }
                let mut e = self.expr()?;
                self.expect(Tok::RParen, "`)`")?;
                e.span = span.to(self.prev_span());
                Ok(e)
            }
            _ => Err(self.unexpected("an operand or constant expression")),
        }
    }
}

/// Parses an integer literal (§4.5.1). Literals that do not fit in s64 are unsigned.
fn parse_int(s: &str) -> Option<(u64, bool)> {
    let (body, suffix_u) = match s.strip_suffix('U') {
        Some(b) => (b, true),
        None => (s, false),
    };
    let value = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        u64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse().ok()?
    };
    Some((value, suffix_u || value > i64::MAX as u64))
}

fn token_text(t: Tok<'_>) -> String {
    match t {
        Tok::Dot(s)
        | Tok::Ident(s)
        | Tok::Int(s)
        | Tok::HexFloat(s)
        | Tok::DecFloat(s)
        | Tok::Str(s) => s.to_string(),
        other => other.describe().trim_matches('`').to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
//
// Generated by NVIDIA NVVM Compiler
.version 8.0
.target sm_75
.address_size 64

.extern .shared .align 16 .b8 dyn[];
.global .align 4 .u32 table[4] = {1, 2, 0x10, -1};

.visible .entry add(
	.param .u64 add_param_0,
	.param .u32 add_param_1
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<4>;
	.loc	1 5 3
	ld.param.u64 	%rd1, [add_param_0];
	mov.u32 	%r1, %tid.x;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;
	st.global.v2.f32 	[%rd1+8], {%r1, %r2};
	mul.wide.s32 %rd2, %r1, 4;
$L__BB0_2:
	ret;
}
"#;

    #[test]
    fn parses_a_typical_kernel() {
        let m = parse(SAMPLE).expect("parses");
        assert_eq!(m.version.as_ref().map(|v| v.value), Some((8, 0)));
        assert_eq!(m.address_size.as_ref().map(|v| v.value), Some(64));
        assert_eq!(m.items.len(), 3);
        let Item::Function(f) = &m.items[2] else { panic!("expected the kernel") };
        assert!(f.is_entry);
        assert_eq!(f.params.len(), 2);
        assert_eq!(f.attributes[0].name.value, ".maxntid");
        let body = f.body.as_ref().expect("body");
        let instrs: Vec<_> = body
            .iter()
            .filter_map(|s| if let Statement::Instruction(i) = s { Some(i) } else { None })
            .collect();
        assert_eq!(instrs.len(), 7);
        match &instrs[1].operands[1] {
            Operand::Name { name, component } => {
                assert_eq!(name.value, "%tid");
                assert_eq!(component.as_ref().map(|c| c.value.as_str()), Some(".x"));
            }
            other => panic!("expected %tid.x, got {other:?}"),
        }
        assert!(instrs[3].guard.is_some());
        let Operand::Address(a) = &instrs[4].operands[0] else { panic!("address") };
        assert_eq!(a.offset, 8);
    }

    #[test]
    fn reports_every_error_with_recovery() {
        let src = ".version 7.0\n.target sm_70\n.entry k() {\n  add.s32 %r1, , %r2;\n  mov.u32 %r1 %r2;\n  ret;\n}\n";
        let errs = parse(src).expect_err("two errors").0;
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].message.contains("expected an operand"), "{}", errs[0].message);
    }

    #[test]
    fn constant_expressions_follow_c_precedence_and_signedness() {
        let m = parse(".global .u64 x = (1 + 2 * 3) << 2 | 0x1;\n.global .s32 y = -8 / 3;\n.global .u32 z = 0xFFFFFFFFFFFFFFFF >> 60;").expect("parses");
        let val = |i: usize| match &m.items[i] {
            Item::Variable(v) => match &v.names[0].init {
                Some(Initializer::Expr(e)) => e.eval_int().expect("const").value,
                _ => panic!("init"),
            },
            _ => panic!("var"),
        };
        assert_eq!(val(0), 29);
        assert_eq!(val(1) as i64, -2);
        assert_eq!(val(2), 15);
    }

    #[test]
    fn never_panics_on_truncated_input() {
        for cut in 0..SAMPLE.len() {
            if SAMPLE.is_char_boundary(cut) {
                let _ = parse(&SAMPLE[..cut]);
            }
        }
    }
}
