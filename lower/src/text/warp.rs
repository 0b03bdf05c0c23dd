//! The warp collectives ([`InstKind::Warp`]) in the IR text format, spelled as in PTX,
//! `.sync` and the member mask last when the instruction has one:
//!
//! ```text
//! %r1, %p1 = shfl.sync.up %r2, %r3, %r4, %r9   ; d|p, a, b, c, membermask
//! %r1 = shfl.bfly %r2, 1, 0x1f                 ; the deprecated form: no mask
//! %p1 = vote.sync.all !%p2, %r9
//! %r1 = vote.ballot %p2
//! %r1, %p1 = match.sync.all.b64 %rd1, %r9
//! %r1 = redux.sync.min.s32 %r2, %r9
//! %r1 = redux.sync.max.abs.nan.f32 %r2, %r9
//! %r1 = activemask
//! _, %p1 = elect.sync %r9
//! bar.warp.sync %r9
//! %r1 = bar.red.popc !%p1, 16                  ; bar.red: the scratch word's offset
//! %p2 = bar.red.and %p1, 16
//! ```

use ptxvk_frontend::Diagnostic;

use super::video::{take_flag, Line};
use super::{op_ty, parse_op_ty, Spelled};
use crate::ir::*;

impl Spelled for ShuffleMode {
    const TABLE: &'static [(Self, &'static str)] = &[
        (ShuffleMode::Up, "up"),
        (ShuffleMode::Down, "down"),
        (ShuffleMode::Bfly, "bfly"),
        (ShuffleMode::Idx, "idx"),
    ];
}

impl Spelled for VoteMode {
    const TABLE: &'static [(Self, &'static str)] = &[
        (VoteMode::All, "all"),
        (VoteMode::Any, "any"),
        (VoteMode::Uni, "uni"),
        (VoteMode::Ballot, "ballot"),
    ];
}

impl Spelled for WarpReduction {
    const TABLE: &'static [(Self, &'static str)] = &[
        (WarpReduction::Add, "add"),
        (WarpReduction::Min, "min"),
        (WarpReduction::Max, "max"),
        (WarpReduction::And, "and"),
        (WarpReduction::Or, "or"),
        (WarpReduction::Xor, "xor"),
    ];
}

/// The first word of `words` in `table`, taken out of it.
fn take(words: &mut Vec<&str>, table: &[&str]) -> Option<String> {
    let at = words.iter().position(|w| table.contains(w))?;
    Some(words.remove(at).to_string())
}

/// A warp collective's line.
pub(super) fn print(
    w: &WarpInst,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    let sync = if w.members.is_some() { ".sync" } else { "" };
    let mask = w.members.map_or(String::new(), |m| format!(", {}", value(m)));
    let pair = |d: RegId, p: Option<RegId>| match p {
        Some(p) => format!("{}, {}", reg(d), reg(p)),
        None => reg(d),
    };
    match &w.op {
        WarpOp::Shuffle { mode, dst, pred, value: a, lane, clamp } => format!(
            "{} = shfl{sync}.{} {}, {}, {}{mask}",
            pair(*dst, *pred),
            mode.spelling(),
            value(*a),
            value(*lane),
            value(*clamp)
        ),
        WarpOp::Vote { mode, dst, src, negate } => {
            let not = if *negate { "!" } else { "" };
            format!("{} = vote{sync}.{} {not}{}{mask}", reg(*dst), mode.spelling(), reg(*src))
        }
        WarpOp::Match { all, wide, dst, pred, value: a } => format!(
            "{} = match{sync}.{}.b{} {}{mask}",
            pair(*dst, *pred),
            if *all { "all" } else { "any" },
            if *wide { 64 } else { 32 },
            value(*a)
        ),
        WarpOp::Reduce { op, ty, abs, nan, dst, value: a } => {
            let abs = if *abs { ".abs" } else { "" };
            let nan = if *nan { ".nan" } else { "" };
            let (op, ty) = (op.spelling(), op_ty(*ty));
            format!("{} = redux{sync}.{op}{abs}{nan}.{ty} {}{mask}", reg(*dst), value(*a))
        }
        WarpOp::ActiveMask { dst } => format!("{} = activemask", reg(*dst)),
        WarpOp::Elect { dst, pred } => {
            let d = dst.map_or("_".to_string(), &reg);
            format!("{d}, {} = elect{sync}{}", reg(*pred), mask.replacen(',', "", 1))
        }
        WarpOp::Sync => format!("bar.warp{sync}{}", mask.replacen(',', "", 1)),
    }
}

impl Spelled for BarrierReduction {
    const TABLE: &'static [(Self, &'static str)] = &[
        (BarrierReduction::Popc, "popc"),
        (BarrierReduction::And, "and"),
        (BarrierReduction::Or, "or"),
    ];
}

/// A `bar.red`'s line.
pub(super) fn print_barrier_reduce(
    op: BarrierReduction,
    (dst, cond, negate): (RegId, RegId, bool),
    word: u32,
    reg: impl Fn(RegId) -> String,
) -> String {
    let not = if negate { "!" } else { "" };
    format!("{} = bar.red.{} {not}{}, {word}", reg(dst), op.spelling(), reg(cond))
}

/// `bar.red.op {!}cond, word`.
fn parse_barrier_reduce<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<InstKind, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let bad = || (line.error)("`bar.red` needs `.popc`, `.and` or `.or`, `d = {!}p, word`".into());
    let op = take(words, &["popc", "and", "or"]).and_then(|o| BarrierReduction::from_spelling(&o));
    let ([d], [p, w], Some(op)) = (line.dsts, line.ops, op) else { return Err(bad()) };
    let (negate, p) = match p.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, *p),
    };
    let word = w.parse().map_err(|_| bad())?;
    Ok(InstKind::BarrierReduce { op, dst: (line.reg)(d)?, cond: (line.reg)(p)?, negate, word })
}

/// The warp collective (or `bar.red`) of a line whose opcode is one, else `None`; takes
/// the modifiers it knows from `words`.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<Option<InstKind>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let opcode = line.opcode;
    if !matches!(opcode, "shfl" | "vote" | "match" | "redux" | "activemask" | "elect" | "bar") {
        return Ok(None);
    }
    let bad = |what: &str| (line.error)(format!("`{opcode}` needs {what}"));
    if opcode == "bar" && take_flag(words, "red") {
        return parse_barrier_reduce(line, words).map(Some);
    }
    let sync = take_flag(words, "sync");
    // The member mask is the last operand of a `.sync` form.
    let (ops, members) = match (sync, line.ops.split_last()) {
        (true, Some((m, rest))) => (rest, Some((line.value)(m)?)),
        (true, None) => return Err(bad("a member mask")),
        (false, _) => (line.ops, None),
    };
    let dst_pair = || -> Result<(RegId, Option<RegId>), Diagnostic> {
        match line.dsts {
            [d] => Ok(((line.reg)(d)?, None)),
            [d, p] => Ok(((line.reg)(d)?, Some((line.reg)(p)?))),
            _ => Err(bad("a destination and an optional predicate")),
        }
    };
    let one_dst = || -> Result<RegId, Diagnostic> {
        match line.dsts {
            [d] => (line.reg)(d),
            _ => Err(bad("one destination")),
        }
    };
    let op = match opcode {
        "shfl" => {
            let mode = take(words, &["up", "down", "bfly", "idx"]).ok_or_else(|| bad("a mode"))?;
            let mode = ShuffleMode::from_spelling(&mode).ok_or_else(|| bad("a mode"))?;
            let [a, b, c] = ops else { return Err(bad("`a, b, c`")) };
            let (dst, pred) = dst_pair()?;
            let (value, lane, clamp) = ((line.value)(a)?, (line.value)(b)?, (line.value)(c)?);
            WarpOp::Shuffle { mode, dst, pred, value, lane, clamp }
        }
        "vote" => {
            let mode =
                take(words, &["all", "any", "uni", "ballot"]).ok_or_else(|| bad("a mode"))?;
            let mode = VoteMode::from_spelling(&mode).ok_or_else(|| bad("a mode"))?;
            let [a] = ops else { return Err(bad("one predicate")) };
            let (negate, a) = match a.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, *a),
            };
            WarpOp::Vote { mode, dst: one_dst()?, src: (line.reg)(a)?, negate }
        }
        "match" => {
            let all = match take(words, &["all", "any"]).as_deref() {
                Some("all") => true,
                Some(_) => false,
                None => return Err(bad("`.all` or `.any`")),
            };
            let wide = match take(words, &["b32", "b64"]).as_deref() {
                Some("b64") => true,
                Some(_) => false,
                None => return Err(bad("`.b32` or `.b64`")),
            };
            let [a] = ops else { return Err(bad("one value")) };
            let (dst, pred) = dst_pair()?;
            WarpOp::Match { all, wide, dst, pred, value: (line.value)(a)? }
        }
        "redux" => {
            let op = take(words, &["add", "min", "max", "and", "or", "xor"]);
            let op = op.and_then(|o| WarpReduction::from_spelling(&o));
            let op = op.ok_or_else(|| bad("an operation"))?;
            let abs = take_flag(words, "abs");
            let nan = take_flag(words, "nan");
            let ty = (!words.is_empty()).then(|| parse_op_ty(words.remove(0))).flatten();
            let ty = ty.ok_or_else(|| bad("a type"))?;
            let [a] = ops else { return Err(bad("one value")) };
            WarpOp::Reduce { op, ty, abs, nan, dst: one_dst()?, value: (line.value)(a)? }
        }
        "activemask" => {
            if !ops.is_empty() {
                return Err(bad("no operand"));
            }
            WarpOp::ActiveMask { dst: one_dst()? }
        }
        "elect" => {
            let ([d, p], []) = (line.dsts, ops) else {
                return Err(bad("`d, p` and the member mask alone"));
            };
            let dst = if *d == "_" { None } else { Some((line.reg)(d)?) };
            WarpOp::Elect { dst, pred: (line.reg)(p)? }
        }
        _ => {
            if !take_flag(words, "warp") {
                return Ok(None);
            }
            if !line.dsts.is_empty() || !ops.is_empty() {
                return Err(bad("no destination and the member mask alone"));
            }
            WarpOp::Sync
        }
    };
    let inst = WarpInst { op, members };
    if let Some(what) = inst.malformed() {
        return Err((line.error)(what.to_string()));
    }
    Ok(Some(InstKind::Warp(Box::new(inst))))
}

#[cfg(test)]
mod tests {
    use super::super::{parse as parse_text, print as print_text};

    /// Every form of the pass file tests prints back as it was written, and malformed
    /// lines are refused with what they lack.
    #[test]
    fn every_form_round_trips() {
        let files = [
            include_str!("../../tests/passes/expand_warp_results.ir"),
            include_str!("../../tests/passes/expand_warp_partial_results.ir"),
            include_str!("../../tests/passes/expand_warp_bar_red_results.ir"),
        ];
        let ops = ["shfl.", "vote.", "match.", "redux.", "activemask", "elect.", "bar."];
        let mut forms = 0;
        for text in files {
            let kernels = parse_text(text).unwrap_or_else(|d| panic!("{}", d.message));
            let printed = print_text(&kernels[0]);
            let lines = text.lines().filter(|l| !l.starts_with(';'));
            for line in lines.filter(|l| ops.iter().any(|o| l.contains(o))) {
                forms += 1;
                assert!(printed.lines().any(|p| p == line), "{line} prints as something else");
            }
        }
        assert_eq!(forms, 53);
        let text = files[0];
        for (from, to, says) in [
            ("shfl.sync.up %x1, %b, %x4, %x3", "shfl.sync %x1, %b, %x4, %x3", "a mode"),
            ("shfl.bfly %x1, %b, %x4", "shfl.bfly %x1, %b", "`a, b, c`"),
            ("redux.sync.add.u32 %x1, %x3", "redux.add.u32 %x1", "without a member mask"),
            ("redux.sync.xor.u32 %x1, %x3", "redux.sync.xor.f32 %x1, %x3", "not `.min`"),
            ("match.sync.any.b32 %k, %x3", "match.sync.any %k, %x3", "`.b32` or `.b64`"),
            ("%r22 = activemask", "%r22 = activemask %x1", "no operand"),
            ("bar.warp.sync 0xffffffff", "bar.red.xor %p1, 0", "`.popc`, `.and` or `.or`"),
        ] {
            let bad = text.replacen(from, to, 1);
            let d = parse_text(&bad).err().unwrap_or_else(|| panic!("accepted {to}"));
            assert!(d.message.contains(says), "{to}: {}", d.message);
        }
    }
}
