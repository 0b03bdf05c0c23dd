//! First-launch latency of the corpus: for every kernel of `tests/kernels/*.ptx` (or
//! of the PTX files and folders given), the time from loading its module to the end of
//! its first launch, in three parts: ptxvk's share (the kernel to SPIR-V, lazily, as the
//! driver library loads it, and the shader module), the driver's
//! `vkCreateComputePipelines` of one launch shape, and the first dispatch, which on
//! lavapipe holds LLVM's compile of the shader (often the largest part). Both caches
//! start empty: ptxvk's pipeline cache is off (`PTXVK_NO_DISK_CACHE=1`) and so is Mesa's
//! shader cache (`MESA_SHADER_CACHE_DISABLE=true`), unless `--warm`.
//!
//! The bench has no meaningful arguments for the corpus's kernels, so the first launch
//! is one block with every parameter byte zero: pointers are null, counts are zero.
//! Kernels end at once or at their first access through a null pointer, which
//! confinement refuses (the launch's error is expected and not reported). Without
//! confinement (a device that is not a CPU, or `PTXVK_CONFINE=0`) a null access would
//! be the device's fault, so there the bench makes no dispatch and its column is empty.
//! A kernel that waits for another's work ends at the launch timeout, which the bench
//! sets to 20 s unless `PTXVK_TIMEOUT_MS` is set.
//!
//! Prints a line per kernel (SPIR-V words, functions, `OpFunctionCall` sites, the three
//! parts), the distribution of each and of their sum (median, p90, max) and the slowest
//! kernels.
//!
//! ```text
//! cargo bench --bench first_launch [-- [--warm] [--top N] [--dump DIR] [PATH...]]
//! ```
//!
//! `--dump DIR` writes each kernel's SPIR-V (the device's target) to `DIR/FILE.KERNEL.spv`,
//! for `spirv-val` and `spirv-dis`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ptxvk::compile::LazyModule;
use ptxvk::{Device, Module, SourceMap};

/// One kernel's figures.
struct Row {
    name: String,
    words: usize,
    functions: usize,
    calls: usize,
    ptxvk_ms: f64,
    pipeline_ms: f64,
    dispatch_ms: f64,
}

impl Row {
    fn total_ms(&self) -> f64 {
        self.ptxvk_ms + self.pipeline_ms + self.dispatch_ms
    }
}

/// The number of `OpFunction` and `OpFunctionCall` instructions of a SPIR-V module
/// (SPIR-V §2.3: each instruction's first word holds its word count and opcode).
fn functions_and_calls(words: &[u32]) -> (usize, usize) {
    const OP_FUNCTION: u32 = 54;
    const OP_FUNCTION_CALL: u32 = 57;
    let (mut functions, mut calls, mut at) = (0, 0, 5);
    while at < words.len() {
        let (count, op) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        functions += usize::from(op == OP_FUNCTION);
        calls += usize::from(op == OP_FUNCTION_CALL);
        at += count.max(1);
    }
    (functions, calls)
}

/// The block a first launch uses: the kernel's `.reqntid`, else its `.maxntid`, else 128.
fn block_of(info: &ptxvk::spirv::KernelInfo) -> [u32; 3] {
    info.reqntid.or(info.maxntid).unwrap_or([128, 1, 1])
}

fn ptx_files(args: &[String]) -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = if args.is_empty() {
        vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels")]
    } else {
        args.iter().map(PathBuf::from).collect()
    };
    let mut files = Vec::new();
    for root in roots {
        if root.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
                .expect("a readable folder")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(root);
        }
    }
    files
}

/// Every kernel of `path` as the driver library loads it: the module lazily, then each
/// kernel's lookup (ptxvk's share), its first pipeline and, on a confining device, its
/// first dispatch (module doc).
fn measure(device: &Device, path: &Path, dump: Option<&Path>, rows: &mut Vec<Row>) {
    let text = std::fs::read_to_string(path).expect("a PTX file");
    let file = path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
    let sources = || SourceMap::new([(file.as_str(), text.as_str())]);
    let Ok(module) = Module::link_lazy(device, sources()) else {
        println!("{file}: does not load on this device, skipped");
        return;
    };
    let lazy = LazyModule::new(sources(), device.target()).expect("loaded once already");
    for (index, name) in module.kernel_names().to_vec().iter().enumerate() {
        let start = Instant::now();
        let Ok(kernel) = module.kernel_at(index) else {
            println!("{file} {name}: does not compile, skipped");
            continue;
        };
        let ptxvk_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        if let Err(e) = kernel.prepare_pipeline(block_of(kernel.info()), 0) {
            println!("{file} {name}: no pipeline ({e}), skipped");
            continue;
        }
        let pipeline_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        if device.facts().confined {
            let stream = device.default_stream();
            let params = vec![0; kernel.info().abi.size as usize];
            // Errors are expected (module doc): the compile happened before the run.
            let _ = kernel
                .launch_params_on(&stream, [1, 1, 1], block_of(kernel.info()), 0, params, &[])
                .and_then(|()| Ok(stream.synchronize()?));
        }
        let dispatch_ms = start.elapsed().as_secs_f64() * 1e3;
        let words = lazy.compile(name).map(|c| c.spirv.words).unwrap_or_default();
        let (functions, calls) = functions_and_calls(&words);
        if let Some(dir) = dump {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(dir.join(format!("{file}.{name}.spv")), bytes).expect("written");
        }
        let name = format!("{file} {name}");
        println!(
            "{name:70} {:>8} words {functions:>3} fns {calls:>4} calls  ptxvk {ptxvk_ms:>8.1} ms  \
             pipeline {pipeline_ms:>8.1} ms  dispatch {dispatch_ms:>9.1} ms",
            words.len()
        );
        let words = words.len();
        rows.push(Row { name, words, functions, calls, ptxvk_ms, pipeline_ms, dispatch_ms });
    }
}

/// Median, p90 and max of `v` (nearest rank).
fn distribution(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    (rank(0.5), rank(0.9), rank(1.0))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let warm = args.iter().any(|a| a == "--warm");
    let top = args
        .iter()
        .position(|a| a == "--top")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    let dump = args.iter().position(|a| a == "--dump").and_then(|i| args.get(i + 1));
    let dump = dump.map(PathBuf::from);
    let paths: Vec<String> = args
        .iter()
        .enumerate()
        .filter(|&(i, a)| {
            let value = i > 0 && matches!(args[i - 1].as_str(), "--top" | "--dump");
            !a.starts_with("--") && !value && Path::new(a).exists()
        })
        .map(|(_, a)| a.clone())
        .collect();
    if !warm {
        // Read when the driver loads, which is below: nothing else runs yet.
        std::env::set_var("PTXVK_NO_DISK_CACHE", "1");
        std::env::set_var("MESA_SHADER_CACHE_DISABLE", "true");
    }
    if std::env::var_os("PTXVK_TIMEOUT_MS").is_none() {
        std::env::set_var("PTXVK_TIMEOUT_MS", "20000");
    }
    let device = Device::default_device().expect("a Vulkan device");
    println!("device: {}; caches {}", device.info().name, if warm { "warm" } else { "off" });
    let mut rows = Vec::new();
    let start = Instant::now();
    for path in ptx_files(&paths) {
        measure(&device, &path, dump.as_deref(), &mut rows);
    }
    let wall = start.elapsed().as_secs_f64();
    if rows.is_empty() {
        println!("no kernels");
        return;
    }
    println!("\n{} kernels, {wall:.1} s in all", rows.len());
    for (what, v) in [
        ("first launch (ms)", rows.iter().map(Row::total_ms).collect::<Vec<_>>()),
        ("ptxvk's share (ms)", rows.iter().map(|r| r.ptxvk_ms).collect()),
        ("pipeline (ms)", rows.iter().map(|r| r.pipeline_ms).collect()),
        ("first dispatch (ms)", rows.iter().map(|r| r.dispatch_ms).collect()),
    ] {
        let sum: f64 = v.iter().sum();
        let (median, p90, max) = distribution(v);
        println!(
            "{what:20} median {median:8.1}  p90 {p90:8.1}  max {max:9.1}  sum {:8.1} s",
            sum / 1e3
        );
    }
    rows.sort_by(|a, b| b.total_ms().total_cmp(&a.total_ms()));
    println!("\nslowest {top}:");
    for r in rows.iter().take(top) {
        println!(
            "{:70} {:>8} words {:>3} fns {:>4} calls  ptxvk {:>7.1}  pipeline {:>8.1}  \
             dispatch {:>9.1} ms",
            r.name, r.words, r.functions, r.calls, r.ptxvk_ms, r.pipeline_ms, r.dispatch_ms
        );
    }
}
