//! The library's C ABI, loaded with `libloading` as a client would load `libcuda.so.1`:
//! lookup through `cuGetProcAddress_v2`, a kernel from the bundled PTX run through
//! modules, memory and launches (both parameter forms), streams and events, and the error
//! codes of bad handles, null pointers, freed memory and wrong sizes. Expected values come
//! from a CPU model of the kernel (`c[i] = a[i] + b[i]`).

mod common;
#[path = "c_abi/textures.rs"]
mod textures;

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use common::*;
use cudarc::driver::sys::{CUmemorytype, CUDA_MEMCPY3D};
use libloading::Symbol;

/// `vector_add` of the bundled PTX, loaded, and three device buffers of `n` floats.
fn vector_add_and_buffers(lib: &libloading::Library, n: usize) -> (usize, [u64; 3]) {
    let load: Load = proc(lib, "cuModuleLoadData");
    let get_function: GetFunction = proc(lib, "cuModuleGetFunction");
    let alloc: Alloc = proc(lib, "cuMemAlloc");
    let text = ptx();
    let (mut module, mut f) = (0, 0);
    let mut buffers = [0u64; 3];
    // SAFETY: NUL-terminated PTX, writable out-pointers.
    unsafe {
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        assert_eq!(get_function(&mut f, module, c"vector_add".as_ptr()), SUCCESS);
        for d in &mut buffers {
            assert_eq!(alloc(d, n * 4), SUCCESS);
        }
    }
    (f, buffers)
}

fn ptx() -> Vec<u8> {
    nul_terminated("tests/kernels/vector_add.nvcc.sm_80.ptx")
}

#[test]
fn a_kernel_runs_through_the_driver_api_and_bad_calls_are_error_codes() {
    let lib = library();
    let init: unsafe extern "C" fn(c_uint) -> R = proc(&lib, "cuInit");
    // SAFETY (this test): every call passes valid pointers, or deliberately bad ones
    // that the library must reject with an error code.
    unsafe {
        let r = init(0);
        if r == 100 {
            eprintln!("SKIPPED: no Vulkan device: cuInit returned CUDA_ERROR_NO_DEVICE");
            return;
        }
        assert_eq!(r, SUCCESS);
        let get_error_name: unsafe extern "C" fn(c_int, *mut *const c_char) -> R =
            proc(&lib, "cuGetErrorName");
        let mut name = std::ptr::null();
        assert_eq!(get_error_name(INVALID_HANDLE, &mut name), SUCCESS);
        assert_eq!(CStr::from_ptr(name).to_str(), Ok("CUDA_ERROR_INVALID_HANDLE"));
        assert_eq!(get_error_name(12345, &mut name), INVALID_VALUE);

        let version: unsafe extern "C" fn(*mut c_int) -> R = proc(&lib, "cuDriverGetVersion");
        let mut v = 0;
        assert_eq!(version(&mut v), SUCCESS);
        assert!(v >= 12090);
        assert_eq!(version(std::ptr::null_mut()), INVALID_VALUE);

        let count: unsafe extern "C" fn(*mut c_int) -> R = proc(&lib, "cuDeviceGetCount");
        let mut n = 0;
        assert_eq!(count(&mut n), SUCCESS);
        assert_eq!(n, 1);
        let attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> R =
            proc(&lib, "cuDeviceGetAttribute");
        let mut warp = 0;
        assert_eq!(attribute(&mut warp, 10, 0), SUCCESS);
        assert_eq!(warp, 32);
        let mut major = 0;
        assert_eq!(attribute(&mut major, 75, 0), SUCCESS);
        assert_eq!(major, 8);
        assert_eq!(attribute(&mut warp, 10, 1), 101, "device 1 does not exist");

        let retain: unsafe extern "C" fn(*mut usize, c_int) -> R =
            proc(&lib, "cuDevicePrimaryCtxRetain");
        let set_current: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuCtxSetCurrent");
        let mut ctx = 0;
        assert_eq!(retain(&mut ctx, 0), SUCCESS);
        assert_eq!(set_current(ctx), SUCCESS);
        assert_eq!(set_current(0xdead_0000), 201, "an unknown context");
        assert_eq!(set_current(ctx), SUCCESS);

        let load: Load = proc(&lib, "cuModuleLoadData");
        let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
        let text = ptx();
        let mut module = 0;
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        let mut f = 0;
        assert_eq!(get_function(&mut f, module, c"vector_add".as_ptr()), SUCCESS);
        assert_eq!(get_function(&mut f, module, c"nope".as_ptr()), NOT_FOUND);
        assert_eq!(get_function(&mut f, 0x1234, c"vector_add".as_ptr()), INVALID_HANDLE);
        assert_eq!(get_function(&mut f, module, c"vector_add".as_ptr()), SUCCESS);
        let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0";
        assert_eq!(load(&mut module, elf.as_ptr().cast()), NO_BINARY_FOR_GPU);
        // A kernel ptxvk cannot compile: the module loads (each kernel compiles when
        // first looked up, CUDA's lazy loading), and the lookup is the JIT's failure.
        let bad =
            b".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { frobnicate; }\0";
        let mut bad_module = 0;
        assert_eq!(load(&mut bad_module, bad.as_ptr().cast()), SUCCESS);
        assert_eq!(get_function(&mut f, bad_module, c"k".as_ptr()), INVALID_IMAGE_OR_PTX[1]);
        // A module that does not parse fails to load.
        let unparsable = b".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k( {\0";
        assert!(INVALID_IMAGE_OR_PTX.contains(&load(&mut bad_module, unparsable.as_ptr().cast())));

        let alloc: Alloc = proc(&lib, "cuMemAlloc");
        let free: unsafe extern "C" fn(u64) -> R = proc(&lib, "cuMemFree");
        let htod: CopyToDevice = proc(&lib, "cuMemcpyHtoD");
        let dtoh: CopyToHost = proc(&lib, "cuMemcpyDtoH");
        let n = 1000usize;
        let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
        let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
        let (mut da, mut db, mut dc) = (0u64, 0u64, 0u64);
        for d in [&mut da, &mut db, &mut dc] {
            assert_eq!(alloc(d, n * 4), SUCCESS);
        }
        assert_eq!(htod(da, a.as_ptr().cast(), n * 4), SUCCESS);
        assert_eq!(htod(db, b.as_ptr().cast(), n * 4), SUCCESS);
        assert_eq!(htod(da, a.as_ptr().cast(), n * 4 + 4), INVALID_VALUE, "past the end");
        assert_eq!(htod(0x10, a.as_ptr().cast(), 4), INVALID_VALUE, "not an allocation");

        // kernelParams form.
        let launch: Launch = proc(&lib, "cuLaunchKernel");
        let count_arg = n as c_int;
        let mut params: [*mut c_void; 4] = [
            (&da as *const u64).cast_mut().cast(),
            (&db as *const u64).cast_mut().cast(),
            (&dc as *const u64).cast_mut().cast(),
            (&count_arg as *const c_int).cast_mut().cast(),
        ];
        assert_eq!(
            launch(f, 4, 1, 1, 256, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut()),
            SUCCESS
        );
        let mut c = vec![0f32; n];
        assert_eq!(dtoh(c.as_mut_ptr().cast(), dc, n * 4), SUCCESS);
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        assert_eq!(c, want);
        assert_eq!(
            launch(0x4321, 1, 1, 1, 1, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut()),
            INVALID_HANDLE
        );

        // `extra` form (a packed parameter block: three pointers, an int), on a stream,
        // timed with events; a = c + b.
        let mut block = Vec::new();
        for p in [dc, db, da] {
            block.extend(p.to_le_bytes());
        }
        block.extend(count_arg.to_le_bytes());
        block.extend([0u8; 4]);
        let mut size = block.len();
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut(1), // CU_LAUNCH_PARAM_BUFFER_POINTER
            block.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(2), // CU_LAUNCH_PARAM_BUFFER_SIZE
            (&mut size as *mut usize).cast(),
            std::ptr::null_mut(),
        ];
        let stream_create: unsafe extern "C" fn(*mut usize, c_uint) -> R =
            proc(&lib, "cuStreamCreate");
        let stream_sync: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuStreamSynchronize");
        let stream_destroy: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuStreamDestroy");
        let event_create: unsafe extern "C" fn(*mut usize, c_uint) -> R =
            proc(&lib, "cuEventCreate");
        let event_record: unsafe extern "C" fn(usize, usize) -> R = proc(&lib, "cuEventRecord");
        let event_elapsed: unsafe extern "C" fn(*mut f32, usize, usize) -> R =
            proc(&lib, "cuEventElapsedTime");
        let mut stream = 0;
        assert_eq!(stream_create(&mut stream, 1), SUCCESS);
        let (mut e0, mut e1) = (0, 0);
        assert_eq!(event_create(&mut e0, 0), SUCCESS);
        assert_eq!(event_create(&mut e1, 0), SUCCESS);
        assert_eq!(event_record(e0, stream), SUCCESS);
        assert_eq!(
            launch(f, 4, 1, 1, 256, 1, 1, 0, stream, std::ptr::null_mut(), extra.as_mut_ptr()),
            SUCCESS
        );
        assert_eq!(event_record(e1, stream), SUCCESS);
        assert_eq!(stream_sync(stream), SUCCESS);
        let mut ms = -1.0f32;
        assert_eq!(event_elapsed(&mut ms, e0, e1), SUCCESS);
        assert!(ms >= 0.0, "{ms}");
        let mut back = vec![0f32; n];
        assert_eq!(dtoh(back.as_mut_ptr().cast(), da, n * 4), SUCCESS);
        let want_a: Vec<f32> = want.iter().zip(&b).map(|(x, y)| x + y).collect();
        assert_eq!(back, want_a);
        size -= 8; // ends before the last parameter (bytes 24..28)
        std::hint::black_box(&mut size);
        assert_eq!(
            launch(f, 4, 1, 1, 256, 1, 1, 0, stream, std::ptr::null_mut(), extra.as_mut_ptr()),
            INVALID_VALUE,
            "wrong size"
        );
        assert_eq!(stream_sync(0x5555), INVALID_HANDLE);
        assert_eq!(stream_destroy(stream), SUCCESS);
        assert_eq!(stream_destroy(stream), INVALID_HANDLE, "destroyed twice");

        // Memsets through the generic pointer, and freed memory.
        let memset8: unsafe extern "C" fn(u64, u8, usize) -> R = proc(&lib, "cuMemsetD8");
        assert_eq!(memset8(dc + 1, 0x7f, 6), SUCCESS);
        let mut bytes = [0u8; 8];
        assert_eq!(dtoh(bytes.as_mut_ptr().cast(), dc, 8), SUCCESS);
        let first = want[0].to_le_bytes();
        assert_eq!(bytes, [first[0], 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, want[1].to_le_bytes()[3]]);
        assert_eq!(free(dc), SUCCESS);
        assert_eq!(free(dc), INVALID_VALUE, "freed twice");
        assert_eq!(dtoh(bytes.as_mut_ptr().cast(), dc, 8), INVALID_VALUE, "freed memory");
        for d in [da, db] {
            assert_eq!(free(d), SUCCESS);
        }

        // Lookup misses.
        type GetProc =
            unsafe extern "C" fn(*const c_char, *mut *const c_void, c_int, u64, *mut c_int) -> R;
        let get: Symbol<'_, GetProc> = lib.get(b"cuGetProcAddress_v2").expect("symbol");
        let mut pfn = std::ptr::null();
        let mut status = -1;
        assert_eq!(
            get(c"cuGraphAddChildGraphNode".as_ptr(), &mut pfn, 12090, 0, &mut status),
            NOT_FOUND
        );
        assert_eq!(get(c"cuNoSuchFunction".as_ptr(), &mut pfn, 12090, 0, &mut status), NOT_FOUND);
        assert_eq!(status, 1);
        assert_eq!(get(c"cuCtxCreate".as_ptr(), &mut pfn, 3000, 0, &mut status), NOT_FOUND);
        assert_eq!(status, 2, "cuCtxCreate needs CUDA 3.2");
        assert_eq!(get(c"cuMemcpyHtoDAsync".as_ptr(), &mut pfn, 12090, 2, &mut status), SUCCESS);
        let ptsz: Symbol<'_, *const c_void> =
            lib.get(b"cuMemcpyHtoDAsync_v2_ptsz").expect("ptsz export");
        assert_eq!(pfn, *ptsz);
    }
}

/// A PTX file of `tests/ptx/link/`, NUL-terminated.
fn link_input(name: &str) -> Vec<u8> {
    let path = format!("{}/../tests/ptx/link/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read(path).expect("the bundled PTX");
    text.push(0);
    text
}

type LinkCreate = unsafe extern "C" fn(c_uint, *const c_int, *const *mut c_void, *mut usize) -> R;
type LinkAdd = unsafe extern "C" fn(
    usize,
    c_int,
    *mut c_void,
    usize,
    *const c_char,
    c_uint,
    *const c_int,
    *const *mut c_void,
) -> R;
type LinkComplete = unsafe extern "C" fn(usize, *mut *mut c_void, *mut usize) -> R;

#[test]
fn two_ptx_modules_link_through_cu_link_and_their_kernel_runs() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid pointers throughout; the option arrays have `n` entries.
    unsafe {
        let create: LinkCreate = proc(&lib, "cuLinkCreate");
        let add: LinkAdd = proc(&lib, "cuLinkAddData");
        let complete: LinkComplete = proc(&lib, "cuLinkComplete");
        let destroy: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuLinkDestroy");
        let load: Load = proc(&lib, "cuModuleLoadData");
        let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
        let attribute: unsafe extern "C" fn(*mut c_int, c_int, usize) -> R =
            proc(&lib, "cuFuncGetAttribute");

        // CU_JIT_MAX_REGISTERS = 0 (value in the pointer slot), CU_JIT_ERROR_LOG_BUFFER
        // = 5 and its size = 6.
        let mut log = vec![0u8; 4096];
        let options = [0 as c_int, 5, 6];
        let values: [*mut c_void; 3] = [
            std::ptr::without_provenance_mut(3),
            log.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(log.len()),
        ];
        let mut state = 0;
        assert_eq!(create(3, options.as_ptr(), values.as_ptr(), &mut state), SUCCESS);
        let (mut main, mut library) = (link_input("main.ptx"), link_input("lib.ptx"));
        let ptx_kind = 1;
        let none = (0, std::ptr::null(), std::ptr::null());
        for (text, name) in [(&mut main, c"main.ptx"), (&mut library, c"lib.ptx")] {
            let r = add(
                state,
                ptx_kind,
                text.as_mut_ptr().cast(),
                text.len(),
                name.as_ptr(),
                none.0,
                none.1,
                none.2,
            );
            assert_eq!(r, SUCCESS);
        }
        let (mut image, mut size) = (std::ptr::null_mut(), 0usize);
        assert_eq!(complete(state, &mut image, &mut size), SUCCESS);
        assert!(size > 0);
        let mut module = 0;
        assert_eq!(load(&mut module, image), SUCCESS);
        assert_eq!(destroy(state), SUCCESS);
        let mut f = 0;
        assert_eq!(get_function(&mut f, module, c"k".as_ptr()), SUCCESS);
        // CU_FUNC_ATTRIBUTE_NUM_REGS = 4: capped by CU_JIT_MAX_REGISTERS.
        let mut regs = 0;
        assert_eq!(attribute(&mut regs, 4, f), SUCCESS);
        assert_eq!(regs, 3, "the kernel keeps more than 3 words live; capped at 3");

        let alloc: Alloc = proc(&lib, "cuMemAlloc");
        let dtoh: CopyToHost = proc(&lib, "cuMemcpyDtoH");
        let launch: Launch = proc(&lib, "cuLaunchKernel");
        let n = 200u32;
        let mut out = 0u64;
        assert_eq!(alloc(&mut out, n as usize * 4), SUCCESS);
        let mut params: [*mut c_void; 2] =
            [(&mut out as *mut u64).cast(), (&n as *const u32).cast_mut().cast()];
        let r = launch(f, 2, 1, 1, 128, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut());
        assert_eq!(r, SUCCESS);
        let mut got = vec![0u32; n as usize];
        assert_eq!(dtoh(got.as_mut_ptr().cast(), out, n as usize * 4), SUCCESS);
        // The CPU model of tests/ptx/link (see tests/link_e2e.rs): lib's scale (×5×3),
        // lib's strong offset (+100), main's own helper (×2), plus lib's factor (3).
        let want: Vec<u32> = (0..n).map(|i| i * 15 + (i + 100) + 2 * i + 3).collect();
        assert_eq!(got, want);

        // A symbol defined twice: the link fails and the log names both files.
        let mut state = 0;
        assert_eq!(create(3, options.as_ptr(), values.as_ptr(), &mut state), SUCCESS);
        for name in [c"lib.ptx", c"again.ptx"] {
            let mut text = link_input("lib.ptx");
            let r = add(
                state,
                ptx_kind,
                text.as_mut_ptr().cast(),
                text.len(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            );
            assert_eq!(r, SUCCESS);
        }
        assert!(INVALID_IMAGE_OR_PTX.contains(&complete(state, &mut image, &mut size)));
        let text = CStr::from_bytes_until_nul(&log).expect("NUL").to_string_lossy();
        assert!(text.contains("is defined more than once"), "{text}");
        assert!(text.contains("again.ptx:") && text.contains("lib.ptx:"), "{text}");
        assert_eq!(destroy(state), SUCCESS);
        assert_eq!(destroy(state), INVALID_HANDLE);
        assert_eq!(complete(state, &mut image, &mut size), INVALID_HANDLE);
    }
}

#[test]
fn cooperative_launches_of_the_reported_limit_run_and_clusters_are_one_cta() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        let attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> R =
            proc(&lib, "cuDeviceGetAttribute");
        // CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95.
        let mut cooperative = 0;
        assert_eq!(attribute(&mut cooperative, 95, 0), SUCCESS);
        assert_eq!(cooperative, 1);
        let dtoh: CopyToHost = proc(&lib, "cuMemcpyDtoH");
        let launch: LaunchCooperative = proc(&lib, "cuLaunchCooperativeKernel");
        let n = 64usize;
        let (f, [mut da, mut db, mut dc]) = vector_add_and_buffers(&lib, n);
        let htod: CopyToDevice = proc(&lib, "cuMemcpyHtoD");
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
        assert_eq!(htod(da, a.as_ptr().cast(), n * 4), SUCCESS);
        assert_eq!(htod(db, b.as_ptr().cast(), n * 4), SUCCESS);
        let count = n as c_int;
        let mut params: [*mut c_void; 4] = [
            (&mut da as *mut u64).cast(),
            (&mut db as *mut u64).cast(),
            (&mut dc as *mut u64).cast(),
            (&count as *const c_int).cast_mut().cast(),
        ];
        // Grid barriers run as phases (`pass::split_grid`), so cooperative grids of
        // any size launch: never CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (720).
        assert_eq!(launch(f, 1, 1, 1, 64, 1, 1, 0, 0, params.as_mut_ptr()), SUCCESS);
        assert_eq!(launch(f, 2, 1, 1, 32, 1, 1, 0, 0, params.as_mut_ptr()), SUCCESS);
        // cuLaunchKernelEx with a cluster shape: one CTA per cluster runs (ptxvk's own
        // clusters), two are refused (CUDA_ERROR_NOT_SUPPORTED = 801).
        use cudarc::driver::sys::{CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig};
        let launch_ex: unsafe extern "C" fn(
            *const CUlaunchConfig,
            usize,
            *mut *mut c_void,
            *mut *mut c_void,
        ) -> R = proc(&lib, "cuLaunchKernelEx");
        for (x, want) in [(1, SUCCESS), (2, 801)] {
            let mut attr: CUlaunchAttribute = std::mem::zeroed();
            attr.id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attr.value.clusterDim.x = x;
            attr.value.clusterDim.y = 1;
            attr.value.clusterDim.z = 1;
            let mut config: CUlaunchConfig = std::mem::zeroed();
            (config.gridDimX, config.gridDimY, config.gridDimZ) = (2, 1, 1);
            (config.blockDimX, config.blockDimY, config.blockDimZ) = (32, 1, 1);
            config.attrs = &mut attr;
            config.numAttrs = 1;
            let got = launch_ex(&config, f, params.as_mut_ptr(), std::ptr::null_mut());
            assert_eq!(got, want, "a cluster of {x} CTAs");
        }
        let mut c = vec![0f32; n];
        assert_eq!(dtoh(c.as_mut_ptr().cast(), dc, n * 4), SUCCESS);
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        assert_eq!(c, want);

        // Occupancy: the documented model (2,048 threads, at most 32 blocks) for a plain
        // kernel.
        let occupancy: unsafe extern "C" fn(*mut c_int, usize, c_int, usize) -> R =
            proc(&lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
        let mut blocks = 0;
        assert_eq!(occupancy(&mut blocks, f, 128, 0), SUCCESS);
        assert_eq!(blocks, 2048 / 128, "by threads, under the 32-block cap");
        // A kernel that synchronizes its grid is counted by the blocks its grid barriers
        // can save, not by residency: clients bound cooperative grids by occupancy x
        // multiprocessors (cuda.core, CuPy), and such a grid runs, the kernel's ring
        // exchange across two grid barriers checked against a CPU model.
        let load: Load = proc(&lib, "cuModuleLoadData");
        let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
        let text = concat!(include_str!("../../tests/ptx/cooperative/grid_sync.ptx"), "\0");
        let (mut module, mut ring) = (0, 0);
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        assert_eq!(get_function(&mut ring, module, c"ring".as_ptr()), SUCCESS);
        let threads = 64u32;
        assert_eq!(occupancy(&mut blocks, ring, threads as c_int, 0), SUCCESS);
        // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16.
        let mut sms = 0;
        assert_eq!(attribute(&mut sms, 16, 0), SUCCESS);
        let grid = (blocks * sms) as u32;
        assert!((1_000..=65_535).contains(&grid), "cooperative limit {grid}");
        let total = (grid * threads) as usize;
        let alloc: Alloc = proc(&lib, "cuMemAlloc");
        let (mut ra, mut rb) = (0u64, 0u64);
        assert_eq!(alloc(&mut ra, total * 4), SUCCESS);
        assert_eq!(alloc(&mut rb, total * 4), SUCCESS);
        let mut ring_params: [*mut c_void; 2] =
            [(&mut ra as *mut u64).cast(), (&mut rb as *mut u64).cast()];
        let launched = launch(ring, grid, 1, 1, threads, 1, 1, 0, 0, ring_params.as_mut_ptr());
        assert_eq!(launched, SUCCESS);
        let (mut got_a, mut got_b) = (vec![0u32; total], vec![0u32; total]);
        assert_eq!(dtoh(got_a.as_mut_ptr().cast(), ra, total * 4), SUCCESS);
        assert_eq!(dtoh(got_b.as_mut_ptr().cast(), rb, total * 4), SUCCESS);
        // The ring (tests/ptx/cooperative/grid_sync.ptx): a[g] = 3g + 7; barrier;
        // b[g] = a[next thread of the next block] + 1; barrier; a[g] = b[previous thread
        // of the previous block] * 2.
        let at = |block: u32, t: u32| (block * threads + t) as usize;
        for g in 0..grid * threads {
            let (block, t) = (g / threads, g % threads);
            let next = at((block + 1) % grid, (t + 1) % threads) as u32;
            assert_eq!(got_b[g as usize], 3 * next + 8, "b[{g}] of {grid} blocks");
            let prev = at((block + grid - 1) % grid, (t + threads - 1) % threads);
            assert_eq!(got_a[g as usize], got_b[prev] * 2, "a[{g}] of {grid} blocks");
        }
    }
}

#[test]
fn pointer_attributes_one_at_a_time_and_together() {
    let Some(lib) = library_with_context() else { return };
    // CUpointer_attribute values (cuda.h): context 1, memory type 2, device pointer 3,
    // host pointer 4, is managed 8, device ordinal 9, range start 11, range size 12.
    const MEMORY_TYPE: c_int = 2;
    const DEVICE_POINTER: c_int = 3;
    const IS_MANAGED: c_int = 8;
    const DEVICE_ORDINAL: c_int = 9;
    const RANGE_START: c_int = 11;
    const RANGE_SIZE: c_int = 12;
    const DEVICE: c_uint = 2; // CU_MEMORYTYPE_DEVICE
                              // SAFETY (this test): every pointer is valid for the attribute written through it.
    unsafe {
        let alloc: Alloc = proc(&lib, "cuMemAlloc");
        let one: unsafe extern "C" fn(*mut c_void, c_int, u64) -> R =
            proc(&lib, "cuPointerGetAttribute");
        let many: unsafe extern "C" fn(c_uint, *const c_int, *mut *mut c_void, u64) -> R =
            proc(&lib, "cuPointerGetAttributes");
        let mut base = 0u64;
        assert_eq!(alloc(&mut base, 4096), SUCCESS);
        let inner = base + 100;

        let mut kind: c_uint = 0;
        assert_eq!(one((&mut kind as *mut c_uint).cast(), MEMORY_TYPE, inner), SUCCESS);
        assert_eq!(kind, DEVICE);
        let mut start = 0u64;
        assert_eq!(one((&mut start as *mut u64).cast(), RANGE_START, inner), SUCCESS);
        assert_eq!(start, base);
        // CU_POINTER_ATTRIBUTE_LOCALITY_DOMAIN_ORDINAL (CUDA 13): -1, not localized.
        let mut domain: c_int = 7;
        assert_eq!(one((&mut domain as *mut c_int).cast(), 22, inner), SUCCESS);
        assert_eq!(domain, -1);

        let (mut kind, mut dptr, mut managed, mut ordinal, mut size) =
            (0 as c_uint, 0u64, 7 as c_uint, 7 as c_int, 0usize);
        let attributes = [MEMORY_TYPE, DEVICE_POINTER, IS_MANAGED, DEVICE_ORDINAL, RANGE_SIZE];
        let mut data: [*mut c_void; 5] = [
            (&mut kind as *mut c_uint).cast(),
            (&mut dptr as *mut u64).cast(),
            (&mut managed as *mut c_uint).cast(),
            (&mut ordinal as *mut c_int).cast(),
            (&mut size as *mut usize).cast(),
        ];
        assert_eq!(many(5, attributes.as_ptr(), data.as_mut_ptr(), inner), SUCCESS);
        assert_eq!((kind, dptr, managed, ordinal, size), (DEVICE, inner, 0, 0, 4096));

        // An address this driver did not make: an error alone, CUDA's defaults together.
        let stranger = 0x10u64;
        assert_eq!(one((&mut kind as *mut c_uint).cast(), MEMORY_TYPE, stranger), INVALID_VALUE);
        assert_eq!(many(5, attributes.as_ptr(), data.as_mut_ptr(), stranger), SUCCESS);
        assert_eq!((kind, dptr, managed, ordinal, size), (0, 0, 0, -2, 0));
        // An unknown attribute, and missing arrays.
        let bad = [12345];
        assert_eq!(many(1, bad.as_ptr(), data.as_mut_ptr(), inner), INVALID_VALUE);
        assert_eq!(many(1, std::ptr::null(), data.as_mut_ptr(), inner), INVALID_VALUE);
    }
}

#[test]
fn kernels_are_introspected_by_name_module_parameters_and_occupancy() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid pointers and handles, or deliberately bad ones.
    unsafe {
        let load: Load = proc(&lib, "cuModuleLoadData");
        let mut module = 0usize;
        assert_eq!(load(&mut module, ptx().as_ptr().cast()), SUCCESS);
        let count: unsafe extern "C" fn(*mut c_uint, usize) -> R =
            proc(&lib, "cuModuleGetFunctionCount");
        let mut n = 0;
        assert_eq!(count(&mut n, module), SUCCESS);
        assert_eq!(n, 1);
        let enumerate: unsafe extern "C" fn(*mut usize, c_uint, usize) -> R =
            proc(&lib, "cuLibraryEnumerateKernels");
        let mut f = 0usize;
        assert_eq!(enumerate(&mut f, 1, module), SUCCESS);
        let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
        let mut by_name = 0usize;
        assert_eq!(get_function(&mut by_name, module, c"vector_add".as_ptr()), SUCCESS);
        assert_eq!(f, by_name);

        let name: unsafe extern "C" fn(*mut *const c_char, usize) -> R =
            proc(&lib, "cuFuncGetName");
        let mut p = std::ptr::null();
        assert_eq!(name(&mut p, f), SUCCESS);
        assert_eq!(CStr::from_ptr(p).to_str(), Ok("vector_add"));
        assert_eq!(name(&mut p, 0xdead), INVALID_HANDLE);
        let owner: unsafe extern "C" fn(*mut usize, usize) -> R = proc(&lib, "cuFuncGetModule");
        let mut m = 0usize;
        assert_eq!(owner(&mut m, f), SUCCESS);
        assert_eq!(m, module);

        // vector_add(u64, u64, u64, u32): the CUDA ABI puts them at 0, 8, 16 and 24.
        let param: unsafe extern "C" fn(usize, usize, *mut usize, *mut usize) -> R =
            proc(&lib, "cuFuncGetParamInfo");
        let layout: Vec<(usize, usize)> = (0..4)
            .map(|i| {
                let (mut offset, mut size) = (0, 0);
                assert_eq!(param(f, i, &mut offset, &mut size), SUCCESS);
                (offset, size)
            })
            .collect();
        assert_eq!(layout, [(0, 8), (8, 8), (16, 8), (24, 4)]);
        let (mut offset, mut size) = (0, 0);
        assert_eq!(param(f, 4, &mut offset, &mut size), INVALID_VALUE);

        // The block size with the most resident threads, by the occupancy model the
        // library documents (2,048 threads and 32 blocks per multiprocessor, one
        // multiprocessor), the largest on ties.
        let attribute: unsafe extern "C" fn(*mut c_int, c_int, usize) -> R =
            proc(&lib, "cuFuncGetAttribute");
        let mut max = 0;
        assert_eq!(attribute(&mut max, 0, f), SUCCESS); // MAX_THREADS_PER_BLOCK

        // CUDA 13's newest attributes (16: DEVICE_NODE_UPDATE_SUPPORTED, 17), which its
        // runtime's cudaFuncGetAttributes asks for, answer their default; past them is
        // an error.
        for a in [16, 17] {
            let mut v = -1;
            assert_eq!(attribute(&mut v, a, f), SUCCESS, "attribute {a}");
            assert_eq!(v, 0, "attribute {a}");
        }
        let mut v = 0;
        assert_eq!(attribute(&mut v, 18, f), INVALID_VALUE);
        let resident = |b: c_int| (2048 / b).min(32);
        let best = |limit: c_int| {
            let sizes = (1..=limit / 32).map(|w| w * 32);
            sizes.max_by_key(|&b| (resident(b) * b, b)).expect("a block size")
        };
        let want = best(max);
        let potential: unsafe extern "C" fn(
            *mut c_int,
            *mut c_int,
            usize,
            Option<unsafe extern "C" fn(c_int) -> usize>,
            usize,
            c_int,
        ) -> R = proc(&lib, "cuOccupancyMaxPotentialBlockSize");
        let (mut grid, mut block) = (0, 0);
        assert_eq!(potential(&mut grid, &mut block, f, None, 0, 0), SUCCESS);
        assert_eq!((grid, block), (resident(want), want));
        assert_eq!(potential(&mut grid, &mut block, f, None, 0, 96), SUCCESS);
        // At most 96 threads: 64 (32 blocks, 2,048 threads) beats 96 (21 blocks, 2,016).
        assert_eq!((grid, block), (resident(best(96)), best(96)));
        assert_eq!(block, 64);

        let record: unsafe extern "C" fn(usize, usize, c_uint) -> R =
            proc(&lib, "cuEventRecordWithFlags");
        let create: unsafe extern "C" fn(*mut usize, c_uint) -> R = proc(&lib, "cuEventCreate");
        let mut event = 0usize;
        assert_eq!(create(&mut event, 0), SUCCESS);
        assert_eq!(record(event, 0, 0), SUCCESS);
        assert_eq!(record(event, 0, 7), INVALID_VALUE);
    }
}

#[test]
fn context_stream_and_managed_memory_queries() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid pointers and handles, or deliberately bad ones.
    unsafe {
        let ctx_id: unsafe extern "C" fn(usize, *mut u64) -> R = proc(&lib, "cuCtxGetId");
        let (mut a, mut b) = (0u64, 0u64);
        assert_eq!(ctx_id(0, &mut a), SUCCESS);
        assert_eq!(ctx_id(0, &mut b), SUCCESS);
        assert!(a != 0 && a == b, "{a} {b}");
        let set_cache: unsafe extern "C" fn(c_int) -> R = proc(&lib, "cuCtxSetCacheConfig");
        assert_eq!(set_cache(1), SUCCESS);
        assert_eq!(set_cache(9), INVALID_VALUE);

        let bus_id: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> R =
            proc(&lib, "cuDeviceGetPCIBusId");
        let attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> R =
            proc(&lib, "cuDeviceGetAttribute");
        // CU_DEVICE_ATTRIBUTE_PCI_BUS_ID 33, _PCI_DEVICE_ID 34, _PCI_DOMAIN_ID 50.
        let mut pci = [0; 3];
        for (v, a) in pci.iter_mut().zip([50, 33, 34]) {
            assert_eq!(attribute(v, a, 0), SUCCESS);
        }
        let want = format!("{:04x}:{:02x}:{:02x}.0", pci[0], pci[1], pci[2]);
        let mut buffer = [1 as c_char; 32];
        assert_eq!(bus_id(buffer.as_mut_ptr(), 32, 0), SUCCESS);
        assert_eq!(CStr::from_ptr(buffer.as_ptr()).to_str(), Ok(want.as_str()));
        assert_eq!(bus_id(buffer.as_mut_ptr(), 5, 0), SUCCESS);
        assert_eq!(CStr::from_ptr(buffer.as_ptr()).to_str(), Ok(&want[..4]));
        assert_eq!(bus_id(buffer.as_mut_ptr(), 32, 3), 101, "no device 3");

        let create: unsafe extern "C" fn(*mut usize, c_uint) -> R = proc(&lib, "cuStreamCreate");
        let stream_id: unsafe extern "C" fn(usize, *mut u64) -> R = proc(&lib, "cuStreamGetId");
        let mut stream = 0usize;
        assert_eq!(create(&mut stream, 0), SUCCESS);
        let mut id = 0u64;
        assert_eq!(stream_id(0, &mut id), SUCCESS);
        assert_eq!(id, 1, "the legacy default stream");
        assert_eq!(stream_id(stream, &mut id), SUCCESS);
        assert!(id > 2);
        assert_eq!(stream_id(0xdead, &mut id), INVALID_HANDLE);

        let managed: unsafe extern "C" fn(*mut u64, usize, c_uint) -> R =
            proc(&lib, "cuMemAllocManaged");
        let alloc: Alloc = proc(&lib, "cuMemAlloc");
        // CUDA 12.2+ clients get the `_v2` forms, which take a `CUmemLocation`.
        #[repr(C)]
        struct Location {
            kind: c_int,
            id: c_int,
        }
        let device = || Location { kind: 1, id: 0 }; // CU_MEM_LOCATION_TYPE_DEVICE
        let advise_v2: unsafe extern "C" fn(u64, usize, c_int, Location) -> R =
            proc(&lib, "cuMemAdvise");
        let advise = |p: u64, n: usize, advice: c_int| advise_v2(p, n, advice, device());
        let prefetch_v2: unsafe extern "C" fn(u64, usize, Location, c_uint, usize) -> R =
            proc(&lib, "cuMemPrefetchAsync");
        let prefetch = |p: u64, n: usize, s: usize| prefetch_v2(p, n, device(), 0, s);
        let (mut m, mut plain) = (0u64, 0u64);
        assert_eq!(managed(&mut m, 4096, 1), SUCCESS);
        assert_eq!(alloc(&mut plain, 4096), SUCCESS);
        assert_eq!(advise(m, 4096, 1), SUCCESS);
        assert_eq!(advise(m, 4096, 99), INVALID_VALUE, "no such advice");
        assert_eq!(advise(m, 8192, 1), INVALID_VALUE, "past the allocation");
        assert_eq!(advise(plain, 4096, 1), INVALID_VALUE, "not managed memory");
        assert_eq!(prefetch(m + 64, 1024, stream), SUCCESS);
        assert_eq!(prefetch(m, 1024, 0xdead), INVALID_HANDLE);

        // Dynamic shared memory per block with `n` blocks resident: the per-block limit
        // split between them (the kernel has no static shared memory), or 0 when the
        // occupancy model (2,048 threads per multiprocessor) cannot keep them resident.
        let load: Load = proc(&lib, "cuModuleLoadData");
        let get_function: GetFunction = proc(&lib, "cuModuleGetFunction");
        let (mut module, mut f) = (0usize, 0usize);
        assert_eq!(load(&mut module, ptx().as_ptr().cast()), SUCCESS);
        assert_eq!(get_function(&mut f, module, c"vector_add".as_ptr()), SUCCESS);
        let available: unsafe extern "C" fn(*mut usize, usize, c_int, c_int) -> R =
            proc(&lib, "cuOccupancyAvailableDynamicSMemPerBlock");
        let mut limit = 0;
        assert_eq!(attribute(&mut limit, 8, 0), SUCCESS); // MAX_SHARED_MEMORY_PER_BLOCK
        let mut bytes = 0usize;
        assert_eq!(available(&mut bytes, f, 2, 128), SUCCESS);
        assert_eq!(bytes, limit as usize / 2);
        assert_eq!(available(&mut bytes, f, 4, 1024), SUCCESS);
        assert_eq!(bytes, 0, "four blocks of 1,024 threads are not resident together");
    }
}

#[test]
fn context_limits_are_the_fixed_sizes() {
    let Some(lib) = library_with_context() else { return };
    const NOT_SUPPORTED: R = 801;
    const UNSUPPORTED_LIMIT: R = 215;
    // SAFETY (this test): valid pointers throughout.
    unsafe {
        let get: unsafe extern "C" fn(*mut usize, c_int) -> R = proc(&lib, "cuCtxGetLimit");
        let set: unsafe extern "C" fn(c_int, usize) -> R = proc(&lib, "cuCtxSetLimit");
        // Stack per thread, printf buffer, malloc heap: ptxvk's documented sizes.
        let want = [
            (0, ptxvk::lower::sema::RECURSION_STACK_BYTES as usize),
            (1, ptxvk_abi::system::PRINTF_CAPACITY as usize),
            (2, ptxvk_abi::system::HEAP_BYTES as usize),
        ];
        for (limit, size) in want {
            let mut v = 0usize;
            assert_eq!(get(&mut v, limit), SUCCESS);
            assert_eq!(v, size, "limit {limit}");
            assert_eq!(set(limit, size / 2), SUCCESS, "less than there is");
            assert_eq!(set(limit, size + 1), NOT_SUPPORTED, "more than there is");
        }
        let mut v = 0usize;
        assert_eq!(get(&mut v, 3), UNSUPPORTED_LIMIT, "device-runtime sync depth");
        assert_eq!(set(6, 1 << 20), SUCCESS, "persisting-L2 size is a hint");
    }
}

/// `CUDA_MEMCPY2D` (cuda.h).
#[repr(C)]
#[derive(Clone, Copy)]
struct Memcpy2d {
    src_x_bytes: usize,
    src_y: usize,
    src_type: c_uint,
    src_host: *const c_void,
    src_device: u64,
    src_array: usize,
    src_pitch: usize,
    dst_x_bytes: usize,
    dst_y: usize,
    dst_type: c_uint,
    dst_host: *mut c_void,
    dst_device: u64,
    dst_array: usize,
    dst_pitch: usize,
    width_bytes: usize,
    height: usize,
}

/// `cuMemAllocPitch` rows are at least as long as asked, aligned for pitched textures,
/// and the whole `pitch * height` is one allocation; element sizes other than 4, 8 or 16
/// are refused. `cuMemHostGetFlags` knows pinned allocations only.
#[test]
fn pitched_allocations_and_pinned_memory_flags() {
    let Some(lib) = library_with_context() else { return };
    type AllocPitch = unsafe extern "C" fn(*mut u64, *mut usize, usize, usize, c_uint) -> R;
    type AddressRange = unsafe extern "C" fn(*mut u64, *mut usize, u64) -> R;
    type HostAlloc = unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> R;
    type HostGetFlags = unsafe extern "C" fn(*mut c_uint, *mut c_void) -> R;
    type HostRegister = unsafe extern "C" fn(*mut c_void, usize, c_uint) -> R;
    let alloc_pitch: AllocPitch = proc(&lib, "cuMemAllocPitch");
    let range: AddressRange = proc(&lib, "cuMemGetAddressRange");
    let host_alloc: HostAlloc = proc(&lib, "cuMemHostAlloc");
    let get_flags: HostGetFlags = proc(&lib, "cuMemHostGetFlags");
    let register: HostRegister = proc(&lib, "cuMemHostRegister");
    let unregister: unsafe extern "C" fn(*mut c_void) -> R = proc(&lib, "cuMemHostUnregister");
    let free_host: unsafe extern "C" fn(*mut c_void) -> R = proc(&lib, "cuMemFreeHost");
    let mut texture_pitch_alignment = 0;
    let attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> R =
        proc(&lib, "cuDeviceGetAttribute");
    // SAFETY (this test): valid out-pointers; the host memory outlives its registration.
    unsafe {
        // CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT
        assert_eq!(attribute(&mut texture_pitch_alignment, 51, 0), SUCCESS);
        let (mut dptr, mut pitch) = (0u64, 0usize);
        assert_eq!(alloc_pitch(&mut dptr, &mut pitch, 1201, 7, 4), SUCCESS);
        assert!(pitch >= 1201, "pitch {pitch}");
        assert_eq!(pitch % texture_pitch_alignment as usize, 0, "pitch {pitch}");
        let (mut base, mut size) = (0u64, 0usize);
        assert_eq!(range(&mut base, &mut size, dptr + (pitch * 6 + 1200) as u64), SUCCESS);
        assert_eq!((base, size), (dptr, pitch * 7));
        for bad_element_size in [0, 1, 2, 3, 12, 32] {
            assert_eq!(alloc_pitch(&mut dptr, &mut pitch, 64, 2, bad_element_size), INVALID_VALUE);
        }
        assert_eq!(alloc_pitch(&mut dptr, std::ptr::null_mut(), 64, 2, 4), INVALID_VALUE);

        let mut pinned = std::ptr::null_mut();
        assert_eq!(host_alloc(&mut pinned, 4096, 0), SUCCESS);
        let mut flags = 0;
        assert_eq!(get_flags(&mut flags, pinned.cast::<u8>().add(100).cast()), SUCCESS);
        // CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP
        assert_eq!(flags, 3);
        let mut registered = vec![0u8; 8192];
        assert_eq!(register(registered.as_mut_ptr().cast(), registered.len(), 0), SUCCESS);
        assert_eq!(get_flags(&mut flags, registered.as_mut_ptr().cast()), INVALID_VALUE);
        assert_eq!(unregister(registered.as_mut_ptr().cast()), SUCCESS);
        assert_eq!(get_flags(&mut flags, registered.as_mut_ptr().cast()), INVALID_VALUE);
        assert_eq!(free_host(pinned), SUCCESS);
    }
}

#[test]
fn pitched_copies_and_memsets_follow_a_model_of_rows_and_slices() {
    let Some(lib) = library_with_context() else { return };
    const HOST: c_uint = 1;
    const DEVICE: c_uint = 2;
    // A 7-row pitched image on the device (pitch 64), a 5 x 24-byte window of it at
    // (x 8, y 1) copied from a host image of pitch 40 at (x 4, y 2), then a 16-bit
    // memset of 3 x 6 elements at row 4, then the whole image copied back.
    let (dev_pitch, rows, host_pitch) = (64usize, 7usize, 40usize);
    let host: Vec<u8> = (0..host_pitch * 8).map(|i| (i * 7 % 251) as u8).collect();
    let mut model = vec![0xeeu8; dev_pitch * rows];
    for r in 0..5 {
        for x in 0..24 {
            model[(1 + r) * dev_pitch + 8 + x] = host[(2 + r) * host_pitch + 4 + x];
        }
    }
    for r in 0..3 {
        for e in 0..6 {
            let at = (4 + r) * dev_pitch + 2 * e;
            model[at..at + 2].copy_from_slice(&0xbeefu16.to_le_bytes());
        }
    }
    // SAFETY (this test): the descriptors describe memory the test owns.
    unsafe {
        let alloc: Alloc = proc(&lib, "cuMemAlloc");
        let memset8: unsafe extern "C" fn(u64, u8, usize) -> R = proc(&lib, "cuMemsetD8");
        let copy2d: unsafe extern "C" fn(*const Memcpy2d) -> R = proc(&lib, "cuMemcpy2D");
        let copy2d_async: unsafe extern "C" fn(*const Memcpy2d, usize) -> R =
            proc(&lib, "cuMemcpy2DAsync");
        let memset2d16: unsafe extern "C" fn(u64, usize, u16, usize, usize) -> R =
            proc(&lib, "cuMemsetD2D16");
        let sync: unsafe extern "C" fn() -> R = proc(&lib, "cuCtxSynchronize");
        let mut image = 0u64;
        assert_eq!(alloc(&mut image, dev_pitch * rows), SUCCESS);
        assert_eq!(memset8(image, 0xee, dev_pitch * rows), SUCCESS);
        let up = Memcpy2d {
            src_x_bytes: 4,
            src_y: 2,
            src_type: HOST,
            src_host: host.as_ptr().cast(),
            src_device: 0,
            src_array: 0,
            src_pitch: host_pitch,
            dst_x_bytes: 8,
            dst_y: 1,
            dst_type: DEVICE,
            dst_host: std::ptr::null_mut(),
            dst_device: image,
            dst_array: 0,
            dst_pitch: dev_pitch,
            width_bytes: 24,
            height: 5,
        };
        assert_eq!(copy2d_async(&up, 0), SUCCESS);
        assert_eq!(memset2d16(image + 4 * dev_pitch as u64, dev_pitch, 0xbeef, 6, 3), SUCCESS);
        let mut back = vec![0u8; dev_pitch * rows];
        let down = Memcpy2d {
            src_x_bytes: 0,
            src_y: 0,
            src_type: DEVICE,
            src_host: std::ptr::null(),
            src_device: image,
            src_array: 0,
            src_pitch: dev_pitch,
            dst_x_bytes: 0,
            dst_y: 0,
            dst_type: HOST,
            dst_host: back.as_mut_ptr().cast(),
            dst_device: 0,
            dst_array: 0,
            dst_pitch: dev_pitch,
            width_bytes: dev_pitch,
            height: rows,
        };
        assert_eq!(copy2d(&down), SUCCESS);
        assert_eq!(sync(), SUCCESS);
        assert_eq!(back, model);

        // 3-D: slices 1..3 of a 2 x 3-row x 16-byte box of the image seen as slices of
        // 2 rows (slice pitch 128 bytes), into a packed device buffer, then back to the
        // host through a 2-D copy of its 4 rows.
        let copy3d: unsafe extern "C" fn(*const CUDA_MEMCPY3D) -> R = proc(&lib, "cuMemcpy3D");
        let mut packed = 0u64;
        assert_eq!(alloc(&mut packed, 16 * 4), SUCCESS);
        let box3d = CUDA_MEMCPY3D {
            srcXInBytes: 8,
            srcY: 0,
            srcZ: 1,
            srcLOD: 0,
            srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: image,
            srcArray: std::ptr::null_mut(),
            reserved0: std::ptr::null_mut(),
            srcPitch: dev_pitch,
            srcHeight: 2,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: std::ptr::null_mut(),
            dstDevice: packed,
            dstArray: std::ptr::null_mut(),
            reserved1: std::ptr::null_mut(),
            dstPitch: 16,
            dstHeight: 2,
            WidthInBytes: 16,
            Height: 2,
            Depth: 2,
        };
        assert_eq!(copy3d(&box3d), SUCCESS);
        let mut got = vec![0u8; 64];
        let packed_down = Memcpy2d {
            src_device: packed,
            src_pitch: 16,
            dst_host: got.as_mut_ptr().cast(),
            dst_pitch: 16,
            width_bytes: 16,
            height: 4,
            ..down
        };
        assert_eq!(copy2d(&packed_down), SUCCESS);
        let want: Vec<u8> =
            (2..6).flat_map(|row| model[row * dev_pitch + 8..][..16].to_vec()).collect();
        assert_eq!(got, want);
        assert_eq!(
            copy3d(&CUDA_MEMCPY3D { srcHeight: 1, ..box3d }),
            INVALID_VALUE,
            "slices overlap"
        );

        // A stream-ordered 32-bit write, seen by the copy after it.
        let write32: unsafe extern "C" fn(usize, u64, u32, c_uint) -> R =
            proc(&lib, "cuStreamWriteValue32");
        assert_eq!(write32(0, packed + 4, 0xfeed_f00d, 0), SUCCESS);
        assert_eq!(write32(0, packed + 2, 1, 0), INVALID_VALUE, "unaligned");
        assert_eq!(copy2d(&packed_down), SUCCESS);
        let mut want = want;
        want[4..8].copy_from_slice(&0xfeed_f00du32.to_le_bytes());
        assert_eq!(got, want);

        // A pitch below the width, an unknown memory type, an array side without an
        // array, rows past the allocation, and no descriptor.
        assert_eq!(copy2d(&Memcpy2d { src_pitch: 8, ..down }), INVALID_VALUE);
        assert_eq!(copy2d(&Memcpy2d { src_type: 9, ..down }), INVALID_VALUE);
        assert_eq!(copy2d(&Memcpy2d { src_type: 3, ..down }), INVALID_HANDLE);
        assert_eq!(copy2d(&Memcpy2d { height: rows + 1, ..down }), INVALID_VALUE);
        assert_eq!(copy2d(std::ptr::null()), INVALID_VALUE);
    }
}

type EncodeTiled = unsafe extern "C" fn(
    *mut u8,
    c_uint,
    c_uint,
    u64,
    *const u64,
    *const u64,
    *const c_uint,
    *const c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
) -> R;

#[test]
fn a_tensor_map_from_cu_tensor_map_encode_tiled_drives_a_bulk_tensor_copy() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        let encode: EncodeTiled = proc(&lib, "cuTensorMapEncodeTiled");
        let replace: unsafe extern "C" fn(*mut u8, u64) -> R =
            proc(&lib, "cuTensorMapReplaceAddress");
        let im2col: unsafe extern "C" fn() -> R = proc(&lib, "cuTensorMapEncodeIm2col");
        let KernelCalls { load, get_function, alloc, htod, dtoh, launch, sync } =
            KernelCalls::new(&lib);
        let text = nul_terminated("tests/kernels/tensor_copy.nvcc.sm_90.ptx");
        let (mut module, mut f) = (0, 0);
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        assert_eq!(get_function(&mut f, module, c"tma_load_2d".as_ptr()), SUCCESS);

        // An f32 tensor of 32 x 16 and the 16 x 8 box at (16 bx - 4, 8 by - 3).
        let (w, h) = (32usize, 16usize);
        let tensor: Vec<f32> = (0..w * h).map(|i| i as f32 + 0.25).collect();
        let (mut dt, mut dout) = (0u64, 0u64);
        assert_eq!(alloc(&mut dt, w * h * 4), SUCCESS);
        assert_eq!(alloc(&mut dout, 4 * 128 * 4), SUCCESS);
        assert_eq!(htod(dt, tensor.as_ptr().cast(), w * h * 4), SUCCESS);
        let dims = [w as u64, h as u64];
        let strides = [4 * w as u64];
        let (boxes, steps) = ([16u32, 8], [1u32, 1]);
        #[repr(C, align(64))]
        struct Map([u8; 128]);
        let mut map = Map([0; 128]);
        let encode_with = |map: &mut Map, stride: u64, data_type: c_uint| {
            let strides = [stride];
            encode(
                map.0.as_mut_ptr(),
                data_type,
                2,
                dt,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                steps.as_ptr(),
                0,
                0,
                0,
                0,
            )
        };
        // CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7; a stride that is no multiple of 16 is
        // invalid; a 4-bit type is not supported (CUDA_ERROR_NOT_SUPPORTED = 801).
        assert_eq!(encode_with(&mut map, 4 * w as u64 + 4, 7), INVALID_VALUE);
        assert_eq!(encode_with(&mut map, strides[0], 13), 801);
        assert_eq!(im2col(), 801);
        assert_eq!(encode_with(&mut map, strides[0], 7), SUCCESS);
        // Encoded for another address first, then pointed at the tensor.
        assert_eq!(replace(map.0.as_mut_ptr(), dt + 4), INVALID_VALUE);
        assert_eq!(replace(map.0.as_mut_ptr(), dt), SUCCESS);
        let mut params: [*mut c_void; 2] =
            [map.0.as_mut_ptr().cast(), (&mut dout as *mut u64).cast()];
        assert_eq!(
            launch(f, 2, 2, 1, 128, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut()),
            SUCCESS
        );
        assert_eq!(sync(), SUCCESS);
        let mut got = vec![0f32; 4 * 128];
        assert_eq!(dtoh(got.as_mut_ptr().cast(), dout, got.len() * 4), SUCCESS);
        for (g, &v) in got.iter().enumerate() {
            let (block, t) = (g / 128, g % 128);
            let (bx, by) = ((block % 2) as i64, (block / 2) as i64);
            let (x, y) = (16 * bx - 4 + (t % 16) as i64, 8 * by - 3 + (t / 16) as i64);
            let inside = (0..w as i64).contains(&x) && (0..h as i64).contains(&y);
            let want = if inside { tensor[y as usize * w + x as usize] } else { 0.0 };
            assert_eq!(v.to_bits(), want.to_bits(), "({x}, {y})");
        }
    }
}

/// Set by [`note_destroyed`], the user object's destructor.
static DESTROYED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn note_destroyed(ptr: *mut c_void) {
    DESTROYED.store(ptr as usize, std::sync::atomic::Ordering::SeqCst);
}

/// Stream capture: launches on a capturing stream are recorded with their parameters
/// (copied when captured) instead of run; the graph, instantiated, runs them on each
/// `cuGraphLaunch` against the memory as it is then. Work that cannot be captured (a
/// synchronize) fails and invalidates the capture; the default stream cannot capture; a
/// graph's user objects are destroyed with the last graph that holds them.
#[test]
fn stream_capture_records_launches_that_graph_launches_replay() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        type Status = unsafe extern "C" fn(usize, *mut c_int) -> R;
        let htod: CopyToDevice = proc(&lib, "cuMemcpyHtoD");
        let dtoh: CopyToHost = proc(&lib, "cuMemcpyDtoH");
        let launch: Launch = proc(&lib, "cuLaunchKernel");
        let stream_create: unsafe extern "C" fn(*mut usize, c_uint) -> R =
            proc(&lib, "cuStreamCreate");
        let sync: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuStreamSynchronize");
        let begin: unsafe extern "C" fn(usize, c_int) -> R = proc(&lib, "cuStreamBeginCapture");
        let end: unsafe extern "C" fn(usize, *mut usize) -> R = proc(&lib, "cuStreamEndCapture");
        let capturing: Status = proc(&lib, "cuStreamIsCapturing");
        let instantiate: unsafe extern "C" fn(*mut usize, usize, u64) -> R =
            proc(&lib, "cuGraphInstantiateWithFlags");
        let graph_launch: unsafe extern "C" fn(usize, usize) -> R = proc(&lib, "cuGraphLaunch");
        let graph_destroy: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuGraphDestroy");
        let exec_destroy: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuGraphExecDestroy");
        let memcpy_async: unsafe extern "C" fn(u64, *const c_void, usize, usize) -> R =
            proc(&lib, "cuMemcpyHtoDAsync");
        let user_create: unsafe extern "C" fn(
            *mut usize,
            *mut c_void,
            unsafe extern "C" fn(*mut c_void),
            c_uint,
            c_uint,
        ) -> R = proc(&lib, "cuUserObjectCreate");
        let graph_retain: unsafe extern "C" fn(usize, usize, c_uint, c_uint) -> R =
            proc(&lib, "cuGraphRetainUserObject");

        let n = 64usize;
        let (f, [mut da, mut db, mut dc]) = vector_add_and_buffers(&lib, n);
        let zeros = vec![0f32; n];
        let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
        assert_eq!(htod(db, b.as_ptr().cast(), n * 4), SUCCESS);
        assert_eq!(htod(dc, zeros.as_ptr().cast(), n * 4), SUCCESS);
        let mut stream = 0usize;
        assert_eq!(stream_create(&mut stream, 1), SUCCESS);
        let status = |s: usize| {
            let mut st = -1;
            assert_eq!(capturing(s, &mut st), SUCCESS);
            st
        };

        // The default stream cannot capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900).
        assert_eq!(begin(0, 2), 900);
        assert_eq!(status(stream), 0);
        assert_eq!(begin(stream, 2), SUCCESS);
        assert_eq!(status(stream), 1);
        let mut count = n as c_int;
        let mut params: [*mut c_void; 4] = [
            (&mut da as *mut u64).cast(),
            (&mut db as *mut u64).cast(),
            (&mut dc as *mut u64).cast(),
            (&mut count as *mut c_int).cast(),
        ];
        assert_eq!(
            launch(f, 1, 1, 1, 64, 1, 1, 0, stream, params.as_mut_ptr(), std::ptr::null_mut()),
            SUCCESS
        );
        let mut graph = 0usize;
        assert_eq!(end(stream, &mut graph), SUCCESS);
        assert_eq!(status(stream), 0);
        // Captured, not run: c is still zero.
        let mut c = vec![1f32; n];
        assert_eq!(dtoh(c.as_mut_ptr().cast(), dc, n * 4), SUCCESS);
        assert_eq!(c, zeros, "a captured launch does not run");

        // The parameters were copied at capture: changing `count` now changes nothing.
        count = 0;
        let mut exec = 0usize;
        assert_eq!(instantiate(&mut exec, graph, 0), SUCCESS);
        for round in 1..=2 {
            let a: Vec<f32> = (0..n).map(|i| (i * round) as f32).collect();
            assert_eq!(htod(da, a.as_ptr().cast(), n * 4), SUCCESS);
            assert_eq!(graph_launch(exec, stream), SUCCESS);
            assert_eq!(sync(stream), SUCCESS);
            assert_eq!(dtoh(c.as_mut_ptr().cast(), dc, n * 4), SUCCESS);
            let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
            assert_eq!(c, want, "graph launch {round} reads a as it is then");
        }
        assert_eq!(count, 0);

        // Synchronizing a capturing stream cannot be captured: it fails and invalidates
        // the capture (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901).
        assert_eq!(begin(stream, 2), SUCCESS);
        assert_eq!(memcpy_async(dc, zeros.as_ptr().cast(), n * 4, stream), SUCCESS, "captured");
        assert_eq!(sync(stream), 900);
        assert_eq!(status(stream), 2);
        assert_eq!(
            launch(f, 1, 1, 1, 64, 1, 1, 0, stream, params.as_mut_ptr(), std::ptr::null_mut()),
            901
        );
        let mut lost = 0usize;
        assert_eq!(end(stream, &mut lost), 901);
        assert_eq!(status(stream), 0, "ending the capture leaves the stream usable");
        assert_eq!(sync(stream), SUCCESS);

        // A user object moved into the graph lives until the graph and its executable
        // graph are both destroyed (CU_USER_OBJECT_NO_DESTRUCTOR_SYNC = 1,
        // CU_GRAPH_USER_OBJECT_MOVE = 1).
        let mut object = 0usize;
        let tag = 0x5eed_usize as *mut c_void;
        assert_eq!(user_create(&mut object, tag, note_destroyed, 1, 1), SUCCESS);
        assert_eq!(graph_retain(graph, object, 1, 1), SUCCESS);
        let mut exec2 = 0usize;
        assert_eq!(instantiate(&mut exec2, graph, 0), SUCCESS);
        assert_eq!(graph_destroy(graph), SUCCESS);
        assert_eq!(DESTROYED.load(std::sync::atomic::Ordering::SeqCst), 0, "exec2 holds it");
        assert_eq!(exec_destroy(exec2), SUCCESS);
        assert_eq!(DESTROYED.load(std::sync::atomic::Ordering::SeqCst), 0x5eed);
        assert_eq!(exec_destroy(exec), SUCCESS);
        assert_eq!(graph_launch(exec, stream), INVALID_HANDLE);
    }
}
