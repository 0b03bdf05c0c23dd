//! A CUDA driver API client, as a C program or a Python binding would be: it opens
//! `libcuda.so.1` through the loader, loads nvcc's `vector_add` PTX with
//! `cuModuleLoadData`, launches it and checks the sums on the CPU. It knows nothing of
//! ptxvk: `make demo` runs it as `ptxvk exec -- target/release/examples/client`, which
//! puts ptxvk's driver library first on the loader path.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::process::ExitCode;

type R = c_int;

/// The driver API's calls this client makes, looked up by their exported names.
struct Driver {
    _lib: libloading::Library,
    init: unsafe extern "C" fn(c_uint) -> R,
    device_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> R,
    retain: unsafe extern "C" fn(*mut usize, c_int) -> R,
    set_current: unsafe extern "C" fn(usize) -> R,
    load: unsafe extern "C" fn(*mut usize, *const c_void) -> R,
    function: unsafe extern "C" fn(*mut usize, usize, *const c_char) -> R,
    alloc: unsafe extern "C" fn(*mut u64, usize) -> R,
    htod: unsafe extern "C" fn(u64, *const c_void, usize) -> R,
    dtoh: unsafe extern "C" fn(*mut c_void, u64, usize) -> R,
    #[allow(clippy::type_complexity)]
    launch: unsafe extern "C" fn(
        usize,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        usize,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> R,
    sync: unsafe extern "C" fn() -> R,
    error_name: unsafe extern "C" fn(R, *mut *const c_char) -> R,
}

impl Driver {
    fn open() -> Result<Driver, String> {
        // SAFETY: loading a CUDA driver library, which has no unusual initialisers.
        let lib = unsafe { libloading::Library::new("libcuda.so.1") }
            .map_err(|e| format!("no CUDA driver library on the loader path: {e}"))?;
        macro_rules! get {
            ($name:literal) => {
                // SAFETY: each symbol has the type of the CUDA driver API's declaration.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{}: {e}", $name))?
            };
        }
        Ok(Driver {
            init: get!("cuInit"),
            device_name: get!("cuDeviceGetName"),
            retain: get!("cuDevicePrimaryCtxRetain"),
            set_current: get!("cuCtxSetCurrent"),
            load: get!("cuModuleLoadData"),
            function: get!("cuModuleGetFunction"),
            alloc: get!("cuMemAlloc_v2"),
            htod: get!("cuMemcpyHtoD_v2"),
            dtoh: get!("cuMemcpyDtoH_v2"),
            launch: get!("cuLaunchKernel"),
            sync: get!("cuCtxSynchronize"),
            error_name: get!("cuGetErrorName"),
            _lib: lib,
        })
    }

    /// `Ok` for `CUDA_SUCCESS`, else the error's name and what failed.
    fn check(&self, what: &str, r: R) -> Result<(), String> {
        if r == 0 {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer; the name is a static string when it succeeds.
        let name = match unsafe { (self.error_name)(r, &mut name) } {
            // SAFETY: non-null and NUL-terminated (CUDA's contract).
            0 if !name.is_null() => unsafe { CStr::from_ptr(name) }.to_string_lossy(),
            _ => "an unknown error".into(),
        };
        Err(format!("{what} failed: {name} ({r})"))
    }
}

fn run() -> Result<(), String> {
    let d = Driver::open()?;
    let ptx = concat!(include_str!("../../tests/kernels/vector_add.nvcc.sm_80.ptx"), "\0");
    let n = 1 << 16;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n).map(|i| 1.5 - i as f32).collect();
    let mut c = vec![0f32; n];
    let bytes = n * 4;
    // SAFETY: every pointer passed is valid for what the call does with it.
    unsafe {
        d.check("cuInit", (d.init)(0))?;
        let mut name = [0 as c_char; 128];
        d.check("cuDeviceGetName", (d.device_name)(name.as_mut_ptr(), 128, 0))?;
        let mut ctx = 0;
        d.check("cuDevicePrimaryCtxRetain", (d.retain)(&mut ctx, 0))?;
        d.check("cuCtxSetCurrent", (d.set_current)(ctx))?;
        let (mut module, mut f) = (0, 0);
        d.check("cuModuleLoadData", (d.load)(&mut module, ptx.as_ptr().cast()))?;
        d.check("cuModuleGetFunction", (d.function)(&mut f, module, c"vector_add".as_ptr()))?;
        let (mut da, mut db, mut dc) = (0u64, 0u64, 0u64);
        for p in [&mut da, &mut db, &mut dc] {
            d.check("cuMemAlloc", (d.alloc)(p, bytes))?;
        }
        d.check("cuMemcpyHtoD", (d.htod)(da, a.as_ptr().cast(), bytes))?;
        d.check("cuMemcpyHtoD", (d.htod)(db, b.as_ptr().cast(), bytes))?;
        let count = n as c_int;
        let arg = |p: &u64| (p as *const u64).cast_mut().cast::<c_void>();
        let mut params = [arg(&da), arg(&db), arg(&dc), (&count as *const c_int).cast_mut().cast()];
        let blocks = n.div_ceil(256) as c_uint;
        let null = std::ptr::null_mut();
        let r = (d.launch)(f, blocks, 1, 1, 256, 1, 1, 0, 0, params.as_mut_ptr(), null);
        d.check("cuLaunchKernel", r)?;
        d.check("cuCtxSynchronize", (d.sync)())?;
        d.check("cuMemcpyDtoH", (d.dtoh)(c.as_mut_ptr().cast(), dc, bytes))?;
        let device = CStr::from_ptr(name.as_ptr()).to_string_lossy();
        println!("CUDA driver API client on \"{device}\": vector_add of {n} floats");
    }
    match (0..n).find(|&i| c[i] != a[i] + b[i]) {
        Some(i) => Err(format!("c[{i}] = {}, want {}", c[i], a[i] + b[i])),
        None => {
            println!("all {n} sums match the CPU's");
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("client: {e}");
            ExitCode::FAILURE
        }
    }
}
