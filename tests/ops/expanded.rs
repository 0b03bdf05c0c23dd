//! The instructions ptxvk lowers to sequences of core operations
//! (`lower/src/sema/expand.rs`), in generated kernels (see `generated`): saturating and
//! packed integer arithmetic, carry chains, `mul24`/`mad24`, `sad`, `bfind`, `bmsk`,
//! `szext`, `prmt`, `shf`, `lop3`, `dp4a`/`dp2a`, and the float bit instructions
//! `copysign`, `testp`, `set`, `slct`. Each reference below is written from the
//! pseudocode of its PTX ISA 9.2 section, independently of ptxvk's lowering.

use super::*;

fn b32(x: u64) -> u64 {
    x & 0xffff_ffff
}

/// The low 32 bits read as s32.
fn i32v(x: u64) -> i64 {
    i64::from(x as u32 as i32)
}

fn w32(v: i64) -> Want {
    bits(v as u64 & 0xffff_ffff)
}

/// `add.sat.s32`/`sub.sat.s32` (§9.7.1.1-2): the exact result clamped to the s32 range.
fn sat_s32(v: i64) -> Want {
    w32(v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)))
}

/// `mul24` (§9.7.1.5): the 48-bit product of the low 24 bits (sign-extended for
/// `.s32`); `.lo` is bits 31..0, `.hi` bits 47..16.
fn mul24(signed: bool, hi: bool, a: u64, b: u64) -> u64 {
    let ext = |x: u64| -> i64 {
        let v = (x & 0xff_ffff) as i64;
        if signed && v & 0x80_0000 != 0 {
            v - (1 << 24)
        } else {
            v
        }
    };
    let t = (ext(a) * ext(b)) as u64;
    b32(if hi { t >> 16 } else { t })
}

/// `bfind` (§9.7.1.16).
fn bfind(n: u32, signed: bool, shiftamt: bool, a: u64) -> u64 {
    let msb = n - 1;
    let mut a = a & mask(n);
    if signed && a >> msb & 1 == 1 {
        a = !a & mask(n);
    }
    let mut d = 0xffff_ffffu64;
    for i in (0..=msb).rev() {
        if a >> i & 1 == 1 {
            d = u64::from(i);
            break;
        }
    }
    if shiftamt && d != 0xffff_ffff {
        d = u64::from(msb) - d;
    }
    d
}

/// `fns` (§9.7.1.18), step by step from the ISA pseudocode: offset is an s32; a base
/// past bit 31 finds nothing.
fn fns(mask: u64, base: u64, offset: u64) -> u64 {
    let (mask, base, offset) = (b32(mask), b32(base) as i64, i64::from(offset as u32 as i32));
    if base >= 32 {
        return 0xffff_ffff;
    }
    if offset == 0 {
        return if mask >> base & 1 == 1 { base as u64 } else { 0xffff_ffff };
    }
    let mut pos = base;
    let mut count = offset.abs() - 1;
    let inc = if offset > 0 { 1 } else { -1 };
    while (0..32).contains(&pos) {
        if mask >> pos & 1 == 1 {
            if count == 0 {
                return pos as u64;
            }
            count -= 1;
        }
        pos += inc;
    }
    0xffff_ffff
}

/// `bmsk` (§9.7.1.24), step by step from the ISA pseudocode.
fn bmsk(clamp: bool, a: u64, b: u64) -> u64 {
    let (a, b) = (b32(a), b32(b));
    let a1 = a & 0x1f;
    let mut mask0 = b32(0xffff_ffff << a1);
    let b1 = b & 0x1f;
    let sum = a1 + b1;
    let mut mask1 = if sum >= 32 { 0 } else { b32(0xffff_ffff << sum) };
    let sum_overflow = sum >= 32;
    let mut position_overflow = false;
    let mut width_overflow = false;
    if clamp {
        if a >= 32 {
            position_overflow = true;
            mask0 = 0;
        }
        if b >= 32 {
            width_overflow = true;
        }
    }
    if sum_overflow || position_overflow || width_overflow {
        mask1 = 0;
    } else if b1 == 0 {
        mask1 = 0xffff_ffff;
    }
    mask0 & !mask1 & 0xffff_ffff
}

/// `szext` (§9.7.1.25), step by step from the ISA pseudocode.
fn szext(clamp: bool, signed: bool, a: u64, b: u64) -> u64 {
    let (a, b) = (b32(a), b32(b));
    let b1 = b & 0x1f;
    let too_large = b >= 32 && clamp;
    let mask = if too_large { 0 } else { b32(0xffff_ffff << b1) };
    let sign_pos = b1.wrapping_sub(1) & 0x1f;
    let sign_bit = !(b1 == 0 || too_large || !signed) && (a >> sign_pos) & 1 == 1;
    (a & !mask & 0xffff_ffff) | if sign_bit { mask } else { 0 }
}

/// `prmt` (§9.7.8.7): `ReadByte` of the ISA, with the mode table of selectors by
/// `c[1:0]` (result bytes 3..0).
fn prmt(mode: Option<&str>, a: u64, b: u64, c: u64) -> u64 {
    let tmp64 = b32(b) << 32 | b32(a);
    let byte = |i: u64| tmp64 >> (8 * (i & 7)) & 0xff;
    let mut d = 0;
    for k in 0..4 {
        let v = match mode {
            None => {
                let ctl = c >> (4 * k) & 0xf;
                let v = byte(ctl & 7);
                if ctl & 8 != 0 {
                    if v & 0x80 != 0 {
                        0xff
                    } else {
                        0
                    }
                } else {
                    v
                }
            }
            Some(m) => {
                let rows: [[u64; 4]; 4] = match m {
                    "f4e" => [[3, 2, 1, 0], [4, 3, 2, 1], [5, 4, 3, 2], [6, 5, 4, 3]],
                    "b4e" => [[5, 6, 7, 0], [6, 7, 0, 1], [7, 0, 1, 2], [0, 1, 2, 3]],
                    "rc8" => [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
                    "ecl" => [[3, 2, 1, 0], [3, 2, 1, 1], [3, 2, 2, 2], [3, 3, 3, 3]],
                    "ecr" => [[0, 0, 0, 0], [1, 1, 1, 0], [2, 2, 1, 0], [3, 2, 1, 0]],
                    "rc16" => [[1, 0, 1, 0], [3, 2, 3, 2], [1, 0, 1, 0], [3, 2, 3, 2]],
                    _ => unreachable!("{m}"),
                };
                // Rows list result bytes 3, 2, 1, 0.
                byte(rows[(c & 3) as usize][3 - k as usize])
            }
        };
        d |= v << (8 * k);
    }
    d
}

/// `shf` (§9.7.8.8).
fn shf(left: bool, clamp: bool, a: u64, b: u64, c: u64) -> u64 {
    let (a, b, c) = (b32(a), b32(b), b32(c));
    let n = if clamp { c.min(32) } else { c & 0x1f };
    // Shifts by 32 are well defined here because the operands are u64.
    if left {
        b32((b << n) | (a >> (32 - n)))
    } else {
        b32((b << (32 - n)) | (a >> n))
    }
}

/// `lop3` (§9.7.8.6): bit `4a + 2b + c` of `lut` for each bit position.
fn lop3(lut: u64, a: u64, b: u64, c: u64) -> u64 {
    let mut d = 0;
    for i in 0..32 {
        let k = (a >> i & 1) << 2 | (b >> i & 1) << 1 | (c >> i & 1);
        d |= (lut >> k & 1) << i;
    }
    d
}

/// `dp4a`/`dp2a` (§9.7.1.22-23): `c` plus products of sign- or zero-extended elements.
fn dot(a_bits: u32, count: u32, b_first: u32, a_signed: bool, b_signed: bool, x: In) -> u64 {
    let ext = |v: u64, bits: u32, signed: bool| -> i64 {
        let v = (v & mask(bits)) as i64;
        if signed && v >> (bits - 1) & 1 == 1 {
            v - (1 << bits)
        } else {
            v
        }
    };
    let mut d = i32v(x.c);
    for k in 0..count {
        let va = ext(x.a >> (a_bits * k), a_bits, a_signed);
        let vb = ext(x.b >> (8 * (b_first + k)), 8, b_signed);
        d = d.wrapping_add(va * vb);
    }
    b32(d as u64)
}

/// Packed `.u16x2`/`.s16x2` (§9.7.1.1, §9.7.1.12-13): `op` on each half word.
fn packed(signed: bool, a: u64, b: u64, op: impl Fn(i64, i64) -> i64) -> u64 {
    let half = |v: u64, k: u32| -> i64 {
        let h = (v >> (16 * k) & 0xffff) as i64;
        if signed && h & 0x8000 != 0 {
            h - 0x1_0000
        } else {
            h
        }
    };
    (0..2).map(|k| (op(half(a, k), half(b, k)) as u64 & 0xffff) << (16 * k)).sum()
}

fn extended_cases() -> Vec<In> {
    let mut edges = int_edges(32);
    edges.extend([8, 16, 23, 24, 31, 32, 33, 40, 63, 64, 0x80_0000, 0xff_ffff, 0x7f, 0x80, 0xff]);
    edges.extend([0x8000, 0x8001, 0x7fff, 0x0001_ffff, 0xffff_8000, 0x8080_8080, 0x7f80_ff01]);
    let mut v =
        pairs(&edges, &edges, &[0, 1, 3, 31, 32, 37, 0xffff_ffff, 0x8000_0000, 0x7654_3210]);
    v.extend(random(61, 600, |r| {
        let c =
            if r.next_u32() % 2 == 0 { u64::from(r.next_u32() % 70) } else { random_int(r, 64) };
        let b =
            if r.next_u32() % 3 == 0 { u64::from(r.next_u32() % 70) } else { random_int(r, 64) };
        In::new(random_int(r, 64), b, c)
    }));
    v
}

#[test]
fn extended_integer_instructions() {
    let cases = extended_cases();
    let first_a = cases[0].a;
    let mut slots = vec![
        slot("add.sat.s32 %d32, %a32, %b32", |x| sat_s32(i32v(x.a) + i32v(x.b))),
        // `%u64` is `a[0]` for every thread (`ldu`, §9.7.9.9).
        slot("xor.b64 %d64, %u64, %b64", move |x| bits(first_a ^ x.b)),
        slot("sub.sat.s32 %d32, %a32, %b32", |x| sat_s32(i32v(x.a) - i32v(x.b))),
        // Carry chains (§9.7.2): `add.cc` sets CF to the carry out of the unsigned sum,
        // `addc` adds it. As on NVIDIA hardware, `sub.cc` is `a + ~b + 1` and `subc`
        // `a + ~b + CF`, CF being that addition's carry (1 when nothing was borrowed):
        // the same results in pure subtraction chains, and in mixed chains below.
        slot("add.cc.u32 %t32, %a32, %b32; addc.u32 %d32, %c32, 0", |x| {
            bits(b32(b32(x.c) + ((b32(x.a) + b32(x.b)) >> 32)))
        }),
        slot("add.cc.u32 %t32, %a32, %b32; addc.cc.u32 %e32, %c32, %a32; addc.u32 %d32, 0, 0", |x| {
            let c1 = (b32(x.a) + b32(x.b)) >> 32;
            bits((b32(x.c) + b32(x.a) + c1) >> 32)
        }),
        slot("sub.cc.u32 %t32, %a32, %b32; subc.u32 %d32, %c32, 0", |x| {
            bits(b32(x.c.wrapping_sub(u64::from(b32(x.a) < b32(x.b)))))
        }),
        slot("sub.cc.u32 %t32, %a32, %b32; subc.cc.u32 %e32, %c32, %a32; subc.u32 %d32, 0, 0", |x| {
            let borrow1 = u64::from(b32(x.a) < b32(x.b));
            let borrow2 = u64::from(u128::from(b32(x.c)) < u128::from(b32(x.a)) + u128::from(borrow1));
            bits(b32(0u64.wrapping_sub(borrow2)))
        }),
        slot("add.cc.u32 %t32, %a32, %b32; subc.u32 %d32, %c32, %a32", |x| {
            let carry = (b32(x.a) + b32(x.b)) >> 32;
            bits(b32(b32(x.c) + (!b32(x.a) & 0xffff_ffff) + carry))
        }),
        slot("sub.cc.u32 %t32, %a32, %b32; addc.cc.u32 %e32, %c32, %b32; addc.u32 %d32, %e32, 0", |x| {
            let no_borrow = u64::from(b32(x.a) >= b32(x.b));
            let e = b32(x.c) + b32(x.b) + no_borrow;
            bits(b32(b32(e) + (e >> 32)))
        }),
        slot("sub.cc.u64 %t64, %a64, %b64; addc.u64 %d64, %c64, %b64", |x| {
            bits(x.c.wrapping_add(x.b).wrapping_add(u64::from(x.a >= x.b)))
        }),
        slot("add.cc.u64 %t64, %a64, %b64; addc.u64 %d64, %c64, 0", |x| {
            bits(x.c.wrapping_add(u64::from(x.a.checked_add(x.b).is_none())))
        }),
        slot("sub.cc.s64 %t64, %a64, %b64; subc.cc.s64 %d64, %c64, %b64", |x| {
            bits(x.c.wrapping_sub(x.b).wrapping_sub(u64::from(x.a < x.b)))
        }),
        // A 64-bit multiply-add from 32-bit halves: lo(a*b) + c with the carry into
        // hi(a*b) (§9.7.2.5-6).
        slot("mad.lo.cc.u32 %t32, %a32, %b32, %c32; madc.hi.u32 %d32, %a32, %b32, 0", |x| {
            bits(b32((b32(x.a) * b32(x.b) + b32(x.c)) >> 32))
        }),
        slot("mad.hi.cc.s32 %t32, %a32, %b32, %c32; madc.lo.cc.s32 %e32, %a32, %b32, %b32; addc.u32 %d32, 0, 0", |x| {
            let hi = b32(((i32v(x.a) * i32v(x.b)) as u64) >> 32);
            let c1 = (hi + b32(x.c)) >> 32;
            let lo = b32(x.a.wrapping_mul(x.b));
            bits((lo + b32(x.b) + c1) >> 32)
        }),
    ];
    // `.hi.sat.s32` (§9.7.1.4, §9.7.1.6): the high part plus c, saturated.
    slots.push(slot("mad.hi.sat.s32 %d32, %a32, %b32, %c32", |x| {
        let hi = (i32v(x.a) * i32v(x.b)) >> 32;
        sat_s32(hi + i32v(x.c))
    }));
    slots.push(slot("mad24.hi.sat.s32 %d32, %a32, %b32, %c32", |x| {
        let hi = i64::from(mul24(true, true, x.a, x.b) as u32 as i32);
        sat_s32(hi + i32v(x.c))
    }));
    slots.push(slot("fns.b32 %d32, %a32, %b32, %c32", |x| bits(fns(x.a, x.b, x.c))));
    // `cvt.pack.sat` (§9.7.9.22): a and b clamped to the narrow type, b lowest, a above
    // it, the rest of d from the low bits of c.
    for (ty, width, signed) in [
        ("u16", 16, false),
        ("s16", 16, true),
        ("u8", 8, false),
        ("s8", 8, true),
        ("s4", 4, true),
        ("u2", 2, false),
    ] {
        let ptx: &'static str = if width == 16 {
            Box::leak(format!("cvt.pack.sat.{ty}.s32 %d32, %a32, %b32").into_boxed_str())
        } else {
            Box::leak(format!("cvt.pack.sat.{ty}.s32.b32 %d32, %a32, %b32, %c32").into_boxed_str())
        };
        slots.push(slot(ptx, move |x| {
            let (lo, hi) = if signed {
                (-(1i64 << (width - 1)), (1i64 << (width - 1)) - 1)
            } else {
                (0, (1i64 << width) - 1)
            };
            let narrow = |v: u64| (i32v(v).clamp(lo, hi) as u64) & ((1 << width) - 1);
            let c = if width == 16 { 0 } else { b32(x.c) << (2 * width) };
            bits(b32((narrow(x.a) << width) | narrow(x.b) | c))
        }));
    }
    slots.push(slot("and.b32 %t32, %c32, 31; fns.b32 %d32, %a32, %t32, %b32", |x| {
        bits(fns(x.a, x.c & 31, x.b))
    }));
    for (name, signed, hi) in [
        ("lo.u32", false, false),
        ("hi.u32", false, true),
        ("lo.s32", true, false),
        ("hi.s32", true, true),
    ] {
        slots.push(slot(format!("mul24.{name} %d32, %a32, %b32"), move |x| {
            bits(mul24(signed, hi, x.a, x.b))
        }));
        slots.push(slot(format!("mad24.{name} %d32, %a32, %b32, %c32"), move |x| {
            bits(b32(mul24(signed, hi, x.a, x.b) + b32(x.c)))
        }));
    }
    for t in [u(16), s(16), u(32), s(32), u(64), s(64)] {
        let n = t.bits;
        slots.push(slot(format!("sad.{} %d{n}, %a{n}, %b{n}, %c{n}", t.name()), move |x| {
            let (a, b) = (t.read(x.a), t.read(x.b));
            bits(t.wrap(t.read(x.c) + (a - b).abs()))
        }));
    }
    for t in [u(32), s(32), u(64), s(64)] {
        let n = t.bits;
        slots.push(slot(format!("bfind.{} %d32, %a{n}", t.name()), move |x| {
            bits(bfind(n, t.signed, false, x.a))
        }));
        slots.push(slot(format!("bfind.shiftamt.{} %d32, %a{n}", t.name()), move |x| {
            bits(bfind(n, t.signed, true, x.a))
        }));
    }
    for clamp in [true, false] {
        let mode = if clamp { "clamp" } else { "wrap" };
        // Position and width small enough to matter: b and c of the case.
        slots.push(slot(format!("bmsk.{mode}.b32 %d32, %b32, %c32"), move |x| {
            bits(bmsk(clamp, x.b, x.c))
        }));
        for signed in [false, true] {
            let t = if signed { "s32" } else { "u32" };
            slots.push(slot(format!("szext.{mode}.{t} %d32, %a32, %c32"), move |x| {
                bits(szext(clamp, signed, x.a, x.c))
            }));
        }
        for left in [true, false] {
            let dir = if left { "l" } else { "r" };
            slots.push(slot(format!("shf.{dir}.{mode}.b32 %d32, %a32, %b32, %c32"), move |x| {
                bits(shf(left, clamp, x.a, x.b, x.c))
            }));
        }
    }
    slots.push(slot("prmt.b32 %d32, %a32, %b32, %c32", |x| bits(prmt(None, x.a, x.b, x.c))));
    slots.push(slot("prmt.b32 %d32, %a32, %b32, 0x8a53", |x| bits(prmt(None, x.a, x.b, 0x8a53))));
    for mode in ["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"] {
        slots.push(slot(format!("prmt.b32.{mode} %d32, %a32, %b32, %c32"), move |x| {
            bits(prmt(Some(mode), x.a, x.b, x.c))
        }));
    }
    for (at, bt) in [("u32", "u32"), ("s32", "s32"), ("u32", "s32"), ("s32", "u32")] {
        let (sa, sb) = (at == "s32", bt == "s32");
        slots.push(slot(format!("dp4a.{at}.{bt} %d32, %a32, %b32, %c32"), move |x| {
            bits(dot(8, 4, 0, sa, sb, x))
        }));
        for (part, first) in [("lo", 0), ("hi", 2)] {
            slots.push(slot(format!("dp2a.{part}.{at}.{bt} %d32, %a32, %b32, %c32"), move |x| {
                bits(dot(16, 2, first, sa, sb, x))
            }));
        }
    }
    for signed in [false, true] {
        let t = if signed { "s16x2" } else { "u16x2" };
        slots.push(slot(format!("add.{t} %d32, %a32, %b32"), move |x| {
            bits(packed(signed, x.a, x.b, |p, q| p + q))
        }));
        slots.push(slot(format!("min.{t} %d32, %a32, %b32"), move |x| {
            bits(packed(signed, x.a, x.b, |p, q| p.min(q)))
        }));
        slots.push(slot(format!("max.{t} %d32, %a32, %b32"), move |x| {
            bits(packed(signed, x.a, x.b, |p, q| p.max(q)))
        }));
    }
    slots.extend([
        slot("min.relu.s16x2 %d32, %a32, %b32", |x| {
            bits(packed(true, x.a, x.b, |p, q| p.min(q).max(0)))
        }),
        slot("max.relu.s16x2 %d32, %a32, %b32", |x| {
            bits(packed(true, x.a, x.b, |p, q| p.max(q).max(0)))
        }),
        slot("min.relu.s32 %d32, %a32, %b32", |x| w32(i32v(x.a).min(i32v(x.b)).max(0))),
        slot("max.relu.s32 %d32, %a32, %b32", |x| w32(i32v(x.a).max(i32v(x.b)).max(0))),
    ]);
    generated("int_extended", slots, cases).run();
}

/// All 256 functions of `lop3.b32`, and the predicate-combining forms (§9.7.8.6).
#[test]
fn lop3_all_256_functions() {
    let mut slots: Vec<Slot> = (0..256u64)
        .map(|lut| {
            slot(format!("lop3.b32 %d32, %a32, %b32, %c32, {lut:#04x}"), move |x| {
                bits(lop3(lut, x.a, x.b, x.c))
            })
        })
        .collect();
    slots.push(slot("lop3.or.b32 %t32|%dp, %a32, %b32, %c32, 0x96, %ap", |x| {
        bits(u64::from(lop3(0x96, x.a, x.b, x.c) & 0xffff_ffff != 0 || x.a & 1 == 1))
    }));
    slots.push(slot("lop3.and.b32 _|%dp, %a32, %b32, %c32, 0xe8, !%bp", |x| {
        bits(u64::from(lop3(0xe8, x.a, x.b, x.c) & 0xffff_ffff != 0 && x.b & 1 == 0))
    }));
    let edges = [0, 0xffff_ffff, 0xf0f0_f0f0, 0xcccc_cccc, 0xaaaa_aaaa, 0x1234_5678];
    let mut cases = pairs(&edges, &edges, &edges);
    cases.extend(random(62, 200, |r| {
        In::new(random_int(r, 32), random_int(r, 32), random_int(r, 32))
    }));
    generated("lop3", slots, cases).run();
}

/// `testp` (§9.7.3.3): "positive and negative zero are considered normal numbers".
fn testp(op: &str, class: std::num::FpCategory, nan: bool) -> bool {
    use std::num::FpCategory::*;
    match op {
        "finite" => !matches!(class, Infinite | Nan),
        "infinite" => class == Infinite,
        "number" => !nan,
        "notanumber" => nan,
        "normal" => matches!(class, Normal | Zero),
        "subnormal" => class == Subnormal,
        _ => unreachable!("{op}"),
    }
}

/// The float instructions that work on bits: `copysign` (§9.7.3.2), `testp`
/// (§9.7.3.3), `set` (§9.7.7.1) and `slct` (§9.7.7.3).
#[test]
fn copysign_testp_set_and_slct() {
    let f32_of = |x: u64| f32::from_bits(x as u32);
    let f64_of = f64::from_bits;
    let mut slots = vec![
        // "Copy sign bit of a into value of b": exact bits, NaN payloads included.
        slot("copysign.f32 %d32, %a32, %b32", |x| bits(x.a & 0x8000_0000 | x.b & 0x7fff_ffff)),
        slot("copysign.f64 %d64, %a64, %b64", |x| bits(x.a & 1 << 63 | x.b & !(1 << 63))),
    ];
    for op in ["finite", "infinite", "number", "notanumber", "normal", "subnormal"] {
        slots.push(slot(format!("testp.{op}.f32 %dp, %a32"), move |x| {
            let v = f32_of(x.a);
            bits(u64::from(testp(op, v.classify(), v.is_nan())))
        }));
        slots.push(slot(format!("testp.{op}.f64 %dp, %a64"), move |x| {
            let v = f64_of(x.a);
            bits(u64::from(testp(op, v.classify(), v.is_nan())))
        }));
    }
    // `set`: 0xffffffff (integer) or 1.0f (float) when the comparison holds.
    let truth = |t: bool, float: bool| {
        bits(if !t {
            0
        } else if float {
            0x3f80_0000
        } else {
            0xffff_ffff
        })
    };
    for cmp in ["lt", "equ", "nan", "ge"] {
        slots.push(slot(format!("set.{cmp}.u32.f32 %d32, %a32, %b32"), move |x| {
            truth(fcmp(cmp, f32_of(x.a).into(), f32_of(x.b).into()), false)
        }));
    }
    slots.extend([
        slot("set.gtu.f32.f64 %d32, %a64, %b64", move |x| {
            truth(fcmp("gtu", f64_of(x.a), f64_of(x.b)), true)
        }),
        slot("set.lt.s32.s32 %d32, %a32, %b32", move |x| truth(icmp(s(32), "lt", x.a, x.b), false)),
        slot("set.hi.f32.u16 %d32, %a16, %b16", move |x| truth(icmp(u(16), "hi", x.a, x.b), true)),
        slot("set.le.and.u32.s64 %d32, %a64, %b64, %cp", move |x| {
            truth(icmp(s(64), "le", x.a, x.b) && x.c & 1 == 1, false)
        }),
        slot("set.ne.xor.f32.f32 %d32, %a32, %b32, !%cp", move |x| {
            truth(fcmp("ne", f32_of(x.a).into(), f32_of(x.b).into()) != (x.c & 1 == 0), true)
        }),
        // `slct`: `c >= 0 ? a : b`; a NaN `c` compares false, -0.0 >= 0 holds, and
        // `.ftz` flushes a subnormal `c` to a zero of its sign first.
        slot("slct.u32.s32 %d32, %a32, %b32, %c32", |x| {
            bits(b32(if i32v(x.c) >= 0 { x.a } else { x.b }))
        }),
        slot("slct.b16.s32 %d16, %a16, %b16, %c32", |x| {
            bits(if i32v(x.c) >= 0 { x.a } else { x.b } & 0xffff)
        }),
        slot("slct.f32.f32 %d32, %a32, %b32, %c32", move |x| {
            bits(b32(if f32_of(x.c) >= 0.0 { x.a } else { x.b }))
        }),
        slot("slct.ftz.u64.f32 %d64, %a64, %b64, %c32", move |x| {
            bits(if ftz(f32_of(x.c)) >= 0.0 { x.a } else { x.b })
        }),
        slot("slct.f64.s32 %d64, %a64, %b64, %c32", |x| {
            bits(if i32v(x.c) >= 0 { x.a } else { x.b })
        }),
        // min/max extensions (§9.7.3.11-12): `.NaN` gives the canonical NaN for any NaN
        // operand; `.xorsign.abs` is the min/max of the magnitudes with the XOR of the
        // signs; three operands; `abs`/`neg` `.ftz` flush a subnormal input first.
        slot("min.NaN.f32 %d32, %a32, %b32", move |x| {
            let (a, b) = (f32_of(x.a), f32_of(x.b));
            if a.is_nan() || b.is_nan() {
                Want::NanF32
            } else {
                f32w(fmin(a.into(), b.into()) as f32)
            }
        }),
        slot("min.xorsign.abs.f32 %d32, %a32, %b32", move |x| {
            let (a, b) = (f32_of(x.a), f32_of(x.b));
            let m = fmin(a.abs().into(), b.abs().into()) as f32;
            if m.is_nan() {
                Want::NanF32
            } else {
                bits(u64::from(m.to_bits() | (a.to_bits() ^ b.to_bits()) & 0x8000_0000))
            }
        }),
        slot("max.xorsign.abs.f32 %d32, %a32, %b32", move |x| {
            let (a, b) = (f32_of(x.a), f32_of(x.b));
            let m = fmax(a.abs().into(), b.abs().into()) as f32;
            if m.is_nan() {
                Want::NanF32
            } else {
                bits(u64::from(m.to_bits() | (a.to_bits() ^ b.to_bits()) & 0x8000_0000))
            }
        }),
        slot("abs.ftz.f32 %d32, %a32", move |x| f32w(ftz(f32_of(x.a)).abs())),
        slot("neg.ftz.f32 %d32, %a32", move |x| {
            let a = ftz(f32_of(x.a));
            if a.is_nan() {
                Want::NanF32
            } else {
                f32w(-a)
            }
        }),
    ]);
    let mut values = f32_edges();
    values.extend([0x8000_0001, 0x8040_0000, 0x7fc0_1234, 0xffc0_0001, 0x7f80_0001]);
    for v in f64_edges() {
        values.push(v);
    }
    values.extend([0x7ff8_0000_0000_1234, 0x8000_0000_0000_0001, 0x000f_ffff_ffff_ffff]);
    let mut cases = pairs(&values, &values, &values);
    cases.extend(random(63, 300, |r| In::new(r.next_u64(), r.next_u64(), r.next_u64())));
    generated("float_bits", slots, cases).run();
}

/// Three-operand `min`/`max` (PTX ISA 8.8, sm_100; §9.7.3.11-12).
#[test]
fn three_input_min_max() {
    let f32_of = |x: u64| f32::from_bits(x as u32);
    let slots = vec![
        slot("min.f32 %d32, %a32, %b32, %c32", move |x| {
            let m = fmin(fmin(f32_of(x.a).into(), f32_of(x.b).into()), f32_of(x.c).into());
            f32w(m as f32)
        }),
        slot("max.NaN.abs.f32 %d32, %a32, %b32, %c32", move |x| {
            let (a, b, c) = (f32_of(x.a), f32_of(x.b), f32_of(x.c));
            if a.is_nan() || b.is_nan() || c.is_nan() {
                Want::NanF32
            } else {
                f32w(a.abs().max(b.abs()).max(c.abs()))
            }
        }),
    ];
    let mut values = f32_edges();
    values.extend([0x8000_0001, 0x7fc0_1234]);
    let cases = pairs(&values, &values, &values);
    generated_for("8.8", "sm_100", "min_max3", slots, cases).run();
}
