//! The cost of emulated warps: a warp sum (`benches/ptx/warp_reduce.ptx`, five
//! `shfl.sync.down` per thread, a tree `pass::warp_trees` lowers to one exchange and
//! subgroup shuffles where the subgroups are narrower than 32; lane 0 alone stores the
//! sum, so each in-subgroup step is one shuffle) compiled by ptxvk, against the same
//! sums written by hand for the device's native subgroups (`shaders/warp_reduce.comp`:
//! `subgroupAdd` within each subgroup, then the first thread of each 32-thread group
//! adds its subgroups' sums from shared memory), on the default device (8-wide
//! subgroups on lavapipe, where ptxvk emulates warps). Also the time of the kernel
//! with every shuffle a move (the floor for the tree's lowering), and the SPIR-V size
//! of the kernel with and without its collectives.
//!
//! ```text
//! cargo bench --bench warp_reduce [-- MILLION_ELEMENTS] [--exchanges]
//! ```

use ptxvk::{Arg, Device, Module};
use ptxvk_vk::{Features, LaunchConfig};

const RUNS: usize = 10;
const BLOCK: u32 = 256;

fn main() {
    let millions: u32 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(4).max(1);
    let n = millions << 20;
    let device = Device::default_device().expect("a Vulkan device");
    let info = device.info();
    println!("device: {} (subgroup size {})", info.name, info.subgroup_size);
    let input: Vec<i32> =
        (0..n).map(|k| (k.wrapping_mul(2_654_435_761) >> 20) as i32 - 2048).collect();
    let expected: Vec<i32> = input.chunks(32).map(|c| c.iter().sum()).collect();
    let inb = device.buffer_from(&input).expect("input");
    let grid = n / BLOCK;

    // ptxvk: the PTX kernel, for the device.
    let ptx = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/ptx/warp_reduce.ptx"
    ))
    .expect("benches/ptx/warp_reduce.ptx");
    // `--exchanges`: without `pass::warp_trees` (every shuffle an exchange), for the
    // comparison.
    let exchanges = std::env::args().any(|a| a == "--exchanges");
    let mut target = device.target();
    if exchanges {
        target.emulated_subgroup = None;
    }
    let compiled =
        ptxvk::compile::compile_with("warp_reduce.ptx", &ptx, None, target).expect("compile");
    let module = Module::from_compiled(&device, compiled).expect("load");
    let out = device.zeroed::<i32>((n / 32) as usize).expect("out");
    let kernel = module.kernel("warp_reduce").expect("kernel");
    let args = [Arg::from(&inb), Arg::from(n), Arg::from(&out)];
    let ptx_ms = time(|| kernel.launch_timed(grid, BLOCK, 0, &args).expect("launch").kernel_ms);
    assert_eq!(out.to_vec().expect("read"), expected, "ptxvk's warp sums");
    // The same kernel with every shuffle a move (its sums are not warp sums): the cost
    // of everything but the tree, the floor of what the tree's lowering can reach.
    let plain = module.kernel("warp_reduce_plain").expect("kernel");
    let plain_ms = time(|| plain.launch_timed(grid, BLOCK, 0, &args).expect("launch").kernel_ms);

    // The hand-written subgroup shader, through the same runtime and launch ABI.
    let words = spirv_words(include_bytes!("../shaders/warp_reduce.spv"));
    let vk = device.vk();
    let needs = Features { int64: true, ..Features::default() };
    let program = vk.create_program(&words, "main", &needs).expect("program");
    let out2 = device.zeroed::<i32>((n / 32) as usize).expect("out");
    let mut params = Vec::new();
    params.extend(inb.address().to_le_bytes());
    params.extend(n.to_le_bytes());
    params.extend(0u32.to_le_bytes());
    params.extend(out2.address().to_le_bytes());
    let param_buf = device.buffer_from_bytes(&params).expect("params");
    let cfg = LaunchConfig {
        grid: [grid, 1, 1],
        block: [BLOCK, 1, 1],
        shared_bytes: 4096,
        param_address: param_buf.address(),
        ..LaunchConfig::default()
    };
    let native_ms = time(|| vk.launch(&program, &cfg).expect("launch").kernel_ms);
    assert_eq!(out2.to_vec().expect("read"), expected, "the subgroup shader's sums");

    println!("{} M elements, blocks of {BLOCK}, best of {RUNS} (median):", millions);
    let how = if exchanges { "every shuffle an exchange".to_string() } else { info_mode(&device) };
    println!("  ptxvk ({how} warps): {:8.2} ms ({:.2})", ptx_ms.0, ptx_ms.1);
    println!("  native subgroups (GLSL):   {:8.2} ms ({:.2})", native_ms.0, native_ms.1);
    println!("  ptxvk, no collectives:     {:8.2} ms ({:.2})", plain_ms.0, plain_ms.1);
    println!("  ratio (best):              {:8.2}x", ptx_ms.0 / native_ms.0);

    // The device's target (shuffle trees on its subgroups where `pass::warp_trees`
    // applies), the same without that pass (every shuffle an exchange), and the kernel
    // without collectives.
    let own = device.target();
    let without = ptxvk::compile::Target { emulated_subgroup: None, ..own };
    for (name, what, t) in [
        ("warp_reduce", "device target", own),
        ("warp_reduce", "every shuffle an exchange", without),
        ("warp_reduce_plain", "no collectives", own),
    ] {
        let one =
            ptxvk::compile::compile_with("warp_reduce.ptx", &ptx, Some(name), t).expect("compile");
        println!("  SPIR-V of {name} ({what}): {} words", one.spirv.words.len());
    }
}

/// The device's warp mode, and its subgroup size where `pass::warp_trees` uses it.
fn info_mode(device: &Device) -> String {
    let t = device.target();
    match t.emulated_subgroup {
        Some(s) => format!("{}, subgroups of {s}", t.warp_mode.name()),
        None => t.warp_mode.name().to_string(),
    }
}

/// Best and median of `RUNS` kernel times, after a warm-up.
fn time(mut run: impl FnMut() -> f64) -> (f64, f64) {
    run();
    let mut t: Vec<f64> = (0..RUNS).map(|_| run()).collect();
    t.sort_by(f64::total_cmp);
    (t[0], t[RUNS / 2])
}

fn spirv_words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}
