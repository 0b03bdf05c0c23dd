//! Known-answer probes of single instructions: subnormals and special values.

use std::fmt::Write as _;

use crate::compile::Target;
use crate::runtime::Device;
use crate::Error;

use super::kit::{bits, launch_io, probe_kernel, same, show};

/// A known-answer case: one PTX instruction writing `%o` from the sources `%a`, `%b`,
/// `%c` (loaded from `srcs`), and the bits of the result the host computes for it.
pub(super) struct Known {
    pub(super) inst: &'static str,
    pub(super) srcs: [f64; 3],
    pub(super) want: u64,
}

/// The denormals cases of `width` bits, their results from the host's arithmetic (which
/// keeps subnormals), flushed to a signed zero, inputs and result, for `.ftz` (PTX ISA
/// 9.7.3): 2^-140 and 2^-141 are f32 subnormals, and 2^-70 squared is one.
pub(super) fn denormal_cases(width: u32) -> Vec<Known> {
    let p = |e: i32| 2f64.powi(e);
    let f32s = |inst, a: f64, b: f64, c: f64, op: fn(f32, f32, f32) -> f32| {
        let ftz = |v: f32| if inst_ftz(inst) && v.is_subnormal() { 0f32.copysign(v) } else { v };
        let r = ftz(op(ftz(a as f32), ftz(b as f32), c as f32));
        Known { inst, srcs: [a, b, c], want: u64::from(r.to_bits()) }
    };
    let f64s = |inst, a: f64, b: f64, c: f64, op: fn(f64, f64, f64) -> f64| Known {
        inst,
        srcs: [a, b, c],
        want: op(a, b, c).to_bits(),
    };
    if width == 32 {
        vec![
            f32s("mul.rn.f32 %o, %a, 0f3F000000", p(-140), 0.0, 0.0, |a, _, _| a * 0.5),
            f32s("add.rn.f32 %o, %a, %b", p(-140), p(-140), 0.0, |a, b, _| a + b),
            f32s("mul.rn.f32 %o, %a, %b", p(-70), p(-70), 0.0, |a, b, _| a * b),
            f32s("sub.rn.f32 %o, %a, %b", p(-140), p(-141), 0.0, |a, b, _| a - b),
            f32s("fma.rn.f32 %o, %a, %b, %c", p(-140), 1.0, p(-140), |a, b, c| a.mul_add(b, c)),
            f32s("div.rn.f32 %o, %a, %b", p(-140), 2.0, 0.0, |a, b, _| a / b),
            f32s("sqrt.rn.f32 %o, %a", p(-140), 0.0, 0.0, |a, _, _| a.sqrt()),
            f32s("max.f32 %o, %a, %b", p(-140), 0.0, 0.0, |a, b, _| a.max(b)),
            f32s("mul.rn.ftz.f32 %o, %a, %b", p(-140), 1.0, 0.0, |a, b, _| a * b),
            f32s("mul.rn.ftz.f32 %o, %a, %b", -p(-140), 1.0, 0.0, |a, b, _| a * b),
            f32s("add.rn.ftz.f32 %o, %a, %b", p(-140), p(-140), 0.0, |a, b, _| a + b),
            f32s("mul.rn.ftz.f32 %o, %a, %b", p(-70), p(-70), 0.0, |a, b, _| a * b),
        ]
    } else {
        vec![
            f64s("mul.rn.f64 %o, %a, 0d3FE0000000000000", p(-1070), 0.0, 0.0, |a, _, _| a * 0.5),
            f64s("add.rn.f64 %o, %a, %b", p(-1070), p(-1070), 0.0, |a, b, _| a + b),
            f64s("mul.rn.f64 %o, %a, %b", p(-537), p(-537), 0.0, |a, b, _| a * b),
            f64s("sub.rn.f64 %o, %a, %b", p(-1070), p(-1071), 0.0, |a, b, _| a - b),
            f64s("fma.rn.f64 %o, %a, %b, %c", p(-1070), 1.0, p(-1070), |a, b, c| a.mul_add(b, c)),
            f64s("div.rn.f64 %o, %a, %b", p(-1070), 2.0, 0.0, |a, b, _| a / b),
            f64s("sqrt.rn.f64 %o, %a", p(-1070), 0.0, 0.0, |a, _, _| a.sqrt()),
        ]
    }
}

/// Whether a case's instruction flushes subnormals.
pub(super) fn inst_ftz(inst: &str) -> bool {
    inst.split_whitespace().next().is_some_and(|op| op.contains(".ftz"))
}

/// The special-value cases of `width` bits, with the results the PTX ISA defines for
/// them (9.7.3, 9.7.4).
pub(super) fn special_cases(width: u32) -> Vec<Known> {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let k = |inst, a: f64, b: f64, want: f64| Known {
        inst,
        srcs: [a, b, 0.0],
        want: bits(want, width),
    };
    if width == 32 {
        vec![
            k("sqrt.rn.f32 %o, %a", -0.0, 0.0, -0.0),
            k("sqrt.approx.f32 %o, %a", -0.0, 0.0, -0.0),
            k("sqrt.rn.f32 %o, %a", -1.0, 0.0, nan),
            k("rcp.rn.f32 %o, %a", 0.0, 0.0, inf),
            k("rcp.rn.f32 %o, %a", -0.0, 0.0, -inf),
            k("rcp.approx.f32 %o, %a", 0.0, 0.0, inf),
            k("rcp.approx.f32 %o, %a", -0.0, 0.0, -inf),
            k("div.full.f32 %o, %a, %b", 1.0, 0.0, inf),
            k("min.f32 %o, %a, 0f7FC00000", 1.5, 0.0, 1.5),
            k("max.f32 %o, 0f7FC00000, %a", 1.5, 0.0, 1.5),
            k("min.f32 %o, %a, %b", nan, nan, nan),
            k("sin.approx.f32 %o, %a", inf, 0.0, nan),
            k("cos.approx.f32 %o, %a", -inf, 0.0, nan),
            k("sin.approx.f32 %o, %a", -0.0, 0.0, -0.0),
            k("ex2.approx.f32 %o, %a", -inf, 0.0, 0.0),
            k("lg2.approx.f32 %o, %a", 0.0, 0.0, -inf),
            k("lg2.approx.f32 %o, %a", -1.0, 0.0, nan),
            k("rsqrt.approx.f32 %o, %a", 0.0, 0.0, inf),
            k("rsqrt.approx.f32 %o, %a", -0.0, 0.0, -inf),
            k("abs.f32 %o, %a", -0.0, 0.0, 0.0),
            k("neg.f32 %o, %a", 0.0, 0.0, -0.0),
            k("cvt.rni.f32.f32 %o, %a", -0.4, 0.0, -0.0),
        ]
    } else {
        vec![
            k("sqrt.rn.f64 %o, %a", -0.0, 0.0, -0.0),
            k("rcp.rn.f64 %o, %a", -0.0, 0.0, -inf),
            k("div.rn.f64 %o, %a, %b", 0.0, 0.0, nan),
            k("min.f64 %o, %a, 0d7FF8000000000000", 1.5, 0.0, 1.5),
            k("cvt.rni.f64.f64 %o, %a", -0.4, 0.0, -0.0),
        ]
    }
}

/// A kernel `NAME_fWIDTH` of `cases`: three inputs per case, then the results.
pub(super) fn known_ptx(name: &str, width: u32, cases: &[Known]) -> String {
    let t = format!("f{width}");
    let step = width / 8;
    let mut body = String::new();
    for (k, case) in cases.iter().enumerate() {
        for (j, src) in ["a", "b", "c"].iter().enumerate() {
            let at = (3 * k + j) as u32 * step;
            let _ = writeln!(body, "    ld.global.{t} %{src}, [%rd1+{at}];");
        }
        let _ = writeln!(body, "    {};", case.inst);
        let at = (3 * cases.len() + k) as u32 * step;
        let _ = writeln!(body, "    st.global.{t} [%rd1+{at}], %o;");
    }
    let regs = format!("    .reg .{t} %a, %b, %c, %o;\n");
    probe_kernel(&format!("{name}_f{width}"), &regs, &body)
}

/// Runs the known-answer cases `cases` gives for each width the device has, compiled
/// for `target` as the kernels `name_f32` and `name_f64`, and returns the wrong ones.
pub(super) fn probe_known(
    device: &Device,
    target: Target,
    name: &str,
    cases: fn(u32) -> Vec<Known>,
) -> Result<Vec<String>, Error> {
    let mut wrong = Vec::new();
    for width in [32, 64] {
        if width == 64 && !device.info().features.float64 {
            continue;
        }
        let cases = cases(width);
        let mut io: Vec<u64> = cases.iter().flat_map(|c| c.srcs.map(|v| bits(v, width))).collect();
        io.extend(std::iter::repeat_n(0, cases.len()));
        let ptx = known_ptx(name, width, &cases);
        let out = launch_io(device, &ptx, &format!("{name}_f{width}"), target, &io, width)?;
        for (k, case) in cases.iter().enumerate() {
            let got = out[3 * cases.len() + k];
            if !same(got, case.want, width) {
                let [a, b, c] = case.srcs.map(|v| show(bits(v, width), width));
                wrong.push(format!(
                    "`{}` of ({a}, {b}, {c}) gave {}, not {}",
                    case.inst,
                    show(got, width),
                    show(case.want, width)
                ));
            }
        }
    }
    Ok(wrong)
}

/// Runs the denormals cases compiled for `target` and returns the wrong ones.
pub fn probe_denormals(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    probe_known(device, target, "denormals", denormal_cases)
}

/// Runs the special-value cases compiled for `target` and returns the wrong ones.
pub fn probe_special(device: &Device, target: Target) -> Result<Vec<String>, Error> {
    probe_known(device, target, "special", special_cases)
}
