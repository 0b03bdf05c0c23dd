//! The lexical pieces the parser reads by hand: constant-expression operators, the text of
//! line-oriented directives, and integer literals (PTX ISA 9.2 §4.5).

use crate::ast::BinaryOp;
use crate::lexer::Tok;

impl BinaryOp {
    pub(super) fn from_token(t: Tok<'_>) -> Option<BinaryOp> {
        use BinaryOp::*;
        Some(match t {
            Tok::OrOr => LogicalOr,
            Tok::AndAnd => LogicalAnd,
            Tok::Pipe => Or,
            Tok::Caret => Xor,
            Tok::Amp => And,
            Tok::EqEq => Eq,
            Tok::Ne => Ne,
            Tok::Lt => Lt,
            Tok::Gt => Gt,
            Tok::Le => Le,
            Tok::Ge => Ge,
            Tok::Shl => Shl,
            Tok::Shr => Shr,
            Tok::Plus => Add,
            Tok::Minus => Sub,
            Tok::Star => Mul,
            Tok::Slash => Div,
            Tok::Percent => Rem,
            _ => return None,
        })
    }
}

/// The length of a line-oriented directive's text in `rest`: up to the end of the line
/// or the start of a comment outside a string literal.
pub(super) fn payload_len(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => return i,
            b'"' => in_string = !in_string,
            b'\\' if in_string => i += 1,
            b'/' if !in_string && matches!(bytes.get(i + 1), Some(b'/' | b'*')) => return i,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// Parses an integer literal (§4.5.1). Literals that do not fit in s64 are unsigned.
pub(super) fn parse_int(s: &str) -> Option<(u64, bool)> {
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
