//! Pass file tests: each `tests/passes/NAME.ir` is IR text ([`ptxvk_lower::text`])
//! whose first line names the passes to run, in order:
//!
//! ```text
//! ; passes: reducible loop_exits
//! ```
//!
//! The result is compared with `tests/passes/NAME.out`: the CFG IR, or the structured
//! IR once `structurize` has run. `BLESS=1 cargo test -p ptxvk-lower --test passes`
//! rewrites the expectations; read the diff before committing it.
//!
//! Besides the snapshot, every pass is checked against its contract, independently of
//! its output text: the verifier accepts the IR after it; `expand_data_addresses` leaves
//! no module-data or parameter-block address, in the kernel or its functions (checked
//! against the interpreter's model of the parameter block's);
//! `expand_strong` leaves no strong access outside global and shared memory (nor a
//! vector one), and each scalar one in them one atomic (checked against the
//! interpreter's model of atomic loads and stores); `expand_vector_atomics`
//! leaves no vector atomic (checked against the interpreter's model of each element's
//! atomic); `layout_memory` leaves no variable address (checked against the
//! interpreter's model of the layout; `layout_memory_frames.ir` shows the frames of a
//! function on a call cycle, which `recursion_*.ir` run on the interpreter after
//! `inline`); `widen_generic` leaves no
//! generic access of a 32-bit address (checked against the interpreter's model of the
//! 32-bit windows); `infer_spaces` leaves no
//! `cvta`; `thread_registers` leaves no function with thread registers (checked against
//! the interpreter's model of them: the caller's view copied in and out of a call);
//! `thread_ends` leaves no thread end (checked against the interpreter's model
//! of one: the thread and every call active end); `expand_indirect_calls` leaves no indirect call (checked against the
//! interpreter's model of one: the arm at the target's address); `inline` leaves no call and
//! no function (calls into call cycles too, through `pass::recursion`'s machine:
//! `recursion_*.ir`); `expand_generic` leaves no access of a generic address (checked
//! against the interpreter's model of the windows, a generic address's upper half
//! picking the space); `expand_video` leaves no
//! video instruction (and the interpreter's model of each, from the ISA's pseudocode,
//! checks the expansion); `expand_integer` leaves no integer or bit-level operation
//! (checked likewise against the interpreter's models); `expand_formats` leaves no
//! half arithmetic, narrow-format conversion or `cvt` of a wider register (checked against the interpreter's
//! correctly rounded model, its model of the scale factors and its model of the
//! narrow `cvt`s on exact values); `expand_texture` leaves no texture or
//! surface instruction (the interpreter models queries and unformatted surface
//! accesses); `expand_matrix` leaves no matrix instruction (checked against the
//! interpreter's model of each on whole matrices); `expand_copies` leaves no
//! asynchronous copy (checked against the interpreter's byte moves, but tensor copies,
//! which it does not model); `expand_mbarrier` leaves no mbarrier instruction (checked
//! against the interpreter's model of the objects' phases, pending counts and
//! tx-counts); `expand_warp` leaves no warp collective, no `bar.red` and no special
//! register of the warp model (`%laneid`, `%lanemask_*`…)
//! (checked against the interpreter's model of each on the lanes' values, with lanes
//! that exit, lanes on other paths and partial warps, and of `bar.red` on the block's
//! predicates); `warp_trees:S` (subgroups of S lanes) replaces shuffles where it finds
//! a tree, and `warp_trees:S:none` leaves every one (checked against the interpreter's
//! model of each `shfl` on every lane's result); `split_grid` leaves no grid barrier
//! (the interpreter does not model phases: `tests/grid_sync_e2e.rs` checks them on a
//! device); `expand_special` leaves no derived special register (checked against the interpreter's
//! model of the cluster registers of one-CTA clusters); `expand_stack` leaves no stack operation (checked against the interpreter's
//! model of the stack pointer and of a push that does not fit); `expand_runtime` leaves no call of a function CUDA provides (checked against
//! the interpreter's model of each call, over its models of the system area, but the
//! launches', which it models after the pass); `expand_system` leaves no system call,
//! failure or device-side launch
//! (checked against the interpreter's model of the failure records, printf records,
//! heap and launch arena); `legalize_atomics` leaves
//! only native atomics as wide as their space's word; `legalize_memory` leaves no store
//! of part of a window word; `legalize_floats` leaves no
//! directed rounding but in f64 `fma` (and, as `legalize_floats:no_f64`, no f32 or half
//! arithmetic that needs f64); `soft_f64` leaves no f64 operation but `fma`, `div` and
//! `sqrt`; `emulate` leaves no exact f64 `fma`, `div`, `rcp` or `sqrt`, no `.soft` f32
//! arithmetic, no f32 `fma`, `div`, `rcp` or `sqrt` on the f64 path and none of the
//! `.approx` functions that are routines (as
//! `emulate:no_f64`, for a target without f64, no f64 register in the routines either);
//! `retry_regions` leaves no block with a run of register arithmetic holding two exact
//! f64 `fma.rn`/`div.rn` fast paths (`Routine::NearestF64` calls);
//! `exact_runs` leaves no exact run (two calls of `Routine::NearestF32` in a stretch of
//! a block that may run again, `pass::exact_runs`); `legalize_warps:MODE` leaves
//! no warp exchange, only subgroup operations (native, split) or warp barriers and a
//! scratch (emulated); `reducible` leaves every
//! cycle single-entry; `loop_exits` leaves every loop one exit target; `structurize`
//! visits the original blocks in the same order as the input CFG under any branch
//! decisions (the interpreters of `ptxvk_lower::interp`); `predicate` leaves every
//! collective in block-uniform control flow, where the input had one in divergent flow;
//! `loop_guard` starts every loop body with a count of one iteration and its test, and
//! gives the kernel a system area; `shared_in_memory` leaves no shared access.
//!
//! And every pass keeps the kernel's results: the IR interpreter
//! ([`ptxvk_lower::interp::check`]) runs the kernel before and after each pass on
//! generated launches and compares global memory, the system status and failure details
//! and the printf records. A file whose
//! kernel cannot be run says why (`; semantics: none (WHY)`); every pass has a
//! `*_results.ir` file whose kernel stores what it computes, so that the comparison
//! says something ([`every_pass_is_checked_on_results`]). An input may be structured
//! IR (`body {`, [`ptxvk_lower::text::parse_structured`]), for the passes after
//! `structurize`.

use std::path::{Path, PathBuf};

use ptxvk_lower::interp::check::Program;
use ptxvk_lower::interp::{self, run_cfg, run_structured};
use ptxvk_lower::ir::Node;
use ptxvk_lower::ir::{
    AtomicOp, BinaryOp, Inst, InstKind, Kernel, RegTy, Routine, Space, SyncPoint, SystemInst,
    Terminator, Value, WarpMode,
};
use ptxvk_lower::pass::{
    check, emulate, exact_runs, expand_copies, expand_data_addresses, expand_formats,
    expand_generic, expand_indirect_calls, expand_integer, expand_isspace, expand_matrix,
    expand_mbarrier, expand_runtime, expand_special, expand_stack, expand_strong, expand_system,
    expand_texture, expand_vector_atomics, expand_video, expand_warp, float_modifiers,
    hoist_params, infer_spaces, inline, layout_memory, legalize_atomics, legalize_floats,
    legalize_memory, legalize_warps, loop_exits, loop_guard, predicate, reducible, retry_regions,
    schedule, shared_in_memory, soft_f64, split_grid, structurize, thread_ends, thread_registers,
    warp_trees, widen_generic, LoopGuard, Target,
};
use ptxvk_lower::{cfg, text, uniformity, verify};

#[path = "../../tests/common/snapshot.rs"]
mod snapshot;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/passes")
}

/// The IR between passes: a CFG, or a CFG with its structured tree.
struct State {
    kernel: Kernel,
    body: Option<Vec<Node>>,
}

fn messages(d: &[ptxvk_frontend::Diagnostic]) -> String {
    d.iter().map(|d| d.message.as_str()).collect::<Vec<_>>().join("; ")
}

/// Whether every cycle of the CFG has one entry block (a back edge's target dominates
/// its source, for every retreating edge of a depth-first search).
fn reducible_cfg(k: &Kernel) -> bool {
    let c = cfg::Cfg::new(k);
    c.retreating_edges().iter().all(|&(from, to)| c.dominates(to, from))
}

/// Whether every natural loop's exits (ignoring jumps to empty `ret` blocks) go to one
/// block.
fn single_exit_loops(k: &Kernel) -> bool {
    let c = cfg::Cfg::new(k);
    c.loops().values().all(|body| {
        let mut exits: Vec<usize> = body
            .iter()
            .flat_map(|&b| k.blocks[b].term.successors())
            .map(|t| t.index())
            .filter(|t| body.binary_search(t).is_err() && !cfg::is_plain_return(k, *t))
            .collect();
        exits.sort_unstable();
        exits.dedup();
        exits.len() <= 1
    })
}

fn count(k: &Kernel, f: impl Fn(&InstKind) -> bool) -> usize {
    k.blocks.iter().flat_map(|b| &b.insts).filter(|i| f(&i.kind)).count()
}

/// Runs a legalization whose contract is that the input has something of `what` and
/// the output nothing.
fn legalizes(
    k: &mut Kernel,
    what: &str,
    is: impl Fn(&Kernel, &InstKind) -> bool,
    pass: impl FnOnce(&mut Kernel, &Target) -> Result<(), ptxvk_frontend::Diagnostic>,
) -> Result<(), String> {
    let left = |k: &Kernel| count(k, |i| is(k, i));
    if left(k) == 0 {
        return Err(format!("the input has no {what}"));
    }
    pass(k, &Target::default()).map_err(|d| d.message)?;
    match left(k) {
        0 => Ok(()),
        n => Err(format!("{n} of {what} left")),
    }
}

/// [`legalizes`] for a pass over the kernel and its functions, of whose work `left`
/// counts what is left (in all of them).
fn in_bodies(
    k: &mut Kernel,
    what: &str,
    left: impl Fn(&Kernel) -> usize,
    pass: impl FnOnce(&mut Kernel) -> Result<(), String>,
) -> Result<(), String> {
    if left(k) == 0 {
        return Err(format!("the input has no {what}"));
    }
    pass(k)?;
    match left(k) {
        0 => Ok(()),
        n => Err(format!("{n} of {what} left")),
    }
}

/// `emulate` for a device without f64: no operation it emulates is left, and no f64
/// register in the routines it adds (`soft_f64` made their f64 arithmetic integer code).
fn emulate_without_f64(k: &mut Kernel) -> Result<(), String> {
    let left = |k: &Kernel| count(k, |i| emulate::emulated(i).is_some());
    if left(k) == 0 {
        return Err("the input has nothing to emulate".into());
    }
    emulate::run(k, &Target::portable()).map_err(|d| d.message)?;
    let f64_regs = k.functions.iter().flat_map(|f| &f.regs).filter(|r| r.ty == RegTy::Float(64));
    match (left(k), f64_regs.count()) {
        (0, 0) => Ok(()),
        (n, r) => Err(format!("{n} emulated operations and {r} f64 registers left")),
    }
}

/// A pass that cannot fail, as [`legalizes`] takes it.
fn infallible(
    run: fn(&mut Kernel),
) -> impl FnOnce(&mut Kernel, &Target) -> Result<(), ptxvk_frontend::Diagnostic> {
    move |k, _| {
        run(k);
        Ok(())
    }
}

/// Runs `pass`, checking its contract. Returns what went wrong.
fn run_pass(pass: &str, s: &mut State) -> Result<(), String> {
    match pass {
        "reducible" | "loop_exits" | "structurize" | "predicate" | "loop_guard" => {
            run_control_pass(pass, s)?
        }
        "check" | "check:racecheck" | "check:initcheck" => run_check(pass, s)?,
        "shared_in_memory" | "hoist_params" => run_instrumentation(pass, s)?,
        "inline" => run_inline(s)?,
        "expand_special" => run_operand_pass(pass, s)?,
        "thread_registers" | "thread_ends" | "expand_indirect_calls" | "expand_data_addresses" => {
            run_call_pass(pass, s)?
        }
        "expand_strong" => run_expand_strong(&mut s.kernel)?,
        "retry_regions" | "exact_runs" => run_grouping(pass, s)?,
        sched if sched.starts_with("schedule") => run_instrumentation(pass, s)?,
        _ => run_legalization(pass, s)?,
    }
    verify::run(&s.kernel).map_err(|d| messages(&d))
}

/// A pass that groups a block's calls of the fast paths (`retry_regions`, `exact_runs`),
/// checking its contract: the input has a group for it, and none is left after it.
fn run_grouping(pass: &str, s: &mut State) -> Result<(), String> {
    type Count = fn(&Kernel) -> usize;
    let (count, run): (Count, fn(&mut Kernel)) = match pass {
        "retry_regions" => (retry_regions::count, retry_regions::run),
        _ => (exact_runs::count, exact_runs::run),
    };
    if count(&s.kernel) == 0 {
        return Err(format!("the input has nothing {pass} groups"));
    }
    run(&mut s.kernel);
    match count(&s.kernel) {
        0 => Ok(()),
        n => Err(format!("{n} groups left after {pass}")),
    }
}

/// `expand_strong`, checking its contract: no strong access outside global and shared
/// memory (nor a vector one) is left, and every scalar one in them stays one atomic
/// (through a register of its width: PTX ISA 9.2 §8.4-8.6, a strong access is
/// single-copy atomic).
fn run_expand_strong(k: &mut Kernel) -> Result<(), String> {
    let atomics = |k: &Kernel| {
        let wide_window = k.shared.wide();
        count(k, |i| match *i {
            InstKind::Atomic { op: AtomicOp::Load | AtomicOp::Store, space, ty, .. } => {
                expand_strong::native(space, ty, wide_window)
            }
            _ => false,
        })
    };
    let before = atomics(k);
    legalizes(
        k,
        "a strong access without an atomic of its width",
        expand_strong::remains,
        infallible(expand_strong::run),
    )?;
    match atomics(k) {
        after if after == before => Ok(()),
        after => {
            Err(format!("{before} strong accesses with an atomic of their width, {after} after"))
        }
    }
}

/// The expansion of the derived special registers, checking its contract.
fn run_operand_pass(pass: &str, s: &mut State) -> Result<(), String> {
    match pass {
        "expand_special" => legalizes(
            &mut s.kernel,
            "a derived special register",
            |_, i| expand_special::is_derived_special(i),
            infallible(expand_special::run),
        )?,
        other => return Err(format!("unknown pass `{other}` at this point")),
    }
    Ok(())
}

/// The passes over the calls of the kernel and of its functions (on a CFG), checking
/// each one's contract.
fn run_call_pass(pass: &str, s: &mut State) -> Result<(), String> {
    match (pass, &s.body) {
        ("thread_registers", None) => in_bodies(
            &mut s.kernel,
            "thread register",
            |k| k.functions.iter().map(|f| f.thread_regs.len()).sum(),
            |k| thread_registers::run(k).map_err(|d| d.message),
        )?,
        ("thread_ends", None) => in_bodies(
            &mut s.kernel,
            "thread end",
            |k| k.all_insts().filter(|i| i.kind == InstKind::EndThread).count(),
            |k| {
                thread_ends::run(k);
                Ok(())
            },
        )?,
        ("expand_indirect_calls", None) => in_bodies(
            &mut s.kernel,
            "indirect call",
            |k| k.all_insts().filter(|i| expand_indirect_calls::is_indirect_call(&i.kind)).count(),
            |k| expand_indirect_calls::run(k).map_err(|d| d.message),
        )?,
        ("expand_data_addresses", None) => in_bodies(
            &mut s.kernel,
            "data address",
            |k| k.all_insts().filter(|i| expand_data_addresses::is_data_address(&i.kind)).count(),
            |k| {
                expand_data_addresses::run(k);
                Ok(())
            },
        )?,
        (other, _) => return Err(format!("unknown pass `{other}` at this point")),
    }
    Ok(())
}

/// The legalizations (CFG → CFG, or in the blocks of a tree), checking each one's
/// contract.
fn run_legalization(pass: &str, s: &mut State) -> Result<(), String> {
    match (pass, &mut s.body) {
        ("expand_matrix", None) => legalizes(
            &mut s.kernel,
            "a matrix instruction",
            |_, i| expand_matrix::is_matrix(i),
            |k, _| expand_matrix::run(k),
        )?,
        ("expand_warp", None) => legalizes(
            &mut s.kernel,
            "a warp collective",
            |_, i| expand_warp::is_collective(i),
            |k, _| expand_warp::run(k),
        )?,
        ("split_grid", None) => legalizes(
            &mut s.kernel,
            "a grid barrier",
            |_, i| matches!(i, InstKind::System(x) if **x == SystemInst::GridSync),
            infallible(split_grid::run),
        )?,
        ("expand_runtime", None) => legalizes(
            &mut s.kernel,
            "a call of a runtime function",
            |_, i| expand_runtime::is_runtime_call(i),
            |k, _| expand_runtime::run(k),
        )?,
        ("layout_memory", None) => legalizes(
            &mut s.kernel,
            "a variable address",
            |_, i| matches!(i, InstKind::VariableAddress(_)),
            infallible(layout_memory::run),
        )?,
        ("expand_stack", None) => legalizes(
            &mut s.kernel,
            "a stack operation",
            |_, i| expand_stack::is_stack(i),
            |k, _| expand_stack::run(k),
        )?,
        ("expand_system", None) => legalizes(
            &mut s.kernel,
            "a system call or device-side launch",
            |_, i| expand_system::is_system(i),
            |k, _| expand_system::run(k),
        )?,
        ("expand_copies", None) => legalizes(
            &mut s.kernel,
            "an asynchronous copy",
            |_, i| expand_copies::is_copy(i),
            |k, _| expand_copies::run(k),
        )?,
        // In the kernel and in its functions.
        ("infer_spaces", None) => legalizes(
            &mut s.kernel,
            "a `cvta`",
            |_, i| matches!(i, InstKind::Cvta { .. }),
            infallible(infer_spaces::run),
        )?,
        ("expand_vector_atomics", None) => legalizes(
            &mut s.kernel,
            "a vector atomic",
            |_, i| expand_vector_atomics::is_vector_atomic(i),
            infallible(expand_vector_atomics::run),
        )?,
        ("widen_generic", None) => legalizes(
            &mut s.kernel,
            "a generic access of a 32-bit address",
            widen_generic::is_narrow_generic,
            infallible(widen_generic::run),
        )?,
        ("expand_isspace", None) => legalizes(
            &mut s.kernel,
            "an `isspacep`",
            |_, i| matches!(i, InstKind::IsSpace(_)),
            infallible(expand_isspace::run),
        )?,
        ("expand_generic", None) => legalizes(
            &mut s.kernel,
            "a generic access",
            |_, i| expand_generic::is_generic(i),
            |k, _| expand_generic::run(k),
        )?,
        ("expand_mbarrier", None) => legalizes(
            &mut s.kernel,
            "an mbarrier instruction",
            |_, i| expand_mbarrier::is_mbarrier(i),
            |k, _| expand_mbarrier::run(k),
        )?,
        ("expand_texture", None) => legalizes(
            &mut s.kernel,
            "a texture or surface instruction",
            |_, i| expand_texture::is_texture(i),
            |k, _| expand_texture::run(k),
        )?,
        ("legalize_atomics", None) => legalizes(
            &mut s.kernel,
            "an atomic that needs a loop",
            legalize_atomics::needs_loop,
            legalize_atomics::run,
        )?,
        // It rewrites instructions inside blocks, so it also runs on structured IR.
        ("legalize_memory", _) => legalizes(
            &mut s.kernel,
            "a window access that is not one word",
            legalize_memory::is_partial_access,
            legalize_memory::run,
        )?,
        // On a device with 8- and 16-bit integers: a window of typed elements, no atomics.
        ("legalize_memory:typed", _) => {
            let k = &mut s.kernel;
            let target = Target { int8: true, int16: true, ..Target::default() };
            legalize_memory::run(k, &target).map_err(|d| d.message)?;
            if k.shared.word.bits() >= 32 {
                return Err("the shared window kept its 32-bit words".into());
            }
            let k = &*k;
            let left = count(k, |i| legalize_memory::is_partial_access(k, i));
            let atomics = count(k, |i| matches!(i, InstKind::Atomic { .. }));
            if left + atomics != 0 {
                return Err(format!("{left} partial accesses and {atomics} atomics left"));
            }
        }
        ("expand_formats", None) => legalizes(
            &mut s.kernel,
            "half arithmetic",
            |k, i| expand_formats::is_half(i) || expand_formats::is_widened_convert(k, i),
            infallible(expand_formats::run),
        )?,
        ("expand_integer", None) => legalizes(
            &mut s.kernel,
            "an integer operation",
            |_, i| expand_integer::is_integer(i),
            infallible(expand_integer::run),
        )?,
        ("expand_video", None) => legalizes(
            &mut s.kernel,
            "a video instruction",
            |_, i| expand_video::is_video(i),
            infallible(expand_video::run),
        )?,
        ("emulate", None) => legalizes(
            &mut s.kernel,
            "f64 arithmetic on an exact path",
            |_, i| emulate::emulated(i).is_some(),
            emulate::run,
        )?,
        // For a device without f64: the `.approx` routines' f64 arithmetic made integer code.
        ("emulate:no_f64", None) => emulate_without_f64(&mut s.kernel)?,
        ("soft_f64", None) => legalizes(
            &mut s.kernel,
            "an f64 operation but fma, div and sqrt",
            |_, i| soft_f64::touches_f64(i),
            |k, _| soft_f64::run(k),
        )?,
        ("float_modifiers", None) => legalizes(
            &mut s.kernel,
            "a `.ftz` or `.sat` on arithmetic",
            |_, i| float_modifiers::remains(i),
            infallible(float_modifiers::run),
        )?,
        ("legalize_floats", None) => legalizes(
            &mut s.kernel,
            "directed rounding",
            |_, i| legalize_floats::is_directed(i),
            legalize_floats::run,
        )?,
        // For a device without f64: no directed rounding and nothing that needs f64.
        ("legalize_floats:no_f64", None) => {
            let k = &mut s.kernel;
            let needs = |k: &Kernel| {
                count(k, |i| legalize_floats::is_directed(i) || legalize_floats::needs_f64(i))
            };
            if needs(k) == 0 {
                return Err("the input has nothing that needs f64".into());
            }
            legalize_floats::run(k, &Target::portable()).map_err(|d| d.message)?;
            if needs(k) != 0 {
                return Err(format!("{} instructions still need f64", needs(k)));
            }
        }
        (trees, None) if trees.starts_with("warp_trees:") => run_warp_trees(trees, s)?,
        (warps, None) if warps.starts_with("legalize_warps:") => run_legalize_warps(warps, s)?,
        (other, _) => return Err(format!("unknown pass `{other}` at this point")),
    }
    Ok(())
}

/// `warp_trees:S` on subgroups of S lanes; `warp_trees:S:none` expects no tree to qualify.
fn run_warp_trees(trees: &str, s: &mut State) -> Result<(), String> {
    let spec: Vec<&str> = trees["warp_trees:".len()..].split(':').collect();
    let size = spec[0].parse().map_err(|_| format!("bad subgroup size in {trees}"))?;
    let target =
        Target { emulated_subgroup: Some(size), ..Target::with_warp_mode(WarpMode::Emulated) };
    let before = count(&s.kernel, |i| matches!(i, InstKind::Warp(_)));
    let trees = warp_trees::run(&mut s.kernel, &target);
    let after = count(&s.kernel, |i| matches!(i, InstKind::Warp(_)));
    match (spec.get(1), trees) {
        (Some(&"none"), 0) if after == before => {}
        (None, 1..) if after < before => {}
        _ => return Err(format!("{trees} trees, {before} shuffles before, {after} after")),
    }
    Ok(())
}

/// `legalize_warps:MODE`: no warp exchange is left, in the shape the mode asks for.
fn run_legalize_warps(warps: &str, s: &mut State) -> Result<(), String> {
    let mode = match &warps["legalize_warps:".len()..] {
        "native" => WarpMode::Native,
        "split" => WarpMode::Split,
        "emulated" => WarpMode::Emulated,
        other => return Err(format!("unknown warp mode `{other}`")),
    };
    let exchanges = count(&s.kernel, legalize_warps::is_exchange);
    if exchanges == 0 {
        return Err("the input has no warp exchange".into());
    }
    legalize_warps::run(&mut s.kernel, &Target::with_warp_mode(mode)).map_err(|d| d.message)?;
    if count(&s.kernel, legalize_warps::is_exchange) != 0 {
        return Err("an exchange is left".into());
    }
    let subgroup = count(&s.kernel, |i| matches!(i, InstKind::Subgroup { .. }));
    let barriers = count(&s.kernel, |i| matches!(i, InstKind::WarpBarrier { .. }));
    let emulated = mode == WarpMode::Emulated;
    if emulated != (barriers > 0) || emulated == (subgroup > 0) {
        return Err(format!("{subgroup} subgroup operations and {barriers} warp barriers"));
    }
    if emulated != s.kernel.warp_scratch.is_some() {
        return Err("the warp scratch is reserved exactly in emulated mode".into());
    }
    let split = count(&s.kernel, |i| matches!(i, InstKind::Subgroup { split: true, .. }));
    if (mode == WarpMode::Split) != (split > 0) {
        return Err("split subgroup operations exactly in split mode".into());
    }
    Ok(())
}

/// Inlining: the input has calls; none is left, nor any function.
fn run_inline(s: &mut State) -> Result<(), String> {
    let k = &mut s.kernel;
    let calls = |k: &Kernel| count(k, |kind| inline::is_call(k, kind));
    if calls(k) == 0 {
        return Err("the input has no call".into());
    }
    inline::run(k).map_err(|d| d.message)?;
    if calls(k) != 0 || k.functions.iter().any(|f| f.routine.is_none()) {
        return Err(format!("{} calls and {} functions left", calls(k), k.functions.len()));
    }
    Ok(())
}

/// The passes that move or add to the program's own instructions (hoisted parameters,
/// the scheduler, shared memory in device memory), checking their contracts.
fn run_instrumentation(pass: &str, s: &mut State) -> Result<(), String> {
    match (pass, &mut s.body) {
        // On a device with Vulkan's least shared memory: the window moves to device
        // memory and no shared access is left.
        ("shared_in_memory", _) => {
            let k = &mut s.kernel;
            let target = Target { shared_memory_bytes: Some(16 * 1024), ..Target::default() };
            shared_in_memory::run(k, &target);
            let shared = count(k, |i| match i {
                InstKind::Load { space, .. }
                | InstKind::Store { space, .. }
                | InstKind::Atomic { space, .. } => *space == Space::Shared,
                _ => false,
            });
            if !k.shared.in_device_memory || shared != 0 {
                return Err(format!("{shared} shared accesses left in a window on chip"));
            }
        }
        ("hoist_params", None) => {
            let k = &mut s.kernel;
            let entry = k.entry.index();
            let outside = |k: &Kernel| {
                k.blocks
                    .iter()
                    .enumerate()
                    .filter(|(b, _)| *b != entry)
                    .flat_map(|(_, b)| &b.insts)
                    .filter(|i| hoist_params::is_param_load(&i.kind))
                    .count()
            };
            if outside(k) == 0 {
                return Err("the input has no parameter load outside the entry block".into());
            }
            hoist_params::run(k, &Target::default()).map_err(|d| d.message)?;
            if outside(k) != 0 {
                return Err(format!("{} parameter loads left outside the entry", outside(k)));
            }
        }
        // `:polls` when the input has a polling loop: then no block barrier and no
        // `return` is left inside the rounds, and every polling loop's back edge and
        // every wait is a wait site; else only the sync points go.
        (sched, None) if sched.starts_with("schedule") => {
            let polls = sched == "schedule:polls";
            let k = &mut s.kernel;
            let warp_points =
                count(k, |i| matches!(i, InstKind::SyncPoint { point: SyncPoint::Warp { .. } }));
            let barriers = count(k, |i| matches!(i, InstKind::Barrier));
            let blocks = k.blocks.len();
            // Pass files hold IR after expand_warp, whose collectives are gone: the
            // rounds keep the exchanges' barriers (`schedule::every_collective_synced`).
            schedule::run(k, WarpMode::Emulated, false).map_err(|d| d.message)?;
            if count(k, schedule::is_sync_point) != 0 {
                return Err("a sync point is left".into());
            }
            if !polls {
                if k.blocks.len() != blocks || !k.wait_sites.is_empty() {
                    return Err("a kernel that does not poll was scheduled".into());
                }
                return Ok(());
            }
            if count(k, |i| matches!(i, InstKind::Barrier)) != 0 {
                return Err("a block barrier is left in a scheduled kernel".into());
            }
            // One for each barrier and collective, and one at least for a back edge.
            if k.wait_sites.len() <= barriers + warp_points {
                return Err(format!("{} wait sites", k.wait_sites.len()));
            }
            // Every `return` is the rounds' end: none is reachable from the resume switch
            // without passing the top of the next round.
            let returns = (0..k.blocks.len())
                .filter(|&b| cfg::reachable(k)[b] && k.blocks[b].term == Terminator::Return)
                .count();
            if returns > 2 {
                return Err(format!("{returns} returning blocks (the end and the failure)"));
            }
        }
        (other, _) => return Err(format!("unknown pass `{other}` at this point")),
    }
    Ok(())
}

/// Checked launches' instrumentation (`check`, and with racecheck), checking that every
/// access of the program gets its test and site.
fn run_check(pass: &str, s: &mut State) -> Result<(), String> {
    match (pass, &mut s.body) {
        ("check", None) => {
            let k = &mut s.kernel;
            let is_access = |i: &InstKind| {
                matches!(
                    i,
                    InstKind::Load { .. } | InstKind::Store { .. } | InstKind::Atomic { .. }
                )
            };
            let accesses: Vec<_> = k
                .blocks
                .iter()
                .flat_map(|b| &b.insts)
                .filter(|i| is_access(&i.kind))
                .cloned()
                .collect();
            k.memory_instructions = accesses.iter().map(|i| i.span).collect();
            check::run(k, &Target { check: true, ..Target::default() });
            let k = &*k;
            let guarded = |b: usize| {
                let block = &k.blocks[b];
                let preds: Vec<&Terminator> = k
                    .blocks
                    .iter()
                    .map(|p| &p.term)
                    .filter(|t| t.successors().iter().any(|s| s.index() == b))
                    .collect();
                // Reached only where a test holds: from the test, or from the table's
                // search after a pointer parameter's allocation did not hold it.
                block.insts.len() == 1
                    && !preds.is_empty()
                    && preds.iter().all(|t| {
                        matches!(t, Terminator::Branch { negate: false, if_true, if_false, .. }
                            if if_true.index() == b && if_false.index() != b)
                    })
            };
            // A global access with a 64-bit base instead goes to an address chosen by
            // its test: its base is a select of the original base and the sink.
            let base_of = |i: &InstKind| match i {
                InstKind::Load { addr, .. }
                | InstKind::Store { addr, .. }
                | InstKind::Atomic { addr, .. } => addr.base,
                _ => None,
            };
            let redirected = |a: &Inst| {
                let Some(original) = base_of(&a.kind) else { return false };
                k.blocks.iter().flat_map(|b| &b.insts).any(|i| {
                    let chosen = base_of(&i.kind).filter(|_| i.span == a.span && i != a);
                    chosen.is_some_and(|t| {
                        k.blocks.iter().flat_map(|b| &b.insts).any(|d| {
                            matches!(d.kind, InstKind::Select { dst, a: Value::Reg(r), .. }
                                if dst == t && r == original)
                        })
                    })
                })
            };
            for a in &accesses {
                let place = k.blocks.iter().position(|b| b.insts.iter().any(|i| i == a));
                match place {
                    Some(b) if guarded(b) => {}
                    // Statically valid parameter reads need no test.
                    Some(_) if hoist_params::is_param_load(&a.kind) => {}
                    None if redirected(a) => {}
                    _ => return Err(format!("{:?} is not alone behind its test", a.kind)),
                }
            }
            if !k.system || k.check_sites.is_empty() {
                return Err("no system area or no check sites".into());
            }
        }
        // Racecheck: each plain shared access is tested against the shadow on its way
        // (the test's block or the race record's), atomics are not, and the epoch is
        // counted after every barrier.
        ("check:racecheck", None) => {
            let k = &mut s.kernel;
            let shared = |i: &Inst| match &i.kind {
                InstKind::Load { space, .. } | InstKind::Store { space, .. } => {
                    *space == Space::Shared
                }
                _ => false,
            };
            let plain: Vec<Inst> =
                k.blocks.iter().flat_map(|b| &b.insts).filter(|i| shared(i)).cloned().collect();
            let atomics = count(k, |i| matches!(i, InstKind::Atomic { space: Space::Shared, .. }));
            let barriers = count(k, |i| matches!(i, InstKind::Barrier));
            if plain.len() < 2 || atomics == 0 || barriers == 0 {
                return Err("the input needs shared loads, stores, an atomic and a barrier".into());
            }
            mark_accesses(k);
            check::run(k, &Target { check: true, racecheck: true, ..Target::default() });
            let k = &*k;
            let shadows = |b: usize| {
                k.blocks[b].insts.iter().any(|i| matches!(i.kind, InstKind::RaceShadow { .. }))
            };
            let preds = |b: usize| -> Vec<usize> {
                (0..k.blocks.len())
                    .filter(|&p| k.blocks[p].term.successors().iter().any(|s| s.index() == b))
                    .collect()
            };
            for a in &plain {
                let Some(b) = k.blocks.iter().position(|b| b.insts.iter().any(|i| i == a)) else {
                    return Err(format!("{:?} is gone", a.kind));
                };
                // From the race test, directly or through the record of a race.
                let tested = preds(b)
                    .iter()
                    .all(|&p| shadows(p) || (preds(p).len() == 1 && shadows(preds(p)[0])));
                if preds(b).is_empty() || !tested {
                    return Err(format!("{:?} is not behind its race test", a.kind));
                }
            }
            let swaps = count(k, |i| matches!(i, InstKind::RaceShadow { swap: Some(_), .. }));
            if swaps < 2 * plain.len() {
                return Err(format!("{swaps} shadow swaps for {} accesses", plain.len()));
            }
            // The epoch (one register) is written after each barrier.
            for b in &k.blocks {
                for (at, i) in b.insts.iter().enumerate() {
                    let next = b.insts.get(at + 1).map(|n| &n.kind);
                    if matches!(i.kind, InstKind::Barrier)
                        && !matches!(next, Some(InstKind::Binary { op: BinaryOp::Add, .. }))
                    {
                        return Err("a barrier without its epoch count".into());
                    }
                }
            }
        }
        // Initcheck: a global access not derived from a pointer parameter finds its
        // shadow word with a call of the allocation table's routine.
        ("check:initcheck", None) => {
            let k = &mut s.kernel;
            mark_accesses(k);
            let global = |i: &InstKind| {
                matches!(
                    i,
                    InstKind::Load { space: Space::Global, .. }
                        | InstKind::Store { space: Space::Global, .. }
                        | InstKind::Atomic { space: Space::Global, .. }
                )
            };
            let accesses = count(k, global);
            check::run(k, &Target { check: true, initcheck: true, ..Target::default() });
            let k = &*k;
            let Some(f) = k.functions.iter().position(|f| f.routine == Some(Routine::ShadowWord))
            else {
                return Err("no call of the shadow word's routine".into());
            };
            let calls =
                count(k, |i| matches!(i, InstKind::Call { callee, .. } if callee.index() == f));
            if calls == 0 || calls > accesses {
                return Err(format!("{calls} shadow word calls for {accesses} global accesses"));
            }
        }
        (other, _) => return Err(format!("unknown pass `{other}` at this point")),
    }
    Ok(())
}

/// Marks every load, store and atomic of `k` as the program's own
/// ([`Kernel::memory_instructions`]), the accesses `check` instruments.
fn mark_accesses(k: &mut Kernel) {
    k.memory_instructions = k
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter(|i| {
            matches!(
                i.kind,
                InstKind::Load { .. } | InstKind::Store { .. } | InstKind::Atomic { .. }
            )
        })
        .map(|i| i.span)
        .collect();
}

/// The passes that shape control flow (the structurizer and its CFG passes, and the
/// tree passes after it), checking each one's contract.
fn run_control_pass(pass: &str, s: &mut State) -> Result<(), String> {
    match (pass, &mut s.body) {
        ("reducible", None) => {
            reducible::run(&mut s.kernel);
            if !reducible_cfg(&s.kernel) {
                return Err("a cycle still has several entries".into());
            }
        }
        ("loop_exits", None) => {
            loop_exits::run(&mut s.kernel);
            if !single_exit_loops(&s.kernel) {
                return Err("a loop still has several exit targets".into());
            }
        }
        ("structurize", None) => {
            let original = s.kernel.clone();
            let body = structurize::run(&mut s.kernel).map_err(|d| d.message)?;
            let terms: Vec<Terminator> = original.blocks.iter().map(|b| b.term.clone()).collect();
            for seed in 0..16u64 {
                let decide = move |b: usize, visit: u32| {
                    (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ((b as u64) << 17) ^ visit as u64)
                        .wrapping_mul(0xbf58_476d_1ce4_e5b9)
                        >> 29
                };
                let want = run_cfg(&original, &decide, 100);
                let got = run_structured(&s.kernel, &terms, &body, &decide, 100)?;
                if got != want {
                    return Err(format!("decisions {seed}: CFG path {want:?}, structured {got:?}"));
                }
            }
            verify::structured(&s.kernel, &body).map_err(|d| messages(&d))?;
            s.body = Some(body);
        }
        ("predicate", Some(body)) => {
            if uniformity::check(&s.kernel, body).is_ok() {
                return Err("the input has no divergent collective to predicate".into());
            }
            let out = predicate::run(&mut s.kernel, std::mem::take(body)).map_err(|d| d.message)?;
            uniformity::check(&s.kernel, &out).map_err(|d| messages(&d))?;
            verify::structured(&s.kernel, &out).map_err(|d| messages(&d))?;
            *body = out;
        }
        ("loop_guard", Some(body)) => {
            fn loops(nodes: &[Node], out: &mut Vec<Vec<Node>>) {
                for n in nodes {
                    match n {
                        Node::Loop { body, .. } => {
                            out.push(body.clone());
                            loops(body, out);
                        }
                        Node::If { then, otherwise, .. } => {
                            loops(then, out);
                            loops(otherwise, out);
                        }
                        Node::Switch { cases, .. } => {
                            cases.iter().for_each(|c| loops(&c.body, out))
                        }
                        _ => {}
                    }
                }
            }
            let mut before = Vec::new();
            loops(body, &mut before);
            if before.is_empty() {
                return Err("the input has no loop".into());
            }
            let guard = LoopGuard { limit: 1000, subgroups: 4 };
            let out = loop_guard::run(&mut s.kernel, std::mem::take(body), &guard);
            verify::structured(&s.kernel, &out).map_err(|d| messages(&d))?;
            let mut after = Vec::new();
            loops(&out, &mut after);
            let k = &s.kernel;
            let counted = |body: &Vec<Node>| match (body.first(), body.get(1)) {
                (Some(Node::Code(b)), Some(Node::If { then, .. })) => {
                    matches!(
                        k.blocks[b.index()].insts.first().map(|i| &i.kind),
                        Some(InstKind::LoopCount { add: 1, .. })
                    ) && matches!(then.last(), Some(Node::Return))
                }
                _ => false,
            };
            if after.len() != before.len() || !after.iter().all(counted) {
                return Err("a loop does not start with its count and test".into());
            }
            if !k.system || k.guarded_loops.len() < before.len() {
                return Err("no system area, or a loop without a site".into());
            }
            *body = out;
        }
        (other, _) => return Err(format!("unknown pass `{other}` at this point")),
    }
    Ok(())
}

/// Launches each pass is checked on.
const LAUNCHES: usize = 8;

/// Compares the results of the kernel before and after a pass through the
/// interpreter ([`ptxvk_lower::interp::check`]) on generated launches. Returns how many
/// launches were compared and how many of those left results; a launch the
/// interpreter cannot judge is skipped.
fn same_results(name: &str, before: &State, after: &State) -> Result<(usize, usize), String> {
    fn program(s: &State) -> Program<'_> {
        Program { kernel: &s.kernel, body: s.body.as_deref() }
    }
    let seed = name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let tally = interp::check::check(program(before), program(after), seed, LAUNCHES)?;
    if std::env::var_os("PTXVK_SHOW_SKIPS").is_some() && !tally.skipped.is_empty() {
        eprintln!("{name}: {} skipped: {}", tally.skipped.len(), tally.skipped[0]);
    }
    Ok((tally.same, tally.observed))
}

/// What one pass file's test found: failures, or the passes checked with results.
type Checked = Result<Vec<String>, String>;

fn check(path: &Path) -> Checked {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string();
    let input = std::fs::read_to_string(path).expect("reading the case");
    let Some(passes) = input.lines().next().and_then(|l| l.strip_prefix("; passes:")) else {
        return Err(format!("{name}: the first line must be `; passes: NAME ...`"));
    };
    // The input is a CFG, or a structured kernel (`body {`), which the passes after
    // `structurize` take.
    let parsed = if input.lines().any(|l| l.trim() == "body {") {
        text::parse_structured(&input).map(|ks| ks.into_iter().map(|(k, b)| (k, Some(b))).collect())
    } else {
        text::parse(&input).map(|ks| ks.into_iter().map(|k| (k, None)).collect::<Vec<_>>())
    };
    let (kernel, body) = match parsed {
        Ok(mut ks) if ks.len() == 1 => ks.remove(0),
        Ok(ks) => return Err(format!("{name}: {} kernels, expected one", ks.len())),
        Err(d) => {
            let line = input[..d.span.start as usize].lines().count();
            return Err(format!("{name}:{line}: {}", d.message));
        }
    };
    if let Err(d) = verify::run(&kernel) {
        return Err(format!("{name}: the input does not verify: {}", messages(&d)));
    }
    let mut state = State { kernel, body };
    let (mut compared, mut observed) = (0, Vec::new());
    for pass in passes.split_whitespace() {
        let before = State { kernel: state.kernel.clone(), body: state.body.clone() };
        if let Err(e) = run_pass(pass, &mut state) {
            return Err(format!("{name}: {pass}: {e}"));
        }
        match same_results(&name, &before, &state) {
            Ok((n, seen)) => {
                compared += n;
                if seen > 0 {
                    observed.push(pass.to_string());
                }
            }
            Err(e) => return Err(format!("{name}: {pass}: the results changed: {e}")),
        }
    }
    // Unless the file says why not (`; semantics: none (WHY)`), its kernel ran in the
    // interpreter.
    let excused = input.lines().any(|l| l.starts_with("; semantics: none"));
    if compared == 0 && !excused {
        return Err(format!("{name}: no launch was compared through the interpreter"));
    }
    let out = match &state.body {
        Some(body) => text::print_structured(&state.kernel, body),
        None => text::print(&state.kernel),
    };
    let expected = path.with_extension("out");
    match snapshot::check(&expected, &format!("tests/passes/{name}"), &out) {
        Some(e) => Err(e),
        None => Ok(observed),
    }
}

/// The pass files, in name order.
fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/passes exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ir"))
        .collect();
    cases.sort();
    cases
}

#[test]
fn pass_files() {
    let cases = cases();
    assert!(cases.len() >= 6, "only {} pass file tests", cases.len());
    let results: Vec<Checked> = cases.iter().map(|c| check(c)).collect();
    let failures: Vec<String> = results.iter().filter_map(|r| r.clone().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} pass file tests failed:\n\n{}\n\nIf the new output is intended, rerun with \
         BLESS=1 and review the diff.",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Every pass of `pass::run` (and each variant the files name) is checked through the
/// interpreter by some pass file whose kernel leaves results, so that the comparison
/// means something.
#[test]
fn every_pass_is_checked_on_results() {
    let cases = cases();
    let observed: Vec<String> = cases.iter().filter_map(|c| check(c).ok()).flatten().collect();
    let passes = [
        "expand_data_addresses",
        "thread_registers",
        "expand_strong",
        "expand_vector_atomics",
        "layout_memory",
        "widen_generic",
        "infer_spaces",
        "thread_ends",
        "expand_indirect_calls",
        "inline",
        "expand_special",
        "expand_stack",
        "expand_runtime",
        "expand_generic",
        "expand_video",
        "expand_integer",
        "expand_formats",
        "expand_texture",
        "expand_matrix",
        "expand_copies",
        "expand_mbarrier",
        "warp_trees:8",
        "expand_warp",
        "expand_system",
        "check",
        "check:racecheck",
        "check:initcheck",
        "hoist_params",
        "schedule",
        "schedule:polls",
        "legalize_atomics",
        "legalize_floats",
        "legalize_floats:no_f64",
        "float_modifiers",
        "emulate",
        "emulate:no_f64",
        "retry_regions",
        "exact_runs",
        "soft_f64",
        "legalize_warps:native",
        "legalize_warps:split",
        "legalize_warps:emulated",
        "reducible",
        "loop_exits",
        "structurize",
        "predicate",
        "loop_guard",
        "shared_in_memory",
        "legalize_memory",
        "legalize_memory:typed",
    ];
    let missing: Vec<&str> =
        passes.iter().copied().filter(|p| !observed.iter().any(|o| o == p)).collect();
    assert!(missing.is_empty(), "passes never checked on results: {missing:?}");
}

/// The structured snapshots parse back to themselves ([`text::parse_structured`]).
#[test]
fn structured_snapshots_round_trip() {
    let mut checked = 0;
    for entry in std::fs::read_dir(dir()).expect("tests/passes exists") {
        let path = entry.expect("readable directory entry").path();
        let text = std::fs::read_to_string(&path).expect("reading a snapshot");
        if path.extension().is_none_or(|e| e != "out") || !text.contains("\nbody {\n") {
            continue;
        }
        let parsed = text::parse_structured(&text).unwrap_or_else(|d| {
            let line = text[..d.span.start as usize].lines().count();
            panic!("{}:{line}: {}", path.display(), d.message)
        });
        let again: String = parsed.iter().map(|(k, b)| text::print_structured(k, b)).collect();
        assert_eq!(again, text, "{} does not print back the same", path.display());
        for (k, b) in &parsed {
            verify::structured(k, b).unwrap_or_else(|d| panic!("{}: {d:?}", path.display()));
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} structured snapshots");
}
