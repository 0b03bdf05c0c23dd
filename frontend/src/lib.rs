//! ptxvk's PTX front end: lexer, parser, AST, instruction table, diagnostics and
//! printer.
//!
//! - [`parse`] reads a whole module (PTX ISA 1.x to 9.2 syntax) into the [`ast`], checks
//!   every instruction against the [`instructions`] table, and returns the module or
//!   every error found, each with a span ([`SourceFile::render`] prints them with
//!   `file:line:column` and a caret).
//! - [`link()`] joins modules parsed from the files of one [`SourceMap`]
//!   ([`parse_file`]) into one, resolving `.extern`/`.weak`/`.common` symbols.
//! - [`print()`] writes an AST back as PTX that `ptxas` accepts; parsing the output gives
//!   the same AST up to spans.
//!
//! ```
//! let src = ".version 7.0\n.target sm_70\n.address_size 64\n";
//! let module = ptxvk_frontend::parse(src).unwrap();
//! assert_eq!(module.address_size.as_ref().unwrap().value, 64);
//! assert!(ptxvk_frontend::print(&module).starts_with(".version 7.0\n"));
//! ```
#![forbid(unsafe_code)]

pub mod ast;
pub mod decode;
pub mod diagnostic;
mod driver;
pub mod forms;
mod indexing;
pub mod instruction_check;
pub mod instructions;
pub mod legacy;
pub mod lexer;
pub mod library;
pub mod link;
pub mod modifier;
pub mod parser;
pub mod printer;
pub mod source;
pub mod span;
pub mod split;
mod target;
pub mod vectors;

pub use diagnostic::{Diagnostic, Diagnostics, Severity, SourceFile, SourceMap};
pub use driver::{parse, parse_file, parse_syntax};
pub use instructions::Opcode;
pub use link::link;
pub use printer::print;
pub use span::{Ident, Name, Span, Spanned};
