//! `ptxvk compare --cuda`'s client of a CUDA driver (issue #18), run against this
//! library standing in for NVIDIA's: loaded by path (as only a test may), it must run
//! the spec's PTX as a CUDA driver would and agree with ptxvk on lavapipe; the report
//! must name the file that was loaded; asked for the system's `libcuda.so.1`, the
//! client must refuse this library, which then answers to that name.

mod common;

use std::path::Path;

use ptxvk::compare::{compare_spec, DeviceChoice, Golden, Platform, Tolerance};
use ptxvk::native_cuda::{CudaError, CudaLibrary, NativeArg, NativeCuda};

/// The inputs, and `c = a + b` computed on the host (exact in f32).
const A: [f32; 8] = [1.0, 2.5, -3.0, 4.0e-3, 5.0, 6.0e10, 7.0, -0.0];
const B: [f32; 8] = [0.5, 0.25, 1.0, 2.0, 3.0e-7, 4.0, 5.0, 0.0];

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn the_native_client_runs_a_spec_on_a_driver_loaded_by_path_and_refuses_ptxvks_as_the_system_one() {
    // Whether there is a Vulkan device to stand behind this library.
    if !common::init_context(&common::library()) {
        return;
    }
    let ptx = repo().join("tests/kernels/vector_add.nvcc.sm_75.ptx");
    let spec_json = serde_json::json!({
        "ptx": ptx, "grid": 1, "block": 64,
        "args": [
            {"buffer": "f32", "data": A.to_vec()},
            {"buffer": "f32", "data": B.to_vec()},
            {"buffer": "f32", "len": 8},
            {"scalar": "s32", "value": 8},
        ],
    });
    let spec = ptxvk::spec::parse(&spec_json.to_string(), repo()).expect("the spec");
    let text = std::fs::read_to_string(&ptx).expect("the PTX");
    let sources = ptxvk::SourceMap::new([(ptx.display().to_string(), text.as_str())]);
    let library = common::library_path();
    let canonical = library.canonicalize().expect("the library");
    let platforms = [
        Platform::NativeCuda(CudaLibrary::Path(library.clone())),
        Platform::Vulkan(DeviceChoice::parse("").expect("the default device")),
    ];
    let (report, runs) =
        compare_spec(&spec, &sources, &platforms, None, Tolerance::default(), 10).expect("ran");

    // The CUDA run computed c = a + b (the entry found by parsing, none named).
    let native = &runs[0];
    let want: Vec<u8> = A.iter().zip(B).flat_map(|(a, b)| (a + b).to_le_bytes()).collect();
    assert_eq!(native.entry, "vector_add");
    assert_eq!(native.buffers.len(), 3);
    assert_eq!(native.buffers[2].bytes, want);
    assert_eq!(native.buffers[0].bytes, bytemuck_f32(&A), "inputs read back unchanged");
    // The driver that ran it: this library, by its mapped file, and what it reports.
    let driver = native.driver.as_ref().expect("driver information");
    assert_eq!(Path::new(&driver.library).canonicalize().ok(), Some(canonical.clone()));
    assert!(driver.ptxvk, "the marker symbol identifies ptxvk's library");
    assert_eq!(driver.version, cuda::DRIVER_VERSION);
    assert!(driver.device.starts_with("ptxvk on "), "{}", driver.device);
    assert!(native.device.contains(&format!("CUDA driver {}", driver.version_text())));

    // The report: the CUDA run is the reference, named with the library's path, and
    // the Vulkan run agrees with it exactly.
    assert!(report.reference.starts_with("cuda: "), "{}", report.reference);
    assert!(report.reference.contains(&driver.library), "{}", report.reference);
    assert_eq!(report.comparisons.len(), 1);
    assert!(report.agrees, "{report:?}");
    assert!(report.comparisons[0].comparison.buffers.iter().all(|b| b.buffer.exact()));

    // A golden file recorded from the CUDA run carries the driver.
    let golden = Golden::from_run(native);
    let json = golden.to_json();
    assert_eq!(json["driver"]["library"], serde_json::json!(driver.library));
    assert_eq!(json["driver"]["version"], serde_json::json!(driver.version_text()));
    assert_eq!(Golden::from_json(&json.to_string()).as_ref(), Ok(&golden));

    // Arguments are checked against the kernel's parameters before the driver reads
    // them: a 2-byte value for the s32 `n`, and too few arguments.
    let cuda = NativeCuda::open(&CudaLibrary::Path(library), 0).expect("opened again");
    let (a, b, c) = (bytemuck_f32(&A), bytemuck_f32(&B), vec![0u8; 32]);
    let mut args = [NativeArg::Buffer(&a), NativeArg::Buffer(&b), NativeArg::Buffer(&c)].to_vec();
    let run = |args: &[NativeArg<'_>]| {
        cuda.run(&[text.as_str()], "vector_add", [1, 1, 1], [64, 1, 1], 0, args)
    };
    let e = run(&args).expect_err("three arguments of four");
    assert!(e.to_string().contains("takes 4 argument(s), 3 given"), "{e}");
    args.push(NativeArg::Value(&[8, 0]));
    let e = run(&args).expect_err("a short value");
    assert!(
        e.to_string().contains("argument 3 of `vector_add` has 2 bytes, its parameter 4"),
        "{e}"
    );
    args[3] = NativeArg::Value(&[8, 0, 0, 0]);
    assert_eq!(run(&args).expect("the right arguments").buffers[2], want);
    // A kernel the module does not have: the driver's own error, named.
    let e = cuda.run(&[text.as_str()], "nope", [1; 3], [1; 3], 0, &args).expect_err("no kernel");
    assert!(e.to_string().starts_with("cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"), "{e}");

    // The system's libcuda.so.1 is now this library (the loader matches the name to
    // the soname of the library already loaded), which the client refuses.
    let e = NativeCuda::open(&CudaLibrary::System, 0).expect_err("ptxvk's own library");
    match &e {
        CudaError::NotNvidia { library } => {
            assert_eq!(Path::new(library).canonicalize().ok(), Some(canonical))
        }
        other => panic!("expected NotNvidia, got {other}"),
    }
    assert!(e.to_string().contains("not NVIDIA's"), "{e}");
}

fn bytemuck_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Texture and surface arguments on the driver side of `compare --cuda`: the client
/// makes a CUDA array of the spec's shape and format, copies the texels in, creates a
/// texture object with the spec's sampler state (or a surface object) and reads the
/// texels back; run against this library, it must agree with ptxvk's own run, which
/// takes the spec's state directly (a wrong flag, address mode or format in the client
/// would make them differ).
#[test]
fn the_native_client_makes_arrays_texture_and_surface_objects_from_a_spec() {
    if !common::init_context(&common::library()) {
        return;
    }
    let ptx = repo().join("tests/kernels/texture.nvcc.sm_80.ptx");
    let text = std::fs::read_to_string(&ptx).expect("the PTX");
    let sources = ptxvk::SourceMap::new([(ptx.display().to_string(), text.as_str())]);
    let library = common::library_path();
    let platforms = [
        Platform::NativeCuda(CudaLibrary::Path(library)),
        Platform::Vulkan(DeviceChoice::parse("").expect("the default device")),
    ];
    let n = 24usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.173 - 1.1).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.3 - i as f32 * 0.097).collect();
    let float_texels: Vec<f32> =
        (0..6 * 5 * 4).map(|k| (k * 13 % 37) as f32 * 0.25 - 4.0).collect();
    let byte_texels: Vec<u32> = (0..6 * 5 * 4).map(|k| (k * 29 % 256) as u32).collect();
    for (texture, what) in [
        (
            serde_json::json!({"texture": "f32", "channels": 4, "size": [6, 5], "filter": "linear",
                "address": ["wrap", "mirror"], "normalized_coords": true, "data": float_texels}),
            "float4, linear, wrap and mirror, normalized",
        ),
        (
            serde_json::json!({"texture": "u8", "channels": 4, "size": [6, 5], "filter": "linear",
                "address": "border", "border": [0.5, 0.25, 1.0, 2.0], "normalized_coords": true,
                "read_normalized": true, "data": byte_texels}),
            "uchar4 read as normalized floats, border",
        ),
    ] {
        let spec_json = serde_json::json!({
            "ptx": ptx, "entry": "tex2d_float4", "grid": 1, "block": 32,
            "args": [
                texture,
                {"buffer": "f32", "data": xs},
                {"buffer": "f32", "data": ys},
                {"buffer": "f32", "len": 4 * n},
                {"scalar": "s32", "value": n},
            ],
        });
        let spec = ptxvk::spec::parse(&spec_json.to_string(), repo()).expect("the spec");
        let (report, runs) =
            compare_spec(&spec, &sources, &platforms, None, Tolerance::default(), 10).expect("ran");
        assert!(report.agrees, "{what}: {report:?}");
        let out = &runs[0].buffers[3].bytes;
        assert!(out.iter().any(|&b| b != 0), "{what}: the driver's run wrote its results");
        assert_eq!(runs[0].buffers.len(), 4, "{what}: the texels come back as a buffer");
    }

    // Surfaces: out = in * 2 + 1 through two surface objects; the output texels come back.
    let (w, h) = (8usize, 4usize);
    let input: Vec<f32> = (0..w * h).map(|k| k as f32 * 0.5 - 3.0).collect();
    let spec_json = serde_json::json!({
        "ptx": ptx, "entry": "surf2d_scale", "grid": 1, "block": [w, h],
        "args": [
            {"texture": "f32", "size": [w, h], "surface": true, "data": input},
            {"texture": "f32", "size": [w, h], "surface": true},
            {"scalar": "s32", "value": w},
            {"scalar": "s32", "value": h},
        ],
    });
    let spec = ptxvk::spec::parse(&spec_json.to_string(), repo()).expect("the spec");
    let (report, runs) =
        compare_spec(&spec, &sources, &platforms, None, Tolerance::default(), 10).expect("ran");
    assert!(report.agrees, "{report:?}");
    let want: Vec<u8> = input.iter().flat_map(|v| (v * 2.0 + 1.0).to_le_bytes()).collect();
    assert_eq!(runs[0].buffers[1].bytes, want, "the driver's surface writes");
}
