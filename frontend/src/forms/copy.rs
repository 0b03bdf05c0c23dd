//! The forms of the asynchronous copies and of mbarrier objects that ptxvk implements,
//! [`super::Check::Copy`] and [`super::Check::Mbarrier`]: which modifiers each `cp`
//! form combines and how many operands it takes ([`copy_form`], PTX ISA 9.2
//! §9.7.9.25.3-5), and the operand counts and state space of each `mbarrier` form
//! ([`mbarrier_form`], §9.7.13.15). Semantic analysis reads the form through the same
//! functions, which cannot fail on a checked instruction, and only resolves operands.

use crate::ast::{Instruction, Operand, ScalarType, StateSpace};
use crate::diagnostic::Diagnostic;
use crate::modifier::{
    CacheHint, CacheOp, CopyForm, CopySpace, MbarrierForm as F, Modifier, TensorDims,
};
use crate::span::{Span, Spanned};

/// Why a copy form is not implemented (the note of its diagnostic, and of the coverage
/// table's unsupported rows).
pub const NOT_IMPLEMENTED: &str = "not implemented yet: im2col tensor copies and bulk \
     reductions (`cp.async`, mbarrier objects, bulk copies and tiled tensor copies are)";

const ASYNC: Modifier = Modifier::CopyForm(CopyForm::Async);
const BULK: Modifier = Modifier::CopyForm(CopyForm::Bulk);
const TENSOR: Modifier = Modifier::CopyForm(CopyForm::Tensor);
const COMMIT_GROUP: Modifier = Modifier::CopyForm(CopyForm::CommitGroup);
const WAIT_ALL: Modifier = Modifier::CopyForm(CopyForm::WaitAll);
const WAIT_GROUP: Modifier = Modifier::CopyForm(CopyForm::WaitGroup);
const READ: Modifier = Modifier::CopyForm(CopyForm::Read);
const PREFETCH: Modifier = Modifier::CopyForm(CopyForm::Prefetch);
const L2: Modifier = Modifier::CopyForm(CopyForm::L2);
const MBARRIER: Modifier = Modifier::CopyForm(CopyForm::Mbarrier);
const ARRIVE: Modifier = Modifier::CopyForm(CopyForm::Arrive);
const GLOBAL: Modifier = Modifier::CopySpace(CopySpace::Global);
const CACHE_HINT: Modifier = Modifier::CacheHint(CacheHint::L2CacheHint);
const COMPLETE_TX: Modifier = Modifier::CopyForm(CopyForm::CompleteTxBytes);
const BULK_GROUP: Modifier = Modifier::CopyForm(CopyForm::BulkGroup);
const MULTICAST: Modifier = Modifier::CopyForm(CopyForm::MulticastCluster);

/// A `cp` form, with what semantic analysis needs to resolve its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyShape {
    /// Committing or waiting on a group, or `cp.async.bulk.prefetch.L2`: no operation
    /// (copies are performed when issued).
    Nothing,
    /// `cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr]` (§9.7.9.25.3.4):
    /// whether the address is in an explicit `.shared` space, and `.noinc`.
    Arrive { shared: bool, noinc: bool },
    /// `cp.async.ca|cg.shared{::cta}.global{.L2::cache_hint}{.L2::prefetch_size} [dst],
    /// [src], cp-size{, src-size | ignore-src}{, cache-policy}` (§9.7.9.25.3): the
    /// constant `cp-size`, and whether operand 3 is a `src-size` or `ignore-src`.
    Async { size: u32, read: bool },
    /// `cp.async.bulk.dst.src.completion [dst], [src], size{, [mbar]}{, ctaMask}{,
    /// cache-policy}` (§9.7.9.25.4): whether the destination and the source are in
    /// shared memory, whether the copy completes on an mbarrier (operand 3) and
    /// multicasts (operand 4, its mask).
    Bulk { to_shared: bool, from_shared: bool, mbarrier: bool, multicast: bool },
    /// `cp.async.bulk.tensor.Nd…` in `.tile` mode (§9.7.9.25.5): its rank, whether it
    /// loads (into shared memory, completing on the mbarrier of operand 2) and
    /// multicasts (operand 3, its mask).
    Tensor { rank: usize, load: bool, multicast: bool },
}

/// The modifiers of `i` as written (`.async.bulk.…`), for messages.
fn spelled(i: &Instruction) -> String {
    i.modifiers.iter().map(|m| m.value.as_str()).collect()
}

fn unsupported(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(span, format!("`{what}` is not supported yet"))
        .with_note(NOT_IMPLEMENTED.to_string())
}

/// An error unless `i` has `count` operands (`what` names the form).
fn operand_count(i: &Instruction, count: usize, what: String) -> Result<(), Diagnostic> {
    if i.operands.len() == count {
        return Ok(());
    }
    Err(Diagnostic::error(i.span, what))
}

/// The form of `cp` instruction `i`, whose decoded modifiers are `details` and first
/// type `ty`; a diagnostic for a form ptxvk does not implement.
pub fn copy_form(
    i: &Instruction,
    details: &[Spanned<Modifier>],
    ty: Option<&Spanned<ScalarType>>,
) -> Result<CopyShape, Diagnostic> {
    let names: Vec<Modifier> = details.iter().map(|d| d.value).collect();
    let spelled = spelled(i);
    let groups = |n| format!("`cp{spelled}` takes {n} operand(s) (PTX ISA 9.2 §9.7.9.25.3)");
    match names.as_slice() {
        // Of these forms only `cp.async.mbarrier.arrive` has a type (`.b64`): `cp.async`
        // and its groups (§9.7.9.25.3), bulk copies (§9.7.9.25.4) and tensor copies
        // (§9.7.9.25.5) none.
        [ASYNC, ..] if ty.is_some() && !names.contains(&MBARRIER) => {
            let section = match names.as_slice() {
                [ASYNC, BULK, TENSOR, ..] => "§9.7.9.25.5",
                [ASYNC, BULK, ..] => "§9.7.9.25.4",
                _ => "§9.7.9.25.3",
            };
            let t = ty.map_or(i.span, |t| t.span);
            // The form as written, without the type.
            let form: String =
                i.modifiers.iter().filter(|m| m.span != t).map(|m| m.value.as_str()).collect();
            let msg = format!("`cp{form}` takes no type (PTX ISA 9.2 {section})");
            Err(Diagnostic::error(t, msg))
        }
        // §9.7.9.25.3: `cp.async.commit_group`, `cp.async.wait_group N`,
        // `cp.async.wait_all`.
        [ASYNC, COMMIT_GROUP] | [ASYNC, WAIT_ALL] => {
            operand_count(i, 0, groups(0))?;
            Ok(CopyShape::Nothing)
        }
        [ASYNC, WAIT_GROUP] => {
            operand_count(i, 1, groups(1))?;
            Ok(CopyShape::Nothing)
        }
        [ASYNC, MBARRIER, ARRIVE, ..] => {
            // §9.7.9.25.3.4: the type is `.b64` (ptxas 13 also takes `.u64` and none,
            // and refuses every other with "Unexpected instruction types").
            if let Some(t) = ty.filter(|t| !matches!(t.value, ScalarType::B64 | ScalarType::U64)) {
                let msg = "`cp.async.mbarrier.arrive` takes the type `.b64` (PTX ISA 9.2 \
                           §9.7.9.25.3.4)";
                return Err(Diagnostic::error(t.span, msg));
            }
            // §9.7.9.25.3.4: `[addr]`, in `.shared{::cta}` or generic.
            if i.operands.len() != 1 {
                let msg = "`cp.async.mbarrier.arrive` takes [addr] (PTX ISA 9.2 §9.7.9.25.3.4)";
                return Err(Diagnostic::error(i.span, msg));
            }
            let shared = details.iter().any(|d| {
                matches!(
                    d.value,
                    Modifier::CopySpace(
                        CopySpace::Shared | CopySpace::SharedCta | CopySpace::SharedCluster
                    )
                )
            });
            Ok(CopyShape::Arrive {
                shared,
                noinc: names.contains(&Modifier::CopyForm(CopyForm::NoInc)),
            })
        }
        [ASYNC, BULK, TENSOR, ..] => tensor_form(i, &names, &spelled),
        [ASYNC, BULK, ..] => bulk_form(i, &names, &spelled),
        [ASYNC, ..] => async_form(i, details, &spelled),
        _ => Err(unsupported(i.span, &format!("cp{spelled}"))),
    }
}

/// `cp.async` (§9.7.9.25.3): `.ca` or `.cg`, from `.global` to `.shared{::cta}`, an
/// optional `.L2::cache_hint` (a cache-policy operand) and `.L2::` prefetch size; no type
/// ([`copy_form`] refuses one).
fn async_form(
    i: &Instruction,
    details: &[Spanned<Modifier>],
    spelled: &str,
) -> Result<CopyShape, Diagnostic> {
    let span = i.span;
    let mut cache = None;
    let mut spaces = Vec::new();
    let mut hinted = false;
    for d in &details[1..] {
        match d.value {
            Modifier::CacheOp(c @ (CacheOp::Ca | CacheOp::Cg)) if cache.is_none() => {
                cache = Some(c)
            }
            Modifier::CopySpace(CopySpace::Shared | CopySpace::SharedCta) => spaces.push(true),
            Modifier::CopySpace(CopySpace::Global) => spaces.push(false),
            CACHE_HINT => hinted = true,
            Modifier::CacheHint(
                CacheHint::L2Prefetch64B | CacheHint::L2Prefetch128B | CacheHint::L2Prefetch256B,
            ) => {}
            other => return Err(unsupported(span, &format!("cp.async with `{other}`"))),
        }
    }
    let Some(cache) = cache else {
        return Err(unsupported(span, &format!("cp{spelled}")));
    };
    // The destination in shared memory, the source global.
    if spaces != [true, false] {
        return Err(Diagnostic::error(
            span,
            "`cp.async` copies from `.global` to `.shared` (`cp.async.ca.shared.global`, PTX ISA \
             9.2 §9.7.9.25.3)",
        ));
    }
    let ops = &i.operands[..i.operands.len() - usize::from(hinted && !i.operands.is_empty())];
    let [_, _, size, rest @ ..] = ops else {
        return Err(async_operands(span));
    };
    if rest.len() > 1 {
        return Err(async_operands(span));
    }
    // `cp-size` is 4, 8 or 16, and 16 with `.cg`.
    let size = match size {
        Operand::Imm(e) => e.eval_int().ok().map(|c| c.value),
        _ => None,
    };
    let size = match size {
        Some(n @ (4 | 8 | 16)) if cache == CacheOp::Ca || n == 16 => n as u32,
        _ => {
            let msg = "cp-size is 4, 8 or 16 (`.cg`: 16), a constant (PTX ISA 9.2 §9.7.9.25.3)";
            return Err(Diagnostic::error(ops[2].span(), msg));
        }
    };
    Ok(CopyShape::Async { size, read: rest.len() == 1 })
}

fn async_operands(span: Span) -> Diagnostic {
    Diagnostic::error(
        span,
        "`cp.async` takes [dst], [src], cp-size and an optional src-size or ignore-src \
         predicate (PTX ISA 9.2 §9.7.9.25.3)",
    )
}

/// Whether a `cp` state space is shared memory; `None` for other modifiers.
fn copy_space(d: Modifier) -> Option<bool> {
    match d {
        Modifier::CopySpace(s) => Some(s != CopySpace::Global),
        _ => None,
    }
}

/// `cp.async.bulk` (§9.7.9.25.4): the bulk groups, `prefetch.L2`, and the copies from
/// `.global` to `.shared::cluster` or between shared memories on an mbarrier, from
/// `.shared::cta` to `.global` in a bulk group.
fn bulk_form(i: &Instruction, names: &[Modifier], spelled: &str) -> Result<CopyShape, Diagnostic> {
    let span = i.span;
    let n_ops = i.operands.len();
    let groups = |n| format!("`cp{spelled}` takes {n} operand(s) (PTX ISA 9.2 §9.7.9.25.4)");
    match names {
        [ASYNC, BULK, COMMIT_GROUP] => {
            operand_count(i, 0, groups(0))?;
            return Ok(CopyShape::Nothing);
        }
        [ASYNC, BULK, WAIT_GROUP] | [ASYNC, BULK, WAIT_GROUP, READ] => {
            operand_count(i, 1, groups(1))?;
            return Ok(CopyShape::Nothing);
        }
        [ASYNC, BULK, PREFETCH, L2, GLOBAL, rest @ ..] => {
            // `[src], size {, cache-policy}` (§9.7.9.25.4).
            if rest.iter().any(|r| *r != CACHE_HINT) || !(2..=3).contains(&n_ops) {
                return Err(unsupported(span, &format!("cp{spelled}")));
            }
            return Ok(CopyShape::Nothing);
        }
        _ => {}
    }
    let (mut to, mut from) = (None, None);
    let (mut mbarrier, mut multicast, mut hinted) = (false, false, false);
    for n in &names[2..] {
        match (copy_space(*n), *n) {
            (Some(s), _) if to.is_none() => to = Some(s),
            (Some(s), _) if from.is_none() => from = Some(s),
            (None, COMPLETE_TX) => mbarrier = true,
            (None, BULK_GROUP) => {}
            (None, MULTICAST) => multicast = true,
            (None, CACHE_HINT) => hinted = true,
            _ => return Err(unsupported(span, &format!("cp.async.bulk with `{n}`"))),
        }
    }
    let (Some(to_shared), Some(from_shared)) = (to, from) else {
        return Err(Diagnostic::error(
            span,
            "`cp.async.bulk` names a destination and a source state space (PTX ISA 9.2 §9.7.9.25.4)",
        ));
    };
    // Copies into shared memory complete on an mbarrier, copies out of it in bulk groups.
    if to_shared != mbarrier || (!to_shared && !from_shared) {
        return Err(Diagnostic::error(
            span,
            "`cp.async.bulk` copies into `.shared` on an mbarrier \
             (`.mbarrier::complete_tx::bytes`) or from `.shared::cta` to `.global` in a \
             bulk group (`.bulk_group`, PTX ISA 9.2 §9.7.9.25.4)",
        ));
    }
    // Only the copy from `.global` into `.shared::cluster` multicasts (its `ctaMask`
    // follows the mbarrier operand).
    if multicast && !mbarrier {
        return Err(Diagnostic::error(
            span,
            "`cp.async.bulk` multicasts (`.multicast::cluster`) only into `.shared::cluster` \
             on an mbarrier (PTX ISA 9.2 §9.7.9.25.4)",
        ));
    }
    let expected = 3 + usize::from(mbarrier) + usize::from(multicast) + usize::from(hinted);
    let msg =
        format!("`cp{spelled}` takes {expected} operands, found {n_ops} (PTX ISA 9.2 §9.7.9.25.4)");
    operand_count(i, expected, msg)?;
    Ok(CopyShape::Bulk { to_shared, from_shared, mbarrier, multicast })
}

/// `cp.async.bulk.tensor` (§9.7.9.25.5) in `.tile` mode, 1-D to 5-D: a load from
/// `.global` to `.shared::cluster` on an mbarrier, or a store from `.shared::cta` to
/// `.global` in a bulk group; `[tensorMap, {coordinates}]` with one coordinate a
/// dimension ([`tensor_operand`]).
fn tensor_form(
    i: &Instruction,
    names: &[Modifier],
    spelled: &str,
) -> Result<CopyShape, Diagnostic> {
    let span = i.span;
    let rank = match names.get(3) {
        Some(Modifier::TensorDims(d)) => match d {
            TensorDims::D1 => 1,
            TensorDims::D2 => 2,
            TensorDims::D3 => 3,
            TensorDims::D4 => 4,
            TensorDims::D5 => 5,
        },
        _ => {
            let msg =
                "`cp.async.bulk.tensor` names its rank, `.1d` to `.5d` (PTX ISA 9.2 §9.7.9.25.5)";
            return Err(Diagnostic::error(span, msg));
        }
    };
    let mut spaces = Vec::new();
    let (mut mbarrier, mut bulk_group, mut multicast, mut hinted) = (false, false, false, false);
    for n in &names[4..] {
        if let Some(shared) = copy_space(*n) {
            spaces.push(shared);
            continue;
        }
        match *n {
            Modifier::CopyForm(CopyForm::Tile) => {}
            COMPLETE_TX => mbarrier = true,
            BULK_GROUP => bulk_group = true,
            MULTICAST => multicast = true,
            CACHE_HINT => hinted = true,
            other => {
                return Err(unsupported(span, &format!("cp.async.bulk.tensor with `{other}`")))
            }
        }
    }
    let load = match spaces.as_slice() {
        [true, false] if mbarrier && !bulk_group => true,
        [false, true] if bulk_group && !mbarrier && !multicast => false,
        _ => {
            return Err(Diagnostic::error(
                span,
                "`cp.async.bulk.tensor` loads `.shared::cluster.global` on an mbarrier or \
                 stores `.global.shared::cta` in a bulk group (PTX ISA 9.2 §9.7.9.25.5)",
            ))
        }
    };
    let ops = i.operands.as_slice();
    let expected = 2 + usize::from(load) + usize::from(multicast) + usize::from(hinted);
    let found = ops.len();
    let msg =
        format!("`cp{spelled}` takes {expected} operands, found {found} (PTX ISA 9.2 §9.7.9.25.5)");
    operand_count(i, expected, msg)?;
    let tensor = if load { &ops[1] } else { &ops[0] };
    let (_, coordinates) = tensor_operand(tensor)?;
    if coordinates.len() != rank {
        let msg = format!("a {rank}-D copy takes {rank} coordinates (PTX ISA 9.2 §9.7.9.25.5)");
        return Err(Diagnostic::error(tensor.span(), msg));
    }
    Ok(CopyShape::Tensor { rank, load, multicast })
}

/// The tensor map and the coordinates of a tensor copy's `[tensorMap, {coordinates}]`.
pub fn tensor_operand(op: &Operand) -> Result<(&Operand, &[Operand]), Diagnostic> {
    match op {
        Operand::Tuple(parts, _) => match parts.as_slice() {
            [map, Operand::Vector(coordinates, _)] => Ok((map, coordinates)),
            _ => Err(Diagnostic::error(op.span(), "expected `[tensorMap, {coordinates}]`")),
        },
        _ => Err(Diagnostic::error(op.span(), "expected `[tensorMap, {coordinates}]`")),
    }
}

/// An `mbarrier` form (§9.7.13.15), by its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MbarrierShape {
    /// `.pending_count d, state`.
    PendingCount,
    /// `.init [addr], count`.
    Init,
    /// `.inval [addr]`.
    Inval,
    /// `.test_wait`/`.try_wait{.parity} p, [addr], state-or-parity{, suspend-hint}`.
    Wait { try_wait: bool, parity: bool },
    /// `.expect_tx`/`.complete_tx [addr], tx-count`.
    Tx { complete: bool },
    /// `.arrive{_drop}.expect_tx`/`.complete_tx state, [addr], tx-count`.
    ArriveTx { complete: bool, drop: bool },
    /// `.arrive{_drop}{.noComplete} state, [addr]{, count}`.
    Arrive { drop: bool, no_complete: bool },
}

/// The form of `mbarrier` instruction `i`, whose decoded modifiers are `details` and
/// state space `space`: its operand counts, and its object in `.shared` (`::cta`,
/// `::cluster`) or generic memory.
pub fn mbarrier_form(
    i: &Instruction,
    details: &[Spanned<Modifier>],
    space: Option<&Spanned<StateSpace>>,
) -> Result<MbarrierShape, Diagnostic> {
    let form = |f: F| details.iter().any(|d| d.value == Modifier::MbarrierForm(f));
    let arity = |n: &[usize], what: &str| -> Result<(), Diagnostic> {
        match n.contains(&i.operands.len()) {
            true => Ok(()),
            false => Err(Diagnostic::error(
                i.span,
                format!("`mbarrier` {what} (PTX ISA 9.2 §9.7.13.15)"),
            )),
        }
    };
    if form(F::PendingCount) {
        arity(&[2], "`.pending_count` takes a destination and a state")?;
        return Ok(MbarrierShape::PendingCount);
    }
    let (arrive, drop) = (form(F::Arrive) || form(F::ArriveDrop), form(F::ArriveDrop));
    let shape = if form(F::Init) {
        arity(&[2], "`.init` takes [addr] and a count")?;
        MbarrierShape::Init
    } else if form(F::Inval) {
        arity(&[1], "`.inval` takes [addr]")?;
        MbarrierShape::Inval
    } else if form(F::TestWait) || form(F::TryWait) {
        // An optional suspend-time hint follows the state (`try_wait`).
        arity(
            &[3, 4],
            "waits take a predicate, [addr], a state or parity, and an optional time hint",
        )?;
        MbarrierShape::Wait { try_wait: form(F::TryWait), parity: form(F::Parity) }
    } else if form(F::ExpectTx) || form(F::CompleteTx) {
        let complete = form(F::CompleteTx);
        if arrive {
            arity(&[3], "`.arrive.expect_tx` takes a state, [addr] and a tx-count")?;
            MbarrierShape::ArriveTx { complete, drop }
        } else {
            arity(&[2], "`.expect_tx`/`.complete_tx` take [addr] and a tx-count")?;
            MbarrierShape::Tx { complete }
        }
    } else if arrive {
        arity(&[2, 3], "`.arrive` takes a state, [addr] and an optional count")?;
        MbarrierShape::Arrive { drop, no_complete: form(F::NoComplete) }
    } else {
        return Err(Diagnostic::error(
            i.span,
            "`mbarrier` takes `.init`, `.inval`, `.arrive`, `.arrive_drop`, `.expect_tx`, \
             `.complete_tx`, `.test_wait`, `.try_wait` or `.pending_count` (PTX ISA 9.2 §9.7.13.15)",
        ));
    };
    // The object is in `.shared` memory (a generic address must point there).
    if let Some(s) = space.filter(|s| s.value != StateSpace::Shared) {
        let msg = format!(
            "an mbarrier is in `.shared` memory, not `{}` (PTX ISA 9.2 §9.7.13.15)",
            s.value.directive()
        );
        return Err(Diagnostic::error(s.span, msg));
    }
    Ok(shape)
}
