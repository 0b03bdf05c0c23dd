//! The whole compiler (parse → lower → structurize → SPIR-V) never panics on damaged
//! input, and whatever it accepts is valid SPIR-V: random mutations of real compiler
//! output either produce diagnostics or a module that passes spirv-val.
//!
//! The IR text parser gets the same treatment: damaged IR is an error, never a panic.
//!
//! For a longer run: `PTXVK_FUZZ_CASES=20000 cargo test --release --test compiler_robustness`.

use proptest::prelude::*;

const CORPUS: &[&str] = &[
    include_str!("kernels/block_reduce.nvcc.sm_80.ptx"),
    include_str!("kernels/int64_ops.clang.sm_70.ptx"),
    include_str!("kernels/collatz.nvrtc.compute_70.ptx"),
    include_str!("kernels/saxpy.nvcc.sm_90.ptx"),
    include_str!("kernels/simd_video.nvcc.sm_90.ptx"),
    include_str!("kernels/warp_divergent.nvcc.sm_80.ptx"),
    include_str!("ptx/warp/redux_f32.ptx"),
    include_str!("ptx/warp/collectives.ptx"),
    // Inputs of the legalization passes: atomics, sub-word window stores, directed
    // rounding.
    include_str!("kernels/atomics.nvcc.sm_75.ptx"),
    include_str!("ptx/memory/half_atomics.ptx"),
    include_str!("ptx/memory/local_generic.ptx"),
    include_str!("ptx/ops/directed_f32.ptx"),
];

/// Cases per run: `PTXVK_FUZZ_CASES` (default 400), as in the front end's fuzz tests.
fn cases() -> u32 {
    std::env::var("PTXVK_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400)
}

/// Line-level edits keep most of the file well formed, so mutants reach lowering and
/// code generation instead of stopping at the parser.
fn mutate(text: &str, edits: &[(prop::sample::Index, u8, prop::sample::Index)]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for (at, kind, other) in edits {
        if lines.is_empty() {
            break;
        }
        let i = at.index(lines.len());
        let j = other.index(lines.len());
        match kind {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[j].clone();
                lines.insert(i, l);
            }
            2 => lines.swap(i, j),
            _ => {
                // Swap two whitespace-separated words of one line (operands, labels).
                let mut words: Vec<String> =
                    lines[i].split_whitespace().map(str::to_string).collect();
                if words.len() > 2 {
                    let (a, b) = (j % words.len(), (j / 3) % words.len());
                    words.swap(a, b);
                    lines[i] = words.join(" ");
                }
            }
        }
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn mutants_give_diagnostics_or_valid_spirv(
        which in 0..CORPUS.len(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<prop::sample::Index>()), 1..4),
    ) {
        let text = mutate(CORPUS[which], &edits);
        match ptxvk::compile::compile("mutant.ptx", &text, None) {
            Ok(c) => {
                if let Err(e) = ptxvk::spirv::validate(&c.spirv.words) {
                    panic!("accepted PTX produced invalid SPIR-V: {e}\n--- PTX ---\n{text}");
                }
            }
            Err(ptxvk::Error::Ptx { rendered, .. }) => prop_assert!(rendered.contains("mutant.ptx:")),
            Err(ptxvk::Error::NoSuchKernel { .. }) => {}
            Err(e) => panic!("unexpected error kind: {e}\n--- PTX ---\n{text}"),
        }
    }
}

/// The IR of the corpus kernels, as text (`ptxvk compile --emit ir`).
fn corpus_ir() -> &'static [String] {
    static IR: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    IR.get_or_init(|| {
        CORPUS
            .iter()
            .flat_map(|text| {
                let sources = ptxvk::SourceMap::new([("corpus.ptx", *text)]);
                ptxvk::compile::analyze_linked(&sources, None).expect("the corpus lowers")
            })
            .map(|k| ptxvk::lower::text::print(&k))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// The IR parser never panics on damaged text, and what it accepts either fails the
    /// verifier or lowers (an error, never a panic).
    #[test]
    fn damaged_ir_text_is_an_error_not_a_panic(
        which in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<prop::sample::Index>()), 1..4),
    ) {
        let ir = corpus_ir();
        let text = mutate(&ir[which.index(ir.len())], &edits);
        if let Ok(kernels) = ptxvk::lower::text::parse(&text) {
            for k in kernels {
                if ptxvk::lower::verify::run(&k).is_ok() {
                    let _ = ptxvk::lower::pass::run(k, &ptxvk::lower::pass::Target::default());
                }
            }
        }
    }
}
