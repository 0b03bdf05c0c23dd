//! The parser never panics or hangs, whatever the input: random PTX-like token soup and
//! random mutations (deletions, insertions, duplications) of real compiler output and of
//! the syntax corpus. Every mutated input that still parses must also round-trip through
//! the printer.
//!
//! Each property runs `PTXVK_FUZZ_CASES` cases (default 2000); for a longer run:
//!
//! ```text
//! PTXVK_FUZZ_CASES=200000 cargo test --release -p ptxvk-frontend --test never_panics
//! ```

mod common;

use proptest::prelude::*;

const CORPUS: &[&str] = &[
    include_str!("../../tests/kernels/block_reduce.nvcc.sm_80.ptx"),
    include_str!("../../tests/kernels/int64_ops.clang.sm_70.ptx"),
    include_str!("../../tests/kernels/matadd2d.nvrtc.compute_52.ptx"),
    include_str!("../../tests/ptx/syntax/reject_module_directives.ptx"),
    include_str!("../../tests/ptx/syntax/reject_instructions_sm80.ptx"),
    include_str!("../../tests/ptx/syntax/reject_instructions_sm90.ptx"),
    include_str!("../../tests/ptx/syntax/reject_instructions_sm100.ptx"),
    include_str!("../../tests/ptx/syntax/reject_textures.ptx"),
    include_str!("../../tests/ptx/syntax/reject_legacy_ptx1.ptx"),
];

fn cases() -> u32 {
    std::env::var("PTXVK_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

/// Parses `text`; when it parses, the printed module must parse back to the same AST.
/// Parsing in chunks on several threads gives what one sequential parse gives.
fn check(text: &str) {
    use ptxvk_frontend::split::parse_syntax_in_chunks;
    assert!(parse_syntax_in_chunks(text, 3) == parse_syntax_in_chunks(text, 1));
    if let Ok(m) = ptxvk_frontend::parse(text) {
        let printed = ptxvk_frontend::print(&m);
        let (again, errors) = ptxvk_frontend::parse_syntax(&printed);
        assert!(errors.is_empty(), "printed module does not parse: {errors:?}\n{printed}");
        let (a, b) = (common::span_free(&m), common::span_free(&again));
        assert!(a == b, "round trip changed: {}\n{printed}", common::first_difference(&a, &b));
    }
}

const PIECES: &[&str] = &[
    ".version",
    "7.8",
    ".target",
    "sm_80",
    ".address_size",
    "64",
    ".visible",
    ".entry",
    ".func",
    "k",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    ";",
    ":",
    ".param",
    ".reg",
    ".shared",
    ".global",
    ".u64",
    ".b32",
    ".f32",
    ".pred",
    "%r1",
    "%r<4>",
    "%p1",
    "@",
    "!",
    "bra",
    "ret",
    "ld",
    "st",
    "add",
    ".s32",
    "mov",
    "%tid",
    ".x",
    "0f3F800000",
    "0x10",
    "-1",
    "1.5",
    "$L__BB0_1",
    "+",
    "-",
    "*",
    "<",
    ">",
    "|",
    "_",
    "\"s\"",
    "//c\n",
    "/*",
    "*/",
    "\n",
    " ",
    "?",
    "=",
    ".align",
    "8",
    ".b8",
    "arr[16]",
    ".loc",
    ".file",
    ".section",
    ".pragma",
    "setp",
    ".lt",
    "WARP_SZ",
    "(.s64)",
    ".callprototype",
    ".branchtargets",
    ".calltargets",
    "proto:",
    ".texref",
    ".samplerref",
    "generic(",
    "0xFF00(",
    ".const[2]",
    ".attribute(.managed)",
    "inlined_at",
    "function_name",
    "@@DWARF",
    "[tex, {%r1, %r2}]",
    "-%r1.b0",
    ".b32 $L1-$L0",
    ".05",
    "call.uni (retval0), f, (param0);",
    "{%f1,%f2}|%p1",
    "\"",
    "tcgen05.mma.cta_group::1.kind::tf32",
    ".m16n8k16",
];

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn token_soup(pieces in proptest::collection::vec(0..PIECES.len(), 0..200)) {
        let text: String = pieces.iter().map(|&i| PIECES[i]).collect::<Vec<_>>().join(" ");
        check(&text);
    }

    #[test]
    fn mutated_compiler_output(
        which in 0..CORPUS.len(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<prop::sample::Index>(), 1usize..40), 1..8),
    ) {
        let mut text = CORPUS[which].as_bytes().to_vec();
        for (at, kind, piece, len) in edits {
            if text.is_empty() { break; }
            let i = at.index(text.len());
            match kind {
                0 => { let end = (i + len).min(text.len()); text.drain(i..end); }
                1 => { let p = PIECES[piece.index(PIECES.len())].as_bytes(); text.splice(i..i, p.iter().copied()); }
                2 => { let end = (i + len).min(text.len()); let dup = text[i..end].to_vec(); text.splice(i..i, dup); }
                _ => { text[i] = b"{};,.%[]()"[piece.index(10)]; }
            }
        }
        check(&String::from_utf8_lossy(&text));
    }

    #[test]
    fn arbitrary_unicode(text in "\\PC{0,300}") {
        check(&text);
    }
}

proptest! {
    // Larger inputs: a tenth of the cases.
    #![proptest_config(ProptestConfig {
        cases: cases() / 10,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Several kernels in one module, mutated: cuts between (and, after mutation,
    /// inside) items.
    #[test]
    fn mutated_multi_kernel_modules(
        parts in proptest::collection::vec(0..3usize, 2..5),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<prop::sample::Index>()), 0..4),
    ) {
        let mut text = CORPUS[0].to_string();
        for p in parts {
            let body = CORPUS[p];
            let first = body.find(".visible").unwrap_or(0);
            text.push_str(&body[first..]);
        }
        let mut bytes = text.into_bytes();
        for (at, kind, piece) in edits {
            let i = at.index(bytes.len());
            match kind {
                0 => { bytes.remove(i); }
                1 => { bytes.insert(i, b"{};\n}."[piece.index(6)]); }
                _ => { bytes.splice(i..i, b"\n}\n.reg .b32 %x;\n".iter().copied()); }
            }
        }
        check(&String::from_utf8_lossy(&bytes));
    }
}
