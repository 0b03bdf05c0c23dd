//! The `ptxvk` command line (README, *Command line*; `docs/architecture.md`, *The
//! command line*).
//!
//! Exit codes: 0 success; 1 the PTX was rejected (diagnostics on stderr); 2 usage error;
//! 3 device or runtime error; 4 internal compiler error (a ptxvk bug: "internal error",
//! naming the construct).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

use ptxvk::compile::WarpMode;
use ptxvk::spec::{self, LaunchSpec};
use ptxvk::vk::DeviceSelector;
use ptxvk::{Device, Error, SourceMap};

mod doctor;
mod exec;

#[derive(Parser)]
#[command(
    name = "ptxvk",
    version,
    about = "Compile NVIDIA PTX to SPIR-V and run it on any Vulkan device"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile PTX to SPIR-V (or print an intermediate form).
    Compile {
        /// The PTX files; several are linked into one program.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Output file; defaults to IN.spv for `--emit spv` and standard output otherwise.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// What to produce.
        #[arg(long, value_enum, default_value = "spv")]
        emit: Emit,
        /// Compile only this kernel.
        #[arg(long)]
        entry: Option<String>,
        /// How warp collectives map to subgroups (docs/architecture.md, *Warp modes*).
        #[arg(long, value_enum, default_value = "emulated")]
        warp_mode: WarpModeArg,
        /// Float arithmetic: `exact` (PTX's results), or `native`: Vulkan's own `fma`,
        /// `div` and `sqrt` to nearest, faster but with Vulkan's precision.
        #[arg(long, value_enum, default_value = "exact")]
        float: FloatArg,
        /// Compile for checked launches: `--check` or `--check=memcheck` (every memory
        /// access tested first), `--check=racecheck` (shared-memory races too),
        /// `--check=initcheck` (reads of unwritten device memory too); or a list.
        #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "memcheck",
              value_name = "TOOLS", value_parser = ptxvk::check::CheckConfig::parse_tools)]
        check: Option<ptxvk::check::CheckConfig>,
    },
    /// Run a kernel: from flags, or from a launch spec (JSON).
    Run {
        /// The PTX files, linked into one program (not with --spec).
        inputs: Vec<PathBuf>,
        /// Launch spec file; see the README for the format.
        #[arg(long, conflicts_with_all = ["inputs", "grid", "block", "shared", "args", "entry"])]
        spec: Option<PathBuf>,
        /// Kernel name; optional when the module has one kernel.
        #[arg(long)]
        entry: Option<String>,
        /// Grid size in blocks: X[,Y[,Z]].
        #[arg(long)]
        grid: Option<String>,
        /// Block size in threads: X[,Y[,Z]].
        #[arg(long)]
        block: Option<String>,
        /// Dynamic (extern) shared memory in bytes.
        #[arg(long, default_value_t = 0)]
        shared: u32,
        /// Kernel arguments in order: buf:f32:1,2,3  buf:u32:zeros:1024  buf:u8:hex:0a0b  u32:7  f32:1.5  bytes:0a0b  tex:f32x1:4x2:linear,wrap,normalized:1,2,3,4,5,6,7,8 (a texture or surface object; its texels are read back)
        #[arg(long = "arg", allow_hyphen_values = true)]
        args: Vec<String>,
        /// Print one JSON object with every buffer's bytes.
        #[arg(long)]
        json: bool,
        /// Device index or name substring (default: PTXVK_DEVICE, else the best device).
        #[arg(long)]
        device: Option<String>,
        /// Force a warp mode (default: the device's; native needs subgroups of 32,
        /// split of 64).
        #[arg(long, value_enum)]
        warp_mode: Option<WarpModeArg>,
        /// Float arithmetic (default: PTXVK_FLOAT, else exact); see `compile --float`.
        #[arg(long, value_enum)]
        float: Option<FloatArg>,
        /// Check every memory access (`--check` or `--check=memcheck`, as
        /// PTXVK_CHECK=memcheck does): invalid ones do not happen and are reported (exit
        /// code 3). `--check=racecheck` reports shared-memory races between a block's
        /// threads too, `--check=initcheck` reads of device memory nothing wrote. PTXVK_CHECK_LIMIT sets how many are listed.
        #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "memcheck",
              value_name = "TOOLS", value_parser = ptxvk::check::CheckConfig::parse_tools)]
        check: Option<ptxvk::check::CheckConfig>,
    },
    /// Run a program with ptxvk's libcuda.so.1 first on the loader path, so its CUDA
    /// driver API calls (numba-cuda, cuda-python, CUDA programs) run on Vulkan.
    Exec {
        /// Print the folder holding libcuda.so.1 (for LD_LIBRARY_PATH) and exit.
        #[arg(long)]
        print_path: bool,
        /// Print the settings made for CUDA clients (CuPy, numba-cuda, NVIDIA Warp) so
        /// that they hand ptxvk PTX.
        #[arg(long, short)]
        verbose: bool,
        /// Make none of those settings: run the program with only the library path set.
        #[arg(long)]
        no_client_settings: bool,
        /// The program and its arguments.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Run a launch spec on several devices, or against golden outputs recorded
    /// earlier, and report how its output buffers differ: exit code 0 when they agree
    /// within the tolerance, 5 when they do not.
    Compare(CompareOptions),
    /// List Vulkan devices.
    Devices {
        #[arg(long)]
        json: bool,
    },
    /// Check what ptxvk needs on this machine (Vulkan loader, devices and their driver
    /// bugs, SPIRV-Tools, the driver library, optionally a client venv) and say what to
    /// install or change, one line per problem: exit code 0 when nothing is wrong, 1
    /// otherwise.
    Doctor {
        /// A Python environment of CUDA clients to check too (numba-cuda runs a kernel
        /// in it through the driver library).
        #[arg(long)]
        venv: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct CompareOptions {
    /// The launch spec (JSON, as `run --spec` takes it; `"tolerance": {"ulp": N}`
    /// sets the float tolerance).
    spec: PathBuf,
    /// The devices, commas between: a selector (index or name, as `--device`) with
    /// options after `+`: `warp=native|split|emulated`, `float=native`,
    /// `mask=FEATURE:FEATURE` (Vulkan feature names masked on that device only).
    /// Default: the default device.
    #[arg(long, value_delimiter = ',')]
    on: Vec<String>,
    /// Also run the spec's PTX on NVIDIA's CUDA driver (the system's libcuda.so.1,
    /// never ptxvk's own), as the reference the devices are compared with.
    #[arg(long)]
    cuda: bool,
    /// Compare every device's outputs with these, recorded earlier by `--record`.
    #[arg(long)]
    golden: Option<PathBuf>,
    /// Write the first platform's outputs (NVIDIA's with `--cuda`), and what computed
    /// them, to this file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Float buffers may differ by this many ULP (default: the spec's tolerance,
    /// else 0: the same bits).
    #[arg(long)]
    ulp: Option<u64>,
    /// Differing elements listed per buffer.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// The report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum WarpModeArg {
    Native,
    Split,
    Emulated,
}

impl From<WarpModeArg> for WarpMode {
    fn from(m: WarpModeArg) -> WarpMode {
        match m {
            WarpModeArg::Native => WarpMode::Native,
            WarpModeArg::Split => WarpMode::Split,
            WarpModeArg::Emulated => WarpMode::Emulated,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FloatArg {
    /// PTX's results, bit for bit.
    Exact,
    /// Vulkan's `Fma`, `OpFDiv` and `Sqrt` for `fma`, `div`, `rcp` and `sqrt` to nearest:
    /// not exact (Vulkan allows unfused `fma` and inexact division and square root).
    Native,
}

#[derive(Clone, Copy, ValueEnum)]
enum Emit {
    Spv,
    Spvasm,
    Ast,
    /// The linked program as PTX.
    Ptx,
    /// The IR from semantic analysis, before the passes: the same for every device.
    Ir,
    /// The structured IR after every pass, for the warp mode given.
    Structured,
}

/// A failure with its exit code.
struct Failure {
    code: u8,
    error: anyhow::Error,
}

fn usage(e: impl Into<anyhow::Error>) -> Failure {
    Failure { code: 2, error: e.into() }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure { code: e.exit_code() as u8, error: e.into() }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Compile { inputs, output, emit, entry, warp_mode, float, check } => {
            let options = ptxvk::target::Options {
                warp_mode: Some(warp_mode.into()),
                native_float: float == FloatArg::Native,
                check: check.unwrap_or_default(),
            };
            let target = ptxvk::target::target(None, &options);
            compile(&inputs, output.as_deref(), emit, entry.as_deref(), target)
        }
        Command::Run {
            inputs,
            spec,
            entry,
            grid,
            block,
            shared,
            args,
            json,
            device,
            warp_mode,
            float,
            check,
        } => run(
            inputs,
            spec,
            entry,
            grid,
            block,
            shared,
            args,
            json,
            device,
            warp_mode.map(Into::into),
            float.map(|f| f == FloatArg::Native),
            check,
        ),
        Command::Compare(options) => compare(&options),
        Command::Devices { json } => devices(json),
        Command::Doctor { venv } => {
            doctor::run(venv.as_deref()).map_err(|(code, error)| Failure { code, error })
        }
        Command::Exec { print_path, verbose, no_client_settings, command } => {
            let how = exec::How { print_path, verbose, client_settings: !no_client_settings };
            exec::run(how, &command).map_err(|(code, error)| Failure { code, error })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            // PTX diagnostics are already rendered; everything else gets a prefix.
            let rendered = f
                .error
                .downcast_ref::<Error>()
                .is_some_and(|e| matches!(e, Error::Ptx { .. } | Error::Internal { .. }));
            if rendered {
                eprint!("{:#}", f.error);
            } else if f.code == 4 {
                eprintln!("error: {:#}\nnote: this is a bug in ptxvk, not in the PTX; please report it with the PTX", f.error);
            } else {
                eprintln!("error: {:#}", f.error);
            }
            ExitCode::from(f.code)
        }
    }
}

/// Reads PTX files into one source map, in order. Bytes that are not UTF-8 are allowed
/// in comments and strings; anywhere else they are a PTX error (exit 1).
fn read_all(paths: &[PathBuf]) -> Result<SourceMap, Failure> {
    let mut sources = SourceMap::default();
    let mut errors = Vec::new();
    for p in paths {
        let bytes = std::fs::read(p)
            .with_context(|| format!("cannot read {}", p.display()))
            .map_err(usage)?;
        errors.extend(sources.add_bytes(p.display().to_string(), &bytes).1);
    }
    if !errors.is_empty() {
        return Err(ptxvk::compile::rejected(&sources, ptxvk::Diagnostics(errors)).into());
    }
    Ok(sources)
}

fn compile(
    inputs: &[PathBuf],
    output: Option<&Path>,
    emit: Emit,
    entry: Option<&str>,
    target: ptxvk::compile::Target,
) -> Result<(), Failure> {
    let sources = read_all(inputs)?;
    // A program of device functions without a kernel is a library (a link input): its
    // functions are checked, and there is no code to write.
    if entry.is_none() && !matches!(emit, Emit::Ast | Emit::Ptx) {
        if let Some(library) = ptxvk::compile::check_library(&sources, target)? {
            let n = library.functions.len();
            eprintln!(
                "note: the program has no kernel (`.entry`): it is a library, a link input; \
                 its {n} function{} compiled, and no output was written",
                if n == 1 { "" } else { "s" }
            );
            return Ok(());
        }
    }
    let lower = || -> Result<_, Failure> {
        let (_, kernels) = ptxvk::compile::lower_linked(&sources, entry, target)?;
        if kernels.is_empty() {
            return Err(ptxvk::compile::no_kernels(&sources).into());
        }
        Ok(kernels)
    };
    let out: Vec<u8> = match emit {
        Emit::Ast => format!("{:#?}\n", ptxvk::compile::parse_linked(&sources)?).into_bytes(),
        Emit::Ptx => ptxvk::compile::link_to_ptx(&sources, None)?.into_bytes(),
        Emit::Ir => {
            let kernels = ptxvk::compile::analyze_linked(&sources, entry)?;
            if kernels.is_empty() {
                return Err(ptxvk::compile::no_kernels(&sources).into());
            }
            kernels.iter().map(ptxvk::lower::text::print).collect::<String>().into_bytes()
        }
        Emit::Structured => lower()?
            .iter()
            .map(|k| ptxvk::lower::text::print_structured(&k.kernel, &k.body))
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
        Emit::Spv | Emit::Spvasm => {
            let c = ptxvk::compile::compile_linked(&sources, entry, target)?;
            if c.kernels.is_empty() {
                return Err(ptxvk::compile::no_kernels(&sources).into());
            }
            if matches!(emit, Emit::Spv) {
                c.spirv.words.iter().flat_map(|w| w.to_le_bytes()).collect()
            } else {
                ptxvk::spirv::disassemble(&c.spirv.words).map_err(Error::from)?.into_bytes()
            }
        }
    };
    // `IN.spv` next to the first input.
    let default_out =
        inputs.first().filter(|_| matches!(emit, Emit::Spv)).map(|i| i.with_extension("spv"));
    match output.map(Path::to_path_buf).or(default_out) {
        Some(p) if p.as_os_str() != "-" => std::fs::write(&p, &out)
            .with_context(|| format!("cannot write {}", p.display()))
            .map_err(|e| Failure { code: 3, error: e })?,
        _ => std::io::stdout().write_all(&out).map_err(|e| Failure { code: 3, error: e.into() })?,
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run(
    inputs: Vec<PathBuf>,
    spec_path: Option<PathBuf>,
    entry: Option<String>,
    grid: Option<String>,
    block: Option<String>,
    shared: u32,
    args: Vec<String>,
    json: bool,
    device: Option<String>,
    warp_mode: Option<WarpMode>,
    native_float: Option<bool>,
    check: Option<ptxvk::check::CheckConfig>,
) -> Result<(), Failure> {
    let spec = match spec_path {
        Some(p) => spec::load(&p).map_err(|e| usage(anyhow::anyhow!(e)))?,
        None => {
            if inputs.is_empty() {
                return Err(usage(anyhow::anyhow!("give a PTX file, or --spec LAUNCH.json")));
            }
            let ptx = inputs;
            let grid = grid.ok_or_else(|| usage(anyhow::anyhow!("--grid X[,Y,Z] is required")))?;
            let block =
                block.ok_or_else(|| usage(anyhow::anyhow!("--block X[,Y,Z] is required")))?;
            LaunchSpec {
                ptx,
                entry,
                grid: spec::parse_dims(&grid).map_err(|e| usage(anyhow::anyhow!("--grid: {e}")))?,
                block: spec::parse_dims(&block)
                    .map_err(|e| usage(anyhow::anyhow!("--block: {e}")))?,
                shared_bytes: shared,
                args: args
                    .iter()
                    .map(|a| spec::parse_short_arg(a))
                    .collect::<Result<_, _>>()
                    .map_err(|e| usage(anyhow::anyhow!("--arg {e}")))?,
            }
        }
    };
    let sources = read_all(&spec.ptx)?;
    // Compile first: rejected PTX (exit 1) and unknown kernels (exit 2) do not depend
    // on the device.
    let (compiled, entry) = ptxvk::run::prepare(&spec, &sources)?;
    let selector = device.map_or_else(DeviceSelector::from_env, |d| DeviceSelector::parse(&d));
    let mut device = Device::open(&selector)?;
    if let Some(check) = check {
        device.set_check(ptxvk::check::CheckConfig { limit: device.check().limit, ..check });
    }
    // The device's target (its warp mode unless one is forced); compiled again when it
    // is not the portable target `prepare` used.
    let own = device.options();
    let options = ptxvk::target::Options {
        warp_mode,
        native_float: native_float.unwrap_or(own.native_float),
        ..own
    };
    let target = device.target_with(&options)?;
    let compiled = if target == compiled.target {
        compiled
    } else {
        ptxvk::compile::compile_linked(&sources, Some(&entry), target)?
    };
    let result = match ptxvk::run::run(&device, &spec, compiled, &entry) {
        // The printf output up to a trap, failed assertion or refused access still goes
        // to stdout.
        Err(e @ (ptxvk::Error::KernelFailed { .. } | ptxvk::Error::CheckFailed { .. })) => {
            if let ptxvk::Error::KernelFailed { output, .. }
            | ptxvk::Error::CheckFailed { output, .. } = &e
            {
                print!("{output}");
            }
            return Err(e.into());
        }
        r => r?,
    };
    if json {
        println!("{}", result.to_json());
    } else {
        print!("{}", result.printf);
        println!("device: {}", result.device);
        println!("entry: {}", result.entry);
        println!("warp mode: {}", result.warp_mode);
        println!("float: {}", result.float);
        println!("kernel time: {:.3} ms", result.kernel_ms);
        for b in &result.buffers {
            let data = spec::decode_all(b.ty, &b.bytes);
            let shown: Vec<String> = data.iter().take(16).map(|v| v.to_string()).collect();
            let more = if data.len() > 16 {
                format!(", … ({} elements)", data.len())
            } else {
                String::new()
            };
            println!("arg {} ({}): [{}{}]", b.arg, b.ty.name(), shown.join(", "), more);
        }
    }
    Ok(())
}

/// `ptxvk compare`: the spec on each device of `on`, each compared with the golden
/// outputs, or with the first device.
fn compare(options: &CompareOptions) -> Result<(), Failure> {
    use ptxvk::compare::{spec_tolerance, DeviceChoice, Golden, Platform, Tolerance};
    let CompareOptions { spec: spec_path, on, cuda, golden, record, ulp, limit, json } = options;
    let (limit, json) = (*limit, *json);
    let text = std::fs::read_to_string(spec_path)
        .with_context(|| format!("cannot read {}", spec_path.display()))
        .map_err(usage)?;
    let spec = spec::load(spec_path).map_err(|e| usage(anyhow::anyhow!(e)))?;
    let tolerance = match ulp {
        Some(ulp) => Tolerance { ulp: *ulp },
        None => spec_tolerance(&text)
            .map_err(|e| usage(anyhow::anyhow!("{}: {e}", spec_path.display())))?,
    };
    let listed: Vec<&str> =
        if on.is_empty() { vec![""] } else { on.iter().map(String::as_str).collect() };
    let mut platforms = Vec::new();
    if *cuda {
        // NVIDIA's driver first: the reference the devices are compared with (and what
        // --record writes).
        platforms.push(Platform::NativeCuda(ptxvk::native_cuda::CudaLibrary::System));
    }
    for d in listed {
        let choice = DeviceChoice::parse(d).map_err(|e| usage(anyhow::anyhow!("--on {e}")))?;
        platforms.push(Platform::Vulkan(choice));
    }
    let golden = match golden {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))
                .map_err(usage)?;
            let g = Golden::from_json(&text)
                .map_err(|e| usage(anyhow::anyhow!("{}: {e}", path.display())))?;
            Some((format!("golden {} ({})", path.display(), g.device), g))
        }
        None => None,
    };
    if golden.is_none() && platforms.len() < 2 && record.is_none() {
        return Err(usage(anyhow::anyhow!(
            "nothing to compare: give two devices (--on A,B), --cuda, golden outputs \
             (--golden FILE), or --record FILE"
        )));
    }
    let sources = read_all(&spec.ptx)?;
    let reference = golden.as_ref().map(|(label, g)| (label.as_str(), g));
    let (report, runs) =
        ptxvk::compare::compare_spec(&spec, &sources, &platforms, reference, tolerance, limit)?;
    if let (Some(path), Some(first)) = (record, runs.first()) {
        let recorded = Golden::from_run(first).to_json();
        let pretty =
            serde_json::to_string_pretty(&recorded).map_err(|e| usage(anyhow::anyhow!(e)))?;
        std::fs::write(path, pretty + "\n")
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(|error| Failure { code: 3, error })?;
    }
    if json {
        println!("{}", serde_json::to_value(&report).map_err(|e| usage(anyhow::anyhow!(e)))?);
    } else {
        println!("reference: {}", report.reference);
        for ptxvk::compare::DeviceComparison { device, comparison: c } in &report.comparisons {
            println!("{device}:");
            for ptxvk::compare::ArgComparison { arg, buffer: b } in &c.buffers {
                println!(
                    "  arg {arg} ({}, {} elements): {}",
                    b.ty,
                    b.elements,
                    buffer_verdict(b, tolerance)
                );
                for d in &b.first {
                    let distance = match d.distance {
                        ptxvk::compare::Distance::Ulp(u) => format!("{u} ULP"),
                        ptxvk::compare::Distance::Incomparable => "NaN against a number".into(),
                        ptxvk::compare::Distance::Xor(x) => format!("XOR {x:#x}"),
                    };
                    println!(
                        "    [{}] {} vs {} ({:#x} vs {:#x}): {distance}",
                        d.index, d.right, d.left, d.right_bits, d.left_bits
                    );
                }
            }
            for arg in &c.unmatched {
                println!("  arg {arg}: only one side has this buffer");
            }
        }
        println!("verdict: {}", if report.agrees { "agree" } else { "differ" });
    }
    if report.agrees {
        Ok(())
    } else {
        Err(Failure { code: 5, error: anyhow::anyhow!("the outputs differ beyond the tolerance") })
    }
}

/// One buffer's comparison in words.
fn buffer_verdict(
    b: &ptxvk::compare::BufferComparison,
    tolerance: ptxvk::compare::Tolerance,
) -> String {
    if b.exact() {
        return "exact match".to_string();
    }
    let mut out = String::new();
    if let Some((l, r)) = b.lengths {
        out.push_str(&format!("lengths differ ({r} against {l} elements); "));
    }
    out.push_str(&format!("{} differ", b.differing));
    if let (Some(max), Some(mean)) = (b.max_ulp, b.mean_ulp) {
        out.push_str(&format!(", max {max} ULP, mean {mean:.3} ULP"));
    }
    let bound = if tolerance.ulp == 0 {
        "the same bits".to_string()
    } else {
        format!("{} ULP", tolerance.ulp)
    };
    out.push_str(&format!(": {} tolerance ({bound})", if b.agrees { "within" } else { "beyond" }));
    out
}

/// What a device gets: its warp mode and why, its float strategy, and what the
/// driver-bug probes found. Opening the device runs the probes (`Device::open`; their
/// answers are cached per device and driver); a device that does not open is described
/// from its properties alone, with no probe results.
struct Profile {
    mode: &'static str,
    why: String,
    float: &'static str,
    probes: Vec<ptxvk::probes::ProbeReport>,
}

fn profile(d: &ptxvk::vk::DeviceInfo) -> Result<Profile, Failure> {
    Ok(match ptxvk::Device::open(&DeviceSelector::Index(d.index)) {
        Ok(dev) => Profile {
            mode: dev.warp_mode().name(),
            why: dev.warp_reason().to_string(),
            float: dev.target().float_strategy(),
            probes: dev.findings().report(dev.info()),
        },
        // A bad setting is the user's to fix, not a device to describe otherwise.
        Err(e @ Error::Config(_)) => return Err(e.into()),
        Err(_) => {
            let facts = ptxvk::target::DeviceFacts::unprobed(d);
            let options = ptxvk::target::Options::default();
            let float = ptxvk::target::target(Some(&facts), &options).float_strategy();
            let why = facts.warp_reason.to_string();
            Profile { mode: facts.warp_mode.name(), why, float, probes: Vec::new() }
        }
    })
}

fn devices(json: bool) -> Result<(), Failure> {
    let list = ptxvk::vk::enumerate_devices().map_err(|e| Failure { code: 3, error: e.into() })?;
    if json {
        let v: Vec<serde_json::Value> = list
            .iter()
            .map(|d| {
                let Profile { mode, why, float, probes } = profile(d)?;
                Ok(serde_json::json!({
                    "index": d.index,
                    "name": d.name,
                    "type": format!("{:?}", d.device_type),
                    "api_version": format!("{}.{}.{}", d.api_version.0, d.api_version.1, d.api_version.2),
                    "driver": d.driver_name,
                    "driver_info": d.driver_info,
                    "subgroup_size": d.subgroup_size,
                    "warp_mode": mode,
                    "warp_reason": why,
                    "required_subgroup_sizes": d.required_subgroup_sizes.map(|s| [s.min, s.max]),
                    "float": float,
                    "max_shared_memory_bytes": d.limits.max_shared_memory_bytes,
                    "max_workgroup_invocations": d.limits.max_workgroup_invocations,
                    "features": d.features.names(),
                    "probes": probes,
                }))
            })
            .collect::<Result<_, Failure>>()?;
        println!("{}", serde_json::Value::Array(v));
    } else {
        for d in &list {
            let Profile { mode, why, float, probes } = profile(d)?;
            println!(
                "{}: {} ({:?}, Vulkan {}.{}.{}, {} {}, subgroup size {}, warp mode {mode}, float {float})",
                d.index,
                d.name,
                d.device_type,
                d.api_version.0,
                d.api_version.1,
                d.api_version.2,
                d.driver_name,
                d.driver_info,
                d.subgroup_size,
            );
            println!("   warp mode {mode}: {why}");
            for p in &probes {
                println!("   probe {}: {}: {}", p.name, p.status, p.summary);
                for detail in &p.details {
                    println!("      {detail}");
                }
            }
        }
        if list.is_empty() {
            println!("no Vulkan devices");
        }
    }
    Ok(())
}
