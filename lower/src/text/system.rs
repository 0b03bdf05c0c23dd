//! The system calls, failures and device-side launches ([`InstKind::System`],
//! [`InstKind::DeviceLaunch`]) in the IR text format, every field written:
//!
//! ```text
//! fail.trap                                  ; the status by name (or number)
//! fail.assert %rd1, %rd2, %r3, %rd4          ; then its details
//! printf %rd1, %rd2                          ; format, arguments
//! %rd3 = malloc %rd1
//! grid_sync
//! %r1 = grid_workspace.lo                    ; or .hi
//! %rd1, %r9 = param_buffer %r9, 64, 256      ; result, last error = last error,
//!                                            ; alignment, size{, configuration}
//! %r1, %r9 = launch_device %r9, %rd1, %rd2   ; buffer, stream{, configuration}
//! runtime.vprintf [8], [16]                  ; a call: the arguments it reads,
//! runtime.malloc.ret [%r1], [%r1+8]          ; then with `.ret` its result
//! runtime.cudaGetParameterBufferV2 256, [8], [16], [28], [40]   ; V2: its bytes first
//! ```
//!
//! The last error is read and written: it is the second destination and the first
//! operand, the same register. A configuration is eight operands: the function, the
//! grid's x, y, z, the block's x, y, z and the shared-memory size.

use ptxvk_frontend::Diagnostic;

use super::matrix::address;
use super::video::Line;
use crate::ir::*;
use crate::system as sys;

/// The failure statuses by name.
const STATUSES: &[(u32, &str)] = &[
    (sys::STATUS_TRAP, "trap"),
    (sys::STATUS_ASSERT, "assert"),
    (sys::STATUS_BARRIER, "barrier"),
    (sys::STATUS_STACK, "stack"),
    (sys::STATUS_GRID_SYNC, "grid_sync"),
    (sys::STATUS_MBARRIER, "mbarrier"),
    (sys::STATUS_LOOP_LIMIT, "loop_limit"),
    (sys::STATUS_DEADLOCK, "deadlock"),
    (sys::STATUS_SPIN, "spin"),
];

fn operands(values: impl IntoIterator<Item = Value>, value: &impl Fn(Value) -> String) -> String {
    values.into_iter().map(value).collect::<Vec<_>>().join(", ")
}

fn config_values(c: &Option<LaunchConfig>) -> Vec<Value> {
    c.iter().flat_map(|c| c.values().into_iter().map(|(v, _)| v)).collect()
}

/// A system operation's line.
pub(super) fn print(
    s: &SystemInst,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    match s {
        SystemInst::Fail(f) => {
            let name = STATUSES.iter().find(|e| e.0 == f.status);
            let name = name.map_or_else(|| f.status.to_string(), |e| e.1.to_string());
            let details = operands(f.details.iter().copied(), &value);
            if details.is_empty() {
                format!("fail.{name}")
            } else {
                format!("fail.{name} {details}")
            }
        }
        SystemInst::Printf { format, arguments } => {
            format!("printf {}", operands([*format, *arguments], &value))
        }
        SystemInst::Malloc { dst, size } => format!("{} = malloc {}", reg(*dst), value(*size)),
        SystemInst::GridSync => "grid_sync".to_string(),
        SystemInst::GridWorkspace { dst, high } => {
            format!("{} = grid_workspace.{}", reg(*dst), if *high { "hi" } else { "lo" })
        }
        SystemInst::Call(c) => {
            let ret = if c.result.is_some() { ".ret" } else { "" };
            let mut ops: Vec<String> = match c.func {
                RuntimeFn::GetParameterBufferV2 { bytes } => vec![bytes.to_string()],
                _ => Vec::new(),
            };
            ops.extend(c.args.iter().chain(&c.result).map(|a| address(*a, &reg)));
            format!("runtime.{}{ret} {}", c.func.name(), ops.join(", "))
        }
    }
}

/// A device-side launch operation's line.
pub(super) fn print_launch(
    l: &LaunchInst,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    let (name, dst, last_error, a, b, config) = match l {
        LaunchInst::ParameterBuffer { dst, last_error, align, size, config } => {
            ("param_buffer", dst, last_error, align, size, config)
        }
        LaunchInst::Launch { dst, last_error, buffer, stream, config } => {
            ("launch_device", dst, last_error, buffer, stream, config)
        }
    };
    let mut values = vec![Value::Reg(*last_error), *a, *b];
    values.extend(config_values(config));
    format!("{}, {} = {name} {}", reg(*dst), reg(*last_error), operands(values, &value))
}

/// The operation of a line whose opcode is one of these, else `None`; takes the
/// modifiers it knows from `words`.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
    addr: impl Fn(&str) -> Result<Address, Diagnostic>,
) -> Result<Option<InstKind>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let opcode = line.opcode;
    let bad = |what: &str| (line.error)(format!("`{opcode}` needs {what}"));
    let values = || line.ops.iter().map(|o| (line.value)(o)).collect::<Result<Vec<_>, _>>();
    let system = |s: SystemInst| Ok(Some(InstKind::System(Box::new(s))));
    match (opcode, line.dsts) {
        ("fail", []) => {
            let Some(name) = words.first().copied() else {
                return Err(bad("a status, `.trap`, `.assert`…"));
            };
            let status = match STATUSES.iter().find(|e| e.1 == name) {
                Some(e) => e.0,
                None => name.parse::<u32>().map_err(|_| bad("a known status"))?,
            };
            words.remove(0);
            let details = values()?;
            if details.len() > 4 {
                return Err(bad("at most four details"));
            }
            system(SystemInst::Fail(Failure { status, details }))
        }
        ("printf", []) => match values()?.as_slice() {
            [format, arguments] => {
                system(SystemInst::Printf { format: *format, arguments: *arguments })
            }
            _ => Err(bad("a format and an argument buffer")),
        },
        ("malloc", [d]) => match values()?.as_slice() {
            [size] => system(SystemInst::Malloc { dst: (line.reg)(d)?, size: *size }),
            _ => Err(bad("a size")),
        },
        ("grid_sync", []) if line.ops.is_empty() => system(SystemInst::GridSync),
        ("grid_workspace", [d]) if line.ops.is_empty() => {
            let high = match words.first().copied() {
                Some("hi") => true,
                Some("lo") => false,
                _ => return Err(bad("`.hi` or `.lo`")),
            };
            words.remove(0);
            system(SystemInst::GridWorkspace { dst: (line.reg)(d)?, high })
        }
        ("runtime", []) => {
            let func = words.first().and_then(|n| RuntimeFn::named(n));
            let Some(mut func) = func else { return Err(bad("a function CUDA provides")) };
            words.remove(0);
            let ret = words.first() == Some(&"ret");
            if ret {
                words.remove(0);
            }
            let mut ops = line.ops;
            if let RuntimeFn::GetParameterBufferV2 { bytes } = &mut func {
                let Some((first, rest)) = ops.split_first() else { return Err(bad("its bytes")) };
                *bytes = first.parse().map_err(|_| bad("its bytes"))?;
                ops = rest;
            }
            let mut args = ops.iter().map(|o| addr(o)).collect::<Result<Vec<_>, _>>()?;
            let result = if ret { args.pop() } else { None };
            system(SystemInst::Call(RuntimeCall { func, args, result }))
        }
        ("param_buffer" | "launch_device", [d, e]) => {
            let (dst, last_error) = ((line.reg)(d)?, (line.reg)(e)?);
            let v = values()?;
            if v.first() != Some(&Value::Reg(last_error)) {
                return Err(bad("the last error as its second destination and first operand"));
            }
            let config = match v.len() {
                3 => None,
                11 => Some(LaunchConfig {
                    func: v[3],
                    grid: [v[4], v[5], v[6]],
                    block: [v[7], v[8], v[9]],
                    shared: v[10],
                }),
                _ => return Err(bad("two operands after the last error, then eight or none")),
            };
            let op = if opcode == "param_buffer" {
                LaunchInst::ParameterBuffer { dst, last_error, align: v[1], size: v[2], config }
            } else {
                LaunchInst::Launch { dst, last_error, buffer: v[1], stream: v[2], config }
            };
            Ok(Some(InstKind::DeviceLaunch(Box::new(op))))
        }
        ("fail" | "printf" | "malloc" | "grid_sync" | "grid_workspace" | "runtime", _)
        | ("param_buffer" | "launch_device", _) => Err(bad("other operands")),
        _ => Ok(None),
    }
}
