//! The video instructions (`lower/src/sema/video.rs`) in generated kernels (see
//! `generated`): scalar `vadd vsub vabsdiff vmin vmax vshl vshr vset vmad` with every type
//! combination, `.sat`, the secondary operations, byte and half-word selectors and the
//! destination merge; SIMD `vadd2 … vset4` with `.sat`, `.add`, lane selectors and masks.
//! The references follow the pseudocode of PTX ISA 9.2 §9.7.16 in 128-bit integers,
//! independently of ptxvk's lowering.

use super::*;

const S: [bool; 2] = [false, true];

fn ty(signed: bool) -> &'static str {
    if signed {
        "s32"
    } else {
        "u32"
    }
}

/// partSelectSignExtend (§9.7.16.1): the selected byte or half word of `x` (or all 32
/// bits), sign- or zero-extended.
fn part(x: u64, signed: bool, sel: &str) -> i128 {
    let (pos, len) = match sel {
        "" => (0, 32),
        ".h0" | ".h1" => (16 * u32::from(sel.as_bytes()[2] - b'0'), 16),
        _ => (8 * u32::from(sel.as_bytes()[2] - b'0'), 8),
    };
    Int { bits: len, signed }.read(x >> pos)
}

/// The width of the destination part a selector names (32 without one).
fn dsel_bits(dsel: &str) -> u32 {
    match dsel.as_bytes().get(1) {
        None => 32,
        Some(b'h') => 16,
        _ => 8,
    }
}

fn saturate(v: i128, signed: bool, bits: u32) -> i128 {
    let t = Int { bits, signed };
    v.clamp(t.min(), t.max())
}

/// One scalar video instruction (§9.7.16.1.1-3): `op` with types `d`, `a`, `b`, `.sat`,
/// a secondary operation `op2` (`""`, `.add`, `.min`, `.max`) or a destination selector
/// `dsel` (merge into `c`), source selectors, and the shift mode of `vshl`/`vshr`
/// (the comparison of `vset`).
#[derive(Clone)]
struct Scalar {
    op: &'static str,
    d: bool,
    a: bool,
    b: bool,
    sat: bool,
    op2: &'static str,
    dsel: &'static str,
    asel: &'static str,
    bsel: &'static str,
    mode: &'static str,
    /// `c` given without a secondary operation or selector: not used.
    unused_c: bool,
}

impl Scalar {
    fn new(op: &'static str, d: bool, a: bool, b: bool) -> Scalar {
        let mode = match op {
            "vshl" | "vshr" => ".clamp",
            "vset" => ".lt",
            _ => "",
        };
        let (op2, dsel, asel, bsel) = ("", "", "", "");
        Scalar { op, d, a, b, sat: false, op2, dsel, asel, bsel, mode, unused_c: false }
    }

    fn text(&self) -> String {
        let types = if self.op == "vset" {
            format!(".{}.{}", ty(self.a), ty(self.b))
        } else {
            format!(".{}.{}.{}", ty(self.d), ty(self.a), ty(self.b))
        };
        let sat = if self.sat { ".sat" } else { "" };
        let c = if self.op2.is_empty() && self.dsel.is_empty() && !self.unused_c {
            ""
        } else {
            ", %c32"
        };
        format!(
            "{}{types}{sat}{}{} %d32{}, %a32{}, %b32{}{c}",
            self.op, self.mode, self.op2, self.dsel, self.asel, self.bsel
        )
    }

    fn eval(&self, x: In) -> u64 {
        let ta = part(x.a, self.a, self.asel);
        let tb = part(x.b, self.b, self.bsel);
        let tmp = match self.op {
            "vadd" => ta + tb,
            "vsub" => ta - tb,
            "vabsdiff" => (ta - tb).abs(),
            "vmin" => ta.min(tb),
            "vmax" => ta.max(tb),
            "vshl" | "vshr" => {
                let n = if self.mode == ".clamp" { tb.min(32) } else { tb & 0x1f };
                if self.op == "vshl" {
                    ta << n
                } else {
                    ta >> n
                }
            }
            _ => i128::from(match self.mode {
                ".eq" => ta == tb,
                ".ne" => ta != tb,
                ".lt" => ta < tb,
                ".le" => ta <= tb,
                ".gt" => ta > tb,
                _ => ta >= tb,
            }),
        };
        let tmp = if self.sat { saturate(tmp, self.d, dsel_bits(self.dsel)) } else { tmp };
        let c = Int { bits: 32, signed: self.d }.read(x.c);
        let d = match self.op2 {
            ".add" => tmp + c,
            ".min" => tmp.min(c),
            ".max" => tmp.max(c),
            _ if self.dsel.is_empty() => tmp,
            _ => {
                let bits = dsel_bits(self.dsel);
                let shift = bits * u32::from(self.dsel.as_bytes()[2] - b'0');
                let part = (tmp as u64 & mask(bits)) << shift;
                return (x.c & 0xffff_ffff & !(mask(bits) << shift)) | part;
            }
        };
        d as u64 & 0xffff_ffff
    }

    fn slot(self) -> Slot {
        slot(self.text(), move |x| bits(self.eval(x)))
    }
}

/// Inputs: edge values of bytes, half words and words, small shift amounts in `b`.
fn video_cases() -> Vec<In> {
    let edges: Vec<u64> = vec![
        0,
        1,
        2,
        0x7f,
        0x80,
        0xff,
        0x7fff,
        0x8000,
        0xffff,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        0x8081_7f7e,
        0x7f80_ff01,
        0x0180_fe7f,
        0x1234_5678,
        0xfedc_ba98,
    ];
    let mut v = pairs(&edges, &edges, &[0, 0xffff_ffff, 0x8000_0000, 0x7fff_ffff, 0x1234_5678]);
    v.extend(random(91, 500, |r| {
        let b =
            if r.next_u32() % 3 == 0 { u64::from(r.next_u32() % 40) } else { random_int(r, 32) };
        In::new(random_int(r, 32), b, random_int(r, 32))
    }));
    v
}

#[test]
fn scalar_video_instructions() {
    let mut slots = Vec::new();
    for op in ["vadd", "vsub", "vabsdiff", "vmin", "vmax"] {
        // Every type combination, with and without saturation.
        for (d, a, b) in S.iter().flat_map(|&d| S.iter().flat_map(move |&a| S.map(|b| (d, a, b)))) {
            for sat in S {
                slots.push(Scalar { sat, ..Scalar::new(op, d, a, b) }.slot());
            }
        }
        // Secondary operations, saturated first.
        for (op2, d, sat) in [(".add", true, true), (".min", false, true), (".max", true, false)] {
            slots.push(Scalar { op2, sat, ..Scalar::new(op, d, !d, true) }.slot());
        }
        slots.push(
            Scalar { unused_c: true, sat: true, ..Scalar::new(op, true, false, true) }.slot(),
        );
        // Source selectors and destination merges.
        for (dsel, asel, bsel, sat) in [
            ("", ".b0", ".h1", false),
            (".b2", ".b3", ".b1", true),
            (".h1", ".h0", ".b2", true),
            (".b0", "", ".h0", false),
            (".h0", ".b1", "", true),
        ] {
            slots.push(
                Scalar { dsel, asel, bsel, sat, ..Scalar::new(op, true, true, false) }.slot(),
            );
            slots.push(
                Scalar { dsel, asel, bsel, sat, ..Scalar::new(op, false, false, true) }.slot(),
            );
        }
    }
    for op in ["vshl", "vshr"] {
        for (d, a) in [(false, false), (false, true), (true, false), (true, true)] {
            for mode in [".clamp", ".wrap"] {
                for sat in S {
                    slots.push(Scalar { mode, sat, ..Scalar::new(op, d, a, false) }.slot());
                }
            }
        }
        for (op2, dsel, asel, bsel) in [
            (".add", "", "", ""),
            (".min", "", ".h1", ".b0"),
            (".max", "", ".b3", ""),
            ("", ".b1", "", ".b2"),
            ("", ".h1", ".h0", ""),
        ] {
            for sat in S {
                let base = Scalar::new(op, true, true, false);
                slots.push(Scalar { op2, dsel, asel, bsel, sat, ..base }.slot());
            }
        }
    }
    for (a, b) in [(false, false), (false, true), (true, false), (true, true)] {
        for mode in [".eq", ".ne", ".lt", ".le", ".gt", ".ge"] {
            slots.push(Scalar { mode, ..Scalar::new("vset", false, a, b) }.slot());
        }
    }
    for (op2, dsel, asel, bsel) in [
        (".add", "", "", ""),
        (".min", "", ".b1", ".h0"),
        (".max", "", "", ".b3"),
        ("", ".b3", ".h1", ".h1"),
        ("", ".h0", ".b0", ".b0"),
    ] {
        slots.push(
            Scalar { op2, dsel, asel, bsel, ..Scalar::new("vset", false, true, false) }.slot(),
        );
    }
    generated("video_scalar", slots, video_cases()).run();
}

/// `vmad` (§9.7.16.1.4), following the ISA's pseudocode in 128 bits.
#[derive(Clone, Copy)]
struct Vmad {
    a: bool,
    b: bool,
    neg_a: bool,
    neg_b: bool,
    neg_c: bool,
    po: bool,
    scale: u32,
    sat: bool,
    asel: &'static str,
    bsel: &'static str,
}

impl Vmad {
    fn text(&self) -> String {
        let signed = self.a || self.b;
        let po = if self.po { ".po" } else { "" };
        let sat = if self.sat { ".sat" } else { "" };
        let scale = match self.scale {
            0 => "",
            7 => ".shr7",
            _ => ".shr15",
        };
        let neg = |n: bool| if n { "-" } else { "" };
        format!(
            "vmad.{}.{}.{}{po}{sat}{scale} %d32, {}%a32{}, {}%b32{}, {}%c32",
            ty(signed),
            ty(self.a),
            ty(self.b),
            neg(self.neg_a),
            self.asel,
            neg(self.neg_b),
            self.bsel,
            neg(self.neg_c)
        )
    }

    fn eval(&self, x: In) -> u64 {
        let ta = part(x.a, self.a, self.asel);
        let tb = part(x.b, self.b, self.bsel);
        let negate_product = self.neg_a != self.neg_b;
        let signed_final = self.a || self.b || negate_product || self.neg_c;
        let mut tmp = ta * tb;
        let mut c = x.c as u32;
        let lsb = if self.po {
            1
        } else if negate_product {
            tmp = !tmp;
            1
        } else if self.neg_c {
            c = !c;
            1
        } else {
            0
        };
        let c128 = if signed_final { i128::from(c as i32) } else { i128::from(c) };
        let tmp = tmp + c128 + lsb;
        let mut result = tmp >> self.scale;
        if self.sat {
            result = saturate(result, signed_final, 32);
        }
        result as u64 & 0xffff_ffff
    }
}

#[test]
fn vmad_negation_scaling_and_saturation() {
    let mut slots = Vec::new();
    let plain = Vmad {
        a: false,
        b: false,
        neg_a: false,
        neg_b: false,
        neg_c: false,
        po: false,
        scale: 0,
        sat: false,
        asel: "",
        bsel: "",
    };
    let forms = [
        plain,
        Vmad { neg_a: true, ..plain },
        Vmad { neg_b: true, ..plain },
        Vmad { neg_c: true, ..plain },
        Vmad { neg_a: true, neg_b: true, ..plain },
        Vmad { po: true, ..plain },
    ];
    for (a, b) in [(false, false), (false, true), (true, false), (true, true)] {
        for form in forms {
            for scale in [0, 7, 15] {
                for sat in S {
                    let v = Vmad { a, b, scale, sat, ..form };
                    slots.push(slot(v.text(), move |x| bits(v.eval(x))));
                }
            }
        }
    }
    for (asel, bsel, scale) in [(".h0", ".h1", 15), (".b1", ".b3", 7), (".h1", "", 0)] {
        for (a, b) in [(false, false), (true, false)] {
            let v = Vmad { a, b, asel, bsel, scale, sat: true, ..plain };
            slots.push(slot(v.text(), move |x| bits(v.eval(x))));
        }
    }
    generated("video_vmad", slots, video_cases()).run();
}

/// One SIMD video instruction (§9.7.16.2): `op` on `lanes` lanes with types `d`, `a`,
/// `b`, `.sat` or `.add`, a destination mask and lane selectors (digits, high lane
/// first; empty for the defaults) and, for `vset2`/`vset4`, the comparison.
#[derive(Clone)]
struct Simd {
    op: &'static str,
    lanes: u32,
    d: bool,
    a: bool,
    b: bool,
    sat: bool,
    add: bool,
    mask: &'static str,
    asel: &'static str,
    bsel: &'static str,
    cmp: &'static str,
}

impl Simd {
    fn new(op: &'static str, lanes: u32, d: bool, a: bool, b: bool) -> Simd {
        let cmp = if op == "vset" { ".ge" } else { "" };
        Simd { op, lanes, d, a, b, sat: false, add: false, mask: "", asel: "", bsel: "", cmp }
    }

    fn text(&self) -> String {
        let types = if self.op == "vset" {
            format!(".{}.{}", ty(self.a), ty(self.b))
        } else {
            format!(".{}.{}.{}", ty(self.d), ty(self.a), ty(self.b))
        };
        let letter = if self.lanes == 2 { ".h" } else { ".b" };
        let sel = |s: &str| if s.is_empty() { String::new() } else { format!("{letter}{s}") };
        format!(
            "{}{}{types}{}{}{} %d32{}, %a32{}, %b32{}, %c32",
            self.op,
            self.lanes,
            self.cmp,
            if self.sat { ".sat" } else { "" },
            if self.add { ".add" } else { "" },
            sel(self.mask),
            sel(self.asel),
            sel(self.bsel)
        )
    }

    /// The lanes a selector's digits name, lane 0 first.
    fn digits(s: &str, default: impl Iterator<Item = u32>) -> Vec<u32> {
        if s.is_empty() {
            default.collect()
        } else {
            s.bytes().rev().map(|d| u32::from(d - b'0')).collect()
        }
    }

    fn eval(&self, x: In) -> u64 {
        let n = self.lanes;
        let w = 32 / n;
        let pool = (x.b & 0xffff_ffff) << 32 | (x.a & 0xffff_ffff);
        let element = |k: u32, signed: bool| Int { bits: w, signed }.read(pool >> (w * k));
        let asel = Simd::digits(self.asel, 0..n);
        let bsel = Simd::digits(self.bsel, n..2 * n);
        let written = Simd::digits(self.mask, 0..n);
        let mut d = if self.add { x.c & 0xffff_ffff } else { 0 };
        for i in 0..n {
            let va = element(asel[i as usize], self.a);
            let vb = element(bsel[i as usize], self.b);
            let mut t = match self.op {
                "vadd" => va + vb,
                "vsub" => va - vb,
                "vavrg" if va + vb >= 0 => (va + vb + 1) >> 1,
                "vavrg" => (va + vb) >> 1,
                "vabsdiff" => (va - vb).abs(),
                "vmin" => va.min(vb),
                "vmax" => va.max(vb),
                _ => i128::from(match self.cmp {
                    ".eq" => va == vb,
                    ".ne" => va != vb,
                    ".lt" => va < vb,
                    ".le" => va <= vb,
                    ".gt" => va > vb,
                    _ => va >= vb,
                }),
            };
            if self.sat {
                t = saturate(t, self.d, w);
            }
            let lane = mask(w) << (w * i);
            if self.add {
                d = d.wrapping_add(if written.contains(&i) { t as u64 } else { 0 });
            } else if written.contains(&i) {
                d |= (t as u64) << (w * i) & lane;
            } else {
                d |= x.c & lane;
            }
        }
        d & 0xffff_ffff
    }

    fn slot(self) -> Slot {
        slot(self.text(), move |x| bits(self.eval(x)))
    }
}

#[test]
fn simd_video_instructions() {
    let mut slots = Vec::new();
    for lanes in [2, 4] {
        for op in ["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"] {
            for (d, a, b) in [
                (false, false, false),
                (true, true, true),
                (true, false, true),
                (false, true, false),
            ] {
                slots.push(Simd::new(op, lanes, d, a, b).slot());
                slots.push(Simd { sat: true, ..Simd::new(op, lanes, d, a, b) }.slot());
                slots.push(Simd { add: true, ..Simd::new(op, lanes, d, a, b) }.slot());
            }
        }
        for (a, b) in [(false, false), (false, true), (true, false), (true, true)] {
            for cmp in [".eq", ".ne", ".lt", ".le", ".gt", ".ge"] {
                slots.push(Simd { cmp, ..Simd::new("vset", lanes, false, a, b) }.slot());
            }
        }
    }
    // Masks and selectors.
    for (op, mask, asel, bsel, sat, add) in [
        ("vadd", "0", "03", "21", true, false),
        ("vsub", "1", "22", "30", false, false),
        ("vmax", "10", "11", "00", false, true),
        ("vavrg", "1", "32", "10", false, true),
        ("vset", "0", "12", "31", false, true),
    ] {
        let base = Simd::new(op, 2, true, true, false);
        slots.push(Simd { mask, asel, bsel, sat, add, ..base }.slot());
    }
    for (op, mask, asel, bsel, sat, add) in [
        ("vadd", "0", "7654", "3210", true, false),
        ("vsub", "31", "0123", "4444", true, false),
        ("vabsdiff", "320", "7531", "6420", false, true),
        ("vmin", "3210", "0000", "7777", false, false),
        ("vavrg", "21", "1357", "0246", false, false),
        ("vset", "310", "3377", "7733", false, false),
        ("vset", "2", "0415", "2637", false, true),
    ] {
        let base = Simd::new(op, 4, false, true, true);
        slots.push(Simd { mask, asel, bsel, sat, add, ..base }.slot());
    }
    generated("video_simd", slots, video_cases()).run();
}
