//! `ptxvk compare --cuda`'s client of a CUDA driver (issue #18), run against this
//! library standing in for NVIDIA's: loaded by path (as only a test may), it must run
//! the spec's PTX as a CUDA driver would and agree with ptxvk on lavapipe; the report
//! must name the file that was loaded; asked for the system's `libcuda.so.1`, the
//! client must refuse this library, which then answers to that name.

mod common;

use std::path::Path;

use ptxvk::compare::{compare_spec, DeviceChoice, Golden, Platform, Tolerance};
use ptxvk::vk::native_cuda::{CudaError, CudaLibrary, NativeArg, NativeCuda};

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
