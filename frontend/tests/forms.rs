//! The table of implemented forms (`ptxvk_frontend::forms`) against the PTX ISA 9.2:
//! each instruction form a section lists is accepted, and forms outside it are refused
//! with a diagnostic that names the instruction and points at the offending modifier or
//! type. The cases are written from the ISA's syntax blocks, not from ptxvk's output.

use ptxvk_frontend::ast::{Item, Statement};
use ptxvk_frontend::{decode, forms, parse};

/// Parses `inst` in a kernel and holds it against its form: `Ok` or the diagnostic's
/// message and the text it points at. The target is the highest any case needs
/// (`redux.sync.f32` and three-input `min`/`max` need sm_100a, PTX ISA 8.6).
fn verdict(inst: &str) -> Result<(), (String, String)> {
    let src = format!(
        ".version 8.6\n.target sm_100a\n.address_size 64\n.visible .entry k()\n{{\n\
         .reg .pred %p<4>;\n.reg .b16 %h<4>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n{inst}\n}}\n"
    );
    let module = parse(&src).map_err(|e| (format!("parse: {:?}", e.0), String::new()))?;
    let f = module
        .items
        .iter()
        .find_map(|it| match it {
            Item::Function(f) => Some(f),
            _ => None,
        })
        .expect("the kernel");
    let i = f
        .body
        .iter()
        .flatten()
        .find_map(|s| match s {
            Statement::Instruction(i) => Some(i),
            _ => None,
        })
        .expect("the instruction");
    let at = |d: ptxvk_frontend::Diagnostic| {
        (d.message, src[d.span.start as usize..d.span.end as usize].to_string())
    };
    let m = decode::decode(i).map_err(at)?.expect("a PTX opcode");
    forms::check(i, &m).map_err(at)
}

fn accepted(cases: &[&str]) {
    for c in cases {
        assert_eq!(verdict(c), Ok(()), "{c}");
    }
}

/// Each case is refused with a message containing `msg`, pointing at `at`.
fn refused(cases: &[(&str, &str, &str)]) {
    for (c, msg, at) in cases {
        match verdict(c) {
            Ok(()) => panic!("{c} was accepted"),
            Err((m, a)) => {
                assert!(m.contains(msg), "{c}: `{m}` does not say `{msg}`");
                assert_eq!(&a, at, "{c}: `{m}` points at `{a}`");
            }
        }
    }
}

#[test]
fn integer_arithmetic_forms() {
    // §9.7.1.5-6: mul24/mad24 .hi/.lo on .u32/.s32; mad24.hi.sat.s32.
    accepted(&[
        "mul24.lo.u32 %r1, %r2, %r3;",
        "mul24.hi.s32 %r1, %r2, %r3;",
        "mad24.lo.s32 %r1, %r2, %r3, %r0;",
        "mad24.hi.sat.s32 %r1, %r2, %r3, %r0;",
        // §9.7.1.4
        "mad.hi.sat.s32 %r1, %r2, %r3, %r0;",
        // §9.7.1.11
        "sad.u16 %h1, %h2, %h3, %h0;",
        "sad.s64 %rd1, %rd2, %rd3, %rd0;",
        // §9.7.1.16
        "bfind.shiftamt.s64 %r1, %rd2;",
        "bfind.u32 %r1, %r2;",
        // §9.7.1.18, §9.7.1.22-25
        "fns.b32 %r1, %r2, %r3, %r0;",
        "dp4a.u32.s32 %r1, %r2, %r3, %r0;",
        "dp2a.hi.s32.s32 %r1, %r2, %r3, %r0;",
        "bmsk.clamp.b32 %r1, %r2, %r3;",
        "szext.wrap.s32 %r1, %r2, %r3;",
        // §9.7.2
        "addc.cc.u64 %rd1, %rd2, %rd3;",
        "subc.s32 %r1, %r2, %r3;",
        "madc.hi.cc.u32 %r1, %r2, %r3, %r0;",
        "add.cc.s32 %r1, %r2, %r3;",
        "mad.lo.cc.u64 %rd1, %rd2, %rd3, %rd0;",
    ]);
    refused(&[
        ("mul24.u32 %r1, %r2, %r3;", "`mul24` needs `.lo` or `.hi`", "mul24.u32 %r1, %r2, %r3;"),
        ("mul24.wide.u32 %rd1, %r2, %r3;", "`mul24` needs", "mul24.wide.u32 %rd1, %r2, %r3;"),
        ("mul24.lo.u64 %rd1, %rd2, %rd3;", "`mul24` takes `.u32` or `.s32`", ".u64"),
        ("mul24.lo.b32 %r1, %r2, %r3;", "`mul24` takes", ".b32"),
        // `mul24` has no `.sat` form; only `mad24.hi.sat.s32` saturates.
        ("mul24.hi.sat.s32 %r1, %r2, %r3;", "`mul24` does not take `.sat`", ".sat"),
        (
            "mad24.lo.sat.s32 %r1, %r2, %r3, %r0;",
            "needs `.hi`",
            "mad24.lo.sat.s32 %r1, %r2, %r3, %r0;",
        ),
        ("mad24.hi.sat.u32 %r1, %r2, %r3, %r0;", "takes `.s32`", ".u32"),
        ("mad.hi.sat.u32 %r1, %r2, %r3, %r0;", "takes `.s32`", ".u32"),
        ("sad.f32 %r1, %r2, %r3, %r0;", "`sad` takes", ".f32"),
        ("sad.b32 %r1, %r2, %r3, %r0;", "`sad` takes", ".b32"),
        ("bfind.u16 %r1, %h2;", "`bfind` takes", ".u16"),
        ("fns.u32 %r1, %r2, %r3, %r0;", "`fns` takes `.b32`", ".u32"),
        ("dp4a.u32 %r1, %r2, %r3, %r0;", "`dp4a` needs two types", "dp4a.u32 %r1, %r2, %r3, %r0;"),
        ("dp4a.u32.b32 %r1, %r2, %r3, %r0;", "`dp4a` takes `.u32` or `.s32` there", ".b32"),
        (
            "dp2a.u32.u32 %r1, %r2, %r3, %r0;",
            "`dp2a` needs `.lo` or `.hi`",
            "dp2a.u32.u32 %r1, %r2, %r3, %r0;",
        ),
        ("bmsk.b32 %r1, %r2, %r3;", "`bmsk` needs `.clamp` or `.wrap`", "bmsk.b32 %r1, %r2, %r3;"),
        ("bmsk.clamp.u32 %r1, %r2, %r3;", "`bmsk` takes `.b32`", ".u32"),
        ("szext.clamp.b32 %r1, %r2, %r3;", "`szext` takes `.u32` or `.s32`", ".b32"),
        ("addc.u16 %h1, %h2, %h3;", "`addc` takes", ".u16"),
        ("addc.b32 %r1, %r2, %r3;", "`addc` takes", ".b32"),
        (
            "madc.cc.u32 %r1, %r2, %r3, %r0;",
            "`madc` needs `.lo` or `.hi`",
            "madc.cc.u32 %r1, %r2, %r3, %r0;",
        ),
        (
            "add.cc.sat.s32 %r1, %r2, %r3;",
            "`add.cc` takes no `.sat`",
            "add.cc.sat.s32 %r1, %r2, %r3;",
        ),
        ("add.cc.u16 %h1, %h2, %h3;", "`add.cc` takes", ".u16"),
        ("add.cc.rn.u32 %r1, %r2, %r3;", "`add.cc` takes no rounding", ".rn"),
        (
            "sub.cc.ftz.u32 %r1, %r2, %r3;",
            "`sub.cc` takes no `.ftz`",
            "sub.cc.ftz.u32 %r1, %r2, %r3;",
        ),
        (
            "mad.cc.u32 %r1, %r2, %r3, %r0;",
            "`mad.cc` needs `.lo` or `.hi`",
            "mad.cc.u32 %r1, %r2, %r3, %r0;",
        ),
    ]);
}

#[test]
fn logic_and_float_bit_forms() {
    accepted(&[
        // §9.7.8.6-8
        "lop3.b32 %r1, %r2, %r3, %r0, 0x96;",
        "lop3.or.b32 %r1|%p1, %r2, %r3, %r0, 0x96, %p2;",
        "lop3.b32 %r1, %r2, %r3, %r0, 0xff;",
        "prmt.b32 %r1, %r2, %r3, %r0;",
        "prmt.b32.rc16 %r1, %r2, %r3, %r0;",
        "shf.l.wrap.b32 %r1, %r2, %r3, %r0;",
        "shf.r.clamp.b32 %r1, %r2, %r3, %r0;",
        // §9.7.3.2-3
        "copysign.f64 %rd1, %rd2, %rd3;",
        "testp.notanumber.f32 %p1, %r2;",
    ]);
    refused(&[
        (
            "lop3.xor.b32 %r1|%p1, %r2, %r3, %r0, 0x96, %p2;",
            "combines with `.and` or `.or`",
            "lop3.xor.b32 %r1|%p1, %r2, %r3, %r0, 0x96, %p2;",
        ),
        (
            "lop3.and.b32 %r1, %r2, %r3, %r0, 0x96;",
            "`lop3` takes 6 operands here, found 5",
            "lop3.and.b32 %r1, %r2, %r3, %r0, 0x96;",
        ),
        ("lop3.u32 %r1, %r2, %r3, %r0, 0x96;", "`lop3` takes `.b32`", ".u32"),
        // §9.7.8.6: with `.and`/`.or` the destination is `d|p`.
        (
            "lop3.and.b32 %r1, %r2, %r3, %r0, 0x96, %p2;",
            "`lop3` with `.and`/`.or` writes `d|p`",
            "lop3.and.b32 %r1, %r2, %r3, %r0, 0x96, %p2;",
        ),
        // §9.7.8.6: the truth table is an 8-bit constant.
        ("lop3.b32 %r1, %r2, %r3, %r0, %r1;", "`immLut` must be a constant", "%r1"),
        ("lop3.b32 %r1, %r2, %r3, %r0, 0x100;", "`immLut` is an 8-bit table", "0x100"),
        ("lop3.or.b32 %r1|%p1, %r2, %r3, %r0, 256, %p2;", "8-bit table", "256"),
        ("prmt.b32.f4e.b4e %r1, %r2, %r3, %r0;", "`prmt` takes one mode", ".b4e"),
        (
            "shf.wrap.b32 %r1, %r2, %r3, %r0;",
            "`shf` needs `.l` or `.r`",
            "shf.wrap.b32 %r1, %r2, %r3, %r0;",
        ),
        (
            "shf.l.r.wrap.b32 %r1, %r2, %r3, %r0;",
            "`shf` needs `.l` or `.r`",
            "shf.l.r.wrap.b32 %r1, %r2, %r3, %r0;",
        ),
        (
            "shf.l.b32 %r1, %r2, %r3, %r0;",
            "`shf` needs `.clamp` or `.wrap`",
            "shf.l.b32 %r1, %r2, %r3, %r0;",
        ),
        ("copysign.f16 %h1, %h2, %h3;", "`copysign` takes `.f32` or `.f64`", ".f16"),
        ("testp.f32 %p1, %r2;", "`testp` needs one of `.finite`", "testp.f32 %p1, %r2;"),
        ("testp.finite.b32 %p1, %r2;", "`testp` takes `.f32` or `.f64`", ".b32"),
    ]);
}

#[test]
fn approximate_function_forms() {
    // §9.7.3.13-22, §9.7.4.8-9
    accepted(&[
        "sin.approx.f32 %r1, %r2;",
        "cos.approx.ftz.f32 %r1, %r2;",
        "lg2.approx.f32 %r1, %r2;",
        "ex2.approx.f16x2 %r1, %r2;",
        "ex2.approx.ftz.bf16 %h1, %h2;",
        "tanh.approx.bf16x2 %r1, %r2;",
        "rsqrt.approx.f64 %rd1, %rd2;",
    ]);
    refused(&[
        ("sin.f32 %r1, %r2;", "`sin` needs `.approx`", "sin.f32 %r1, %r2;"),
        ("sin.approx.f64 %rd1, %rd2;", "`sin` takes `.f32`", ".f64"),
        ("ex2.approx.f64 %rd1, %rd2;", "`ex2` takes", ".f64"),
        ("lg2.approx.f16 %h1, %h2;", "`lg2` takes `.f32`", ".f16"),
        ("rsqrt.approx.f16 %h1, %h2;", "`rsqrt` takes `.f32` or `.f64`", ".f16"),
        ("cos.full.f32 %r1, %r2;", "unknown or unsupported modifier `.full` for `cos`", ".full"),
    ]);
}

#[test]
fn bit_operation_forms() {
    // §9.7.8.1-5, §9.7.1.9-10, §9.7.1.19-20; the `.uN`/`.sN` spellings of the bit
    // operations are ptxvk's own leniency, kept because the test corpus uses them.
    accepted(&[
        "and.pred %p1, %p2, %p3;",
        "xor.b64 %rd1, %rd2, %rd3;",
        "not.b16 %h1, %h2;",
        "cnot.b32 %r1, %r2;",
        "popc.b64 %r1, %rd2;",
        "clz.b32 %r1, %r2;",
        "brev.b64 %rd1, %rd2;",
        "shl.b16 %h1, %h2, %r3;",
        "shr.s64 %rd1, %rd2, %r3;",
        "rem.u16 %h1, %h2, %h3;",
        "bfe.s64 %rd1, %rd2, %r3, %r0;",
        "bfi.b32 %r1, %r2, %r3, %r0, %r1;",
        "neg.s16 %h1, %h2;",
        "abs.f64 %rd1, %rd2;",
    ]);
    refused(&[
        ("and.f32 %r1, %r2, %r3;", "`and` takes", ".f32"),
        ("cnot.pred %p1, %p2;", "`cnot` takes", ".pred"),
        ("popc.f32 %r1, %r2;", "`popc` takes", ".f32"),
        ("shl.s32 %r1, %r2, %r3;", "`shl` takes", ".s32"),
        ("shl.b8 %h1, %h2, %r3;", "`shl` takes", ".b8"),
        ("rem.f32 %r1, %r2, %r3;", "`rem` takes", ".f32"),
        ("bfe.u16 %h1, %h2, %r3, %r0;", "`bfe` takes", ".u16"),
        ("bfi.s32 %r1, %r2, %r3, %r0, %r1;", "`bfi` takes", ".s32"),
        ("neg.pred %p1, %p2;", "`neg` takes", ".pred"),
        ("abs.u8 %h1, %h2;", "`abs` takes", ".u8"),
    ]);
}

#[test]
fn root_reciprocal_and_quotient_forms() {
    // §9.7.3.8-10
    accepted(&[
        "sqrt.approx.ftz.f32 %r1, %r2;",
        "sqrt.rn.f64 %rd1, %rd2;",
        "rcp.rz.f32 %r1, %r2;",
        "rcp.approx.ftz.f64 %rd1, %rd2;",
        "div.full.ftz.f32 %r1, %r2, %r3;",
        "div.approx.f32 %r1, %r2, %r3;",
    ]);
    refused(&[
        ("sqrt.f32 %r1, %r2;", "`sqrt` needs a rounding such as `.rn`", "sqrt.f32 %r1, %r2;"),
        ("sqrt.rn.u32 %r1, %r2;", "`sqrt` takes `.f32` or `.f64`", ".u32"),
        ("sqrt.approx.f64 %rd1, %rd2;", "`sqrt.approx` takes `.f32`", ".f64"),
        ("rcp.approx.rn.f32 %r1, %r2;", "`rcp.approx` takes no rounding", ".rn"),
        (
            "rcp.approx.f64 %rd1, %rd2;",
            "`rcp.approx.f64` needs `.ftz`",
            "rcp.approx.f64 %rd1, %rd2;",
        ),
        ("div.full.f64 %rd1, %rd2, %rd3;", "`div.full` takes `.f32`", ".f64"),
        ("div.approx.rz.f32 %r1, %r2, %r3;", "`div.approx` takes no rounding", ".rz"),
    ]);
}

#[test]
fn warp_collective_forms() {
    // §9.7.13.6-9 (and the pre-`.sync` forms, without the member mask).
    accepted(&[
        "shfl.sync.bfly.b32 %r1|%p1, %r2, %r3, %r0, %r1;",
        "shfl.idx.b32 %r1, %r2, %r3, %r0;",
        "vote.sync.ballot.b32 %r1, %p1, %r2;",
        "vote.all.pred %p1, %p2;",
        "match.all.sync.b64 %r1|%p1, %rd2, %r3;",
        "activemask.b32 %r1;",
    ]);
    refused(&[
        (
            "shfl.sync.b32 %r1, %r2, %r3, %r0, %r1;",
            "`shfl` needs one of `.up`",
            "shfl.sync.b32 %r1, %r2, %r3, %r0, %r1;",
        ),
        ("shfl.sync.up.b64 %rd1, %rd2, %r3, %r0, %r1;", "`shfl` takes", ".b64"),
        (
            "shfl.sync.up.b32 %r1, %r2, %r3, %r0;",
            "`shfl` takes 5 operands here, found 4",
            "shfl.sync.up.b32 %r1, %r2, %r3, %r0;",
        ),
        (
            "vote.sync.any.pred %p1, %p2;",
            "`vote` takes 3 operands here, found 2",
            "vote.sync.any.pred %p1, %p2;",
        ),
        ("match.any.sync.b16 %r1, %h2, %r3;", "`match` takes", ".b16"),
    ]);
}

#[test]
fn select_forms() {
    // §9.7.7.3
    accepted(&[
        "slct.u32.s32 %r1, %r2, %r3, %r0;",
        "slct.ftz.f64.f32 %rd1, %rd2, %rd3, %r0;",
        "slct.b16.s32 %h1, %h2, %h3, %r0;",
    ]);
    refused(&[
        ("slct.u32 %r1, %r2, %r3, %r0;", "`slct` needs two types", "slct.u32 %r1, %r2, %r3, %r0;"),
        ("slct.pred.s32 %p1, %p2, %p3, %r0;", "`slct` takes", ".pred"),
        ("slct.u32.u32 %r1, %r2, %r3, %r0;", "`slct` takes `.s32` or `.f32` there", ".u32"),
        (
            "slct.ftz.u32.s32 %r1, %r2, %r3, %r0;",
            "`slct.ftz` takes `.f32`",
            "slct.ftz.u32.s32 %r1, %r2, %r3, %r0;",
        ),
    ]);
}

#[test]
fn comparison_forms() {
    // §9.7.7.1-2: a comparison; with `.and`/`.or`/`.xor` a fourth operand, `c`.
    accepted(&[
        "setp.lt.s32 %p1, %r2, %r3;",
        "setp.ge.and.u64 %p1|%p2, %rd2, %rd3, %p3;",
        "set.eq.u32.f32 %r1, %r2, %r3;",
        "set.ne.or.f32.s32 %r1, %r2, %r3, !%p1;",
        // §9.7.4.6: half comparisons; `.ftz` with `.f16` only.
        "setp.lt.ftz.f16 %p1, %h2, %h3;",
        "setp.lt.bf16x2 %p1|%p2, %r2, %r3;",
        "set.lt.ftz.u16.f16 %h1, %h2, %h3;",
        "set.lt.u32.bf16 %r1, %h2, %h3;",
        "set.ne.bf16x2.f16x2 %r1, %r2, %r3;",
        "setp.gt.f16x2 _|%p2, %r2, %r3;",
    ]);
    // §9.7.4.6: an x2 comparison writes a predicate per lane, `p|q`.
    refused(&[
        ("setp.lt.f16x2 %p1, %r2, %r3;", "an x2 `setp` writes two predicates `p|q`", ".f16x2"),
        ("setp.lt.or.bf16x2 %p1, %r2, %r3, %p3;", "an x2 `setp` writes", ".bf16x2"),
    ]);
    refused(&[
        (
            "setp.lt.ftz.bf16 %p1, %h2, %h3;",
            "`setp.bf16` takes no `.ftz`",
            "setp.lt.ftz.bf16 %p1, %h2, %h3;",
        ),
        (
            "set.lt.ftz.u32.bf16x2 %r1, %r2, %r3;",
            "`set.ftz` takes `.f16x2` as its last type",
            "set.lt.ftz.u32.bf16x2 %r1, %r2, %r3;",
        ),
        // §9.7.7.1, §9.7.4.7: the destination types each source type allows.
        (
            "set.lt.u16.s32 %h1, %r2, %r3;",
            "`set` takes `.u32`, `.s32`, `.f32`, `.f16` or `.bf16` there",
            ".u16",
        ),
        ("set.lt.f32.f16 %r1, %h2, %h3;", "`set` takes", ".f32"),
        ("set.lt.f16.f16x2 %r1, %r2, %r3;", "`set` takes", ".f16"),
        ("set.lt.u32 %r1, %r2, %r3;", "`set` needs two types", "set.lt.u32 %r1, %r2, %r3;"),
        (
            "setp.s32 %p1, %r2, %r3;",
            "`setp` needs a comparison such as `.lt`",
            "setp.s32 %p1, %r2, %r3;",
        ),
        (
            "setp.lt.and.s32 %p1, %r2, %r3;",
            "`setp` takes 4 operands here, found 3",
            "setp.lt.and.s32 %p1, %r2, %r3;",
        ),
        ("set.u32.s32 %r1, %r2, %r3;", "`set` needs a comparison", "set.u32.s32 %r1, %r2, %r3;"),
        (
            "set.lt.u32.s32 %r1, %r2, %r3, %p1;",
            "`set` takes 3 operands here, found 4",
            "set.lt.u32.s32 %r1, %r2, %r3, %p1;",
        ),
        // §9.7.7.1-2: unordered comparisons and `.ftz` compare floats only.
        (
            "setp.ltu.s32 %p1, %r2, %r3;",
            "unordered comparisons take floating-point types",
            "setp.ltu.s32 %p1, %r2, %r3;",
        ),
        (
            "setp.num.pred %p1, %p2, %p3;",
            "unordered comparisons take floating-point types",
            "setp.num.pred %p1, %p2, %p3;",
        ),
        (
            "setp.eq.ftz.u64 %p1, %rd2, %rd3;",
            "`.ftz` takes floating-point types",
            "setp.eq.ftz.u64 %p1, %rd2, %rd3;",
        ),
        (
            "set.nan.f32.b32 %r1, %r2, %r3;",
            "unordered comparisons take floating-point types",
            "set.nan.f32.b32 %r1, %r2, %r3;",
        ),
        (
            "set.gt.ftz.u32.s16 %r1, %h2, %h3;",
            "`.ftz` takes floating-point types",
            "set.gt.ftz.u32.s16 %r1, %h2, %h3;",
        ),
    ]);
    // The same comparisons of floats, and of half types (compared as f32).
    accepted(&[
        "setp.ltu.ftz.f32 %p1, %r2, %r3;",
        "setp.nan.f64 %p1, %rd2, %rd3;",
        "set.geu.ftz.u32.f32 %r1, %r2, %r3;",
        "setp.num.f16 %p1, %h2, %h3;",
    ]);
}

#[test]
fn core_arithmetic_forms() {
    // §9.7.1.1-4, §9.7.3.1-7, §9.7.1.12-13, §9.7.3.11-12.
    accepted(&[
        "add.s32 %r1, %r2, %r3;",
        "add.sat.s32 %r1, %r2, %r3;",
        "add.u16x2 %r1, %r2, %r3;",
        "add.rz.ftz.sat.f32 %r1, %r2, %r3;",
        "sub.rn.f64 %rd1, %rd2, %rd3;",
        "mul.wide.s32 %rd1, %r2, %r3;",
        "mul.rn.ftz.sat.f32 %r1, %r2, %r3;",
        "mad.lo.u64 %rd1, %rd2, %rd3, %rd0;",
        "mad.rn.ftz.sat.f32 %r1, %r2, %r3, %r0;",
        "fma.rm.f64 %rd1, %rd2, %rd3, %rd0;",
        "min.relu.s16x2 %r1, %r2, %r3;",
        "max.relu.s32 %r1, %r2, %r3;",
        "min.ftz.NaN.xorsign.abs.f32 %r1, %r2, %r3;",
        "max.NaN.abs.f32 %r1, %r2, %r3, %r0;",
        "min.u64 %rd1, %rd2, %rd3;",
        "div.rn.ftz.f32 %r1, %r2, %r3;",
        "div.s64 %rd1, %rd2, %rd3;",
        "neg.ftz.f32 %r1, %r2;",
        "sqrt.rz.f64 %rd1, %rd2;",
    ]);
    refused(&[
        // Integer `.sat` is `add.sat.s32`/`sub.sat.s32`; it takes no rounding, `.ftz`,
        // `.relu` or packed format.
        ("add.sat.u32 %r1, %r2, %r3;", "`add` takes `.s32`", ".u32"),
        ("add.rn.sat.s32 %r1, %r2, %r3;", "takes no rounding", ".rn"),
        ("sub.sat.relu.s32 %r1, %r2, %r3;", "modifier `.relu` for `sub`", ".relu"),
        ("add.sat.u16x2.s32 %r1, %r2, %r3;", "`add` takes no type here", ".s32"),
        // Only `add`, `min` and `max` have packed forms (§9.7.1; ptxas 13 refuses these).
        ("sub.u16x2 %r1, %r2, %r3;", "modifier `.u16x2` for `sub`", ".u16x2"),
        ("mul.lo.s16x2 %r1, %r2, %r3;", "modifier `.s16x2` for `mul`", ".s16x2"),
        (
            "add.u16x2.s16x2 %r1, %r2, %r3;",
            "needs `.u16x2` or `.s16x2`",
            "add.u16x2.s16x2 %r1, %r2, %r3;",
        ),
        (
            "add.sat.f64 %rd1, %rd2, %rd3;",
            "`add.sat` takes `.f32`",
            "add.sat.f64 %rd1, %rd2, %rd3;",
        ),
        ("add.pred %p1, %p2, %p3;", "`add` takes", ".pred"),
        ("mul.rz.hi.f32 %r1, %r2, %r3;", "takes no `.lo/.hi/.wide`", ".hi"),
        ("mul.sat.lo.s32 %r1, %r2, %r3;", "`mul` takes no `.sat`", "mul.sat.lo.s32 %r1, %r2, %r3;"),
        ("mul.u32 %r1, %r2, %r3;", "`mul` needs `.lo`, `.hi` or `.wide`", "mul.u32 %r1, %r2, %r3;"),
        ("mad.rn.lo.u32 %r1, %r2, %r3, %r0;", "takes no rounding", ".rn"),
        ("mad.f32 %r1, %r2, %r3, %r0;", "needs a rounding", "mad.f32 %r1, %r2, %r3, %r0;"),
        ("fma.f32 %r1, %r2, %r3, %r0;", "needs a rounding", "fma.f32 %r1, %r2, %r3, %r0;"),
        ("fma.rn.u32 %r1, %r2, %r3, %r0;", "`fma` takes", ".u32"),
        ("min.ftz.relu.s32 %r1, %r2, %r3;", "takes no `.ftz`", "min.ftz.relu.s32 %r1, %r2, %r3;"),
        ("min.relu.u16x2 %r1, %r2, %r3;", "`.relu` goes with `.s16x2`", ".relu"),
        ("max.xorsign.f32 %r1, %r2, %r3;", "needs `.abs`", "max.xorsign.f32 %r1, %r2, %r3;"),
        ("max.NaN.f64 %rd1, %rd2, %rd3;", "modifier `.NaN`", ".NaN"),
        ("min.s32 %r1, %r2, %r3, %r0;", "takes 3 operands", "min.s32 %r1, %r2, %r3, %r0;"),
        (
            "div.approx.full.f32 %r1, %r2, %r3;",
            "needs `.approx` or `.full`",
            "div.approx.full.f32 %r1, %r2, %r3;",
        ),
        ("div.f64 %rd1, %rd2, %rd3;", "needs a rounding", "div.f64 %rd1, %rd2, %rd3;"),
        ("neg.ftz.s32 %r1, %r2;", "`neg.ftz` takes", "neg.ftz.s32 %r1, %r2;"),
    ]);
}

#[test]
fn conversion_forms() {
    // §9.7.9.21: integral roundings from floats to integers, float roundings to floats.
    accepted(&[
        "cvt.rzi.s32.f32 %r1, %r2;",
        "cvt.rn.f32.u64 %r1, %rd2;",
        "cvt.rn.f32.f64 %r1, %rd2;",
        "cvt.f64.f32 %rd1, %r2;",
        "cvt.rni.ftz.f32.f32 %r1, %r2;",
        "cvt.sat.u8.s32 %r1, %r2;",
        "cvt.pack.sat.s16.s32 %r1, %r2, %r3;",
        "cvt.pack.sat.s4.s32.b32 %r1, %r2, %r3, %r0;",
        // The directed roundings: to `.f32` from `.f64`, to a float from an integer.
        "cvt.rz.f32.f64 %r1, %rd2;",
        "cvt.rm.ftz.sat.f32.s32 %r1, %r2;",
        "cvt.rp.f64.u64 %rd1, %rd2;",
    ]);
    refused(&[
        ("cvt.s32.f32 %r1, %r2;", "needs `.rni`", "cvt.s32.f32 %r1, %r2;"),
        ("cvt.rn.s32.f32 %r1, %r2;", "rounds to an integral value", ".rn"),
        ("cvt.f32.s32 %r1, %r2;", "needs `.rn`", "cvt.f32.s32 %r1, %r2;"),
        ("cvt.rn.u32.s32 %r1, %r2;", "takes no rounding", ".rn"),
        ("cvt.ftz.u32.s32 %r1, %r2;", "`.ftz` takes a floating-point", "cvt.ftz.u32.s32 %r1, %r2;"),
        ("cvt.relu.f32.f64 %r1, %rd2;", "modifier `.relu`", ".relu"),
        ("cvt.u32.pred %r1, %p2;", "`cvt` takes", ".pred"),
        ("cvt.rz.f32.f32 %r1, %r2;", "rounds to an integral value", ".rz"),
        ("cvt.rp.s32.f32 %r1, %r2;", "rounds to an integral value", ".rp"),
        ("cvt.rm.f64.f32 %rd1, %r2;", "takes no rounding", ".rm"),
        (
            "cvt.rz.ftz.f64.s32 %rd1, %r2;",
            "`.ftz` applies to `.f32`",
            "cvt.rz.ftz.f64.s32 %rd1, %r2;",
        ),
        ("cvt.rz.pack.sat.u8.s32 %r1, %r2, %r3;", "modifier `.pack`", ".pack"),
        // `cvt.pack.sat` from `.s32`, with `c` below 16 bits.
        (
            "cvt.pack.u16.s32 %r1, %r2, %r3;",
            "`cvt.pack.sat` from `.s32`",
            "cvt.pack.u16.s32 %r1, %r2, %r3;",
        ),
        (
            "cvt.pack.sat.u4.s32.b32 %r1, %r2, %r3;",
            "takes 4 operands",
            "cvt.pack.sat.u4.s32.b32 %r1, %r2, %r3;",
        ),
        ("cvt.pack.sat.relu.u8.s32.b32 %r1, %r2, %r3, %r0;", "modifier `.relu`", ".relu"),
    ]);
}

#[test]
fn branch_table_forms() {
    // §9.7.13.3: `brx.idx{.uni} index, tlist`.
    accepted(&["brx.idx %r1, tab;", "brx.idx.uni %r1, tab;"]);
    refused(&[
        ("brx %r1, tab;", "`brx` needs `.idx`", "brx %r1, tab;"),
        ("brx.uni %r1, tab;", "`brx` needs `.idx`", "brx.uni %r1, tab;"),
    ]);
}

#[test]
fn redux_fence_and_cvta_forms() {
    // §9.7.13.7, §9.7.13.4, §9.7.9.19.
    accepted(&[
        "redux.sync.add.u32 %r1, %r2, %r3;",
        "redux.sync.xor.b32 %r1, %r2, %r3;",
        "redux.sync.max.abs.NaN.f32 %r1, %r2, %r3;",
        "fence.acq_rel.gpu;",
        "fence.mbarrier_init.release.cluster;",
        "membar.gl;",
        "cvta.to.shared.u64 %rd1, %rd2;",
        "cvta.local.u32 %r1, %r2;",
        // §9.7.9.18
        "isspacep.const %p1, %rd1;",
        "isspacep.param %p1, %rd1;",
    ]);
    refused(&[
        ("redux.add.u32 %r1, %r2, %r3;", "needs `.sync`", "redux.add.u32 %r1, %r2, %r3;"),
        (
            "redux.sync.add.min.u32 %r1, %r2, %r3;",
            "needs one of `.add`, `.min`, `.max`",
            "redux.sync.add.min.u32 %r1, %r2, %r3;",
        ),
        (
            "redux.sync.min.and.f32 %r1, %r2, %r3;",
            "takes no `.and`",
            "redux.sync.min.and.f32 %r1, %r2, %r3;",
        ),
        ("redux.sync.add.u64 %rd1, %rd2, %r3;", "`redux` takes", ".u64"),
        ("redux.sync.abs.and.b32 %r1, %r2, %r3;", "modifier `.abs`", ".abs"),
        ("membar.proxy;", "modifier `.proxy`", ".proxy"),
        ("fence.relaxed.gpu;", "modifier `.relaxed`", ".relaxed"),
        ("cvta.global.f64 %rd1, %rd2;", "`cvta` takes", ".f64"),
        ("cvta.u64 %rd1, %rd2;", "`cvta` takes `.global`", "cvta.u64 %rd1, %rd2;"),
        ("isspacep %p1, %rd1;", "`isspacep` takes `.global`", "isspacep %p1, %rd1;"),
    ]);
}

#[test]
fn atomic_barrier_cluster_and_stack_forms() {
    // §9.7.13.5-6: `atom{.sem}{.scope}{.space}.op{.level::cache_hint}.type`, `red` the
    // same without a destination; `.noftz` on the half forms.
    accepted(&[
        "atom.acq_rel.gpu.global.add.u32 %r1, [%rd1], %r2;",
        "atom.relaxed.cluster.shared.cas.b64 %rd1, [%rd2], %rd3, %rd0;",
        "atom.global.add.noftz.f16 %h1, [%rd1], %h2;",
        "red.release.sys.global.add.L2::cache_hint.u32 [%rd1], %r2, %rd2;",
        "red.global.inc.u32 [%rd1], %r2;",
    ]);
    refused(&[
        ("atom.weak.global.add.u32 %r1, [%rd1], %r2;", "modifier `.weak` for `atom`", ".weak"),
        ("red.gl.global.add.u32 [%rd1], %r2;", "modifier `.gl` for `red`", ".gl"),
        ("atom.global.nc.add.u32 %r1, [%rd1], %r2;", "modifier `.nc` for `atom`", ".nc"),
    ]);
    // §9.7.13.1-2: `bar{.cta}.sync`, `barrier{.cta}.sync{.aligned}`, `.red.popc.u32`,
    // `.red.and.pred`; `bar.warp.sync`.
    accepted(&[
        "bar.sync 0;",
        "barrier.cta.sync.aligned 0, %r1;",
        "bar.red.popc.u32 %r1, 0, %p1;",
        "barrier.red.and.pred %p2, 0, %p1;",
        "bar.warp.sync -1;",
        // Refused by sema as unsupported, not here.
        "bar.arrive 0, 64;",
    ]);
    refused(&[
        ("bar.sync.popc 0;", "modifier `.popc` for `bar`", ".popc"),
        ("bar.cta.warp.sync -1;", "modifier `.cta` for `bar`", ".cta"),
    ]);
    // §9.7.13.8: `barrier.cluster.arrive{.release|.relaxed}{.aligned}`,
    // `barrier.cluster.wait{.acquire}{.aligned}`, no operands.
    accepted(&["barrier.cluster.arrive.release.aligned;", "barrier.cluster.wait.acquire;"]);
    refused(&[
        ("barrier.cluster.wait.popc;", "modifier `.popc` for `barrier`", ".popc"),
        (
            "barrier.cluster.arrive 0;",
            "`barrier.cluster` takes 0 operands",
            "barrier.cluster.arrive 0;",
        ),
        (
            "barrier.cluster.aligned;",
            "`barrier.cluster` needs `.arrive` or `.wait`",
            "barrier.cluster.aligned;",
        ),
    ]);
    // §9.7.9.23: `mapa{.space}.type d, a, b`, `getctarank{.space}.type d, a` (.u32/.u64);
    // §9.7.17: `alloca.type ptr, size{, align}`, `stacksave.type`, `stackrestore.type`.
    accepted(&[
        "mapa.shared::cluster.u32 %r1, %r2, %r3;",
        "getctarank.u64 %r1, %rd2;",
        "alloca.u64 %rd1, 16, 32;",
        "stacksave.u32 %r1;",
        "stackrestore.b64 %rd1;",
    ]);
    refused(&[
        ("mapa.s32 %r1, %r2, %r3;", "`mapa` takes `.u32`, `.u64`, `.b32` or `.b64`", ".s32"),
        ("getctarank.u16 %h1, %h2;", "`getctarank` takes", ".u16"),
        ("stacksave.s64 %rd1;", "`stacksave` takes", ".s64"),
    ]);
}

#[test]
fn texture_and_surface_operand_forms() {
    // §9.7.10.3-5, §9.7.11.1-4: the coordinates of each geometry (the layer first, four
    // of a 3-D or layered 2-D one), four results (two `.f16x2`), a level or two
    // gradients, one texel offset per dimension (four in 3-D).
    const D4: &str = "{%r1, %r2, %r3, %r0}";
    accepted(&[
        &format!("tex.2d.v4.f32.f32 {D4}, [%rd1, {{%r1, %r2}}];"),
        // PTX ISA 1.x: four coordinates of a 1-D fetch, the unused ones ignored.
        &format!("tex.1d.v4.f32.s32 {D4}, [%rd1, {{%r1, %r1, %r1, %r1}}];"),
        &format!("tex.a2d.v4.s32.f32 {D4}|%p1, [%rd1, %rd2, {{%r1, %r2, %r3, %r3}}];"),
        &format!("tex.grad.3d.v4.f32.f32 {D4}, [%rd1, {D4}], {D4}, {D4}, {{1, 2, 3, 0}};"),
        "tex.level.2d.v2.f16x2.f32 {%r1, %r2}, [%rd1, {%r1, %r2}], %r3;",
        &format!("tex.acube.v4.f32.f32 {D4}, [%rd1, {D4}];"),
        &format!("tld4.g.a2d.v4.u32.f32 {D4}, [%rd1, {D4}], {{1, -1}};"),
        "txq.level.width.b32 %r1, [%rd1], %r2;",
        "txq.addr_mode_1.b32 %r1, [%rd1];",
        "suq.array_size.b32 %r1, [%rd1];",
        "suld.b.a1d.v2.b32.trap {%r1, %r2}, [%rd1, {%r1, %r2}];",
        &format!("sust.p.3d.v4.b32.zero [%rd1, {D4}], {D4};"),
        "sured.p.min.2d.trap.b64 [%rd1, {%r1, %r2}], %rd2;",
        "sured.b.and.1d.b32 [%rd1, {%r1}], %r2;",
    ]);
    let fetch = format!("tex.2d.v4.f32.f32 {D4}, [%rd1, {{%r1}}];");
    let cube = format!("tex.cube.v4.f32.s32 {D4}, [%rd1, {D4}];");
    let offsets = format!("tex.2d.v4.f32.f32 {D4}, [%rd1, {{%r1, %r2}}], {{1, 2, 3}};");
    let tld4 = format!("tld4.r.2d.v4.f32.f32 {D4}, [%rd1, {D4}];");
    let suld = "suld.b.2d.v2.b32.trap {%r1, %r2}, [%rd1, {%r1}];";
    let sured = "sured.b.add.1d.trap.b16 [%rd1, {%r1}], %h1;";
    let sured_p = "sured.p.add.1d.trap.b64 [%rd1, {%r1}], %rd1;";
    refused(&[
        (
            &format!("tex.2dms.v4.f32.s32 {D4}, [%rd1, {{%r1, %r2}}];"),
            "`tex` with `.2dms` is not supported yet",
            &format!("tex.2dms.v4.f32.s32 {D4}, [%rd1, {{%r1, %r2}}];"),
        ),
        (&fetch, "takes 2 coordinates and writes 4 values", "[%rd1, {%r1}]"),
        (
            &format!("tex.level.2d.v4.f32.f32 {D4}, [%rd1, {{%r1, %r2}}];"),
            "`tex` is missing its level or gradients",
            &format!("tex.level.2d.v4.f32.f32 {D4}, [%rd1, {{%r1, %r2}}];"),
        ),
        (
            &format!("tex.2d.v4.f32.f32 {D4}, [%rd1, {{%r1, %r2}}], {{1, 2}}, %r3;"),
            "`tex` with depth compare is not supported yet",
            "%r3",
        ),
        ("tex.2d.v4.f32.f32 %r1, [%rd1, {%r1, %r2}];", "writes a vector", "%r1"),
        (
            &format!("tex.2d.v4.f32.f32 {D4}, [%rd1];"),
            "expected `[texture, {coordinates}]`",
            "[%rd1]",
        ),
        (&cube, "cube-map coordinates are `.f32`", &cube),
        (&offsets, "this fetch takes 2 texel offsets", &offsets),
        (&tld4, "this `tld4` takes 2 coordinates and writes 4 values", &tld4),
        (
            &format!("tld4.r.cube.v4.f32.f32 {D4}, [%rd1, {D4}];"),
            "`tld4` with `.cube` is not supported yet",
            &format!("tld4.r.cube.v4.f32.f32 {D4}, [%rd1, {D4}];"),
        ),
        ("txq.width.b32 %r1, [42];", "expected `[handle]`", "[42]"),
        (
            "txq.channel_order.b32 %r1, [%rd1];",
            "`txq.channel_order` is not supported yet",
            "txq.channel_order.b32 %r1, [%rd1];",
        ),
        (
            "suq.filter_mode.b32 %r1, [%rd1];",
            "`suq.filter_mode` is not supported yet",
            "suq.filter_mode.b32 %r1, [%rd1];",
        ),
        (suld, "this `suld` takes 2 coordinates and 2 values", suld),
        ("sust.b.1d.b32.trap [%rd1], %r1;", "expected `[surface, {coordinates}]`", "[%rd1]"),
        (sured, "`sured` takes a 32- or 64-bit value", sured),
        (sured_p, "`sured.p` is `.b32`, or `.b64` with `.min` and `.max`", sured_p),
    ]);
}

#[test]
fn vector_atomic_forms() {
    // §9.7.13.5-6 (sm_90, PTX ISA 8.1): vector `atom`/`red` on `.global` (or a generic
    // address) only, `.add` on `.v2`/`.v4` `.f32`, and `.op.noftz` (`.op = { .add, .min,
    // .max }`) on `.v2`/`.v4`/`.v8` `.f16`/`.bf16` and `.v2`/`.v4` `.f16x2`/`.bf16x2`.
    accepted(&[
        "atom.global.v4.f32.add {%r0, %r1, %r2, %r3}, [%rd1], {%r0, %r1, %r2, %r3};",
        "atom.relaxed.gpu.global.add.L2::cache_hint.v2.f32 {%r0, %r1}, [%rd1], {%r0, %r1}, %rd2;",
        "red.release.sys.add.v2.f32 [%rd1], {%r0, %r1};",
        "atom.global.min.noftz.v2.f16 {%h0, %h1}, [%rd1], {%h0, %h1};",
        "red.global.max.noftz.v8.bf16 [%rd1], {%h0, %h1, %h2, %h3, %h0, %h1, %h2, %h3};",
        "atom.add.noftz.v4.f16x2 {%r0, %r1, %r2, %r3}, [%rd1], {%r0, %r1, %r2, %r3};",
        "red.global.max.noftz.v2.bf16x2 [%rd1], {%r0, %r1};",
    ]);
    // Each of these was accepted (and lowered) before this check, except the `.shared` one,
    // `.max.v2.f32` and `.add.v2.f16` (no `.noftz`), which semantic analysis refused.
    let all_ops = "takes `.op = { .add, .min, .max }` (PTX ISA 9.2 §9.7.13.5)";
    let red_types = "`red` with vector type takes `.f32`, `.f16`, `.bf16`, `.f16x2` or `.bf16x2`";
    refused(&[
        ("atom.global.exch.v2.u32 {%r0, %r1}, [%rd1], {%r0, %r1};", all_ops, ".exch"),
        ("atom.global.cas.v2.b32 {%r0, %r1}, [%rd1], {%r0, %r1}, %r2;", all_ops, ".cas"),
        (
            "atom.global.inc.v4.u32 {%r0, %r1, %r2, %r3}, [%rd1], {%r0, %r1, %r2, %r3};",
            all_ops,
            ".inc",
        ),
        ("atom.global.dec.v2.u32 {%r0, %r1}, [%rd1], {%r0, %r1};", all_ops, ".dec"),
        ("red.global.and.v2.b32 [%rd1], {%r0, %r1};", "takes `.op = { .add, .min, .max }`", "red"),
        ("red.global.add.v2.u32 [%rd1], {%r0, %r1};", red_types, ".u32"),
        ("atom.global.add.v2.u64 {%rd0, %rd1}, [%rd1], {%rd0, %rd1};", "takes `.f32`", ".u64"),
        (
            "red.global.add.v8.f64 [%rd1], {%rd0, %rd1, %rd2, %rd3, %rd0, %rd1, %rd2, %rd3};",
            red_types,
            ".f64",
        ),
        (
            "red.global.add.v8.f32 [%rd1], {%r0, %r1, %r2, %r3, %r0, %r1, %r2, %r3};",
            "on `.f32` takes `.v2` or `.v4`, not `.v8`",
            ".f32",
        ),
        (
            "red.global.min.noftz.v8.bf16x2 [%rd1], {%r0, %r1, %r2, %r3, %r0, %r1, %r2, %r3};",
            "on `.bf16x2` takes `.v2` or `.v4`, not `.v8`",
            ".bf16x2",
        ),
        (
            "atom.global.add.noftz.v4.f32 {%r0, %r1, %r2, %r3}, [%rd1], {%r0, %r1, %r2, %r3};",
            "on `.f32` takes no `.noftz`",
            ".noftz",
        ),
        (
            "atom.global.max.v2.f32 {%r0, %r1}, [%rd1], {%r0, %r1};",
            "on `.f32` takes `.add` only",
            ".max",
        ),
        (
            "atom.shared.add.noftz.v2.f16 {%h0, %h1}, [%rd1], {%h0, %h1};",
            "may be used only with `.global` space, not `.shared`",
            ".shared",
        ),
        ("red.global.add.v2.f16 [%rd1], {%h0, %h1};", "on `.f16` needs `.noftz`", ".f16"),
    ]);
}

#[test]
fn copy_and_mbarrier_forms() {
    // §9.7.9.25.3: `cp.async.ca|cg.shared{::cta}.global{.level::cache_hint}
    // {.level::prefetch_size} [dst], [src], cp-size{, src-size | ignore-src}{,
    // cache-policy}`; `.cg` copies 16 bytes; the groups.
    // §9.7.9.25.4-5: bulk and tensor copies; §9.7.13.15: mbarrier objects.
    accepted(&[
        "cp.async.ca.shared.global [%rd1], [%rd2], 4;",
        "cp.async.cg.shared::cta.global.L2::128B [%rd1], [%rd2], 16, %r1;",
        "cp.async.ca.shared.global.L2::cache_hint [%rd1], [%rd2], 8, !%p1, %rd3;",
        "cp.async.wait_group 1;",
        "cp.async.mbarrier.arrive.noinc.shared.b64 [%rd1];",
        // ptxas 13 also takes `.u64` and no type.
        "cp.async.mbarrier.arrive.shared.u64 [%rd1];",
        "cp.async.mbarrier.arrive [%rd1];",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster \
         [%rd1], [%rd2], %r1, [%rd3], %h1;",
        "cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%rd1], [%rd2], 64, %rd3;",
        "cp.async.bulk.wait_group.read 0;",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
         [%rd1], [%rd2, {%r1, %r2}], [%rd3];",
        "cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%rd2, {%r1}], [%rd1];",
        "mbarrier.init.shared::cta.b64 [%rd1], 4;",
        "mbarrier.arrive.expect_tx.b64 %rd2, [%rd1], 16;",
        "mbarrier.try_wait.parity.shared.b64 %p1, [%rd1], %r1, 100;",
        "mbarrier.pending_count.b64 %r1, %rd2;",
    ]);
    refused(&[
        ("cp.async.cg.shared.global [%rd1], [%rd2], 8;", "cp-size is 4, 8 or 16 (`.cg`: 16)", "8"),
        (
            "cp.async.ca.global.shared [%rd1], [%rd2], 4;",
            "copies from `.global` to `.shared`",
            "cp.async.ca.global.shared [%rd1], [%rd2], 4;",
        ),
        ("cp.async.commit_group 1;", "takes 0 operand(s)", "cp.async.commit_group 1;"),
        (
            "cp.async.bulk.shared::cluster.global.bulk_group [%rd1], [%rd2], 64;",
            "copies into `.shared` on an mbarrier",
            "cp.async.bulk.shared::cluster.global.bulk_group [%rd1], [%rd2], 64;",
        ),
        (
            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd2, {%r1}], [%rd1];",
            "a 2-D copy takes 2 coordinates",
            "[%rd2, {%r1}]",
        ),
        (
            "cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes \
             [%rd1], [%rd2, {%r1, %r2}], [%rd3];",
            "is not supported yet",
            "cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes \
             [%rd1], [%rd2, {%r1, %r2}], [%rd3];",
        ),
        // §9.7.9.25.3-5: no type (ptxas 13: "Unexpected instruction types").
        (
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.b32 \
             [%rd1], [%rd2], 64, [%rd3];",
            "takes no type (PTX ISA 9.2 §9.7.9.25.4)",
            ".b32",
        ),
        (
            "cp.async.bulk.global.shared::cta.bulk_group.u8 [%rd1], [%rd2], 64;",
            "takes no type (PTX ISA 9.2 §9.7.9.25.4)",
            ".u8",
        ),
        ("cp.async.bulk.commit_group.b64;", "takes no type", ".b64"),
        ("cp.async.bulk.prefetch.L2.global.b32 [%rd1], 64;", "takes no type", ".b32"),
        (
            "cp.async.bulk.tensor.1d.global.shared::cta.bulk_group.b32 [%rd2, {%r1}], [%rd1];",
            "takes no type (PTX ISA 9.2 §9.7.9.25.5)",
            ".b32",
        ),
        ("cp.async.wait_all.b32;", "takes no type (PTX ISA 9.2 §9.7.9.25.3)", ".b32"),
        (
            "cp.async.ca.shared.global.b32 [%r1], [%rd2], 4;",
            "`cp.async.ca.shared.global` takes no type (PTX ISA 9.2 §9.7.9.25.3)",
            ".b32",
        ),
        (
            "cp.async.cg.shared.global.L2::128B.u64 [%r1], [%rd2], 16;",
            "takes no type (PTX ISA 9.2 §9.7.9.25.3)",
            ".u64",
        ),
        (
            "cp.async.mbarrier.arrive.noinc.shared.b32 [%rd1];",
            "`cp.async.mbarrier.arrive` takes the type `.b64` (PTX ISA 9.2 §9.7.9.25.3.4)",
            ".b32",
        ),
        ("cp.async.mbarrier.arrive.s64 [%rd1];", "takes the type `.b64`", ".s64"),
        ("mbarrier.init.global.b64 [%rd1], 4;", "an mbarrier is in `.shared` memory", ".global"),
        ("mbarrier.inval.b64 [%rd1], 4;", "`.inval` takes [addr]", "mbarrier.inval.b64 [%rd1], 4;"),
    ]);
}
