//! Recursive-descent parser for PTX modules (PTX ISA 9.2 chapters 4, 5, 7, 11).
//!
//! The parser builds the generic [`ast`](crate::ast) and keeps going after an error: it
//! records a [`Diagnostic`] and resynchronizes at the next `;` or at the `}` that closes
//! the current block, so one run reports every syntax error of a file. It never panics:
//! every token access is bounds-checked and every loop consumes input.
//!
//! The entry points that also check every instruction against the instruction table
//! (`parse`, `parse_file`) stand above the parser, in `driver.rs`.

use std::collections::VecDeque;

use logos::Logos;

use crate::ast::*;
use crate::diagnostic::Diagnostic;
use crate::instructions::Opcode;
use crate::lexer::Tok;
use crate::span::{Ident, Name, Span, Spanned};
use literals::{parse_int, payload_len};

mod literals;

/// Parses `src[start..end]`, which must begin and end between module items, on one
/// thread. Spans are offsets into the whole of `src`.
pub(crate) fn parse_range(src: &str, start: usize, end: usize) -> (Module, Vec<Diagnostic>) {
    if src.len() > u32::MAX as usize {
        let d = Diagnostic::error(Span::default(), "PTX file larger than 4 GiB");
        return (Module::default(), vec![d]);
    }
    let text = &src[..end];
    let mut lexer = Tok::lexer(text);
    lexer.bump(start);
    let mut p = Parser {
        lexer,
        ahead: VecDeque::with_capacity(8),
        prev: Span::default(),
        pos: 0,
        errors: Vec::new(),
        src_len: end as u32,
        src: text,
        in_call: false,
        in_section: false,
        scratch_mods: Vec::new(),
        scratch_ops: Vec::new(),
        scratch_stmts: Vec::new(),
        depth: 0,
    };
    let module = p.module();
    (module, p.errors)
}

/// Error marker: the diagnostic has been recorded, the caller should resynchronize.
struct Failed;
type PResult<T> = Result<T, Failed>;

/// The parser reads tokens from the lexer as it goes, with a few tokens of lookahead,
/// so that memory stays proportional to the AST rather than to the token count.
struct Parser<'s> {
    lexer: logos::Lexer<'s, Tok<'s>>,
    /// Tokens lexed but not yet consumed.
    ahead: VecDeque<(Tok<'s>, Span)>,
    /// The span of the last consumed token.
    prev: Span,
    /// How many tokens have been consumed (progress marker for error recovery).
    pos: usize,
    errors: Vec<Diagnostic>,
    src_len: u32,
    src: &'s str,
    /// Parsing the operands of `call`: `(` opens a return or argument list.
    in_call: bool,
    /// Parsing `.section` data: dotted names (`.debug_abbrev`) are symbols.
    in_section: bool,
    /// Scratch stacks for modifiers, operands and statements, so that each vector of
    /// the AST is allocated once with its exact length.
    scratch_mods: Vec<Ident>,
    scratch_ops: Vec<Operand>,
    scratch_stmts: Vec<Statement>,
    /// Current nesting of blocks, initializers, operands and expressions.
    depth: usize,
}

/// How deeply blocks, initializers, operands and expressions may nest. Real PTX stays
/// far below; the limit keeps adversarial input from exhausting the stack.
const MAX_NESTING: usize = 200;

/// Performance-tuning directives that may precede a function body (§11.4), plus the
/// ABI directives `ptxas` accepts there.
pub const TUNING_DIRECTIVES: &[&str] = &[
    ".maxntid",
    ".reqntid",
    ".minnctapersm",
    ".maxnctapersm",
    ".maxnreg",
    ".noreturn",
    ".explicitcluster",
    ".reqnctapercluster",
    ".maxclusterrank",
    ".blocksareclusters",
    ".abi_preserve",
    ".abi_preserve_control",
];

impl<'s> Parser<'s> {
    // ----- token helpers -------------------------------------------------------------

    /// The `n`th token ahead (0 = the next one), lexing as far as needed.
    fn look(&mut self, n: usize) -> Option<(Tok<'s>, Span)> {
        while self.ahead.len() <= n {
            let tok = self.lexer.next()?;
            let span = Span::from(self.lexer.span());
            // Characters that start no token become `Tok::Error`, reported in place.
            self.ahead.push_back((tok.unwrap_or(Tok::Error), span));
        }
        self.ahead.get(n).copied()
    }

    fn peek(&mut self) -> Option<Tok<'s>> {
        self.look(0).map(|t| t.0)
    }

    fn peek_at(&mut self, n: usize) -> Option<Tok<'s>> {
        self.look(n).map(|t| t.0)
    }

    fn span(&mut self) -> Span {
        let end = Span::new(self.src_len, self.src_len);
        self.look(0).map_or(end, |t| t.1)
    }

    fn prev_span(&self) -> Span {
        self.prev
    }

    /// Consumes one token (none at the end of input).
    fn advance(&mut self) {
        if self.look(0).is_some() {
            if let Some((_, span)) = self.ahead.pop_front() {
                self.prev = span;
                self.pos += 1;
            }
        }
    }

    fn advance_by(&mut self, n: usize) {
        for _ in 0..n {
            self.advance();
        }
    }

    fn bump(&mut self) -> Option<(Tok<'s>, Span)> {
        let t = self.look(0);
        self.advance();
        t
    }

    fn eat(&mut self, tok: Tok<'s>) -> bool {
        if self.peek() == Some(tok) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn error(&mut self, span: Span, msg: impl Into<String>) -> Failed {
        let d = Diagnostic::error(span, msg);
        // Unwinding nested constructs at the end of the input reports the same problem
        // once, not once per level.
        if self.errors.last() != Some(&d) {
            self.errors.push(d);
        }
        Failed
    }

    /// Runs `f` one nesting level deeper, or reports that the input nests too deeply.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_NESTING {
            let span = self.span();
            return Err(self.error(span, format!("nesting deeper than {MAX_NESTING} levels")));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn unexpected(&mut self, expected: &str) -> Failed {
        let (found, span) = match self.look(0) {
            Some((t, s)) => (t.describe(), s),
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
                self.advance();
                Ok(Spanned::new(Name::from(s), span))
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// A string literal's contents, as written, without the quotes.
    fn string(&mut self, what: &str) -> PResult<Spanned<String>> {
        match self.peek() {
            Some(Tok::Str(s)) => {
                let span = self.span();
                self.advance();
                let inner = s.get(1..s.len().saturating_sub(1)).unwrap_or("");
                Ok(Spanned::new(inner.to_string(), span))
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
                    self.advance();
                    return;
                }
                Tok::LBrace => depth += 1,
                Tok::RBrace => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                    if depth == 0 && self.peek_at(1) != Some(Tok::Semi) {
                        self.advance();
                        return;
                    }
                }
                _ => {}
            }
            self.advance();
        }
    }

    fn directive(&self, kind: DirectiveKind, start: Span) -> Directive {
        Directive { kind, span: start.to(self.prev_span()) }
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
                    self.advance();
                }
            }
        }
        m
    }

    fn module_item(&mut self, m: &mut Module) -> PResult<()> {
        let span = self.span();
        match self.peek() {
            Some(Tok::Dot(".version")) => {
                self.advance();
                let v = self.version()?;
                m.version = Some(Spanned::new(v, span.to(self.prev_span())));
                Ok(())
            }
            Some(Tok::Dot(".target")) => {
                self.advance();
                loop {
                    m.target.push(self.ident("a target name such as `sm_75`")?);
                    if !self.eat(Tok::Comma) {
                        break;
                    }
                }
                Ok(())
            }
            Some(Tok::Dot(".address_size")) => {
                self.advance();
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
                // `.file` ends at the end of its line: recover there, not at a `;`.
                if let Some(d) = self.line_directive(Self::file_directive) {
                    m.items.push(Item::Directive(d));
                }
                Ok(())
            }
            Some(Tok::Dot(".section")) => {
                let d = self.section()?;
                m.items.push(Item::Directive(d));
                Ok(())
            }
            Some(Tok::Dot(".pragma")) => {
                let d = self.pragma()?;
                m.items.push(Item::Directive(d));
                Ok(())
            }
            Some(Tok::Dot(".alias")) => {
                self.advance();
                let alias = self.ident("the alias name")?;
                self.expect(Tok::Comma, "`,` between the alias and the aliased function")?;
                let aliasee = self.ident("the aliased function's name")?;
                self.expect(Tok::Semi, "`;` after `.alias`")?;
                let d = self.directive(DirectiveKind::Alias { alias, aliasee }, span);
                m.items.push(Item::Directive(d));
                Ok(())
            }
            Some(Tok::At) if self.peek_at(1) == Some(Tok::At) => {
                let d = self.dwarf_line()?;
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
                        let v = self.var_decl(linkage, span, false)?;
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
        match self.peek() {
            Some(Tok::DecFloat(s)) => {
                self.advance();
                let parsed =
                    s.split_once('.').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
                parsed.ok_or_else(|| self.error(span, format!("malformed version `{s}`")))
            }
            _ => Err(self.unexpected("a version number such as `7.8`")),
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
        self.advance();
        Some(l)
    }

    /// `@@DWARF …`: a legacy debug line, kept verbatim up to the end of the line.
    fn dwarf_line(&mut self) -> PResult<Directive> {
        let start = self.span();
        self.advance_by(2);
        match self.peek() {
            Some(Tok::Ident("DWARF")) => self.advance(),
            _ => return Err(self.unexpected("`DWARF` after `@@`")),
        }
        let text_start = self.prev_span().end as usize;
        // The directive's text runs to the end of the line or to a comment.
        let line_end = self
            .src
            .get(text_start..)
            .map_or(self.src.len(), |rest| text_start + payload_len(rest));
        while self.peek().is_some() && (self.span().start as usize) < line_end {
            self.advance();
        }
        let text = self.src.get(text_start..line_end).unwrap_or("").trim().to_string();
        Ok(Directive { kind: DirectiveKind::Dwarf(text), span: start.to(self.prev_span()) })
    }

    /// Runs the parser of a directive that ends with its line (`.file`, `.loc`, which
    /// have no `;`). On an error, skips the rest of that line, so that recovery does not
    /// swallow the next statement.
    fn line_directive(&mut self, parse: fn(&mut Self) -> PResult<Directive>) -> Option<Directive> {
        let start = self.span().start as usize;
        match parse(self) {
            Ok(d) => Some(d),
            Err(Failed) => {
                let line_end = self
                    .src
                    .get(start..)
                    .and_then(|rest| rest.find('\n'))
                    .map_or(self.src.len(), |i| start + i);
                while self.peek().is_some() && (self.span().start as usize) < line_end {
                    self.advance();
                }
                None
            }
        }
    }

    /// A non-negative integer constant that fits in `u32`.
    fn const_arg(&mut self, what: &str) -> PResult<Spanned<u32>> {
        if !self.starts_expression() {
            return Err(self.unexpected(what));
        }
        let e = self.expr()?;
        let v = self.const_u32(&e)?;
        Ok(Spanned::new(v, e.span))
    }

    fn const_u64(&mut self, what: &str) -> PResult<u64> {
        if !self.starts_expression() {
            return Err(self.unexpected(what));
        }
        let e = self.expr()?;
        Ok(e.eval_int().map_err(|(s, m)| self.error(s, m))?.value)
    }

    /// `.file 1 "name"[, mtime, size]` — a line-oriented directive without `;`.
    fn file_directive(&mut self) -> PResult<Directive> {
        let start = self.span();
        self.advance();
        let index = self.const_arg("a file number")?.value;
        let path = self.string("the file name in quotes")?;
        let mut timestamp = None;
        let mut size = None;
        if self.eat(Tok::Comma) {
            timestamp = Some(self.const_u64("a modification time")?);
            if self.eat(Tok::Comma) {
                size = Some(self.const_u64("a file size")?);
            }
        }
        Ok(self.directive(DirectiveKind::File { index, path, timestamp, size }, start))
    }

    /// `.loc file line [column] [, function_name label[+imm]] [, inlined_at f l c]`;
    /// PTX ends it at the line's last token, without `;`.
    fn loc_directive(&mut self) -> PResult<Directive> {
        let start = self.span();
        self.advance();
        let file = self.const_arg("a file number after `.loc`")?.value;
        let line = self.const_arg("a line number")?.value;
        let column = if matches!(self.peek(), Some(Tok::Int(_))) {
            Some(self.const_arg("a column number")?.value)
        } else {
            None
        };
        let mut loc = Loc { file, line, column, function_name: None, inlined_at: None };
        while self.peek() == Some(Tok::Comma) {
            match self.peek_at(1) {
                Some(Tok::Ident("function_name")) if loc.function_name.is_none() => {
                    self.advance_by(2);
                    loc.function_name = Some(self.expr()?);
                }
                Some(Tok::Ident("inlined_at")) if loc.inlined_at.is_none() => {
                    self.advance_by(2);
                    let f = self.const_arg("the file number of `inlined_at`")?.value;
                    let l = self.const_arg("the line number of `inlined_at`")?.value;
                    let c = self.const_arg("the column number of `inlined_at`")?.value;
                    loc.inlined_at = Some((f, l, c));
                }
                _ => {
                    self.advance();
                    return Err(self.unexpected("`function_name` or `inlined_at` in `.loc`"));
                }
            }
        }
        Ok(self.directive(DirectiveKind::Loc(loc), start))
    }

    /// `.pragma "a"[, "b"];`.
    fn pragma(&mut self) -> PResult<Directive> {
        let start = self.span();
        self.advance();
        let mut strings = vec![self.string("a string after `.pragma`")?];
        while self.eat(Tok::Comma) {
            strings.push(self.string("a string")?);
        }
        self.expect(Tok::Semi, "`;` after the pragma")?;
        Ok(self.directive(DirectiveKind::Pragma(strings), start))
    }

    /// `.section name { label: | .b8 1, 2 | .b32 label+4 | .b64 end-start … }`.
    fn section(&mut self) -> PResult<Directive> {
        let start = self.span();
        self.advance();
        let name = match self.peek() {
            Some(Tok::Dot(s) | Tok::Ident(s)) => {
                let span = self.span();
                self.advance();
                Spanned::new(Name::from(s), span)
            }
            _ => return Err(self.unexpected("a section name such as `.debug_info`")),
        };
        self.expect(Tok::LBrace, "`{` opening the section")?;
        let mut entries = Vec::new();
        loop {
            let entry_start = self.span();
            match self.peek() {
                Some(Tok::RBrace) => {
                    self.advance();
                    break;
                }
                Some(Tok::Ident(_)) if self.peek_at(1) == Some(Tok::Colon) => {
                    let label = self.ident("a label")?;
                    self.advance();
                    entries.push(SectionEntry::Label(label));
                }
                Some(Tok::Dot(d)) if matches!(d, ".b8" | ".b16" | ".b32" | ".b64") => {
                    self.advance();
                    let ty = ScalarType::from_directive(d).unwrap_or(ScalarType::B8);
                    let ty = Spanned::new(ty, entry_start);
                    let mut values = Vec::new();
                    self.in_section = true;
                    let result = (|| {
                        loop {
                            values.push(self.expr()?);
                            if !self.eat(Tok::Comma) {
                                break;
                            }
                        }
                        Ok(())
                    })();
                    self.in_section = false;
                    result?;
                    let span = entry_start.to(self.prev_span());
                    entries.push(SectionEntry::Data { ty, values, span });
                }
                None => return Err(self.unexpected("`}` closing the section")),
                _ => {
                    return Err(self
                        .unexpected("a label or `.b8`/`.b16`/`.b32`/`.b64` data in the section"))
                }
            }
        }
        Ok(self.directive(DirectiveKind::Section(Section { name, entries }), start))
    }

    // ----- functions ---------------------------------------------------------------------

    fn function(&mut self, linkage: Option<Linkage>, start: Span) -> PResult<Function> {
        let is_entry = matches!(self.bump(), Some((Tok::Dot(".entry"), _)));
        let mut attribute_specs = Vec::new();
        while self.peek() == Some(Tok::Dot(".attribute")) {
            attribute_specs.extend(self.attribute_specs()?);
        }
        let mut returns = Vec::new();
        if !is_entry && self.peek() == Some(Tok::LParen) {
            returns = self.param_list(false)?;
        }
        let name = self.ident("a function name")?;
        let mut params = Vec::new();
        if self.peek() == Some(Tok::LParen) {
            params = self.param_list(false)?;
        }
        let attributes = self.tuning_directives(true)?;
        let body = match self.peek() {
            Some(Tok::Semi) => {
                self.advance();
                None
            }
            Some(Tok::LBrace) => {
                self.advance();
                Some(self.block_body()?)
            }
            // The ptxas of ISA 1.x-2.x ended a prototype at the next declaration, and
            // modules of that era omit the `;`.
            Some(Tok::Dot(_)) | None => None,
            _ => return Err(self.unexpected("`{` starting the function body or `;`")),
        };
        Ok(Function {
            span: start.to(self.prev_span()),
            linkage,
            is_entry,
            name,
            attribute_specs,
            returns,
            params,
            attributes,
            body,
        })
    }

    /// Performance-tuning directives before a function body (and `.pragma`, when
    /// `pragmas`), or after a call prototype.
    fn tuning_directives(&mut self, pragmas: bool) -> PResult<Vec<Directive>> {
        let mut out = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Dot(".pragma")) if pragmas => out.push(self.pragma()?),
                Some(Tok::Dot(d)) if TUNING_DIRECTIVES.contains(&d) => {
                    let start = self.span();
                    self.advance();
                    let name = Spanned::new(Name::from(d), start);
                    let mut values = Vec::new();
                    if self.starts_expression() {
                        loop {
                            values.push(self.const_arg("an integer")?);
                            if !self.eat(Tok::Comma) {
                                break;
                            }
                        }
                    }
                    out.push(self.directive(DirectiveKind::Tuning { name, values }, start));
                }
                _ => return Ok(out),
            }
        }
    }

    /// `(` params `)`; in a call prototype the names may be `_`.
    fn param_list(&mut self, prototype: bool) -> PResult<Vec<Param>> {
        self.expect(Tok::LParen, "`(`")?;
        let mut params = Vec::new();
        if self.eat(Tok::RParen) {
            return Ok(params);
        }
        loop {
            let start = self.span();
            let p = self.var_decl(None, start, prototype)?;
            params.push(p);
            if self.eat(Tok::Comma) {
                continue;
            }
            self.expect(Tok::RParen, "`,` or `)` in the parameter list")?;
            return Ok(params);
        }
    }

    /// `.attribute(.managed)` / `.attribute(.unified(1, 2), .managed)`.
    fn attribute_specs(&mut self) -> PResult<Vec<AttributeSpec>> {
        self.advance();
        self.expect(Tok::LParen, "`(` after `.attribute`")?;
        let mut out = Vec::new();
        loop {
            let start = self.span();
            let name = match self.peek() {
                Some(Tok::Dot(s)) => {
                    self.advance();
                    Spanned::new(Name::from(s), start)
                }
                _ => return Err(self.unexpected("an attribute such as `.managed`")),
            };
            let mut args = Vec::new();
            if self.eat(Tok::LParen) {
                loop {
                    args.push(self.expr()?);
                    if !self.eat(Tok::Comma) {
                        break;
                    }
                }
                self.expect(Tok::RParen, "`,` or `)` after the attribute arguments")?;
            }
            out.push(AttributeSpec { name, args, span: start.to(self.prev_span()) });
            if !self.eat(Tok::Comma) {
                break;
            }
        }
        self.expect(Tok::RParen, "`,` or `)` closing `.attribute`")?;
        Ok(out)
    }

    // ----- declarations --------------------------------------------------------------------

    /// `space [.align N] [.vN] .type [.ptr…] name[<n>][dims] [= init] {, name…}`.
    /// State space, alignment, vector and type may come in any order (compilers vary).
    /// In a call prototype (`prototype`), a parameter may be named `_`.
    fn var_decl(
        &mut self,
        linkage: Option<Linkage>,
        start: Span,
        prototype: bool,
    ) -> PResult<VarDecl> {
        let mut space = None;
        let mut bank = None;
        let mut attribute_specs = Vec::new();
        let mut align = None;
        let mut vector = None;
        let mut ty: Option<Spanned<VarType>> = None;
        let mut ptr = None;
        while let Some(Tok::Dot(d)) = self.peek() {
            let span = self.span();
            if let Some(s) = StateSpace::from_directive(d) {
                self.advance();
                if space.is_some() {
                    return Err(self.error(span, format!("a second state space `{d}`")));
                }
                space = Some(s);
                // `.const[2]`: a banked constant space (deprecated, §5.1.3).
                if s == StateSpace::Const && self.peek() == Some(Tok::LBracket) {
                    self.advance();
                    bank = Some(self.const_arg("a constant bank number")?.value);
                    self.expect(Tok::RBracket, "`]` after the constant bank")?;
                }
            } else if d == ".align" {
                self.advance();
                let e = self.expr()?;
                let v = self.const_u32(&e)?;
                if !v.is_power_of_two() {
                    return Err(
                        self.error(e.span, format!("alignment must be a power of two, not {v}"))
                    );
                }
                align = Some(Spanned::new(v, span.to(e.span)));
            } else if let Some(n) = d.strip_prefix(".v").and_then(|n| n.parse::<u32>().ok()) {
                self.advance();
                if !matches!(n, 2 | 4 | 8) {
                    return Err(
                        self.error(span, format!("vector length must be 2, 4 or 8, not {n}"))
                    );
                }
                vector = Some(n);
            } else if let Some(t) = VarType::from_directive(d) {
                self.advance();
                if ty.is_some() {
                    return Err(self.error(span, format!("a second type `{d}` in the declaration")));
                }
                ty = Some(Spanned::new(t, span));
            } else if d == ".ptr" {
                self.advance();
                let mut attr = PtrAttr { space: None, align: None };
                loop {
                    match self.peek() {
                        Some(Tok::Dot(".align")) => {
                            self.advance();
                            let e = self.expr()?;
                            attr.align = Some(self.const_u32(&e)?);
                        }
                        Some(Tok::Dot(s)) if StateSpace::from_directive(s).is_some() => {
                            attr.space = StateSpace::from_directive(s);
                            self.advance();
                        }
                        _ => break,
                    }
                }
                ptr = Some(attr);
            } else if d == ".attribute" {
                attribute_specs.extend(self.attribute_specs()?);
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
            names.push(self.decl_name(prototype)?);
            // Several names share one declaration only outside parameter lists; in a
            // parameter list the comma separates parameters.
            if self.peek() == Some(Tok::Comma)
                && !matches!(self.peek_at(1), Some(Tok::Dot(_)))
                && space != StateSpace::Param
            {
                self.advance();
                continue;
            }
            break;
        }
        Ok(VarDecl {
            span: start.to(self.prev_span()),
            linkage,
            space,
            bank,
            attribute_specs,
            align,
            vector,
            ty,
            ptr,
            names,
        })
    }

    fn decl_name(&mut self, prototype: bool) -> PResult<DeclName> {
        let name = if prototype && self.peek() == Some(Tok::Underscore) {
            let span = self.span();
            self.advance();
            Spanned::new(Name::from("_"), span)
        } else {
            self.ident("a variable name")?
        };
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
        self.nested(Self::initializer_inner)
    }

    fn initializer_inner(&mut self) -> PResult<Initializer> {
        if self.peek() == Some(Tok::LBrace) {
            let start = self.span();
            self.advance();
            // `{ member = value, … }` of an opaque type.
            if matches!(self.peek(), Some(Tok::Ident(_))) && self.peek_at(1) == Some(Tok::Eq) {
                let mut fields = Vec::new();
                loop {
                    let name = self.ident("a member name such as `filter_mode`")?;
                    self.expect(Tok::Eq, "`=` after the member name")?;
                    fields.push((name, self.expr()?));
                    if !self.eat(Tok::Comma) {
                        break;
                    }
                }
                self.expect(Tok::RBrace, "`,` or `}` in the member list")?;
                return Ok(Initializer::Fields(fields, start.to(self.prev_span())));
            }
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
        // Statements collect on a scratch stack shared by nested blocks and move into a
        // vector of exactly their number when the block closes: no growth copies.
        let base = self.scratch_stmts.len();
        loop {
            match self.peek() {
                None => {
                    self.scratch_stmts.truncate(base);
                    return Err(self.unexpected("`}` closing the block"));
                }
                Some(Tok::RBrace) => {
                    self.advance();
                    return Ok(self.scratch_stmts.drain(base..).collect());
                }
                _ => {
                    let start = self.pos;
                    match self.statement() {
                        Ok(Some(s)) => self.scratch_stmts.push(s),
                        Ok(None) => {}
                        Err(Failed) => {
                            self.recover();
                            if self.pos == start {
                                self.advance();
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
                self.advance();
                let body = self.nested(Self::block_body)?;
                Ok(Some(Statement::Block(body, start.to(self.prev_span()))))
            }
            Some(Tok::Semi) => {
                self.advance();
                Ok(None)
            }
            Some(Tok::Dot(".loc")) => {
                Ok(self.line_directive(Self::loc_directive).map(Statement::Directive))
            }
            Some(Tok::Dot(".pragma")) => Ok(Some(Statement::Directive(self.pragma()?))),
            Some(Tok::Dot(".file")) => {
                Ok(self.line_directive(Self::file_directive).map(Statement::Directive))
            }
            Some(Tok::Dot(d @ (".branchtargets" | ".calltargets" | ".callprototype"))) => {
                Err(self.error(start, format!("`{d}` needs a label: `name: {d} …;`")))
            }
            Some(Tok::Dot(_)) => {
                let linkage = self.linkage();
                let v = self.var_decl(linkage, start, false)?;
                self.expect(Tok::Semi, "`;` after the declaration")?;
                Ok(Some(Statement::Variable(v)))
            }
            Some(Tok::Ident(_)) if self.peek_at(1) == Some(Tok::Colon) => {
                let label = self.ident("a label")?;
                self.advance();
                match self.peek() {
                    Some(Tok::Dot(".branchtargets" | ".calltargets")) => {
                        let branch = self.peek() == Some(Tok::Dot(".branchtargets"));
                        self.advance();
                        let mut targets = vec![self.ident("a label or function name")?];
                        while self.eat(Tok::Comma) {
                            targets.push(self.ident("a label or function name")?);
                        }
                        self.expect(Tok::Semi, "`,` or `;` in the target list")?;
                        let kind = if branch {
                            DirectiveKind::BranchTargets { label, targets }
                        } else {
                            DirectiveKind::CallTargets { label, targets }
                        };
                        Ok(Some(Statement::Directive(self.directive(kind, start))))
                    }
                    Some(Tok::Dot(".callprototype")) => {
                        self.advance();
                        let mut returns = Vec::new();
                        if self.peek() == Some(Tok::LParen) {
                            returns = self.param_list(true)?;
                        }
                        self.expect(Tok::Underscore, "`_` standing for the callee's name")?;
                        let params = if self.peek() == Some(Tok::LParen) {
                            self.param_list(true)?
                        } else {
                            Vec::new()
                        };
                        let attributes = self.tuning_directives(false)?;
                        self.expect(Tok::Semi, "`;` after the prototype")?;
                        let kind =
                            DirectiveKind::CallPrototype { label, returns, params, attributes };
                        Ok(Some(Statement::Directive(self.directive(kind, start))))
                    }
                    _ => Ok(Some(Statement::Label(label))),
                }
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
        let mut modifiers = std::mem::take(&mut self.scratch_mods);
        modifiers.clear();
        loop {
            let span = self.span();
            let d = match self.peek() {
                Some(Tok::Dot(d)) => d,
                // A digits-only modifier directly after the opcode or another modifier
                // (`.16`) lexes as a float such as `.5`.
                Some(Tok::DecFloat(d))
                    if d.starts_with('.') && span.start == self.prev_span().end =>
                {
                    d
                }
                _ => break,
            };
            self.advance();
            // `ld.const[2].b32`: a banked constant access (deprecated).
            if d == ".const"
                && self.peek() == Some(Tok::LBracket)
                && matches!(self.peek_at(1), Some(Tok::Int(_)))
                && self.peek_at(2) == Some(Tok::RBracket)
                && matches!(self.peek_at(3), Some(Tok::Dot(_)))
            {
                self.advance();
                let bank = self.const_arg("a bank number")?;
                self.advance();
                let text = compact_str::format_compact!(".const[{}]", bank.value);
                modifiers.push(Spanned::new(text, span.to(self.prev_span())));
                continue;
            }
            modifiers.push(Spanned::new(Name::from(d), span));
        }
        // Moved into a vector of exactly their number (the scratch keeps its capacity).
        let mut exact_modifiers = Vec::with_capacity(modifiers.len());
        exact_modifiers.append(&mut modifiers);
        self.scratch_mods = modifiers;
        let modifiers = exact_modifiers;
        self.in_call = opcode.value == "call";
        let base = self.scratch_ops.len();
        let result = (|| {
            if self.peek() != Some(Tok::Semi) {
                loop {
                    let op = self.operand()?;
                    self.scratch_ops.push(op);
                    if self.eat(Tok::Comma) {
                        continue;
                    }
                    break;
                }
            }
            self.expect(Tok::Semi, "`,` or `;` after an operand")
        })();
        self.in_call = false;
        let operands: Vec<Operand> = self.scratch_ops.drain(base..).collect();
        result?;
        let op = Opcode::from_name(&opcode.value);
        Ok(Instruction { span: start.to(self.prev_span()), guard, opcode, op, modifiers, operands })
    }

    /// Operands separated by commas up to `close`.
    fn operand_list(&mut self, close: Tok<'s>, what: &str) -> PResult<Vec<Operand>> {
        if self.eat(close) {
            return Ok(Vec::new());
        }
        let base = self.scratch_ops.len();
        let result = (|| loop {
            let op = self.operand()?;
            self.scratch_ops.push(op);
            if self.eat(Tok::Comma) {
                continue;
            }
            self.expect(close, what)?;
            return Ok(());
        })();
        let items = self.scratch_ops.drain(base..).collect();
        result.map(|()| items)
    }

    /// `first|second` if a `|` follows.
    fn maybe_pair(&mut self, first: Operand, start: Span) -> PResult<Operand> {
        if self.eat(Tok::Pipe) {
            let second = self.operand()?;
            return Ok(Operand::Pair(
                Box::new(first),
                Box::new(second),
                start.to(self.prev_span()),
            ));
        }
        Ok(first)
    }

    fn operand(&mut self) -> PResult<Operand> {
        self.nested(Self::operand_inner)
    }

    fn operand_inner(&mut self) -> PResult<Operand> {
        let start = self.span();
        match self.peek() {
            Some(Tok::Bang) => {
                self.advance();
                let inner = self.operand()?;
                Ok(Operand::Not(Box::new(inner), start.to(self.prev_span())))
            }
            Some(Tok::Minus)
                if matches!(self.peek_at(1), Some(Tok::Ident(s)) if s != "WARP_SZ")
                    && !matches!(
                        self.peek_at(2),
                        Some(Tok::Plus | Tok::Minus | Tok::Star | Tok::Slash)
                    ) =>
            {
                self.advance();
                let inner = self.operand()?;
                Ok(Operand::Neg(Box::new(inner), start.to(self.prev_span())))
            }
            Some(Tok::Underscore) => {
                self.advance();
                // `_|%q`: a sink may stand for either destination of a pair (§9.7.6.2).
                self.maybe_pair(Operand::Sink(start), start)
            }
            Some(Tok::LBrace) => {
                self.advance();
                let items = self.operand_list(Tok::RBrace, "`,` or `}` in the vector operand")?;
                let v = Operand::Vector(items, start.to(self.prev_span()));
                self.maybe_pair(v, start)
            }
            Some(Tok::LParen) if self.in_call => {
                self.advance();
                let items = self.operand_list(Tok::RParen, "`,` or `)` in the operand list")?;
                Ok(Operand::List(items, start.to(self.prev_span())))
            }
            Some(Tok::LBracket) => {
                self.advance();
                if matches!(self.peek(), Some(Tok::Ident(_))) && self.peek_at(1) == Some(Tok::Comma)
                {
                    let items = self.operand_list(Tok::RBracket, "`,` or `]` in the operand")?;
                    return Ok(Operand::Tuple(items, start.to(self.prev_span())));
                }
                let addr = self.address(start)?;
                Ok(Operand::Address(addr))
            }
            // `WARP_SZ` is a constant, not a name.
            Some(Tok::Ident(s)) if s != "WARP_SZ" && !self.ident_starts_expression() => {
                let name = self.ident("an operand")?;
                let mut component = None;
                // `%tid.x`, `%r1.y` (vector register elements), `%r1.b0`/`.h1` (video
                // byte and half-word selectors).
                if let Some(Tok::Dot(c)) = self.peek() {
                    component = Some(Box::new(Spanned::new(Name::from(c), self.span())));
                    self.advance();
                }
                // `var[imm]`: an indexed address form.
                if component.is_none() && self.peek() == Some(Tok::LBracket) {
                    self.advance();
                    let e = self.expr()?;
                    let off = e.eval_int().map_err(|(s, m)| self.error(s, m))?;
                    self.expect(Tok::RBracket, "`]`")?;
                    return Ok(Operand::Address(Address {
                        base: Some(name),
                        offset: off.value as i64,
                        element_index: true,
                        unified: false,
                        span: start.to(self.prev_span()),
                    }));
                }
                self.maybe_pair(Operand::Name { name, component }, start)
            }
            _ => Ok(Operand::Imm(self.expr()?)),
        }
    }

    /// An identifier followed by an arithmetic operator starts an expression
    /// (`mov.u64 %rd1, arr+8`); so does `generic(…)`.
    fn ident_starts_expression(&mut self) -> bool {
        matches!(self.peek_at(1), Some(Tok::Plus | Tok::Minus | Tok::Star | Tok::Slash))
            || (self.peek() == Some(Tok::Ident("generic")) && self.peek_at(1) == Some(Tok::LParen))
    }

    /// Whether the next token can start a constant expression.
    fn starts_expression(&mut self) -> bool {
        matches!(
            self.peek(),
            Some(
                Tok::Int(_)
                    | Tok::HexFloat(_)
                    | Tok::DecFloat(_)
                    | Tok::Ident(_)
                    | Tok::LParen
                    | Tok::Minus
                    | Tok::Plus
                    | Tok::Tilde
                    | Tok::Bang
            )
        )
    }

    /// Inside `[ … ]`: `reg`, `reg+imm`, `reg-imm`, `var`, `var+imm`, `imm`.
    fn address(&mut self, start: Span) -> PResult<Address> {
        let mut base = None;
        let mut offset = 0i64;
        if let Some(Tok::Ident(_)) = self.peek() {
            base = Some(self.ident("a register or variable")?);
            match self.peek() {
                Some(Tok::Plus) => {
                    self.advance();
                    let e = self.expr()?;
                    offset = e.eval_int().map_err(|(s, m)| self.error(s, m))?.value as i64;
                }
                Some(Tok::Minus) => {
                    self.advance();
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
        let unified = self.peek() == Some(Tok::Dot(".unified"));
        if unified {
            self.advance();
        }
        Ok(Address {
            base,
            offset,
            element_index: false,
            unified,
            span: start.to(self.prev_span()),
        })
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
        self.nested(|p| p.ternary_inner(allow_gt))
    }

    fn ternary_inner(&mut self, allow_gt: bool) -> PResult<Expr> {
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

    fn binary_op(&mut self, allow_gt: bool) -> Option<(BinaryOp, u8)> {
        let op = BinaryOp::from_token(self.peek()?)?;
        if op == BinaryOp::Gt && !allow_gt {
            return None;
        }
        Some((op, op.precedence()))
    }

    fn binary(&mut self, min_prec: u8, allow_gt: bool) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, prec)) = self.binary_op(allow_gt) {
            if prec < min_prec {
                break;
            }
            self.advance();
            let rhs = self.binary(prec + 1, allow_gt)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr { kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), span };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        self.nested(Self::unary_inner)
    }

    fn unary_inner(&mut self) -> PResult<Expr> {
        let start = self.span();
        let op = match self.peek() {
            Some(Tok::Minus) => Some(UnaryOp::Neg),
            Some(Tok::Plus) => Some(UnaryOp::Plus),
            Some(Tok::Tilde) => Some(UnaryOp::Not),
            Some(Tok::Bang) => Some(UnaryOp::LogicalNot),
            _ => None,
        };
        if let Some(op) = op {
            self.advance();
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
                self.advance();
                let (value, unsigned) = parse_int(s).ok_or_else(|| {
                    self.error(span, format!("integer literal `{s}` does not fit in 64 bits"))
                })?;
                // `0xFF00(expr)`: the mask operator of initializers (§5.4.4).
                if self.peek() == Some(Tok::LParen) && !self.in_call {
                    self.advance();
                    if value == 0 || (value >> value.trailing_zeros()) != 0xFF {
                        return Err(self.error(
                            span,
                            format!("`{s}` is not a byte mask such as `0xFF` or `0xFF00`"),
                        ));
                    }
                    let e = self.expr()?;
                    self.expect(Tok::RParen, "`)` closing the mask operand")?;
                    let span = span.to(self.prev_span());
                    return Ok(Expr {
                        kind: ExprKind::Mask { mask: value, expr: Box::new(e) },
                        span,
                    });
                }
                Ok(Expr { kind: ExprKind::Int { value, unsigned }, span })
            }
            Some(Tok::HexFloat(s)) => {
                self.advance();
                let digits = s.get(2..).unwrap_or("");
                let kind = if s.as_bytes().get(1).is_some_and(|c| c.eq_ignore_ascii_case(&b'f')) {
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
                self.advance();
                let v: f64 = s
                    .parse()
                    .map_err(|_| self.error(span, format!("malformed float literal `{s}`")))?;
                Ok(Expr { kind: ExprKind::F64Bits(v.to_bits()), span })
            }
            Some(Tok::Ident("WARP_SZ")) => {
                self.advance();
                Ok(Expr { kind: ExprKind::Int { value: 32, unsigned: false }, span })
            }
            Some(Tok::Ident("generic")) if self.peek_at(1) == Some(Tok::LParen) => {
                self.advance_by(2);
                let name = self.ident("a variable name in `generic(…)`")?;
                self.expect(Tok::RParen, "`)` closing `generic(`")?;
                Ok(Expr { kind: ExprKind::Generic(name.value), span: span.to(self.prev_span()) })
            }
            Some(Tok::Ident(s)) => {
                self.advance();
                Ok(Expr { kind: ExprKind::Symbol(Name::from(s)), span })
            }
            Some(Tok::Dot(s)) if self.in_section => {
                self.advance();
                Ok(Expr { kind: ExprKind::Symbol(Name::from(s)), span })
            }
            Some(Tok::LParen) => {
                self.advance();
                if let Some(Tok::Dot(c @ (".s64" | ".u64"))) = self.peek() {
                    let signed = c == ".s64";
                    self.advance();
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

#[cfg(test)]
mod tests;
