//! Pass: every vector atomic ([`InstKind::VectorAtomic`], `atom`/`red` with `.v2`,
//! `.v4` or `.v8`, PTX ISA 9.2 §9.7.13.5-6) becomes one [`InstKind::Atomic`] per
//! element, in element order (the ISA makes each element atomic on its own, not the
//! vector as a whole), each at its element's offset from the vector's address
//! ([`crate::ir::VectorAtomic::element`]); `pass::legalize_atomics` later makes those
//! that SPIR-V lacks (float and half additions, 16-bit elements) compare-and-swap
//! loops, as it does scalar ones.
//!
//! Pre: CFG IR from semantic analysis, with its functions (first of the passes, so that
//! the others see the elements: `widen_generic`, `infer_spaces` and `expand_generic`
//! their generic addresses).
//!
//! Post: no `VectorAtomic` is left.

use crate::ir::{Inst, InstKind, Kernel};

/// Whether `kind` is a vector atomic.
pub fn is_vector_atomic(kind: &InstKind) -> bool {
    matches!(kind, InstKind::VectorAtomic(_))
}

/// Splits the vector atomics of the kernel and of its functions.
pub fn run(k: &mut Kernel) {
    split_in(&mut k.blocks);
    for f in &mut k.functions {
        split_in(&mut f.blocks);
    }
}

fn split_in(blocks: &mut [crate::ir::Block]) {
    for b in blocks {
        if !b.insts.iter().any(|i| is_vector_atomic(&i.kind)) {
            continue;
        }
        let insts = std::mem::take(&mut b.insts);
        for inst in insts {
            match &inst.kind {
                InstKind::VectorAtomic(a) => {
                    let span = inst.span;
                    let elements = (0..a.srcs.len()).map(|e| Inst { kind: a.element(e), span });
                    b.insts.extend(elements);
                }
                _ => b.insts.push(inst),
            }
        }
    }
}
