//! The instruction forms that need a newer target than the module's `.target` (each
//! instruction's *Target ISA Notes* in PTX ISA 9.2): refused at the instruction, so
//! that a kernel tested with ptxvk does not use a form NVIDIA's assembler rejects for
//! its target. A module without an `sm_XX` target is not checked.
//!
//! The forms are the rows of [`GATES`] (among them `atom` and `red` with a vector type,
//! `.v2`, `.v4`, `.v8`, sm_90, §9.7.13.5-6) and the special registers of sm_90
//! ([`SM90_REGISTERS`]). Each row is the lowest target the ISA names for the form:
//! forms that need an architecture-specific target (`setmaxnreg` needs `sm_90a`,
//! `redux.sync.f32` `sm_100a`) are checked against the number only, and forms that
//! need sm_70 or older are not checked (CUDA 13's `ptxas`, against which every row was
//! tried one target below and at its own, assembles nothing older than sm_75).

use crate::ast::{Function, Instruction, Item, Module, Operand, Statement};
use crate::diagnostic::Diagnostic;
use crate::instructions::{pattern_matches, Opcode};

/// The `XX` of the module's `sm_XX` target (`sm_90a` is 90), if it names one; the
/// highest of them for text that names several (files concatenated, as the front end's
/// corpus test does).
fn sm_version(module: &Module) -> Option<u32> {
    module
        .target
        .iter()
        .filter_map(|t| {
            let digits = t.value.strip_prefix("sm_")?;
            let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
            digits[..end].parse().ok()
        })
        .max()
}

/// The `sm_XX` that `i` needs, with the section that says so, for the forms above.
fn needs(i: &Instruction) -> Option<(u32, &'static str)> {
    GATES
        .iter()
        .filter(|g| g.selects(i))
        .map(|g| (g.sm, g.section))
        .chain(sm90_register(i).map(|(_, section)| (90, section)))
        .max_by_key(|&(sm, _)| sm)
}

/// A form that needs `.target sm_{sm}` or higher: instruction `op` (any with `None`)
/// with every modifier of `all`, none of `none` and, unless `any` is empty, one of
/// `any` (patterns of [`pattern_matches`]), and `operands` operands when given.
struct Gate {
    op: Option<Opcode>,
    all: &'static [&'static str],
    any: &'static [&'static str],
    none: &'static [&'static str],
    operands: Option<usize>,
    sm: u32,
    section: &'static str,
}

impl Gate {
    fn selects(&self, i: &Instruction) -> bool {
        let has = |p: &&str| i.modifiers.iter().any(|m| pattern_matches(p, &m.value));
        self.op.is_none_or(|op| i.op == Some(op))
            && self.all.iter().all(has)
            && !self.none.iter().any(has)
            && (self.any.is_empty() || self.any.iter().any(has))
            && self.operands.is_none_or(|n| i.operands.len() == n)
    }
}

/// A row of [`GATES`] for instruction `op` with one of the modifiers `any`.
const fn gate(op: Opcode, any: &'static [&'static str], sm: u32, section: &'static str) -> Gate {
    Gate { op: Some(op), all: &[], any, none: &[], operands: None, sm, section }
}

/// `min`/`max` of three inputs, `max.f32 d, a, b, c` (sm_100, §9.7.3).
const fn three_inputs(op: Opcode) -> Gate {
    Gate {
        op: Some(op),
        all: &[".f32"],
        any: &[],
        none: &[],
        operands: Some(4),
        sm: 100,
        section: "§9.7.3",
    }
}

/// The thread-block cluster: "applicable only on target architecture sm_90 or higher".
const CLUSTER_SECTION: &str = "§2.2.2";
const BF16: &[&str] = &[".bf16", ".bf16x2"];
/// `atom`/`red` on a vector (§9.7.13.5-6).
const VECTOR: &[&str] = &[".v2", ".v4", ".v8"];
const PACKED_I16: &[&str] = &[".u16x2", ".s16x2"];
const FP8: &[&str] = &[".e4m3", ".e5m2", ".e4m3x2", ".e5m2x2"];
/// `mma`'s shapes (§9.7.14.5.14, by type): the ones sm_75 added and the ones sm_80 did.
const MMA_SM75: &[&str] = &[".m16n8k8", ".m8n8k16", ".m8n8k32", ".m8n8k128"];
const MMA_SM80: &[&str] =
    &[".m16n8k4", ".m16n8k16", ".m16n8k32", ".m16n8k64", ".m16n8k128", ".m16n8k256"];

/// The forms and the target each needs, from each instruction's Target ISA Notes in
/// PTX ISA 9.2; a form several rows select needs the highest of their targets.
const GATES: &[Gate] = &[
    // Thread-block clusters: the `.cluster` scope and the `.shared::cluster` window in
    // any instruction (`ld`, `st`, `atom`, `fence`, `barrier.cluster`, `mbarrier`, …).
    Gate {
        op: None,
        all: &[],
        any: &[".cluster", ".shared::cluster"],
        none: &[],
        operands: None,
        sm: 90,
        section: CLUSTER_SECTION,
    },
    gate(Opcode::Mapa, &[], 90, "§9.7.9.23"),
    gate(Opcode::Getctarank, &[], 90, "§9.7.9.24"),
    // Asynchronous copies (`cp.async`, its groups and `cp.async.mbarrier.arrive`),
    // bulk and tensor copies (`cp.async.bulk*`, `cp.reduce.async.bulk*`).
    gate(Opcode::Cp, &[".async"], 80, "§9.7.9.25.3"),
    gate(Opcode::Cp, &[".bulk"], 90, "§9.7.9.25.4-5"),
    gate(Opcode::Prefetch, &[".tensormap"], 90, "§9.7.9, `prefetch.tensormap`"),
    gate(Opcode::St, &[".async"], 90, "§9.7.9, `st.async`"),
    gate(Opcode::St, &[".bulk"], 100, "§9.7.9, `st.bulk`"),
    gate(Opcode::Red, &[".async"], 90, "§9.7.13, `red.async`"),
    gate(Opcode::Atom, VECTOR, 90, "§9.7.13.5"),
    gate(Opcode::Red, VECTOR, 90, "§9.7.13.6"),
    gate(Opcode::Atom, BF16, 90, "§9.7.13.5"),
    gate(Opcode::Red, BF16, 90, "§9.7.13.6"),
    gate(Opcode::Atom, &[".b128"], 90, "§9.7.13.5"),
    gate(Opcode::Multimem, &[], 90, "§9.7.9, `multimem`"),
    // mbarrier objects, and the transaction counts and `try_wait` of sm_90.
    gate(Opcode::Mbarrier, &[], 80, "§9.7.13.15"),
    gate(Opcode::Mbarrier, &[".expect_tx", ".complete_tx", ".try_wait"], 90, "§9.7.13.15"),
    // `mbarrier.arrive{_drop} state, [addr], count`: a count without `.noComplete`.
    Gate {
        op: Some(Opcode::Mbarrier),
        all: &[],
        any: &[".arrive", ".arrive_drop"],
        none: &[".noComplete"],
        operands: Some(3),
        sm: 90,
        section: "§9.7.13.15",
    },
    gate(
        Opcode::Fence,
        &[".async", ".async::*", ".tensormap::*", ".mbarrier_init"],
        90,
        "§9.7.13.4, `fence.proxy.async`/`.tensormap`, `fence.mbarrier_init`",
    ),
    gate(Opcode::Fence, &[".sync_restrict::*"], 90, "§9.7.13.4"),
    gate(Opcode::Elect, &[], 90, "§9.7.13, `elect.sync`"),
    gate(Opcode::Griddepcontrol, &[], 90, "§9.7.13, `griddepcontrol`"),
    gate(Opcode::Redux, &[], 80, "§9.7.13, `redux.sync`"),
    gate(Opcode::Redux, &[".f32"], 100, "§9.7.13, `redux.sync` (`sm_100a`)"),
    gate(Opcode::Setmaxnreg, &[], 90, "§9.7, `setmaxnreg` (`sm_90a`)"),
    // Warp-level matrices (§9.7.14.5).
    gate(Opcode::Ldmatrix, &[], 75, "§9.7.14.5.15"),
    gate(Opcode::Stmatrix, &[], 90, "§9.7.14.5.16"),
    gate(Opcode::Movmatrix, &[], 75, "§9.7.14.5.17"),
    gate(Opcode::Mma, MMA_SM75, 75, "§9.7.14.5.14"),
    gate(Opcode::Mma, MMA_SM80, 80, "§9.7.14.5.14"),
    gate(Opcode::Mma, &[".bf16", ".tf32", ".f64", ".and"], 80, "§9.7.14.5.14"),
    Gate {
        op: Some(Opcode::Mma),
        all: &[".f64"],
        any: MMA_SM80,
        none: &[],
        operands: None,
        sm: 90,
        section: "§9.7.14.5.14",
    },
    gate(Opcode::Mma, FP8, 89, "§9.7.14.5.14"),
    // Half-precision and bf16 arithmetic (§9.7.4), packed integer `add` (§9.7.1.1; `sub`
    // has no packed form), and the `min`/`max` forms of sm_80 and later (§9.7.1, §9.7.3-4).
    gate(Opcode::Add, BF16, 90, "§9.7.4.1"),
    gate(Opcode::Sub, BF16, 90, "§9.7.4.2"),
    gate(Opcode::Mul, BF16, 90, "§9.7.4.3"),
    gate(Opcode::Fma, BF16, 80, "§9.7.4.4"),
    gate(Opcode::Fma, &[".relu"], 80, "§9.7.4.4"),
    gate(Opcode::Neg, BF16, 80, "§9.7.4, `neg`"),
    gate(Opcode::Abs, BF16, 80, "§9.7.4, `abs`"),
    gate(Opcode::Add, PACKED_I16, 90, "§9.7.1.1"),
    gate(Opcode::Min, &[".f16", ".f16x2", ".bf16", ".bf16x2", ".NaN"], 80, "§9.7.3, §9.7.4"),
    gate(Opcode::Max, &[".f16", ".f16x2", ".bf16", ".bf16x2", ".NaN"], 80, "§9.7.3, §9.7.4"),
    gate(Opcode::Min, &[".xorsign"], 86, "§9.7.3, §9.7.4"),
    gate(Opcode::Max, &[".xorsign"], 86, "§9.7.3, §9.7.4"),
    gate(Opcode::Min, &[".relu", ".u16x2", ".s16x2"], 90, "§9.7.1, `min`/`max`"),
    gate(Opcode::Max, &[".relu", ".u16x2", ".s16x2"], 90, "§9.7.1, `min`/`max`"),
    three_inputs(Opcode::Min),
    three_inputs(Opcode::Max),
    gate(Opcode::Ex2, &[".f16", ".f16x2"], 75, "§9.7.4, `ex2`"),
    gate(Opcode::Ex2, BF16, 90, "§9.7.4, `ex2`"),
    gate(Opcode::Tanh, &[], 75, "§9.7.3-4, `tanh`"),
    gate(Opcode::Tanh, BF16, 90, "§9.7.4, `tanh`"),
    gate(Opcode::Cvt, &[".bf16", ".bf16x2", ".tf32"], 80, "§9.7.9, `cvt`"),
    gate(Opcode::Cvt, FP8, 89, "§9.7.9, `cvt`"),
];

/// The special registers of sm_90 (PTX ISA 9.2 §10), with the section that says so:
/// the thread-block cluster's and the CTA's aggregate shared memory size.
const SM90_REGISTERS: &[(&str, &str)] = &[
    ("%is_explicit_cluster", CLUSTER_SECTION),
    ("%clusterid", CLUSTER_SECTION),
    ("%nclusterid", CLUSTER_SECTION),
    ("%cluster_ctaid", CLUSTER_SECTION),
    ("%cluster_nctaid", CLUSTER_SECTION),
    ("%cluster_ctarank", CLUSTER_SECTION),
    ("%cluster_nctarank", CLUSTER_SECTION),
    ("%aggr_smem_size", "§10, `%aggr_smem_size`"),
];

/// The sm_90 special register an operand of `i` names, with its section, if one does.
fn sm90_register(i: &Instruction) -> Option<(&'static str, &'static str)> {
    fn named(o: &Operand) -> Option<(&'static str, &'static str)> {
        match o {
            Operand::Name { name, .. } => {
                SM90_REGISTERS.iter().copied().find(|&(r, _)| r == name.value.as_str())
            }
            Operand::Not(o, _) | Operand::Neg(o, _) => named(o),
            Operand::Vector(v, _) | Operand::List(v, _) | Operand::Tuple(v, _) => {
                v.iter().find_map(named)
            }
            Operand::Pair(a, b, _) => named(a).or_else(|| named(b)),
            Operand::Imm(_) | Operand::Address(_) | Operand::Sink(_) => None,
        }
    }
    i.operands.iter().find_map(named)
}

/// Checks every instruction of `module` against its target, appending diagnostics.
pub fn check_module(module: &Module, errors: &mut Vec<Diagnostic>) {
    let Some(sm) = sm_version(module) else { return };
    for item in &module.items {
        if let Item::Function(Function { body: Some(body), .. }) = item {
            check_statements(body, sm, errors);
        }
    }
}

fn check_statements(stmts: &[Statement], sm: u32, errors: &mut Vec<Diagnostic>) {
    for s in stmts {
        match s {
            Statement::Instruction(i) => {
                if let Some((needed, section)) = needs(i).filter(|&(n, _)| n > sm) {
                    let mut name: String = std::iter::once(i.opcode.value.as_str())
                        .chain(i.modifiers.iter().map(|m| m.value.as_str()))
                        .collect();
                    // A special register is named with the instruction reading it.
                    if let Some((register, _)) = sm90_register(i).filter(|&(_, s)| s == section) {
                        name = format!("{name}` reading `{register}");
                    }
                    errors.push(Diagnostic::error(
                        i.span,
                        format!(
                            "`{name}` needs `.target sm_{needed}` or higher (PTX ISA 9.2 \
                             {section}); the module's target is sm_{sm}"
                        ),
                    ));
                }
            }
            Statement::Block(inner, _) => check_statements(inner, sm, errors),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::parse;

    fn module(target: &str, line: &str) -> String {
        format!(
            ".version 8.5\n.target {target}\n.address_size 64\n.entry k()\n{{\n\
             .reg .f32 %f<5>;\n.reg .b16 %h<5>;\n.reg .b64 %rd<4>;\n.reg .b32 %r<5>;\n\
             .reg .f64 %fd<3>;\n.reg .b128 %q<3>;\n.reg .pred %p<3>;\n\t{line}\n}}\n"
        )
    }

    /// One form of each row group, with the lowest target the ISA names for it; CUDA 13's
    /// `ptxas` refuses each at the target before (`PREVIOUS`) and assembles it at its own.
    const FORMS: &[(u32, &str)] = &[
        (90, "mov.u32 %r1, %cluster_ctarank;"),
        (90, "mov.u32 %r1, %clusterid.x;"),
        (90, "mov.pred %p1, %is_explicit_cluster;"),
        (90, "barrier.cluster.wait;"),
        (90, "mapa.u64 %rd1, %rd2, %r1;"),
        (90, "getctarank.u64 %r1, %rd1;"),
        (90, "ld.shared::cluster.u32 %r1, [%rd1];"),
        (90, "atom.relaxed.cluster.global.add.u32 %r1, [%rd1], %r2;"),
        (90, "fence.acq_rel.cluster;"),
        (90, "cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%rd2], 16;"),
        (90, "cp.async.bulk.commit_group;"),
        (90, "cp.async.bulk.prefetch.L2.global [%rd1], 16;"),
        (90, "mbarrier.expect_tx.shared::cta.b64 [%rd1], 16;"),
        (90, "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%rd1], %r1;"),
        (90, "mbarrier.arrive.shared.b64 %rd2, [%rd1], 2;"),
        (90, "mov.u32 %r1, %aggr_smem_size;"),
        (90, "fence.proxy.async;"),
        (90, "fence.mbarrier_init.release.cluster;"),
        (90, "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%rd1], %r1, [%rd2];"),
        (90, "elect.sync %r1|%p1, 0xffffffff;"),
        (90, "griddepcontrol.wait;"),
        (90, "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%rd1], {%r1};"),
        (90, "atom.global.add.noftz.bf16 %h1, [%rd1], %h2;"),
        (90, "atom.global.exch.b128 %q1, [%rd1], %q2;"),
        (90, "add.bf16 %h1, %h2, %h3;"),
        (90, "ex2.approx.ftz.bf16x2 %r1, %r2;"),
        (90, "min.u16x2 %r1, %r2, %r3;"),
        (90, "max.relu.s32 %r1, %r2, %r3;"),
        (100, "redux.sync.min.f32 %f1, %f2, 0xffffffff;"),
        (100, "max.f32 %f1, %f2, %f3, %f4;"),
        (89, "cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;"),
        (86, "min.xorsign.abs.f16 %h1, %h2, %h3;"),
        (80, "cp.async.ca.shared.global [%rd1], [%rd2], 4;"),
        (80, "cp.async.wait_all;"),
        (80, "mbarrier.init.shared.b64 [%rd1], 2;"),
        (80, "redux.sync.add.s32 %r1, %r2, 0xffffffff;"),
        (80, "max.f16x2 %r1, %r2, %r3;"),
        (80, "min.NaN.f32 %f1, %f2, %f3;"),
        (80, "fma.rn.bf16 %h1, %h2, %h3, %h4;"),
        (80, "cvt.rn.bf16.f32 %h1, %f1;"),
        (75, "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%rd1];"),
        (75, "ex2.approx.f16 %h1, %h2;"),
        (75, "tanh.approx.f32 %f1, %f2;"),
        (
            80,
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f1, %f1, %f1}, \
             {%r1, %r1, %r1, %r1}, {%r1, %r1}, {%f1, %f1, %f1, %f1};",
        ),
        (
            75,
            "mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r1, %r1}, {%r1}, {%r1}, \
             {%r1, %r1};",
        ),
        (
            90,
            "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%fd1, %fd1, %fd1, %fd1}, \
             {%fd1, %fd1}, {%fd1}, {%fd1, %fd1, %fd1, %fd1};",
        ),
    ];

    /// The real target before `sm`, at which `ptxas` was tried.
    fn previous(sm: u32) -> u32 {
        match sm {
            100 => 90,
            90 => 89,
            89 => 87,
            86 => 80,
            80 => 75,
            _ => 72,
        }
    }

    /// Each form is refused one target below its own, with one error at its line that
    /// names the instruction and both targets, and accepted at its own target.
    #[test]
    fn each_form_needs_the_target_its_isa_notes_name() {
        for &(sm, line) in FORMS {
            let below = previous(sm);
            let text = module(&format!("sm_{below}"), line);
            let errors = parse(&text).expect_err(line).0;
            assert_eq!(errors.len(), 1, "{line}: {errors:?}");
            let message = &errors[0].message;
            assert!(message.contains(&format!("needs `.target sm_{sm}` or higher")), "{message}");
            assert!(message.contains(&format!("target is sm_{below}")), "{message}");
            let opcode = line.split([' ', ';']).next().unwrap_or(line);
            assert!(message.contains(&format!("`{opcode}`")), "{message}");
            let start = errors[0].span.start as usize;
            assert_eq!(text[..start].lines().count(), 13, "{line}: the error is at its line");
            parse(&module(&format!("sm_{sm}"), line))
                .unwrap_or_else(|e| panic!("sm_{sm} {line}: {e:?}"));
        }
    }

    /// Forms of the same instructions that the rows leave alone: the scalar, non-bf16,
    /// non-cluster forms older targets have.
    #[test]
    fn older_forms_of_the_same_instructions_pass() {
        let lines = [
            "ld.relaxed.gpu.shared.u32 %r1, [%rd1];",
            "ld.shared::cta.u32 %r1, [%rd1];",
            "fence.acq_rel.gpu;",
            "atom.global.add.noftz.f16 %h1, [%rd1], %h2;",
            "add.f16 %h1, %h2, %h3;",
            "max.s32 %r1, %r2, %r3;",
            "max.f32 %f1, %f2, %f3;",
            "cvt.rn.f16.f32 %h1, %f1;",
            "mov.u32 %r1, %ctaid.x;",
        ];
        for line in lines {
            parse(&module("sm_75", line)).unwrap_or_else(|e| panic!("{line}: {e:?}"));
        }
        // sm_80's mbarrier arrivals: without a count, or with one and `.noComplete`.
        for line in [
            "mbarrier.arrive.shared.b64 %rd2, [%rd1];",
            "mbarrier.arrive.noComplete.shared.b64 %rd2, [%rd1], 2;",
        ] {
            parse(&module("sm_80", line)).unwrap_or_else(|e| panic!("{line}: {e:?}"));
        }
    }

    /// ptxas (CUDA 13) refuses these with `.target sm_80`: "Feature 'atom instruction
    /// with vector types' requires .target sm_90 or higher".
    #[test]
    fn vector_atomics_need_sm_90() {
        let lines = [
            "atom.global.v2.f32.add {%f1, %f2}, [%rd1], {%f3, %f4};",
            "red.global.add.noftz.v2.f16 [%rd1], {%h1, %h2};",
        ];
        for line in lines {
            let errors = parse(&module("sm_80", line)).expect_err("refused on sm_80").0;
            assert_eq!(errors.len(), 1, "{line}: {errors:?}");
            let message = &errors[0].message;
            assert!(message.contains("needs `.target sm_90` or higher"), "{message}");
            assert!(message.contains("target is sm_80"), "{message}");
            let opcode = &line[..line.find(' ').unwrap_or(line.len())];
            assert!(message.contains(&format!("`{opcode}`")), "{message}");
            for target in ["sm_90", "sm_90a", "sm_100", "texmode_independent"] {
                parse(&module(target, line)).unwrap_or_else(|e| panic!("{target} {line}: {e:?}"));
            }
        }
        // Scalar atomics have no such requirement.
        parse(&module("sm_80", "atom.global.add.f32 %f1, [%rd1], %f2;")).expect("scalar atom");
    }
}
