//! Running a [`LaunchSpec`]: what `ptxvk run` does, as a library function so tests and
//! tools get exactly the CLI's behaviour.

use serde_json::{json, Value};

use crate::compile::{compile_linked, Compiled, Target};
use crate::runtime::{Arg, Device, Kernel, LaunchStats, Module};
use crate::spec::{decode_all, hex_encode, ElemType, LaunchSpec, SpecArg};
use crate::Error;
use crate::SourceMap;

/// One buffer argument after the kernel ran.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferResult {
    /// Position of the argument in the kernel's parameter list.
    pub arg: usize,
    pub ty: ElemType,
    pub bytes: Vec<u8>,
}

/// The result of a launch.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    pub device: String,
    pub entry: String,
    pub kernel_ms: f64,
    /// How warps were compiled (`native`, `split`, `emulated`).
    pub warp_mode: String,
    /// How exact f32 arithmetic was computed (`Target::float_strategy`).
    pub float: String,
    /// The kernel's `printf` output (empty from NVIDIA's driver, which prints it to
    /// standard output itself).
    pub printf: String,
    pub buffers: Vec<BufferResult>,
    /// On NVIDIA's driver (`ptxvk compare --cuda`): which driver and GPU.
    pub driver: Option<ptxvk_native_cuda::DriverInfo>,
}

impl RunResult {
    /// The `--json` output object (README, *Launch specs*).
    pub fn to_json(&self) -> Value {
        json!({
            "device": self.device,
            "entry": self.entry,
            "kernel_ms": self.kernel_ms,
            "warp_mode": self.warp_mode,
            "float": self.float,
            "printf": self.printf,
            "buffers": self.buffers.iter().map(|b| json!({
                "arg": b.arg,
                "type": b.ty.name(),
                "hex": hex_encode(&b.bytes),
                "data": decode_all(b.ty, &b.bytes),
            })).collect::<Vec<_>>(),
        })
    }
}

/// Compiles the spec's PTX files (already read into `sources`) and picks its kernel, without a
/// device: rejected PTX and unknown kernel names are reported before any device is
/// opened.
/// With an entry named, only that kernel is compiled: the module's other kernels may
/// be ones ptxvk rejects.
pub fn prepare(spec: &LaunchSpec, sources: &SourceMap) -> Result<(Compiled, String), Error> {
    let compiled = compile_linked(sources, spec.entry.as_deref(), Target::portable())?;
    if compiled.kernels.is_empty() {
        return Err(crate::compile::no_kernels(sources));
    }
    let names: Vec<String> = compiled.spirv.kernels.iter().map(|k| k.name.clone()).collect();
    let entry = pick_entry(spec, names)?;
    Ok((compiled, entry))
}

/// The kernel a spec launches among the module's `names`: the one it names, else the
/// only one.
pub fn pick_entry(spec: &LaunchSpec, names: Vec<String>) -> Result<String, Error> {
    match &spec.entry {
        Some(e) if names.contains(e) => Ok(e.clone()),
        Some(e) => Err(Error::NoSuchKernel { name: e.clone(), available: names }),
        None => match names.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(Error::KernelNotNamed { available: names }),
        },
    }
}

/// A buffer argument's index and its bytes after a launch.
pub type BufferBytes = (usize, Vec<u8>);

/// Uploads every buffer argument of `args`, launches `kernel` (timed) and waits, then
/// reads the buffers back: the launch statistics and `(argument index, bytes)` of each
/// buffer.
pub fn launch_with_args(
    device: &Device,
    kernel: &Kernel<'_>,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    args: &[SpecArg],
) -> Result<(LaunchStats, Vec<BufferBytes>), Error> {
    let mut buffers = Vec::new();
    let mut textures = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match a {
            SpecArg::Buffer { bytes, .. } => buffers.push((i, device.buffer_from_bytes(bytes)?)),
            SpecArg::Uninitialized { ty, len } => {
                buffers.push((i, device.alloc_uninitialized(len * ty.size() as u64)?));
            }
            SpecArg::Texture { ty, bytes, sampler } => {
                let texels = device.buffer_from_bytes(bytes)?;
                let desc = sampler.desc(*ty, texels.address()).map_err(Error::Launch)?;
                textures.push(device.texture_object(&desc)?);
                buffers.push((i, texels));
            }
            SpecArg::Value(_) => {}
        }
    }
    let mut owned = buffers.iter();
    let mut objects = textures.iter();
    let launch_args: Vec<Arg<'_>> = args
        .iter()
        .filter_map(|a| match a {
            SpecArg::Buffer { .. } | SpecArg::Uninitialized { .. } => {
                owned.next().map(|(_, b)| Arg::from(b))
            }
            // The texels stay in `buffers`, to be read back; the kernel gets the handle.
            SpecArg::Texture { .. } => {
                owned.next();
                objects.next().map(Arg::from)
            }
            SpecArg::Value(b) => Some(Arg::Bytes(b.clone())),
        })
        .collect();
    let stats = kernel.launch_timed(grid, block, shared_bytes, &launch_args)?;
    let outputs = buffers
        .iter()
        .map(|(i, b)| Ok((*i, device.read_bytes(b)?)))
        .collect::<Result<_, Error>>()?;
    Ok((stats, outputs))
}

/// Uploads the spec's buffers, launches `entry` of `compiled` and reads every buffer
/// back.
pub fn run(
    device: &Device,
    spec: &LaunchSpec,
    compiled: Compiled,
    entry: &str,
) -> Result<RunResult, Error> {
    let warp_mode = compiled.target.warp_mode.name().to_string();
    let float = compiled.target.float_strategy().to_string();
    let module = Module::from_compiled(device, compiled)?;
    let kernel = module.kernel(entry)?;
    let (stats, outputs) =
        launch_with_args(device, &kernel, spec.grid, spec.block, spec.shared_bytes, &spec.args)?;
    let buffers = outputs
        .into_iter()
        .filter_map(|(arg, bytes)| match spec.args.get(arg) {
            Some(
                SpecArg::Buffer { ty, .. }
                | SpecArg::Uninitialized { ty, .. }
                | SpecArg::Texture { ty, .. },
            ) => Some(BufferResult { arg, ty: *ty, bytes }),
            _ => None,
        })
        .collect();
    Ok(RunResult {
        device: device.info().name.clone(),
        entry: entry.to_string(),
        kernel_ms: stats.kernel_ms,
        warp_mode,
        float,
        printf: stats.printf,
        buffers,
        driver: None,
    })
}
