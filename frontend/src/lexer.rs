//! The PTX lexer (PTX ISA 9.2 §4.3–§4.5).
//!
//! Dotted words (`.global`, `.rn`, `.v4`, `.L2::evict_last`) are one token kind and are
//! checked against tables by the parser and by semantic analysis, not hundreds of token
//! variants. Numbers keep their source text; the parser converts them so that overflow is
//! reported with a span.

use logos::Logos;

use crate::span::Span;

#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\x0c]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
pub enum Tok<'s> {
    /// `.name`, `.v4`, `.2d`, `.L2::evict_last`, `.shared::cta`.
    #[regex(r"\.[A-Za-z0-9_$][A-Za-z0-9_$]*(::[A-Za-z0-9_]+)*", |l| l.slice())]
    Dot(&'s str),
    /// Identifiers per §4.4: `[a-zA-Z]{followsym}*` or `[_$%]{followsym}+`.
    #[regex(r"[A-Za-z][A-Za-z0-9_$]*|[_$%][A-Za-z0-9_$]+", |l| l.slice())]
    Ident(&'s str),
    /// A single `_`, the sink operand.
    #[token("_")]
    Underscore,
    /// Integer literals: hex, octal, binary or decimal, with optional `U` suffix (§4.5.1).
    #[regex(r"0[xX][0-9a-fA-F]+U?|0[bB][01]+U?|0[0-7]*U?|[1-9][0-9]*U?", |l| l.slice())]
    Int(&'s str),
    /// `0f` + 8 hex digits (f32 bits) or `0d` + 16 hex digits (f64 bits) (§4.5.2).
    #[regex(r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}", |l| l.slice())]
    HexFloat(&'s str),
    /// Decimal floating-point literals, which PTX reads as f64 (§4.5.2), including the
    /// `.05` form without a leading digit.
    #[regex(r"[0-9]+\.[0-9]*([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+", |l| l.slice())]
    #[regex(r"\.[0-9]+([eE][+-]?[0-9]+)?", |l| l.slice(), priority = 10)]
    DecFloat(&'s str),
    #[regex(r#""([^"\\\n]|\\.)*""#, |l| l.slice())]
    Str(&'s str),
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token(":")]
    Colon,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("==")]
    EqEq,
    #[token("!=")]
    Ne,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("!")]
    Bang,
    #[token("~")]
    Tilde,
    #[token("&")]
    Amp,
    #[token("^")]
    Caret,
    #[token("|")]
    Pipe,
    #[token("?")]
    Question,
    #[token("=")]
    Eq,
    #[token("@")]
    At,
    /// `/*` without a closing `*/`: the rest of the input. Terminated block comments
    /// are skipped (by searching for `*/` directly, which keeps lexing linear even
    /// for inputs full of unterminated comments).
    #[token("/*", block_comment)]
    UnterminatedComment,
    /// A character that starts no PTX token.
    Error,
}

fn block_comment<'s>(lex: &mut logos::Lexer<'s, Tok<'s>>) -> logos::FilterResult<(), ()> {
    match lex.remainder().find("*/") {
        Some(end) => {
            lex.bump(end + 2);
            logos::FilterResult::Skip
        }
        None => {
            lex.bump(lex.remainder().len());
            logos::FilterResult::Emit(())
        }
    }
}

impl Tok<'_> {
    /// How the token reads in a diagnostic.
    pub fn describe(&self) -> String {
        match self {
            Tok::Dot(s) | Tok::Ident(s) | Tok::Int(s) | Tok::HexFloat(s) | Tok::DecFloat(s) => {
                format!("`{s}`")
            }
            Tok::Str(_) => "a string".into(),
            Tok::Underscore => "`_`".into(),
            Tok::Error => "an invalid character".into(),
            Tok::UnterminatedComment => "a `/*` comment without `*/`".into(),
            other => format!("`{}`", other.punct()),
        }
    }

    fn punct(&self) -> &'static str {
        match self {
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Colon => ":",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::Lt => "<",
            Tok::Gt => ">",
            Tok::Le => "<=",
            Tok::Ge => ">=",
            Tok::EqEq => "==",
            Tok::Ne => "!=",
            Tok::Shl => "<<",
            Tok::Shr => ">>",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Bang => "!",
            Tok::Tilde => "~",
            Tok::Amp => "&",
            Tok::Caret => "^",
            Tok::Pipe => "|",
            Tok::Question => "?",
            Tok::Eq => "=",
            Tok::At => "@",
            _ => "?",
        }
    }
}

/// Splits `src` into tokens with spans. Characters that start no token become
/// [`Tok::Error`] so that the parser reports them in place and goes on. (The parser
/// itself pulls tokens from the lexer as it goes instead of collecting them.)
pub fn tokenize(src: &str) -> Vec<(Tok<'_>, Span)> {
    Tok::lexer(src)
        .spanned()
        .map(|(tok, range)| (tok.unwrap_or(Tok::Error), Span::from(range)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok<'_>> {
        tokenize(src).into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn instruction_with_modifiers_and_special_register() {
        assert_eq!(
            kinds("ld.global.v4.f32 {%f1,_}, [%rd1+16]; mov.u32 %r1, %tid.x;"),
            vec![
                Tok::Ident("ld"),
                Tok::Dot(".global"),
                Tok::Dot(".v4"),
                Tok::Dot(".f32"),
                Tok::LBrace,
                Tok::Ident("%f1"),
                Tok::Comma,
                Tok::Underscore,
                Tok::RBrace,
                Tok::Comma,
                Tok::LBracket,
                Tok::Ident("%rd1"),
                Tok::Plus,
                Tok::Int("16"),
                Tok::RBracket,
                Tok::Semi,
                Tok::Ident("mov"),
                Tok::Dot(".u32"),
                Tok::Ident("%r1"),
                Tok::Comma,
                Tok::Ident("%tid"),
                Tok::Dot(".x"),
                Tok::Semi,
            ]
        );
    }

    #[test]
    fn numbers_and_labels() {
        assert_eq!(
            kinds("0f3F800000 0d3FF0000000000000 0x1fU 017 0b101 1.5e3 $L__BB0_2: 7.8"),
            vec![
                Tok::HexFloat("0f3F800000"),
                Tok::HexFloat("0d3FF0000000000000"),
                Tok::Int("0x1fU"),
                Tok::Int("017"),
                Tok::Int("0b101"),
                Tok::DecFloat("1.5e3"),
                Tok::Ident("$L__BB0_2"),
                Tok::Colon,
                Tok::DecFloat("7.8"),
            ]
        );
    }

    #[test]
    fn floats_without_leading_digit_versus_dotted_words() {
        assert_eq!(
            kinds(".05 .2d .5e3 .16x64b"),
            vec![Tok::DecFloat(".05"), Tok::Dot(".2d"), Tok::DecFloat(".5e3"), Tok::Dot(".16x64b")]
        );
    }

    #[test]
    fn unterminated_comments_lex_in_linear_time() {
        assert_eq!(
            kinds("a /* b */ c /* d"),
            vec![Tok::Ident("a"), Tok::Ident("c"), Tok::UnterminatedComment]
        );
        let many = "/* x ".repeat(50_000);
        let t = std::time::Instant::now();
        assert_eq!(kinds(&many), vec![Tok::UnterminatedComment]);
        assert!(t.elapsed().as_secs() < 5, "quadratic lexing: {:?}", t.elapsed());
    }

    #[test]
    fn comments_and_cache_hints() {
        assert_eq!(
            kinds("/* a\n*/ ld.L2::evict_last // c\n#"),
            vec![Tok::Ident("ld"), Tok::Dot(".L2::evict_last"), Tok::Error]
        );
    }
}
