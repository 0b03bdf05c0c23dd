//! GPU tests of the runtime: they run on whatever `Device::open(Default)` finds (lavapipe
//! in CI) and skip with a SKIPPED line only when there is no Vulkan device at all.

mod common;

use std::time::Duration;

use common::{open_or_skip, record_kernel, spin_kernel, words, NEEDS, RECORD_MAGIC, RECORD_WORDS};
use ptxvk_vk::{
    enumerate_devices, Buffer, Device, DeviceSelector, DeviceType, Error, Features, LaunchConfig,
    LaunchStats, Program,
};

/// A buffer holding the parameter block `{ u64 out; }` (plus `extra` bytes after it).
fn param_block(dev: &Device, out: &Buffer, extra: &[u8]) -> Buffer {
    let mut bytes = out.address().to_le_bytes().to_vec();
    bytes.extend_from_slice(extra);
    let param = dev.alloc(bytes.len() as u64).expect("alloc param block");
    dev.upload(&param, 0, &bytes).expect("upload param block");
    param
}

/// Launches the record kernel and returns every record word.
fn run_records(
    dev: &Device,
    program: &Program,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    const_address: u64,
) -> (Vec<u32>, LaunchStats) {
    let threads: u64 = grid.iter().chain(&block).map(|&n| u64::from(n)).product();
    let out = dev.alloc(threads * (RECORD_WORDS as u64) * 4).expect("alloc records");
    let param = param_block(dev, &out, &[]);
    let cfg = LaunchConfig {
        grid,
        block,
        shared_bytes,
        param_address: param.address(),
        const_address,
        ..LaunchConfig::default()
    };
    let stats = dev.launch(program, &cfg).expect("launch");
    let data = dev.download(&out, 0, out.size()).expect("download records");
    (words(&data), stats)
}

/// Checks that every thread of the launch wrote exactly its expected record.
fn check_records(
    data: &[u32],
    grid: [u32; 3],
    block: [u32; 3],
    shared_words: u32,
    const_address: u64,
) {
    let threads = block[0] * block[1] * block[2];
    let mut checked = 0usize;
    for cz in 0..grid[2] {
        for cy in 0..grid[1] {
            for cx in 0..grid[0] {
                for tz in 0..block[2] {
                    for ty in 0..block[1] {
                        for tx in 0..block[0] {
                            let block_linear = (cz * grid[1] + cy) * grid[0] + cx;
                            let tid_linear = (tz * block[1] + ty) * block[0] + tx;
                            let index = (block_linear * threads + tid_linear) as usize;
                            let want = [
                                tx,
                                ty,
                                tz,
                                block[0],
                                block[1],
                                block[2],
                                cx,
                                cy,
                                cz,
                                grid[0],
                                grid[1],
                                grid[2],
                                shared_words,
                                const_address as u32,
                                (const_address >> 32) as u32,
                                RECORD_MAGIC,
                            ];
                            let got = &data[index * RECORD_WORDS..(index + 1) * RECORD_WORDS];
                            assert_eq!(
                                got, want,
                                "record of block ({cx},{cy},{cz}) thread ({tx},{ty},{tz})"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(checked * RECORD_WORDS, data.len(), "records beyond the launch were written");
}

#[test]
fn enumerate_devices_lists_the_default_device() {
    let Some(dev) = open_or_skip() else { return };
    let devices = enumerate_devices().expect("enumerate devices");
    assert!(!devices.is_empty());
    for (i, info) in devices.iter().enumerate() {
        assert_eq!(info.index, i);
        assert!(!info.name.is_empty());
    }
    let info = dev.info();
    assert_eq!(&devices[info.index], info, "open() and enumerate_devices() disagree");
    assert!(info.api_version >= (1, 3, 0), "{:?}", info.api_version);
    assert!(info.subgroup_size.is_power_of_two(), "subgroup size {}", info.subgroup_size);
    assert!(info.limits.max_workgroup_invocations >= 128);
    assert!(info.limits.max_shared_memory_bytes >= 16384);
    assert!(info.limits.max_push_constants_size >= 128);
    assert!(info.limits.max_workgroup_count.iter().all(|&n| n >= 65535));
    assert!(info.features.int64, "every device ptxvk runs on so far has shaderInt64");
    if info.name.contains("llvmpipe") {
        // What the lavapipe CI device reports (see the project notes).
        assert_eq!(info.device_type, DeviceType::Cpu);
        assert_eq!(info.subgroup_size, 8);
        assert!(info.features.float64 && info.features.int8 && info.features.int16);
        assert!(!info.features.denorm_preserve_f32);
        assert!(info.timestamps);
    }
}

#[test]
fn select_by_index_and_name() {
    let Some(dev) = open_or_skip() else { return };
    let info = dev.info();

    let by_index = Device::open(&DeviceSelector::Index(info.index)).expect("open by index");
    assert_eq!(by_index.info().name, info.name);
    let shouted = info.name.to_uppercase();
    let needle = &shouted[..shouted.len().min(5)];
    let by_name = Device::open(&DeviceSelector::parse(needle)).expect("open by name");
    assert!(by_name.info().name.to_uppercase().contains(needle));

    match Device::open(&DeviceSelector::Index(9999)) {
        Err(Error::DeviceNotFound { selector, available }) => {
            assert_eq!(selector, "9999");
            assert!(available.iter().any(|a| a.contains(&info.name)), "{available:?}");
        }
        other => panic!("expected DeviceNotFound, got {other:?}"),
    }
    let err = Device::open(&DeviceSelector::parse("no-such-gpu-xyz")).expect_err("no such device");
    assert!(matches!(err, Error::DeviceNotFound { .. }), "{err}");
    assert!(err.to_string().contains("no-such-gpu-xyz"), "{err}");
}

#[test]
fn upload_download_round_trip() {
    let Some(dev) = open_or_skip() else { return };

    let buf = dev.alloc(1000).expect("alloc");
    assert_eq!(buf.size(), 1000);
    assert!(buf.address() != 0 && buf.address() % 256 == 0, "address {:#x}", buf.address());
    assert_eq!(dev.download(&buf, 0, 1000).expect("download"), vec![0u8; 1000], "zero-filled");

    let pattern: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
    dev.upload(&buf, 3, &pattern).expect("upload at offset 3");
    let all = dev.download(&buf, 0, 1000).expect("download");
    assert_eq!(&all[..3], &[0, 0, 0]);
    assert_eq!(&all[3..303], &pattern[..]);
    assert!(all[303..].iter().all(|&b| b == 0));
    assert_eq!(dev.download(&buf, 3, 300).expect("download at offset"), pattern);
    assert_eq!(dev.download(&buf, 302, 1).expect("download 1 byte"), [pattern[299]]);
    assert!(dev.download(&buf, 1000, 0).expect("empty download at the end").is_empty());

    match dev.upload(&buf, 999, &[1, 2]) {
        Err(Error::OutOfBounds { op: "upload", offset: 999, len: 2, size: 1000 }) => {}
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
    let err = dev.download(&buf, 1000, 1).expect_err("past the end");
    assert!(matches!(err, Error::OutOfBounds { op: "download", .. }), "{err}");
    let err = dev.download(&buf, u64::MAX, 2).expect_err("offset overflow");
    assert!(matches!(err, Error::OutOfBounds { .. }), "{err}");
    assert!(err.to_string().contains("out of bounds"), "{err}");
    assert_eq!(&dev.download(&buf, 0, 303).expect("download")[3..], &pattern[..], "unchanged");

    // Size 0 and sizes that are not a multiple of 4.
    let empty = dev.alloc(0).expect("alloc 0");
    assert_eq!(empty.size(), 0);
    assert_ne!(empty.address(), 0);
    dev.upload(&empty, 0, &[]).expect("empty upload");
    assert!(dev.download(&empty, 0, 0).expect("empty download").is_empty());
    assert!(matches!(dev.upload(&empty, 0, &[1]), Err(Error::OutOfBounds { .. })));
    let odd = dev.alloc(13).expect("alloc 13");
    assert_eq!(dev.download(&odd, 0, 13).expect("download"), vec![0u8; 13]);
    dev.upload(&odd, 0, &[0xff; 13]).expect("upload");
    assert_eq!(dev.download(&odd, 0, 13).expect("download"), vec![0xffu8; 13]);

    // Copies longer than one staging chunk (16 MiB), at odd offsets.
    let len = (40 << 20) + 3;
    let big = dev.alloc(len as u64 + 5).expect("alloc 40 MiB");
    let mut state = 0x1234_5678u32;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        })
        .collect();
    dev.upload(&big, 1, &data).expect("big upload");
    let back = dev.download(&big, 1, len as u64).expect("big download");
    assert!(back == data, "40 MiB round trip differs");
    let edges = dev.download(&big, 0, len as u64 + 5).expect("whole download");
    assert_eq!(edges[0], 0);
    assert_eq!(&edges[len + 1..], &[0, 0, 0, 0]);

    match dev.alloc(u64::MAX) {
        Err(Error::BufferTooLarge { size, max }) => assert!(size == u64::MAX && max > 0),
        other => panic!("expected BufferTooLarge, got {other:?}"),
    }

    // Many short-lived buffers: freeing works and memory is reused.
    for _ in 0..50 {
        let b = dev.alloc(1 << 20).expect("alloc 1 MiB");
        dev.upload(&b, (1 << 20) - 4, &[1, 2, 3, 4]).expect("upload");
    }
}

#[test]
fn split_grid_of_200000_blocks() {
    let Some(dev) = open_or_skip() else { return };
    let program = dev.create_program(&record_kernel(), "main", &NEEDS).expect("program");
    let grid = [200_000, 1, 1];
    let const_address = 0xfeed_f00d_0000_0040;
    let (data, stats) = run_records(&dev, &program, grid, [1, 1, 1], 0, const_address);

    let max_x = dev.info().limits.max_workgroup_count[0];
    let expected = grid[0].div_ceil(max_x);
    assert_eq!(stats.dispatches, expected);
    if max_x < grid[0] {
        assert!(stats.dispatches > 1, "the grid was not split");
    } else {
        eprintln!("note: maxComputeWorkGroupCount.x = {max_x}, the grid fits one dispatch");
    }
    for (i, record) in data.chunks_exact(RECORD_WORDS).enumerate() {
        assert_eq!(record[6], i as u32, "ctaid.x of block {i}");
        assert_eq!(record[9], 200_000, "nctaid.x in block {i}");
    }
    check_records(&data, grid, [1, 1, 1], 1, const_address);
    assert!(stats.kernel_ms >= 0.0);
    if dev.info().timestamps {
        assert!(stats.kernel_ms > 0.0, "timestamps are supported but kernel_ms is 0");
    }
}

#[test]
fn block_size_and_shared_size_reach_the_shader() {
    let Some(dev) = open_or_skip() else { return };
    let program = dev.create_program(&record_kernel(), "main", &NEEDS).expect("program");
    assert_eq!(program.entry(), "main");
    assert_eq!(program.cached_pipelines(), 0);

    let const_address = 0x0123_4567_89ab_cdef;
    let (data, stats) = run_records(&dev, &program, [3, 2, 1], [64, 1, 1], 100, const_address);
    assert_eq!(stats.dispatches, 1);
    check_records(&data, [3, 2, 1], [64, 1, 1], 25, const_address);
    assert_eq!(program.cached_pipelines(), 1);

    let (data, _) = run_records(&dev, &program, [2, 1, 3], [4, 4, 2], 0, 0);
    check_records(&data, [2, 1, 3], [4, 4, 2], 1, 0);
    assert_eq!(program.cached_pipelines(), 2);

    // The same shape again reuses its pipeline; a new shared size is a new pipeline.
    let (data, _) = run_records(&dev, &program, [1, 1, 1], [64, 1, 1], 97, 7);
    check_records(&data, [1, 1, 1], [64, 1, 1], 25, 7);
    assert_eq!(program.cached_pipelines(), 2);
    let (data, _) = run_records(&dev, &program, [1, 1, 1], [64, 1, 1], 4096, 7);
    check_records(&data, [1, 1, 1], [64, 1, 1], 1024, 7);
    assert_eq!(program.cached_pipelines(), 3);

    // The largest block the device allows in x.
    let limits = dev.info().limits;
    let bx = limits.max_workgroup_size[0].min(limits.max_workgroup_invocations);
    let (data, _) = run_records(&dev, &program, [2, 1, 1], [bx, 1, 1], 0, 0);
    check_records(&data, [2, 1, 1], [bx, 1, 1], 1, 0);
}

#[test]
fn multi_dimensional_grid_size_comes_from_push_constants() {
    let Some(dev) = open_or_skip() else { return };
    let program = dev.create_program(&record_kernel(), "main", &NEEDS).expect("program");
    let grid = [5, 300, 7];
    let (data, stats) = run_records(&dev, &program, grid, [2, 1, 1], 0, 0);
    assert_eq!(stats.dispatches, 1);
    check_records(&data, grid, [2, 1, 1], 1, 0);
}

#[test]
fn launch_limits_are_errors() {
    let Some(dev) = open_or_skip() else { return };
    let program = dev.create_program(&record_kernel(), "main", &NEEDS).expect("program");
    let limits = dev.info().limits;
    let ok = LaunchConfig::default();
    let launch_err = |cfg: LaunchConfig| match dev.launch(&program, &cfg) {
        Err(Error::Launch(msg)) => msg,
        other => panic!("expected a launch error for {cfg:?}, got {other:?}"),
    };

    let msg = launch_err(LaunchConfig { grid: [1, 1, 0], ..ok });
    assert!(msg.contains("grid dimension z is 0"), "{msg}");
    let msg = launch_err(LaunchConfig { block: [0, 1, 1], ..ok });
    assert!(msg.contains("block dimension x is 0"), "{msg}");

    let too_wide = limits.max_workgroup_size[0] + 1;
    let msg = launch_err(LaunchConfig { block: [too_wide, 1, 1], ..ok });
    assert!(msg.contains(&too_wide.to_string()), "{msg}");
    assert!(msg.contains(&limits.max_workgroup_size[0].to_string()), "{msg}");

    let bx = limits.max_workgroup_size[0].min(limits.max_workgroup_invocations);
    let by = limits.max_workgroup_size[1].min(limits.max_workgroup_invocations / bx + 1);
    if u64::from(bx) * u64::from(by) > u64::from(limits.max_workgroup_invocations) {
        let msg = launch_err(LaunchConfig { block: [bx, by, 1], ..ok });
        assert!(msg.contains(&(bx * by).to_string()), "{msg}");
        assert!(msg.contains(&limits.max_workgroup_invocations.to_string()), "{msg}");
    }

    let shared = limits.max_shared_memory_bytes + 1;
    let msg = launch_err(LaunchConfig { shared_bytes: shared, ..ok });
    assert!(msg.contains(&shared.to_string()), "{msg}");
    assert!(msg.contains(&limits.max_shared_memory_bytes.to_string()), "{msg}");

    let msg = launch_err(LaunchConfig { grid: [1, 65536, 1], ..ok });
    assert!(msg.contains("65536") && msg.contains("65535"), "{msg}");
    let msg = launch_err(LaunchConfig { grid: [1 << 31, 1, 1], ..ok });
    assert!(msg.contains("2147483648") && msg.contains("2147483647"), "{msg}");

    assert_eq!(program.cached_pipelines(), 0, "an invalid launch built a pipeline");
}

#[test]
fn missing_features_are_listed_by_vulkan_name() {
    let Some(dev) = open_or_skip() else { return };
    let info = dev.info();
    let everything = Features {
        int8: true,
        int16: true,
        int64: true,
        float16: true,
        float64: true,
        storage_buffer_8bit: true,
        storage_buffer_16bit: true,
        vulkan_memory_model: true,
        int64_atomics: true,
        shared_int64_atomics: true,
        float32_atomic_add: true,
        shader_clock: true,
        device_clock: true,
        denorm_preserve_f32: true,
        denorm_preserve_f64: true,
        subgroup_size_control: true,
        signed_zero_preserve_f32: true,
        signed_zero_preserve_f64: true,
        zero_initialize_workgroup_memory: true,
    };
    let lacking = everything.missing_from(&info.features);
    if lacking.is_empty() {
        eprintln!("note: {} offers every optional feature; nothing can be missing", info.name);
        return;
    }
    let needs = NEEDS.union(&everything);
    match dev.create_program(&record_kernel(), "main", &needs) {
        Err(Error::MissingFeatures { device, missing }) => {
            assert_eq!(device, info.name);
            assert_eq!(missing, lacking);
        }
        other => panic!("expected MissingFeatures, got {other:?}"),
    }
    if !info.features.denorm_preserve_f32 {
        let needs = Features { denorm_preserve_f32: true, ..NEEDS };
        let err = dev.create_program(&record_kernel(), "main", &needs).expect_err("missing");
        assert!(
            matches!(&err, Error::MissingFeatures { missing, .. } if missing == &["shaderDenormPreserveFloat32"])
        );
        assert!(err.to_string().contains("shaderDenormPreserveFloat32"), "{err}");
    }
}

#[test]
fn bad_modules_and_entry_points_are_errors() {
    let Some(dev) = open_or_skip() else { return };
    let err = dev.create_program(&[1, 2, 3, 4, 5, 6], "main", &NEEDS).expect_err("garbage");
    assert!(matches!(err, Error::InvalidSpirv(_)), "{err}");
    let err = dev.create_program(&[], "main", &NEEDS).expect_err("empty");
    assert!(matches!(err, Error::InvalidSpirv(_)), "{err}");
    match dev.create_program(&record_kernel(), "saxpy", &NEEDS) {
        Err(Error::EntryPointNotFound { entry, available }) => {
            assert_eq!(entry, "saxpy");
            assert_eq!(available, ["main"]);
        }
        other => panic!("expected EntryPointNotFound, got {other:?}"),
    }
}

#[test]
fn objects_of_another_device_are_rejected() {
    let Some(dev) = open_or_skip() else { return };
    let other = Device::open(&DeviceSelector::Default).expect("second device");
    let buf = dev.alloc(16).expect("alloc");
    let program = dev.create_program(&record_kernel(), "main", &NEEDS).expect("program");
    assert!(matches!(other.upload(&buf, 0, &[1]), Err(Error::ForeignObject("buffer"))));
    assert!(matches!(other.download(&buf, 0, 1), Err(Error::ForeignObject("buffer"))));
    let cfg = LaunchConfig::default();
    assert!(matches!(other.launch(&program, &cfg), Err(Error::ForeignObject("program"))));
    // A clone is the same device.
    let clone = dev.clone();
    clone.upload(&buf, 0, &[9]).expect("upload through a clone");
    assert_eq!(dev.download(&buf, 0, 1).expect("download"), [9]);
}

#[test]
fn launches_from_several_threads() {
    let Some(dev) = open_or_skip() else { return };
    let program = dev.create_program(&record_kernel(), "main", &NEEDS).expect("program");
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (dev, program) = (&dev, &program);
            s.spawn(move || {
                for round in 0..3u32 {
                    let grid = [t + 1, round + 1, 2];
                    let block = [8 * (t + 1), 1, 1];
                    let (data, _) = run_records(dev, program, grid, block, 4 * t, u64::from(t));
                    check_records(&data, grid, block, t.max(1), u64::from(t));
                }
            });
        }
    });
    assert_eq!(program.cached_pipelines(), 4);
}

#[test]
fn timeout_is_an_error_not_a_hang() {
    let Some(dev) = open_or_skip() else { return };
    let program = dev.create_program(&spin_kernel(), "main", &NEEDS).expect("program");
    let out = dev.alloc(4).expect("alloc");
    // Mesa 22.3's lavapipe ends every invocation's loops after 65535 iterations in total
    // (gallivm's loop limiter), so the kernel gets its running time from many threads
    // (about 0.2 s on lavapipe) rather than from a long loop.
    let n: u32 = 60_000;
    let param = param_block(&dev, &out, &n.to_le_bytes());
    let cfg = LaunchConfig {
        grid: [16, 1, 1],
        block: [64, 1, 1],
        param_address: param.address(),
        ..LaunchConfig::default()
    };

    dev.set_timeout(Duration::from_millis(1));
    let result = dev.launch(&program, &cfg);
    dev.set_timeout(Duration::from_secs(120));
    match result {
        Err(Error::Timeout { ms: 1 }) => {}
        Ok(stats) => panic!("the spin kernel finished within 1 ms ({} ms)", stats.kernel_ms),
        Err(e) => panic!("expected a timeout, got {e}"),
    }
    // The next operation waits for the still-running kernel, then works normally.
    let last = dev.download(&out, 0, 4).expect("download after the timeout");
    assert_eq!(words(&last), [n - 1]);
    let stats = dev.launch(&program, &cfg).expect("launch with a generous timeout");
    assert!(stats.kernel_ms >= 0.0);
}

/// `create_program_with_subgroup_size`: a size the device can require reaches the
/// pipeline (the validation-layer run of `make test` checks the chained structure and
/// the full-subgroups flag) and the kernel still sees its whole block; any other size
/// is an error that says what the device offers.
#[test]
fn a_required_subgroup_size_reaches_the_pipeline() {
    let Some(dev) = open_or_skip() else { return };
    let outside = match dev.info().required_subgroup_sizes {
        Some(sizes) => {
            let program = dev
                .create_program_with_subgroup_size(
                    &record_kernel(),
                    "main",
                    &NEEDS,
                    Some(sizes.max),
                )
                .expect("program");
            let const_address = 0x0123_4567_89ab_cdef;
            for block in [[64, 1, 1], [48, 2, 1]] {
                let (data, _) = run_records(&dev, &program, [3, 2, 1], block, 100, const_address);
                check_records(&data, [3, 2, 1], block, 25, const_address);
            }
            sizes.max * 2
        }
        None => {
            eprintln!("note: {} has no subgroup size control", dev.info().name);
            64
        }
    };
    let err = dev
        .create_program_with_subgroup_size(&record_kernel(), "main", &NEEDS, Some(outside))
        .expect_err("a size the device cannot require");
    let message = err.to_string();
    assert!(
        message.contains(&format!("cannot run compute subgroups of {outside} invocations")),
        "{message}"
    );
}
