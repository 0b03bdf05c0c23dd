//! The loops probe: long loops, nests and split loops, counted, unguarded and guarded.

use crate::compile::Target;
use crate::runtime::{Arg, Device, Module};
use crate::Error;

/// The loops probe: one loop of `n` iterations; a nest of `n` × `m`; and in a block of
/// two threads (one subgroup), a loop of `n` that thread 0 runs and then one of `n`
/// that thread 1 runs. Each thread writes its counts.
pub(super) const LOOPS_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry loop_single(.param .u64 out, .param .u32 n)
{
    .reg .pred %p1;
    .reg .b32 %r<3>;
    .reg .b64 %rd1;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, 0;
LOOP:
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra LOOP;
    st.global.u32 [%rd1], %r2;
    ret;
}
.visible .entry loop_nested(.param .u64 out, .param .u32 n, .param .u32 m)
{
    .reg .pred %p<3>;
    .reg .b32 %r<7>;
    .reg .b64 %rd1;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    ld.param.u32 %r2, [m];
    mov.u32 %r3, 0;
    mov.u32 %r5, 0;
OUTER:
    mov.u32 %r4, 0;
INNER:
    add.u32 %r4, %r4, 1;
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p1, %r4, %r2;
    @%p1 bra INNER;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p2, %r3, %r1;
    @%p2 bra OUTER;
    st.global.v2.u32 [%rd1], {%r3, %r5};
    ret;
}
.visible .entry loop_split(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<7>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.eq.u32 %p1, %r2, 0;
    selp.u32 %r3, %r1, 0, %p1;
    selp.u32 %r4, 0, %r1, %p1;
    mov.u32 %r5, 0;
FIRST:
    setp.ge.u32 %p2, %r5, %r3;
    @%p2 bra FIRST_DONE;
    add.u32 %r5, %r5, 1;
    bra FIRST;
FIRST_DONE:
    mov.u32 %r6, 0;
SECOND:
    setp.ge.u32 %p2, %r6, %r4;
    @%p2 bra SECOND_DONE;
    add.u32 %r6, %r6, 1;
    bra SECOND;
SECOND_DONE:
    mul.wide.u32 %rd2, %r2, 8;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r5, %r6};
    ret;
}
"#;

/// One loops case: entry, threads, parameters after the buffer, and the counts a
/// right run writes.
pub(super) struct LoopCase {
    pub(super) entry: &'static str,
    pub(super) threads: u32,
    pub(super) params: Vec<u32>,
    pub(super) want: Vec<u32>,
}

impl LoopCase {
    pub(super) fn single(n: u32) -> LoopCase {
        LoopCase { entry: "loop_single", threads: 1, params: vec![n], want: vec![n] }
    }

    pub(super) fn nested(n: u32, m: u32) -> LoopCase {
        LoopCase { entry: "loop_nested", threads: 1, params: vec![n, m], want: vec![n, n * m] }
    }

    pub(super) fn split(n: u32) -> LoopCase {
        LoopCase { entry: "loop_split", threads: 2, params: vec![n], want: vec![n, 0, 0, n] }
    }

    pub(super) fn describe(&self) -> String {
        match self.entry {
            "loop_single" => format!("a loop of {} iterations", self.params[0]),
            "loop_nested" => format!("a {} × {} loop nest", self.params[0], self.params[1]),
            _ => format!(
                "two loops of {} iterations taken by two threads of one subgroup",
                self.params[0]
            ),
        }
    }

    /// Runs the case on `module`: the counts, or the launch's error.
    pub(super) fn run(
        &self,
        device: &Device,
        module: &Module,
    ) -> Result<Result<Vec<u32>, Error>, Error> {
        let out = device.zeroed::<u32>(self.want.len())?;
        let mut args = vec![Arg::from(&out)];
        args.extend(self.params.iter().map(|&p| Arg::from(p)));
        match module.kernel(self.entry)?.launch(1, self.threads, 0, &args) {
            Ok(_) => Ok(Ok(out.to_vec()?)),
            Err(e @ Error::KernelFailed { .. }) => Ok(Err(e)),
            Err(e) => Err(e),
        }
    }
}

/// Runs the loops cases compiled for `target` (unguarded): the cases cut short, and
/// the iterations after which the driver ended the single loop, if it did.
pub fn probe_loops(device: &Device, target: Target) -> Result<(Vec<String>, Option<u32>), Error> {
    let compiled = crate::compile::compile_with("loops.ptx", LOOPS_PTX, None, target)?;
    let module = Module::from_compiled(device, compiled)?;
    let cases = [
        LoopCase::single(100_000),
        LoopCase::single(1 << 24),
        LoopCase::nested(300, 300),
        LoopCase::split(40_000),
    ];
    let (mut wrong, mut limit) = (Vec::new(), None::<u32>);
    for case in &cases {
        let got = case.run(device, &module)??;
        if got != case.want {
            wrong.push(format!("{} counted {got:?}, not {:?}", case.describe(), case.want));
            if case.entry == "loop_single" {
                limit = Some(limit.map_or(got[0], |l| l.min(got[0])));
            }
        }
    }
    Ok((wrong, limit))
}

/// Runs the loops cases compiled for `target` (with a loop guard): loops past the
/// guard's limit must fail the launch with the loop-limit error, loops below it must
/// count right. Returns what did neither.
pub fn probe_guarded_loops(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    let Some(guard) = target.loop_guard else { return Ok(Vec::new()) };
    let compiled = crate::compile::compile_with("loops.ptx", LOOPS_PTX, None, target)?;
    let module = Module::from_compiled(device, compiled)?;
    let below = guard.limit - guard.limit / 16;
    let cases = [
        (LoopCase::single(100_000), false),
        (LoopCase::split(guard.limit / 2 + 1_000), false),
        (LoopCase::single(below), true),
        (LoopCase::nested(below / 300, 299), true),
        (LoopCase::split(below / 2), true),
    ];
    let mut wrong = Vec::new();
    for (case, runs) in &cases {
        match (case.run(device, &module)?, runs) {
            (Ok(got), true) if got == case.want => {}
            (Err(e), false) if crate::printf::is_loop_limit(&e.to_string()) => {}
            (Ok(got), _) => {
                wrong.push(format!("{} counted {got:?}, not {:?}", case.describe(), case.want))
            }
            (Err(e), _) => wrong.push(format!("{} failed: {e}", case.describe())),
        }
    }
    Ok(wrong)
}
