//! ptxvk's PTX front end: lexer, parser, AST and diagnostics.
//!
//! ```
//! let module = ptxvk_frontend::parse(".version 7.0\n.target sm_70\n.address_size 64\n").unwrap();
//! assert_eq!(module.address_size.unwrap().value, 64);
//! ```
#![forbid(unsafe_code)]

pub mod ast;
pub mod diagnostic;
pub mod lexer;
pub mod parser;
pub mod span;

pub use diagnostic::{Diagnostic, Diagnostics, Severity, SourceFile};
pub use parser::parse;
pub use span::{Ident, Span, Spanned};
