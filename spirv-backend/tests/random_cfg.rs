//! Structured random CFGs (dispatchers, switches, nested loops with several exits,
//! irreducible cycles made reducible) compile to SPIR-V that passes
//! `spirv-val --target-env vulkan1.3`.

use ptxvk_lower::pass::structurize;
use ptxvk_lower::random_cfg::{kernel, Rng};
use ptxvk_lower::LoweredKernel;

#[test]
fn structured_random_cfgs_are_valid_spirv() {
    let mut rng = Rng(0xc0ffee);
    for seed in 0..300u64 {
        let blocks = 1 + rng.below(60) as usize;
        let mut k = kernel(seed, blocks);
        let body =
            structurize::run(&mut k).unwrap_or_else(|d| panic!("seed {seed}: {}", d.message));
        let module = ptxvk_spirv::compile(&[LoweredKernel { kernel: k, body }])
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        if let Err(e) = ptxvk_spirv::validate(&module.words) {
            let text = ptxvk_spirv::disassemble(&module.words).unwrap_or_default();
            panic!("seed {seed} ({blocks} blocks): {e}\n{text}");
        }
    }
}
