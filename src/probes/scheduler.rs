//! The scheduler probe: a spin lock and a flag between warps, run as rounds of the
//! block scheduler.

use crate::compile::Target;
use crate::runtime::{Arg, Device, Module};
use crate::Error;

/// The scheduler probe: a spin lock taken in a polling loop whose critical section has
/// fences (`spin_lock_try` of `tests/kernels/forward_progress.cu`; Mesa 22.3's lavapipe
/// lets only its first subgroup in), and a flag from warp 1 to warp 0. Each of the 64
/// threads takes a ticket under the lock and adds it to a counter; thread 0 of warp 0
/// waits for warp 1's flag (set after a `bar.warp.sync`) and copies the counter it saw.
/// `out[t]` = ticket, `out[64]` = count, `out[65]` = the flag's value warp 0 read.
pub(super) const SCHEDULER_PROBE: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry scheduler_probe(.param .u64 out)
{
    .reg .pred %p<6>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b32 lock;
    .shared .align 4 .b32 count;
    .shared .align 4 .b32 flag;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra READY;
    st.shared.u32 [lock], 0;
    st.shared.u32 [count], 0;
    st.shared.u32 [flag], 0;
READY:
    bar.sync 0;
    mov.u32 %r2, 0;
TRY:
    atom.shared.cas.b32 %r3, [lock], 0, 1;
    setp.ne.u32 %p2, %r3, 0;
    @%p2 bra AGAIN;
    membar.cta;
    ld.volatile.shared.u32 %r4, [count];
    add.u32 %r5, %r4, 1;
    st.volatile.shared.u32 [count], %r5;
    membar.cta;
    atom.shared.exch.b32 %r6, [lock], 0;
    mov.u32 %r2, 1;
AGAIN:
    setp.eq.u32 %p3, %r2, 0;
    @%p3 bra TRY;
    shr.u32 %r7, %r1, 5;
    setp.ne.u32 %p4, %r7, 1;
    @%p4 bra WAIT;
    bar.warp.sync -1;
    st.volatile.shared.u32 [flag], 7;
    bra STORE;
WAIT:
    setp.ne.u32 %p5, %r1, 0;
    @%p5 bra STORE;
SPIN:
    ld.volatile.shared.u32 %r8, [flag];
    setp.eq.u32 %p5, %r8, 0;
    @%p5 bra SPIN;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1+260], %r8;
STORE:
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    bar.sync 0;
    @%p1 bra DONE;
    ld.shared.u32 %r9, [count];
    st.global.u32 [%rd1+256], %r9;
DONE:
    ret;
}
"#;

/// Runs `SCHEDULER_PROBE` compiled for `target` and returns what came out wrong: the
/// tickets must be 0 to 63 in some order, the count 64 and the flag 7.
pub fn probe_scheduler(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    let compiled = crate::compile::compile_with("scheduler.ptx", SCHEDULER_PROBE, None, target)?;
    let module = Module::from_compiled(device, compiled)?;
    let out = device.buffer_from(&[u32::MAX; 66])?;
    let kernel = module.kernel("scheduler_probe")?;
    let mut wrong = Vec::new();
    if let Err(e) = kernel.launch(1, 64, 0, &[Arg::from(&out)]) {
        wrong.push(format!("a spin lock and a flag between warps failed: {e}"));
        return Ok(wrong);
    }
    let got = out.to_vec()?;
    let mut tickets = got[..64].to_vec();
    tickets.sort_unstable();
    if tickets != (0..64).collect::<Vec<u32>>() || got[64] != 64 {
        let took = got[..64].iter().filter(|&&t| t != u32::MAX).count();
        wrong.push(format!(
            "a spin lock with fences in its critical section let {took} of 64 threads in              and counted {}",
            got[64]
        ));
    }
    if got[65] != 7 {
        wrong.push(format!("a flag from warp 1 to warp 0 read {:#x}, not 7", got[65]));
    }
    Ok(wrong)
}
