//! Comparing the outputs of one launch made twice (issue #18, `ptxvk compare`): on two
//! Vulkan devices, on NVIDIA's CUDA driver and a device ([`Platform::NativeCuda`], whose
//! client is `ptxvk_native_cuda`), or on a device and in a golden file recorded
//! earlier. The unit is one
//! buffer of a launch spec's element type: how many elements differ, the first few with
//! both values, their distance (units in the last place for floats, the XOR of the bits
//! for integers), the largest and the mean distance, and a verdict against a tolerance.
//!
//! Distances in ULP count the representable values between two floats of the same
//! format: the bit patterns are mapped to integers in the order of the values they
//! stand for (sign and magnitude to two's complement), so 1.0 and the next float up
//! are 1 ULP apart, the largest finite value and infinity too, and +0 and −0 are 0 ULP
//! apart though their bits differ. Two NaNs are 0 ULP apart; a NaN and a number are not
//! comparable ([`Distance::Incomparable`]).

use serde::Serialize;
use serde_json::{json, Value};

use crate::compile::WarpMode;
use crate::run::{BufferResult, RunResult};
use crate::runtime::Device;
use crate::spec::{ElemType, LaunchSpec, SpecArg};
use crate::{Error, SourceMap};
use ptxvk_native_cuda::{CudaLibrary, DriverInfo, NativeArg, NativeCuda};

/// How far apart two buffers may be and still agree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tolerance {
    /// Floats may differ by at most this many ULP; 0 asks for the same bits, which is
    /// also what integers always need.
    pub ulp: u64,
}

/// The distance between two elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Distance {
    /// Floats: the ULP between them (module doc).
    Ulp(u64),
    /// A NaN and a number.
    Incomparable,
    /// Integers: the bits that differ.
    Xor(u64),
}

/// One element that differs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ElementDifference {
    pub index: usize,
    /// Both values as JSON (`spec::ElemType::decode`) and as bits.
    pub left: serde_json::Value,
    pub right: serde_json::Value,
    pub left_bits: u64,
    pub right_bits: u64,
    pub distance: Distance,
}

/// How one buffer compares.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BufferComparison {
    #[serde(rename = "type")]
    pub ty: &'static str,
    /// Elements compared (of the shorter side, when the lengths differ).
    pub elements: usize,
    /// The two lengths in elements, when they differ (which never agrees).
    pub lengths: Option<(usize, usize)>,
    /// Elements whose bits differ.
    pub differing: usize,
    /// The first differing elements, at most the limit asked for.
    pub first: Vec<ElementDifference>,
    /// Floats: the largest distance in ULP (`None` for integers, or when a NaN met a
    /// number) and the mean over all elements compared.
    pub max_ulp: Option<u64>,
    pub mean_ulp: Option<f64>,
    /// Whether the buffers agree within the tolerance.
    pub agrees: bool,
}

impl BufferComparison {
    /// Whether the buffers hold the same bits.
    pub fn exact(&self) -> bool {
        self.differing == 0 && self.lengths.is_none()
    }
}

/// The bits of element `i` of `bytes` (little-endian).
fn bits(ty: ElemType, bytes: &[u8], i: usize) -> u64 {
    let n = ty.size();
    let mut a = [0u8; 8];
    a[..n].copy_from_slice(&bytes[i * n..(i + 1) * n]);
    u64::from_le_bytes(a)
}

/// Sign bit, exponent-all-ones mask and mantissa mask of a float format, by width.
fn layout(ty: ElemType) -> Option<(u64, u64, u64)> {
    match ty {
        ElemType::F16 => Some((1 << 15, 0x7c00, 0x3ff)),
        ElemType::Bf16 => Some((1 << 15, 0x7f80, 0x7f)),
        ElemType::F32 => Some((1 << 31, 0x7f80_0000, 0x7f_ffff)),
        ElemType::F64 => Some((1 << 63, 0x7ff0_0000_0000_0000, (1 << 52) - 1)),
        _ => None,
    }
}

/// The distance between two elements of type `ty` given as bits.
pub fn distance(ty: ElemType, a: u64, b: u64) -> Distance {
    let Some((sign, exponent, mantissa)) = layout(ty) else {
        return Distance::Xor(a ^ b);
    };
    let nan = |x: u64| x & exponent == exponent && x & mantissa != 0;
    match (nan(a), nan(b)) {
        (true, true) => return Distance::Ulp(0),
        (true, false) | (false, true) => return Distance::Incomparable,
        (false, false) => {}
    }
    // Sign and magnitude to a signed integer in the order of the values.
    let key = |x: u64| {
        let magnitude = i128::from(x & !sign);
        if x & sign != 0 {
            -magnitude
        } else {
            magnitude
        }
    };
    Distance::Ulp((key(a) - key(b)).unsigned_abs() as u64)
}

/// Compares buffer `left` with `right`, both of elements of type `ty`, listing at most
/// `limit` differing elements.
pub fn compare_buffer(
    ty: ElemType,
    left: &[u8],
    right: &[u8],
    tolerance: Tolerance,
    limit: usize,
) -> BufferComparison {
    let size = ty.size();
    let (nl, nr) = (left.len() / size, right.len() / size);
    let elements = nl.min(nr);
    let float = layout(ty).is_some();
    let (mut differing, mut first) = (0, Vec::new());
    let (mut max_ulp, mut sum_ulp, mut incomparable) = (0u64, 0f64, false);
    let mut within = true;
    for i in 0..elements {
        let (a, b) = (bits(ty, left, i), bits(ty, right, i));
        if a == b {
            continue;
        }
        differing += 1;
        let d = distance(ty, a, b);
        match d {
            Distance::Ulp(u) => {
                max_ulp = max_ulp.max(u);
                sum_ulp += u as f64;
                // A tolerance of 0 asks for the same bits (+0 and −0 are 0 ULP apart).
                within &= tolerance.ulp > 0 && u <= tolerance.ulp;
            }
            Distance::Incomparable => {
                incomparable = true;
                within = false;
            }
            Distance::Xor(_) => within = false,
        }
        if first.len() < limit {
            let at = |bytes: &[u8]| ty.decode(&bytes[i * size..(i + 1) * size]);
            first.push(ElementDifference {
                index: i,
                left: at(left),
                right: at(right),
                left_bits: a,
                right_bits: b,
                distance: d,
            });
        }
    }
    let lengths = (nl != nr).then_some((nl, nr));
    BufferComparison {
        ty: ty.name(),
        elements,
        lengths,
        differing,
        first,
        max_ulp: (float && !incomparable).then_some(max_ulp),
        mean_ulp: (float && !incomparable && elements > 0).then(|| sum_ulp / elements as f64),
        agrees: within && lengths.is_none(),
    }
}

/// How the buffers of two runs of one launch compare.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunComparison {
    /// Per buffer argument, in order.
    pub buffers: Vec<ArgComparison>,
    /// Buffer arguments only one side has (a golden file of another spec).
    pub unmatched: Vec<usize>,
    /// Whether every buffer agrees within the tolerance, and none is unmatched.
    pub agrees: bool,
}

/// One buffer argument's comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArgComparison {
    /// The argument's position in the kernel's parameters.
    pub arg: usize,
    #[serde(flatten)]
    pub buffer: BufferComparison,
}

/// Compares the buffers of run `left` with those of run `right` of the same launch.
pub fn compare_runs(
    left: &[BufferResult],
    right: &[BufferResult],
    tolerance: Tolerance,
    limit: usize,
) -> RunComparison {
    let mut buffers = Vec::new();
    let mut unmatched = Vec::new();
    for l in left {
        match right.iter().find(|r| r.arg == l.arg && r.ty == l.ty) {
            Some(r) => buffers.push(ArgComparison {
                arg: l.arg,
                buffer: compare_buffer(l.ty, &l.bytes, &r.bytes, tolerance, limit),
            }),
            None => unmatched.push(l.arg),
        }
    }
    unmatched.extend(right.iter().filter(|r| !left.iter().any(|l| l.arg == r.arg)).map(|r| r.arg));
    unmatched.sort_unstable();
    let agrees = unmatched.is_empty() && buffers.iter().all(|b| b.buffer.agrees);
    RunComparison { buffers, unmatched, agrees }
}

/// One device of `ptxvk compare --on`: a device selector (`ptxvk run --device`'s) with
/// options after `+`: `warp=native|split|emulated` forces a warp mode, `float=native`
/// Vulkan's float operations, `mask=F1:F2` masks Vulkan features on this device only
/// (`PTXVK_MASK_FEATURES`'s names). `0+mask=shaderFloat64` is the first device run as
/// if it had no f64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceChoice {
    /// As given, to name the device in reports.
    pub label: String,
    pub selector: crate::vk::DeviceSelector,
    pub warp_mode: Option<WarpMode>,
    pub native_float: bool,
    /// Features to mask, commas between.
    pub mask: String,
}

impl DeviceChoice {
    pub fn parse(s: &str) -> Result<DeviceChoice, String> {
        let mut parts = s.trim().split('+');
        let selector = crate::vk::DeviceSelector::parse(parts.next().unwrap_or(""));
        let mut choice = DeviceChoice {
            label: s.trim().to_string(),
            selector,
            warp_mode: None,
            native_float: false,
            mask: String::new(),
        };
        for option in parts {
            match option.split_once('=') {
                Some(("warp", m)) => {
                    choice.warp_mode = Some(match m {
                        "native" => WarpMode::Native,
                        "split" => WarpMode::Split,
                        "emulated" => WarpMode::Emulated,
                        _ => {
                            return Err(format!(
                                "`{s}`: warp mode `{m}` is not native, split or emulated"
                            ))
                        }
                    })
                }
                Some(("float", "native")) => choice.native_float = true,
                Some(("float", "exact")) => choice.native_float = false,
                Some(("mask", list)) => choice.mask = list.replace(':', ","),
                _ => {
                    return Err(format!(
                        "`{s}`: unknown option `{option}` (expected warp=MODE, float=exact|native, \
                         mask=FEATURE:FEATURE)"
                    ))
                }
            }
        }
        Ok(choice)
    }

    /// Runs `spec` (whose PTX is `sources`) on this device, as `ptxvk run` would with the
    /// options.
    pub fn run(&self, spec: &LaunchSpec, sources: &SourceMap) -> Result<RunResult, Error> {
        let (compiled, entry) = crate::run::prepare(spec, sources)?;
        let device = Device::open_masked(&self.selector, &self.mask)?;
        let own = device.options();
        let options = crate::target::Options {
            warp_mode: self.warp_mode,
            // `float=exact` keeps the device's `PTXVK_FLOAT`.
            native_float: own.native_float || self.native_float,
            ..own
        };
        let target = device.target_with(&options)?;
        let compiled = if target == compiled.target {
            compiled
        } else {
            crate::compile::compile_linked(sources, Some(&entry), target)?
        };
        crate::run::run(&device, spec, compiled, &entry)
    }
}

/// Where [`compare_spec`] runs a launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Platform {
    /// A Vulkan device, through ptxvk's compiler and runtime.
    Vulkan(DeviceChoice),
    /// A CUDA driver (`ptxvk compare --cuda`: NVIDIA's, [`CudaLibrary::System`]) running
    /// the spec's PTX as it is, JIT-compiled by the driver, on its first GPU.
    NativeCuda(CudaLibrary),
}

impl Platform {
    /// Runs `spec` (whose PTX is `sources`) here.
    pub fn run(&self, spec: &LaunchSpec, sources: &SourceMap) -> Result<RunResult, Error> {
        match self {
            Platform::Vulkan(choice) => choice.run(spec, sources),
            Platform::NativeCuda(library) => run_native(library, spec, sources),
        }
    }

    /// How a report names this platform before it ran.
    fn label(&self) -> &str {
        match self {
            Platform::Vulkan(c) if c.label.is_empty() => "default",
            Platform::Vulkan(c) => &c.label,
            Platform::NativeCuda(_) => "cuda",
        }
    }
}

/// `spec` on a CUDA driver: the kernel is the spec's entry, or the module's only one
/// (found by parsing, so that PTX ptxvk's compiler rejects still runs there).
fn run_native(
    library: &CudaLibrary,
    spec: &LaunchSpec,
    sources: &SourceMap,
) -> Result<RunResult, Error> {
    let module = crate::compile::parse_linked(sources)?;
    let entry = crate::run::pick_entry(spec, crate::compile::entry_names(&module))?;
    let texts: Vec<&str> = (0..sources.len()).map(|i| &sources.text()[sources.range(i)]).collect();
    let args: Vec<NativeArg<'_>> = spec
        .args
        .iter()
        .map(|a| match a {
            SpecArg::Buffer { bytes, .. } => Ok(NativeArg::Buffer(bytes)),
            SpecArg::Uninitialized { ty, len } => {
                Ok(NativeArg::Uninitialized(len * ty.size() as u64))
            }
            SpecArg::Value(v) => Ok(NativeArg::Value(v)),
            // The shape, format and sampler state of the driver's array and texture (or
            // surface) object; where the texels live is the driver's business.
            SpecArg::Texture { ty, bytes, sampler } => Ok(NativeArg::Texture {
                texels: bytes,
                desc: sampler.desc(*ty, 0).map_err(Error::Launch)?,
                surface: sampler.surface,
            }),
        })
        .collect::<Result<_, Error>>()?;
    let cuda = NativeCuda::open(library, 0)?;
    let ran = cuda.run(&texts, &entry, spec.grid, spec.block, spec.shared_bytes, &args)?;
    let buffers = spec
        .args
        .iter()
        .enumerate()
        .filter_map(|(arg, a)| match a {
            SpecArg::Buffer { ty, .. }
            | SpecArg::Uninitialized { ty, .. }
            | SpecArg::Texture { ty, .. } => Some((arg, *ty)),
            SpecArg::Value(_) => None,
        })
        .zip(ran.buffers)
        .map(|((arg, ty), bytes)| BufferResult { arg, ty, bytes })
        .collect();
    let info = cuda.info().clone();
    Ok(RunResult {
        device: native_device_name(&info),
        entry,
        kernel_ms: ran.kernel_ms,
        warp_mode: "native".into(),
        float: "native".into(),
        printf: String::new(),
        buffers,
        driver: Some(info),
    })
}

/// `NVIDIA GeForce RTX 4090 (sm_89, CUDA driver 12.4)`.
fn native_device_name(info: &DriverInfo) -> String {
    let (major, minor) = info.compute_capability;
    format!("{} (sm_{major}{minor}, CUDA driver {})", info.device, info.version_text())
}

/// A driver's description in a golden file or a `--json` report.
pub fn driver_json(info: &DriverInfo) -> Value {
    let (major, minor) = info.compute_capability;
    json!({
        "library": info.library,
        "ptxvk": info.ptxvk,
        "version": info.version_text(),
        "version_number": info.version,
        "device": info.device,
        "compute_capability": format!("{major}.{minor}"),
    })
}

/// [`driver_json`] read back.
fn driver_from_json(v: &Value) -> Result<DriverInfo, String> {
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(format!("\"driver\" needs \"{k}\""))
    };
    let capability = text("compute_capability")?;
    let compute_capability = capability
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .ok_or(format!("\"compute_capability\" `{capability}` is not MAJOR.MINOR"))?;
    let version =
        v.get("version_number").and_then(Value::as_i64).and_then(|n| i32::try_from(n).ok());
    Ok(DriverInfo {
        library: text("library")?,
        ptxvk: v.get("ptxvk").and_then(Value::as_bool).unwrap_or(false),
        version: version.ok_or("\"driver\" needs \"version_number\"")?,
        device: text("device")?,
        compute_capability,
    })
}

/// Outputs recorded once (`ptxvk compare --record`), to compare later runs with
/// (`--golden`): the spec's buffers after the launch, and where they were computed.
#[derive(Clone, Debug, PartialEq)]
pub struct Golden {
    /// The device that computed them.
    pub device: String,
    /// On a CUDA driver (`--cuda --record`): which.
    pub driver: Option<DriverInfo>,
    pub entry: String,
    pub buffers: Vec<BufferResult>,
}

impl Golden {
    pub fn from_run(run: &RunResult) -> Golden {
        Golden {
            device: run.device.clone(),
            driver: run.driver.clone(),
            entry: run.entry.clone(),
            buffers: run.buffers.clone(),
        }
    }

    pub fn to_json(&self) -> Value {
        let buffers: Vec<Value> = self
            .buffers
            .iter()
            .map(|b| json!({"arg": b.arg, "type": b.ty.name(), "hex": crate::spec::hex_encode(&b.bytes)}))
            .collect();
        let mut v = json!({"golden": 1, "device": self.device});
        if let Some(driver) = &self.driver {
            v["driver"] = driver_json(driver);
        }
        v["entry"] = json!(self.entry);
        v["buffers"] = json!(buffers);
        v
    }

    pub fn from_json(text: &str) -> Result<Golden, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(device), Some(entry)) = (field("device"), field("entry")) else {
            return Err("a golden file needs \"device\" and \"entry\"".into());
        };
        let list =
            v.get("buffers").and_then(Value::as_array).ok_or("a golden file needs \"buffers\"")?;
        let mut buffers = Vec::new();
        for (i, b) in list.iter().enumerate() {
            let arg =
                b.get("arg").and_then(Value::as_u64).ok_or(format!("buffers[{i}]: no \"arg\""))?;
            let ty = b.get("type").and_then(Value::as_str).and_then(ElemType::parse);
            let ty = ty.ok_or(format!("buffers[{i}]: no known \"type\""))?;
            let hex =
                b.get("hex").and_then(Value::as_str).ok_or(format!("buffers[{i}]: no \"hex\""))?;
            let bytes = crate::spec::hex_decode(hex).map_err(|e| format!("buffers[{i}]: {e}"))?;
            buffers.push(BufferResult { arg: arg as usize, ty, bytes });
        }
        let driver = v.get("driver").map(driver_from_json).transpose()?;
        Ok(Golden { device, driver, entry, buffers })
    }
}

/// One device's comparison with the reference.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceComparison {
    /// The device as `--on` named it, what it is, and how the spec was compiled for it.
    pub device: String,
    pub comparison: RunComparison,
}

/// What [`compare_spec`] found: the reference (golden outputs, else the first device)
/// and each other device's comparison with it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompareReport {
    pub reference: String,
    pub tolerance: Tolerance,
    pub comparisons: Vec<DeviceComparison>,
    pub agrees: bool,
}

/// `ptxvk compare` as a library call: runs `spec` (whose PTX is `sources`) on each of
/// `platforms`, and compares every run with `golden` (its label and outputs) when given,
/// else every later run with the first. Returns the report and the runs, in order.
pub fn compare_spec(
    spec: &LaunchSpec,
    sources: &SourceMap,
    platforms: &[Platform],
    golden: Option<(&str, &Golden)>,
    tolerance: Tolerance,
    limit: usize,
) -> Result<(CompareReport, Vec<RunResult>), Error> {
    let mut runs = Vec::new();
    let mut labels = Vec::new();
    for platform in platforms {
        let run = platform.run(spec, sources)?;
        let label = platform.label();
        labels.push(match &run.driver {
            Some(d) => format!("{label}: {} from {}", run.device, d.library),
            None => {
                format!("{label}: {} (warps {}, float {})", run.device, run.warp_mode, run.float)
            }
        });
        runs.push(run);
    }
    let (reference, reference_buffers, skip) = match golden {
        Some((label, g)) => (label.to_string(), g.buffers.clone(), 0),
        None => match (labels.first(), runs.first()) {
            (Some(label), Some(run)) => (label.clone(), run.buffers.clone(), 1),
            _ => {
                return Ok((
                    CompareReport {
                        reference: String::new(),
                        tolerance,
                        comparisons: Vec::new(),
                        agrees: true,
                    },
                    runs,
                ))
            }
        },
    };
    let comparisons: Vec<DeviceComparison> = labels
        .iter()
        .zip(&runs)
        .skip(skip)
        .map(|(device, run)| DeviceComparison {
            device: device.clone(),
            comparison: compare_runs(&reference_buffers, &run.buffers, tolerance, limit),
        })
        .collect();
    let agrees = comparisons.iter().all(|c| c.comparison.agrees);
    Ok((CompareReport { reference, tolerance, comparisons, agrees }, runs))
}

/// The tolerance a launch spec asks for: `"tolerance": {"ulp": N}`, else bit-exact.
pub fn spec_tolerance(spec_text: &str) -> Result<Tolerance, String> {
    let v: Value = serde_json::from_str(spec_text).map_err(|e| format!("not JSON: {e}"))?;
    match v.get("tolerance") {
        None => Ok(Tolerance::default()),
        Some(t) => {
            let ulp = t.get("ulp").and_then(Value::as_u64);
            ulp.map(|ulp| Tolerance { ulp })
                .ok_or_else(|| "\"tolerance\" must be {\"ulp\": N}".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ULP distance of two finite f32 values by stepping from the smaller to the
    /// larger with `next_up` (an independent model for small distances).
    fn steps(a: f32, b: f32) -> u64 {
        let (mut x, hi) = if a <= b { (a, b) } else { (b, a) };
        let mut n = 0;
        while x < hi {
            x = x.next_up();
            n += 1;
        }
        n
    }

    #[test]
    fn ulp_distances_count_the_floats_between() {
        let cases = [
            (1.0f32, 1.0f32.next_up()),
            (1.0, 1.0000005),
            (-1.0f32.next_up(), -1.0f32.next_down()),
            (-f32::from_bits(3), f32::from_bits(5)),
            (f32::MAX, f32::MAX.next_down().next_down()),
            (0.0, f32::from_bits(1)),
        ];
        for (a, b) in cases {
            let d = distance(ElemType::F32, u64::from(a.to_bits()), u64::from(b.to_bits()));
            // Across zero, `next_up` passes −0 and +0 as one value, as the mapping does.
            assert_eq!(d, Distance::Ulp(steps(a, b)), "{a} {b}");
        }
        let bits = |x: f32| u64::from(x.to_bits());
        assert_eq!(distance(ElemType::F32, bits(0.0), bits(-0.0)), Distance::Ulp(0));
        assert_eq!(distance(ElemType::F32, bits(f32::MAX), bits(f32::INFINITY)), Distance::Ulp(1));
        assert_eq!(distance(ElemType::F32, bits(f32::NAN), bits(-f32::NAN)), Distance::Ulp(0));
        assert_eq!(distance(ElemType::F32, bits(f32::NAN), bits(1.0)), Distance::Incomparable);
        let h = |x: f32| u64::from(half::f16::from_f32(x).to_bits());
        assert_eq!(distance(ElemType::F16, h(1.0), h(1.0 + 2.0 / 1024.0)), Distance::Ulp(2));
        let d = |x: f64| x.to_bits();
        assert_eq!(distance(ElemType::F64, d(2.0), d(2.0f64.next_down())), Distance::Ulp(1));
        assert_eq!(distance(ElemType::U32, 0b1010, 0b0110), Distance::Xor(0b1100));
    }

    #[test]
    fn a_buffer_comparison_lists_counts_and_judges() {
        let floats = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let a = floats(&[1.0, 2.0, 3.0, 4.0]);
        let b = floats(&[1.0, 2.0f32.next_up(), 3.0, 4.0f32.next_down().next_down()]);
        let exact = compare_buffer(ElemType::F32, &a, &a, Tolerance::default(), 10);
        assert!(exact.exact() && exact.agrees && exact.max_ulp == Some(0));
        let c = compare_buffer(ElemType::F32, &a, &b, Tolerance::default(), 1);
        assert_eq!((c.differing, c.first.len(), c.max_ulp), (2, 1, Some(2)));
        assert_eq!(c.first[0].index, 1);
        assert_eq!(c.first[0].distance, Distance::Ulp(1));
        assert_eq!(c.mean_ulp, Some(0.75));
        assert!(!c.agrees, "tolerance 0 asks for the same bits");
        assert!(compare_buffer(ElemType::F32, &a, &b, Tolerance { ulp: 2 }, 10).agrees);
        assert!(!compare_buffer(ElemType::F32, &a, &b, Tolerance { ulp: 1 }, 10).agrees);
        let signed_zero = compare_buffer(
            ElemType::F32,
            &floats(&[0.0]),
            &floats(&[-0.0]),
            Tolerance { ulp: 1 },
            10,
        );
        assert!(signed_zero.agrees && signed_zero.differing == 1);
        let ints =
            compare_buffer(ElemType::U32, &[1, 0, 0, 0], &[3, 0, 0, 0], Tolerance { ulp: 9 }, 10);
        assert_eq!(
            (ints.first[0].distance, ints.agrees, ints.max_ulp),
            (Distance::Xor(2), false, None)
        );
        let short = compare_buffer(ElemType::U32, &[0; 8], &[0; 4], Tolerance::default(), 10);
        assert_eq!((short.lengths, short.agrees, short.elements), (Some((2, 1)), false, 1));
        let nan = compare_buffer(
            ElemType::F32,
            &floats(&[f32::NAN]),
            &floats(&[1.0]),
            Tolerance { ulp: 100 },
            10,
        );
        assert_eq!(
            (nan.agrees, nan.max_ulp, nan.first[0].left.clone()),
            (false, None, serde_json::json!("nan"))
        );
    }

    #[test]
    fn device_choices_and_golden_files_parse() {
        let c = DeviceChoice::parse("0+mask=shaderFloat64:shaderInt16+warp=emulated").unwrap();
        assert_eq!(c.selector, crate::vk::DeviceSelector::Index(0));
        assert_eq!(
            (c.mask.as_str(), c.warp_mode),
            ("shaderFloat64,shaderInt16", Some(WarpMode::Emulated))
        );
        assert!(DeviceChoice::parse("0+warp=wide").is_err());
        assert!(DeviceChoice::parse("llvmpipe+fast").is_err());
        let g = Golden {
            device: "gpu".into(),
            driver: Some(DriverInfo {
                library: "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14".into(),
                ptxvk: false,
                version: 12040,
                device: "NVIDIA L4".into(),
                compute_capability: (8, 9),
            }),
            entry: "k".into(),
            buffers: vec![BufferResult { arg: 2, ty: ElemType::F32, bytes: vec![0, 0, 128, 63] }],
        };
        assert_eq!(Golden::from_json(&g.to_json().to_string()), Ok(g));
        assert!(
            Golden::from_json(r#"{"device": "x", "entry": "k", "buffers": [{"arg": 0}]}"#).is_err()
        );
        assert_eq!(spec_tolerance(r#"{"tolerance": {"ulp": 3}}"#), Ok(Tolerance { ulp: 3 }));
        assert_eq!(spec_tolerance("{}"), Ok(Tolerance::default()));
        assert!(spec_tolerance(r#"{"tolerance": 3}"#).is_err());
    }

    #[test]
    fn runs_compare_buffer_by_buffer_and_name_unmatched_ones() {
        let buffer = |arg, ty, bytes: &[u8]| BufferResult { arg, ty, bytes: bytes.to_vec() };
        let left = [buffer(0, ElemType::U8, &[1, 2]), buffer(2, ElemType::U8, &[3])];
        let same = compare_runs(&left, &left, Tolerance::default(), 4);
        assert!(same.agrees && same.buffers.len() == 2 && same.unmatched.is_empty());
        let right = [buffer(0, ElemType::U8, &[1, 9]), buffer(3, ElemType::U8, &[3])];
        let c = compare_runs(&left, &right, Tolerance::default(), 4);
        assert_eq!(c.unmatched, [2, 3]);
        assert_eq!((c.buffers[0].arg, c.buffers[0].buffer.differing), (0, 1));
        assert!(!c.agrees);
    }
}
