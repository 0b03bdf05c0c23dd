//! The sign-extension probe: 64-bit compares and `min`/`max` of `cvt.s64.s32` results.

use crate::compile::Target;
use crate::runtime::{Arg, Device, Module};
use crate::Error;

/// Each thread sign-extends its 32-bit `x` to 64 bits and writes six words: the sign
/// as `max(min(x, 1), -1)`, `x < -3`, `x >= 0`, `x > 255`, `x > -10`, and `x >> 63`
/// (arithmetic). Mesa 22.3 takes a negative `x` for a large positive number in some.
pub(super) const SIGN_EXTENSION_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry sign_extension(.param .u64 io)
{
    .reg .pred %p<5>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [io];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 28;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r2, [%rd3];
    cvt.s64.s32 %rd4, %r2;
    min.s64 %rd5, %rd4, 1;
    max.s64 %rd5, %rd5, -1;
    cvt.u32.u64 %r3, %rd5;
    setp.lt.s64 %p1, %rd4, -3;
    selp.u32 %r4, 1, 0, %p1;
    setp.ge.s64 %p2, %rd4, 0;
    selp.u32 %r5, 1, 0, %p2;
    setp.gt.s64 %p3, %rd4, 255;
    selp.u32 %r6, 1, 0, %p3;
    setp.gt.s64 %p4, %rd4, -10;
    selp.u32 %r7, 1, 0, %p4;
    shr.s64 %rd6, %rd4, 63;
    cvt.u32.u64 %r8, %rd6;
    st.global.v2.u32 [%rd3+4], {%r3, %r4};
    st.global.v4.u32 [%rd3+12], {%r5, %r6, %r7, %r8};
    ret;
}
"#;

/// The `x` of each thread of [`SIGN_EXTENSION_PTX`].
pub(super) const SIGN_EXTENSION_INPUTS: [i32; 8] = [-5, 7, 0, i32::MIN, i32::MAX, -300, 300, -1];

/// Runs the sign-extension cases compiled for `target` and returns the wrong ones.
pub fn probe_sign_extension(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    let compiled = crate::compile::compile_with("sign.ptx", SIGN_EXTENSION_PTX, None, target)?;
    let module = Module::from_compiled(device, compiled)?;
    let n = SIGN_EXTENSION_INPUTS.len();
    let io: Vec<u32> = SIGN_EXTENSION_INPUTS
        .iter()
        .flat_map(|&x| std::iter::once(x as u32).chain([0; 6]))
        .collect();
    let buf = device.buffer_from(&io)?;
    module.kernel("sign_extension")?.launch(1, n as u32, 0, &[Arg::from(&buf)])?;
    let out = buf.to_vec()?;
    let names = ["max(min(x, 1), -1)", "x < -3", "x >= 0", "x > 255", "x > -10", "x >> 63"];
    let mut wrong = Vec::new();
    for (t, &x) in SIGN_EXTENSION_INPUTS.iter().enumerate() {
        let x64 = i64::from(x);
        let want = [
            x64.clamp(-1, 1) as u32,
            u32::from(x64 < -3),
            u32::from(x64 >= 0),
            u32::from(x64 > 255),
            u32::from(x64 > -10),
            (x64 >> 63) as u32,
        ];
        for (k, (name, want)) in names.iter().zip(want).enumerate() {
            let got = out[7 * t + 1 + k];
            if got != want {
                wrong.push(format!(
                    "{name} of cvt.s64.s32 x = {x} gave {}, not {}",
                    got as i32, want as i32
                ));
            }
        }
    }
    Ok(wrong)
}
