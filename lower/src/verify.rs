//! The IR verifier: checks the invariants stated in [`crate::ir`] that later passes
//! rely on. Runs after semantic analysis in debug builds and in tests; a failure is a
//! bug in ptxvk, reported with the offending instruction's span.

use ptxvk_frontend::{Diagnostic, Span};

use crate::ir::Node;
use crate::ir::*;

/// Checks that every register and block handle is in range, that registers written as
/// predicates are predicates, that the register operands of the width-preserving
/// instructions have their operation type's width (the equal-width rule of
/// [`crate::ir`]), and that the entry block exists; in the kernel and in each of its
/// functions, whose calls must match their callees' parameters and returns in number
/// and width, and whose stack pointer is one of their 32-bit parameters; and that the
/// kernel's variables are well formed (`crate::ir::Variable`'s module doc).
pub fn run(k: &Kernel) -> Result<(), Vec<Diagnostic>> {
    let mut errors = Vec::new();
    for v in &k.variables {
        if let Some(what) = v.malformed() {
            errors.push(bug(k.span, format!("variable `{}`: {what}", v.name)));
        }
        if v.owner.is_some_and(|f| f.index() >= k.functions.len()) {
            errors.push(bug(k.span, format!("variable `{}`: owned by no function", v.name)));
        }
        let same_role = k.variables.iter().filter(|w| w.role == v.role).count();
        if v.role != VariableRole::Declared && same_role > 1 {
            errors.push(bug(k.span, format!("variable `{}`: a second {}", v.name, v.role.name())));
        }
    }
    let kernel = Body { regs: &k.regs, blocks: &k.blocks, entry: k.entry, span: k.span };
    body(k, kernel, &mut errors);
    for f in &k.functions {
        let function = Body { regs: &f.regs, blocks: &f.blocks, entry: f.entry, span: f.span };
        body(k, function, &mut errors);
        if let Some(sp) = f.stack_pointer {
            if !f.params.contains(&(sp, OpTy::U(32))) {
                errors.push(bug(
                    f.span,
                    format!("{}: a stack pointer that is no u32 parameter", f.name),
                ));
            }
        }
        for &(own, kernel_reg) in &f.thread_regs {
            let own_ty = f.regs.get(own.index()).map(|r| r.ty);
            if own_ty.is_none() || own_ty != k.regs.get(kernel_reg.index()).map(|r| r.ty) {
                let what = "a thread register that is no register of the kernel's type";
                errors.push(bug(f.span, format!("{}: {what}", f.name)));
            }
        }
        for &(r, ty) in f.params.iter().chain(&f.returns) {
            if f.regs.get(r.index()).is_none_or(|reg| reg.ty.bits() != ty.bits()) {
                errors.push(bug(
                    f.span,
                    format!(
                        "{}: a parameter or return register that is not a {}-bit register",
                        f.name,
                        ty.bits()
                    ),
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn bug(span: Span, what: String) -> Diagnostic {
    Diagnostic::internal(span, format!("IR verifier: {what}"))
}

/// The arenas of a kernel's or a function's body.
#[derive(Clone, Copy)]
struct Body<'a> {
    regs: &'a [RegInfo],
    blocks: &'a [Block],
    entry: BlockId,
    span: Span,
}

fn body(k: &Kernel, body: Body<'_>, errors: &mut Vec<Diagnostic>) {
    let nregs = body.regs.len();
    let nblocks = body.blocks.len();
    if body.entry.index() >= nblocks {
        errors.push(bug(body.span, "entry block out of range".into()));
    }
    let mut regs = Vec::new();
    for b in body.blocks {
        for inst in &b.insts {
            regs.clear();
            inst_regs(&inst.kind, &mut regs);
            for &r in &regs {
                if r.index() >= nregs {
                    errors.push(bug(inst.span, format!("register %{} out of range", r.0)));
                }
            }
            let mut widths = operand_widths(&inst.kind);
            if let InstKind::Call { callee, args, results } = &inst.kind {
                widths = call_widths(k, *callee, args, results, inst.span, errors);
            }
            if let InstKind::CallIndirect { target, arms } = &inst.kind {
                widths = indirect_call_widths(k, *target, arms, inst.span, errors);
            }
            for (r, want) in widths {
                let have = body.regs.get(r.index()).map(|reg| reg.ty.bits());
                if have.is_some_and(|have| have != want) {
                    errors.push(bug(
                        inst.span,
                        format!(
                            "%{} ({} bits) used as a {want}-bit operand (the equal-width rule)",
                            r.0,
                            have.unwrap_or(0)
                        ),
                    ));
                }
            }
            let malformed = match &inst.kind {
                InstKind::Video(op) => op.malformed(),
                InstKind::Half(op) => op.malformed(),
                InstKind::HalfConvert(c) => c.malformed(),
                InstKind::Integer(op) => op.malformed(),
                InstKind::Texture(t) => t.malformed(),
                InstKind::Matrix(m) => m.malformed(),
                InstKind::Warp(w) => w.malformed(),
                InstKind::SyncPoint { point } => point.malformed(),
                InstKind::Copy(c) => c.malformed(),
                InstKind::System(s) => s.malformed(),
                InstKind::Stack(s) => s.malformed(),
                InstKind::DataAddress(a) => a.malformed(),
                InstKind::VariableAddress(a) => a.malformed().or_else(|| {
                    (a.var.index() >= k.variables.len()).then_some("a variable out of range")
                }),
                kind => misplaced_visible(kind),
            };
            if let Some(what) = malformed {
                errors.push(bug(inst.span, what.to_string()));
            }
            if let InstKind::Setp { dst, dst_not, .. } = &inst.kind {
                for d in dst.iter().chain(dst_not.iter()) {
                    if body.regs.get(d.index()).is_some_and(|r| r.ty != RegTy::Pred) {
                        errors.push(bug(inst.span, "setp writes a non-predicate".into()));
                    }
                }
            }
        }
        for s in b.term.successors() {
            if s.index() >= nblocks {
                errors.push(bug(b.term_span, "branch target out of range".into()));
            }
        }
        match b.term {
            Terminator::Branch { cond, .. }
                if body.regs.get(cond.index()).map(|r| r.ty) != Some(RegTy::Pred) =>
            {
                errors.push(bug(b.term_span, "branch on a non-predicate".into()));
            }
            Terminator::Switch { selector, .. }
                if body.regs.get(selector.index()).map(|r| r.ty) != Some(RegTy::Int(32)) =>
            {
                errors.push(bug(b.term_span, "switch on a register that is not 32-bit".into()));
            }
            _ => {}
        }
    }
}

/// `.visible` ([`crate::ir::FloatMode::visible`]) on an operation the backend never
/// hides anyway: only a float `add`, `sub` or `mul`, or a `.native` `div` or `sqrt`,
/// has operands to show the driver.
fn misplaced_visible(kind: &InstKind) -> Option<&'static str> {
    let native = |mode: &crate::ir::FloatMode| mode.path == crate::ir::FloatPath::Native;
    let meaningful = match kind {
        InstKind::Binary { op, ty, mode, .. } if mode.visible => {
            ty.is_float()
                && (matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul)
                    || *op == BinaryOp::Div && native(mode))
        }
        InstKind::Unary { op, ty, mode, .. } if mode.visible => {
            ty.is_float() && *op == crate::ir::UnaryOp::Sqrt && native(mode)
        }
        InstKind::Fma { mode, .. } => !mode.visible,
        _ => true,
    };
    (!meaningful).then_some("`.visible` on an operation that has no operands to show")
}

/// The widths a call's register operands must have (its callee's parameter and return
/// types); a callee out of range or a count that does not match is an error.
fn call_widths(
    k: &Kernel,
    callee: FunctionId,
    args: &[Value],
    results: &[RegId],
    span: Span,
    errors: &mut Vec<Diagnostic>,
) -> Vec<(RegId, u32)> {
    let Some(f) = k.functions.get(callee.index()) else {
        errors.push(bug(span, format!("call of function {} out of range", callee.0)));
        return Vec::new();
    };
    if args.len() != f.params.len() || results.len() != f.returns.len() {
        errors.push(bug(
            span,
            format!(
                "call of {} with {} argument(s) and {} result(s); it has {} and {}",
                f.name,
                args.len(),
                results.len(),
                f.params.len(),
                f.returns.len()
            ),
        ));
    }
    let args = args.iter().zip(&f.params).filter_map(|(a, &(_, ty))| match a {
        Value::Reg(r) => Some((*r, ty.bits())),
        Value::Imm(_) => None,
    });
    let results = results.iter().zip(&f.returns).map(|(r, &(_, ty))| (*r, ty.bits()));
    args.chain(results).collect()
}

/// The operand widths of an indirect call: its target's (64 bits) and each arm's as a
/// call's ([`call_widths`]).
fn indirect_call_widths(
    k: &Kernel,
    target: Value,
    arms: &[CallArm],
    span: Span,
    errors: &mut Vec<Diagnostic>,
) -> Vec<(RegId, u32)> {
    let mut widths: Vec<(RegId, u32)> =
        crate::build::reg_of(target).map(|r| (r, 64)).into_iter().collect();
    for arm in arms {
        widths.extend(call_widths(k, arm.callee, &arm.args, &arm.results, span, errors));
    }
    widths
}

/// Every register an instruction mentions.
pub fn inst_regs(kind: &InstKind, out: &mut Vec<RegId>) {
    let mut uses = Vec::new();
    inst_defs_uses(kind, out, &mut uses);
    out.append(&mut uses);
}

/// The registers an instruction writes (`defs`) and reads (`uses`).
pub fn inst_defs_uses(kind: &InstKind, defs: &mut Vec<RegId>, uses: &mut Vec<RegId>) {
    let v = |x: &Value, uses: &mut Vec<RegId>| {
        if let Value::Reg(r) = x {
            uses.push(*r)
        }
    };
    match kind {
        InstKind::Mov { dst, src, .. } | InstKind::Cvta { dst, src, .. } => {
            defs.push(*dst);
            v(src, uses);
        }
        InstKind::IsSpace(IsSpaceInst { dst, addr, .. }) => {
            defs.push(*dst);
            v(addr, uses);
        }
        InstKind::Pack { dst, srcs, .. } => {
            defs.push(*dst);
            srcs.iter().for_each(|s| v(s, uses));
        }
        InstKind::Unpack { dsts, src, .. } => {
            defs.extend(dsts.iter().flatten());
            v(src, uses);
        }
        InstKind::Special { dst, .. } => defs.push(*dst),
        InstKind::Unary { dst, src, .. } => {
            defs.push(*dst);
            v(src, uses);
        }
        InstKind::Binary { dst, lhs, rhs, .. } => {
            defs.push(*dst);
            v(lhs, uses);
            v(rhs, uses);
        }
        InstKind::Bfe { dst, a, pos: b, len: c, .. }
        | InstKind::RoundToOdd { dst, a, b, c, .. }
        | InstKind::Mad { dst, a, b, c, .. }
        | InstKind::Fma { dst, a, b, c, .. } => {
            defs.push(*dst);
            v(a, uses);
            v(b, uses);
            v(c, uses);
        }
        InstKind::Bfi { dst, a, b, pos, len, .. } => {
            defs.push(*dst);
            [a, b, pos, len].into_iter().for_each(|x| v(x, uses));
        }
        InstKind::Setp { dst, dst_not, lhs, rhs, combine, .. } => {
            defs.extend(dst.iter().chain(dst_not.iter()));
            v(lhs, uses);
            v(rhs, uses);
            if let Some((_, r, _)) = combine {
                uses.push(*r);
            }
        }
        InstKind::Select { dst, a, b, cond, .. } => {
            defs.push(*dst);
            v(a, uses);
            v(b, uses);
            uses.push(*cond);
        }
        InstKind::PredLogic { dst, lhs, rhs, .. } => {
            defs.push(*dst);
            uses.extend([*lhs, *rhs]);
        }
        InstKind::PredNot { dst, src } => {
            defs.push(*dst);
            uses.push(*src);
        }
        InstKind::Convert { dst, src, .. }
        | InstKind::Narrow { dst, src, .. }
        | InstKind::IntToFloat { dst, src, .. }
        | InstKind::Widen { dst, src, .. } => {
            defs.push(*dst);
            v(src, uses);
        }
        InstKind::Load { dsts, addr, .. } => {
            defs.extend(dsts.iter().flatten());
            uses.extend(addr.base);
        }
        InstKind::Store { srcs, addr, .. } => {
            srcs.iter().for_each(|s| v(s, uses));
            uses.extend(addr.base);
        }
        InstKind::Atomic { dst, addr, src, cmp, .. } => {
            defs.extend(dst.iter());
            uses.extend(addr.base);
            v(src, uses);
            v(cmp, uses);
        }
        InstKind::VectorAtomic(a) => {
            defs.extend(a.dsts.iter().flatten());
            uses.extend(a.addr.base);
            a.srcs.iter().for_each(|s| v(s, uses));
            v(&a.cmp, uses);
        }
        InstKind::Subgroup { dst, value, lane, .. } => {
            defs.push(*dst);
            v(value, uses);
            v(lane, uses);
        }
        InstKind::WarpBarrier { publish } => {
            if let Some(value) = publish {
                v(value, uses);
            }
        }
        InstKind::WarpPublish { value } => v(value, uses),
        InstKind::WarpRead { dst, value, lane, warp_base } => {
            defs.push(*dst);
            [value, lane, warp_base].into_iter().for_each(|x| v(x, uses));
        }
        InstKind::WarpBallot { dst, value, lanes, warp_base } => {
            defs.push(*dst);
            [value, lanes, warp_base].into_iter().for_each(|x| v(x, uses));
        }
        InstKind::RaceShadow { dst, word, swap } => {
            defs.push(*dst);
            v(word, uses);
            swap.iter().for_each(|x| v(x, uses));
        }
        InstKind::SyncPoint { point: SyncPoint::Warp { members, .. } } => v(members, uses),
        InstKind::Barrier
        | InstKind::EndThread
        | InstKind::Fence { .. }
        | InstKind::WarpSync
        | InstKind::SyncPoint { point: SyncPoint::Sleep | SyncPoint::Acquire } => {}
        InstKind::LoopCount { dst, .. } => defs.push(*dst),
        InstKind::Video(op) => {
            defs.push(op.dst());
            op.sources().iter().for_each(|x| v(x, uses));
        }
        InstKind::Half(op) => {
            defs.push(op.dst);
            op.srcs.iter().for_each(|x| v(x, uses));
        }
        InstKind::HalfConvert(c) => {
            defs.push(c.dst);
            c.srcs.iter().for_each(|x| v(x, uses));
        }
        InstKind::Integer(op) => {
            defs.extend(op.defs());
            op.uses().iter().for_each(|x| v(x, uses));
        }
        InstKind::Texture(t) => t.defs_uses(defs, uses),
        InstKind::Copy(c) => {
            defs.extend(c.def().map(|(r, _)| r));
            uses.extend(c.uses().into_iter().map(|(r, _)| r));
        }
        InstKind::Mbarrier(m) => {
            defs.extend(m.def().map(|(r, _)| r));
            m.uses().iter().for_each(|(x, _)| v(x, uses));
        }
        InstKind::System(s) => {
            defs.extend(s.def().map(|(r, _)| r));
            s.uses().iter().for_each(|(x, _)| v(x, uses));
        }
        InstKind::DeviceLaunch(l) => {
            defs.extend(l.defs().map(|(r, _)| r));
            l.uses().iter().for_each(|(x, _)| v(x, uses));
        }
        InstKind::Stack(s) => {
            defs.extend(s.defs().into_iter().map(|(r, _)| r));
            s.uses().iter().for_each(|(x, _)| v(x, uses));
        }
        InstKind::VariableAddress(a) => defs.push(a.dst),
        InstKind::DataAddress(a) => a.defs_uses(defs, uses),
        InstKind::Matrix(m) => {
            defs.extend(m.defs().into_iter().map(|(r, _)| r));
            m.uses().iter().for_each(|(x, _)| v(x, uses));
        }
        InstKind::BarrierReduce { dst, cond, .. } => {
            defs.push(*dst);
            uses.push(*cond);
        }
        InstKind::Warp(w) => {
            defs.extend(w.defs().into_iter().map(|(r, _)| r));
            w.uses().iter().for_each(|(x, _)| v(x, uses));
        }
        InstKind::Call { args, results, .. } => {
            defs.extend(results);
            args.iter().for_each(|a| v(a, uses));
        }
        InstKind::CallIndirect { target, arms } => {
            v(target, uses);
            for arm in arms {
                defs.extend(&arm.results);
                arm.args.iter().for_each(|a| v(a, uses));
            }
        }
    }
}

/// Checks the structured tree of `k` (what `crate::pass::structurize` and
/// `crate::pass::predicate` produce, and the emitter assumes): every block is emitted at most
/// once, `Break` and `Continue` stand inside a loop, nothing follows a `Break`,
/// `Continue` or `Return` in its sequence, `If` tests a predicate, and a `Switch` tests
/// a 32-bit register with exactly one default case and no value in two cases.
pub fn structured(k: &Kernel, body: &[Node]) -> Result<(), Vec<Diagnostic>> {
    let kernel = Body { regs: &k.regs, blocks: &k.blocks, entry: k.entry, span: k.span };
    let mut errors = tree(kernel, body);
    // The structured IR has one body per kernel (`pass::inline` ran), and its emulation
    // routines, each structured too.
    for f in &k.functions {
        if f.routine.is_none() {
            errors.push(Diagnostic::internal(
                k.span,
                "structured tree: functions left after inlining",
            ));
            continue;
        }
        let function = Body { regs: &f.regs, blocks: &f.blocks, entry: f.entry, span: f.span };
        errors.append(&mut tree(function, &f.body));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// [`structured`]'s checks of one body's tree: what they find wrong.
fn tree(k: Body<'_>, body: &[Node]) -> Vec<Diagnostic> {
    struct Walk<'k> {
        k: Body<'k>,
        seen: Vec<bool>,
        errors: Vec<Diagnostic>,
    }
    impl Walk<'_> {
        fn bug(&mut self, span: Span, what: &str) {
            self.errors.push(Diagnostic::internal(span, format!("structured tree: {what}")));
        }
        fn reg_is(&self, r: RegId, ty: RegTy) -> bool {
            self.k.regs.get(r.index()).is_some_and(|info| info.ty == ty)
        }
        fn seq(&mut self, nodes: &[Node], loops: usize, span: Span) {
            for (i, n) in nodes.iter().enumerate() {
                let last = i + 1 == nodes.len();
                match n {
                    Node::Code(b) => match self.seen.get_mut(b.index()) {
                        Some(seen) if *seen => {
                            let at = self.k.blocks[b.index()].span;
                            self.bug(at, &format!("block bb{} emitted twice", b.0));
                        }
                        Some(seen) => *seen = true,
                        None => self.bug(span, &format!("block bb{} out of range", b.0)),
                    },
                    Node::If { cond, then, otherwise, span, .. } => {
                        if !self.reg_is(*cond, RegTy::Pred) {
                            self.bug(*span, "`if` on a non-predicate");
                        }
                        self.seq(then, loops, *span);
                        self.seq(otherwise, loops, *span);
                    }
                    Node::Switch { selector, cases, span } => {
                        if !self.reg_is(*selector, RegTy::Int(32)) {
                            self.bug(*span, "switch on a register that is not 32-bit");
                        }
                        if cases.iter().filter(|c| c.is_default).count() != 1 {
                            self.bug(*span, "a switch without exactly one default case");
                        }
                        let mut values: Vec<u32> =
                            cases.iter().flat_map(|c| c.values.iter().copied()).collect();
                        let n = values.len();
                        values.sort_unstable();
                        values.dedup();
                        if values.len() != n {
                            self.bug(*span, "a value in two cases of a switch");
                        }
                        for c in cases {
                            self.seq(&c.body, loops, *span);
                        }
                    }
                    Node::Loop { body, span } => self.seq(body, loops + 1, *span),
                    Node::Break | Node::Continue | Node::Return => {
                        if loops == 0 && !matches!(n, Node::Return) {
                            self.bug(span, "`break` or `continue` outside a loop");
                        }
                        if !last {
                            self.bug(span, "statements after a `break`, `continue` or `return`");
                        }
                    }
                }
            }
        }
    }
    let mut w = Walk { k, seen: vec![false; k.blocks.len()], errors: Vec::new() };
    w.seq(body, 0, k.span);
    w.errors
}

/// An atomic's registers, all as wide as `ty`: but a strong load's `dst` and a strong
/// store's `src`, which may be wider until `pass::expand_strong`, as a `Load`'s and a
/// `Store`'s.
fn atomic_widths(
    op: AtomicOp,
    ty: OpTy,
    dst: Option<RegId>,
    src: &Value,
    cmp: &Value,
) -> Vec<(RegId, u32)> {
    let reg = |v: &Value| match v {
        Value::Reg(r) => Some(*r),
        Value::Imm(_) => None,
    };
    let dst = dst.filter(|_| op != AtomicOp::Load);
    let src = reg(src).filter(|_| op != AtomicOp::Store);
    [dst, src, reg(cmp)].into_iter().flatten().map(|r| (r, ty.bits())).collect()
}

/// The register operands of `kind` that the equal-width rule constrains, each with the
/// width it must have: moves, arithmetic (a shift's amount and bit-field positions are
/// 32-bit, a widening product's result twice as wide, counts 32-bit), fma, selects,
/// comparisons, packs, atomics and warp exchanges (32-bit words). `Convert`, `Load` and `Store` may change widths
/// (PTX's `cvt`, `ld` and `st` take wider registers, PTX ISA 9.2 §5.2.2).
fn operand_widths(kind: &InstKind) -> Vec<(RegId, u32)> {
    let reg = |v: &Value| crate::build::reg_of(*v);
    let mut out = Vec::new();
    let mut at = |v: Option<RegId>, bits: u32| out.extend(v.map(|r| (r, bits)));
    match kind {
        InstKind::Mov { ty, dst, src } | InstKind::Cvta { ty, dst, src, .. } => {
            at(Some(*dst), ty.bits());
            at(reg(src), ty.bits());
        }
        InstKind::Binary { op, ty, dst, lhs, rhs, .. } => {
            let w = ty.bits();
            at(reg(lhs), w);
            let shift = matches!(op, BinaryOp::Shl | BinaryOp::Shr);
            at(reg(rhs), if shift { 32 } else { w });
            at(Some(*dst), if *op == BinaryOp::MulWide { 2 * w } else { w });
        }
        InstKind::Fma { ty, dst, a, b, c, .. } => {
            for v in [a, b, c] {
                at(reg(v), ty.bits());
            }
            at(Some(*dst), ty.bits());
        }
        InstKind::Select { ty, dst, a, b, cond, .. } => {
            at(reg(a), ty.bits());
            at(reg(b), ty.bits());
            at(Some(*dst), ty.bits());
            at(Some(*cond), 1);
        }
        InstKind::IsSpace(IsSpaceInst { ty, dst, addr, .. }) => {
            at(Some(*dst), 1);
            at(reg(addr), ty.bits());
        }
        InstKind::Setp { ty, lhs, rhs, .. } => {
            at(reg(lhs), ty.bits());
            at(reg(rhs), ty.bits());
        }
        InstKind::Unary { op, ty, dst, src, .. } => {
            at(reg(src), ty.bits());
            let counts = matches!(op, UnaryOp::Popc | UnaryOp::Clz);
            at(Some(*dst), if counts { 32 } else { ty.bits() });
        }
        InstKind::Mad { part, ty, dst, a, b, c } => {
            let w = ty.bits();
            let wide = if *part == BinaryOp::MulWide { 2 * w } else { w };
            at(reg(a), w);
            at(reg(b), w);
            at(reg(c), wide);
            at(Some(*dst), wide);
        }
        InstKind::Bfe { ty, dst, a, pos, len } => {
            at(reg(a), ty.bits());
            at(reg(pos), 32);
            at(reg(len), 32);
            at(Some(*dst), ty.bits());
        }
        InstKind::Bfi { ty, dst, a, b, pos, len } => {
            at(reg(a), ty.bits());
            at(reg(b), ty.bits());
            at(reg(pos), 32);
            at(reg(len), 32);
            at(Some(*dst), ty.bits());
        }
        InstKind::Pack { elem, dst, srcs } => {
            for v in srcs {
                at(reg(v), elem.bits());
            }
            at(Some(*dst), elem.bits() * srcs.len() as u32);
        }
        InstKind::Unpack { elem, dsts, src } => {
            for d in dsts {
                at(*d, elem.bits());
            }
            at(reg(src), elem.bits() * dsts.len() as u32);
        }
        InstKind::Atomic { op, ty, dst, src, cmp, .. } => {
            out.extend(atomic_widths(*op, *ty, *dst, src, cmp))
        }
        InstKind::VectorAtomic(a) => out.extend(a.operand_widths()),
        // Warp exchanges move 32-bit words.
        InstKind::Subgroup { dst, value, lane, .. } => {
            at(Some(*dst), 32);
            at(reg(value), 32);
            at(reg(lane), 32);
        }
        InstKind::WarpPublish { value } | InstKind::WarpBarrier { publish: Some(value) } => {
            at(reg(value), 32)
        }
        InstKind::WarpRead { dst, value, lane: a, warp_base }
        | InstKind::WarpBallot { dst, value, lanes: a, warp_base } => {
            at(Some(*dst), 32);
            for x in [value, a, warp_base] {
                at(reg(x), 32);
            }
        }
        // Video instructions read and write 32-bit words (PTX ISA 9.2 §9.7.16).
        InstKind::Video(op) => {
            at(Some(op.dst()), 32);
            op.sources().iter().for_each(|x| at(reg(x), 32));
        }
        // Half arithmetic: 16 bits per lane.
        InstKind::Half(op) => {
            let bits = 16 * u32::from(op.lanes);
            at(Some(op.dst), bits);
            op.srcs.iter().for_each(|x| at(reg(x), bits));
        }
        InstKind::RaceShadow { dst, word, swap } => {
            at(Some(*dst), 32);
            at(reg(word), 32);
            at(swap.as_ref().and_then(reg), 32);
        }
        InstKind::LoopCount { dst, .. } => at(Some(*dst), 32),
        InstKind::Texture(t) => out.extend(t.operand_widths()),
        InstKind::Copy(c) => {
            let def = c.def().map(|(r, bits)| (r, Some(bits)));
            c.uses().into_iter().chain(def).for_each(|(r, bits)| {
                if let Some(bits) = bits {
                    at(Some(r), bits);
                }
            })
        }
        InstKind::Mbarrier(m) => {
            let def = m.def().map(|(r, bits)| (Value::Reg(r), Some(bits)));
            for (x, bits) in m.uses().into_iter().chain(def) {
                if let Some(bits) = bits {
                    at(reg(&x), bits);
                }
            }
        }
        InstKind::System(s) => {
            s.def().into_iter().for_each(|(r, bits)| at(Some(r), bits));
            s.uses().iter().for_each(|(x, bits)| {
                if let Some(bits) = bits {
                    at(reg(x), *bits)
                }
            });
        }
        InstKind::DeviceLaunch(l) => {
            l.defs().into_iter().for_each(|(r, bits)| at(Some(r), bits));
            l.uses().iter().for_each(|(x, bits)| at(reg(x), *bits));
        }
        InstKind::Stack(s) => {
            s.defs().into_iter().for_each(|(r, bits)| at(Some(r), bits));
            s.uses().iter().for_each(|(x, bits)| at(reg(x), *bits));
        }
        InstKind::VariableAddress(a) => at(Some(a.dst), a.ty.bits()),
        InstKind::DataAddress(a) => out.extend(a.operands()),
        // Fragments at their registers' types (PTX ISA 9.2 §9.7.14).
        InstKind::Matrix(m) => {
            m.defs().into_iter().for_each(|(r, ty)| at(Some(r), ty.bits()));
            for (x, ty) in m.uses() {
                if let Some(ty) = ty {
                    at(reg(&x), ty.bits());
                }
            }
        }
        InstKind::Integer(op) => out.extend(op.operand_widths()),
        // The operands at the types `crate::ir::warp` gives them (a vote's predicate
        // included).
        InstKind::BarrierReduce { op, dst, cond, .. } => {
            at(Some(*dst), if *op == BarrierReduction::Popc { 32 } else { 1 });
            at(Some(*cond), 1);
        }
        InstKind::Warp(w) => {
            w.defs().into_iter().for_each(|(r, ty)| at(Some(r), ty.bits()));
            w.uses().iter().for_each(|(x, ty)| at(reg(x), ty.bits()));
        }
        InstKind::HalfConvert(c) => {
            // The sides of a narrow `cvt` may be wider registers (PTX ISA 9.2 §5.2.2):
            // the low bits of a source are read, and the result extended into its
            // destination; so may the destination of any other (zero-extended).
            let (to, from) = match c.op {
                HalfConvertOp::Narrow(_) => (true, true),
                _ => (false, false),
            };
            if !to {
                at(Some(c.dst), c.op.dst_bits());
            }
            if !from {
                c.srcs.iter().zip(c.op.src_bits()).for_each(|(x, bits)| at(reg(x), bits));
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use ptxvk_frontend::Span;

    use super::*;

    fn with_insts(kinds: Vec<InstKind>) -> Kernel {
        let mut k = crate::random_cfg::kernel(7, 1);
        let span = Span::default();
        k.regs.push(RegInfo { name: "%w".into(), ty: RegTy::Int(64), span });
        k.blocks[0].insts = kinds.into_iter().map(|kind| Inst { kind, span }).collect();
        k
    }

    #[test]
    fn operands_must_have_their_operation_width() {
        let k = crate::random_cfg::kernel(7, 1);
        let (r32, r64) = (RegId(k.regs.len() as u32 - 1), RegId(k.regs.len() as u32));
        let ok = with_insts(vec![
            // A 64-bit shift by a 32-bit amount, and a widening product.
            InstKind::Binary {
                op: BinaryOp::Shl,
                ty: OpTy::U(64),
                mode: FloatMode::default(),
                dst: r64,
                lhs: Value::Reg(r64),
                rhs: Value::Reg(r32),
            },
            InstKind::Binary {
                op: BinaryOp::MulWide,
                ty: OpTy::U(32),
                mode: FloatMode::default(),
                dst: r64,
                lhs: Value::Reg(r32),
                rhs: Value::Imm(3),
            },
        ]);
        assert_eq!(run(&ok), Ok(()));
        let bad = with_insts(vec![InstKind::Mov { ty: OpTy::U(64), dst: r32, src: Value::Imm(1) }]);
        let errors = run(&bad).expect_err("a 32-bit register moved at 64 bits");
        assert!(errors[0].message.contains("used as a 64-bit operand"), "{}", errors[0].message);
        assert_eq!(errors[0].severity, ptxvk_frontend::Severity::Internal);
    }

    #[test]
    fn visible_marks_only_float_arithmetic_with_operands_to_show() {
        let k = crate::random_cfg::kernel(7, 1);
        let r = RegId(k.regs.len() as u32);
        let visible = FloatMode { visible: true, ..FloatMode::default() };
        let native = FloatMode { path: FloatPath::Native, ..visible };
        let (lhs, rhs) = (Value::Reg(r), Value::Imm(3));
        let bin = |op, ty, mode| InstKind::Binary { op, ty, mode, dst: r, lhs, rhs };
        let sqrt =
            |mode| InstKind::Unary { op: UnaryOp::Sqrt, ty: OpTy::F(64), mode, dst: r, src: lhs };
        let ok = with_insts(vec![
            bin(BinaryOp::Mul, OpTy::F(64), visible),
            bin(BinaryOp::Div, OpTy::F(64), native),
            sqrt(native),
        ]);
        assert_eq!(run(&ok), Ok(()));
        for bad in [
            bin(BinaryOp::Mul, OpTy::U(64), visible),
            bin(BinaryOp::Div, OpTy::F(64), visible),
            sqrt(visible),
        ] {
            let errors = run(&with_insts(vec![bad.clone()])).expect_err("misplaced");
            assert!(errors[0].message.contains("`.visible`"), "{bad:?}: {}", errors[0].message);
        }
    }

    #[test]
    fn made_variables_are_one_of_each_role_in_their_window() {
        let stack = |space| Variable::made(VariableRole::Stack, "$stack", space, 1024, 8);
        let mut k = crate::random_cfg::kernel(7, 1);
        k.variables = vec![stack(Space::Local), Variable::new("$stack".into(), Space::Local, 4, 4)];
        assert_eq!(run(&k), Ok(()));
        let message = |variables| {
            let k = Kernel { variables, ..k.clone() };
            run(&k).expect_err("malformed").iter().map(|d| d.message.clone()).collect::<String>()
        };
        assert!(message(vec![stack(Space::Local), stack(Space::Local)]).contains("a second stack"));
        assert!(message(vec![stack(Space::Shared)]).contains("outside its role's window"));
    }

    #[test]
    fn structured_trees_are_checked() {
        use crate::ir::SwitchCase;
        let k = crate::random_cfg::kernel(7, 3);
        let (p, s) = (RegId(0), RegId(1)); // %p0 (a predicate), %s0 (32-bit)
        let (b0, b1) = (Node::Code(BlockId(0)), Node::Code(BlockId(1)));
        let span = Span::default();
        let fine = vec![
            b0.clone(),
            Node::Loop {
                body: vec![Node::If {
                    cond: p,
                    negate: false,
                    then: vec![b1.clone(), Node::Break],
                    otherwise: vec![Node::Continue],
                    span,
                }],
                span,
            },
            Node::Return,
        ];
        assert_eq!(structured(&k, &fine), Ok(()));
        let message = |body: Vec<Node>| {
            let errors = structured(&k, &body).expect_err("a broken tree");
            errors.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; ")
        };
        assert!(message(vec![b0.clone(), b0.clone()]).contains("emitted twice"));
        assert!(message(vec![Node::Break]).contains("outside a loop"));
        assert!(message(vec![Node::Return, b1.clone()]).contains("after a"));
        let if_on_int = Node::If { cond: s, negate: false, then: vec![], otherwise: vec![], span };
        assert!(message(vec![if_on_int]).contains("non-predicate"));
        let case = |values: Vec<u32>, is_default| SwitchCase { values, is_default, body: vec![] };
        let two_defaults = Node::Switch {
            selector: s,
            cases: vec![case(vec![1], true), case(vec![2], true)],
            span,
        };
        assert!(message(vec![two_defaults]).contains("exactly one default"));
        let shared_value = Node::Switch {
            selector: s,
            cases: vec![case(vec![1], true), case(vec![1], false)],
            span,
        };
        assert!(message(vec![shared_value]).contains("two cases"));
    }
}
