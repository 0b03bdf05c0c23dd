//! The printer of the IR text format (the grammar is in the module doc).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::*;
use crate::ir::Node;

/// Writes a kernel's CFG IR in the text format: its header, its blocks, then its
/// functions.
pub fn print(k: &Kernel) -> String {
    let p = Printer::new(k);
    let mut s = p.header();
    p.blocks(&k.blocks, &mut s);
    for (i, f) in k.functions.iter().enumerate() {
        let p = Printer::with_regs(k, &f.regs);
        let _ = writeln!(s, "function fn{i} {} {{", f.name);
        let _ = writeln!(s, "    entry bb{}", f.entry.0);
        p.reg_lines(&f.regs, &mut s);
        for (key, list) in [("param", &f.params), ("return", &f.returns)] {
            for &(r, ty) in list {
                let _ = writeln!(s, "    {key} {} {}", op_ty(ty), p.reg(r));
            }
        }
        if let Some(sp) = f.stack_pointer {
            let _ = writeln!(s, "    stack {}", p.reg(sp));
        }
        for &(own, kernel_reg) in &f.thread_regs {
            let _ = writeln!(s, "    thread {} {}", p.reg(own), Printer::new(k).reg(kernel_reg));
        }
        p.blocks(&f.blocks, &mut s);
        s.push_str("}\n");
    }
    s.push_str("}\n");
    s
}

/// Writes a kernel's header and its structured tree, each block with its instructions,
/// then the emulation routines it calls, by name.
pub fn print_structured(k: &Kernel, nodes: &[Node]) -> String {
    let p = Printer::new(k);
    let mut s = p.header();
    s.push_str("body {\n");
    p.nodes(nodes, 1, &mut s);
    s.push_str("}\n");
    // Emulation routines by name: the name determines the body (`structured.rs`).
    for (i, f) in k.functions.iter().enumerate().filter(|(_, f)| f.routine.is_some()) {
        let _ = writeln!(s, "routine fn{i} {}", f.name);
    }
    s.push_str("}\n");
    s
}

struct Printer<'a> {
    k: &'a Kernel,
    names: Vec<String>,
}

impl<'a> Printer<'a> {
    fn new(k: &'a Kernel) -> Self {
        Printer::with_regs(k, &k.regs)
    }

    /// A printer of a body whose registers are `regs` (the kernel's, or a function's).
    fn with_regs(k: &'a Kernel, regs: &[RegInfo]) -> Self {
        let token = |i: usize, name: &str| {
            if name.is_empty() {
                format!("$t{i}")
            } else if name.starts_with('%') || name.starts_with('$') {
                name.to_string()
            } else {
                format!("%{name}")
            }
        };
        let mut count: BTreeMap<String, u32> = BTreeMap::new();
        for (i, r) in regs.iter().enumerate() {
            *count.entry(token(i, &r.name)).or_default() += 1;
        }
        let names = regs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let t = token(i, &r.name);
                if count.get(&t).copied().unwrap_or(0) > 1 || t.len() == 1 {
                    format!("{t}#{i}")
                } else {
                    t
                }
            })
            .collect();
        Printer { k, names }
    }

    fn reg(&self, r: RegId) -> &str {
        self.names.get(r.index()).map_or("<bad register>", String::as_str)
    }

    fn value(&self, v: Value) -> String {
        match v {
            Value::Reg(r) => self.reg(r).to_string(),
            Value::Imm(x) if x < 65536 => x.to_string(),
            Value::Imm(x) => format!("{x:#x}"),
        }
    }

    fn pred(&self, r: RegId, negate: bool) -> String {
        format!("{}{}", if negate { "!" } else { "" }, self.reg(r))
    }

    fn addr(&self, a: Address) -> String {
        match a.base {
            Some(b) if a.offset > 0 => format!("[{}+{}]", self.reg(b), a.offset),
            Some(b) if a.offset < 0 => format!("[{}{}]", self.reg(b), a.offset),
            Some(b) => format!("[{}]", self.reg(b)),
            None => format!("[{}]", a.offset),
        }
    }

    fn dst(&self, d: Option<RegId>) -> String {
        d.map_or("_".to_string(), |r| self.reg(r).to_string())
    }

    fn header(&self) -> String {
        let k = self.k;
        let mut s = String::new();
        let _ = writeln!(s, "kernel {} {{", k.name);
        let _ = writeln!(s, "    params size {} align {}", k.abi.size, k.abi.align);
        for p in &k.abi.params {
            let _ = writeln!(
                s,
                "    param {} {} x{} @{} size {} align {}",
                p.name,
                p.elem.directive(),
                p.count,
                p.offset,
                p.size,
                p.align
            );
        }
        let mut shared = format!("    shared {}", k.shared.static_bytes);
        if let Some(a) = k.shared.dynamic_align {
            let _ = write!(shared, " align {a}");
        }
        if k.shared.word != SharedWord::default() {
            let _ = write!(shared, " word {}", k.shared.word.bits());
        }
        if k.shared.in_device_memory {
            shared.push_str(" in_device_memory");
        }
        let _ = writeln!(s, "{shared}");
        for (name, offset, size) in &k.shared.variables {
            let _ = writeln!(s, "    shared_var {name} @{offset} {size}");
        }
        let _ = writeln!(s, "    local {}", k.local_bytes);
        for v in &k.variables {
            let _ = writeln!(s, "    {}", super::variable::print_variable(v));
        }
        for (key, dims) in [("reqntid", k.reqntid), ("maxntid", k.maxntid)] {
            if let Some([x, y, z]) = dims {
                let _ = writeln!(s, "    {key} {x} {y} {z}");
            }
        }
        if let Some(n) = k.maxnreg {
            let _ = writeln!(s, "    maxnreg {n}");
        }
        if k.address_size != 64 {
            let _ = writeln!(s, "    address_size {}", k.address_size);
        }
        let flags = [("grid_sync", k.grid_sync), ("system", k.system), ("heap", k.heap)];
        let flags = flags.into_iter().chain([("explicit_cluster", k.explicit_cluster)]);
        for (flag, set) in flags {
            if set {
                let _ = writeln!(s, "    {flag}");
            }
        }
        if let Some(g) = k.grid_phases {
            let (r, b, l) = (g.record_bytes, g.barriers, u32::from(g.in_loop));
            let _ = writeln!(s, "    grid_phases {r} {b} {l}");
        }
        if !k.device_launches.is_empty() {
            let _ = writeln!(s, "    device_launches {}", k.device_launches.join(" "));
        }
        for (key, at) in [("warp_scratch", k.warp_scratch), ("block_vote", k.block_vote)] {
            if let Some(at) = at {
                let _ = writeln!(s, "    {key} {at}");
            }
        }
        let _ = writeln!(s, "    entry bb{}", k.entry.0);
        self.reg_lines(&k.regs, &mut s);
        s
    }

    /// The blocks of a body, each with its instructions and terminator.
    fn blocks(&self, blocks: &[Block], s: &mut String) {
        for (i, b) in blocks.iter().enumerate() {
            let label = b.label.as_ref().map(|l| format!(" ({l})")).unwrap_or_default();
            let _ = writeln!(s, "bb{i}{label}:");
            for inst in &b.insts {
                let _ = writeln!(s, "    {}", self.line(inst));
            }
            let _ = writeln!(s, "    {}", self.term(&b.term));
        }
    }

    /// Registers in id order, runs of one type sharing lines.
    fn reg_lines(&self, regs: &[RegInfo], s: &mut String) {
        let mut line = String::new();
        let mut line_ty = None;
        for (i, r) in regs.iter().enumerate() {
            if line_ty != Some(r.ty) || line.len() + self.names[i].len() > 88 {
                if !line.is_empty() {
                    let _ = writeln!(s, "{line}");
                }
                line = format!("    reg {}", reg_ty(r.ty));
                line_ty = Some(r.ty);
            }
            let _ = write!(line, " {}", self.names[i]);
        }
        if !line.is_empty() {
            let _ = writeln!(s, "{line}");
        }
    }

    fn list(&self, vals: &[Value]) -> String {
        vals.iter().map(|v| self.value(*v)).collect::<Vec<_>>().join(", ")
    }

    fn dsts(&self, dsts: &[Option<RegId>]) -> String {
        dsts.iter().map(|d| self.dst(*d)).collect::<Vec<_>>().join(", ")
    }

    /// An instruction's line: a read that a loop can poll (`Kernel::polling_reads`)
    /// is marked `polls`.
    fn line(&self, inst: &Inst) -> String {
        let read = matches!(
            inst.kind,
            InstKind::Load { .. } | InstKind::Atomic { op: AtomicOp::Load, .. }
        );
        if read && self.k.polling_reads.contains(&inst.span) {
            format!("polls {}", self.inst(&inst.kind))
        } else {
            self.inst(&inst.kind)
        }
    }

    /// `%a, %b = call.fnN args`.
    /// A call's line, or an indirect call's.
    fn call(&self, kind: &InstKind) -> String {
        let (callee, args, results) = match kind {
            InstKind::Call { callee, args, results } => (*callee, args, results),
            InstKind::CallIndirect { target, arms } => return self.call_indirect(*target, arms),
            other => return format!("<not a call: {other:?}>"),
        };
        let dsts: Vec<String> = results.iter().map(|d| self.reg(*d).to_string()).collect();
        let call = format!("call.fn{} {}", callee.0, self.list(args));
        match dsts.is_empty() {
            true => call.trim_end().to_string(),
            false => format!("{} = {}", dsts.join(", "), call.trim_end()),
        }
    }

    /// `call_indirect TARGET, [ADDRESS fnN (ARGS) -> (RESULTS)], ...`: one bracket per
    /// arm ([`CallArm`]).
    fn call_indirect(&self, target: Value, arms: &[CallArm]) -> String {
        let mut line = format!("call_indirect {}", self.value(target));
        for arm in arms {
            let results: Vec<String> =
                arm.results.iter().map(|r| self.reg(*r).to_string()).collect();
            line += &format!(
                ", [{:#x} fn{} ({}) -> ({})]",
                arm.address,
                arm.callee.0,
                self.list(&arm.args),
                results.join(", ")
            );
        }
        line
    }

    fn isspace(&self, i: &IsSpaceInst) -> String {
        let bytes = i.space.bytes().map_or(String::new(), |b| format!(", {b}"));
        let (dst, space, ty) = (self.reg(i.dst), i.space.name(), op_ty(i.ty));
        format!("{dst} = isspace.{space}.{ty} {}{bytes}", self.value(i.addr))
    }

    /// `atom` and `vatom`: `LHS NAME.op.space.scope.order.ty [addr], OPERANDS`.
    fn atomic(
        &self,
        lhs: &str,
        name: &str,
        (op, space, scope, order, ty): (AtomicOp, Space, Scope, Order, OpTy),
        addr: Address,
        operands: &str,
    ) -> String {
        let (op, space, scope, order) =
            (op.spelling(), space.spelling(), scope.spelling(), order.spelling());
        let (ty, addr) = (op_ty(ty), self.addr(addr));
        format!("{lhs}{name}.{op}.{space}.{scope}.{order}.{ty} {addr}, {operands}")
    }

    fn vector_atomic(&self, a: &VectorAtomic) -> String {
        let lhs = format!("{} = ", self.dsts(&a.dsts));
        let operands = format!("{}, {}", self.value(a.cmp), self.list(&a.srcs));
        self.atomic(&lhs, "vatom", (a.op, a.space, a.scope, a.order, a.ty), a.addr, &operands)
    }

    fn inst(&self, kind: &InstKind) -> String {
        let r = |x: RegId| self.reg(x).to_string();
        let v = |x: Value| self.value(x);
        match kind {
            InstKind::Mov { ty, dst, src } => {
                format!("{} = mov.{} {}", r(*dst), op_ty(*ty), v(*src))
            }
            InstKind::Pack { elem, dst, srcs } => {
                format!("{} = pack.{} {}", r(*dst), op_ty(*elem), self.list(srcs))
            }
            InstKind::Cvta { space, to, ty, dst, src } => {
                let to = if *to { "to." } else { "" };
                format!("{} = cvta.{to}{}.{} {}", r(*dst), space.name(), op_ty(*ty), v(*src))
            }
            InstKind::IsSpace(i) => self.isspace(i),
            InstKind::VectorAtomic(a) => self.vector_atomic(a),
            InstKind::Unpack { elem, dsts, src } => {
                format!("{} = unpack.{} {}", self.dsts(dsts), op_ty(*elem), v(*src))
            }
            InstKind::Special { dst, reg } => format!("{} = special.{}", r(*dst), reg.spelling()),
            InstKind::Unary { op, ty, mode, dst, src } => format!(
                "{} = {}{}.{} {}",
                r(*dst),
                op.spelling(),
                float_mode(*mode, ""),
                op_ty(*ty),
                v(*src)
            ),
            InstKind::Binary { op, ty, mode, dst, lhs, rhs } => format!(
                "{} = {}{}.{} {}, {}",
                r(*dst),
                op.spelling(),
                float_mode(*mode, ""),
                op_ty(*ty),
                v(*lhs),
                v(*rhs)
            ),
            InstKind::Mad { part, ty, dst, a, b, c } => {
                let abc = self.list(&[*a, *b, *c]);
                format!("{} = mad.{}.{} {abc}", r(*dst), mad_part(*part), op_ty(*ty))
            }
            InstKind::Bfe { ty, dst, a, pos, len } => {
                format!("{} = bfe.{} {}", r(*dst), op_ty(*ty), self.list(&[*a, *pos, *len]))
            }
            InstKind::Bfi { ty, dst, a, b, pos, len } => {
                format!("{} = bfi.{} {}", r(*dst), op_ty(*ty), self.list(&[*a, *b, *pos, *len]))
            }
            InstKind::Fma { ty, mode, dst, a, b, c } => {
                let abc = self.list(&[*a, *b, *c]);
                format!("{} = fma{}.{} {abc}", r(*dst), float_mode(*mode, ""), op_ty(*ty))
            }
            InstKind::Setp { cmp, ty, ftz, dst, dst_not, lhs, rhs, combine } => {
                let mut s = format!(
                    "{}, {} = setp.{}{}",
                    self.dst(*dst),
                    self.dst(*dst_not),
                    cmp.spelling(),
                    if *ftz { ".ftz" } else { "" }
                );
                if let Some((op, _, _)) = combine {
                    let _ = write!(s, ".{}", op.spelling());
                }
                let _ = write!(s, ".{} {}, {}", op_ty(*ty), v(*lhs), v(*rhs));
                if let Some((_, p, negate)) = combine {
                    let _ = write!(s, ", {}", self.pred(*p, *negate));
                }
                s
            }
            InstKind::Select { ty, dst, a, b, cond, negate } => format!(
                "{} = selp.{} {}, {}, {}",
                r(*dst),
                op_ty(*ty),
                v(*a),
                v(*b),
                self.pred(*cond, *negate)
            ),
            InstKind::PredLogic { op, dst, lhs, rhs } => {
                format!("{} = p{} {}, {}", r(*dst), op.spelling(), r(*lhs), r(*rhs))
            }
            InstKind::PredNot { dst, src } => format!("{} = pnot {}", r(*dst), r(*src)),
            InstKind::Convert { to, from, rounding, mode, dst, src } => format!(
                "{} = cvt{}{}.{}.{} {}",
                r(*dst),
                rounding.map(|x| format!(".{}", x.spelling())).unwrap_or_default(),
                float_mode(*mode, "mode_"),
                op_ty(*to),
                op_ty(*from),
                v(*src)
            ),
            InstKind::Load { space, ty, dsts, addr } => format!(
                "{} = load.{}.{} {}",
                self.dsts(dsts),
                space.spelling(),
                op_ty(*ty),
                self.addr(*addr)
            ),
            InstKind::Store { space, ty, srcs, addr } => format!(
                "store.{}.{} {}, {}",
                space.spelling(),
                op_ty(*ty),
                self.addr(*addr),
                self.list(srcs)
            ),
            InstKind::Narrow { to, from, rounding, satfinite, relu, dst, src } => format!(
                "{} = narrow.{}.{}{}{}.{} {}",
                r(*dst),
                to.spelling(),
                rounding.spelling(),
                if *satfinite { ".satfinite" } else { "" },
                if *relu { ".relu" } else { "" },
                op_ty(*from),
                v(*src)
            ),
            InstKind::IntToFloat { to, from, rounding, dst, src } => format!(
                "{} = itof.{}.{}.{} {}",
                r(*dst),
                to.spelling(),
                rounding.spelling(),
                op_ty(*from),
                v(*src)
            ),
            InstKind::Widen { from, dst, src } => {
                format!("{} = widen.{} {}", r(*dst), from.spelling(), v(*src))
            }
            InstKind::RoundToOdd { op, soft, dst, a, b, c } => format!(
                "{} = round_odd.{}{} {}",
                r(*dst),
                op.spelling(),
                if *soft { ".soft" } else { "" },
                self.list(&[*a, *b, *c])
            ),
            InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp } => {
                let lhs = dst.map(|d| format!("{} = ", r(d))).unwrap_or_default();
                let operands = self.list(&[*src, *cmp]);
                self.atomic(&lhs, "atom", (*op, *space, *scope, *order, *ty), *addr, &operands)
            }
            InstKind::Barrier => "barrier".into(),
            InstKind::EndThread => "end_thread".into(),
            InstKind::Subgroup { op, split, dst, value, lane } => format!(
                "{} = subgroup.{}{} {}, {}",
                r(*dst),
                op.spelling(),
                if *split { ".split" } else { "" },
                v(*value),
                v(*lane)
            ),
            InstKind::WarpBarrier { publish } => match publish {
                Some(p) => format!("warp_barrier {}", v(*p)),
                None => "warp_barrier".into(),
            },
            InstKind::Fence { device_scope } => {
                format!("fence.{}", if *device_scope { "gpu" } else { "cta" })
            }
            InstKind::WarpPublish { value } => format!("warp_publish {}", v(*value)),
            InstKind::WarpRead { dst, value, lane, warp_base } => {
                format!("{} = warp_read {}", r(*dst), self.list(&[*value, *lane, *warp_base]))
            }
            InstKind::WarpBallot { dst, value, lanes, warp_base } => {
                format!("{} = warp_ballot {}", r(*dst), self.list(&[*value, *lanes, *warp_base]))
            }
            InstKind::WarpSync => "warp_sync".into(),
            InstKind::SyncPoint { point: SyncPoint::Warp { members, kind } } => {
                format!("sync_point.warp {}, {kind}", v(*members))
            }
            InstKind::SyncPoint { point: SyncPoint::Sleep } => "sync_point.sleep".into(),
            InstKind::SyncPoint { point: SyncPoint::Acquire } => "sync_point.acquire".into(),
            InstKind::LoopCount { dst, add } => format!("{} = loop_count {add}", r(*dst)),
            InstKind::Call { .. } | InstKind::CallIndirect { .. } => self.call(kind),
            InstKind::RaceShadow { dst, word, swap } => self.race_shadow(*dst, *word, *swap),
            InstKind::Video(_)
            | InstKind::Half(_)
            | InstKind::Integer(_)
            | InstKind::HalfConvert(_)
            | InstKind::Texture(_)
            | InstKind::Matrix(_)
            | InstKind::Warp(_)
            | InstKind::BarrierReduce { .. }
            | InstKind::Copy(_)
            | InstKind::Mbarrier(_)
            | InstKind::System(_)
            | InstKind::DeviceLaunch(_)
            | InstKind::Stack(_)
            | InstKind::VariableAddress(_)
            | InstKind::DataAddress(_) => self.high_level(kind),
        }
    }

    /// The line of a high-level operation, which its own module of the text format
    /// spells (`text/video.rs`, `text/half.rs`, …).
    fn high_level(&self, kind: &InstKind) -> String {
        let r = |x: RegId| self.reg(x).to_string();
        let v = |x: Value| self.value(x);
        match kind {
            InstKind::Video(op) => super::video::print(op, r, v),
            InstKind::Half(op) => super::half::print(op, r, v),
            InstKind::Integer(op) => super::integer::print(op, r, v),
            InstKind::HalfConvert(c) => super::half::print_convert(c, r, v),
            InstKind::Texture(t) => super::texture::print(t, r, v),
            InstKind::Matrix(m) => super::matrix::print(m, r, v),
            InstKind::Warp(w) => super::warp::print(w, r, v),
            InstKind::BarrierReduce { op, dst, cond, negate, word } => {
                super::warp::print_barrier_reduce(*op, (*dst, *cond, *negate), *word, r)
            }
            InstKind::Copy(c) => super::copy::print(c, r, v),
            InstKind::Mbarrier(m) => super::mbarrier::print(m, r, v),
            InstKind::System(s) => super::system::print(s, r, v),
            InstKind::DeviceLaunch(l) => super::system::print_launch(l, r, v),
            InstKind::Stack(st) => super::stack::print(st, r, v),
            InstKind::VariableAddress(a) => super::variable::print(a, r),
            InstKind::DataAddress(a) => super::data_address::print(a, r),
            other => format!("<not a high-level operation: {other:?}>"),
        }
    }

    /// `race_shadow`, with `.swap` and its operand when it replaces the word.
    fn race_shadow(&self, dst: RegId, word: Value, swap: Option<Value>) -> String {
        match swap {
            None => format!("{} = race_shadow {}", self.reg(dst), self.list(&[word])),
            Some(swap) => {
                format!("{} = race_shadow.swap {}", self.reg(dst), self.list(&[word, swap]))
            }
        }
    }

    fn term(&self, t: &Terminator) -> String {
        match t {
            Terminator::Jump(b) => format!("jump bb{}", b.0),
            Terminator::Branch { cond, negate, if_true, if_false } => {
                format!("branch {}, bb{}, bb{}", self.pred(*cond, *negate), if_true.0, if_false.0)
            }
            Terminator::Switch { selector, cases, default } => {
                let cases: Vec<String> =
                    cases.iter().map(|(v, b)| format!("{v}: bb{}", b.0)).collect();
                format!("switch {} [{}], bb{}", self.reg(*selector), cases.join(", "), default.0)
            }
            Terminator::Return => "return".into(),
        }
    }

    fn nodes(&self, nodes: &[Node], depth: usize, s: &mut String) {
        let pad = "    ".repeat(depth);
        for n in nodes {
            match n {
                Node::Code(b) => {
                    let blk = &self.k.blocks[b.index()];
                    let label = blk.label.as_ref().map(|l| format!(" ({l})")).unwrap_or_default();
                    let _ = writeln!(s, "{pad}block bb{}{label}:", b.0);
                    for inst in &blk.insts {
                        let _ = writeln!(s, "{pad}    {}", self.line(inst));
                    }
                }
                Node::If { cond, negate, then, otherwise, .. } => {
                    let _ = writeln!(s, "{pad}if {} {{", self.pred(*cond, *negate));
                    self.nodes(then, depth + 1, s);
                    if !otherwise.is_empty() {
                        let _ = writeln!(s, "{pad}}} else {{");
                        self.nodes(otherwise, depth + 1, s);
                    }
                    let _ = writeln!(s, "{pad}}}");
                }
                Node::Switch { selector, cases, .. } => {
                    let _ = writeln!(s, "{pad}switch {} {{", self.reg(*selector));
                    for c in cases {
                        let mut labels: Vec<String> =
                            c.values.iter().map(|v| format!("case {v}")).collect();
                        if c.is_default {
                            labels.push("default".into());
                        }
                        let _ = writeln!(s, "{pad}{}:", labels.join(", "));
                        self.nodes(&c.body, depth + 1, s);
                    }
                    let _ = writeln!(s, "{pad}}}");
                }
                Node::Loop { body, .. } => {
                    let _ = writeln!(s, "{pad}loop {{");
                    self.nodes(body, depth + 1, s);
                    let _ = writeln!(s, "{pad}}}");
                }
                Node::Break => {
                    let _ = writeln!(s, "{pad}break");
                }
                Node::Continue => {
                    let _ = writeln!(s, "{pad}continue");
                }
                Node::Return => {
                    let _ = writeln!(s, "{pad}return");
                }
            }
        }
    }
}
