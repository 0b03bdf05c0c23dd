//! Parse-speed benchmark: lexing and parsing of a module of 10 MB or more, built by
//! replicating the compiler-generated corpus (`tests/kernels/*.ptx`) with every
//! module-scope name renamed per copy.
//!
//! ```text
//! cargo bench -p ptxvk-frontend --bench parse [-- MEGABYTES] [--once]
//! ```
//!
//! `--once` stops after the first parse (for profilers, and for the fresh-process
//! measurement).
//!
//! Prints MB/s and lines/s for the first parse of a process (what the `ptxvk` CLI does;
//! measured in five fresh processes), then for repeated runs of lexing alone, lexing +
//! parsing (on every core, then on one thread), the instruction-table check alone, and
//! lexing + parsing + check (what `ptxvk_frontend::parse` does): the best and the median
//! of several runs, and the process's peak resident set size.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use ptxvk_frontend::ast::Item;

const RUNS: usize = 7;

fn main() {
    let target_mb: usize =
        std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(12).max(1);
    let corpus = load_corpus();
    let module = build_module(&corpus, target_mb << 20);
    let bytes = module.len();
    let lines = module.lines().count();
    let rss_input = peak_rss_kib();
    println!(
        "input: {:.1} MB, {} lines, {} corpus files replicated",
        bytes as f64 / 1e6,
        lines,
        corpus.len()
    );

    // A compiler parses once per process: time the very first parse on a fresh heap.
    let t = Instant::now();
    let first = ptxvk_frontend::parse(&module).expect("the benchmark module parses");
    let first_time = t.elapsed();
    drop(first);
    if std::env::args().any(|a| a == "--once") {
        println!("first-parse-ns {}", first_time.as_nanos());
        return;
    }
    // The same in fresh processes (this binary with `--once`), to see past the heap
    // state and page-fault noise of one process.
    let mut firsts = vec![first_time];
    for _ in 0..4 {
        if let Some(t) = first_parse_in_child(target_mb) {
            firsts.push(t);
        }
    }
    firsts.sort();
    report("first parse", bytes, lines, &firsts);

    let lex = measure(|| {
        use logos::Logos;
        let mut n = 0usize;
        for t in ptxvk_frontend::lexer::Tok::lexer(&module) {
            n += usize::from(t.is_ok());
        }
        n
    });
    report("lex", bytes, lines, &lex.0);

    let syntax = measure(|| {
        let (m, errors) = ptxvk_frontend::parse_syntax(&module);
        assert!(errors.is_empty(), "the benchmark module must parse");
        m
    });
    report("lex+parse", bytes, lines, &syntax.0);

    // The same on one thread (`parse_syntax` cuts modules of 1 MiB or more into one
    // chunk per core, `ptxvk_frontend::split`).
    let one_thread = measure(|| {
        let (m, errors) = ptxvk_frontend::split::parse_syntax_in_chunks(&module, 1);
        assert!(errors.is_empty(), "the benchmark module must parse");
        m
    });
    report("1 thread", bytes, lines, &one_thread.0);

    let parsed = ptxvk_frontend::parse(&module).expect("the benchmark module parses");
    let check = measure(|| {
        let mut errors = Vec::new();
        ptxvk_frontend::instruction_check::check_module(&parsed, &mut errors);
        errors.len()
    });
    drop(parsed);
    report("check alone", bytes, lines, &check.0);

    let full = measure(|| ptxvk_frontend::parse(&module).expect("the benchmark module parses"));
    report("lex+parse+check", bytes, lines, &full.0);
    println!(
        "{:>16}: median {:7.1} ms (freeing the AST, not included above)",
        "drop",
        full.1[full.1.len() / 2].as_secs_f64() * 1e3
    );

    let peak = peak_rss_kib();
    println!(
        "peak RSS: {:.1} MB (input text and process before parsing: {:.1} MB)",
        peak.unwrap_or(0) as f64 / 1024.0,
        rss_input.unwrap_or(0) as f64 / 1024.0,
    );
}

/// Runs `f` `RUNS` times after a warm-up: the sorted times of `f`, and the sorted times
/// of dropping its result (kept out of the first).
fn measure<T>(mut f: impl FnMut() -> T) -> (Vec<Duration>, Vec<Duration>) {
    drop(f()); // warm-up
    let mut times = Vec::new();
    let mut drops = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let result = std::hint::black_box(f());
        times.push(t.elapsed());
        let t = Instant::now();
        drop(result);
        drops.push(t.elapsed());
    }
    times.sort();
    drops.sort();
    (times, drops)
}

fn report(what: &str, bytes: usize, lines: usize, times: &[Duration]) {
    let best = times[0].as_secs_f64();
    let median = times[times.len() / 2].as_secs_f64();
    println!(
        "{what:>16}: best {:7.1} ms = {:6.1} MB/s, {:5.2} M lines/s; median {:7.1} ms = {:6.1} MB/s",
        best * 1e3,
        bytes as f64 / 1e6 / best,
        lines as f64 / 1e6 / best,
        median * 1e3,
        bytes as f64 / 1e6 / median,
    );
}

/// Runs this benchmark with `--once` in a child process: its first-parse time.
fn first_parse_in_child(target_mb: usize) -> Option<Duration> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe)
        .args([target_mb.to_string(), "--once".into()])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let ns = text.lines().find_map(|l| l.strip_prefix("first-parse-ns "))?.trim().parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// `VmHWM` of `/proc/self/status`, in KiB (Linux only).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn load_corpus() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kernels");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/kernels exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read_to_string(p).expect("readable corpus file")).collect()
}

/// The body of each corpus file (without `.version`/`.target`/`.address_size`) repeated
/// until `min_bytes`, every module-scope name suffixed with the copy number.
fn build_module(corpus: &[String], min_bytes: usize) -> String {
    let mut out = String::from(".version 9.0\n.target sm_90\n.address_size 64\n\n");
    let bodies: Vec<(String, BTreeSet<String>)> = corpus
        .iter()
        .map(|text| {
            let m = ptxvk_frontend::parse(text).expect("corpus file parses");
            let mut names = BTreeSet::new();
            for item in &m.items {
                match item {
                    Item::Function(f) => {
                        names.insert(f.name.value.to_string());
                        for p in &f.params {
                            names.extend(p.names.iter().map(|n| n.name.value.to_string()));
                        }
                    }
                    Item::Variable(v) => {
                        names.extend(v.names.iter().map(|n| n.name.value.to_string()))
                    }
                    Item::Directive(_) => {}
                }
            }
            let body: String = text
                .lines()
                .filter(|l| {
                    let l = l.trim_start();
                    !(l.starts_with(".version")
                        || l.starts_with(".target")
                        || l.starts_with(".address_size"))
                })
                .flat_map(|l| [l, "\n"])
                .collect();
            (body, names)
        })
        .collect();
    let mut copy = 0usize;
    while out.len() < min_bytes {
        for (body, names) in &bodies {
            rename(body, names, &format!("_c{copy}"), &mut out);
            copy += 1;
        }
    }
    out
}

/// Appends `text` with every identifier in `names` suffixed by `suffix`.
fn rename(text: &str, names: &BTreeSet<String>, suffix: &str, out: &mut String) {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%');
    let mut rest = text;
    while let Some(start) = rest.find(is_ident) {
        out.push_str(&rest[..start]);
        let word_len = rest[start..].find(|c: char| !is_ident(c)).unwrap_or(rest.len() - start);
        let word = &rest[start..start + word_len];
        out.push_str(word);
        if names.contains(word) {
            out.push_str(suffix);
        }
        rest = &rest[start + word_len..];
    }
    out.push_str(rest);
}
