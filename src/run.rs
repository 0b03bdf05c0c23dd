//! Running a [`LaunchSpec`]: what `ptxvk run` does, as a library function so tests and
//! tools get exactly the CLI's behaviour.

use serde_json::{json, Value};

use crate::compile::{compile, Compiled};
use crate::runtime::{Arg, Device, Module};
use crate::spec::{decode_all, hex_encode, ElemType, LaunchSpec, SpecArg};
use crate::Error;

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
    /// The kernel's `printf` output.
    pub printf: String,
    pub buffers: Vec<BufferResult>,
}

impl RunResult {
    /// The `--json` output object (DESIGN §10).
    pub fn to_json(&self) -> Value {
        json!({
            "device": self.device,
            "entry": self.entry,
            "kernel_ms": self.kernel_ms,
            "warp_mode": self.warp_mode,
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

/// Compiles the spec's PTX (already read into `ptx`) and picks its kernel, without a
/// device: rejected PTX and unknown kernel names are reported before any device is
/// opened.
pub fn prepare(spec: &LaunchSpec, ptx: &str) -> Result<(Compiled, String), Error> {
    let compiled = compile(&spec.ptx.display().to_string(), ptx, None)?;
    let names: Vec<String> = compiled.spirv.kernels.iter().map(|k| k.name.clone()).collect();
    let entry = match &spec.entry {
        Some(e) if names.contains(e) => e.clone(),
        Some(e) => return Err(Error::NoSuchKernel { name: e.clone(), available: names }),
        None => match names.as_slice() {
            [one] => one.clone(),
            _ => return Err(Error::KernelNotNamed { available: names }),
        },
    };
    Ok((compiled, entry))
}

/// Uploads the spec's buffers, launches `entry` of `compiled` and reads every buffer
/// back.
pub fn run(
    device: &Device,
    spec: &LaunchSpec,
    compiled: Compiled,
    entry: &str,
) -> Result<RunResult, Error> {
    let warp_mode = compiled.warp_mode.name().to_string();
    let module = Module::from_compiled(device, compiled)?;
    let kernel = module.kernel(entry)?;
    let mut buffers = Vec::new();
    let mut args = Vec::new();
    for a in &spec.args {
        match a {
            SpecArg::Buffer { ty, bytes } => {
                let buf = device.buffer_from_bytes(bytes)?;
                args.push(Arg::from(&buf));
                buffers.push((args.len() - 1, *ty, buf));
            }
            SpecArg::Value(b) => args.push(Arg::Bytes(b.clone())),
        }
    }
    let stats = kernel.launch(spec.grid, spec.block, spec.shared_bytes, &args)?;
    let buffers = buffers
        .into_iter()
        .map(|(arg, ty, buf)| Ok(BufferResult { arg, ty, bytes: device.read_bytes(&buf)? }))
        .collect::<Result<_, Error>>()?;
    Ok(RunResult {
        device: device.info().name.clone(),
        entry: entry.to_string(),
        kernel_ms: stats.kernel_ms,
        warp_mode,
        printf: stats.printf,
        buffers,
    })
}
