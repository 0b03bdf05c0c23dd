//! The shuffle-tree probe: what `pass::warp_trees` assumes of a device whose subgroups
//! are narrower than a warp (a subgroup is that many consecutive threads of the block,
//! its size does not change, and subgroup shuffles work in compute shaders), checked
//! on the shapes it rewrites. Where a case comes out wrong the pass is switched off for
//! the device ([`crate::compile::Target::emulated_subgroup`]), and warps are exchanged
//! through shared memory as everywhere else.

use crate::compile::Target;
use crate::runtime::{Arg, Device, Module};
use crate::Error;

/// Each thread's value goes through a `shfl.down` sum tree (16 to 1) and a `shfl.bfly`
/// xor tree (1 to 16), the shapes compilers emit for `__shfl_down_sync` and
/// `__shfl_xor_sync` loops; `out[2t]` and `out[2t + 1]` are the two results of thread t.
pub(super) const TREES_PROBE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry trees_probe(.param .u64 out)
{
    .reg .b32 %r<24>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    mul.lo.u32 %r2, %r1, -1640531535;
    shfl.sync.down.b32 %r3, %r2, 16, 31, -1;
    add.s32 %r4, %r2, %r3;
    shfl.sync.down.b32 %r5, %r4, 8, 31, -1;
    add.s32 %r6, %r4, %r5;
    shfl.sync.down.b32 %r7, %r6, 4, 31, -1;
    add.s32 %r8, %r6, %r7;
    shfl.sync.down.b32 %r9, %r8, 2, 31, -1;
    add.s32 %r10, %r8, %r9;
    shfl.sync.down.b32 %r11, %r10, 1, 31, -1;
    add.s32 %r12, %r10, %r11;
    shfl.sync.bfly.b32 %r13, %r2, 1, 31, -1;
    xor.b32 %r14, %r2, %r13;
    shfl.sync.bfly.b32 %r15, %r14, 2, 31, -1;
    xor.b32 %r16, %r14, %r15;
    shfl.sync.bfly.b32 %r17, %r16, 4, 31, -1;
    xor.b32 %r18, %r16, %r17;
    shfl.sync.bfly.b32 %r19, %r18, 8, 31, -1;
    xor.b32 %r20, %r18, %r19;
    shfl.sync.bfly.b32 %r21, %r20, 16, 31, -1;
    xor.b32 %r22, %r20, %r21;
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r12, %r22};
    ret;
}
"#;

/// The two trees of [`TREES_PROBE`] for one full warp, from the ISA (§9.7.8.6
/// `shfl.sync`: `.down` reads lane `i + d` and, past lane 31, the lane's own value;
/// `.bfly` reads lane `i ^ d`).
fn model(warp_start: u32) -> Vec<[u32; 2]> {
    let start: Vec<u32> = (0..32).map(|i| (warp_start + i).wrapping_mul(0x9e37_79b1)).collect();
    let mut down = start.clone();
    for d in [16, 8, 4, 2, 1] {
        let read: Vec<u32> =
            (0..32).map(|i| if i + d < 32 { down[i + d] } else { down[i] }).collect();
        down = down.iter().zip(&read).map(|(a, b)| a.wrapping_add(*b)).collect();
    }
    let mut bfly = start;
    for d in [1, 2, 4, 8, 16] {
        let read: Vec<u32> = (0..32).map(|i| bfly[i ^ d]).collect();
        bfly = bfly.iter().zip(&read).map(|(a, b)| a ^ b).collect();
    }
    down.into_iter().zip(bfly).map(|(a, b)| [a, b]).collect()
}

/// Runs `TREES_PROBE` compiled for `target` in blocks of 64 and 96 threads and
/// returns what came out wrong (empty where nothing did, or where the target does not
/// rewrite trees).
pub fn probe_warp_trees(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    if target.emulated_subgroup.is_none() {
        return Ok(Vec::new());
    }
    let compiled = crate::compile::compile_with("trees.ptx", TREES_PROBE, None, target)?;
    let module = Module::from_compiled(device, compiled)?;
    let kernel = module.kernel("trees_probe")?;
    let mut wrong = Vec::new();
    for block in [64u32, 96] {
        let out = device.buffer_from(&vec![0u32; 2 * block as usize])?;
        if let Err(e) = kernel.launch(1, block, 0, &[Arg::from(&out)]) {
            wrong.push(format!("shuffle trees in a block of {block} failed: {e}"));
            continue;
        }
        let got = out.to_vec()?;
        for warp in 0..block / 32 {
            for (lane, want) in model(warp * 32).into_iter().enumerate() {
                let t = (warp * 32) as usize + lane;
                let seen = [got[2 * t], got[2 * t + 1]];
                if seen != want && wrong.len() < 4 {
                    wrong.push(format!(
                        "in a block of {block}, thread {t}'s (shfl.down sum, shfl.bfly xor) \
                         trees gave {seen:x?}, not {want:x?}"
                    ));
                }
            }
        }
    }
    Ok(wrong)
}
