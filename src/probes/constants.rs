//! The constants probe: float arithmetic with operands the driver knows, against the
//! host's IEEE 754 model.

use std::fmt::Write as _;

use crate::compile::Target;
use crate::runtime::Device;
use crate::Error;
use ptxvk_lower::pass::FloatOps;

use super::constant_cases::*;
use super::kit::{bits, launch_io, probe_kernel, same, show};

/// A PTX float literal of `width` bits.
pub(super) fn literal(v: f64, width: u32) -> String {
    if width == 32 {
        format!("0f{:08X}", (v as f32).to_bits())
    } else {
        format!("0d{:016X}", v.to_bits())
    }
}

/// The constants kernel of `width` bits: inputs [`INPUTS`], then one result per case.
pub(super) fn constants_ptx(width: u32) -> String {
    let (t, b) = (format!("f{width}"), format!("b{width}"));
    let step = width / 8;
    let mut body = String::new();
    for (i, x) in INPUTS.iter().enumerate() {
        let _ = writeln!(body, "    ld.global.{t} %in{i}, [%rd1+{}];", i as u32 * step);
        let _ = x;
    }
    let _ = writeln!(body, "    ld.global.u32 %rx, [%rd1];");
    let mut temps = 0;
    let mut operand = |body: &mut String, s: Src| -> String {
        match s {
            Src::In(i) => format!("%in{i}"),
            Src::Lit(v) => literal(v, width),
            Src::Mov(v) => {
                temps += 1;
                let _ = writeln!(body, "    mov.{b} %t{temps}, {};", bits(v, width));
                format!("%t{temps}")
            }
            Src::Cvt(n) => {
                temps += 1;
                let _ = writeln!(body, "    cvt.rn.{t}.u32 %t{temps}, {n};");
                format!("%t{temps}")
            }
            Src::SubSelf => {
                temps += 1;
                let _ = writeln!(body, "    sub.u32 %rs{temps}, %rx, %rx;");
                let _ = writeln!(body, "    cvt.rn.{t}.u32 %t{temps}, %rs{temps};");
                format!("%t{temps}")
            }
        }
    };
    for (k, (op, a, c, d)) in constant_cases_of(width).enumerate() {
        let a = operand(&mut body, *a);
        let c = operand(&mut body, *c);
        let d = d.map(|d| format!(", {}", operand(&mut body, d))).unwrap_or_default();
        let _ = writeln!(body, "    {}.{t} %o{k}, {a}, {c}{d};", op.ptx());
        let at = (INPUTS.len() + k) as u32 * step;
        let _ = writeln!(body, "    st.global.{t} [%rd1+{at}], %o{k};");
    }
    let (n, inputs, temps) = (constant_cases_of(width).count(), INPUTS.len(), temps + 1);
    let regs = format!(
        "    .reg .{t} %in<{inputs}>;\n    .reg .{t} %t<{temps}>;\n    .reg .{t} %o<{n}>;\n\
         \x20   .reg .b32 %rx;\n    .reg .b32 %rs<{temps}>;\n"
    );
    probe_kernel(&format!("constants_f{width}"), &regs, &body)
}

/// The value of operand `s` on the host.
pub(super) fn value_of(s: Src) -> f64 {
    match s {
        Src::In(i) => INPUTS[i],
        Src::Lit(v) | Src::Mov(v) => v,
        Src::Cvt(n) => f64::from(n),
        Src::SubSelf => 0.0,
    }
}

/// How operand `s` reads in a case's description.
pub(super) fn describe_src(s: Src, width: u32) -> String {
    let v = value_of(s);
    match s {
        Src::In(_) => format!("{v:?}"),
        Src::Lit(_) => format!("{v:?} (literal)"),
        Src::Mov(_) => format!("{v:?} (mov.b{width})"),
        Src::Cvt(n) => format!("{v:?} (cvt.rn.f{width}.u32 of {n})"),
        Src::SubSelf => format!("{v:?} (cvt.rn.f{width}.u32 of x - x)"),
    }
}

/// The result IEEE 754 gives (round to nearest), as bits of `width`.
pub(super) fn expected(op: Op, a: f64, b: f64, c: f64, width: u32) -> u64 {
    if width == 32 {
        let (a, b, c) = (a as f32, b as f32, c as f32);
        let r = match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            Op::Div | Op::DivApprox => a / b,
            Op::Fma => a.mul_add(b, c),
        };
        u64::from(r.to_bits())
    } else {
        let r = match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            Op::Div | Op::DivApprox => a / b,
            Op::Fma => a.mul_add(b, c),
        };
        r.to_bits()
    }
}

/// A wrong case of [`probe_constants`]: its description and the operations it points
/// at (`Op::ops`).
#[derive(Clone, Debug)]
pub struct WrongConstant {
    pub text: String,
    pub ops: [FloatOps; 2],
}

/// Runs the constants cases compiled for `target` (its `float_constants` decides
/// what is hidden) and returns the wrong ones.
pub fn probe_constants(device: &Device, target: Target) -> Result<Vec<WrongConstant>, Error> {
    let mut wrong = Vec::new();
    for width in [32, 64] {
        if width == 64 && !device.info().features.float64 {
            continue;
        }
        let cases: Vec<_> = constant_cases_of(width).collect();
        let mut io: Vec<u64> = INPUTS.iter().map(|&v| bits(v, width)).collect();
        io.extend(std::iter::repeat_n(0, cases.len()));
        let entry = format!("constants_f{width}");
        let out = launch_io(device, &constants_ptx(width), &entry, target, &io, width)?;
        for (k, (op, a, b, c)) in cases.iter().enumerate() {
            let cv = c.map_or(0.0, value_of);
            let want = expected(*op, value_of(*a), value_of(*b), cv, width);
            let got = out[INPUTS.len() + k];
            if !same(got, want, width) {
                let c = c.map(|c| format!(", {}", describe_src(c, width))).unwrap_or_default();
                wrong.push(WrongConstant {
                    text: format!(
                        "{}.f{width} {}, {}{c} gave {}, not {}",
                        op.ptx(),
                        describe_src(*a, width),
                        describe_src(*b, width),
                        show(got, width),
                        show(want, width)
                    ),
                    ops: op.ops(),
                });
            }
        }
    }
    Ok(wrong)
}
