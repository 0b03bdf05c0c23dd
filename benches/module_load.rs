//! Loading a library-sized module: what a program waits for before its first launch
//! when a module holds hundreds of kernels of which it uses one (CuPy's CUB module has
//! 383 in 22 MB of PTX; NVIDIA's runtime loads such modules through the driver).
//!
//! The module is `KERNELS` copies of `tests/kernels/block_reduce.nvcc.sm_80.ptx`'s
//! kernel under different names. Measured, each the median of `RUNS` runs:
//! - **whole**: `compile::compile_module`, every kernel to SPIR-V (what loading did
//!   before lazy loading, without the pipelines);
//! - **lazy load** and **first kernel**: `compile::LazyModule::new` (parse, link,
//!   module-scope checks) and compiling one kernel;
//! - on the device, once: `Module::link` (every kernel compiled and its pipeline
//!   created) against `Module::link_lazy` plus the lookup of one kernel.
//!
//! ```text
//! cargo bench --bench module_load [-- KERNELS]
//! ```

mod common;

use std::time::Instant;

use common::{median, RUNS};
use ptxvk::compile::{compile_module, LazyModule};
use ptxvk::{Device, Module, SourceMap};

/// `copies` kernels, each the corpus kernel renamed.
fn library(copies: usize) -> String {
    let ptx = include_str!("../tests/kernels/block_reduce.nvcc.sm_80.ptx");
    let at = ptx.find(".visible .entry").expect("the kernel");
    let (header, kernel) = ptx.split_at(at);
    let mut text = header.to_string();
    for i in 0..copies {
        text.push_str(&kernel.replace("block_reduce", &format!("block_reduce_{i}")));
        text.push('\n');
    }
    text
}

fn seconds(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

fn median_seconds(mut f: impl FnMut()) -> f64 {
    f();
    median((0..RUNS).map(|_| seconds(&mut f)).collect())
}

fn main() {
    let kernels: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(256);
    let device = Device::default_device().expect("a Vulkan device");
    let target = device.target();
    let text = library(kernels);
    let sources = || SourceMap::new([("library.ptx", text.as_str())]);
    println!("device: {}", device.info().name);
    println!("module: {kernels} kernels, {:.1} MB of PTX", text.len() as f64 / 1e6);

    let whole = median_seconds(|| {
        compile_module(&sources(), target).expect("compiles");
    });
    let load = median_seconds(|| {
        LazyModule::new(sources(), target).expect("loads");
    });
    let lazy = LazyModule::new(sources(), target).expect("loads");
    let first = median_seconds(|| {
        lazy.compile("block_reduce_0").expect("compiles");
    });
    println!("whole module to SPIR-V:        {:>9.1} ms", whole * 1e3);
    println!("lazy load:                     {:>9.1} ms", load * 1e3);
    println!("lazy, first kernel to SPIR-V:  {:>9.1} ms", first * 1e3);

    let lazy_device = seconds(|| {
        let module = Module::link_lazy(&device, sources()).expect("loads");
        module.kernel("block_reduce_0").expect("compiles");
    });
    println!("device, lazy load + one kernel:{:>9.1} ms", lazy_device * 1e3);
    let eager_device = seconds(|| {
        Module::link(&device, &sources()).expect("loads");
    });
    println!("device, whole module:          {:>9.1} ms", eager_device * 1e3);
}
