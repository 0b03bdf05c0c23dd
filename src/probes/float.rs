//! The fused-fma probe and the float-scheme measurement.

use crate::compile::Target;
use crate::runtime::{Arg, Device, Module};
use crate::Error;
use ptxvk_lower::pass::FusedFma;

use super::kit::unprobed_target;

/// The fused-fma probe: `fma.rn` of operands whose product is an
/// exact tie, so that a fused `Fma` gives the tiny remainder and an unfused one 0:
/// (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 in f32, (1 + 2^-27)^2 - (1 + 2^-26) = 2^-54 in
/// f64. The operands come from memory so that no compiler folds them.
pub(super) const FMA_PROBE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry fma_probe_f32(.param .u64 io)
{
    .reg .f32 %f<5>;
    .reg .b64 %rd1;
    ld.param.u64 %rd1, [io];
    ld.global.f32 %f1, [%rd1];
    ld.global.f32 %f2, [%rd1+4];
    ld.global.f32 %f3, [%rd1+8];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd1+12], %f4;
    ret;
}
.visible .entry fma_probe_f64(.param .u64 io)
{
    .reg .f64 %fd<5>;
    .reg .b64 %rd1;
    ld.param.u64 %rd1, [io];
    ld.global.f64 %fd1, [%rd1];
    ld.global.f64 %fd2, [%rd1+8];
    ld.global.f64 %fd3, [%rd1+16];
    fma.rn.f64 %fd4, %fd1, %fd2, %fd3;
    st.global.f64 [%rd1+24], %fd4;
    ret;
}
"#;

/// A kernel of exact f32 `fma`, `div` and `sqrt` (`FLOAT_SCHEME_PROBE`), timed with the
/// f64 scheme and with the integer one: the median GPU milliseconds of each, from five
/// alternating launches of 4,096 threads.
pub fn probe_float_scheme(device: &Device, fused_fma: FusedFma) -> Result<(f64, f64), Error> {
    let own = Target { fused_fma, ..unprobed_target(device) };
    let n = 4096u32;
    let mut modules = Vec::new();
    for float64 in [true, false] {
        let target = Target { float64, ..own };
        let compiled =
            crate::compile::compile_with("float_scheme.ptx", FLOAT_SCHEME_PROBE, None, target)?;
        modules.push(Module::from_compiled(device, compiled)?);
    }
    let input: Vec<f32> = (0..n).map(|k| k as f32 * 0.37 + 1.0).collect();
    let buf = device.buffer_from(&input)?;
    let mut times = [Vec::new(), Vec::new()];
    for round in 0..6 {
        for (m, t) in modules.iter().zip(times.iter_mut()) {
            let args = [Arg::from(&buf), Arg::from(n)];
            let stats = m.kernel("float_scheme")?.launch_timed(n / 64, 64, 0, &args)?;
            // The first round warms the pipelines up.
            if round > 0 {
                t.push(stats.kernel_ms);
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [f, i] = times;
    Ok((median(f), median(i)))
}

/// The kernel [`probe_float_scheme`] times: a loop of `fma.rn`, `div.rn` and `sqrt.rn`
/// on f32.
pub(super) const FLOAT_SCHEME_PROBE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry float_scheme(.param .u64 io, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r1, %r2, %r3, %r1;
    ld.param.u32 %r4, [n];
    setp.ge.u32 %p1, %r1, %r4;
    @%p1 bra DONE;
    ld.param.u64 %rd1, [io];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    mov.u32 %r5, 0;
LOOP:
    fma.rn.f32 %f1, %f1, 0f3F800347, 0f3F000000;
    add.f32 %f2, %f1, 0f3F800000;
    div.rn.f32 %f3, %f1, %f2;
    sqrt.rn.f32 %f4, %f3;
    add.f32 %f1, %f1, %f4;
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p1, %r5, 16;
    @%p1 bra LOOP;
    st.global.f32 [%rd3], %f1;
DONE:
    ret;
}
"#;

/// Runs the fused-fma probe kernel (`FMA_PROBE`) with `fma.rn` mapped to the device's
/// `Fma` (f64 only where the device has it) and compares with the exact results.
pub fn probe_fused_fma(device: &Device) -> Result<FusedFma, Error> {
    let has_f64 = device.info().features.float64;
    let target =
        Target { fused_fma: FusedFma { f32: true, f64: has_f64 }, ..unprobed_target(device) };
    let mut fused = FusedFma::default();
    let t32 = 1.0f32 + 2f32.powi(-12);
    let t64 = 1.0f64 + 2f64.powi(-27);
    let cases: [(&str, Vec<u8>, Vec<u8>); 2] = [
        (
            "fma_probe_f32",
            [t32, t32, -(1.0 + 2f32.powi(-11)), 0.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
            2f32.powi(-24).to_le_bytes().to_vec(),
        ),
        (
            "fma_probe_f64",
            [t64, t64, -(1.0 + 2f64.powi(-26)), 0.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
            2f64.powi(-54).to_le_bytes().to_vec(),
        ),
    ];
    for (entry, input, want) in cases {
        let is_f64 = entry.ends_with("f64");
        if is_f64 && !has_f64 {
            continue;
        }
        let compiled =
            crate::compile::compile_with("fma_probe.ptx", FMA_PROBE, Some(entry), target)?;
        let module = Module::from_compiled(device, compiled)?;
        let io = device.buffer_from(&input)?;
        module.kernel(entry)?.launch(1, 1, 0, &[Arg::from(&io)])?;
        let out = io.to_vec()?;
        let got = &out[out.len() - want.len()..];
        if is_f64 {
            fused.f64 = got == want.as_slice();
        } else {
            fused.f32 = got == want.as_slice();
        }
    }
    Ok(fused)
}
