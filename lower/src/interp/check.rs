//! The semantic checker: a kernel before a pass and after it must have the same
//! observable results — global memory after the launch, the system status, whether
//! it faults — on generated inputs ([`launches`]), through the interpreter
//! ([`super::run`]). The model is Cranelift's interpreter-based pass checking.
//!
//! A run the interpreter cannot judge is skipped and counted: the program before the
//! pass uses an operation it does not model ([`Error::Unsupported`]), does something
//! undefined (an access outside memory among them), or does not end within the step
//! limit.

use ptxvk_frontend::ast::ScalarType;

use super::memory::Region;
use super::{run, Error, Launch, Outcome};
use crate::ir::{Kernel, Node};
use crate::random_cfg::Rng;

/// A kernel in either form: its CFG, or its structured tree.
#[derive(Clone, Copy, Debug)]
pub struct Program<'a> {
    pub kernel: &'a Kernel,
    pub body: Option<&'a [Node]>,
}

impl<'a> Program<'a> {
    pub fn cfg(kernel: &'a Kernel) -> Program<'a> {
        Program { kernel, body: None }
    }
}

/// The result of comparing two runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The same results; `observed` when the kernel left any (it wrote global memory
    /// or reported a status), so that the comparison says something.
    Same { observed: bool },
    /// No comparison: why.
    Skipped(String),
    /// A difference the pass made: what.
    Differs(String),
}

/// Bytes of each global buffer [`launches`] makes for a pointer parameter.
pub const BUFFER_BYTES: usize = 4096;
/// Where the buffers of [`launches`] start, each at a multiple of this.
pub const BUFFER_STRIDE: u64 = 0x1_0000_0000;

/// Generated launches of `k`: `count` of them from `seed`. Each 64-bit parameter is a
/// pointer to a buffer of [`BUFFER_BYTES`] random bytes; other parameters get small
/// values (below 16) half the time and random bits otherwise; grids of one or two
/// blocks of 32 or 64 threads (the kernel's `.reqntid` if it has one).
pub fn launches(k: &Kernel, seed: u64, count: usize) -> Vec<Launch> {
    let mut rng = Rng(seed ^ 0x1a2b_3c4d_5e6f_7081);
    (0..count)
        .map(|_| {
            let mut params = vec![0u8; k.abi.size as usize];
            let mut buffers = Vec::new();
            let small = rng.below(2) == 0;
            for p in &k.abi.params {
                let pointer = p.size == 8
                    && p.count == 1
                    && matches!(p.elem, ScalarType::U64 | ScalarType::B64 | ScalarType::S64);
                let v = if pointer {
                    let base = BUFFER_STRIDE * (buffers.len() as u64 + 1);
                    let bytes = (0..BUFFER_BYTES).map(|_| rng.next_u32() as u8).collect();
                    buffers.push(Region { base, bytes });
                    base
                } else if small {
                    rng.below(16)
                } else {
                    rng.next_u64()
                };
                for i in 0..p.size.min(8) {
                    if let Some(b) = params.get_mut((p.offset + i) as usize) {
                        *b = (v >> (8 * i)) as u8;
                    }
                }
            }
            let block = k.reqntid.unwrap_or([32 * (1 + rng.below(2) as u32), 1, 1]);
            Launch {
                grid: [1 + rng.below(2) as u32, 1, 1],
                block,
                params,
                buffers,
                dynamic_shared: 0,
                step_limit: 2_000_000,
            }
        })
        .collect()
}

/// Compares `before` and `after` on one launch.
pub fn compare(before: Program<'_>, after: Program<'_>, launch: &Launch) -> Verdict {
    // An access outside memory is undefined (PTX ISA 9.2 §5.1): any result will do.
    let want = match run(before.kernel, before.body, launch) {
        Ok(o) => o,
        Err(e) => return Verdict::Skipped(format!("before: {e}")),
    };
    // Lowering may multiply the steps (an emulated ballot is a loop over 32 lanes,
    // predication runs every thread through every path): the lowered kernel gets as
    // many more as that could need before it counts as hanging.
    let longer = Launch { step_limit: launch.step_limit.max(want.steps * 200), ..launch.clone() };
    let got = match run(after.kernel, after.body, &longer) {
        Err(e @ Error::Unsupported { .. }) => return Verdict::Skipped(format!("after: {e}")),
        other => other,
    };
    match (want, got) {
        (_, Err(e)) => Verdict::Differs(format!("before: ran to the end; after: {e}")),
        (a, Ok(b)) => match first_difference(&a, &b) {
            None => {
                let initial = launch.buffers.iter().map(|r| &r.bytes);
                let observed = a.status != 0
                    || a.printf.0 != 0
                    || a.launches.0 != 0
                    || a.buffers.iter().ne(initial);
                Verdict::Same { observed }
            }
            Some(d) => Verdict::Differs(d),
        },
    }
}

fn first_difference(a: &Outcome, b: &Outcome) -> Option<String> {
    if a.status != b.status {
        return Some(format!("system status {} before, {} after", a.status, b.status));
    }
    if a.failure != b.failure {
        return Some(format!("failure details {:?} before, {:?} after", a.failure, b.failure));
    }
    if a.launches != b.launches {
        return Some(format!("launches {:?} before, {:?} after", a.launches, b.launches));
    }
    if a.printf != b.printf {
        return Some(format!("printf records {:?} before, {:?} after", a.printf, b.printf));
    }
    for (i, (x, y)) in a.buffers.iter().zip(&b.buffers).enumerate() {
        if let Some(at) = x.iter().zip(y).position(|(p, q)| p != q) {
            let word = at & !3;
            let show = |v: &[u8]| {
                v.get(word..word + 4).map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            };
            return Some(format!(
                "buffer {i} byte {at}: word {:#010x} before, {:#010x} after",
                show(x),
                show(y)
            ));
        }
    }
    None
}

/// What [`check`] found over several launches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub same: usize,
    /// Of `same`, the launches whose kernel left results.
    pub observed: usize,
    pub skipped: Vec<String>,
}

/// Compares `before` and `after` on `count` generated launches of `before`'s kernel.
/// `Err` names the first launch whose results differ.
pub fn check(
    before: Program<'_>,
    after: Program<'_>,
    seed: u64,
    count: usize,
) -> Result<Tally, String> {
    let mut tally = Tally::default();
    for (i, launch) in launches(before.kernel, seed, count).iter().enumerate() {
        match compare(before, after, launch) {
            Verdict::Same { observed } => {
                tally.same += 1;
                tally.observed += usize::from(observed);
            }
            Verdict::Skipped(why) => tally.skipped.push(why),
            Verdict::Differs(what) => {
                return Err(format!(
                    "launch {i} (seed {seed}, grid {:?}, block {:?}): {what}",
                    launch.grid, launch.block
                ))
            }
        }
    }
    Ok(tally)
}
