//! One thread: its registers and local window, where it is in the CFG or in the
//! structured tree, and the execution of every instruction up to the next point where
//! it must wait for other threads ([`WaitKind`]), which `super::warp` resolves.

use ptxvk_frontend::Span;

use super::arith::{self, mask, sext};
use super::error::Error;
use super::memory::{self, Memory};
use crate::ir::*;
pub(super) use system::{launch_records, printf_records, ARENA_SLOTS};

mod copy;
mod mbarrier;
mod stack;
mod system;
mod texture;

/// Steps a thread runs before it lets the others run.
const SLICE: u32 = 512;

/// Why a thread stopped before the instruction after `point`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WaitKind {
    /// `bar.sync`: every thread of the block.
    Barrier,
    /// `bar.red` (`InstKind::BarrierReduce`), whose predicate holds in this thread or not.
    BarrierReduce(bool),
    /// The workgroup barrier of an emulated collective, after which the thread's word
    /// of the warp scratch holds this value, when it publishes one.
    WarpBarrier(Option<u32>),
    /// A warp exchange's publish of this 32-bit value.
    Publish(u32),
    /// A subgroup operation of this thread's warp.
    Subgroup { op: SubgroupOp, dst: RegId, value: u32, lane: u32 },
    /// A sync point: the thread lets the others run.
    Yield,
    /// A high-level warp instruction (a matrix instruction, `super::matrix`, or a warp
    /// collective, `super::collective`), which the warp runs together.
    Whole,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Running,
    /// Stopped at instruction `point` (block, index).
    Waiting {
        point: (usize, usize),
        kind: WaitKind,
    },
    Exited,
}

/// A list of structured statements being run.
#[derive(Clone, Debug)]
pub(super) struct Frame<'a> {
    nodes: &'a [Node],
    next: usize,
    is_loop: bool,
}

/// A call being run (`InstKind::Call`): what the caller resumes with when the callee
/// returns.
#[derive(Clone, Debug)]
struct CallFrame {
    /// The caller: a function, or the kernel.
    function: Option<FunctionId>,
    regs: Vec<u64>,
    /// The caller's next instruction.
    at: Option<(usize, usize)>,
    tree: bool,
    /// The caller's registers that receive the callee's returns.
    results: Vec<RegId>,
}

/// Calls nest at most this deep: recursion deeper than this is reported as undefined
/// (a guard; the 4 KiB stack of a recursive kernel fits fewer activations).
const MAX_CALL_DEPTH: usize = 1024;

/// What every thread of a block shares while it runs.
pub(super) struct Ctx<'a> {
    pub k: &'a Kernel,
    pub memory: &'a mut Memory,
    pub shared: Vec<u8>,
    /// Racecheck's shadow of the shared window (`InstKind::RaceShadow`).
    pub race_shadow: Vec<u32>,
    pub ntid: [u32; 3],
    pub ctaid: [u32; 3],
    pub nctaid: [u32; 3],
    pub param_base: u64,
    pub dynamic_shared: u32,
    /// The device address of this block's shared window when it is in device memory.
    pub shared_window: u64,
    pub steps: u64,
    pub step_limit: u64,
    /// Each block's place in program order (`super::program_order`).
    pub order: Vec<usize>,
}

impl Ctx<'_> {
    /// A wait point's place in program order.
    pub fn rank(&self, point: (usize, usize)) -> (usize, usize) {
        (self.order.get(point.0).copied().unwrap_or(usize::MAX), point.1)
    }
}

pub(super) struct Thread<'a> {
    pub regs: Vec<u64>,
    pub local: Vec<u8>,
    pub tid: [u32; 3],
    pub linear: u32,
    pub state: State,
    frames: Vec<Frame<'a>>,
    /// The block being run and its next instruction.
    at: Option<(usize, usize)>,
    /// Whether the thread runs the structured tree rather than the CFG.
    tree: bool,
    /// The values of this thread's warp's last exchange, by lane.
    pub exchange: [u32; 32],
    loop_count: u32,
    /// The function being run (`None`: the kernel), and the calls that led to it.
    function: Option<FunctionId>,
    calls: Vec<CallFrame>,
}

impl<'a> Thread<'a> {
    /// A thread at the start of the CFG (`body` None) or of the structured tree.
    pub fn new(k: &Kernel, body: Option<&'a [Node]>, tid: [u32; 3], linear: u32) -> Thread<'a> {
        let (frames, at) = match body {
            Some(nodes) => (vec![Frame { nodes, next: 0, is_loop: false }], None),
            None => (Vec::new(), Some((k.entry.index(), 0))),
        };
        Thread {
            regs: vec![0; k.regs.len()],
            local: vec![0; k.local_bytes as usize],
            tid,
            linear,
            state: State::Running,
            frames,
            at,
            tree: body.is_some(),
            exchange: [0; 32],
            loop_count: 0,
            function: None,
            calls: Vec::new(),
        }
    }

    /// The bits of `v` (a register's whole width, or the immediate).
    pub fn get(&self, v: Value) -> u64 {
        match v {
            Value::Imm(x) => x,
            Value::Reg(r) => self.regs[r.index()],
        }
    }

    /// `v` read at a type of `bits` bits.
    fn at_bits(&self, v: Value, bits: u32) -> u64 {
        self.get(v) & mask(bits)
    }

    fn pred(&self, r: RegId) -> bool {
        self.regs[r.index()] & 1 != 0
    }

    pub fn set(&mut self, k: &Kernel, r: RegId, v: u64) {
        let ty = match self.function {
            Some(f) => k.functions[f.index()].reg(r).ty,
            None => k.reg(r).ty,
        };
        self.regs[r.index()] = v & mask(ty.bits());
    }

    /// The blocks of the body being run: the kernel's, or a called function's.
    fn blocks<'k>(&self, k: &'k Kernel) -> &'k [Block] {
        match self.function {
            Some(f) => &k.functions[f.index()].blocks,
            None => &k.blocks,
        }
    }

    /// `InstKind::Call`: the arguments into the callee's parameter registers, then its
    /// entry block, the caller saved.
    fn call(
        &mut self,
        k: &Kernel,
        callee: FunctionId,
        args: &[Value],
        results: &[RegId],
        span: Span,
    ) -> Result<(), Error> {
        let Some(f) = k.functions.get(callee.index()) else {
            return Err(Error::Undefined { what: format!("a call of fn{}", callee.0), span });
        };
        if self.calls.len() >= MAX_CALL_DEPTH {
            return Err(Error::Undefined { what: "calls nested too deep".into(), span });
        }
        let values: Vec<u64> =
            args.iter().zip(&f.params).map(|(a, (_, ty))| self.at_bits(*a, ty.bits())).collect();
        // `crate::ir::call`, *Thread registers*: the caller's view of each.
        let mut thread = Vec::new();
        for &(own, kernel_reg) in &f.thread_regs {
            let Some(r) = self.thread_reg(k, kernel_reg) else {
                let what = format!("a call of {} from a body without its thread registers", f.name);
                return Err(Error::Undefined { what, span });
            };
            thread.push((own, self.regs[r.index()]));
        }
        let regs = std::mem::replace(&mut self.regs, vec![0; f.regs.len()]);
        self.calls.push(CallFrame {
            function: self.function.replace(callee),
            regs,
            at: self.at.replace((f.entry.index(), 0)),
            tree: std::mem::replace(&mut self.tree, false),
            results: results.to_vec(),
        });
        for (v, (r, _)) in values.into_iter().zip(&f.params) {
            self.set(k, *r, v);
        }
        for (own, v) in thread {
            self.regs[own.index()] = v;
        }
        Ok(())
    }

    /// The register of the body running that stands for the kernel's `kernel_reg`: itself
    /// in the kernel, a function's thread register (`crate::ir::call`).
    fn thread_reg(&self, k: &Kernel, kernel_reg: RegId) -> Option<RegId> {
        match self.function {
            None => Some(kernel_reg),
            Some(f) => {
                k.functions[f.index()].thread_regs.iter().find(|t| t.1 == kernel_reg).map(|t| t.0)
            }
        }
    }

    /// A called function's return: its return registers into the caller's results, and
    /// the caller goes on. `false` when the kernel itself returns.
    fn return_from_call(&mut self, k: &Kernel) -> bool {
        let (Some(frame), Some(f)) = (self.calls.pop(), self.function) else { return false };
        let f = &k.functions[f.index()];
        let values: Vec<u64> =
            f.returns.iter().map(|(r, ty)| self.at_bits(Value::Reg(*r), ty.bits())).collect();
        let thread: Vec<(RegId, u64)> = f
            .thread_regs
            .iter()
            .map(|&(own, kernel_reg)| (kernel_reg, self.regs[own.index()]))
            .collect();
        self.regs = frame.regs;
        self.function = frame.function;
        self.at = frame.at;
        self.tree = frame.tree;
        for (r, v) in frame.results.iter().zip(values) {
            self.set(k, *r, v);
        }
        for (kernel_reg, v) in thread {
            if let Some(r) = self.thread_reg(k, kernel_reg) {
                self.regs[r.index()] = v;
            }
        }
        true
    }

    /// Runs until the thread waits or exits.
    pub fn run(&mut self, cx: &mut Ctx<'a>) -> Result<(), Error> {
        let k = cx.k;
        let mut slice = 0;
        while self.state == State::Running {
            // An emulation routine's steps do not count: a call of one stands for one
            // instruction, and its loops are bounded (`Routine::loop_iterations`).
            if self.function.is_none_or(|f| k.functions[f.index()].routine.is_none()) {
                cx.steps += 1;
                if cx.steps > cx.step_limit {
                    return Err(Error::StepLimit(cx.step_limit));
                }
            }
            slice += 1;
            if slice > SLICE {
                // Independent thread scheduling (PTX ISA 9.2 §2.2.1): a thread that spins
                // lets the others run.
                self.state = State::Waiting { point: (usize::MAX, 0), kind: WaitKind::Yield };
                break;
            }
            let Some((b, i)) = self.at else {
                self.tree_step();
                continue;
            };
            let block = &self.blocks(k)[b];
            if let Some(inst) = block.insts.get(i) {
                self.at = Some((b, i + 1));
                let in_function = self.function.is_some();
                if let Some(kind) = self.exec(cx, inst)? {
                    // Wait points are the kernel's blocks (program order, `super::warp`);
                    // a called function's barriers and yields wait at none.
                    let point = if in_function { (usize::MAX, 0) } else { (b, i) };
                    self.state = State::Waiting { point, kind };
                }
                continue;
            }
            if self.tree {
                self.at = None;
                continue;
            }
            self.at = match &block.term {
                Terminator::Return if self.return_from_call(k) => continue,
                Terminator::Return => {
                    self.state = State::Exited;
                    None
                }
                Terminator::Jump(t) => Some((t.index(), 0)),
                Terminator::Branch { cond, negate, if_true, if_false } => {
                    let t = if self.pred(*cond) != *negate { if_true } else { if_false };
                    Some((t.index(), 0))
                }
                Terminator::Switch { selector, cases, default } => {
                    let v = self.regs[selector.index()] as u32;
                    let t = cases.iter().find(|c| c.0 == v).map_or(*default, |c| c.1);
                    Some((t.index(), 0))
                }
            };
        }
        Ok(())
    }

    /// Moves through the structured tree to the next block to run, or exits.
    fn tree_step(&mut self) {
        let Some(top) = self.frames.last_mut() else {
            self.state = State::Exited;
            return;
        };
        if top.next >= top.nodes.len() {
            if top.is_loop {
                top.next = 0;
            } else {
                self.frames.pop();
            }
            return;
        }
        let node = &top.nodes[top.next];
        top.next += 1;
        let push = |frames: &mut Vec<Frame<'a>>, nodes: &'a [Node], is_loop| {
            frames.push(Frame { nodes, next: 0, is_loop })
        };
        match node {
            Node::Code(b) => self.at = Some((b.index(), 0)),
            Node::If { cond, negate, then, otherwise, .. } => {
                let taken = if self.pred(*cond) != *negate { then } else { otherwise };
                push(&mut self.frames, taken, false);
            }
            Node::Switch { selector, cases, .. } => {
                let v = self.regs[selector.index()] as u32;
                if let Some(c) = super::control::switch_case(cases, v) {
                    push(&mut self.frames, &c.body, false);
                }
            }
            Node::Loop { body, .. } => push(&mut self.frames, body, true),
            Node::Break => {
                while let Some(f) = self.frames.pop() {
                    if f.is_loop {
                        break;
                    }
                }
            }
            Node::Continue => {
                while let Some(f) = self.frames.last_mut() {
                    if f.is_loop {
                        f.next = 0;
                        break;
                    }
                    self.frames.pop();
                }
            }
            Node::Return => self.state = State::Exited,
        }
    }

    /// Executes one instruction; returns why the thread must wait after it, if so.
    fn exec(&mut self, cx: &mut Ctx<'a>, inst: &Inst) -> Result<Option<WaitKind>, Error> {
        let k = cx.k;
        let span = inst.span;
        let collective = matches!(
            inst.kind,
            InstKind::WarpBarrier { .. }
                | InstKind::WarpPublish { .. }
                | InstKind::Subgroup { .. }
                | InstKind::Matrix(_)
                | InstKind::Warp(_)
        );
        if collective && self.function.is_some() {
            let what = "warp collectives in called functions".into();
            return Err(Error::Unsupported { what, span });
        }
        match &inst.kind {
            InstKind::Call { callee, args, results } => {
                self.call(k, *callee, args, results, span)?
            }
            // `crate::ir::CallArm`: the first arm at the target's address, if any.
            InstKind::CallIndirect { target, arms } => {
                let address = self.at_bits(*target, 64);
                if let Some(arm) = arms.iter().find(|a| a.address == address) {
                    self.call(k, arm.callee, &arm.args, &arm.results, span)?
                }
            }
            InstKind::Load { .. }
            | InstKind::Store { .. }
            | InstKind::Atomic { .. }
            | InstKind::VectorAtomic(_) => {
                self.exec_memory(cx, &inst.kind, span)?;
            }
            InstKind::Barrier => return Ok(Some(WaitKind::Barrier)),
            // The thread ends with every call active (`crate::ir::call`).
            InstKind::EndThread => {
                self.calls.clear();
                self.function = None;
                self.at = None;
                self.state = State::Exited;
            }
            InstKind::BarrierReduce { cond, negate, .. } => {
                return Ok(Some(WaitKind::BarrierReduce(self.pred(*cond) != *negate)));
            }
            InstKind::WarpBarrier { publish } => {
                if publish.is_some() && k.warp_scratch.is_none() {
                    let what = "a warp barrier without scratch".into();
                    return Err(Error::Unsupported { what, span });
                }
                let v = publish.map(|v| self.at_bits(v, 32) as u32);
                return Ok(Some(WaitKind::WarpBarrier(v)));
            }
            InstKind::WarpPublish { value } => {
                return Ok(Some(WaitKind::Publish(self.at_bits(*value, 32) as u32)));
            }
            InstKind::Subgroup { op, dst, value, lane, .. } => {
                let (value, lane) =
                    (self.at_bits(*value, 32) as u32, self.at_bits(*lane, 32) as u32);
                return Ok(Some(WaitKind::Subgroup { op: *op, dst: *dst, value, lane }));
            }
            InstKind::SyncPoint { .. } => return Ok(Some(WaitKind::Yield)),
            InstKind::Matrix(_) => return Ok(Some(WaitKind::Whole)),
            // `bar.warp.sync` exchanges nothing: as its expansion's `warp_sync`.
            InstKind::Warp(w) if w.op == WarpOp::Sync => {}
            InstKind::Warp(_) => return Ok(Some(WaitKind::Whole)),
            InstKind::WarpRead { dst, lane, .. } => {
                let lane = self.at_bits(*lane, 32);
                if lane >= 32 {
                    return Err(Error::Undefined {
                        what: format!("a warp read of lane {lane}"),
                        span,
                    });
                }
                let v = u64::from(self.exchange[lane as usize]);
                self.set(k, *dst, v);
            }
            InstKind::WarpBallot { dst, lanes, .. } => {
                let lanes = self.at_bits(*lanes, 32);
                let votes =
                    (0..32).filter(|&l| self.exchange[l] != 0).fold(0u64, |a, l| a | 1 << l);
                self.set(k, *dst, votes & lanes);
            }
            InstKind::WarpSync | InstKind::Fence { .. } => {}
            InstKind::LoopCount { dst, add } => {
                // Counted per thread: the subgroup's count when its threads run the loop
                // together, as the tests' do.
                self.loop_count = self.loop_count.wrapping_add_signed(*add);
                self.set(k, *dst, u64::from(self.loop_count));
            }
            InstKind::RaceShadow { dst, word, swap } => {
                let w = self.at_bits(*word, 32) as usize;
                let fault = Error::Fault { space: "race shadow", addr: w as u64, size: 4, span };
                let old = *cx.race_shadow.get(w).ok_or(fault)?;
                if let Some(s) = swap {
                    cx.race_shadow[w] = self.at_bits(*s, 32) as u32;
                }
                self.set(k, *dst, u64::from(old));
            }
            InstKind::Texture(t) => self.exec_texture(cx, t, span)?,
            InstKind::Copy(c) => self.exec_copy(cx, c, span)?,
            InstKind::Mbarrier(m) => return self.exec_mbarrier(cx, m, span),
            InstKind::System(s) => self.exec_system(cx, s, span)?,
            InstKind::DeviceLaunch(l) => self.exec_launch(cx, l, span)?,
            InstKind::Stack(s) => self.exec_stack(cx, s, span)?,
            // The offset `pass::layout_memory` gives the variable (`interp::run` runs a
            // CFG with variables after the pass; a structured tree has none).
            InstKind::VariableAddress(a) => {
                let layout = crate::pass::layout_memory::layout(&k.variables);
                let offset = layout.offsets.get(a.var.index()).copied().unwrap_or(0);
                self.set(k, a.dst, u64::from(offset).wrapping_add(a.offset));
            }
            // The parameter block's address plus the offset (`crate::ir::data_address`);
            // the module data's address is not modelled.
            InstKind::DataAddress(DataAddress::Param { dst, ty, offset }) => {
                let offset = self.at_bits(Value::Reg(*offset), ty.bits());
                self.set(k, *dst, cx.param_base.wrapping_add(offset));
            }
            InstKind::DataAddress(a) => {
                let what = format!("the module data's address ({a:?})");
                return Err(Error::Unsupported { what, span });
            }
            InstKind::Special { dst, reg } => {
                let v = self.special(cx, *reg, span)?;
                self.set(k, *dst, v);
            }
            InstKind::Cvta { space, to, ty, dst, src } => {
                let v = cvta(*space, *to, ty.bits(), self.at_bits(*src, ty.bits()), cx.param_base);
                self.set(k, *dst, v);
            }
            InstKind::IsSpace(IsSpaceInst { space, ty, dst, addr }) => {
                let a = self.at_bits(*addr, ty.bits());
                let Some(v) = is_space(*space, ty.bits(), a, cx.param_base) else {
                    let what = format!("`isspacep.{}`, which tests the module data", space.name());
                    return Err(Error::Unsupported { what, span });
                };
                self.set(k, *dst, u64::from(v));
            }
            kind => self.exec_value(k, kind),
        }
        Ok(None)
    }

    fn special(&self, cx: &Ctx<'_>, reg: SpecialReg, span: Span) -> Result<u64, Error> {
        let k = cx.k;
        Ok(match reg {
            SpecialReg::Tid(d) => u64::from(self.tid[d.index()]),
            SpecialReg::Ntid(d) => u64::from(cx.ntid[d.index()]),
            SpecialReg::Ctaid(d) => u64::from(cx.ctaid[d.index()]),
            SpecialReg::Nctaid(d) => u64::from(cx.nctaid[d.index()]),
            SpecialReg::ParamBlock => cx.param_base,
            SpecialReg::DynamicSharedBytes => u64::from(cx.dynamic_shared),
            SpecialReg::TotalSharedBytes => u64::from(k.shared.static_bytes + cx.dynamic_shared),
            SpecialReg::DynamicSharedBase => u64::from(k.shared.dynamic_offset()),
            SpecialReg::SharedWindowAddress => cx.shared_window,
            // As if the launch had allocations outside the range: the test against them
            // is then modelled too.
            SpecialReg::ConfinedOutside => 1,
            SpecialReg::Warp(reg) => u64::from(warp_model(reg, self.tid, cx.ntid)),
            SpecialReg::WindowBase => memory::WINDOW_BASE,
            // The cluster registers of one-CTA clusters (`crate::ir::special`).
            SpecialReg::Ptx(PtxReg::IsExplicitCluster) => u64::from(k.explicit_cluster),
            SpecialReg::Ptx(PtxReg::ClusterCtaid(_) | PtxReg::ClusterCtarank) => 0,
            SpecialReg::Ptx(PtxReg::ClusterNctaid(_) | PtxReg::ClusterNctarank) => 1,
            SpecialReg::ModuleData
            | SpecialReg::DeviceClock
            | SpecialReg::Ptx(PtxReg::ClockLow | PtxReg::ClockHigh | PtxReg::EnvReg { .. }) => {
                return Err(Error::Unsupported { what: format!("special register {reg:?}"), span });
            }
        })
    }

    /// The instructions that only compute registers from registers.
    fn exec_value(&mut self, k: &Kernel, kind: &InstKind) {
        let (dst, v) = match kind {
            InstKind::Mov { ty, dst, src } => (*dst, self.at_bits(*src, ty.bits())),
            InstKind::Pack { elem, dst, srcs } => {
                let w = elem.bits();
                let v = srcs.iter().enumerate().fold(0u64, |acc, (i, s)| {
                    acc | self.at_bits(*s, w).checked_shl(w * i as u32).unwrap_or(0)
                });
                (*dst, v)
            }
            InstKind::Unpack { elem, dsts, src } => {
                let (w, v) = (elem.bits(), self.get(*src));
                for (i, d) in dsts.iter().enumerate() {
                    if let Some(d) = d {
                        self.set(k, *d, v.checked_shr(w * i as u32).unwrap_or(0) & mask(w));
                    }
                }
                return;
            }
            InstKind::Unary { op, ty, mode, dst, src } => {
                (*dst, arith::unary(*op, *ty, *mode, self.at_bits(*src, ty.bits())))
            }
            InstKind::Binary { op, ty, mode, dst, lhs, rhs } => {
                let w = ty.bits();
                // Shift amounts are 32-bit whatever the type.
                let rw = if matches!(op, BinaryOp::Shl | BinaryOp::Shr) { 32 } else { w };
                let v =
                    arith::binary(*op, *ty, *mode, self.at_bits(*lhs, w), self.at_bits(*rhs, rw));
                (*dst, v)
            }
            InstKind::Mad { part, ty, dst, a, b, c } => {
                let w = ty.bits();
                let cw = if *part == BinaryOp::MulWide { 2 * w } else { w };
                let (a, b, c) = (self.at_bits(*a, w), self.at_bits(*b, w), self.at_bits(*c, cw));
                (*dst, arith::mad(*part, *ty, a, b, c))
            }
            InstKind::Bfe { ty, dst, a, pos, len } => {
                let a = self.at_bits(*a, ty.bits());
                (*dst, arith::bfe(*ty, a, self.at_bits(*pos, 32), self.at_bits(*len, 32)))
            }
            InstKind::Bfi { ty, dst, a, b, pos, len } => {
                let (a, b) = (self.at_bits(*a, ty.bits()), self.at_bits(*b, ty.bits()));
                (*dst, arith::bfi(*ty, a, b, self.at_bits(*pos, 32), self.at_bits(*len, 32)))
            }
            InstKind::Fma { ty, mode, dst, a, b, c } => {
                let w = ty.bits();
                let (a, b, c) = (self.at_bits(*a, w), self.at_bits(*b, w), self.at_bits(*c, w));
                (*dst, arith::fma(*ty, *mode, a, b, c))
            }
            InstKind::Setp { cmp, ty, ftz, dst, dst_not, lhs, rhs, combine } => {
                let w = ty.bits();
                let c =
                    arith::compare(*cmp, *ty, *ftz, self.at_bits(*lhs, w), self.at_bits(*rhs, w));
                let fold = |x: bool| match combine {
                    Some((op, p, neg)) => arith::bool_op(*op, x, self.pred(*p) != *neg),
                    None => x,
                };
                let (yes, no) = (fold(c), fold(!c));
                if let Some(d) = dst {
                    self.set(k, *d, u64::from(yes));
                }
                if let Some(d) = dst_not {
                    self.set(k, *d, u64::from(no));
                }
                return;
            }
            InstKind::Select { ty, dst, a, b, cond, negate } => {
                let pick = if self.pred(*cond) != *negate { a } else { b };
                (*dst, self.at_bits(*pick, ty.bits()))
            }
            InstKind::PredLogic { op, dst, lhs, rhs } => {
                (*dst, u64::from(arith::bool_op(*op, self.pred(*lhs), self.pred(*rhs))))
            }
            InstKind::PredNot { dst, src } => (*dst, u64::from(!self.pred(*src))),
            InstKind::Convert { to, from, rounding, mode, dst, src } => {
                let v = self.at_bits(*src, from.bits());
                (*dst, arith::convert(*to, *from, *rounding, *mode, v))
            }
            InstKind::Narrow { to, from, rounding, satfinite, relu, dst, src } => {
                let v = self.at_bits(*src, from.bits());
                (*dst, arith::narrow(*to, *from, *rounding, *satfinite, *relu, v))
            }
            InstKind::IntToFloat { to, from, rounding, dst, src } => {
                (*dst, arith::int_to_float(*to, *from, *rounding, self.at_bits(*src, from.bits())))
            }
            InstKind::Widen { from, dst, src } => {
                (*dst, arith::widen(*from, self.at_bits(*src, from.bits())))
            }
            InstKind::RoundToOdd { op, dst, a, b, c, .. } => {
                let (a, b, c) = (self.at_bits(*a, 32), self.at_bits(*b, 32), self.at_bits(*c, 32));
                (*dst, arith::round_to_odd(*op, a, b, c))
            }
            InstKind::Half(op) => {
                let bits = 16 * u32::from(op.lanes);
                (op.dst, super::half::eval(op, |v| self.at_bits(v, bits)))
            }
            InstKind::Integer(op) => {
                let outs =
                    super::integer::eval(op, |v, bits| self.at_bits(v, bits), |r| self.pred(r));
                for (r, v) in outs {
                    self.set(k, r, v);
                }
                return;
            }
            InstKind::HalfConvert(c) => {
                let read = |v: Value, bits: u32| self.at_bits(v, bits);
                (c.dst, super::half::convert(c, read))
            }
            InstKind::Video(op) => {
                (op.dst(), u64::from(super::video::eval(op, |v| self.at_bits(v, 32) as u32)))
            }
            // Every other instruction is handled by `exec`.
            _ => return,
        };
        self.set(k, dst, v);
    }

    /// The byte address of `addr` in `space` (not generic): 64-bit for global memory, a
    /// 32-bit offset in the other spaces.
    fn address(&self, space: Space, addr: &Address) -> u64 {
        self.place(space, addr).1
    }

    /// The space and byte address of `addr` in `space`: 64-bit for global memory, a
    /// 32-bit offset in the other spaces. A generic address's upper half says which
    /// window, if any, its lower half is an offset in (`Space::Generic`, the launch
    /// ABI's `SHARED_WINDOW` and `LOCAL_WINDOW`); any other is a global address.
    fn place(&self, space: Space, addr: &Address) -> (Space, u64) {
        let base = addr.base.map_or(0, |r| self.regs[r.index()]);
        let a = base.wrapping_add(addr.offset as u64);
        let space = match space {
            Space::Generic if a >> 32 == SHARED_WINDOW >> 32 => Space::Shared,
            Space::Generic if a >> 32 == LOCAL_WINDOW >> 32 => Space::Local,
            Space::Generic => Space::Global,
            space => space,
        };
        (space, if space == Space::Global { a } else { a & 0xffff_ffff })
    }

    /// [`Self::place`], but a generic access of a 32-bit address (base register) in a
    /// module with 32-bit addresses, which `pass::widen_generic` widens, is in the top
    /// windows of the 32-bit range ([`memory::narrow_generic_place`]).
    fn place_in(&self, k: &Kernel, space: Space, addr: &Address) -> (Space, u64) {
        // The base's width is asked last: in a function's body, `k.regs` are not its.
        let narrow = || addr.base.is_none_or(|r| k.reg(r).ty.bits() == 32);
        if space != Space::Generic || k.address_size != 32 || !narrow() {
            return self.place(space, addr);
        }
        let base = addr.base.map_or(0, |r| self.regs[r.index()]);
        memory::narrow_generic_place(base.wrapping_add(addr.offset as u64) as u32)
    }

    fn read(
        &self,
        cx: &Ctx<'_>,
        space: Space,
        addr: u64,
        size: u32,
        span: Span,
    ) -> Result<u64, Error> {
        let fault = || Error::Fault { space: space.name(), addr, size, span };
        match space {
            Space::Global => cx.memory.read(addr, size, span),
            Space::Param => cx.memory.read(cx.param_base + addr, size, span).map_err(|_| fault()),
            Space::Shared => memory::read(&cx.shared, addr, size).ok_or_else(fault),
            Space::Local => memory::read(&self.local, addr, size).ok_or_else(fault),
            // Resolved by `Thread::address`.
            Space::Generic => Err(fault()),
        }
    }

    fn write(
        &mut self,
        cx: &mut Ctx<'_>,
        space: Space,
        addr: u64,
        size: u32,
        v: u64,
        span: Span,
    ) -> Result<(), Error> {
        let fault = || Error::Fault { space: space.name(), addr, size, span };
        match space {
            Space::Global => cx.memory.write(addr, size, v, span),
            Space::Param | Space::Generic => Err(fault()),
            Space::Shared => memory::write(&mut cx.shared, addr, size, v).ok_or_else(fault),
            Space::Local => memory::write(&mut self.local, addr, size, v).ok_or_else(fault),
        }
    }

    fn exec_memory(&mut self, cx: &mut Ctx<'_>, kind: &InstKind, span: Span) -> Result<(), Error> {
        let k = cx.k;
        match kind {
            // One atomic per element, in element order, each at its element's offset
            // (`ir::VectorAtomic`; PTX ISA 9.2 §9.7.13.5).
            InstKind::VectorAtomic(a) => {
                let (op, space, ty, scope, order) = (a.op, a.space, a.ty, a.scope, a.order);
                for (k, (dst, b)) in a.dsts.iter().zip(&a.srcs).enumerate() {
                    let offset = a.addr.offset + i64::from(ty.bits() / 8) * k as i64;
                    let addr = Address { base: a.addr.base, offset };
                    // `atom.cas`'s `b` is the comparand, `c` the new value.
                    let (src, cmp) = if op == AtomicOp::Cas { (a.cmp, *b) } else { (*b, a.cmp) };
                    let dst = *dst;
                    let element =
                        InstKind::Atomic { op, space, ty, scope, order, dst, addr, src, cmp };
                    self.exec_memory(cx, &element, span)?;
                }
            }
            InstKind::Load { space, ty, dsts, addr } => {
                let (size, (space, a)) = (ty.bits().div_ceil(8), self.place_in(k, *space, addr));
                for (i, d) in dsts.iter().enumerate() {
                    let v = self.read(
                        cx,
                        space,
                        a.wrapping_add(u64::from(size) * i as u64),
                        size,
                        span,
                    )?;
                    if let Some(d) = d {
                        let v = if ty.is_signed() { sext(v, ty.bits()) as u64 } else { v };
                        self.set(k, *d, v);
                    }
                }
            }
            InstKind::Store { space, ty, srcs, addr } => {
                let (size, (space, a)) = (ty.bits().div_ceil(8), self.place_in(k, *space, addr));
                for (i, s) in srcs.iter().enumerate() {
                    let v = self.at_bits(*s, ty.bits());
                    self.write(
                        cx,
                        space,
                        a.wrapping_add(u64::from(size) * i as u64),
                        size,
                        v,
                        span,
                    )?;
                }
            }
            InstKind::Atomic { op, space: given, ty, dst, addr, src, cmp, .. } => {
                let (size, (space, a)) = (ty.bits().div_ceil(8), self.place_in(k, *given, addr));
                let op = match *op {
                    // A generic atomic other than a strong load or store is undefined on
                    // local memory (PTX ISA 9.2 §9.7.13.5).
                    AtomicOp::Load | AtomicOp::Store => *op,
                    _ if *given == Space::Generic && space == Space::Local => {
                        let what = "a generic atomic on local memory".into();
                        return Err(Error::Undefined { what, span });
                    }
                    // A generic float add's `.ftz` is global memory's (§9.7.13.5).
                    AtomicOp::FloatAdd { ftz } if *given == Space::Generic => {
                        AtomicOp::FloatAdd { ftz: ftz && space == Space::Global }
                    }
                    op => op,
                };
                let old = self.read(cx, space, a, size, span)?;
                let (src, cmp) = (self.at_bits(*src, ty.bits()), self.at_bits(*cmp, ty.bits()));
                let new = memory::atomic_update(op, *ty, old, src, cmp);
                if op != AtomicOp::Load {
                    self.write(cx, space, a, size, new, span)?;
                }
                if let Some(d) = dst {
                    // A strong load into a wider register extends as a `Load` does.
                    let signed = op == AtomicOp::Load && ty.is_signed();
                    self.set(k, *d, if signed { sext(old, ty.bits()) as u64 } else { old });
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// `isspacep` ([`InstKind::IsSpace`]) of the `bits`-bit generic address `a`, from the
/// windows [`cvta`] makes; `None` for `.global` and `.const`, which test the module
/// data's address (`SpecialReg::ModuleData`, not modelled).
fn is_space(space: SpaceTest, bits: u32, a: u64, param_base: u64) -> Option<bool> {
    let in_range = |lo: u32, hi: u32| (u64::from(lo)..=u64::from(hi)).contains(&a);
    Some(match space {
        SpaceTest::Global { .. } | SpaceTest::Const { .. } => return None,
        SpaceTest::Shared if bits == 32 => in_range(SHARED_WINDOW_32, u32::MAX),
        SpaceTest::Local if bits == 32 => in_range(LOCAL_WINDOW_32, SHARED_WINDOW_32 - 1),
        SpaceTest::Param { .. } if bits == 32 => in_range(PARAM_WINDOW_32, LOCAL_WINDOW_32 - 1),
        SpaceTest::Shared => a >> 32 == SHARED_WINDOW >> 32,
        SpaceTest::Local => a >> 32 == LOCAL_WINDOW >> 32,
        SpaceTest::Param { bytes } => a.wrapping_sub(param_base) < u64::from(bytes),
    })
}

/// `cvta` ([`InstKind::Cvta`]) of the `bits`-bit address `a`, as `pass::infer_spaces`
/// writes it out: the shared and local windows (a device function's call parameters are
/// in the local one) are the upper halves `SHARED_WINDOW` and `LOCAL_WINDOW` of 64-bit
/// generic addresses, or the top windows of the 32-bit range from `SHARED_WINDOW_32`,
/// `LOCAL_WINDOW_32` and `PARAM_WINDOW_32`; the kernel's parameter block is at
/// `param_base` in 64-bit generic addresses; global addresses are generic ones.
fn cvta(space: CvtaSpace, to: bool, bits: u32, a: u64, param_base: u64) -> u64 {
    let narrow = bits == 32;
    let window = match space {
        CvtaSpace::Global => return a,
        CvtaSpace::Shared if narrow => u64::from(SHARED_WINDOW_32),
        CvtaSpace::Local | CvtaSpace::CallParam if narrow => u64::from(LOCAL_WINDOW_32),
        CvtaSpace::Param if narrow => u64::from(PARAM_WINDOW_32),
        CvtaSpace::Shared => SHARED_WINDOW,
        CvtaSpace::Local | CvtaSpace::CallParam => LOCAL_WINDOW,
        CvtaSpace::Param if to => return a.wrapping_sub(param_base),
        CvtaSpace::Param => return a.wrapping_add(param_base),
    };
    match (narrow, to) {
        (true, false) => a.wrapping_add(window) & 0xffff_ffff,
        (true, true) => a.wrapping_sub(window) & 0xffff_ffff,
        (false, true) => a & 0xffff_ffff,
        (false, false) => a | window,
    }
}

/// A special register of the warp model (as [`WarpReg`]'s doc specifies) of the thread
/// `tid` of a block of `ntid`.
fn warp_model(reg: WarpReg, tid: [u32; 3], ntid: [u32; 3]) -> u32 {
    let t = tid[0]
        .wrapping_add(ntid[0].wrapping_mul(tid[1].wrapping_add(ntid[1].wrapping_mul(tid[2]))));
    let lane = t % 32;
    let below = (1u32 << lane) - 1;
    let threads = ntid[0].wrapping_mul(ntid[1]).wrapping_mul(ntid[2]);
    match reg {
        WarpReg::LaneId => lane,
        WarpReg::WarpId => t / 32,
        WarpReg::Nwarpid => threads.wrapping_add(31) / 32,
        WarpReg::LanemaskEq => 1 << lane,
        WarpReg::LanemaskLt => below,
        WarpReg::LanemaskLe => below | 1 << lane,
        WarpReg::LanemaskGt => !(below | 1 << lane),
        _ => !below,
    }
}
