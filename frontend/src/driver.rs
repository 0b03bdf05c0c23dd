//! The front end's entry points: a module parsed (in chunks on threads when it is
//! large, `split`), every instruction checked against the instruction table
//! (`instruction_check`) and the module's `.target` (`target`), and vector element
//! indices scaled (`indexing`).
//!
//! After parsing, a misspelled modifier or an operand of the wrong shape is reported at
//! the offending token. Opcodes the table does not know are left to semantic analysis,
//! which reports them at the instruction.

use crate::ast::Module;
use crate::diagnostic::{Diagnostic, Diagnostics, SourceMap};
use crate::{indexing, split, target};

/// Parses a whole PTX module and checks its instructions against the instruction
/// table. Returns the module, or every error found, in source order.
pub fn parse(src: &str) -> Result<Module, Diagnostics> {
    parse_in(src, 0..src.len())
}

/// Parses file `i` of a [`SourceMap`] like [`parse`]; spans are offsets into the map,
/// so diagnostics of modules linked together name their own files.
pub fn parse_file(map: &SourceMap, i: usize) -> Result<Module, Diagnostics> {
    parse_in(map.text(), map.range(i))
}

fn parse_in(src: &str, range: std::ops::Range<usize>) -> Result<Module, Diagnostics> {
    let threads = split::threads_for(&src[range.clone()]);
    let (module, mut errors) = split::parse_range_in_chunks(src, range, threads);
    // Instructions that parsed are checked even when others did not.
    let syntax_errors = errors.len();
    split::check_module_in_chunks(&module, threads, &mut errors);
    target::check_module(&module, &mut errors);
    let mut module = module;
    indexing::scale_element_indices(&mut module, &mut errors);
    if errors.len() > syntax_errors {
        errors.sort_by_key(|d| d.span.start);
    }
    if errors.is_empty() {
        Ok(module)
    } else {
        Err(Diagnostics(errors))
    }
}

/// Parses a module without checking instructions against the instruction table: the
/// (possibly partial) module and the syntax errors found. Large modules are parsed in
/// parallel ([`split`]), with the same result as one sequential parse.
pub fn parse_syntax(src: &str) -> (Module, Vec<Diagnostic>) {
    split::parse_syntax_in_chunks(src, split::threads_for(src))
}
