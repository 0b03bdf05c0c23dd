//! The parser never panics or hangs, whatever the input: random PTX-like token soup and
//! random mutations (deletions, insertions, duplications) of real compiler output.

use proptest::prelude::*;

const CORPUS: &[&str] = &[
    include_str!("../../tests/kernels/block_reduce.nvcc.sm_80.ptx"),
    include_str!("../../tests/kernels/int64_ops.clang.sm_70.ptx"),
    include_str!("../../tests/kernels/matadd2d.nvrtc.compute_52.ptx"),
];

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
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn token_soup(pieces in proptest::collection::vec(0..PIECES.len(), 0..200)) {
        let text: String = pieces.iter().map(|&i| PIECES[i]).collect::<Vec<_>>().join(" ");
        let _ = ptxvk_frontend::parse(&text);
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
        let _ = ptxvk_frontend::parse(&String::from_utf8_lossy(&text));
    }

    #[test]
    fn arbitrary_unicode(text in "\\PC{0,300}") {
        let _ = ptxvk_frontend::parse(&text);
    }
}
