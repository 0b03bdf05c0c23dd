//! Arrays, texture and surface objects, texture references of legacy PTX and mipmapped
//! arrays through the C ABI (`cuArray3DCreate`, `cuTexObjectCreate`, `cuTexRefSet*`,
//! `cuMipmappedArrayCreate`), with results checked against CPU models of the reads.

use super::*;

/// `CUDA_ARRAY3D_DESCRIPTOR`, `CUDA_MEMCPY2D`, `CUDA_RESOURCE_DESC` (array form) and
/// `CUDA_TEXTURE_DESC`, as cuda.h lays them out.
#[repr(C)]
struct Array3d {
    width: usize,
    height: usize,
    depth: usize,
    format: c_uint,
    channels: c_uint,
    flags: c_uint,
}

#[repr(C)]
#[derive(Default)]
struct Copy2d {
    src_x: usize,
    src_y: usize,
    src_type: c_uint,
    src_host: usize,
    src_device: u64,
    src_array: usize,
    src_pitch: usize,
    dst_x: usize,
    dst_y: usize,
    dst_type: c_uint,
    dst_host: usize,
    dst_device: u64,
    dst_array: usize,
    dst_pitch: usize,
    width: usize,
    height: usize,
}

#[repr(C)]
struct Resource {
    kind: c_uint,
    res: [u64; 16],
    flags: c_uint,
}

#[repr(C)]
#[derive(Default)]
struct TexDesc {
    address_mode: [c_uint; 3],
    filter_mode: c_uint,
    flags: c_uint,
    max_anisotropy: c_uint,
    mipmap_filter_mode: c_uint,
    bias: f32,
    min_clamp: f32,
    max_clamp: f32,
    border: [f32; 4],
    reserved: [i32; 12],
}

/// Device memory holding `values` (`cuMemAlloc`, `cuMemcpyHtoD`), in the current context.
fn device_floats(lib: &libloading::Library, values: &[f32]) -> u64 {
    let alloc: Alloc = proc(lib, "cuMemAlloc");
    let htod: CopyToDevice = proc(lib, "cuMemcpyHtoD");
    let (mut d, bytes) = (0u64, values.len() * 4);
    // SAFETY: a writable out-pointer, and `bytes` readable bytes at `values`.
    unsafe {
        assert_eq!(alloc(&mut d, bytes), SUCCESS);
        assert_eq!(htod(d, values.as_ptr().cast(), bytes), SUCCESS);
    }
    d
}

#[test]
fn arrays_texture_objects_and_surface_objects_through_the_driver_api() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        let create: unsafe extern "C" fn(*mut usize, *const Array3d) -> R =
            proc(&lib, "cuArray3DCreate");
        let describe: unsafe extern "C" fn(*mut Array3d, usize) -> R =
            proc(&lib, "cuArray3DGetDescriptor");
        let destroy: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuArrayDestroy");
        let copy: unsafe extern "C" fn(*const Copy2d) -> R = proc(&lib, "cuMemcpy2D");
        let tex_create: unsafe extern "C" fn(
            *mut u64,
            *const Resource,
            *const TexDesc,
            *const u8,
        ) -> R = proc(&lib, "cuTexObjectCreate");
        let tex_destroy: unsafe extern "C" fn(u64) -> R = proc(&lib, "cuTexObjectDestroy");
        let surf_create: unsafe extern "C" fn(*mut u64, *const Resource) -> R =
            proc(&lib, "cuSurfObjectCreate");
        let surf_destroy: unsafe extern "C" fn(u64) -> R = proc(&lib, "cuSurfObjectDestroy");
        let mipmapped: unsafe extern "C" fn(*mut usize, *const Array3d, c_uint) -> R =
            proc(&lib, "cuMipmappedArrayCreate");
        let KernelCalls { load, get_function, dtoh, launch, sync, .. } = KernelCalls::new(&lib);
        let text = nul_terminated("tests/kernels/texture.nvcc.sm_80.ptx");
        let mut module = 0;
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);

        // An 8 x 4 float array usable as a surface (CU_AD_FORMAT_FLOAT = 0x20).
        let (w, h) = (8usize, 4usize);
        let desc = Array3d { width: w, height: h, depth: 0, format: 0x20, channels: 1, flags: 2 };
        let (mut array, mut out_array) = (0usize, 0usize);
        assert_eq!(create(&mut array, &desc), SUCCESS);
        assert_eq!(create(&mut out_array, &desc), SUCCESS);
        let bad = Array3d { format: 0xb0, ..desc };
        assert_eq!(create(&mut 0, &bad), 801, "NV12 is not supported");
        assert_eq!(mipmapped(&mut 0, &bad, 1), 801);
        let mut back = Array3d { width: 0, height: 0, depth: 9, format: 0, channels: 0, flags: 0 };
        assert_eq!(describe(&mut back, array), SUCCESS);
        assert_eq!(
            (back.width, back.height, back.depth, back.format, back.channels, back.flags),
            (8, 4, 0, 0x20, 1, 2)
        );
        // Rows of 8 floats from a host buffer with a 40-byte pitch (CU_MEMORYTYPE_HOST = 1,
        // CU_MEMORYTYPE_ARRAY = 3).
        let values: Vec<f32> =
            (0..10 * h).map(|i| (i % 10) as f32 * 0.5 + (i / 10) as f32 * 8.0).collect();
        let up = Copy2d {
            src_type: 1,
            src_host: values.as_ptr() as usize,
            src_pitch: 40,
            dst_type: 3,
            dst_array: array,
            width: 4 * w,
            height: h,
            ..Copy2d::default()
        };
        assert_eq!(copy(&up), SUCCESS);
        let texel = |x: usize, y: usize| values[10 * y + x];

        // Linear filtering, clamp, unnormalized: at x = i + 0.75 (weights 1/4, 3/4 of
        // texels i and i + 1) and a texel centre in y.
        let mut res = Resource { kind: 0, res: [0; 16], flags: 0 };
        res.res[0] = array as u64;
        let tdesc = TexDesc { address_mode: [1, 1, 1], filter_mode: 1, ..TexDesc::default() };
        let mut tex = 0u64;
        // Seamless cube maps are refused plainly (CU_TRSF_SEAMLESS_CUBEMAP), unknown flags
        // are invalid; CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION changes nothing.
        let seamless = TexDesc { flags: 0x40, ..tdesc };
        assert_eq!(tex_create(&mut tex, &res, &seamless, std::ptr::null()), 801);
        let unknown = TexDesc { flags: 0x100, ..tdesc };
        assert_eq!(tex_create(&mut tex, &res, &unknown, std::ptr::null()), INVALID_VALUE);
        let exact = TexDesc { flags: 0x20, ..tdesc };
        assert_eq!(tex_create(&mut tex, &res, &exact, std::ptr::null()), SUCCESS);
        let n = 7usize;
        let xs: Vec<f32> = (0..n).map(|i| i as f32 + 0.75).collect();
        let ys: Vec<f32> = (0..n).map(|i| (i % h) as f32 + 0.5).collect();
        let (mut dx, mut dy) = (device_floats(&lib, &xs), device_floats(&lib, &ys));
        let mut dout = device_floats(&lib, &vec![0.0; n]);
        let mut f = 0;
        assert_eq!(get_function(&mut f, module, c"tex2d_float".as_ptr()), SUCCESS);
        let count = n as c_int;
        let mut params: [*mut c_void; 5] = [
            (&mut tex as *mut u64).cast(),
            (&mut dx as *mut u64).cast(),
            (&mut dy as *mut u64).cast(),
            (&mut dout as *mut u64).cast(),
            (&count as *const c_int).cast_mut().cast(),
        ];
        assert_eq!(
            launch(f, 1, 1, 1, 32, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut()),
            SUCCESS
        );
        assert_eq!(sync(), SUCCESS);
        let mut got = vec![0f32; n];
        assert_eq!(dtoh(got.as_mut_ptr().cast(), dout, n * 4), SUCCESS);
        for (i, &g) in got.iter().enumerate() {
            // x - 0.5 = i + 0.25: texels i and i + 1 (clamped), weight 1/4 on the second.
            let y = i % h;
            let want = 0.75 * texel(i, y) + 0.25 * texel((i + 1).min(w - 1), y);
            assert_eq!(g, want, "texel {i}");
        }
        assert_eq!(tex_destroy(tex), SUCCESS);
        assert_eq!(tex_destroy(tex), INVALID_VALUE, "destroyed twice");

        // Surfaces: out = in * 2 + 1, then copied back from the array.
        let (mut sin, mut sout) = (0u64, 0u64);
        assert_eq!(surf_create(&mut sin, &res), SUCCESS);
        let mut res_out = Resource { kind: 0, res: [0; 16], flags: 0 };
        res_out.res[0] = out_array as u64;
        assert_eq!(surf_create(&mut sout, &res_out), SUCCESS);
        assert_eq!(get_function(&mut f, module, c"surf2d_scale".as_ptr()), SUCCESS);
        let (wi, hi) = (w as c_int, h as c_int);
        let mut params: [*mut c_void; 4] = [
            (&mut sin as *mut u64).cast(),
            (&mut sout as *mut u64).cast(),
            (&wi as *const c_int).cast_mut().cast(),
            (&hi as *const c_int).cast_mut().cast(),
        ];
        assert_eq!(
            launch(f, 1, 1, 1, 8, 4, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut()),
            SUCCESS
        );
        let mut scaled = vec![0f32; w * h];
        let down = Copy2d {
            src_type: 3,
            src_array: out_array,
            dst_type: 1,
            dst_host: scaled.as_mut_ptr() as usize,
            dst_pitch: 4 * w,
            width: 4 * w,
            height: h,
            ..Copy2d::default()
        };
        assert_eq!(copy(&down), SUCCESS);
        for y in 0..h {
            for x in 0..w {
                assert_eq!(scaled[y * w + x], texel(x, y) * 2.0 + 1.0, "surface ({x}, {y})");
            }
        }
        assert_eq!(surf_destroy(sin), SUCCESS);
        assert_eq!(surf_destroy(sout), SUCCESS);
        assert_eq!(destroy(array), SUCCESS);
        assert_eq!(destroy(out_array), SUCCESS);
        assert_eq!(destroy(array), INVALID_HANDLE);
    }
}

#[test]
fn texture_references_of_legacy_ptx_are_bound_with_cu_tex_ref_calls() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        let create: unsafe extern "C" fn(*mut usize, *const Array3d) -> R =
            proc(&lib, "cuArray3DCreate");
        let copy: unsafe extern "C" fn(*const Copy2d) -> R = proc(&lib, "cuMemcpy2D");
        let get_ref: unsafe extern "C" fn(*mut usize, usize, *const c_char) -> R =
            proc(&lib, "cuModuleGetTexRef");
        let set_array: unsafe extern "C" fn(usize, usize, c_uint) -> R =
            proc(&lib, "cuTexRefSetArray");
        let set_address: unsafe extern "C" fn(*mut usize, usize, u64, usize) -> R =
            proc(&lib, "cuTexRefSetAddress");
        let set_format: unsafe extern "C" fn(usize, c_uint, c_int) -> R =
            proc(&lib, "cuTexRefSetFormat");
        let set_filter: unsafe extern "C" fn(usize, c_uint) -> R =
            proc(&lib, "cuTexRefSetFilterMode");
        let set_mode: unsafe extern "C" fn(usize, c_int, c_uint) -> R =
            proc(&lib, "cuTexRefSetAddressMode");
        let set_flags: unsafe extern "C" fn(usize, c_uint) -> R = proc(&lib, "cuTexRefSetFlags");
        let KernelCalls { load, get_function, alloc, htod, dtoh, launch, sync } =
            KernelCalls::new(&lib);
        let text = nul_terminated("tests/ptx/memory/texref_legacy.ptx");
        let (mut module, mut f) = (0, 0);
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        assert_eq!(get_function(&mut f, module, c"legacy_sample".as_ptr()), SUCCESS);
        let (mut image, mut lut) = (0usize, 0usize);
        assert_eq!(get_ref(&mut image, module, c"image".as_ptr()), SUCCESS);
        assert_eq!(get_ref(&mut lut, module, c"lut".as_ptr()), SUCCESS);
        assert_eq!(get_ref(&mut 0, module, c"missing".as_ptr()), NOT_FOUND);

        // `image`: a 4 x 3 float array, point sampling, clamp, normalized coordinates.
        let (w, h) = (4usize, 3usize);
        let mut array = 0usize;
        let desc = Array3d { width: w, height: h, depth: 0, format: 0x20, channels: 1, flags: 0 };
        assert_eq!(create(&mut array, &desc), SUCCESS);
        let texels: Vec<f32> = (0..w * h).map(|i| i as f32 * 1.5 - 4.0).collect();
        let up = Copy2d {
            src_type: 1,
            src_host: texels.as_ptr() as usize,
            src_pitch: 4 * w,
            dst_type: 3,
            dst_array: array,
            width: 4 * w,
            height: h,
            ..Copy2d::default()
        };
        assert_eq!(copy(&up), SUCCESS);
        assert_eq!(set_filter(image, 0), SUCCESS);
        assert_eq!(set_mode(image, 0, 1), SUCCESS);
        assert_eq!(set_mode(image, 1, 1), SUCCESS);
        assert_eq!(set_flags(image, 2), SUCCESS, "CU_TRSF_NORMALIZED_COORDINATES");
        assert_eq!(set_array(image, array, 0), SUCCESS);
        // `lut`: 16 floats of linear memory (CU_AD_FORMAT_FLOAT, one channel).
        let lut_values: Vec<f32> = (0..16).map(|i| 100.0 + i as f32).collect();
        let mut dlut = 0u64;
        assert_eq!(alloc(&mut dlut, 64), SUCCESS);
        assert_eq!(htod(dlut, lut_values.as_ptr().cast(), 64), SUCCESS);
        assert_eq!(set_format(lut, 0x20, 1), SUCCESS);
        let mut offset = 99usize;
        assert_eq!(set_address(&mut offset, lut, dlut, 64), SUCCESS);
        assert_eq!(offset, 0);

        // Texel centres in normalized coordinates, and outside (clamped).
        let n = 16usize;
        let xs: Vec<f32> = (0..n).map(|i| ((i % (w + 2)) as f32 - 0.5) / w as f32).collect();
        let ys: Vec<f32> = (0..n).map(|i| ((i % h) as f32 + 0.5) / h as f32).collect();
        let (mut dx, mut dy) = (device_floats(&lib, &xs), device_floats(&lib, &ys));
        let mut dout = device_floats(&lib, &vec![0.0; 2 * n]);
        let count = n as c_int;
        let mut params: [*mut c_void; 4] = [
            (&mut dx as *mut u64).cast(),
            (&mut dy as *mut u64).cast(),
            (&mut dout as *mut u64).cast(),
            (&count as *const c_int).cast_mut().cast(),
        ];
        assert_eq!(
            launch(f, 1, 1, 1, 32, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut()),
            SUCCESS
        );
        assert_eq!(sync(), SUCCESS);
        let mut got = vec![0f32; 2 * n];
        assert_eq!(dtoh(got.as_mut_ptr().cast(), dout, n * 8), SUCCESS);
        for i in 0..n {
            let x = ((i % (w + 2)) as i64 - 1).clamp(0, w as i64 - 1) as usize;
            let y = i % h;
            assert_eq!(got[2 * i], texels[y * w + x], "image [{i}]");
            assert_eq!(got[2 * i + 1], lut_values[i], "lut [{i}]");
        }
    }
}

#[test]
fn mipmapped_arrays_hold_their_levels_and_tex2d_lod_reads_them() {
    let Some(lib) = library_with_context() else { return };
    // SAFETY (this test): valid pointers and handles throughout.
    unsafe {
        let create: unsafe extern "C" fn(*mut usize, *const Array3d, c_uint) -> R =
            proc(&lib, "cuMipmappedArrayCreate");
        let get_level: unsafe extern "C" fn(*mut usize, usize, c_uint) -> R =
            proc(&lib, "cuMipmappedArrayGetLevel");
        let destroy: unsafe extern "C" fn(usize) -> R = proc(&lib, "cuMipmappedArrayDestroy");
        let copy: unsafe extern "C" fn(*const Copy2d) -> R = proc(&lib, "cuMemcpy2D");
        let tex_create: unsafe extern "C" fn(
            *mut u64,
            *const Resource,
            *const TexDesc,
            *const u8,
        ) -> R = proc(&lib, "cuTexObjectCreate");
        let KernelCalls { load, get_function, dtoh, launch, sync, .. } = KernelCalls::new(&lib);
        let text = nul_terminated("tests/kernels/texture.nvcc.sm_80.ptx");
        let (mut module, mut f) = (0, 0);
        assert_eq!(load(&mut module, text.as_ptr().cast()), SUCCESS);
        assert_eq!(get_function(&mut f, module, c"tex2d_lod".as_ptr()), SUCCESS);

        // 8 x 4 floats, 3 levels (8 x 4, 4 x 2, 2 x 1); texel value = 100 level + index.
        let desc = Array3d { width: 8, height: 4, depth: 0, format: 0x20, channels: 1, flags: 0 };
        let mut mip = 0usize;
        assert_eq!(create(&mut mip, &desc, 3), SUCCESS);
        assert_eq!(create(&mut 0, &desc, 0), INVALID_VALUE, "no levels");
        let sizes = [(8usize, 4usize), (4, 2), (2, 1)];
        for (k, &(w, h)) in sizes.iter().enumerate() {
            let mut level = 0usize;
            assert_eq!(get_level(&mut level, mip, k as c_uint), SUCCESS);
            let values: Vec<f32> = (0..w * h).map(|i| (100 * k + i) as f32).collect();
            let up = Copy2d {
                src_type: 1,
                src_host: values.as_ptr() as usize,
                src_pitch: 4 * w,
                dst_type: 3,
                dst_array: level,
                width: 4 * w,
                height: h,
                ..Copy2d::default()
            };
            assert_eq!(copy(&up), SUCCESS, "level {k}");
        }
        assert_eq!(get_level(&mut 0, mip, 3), INVALID_VALUE);

        // Point sampling, nearest level, normalized coordinates, levels 0 to 2.
        let mut res = Resource { kind: 1, res: [0; 16], flags: 0 };
        res.res[0] = mip as u64;
        let tdesc =
            TexDesc { address_mode: [1, 1, 1], flags: 2, max_clamp: 2.0, ..TexDesc::default() };
        let mut tex = 0u64;
        assert_eq!(tex_create(&mut tex, &res, &tdesc, std::ptr::null()), SUCCESS);
        // Texel (1, 0) of each level: x at its centre in that level.
        let n = 3usize;
        let xs: Vec<f32> = sizes.iter().map(|&(w, _)| 1.5 / w as f32).collect();
        let ys: Vec<f32> = sizes.iter().map(|&(_, h)| 0.5 / h as f32).collect();
        let lods: Vec<f32> = vec![0.2, 1.4, 7.0];
        let (mut dx, mut dy) = (device_floats(&lib, &xs), device_floats(&lib, &ys));
        let (mut dl, mut dout) = (device_floats(&lib, &lods), device_floats(&lib, &vec![0.0; n]));
        let count = n as c_int;
        let mut params: [*mut c_void; 6] = [
            (&mut tex as *mut u64).cast(),
            (&mut dx as *mut u64).cast(),
            (&mut dy as *mut u64).cast(),
            (&mut dl as *mut u64).cast(),
            (&mut dout as *mut u64).cast(),
            (&count as *const c_int).cast_mut().cast(),
        ];
        assert_eq!(
            launch(f, 1, 1, 1, 32, 1, 1, 0, 0, params.as_mut_ptr(), std::ptr::null_mut()),
            SUCCESS
        );
        assert_eq!(sync(), SUCCESS);
        let mut got = vec![0f32; n];
        assert_eq!(dtoh(got.as_mut_ptr().cast(), dout, n * 4), SUCCESS);
        // lod 0.2 -> level 0, 1.4 -> level 1, 7 -> level 2 (the last).
        assert_eq!(got, vec![1.0, 101.0, 201.0]);
        assert_eq!(destroy(mip), SUCCESS);
        assert_eq!(destroy(mip), INVALID_HANDLE);
    }
}
