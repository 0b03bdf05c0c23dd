//! Parallel parsing of large modules: the text is cut between module items into one
//! chunk per thread, the chunks are lexed, parsed and checked concurrently, and the
//! results are joined in source order.
//!
//! The result is always the one a single sequential parse gives. Parsing at module
//! level carries no state from one item to the next (the module header fields are
//! simply overwritten or extended in order, which the join repeats), so chunks that
//! start and end between items parse exactly as their part of the whole. Cuts are
//! found by a cheap textual rule — a line that is only `}` (how every compiler closes a
//! function), then, after blank and comment lines, a line starting with a directive —
//! which a nested block or a block comment could fool; such a cut leaves a construct unclosed, so a chunk reports an error, and
//! whenever any chunk reports an error the whole module is parsed again sequentially
//! (error reports are rare, and their diagnostics must not depend on where cuts fell).

use crate::ast::{Function, Item, Module};
use crate::diagnostic::Diagnostic;
use crate::parser::parse_range;

/// Below this size a module is parsed on one thread: starting threads would cost more
/// than it saves.
pub const PARALLEL_MIN_BYTES: usize = 1 << 20;

/// How many threads to parse `src` with: the available parallelism for large modules
/// (at most 8), one otherwise.
pub fn threads_for(src: &str) -> usize {
    if src.len() < PARALLEL_MIN_BYTES {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Parses `src` in up to `chunks` pieces on as many threads; the result equals
/// `parse_syntax_in_chunks(src, 1)`, the sequential parse.
pub fn parse_syntax_in_chunks(src: &str, chunks: usize) -> (Module, Vec<Diagnostic>) {
    parse_range_in_chunks(src, 0..src.len(), chunks)
}

/// [`parse_syntax_in_chunks`] of `src[range]` (one file of a
/// [`crate::SourceMap`]), with spans that are offsets into the whole of `src`.
pub fn parse_range_in_chunks(
    src: &str,
    range: std::ops::Range<usize>,
    chunks: usize,
) -> (Module, Vec<Diagnostic>) {
    let (first, last) = (range.start, range.end);
    let cuts: Vec<usize> = cuts(&src[range], chunks).into_iter().map(|c| c + first).collect();
    if cuts.is_empty() {
        return parse_range(src, first, last);
    }
    let mut bounds = Vec::with_capacity(cuts.len() + 2);
    bounds.push(first);
    bounds.extend(&cuts);
    bounds.push(last);
    // `None` when a parser thread panicked (a bug): parse sequentially, so that the
    // caller gets a result (or the panic) from one thread.
    let parts: Option<Vec<(Module, Vec<Diagnostic>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bounds[1..]
            .windows(2)
            .map(|w| {
                let (start, end) = (w[0], w[1]);
                scope.spawn(move || parse_range(src, start, end))
            })
            .collect();
        let first = parse_range(src, bounds[0], bounds[1]);
        let rest: Option<Vec<_>> = handles.into_iter().map(|h| h.join().ok()).collect();
        rest.map(|rest| std::iter::once(first).chain(rest).collect())
    });
    let Some(parts) = parts.filter(|p| p.iter().all(|(_, errors)| errors.is_empty())) else {
        return parse_range(src, first, last);
    };
    let mut module = Module::default();
    for (part, _) in parts {
        // What a sequential parse does as it meets each header directive.
        if part.version.is_some() {
            module.version = part.version;
        }
        if part.address_size.is_some() {
            module.address_size = part.address_size;
        }
        module.target.extend(part.target);
        module.items.extend(part.items);
    }
    (module, Vec::new())
}

/// Checks the instructions of `module` against the instruction table
/// ([`crate::instruction_check::check_module`]) on up to `threads` threads, appending the
/// errors in source order.
pub fn check_module_in_chunks(module: &Module, threads: usize, errors: &mut Vec<Diagnostic>) {
    let items = &module.items;
    if threads <= 1 || items.len() < 2 {
        crate::instruction_check::check_items(items, errors);
        return;
    }
    // Items of about equal numbers of statements per thread.
    let weight = |item: &Item| match item {
        Item::Function(Function { body: Some(body), .. }) => body.len() + 1,
        _ => 1,
    };
    let total: usize = items.iter().map(weight).sum();
    let mut ranges = Vec::new();
    let (mut start, mut acc) = (0, 0);
    for (k, item) in items.iter().enumerate() {
        acc += weight(item);
        if acc * threads >= total * (ranges.len() + 1) && ranges.len() + 1 < threads {
            ranges.push(start..k + 1);
            start = k + 1;
        }
    }
    ranges.push(start..items.len());
    // `None` when a thread panicked (a bug): the check then runs again on this thread.
    let found: Option<Vec<Vec<Diagnostic>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ranges[1..]
            .iter()
            .map(|r| {
                let part = &items[r.clone()];
                scope.spawn(move || {
                    let mut e = Vec::new();
                    crate::instruction_check::check_items(part, &mut e);
                    e
                })
            })
            .collect();
        let mut first = Vec::new();
        crate::instruction_check::check_items(&items[ranges[0].clone()], &mut first);
        let rest: Option<Vec<_>> = handles.into_iter().map(|h| h.join().ok()).collect();
        rest.map(|rest| std::iter::once(first).chain(rest).collect())
    });
    match found {
        Some(found) => errors.extend(found.into_iter().flatten()),
        None => crate::instruction_check::check_items(items, errors),
    }
}

/// Up to `chunks - 1` offsets, increasing, where `src` may be cut between module items:
/// the start of the first line that begins with a directive after a line that is only
/// `}` (blank and `//` comment lines between them), at or after each of the equal-size
/// targets.
pub fn cuts(src: &str, chunks: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    if chunks <= 1 {
        return out;
    }
    let bytes = src.as_bytes();
    for k in 1..chunks {
        let target = (src.len() / chunks * k).max(out.last().map_or(0, |c| c + 1));
        match cut_after(bytes, target) {
            Some(cut) if out.last().is_none_or(|&c| cut > c) && cut < src.len() => out.push(cut),
            _ => break,
        }
    }
    out
}

/// The first cut point at or after `from` (see [`cuts`]).
fn cut_after(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        // A line that is only `}` (and blanks).
        let close = i + find(&bytes[i.min(bytes.len())..], b"\n}")? + 1;
        let mut j = close + 1;
        while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\r') {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'\n' {
            // Skip blank and `//` comment lines; the cut is at the start of the next
            // line if it starts with a directive.
            let mut line = j + 1;
            loop {
                let mut k = line;
                while k < bytes.len() && matches!(bytes[k], b' ' | b'\t' | b'\r') {
                    k += 1;
                }
                match bytes.get(k) {
                    Some(b'\n') => line = k + 1,
                    Some(b'/') if bytes.get(k + 1) == Some(&b'/') => {
                        line = k + find(&bytes[k..], b"\n").map_or(bytes.len() - k, |n| n + 1);
                    }
                    Some(b'.') => return Some(line),
                    _ => break,
                }
            }
        }
        i = close;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\n\
        .visible .entry a()\n{\n\t{\n\tret;\n}\n\tret;\n}\n\n\
        .visible .entry b()\n{\n\tret;\n}\n.global .u32 g;\n";

    #[test]
    fn cuts_fall_between_items() {
        let all = cuts(TWO, 2);
        assert_eq!(all.len(), 1);
        // The nested block's `}` at column 0 is followed by `\tret;`, not a directive,
        // so the cut is before `.visible .entry b`.
        assert!(TWO[all[0]..].starts_with(".visible .entry b"), "{:?}", &TWO[all[0]..]);
        assert_eq!(parse_syntax_in_chunks(TWO, 2), parse_range(TWO, 0, TWO.len()));
    }

    #[test]
    fn a_cut_inside_a_function_falls_back_to_one_parse() {
        // `}` alone on a line inside the body, then a declaration: a wrong cut, which
        // the chunk's error reveals.
        let src = ".version 7.0\n.target sm_70\n.address_size 64\n\
            .visible .entry a()\n{\n\t{\n\tret;\n}\n.reg .b32 %r;\n\tret;\n}\n";
        let all = cuts(src, 2);
        assert_eq!(all.len(), 1);
        assert!(src[all[0]..].starts_with(".reg"));
        let (m, errors) = parse_syntax_in_chunks(src, 2);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!((m, errors), parse_range(src, 0, src.len()));
    }

    #[test]
    fn errors_are_reported_as_by_one_parse() {
        let src = TWO.replace("\tret;\n}\n.global", "\tret\n}\n.global");
        let parallel = parse_syntax_in_chunks(&src, 3);
        assert!(!parallel.1.is_empty());
        assert_eq!(parallel, parse_range(&src, 0, src.len()));
    }
}
