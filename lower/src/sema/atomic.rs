//! `atom` and `red` (PTX ISA 9.2 §9.7.13.5-6): the integer and bit operations map to
//! native atomics (`InstKind::Atomic`); `.inc`, `.dec` and the float additions are
//! compare-and-swap loops built here from a native `cas`, so that they are exact on
//! every device (Vulkan has no wrapping increment, and f64 atomics are optional).

use ptxvk_frontend::ast::{self, Operand, StateSpace};
use ptxvk_frontend::{Diagnostic, Span};

use super::expand::{has, Emit};
use super::{is_cache_hint, Lowerer, Mods};
use crate::build::Build;
use crate::ir::{
    Address, AtomicOp, BinaryOp, CmpOp, FloatFormat, FloatMode, InstKind, OpTy, Order, Scope,
    Space, Terminator, Value,
};

/// What an `atom`/`red` computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Native(AtomicOp),
    Inc,
    Dec,
    FloatAdd,
    /// `.add.noftz` on `.f16`/`.bf16` (one lane, 16 bits) or `.f16x2`/`.bf16x2` (two).
    HalfAdd(FloatFormat, u32),
    /// `.cas.b16`: a compare-and-swap of the 16-bit half of a word.
    Cas16,
}

/// Whether `i` is a 64-bit `atom`/`red` that may reach shared memory: on `.shared`, or
/// on a generic address in a kernel that makes generic shared addresses. Such a kernel
/// gets a window of 64-bit words (`SharedLayout::wide`).
pub(super) fn may_be_wide_shared(i: &ast::Instruction, generic_windows: bool) -> bool {
    if !matches!(i.opcode.value.as_str(), "atom" | "red") {
        return false;
    }
    let bits64 =
        i.modifiers.iter().any(|m| matches!(m.value.as_str(), ".b64" | ".u64" | ".s64" | ".f64"));
    let space = i.modifiers.iter().find_map(|m| StateSpace::from_directive(&m.value));
    bits64
        && match space {
            Some(StateSpace::Shared) => true,
            None => generic_windows,
            Some(_) => false,
        }
}

impl Lowerer<'_> {
    /// Lowers `atom` and `red`; `None` for other instructions.
    pub(super) fn atomic(
        &mut self,
        op: &str,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        match op {
            "atom" | "red" => Some(self.lower_atomic(op == "red", i, m)),
            _ => None,
        }
    }

    fn lower_atomic(
        &mut self,
        red: bool,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Result<(), Diagnostic> {
        let span = i.span;
        let opname = i.opcode.value.as_str();
        let mut kind = None;
        let mut scope = Scope::Gpu;
        let mut order = Order::Relaxed;
        if let Some(b) = m.bool_op {
            kind = Some(Kind::Native(match b {
                crate::ir::BoolOp::And => AtomicOp::And,
                crate::ir::BoolOp::Or => AtomicOp::Or,
                crate::ir::BoolOp::Xor => AtomicOp::Xor,
            }));
        }
        for o in &m.other {
            let s = o.value.as_str();
            let k = match s {
                ".add" => Some(Kind::Native(AtomicOp::Add)),
                ".min" => Some(Kind::Native(AtomicOp::Min)),
                ".max" => Some(Kind::Native(AtomicOp::Max)),
                ".exch" => Some(Kind::Native(AtomicOp::Exch)),
                ".cas" => Some(Kind::Native(AtomicOp::Cas)),
                ".inc" => Some(Kind::Inc),
                ".dec" => Some(Kind::Dec),
                _ => None,
            };
            if let Some(k) = k {
                if kind.is_some() {
                    return Err(Diagnostic::error(
                        o.span,
                        format!("`{opname}` takes one operation"),
                    ));
                }
                kind = Some(k);
                continue;
            }
            match s {
                ".cta" => scope = Scope::Cta,
                ".gpu" => scope = Scope::Gpu,
                ".sys" => scope = Scope::Sys,
                ".relaxed" => order = Order::Relaxed,
                ".acquire" => order = Order::Acquire,
                ".release" => order = Order::Release,
                ".acq_rel" => order = Order::AcqRel,
                ".cluster" => {
                    return Err(super::unsupported(
                        o.span,
                        "the `.cluster` scope",
                        "thread-block clusters have no Vulkan equivalent",
                    ))
                }
                ".noftz" => {}
                _ if is_cache_hint(s) => {}
                _ => {
                    return Err(Diagnostic::error(
                        o.span,
                        format!("unknown or unsupported modifier `{s}` for `{opname}`"),
                    ))
                }
            }
        }
        if red && matches!(order, Order::Acquire | Order::AcqRel) {
            return Err(Diagnostic::error(span, "`red` takes `.relaxed` or `.release`"));
        }
        if m.vector.is_some() {
            return Err(super::unsupported(span, "vector atomics", "not implemented yet"));
        }
        // Half precision: the bits of one or two lanes, added by a compare-and-swap
        // loop (on the containing 32-bit word for one 16-bit lane).
        let half = super::formats::half_type(m)
            .filter(|(f, _)| matches!(f, FloatFormat::F16 | FloatFormat::Bf16));
        let ty = match half {
            Some((fmt, lanes)) => {
                if kind != Some(Kind::Native(AtomicOp::Add)) || !has(m, ".noftz") {
                    return Err(super::unsupported(
                        span,
                        "half-precision atomics other than `.add.noftz`",
                        "only the scalar `.add.noftz` forms are implemented",
                    ));
                }
                kind = Some(Kind::HalfAdd(fmt, lanes));
                OpTy::U((16 * lanes) as u8)
            }
            None => self.one_type(i, m)?,
        };
        let Some(mut kind) = kind else {
            return Err(Diagnostic::error(
                span,
                format!("`{opname}` needs an operation such as `.add`"),
            ));
        };
        if kind == Kind::Native(AtomicOp::Cas) && ty.bits() == 16 {
            kind = Kind::Cas16;
        }
        if ty.is_float() {
            if kind != Kind::Native(AtomicOp::Add) {
                return Err(Diagnostic::error(span, format!("`{opname}` on floats takes `.add`")));
            }
            kind = Kind::FloatAdd;
        }
        if matches!(kind, Kind::Inc | Kind::Dec) && ty != OpTy::U(32) {
            return Err(Diagnostic::error(span, format!("`{opname}.inc`/`.dec` take `.u32`")));
        }
        let sub_word = matches!(kind, Kind::HalfAdd(_, 1) | Kind::Cas16);
        if !(matches!(ty.bits(), 32 | 64) || sub_word) {
            return Err(super::unsupported(
                span,
                &format!("{}-bit atomics", ty.bits()),
                "only 32- and 64-bit atomics are implemented",
            ));
        }
        // A generic atomic in a kernel with generic shared/local addresses: direct when
        // the inference proves the space (`sema::spaces`), else a run-time test of the
        // address's window (`Lowerer::dispatch_generic`).
        let mut generic_shared = false;
        let mut dispatch = false;
        if m.space.is_none() && self.generic_windows {
            match i.operands.get(usize::from(!red)).map(|a| self.generic_provenance(a)) {
                Some(super::spaces::Provenance::Shared) => generic_shared = true,
                Some(super::spaces::Provenance::Global | super::spaces::Provenance::Plain) => {}
                _ => dispatch = true,
            }
        }
        let space = match m.space.as_ref().map(|s| s.value) {
            // Without a space the address is generic, which is global memory for now.
            None | Some(StateSpace::Global) => StateSpace::Global,
            Some(StateSpace::Shared) => StateSpace::Shared,
            Some(other) => {
                return Err(Diagnostic::error(
                    m.space.as_ref().map_or(span, |s| s.span),
                    format!("atomics are not allowed on `{}`", other.directive()),
                ))
            }
        };
        let ops = i.operands.as_slice();
        let cas = matches!(kind, Kind::Native(AtomicOp::Cas) | Kind::Cas16);
        let (dst_op, addr_op, rest) = if red {
            match ops {
                [a, rest @ ..] => (None, a, rest),
                [] => return Err(Diagnostic::error(span, "`red` takes an address and a value")),
            }
        } else {
            match ops {
                [d, a, rest @ ..] => (Some(d), a, rest),
                _ => {
                    return Err(Diagnostic::error(
                        span,
                        "`atom` takes a destination, an address and a value",
                    ))
                }
            }
        };
        let want = if cas { 2 } else { 1 };
        // A trailing cache-policy operand is allowed with `.L2::cache_hint`.
        let hinted = m.other.iter().any(|o| o.value.starts_with(".L2::"));
        if !(rest.len() == want || (hinted && rest.len() == want + 1)) {
            return Err(Diagnostic::error(
                span,
                format!("`{opname}` takes {want} value operand(s)"),
            ));
        }
        let bits_ty = ty.as_unsigned();
        let (ir_space, addr) = self.address(addr_op, space)?;
        let (ir_space, addr) = if generic_shared {
            (Space::Shared, self.window_offset(addr, span))
        } else {
            (ir_space, addr)
        };
        let wide_window = self.kernel.shared.wide;
        if ir_space == Space::Shared && ty.bits() == 64 && !wide_window {
            return Err(Diagnostic::internal(
                span,
                "a 64-bit shared atomic in a kernel without a 64-bit window",
            ));
        }
        if ir_space == Space::Param {
            return Err(Diagnostic::error(span, "kernel parameters are read-only"));
        }
        let dst = match dst_op {
            Some(Operand::Sink(_)) | None => None,
            Some(d) => Some(self.dst(d, ty, false)?),
        };
        let src = self.src(&rest[0], ty, false, span)?;
        let cmp = if cas { self.src(&rest[1], ty, false, span)? } else { Value::Imm(0) };
        let (src, cmp) = if cas { (cmp, src) } else { (src, cmp) };
        let emit = Emission { kind, ty, bits_ty, scope, order, dst, src, cmp, m, span };
        if !dispatch {
            return self.emit_atomic(&Placed { e: &emit, space: ir_space, addr });
        }
        // PTX ISA 9.2 §9.7.13.4: a generic `atom` must address global or shared memory;
        // on local memory it is undefined, and ends the launch as `trap` does.
        self.dispatch_generic(addr, span, |l, space, at| {
            if space == Space::Local {
                l.trap(span);
                return Ok(());
            }
            l.emit_atomic(&Placed { e: &emit, space, addr: at })
        })
    }

    /// The instructions of one atomic in one space.
    fn emit_atomic(&mut self, a: &Placed<'_>) -> Result<(), Diagnostic> {
        let Placed { e, space: ir_space, addr } = *a;
        let Emission { kind, ty, bits_ty, scope, order, dst, src, cmp, m, span } = *e;
        // A window of 64-bit words has 64-bit atomics only: narrower ones become
        // compare-and-swap loops on the containing word.
        let narrow_on_wide = ir_space == Space::Shared && self.kernel.shared.wide && ty.bits() < 64;
        let op = match kind {
            Kind::Native(op) if !narrow_on_wide => {
                // `cas(r, s, t)`: b is the comparand and c the new value.
                self.push(
                    InstKind::Atomic { op, space: ir_space, ty, scope, order, dst, addr, src, cmp },
                    span,
                );
                return Ok(());
            }
            other => other,
        };
        let ftz = ty == OpTy::F(32) && ir_space == Space::Global && !has(m, ".noftz");
        let at = CasLoop { space: ir_space, ty, scope, order, addr, span };
        let update = |e: &mut Emit<'_, '_>, old: Value| -> Value {
            match op {
                Kind::Inc => {
                    let wraps = e.cmp(CmpOp::Ge, bits_ty, old, src);
                    let next = e.add(bits_ty, old, Value::Imm(1));
                    e.sel(bits_ty, wraps, Value::Imm(0), next)
                }
                Kind::Dec => {
                    let zero = e.cmp(CmpOp::Eq, bits_ty, old, Value::Imm(0));
                    let above = e.cmp(CmpOp::Gt, bits_ty, old, src);
                    let reset = e.pred_or(zero, above);
                    let prev = e.bin(BinaryOp::Sub, bits_ty, old, Value::Imm(1));
                    e.sel(bits_ty, reset, src, prev)
                }
                Kind::Cas16 | Kind::Native(AtomicOp::Cas) => {
                    let equal = e.cmp(CmpOp::Eq, bits_ty, old, cmp);
                    e.sel(bits_ty, equal, src, old)
                }
                Kind::Native(AtomicOp::Exch | AtomicOp::Store) => src,
                Kind::Native(AtomicOp::Load) => old,
                Kind::Native(op) => {
                    let binary = match op {
                        AtomicOp::Add => BinaryOp::Add,
                        AtomicOp::And => BinaryOp::And,
                        AtomicOp::Or => BinaryOp::Or,
                        AtomicOp::Xor => BinaryOp::Xor,
                        AtomicOp::Min => BinaryOp::Min,
                        // `Max`; the others are handled above.
                        _ => BinaryOp::Max,
                    };
                    // `ty` keeps the signedness `.min`/`.max` compare with.
                    e.bin(binary, ty, old, src)
                }
                Kind::HalfAdd(fmt, lanes) => {
                    let sums = (0..lanes)
                        .map(|k| {
                            let a = e.lane(old, lanes, k);
                            let b = e.lane(src, lanes, k);
                            e.half_add(fmt, a, b)
                        })
                        .collect();
                    e.pack(16, sums)
                }
                // atom.add.f32 on global memory flushes subnormal inputs and results
                // (§9.7.13.5, "current implementation"); on shared memory it does not.
                _ => {
                    let t = e.temp(ty);
                    let mode = FloatMode { ftz, ..FloatMode::default() };
                    e.push(InstKind::Binary {
                        op: BinaryOp::Add,
                        ty,
                        mode,
                        dst: t,
                        lhs: old,
                        rhs: src,
                    });
                    Value::Reg(t)
                }
            }
        };
        let result = self.cas_loop(&at, update);
        if let Some(d) = dst {
            self.push(InstKind::Mov { ty: bits_ty, dst: d, src: result }, span);
        }
        Ok(())
    }
}

impl Lowerer<'_> {
    /// A strong store of fewer than 64 bits into a wide shared window: a
    /// compare-and-swap loop on the containing word, so that no observer sees the other
    /// bytes of the word, or this element, change but to their written values.
    pub(super) fn store_in_wide_word(
        &mut self,
        ty: OpTy,
        order: Order,
        scope: Scope,
        addr: Address,
        src: Value,
        span: Span,
    ) {
        let at = CasLoop { space: Space::Shared, ty, scope, order, addr, span };
        self.cas_loop(&at, |_, _| src);
    }
}

/// An atomic's operation and operands, before its space is known.
#[derive(Clone, Copy)]
struct Emission<'m> {
    kind: Kind,
    ty: OpTy,
    bits_ty: OpTy,
    scope: Scope,
    order: Order,
    dst: Option<crate::ir::RegId>,
    src: Value,
    cmp: Value,
    m: &'m Mods,
    span: Span,
}

/// An [`Emission`] at an address of one space.
#[derive(Clone, Copy)]
struct Placed<'a> {
    e: &'a Emission<'a>,
    space: Space,
    addr: Address,
}

/// Where a compare-and-swap loop works: an element of `ty` at `addr`.
struct CasLoop {
    space: Space,
    ty: OpTy,
    scope: Scope,
    order: Order,
    addr: Address,
    span: Span,
}

impl Lowerer<'_> {
    /// `old = *a; loop { new = update(old); seen = cas(a, old, new); if seen == old
    /// break; old = seen }`, returning the old element. An element narrower than the
    /// word the space has atomics for (32 bits; 64 in a wide shared window) is swapped
    /// as its aligned containing word, the rest of the word kept.
    fn cas_loop(
        &mut self,
        at: &CasLoop,
        update: impl FnOnce(&mut Emit<'_, '_>, Value) -> Value,
    ) -> Value {
        let span = at.span;
        let bits = at.ty.as_unsigned();
        let u32t = OpTy::U(32);
        let word_bits = if at.space == Space::Shared && self.kernel.shared.wide {
            64
        } else {
            bits.bits().max(32)
        };
        let word_ty = OpTy::U(word_bits as u8);
        let mut e = Emit { l: self, span };
        // The word and, for a narrower element, the bit position of the element in it.
        let (addr, shift) = if bits.bits() < word_bits {
            // The address at its register's width: shared addresses may be held in
            // 64-bit registers (clang, NVRTC) or 32-bit ones (nvcc).
            let wide_base = at.addr.base.is_some_and(|r| e.l.kernel.reg(r).ty.bits() == 64);
            let aty = if at.space == Space::Global || wide_base { OpTy::U(64) } else { u32t };
            let base = at.addr.base.map_or(Value::Imm(0), Value::Reg);
            let full = e.add(aty, base, Value::Imm(at.addr.offset as u64));
            let (word_bytes, elem_bytes) = (u64::from(word_bits / 8), u64::from(bits.bits() / 8));
            let word = e.and(aty, full, Value::Imm(!(word_bytes - 1)));
            let word_reg = e.temp(aty);
            e.mov(aty, word_reg, word);
            let low = e.cvt(u32t, aty, full);
            let lane = e.and(u32t, low, Value::Imm(word_bytes - elem_bytes));
            let shift = e.bin(BinaryOp::Shl, u32t, lane, Value::Imm(3));
            (Address { base: Some(word_reg), offset: 0 }, Some(shift))
        } else {
            (at.addr, None)
        };
        let old = e.temp(word_ty);
        e.push(InstKind::Load { space: at.space, ty: word_ty, dsts: vec![Some(old)], addr });
        let body = self.new_block(None, span);
        let done = self.new_block(None, span);
        self.terminate(Terminator::Jump(body), span);
        self.cur = body;
        self.closed = false;
        let mut e = Emit { l: self, span };
        let old_word = Value::Reg(old);
        let old_elem = match shift {
            Some(sh) => {
                let moved = e.bin(BinaryOp::Shr, word_ty, old_word, sh);
                e.cvt(bits, word_ty, moved)
            }
            None => old_word,
        };
        let new_elem = update(&mut e, old_elem);
        let new_word = match shift {
            Some(sh) => {
                let ones = Value::Imm(u64::MAX >> (64 - bits.bits()));
                let mask = e.bin(BinaryOp::Shl, word_ty, ones, sh);
                let keep = e.not(word_ty, mask);
                let kept = e.and(word_ty, old_word, keep);
                let widened = e.cvt(word_ty, bits, new_elem);
                let placed = e.bin(BinaryOp::Shl, word_ty, widened, sh);
                e.or(word_ty, kept, placed)
            }
            None => new_elem,
        };
        let seen = e.temp(word_ty);
        e.push(InstKind::Atomic {
            op: AtomicOp::Cas,
            space: at.space,
            ty: word_ty,
            scope: at.scope,
            order: at.order,
            dst: Some(seen),
            addr,
            src: new_word,
            cmp: old_word,
        });
        let ok = e.cmp(CmpOp::Eq, word_ty, Value::Reg(seen), old_word);
        let result = e.temp(bits);
        e.mov(bits, result, old_elem);
        e.mov(word_ty, old, Value::Reg(seen));
        self.terminate(
            Terminator::Branch { cond: ok, negate: false, if_true: done, if_false: body },
            span,
        );
        self.cur = done;
        self.closed = false;
        Value::Reg(result)
    }
}
