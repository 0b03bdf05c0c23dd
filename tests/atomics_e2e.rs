//! The atomics kernels of `tests/kernels/atomics.cu` (nvcc 13 sm_75/80/90, NVRTC 12
//! compute_52/70, clang 14 sm_70) run on the default Vulkan device through the Rust API
//! and through `ptxvk run --spec`, checked exactly against the order-independent results
//! of `common/atomics_cases.rs`: final values, old values as multisets, permutations.

mod common;

use common::atomics_cases;

/// A shared-memory histogram (atom.shared add/max/min on u32 and add on f32) merged into
/// global memory, with the last-block-done pattern (membar.gl, atom.inc ticket).
#[test]
fn histogram_shared_then_global_atomics() {
    for case in atomics_cases::histogram() {
        atomics_cases::run(&case);
    }
}

/// Every global atomic CUDA offers on 32- and 64-bit words, compare-and-swap loops for
/// float and double maxima (and for the f64 add before sm_60), and unique slots from a
/// grid-wide counter, by 20,000 threads on the same words.
#[test]
fn atomic_ops_every_operation_under_contention() {
    for case in atomics_cases::atomic_ops() {
        atomics_cases::run(&case);
    }
}

/// 64-bit atomics on shared memory (add, max, signed min, xor, and, exch, f64 add)
/// next to 32-bit atomics and 16-bit stores on the halves and quarters of the same
/// 64-bit words, with `__syncthreads_count` and `__shfl_sync` in the same kernel.
#[test]
fn shared_64_bit_atomics_next_to_narrower_accesses() {
    for case in atomics_cases::shared_atomics64() {
        atomics_cases::run(&case);
    }
}
