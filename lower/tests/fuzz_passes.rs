//! The fuzz target of the passes: random computing kernels
//! ([`ptxvk_lower::random_cfg::program`]: random control flow, integer and float
//! arithmetic in every rounding, memory of every space, atomics, warp exchanges) go
//! through every pass ([`ptxvk_lower::pass::run`]) for each warp mode, with and
//! without f64, and the interpreter ([`ptxvk_lower::interp`]) checks that the lowered
//! kernel computes what the kernel from semantic analysis computes, on generated
//! launches; and so does the kernel with some of its blocks moved into functions it
//! calls ([`ptxvk_lower::random_cfg::outline`]), through `pass::inline` and the rest,
//! which checks the interpreter's calls too; and so does the kernel with some blocks
//! called through function addresses ([`ptxvk_lower::random_cfg::outline_indirect`]:
//! `CallIndirect`s with arms that hit, miss, share an address or end the thread),
//! through `pass::expand_indirect_calls`, `pass::inline` and the rest.
//!
//! `PTXVK_FUZZ_CASES=N` runs N programs instead of the default 256, and
//! `PROPTEST_RNG_SEED=S` other ones than the default's (a failure names its program's
//! seed and prints the program).

use proptest::prelude::*;

use ptxvk_lower::interp::check::{check, Program, Tally};
use ptxvk_lower::ir::WarpMode;
use ptxvk_lower::pass::{self, Target};
use ptxvk_lower::random_cfg::{outline, outline_indirect, program};
use ptxvk_lower::text;

/// The targets each program is lowered for: every warp mode, and a device without f64.
fn targets() -> Vec<(String, Target)> {
    let mut out = Vec::new();
    for mode in [WarpMode::Native, WarpMode::Split, WarpMode::Emulated] {
        out.push((mode.name().to_string(), Target::with_warp_mode(mode)));
    }
    out.push(("portable".into(), Target::portable()));
    out
}

/// Lowers program `seed` for every target and compares it with the original on two
/// launches each; returns what was compared, or the first difference.
fn check_program(seed: u64) -> Result<Tally, String> {
    let blocks = 3 + (seed % 8) as usize;
    let k = program(seed, blocks);
    let mut total = Tally::default();
    for (name, target) in targets() {
        let lowered = pass::run(k.clone(), &target).map_err(|d| {
            let msg: Vec<_> = d.iter().map(|d| d.message.clone()).collect();
            format!("seed {seed} ({name}): the passes fail: {msg:?}\n{}", text::print(&k))
        })?;
        let after = Program { kernel: &lowered.kernel, body: Some(&lowered.body) };
        let t = check(Program::cfg(&k), after, seed, 2).map_err(|e| {
            let lowered = text::print_structured(&lowered.kernel, &lowered.body);
            format!("seed {seed} ({name}): {e}\n{}\nafter:\n{lowered}", text::print(&k))
        })?;
        total.same += t.same;
        total.observed += t.observed;
        total.skipped.extend(t.skipped.into_iter().map(|w| format!("seed {seed} ({name}): {w}")));
    }
    // Its blocks moved into functions it calls: inlined and lowered, it computes the same.
    let outlined = outline(&k, seed);
    let lowered = pass::run(outlined.clone(), &Target::default()).map_err(|d| {
        let msg: Vec<_> = d.iter().map(|d| d.message.clone()).collect();
        format!("seed {seed} (outlined): the passes fail: {msg:?}\n{}", text::print(&outlined))
    })?;
    let after = Program { kernel: &lowered.kernel, body: Some(&lowered.body) };
    for before in [Program::cfg(&k), Program::cfg(&outlined)] {
        check(before, after, seed, 1)
            .map_err(|e| format!("seed {seed} (outlined): {e}\n{}", text::print(&outlined)))?;
    }
    // Some blocks called through function addresses: written out, inlined and
    // lowered, it computes what the interpreter's indirect calls compute.
    let indirect = outline_indirect(&k, seed, blocks);
    let lowered = pass::run(indirect.clone(), &Target::default()).map_err(|d| {
        let msg: Vec<_> = d.iter().map(|d| d.message.clone()).collect();
        format!("seed {seed} (indirect): the passes fail: {msg:?}\n{}", text::print(&indirect))
    })?;
    let after = Program { kernel: &lowered.kernel, body: Some(&lowered.body) };
    check(Program::cfg(&indirect), after, seed, 1)
        .map_err(|e| format!("seed {seed} (indirect): {e}\n{}", text::print(&indirect)))?;
    Ok(total)
}

fn rng_seed() -> u64 {
    std::env::var("PROPTEST_RNG_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed)
}

fn cases() -> u32 {
    std::env::var("PTXVK_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

proptest! {
    // The same seeds every run unless PROPTEST_RNG_SEED says otherwise.
    #![proptest_config(ProptestConfig {
        cases: cases(),
        rng_seed: proptest::test_runner::RngSeed::Fixed(rng_seed()),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_programs_compute_the_same_after_every_pass(seed in any::<u64>()) {
        let result = check_program(seed);
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
    }
}

/// The interpreter judges nearly every random program: few are skipped, and every one
/// compared stores results.
#[test]
fn nearly_every_random_program_is_compared() {
    let mut total = Tally::default();
    for seed in 0..100 {
        let t = check_program(seed).unwrap_or_else(|e| panic!("{e}"));
        total.same += t.same;
        total.observed += t.observed;
        total.skipped.extend(t.skipped);
    }
    let skipped = total.skipped.len();
    assert!(total.same >= 700, "{} compared, {skipped} skipped", total.same);
    assert!(skipped * 20 <= total.same, "{skipped} skipped: {:?}", total.skipped);
    assert_eq!(total.observed, total.same, "every program stores its results");
}

/// Outlining makes calls, nested ones among them, that the interpreter runs.
#[test]
fn outlined_programs_call_and_are_compared() {
    let (mut functions, mut nested, mut observed) = (0, 0, 0);
    for seed in 0..40 {
        let k = program(seed, 3 + (seed % 8) as usize);
        let outlined = outline(&k, seed);
        functions += outlined.functions.len();
        let calls_inside = |f: &ptxvk_lower::ir::Function| {
            let insts = f.blocks.iter().flat_map(|b| &b.insts);
            insts.filter(|i| matches!(i.kind, ptxvk_lower::ir::InstKind::Call { .. })).count()
        };
        nested += outlined.functions.iter().map(calls_inside).sum::<usize>();
        let t = check(Program::cfg(&k), Program::cfg(&outlined), seed, 1)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        observed += t.observed;
    }
    assert!(functions >= 40 && nested >= 10, "{functions} functions, {nested} nested calls");
    assert!(observed >= 30, "{observed} compared with results");
}

/// Indirect calls are made, with arms that end the thread and arms at a taken address
/// among them, and the interpreter compares their results.
#[test]
fn indirect_calls_are_made_and_compared() {
    use ptxvk_lower::ir::InstKind;
    let (mut calls, mut arms, mut ending, mut shared, mut observed) = (0, 0, 0, 0, 0);
    for seed in 0..40 {
        let blocks = 3 + (seed % 8) as usize;
        let k = outline_indirect(&program(seed, blocks), seed, blocks);
        for inst in k.all_insts() {
            let InstKind::CallIndirect { arms: here, .. } = &inst.kind else { continue };
            calls += 1;
            arms += here.len();
            ending += here
                .iter()
                .filter(|a| k.functions[a.callee.index()].name.ends_with("_end"))
                .count();
            let mut addresses: Vec<_> = here.iter().map(|a| a.address).collect();
            addresses.sort_unstable();
            addresses.dedup();
            shared += usize::from(addresses.len() < here.len());
        }
        let lowered = pass::run(k.clone(), &Target::default()).unwrap_or_else(|d| panic!("{d:?}"));
        let after = Program { kernel: &lowered.kernel, body: Some(&lowered.body) };
        let t =
            check(Program::cfg(&k), after, seed, 1).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        observed += t.observed;
    }
    eprintln!("{calls} indirect calls, {arms} arms, {ending} ending, {shared} with a taken address, {observed} compared");
    assert!(
        calls >= 40 && ending >= 10 && shared >= 10,
        "{calls} calls, {ending} ending, {shared} shared"
    );
    assert!(observed >= 30, "{observed} compared with results");
}

/// The random programs reach the passes that group fast paths: lowered with f64, some
/// kernels call `Routine::FastF64` from their own blocks (a retry region,
/// `pass::retry_regions`) and some `Routine::FastF32` (an exact run, `pass::exact_runs`);
/// elsewhere only `NearestF64` and `NearestF32` call them. The programs that have them
/// are compared like the others ([`nearly_every_random_program_is_compared`]).
#[test]
fn random_programs_have_retry_regions_and_exact_runs() {
    use ptxvk_lower::ir::{InstKind, Routine};
    let (mut regions, mut runs) = (0, 0);
    for seed in 0..100 {
        let k = program(seed, 3 + (seed % 8) as usize);
        let lowered = pass::run(k, &Target::default()).unwrap_or_else(|d| panic!("{d:?}"));
        let k = &lowered.kernel;
        let calls = |wanted: fn(Routine) -> bool| {
            k.blocks.iter().flat_map(|b| &b.insts).any(|i| match &i.kind {
                InstKind::Call { callee, .. } => {
                    k.functions[callee.index()].routine.is_some_and(wanted)
                }
                _ => false,
            })
        };
        regions += usize::from(calls(|r| matches!(r, Routine::FastF64(_))));
        runs += usize::from(calls(|r| matches!(r, Routine::FastF32(_))));
    }
    eprintln!("{regions} of 100 programs with retry regions, {runs} with exact runs");
    assert!(regions >= 5 && runs >= 5, "{regions} programs with retry regions, {runs} with runs");
}
