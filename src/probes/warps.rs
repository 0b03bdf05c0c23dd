//! The warp probe of [`Device::open`]: warps numbered as CUDA numbers them.

use crate::runtime::{Arg, Device, Module};

/// The probe kernel of [`Device::open`]: each thread writes its index, `%laneid`,
/// `activemask` and lane 0's index from `shfl.sync.idx`.
pub(super) const WARP_PROBE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry warp_probe(.param .u64 out)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %laneid;
    activemask.b32 %r3;
    shfl.sync.idx.b32 %r4, %r1, 0, 31, %r3;
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 16;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};
    ret;
}
"#;

/// Runs the warp probe kernel (`WARP_PROBE`) for `device`'s warp mode in blocks of 64
/// and 48 threads (full warps, and a partial last warp) and checks what each thread saw
/// against CUDA's numbering; the first difference is the error.
pub fn probe_warps(device: &Device) -> Result<(), String> {
    let compiled =
        crate::compile::compile_with("warp_probe.ptx", WARP_PROBE, None, device.target())
            .map_err(|e| e.to_string())?;
    let module = Module::from_compiled(device, compiled).map_err(|e| e.to_string())?;
    let kernel = module.kernel("warp_probe").map_err(|e| e.to_string())?;
    for block in [64u32, 48] {
        let out = device.zeroed::<u32>(4 * block as usize).map_err(|e| e.to_string())?;
        kernel.launch(1, block, 0, &[Arg::from(&out)]).map_err(|e| e.to_string())?;
        let seen = out.to_vec().map_err(|e| e.to_string())?;
        for t in 0..block {
            let warp_start = t - t % 32;
            let in_warp = (block - warp_start).min(32);
            let mask = if in_warp == 32 { u32::MAX } else { (1 << in_warp) - 1 };
            let want = [t, t % 32, mask, warp_start];
            let got = &seen[4 * t as usize..4 * t as usize + 4];
            if got != want {
                return Err(format!(
                    "in a block of {block}, thread {t} saw (tid, laneid, activemask, lane 0) \
                     = {got:?}, not {want:?}"
                ));
            }
        }
    }
    Ok(())
}
