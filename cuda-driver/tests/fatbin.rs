//! Fatbins through the library's C ABI, loaded with `libloading` as a client would load
//! `libcuda.so.1`: nvcc's own fatbins (`tests/data/`, from `scripts/gen-fatbins`) —
//! plain, LZ4, ZSTD, concatenated, with SASS beside the PTX, and behind a
//! `__fatBinC_Wrapper_t` — load with `cuModuleLoadData`, and their `scale` kernel runs
//! on the Vulkan device; the results are compared with the CPU's `x[i] * a`. SASS-only
//! fatbins are `CUDA_ERROR_NO_BINARY_FOR_GPU` with a message in the JIT error log, and
//! malformed ones are error codes, not crashes.

mod common;

use std::ffi::{c_char, c_float, c_int, c_uint, c_void, CStr};
use std::path::PathBuf;

use common::*;

fn data(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")).join(name)
}

/// A fixture in an 8-aligned buffer, as fatbins are embedded (`fatbinary_ALIGN_(8)`).
fn fixture(name: &str) -> Vec<u64> {
    let bytes = std::fs::read(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *w = u64::from_le_bytes(b);
    }
    words
}

/// `__fatBinC_Wrapper_t` (`fatbinary_section.h`); the library reads its fields.
#[repr(C)]
#[allow(dead_code)]
#[derive(Clone, Copy)]
struct Wrapper {
    magic: c_int,
    version: c_int,
    data: *const u64,
    filename_or_fatbins: *const c_void,
}

type LoadEx =
    unsafe extern "C" fn(*mut usize, *const c_void, c_uint, *const c_int, *const *mut c_void) -> R;

struct Api {
    load: Load,
    load_ex: LoadEx,
    load_file: unsafe extern "C" fn(*mut usize, *const c_char) -> R,
    unload: unsafe extern "C" fn(usize) -> R,
    get_function: unsafe extern "C" fn(*mut usize, usize, *const c_char) -> R,
    alloc: unsafe extern "C" fn(*mut u64, usize) -> R,
    free: unsafe extern "C" fn(u64) -> R,
    htod: unsafe extern "C" fn(u64, *const c_void, usize) -> R,
    dtoh: unsafe extern "C" fn(*mut c_void, u64, usize) -> R,
    launch: Launch,
}

impl Api {
    /// Runs `scale(x, a, n)` of `module` and compares with the CPU.
    ///
    /// # Safety
    /// `module` is a loaded module handle of this library (or any value, which the
    /// library rejects).
    unsafe fn check_scale(&self, module: usize, what: &str) {
        let mut f = 0;
        // SAFETY: valid out-pointer and name.
        assert_eq!(unsafe { (self.get_function)(&mut f, module, c"scale".as_ptr()) }, SUCCESS);
        let n = 1000usize;
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.37 - 100.0).collect();
        let a: c_float = -1.75;
        let mut dx = 0u64;
        // SAFETY (the calls below): valid out-pointers, host buffers of the sizes given,
        // kernel parameters matching `scale(float *, float, int)`.
        unsafe {
            assert_eq!((self.alloc)(&mut dx, n * 4), SUCCESS);
            assert_eq!((self.htod)(dx, x.as_ptr().cast(), n * 4), SUCCESS);
            // One element short of the end: the kernel's bound check matters.
            let count = (n - 1) as c_int;
            let mut params: [*mut c_void; 3] = [
                (&dx as *const u64).cast_mut().cast(),
                (&a as *const c_float).cast_mut().cast(),
                (&count as *const c_int).cast_mut().cast(),
            ];
            let r = (self.launch)(
                f,
                4,
                1,
                1,
                256,
                1,
                1,
                0,
                0,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            );
            assert_eq!(r, SUCCESS, "{what}: launch");
            let mut back = vec![0f32; n];
            assert_eq!((self.dtoh)(back.as_mut_ptr().cast(), dx, n * 4), SUCCESS);
            let want: Vec<f32> =
                x.iter().enumerate().map(|(i, &v)| if i < n - 1 { v * a } else { v }).collect();
            assert_eq!(back, want, "{what}");
            assert_eq!((self.free)(dx), SUCCESS);
        }
    }

    /// Loads `image` and runs its kernel.
    ///
    /// # Safety
    /// `image` is a fatbin or wrapper valid for the length its header gives.
    unsafe fn load_and_run(&self, image: *const c_void, what: &str) {
        let mut module = 0;
        // SAFETY: the image (function contract) and a valid out-pointer.
        assert_eq!(unsafe { (self.load)(&mut module, image) }, SUCCESS, "{what}: load");
        // SAFETY: a module handle just loaded.
        unsafe { self.check_scale(module, what) };
        // SAFETY: as above.
        assert_eq!(unsafe { (self.unload)(module) }, SUCCESS);
    }

    /// Loads `image` with an error log and returns the code and the log.
    ///
    /// # Safety
    /// As [`Api::load_and_run`].
    unsafe fn load_logged(&self, image: *const c_void) -> (R, String) {
        let mut log = vec![0u8; 1024];
        let options: [c_int; 2] = [5, 6]; // CU_JIT_ERROR_LOG_BUFFER, ..._SIZE_BYTES
        let values: [*mut c_void; 2] =
            [log.as_mut_ptr().cast(), std::ptr::without_provenance_mut(log.len())];
        let mut module = 0;
        // SAFETY: two options with their values; the log is writable for its size.
        let r = unsafe { (self.load_ex)(&mut module, image, 2, options.as_ptr(), values.as_ptr()) };
        let text = CStr::from_bytes_until_nul(&log).expect("NUL-terminated log");
        (r, text.to_str().expect("UTF-8 log").to_owned())
    }
}

#[test]
fn fatbins_load_their_ptx_and_run_and_bad_ones_are_error_codes() {
    let Some(lib) = library_with_context() else { return };
    let api = Api {
        load: proc(&lib, "cuModuleLoadData"),
        load_ex: proc(&lib, "cuModuleLoadDataEx"),
        load_file: proc(&lib, "cuModuleLoad"),
        unload: proc(&lib, "cuModuleUnload"),
        get_function: proc(&lib, "cuModuleGetFunction"),
        alloc: proc(&lib, "cuMemAlloc"),
        free: proc(&lib, "cuMemFree"),
        htod: proc(&lib, "cuMemcpyHtoD"),
        dtoh: proc(&lib, "cuMemcpyDtoH"),
        launch: proc(&lib, "cuLaunchKernel"),
    };
    // SAFETY (this test, from here on): every call passes valid pointers and images, or
    // deliberately malformed images that stay readable for the length they claim.
    unsafe {
        for name in [
            "scale.ptx75.fatbin",
            "scale.ptx75.zstd.fatbin",
            "scale.ptx75.lz4.fatbin",
            "scale.sass75-ptx75-ptx86.fatbin",
            "scale.ptx75-ptx86.concat.fatbin",
        ] {
            let image = fixture(name);
            api.load_and_run(image.as_ptr().cast(), name);
        }

        // Behind the wrapper that nvcc puts in `.nvFatBinSegment`.
        let image = fixture("scale.ptx75.zstd.fatbin");
        let wrapper = Wrapper {
            magic: 0x4662_43B1,
            version: 1,
            data: image.as_ptr(),
            filename_or_fatbins: std::ptr::null(),
        };
        api.load_and_run(std::ptr::from_ref(&wrapper).cast(), "wrapper");

        // From a file.
        let path = data("scale.ptx75.lz4.fatbin");
        let path = std::ffi::CString::new(path.to_str().expect("UTF-8 path")).expect("path");
        let mut module = 0;
        assert_eq!((api.load_file)(&mut module, path.as_ptr()), SUCCESS);
        api.check_scale(module, "cuModuleLoad");
        assert_eq!((api.unload)(module), SUCCESS);

        // Through `cuModuleLoadFatBinary`, the older entry point for the same images.
        let load_fat: Load = proc(&lib, "cuModuleLoadFatBinary");
        let image = fixture("scale.ptx75.fatbin");
        let mut module = 0;
        assert_eq!(load_fat(&mut module, image.as_ptr().cast()), SUCCESS);
        api.check_scale(module, "cuModuleLoadFatBinary");
        assert_eq!((api.unload)(module), SUCCESS);

        // SASS only: nothing ptxvk can run, and the log says what to do.
        let sass = fixture("scale.sass75.fatbin");
        let (r, log) = api.load_logged(sass.as_ptr().cast());
        assert_eq!(r, NO_BINARY_FOR_GPU, "{log}");
        for needle in ["sm_75 SASS", "ptxvk needs PTX", "code=compute_XX"] {
            assert!(log.contains(needle), "`{needle}` not in: {log}");
        }

        // Malformed fatbins, each readable for the length its header gives.
        let good = fixture("scale.sass75-ptx75-ptx86.fatbin");
        let set_size = |words: &mut Vec<u64>, size: u64| words[1] = size;
        let mut short = good.clone();
        set_size(&mut short, 200); // ends inside the first entry's payload
        let mut bad_version = good.clone();
        bad_version[0] = (bad_version[0] & !0xFFFF_0000_0000) | (7 << 32);
        let mut garbage = good.clone();
        for (i, w) in garbage.iter_mut().enumerate().skip(2) {
            *w = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        let mut corrupt_ptx = good.clone();
        for w in &mut corrupt_ptx[14..40] {
            *w = 0x0F0F_0F0F_0F0F_0F0F; // the first (ZSTD PTX) payload after its header
        }
        for (what, image) in [
            ("truncated", &short),
            ("version 7", &bad_version),
            ("garbage entries", &garbage),
            ("corrupt ZSTD", &corrupt_ptx),
        ] {
            let (r, log) = api.load_logged(image.as_ptr().cast());
            assert_eq!(r, INVALID_IMAGE, "{what}: {log}");
            assert!(log.contains("malformed fatbin"), "{what}: {log}");
        }
        // A wrapper whose `data` is not a fatbin header.
        let bad_wrapper = Wrapper { data: sass.as_ptr().add(1), ..wrapper };
        assert_eq!(api.load_logged(std::ptr::from_ref(&bad_wrapper).cast()).0, INVALID_IMAGE);
    }
}
