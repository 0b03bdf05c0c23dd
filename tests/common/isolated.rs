//! Runs each job of a test in a child process of its own (this test binary, filtered to
//! one test and told the job by environment variable), for kernels that may spin
//! forever: on lavapipe a spinning shader keeps running after the wait for it timed
//! out, and every later wait on the device waits for it again. A child's GPU waits
//! time out after [`GPU_TIMEOUT_MS`], and a child still running at [`CHILD_DEADLINE`]
//! is killed. A test fails listing every job that failed, with its message. Used by
//! `forward_progress_e2e` and `block_order_e2e`.
#![allow(dead_code)]

use std::fs::File;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use ptxvk::Device;

use crate::common;

/// `PTXVK_TIMEOUT_MS` of every child. These kernels take milliseconds when they work,
/// and ptxvk's block scheduler turns a spin or deadlock of a block into an error of
/// its own in seconds; this bound is the backstop, and covers lavapipe's compile of the
/// largest scheduled modules on a cold shader cache (up to about a minute each, the
/// software `cuda::barrier` of sm_75, more under load).
pub const GPU_TIMEOUT_MS: u64 = 240_000;
/// A child still running this long after it started is killed and its job failed (the
/// bound for a child that cannot exit). Compiling the largest module, the -G build of
/// multi_warp_cg, takes lavapipe a few seconds; the margin is for racecheck builds.
pub const CHILD_DEADLINE: Duration = Duration::from_secs(400);
/// How long a child that has written its verdict may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// Names the one job a child process runs.
const JOB_ENV: &str = "PTXVK_ISOLATED_JOB";
/// The file a child writes its verdict to: `ok`, `skipped`, or `failed: MESSAGE`.
const VERDICT_ENV: &str = "PTXVK_ISOLATED_VERDICT";

/// One kernel of one build, with the launches and checks it runs.
pub struct Job {
    label: String,
    body: Box<dyn Fn(&Device)>,
}

pub fn job(label: impl Into<String>, body: impl Fn(&Device) + 'static) -> Job {
    Job { label: label.into(), body: Box::new(body) }
}

/// Runs every job of `test` (the name of the calling `#[test]` function) in a child
/// process of its own, one after the other, and fails listing the jobs that failed. In
/// the child (`JOB_ENV` set), runs that one job.
pub fn run_isolated(test: &str, jobs: Vec<Job>) {
    let mut labels: Vec<&str> = jobs.iter().map(|j| j.label.as_str()).collect();
    labels.sort_unstable();
    labels.dedup();
    assert_eq!(labels.len(), jobs.len(), "{test}: job labels must be unique");
    if let Ok(wanted) = std::env::var(JOB_ENV) {
        run_child(&wanted, &jobs);
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = std::env::current_exe().expect("the test binary");
    let mut failures = Vec::new();
    let mut skipped = 0;
    for (k, job) in jobs.iter().enumerate() {
        let verdict = dir.path().join(format!("{k}.verdict"));
        let log_path = dir.path().join(format!("{k}.log"));
        let log = File::create(&log_path).expect("child log");
        let start = Instant::now();
        let mut child = Command::new(&exe)
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(JOB_ENV, &job.label)
            .env(VERDICT_ENV, &verdict)
            .env("PTXVK_TIMEOUT_MS", GPU_TIMEOUT_MS.to_string())
            .stdout(log.try_clone().expect("child log"))
            .stderr(log)
            .spawn()
            .expect("start the child process");
        let mut decided: Option<Instant> = None;
        let killed = loop {
            if child.try_wait().expect("child status").is_some() {
                break None;
            }
            if decided.is_none() && verdict.exists() {
                decided = Some(Instant::now());
            }
            let overdue = match decided {
                Some(at) => at.elapsed() > EXIT_GRACE,
                None => start.elapsed() > CHILD_DEADLINE,
            };
            if overdue {
                let _ = child.kill();
                let _ = child.wait();
                break Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let outcome = match std::fs::read_to_string(&verdict) {
            Ok(v) => v,
            Err(_) => match killed {
                Some(t) => format!(
                    "failed: still running after {:.0} s (GPU waits time out after {} ms), killed",
                    t.as_secs_f64(),
                    GPU_TIMEOUT_MS
                ),
                None => {
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    format!("failed: the child ended without a verdict:\n{log}")
                }
            },
        };
        eprintln!("{test}: {}: {outcome} ({:.1} s)", job.label, start.elapsed().as_secs_f64());
        match outcome.as_str() {
            "ok" => {}
            "skipped" => skipped += 1,
            _ => failures.push(format!("{}: {outcome}", job.label)),
        }
    }
    if skipped == jobs.len() {
        eprintln!("\nSKIPPED: {test}: no Vulkan device on this machine\n");
    }
    assert!(
        failures.is_empty(),
        "{test}: {} of {} jobs failed:\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n")
    );
}

/// In the child: runs the job `wanted` and writes the verdict file.
fn run_child(wanted: &str, jobs: &[Job]) {
    let verdict = PathBuf::from(std::env::var(VERDICT_ENV).expect("verdict file"));
    let write = |text: &str| {
        // Written whole and then renamed: the parent never reads half a verdict.
        let partial = verdict.with_extension("partial");
        std::fs::write(&partial, text).expect("write the verdict");
        std::fs::rename(&partial, &verdict).expect("write the verdict");
    };
    let job = jobs.iter().find(|j| j.label == wanted).expect("the job is one of this test's");
    let Some(device) = common::device() else {
        write("skipped");
        return;
    };
    match std::panic::catch_unwind(AssertUnwindSafe(|| (job.body)(&device))) {
        Ok(()) => write("ok"),
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".into());
            write(&format!("failed: {message}"));
            std::panic::resume_unwind(payload);
        }
    }
}
