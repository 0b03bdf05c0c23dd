//! Hand-written control-flow kernels (`tests/ptx/control/*.ptx`, each checked with
//! NVIDIA's `ptxas -arch=sm_80`) for every control-flow shape the structurizer
//! (`lower/src/structurize.rs`) must handle: if/else chains, predicated instructions and
//! returns, every loop shape, nested loops with `continue`/`break`, early returns from
//! loops, multi-level `continue`/`break`, loops with several exits, `goto found`, an
//! irreducible cycle, `brx.idx` jump tables, unreachable code, and `bar.sync` in a
//! uniform loop with divergent arms and after an arm that can return. Each runs on the default Vulkan device through
//! the Rust API (SPIR-V validated by spirv-val) and through `ptxvk run --spec`, and
//! must match a CPU reference that follows the PTX's control flow step by step. Each
//! one's `--emit structured` output must show the expected loops and ifs.
//!
//! The shapes the structurizer rejects (an irreducible cycle, a loop with two exits that
//! continue the kernel) must fail `ptxvk compile` with exit code 1 and a located
//! diagnostic, never a panic.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::cases::{buf, val};
use common::*;
use ptxvk::spec::ElemType;

/// What every output element holds before the kernel runs; a thread that must not
/// store leaves it in place.
const SENTINEL: u32 = 0xdead_beef;
const BLOCK: u32 = 64;

fn ptx(name: &str) -> PathBuf {
    repo().join("tests").join("ptx").join("control").join(format!("{name}.ptx"))
}

fn ptxvk_compile(name: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .arg("compile")
        .arg(format!("tests/ptx/control/{name}.ptx"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run ptxvk")
}

// ----- the structured form ------------------------------------------------------------

/// The tree of `ptxvk compile NAME.ptx --emit structured`, condensed to one line:
/// instructions dropped, labelled blocks shown as their label and unlabelled ones as
/// `_`, so that `loop { $WHILE if %p2 { break } _ continue }` reads as the tree it is.
fn structured(name: &str) -> String {
    let out = ptxvk_compile(name, &["--emit", "structured"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name}: --emit structured failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let tree =
        ["if ", "}", "loop {", "switch ", "case ", "default:", "break", "continue", "return"];
    let mut words = Vec::new();
    let mut in_body = false;
    for line in stdout.lines() {
        let line = line.trim();
        if line == "body {" {
            in_body = true;
            continue;
        }
        if !in_body {
            continue;
        }
        // `block bb3 ($LABEL):`
        if let Some(b) = line.strip_prefix("block ") {
            let label = b.split_once('(').and_then(|(_, l)| l.split_once(')')).map(|(l, _)| l);
            words.push(label.filter(|l| l.starts_with('$')).unwrap_or("_"));
        } else if tree.iter().any(|t| line.starts_with(t)) {
            words.extend(line.split_whitespace());
        }
    }
    // The body's and the kernel's closing braces.
    words.truncate(words.len().saturating_sub(2));
    words.join(" ")
}

/// The structured form has exactly `loops` loops and contains every fragment
/// (`SHOW_STRUCTURE=1` prints the structured forms instead of checking them).
fn check_structure(name: &str, loops: usize, fragments: &[&str]) {
    let s = structured(name);
    if std::env::var_os("SHOW_STRUCTURE").is_some() {
        println!("STRUCTURE {name} loops={loops}: {s}");
        return;
    }
    let words: Vec<&str> = s.split(' ').collect();
    let found = words.windows(2).filter(|w| w == &["loop", "{"]).count();
    assert_eq!(found, loops, "{name}: loops in the structured form:\n{s}");
    for f in fragments {
        assert!(s.contains(f), "{name}: structured form lacks `{f}`:\n{s}");
    }
}

// ----- running a kernel ---------------------------------------------------------------

fn run_case(name: &str, case: &Case) {
    let Some(device) = device() else { return };
    let path = ptx(name);
    let (_, got) = run_api(&device, &path, name, case);
    check(&format!("{name} (Rust API)"), ElemType::U32, &got, &case.expected);
    let got = run_cli(&path, name, case);
    check(&format!("{name} (ptxvk run --spec)"), ElemType::U32, &got, &case.expected);
}

/// Inputs: hand-picked edge cases first, then random words of three magnitudes (full,
/// below 2048, below 64) so that every branch of the small-range tests is taken.
fn inputs(seed: u64, edges: &[u32]) -> Vec<u32> {
    const COMMON: [u32; 12] =
        [0, 1, 2, 3, 7, 10, 63, 64, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, u32::MAX];
    let mut rng = Rng(seed);
    let mut v: Vec<u32> = COMMON.iter().chain(edges).copied().collect();
    v.extend((0..600).map(|i| {
        let r = rng.next_u32();
        match i % 3 {
            0 => r,
            1 => r % 2048,
            _ => r % 64,
        }
    }));
    v
}

/// The CPU reference of one thread: its input, then its `out` and `aux` elements, which
/// hold SENTINEL on entry.
type Reference = fn(x: u32, out: &mut u32, aux: &mut u32);

/// A per-thread kernel `NAME(in, out, n)` (or `NAME(in, out, aux, n)`): thread i < n
/// reads in[i]. The grid has more threads than elements, so the bounds check is tested
/// too: elements from n on keep SENTINEL.
fn per_thread(name: &str, seed: u64, edges: &[u32], with_aux: bool, reference: Reference) {
    let input = inputs(seed, edges);
    let n = input.len();
    let threads = (n as u32 + 1).div_ceil(BLOCK) * BLOCK;
    let len = threads as usize;
    let mut out = vec![SENTINEL; len];
    let mut aux = vec![SENTINEL; len];
    for (i, &x) in input.iter().enumerate() {
        reference(x, &mut out[i], &mut aux[i]);
    }
    let mut padded = input.clone();
    padded.resize(len, 0);
    let mut args = vec![
        buf(ElemType::U32, u32_bytes(&padded)),
        buf(ElemType::U32, u32_bytes(&vec![SENTINEL; len])),
    ];
    let mut expected = vec![(1, u32_bytes(&out))];
    if with_aux {
        args.push(buf(ElemType::U32, u32_bytes(&vec![SENTINEL; len])));
        expected.push((2, u32_bytes(&aux)));
    }
    args.push(val(n as u32));
    let case = Case {
        grid: [threads / BLOCK, 1, 1],
        block: [BLOCK, 1, 1],
        shared_bytes: 0,
        args,
        expected,
    };
    run_case(name, &case);
}

// ----- 1. if/else chains ----------------------------------------------------------------

fn if_chain(x: u32, out: &mut u32, _: &mut u32) {
    let y = if x < 10 {
        x * 3
    } else if x < 100 {
        x + 7
    } else if x < 1000 {
        x ^ 85
    } else {
        x - 1000
    };
    *out = if y & 1 == 0 { y >> 1 } else { y.wrapping_mul(3).wrapping_add(1) };
}

#[test]
fn if_else_chain_with_negated_and_uniform_branches() {
    check_structure(
        "if_chain",
        0,
        &["_ if %p1 { return } _ if !%p2 { $NOT_SMALL if %p3 { $MEDIUM } else { _ if !%p4 { $HUGE } else { _ } } } else { _ } $CHAIN_END if %p5 { $EVEN } else { _ } $STORE return"],
    );
    per_thread("if_chain", 11, &[9, 11, 99, 100, 101, 999, 1000, 1001], false, if_chain);
}

fn if_arm_return(x: u32, out: &mut u32, aux: &mut u32) {
    let mut y = x;
    if x & 1 != 0 {
        if x <= 1000 {
            *aux = x;
            return;
        }
        y = y.wrapping_mul(3);
    }
    *out = y.wrapping_add(1);
}

#[test]
fn return_with_code_inside_an_if_arm() {
    check_structure(
        "if_arm_return",
        0,
        &["_ if %p1 { return } _ if !%p2 { } else { _ if %p3 { $CONT } else { _ return } } $MERGE return"],
    );
    per_thread("if_arm_return", 24, &[999, 1000, 1001, 1002, 1003], true, if_arm_return);
}

// ----- 2. predicated instructions ---------------------------------------------------------

fn predicated(x: u32, out: &mut u32, aux: &mut u32) {
    let mut p = x > 50;
    let mut y = x;
    if p {
        y = y.wrapping_add(100);
    }
    if !p {
        y <<= 2;
    }
    let q = x & 4 != 0;
    if q {
        p = y < 200;
    }
    if !q {
        *aux = y;
    }
    if x.is_multiple_of(7) {
        return;
    }
    if p {
        y ^= 255;
    }
    if !p {
        y = y.wrapping_mul(3);
    }
    *out = y;
}

#[test]
fn predicated_instructions_and_guarded_return() {
    check_structure(
        "predicated",
        0,
        &["_ if %p1 { return } _ if %p2 { _ } _ if !%p2 { _ } _ if %p3 { _ } _ if !%p3 { _ } _ if %p4 { return } _ if %p2 { _ } _ if !%p2 { _ } _ return"],
    );
    // Around the thresholds: x > 50, y < 200 (x + 100 or 4x), x % 7, bit 2.
    let edges = [4, 5, 14, 21, 49, 50, 51, 52, 56, 98, 99, 100, 101, 0x3fff_ffff, 0xffff_fff8];
    per_thread("predicated", 12, &edges, true, predicated);
}

// ----- 3. loops -----------------------------------------------------------------------

fn loop_if_else(x: u32, out: &mut u32, _: &mut u32) {
    let t = x & 31;
    let mut acc = x;
    if t != 0 {
        let mut k = 0;
        loop {
            let b = x >> k;
            if b & 1 != 0 {
                acc = (acc ^ b).wrapping_add(12345);
            } else {
                acc = acc.wrapping_mul(5).wrapping_add(k);
            }
            k += 1;
            if k >= t {
                break;
            }
        }
    }
    *out = acc;
}

#[test]
fn loop_with_data_dependent_trip_count_and_if_else() {
    check_structure(
        "loop_if_else",
        1,
        &["_ if %p1 { return } _ if %p2 { } else { _ loop { $LOOP if %p3 { $ODD } else { _ } $NEXT if %p4 { continue } break } _ } $STORE return"],
    );
    per_thread(
        "loop_if_else",
        13,
        &[31, 32, 33, 0xffff_ffe0, 0xaaaa_aaaa, 0x5555_5555],
        false,
        loop_if_else,
    );
}

fn do_while(x: u32, out: &mut u32, _: &mut u32) {
    let (mut v, mut sum, mut count, mut odd) = (x, 0u32, 0u32, 0u32);
    loop {
        let d = v % 10;
        if d & 1 != 0 {
            odd += 1;
        }
        sum += d;
        count += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    *out = sum << 16 | count << 8 | odd;
}

#[test]
fn do_while_loop_runs_at_least_once() {
    check_structure(
        "do_while",
        1,
        &["_ if %p1 { return } _ loop { $BODY if %p2 { _ } _ if %p3 { continue } break } _ return"],
    );
    per_thread(
        "do_while",
        14,
        &[9, 99, 100, 999_999_999, 1_000_000_000, 4_294_967_295],
        false,
        do_while,
    );
}

fn while_loop(x: u32, out: &mut u32, _: &mut u32) {
    let mut v = x & 0xffff;
    let d = ((x >> 16) & 0xfff) + 600;
    let mut q = 0;
    loop {
        if v < d {
            break;
        }
        v -= d;
        q += 1;
    }
    *out = q << 16 | v;
}

#[test]
fn while_loop_header_is_the_exit_test() {
    check_structure(
        "while_loop",
        1,
        &["_ if %p1 { return } _ loop { $WHILE if %p2 { break } _ continue } $END return"],
    );
    // v < d (no trip), v == d (one), the longest (65535 / 600) and the largest d.
    let edges = [599, 600, 601, 1199, 1200, 0xffff, 0x0fff_ffff, 0x0fff_1ffe];
    per_thread("while_loop", 15, &edges, false, while_loop);
}

fn self_loop(x: u32, out: &mut u32, _: &mut u32) {
    let t = (x & 15) + 1;
    let (mut acc, mut k) = (x, 0u32);
    loop {
        acc = acc.wrapping_mul(31).wrapping_add(k);
        acc ^= acc >> 7;
        k += 1;
        if k >= t {
            break;
        }
    }
    *out = acc;
}

#[test]
fn self_loop_block_branches_to_itself() {
    check_structure(
        "self_loop",
        1,
        &["_ if %p1 { return } _ loop { $SELF if %p2 { continue } break } _ return"],
    );
    per_thread("self_loop", 16, &[14, 15, 16, 17, 0xffff_fff0], false, self_loop);
}

fn continue_in_arms(x: u32, out: &mut u32, _: &mut u32) {
    let (mut acc, t) = (x, x & 15);
    let mut k = 0;
    while k < t {
        k += 1;
        let b = acc & 3;
        if b == 0 {
            acc = acc.wrapping_add(k);
            continue;
        } else if b == 1 {
            acc ^= k << 3;
            continue;
        }
        acc = acc.wrapping_mul(5);
        acc = acc.wrapping_add(7);
    }
    *out = acc;
}

#[test]
fn loop_with_continue_from_both_arms_of_an_if() {
    check_structure(
        "continue_in_arms",
        1,
        &["_ if %p1 { return } _ loop { $LOOP if %p2 { break } _ if %p3 { $ZERO continue } _ if %p4 { $ONE continue } _ continue } $END return"],
    );
    per_thread("continue_in_arms", 25, &[12, 13, 14, 15, 0xffff_ffff], false, continue_in_arms);
}

fn search_then_loop(x: u32, out: &mut u32, _: &mut u32) {
    let (y, mut k) = (x & 0x07ff_ffff, x >> 27);
    loop {
        if k >= 32 {
            *out = u32::MAX;
            return;
        }
        if (y >> k) & 1 != 0 {
            break;
        }
        k += 1;
    }
    let mut r = 0;
    loop {
        r += 1;
        k += 1;
        if k >= 32 || (y >> k) & 1 == 0 {
            break;
        }
    }
    *out = k << 8 | r;
}

#[test]
fn loop_with_a_returning_header_exit_then_a_second_loop() {
    check_structure(
        "search_then_loop",
        2,
        &["_ if %p1 { return } _ loop { $SEARCH if %p2 { break } _ if %p3 { break } _ continue } _ switch $sel34 { case 0, default: $FOUND loop { $RUN if %p4 { break } _ if %p5 { continue } break } _ switch $sel33 { case 0, default: _ case 1: } $STORE return case 1: } $NOT_FOUND return"],
    );
    // Not found (y = 0, k = 31); runs from bit 0 and bit 2 to the top of y; runs of one.
    let edges = [0xf800_0000, 0x1000_0000, 0x07ff_ffff, 0x17ff_ffff, 0x0000_0100, 0x0400_0000];
    per_thread("search_then_loop", 26, &edges, false, search_then_loop);
}

// ----- 4. nested loops ------------------------------------------------------------------

fn nested_loops(x: u32, out: &mut u32, _: &mut u32) {
    let (mut acc, m) = (x, x & 7);
    let mut o = 0;
    loop {
        if o >= m {
            break;
        }
        let mut j = 0;
        loop {
            if j > o {
                break;
            }
            j += 1;
            if acc & 3 == 0 {
                continue;
            }
            acc = acc.wrapping_mul(7).wrapping_add(j);
            if acc & 0xf0 == 0xf0 {
                break;
            }
            acc ^= o;
        }
        acc = acc.wrapping_add(o << 8);
        o += 1;
    }
    *out = acc;
}

#[test]
fn nested_loops_with_continue_and_break() {
    check_structure(
        "nested_loops",
        2,
        &["_ if %p1 { return } _ loop { $OUTER if %p2 { break } _ loop { $INNER if %p3 { break } _ if %p4 { continue } _ if %p5 { break } _ continue } $INNER_EXIT continue } $OUTER_EXIT return"],
    );
    // acc & 3 == 0 from the start (continue) and not; m = 7 (longest).
    per_thread("nested_loops", 17, &[4, 5, 6, 0xf7, 0xfffc, 0x1234_5677], false, nested_loops);
}

fn triple_nest(x: u32, out: &mut u32, _: &mut u32) {
    let (mut acc, m) = (x, x & 3);
    let mut a = 0;
    'l1: loop {
        if a >= m {
            break;
        }
        a += 1;
        let mut b = 0;
        'l2: loop {
            if b >= a {
                continue 'l1;
            }
            b += 1;
            let mut c = 0;
            loop {
                if c >= b {
                    continue 'l2;
                }
                c += 1;
                acc = acc.wrapping_mul(3).wrapping_add(a << 8 | b << 4 | c);
                if acc & 7 == 0 {
                    continue;
                }
                acc ^= c;
            }
        }
    }
    *out = acc;
}

#[test]
fn three_nested_loops_each_exiting_to_the_enclosing_header() {
    check_structure(
        "triple_nest",
        3,
        &["_ if %p1 { return } _ loop { $L1 if %p2 { break } _ loop { $L2 if %p3 { break } _ loop { $L3 if %p4 { break } _ if %p5 { continue } _ continue } continue } continue } $END return"],
    );
    per_thread("triple_nest", 27, &[0xffff_fff3, 0x8000_0002], false, triple_nest);
}

// ----- 5. returns from loops ---------------------------------------------------------------

fn loop_early_ret(x: u32, out: &mut u32, _: &mut u32) {
    let mut acc = 0u32;
    let lim = (x >> 16) & 0x1fff;
    let stop = x >> 27;
    let armed = x & (1 << 26) != 0;
    let mut k = 0u32;
    loop {
        if k >= 32 {
            break;
        }
        if (x >> k) & 1 != 0 {
            acc = (k * k).wrapping_add(acc);
            if acc > lim {
                *out = 0xffff_0000 | k;
                return;
            }
        }
        if k == stop && armed {
            return;
        }
        k += 1;
    }
    *out = acc;
}

#[test]
fn loop_with_early_returns_and_a_normal_exit() {
    check_structure(
        "loop_early_ret",
        1,
        &["_ if %p1 { return } _ loop { $LOOP if %p3 { break } _ if %p4 { } else { _ if %p5 { break } else { _ } } $NEXT if %p7 { return } _ continue } _ switch $sel40 { case 0, default: $TOO_BIG return case 1: } $END return"],
    );
    // Armed with stop = 0, 5 and 31; a limit reached exactly; bits high and low.
    let edges = [
        0x0400_0000,
        0x2c00_0000 | 0x3f,
        0xfc00_0000 | 0xffff,
        0xffff_0000,
        0x0001_0003,
        0x0005_0006,
        0x1fff_0000 | 0x8000,
        0xf800_ffff,
    ];
    per_thread("loop_early_ret", 18, &edges, false, loop_early_ret);
}

fn loop_only_returns(x: u32, out: &mut u32, _: &mut u32) {
    let (mut v, mut steps) = (x, 0u32);
    loop {
        if v == 1 {
            *out = steps;
            return;
        }
        if steps >= 60 {
            *out = !v;
            return;
        }
        steps += 1;
        if v & 1 == 0 {
            v >>= 1;
        } else {
            v = v.wrapping_mul(3).wrapping_add(1);
        }
    }
}

#[test]
fn loop_whose_only_exits_are_returns() {
    check_structure(
        "loop_only_returns",
        1,
        &["_ if %p1 { return } _ loop { $LOOP if %p2 { break } _ if %p3 { break } _ if %p4 { $EVEN continue } _ continue } _ switch $sel30 { case 0, default: $GIVE_UP return case 1: } $FOUND return"],
    );
    // 27, 97 and 871 need more than 60 steps (give up), 2^31 takes 31, 0 never ends.
    let edges = [27, 97, 871, 1 << 31, 0x5555_5555];
    per_thread("loop_only_returns", 19, &edges, false, loop_only_returns);
}

// ----- 6. single-exit multi-level continue and break ------------------------------------

fn continue_outer(x: u32, out: &mut u32, _: &mut u32) {
    let (mut acc, m) = (x, x & 7);
    let mut o = 0;
    'outer: loop {
        if o >= m {
            break;
        }
        o += 1;
        let mut j = 0;
        loop {
            if j >= o {
                continue 'outer;
            }
            if acc & 1 == 0 {
                acc = (acc >> 1).wrapping_add(j);
            } else {
                acc = acc.wrapping_mul(3).wrapping_add(1);
            }
            j += 1;
        }
    }
    *out = acc;
}

#[test]
fn inner_loop_exits_only_to_the_outer_header() {
    check_structure(
        "continue_outer",
        2,
        &["_ if %p1 { return } _ loop { $OUTER if %p2 { break } _ loop { $INNER if %p3 { break } _ if %p4 { $EVEN } else { _ } $INC continue } continue } $STORE return"],
    );
    per_thread("continue_outer", 20, &[6, 0xffff_fff7, 0x8000_0007], false, continue_outer);
}

fn break_outer(x: u32, out: &mut u32, aux: &mut u32) {
    let (mut acc, m, lim) = (x, x & 15, (x >> 28) + 1);
    let mut o = 0;
    'outer: loop {
        if o >= m {
            break;
        }
        if (x >> 4 >> o) & 1 != 0 {
            let mut j = 0;
            loop {
                acc = acc.wrapping_mul(5).wrapping_add(o);
                acc = acc.wrapping_add(j);
                j += 1;
                if j >= lim {
                    break 'outer;
                }
            }
        }
        acc ^= o;
        o += 1;
    }
    *out = acc;
    *aux = o;
}

#[test]
fn inner_loop_exits_only_to_the_outer_exit() {
    check_structure(
        "break_outer",
        2,
        &["_ if %p1 { return } _ loop { $OUTER if %p2 { break } _ if %p3 { } else { break } $LATCH continue } _ switch $sel34 { case 0, default: _ loop { $INNER if %p4 { break } _ continue } case 1: } $OUTER_EXIT return"],
    );
    // m = 15 with the inner loop never entered (bits 4..18 clear), entered last, and
    // the longest inner loop (lim = 16).
    let edges = [0x0000_000f, 0x0004_000f, 0xf004_000f, 0xf000_0011, 0x1000_0018];
    per_thread("break_outer", 21, &edges, true, break_outer);
}

// ----- 7. unreachable code ------------------------------------------------------------

fn unreachable(x: u32, out: &mut u32, _: &mut u32) {
    let (mut acc, t) = (x, (x & 7) + 1);
    let mut k = 0;
    loop {
        acc = acc.wrapping_add(k);
        acc = acc.wrapping_mul(3) ^ k;
        k += 1;
        if k >= t {
            break;
        }
    }
    *out = acc;
}

#[test]
fn unreachable_blocks_are_dropped() {
    check_structure(
        "unreachable",
        1,
        &["_ if %p1 { return } _ $START loop { $LOOP $MID if %p2 { continue } break } _ return"],
    );
    let s = structured("unreachable");
    assert!(!s.contains("$DEAD"), "unreachable: the dead self-loop was structured:\n{s}");
    per_thread("unreachable", 22, &[], false, unreachable);
}

// ----- 8. bar.sync in a uniform loop ----------------------------------------------------

/// The CPU simulation of `barrier_loop.ptx`: every phase between two barriers runs for
/// all threads of a block before the next begins.
fn barrier_loop_reference(input: &[u32], block: usize, iters: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(input.len());
    for chunk in input.chunks(block) {
        let mut v = chunk.to_vec();
        let mut s = vec![0u32; block];
        for k in 0..iters {
            for (t, slot) in s.iter_mut().enumerate() {
                let tid = t as u32;
                *slot = if tid & 1 == 0 {
                    v[t].wrapping_mul(2).wrapping_add(k)
                } else {
                    (v[t] ^ k).wrapping_add(tid)
                };
            }
            for (t, vt) in v.iter_mut().enumerate() {
                let r = if t & 1 == 0 { s[(t + 1) % block] } else { s[t - 1] };
                *vt = if r > *vt { r.wrapping_sub(*vt) ^ k } else { vt.wrapping_add(r) };
            }
        }
        out.extend(v);
    }
    out
}

#[test]
fn barrier_in_uniform_loop_with_divergent_shared_memory_traffic() {
    check_structure(
        "barrier_loop",
        1,
        &["_ if %p2 { _ } _ if !%p1 { _ } _ if %p3 { } else { _ loop { $LOOP if !%p1 { $ODD_WRITE } else { _ } $WRITTEN if %p4 { $BIGGER } else { _ } $READ if %p5 { continue } break } _ } $END return"],
    );
    let mut rng = Rng(23);
    // An odd block size too: its last (even) thread wraps around to slot 0.
    for (grid, block, iters) in [(3u32, 64u32, 9u32), (2, 33, 5), (1, 256, 1), (2, 64, 0)] {
        let n = (grid * block) as usize;
        let input: Vec<u32> = (0..n)
            .map(|i| if i % 4 == 0 { rng.next_u32() % 100 } else { rng.next_u32() })
            .collect();
        let expected = barrier_loop_reference(&input, block as usize, iters);
        let case = Case {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
            args: vec![
                buf(ElemType::U32, u32_bytes(&input)),
                buf(ElemType::U32, vec![0; 4 * n]),
                val(iters),
            ],
            expected: vec![(1, u32_bytes(&expected))],
        };
        run_case("barrier_loop", &case);
    }
}

/// An if/else whose one arm has an error path that returns, followed by a barrier that
/// every remaining thread reaches: the merge is the barrier's block (not the virtual
/// exit), so the barrier is emitted once. Regression test: the first structurizer
/// copied it into both arms, and the threads of the two arms never met.
fn barrier_after_returning_arm_reference(input: &[u32], block: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(input.len());
    for chunk in input.chunks(block) {
        let slots: Vec<u32> = chunk
            .iter()
            .enumerate()
            .map(|(t, &x)| if t & 1 != 0 { x.wrapping_mul(3) } else { x.wrapping_add(1) })
            .collect();
        out.extend((0..chunk.len()).map(|t| slots[(t + 1) % block]));
    }
    out
}

#[test]
fn barrier_after_an_if_whose_arm_can_return() {
    // Predicated (`pass::predicate`): a thread that takes the returning arm stays, masked
    // off, until the end, so every thread of the block reaches the barrier as SPIR-V
    // wants; no `return` is left before it.
    check_structure(
        "barrier_after_returning_arm",
        0,
        &["_ if $mask40 { _ } _ if $mask40 { $EVEN }"],
    );
    assert!(!structured("barrier_after_returning_arm").contains("return"));
    let mut rng = Rng(29);
    for (grid, block) in [(1u32, 8u32), (3, 64), (2, 33)] {
        let n = (grid * block) as usize;
        // No input is 0xFFFFFFFF, so the error path never runs and every thread
        // reaches the barrier.
        let input: Vec<u32> = (0..n).map(|_| rng.next_u32() >> 1).collect();
        let expected = barrier_after_returning_arm_reference(&input, block as usize);
        let case = Case {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
            args: vec![
                buf(ElemType::U32, u32_bytes(&input)),
                buf(ElemType::U32, vec![0; 4 * n]),
                buf(ElemType::U32, vec![0; 4]),
            ],
            expected: vec![(1, u32_bytes(&expected))],
        };
        run_case("barrier_after_returning_arm", &case);
    }
}

/// `exit_before_barrier.ptx`: threads at or past `n` return first; the others store their
/// index in shared memory, pass a barrier and three more in a loop, and store their
/// right neighbour's index (of the `n`): `out[t] = (t + 1) % n` for `t < n`, the rest
/// untouched.
fn exit_before_barrier_reference(n: u32, block: u32) -> Vec<u32> {
    (0..block).map(|t| if t < n { (t + 1) % n } else { SENTINEL }).collect()
}

/// CUDA lets threads that have returned miss later `bar.sync`s; SPIR-V wants every
/// invocation at every `OpControlBarrier`, and lavapipe ends the block once a whole
/// subgroup has returned before one: the threads still running stored nothing. Blocks
/// where whole subgroups (8 lanes on lavapipe, up to 64 elsewhere) return, a partial
/// one, and none.
#[test]
fn threads_that_return_before_barriers_do_not_end_the_block() {
    for (block, n) in [(32u32, 12u32), (256, 12), (96, 70), (16, 12), (64, 64), (128, 1)] {
        let expected = exit_before_barrier_reference(n, block);
        let case = Case {
            grid: [1, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
            args: vec![buf(ElemType::U32, u32_bytes(&vec![SENTINEL; block as usize])), val(n)],
            expected: vec![(0, u32_bytes(&expected))],
        };
        run_case("exit_before_barrier", &case);
    }
}

/// CuPy's `cupy.cumsum(x, axis=-1)` of a 2-D array (`tests/ptx/clients/cupy_batch_scan.ptx`,
/// from CuPy 14.2's NVRTC; `tests/ptx/clients/regenerate`): a work-efficient scan of
/// each row in shared memory, whose threads past the array return before the scan's
/// barriers. With those threads ending the block, CuPy's `cumsum` along an axis
/// returned its input. Against the row-wise inclusive sums in f32, in CuPy's launch:
/// 512 threads and 2,048 bytes of dynamic shared memory, which the kernel's scan
/// assumes whatever the row length (it walks 512 words).
#[test]
fn cupys_row_scan_sums_every_row() {
    let Some(device) = device() else { return };
    let path = repo().join("tests/ptx/clients/cupy_batch_scan.ptx");
    let module = load(&device, &path);
    let kernel = module.kernel("cupy_inclusive_batch_scan_kernel").expect("kernel");
    let block = 512u32;
    for (rows, cols) in [(3u64, 4u64), (5, 16), (7, 3), (2, 64), (3, 300)] {
        let n = rows * cols;
        let input: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 2.5).collect();
        let x = device.buffer_from(&input).expect("input");
        let out = device.zeroed::<f32>(n as usize).expect("output");
        // CuPy's CArray<float, 2>: data, size, shape, strides (bytes).
        let array = |address: u64| [address, n, rows, cols, 4 * cols, 4];
        let padded = cols.next_power_of_two();
        let grid = (rows * padded).div_ceil(u64::from(block)) as u32;
        let args = [
            ptxvk::Arg::value(array(x.address())),
            ptxvk::Arg::value(array(out.address())),
            ptxvk::Arg::value(cols as u32),
        ];
        kernel.launch(grid, block, 2048, &args).expect("launch");
        let want: Vec<f32> = input
            .chunks(cols as usize)
            .flat_map(|row| {
                row.iter()
                    .scan(0.0f32, |sum, &v| {
                        *sum += v;
                        Some(*sum)
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(out.to_vec().expect("read"), want, "{rows} x {cols}");
    }
}

// ----- shapes that need dispatchers --------------------------------------------------

/// One block of `block` threads; each thread reads `input[tid]` and writes one word.
fn run_single_block(name: &str, input: &[u32], expected: &[u32]) {
    let case = Case {
        grid: [1, 1, 1],
        block: [input.len() as u32, 1, 1],
        shared_bytes: 0,
        args: vec![
            buf(ElemType::U32, u32_bytes(input)),
            buf(ElemType::U32, vec![0; 4 * input.len()]),
        ],
        expected: vec![(1, u32_bytes(expected))],
    };
    run_case(name, &case);
}

/// The state machine of `irreducible_state_machine.ptx`: a cycle EVEN <-> ODD entered at
/// either block, counting steps of the Collatz map until ODD sees x <= 1.
fn irreducible_state_machine(mut x: u32) -> u32 {
    let mut steps = 0u32;
    let mut odd = x & 1 != 0;
    loop {
        if odd {
            if x <= 1 {
                return steps;
            }
            x = x.wrapping_mul(3).wrapping_add(1);
            steps += 1;
            odd = false;
        } else {
            x >>= 1;
            steps += 1;
            odd = x & 1 != 0;
        }
    }
}

#[test]
fn irreducible_cycle_runs_through_a_dispatcher_header() {
    check_structure(
        "irreducible_state_machine",
        1,
        &["_ if %p1 { } else { _ } loop { _ switch $sel19 { case 0, default: $EVEN if %p2 { continue } _ continue case 1: } $ODD if %p3 { break } _ continue } $DONE return"],
    );
    let mut rng = Rng(31);
    // x = 0 never ends (EVEN forever), so inputs start at 1; small values keep every
    // thread's loop far below lavapipe's iteration limit.
    let mut input: Vec<u32> = vec![1, 2, 3, 6, 7, 27, 97, 255, 256, 703];
    input.extend((0..246).map(|_| 1 + rng.next_u32() % 2000));
    let expected: Vec<u32> = input.iter().map(|&x| irreducible_state_machine(x)).collect();
    run_single_block("irreducible_state_machine", &input, &expected);
}

/// `loop_two_exits.ptx`: a loop that leaves to EXIT_A or EXIT_B, both of which continue
/// into a second loop.
fn loop_two_exits(mut x: u32) -> u32 {
    let n = x & 15;
    let mut i = 0u32;
    loop {
        if i >= n {
            x = x.wrapping_add(1);
            break;
        }
        x = x.wrapping_mul(5);
        if x & 255 == 0 {
            x ^= 5;
            break;
        }
        i += 1;
    }
    loop {
        x = x.wrapping_mul(3);
        i += 1;
        if i >= 20 {
            return x;
        }
    }
}

#[test]
fn loop_with_two_continuing_exits_runs_through_a_dispatcher() {
    check_structure(
        "loop_two_exits",
        2,
        &["_ loop { $LOOP if %p1 { break } _ if %p2 { break } _ continue } _ switch $sel21 { case 0, default: $EXIT_B case 1: $EXIT_A } loop { $TAIL if %p3 { continue } break } _ return"],
    );
    let mut rng = Rng(37);
    // Multiples of 256 (after x5) take EXIT_B early; the rest count to n.
    let mut input: Vec<u32> = vec![0, 1, 15, 16, 256, 256 * 3 + 2, 0x100, 0x33, u32::MAX];
    input.extend((0..247).map(|i| {
        if i % 3 == 0 {
            (rng.next_u32() & !0xff) | 0x0c
        } else {
            rng.next_u32()
        }
    }));
    let expected: Vec<u32> = input.iter().map(|&x| loop_two_exits(x)).collect();
    assert!(
        expected.iter().zip(&input).any(|(_, &x)| x.wrapping_mul(5) & 255 == 0),
        "EXIT_B is taken"
    );
    run_single_block("loop_two_exits", &input, &expected);
}

/// `goto_found.ptx`: a hit leaves two nested loops at once to code that continues.
fn goto_found(x: u32) -> u32 {
    let mut r = 999u32;
    'search: for i in 0..8u32 {
        for j in 0..i {
            if ((x >> i) ^ j) & 31 == 17 {
                r = i * 100 + j;
                break 'search;
            }
        }
    }
    r.wrapping_mul(3).wrapping_add(x)
}

#[test]
fn break_out_of_two_loops_to_code_that_continues() {
    let mut rng = Rng(41);
    let mut input: Vec<u32> = vec![0, 1, 5, 0x50, 0xff, u32::MAX];
    input.extend((0..250).map(|_| rng.next_u32()));
    let expected: Vec<u32> = input.iter().map(|&x| goto_found(x)).collect();
    assert!(expected
        .iter()
        .zip(&input)
        .any(|(&e, &x)| e == 999u32.wrapping_mul(3).wrapping_add(x)));
    assert!(expected
        .iter()
        .zip(&input)
        .any(|(&e, &x)| e != 999u32.wrapping_mul(3).wrapping_add(x)));
    let s = structured("goto_found");
    assert_eq!(s.matches("loop {").count(), 2, "{s}");
    assert_eq!(s.matches("$TAIL").count(), 1, "the shared tail is emitted once:\n{s}");
    run_single_block("goto_found", &input, &expected);
}

/// `jump_table.ptx`: `brx.idx` through `.branchtargets` tables, one guarded.
fn jump_table(x: u32) -> u32 {
    let mut r = match x & 3 {
        0 => x.wrapping_add(100),
        1 => x.wrapping_mul(3),
        2 => x ^ 0x5555,
        _ => x >> 2,
    };
    if x & 1 != 0 {
        r = if (x >> 4) & 1 == 0 { r.wrapping_add(7) } else { r.wrapping_sub(7) };
    }
    r
}

#[test]
fn jump_tables_become_switches() {
    check_structure("jump_table", 0, &["switch %r3 { case 0, default: $CASE0", "switch %r6"]);
    let mut rng = Rng(43);
    let mut input: Vec<u32> = (0..32).collect();
    input.extend((0..224).map(|_| rng.next_u32()));
    let expected: Vec<u32> = input.iter().map(|&x| jump_table(x)).collect();
    run_single_block("jump_table", &input, &expected);
}

/// Immediate predicate operands (PTX ISA 9.2 §4.5: an integer constant may stand for a
/// predicate, nonzero being true): `selp` with 0 and 7, and `vote.sync` of constant
/// predicates, as compilers emit them after constant folding.
#[test]
fn immediate_predicate_operands() {
    const PTX: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .visible .entry imm_preds(.param .u64 out)\n{\n.reg .pred %p<4>;\n\
        .reg .b32 %r<8>;\n.reg .b64 %rd<4>;\nld.param.u64 %rd1, [out];\n\
        mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 16;\nadd.s64 %rd3, %rd1, %rd2;\n\
        selp.b32 %r2, 5, 7, 0;\nselp.b32 %r3, 5, 7, 7;\n\
        vote.sync.all.pred %p1, 1, 0xffffffff;\nvote.sync.any.pred %p2, 0, 0xffffffff;\n\
        selp.u32 %r4, 1, 0, %p1;\nselp.u32 %r5, 1, 0, %p2;\n\
        st.global.v4.u32 [%rd3], {%r2, %r3, %r4, %r5};\nret;\n}\n";
    let (_, kernels) = ptxvk::compile::lower("imm.ptx", PTX, None).expect("lowers");
    assert_eq!(kernels.len(), 1);
    let Some(device) = device() else { return };
    let module = ptxvk::Module::from_ptx(&device, PTX).expect("module");
    let out = device.zeroed::<u32>(4 * 64).expect("alloc");
    let kernel = module.kernel("imm_preds").expect("kernel");
    kernel.launch(1, 64, 0, &[ptxvk::Arg::from(&out)]).expect("launch");
    let want: Vec<u32> = (0..64).flat_map(|_| [7, 5, 1, 0]).collect();
    assert_eq!(out.to_vec().expect("read"), want);
}
