//! What the probes share: the target they start from, one launch over an in/out
//! buffer, the shape of a probe kernel, and floats as bits.

use crate::compile::Target;
use crate::runtime::{Arg, Device, Module};
use crate::target::{DeviceFacts, Options};
use crate::Error;

/// What `device` would compile for before any probe: the first probes' base.
pub(super) fn unprobed_target(device: &Device) -> Target {
    crate::target::target(Some(&DeviceFacts::unprobed(device.info())), &Options::default())
}

/// Compiles `ptx` for `target`, launches `entry` on one block of `threads` with an
/// in/out buffer of `io` (floats as bits), and returns the buffer.
pub(super) fn launch_io(
    device: &Device,
    ptx: &str,
    entry: &str,
    target: Target,
    io: &[u64],
    width: u32,
) -> Result<Vec<u64>, Error> {
    let compiled = crate::compile::compile_with("probe.ptx", ptx, Some(entry), target)?;
    let module = Module::from_compiled(device, compiled)?;
    let bytes: Vec<u8> = io
        .iter()
        .flat_map(|&v| {
            if width == 32 {
                (v as u32).to_le_bytes().to_vec()
            } else {
                v.to_le_bytes().to_vec()
            }
        })
        .collect();
    let buf = device.buffer_from(&bytes)?;
    module.kernel(entry)?.launch(1, 1, 0, &[Arg::from(&buf)])?;
    let out = buf.to_vec()?;
    let step = (width / 8) as usize;
    Ok(out
        .chunks_exact(step)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..step].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect())
}

/// A probe kernel `name(.param .u64 io)` with `regs` declared and `%rd1` = `io`.
pub(super) fn probe_kernel(name: &str, regs: &str, body: &str) -> String {
    format!(
        ".version 7.0\n.target sm_70\n.address_size 64\n\
         .visible .entry {name}(.param .u64 io)\n{{\n{regs}    .reg .b64 %rd1;\n\
         \x20   ld.param.u64 %rd1, [io];\n{body}    ret;\n}}\n"
    )
}

/// `v` as a float of `width` bits, as bits.
pub(super) fn bits(v: f64, width: u32) -> u64 {
    if width == 32 {
        u64::from((v as f32).to_bits())
    } else {
        v.to_bits()
    }
}

/// Whether `got` is `want`: the same bits, or both NaN (PTX's NaN results are any NaN).
pub(super) fn same(got: u64, want: u64, width: u32) -> bool {
    let nan = |v: u64| {
        if width == 32 {
            f32::from_bits(v as u32).is_nan()
        } else {
            f64::from_bits(v).is_nan()
        }
    };
    got == want || (nan(got) && nan(want))
}

/// A float as text: `-0.0`, `inf`, `NaN`, …
pub(super) fn show(v: u64, width: u32) -> String {
    if width == 32 {
        format!("{:?}", f32::from_bits(v as u32))
    } else {
        format!("{:?}", f64::from_bits(v))
    }
}
